"""Faults against the real local broker (issue 7): every event kept exactly once in effect, and the service
goes on. Each test compares what was stored under the fault with a clean run over the same Kafka records.

* crash: ``kill -9`` of ``firstfault ingest`` during a replay (``benchmarks.crash`` at a small size);
* the broker stopped and restarted mid-stream;
* a consumer-group rebalance: one of two ``firstfault ingest`` processes killed;
* storage: the lake folder read-only, then the disk full (a small tmpfs: these tests run as root; they are
  skipped, saying why, where mounting is not allowed), with ``/healthz`` and ``/metrics`` over real HTTP;
* ``firstfault correlate`` (and its pager) killed mid-incident, with a real Alertmanager as receiver.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import errno
import gc
import os
import re
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import orjson
import pytest
from prometheus_client import REGISTRY

from benchmarks import crash
from benchmarks.generate import SOURCES, generate
from benchmarks.ingest import messages, produce
from correlate.consumer import CorrelateWorker
from correlate.correlator import Settings as CorrelateSettings
from ingest import broker
from ingest.broker import ensure_topics
from ingest.consumer import IngestWorker, produce_lines
from ingest.lake import Lake
from schemas.settings import Settings

pytestmark = pytest.mark.kafka


def corpus_messages(lines: int, prefix: str, seed: int = 3):
    """``lines`` of the benchmark fleet mix as 256-line messages keyed by host, stamped two hours ago."""
    t0 = dt.datetime.now(dt.timezone.utc).replace(microsecond=0) - dt.timedelta(hours=2)
    return messages(generate(lines, seed=seed, t0=t0), "batch", prefix)


def ingest_clean(bootstrap: str, topics: list[str], lake: Path, max_records: int) -> IngestWorker:
    """The reference: one in-process worker, a fresh group and lake, until caught up. ``max_records`` must
    be the faulted run's: it sets the chunks, and so which lines are read together (ingest.consumer)."""
    Lake(lake).init()

    async def go() -> IngestWorker:
        await ensure_topics(bootstrap, [topics[0] + ".cleandlq"])  # a worker checks its topics at start
        w = IngestWorker(bootstrap=bootstrap, topics=topics, group_id=f"clean.{time.time_ns()}", lake=Lake(lake),
                         dlq_topic=topics[0] + ".cleandlq", linger_ms=50, max_records=max_records)
        await w.start()
        try:
            await w.run(until_caught_up=True)
            # the collector is paused for each batch and on again once the batch's objects are freed
            assert gc.isenabled() and w.health.batches > 0
        finally:
            await w.close()
        return w

    return asyncio.run(go())


def assert_same_events(clean: Path, faulted: Path) -> dict:
    """Lost, duplicated, unexpected and mismatched events of ``faulted`` against ``clean`` (all zero)."""
    out = crash.compare(clean, faulted)
    assert out["expected_events"] > 0
    figures = {k: out[k] for k in ("lost", "duplicated", "unexpected", "mismatched", "conflicting_copies")}
    assert figures == dict.fromkeys(figures, 0), orjson.dumps(out).decode()
    assert out["lines_in_events_clean"] == out["lines_in_events_crash"] and out["incidents_equal"], out
    return out


class InThread:
    """Runs ``main()`` (a coroutine function) on its own event loop in a thread; ``call`` schedules a
    function on that loop; ``join`` waits for the end and re-raises what ``main`` raised."""

    def __init__(self, main) -> None:
        self.loop = asyncio.new_event_loop()
        self.error: BaseException | None = None
        self.done = threading.Event()

        def run() -> None:
            try:
                self.loop.run_until_complete(main())
            except BaseException as e:  # noqa: BLE001 — handed to the test thread
                self.error = e
            finally:
                self.done.set()

        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()

    def call(self, fn, *a) -> None:
        self.loop.call_soon_threadsafe(fn, *a)

    def join(self, timeout: float) -> None:
        assert self.done.wait(timeout), "the background loop did not finish"
        self.thread.join(5)
        if self.error is not None:
            raise self.error


def wait_for(pred, timeout: float, what: str, every: float = 0.1):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(every)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


# --- crash ----------------------------------------------------------------------------------------------


def test_crash_benchmark_smoke(kafka, tmp_path):
    """`python -m benchmarks.crash` at a small size: two SIGKILLs of `firstfault ingest` during a replay of
    20,000 lines; nothing lost, duplicated or changed, same incidents (the benchmark size: docs/reliability.md)."""
    a = crash.parser().parse_args(["--lines", "20000", "--kills", "2", "--max-records", "4", "--bootstrap", kafka])
    a.workdir, a.argv = str(tmp_path), ["--lines", "20000", "--kills", "2"]
    out = crash.run(a)
    assert out["lines"] == 20_000 and out["kills"] == 2
    assert out["expected_events"] == out["stored_events"] > 0
    assert (out["lost"], out["duplicated"], out["unexpected"], out["mismatched"]) == (0, 0, 0, 0)
    assert out["incidents_equal"] and out["published_lost"] == 0 and out["published_conflicting"] == 0
    assert out["ok"] and "OK: nothing lost" in crash.summary(out)
    assert not list(tmp_path.iterdir())  # the scratch folder is gone


# --- the broker goes away ---------------------------------------------------------------------------------


def test_a_producer_whose_idempotence_state_the_broker_lost_is_made_again(kafka, tmp_path):
    """After a broker restart the worker's idempotent producer was answered OutOfOrderSequenceNumber on every send,
    and the worker retried its batch for ever (a CI run of test_broker_stopped_and_restarted_mid_stream). The
    broker's loss of a producer's state cannot be brought about on purpose here: the step raises the error the broker
    sent, once (a stand-in, said so); the worker makes a new producer, which the real broker takes, and goes on."""
    from aiokafka.errors import OutOfOrderSequenceNumber

    topic = f"renew{time.time_ns()}"
    lake = tmp_path / "lake"
    Lake(lake).init()

    async def main() -> tuple[int, bool]:
        await ensure_topics(kafka, [topic, topic + ".dlq"])
        w = IngestWorker(bootstrap=kafka, topics=[topic], group_id=topic, lake=Lake(lake), dlq_topic=topic + ".dlq")
        await w.start()
        try:
            first = w._producer
            calls = []

            async def step() -> None:
                calls.append(w._producer)
                if len(calls) == 1:
                    raise OutOfOrderSequenceNumber()
                await w._producer.send_and_wait(topic + ".dlq", b"after the renewal")

            w.ack_patience_s = 0.1
            await w._retry(step, {}, "store the batch")
            return len(calls), calls[0] is first and calls[1] is not first and w._producer is calls[1]
        finally:
            await w.close()

    assert asyncio.run(main()) == (2, True)


def test_broker_stopped_and_restarted_mid_stream(tmp_path):
    """A broker of its own (the session's serves the other tests), stopped with SIGTERM while a worker is
    halfway through a backlog and started again 3 s later on the same ports and data: the worker reports
    itself unhealthy while the broker is away, reconnects, finishes, and stores what a clean run stores."""
    state = tmp_path / "broker"
    st = broker.start(state, timeout_s=180)
    try:
        bootstrap = st.bootstrap
        prefix = "outage"
        topics = [f"{prefix}.{s}" for s in SOURCES]
        asyncio.run(ensure_topics(bootstrap, topics + [f"{prefix}.dlq", f"{prefix}.events"], partitions=3))
        asyncio.run(produce(bootstrap, corpus_messages(40_000, prefix)))
        lake = tmp_path / "lake"
        Lake(lake).init()
        worker = IngestWorker(bootstrap=bootstrap, topics=topics, group_id="outage", lake=Lake(lake),
                              dlq_topic=f"{prefix}.dlq", events_topic=f"{prefix}.events", max_records=8,
                              linger_ms=50, session_timeout_ms=6000)
        worker.ack_patience_s = 1.0
        seen: list[tuple[bool, str]] = []

        async def main() -> None:
            await worker.start()
            try:
                await worker.run(until_caught_up=True)
            finally:
                await worker.close()

        bg = InThread(main)
        wait_for(lambda: worker.health.batches >= 10, 120, "the worker to be halfway")
        assert not bg.done.is_set(), "the backlog ran out before the broker was stopped"
        broker.stop(state)
        assert broker.status(state) is None
        t_down = time.monotonic()
        wait_for(lambda: not worker.health.ok and seen.append((worker.health.ok, worker.health.reason)) is None,
                 60, "the worker to report the outage")
        time.sleep(max(0.0, 3 - (time.monotonic() - t_down)))
        st2 = broker.start(state, timeout_s=180)
        assert st2.bootstrap == bootstrap
        bg.join(240)
        assert worker.health.ok, worker.health.reason
        assert seen and "kafka" in seen[0][1], seen
        ingest_clean(bootstrap, topics, tmp_path / "clean", 8)
        assert_same_events(tmp_path / "clean", lake)
    finally:
        broker.stop(state)


