"""Accuracy of the correlator on simulated fleets, through ``diagnose`` and through the Kafka service.

    python -m benchmarks.accuracy [--scenarios 500] [--seed N] [--json] [--kafka/--no-kafka] [--quick]
                                  [--kinds k1,k2] [--readme benchmarks/README.md] [--keep DIR]

``benchmarks.simulate`` makes the scenarios (kinds round-robin). Two paths:

* **diagnose**: each scenario's files (``<host>.<dmesg|syslog|nccl|nvml>.log``, mtimes set) go through
  ``api.diagnose.diagnose_paths`` with the fleet config and the scenario's operator symptoms — what an
  on-call engineer runs on the logs of one job;
* **kafka**: a real local broker (``ingest.broker``, own state folder under /tmp, 127.0.0.1, stopped at the
  end); every scenario's messages are produced in delivery order (delayed, reordered, duplicated; Kafka
  ``CreateTime`` from the shipper's clock) and one ``api.service.Service`` consumes them all
  (``run(once=True)``). Operator symptoms have no channel here, so scenarios that only a symptom
  describes are left out of this path (``kafka_skipped``).

Scores per kind (ground truth: ``benchmarks.simulate.Truth``):

* ``initiator_accuracy``: share of fault scenarios with an incident of severity warning or above whose
  initiator matches (host and device_type and device; both link ends for a link; host and rank for a hung
  communicator; device and link for NVLink5; host with ``device_type`` null and the category for platform
  causes; host and NIC for an IB port);
* ``downstream_precision`` / ``downstream_recall`` (micro-averaged): over the downstream parties of that
  incident (else of the serious incident that recovers most reporters). A party matches an expected
  reporter on host and device, rank or GPU index; a party naming only a host counts as right when that
  host has expected reporters; the initiator's own reports are allowed, not required;
* ``serious_on_benign``: share of benign scenarios with any incident of severity warning or above;
* ``extra_serious``: serious incidents per fault scenario that do not name the initiator (pages that lead
  the on-call engineer elsewhere).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import sys
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import yaml

from benchmarks.simulate import BENIGN_KINDS, FAULT_KINDS, Fleet, Reporter, Scenario, Truth, generate

SERIOUS = ("critical", "error", "warning")
SECTION = "## Accuracy (correlator)"
README = Path(__file__).with_name("README.md")


# --------------------------------------------------------------------------------------------------
# Scoring


def serious(inc: dict[str, Any]) -> bool:
    return inc.get("severity") in SERIOUS


def initiator_ok(t: Truth, inc: dict[str, Any]) -> bool:
    """Does this incident name the scenario's initiator (module doc)?"""
    i = inc["initiator"]
    if not serious(inc) or i.get("host") != t.host:
        return False
    if t.device_type == "link":
        return i.get("device_type") == "link" and {i.get("device"), i.get("peer")} == {t.device, t.peer}
    if t.kind == "nccl_hang":
        return i.get("rank") == t.rank and i.get("device") in (None, t.device)
    if t.kind == "nvl72_link_down":
        links = set(i.get("links") or []) | ({i["link"]} if i.get("link") is not None else set())
        return i.get("device_type") in ("gpu", "link") and i.get("device") == t.device and t.link in links
    if t.device_type is None:
        return i.get("device_type") is None and inc.get("category") == t.category
    return i.get("device_type") == t.device_type and i.get("device") == t.device


def party_matches(p: dict[str, Any], r: Reporter) -> bool:
    if p.get("host") != r.host:
        return False
    if p.get("device") and r.device and p["device"] == r.device:
        return True
    if p.get("rank") is not None and r.rank is not None and p["rank"] == r.rank:
        return True
    return p.get("device") is None and p.get("gpu_index") is not None and p["gpu_index"] == r.gpu_index


def host_only(p: dict[str, Any]) -> bool:
    return not p.get("device") and p.get("rank") is None and p.get("gpu_index") is None


