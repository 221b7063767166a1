"""The ``firstfault`` command.

Exit codes: 0 success; 1 a runtime failure (broker, lake, unreadable input);
2 a usage or configuration error; 3 ``diagnose --fail-on`` found an incident
at or above that severity; 141 (128 + SIGPIPE) stdout's reader went away
(``| head -1``), said nowhere (``api.render.reader_gone``).
"""

from __future__ import annotations

import asyncio
import errno
import io
import logging
import os
import re
import signal
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Annotated, Any, Literal, Optional

import orjson
import typer
from rich.markup import escape

from api.render import (EXIT_READER_GONE, STOPPED_EARLY, cli_console, end_quietly_when_a_reader_goes, reader_gone,
                         stdout_reader_gone)
from api.report_cli import require_lake
from schemas.settings import Settings, SettingsError, load_settings

app = typer.Typer(no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False,
                  help="firstfault: which GPU, link or host broke first.")
kafka_app = typer.Typer(no_args_is_help=True, help="The local Apache Kafka broker (KRaft, 127.0.0.1).")
app.add_typer(kafka_app, name="kafka")


def _add_report_app() -> None:
    from api.report_cli import report_app

    app.add_typer(report_app, name="report", help="Reports: the hourly degraded-link report.")


_add_report_app()


def _add_lake_app() -> None:
    from api.lake_cli import lake_app

    app.add_typer(lake_app, name="lake", help="Upkeep of the Parquet lake: compact closed hours' parts.")


_add_lake_app()


def _flags_without_a_type() -> None:
    """typer 0.25 and later print an option's type beside it in ``--help``, a flag's too (``--once <bool>``,
    ``--help <bool>``), as if it took a value (a fresh user's trial): a flag shows none. Older typers show none
    already (no ``TyperOption.display_type_rich``)."""
    from typer.core import TyperOption

    shown = getattr(TyperOption, "display_type_rich", None)
    if shown is None or getattr(shown, "_firstfault", False):
        return

    def display_type_rich(self: TyperOption, ctx: Any) -> str | None:
        return None if self.is_flag else shown(self, ctx)

    display_type_rich._firstfault = True  # type: ignore[attr-defined]
    TyperOption.display_type_rich = display_type_rich  # type: ignore[method-assign]


def _plain_value_errors() -> None:
    """typer 0.26 and later check a value (a ``--format`` of a Literal) through pydantic and print its message as it
    is: "Invalid value for '--format' / '-f': Value error, 'xml' is not one of 'json', 'table'." (a fresh user's
    trial): the message without pydantic's "Value error, ", and a bound or a number in the tool's words
    (``--port 99999``: "must be at most 65535, not 99999", not "Input should be less than or equal to 65535").
    Older typers say click's words already (no ``get_error_msg``)."""
    import importlib

    for name in ("typer._coercion", "typer._param_types"):
        try:
            mod = importlib.import_module(name)
        except ImportError:
            continue
        shown = getattr(mod, "get_error_msg", None)
        if shown is None or getattr(shown, "_firstfault", False):
            continue

        def get_error_msg(exc: Any, _shown: Any = shown) -> str:
            # the tool's words (schemas/errors.py: "must be at most 65535, not 99999"), through typer's own
            # escaping of terminal controls
            errors = exc.errors() if callable(getattr(exc, "errors", None)) else []
            if not errors:
                return _shown(exc).removeprefix("Value error, ")
            from schemas.errors import error_text

            class Said:
                def errors(self) -> list[dict[str, Any]]:
                    return [{**errors[0], "msg": error_text(errors[0])}]

            return _shown(Said())

        get_error_msg._firstfault = True  # type: ignore[attr-defined]
        mod.get_error_msg = get_error_msg  # type: ignore[attr-defined]


def _arguments_by_their_name() -> None:
    """typer 0.25 and later show an argument as ``{PATH}...`` in the usage line and ``PATH <list[str]>`` in
    ``--help`` (a fresh user's trial): a required argument is its name (``PATH...``, as click writes it), an
    optional one ``[QUERY]``, and an argument with a metavar shows no Python type beside it. Older typers show none
    already (no ``TyperArgument._usage_display_name``)."""
    from typer.core import TyperArgument

    usage = getattr(TyperArgument, "_usage_display_name", None)
    if usage is None or getattr(usage, "_firstfault", False):
        return
    shown = TyperArgument.display_type_rich

    def _usage_display_name(self: TyperArgument) -> str:
        if not self.required:
            return usage(self)
        return self.display_name_raw + ("..." if self.nargs != 1 else "")

    def display_type_rich(self: TyperArgument, ctx: Any) -> str | None:
        return None if self.metavar is not None else shown(self, ctx)

    _usage_display_name._firstfault = True  # type: ignore[attr-defined]
    TyperArgument._usage_display_name = _usage_display_name  # type: ignore[method-assign]
    TyperArgument.display_type_rich = display_type_rich  # type: ignore[method-assign]


_flags_without_a_type()
_arguments_by_their_name()
_plain_value_errors()
err = cli_console("stderr")
out = cli_console()


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import version

        out.print(f"firstfault {version('firstfault')}", markup=False, highlight=False)
        raise typer.Exit(0)


@app.callback()
def _main(_version_: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                                  help="Print the version and exit.")] = False) -> None:
    """firstfault: which GPU, link or host broke first."""

ConfigOpt = Annotated[Optional[Path], typer.Option("--config", help="TOML settings file", exists=True,
                                                   dir_okay=False)]


def _settings(config: Path | None, **overrides) -> Settings:
    """The settings (defaults < TOML < environment < ``overrides``); logging follows their ``log_format`` and
    ``log_level`` from here on (``main`` set it from the environment alone). Exit 2 on a bad setting."""
    try:
        s = load_settings(config, overrides=overrides)
    except SettingsError as e:
        err.print(f"[red]configuration error:[/] {escape(str(e))}")
        raise typer.Exit(2) from None
    setup_logging(s.log_format, s.log_level)
    return s


def _port_free(s: Settings, port: int, setting: str = "api_port") -> None:
    """Exit 1 with a hint when ``api_host:port`` cannot be bound (another server, the demo, holds it); ``setting``
    names the port's setting in the hint (``api_port``, or a worker's ``worker_port``)."""
    import socket

    env = f"FIRSTFAULT_{setting.upper()}"
    try:
        with socket.create_server((s.api_host, port)):
            pass
    except OSError as e:
        in_use = e.errno == errno.EADDRINUSE
        msg = f"cannot serve on {s.api_host}:{port}: {e.strerror}" + (
            f" (is the demo or another firstfault running?); choose another with --port or {env}"
            if in_use else f"; check api_host (FIRSTFAULT_API_HOST) and the port (--port, {env})")
        _tell(s, logging.ERROR, msg, style="red", stage="serve", error_code="port_in_use" if in_use else "cannot_bind")
        raise typer.Exit(1) from None


def _tell(s: Settings, level: int, msg: str, *, style: str = "", **extra: str) -> None:
    """``msg`` on stderr about serving the API: with ``log_format = "json"`` (stderr is a log stream then) one
    JSON record of the ``firstfault.serve`` logger at ``level`` with ``extra`` fields, else one unwrapped line of
    text in ``style`` (paths and hosts in it are text, not Rich markup)."""
    if s.log_format == "json":
        logging.getLogger("firstfault.serve").log(level, msg, extra=extra or None)  # INFO too (setup_logging)
    else:
        err.print(msg, style=style, soft_wrap=True, highlight=False, markup=False)


def _base_url(s: Settings, port: int) -> str:
    """``http://<api_host>:<port>``, an IPv6 host in brackets."""
    host = f"[{s.api_host}]" if ":" in s.api_host else s.api_host
    return f"http://{host}:{port}"


def _tell_address(s: Settings, port: int) -> None:
    """Where the API listens, as the demo says it: the base URL, its OpenAPI docs and its metrics."""
    url = _base_url(s, port)
    _tell(s, logging.INFO, f"API on {url} (docs: {url}/docs, metrics: {url}/metrics)", url=url)


def _tell_bound(s: Settings) -> Any:
    """A ``uvicorn.Server`` callback that tells where it listens (port 0: the port the system gave it)."""
    return lambda server: _tell_address(s, server.servers[0].sockets[0].getsockname()[1])


PortOpt = Annotated[Optional[int], typer.Option("--port", min=0, max=65535, metavar="<port>",
                                                 help="HTTP API port (default: the api_port setting, 8080)")]


def _progress():
    """A per-file callback drawing a rich progress bar on a terminal (none when stderr is not one); once every file
    is read, a line with the time spent matching and correlating, until its ``finish()`` (call it once the work is
    done). That work is most of a large log's time: 200,000 lines of one file drew ``reading 1/1`` for an instant,
    then nothing for 30 s (a break-it pass)."""
    if not sys.stderr.isatty():
        return None
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    # not redirecting sys.stdout/sys.stderr through rich's proxies: ``err`` writes to sys.stderr as it finds it at each
    # write (render.TrimmedStream), and through the proxy that was itself: diagnose hung at 100 % CPU whenever stderr
    # was a terminal (a fresh user's trial)
    bar = Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.fields[count]}"),
                   TextColumn("{task.fields[name]}", markup=False),  # a file name is text, not markup
                   TimeElapsedColumn(), console=err, transient=True, redirect_stdout=False, redirect_stderr=False)
    state: dict = {}

    def step(done: int, total: int, name: str) -> None:
        if "task" not in state:
            bar.start()
            state["task"] = bar.add_task("reading", total=total, name=name, count="")
        bar.update(state["task"], completed=done, name=name, count=f"{done}/{total}")
        if done >= total and "after" not in state:
            bar.update(state["task"], visible=False)
            state["after"] = bar.add_task(f"matching and correlating the lines of {total} file{'s' * (total != 1)}",
                                          total=None, name="", count="")

    def finish() -> None:
        bar.stop()

    step.finish = finish  # type: ignore[attr-defined]
    return step


