"""Hourly degraded-link report benchmark: ``api.degraded_links.build_report`` on a fleet whose links are all listed.

``python -m benchmarks.report [--hosts N,N,...] [--json]``

For each host count: ``N`` hosts of 8 GPUs of 18 NVLinks (an HGX H100), two poller samples per link in the hour
(a state row and a ``CRC Errors`` row each, the counter rising on every link, every third link down) and one
incident evidence row per down link, built in memory (no lake, no Kafka): the worst hour, where every link is
listed, its 24 hourly rates computed and its incidents matched. Reported: links listed, CPU seconds of
``build_report``, and µs per listed link (flat when the report scales linearly with the links).

The loading of the rows from the lake (``api.report.load_inputs``, DuckDB) is not timed here. No baseline: this
measures how the report grows with the fleet (it grew with the square of the links before the pass that
indexed the evidence rows by link: 6.5 s for 50 hosts, about 100 s for 200).
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from api.degraded_links import build_report

#: 2026-12-01T21:00Z in µs: the report's hour
START_US = 1_796_151_600_000_000
GPUS, LINKS = 8, 18


def fleet_hour(hosts: int, start_us: int = START_US) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(link sample rows, incident evidence rows) of one hour for ``hosts`` hosts, in the shapes
    ``build_report`` reads (``api.report.load_inputs``: ``ts``/``start`` in µs)."""
    samples, evidence = [], []
    for s, ts in enumerate((start_us + 600_000_000, start_us + 2_400_000_000)):
        for h in range(hosts):
            host = f"node{h:05d}"
            for g in range(GPUS):
                dev = f"0000:{0x18 + g:02x}:00.0"
                for link in range(LINKS):
                    base = {"host": host, "ts": ts, "gpu_index": g, "device": dev, "link": link,
                            "model": "NVIDIA H100 80GB HBM3", "origin": "bench"}
                    down = link % 3 == 0
                    samples.append({**base, "state": "down" if down else "up", "gbps": None if down else 26.562,
                                    "counter": None, "value": None})
                    samples.append({**base, "state": None, "gbps": None, "counter": "CRC Errors",
                                    "value": float(s * (link + 1))})
                    if s and down:
                        evidence.append({"id": f"inc-{h}-{g}-{link}", "category": "link_fault", "severity": "error",
                                         "status": "open", "start": ts, "role": "initiator", "host": host,
                                         "gpu_index": g, "device": dev, "link": link})
    return samples, evidence


def run(hosts: int) -> dict[str, Any]:
    """One host count: ``{"hosts", "links_listed", "cpu_s", "us_per_link"}`` (CPU time of ``build_report``)."""
    samples, evidence = fleet_hour(hosts)
    t = time.process_time()
    report = build_report(samples, evidence, START_US)
    cpu = time.process_time() - t
    n = len(report["links"])
    return {"hosts": hosts, "links_listed": n, "cpu_s": round(cpu, 3), "us_per_link": round(cpu / n * 1e6, 1)}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.report", description=__doc__.splitlines()[0])
    ap.add_argument("--hosts", default="50,200", help="host counts, comma-separated (default 50,200)")
    ap.add_argument("--json", action="store_true", help="one JSON object instead of the table")
    a = ap.parse_args(argv)
    try:
        counts = [int(x) for x in a.hosts.split(",") if x.strip()]
    except ValueError:
        ap.error(f"--hosts must be whole numbers, comma-separated, not {a.hosts!r}")
    if not counts or min(counts) < 1:
        ap.error("--hosts needs at least one count of 1 or more")
    rows = [run(n) for n in counts]
    if a.json:
        print(json.dumps({"benchmark": "degraded_link_report", "runs": rows}))
        return
    print(f"{'hosts':>7} {'links listed':>13} {'CPU s':>8} {'µs/link':>8}")
    for r in rows:
        print(f"{r['hosts']:>7} {r['links_listed']:>13} {r['cpu_s']:>8.2f} {r['us_per_link']:>8.1f}")


if __name__ == "__main__":
    main()
