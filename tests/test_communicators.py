"""Communicator lifetimes (``correlate.topology.comm_spans``): a job restarted from its checkpoint, or the
scheduler's next job, inits new communicators on the same GPUs from another process; the old communicators
stop counting for the hosts' later events, in the batch correlator and in the streaming one.

Lines are real formats: NCCL 2.19+ ``Init COMPLETE`` with its commId as a journald/rsyslog export prints it
(``<ISO time> <host> python[<pid>]: <host>:<pid>:<tid> [<dev>] NCCL INFO …``), the kernel's Xid 79 and
PyTorch's watchdog timeout (shared/reference/formats.md)."""

from __future__ import annotations

import itertools
from collections import deque
from datetime import datetime, timedelta, timezone

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from correlate.correlator import correlate
from correlate.incident import member_ids
from correlate.model import Ev
from correlate.stream import StreamCorrelator
from correlate.topology import HANDOVER_MARGIN_US, build_topology, comm_spans, rank_membership
from ingest.decode import Decoded, Segment
from tests.conftest import CORPUS

S = 1_000_000
T0 = datetime(2026, 11, 29, 3, 0, 0, tzinfo=timezone.utc)
BUS = ["18000", "2a000", "3b000"]
OFFSETS = itertools.count()  # one partition's offsets, across the calls of a test


def init(t: datetime, host: str, pid: int, rank: int, nranks: int, comm: str, gpu: int = 0) -> str:
    return (f"{t:%Y-%m-%dT%H:%M:%S.%f}+00:00 {host} python[{pid}]: {host}:{pid}:{pid} [{gpu}] NCCL INFO comm "
            f"0x55{pid:x}{rank:02d}f0 rank {rank} nranks {nranks} cudaDev {gpu} nvmlDev {gpu} busId {BUS[gpu]} "
            f"commId {comm} - Init COMPLETE")


def timeout(t: datetime, rank: int, seq: int = 77) -> str:
    """A watchdog timeout printed at ``t``, for a collective that began 600.03 s before."""
    return (f"[rank{rank}]:[E{t.month}{t.day:02d} {t:%H:%M:%S}.{t.microsecond:06d}000 ProcessGroupNCCL.cpp:616] "
            f"[Rank {rank}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum={seq}, OpType=ALLREDUCE, "
            f"NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600030 milliseconds before timing out.")


def fallen(t: datetime) -> str:
    return f"{t:%Y-%m-%dT%H:%M:%S.%f}+00:00 kernel: NVRM: Xid (PCI:0000:18:00): 79, pid=0, GPU has fallen off the bus."


def events(pipeline, logs: dict[str, list[str]], at: datetime):
    """Each host's lines as one Kafka message each (key = host, append time ``at``), through the pipeline."""
    ref = int(at.timestamp() * S)
    segs = [Segment(data=line.encode(), origin=f"kafka:fleet.nccl/0/{next(OFFSETS)}:0", stream=f"fleet.nccl/0/{host}",
                    host=host, ref_ts=ref, ref_basis="kafka", ingest_ts=ref)
            for host, lines in logs.items() for line in lines]
    return pipeline.run(Decoded(segments=segs))


def ev(eid: str, host: str, ts: int, *, pid: int | None, comm: str, rank: int = 0, basis: str = "line",
       device: str = "0000:18:00.0") -> Ev:
    return Ev(event_id=eid, ts=ts, ts_basis=basis, host=host, source="nccl", kind="nccl_init", signature="nccl.init",
              severity="info", device_type="gpu", device=device, link=None, xid=None, sxid=None, peer=None,
              rank=rank, nranks=8, comm=comm, message="m", pid=pid)


def test_another_process_taking_a_gpu_ends_its_communicators_there_and_a_split_does_not():
    h = 3600 * S
    evs = [ev("a0", "n1", 0, pid=100, comm="A"), ev("a1", "n1", 60 * S, pid=100, comm="A-dp"),  # one process
           ev("b0", "n1", 2 * h, pid=200, comm="B"),  # the restart: another process on the same GPU
           ev("c0", "n1", 3 * h, pid=300, comm="C", device="0000:2a:00.0"),  # another GPU: says nothing of A
           ev("x0", "n2", 0, pid=100, comm="A"), ev("x1", "n2", 2 * h, pid=None, comm="B"),  # no pid: no bound
           ev("y0", "n3", 0, pid=100, comm="A", basis="file"), ev("y1", "n3", 2 * h, pid=200, comm="B", basis="file")]
    assert comm_spans((e.comm, e) for e in evs) == {
        ("A", "n1"): (None, 2 * h), ("A-dp", "n1"): (None, 2 * h), ("B", "n1"): (2 * h, None)}
    assert all(rank_membership(e) for e in evs)

    topo = build_topology(evs, None, None)
    fault = Ev(event_id="f", ts=0, ts_basis="line", host="n1", source="dmesg", kind="xid", signature="xid",
               severity="critical", device_type="gpu", device="0000:18:00.0", link=None, xid=79, sxid=None,
               peer=None, rank=None, nranks=None, comm=None, message="m")
    for at, live in [(h, {"A", "A-dp"}), (2 * h - HANDOVER_MARGIN_US, {"A", "A-dp", "B"}), (3 * h, {"B"})]:
        fault.ts = at
        fault.__post_init__()
        assert {c for c in ("A", "A-dp", "B") if topo.comm_live(c, "n1", fault)} == live, at
    fault.ts_basis = "file"  # timed only by its file: no order to judge by
    assert all(topo.comm_live(c, "n1", fault) for c in ("A", "A-dp", "B"))


def _spans_pairwise(members: list[tuple[str, Ev]]) -> dict:
    """``comm_spans`` by its definition, pair by pair: the reference its sorted form is checked against."""
    lines: dict[tuple[str, str], dict[str, list[int]]] = {}  # (host, GPU) -> comm -> [first, last, pid]
    for comm, e in members:
        if e.pid is None or e.ts_basis in ("file", "operator"):
            continue
        seen = lines.setdefault((e.host, e.device), {}).setdefault(comm, [e.ts, e.ts, e.pid])
        seen[0], seen[1] = min(seen[0], e.ts), max(seen[1], e.ts)
    since: dict = {}
    until: dict = {}
    for (host, _dev), comms in lines.items():
        for old, (_f, last, pid) in comms.items():
            for new, (first, _l, p) in comms.items():
                if p != pid and first > last:
                    until[(old, host)] = min(until.get((old, host), first), first)
                    since[(new, host)] = min(since.get((new, host), first), first)
    return {k: (since.get(k), until.get(k)) for k in since.keys() | until.keys()}


@given(st.lists(st.tuples(st.sampled_from(["n1", "n2"]), st.sampled_from(["0000:18:00.0", "0000:2a:00.0"]),
                          st.sampled_from(["A", "B", "C", "D", "E"]), st.sampled_from([100, 200, 300, None]),
                          st.integers(0, 12), st.sampled_from(["line", "line", "kafka", "file"])), max_size=30))
@settings(max_examples=300, deadline=None)
def test_comm_spans_equal_their_pairwise_definition(rows):
    members = [(comm, ev(f"e{i}", host, ts * S, pid=pid, comm=comm, basis=basis, device=dev))
               for i, (host, dev, comm, pid, ts, basis) in enumerate(rows)]
    assert comm_spans(members) == _spans_pairwise(members)


@pytest.mark.parametrize("began_after_s, kafka_lag_s", [(30, None), (3600, None), (20, 30)])
def test_a_restarted_job_is_matched_against_its_own_membership_not_its_previous_runs(pipeline, began_after_s,
                                                                                      kafka_lag_s):
    """The job ran on n1..n4 (one GPU each), then was restarted with n4 swapped for n5. In the restart, rank 3
    (n5) goes silent: ranks 0 – 2 on n1 – n3 time out. Both runs' communicators map ranks 0 – 2 to the same
    hosts, but only the restart's held the GPUs then: the silent rank is on n5, not on the swapped-out n4 —
    also when the collective began 30 s after the restart, inside the handover margin where both count, and
    when the restart's init lines print no time and Kafka appended them 30 s late, after the collective began."""
    import pyarrow as pa

    restart = T0 + timedelta(hours=2)
    logs: dict[str, list[str]] = {f"n{r + 1}": [init(T0, f"n{r + 1}", 100 + r, r, 4, "0xaaaa000000000001")]
                                  for r in range(4)}
    again: dict[str, list[str]] = {}
    for r, host in enumerate(["n1", "n2", "n3", "n5"]):
        line = init(restart, host, 200 + r, r, 4, "0xbbbb000000000002")
        if kafka_lag_s is None:
            logs.setdefault(host, []).append(line)
        else:  # NCCL's own format, no time: timed by the Kafka append
            again[host] = [line.split(": ", 1)[1]]
    hang = restart + timedelta(seconds=began_after_s + 600)  # printed 600.03 s after the collective began
    for r in range(3):
        logs[f"n{r + 1}"].append(timeout(hang + timedelta(milliseconds=30 + r), r))
    tables = [events(pipeline, logs, hang + timedelta(minutes=1)).events]
    if again:
        tables.append(events(pipeline, again, restart + timedelta(seconds=kafka_lag_s)).events)
    (inc,) = correlate(pa.concat_tables(tables), now_us=int(hang.timestamp() * S))
    assert inc["pattern"] == "comm.silent_rank"
    assert (inc["initiator"]["host"], inc["initiator"]["rank"]) == ("n5", 3)


def test_faults_of_two_jobs_do_not_join_through_a_communicator_that_ended(pipeline):
    """Yesterday one job spanned n1..n4; today job Y runs on n1, n2 and job Z on n3, n4. n1's GPU falls off
    the bus and, at the same time, Z's ranks time out: two incidents, not Z's timeouts downstream of n1's
    Xid through yesterday's communicator."""
    logs: dict[str, list[str]] = {f"n{r + 1}": [init(T0, f"n{r + 1}", 100 + r, r, 4, "0xaaaa000000000001")]
                                  for r in range(4)}
    today = T0 + timedelta(days=1)
    for r, host in enumerate(["n1", "n2"]):
        logs[host].append(init(today, host, 200 + r, r, 2, "0xbbbb000000000002"))
    for r, host in enumerate(["n3", "n4"]):
        logs[host].append(init(today, host, 300 + r, r, 2, "0xcccc000000000003"))
    fault = today + timedelta(hours=3)
    logs["n1"].append(fallen(fault))
    for r, host in enumerate(["n3", "n4"]):  # began 30 s after the Xid: inside the 120 s same_comm window
        logs[host].append(timeout(fault + timedelta(seconds=600, milliseconds=30_030 + r), r, seq=9))
    b = events(pipeline, logs, fault + timedelta(minutes=11))
    incidents = correlate(b.events, b.link_samples, b.topology, now_us=int(fault.timestamp() * S))
    by_host = {i["initiator"]["host"]: i for i in incidents}
    xid = by_host["n1"]
    assert xid["initiator"]["xid"] == 79 and xid["downstream"] == []
    hosts = {d["host"] for i in incidents if i is not xid for d in i["downstream"]} | {
        i["initiator"]["host"] for i in incidents if i is not xid}
    assert hosts & {"n3", "n4"} and len(incidents) == 2


@pytest.mark.parametrize("inits", ["world_and_split", "none", "two_jobs_alike"])
def test_a_gpu_initiator_takes_the_rank_the_live_communicators_put_on_its_gpu(pipeline, inits):
    """DESIGN.md's incident shape gives a GPU party its rank. n1's GPU 0 fell off the bus three hours into
    today's job, whose init lines put rank 5 of 16 on it (and rank 1 of 4 in a split of it: the largest
    communicator, the world, numbers the job's ranks); yesterday's job had rank 9 there. The Xid line names no
    rank, and the initiator's was null. Without an init line it stays null; so it does when two live
    communicators of one size put different ranks on the GPU (which job's rank no line tells)."""
    today = T0 + timedelta(days=1)
    logs: dict[str, list[str]] = {"n1": [], "n2": []}
    if inits != "none":
        logs["n1"].append(init(T0, "n1", 100, 9, 16, "0xaaaa000000000001"))
        logs["n1"].append(init(today, "n1", 200, 5, 16, "0xbbbb000000000002"))
        logs["n2"].append(init(today, "n2", 300, 6, 16, "0xbbbb000000000002"))
    if inits == "world_and_split":
        logs["n1"].append(init(today + timedelta(seconds=2), "n1", 200, 1, 4, "0xcccc000000000003"))
    elif inits == "two_jobs_alike":
        logs["n1"].append(init(today + timedelta(seconds=2), "n1", 200, 3, 16, "0xdddd000000000004"))
    fault = today + timedelta(hours=3)
    logs["n1"].append(fallen(fault))
    b = events(pipeline, logs, fault + timedelta(minutes=1))
    (inc,) = correlate(b.events, b.link_samples, b.topology, now_us=int(fault.timestamp() * S))
    assert (inc["initiator"]["device"], inc["initiator"]["xid"]) == ("0000:18:00.0", 79)
    assert inc["initiator"]["rank"] == {"world_and_split": 5, "none": None, "two_jobs_alike": None}[inits]
    assert ("gpu 0000:18:00.0 (rank 5, as NCCL's init lines placed it) of n1" in inc["explanation"]) == (
        inits == "world_and_split")


@pytest.mark.parametrize("mode", ["batch", "stream"])
def test_a_gpu_a_restarted_job_left_takes_no_rank_of_the_run_before(pipeline, mode):
    """Yesterday's run put rank 5 of 16 on n1's GPU 0000:18:00.0 (and rank 6 on n2's); restarted today from its
    checkpoint, the job holds n1's other GPU (rank 3) and n2's same GPU, where the new process ended yesterday's
    communicator. n1's GPU 0000:18:00.0, idle or another job's, fell off the bus: no rank of today's job is on it,
    and yesterday's communicator died with its rank on n2 (its ranks live and die together), so the initiator has
    no rank, in the batch correlator and in the streaming one (it was "rank 5, as NCCL's init lines placed it")."""
    today = T0 + timedelta(days=1)
    logs = {"n1": [init(T0, "n1", 100, 5, 16, "0xaaaa000000000001"),
                   init(today, "n1", 200, 3, 16, "0xbbbb000000000002", gpu=1)],
            "n2": [init(T0, "n2", 101, 6, 16, "0xaaaa000000000001"),
                   init(today, "n2", 201, 6, 16, "0xbbbb000000000002")]}
    fault = today + timedelta(hours=3)
    logs["n1"].append(fallen(fault))
    b = events(pipeline, logs, fault + timedelta(minutes=1))
    if mode == "batch":
        incidents = correlate(b.events, b.link_samples, b.topology, now_us=int(fault.timestamp() * S))
    else:
        sc = StreamCorrelator()
        sc.add(b.events, b.link_samples, b.topology, now_us=int(fault.timestamp() * S))
        incidents = [i for i in sc.step(now_us=int((fault + timedelta(minutes=30)).timestamp() * S), flush=True)
                     if i["status"] != "superseded"]
    (inc,) = incidents
    assert (inc["initiator"]["device"], inc["initiator"]["xid"]) == ("0000:18:00.0", 79)
    assert inc["initiator"]["rank"] is None and "as NCCL's init lines placed it" not in inc["explanation"]