def _parse_symptom(text: str):
    """``hang``, ``hang:0,1``, ``hang@node07``, ``failure@node07:0,1``, ``hang:0000:1b:00.0`` (PCI bus ids in any
    printed form, ``schemas.pci.normalize_bus_id``), ``hang@[2001:db8::1]:0`` (an IPv6 host in brackets) -> a
    Symptom; without ``@HOST`` its host is empty: the one host the logs are of (``api.diagnose.place_symptoms``).
    ``BadParameter`` (exit 2) for a kind, host or GPU that is none."""
    import pyarrow as pa

    from correlate.correlator import Symptom
    from ingest.pipeline import MAX_HOST_CHARS, not_host_names

    bracket = re.fullmatch(r"([^@:]*)@\[([^\]]*)\](?::(.*))?", text, re.S)  # an IPv6 host in brackets, as in a URL
    if bracket:  # (its colons are no GPU list: a break-it pass): hang@[2001:db8::1]:0,1
        head, colon, gpus = f"{bracket[1]}@{bracket[2]}", ":" if bracket[3] is not None else "", bracket[3] or ""
    elif re.fullmatch(r"[^@:]*@\[[^\]]*", text, re.S):  # "hang@[::1": its colons were read as a GPU list
        raise typer.BadParameter(f"{text!r} opens '[' for an IPv6 host and does not close it: write "
                                 f"{text.partition('[')[0]}[{text.partition('[')[2]}]", param_hint="--symptom")
    else:
        head, colon, gpus = text.partition(":")
    kind, at, host = head.partition("@")
    if kind not in ("hang", "failure"):
        raise typer.BadParameter(f"symptom kind must be hang or failure, not {kind!r}", param_hint="--symptom")
    if at and not host.strip():  # "hang@:0": a host left out of a template, not "the files' host"
        raise typer.BadParameter(f"{text!r} names no host after @: write {kind}@HOST, or leave @ out when the files "
                                 "are of one host", param_hint="--symptom")
    host = host.strip()
    if "@" in host:  # "hang@node01@node02:0": one symptom names one host (it was an incident of host "node01@node02")
        raise typer.BadParameter(f"{text!r} names more than one host: give one --symptom per host "
                                 f"(--symptom {kind}@{host.split('@')[0]} --symptom {kind}@{host.split('@')[1]})",
                                 param_hint="--symptom")
    if host and not_host_names(pa.array([host]))[0].as_py():  # as ingest refuses it (bad_host): no event has it
        raise typer.BadParameter(f"{host[:80]!r} is no host name (at most {MAX_HOST_CHARS} characters, no blanks, "
                                 "control or format characters or '/')", param_hint="--symptom")
    if host:
        from schemas.hostname import canonical_host

        host = canonical_host(host)  # as the events name it: node07.cluster.local, NODE07 -> node07
    if colon and not gpus.strip(", "):  # "hang:": GPUs left out, not "no GPU named"
        raise typer.BadParameter(f"{text!r} names no GPU after ':': write {head}:0,1 (indexes or PCI bus ids), or "
                                 "leave ':' out", param_hint="--symptom")
    from schemas.pci import normalize_bus_id

    named = [g.strip() for g in gpus.split(",")] if colon else []
    if "" in named:  # "hang:0,,1": a GPU left out of a template, as "hang:" is
        raise typer.BadParameter(f"{text!r} names an empty GPU between commas", param_hint="--symptom")
    index_like = [g for g in named if g.isascii() and g.isdigit()]  # not "²" or "٣": str.isdigit takes them
    # an index is a GPU's place on its host (nvidia-smi's); 20 digits are no GPU, and no bus id either
    bad = [g for g in named
           if (g not in index_like and normalize_bus_id(g) is None) or (g in index_like and len(g) > 4)]
    if bad:
        raise typer.BadParameter(f"GPUs are indexes (0, 1, …) or PCI bus ids (0000:1b:00.0, as nvidia-smi prints "
                                 f"them), not {', '.join(map(repr, bad))}", param_hint="--symptom")
    index = sorted({int(g) for g in index_like})  # "01" is GPU 1, named once
    bus_ids = sorted({normalize_bus_id(g) for g in named if g not in index_like})  # 00000000:1B:00.0: 0000:1b:00.0
    return Symptom(host=host, kind=kind, gpus=[*map(str, index), *bus_ids])


# the list of `firstfault --help` keeps a docstring's line breaks: a one-line summary (it broke mid-sentence)
@app.command(short_help="Find the first fault in local log files and print its incidents, without Kafka.",
             epilog="exit 0 ok, 1 runtime failure, 2 usage/config error or nothing readable, 3 --fail-on matched, "
                    "141 stdout's reader left (| head)")
