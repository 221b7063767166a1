"""The correlate worker's poison records go to the dead-letter topic with their reason, as the ingest worker's do.

A ``fleet.events`` record the correlate worker cannot read (a corrupt Arrow stream, a header naming a table it does
not read, a null value, rows that do not fit the schema) was logged (``bad_events_record``) and skipped: gone from
the worker's view with nothing kept. It now becomes one dead-letter record (``ingest.consumer.dead_letters``: headers
``ff-reason``, ``ff-error-code``, ``ff-origin``, the original key and headers kept), acknowledged by the broker
before any commit moves past it."""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import subprocess
import time
from collections import deque
from datetime import datetime, timezone

import pytest
from aiokafka import TopicPartition
from aiokafka.errors import KafkaTimeoutError
from prometheus_client import REGISTRY

from benchmarks.crash import read_topic
from correlate.consumer import CorrelateWorker, _Partition
from correlate.correlator import Settings
from ingest.decode import Decoded, Segment
from ingest.publish import TABLE_HEADER, encode
from tests.kafka_helpers import correlate_records
from tests.test_reliability_input import _create, xid


#: an informational line (``host.apei_hardware_error``, severity info): no fault
CORRECTED = b"{35}[Hardware Error]: event severity: corrected"


def _events(pipeline, lines: dict[str, bytes], ts_us: int):
    """The pure pipeline's events of one line per host (``lines``: host -> line after ``kernel:``), each stamped
    ``ts_us`` (µs since the epoch) in the line: a time of the line's own moves its host's watermark, an arrival
    time does not."""
    stamp = datetime.fromtimestamp(ts_us / 1e6, timezone.utc).isoformat()
    segs = [Segment(data=f"{stamp} {host} kernel: ".encode() + line, origin=f"t:{host}", stream=host, host=host,
                    ref_ts=ts_us, ref_basis="kafka", ingest_ts=ts_us) for host, line in lines.items()]
    events = pipeline.run(Decoded(segments=segs)).events
    assert events.num_rows == len(lines) and set(events.column("ts_basis").to_pylist()) == {"line"}
    return events


def _worker(**kw) -> CorrelateWorker:
    return CorrelateWorker(bootstrap="127.0.0.1:9", topic="t", group_id="g", dlq_topic="d", settings=Settings(),
                           lateness_us=1, on_incidents=lambda incs: None, **kw)  # never started


def test_a_record_whose_dead_letter_is_not_acknowledged_holds_the_commit():
    """A record whose dead letter the broker has not acknowledged yet (``_Partition.dead``) holds the safe offset at
    it, with the facts records right before it; once acknowledged, the commit passes it."""
    w = _worker()
    tp = TopicPartition("t", 0)
    w.parts = {tp: _Partition(held=deque([(0, []), (1, None), (2, []), (3, [])]), last=3, dead={2})}
    assert w.safe_offsets({tp}) == {tp: 1}
    w.parts[tp].dead.discard(2)
    assert w.safe_offsets({tp}) == {tp: 4}


class _FlakyProducer:
    """A producer whose first ``fail`` sends raise ``KafkaTimeoutError`` (a broker away); then it acknowledges,
    keeping what it was given: (topic, key, value, headers)."""

    def __init__(self, fail: int) -> None:
        self.fail, self.sent = fail, []

    async def send(self, topic, value=None, key=None, headers=None):
        if self.fail:
            self.fail -= 1
            raise KafkaTimeoutError("no broker")
        self.sent.append((topic, key, value, headers))
        f = asyncio.get_running_loop().create_future()
        f.set_result(None)
        return f


