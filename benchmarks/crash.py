"""Crash benchmark: ``kill -9`` the ingest process again and again during a replay; count what is lost.

``python -m benchmarks.crash [--lines N] [--kills K] [--json]``

On the real local broker (``ingest.broker``, 127.0.0.1; or ``--bootstrap``):

1. ``--lines`` lines of the :mod:`benchmarks.generate` fleet mix (kernel noise,
   NCCL INFO, training output, DCGM samples, ~1 % fault lines of every
   signature family, storms of repeated lines) are produced once to three raw
   topics, as shippers send them (``--shape batch``: 256 lines per message,
   keyed by host; or ``line``/``ndjson``);
2. **clean run**: one ``firstfault ingest --once`` process reads them into a
   fresh lake and publishes the events to its own events topic;
3. **crash run**: the same topics, a new consumer group, a new lake. A
   ``firstfault ingest`` process is started and, at a random moment, killed
   with ``SIGKILL``; then another, and so on, ``--kills`` times. The kill
   moments are random: each life is killed once it has committed a batch and
   the group's committed progress has passed a random share of the input
   (drawn once and sorted, so the kills spread over the whole replay), after a
   further random delay (so they land anywhere in a batch: decoding, writing
   the lake, publishing, committing). A last process runs until caught up.
4. The two runs are compared, by ``event_id``:

   * ``expected_events``: events of the clean run (the ``events`` view);
   * ``stored_events``: events of the crash run;
   * ``lost``: expected and not stored; ``unexpected``: stored, not expected;
   * ``duplicated``: events stored more than once in effect — more than one
     row for an id in the ``events`` view, or Parquet copies of one id that
     disagree (so a reader could see two versions);
   * ``mismatched``: events stored with other content than in the clean run;
   * ``raw_copies``: extra identical Parquet rows a replay wrote under another
     part name; the views keep one per id;
   * ``published_lost`` / ``published_conflicting``: expected events missing
     from the crash run's events topic, or published twice with different
     content (the correlators keep one copy per id, so identical copies are
     harmless);
   * ``incidents_equal``: the incidents of each lake (events, link samples,
     topology) by the batch correlator, compared whole. The streaming
     correlator is not used here: its output depends on arrival order, so two
     runs *without* kills can already differ (README, Reliability).

Prints a summary; ``--json`` one JSON object with ``lines``, ``kills``,
``expected_events``, ``stored_events``, ``lost``, ``duplicated`` and the rest.
Exit status 1 when anything was lost, duplicated, mismatched or the incidents
differ.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.generate import SOURCES, generate
from benchmarks.ingest import _drop_topics, log, machine, messages, produce
from schemas.events import EVENTS_SCHEMA

FIRSTFAULT = str(Path(sys.executable).with_name("firstfault"))
ROOT = Path(__file__).resolve().parents[1]
_ORIGIN = EVENTS_SCHEMA.names.index("origin")  # an events row's origin (topic/partition/offset), for examples


def worker_env(bootstrap: str, prefix: str, run: str, work: Path, *, max_records: int,
               session_timeout_ms: int = 6000) -> dict[str, str]:
    """Environment of one run's ``firstfault`` processes: its own group, lake, events and DLQ topics."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("FIRSTFAULT_")}
    env.update(FIRSTFAULT_KAFKA_BOOTSTRAP=bootstrap, FIRSTFAULT_LAKE=str(work / f"lake-{run}"),
               FIRSTFAULT_TOPICS=",".join(f"{prefix}.{s}" for s in SOURCES),
               FIRSTFAULT_EVENTS_TOPIC=f"{prefix}.{run}.events", FIRSTFAULT_DLQ_TOPIC=f"{prefix}.{run}.dlq",
               FIRSTFAULT_GROUP_ID=f"{prefix}.{run}.ingest", FIRSTFAULT_CORRELATE_GROUP_ID=f"{prefix}.{run}.correlate",
               FIRSTFAULT_SESSION_TIMEOUT_MS=str(session_timeout_ms), FIRSTFAULT_BATCH_MAX_RECORDS=str(max_records),
               FIRSTFAULT_BATCH_LINGER_MS="50", FIRSTFAULT_STATE_DIR=str(work / f"state-{run}"),
               FIRSTFAULT_LOG_LEVEL="INFO")
    return env


