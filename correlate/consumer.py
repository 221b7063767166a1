"""The Kafka edge of correlation: a consumer-group member over ``fleet.events``.

Ingest workers publish recognised events keyed by correlation domain
(``ingest.publish``), so each domain's events reach one partition and one
correlate worker. Per batch of records the worker adds the events to its
:class:`~correlate.stream.StreamCorrelator`, lets it emit closed incidents,
hands them to ``on_incidents`` (which stores them durably and pages), and then
commits, per partition, the **safe offset**: the first record whose events the
correlator still holds (or the link-sample and topology records published just
before it: records whose header names such a table, ``ingest.publish``, which
the worker hands to the correlator as the single process does). Everything
before it is either forgotten (older than the host's watermark minus the
lateness and the longest window) or already reflected in stored incidents.

So after a crash, a restart or a rebalance, the new owner of a partition
replays from the safe offset and rebuilds the open windows exactly; incident
versions already stored, and the newest membership line of each rank (the
caller's ``restore_events``: NCCL init lines print once, at job start), are
restored from the lake by the caller, so a replay
emits a version only where the content really changes (the correlator's
content hash). The events of stored incidents that hold a fault, which the
correlator keeps aside (cold) for watchdog timeouts that come hours later and
which no replay brings, are read back from the lake (the caller's
``read_back``) host by host, as the partitions show which hosts are this
worker's (``StreamCorrelator.to_read_back``). Duplicated deliveries are harmless: events are keyed by
``event_id``.

The link samples and topology facts of a host published before the safe offset (a ``topo -m`` at boot, link states
sampled an hour ago), or under the host's earlier key on another partition (``host:<h>`` before an NCCL init line
made it ``comm:<c>``), no replay brings: when the worker first sees a host's events (after a start or a rebalance, or
a host new to it) it reads back from the lake that host's newest topology facts and newest sample of each link
(the caller's ``read_facts``: ``api.sink.IncidentSink.host_facts``, bounded in time and rows), the hosts of one
poll in one read, and hands them to its correlator before what it holds (``_read_facts``). In the same read, the
summary of those hosts' append delays over the whole lake (the caller's ``read_delays``:
``api.sink.IncidentSink.append_delays``), merged into its correlator's: their clock bounds are those of
``firstfault run`` and of the batch over the lake, not of the replay alone.

A record the worker cannot read (``decode_record`` refuses it: a corrupt Arrow stream, nulls in required columns,
times no year holds, a header naming a table it does not read, a null value) goes to the dead-letter topic
(``dlq_topic``, as the ingest worker's rejects: ``ingest.consumer.dead_letters``) with ``ff-error-code``
``bad_events_record``, the reason and its coordinates, its own key and headers kept. The worker awaits the broker's
acknowledgement before any commit moves past it (the record holds the safe offset until then), retrying with a
back-off while the broker does not acknowledge, in a task of its own: correlation goes on with the next record.

A record the Kafka client cannot read at all (a header key that is not UTF-8: aiokafka's ``getmany`` raises) is
found one record at a time (``ingest.consumer.fetch_readable``), dead-lettered the same way with ``ff-error-code``
``unreadable_record`` and no value or key of its own (aiokafka gives none), and gone past (``_past_unreadable``).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import pyarrow as pa
import pyarrow.compute as pc
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, ConsumerRebalanceListener, ConsumerRecord, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.errors import IllegalStateError, KafkaError, OutOfOrderSequenceNumber, UnknownProducerId

from correlate.correlator import Settings
from correlate.metrics import (DEAD_LETTER_FAILURES, DEAD_LETTERS, DEAD_LETTERS_PENDING, FACTS_READ_BACK_FAILURES,
                               HEALTHY, LAG, PAUSED_PARTITIONS, REBALANCES, StepGuard, add_counted)
from correlate.rules import default_rules
from correlate.stream import StreamCorrelator
from correlate.window import AppendDelays
from ingest.broker import require_topics
from ingest.consumer import (ACK_PATIENCE_S, BROKER_CHECK_S, METADATA_MAX_AGE_MS, UNREADABLE, broker_silent,
                             dead_letters, error_named, fetch_readable, new_producer, originals_of, renewed_producer,
                             stop_client, unreadable_reason)
from ingest.decode import Reject
from ingest.publish import decode_record
from schemas.events import empty_events

log = logging.getLogger("firstfault.correlate")
S = 1_000_000
#: the dead letters' ``ff-error-code`` (and the log's ``error_code``) of a record the worker cannot read
BAD_RECORD = "bad_events_record"
OnIncidents = Callable[[list[dict[str, Any]]], None]
#: host -> its time (µs) => (link samples, topology facts) of those hosts read back from the lake
#: (``api.sink.IncidentSink.host_facts``)
ReadFacts = Callable[[dict[str, int]], tuple[pa.Table | None, pa.Table | None]]
#: host -> its time (µs) => the summary of the append delays of the lake's lines of those hosts (None: none;
#: ``api.sink.IncidentSink.append_delays``)
ReadDelays = Callable[[dict[str, int]], AppendDelays | None]
#: how long ``run(until_caught_up=True)`` waits for dead letters still being sent before its last commit (s): one
#: not acknowledged by then keeps its record for the next run
DEAD_LETTER_SETTLE_S = 30.0
#: hosts whose facts one lake read asks for at most (``CorrelateWorker._read_facts``)
FACTS_HOSTS_PER_READ = 1000
#: records a partition may hold behind a dead letter the broker has not acknowledged before the worker stops fetching
#: it (``consumer.pause``) until the letter is in: a DLQ refusing for hours (a broker away, a letter past the topic's
#: ``max.message.bytes``) let ``_Partition.held`` grow by every record read meanwhile, without bound (stop 57's note)
HELD_BEHIND_DEAD_MAX = 50_000
#: records one poll takes at most (``getmany``'s ``max_records``); and per partition, after a fetch raised
#: (``_past_unreadable``)
POLL_RECORDS = 1000
#: how long a fetch of one partition waits for its records after a fetch raised (``_past_unreadable``; ms)
REFETCH_WAIT_MS = 1000


class Unreadable(NamedTuple):
    """The coordinates of a record the Kafka client cannot read (``fetch_readable``): no key, headers or value."""

    topic: str
    partition: int
    offset: int


@dataclass
class _Partition:
    """Records of one partition not yet safe to commit: (offset, event ids), or (offset, None) for a record of link
    samples or topology facts; ``tail_from``, the first offset the latest poll read of it; ``dead``: offsets of
    records whose dead letters the broker has not acknowledged yet (each holds the safe offset at or before it);
    ``paused``: fetching it is paused until they are (``CorrelateWorker._pause_behind_dead_letters``)."""

    held: deque = field(default_factory=deque)
    last: int = -1
    tail_from: int = 1 << 62
    dead: set[int] = field(default_factory=set)
    paused: bool = False


@dataclass
class _Backoff:
    """A retry's wait (s): 0.5, doubled after each failure up to 30, 0.5 again after a success; ``at``, the
    ``time.monotonic()`` before which the next try waits (the lake reads, tried again from ``run``'s loop)."""

    delay: float = 0.5
    at: float = 0.0

    def failed(self) -> float:
        """The wait before the next try (s); ``at`` is set to its end and the next wait doubled."""
        wait = self.delay
        self.at = time.monotonic() + wait
        self.delay = min(wait * 2, 30.0)
        return wait

    def ok(self) -> None:
        self.delay = 0.5

    def due(self) -> bool:
        return time.monotonic() >= self.at


class CorrelateFailed(RuntimeError):
    """``run(until_caught_up=True)`` caught up, and the correlator's steps raise (``StepGuard``): nothing is committed,
    the incidents cannot be made."""


class CorrelateWorker:
    """One correlate consumer-group member (see module doc)."""

    def __init__(self, *, bootstrap: str, topic: str, group_id: str, dlq_topic: str, settings: Settings,
                 lateness_us: int, on_incidents: OnIncidents, restore: Callable[[], list[dict[str, Any]]] | None = None,
                 session_timeout_ms: int = 30000, tick_s: float = 5.0, close_after_us: int = 120 * S,
                 early_after_us: int | None = 300 * S,
                 idle_us: int = 120 * S, reach_back_us: int = 24 * 3600 * S,
                 restore_events: Callable[[], pa.Table | None] | None = None,
                 read_back: Callable[[list[dict[str, Any]]], pa.Table | None] | None = None,
                 read_facts: ReadFacts | None = None, read_delays: ReadDelays | None = None,
                 held_behind_dead_max: int = HELD_BEHIND_DEAD_MAX) -> None:
        self.bootstrap, self.topic, self.group_id, self.dlq_topic = bootstrap, topic, group_id, dlq_topic
        self.settings, self.lateness_us = settings, lateness_us
        self.on_incidents, self.restore, self.restore_events = on_incidents, restore, restore_events
        self.read_back, self.read_facts, self.read_delays = read_back, read_facts, read_delays
        self.session_timeout_ms, self.tick_s = session_timeout_ms, tick_s
        self.metadata_max_age_ms = METADATA_MAX_AGE_MS  # partitions added to the topic are read within it
        self.close_after_us, self.idle_us, self.reach_back_us = close_after_us, idle_us, reach_back_us
        self.early_after_us, self.held_behind_dead_max = early_after_us, held_behind_dead_max
        self.stop = asyncio.Event()
        self.parts: dict[TopicPartition, _Partition] = {}
        self.correlator = self._fresh()
        self.consumer: AIOKafkaConsumer | None = None
        self.producer: AIOKafkaProducer | None = None  # dead letters (ingest.consumer.new_producer)
        self._dead_letter_tasks: set[asyncio.Future] = set()  # dead letters being sent (_dead_letter_later)
        self.records = 0
        self.dead_lettered = 0  # dead letters the broker acknowledged
        self.dead_letter_failures = 0  # tries to send them that failed (each said in the log)
        self.rebalances = 0
        #: the partitions ``assigned`` last set up (sought); None before it first has
        self.ready: frozenset[TopicPartition] | None = None
        self.store_failures = 0
        self.last_store_error: str | None = None  # why the latest incidents could not be stored; None once they are
        self.step = StepGuard()  # a step that raises is said and tried again, not a crash loop
        self.store_wait = _Backoff()  # incidents the sink could not store (_emit)
        self.read_back_failures = 0
        self.read_back_wait = _Backoff()
        #: hosts whose facts were read back (or found none) since the worker started or was last assigned
        #: partitions, while the correlator knows them (``StreamCorrelator.heard_us``: a host quiet past the events
        #: kept that holds nothing leaves it after a step, and its facts are read again if it comes back; at most
        #: the hosts the correlator holds, not every pod name the fleet ever had); those seen since and not read
        #: back yet (host -> the first time seen, µs: the anchor of a host without a watermark), read by
        #: ``_read_facts``
        self.facts_read: set[str] = set()
        self.facts_wanted: dict[str, int] = {}
        self.facts_read_back_failures = 0
        self.facts_wait = _Backoff()
        self.lag: dict[str, int] = {}  # "topic/partition" -> records behind its end, as ``observe`` last saw
        #: an idle worker asks the broker every ``broker_check_s`` (``observe``); one that does not answer within
        #: ``ack_patience_s`` makes the worker unhealthy, this the reason, until it answers again
        self.broker_check_s, self.ack_patience_s = BROKER_CHECK_S, ACK_PATIENCE_S
        self.broker_error: str | None = None
        self.commit_error: str | None = None  # a commit the broker has not acknowledged in time (_commit_safe)
        self._checked = time.monotonic()
        self.committed: dict[TopicPartition, int] = {}  # the offsets last committed (or found committed when assigned)

    def _fresh(self) -> StreamCorrelator:
        c = StreamCorrelator(settings=self.settings, lateness_us=self.lateness_us, rules=default_rules(),
                             close_after_us=self.close_after_us, early_after_us=self.early_after_us,
                             idle_us=self.idle_us,
                             reach_back_us=self.reach_back_us)
        if self.restore is not None or self.restore_events is not None:
            c.restore(self.restore() if self.restore is not None else [],
                      self.restore_events() if self.restore_events is not None else None,
                      read_back=self.read_back is not None)
        return c

    async def start(self) -> None:
        self.consumer = AIOKafkaConsumer(
            bootstrap_servers=self.bootstrap, group_id=self.group_id, enable_auto_commit=False,
            auto_offset_reset="earliest", session_timeout_ms=self.session_timeout_ms,
            heartbeat_interval_ms=max(1000, self.session_timeout_ms // 10), max_poll_records=1000,
            fetch_max_bytes=64 * 1024 * 1024, max_partition_fetch_bytes=16 * 1024 * 1024,
            metadata_max_age_ms=self.metadata_max_age_ms)
        self.consumer.subscribe([self.topic], listener=_Listener(self))
        self.producer = new_producer(self.bootstrap)
        try:
            admin = AIOKafkaAdminClient(bootstrap_servers=self.bootstrap, request_timeout_ms=15000)
            try:
                await admin.start()
                await require_topics(admin, [self.topic, self.dlq_topic], self.bootstrap)
            finally:
                try:
                    await admin.close()
                except KafkaError:
                    pass
            await self.producer.start()
            await self.consumer.start()
        except BaseException:  # no broker: close it, so no client is left unclosed
            await self.close()
            raise
        # what /healthz says, read at each scrape: set after each step, it read 0 until the first step was done,
        # seconds while /healthz said ok (a break-it pass: an alert on 0 fired at every restart)
        HEALTHY.set_function(lambda: 1 if self.health()["ok"] else 0)

    async def close(self) -> None:
        """Stop the dead letters still being sent (their records hold the commit: read again by the next owner),
        then the consumer, then the producer, each whatever the one before raised (``stop_client``)."""
        await self._stop_dead_letters()
        for c in (self.consumer, self.producer):
            if c is not None:
                await stop_client(c.stop)

    # --- rebalance -------------------------------------------------------------------------------
    async def revoked(self, revoked: set[TopicPartition]) -> None:
        """Before partitions move: commit what is safe, then drop all state (it is rebuilt by replay). Their lag
        series go: a revoked partition's last lag would stay for good (as ``ingest.consumer.IngestWorker.lag``)."""
        await self._commit_safe(revoked)
        for tp in revoked:
            if self.lag.pop(f"{tp.topic}/{tp.partition}", None) is not None:
                LAG.remove(tp.topic, str(tp.partition))

    async def assigned(self, assigned: set[TopicPartition]) -> None:
        """After a rebalance: start over from the safe offsets of every partition now ours.

        aiokafka sets the assignment, and its fetcher fetches it, before it calls this: ``run`` reads nothing of an
        assignment until it is ``ready`` (its fetches are dropped; the seeks bring them again), and ``_caught_up``
        says nothing of it (a --once run ended while this awaited the broker, the state it had read then thrown
        away; another read its records twice: a CI run). The committed offsets (the earliest where none) are asked
        first, each answer within ``ack_patience_s`` and asked again after a back-off of 0.5 s doubling to 30 s
        while the broker does not give them (logged, ``error_code`` ``assignment_offsets_failed``); then the fresh
        state, the seeks and ``ready`` come with no await between them. Returns early, nothing set up, once
        ``stop`` is set."""
        assert self.consumer is not None
        # dead letters of the partitions before: their records are read again by whoever has them now (a task kept
        # trying for a partition gone elsewhere, and both owners' letters landed: a break-it pass)
        await self._stop_dead_letters()
        wait = _Backoff()
        while True:
            try:
                committed = {tp: await asyncio.wait_for(self.consumer.committed(tp), self.ack_patience_s)
                             for tp in assigned}
                never = [tp for tp, off in committed.items() if off is None]
                starts = await asyncio.wait_for(self.consumer.beginning_offsets(never), self.ack_patience_s) \
                    if never else {}
                break
            except (KafkaError, asyncio.TimeoutError) as e:
                delay = wait.failed()
                log.error("correlate: the offsets of the partitions assigned were not given (%s); asking again in "
                          "%.1f s", error_named(e), delay,
                          extra={"stage": "correlate", "error_code": "assignment_offsets_failed"})
                try:
                    await asyncio.wait_for(self.stop.wait(), delay)
                    return
                except asyncio.TimeoutError:
                    continue
        self.rebalances += 1
        REBALANCES.inc()
        self.correlator = self._fresh()
        self.parts = {}
        # the fresh correlator knows no host's facts: each is read back again as its events come
        self.facts_read, self.facts_wanted, self.facts_wait = set(), {}, _Backoff()
        self.committed = {tp: off for tp, off in committed.items() if off is not None}
        for tp in assigned:
            self.consumer.seek(tp, starts[tp] if committed[tp] is None else committed[tp])
        self.ready = frozenset(assigned)
        log.info("correlate: assigned %s (rebuilding state from the safe offsets)",
                 sorted(f"{tp.partition}@{committed[tp]}" for tp in assigned))

    # --- main loop -------------------------------------------------------------------------------
    async def run(self, *, until_caught_up: bool = False) -> bool:
        """Consume until ``stop`` is set (``until_caught_up``: until caught up, every window then closed and its
        incidents stored). Returns whether it caught up: False when ``stop`` ended it first (a signal's
        ``correlate --once`` said "caught up" then: a helper's pass)."""
        assert self.consumer is not None
        last_tick = time.monotonic()
        settled = False  # until_caught_up: the dead letters of paused partitions had their time
        while not self.stop.is_set():
            self._pause_behind_dead_letters()
            unreadable: dict[TopicPartition, tuple[int, str]] = {}
            try:
                data = await self.consumer.getmany(timeout_ms=200, max_records=POLL_RECORDS)
            except UnicodeDecodeError as e:  # a record aiokafka cannot read: found, dead-lettered, gone past
                data, unreadable = await self._past_unreadable(e)
            fetched = bool(data or unreadable)
            if fetched and self.consumer.assignment() != self.ready:  # not set up yet (``assigned``): sought again
                continue
            now = int(time.time() * S)
            bad: list[tuple[_Partition, ConsumerRecord | Unreadable, str]] = []
            for tp in unreadable.keys() - data.keys():
                data[tp] = []
            for tp, recs in data.items():
                p = self.parts.setdefault(tp, _Partition())
                if recs and recs[0].offset <= p.last:  # returned before an assignment's seek, fetched again after it
                    recs = [r for r in recs if r.offset > p.last]
                p.tail_from = recs[0].offset if recs else unreadable[tp][0] if tp in unreadable else p.tail_from
                for r in recs:
                    try:  # events, or (a header names the table) link samples or topology facts
                        name, table = decode_record(r.value, r.headers)
                    except (pa.ArrowException, ValueError, OSError, TypeError) as e:  # not ours to fix: dead-letter
                        log.error("correlate: undecodable record %s/%d/%d (to %s): %s", tp.topic, tp.partition,
                                  r.offset, self.dlq_topic, e, extra={"stage": "correlate", "error_code": BAD_RECORD})
                        name, table = "events", None
                        bad.append((p, r, str(e) or type(e).__name__))
                        p.dead.add(r.offset)  # holds the commit until the broker has its dead letter
                    source = f"{tp.topic}/{tp.partition}"
                    if name != "events":  # as the single process hands them over with its batch's events
                        add_counted(self.correlator, empty_events(), table if name == "link_samples" else None,
                                    table if name == "topology" else None, now_us=now, source=source)
                        p.held.append((r.offset, None))
                    elif table is not None and table.num_rows:
                        add_counted(self.correlator, table, now_us=now, source=source)
                        p.held.append((r.offset, table.column("event_id").to_pylist()))
                        if self.read_facts is not None or self.read_delays is not None:
                            for h in pc.unique(table.column("host")).to_pylist():
                                if h not in self.facts_read:
                                    self.facts_wanted.setdefault(h, now)
                    else:
                        p.held.append((r.offset, []))
                    p.last = r.offset
                    self.records += 1
                if tp in unreadable and unreadable[tp][0] > p.last:  # after the records read before it
                    off, why = unreadable[tp]
                    bad.append((p, Unreadable(tp.topic, tp.partition, off), why))
                    p.dead.add(off)  # holds the commit until the broker has its dead letter; past it then
                    p.held.append((off, []))
                    p.last = off
                    self.records += 1
            if bad:  # sent beside correlation; their records hold their partitions' commits until acknowledged
                self._dead_letter_later(bad)
            # after new records, or (a read that failed) once its back-off has passed even if the partitions are quiet
            if (fetched or self.correlator.read_back_again) and self.read_back is not None \
                    and self.read_back_wait.due():
                await self._read_back()
            # the facts of hosts first seen (or whose read failed, once its back-off has passed), before the step
            if self.facts_wanted and self.facts_wait.due():
                await self._read_facts()
            if fetched or time.monotonic() - last_tick > min(self.tick_s, self.idle_us / S / 2):
                last_tick = time.monotonic()
                incidents = self.step(self.correlator, now)
                if len(self.facts_read) > len(self.correlator.heard_us):  # the hosts the correlator forgot
                    self.facts_read &= self.correlator.heard_us.keys()
                # a step that raised commits nothing: a restart replays its events
                stored = self.step.last_error is None and await self._emit(incidents)
                await self.observe(fetched=fetched)
                if not stored:
                    continue
                await self._commit_safe(set(self.parts))
            if until_caught_up and not fetched and await self._caught_up(but=self._paused()):
                # caught up but for partitions paused behind dead letters: the letters get their time, and the
                # partitions whose letters went in are fetched again and read to their ends (a --once run said
                # "caught up" and exited 0 with them unread: a break-it pass)
                if self._paused() and not settled:
                    await self._dead_letters_settled(DEAD_LETTER_SETTLE_S)
                    settled = True
                    if self._pause_behind_dead_letters():
                        continue
                incidents = self.step(self.correlator, int(time.time() * S), flush=True)
                if self.step.last_error is not None:  # caught up, and no incidents can be made: said, not looped
                    raise CorrelateFailed(f"correlator steps fail: {self.step.last_error}")
                if not await self._emit(incidents):
                    continue
                await self._dead_letters_settled(DEAD_LETTER_SETTLE_S)
                await self._commit_safe(set(self.parts))
                return True
        return False

    async def observe(self, fetched: bool = True) -> None:
        """Set, per assigned partition, ``firstfault_consumer_lag_records{topic="fleet.events"}``: records between
        the worker's position and the partition's end as the last fetch saw it (``AIOKafkaConsumer.highwater``),
        kept in ``lag`` for ``/healthz``. Called after each step: a correlate worker falling behind its topic showed
        nothing on /metrics (the ingest worker's lag alone was there: stop 58's list). Not ``fetched`` for
        ``broker_check_s``, it asks the broker for the ends itself (the topics' metadata while it holds no
        partition): a fetch that returns nothing says nothing of a broker that is gone, and its /healthz said ok for
        90 s after the broker stopped (a fresh user's trial)."""
        assert self.consumer is not None
        parts = self.consumer.assignment()
        ends = {tp: self.consumer.highwater(tp) for tp in parts}
        if fetched:
            self._checked, self.broker_error = time.monotonic(), None
        elif time.monotonic() - self._checked > self.broker_check_s:
            self._checked = time.monotonic()
            try:
                asked = self.consumer.end_offsets(list(parts)) if parts else self.consumer.topics()
                got = await asyncio.wait_for(asked, self.ack_patience_s)
                ends = got if parts else ends
                self.broker_error = None
            except (KafkaError, asyncio.TimeoutError) as e:
                self.broker_error = broker_silent(e, self.ack_patience_s)
        for tp, end in ends.items():
            if end is None:  # nothing fetched from it yet
                continue
            try:  # a position not known yet is asked of the broker: bounded, as the ends
                n = max(0, end - await asyncio.wait_for(self.consumer.position(tp), self.ack_patience_s))
            except (IllegalStateError, KafkaError, asyncio.TimeoutError):  # revoked meanwhile; the broker away
                continue
            self.lag[f"{tp.topic}/{tp.partition}"] = n
            LAG.labels(topic=tp.topic, partition=str(tp.partition)).set(n)

    async def _past_unreadable(self, error: UnicodeDecodeError) -> tuple[dict[TopicPartition, list[ConsumerRecord]],
                                                                         dict[TopicPartition, tuple[int, str]]]:
        """Go on past a record aiokafka cannot read, after ``getmany`` raised ``error`` on it: (records, per
        partition, in offset order, as ``getmany`` returns them; per partition, the offset of the record it cannot
        read and the dead letter's reason), for ``run`` to read and dead-letter (``unreadable_record``).

        Kafka's protocol makes a record header's key UTF-8 and the broker does not check it: one record of kcat's
        ``-H $'\\xff\\xfe=v'`` on ``fleet.events`` made ``getmany`` raise at every call, the worker stopped, and so
        did every restart and the partition's next owner, at the same offset (a break-it pass). The records
        ``getmany`` had drained of other partitions in that call are lost from memory, their positions past them:
        each assigned partition goes back to one past the last record the worker read of it (``_Partition.last``;
        where none, to where ``assigned`` set it: the committed offset, or the beginning), so none is lost or read
        twice, and the correlator's state stays. Then each one not paused whose fetches have seen records past that
        offset (``highwater``; unknown counts) is fetched alone, up to ``POLL_RECORDS`` records, one record at a time
        after a fetch raises (``ingest.consumer.fetch_readable``): the records before the one it raises on are
        returned and the worker seeks past that one. Its offset then holds the commit (``_Partition.dead``) until
        the broker acknowledges its dead letter, and the commit passes it after (the last record of its partition
        too): a restart does not read it again. Nothing when the assignment is not the one ``assigned`` set up: its
        seeks come."""
        assert self.consumer is not None
        c = self.consumer
        log.error("correlate: a fetch raised %s: %s; finding the records the Kafka client cannot read",
                  type(error).__name__, error, extra={"stage": "fetch", "error_code": UNREADABLE})
        mine = c.assignment()
        if mine != self.ready:
            return {}, {}
        starts: dict[TopicPartition, int | None] = {}
        try:
            for tp in sorted(mine):
                p = self.parts.get(tp)
                starts[tp] = p.last + 1 if p is not None and p.last >= 0 else self.committed.get(tp)
                if starts[tp] is None:
                    await c.seek_to_beginning(tp)  # as ``assigned`` did: no offset committed
                else:
                    c.seek(tp, starts[tp])
        except IllegalStateError:  # a rebalance meanwhile: ``assigned`` seeks them
            return {}, {}
        data: dict[TopicPartition, list[ConsumerRecord]] = {}
        unreadable: dict[TopicPartition, tuple[int, str]] = {}
        paused = self._paused()
        for tp in sorted(mine - paused):
            end, start = c.highwater(tp), starts[tp]
            if end is not None and start is not None and start >= end:  # nothing fetched past it: not the one
                continue
            got = await fetch_readable(c, tp, max_records=POLL_RECORDS, timeout_ms=REFETCH_WAIT_MS)
            if got.records:
                data[tp] = got.records
            if got.unreadable is not None:
                assert got.error is not None
                try:
                    c.seek(tp, got.unreadable + 1)
                except IllegalStateError:  # revoked meanwhile: its new owner finds it
                    continue
                unreadable[tp] = (got.unreadable, unreadable_reason(got.error))
                log.error("correlate: unreadable record %s/%d/%d (to %s): %s", tp.topic, tp.partition,
                          got.unreadable, self.dlq_topic, got.error,
                          extra={"stage": "correlate", "error_code": UNREADABLE})
        return data, unreadable

    def _pause_behind_dead_letters(self) -> int:
        """Stop fetching a partition that holds ``held_behind_dead_max`` records or more behind a dead letter the
        broker has not acknowledged (``consumer.pause``; logged, ``error_code`` ``partition_paused``, and shown by
        ``paused_partitions``), and fetch it again once every letter of it is in: a DLQ that refuses for hours
        (a broker away, a letter past the topic's ``max.message.bytes``) no longer grows ``_Partition.held`` by
        every record read meanwhile. The other partitions go on. Returns how many partitions it fetches again.

        ``run(until_caught_up=True)`` counts a paused partition as caught up once the others are, then gives its
        letters ``DEAD_LETTER_SETTLE_S``: fetched again if they went in, it is read to its end; if not, its commit
        stays before the letter, the run ends saying so (``unread_partitions``) and its records are read again next
        time."""
        assert self.consumer is not None
        resumed = 0
        for tp, p in self.parts.items():
            try:
                if p.paused and not p.dead:
                    self.consumer.resume(tp)
                    p.paused = False
                    resumed += 1
                    log.warning("correlate: %s/%d fetched again: its dead letters are in", tp.topic, tp.partition)
                elif not p.paused and p.dead and len(p.held) >= self.held_behind_dead_max:
                    self.consumer.pause(tp)
                    p.paused = True
                    log.error("correlate: %s/%d paused: %d records held behind %d dead letter(s) the broker has not "
                              "acknowledged (see dead_letter_failed); fetched again once they are in", tp.topic,
                              tp.partition, len(p.held), len(p.dead),
                              extra={"stage": "correlate", "error_code": "partition_paused"})
            except IllegalStateError:  # revoked meanwhile: the next assignment starts over (``assigned``)
                continue
        PAUSED_PARTITIONS.set(self.paused_partitions)
        DEAD_LETTERS_PENDING.set(self.dead_letters_pending)
        return resumed

    def _paused(self) -> set[TopicPartition]:
        """The partitions paused behind dead letters (of a copy of ``parts``: the endpoint's thread asks too)."""
        return {tp for tp, p in list(self.parts.items()) if p.paused}

    @property
    def unread_partitions(self) -> list[str]:
        """``topic/partition`` of the partitions paused behind dead letters (not read to their ends)."""
        return sorted(f"{tp.topic}/{tp.partition}" for tp in self._paused())

    def health(self) -> dict[str, Any]:
        """What the worker's ``/healthz`` says (``api.app.create_worker_app``): ``ok`` false with the ``reason``
        while its steps raise (``StepGuard``), the incidents cannot be stored (``_emit``) or the broker does not
        answer (``observe``, ``_commit_safe``); its counts: records read, rebalances, dead letters acknowledged /
        not yet / failed tries, paused partitions, store and lake read failures, failed steps; ``lag``: records
        behind each partition's end (``observe``). ``firstfault_correlate_healthy`` reads its ``ok``."""
        reason = (f"correlator steps fail: {self.step.last_error}" if self.step.last_error is not None
                  else f"incidents not stored: {self.last_store_error}" if self.last_store_error is not None
                  else self.commit_error or self.broker_error or "")
        return {"ok": not reason, "reason": reason, "records": self.records, "rebalances": self.rebalances,
                "dead_lettered": self.dead_lettered, "dead_letters_pending": self.dead_letters_pending,
                "dead_letter_failures": self.dead_letter_failures, "paused_partitions": self.paused_partitions,
                "store_failures": self.store_failures, "read_back_failures": self.read_back_failures,
                "facts_read_back_failures": self.facts_read_back_failures, "correlate_failures": self.step.failures,
                "lag": dict(self.lag)}

    @property
    def dead_letters_pending(self) -> int:
        """Dead letters the broker has not acknowledged yet (their records hold their partitions' commits)."""
        return sum(len(p.dead) for p in list(self.parts.values()))  # a copy: the endpoint's thread asks too

    @property
    def paused_partitions(self) -> int:
        """Partitions not fetched while their dead letters wait for the broker (``_pause_behind_dead_letters``)."""
        return len(self._paused())

    async def _dead_letter(self, bad: list[tuple[_Partition, ConsumerRecord | Unreadable, str]]) -> bool:
        """Send the dead letters of records the worker cannot read, ``bad`` (partition state, record, the decode
        error's text), to ``dlq_topic`` and await the broker's acknowledgements; each record no longer holds the
        commit once its own is in. One dead letter per record (``ingest.consumer.dead_letters``): ``ff-error-code``
        ``bad_events_record``, ``ff-reason`` the error, ``ff-origin`` ``kafka:<topic>/<partition>/<offset>``, the
        record's key and headers kept, a null value's dead letter a tombstone; a record the Kafka client could not
        read (:class:`Unreadable`, ``_past_unreadable``): ``unreadable_record``, an empty value and its coordinates
        as the key. ``run`` starts it as a task of its own (:meth:`_dead_letter_later`): correlation goes on meanwhile.

        A try the broker does not acknowledge (a ``KafkaError``: aiokafka gives up on a record after
        ``request_timeout_ms``, 40 s; one it refuses, a letter larger than the topic takes) is logged (``error_code``
        ``dead_letter_failed``), counted (``firstfault_correlate_dead_letter_failures_total``) and made again, for the
        letters not yet acknowledged only, after a back-off of 0.5 s doubling to 30 s, with a new producer when the
        broker lost the old one's idempotence state; meanwhile nothing is committed past those records. False when
        ``stop`` is set first (the records still hold the commit: the next owner of their partitions reads them
        again)."""
        rejects = [Reject(f"kafka:{r.topic}/{r.partition}/{r.offset}", why, b"", UNREADABLE)
                   if isinstance(r, Unreadable) else
                   Reject(f"kafka:{r.topic}/{r.partition}/{r.offset}", why, r.value or b"", BAD_RECORD)
                   for _, r, why in bad]
        read = [r for _, r, _ in bad if not isinstance(r, Unreadable)]
        nulls = {f"kafka:{r.topic}/{r.partition}/{r.offset}" for r in read if r.value is None}
        letters = dead_letters(rejects, originals_of(read, rejects), nulls)  # one per record
        pending = [(p, r.offset, letter) for (p, r, _), letter in zip(bad, letters)]
        wait, renew = _Backoff(), False
        while True:
            pending = [x for x in pending if x[1] in x[0].dead]  # not yet acknowledged
            if not pending:
                return True
            attempt = asyncio.ensure_future(self._send(pending, renew))
            stop = asyncio.ensure_future(self.stop.wait())
            await asyncio.wait({attempt, stop}, return_when=asyncio.FIRST_COMPLETED)
            stop.cancel()
            if not attempt.done():
                attempt.cancel()
                await asyncio.gather(attempt, return_exceptions=True)
                return False
            try:
                attempt.result()
                continue
            except Exception as e:  # noqa: BLE001 — a KafkaError, or any other: said and tried again, never a task
                # that ends silently with its record holding the commit for good (a break-it pass)
                renew = renew or isinstance(e, (OutOfOrderSequenceNumber, UnknownProducerId))
                self.dead_letter_failures += 1
                DEAD_LETTER_FAILURES.inc()
                left = sum(1 for x in pending if x[1] in x[0].dead)
                delay = wait.failed()
                log.error("correlate: %d dead letter(s) not acknowledged (%s: %s); no commit past them, retrying in "
                          "%.1f s", left, type(e).__name__, e, delay,
                          extra={"stage": "correlate", "error_code": "dead_letter_failed"})
            try:
                await asyncio.wait_for(self.stop.wait(), delay)
                return False
            except asyncio.TimeoutError:
                pass

    def _dead_letter_later(self, bad: list[tuple[_Partition, ConsumerRecord | Unreadable, str]]) -> None:
        """:meth:`_dead_letter` as a task of its own: a dead letter the broker refuses for minutes (a DLQ topic whose
        ``max.message.bytes`` the letter passes, a broker away) held every partition's correlation and its pages while
        ``run`` awaited it (a break-it pass); now only the commit of its records' partitions waits."""
        task = asyncio.ensure_future(self._dead_letter(bad))
        self._dead_letter_tasks.add(task)
        task.add_done_callback(self._dead_letter_tasks.discard)

    async def _dead_letters_settled(self, timeout_s: float) -> None:
        """Wait at most ``timeout_s`` for the dead letters still being sent (``run(until_caught_up=True)``, before its
        last commit: a letter acknowledged by then lets the commit pass its record)."""
        if self._dead_letter_tasks:
            await asyncio.wait(set(self._dead_letter_tasks), timeout=timeout_s)

    async def _stop_dead_letters(self) -> None:
        """Cancel the dead letters still being sent (:meth:`_dead_letter_later`): their records hold the commit."""
        tasks = list(self._dead_letter_tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def _dead_acked(self, p: _Partition, offset: int, code: str) -> None:
        p.dead.discard(offset)
        DEAD_LETTERS.labels(error_code=code).inc()
        self.dead_lettered += 1

    async def _send(self, pending: list[tuple[_Partition, int, tuple[bytes | None, bytes | None,
                                                                     list[tuple[str, bytes]]]]],
                    renew: bool) -> None:
        """Send ``pending`` dead letters ((partition state, offset, (key, value, headers))) to ``dlq_topic`` and
        await each acknowledgement, marking each record as it comes (:meth:`_dead_acked`); first a new producer in
        place of the old one when ``renew`` (the broker lost its idempotence state: after a broker restart it
        answers every send with ``OutOfOrderSequenceNumber``). Raises the first error (a ``KafkaError`` most often)
        after the acknowledgements of the letters sent before it."""
        if renew:
            self.producer = await renewed_producer(self.bootstrap, self.producer)
        assert self.producer is not None
        sent, error = [], None
        for p, off, (key, value, headers) in pending:
            code = dict(headers)["ff-error-code"].decode()
            try:
                sent.append((p, off, code,
                             await self.producer.send(self.dlq_topic, value=value, key=key, headers=headers)))
            except Exception as e:  # noqa: BLE001 — said by _dead_letter, which tries again
                error = e
                break
        for p, off, code, fut in sent:
            try:
                await fut
            except Exception as e:  # noqa: BLE001
                error = error or e
                continue
            self._dead_acked(p, off, code)
        if error is not None:
            raise error

    async def _read_back(self) -> None:
        """Read back from the lake the faults of stored incidents on the hosts these partitions carry
        (``StreamCorrelator.to_read_back``), kept aside (cold) for watchdog timeouts that come hours later: the
        replay from the safe offset does not hold them. When the lake cannot be read (``read_back`` raises),
        log it (``error_code`` ``read_back_failed``) and ask again after a back-off of 0.5 s doubling to 30 s."""
        wanted = self.correlator.to_read_back()
        if not wanted:
            return
        try:
            table = await asyncio.get_running_loop().run_in_executor(None, self.read_back, wanted)
        except Exception as e:  # an injected lake read (api.sink.IncidentSink.incident_events): storage errors
            self.correlator.read_back_failed(wanted)
            self.read_back_failures += 1
            log.error("correlate: could not read back the events of %d stored incidents (%s); retrying in %.1f s",
                      len(wanted), e, self.read_back_wait.failed(),
                      extra={"stage": "restore", "error_code": "read_back_failed"})
            return
        self.correlator.add_cold(table, wanted)
        self.read_back_wait.ok()

    async def _read_facts(self) -> None:
        """Read back from the lake the latest link samples and topology facts (``read_facts``:
        ``api.sink.IncidentSink.host_facts``) of the hosts this worker has begun to see (``facts_wanted``: their
        events came, after a start, a rebalance, or for the first time: a host whose key changed from
        ``host:<h>`` to ``comm:<c>`` comes to another partition), and hand them to the correlator before what it
        holds (``StreamCorrelator.add_older_facts``): facts published before the replay's start (a ``topo -m`` at
        boot, link states sampled an hour ago) or under the host's earlier key, which the single process knows.
        At most ``FACTS_HOSTS_PER_READ`` hosts (the first seen) per read, in one lake query per table, off the
        event loop; the others at the next pass of the loop. Each host is read once until the next rebalance or
        restart; a read a rebalance overtook is dropped (the fresh correlator asks again for the hosts its partitions
        bring). Each host's time (its anchor) is its watermark (``StreamCorrelator.host_watermarks``: its clock), or
        when it was first seen if its events give none, but never after now.

        When the lake cannot be read (``read_facts`` raises), it is logged (``error_code``
        ``facts_read_back_failed``), counted (``facts_read_back_failures``,
        ``firstfault_correlate_facts_read_back_failures_total``) and asked again after a back-off of 0.5 s doubling
        to 30 s; correlation goes on meanwhile with the facts the stream brings.

        In the same read (``read_delays``: ``api.sink.IncidentSink.append_delays``) the summary of those hosts'
        append delays over every event the lake holds, merged into the correlator's (``AppendDelays.merge``): its
        replay starts at the safe offset, and a host whose fastest lines came before it read a looser clock bound
        than ``firstfault run`` (which reads the lake's summary when it restarts) and the batch over the same lake,
        and other incidents. Only the hosts of the worker's own partitions are read: the hosts its events name."""
        hosts = list(self.facts_wanted)[:FACTS_HOSTS_PER_READ]
        now = int(time.time() * S)
        marks = {h: wm.value(self.correlator.settings.clocks) for h in hosts
                 if (wm := self.correlator.host_watermarks.get(h)) is not None}
        anchors = {h: min(now, self.facts_wanted[h] if marks.get(h) is None else marks[h]) for h in hosts}
        correlator = self.correlator

        def read() -> tuple[pa.Table | None, pa.Table | None, AppendDelays | None]:
            samples, topology = self.read_facts(anchors) if self.read_facts is not None else (None, None)
            return samples, topology, self.read_delays(anchors) if self.read_delays is not None else None

        try:
            samples, topology, delays = await asyncio.get_running_loop().run_in_executor(None, read)
        except Exception as e:  # an injected lake read (api.sink.IncidentSink.host_facts): storage errors
            self.facts_read_back_failures += 1
            FACTS_READ_BACK_FAILURES.inc()
            log.error("correlate: could not read back the link samples, topology and clocks of %d host(s) (%s); "
                      "retrying in %.1f s", len(hosts), e, self.facts_wait.delay,
                      extra={"stage": "restore", "error_code": "facts_read_back_failed"})
            if self.correlator is not correlator:  # a rebalance meanwhile started over, its back-off too
                return
            self.facts_wait.failed()
            return
        if self.correlator is not correlator:  # a rebalance while the lake was read: its fresh correlator (and
            return  # ``facts_wanted``) asks again for the hosts its partitions bring (a KeyError crashed the worker)
        self.correlator.add_older_facts(samples, topology)
        if delays is not None:
            self.correlator.delays.merge(delays)
        for h in hosts:
            del self.facts_wanted[h]
        self.facts_read.update(hosts)
        self.facts_wait.ok()

    async def _emit(self, incidents: list[dict[str, Any]]) -> bool:
        """Hand incidents to ``on_incidents``; False (and a pause) when they could not be stored. Nothing is
        committed then: the sink keeps the versions and stores them on a later call (``api.sink``), and a
        crash meanwhile replays from the safe offset."""
        try:
            self.on_incidents(incidents)
        except OSError as e:  # ingest.lake.LakeError is an OSError: a read-only or full lake
            self.store_failures += 1
            self.last_store_error = str(e) or type(e).__name__
            wait = self.store_wait.failed()
            log.error("correlate: incidents not stored (%s); retrying in %.1f s", e, wait,
                      extra={"stage": "store", "error_code": "store_failed"})
            await asyncio.sleep(wait)
            return False
        if self.store_failures and self.store_wait.delay > 0.5:
            log.warning("correlate: incidents stored again")
        self.last_store_error = None
        self.store_wait.ok()
        return True

    async def _caught_up(self, but: set[TopicPartition] = frozenset()) -> bool:
        """Whether every assigned partition but ``but`` (paused ones) has been read to its end offset, into the
        state ``assigned`` set up for them (``ready``)."""
        assert self.consumer is not None
        parts = self.consumer.assignment()
        if parts != self.ready:
            return False
        if not parts:  # none, as ``assigned`` set up: the group's other members hold them all (more members than
            # partitions): nothing to read (a --once run beside running workers waited for good: a break-it pass)
            return True
        ends = await self.consumer.end_offsets(list(parts))
        for tp in parts - but:
            try:
                if await self.consumer.position(tp) < ends[tp]:
                    return False
            except IllegalStateError:  # a rebalance took it during an await: not caught up yet
                return False
        return True

    def safe_offsets(self, tps: set[TopicPartition]) -> dict[TopicPartition, int]:
        """Per partition: the first record whose events the correlator still holds (or one past the last),
        in its events or as the membership lines of live communicators (``StreamCorrelator.wiring``: a replay
        from a later offset would not name the ranks of a job that started before it) — unless the worker
        reads those lines back when it starts over (``restore_events``, from the lake): then a job that
        finished and left its GPUs idle does not hold the commit (and the replay after a restart) for days.

        Records of link samples or topology facts hold no events: they never hold the commit themselves. Those right
        before the first record still held stay with it (the ingest worker publishes a domain's facts of a batch
        just before its events), so a replay brings the facts of the events it replays; so do those at the end that
        the latest poll read (``_Partition.tail_from``): a fetch may end between a batch's facts and its events,
        and the commit passed the facts before their events came (a break-it pass: a restart then said "up:
        unknown"). Older ones a worker that starts over reads back from the lake (``read_facts``, ``_read_facts``)
        when the hosts' events come.

        A record whose dead letter the broker has not acknowledged yet (``_Partition.dead``) holds the commit too:
        never past it, until the acknowledgement comes (``_dead_letter``)."""
        keep = self.correlator.events
        wiring = self.correlator.wiring if self.restore_events is None else {}
        out = {}
        for tp in tps:
            p = self.parts.get(tp)
            if p is None or p.last < 0:
                continue
            drop = run = 0  # records before the first still held; of them, the facts records right before it
            for off, ids in p.held:
                if off in p.dead:  # a record whose dead letter the broker has not acknowledged yet
                    break
                if ids is None:  # link samples or topology facts: held only as the run before held events
                    run += 1
                    continue
                if any(e in keep or e in wiring for e in ids):
                    break
                drop, run = drop + run + 1, 0
            else:  # nothing held: all go but the facts at the end the latest poll read, whose events may come next
                tail = 0
                for off, ids in reversed(p.held):
                    if ids is not None or off < p.tail_from:
                        break
                    tail += 1
                drop = len(p.held) - tail
            for _ in range(drop):
                p.held.popleft()
            out[tp] = p.held[0][0] if p.held else p.last + 1
        return out

    async def _commit_safe(self, tps: set[TopicPartition]) -> None:
        """Commit the safe offsets of ``tps`` that moved since the worker's last commit (an idle worker committed
        the same offsets every tick). A commit the broker has not acknowledged within ``ack_patience_s`` makes the
        worker unhealthy ("kafka: …") while it waits: a commit to a broker that is gone waits without end, and the
        worker's /healthz said ok for good (a break-it pass)."""
        assert self.consumer is not None
        offsets = {tp: o for tp, o in self.safe_offsets(tps).items() if self.committed.get(tp) != o}
        if not offsets:
            return
        task = asyncio.ensure_future(self.consumer.commit(offsets))
        try:
            if not (await asyncio.wait({task}, timeout=self.ack_patience_s))[0]:
                self.commit_error = (f"kafka: the broker did not acknowledge a commit within "
                                     f"{self.ack_patience_s:g} s; waiting for it")
                log.warning("correlate: %s", self.commit_error)
            await task
            self.committed.update(offsets)
        except KafkaError as e:  # a rebalance in progress: the next owner replays a little more
            log.warning("correlate: commit failed (%s); replay will cover it", e)
        finally:
            self.commit_error = None


class _Listener(ConsumerRebalanceListener):
    def __init__(self, worker: CorrelateWorker) -> None:
        self.worker = worker

    async def on_partitions_revoked(self, revoked):
        await self.worker.revoked(set(revoked))

    async def on_partitions_assigned(self, assigned):
        await self.worker.assigned(set(assigned))