def test_a_dead_letter_the_broker_does_not_acknowledge_is_said_counted_and_sent_again(caplog):
    """Until the broker acknowledges a dead letter, each failed try is logged (``dead_letter_failed``) and counted,
    its record holds the commit, and the worker tries again after a back-off; a ``stop`` meanwhile ends the wait
    with the record still holding the commit."""
    from aiokafka.structs import ConsumerRecord

    from correlate.metrics import DEAD_LETTER_FAILURES

    rec = ConsumerRecord("t", 0, 7, 0, 0, b"host:n1", b"junk", None, 4, 4, [("h", b"v")])

    async def go(fail: int, stop: bool) -> tuple[CorrelateWorker, _Partition, bool]:
        w = _worker()
        w.producer = _FlakyProducer(fail)
        p = _Partition(held=deque([(7, [])]), last=7, dead={7})
        w.parts = {TopicPartition("t", 0): p}
        if stop:
            asyncio.get_running_loop().call_later(0.2, w.stop.set)
        done = await asyncio.wait_for(w._dead_letter([(p, rec, "bad bytes")]), 10)
        return w, p, done

    before = DEAD_LETTER_FAILURES._value.get()
    with caplog.at_level(logging.ERROR, logger="firstfault.correlate"):
        w, p, done = asyncio.run(go(fail=1, stop=False))
    assert done and w.dead_letter_failures == 1 and DEAD_LETTER_FAILURES._value.get() == before + 1
    assert [r for r in caplog.records if getattr(r, "error_code", None) == "dead_letter_failed"]
    [(topic, key, value, headers)] = w.producer.sent
    h = dict(headers)
    assert (topic, key, value, h["h"], h["ff-origin"]) == ("d", b"host:n1", b"junk", b"v", b"kafka:t/0/7")
    assert not p.dead and w.safe_offsets(set(w.parts)) == {TopicPartition("t", 0): 8} and w.dead_lettered == 1

    w, p, done = asyncio.run(go(fail=10**6, stop=True))
    assert not done and p.dead == {7} and w.safe_offsets(set(w.parts)) == {TopicPartition("t", 0): 7}


def test_a_null_record_without_a_key_gets_a_dead_letter_kafka_takes():
    """A record with no key and a null value: its dead letter, a tombstone, needs a key (Kafka takes no record with
    neither; aiokafka's assertion ended the sending task silently, its record holding the commit for good: a break-it
    pass): its coordinates."""
    from ingest.consumer import dead_letters
    from ingest.decode import Reject

    rj = Reject("kafka:fleet.events/0/5", "an empty events record", b"", "bad_events_record")
    [(key, value, headers)] = dead_letters([rj], {"kafka:fleet.events/0/5": (None, [])}, {"kafka:fleet.events/0/5"})
    assert (key, value, dict(headers)["ff-origin"]) == (b"kafka:fleet.events/0/5", None, b"kafka:fleet.events/0/5")


def test_a_dead_letter_the_broker_keeps_refusing_holds_its_partitions_commit_and_nothing_else():
    """A dead letter the broker refuses for minutes (a DLQ topic whose max.message.bytes it passes) held every
    partition's correlation and pages while the worker awaited it (a break-it pass). It is sent in a task of its own:
    only its record's partition's commit waits, another partition's passes; a retry sends only the letters not yet
    acknowledged (each reached the DLQ once); close() ends the task with the record still holding the commit."""
    from aiokafka.structs import ConsumerRecord

    class _Refusing(_FlakyProducer):  # refuses one key for ever, acknowledges the others
        async def send(self, topic, value=None, key=None, headers=None):
            if key == b"host:big":
                raise KafkaTimeoutError("MessageSizeTooLarge")
            return await super().send(topic, value=value, key=key, headers=headers)

        async def stop(self) -> None:
            pass

    async def go() -> tuple[CorrelateWorker, _Partition, _Partition]:
        w = _worker()
        w.producer = _Refusing(0)
        a = _Partition(held=deque([(3, []), (4, [])]), last=4, dead={3, 4})
        b = _Partition(held=deque([(9, [])]), last=9)
        w.parts = {TopicPartition("t", 0): a, TopicPartition("t", 1): b}
        recs = [ConsumerRecord("t", 0, o, 0, 0, k, b"x", None, 1, 1, [])
                for o, k in ((3, b"host:n1"), (4, b"host:big"))]
        w._dead_letter_later([(a, r, "bad") for r in recs])  # returns at once: run() goes on
        await asyncio.sleep(1.0)  # two tries at least (0.5 s back-off)
        assert w._dead_letter_tasks and w.dead_letter_failures >= 2
        await w.close()
        return w, a, b

    w, a, b = asyncio.run(go())
    assert [key for _, key, _, _ in w.producer.sent] == [b"host:n1"] and w.dead_lettered == 1
    assert a.dead == {4} and not w._dead_letter_tasks
    assert w.safe_offsets(set(w.parts)) == {TopicPartition("t", 0): 4, TopicPartition("t", 1): 10}


