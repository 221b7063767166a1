"""JSON and terminal views shared by the CLI and the HTTP API.

Events become objects with the events columns (``schemas.events``), times as
ISO 8601 UTC strings and ``details`` as an object — the DESIGN.md contract.
"""

from __future__ import annotations

import io
import os
import shutil
import signal
import sys
from pathlib import Path
from typing import Any, BinaryIO, Callable, Final, NoReturn

from typing import TYPE_CHECKING

import orjson
from rich.console import Console, ConsoleOptions, RenderResult
from rich.markup import escape
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

if TYPE_CHECKING:
    import pyarrow as pa
# pyarrow and the correlator are imported where they are used: every CLI command imports this module for its
# console, and `firstfault --help` need not load them (0.9 s of its 1.2 s)

_TIME_COLUMNS = ("ts", "last_ts", "ingest_ts")


def events_json(table: pa.Table) -> list[dict[str, Any]]:
    """Arrow events -> list of JSON-ready dicts (times ISO 8601 UTC, details parsed)."""
    import pyarrow as pa

    from correlate.incident import iso

    if table.num_rows == 0:
        return []
    ints = {c: table.column(c).cast(pa.int64()).to_pylist() for c in _TIME_COLUMNS if c in table.column_names}
    rows = table.drop_columns([c for c in ints]).to_pylist()
    for i, r in enumerate(rows):
        for c, vals in ints.items():
            r[c] = iso(vals[i]) if vals[i] is not None else None
        if r.get("details"):
            r["details"] = orjson.loads(r["details"])
    order = list(table.column_names)
    return [{k: r.get(k) for k in order} for r in rows]


#: start bases that are not the first line's own stamp (``~`` in the table, ``_APPROX``), and what stands in for
#: it, for the caption (``correlate.incident`` ``start_basis``)
_BASIS_WORDS = {
    "inherited": "an earlier line's stamp",
    "envelope": "the record's time (journald's __REALTIME_TIMESTAMP, a shipper's timestamp field)",
    "kafka": "the Kafka arrival time",
    "file": "the file's modification time, or the time standard input was read (a line that prints none, or a raw "
            "dmesg stamp counted back from it)",
    "operator": "the operator's report time",
}
_APPROX = frozenset(_BASIS_WORDS)


def _caption(incidents: list[dict[str, Any]]) -> str | None:
    """The table's footnote for starts marked ``~`` (their first line's time is not a wall-clock stamp of its
    own): what stands in, for the bases these incidents have; None when none is marked."""
    bases = {inc.get("start_basis") for inc in incidents}
    words = [w for b, w in _BASIS_WORDS.items() if b in bases]
    return ("~ not the first line's own wall-clock stamp: " + "; ".join(words)) if words else None


_SEVERITY_STYLE = {"critical": "bold red", "error": "red", "warning": "yellow", "info": "dim"}
#: how many suspects, and how many downstream parties, a table cell names before "and N more"
CELL_ITEMS = 8
#: terminal columns from which the table is shown even when a cell must fold (a long downstream list)
TABLE_MIN_WIDTH = 160


def _rows(incidents: list[dict[str, Any]]) -> list[tuple[dict[str, Any], str, str, str]]:
    """(incident, start shown, initiator, downstream) by start, then initiator host (incidents timed by the same
    file or arrival share a start), then id: the same order wherever they come from."""
    from correlate.attribute import candidate_name, first_of
    from correlate.incident import party_subject

    out = []
    for inc in sorted(incidents, key=lambda x: (x["start"], x["initiator"].get("host") or "", x["id"])):
        cands = inc["initiator"].get("candidates") or []
        named = set(cands)
        # with no single culprit the parties are suspects first (named as attribute.unknown_verdict names them),
        # reporters after: the cell says which is which
        labels = sorted({_party_label(d) for d in inc["downstream"] if candidate_name(*party_subject(d)) not in named})
        # a cell, not a list: 512 lost peers of a 64-host job made one incident 240 rows tall (a break-it pass); the
        # JSON has them all
        down = first_of(labels, CELL_ITEMS)
        if cands:
            down = "suspects: " + first_of(cands, CELL_ITEMS, "; ") + (f"; downstream: {down}" if down else "")
        start = inc["start"][:19].replace("T", " ") + ("~" if inc.get("start_basis") in _APPROX else " ")
        out.append((inc, start, describe_initiator(inc["initiator"]), down or "-"))
    return out