def downstream_counts(t: Truth, inc: dict[str, Any] | None) -> tuple[int, int, int, int]:
    """(parties right, parties named, expected reporters found, expected reporters)."""
    if inc is None:
        return 0, 0, 0, len(t.downstream)
    parties = inc["downstream"]
    allowed = t.downstream + t.own
    hosts = {r.host for r in allowed}
    right = sum(1 for p in parties if any(party_matches(p, r) for r in allowed) or (host_only(p) and p["host"] in hosts))
    found = sum(1 for r in t.downstream if any(party_matches(p, r) for p in parties))
    return right, len(parties), found, len(t.downstream)


def brief(inc: dict[str, Any] | None) -> str:
    """What an incident concluded, in one line (for the failure lists)."""
    if inc is None:
        return "no serious incident"
    i = inc["initiator"]
    what = ", ".join(f"{k}={i[k]}" for k in ("device_type", "device", "peer", "link", "rank", "kind", "xid")
                     if i.get(k) is not None)
    return f"{inc['severity']} {inc['category']} [{inc.get('pattern')}] {i.get('host')}: {what or 'no culprit'}"


@dataclass
class Result:
    sid: int
    kind: str
    variant: str
    benign: bool
    correct: bool | None  # None for benign
    serious: int
    extra_serious: int
    ds: tuple[int, int, int, int]
    answer: str  # what the main (or loudest) incident said


def score(s: Scenario, incidents: list[dict[str, Any]]) -> Result:
    loud = [i for i in incidents if serious(i)]
    t = s.truth
    if t.benign:
        return Result(s.sid, s.kind, s.variant, True, None, len(loud), len(loud), (0, 0, 0, 0),
                      brief(loud[0]) if loud else "no serious incident")
    good = [i for i in loud if initiator_ok(t, i)]
    if good:
        main = good[0]
    elif loud:
        main = max(loud, key=lambda i: (downstream_counts(t, i)[2], {"critical": 3, "error": 2}.get(i["severity"], 1)))
    else:
        main = None
    return Result(s.sid, s.kind, s.variant, False, bool(good), len(loud), len(loud) - len(good),
                  downstream_counts(t, main), brief(main))


def _ratio(a: int, b: int) -> float | None:
    return round(a / b, 4) if b else None


def summarize(results: list[Result]) -> dict[str, Any]:
    """Per-kind figures plus ``overall`` (micro averages over fault kinds; benign rate over benign kinds)."""
    by: dict[str, list[Result]] = defaultdict(list)
    for r in results:
        by[r.kind].append(r)
    out: dict[str, Any] = {}
    for kind in [k for k in (*FAULT_KINDS, *BENIGN_KINDS) if k in by]:
        rs = by[kind]
        out[kind] = _figures(rs)
    out["overall"] = {
        "fault": _figures([r for r in results if not r.benign]),
        "benign": _figures([r for r in results if r.benign]),
        "scenarios": len(results),
    }
    return out


def _figures(rs: list[Result]) -> dict[str, Any]:
    faults = [r for r in rs if not r.benign]
    benign = [r for r in rs if r.benign]
    tp, named, found, expected = (sum(r.ds[i] for r in faults) for i in range(4))
    return {
        "scenarios": len(rs),
        "initiator_accuracy": _ratio(sum(1 for r in faults if r.correct), len(faults)),
        "downstream_precision": _ratio(tp, named),
        "downstream_recall": _ratio(found, expected),
        "serious_on_benign": _ratio(sum(1 for r in benign if r.serious), len(benign)),
        "extra_serious": _ratio(sum(r.extra_serious for r in faults), len(faults)),
    }


def failures(results: list[Result], limit: int = 4) -> dict[str, list[dict[str, Any]]]:
    """Per kind, the commonest wrong answers with example scenario ids."""
    out: dict[str, list[dict[str, Any]]] = {}
    by: dict[str, list[Result]] = defaultdict(list)
    for r in results:
        if (r.benign and r.serious) or (not r.benign and not r.correct):
            by[r.kind].append(r)
    for kind, rs in by.items():
        c = Counter(_generic(r.answer) for r in rs)
        out[kind] = [{"answer": a, "n": n, "examples": [f"s{r.sid:03d}/{r.variant}" for r in rs
                                                         if _generic(r.answer) == a][:3]}
                     for a, n in c.most_common(limit)]
    return out