def diagnose(
    paths: Annotated[list[str], typer.Argument(metavar="PATH",
                                                help="log files or folders (raw lines or NDJSON; gzip, zstd, bzip2, "
                                                     "xz ok); - reads standard input, as this machine's log")],
    format: Annotated[Literal["json", "table"], typer.Option("--format", "-f", help="the report's form")] = "table",
    symptom: Annotated[Optional[list[str]], typer.Option(
        metavar="<symptom>",
        help="what you know that the logs may not say: hang or failure, then @HOST and :GPU,GPU where known, GPUs "
             "as indexes or PCI bus ids (e.g. hang:0,1, failure@node07 or failure:0000:1b:00.0)")] = None,
    fleet_config: Annotated[Optional[Path], typer.Option(help="fleet config YAML (hosts, platform, domain)",
                                                         metavar="<file>")] = None,
    fail_on: Annotated[Optional[Literal["critical", "error", "warning", "info"]], typer.Option(
        help="exit 3 if an incident has this severity or worse")] = None,
    config: ConfigOpt = None,
) -> None:
    """Run the whole pipeline over local files; print the incidents (a table; with --format json the events and
    incidents in docs/DESIGN.md's shape)."""
    from api.diagnose import (SymptomHostError, diagnose_paths, mtime_note, place_symptoms, same_named_files,
                              year_note)
    from api.render import IncidentsReport, events_json, incidents_title
    from ingest.files import NOTE_SUFFIXES, walk

    from schemas.events import SEVERITY_RANK

    args = list(paths)  # as given: "-" is standard input
    if "" in args:
        # an empty argument (`diagnose "$LOG"` with LOG unset) is no path: as Path("") it was the current folder,
        # whose every file was diagnosed (a break-it pass)
        raise typer.BadParameter("an empty path names no file or folder", param_hint="PATH")
    paths = [Path(a) for a in args]
    stdin = None
    if "-" in args:
        _require_stdin()
        stdin = _stdin_file()
        paths = [stdin if a == "-" else p for a, p in zip(args, paths)]
    shown_as: dict[Path, str] = {stdin: "standard input"} if stdin is not None else {}  # a copy -> as it was named
    # a pipe named on the command line (`diagnose <(journalctl -k)`, a FIFO) is read once, as standard input is: it
    # was refused, "not a regular file or folder" (a break-it pass); one under a folder is still skipped, and said
    copied: dict[tuple[int, int], Path] = {}  # a pipe named twice (or by a link) is read once: opened again, it
    for i, (a, p) in enumerate(zip(args, paths)):  # waited for a writer for ever (a break-it pass)
        if a != "-" and _exists(p) and p.is_fifo():
            st = p.stat()
            key = (st.st_dev, st.st_ino)
            if key not in copied:
                try:
                    copied[key] = _pipe_file(p)
                except OSError as e:
                    err.print(f"[red]cannot read {escape(a)}:[/] {escape(e.strerror or str(e))}")
                    raise typer.Exit(2) from None
            paths[i] = copied[key]
            shown_as.setdefault(paths[i], a)
    missing = [p for p in paths if not _exists(p)]
    if missing:
        # a link to nothing or a loop of links is said as the system says it ("no such file" for a loop: a break-it pass)
        why = {str(p): _unreadable(p) for p in missing}
        gone = [p for p, w in why.items() if w is None]
        if gone:
            err.print(f"[red]no such file or directory:[/] {escape(', '.join(gone))}")
        for p, w in why.items():
            if w is not None:
                err.print(f"[red]cannot read {escape(p)}:[/] {escape(w)}")
        raise typer.Exit(2)
    special = [str(p) for p in paths if not (p.is_file() or p.is_dir())]
    if special:  # a FIFO, a device: reading it could block or never end
        err.print(f"[red]not a regular file or folder:[/] {escape(', '.join(special))}")
        raise typer.Exit(2)
    s = _settings(config, fleet_config=fleet_config)
    if args == ["-"] and "timezone" not in s.model_fields_set:
        # standard input alone is this machine's log (`sudo dmesg -T | firstfault diagnose -`): `dmesg -T` and
        # syslog print its local time with no zone; read as UTC they were hours off, silently (a fresh-user trial)
        try:
            local = _local_zone()
        except ValueError as e:  # a POSIX TZ string (JST-9) or a zone zoneinfo does not know: say so, read as set
            err.print(f"standard input: {e}; stamps that print no zone (dmesg -T, syslog) are read in {s.timezone} "
                      "(FIRSTFAULT_TIMEZONE=Area/City reads them in another)", style="yellow", markup=False,
                      highlight=False, soft_wrap=True)
            local = None
        if local and _offsets(local) != _offsets(s.timezone):
            s.timezone = local
            err.print(f"standard input: stamps that print no zone (dmesg -T, syslog) are read in this machine's "
                      f"zone, {local} (FIRSTFAULT_TIMEZONE reads them in another)", style="yellow", markup=False,
                      highlight=False, soft_wrap=True)
    given: dict[str, list[str]] = {}  # each file's name in its origin -> the paths it was read from
    others: list[Path] = []  # FIFOs, sockets, broken links under a folder: not read, but said
    same: list[tuple[Path, Path]] = []  # links to a file read already, a file named twice: read once, said
    unlisted: list[tuple[Path, str]] = []  # folders that cannot be listed, entries that cannot be read: said
    notes: list[Path] = []  # a folder's notes and configuration files (files.NOTE_SUFFIXES): not read, but said
    hidden: list[tuple[Path, Path]] = []  # a folder's hidden files and files under its hidden folders: not read, said
    try:
        for f, rel in walk(paths, others, same, unlisted, notes, hidden):
            # standard input is said as such, not by the temporary file it was copied to
            given.setdefault(rel, []).append(shown_as.get(f, str(f)))
    except FileNotFoundError as e:  # removed since the check above
        err.print(f"[red]{escape(str(e))}[/]")
        raise typer.Exit(1) from None
    if others:
        shown = _first_of(map(str, sorted(others)))
        err.print(f"skipped, not regular files (FIFOs, sockets, devices, broken links): {shown}", style="yellow",
                  markup=False, highlight=False, soft_wrap=True)  # one line: grep
    if unlisted:
        shown = _first_of(f"{d} ({why})" for d, why in sorted(unlisted))
        err.print(f"skipped, cannot be listed or read: {shown}", style="yellow", markup=False, highlight=False,
                  soft_wrap=True)  # one line: grep
    if notes:
        shown = _first_of(map(str, sorted(notes)))
        err.print(f"skipped, notes and configuration files under a folder ({', '.join(sorted(NOTE_SUFFIXES))}; "
                  f"name one to read it): {shown}", style="yellow", markup=False, highlight=False, soft_wrap=True)
    if hidden:  # a job's logs under .cache/ were left out unsaid, their Xid with them (a break-it pass)
        from ingest.files import hidden_roots

        shown = _first_of(f"{r}/ ({c} file{'s' * (c != 1)})" if r.is_dir() else str(r)
                          for r, c in hidden_roots(hidden).items())
        err.print(f"skipped, hidden files and files under hidden folders (name one to read it): {len(hidden)} "
                  f"file{'s' * (len(hidden) != 1)}: {shown}", style="yellow", markup=False, highlight=False,
                  soft_wrap=True)  # one line: grep
    if same:
        shown = _first_of(f"{a} (= {b})" if a != b else f"{a} (named twice)" for a, b in same)
        err.print(f"read once, the same file as one read already (a link, or named twice): {shown}", style="yellow",
                  markup=False, highlight=False, soft_wrap=True)
    symptoms = [_parse_symptom(t) for t in symptom or []]
    progress = _progress()
    try:
        decoded, batch, incidents = diagnose_paths(paths, s, symptoms=symptoms, progress=progress)
    except (FileNotFoundError, PermissionError, IsADirectoryError) as e:
        err.print(f"[red]{escape(str(e))}[/]")
        raise typer.Exit(1) from None
    except SymptomHostError as e:
        raise typer.BadParameter(str(e), param_hint="--symptom") from None
    finally:
        if progress is not None:
            progress.finish()
    symptoms = place_symptoms(symptoms, decoded, batch)  # the hosts diagnose_paths gave them
    read = {seg.stream for seg in decoded.segments}  # files some lines were read from
    for origin, line in _skipped(batch.rejects, given):  # decode rejects and lines too long to read
        label = "read in part" if origin in read else "skipped"  # a truncated .gz gives the lines before the cut
        err.print(f"[yellow]{label}[/] {line}", markup=True, highlight=False, soft_wrap=True)  # one line: grep
    # files that held no line beside others that did (empty, or blank lines only): said, as the other skipped files
    # are (a folder's empty.log went unsaid: a fresh user's trial); all of them: the error below
    from api.diagnose import file_of

    held = {f[0] for seg in decoded.segments if seg.data.strip(_BLANK) and (f := file_of(seg.origin))}
    rejected = {f[0] for r in decoded.rejects if (f := file_of(r.origin.split("#", 1)[0]))}
    if held and (empty := sorted(p for name, ps in given.items() if name not in held and name not in rejected
                                 for p in ps)):
        err.print(f"skipped, empty or blank lines only: {_first_of(empty)}", style="yellow", markup=False,
                  highlight=False, soft_wrap=True)  # one line: grep
    # a wrong folder or an empty capture must not pass a --fail-on gate as healthy: files that hold nothing but
    # blank lines (or nothing), or no files at all
    if all(not s.data.strip(_BLANK) for s in decoded.segments):  # NUL bytes: a log zeroed by a power loss
        files = sum(map(len, given.values()))
        where = escape(", ".join("standard input" if a == "-" else a for a in args))
        if decoded.rejects:  # every file skipped (corrupt, too large): nothing was read, which is no healthy fleet
            skipped = min(len({r.origin.split("#", 1)[0] for r in decoded.rejects}), files)
            rest = files - skipped  # the others: empty, or blank lines only (were "skipped as above", unsaid there)
            err.print(f"[red]nothing could be read[/] in {where}: {files} file{'s' * (files != 1)}, "
                      f"{skipped} skipped as above" + (f", {rest} empty or blank lines only" if rest else ""))
        else:
            what = "" if args == ["-"] else f" {files} file{'s' * (files != 1)},"  # standard input is no file
            # a folder's hidden files are not read: said, or "no files found" stood beside a file (a break-it pass)
            # the files under a hidden folder too (.cache/job1/node01.log: "no files found" gave no reason)
            n, under = len(hidden), any(len(f.relative_to(d).parts) > 1 for d, f in hidden)
            what_hidden = (f"{n} file{'s' * (n != 1)} under hidden folders or hidden" if under
                           else f"{n} hidden file{'s' * (n != 1)}")
            why = [f"{what_hidden}, whose names begin with '.', "
                   + ("are not read in a folder: pass them by name" if n != 1
                      else "is not read in a folder: pass it by name")] if n else []
            if notes:  # the folder holds notes only: listed above, not "no files" alone (a break-it pass)
                why.insert(0, f"{len(notes)} notes or configuration file{'s' * (len(notes) != 1)}, not read in a "
                              "folder: name one to read it")
            err.print(f"[red]no log lines[/] in {where}:{what} empty or blank lines (or NUL bytes) only" if files
                      else f"[red]no files found[/] under {where}" + (f" ({'; '.join(why)})" if why else ""))
        raise typer.Exit(2)
    seen = sorted(set(batch.events.column("host").to_pylist()))
    listed = _first_of(seen, 8)
    # a host of topology facts or link samples only (`nvidia-smi topo -m`) is known: its symptom uses them
    known = set(seen) | {h for t in (batch.topology, batch.link_samples) for h in t.column("host").to_pylist()}
    from schemas.hostname import close_hosts

    for h in sorted({x.host for x in symptoms} - known):  # a typo, or other hosts' logs: it joins no evidence
        close = close_hosts(h, seen)
        err.print(f"symptom host {h} has no events in these logs (hosts with events: {listed or 'none'}); its "
                  "report joins no logged evidence" + (f". Did you mean {' or '.join(close)}?" if close else ""),
                  style="yellow", highlight=False, markup=False)  # text, not markup
    for x in symptoms:  # a GPU the host's logs do not name: a typo, or another host's GPU
        if x.host in seen and (odd := _unnamed_gpus(batch, x.host, x.gpus)):
            err.print(odd, style="yellow", highlight=False, markup=False)
    # how much was read is progress, not the report: stderr, as the demo's (a pipe or file gets the report)
    facts = "".join(f", {n} {what}{'s' * (n != 1)}" for n, what in (
        (batch.topology.num_rows, "topology fact"), (batch.link_samples.num_rows, "link sample")) if n)
    err.print(f"{batch.lines} line{'s' * (batch.lines != 1)} → {batch.events.num_rows} event"
              f"{'s' * (batch.events.num_rows != 1)}{facts}", markup=False, highlight=False)
    # standard input and a shell's process substitution (`<(journalctl -k)`) are saved under this machine's name: their
    # lines are timed by when they were read, not by a file's time (a fresh user's trial on the pipe)
    if note := mtime_note(batch.events, _this_machines_file(), width=err.width):  # a line per point, wrapped
        err.print(note, style="yellow", markup=False, highlight=False, soft_wrap=True)
    if note := year_note(batch.events, _this_machines_file()):
        err.print(note, style="yellow", markup=False, highlight=False)
    for h, files in same_named_files(batch.events).items():  # other machines' logs under one name: one host
        shown = _first_of(_as_given(files, given))
        err.print(f"{len(files)} different files are all host {h} by their name or folder ({shown}): their events are "
                  "correlated as one host's. If they come from different hosts, diagnose them apart or name each "
                  "file after its host", style="yellow", markup=False, highlight=False)
    if not incidents and not symptoms:  # "Incidents: none" for a job that hung with only `topo -m` logged (a fresh
        # user's trial on tests/corpus/006): what the logs cannot say is the operator's to add
        err.print("no incident: nothing in these logs is a fault. If a job hung or failed anyway, say so with "
                  "--symptom hang|failure[@HOST]: a silent hang logs nothing, and the platform's lines (PCIe "
                  "topology, P2P, Fabric Manager) are then weighed against it", style="yellow", markup=False,
                  highlight=False)
    try:
        if format == "json":
            sys.stdout.buffer.write(orjson.dumps({"events": events_json(batch.events), "incidents": incidents},
                                                 option=orjson.OPT_INDENT_2))
            sys.stdout.buffer.write(b"\n")
        else:
            # titled with its counts, as `demo` and `run --once` title theirs ("Incidents" alone: a fresh user's trial);
            # texts quote log lines and host names: text, not markup
            out.print(IncidentsReport(incidents, title=incidents_title(incidents)))
        sys.stdout.flush()
    except OSError as e:  # a full disk: said in one line, as `sql` and `report` do; a reader gone (`| head`): quiet,
        # exit 141 (api.render.reader_gone)
        if isinstance(e, BrokenPipeError):
            reader_gone()
        err.print(f"[red]cannot write the output:[/] {escape(str(e))}")
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 — what is still buffered goes nowhere at exit
        raise typer.Exit(1) from None
    if fail_on:
        if any(SEVERITY_RANK[i["severity"]] >= SEVERITY_RANK[fail_on] for i in incidents):
            raise typer.Exit(3)


