"""The Kafka edge of ingest: consume, run the pipeline, store durably, then commit.

One process is one consumer-group member (``settings.group_id``) over the raw
topics. Per batch of records:

1. take **chunks**: per partition, the records of one aligned offset range
   ``[k·C, (k+1)·C)`` (``C = max_records // 8``), whole — or cut short where
   its decoded text and rejected parts pass ``MAX_CHUNK_BYTES``, or where the partition's
   available records end (the live edge); a batch is whole chunks of several
   partitions, up to ``max_records`` records and ``MAX_BATCH_BYTES`` of text;
2. **begin**: commit, per partition, the batch's first offset again with the
   batch's last offset in the commit metadata (``ff1:<last>:<batch id>``);
3. run the pure pipeline. If it raises (a bug, or input nobody foresaw), the
   batch is run again record by record to find the records that raise; those go
   to the dead-letter topic with ``error_code`` ``decode_error`` or
   ``pipeline_error`` and the others are processed together, as usual;
4. send unreadable input to the dead-letter topic — one record per Kafka value,
   with the value's own key and headers, listing its bad parts (headers ``ff-reason``,
   ``ff-error-code``, ``ff-origin``, ``ff-parts``, ``ff-count``) — and wait for the
   broker's acknowledgement;
5. write events, link samples and topology facts to the lake (atomic parts);
6. publish the events to ``fleet.events`` and hand the batch to ``on_batch``;
7. only then commit the offsets (past the batch, metadata cleared).

Why chunks and step 2: what records yield depends on which records are
processed together (a storm of one repeated line collapses into one event per
batch; an unstamped line takes the time of a stamped line before it in the
batch; the SXid lines of one switch error merge). With aligned chunks, a
backlog is cut at the same offsets whatever the fetch timing, so two runs over
the same log — or a run interrupted by crashes — store the same events. A
chunk cut short at the live edge is the one exception, and step 2 covers it:
a worker killed between 4 and 7 leaves parts in the lake (and events in
``fleet.events``) that the replay must rewrite identically, so whoever replays
the partition — this worker after a restart, or another after a rebalance —
reads the metadata and rebuilds exactly that batch first: same records, same
events, same ids, same part files.

If a step from 2 to 7 fails (read-only or full lake, broker unreachable) the
offsets are not committed: the worker reports itself unhealthy (``health``,
``firstfault_ingest_healthy``) and retries the same batch from memory with
backoff, polling the consumer meanwhile so it stays in its group, until the
fault clears; then it reports itself healthy again. Decompression or JSON
errors are deterministic, so they go to the DLQ rather than being retried.
"""

from __future__ import annotations

import asyncio
import bisect
import collections
import contextlib
import hashlib
import itertools
import logging
import operator
import time
from collections.abc import Awaitable, Callable, Container
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import pyarrow as pa
import pyarrow.compute as pc
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, ConsumerRebalanceListener, ConsumerRecord, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.errors import (CommitFailedError, IllegalStateError, KafkaError, KafkaTimeoutError,
                             OutOfOrderSequenceNumber, UnknownProducerId)

from ingest import metrics
from ingest.broker import require_topics
from ingest.counters import COUNTER_FORGET_EVERY_S, forget_quiet_hosts, with_counter_events
from ingest.decode import Decoded, Reject, decode_message, decode_partition, decode_partition_until
from ingest.gcpause import gc_paused, gc_resumed
from ingest.lake import Lake, LakeError
from ingest.pipeline import Batch, Pipeline
from ingest.publish import (CONTENT_TYPE, FACT_TABLES, Domains, encode_records, fact_headers, split_by_domain,
                            split_facts_by_domain)

log = logging.getLogger("firstfault.ingest")


#: how long (s) a Kafka client's stop may take: an idempotent producer's stop waits for every record it holds to be
#: acknowledged, and with the broker gone it never is (aiokafka never expires an idempotent producer's batches): the
#: first SIGTERM of a worker whose broker died while it stored a batch left it running for good (a break-it pass)
STOP_CLIENT_S = 10.0


async def stop_client(stop: Callable[[], Awaitable[Any]], timeout_s: float = STOP_CLIENT_S) -> None:
    """Await an aiokafka client's ``stop``/``close``; a Kafka error stopping it is no error of the run. Nor is the
    ``CancelledError`` aiokafka's consumer re-raises from the fetch it cancels while that fetch sleeps its retry
    backoff (a correlator step that held the loop past the request timeout): ``run --once`` printed every incident,
    then exited 1 with its traceback and left the producer unclosed (a break-it pass). A cancellation of the task
    itself (``Task.cancelling``) goes on. A stop that takes longer than ``timeout_s`` is left (:data:`STOP_CLIENT_S`):
    what the client still held was not acknowledged, so no offset past it was committed; it is read again."""
    try:
        await asyncio.wait_for(stop(), timeout_s)
    except asyncio.TimeoutError:
        log.warning("a Kafka client did not stop within %g s (its broker does not answer): left; what it held was "
                    "not acknowledged and is read again next time", timeout_s)
    except KafkaError as e:
        log.debug("stopping a Kafka client: %s", e)
    except asyncio.CancelledError:
        task = asyncio.current_task()
        if task is not None and task.cancelling():
            raise
        log.debug("stopping a Kafka client: a fetch it cancelled re-raised its CancelledError")


def new_producer(bootstrap: str) -> AIOKafkaProducer:
    """A worker's idempotent producer, not started: every in-sync replica acknowledges a record (``acks=all``), and
    records of up to 16 MiB (a dead letter's value is cut at ``DLQ_VALUE_BYTES``, its kept key and headers at
    ``DLQ_KEPT_BYTES``). The ingest worker's (dead letters, ``fleet.events``) and the correlate worker's (dead
    letters)."""
    return AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", enable_idempotence=True,
                            max_request_size=16 * 1024 * 1024)


async def renewed_producer(bootstrap: str, old: AIOKafkaProducer | None) -> AIOKafkaProducer:
    """A started :func:`new_producer` in place of ``old``, which is then stopped (``stop_client``): a producer whose
    idempotence state the broker no longer has (after a broker restart it answered every send with
    OutOfOrderSequenceNumber, and the ingest worker retried the batch for ever: a CI run). A record sent again so may
    be stored twice: the events topic's readers drop an event id they hold, and a dead letter twice is no loss.
    Raises KafkaError while the broker cannot start the new one (it is stopped; ``old`` is left as it is)."""
    fresh = new_producer(bootstrap)
    try:
        await fresh.start()
    except BaseException:
        await stop_client(fresh.stop)
        raise
    if old is not None:
        await stop_client(old.stop)
    return fresh


#: decoded text per chunk at most (the chunk is cut after the record that passes it; one record always fits)
MAX_CHUNK_BYTES = 128 * 1024 * 1024
#: decoded text per batch: no further chunk is added once a batch holds this much
MAX_BATCH_BYTES = 256 * 1024 * 1024
#: chunks per batch when every partition is backlogged (chunk size = max_records // CHUNKS_PER_BATCH)
CHUNKS_PER_BATCH = 8
#: how long a batch begun before may take to be read whole again
REPLAY_WAIT_S = 30.0
#: a dead-letter record's value and header sizes at most (the value keeps the bad parts, cut to this)
DLQ_VALUE_BYTES = 8 * 1024 * 1024
DLQ_HEADER_BYTES = 1000
#: the original key and headers a dead letter keeps, at most (bytes each): a 17 MiB key made the dead letter larger
#: than the producer sends, and the worker retried it for ever (a break-it pass)
DLQ_KEPT_BYTES = 1024 * 1024
#: commit metadata of a batch begun and not yet committed: "ff1:<last offset>:<batch id>"
INTENT = "ff1"
#: a broker acknowledgement (commit, send) slower than this marks the worker unhealthy while it waits
ACK_PATIENCE_S = 10.0
#: an idle worker asks the broker for its partitions' ends this often (s): a fetch that returns nothing says nothing
#: of a broker that is gone, and ``/healthz`` said ok a minute after the broker stopped (a fresh user's trial)
BROKER_CHECK_S = 15.0
#: how long (ms) a fetch waits for records when none is buffered, whatever ``linger_ms`` says: ``getmany`` returns
#: as soon as records come, so this costs no latency; with ``batch_linger_ms = 0`` an idle worker called
#: ``getmany(timeout_ms=0)`` without a pause, 100 % of a core, and ``run``'s API answered /healthz in seconds (a
#: break-it pass)
IDLE_FETCH_MS = 500
#: how old (ms) a consumer's topic metadata may grow before it is asked again: partitions added to a topic
#: (``firstfault kafka topics --partitions N``) are read within it. aiokafka's default, 300 s, left them unread for
#: minutes while /healthz said ok with lag 0 (a break-it pass)
METADATA_MAX_AGE_MS = 30_000


