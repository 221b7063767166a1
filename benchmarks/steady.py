"""A state that stays bad: one NVLink a poller reports down at every poll, for hours, through the streaming correlator.

``python -m benchmarks.steady [--polls N] [--period S] [--every K] [--json]``

DCGM's health check prints ``GPU 0's NvLink link 3 is currently down`` at every poll while the link stays down
(``ingest/signatures/nvml.yaml`` ``dcgm.nvlink_down``; NVIDIA/DCGM#49). Each poll here is one NDJSON envelope
(host, timestamp, message, as Vector ships it) in a Kafka record of its own, decoded and matched by the ingest
pipeline (``ingest.consumer.decode_records``, ``ingest.pipeline.Pipeline``: the worker's stages, no broker) and
fed to one :class:`correlate.stream.StreamCorrelator`, stepped after each poll, as a correlate worker steps after
each fetch. Every ``--every`` polls it prints the last step's CPU time (ms), the events the correlator keeps and
the incident versions emitted so far.

Baseline, in the same run: the same polls in one record (one batch), where the ingest folds identical lines
less than a minute apart into one event a minute with a count (``ingest.assemble.Storms``), then ``correlate()`` once:
its events and CPU time. Across batches nothing folds: every poll is an event of its own, and the link's
incident, never quiet, is held and correlated again whole at every step (``early_after_s`` emits it while it
lasts), so a step's cost grows with the hours the link has been down.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
import time
from types import SimpleNamespace
from typing import Any

import orjson

from correlate.correlator import correlate
from correlate.stream import StreamCorrelator
from ingest.consumer import decode_records
from ingest.pipeline import Pipeline

S = 1_000_000
#: 2026-12-02T00:00Z in µs: the first poll
T0_US = 1_796_169_600_000_000
LINE = "GPU 0's NvLink link 3 is currently down"


def _record(values: list[bytes], offset: int, ts_us: int) -> SimpleNamespace:
    return SimpleNamespace(topic="fleet.nvml", partition=0, value=b"\n".join(values), key=b"node01", offset=offset,
                           timestamp=ts_us // 1000, headers=())


def _poll(i: int, period_s: float) -> tuple[bytes, int]:
    ts = T0_US + int(i * period_s * S)
    stamp = dt.datetime.fromtimestamp(ts / S, dt.timezone.utc).isoformat().replace("+00:00", "Z")
    return orjson.dumps({"host": "node01", "timestamp": stamp, "message": LINE}), ts


def run(polls: int, period_s: float, every: int) -> dict[str, Any]:
    """``{"polls", "period_s", "checkpoints": [{"poll", "hours", "step_ms", "kept_events", "emitted",
    "cpu_s"}], "one_batch": {"events", "cpu_s"}}``; CPU seconds of this process (``time.process_time``)."""
    pipeline = Pipeline()
    sc = StreamCorrelator()
    checkpoints, emitted, total = [], 0, 0.0
    for i in range(polls):
        value, ts = _poll(i, period_s)
        batch = pipeline.run(decode_records([_record([value], i, ts)]))
        c0 = time.process_time()
        sc.add(batch.events, batch.link_samples, batch.topology, now_us=ts + S)
        emitted += len(sc.step(now_us=ts + 2 * S))
        step = time.process_time() - c0
        total += step
        if (i + 1) % every == 0 or i + 1 == polls:
            row = {"poll": i + 1, "hours": round((i + 1) * period_s / 3600, 2), "step_ms": round(step * 1000, 1),
                   "kept_events": len(sc.events), "emitted": emitted, "cpu_s": round(total, 2)}
            checkpoints.append(row)
            print(f"poll {row['poll']:>6} ({row['hours']:>5} h): step {row['step_ms']:>7} ms, kept "
                  f"{row['kept_events']:>6} events, {row['emitted']:>4} versions emitted, {row['cpu_s']} CPU s in "
                  "all steps", file=sys.stderr, flush=True)
    values = [_poll(i, period_s)[0] for i in range(polls)]
    batch = pipeline.run(decode_records([_record(values, 0, T0_US)]))
    c0 = time.process_time()
    incidents = correlate(batch.events, batch.link_samples, batch.topology, now_us=T0_US + int(polls * period_s * S))
    one = {"events": batch.events.num_rows, "incidents": len(incidents), "cpu_s": round(time.process_time() - c0, 4)}
    return {"polls": polls, "period_s": period_s, "checkpoints": checkpoints, "one_batch": one}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.steady", description=__doc__.split("\n\n")[0])
    ap.add_argument("--polls", type=int, default=3000, help="polls of the down link (default 3,000)")
    ap.add_argument("--period", type=float, default=10.0, help="seconds between polls (default 10)")
    ap.add_argument("--every", type=int, default=500, help="report every this many polls (default 500)")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    a = ap.parse_args(argv)
    if a.polls < 1 or a.period <= 0 or a.every < 1:
        ap.error("--polls and --every must be at least 1, --period above 0")
    out = run(a.polls, a.period, a.every)
    if a.json:
        print(json.dumps(out))
    else:
        print("| poll | hours | last step ms | kept events | versions emitted | CPU s, all steps |")
        print("| --- | --- | --- | --- | --- | --- |")
        for r in out["checkpoints"]:
            print(f"| {r['poll']:,} | {r['hours']} | {r['step_ms']} | {r['kept_events']:,} | {r['emitted']} | "
                  f"{r['cpu_s']} |")
        o = out["one_batch"]
        print(f"\none batch of all {out['polls']:,} polls: {o['events']} event(s), {o['incidents']} incident(s), "
              f"correlate() {o['cpu_s']} CPU s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