@pytest.mark.parametrize("mode", ["batch", "stream"])
def test_a_gpu_fault_before_a_job_started_on_the_gpu_takes_no_rank_of_that_job(pipeline, mode):
    """n1's GPU 0000:18:00.0 fell off the bus at 03:00; a job whose init lines put rank 5 of 16 on that GPU started
    at 05:00 (the GPU back after a reset, or the bus id's next occupant). Its communicator held nothing at 03:00, and
    the Xid was "rank 5, as NCCL's init lines placed it"; now no rank. Its init lines a minute after the fault (they
    are often timed by their arrival) still place it."""
    for gap, want in ((timedelta(hours=2), None), (timedelta(seconds=30), 5)):
        fault, later = T0, T0 + gap
        logs = {"n1": [fallen(fault), init(later, "n1", 200, 5, 16, "0xbbbb000000000002")],
                "n2": [init(later, "n2", 300, 6, 16, "0xbbbb000000000002")]}
        b = events(pipeline, logs, later + timedelta(minutes=1))
        now = int((later + timedelta(minutes=30)).timestamp() * S)
        if mode == "batch":
            incidents = correlate(b.events, b.link_samples, b.topology, now_us=now)
        else:
            sc = StreamCorrelator()
            sc.add(b.events, b.link_samples, b.topology, now_us=now)
            incidents = [i for i in sc.step(now_us=now, flush=True) if i["status"] != "superseded"]
        (inc,) = [i for i in incidents if i["initiator"].get("xid") == 79]
        assert inc["initiator"]["rank"] == want, gap


@pytest.mark.parametrize("restarts", [5])
def test_the_stream_keeps_the_membership_of_live_communicators_only(pipeline, restarts):
    """A job restarted every six hours on the same 4 hosts × 2 GPUs: the streaming correlator names the silent
    rank of the last run's hang two hours into it, and keeps the membership lines of the run that holds the
    GPUs (8), not of every run since it started (8 per run). The correlate worker does not commit past the
    record that carried them: a replay after a rebalance starts there, so the ranks are known again."""
    from aiokafka.structs import TopicPartition

    from correlate.consumer import CorrelateWorker, _Partition
    from correlate.correlator import Settings

    import pyarrow as pa

    sc, tables = StreamCorrelator(), []
    offsets: list[tuple[int, list[str]]] = []  # what a correlate worker would hold per events-topic record
    for n in range(restarts):
        start = T0 + timedelta(hours=6 * n)
        logs = {f"n{h + 1}": [init(start, f"n{h + 1}", 1000 * (n + 1) + h, 2 * h + g, 8, f"0x{n + 1:016x}", gpu=g)
                              for g in range(2)] for h in range(4)}
        b = events(pipeline, logs, start)
        offsets.append((n, b.events.column("event_id").to_pylist()))
        tables.append(b.events)
        sc.add(b.events, b.link_samples, b.topology, now_us=int(start.timestamp() * S))
        sc.step(now_us=int(start.timestamp() * S))
    hang = T0 + timedelta(hours=6 * (restarts - 1) + 2)
    ranks = {f"n{h + 1}": [timeout(hang + timedelta(milliseconds=r), r) for r in (2 * h, 2 * h + 1) if r != 7]
             for h in range(4)}  # rank 7, on n4, is silent
    b = events(pipeline, ranks, hang)
    offsets.append((restarts, b.events.column("event_id").to_pylist()))
    sc.add(b.events, b.link_samples, b.topology, now_us=int(hang.timestamp() * S))
    (inc,) = [i for i in sc.step(now_us=int(hang.timestamp() * S), flush=True) if i["status"] != "superseded"]
    assert (inc["pattern"], inc["initiator"]["host"], inc["initiator"]["rank"]) == ("comm.silent_rank", "n4", 7)
    # the run before is forgotten once its last line is older than the lateness and the longest link window
    kept = [e for e in [*sc.wiring.values(), *sc.events.values()] if rank_membership(e)]
    assert len(kept) == 8 and {e.comm for e in kept} == {f"0x{restarts:016x}"}
    assert set(sc.wiring) == {e.event_id for e in kept}  # older than the events kept: topology only

    worker = CorrelateWorker(bootstrap="127.0.0.1:9", topic="fleet.events", group_id="g", dlq_topic="fleet.dlq",
                             settings=Settings(), lateness_us=sc.lateness_us,
                             on_incidents=lambda incidents: None)  # never started
    worker.correlator, tp = sc, TopicPartition("fleet.events", 0)
    worker.parts[tp] = _Partition(held=deque(offsets), last=restarts)
    assert worker.safe_offsets({tp}) == {tp: restarts - 1}  # the last run's record: its lines are in wiring
    # a worker that reads the membership back when it starts over (from the lake: restore_events) commits past
    # it: a finished job whose GPUs stay idle would hold the commit, and the replay after a restart, for days
    lines = pa.concat_tables(tables[-1:])
    worker = CorrelateWorker(bootstrap="127.0.0.1:9", topic="fleet.events", group_id="g", dlq_topic="fleet.dlq",
                             settings=Settings(), lateness_us=sc.lateness_us,
                             on_incidents=lambda incidents: None, restore_events=lambda: lines)
    assert set(worker.correlator.events) == set(lines.column("event_id").to_pylist())  # read back at the start
    worker.correlator, tp = sc, TopicPartition("fleet.events", 0)
    worker.parts[tp] = _Partition(held=deque(offsets), last=restarts)
    assert worker.safe_offsets({tp}) == {tp: restarts}  # the hang's record: its events are kept


def test_a_restart_reads_back_the_membership_of_jobs_that_started_before_the_horizon(pipeline, tmp_path):
    """The service refills its correlator from the lake after a restart (``IncidentSink.recent_events``): the
    events of the last hour and, before them, the newest membership line of each rank of its host's last week —
    a job that started yesterday printed its ``Init COMPLETE`` lines once, and a hang today needs them. A host
    whose clock runs a month ahead moves no other host's week (a break-it pass found the correlate worker's
    read-back empty then)."""
    from api.sink import IncidentSink
    from ingest.lake import Lake
    from schemas.settings import Settings

    now = T0 + timedelta(days=10)
    logs = {"n1": [init(now - timedelta(days=2), "n1", 100, 0, 2, "0xaaaa000000000001"),
                   init(now - timedelta(days=1, hours=12), "n1", 100, 0, 2, "0xaaaa000000000001")],
            "n2": [init(now - timedelta(days=9), "n2", 200, 1, 2, "0xbbbb000000000002"), fallen(now - timedelta(days=1))],
            "n3": [fallen(now)],  # nccl-tests' rank table: its communicator is named by host and pid
            "n4": [f"{now - timedelta(days=3):%Y-%m-%dT%H:%M:%S.%f}+00:00 n4 all_reduce_perf[587622]: #  Rank  0 "
                   "Group  0 Pid 587622 on n4 device  0 [0x21] NVIDIA H100 80GB HBM3"]}
    lake = Lake(tmp_path / "lake")
    lake.init()
    lake.write("events", events(pipeline, logs, now).events, "b1")
    got = IncidentSink(Settings(lake=str(tmp_path / "lake"), state_dir=tmp_path / "state")).recent_events(
        3600 * S, now=now)
    rows = sorted((r["host"], r["kind"], r["ts"]) for r in got.select(["host", "kind", "ts"]).to_pylist())
    assert rows == [("n1", "nccl_init", now - timedelta(days=1, hours=12)), ("n3", "xid", now),
                    ("n4", "nccl_init", now - timedelta(days=3))]
    # what a correlate worker reads back when it starts over: the membership lines alone
    got = IncidentSink(Settings(lake=str(tmp_path / "lake"), state_dir=tmp_path / "state")).membership_events()
    assert sorted((r["host"], r["kind"], r["ts"]) for r in got.select(["host", "kind", "ts"]).to_pylist()) == [
        ("n1", "nccl_init", now - timedelta(days=1, hours=12)), ("n4", "nccl_init", now - timedelta(days=3))]
    assert IncidentSink(Settings(lake=str(tmp_path / "none"), state_dir=tmp_path / "state")).membership_events() is None
    ahead = now + timedelta(days=30)
    # the ingest times a line stamped a month after its arrival by its arrival (ingest.assemble.AHEAD_US): such a
    # row comes from another producer of the events table, or from the lake of an older firstfault
    zz = events(pipeline, {"zz": [init(ahead, "zz", 900, 0, 1, "0xcccc000000000003")]}, now).events
    i = zz.schema.get_field_index("ts")
    zz = zz.set_column(i, zz.schema.field(i), pa.array([ahead] * zz.num_rows, zz.schema.field(i).type))
    lake.write("events", zz, "b2")
    got = IncidentSink(Settings(lake=str(tmp_path / "lake"), state_dir=tmp_path / "state")).membership_events()
    assert sorted((r["host"], r["kind"], r["ts"]) for r in got.select(["host", "kind", "ts"]).to_pylist()) == [
        ("n1", "nccl_init", now - timedelta(days=1, hours=12)), ("n4", "nccl_init", now - timedelta(days=3)),
        ("zz", "nccl_init", ahead)]
    # nor the recent hour of the restart: it ends at the newest stored event but not after the clock (``now``),
    # where the line stamped a month ahead put n3's Xid of the last hour outside it
    got = IncidentSink(Settings(lake=str(tmp_path / "lake"), state_dir=tmp_path / "state")).recent_events(
        3600 * S, now=now)
    assert ("n3", "xid", now) in {(r["host"], r["kind"], r["ts"])
                                  for r in got.select(["host", "kind", "ts"]).to_pylist()}


def test_a_restart_reads_back_the_faults_kept_aside_for_long_timeouts(pipeline, tmp_path):
    """After a restart the service also reads back the older events of its stored incidents within
    ``reach_back_s`` (``IncidentSink.recent_events``): n1's Xid 79 three hours ago, whose incident was emitted,
    goes cold again in the new correlator, and the 4 h watchdog timeouts that come after the restart join it
    as in the batch."""
    import pyarrow as pa

    from api.sink import IncidentSink
    from ingest.lake import Lake
    from schemas.settings import Settings

    comm = "0x00000000000000aa"
    xid = T0 + timedelta(hours=1)
    restart = xid + timedelta(hours=3)
    hang = xid + timedelta(hours=4)
    first = events(pipeline, {f"n{r + 1}": [init(T0, f"n{r + 1}", 100 + r, r, 4, comm)] for r in range(4)}, T0)
    fault = events(pipeline, {"n1": [fallen(xid)]}, xid)
    busy = [events(pipeline, logs, at).events for at, logs in _busy("n1", xid, restart)]
    lake = Lake(tmp_path / "lake")
    lake.init()
    for i, t in enumerate([first.events, fault.events, *busy]):
        lake.write("events", t, f"b{i}")
    stored = correlate(pa.concat_tables([first.events, fault.events, *busy]), now_us=int(restart.timestamp() * S))
    sink = IncidentSink(Settings(lake=str(tmp_path / "lake"), state_dir=tmp_path / "state"))
    xid_id = fault.events.column("event_id")[0].as_py()
    assert xid_id not in sink.recent_events(3600 * S, stored, 0).column("event_id").to_pylist()
    back = sink.recent_events(3600 * S, stored, 24 * 3600 * S)
    assert xid_id in back.column("event_id").to_pylist()
    assert back.num_rows == len(set(back.column("event_id").to_pylist()))

    sc = StreamCorrelator()
    sc.restore(stored, back)
    sc.step(now_us=int(restart.timestamp() * S))
    assert xid_id in sc.cold
    late = events(pipeline, {f"n{r + 1}": [_long_timeout(hang + timedelta(milliseconds=r), r, 4)] for r in (1, 2, 3)},
                  hang)
    sc.add(late.events, now_us=int(hang.timestamp() * S))
    got = [x for x in sc.step(now_us=int((hang + timedelta(hours=1)).timestamp() * S), flush=True)
           if x["status"] != "superseded"]
    want = correlate(pa.concat_tables([first.events, fault.events, *busy, late.events]),
                     now_us=int((hang + timedelta(hours=1)).timestamp() * S))
    (joined,) = [x for x in want if x["initiator"]["host"] == "n1"]
    assert [(x["id"], x["pattern"], x["initiator"]["host"], len(x["downstream"])) for x in got] == [
        (joined["id"], "roots", "n1", 3)]


def _worker_restart(pipeline, read_back: bool):
    """n1's Xid 79 an hour after a 4-rank job's init lines, then n1 logs on; three hours after the Xid a correlate
    worker starts over (``restore(read_back=...)``: its stored incidents and the ranks' membership lines, as
    ``api.sink.IncidentSink.membership_events`` reads them) and replays the last hour
    of its partition, then the other ranks' 4 h watchdog timeouts come. Returns (the correlator, the Xid's id,
    the flushed incidents, the batch's, the events of stored incidents read back)."""
    import pyarrow as pa

    comm = "0x00000000000000ab"
    xid = T0 + timedelta(hours=1)
    restart = xid + timedelta(hours=3)
    hang = xid + timedelta(hours=4)
    first = events(pipeline, {f"n{r + 1}": [init(T0, f"n{r + 1}", 100 + r, r, 4, comm)] for r in range(4)}, T0)
    fault = events(pipeline, {"n1": [fallen(xid)]}, xid)
    busy = [(at, events(pipeline, logs, at).events) for at, logs in _busy("n1", xid, hang)]
    before = [first.events, fault.events, *[t for at, t in busy if at < restart]]
    stored = correlate(pa.concat_tables(before), now_us=int(restart.timestamp() * S))
    lake = pa.concat_tables(before)
    sc = StreamCorrelator()
    sc.restore(stored, first.events, read_back=read_back)  # with the ranks' membership lines (restore_events)
    read = []
    for at, t in busy:  # the replay from the safe offset (the last hour), then n1 logging on
        if at >= restart - timedelta(hours=1):
            sc.add(t, now_us=int(at.timestamp() * S))
            if wanted := sc.to_read_back():
                ids = {m for inc in wanted for m in member_ids(inc)}
                back = lake.filter(pa.array([i in ids for i in lake.column("event_id").to_pylist()]))
                read.extend(back.column("event_id").to_pylist())
                sc.add_cold(back, wanted)
            assert all(x["initiator"]["host"] != "n1" or x["pattern"] != "roots" for x in
                       sc.step(now_us=int(at.timestamp() * S))), "the Xid's incident is not emitted again"
    late = events(pipeline, {f"n{r + 1}": [_long_timeout(hang + timedelta(milliseconds=r), r, 4)] for r in (1, 2, 3)},
                  hang)
    sc.add(late.events, now_us=int(hang.timestamp() * S))
    assert sc.to_read_back() == []  # n2 - n4's incidents: none stored
    end = int((hang + timedelta(hours=1)).timestamp() * S)
    got = [x for x in sc.step(now_us=end, flush=True) if x["status"] != "superseded"]
    want = correlate(pa.concat_tables([*before, *[t for at, t in busy if at >= restart], late.events]), now_us=end)
    return sc, fault.events.column("event_id")[0].as_py(), got, want, read


def test_a_correlate_worker_that_starts_over_reads_back_the_faults_of_the_hosts_its_partitions_carry(pipeline):
    """A correlate worker rebuilds its open windows by replaying its partitions from the safe offset, which an
    incident gone cold (``StreamCorrelator.cold``) does not hold back: the Xid 79 of the case above was lost at a
    restart or rebalance, and the 4 h watchdog timeouts named n1's rank 0 silent. The worker now reads the
    stored incidents' events back once n1 sends an event through it (``to_read_back``, ``add_cold``): the Xid
    goes cold again, its incident is not emitted again, and the timeouts join it as in the batch."""
    sc, xid_id, got, want, read = _worker_restart(pipeline, read_back=True)
    assert xid_id in read
    (joined,) = [x for x in want if x["initiator"]["host"] == "n1"]
    assert [(x["id"], x["pattern"], x["initiator"]["host"], len(x["downstream"])) for x in got] == [
        (joined["id"], "roots", "n1", 3)]
    assert not sc.unread and not sc.cold


