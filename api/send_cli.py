"""``firstfault send``: log lines from files or standard input into one raw topic, without kcat.

    firstfault send --topic fleet.dmesg node099.dmesg.log          # key node099, from the file's name
    firstfault send --topic dmesg logs/*.dmesg.log                 # each file keyed by the host its name gives
    dmesg -T | firstfault send --topic dmesg --key node099 -       # a topic by its last word
    firstfault send --topic nccl --lines-per-record 200 rank0.log  # as the demo packs its samples

Several files are sent in one run, in the order given, each under the key its own name gives
(``ingest.decode.host_from_filename``, as ``diagnose`` names hosts) and said on stderr once the broker acknowledged
it; every file is read first, so a missing, unreadable, corrupt or binary one is named and nothing is sent. A file
named twice is sent once. ``--key`` with several files only when their names give one host (a host's rotated logs
under a folder that names none): over several hosts' files it put every host's lines under one.

Each line (plain text or an NDJSON envelope: the decoder tells them apart as it does any record) is one Kafka record
by default, as Vector's and Fluent Bit's Kafka outputs ship one event per record; the producer batches the records
into requests (aiokafka, ``acks=all``) and the command ends once the broker acknowledged every one. Blank lines are
not sent. A file is read as ``diagnose`` reads it: gzip, zstd, bzip2 or xz decompressed, UTF-16 as UTF-8
(:func:`log_text`); binary data is refused. The broker is ``kafka_bootstrap``, else the local one under
``state_dir``; the topic must be one of the configured raw ``topics`` (the ones the ingest workers read).

Exit codes as the main command: 0 every record acknowledged; 1 the broker could not be reached or refused them
(main: "cannot reach Kafka", a missing topic); 2 a usage or configuration error (a topic that is not a raw topic,
an unreadable, corrupt or binary file, no broker configured or running); 130 interrupted (Ctrl-C). When a record
is refused or the send is interrupted, how many records the broker acknowledged is said.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Annotated, BinaryIO, Optional

import typer
from rich.markup import escape

from api.render import cli_console
from schemas.settings import Settings

err = cli_console("stderr")

#: the largest value ``send`` builds (bytes): the local broker's ``message.max.bytes`` is 128 MiB, a stock broker's
#: 1 MiB; a value packed past this is cut into the next record at a line's end
MAX_VALUE_BYTES = 900 * 1024


def pick_topic(given: str, topics: list[str]) -> str:
    """The raw topic ``given`` names: one of ``topics`` (the ``topics`` setting) by its whole name, or by its last
    ``.``-separated word (``dmesg`` -> ``fleet.dmesg``) when exactly one has it. Raises ``ValueError`` naming the
    configured topics otherwise: a record on another topic is read by no ingest worker (a mistyped
    ``fleet.dmseg``), and the dead-letter and events topics are the service's own."""
    if given in topics:
        return given
    by_word = [t for t in topics if t.rsplit(".", 1)[-1] == given]
    if len(by_word) == 1:
        return by_word[0]
    raise ValueError(f"{given!r} is not one of the raw topics the ingest workers read: {', '.join(topics)} "
                     "(the topics setting; a topic's last word, such as dmesg, names it too)")


def pack(lines: Iterable[bytes], lines_per_record: int = 1, max_bytes: int = MAX_VALUE_BYTES) -> tuple[list[bytes],
                                                                                                     int]:
    """Record values of ``lines`` (each without its line end), ``lines_per_record`` lines to a value joined by
    ``\\n``, a value closed early once it holds ``max_bytes`` or more; blank lines (whitespace only) dropped. Returns
    (values, number of lines in them). A line longer than ``max_bytes`` is a value of its own, whole: the broker
    says whether it takes it."""
    values: list[bytes] = []
    cur: list[bytes] = []
    size = n = 0
    for line in lines:
        line = line.rstrip(b"\r\n")
        if not line.strip():
            continue
        if cur and (len(cur) >= lines_per_record or size + 1 + len(line) > max_bytes):
            values.append(b"\n".join(cur))
            cur, size = [], 0
        cur.append(line)
        size += len(line) + (1 if len(cur) > 1 else 0)
        n += 1
    if cur:
        values.append(b"\n".join(cur))
    return values, n


