"""The correlator alone, this checkout against another commit, alternating on the same events.

``python -m benchmarks.correlator [--against REV] [--lines N] [--rounds R] [--ignore KEY] [--json]``

The correlator phases of :mod:`benchmarks.ingest` run once inside a seven-minute benchmark, on a machine whose
speed moves by ±30 % from one quarter hour to the next: too noisy to judge a change of 20 %. This one makes the
events once (``--lines`` lines of the fleet mix of :func:`benchmarks.generate.generate`, through the batched
in-process stages of :func:`benchmarks.ingest.stages`: 1M lines give ~6,000 events), checks out ``--against``
(default ``HEAD``) into a temporary git worktree, and then, ``--rounds`` times, runs each code in a child process
of its own, one after the other:

* ``correlate()`` over all the events, the best of ``--calls`` calls (CPU s; rules, catalog and platforms
  loaded before, as a service has them), and a hash of its incidents (orjson, sorted keys): the two codes must
  give the same incidents (but for the keys given by ``--ignore``), or the run fails (exit 1);
* the streaming correlator fed the same events in ~40 steps of arrival order, as :func:`benchmarks.ingest.
  correlator` feeds it, then flushed: the CPU s of all steps, the longest step, the incident versions emitted and
  a hash of them in emission order (the same way): the two codes must emit the same versions too — a change to
  the stream alone is not caught by ``correlate()``'s hash.
* then ``IDLE_STEPS`` more steps with nothing added (a consumer's polls of a quiet input): the mean CPU s of one,
  and the versions they emitted (none expected; not in the hash).

Per code the table gives the best and the median over the rounds (the best is what the code costs; the spread
is the machine's). Progress goes to stderr, the table (or with ``--json`` one JSON object) to stdout. Exit 2
when ``--against`` names no commit or the lines hold no event.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import math
import pickle
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

#: the streaming correlator's steps over the events (as benchmarks.ingest.STREAM_STEPS)
STEPS = 40
NOW_US = 1_800_000_000_000_000
#: steps with nothing added after the stream's flush, at the same time (a consumer's polls of a quiet input)
IDLE_STEPS = 10


def make_events(lines: int, seed: int, out: Path) -> int:
    """The batched stages' ``(events, link_samples, topology)`` tables per batch, pickled to ``out``; returns the
    events."""
    from benchmarks.generate import generate
    from benchmarks.ingest import messages, stages

    start = dt.datetime(2026, 12, 2, 9, 0, tzinfo=dt.timezone.utc)
    corpus = generate(lines, seed=seed, t0=start)
    with tempfile.TemporaryDirectory() as work:
        st, batches = stages(messages(corpus, "batch", "fleet"), Path(work) / "lake", 2000)
    out.write_bytes(pickle.dumps([(b.events, b.link_samples, b.topology) for b in batches]))
    return st["events"]


def child(root: str, path: str, calls: int, ignore: tuple[str, ...] = ()) -> dict:
    """One code's numbers (run in a process of its own, with ``root`` first on ``sys.path``); the incidents' hash
    leaves out their keys in ``ignore``."""
    sys.path.insert(0, root)
    import orjson
    import pyarrow as pa

    import correlate.correlator as correlator
    from correlate.stream import StreamCorrelator

    if not correlator.__file__.startswith(root):
        raise RuntimeError(f"imported {correlator.__file__}, not the code under {root}")
    batches = pickle.loads(Path(path).read_bytes())
    ev = pa.concat_tables([b[0] for b in batches])
    sm = pa.concat_tables([b[1] for b in batches])
    tp = pa.concat_tables([b[2] for b in batches])
    correlator.correlate(ev.slice(0, 100), sm, tp, now_us=NOW_US)
    best = None
    for _ in range(calls):
        c0 = time.process_time()
        incidents = correlator.correlate(ev, sm, tp, now_us=NOW_US)
        cpu = time.process_time() - c0
        best = cpu if best is None else min(best, cpu)
    kept = [{k: v for k, v in i.items() if k not in ignore} for i in incidents]
    digest = hashlib.sha256(orjson.dumps(kept, option=orjson.OPT_SORT_KEYS)).hexdigest()[:16]
    size = max(1, -(-ev.num_rows // STEPS))
    sc, steps, emitted = StreamCorrelator(), [], []
    for events, samples, topology in batches:
        for i in range(0, max(events.num_rows, 1), size):
            c0 = time.process_time()
            sc.add(events.slice(i, size), samples if i == 0 else None, topology if i == 0 else None)
            emitted += sc.step(now_us=NOW_US)
            steps.append(time.process_time() - c0)
    emitted += sc.step(now_us=NOW_US, flush=True)
    stream = [{k: v for k, v in i.items() if k not in ignore} for i in emitted]
    idle, idle_versions = [], 0  # polls that brought nothing, after the flush: what a quiet input costs
    for _ in range(IDLE_STEPS):
        c0 = time.process_time()
        idle_versions += len(sc.step(now_us=NOW_US))
        idle.append(time.process_time() - c0)
    return {"events": ev.num_rows, "incidents": len(incidents), "incidents_sha256": digest,
            "correlate_cpu_s": best, "stream_cpu_s": sum(steps), "stream_step_max_s": max(steps),
            "stream_steps": len(steps), "stream_versions": len(emitted),
            "idle_step_s": sum(idle) / len(idle), "idle_versions": idle_versions,
            "stream_sha256": hashlib.sha256(orjson.dumps(stream, option=orjson.OPT_SORT_KEYS)).hexdigest()[:16]}


def _run_child(root: Path, path: Path, calls: int, ignore: list[str]) -> dict:
    out = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child", str(root), str(path),
                          "--calls", str(calls), *(f"--ignore={k}" for k in ignore)],
                         capture_output=True, text=True, check=False)
    if out.returncode:
        raise RuntimeError(f"the child for {root} failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout)


def _summary(runs: list[dict]) -> dict:
    out = {}
    for k in ("correlate_cpu_s", "stream_cpu_s", "stream_step_max_s", "idle_step_s"):
        v = [r.get(k, math.nan) for r in runs]  # a commit from before the idle steps were measured has none
        out[k] = {"best": min(v), "median": statistics.median(v)}
    events = runs[0]["events"]
    out["events_per_s"] = {"best": events / out["correlate_cpu_s"]["best"],
                           "median": events / out["correlate_cpu_s"]["median"]}
    out["stream_events_per_s"] = {"best": events / out["stream_cpu_s"]["best"],
                                  "median": events / out["stream_cpu_s"]["median"]}
    return out


def _positive(text: str) -> int:
    n = int(text)
    if n < 1:
        raise argparse.ArgumentTypeError(f"{text} is not a positive number")
    return n


def against_commit(here: Path, name: str) -> str | None:
    """The full commit id ``name`` (``--against``: a commit, branch or tag) names in the repository at ``here``; None,
    with the error on stderr, when it names none (the caller exits 2). Shared with ``benchmarks.bigdomain``."""
    rev = subprocess.run(["git", "-C", str(here), "rev-parse", "--verify", "--quiet", name + "^{commit}"],
                         capture_output=True, text=True, check=False)
    if rev.returncode:
        print(f"--against {name!r} names no commit of {here}", file=sys.stderr)
        return None
    return rev.stdout.strip()


@contextmanager
def against_worktree(here: Path, base: str, prefix: str, checkout: bool = True) -> Iterator[tuple[Path, Path]]:
    """A scratch folder (``prefix`` + random, in the system's temp folder) and the path ``<folder>/against``, where a
    detached git worktree of commit ``base`` of the repository at ``here`` is made on entering when ``checkout`` (the
    caller may make it later); the worktree and the folder are removed on leaving, whatever happened. Raises
    subprocess.CalledProcessError when git cannot make the worktree. Shared with ``benchmarks.bigdomain``."""
    work = Path(tempfile.mkdtemp(prefix=prefix))
    tree = work / "against"
    try:
        if checkout:
            add_worktree(here, tree, base)
        yield work, tree
    finally:
        subprocess.run(["git", "-C", str(here), "worktree", "remove", "--force", str(tree)], check=False,
                       capture_output=True)
        shutil.rmtree(work, ignore_errors=True)


def add_worktree(here: Path, tree: Path, base: str) -> None:
    """A detached git worktree of commit ``base`` of the repository at ``here`` at ``tree``; raises
    subprocess.CalledProcessError when git cannot make it."""
    subprocess.run(["git", "-C", str(here), "worktree", "add", "--detach", "--quiet", str(tree), base], check=True)

def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.correlator", description=__doc__.split("\n\n")[0])
    ap.add_argument("--against", default="HEAD", help="the commit to compare with (default HEAD)")
    ap.add_argument("--lines", type=_positive, default=1_000_000, help="lines of the fleet mix (default 1,000,000)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--rounds", type=_positive, default=4, help="alternations of the two codes (default 4)")
    ap.add_argument("--calls", type=_positive, default=8, help="correlate() calls per child, the best counts")
    ap.add_argument("--json", action="store_true", help="one JSON object on stdout instead of the table")
    ap.add_argument("--ignore", action="append", default=[], metavar="KEY",
                    help="an incident key the two codes may differ in (repeatable): a change that only thins "
                         "`evidence` compares the rest")
    ap.add_argument("--child", nargs=2, metavar=("ROOT", "EVENTS"), help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child:
        print(json.dumps(child(a.child[0], a.child[1], a.calls, tuple(a.ignore))))
        return 0
    here = Path(__file__).resolve().parent.parent
    base = against_commit(here, a.against)
    if base is None:
        return 2
    with against_worktree(here, base, "ff-correlator-") as (work, tree):
        events_file = work / "batches.pickle"
        print(f"events from {a.lines:,} lines (seed {a.seed}) …", file=sys.stderr)
        n = make_events(a.lines, a.seed, events_file)
        if not n:
            print(f"{a.lines:,} lines of the mix hold no event: give more --lines (~6,000 events per 1M)",
                  file=sys.stderr)
            return 2
        runs: dict[str, list[dict]] = {"this": [], "against": []}
        for k in range(a.rounds):
            for name, root in (("against", tree), ("this", here)):
                r = _run_child(root, events_file, a.calls, a.ignore)
                runs[name].append(r)
                print(f"round {k + 1}/{a.rounds} {name}: correlate() {r['correlate_cpu_s']:.3f} s, stream "
                      f"{r['stream_cpu_s']:.2f} s (longest step {r['stream_step_max_s']:.3f} s)", file=sys.stderr)
        same = {r["incidents_sha256"] for rs in runs.values() for r in rs}
        # a commit from before the stream's hash has none: its versions cannot be compared, say so
        streams = {r.get("stream_sha256") for rs in runs.values() for r in rs}
        report = {"events": n, "lines": a.lines, "seed": a.seed, "against": base, "rounds": a.rounds,
                  "incidents": runs["this"][0]["incidents"], "same_incidents": len(same) == 1,
                  "same_stream_versions": None if None in streams else len(streams) == 1,
                  "ignored_keys": a.ignore,
                  "this": _summary(runs["this"]), "against_summary": _summary(runs["against"]), "runs": runs}
    if a.json:
        print(json.dumps(report))
    else:
        this, other = report["this"], report["against_summary"]
        print(f"{n:,} events, {report['incidents']} incidents; this checkout against {base[:10]}, "
              f"{a.rounds} rounds (best; median)")
        for key, label, fmt in (("events_per_s", "correlate() events/s", ",.0f"),
                                ("stream_events_per_s", "streaming events/s", ",.0f"),
                                ("stream_step_max_s", "longest streaming step s", ".3f"),
                                ("idle_step_s", "idle streaming step s", ".4f")):
            print(f"  {label:26s} {this[key]['best']:>8{fmt}}; {this[key]['median']:>8{fmt}}   against "
                  f"{other[key]['best']:>8{fmt}}; {other[key]['median']:>8{fmt}}")
        print("  same incidents" if report["same_incidents"] else "  DIFFERENT incidents: see --json")
        print({True: "  same streamed versions", False: "  DIFFERENT streamed versions: see --json",
               None: "  streamed versions not compared: the other commit hashes none"}[report["same_stream_versions"]])
    return 0 if report["same_incidents"] and report["same_stream_versions"] is not False else 1


if __name__ == "__main__":
    sys.exit(main())
