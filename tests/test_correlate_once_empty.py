"""A ``correlate --once`` run given no partition (its group has as many members as ``fleet.events`` has partitions,
or more: running workers hold them all) has nothing to read: it ends once ``assigned`` has set up that empty
assignment. It waited for good (a break-it pass: 3 workers on 2 partitions, the --once run assigned [] and killed by
``timeout`` after 40 s, three times of four), where the ingest worker's --once run ends."""

from __future__ import annotations

import asyncio

from correlate.consumer import CorrelateWorker
from correlate.correlator import Settings


class _NoPartitions:
    """A consumer whose group gives it no partition: the rebalance listener is called (with none) during its first
    ``getmany``, as aiokafka does while the group is joined. A stand-in for the real broker's group: which member
    the broker's assignor gives a partition to is its choice (by member id), so a real group gives a --once run
    none only some of the time (three of four tries in the break-it pass)."""

    def __init__(self, worker: CorrelateWorker, rebalance: bool) -> None:
        self.worker, self.rebalance, self.polls = worker, rebalance, 0

    def assignment(self):
        return set()

    async def getmany(self, timeout_ms=0, max_records=None):
        self.polls += 1
        if self.rebalance and self.polls == 1:
            await self.worker.assigned(set())
        await asyncio.sleep(timeout_ms / 1000)
        return {}

    async def committed(self, tp):
        raise AssertionError("no partition: nothing to ask")

    async def beginning_offsets(self, tps):
        raise AssertionError("no partition: nothing to ask")

    async def end_offsets(self, tps):
        return {}

    async def topics(self):
        return set()

    def highwater(self, tp):
        return None


def _worker() -> CorrelateWorker:
    return CorrelateWorker(bootstrap="127.0.0.1:9", topic="t", group_id="g", dlq_topic="d", settings=Settings(),
                           lateness_us=1, on_incidents=lambda incs: None)  # never started


def test_a_once_run_the_group_gives_no_partition_ends():
    w = _worker()
    w.consumer = _NoPartitions(w, rebalance=True)
    asyncio.run(asyncio.wait_for(w.run(until_caught_up=True), 10))
    assert w.rebalances == 1 and w.ready == frozenset() and w.records == 0


def test_a_once_run_not_assigned_yet_is_not_caught_up():
    """Before the group has given it its partitions (none yet, ``assigned`` not called), it waits: it is joining."""
    w = _worker()
    w.consumer = _NoPartitions(w, rebalance=False)
    assert not asyncio.run(w._caught_up())
    asyncio.run(w.assigned(set()))
    assert asyncio.run(w._caught_up())