#: kinds of initiators and parties that are a rank's report (NCCL's own lines), whose device is the GPU the rank
#: runs on (the table here, the pages: ``api.pager.describe_initiator``)
RANK_REPORTS = frozenset({"nccl_error", "nccl_timeout"})


def _party_label(d: dict[str, Any]) -> str:
    """``host:device`` (else ``host:kind``; a rank's NCCL report ``host:kind (rank on device)``) of a downstream
    party; a party that is only an operator's report
    (``--symptom``: its events are ``symptom-…``) says so, not the kind it is correlated as (a hang is an
    ``nccl_timeout`` that no line logged)."""
    what = d.get("device") or d.get("kind")
    if d.get("device") and d.get("kind") in RANK_REPORTS:
        # a rank's NCCL report names the GPU it runs on: "node08:0000:3b:00.0" beside the failed GPU of the same bus
        # id on node07 read as a second faulty GPU (a fresh user's trial)
        what = f"{d['kind']} (rank on {d['device']})"
    if d.get("events") and all(str(e).startswith("symptom-") for e in d["events"]):
        what = "reported hang" if d.get("kind") == "nccl_timeout" else "reported failure"
    return f"{d['host']}:{what}"


def incidents_table(incidents: list[dict[str, Any]], title: str = "Incidents",
                    changes: dict[str, str] | None = None) -> Table:
    """A rich table: one row per incident, initiator first (row order: ``_rows``); with ``changes`` (id -> what
    the row is to the reader: ``new``, ``updated``, ``resolved`` …) a first column says it."""
    # the title at the left, as the caption: centred over a wide table it stood after ~80 blanks in a file or a pipe
    # (a fresh user's trial)
    t = Table(title=title, show_lines=False, caption=_caption(incidents), caption_justify="left", title_justify="left")
    if changes is not None:
        t.add_column("what", no_wrap=True)
    for col in ("start (UTC)", "severity", "category", "initiator", "downstream", "conf"):
        t.add_column(col, overflow="fold", no_wrap=col in ("start (UTC)", "severity", "conf"))
    t.add_column("next action", overflow="ellipsis", max_width=60, no_wrap=True)
    for inc, start, who, down in _rows(incidents):
        # host names, devices and actions hold text from the logs and the command line: never read as markup
        row = [start, Text(inc["severity"], style=_SEVERITY_STYLE.get(inc["severity"], "")),
               Text(inc["category"]), Text(who), Text(down), f"{inc['confidence']:.2f}", Text(inc["next_action"])]
        t.add_row(*([Text(changes.get(inc["id"], ""))] if changes is not None else []), *row)
    return t


#: narrowest width a console is given (a narrower COLUMNS folds values to a character per line, or drops them)
MIN_WIDTH = 40


def console_width(is_terminal: bool) -> int | None:
    """Width for a CLI console: ``COLUMNS`` when it is a positive number (at least ``MIN_WIDTH``); else a
    terminal's own width (``None``: Rich asks the terminal); else 200, wide enough for the incident table in CI
    logs and pipes. A ``COLUMNS`` of 0 or not a number is ignored (Rich would print nothing at width 0)."""
    cols = os.environ.get("COLUMNS", "").strip()
    if cols.isdigit() and int(cols) > 0:
        return max(int(cols), MIN_WIDTH)
    if is_terminal:
        return shutil.get_terminal_size((200, 24)).columns if cols else None
    return 200


