"""The ingest benchmark: the same lines through every path, side by side, in one run.

``python -m benchmarks.ingest [--lines N] [--quick] [--json]``

1. **Input**: ``--lines`` lines of the fleet mix of :mod:`benchmarks.generate`
   (kernel noise, NCCL INFO, training output, DCGM samples; ~1 % fault lines
   of every catalog family), written as per-host files and produced to a real
   local Kafka broker (``ingest.broker``, private state folder under /tmp,
   127.0.0.1) in three shapes:

   * ``kafka_line``: one line per Kafka message;
   * ``kafka_batch``: 256 lines per message (a shipper's batched text);
   * ``kafka_ndjson``: 256 Vector NDJSON records per message;

   and ``files``: ``diagnose`` (decode, match, extract, correlate) on the files.
2. **End to end** per mode, in a child process (:mod:`benchmarks.worker`):
   Kafka → decoded → matched → fields → durable Parquet events, through the
   project's own ``IngestWorker``; the clock runs from the worker's start
   (backlog already produced and acknowledged) until the last batch is
   durable. ``lines_per_s`` is wall-clock; ``lines_per_s_per_core`` is lines
   per CPU-second of that process (the broker's CPU is reported apart).
3. **Ceiling** per mode: the same records fetched and split into lines with
   nothing else (for files: read and split); Kafka modes take the fastest of
   three runs.
4. **Baselines** on the same lines: a plain Python ``re`` loop trying every
   signature on every line; DuckDB ``regexp_matches`` with every signature
   (one thread); and our matching stage alone (Hyperscan).
5. **Stages** (in process, batched and one-line shapes): decode, frame, match,
   extract, assemble, Arrow build, lake write; correlator throughput.
6. **Storm** (in process): ``--storm`` kernel lines of one failing host,
   runs of one fault line repeated with three stamp shapes
   (:func:`benchmarks.generate.storm`), beside the Python ``re`` loop on them:
   the cost per hit line, which the ~1 % mix hides; and the same storm as
   journald ships it through Vector (``envelopes``): each line's message without
   its stamp, its time in the record's ``timestamp``, 256 records a message
   (``messages(corpus, "journald", …)``).
7. **Backlog**: 10 million lines queued, consumed by one worker: peak RSS.

Prints a table; ``--json`` prints one JSON object instead.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

import orjson

from benchmarks.generate import SOURCES, Corpus, generate, storm

BATCH_LINES = 256  # lines or NDJSON records per message in the batched shapes
TARGETS = {
    "batch_lines_per_s_per_core": 1_000_000,
    "line_lines_per_s_per_core": 200_000,
    "match_vs_re": 40.0,
    "match_vs_duckdb": 2.0,
    "e2e_vs_ceiling": 1 / 3,
    "backlog_peak_rss_mb": 1024,
    "correlator_events_per_s": 100_000,
    "stream_step_max_s": 1.0,  # incidents out within the close window plus one second of their last evidence
}
#: steps the streaming latency run cuts the events into (arrival order)
STREAM_STEPS = 40


_T0 = time.perf_counter()
#: the project's folder: the worker's working directory and the checkout whose commit is measured
ROOT = Path(__file__).resolve().parents[1]


def log(*a: object) -> None:
    print(f"[{time.perf_counter() - _T0:6.1f}s]", *a, file=sys.stderr, flush=True)


# --- message shapes -----------------------------------------------------------------------------------

def messages(corpus: Corpus, shape: str, prefix: str) -> list[tuple[str, bytes, bytes, int, int]]:
    """(topic, key, value, timestamp ms, lines) per Kafka message, per (host, source) stream in time order.

    ``shape``: ``line`` (one line a message), ``batch`` (``BATCH_LINES`` lines), ``ndjson`` (that many Vector
    file records), ``journald`` (that many Vector journald records: each line's message without the prefixes
    ``ingest.prefix.parse_prefix`` peels — stamp, host, tag —, its time in ``timestamp``: a storm's lines are
    then the very same text)."""
    from ingest.prefix import parse_prefix

    out = []
    per = 1 if shape == "line" else BATCH_LINES
    for (h, s), idx in sorted(corpus.streams().items()):
        topic, host = f"{prefix}.{SOURCES[s]}", corpus.hosts[h]
        key = host.encode()
        for i in range(0, len(idx), per):
            part = idx[i:i + per]
            if shape == "ndjson":
                value = b"\n".join(orjson.dumps({
                    "file": f"/var/log/{SOURCES[s]}.log", "host": host, "message": corpus.lines[j].decode(),
                    "source_type": "file", "timestamp": _iso(corpus.ts_us[j])}) for j in part)
            elif shape == "journald":
                value = b"\n".join(orjson.dumps({
                    "host": host, "message": parse_prefix(corpus.lines[j].decode()).rest, "source_type": "journald",
                    "timestamp": _iso(corpus.ts_us[j])}) for j in part)
            else:
                value = b"\n".join(corpus.lines[j] for j in part)
            # the record's time: its last line's, as a shipper's (it sends a batch once its last line is written)
            out.append((topic, key, value, corpus.ts_us[part[-1]] // 1000, len(part)))
    return out


def _iso(us: int) -> str:
    return dt.datetime.fromtimestamp(us // 1_000_000, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S") + \
        f".{us % 1_000_000:06d}Z"


async def produce(bootstrap: str, msgs: list[tuple[str, bytes, bytes, int, int]]) -> None:
    """Produce everything and wait for every acknowledgement (batch API: the producer is not what we measure)."""
    from aiokafka import AIOKafkaProducer
    from aiokafka.partitioner import DefaultPartitioner

    p = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", max_request_size=16 * 1024 * 1024,
                         max_batch_size=1024 * 1024, linger_ms=5)
    await p.start()
    try:
        part = DefaultPartitioner()
        parts: dict[str, list[int]] = {}
        open_batches: dict[tuple[str, int], object] = {}
        futs = []
        for topic, key, value, ts, _ in msgs:
            if topic not in parts:
                parts[topic] = sorted(await p.partitions_for(topic))
            pn = part(key, parts[topic], parts[topic])
            b = open_batches.get((topic, pn))
            if b is None:
                b = open_batches[(topic, pn)] = p.create_batch()
            if b.append(key=key, value=value, timestamp=ts) is None:  # full: send it, start another
                futs.append(await p.send_batch(b, topic, partition=pn))
                b = open_batches[(topic, pn)] = p.create_batch()
                if b.append(key=key, value=value, timestamp=ts) is None:
                    raise ValueError(f"a message of {len(value)} bytes does not fit a batch")
            if len(futs) > 64:
                await futs.pop(0)
        for (topic, pn), b in open_batches.items():
            if b.record_count():
                futs.append(await p.send_batch(b, topic, partition=pn))
        for f in futs:
            await f
    finally:
        await p.stop()


# --- measurements in this process ---------------------------------------------------------------------

def _cpu() -> float:
    return time.process_time()


def baseline_re(corpus: Corpus, limit: int) -> dict:
    """Every signature's Python regex on every line (the obvious loop)."""
    from ingest.catalog import default_catalog

    rxs = [c.rx for c in default_catalog().entries]
    lines = corpus.lines[:limit]
    c0, t0 = _cpu(), time.perf_counter()
    hits = 0
    for raw in lines:
        s = raw.decode("utf-8", "replace")
        for rx in rxs:
            if rx.search(s):
                hits += 1
    cpu, wall = _cpu() - c0, time.perf_counter() - t0
    return {"lines": len(lines), "cpu_s": cpu, "wall_s": wall, "lines_per_s": len(lines) / cpu, "hits": hits}