class SendFailed(Exception):
    """A send that ended before the broker acknowledged every record: of the ``index``-th file (0-based; the ones
    before it all acknowledged, the ones after it not sent), ``acked`` of ``total`` were (the first ones, in order:
    the rest may be on the topic or not), ``cause`` why (the broker's refusal, an interrupt)."""

    def __init__(self, acked: int, total: int, cause: BaseException, index: int = 0) -> None:
        super().__init__(f"{acked:,} of {total:,} records acknowledged")
        self.acked, self.total, self.cause, self.index = acked, total, cause, index


#: how long the admin client waits for the broker's first answer (ms): a listener that accepts and never answers
#: held ``send`` 43 s, aiokafka's 40 s default (a break-it pass); the producer's requests keep the default
CONNECT_TIMEOUT_MS = 10_000


async def produce(bootstrap: str, topic: str, batches: Iterable[tuple[bytes | None, list[bytes]]], largest: int,
                  done: Callable[[int], None] = lambda i: None) -> None:
    """Send each of ``batches`` (a file's key — None: no key, the broker's partitioner spreads its values — and its
    record values) to ``topic``, in order, batched by the producer; ``done(i)`` once the broker acknowledged every
    record of the ``i``-th (``acks=all``), before the next is sent. ``largest`` is the longest value (bytes): the
    producer's own request size is the largest value's, so the broker's ``message.max.bytes`` says whether it takes
    a long line (aiokafka's 1 MiB default refused a 10 MB line before any broker saw it, in a traceback: a break-it
    pass). ``batches`` may be a generator (a file read when its turn comes): an exception it raises ends the send.
    Raises ``ingest.broker.MissingTopicsError`` before sending anything when the topic is not there (the local broker
    creates none on its own), aiokafka's ``KafkaConnectionError`` when no broker answers within
    :data:`CONNECT_TIMEOUT_MS`, and :class:`SendFailed` (which file, how many of its records were acknowledged) when
    a record is refused or the send is interrupted (Ctrl-C: ``cause`` a ``KeyboardInterrupt``, or the task's
    cancellation)."""
    from aiokafka import AIOKafkaProducer
    from aiokafka.admin import AIOKafkaAdminClient

    from ingest.broker import require_topics

    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=CONNECT_TIMEOUT_MS)
    await admin.start()
    try:
        await require_topics(admin, [topic], bootstrap)
    finally:
        await admin.close()
    p = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5,
                         max_request_size=max(1024 * 1024, largest + 1024))  # a record batch's overhead
    await p.start()
    try:
        for i, (key, values) in enumerate(batches):
            futs: list[asyncio.Future] = []
            try:
                for v in values:
                    futs.append(await p.send(topic, value=v, key=key))
                for f in futs:
                    await f
            except (Exception, asyncio.CancelledError) as e:
                # the leading records acknowledged (a batch is acknowledged whole, in order)
                acked = next((j for j, f in enumerate(futs) if not f.done() or f.cancelled() or f.exception()),
                             len(futs))
                raise SendFailed(acked, len(values), e, i) from e
            done(i)
    finally:
        await p.stop()


def _lines(path: str) -> tuple[BinaryIO, str]:
    if path == "-":
        return sys.stdin.buffer, "standard input"
    return open(path, "rb"), path  # noqa: SIM115 — closed by the caller


def log_text(raw: bytes) -> bytes:
    """The log text of a file's (or standard input's) bytes ``raw`` as ``diagnose`` reads them, nothing salvaged:
    ``ingest.decode.file_text`` (its normalisation, its errors: ``CompressionError``, ``ValueError``). Split at its
    bytes ``\\n`` as it was, a gzip file went out as records of compressed fragments, dead letters all, and UTF-16
    lines as halves of code units (a break-it pass); a corrupt file or binary data is refused, not sent in part."""
    from ingest.decode import file_text

    return file_text(raw, salvage=False).data


class Unreadable(Exception):
    """A file (or standard input) ``send`` cannot send: ``str()`` says which and why, as printed."""


