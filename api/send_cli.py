"""``firstfault send``: log lines from a file or standard input into one raw topic, without kcat.

    firstfault send --topic fleet.dmesg node099.dmesg.log          # key node099, from the file's name
    dmesg -T | firstfault send --topic dmesg --key node099 -         # a topic by its last word
    firstfault send --topic nccl --lines-per-record 200 rank0.log  # as the demo packs its samples

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
import sys
from collections.abc import Iterable
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
    """A send that ended before the broker acknowledged every record: ``acked`` of ``total`` were (the first ones, in
    order: the rest may be on the topic or not), ``cause`` why (the broker's refusal, an interrupt)."""

    def __init__(self, acked: int, total: int, cause: BaseException) -> None:
        super().__init__(f"{acked:,} of {total:,} records acknowledged")
        self.acked, self.total, self.cause = acked, total, cause


#: how long the admin client waits for the broker's first answer (ms): a listener that accepts and never answers
#: held ``send`` 43 s, aiokafka's 40 s default (a break-it pass); the producer's requests keep the default
CONNECT_TIMEOUT_MS = 10_000


async def produce(bootstrap: str, topic: str, key: bytes | None, values: list[bytes]) -> None:
    """Send ``values`` to ``topic`` with ``key`` (None: no key; the broker's partitioner spreads them), in order,
    batched by the producer; return once the broker acknowledged every one (``acks=all``). The producer's own
    request size is the largest value's, so the broker's ``message.max.bytes`` says whether it takes a long line
    (aiokafka's 1 MiB default refused a 10 MB line before any broker saw it, in a traceback: a break-it pass).
    Raises ``ingest.broker.MissingTopicsError`` before sending anything when the topic is not there (the local broker
    creates none on its own), aiokafka's ``KafkaConnectionError`` when no broker answers within
    :data:`CONNECT_TIMEOUT_MS`, and :class:`SendFailed` (how many were acknowledged) when a record is refused or the
    send is interrupted (Ctrl-C: ``cause`` a ``KeyboardInterrupt``, or the task's cancellation)."""
    from aiokafka import AIOKafkaProducer
    from aiokafka.admin import AIOKafkaAdminClient

    from ingest.broker import require_topics

    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=CONNECT_TIMEOUT_MS)
    await admin.start()
    try:
        await require_topics(admin, [topic], bootstrap)
    finally:
        await admin.close()
    largest = max(map(len, values), default=0) + len(key or b"") + 1024  # a record batch's overhead
    p = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5,
                         max_request_size=max(1024 * 1024, largest))
    await p.start()
    futs: list[asyncio.Future] = []
    try:
        for v in values:
            futs.append(await p.send(topic, value=v, key=key))
        for f in futs:
            await f
    except (Exception, asyncio.CancelledError) as e:
        # the leading records acknowledged (a batch is acknowledged whole, in order)
        acked = next((i for i, f in enumerate(futs) if not f.done() or f.cancelled() or f.exception()), len(futs))
        raise SendFailed(acked, len(values), e) from e
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


def send(
    path: Annotated[str, typer.Argument(metavar="FILE", help="a log file of lines or NDJSON records; - for "
                                        "standard input")],
    topic: Annotated[str, typer.Option("--topic", "-t", metavar="<topic>", help="a raw topic (the topics "
                                       "setting): fleet.dmesg, or its last word, dmesg")],
    key: Annotated[Optional[str], typer.Option("--key", "-k", metavar="<host>", help="the records' Kafka key, the "
                                               "host: default the file's name up to its first '.' "
                                               "(node099.dmesg.log: node099); none for -")] = None,
    lines_per_record: Annotated[int, typer.Option("--lines-per-record", min=1, max=100_000, metavar="<n>",
                                                  help="lines per Kafka record (1: as Vector ships them; the "
                                                       "demo packs 200)")] = 1,
    config: Annotated[Optional[Path], typer.Option("--config", help="TOML settings file", exists=True,
                                                   dir_okay=False)] = None,
) -> None:
    """Send log lines to a raw topic of the configured broker, for the ingest workers (no kcat needed)."""
    from api.cli import _bootstrap, _require_stdin, _settings
    from ingest.decode import host_from_filename

    s: Settings = _settings(config)
    try:
        name = pick_topic(topic, s.topics)
    except ValueError as e:
        raise typer.BadParameter(str(e), param_hint="--topic") from None
    if path == "-":
        _require_stdin()
    elif not Path(path).is_file():
        raise typer.BadParameter(f"{path!r} is no file (- reads standard input)", param_hint="FILE")
    host = key if key is not None else (None if path == "-" else host_from_filename(Path(path)))
    bootstrap = _bootstrap(s)
    from ingest.decode import CompressionError

    try:
        f, shown = _lines(path)
        with f:
            text = log_text(f.read())
    except OSError as e:
        err.print(f"[red]cannot read {escape(path)}:[/] {escape(e.strerror or str(e))}")
        raise typer.Exit(2) from None
    except CompressionError as e:
        err.print(f"[red]cannot read {escape(shown)}:[/] {escape(str(e))}; nothing sent")
        raise typer.Exit(2) from None
    except ValueError as e:
        err.print(f"[red]nothing sent: {escape(shown)} is {escape(str(e))}[/]")
        raise typer.Exit(2) from None
    values, n = pack(text.split(b"\n"), lines_per_record)
    if not values:
        err.print(f"nothing sent: {escape(shown)} holds no line", style="yellow")
        return
    try:
        asyncio.run(produce(bootstrap, name, host.encode() if host else None, values))
    except (SendFailed, KeyboardInterrupt) as e:
        # what the broker holds is said: sent again, the acknowledged lines would be events twice
        interrupted = isinstance(e, KeyboardInterrupt) or isinstance(e.cause, asyncio.CancelledError)
        acked = e.acked if isinstance(e, SendFailed) else 0
        why = "interrupted" if interrupted else f"refused: {type(e.cause).__name__}: {e.cause}"  # type: ignore
        err.print(f"[red]send {why}[/]: {acked:,} of {len(values):,} records to {escape(name)} acknowledged (the "
                  "first ones, in order; any later one may be on the topic too)", soft_wrap=True)
        raise typer.Exit(130 if interrupted else 1) from None
    keyed = f"key {host}" if host else "no key: each line's host is what it names"
    err.print(f"sent {n:,} line{'s' * (n != 1)} in {len(values):,} record{'s' * (len(values) != 1)} to {name} on "
              f"{bootstrap} ({keyed})", markup=False, highlight=False, soft_wrap=True)