def spawn(role: str, env: dict[str, str], log_file: Path, *args: str) -> subprocess.Popen:
    """``firstfault ROLE ARGS`` in its own session (so ``killpg`` reaches all of it), stderr to ``log_file``."""
    with open(log_file, "ab") as err:
        return subprocess.Popen([FIRSTFAULT, role, *args], env=env, cwd=str(env["FIRSTFAULT_STATE_DIR"]),
                                stdout=subprocess.DEVNULL, stderr=err, stdin=subprocess.DEVNULL,
                                start_new_session=True)


def stop(p: subprocess.Popen, sig: int = signal.SIGTERM, timeout: float = 30) -> int:
    """Signal a process group and reap it (SIGKILL after ``timeout``); its exit status."""
    return stop_all([p], sig, timeout)[0]


def stop_all(procs: list[subprocess.Popen], sig: int = signal.SIGTERM, timeout: float = 30) -> list[int]:
    """Signal every process group at once, then reap each (SIGKILL to one still running ``timeout`` s
    later); their exit statuses, in order."""
    for p in procs:
        if p.poll() is None:
            try:
                os.killpg(p.pid, sig)
            except ProcessLookupError:
                pass
    out = []
    for p in procs:
        try:
            out.append(p.wait(timeout))
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            out.append(p.wait(10))
    return out


class GroupWatch:
    """Watches one consumer group (async context manager, one long-lived admin client and consumer): its
    state and members, and its committed offsets against the topics' end offsets."""

    def __init__(self, bootstrap: str, group: str, topics: list[str], partitions: int) -> None:
        from aiokafka.structs import TopicPartition

        self.bootstrap, self.group, self.topics = bootstrap, group, topics
        self.tps = [TopicPartition(t, p) for t in topics for p in range(partitions)]

    async def __aenter__(self) -> "GroupWatch":
        from aiokafka import AIOKafkaConsumer
        from aiokafka.admin import AIOKafkaAdminClient

        self.admin = AIOKafkaAdminClient(bootstrap_servers=self.bootstrap, request_timeout_ms=10000)
        await self.admin.start()
        self.consumer = AIOKafkaConsumer(bootstrap_servers=self.bootstrap)
        await self.consumer.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.consumer.stop()
        await self.admin.close()

    async def state(self) -> tuple[str, int]:
        """(group state, members); ("", 0) while the coordinator is not there yet."""
        from aiokafka.errors import KafkaError

        try:
            resp = (await self.admin.describe_consumer_groups([self.group]))[0]
        except KafkaError:
            return "", 0
        _err, _gid, state, _ptype, _proto, members = resp.groups[0][:6]
        return state, len(members)

    async def progress(self) -> tuple[int, int]:
        """(records committed by the group, records in the topics) over all partitions."""
        from aiokafka.errors import KafkaError

        ends = await self.consumer.end_offsets(self.tps)
        try:
            committed = await self.admin.list_consumer_group_offsets(self.group)
        except KafkaError:
            committed = {}
        done = sum(m.offset for tp, m in committed.items() if tp.topic in self.topics and m.offset >= 0)
        return done, sum(ends.values())


class Progress:
    """:class:`GroupWatch` for synchronous callers, on an event loop of its own: ``progress()`` is
    (committed, end) records, ``members()`` the group's members once it is Stable, else 0."""

    def __init__(self, bootstrap: str, group: str, topics: list[str], partitions: int) -> None:
        self.loop = asyncio.new_event_loop()
        self.watch = GroupWatch(bootstrap, group, topics, partitions)
        self.loop.run_until_complete(self.watch.__aenter__())

    def __call__(self) -> tuple[int, int]:
        return self.loop.run_until_complete(self.watch.progress())

    def state(self) -> tuple[str, int]:
        """(group state, members)."""
        return self.loop.run_until_complete(self.watch.state())

    def members(self) -> int:
        state, n = self.state()
        return n if state == "Stable" else 0

    def close(self) -> None:
        self.loop.run_until_complete(self.watch.__aexit__())
        self.loop.close()