def test_without_reading_back_the_restarted_worker_names_the_faulty_hosts_rank_silent(pipeline):
    """The same without ``read_back`` (the worker before): the Xid is not there, the timeouts' incident names
    a silent rank instead of joining the fault."""
    _sc, _xid, got, want, read = _worker_restart(pipeline, read_back=False)
    assert read == [] and [x["pattern"] for x in got] != [x["pattern"] for x in want if x["initiator"]["host"] == "n1"]
    assert "comm.silent_rank" in {x["pattern"] for x in got}


def test_read_back_waits_for_every_host_of_an_incident_or_one_of_its_events(pipeline):
    """Of a worker's stored incidents, one whose hosts all sent an event through it is read back; one with a
    host the worker has not heard from is not (another worker's partitions carry it), until one of its own
    events comes again (a replay). An event of a cold incident that comes again in the replay brings the
    incident back whole, and it is not emitted again."""
    import pyarrow as pa

    xid = T0 + timedelta(hours=1)
    t_other = xid + timedelta(minutes=1)
    a = events(pipeline, {"n1": [fallen(xid)]}, xid)
    b = events(pipeline, {"n9": [fallen(t_other).replace("0000:3b:00", "0000:5e:00")]}, t_other)
    stored = correlate(pa.concat_tables([a.events, b.events]), now_us=int((xid + timedelta(hours=1)).timestamp() * S))
    assert sorted(x["initiator"]["host"] for x in stored) == ["n1", "n9"]
    sc = StreamCorrelator()
    sc.restore(stored, read_back=True)
    now = int((xid + timedelta(hours=2)).timestamp() * S)
    before = xid - timedelta(minutes=10)  # the replay begins with a line n1 printed before its Xid
    n1 = events(pipeline, {"n1": [init(before, "n1", 700, 0, 1, "0x0000000000000a01", gpu=1)]}, before)
    sc.add(n1.events, now_us=now)
    (wanted,) = sc.to_read_back()
    assert wanted["initiator"]["host"] == "n1" and sc.to_read_back() == [] and list(sc.unread) == [stored[1]["id"]]
    sc.add_cold(pa.concat_tables([a.events, b.events]), [wanted])  # what the lake holds of it
    assert set(sc.cold) == set(a.events.column("event_id").to_pylist())
    sc.add(a.events, now_us=now)  # then the replay brings n1's Xid again: it was cold
    assert sc.returned == set(a.events.column("event_id").to_pylist())
    sc.add(b.events, now_us=now)  # n9's Xid comes again: its incident is read back
    (wanted_b,) = sc.to_read_back()
    assert wanted_b["initiator"]["host"] == "n9" and sc.unread == {}
    sc.add_cold(b.events, [wanted_b])
    assert sc.step(now_us=now) == []  # both whole, as stored: not emitted again
    assert set(sc.emitted) == {x["id"] for x in stored} and set(sc.cold) | set(sc.events) >= {
        *a.events.column("event_id").to_pylist(), *b.events.column("event_id").to_pylist()}


def test_a_host_whose_clock_runs_a_day_ahead_does_not_put_the_others_incidents_out_of_read_back(pipeline):
    """Which stored incidents a restarted worker reads back is judged by each host's own newest incident: one
    unrelated Xid of a host whose clock runs 26 h ahead put every other stored incident out of reach (the
    fleet's newest end was the anchor; a break-it pass), and n1's Xid was not read back."""
    import pyarrow as pa

    xid = T0 + timedelta(hours=1)
    ahead = xid + timedelta(hours=26)
    a = events(pipeline, {"n1": [fallen(xid)]}, xid)
    z = events(pipeline, {"zz": [fallen(ahead).replace("0000:18:00", "0000:5e:00")]}, xid)
    stored = correlate(pa.concat_tables([a.events, z.events]), now_us=int((xid + timedelta(hours=1)).timestamp() * S))
    assert sorted(x["initiator"]["host"] for x in stored) == ["n1", "zz"]
    sc = StreamCorrelator()
    sc.restore(stored, read_back=True)
    assert sorted(h for hosts, _inc in sc.unread.values() for h in hosts) == ["n1", "zz"]
    old = StreamCorrelator(reach_back_us=3600 * S)  # and an incident older than the reach back of its host stays out
    late = events(pipeline, {"n1": [fallen(xid + timedelta(hours=3)).replace("0000:18:00", "0000:3b:00")]}, xid)
    old.restore(correlate(pa.concat_tables([a.events, late.events]), now_us=int(ahead.timestamp() * S)),
                read_back=True)
    assert [inc["start"][11:13] for _h, inc in old.unread.values()] == ["07"]


def test_the_sink_reads_back_the_events_of_stored_incidents_from_the_lake(pipeline, tmp_path, caplog):
    """``IncidentSink.incident_events`` (a correlate worker's ``read_back``) on a real lake: the events of the
    incidents asked for, each once though the lake holds it twice (a batch written again after a crash), and
    no other event; None for incidents without events and for a lake that does not exist. A lake that cannot be
    read raises ``StoreError`` (the worker asks again later), where the restart's reads warn and go on."""
    import pyarrow as pa

    from api.sink import IncidentSink
    from ingest.lake import Lake
    from schemas.settings import Settings

    xid = T0 + timedelta(hours=1)
    a = events(pipeline, {"n1": [fallen(xid)]}, xid)
    b = events(pipeline, {"n9": [fallen(xid).replace("0000:3b:00", "0000:5e:00")]}, xid)
    noise = events(pipeline, {"n1": [init(xid, "n1", 700, 0, 1, "0x0000000000000a01", gpu=1)]}, xid)
    lake = Lake(tmp_path / "lake")
    lake.init()
    for i, t in enumerate([a.events, a.events, b.events, noise.events]):
        lake.write("events", t, f"b{i}")
    stored = correlate(pa.concat_tables([a.events, b.events, noise.events]),
                       now_us=int((xid + timedelta(hours=1)).timestamp() * S))
    sink = IncidentSink(Settings(lake=str(tmp_path / "lake"), state_dir=tmp_path / "state"))
    (n1,) = [x for x in stored if x["initiator"]["host"] == "n1"]
    back = sink.incident_events([n1])
    assert back.column("event_id").to_pylist() == a.events.column("event_id").to_pylist()
    assert back.schema.names == a.events.schema.names
    assert sorted(sink.incident_events(stored).column("event_id").to_pylist()) == sorted(
        m for x in stored for m in member_ids(x))
    assert sink.incident_events([]) is None
    assert IncidentSink(Settings(lake=str(tmp_path / "none"), state_dir=tmp_path / "state")).incident_events(
        [n1]) is None
    # a lake that cannot be read says so (it returned None without a word; a break-it pass), and read-back raises:
    # returning None lost the incident's faults for good (to_read_back hands each incident out once)
    import logging

    from api.store import StoreError

    bad = next((tmp_path / "lake" / "events").rglob("*.parquet"))
    bad.write_bytes(b"PAR1")
    with pytest.raises(StoreError, match="cannot"):
        sink.incident_events([n1])
    with caplog.at_level(logging.WARNING, logger="firstfault.sink"):
        assert sink.membership_events() is None
    assert "could not read events back from the lake" in caplog.text


def test_a_worker_whose_lake_read_back_fails_asks_again_and_then_keeps_the_fault_aside(pipeline, tmp_path, caplog):
    """``CorrelateWorker._read_back`` on a real lake with a corrupt part: the read fails, is logged
    (``read_back_failed``) and the incident waits, not lost; once the part is whole again, after the back-off,
    the next read brings n1's Xid back cold. Before, a failed read returned None and the incident was gone."""
    import asyncio
    import logging

    import pyarrow as pa

    from api.sink import IncidentSink
    from correlate.consumer import CorrelateWorker
    from correlate.correlator import correlation_settings
    from ingest.lake import Lake
    from schemas.settings import Settings

    xid = T0 + timedelta(hours=1)
    a = events(pipeline, {"n1": [fallen(xid)]}, xid)
    lake = Lake(tmp_path / "lake")
    lake.init()
    lake.write("events", a.events, "b0")
    part = next((tmp_path / "lake" / "events").rglob("*.parquet"))
    whole = part.read_bytes()
    stored = correlate(a.events, now_us=int((xid + timedelta(hours=1)).timestamp() * S))
    conf = Settings(lake=str(tmp_path / "lake"), state_dir=tmp_path / "state")
    # the correlator's settings, as the correlate command gives them (the process settings passed here went unread
    # until StreamCorrelator.add asked for the clock bounds of every event)
    w = CorrelateWorker(bootstrap="127.0.0.1:9", topic="fleet.events", group_id="g", dlq_topic="fleet.dlq",
                        settings=correlation_settings(conf),
                        lateness_us=60 * S, on_incidents=lambda incs: None, restore=lambda: stored,
                        read_back=IncidentSink(conf).incident_events)
    later = xid + timedelta(hours=2)
    n1 = events(pipeline, {"n1": [init(later, "n1", 700, 0, 1, "0x0000000000000a01", gpu=1)]}, later)
    w.correlator.add(n1.events, now_us=int(later.timestamp() * S))
    part.write_bytes(b"PAR1")
    with caplog.at_level(logging.ERROR, logger="firstfault.correlate"):
        asyncio.run(w._read_back())
    assert w.read_back_failures == 1 and not w.correlator.cold and "read back" in caplog.text
    assert [x["id"] for x in w.correlator.read_back_again] == [stored[0]["id"]]
    assert w.read_back_wait.delay == 1.0
    part.write_bytes(whole)
    asyncio.run(w._read_back())
    assert set(w.correlator.cold) == set(a.events.column("event_id").to_pylist())
    assert w.correlator.read_back_again == [] and w.correlator.to_read_back() == []
    assert w.read_back_wait.delay == 0.5


def test_a_hang_not_emitted_yet_keeps_its_communicator_after_the_job_restarts(pipeline):
    """Ranks 0 – 2 of a job time out; rank 3's host and one other never log again, so the hang stays open
    (not emitted) while the job restarts on n1, n2 and two new hosts, and n1, n2 go on logging. The ended
    communicator's lines stay while the open hang may belong to it: the flushed stream names rank 3 on n4, as
    the batch correlator does (a break-it pass found the stream naming no host)."""
    sc = StreamCorrelator()
    old, new = "0xaaaa000000000001", "0xbbbb000000000002"

    def feed(at: datetime, logs: dict[str, list[str]]) -> list[dict]:
        b = events(pipeline, logs, at)
        sc.add(b.events, now_us=int(at.timestamp() * S))
        return sc.step(now_us=int(at.timestamp() * S))

    feed(T0, {f"n{r + 1}": [init(T0, f"n{r + 1}", 100 + r, r, 4, old)] for r in range(4)})
    hang = T0 + timedelta(hours=1)
    feed(hang, {f"n{r + 1}": [timeout(hang + timedelta(milliseconds=r), r)] for r in range(3)})
    restart = T0 + timedelta(minutes=75)
    feed(restart, {h: [init(restart, h, 200 + r, r, 4, new)] for r, h in enumerate(["n1", "n2", "n5", "n6"])})
    later = T0 + timedelta(minutes=150)
    feed(later, {h: [init(later, h, 200 + r, r, 2, "0xdddd000000000003")] for r, h in enumerate(["n1", "n2"])})
    out = sc.step(now_us=int(later.timestamp() * S), flush=True)
    hung = [i for i in out if i["status"] != "superseded" and i["pattern"] == "comm.silent_rank"]
    assert [(i["initiator"]["host"], i["initiator"]["rank"]) for i in hung] == [("n4", 3)]


def test_runs_that_reuse_their_pids_keep_the_most_recent_communicators_per_gpu(pipeline, monkeypatch):
    """In a container each run's processes may get the pids of the run before: no run ends another
    (``comm_spans``), and the stream keeps the lines of ``MAX_COMMS_PER_GPU`` communicators per GPU, the most
    recent, besides the recent events (here 3 of the 5 older runs)."""
    import correlate.stream as stream

    monkeypatch.setattr(stream, "MAX_COMMS_PER_GPU", 3)
    sc = StreamCorrelator()
    for n in range(6):
        start = T0 + timedelta(hours=6 * n)
        b = events(pipeline, {h: [init(start, h, 45 + r, r, 2, f"0x{n + 1:016x}")]
                              for r, h in enumerate(["n1", "n2"])}, start)
        sc.add(b.events, now_us=int(start.timestamp() * S))
        sc.step(now_us=int(start.timestamp() * S))
    assert comm_spans((e.comm, e) for e in [*sc.wiring.values(), *sc.events.values()]) == {}
    # the last run's lines are recent events; of the older ones, the three most recent runs' wait in wiring
    assert {e.comm for e in sc.events.values()} == {f"0x{6:016x}"}
    assert {e.comm for e in sc.wiring.values()} == {f"0x{n:016x}" for n in (3, 4, 5)}


@given(st.lists(st.tuples(st.sampled_from(["n1", "n2", "n3"]), st.sampled_from(["A", "B", "C"]),
                          st.sampled_from([100, 200, 300]), st.integers(0, 12)), max_size=20),
       st.lists(st.tuples(st.sampled_from(["n1", "n2", "n3", "n4"]), st.integers(0, 14),
                          st.sampled_from(["line", "kafka", "file"])), max_size=12))
@settings(max_examples=200, deadline=None)
def test_the_communicators_kept_events_need_are_those_live_for_one_of_them(lines, kept):
    """``stream._needed`` (one search per communicator and host) equals its definition: the communicators
    ``rules.comms_of`` could give one of the kept events, ignoring the events' GPUs."""
    from correlate.stream import _needed

    topo = build_topology([ev(f"m{i}", host, ts * 600 * S, pid=pid, comm=comm)
                           for i, (host, comm, pid, ts) in enumerate(lines)], None, None)
    events = []
    for i, (host, ts, basis) in enumerate(kept):
        e = ev(f"k{i}", host, ts * 600 * S, pid=None, comm="x", basis=basis)
        e.kind = "xid"
        events.append(e)
    assert _needed(topo, events) == {c for e in events for c, _d in topo.comm_index().get(e.host, ())
                                     if topo.comm_live(c, e.host, e)}


def test_an_open_hang_keeps_its_communicator_while_the_restart_reuses_the_silent_ranks_host(pipeline):
    """The hang's ranks 0 – 2 on n1 – n3 time out; the job restarts on n4 (the silent rank's host) and three
    new hosts, and n4 goes on logging. n1 – n3 never had their GPUs taken, so the hang is open and may belong
    to the old communicator: its line on n4 stays, and the stream names rank 3 on n4 at every version, as the
    batch correlator does (a second break-it pass found a later version naming no host)."""
    sc = StreamCorrelator()
    old, new = "0xaaaa000000000001", "0xbbbb000000000002"
    versions: list[tuple] = []

    def feed(at: datetime, logs: dict[str, list[str]], flush: bool = False) -> None:
        b = events(pipeline, logs, at)
        sc.add(b.events, now_us=int(at.timestamp() * S))
        versions.extend((i["initiator"]["host"], i["initiator"]["rank"]) for i in
                        sc.step(now_us=int(at.timestamp() * S), flush=flush)
                        if i["pattern"] == "comm.silent_rank" and i["status"] != "superseded")

    feed(T0, {f"n{r + 1}": [init(T0, f"n{r + 1}", 100 + r, r, 4, old)] for r in range(4)})
    hang = T0 + timedelta(hours=1)
    feed(hang, {f"n{r + 1}": [timeout(hang + timedelta(milliseconds=r), r)] for r in range(3)})
    restart = T0 + timedelta(minutes=75)
    feed(restart, {h: [init(restart, h, 200 + r, r, 4, new)] for r, h in enumerate(["n4", "n5", "n6", "n7"])})
    for k in range(8):  # n4 logs on, every half hour (its new process's NCCL transport lines)
        t = restart + timedelta(minutes=15 + 30 * k)
        feed(t, {"n4": [f"{t:%Y-%m-%dT%H:%M:%S.%f}+00:00 n4 python[200]: n4:200:200 [0] NCCL INFO Channel 00/0 : "
                        "0[0] -> 1[1] via P2P/CUMEM"]}, flush=k == 7)
    assert versions and set(versions) == {("n4", 3)}


