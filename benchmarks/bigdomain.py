"""``correlate()`` on one big NVLink domain whose job died many times, this checkout against another commit.

``python -m benchmarks.bigdomain [--against REV] [--hosts N] [--restarts R] [--rounds K] [--write DIR] [--json]``

The input (:func:`benchmarks.generate.domain_restarts`): ``--hosts`` hosts (default 72, a GB200 NVL72 rack's
count) of 8 GPUs, all in one ``domain`` of the fleet config, one job over all of them restarted ``--restarts``
times (default 20), each run ended by one GPU's Xid 79 and every rank's PyTorch watchdog timeout, with no NCCL
init lines: only the collective each timeout names ties the ranks together. Per-host files (``<host>.kern.log``,
``<host>.job.log``, mtime after the last line) and ``fleet.yaml`` are written to a scratch folder (or to
``--write DIR``, kept: ``firstfault diagnose DIR/logs --fleet-config DIR/fleet.yaml`` reads them), read by
``api.diagnose``'s own decoding (``ingest.files.decode_paths``, the pipeline), then, ``--rounds`` times, each code
runs in a child process of its own, one after the other (``--against``, default ``HEAD``, checked out into a
temporary git worktree as :mod:`benchmarks.correlator` does): ``correlate()`` over all the events, the best of
``--calls`` calls (CPU s; rules, catalog and platforms loaded before), and a hash of its incidents (orjson, sorted
keys). The two codes must give the same incidents, or the run fails (exit 1). Exit 2 when ``--against`` names no
commit. Progress to stderr, the table (or with ``--json`` one JSON object) to stdout.

With ``--write DIR`` and ``--rounds 0`` it only writes the files.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.correlator import add_worktree, against_commit, against_worktree

NOW_US = 1_800_000_000_000_000
DOMAIN = "nvl72-a"


def write(out: Path, hosts: int, restarts: int) -> int:
    """The case's log files under ``out/logs`` (mtime an hour after the last run's timeouts: a copy made after the
    job's end) and its fleet config ``out/fleet.yaml`` (every host GB200, in domain :data:`DOMAIN`); returns the
    lines written."""
    from benchmarks.generate import T0, domain_restarts

    logs = out / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    files = domain_restarts(hosts, restarts, t0=T0)
    mtime = T0.timestamp() + restarts * 1800 + 3600
    for name, lines in files.items():
        p = logs / name
        p.write_text("\n".join(lines) + "\n")
        os.utime(p, (mtime, mtime))
    (out / "fleet.yaml").write_text("hosts:\n" + "".join(
        f'  node{h:04d}: {{platform: "NVIDIA GB200", domain: {DOMAIN}, rack: r1}}\n' for h in range(hosts)))
    return sum(map(len, files.values()))


def child(root: str, case: str, calls: int) -> dict:
    """One code's numbers on the case in folder ``case`` (run in a process of its own, ``root`` first on
    ``sys.path``)."""
    sys.path.insert(0, root)
    import orjson

    import correlate.correlator as correlator
    from api.diagnose import _run
    from ingest.files import decode_paths
    from ingest.pipeline import Pipeline
    from schemas.settings import load_settings

    if not correlator.__file__.startswith(root):
        raise RuntimeError(f"imported {correlator.__file__}, not the code under {root}")
    s = load_settings(None, env={}, overrides={"fleet_config": Path(case) / "fleet.yaml"})
    batch = _run(Pipeline(tz=s.tzinfo()), decode_paths(sorted((Path(case) / "logs").iterdir())))
    settings = correlator.correlation_settings(s)
    ev, sm, tp = batch.events, batch.link_samples, batch.topology
    correlator.correlate(ev.slice(0, 10), sm, tp, settings=settings, now_us=NOW_US)
    best = None
    for _ in range(calls):
        c0 = time.process_time()
        incidents = correlator.correlate(ev, sm, tp, settings=settings, now_us=NOW_US)
        cpu = time.process_time() - c0
        best = cpu if best is None else min(best, cpu)
    top = max(incidents, key=lambda i: len(i["downstream"]), default=None)
    return {"events": ev.num_rows, "incidents": len(incidents), "correlate_cpu_s": best,
            "incidents_sha256": hashlib.sha256(orjson.dumps(incidents, option=orjson.OPT_SORT_KEYS)).hexdigest()[:16],
            "initiators": sorted({f"{i['initiator']['host']} Xid {i['initiator']['xid']}" for i in incidents}),
            "largest_downstream": len(top["downstream"]) if top else 0}


def _run_child(root: Path, case: Path, calls: int) -> dict:
    out = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child", str(root), str(case),
                          "--calls", str(calls)], capture_output=True, text=True, check=False)
    if out.returncode:
        raise RuntimeError(f"the child for {root} failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout)


def _count(text: str, least: int) -> int:
    n = int(text)
    if n < least:
        raise argparse.ArgumentTypeError(f"{text} is less than {least}")
    return n


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.bigdomain", description=__doc__.split("\n\n")[0])
    ap.add_argument("--against", default="HEAD", help="the commit to compare with (default HEAD)")
    ap.add_argument("--hosts", type=lambda t: _count(t, 2), default=72, help="hosts of 8 GPUs (default 72)")
    ap.add_argument("--restarts", type=lambda t: _count(t, 1), default=20, help="runs of the job (default 20)")
    ap.add_argument("--rounds", type=lambda t: _count(t, 0), default=3, help="alternations of the two codes")
    ap.add_argument("--calls", type=lambda t: _count(t, 1), default=2, help="correlate() calls per child, the best")
    ap.add_argument("--write", type=Path, metavar="DIR", help="write the case here and keep it")
    ap.add_argument("--json", action="store_true", help="one JSON object on stdout instead of the table")
    ap.add_argument("--child", nargs=2, metavar=("ROOT", "CASE"), help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child:
        print(json.dumps(child(a.child[0], a.child[1], a.calls)))
        return 0
    here = Path(__file__).resolve().parent.parent
    base = against_commit(here, a.against)
    if base is None:
        return 2
    with against_worktree(here, base, "ff-bigdomain-", checkout=False) as (work, tree):
        case = a.write or work / "case"
        lines = write(case, a.hosts, a.restarts)
        print(f"{a.hosts} hosts, {a.restarts} runs: {lines:,} lines in {case}", file=sys.stderr)
        if not a.rounds:
            return 0
        add_worktree(here, tree, base)
        runs: dict[str, list[dict]] = {"this": [], "against": []}
        for k in range(a.rounds):
            for name, root in (("against", tree), ("this", here)):
                r = _run_child(root, case, a.calls)
                runs[name].append(r)
                print(f"round {k + 1}/{a.rounds} {name}: correlate() {r['correlate_cpu_s']:.3f} s, "
                      f"{r['incidents']} incidents", file=sys.stderr)
    same = len({r["incidents_sha256"] for rs in runs.values() for r in rs}) == 1
    cpu = {name: {"best": min(r["correlate_cpu_s"] for r in rs),
                  "median": statistics.median(r["correlate_cpu_s"] for r in rs)} for name, rs in runs.items()}
    first = runs["this"][0]
    report = {"hosts": a.hosts, "restarts": a.restarts, "lines": lines, "events": first["events"],
              "incidents": first["incidents"], "largest_downstream": first["largest_downstream"],
              "against": base, "rounds": a.rounds, "same_incidents": same, "correlate_cpu_s": cpu, "runs": runs}
    if a.json:
        print(json.dumps(report))
    else:
        print(f"{a.hosts} hosts × 8 GPUs in one domain, {a.restarts} runs: {first['events']:,} events, "
              f"{first['incidents']} incidents (the largest {first['largest_downstream']} downstream); this checkout "
              f"against {base[:10]}, {a.rounds} rounds")
        print(f"  correlate() CPU s, best; median  {cpu['this']['best']:8.3f}; {cpu['this']['median']:8.3f}   "
              f"against {cpu['against']['best']:8.3f}; {cpu['against']['median']:8.3f}")
        print("  same incidents" if same else "  DIFFERENT incidents: see --json")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