def _generic(answer: str) -> str:
    """An answer without the scenario's host and bus ids, so equal mistakes count together."""
    import re

    a = re.sub(r"\b[\w]+-\d{5}\b", "<host>", answer)
    a = re.sub(r"\b[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]\b", "<bus>", a)
    a = re.sub(r"rank=\d+", "rank=<n>", a)
    a = re.sub(r"link=\d+", "link=<n>", a)
    return re.sub(r"mlx5_\d+", "mlx5_<n>", a)


def detail(path: str, s: Scenario, r: Result, incidents: list[dict[str, Any]]) -> dict[str, Any]:
    """One scenario's outcome on one path, for reading failures (``--details``)."""
    t = s.truth
    return {"path": path, "sid": s.sid, "kind": s.kind, "variant": s.variant, "correct": r.correct,
            "serious": r.serious, "extra_serious": r.extra_serious, "downstream": r.ds,
            "truth": {k: getattr(t, k) for k in ("host", "device_type", "device", "peer", "link", "rank", "category")},
            "hosts": {h.name: {"style": h.style, "skew_ms": h.skew // 1000, "envelope": h.envelope,
                               "nccl": h.nccl_version} for h in s.hosts.values()},
            "incidents": [brief(i) for i in incidents]}


def by_scenario(fleet: Fleet, incidents: list[dict[str, Any]]) -> dict[int, list[dict[str, Any]]]:
    """Incidents grouped by the scenario whose hosts they name (every scenario has hosts of its own)."""
    hs = fleet.host_scenario()
    out: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for inc in incidents:
        hosts = [inc["initiator"].get("host")] + [d.get("host") for d in inc["downstream"]] + \
                [c.get("host") for c in inc.get("context", [])]
        sids = Counter(hs[h] for h in hosts if h in hs)
        if sids:
            out[sids.most_common(1)[0][0]].append(inc)
    return out


# --------------------------------------------------------------------------------------------------
# The two paths


def write_fleet(fleet: Fleet, root: Path) -> Path:
    """Scenario files under ``root/sNNN/`` with their mtimes, and ``root/fleet.yaml``; returns the config."""
    root.mkdir(parents=True, exist_ok=True)
    for s in fleet.scenarios:
        d = root / f"s{s.sid:03d}"
        d.mkdir(exist_ok=True)
        for f in s.files:
            p = d / f.name
            p.write_bytes(f.data)
            os.utime(p, ns=(f.mtime * 1000, f.mtime * 1000))
    cfg = root / "fleet.yaml"
    cfg.write_text(yaml.safe_dump(fleet.fleet_config(), sort_keys=True))
    return cfg


def run_diagnose(fleet: Fleet, root: Path, cfg: Path) -> dict[int, list[dict[str, Any]]]:
    from api.diagnose import diagnose_paths
    from correlate.correlator import Symptom
    from ingest.pipeline import Pipeline
    from schemas.settings import Settings

    settings = Settings(fleet_config=cfg)
    pipe = Pipeline(tz=settings.tzinfo())
    out = {}
    for s in fleet.scenarios:
        _, _, incs = diagnose_paths([root / f"s{s.sid:03d}"], settings, pipeline=pipe, now_us=s.t0 + 86400 * 10**6,
                                    symptoms=[Symptom(x.host, kind=x.kind) for x in s.symptoms])
        out[s.sid] = incs
    return out


@dataclass
class KafkaStats:
    messages: int = 0
    duplicates: int = 0
    bytes: int = 0
    produce_s: float = 0.0
    consume_s: float = 0.0
    late_events: int = 0
    chunks: int = 0
    health: dict[str, Any] = field(default_factory=dict)