def baseline_duckdb(corpus: Corpus, limit: int) -> dict:
    """DuckDB ``regexp_matches`` with every signature on every line, one thread (per core)."""
    import duckdb
    import pyarrow as pa

    from ingest.catalog import default_catalog, to_hyperscan

    lines = pa.table({"line": pa.array([x.decode("utf-8", "replace") for x in corpus.lines[:limit]])})
    con = duckdb.connect()
    con.execute("SET threads = 1")
    con.register("lines_arrow", lines)
    con.execute("CREATE TABLE lines AS SELECT * FROM lines_arrow")
    exprs, fallbacks = [], 0
    for c in default_catalog().entries:
        for p in (c.sig.pattern, to_hyperscan(c.sig.pattern)):
            lit = "'" + p.replace("'", "''") + "'"
            try:
                con.execute(f"SELECT regexp_matches('x', {lit})")
            except duckdb.Error:
                fallbacks += 1
                continue
            exprs.append(f"count_if(regexp_matches(line, {lit}))")
            break
    sql = "SELECT " + ", ".join(exprs) + " FROM lines"
    c0, t0 = _cpu(), time.perf_counter()
    row = con.execute(sql).fetchone()
    cpu, wall = _cpu() - c0, time.perf_counter() - t0
    n = lines.num_rows
    return {"lines": n, "cpu_s": cpu, "wall_s": wall, "lines_per_s": n / max(cpu, wall), "hits": sum(row),
            "patterns": len(exprs), "pattern_fallbacks": fallbacks}


def match_only(corpus: Corpus, chunk: int = 65536) -> dict:
    """Our matching stage alone: Hyperscan over newline-joined buffers of ``chunk`` lines."""
    from ingest.catalog import default_catalog
    from ingest.match import HyperscanMatcher

    m = HyperscanMatcher(default_catalog())
    bufs = [b"\n".join(corpus.lines[i:i + chunk]) for i in range(0, len(corpus.lines), chunk)]
    c0, t0 = _cpu(), time.perf_counter()
    hit_lines = sum(len(m.scan(b)) for b in bufs)
    cpu, wall = _cpu() - c0, time.perf_counter() - t0
    n = len(corpus.lines)
    return {"lines": n, "cpu_s": cpu, "wall_s": wall, "lines_per_s": n / cpu, "hit_lines": hit_lines}


def stages(msgs: list, lake_root: Path, max_records: int) -> tuple[dict, list]:
    """Decode → pipeline stages → lake write, batch by batch as the worker cuts them; CPU seconds per stage."""
    from ingest.consumer import decode_records
    from ingest.lake import Lake
    from ingest.pipeline import Pipeline

    pipeline = Pipeline()
    lake = Lake(lake_root)
    lake.init()
    t: dict[str, float] = {"decode": 0.0}
    batches = []
    lines = nbytes = 0
    c_all = _cpu()
    for k in range(0, len(msgs), max_records):
        # records as the consumer holds them (built untimed), decoded as the worker decodes them
        recs = [SimpleNamespace(topic=m[0], partition=0, value=m[2], key=m[1], offset=k + off, timestamp=m[3],
                                headers=()) for off, m in enumerate(msgs[k:k + max_records])]
        c0 = _cpu()
        d = decode_records(recs)
        t["decode"] += _cpu() - c0
        b = pipeline.run(d, timings=t)
        c0 = _cpu()
        bid = f"bench{k}"
        lake.write("events", b.events, bid)
        lake.write("link_samples", b.link_samples, bid)
        lake.write("topology", b.topology, bid)
        t["write"] = t.get("write", 0.0) + _cpu() - c0
        lines += b.lines
        nbytes += sum(len(m[2]) for m in msgs[k:k + max_records])
        batches.append(b)
    total = _cpu() - c_all
    out = {"lines": lines, "bytes": nbytes, "cpu_s": total, "lines_per_s": lines / total,
           "stage_cpu_s": {k: round(v, 4) for k, v in t.items()},
           "stage_lines_per_s": {k: round(lines / v) if v > 0 else None for k, v in t.items()},
           "events": sum(b.events.num_rows for b in batches),
           "rejects": sum(len(b.rejects) for b in batches)}
    return out, batches



def storm_phase(n: int, *, seed: int, t0: dt.datetime, work: Path, max_records: int, re_lines: int) -> dict:
    """One host flooding kernel fault lines (``benchmarks.generate.storm``) through the in-process stages
    (decode → pipeline → lake write), with the Python ``re`` loop on the same lines beside it: per hit line
    costs (prefix, fields, typed columns, storm collapse) are what this measures, not scanning."""
    corpus = storm(n, seed=seed, t0=t0)
    st, batches = stages(messages(corpus, "batch", "fleet"), work / "lake-storm", max_records)
    re_ = baseline_re(corpus, min(len(corpus.lines), re_lines))
    shutil.rmtree(work / "lake-storm", ignore_errors=True)
    env, _ = stages(messages(corpus, "journald", "fleet"), work / "lake-storm", max_records)
    shutil.rmtree(work / "lake-storm", ignore_errors=True)
    return {"lines": len(corpus.lines), "fault_lines": corpus.fault_lines, "cpu_s": st["cpu_s"],
            "lines_per_s": st["lines_per_s"], "events": st["events"], "stage_cpu_s": st["stage_cpu_s"],
            "baseline_re_lines_per_s": re_["lines_per_s"],
            "envelopes": {"cpu_s": env["cpu_s"], "lines_per_s": env["lines_per_s"], "events": env["events"],
                          "stage_cpu_s": env["stage_cpu_s"]}}


