"""ingest.records: aiokafka's fetched records as named tuples. Read from the real broker, they equal aiokafka's own
``ConsumerRecord`` field by field — keys and none, headers and none, tombstones, a compressed batch, a position in
the middle of a batch, transactional batches whose aborted records are skipped — through ``getmany`` and
``getone``."""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import uuid

import aiokafka
import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.consumer import fetcher

from ingest import records
from ingest.broker import ensure_topics


def test_the_patched_release_has_what_the_class_repeats():
    """pyproject pins aiokafka to the releases ingest.records repeats; a new release fails here, not silently."""
    assert records.supported(), aiokafka.__version__
    assert not records.supported("0.15.0") and records.supported("0.14.0")
    base = records._AiokafkaPartitionRecords
    for name in ("_unpack_records", "_consumer_record", "_consume_aborted_up_to", "_contains_abort_marker",
                 "__next__"):
        assert callable(getattr(base, name)), name
    # the fetcher builds the class by its module name, and getall iterates it with a for loop
    assert "PartitionRecords(" in inspect.getsource(fetcher.Fetcher)
    assert "for msg in self._partition_records" in inspect.getsource(fetcher.FetchResult.getall)
    assert [f.name for f in dataclasses.fields(aiokafka.ConsumerRecord)] == list(records.KafkaRecord._fields)


async def _produce(bootstrap: str, topic: str) -> None:
    plain = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=50)
    packed = AIOKafkaProducer(bootstrap_servers=bootstrap, compression_type="gzip", linger_ms=50)
    txn = AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id=f"t-{uuid.uuid4().hex}")
    await plain.start()
    await packed.start()
    await txn.start()
    try:
        batch = [plain.send(topic, f"line {i}".encode(), key=b"node001", partition=0,
                            headers=[("host", b"node001"), ("n", str(i).encode())]) for i in range(20)]
        batch += [plain.send(topic, b"no key", partition=0), plain.send(topic, None, key=b"gone", partition=0)]
        await asyncio.gather(*batch)
        await asyncio.gather(*[packed.send(topic, f"packed {i}".encode(), key=b"node002", partition=0)
                               for i in range(50)])
        async with txn.transaction():  # committed
            await txn.send(topic, b"kept", key=b"node003", partition=0)
        await txn.begin_transaction()
        await txn.send(topic, b"aborted", key=b"node003", partition=0)
        await txn.abort_transaction()
        await plain.send_and_wait(topic, b"last", key=b"node004", partition=0)
    finally:
        await plain.stop()
        await packed.stop()
        await txn.stop()


async def _read(bootstrap: str, topic: str, start: int, how: str) -> list:
    c = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, isolation_level="read_committed",
                         max_poll_records=7)  # getall stops inside a fetched batch
    await c.start()
    tp = TopicPartition(topic, 0)
    try:
        c.assign([tp])
        c.seek(tp, start)
        end = (await c.end_offsets([tp]))[tp]
        out: list = []
        while await c.position(tp) < end:
            if how == "getone":
                out.append(await asyncio.wait_for(c.getone(), 10))
            else:
                for rs in (await c.getmany(timeout_ms=1000)).values():
                    out.extend(rs)
        return out
    finally:
        await c.stop()


@pytest.mark.kafka
def test_records_equal_aiokafka_records_from_the_real_broker(kafka, monkeypatch):
    topic = f"records-{uuid.uuid4().hex[:8]}"

    async def go():
        await ensure_topics(kafka, [topic], partitions=1)
        await _produce(kafka, topic)
        got = {}
        for start in (0, 21, 40):  # the start, the tombstone, the middle of the gzip batch
            for how in ("getmany", "getone"):
                monkeypatch.setattr(fetcher, "PartitionRecords", records._AiokafkaPartitionRecords)
                theirs = await _read(kafka, topic, start, how)
                assert records.install()
                assert fetcher.PartitionRecords is records.PartitionRecords
                ours = await _read(kafka, topic, start, how)
                got[(start, how)] = theirs, ours
        return got

    got = asyncio.run(go())
    for (start, how), (theirs, ours) in got.items():
        assert {type(r) for r in theirs} == {aiokafka.ConsumerRecord}
        assert {type(r) for r in ours} == {records.KafkaRecord}, (start, how)
        assert [tuple(r) for r in ours] == [dataclasses.astuple(r) for r in theirs], (start, how)
    ours = got[(0, "getmany")][1]
    assert [r.value for r in ours] == ([f"line {i}".encode() for i in range(20)] + [b"no key", None]
                                       + [f"packed {i}".encode() for i in range(50)] + [b"kept", b"last"])
    assert ours[3].headers == (("host", b"node001"), ("n", b"3")) and ours[3].key == b"node001"
    assert ours[3].serialized_key_size == 7 and ours[3].serialized_value_size == 6
    assert (ours[20].key, ours[20].serialized_key_size, ours[20].headers) == (None, -1, ())
    assert (ours[21].value, ours[21].serialized_value_size) == (None, -1)
    assert [r.offset for r in ours] == sorted({r.offset for r in ours})
    assert got[(40, "getmany")][1][0].offset == 40 and got[(40, "getmany")][1][0].value == b"packed 18"