def error_named(e: BaseException) -> str:
    """``"KafkaTimeoutError: <its message>"``, or the type alone for an exception with no message (asyncio's
    ``TimeoutError``): how a worker names a broker error in its log and its /healthz reason."""
    return f"{type(e).__name__}: {e}" if str(e) else type(e).__name__


def broker_silent(e: BaseException, patience_s: float) -> str:
    """A worker's /healthz reason while the broker does not answer within ``patience_s`` (s), ``e`` what the ask
    raised: ``"kafka: the broker did not answer within 10 s (KafkaConnectionError: …)"``."""
    return f"kafka: the broker did not answer within {patience_s:g} s ({error_named(e)})"


@dataclass
class Health:
    """What ``/healthz`` and the metrics report about this worker."""

    ok: bool = True
    reason: str = ""
    batches: int = 0
    records: int = 0
    lines: int = 0
    events: int = 0
    rejects: int = 0  # dead-letter records sent (one per Kafka value with unreadable parts)
    fallbacks: int = 0  # batches the pipeline raised on, processed record by record
    replays: int = 0  # batches rebuilt from their commit metadata after a restart or a rebalance
    last_batch_s: float = 0.0
    since: float = field(default_factory=time.time)
    lag: dict[str, int] = field(default_factory=dict)

    def fail(self, reason: str) -> None:
        """Unhealthy for ``reason`` (``"kafka: …"`` when the broker is the cause, ``"lake: …"`` when storing is),
        logged once per reason with ``stage``/``error_code`` ``kafka``/``broker_unavailable`` or
        ``store``/``store_failed``: a broker outage was logged as a storage failure, and an alert routed on
        ``store_failed`` read it as the lake's (a break-it pass)."""
        if self.ok or self.reason != reason:
            broker = reason.startswith("kafka:")
            log.error("ingest unhealthy: %s", reason, extra={"stage": "kafka" if broker else "store",
                                                              "error_code": "broker_unavailable" if broker
                                                              else "store_failed"})
        self.ok, self.reason = False, reason
        metrics.HEALTHY.set(0)
        metrics.STORE_FAILURES.inc()

    def recover(self) -> None:
        if not self.ok:
            log.warning("ingest healthy again (was: %s)", self.reason)
        self.ok, self.reason = True, ""
        metrics.HEALTHY.set(1)


def batch_id(records: list[ConsumerRecord]) -> str:
    """Deterministic id of a batch from its source coordinates (a replay rewrites the same parts)."""
    return _batch_id(_spans(records))


class Taken(NamedTuple):
    """One batch as :meth:`IngestWorker._take` removes it from the buffer: ``records`` (runs of one partition
    each, in offset order), their ``decoded`` input, ``spans`` the (first, last) offset and ``counts`` the
    number of records per partition."""

    records: list[ConsumerRecord]
    decoded: Decoded
    spans: dict[TopicPartition, tuple[int, int]]
    counts: dict[TopicPartition, int]


def _batch_id(spans: dict[TopicPartition, tuple[int, int]]) -> str:
    key = ";".join(f"{t}/{p}/{a}-{b}" for (t, p), (a, b) in sorted(spans.items()))
    return hashlib.blake2b(key.encode(), digest_size=10).hexdigest()


@gc_paused()  # many small objects (segments of multi-line and NDJSON records), no cycles: ingest.gcpause
def decode_records(records: list[ConsumerRecord]) -> Decoded:
    """Decode Kafka records into one batch of segments and rejects (``ingest.decode.decode_message``).

    One call per chunk, and one :func:`ingest.decode.decode_partition` per run of one partition's records."""
    out = Decoded()
    for (topic, partition), run in itertools.groupby(records, _TOPIC_PARTITION):
        d = decode_partition(topic, partition, run)
        out.add(d)
    return out


@gc_paused()
def decode_chunk(records: list[ConsumerRecord], max_bytes: int) -> tuple[Decoded, int, int]:
    """Decode one partition's records in offset order until their text and rejected parts pass ``max_bytes``
    (that record included): (decoded, records read, those bytes) — ``ingest.decode.decode_partition_until``."""
    if not records:
        return Decoded(), 0, 0
    return decode_partition_until(records[0].topic, records[0].partition, records, max_bytes)


def _decode_chunk(records: list[ConsumerRecord]) -> tuple[Decoded, int, int]:
    """:func:`decode_chunk` up to ``MAX_CHUNK_BYTES``; if that raises (it should not: an open defect, or input
    nobody foresaw), record by record, and a record that raises becomes a reject with ``error_code``
    ``decode_error`` instead of stopping the worker."""
    try:
        return decode_chunk(records, MAX_CHUNK_BYTES)  # looked up in this module (benchmarks.worker times it)
    except Exception:  # noqa: BLE001
        pass
    out = Decoded()
    size = 0
    for i, r in enumerate(records):
        d = _decode_one(r)
        out.add(d)
        size += d.held_bytes()
        if size > MAX_CHUNK_BYTES:
            return out, i + 1, size
    return out, len(records), size


def _decode_one(r: ConsumerRecord) -> Decoded:
    """One record decoded, or a ``decode_error`` reject if decoding raises (see :func:`_decode_chunk`)."""
    try:
        return decode_records([r])
    except Exception as e:  # noqa: BLE001
        origin = f"kafka:{r.topic}/{r.partition}/{r.offset}"
        log.error("record %s isolated: decode raised %s: %s", origin, type(e).__name__, e,
                  extra={"stage": "decode", "error_code": "decode_error"})
        return Decoded(rejects=[Reject(origin, f"decode failed: {type(e).__name__}: {e}", r.value or b"",
                                       "decode_error")])


def kafka_origin(origin: str) -> str:
    """``kafka:t/0/17#r3`` -> ``kafka:t/0/17``: the Kafka value a reject came from."""
    return origin.split("#", 1)[0]