def correlator(batches: list) -> dict:
    """``correlate()`` over all events at once, and the streaming correlator fed batch by batch."""
    import pyarrow as pa

    from correlate.correlator import correlate
    from correlate.stream import StreamCorrelator

    ev = pa.concat_tables([b.events for b in batches])
    sm = pa.concat_tables([b.link_samples for b in batches])
    tp = pa.concat_tables([b.topology for b in batches])
    now = int(time.time() * 1e6)
    correlate(ev.slice(0, 100), sm, tp, now_us=now)  # load rules, catalog and platforms once, as a service does
    c0 = _cpu()
    inc = correlate(ev, sm, tp, now_us=now)
    batch_cpu = _cpu() - c0
    sc = StreamCorrelator()
    c0 = _cpu()
    emitted = 0
    for b in batches:
        sc.add(b.events, b.link_samples, b.topology)
        emitted += len(sc.step(now_us=now))
    emitted += len(sc.step(now_us=now, flush=True))
    stream_cpu = _cpu() - c0
    # Latency: an incident is out at the step after its closing evidence arrives, so the delay beyond the
    # close window is that step's time. Fed in STREAM_STEPS steps of arrival order, as a live stream would be
    # (each step re-correlates the events kept so far: the longest step is the worst delay).
    n = ev.num_rows
    sc = StreamCorrelator()
    steps = []
    size = max(1, -(-n // STREAM_STEPS))  # events per step: ~STREAM_STEPS steps over all batches
    for b in batches:
        for i in range(0, max(b.events.num_rows, 1), size):
            t0 = time.perf_counter()
            sc.add(b.events.slice(i, size), b.link_samples if i == 0 else None, b.topology if i == 0 else None)
            sc.step(now_us=now)
            steps.append(time.perf_counter() - t0)
    steps.sort()
    reused = sc.cache.hits / (sc.cache.hits + sc.cache.misses) if sc.cache.hits + sc.cache.misses else None
    return {"events": n, "incidents": len(inc), "correlate_cpu_s": batch_cpu,
            "events_per_s": n / batch_cpu if batch_cpu else None, "stream_cpu_s": stream_cpu,
            "stream_events_per_s": n / stream_cpu if stream_cpu else None, "stream_incident_versions": emitted,
            "stream_steps": len(steps), "stream_step_median_s": steps[len(steps) // 2] if steps else None,
            "stream_step_max_s": steps[-1] if steps else None,
            # candidate incidents whose attribution the stepped run reused (correlator.AttributionCache)
            "stream_attributions_reused": reused}


def job_phase(hosts: int) -> dict:
    """A large job's death in one communicator (``generate.job_hang``: ``hosts`` × 8 ranks, one Xid 79, every
    rank's watchdog timeout), through the in-process pipeline, then ``correlate()`` once over all its events
    (CPU s; rules, catalog and platforms loaded before). Checks the diagnosis: the Xid 79 host initiates and
    every rank's report is downstream."""
    from benchmarks.generate import job_hang
    from correlate.correlator import correlate
    from ingest.decode import Decoded, Segment
    from ingest.pipeline import Pipeline

    t0 = dt.datetime.now(dt.timezone.utc).replace(microsecond=0) - dt.timedelta(hours=3)
    logs = job_hang(hosts, t0=t0)
    after = int((t0.timestamp() + 3600 + 700) * 1e6)  # when the shipper delivered them: after the timeouts
    segs = [Segment(data="\n".join(lines).encode(), origin=f"kafka:fleet.nccl/0/{n}", stream=f"fleet.nccl/0/{host}",
                    host=host, ref_ts=after, ref_basis="kafka", ingest_ts=after)
            for n, (host, lines) in enumerate(logs.items())]
    batch = Pipeline().run(Decoded(segments=segs))
    ev, sm, tp = batch.events, batch.link_samples, batch.topology
    correlate(ev.slice(0, 10), sm, tp, now_us=after)  # rules, catalog and platforms loaded, as in a service
    c0 = _cpu()
    inc = correlate(ev, sm, tp, now_us=after + 3600 * 1_000_000)
    cpu = _cpu() - c0
    top = max(inc, key=lambda i: len(i["downstream"]), default=None)
    ranks = sum(len(d["events"]) for d in top["downstream"]) if top else 0
    return {"hosts": hosts, "ranks": hosts * 8, "lines": sum(map(len, logs.values())), "events": ev.num_rows,
            "incidents": len(inc), "correlate_cpu_s": cpu, "events_per_s": ev.num_rows / cpu if cpu else None,
            "initiator": f"{top['initiator']['host']} Xid {top['initiator']['xid']}" if top else None,
            "downstream_events": ranks}


def restarts_phase(hosts: int, runs: int) -> dict:
    """A job of ``hosts`` × 8 ranks restarted ``runs`` times on the same GPUs, six hours apart
    (``generate.job_runs``: each run new processes and a new communicator), each run's ``Init COMPLETE`` lines
    fed to one ``StreamCorrelator`` and stepped once. Reports each step's CPU s and what the correlator keeps
    at the end: the membership lines of the run that holds the GPUs (and of the one before while it is younger
    than the lateness and the longest link window), not of every run since the start
    (``topology.comm_spans``). Then ``QUIET_STEPS`` steps of one Xid each from other hosts, from two hours into
    the last run, while the job's hosts log nothing: their CPU s (``quiet_step_cpu_s``) and what is kept after
    them — the job's lines in ``wiring`` only, as its hosts' watermarks stand still (``StreamCorrelator._prune``)."""
    from benchmarks.generate import job_runs
    from correlate.stream import StreamCorrelator
    from correlate.topology import rank_membership
    from ingest.decode import Decoded, Segment
    from ingest.pipeline import Pipeline

    t0 = dt.datetime.now(dt.timezone.utc).replace(microsecond=0) - dt.timedelta(hours=6 * runs)
    pipeline, sc = Pipeline(), StreamCorrelator()
    steps, offset = [], 0
    for start, logs in job_runs(hosts, runs, t0=t0):
        segs = []
        for host, lines in logs.items():
            segs.append(Segment(data="\n".join(lines).encode(), origin=f"kafka:fleet.nccl/0/{offset}",
                                stream=f"fleet.nccl/0/{host}", host=host, ref_ts=start + 1_000_000, ref_basis="kafka",
                                ingest_ts=start + 1_000_000))
            offset += 1
        batch = pipeline.run(Decoded(segments=segs))
        c0 = _cpu()
        sc.add(batch.events, batch.link_samples, batch.topology, now_us=start + 1_000_000)
        sc.step(now_us=start + 1_000_000)
        steps.append(_cpu() - c0)
    kept = [e for e in [*sc.wiring.values(), *sc.events.values()] if rank_membership(e)]
    out = {"hosts": hosts, "ranks": hosts * 8, "runs": runs, "step_cpu_s": steps,
           "first_step_s": steps[0], "last_step_s": steps[-1], "kept_events": len(sc.events),
           "kept_wiring": len(sc.wiring), "kept_membership": len(kept), "kept_runs": len({e.comm for e in kept})}
    # then the job runs quietly, as training does, while other hosts log: one Xid 79 a step, from two hours in
    quiet = []
    for k in range(QUIET_STEPS):
        at = start + (7200 + 600 * k) * 1_000_000
        stamp = (dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(microseconds=at)).isoformat()
        line = f"{stamp} other{k:03d} kernel: NVRM: Xid (PCI:0000:1b:00): 79, pid=1, GPU has fallen off the bus."
        batch = pipeline.run(Decoded(segments=[Segment(
            data=line.encode(), origin=f"kafka:fleet.dmesg/0/{offset + k}", stream=f"fleet.dmesg/0/other{k:03d}",
            host=f"other{k:03d}", ref_ts=at, ref_basis="kafka", ingest_ts=at)]))
        c0 = _cpu()
        sc.add(batch.events, batch.link_samples, batch.topology, now_us=at)
        sc.step(now_us=at)
        quiet.append(_cpu() - c0)
    return {**out, "quiet_step_cpu_s": quiet, "quiet_step_max_s": max(quiet), "quiet_kept_events": len(sc.events),
            "quiet_kept_wiring": len(sc.wiring)}


#: steps of ``restarts_phase`` after the last run: the job's hosts quiet, one Xid of another host a step
QUIET_STEPS = 6


def read_split_files(files: list[Path]) -> dict:
    c0, t0 = _cpu(), time.perf_counter()
    n = nbytes = 0
    for f in files:
        data = f.read_bytes()
        nbytes += len(data)
        n += len(data.split(b"\n")) - (1 if data.endswith(b"\n") else 0)
    cpu, wall = _cpu() - c0, time.perf_counter() - t0
    return {"lines": n, "bytes": nbytes, "cpu_s": cpu, "wall_s": wall, "lines_per_s": n / max(cpu, 1e-9)}


def startup_phase(runs: int = 3) -> dict:
    """``firstfault diagnose`` on the bundled samples (``samples/``), each run a new process: with an empty cache
    of compiled Hyperscan databases (``ingest.match.compile_database``: the catalog compiled at start, as every process
    did before the cache) and with the cache kept from a first run, alternating; the best wall and CPU seconds
    (user + system of the child) of ``runs`` each, and the incidents of both (the same, or the phase raises)."""
    import resource

    out: dict = {}
    incidents: dict[str, int] = {}
    with tempfile.TemporaryDirectory(prefix="ffstart-") as d:
        def once(cache: Path) -> tuple[float, float, int]:
            env = {**os.environ, "XDG_CACHE_HOME": str(cache)}
            r0, t0 = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
            r = subprocess.run([sys.executable, "-m", "api.cli", "diagnose", str(ROOT / "samples"), "-f", "json"],
                               capture_output=True, cwd=str(ROOT), env=env, timeout=300)
            wall, r1 = time.perf_counter() - t0, resource.getrusage(resource.RUSAGE_CHILDREN)
            if r.returncode != 0:
                raise RuntimeError(f"diagnose failed ({r.returncode}): {r.stderr[-2000:].decode(errors='replace')}")
            cpu = r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime
            return wall, cpu, len(orjson.loads(r.stdout)["incidents"])

        once(Path(d) / "warm")  # writes the cache the warm runs load
        runs_of: dict[str, list[tuple[float, float]]] = {"cold": [], "warm": []}
        for k in range(runs):
            for kind in ("cold", "warm"):
                wall, cpu, n = once(Path(d) / (f"cold{k}" if kind == "cold" else "warm"))
                runs_of[kind].append((wall, cpu))
                incidents.setdefault(kind, n)
                if n != incidents[kind]:
                    raise RuntimeError(f"diagnose gave {n} incidents, then {incidents[kind]}")
    if incidents["cold"] != incidents["warm"]:
        raise RuntimeError(f"incidents differ: {incidents}")
    for kind, xs in runs_of.items():
        out[f"{kind}_wall_s"] = round(min(w for w, _ in xs), 3)
        out[f"{kind}_cpu_s"] = round(min(c for _, c in xs), 3)
    out["runs"] = runs
    out["incidents"] = incidents["warm"]
    return out


# --- child processes ----------------------------------------------------------------------------------

#: quick mode runs the worker commands in this process (a smoke test: no child start-up, numbers not comparable)
IN_PROCESS = False


def child(args: list[str], timeout: float = 1800) -> dict:
    """Run ``python -m benchmarks.worker ARGS``; return its JSON line."""
    if IN_PROCESS:
        from benchmarks import worker

        return {**worker.run(args), "in_process": True}
    r = subprocess.run([sys.executable, "-m", "benchmarks.worker", *args], capture_output=True, text=True,
                       timeout=timeout, cwd=str(ROOT))
    if r.returncode != 0:
        raise RuntimeError(f"benchmarks.worker {args[0]} failed ({r.returncode}):\n{r.stderr[-4000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def _proc_cpu(pid: int | None) -> float | None:
    if not pid:
        return None
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


#: runs of the read-and-split ceiling per Kafka mode; the fastest counts (one in quick mode)
CEILING_RUNS = 3


def kafka_mode(name: str, shape: str, corpus: Corpus, bootstrap: str, broker_pid: int | None, work: Path,
               max_records: int, keep: bool = False) -> dict:
    """One Kafka mode end to end: produce, the split ceiling, the worker. ``keep``: leave the worker's lake
    (``<work>/lake-<name>``) in place, to compare two commits' events over the same lines (``--keep``)."""
    from ingest.broker import ensure_topics

    prefix = f"ffbench.{name}.{os.getpid()}"
    topics = [f"{prefix}.{s}" for s in SOURCES]
    msgs = messages(corpus, shape, prefix)
    nbytes = sum(len(m[2]) for m in msgs)
    t0 = time.perf_counter()
    asyncio.run(ensure_topics(bootstrap, topics + [f"{prefix}.dlq"], partitions=3))
    asyncio.run(produce(bootstrap, msgs))
    produce_s = time.perf_counter() - t0
    log(f"  {name}: produced {len(msgs)} messages ({nbytes / 1e6:.0f} MB) in {produce_s:.1f} s")
    del msgs
    base = ["--bootstrap", bootstrap, "--topics", ",".join(topics)]
    # the ceiling's run is short (under a second batched) and its CPU time varied by ±40 % between runs: the
    # fastest of CEILING_RUNS is the ceiling (the conservative choice: the highest ceiling, the lowest ratio)
    split = min((child(["split", *base, "--group", f"{prefix}.split{i}", "--expect-records",
                        str(_count(corpus, shape)), "--max-records", str(max_records)]) for i in range(CEILING_RUNS)),
                key=lambda r: r["cpu_s"] / max(r["lines"], 1))
    b0 = _proc_cpu(broker_pid)
    lake = work / f"lake-{name}"
    e2e = child(["ingest", *base, "--group", f"{prefix}.ingest", "--lake", str(lake), "--dlq", f"{prefix}.dlq",
                 "--max-records", str(max_records), "--expect-records", str(_count(corpus, shape))])
    b1 = _proc_cpu(broker_pid)
    if e2e["records"] != _count(corpus, shape) or e2e["rejects"]:
        raise RuntimeError(f"{name}: the worker read {e2e['records']} records ({e2e['rejects']} rejected), "
                           f"not {_count(corpus, shape)}")
    e2e["logical_lines"], e2e["lines"] = e2e["lines"], len(corpus.lines)  # rates count the input lines
    lake_events = _lake_rows(lake)
    if not keep:
        shutil.rmtree(lake, ignore_errors=True)
    asyncio.run(_drop_topics(bootstrap, topics + [f"{prefix}.dlq"]))
    return _mode_row(e2e, split, nbytes, broker_cpu=(b1 - b0) if b0 is not None and b1 is not None else None,
                     extra={"messages": _count(corpus, shape), "produce_s": produce_s, "lake_events": lake_events,
                            "batches": e2e["batches"], "max_records": max_records, "ceiling_runs": CEILING_RUNS,
                            "stage_cpu_s": e2e.get("stage_cpu_s"), "thread_cpu_s": e2e.get("thread_cpu_s"),
                            "outside_stages_cpu_s": e2e.get("outside_stages_cpu_s")})


async def _drop_topics(bootstrap: str, topics: list[str]) -> None:
    """Delete the benchmark's topics (a broker given with --bootstrap keeps no backlog of ours)."""
    from aiokafka.admin import AIOKafkaAdminClient

    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=30000)
    await admin.start()
    try:
        await admin.delete_topics(topics)
    finally:
        await admin.close()


def _count(corpus: Corpus, shape: str) -> int:
    per = 1 if shape == "line" else BATCH_LINES
    return sum((len(idx) + per - 1) // per for idx in corpus.streams().values())


def _lake_rows(lake: Path) -> int:
    import pyarrow.parquet as pq

    return sum(pq.ParquetFile(f).metadata.num_rows for f in (lake / "events").rglob("part-*.parquet"))


def _mode_row(e2e: dict, ceiling: dict, nbytes: int, *, broker_cpu: float | None = None,
              extra: dict | None = None) -> dict:
    lines = e2e["lines"]
    per_core = lines / e2e["cpu_s"]
    ceil_per_core = ceiling["lines"] / max(ceiling["cpu_s"], 1e-9)
    row = {
        "lines": lines, "bytes": nbytes, "wall_s": round(e2e["wall_s"], 3), "cpu_s": round(e2e["cpu_s"], 3),
        "lines_per_s": round(lines / e2e["wall_s"]), "lines_per_s_per_core": round(per_core),
        "mb_per_s": round(nbytes / e2e["wall_s"] / 1e6, 2), "mb_per_s_per_core": round(nbytes / e2e["cpu_s"] / 1e6, 2),
        "logical_lines": e2e.get("logical_lines"), "events": e2e.get("events"),
        "peak_rss_mb": round(e2e["peak_rss_mb"], 1),
        "read_split_lines_per_s": round(ceiling["lines"] / max(ceiling["wall_s"], 1e-9)),
        "read_split_lines_per_s_per_core": round(ceil_per_core),
        "e2e_vs_ceiling": round(per_core / ceil_per_core, 3),
        "broker_cpu_s": round(broker_cpu, 2) if broker_cpu is not None else None,
    }
    if broker_cpu is not None:
        row["lines_per_s_per_core_incl_broker"] = round(lines / (e2e["cpu_s"] + broker_cpu))
    row.update(extra or {})
    return row


# --- the run ------------------------------------------------------------------------------------------

def machine() -> dict:
    cpu = platform.processor() or ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"cpu": cpu, "cores": os.cpu_count(), "python": platform.python_version(), "os": platform.platform(),
            "loadavg_start": [round(x, 2) for x in os.getloadavg()]}


def commit() -> str | None:
    """The measured code: ``git describe --always --dirty`` of the project (``-dirty``: uncommitted changes),
    or None outside a git checkout."""
    try:
        r = subprocess.run(["git", "describe", "--always", "--dirty", "--abbrev=12"], cwd=ROOT, capture_output=True,
                           text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return (r.stdout.strip() or None) if r.returncode == 0 else None


def run(a: argparse.Namespace) -> dict:
    from ingest import broker

    out: dict = {"command": "python -m benchmarks.ingest " + " ".join(sys.argv[1:]),
                 "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"), "commit": commit(),
                 "machine": machine()}
    if a.workdir:  # a parent that does not exist yet is made (mkdtemp raised a bare FileNotFoundError)
        Path(a.workdir).mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="ffbench-", dir=a.workdir))
    state = work / "state"
    started = False
    try:
        t0 = time.perf_counter()
        # lines stamped over the last half hour: the broker keeps them (old record times fall to retention)
        start = dt.datetime.now(dt.timezone.utc).replace(second=0, microsecond=0) - dt.timedelta(minutes=35)
        corpus = generate(a.lines, seed=a.seed, t0=start)
        files = corpus.write_files(work / "data")
        out["input"] = {"lines": len(corpus.lines), "bytes": corpus.bytes, "fault_lines": corpus.fault_lines,
                        "fault_share": round(corpus.fault_lines / len(corpus.lines), 4),
                        "families": corpus.families, "signatures": len(corpus.signatures), "files": len(files),
                        "hosts": len(corpus.hosts), "generate_s": round(time.perf_counter() - t0, 1)}
        log(f"input: {len(corpus.lines)} lines, {corpus.bytes / 1e6:.0f} MB, {corpus.fault_lines} fault lines")

        save = _saver(a.out, out)
        common: dict = {}
        if "baselines" not in a.skip:
            base = {}
            log("baselines: match (Hyperscan), Python re loop, DuckDB regexp_matches …")
            base["match"] = match_only(corpus)
            base["re"] = baseline_re(corpus, a.re_lines or len(corpus.lines))
            base["duckdb"] = baseline_duckdb(corpus, len(corpus.lines))
            m = base["match"]["lines_per_s"]
            base["match_vs_re"] = round(m / base["re"]["lines_per_s"], 1)
            base["match_vs_duckdb"] = round(m / base["duckdb"]["lines_per_s"], 2)
            out["baselines"] = base
            common = {"baseline_re_lines_per_s": round(base["re"]["lines_per_s"]),
                      "baseline_duckdb_lines_per_s": round(base["duckdb"]["lines_per_s"]),
                      "match_lines_per_s": round(m)}
            save()

        if "stages" not in a.skip:
            log("stages (in process) …")
            st = {}
            bt_msgs = messages(corpus, "batch", "fleet")
            st["batch"], batches = stages(bt_msgs, work / "lake-stages-batch", a.max_records)
            del bt_msgs
            ln_msgs = messages(corpus, "line", "fleet")
            st["line"], _ = stages(ln_msgs, work / "lake-stages-line", a.line_max_records)
            del ln_msgs
            out["stages"] = st
            save()
            log("correlator …")
            out["correlator"] = correlator(batches)
            del batches
            save()
            log(f"one job of {a.job_hosts} hosts x 8 ranks timing out after an Xid 79 (correlator) …")
            out["correlator"]["job"] = job_phase(a.job_hosts)
            save()
            log(f"one job of {a.job_hosts} hosts x 8 ranks restarted {a.restarts} times (streaming correlator) …")
            out["correlator"]["restarts"] = restarts_phase(a.job_hosts, a.restarts)
            save()
        if a.storm:
            log(f"storm: {a.storm} kernel lines of one host (in process) …")
            out["storm"] = storm_phase(a.storm, seed=a.seed, t0=start, work=work, max_records=a.max_records,
                                       re_lines=a.re_lines or 20_000)
            save()

        if "startup" not in a.skip:
            log("start-up: diagnose on the samples, compiled-database cache empty / kept …")
            out["startup"] = startup_phase(1 if a.quick else 3)
            save()

        modes: dict[str, dict] = {}
        out["modes"] = modes
        if "files" not in a.skip:
            log("files: diagnose …")
            rs = read_split_files(files)
            dg = child(["diagnose", str(work / "data")])
            dg["logical_lines"], dg["lines"] = dg["lines"], len(corpus.lines)  # rates count the input lines
            modes["files_diagnose"] = _mode_row(dg, rs, corpus.bytes, extra={"incidents": dg["incidents"]})
            fi = child(["files", str(work / "data"), "--lake", str(work / "lake-files")])
            fi["logical_lines"], fi["lines"] = fi["lines"], len(corpus.lines)
            modes["files_ingest"] = _mode_row(fi, rs, corpus.bytes, extra={"stage_cpu_s": fi["stage_cpu_s"]})
            shutil.rmtree(work / "lake-files", ignore_errors=True)
            save()

        if not a.no_kafka:
            bootstrap, pid = a.bootstrap, None
            if not bootstrap:
                log("starting the local Kafka broker …")
                st_ = broker.start(state, log=log)
                started = True
                bootstrap, pid = st_.bootstrap, st_.pid
            for name, shape in KAFKA_MODES.items():
                if a.modes and name not in a.modes:
                    continue
                log(f"{name} …")
                modes[name] = kafka_mode(name, shape, corpus, bootstrap, pid, work,
                                         a.line_max_records if shape == "line" else a.max_records, keep=a.keep)
                save()
            if a.backlog:
                log(f"backlog of {a.backlog} lines …")
                out["backlog"] = backlog(corpus, a.backlog, bootstrap, pid, work, a.max_records)
        for row in modes.values():
            row.update(common)
        out["machine"]["loadavg_end"] = [round(x, 2) for x in os.getloadavg()]
        out["targets"] = check_targets(out)
        if a.quick:  # a smoke test: its numbers say nothing about the targets
            out["quick"] = True
            for t in out["targets"].values():
                t["holds"] = None
        save()
        return out
    finally:
        if started:
            broker.stop(state)
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)