def test_an_idle_worker_reports_a_broker_that_went_away(tmp_path):
    """A worker with nothing to read asks the broker for its partitions' ends (``broker_check_s``): with the broker
    stopped it reports itself unhealthy ("kafka: …"; ``/healthz`` said ok a minute after the broker stopped, a fresh
    user's trial), and healthy again once the broker is back. The correlate worker beside it alike (its /healthz said
    ok for 90 s after the broker stopped: a second fresh user's trial), ``firstfault_correlate_healthy`` with it."""
    state = tmp_path / "broker"
    st = broker.start(state, timeout_s=180)
    try:
        topics = ["idle.dmesg"]
        asyncio.run(ensure_topics(st.bootstrap, topics + ["idle.dlq", "idle.events"], partitions=1))
        lake = tmp_path / "lake"
        Lake(lake).init()
        worker = IngestWorker(bootstrap=st.bootstrap, topics=topics, group_id="idle", lake=Lake(lake),
                              dlq_topic="idle.dlq", events_topic="idle.events", session_timeout_ms=6000)
        worker.ack_patience_s, worker.broker_check_s = 2.0, 1.0
        correlator = CorrelateWorker(bootstrap=st.bootstrap, topic="idle.events", group_id="idle-c",
                                     dlq_topic="idle.dlq", settings=CorrelateSettings(), lateness_us=300_000_000,
                                     on_incidents=lambda incidents: None, session_timeout_ms=6000, tick_s=0.5)
        correlator.ack_patience_s, correlator.broker_check_s = 2.0, 1.0

        async def main() -> None:
            await worker.start()
            await correlator.start()
            try:
                await asyncio.gather(worker.run(), correlator.run())
            finally:
                await worker.close()
                await correlator.close()

        def healthy() -> tuple[bool, bool, float | None]:
            return worker.health.ok, correlator.health()["ok"], REGISTRY.get_sample_value("firstfault_correlate_healthy")

        bg = InThread(main)
        wait_for(lambda: worker.health.lag == {"idle.dmesg/0": 0} and correlator.lag == {"idle.events/0": 0}, 60,
                 "the idle workers to check the broker")
        assert healthy() == (True, True, 1)
        broker.stop(state)
        wait_for(lambda: healthy() == (False, False, 0), 60, "the idle workers to report the broker gone")
        assert worker.health.reason.startswith("kafka: the broker did not answer"), worker.health.reason
        assert correlator.health()["reason"].startswith("kafka: the broker did not answer"), correlator.health()
        broker.start(state, timeout_s=180)
        wait_for(lambda: healthy() == (True, True, 1), 120, "the workers to be healthy again")
        bg.call(worker.stop.set)
        bg.call(correlator.stop.set)
        bg.join(60)
    finally:
        broker.stop(state)


def test_the_workers_once_runs_say_what_they_did(kafka, tmp_path):
    """``ingest --once`` printed only its dead-letter warnings and ``correlate --once`` nothing at all (a fresh user's
    trial): each says what it read and where it went, and ``correlate --once`` prints the incidents as ``run --once``
    does."""
    prefix = f"once.{time.time_ns()}"
    env = crash.worker_env(kafka, prefix, "run", tmp_path, max_records=100)
    Path(env["FIRSTFAULT_STATE_DIR"]).mkdir()
    topics = env["FIRSTFAULT_TOPICS"].split(",")
    asyncio.run(ensure_topics(kafka, topics + [env["FIRSTFAULT_EVENTS_TOPIC"], env["FIRSTFAULT_DLQ_TOPIC"]]))
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    line = f"{stamp} node31 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=0, GPU has fallen off the bus."
    asyncio.run(produce(kafka, [(f"{prefix}.dmesg", b"node31", line.encode(), int(time.time() * 1000), 1)]))
    run = {role: subprocess.run([crash.FIRSTFAULT, role, "--once"], env=env, capture_output=True, text=True,
                                timeout=300, cwd=env["FIRSTFAULT_STATE_DIR"]) for role in ("ingest", "correlate")}
    said = run["ingest"].stderr
    assert run["ingest"].returncode == 0 and "ingested 1 Kafka record, 1 line → 1 event in" in said, said
    assert run["correlate"].returncode == 0, run["correlate"].stderr
    assert re.search(rf"read [1-9]\d* {re.escape(prefix)}\.run\.events records → 1 incident; lake: ",
                     run["correlate"].stderr), run["correlate"].stderr[-400:]
    assert "caught up: 1 incident" in run["correlate"].stdout and "node31 gpu 0000:3b:00.0 (Xid 79)" in \
        run["correlate"].stdout, run["correlate"].stdout


# --- a consumer-group rebalance ------------------------------------------------------------------------------


def test_rebalance_two_ingest_workers_one_killed(kafka, tmp_path):
    """Two `firstfault ingest` processes share six partitions per topic; once both hold partitions and work
    is under way, one is killed (SIGKILL). The other takes its partitions over (after the session timeout)
    and finishes; the lake equals a clean run's: no event lost, none duplicated, none changed."""
    prefix = f"rebal.{time.time_ns()}"
    topics = [f"{prefix}.{s}" for s in SOURCES]
    asyncio.run(ensure_topics(kafka, topics + [f"{prefix}.run.events", f"{prefix}.run.dlq"], partitions=6))
    env = crash.worker_env(kafka, prefix, "run", tmp_path, max_records=4)
    Path(env["FIRSTFAULT_STATE_DIR"]).mkdir()
    procs = [crash.spawn("ingest", env, tmp_path / f"ingest{i}.log") for i in range(2)]
    prog = crash.Progress(kafka, env["FIRSTFAULT_GROUP_ID"], topics, 6)
    def where() -> str:  # where it stood, with the workers' own accounts
        logs = "".join(f"\n--- ingest{i}.log (exit {p.poll()}):\n"
                       + (tmp_path / f"ingest{i}.log").read_text(errors="replace")[-3000:] for i, p in enumerate(procs))
        return f"group {prog.state()}, committed {prog()} of the backlog{logs}"

    try:
        try:
            wait_for(lambda: prog.members() == 2, 90, "both workers in the group", every=0.5)
            # the backlog comes once both hold partitions: what the first worker does alone while the second
            # joins depends on the machine's speed (a faster ingest left too little to take over)
            asyncio.run(produce(kafka, corpus_messages(60_000, prefix)))
            wait_for(lambda: prog()[0] > 20, 60, "work under way with both workers")
            done, total = prog()
            assert done < total * 0.8, "too little left to take over"
            os.killpg(procs[0].pid, signal.SIGKILL)
            procs[0].wait(10)
            wait_for(lambda: prog()[0] == total, 180, "the survivor to finish")
        except AssertionError as e:
            raise AssertionError(f"{e}; {where()}") from None
        assert procs[1].poll() is None
    finally:
        prog.close()
        for p in procs:
            crash.stop(p)
    log = (tmp_path / "ingest1.log").read_text()
    assert "Traceback" not in log, log[-3000:]
    ingest_clean(kafka, topics, tmp_path / "clean", 4)
    out = assert_same_events(tmp_path / "clean", tmp_path / "lake-run")
    pub = crash.published(kafka, f"{prefix}.run.events", 6)
    assert not set(crash.lake_view(tmp_path / "clean", 0)[0]) - set(pub)  # every event published
    assert all(len(v) == 1 for v in pub.values())  # copies published twice are identical
    assert out["stored_events"] == out["expected_events"]


def test_partitions_taken_while_a_batch_closes(kafka, tmp_path):
    """aiokafka rebalances in the background, so partitions can leave a worker at any await, for example
    between a batch's closing commit and the next step. The worker goes on with what it still has (the
    new owner starts at the commit). Made deterministic: the closing commit of the first batch that holds
    both partitions of a topic waits until a second group member has taken partitions from the worker
    (with two members each topic's two partitions are split, so one of the batch's goes); that member then
    leaves and the worker finishes alone. The lake equals a clean run's."""
    from aiokafka import AIOKafkaConsumer

    prefix = f"steal.{time.time_ns()}"
    topics = [f"{prefix}.{s}" for s in SOURCES]
    asyncio.run(ensure_topics(kafka, topics + [f"{prefix}.dlq"], partitions=2))
    asyncio.run(produce(kafka, corpus_messages(6000, prefix)))
    lake = tmp_path / "lake"
    Lake(lake).init()
    group = f"{prefix}.ingest"

    async def go() -> list:
        w = IngestWorker(bootstrap=kafka, topics=topics, group_id=group, lake=Lake(lake), dlq_topic=f"{prefix}.dlq",
                         linger_ms=50, max_records=16, session_timeout_ms=6000)
        await w.start()
        real, taken = w._commit, []

        async def commit(offsets) -> None:
            await real(offsets)
            closing = not any(meta for _, meta in offsets.values())
            split = any(sum(tp.topic == t for tp in offsets) == 2 for t in topics)
            if taken or not (closing and split):
                return
            other = AIOKafkaConsumer(*topics, bootstrap_servers=kafka, group_id=group, enable_auto_commit=False,
                                     session_timeout_ms=6000, heartbeat_interval_ms=1000)
            await other.start()
            while set(offsets) <= w._consumer.assignment():
                await asyncio.sleep(0.05)
            taken.append(sorted(set(offsets) - w._consumer.assignment()))
            await other.stop()  # leaves the group: the worker gets every partition back
            while len(w._consumer.assignment()) < 2 * len(topics):  # (until then `run` would see no lag)
                await asyncio.sleep(0.05)

        w._commit = commit
        try:
            await asyncio.wait_for(w.run(until_caught_up=True), 120)
        finally:
            await w.close()
        return taken

    taken = asyncio.run(go())
    assert len(taken) == 1 and taken[0], taken  # the race happened: a partition of the batch left mid-close
    ingest_clean(kafka, topics, tmp_path / "clean", 16)
    out = assert_same_events(tmp_path / "clean", lake)
    assert out["stored_events"] == out["expected_events"]