def dead_letters(rejects: list[Reject],
                 originals: dict[str, tuple[bytes | None, list[tuple[str, bytes]]]] | None = None,
                 nulls: Container[str] = ()) -> list[tuple[bytes | None, bytes | None, list[tuple[str, bytes]]]]:
    """(key, value, headers) of the dead-letter records for ``rejects``: **one per Kafka value**.

    A value with 10,000 broken NDJSON records is one dead-letter record, not 10,000: its value is the
    bad parts joined by newlines (cut at ``DLQ_VALUE_BYTES``: then ``ff-value-bytes`` gives its size and
    ``ff-value-cut`` says so), ``ff-parts`` lists them
    (``r2:bad_envelope,r5:bad_envelope``), ``ff-reason`` says why (the first reasons, cut at
    ``DLQ_HEADER_BYTES``), ``ff-error-code`` is the first part's code, ``ff-origin`` the value's
    coordinates (``kafka:<topic>/<partition>/<offset>``), ``ff-count`` the number of bad parts.

    ``originals`` maps a value's coordinates to its record's (key, headers). As in Kafka Connect's dead-letter
    queue (``errors.deadletterqueue.*``), the dead-letter record keeps the original key and headers, the
    ``ff-*`` headers after them: a value whose host came from its key or a ``host`` header still has it when
    the record is sent again, and lands on the partition its key chose. A value not in ``originals`` gets
    its coordinates as the key. A key of more than ``DLQ_KEPT_BYTES`` is cut to them (``ff-key-cut`` says so), and
    headers of more are dropped (``ff-headers-dropped``): the dead letter must fit the producer's record size.

    A tombstone's dead letter is a tombstone (value None): a reject with ``error_code`` ``empty`` alone in its
    value, or one whose coordinates ``nulls`` holds (a null value another reader refused: ``correlate.consumer``).
    """
    groups: dict[str, list[Reject]] = {}
    for rj in rejects:
        groups.setdefault(kafka_origin(rj.origin), []).append(rj)
    out = []
    for origin, parts in groups.items():
        value = b"\n".join(p.data for p in parts) if len(parts) > 1 else parts[0].data
        names = ",".join(f"{p.origin[len(origin) + 1:] or 'value'}:{p.error_code}" for p in parts)
        if len(parts) == 1:
            reason = parts[0].reason
        else:
            reason = f"{len(parts)} parts unreadable: " + "; ".join(p.reason for p in parts[:5])
        key, kept = originals[origin] if originals and origin in originals else (origin.encode(), [])
        if key is not None and len(key) > DLQ_KEPT_BYTES:  # said: its coordinates name the record that has it whole
            kept = [*kept, ("ff-key-cut", f"first {DLQ_KEPT_BYTES} of {len(key)} key bytes".encode())]
            key = key[:DLQ_KEPT_BYTES]
        if sum(len(k) + len(v or b"") for k, v in kept) > DLQ_KEPT_BYTES:
            kept = [("ff-headers-dropped", f"{len(kept)} headers of more than {DLQ_KEPT_BYTES} bytes".encode())]
        headers = [*kept,
                   ("ff-reason", _cut(reason.encode("utf-8", "replace"))),
                   ("ff-error-code", parts[0].error_code.encode()),
                   ("ff-origin", origin.encode()),
                   ("ff-parts", _cut(names.encode())),
                   ("ff-count", str(len(parts)).encode())]
        if len(value) > DLQ_VALUE_BYTES:  # said, not cut silently: a 77 MB value's 700,000 lines were a 4 KiB stub
            # with nothing saying so (a break-it pass); the whole record stays at ff-origin until its retention ends
            headers += [("ff-value-bytes", str(len(value)).encode()),
                        ("ff-value-cut", f"first {DLQ_VALUE_BYTES} bytes; the whole value is at ff-origin".encode())]
        # a tombstone's dead letter is a tombstone: sent again, it reads as it first did (b"" is an empty line)
        tombstone = len(parts) == 1 and (parts[0].error_code == "empty" or origin in nulls)
        if tombstone and key is None:  # Kafka takes no record without a key and a value: its coordinates key it
            key = origin.encode()  # (aiokafka's assertion killed the correlate worker's sending task: a break-it pass)
        out.append((key, None if tombstone else value[:DLQ_VALUE_BYTES], headers))
    return out


def originals_of(records: list[ConsumerRecord], rejects: list[Reject]) -> dict[str, tuple[bytes | None, list]]:
    """``dead_letters``' originals: coordinates (``kafka:<topic>/<partition>/<offset>``) -> (key, headers) of the
    ``records`` that ``rejects`` came from (one pass over the records, only when there are rejects)."""
    wanted = {kafka_origin(rj.origin) for rj in rejects}
    out: dict[str, tuple[bytes | None, list]] = {}
    if not wanted:
        return out
    for r in records:
        origin = f"kafka:{r.topic}/{r.partition}/{r.offset}"
        if origin in wanted:
            out[origin] = (r.key, list(r.headers or ()))
    return out


#: the ``ff-error-code`` (and the log's ``error_code``) of a record the Kafka client cannot read (``fetch_readable``)
UNREADABLE = "unreadable_record"


class Readable(NamedTuple):
    """What :func:`fetch_readable` read of one partition: ``records`` in offset order; ``unreadable``, the offset of
    the record the client raised on (the consumer's position is left on it), None when it raised on none;
    ``error``, what it raised then."""

    records: list[ConsumerRecord]
    unreadable: int | None = None
    error: UnicodeDecodeError | None = None


def unreadable_reason(error: UnicodeDecodeError) -> str:
    """The dead letter's ``ff-reason`` of a record :func:`fetch_readable` names."""
    return (f"the Kafka client cannot read the record ({type(error).__name__}: {error}): a record header's key that "
            "is not UTF-8, as Kafka's protocol requires")


async def fetch_readable(consumer: AIOKafkaConsumer, tp: TopicPartition, *, max_records: int,
                         timeout_ms: int) -> Readable:
    """Fetch up to ``max_records`` records of ``tp`` alone, and name the record aiokafka cannot read, if any.

    Kafka's protocol makes a record header's key a UTF-8 string, aiokafka decodes it so, and the broker does not
    check it: a producer (kcat ``-H``, any librdkafka client) can send a key of other bytes, and ``getmany`` raises
    ``UnicodeDecodeError`` on every fetch that reaches it, the records before it in the fetch dropped (a break-it
    pass). One ``getmany`` of ``tp`` (waiting at most ``timeout_ms``); when it raises, ``tp`` is sought back to
    where it began and fetched again one record at a time, up to the record it raises on: its offset is the
    position the fetch raised at (in a compacted topic, a gap, it can be one before the record's; the next try
    names the next one). The consumer is left on it: the caller dead-letters it and seeks past it (``seek(tp,
    unreadable + 1)``). Returns what was read before it (:class:`Readable`); no records and no offset when ``tp``
    is no longer assigned (a rebalance during an await: aiokafka raises ``IllegalStateError``) or a fetch brought
    nothing within ``timeout_ms``. Used by the ingest and the correlate workers (``IngestWorker._past_unreadable``,
    ``correlate.consumer.CorrelateWorker._past_unreadable``)."""
    out: list[ConsumerRecord] = []
    one = False  # after a fetch raised: one record at a time, to name the one it raises on
    while len(out) < max_records:
        try:
            pos = await consumer.position(tp)
        except IllegalStateError:  # revoked meanwhile: its new owner reads it
            break
        try:
            got = await consumer.getmany(tp, timeout_ms=timeout_ms, max_records=1 if one else max_records - len(out))
        except UnicodeDecodeError as e:
            try:
                consumer.seek(tp, pos)  # what it had drained of the partition is fetched again
            except IllegalStateError:
                break
            if one:
                return Readable(out, pos, e)
            one = True
            continue
        rs = got.get(tp, [])
        out.extend(rs)
        if not rs or not one:  # the partition's end (or a fetch slower than the wait), or a fetch that did not raise
            break
    return Readable(out)


def _span_text(spans: dict[TopicPartition, tuple[int, int]]) -> str:
    """``"fleet.dmesg/0 offsets 16-23, fleet.nccl/2 offsets 8-15"``: a batch's records, for a message."""
    return ", ".join(f"{tp.topic}/{tp.partition} offsets {a}-{b}" for tp, (a, b) in sorted(spans.items()))


def _stopped_left(e: _Stopped, spans: dict[TopicPartition, tuple[int, int]]) -> NotStored:
    """What a one-shot run stopped mid-batch left: "stopped (SIGTERM or Ctrl-C) before this worker could store the
    batch: the lake … refused it (…); not stored: fleet.dmesg/0 offsets 16-23; …". A batch stopped at its last
    commit is in the lake already: "not committed" (its label too), and read again without duplicates."""
    left = "not committed" if e.what == "commit the batch" else "not stored"
    return NotStored(f"stopped (SIGTERM or Ctrl-C) before this worker could {e.what}: {e.cause}; "
                     f"{'stored, ' if left == 'not committed' else ''}{left}: {_span_text(spans)}; no offset past "
                     "them was committed, the next run reads them again", left)