def test_quiet_hosts_hold_no_events_back_and_their_ranks_are_still_known(pipeline):
    """A job inits on n1 – n4 (2 GPUs each) and its hosts then log nothing for hours, as a training job's hosts
    do; another host logs an Xid every 10 minutes. A quiet host's watermark stands still, so its init lines
    were kept as events and correlated again at every step (32,768 of them kept a 4,096-host job's steps at
    1.0 – 1.7 s). Once a host has sent nothing for longer than events are kept (lateness + the longest link
    window, capped at an hour, of processing time), its events are forgotten; the init lines of its live
    communicator stay in ``wiring``, so the hang three hours in still names its silent rank."""
    sc = StreamCorrelator()
    comm = "0x00000000000000aa"

    def feed(at: datetime, logs: dict[str, list[str]]) -> list[dict]:
        b = events(pipeline, logs, at)
        sc.add(b.events, b.link_samples, b.topology, now_us=int(at.timestamp() * S))
        return sc.step(now_us=int(at.timestamp() * S))

    feed(T0, {f"n{h + 1}": [init(T0, f"n{h + 1}", 100 + h, 2 * h + g, 8, comm, gpu=g) for g in range(2)]
              for h in range(4)})
    job = {e.event_id for e in sc.events.values()}
    assert len(job) == 8
    for k in range(1, 19):  # three hours of another host's faults
        at = T0 + timedelta(minutes=10 * k)
        feed(at, {"n9": [fallen(at)]})
        quiet_for = timedelta(minutes=10 * k)
        if quiet_for < timedelta(seconds=sc.lateness_us / S + 3600):
            assert job <= set(sc.events), k  # not yet: a late line of the job could still join them
    assert {e.host for e in sc.events.values()} == {"n9"} and set(sc.wiring) == job
    hang = T0 + timedelta(hours=3, minutes=5)
    ranks = {f"n{h + 1}": [timeout(hang + timedelta(milliseconds=r), r) for r in (2 * h, 2 * h + 1) if r != 7]
             for h in range(4)}  # rank 7, on n4, is silent
    feed(hang, ranks)
    out = sc.step(now_us=int(hang.timestamp() * S), flush=True)
    (inc,) = [i for i in out if i["status"] != "superseded" and i["pattern"] == "comm.silent_rank"]
    assert (inc["initiator"]["host"], inc["initiator"]["rank"]) == ("n4", 7)


def test_a_step_whose_events_teach_no_topology_reuses_the_last_one(pipeline):
    """``StreamCorrelator._learn``: while only faults arrive (an Xid of another host, the job's timeouts), a
    step reuses the last step's topology instead of learning every live rank's membership line again; a new
    membership line (a restart) is learned. Every step emits what a twin that learns the topology afresh at
    each step emits."""
    from correlate.correlator import AttributionCache

    reused, fresh = StreamCorrelator(), StreamCorrelator()
    topologies = []

    def feed(at: datetime, logs: dict[str, list[str]], flush: bool = False) -> None:
        b = events(pipeline, logs, at)
        now = int(at.timestamp() * S)
        for sc in (reused, fresh):
            sc.add(b.events, b.link_samples, b.topology, now_us=now)
        fresh.learned, fresh.cache = None, AttributionCache()
        assert reused.step(now_us=now, flush=flush) == fresh.step(now_us=now, flush=flush), at
        topologies.append(reused.learned[1])

    feed(T0, {f"n{h + 1}": [init(T0, f"n{h + 1}", 100 + h, 2 * h + g, 8, "0xaa", gpu=g) for g in range(2)]
              for h in range(4)})
    for k in range(1, 4):
        feed(T0 + timedelta(minutes=k), {"n9": [fallen(T0 + timedelta(minutes=k))]})
    hang = T0 + timedelta(minutes=20)
    feed(hang, {f"n{h + 1}": [timeout(hang + timedelta(milliseconds=r), r) for r in (2 * h, 2 * h + 1) if r != 7]
                for h in range(4)})
    restart = T0 + timedelta(minutes=40)
    feed(restart, {"n1": [init(restart, "n1", 200, 0, 8, "0xbb")]}, flush=True)
    same = [a is b for a, b in zip(topologies, topologies[1:])]
    assert same == [True, True, True, True, False], same
    assert "0xbb" in topologies[-1].comm_ranks and "0xbb" not in topologies[-2].comm_ranks


def _learns_from(e: Ev) -> bool:
    """Whether ``Topology.learn_events`` learns anything from ``e`` alone (every field it fills is read)."""
    from dataclasses import fields

    from correlate.topology import Topology

    t = Topology()
    t.learn_events([e])
    assert {f.name for f in fields(Topology)} == {  # a new field must be read here too
        "hosts", "link_state", "model", "paths", "remote", "index_to_bus", "comm_ranks", "comm_size", "comm_span",
        "comm_logs", "comm_first", "uuid_gpu", "addr_hosts", "cut_files", "_comm_index", "_rank_index", "_comm_end"}
    return bool(t.model or t.remote or t.index_to_bus or t.comm_size or t.comm_span or t.comm_logs
                or any(t.link_state.values()) or any(t.paths.values()) or any(t.comm_ranks.values()) or t.uuid_gpu
                or t.addr_hosts or t.cut_files)


@pytest.mark.parametrize("case", sorted(p.name for p in CORPUS.iterdir() if p.is_dir()))
def test_the_events_that_teach_the_topology_are_those_learn_events_learns_from(pipeline, case):
    """``topology.teaches_topology`` (which events make the stream learn its topology again) against
    ``Topology.learn_events`` itself, event by event, on every real case."""
    from correlate.model import events_from_table
    from correlate.topology import teaches_topology
    from ingest.files import decode_paths

    evs = events_from_table(pipeline.run(decode_paths([CORPUS / case / "input"])).events)
    assert [_learns_from(e) for e in evs] == [teaches_topology(e) for e in evs]


def test_the_events_that_teach_the_topology_in_the_benchmark_mix(pipeline):
    """The same on the benchmark's mix (every signature family, NVML index and model lines among them)."""
    from benchmarks.generate import generate
    from correlate.model import events_from_table
    from correlate.topology import teaches_topology

    ref = int(T0.timestamp() * S)
    mix = generate(40_000, seed=4)
    evs = events_from_table(pipeline.run(Decoded(segments=[Segment(
        data=b"\n".join(mix.lines), origin="kafka:fleet.x/0/0", stream="s", host="node01", ref_ts=ref,
        ref_basis="kafka", ingest_ts=ref)])).events)
    taught = [teaches_topology(e) for e in evs]
    assert [_learns_from(e) for e in evs] == taught and 0 < sum(taught) < len(evs)


def test_a_quiet_hosts_fault_stays_for_timeouts_that_come_hours_later(pipeline):
    """n1's GPU falls off the bus and n1 logs nothing more; the other ranks set a 2 h NCCL timeout, so their
    watchdogs fire two hours later, for collectives that began at n1's fault. The stream steps every 5 minutes
    meanwhile. A quiet host's faults are kept (its membership lines are not): the flushed stream gives the batch's
    incident, the Xid 79 initiating and the three timeouts downstream (a break-it pass found the Xid forgotten
    and rank 0 named as a silent rank)."""
    comm = "0x00000000000000aa"
    xid = T0 + timedelta(hours=1)
    hang = xid + timedelta(hours=2)

    def long_timeout(t: datetime, rank: int) -> str:
        return timeout(t, rank).replace("Timeout(ms)=600000", "Timeout(ms)=7200000").replace(
            "ran for 600030", "ran for 7200030")

    feeds = [(T0, {f"n{r + 1}": [init(T0, f"n{r + 1}", 100 + r, r, 4, comm)] for r in range(4)}),
             (xid, {"n1": [fallen(xid)]}),
             (hang, {f"n{r + 1}": [long_timeout(hang + timedelta(milliseconds=r), r)] for r in (1, 2, 3)})]
    got, (want,) = _stream_and_batch(pipeline, feeds, hang + timedelta(hours=1))
    assert [(x["id"], x["pattern"], x["initiator"]["host"], len(x["downstream"])) for x in got] == [
        (want["id"], "roots", "n1", 3)] and want["initiator"]["host"] == "n1"


def _stream_and_batch(pipeline, feeds: list[tuple[datetime, dict[str, list[str]]]], end: datetime,
                      sc: StreamCorrelator | None = None, emitted: list | None = None):
    """Each feed's lines to a stream at their time, a step every 5 minutes of processing time until the next
    feed, then a flushed step at ``end``: (the stream's latest incidents that are not superseded, the batch
    correlator's incidents of the same events at ``end``). Every version the stream emits is appended to
    ``emitted``."""
    import pyarrow as pa

    sc, latest, tables = sc or StreamCorrelator(), {}, []
    emitted = [] if emitted is None else emitted
    for i, (at, logs) in enumerate(feeds):
        b = events(pipeline, logs, at)
        tables.append(b.events)
        sc.add(b.events, now_us=int(at.timestamp() * S))
        t = at
        while t < (feeds[i + 1][0] if i + 1 < len(feeds) else at + timedelta(minutes=1)):
            emitted.extend(sc.step(now_us=int(t.timestamp() * S)))
            t += timedelta(minutes=5)
    emitted.extend(sc.step(now_us=int(end.timestamp() * S), flush=True))
    for x in emitted:
        latest[x["id"]] = x
    return ([x for x in latest.values() if x["status"] != "superseded"],
            correlate(pa.concat_tables(tables), now_us=int(end.timestamp() * S)))


def _long_timeout(t: datetime, rank: int, hours: float) -> str:
    ms = int(hours * 3600_000)
    return timeout(t, rank).replace("Timeout(ms)=600000", f"Timeout(ms)={ms}").replace("ran for 600030",
                                                                                     f"ran for {ms + 30}")


def _busy(host: str, since: datetime, until: datetime, gpu: int = 1) -> list[tuple[datetime, dict[str, list[str]]]]:
    """``host`` goes on logging: a one-rank job inits on its GPU ``gpu`` every 20 minutes from ``since``."""
    out, k = [], 1
    while (t := since + timedelta(minutes=20 * k)) < until:
        out.append((t, {host: [init(t, host, 500 + k, 0, 1, f"0x00000000000001{k:02x}", gpu=gpu)]}))
        k += 1
    return out


@pytest.mark.parametrize("hours", [1.5, 2, 6])
def test_a_fault_on_a_host_that_logs_on_stays_for_timeouts_that_come_hours_later(pipeline, hours):
    """As above, but n1 goes on logging (another job inits on its other GPU every 20 minutes), so its
    watermark moves and its Xid 79 is older than the events kept long before the other ranks' watchdogs fire.
    The Xid's incident goes cold (``StreamCorrelator.cold``) and comes back when a timeout's collective began
    near it (``_revive``): the flushed stream gives the batch's incident. (Before, the stream forgot the Xid
    and named n1's rank 0 silent, leaving the Xid's own incident standing beside it.)"""
    comm = "0x00000000000000aa"
    xid = T0 + timedelta(hours=1)
    hang = xid + timedelta(hours=hours)
    feeds = [(T0, {f"n{r + 1}": [init(T0, f"n{r + 1}", 100 + r, r, 4, comm)] for r in range(4)}),
             (xid, {"n1": [fallen(xid)]}), *_busy("n1", xid, hang),
             (hang, {f"n{r + 1}": [_long_timeout(hang + timedelta(milliseconds=r), r, hours)] for r in (1, 2, 3)})]
    sc = StreamCorrelator()
    got, (want,) = _stream_and_batch(pipeline, feeds, hang + timedelta(hours=1), sc)
    assert [(x["id"], x["pattern"], x["initiator"]["host"], len(x["downstream"])) for x in got] == [
        (want["id"], "roots", "n1", 3)] and want["initiator"]["host"] == "n1"
    assert not sc.cold  # the Xid's incident came back whole with its timeouts


def test_an_old_fault_brought_back_for_an_unrelated_timeout_is_not_emitted_again(pipeline):
    """n1's Xid 79, then n1 logs on; two hours later the ranks of another job, on other hosts, time out after
    a 2 h NCCL timeout: their collectives began near the Xid, so it comes back to be correlated, but it joins
    nothing. Its incident's versions are those of the same stream without the timeouts, and the stream gives
    the batch's two incidents."""
    xid = T0 + timedelta(hours=1)
    hang = xid + timedelta(hours=2)
    comm = "0x00000000000000cc"
    feeds = [(T0, {f"n{r + 5}": [init(T0, f"n{r + 5}", 100 + r, r, 3, comm)] for r in range(3)}),
             (xid, {"n1": [fallen(xid)]}), *_busy("n1", xid, hang),
             (hang, {f"n{r + 5}": [_long_timeout(hang + timedelta(milliseconds=r), r, 2)] for r in (1, 2)})]
    runs = []
    for fed in (feeds, feeds[:-1]):
        sc, emitted = StreamCorrelator(), []
        got, want = _stream_and_batch(pipeline, fed, hang + timedelta(hours=1), sc, emitted)
        runs.append(([(x["id"], x["version"], x["status"]) for x in emitted if x["initiator"]["host"] == "n1"],
                     len(sc.cold)))  # ids differ between the runs: an event id holds its Kafka offset
    assert sorted((x["id"], x["pattern"]) for x in got) == sorted((x["id"], x["pattern"]) for x in want)
    (with_timeouts, cold), (alone, cold_alone) = runs
    assert [v for _i, *v in with_timeouts] == [v for _i, *v in alone] and len({i for i, *_ in with_timeouts}) == 1
    assert cold == cold_alone == 1  # gone cold again: the Xid alone


def test_a_host_whose_clock_runs_a_day_ahead_does_not_forget_the_other_hosts_cold_faults(pipeline):
    """As the 2 h timeout case above, with one line from an unrelated host whose clock runs 25 h ahead: cold
    events are forgotten by their own host's watermark, not the fleet's (a break-it pass found the Xid gone and
    n1's rank 0 named silent)."""
    comm = "0x00000000000000aa"
    xid = T0 + timedelta(hours=1)
    hang = xid + timedelta(hours=2)
    odd = xid + timedelta(minutes=30)
    ahead = odd + timedelta(hours=25)
    feeds = sorted([(T0, {f"n{r + 1}": [init(T0, f"n{r + 1}", 100 + r, r, 4, comm)] for r in range(4)}),
                    (xid, {"n1": [fallen(xid)]}), *_busy("n1", xid, hang),
                    (odd, {"n7": [init(ahead, "n7", 900, 0, 1, "0x0000000000000999")]})], key=lambda f: f[0])
    feeds.append((hang, {f"n{r + 1}": [_long_timeout(hang + timedelta(milliseconds=r), r, 2)] for r in (1, 2, 3)}))
    got, want = _stream_and_batch(pipeline, feeds, hang + timedelta(hours=1))
    assert sorted((x["id"], x["pattern"], x["initiator"].get("host"), len(x["downstream"])) for x in got) == sorted(
        (x["id"], x["pattern"], x["initiator"].get("host"), len(x["downstream"])) for x in want)
    assert [(x["pattern"], len(x["downstream"])) for x in want if x["initiator"].get("host") == "n1"] == [("roots", 3)]


