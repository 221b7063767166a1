"""Scale-out benchmark: 1, 2 and 4 ``firstfault ingest`` workers sharing the raw topics, on this machine.

``python -m benchmarks.scale [--lines N] [--workers 1,2,4] [--partitions P] [--quick] [--json]``

For each worker count, on the real local broker (``ingest.broker``, 127.0.0.1):

1. a fresh set of raw topics (``P`` partitions each) is filled with the same
   backlog: ``--lines`` lines of the :mod:`benchmarks.generate` fleet mix,
   shipped as batched text (256 lines per message, keyed by host, as Vector and
   Fluent Bit ship them);
2. ``N`` ``firstfault ingest`` processes are started as one consumer group —
   the deployable command, unchanged: decode, match, extract, durable Parquet
   parts in one shared lake, every recognised event published to the events
   topic keyed by correlation domain, offsets committed after both;
3. the clock starts when the group is ``Stable`` with all ``N`` members (the
   processes have imported, compiled their Hyperscan database and been given
   their partitions) and stops when the group's committed offsets reach the end
   of every partition. Only lines committed inside that interval count; the
   workers' CPU time (user + system, from ``/proc``) is taken at both ends.

Reported per ``N``: lines/s (wall), lines/s per worker-CPU-second, the scaling
factor against ``N = 1``, CPU load of the workers and of the broker, peak RSS.
On a 2-core machine the workers, the broker and this driver share two cores:
beyond two workers the wall-clock rate cannot grow, and the table says so.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.generate import SOURCES, generate
from benchmarks.crash import GroupWatch, stop_all
from benchmarks.ingest import BATCH_LINES, _drop_topics, _proc_cpu, log, machine, messages, produce

FIRSTFAULT = [str(Path(sys.executable).with_name("firstfault"))]  # the installed command


def _rss_mb(pid: int) -> float | None:
    """Peak resident set size (``VmHWM``) of a live process, MiB."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


async def _watch(bootstrap: str, group: str, topics: list[str], partitions: int, procs: list[subprocess.Popen],
                 n: int, broker_pid: int | None, timeout_s: float, logs: Path) -> dict:
    """Wait until the group is Stable with ``n`` members, then until it has committed everything; time it."""
    t_spawn = time.perf_counter()
    deadline = t_spawn + timeout_s
    async with GroupWatch(bootstrap, group, topics, partitions) as g:
        while True:
            state, members = await g.state()
            if state == "Stable" and members == n:
                break
            if any(p.poll() is not None for p in procs):
                raise RuntimeError(f"an ingest worker exited: {(logs / 'ingest-0.log').read_text()[-2000:]}")
            if time.perf_counter() > deadline:
                raise RuntimeError(f"the group did not become Stable with {n} members ({state!r}, {members})")
            await asyncio.sleep(0.05)
        t0 = time.perf_counter()
        c0 = [_proc_cpu(p.pid) or 0.0 for p in procs]
        b0 = _proc_cpu(broker_pid)
        done0, end = await g.progress()
        while True:
            done, end = await g.progress()
            if end and done >= end:
                break
            if time.perf_counter() > deadline:
                raise RuntimeError(f"{n} workers did not catch up in {timeout_s} s ({done}/{end} records)")
            await asyncio.sleep(0.1)
        t1 = time.perf_counter()
    c1 = [_proc_cpu(p.pid) or 0.0 for p in procs]
    b1 = _proc_cpu(broker_pid)
    return {"join_s": t0 - t_spawn, "wall_s": t1 - t0, "records_before_clock": done0, "records": end,
            "cpu_s": sum(b - a for a, b in zip(c0, c1)),
            "broker_cpu_s": (b1 - b0) if b0 is not None and b1 is not None else None,
            "rss": [_rss_mb(p.pid) or 0.0 for p in procs]}


def run_workers(n: int, corpus, bootstrap: str, broker_pid: int | None, work: Path, partitions: int,
                timeout_s: float) -> dict:
    """One row of the table: ``n`` ingest processes over a fresh backlog (module doc)."""
    from ingest.broker import ensure_topics

    prefix = f"ffscale.w{n}.{os.getpid()}"
    topics = [f"{prefix}.{s}" for s in SOURCES]
    extra = [f"{prefix}.events", f"{prefix}.dlq"]
    msgs = messages(corpus, "batch", prefix)
    nbytes = sum(len(m[2]) for m in msgs)
    records = len(msgs)
    asyncio.run(ensure_topics(bootstrap, topics + extra, partitions=partitions))
    asyncio.run(produce(bootstrap, msgs))
    del msgs
    lake = work / f"lake-w{n}"
    group = f"{prefix}.ingest"
    env = dict(os.environ, FIRSTFAULT_KAFKA_BOOTSTRAP=bootstrap, FIRSTFAULT_LAKE=str(lake),
               FIRSTFAULT_TOPICS=",".join(topics), FIRSTFAULT_EVENTS_TOPIC=extra[0], FIRSTFAULT_DLQ_TOPIC=extra[1],
               FIRSTFAULT_GROUP_ID=group, FIRSTFAULT_SESSION_TIMEOUT_MS="10000", FIRSTFAULT_LOG_LEVEL="WARNING")
    root = Path(__file__).resolve().parents[1]
    logs = work / f"logs-w{n}"
    logs.mkdir()
    procs = []
    for i in range(n):
        e = dict(env, FIRSTFAULT_STATE_DIR=str(work / f"state-w{n}-{i}"))
        procs.append(subprocess.Popen([*FIRSTFAULT, "ingest"], env=e, cwd=str(root), stdout=subprocess.DEVNULL,
                                      stderr=open(logs / f"ingest-{i}.log", "wb"), start_new_session=True))
    try:
        w = asyncio.run(_watch(bootstrap, group, topics, partitions, procs, n, broker_pid, timeout_s, logs))
    finally:
        stop_all(procs, timeout=30)
    # lines of the records committed inside the interval (256 per message; each stream's last one is shorter)
    counted = round(len(corpus.lines) * (w["records"] - w["records_before_clock"]) / records)
    wall, cpu = w["wall_s"], w["cpu_s"]
    events = _lake_events(lake)
    shutil.rmtree(lake, ignore_errors=True)
    asyncio.run(_drop_topics(bootstrap, topics + extra))
    return {"workers": n, "partitions": partitions * len(SOURCES), "records": records, "bytes": nbytes,
            "lines_counted": counted, "records_before_clock": w["records_before_clock"], "join_s": round(w["join_s"], 2),
            "wall_s": round(wall, 3), "lines_per_s": round(counted / wall),
            "mb_per_s": round(nbytes * counted / len(corpus.lines) / wall / 1e6, 2),
            "worker_cpu_s": round(cpu, 2), "lines_per_s_per_core": round(counted / cpu) if cpu else None,
            "worker_cores_busy": round(cpu / wall, 2),
            "broker_cores_busy": round(w["broker_cpu_s"] / wall, 2) if w["broker_cpu_s"] is not None else None,
            "peak_rss_mb_per_worker": round(max(w["rss"]), 1), "lake_events": events}


