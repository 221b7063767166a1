"""Child processes of the ingest benchmark: each measures itself and prints one JSON object.

Run apart from the benchmark driver so that CPU time and peak RSS are those of
the ingest process alone (not of the generator, the broker or the baselines):

* ``ingest``: the project's :class:`ingest.consumer.IngestWorker` (the same
  decode → pipeline → lake → commit loop as ``firstfault run``) over a
  backlog, until caught up. The clock starts once the worker is connected
  (before it joins the group) and stops when the last batch is durable in the
  lake (``on_batch`` runs after the atomic, fsynced Parquet writes);
* ``split``: the ceiling — a plain consumer that fetches the same records and
  splits their values into lines, nothing else;
* ``diagnose``: :func:`api.diagnose.diagnose_paths` over a folder (decode,
  match, extract, correlate), as ``firstfault diagnose`` runs it;
* ``files``: the same files to durable Parquet events, without correlating.

CPU time is the process's user + system time (all threads), so it holds on
a machine shared with the broker. ``ingest`` also splits it by thread
(``thread_cpu_s``: the event loop's, the pipeline's, the lake writers') and
names what its stages leave (``outside_stages_cpu_s``: Kafka fetching,
commits, metrics, the collector, the event loop).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import sys
import threading
import time
from pathlib import Path


def _rss_mb() -> float:
    """Peak resident set size of this process, MiB.

    ``VmHWM`` of /proc/self/status, not ``ru_maxrss``: Linux carries the
    parent's peak into ``ru_maxrss`` across fork and exec, so a child would
    report the benchmark driver's memory (the whole corpus) as its own.
    """
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


#: thread name prefix -> group of :func:`_thread_cpu`: the event loop (fetching, decoding, commits, the lake
#: writes' encoding), the loop's default executor (the pipeline, ``IngestWorker._run_pipeline``), the lake's pool
THREAD_GROUPS = (("MainThread", "main"), ("asyncio_", "pipeline"), ("lake-write", "lake_write"))


def _thread_cpu() -> dict[int, tuple[str, float]]:
    """CPU seconds (user + system) of each live thread of this process: thread id -> (group, seconds), the group
    by :data:`THREAD_GROUPS` (``other`` for the rest). A thread that ends between two calls is left out."""
    out = {}
    for t in threading.enumerate():
        if t.ident is None:
            continue
        try:
            sec = time.clock_gettime(time.pthread_getcpuclockid(t.ident))
        except OSError:  # ended meanwhile
            continue
        out[t.ident] = (next((g for prefix, g in THREAD_GROUPS if t.name.startswith(prefix)), "other"), sec)
    return out


def _thread_cpu_since(before: dict[int, tuple[str, float]]) -> dict[str, float]:
    """CPU seconds per thread group since ``before`` (a :func:`_thread_cpu`; threads started since count whole)."""
    out: dict[str, float] = {}
    for ident, (group, sec) in _thread_cpu().items():
        out[group] = out.get(group, 0.0) + sec - before.get(ident, (group, 0.0))[1]
    return {k: round(v, 4) for k, v in sorted(out.items())}


async def _ingest(a: argparse.Namespace) -> dict:
    from ingest.consumer import IngestWorker
    from ingest.lake import Lake
    from ingest.pipeline import Pipeline
    from schemas.settings import Settings

    from ingest import consumer
    from ingest.gcpause import tune_for_worker

    tune_for_worker()  # as `firstfault ingest` / `run` do (api.cli._until_signalled)
    s = Settings()
    stages: dict[str, float] = {}

    class TimedPipeline(Pipeline):  # the same pipeline, with its per-stage clock on
        def run(self, decoded, timings=None):
            return super().run(decoded, timings=stages)

    class TimedLake(Lake):
        def write(self, table_name, table, batch_id):
            c0 = time.process_time()  # the parts are written on a few threads: count them all
            try:
                return super().write(table_name, table, batch_id)
            finally:
                stages["write"] = stages.get("write", 0.0) + time.process_time() - c0

    decode_chunk = consumer.decode_chunk

    def timed_decode(records, max_bytes):
        c0 = time.thread_time()
        try:
            return decode_chunk(records, max_bytes)
        finally:
            stages["decode"] = stages.get("decode", 0.0) + time.thread_time() - c0

    consumer.decode_chunk = timed_decode  # IngestWorker looks it up in its module on every chunk
    pipeline = TimedPipeline()
    lake = TimedLake(a.lake)
    lake.init()
    done: list[float] = []
    events = [0]

    def on_batch(batch) -> None:  # after the lake writes: these events are durable
        done.append(time.perf_counter())
        events[0] += batch.events.num_rows

    w = IngestWorker(bootstrap=a.bootstrap, topics=a.topics.split(","), group_id=a.group, lake=lake,
                     dlq_topic=a.dlq, pipeline=pipeline, on_batch=on_batch,
                     max_records=a.max_records or s.batch_max_records, linger_ms=s.batch_linger_ms)
    await w.start()
    rss0 = _rss_mb()
    t0, c0, th0 = time.perf_counter(), _cpu(), _thread_cpu()
    try:
        # until caught up with the backlog; run() may return before the group has its assignment
        while w.health.records < a.expect_records and time.perf_counter() - t0 < a.timeout:
            await w.run(until_caught_up=True, idle_timeout_s=10)
    finally:
        c1, threads = _cpu(), _thread_cpu_since(th0)
        await w.close()
    h = w.health
    t1 = done[-1] if done else time.perf_counter()
    return {"lines": h.lines, "records": h.records, "batches": h.batches, "events": events[0], "rejects": h.rejects,
            "wall_s": t1 - t0, "cpu_s": c1 - c0, "peak_rss_mb": _rss_mb(), "rss_at_start_mb": rss0,
            "ok": h.ok, "reason": h.reason, "stage_cpu_s": {k: round(v, 4) for k, v in stages.items()},
            "thread_cpu_s": threads, "outside_stages_cpu_s": round(c1 - c0 - sum(stages.values()), 4)}


async def _split(a: argparse.Namespace) -> dict:
    from aiokafka import AIOKafkaConsumer

    from ingest.gcpause import tune_for_worker
    from schemas.settings import Settings

    tune_for_worker()  # the same process settings as the worker it is the ceiling of
    s = Settings()
    n = a.max_records or s.batch_max_records  # as many records per poll as the worker it is the ceiling of
    c = AIOKafkaConsumer(*a.topics.split(","), bootstrap_servers=a.bootstrap, group_id=a.group,
                         enable_auto_commit=False, auto_offset_reset="earliest", max_poll_records=n,
                         fetch_max_bytes=64 * 1024 * 1024, max_partition_fetch_bytes=16 * 1024 * 1024)
    await c.start()
    t0, c0 = time.perf_counter(), _cpu()
    lines = records = nbytes = 0
    t1 = t0
    try:
        while records < a.expect_records and time.perf_counter() - t0 < a.timeout:
            data = await c.getmany(timeout_ms=s.batch_linger_ms, max_records=n)
            for rs in data.values():
                for r in rs:
                    lines += len(r.value.split(b"\n"))
                    nbytes += len(r.value)
                    records += 1
            t1 = time.perf_counter()
    finally:
        c1 = _cpu()
        await c.stop()
    return {"lines": lines, "records": records, "bytes": nbytes, "wall_s": t1 - t0, "cpu_s": c1 - c0,
            "peak_rss_mb": _rss_mb()}


def _diagnose(a: argparse.Namespace) -> dict:
    from api.diagnose import diagnose_paths
    from ingest.pipeline import Pipeline
    from schemas.settings import Settings

    pipeline = Pipeline()  # compiled before the clock starts, as in a running service
    t0, c0 = time.perf_counter(), _cpu()
    decoded, batch, incidents = diagnose_paths([Path(a.path)], Settings(), pipeline=pipeline)
    t1, c1 = time.perf_counter(), _cpu()
    return {"lines": batch.lines, "bytes": batch.bytes, "events": batch.events.num_rows,
            "incidents": len(incidents), "rejects": len(decoded.rejects), "wall_s": t1 - t0, "cpu_s": c1 - c0,
            "peak_rss_mb": _rss_mb()}


def _files(a: argparse.Namespace) -> dict:
    """Files to durable Parquet events with no correlation: what ``diagnose`` spends before correlating."""
    from ingest.files import decode_paths
    from ingest.lake import Lake
    from ingest.pipeline import Pipeline

    pipeline = Pipeline()
    lake = Lake(a.lake)
    lake.init()
    stages: dict[str, float] = {}
    t0, c0 = time.perf_counter(), _cpu()
    d0 = time.thread_time()
    decoded = decode_paths([Path(a.path)])
    stages["decode"] = time.thread_time() - d0
    batch = pipeline.run(decoded, timings=stages)
    w0 = time.process_time()
    for name in ("events", "link_samples", "topology"):
        lake.write(name, getattr(batch, name), "files")
    stages["write"] = time.process_time() - w0
    t1, c1 = time.perf_counter(), _cpu()
    return {"lines": batch.lines, "bytes": batch.bytes, "events": batch.events.num_rows,
            "rejects": len(decoded.rejects), "wall_s": t1 - t0, "cpu_s": c1 - c0, "peak_rss_mb": _rss_mb(),
            "stage_cpu_s": {k: round(v, 4) for k, v in stages.items()}}


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.worker")
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name in ("ingest", "split"):
        p = sub.add_parser(name)
        p.add_argument("--bootstrap", required=True)
        p.add_argument("--topics", required=True)
        p.add_argument("--group", required=True)
        p.add_argument("--lake")
        p.add_argument("--dlq", default="fleet.dlq")
        p.add_argument("--max-records", type=int, default=0)
        p.add_argument("--expect-records", type=int, default=1, help="records in the backlog")
        p.add_argument("--timeout", type=float, default=1800)
    p = sub.add_parser("diagnose")
    p.add_argument("path")
    p = sub.add_parser("files")
    p.add_argument("path")
    p.add_argument("--lake", required=True)
    return ap


def run(argv: list[str]) -> dict:
    """Run one command (see module doc) in this process; return its measurements."""
    a = parser().parse_args(argv)
    if a.cmd == "ingest":
        return asyncio.run(_ingest(a))
    if a.cmd == "split":
        return asyncio.run(_split(a))
    if a.cmd == "files":
        return _files(a)
    return _diagnose(a)


def main(argv: list[str] | None = None) -> None:
    import logging

    logging.getLogger("aiokafka").setLevel(logging.ERROR)
    sys.stdout.write(json.dumps(run(sys.argv[1:] if argv is None else argv)) + "\n")


if __name__ == "__main__":
    main()