def _no_folder(path: Path) -> str | None:
    """Why ``path`` can never be a folder — it is a file, a FIFO or another entry that is no folder, a broken link,
    or lies under a file — or None (a folder, or one that can still be made)."""
    if path.is_symlink() and not path.exists():
        return "it is a broken link"
    if path.exists():
        return None if path.is_dir() else "it is no folder (a file, a FIFO, a device)"
    above = next((a for a in path.parents if a.exists()), None)
    return f"{above} is no folder" if above is not None and not above.is_dir() else None


def refuse_lake_file(s: Settings) -> None:
    """Exit 2 when no lake can ever be at the local lake path (``_no_folder``: a file, a broken link)."""
    from ingest.lake import Lake, lake_path

    if not Lake(s.lake).remote and (why := _no_folder(lake_path(s.lake))):
        err.print(f"[red]no lake can be at {escape(str(s.lake))}[/]: {escape(why)}; point FIRSTFAULT_LAKE / --config "
                  "at a folder")
        raise typer.Exit(2)


def _first_of(items: Iterable[str], n: int = 4) -> str:
    """``a, b, c, d and 3 more`` (``correlate.attribute.first_of``, imported when a message needs it: the CLI starts
    without the correlator)."""
    from correlate.attribute import first_of

    return first_of(items, n)


def _local_zone() -> str | None:
    """This machine's IANA time zone name (``TZ``, else ``/etc/localtime``: ``tzlocal``), or None when it names none
    (a zone file without a name). Raises ``ValueError`` for a ``TZ`` that is no IANA name ``zoneinfo`` knows: a
    POSIX string (``JST-9``) or a misspelt name, which tzlocal passes over for ``/etc/localtime`` (what
    ``dmesg -T`` printed under it was read 9 hours off: a break-it pass)."""
    from zoneinfo import ZoneInfo

    import tzlocal

    tz = os.environ.get("TZ", "").lstrip(":")
    if tz:
        try:
            ZoneInfo(tz)
        except (KeyError, ValueError, OSError):  # ZoneInfoNotFoundError is a KeyError
            raise ValueError(f"TZ={tz!r} is no IANA zone name (Area/City)") from None
        return tz
    try:
        name = tzlocal.get_localzone_name()
        ZoneInfo(name)
    except Exception:  # noqa: BLE001 - tzlocal raises its own kinds for an unreadable configuration; none is fatal
        return None
    return name


def _offsets(zone: str) -> tuple:
    """A zone's UTC offsets over a year (winter, summer): ``Etc/UTC`` and ``UTC`` are one zone."""
    from datetime import datetime
    from zoneinfo import ZoneInfo

    z = ZoneInfo(zone)
    return tuple(datetime(2026, m, 1, tzinfo=z).utcoffset() for m in (1, 7))


def _exists(p: Path) -> bool:
    """``Path.exists``, False also where the system refuses to look (a file under a folder without search permission:
    ``exists`` raised PermissionError, a traceback; a break-it pass): :func:`_unreadable` then says why."""
    try:
        return p.exists()
    except OSError:
        return False


def _unreadable(p: Path) -> str | None:
    """Why ``p``, which does not exist as far as ``Path.exists`` sees, cannot be read: the system's words for a loop
    of symbolic links or a link to nothing, or None for a path that is simply not there."""
    try:
        os.stat(p)
    except FileNotFoundError:
        # a chain of links is said by where it ends ("a link to dangling, which does not exist" named a link that
        # exists, to nothing: a break-it pass)
        return f"a symbolic link to nothing ({os.path.realpath(p)} does not exist)" if p.is_symlink() else None
    except OSError as e:
        return e.strerror or str(e)
    return None


def _require_stdin() -> None:
    """Exit 2 saying why when ``-`` names a standard input that cannot be read: closed (``<&-``, a job started with
    no input; ``sys.stdin`` is None) or open for writing only (``EBADF``). Both were a traceback, exit 1 (a break-it
    pass). A zero-byte read is the check: it reads nothing from a pipe or a terminal. A standard input with no file
    descriptor (a test's in-memory one) is left to its reader."""
    if sys.stdin is None:
        err.print("[red]cannot read standard input:[/] it is closed; `-` reads it: pipe or redirect the input to it")
        raise typer.Exit(2)
    try:
        os.read(sys.stdin.fileno(), 0)
    except io.UnsupportedOperation:
        return
    except OSError as e:
        why = "it is open for writing only" if e.errno == errno.EBADF else (e.strerror or str(e))
        err.print(f"[red]cannot read standard input:[/] {escape(why)}")
        raise typer.Exit(2) from None


def _stdin_file() -> Path:
    """Standard input (``diagnose -``: ``dmesg -T | firstfault diagnose -``) copied to a file of a temporary folder
    (removed at exit) named after this machine, ``<short host name>.stdin``: its lines that name no host are this
    machine's (DESIGN.md: the file name up to its first ``.``), its time reference is now. At most
    ``decode.MAX_FILE_BYTES`` (1 GiB) is copied and one byte more, so a longer input is refused as a file is."""
    return _temp_copy(sys.stdin.buffer, _this_machines_file())


def _pipe_file(pipe: Path) -> Path:
    """A pipe named on the command line copied as :func:`_stdin_file` copies standard input: a shell's process
    substitution (``/dev/fd/63``, ``/proc/self/fd/…``) is named after this machine as standard input is, a named FIFO
    keeps its name (``node07.log``). Opening it waits for its writer, as ``cat`` does. Raises ``OSError`` when it
    cannot be opened."""
    name = _this_machines_file() if str(pipe).startswith(("/dev/fd/", "/proc/")) else pipe.name
    with pipe.open("rb") as src:
        return _temp_copy(src, name)


def _this_machines_file() -> str:
    """``<short host name>.stdin``: the file name whose lines that name no host are this machine's."""
    import socket

    from ingest.files import STDIN_SUFFIX

    return f"{socket.gethostname().split('.', 1)[0] or 'localhost'}{STDIN_SUFFIX}"


def _temp_copy(src, name: str) -> Path:
    """At most ``decode.MAX_FILE_BYTES`` and one byte more of the binary stream ``src`` into the file ``name`` of a
    new temporary folder (removed at exit), 1 MiB at a time; its path."""
    import atexit
    import shutil
    import tempfile

    from ingest.decode import MAX_FILE_BYTES

    folder = tempfile.mkdtemp(prefix="firstfault-input-")
    atexit.register(shutil.rmtree, folder, True)
    path, most = Path(folder) / name, MAX_FILE_BYTES + 1
    with path.open("wb") as f:
        while most > 0 and (chunk := src.read(min(most, 1 << 20))):
            f.write(chunk)
            most -= len(chunk)
    return path


def _unnamed_gpus(batch, host: str, gpus: list[str]) -> str:
    """A warning naming the reported ``gpus`` (indexes or normalised PCI bus ids) of ``host`` that none of its
    events, link samples or topology facts names, where they name GPUs of that form (bus ids are checked
    against bus ids, indexes against indexes); "" when there is none."""
    import pyarrow.compute as pc

    from schemas.pci import normalize_bus_id

    bus, index = set(), set()
    for t in (batch.events, batch.link_samples, batch.topology):
        if t is None or not t.num_rows:
            continue
        cols = ["device", "gpu_index"] + (["device_type"] if "device_type" in t.column_names else [])
        rows = t.filter(pc.equal(t.column("host"), host)).select(cols).to_pylist()
        # a PCIe port, an NVSwitch or a NIC is no GPU (the AER lines' pcieport was listed among the GPUs: a
        # fresh-user trial)
        rows = [r for r in rows if r.get("device_type") in (None, "gpu")]
        bus.update(b for r in rows if r["device"] and (b := normalize_bus_id(r["device"])))
        index.update(str(r["gpu_index"]) for r in rows if r["gpu_index"] is not None)
    odd = [g for g in gpus if (g.isdigit() and index and g not in index) or (not g.isdigit() and bus and g not in bus)]
    if not odd:
        return ""
    named = ", ".join(sorted(bus) + sorted(index, key=int))
    return (f"symptom GPU {', '.join(odd)} of {host} is named by none of its recognised lines (they name GPU "
            f"{named}): a typo, or another host's GPU? The report is kept as given")


#: bytes of a capture that holds no log line: whitespace, and the NULs a file zeroed by a power loss holds
_BLANK = b" \t\r\n\x0b\x0c\x00"