def test_ecc_events_hours_apart_on_a_host_that_logs_on_join_as_in_the_batch(pipeline):
    """Two ECC events of the k8s device plugin (catalog: nvml.yaml) three hours apart on a host that logs on:
    the ``ecc`` link (same host) reaches a day, so the first, gone cold, comes back for the second, and the
    stream gives the batch's one incident (a break-it pass found two)."""
    def ecc(t: datetime) -> str:
        return (f"I{t.month}{t.day:02d} {t:%H:%M:%S}.{t.microsecond:06d}       1 health.go:151] Skipping "
                "non-nvmlEventTypeXidCriticalError event: {Device:{Handle:0x7f0dcf40bdf8} EventType:2 EventData:0 "
                "GpuInstanceId:4294967295 ComputeInstanceId:4294967295}")

    a = T0 + timedelta(hours=1)
    b = a + timedelta(hours=3)
    got, want = _stream_and_batch(pipeline, [(a, {"n1": [ecc(a)]}), *_busy("n1", a, b), (b, {"n1": [ecc(b)]})],
                                  b + timedelta(hours=1))
    assert len(want) == 1 and [(x["id"], x["pattern"]) for x in got] == [(want[0]["id"], want[0]["pattern"])]


def test_recurrence_names_earlier_incidents_once_when_an_old_fault_comes_back(pipeline):
    """n1's GPU falls off the bus twice, 90 minutes apart, n1 logging on between; then the other ranks' 3 h
    timeouts reach back to the first fault. Its incident's last version names no later incident as a
    ``recurrence.previous`` (the stream passes its emitted incidents, the later one too), the second names the
    first once: as the batch."""
    comm = "0x00000000000000aa"
    x1 = T0 + timedelta(hours=1)
    x2 = x1 + timedelta(hours=1, minutes=30)
    hang = x1 + timedelta(hours=3, seconds=20)
    feeds = [(T0, {f"n{r + 1}": [init(T0, f"n{r + 1}", 100 + r, r, 4, comm)] for r in range(4)}),
             (x1, {"n1": [fallen(x1)]}), *_busy("n1", x1, x2), (x2, {"n1": [fallen(x2)]}), *_busy("n1", x2, hang),
             (hang, {f"n{r + 1}": [_long_timeout(hang + timedelta(milliseconds=r), r, 3)] for r in (1, 2, 3)})]
    got, want = _stream_and_batch(pipeline, feeds, hang + timedelta(hours=1))
    recurrence = sorted((x["id"], x["recurrence"]["previous"]) for x in got)
    assert recurrence == sorted((x["id"], x["recurrence"]["previous"]) for x in want)
    assert sorted(len(p) for _i, p in recurrence) == [0, 1]
    # the explanation says so (the action's "RMA if it recurs" then reads against it: an Xid 79 that came back)
    (again,) = [x for x in got if x["recurrence"]["previous"]]
    (first,) = [x for x in got if x["id"] in again["recurrence"]["previous"]]
    assert again["explanation"].endswith(f"It recurred: 1 earlier incident(s) had the same fault on the same "
                                         f"initiator, the first at {first['start']} ({first['id']}).")
    assert "recurred" not in first["explanation"]


def test_cold_faults_are_forgotten_after_the_reach_back(pipeline):
    """``StreamCorrelator.reach_back_us`` bounds what is kept cold: a fault older than the fleet's watermark by
    more is forgotten."""
    xid = T0 + timedelta(hours=1)
    end = xid + timedelta(hours=3)
    sc = StreamCorrelator(reach_back_us=2 * 3600 * S)
    feeds = [(xid, {"n1": [fallen(xid)]}), *_busy("n1", xid, xid + timedelta(hours=2, minutes=30))]
    _stream_and_batch(pipeline, feeds, end, sc)
    assert not sc.cold and not sc.emitted  # 2.5 h after the Xid: past the reach back, forgotten with its incident
    sc = StreamCorrelator(reach_back_us=3 * 3600 * S)
    _stream_and_batch(pipeline, feeds, end, sc)
    assert [e.kind for e in sc.cold.values()] == ["xid"] and len(sc.emitted) == 1


@pytest.mark.parametrize("gap_min", [70, 120])
def test_a_quiet_hosts_fabric_manager_state_stays_for_its_error_hours_later(pipeline, gap_min):
    """A host without NVSwitches: Fabric Manager logs NV_WARN_NOTHING_TO_DO at boot (context, kind
    ``fabric_manager``), the host then logs nothing for over an hour, then Fabric Manager's error. The
    ``fabric_manager`` link reaches 24 h, farther than events are kept: the quiet host keeps such events (a
    second break-it pass found the boot line forgotten and the error called a platform fault, where the batch
    calls the pair benign). The stream steps every 5 minutes; flushed, it gives the batch's incident."""
    def fm(t: datetime, text: str) -> str:
        return f"{t:%Y-%m-%dT%H:%M:%S.%f}+00:00 n1 nv-fabricmanager[4177]: {text}"

    later = T0 + timedelta(minutes=gap_min)
    feeds = [(T0, {"n1": [fm(T0, "request to query NVSwitch device information from NVSwitch driver failed with "
                                 "error:WARNING Nothing to do [NV_WARN_NOTHING_TO_DO]")]}),
             (later, {"n1": [fm(later, f"[{later:%b %d %Y %H:%M:%S}] [ERROR] [tid 30042] failed to initialize all "
                                       "the available GPUs")]})]
    stream, (want,) = _stream_and_batch(pipeline, feeds, later + timedelta(minutes=30))
    got = [(x["id"], x["pattern"]) for x in stream]
    assert got == [(want["id"], "benign.fabric_manager_not_needed")] == [(want["id"], want["pattern"])], got


@pytest.mark.parametrize("batches", [11, 59])
def test_new_clock_estimates_alone_make_no_new_version_until_the_flush(pipeline, batches):
    """n1's GPU falls off the bus; the four hosts go on logging, their lines arriving 1 – 9 s after they were
    written (n2's 30 s more after 40 minutes), so each batch moves the hosts' clock estimates (``clocks``: skew
    bound, offset from Kafka append times). The Xid's incident is emitted when it closes and when it resolves —
    not at every batch (it was 8 versions, most of them new estimates alone) — and the flush brings the batch's
    estimates, also when the incident has gone cold meanwhile (59 batches: two hours; a break-it pass found
    its estimates left as they were when it resolved)."""
    comm = "0x00000000000000aa"
    xid = T0 + timedelta(minutes=10)
    feeds = [(T0, {f"n{r + 1}": [init(T0, f"n{r + 1}", 100 + r, r, 4, comm)] for r in range(4)}),
             (xid + timedelta(seconds=3), {"n1": [fallen(xid)]})]
    for k in range(1, batches + 1):
        t = xid + timedelta(minutes=2 * k)
        feeds.append((t + timedelta(seconds=k % 9 + 1),
                      {f"n{h}": [init(t - timedelta(seconds=h * k % 7 + (30 if h == 2 and k > 20 else 0)), f"n{h}",
                                      500 + 10 * k + h, 0, 1, f"0x0000000000{h:02x}{k:04x}", gpu=1)]
                       for h in (1, 2, 3, 4)}))
    sc, emitted = StreamCorrelator(), []
    got, want = _stream_and_batch(pipeline, feeds, xid + timedelta(hours=3), sc, emitted)
    versions = [x for x in emitted if x["initiator"].get("host") == "n1"]
    (final,) = [x for x in want if x["initiator"].get("host") == "n1"]
    assert [(x["version"], x["status"]) for x in versions][:2] == [(1, "open"), (2, "resolved")]
    assert len(versions) <= 3 and versions[-1]["clocks"] == final["clocks"], [x["clocks"] for x in versions]
    assert sorted((x["id"], x["clocks"] == y["clocks"]) for x in got for y in want if x["id"] == y["id"]) == sorted(
        (x["id"], True) for x in want)


def test_a_gpu_uuid_maps_to_its_bus_id_after_the_line_that_taught_it_is_forgotten(pipeline):
    """The driver gives a GPU's UUID its bus id once (the preamble, carried by the Xid after it); the device
    plugin names the GPU by that UUID at a later Xid, hours later. The stream keeps the newest line that taught
    each UUID (``StreamCorrelator.uuid_lines``, in ``wiring`` once pruned): the plugin's Xid is that GPU's, as in
    the batch (a break-it pass: it fell back to the UUID once the Xid that carried it was forgotten)."""
    uuid = "GPU-3b6ec030-5adc-1847-e155-79f635584b4e"
    x1 = T0 + timedelta(minutes=1)
    pre = (f"{x1:%Y-%m-%dT%H:%M:%S.%f}+00:00 kernel: NVRM: GPU at PCI:0000:00:07: {uuid}\n"
           f"{x1:%Y-%m-%dT%H:%M:%S.%f}+00:00 kernel: NVRM: Xid (PCI:0000:00:07): 31, pid=2512125, name=python3.10, "
           "Ch 00000008, intr 00000000. MMU Fault: ENGINE GRAPHICS GPCCLIENT_T1_8 faulted @ 0x73ac_1c000000. Fault "
           "is of type FAULT_PDE ACCESS_TYPE_VIRT_WRITE")
    later = x1 + timedelta(hours=3)
    plugin = f"{later:%Y-%m-%dT%H:%M:%S.%f}+00:00 XidCriticalError: Xid=48 on Device={uuid}, the device will go unhealthy."
    feeds = [(x1, {"n1": [pre]}), *_busy("n1", x1, later), (later, {"n1": [plugin]})]
    got, want = _stream_and_batch(pipeline, feeds, later + timedelta(hours=1))
    (inc,) = [i for i in got if i["initiator"]["xid"] == 48]
    (batch,) = [i for i in want if i["initiator"]["xid"] == 48]
    assert inc["initiator"]["device"] == batch["initiator"]["device"] == "0000:00:07.0"


def test_a_gpu_uuid_seen_on_two_gpus_is_mapped_as_the_batch_maps_it(pipeline):
    """A UUID the driver gave two bus ids (lines out of order across partitions: 07, then an older 08, then 07
    again): a line that repeats a known mapping teaches the stream nothing (``StreamCorrelator._teaches``), but once a
    UUID has had two GPUs every line of it does, and the device plugin's Xid is on the GPU the batch puts it on (a
    second break-it pass: the stream kept its cached mapping to 08)."""
    uuid = "GPU-3b6ec030-5adc-1847-e155-79f635584b4e"

    def pre(t: datetime, bus: str) -> str:
        return (f"{t:%Y-%m-%dT%H:%M:%S.%f}+00:00 kernel: NVRM: GPU at PCI:0000:00:{bus}: {uuid}\n"
                f"{t:%Y-%m-%dT%H:%M:%S.%f}+00:00 kernel: NVRM: Xid (PCI:0000:00:{bus}): 31, pid=2512125, "
                "name=python3.10, Ch 00000008, intr 00000000. MMU Fault: ENGINE GRAPHICS GPCCLIENT_T1_8 faulted @ "
                "0x73ac_1c000000. Fault is of type FAULT_PDE ACCESS_TYPE_VIRT_WRITE")

    a = T0 + timedelta(hours=2)
    p = a + timedelta(minutes=6)
    plugin = f"{p:%Y-%m-%dT%H:%M:%S.%f}+00:00 XidCriticalError: Xid=48 on Device={uuid}, the device will go unhealthy."
    feeds = [(a, {"n1": [pre(a, "07")]}), (a + timedelta(minutes=1), {"n1": [pre(a - timedelta(minutes=10), "08")]}),
             (a + timedelta(minutes=2), {"n1": [pre(a - timedelta(minutes=5), "07")]}), (p, {"n1": [plugin]})]
    got, want = _stream_and_batch(pipeline, feeds, p + timedelta(minutes=30))
    (inc,) = [i for i in got if i["initiator"]["xid"] == 48]
    (batch,) = [i for i in want if i["initiator"]["xid"] == 48]
    assert inc["initiator"]["device"] == batch["initiator"]["device"] == "0000:00:07.0"


def test_a_peers_address_is_known_after_its_bootstrap_line_is_forgotten(pipeline):
    """NCCL prints a rank's out-of-band address once, at job start (``nccl.bootstrap``); hours later a rank's IB
    completion error names its peer by that address, a second after the peer host's HCA failed. The stream keeps
    the newest address line of each host (``StreamCorrelator.addr_lines``, in ``wiring`` once pruned), so the
    peer host's fault is the initiator and the report its downstream, as in the batch."""
    boot = "{t:%Y-%m-%d %H:%M:%S} {h}:1200:1200 [0] NCCL INFO Bootstrap : Using eth0:{a}<0>"
    start = T0 + timedelta(minutes=1)
    later = start + timedelta(hours=3)
    hca = (f"[{later:%Y-%m-%d %H:%M:%S}] n2:1200:1290 [0] transport/net_ib.cc:101 NCCL WARN NET/IB : mlx5_0:1 Got "
           "async event : local access violation work queue error")
    done = later + timedelta(seconds=1)
    completion = (f"[{done:%Y-%m-%d %H:%M:%S}] n1:1300:1390 [0] transport/net_ib.cc:1909 NCCL WARN NET/IB : Got "
                  "completion from peer 10.1.3.2<33057> with status=12 opcode=0 len=0 vendor err 129 (Send)")
    feeds = [(start, {h: [boot.format(t=start, h=h, a=a)] for h, a in (("n1", "10.1.3.1"), ("n2", "10.1.3.2"))}),
             *_busy("n1", start, later), *_busy("n2", start, later), (later, {"n2": [hca]}), (done, {"n1": [completion]})]
    sc = StreamCorrelator()
    got, want = _stream_and_batch(pipeline, feeds, done + timedelta(hours=1), sc)
    assert not any(e.signature == "nccl.bootstrap" for e in sc.events.values())  # forgotten, but in wiring
    assert sorted(e.details["oob_addr"] for e in sc.wiring.values() if e.signature == "nccl.bootstrap") == [
        "10.1.3.1", "10.1.3.2"]
    (inc,) = [i for i in got if i["category"] == "ib_port"]
    (batch,) = [i for i in want if i["category"] == "ib_port"]
    assert (inc["initiator"]["host"], [(d["host"], d["relation"]) for d in inc["downstream"]]) == (
        "n2", [("n1", "peer_host")]) == (batch["initiator"]["host"], [(d["host"], d["relation"]) for d in batch["downstream"]])


@pytest.mark.parametrize("said", [["n2"], ["n2", "n3"]])
def test_a_ray_task_error_that_names_its_node_by_address_is_that_hosts(pipeline, said):
    """A Ray driver re-raises what a task raised on another node and names that node by its address
    (``ray.task_error``: "… (pid=7712, ip=<address>, …)", verl-project/verl#3636); the node's NCCL said it uses that
    address ("Bootstrap : Using eth0:<address>"), so the error is that host's (``Topology.addr_host``), downstream of
    its Xid 79, in the stream as in the batch; not an incident of a host named "10.1.3.2". Two hosts that use the
    address at once (a container's) name neither: the error stays on the address."""
    boot = "{t:%Y-%m-%d %H:%M:%S} {h}:1200:1200 [0] NCCL INFO Bootstrap : Using eth0:10.1.3.2<0>"
    start = T0 + timedelta(minutes=1)
    xid = start + timedelta(minutes=30)
    raised = xid + timedelta(seconds=4)
    ray = (f"{raised:%Y-%m-%d %H:%M:%S} ray.exceptions.RayTaskError(DistBackendError): "
           "ray::WorkerDict.actor_rollout_init_model() (pid=7712, ip=10.1.3.2, "
           "actor_id=7f4633a3fa573bc3c174a8bb06000000, "
           "repr=<verl.single_controller.ray.base.WorkerDict object at 0x7fbb38e9dcf0>)")
    feeds = [(start, {h: [boot.format(t=start, h=h)] for h in said}), (xid, {"n2": [fallen(xid)]}),
             (raised, {"driver": [ray]})]
    got, want = _stream_and_batch(pipeline, feeds, raised + timedelta(hours=1))
    for incs in (got, want):
        where = sorted((i["initiator"]["host"], i["initiator"]["kind"], sorted(d["host"] for d in i["downstream"]))
                       for i in incs)
        if said == ["n2"]:
            assert where == [("n2", "xid", ["n2"])]
        else:
            assert where == [("10.1.3.2", None, ["10.1.3.2"]), ("n2", "xid", [])]