def _cut(b: bytes, n: int = DLQ_HEADER_BYTES) -> bytes:
    return b if len(b) <= n else b[:n - 3] + b"..."


def _spans(records: list[ConsumerRecord]) -> dict[TopicPartition, tuple[int, int]]:
    """(first, last) offset per partition of a batch."""
    out: dict[TopicPartition, tuple[int, int]] = {}
    # a batch is runs of one partition's records (IngestWorker._take): grouped and reduced in C, not per record
    for (topic, partition), run in itertools.groupby(records, _TOPIC_PARTITION):
        offsets = list(map(_offset, run))
        tp = TopicPartition(topic, partition)
        lo, hi = min(offsets), max(offsets)
        if tp in out:
            lo, hi = min(lo, out[tp][0]), max(hi, out[tp][1])
        out[tp] = (lo, hi)
    return out


_TOPIC_PARTITION = operator.attrgetter("topic", "partition")
_offset = operator.attrgetter("offset")
_value = operator.attrgetter("value")


def _value_counts(column: pa.ChunkedArray) -> list[tuple[Any, int]]:
    """(value, count) of each distinct value of ``column``, nulls as None (Arrow's ``value_counts``: a batch's
    events are counted without a Python object per event)."""
    vc = pc.value_counts(column)
    return list(zip(vc.field("values").to_pylist(), vc.field("counts").to_pylist()))


OnBatch = Callable[[Batch], Awaitable[None] | None]


class NotStored(Exception):
    """A one-shot run (``run(give_up=True)``) gave a batch up: its broker or its lake kept failing it for
    ``once_give_up_s``. Its message names the broker (or lake), the step and the batch's records; no offset past them
    was committed, so the next run reads them again. Also a one-shot run stopped (SIGTERM, Ctrl-C) with a batch in
    hand. ``label``: "not stored", or "not committed" for a batch stopped at its last commit (its events are in the
    lake)."""

    def __init__(self, message: str, label: str = "not stored") -> None:
        super().__init__(message)
        self.label = label


class _Abandoned(Exception):
    """The batch's partitions went to another worker meanwhile: it will replay the batch (module doc)."""


class _Stopped(_Abandoned):
    """``stop`` was set (SIGTERM, Ctrl-C) while a step of the batch failed or waited on the broker: the batch is
    left, its records read again by the next run. ``what`` is the step ("store the batch"), ``cause`` what it
    waited on ("the lake … refused it (…)")."""

    def __init__(self, what: str, cause: str) -> None:
        super().__init__(f"stopping before this worker could {what}: {cause}")
        self.what, self.cause = what, cause


