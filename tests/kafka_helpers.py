"""Helpers of the tests that run a correlate worker over a real broker (the ``kafka`` fixture's)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from aiokafka import AIOKafkaProducer, TopicPartition

from correlate.consumer import CorrelateWorker
from correlate.correlator import Settings

#: a record to send: (key, value, headers)
Record = tuple[bytes | None, bytes | None, list[tuple[str, bytes]]]


async def correlate_records(kafka: str, topic: str, records: list[Record], *, dlq_topic: str | None = None,
                            timeout_s: float = 120, prepare: Callable[[CorrelateWorker], None] | None = None,
                            ) -> tuple[list[dict], CorrelateWorker, int | None]:
    """Send ``records`` to partition 0 of ``topic`` (which must exist, with ``dlq_topic``, default
    ``<topic>.dlq``), then run a correlate worker of group ``topic`` over it until it has caught up (at most
    ``timeout_s`` seconds). Returns the incidents it emitted, the worker (closed) and its committed offset of
    partition 0 (None: nothing committed). ``prepare`` is called with the started worker before it runs."""
    await send_records(kafka, topic, records)
    got: list[dict] = []
    w = CorrelateWorker(bootstrap=kafka, topic=topic, group_id=topic, dlq_topic=dlq_topic or f"{topic}.dlq",
                        settings=Settings(), lateness_us=300_000_000, on_incidents=got.extend)
    await w.start()
    if prepare is not None:
        prepare(w)
    try:
        await asyncio.wait_for(w.run(until_caught_up=True), timeout_s)
        committed = await w.consumer.committed(TopicPartition(topic, 0))
    finally:
        await w.close()
    return got, w, committed


async def send_records(kafka: str, topic: str, records: list[Record], partition: int = 0) -> None:
    """Send ``records`` to ``partition`` of ``topic``, each acknowledged before the next."""
    producer = AIOKafkaProducer(bootstrap_servers=kafka)
    await producer.start()
    try:
        for key, value, headers in records:
            await producer.send_and_wait(topic, value, key=key, partition=partition, headers=headers)
    finally:
        await producer.stop()