def test_a_line_named_by_a_loopback_or_mapped_address_is_no_other_hosts():
    """``Topology.addr_host`` of a line whose host is an address, in its other spellings: an IPv4-mapped one
    (``::ffff:10.1.3.2``) and one with an IPv6 zone (``fe80::1%eth0``) name the host that said the address; a loopback
    address in any spelling, ``::ffff:127.0.0.1`` too, names none, even when one host's NCCL said it uses it (a
    single-node job over ``lo``): the mapped one took that host's name (a break-it pass)."""
    from correlate.model import Ev
    from correlate.topology import Topology

    topo = Topology()
    topo.addr_hosts = {"10.1.3.2": {"n2": 5}, "fe80::1": {"n3": 5}, "127.0.0.1": {"n5": 5}, "0.0.0.0": {"n6": 5}}

    def named(host: str) -> str | None:
        return topo.addr_host(Ev("e", 10, "line", host, "s", "k", "sig", "error", None, None, None, None, None, None,
                                 None, None, None, "m"))

    assert [named(h) for h in ("10.1.3.2", "::ffff:10.1.3.2", "fe80::1%eth0", "FE80::1", "10.1.3.2:80")] == \
        ["n2", "n2", "n3", "n3", "n2"]  # a port is no part of a host (schemas/hostname.canonical_hosts)
    assert [named(h) for h in ("127.0.0.1", "::ffff:127.0.0.1", "::1", "::ffff:0.0.0.0", "n2", "127.0.0.1:80")] == \
        [None] * 6

def _job_log(host: str, day: datetime, pid0: int, comm: str, ranks: list[int], gpus: list[int],
             hang: datetime | None, seq: int) -> list[str]:
    """One job's log on ``host``: NCCL 2.19+ init lines stamped by the launcher (``[<time>] <host>:<pid>:<tid>
    [<dev>] NCCL INFO comm … commId …``), then, at ``hang``, each rank's watchdog timeout as c10 prints it
    (``[rankN]:[E…``)."""
    out = [f"[{day:%Y-%m-%d %H:%M:%S}] {host}:{pid0 + k}:{pid0 + k + 60} [{k}] NCCL INFO comm 0x55{pid0 + k:x}a0 "
           f"rank {r} nranks 8 cudaDev {k} nvmlDev {g} busId {g:x}1000 commId {comm} - Init COMPLETE"
           for k, (r, g) in enumerate(zip(ranks, gpus))]
    if hang is not None:
        out += [timeout(hang + timedelta(milliseconds=3 * k), r, seq=seq) for k, r in enumerate(ranks)]
    return out


def _two_jobs(tmp_path, one_file: bool = False):
    """Two jobs on the same two hosts, each on half the GPUs, each numbering its ranks 0-7 (ranks 0-3 on the first
    host, 4-7 on the second), each its own log per host (or, ``one_file``, both in one file per host); the first
    job's GPU falls off the bus and its ranks time out, 20 minutes later the second job's GPU reports an
    uncorrectable ECC error and its ranks time out."""
    hosts = ["gpu-a17", "gpu-a18"]
    start = datetime(2026, 10, 2, 1, 0, 0, tzinfo=timezone.utc)
    fall, dbe = start + timedelta(hours=2), start + timedelta(hours=2, minutes=20)
    files: dict[str, list[str]] = {}
    for h, host in enumerate(hosts):
        ranks = [4 * h + k for k in range(4)]
        files[f"{host}.train.log"] = _job_log(host, start, 4100, "0x0a0a0b0b0c0c0d0d", ranks, [0, 1, 2, 3],
                                              fall + timedelta(seconds=600), 512)
        files[f"{host}.eval.log"] = _job_log(host, start + timedelta(minutes=5), 8200, "0x7e7e6d6d5c5c4b4b", ranks,
                                             [4, 5, 6, 7], dbe + timedelta(seconds=600), 90210)
        if one_file:
            files[f"{host}.jobs.log"] = files.pop(f"{host}.train.log") + files.pop(f"{host}.eval.log")
    files[f"{hosts[0]}.dmesg.log"] = [f"[{fall:%a %b %d %H:%M:%S %Y}] NVRM: Xid (PCI:0000:21:00): 79, pid='<unknown>', "
                                      "name=<unknown>, GPU has fallen off the bus."]
    files[f"{hosts[1]}.dmesg.log"] = [f"[{dbe:%a %b %d %H:%M:%S %Y}] NVRM: Xid (PCI:0000:61:00): 48, pid=8205, "
                                      "name=pt_main_thread, An uncorrectable double bit error (DBE) has been detected "
                                      "on GPU in the framebuffer at partition 3, subpartition 1."]
    for name, lines in files.items():
        (tmp_path / name).write_text("\n".join(lines) + "\n")
    return hosts, fall, dbe