class IngestWorker:
    """One consumer-group member. ``run`` until ``stop`` is set (or, with ``until_caught_up``, until lag is 0)."""

    def __init__(self, *, bootstrap: str, topics: list[str], group_id: str, lake: Lake, dlq_topic: str,
                 pipeline: Pipeline | None = None, on_batch: OnBatch | None = None, max_records: int = 2000,
                 linger_ms: int = 200, events_topic: str | None = None, domains: Domains | None = None,
                 session_timeout_ms: int = 30000, once_give_up_s: float = 60.0) -> None:
        self.bootstrap, self.topics, self.group_id = bootstrap, topics, group_id
        self.lake, self.dlq_topic = lake, dlq_topic
        self.pipeline = pipeline or Pipeline()
        self.on_batch = on_batch
        self.max_records, self.linger_ms = max_records, linger_ms
        self.events_topic, self.domains = events_topic, domains or Domains()
        self.session_timeout_ms = session_timeout_ms
        self.metadata_max_age_ms = METADATA_MAX_AGE_MS
        #: called after partitions are (re)assigned: a worker that takes over hosts from another
        #: reloads what it needs to key their events as the previous owner did (ingest.publish.Domains)
        self.on_assigned: Callable[[], None] | None = None
        self.health = Health()
        #: (host, GPU, link, counter) -> (ts µs, value) of its last sample (``ingest.counters``); its hosts are
        #: forgotten after ``counters.COUNTER_QUIET_S`` without a sample (``counter_heard``: host -> monotonic s)
        self.counter_state: dict = {}
        self.counter_heard: dict[str, float] = {}
        self._counters_forgot = time.monotonic()  # when they were last forgotten (``COUNTER_FORGET_EVERY_S``)
        self.stop = asyncio.Event()
        self._consumer: AIOKafkaConsumer | None = None
        self._producer: AIOKafkaProducer | None = None
        self._admin: AIOKafkaAdminClient | None = None
        #: partitions assigned since their commit metadata was last read
        self._unread: set[TopicPartition] = set()
        #: batches begun elsewhere (or before a crash) and not committed: tp -> (last offset, batch id)
        self._intents: dict[TopicPartition, tuple[int, str]] = {}
        self._intents_since = 0.0
        #: records fetched and not yet in a batch, per partition, in offset order
        self._buf: dict[TopicPartition, list[ConsumerRecord]] = {}
        #: offsets of records aiokafka cannot read, dead-lettered and sought past (_past_unreadable), per partition: a
        #: batch that ends just before one commits past it
        self._skipped: dict[TopicPartition, set[int]] = {}
        self.chunk_records = max(1, max_records // CHUNKS_PER_BATCH)
        self.ack_patience_s = ACK_PATIENCE_S
        self.broker_check_s = BROKER_CHECK_S
        self._turn = 0  # which partition's chunk comes first in the next batch (round robin)
        #: how long (s) a failing batch is retried in a one-shot run (``run(give_up=True)``): then NotStored
        self.once_give_up_s = once_give_up_s
        self._give_up: float | None = None  # once_give_up_s while a one-shot run runs, else None: retry for ever
        #: what a one-shot run's stop left not stored (a batch, an unreadable record's dead letter), said by the
        #: NotStored its ``run`` raises when it returns (a `--once` run SIGTERMed while its lake refused a batch
        #: exited 0, "ingested 0 Kafka records": a break-it pass)
        self._left: list[NotStored] = []
        #: the batch in hand (its spans) and the step it is at ("begin the batch", "store the batch", "commit the
        #: batch"), None between batches: what a second signal's exit names (:meth:`in_hand`)
        self._hand: tuple[dict[TopicPartition, tuple[int, int]], str] | None = None

    def in_hand(self) -> str:
        """What ending the process now leaves (a second signal's exit without the last commit): the batch in hand
        and how far it got, e.g. "not stored: fleet.dmesg/0 offsets 16-23; no offset past them was committed, the
        next run reads them again", or "stored, not committed: …" at its commit, and what a one-shot run's first
        signal left (``NotStored``'s words); else "no batch in hand". A second SIGTERM said only "without the last
        commit", naming no record (a helper's pass)."""
        said = [str(e) for e in self._left]  # a one-shot run's batch its first signal stopped: not stored either
        if self._hand is not None:
            spans, what = self._hand
            left = "stored, not committed" if what == "commit the batch" else "not stored"
            said.append(f"{left}: {_span_text(spans)}; no offset past them was committed, the next run reads them "
                        "again")
        return "; also ".join(said) or "no batch in hand; what was not yet read is read by the next run"

    async def start(self) -> None:
        self._consumer = AIOKafkaConsumer(
            bootstrap_servers=self.bootstrap, group_id=self.group_id, enable_auto_commit=False,
            auto_offset_reset="earliest", max_poll_records=self.max_records,
            fetch_max_bytes=64 * 1024 * 1024, max_partition_fetch_bytes=16 * 1024 * 1024,
            session_timeout_ms=self.session_timeout_ms,
            heartbeat_interval_ms=max(1000, self.session_timeout_ms // 10), max_poll_interval_ms=600000,
            retry_backoff_ms=500, metadata_max_age_ms=self.metadata_max_age_ms)
        self._producer = self._new_producer()
        self._admin = AIOKafkaAdminClient(bootstrap_servers=self.bootstrap, request_timeout_ms=15000)
        try:
            await self._producer.start()
            await self._admin.start()
            await require_topics(self._admin, [*self.topics, self.dlq_topic,
                                               *([self.events_topic] if self.events_topic else [])], self.bootstrap)
            self._consumer.subscribe(self.topics, listener=_Assigned(self))
            await self._consumer.start()
        except BaseException:  # no broker: close what started, so no client is left unclosed
            await self.close()
            raise
        metrics.HEALTHY.set(1)

    async def close(self) -> None:
        """Stop the consumer, the producer and the admin client, each whatever the one before raised
        (:func:`stop_client`)."""
        for c in (self._consumer, self._producer):
            if c is not None:
                await stop_client(c.stop)
        if self._admin is not None:
            await stop_client(self._admin.close)

    async def lag(self) -> int:
        """Records behind the end of the assigned partitions (0 when caught up; -1 with no partitions)."""
        assert self._consumer is not None
        parts = self._consumer.assignment()
        for gone in set(self.health.lag) - {f"{tp.topic}/{tp.partition}" for tp in parts}:
            # a partition no longer ours (a rebalance): its series goes, or its last lag stayed for good and a
            # "lag > N" alert on a partition revoked while behind fired on (an operator's trial)
            topic, _, partition = gone.rpartition("/")
            with contextlib.suppress(KeyError):
                metrics.LAG.remove(topic, partition)
            del self.health.lag[gone]
        if not parts:
            return -1
        ends = await self._consumer.end_offsets(list(parts))
        total = 0
        self.health.lag = {}
        for tp in parts:
            pos = await self._position(tp)
            if pos is None:
                continue
            n = max(0, ends[tp] - pos) + len(self._buf.get(tp, ()))
            self.health.lag[f"{tp.topic}/{tp.partition}"] = n
            metrics.LAG.labels(topic=tp.topic, partition=str(tp.partition)).set(n)
            total += n
        return total

    async def run(self, *, until_caught_up: bool = False, idle_timeout_s: float = 30.0, give_up: bool = False) -> bool:
        """Consume until ``stop`` is set (``until_caught_up``: until lag is 0). ``give_up`` (a one-shot run): a batch
        its broker or lake keeps failing for ``once_give_up_s`` raises :class:`NotStored`, as does a broker that
        does not answer for as long while it catches up; else they are retried with backoff until they clear.
        Returns whether it caught up: False when ``stop`` ended it first, every batch it took stored and committed
        (a signal's run --once said "caught up" then: a helper's pass)."""
        assert self._consumer is not None
        self._give_up = self.once_give_up_s if give_up else None
        self._left = []
        failing_since: float | None = None
        idle_since = checked = measured = time.monotonic()
        # catching up, an empty fetch is followed by a question of the partitions' ends (a broker's round trip), so
        # it does not spin with linger 0: waiting IDLE_FETCH_MS there made `run --once` (and `run`'s, the demo's
        # catch-up) end 0.3 - 0.5 s later (a break-it pass: 2.8 s before, 3.2 s with it)
        idle_fetch_ms = 0 if until_caught_up else IDLE_FETCH_MS
        while not self.stop.is_set():
            with gc_paused():  # one batch's objects are freed before the collector resumes: ingest.gcpause
                taken = await self._next_batch(idle_fetch_ms)
                if taken.records:
                    idle_since = checked = time.monotonic()
                    await self._one_batch(taken)
                got = bool(taken.records)
                del taken
            if got and time.monotonic() - measured > self.broker_check_s:
                # a busy worker's lag too, every broker_check_s: it was measured only when idle, so a worker 160,000
                # records behind showed no lag in /healthz and no firstfault_consumer_lag_records (or an idle
                # moment's 0) until it caught up (a docs check)
                measured = time.monotonic()
                with contextlib.suppress(KafkaError, asyncio.TimeoutError):  # the next batch says what is wrong
                    await asyncio.wait_for(self.lag(), self.ack_patience_s)
            if not got:
                if until_caught_up:
                    try:
                        lag = await self.lag()
                    except KafkaError as e:  # the broker is away: keep waiting for it (a one-shot run: a while)
                        self.health.fail(f"kafka: {type(e).__name__}: {e}")
                        failing_since = failing_since or time.monotonic()
                        if self._give_up is not None and time.monotonic() - failing_since >= self._give_up:
                            raise NotStored(f"the Kafka broker {self.bootstrap} did not answer for "
                                            f"{self._give_up:g} s ({error_named(e)}); what was not yet read is "
                                            "read by the next run") from None
                        continue
                    failing_since = None
                    if lag == 0 and not self._intents:
                        return True
                    if time.monotonic() - idle_since > idle_timeout_s and lag < 0:
                        return True
                elif time.monotonic() - checked > self.broker_check_s:
                    checked = time.monotonic()
                    await self._check_broker()
                continue
        if self._left:  # a one-shot run stopped with a batch in hand: not "done", and said which
            raise NotStored("; also ".join(map(str, self._left)), self._left[0].label)
        return False

    async def _check_broker(self) -> None:
        """An idle worker's check that the broker answers (:data:`BROKER_CHECK_S`): its partitions' ends within
        ``ack_patience_s``, else unhealthy with the reason ("kafka: …"), until it answers again."""
        try:
            await asyncio.wait_for(self.lag(), self.ack_patience_s)
        except (KafkaError, asyncio.TimeoutError) as e:
            self.health.fail(broker_silent(e, self.ack_patience_s))
            return
        if not self.health.ok and self.health.reason.startswith("kafka:"):
            self.health.recover()

    # --- one batch -------------------------------------------------------------------------------
    async def _one_batch(self, taken: Taken) -> None:
        """Begin, run, store and commit one batch (module doc, steps 2 - 5)."""
        t0 = time.perf_counter()
        records, decoded, spans = taken.records, taken.decoded, taken.spans
        bid = _batch_id(spans)
        try:
            self._hand = (spans, "begin the batch")
            await self._retry(lambda: self._commit(
                {tp: (a, f"{INTENT}:{b}:{bid}") for tp, (a, b) in spans.items()}), spans, "begin the batch")
            self._hand = (spans, "store the batch")
            batch = await self._run_pipeline(records, decoded)
            await self._retry(lambda: self._store(records, batch, bid), spans, "store the batch")
            self._hand = (spans, "commit the batch")
            ends = {tp: self._past_skipped(tp, b + 1) for tp, (a, b) in spans.items()}
            await self._retry(lambda: self._commit({tp: (end, "") for tp, end in ends.items()}), spans,
                              "commit the batch")
        except _Abandoned as e:
            # Partitions still ours go back to the batch's start (a rebalance resets them so anyway); their
            # commit metadata, read again, makes the next batch this one (_read_intents).
            log.warning("batch %s abandoned: %s; not committed: %s", bid, e, _span_text(spans))
            self._stopped(e, spans)
            mine = self._consumer.assignment()
            for tp, (a, _b) in spans.items():
                if tp in mine:
                    self._consumer.seek(tp, a)
                    self._buf.pop(tp, None)
                    self._unread.add(tp)
            return
        finally:
            if self._hand is not None and self._hand[0] is spans:
                self._hand = None
        for tp, (_a, b) in spans.items():
            self._intents.pop(tp, None)
            # Reassigned meanwhile and back: the position went back, past what is now committed. Gone to
            # another worker (a rebalance can land between the commit and here): its owner starts at the commit.
            pos = await self._position(tp)
            if pos is not None and pos <= b:
                self._consumer.seek(tp, b + 1)
        self.health.recover()
        self._count(taken, batch, t0)

    def _stopped(self, e: _Abandoned, spans: dict[TopicPartition, tuple[int, int]]) -> None:
        """Keep what a one-shot run's stop (``e`` a :class:`_Stopped`) left of ``spans`` for ``run`` to raise."""
        if isinstance(e, _Stopped) and self._give_up is not None:
            self._left.append(_stopped_left(e, spans))

    async def _run_pipeline(self, records: list[ConsumerRecord], decoded: Decoded) -> Batch:
        """The pure stages. If they raise, find the records that make them raise (module doc, step 3)."""
        loop = asyncio.get_running_loop()
        try:
            return await loop.run_in_executor(None, self._pure, decoded)
        except Exception as e:  # noqa: BLE001 — a bug or unforeseen input: isolate it, never stop the worker
            log.error("pipeline failed on a batch of %d records (%s: %s); isolating the records that fail",
                      len(records), type(e).__name__, e, extra={"stage": "pipeline", "error_code": "pipeline_error"})
        self.health.fallbacks += 1
        metrics.FALLBACKS.inc()
        return await loop.run_in_executor(None, self._per_record, records)

    def _pure(self, decoded: Decoded) -> Batch:
        batch = self.pipeline.run(decoded)
        # counters are per link, and links of one host stay on one partition: this worker's state suffices
        batch.events = with_counter_events(batch.events, batch.link_samples, self.pipeline.catalog,
                                           self.counter_state)
        now = time.monotonic()
        self.counter_heard.update(dict.fromkeys(pc.unique(batch.link_samples.column("host")).to_pylist(), now))
        if now - self._counters_forgot >= COUNTER_FORGET_EVERY_S:
            self._counters_forgot = now
            forget_quiet_hosts(self.counter_state, self.counter_heard, (), now)
        return batch

    def _per_record(self, records: list[ConsumerRecord]) -> Batch:
        good: list[ConsumerRecord] = []
        bad: list[Reject] = []
        for r in records:
            origin = f"kafka:{r.topic}/{r.partition}/{r.offset}"
            try:
                d = decode_message(r.value, topic=r.topic, partition=r.partition, offset=r.offset, key=r.key,
                                   timestamp_ms=r.timestamp, headers=[(k, v) for k, v in (r.headers or [])])
            except Exception as e:  # noqa: BLE001
                bad.append(Reject(origin, f"decode failed: {type(e).__name__}: {e}", r.value or b"", "decode_error"))
                continue
            try:
                self.pipeline.run(d)  # without counter state: this is only a probe
            except Exception as e:  # noqa: BLE001
                bad.append(Reject(origin, f"pipeline failed: {type(e).__name__}: {e}", r.value or b"",
                                  "pipeline_error"))
                continue
            good.append(r)
        for rj in bad:
            log.error("record %s isolated: %s", rj.origin, rj.reason,
                      extra={"stage": "pipeline", "error_code": rj.error_code})
        try:  # the good records together, so context across records is kept as in any batch
            batch = self._pure(decode_records(good))
        except Exception as e:  # noqa: BLE001 — together they still fail: each on its own, then
            log.error("records fail together but not alone (%s); processing them one by one", e)
            parts = [self._pure(decode_records([r])) for r in good]
            batch = Batch(events=_concat([p.events for p in parts]),
                          link_samples=_concat([p.link_samples for p in parts]),
                          topology=_concat([p.topology for p in parts]),
                          rejects=[x for p in parts for x in p.rejects], lines=sum(p.lines for p in parts),
                          bytes=sum(p.bytes for p in parts))
        batch.rejects.extend(bad)
        return batch

    async def _store(self, records: list[ConsumerRecord], batch: Batch, bid: str) -> None:
        await self._dead_letter(batch, records)
        self.lake.write("events", batch.events, bid)
        self.lake.write("link_samples", batch.link_samples, bid)
        self.lake.write("topology", batch.topology, bid)
        if self.events_topic:
            await self._publish(batch)
        if self.on_batch is not None:
            r = self.on_batch(batch)
            if asyncio.iscoroutine(r):
                await r

    async def _commit(self, offsets: dict[TopicPartition, tuple[int, str]]) -> None:
        assert self._consumer is not None
        await self._acked(self._consumer.commit(offsets), "a commit")

    def _new_producer(self) -> AIOKafkaProducer:
        """The worker's idempotent producer (dead letters, the events topic): :func:`new_producer`."""
        return new_producer(self.bootstrap)

    async def _renew_producer(self) -> None:
        """A new producer in place of one whose idempotence state the broker no longer has (:func:`renewed_producer`).
        Raises KafkaError while the broker cannot start it."""
        self._producer = await renewed_producer(self.bootstrap, self._producer)

    async def _retry(self, step: Callable[[], Awaitable[None]], spans: dict[TopicPartition, tuple[int, int]],
                     what: str) -> None:
        """Run ``step`` until it succeeds, unhealthy meanwhile; raise :class:`_Abandoned` when the batch's
        partitions are no longer ours (whoever has them replays the batch from its commit metadata). A producer
        the broker lost the idempotence state of is made again (:meth:`_renew_producer`) before the next try."""
        backoff = 0.5
        renew = False
        failing_since: float | None = None
        while True:
            if not set(spans) <= self._consumer.assignment():
                raise _Abandoned(f"partitions reassigned before this worker could {what}")
            try:
                if renew:
                    await self._renew_producer()
                    renew = False
                await step()
                return
            except _Stopped as e:  # stopped while the broker had not acknowledged: the step it was waiting in
                raise _Stopped(what, e.cause) from None
            except (CommitFailedError, IllegalStateError) as e:
                raise _Abandoned(f"cannot {what}: {e}") from None
            except LakeError as e:
                self.health.fail(f"lake: {e}")
                cause = f"the lake {self.lake.location} refused it ({e})"
            except (KafkaError, OSError) as e:
                renew = renew or isinstance(e, (OutOfOrderSequenceNumber, UnknownProducerId))
                self.health.fail(f"kafka: cannot {what}: {type(e).__name__}: {e}")
                cause = f"the Kafka broker {self.bootstrap} did not take it ({error_named(e)})"
            if self.stop.is_set():
                raise _Stopped(what, cause)
            failing_since = failing_since or time.monotonic()
            if self._give_up is not None and time.monotonic() - failing_since >= self._give_up:
                raise NotStored(f"cannot {what} for {self._give_up:g} s: {cause}; not stored: "
                                f"{_span_text(spans)}; no offset past them was committed, the next run reads them "
                                "again") from None
            await self._pause(backoff)
            backoff = min(backoff * 2, 30.0)

    async def _pause(self, seconds: float) -> None:
        """Wait, polling the consumer with its partitions paused: a worker waiting for a fault to clear
        stays in its group (``max_poll_interval_ms``) and keeps its partitions."""
        c = self._consumer
        parts = c.assignment()
        c.pause(*parts)
        try:
            with gc_resumed():  # a batch is held (collector paused, ingest.gcpause) for as long as the fault lasts
                await asyncio.wait_for(self.stop.wait(), seconds)
        except asyncio.TimeoutError:
            pass
        finally:
            try:
                await c.getmany(timeout_ms=0)
            except KafkaError:
                pass
            c.resume(*(parts & c.assignment()))

    async def _acked(self, aw: Awaitable, what: str):
        """Await a broker acknowledgement; past ``ack_patience_s`` say so in ``health`` while waiting
        (aiokafka retries a commit for as long as the broker is away)."""
        task = asyncio.ensure_future(aw)
        done, _ = await asyncio.wait({task}, timeout=self.ack_patience_s)
        if not done:
            self.health.fail(f"kafka: waiting for the broker to acknowledge {what}")
            stop = asyncio.ensure_future(self.stop.wait())
            with gc_resumed():  # the broker may stay away for long: collect meanwhile (ingest.gcpause)
                # a one-shot run waits once_give_up_s at most: an idempotent producer's send is never given up by
                # aiokafka, and `ingest --once` waited for good on a broker that had died (a break-it pass)
                await asyncio.wait({task, stop}, timeout=self._give_up, return_when=asyncio.FIRST_COMPLETED)
            stop.cancel()
            if not task.done():
                task.cancel()
                if not self.stop.is_set():
                    raise KafkaTimeoutError(f"no acknowledgement of {what} within "
                                            f"{self.ack_patience_s + (self._give_up or 0):g} s")
                raise _Stopped(what, f"the Kafka broker {self.bootstrap} had not acknowledged {what}")
        return task.result()

    def _count(self, taken: Taken, batch: Batch, t0: float) -> None:
        h = self.health
        records = taken.records
        metrics.BATCH_SECONDS.observe(time.perf_counter() - t0)
        metrics.LINES.inc(batch.lines)
        # one call per label value, not per record: a labelled Prometheus increment costs ~1-2 µs
        per_topic: collections.Counter[str] = collections.Counter()
        for tp, n in taken.counts.items():
            per_topic[tp.topic] += n
        for topic, n in per_topic.items():
            metrics.RECORDS.labels(topic=topic).inc(n)
        metrics.BYTES.inc(sum(map(len, filter(None, map(_value, records)))))  # per record, in C
        ev = batch.events
        for kind, n in _value_counts(ev.column("kind")):
            metrics.EVENTS.labels(kind=kind).inc(n)
        family_of = self.pipeline.catalog.family_of  # the catalog file's family (docs/recognition.md)
        for sig, n in _value_counts(ev.column("signature")):
            metrics.MATCHES.labels(family=family_of.get(sig, "other")).inc(n)
        h.batches += 1
        h.records += len(records)
        h.lines += batch.lines
        h.events += batch.events.num_rows
        h.last_batch_s = time.perf_counter() - t0

    # --- fetching: chunks, and batches begun before ------------------------------------------------
    async def _next_batch(self, idle_fetch_ms: int = IDLE_FETCH_MS) -> Taken:
        """The next batch (module doc, step 1) and its decoded input; empty when nothing is ready yet.
        ``idle_fetch_ms``: how long a fetch waits with nothing buffered (at least ``linger_ms``)."""
        c = self._consumer
        assert c is not None
        ready = await self._ready(peek=True)
        # records are taken from aiokafka only for partitions with less than two chunks buffered here (memory):
        # the others' fetched data stays in aiokafka (one fetch response per partition at most, not fetched
        # again meanwhile). Pausing those partitions instead made aiokafka drop their fetch responses and fetch
        # them again on resume: at 2,000 one-line records per batch, a 16 MB response for every few hundred
        # records taken, each left to the cyclic collector (peak RSS ~1 GB over 1M records).
        want = [tp for tp in c.assignment() if len(self._buf.get(tp, ())) < 2 * self.chunk_records]
        if want:
            if ready:
                wait_ms = 0
            elif any(self._buf.values()):
                wait_ms = self.linger_ms
            else:
                wait_ms = max(self.linger_ms, idle_fetch_ms)
            try:
                data = await c.getmany(*want, timeout_ms=wait_ms, max_records=self.max_records)
            except UnicodeDecodeError as e:  # a record aiokafka cannot read: found, dead-lettered, gone past
                await self._past_unreadable(want, e)
                data = {}
        else:
            data = {}
            if not ready:  # every partition has its chunks here and none can be taken yet (a replay waits)
                await asyncio.sleep(self.linger_ms / 1000)
        if self._unread:
            await self._read_intents()
        mine = c.assignment()
        for tp, rs in data.items():
            if tp in mine:
                self._buf.setdefault(tp, []).extend(rs)
        for tp in [tp for tp in self._buf if tp not in mine]:
            del self._buf[tp]
        return self._take(await self._ready())

    async def _past_unreadable(self, want: list[TopicPartition], error: UnicodeDecodeError) -> None:
        """Go on past the records of ``want`` that aiokafka cannot read, after ``getmany`` raised ``error`` on one.

        Kafka's protocol makes a record header's key a UTF-8 string, aiokafka decodes it so, and the broker does not
        check it: a producer (kcat ``-H``, any librdkafka client) can send a key of other bytes. ``getmany`` then
        raised out of the fetch on every call, the records it had drained from other partitions in that call lost,
        and the worker stopped; restarted, it stopped again at the same offset, and so did the replica a rebalance
        gave the partition to (a break-it pass). Here every assigned partition goes back to its committed offset
        and has its commit metadata read again, as after a rebalance (records fetched and not yet in a batch are
        fetched again: none is lost or taken twice). Then each partition of ``want`` is fetched up to the worker's
        buffer (two chunks): a fetch that raises is made again one record at a time, and the record it raises on
        is dead-lettered (``error_code`` ``unreadable_record``, its coordinates in ``ff-origin`` and as the key; no
        value: aiokafka gives none, the record stays at its origin until its retention ends) before the worker
        seeks past it. The offset so named is the position the fetch raised at: in a compacted topic (a gap) it
        can be one before the record's; the next try names the next one."""
        c = self._consumer
        mine = c.assignment()
        log.error("a fetch raised %s: %s; finding the records it cannot read", type(error).__name__, error,
                  extra={"stage": "fetch", "error_code": UNREADABLE})
        self._buf.clear()
        self._intents.clear()
        for tp in sorted(mine):
            try:
                committed = await c.committed(tp)
                if committed is None:
                    await c.seek_to_beginning(tp)  # auto_offset_reset="earliest", as a new group's first start
                else:
                    c.seek(tp, committed)
            except IllegalStateError:  # revoked during an await: its new owner starts from the commit
                continue
        self._unread |= mine
        for tp in sorted(set(want) & mine):
            while len(buf := self._buf.setdefault(tp, [])) < 2 * self.chunk_records:
                got = await fetch_readable(c, tp, max_records=2 * self.chunk_records - len(buf),
                                           timeout_ms=max(self.linger_ms, 1000))
                buf.extend(got.records)
                if got.unreadable is None:
                    if not got.records:  # the partition's end, or a fetch slower than the wait: the next one goes on
                        break
                    continue
                pos, e = got.unreadable, got.error
                assert e is not None
                rj = Reject(f"kafka:{tp.topic}/{tp.partition}/{pos}", unreadable_reason(e), b"", UNREADABLE)
                try:
                    await self._retry(lambda: self._send_dead_letters([rj], {}), {tp: (pos, pos)},
                                      "dead-letter an unreadable record")
                except _Abandoned as stopped:  # the partition's new owner finds it again (or, stopped, the next run)
                    self._stopped(stopped, {tp: (pos, pos)})
                    break
                try:
                    c.seek(tp, pos + 1)
                except IllegalStateError:  # revoked while the letter was sent: its new owner finds the record again
                    break
                self._skipped.setdefault(tp, set()).add(pos)

    def _past_skipped(self, tp: TopicPartition, offset: int) -> int:
        """``offset``, or past the unreadable records dead-lettered from it on (:meth:`_past_unreadable`): where a
        batch that ends before ``offset`` commits ``tp``. Without it the commit stayed on such a record when no
        other followed, and a restart dead-lettered it again."""
        skipped = self._skipped.get(tp)
        if not skipped:
            return offset
        while offset in skipped:
            offset += 1
        for o in [o for o in skipped if o < offset]:
            skipped.discard(o)
        return offset

    async def _position(self, tp: TopicPartition) -> int | None:
        """The consumer's position (next offset) on ``tp``; None when ``tp`` is not assigned to this
        worker (any await can let a rebalance take it: aiokafka then raises IllegalStateError)."""
        if tp not in self._consumer.assignment():
            return None
        try:
            return await self._consumer.position(tp)
        except IllegalStateError:
            return None

    async def _ready(self, peek: bool = False) -> list[tuple[TopicPartition, int]]:
        """(partition, last offset) of each chunk that can be taken now, in batch order. ``peek``: only whether any
        can (the fetch's wait): a batch begun before that can be replayed now stays to be taken by the next call
        (a peek that released it threw it away, and the partitions were cut into chunks anew: another batch id,
        the crashed batch's parts left beside the new ones, when the release came by ``REPLAY_WAIT_S`` running out
        between the two calls: a speed pass's reading)."""
        c = self._consumer
        if self._intents:
            mine = c.assignment()
            for tp in [tp for tp in self._intents if tp not in mine]:
                del self._intents[tp]
        if self._intents:  # a batch begun before comes first, alone, exactly as it was
            bid = min(b for _, b in self._intents.values())
            group = sorted((tp, last) for tp, (last, b) in self._intents.items() if b == bid)
            waiting = []
            for tp, last in group:
                pos = await self._position(tp)
                if pos is not None and pos <= last:
                    waiting.append(tp)
            if waiting and time.monotonic() - self._intents_since < REPLAY_WAIT_S:
                return []
            if peek:
                return group
            if waiting:
                log.warning("batch %s could not be read whole again (partitions %s); taking what was read",
                            bid, waiting)
            for tp, _ in group:
                del self._intents[tp]
            self.health.replays += 1
            return [(tp, last) for tp, last in group if self._buf.get(tp)]
        out = []
        tps = sorted(tp for tp, rs in self._buf.items() if rs)
        if tps:
            self._turn = (self._turn + 1) % len(tps)
            tps = tps[self._turn:] + tps[:self._turn]
        for tp in tps:
            rs = self._buf.get(tp)  # a rebalance during an await below can have taken it
            if not rs:
                continue
            end = (rs[0].offset // self.chunk_records + 1) * self.chunk_records - 1
            pos = await self._position(tp)
            if pos is None:
                continue
            hw = c.highwater(tp)
            if pos > end or (hw is not None and pos >= hw):  # whole, or all there is for now
                out.append((tp, end))
        return out

    def _take(self, chunks: list[tuple[TopicPartition, int]]) -> Taken:
        """Remove the chunks' records from the buffer and decode them, cutting a chunk where its text
        passes ``MAX_CHUNK_BYTES`` and leaving out chunks past ``max_records`` or ``MAX_BATCH_BYTES``.
        Spans and counts come from each chunk's ends (its records are in offset order), not per record."""
        records: list[ConsumerRecord] = []
        out = Decoded()
        spans: dict[TopicPartition, tuple[int, int]] = {}
        counts: dict[TopicPartition, int] = {}
        total = 0
        for tp, last in chunks:
            rs = self._buf.get(tp)
            if not rs:  # revoked since _ready saw it
                continue
            n = bisect.bisect_right(rs, last, key=_offset)  # the buffer is in offset order
            if records and (len(records) + n > self.max_records or total > MAX_BATCH_BYTES):
                break
            d, taken, size = _decode_chunk(rs[:n])
            if taken < n:
                log.info("chunk of %s/%d cut after %d records: %d bytes of text", tp.topic, tp.partition, taken, size)
                n = taken
            out.add(d)
            records += rs[:n]
            lo, hi = rs[0].offset, rs[n - 1].offset
            if tp in spans:  # not from _ready (one chunk per partition), but a span must hold whatever comes
                lo, hi = min(lo, spans[tp][0]), max(hi, spans[tp][1])
            spans[tp] = (lo, hi)
            counts[tp] = counts.get(tp, 0) + n
            self._buf[tp] = rs[n:]
            total += size
        return Taken(records, out, spans, counts)

    async def _read_intents(self) -> None:
        """Commit metadata of the partitions assigned since last time: batches begun and not committed."""
        tps, self._unread = sorted(self._unread), set()
        try:
            committed = await self._admin.list_consumer_group_offsets(self.group_id, partitions=tps)
        except KafkaError as e:  # rare; without the metadata a replay is still complete, only cut differently
            log.warning("cannot read commit metadata of %d partitions: %s", len(tps), e)
            return
        for tp in tps:
            m = committed.get(tp)
            meta = (m.metadata or "") if m is not None else ""
            if meta.startswith(INTENT + ":"):
                _, last, bid = meta.split(":", 2)
                self._intents[tp] = (int(last), bid)
                self._intents_since = time.monotonic()
                log.info("partition %s/%d: replaying batch %s (offsets %d-%s) as it was begun",
                         tp.topic, tp.partition, bid, m.offset, last)

    # --- sinks -----------------------------------------------------------------------------------
    async def _publish(self, batch: Batch) -> None:
        """Events to the correlators, keyed by correlation domain, and the batch's link samples and topology facts
        under the key of their host's events (``ingest.publish``); acknowledged before offsets move (a replay
        publishes them again: the correlators keep one copy per event_id, and the newest sample of each link).
        Per domain its facts go first: the correlator has them when the events come (as ``run``'s single process
        gives it a batch's three tables at once), and a replay from the events' record brings them back."""
        assert self._producer is not None
        events = split_by_domain(batch.events, self.domains)  # first: it learns the hosts' communicators
        facts = {name: split_facts_by_domain(getattr(batch, name), self.domains) for name in FACT_TABLES}
        futs = []
        for key in sorted({*events, *(k for f in facts.values() for k in f)}):
            records = [(value, fact_headers(name)) for name, by_key in facts.items() if key in by_key
                       for value in encode_records(by_key[key], schema=FACT_TABLES[name])]
            # a domain's events in records the producer takes (publish.py)
            records += [(value, [("content-type", CONTENT_TYPE)]) for value in
                        (encode_records(events[key]) if key in events else [])]
            for value, headers in records:
                futs.append(await self._producer.send(self.events_topic, value=value, key=key.encode(),
                                                      headers=headers))
        for f in futs:
            await self._acked(f, "published events")

    async def _dead_letter(self, batch: Batch, records: list[ConsumerRecord]) -> None:
        await self._send_dead_letters(batch.rejects, originals_of(records, batch.rejects))

    async def _send_dead_letters(self, rejects: list[Reject],
                                 originals: dict[str, tuple[bytes | None, list[tuple[str, bytes]]]]) -> None:
        """Send ``rejects`` to the dead-letter topic (:func:`dead_letters`: one record per Kafka value, with its
        ``originals`` key and headers) and wait for the broker's acknowledgements; count and log them."""
        assert self._producer is not None
        futs, codes = [], []
        for key, value, headers in dead_letters(rejects, originals):
            futs.append(await self._producer.send(self.dlq_topic, value=value, headers=headers, key=key))
            h = dict(headers)
            codes.append(h["ff-error-code"].decode())
            log.warning("dead-lettered %s (%s): %s", h["ff-origin"].decode(), codes[-1],
                        h["ff-reason"].decode("utf-8", "replace"), extra={"stage": "decode", "error_code": codes[-1]})
        for f in futs:
            await self._acked(f, "dead letters")  # acknowledged by the broker before the offsets move
        for code in codes:
            metrics.REJECTS.labels(error_code=code).inc()
        self.health.rejects += len(futs)


def _concat(tables: list[pa.Table]) -> pa.Table:
    return pa.concat_tables(tables) if len(tables) > 1 else tables[0]


class _Assigned(ConsumerRebalanceListener):
    def __init__(self, worker: IngestWorker) -> None:
        self.worker = worker

    async def on_partitions_revoked(self, revoked) -> None:
        for tp in revoked:  # positions go back to the committed offsets: fetched records are read again
            self.worker._intents.pop(tp, None)
            self.worker._buf.pop(tp, None)
            self.worker._skipped.pop(tp, None)

    async def on_partitions_assigned(self, assigned) -> None:
        self.worker._unread |= set(assigned)
        if self.worker.on_assigned is not None:
            await asyncio.to_thread(self.worker.on_assigned)


async def produce_lines(bootstrap: str, topic: str, key: str, values: list[bytes]) -> None:
    """Send values to a topic with one key (the demo's and the tests' producer)."""
    p = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", max_request_size=128 * 1024 * 1024)
    await p.start()
    try:
        futs = [await p.send(topic, value=v, key=key.encode()) for v in values]
        for f in futs:
            await f
    finally:
        await p.stop()


__all__ = ["IngestWorker", "Health", "NotStored", "batch_id", "dead_letters", "decode_records", "new_producer",
           "originals_of", "produce_lines", "renewed_producer", "TopicPartition"]