def ingest_clean(env: dict[str, str], work: Path, timeout: float) -> float:
    """One ``firstfault ingest --once`` to the end; its wall time, seconds."""
    t0 = time.perf_counter()
    p = spawn("ingest", env, work / "clean-ingest.log", "--once")
    try:
        rc = p.wait(timeout)
    except subprocess.TimeoutExpired:
        stop(p, signal.SIGKILL)
        raise RuntimeError(f"the clean ingest did not finish in {timeout} s") from None
    if rc != 0:
        raise RuntimeError(f"the clean ingest failed ({rc}): {(work / 'clean-ingest.log').read_text()[-3000:]}")
    return time.perf_counter() - t0


def ingest_with_kills(env: dict[str, str], work: Path, bootstrap: str, topics: list[str], partitions: int,
                      kills: int, rng: random.Random, jitter_s: float, timeout: float) -> dict:
    """Start, and SIGKILL at a random moment, ``kills`` ingest processes; a last one finishes the input.

    Returns the kill log: per kill the committed share of the input at the kill and the delay after it."""
    group = env["FIRSTFAULT_GROUP_ID"]
    prog = Progress(bootstrap, group, topics, partitions)
    moments = []
    deadline = time.monotonic() + timeout
    try:
        _, total = prog()
        targets = sorted(rng.uniform(0.0, 0.9) for _ in range(kills))
        life = 0
        while len(moments) < kills:
            life += 1
            before, _ = prog()
            p = spawn("ingest", env, work / "crash-ingest.log")
            try:
                # wait until this life has committed a batch and the group is past its target share
                while True:
                    if p.poll() is not None:
                        raise RuntimeError(f"ingest exited ({p.returncode}) before being killed: "
                                           f"{(work / 'crash-ingest.log').read_text()[-3000:]}")
                    if time.monotonic() > deadline:
                        raise RuntimeError(f"the crash run did not finish in {timeout} s")
                    done, _ = prog()
                    if done > before and done >= targets[len(moments)] * total:
                        break
                    if done >= total:
                        break
                    time.sleep(0.02)
                delay = rng.uniform(0.0, jitter_s)
                time.sleep(delay)
                at, _ = prog()
                if at >= total:  # it finished before the kill: not a kill during the replay
                    stop(p)
                    raise RuntimeError("the input ran out before every kill; use more --lines or fewer --kills")
                os.killpg(p.pid, signal.SIGKILL)
                p.wait(10)
                moments.append({"life": life, "target_share": round(targets[len(moments)], 4),
                                "committed_share_at_kill": round(at / total, 4), "delay_s": round(delay, 3)})
            finally:
                if p.poll() is None:
                    stop(p, signal.SIGKILL)
        t0 = time.perf_counter()
        p = spawn("ingest", env, work / "crash-ingest.log", "--once")
        try:
            rc = p.wait(max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            stop(p, signal.SIGKILL)
            raise RuntimeError("the last ingest process did not catch up") from None
        if rc != 0:
            raise RuntimeError(f"the last ingest failed ({rc})")
        done, total = prog()
        if done != total:
            raise RuntimeError(f"the group committed {done} of {total} records")
        return {"moments": moments, "last_life_s": round(time.perf_counter() - t0, 1), "records": total}
    finally:
        prog.close()


# --- comparing two lakes --------------------------------------------------------------------------

def raw_events(lake: Path):
    """Every events row in the lake's Parquet parts (replayed copies included), as an Arrow table."""
    import pyarrow as pa

    from ingest.lake import read_part

    files = [f for f in (lake / "events").rglob("*.parquet") if not f.name.startswith("_")]
    if not files:
        return EVENTS_SCHEMA.empty_table()
    return pa.concat_tables([read_part(f, "events") for f in files])  # kind from its folder


def lake_view(lake: Path, now_us: int) -> tuple[dict[str, tuple], int, list[dict]]:
    """(event_id -> row of the ``events`` view, rows in the view, incidents of the lake's events, link
    samples and topology facts by the batch correlator at ``now_us``)."""
    from api.store import connect
    from correlate.correlator import correlate, correlation_settings
    from ingest.lake import Lake
    from schemas.events import EVENTS_SCHEMA
    from schemas.samples import LINK_SAMPLES_SCHEMA, TOPOLOGY_SCHEMA
    from schemas.settings import Settings

    con = connect(Lake(lake))
    try:
        tables = []
        for view, schema in (("events", EVENTS_SCHEMA), ("link_samples", LINK_SAMPLES_SCHEMA),
                             ("topology", TOPOLOGY_SCHEMA)):
            cols = ", ".join(f'"{n}"' for n in schema.names)
            t = con.sql(f"SELECT {cols} FROM {view} ORDER BY origin").to_arrow_table()
            tables.append(t.cast(schema))
    finally:
        con.close()
    events, samples, topology = tables
    rows = list(zip(*(events.column(n).to_pylist() for n in events.column_names)))
    incidents = correlate(events, samples, topology, settings=correlation_settings(Settings()), now_us=now_us)
    return {r[0]: r for r in rows}, len(rows), incidents


def read_topic(bootstrap: str, topic: str, partitions: int) -> list:
    """Every record of a topic, read back from the beginning (no consumer group), partition by partition."""
    async def go() -> list:
        from aiokafka import AIOKafkaConsumer
        from aiokafka.structs import TopicPartition

        c = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False,
                             max_partition_fetch_bytes=16 * 1024 * 1024)
        await c.start()
        out: list = []
        try:
            tps = [TopicPartition(topic, p) for p in range(partitions)]
            c.assign(tps)
            await c.seek_to_beginning(*tps)
            ends = await c.end_offsets(tps)
            while [tp for tp in tps if await c.position(tp) < ends[tp]]:
                for rs in (await c.getmany(timeout_ms=1000)).values():
                    out.extend(rs)
        finally:
            await c.stop()
        return out

    return asyncio.run(go())