@pytest.mark.kafka
def test_the_correlate_workers_undecodable_records_go_to_the_dead_letter_topic_with_their_reason(kafka, pipeline):
    """Five records on one partition: a good events record, random bytes, a record whose ``firstfault-table``
    header names a table this version does not read, a null value and another good record. The DLQ topic then
    holds exactly three dead letters, ``ff-error-code`` ``bad_events_record``, ``ff-origin`` naming each bad
    record's offset, ``ff-reason`` its cause, its key and headers kept, the null value's a tombstone; both good
    records' Xids are incidents; and the committed offset is past all five.

    The two Xids are stamped 3 h ago and a sixth record brings an informational line of both hosts stamped now:
    it moves their watermarks, so the Xids' incidents, emitted, no longer hold their records (the correlator keeps
    them aside, cold) and only that sixth record holds the commit (offset 5). Without it the first record would
    hold the commit at 0, whatever the bad records do."""
    now_us = int(time.time() * 1_000_000)
    first = _events(pipeline, {"node31": xid("3a")}, now_us - 3 * 3600 * 1_000_000)
    second = _events(pipeline, {"node32": xid("3b")}, now_us - 3 * 3600 * 1_000_000)
    later = _events(pipeline, {"node31": CORRECTED, "node32": CORRECTED}, now_us)
    topic = f"cdlq.{time.time_ns()}"
    dlq = f"{topic}.dlq"
    asyncio.run(_create(kafka, [topic, dlq], big=False))
    junk = os.urandom(512)
    records = [  # (key, value, headers), at offsets 0 to 5 of partition 0
        (b"host:node31", encode(first), []),
        (b"host:node40", junk, [("trace", b"t-1")]),
        (b"host:node41", b"\x00", [(TABLE_HEADER, b"gpu_temps")]),
        (b"host:node42", None, []),
        (b"host:node32", encode(second), []),
        (b"host:node31", encode(later), []),
    ]

    incidents, w, committed = asyncio.run(correlate_records(kafka, topic, records, dlq_topic=dlq))
    assert committed == 5 and w.records == 6
    # caught up and healthy, as its /metrics and /healthz say (a correlate worker had no lag series: stop 58's list)
    lag = w.health()["lag"]  # partition 1, which nothing was sent to, once the idle worker asked the broker
    assert lag.get(f"{topic}/0") == 0 and set(lag) <= {f"{topic}/0", f"{topic}/1"} and set(lag.values()) == {0}, lag
    assert REGISTRY.get_sample_value("firstfault_consumer_lag_records", {"topic": topic, "partition": "0"}) == 0
    assert REGISTRY.get_sample_value("firstfault_correlate_healthy") == 1
    xids = sorted((i["initiator"]["host"], i["initiator"]["device"]) for i in incidents
                  if i["category"] == "gpu_off_bus")
    assert xids == [("node31", "0000:3a:00.0"), ("node32", "0000:3b:00.0")], incidents
    dead = sorted(read_topic(kafka, dlq, 2), key=lambda r: dict(r.headers)["ff-origin"])
    assert len(dead) == 3 and w.dead_lettered == 3, [dict(r.headers) for r in dead]
    heads = [dict(r.headers) for r in dead]
    assert [h["ff-error-code"] for h in heads] == [b"bad_events_record"] * 3
    assert [h["ff-origin"] for h in heads] == [f"kafka:{topic}/0/{o}".encode() for o in (1, 2, 3)]
    assert [r.key for r in dead] == [b"host:node40", b"host:node41", b"host:node42"]
    corrupt, unknown, tombstone = dead
    assert corrupt.value == junk and heads[0]["trace"] == b"t-1" and heads[0]["ff-reason"]
    assert b"'gpu_temps'" in heads[1]["ff-reason"] and heads[1][TABLE_HEADER] == b"gpu_temps"
    assert unknown.value == b"\x00"
    assert tombstone.value is None and b"an empty events record" in heads[2]["ff-reason"]