def read_values(path: str, lines_per_record: int) -> tuple[list[bytes], int]:
    """The record values of file ``path`` (``-``: standard input) and how many lines they hold (:func:`pack` of
    :func:`log_text`). Raises :class:`Unreadable` naming the file and why: the system's words (a missing file, no
    permission), a corrupt compressed file, binary data."""
    from ingest.decode import CompressionError

    shown = "standard input" if path == "-" else path
    try:
        f, shown = _lines(path)
        with f:
            text = log_text(f.read())
    except OSError as e:
        raise Unreadable(f"cannot read {shown}: {e.strerror or e}") from None
    except CompressionError as e:
        raise Unreadable(f"cannot read {shown}: {e}") from None
    except ValueError as e:
        raise Unreadable(f"{shown} is {e}") from None
    return pack(text.split(b"\n"), lines_per_record)


#: the most bytes of record values ``send`` keeps between its check of every file and their send; the files past it
#: are read again at their turn (decompressed again): a folder of a fleet's logs is not held in memory at once
KEEP_READ_BYTES = 256 * 1024 * 1024


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}{'s' * (n != 1)}"


def send(
    paths: Annotated[list[str], typer.Argument(metavar="FILE", help="log files of lines or NDJSON records, each "
                                               "keyed by the host its name gives; - for standard input")],
    topic: Annotated[str, typer.Option("--topic", "-t", metavar="<topic>", help="a raw topic (the topics "
                                       "setting): fleet.dmesg, or its last word, dmesg")],
    key: Annotated[Optional[str], typer.Option("--key", "-k", metavar="<host>", help="the records' Kafka key, the "
                                               "host: default each file's name up to its first '.' "
                                               "(node099.dmesg.log: node099); none for -. With several files only "
                                               "when their names give one host (a host's rotated logs)")] = None,
    lines_per_record: Annotated[int, typer.Option("--lines-per-record", min=1, max=100_000, metavar="<n>",
                                                  help="lines per Kafka record (1: as Vector ships them; the "
                                                       "demo packs 200)")] = 1,
    config: Annotated[Optional[Path], typer.Option("--config", help="TOML settings file", exists=True,
                                                   dir_okay=False)] = None,
) -> None:
    """Send log lines to a raw topic of the configured broker, for the ingest workers (no kcat needed): several
    files in one run (logs/*.dmesg.log), each keyed by the host its name gives, as diagnose names hosts. Every file
    is read first: one missing, unreadable, corrupt or binary is named and nothing is sent (exit 2)."""
    from api.cli import _bootstrap, _require_stdin, _settings
    from ingest.decode import host_from_filename

    s: Settings = _settings(config)
    try:
        name = pick_topic(topic, s.topics)
    except ValueError as e:
        raise typer.BadParameter(str(e), param_hint="--topic") from None
    args = list(paths)
    if "" in args:  # `send "$LOG"` with LOG unset
        raise typer.BadParameter("an empty path names no file (- reads standard input)", param_hint="FILE")
    if args.count("-") > 1:
        raise typer.BadParameter("- (standard input) can be read once", param_hint="FILE")
    not_files = [a for a in args if a != "-" and not Path(a).is_file()]
    if not_files:
        # every one named before anything is sent: a loop of sends stopped at its first, the files before it sent
        for a in not_files:
            why = "no such file" if not os.path.lexists(a) else "not a regular file (- reads standard input)"
            why = "a folder: name its files (folder/*.log)" if Path(a).is_dir() else why
            err.print(f"[red]cannot send {escape(a)}:[/] {why}", soft_wrap=True)
        err.print(f"[red]nothing sent[/] ({_plural(len(not_files), 'file')} of {len(args):,} not sendable)")
        raise typer.Exit(2)
    files: list[str] = []
    seen: dict[tuple[int, int], str] = {}
    for a in args:  # a file named twice (logs/*.log logs/node07.log, or by a link) is sent once: its lines once
        if a != "-":
            st = os.stat(a)
            if (st.st_dev, st.st_ino) in seen:
                err.print(f"{a} is {seen[(st.st_dev, st.st_ino)]}, named already: sent once", style="yellow",
                          markup=False, highlight=False, soft_wrap=True)
                continue
            seen[(st.st_dev, st.st_ino)] = a
        files.append(a)
    hosts = {a: None if a == "-" else host_from_filename(Path(a)) for a in files}
    if key is not None and len(files) > 1 and ("-" in files or len(set(hosts.values())) > 1):
        # one key over files of several hosts put every host's lines, hostless ones too, under one host
        given = ", ".join(f"{a}: {h or 'none'}" for a, h in hosts.items())
        raise typer.BadParameter(f"one key for files of different hosts ({given}); without --key each file is keyed "
                                 "by the host its name gives", param_hint="--key")
    if key is not None:
        hosts = dict.fromkeys(files, key)
    if "-" in files:
        _require_stdin()
    bootstrap = _bootstrap(s)
    # every file read and decoded before anything is sent: a corrupt or binary one is refused with nothing sent
    kept: dict[str, tuple[list[bytes], int]] = {}
    counts: dict[str, tuple[int, int]] = {}  # file -> (lines, records)
    size = largest = 0
    for a in files:
        try:
            values, n = read_values(a, lines_per_record)
        except Unreadable as e:
            err.print(f"[red]nothing sent: {escape(str(e))}[/]", soft_wrap=True)
            raise typer.Exit(2) from None
        counts[a] = (n, len(values))
        largest = max([largest, *map(len, values)])
        size += sum(map(len, values))
        if a == "-" or size <= KEEP_READ_BYTES:
            kept[a] = (values, n)
    for a in files:
        if not counts[a][1]:
            shown = a if a != "-" else "standard input"
            err.print(f"nothing sent: {shown} holds no line" if len(files) == 1 else f"{shown} holds no line: not sent",
                      style="yellow", markup=False, highlight=False, soft_wrap=True)
    todo = [a for a in files if counts[a][1]]
    if not todo:
        return
    largest += max(len((h or "").encode()) for h in hosts.values())

    def batches() -> Iterator[tuple[bytes | None, list[bytes]]]:
        for a in todo:
            values = kept.pop(a, None)
            if values is None:
                values = read_values(a, lines_per_record)  # read again at its turn (KEEP_READ_BYTES)
            h = hosts[a]
            yield (h.encode() if h else None), values[0]

    acknowledged: list[str] = []

    def done(i: int) -> None:
        a = todo[i]
        acknowledged.append(a)
        n, records = counts[a]
        keyed = f"key {hosts[a]}" if hosts[a] else "no key: each line's host is what it names"
        err.print(f"sent {_plural(n, 'line')} in {_plural(records, 'record')}"
                  f"{'' if len(todo) == 1 else ' of ' + (a if a != '-' else 'standard input')} to {name} on "
                  f"{bootstrap} ({keyed})", markup=False, highlight=False, soft_wrap=True)

    try:
        asyncio.run(produce(bootstrap, name, batches(), largest, done))
    except Unreadable as e:  # changed since the check: the files before it are on the topic
        err.print(f"[red]{escape(str(e))}[/]; the files before it were sent", soft_wrap=True)
        raise typer.Exit(2) from None
    except (SendFailed, KeyboardInterrupt) as e:
        # what the broker holds is said: sent again, the acknowledged lines would be events twice
        interrupted = isinstance(e, KeyboardInterrupt) or isinstance(e.cause, asyncio.CancelledError)
        i = e.index if isinstance(e, SendFailed) else min(len(acknowledged), len(todo) - 1)
        acked = e.acked if isinstance(e, SendFailed) else 0
        why = "interrupted" if interrupted else f"refused: {type(e.cause).__name__}: {e.cause}"  # type: ignore
        of = "" if len(todo) == 1 else f" of {escape(todo[i])} (the files before it acknowledged, none after it sent)"
        err.print(f"[red]send {why}[/]: {acked:,} of {counts[todo[i]][1]:,} records{of} to {escape(name)} "
                  "acknowledged (the first ones, in order; any later one may be on the topic too)", soft_wrap=True)
        raise typer.Exit(130 if interrupted else 1) from None
    if len(todo) > 1:
        err.print(f"sent {_plural(len(todo), 'file')}: {_plural(sum(counts[a][0] for a in todo), 'line')} in "
                  f"{_plural(sum(counts[a][1] for a in todo), 'record')} to {name}", markup=False, highlight=False,
                  soft_wrap=True)
