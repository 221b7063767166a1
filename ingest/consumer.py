"""The Kafka edge of ingest: consume, run the pipeline, store durably, then commit.

One process is one consumer-group member (``settings.group_id``) over the raw
topics. Per batch of records:

1. decode every value (``ingest.decode``) and run the pure pipeline;
2. send input that cannot be read to the dead-letter topic, with the reason in
   headers (``ff-reason``, ``ff-error-code``, ``ff-origin``), and wait for the
   broker's acknowledgement;
3. write events, link samples and topology facts to the lake (atomic parts);
4. hand the batch to ``on_batch`` (the correlator);
5. only then commit the offsets.

If step 2 or 3 fails the offsets are not committed: the consumer seeks back to
the batch's first offsets, reports itself unhealthy, and retries with backoff
until the fault clears (``health`` says why meanwhile). Decompression or JSON
errors are deterministic, so they go to the DLQ rather than being retried.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, ConsumerRebalanceListener, ConsumerRecord, TopicPartition
from aiokafka.errors import KafkaError

from ingest import metrics
from ingest.counters import with_counter_events
from ingest.decode import Decoded, decode_message
from ingest.lake import Lake, LakeError
from ingest.pipeline import Batch, Pipeline
from ingest.publish import CONTENT_TYPE, Domains, encode, split_by_domain

log = logging.getLogger("firstfault.ingest")


@dataclass
class Health:
    """What ``/healthz`` and the metrics report about this worker."""

    ok: bool = True
    reason: str = ""
    batches: int = 0
    records: int = 0
    lines: int = 0
    events: int = 0
    rejects: int = 0
    last_batch_s: float = 0.0
    since: float = field(default_factory=time.time)
    lag: dict[str, int] = field(default_factory=dict)

    def fail(self, reason: str) -> None:
        if self.ok or self.reason != reason:
            log.error("ingest unhealthy: %s", reason, extra={"stage": "store", "error_code": "store_failed"})
        self.ok, self.reason = False, reason
        metrics.HEALTHY.set(0)
        metrics.STORE_FAILURES.inc()

    def recover(self) -> None:
        if not self.ok:
            log.info("ingest healthy again")
        self.ok, self.reason = True, ""
        metrics.HEALTHY.set(1)


def batch_id(records: list[ConsumerRecord]) -> str:
    """Deterministic id of a batch from its source coordinates (a replay rewrites the same parts)."""
    spans: dict[tuple[str, int], list[int]] = {}
    for r in records:
        spans.setdefault((r.topic, r.partition), []).append(r.offset)
    key = ";".join(f"{t}/{p}/{min(o)}-{max(o)}" for (t, p), o in sorted(spans.items()))
    return hashlib.blake2b(key.encode(), digest_size=10).hexdigest()


def decode_records(records: list[ConsumerRecord]) -> Decoded:
    out = Decoded()
    for r in records:
        d = decode_message(r.value, topic=r.topic, partition=r.partition, offset=r.offset, key=r.key,
                           timestamp_ms=r.timestamp,
                           headers=[(k, v) for k, v in (r.headers or [])])
        out.segments.extend(d.segments)
        out.rejects.extend(d.rejects)
    return out


OnBatch = Callable[[Batch], Awaitable[None] | None]


class IngestWorker:
    """One consumer-group member. ``run`` until ``stop`` is set (or, with ``until_caught_up``, until lag is 0)."""

    def __init__(self, *, bootstrap: str, topics: list[str], group_id: str, lake: Lake, dlq_topic: str,
                 pipeline: Pipeline | None = None, on_batch: OnBatch | None = None, max_records: int = 2000,
                 linger_ms: int = 200, events_topic: str | None = None, domains: Domains | None = None,
                 session_timeout_ms: int = 30000) -> None:
        self.bootstrap, self.topics, self.group_id = bootstrap, topics, group_id
        self.lake, self.dlq_topic = lake, dlq_topic
        self.pipeline = pipeline or Pipeline()
        self.on_batch = on_batch
        self.max_records, self.linger_ms = max_records, linger_ms
        self.events_topic, self.domains = events_topic, domains or Domains()
        self.session_timeout_ms = session_timeout_ms
        #: called after partitions are (re)assigned: a worker that takes over hosts from another
        #: reloads what it needs to key their events as the previous owner did (ingest.publish.Domains)
        self.on_assigned: Callable[[], None] | None = None
        self.health = Health()
        self.counter_state: dict = {}
        self.stop = asyncio.Event()
        self._consumer: AIOKafkaConsumer | None = None
        self._producer: AIOKafkaProducer | None = None

    async def start(self) -> None:
        self._consumer = AIOKafkaConsumer(
            bootstrap_servers=self.bootstrap, group_id=self.group_id, enable_auto_commit=False,
            auto_offset_reset="earliest", max_poll_records=self.max_records,
            fetch_max_bytes=64 * 1024 * 1024, max_partition_fetch_bytes=16 * 1024 * 1024,
            session_timeout_ms=self.session_timeout_ms,
            heartbeat_interval_ms=max(1000, self.session_timeout_ms // 10), max_poll_interval_ms=600000,
            retry_backoff_ms=500)
        self._producer = AIOKafkaProducer(bootstrap_servers=self.bootstrap, acks="all",
                                          enable_idempotence=True, max_request_size=16 * 1024 * 1024)
        await self._producer.start()
        self._consumer.subscribe(self.topics, listener=_Assigned(self))
        await self._consumer.start()

    async def close(self) -> None:
        for c in (self._consumer, self._producer):
            if c is not None:
                try:
                    await c.stop()
                except KafkaError:
                    pass

    async def lag(self) -> int:
        """Records behind the end of the assigned partitions (0 when caught up)."""
        assert self._consumer is not None
        parts = self._consumer.assignment()
        if not parts:
            return -1
        ends = await self._consumer.end_offsets(list(parts))
        total = 0
        self.health.lag = {}
        for tp in parts:
            pos = await self._consumer.position(tp)
            n = max(0, ends[tp] - pos)
            self.health.lag[f"{tp.topic}/{tp.partition}"] = n
            metrics.LAG.labels(topic=tp.topic, partition=str(tp.partition)).set(n)
            total += n
        return total

    async def run(self, *, until_caught_up: bool = False, idle_timeout_s: float = 30.0) -> None:
        assert self._consumer is not None
        idle_since = time.monotonic()
        backoff = 0.5
        while not self.stop.is_set():
            data = await self._consumer.getmany(timeout_ms=self.linger_ms, max_records=self.max_records)
            records = [r for rs in data.values() for r in rs]
            if not records:
                if until_caught_up:
                    lag = await self.lag()
                    if lag == 0:
                        return
                    if time.monotonic() - idle_since > idle_timeout_s and lag < 0:
                        return
                continue
            idle_since = time.monotonic()
            first = {tp: rs[0].offset for tp, rs in data.items() if rs}
            last = {tp: rs[-1].offset for tp, rs in data.items() if rs}
            try:
                await self._handle(records)
            except (LakeError, KafkaError, OSError) as e:
                self.health.fail(f"{type(e).__name__}: {e}")
                for tp, off in first.items():  # nothing of this batch is committed: read it again
                    self._consumer.seek(tp, off)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 30.0)
                continue
            backoff = 0.5
            await self._consumer.commit({tp: off + 1 for tp, off in last.items()})
            self.health.recover()

    async def _handle(self, records: list[ConsumerRecord]) -> None:
        t0 = time.perf_counter()
        decoded = decode_records(records)
        loop = asyncio.get_running_loop()
        batch = await loop.run_in_executor(None, self.pipeline.run, decoded)
        # counters are per link, and links of one host stay on one partition: this worker's state suffices
        batch.events = with_counter_events(batch.events, batch.link_samples, self.pipeline.catalog,
                                           self.counter_state)
        await self._dead_letter(batch)
        bid = batch_id(records)
        self.lake.write("events", batch.events, bid)
        self.lake.write("link_samples", batch.link_samples, bid)
        self.lake.write("topology", batch.topology, bid)
        if self.events_topic:
            await self._publish(batch)
        if self.on_batch is not None:
            r = self.on_batch(batch)
            if asyncio.iscoroutine(r):
                await r
        h = self.health
        metrics.BATCH_SECONDS.observe(time.perf_counter() - t0)
        metrics.LINES.inc(batch.lines)
        for r in records:
            metrics.RECORDS.labels(topic=r.topic).inc()
            metrics.BYTES.inc(len(r.value or b""))
        for kind, sig in zip(batch.events.column("kind").to_pylist(), batch.events.column("signature").to_pylist()):
            metrics.EVENTS.labels(kind=kind).inc()
            metrics.MATCHES.labels(family=sig.split(".", 1)[0]).inc()
        for rj in batch.rejects:
            metrics.REJECTS.labels(error_code=rj.error_code).inc()
        h.batches += 1
        h.records += len(records)
        h.lines += batch.lines
        h.events += batch.events.num_rows
        h.rejects += len(batch.rejects)
        h.last_batch_s = time.perf_counter() - t0

    async def _publish(self, batch: Batch) -> None:
        """Events to the correlators, keyed by correlation domain; acknowledged before offsets move
        (a replay publishes them again: the correlators keep one copy per event_id)."""
        assert self._producer is not None
        futs = []
        for key, table in split_by_domain(batch.events, self.domains).items():
            log.debug("publish %d events key=%s hosts=%s", table.num_rows, key,
                     sorted(set(table.column("host").to_pylist())))
            futs.append(await self._producer.send(self.events_topic, value=encode(table), key=key.encode(),
                                                  headers=[("content-type", CONTENT_TYPE)]))
        for f in futs:
            await f

    async def _dead_letter(self, batch: Batch) -> None:
        assert self._producer is not None
        futs = []
        for rj in batch.rejects:
            headers = [("ff-reason", rj.reason.encode()[:1000]), ("ff-error-code", rj.error_code.encode()),
                       ("ff-origin", rj.origin.encode())]
            value = rj.data if len(rj.data) <= 8 * 1024 * 1024 else rj.data[:8 * 1024 * 1024]
            futs.append(await self._producer.send(self.dlq_topic, value=value, headers=headers,
                                                  key=rj.origin.encode()))
            log.warning("dead-lettered %s: %s", rj.origin, rj.reason)
        for f in futs:
            await f  # acknowledged by the broker before the offsets move


class _Assigned(ConsumerRebalanceListener):
    def __init__(self, worker: IngestWorker) -> None:
        self.worker = worker

    async def on_partitions_revoked(self, revoked) -> None:
        pass

    async def on_partitions_assigned(self, assigned) -> None:
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


__all__ = ["IngestWorker", "Health", "batch_id", "decode_records", "produce_lines", "TopicPartition"]