def published(bootstrap: str, topic: str, partitions: int) -> dict[str, set]:
    """event_id -> the distinct rows published for it to an events topic (every copy read back; its link-sample and
    topology records, named by their header, are no events)."""
    from ingest.publish import decode, table_of

    out: dict[str, set] = {}
    for r in read_topic(bootstrap, topic, partitions):
        if table_of(r.headers) is not None:
            continue
        t = decode(r.value)
        for row in zip(*(t.column(n).to_pylist() for n in t.column_names)):
            out.setdefault(row[0], set()).add(row)
    return out


def _differences(a: dict[str, tuple], b: dict[str, tuple], ids: set[str]) -> list[dict]:
    """For events stored in both with different content: their origin and the columns that differ."""
    names = EVENTS_SCHEMA.names
    out = []
    for i in sorted(ids):
        if a[i] != b[i]:
            out.append({"origin": a[i][_ORIGIN], "columns": {n: [str(x)[:80], str(y)[:80]]
                                                              for n, x, y in zip(names, a[i], b[i]) if x != y}})
    return out


def compare(clean_lake: Path, crash_lake: Path, crash_published: dict[str, set] | None = None) -> dict:
    """The figures of module doc step 4."""
    now_us = time.time_ns() // 1000
    clean, clean_rows, clean_inc = lake_view(clean_lake, now_us)
    crash, crash_rows, crash_inc = lake_view(crash_lake, now_us)
    raw = raw_events(crash_lake)
    copies: dict[str, set] = {}
    for row in zip(*(raw.column(n).to_pylist() for n in raw.column_names)):
        copies.setdefault(row[0], set()).add(row)
    conflicting = sum(1 for v in copies.values() if len(v) > 1)
    clean_raw = raw_events(clean_lake).num_rows
    count_i = list(raw.schema.names).index("count")
    expected, stored = set(clean), set(crash)

    pub = {}
    if crash_published is not None:
        pub = {"published_lost": len(expected - set(crash_published)),
               "published_conflicting": sum(1 for v in crash_published.values() if len(v) > 1)}
    return pub | {
        "expected_events": len(expected), "stored_events": len(stored),
        "lost": len(expected - stored), "unexpected": len(stored - expected),
        "duplicated": (crash_rows - len(stored)) + conflicting,
        "mismatched": sum(1 for i in expected & stored if clean[i] != crash[i]),
        "mismatch_examples": _differences(clean, crash, expected & stored)[:5],
        "unexpected_examples": [crash[i][_ORIGIN] for i in sorted(stored - expected)][:5],
        "lost_examples": [clean[i][_ORIGIN] for i in sorted(expected - stored)][:5],
        "raw_rows": raw.num_rows, "raw_copies": raw.num_rows - len(copies), "conflicting_copies": conflicting,
        "clean_raw_copies": clean_raw - clean_rows,
        "lines_in_events_clean": sum(r[count_i] or 1 for r in clean.values()),
        "lines_in_events_crash": sum(r[count_i] or 1 for r in crash.values()),
        "incidents_clean": len(clean_inc), "incidents_crash": len(crash_inc),
        "incidents_equal": clean_inc == crash_inc,
        "incidents_missing": sorted({i["id"] for i in clean_inc} - {i["id"] for i in crash_inc}),
        "incidents_extra": sorted({i["id"] for i in crash_inc} - {i["id"] for i in clean_inc}),
    }