# --- storage faults ------------------------------------------------------------------------------------------


@contextlib.contextmanager
def tmpfs(path: Path, size_mb: int):
    """A small real tmpfs at ``path`` (root only), unmounted at the end whatever happens."""
    path.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root (this test simulates nothing: it needs a real file system)")
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_mb}m", "tmpfs", str(path)], capture_output=True,
                       text=True)
    if r.returncode != 0:
        pytest.skip(f"`mount -t tmpfs` is not allowed here: {r.stderr.strip()}")
    try:
        yield path
    finally:
        subprocess.run(["mount", "-o", "remount,rw", str(path)], capture_output=True)
        if subprocess.run(["umount", str(path)], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", str(path)], capture_output=True)


def fill(path: Path) -> Path:
    """Write zeros into ``path/filler`` until the file system says ENOSPC."""
    f = path / "filler"
    block = b"\0" * (1 << 20)
    # unbuffered: a buffered file's close flushed the bytes left in its buffer and raised ENOSPC again, outside the
    # loop (a CI run)
    with open(f, "wb", buffering=0) as fh:
        try:
            while True:
                fh.write(block)
        except OSError as e:
            assert e.errno == errno.ENOSPC, e
    return f


def test_read_only_lake_then_full_disk(kafka, tmp_path):
    """`firstfault run`'s service in this process, its API on a free loopback port, the lake on a 32 MB
    tmpfs. Read-only (`mount -o remount,ro`), then full (a filler file up to ENOSPC): ingest stops
    committing, /healthz says 503 with the reason and firstfault_ingest_healthy is 0; when the fault clears
    (remount rw; filler deleted) it recovers by itself and the lake equals a clean run's."""
    from api.service import Service

    prefix = f"store.{time.time_ns()}"
    topics = [f"{prefix}.{s}" for s in SOURCES]
    asyncio.run(ensure_topics(kafka, topics + [f"{prefix}.dlq"], partitions=2))
    msgs = corpus_messages(30_000, prefix)
    parts = [msgs[i::3] for i in range(3)]  # before the faults, while read-only, while full
    with tmpfs(tmp_path / "lake", 32) as lake:
        settings = Settings(lake=str(lake), topics=topics, dlq_topic=f"{prefix}.dlq", state_dir=tmp_path / "state",
                            batch_linger_ms=50, batch_max_records=8, api_port=0, close_after_s=1, idle_close_s=2)
        svc = Service(settings, kafka, group_id=prefix)
        svc.worker.ack_patience_s = 1.0
        svc.tick_s = 0.5
        port: list[int] = []
        later: list[dict] = []  # the versions stored after catching up, as `firstfault run` prints them

        def shown(versions: list[dict], before: dict) -> None:  # and whose stderr is gone: rich exits then
            later.extend(versions)
            raise SystemExit(1)

        bg = InThread(lambda: svc.run(serve=True, port=0, on_serving=lambda s: port.append(
            s.servers[0].sockets[0].getsockname()[1]), on_incidents=shown))
        try:
            wait_for(lambda: port, 60, "the API to serve")
            http = httpx.Client(base_url=f"http://127.0.0.1:{port[0]}", timeout=10)

            prog = crash.Progress(kafka, prefix, topics, 2)

            def progress() -> tuple[int, int]:
                return prog()

            def caught_up() -> bool:
                done, total = prog()
                return done == total

            def healthy() -> tuple[int, str, str]:
                r = http.get("/healthz")
                m = [l for l in http.get("/metrics").text.splitlines() if l.startswith("firstfault_ingest_healthy ")]
                return r.status_code, r.json()["reason"], m[0].split()[1]

            asyncio.run(produce(kafka, parts[0]))
            wait_for(caught_up, 60, "the first third to be committed")
            assert healthy() == (200, "", "1.0")
            for fault, part, expect in (("ro", parts[1], "Read-only file system"), ("full", parts[2], "No space left")):
                filler = None
                if fault == "ro":
                    subprocess.run(["mount", "-o", "remount,ro", str(lake)], check=True)
                else:
                    filler = fill(lake)
                asyncio.run(produce(kafka, part))
                code, reason, gauge = wait_for(lambda: (h := healthy())[0] == 503 and h, 60, f"/healthz 503 ({fault})")
                assert expect in reason and reason.startswith("lake:") and gauge == "0.0", (reason, gauge)
                # a batch with nothing to store may have committed before the fault showed; from the first
                # refused write on, nothing moves
                before, _ = progress()
                time.sleep(1.5)
                done, total = progress()
                assert done == before < total, "offsets moved while the lake could not be written"
                if fault == "ro":
                    subprocess.run(["mount", "-o", "remount,rw", str(lake)], check=True)
                else:
                    filler.unlink()
                wait_for(caught_up, 90, f"recovery after {fault}")
                wait_for(lambda: healthy() == (200, "", "1.0"), 30, f"/healthz 200 after {fault}")
            assert svc.worker.health.ok and svc.sink.unstored == []
            metrics = http.get("/metrics").text
            assert "firstfault_store_failures_total" in metrics and "_created" not in metrics
            http.close()
            prog.close()
        finally:
            bg.call(svc.worker.stop.set)
            bg.join(60)
        ingest_clean(kafka, topics, tmp_path / "clean", 8)
        assert_same_events(tmp_path / "clean", lake)
        # every incident version the correlator emitted is in the lake (none lost while the lake refused them)
        from api.store import Store

        rows = Store(Lake(lake)).query("SELECT id, version FROM incidents")
        stored = {r["id"]: r["version"] for r in rows}
        assert stored == {i["id"]: i["version"] for i in svc.sink.incidents.values()}
        # each version stored after catching up was reported once, those the full lake held back included, and a
        # report that failed (a closed stderr) stopped nothing (it stopped `firstfault run`: a break-it pass)
        got = [(i["id"], i["version"]) for i in later]
        versions = {(r["id"], r["version"])
                    for r in Store(Lake(lake)).query("SELECT id, version FROM incident_versions")}
        assert got and len(got) == len(set(got)) and set(got) <= versions


# --- the correlator and its pager killed mid-incident -------------------------------------------------------------


def _iso(t: float) -> str:
    return dt.datetime.fromtimestamp(t, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f+00:00")


async def _ingest_in_process(kafka: str, raw: str, events_topic: str, prefix: str, lake: Path, pipe,
                             by_host: dict[str, list[str]]) -> None:
    """`firstfault ingest` in this process: each host's lines as one record keyed by the host on ``raw``, then an
    ingest worker (group ``prefix``) until caught up: events in ``lake`` and on ``events_topic``."""
    for host, lines in by_host.items():
        await produce_lines(kafka, raw, host, [("\n".join(lines)).encode()])
    w = IngestWorker(bootstrap=kafka, topics=[raw], group_id=prefix, lake=Lake(lake), dlq_topic=f"{prefix}.dlq",
                     events_topic=events_topic, pipeline=pipe, linger_ms=50)
    await w.start()
    try:
        await w.run(until_caught_up=True)
    finally:
        await w.close()


def test_correlator_and_pager_killed_mid_incident(kafka, tmp_path):
    """`firstfault correlate` pages an open incident through a real Alertmanager, is killed with SIGKILL, the
    incident's further evidence arrives, and a new process takes over (same state folder: the pager outbox).
    The incident is not lost (the lake holds its latest version, with the new evidence, as the batch
    correlator finds it) and the page is not duplicated (Alertmanager notified its webhook once)."""
    from tests.test_pager import AM_BIN, Alertmanager, Receiver

    if not Path(AM_BIN).exists():
        pytest.skip(f"{AM_BIN} missing: run scripts/test-deps.sh (Debian package prometheus-alertmanager)")
    from correlate.correlator import correlate, correlation_settings
    from ingest.pipeline import Pipeline

    prefix = f"pagekill.{time.time_ns()}"
    raw, events_topic = f"{prefix}.raw", f"{prefix}.events"
    asyncio.run(ensure_topics(kafka, [raw, events_topic, f"{prefix}.dlq"], partitions=1))
    now = time.time()
    part1 = [f"{_iso(now - 30)} node77 kernel: NVRM: Xid (PCI:0000:18:00): 79, pid=1234, name=python, GPU has "
             "fallen off the bus."]
    part2 = [f"{_iso(now - 25)} node77 kernel: NVRM: GPU 0000:18:00.0: RmInitAdapter failed! (0x23:0xffff:1234)",
             "node77:1234:1300 [0] NCCL INFO comm 0x5600 rank 0 nranks 8 cudaDev 0 busId 18000 commId 0xabc - "
             "Init COMPLETE",
             f"{_iso(now - 20)} node77 python[1234]: [rank0]:[E1206 18:44:16.994932383 ProcessGroupNCCL.cpp:1709] "
             "[PG 1 Rank 0] Timeout at NCCL work: 775, last enqueued NCCL work: 775, last completed NCCL work: 774."]
    # the ingest side, in this process: raw lines -> events published keyed by domain, as `firstfault ingest`
    lake = tmp_path / "lake"
    Lake(lake).init()
    pipe = Pipeline()

    async def publish(lines: list[str]) -> None:
        await _ingest_in_process(kafka, raw, events_topic, prefix, lake, pipe, {"node77": lines})

    hook = Receiver()
    am = Alertmanager(tmp_path, hook.url + "/hook")
    am.start()
    env = crash.worker_env(kafka, prefix, "c", tmp_path, max_records=100)
    env.update(FIRSTFAULT_EVENTS_TOPIC=events_topic, FIRSTFAULT_DLQ_TOPIC=f"{prefix}.dlq", FIRSTFAULT_LAKE=str(lake),
               FIRSTFAULT_ALERTMANAGER_URL=am.url, FIRSTFAULT_CLOSE_AFTER_S="1", FIRSTFAULT_IDLE_CLOSE_S="2",
               FIRSTFAULT_PUBLIC_URL="http://127.0.0.1:1")
    Path(env["FIRSTFAULT_STATE_DIR"]).mkdir()

    def notified(status: str) -> list[str]:
        return [a["labels"]["incident_id"] for n in hook.bodies("/hook") for a in n["alerts"] if a["status"] == status]

    def latest() -> dict[str, dict]:
        from api.store import Store

        return {d["id"]: d for d in (orjson.loads(r["doc"]) for r in Store(Lake(lake)).query(
            "SELECT doc FROM incidents WHERE status <> 'superseded'"))}

    procs = []
    try:
        asyncio.run(publish(part1))
        procs.append(crash.spawn("correlate", env, tmp_path / "correlate.log"))
        [first] = wait_for(lambda: notified("firing"), 60, "the page of the incident")
        v1 = latest()[first]
        assert v1["category"] == "gpu_off_bus" and not v1["downstream"]
        asyncio.run(publish(part2))
        os.killpg(procs[0].pid, signal.SIGKILL)  # mid-incident: its further evidence is in fleet.events
        procs[0].wait(10)
        procs.append(crash.spawn("correlate", env, tmp_path / "correlate.log"))
        inc = wait_for(lambda: (i := latest().get(first)) and i["downstream"] and i, 90, "the incident's next version")
        ours = lambda: [a for a in am.alerts() if a["labels"].get("incident_id") == first]  # noqa: E731
        wait_for(lambda: [a for a in ours() if a["annotations"].get("version") == str(inc["version"])], 30,
                 "Alertmanager to hold the update")
        time.sleep(1.5)  # past group_wait and group_interval: a second notification would be here by now
        assert notified("firing") == [first], hook.bodies("/hook")
        assert [d["kind"] for d in inc["downstream"]] == ["nccl_timeout"] and inc["status"] == "open"
        # not lost, not changed: the lake's incidents are the batch correlator's on the stored events
        from api.store import Store
        import pyarrow as pa

        from schemas.events import EVENTS_SCHEMA

        rows = Store(Lake(lake)).query("SELECT * FROM events")
        table = pa.Table.from_pylist([{k: r[k] for k in EVENTS_SCHEMA.names} for r in rows], schema=EVENTS_SCHEMA)
        want = correlate(table, settings=correlation_settings(Settings()), now_us=int(time.time() * 1e6))
        assert sorted(latest()) == sorted(i["id"] for i in want) == [first]
    finally:
        for p in procs:
            crash.stop(p)
        am.stop()
        hook.stop()
    assert "Traceback" not in (tmp_path / "correlate.log").read_text()


def test_a_restarted_correlate_worker_joins_a_long_timeout_to_a_fault_it_kept_aside(kafka, tmp_path):
    """`firstfault correlate --once` reads a 4-rank job's init lines, n1's Xid 79 and, in later batches, the hosts
    logging on for four hours (a one-rank job on each host's other GPU inits every 20 minutes): the Xid's
    incident is stored and goes cold (kept aside for watchdog timeouts that come hours later), and the worker's
    commit moves past it. A second `firstfault correlate
    --once` starts over from the commit; then the other ranks' watchdog timeouts of a 4 h NCCL timeout come.
    It reads the Xid back from the lake once n1's events come through it (``read_back``), so the timeouts
    join the Xid's incident as the batch correlator joins them — before, the restarted worker had lost it
    and named n1's rank 0 silent."""
    from datetime import datetime, timedelta, timezone

    import pyarrow as pa

    from api.store import Store
    from correlate.correlator import correlate, correlation_settings
    from ingest.pipeline import Pipeline
    from schemas.events import EVENTS_SCHEMA
    from tests.test_communicators import _long_timeout, fallen, init

    prefix = f"coldback.{time.time_ns()}"
    raw, events_topic = f"{prefix}.raw", f"{prefix}.events"
    asyncio.run(ensure_topics(kafka, [raw, events_topic, f"{prefix}.dlq"], partitions=1))
    lake = tmp_path / "lake"
    Lake(lake).init()
    pipe = Pipeline()
    a = datetime.now(timezone.utc).replace(microsecond=0) - timedelta(hours=6)
    xid = a + timedelta(hours=1)
    hang = xid + timedelta(hours=4)
    comm = "0x00000000000000ab"

    async def publish(by_host: dict[str, list[str]]) -> None:
        await _ingest_in_process(kafka, raw, events_topic, prefix, lake, pipe, by_host)

    env = crash.worker_env(kafka, prefix, "c", tmp_path, max_records=100)
    env.update(FIRSTFAULT_EVENTS_TOPIC=events_topic, FIRSTFAULT_DLQ_TOPIC=f"{prefix}.dlq", FIRSTFAULT_LAKE=str(lake))
    Path(env["FIRSTFAULT_STATE_DIR"]).mkdir()

    def correlate_once() -> None:
        p = crash.spawn("correlate", env, tmp_path / "correlate.log", "--once")
        assert p.wait(120) == 0, (tmp_path / "correlate.log").read_text()[-3000:]

    def latest() -> list[tuple[str, str | None, int]]:
        docs = [orjson.loads(r["doc"]) for r in Store(Lake(lake)).query(
            "SELECT doc FROM incidents WHERE status <> 'superseded'")]
        return sorted((d["pattern"], d["initiator"].get("host"), len(d["downstream"])) for d in docs)

    asyncio.run(publish({f"n{r + 1}": [init(a, f"n{r + 1}", 100 + r, r, 4, comm)] for r in range(4)}))
    asyncio.run(publish({"n1": [fallen(xid)]}))
    # every host logs on (a one-rank job on its other GPU every 20 minutes): the job's init lines and the Xid
    # grow older than the events kept, so the commit moves past them
    busy = {f"n{r + 1}": [init(xid + timedelta(minutes=20 * k), f"n{r + 1}", 500 + 20 * r + k, 0, 1,
                               f"0x0000000000000{r + 1}{k:02x}", gpu=1) for k in range(1, 12)] for r in range(4)}
    asyncio.run(publish({h: lines[:6] for h, lines in busy.items()}))
    asyncio.run(publish({h: lines[6:] for h, lines in busy.items()}))
    correlate_once()
    assert ("roots", "n1", 0) in latest()
    asyncio.run(publish({f"n{r + 1}": [_long_timeout(hang + timedelta(milliseconds=r), r, 4)] for r in (1, 2, 3)}))
    correlate_once()
    rows = Store(Lake(lake)).query("SELECT * FROM events")
    table = pa.Table.from_pylist([{k: r[k] for k in EVENTS_SCHEMA.names} for r in rows], schema=EVENTS_SCHEMA)
    want = correlate(table, settings=correlation_settings(Settings()), now_us=int(time.time() * 1e6))
    assert [(x["pattern"], x["initiator"].get("host"), len(x["downstream"])) for x in want
            if x["initiator"].get("host") == "n1"] == [("roots", "n1", 3)]
    assert ("roots", "n1", 3) in latest() and not [x for x in latest() if x[0] == "comm.silent_rank"], latest()
    assert "Traceback" not in (tmp_path / "correlate.log").read_text()


def test_run_restarts_over_its_own_lake_and_logs_json_only(kafka, tmp_path):
    """``firstfault run --once`` twice over one lake (a restart: the second reads the stored incidents and the
    recent events back), in ``log_format = json``: both exit 0, and every stderr line of both is one JSON object
    — the caught-up summary too (the text mode prints a table there)."""
    prefix = f"restart.{time.time_ns()}"
    topics = [f"{prefix}.{s}" for s in SOURCES]
    asyncio.run(ensure_topics(kafka, topics + [f"{prefix}.run.events", f"{prefix}.run.dlq"], partitions=1))
    sample = Path(__file__).resolve().parents[1] / "samples" / "fleet" / "node004.dmesg.log"
    asyncio.run(produce_lines(kafka, f"{prefix}.dmesg", "node004", [sample.read_bytes()]))
    env = crash.worker_env(kafka, prefix, "run", tmp_path, max_records=100)
    env["FIRSTFAULT_LOG_FORMAT"] = "json"
    Path(env["FIRSTFAULT_STATE_DIR"]).mkdir()
    summaries = []
    for attempt in range(2):
        r = subprocess.run([crash.FIRSTFAULT, "run", "--once", "--no-serve"], env=env, capture_output=True,
                           text=True, timeout=180, cwd=env["FIRSTFAULT_STATE_DIR"])
        assert r.returncode == 0, (attempt, r.stderr[-3000:])
        records = [orjson.loads(line) for line in r.stderr.splitlines() if line.strip()]  # raises on text
        summaries += [x for x in records if x["message"].startswith("caught up")]
    assert len(summaries) == 2 and summaries[0]["incidents"] and summaries[1]["incidents"] == summaries[0]["incidents"]
    # in text mode the one-shot run's incidents are its output, on stdout as `demo --once` prints them (they
    # went to stderr: a fresh-user trial)
    env["FIRSTFAULT_LOG_FORMAT"] = "text"
    r = subprocess.run([crash.FIRSTFAULT, "run", "--once", "--no-serve"], env=env, capture_output=True,
                       text=True, timeout=180, cwd=env["FIRSTFAULT_STATE_DIR"])
    n = len(summaries[0]["incidents"])
    assert r.returncode == 0 and f"caught up: {n} incident{'s' * (n != 1)}" in r.stdout and "caught up" not in r.stderr, \
        (r.stdout[-2000:], r.stderr[-2000:])
    assert "node004" in r.stdout and "  next " in r.stdout  # each incident's whole next action under the table


@pytest.mark.parametrize("command,setting", [("correlate", "EVENTS_TOPIC"), ("correlate", "DLQ_TOPIC"),
                                             ("ingest", "DLQ_TOPIC")])
def test_a_worker_on_a_topic_the_broker_lacks_says_so_in_one_line(kafka, tmp_path, command, setting):
    """`firstfault correlate` on an events topic the broker does not have printed aiokafka's traceback
    (UnknownTopicOrPartitionError); `firstfault ingest` without its dead-letter topic fetched, then retried the
    batch's store for ever, unhealthy with an unnamed UnknownTopicOrPartitionError. Each names the missing topic
    and the broker at start and says which command creates the topics, exit 1 — `firstfault correlate` its
    dead-letter topic too (where the records of fleet.events it cannot read go)."""
    missing = f"missing.{time.time_ns()}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("FIRSTFAULT_")}
    env.update(FIRSTFAULT_KAFKA_BOOTSTRAP=kafka, FIRSTFAULT_LAKE=str(tmp_path / "lake"),
               FIRSTFAULT_STATE_DIR=str(tmp_path / "state"), **{f"FIRSTFAULT_{setting}": missing})
    if command == "ingest":
        env["FIRSTFAULT_TOPICS"] = "fleet.dmesg"
        asyncio.run(ensure_topics(kafka, ["fleet.dmesg", "fleet.events"]))
    else:  # the other topic it needs is there: only the missing one is named
        asyncio.run(ensure_topics(kafka, ["fleet.events", "fleet.dlq"]))
    r = subprocess.run([crash.FIRSTFAULT, command, "--once"], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 1 and f"topic {missing} does not exist on the broker at {kafka}" in r.stderr, r.stderr
    assert "firstfault kafka topics" in r.stderr and "Traceback" not in r.stderr


def test_a_correlator_step_that_raises_is_said_counted_and_tried_again(caplog):
    """A defect (a derived signature without what the correlator reads of every signature) made every step raise:
    ``firstfault run`` and ``correlate`` crash-looped on their batch, ingest stopped with them (a break-it pass).
    ``StepGuard`` says it once with its traceback (then once a minute), counts it, keeps it for ``/healthz``, and
    gives no incidents; the next step that succeeds clears it."""
    import logging

    from prometheus_client import REGISTRY

    from correlate.metrics import StepGuard

    class Flaky:
        def __init__(self):
            self.fail = 3

        def step(self, now_us, flush=False):
            if self.fail:
                self.fail -= 1
                raise AttributeError("'DerivedSignature' object has no attribute 'action_map'")
            return [{"id": "inc-1"}]

    before = REGISTRY.get_sample_value("firstfault_correlate_step_failures_total") or 0.0
    guard, c = StepGuard(), Flaky()
    with caplog.at_level(logging.ERROR, logger="firstfault.correlate"):
        assert [guard(c, 1), guard(c, 2), guard(c, 3, flush=True)] == [[], [], []]
    assert guard.failures == 3 and guard.last_error == (
        "AttributeError: 'DerivedSignature' object has no attribute 'action_map'")
    said = [r for r in caplog.records if r.name == "firstfault.correlate"]
    assert len(said) == 1 and said[0].exc_info and said[0].error_code == "correlate_failed"  # once, with traceback
    assert REGISTRY.get_sample_value("firstfault_correlate_step_failures_total") - before == 3
    assert guard(c, 4) == [{"id": "inc-1"}] and guard.last_error is None and guard.failures == 3


def test_a_report_that_raises_leaves_the_ticks_going(tmp_path, monkeypatch, caplog):
    """A defect in the hourly report (a rate of None summed: a break-it pass) raised out of ``Hourly.maybe_write``
    and ended the service's tick task, which also resolves quiet incidents. It is said once an hour with its
    traceback, and the next tick tries again."""
    import asyncio
    import logging

    import api.report
    from api.service import Hourly
    from ingest.lake import Lake
    from schemas.settings import Settings

    calls = []

    def boom(settings, hour, **kw):
        calls.append(hour)
        raise TypeError("unsupported operand type(s) for +: 'int' and 'NoneType'")

    monkeypatch.setattr(api.report, "write_hourly", boom)
    lake = Lake(tmp_path / "lake")
    lake.init()
    h = Hourly(Settings(lake=str(tmp_path / "lake")), lake)
    with caplog.at_level(logging.ERROR):
        for _ in range(3):
            asyncio.run(h.maybe_write())
    said = [r for r in caplog.records if getattr(r, "error_code", None) == "report_failed"]
    assert len(calls) == 3 and len(said) == 1 and said[0].exc_info and h.done is None


def test_stopping_a_client_survives_the_cancelled_fetch_aiokafka_re_raises():
    """aiokafka's consumer ``stop()`` re-raises the CancelledError of the fetch it cancels while that fetch sleeps
    its retry backoff (after a long correlator step held the loop): ``run --once`` printed every incident, then
    exited 1 with the traceback (a break-it pass). ``stop_client`` takes it, and Kafka errors; a cancellation of the
    stopping task itself still goes through. (The failing ``stop`` is a coroutine of ours: the race needs a fetch
    timing out mid-backoff, which a test cannot time.)"""
    import asyncio

    from aiokafka.errors import KafkaConnectionError

    from ingest.consumer import stop_client

    async def cancelled_inside() -> None:
        raise asyncio.CancelledError()

    async def broken() -> None:
        raise KafkaConnectionError("gone")

    async def main() -> str:
        await stop_client(cancelled_inside)
        await stop_client(broken)

        async def slow() -> None:
            await asyncio.sleep(10)

        t = asyncio.ensure_future(stop_client(slow))
        await asyncio.sleep(0)
        t.cancel()
        try:
            await t
        except asyncio.CancelledError:
            return "cancelled"
        return "swallowed"

    assert asyncio.run(main()) == "cancelled"


def test_an_unhealthy_ingest_worker_names_the_broker_or_the_lake_in_its_log(caplog):
    """A broker that does not answer is logged ``stage: kafka``, ``error_code: broker_unavailable``; a lake that
    refuses a batch ``stage: store``, ``error_code: store_failed``; each once per reason (a broker outage was logged
    as a storage failure, and an alert routed on store_failed read it as the lake's: a break-it pass)."""
    import logging

    from ingest.consumer import Health, broker_silent

    h = Health()
    with caplog.at_level(logging.ERROR, logger="firstfault"):
        h.fail(broker_silent(TimeoutError(), 10))
        h.fail(broker_silent(TimeoutError(), 10))  # the same reason: not logged again
        h.fail("lake: [Errno 28] No space left on device")
    got = [(r.stage, r.error_code) for r in caplog.records if r.getMessage().startswith("ingest unhealthy")]
    assert got == [("kafka", "broker_unavailable"), ("store", "store_failed")]
    assert not h.ok and h.reason.startswith("lake:")


def test_run_takes_the_session_timeout_setting(tmp_path):
    """`firstfault run`'s consumer-group member uses `session_timeout_ms`, as `firstfault ingest`'s does: it used
    aiokafka's default 30 s whatever the setting, so a `run` restarted after a kill -9 of the last one waited 25 s
    for the dead member's partitions. No broker: the worker is built, not started."""
    from api.service import Service

    settings = Settings(lake=str(tmp_path / "lake"), state_dir=tmp_path / "state", session_timeout_ms=6000)
    svc = Service(settings, "127.0.0.1:9")
    assert svc.worker.session_timeout_ms == 6000


def test_run_and_ingest_take_the_once_give_up_setting(tmp_path):
    """`firstfault run --once` and `ingest --once` give a failing batch up after `once_give_up_s`, the setting's
    value, not the worker's default 60 s. No broker: the workers are built, not started."""
    from api.service import IngestService, Service

    settings = Settings(lake=str(tmp_path / "lake"), state_dir=tmp_path / "state", once_give_up_s=7.5)
    assert Service(settings, "127.0.0.1:9").worker.once_give_up_s == 7.5
    assert IngestService(settings, "127.0.0.1:9").worker.once_give_up_s == 7.5


def test_run_reports_its_correlator_healthy_in_metrics(tmp_path):
    """`firstfault run`'s (and the demo's) /metrics says `firstfault_correlate_healthy` as its /healthz says ok: only
    a correlate worker set the gauge, so a healthy `run` said 0 for good (a fresh user's trial). A step that raises
    makes it 0 until one succeeds. No broker: the service is built, not started."""
    from api.service import Service

    settings = Settings(lake=str(tmp_path / "lake"), state_dir=tmp_path / "state")
    svc = Service(settings, "127.0.0.1:9")
    assert svc.health()["ok"] and REGISTRY.get_sample_value("firstfault_correlate_healthy") == 1
    svc.step.last_error = "RuntimeError: boom"
    assert not svc.health()["ok"] and REGISTRY.get_sample_value("firstfault_correlate_healthy") == 0
    svc.step.last_error = None
    assert REGISTRY.get_sample_value("firstfault_correlate_healthy") == 1


@pytest.mark.kafka
def test_a_lake_refusing_the_incidents_when_caught_up_does_not_end_run(kafka, tmp_path):
    """`firstfault run`'s service, its incidents refused by the lake at the flush when it has caught up: the
    LakeError went out of ``Service.run`` and the service ended, exit 1 (a break-it pass: `ulimit -f 64`, the
    flush's incidents part over 64 KiB, the events parts under it), where a tick's refusal is kept and stored later.
    It now goes on and stores them once the lake takes them. The refusal is injected into the lake's writes of the
    incident tables from the moment ingest has caught up (a real full disk would refuse the events parts of the
    batches before it too); the broker, the lake and the correlator are real."""
    from api.service import Service
    from api.store import Store
    from ingest.lake import LakeError

    prefix = f"flushfull.{time.time_ns()}"
    topics = [f"{prefix}.{s}" for s in SOURCES]
    asyncio.run(ensure_topics(kafka, topics + [f"{prefix}.dlq"], partitions=1))
    asyncio.run(produce(kafka, corpus_messages(3000, prefix)))
    settings = Settings(lake=str(tmp_path / "lake"), topics=topics, dlq_topic=f"{prefix}.dlq",
                        state_dir=tmp_path / "state", batch_linger_ms=50)
    svc = Service(settings, kafka, group_id=prefix)
    svc.tick_s = 0.5
    full = threading.Event()
    write = svc.sink.lake.write

    def refusing(table: str, *a, **kw):
        if full.is_set() and table.startswith("incident"):
            raise LakeError(f"writing {table} failed: [Errno 27] File too large")
        return write(table, *a, **kw)

    svc.sink.lake.write = refusing
    caught = svc.worker.run

    async def run_then_full(**kw) -> bool:
        done = await caught(**kw)  # whether it caught up: Service.run says "caught up" only then
        if kw.get("until_caught_up"):
            full.set()
        return done

    svc.worker.run = run_then_full
    seen: list[list] = []
    bg = InThread(lambda: svc.run(serve=False, on_caught_up=seen.append))
    try:
        wait_for(lambda: seen or bg.done.is_set(), 120, "the service to catch up")
        assert seen and svc.sink.unstored and not bg.done.is_set(), bg.error
        time.sleep(1.5)  # ticks while the lake refuses
        assert not bg.done.is_set(), bg.error
        kept = {i["id"] for i in svc.sink.unstored}
        full.clear()
        wait_for(lambda: not svc.sink.unstored, 30, "a tick to store the kept incidents")
        stored = {r["id"] for r in Store(svc.lake).query("SELECT id FROM incidents")}
        assert kept and kept <= stored
    finally:
        bg.call(svc.worker.stop.set)
        bg.join(60)


@pytest.mark.kafka
def test_an_idle_worker_with_no_linger_does_not_spin(kafka, tmp_path):
    """`batch_linger_ms = 0` (allowed: a batch is taken as soon as its records are there) and nothing to read: the
    worker called ``getmany(timeout_ms=0)`` back to back, 100 % of a core while idle, and `firstfault run`'s API
    took seconds to answer /healthz (a break-it pass: 11 s of CPU per 11 s). An idle fetch now waits for records
    (``IDLE_FETCH_MS``); a record produced meanwhile is still stored at once."""
    prefix = f"nolinger.{time.time_ns()}"
    asyncio.run(ensure_topics(kafka, [f"{prefix}.raw", f"{prefix}.dlq"], partitions=1))
    lake = Lake(tmp_path / "lake")
    lake.init()
    worker = IngestWorker(bootstrap=kafka, topics=[f"{prefix}.raw"], group_id=prefix, lake=lake,
                          dlq_topic=f"{prefix}.dlq", linger_ms=0, session_timeout_ms=6000)
    fetches = []

    async def main() -> tuple[int, float]:
        await worker.start()
        _count_fetches(worker, fetches)
        try:
            await worker.run(until_caught_up=True)
            task = asyncio.create_task(worker.run())
            await asyncio.sleep(3.0)
            idle = len(fetches)
            t0 = time.monotonic()
            await produce_lines(kafka, f"{prefix}.raw", "node07",
                                [b"[  100.000000] NVRM: Xid (PCI:0000:18:00): 79, pid=0, GPU has fallen off the bus."])
            while worker.health.events < 1 and time.monotonic() - t0 < 10:
                await asyncio.sleep(0.02)
            took = time.monotonic() - t0
            worker.stop.set()
            await task
            return idle, took
        finally:
            await worker.close()

    idle, took = asyncio.run(main())
    assert idle < 30, f"{idle} fetches in 3 s while idle"
    assert worker.health.events == 1 and took < 2.0, (worker.health.events, took)


def _count_fetches(worker, fetches: list) -> None:
    """Each fetch of ``worker``'s started consumer appends its ``timeout_ms`` to ``fetches`` (and fetches)."""
    getmany = worker._consumer.getmany

    async def counted(*a, **kw):
        fetches.append(kw.get("timeout_ms"))
        return await getmany(*a, **kw)

    worker._consumer.getmany = counted


@pytest.mark.kafka
def test_a_worker_catching_up_does_not_wait_the_idle_fetch(kafka, tmp_path):
    """``run(until_caught_up=True)`` (`run --once`, the catch-up of `run` and the demo): an empty fetch is followed
    by a question of the partitions' ends, so it needs no idle wait; waiting ``IDLE_FETCH_MS`` there ended `run
    --once` 0.3 - 0.5 s later than before it (a break-it pass: 2.8 s, then 3.2 s). While catching up a fetch waits
    at most ``linger_ms``; an idle worker after it still waits ``IDLE_FETCH_MS``."""
    from ingest.consumer import IDLE_FETCH_MS

    prefix = f"catchup.{time.time_ns()}"
    asyncio.run(ensure_topics(kafka, [f"{prefix}.raw", f"{prefix}.dlq"], partitions=1))
    asyncio.run(produce_lines(kafka, f"{prefix}.raw", "node07",
                              [b"[  100.000000] NVRM: Xid (PCI:0000:18:00): 79, pid=0, GPU has fallen off the bus."]))
    lake = Lake(tmp_path / "lake")
    lake.init()
    worker = IngestWorker(bootstrap=kafka, topics=[f"{prefix}.raw"], group_id=prefix, lake=lake,
                          dlq_topic=f"{prefix}.dlq", linger_ms=200, session_timeout_ms=6000)
    fetches: list[int] = []

    async def main() -> list[int]:
        await worker.start()
        _count_fetches(worker, fetches)
        try:
            await worker.run(until_caught_up=True)
            catching_up = fetches[:]
            task = asyncio.create_task(worker.run())
            await asyncio.sleep(1.2)
            worker.stop.set()
            await task
            return catching_up
        finally:
            await worker.close()

    catching_up = asyncio.run(main())
    assert worker.health.events == 1 and catching_up and max(catching_up) <= 200, catching_up
    assert fetches[len(catching_up):] and set(fetches[len(catching_up):]) == {IDLE_FETCH_MS}, fetches


def _exit_after(p: subprocess.Popen, log: Path, stop: Callable[[], None],
                within_s: float) -> tuple[int | None, float, str]:
    """``stop()`` (what ends ``p``'s run), then ``p``'s exit code (None if it still runs after ``within_s``), the
    seconds from the end of ``stop()`` to its exit, and its ``log``'s text. ``p`` (its process group) is killed if it
    still runs then, or when ``stop()`` raised."""
    try:
        stop()
        t0 = time.monotonic()
        try:
            rc = p.wait(within_s)
        except subprocess.TimeoutExpired:
            rc = None
        took = time.monotonic() - t0
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    return rc, took, log.read_text()


def test_a_once_run_whose_broker_dies_while_it_stores_a_batch_exits_1_in_bounded_time(tmp_path):
    """`ingest --once` whose broker is stopped mid-backlog logged "ingest unhealthy: kafka: cannot store the batch"
    and then waited for good (aiokafka never gives up an idempotent producer's send), and its first SIGTERM waited on
    the producer's stop (a break-it pass). It gives the batch up after ``once_give_up_s`` and exits 1 naming the
    broker and the records not stored, within two minutes of the broker's end: the give-up, plus one send that
    stalls on the broker's metadata (aiokafka's 40 s request timeout: 37 s under CI's load), plus each Kafka
    client's bounded stop (``consumer.STOP_CLIENT_S``, 10 s). Without the bound it never exited."""
    state = tmp_path / "broker"
    st = broker.start(state, timeout_s=180)
    try:
        prefix = "oncedie"
        env = crash.worker_env(st.bootstrap, prefix, "r", tmp_path, max_records=8)
        env.update(FIRSTFAULT_ONCE_GIVE_UP_S="3", PYTHONPATH=str(Path(__file__).resolve().parents[1]))
        Path(env["FIRSTFAULT_STATE_DIR"]).mkdir()
        topics = env["FIRSTFAULT_TOPICS"].split(",")
        asyncio.run(ensure_topics(st.bootstrap, topics + [env["FIRSTFAULT_EVENTS_TOPIC"], env["FIRSTFAULT_DLQ_TOPIC"]],
                                  partitions=3))
        asyncio.run(produce(st.bootstrap, corpus_messages(20_000, prefix)))
        log = tmp_path / "ingest.log"
        p = crash.spawn("ingest", env, log, "--once")
        lake = Path(env["FIRSTFAULT_LAKE"]) / "events"

        def stop() -> None:  # once a batch is stored, so that batches are under way (a fixed 1.5 s was before the
            # first fetch in CI: the run then gave up reading, not storing)
            wait_for(lambda: any(f.parent.parent.parent.name != "kind=_schema" for f in lake.rglob("*.parquet")),
                     120, "the first batch in the lake")
            broker.stop(state)

        rc, took, said = _exit_after(p, log, stop, 150)
        assert rc == 1, said[-2000:]
        assert took < 120, (took, said[-2000:])
        # the batch in hand, named; or, when the broker ended between batches, the fetch given up (nothing in hand)
        assert re.search(rf"not stored: cannot [a-z ]+ for 3 s: .*{re.escape(st.bootstrap)}.*; not stored: "
                         rf"{prefix}\.\w+/\d offsets \d+-\d+.*; no offset past them was committed", said) \
            or re.search(rf"not stored: the Kafka broker {re.escape(st.bootstrap)} did not answer for 3 s \(.+\); "
                         "what was not yet read is read by the next run", said), said[-2000:]
    finally:
        broker.stop(state)


def _once_env(kafka: str, prefix: str, work: Path, max_records: int) -> dict[str, str]:
    """A one-shot run's environment (``crash.worker_env``, run "r"; give-up 600 s, the API on any port, this
    checkout's code) with its state folder and its topics made."""
    env = crash.worker_env(kafka, prefix, "r", work, max_records=max_records)
    env.update(FIRSTFAULT_ONCE_GIVE_UP_S="600", FIRSTFAULT_API_PORT="0",
               PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    Path(env["FIRSTFAULT_STATE_DIR"]).mkdir()
    topics = env["FIRSTFAULT_TOPICS"].split(",")
    asyncio.run(ensure_topics(kafka, topics + [env["FIRSTFAULT_EVENTS_TOPIC"], env["FIRSTFAULT_DLQ_TOPIC"]]))
    return env


@pytest.mark.parametrize(("command", "signals"), [("ingest", ("SIGTERM",)), ("run", ("SIGTERM",)),
                                                  ("ingest", ("SIGINT",)), ("run", ("SIGTERM", "SIGINT"))])
def test_a_once_run_stopped_while_its_lake_refuses_a_batch_exits_1_naming_the_records(kafka, tmp_path, command,
                                                                                       signals):
    """`ingest --once` (and `run --once`) SIGTERMed while its lake refused a batch exited 0 and printed "ingested 0
    Kafka records", the batch named only as "abandoned: stopping …" in the log, with no partition or offset (a
    break-it pass). A one-shot run that a signal stopped with records not stored exits 1 and names them, as its
    give-up does; run again on a lake that takes them, it reads and stores them (nothing was committed past them).
    The lake refuses because its ``events/kind=xid`` folder is a file. The bounds are what the code guarantees under
    CI's load: the stop is seen at once (the retry's pause waits on it), then each Kafka client gets 10 s to stop
    (``consumer.STOP_CLIENT_S``) and a request in flight up to aiokafka's 40 s timeout: 70 s, bounded at 150 s for a
    loaded machine; the give-up (600 s) is far. Ctrl-C (SIGINT) in the give-up's wait is the same stop. A second
    signal ends the process at once, exit 1: it said "without the last commit" and named no record (a helper's
    pass); it names the batch it leaves, and nothing past it was committed (the next run reads and stores it)."""
    prefix = f"oncestop.{command}.{len(signals)}.{time.time_ns()}"
    env = _once_env(kafka, prefix, tmp_path, 8)
    lake = Path(env["FIRSTFAULT_LAKE"])
    Lake(lake).init()
    (lake / "events").mkdir(exist_ok=True)
    (lake / "events" / "kind=xid").write_text("a file where the lake has a folder\n")
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    line = f"{stamp} node31 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=0, GPU has fallen off the bus."
    asyncio.run(produce(kafka, [(f"{prefix}.dmesg", b"node31", line.encode(), int(time.time() * 1000), 1)]))
    log = tmp_path / "once.log"
    p = crash.spawn(command, env, log, "--once")

    def stop() -> None:
        wait_for(lambda: b"unhealthy: lake:" in log.read_bytes(), 120, "the lake to refuse the batch")
        for sig in signals:
            os.killpg(p.pid, getattr(signal, sig))

    rc, took, said = _exit_after(p, log, stop, 240)
    assert rc == 1, said[-2000:]
    assert took < 150, (took, said[-2000:])
    last = said.strip().splitlines()[-1]
    if len(signals) == 2:  # the second: at once, naming the record it leaves not stored
        assert re.fullmatch(r"a second signal: stopping now, without the last commit; (stopped .*; )?not stored: "
                            rf"{re.escape(prefix)}\.dmesg/0 offsets 0-0; no offset past them was committed, the next "
                            "run reads them again", last), said[-2000:]
        assert "caught up" not in said, said[-2000:]
    else:  # the last line: what stopped it, on what, and the records, as the give-up says them
        assert re.fullmatch(
            rf"not stored: stopped \(SIGTERM or Ctrl-C\) before this worker could store the batch: the lake "
            rf"{re.escape(str(lake))} refused it \(.*Not a directory.*\); not stored: {re.escape(prefix)}\.dmesg/0 "
            r"offsets 0-0; no offset past them was committed, the next run reads them again", last), said[-2000:]
        assert "ingested 0 Kafka records" not in said and "caught up" not in said, said[-2000:]
        assert re.search(rf"abandoned: .*; not committed: {re.escape(prefix)}\.dmesg/0 offsets 0-0", said), \
            said[-2000:]
    # the lake takes the batch again: the next run reads the record the stop left and stores its event
    (lake / "events" / "kind=xid").unlink()
    again = subprocess.run([crash.FIRSTFAULT, command, "--once"], env=env, capture_output=True, text=True,
                           timeout=300, cwd=env["FIRSTFAULT_STATE_DIR"])
    assert again.returncode == 0, again.stderr[-2000:]
    assert re.search(r"ingested 1 Kafka record, 1 line → 1 event", again.stderr), again.stderr[-2000:]
    from api.store import Store

    rows = Store(Lake(lake)).query("SELECT host, kind, xid FROM events")
    assert rows == [{"host": "node31", "kind": "xid", "xid": 79}], rows


def _spawn_once(command: str, env: dict[str, str], work: Path) -> tuple[subprocess.Popen, Path, Path]:
    """``firstfault COMMAND --once`` in its own session (``killpg`` reaches all of it): the process, its stderr's file
    and its stdout's (the one-shot run's report)."""
    log, out = work / f"{command}.log", work / f"{command}.out"
    with open(log, "ab") as err, open(out, "ab") as so:
        p = subprocess.Popen([crash.FIRSTFAULT, command, "--once"], env=env, cwd=env["FIRSTFAULT_STATE_DIR"],
                             stdout=so, stderr=err, stdin=subprocess.DEVNULL, start_new_session=True)
    return p, log, out


STOPPED_EARLY = r"stopped \(SIGTERM or Ctrl-C\) before catching up: (\d+) incidents?"


@pytest.mark.parametrize("command", ["run", "ingest"])
def test_a_run_once_stopped_before_it_caught_up_says_so_not_caught_up(kafka, tmp_path, command):
    """`run --once` SIGTERMed while catching up with a backlog, every batch it took stored and committed (nothing in
    hand), exited 0 and printed "caught up: N incidents", though records were left unread (a helper's pass). It says
    it stopped before catching up, on stderr and as its report's title, and exits 0 as such a stop does
    (docs/operations.md's exit codes: nothing it took is lost). The backlog (50,000 lines, 2 records a batch: some
    100 batches) takes far longer than the stop after its first batch. `ingest --once` said only what it read, as if
    that were all: its summary begins with the same words."""
    prefix = f"oncestopped.{command}.{time.time_ns()}"
    env = _once_env(kafka, prefix, tmp_path, 2)
    msgs = corpus_messages(50_000, prefix)
    asyncio.run(produce(kafka, msgs))
    p, log, out = _spawn_once(command, env, tmp_path)
    lake = Path(env["FIRSTFAULT_LAKE"]) / "events"

    def stop() -> None:
        wait_for(lambda: any(f.parent.parent.parent.name != "kind=_schema" for f in lake.rglob("*.parquet")),
                 120, "the first batch in the lake")
        os.killpg(p.pid, signal.SIGTERM)

    rc, took, said = _exit_after(p, log, stop, 150)
    report = out.read_text()
    assert rc == 0, said[-2000:]
    if command == "ingest":
        assert re.search(r"^stopped \(SIGTERM or Ctrl-C\) before catching up: ingested \d+ Kafka records?, ", said,
                         re.M), said[-2000:]
    else:
        assert re.search(STOPPED_EARLY, report.splitlines()[0]), report[:2000]
    read = int(re.search(r"ingested (\d+) Kafka records?, ", said)[1])
    assert 0 < read < len(msgs), (read, len(msgs))
    assert "caught up:" not in said + report.replace("before catching up:", ""), (said[-2000:], report[:500])


def test_a_correlate_once_stopped_before_it_caught_up_says_so_not_caught_up(kafka, tmp_path, pipeline):
    """`correlate --once` SIGTERMed while it reads a backlog of ``fleet.events`` exited 0 and printed "caught up: N
    incidents" (a helper's pass). It says what `run --once` says (stopped before catching up, in its report's title),
    exit 0. The backlog: 20,000 lines' events of the benchmark mix, a record per 4 events; the stop comes as soon as
    the worker says it reads, before its first step."""
    from ingest.decode import Decoded, Segment
    from ingest.publish import encode_records

    prefix = f"oncestopped.correlate.{time.time_ns()}"
    env = crash.worker_env(kafka, prefix, "r", tmp_path, max_records=8)
    env.update(PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    Path(env["FIRSTFAULT_STATE_DIR"]).mkdir()
    topic = env["FIRSTFAULT_EVENTS_TOPIC"]
    asyncio.run(ensure_topics(kafka, [topic, env["FIRSTFAULT_DLQ_TOPIC"]]))
    now_us = time.time_ns() // 1000
    segs = [Segment(data=value, origin=f"t:{key.decode()}:{i}", stream=key.decode(), host=key.decode(), ref_ts=now_us,
                    ref_basis="kafka", ingest_ts=now_us) for i, (_, key, value, _, _) in
            enumerate(corpus_messages(20_000, prefix))]
    events = pipeline.run(Decoded(segments=segs)).events
    records = [(topic, b"k", v, now_us // 1000, 0) for i in range(0, events.num_rows, 4)
               for v in encode_records(events.slice(i, 4))]
    asyncio.run(produce(kafka, records))
    p, log, out = _spawn_once("correlate", env, tmp_path)

    def stop() -> None:
        wait_for(lambda: b"correlate worker: reading" in log.read_bytes(), 120, "the worker to start reading")
        os.killpg(p.pid, signal.SIGTERM)

    rc, took, said = _exit_after(p, log, stop, 150)
    report = out.read_text()
    assert rc == 0, said[-2000:]
    assert re.match(STOPPED_EARLY, report), report[:2000]
    # stopped before its step caught up, it may have read every record already (a fast fetch): no more than sent
    read = int(re.search(rf"read (\d+) {re.escape(topic)} records?", said)[1])
    assert read <= len(records), (read, len(records))
    assert "caught up:" not in said + report.replace("before catching up:", ""), (said[-2000:], report[:500])


def _group(kafka: str, group: str) -> tuple[str, list, dict]:
    """A consumer group's state ("Empty", "Stable", …), its members and its committed offsets (partition ->
    ``OffsetAndMetadata``), as the broker has them now."""
    from aiokafka.admin import AIOKafkaAdminClient

    async def go() -> tuple[str, list, dict]:
        admin = AIOKafkaAdminClient(bootstrap_servers=kafka)
        await admin.start()
        try:
            (_err, _gid, state, _ptype, _proto, members), = (await admin.describe_consumer_groups([group]))[0].groups
            return state, list(members), await admin.list_consumer_group_offsets(group)
        finally:
            await admin.close()

    return asyncio.run(go())


#: the longest a follow-up one-shot run may go without storing a batch, from what the code and the broker guarantee:
#: a process's start under CI's load (~20 s), the group's join (no member left behind: the broker's
#: group.initial.rebalance.delay.ms, 3 s; a member that did not leave would add its session timeout, 6 s here), a
#: batch begun before and replayed whole (``consumer.REPLAY_WAIT_S``, 30 s) and a request in flight (aiokafka's 40 s):
#: ~95 s, 150 s for a loaded machine. A whole catch-up has no such bound (it is the machine's speed): a stall has.
FOLLOW_UP_STALL_S = 150


def test_a_run_once_after_one_a_signal_stopped_reads_the_rest_and_catches_up(kafka, tmp_path):
    """A helper's follow-up `run --once` after one SIGTERMed mid-backlog went past a 300 s timeout under load, and the
    test was removed unexplained. Measured (2 cores, load ~10): the stopped run exits 0 within 2 s, the follow-up
    catches up in 34 s (48 s after a SIGKILL, which leaves the dead member for its session timeout and a batch to
    replay); its time is the catch-up's (some 120 batches of 2 records, and the correlator's steps), nothing waits.
    Asserted from what can be observed: the stopped run left its group (no member for the next run's join to wait
    on), with no batch begun and not committed; the follow-up stores a batch at least every
    :data:`FOLLOW_UP_STALL_S`, catches up and reads exactly the records the first left (each once), and every
    offset is committed to the end."""
    from ingest.consumer import INTENT

    prefix = f"oncefollow.{time.time_ns()}"
    env = _once_env(kafka, prefix, tmp_path, 2)
    msgs = corpus_messages(50_000, prefix)
    asyncio.run(produce(kafka, msgs))
    p, log, out = _spawn_once("run", env, tmp_path)
    events = Path(env["FIRSTFAULT_LAKE"]) / "events"

    def stored() -> int:
        return sum(1 for f in events.rglob("*.parquet") if f.parent.parent.parent.name != "kind=_schema")

    def stop() -> None:
        wait_for(stored, 120, "the first batch in the lake")
        os.killpg(p.pid, signal.SIGTERM)

    rc, _took, said = _exit_after(p, log, stop, 150)
    assert rc == 0, said[-2000:]
    assert re.search(STOPPED_EARLY, out.read_text().splitlines()[0]), out.read_text()[:2000]
    first = int(re.search(r"ingested (\d+) Kafka records?, ", said)[1])
    assert 0 < first < len(msgs), (first, len(msgs))
    group = env["FIRSTFAULT_GROUP_ID"]
    state, members, committed = _group(kafka, group)
    assert (state, members) == ("Empty", []), (state, members)  # it left: the next join waits on no one
    assert not [m for m in committed.values() if m.metadata.startswith(INTENT)], committed
    assert sum(m.offset for m in committed.values()) == first, (committed, first)

    again = tmp_path / "again"
    again.mkdir()
    p2, log2, out2 = _spawn_once("run", env, again)
    t0 = last = time.monotonic()
    seen = stored()
    try:
        while p2.poll() is None:
            if (n := stored()) != seen:
                seen, last = n, time.monotonic()
            assert time.monotonic() - last < FOLLOW_UP_STALL_S, (seen, log2.read_text()[-2000:])
            time.sleep(0.5)
    finally:
        if p2.poll() is None:
            os.killpg(p2.pid, signal.SIGKILL)
            p2.wait()
    took, said2 = time.monotonic() - t0, log2.read_text()
    assert p2.returncode == 0, said2[-2000:]
    report = out2.read_text()
    assert re.match(r"caught up: \d+ incidents", report), report[:2000]
    rest = re.search(r"ingested (\d+) Kafka records?, (\d+) lines?", said2)
    lines1 = int(re.search(r"ingested \d+ Kafka records?, (\d+) lines?", said)[1])
    assert (first + int(rest[1]), lines1 + int(rest[2])) == (len(msgs), 50_000), (first, rest[0], took)
    state, members, committed = _group(kafka, group)
    assert state == "Empty" and sum(m.offset for m in committed.values()) == len(msgs), (state, committed)
    from api.store import Store

    (row,) = Store(Lake(Path(env["FIRSTFAULT_LAKE"]))).query(
        "SELECT count(*) AS n, count(DISTINCT event_id) AS ids FROM events")
    assert row["n"] == row["ids"] > 0, row
