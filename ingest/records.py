"""aiokafka's fetched records, without a dataclass and two Python calls per record.

aiokafka (0.12 – 0.14) turns each record of a fetched batch into a ``ConsumerRecord`` dataclass in
Python (``consumer/fetcher.py``: ``PartitionRecords._unpack_records`` calls ``_consumer_record`` per
record, and ``FetchResult.getall`` pulls each one through ``PartitionRecords.__next__``): ~2.2 µs per
record on the benchmark's 2-core Xeon VM, of ~5 µs a one-line message costs the ingest worker in all
(``benchmarks/README.md``, "Where the time goes"). :class:`PartitionRecords` is aiokafka's class with
the same batch walk (CRC check, aborted transactions, control batches, offsets below the fetch
position skipped, ``next_fetch_offset`` after every record) building each record inline as a
:class:`KafkaRecord` — a named tuple with ``ConsumerRecord``'s fields, in its order — and iterated
by ``getall`` without its per-record ``__next__``. A consumer with a key or value deserializer gets
aiokafka's own records.

:func:`install` puts it in aiokafka's fetcher module (where the fetcher looks the class up when a fetch
response arrives) for every consumer of the process; ``tests/test_records.py`` holds its records equal,
field by field, to aiokafka's own from the real broker, and holds that the aiokafka it patches still has
the parts it replaces.
"""

from __future__ import annotations

import logging
from typing import NamedTuple, Sequence

import aiokafka
from aiokafka import errors as Errors
from aiokafka.consumer import fetcher as _fetcher

log = logging.getLogger(__name__)

#: the aiokafka releases whose ``PartitionRecords`` this module's class repeats (pyproject pins the same range)
SUPPORTED = ("0.12.", "0.13.", "0.14.")

_READ_COMMITTED = _fetcher.READ_COMMITTED
_AiokafkaPartitionRecords = _fetcher.PartitionRecords


class KafkaRecord(NamedTuple):
    """One fetched Kafka record: the fields of ``aiokafka.ConsumerRecord`` in its order (``timestamp`` in ms since
    the epoch; ``serialized_*_size`` in bytes, -1 for none; ``headers`` a tuple of (str, bytes))."""

    topic: str
    partition: int
    offset: int
    timestamp: int
    timestamp_type: int
    key: bytes | None
    value: bytes | None
    checksum: int | None
    serialized_key_size: int
    serialized_value_size: int
    headers: Sequence[tuple[str, bytes]]


_new = tuple.__new__


class PartitionRecords(_AiokafkaPartitionRecords):
    """aiokafka's ``PartitionRecords`` yielding :class:`KafkaRecord` (see the module doc)."""

    def __iter__(self):
        # ``FetchResult.getall`` loops ``for msg in partition_records``: the generator itself, not a Python
        # ``__next__`` per record. ``getone`` still calls ``next(partition_records)``, which aiokafka's ``__next__``
        # serves from the same generator.
        it = self._records_iterator
        return it if it is not None else iter(())

    def _unpack_records(self):
        if self._key_deserializer or self._value_deserializer:
            yield from super()._unpack_records()
            return
        # aiokafka 0.14 ``PartitionRecords._unpack_records``, with ``_consumer_record`` inline
        tp = self._tp
        topic, partition = tp.topic, tp.partition
        records = self._records
        while records.has_next():
            next_batch = records.next_batch()
            if self._check_crcs and not next_batch.validate_crc():
                raise Errors.CorruptRecordException(f"Invalid CRC - {tp}")
            if self._isolation_level == _READ_COMMITTED and next_batch.producer_id is not None:
                self._consume_aborted_up_to(next_batch.base_offset)
                if next_batch.is_control_batch and self._contains_abort_marker(next_batch):
                    self._aborted_producers.discard(next_batch.producer_id)
                if next_batch.is_transactional and next_batch.producer_id in self._aborted_producers:
                    log.debug("Skipping aborted record batch from partition %s with producer_id %s and offsets "
                              "%s to %s", tp, next_batch.producer_id, next_batch.base_offset,
                              next_batch.next_offset - 1)
                    self.next_fetch_offset = next_batch.next_offset
                    continue
            if next_batch.is_control_batch:
                self.next_fetch_offset = next_batch.next_offset
                continue
            for record in next_batch:
                offset = record.offset
                if offset < self.next_fetch_offset:
                    continue  # a compressed message set's records before the fetch position
                key, value, headers = record.key, record.value, record.headers
                rec = _new(KafkaRecord, (topic, partition, offset, record.timestamp, record.timestamp_type, key,
                                         value, record.checksum, -1 if key is None else len(key),
                                         -1 if value is None else len(value), tuple(headers) if headers else ()))
                self.next_fetch_offset = offset + 1
                yield rec
            self.next_fetch_offset = next_batch.next_offset


def supported(version: str = aiokafka.__version__) -> bool:
    """Whether this aiokafka release is one :class:`PartitionRecords` repeats."""
    return version.startswith(SUPPORTED)


def install() -> bool:
    """Make aiokafka's fetcher build :class:`PartitionRecords` (every consumer of this process, from its next
    fetch response). Idempotent; returns False, and changes nothing, for an aiokafka release outside
    :data:`SUPPORTED` (its records are then aiokafka's own)."""
    if _fetcher.PartitionRecords is PartitionRecords:
        return True
    if not supported():
        log.warning("aiokafka %s: fetched records stay aiokafka's own (ingest.records repeats %s)",
                    aiokafka.__version__, ", ".join(v + "x" for v in SUPPORTED))
        return False
    _fetcher.PartitionRecords = PartitionRecords
    return True


__all__ = ["KafkaRecord", "PartitionRecords", "install", "supported"]