def _dlq_count(bootstrap: str, topic: str, partitions: int) -> int:
    return len(read_topic(bootstrap, topic, partitions))


# --- the run ----------------------------------------------------------------------------------------

def run(a: argparse.Namespace) -> dict:
    """The whole benchmark (module doc); returns the figures."""
    from ingest import broker
    from ingest.broker import ensure_topics

    t_start = time.perf_counter()
    out: dict = {"command": "python -m benchmarks.crash " + " ".join(getattr(a, "argv", sys.argv[1:])),
                 "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"), "machine": machine()}
    work = Path(tempfile.mkdtemp(prefix="ffcrash-", dir=getattr(a, "workdir", None)))
    started = False
    bootstrap = a.bootstrap
    prefix = f"ffcrash.{os.getpid()}.{time.time_ns() % 10**9}"
    topics = [f"{prefix}.{s}" for s in SOURCES]
    extra = [f"{prefix}.{r}.{t}" for r in ("clean", "crash") for t in ("events", "dlq")]
    try:
        # two hours old: every incident is resolved by the time either run correlates (status compares equal)
        t0 = dt.datetime.now(dt.timezone.utc).replace(second=0, microsecond=0) - dt.timedelta(hours=2)
        corpus = generate(a.lines, seed=a.seed, t0=t0)
        msgs = messages(corpus, a.shape, prefix)
        out.update(lines=len(corpus.lines), bytes=corpus.bytes, fault_lines=corpus.fault_lines,
                   records=len(msgs), shape=a.shape, max_records=a.max_records, partitions=a.partitions)
        log(f"input: {len(corpus.lines):,} lines, {len(msgs):,} messages ({a.shape})")
        if not bootstrap:
            log("starting the local Kafka broker …")
            st = broker.start(work / "broker", log=log)
            started = True
            bootstrap = st.bootstrap
        asyncio.run(ensure_topics(bootstrap, topics, partitions=a.partitions))
        asyncio.run(ensure_topics(bootstrap, extra, partitions=a.events_partitions))
        asyncio.run(produce(bootstrap, msgs))
        del msgs, corpus
        envs = {}
        for r in ("clean", "crash"):
            envs[r] = worker_env(bootstrap, prefix, r, work, max_records=a.max_records)
            Path(envs[r]["FIRSTFAULT_STATE_DIR"]).mkdir(parents=True)
        log("clean run: one ingest process …")
        out["clean_ingest_s"] = round(ingest_clean(envs["clean"], work, a.timeout), 1)
        log(f"crash run: {a.kills} kills …")
        t1 = time.perf_counter()
        kl = ingest_with_kills(envs["crash"], work, bootstrap, topics, a.partitions, a.kills, random.Random(a.seed),
                               a.jitter, a.timeout)
        out["crash_ingest_s"] = round(time.perf_counter() - t1, 1)
        out["kills"] = len(kl["moments"])
        out["kill_moments"] = kl["moments"]
        logs = (work / "crash-ingest.log").read_text(errors="replace")
        out["replayed_batches"] = len(set(re.findall(r"replaying batch (\w+)", logs)))
        out.update(compare(work / "lake-clean", work / "lake-crash",
                           published(bootstrap, f"{prefix}.crash.events", a.events_partitions)))
        out["dlq_records_clean"] = _dlq_count(bootstrap, f"{prefix}.clean.dlq", a.events_partitions)
        out["dlq_records_crash"] = _dlq_count(bootstrap, f"{prefix}.crash.dlq", a.events_partitions)
        out["duration_s"] = round(time.perf_counter() - t_start, 1)
        out["ok"] = (out["lost"] == 0 and out["duplicated"] == 0 and out["mismatched"] == 0
                     and out["unexpected"] == 0 and out["incidents_equal"] and out["expected_events"] > 0
                     and out["published_lost"] == 0 and out["published_conflicting"] == 0)
        return out
    finally:
        if bootstrap and not getattr(a, "keep_topics", False):
            try:
                asyncio.run(_drop_topics(bootstrap, topics + extra))
            except Exception as e:  # noqa: BLE001 — cleanup only
                log(f"could not drop the topics: {e}")
        if started:
            broker.stop(work / "broker")
        if not getattr(a, "keep", False):
            shutil.rmtree(work, ignore_errors=True)