def _as_given(files: list[str], given: dict[str, list[str]]) -> list[str]:
    """``<name>@<content digest>`` files (``api.diagnose.same_named_files``) by the paths they were given as, where
    the digest tells which: ``input/node01.log@2c5c58c6`` and ``input/node01.log@910d889a`` said nothing of the two
    folders given (a fresh user's trial)."""
    out = []
    for f in files:
        rel, _, digest = f.rpartition("@")
        paths = [p for p in given.get(rel, []) if p != "standard input"]
        if len(paths) > 1:
            paths = [p for p in paths if _digest_of(p) == digest]
        out.append(paths[0] if len(paths) == 1 else f)
    return out


def _digest_of(path: str) -> str | None:
    """``ingest.files.content_digest`` of a file given; None for one gone since it was read."""
    from ingest.files import content_digest

    try:
        return content_digest(Path(path))
    except OSError:
        return None


def _skipped(rejects, given: dict[str, list[str]] | None = None) -> list[tuple[str, str]]:
    """One line per file with unreadable parts (not one per bad record): ``(origin, text)``, the text naming the
    file, how many parts and the first reasons (escaped for Rich markup). ``given``: each file's name in its
    origin -> the paths it was read from; a file is named by its path when that is one, else by its origin's name
    and content digest (``a/node07.log`` and ``b/node07.log`` given are both ``node07.log``)."""
    from rich.markup import escape

    from api.diagnose import file_of

    per: dict[str, list] = {}
    for r in rejects:
        per.setdefault(r.origin.split("#", 1)[0], []).append(r)
    out = []
    for origin, rs in per.items():
        # a file as given (a folder's files under its name), not its origin: file:<path>@<content digest>
        shown = origin
        # file:<name>@<digest>, or file:<name> for a file gone before its content could be read
        name = f[0] if (f := file_of(origin)) else origin[len("file:"):] if origin.startswith("file:") else None
        if name is not None:
            paths = (given or {}).get(name, [])
            shown = paths[0] if len(paths) == 1 else origin[len("file:"):]
        if len(rs) == 1:
            out.append((origin, escape(f"{shown}: {rs[0].reason}")))
        else:
            more = f"; … ({len(rs) - 3} more)" if len(rs) > 3 else ""
            out.append((origin, escape(f"{shown}: {len(rs)} unreadable parts: " + "; ".join(r.reason for r in rs[:3])
                                       + more)))
    return out



@kafka_app.command("start", short_help="Start the local broker and print its address.")
def kafka_start(config: ConfigOpt = None) -> None:
    """Resolve the Kafka jars (once), format storage and start the broker; print its address (on stdout, alone: a
    script reads it). On stderr: each step as it begins (fetching the jars, formatting the storage, waiting for the
    broker on 127.0.0.1:<port>), then how long it took; a broker already running, with its pid."""
    from ingest import broker

    s = _settings(config)
    t0 = time.monotonic()
    try:
        running = broker.status(s.state_dir.resolve())
        # each step that may take a while is said before it begins, on stderr (stdout is the address alone)
        st = broker.start(s.state_dir, log=lambda m: err.print(m, markup=False, highlight=False))
        if running is not None and running.pid == st.pid:  # it printed the address alone (a new user's trial)
            err.print(f"already running: {st.bootstrap} (pid {st.pid})", markup=False, highlight=False)
        else:
            err.print(f"broker ready on {st.bootstrap} (pid {st.pid}, data {st.data_dir}) after "
                      f"{time.monotonic() - t0:.1f} s", markup=False, highlight=False)
        asyncio.run(broker.ensure_topics(st.bootstrap, s.topics + [s.dlq_topic, s.events_topic]))
    except broker.BrokerError as e:
        err.print(f"[red]{escape(str(e))}[/]")
        raise typer.Exit(1) from None
    out.print(st.bootstrap)


@kafka_app.command("topics", short_help="Create the configured topics on the configured broker, if missing.")
def kafka_topics(partitions: Annotated[Optional[int], typer.Option(
        min=1, max=10_000, metavar="<n>",
        help="partitions per topic: new topics get this many (default 3), existing ones with fewer get more "
             "(Kafka cannot remove partitions)")] = None,
                 config: ConfigOpt = None) -> None:
    """Create the configured topics (raw, dead-letter and the events topic) on the configured broker, if missing;
    with --partitions, add partitions to those that have fewer. One line per topic on stderr."""
    from ingest import broker

    s = _settings(config)
    try:
        got = asyncio.run(broker.ensure_topics(_bootstrap(s), s.topics + [s.dlq_topic, s.events_topic],
                                               partitions=partitions or 3, grow=partitions is not None))
    except broker.BrokerError as e:
        err.print(f"[red]{escape(str(e))}[/]")
        raise typer.Exit(1) from None
    grown = False
    for name, (before, now) in got.items():
        if before is None:
            err.print(f"{name}: created, {now} partitions")
        elif before != now:
            grown = True
            err.print(f"{name}: {before} -> {now} partitions")
        elif partitions is not None and now > partitions:
            err.print(f"{name}: {now} partitions, more than {partitions}: kept (Kafka cannot remove partitions)")
        else:
            err.print(f"{name}: {now} partitions")
    if grown:
        err.print("keys map to partitions anew from now on: a host's records written before stay where they were "
                  "(a correlate worker reads both; let the ingest workers rebalance)")


@kafka_app.command("stop")
def kafka_stop(config: ConfigOpt = None) -> None:
    """Stop the local broker (nothing is left running)."""
    from ingest import broker

    s = _settings(config)
    st = broker.read_state(s.state_dir.resolve())
    # which broker: "stopped" alone did not say (a fresh user's trial read nothing there)
    stopped = broker.stop(s.state_dir)
    if stopped:
        err.print(f"stopped the broker on {st.bootstrap} (pid {st.pid})" if st else "stopped")
    else:
        err.print(_none_under(s, "stop"), markup=False, highlight=False, soft_wrap=True)


def _none_under(s: Settings, command: str) -> str:
    """What ``kafka stop`` and ``kafka status`` say when no local broker runs under the state folder: which folder
    they looked in (the state_dir setting and where it came from) and how to name another: "not running" alone
    read as no broker at all while the demo's ran under another folder (a fresh user's trial). Names the folders
    of the local brokers this user runs elsewhere (``broker.running_elsewhere``), up to three."""
    from api.demo import program, shell_quote

    where, me = s.state_dir.resolve(), program()
    said = f"not running: no local broker under {where} (state_dir, {s.source_of('state_dir')})"
    others, named = _brokers_elsewhere(where)
    if len(others) == 1:  # the demo's, most often: the command to paste
        return (f"{said}. One runs under {named}: FIRSTFAULT_STATE_DIR={shell_quote(str(others[0][0]))} "
                f"{me} kafka {command}")
    if others:  # several (other users' too): named, none picked for a command that would stop it
        return f"{said}. Local brokers run under {named}: FIRSTFAULT_STATE_DIR=<its folder> {me} kafka {command}"
    return (f"{said}. A broker started under another folder is named by it: FIRSTFAULT_STATE_DIR=<that folder> "
            f"{me} kafka {command} (the demo's is .firstfault in the folder `make demo` ran in)")


def _brokers_elsewhere(where: Path, *, addresses: bool = False) -> tuple[list[tuple[Path, str]], str]:
    """The local brokers this user runs under other state folders than ``where`` (``broker.running_elsewhere``), for
    the hints of ``kafka stop``/``status`` and of a command with no bootstrap: each as (its state folder, its address
    ``127.0.0.1:N``, "" without ``addresses``), and the hints' naming of them, "FOLDER (pid N)[ on ADDRESS]", up to
    three joined by "; ", then " and K more". With ``addresses``, a broker whose state file is gone meanwhile is left
    out (it has no address to name)."""
    from ingest import broker

    found = []
    for folder, pid in broker.running_elsewhere(where):
        there = broker.read_state(folder) if addresses else None
        if addresses and there is None:
            continue
        found.append((folder, pid, there.bootstrap if there else ""))
    named = "; ".join(f"{folder} (pid {pid})" + (f" on {address}" if address else "")
                      for folder, pid, address in found[:3])
    more = f" and {len(found) - 3} more" if len(found) > 3 else ""
    return [(folder, address) for folder, _, address in found], named + more


@kafka_app.command("status", short_help="Print the local broker's address when it answers, else exit 1.")
def kafka_status(config: ConfigOpt = None) -> None:
    """The local broker (the one `kafka start` runs under state_dir): exit 0 and print its address when it answers;
    exit 1 otherwise. A kafka_bootstrap that names another broker is said to be another, not checked."""
    from ingest import broker

    s = _settings(config)
    st = broker.status(s.state_dir)
    # another broker's address is said as not checked: "names 127.0.0.1:N, not the local broker … not running" read
    # as that broker being down while it ran (a fresh user's trial)
    # … said with where the setting came from, and "localhost:N" for the local broker's 127.0.0.1:N is that broker (a
    # break-it pass: a config file's value was said to be FIRSTFAULT_KAFKA_BOOTSTRAP's, localhost another broker)
    other = (f"kafka_bootstrap {s.kafka_bootstrap} ({s.source_of('kafka_bootstrap')}) is not the local broker (not "
             "checked)" if s.kafka_bootstrap and (not st or not _same_broker(s.kafka_bootstrap, st.bootstrap)) else "")
    if not st:
        err.print(f"no local broker under {s.state_dir}; {other}" if other else _none_under(s, "status"),
                  markup=False, highlight=False, soft_wrap=True)
        raise typer.Exit(1)
    if other:
        err.print(f"{other}; the local broker under {s.state_dir}:", style="yellow", markup=False, highlight=False,
                  soft_wrap=True)
    out.print(f"{st.bootstrap} pid={st.pid} data={st.data_dir}")


