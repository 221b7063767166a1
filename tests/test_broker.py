"""The project's local broker script: start, status, restart with the same data, stop with nothing left."""

from __future__ import annotations

import asyncio
import pytest

from ingest import broker

pytestmark = pytest.mark.kafka


def test_start_status_stop_restart(tmp_path):
    st = broker.start(tmp_path)
    assert broker.status(tmp_path).pid == st.pid
    again = broker.start(tmp_path)  # already running: the same broker
    assert again.pid == st.pid
    assert asyncio.run(broker.ensure_topics(st.bootstrap, ["t.one"], partitions=2)) == {"t.one": (None, 2)}
    assert asyncio.run(broker.ensure_topics(st.bootstrap, ["t.one"], partitions=2)) == {"t.one": (2, 2)}  # idempotent
    # more partitions only when asked to grow (`kafka topics --partitions 6` left every topic at 3: a fresh user's
    # trial); fewer than it has: kept, Kafka cannot remove them
    assert asyncio.run(broker.ensure_topics(st.bootstrap, ["t.one"], partitions=5)) == {"t.one": (2, 2)}
    assert asyncio.run(broker.ensure_topics(st.bootstrap, ["t.one", "t.two"], partitions=5, grow=True)) == {
        "t.one": (2, 5), "t.two": (None, 5)}
    assert asyncio.run(broker.ensure_topics(st.bootstrap, ["t.one"], partitions=3, grow=True)) == {"t.one": (5, 5)}
    assert broker.stop(tmp_path)
    assert broker.status(tmp_path) is None
    assert not broker._alive(st.pid)
    assert not broker.stop(tmp_path)
    st2 = broker.start(tmp_path)  # same storage, formatted once
    try:
        from aiokafka.admin import AIOKafkaAdminClient

        async def topics():
            a = AIOKafkaAdminClient(bootstrap_servers=st2.bootstrap)
            await a.start()
            try:
                return await a.list_topics()
            finally:
                await a.close()

        assert "t.one" in asyncio.run(topics())
    finally:
        broker.stop(tmp_path)