def summary(out: dict) -> str:
    lines = [
        f"{out['lines']:,} lines in {out['records']:,} Kafka records ({out['shape']}), {out['partitions']} partitions "
        f"per topic, {out['max_records']} records per batch; {out['machine']['cpu']}, {out['machine']['cores']} cores",
        f"kills (SIGKILL of `firstfault ingest`): {out['kills']}, batches rebuilt from commit metadata: "
        f"{out['replayed_batches']}",
        f"expected events {out['expected_events']:,}, stored {out['stored_events']:,}: lost {out['lost']}, "
        f"duplicated {out['duplicated']}, unexpected {out['unexpected']}, mismatched {out['mismatched']}",
        f"lines counted in events: clean {out['lines_in_events_clean']:,}, crash {out['lines_in_events_crash']:,}; "
        f"Parquet rows {out['raw_rows']:,} ({out['raw_copies']} identical replay copies, "
        f"{out['conflicting_copies']} conflicting)",
        f"incidents (batch correlator over each lake): clean {out['incidents_clean']}, crash "
        f"{out['incidents_crash']}, equal: {out['incidents_equal']}",
        f"published to the events topic: {out['published_lost']} expected events missing, "
        f"{out['published_conflicting']} with conflicting copies",
        f"dead-letter records: clean {out['dlq_records_clean']}, crash {out['dlq_records_crash']}",
        f"time: clean ingest {out['clean_ingest_s']} s, crash ingest {out['crash_ingest_s']} s, "
        f"whole run {out['duration_s']} s",
        "OK: nothing lost, nothing duplicated" if out["ok"] else "FAILED",
    ]
    return "\n".join(lines)


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.crash", description=__doc__.split("\n\n")[0])
    ap.add_argument("--lines", type=int, default=1_000_000, help="input lines (default 1,000,000)")
    ap.add_argument("--kills", type=int, default=20, help="SIGKILLs of the ingest process (default 20)")
    ap.add_argument("--shape", choices=("batch", "line", "ndjson"), default="batch",
                    help="message shape (benchmarks.ingest.messages): 256 lines per message, one, or 256 NDJSON records")
    ap.add_argument("--max-records", type=int, default=16,
                    help="records per ingest batch (default 16: 4,096 lines in the batch shape, so a run has "
                         "hundreds of batches to be killed in)")
    ap.add_argument("--partitions", type=int, default=3, help="partitions per raw topic (three topics)")
    ap.add_argument("--events-partitions", type=int, default=1,
                    help="partitions of each run's events and dead-letter topics (default 1; see module doc)")
    ap.add_argument("--jitter", type=float, default=0.4, help="random delay before each kill, up to this (s)")
    ap.add_argument("--bootstrap", help="use this Kafka broker instead of starting the local one")
    ap.add_argument("--timeout", type=float, default=1800, help="seconds each phase may take")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--json", action="store_true", help="print one JSON object instead of the summary")
    ap.add_argument("--keep", action="store_true", help="keep the scratch folder (lakes, logs)")
    return ap


def main(argv: list[str] | None = None) -> int:
    a = parser().parse_args(argv)
    a.argv = argv if argv is not None else sys.argv[1:]
    import logging

    logging.getLogger("aiokafka").setLevel(logging.CRITICAL)
    out = run(a)
    print(json.dumps(out) if a.json else summary(out))
    return 0 if out["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
