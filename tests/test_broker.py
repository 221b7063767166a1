"""The project's local broker script: start, status, restart with the same data, stop with nothing left."""

from __future__ import annotations

import asyncio
import json

import pytest

from ingest import broker

pytestmark = pytest.mark.kafka


def _steps(said: list[str]) -> list[str]:
    """The lines ``start`` logged but the jars' fetch (once per machine: said only where the cache is empty)."""
    return [m for m in said if not m.startswith("fetching the Apache Kafka")]


def test_start_status_stop_restart(tmp_path):
    said: list[str] = []
    st = broker.start(tmp_path, log=said.append)
    # each step that may take a while is said as it begins: `kafka start` said nothing for 63 s on a busy machine
    # (a fresh user's trial)
    assert _steps(said) == [
        f"formatting the broker's storage in {tmp_path.resolve() / 'kafka' / 'data'} …",
        f"started the broker (pid {st.pid}); waiting for it to answer on {st.bootstrap} (at most 120 s) …"]
    assert broker.status(tmp_path).pid == st.pid
    said.clear()
    again = broker.start(tmp_path, log=said.append)  # already running: the same broker, nothing to wait for
    assert again.pid == st.pid and said == []
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
    st2 = broker.start(tmp_path, log=said.append)  # same storage, formatted once
    assert _steps(said) == [f"started the broker (pid {st2.pid}); waiting for it to answer on {st2.bootstrap} "
                            "(at most 120 s) …"]
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


def test_two_starts_at_once_share_one_broker(tmp_path):
    """Two ``kafka start`` (two terminals, a demo and a test) on one state folder at the same time: the second waits
    for the first and returns its broker. Both wrote server.properties, each with its own ports, and launched a
    JVM on the one data folder: one broker took the other's port (BindException), both waited out 120 s and exited
    1, and no broker ran (a break-it pass)."""
    from concurrent.futures import ThreadPoolExecutor

    got: list[broker.BrokerState] = []
    try:
        with ThreadPoolExecutor(2) as pool:
            got += list(pool.map(lambda _: broker.start(tmp_path, timeout_s=180, log=lambda m: None), range(2)))
        assert got[0].pid == got[1].pid and got[0].port == got[1].port
        assert broker.status(tmp_path).pid == got[0].pid
    finally:
        broker.stop(tmp_path)
    assert broker.status(tmp_path) is None and not any(broker._alive(st.pid) for st in got)


def _proc_entry(proc, pid: int, args: list[str]) -> None:
    (proc / str(pid)).mkdir(parents=True)
    (proc / str(pid) / "cmdline").write_bytes(b"\0".join(a.encode() for a in args) + b"\0")


def _state_file(folder, pid: int) -> None:
    (folder / "kafka").mkdir(parents=True)
    (folder / "kafka" / "state.json").write_text(json.dumps({
        "pid": pid, "port": 1, "controller_port": 2, "data_dir": "d", "log_dir": "l", "cluster_id": "c",
        "started": 0.0}))


def test_running_elsewhere_names_the_state_folders_of_this_user_s_brokers(tmp_path):
    """From a ``/proc`` as Linux lays it out (a folder per pid, ``cmdline`` NUL-separated): the brokers ``start``
    launched (``kafka.Kafka <state>/kafka/server.properties``) whose pid their folder's state file records; not
    the one under the folder asked about, not a java of another program, not a pid a state file no longer names."""
    proc, java = tmp_path / "proc", "/usr/bin/java"
    a, b, mine, stale = (tmp_path / n for n in ("a", "b", "mine", "stale"))
    for folder, pid in ((a, 101), (b, 202), (mine, 303), (stale, 999)):
        _state_file(folder, pid)
    _proc_entry(proc, 101, [java, "-cp", "x/*", "kafka.Kafka", str(a / "kafka" / "server.properties")])
    _proc_entry(proc, 202, [java, "kafka.Kafka", str(b / "kafka" / "server.properties")])
    _proc_entry(proc, 303, [java, "kafka.Kafka", str(mine / "kafka" / "server.properties")])
    _proc_entry(proc, 404, [java, "kafka.Kafka", str(stale / "kafka" / "server.properties")])  # state says 999
    _proc_entry(proc, 505, [java, "-jar", "other.jar"])
    _proc_entry(proc, 606, [java, "kafka.Kafka"])  # no properties file: no folder
    (proc / "self").mkdir()
    assert broker.running_elsewhere(mine, proc) == [(a, 101), (b, 202)]
    assert broker.running_elsewhere(tmp_path / "none", tmp_path / "no-proc") == []


def test_running_elsewhere_finds_a_real_broker_by_its_folder(kafka, tmp_path):
    """The session's real broker (the ``kafka`` fixture's, under a folder of its own) is among those this user runs
    elsewhere, with the pid its state file records."""
    found = dict(broker.running_elsewhere(tmp_path))
    running = [(folder, pid) for folder, pid in found.items() if broker.status(folder) is not None
               and broker.status(folder).bootstrap == kafka]
    assert len(running) == 1 and running[0][1] == broker.read_state(running[0][0]).pid