def run_kafka(fleet: Fleet, work: Path, cfg: Path, pace_s: float = 60.0, restart_every: int = 50, log=print
              ) -> tuple[dict[int, list[dict[str, Any]]], KafkaStats]:
    """Produce every expressible scenario's messages to a fresh local broker in delivery order, ``pace_s`` of
    delivery time at a time, and let the service catch up after each chunk (a live stream; 0 = a backlog).

    Every ``restart_every`` scenarios the service process is replaced (same consumer group). Each simulated
    host lives in one scenario only and then falls silent; the service keeps a quiet host's events until its
    own watermark moves, so one process fed 500 scenarios grows without bound (a property of this simulated
    fleet, where no host outlives its scenario, more than of a real one)."""
    from ingest import broker

    state = work / "kafka-state"
    st = broker.start(state, timeout_s=180, log=log)
    try:
        incidents, stats = asyncio.run(_kafka(fleet, st.bootstrap, work, cfg, pace_s, restart_every))
    finally:
        broker.stop(state)
    return by_scenario(fleet, incidents), stats


TOPICS = ["fleet.dmesg", "fleet.nccl", "fleet.nvml"]
#: the simulated times lie months in the past: keep the broker from deleting or rolling by timestamp
TOPIC_CONFIG = {"retention.ms": "-1", "retention.bytes": "-1", "segment.ms": str(10 * 365 * 86400 * 1000)}


async def _topics(bootstrap: str) -> None:
    from aiokafka.admin import AIOKafkaAdminClient, NewTopic

    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=15000)
    await admin.start()
    try:
        have = set(await admin.list_topics())
        new = [NewTopic(t, 3, 1, topic_configs=TOPIC_CONFIG) for t in TOPICS + ["fleet.dlq"] if t not in have]
        if new:
            await admin.create_topics(new)
    finally:
        await admin.close()


def eventful(msgs: list) -> set[int]:
    """Indexes of the messages that yield at least one event (the only ones that move the watermark)."""
    from ingest.decode import Decoded, decode_message
    from ingest.pipeline import Pipeline

    pipe, out = Pipeline(), set()
    for lo in range(0, len(msgs), 4000):
        d = Decoded()
        for i, m in enumerate(msgs[lo:lo + 4000], lo):
            x = decode_message(m.value, topic=m.topic, partition=0, offset=i, key=m.key.encode(),
                               timestamp_ms=m.timestamp_ms)
            d.segments.extend(x.segments)
        for origin in pipe.run(d).events.column("origin").to_pylist():
            out.add(int(origin.split("/")[2].split(":")[0].split("#")[0]))
    return out


def chunks(msgs: list, pace_us: int, marks: set[int] | None = None) -> list[list]:
    """Messages in delivery order, cut so that the event-bearing messages (``marks``; default all) of one chunk
    were delivered within ``pace_us`` of each other: one chunk is what reaches the broker while the consumer
    catches up once. Messages without events ride along. ``pace_us <= 0``: everything at once (a backlog)."""
    out: list[list] = []
    first: int | None = None  # delivery time of the chunk's first event-bearing message
    for i, m in enumerate(msgs):
        mark = marks is None or i in marks
        if not out or (mark and first is not None and pace_us > 0 and m.deliver - first >= pace_us):
            out.append([])
            first = None
        out[-1].append(m)
        if mark and first is None:
            first = m.deliver
    return out