def test_two_jobs_sharing_their_hosts_are_two_incidents_each_with_its_own_ranks(pipeline, tmp_path):
    """Two jobs on the same two hosts (GPUs 0-3 and 4-7), both numbering their ranks 0-7, each its own log per host:
    a rank's watchdog timeout, which names no GPU, is of the communicator whose init lines its own log holds
    (``rules.comms_of``), and one job's "rank 0" is not the other's (``rules.rank_scope``). They were one incident
    of both jobs' GPU faults, "no single culprit", every rank's timeouts in both (a scenario trial)."""
    from correlate.model import events_from_table
    from correlate.rules import comms_of
    from ingest.files import decode_paths

    hosts, fall, _dbe = _two_jobs(tmp_path)
    b = pipeline.run(decode_paths([tmp_path]))
    evs = events_from_table(b.events)
    topo = build_topology(evs, None, None)
    timeouts = [e for e in evs if e.signature == "torch.watchdog_timeout"]
    assert len(timeouts) == 16
    for e in timeouts:
        own = "0x0a0a0b0b0c0c0d0d" if ".train." in e.origin else "0x7e7e6d6d5c5c4b4b"
        assert comms_of(e, topo) == {own}, e.origin
    incidents = correlate(b.events, b.link_samples, b.topology, now_us=int(fall.timestamp() * S))
    assert len(incidents) == 2, [(i["category"], i["initiator"]) for i in incidents]
    by_xid = {i["initiator"]["xid"]: i for i in incidents}
    assert set(by_xid) == {79, 48}
    for xid, job in [(79, ".train."), (48, ".eval.")]:
        down = by_xid[xid]["downstream"]
        assert {(d["host"], d["rank"]) for d in down} == {(hosts[r // 4], r) for r in range(8)}, xid
        assert {d["relation"] for d in down} <= {"same_comm", "same_collective"}
        ids = {x for d in down for x in d["events"]}
        assert all(job in e.origin for e in evs if e.event_id in ids), xid


def test_a_rank_two_jobs_hold_on_its_host_joins_neither_when_its_log_holds_both(pipeline, tmp_path):
    """Both jobs' lines in one file per host: which job's rank 0 timed out no line tells, so its timeout is of
    neither communicator by its rank (``rules.comms_of``) rather than of both, and its rank is told apart by its log
    alone (``rules.rank_scope``; a scenario trial)."""
    from correlate.model import events_from_table
    from correlate.rules import comms_of, rank_scope
    from correlate.topology import log_stream
    from ingest.files import decode_paths

    _two_jobs(tmp_path, one_file=True)
    evs = events_from_table(pipeline.run(decode_paths([tmp_path])).events)
    topo = build_topology(evs, None, None)
    timeouts = [e for e in evs if e.signature == "torch.watchdog_timeout"]
    assert len(timeouts) == 16
    assert all(comms_of(e, topo) == set() and rank_scope(e, topo) == {log_stream(e)} for e in timeouts)


@pytest.mark.parametrize("flush", [True, False])
def test_a_cold_faults_gpu_named_a_rank_later_gets_that_rank(pipeline, flush):
    """n1's GPU 0 falls off the bus (Xid 79, through fleet.dmesg); n1's kernel log goes on (another job inits on its
    GPU 1) until the Xid's incident has gone cold. Two hours later n1's NCCL log arrives through fleet.nccl (a
    shipper that sends a job's log when the job ends): the job's ``Init COMPLETE`` line, written ten minutes before
    the Xid, says GPU 0 held rank 0. Lateness is judged per raw partition, so the line counts. The batch
    correlator names the Xid's initiator rank 0; the stream must say the same (DESIGN.md: the same input gives the
    same incidents), at the step that read the line and after a flush. It kept the version made before the rank
    was known: the line did not bring the cold incident back, and a flush brought it back but emitted it only
    when nothing but its clock estimates changed (a break-it pass over benchmarks.simulate's link faults,
    delivered in time order with seconds of jitter)."""
    import pyarrow as pa

    xid = T0 + timedelta(hours=1)
    late = xid + timedelta(hours=2)
    feeds = [(xid, {"n1": [fallen(xid)]}), *_busy("n1", xid, late),
             (late, {"n1": [init(xid - timedelta(minutes=10), "n1", 700, 0, 2, "0x00000000000000dd")]})]
    sc, tables = StreamCorrelator(), []
    for at, logs in feeds:
        (line,) = logs["n1"]
        topic = "fleet.nccl" if "NCCL INFO" in line and at == late else "fleet.dmesg"
        ref = int(at.timestamp() * S)
        seg = Segment(data=line.encode(), origin=f"kafka:{topic}/0/{next(OFFSETS)}:0", stream=f"{topic}/0/n1",
                      host="n1", ref_ts=ref, ref_basis="kafka", ingest_ts=ref)
        b = pipeline.run(Decoded(segments=[seg]))
        tables.append(b.events)
        assert sc.add(b.events, now_us=ref) == 0  # nothing too late
        sc.step(now_us=ref)
    end = int((late + timedelta(hours=1)).timestamp() * S)
    if flush:
        sc.step(now_us=end, flush=True)
    (batch,) = [x for x in correlate(pa.concat_tables(tables), now_us=end) if x["initiator"].get("xid") == 79]
    assert (batch["initiator"]["device"], batch["initiator"]["rank"]) == ("0000:18:00.0", 0)
    (stream,) = [v[2] for v in sc.emitted.values() if v[2]["initiator"].get("xid") == 79]
    assert stream["id"] == batch["id"] and stream["initiator"]["rank"] == 0, stream["initiator"]
    strip = lambda i: {k: v for k, v in i.items() if k not in ("version", "status", "recurrence")}
    assert strip(stream) == strip(batch)


def _incidents(pipeline, logs, fault: datetime, mode: str, settings=None) -> list[dict]:
    """The incidents of ``logs`` (read 15 minutes after ``fault``), from the batch correlator or the streaming one."""
    b = events(pipeline, logs, fault + timedelta(minutes=15))
    now = int((fault + timedelta(minutes=40)).timestamp() * S)
    if mode == "batch":
        return correlate(b.events, b.link_samples, b.topology, now_us=now, settings=settings)
    sc = StreamCorrelator(settings=settings) if settings is not None else StreamCorrelator()
    sc.add(b.events, b.link_samples, b.topology, now_us=now)
    return [i for i in sc.step(now_us=now, flush=True) if i["status"] != "superseded"]


def _hosts_of(inc: dict) -> set[str]:
    return {d["host"] for d in inc["downstream"]} | ({inc["initiator"]["host"]} - {None})


@pytest.mark.parametrize("mode", ["batch", "stream"])
@pytest.mark.parametrize("second_fault", [False, True])
def test_one_jobs_fallen_gpu_explains_no_other_jobs_timeouts_in_its_nvlink_domain(pipeline, mode, second_fault):
    """Four hosts of one GB200 NVLink domain, two jobs whose init lines place all their ranks: Y on n1, n2 and Z
    on n3, n4. n1's GPU falls off the bus and Y's rank on n2 times out; Z's ranks time out too, 5 s later
    (``second_fault``: after n3's own GPU's Xid 79, 4 s after n1's). The shared domain (``same_domain``) made n1's
    Xid 79 the initiator of Z's timeouts, and the two jobs' two fallen GPUs one incident of "no single culprit":
    two incidents, each job's reporters with its own fault, or Z's hang on its own."""
    from correlate.correlator import Settings
    from schemas.fleet import HostConfig

    day = T0 + timedelta(days=1)
    logs = {h: [init(day, h, 200 + r, r, 2, "0xbbbb000000000002")] for r, h in enumerate(["n1", "n2"])}
    logs |= {h: [init(day, h, 300 + r, r, 2, "0xcccc000000000003")] for r, h in enumerate(["n3", "n4"])}
    fault = day + timedelta(hours=3)
    logs["n1"].append(fallen(fault))
    if second_fault:
        logs["n3"].append(fallen(fault + timedelta(seconds=4)))
    logs["n2"].append(timeout(fault + timedelta(seconds=600, milliseconds=30_030 + 2_000), 1, seq=9))
    for r, host in enumerate(["n3", "n4"]):
        logs[host].append(timeout(fault + timedelta(seconds=600, milliseconds=30_030 + 5_000 + r), r, seq=40))
    settings = Settings(hosts={h: HostConfig(platform="NVIDIA GB200", domain="nvl72-a") for h in logs})
    incidents = _incidents(pipeline, logs, fault, mode, settings)
    assert sorted(sorted(_hosts_of(i)) for i in incidents) == [["n1", "n2"], ["n3", "n4"]]
    (y,) = [i for i in incidents if i["initiator"]["host"] == "n1"]
    assert (y["initiator"]["xid"], [d["host"] for d in y["downstream"]]) == (79, ["n2"])
    (z,) = [i for i in incidents if i is not y]
    assert z["initiator"].get("xid") == (79 if second_fault else None)
    assert "n1" not in z["explanation"].split("incident")[0]


def _port_down(t: datetime, host: str) -> str:
    """ib_core's port state line for a port gone DOWN (drivers/infiniband/core/cache.c; ib.port_state)."""
    return f"{t:%Y-%m-%dT%H:%M:%S.%f}+00:00 {host} kernel: mlx5_core 0000:ab:00.0 mlx5_5: Port: 1 Link DOWN"


def _two_jobs_sharing_n1(fault: datetime) -> dict[str, list[str]]:
    """Job A: rank 0 on n1's GPU 0, rank 1 on n2; job B: rank 1 on n1's GPU 1, rank 0 on n3 (init lines 3 h before
    ``fault``). At ``fault`` n1's GPU 0 falls off the bus, 5 s later n3's IB port goes down; A's rank 1 on n2 and B's
    rank 1 on n1 time out ~10 min later. Log lines by host."""
    day = fault - timedelta(hours=3)
    a, b = "0xaaaa000000000001", "0xbbbb000000000002"
    logs = {"n1": [init(day, "n1", 200, 0, 2, a), init(day, "n1", 300, 1, 2, b, gpu=1), fallen(fault)],
            "n2": [init(day, "n2", 201, 1, 2, a)],
            "n3": [init(day, "n3", 301, 0, 2, b), _port_down(fault + timedelta(seconds=5), "n3")]}
    logs["n2"].append(timeout(fault + timedelta(seconds=600, milliseconds=32_030), 1, seq=9))
    logs["n1"].append(timeout(fault + timedelta(seconds=605, milliseconds=32_030), 1, seq=40))
    return logs


@pytest.mark.parametrize("mode", ["batch", "stream"])
def test_two_jobs_sharing_a_host_keep_their_own_faults(pipeline, mode):
    """Job A: rank 0 on n1's GPU 0, rank 1 on n2. Job B: rank 1 on n1's GPU 1, rank 0 on n3. n1's GPU 0 falls off
    the bus (A's rank 0); 5 s later n3's IB port goes down (B's rank 0). A's rank 1 on n2 and B's rank 1 on n1 time
    out. B's timeout shares n1 with the Xid 79 (``same_host``; and ``same_domain``, a host being its own domain), and
    n3's port ``same_comm`` with B's timeout: one candidate incident. The Xid 79's incident listed n3's port "by no
    rule" and B's hang was left naming no fault (a break-it pass). Two incidents: the Xid 79 with n2's timeout, the
    port with B's timeout on n1."""
    fault = T0 + timedelta(days=1, hours=3)
    logs = _two_jobs_sharing_n1(fault)
    incidents = _incidents(pipeline, logs, fault, mode)
    (fall,) = [i for i in incidents if i["initiator"].get("xid") == 79]
    assert [(d["host"], d["rank"]) for d in fall["downstream"]] == [("n2", 1)]
    (port,) = [i for i in incidents if i is not fall]
    assert (port["category"], port["initiator"]["host"], port["initiator"]["device"]) == (
        "ib_port", "n3", "0000:ab:00.0")
    assert [(d["host"], d["rank"]) for d in port["downstream"]] == [("n1", 1)]


@pytest.mark.parametrize("mode", ["batch", "stream"])
def test_a_restarts_rank_is_no_repeat_of_the_old_runs_rank_of_that_number(pipeline, mode):
    """Job A: ranks 0, 1 on n1's GPUs 0, 1, rank 2 on n2. n1's GPU 1 falls off the bus; A's ranks 0 and 2 time out.
    12 minutes later the job restarts (A2, new processes) on n1's GPU 0 and n2; 3 minutes on, n2's IB port goes down
    and A2's rank 0 on n1 times out. The two runs' watchdog timeouts of "rank 0" on n1 were one device's repeats
    (``same_device``, ``rules.rank_scope`` None for a rank one job holds): the restart's timeout joined the old Xid 79
    on a GPU A2 does not use, and A2's IB port was listed "by no rule" (a break-it pass). Two incidents."""
    fault = T0 + timedelta(days=1, hours=3)
    day, again = fault - timedelta(hours=3), fault + timedelta(minutes=12)
    a, a2 = "0xaaaa000000000001", "0xaaaa000000000002"
    logs = {"n1": [init(day, "n1", 200, 0, 3, a), init(day, "n1", 201, 1, 3, a, gpu=1),
                   fallen(fault).replace("PCI:0000:18:00", "PCI:0000:2a:00"),
                   timeout(fault + timedelta(seconds=601, milliseconds=32_030), 0, seq=9),
                   init(again, "n1", 500, 0, 2, a2),
                   timeout(again + timedelta(seconds=780, milliseconds=32_030), 0, seq=3)],
            "n2": [init(day, "n2", 202, 2, 3, a),
                   timeout(fault + timedelta(seconds=600, milliseconds=32_030), 2, seq=9),
                   init(again, "n2", 501, 1, 2, a2), _port_down(again + timedelta(minutes=3), "n2")]}
    incidents = _incidents(pipeline, logs, again, mode)
    (fall,) = [i for i in incidents if i["initiator"].get("xid") == 79]
    assert sorted((d["host"], d["rank"], len(d["events"])) for d in fall["downstream"]) == [("n1", 0, 1), ("n2", 2, 1)]
    (port,) = [i for i in incidents if i is not fall]
    assert (port["category"], port["initiator"]["host"]) == ("ib_port", "n2")
    assert [(d["host"], d["rank"]) for d in port["downstream"]] == [("n1", 0)]


@pytest.mark.parametrize("mode", ["batch", "stream"])
def test_a_rank_number_another_jobs_communicator_lacks_is_not_of_that_job(pipeline, mode):
    """Three jobs share n1: A (2 ranks) has rank 0 on GPU 0, B (2 ranks) rank 1 on GPU 1, C (3 ranks) rank 2 on
    GPU 2. n1's GPU 0 falls off the bus; A's rank on n2 and C's rank 2 on n1 time out. A communicator that puts no
    rank of a line's number anywhere may be the line's (its init lines may be partial), so C's "[Rank 2]" timeout
    was of A and B too, though the rank's process is on GPU 2 where neither has a rank: it joined A's Xid 79 as
    same_comm (a break-it pass). The Xid 79 has A's timeout alone."""
    fault = T0 + timedelta(days=1, hours=3)
    day = fault - timedelta(hours=3)
    a, b, c = "0xaaaa000000000001", "0xbbbb000000000002", "0xcccc000000000003"
    logs = {"n1": [init(day, "n1", 200, 0, 2, a), init(day, "n1", 300, 1, 2, b, gpu=1),
                   init(day, "n1", 400, 2, 3, c, gpu=2), fallen(fault),
                   timeout(fault + timedelta(seconds=607, milliseconds=32_030), 2, seq=50)],
            "n2": [init(day, "n2", 201, 1, 2, a),
                   timeout(fault + timedelta(seconds=600, milliseconds=32_030), 1, seq=9)],
            "n3": [init(day, "n3", 301, 0, 2, b)],
            "n4": [init(day, "n4", 401, 0, 3, c), init(day, "n4", 402, 1, 3, c, gpu=1)]}
    incidents = _incidents(pipeline, logs, fault, mode)
    (fall,) = [i for i in incidents if i["initiator"].get("xid") == 79]
    assert [(d["host"], d["rank"]) for d in fall["downstream"]] == [("n2", 1)]


def _tp_dp_job_whose_gpu_falls(pipeline, logs: dict[str, list[str]], day: datetime, fault: datetime,
                               mode: str) -> None:
    """A job of 4 ranks on n1 and n2 (2 GPUs each, appended to ``logs``): its default group, a tensor-parallel group
    per host and a data-parallel group per GPU index; n1's GPU 0 falls off the bus at ``fault``, the TP group's rank 1
    on n1 and the DP group's rank 1 on n2 (global rank 2) time out. Asserts one incident: the Xid 79, both
    downstream."""
    world, tp, dp = "0x1111000000000001", ["0x2222000000000001", "0x2222000000000002"], [
        "0x3333000000000001", "0x3333000000000002"]
    for g, (host, gpu) in enumerate([("n1", 0), ("n1", 1), ("n2", 0), ("n2", 1)]):
        pid = 100 + g
        logs[host] += [init(day, host, pid, g, 4, world, gpu=gpu), init(day, host, pid, gpu, 2, tp[g // 2], gpu=gpu),
                       init(day, host, pid, g // 2, 2, dp[gpu], gpu=gpu)]
    logs["n1"] += [fallen(fault), timeout(fault + timedelta(seconds=631), 1, seq=12)]
    dp_timeout = timeout(fault + timedelta(seconds=631, milliseconds=500), 1, seq=7)
    logs["n2"].append(dp_timeout.replace("[rank1]:", "[rank2]:"))  # global rank 2, rank 1 of its DP group
    (inc,) = _incidents(pipeline, logs, fault, mode)
    assert inc["initiator"]["xid"] == 79 and inc["initiator"]["host"] == "n1"
    assert sorted((d["host"], d["rank"]) for d in inc["downstream"]) == [("n1", 1), ("n2", 1)]


@pytest.mark.parametrize("mode", ["batch", "stream"])
def test_one_fault_seen_by_a_tensor_and_a_data_parallel_group_is_one_incident(pipeline, mode):
    """One job of 4 ranks on n1 and n2 (2 GPUs each): its default group, a tensor-parallel group per host (the
    host's GPUs 0, 1 are its ranks 0, 1) and a data-parallel group per GPU index (n1's GPU its rank 0, n2's its rank
    1). n1's GPU 0 falls off the bus; the TP group's rank 1 on n1 and the DP group's rank 1 on n2 (global rank 2,
    c10's "[rank2]:" before the group's "[Rank 1]") time out. n2's timeout names rank 1, which a TP and a DP group
    hold there on two GPUs: it was of no communicator, a hang of its own "without the communicator's membership"
    (a break-it pass). Its global rank puts it on n2's GPU 0, whose DP group holds the fallen GPU: one incident."""
    day = T0 + timedelta(days=1)
    fault = day + timedelta(hours=3)
    logs: dict[str, list[str]] = {"n1": [], "n2": []}
    _tp_dp_job_whose_gpu_falls(pipeline, logs, day, fault, mode)


def _timeout_of(t: datetime, rank: int, seq: int, timeout_ms: int) -> str:
    """A watchdog timeout printed at ``t``, for a collective that began ``timeout_ms`` + 10 ms before."""
    return (f"[rank{rank}]:[E{t.month}{t.day:02d} {t:%H:%M:%S}.{t.microsecond:06d}000 ProcessGroupNCCL.cpp:616] "
            f"[Rank {rank}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum={seq}, OpType=ALLREDUCE, "
            f"NumelIn=1, NumelOut=1, Timeout(ms)={timeout_ms}) ran for {timeout_ms + 10} milliseconds before timing "
            "out.")


@pytest.mark.parametrize("mode", ["batch", "stream"])
def test_a_job_begun_after_a_gpu_fell_off_the_bus_hangs_on_its_own(pipeline, mode):
    """Job Y holds both GPUs of n1 and n2 (ranks 0 - 3); n1's GPU 0, Y's rank 0, falls off the bus and Y's other
    ranks time out 30 s later (a 30 s timeout). 40 s after the Xid job Z starts on n1's other GPU (rank 0) and
    both of n2's (ranks 1, 2); 110 s after the Xid its ranks 0 and 1 time out, rank 2 never reports. Z's rank on n1
    was downstream of the Xid 79 (``same_host``, within 120 s) and its rank on n2 listed "by no rule": Z never had a
    rank on the lost GPU. Z's hang is its own incident, naming its silent rank."""
    day = T0 + timedelta(days=1)
    fault = day + timedelta(hours=3)
    y, z = "0xbbbb000000000002", "0xdddd000000000004"
    logs = {"n1": [init(day, "n1", 200, 0, 4, y), init(day, "n1", 201, 1, 4, y, gpu=1), fallen(fault)],
            "n2": [init(day, "n2", 202, 2, 4, y), init(day, "n2", 203, 3, 4, y, gpu=1)]}
    for r, host in ((1, "n1"), (2, "n2"), (3, "n2")):
        logs[host].append(_timeout_of(fault + timedelta(seconds=30, milliseconds=110 + r), r, 500, 30_000))
    start = fault + timedelta(seconds=40)
    for r, (host, gpu) in enumerate([("n1", 1), ("n2", 0), ("n2", 1)]):
        logs[host].append(init(start, host, 400 + r, r, 3, z, gpu=gpu))
    for r, host in enumerate(["n1", "n2"]):
        logs[host].append(_timeout_of(fault + timedelta(seconds=170, milliseconds=r), r, 12, 60_000))
    incidents = _incidents(pipeline, logs, fault, mode)
    (fall,) = [i for i in incidents if i["initiator"].get("xid") == 79]
    assert sorted((d["host"], d["rank"]) for d in fall["downstream"]) == [("n1", 1), ("n2", 2), ("n2", 3)]
    (hang,) = [i for i in incidents if i is not fall]
    assert (hang["category"], hang["initiator"]["host"], hang["initiator"]["device"]) == (
        "nccl_hang", "n2", "0000:2a:00.0")
    assert sorted((d["host"], d["rank"]) for d in hang["downstream"]) == [("n1", 0), ("n2", 1)]


def _ib_error(t: datetime, host: str, pid: int) -> str:
    """NCCL's NET/IB error completion (formats.md §11.5) as a journald export prints it."""
    return (f"{t:%Y-%m-%dT%H:%M:%S.%f}+00:00 {host} python[{pid}]: {host}:{pid}:{pid} [0] transport/net_ib.cc:1696 "
            "NCCL WARN NET/IB : Got completion from peer 10.0.0.1<44206> with status=12 opcode=129 len=65536 vendor "
            "err 129 (Recv) localGid ::ffff:10.0.0.2 remoteGids::ffff:10.0.0.1")


@pytest.mark.parametrize("before_s", [1, 6])
def test_a_ranks_error_logged_past_the_skew_bounds_before_its_peers_fall_names_it(pipeline, before_s):
    """Job Y: rank 0 on n1's GPU, rank 1 on n2. n2's NET/IB error completion (status 12, its peer lost) is logged
    ``before_s`` before n1's Xid 79. 1 s: within both hosts' skew bounds, a report of the fall. 6 s: past them, the
    error is an incident of its own, which said nothing of the fall of its peer's GPU (a break-it pass); it names the
    fall's incident and asks for the two hosts' clock-skew bounds."""
    day = T0 + timedelta(days=1)
    fault = day + timedelta(hours=3)
    y = "0xbbbb000000000002"
    logs = {"n1": [init(day, "n1", 200, 0, 2, y), fallen(fault)],
            "n2": [init(day, "n2", 201, 1, 2, y), _ib_error(fault - timedelta(seconds=before_s), "n2", 201)]}
    incidents = _incidents(pipeline, logs, fault, "batch")
    (fall,) = [i for i in incidents if i["initiator"].get("xid") == 79]
    if before_s == 1:
        assert len(incidents) == 1 and [d["host"] for d in fall["downstream"]] == ["n2"]
        return
    (report,) = [i for i in incidents if i is not fall]
    assert (report["initiator"]["host"], report["initiator"]["kind"]) == ("n2", "nccl_error")
    said = (f"he gpu_off_bus incident {fall['id']} (critical) of n1, a host of the same communicator, began "
            f"{before_s:.1f} s after it")
    assert f"T{said}: if n2's clock ran ahead by more than its skew bound" in report["explanation"]
    assert f"clock-skew bounds for n2, n1 (NTP/PTP state): t{said}, more than their bounds allow" in report["missing"]
    assert "clock-skew" not in " ".join(fall["missing"])


def _feed_n1(pipeline, sc: StreamCorrelator, tables: list[pa.Table], at: datetime, topic: str,
             line: str) -> list[dict]:
    """One line of host n1 as its Kafka record of ``topic`` appended at ``at``, through the pipeline into the
    streaming correlator ``sc`` (its events appended to ``tables``); the incident versions of the step after it."""
    ref = int(at.timestamp() * S)
    seg = Segment(data=line.encode(), origin=f"kafka:{topic}/0/{next(OFFSETS)}:0", stream=f"{topic}/0/n1",
                  host="n1", ref_ts=ref, ref_basis="kafka", ingest_ts=ref)
    b = pipeline.run(Decoded(segments=[seg]))
    tables.append(b.events)
    assert sc.add(b.events, now_us=ref) == 0
    return sc.step(now_us=ref)


def test_jobs_that_init_on_a_gpu_after_its_cold_fault_leave_its_incident_as_it_was(pipeline):
    """As above (the Xid's incident learns rank 0 of the job that held GPU 0 when it failed), then GPU 0 runs a new
    job every 20 minutes, each started hours after the fault (rank 5, then 3, …). A job that started on a GPU long
    after its fault held no rank on it then (``Topology.comm_later``): the batch correlator keeps rank 0 and the one
    communicator. Each new job's init line brought the cold incident back (``StreamCorrelator.retaught``), correlated
    it without the first job's init line (gone from the kept events), and emitted a new version: rank null, and the
    communicators of every later job added (unioned with the last version's), one version per job, without end
    (a break-it pass). A membership line brings back only the cold events it may name a rank of: those that began
    no more than ``HANDOVER_MARGIN_US`` before it."""
    xid = T0 + timedelta(hours=1)
    late = xid + timedelta(hours=2)
    feeds = [(xid, {"n1": [fallen(xid)]}), *_busy("n1", xid, late),
             (late, {"n1": [init(xid - timedelta(minutes=10), "n1", 700, 0, 2, "0x00000000000000dd")]})]
    for k in range(10):
        t = late + timedelta(minutes=20 * (k + 1))
        feeds.append((t, {"n1": [init(t, "n1", 900 + k, 3 if k % 2 else 5, 8, f"0x0000000000000e{k:02x}")]}))
    sc, tables, versions = StreamCorrelator(), [], []
    for at, logs in feeds:
        (line,) = logs["n1"]
        emitted = _feed_n1(pipeline, sc, tables, at, "fleet.nccl" if at == late else "fleet.dmesg", line)
        versions += [(i["version"], i["initiator"]["rank"], i["communicators"]) for i in emitted
                     if i["initiator"].get("xid") == 79]
    assert versions == [(1, None, []), (2, 0, ["0x00000000000000dd"])]
    end = int((feeds[-1][0] + timedelta(hours=1)).timestamp() * S)
    (batch,) = [x for x in correlate(pa.concat_tables(tables), now_us=end) if x["initiator"].get("xid") == 79]
    (stream,) = [v[2] for v in sc.emitted.values() if v[2]["initiator"].get("xid") == 79]
    strip = lambda i: {k: v for k, v in i.items() if k not in ("version", "status", "recurrence")}  # noqa: E731
    assert strip(stream) == strip(batch)


def test_a_job_that_starts_hours_after_faults_on_its_gpus_does_not_join_them(pipeline):
    """Four hosts' GPU 0 fall off the bus at once (Xid 79); their logs go on (one-rank jobs on GPU 1 every 20
    minutes); two hours later a four-rank job inits on their GPU 0. It held no GPU when they failed
    (``Topology.comm_later``, as the initiator's rank is judged): the four faults stay four incidents of no
    communicator. The batch correlator made them one "no single culprit" incident of that job's communicator, and
    so did the streaming one once the job's lines brought the cold incidents back (a break-it pass):
    ``rules.placement`` took a communicator live at a fault whose GPU had changed hands never before it."""
    hosts = [f"n{i}" for i in range(4)]
    xid = T0 + timedelta(hours=1)
    feeds = [(xid, {h: [fallen(xid)] for h in hosts})]
    for k in range(1, 6):
        t = xid + timedelta(minutes=20 * k)
        feeds.append((t, {h: [init(t, h, 500 + k, 0, 1, f"0x00000000000001{k:02x}", gpu=1)] for h in hosts}))
    t = xid + timedelta(hours=2, minutes=20)
    feeds.append((t, {h: [init(t, h, 900, i, 4, "0x0000000000000e00")] for i, h in enumerate(hosts)}))
    sc, tables = StreamCorrelator(), []
    for at, logs in feeds:
        b = events(pipeline, logs, at)
        tables.append(b.events)
        assert sc.add(b.events, now_us=int(at.timestamp() * S)) == 0
        sc.step(now_us=int(at.timestamp() * S))
    end = int((t + timedelta(hours=1)).timestamp() * S)
    batch = correlate(pa.concat_tables(tables), now_us=end)
    assert sorted((i["initiator"]["host"], i["initiator"]["xid"], i["communicators"]) for i in batch) == \
        [(h, 79, []) for h in hosts]
    sc.step(now_us=end, flush=True)
    stream = [v[2] for v in sc.emitted.values() if v[2]["status"] != "superseded"]
    assert sorted(i["id"] for i in stream) == sorted(i["id"] for i in batch)


def test_an_undated_init_line_that_comes_late_gives_a_cold_faults_gpu_its_rank(pipeline):
    """As ``test_a_cold_faults_gpu_named_a_rank_later_gets_that_rank``, but the job's init line printed no time (NCCL
    INFO lines print none without a journal), so it is dated by its Kafka append, two hours after the Xid: written
    then or earlier (``Ev.undated``). It may name the GPU's rank at the Xid: the batch correlator names rank 0, and
    the stream, without a flush, brings the cold incident back for it and says the same. A line's upper bound
    neither makes its communicator begin after the fault (``Topology.comm_first``) nor keeps the cold incident
    cold (``StreamCorrelator._reached``)."""
    xid = T0 + timedelta(hours=1)
    late = xid + timedelta(hours=2)
    undated = ("n1:700:700 [0] NCCL INFO comm 0x55700000f0 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 18000 "
               "commId 0x00000000000000dd - Init COMPLETE")
    feeds = [(xid, "fleet.dmesg", fallen(xid)),
             *((at, "fleet.dmesg", logs["n1"][0]) for at, logs in _busy("n1", xid, late)),
             (late, "fleet.nccl", undated)]
    sc, tables = StreamCorrelator(), []
    for at, topic, line in feeds:
        _feed_n1(pipeline, sc, tables, at, topic, line)
    assert tables[-1].num_rows == 1 and tables[-1].column("rank").to_pylist() == [0]
    end = int((late + timedelta(hours=1)).timestamp() * S)
    (batch,) = [x for x in correlate(pa.concat_tables(tables), now_us=end) if x["initiator"].get("xid") == 79]
    assert batch["initiator"]["rank"] == 0
    (stream,) = [v[2] for v in sc.emitted.values() if v[2]["initiator"].get("xid") == 79]
    assert stream["id"] == batch["id"] and stream["initiator"]["rank"] == 0, stream["initiator"]


@pytest.mark.parametrize("mode", ["batch", "stream"])
def test_a_hosts_port_down_under_two_jobs_explains_both_jobs_timeouts(pipeline, mode):
    """Job A: rank 0 on n1's GPU 0, rank 1 on n2. Job B: rank 1 on n1's GPU 1, rank 0 on n3. n1's InfiniBand port
    goes DOWN (ib_core's "mlx5_5: Port: 1 Link DOWN", ib.port_state) and both jobs' ranks on the other hosts time out:
    the host's port is every job's there. With one job's timeout it was the initiator (the earliest fault); with both,
    no rule related it to either, and their hang named B's silent rank on n1 with A's rank 1 on n2 "timed out on
    SeqNum 9, behind" as that rank (a break-it pass). One incident: the port, both jobs' ranks downstream."""
    day = T0 + timedelta(days=1)
    fault = day + timedelta(hours=3)
    a, b = "0xaaaa000000000001", "0xbbbb000000000002"
    logs = {"n1": [init(day, "n1", 200, 0, 2, a), init(day, "n1", 300, 1, 2, b, gpu=1), _port_down(fault, "n1")],
            "n2": [init(day, "n2", 201, 1, 2, a), timeout(fault + timedelta(seconds=600, milliseconds=32_030), 1, 9)],
            "n3": [init(day, "n3", 301, 0, 2, b), timeout(fault + timedelta(seconds=605, milliseconds=32_030), 0, 40)]}
    (inc,) = _incidents(pipeline, logs, fault, mode)
    assert (inc["category"], inc["initiator"]["host"], inc["initiator"]["device"]) == ("ib_port", "n1", "0000:ab:00.0")
    assert sorted((d["host"], d["rank"]) for d in inc["downstream"]) == [("n2", 1), ("n3", 0)]


def test_a_global_rank_places_a_line_only_when_its_world_holds_every_gpu_the_line_may_be_of():
    """``rules._global_gpu``: c10's "[rank1]:" puts a subgroup's line on its process's GPU by the largest communicator
    that holds rank 1 — the job's world. With a second, larger job on the host, that job's world held rank 1 on its
    own GPU, and job B's data-parallel timeout was filtered to job A's GPU (a break-it pass). It places the line only
    when that world holds every GPU the line's group rank may be on; else None (no placement, as before)."""
    from types import SimpleNamespace

    from correlate.rules import _global_gpu
    from correlate.topology import Topology

    topo = Topology()
    a, b = "0xa0a0000000000000", "0xb0b0000000000000"
    topo.comm_ranks[a].update({g: ("n1", f"gpu{g}") for g in range(4)}
                              | {g: ("n2", f"gpu{g - 4}") for g in range(4, 8)})
    topo.comm_ranks[b].update({0: ("n1", "gpu4"), 1: ("n1", "gpu5"), 2: ("n3", "gpu0"), 3: ("n3", "gpu1")})
    topo.comm_size.update({a: 8, b: 4})
    line = SimpleNamespace(host="n1", details={"global_rank": 1})
    # B's group rank 0 may be on n1's GPU 4 or 5 (B's groups), or on GPU 1 (A's): A's world does not hold 4 and 5
    assert _global_gpu(line, topo, {"gpu1", "gpu4", "gpu5"}) is None
    del topo.comm_ranks[a], topo.comm_size[a]  # B alone on the host: its world names the process's GPU
    assert _global_gpu(line, topo, {"gpu4", "gpu5"}) == "gpu5"


def test_a_jobs_init_lines_arriving_after_the_lateness_still_keep_its_ranks_apart(pipeline):
    """Jobs A and B share n1: A's GPU there falls off the bus, B's IB port on n3 goes down 5 s later, and each job's
    rank on the other host times out. When B's NCCL init lines came in a later batch than the faults, past the allowed
    lateness of their host's partition, the stream dropped them as too late: B's rank on n1 was of no communicator and
    joined A's Xid 79, where the batch correlator keeps them apart (a break-it pass). A late fact of the topology is
    no evidence: it is kept, and the stream ends with the batch's incidents."""
    fault = T0 + timedelta(days=1, hours=3)
    logs = _two_jobs_sharing_n1(fault)
    summary = lambda incs: sorted((i["category"], i["initiator"]["host"], tuple(sorted(  # noqa: E731
        (d["host"], d["rank"]) for d in i["downstream"]))) for i in incs if i["status"] != "superseded")
    batch = summary(_incidents(pipeline, logs, fault, "batch"))
    assert batch == [("gpu_off_bus", "n1", (("n2", 1),)), ("ib_port", "n3", (("n1", 1),))]
    late = {"n1": [logs["n1"][1]], "n3": [logs["n3"][0]]}  # B's init lines
    early = {"n1": [logs["n1"][0]] + logs["n1"][2:], "n2": logs["n2"], "n3": logs["n3"][1:]}
    sc = StreamCorrelator()
    first = events(pipeline, early, fault + timedelta(minutes=15))
    now = int((fault + timedelta(minutes=16)).timestamp() * S)
    sc.add(first.events, first.link_samples, first.topology, now_us=now)
    sc.step(now_us=now)
    second = events(pipeline, late, fault + timedelta(minutes=17))
    now = int((fault + timedelta(minutes=40)).timestamp() * S)
    assert sc.add(second.events, second.link_samples, second.topology, now_us=now) == 0  # not too late: facts
    sc.step(now_us=now, flush=True)
    assert summary(v[2] for v in sc.emitted.values()) == batch


@pytest.mark.parametrize("mode", ["batch", "stream"])
def test_a_global_rank_is_placed_by_the_live_jobs_world_not_an_ended_larger_one(pipeline, mode):
    """As ``test_one_fault_seen_by_a_tensor_and_a_data_parallel_group_is_one_incident``, but two hours before, an
    ended job W of 8 ranks held n1's and n2's GPUs, its global rank 2 on n2's GPU 1. ``rules._global_gpu`` took the
    largest communicator holding rank 2 of any time, W's world, whose GPUs on n2 cover the line's groups': the DP
    group's timeout ("[rank2]: … [Rank 1]") was put on GPU 1 and filtered to the TP group there, a hang apart from
    the GPU fallen off the bus (a break-it pass). Only the communicators live on the host when the line began
    place it: one incident, as without W."""
    day = T0 + timedelta(days=1)
    fault = day + timedelta(hours=3)
    old = "0x9999000000000009"
    before = day - timedelta(hours=2)
    logs: dict[str, list[str]] = {
        "n1": [init(before, "n1", 50, 0, 8, old, gpu=0), init(before, "n1", 51, 1, 8, old, gpu=1)],
        "n2": [init(before, "n2", 52, 2, 8, old, gpu=1), init(before, "n2", 53, 3, 8, old, gpu=0)]}
    _tp_dp_job_whose_gpu_falls(pipeline, logs, day, fault, mode)


@pytest.mark.parametrize("backlog", [12, 40])
def test_a_host_that_ships_a_backlog_larger_than_its_live_lines_keeps_its_clock(pipeline, backlog):
    """n1's log shipper was down for three hours: on restart it ships ``backlog`` old lines (one-rank jobs' init
    lines, one per 4 minutes, appended at once, 1 – 3 h after they were written), then its live lines, fewer than
    the backlog, arrive a second after they are written, as the other hosts' do. n1's GPU falls off the bus and the
    other three ranks of its job time out. The median of n1's (append − line time) was the backlog's: its clock read
    1 – 2 h behind, its Xid's incident carried that offset (its timeline and its resolve time moved hours away from
    the fleet's) and the 300 s bound, and the stream, which forgets the old lines, read another clock than the batch.
    The batch (``diagnose``) and the flushed stream give one incident, n1's Xid the initiator of the three ranks'
    timeouts, n1's offset and bound within the live lines' second, and the same clocks."""
    comm = "0x00000000000000aa"
    ship = T0 + timedelta(hours=3)  # the shipper's restart: the backlog, written from T0 on, appended now
    old = [init(T0 + timedelta(minutes=4 * k % 120), "n1", 900 + k, 0, 1, f"0x00000000000003{k:02x}", gpu=1)
           for k in range(backlog)]
    start = ship + timedelta(minutes=1)
    xid = start + timedelta(minutes=10)
    hang = xid + timedelta(seconds=600, milliseconds=30)  # the collective began at the Xid
    feeds = [(ship, {"n1": old})]
    feeds += [(start + timedelta(seconds=1), {f"n{r + 1}": [init(start, f"n{r + 1}", 100 + r, r, 4, comm)]
                                              for r in range(4)})]
    for k in range(1, 5):  # every host goes on logging, live: one-rank jobs on its other GPU
        t = start + timedelta(minutes=2 * k)
        feeds.append((t + timedelta(seconds=1), {f"n{h}": [init(t, f"n{h}", 500 + 10 * k + h, 0, 1,
                                                                f"0x0000000000{h:02x}{k:04x}", gpu=1)]
                                                 for h in (1, 2, 3, 4)}))
    feeds.append((xid + timedelta(seconds=1), {"n1": [fallen(xid)]}))
    feeds.append((hang + timedelta(seconds=1), {f"n{r + 1}": [timeout(hang, r)] for r in (1, 2, 3)}))
    sc = StreamCorrelator()
    got, want = _stream_and_batch(pipeline, feeds, hang + timedelta(hours=2), sc)
    for incs in (got, want):
        (inc,) = [x for x in incs if x["initiator"].get("host") == "n1" and x["initiator"].get("xid") == 79]
        assert sorted(d["host"] for d in inc["downstream"]) == ["n2", "n3", "n4"], inc["downstream"]
        assert abs(inc["clocks"]["n1"]["offset_s"]) <= 1 and inc["clocks"]["n1"]["skew_bound_s"] <= 2, inc["clocks"]
        assert inc["status"] == "resolved"
    assert [x["clocks"] for x in got if x["initiator"].get("xid") == 79] == [
        x["clocks"] for x in want if x["initiator"].get("xid") == 79]
