"""Scale-out on the real broker: three `firstfault ingest` and two `firstfault correlate` processes share the
work through Kafka consumer groups; one of each is killed (SIGKILL) mid-run. The incidents in the lake must
equal those of a single-process run (`diagnose` on the same logs), with every event stored once."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pyarrow.parquet as pq
import pytest
import yaml

from api.diagnose import diagnose_paths
from api.store import Store
from benchmarks.crash import stop_all
from ingest.broker import ensure_topics
from ingest.consumer import produce_lines
from ingest.lake import Lake
from schemas.settings import Settings
from tests.fleet_scenarios import FLEET, fleet

pytestmark = pytest.mark.kafka
FIRSTFAULT = str(Path(sys.executable).with_name("firstfault"))


def shape(inc):
    i = inc["initiator"]
    return (inc["category"], i.get("host"), i.get("device_type"), i.get("device"), i.get("link"),
            tuple(sorted((d["host"], str(d.get("device"))) for d in inc["downstream"])))


def spawn(role: str, env: dict, tmp: Path, n: int) -> subprocess.Popen:
    e = dict(os.environ, **env, FIRSTFAULT_STATE_DIR=str(tmp / f"{role}{n}"))
    return subprocess.Popen([FIRSTFAULT, role], env=e, stdout=subprocess.DEVNULL,
                            stderr=open(tmp / f"{role}{n}.log", "wb"), start_new_session=True)


def test_three_ingest_two_correlate_workers_one_of_each_killed(kafka, tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    lines = fleet()
    for h, ls in lines.items():
        (logs / f"{h}.log").write_text("\n".join(ls) + "\n")
    cfg = tmp_path / "fleet.yaml"
    cfg.write_text(yaml.safe_dump(FLEET))
    _, batch, expected = diagnose_paths([logs], Settings(fleet_config=cfg))

    lake = tmp_path / "lake"
    env = {"FIRSTFAULT_KAFKA_BOOTSTRAP": kafka, "FIRSTFAULT_LAKE": str(lake), "FIRSTFAULT_TOPICS": "scale.raw",
           "FIRSTFAULT_EVENTS_TOPIC": "scale.events", "FIRSTFAULT_DLQ_TOPIC": "scale.dlq",
           "FIRSTFAULT_GROUP_ID": "scale-ingest", "FIRSTFAULT_CORRELATE_GROUP_ID": "scale-correlate",
           "FIRSTFAULT_SESSION_TIMEOUT_MS": "6000", "FIRSTFAULT_CLOSE_AFTER_S": "2", "FIRSTFAULT_IDLE_CLOSE_S": "4",
           "FIRSTFAULT_FLEET_CONFIG": str(cfg), "FIRSTFAULT_BATCH_LINGER_MS": "50",
           "FIRSTFAULT_LOG_LEVEL": "INFO"}
    asyncio.run(ensure_topics(kafka, ["scale.raw", "scale.events", "scale.dlq"], partitions=6))
    Lake(lake).init()
    procs = [spawn("ingest", env, tmp_path, n) for n in range(3)] + \
            [spawn("correlate", env, tmp_path, n) for n in range(2)]

    async def produce(part: int):
        for h, ls in lines.items():
            half = (len(ls) + 1) // 2
            chunk = ls[:half] if part == 0 else ls[half:]
            if chunk:
                await produce_lines(kafka, "scale.raw", h, [l.encode() for l in chunk])

    try:
        time.sleep(8)  # the workers join their groups
        assert [p.poll() for p in procs] == [None] * 5, [(tmp_path / f"{r}{n}.log").read_text()[-500:]
                                                         for r in ("ingest", "correlate") for n in range(2)]
        asyncio.run(produce(0))
        time.sleep(4)
        for p in (procs[0], procs[3]):  # one ingest and one correlate worker die mid-run
            os.killpg(p.pid, signal.SIGKILL)
        asyncio.run(produce(1))
        store = Store(Lake(lake))
        want = sorted(map(shape, expected))
        got: list = []
        deadline = time.monotonic() + 150
        while time.monotonic() < deadline:
            docs = [orjson.loads(r["doc"]) for r in store.query(
                "SELECT doc FROM incidents WHERE status <> 'superseded'")]
            got = sorted(map(shape, docs))
            if got == want:
                break
            time.sleep(2)
        assert got == want, [(p.args[1], (tmp_path / f"{p.args[1]}{i % 3}.log").read_text()[-2000:])
                             for i, p in enumerate(procs)]
        files = [f for f in Lake(lake).files("events") if not f.name.startswith("_")]
        ids = [i for f in files for i in pq.read_table(f, columns=["event_id"]).column("event_id").to_pylist()]
        assert len(set(ids)) == batch.events.num_rows
    finally:
        stop_all(procs, timeout=20)
    assert [p.returncode for p in procs[1:3] + procs[4:]] == [0, 0, 0]


def test_scale_benchmark_smoke(kafka):
    """`python -m benchmarks.scale` end to end at a small size (a smoke run: no timing asserted). The same
    backlog through one and two `firstfault ingest` processes stores the same events."""
    from benchmarks import scale

    a = scale.argparse.Namespace(lines=20_000, workers=[1, 2], partitions=2, bootstrap=kafka, timeout=240, seed=3)
    out = scale.run(a)
    rows = out["rows"]
    assert [r["workers"] for r in rows] == [1, 2]
    assert rows[0]["lake_events"] > 0 and rows[0]["lake_events"] == rows[1]["lake_events"]
    assert all(r["records"] == rows[0]["records"] and r["peak_rss_mb_per_worker"] > 0 for r in rows)
    assert "| workers |" in scale.table(out)