async def _kafka(fleet: Fleet, bootstrap: str, work: Path, cfg: Path, pace_s: float, restart_every: int
                 ) -> tuple[list[dict[str, Any]], KafkaStats]:
    from aiokafka import AIOKafkaProducer, TopicPartition

    from api.service import Service
    from schemas.settings import Settings

    await _topics(bootstrap)
    scen = [s for s in fleet.scenarios if s.kafka_expressible]
    step = restart_every if restart_every > 0 else len(scen) or 1
    segments = [scen[i:i + step] for i in range(0, len(scen), step)]
    stats = KafkaStats()
    settings = Settings(lake=str(work / "lake"), topics=TOPICS, dlq_topic="fleet.dlq", state_dir=work / "state",
                        fleet_config=cfg, batch_linger_ms=50)
    group = f"accuracy-{time.time_ns()}"
    incidents: dict[str, dict[str, Any]] = {}
    p = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5, max_request_size=16 * 1024 * 1024)
    await p.start()
    try:
        for t in TOPICS:  # wait for the partition leaders of the new topics
            for _ in range(100):
                parts = await p.partitions_for(t)
                if parts and all(p.client.cluster.leader_for_partition(TopicPartition(t, x)) not in (None, -1)
                                 for x in parts):
                    break
                await asyncio.sleep(0.1)
        for seg in segments:
            # one service process per segment, same consumer group: a restart between scenario slots
            msgs = sorted((m for s in seg for m in s.messages), key=lambda m: m.deliver)
            stats.messages += len(msgs)
            stats.duplicates += sum(m.duplicate for m in msgs)
            stats.bytes += sum(len(m.value) for m in msgs)
            svc = Service(settings, bootstrap, group_id=group)
            await svc.worker.start()
            try:
                parts = chunks(msgs, int(pace_s * 10**6), eventful(msgs))
                stats.chunks += len(parts)
                for chunk in parts:
                    t = time.perf_counter()
                    futs = [await p.send(m.topic, value=m.value, key=m.key.encode(), timestamp_ms=m.timestamp_ms)
                            for m in chunk]
                    for f in futs:
                        await f
                    stats.produce_s += time.perf_counter() - t
                    t = time.perf_counter()
                    await svc.worker.run(until_caught_up=True)
                    stats.consume_s += time.perf_counter() - t
                # the input has ended: close every window (what Service.run(once=True) does when caught up)
                svc.emit(svc.correlator.step(now_us=int(time.time() * 10**6), flush=True))
            finally:
                await svc.worker.close()
            stats.late_events += svc.correlator.late_events
            h = svc.health()
            stats.health = {k: stats.health.get(k, 0) + (h.get(k) or 0) for k in ("events", "rejects", "records")}
            incidents.update({i["id"]: i for i in svc.current()})
    finally:
        await p.stop()
    return list(incidents.values()), stats


# --------------------------------------------------------------------------------------------------
# Output


COLUMNS = ("scenarios", "initiator_accuracy", "downstream_precision", "downstream_recall", "serious_on_benign",
           "extra_serious")


def _cell(v: Any) -> str:
    if v is None:
        return "–"
    if isinstance(v, float):
        return f"{v:.3f}" if v != int(v) or v < 1 or True else str(v)
    return str(v)


def table(paths: dict[str, dict[str, Any]]) -> str:
    """One markdown table: a row per kind, the figures of each path side by side."""
    names = list(paths)
    head = ["kind", "n"] + [f"{c} ({p})" for c in ("initiator acc.", "ds precision", "ds recall",
                                                  "serious on benign", "extra serious") for p in names]
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    kinds = [k for k in (*FAULT_KINDS, *BENIGN_KINDS) if any(k in paths[p] for p in names)]
    keys = ("initiator_accuracy", "downstream_precision", "downstream_recall", "serious_on_benign", "extra_serious")
    for k in kinds + ["overall.fault", "overall.benign"]:
        def get(p: str) -> dict[str, Any]:
            d = paths[p]
            return d["overall"][k.split(".")[1]] if k.startswith("overall.") else d.get(k, {})
        first = get(names[0])
        n = first.get("scenarios")
        ns = "/".join(str(get(p).get("scenarios", "–")) for p in names)
        cells = [k if not k.startswith("overall") else f"**{k}**", ns if len({get(p).get('scenarios') for p in names}) > 1
                 else str(n)]
        for key in keys:
            for p in names:
                cells.append(_cell(get(p).get(key)))
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows)


BEGIN, END = "<!-- accuracy:begin (generated by python -m benchmarks.accuracy --readme) -->", "<!-- accuracy:end -->"