@pytest.mark.kafka
def test_a_partition_whose_dead_letter_the_dlq_refuses_is_paused_until_the_letter_is_in(kafka, pipeline):
    """A dead letter the DLQ refuses (its ``max.message.bytes`` below the letter) held the commit while the worker
    kept reading the partition: ``_Partition.held`` grew by every record read meanwhile, without bound (stop 57's
    note). With 2,600 records behind the refused letter and ``held_behind_dead_max`` 100, the worker pauses the
    partition after its first poll (at most 1,000 records read), logs ``partition_paused``, and reads nothing more of
    it; once the topic takes larger records (an operator's fix, through the admin API), the letter goes, the
    partition is fetched again, every record is read, and the commit passes the letter's record."""
    from aiokafka.admin import AIOKafkaAdminClient
    from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

    topic, dlq, n = f"cpause.{time.time_ns()}", f"cpause.{time.time_ns()}.dlq", 2_600

    async def go() -> tuple[CorrelateWorker, int, int, int | None, list[str]]:
        admin = AIOKafkaAdminClient(bootstrap_servers=kafka)
        await admin.start()
        try:
            await _behind_a_refused_letter(kafka, pipeline, topic, dlq, n)
            w = CorrelateWorker(bootstrap=kafka, topic=topic, group_id=topic, dlq_topic=dlq, settings=Settings(),
                                lateness_us=300_000_000, on_incidents=lambda incs: None, held_behind_dead_max=100)
            await w.start()
            try:
                task = asyncio.create_task(w.run())
                tp = TopicPartition(topic, 0)
                for _ in range(300):  # paused after the first poll's records
                    await asyncio.sleep(0.1)
                    if w.paused_partitions:
                        break
                assert w.consumer.paused() == {tp} and w.parts[tp].dead == {0}
                await asyncio.sleep(2.0)  # the letter still refused: nothing more read
                read_while_paused = w.records
                failures = w.dead_letter_failures
                await admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, dlq,
                                                          configs={"max.message.bytes": str(1 << 20)})])
                for _ in range(600):  # the letter goes at its next try (back-off ≤ 4 s by now), then the rest
                    await asyncio.sleep(0.1)
                    if w.records == n + 1 and not w.paused_partitions:
                        break
                w.stop.set()
                await asyncio.wait_for(task, 30)
                await w._commit_safe({tp})
                committed = await w.consumer.committed(tp)
            finally:
                await w.close()
            return w, read_while_paused, failures, committed, [r.getMessage() for r in logs.records]
        finally:
            await admin.close()

    logs = _Collect()
    logging.getLogger("firstfault.correlate").addHandler(logs)
    try:
        w, read_while_paused, failures, committed, said = asyncio.run(go())
    finally:
        logging.getLogger("firstfault.correlate").removeHandler(logs)
    assert 100 <= read_while_paused <= 1_001 and failures >= 1, (read_while_paused, failures)
    assert w.records == n + 1 and w.dead_lettered == 1 and not w.paused_partitions
    assert committed == 1, committed  # past the letter's record; the next holds its events (an open window)
    assert [r for r in logs.records if getattr(r, "error_code", None) == "partition_paused"]
    assert any("fetched again" in m for m in said)
    [letter] = read_topic(kafka, dlq, 1)
    assert dict(letter.headers)["ff-origin"] == f"kafka:{topic}/0/0".encode()