def _same_broker(bootstrap: str, local: str) -> bool:
    """Whether the ``host:port`` list ``bootstrap`` names the local broker at ``local`` (``127.0.0.1:N``): one of its
    addresses is ``local``, or a loopback name (``localhost``, ``::1``) with its port."""
    port = local.rpartition(":")[2]
    for addr in bootstrap.split(","):
        host, _, p = addr.strip().rpartition(":")
        if addr.strip() == local or (p == port and host.strip("[]") in ("localhost", "127.0.0.1", "::1")):
            return True
    return False


def _bootstrap(s: Settings) -> str:
    from api.demo import shell_quote
    from ingest import broker

    if s.kafka_bootstrap:
        return s.kafka_bootstrap
    st = broker.status(s.state_dir)
    if not st:
        # a configuration's gap: exit 2 (README, exit codes); the local broker is looked up under this state folder,
        # so another folder's broker (the demo's) is named by its address (a fresh user's trial)
        where = s.state_dir.resolve()
        said = (f"no Kafka bootstrap configured and no local broker running under {where} (state_dir, "
                f"{s.source_of('state_dir')})")
        # the one local broker running elsewhere (the demo's, run in another folder) named with its address:
        # `send` from the job's log folder said only how to look it up (a fresh user's trial)
        others, named = _brokers_elsewhere(where, addresses=True)
        if len(others) == 1:
            folder, address = others[0]
            hint = (f"; one runs under {named}: set FIRSTFAULT_KAFKA_BOOTSTRAP={address} (or "
                    f"FIRSTFAULT_STATE_DIR={shell_quote(str(folder))}) to use it, or run `firstfault kafka start`")
        elif others:  # several (other users' too): named with their addresses, none picked
            hint = (f"; local brokers run under {named}: set FIRSTFAULT_KAFKA_BOOTSTRAP=<its address> to use one, or "
                    "run `firstfault kafka start`")
        else:
            hint = (" (set FIRSTFAULT_KAFKA_BOOTSTRAP — to another state folder's broker: `FIRSTFAULT_STATE_DIR=<it> "
                    "firstfault kafka status` prints its address — or run `firstfault kafka start`)")
        err.print(said + hint, style="red", markup=False, highlight=False, soft_wrap=True)
        raise typer.Exit(2)
    return st.bootstrap


@app.command()
def demo(once: Annotated[bool, typer.Option("--once", help="exit after printing the incidents")] = False,
         port: PortOpt = None, config: ConfigOpt = None) -> None:
    """Start a local Kafka broker, ingest the bundled sample logs, print their incidents and serve the API."""
    from api.demo import DemoRunning, run_demo
    from ingest.broker import BrokerError
    from ingest.consumer import NotStored

    s = _settings(config)
    # the port is checked once the demo holds its lock (another demo is named as such), before its lake is
    # made afresh
    check = None if once else (lambda: _port_free(s, s.api_port if port is None else port))
    try:
        code = run_demo(s, once=once, port=port, console=err, out=out, check=check)
    except (BrokerError, DemoRunning) as e:
        err.print(f"[red]{escape(str(e))}[/]")
        raise typer.Exit(1) from None
    except NotStored as e:  # --once, as `run --once` says it (_until_signalled); it was a traceback
        err.print(f"[red]{e.label}[/]: {escape(str(e))}", highlight=False)
        raise typer.Exit(1) from None
    raise typer.Exit(code)


@app.command()
def run(once: Annotated[bool, typer.Option("--once", help="stop when caught up with the topics")] = False,
        serve: Annotated[bool, typer.Option(help="serve the HTTP API too")] = True,
        port: PortOpt = None, config: ConfigOpt = None) -> None:
    """The service: ingest + correlate + API in one process (one consumer-group member).

    With --once, the incidents once caught up are printed on stdout; else on stderr, as progress.

    A running service also prints on stderr each incident version it stores later (new, updated, resolved)."""
    from api.pager import outbox_free
    from api.render import IncidentsReport, IncidentsView, incident_progress, incidents_title
    from api.service import Service

    s = _settings(config, **({"api_port": port} if port is not None else {}))
    outbox_free(s.state_dir)  # before the API's address is told (it was, then OutboxInUse: a break-it pass)
    if serve:
        _port_free(s, s.api_port)  # port 0 too: the host is checked
        if s.api_port != 0:  # port 0: the system picks one, told once bound
            _tell_address(s, s.api_port)
    svc = Service(s, _bootstrap(s))

    def shown(head: str) -> Callable[[list[dict[str, Any]]], None]:
        """What caught up (``head`` "caught up"), or stopped first, shows: the records read and the incidents."""
        def show(incs: list[dict[str, Any]]) -> None:
            if s.log_format == "json":  # stderr is a log stream: one JSON object per line, not a table
                logging.getLogger("firstfault.run").warning("%s: %d incidents", head, len(incs),
                                                             extra={"incidents": [i["id"] for i in incs]})
                return
            err.print(svc.ingested(), markup=False, highlight=False)  # as the demo says it
            if once:  # the one-shot run's result: stdout, whole (a pipe or file gets the report)
                out.print(IncidentsReport(incs, title=incidents_title(incs, f"{head}: ")))
            else:
                err.print(IncidentsView(incs, title=incidents_title(incs, f"{head}: ")))
        return show

    _until_signalled(svc.worker.stop, lambda: svc.run(
        once=once, serve=serve, on_caught_up=shown("caught up"), on_stopped=shown(STOPPED_EARLY),
        on_incidents=incident_progress(s.log_format, err), on_listening=_tell_bound(s) if s.api_port == 0 else None),
        svc.worker.in_hand)
    if not once:  # said, as serve's "stopped", the workers' summaries and the demo's "stopped; …" are: a SIGTERM's
        # "stopping: …" was its last line, and whether it had ended showed nowhere (a fresh user's trial)
        _said(s, "run", f"stopped; lake: {s.lake}")


def _until_signalled(stop: asyncio.Event, run: Any, in_hand: Callable[[], str] | None = None) -> Any:
    """Run the coroutine ``run()`` makes and return what it returns; SIGINT / SIGTERM set ``stop`` (the worker
    finishes its batch and commits, then returns). A second one ends the process at once, exit 1: a correlate
    worker stopped while its broker was away waited for the broker to commit, and ignored every later SIGTERM (a
    break-it pass); what it had not committed is read again by the next run (at-least-once). ``in_hand()`` (an
    ingest worker's ``IngestWorker.in_hand``) names what that exit leaves not stored: the records of the batch in
    hand (a second SIGTERM named none: a helper's pass)."""
    from ingest.gcpause import tune_for_worker

    tune_for_worker()  # a worker process: rarer collections of the older generations, freed memory kept (ingest.gcpause)

    from api.service import second_signal_exits

    def first() -> None:  # said: a worker waiting on a broker that is away showed nothing for minutes (an operator's
        stop.set()  # trial)
        logging.getLogger("firstfault.service").warning(
            "stopping: the batch in hand is finished and committed first; a second signal stops at once")

    def second() -> None:
        left = f"; {in_hand()}" if in_hand is not None else " (its records are read again next time)"
        err.print(f"a second signal: stopping now, without the last commit{left}", style="red", highlight=False,
                  markup=False)
        sys.stderr.flush()

    signalled = second_signal_exits(first, second)

    async def main() -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, signalled)
        return await run()

    from correlate.consumer import CorrelateFailed
    from ingest.consumer import NotStored

    try:
        return asyncio.run(main())
    except NotStored as e:  # --once: the broker (or lake) kept failing a batch for once_give_up_s (a break-it pass:
        # it retried for good, and waited for good on the first SIGTERM), or a signal stopped it with a batch in hand
        # (it exited 0, "ingested 0 Kafka records": a break-it pass). 1, not 128 + the signal: the process was not
        # killed, it stopped in order; its one-shot work was not done, which is a runtime failure's 1
        err.print(f"[red]{e.label}[/]: {escape(str(e))}", highlight=False)
        raise typer.Exit(1) from None
    except CorrelateFailed as e:  # --once, caught up: its traceback is in the log already (StepGuard)
        err.print(f"[red]{escape(str(e))}[/]: the events are stored in the lake, the incidents could not be made "
                  "(a defect: the log above has its traceback)")
        raise typer.Exit(1) from None


WorkerPortOpt = Annotated[Optional[int], typer.Option(
    "--port", min=0, max=65535, metavar="<port>",
    help="serve this worker's /healthz and /metrics on api_host:<port> (default: the worker_port setting, unset: "
         "none; 0: any free port)")]


def _worker_settings(config: Path | None, port: int | None) -> Settings:
    """The settings of an ``ingest`` or ``correlate`` worker, ``--port`` as its ``worker_port``; exits 1 when that
    port cannot be bound (``_port_free``)."""
    s = _settings(config, **({"worker_port": port} if port is not None else {}))
    if s.worker_port is not None:
        _port_free(s, s.worker_port, "worker_port")
    return s


def _tell_worker_bound(s: Settings, worker: str) -> Any:
    """A ``uvicorn.Server`` callback that tells where a worker's /healthz and /metrics listen."""
    def told(server: Any) -> None:
        url = _base_url(s, server.servers[0].sockets[0].getsockname()[1])
        _tell(s, logging.INFO, f"{worker} worker: health on {url}/healthz, metrics on {url}/metrics", url=url)
    return told