def update_readme(path: Path, body: str) -> None:
    """Put ``body`` (a generated block) into the ``## Accuracy (correlator)`` section of ``path``.

    The file is read just before it is written (others edit the rest of it). Inside the section only the
    part between the markers is replaced, so notes written below the block stay; a section without markers
    is replaced whole, a missing section is appended."""
    text = path.read_text(encoding="utf-8") if path.exists() else "# Benchmarks\n"
    block = f"{BEGIN}\n{body.strip()}\n{END}"
    start = text.find(SECTION)
    if start < 0:
        new = text.rstrip("\n") + f"\n\n{SECTION}\n\n{block}\n"
    else:
        nxt = text.find("\n## ", start + len(SECTION))
        sec = text[start:nxt if nxt >= 0 else len(text)]
        b, e = sec.find(BEGIN), sec.find(END)
        if 0 <= b < e:
            sec = sec[:b] + block + sec[e + len(END):]
        else:
            sec = f"{SECTION}\n\n{block}\n"
        new = text[:start] + sec.rstrip("\n") + "\n" + (text[nxt:] if nxt >= 0 else "")
    path.write_text(new, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.accuracy", description=__doc__.split("\n\n")[0])
    ap.add_argument("--scenarios", type=int, default=500)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", action="store_true", help="print one JSON object instead of tables")
    ap.add_argument("--kafka", action=argparse.BooleanOptionalAction, default=True,
                    help="also run the Kafka service path (starts a local broker)")
    ap.add_argument("--quick", action="store_true", help="3 scenarios per kind")
    ap.add_argument("--restart-every", type=int, default=50,
                    help="Kafka path: a new service process every N scenarios (0: one process for all)")
    ap.add_argument("--pace", type=float, default=60.0,
                    help="Kafka path: seconds of delivery time produced before the service catches up (0: backlog)")
    ap.add_argument("--kinds", default="", help="comma-separated kinds (default: all)")
    ap.add_argument("--readme", type=Path, default=None, help=f"update the '{SECTION}' section of this file")
    ap.add_argument("--keep", type=Path, default=None, help="write the simulated files here and keep them")
    ap.add_argument("--details", type=Path, default=None,
                    help="write one JSON line per scenario and path: truth, verdict, every incident in brief")
    ap.add_argument("--render", type=Path, default=None,
                    help="no run: print the tables of a saved --json output (and update --readme from it)")
    a = ap.parse_args(argv)
    if a.render:
        saved = orjson.loads(a.render.read_bytes())
        meta = saved.pop("meta")
        saved.pop("failures", None)
        print(table(saved))
        if a.readme:
            update_readme(a.readme, readme_section(meta["command"], saved, meta))
        return 0
    kinds = [k for k in a.kinds.split(",") if k] or None
    for k in kinds or []:
        if k not in FAULT_KINDS and k not in BENIGN_KINDS:
            ap.error(f"unknown kind {k!r}")
    n = 3 * len(kinds or [*FAULT_KINDS, *BENIGN_KINDS]) if a.quick else a.scenarios
    log = (lambda m: print(m, file=sys.stderr)) if a.json else print

    t0 = time.perf_counter()
    fleet = generate(n, a.seed, kinds)
    work = a.keep or Path(tempfile.mkdtemp(prefix="ff-accuracy-"))
    try:
        cfg = write_fleet(fleet, work / "files")
        log(f"simulated {n} scenarios (seed {a.seed}) in {time.perf_counter() - t0:.1f} s -> {work}")
        paths: dict[str, dict[str, Any]] = {}
        fails: dict[str, Any] = {}
        meta: dict[str, Any] = {"scenarios": n, "seed": a.seed, "kinds": sorted({s.kind for s in fleet.scenarios}),
                                "firstfault": _revision()}
        t = time.perf_counter()
        diag = run_diagnose(fleet, work / "files", cfg)
        res = [score(s, diag.get(s.sid, [])) for s in fleet.scenarios]
        details = [detail("diagnose", s, r, diag.get(s.sid, [])) for s, r in zip(fleet.scenarios, res)]
        paths["diagnose"], fails["diagnose"] = summarize(res), failures(res)
        meta["diagnose_s"] = round(time.perf_counter() - t, 1)
        log(f"diagnose: {meta['diagnose_s']} s")
        if a.kafka:
            try:
                inc, st = run_kafka(fleet, work, cfg, a.pace, a.restart_every, log=log)
            except Exception as e:  # report the diagnose figures even when the service path breaks
                meta["kafka_error"] = f"{type(e).__name__}: {e}"
                log(f"kafka path failed: {meta['kafka_error']}")
                inc, st = None, None
        if a.kafka and inc is not None and st is not None:
            exp = [s for s in fleet.scenarios if s.kafka_expressible]
            res = [score(s, inc.get(s.sid, [])) for s in exp]
            details += [detail("kafka", s, r, inc.get(s.sid, [])) for s, r in zip(exp, res)]
            paths["kafka"], fails["kafka"] = summarize(res), failures(res)
            skipped = Counter(s.kind for s in fleet.scenarios if not s.kafka_expressible)
            meta["kafka"] = {"messages": st.messages, "duplicates": st.duplicates, "bytes": st.bytes,
                             "produce_s": round(st.produce_s, 1), "consume_s": round(st.consume_s, 1),
                             "late_events": st.late_events, "kafka_skipped": dict(skipped), "pace_s": a.pace, "chunks": st.chunks,
                             "restart_every": a.restart_every,
                             "rejects": st.health.get("rejects"), "events": st.health.get("events")}
            log(f"kafka: {st.messages} messages ({st.duplicates} duplicates), consumed in {st.consume_s:.1f} s, "
                f"{st.late_events} late events")
    finally:
        if a.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    if a.details:
        a.details.write_bytes(b"".join(orjson.dumps(d) + b"\n" for d in details))
    cmd = "python -m benchmarks.accuracy " + " ".join(argv if argv is not None else sys.argv[1:])
    if a.json:
        print(orjson.dumps({**paths, "failures": fails, "meta": {**meta, "command": cmd.strip()}},
                           option=orjson.OPT_INDENT_2).decode())
    else:
        print(table(paths))
        for p, fl in fails.items():
            for kind, items in fl.items():
                for it in items:
                    print(f"  {p} {kind}: {it['n']}x {it['answer']}  e.g. {', '.join(it['examples'])}")
    if a.readme:
        update_readme(a.readme, readme_section(cmd.strip(), paths, meta))
    return 0


def _revision() -> str:
    """The commit measured, ``+dirty`` when the working tree differs from it (others edit concurrently)."""
    import subprocess

    if os.environ.get("FIRSTFAULT_REVISION"):  # a snapshot outside the repository says what it is
        return os.environ["FIRSTFAULT_REVISION"]
    root = Path(__file__).resolve().parents[1]
    try:
        rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True,
                             check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                               capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return rev + ("+dirty" if dirty else "")


def readme_section(cmd: str, paths: dict[str, dict[str, Any]], meta: dict[str, Any]) -> str:
    k = meta.get("kafka", {})
    kafka_note = (f" Kafka path: {k.get('messages')} messages ({k.get('duplicates')} duplicates), "
                  f"{k.get('late_events')} events dropped as too late by the streaming correlator; scenarios only "
                  f"an operator symptom describes are not sent ({k.get('kafka_skipped') or {}})." if k else "")
    return "\n".join([
        f"Made by (firstfault {meta.get('firstfault', 'unknown')}):", "", "```sh", f".venv/bin/{cmd}", "```", "",
        f"{meta['scenarios']} simulated scenarios (seed {meta['seed']}), kinds round-robin, hosts' clocks skewed by up "
        "to ±2 s, kernel stamp styles mixed per host (raw dmesg, dmesg -T, syslog, ISO), Kafka deliveries delayed, "
        "reordered and ~3 % duplicated (`benchmarks/simulate.py`; scoring rules in `benchmarks/accuracy.py`)."
        + kafka_note, "",
        table(paths), "",
        "`initiator acc.`: fault scenarios whose serious incident names the injected initiator; `ds precision/recall`: "
        "downstream reporters of that incident; `serious on benign`: benign scenarios with an incident of severity "
        "warning or above; `extra serious`: serious incidents per fault scenario that name something else.", ""])


if __name__ == "__main__":
    raise SystemExit(main())