class _Collect(logging.Handler):
    """Keeps the records it is given (caplog does not see records of an ``asyncio.run`` in another test's loop)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


async def _behind_a_refused_letter(kafka: str, pipeline, topic: str, dlq: str, n: int) -> None:
    """Topics ``topic`` (one partition) and ``dlq`` (``max.message.bytes`` 2,000); at offset 0 of ``topic`` 8 kB of
    junk, whose dead letter the DLQ refuses; then ``n`` records of an informational event (node51)."""
    from aiokafka.admin import AIOKafkaAdminClient, NewTopic
    from aiokafka.producer import AIOKafkaProducer

    info = encode(_events(pipeline, {"node51": CORRECTED}, int(time.time() * 1_000_000)))
    admin = AIOKafkaAdminClient(bootstrap_servers=kafka)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(topic, 1, 1),
                                   NewTopic(dlq, 1, 1, topic_configs={"max.message.bytes": "2000"})])
    finally:
        await admin.close()
    producer = AIOKafkaProducer(bootstrap_servers=kafka, linger_ms=20)
    await producer.start()
    try:
        futs = [await producer.send(topic, os.urandom(8000), key=b"host:node50", partition=0)]
        futs += [await producer.send(topic, info, key=b"host:node51", partition=0) for _ in range(n)]
        await asyncio.gather(*futs)
    finally:
        await producer.stop()


@pytest.mark.kafka
@pytest.mark.parametrize("accepted", [True, False], ids=["letter-accepted", "letter-refused"])
def test_a_once_run_reads_a_paused_partition_to_its_end_once_its_letter_is_in_or_says_it_did_not(kafka, pipeline,
                                                                                                 monkeypatch, accepted):
    """``run(until_caught_up=True)`` with a partition paused behind a refused dead letter: it said "caught up" and
    `correlate --once` exited 0 with ~10k records of it never read, nothing said (a break-it pass). Now the paused
    partition gets the letters' settle time (2 s here): a letter accepted meanwhile (the DLQ's max.message.bytes
    raised) and the partition is fetched again and read to its end; refused throughout, the run ends with it named
    in ``unread_partitions``, its letter pending and its commit before the letter."""
    import correlate.consumer as consumer
    from aiokafka.admin import AIOKafkaAdminClient
    from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

    monkeypatch.setattr(consumer, "DEAD_LETTER_SETTLE_S", 2.0)
    topic, dlq, n = f"conce.{time.time_ns()}", f"conce.{time.time_ns()}.dlq", 2_600
    tp = TopicPartition(topic, 0)

    async def go() -> tuple[CorrelateWorker, int | None]:
        await _behind_a_refused_letter(kafka, pipeline, topic, dlq, n)
        w = CorrelateWorker(bootstrap=kafka, topic=topic, group_id=topic, dlq_topic=dlq, settings=Settings(),
                            lateness_us=300_000_000, on_incidents=lambda incs: None, held_behind_dead_max=100)
        await w.start()
        try:
            task = asyncio.create_task(w.run(until_caught_up=True))
            while not w.paused_partitions and not task.done():
                await asyncio.sleep(0.05)
            if accepted:
                admin = AIOKafkaAdminClient(bootstrap_servers=kafka)
                await admin.start()
                try:
                    await admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, dlq,
                                                              configs={"max.message.bytes": str(1 << 20)})])
                finally:
                    await admin.close()
            await asyncio.wait_for(task, 90)
            committed = await w.consumer.committed(tp)
        finally:
            await w.close()
        return w, committed

    w, committed = asyncio.run(go())
    if accepted:
        assert (w.records, w.dead_lettered, w.unread_partitions, w.dead_letters_pending) == (n + 1, 1, [], 0)
        assert committed is not None and committed >= 1
    else:
        assert w.records <= 1_001 and w.unread_partitions == [f"{topic}/0"] and w.dead_letters_pending == 1
        assert committed in (None, 0), committed


@pytest.mark.kafka
@pytest.mark.skipif(not shutil.which("kcat"), reason="kcat (a librdkafka producer) sends the header aiokafka cannot")
def test_a_record_whose_header_key_is_not_utf8_is_dead_lettered_and_the_rest_correlated(kafka, pipeline,
                                                                                         monkeypatch):
    """Kafka's protocol makes a header key UTF-8; the broker does not check it and aiokafka's consumer decodes it
    so, raising ``UnicodeDecodeError`` out of ``getmany``: one record of kcat's with header key ``\\xff\\xfe`` on
    ``fleet.events`` stopped the correlate worker, and every restart stopped at the same offset (a break-it pass).

    Two partitions: on 0, an Xid of node61 (3 h ago), such a record, an Xid of node63 and a record of
    informational lines of the four hosts stamped now (it moves their watermarks: the Xids' incidents, emitted, no
    longer hold their records); on 1, an Xid of node62, such a record, an Xid of node64 and such a record, the last
    of its partition. Each unreadable record is dead-lettered once (``unreadable_record``, its coordinates as
    ``ff-origin`` and key, no value), each good record is decoded once (none lost, none read twice), the four Xids
    are incidents, and the commits pass the unreadable records: 3 on partition 0 (the informational record holds
    it), 4 on partition 1 (past its last record). A second worker of the group reads only that informational
    record again and sends no dead letter."""
    import correlate.consumer as consumer
    from tests.kafka_helpers import send_records

    now_us = int(time.time() * 1_000_000)
    old = now_us - 3 * 3600 * 1_000_000
    xids = {h: encode(_events(pipeline, {h: xid(bus)}, old))
            for h, bus in (("node61", "4a"), ("node62", "5a"), ("node63", "4b"), ("node64", "5b"))}
    later = encode(_events(pipeline, {h: CORRECTED for h in xids}, now_us))
    topic = f"chdrkey.{time.time_ns()}"
    dlq = f"{topic}.dlq"
    asyncio.run(_create(kafka, [topic, dlq], big=False))

    def unreadable(partition: int) -> None:
        subprocess.run([b"kcat", b"-P", b"-b", kafka.encode(), b"-t", topic.encode(), b"-p", str(partition).encode(),
                        b"-k", b"host:node66", b"-H", b"\xff\xfe=v"], input=b"x", check=True, timeout=60)

    asyncio.run(send_records(kafka, topic, [(b"host:node61", xids["node61"], [])], partition=0))
    asyncio.run(send_records(kafka, topic, [(b"host:node62", xids["node62"], [])], partition=1))
    unreadable(0)
    unreadable(1)
    asyncio.run(send_records(kafka, topic, [(b"host:node63", xids["node63"], []), (b"host:node61", later, [])],
                             partition=0))
    asyncio.run(send_records(kafka, topic, [(b"host:node64", xids["node64"], [])], partition=1))
    unreadable(1)  # the last record of its partition: the commit passes it too, no restart dead-letters it again

    decoded: list[bytes] = []  # the values the worker decoded, each once
    real = consumer.decode_record

    def decode_record(value, headers):
        decoded.append(value)
        return real(value, headers)

    monkeypatch.setattr(consumer, "decode_record", decode_record)

    async def go() -> tuple[list[dict], CorrelateWorker, dict[int, int | None]]:
        got: list[dict] = []
        w = CorrelateWorker(bootstrap=kafka, topic=topic, group_id=topic, dlq_topic=dlq, settings=Settings(),
                            lateness_us=300_000_000, on_incidents=got.extend)
        await w.start()
        try:
            await asyncio.wait_for(w.run(until_caught_up=True), 120)
            return got, w, {p: await w.consumer.committed(TopicPartition(topic, p)) for p in (0, 1)}
        finally:
            await w.close()

    incidents, w, committed = asyncio.run(go())
    assert sorted(decoded) == sorted([*xids.values(), later]) and w.records == 8
    assert committed == {0: 3, 1: 4} and w.dead_lettered == 3 and w.health()["ok"], (committed, w.health())
    assert sorted({(i["initiator"]["host"], i["initiator"]["device"]) for i in incidents
                   if i["category"] == "gpu_off_bus"}) == [
        ("node61", "0000:4a:00.0"), ("node62", "0000:5a:00.0"), ("node63", "0000:4b:00.0"),
        ("node64", "0000:5b:00.0")], incidents
    assert REGISTRY.get_sample_value("firstfault_correlate_dead_letters_total",
                                     {"error_code": "unreadable_record"}) >= 3

    def letters() -> list:
        return sorted(read_topic(kafka, dlq, 2), key=lambda r: dict(r.headers)["ff-origin"])

    dead = letters()
    assert [dict(d.headers)["ff-origin"] for d in dead] == [f"kafka:{topic}/{p}/{o}".encode()
                                                            for p, o in ((0, 1), (1, 1), (1, 3))]
    for d in dead:
        h = dict(d.headers)
        assert h["ff-error-code"] == b"unreadable_record" and b"not UTF-8" in h["ff-reason"]
        assert d.key == h["ff-origin"] and d.value == b""

    decoded.clear()
    _, again, committed = asyncio.run(go())  # a restart: from the commits, past the unreadable records
    assert decoded == [later] and again.records == 1 and again.dead_lettered == 0
    assert committed == {0: 3, 1: 4} and len(letters()) == 3


@pytest.mark.kafka
@pytest.mark.skipif(not shutil.which("kcat"), reason="kcat (a librdkafka producer) sends the header aiokafka cannot")
def test_records_drained_in_the_fetch_that_raised_on_an_unreadable_one_are_read_again(kafka, pipeline, monkeypatch):
    """``getmany`` drains partitions one after another and raises at the unreadable record: the records it drained
    of the partitions before it are gone from memory and their positions moved past them. Which partition comes
    first is aiokafka's own order (a set's), so here the consumer drains partition 0 itself, as such a call does,
    before the worker's first fetch raises on partition 1's record: the worker goes back to what it last read of
    each partition, and partition 0's two Xids are read (once) and become incidents; without it they were lost."""
    import correlate.consumer as consumer
    from tests.kafka_helpers import send_records

    old = int(time.time() * 1_000_000) - 3 * 3600 * 1_000_000
    xids = {h: encode(_events(pipeline, {h: xid(bus)}, old)) for h, bus in (("node71", "6a"), ("node72", "6b"))}
    topic = f"cdrain.{time.time_ns()}"
    asyncio.run(_create(kafka, [topic, f"{topic}.dlq"], big=False))
    asyncio.run(send_records(kafka, topic, [(f"host:{h}".encode(), v, []) for h, v in xids.items()], partition=0))
    subprocess.run([b"kcat", b"-P", b"-b", kafka.encode(), b"-t", topic.encode(), b"-p", b"1", b"-k", b"host:node73",
                    b"-H", b"\xff\xfe=v"], input=b"x", check=True, timeout=60)
    decoded: list[bytes] = []
    real = consumer.decode_record

    def decode_record(value, headers):
        decoded.append(value)
        return real(value, headers)

    monkeypatch.setattr(consumer, "decode_record", decode_record)

    async def go() -> tuple[list[dict], CorrelateWorker, int, dict[int, int | None]]:
        got: list[dict] = []
        w = CorrelateWorker(bootstrap=kafka, topic=topic, group_id=topic, dlq_topic=f"{topic}.dlq",
                            settings=Settings(), lateness_us=300_000_000, on_incidents=got.extend)
        await w.start()
        try:
            p0 = TopicPartition(topic, 0)
            drained = []
            for _ in range(100):  # as a getmany that drains partition 0 before it raises on partition 1
                drained += (await w.consumer.getmany(p0, timeout_ms=200)).get(p0, [])
                if len(drained) == 2:
                    break
            await asyncio.wait_for(w.run(until_caught_up=True), 120)
            return got, w, len(drained), {p: await w.consumer.committed(TopicPartition(topic, p)) for p in (0, 1)}
        finally:
            await w.close()

    incidents, w, drained, committed = asyncio.run(go())
    assert drained == 2 and sorted(decoded) == sorted(xids.values()) and w.records == 3 and w.dead_lettered == 1
    assert sorted({(i["initiator"]["host"], i["initiator"]["device"]) for i in incidents
                   if i["category"] == "gpu_off_bus"}) == [("node71", "0000:6a:00.0"), ("node72", "0000:6b:00.0")]
    assert committed[1] == 1, committed