def _tell_worker(s: Settings, worker: str, bootstrap: str) -> None:
    """What an ``ingest`` or ``correlate`` worker reads (topics, broker, group) and where it writes (the lake, the
    events topic), once it has reached the broker: it said only where its /healthz listens, and the lake at its exit
    (a fresh user's trial)."""
    if worker == "ingest":
        what = (f"reading {', '.join(s.topics)} on {bootstrap} (group {s.group_id}) into the lake {s.lake}, events "
                f"to {s.events_topic}, dead letters to {s.dlq_topic}")
    else:
        what = (f"reading {s.events_topic} on {bootstrap} (group {s.correlate_group_id}), incidents into the lake "
                f"{s.lake}")
    _tell(s, logging.INFO, f"{worker} worker: {what}")


@app.command()
def ingest(once: Annotated[bool, typer.Option("--once", help="stop when caught up with the raw topics")] = False,
           port: WorkerPortOpt = None, config: ConfigOpt = None) -> None:
    """An ingest worker: raw topics -> lake + fleet.events (keyed by correlation domain). Run many."""
    from api.service import IngestService, ingested_line

    s = _worker_settings(config, port)
    bootstrap = _bootstrap(s)
    svc = IngestService(s, bootstrap)
    t0 = time.monotonic()
    _until_signalled(svc.worker.stop, lambda: svc.run(once=once, on_listening=_tell_worker_bound(s, "ingest"),
                                                      on_started=lambda: _tell_worker(s, "ingest", bootstrap)),
                     svc.worker.in_hand)
    # what it read and where it went (it said nothing but its dead-letter warnings: a fresh user's trial); a one-shot
    # run a signal stopped first says so, as `run --once` does (it said only what it read, as if that were all)
    said = ingested_line(svc.worker.health, s.lake, time.monotonic() - t0, ran=not once)
    _said(s, "ingest", said if not once or svc.caught_up else f"{STOPPED_EARLY}: {said}")


@app.command()
def correlate(once: Annotated[bool, typer.Option("--once", help=(
        "stop when caught up with fleet.events; a member of the correlate group: beside running workers it takes "
        "partitions from them while it runs"))] = False,
              port: WorkerPortOpt = None, config: ConfigOpt = None) -> None:
    """A correlate worker: fleet.events -> incidents in the lake, pages, hourly report. Run several."""
    from api.render import IncidentsReport, incident_progress, incidents_title
    from api.service import CorrelateService

    s = _worker_settings(config, port)
    bootstrap = _bootstrap(s)
    svc = CorrelateService(s, bootstrap)
    if not once:  # each step's incidents as `run` shows them (--once prints them all when caught up)
        svc.on_incidents = incident_progress(s.log_format, err)
    incs = _until_signalled(svc.worker.stop, lambda: svc.run(
        once=once, on_listening=_tell_worker_bound(s, "correlate"),
        on_started=lambda: _tell_worker(s, "correlate", bootstrap))) or []
    # the incidents it holds, as `run --once` prints them (it printed nothing: a fresh user's trial)
    dead = f", {svc.worker.dead_lettered} dead-lettered to {s.dlq_topic}" if svc.worker.dead_lettered else ""
    # dead letters the broker did not take: their records hold the commit and are read again (the summary said
    # nothing of them and the exit was 0: a break-it pass)
    pending = svc.worker.dead_letters_pending
    unread = svc.worker.unread_partitions
    left = (f"; {pending} dead letter{'s' * (pending != 1)} not acknowledged by {s.dlq_topic}: their records are "
            "read again next time") if pending else ""
    left += (f"; {', '.join(unread)} not read to the end (paused behind them)") if unread else ""
    _said(s, "correlate", f"read {svc.worker.records} {s.events_topic} records → {len(incs)} incident"
                          f"{'s' * (len(incs) != 1)}{dead}{left}; lake: {s.lake}")
    head = "caught up" if svc.caught_up else STOPPED_EARLY
    if once and s.log_format == "json" and not svc.caught_up:  # as `run --once` says it
        logging.getLogger("firstfault.correlate").warning("%s: %d incidents", head, len(incs),
                                                          extra={"incidents": [i["id"] for i in incs]})
    if once and s.log_format != "json":
        out.print(IncidentsReport(incs, title=incidents_title(incs, f"{head}: ")))
    if once and pending:
        raise typer.Exit(1)


def _said(s: Settings, worker: str, line: str) -> None:
    """A worker's summary at its end: a line on stderr, or a log record when stderr is a JSON log stream."""
    if s.log_format == "json":
        logging.getLogger(f"firstfault.{worker}").warning(line)
    else:
        err.print(line, markup=False, highlight=False, soft_wrap=True)


def _refuse_missing_lake(s: Settings) -> None:
    """Exit 2, as ``sql`` does, when a local lake's folder does not exist: ``serve`` is a reader, and it made the
    folder and answered every route empty with ``/healthz`` ok, a mistyped ``FIRSTFAULT_LAKE`` a healthy-looking API
    serving nothing (a fresh user's trial). A folder that exists is served (an initialised lake nothing was ingested
    into yet: a new deployment; ``holds no events yet`` is said). The writers (``ingest``, ``run``) create it."""
    from ingest.lake import Lake, lake_path

    if Lake(s.lake).remote or lake_path(s.lake).exists():
        return
    demo = s.state_dir / "demo" / "lake"  # under the state folder a demo of these settings uses
    _tell(s, logging.ERROR, f"no lake at {s.lake} (no such folder): run `make demo` (its lake is {demo}), point "
                            "FIRSTFAULT_LAKE / --config at one, or start an ingest worker (or `firstfault run`) "
                            "first: it creates the lake", style="red", stage="serve", error_code="no_lake")
    raise typer.Exit(2)


@app.command()
def serve(port: PortOpt = None, config: ConfigOpt = None) -> None:
    """Serve the HTTP API over the lake (no ingest)."""
    import uvicorn

    from api.app import create_app, when_listening
    from api.store import holds_no_events
    from ingest.lake import Lake

    s = _settings(config)
    p = s.api_port if port is None else port
    refuse_lake_file(s)
    _refuse_missing_lake(s)
    _port_free(s, p)
    # where it came from: a FIRSTFAULT_LAKE set and forgotten was told "set FIRSTFAULT_LAKE … to read another"
    src = s.source_of("lake")
    # a relative path of a config file is the working folder's, not the file's: said (a break-it pass: "mylake (from
    # ../cfgdir/ff.toml)" served the working folder's mylake)
    if src.startswith("from ") and src != "from FIRSTFAULT_LAKE" and not Lake(s.lake).remote and \
            not Path(s.lake).is_absolute():
        src += f"; relative to the working folder: {Path(s.lake).resolve()}"
    _tell(s, logging.INFO, f"serving the lake at {s.lake} ({src}"
                           + ("; set FIRSTFAULT_LAKE or --config to read another)" if src == "the default" else ")"))
    if holds_no_events(s.lake):
        _tell(s, logging.WARNING, f"the lake at {s.lake} holds no events yet: every query answers empty until an "
                                  "ingest worker (or `firstfault run`) writes there; if it should hold some, check "
                                  "the lake setting", style="yellow")
    # log_config=None: uvicorn's loggers go through firstfault's handler (log_format, log_level), not their own
    server = uvicorn.Server(uvicorn.Config(create_app(s), host=s.api_host, port=p, log_config=None,
                                           log_level=s.log_level.lower()))

    async def main() -> None:  # port 0: the system picks one, told once bound
        stop = asyncio.Event()
        told = asyncio.create_task(when_listening(server, _tell_bound(s), stop))
        try:
            await server.serve()
        finally:
            stop.set()
            await told

    def terminated(signum: int, frame: Any) -> None:
        raise _Terminated

    # uvicorn raises the SIGTERM it shut down on again once done: here an exception, so a service manager's stop is
    # said and exits 0, as the workers' (the default action killed it unsaid, status 143: stop 58's list)
    before = signal.signal(signal.SIGTERM, terminated)
    try:
        if p:
            _tell_address(s, p)
            server.run()
        else:
            asyncio.run(main())
    except KeyboardInterrupt:  # uvicorn raises Ctrl-C's SIGINT again once it has shut down: exit 130, as before
        if server.started:  # said, as the demo says "stopped; …" (it ended silently: a fresh user's trial)
            _tell(s, logging.INFO, "stopped")
        raise
    except _Terminated:
        pass
    finally:
        signal.signal(signal.SIGTERM, before)
    if server.started:  # stopped otherwise (SIGTERM; a SIGINT that was ignored where it started)
        _tell(s, logging.INFO, "stopped")


class _Terminated(Exception):
    """``serve``'s SIGTERM, raised by its handler once uvicorn has shut down (``serve``)."""


#: the longest query ``sql -`` reads from standard input (characters)
SQL_STDIN_CHARS = 1 << 20