def _saver(path: str | None, out: dict):
    """Write the results so far to ``path`` after each phase (a long run that fails keeps what it measured)."""
    def save() -> None:
        if path:
            Path(path).write_text(json.dumps(out, indent=1))
    return save


def backlog(corpus: Corpus, n: int, bootstrap: str, broker_pid: int | None, work: Path, max_records: int) -> dict:
    """``n`` lines (the corpus repeated, batched text) queued before one worker starts: memory stays bounded."""
    from ingest.broker import ensure_topics

    prefix = f"ffbench.backlog.{os.getpid()}"
    topics = [f"{prefix}.{s}" for s in SOURCES]
    asyncio.run(ensure_topics(bootstrap, topics + [f"{prefix}.dlq"], partitions=3))
    msgs = messages(corpus, "batch", prefix)
    reps = max(1, -(-n // len(corpus.lines)))
    for _ in range(reps):
        asyncio.run(produce(bootstrap, msgs))
    nbytes = sum(len(m[2]) for m in msgs) * reps
    del msgs
    lake = work / "lake-backlog"
    b0 = _proc_cpu(broker_pid)
    e2e = child(["ingest", "--bootstrap", bootstrap, "--topics", ",".join(topics), "--group", f"{prefix}.ingest",
                 "--lake", str(lake), "--dlq", f"{prefix}.dlq", "--max-records", str(max_records),
                 "--expect-records", str(_count(corpus, "batch") * reps)], timeout=3600)
    b1 = _proc_cpu(broker_pid)
    shutil.rmtree(lake, ignore_errors=True)
    asyncio.run(_drop_topics(bootstrap, topics + [f"{prefix}.dlq"]))
    row = _mode_row(e2e, {"lines": 1, "cpu_s": 1, "wall_s": 1}, nbytes,
                    broker_cpu=(b1 - b0) if b0 is not None and b1 is not None else None,
                    extra={"max_records": max_records, "records": e2e["records"], "batches": e2e["batches"],
                           "stage_cpu_s": e2e.get("stage_cpu_s")})
    for k in ("read_split_lines_per_s", "read_split_lines_per_s_per_core", "e2e_vs_ceiling"):
        row.pop(k)
    return row


def check_targets(out: dict) -> dict:
    """Each target of the issue: the measured value, the bound, and whether it holds in this run."""
    res = {}
    modes = out["modes"]

    def put(name: str, value, bound, ok) -> None:
        res[name] = {"value": value, "target": bound, "holds": bool(ok) if value is not None else None}

    for k in ("kafka_batch", "kafka_ndjson"):
        if k in modes:
            v = modes[k]["lines_per_s_per_core"]
            put(f"{k}.lines_per_s_per_core", v, TARGETS["batch_lines_per_s_per_core"],
                v >= TARGETS["batch_lines_per_s_per_core"])
    if "kafka_line" in modes:
        v = modes["kafka_line"]["lines_per_s_per_core"]
        put("kafka_line.lines_per_s_per_core", v, TARGETS["line_lines_per_s_per_core"],
            v >= TARGETS["line_lines_per_s_per_core"])
    if "baselines" in out:
        b = out["baselines"]
        put("match_vs_re", b["match_vs_re"], TARGETS["match_vs_re"], b["match_vs_re"] >= TARGETS["match_vs_re"])
        put("match_vs_duckdb", b["match_vs_duckdb"], TARGETS["match_vs_duckdb"],
            b["match_vs_duckdb"] >= TARGETS["match_vs_duckdb"])
    for k, row in modes.items():
        put(f"{k}.e2e_vs_ceiling", row["e2e_vs_ceiling"], round(TARGETS["e2e_vs_ceiling"], 3),
            row["e2e_vs_ceiling"] >= TARGETS["e2e_vs_ceiling"])
    if "backlog" in out:
        v = out["backlog"]["peak_rss_mb"]
        put("backlog.peak_rss_mb", v, TARGETS["backlog_peak_rss_mb"], v <= TARGETS["backlog_peak_rss_mb"])
    if "correlator" in out:
        v = out["correlator"]["events_per_s"]
        put("correlator.events_per_s", round(v) if v else None, TARGETS["correlator_events_per_s"],
            v is not None and v >= TARGETS["correlator_events_per_s"])
        v = out["correlator"].get("stream_step_max_s")
        put("correlator.stream_step_max_s", round(v, 3) if v is not None else None, TARGETS["stream_step_max_s"],
            v is not None and v <= TARGETS["stream_step_max_s"])
    return res


# --- output -------------------------------------------------------------------------------------------

def _k(x: float | None) -> str:
    if x is None:
        return "-"
    return f"{x / 1e6:.2f}M" if x >= 1e6 else f"{x / 1e3:.0f}k" if x >= 1e3 else f"{x:.0f}"


def table(out: dict) -> str:
    m = out["machine"]
    lines = [f"firstfault ingest benchmark — {out['date']} — {m['cpu']}, {m['cores']} cores, Python {m['python']}",
             f"command: {out['command']}",
             f"input: {out['input']['lines']} lines, {out['input']['bytes'] / 1e6:.0f} MB, "
             f"{out['input']['fault_lines']} fault lines ({100 * out['input']['fault_share']:.2f} %) from "
             f"{len(out['input']['families'])} families / {out['input']['signatures']} signatures; "
             f"load average {m['loadavg_start']} -> {m.get('loadavg_end')}", ""]
    hdr = ("mode", "records/batch", "lines/s", "lines/s/core", "MB/s", "ceiling/core", "e2e/ceil", "peak RSS MB",
           "events", "broker cpu s")
    rows = [hdr]
    for k, r in out["modes"].items():
        rows.append((k, str(r.get("max_records") or "-"), _k(r["lines_per_s"]), _k(r["lines_per_s_per_core"]),
                     f"{r['mb_per_s']:.1f}", _k(r["read_split_lines_per_s_per_core"]), f"{r['e2e_vs_ceiling']:.2f}",
                     f"{r['peak_rss_mb']:.0f}", str(r["events"]), str(r.get("broker_cpu_s") or "-")))
    if "backlog" in out:
        r = out["backlog"]
        rows.append((f"backlog {r['lines'] / 1e6:.0f}M", str(r.get("max_records") or "-"), _k(r["lines_per_s"]),
                     _k(r["lines_per_s_per_core"]), f"{r['mb_per_s']:.1f}", "-", "-", f"{r['peak_rss_mb']:.0f}",
                     str(r["events"]), str(r.get("broker_cpu_s") or "-")))
    if len(rows) > 1:  # no mode ran with --no-kafka --skip files and no backlog: no table
        w = [max(len(str(r[i])) for r in rows) for i in range(len(hdr))]
        for r in rows:
            lines.append("  ".join(str(c).rjust(w[i]) if i else str(c).ljust(w[i]) for i, c in enumerate(r)))
        lines.append("")
    if "baselines" in out:
        b = out["baselines"]
        lines.append("matching, lines/s per core (same lines): "
                     f"Hyperscan {_k(b['match']['lines_per_s'])}  |  Python re loop {_k(b['re']['lines_per_s'])} "
                     f"(x{b['match_vs_re']})  |  DuckDB regexp_matches, 1 thread {_k(b['duckdb']['lines_per_s'])} "
                     f"(x{b['match_vs_duckdb']})")
    for shape, s in out.get("stages", {}).items():
        parts = "  ".join(f"{k} {v:.2f}s ({_k(s['stage_lines_per_s'][k])}/s)" for k, v in s["stage_cpu_s"].items())
        lines.append(f"stages, {shape} messages (CPU s, in process): {parts}  = {_k(s['lines_per_s'])} lines/s")
    if "correlator" in out:
        c = out["correlator"]
        lines.append(f"correlator: {c['events']} events, correlate() {_k(c['events_per_s'])} events/s, "
                     f"streaming {_k(c['stream_events_per_s'])} events/s; fed in {c['stream_steps']} steps: median "
                     f"step {c['stream_step_median_s']:.3f} s, longest {c['stream_step_max_s']:.3f} s"
                     + (f", {c['stream_attributions_reused']:.0%} of attributions reused"
                        if c.get("stream_attributions_reused") is not None else ""))
        if "job" in c:
            j = c["job"]
            lines.append(f"correlator, one job of {j['ranks']} ranks on {j['hosts']} hosts: {j['events']} events, "
                         f"correlate() {_k(j['events_per_s'])} events/s ({j['correlate_cpu_s']:.2f} CPU s); "
                         f"initiator {j['initiator']}, {j['downstream_events']} downstream events")
        if "restarts" in c:
            j = c["restarts"]
            lines.append(f"streaming correlator, that job restarted {j['runs']} times: step {j['first_step_s']:.2f} s "
                         f"(first run) -> {j['last_step_s']:.2f} s (last); keeps {j['kept_membership']} membership "
                         f"lines of {j['kept_runs']} run(s); then quiet for 2 h, a step with one Xid of another host "
                         f"takes up to {j['quiet_step_max_s']:.2f} s, {j['quiet_kept_events']} events and "
                         f"{j['quiet_kept_wiring']} wiring lines kept")
    if "startup" in out:
        r = out["startup"]
        lines.append(f"start-up, `diagnose samples/` in a new process (best of {r['runs']}): compiled-database cache "
                     f"empty {r['cold_wall_s']:.2f} s ({r['cold_cpu_s']:.2f} CPU s)  |  kept {r['warm_wall_s']:.2f} s "
                     f"({r['warm_cpu_s']:.2f} CPU s); {r['incidents']} incidents either way")
    if "storm" in out:
        r = out["storm"]
        lines.append(f"storm, one host ({r['lines']} kernel lines, {r['fault_lines']} fault lines; in process): "
                     f"{_k(r['lines_per_s'])} lines/s per core -> {r['events']} events; Python re loop "
                     f"{_k(r['baseline_re_lines_per_s'])}; stages "
                     + "  ".join(f"{k} {v:.2f}s" for k, v in r["stage_cpu_s"].items()))
        e = r["envelopes"]
        lines.append(f"  the same storm in Vector records (messages without stamps): {_k(e['lines_per_s'])} "
                     f"lines/s per core -> {e['events']} events; stages "
                     + "  ".join(f"{k} {v:.2f}s" for k, v in e["stage_cpu_s"].items()))
    lines += ["", "targets (--quick: a smoke test, numbers not comparable, nothing judged; run without it to "
                  "measure):" if out.get("quick") else "targets:"]
    for k, t in out["targets"].items():
        mark = "ok  " if t["holds"] else "MISS" if t["holds"] is not None else "n/a "
        lines.append(f"  {mark} {k}: {t['value']} (target {t['target']})")
    return "\n".join(lines)


#: the Kafka modes (``--modes``) and the message shape each sends
KAFKA_MODES = {"kafka_line": "line", "kafka_batch": "batch", "kafka_ndjson": "ndjson"}


def _modes(text: str) -> list[str]:
    """``--modes``: names of :data:`KAFKA_MODES`; argparse reports an unknown one (exit 2)."""
    names = [m.strip() for m in text.split(",") if m.strip()]
    unknown = [m for m in names if m not in KAFKA_MODES]
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"unknown mode {', '.join(unknown) or text!r}; "
                                         f"choose from {', '.join(KAFKA_MODES)}")
    return names


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.ingest", description=__doc__.split("\n\n")[0])
    ap.add_argument("--lines", type=int, default=1_000_000, help="input size (default 1,000,000)")
    ap.add_argument("--quick", action="store_true",
                    help="a smoke test: 20,000 lines, no backlog, workers in this process (numbers not comparable)")
    ap.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    ap.add_argument("--backlog", type=int, default=None, help="lines queued for the memory test (default 10M; "
                    "0 skips)")
    ap.add_argument("--storm", type=int, default=None, help="kernel lines of one flooding host, through the "
                    "in-process stages (default 200,000; 0 skips)")
    ap.add_argument("--bootstrap", help="use this Kafka broker instead of starting the local one")
    ap.add_argument("--no-kafka", action="store_true", help="skip the Kafka modes")
    ap.add_argument("--modes", type=_modes, help=f"Kafka modes to run, comma-separated: {', '.join(KAFKA_MODES)} "
                    "(default: all)")
    ap.add_argument("--re-lines", type=int, default=0, help="lines for the Python re baseline (default: all)")
    ap.add_argument("--max-records", type=int, default=0,
                    help="records per ingest batch, batched shapes (default: the batch_max_records setting)")
    ap.add_argument("--line-max-records", type=int, default=80_000,
                    help="records per ingest batch with one line per message (default 80,000: 2,000 one-line "
                         "records are only ~240 KB, and each batch writes a Parquet part per event kind)")
    ap.add_argument("--skip", type=lambda s: set(s.split(",")), default=set(),
                    help="phases to leave out: baselines, stages, startup, files")
    ap.add_argument("--out", help="also write the JSON object to this file, updated after each phase")
    ap.add_argument("--job-hosts", type=int, default=None, help="hosts (8 ranks each) of the large-job correlator "
                    "phase (default 1,024; --quick 32)")
    ap.add_argument("--restarts", type=int, default=None, help="runs of that job, six hours apart, fed to the "
                    "streaming correlator (default 12; --quick 4)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--workdir", default=None, help="parent folder of the scratch folder (default: /tmp)")
    ap.add_argument("--keep", action="store_true", help="keep the scratch folder (with each Kafka mode's lake)")
    a = ap.parse_args(argv)
    import logging

    logging.getLogger("aiokafka").setLevel(logging.CRITICAL)  # connection retries while the broker starts
    if a.quick:
        global IN_PROCESS, CEILING_RUNS
        IN_PROCESS, CEILING_RUNS = True, 1
        a.lines = min(a.lines, 20_000) if "--lines" in (argv or sys.argv) else 20_000
        a.backlog = 0 if a.backlog is None else a.backlog
        a.storm = 6_000 if a.storm is None else a.storm
        a.re_lines = a.re_lines or 2_000
        a.job_hosts = 32 if a.job_hosts is None else a.job_hosts
        a.restarts = 4 if a.restarts is None else a.restarts
    if a.job_hosts is None:
        a.job_hosts = 1024
    if a.restarts is None:
        a.restarts = 12
    if a.backlog is None:
        a.backlog = 10_000_000
    if a.storm is None:
        a.storm = 200_000
    if not a.max_records:
        from schemas.settings import Settings

        a.max_records = Settings().batch_max_records
    out = run(a)
    if a.json:
        sys.stdout.write(json.dumps(out) + "\n")
    else:
        print(table(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