def _lake_events(lake: Path) -> int:
    import pyarrow.parquet as pq

    return sum(pq.ParquetFile(f).metadata.num_rows for f in (lake / "events").rglob("part-*.parquet"))


def run(a: argparse.Namespace) -> dict:
    from ingest import broker

    out: dict = {"command": "python -m benchmarks.scale " + " ".join(sys.argv[1:]),
                 "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"), "machine": machine()}
    work = Path(tempfile.mkdtemp(prefix="ffscale-"))
    started = False
    try:
        start = dt.datetime.now(dt.timezone.utc).replace(second=0, microsecond=0) - dt.timedelta(minutes=35)
        corpus = generate(a.lines, seed=a.seed, t0=start)
        out["input"] = {"lines": len(corpus.lines), "bytes": corpus.bytes, "hosts": len(corpus.hosts),
                        "lines_per_message": BATCH_LINES}
        log(f"input: {len(corpus.lines)} lines, {corpus.bytes / 1e6:.0f} MB")
        bootstrap, pid = a.bootstrap, None
        if not bootstrap:
            log("starting the local Kafka broker …")
            # Kafka's own default (3 s): a group's first join waits for the other workers starting with it,
            # so N workers share the partitions from the first assignment
            st = broker.start(work / "state", log=log, overrides={"group.initial.rebalance.delay.ms": "3000"})
            started = True
            bootstrap, pid = st.bootstrap, st.pid
        rows = []
        for n in a.workers:
            log(f"{n} ingest worker(s) …")
            rows.append(run_workers(n, corpus, bootstrap, pid, work, a.partitions, a.timeout))
            r = rows[-1]
            log(f"  {r['lines_per_s']:,} lines/s, {r['worker_cores_busy']} cores busy; joined in {r['join_s']} s, "
                f"{r['records_before_clock']}/{r['records']} records committed before the clock started")
        base = rows[0]["lines_per_s"] if rows else 0
        for r in rows:
            r["scaling_vs_first"] = round(r["lines_per_s"] / base, 2) if base else None
        out["rows"] = rows
        out["machine"]["loadavg_end"] = [round(x, 2) for x in os.getloadavg()]
        return out
    finally:
        if started:
            broker.stop(work / "state")
        shutil.rmtree(work, ignore_errors=True)


def table(out: dict) -> str:
    m = out["machine"]
    head = (f"{out['input']['lines']:,} lines ({out['input']['bytes'] / 1e6:.0f} MB), "
            f"{out['input']['lines_per_message']} lines per message; {m['cpu']}, {m['cores']} cores; {out['date']}\n")
    cols = ("workers", "partitions", "wall_s", "lines_per_s", "mb_per_s", "lines_per_s_per_core",
            "worker_cores_busy", "broker_cores_busy", "scaling_vs_first", "peak_rss_mb_per_worker")
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in out["rows"]:
        lines.append("| " + " | ".join(f"{r[c]:,}" if isinstance(r[c], int) else str(r[c]) for c in cols) + " |")
    return head + "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.scale", description=__doc__.split("\n\n")[0])
    ap.add_argument("--lines", type=int, default=2_000_000, help="backlog per worker count (default 2,000,000)")
    ap.add_argument("--workers", type=lambda s: [int(x) for x in s.split(",")], default=[1, 2, 4])
    ap.add_argument("--partitions", type=int, default=4, help="partitions per raw topic (three topics)")
    ap.add_argument("--quick", action="store_true", help="300,000 lines, 1 and 2 workers (a smoke run)")
    ap.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    ap.add_argument("--bootstrap", help="use this Kafka broker instead of starting the local one")
    ap.add_argument("--timeout", type=float, default=900, help="seconds one worker count may take")
    ap.add_argument("--seed", type=int, default=7)
    a = ap.parse_args(argv)
    if a.quick:
        a.lines, a.workers = 300_000, [1, 2]
    import logging

    logging.getLogger("aiokafka").setLevel(logging.ERROR)
    out = run(a)
    print(json.dumps(out) if a.json else table(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