@app.command(short_help="Read-only DuckDB SQL over the lake's views and table macro; without a query, list them.")
def sql(query: Annotated[Optional[str], typer.Argument(
        metavar="QUERY", help="SQL; - reads it from standard input (a file of it, a query that begins with a -- "
                              "comment); omitted = list the views and table macros")] = None,
        format: Annotated[Optional[Literal["table", "csv", "json", "parquet"]], typer.Option(
            "--format", "-f", help="default: from --output's name (.csv, .json, .ndjson, .parquet), else "
                                   "table")] = None,
        output: Annotated[Optional[Path], typer.Option("--output", "-o", help="file for parquet/csv/json (not in the "
                                                       "lake or state folder)", metavar="<file>")] = None,
        force: Annotated[bool, typer.Option("--force", help="replace --output when it exists")] = False,
        config: ConfigOpt = None) -> None:
    """Read-only DuckDB SQL over the lake's views (events, incidents, incident_versions, incident_evidence,
    link_samples, topology) and the table macro events_between(lo, hi); without a query, it lists them."""
    from api.sql import check_output, run_sql

    s = _settings(config)
    # a usage error is said first, alone (it came after "lake: …": a fresh user's trial)
    format = check_output(s, format, output, force)
    if query == "-":  # a query file, or one that begins with "--": the shell passes it as an option's name
        _require_stdin()
        query = sys.stdin.read(SQL_STDIN_CHARS + 1)  # bounded: 100 MB of "query" took 790 MB (a break-it pass)
        if len(query) > SQL_STDIN_CHARS:
            err.print(f"[red]the query on standard input is longer than {SQL_STDIN_CHARS:,} characters[/]")
            raise typer.Exit(2)
    err.print(f"[dim]lake: {escape(str(s.lake))}[/]")
    require_lake(s)
    raise typer.Exit(run_sql(s, query, format, output, out, err, force=force))


def _add_send() -> None:  # after `sql`: `firstfault --help` lists the commands in this order
    from api.send_cli import send

    app.command(short_help="Send log lines from files or standard input to a raw topic, without kcat.")(send)


_add_send()


def setup_logging(fmt: str, level: str = "INFO") -> None:
    """Text logs for people, or one JSON object per line (``FIRSTFAULT_LOG_FORMAT=json``) for log pipelines.

    JSON records carry ``stage`` and ``error_code`` when the code sets them (``extra=``), as every error or
    drop is one named event. Secrets are SecretStr settings and never reach a log record.
    """
    handler = logging.StreamHandler(sys.stderr)
    if fmt == "json":
        from pythonjsonlogger.core import RESERVED_ATTRS
        from pythonjsonlogger.json import JsonFormatter

        # time: ISO 8601 in UTC; uvicorn's ``color_message`` (the message again, with ANSI colour codes) is left out
        handler.setFormatter(JsonFormatter("%(levelname)s %(name)s %(message)s", timestamp="time",
                                           reserved_attrs=[*RESERVED_ATTRS, "color_message"],
                                           rename_fields={"levelname": "level", "name": "logger"}))
    else:  # UTC, said (the lines' and the incidents' times are UTC; a local time without its zone read as them)
        text = logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s", "%Y-%m-%dT%H:%M:%SZ")
        text.converter = time.gmtime
        handler.setFormatter(text)
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    # where the API listens and which lake it serves are told at INFO whatever the level (they were WARNINGs, which
    # a log-based alert reads as trouble: a fresh user's trial)
    serve = logging.getLogger("firstfault.serve")
    serve.setLevel(min(logging.INFO, root.level))
    # aiokafka logs every reconnect attempt at ERROR: the worker reports broker trouble itself
    logging.getLogger("aiokafka").setLevel(logging.CRITICAL)


class _ClosedOutput(io.TextIOBase):
    """What ``sys.stdout`` is when the process started without one (``firstfault diagnose … >&-``: Python sets it to
    None, and the report's write was an AttributeError traceback): every write raises ``OSError`` (EBADF), which
    the commands report in one line, exit 1, as a full disk."""

    def write(self, s: str) -> int:
        raise OSError(errno.EBADF, "standard output is closed")

    @property
    def buffer(self) -> "_ClosedOutput":  # the binary writes of the JSON and CSV outputs
        return self


_SQL_OPTIONS = {"-f", "--format", "-o", "--output", "--force", "--config", "--help"}


def _comment_first_query(args: list[str]) -> None:
    """Exit 2 with the way out when ``firstfault sql`` is given a query that begins with a ``--`` comment before a
    bare ``--``: click reads it as an option, "No such option: -- top initiating GPUs…", the whole query in its box (a
    fresh user's trial). An option's name holds no blank, so such an argument can only be query text."""
    if not args or args[0] != "sql":
        return
    for i, a in enumerate(args[1:], 1):
        if a == "--":
            # an option after the query (`sql -- "-- q" -f csv`) is the query's extra text after `--`: click said
            # "Got unexpected extra argument(s) (-f csv)" and no more (a fresh user's trial)
            late = [r for r in args[i + 2:] if r.split("=")[0] in _SQL_OPTIONS]
            if late:
                err.print(f"[red]{escape(late[0].split('=')[0])} after `--` is no option:[/] `--` ends the "
                          "options; put them before it (`firstfault sql -f csv -- \"$(cat q.sql)\"`)")
                sys.exit(2)
            return
        if a.startswith("--") and any(c.isspace() for c in a):
            err.print("[red]a query that begins with a -- comment is read as an option:[/] put `--` before it "
                      "(`firstfault sql -- \"$(cat q.sql)\"`) or give it on standard input "
                      "(`firstfault sql - < q.sql`)")
            sys.exit(2)


def _config_before_the_command(args: list[str]) -> None:
    """Exit 2 with the way out when ``--config`` comes before the command's name (``firstfault --config f.toml sql
    …``): click said "No such option: --config" and no more (a fresh user's trial). ``--config`` is each command's
    option, after its name."""
    if not args or not (args[0] == "--config" or args[0].startswith("--config=")):
        return
    value = args[0].partition("=")[2] if "=" in args[0] else (args[1] if len(args) > 1 else "")
    rest = args[1:] if "=" in args[0] else args[2:]
    # the command's name and its subcommand's, as the app knows them: the value of an option between is no command
    # ("--config c.toml report --hour 2026-12-05T19 degraded-links" named "report 2026-12-05T19": a break-it pass)
    group, names = typer.main.get_command(app), []
    for w in rest:
        sub = getattr(group, "commands", {}).get(w)
        if sub is not None:
            names.append(w)
            group = sub
    command = " ".join(names) or "<command>"
    err.print(f"[red]--config is an option of each command, not of firstfault:[/] put it after the command name "
              f"(firstfault {escape(command)} --config {escape(value or 'f.toml')} …)", soft_wrap=True)
    sys.exit(2)


def main() -> None:
    if sys.stdout is None:
        sys.stdout = _ClosedOutput()
    end_quietly_when_a_reader_goes()
    # logging starts before the settings are read; a bad value here is reported by load_settings
    fmt = os.environ.get("FIRSTFAULT_LOG_FORMAT") or "text"
    level = (os.environ.get("FIRSTFAULT_LOG_LEVEL") or "WARNING").upper()
    setup_logging(fmt if fmt in ("text", "json") else "text",
                  level if level in ("DEBUG", "INFO", "WARNING", "ERROR") else "WARNING")
    _comment_first_query(sys.argv[1:])
    _config_before_the_command(sys.argv[1:])
    try:
        app()
    except SystemExit as e:
        # a write to stdout that no handler saw fail (`lake compact`'s print()): click catches
        # its EPIPE, puts PacifyFlushWrapper on stdout and exits 1, a runtime failure's code. A reader gone is 141
        # (api.render.reader_gone) when the descriptor says so too: an EPIPE of a socket stays as it was
        if e.code == 1 and type(sys.stdout).__name__.lstrip("_") == "PacifyFlushWrapper" and stdout_reader_gone():
            sys.exit(EXIT_READER_GONE)
        raise
    except Exception as e:
        # their modules (pyarrow, aiokafka) are imported once one is raised: `firstfault --help` need not load them
        from aiokafka.errors import KafkaConnectionError, UnknownTopicOrPartitionError

        from api.pager import OutboxError, OutboxInUse
        from correlate.rules import RulesError
        from ingest.broker import MissingTopicsError
        from ingest.catalog import CatalogError
        from ingest.lake import LakeError

        if isinstance(e, (CatalogError, RulesError)):  # an edited signature or rules file: data, like a setting
            err.print(f"[red]{'signature catalog' if isinstance(e, CatalogError) else 'correlation rules'} error:[/] "
                      f"{escape(str(e))}")
            sys.exit(2)
        if isinstance(e, MissingTopicsError):  # checked at a worker's start
            err.print(f"[red]{escape(str(e))}[/]: `firstfault kafka topics` creates the configured ones (topics, "
                      "dlq_topic, events_topic)")
        elif isinstance(e, LakeError):  # a lake that cannot be opened at all (an S3 bucket not reachable, a folder
            # not writable)
            err.print(f"[red]{escape(str(e))}[/]; check lake (FIRSTFAULT_LAKE) and, for S3, the AWS_* environment")
        elif isinstance(e, OutboxInUse):  # two workers given one state folder
            err.print(f"[red]{escape(str(e))}[/]")
        elif isinstance(e, OutboxError):  # a full or read-only state folder (a sqlite3 traceback before)
            err.print(f"[red]{escape(str(e))}[/]; check state_dir (FIRSTFAULT_STATE_DIR): free space, permissions")
        elif isinstance(e, KafkaConnectionError):  # at start: no broker there (one that goes away later is waited for)
            err.print(f"[red]cannot reach Kafka:[/] {escape(str(e))}. Is the broker up? Check kafka_bootstrap "
                      "(FIRSTFAULT_KAFKA_BOOTSTRAP); `firstfault kafka status` shows the local one.")
        elif isinstance(e, UnknownTopicOrPartitionError):  # a topic deleted after the worker's start check
            err.print("[red]a configured topic does not exist on the broker[/]: `firstfault kafka topics` creates the "
                      "configured ones (topics, dlq_topic, events_topic)")
        else:
            raise
        sys.exit(1)


if __name__ == "__main__":
    main()