class TrimmedStream(io.TextIOBase):
    """``sys.stdout`` or ``sys.stderr`` (looked up at each write, so a test's captured stream is the one written)
    with the trailing spaces of every whole line removed. Rich pads a centred title and each cell of a grid to
    the console's width (200 columns in a pipe); without this the padding reaches files, diffs and ``grep``."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self._name, self._tail = name, ""

    @property
    def name(self) -> str:
        """``stdout`` or ``stderr``: the stream of ``sys`` it writes to."""
        return self._name

    @property
    def _stream(self) -> Any:
        return getattr(sys, self._name)

    def write(self, s: str) -> int:
        head, nl, self._tail = (self._tail + s).rpartition("\n")
        if nl and self._stream is not None:  # None: the descriptor was closed (``2>&-``): nothing to write to
            self._stream.write("\n".join(x.rstrip(" ") for x in head.split("\n")) + "\n")
        return len(s)

    def flush(self) -> None:
        if self._stream is None:
            self._tail = ""
            return
        if self._tail:  # a part line (printed with end=""): as it is
            self._stream.write(self._tail)
            self._tail = ""
        self._stream.flush()

    def isatty(self) -> bool:
        return self._stream is not None and self._stream.isatty()

    def fileno(self) -> int:
        return self._stream.fileno()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self._stream, "encoding", None) or "utf-8"


def output_in_store(output: Path | None, lake: str, state_dir: Path) -> None:
    """Raise ``typer.BadParameter`` when ``--output`` names a file inside the local lake (``lake``: its root, a path
    or ``file://`` URL) or the state folder: the "read-only" ``sql -o .firstfault/lake/events/kind=xid/x.parquet``
    wrote a Parquet file the ``events`` view then read as a broken partition, and every query failed (a break-it
    pass). Said as click says the other usage errors (exit 2; it was a plain line: a new user's trial). An S3 lake
    has no local folder to protect."""
    if output is None:
        return
    from typer import BadParameter  # typer 0.29 carries its own click: its BadParameter is the one it catches

    from ingest.lake import LakeError, lake_path

    target = output.resolve()
    stores = [state_dir]
    try:
        stores.append(lake_path(lake))
    except LakeError:
        pass
    for store in stores:
        if target.is_relative_to(store.resolve()):
            raise BadParameter(f"{output} is inside {store} (firstfault's own data: the lake or its state): write it "
                               "elsewhere", param_hint="--output")


def no_output_folder(output: Path | None) -> None:
    """Raise ``typer.BadParameter`` when ``--output``'s folder does not exist, or ``--output`` is itself a folder: a
    usage error (exit 2, said as click says the others) found before any work, not an ``[Errno 2]`` after it
    (``firstfault sql``, ``report degraded-links``; a folder was asked for its format by its name's ending: a
    break-it pass). Call it before reading the format off the name."""
    if output is None:
        return
    from typer import BadParameter

    if output.is_dir():
        raise BadParameter(f"{output} is a folder (name a file in it)", param_hint="--output")
    if not output.parent.is_dir():
        raise BadParameter(f"no such folder: {output.parent}", param_hint="--output")


def write_output(output: Path, write: Callable[[BinaryIO], None]) -> None:
    """``write(f)`` into ``--output``: a regular file (or a new one) is written under a temporary name in its folder
    and renamed into place once whole, so a failed write (a full disk) leaves what was there; anything else (a FIFO,
    ``/dev/stdout``, a device) is opened and written as it is, and so is a file in a folder that takes no new file.
    The file keeps its mode; its hard links keep the old content. ``pq.write_table`` given a path deleted it when
    the write failed: an earlier result on a full disk, ``/dev/full`` itself when run as root (a break-it pass).
    Raises ``OSError`` of the write."""
    if output.exists() and not output.is_file():
        with open(output, "wb") as f:
            write(f)
        return
    output = output.resolve() if output.is_symlink() else output  # a link to a file: that file, the link kept
    tmp = output.with_name(f".{output.name}.{os.getpid()}.tmp")
    try:
        f = open(tmp, "xb")
    except PermissionError:  # a file one may write in a folder one may not: written in place, as before
        with open(output, "wb") as f:
            write(f)
        return
    try:
        with f:
            write(f)
        if output.exists():  # the file's own mode stays (a 0600 result was 0644 after the rename: a break-it pass)
            os.chmod(tmp, output.stat().st_mode & 0o7777)
        os.replace(tmp, output)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


#: exit status of a command whose standard output's reader went away (``firstfault sql … | head -1``): 128 + SIGPIPE,
#: 141, what a shell reports for a program that pipe ended (``seq 1 100000 | head -1``), so ``set -o pipefail`` and
#: ``${PIPESTATUS[@]}`` read it as they read coreutils'. It was 1, a runtime failure's (README, exit codes), or 0 when
#: the output happened to fit the pipe's buffer before the reader left, and the report said "[Errno 32] Broken pipe".
EXIT_READER_GONE = 128 + signal.SIGPIPE


def reader_gone(name: str = "stdout") -> NoReturn:
    """End the command quietly because the reader of ``sys.<name>`` (``stdout`` or ``stderr``) went away
    (``BrokenPipeError``, EPIPE): nothing said, exit :data:`EXIT_READER_GONE` (141). What is still buffered for that
    stream goes to ``/dev/null``, its descriptor included, as the Python documentation's note on SIGPIPE does
    (docs.python.org/3/library/signal.html#note-on-sigpipe), so the interpreter's flush at exit raises nothing; the
    other stream is left as it is (``2>&1 >out.txt | head``: the file keeps what was written). ``SystemExit``, not a
    killing signal: ``finally`` blocks (a temporary copy of standard input, a DuckDB connection) still run."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, getattr(sys, name).fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # a stream of no descriptor (a test's captured stdout)
        pass
    setattr(sys, name, open(os.devnull, "w"))  # noqa: SIM115 — held until exit
    sys.exit(EXIT_READER_GONE)


def end_quietly_when_a_reader_goes() -> None:
    """Make every Rich console of this process end the command as :func:`reader_gone` does when its stream's reader
    went away: the commands' own (:func:`cli_console`) and typer's help and error consoles. Rich's own
    ``on_broken_pipe`` sends descriptor 1 to ``/dev/null`` whichever stream broke and exits 1, a runtime failure's
    code: ``firstfault sql … | head -1`` exited 1, ``firstfault diagnose`` and ``firstfault --help | head -3`` too.
    The CLI's entry point calls it."""

    def on_broken_pipe(self: Console) -> None:
        self.quiet = True
        f = self.file  # a command's console writes through a TrimmedStream, which names its stream
        reader_gone(f.name if isinstance(f, TrimmedStream) else "stderr" if f is sys.stderr else "stdout")

    Console.on_broken_pipe = on_broken_pipe  # type: ignore[method-assign]


def stdout_reader_gone() -> bool:
    """Whether descriptor 1 is a pipe or socket whose reader went away: ``poll`` says ``POLLERR`` (Linux, a pipe
    with no reader) or ``POLLHUP`` for it. False when it cannot tell (no descriptor 1, no ``poll``)."""
    import select

    try:
        p = select.poll()
        p.register(1, select.POLLOUT)
        return any(ev & (select.POLLERR | select.POLLHUP) for _, ev in p.poll(0))
    except (OSError, ValueError, AttributeError):
        return False


def cli_console(name: str = "stdout") -> Console:
    """The Rich console of a CLI command on ``name`` (``stdout`` or ``stderr``): ``console_width`` wide, lines
    without trailing spaces (``TrimmedStream``). On ``stderr`` a message is not wrapped (soft wrap): an error stays
    one line for ``grep`` and log collectors, and a terminal wraps it itself. No emoji codes: ``:fire:`` in a file
    name a message quotes stays as written (a break-it pass: the message named another file). Its stream's reader
    going away ends the command quietly, exit 141, once the entry point called :func:`end_quietly_when_a_reader_goes`
    (Rich's own handling exits 1)."""
    stream = getattr(sys, name)  # None when the descriptor was closed (``2>&-``): a command still runs
    return Console(file=TrimmedStream(name), width=console_width(stream is not None and stream.isatty()),
                   soft_wrap=name == "stderr", emoji=False)


def version_changes(versions: list[dict[str, Any]], before: dict[str, str]) -> tuple[list[dict[str, Any]],
                                                                                      dict[str, str]]:
    """The latest of ``versions`` for each incident, and what it is to someone who saw ``before`` (id -> the
    status of its last version stored earlier): ``new``, ``new, resolved`` (first stored already quiet: late or
    replayed logs), ``reopened`` (open after a resolved version), ``updated`` (a new version of the same
    status), ``resolved`` or ``superseded``."""
    latest: dict[str, dict[str, Any]] = {}
    for v in versions:
        if v["id"] not in latest or v["version"] >= latest[v["id"]]["version"]:
            latest[v["id"]] = v
    changes = {}
    for i, v in latest.items():
        seen = before.get(i)
        if v["status"] == "open":
            changes[i] = "new" if seen is None else "reopened" if seen == "resolved" else "updated"
        elif v["status"] == seen:  # a quiet incident's later version (other evidence, late lines): no news
            changes[i] = "updated"
        elif v["status"] == "resolved":
            changes[i] = "new, resolved" if seen is None else "resolved"
        else:
            changes[i] = v["status"]
    return list(latest.values()), changes


def new_versions_title(changes: dict[str, str], now: float | None = None) -> str:
    """The title of the incidents a running service stored in one step (``changes``: id -> what each is,
    :func:`version_changes`): the time in UTC (``now``, seconds since the epoch; the clock when ``None``) and
    how many of each, e.g. ``"03:12:09 UTC — 1 new, 2 resolved"``."""
    import time as _time

    return f"{_time.strftime('%H:%M:%S', _time.gmtime(now))} UTC — {change_counts(changes)}"


class CountTitle(str):
    """A title that says how many incidents it heads (:func:`incidents_title`): ``count`` of them. Shown over none,
    it is printed alone (:class:`IncidentsView`): it says "0 incidents" itself."""

    count: int

    def __new__(cls, text: str, count: int) -> "CountTitle":
        title = super().__new__(cls, text)
        title.count = count
        return title


#: what a ``--once`` run (``run``, ``correlate``, ``ingest``, ``demo``) that a signal stopped before it caught up says
#: in place of "caught up" (it said "caught up", though records were left unread: a helper's pass); its exit is 0
#: when every batch it took is stored and committed (docs/operations.md's exit codes)
STOPPED_EARLY: Final = "stopped (SIGTERM or Ctrl-C) before catching up"


def incidents_title(incidents: list[dict[str, Any]], head: str = "") -> CountTitle:
    """``"<head>21 incidents (9 open, 12 resolved)"``: how many of ``incidents`` are of each status (a restarted
    service's catch-up resolves incidents that went quiet meanwhile: the table alone did not say so); none:
    ``"<head>0 incidents"``, no parenthesis as no status has any (it said "Incidents: none" where every other run
    said "N incidents (…)": a helper's pass), which ``IncidentsView`` then prints alone."""
    n = len(incidents)
    counts = {st: sum(1 for i in incidents if i.get("status") == st) for st in ("open", "resolved", "superseded")}
    said = ", ".join(f"{k} {st}" for st, k in counts.items() if k)
    return CountTitle(f"{head}{n} incident{'s' * (n != 1)}" + (f" ({said})" if said else ""), n)


def change_counts(changes: dict[str, str]) -> str:
    """How many of ``changes`` (id -> what each is, :func:`version_changes`) are of each kind, e.g. ``"1 new;
    2 resolved"``; ``"nothing"`` for none."""
    order = ("new", "new, resolved", "reopened", "updated", "resolved", "superseded")
    counts = {c: sum(1 for x in changes.values() if x == c) for c in order}
    return "; ".join(f"{n} {c}" for c, n in counts.items() if n) or "nothing"


def incident_progress(log_format: str, console: Console) -> Any:
    """The ``on_incidents(versions, before)`` callback of a running service (``firstfault run``, the demo): each
    step's stored incidents on ``console`` (stderr) as a table whose first column says what each is
    (:func:`version_changes`); with ``log_format`` ``json`` (stderr is a log stream) one JSON record instead."""
    import logging

    def show(versions: list[dict[str, Any]], before: dict[str, str]) -> None:
        latest, changes = version_changes(versions, before)
        if log_format == "json":
            logging.getLogger("firstfault.run").warning(
                "incidents stored: %s", change_counts(changes),
                extra={"incidents": [f"{i['id']} v{i['version']} {changes[i['id']]}" for i in latest]})
        else:
            console.print(IncidentsView(latest, title=new_versions_title(changes), changes=changes))

    return show


class IncidentsView:
    """The incidents for a terminal of any width: ``incidents_table`` where it fits (its natural width, or
    ``TABLE_MIN_WIDTH`` columns when a cell must fold), else one block per incident — start, severity,
    category, confidence and id on one line, then the initiator, the downstream reporters and the whole next
    action, each wrapped under its label — so a 80- or 120-column terminal shows every field whole.
    ``with_next=False`` leaves the next action out of the blocks (:class:`IncidentsReport` prints it whole
    under each incident right after); ``changes`` (id -> ``new``, ``updated``, … :func:`version_changes`) is
    shown first in each row or block."""

    def __init__(self, incidents: list[dict[str, Any]], title: str = "Incidents", with_next: bool = True,
                 changes: dict[str, str] | None = None) -> None:
        self.incidents, self.title, self.with_next, self.changes = incidents, title, with_next, changes

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        if not self.incidents:  # a title that counts them (incidents_title) says it; another is followed by "none"
            counted = isinstance(self.title, CountTitle) and self.title.count == 0
            yield Text(self.title if counted else f"{self.title}: none")
            return
        table = incidents_table(self.incidents, self.title, self.changes)
        natural = Measurement.get(console, options.update(width=10_000), table).maximum
        if options.max_width >= min(natural, TABLE_MIN_WIDTH):
            yield table
            return
        yield Text(self.title, style="italic", justify="center")
        for inc, start, who, down in _rows(self.incidents):
            head = Text.assemble(*([(self.changes.get(inc["id"], ""), "bold"), "  "] if self.changes else []),
                                 start, "  ", (inc["severity"], _SEVERITY_STYLE.get(inc["severity"], "")), "  ",
                                 inc["category"], f"  conf {inc['confidence']:.2f}  ", (inc["id"], "dim"))
            yield head
            yield _labelled([("initiator", "dim", who), ("downstream", "dim", down)]
                            + [("next", "dim", inc["next_action"])] * self.with_next)
        if caption := _caption(self.incidents):
            yield Text(caption, style="dim")


class IncidentDetail:
    """One incident's explanation, next action, verify commands and what is missing, for a terminal: a line
    with its id, category, severity and confidence, then each field under its label, wrapped lines indented
    under the text (the texts quote log lines and host names: shown as text, never as markup)."""

    def __init__(self, incident: dict[str, Any]) -> None:
        self.incident = incident

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        inc = self.incident
        yield Text.assemble((inc["id"], "bold"), f" {inc['category']} ({inc['severity']}, confidence "
                                                 f"{inc['confidence']})")
        rows = [("why", "", inc["explanation"]), ("next", "green", inc["next_action"])]
        rows += [("verify", "cyan", v) for v in inc["verify"]] + [("missing", "yellow", m) for m in inc["missing"]]
        yield _labelled(rows, min_width=len("  missing"))


class IncidentsReport:
    """What ``diagnose`` and the demo print: the incidents (:class:`IncidentsView`), then each one's
    explanation, whole next action, verify commands and what is missing (:class:`IncidentDetail`), in the
    table's order."""

    def __init__(self, incidents: list[dict[str, Any]], title: str = "Incidents") -> None:
        self.incidents, self.title = incidents, title

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield IncidentsView(self.incidents, self.title, with_next=False)
        for inc, *_ in _rows(self.incidents):
            yield IncidentDetail(inc)


def _labelled(rows: list[tuple[str, str, str]], min_width: int | None = None) -> Table:
    """(label, its style, text) rows: the labels indented two spaces, each text wrapped under itself (text,
    never markup)."""
    grid = Table.grid(padding=(0, 1))
    grid.add_column(no_wrap=True, min_width=min_width)
    grid.add_column(overflow="fold")
    for label, style, value in rows:
        grid.add_row(Text("  " + label, style=style), Text(value))
    return grid


def candidate_hosts(i: dict[str, Any], n: int = 3) -> str | None:
    """The hosts of an initiator with no single culprit, as its ``candidates`` name them
    (``correlate.attribute.candidate_name``: ``gpu 0000:b3:00.0 on node07``, or the host alone): ``node07, node08``,
    the first ``n`` and how many more; ``None`` when it names none. Candidates on several hosts leave ``host`` null
    (DESIGN.md), and the table showed "? (no single culprit)" where the suspects' hosts were known (a fresh user's
    trial: two ranks' NCCL errors on node07 and node08)."""
    hosts = sorted({str(c).rsplit(" on ", 1)[-1] for c in i.get("candidates") or ()})
    if not hosts:
        return None
    rest = f" and {len(hosts) - n} more" if len(hosts) > n else ""
    return ", ".join(hosts[:n]) + rest


def describe_initiator(i: dict[str, Any]) -> str:
    """``node07 gpu 0000:9a:00.0 link 3 (Xid 79)`` style one-liner; ``gpu (unnamed)`` when no line named the
    device or its index."""
    if i.get("device_type") is None:
        if not i.get("kind"):
            return f"{i.get('host') or candidate_hosts(i) or '?'} (no single culprit)"
        # a rank without a GPU: the silent rank of a hang, on its host if an init line placed it ("None nccl_timeout"
        # when none did: a break-it pass)
        rank = i.get("rank")
        what = i.get("fault") or i["kind"]  # a fault of the host: "gpu09 host.edac_memory_error", not "gpu09 other"
        if i.get("host"):
            return f"{i['host']}{f' rank {rank}' if rank is not None else ''} {what}"
        return f"{f'rank {rank} (host unknown)' if rank is not None else '? (host unknown)'} {what}"
    parts = [str(i.get("host")), str(i["device_type"]),
             str(i.get("device") or (f"index {i['gpu_index']}" if i.get("gpu_index") is not None else "(unnamed)"))]
    if i["device_type"] == "gpu" and i.get("kind") in RANK_REPORTS:
        # NCCL's report names the GPU its rank runs on, not a fault of the GPU: a NET/IB completion error read
        # "node01 gpu index 4" in the table (real-logs passes on NVIDIA/nccl#1405, #302)
        rank = i.get("rank")
        what = i.get("fault") or i["kind"]  # a silent rank logged no timeout: "silent_rank" (incident._fault)
        return f"{parts[0]} rank{f' {rank}' if rank is not None else ''} on gpu {parts[2]} ({what})"
    if i.get("links") and len(i["links"]) > 1:
        parts.append("links " + ",".join(map(str, i["links"])))
    elif i.get("link") is not None:
        parts.append(f"link {i['link']}")
    if i.get("peer") and i["peer"] != i.get("device"):  # a port is no peer of its own ("0000:3a:00.0 <-> 0000:3a:00.0")
        parts.append(f"<-> {i['peer']}")
    if i.get("xid") is not None:
        parts.append(f"(Xid {i['xid']})")
    elif i.get("sxid") is not None:
        parts.append(f"(SXid {i['sxid']})")
    return " ".join(parts)
