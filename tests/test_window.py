"""Window, skew and lateness semantics (correlate/window.py) with explicit timestamps (µs)."""

from __future__ import annotations

import orjson
import pytest
from hypothesis import given, settings, strategies as st

from correlate.cluster import components
from correlate.incident import member_ids
from correlate.model import Ev
from correlate.rules import default_rules
from correlate.stream import StreamCorrelator
from correlate.topology import Topology
from correlate.model import follow_watchdogs
from correlate.window import Clocks, Watermark, may_cause, not_after, tolerance, within

S = 1_000_000


def ev(eid: str, host: str, ts: int, *, precision: int = 1, elapsed_ms: int | None = None, kind="xid",
       xid=79, device="0000:01:00.0") -> Ev:
    return Ev(event_id=eid, ts=ts, ts_basis="line", host=host, source="dmesg", kind=kind, signature="xid",
              severity="critical", device_type="gpu", device=device, link=None, xid=xid, sxid=None, peer=None,
              rank=None, nranks=None, comm=None, message="m", precision_us=precision, elapsed_ms=elapsed_ms)


CLOCKS = Clocks(skew_us={"a": 2 * S, "b": 1 * S}, default_skew_us=0)


def test_same_host_shares_a_clock():
    a, b = ev("1", "a", 0), ev("2", "a", 10 * S + 2)
    assert tolerance(a, b, 10 * S, CLOCKS) == 10 * S + 2  # window + both resolutions, no skew
    assert within(a, b, 10 * S, CLOCKS)
    assert not within(a, ev("3", "a", 10 * S + 3), 10 * S, CLOCKS)


def test_skew_exactly_at_the_bound():
    a = ev("1", "a", 0)
    at = ev("2", "b", 10 * S + 3 * S + 2)  # W + skew(a) + skew(b) + r1 + r2
    past = ev("3", "b", 10 * S + 3 * S + 3)
    assert within(a, at, 10 * S, CLOCKS)
    assert not within(a, past, 10 * S, CLOCKS)


def test_a_time_the_cloud_states_takes_no_skew_of_its_hosts_clock():
    """An Azure notice is placed at its NotBefore (``details.occurs_us``; or a later notice's, ``Ev.reschedule``), the
    cloud's time, UTC: its host's skew bound does not widen its window to a peer's event (with a bound of 300 s a
    peer's reset 200 s past the window was tied to it, a defect pass); the peer's own bound still does. Its line
    time (``ts``) is the host's, as any line's."""
    notice = Ev(event_id="n", ts=0, ts_basis="line", host="a", source="nccl", kind="other",
                signature="azure.scheduled_event_notice", severity="warning", device_type=None, device=None,
                link=None, xid=None, sxid=None, peer=None, rank=None, nranks=None, comm=None, message="m",
                details={"occurs_us": 30 * S, "occurs_at": "Fri, 20 Nov 2026 10:05:02 GMT"})
    reset = ev("r", "b", 30 * S)
    assert notice.cloud_timed and not reset.cloud_timed
    assert tolerance(notice, reset, 10 * S, CLOCKS) == 10 * S + S + 1 + 1 * S  # window, both precisions, b's skew
    assert tolerance(ev("l", "a", 30 * S), reset, 10 * S, CLOCKS) == 10 * S + 2 + 3 * S
    notice.reschedule(40 * S)
    assert notice.cloud_timed and tolerance(reset, notice, 10 * S, CLOCKS) == 10 * S + 1 + 1 + 1 * S


def test_second_resolution_widens_the_bound():
    a = ev("1", "a", 0, precision=S)
    b = ev("2", "a", 11 * S, precision=S)
    assert within(a, b, 9 * S, CLOCKS) and not within(a, ev("3", "a", 11 * S + 1, precision=S), 9 * S, CLOCKS)


def test_watchdog_timeout_joins_at_its_implied_start():
    fault = ev("1", "a", 100 * S)
    timeout = ev("2", "a", 100 * S + 600 * S + 20_000, elapsed_ms=600_020, kind="nccl_timeout", xid=None)
    assert timeout.start == 100 * S
    assert within(fault, timeout, 1 * S, CLOCKS)


def test_cause_may_look_later_only_by_clock_uncertainty():
    effect = ev("1", "b", 100 * S)
    assert not_after(ev("2", "a", 100 * S + 3 * S + 2), effect, CLOCKS)
    assert not not_after(ev("3", "a", 100 * S + 3 * S + 3), effect, CLOCKS)


def test_a_fault_after_the_collective_began_may_cause_its_timeout():
    """The implied start is when the collective began; the device may fail while it runs (here 3 s later,
    on another host), but not after the timeout was printed."""
    timeout = ev("2", "b", 700 * S, elapsed_ms=600_000, kind="nccl_timeout", xid=None)
    assert may_cause(ev("1", "a", 103 * S, precision=S), timeout, 120 * S, CLOCKS)
    assert not not_after(ev("1", "a", 103 * S + 10 * S), timeout, CLOCKS)  # the old test said no
    assert not may_cause(ev("3", "a", 701 * S + 4 * S), timeout, 1000 * S, CLOCKS)
    plain = ev("4", "b", 100 * S, kind="nccl_error", xid=None)
    assert not may_cause(ev("5", "a", 110 * S), plain, 120 * S, CLOCKS)


def test_a_cause_timed_only_by_its_file_may_precede_by_any_amount():
    effect = ev("1", "b", 100 * S, kind="nccl_error", xid=None)
    late = ev("2", "a", 700 * S, kind="ib_port", xid=None)
    assert not may_cause(late, effect, 60 * S, CLOCKS)
    late.details["ts_upper_bound"] = True
    assert may_cause(late, effect, 60 * S, CLOCKS)
    early = ev("3", "a", 10 * S, kind="ib_port", xid=None)
    early.details["ts_upper_bound"] = True
    assert not may_cause(early, effect, 60 * S, CLOCKS)  # even its latest time is too early


def test_lines_after_a_watchdog_timeout_share_its_implied_start():
    def rank_ev(eid, ts, rank, *, elapsed=None, seq=None, kind="nccl_timeout"):
        e = ev(eid, "a", ts, elapsed_ms=elapsed, kind=kind, xid=None, device=None)
        e.source, e.rank, e.seq = "nccl", rank, seq
        return e

    timeout = rank_ev("t", 700 * S, 3, elapsed=600_000, seq=42)
    exc = rank_ev("x", 700 * S + 300, 3, seq=42)
    down = rank_ev("d", 700 * S + 350, 3, kind="nccl_error")
    other_rank = rank_ev("o", 700 * S + 300, 4, seq=42)
    other_seq = rank_ev("s", 700 * S + 300, 3, seq=43)
    much_later = rank_ev("l", 720 * S, 3)
    evs = [exc, down, other_rank, other_seq, much_later, timeout]
    follow_watchdogs(evs)
    assert [e.start for e in evs] == [100 * S, 100 * S, 700 * S + 300, 700 * S + 300, 720 * S, 100 * S]
    # like the timeout itself, a follow-up line may be caused by a fault after the collective began
    fault = ev("f", "a", 102 * S, precision=S)
    assert may_cause(fault, exc, 120 * S, CLOCKS) and may_cause(fault, timeout, 120 * S, CLOCKS)


def test_a_pytorch_follow_up_line_that_prints_no_rank_follows_its_hosts_timeout():
    """Older PyTorch prints "[E ProcessGroupNCCL.cpp:471] Some NCCL operations have failed or timed out. …" with no
    rank after its ranks' watchdog timeouts (ai2cm/ace#348): it was an incident of its own 30 minutes after the
    collective the timeouts place (a real-logs pass). It follows a timeout of any rank of its host logged at most
    five seconds before it, or of the same time and earlier in the log; an NCCL WARN, which names no rank either,
    does not; nor does a line of another host or before the timeout."""
    def line(eid, ts, rank, order, *, elapsed=None, sig="torch.taking_down", host="a"):
        e = ev(eid, host, ts, elapsed_ms=elapsed, kind="nccl_timeout" if elapsed else "nccl_error", xid=None,
               device=None)
        e.source, e.rank, e.signature, e.order, e.pos = "nccl", rank, sig, order, order  # pos: the log's order
        return e

    timeout = line("t", 700 * S, 3, 1, elapsed=1_800_000, sig="torch.watchdog_timeout")
    down = line("d", 700 * S, None, 2)
    warn = line("w", 700 * S, None, 3, sig="nccl.warn")
    elsewhere = line("e", 700 * S, None, 4, host="b")
    before = line("b", 700 * S, None, 0)
    late = line("l", 706 * S, None, 5)
    evs = [down, warn, elsewhere, before, late, timeout]
    follow_watchdogs(evs)
    assert [e.start for e in evs] == [-1100 * S, 700 * S, 700 * S, 700 * S, 706 * S, -1100 * S]


def test_a_crash_signal_follows_the_watchdog_abort_of_its_own_process_not_the_latest_of_its_host():
    """PyTorch's watchdog takes each rank's process down on an NCCL error ("we are taking the entire process down",
    ``model.WATCHDOG_ABORTS``) and abort()'s SIGABRT follows, up to two minutes later after its debug dump. With two
    ranks of one host aborting 100 s apart, rank 3's SIGABRT took rank 2's abort, the latest on the host, as its
    start (a defect pass: Ray's "(RayWorkerWrapper pid=4823) … *** SIGABRT received at time=… ***", vllm-project/
    vllm#13136, after snowflakedb/ArcticTraining#219's lines). It follows its own process's: the same pid (a Ray or
    vLLM label, glog's "received by PID") or rank when both lines name one; the latest of the host when they do not."""
    def line(eid, ts, sig, *, rank=None, pid=None, host="a"):
        e = ev(eid, host, ts, kind="other" if sig == "absl.fatal_signal" else "nccl_error", xid=None, device=None)
        e.source, e.signature, e.rank, e.pid = "nccl", sig, rank, pid
        return e

    mine = line("3", 100 * S, "torch.taking_down", rank=3, pid=4823)
    other = line("2", 200 * S, "torch.taking_down", rank=2, pid=4824)
    by_pid = line("c", 210 * S, "absl.fatal_signal", pid=4823)
    by_rank = line("r", 210 * S, "absl.fatal_signal", rank=3)
    unnamed = line("u", 210 * S, "absl.fatal_signal")
    stranger = line("s", 210 * S, "absl.fatal_signal", pid=9999)
    evs = [mine, other, by_pid, by_rank, unnamed, stranger]
    follow_watchdogs(evs)
    assert [e.start for e in (by_pid, by_rank, unnamed, stranger)] == [100 * S, 100 * S, 200 * S, 210 * S]


def test_components_out_of_order_duplicates_and_empty():
    rules = default_rules()
    topo = Topology()
    evs = [ev("3", "a", 50 * S), ev("1", "a", 0), ev("2", "a", 60 * S), ev("9", "a", 100_000 * S)]
    comps = components(list(reversed(evs)), rules.links, topo, Clocks())
    assert [[e.event_id for e in c] for c in comps] == [["1", "3", "2"], ["9"]]
    assert components([], rules.links, topo, Clocks()) == []


def test_watermark_close_and_lateness():
    wm = Watermark()
    clocks = Clocks(default_skew_us=2 * S)
    assert wm.value(clocks) is None and not wm.closed(0, S, clocks)
    wm.observe(100 * S)
    wm.observe(50 * S)  # out of order: the watermark does not go back
    assert wm.value(clocks) == 98 * S
    assert wm.closed(97 * S - 1, S, clocks) and not wm.closed(97 * S, S, clocks)
    assert wm.too_late(98 * S - 10 * S - 1, 10 * S, clocks) and not wm.too_late(88 * S, 10 * S, clocks)


def _table(evs):
    from ingest.pipeline import to_table
    from schemas.events import EVENTS_SCHEMA

    rows = [{"event_id": e.event_id, "ts": e.ts, "ts_basis": "line", "host": e.host, "source": "dmesg",
             "kind": e.kind, "signature": "xid", "severity": e.severity, "device_type": "gpu",
             "device": e.device, "xid": e.xid, "message": f"NVRM: Xid {e.xid}", "ts_precision_us": 1,
             "count": 1, "origin": e.origin or f"t:{e.event_id}", "elapsed_ms": e.elapsed_ms, "rank": e.rank}
            for e in evs]
    return to_table(rows, EVENTS_SCHEMA)


def test_stream_emits_when_closed_versions_late_evidence_and_drops_too_late():
    sc = StreamCorrelator(lateness_us=600 * S, close_after_us=10 * S, idle_us=60 * S)
    sc.settings.clocks = Clocks(default_skew_us=0)
    sc.add(_table([ev("a1", "h1", 1000 * S)]), now_us=0)
    assert sc.step(now_us=0) == []  # window still open
    # another host running ahead does not close h1's window: each host has its own watermark
    sc.add(_table([ev("b1", "h2", 5000 * S, device="0000:02:00.0")]), now_us=1 * S)
    assert [i["initiator"]["host"] for i in sc.step(now_us=1 * S)] == []
    # h1's own later event (a separate incident, 200 s later) moves h1's watermark past a1 + 10 s
    sc.add(_table([ev("a9", "h1", 1200 * S, device="0000:05:00.0")]), now_us=2 * S)
    out = sc.step(now_us=2 * S)
    assert [(i["version"], i["initiator"]["host"]) for i in out] == [(1, "h1")]
    first_id = out[0]["id"]
    # late evidence within the lateness for h1's incident: a new version, same id
    sc.add(_table([ev("a2", "h1", 1005 * S, xid=74, device="0000:03:00.0")]), now_us=3 * S)
    out = sc.step(now_us=3 * S)
    again = [i for i in out if i["id"] == first_id]
    assert again and again[0]["version"] == 2
    # a host that went silent: its incident closes after idle_us of processing time
    assert all(i["initiator"]["host"] != "h2" for i in out)
    out = sc.step(now_us=62 * S)
    assert "h2" in [i["initiator"]["host"] for i in out]
    # far too late: counted, not used
    assert sc.add(_table([ev("z", "h1", 100 * S, device="0000:09:00.0")])) == 1 and sc.late_events == 1
    # a duplicate delivery changes nothing
    sc.add(_table([ev("a2", "h1", 1005 * S, xid=74, device="0000:03:00.0")]))
    assert all(i["id"] != first_id for i in sc.step(now_us=62 * S))


def test_lateness_is_judged_within_one_input_partition():
    """One host's events in two partitions of the events topic (kernel lines keyed by host, NCCL lines by
    communicator), read one partition after the other as a correlator replays after a rebalance: the
    host's earlier lines in the second partition are not late, because lateness is judged against the
    host's events of the same partition; behind those, they are."""
    def fresh():
        sc = StreamCorrelator(lateness_us=300 * S, close_after_us=10 * S, idle_us=60 * S)
        sc.settings.clocks = Clocks(default_skew_us=0)
        return sc

    later, earlier = ev("x", "h1", 2000 * S), ev("i", "h1", 1000 * S, device="0000:02:00.0")
    sc = fresh()
    assert sc.add(_table([later]), source="events/0") == 0
    assert sc.add(_table([earlier]), source="events/1") == 0 and set(sc.events) == {"x", "i"}
    assert sc.add(_table([ev("j", "h1", 1100 * S, device="0000:03:00.0")]), source="events/0") == 1
    sc = fresh()  # one ordered input (no source): the same earlier line is too late
    sc.add(_table([later]))
    assert sc.add(_table([earlier])) == 1 and set(sc.events) == {"x"}
    # one consumer of the raw topics (`firstfault run`): the host's NCCL lines (their own topic) behind its
    # kernel lines are not late either; behind the host's own NCCL lines, they are
    sc = fresh()
    later.origin, earlier.origin = "kafka:fleet.dmesg/3/90:0", "kafka:fleet.nccl/1/12:0"
    sc.add(_table([later]))
    assert sc.add(_table([earlier])) == 0
    behind = ev("k", "h1", 600 * S, device="0000:04:00.0")
    behind.origin = "kafka:fleet.nccl/1/13:0"
    assert sc.add(_table([behind])) == 1


def test_an_incident_whose_evidence_spans_hours_is_emitted_whole():
    """Evidence hours apart on one host (an ECC event, then a volatile ECC count read 9 h later, linked by the
    24 h ``ecc`` rule) arriving together: the old event is past the prune horizon, but its incident has not
    been emitted yet, so it stays and the incident starts at it."""
    sc = StreamCorrelator(lateness_us=300 * S, close_after_us=10 * S, idle_us=60 * S)
    sc.settings.clocks = Clocks(default_skew_us=0)
    old = ev("e1", "h1", 1000 * S, kind="ecc", xid=None)
    new = ev("e2", "h1", 1000 * S + 9 * 3600 * S, kind="ecc", xid=None)
    sc.add(_table([old, new]), now_us=0)
    assert sc.step(now_us=0) == []  # open: h1's watermark has not passed the last event
    (inc,) = sc.step(now_us=61 * S)  # h1 went quiet
    assert inc["start"].startswith("1970-01-01T00:16:40") and inc["version"] == 1
    # once emitted it stays whole: the steps after it (which prune old events) neither split it nor supersede it
    assert sc.step(now_us=200 * S) == [] and sc.step(now_us=400 * S) == []
    assert set(sc.events) == {"e1", "e2"}
    # its events are forgotten together, once the newest of them is past the horizon
    sc.add(_table([ev("e3", "h1", 1000 * S + 12 * 3600 * S, kind="other", xid=None, device="0000:09:00.0")]),
           now_us=500 * S)
    assert all(i.get("status") != "superseded" for i in sc.step(now_us=500 * S))
    assert "e1" not in sc.events and "e2" not in sc.events


def test_a_watchdog_timeout_printed_now_is_on_time_and_keeps_its_incident_open():
    """Lateness and closing go by the time a line was written: a timeout that reports a collective begun
    600 s ago is neither too late nor closes its incident at once; the other ranks' timeouts, printed a
    second later, join the same incident."""
    sc = StreamCorrelator(lateness_us=300 * S, close_after_us=10 * S, idle_us=60 * S)
    sc.settings.clocks = Clocks(default_skew_us=0)

    def timeout(eid, ts, rank):
        e = ev(eid, "h1", ts, elapsed_ms=600_000, kind="nccl_timeout", xid=None, device=None)
        e.rank = rank
        return e

    def members(inc):
        return sorted(inc["initiator"].get("events", []) + [x for d in inc["downstream"] for x in d["events"]])

    sc.add(_table([ev("n", "h1", 5000 * S, kind="other", xid=None, device="0000:05:00.0")]), now_us=0)
    assert sc.add(_table([timeout("t1", 5001 * S, 1)]), now_us=0) == 0  # on time, though it began at 4401 s
    assert all("t1" not in members(i) for i in sc.step(now_us=0))  # not closed: written a moment ago
    sc.add(_table([timeout("t2", 5002 * S, 2)]), now_us=1 * S)
    sc.add(_table([ev("m", "h1", 5100 * S, kind="other", xid=None, device="0000:06:00.0")]), now_us=2 * S)
    out = [i for i in sc.step(now_us=2 * S) if "t1" in members(i)]
    assert len(out) == 1 and "t2" in members(out[0]) and out[0]["version"] == 1


def test_skew_is_estimated_from_kafka_append_time():
    from correlate.window import estimate_skew

    evs = []
    # c's clock runs 5 s behind, d's 2.3 s
    for h, off in (("a", 0), ("b", 0), ("e", 0), ("f", 0), ("c", 5 * S), ("d", 2_300_000)):
        for k in range(6):
            e = ev(f"{h}{k}", h, 1000 * S + k * S - off)
            e.origin, e.ingest_ts = f"kafka:t/0/{k}:0", 1000 * S + k * S + 100_000  # 0.1 s shipping delay
            evs.append(e)
    est = estimate_skew(evs)
    assert est["a"] == 0 and est["b"] == 0 and est["c"] == 5 * S
    assert est["d"] == 3 * S  # rounded up to whole seconds: steady from one event to the next, never narrower
    clocks = Clocks(default_skew_us=2 * S, skew_us={"b": S}).with_estimates(est)
    assert (clocks.skew("a"), clocks.skew("b"), clocks.skew("c")) == (2 * S, S, 5 * S)
    # the offsets: c's lines move 5 s forward; a host whose lines are years old (logs replayed: the demo's samples
    # of 2023) has none, not an offset of years (a fresh user's trial), and no bound: the default applies, as to the
    # same lines read from files, whatever live hosts are read beside it (it took the cap beside them: a fresh user's
    # trial saw an old incident stored again, its clocks alone changed)
    from correlate.window import SKEW_CAP_US, estimate_clocks

    for k in range(6):
        e = ev(f"g{k}", "g", 1000 * S + k * S - 3 * 365 * 86400 * S)
        e.origin, e.ingest_ts = f"kafka:t/0/{k}:0", 1000 * S + k * S + 100_000
        evs.append(e)
    for k in range(6):  # a clock ten minutes behind keeps its offset past the skew cap (a break-it pass)
        e = ev(f"m{k}", "m", 1000 * S + k * S - 600 * S)
        e.origin, e.ingest_ts = f"kafka:t/0/{k}:0", 1000 * S + k * S + 100_000
        evs.append(e)
    skew, offsets = estimate_clocks(evs)
    assert offsets["c"] - offsets["a"] == 5 * S and "g" not in offsets and "g" not in skew
    assert estimate_clocks([e for e in evs if e.host in ("g", "a")]) == ({}, {})  # one live host: no fleet
    assert offsets["m"] - offsets["a"] == 600 * S and skew["m"] == SKEW_CAP_US
    # files carry no append time: no estimate
    for e in evs:
        e.origin = "file:x:1"
    assert estimate_skew(evs) == {}


def test_any_arrival_order_gives_the_batch_incidents():
    """The corpus events, delivered in shuffled batches to the streaming correlator, end (after the
    flush) with the incidents the batch correlator gives: same ids, same content."""
    import random

    import pyarrow as pa

    from api.demo import SAMPLES
    from api.diagnose import diagnose_paths
    from correlate.correlator import correlate
    from schemas.settings import Settings

    _, batch, _ = diagnose_paths([SAMPLES], Settings())
    events = batch.events
    expected = {i["id"]: i for i in correlate(events, batch.link_samples, batch.topology, now_us=0)}
    strip = lambda i: {k: v for k, v in i.items() if k not in ("version", "status", "recurrence")}
    for seed in (1, 2, 3):
        rnd = random.Random(seed)
        order = list(range(events.num_rows))
        rnd.shuffle(order)
        sc = StreamCorrelator(lateness_us=10**15)  # within the lateness: every event still counts
        sc.add(events.schema.empty_table(), batch.link_samples, batch.topology)
        for k in range(0, len(order), 7):
            sc.add(events.take(pa.array(order[k:k + 7])))
            sc.step(now_us=0)
        sc.step(now_us=0, flush=True)
        final = {i: v[2] for i, v in sc.emitted.items() if v[2].get("status") != "superseded"}
        assert set(final) == set(expected), seed
        for i in final:
            assert strip(final[i]) == strip(expected[i]), (seed, i)


def test_stream_keeps_only_the_samples_and_facts_that_still_teach_the_topology(pipeline, tmp_path):
    """The streaming correlator keeps the newest sample / wiring fact of each key, not every one it saw:
    the topology it learns is the same as from all of them, and the tables stop growing with time."""
    import pyarrow as pa

    from benchmarks.simulate import generate
    from correlate.stream import _FACT_KEY, _SAMPLE_KEY, _latest
    from correlate.topology import build_topology
    from ingest.decode import Decoded, decode_file

    decoded = Decoded()
    for s in generate(12, seed=5).scenarios:
        for f in s.files:
            p = tmp_path / f"{s.sid}-{f.name}"
            p.write_bytes(f.data)
            d = decode_file(p, relname=p.name)
            decoded.segments.extend(d.segments)
    b = pipeline.run(decoded)
    samples = [b.link_samples, b.link_samples.slice(0, b.link_samples.num_rows // 2)]  # seen again, partly
    topo = [b.topology, b.topology]
    kept_s, kept_t = _latest(samples, _SAMPLE_KEY), _latest(topo, _FACT_KEY)
    assert kept_s.num_rows < sum(t.num_rows for t in samples) and kept_t.num_rows <= b.topology.num_rows
    full = build_topology([], pa.concat_tables(samples), pa.concat_tables(topo))
    lean = build_topology([], kept_s, kept_t)
    for attr in ("link_state", "model", "paths", "remote", "index_to_bus"):
        assert dict(getattr(full, attr)) == dict(getattr(lean, attr)), attr
    assert full.link_state  # the scenarios did teach something


def test_an_emitted_open_incident_is_emitted_again_resolved_when_it_goes_quiet():
    """``status`` follows the service's clock (``resolve_after_s``, 15 min by default): an incident emitted
    ``open`` (its last evidence minutes old) is emitted again, one version up, ``resolved`` once its last
    evidence is older than that — with no new event — and not again after that."""
    sc = StreamCorrelator(lateness_us=300 * S, close_after_us=10 * S, idle_us=60 * S)
    sc.settings.clocks = Clocks(default_skew_us=0)
    t = 1_796_000_000 * S
    sc.add(_table([ev("a1", "h1", t)]), now_us=t)
    (inc,) = sc.step(now_us=t + 61 * S)  # h1 quiet for 61 s: closed, evidence a minute old
    assert (inc["version"], inc["status"]) == (1, "open")
    assert sc.step(now_us=t + 10 * 60 * S) == []  # 10 min: still open, nothing changed
    (again,) = sc.step(now_us=t + sc.settings.resolve_after_us + 1 * S)
    assert (again["id"], again["version"], again["status"]) == (inc["id"], 2, "resolved")
    assert sc.step(now_us=t + 30 * 60 * S) == []


def test_idle_steps_are_skipped_until_a_time_they_depend_on_passes(monkeypatch):
    """A step after one that changed nothing, with no event added since, is skipped (``StreamCorrelator.steady``):
    a poll each second over 17 min of quiet correlates only at the steps where something is due — the incident
    held back is emitted at the first step past its host's ``idle_us``, and resolved at the first past
    ``resolve_after_us`` of its last evidence, the same steps, versions and statuses as a stream that correlates
    at every poll."""
    import correlate.stream as stream

    calls = []
    real = stream.correlate
    monkeypatch.setattr(stream, "correlate", lambda *a, **k: calls.append(k["now_us"]) or real(*a, **k))
    t = 1_796_000_000 * S

    def polled(skip: bool) -> list[tuple[int, int, str]]:
        sc = StreamCorrelator(lateness_us=300 * S, close_after_us=600 * S, idle_us=60 * S)
        sc.settings.clocks = Clocks(default_skew_us=0)
        sc.add(_table([ev("a1", "h1", t), ev("a2", "h1", t + 2 * S, xid=48)]), now_us=t)
        got = []
        for k in range(0, 17 * 60):
            if not skip:
                sc.steady = None
            got += [(k, i["version"], i["status"]) for i in sc.step(now_us=t + k * S)]
        return got

    every = polled(False)
    assert len(calls) == 17 * 60
    calls.clear()
    got = polled(True)
    resolve = StreamCorrelator().settings.resolve_after_us // S  # 15 min
    assert got == every == [(61, 1, "open"), (2 + resolve + 1, 2, "resolved")]
    # the first poll, the one after it (nothing changed: steady), then each step where a time was due and the one after
    assert calls == [t + k * S for k in (0, 1, 61, 62, 2 + resolve + 1, 2 + resolve + 2)]


def test_an_event_added_ends_a_steady_stream():
    """``add`` clears ``steady``: the step after it correlates, and a new fault of the quiet host is emitted."""
    sc = StreamCorrelator(lateness_us=300 * S, close_after_us=10 * S, idle_us=60 * S)
    sc.settings.clocks = Clocks(default_skew_us=0)
    t = 1_796_000_000 * S
    sc.add(_table([ev("a1", "h1", t)]), now_us=t)
    assert [i["version"] for i in sc.step(now_us=t + 61 * S)] == [1]
    assert sc.step(now_us=t + 62 * S) == [] and sc.steady is not None
    sc.add(_table([ev("b1", "h2", t + 63 * S, device="0000:02:00.0")]), now_us=t + 63 * S)
    assert sc.steady is None
    assert sc.step(now_us=t + 64 * S) == []  # held: h2 not quiet yet
    (new,) = sc.step(now_us=t + 124 * S)
    assert new["initiator"]["host"] == "h2"


def _persisting(sc: StreamCorrelator, t0: int, polls: int, every_s: int = 30) -> list[tuple[int, int, str, int]]:
    """Feed ``sc`` one Xid 74 of one GPU's link every ``every_s`` s, each in a batch of its own (a fault a host
    keeps reporting), stepping after each; returns (poll, version, status, events) of what each step emitted."""
    got = []
    for i in range(polls):
        t = t0 + i * every_s * S
        e = ev(f"p{i}", "h1", t, xid=74)
        e.link = 3
        sc.add(_table([e]), now_us=t)
        for inc in sc.step(now_us=t + 1 * S):
            got.append((i, inc["version"], inc["status"], len(member_ids(inc))))
    return got


def test_a_fault_that_persists_is_emitted_while_it_lasts():
    """A link that keeps failing (an Xid 74 every 30 s, one per Kafka batch) never goes quiet for the close
    window: its incident is emitted early, open, once its evidence went on for ``early_after_us`` (300 s) since
    the step that first held it, and again each further 300 s of evidence it gains (not at every poll); once the
    polls stop, the closed version holds every event, and the resolved one follows. Without early emission
    (``early_after_us=None``) nothing comes out while the fault lasts."""
    t0 = 1_796_000_000 * S

    def fresh(early):
        sc = StreamCorrelator(lateness_us=300 * S, close_after_us=120 * S, idle_us=120 * S, early_after_us=early)
        sc.settings.clocks = Clocks(default_skew_us=0)
        return sc

    sc = fresh(300 * S)
    got = _persisting(sc, t0, 40)
    # poll 10 is 300 s after poll 0, poll 20 300 s after poll 10: a version per 300 s of evidence
    assert got == [(10, 1, "open", 11), (20, 2, "open", 21), (30, 3, "open", 31)]
    end = t0 + 39 * 30 * S
    assert [(i["version"], i["status"], len(member_ids(i))) for i in sc.step(now_us=end + 121 * S)] == \
        [(4, "open", 40)]
    assert [(i["version"], i["status"]) for i in sc.step(now_us=end + sc.settings.resolve_after_us + S)] == \
        [(5, "resolved")]
    assert _persisting(fresh(None), t0, 40) == []
    # the setting, seconds -> µs: 0 is "only once quiet", anything above it early (a break-it pass: 1e-9 was None)
    from schemas.settings import Settings
    assert [Settings(early_after_s=v).early_after_us() for v in (0, 1e-9, 300)] == [None, 1, 300 * S]


def _simulated_batch(pipeline, tmp_path, n: int, seed: int):
    from benchmarks.simulate import generate
    from ingest.decode import Decoded, decode_file

    decoded = Decoded()
    for s in generate(n, seed=seed).scenarios:
        for f in s.files:
            p = tmp_path / f"{s.sid}-{f.name}"
            p.write_bytes(f.data)
            decoded.segments.extend(decode_file(p, relname=p.name).segments)
    return pipeline.run(decoded)


def test_attribution_cache_changes_no_step_of_the_stream(pipeline, tmp_path):
    """The streaming correlator reuses the attribution of candidate incidents that did not change
    (``correlator.AttributionCache``). Fed simulated fleets in shuffled batches, with their link samples and
    wiring facts arriving along the way (so hosts' topology changes mid-stream), every step emits exactly
    what a correlator that attributes everything afresh at each step emits; and the cache was used."""
    import random

    import pyarrow as pa

    from correlate.correlator import AttributionCache

    b = _simulated_batch(pipeline, tmp_path, 10, seed=11)
    rnd = random.Random(1)
    order = list(range(b.events.num_rows))
    rnd.shuffle(order)
    cached, fresh = StreamCorrelator(lateness_us=10**15), StreamCorrelator(lateness_us=10**15)
    cuts = range(0, len(order), 12)
    n_s, n_t = b.link_samples.num_rows, b.topology.num_rows
    for step, k in enumerate(cuts):
        part = step * n_s // len(cuts), (step + 1) * n_s // len(cuts)
        facts = step * n_t // len(cuts), (step + 1) * n_t // len(cuts)
        for sc in (cached, fresh):
            sc.add(b.events.take(pa.array(order[k:k + 12])), b.link_samples.slice(part[0], part[1] - part[0]),
                   b.topology.slice(facts[0], facts[1] - facts[0]))
        fresh.cache = AttributionCache()  # nothing kept: every candidate incident attributed again
        fresh.learned = None  # and the topology learned again
        now = (step + 1) * 30 * S
        assert cached.step(now_us=now) == fresh.step(now_us=now), step
    fresh.cache = AttributionCache()
    assert cached.step(now_us=10**12, flush=True) == fresh.step(now_us=10**12, flush=True)
    assert cached.cache.hits > cached.cache.misses > 0, (cached.cache.hits, cached.cache.misses)
    assert fresh.cache.hits == 0


def test_attribution_cache_reattributes_the_hosts_whose_topology_changed():
    """A cached attribution is reused only while its hosts' topology facts and skew bounds are unchanged:
    a link sample about one host re-attributes that host's candidate incidents, not the others'."""
    import pyarrow as pa

    from correlate.correlator import AttributionCache, correlate
    from schemas.samples import LINK_SAMPLES_SCHEMA

    evs = [ev("a1", "a", 1000 * S, xid=74), ev("b1", "b", 5000 * S, xid=74)]
    cache = AttributionCache()
    first = correlate(evs, now_us=0, cache=cache)
    assert len(first) == 2 and (cache.hits, cache.misses) == (0, 2)
    assert correlate(evs, now_us=0, cache=cache) == first and (cache.hits, cache.misses) == (2, 2)
    row = {f.name: None for f in LINK_SAMPLES_SCHEMA}
    row.update(host="a", ts=1000 * S, device="0000:01:00.0", link=3, state="inactive", model="NVIDIA H100 80GB HBM3",
               origin="file:a-nvlink.txt:4")
    samples = pa.Table.from_pylist([row], schema=LINK_SAMPLES_SCHEMA)
    again = correlate(evs, samples, now_us=0, cache=cache)
    assert (cache.hits, cache.misses) == (3, 3)  # b reused, a attributed again
    assert again == correlate(evs, samples, now_us=0)


def test_host_facts_hold_every_per_host_field_of_the_topology():
    """``Topology.host_facts`` is what the attribution cache compares: a change to any per-host table of the
    topology (every field but the fleet config) shows in the facts of that host only."""
    from dataclasses import fields

    def topo() -> Topology:
        t = Topology()
        t.link_state[("h", "0000:01:00.0")][0] = "up"
        t.model[("h", "0000:01:00.0")] = "NVIDIA A100-SXM4-80GB"
        t.paths[("h", "gpu0")]["GPU1"] = "NV12"
        t.remote[("h", "0000:01:00.0", 0)] = ("0000:02:00.0", 1)
        t.index_to_bus[("h", 0)] = "0000:01:00.0"
        t.comm_ranks["c1"][0] = ("h", "0000:01:00.0")
        t.comm_size["c1"] = 2
        t.uuid_gpu[("h", "GPU-3b6ec030-5adc-1847-e155-79f635584b4e")] = "0000:01:00.0"
        return t

    change = {
        "link_state": lambda t: t.link_state[("h", "0000:01:00.0")].__setitem__(0, "inactive"),
        "model": lambda t: t.model.__setitem__(("h", "0000:01:00.0"), "NVIDIA H100 80GB HBM3"),
        "paths": lambda t: t.paths[("h", "gpu0")].__setitem__("GPU1", "PIX"),
        "remote": lambda t: t.remote.__setitem__(("h", "0000:01:00.0", 0), ("0000:03:00.0", 1)),
        "index_to_bus": lambda t: t.index_to_bus.__setitem__(("h", 0), "0000:09:00.0"),
        "comm_ranks": lambda t: t.comm_ranks["c1"].__setitem__(1, ("other", None)),
        "comm_size": lambda t: t.comm_size.__setitem__("c1", 3),
        "comm_span": lambda t: t.comm_span.__setitem__(("c1", "h"), (None, 5_000_000)),
        "comm_logs": lambda t: t.comm_logs.__setitem__(("c1", "h"), {"file:h.jobB.log@0f0f0f0f"}),
        "comm_first": lambda t: t.comm_first.__setitem__(("c1", "h"), 5_000_000),
        "uuid_gpu": lambda t: t.uuid_gpu.__setitem__(("h", "GPU-3b6ec030-5adc-1847-e155-79f635584b4e"), "0000:09:00.0"),
    }
    def facts(t: Topology, host: str = "h") -> tuple:  # a host's facts and those of its communicators
        f = t.host_facts()[host]
        return f, [t.comm_facts()[c] for c in f[5]]

    # hosts (the fleet config), addr_hosts (whose host a peer's address names: any host) and cut_files (the files read
    # in part: any silent rank's) are fleet-wide facts: AttributionCache.check compares them whole; the private
    # fields are indexes built from the others
    assert set(change) == {f.name for f in fields(Topology)} - {"hosts", "addr_hosts", "cut_files", "_comm_index",
                                                                 "_rank_index", "_comm_end"}
    base = facts(topo())
    assert set(topo().host_facts()) == {"h"}
    for name, fn in change.items():
        t = topo()
        fn(t)
        assert facts(t) != base, name
    t = topo()
    t.link_state[("g", "0000:01:00.0")][0] = "up"
    assert facts(t) == base  # another host's facts leave h's alone


def test_attribution_cache_numbers_each_hosts_facts_once_per_call():
    """``AttributionCache.check`` numbers each host's facts once per call (a communicator of thousands of ranks
    is compared once, not once per candidate incident on its hosts): a host keeps its number while its facts
    and its communicators' are unchanged; a changed communicator renumbers the hosts it has ranks on only;
    a fleet config edited in place drops the entries (it is compared by value)."""
    import copy

    from correlate.correlator import AttributionCache
    from correlate.topology import HostConfig
    from ingest.catalog import default_catalog

    rules, catalog = default_rules(), default_catalog()
    t = Topology(hosts={"a": HostConfig(domain="d")})
    for r in range(5000):
        t.comm_ranks["big"][r] = (f"h{r % 50}", None)
    t.comm_ranks["small"][0] = ("x", None)
    cache = AttributionCache()
    first = cache.check(rules, catalog, t)
    assert set(first) == {f"h{i}" for i in range(50)} | {"x"}
    numbered = cache.numbered
    assert cache.check(rules, catalog, t) == first and cache.numbered == numbered  # the same topology object
    assert cache.check(rules, catalog, copy.deepcopy(t)) == first  # an equal one: compared, numbers kept
    t = copy.deepcopy(t)  # a topology is learned afresh, not changed in place (StreamCorrelator._learn)
    t.comm_ranks["small"][1] = ("y", None)  # a rank joins the small communicator: x and y only
    again = cache.check(rules, catalog, t)
    assert again["x"] != first["x"] and "y" in again and all(again[f"h{i}"] == first[f"h{i}"] for i in range(50))
    cache.scenes[("k",)] = None  # type: ignore[assignment]  (any entry)
    t.hosts["a"].domain = "e"  # the fleet config, edited in place (the same topology object)
    cache.check(rules, catalog, t)
    assert cache.scenes == {}


def test_a_late_earlier_event_supersedes_the_incident_it_joins_and_no_other():
    """A late line older than an emitted incident's first event makes a new incident (its first event names
    it); the emitted one gets a last version ``superseded`` naming it. An incident sharing no event with the new
    one is left alone, and incidents emitted together in one step never supersede each other."""
    sc = StreamCorrelator(lateness_us=3600 * S, close_after_us=10 * S, idle_us=60 * S)
    sc.settings.clocks = Clocks(default_skew_us=0)
    hosts = [f"h{i}" for i in range(50)]
    sc.add(_table([ev(f"x{i}", h, 1000 * S) for i, h in enumerate(hosts)]), now_us=0)
    first = sc.step(now_us=0, flush=True)
    assert len(first) == 50 and {i["version"] for i in first} == {1}
    assert all(i.get("status") != "superseded" for i in first)
    old = {i["initiator"]["host"]: i["id"] for i in first}
    sc.add(_table([ev("early", "h7", 990 * S)]), now_us=0)  # h7's GPU, 10 s before its emitted incident
    out = sc.step(now_us=0, flush=True)
    (gone,) = [i for i in out if i.get("status") == "superseded"]
    (new,) = [i for i in out if i.get("status") != "superseded"]
    assert gone["id"] == old["h7"] and gone["version"] == 2 and gone["superseded_by"] == new["id"] != old["h7"]
    assert new["initiator"]["host"] == "h7" and new["version"] == 1
    assert {"early", "x7"} <= set(new["initiator"]["events"])
    # the other 49 are unchanged: nothing emitted for them, and they stay live
    live = {i: v[2] for i, v in sc.emitted.items() if v[2].get("status") != "superseded"}
    assert set(live) == (set(old.values()) - {old["h7"]}) | {new["id"]}


def test_an_incident_emitted_again_without_an_event_is_not_superseded_by_the_one_that_took_it():
    """Incident A = {Xid F1, context line C}; a late Xid F2 on another GPU of the host, nearer to C, takes C: A is
    emitted again without C and B = {F2, C} is new. A still holds F1, so it stays open (the index of emitted
    incidents' events forgets what A's earlier version held; it once marked A superseded by B)."""
    from ingest.pipeline import to_table
    from schemas.events import EVENTS_SCHEMA

    def row(eid, ts, kind, sev, dev="0000:01:00.0"):
        return {"event_id": eid, "ts": ts, "ts_basis": "line", "host": "h0", "source": "dmesg", "kind": kind,
                "signature": kind, "severity": sev, "device_type": "gpu", "device": dev,
                "xid": 79 if kind == "xid" else None, "message": eid, "ts_precision_us": 1, "count": 1,
                "origin": f"t:{eid}"}

    sc = StreamCorrelator(lateness_us=10**12, close_after_us=10 * S, idle_us=60 * S)
    sc.settings.clocks = Clocks(default_skew_us=0)
    sc.add(to_table([row("F1", 0, "xid", "critical"), row("C", 110 * S, "nccl_p2p_fallback", "info"),
                     row("X", 400 * S, "nccl_p2p_fallback", "info")], EVENTS_SCHEMA), now_us=1)
    (a,) = sc.step(now_us=1)
    sc.add(to_table([row("F2", 200 * S, "xid", "critical", dev="0000:02:00.0")], EVENTS_SCHEMA), now_us=2)
    out = sc.step(now_us=2, flush=True)
    assert [(i["id"] == a["id"], i["version"], i["status"]) for i in out] == [(True, 2, "open"), (False, 1, "open")]
    assert out[0]["initiator"]["events"] == ["F1"] and out[1]["initiator"]["events"] == ["F2"]


def test_a_line_stamped_far_ahead_of_its_arrival_does_not_move_its_hosts_watermark():
    """One kernel line stamped 2099 (a garbled stamp, a clock set wrong) sent through Kafka moved its host's
    watermark to 2099: every later line of the host was too late, and `run` made no incident of its Xid 79 (a
    break-it pass). A line further ahead of its Kafka append time than the allowed lateness plus the largest
    skew bound is kept and correlated but moves no watermark; one within that still does."""
    import pyarrow as pa

    def arrived(evs, at_us):
        t = _table(evs)
        i = t.schema.get_field_index("ingest_ts")
        return t.set_column(i, t.schema.field(i), pa.array([at_us] * len(evs), t.schema.field(i).type))

    sc = StreamCorrelator(lateness_us=300 * S, close_after_us=10 * S, idle_us=3600 * S)
    sc.settings.clocks = Clocks(default_skew_us=0)
    now = 1_800_000_000 * S
    assert sc.future_us() == 300 * S + 300 * S  # the lateness beyond the skew cap
    far = ev("far", "h1", now + 73 * 365 * 86400 * S, kind="pcie_aer", xid=None, device="0000:00:01.0")
    assert sc.add(arrived([far], now), now_us=now) == 0 and sc.future_events == 1
    assert sc.host_watermarks["h1"].max_ts == now and "far" in sc.events  # kept; h1's watermark at its arrival
    ahead = ev("ahead", "h1", now + 500 * S, device="0000:02:00.0")  # a clock 500 s fast: within 600 s
    fall = ev("fall", "h1", now + 2 * S)
    assert sc.add(arrived([ahead, fall], now + S), now_us=now + S) == 0 and sc.late_events == 0
    assert sc.host_watermarks["h1"].max_ts == now + 500 * S and sc.future_events == 1
    out = sc.step(now_us=now + 3 * S)
    assert [(i["initiator"]["device"], i["version"]) for i in out] == [("0000:01:00.0", 1)], out
    # a host whose clock runs an hour fast: its incident waits for the quiet of its input, not emitted at once with
    # half its evidence (a first cut left such a host no watermark, and a host without one counted as closed)
    fast = StreamCorrelator(lateness_us=300 * S, close_after_us=120 * S, idle_us=120 * S)
    fast.settings.clocks = Clocks(default_skew_us=0)
    fast.add(arrived([ev("x1", "h2", now + 3600 * S)], now), now_us=now)
    assert fast.step(now_us=now + S) == []
    fast.add(arrived([ev("x2", "h2", now + 3605 * S)], now + 5 * S), now_us=now + 5 * S)
    assert fast.step(now_us=now + 6 * S) == [] and fast.future_events == 2
    [inc] = fast.step(now_us=now + 5 * S + 121 * S)  # quiet for idle_us: closed, once, whole
    assert inc["version"] == 1 and len(member_ids(inc)) == 2


@pytest.mark.parametrize("call", ["restore", "add_cold", "add_older_facts"])
def test_what_a_correlate_worker_hands_a_steady_stream_ends_the_skipping(monkeypatch, call):
    """``restore``, ``add_cold`` (a worker's read-back of stored incidents' events) and ``add_older_facts`` (its read
    of a host's link samples, topology and clocks, after a back-off while its partitions are quiet) change what the
    next step correlates without an ``add``: each clears ``steady``, and that step correlates again."""
    import correlate.stream as stream

    calls = []
    real = stream.correlate
    monkeypatch.setattr(stream, "correlate", lambda *a, **k: calls.append(k["now_us"]) or real(*a, **k))
    sc = StreamCorrelator(lateness_us=300 * S, close_after_us=10 * S, idle_us=60 * S)
    sc.settings.clocks = Clocks(default_skew_us=0)
    t = 1_796_000_000 * S
    sc.add(_table([ev("a1", "h1", t)]), now_us=t)
    assert [i["version"] for i in sc.step(now_us=t + 61 * S)] == [1]
    assert sc.step(now_us=t + 62 * S) == [] and sc.steady == (t + 62 * S, t + sc.settings.resolve_after_us)
    assert sc.step(now_us=t + 63 * S) == [] and calls == [t + 61 * S, t + 62 * S]  # skipped
    {"restore": lambda: sc.restore([]), "add_cold": lambda: sc.add_cold(None, []),
     "add_older_facts": lambda: sc.add_older_facts(None, None)}[call]()
    assert sc.steady is None
    assert sc.step(now_us=t + 64 * S) == [] and calls[-1] == t + 64 * S


def _arrived(evs, basis: str = "kafka"):
    """``_table`` of ``evs`` whose lines printed no time: ``ts_basis`` ``basis``, each one's ``ingest_ts`` its ``ts``
    (a Kafka record's append time, µs)."""
    import pyarrow as pa

    t = _table(evs)
    for name, values in (("ts_basis", [basis] * len(evs)), ("ingest_ts", [e.ts for e in evs])):
        i = t.schema.get_field_index(name)
        t = t.set_column(i, t.schema.field(i), pa.array(values, t.schema.field(i).type))
    return t


@pytest.mark.parametrize("basis", ["kafka", "file"])
def test_a_host_whose_lines_print_no_time_is_emitted_once_quiet_not_at_once(basis):
    """A host whose lines print no time (raw Xid lines sent with ``firstfault send``: ``ts_basis`` ``kafka``, the
    append time) has no event-time watermark. A group of such a host counted as closed at once (no host of it had a
    watermark to test) and was emitted 0.2 s after its first line, then again as v2 with each later batch — each an
    update of the page — while docs/time.md says 2 – 3 min, as for a stamped host (a fresh-user trial). Its event
    time is its arrival: the group closes once processing time has passed its last event by ``close_after_us``, or
    the host has sent nothing for ``idle_us``; lines that keep coming with no such pause are emitted early, once
    they went on for ``early_after_us``."""
    sc = StreamCorrelator(lateness_us=300 * S, close_after_us=120 * S, idle_us=120 * S)
    sc.settings.clocks = Clocks(default_skew_us=0)
    now = 1_800_000_000 * S
    sc.add(_arrived([ev("k1", "k", now)], basis), now_us=now)
    assert sc.step(now_us=now + S) == []  # the demo's next tick: held
    sc.add(_arrived([ev("k2", "k", now + 20 * S, xid=74)], basis), now_us=now + 20 * S)
    assert sc.step(now_us=now + 21 * S) == [] and sc.step(now_us=now + 140 * S) == []  # 120 s after k2: not yet
    [inc] = sc.step(now_us=now + 141 * S)  # k2 is 121 s old: closed, once, whole
    assert (inc["version"], sorted(member_ids(inc))) == (1, ["k1", "k2"])
    assert sc.step(now_us=now + 200 * S) == []
    # the same lines every 30 s with no 120 s pause: emitted early, after 300 s of them, not with every batch
    chatty = StreamCorrelator(lateness_us=300 * S, close_after_us=120 * S, idle_us=120 * S)
    chatty.settings.clocks = Clocks(default_skew_us=0)
    got = []
    for i in range(15):
        t = now + i * 30 * S
        chatty.add(_arrived([ev(f"p{i}", "k", t, xid=74)], basis), now_us=t)
        got += [(i, inc["version"], len(member_ids(inc))) for inc in chatty.step(now_us=t + S)]
    assert got == [(10, 1, 11)]


@pytest.mark.parametrize("basis", ["kafka", "file"])
def test_a_backlog_of_lines_that_print_no_time_is_emitted_once_not_with_each_poll(basis):
    """A host's lines that print no time are timed by their arrival (``ts``: the Kafka append time), and so is how
    far its log has got: a consumer that reads a backlog of them (a restart, an ingest lag past ``close_after_us``)
    meets lines appended 10 min before it reads them. Judged closed by processing time, each poll's part of one
    fault was closed at once: three polls of two lines each were v1, v2 and v3 of one incident, each paged as an
    update (a break-it pass), where the same lines stamped come out once, whole. The host's log stands behind
    processing time by the delay its latest line was read with (``_unread_us``): the fault closes ``close_after_us``
    after its last line was read, or when a line appended ``close_after_us`` after its last comes."""
    now = 1_800_000_000 * S
    sc = StreamCorrelator(lateness_us=300 * S, close_after_us=120 * S, idle_us=120 * S)
    sc.settings.clocks = Clocks(default_skew_us=0)
    lines = [ev(f"k{i}", "k", now + i * S, xid=74 if i else 79) for i in range(6)]
    read = now + 600 * S  # appended 1 s apart from ``now``, read from 600 s on, two a poll
    got = []
    for p in range(3):
        sc.add(_arrived(lines[2 * p:2 * p + 2], basis), now_us=read + p * S)
        got += [(p, i["version"], len(member_ids(i))) for i in sc.step(now_us=read + p * S)]
    for k in range(3, 200):
        got += [(k, i["version"], len(member_ids(i))) for i in sc.step(now_us=read + k * S)]
    assert got == [(123, 1, 6)]  # close_after_us since its last line was read, as the same lines read live
    # read live, with close_after_us shorter than idle_us: closed close_after_us after its last line, not when idle
    live = StreamCorrelator(lateness_us=300 * S, close_after_us=15 * S, idle_us=120 * S)
    live.settings.clocks = Clocks(default_skew_us=0)
    got = []
    for k in range(40):
        if k < 6:
            live.add(_arrived(lines[k:k + 1], basis), now_us=now + k * S)
        got += [(k, i["version"], len(member_ids(i))) for i in live.step(now_us=now + k * S)]
    assert got == [(21, 1, 6)]  # the last line at 5 s
    if basis == "file":
        return  # a file's mtime dates none of its lines: a host's file-timed faults are one (_join_file_timed)
    # a line of the host appended past the last by close_after_us closes it at once, as a stamped host's does
    sc = StreamCorrelator(lateness_us=300 * S, close_after_us=120 * S, idle_us=120 * S)
    sc.settings.clocks = Clocks(default_skew_us=0)
    sc.add(_arrived(lines[:3], basis), now_us=read)
    assert sc.step(now_us=read) == []
    sc.add(_arrived([ev("later", "k", now + 130 * S, device="0000:05:00.0")], basis), now_us=read + S)
    assert [(i["version"], sorted(member_ids(i))) for i in sc.step(now_us=read + S)] == [(1, ["k0", "k1", "k2"])]


def test_an_incidents_communicators_stay_when_their_init_lines_leave_the_stream(pipeline):
    """An incident names the communicators its events are of, from the job's init lines; the stream keeps those lines
    only while they may teach something (``_prune``), and each later step re-rendered the incident without them: a
    new version that only lost its ``communicators`` (the benchmark's stream emitted 14 such). They stay the
    incident's; a version is emitted again only for what it gained."""
    from ingest.decode import Decoded, Segment

    t0 = 1_790_000_000_000_000
    init = ("2026-09-21T13:33:20.000000Z node07:1234:1290 [0] NCCL INFO comm 0x55d1c0a0 rank 0 nranks 2 cudaDev 0 "
            "busId 3b000 commId 0x7f2d1c3e5a6b7c8d - Init COMPLETE")
    xid = ("2026-09-21T13:40:00.000000Z node07 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=0, "
           "GPU has fallen off the bus.")
    again = xid.replace("13:40:00", "13:40:30")

    def table(text):
        seg = Segment(data=text.encode(), origin="t:node07", stream="node07", host="node07", ref_ts=t0,
                      ref_basis="kafka", ingest_ts=t0)
        return pipeline.run(Decoded(segments=[seg])).events

    sc = StreamCorrelator()
    sc.add(table(init + "\n" + xid))
    (first,) = [i for i in sc.step(now_us=t0, flush=True) if i["category"] == "gpu_off_bus"]
    assert first["communicators"] == ["0x7f2d1c3e5a6b7c8d"]
    for k in [k for k, e in sc.events.items() if e.kind == "nccl_init"]:  # as _prune lets an old init line go
        del sc.events[k]
        sc.teaching.pop(k, None)
    sc.wiring.clear()
    sc.wiring_ranks.clear()
    sc.add(table(again))
    (second,) = [i for i in sc.step(now_us=t0, flush=True) if i["id"] == first["id"]]
    assert second["version"] == 2 and second["communicators"] == ["0x7f2d1c3e5a6b7c8d"]


def test_an_incident_keeps_its_id_when_a_scene_line_it_does_not_name_is_forgotten(tmp_path):
    """benchmarks.simulate's benign DCGM case (an A100 PCIe's ``dcgmi diag`` table: "PCIe | Fail - All", then a
    Warning row of NVLinks down), its host logging on for an hour, delivered in time order with up to 5 s of jitter.
    The incident's id came from the table's "Fail - All" row, which the scene holds but the incident does not name
    (``member_ids``); the stream forgot that row once old and gave the same incident a new id, superseding the
    batch's (a break-it pass). Its id is of the events it names: the stream's final incidents are the batch's."""
    import os
    import random

    import pyarrow as pa

    from api.diagnose import diagnose_paths
    from benchmarks.simulate import scenario
    from correlate.correlator import correlate
    from schemas.settings import Settings

    sc_ = scenario(12, "benign_dcgm_sku", 10)
    for f in sc_.files:
        (tmp_path / f.name).write_bytes(f.data)
        os.utime(tmp_path / f.name, ns=(f.mtime * 1000, f.mtime * 1000))
    _, batch, _ = diagnose_paths([tmp_path], Settings(), now_us=1)
    ev = batch.events
    end = sc_.t0 + 86400 * S
    want = {i["id"]: i for i in correlate(ev, batch.link_samples, batch.topology, now_us=end)}
    assert [(i["pattern"], i["severity"]) for i in want.values() if i["category"] == "link_fault"] == [
        ("benign.no_nvlink_on_gpu", "info")]
    rnd = random.Random(7)
    arrive = [t + rnd.randrange(5 * S) for t in ev.column("ts").cast(pa.int64()).to_pylist()]
    order = sorted(range(len(arrive)), key=lambda k: (arrive[k], k))
    sc = StreamCorrelator()
    sc.add(ev.schema.empty_table(), batch.link_samples, batch.topology)
    k, now = 0, min(arrive)
    while k < len(order):
        now += 10 * S
        j = k
        while j < len(order) and arrive[order[j]] <= now:
            j += 1
        if j > k:
            sc.add(ev.take(pa.array(order[k:j])), now_us=now)
        sc.step(now_us=now)
        k = j
    sc.step(now_us=end, flush=True)
    strip = lambda i: {k: v for k, v in i.items() if k not in ("version", "status", "recurrence")}
    final = {i: v[2] for i, v in sc.emitted.items() if v[2]["status"] != "superseded"}
    assert sorted(final) == sorted(want)
    assert all(strip(final[i]) == strip(want[i]) for i in want)


def test_attribution_cache_keeps_a_one_host_incident_when_only_skew_bounds_change():
    """A one-host candidate incident's attribution reads no skew bound (``window.tolerance`` adds them across hosts
    only), so a cached one is reused when the bounds move, as the clock estimates do at nearly every streaming step;
    one of two hosts is attributed again. The incidents equal those attributed afresh, and carry the new bounds."""
    from correlate.correlator import AttributionCache, Settings, correlate
    from correlate.topology import HostConfig

    evs = [ev("a1", "a", 1000 * S, xid=79), ev("b1", "b", 5000 * S, xid=74), ev("c1", "c", 5001 * S, xid=74)]
    fleet = {h: HostConfig(domain="d") for h in ("b", "c")}

    def settings(skew_s: int) -> Settings:
        return Settings(clocks=Clocks(skew_us={h: skew_s * S for h in "abc"}, default_skew_us=0), hosts=fleet)

    cache = AttributionCache()
    first = correlate(evs, settings=settings(1), now_us=0, cache=cache)
    assert sorted(len(member_ids(i)) for i in first) == [1, 2]  # a alone; b and c in one NVLink domain
    assert (cache.hits, cache.misses) == (0, 2)
    again = correlate(evs, settings=settings(3), now_us=0, cache=cache)
    assert (cache.hits, cache.misses) == (1, 3)  # a's reused, b and c's attributed again
    assert again == correlate(evs, settings=settings(3), now_us=0)
    assert {i["clocks"]["a"]["skew_bound_s"] for i in again if "a" in i["clocks"]} == {3.0}


def _in_comm(e: Ev, comm: str) -> Ev:
    e.comm = comm
    return e


def test_a_late_event_of_another_host_clusters_an_old_component_again():
    """The streaming correlator's clustering keeps the last step's components of the hosts whose events, facts and
    skew bounds did not change (``cluster.ComponentCache``), unless a host coupled to a changed one may join them:
    a late Xid of a new host in the communicator of an old one's joins that old component (``same_comm``, 10 s
    apart), though the old host got no new event; a far host's component is kept."""
    from correlate.correlator import AttributionCache, correlate

    old = [_in_comm(ev("a1", "a", 1000 * S), "c1"), ev("b1", "b", 5000 * S, device="0000:02:00.0")]
    cache = AttributionCache()
    correlate(old, now_us=0, cache=cache)
    assert sorted(sorted(e.event_id for e in c) for c in cache.clusters.comps) == [["a1"], ["b1"]]
    late = _in_comm(ev("c1", "c", 1010 * S), "c1")
    got = correlate(old + [late], now_us=0, cache=cache)
    assert sorted(sorted(e.event_id for e in c) for c in cache.clusters.comps) == [["a1", "c1"], ["b1"]]
    assert (cache.clusters.reused, cache.clusters.redone) == (1, 2)  # b's kept; a's clustered again with c's
    assert got == correlate(old + [late], now_us=0)
    far = ev("d1", "d", 9000 * S, device="0000:03:00.0")  # couples with no host: everything else is kept
    assert correlate(old + [late, far], now_us=0, cache=cache) == correlate(old + [late, far], now_us=0)
    assert (cache.clusters.reused, cache.clusters.redone) == (3, 1)


def test_a_topology_learned_later_clusters_an_old_component_again():
    """A host's components are kept only while its topology facts are those they were made with: NCCL's init lines
    learned later that put a GPU and another host's rank in one communicator join the GPU's old Xid 79 to that rank's
    NCCL error (``same_comm``), though neither host got a new event and neither line names a communicator; the
    incidents are those of clustering afresh."""
    from correlate.correlator import AttributionCache, correlate
    from correlate.rules import gpu_key

    xid = ev("a1", "a", 1000 * S)
    err = Ev(event_id="b1", ts=1005 * S, ts_basis="line", host="b", source="nccl", kind="nccl_error",
             signature="nccl.error", severity="error", device_type=None, device=None, link=None, xid=None, sxid=None,
             peer=None, rank=1, nranks=2, comm=None, message="m", precision_us=1)
    cache = AttributionCache()
    before = correlate([xid, err], now_us=0, cache=cache, built=Topology())
    assert sorted(sorted(e.event_id for e in c) for c in cache.clusters.comps) == [["a1"], ["b1"]]
    learned = Topology()
    learned.comm_ranks["c1"][0] = ("a", gpu_key(xid, learned))
    learned.comm_ranks["c1"][1] = ("b", None)
    learned.comm_size["c1"] = 2
    after = correlate([xid, err], now_us=0, cache=cache, built=learned)
    assert [sorted(e.event_id for e in c) for c in cache.clusters.comps] == [["a1", "b1"]]
    assert after != before
    assert after == correlate([xid, err], now_us=0, built=learned)


def _fleet_events(tmp_path):
    """The events, link samples and topology of ``tests.fleet_scenarios`` (read as files), and the correlation
    settings with its fleet config."""
    import yaml

    from api.diagnose import diagnose_paths
    from correlate.correlator import correlation_settings
    from schemas.settings import Settings
    from tests.fleet_scenarios import FLEET, fleet

    for h, lines in fleet().items():
        (tmp_path / f"{h}.log").write_text("\n".join(lines) + "\n")
    cfg = tmp_path / "fleet.yaml"
    cfg.write_text(yaml.safe_dump(FLEET))
    s = Settings(fleet_config=cfg)
    _, batch, _ = diagnose_paths(sorted(tmp_path.glob("*.log")), s)
    return batch, correlation_settings(s)


def _replay(sc, batch, order, size):
    """``batch``'s events in ``order``, ``size`` at a time, a step after each and a flush: the versions emitted."""
    import pyarrow as pa

    sc.add(batch.events.schema.empty_table(), batch.link_samples, batch.topology)
    out = []
    for n, k in enumerate(range(0, len(order), size)):
        sc.add(batch.events.take(pa.array(order[k:k + size])), now_us=n * S)
        out += sc.step(now_us=n * S)
    return out + sc.step(now_us=len(order) * S, flush=True)


def test_the_same_events_read_again_after_a_restart_make_no_older_version(tmp_path):
    """A service restarted over a lake whose incidents' events are older than it reads back (``reach_back_s``
    from the newest stored event, which a Kafka-timed NCCL line of today is), then given the same events again (a
    new consumer group, offsets reset, Kafka's 7-day retention read from its start): whatever the order and the
    batches, no version it emits re-uses a stored version's number (incident_versions held two version 1 rows
    behind a version 2, and the run showed that version 1 as current: a break-it pass), and once flushed the
    latest version of every stored incident has the stored content. Per-host order is Kafka's (one partition a
    host); hosts interleave at random."""
    from hypothesis import HealthCheck, given, settings, strategies as st

    batch, cs = _fleet_events(tmp_path)
    hosts = batch.events.column("host").to_pylist()
    per_host: dict[str, list[int]] = {}
    for k, h in enumerate(hosts):
        per_host.setdefault(h, []).append(k)
    strip = lambda i: {k: v for k, v in i.items() if k not in ("version", "clocks")}

    def interleave(rnd):
        queues = {h: list(v) for h, v in per_host.items()}
        order = []
        while queues:
            h = rnd.choice(sorted(queues))
            order.append(queues[h].pop(0))
            if not queues[h]:
                del queues[h]
        return order

    @settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))
    @given(st.randoms(use_true_random=False), st.randoms(use_true_random=False), st.integers(1, 6))
    def prop(first_rnd, again_rnd, size):
        first = StreamCorrelator(settings=cs)
        _replay(first, batch, interleave(first_rnd), size)
        stored = {i: v[2] for i, v in first.emitted.items()}
        assert len(stored) >= 4
        again = StreamCorrelator(settings=cs)
        again.restore(list(stored.values()))  # no events: all older than the read-back reaches
        out = _replay(again, batch, interleave(again_rnd), size)
        for inc in out:
            if inc["id"] in stored:
                assert inc["version"] > stored[inc["id"]]["version"], (inc["id"], inc["version"])
                # and none made of part of a stored version's events: that version stands (it was stored and
                # paged as an update: v2 of six reporters, then v3 of two, then v4 of six: a second break-it pass)
                was = set(member_ids(stored[inc["id"]]))
                assert not (set(member_ids(inc)) < was), (inc["id"], inc["version"])
        for iid, inc in stored.items():
            latest = again.emitted.get(iid, (0, "", None))[2] or inc
            assert strip(latest) == strip(inc), iid

    prop()


def test_the_incidents_a_stream_forgot_are_kept_up_to_a_bound_oldest_dropped_first(tmp_path, monkeypatch):
    """``retired`` (what the stream knows of incidents it forgot, for a replay of their events) lives as long as the
    service: at most ``RETIRED_MAX`` entries, the oldest forgotten dropped first."""
    import correlate.stream as stream

    batch, cs = _fleet_events(tmp_path)
    first = StreamCorrelator(settings=cs)
    _replay(first, batch, list(range(batch.events.num_rows)), 6)
    stored = [v[2] for v in first.emitted.values()]
    assert len(stored) >= 4
    monkeypatch.setattr(stream, "RETIRED_MAX", 2)
    again = StreamCorrelator(settings=cs)
    again.restore(stored)  # no events: every one is forgotten at the first prune
    _replay(again, batch, [0], 1)
    assert list(again.retired) == [i["id"] for i in stored][-2:]


def test_a_redelivery_of_events_the_stream_holds_is_no_late_event(tmp_path):
    """At-least-once delivery: the records of a batch come again after the host's watermark passed them by more
    than the allowed lateness. The stream holds them already: nothing is new, and none is late (they were counted
    in ``late_events``, /healthz's, though no line came late: a break-it pass)."""
    batch, cs = _fleet_events(tmp_path)
    sc = StreamCorrelator(settings=cs)
    assert sc.add(batch.events) == 0
    sc.step(now_us=0)
    held = len(sc.events)
    assert held == batch.events.num_rows
    assert sc.add(batch.events) == 0 and sc.late_events == 0 and len(sc.events) == held


@pytest.mark.parametrize("backlogged", [1, 2])
def test_a_live_hosts_clock_is_not_moved_by_hosts_whose_lines_arrive_hours_late(backlogged):
    """One live host (its lines appended 0.1 s after their stamps) beside ``backlogged`` hosts whose lines arrived
    23 h late (a backlog shipped, logs replayed): the fleet's median was the upper of the hosts' medians, so the live
    host's offset was −23 h and its bound the 300 s cap (its Xid 79 "resolved" as it was read), while at 25 h both
    had none (a break-it pass). The live host keeps its clock; the late ones take the offset."""
    from correlate.window import SKEW_CAP_US, estimate_clocks

    now, lag = 1_800_000_000 * S, 23 * 3600 * S
    evs = []
    for h, late in [("live", 0)] + [(f"old{j}", lag) for j in range(backlogged)]:
        for k in range(6):
            e = ev(f"{h}{k}", h, now + k * S - late)
            e.origin, e.ingest_ts = f"kafka:t/0/{k}:0", now + k * S + 100_000
            evs.append(e)
    skew, offsets = estimate_clocks(evs)
    assert offsets["live"] == 0 and "live" not in {h for h, b in skew.items() if b}
    assert all(offsets[f"old{j}"] == lag and skew[f"old{j}"] == SKEW_CAP_US for j in range(backlogged))


def _appended(h: str, delays: list[int], now: int = 1_800_000_000 * S) -> list:
    """Host ``h``'s lines appended to Kafka one a second from ``now`` (µs), each ``delays[k]`` after its stamp."""
    out = []
    for k, d in enumerate(delays):
        e = ev(f"{h}{k}", h, now + k * S - d)
        e.origin, e.ingest_ts = f"kafka:t/0/{k}:0", now + k * S
        out.append(e)
    return out


@pytest.mark.parametrize("backlog, live", [(6, 5), (5, 6), (30, 10), (200, 5)])
def test_a_host_that_ships_a_backlog_then_live_lines_keeps_its_clock(backlog, live):
    """A host whose agent shipped a 3 h backlog and then its live lines (appended 0.1 s after their stamps), beside
    two live hosts: the median of its delays was the backlog's when the backlog was the larger part, and its live
    lines were moved 3 h ahead (a break-it pass: 6 backlog + 5 live lines gave +3.00 h, 5 + 6 gave 0). Its fastest
    lines say its clock: offset 0, and bound 0 (its fastest lines agree). A clock 3 h behind delays every line:
    +3 h."""
    from correlate.window import SKEW_CAP_US, estimate_clocks

    lag = 3 * 3600 * S
    fleet = _appended("a", [100_000] * 6) + _appended("b", [100_000] * 6)
    skew, offsets = estimate_clocks(fleet + _appended("x", [lag] * backlog + [100_000] * live))
    assert (offsets["x"], skew["x"]) == (0, 0) and offsets["a"] == offsets["b"] == 0
    skew, offsets = estimate_clocks(fleet + _appended("x", [lag] * (backlog + live)))
    assert offsets["x"] == lag - 100_000 and skew["x"] == SKEW_CAP_US  # its delay less the fleet's 0.1 s


@pytest.mark.parametrize("ahead, lines", [(1, 5), (2, 5), (3, 10), (5, 20), (40, 60)])
def test_lines_stamped_hours_ahead_do_not_move_the_hosts_clock_while_others_say_it(ahead, lines):
    """A host with some of its lines stamped 8 h ahead (a program's local time, UTC+8, read as UTC), beside two
    live hosts: a low quantile of every delay took them for its clock, offset −8 h and the 300 s bound, once a fifth
    of its lines were such (a break-it pass; the median had held up to half). Lines further ahead than the skew cap
    are read only when the others are too few: offset 0, bound 0. Every line 8 h ahead is a clock 8 h ahead."""
    from correlate.window import estimate_clocks

    tz = -8 * 3600 * S
    fleet = _appended("a", [100_000] * 10) + _appended("b", [100_000] * 10)
    skew, offsets = estimate_clocks(fleet + _appended("x", [tz] * ahead + [100_000] * (lines - ahead)))
    assert (offsets["x"], skew["x"]) == (0, 0)
    skew, offsets = estimate_clocks(fleet + _appended("x", [tz] * lines))
    assert offsets["x"] == tz - 100_000


@pytest.mark.parametrize("wrong, lines", [(1, 5), (3, 20), (4, 40)])
def test_a_few_lines_stamped_seconds_ahead_do_not_move_the_hosts_clock(wrong, lines):
    """A few lines stamped 90 s ahead of their append time (a stamp read wrong, within the skew cap) among live
    lines: the fastest line is not the clock, the ``1 / CLOCK_QUANTILE`` quantile of the fastest is."""
    from correlate.window import estimate_clocks

    fleet = _appended("a", [100_000] * 10) + _appended("b", [100_000] * 10)
    skew, offsets = estimate_clocks(fleet + _appended("x", [-90 * S] * wrong + [100_000] * (lines - wrong)))
    assert offsets["x"] == 0 and skew["x"] == 0


def test_a_hosts_clock_is_read_from_its_two_newest_days_of_append_time():
    """A clock 10 minutes ahead, set right by NTP two days later: the fastest lines since the start would keep the
    old clock for the life of a stream; the host's two newest UTC days of append time are read."""
    from correlate.window import estimate_clocks

    day, now = 86400 * S, 1_800_000_000 * S
    fleet = _appended("a", [100_000] * 6, now + 2 * day) + _appended("b", [100_000] * 6, now + 2 * day)
    before = _appended("x", [-600 * S] * 10, now)
    after = [e for e in _appended("x", [100_000] * 6, now + 2 * day)]
    for e in after:
        e.event_id += "'"
    assert estimate_clocks(fleet + _appended("a", [100_000] * 6, now) + before)[1]["x"] == -600 * S - 100_000
    assert estimate_clocks(fleet + before + after)[1]["x"] == 0


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("abc"),
                          st.sampled_from([-9 * 3600, -90, 0, 1, 2, 9, 3600, 3 * 3600, 2 * 86400]),
                          st.integers(0, 7 * 86400)), min_size=1, max_size=80),
       st.randoms(use_true_random=False), st.integers(1, 5))
def test_append_delays_are_the_same_whatever_the_order_split_and_repeats(lines, rnd, parts):
    """The summary the streaming correlator keeps (``StreamCorrelator.delays``) is a function of the set of lines
    alone: observed one by one in any order, a part of them again (a redelivery), each part's events forgotten
    after it (pruning), it reads the clocks the batch reads from every line at once; appended over a week, so the
    fleet's three newest days (``FLEET_DAYS``) leave some out; the lake's rows of them read at a restart are the
    same."""
    from correlate.window import AppendDelays, estimate_clocks

    evs = []
    for k, (h, d, at) in enumerate(lines):
        e = ev(f"{h}{k}", h, (1_800_000_000 + at - d) * S)
        e.origin, e.ingest_ts = f"kafka:t/0/{k}:0", (1_800_000_000 + at) * S
        evs.append(e)
    want = estimate_clocks(evs)
    shuffled = evs + rnd.sample(evs, len(evs) // 3)
    rnd.shuffle(shuffled)
    kept = AppendDelays()
    for i in range(parts):
        for e in shuffled[i * len(shuffled) // parts:(i + 1) * len(shuffled) // parts]:
            kept.observe(e)
        estimate_clocks([], delays=kept)  # a step's, each part (read again only where lines came since)
    assert estimate_clocks([], delays=kept) == want
    assert AppendDelays.of(evs).levels(5) == kept.levels(5)
    # ... and a lake's summary (each host's two newest days, as its query picks them) read at a restart
    rows = [(h, dy, ahead, d, eid) for h in {e.host for e in evs}
            for dy, lists in AppendDelays.of([e for e in evs if e.host == h]).days.get(h, {}).items()
            for ahead, kept_ in enumerate(lists) for d, eid in kept_]
    assert AppendDelays.of_rows(rows).days == kept.days


def test_the_streams_clocks_read_the_lines_it_drops_as_late():
    """Lines too late to change an incident (older than their host's watermark by more than the allowed lateness)
    are not correlated, but their append delays say their host's clock, as in the batch over the same lines (the
    correlator benchmark's cn106: its late lines left it no clock in the stream, 19 s in the batch)."""
    from correlate.window import estimate_clocks

    fleet = _appended("a", [100_000] * 6) + _appended("b", [100_000] * 6)
    now = _appended("x", [100_000] * 2)
    late = _appended("x", [600 * S + k * S for k in range(6)], 1_800_000_000 * S + 10 * S)
    for e in late:
        e.event_id += "'"
    import pyarrow as pa

    def table(evs):  # with their append times (``_table`` has none)
        t = _table(evs)
        return t.set_column(t.schema.get_field_index("ingest_ts"), "ingest_ts",
                            pa.array([e.ingest_ts for e in evs], t.schema.field("ingest_ts").type))

    sc = StreamCorrelator(lateness_us=60 * S)
    sc.add(table(fleet + now))
    assert sc.add(table(late)) == len(late)
    assert estimate_clocks([], delays=sc.delays) == estimate_clocks(fleet + now + late)
    assert "x" in estimate_clocks([], delays=sc.delays)[1]


@pytest.mark.parametrize("off_s", [10, 20])
def test_a_chatty_hosts_clock_off_is_covered_by_its_bound_beside_quiet_hosts(off_s):
    """A host of 10,000 lines whose clock runs ``off_s`` behind, beside ten quiet hosts of 5 – 30 lines, every line
    shipped in batches 0 – 30 s after it was written. The fifth of a host's 20 fastest lines reads lower the more
    lines it has: the chatty host's is its fastest lines' (near its clock), the quiet hosts' some seconds later, so
    its offset read that much less than its clock's, and its spread (of its 20 fastest, all alike) added nothing: a
    10 s clock was bound by 5 s, 20 s by 15 s (a break-it pass). The fleet's own spread is in every host's bound."""
    import random

    from correlate.window import estimate_clocks

    rnd = random.Random(0)

    def host(h, n, off):
        out = []
        for k in range(n):
            at = 1_800_000_000 * S + int(rnd.random() * 3600 * S)
            e = ev(f"{h}-{k}", h, at - int(rnd.uniform(0, 30) * S) - off * S)
            e.origin, e.ingest_ts = f"kafka:t/0/{k}:0", at
            out.append(e)
        return out

    evs = host("chatty", 10_000, off_s)
    for i in range(10):
        evs += host(f"q{i}", 5 + (i * 7) % 26, 0)
    skew, offsets = estimate_clocks(evs)
    assert skew["chatty"] >= off_s * S, (skew["chatty"] / S, offsets["chatty"] / S)
    assert all(skew[f"q{i}"] <= 60 * S for i in range(10))


def test_a_line_delivered_twice_is_read_once_at_its_first_arrival():
    """A line its own stamp dates is one event however often it is delivered (``schemas.line_event_id``): the same
    kernel lines shipped again 100 s later (kern.log and syslog both carry them; an agent that re-read its file) are
    the same events. Counted twice, the late copies made half of the host's fastest lines: its bound read 100 s in
    the stream, which observes every copy, while the batch (``correlate``'s ``_dedup``) read the copy that came
    first in its input: 0 s, or, the late copies first, an offset of 100 s (a break-it pass). A line's delay is its
    first arrival's, whatever the order and the copies."""
    from correlate.correlator import correlate
    from correlate.window import AppendDelays, estimate_clocks

    fleet = _appended("a", [100_000] * 6) + _appended("b", [100_000] * 6)
    x = _appended("x", [100_000] * 5)
    again = _appended("x", [100 * S + 100_000] * 5, 1_800_000_000 * S + 100 * S)
    for c, e in zip(again, x):
        c.event_id = e.event_id
    want = estimate_clocks(fleet + x)
    assert want == ({"a": 0, "b": 0, "x": 0}, {"a": 0, "b": 0, "x": 0})
    assert estimate_clocks(fleet + x + again) == estimate_clocks(fleet + again + x) == want
    kept = AppendDelays.of(fleet + again)
    for e in x:
        kept.observe(e)
    assert estimate_clocks([], delays=kept) == want
    for order in (fleet + x + again, fleet + again + x):  # the batch's clocks, its copies dropped as replays'
        incs = [i for i in correlate(order, now_us=1_801_000_000 * S) if "x" in i["clocks"]]
        assert incs and all((i["clocks"]["x"]["offset_s"], i["clocks"]["x"]["skew_bound_s"]) == (0, 2) for i in incs)


def test_a_step_reads_again_only_the_clocks_of_hosts_whose_lines_came_since():
    """The streaming correlator reads every host's clock from its summary each step (``StreamCorrelator.delays``):
    of 10,000 hosts, each with 20 fastest lines on two days, 0.3 – 0.5 s a step went to the same lines read again
    (a break-it pass). A host's level is read again when a line of it is taken, and is the same as read fresh (what
    is read again is asserted, not timed: speed lives in benchmarks/)."""
    from correlate.window import AppendDelays, estimate_clocks

    kept = AppendDelays()
    for h in range(3000):
        for e in _appended(f"h{h}", [100_000 + 10_000 * (k % 7) for k in range(10)]):
            kept.observe(e)
    first = estimate_clocks([], delays=kept)
    assert len(kept.read[5]) == 3000  # every host's level kept from the first read (min_events 5) ...
    assert estimate_clocks([], delays=kept) == first
    (late,) = _appended("h7", [5 * S])
    late.event_id, late.ingest_ts, late.ts = "h7-late", late.ingest_ts - S, late.ts - S
    for e in _appended("h8", [-S] * 20):  # h8's clock now a second ahead: its level is read again
        e.event_id += "'"
        kept.observe(e)
    kept.observe(late)
    assert set(kept.read[5]) == {f"h{h}" for h in range(3000)} - {"h7", "h8"}  # ... but of the hosts given lines since
    assert estimate_clocks([], delays=kept) == estimate_clocks([], delays=AppendDelays(days=kept.days))
    assert estimate_clocks([], delays=kept)[1]["h8"] < first[1]["h8"]


#: a kernel's corrected-error record (prometheus/node_exporter#3511; ``host.cper_severity``, info: no fault) and an Xid
#: 79, ISO stamped as rsyslog exports them
_CORRECTED = "{t} kernel: {{35}}[Hardware Error]: event severity: corrected"
_FALLEN = "{t} kernel: NVRM: Xid (PCI:0000:18:00): 79, pid=0, GPU has fallen off the bus."


def _shipped(pipeline, host: str, stamps: list, delay, line: str = _CORRECTED):
    """``host``'s kernel ``line``s stamped at ``stamps`` (datetimes), each appended to Kafka ``delay`` (a timedelta)
    after its stamp, through the pipeline: an events table in ``EVENTS_SCHEMA``."""
    import itertools

    import pyarrow as pa

    from ingest.decode import Decoded, Segment

    offsets = _shipped.__dict__.setdefault("offsets", itertools.count())
    tables = []
    for t in stamps:
        at = int((t + delay).timestamp() * S)
        seg = Segment(data=line.format(t=f"{t:%Y-%m-%dT%H:%M:%S.%f}+00:00").encode(),
                      origin=f"kafka:fleet.dmesg/0/{next(offsets)}:0", stream=f"fleet.dmesg/0/{host}", host=host,
                      ref_ts=at, ref_basis="kafka", ingest_ts=at)
        tables.append(pipeline.run(Decoded(segments=[seg])).events)
    return pa.concat_tables(tables)


def test_a_restarted_stream_reads_the_clocks_of_the_whole_lake(pipeline, tmp_path):
    """A restarted service reads back the stored incidents, the events of the last hour or so and the append-delay
    summary of every stored event (``IncidentSink.append_delays``, in DuckDB over the Parquet lake): after the rest
    of the input its incidents are the batch correlator's over the whole lake, clocks and all. Of the recent events
    alone (as before), host x, whose fastest lines (0.1 s) came nine hours before the restart and whose recent ones
    in a 40 s backlog, read its clock 40 s off, and the incidents of every host moved with the fleet's delay.
    Beside it: host y's lines of three UTC days (the oldest day, its fastest, not read: its two newest days are),
    host z's stamped 8 h ahead (local time as UTC: the ``ahead`` list), a line of host a delivered again later (read
    once, at its first arrival), lines appended further from their stamp than a day (not read)."""
    from datetime import datetime, timedelta, timezone

    import pyarrow as pa

    from api.sink import IncidentSink
    from correlate.correlator import correlate
    from correlate.model import events_from_table
    from correlate.window import AppendDelays, estimate_clocks
    from ingest.lake import Lake
    from schemas.settings import Settings

    t0 = datetime(2026, 11, 29, 1, 0, tzinfo=timezone.utc)
    restart = t0 + timedelta(hours=10)
    recent = restart - timedelta(minutes=20)
    minutes = lambda t, n: [t + timedelta(minutes=k, seconds=k) for k in range(n)]  # noqa: E731
    fast, slow = timedelta(milliseconds=100), timedelta(seconds=40)
    before = [_shipped(pipeline, h, minutes(t0, 6), fast) for h in "abcx"]  # every host's fastest lines, early
    before += [_shipped(pipeline, h, minutes(recent, 6), fast) for h in "abc"]
    before += [_shipped(pipeline, "x", minutes(recent + timedelta(minutes=7), 6), slow)]  # x's backlog, recent
    before += [_shipped(pipeline, "y", minutes(t0 - timedelta(days=2), 6), timedelta(milliseconds=10)),
               _shipped(pipeline, "y", minutes(t0 - timedelta(days=1), 6), timedelta(seconds=2)),
               _shipped(pipeline, "y", minutes(recent, 6), timedelta(seconds=5)),
               _shipped(pipeline, "z", minutes(recent + timedelta(hours=8), 6), timedelta(hours=-8)),
               _shipped(pipeline, "a", minutes(t0, 1), timedelta(hours=9)),  # a's first line again, 9 h later
               _shipped(pipeline, "w", minutes(t0 - timedelta(days=3), 6), timedelta(days=3))]  # replayed: not read
    before += [_shipped(pipeline, "a", [recent + timedelta(minutes=9)], fast, _FALLEN)]  # an incident stored
    after = [_shipped(pipeline, h, minutes(restart + timedelta(minutes=5), 3), fast, _FALLEN) for h in "abcxyz"]
    first = pa.concat_tables(before)
    assert set(first.column("ts_basis").to_pylist()) == {"line"}
    root, state = tmp_path / "lake", tmp_path / "state"
    lake = Lake(root)
    lake.init()
    sink = IncidentSink(Settings(lake=str(root), state_dir=state), lake)
    sc = StreamCorrelator()
    for i, t in enumerate(before):  # the service before its restart: events to the lake, incidents stored
        lake.write("events", t, f"b{i}")
        sc.add(t, now_us=int(restart.timestamp() * S))
        sink.emit(sc.step(now_us=int(restart.timestamp() * S)))

    # the summary computed in DuckDB is the one observed of every event the lake holds
    again = IncidentSink(Settings(lake=str(root), state_dir=state))
    delays = again.append_delays()
    stored = events_from_table(first)
    assert delays.days == AppendDelays.of(stored).days
    assert min(delays.days["y"]) == (t0 - timedelta(days=1)).timestamp() * S // (86400 * S) and "w" not in delays.days
    assert delays.days["z"] and all(not near and len(ahead) == 6 for near, ahead in delays.days["z"].values())
    want = estimate_clocks(stored)
    assert estimate_clocks([], delays=delays) == want and want[1]["x"] == want[1]["a"]

    def restarted(delays):
        stored = again.stored()
        sc = StreamCorrelator()
        sc.restore(stored, again.recent_events(int((300 + 3600) * S), stored, 24 * 3600 * S, now=restart),
                   delays=delays)
        return sc

    assert estimate_clocks([], delays=restarted(None).delays)[1]["x"] - want[1]["a"] >= 39 * S  # the defect
    sc = restarted(delays)
    assert estimate_clocks([], delays=sc.delays) == want
    end = int((restart + timedelta(hours=1)).timestamp() * S)
    for t in after:
        sc.add(t, now_us=end)
        sc.step(now_us=end)
    sc.step(now_us=end, flush=True)
    everything = pa.concat_tables(before + after)
    expected = {i["id"]: i for i in correlate(everything, now_us=end)}
    final = {i: v[2] for i, v in sc.emitted.items() if v[2].get("status") != "superseded"}
    strip = lambda i: {k: v for k, v in i.items() if k not in ("version", "status", "recurrence")}  # noqa: E731
    assert set(final) == set(expected)
    assert {i: strip(v) for i, v in final.items()} == {i: strip(v) for i, v in expected.items()}
    assert {h for i in expected.values() for h in i["clocks"]} >= set("abcxyz")
    assert estimate_clocks([], delays=sc.delays) == estimate_clocks(events_from_table(everything))


def _notice_then_hourly(ahead_h: int, hours: int):
    """node201's capture: NCCL's bootstrap line, an Azure Preempt notice (``azure.scheduled_event_notice``) printed
    at 2026-11-20 10:04:32 UTC whose NotBefore is ``ahead_h`` hours later, then an NCCL line every hour for ``hours``
    hours. Returns (the notice's line time, its NotBefore: datetimes in UTC, the capture's text)."""
    from datetime import datetime, timedelta, timezone

    from tests.test_patterns import BOOT

    line = datetime(2026, 11, 20, 10, 4, 32, tzinfo=timezone.utc)
    nb = line + timedelta(hours=ahead_h)
    notice = (f'[{line:%Y-%m-%d %H:%M:%S}] {{"DocumentIncarnation":3,"Events":[{{"EventId":"A1","EventStatus":'
              f'"Scheduled","EventType":"Preempt","ResourceType":"VirtualMachine","Resources":["node201"],'
              f'"NotBefore":"{nb:%a, %d %b %Y %H:%M:%S} GMT"}}]}}')
    hourly = [f"[{line + timedelta(hours=h):%Y-%m-%d %H:%M:%S}] node201:1200:1200 [0] NCCL INFO Bootstrap : Using "
              f"eth0:10.1.3.201<0>" for h in range(1, hours + 1)]
    return line, nb, "\n".join([BOOT.format(host="node201", addr="10.1.3.201"), notice, *hourly])


@pytest.mark.parametrize("ahead_h", [30, 168])
def test_a_notice_days_ahead_meets_its_peers_resets_at_its_time_in_the_stream_as_in_the_batch(pipeline, ahead_h):
    """An Azure notice (``azure.scheduled_event_notice``) whose NotBefore is ``ahead_h`` hours after its line, its host
    logging on every hour, and a peer's "Connection reset by peer" from it 2 s after the NotBefore. The batch ties the
    reset to the notice (``cloud_event.explains_peer_reports`` at ``Ev.start``); the stream, fed in time order, forgot
    the notice a day (``reach_back_us``) after its line and made the reset an incident of its own (a break-it pass).
    It keeps a cold event placed ahead of its line until its host's watermark passed that time."""
    from datetime import timedelta

    from correlate.correlator import correlate
    from ingest.decode import Decoded, Segment
    from tests.test_patterns import RECV, T0

    line, nb, node201 = _notice_then_hourly(ahead_h, ahead_h)
    reset = RECV.replace("[2026-11-20 10:05:02]", f"[{nb + timedelta(seconds=2):%Y-%m-%d %H:%M:%S}]")
    files = {"node201": node201, "node024": reset.format(host="node024", addr="10.1.3.201")}
    segs = [Segment(data=x.encode(), origin=f"t:{h}", stream=h, host=h, ref_ts=T0, ref_basis="kafka", ingest_ts=T0)
            for h, x in files.items()]
    b = pipeline.run(Decoded(segments=segs))
    (want,) = correlate(b.events, b.link_samples, b.topology, now_us=T0)
    assert [(d["host"], d["relation"]) for d in want["downstream"]] == [("node024", "peer_host")]
    assert want["start"] == f"{line:%Y-%m-%dT%H:%M:%S}.000000Z" <= want["end"]
    events, ts, sc, seen = _stepped_one_by_one(b)
    seen += [(i, ts[-1]) for i in sc.step(now_us=ts[-1], flush=True)]
    seen = [(i["version"], i["status"], i.get("scheduled"), now) for i, now in seen]
    final = [v[2] for v in sc.emitted.values() if v[2].get("status") != "superseded"]
    strip = lambda i: {k: v for k, v in i.items() if k not in ("version", "status", "recurrence")}
    assert [strip(i) for i in final] == [strip(want)]
    assert not sc.cold and sc.future_events == 0
    # open from its first version, an hour after the line, until the reset joins it: the notice's version was
    # "resolved" (its line was over 15 min old) and the reset's "open" again, a page resolved and fired again (a
    # defect pass). The batch at the stream's time says the same
    nb_iso = f"{nb:%Y-%m-%dT%H:%M:%S}.000000Z"
    assert seen == [(1, "open", nb_iso, int((line + timedelta(hours=1)).timestamp() * S)), (2, "open", None, ts[-1])]
    assert "scheduled" not in want and want["end"] > nb_iso  # the reset came: its own time ends it
    (then,) = correlate(b.events, b.link_samples, b.topology, now_us=ts[-1])
    assert then["status"] == "open"


def test_a_cold_event_placed_ahead_of_its_line_is_kept_until_that_time_at_most_a_month():
    """``_kept_until``: a line's time for an event placed at or before it (a watchdog timeout's implied start), the
    time it names for one ahead of it, and no more than ``AHEAD_KEPT_MAX_US`` past the line (a NotBefore in 2099)."""
    from correlate.stream import AHEAD_KEPT_MAX_US, _kept_until

    e = ev("t", "h1", 1000 * S, elapsed_ms=600_000)
    assert (e.start, _kept_until(e)) == (400 * S, 1000 * S)
    for ahead, kept in ((7 * 86400 * S, 7 * 86400 * S), (73 * 365 * 86400 * S, AHEAD_KEPT_MAX_US)):
        n = ev("n", "h1", 1000 * S)
        n.start = 1000 * S + ahead
        assert _kept_until(n) == 1000 * S + kept


def test_the_catalogs_real_notice_stays_open_until_the_peers_reset_at_its_time_and_then_resolves(pipeline):
    """The catalog's real Azure notice (scylladb/scylla-cluster-tests#5608, its event type made a Terminate as in
    ``tests.test_patterns.AZURE_NOTICE``): written 13:46:56, NotBefore 14:01:28; its host logs every minute and the
    peer's "Connection reset by peer" naming its address comes 60 s after the NotBefore, 932 s after the line. The
    stream emitted the notice ``open``, then ``resolved`` at 14:02 (its line 15 min old) and ``open`` again with the
    reset: its page resolved and fired again (a defect pass). Every version is ``open`` (the notice's names its
    ``scheduled`` time) until the incident has been quiet ``resolve_after_us`` past the reset; the batch at each step's
    time says the same status, and the flushed incident is the batch's."""
    from datetime import datetime, timedelta, timezone

    import pyarrow.compute as pc

    from correlate.correlator import correlate
    from ingest.decode import Decoded, Segment
    from tests.test_patterns import AZURE_NOTICE, BOOT, RECV, T0

    line = datetime(2023, 3, 16, 13, 46, 56, tzinfo=timezone.utc)
    nb = datetime(2023, 3, 16, 14, 1, 28, tzinfo=timezone.utc)
    boot = BOOT.replace("2026-11-20 10:00:01", f"{line - timedelta(seconds=5):%Y-%m-%d %H:%M:%S}")
    minutely = [f"[{line + timedelta(minutes=m):%Y-%m-%d %H:%M:%S}] node201:1200:1200 [0] NCCL INFO Bootstrap : "
                f"Using eth0:10.1.3.201<0>" for m in range(1, 18)]
    reset = RECV.replace("[2026-11-20 10:05:02]", f"[{nb + timedelta(seconds=60):%Y-%m-%d %H:%M:%S}]")
    files = {"node201": "\n".join([boot.format(host="node201", addr="10.1.3.201"), AZURE_NOTICE, *minutely]),
             "node024": reset.format(host="node024", addr="10.1.3.201")}
    segs = [Segment(data=x.encode(), origin=f"t:{h}", stream=h, host=h, ref_ts=T0, ref_basis="kafka", ingest_ts=T0)
            for h, x in files.items()]
    b = pipeline.run(Decoded(segments=segs))
    events, ts, sc, seen = _stepped_one_by_one(b)
    # the peer has sent nothing for idle_us (its group closes), then the reset has been quiet 15 min and a second
    for now in (int((nb + timedelta(seconds=60 + 300)).timestamp() * S), quiet := int(
            (nb + timedelta(seconds=60 + 901)).timestamp() * S)):
        seen += [(i, now) for i in sc.step(now_us=now)]
    nb_iso = f"{nb:%Y-%m-%dT%H:%M:%S}.000000Z"
    assert [(i["version"], i["status"], i.get("scheduled"), len(i["downstream"])) for i, _ in seen] == [
        (1, "open", nb_iso, 0), (2, "open", None, 1), (3, "resolved", None, 1)]
    assert len({i["id"] for i, _ in seen}) == 1
    for inc, now in seen:  # the batch over the events the stream had then, at its time
        upto = events.filter(pc.less_equal(events.column("ts").cast("int64"), now))
        (then,) = [x for x in correlate(upto, b.link_samples, b.topology, now_us=now) if x["id"] == inc["id"]]
        assert (then["status"], then.get("scheduled")) == (inc["status"], inc.get("scheduled"))
    (want,) = correlate(b.events, b.link_samples, b.topology, now_us=quiet)
    strip = lambda i: {k: v for k, v in i.items() if k not in ("version", "recurrence")}  # noqa: E731
    assert strip(seen[-1][0]) == strip(want)


@pytest.mark.parametrize("moved_s", [3600, -180])
def test_a_re_sent_notice_moves_its_incidents_scheduled_time_in_the_stream_as_in_the_batch(pipeline, moved_s):
    """The catalog's real Azure notice (scylladb/scylla-cluster-tests#5608, ``tests.test_patterns.AZURE_NOTICE``, a
    Terminate: paged) re-sent 10 min later with the same EventId and its NotBefore moved ``moved_s`` (later, or
    earlier); its host logs every 5 min. The stream made the re-sent notice a second incident, the first open until
    the stale NotBefore: two pages for one maintenance (a defect pass). One incident, fed line by line: ``open`` with
    the first NotBefore, then (same id) ``open`` with the re-sent one (``correlate.model.follow_notices``), then
    ``resolved`` at the first step ``resolve_after_us`` past it (the notices' lines inherit their times, spanning 5 min:
    they join no fault by time, ``cluster._join_notices`` joins them); the batch at each step's time says the same,
    and the last version is the batch's."""
    from datetime import datetime, timedelta, timezone

    import pyarrow.compute as pc

    from correlate.correlator import correlate
    from ingest.decode import Decoded, Segment
    from tests.test_patterns import AZURE_NOTICE, BOOT, T0

    line = datetime(2023, 3, 16, 13, 46, 56, tzinfo=timezone.utc)
    nb = datetime(2023, 3, 16, 14, 1, 28, tzinfo=timezone.utc)
    nb2 = nb + timedelta(seconds=moved_s)
    again = AZURE_NOTICE.replace("Thu, 16 Mar 2023 14:01:28 GMT", f"{nb2:%a, %d %b %Y %H:%M:%S} GMT")
    # the handler's line prints a time the reader does not take: each notice follows its host's line of its time
    host = "[{t:%Y-%m-%d %H:%M:%S}] node201:1200:1200 [0] NCCL INFO Bootstrap : Using eth0:10.1.3.201<0>"
    boot = BOOT.replace("2026-11-20 10:00:01", f"{line:%Y-%m-%d %H:%M:%S}").format(host="node201", addr="10.1.3.201")
    fives = [host.format(t=line + timedelta(minutes=5 * m)) for m in range(1, 30)]
    lines = [boot, AZURE_NOTICE, *fives[:2], again, *fives[2:]]
    seg = Segment(data="\n".join(lines).encode(), origin="t:node201", stream="node201", host="node201", ref_ts=T0,
                  ref_basis="kafka", ingest_ts=T0)
    b = pipeline.run(Decoded(segments=[seg]))
    events, ts, sc, seen = _stepped_one_by_one(b)
    notices = events.filter(pc.equal(events.column("signature"), "azure.scheduled_event_notice"))
    assert [orjson.loads(d)["notice_id"] for d in notices.column("details").to_pylist()] == [
        "CA9C0DC4-E841-476D-94D5-9FC2FF983BCD"] * 2
    iso = lambda d: f"{d:%Y-%m-%dT%H:%M:%S}.000000Z"  # noqa: E731
    at = lambda d: int(d.timestamp() * S)  # noqa: E731
    quiet = nb2 + timedelta(minutes=15)  # resolve_after_us past the re-sent NotBefore: the first 5-min step after it
    first_quiet = min(t for t in ts if t > at(quiet))
    assert [(i["version"], i["status"], i.get("scheduled")) for i, _ in seen] == [
        (1, "open", iso(nb)), (2, "open", iso(nb2)), (3, "resolved", iso(nb2))]
    assert seen[1][1] >= at(line + timedelta(minutes=10))  # once the re-sent notice came
    assert seen[-1][1] == first_quiet
    assert len({i["id"] for i, _ in seen}) == 1
    for inc, now in seen:  # the batch over the events the stream had then, at its time
        upto = events.filter(pc.less_equal(events.column("ts").cast("int64"), now))
        (then,) = correlate(upto, b.link_samples, b.topology, now_us=now)
        assert (then["id"], then["status"], then.get("scheduled")) == (inc["id"], inc["status"], inc.get("scheduled"))
    (want,) = correlate(events, b.link_samples, b.topology, now_us=ts[-1])
    strip = lambda i: {k: v for k, v in i.items() if k not in ("version", "clocks")}  # noqa: E731
    assert strip(seen[-1][0]) == strip(want)


def test_a_time_named_ahead_past_a_month_schedules_nothing():
    """``Ev.ahead``: the time a line names ahead of it (a notice's NotBefore), none for a time at or before the line
    and none further than ``AHEAD_MAX_US`` (a NotBefore in 2099: a garbled date would hold its incident open, and
    its page firing, for ever)."""
    from correlate.model import AHEAD_MAX_US

    n = ev("n", "h1", 1000 * S)
    assert n.ahead() is None
    for ahead, named in ((7 * 86400 * S, 1000 * S + 7 * 86400 * S), (AHEAD_MAX_US, 1000 * S + AHEAD_MAX_US),
                         (AHEAD_MAX_US + 1, None), (-5 * S, None)):
        n.start = 1000 * S + ahead
        assert n.ahead() == named, ahead


def _notices_batch(pipeline, notices):
    """The pipeline and the batch correlator over ``notices`` ((line time, NotBefore, EventId) each, datetimes UTC):
    each an Azure Scheduled Events document (a Preempt of node201, as ``azure.scheduled_event_notice`` reads it) on
    its own stamped line of node201. Returns (the events, each notice given its event's time as the correlator
    gives it: ``follow_notices``; the incidents by start)."""
    from correlate.correlator import correlate
    from correlate.model import events_from_table, follow_notices
    from ingest.decode import Decoded, Segment
    from tests.test_patterns import T0

    lines = [f'[{line:%Y-%m-%d %H:%M:%S}] {{"DocumentIncarnation":3,"Events":[{{"EventId":"{eid}","EventStatus":'
             f'"Scheduled","EventType":"Preempt","ResourceType":"VirtualMachine","Resources":["node201"],'
             f'"NotBefore":"{nb:%a, %d %b %Y %H:%M:%S} GMT"}}]}}' for line, nb, eid in notices]
    seg = Segment(data="\n".join(lines).encode(), origin="t:node201", stream="node201", host="node201", ref_ts=T0,
                  ref_basis="kafka", ingest_ts=T0)
    b = pipeline.run(Decoded(segments=[seg]))
    incs = correlate(b.events, b.link_samples, b.topology, now_us=T0)
    follow_notices(evs := events_from_table(b.events))
    return evs, sorted(incs, key=lambda i: i["start"])


@pytest.mark.parametrize("named_days", [-5 * 365, -32, 20 * 365, 32])
def test_a_time_named_more_than_a_month_from_its_line_places_nothing(pipeline, named_days):
    """A notice whose NotBefore lies years (or more than ``AHEAD_MAX_US``) before or after its line (a garbled or
    placeholder date, a stale document) was placed at that time (``Ev.start``): its incident began five years before
    any line of it (a break-it pass). Such a time is no time of the event: the notice is placed at its line, its
    incident starts there and schedules nothing. One named 10 min before its line (a notice re-sent while the event
    waits to start) is still placed at that time."""
    from datetime import datetime, timedelta, timezone

    line = datetime(2025, 3, 1, 10, 0, 0, tzinfo=timezone.utc)
    iso = lambda d: f"{d:%Y-%m-%dT%H:%M:%S}.000000Z"  # noqa: E731
    (e,), (inc,) = _notices_batch(pipeline, [(line, line + timedelta(days=named_days), "A1")])
    assert (e.start, e.ahead()) == (e.ts, None)
    assert (inc["start"], inc["end"], inc.get("scheduled")) == (iso(line), iso(line), None)
    (e,), (inc,) = _notices_batch(pipeline, [(line, line - timedelta(minutes=10), "A1")])
    assert (e.start, inc["start"]) == (e.ts - 600 * S, iso(line - timedelta(minutes=10)))


def test_notices_of_one_event_id_months_apart_are_two_events(pipeline):
    """Two notices of one host with one EventId nine months apart (an id a handler reuses, or a fleet's placeholder),
    each with its NotBefore 15 min after its line. They were one incident from March to November, the March notice
    placed at November's NotBefore (a break-it pass). A cloud re-sends a pending event's notice until it happens, and
    names its time at most ``AHEAD_MAX_US`` ahead: notices of one id are one event's while their lines lie within
    that of the event's first; later, another event's. Two incidents, each scheduled at its own NotBefore; a notice
    re-sent 10 min after the first, its NotBefore moved, is still the first's."""
    from datetime import datetime, timedelta, timezone

    line = datetime(2025, 3, 1, 10, 0, 0, tzinfo=timezone.utc)
    later = line + timedelta(days=270)
    iso = lambda d: f"{d:%Y-%m-%dT%H:%M:%S}.000000Z"  # noqa: E731
    q = timedelta(minutes=15)
    evs, incs = _notices_batch(pipeline, [(line, line + q, "A1"), (line + timedelta(minutes=10), line + 2 * q, "A1"),
                                          (later, later + q, "A1")])
    assert [e.start for e in sorted(evs, key=lambda e: e.ts)] == [int((d + q).timestamp() * S)
                                                                 for d in (line + q, line + q, later)]
    assert [(i["start"], i["end"], i.get("scheduled")) for i in incs] == [
        (iso(line), iso(line + timedelta(minutes=10)), iso(line + 2 * q)), (iso(later), iso(later), iso(later + q))]


def _stepped_one_by_one(b):
    """A :class:`StreamCorrelator` fed ``b``'s events (a pipeline batch) one at a time in ``ts`` order, a step at each
    event's time. Returns (the events sorted, their ``ts`` in µs, the stream, each version it emitted with the step's
    time, (incident, µs))."""
    import pyarrow.compute as pc

    events = b.events.take(pc.sort_indices(b.events, [("ts", "ascending")]))
    ts = events.column("ts").cast("int64").to_pylist()
    sc = StreamCorrelator()
    sc.add(events.schema.empty_table(), b.link_samples, b.topology)
    seen = []
    for k, now in enumerate(ts):
        sc.add(events.slice(k, 1), now_us=now)
        seen += [(i, now) for i in sc.step(now_us=now)]
    return events, ts, sc, seen


def _served_then_restarted(b, tmp_path, restart, read_back: bool):
    """The service over ``b`` (a pipeline batch) in a real Parquet lake at ``tmp_path``: its events in time order one
    at a time up to ``restart`` (a datetime), each written to the lake and stepped, the incidents stored by an
    :class:`api.sink.IncidentSink`; then a new stream restored from the lake as a correlate worker does
    (``read_back``: ``restore(read_back=True)``) or as the service does (``IncidentSink.recent_events``, 24 h back).
    Returns (the events sorted by ``ts``, their ``ts`` in µs, how many came before the restart, the sink read again,
    the incidents it stored, the restored :class:`StreamCorrelator`)."""
    import pyarrow.compute as pc

    from api.sink import IncidentSink
    from ingest.lake import Lake
    from schemas.settings import Settings

    events = b.events.take(pc.sort_indices(b.events, [("ts", "ascending")]))
    ts = events.column("ts").cast("int64").to_pylist()
    cut = sum(t <= restart.timestamp() * S for t in ts)
    root, state = tmp_path / "lake", tmp_path / "state"
    lake = Lake(root)
    lake.init()
    sink = IncidentSink(Settings(lake=str(root), state_dir=state), lake)
    sc = StreamCorrelator()
    sc.add(events.schema.empty_table(), b.link_samples, b.topology)
    for k in range(cut):  # the service before its restart: events to the lake, incidents stored
        lake.write("events", events.slice(k, 1), f"b{k}")
        sc.add(events.slice(k, 1), now_us=ts[k])
        sink.emit(sc.step(now_us=ts[k]))
    again = IncidentSink(Settings(lake=str(root), state_dir=state))
    stored = again.stored()
    sc = StreamCorrelator()
    sc.add(events.schema.empty_table(), b.link_samples, b.topology)
    if read_back:
        sc.restore(stored, read_back=True)
    else:
        sc.restore(stored, again.recent_events(int((300 + 3600) * S), stored, 24 * 3600 * S, now=restart))
    return events, ts, cut, again, stored, sc


@pytest.mark.parametrize("read_back", [True, False])
def test_a_restart_a_day_after_a_notice_still_ties_the_peers_reset_at_its_time_as_the_batch(pipeline, tmp_path,
                                                                                            read_back):
    """An Azure notice (``azure.scheduled_event_notice``) whose NotBefore is 48 h after its line, its host logging
    every hour and its GPU falling off the bus 29 h after the notice (an incident of its own); the service stores
    events and incidents in a real Parquet lake, restarts 30 h after the notice, and the peer's "Connection reset
    by peer" comes 2 s after the NotBefore. A restart read back stored incidents by their ``end`` alone, within
    ``reach_back_us`` (24 h) of the host's newest (a correlate worker, ``restore(read_back=True)``) or of the lake's
    newest event (the service, ``IncidentSink.recent_events``): the notice was forgotten and the reset made an
    incident of its own (a defect pass). They read back an incident whose ``scheduled`` time lies within it
    (``incident.current_until``), and the flushed incidents are the batch's."""
    from datetime import timedelta

    from correlate.correlator import correlate
    from ingest.decode import Decoded, Segment
    from tests.test_patterns import RECV, T0

    line, nb, node201 = _notice_then_hourly(48, 48)
    restart = line + timedelta(hours=30)
    xid = (f"{line + timedelta(hours=29):%Y-%m-%dT%H:%M:%S}.000000+00:00 node201 kernel: NVRM: Xid (PCI:0000:18:00): "
           "79, pid=0, GPU has fallen off the bus.")
    reset = RECV.replace("[2026-11-20 10:05:02]", f"[{nb + timedelta(seconds=2):%Y-%m-%d %H:%M:%S}]")
    files = {"node201": node201, "node201.kern": xid, "node024": reset.format(host="node024", addr="10.1.3.201")}
    segs = [Segment(data=x.encode(), origin=f"t:{h}", stream=h, host=h.split(".")[0], ref_ts=T0, ref_basis="kafka",
                    ingest_ts=T0) for h, x in files.items()]
    b = pipeline.run(Decoded(segments=segs))
    events, ts, cut, again, stored, sc = _served_then_restarted(b, tmp_path, restart, read_back)
    assert sorted((i["category"], i.get("scheduled")) for i in stored) == [
        ("gpu_off_bus", None), ("other", f"{nb:%Y-%m-%dT%H:%M:%S}.000000Z")]
    for k in range(cut, len(ts)):
        sc.add(events.slice(k, 1), now_us=ts[k])
        if wanted := sc.to_read_back():
            sc.add_cold(again.incident_events(wanted), wanted)
        sc.step(now_us=ts[k])
    sc.step(now_us=ts[-1], flush=True)
    final = {i: v[2] for i, v in sc.emitted.items() if v[2].get("status") != "superseded"}
    want = {i["id"]: i for i in correlate(b.events, b.link_samples, b.topology, now_us=ts[-1])}
    (notice_inc,) = [i for i in want.values() if i["category"] == "other"]
    assert [(d["host"], d["relation"]) for d in notice_inc["downstream"]] == [("node024", "peer_host")]
    strip = lambda i: {k: v for k, v in i.items() if k not in ("version", "status", "recurrence")}  # noqa: E731
    assert {i: strip(v) for i, v in final.items()} == {i: strip(v) for i, v in want.items()}


def test_a_notice_whose_time_passes_with_no_peers_reset_resolves_in_the_stream_as_in_the_batch(pipeline):
    """The catalog's real Azure notice (scylladb/scylla-cluster-tests#5608, ``tests.test_patterns.AZURE_NOTICE``) with
    its NotBefore two days after its line, and no peer's reset at that time (the maintenance was canceled, or harmed
    nothing); its host logs every half hour until 90 min past the NotBefore. The stream emitted it ``open`` (its
    ``scheduled`` time ahead), then its event went cold by its line's time, so its incident was correlated no more:
    ``open`` stood for ever, where the batch says ``resolved`` (a break-it pass). Its last version is ``resolved``, made
    at the first step ``resolve_after_us`` past the NotBefore, and is the batch's."""
    from datetime import datetime, timedelta, timezone

    from correlate.correlator import correlate
    from ingest.decode import Decoded, Segment
    from tests.test_patterns import AZURE_NOTICE, BOOT, T0

    line = datetime(2023, 3, 16, 13, 46, 56, tzinfo=timezone.utc)
    nb = line + timedelta(days=2)
    notice = AZURE_NOTICE.replace("Thu, 16 Mar 2023 14:01:28 GMT", f"{nb:%a, %d %b %Y %H:%M:%S} GMT")
    boot = BOOT.replace("2026-11-20 10:00:01", f"{line - timedelta(seconds=5):%Y-%m-%d %H:%M:%S}")
    halfhourly = [f"[{line + timedelta(minutes=30 * m):%Y-%m-%d %H:%M:%S}] node201:1200:1200 [0] NCCL INFO Bootstrap : "
                  f"Using eth0:10.1.3.201<0>" for m in range(1, 2 * 48 + 4)]
    seg = Segment(data="\n".join([boot.format(host="node201", addr="10.1.3.201"), notice, *halfhourly]).encode(),
                  origin="t:node201", stream="node201", host="node201", ref_ts=T0, ref_basis="kafka", ingest_ts=T0)
    b = pipeline.run(Decoded(segments=[seg]))
    events, ts, sc, seen = _stepped_one_by_one(b)
    seen = [(i["version"], i["status"], i.get("scheduled"), now) for i, now in seen]
    nb_iso = f"{nb:%Y-%m-%dT%H:%M:%S}.000000Z"
    at = lambda d: int(d.timestamp() * S)  # noqa: E731
    assert seen == [(1, "open", nb_iso, at(line + timedelta(minutes=30))),
                    (2, "resolved", nb_iso, at(nb + timedelta(minutes=30)))]
    (want,) = correlate(events, b.link_samples, b.topology, now_us=ts[-1])
    (got,) = [v[2] for v in sc.emitted.values()]
    strip = lambda i: {k: v for k, v in i.items() if k not in ("version", "clocks")}  # noqa: E731
    assert strip(got) == strip(want) and want["status"] == "resolved"


@pytest.mark.parametrize("read_back", [True, False])
def test_a_restart_before_a_notices_time_resolves_it_when_no_peers_reset_comes_as_the_batch(pipeline, tmp_path,
                                                                                          read_back):
    """An Azure notice (``azure.scheduled_event_notice``) whose NotBefore is 48 h after its line, its host logging every
    hour for 50 h, and no peer's reset at that time; the service stores events and incidents in a real Parquet lake and
    restarts 30 h after the notice, both ways (a correlate worker's ``restore(read_back=True)``, the service's
    ``IncidentSink.recent_events``). The stored ``open`` version stood after the restart too (the notice read back
    cold was correlated no more; a break-it pass): the stream emits ``resolved``, the batch's status, without a
    flush."""
    from datetime import timedelta

    from correlate.correlator import correlate
    from ingest.decode import Decoded, Segment
    from tests.test_patterns import T0

    line, nb, node201 = _notice_then_hourly(48, 50)
    restart = line + timedelta(hours=30)
    seg = Segment(data=node201.encode(), origin="t:node201", stream="node201", host="node201", ref_ts=T0,
                  ref_basis="kafka", ingest_ts=T0)
    b = pipeline.run(Decoded(segments=[seg]))
    events, ts, cut, again, stored, sc = _served_then_restarted(b, tmp_path, restart, read_back)
    nb_iso = f"{nb:%Y-%m-%dT%H:%M:%S}.000000Z"
    assert [(i["status"], i.get("scheduled")) for i in stored] == [("open", nb_iso)]
    out = []
    for k in range(cut, len(ts)):
        sc.add(events.slice(k, 1), now_us=ts[k])
        if wanted := sc.to_read_back():
            sc.add_cold(again.incident_events(wanted), wanted)
        out += [(i["id"], i["version"], i["status"], i.get("scheduled"), ts[k]) for i in sc.step(now_us=ts[k])]
    (want,) = correlate(b.events, b.link_samples, b.topology, now_us=ts[-1])
    assert out == [(stored[0]["id"], 2, "resolved", nb_iso, int((nb + timedelta(hours=1)).timestamp() * S))]
    assert (want["id"], want["status"], want["scheduled"]) == (stored[0]["id"], "resolved", nb_iso)


#: the catalog's real GCE harness line (``gce.instance_event``'s example, scylladb/scylla-cluster-tests#14964): its
#: ``< t:…,522`` prefix is no stamp the decoder reads, and the time it names (``occurs_at``) is exact to the µs
GCE_HARNESS = ("< t:2026-05-27 11:42:06,522 f:file_logger.py  l:108  c:sdcm.sct_events.file_logger p:CRITICAL > "
               "2026-05-27 09:42:06.521: (GceInstanceEvent Severity.CRITICAL) period_type=one-time "
               "event_id=b8ba12ce-2b13-4887-88b5-517e6dce0f4f: compute.instances.terminateOnHostMaintenance on node "
               "pr-provision-test-dmitriy-db-node-6f1407b3-0-1 at 2026-05-27 11:41:47.868757+02:00: Instance "
               "terminated during Compute Engine maintenance.")


@pytest.mark.parametrize("which", ["azure", "gce"])
@pytest.mark.parametrize("gap_min", [10, 40])
def test_a_notice_without_a_stamp_of_its_own_joins_its_peers_reset_at_its_time_however_far_its_next_stamp(
        pipeline, which, gap_min):
    """A cloud's notice line that prints no stamp of its own (the scylla-cluster-tests harness's ``< t:…`` prefix:
    the catalog's real Azure notice, ``tests.test_patterns.AZURE_NOTICE``, and GCE line, :data:`GCE_HARNESS`) takes
    the time of its host's stamped line before it, spanning to the next (``details.ts_until``: ``gap_min`` minutes
    later). The time it names (``details.occurs_us``: the NotBefore, the moment the VM went) is the cloud's, exact to
    its own resolution wherever the line lies (``Ev.start_precision_us``). Its peer's "Connection reset by peer"
    naming its host's address 2 s after that time is downstream of it, in the batch and in the stream; a reset 200 s
    after it (past the 120 s link window) is not: the line's span widens nothing. With the line's span as the
    precision, a span past the 120 s window kept the notice out of every link and the reset was an incident of its
    own (a defect pass: a host quiet for 10 min after the notice)."""
    from datetime import datetime, timedelta, timezone

    import pyarrow.compute as pc

    from correlate.correlator import correlate
    from ingest.decode import Decoded, Segment
    from tests.test_patterns import AZURE_NOTICE, BOOT, RECV, T0

    if which == "azure":  # written 13:46:56 (the line before it: 5 s earlier), NotBefore 14:01:28
        notice, before = AZURE_NOTICE, datetime(2023, 3, 16, 13, 46, 51, tzinfo=timezone.utc)
        at = datetime(2023, 3, 16, 14, 1, 28, tzinfo=timezone.utc)
    else:  # terminated at 11:41:47.868757+02:00, the harness's line 19 s later
        notice, before = GCE_HARNESS, datetime(2026, 5, 27, 9, 41, 40, tzinfo=timezone.utc)
        at = datetime(2026, 5, 27, 9, 41, 47, 868757, tzinfo=timezone.utc)
    boot = BOOT.replace("2026-11-20 10:00:01", f"{before:%Y-%m-%d %H:%M:%S}").format(host="node201",
                                                                                       addr="10.1.3.201")
    later = [f"[{before + timedelta(minutes=m):%Y-%m-%d %H:%M:%S}] node201:1200:1200 [0] NCCL INFO Bootstrap : "
             f"Using eth0:10.1.3.201<0>" for m in (gap_min, gap_min + 10)]

    def run(after_s: int) -> tuple[list[dict], list[dict]]:
        reset = RECV.replace("[2026-11-20 10:05:02]", f"[{at + timedelta(seconds=after_s):%Y-%m-%d %H:%M:%S}]")
        files = {"node201": "\n".join([boot, notice, *later]), "node024": reset.format(host="node024",
                                                                                      addr="10.1.3.201")}
        segs = [Segment(data=x.encode(), origin=f"t:{h}", stream=h, host=h, ref_ts=T0, ref_basis="kafka",
                        ingest_ts=T0) for h, x in files.items()]
        b = pipeline.run(Decoded(segments=segs))
        (e,) = [e for e in b.events.to_pylist() if e["host"] == "node201" and e["severity"] != "info"]
        assert e["ts_basis"] == "inherited" and e["ts_precision_us"] > 120 * S, e  # the line's span: > the window
        now = int((at + timedelta(hours=2)).timestamp() * S)
        batch = correlate(b.events, b.link_samples, b.topology, now_us=now)
        events = b.events.take(pc.sort_indices(b.events, [("ts", "ascending")]))
        sc = StreamCorrelator()
        sc.add(events.schema.empty_table(), b.link_samples, b.topology)
        for k, t in enumerate(events.column("ts").cast("int64").to_pylist()):
            sc.add(events.slice(k, 1), now_us=t)
            sc.step(now_us=t)
        sc.step(now_us=now, flush=True)
        stream = [v[2] for v in sc.emitted.values() if v[2].get("status") != "superseded"]
        return batch, stream

    for after_s, tied in ((2, True), (200, False)):
        batch, stream = run(after_s)
        for got in (batch, stream):
            assert [(i["initiator"]["host"], [(d["host"], d["relation"]) for d in i["downstream"]])
                    for i in got if i["initiator"]["host"] == "node201"] == [
                ("node201", [("node024", "peer_host")] if tied else [])], (after_s, got)
            assert len(got) == (1 if tied else 2), (after_s, got)
        strip = lambda i: {k: v for k, v in i.items() if k not in ("version", "status", "recurrence")}  # noqa: E731
        assert sorted(map(strip, stream), key=lambda i: i["id"]) == sorted(map(strip, batch), key=lambda i: i["id"])


def _idle_skip_templates() -> dict[tuple[int, str], dict]:
    """Real events (``ingest.pipeline``) of three hosts n0..n2, keyed by (host, what): ``boot`` (NCCL's bootstrap
    line naming the host's address), ``xid79`` (a GPU fallen off the bus), ``reset`` (NCCL's "Connection reset by
    peer" naming the next host's address: a peer report) and ``notice`` (an Azure Scheduled Event, scylladb's real
    one, ``tests.test_patterns.AZURE_NOTICE``: its ``details.occurs_us`` is set per event)."""
    from ingest.catalog import default_catalog
    from ingest.decode import Decoded, Segment
    from ingest.pipeline import Pipeline
    from tests.test_patterns import AZURE_NOTICE, BOOT, RECV, T0, XID79

    pipe, out = Pipeline(default_catalog()), {}
    for i in range(3):
        host, peer = f"n{i}", f"10.0.0.{(i + 1) % 3}"
        lines = [BOOT.split("\n")[0].format(host=host, addr=f"10.0.0.{i}"), XID79.format(when="2026-11-20 10:05:00"),
                 RECV.format(host=host, addr=peer), AZURE_NOTICE]
        seg = Segment(data="\n".join(lines).encode(), origin=f"t:{host}", stream=host, host=host, ref_ts=T0,
                      ref_basis="kafka", ingest_ts=T0)
        rows = Pipeline.run(pipe, Decoded(segments=[seg])).events.to_pylist()
        assert [r["signature"] for r in rows] == ["nccl.bootstrap", "xid", "nccl.socket.peer_lost",
                                                   "azure.scheduled_event_notice"]
        out.update({(i, what): r for what, r in zip(("boot", "xid79", "reset", "notice"), rows)})
    return out


_IDLE_SKIP_TEMPLATES: dict = {}
#: processing-time advances (s) of the schedules below: near every threshold of the stream (close_after 60/120 s,
#: idle 60/120/600 s, early 300 s, lateness 300 s, resolve 900 s, what is kept: lateness + an hour)
_IDLE_DT_S = [0, 1, 2, 30, 59, 60, 61, 62, 119, 120, 121, 122, 299, 300, 301, 600, 899, 900, 901, 902, 3899, 3900, 3901,
              4000]


@settings(max_examples=40, deadline=None)
@given(bases=st.lists(st.sampled_from(["line", "line", "kafka", "file"]), min_size=3, max_size=3),
       close_s=st.sampled_from([60, 120]), idle_s=st.sampled_from([60, 120, 600]),
       early_s=st.sampled_from([300, None]), skew_s=st.sampled_from([0, 2]), ops=st.lists(st.one_of(
           st.tuples(st.just("add"), st.lists(st.tuples(
               st.integers(0, 2), st.sampled_from(["boot", "xid79", "xid79", "reset", "reset", "notice"]),
               st.sampled_from([-400, -200, -121, -120, -60, -5, -1, 0, 2]),  # the line's time from now (s)
               st.sampled_from([60, 119, 120, 600, 900, 3600, 86400])),  # a notice's time ahead of its line (s)
               min_size=1, max_size=3)),
           st.tuples(st.just("step"), st.sampled_from(_IDLE_DT_S)),
           st.tuples(st.just("polls"), st.integers(1, 40), st.sampled_from([1, 10, 30, 61]))), min_size=1, max_size=12))
def test_a_skipped_idle_step_returns_what_a_full_step_would(bases, close_s, idle_s, early_s, skew_s, ops):
    """``StreamCorrelator.steady`` skips a step that nothing but processing time would change, until a time it depends
    on passes (an incident's quiet to resolve, a held incident's hosts' idle_us, a host with no watermark past its last
    line by close_after_us, a quiet host's events forgotten). Real lines of three hosts — stamped (``line``) or printing
    no time (``kafka``/``file``: their arrival), Xid 79s, peers' "Connection reset by peer" naming another host's
    address, Azure notices with their time ahead — added and stepped on random schedules of processing time, with runs
    of idle polls: every step gives the versions a stream that correlates at every step gives, at the same steps."""
    import json

    from ingest.pipeline import to_table
    from schemas.events import EVENTS_SCHEMA

    if not _IDLE_SKIP_TEMPLATES:
        _IDLE_SKIP_TEMPLATES.update(_idle_skip_templates())
    t0 = 1_800_000_000 * S

    def run(skip: bool) -> list[tuple[int, str, int, str]]:
        sc = StreamCorrelator(lateness_us=300 * S, close_after_us=close_s * S, idle_us=idle_s * S,
                              early_after_us=early_s and early_s * S)
        sc.settings.clocks = Clocks(default_skew_us=skew_s * S)
        now, k, got, n = t0, 0, [], 0

        def step(flush: bool = False) -> None:
            nonlocal k
            if not skip:
                sc.steady = None
            got.extend((k, i["id"], i["version"], i["status"]) for i in sc.step(now_us=now, flush=flush))
            k += 1

        for op in ops:
            if op[0] == "add":
                rows = []
                for host, what, back_s, ahead_s in op[1]:
                    n += 1
                    r = dict(_IDLE_SKIP_TEMPLATES[(host, what)], event_id=f"e{n}", origin=f"kafka:raw/{host}/{n}")
                    details = json.loads(r["details"] or "{}")
                    if bases[host] == "line":
                        r.update(ts=now + back_s * S, ts_basis="line", ingest_ts=now)
                    else:
                        r.update(ts=now, ts_basis=bases[host], ingest_ts=now)
                        details["ts_upper_bound"] = True
                    if what == "notice":
                        details["occurs_us"] = r["ts"] + ahead_s * S
                    r["details"] = details  # to_table serialises it
                    rows.append(r)
                sc.add(to_table(rows, EVENTS_SCHEMA), now_us=now)
            elif op[0] == "step":
                now += op[1] * S
                step()
            else:
                for _ in range(op[1]):
                    now += op[2] * S
                    step()
        now += 5000 * S
        step()
        step(flush=True)
        return got

    assert run(True) == run(False)


def test_a_held_group_whose_unstamped_host_is_past_its_close_still_skips_idle_steps(monkeypatch):
    """A GPU fallen off the bus on a host whose lines print no time (``kafka``: timed by their arrival, no watermark)
    and a peer's stamped "Connection reset by peer" naming its address, which came 60 s late: one incident, held
    until both hosts have sent nothing for ``idle_us`` (the peer's watermark stands before the reset's close). Once
    the unstamped host's side was past the last line by ``close_after_us`` (122 s), that time, passed, stayed the
    limit of ``steady``: every poll until the group closed correlated again (58 of 58 at one a second). A time
    already passed changes nothing more: the polls between it and the hosts' quiet are skipped, and the incident
    comes out at the same step as with a step at every poll."""
    import correlate.stream as stream
    from ingest.pipeline import to_table
    from schemas.events import EVENTS_SCHEMA

    calls = []
    real = stream.correlate
    monkeypatch.setattr(stream, "correlate", lambda *a, **k: calls.append(k["now_us"]) or real(*a, **k))
    if not _IDLE_SKIP_TEMPLATES:
        _IDLE_SKIP_TEMPLATES.update(_idle_skip_templates())
    t = 1_800_000_000 * S

    def row(host: int, what: str, ts: int, basis: str, now: int) -> dict:
        r = _IDLE_SKIP_TEMPLATES[(host, what)]
        details = orjson.loads(r["details"]) | ({} if basis == "line" else {"ts_upper_bound": True})
        return dict(r, event_id=f"{what}{host}", origin=f"kafka:raw/{host}/0", ts=ts, ts_basis=basis, ingest_ts=now,
                    details=details)

    def polled(skip: bool) -> list[tuple[int, int, str, list]]:
        sc = StreamCorrelator(lateness_us=300 * S, close_after_us=120 * S, idle_us=120 * S)
        sc.settings.clocks = Clocks(default_skew_us=0)
        sc.add(to_table([row(0, "boot", t, "kafka", t), row(0, "xid79", t, "kafka", t)], EVENTS_SCHEMA), now_us=t)
        sc.step(now_us=t)
        # n2's reset names n0's address (10.0.0.0), written 2 s after the Xid, arrived at 60 s
        sc.add(to_table([row(2, "reset", t + 2 * S, "line", t + 60 * S)], EVENTS_SCHEMA), now_us=t + 60 * S)
        got = []
        for k in range(60, 400):
            if not skip:
                sc.steady = None
            got += [(k, i["version"], i["initiator"]["host"], [(d["host"], d["relation"]) for d in i["downstream"]])
                    for i in sc.step(now_us=t + k * S)]
        return got

    every = polled(False)
    calls.clear()
    assert polled(True) == every == [(181, 1, "n0", [("n2", "peer_host")])]  # n0 quiet since 60 s for idle_us
    # the first step, the one after the reset came (steady until n0's side is 120 s past the reset), the one past
    # it (held still: steady until the hosts' quiet), the step that emits and the one after it
    assert [(c - t) // S for c in calls] == [0, 60, 123, 181, 182]


def test_a_host_silent_past_the_window_and_the_lateness_leaves_no_entry():
    """``heard_us`` and ``appended_us`` (per host) were never pruned: a fleet whose hosts come and go grew them for
    ever. A host silent past the longest link window and the allowed lateness (``_keep_us``) that holds nothing any
    more (its non-fault events forgotten) leaves no entry; one silent exactly that long, or one that still holds a
    fault, keeps its own; one that comes back starts afresh."""
    from ingest.pipeline import to_table
    from schemas.events import EVENTS_SCHEMA

    def table(rows):  # (event id, host, ts, ts basis, kind)
        return to_table([{"event_id": i, "ts": ts, "ts_basis": basis, "host": h, "source": "dmesg", "kind": kind,
                          "signature": "xid" if kind == "xid" else "other", "device_type": "gpu",
                          "device": "0000:01:00.0",
                          "severity": "critical" if kind == "xid" else "info",
                          "xid": 79 if kind == "xid" else None, "message": "m", "ts_precision_us": 1, "count": 1,
                          "origin": f"kafka:t/0/{i}"} for i, h, ts, basis, kind in rows], EVENTS_SCHEMA)

    sc = StreamCorrelator(lateness_us=60 * S, close_after_us=10 * S, idle_us=60 * S)
    sc.settings.clocks = Clocks(default_skew_us=0)
    keep, t0 = sc._keep_us(), 1_800_000_000 * S
    sc.add(table([("g1", "gone", t0, "line", "other"), ("g2", "gone", t0 + S, "kafka", "other"),
                  ("f1", "faulty", t0, "line", "xid")]), now_us=t0 + S)
    sc.step(now_us=t0 + S)
    assert sc.heard_us == {"gone": t0 + S, "faulty": t0 + S} and sc.appended_us == {"gone": t0 + S}
    for i, now in enumerate((t0 + S + keep, t0 + 2 * S + keep)):  # silent exactly ``keep``, then past it
        sc.add(table([(f"s{i}", "stay", now, "line", "other")]), now_us=now)
        sc.step(now_us=now)
        assert ("gone" in sc.heard_us, "gone" in sc.appended_us) == ((True, True) if i == 0 else (False, False))
    assert sc.heard_us == {"faulty": t0 + S, "stay": t0 + 2 * S + keep} and sc.appended_us == {}
    assert {e.host for e in sc.events.values()} == {"faulty", "stay"}
    back = t0 + 3 * S + keep
    sc.add(table([("g3", "gone", back, "kafka", "other")]), now_us=back)
    sc.step(now_us=back)
    assert sc.heard_us["gone"] == back and sc.appended_us == {"gone": back}


def test_clocks_cache_each_hosts_bound_and_a_new_clocks_starts_afresh():
    """``Clocks.skew`` is cached per host on first ask (the attribution and the clustering ask it of the same hosts
    again and again): a configured bound wins, an estimate only widens the default, and ``with_estimates`` makes
    clocks whose bounds are the new estimates', not the cached ones of the clocks it came from."""
    clocks = Clocks(skew_us={"a": 3 * S}, default_skew_us=S, estimated_us={"a": 9 * S, "b": 5 * S, "c": S // 2})
    assert [clocks.skew(h) for h in ("a", "b", "c", "d", "b")] == [3 * S, 5 * S, S, S, 5 * S]
    wider = clocks.with_estimates({"b": 7 * S, "d": 4 * S})
    assert [wider.skew(h) for h in ("a", "b", "d")] == [3 * S, 7 * S, 4 * S]
    assert [clocks.skew(h) for h in ("b", "d")] == [5 * S, S]
    # the cache is no part of the clocks' value: equal clocks compare equal whatever each was asked
    assert clocks == Clocks(skew_us={"a": 3 * S}, default_skew_us=S, estimated_us={"a": 9 * S, "b": 5 * S, "c": S // 2})


def test_a_fleet_whose_hosts_come_and_go_keeps_per_host_state_bounded(monkeypatch):
    """Issue 6 (memory stays bounded): ``host_watermarks``, ``source_watermarks`` and ``arrived_us`` grew by an entry
    per host (and per host, source and raw partition) the fleet ever had, and ``uuid_lines`` by one per GPU UUID. Pods
    that each send a line and a GPU UUID line, then go: 300 of them over 5 simulated hours (keep: 1 h 10 s) leave the
    state of the pods whose UUID lines are the newest ``MAX_UUID_LINES``; a pod's fault keeps its own."""
    from ingest.pipeline import to_table
    from schemas.events import EVENTS_SCHEMA
    import correlate.stream as stream

    monkeypatch.setattr(stream, "MAX_UUID_LINES", 100)
    sc = StreamCorrelator(lateness_us=10 * S, close_after_us=5 * S, idle_us=10 * S)
    sc.settings.clocks = Clocks(default_skew_us=0)
    keep, t0 = sc._keep_us(), 1_800_000_000 * S
    assert keep == 3610 * S

    def rows(h, ts, fault):
        base = {"host": h, "source": "nvml", "ts": ts, "ts_basis": "line", "ts_precision_us": 1, "count": 1,
                "ingest_ts": ts + S, "severity": "info", "message": "m"}
        out = [dict(base, event_id=f"{h}-i", kind="other", signature="other", origin=f"kafka:fleet.dmesg/{len(h)}/1"),
               dict(base, event_id=f"{h}-u", kind="other", signature="other", device_type="gpu",
                    device="0000:01:00.0", details={"uuid": f"GPU-{h}"}, origin="kafka:fleet.nvml/0/1")]
        if fault:
            out.append(dict(base, event_id=f"{h}-x", kind="xid", signature="xid", severity="critical", xid=79,
                            device_type="gpu", device="0000:01:00.0", origin="kafka:fleet.dmesg/0/2"))
        return out

    sizes = []
    for k in range(300):  # a pod a minute; pod-0 has a fault
        now = t0 + 60 * k * S
        sc.add(to_table(rows(f"pod-{k}", now, k == 0), EVENTS_SCHEMA), now_us=now + S, source=f"events/{k % 3}")
        sc.step(now_us=now + S)
        sizes.append(max(len(sc.heard_us), len(sc.arrived_us), len(sc.host_watermarks), len(sc.source_watermarks) // 2,
                         len(sc.uuid_lines), len(sc.uuid_gpus)))  # two raw partitions a pod
    # the pods whose UUID line is among the newest 100 (the 61 of the last ``keep`` among them), and pod-0
    assert max(sizes) <= 100 + 1 + 1 and sizes[-1] == 101
    assert len(sc.uuid_lines) == len(sc.uuid_gpus) == 100
    assert {h for h, _u in sc.uuid_lines} == {f"pod-{k}" for k in range(200, 300)}
    live = {f"pod-{k}" for k in range(200, 300)} | {"pod-0"}
    assert set(sc.host_watermarks) == set(sc.arrived_us) == set(sc.heard_us) == live
    assert {k[0] for k in sc.source_watermarks} == live
    assert "pod-0-x" in sc.events or "pod-0-x" in sc.cold  # a fault stays (its incident's)
    # a pod that comes back starts afresh: its line is on time and its watermark is its own again
    back = t0 + 60 * 300 * S
    assert sc.add(to_table(rows("pod-3", back - 30 * S, False)[:1], EVENTS_SCHEMA), now_us=back) == 0
    assert sc.host_watermarks["pod-3"].max_ts == back - 30 * S


def _day_line(host: str, d: int, i: int) -> Ev:
    """The ``i``-th dmesg line of ``host`` on day ``d`` after day 20,000 since the epoch (``i`` s into it), appended
    ``i + 1`` ms after its stamp: a line of the append-delay tests of the fleet's newest days."""
    day = 86400 * S
    t0 = 20_000 * day
    return Ev(event_id=f"{host}-{d}-{i}", ts=t0 + d * day + i * S, ts_basis="line", host=host, source="dmesg",
              kind="other", signature="s", severity="info", device_type=None, device=None, link=None, xid=None,
              sxid=None, peer=None, rank=None, nranks=None, comm=None, message="m", origin="kafka:t/0/1",
              ingest_ts=t0 + d * day + i * S + (i + 1) * 1000)


def test_append_delays_read_the_fleets_three_newest_days_whatever_the_order():
    """``AppendDelays.days`` kept a host that last sent a line weeks ago, and its old clock voted in the fleet's
    delay for ever: the days before the fleet's ``FLEET_DAYS`` newest are forgotten, with the hosts that hold no
    other, and a line of such a day is not taken, so the summary is the same whatever the order of the lines."""
    import random

    from correlate.window import FLEET_DAYS, AppendDelays

    line = _day_line

    assert FLEET_DAYS == 3
    lines = [line(f"pod-{d}", d, i) for d in range(30) for i in range(6)] + [line("node", d, 0) for d in range(30)]
    want = AppendDelays.of(lines)
    assert set(want.days) == {"pod-27", "pod-28", "pod-29", "node"}
    assert want.days["node"].keys() == {20_028, 20_029} and want.days["pod-27"].keys() == {20_027}
    for seed in range(3):
        rnd = random.Random(seed)
        got = AppendDelays.of(rnd.sample(lines, len(lines)))
        assert got.days == want.days, seed
        assert got.levels(5) == want.levels(5) and set(got.levels(5)) == {"pod-27", "pod-28", "pod-29"}


def test_a_lakes_append_delays_read_at_a_restart_are_of_the_fleets_three_newest_days():
    """A restart reads the summary of the lake's append delays (``api.sink.IncidentSink.append_delays``: each host's
    two newest days, whatever the fleet's): ``AppendDelays.of_rows`` kept a pod gone for weeks, whose old clock voted
    in the fleet's delay, and it knew no newest day of the fleet, so a replay's lines of an older day were then taken
    by one order and not by the other. The summary of the rows is that of their lines (``AppendDelays.of``)."""
    from correlate.window import AppendDelays

    line = _day_line

    lake = [line("pod-old", 0, i) for i in range(6)] + [line("node", d, i) for d in (9, 10) for i in range(6)]

    def rows(summary):  # as the lake's query returns them: each host's two newest days
        return [(h, dy, ahead, d, eid) for h, days in summary.days.items() for dy, lists in days.items()
                for ahead, kept in enumerate(lists) for d, eid in kept]

    restored = AppendDelays.of_rows([r for h in ("pod-old", "node")
                                     for r in rows(AppendDelays.of([e for e in lake if e.host == h]))])
    assert restored.days == AppendDelays.of(lake).days and set(restored.days) == {"node"}
    assert restored.levels(5) == AppendDelays.of(lake).levels(5)
    # then a replay of lines appended on an older day: the same summary whatever came first
    replay = [line("pod-r", 7, i) for i in range(6)]
    for e in replay:
        restored.observe(e)
    assert restored.days == AppendDelays.of(lake + replay).days


def test_the_uuid_lines_kept_past_the_cap_are_the_newest_to_arrive_whatever_the_hosts_clocks(monkeypatch):
    """``MAX_UUID_LINES``: the newest GPU UUID lines stay. By their stamps, a live host whose clock is days behind
    lost its UUID's mapping to its bus id first, and one days ahead kept its for ever; by arrival (Kafka append
    time), the host heard from last keeps its mapping."""
    from ingest.pipeline import to_table
    from schemas.events import EVENTS_SCHEMA
    import correlate.stream as stream

    monkeypatch.setattr(stream, "MAX_UUID_LINES", 2)
    sc = StreamCorrelator(lateness_us=10 * S, close_after_us=5 * S, idle_us=10 * S)
    sc.settings.clocks = Clocks(default_skew_us=0)
    t0 = 1_800_000_000 * S
    for k, (h, off) in enumerate((("ahead", 3 * 86400 * S), ("a", 0), ("b", 0), ("behind", -3 * 86400 * S))):
        now = t0 + 60 * k * S
        row = {"host": h, "source": "nvml", "ts": now + off, "ts_basis": "line", "ts_precision_us": 1, "count": 1,
               "ingest_ts": now, "severity": "info", "message": "m", "event_id": f"{h}-u", "kind": "other",
               "signature": "other", "device_type": "gpu", "device": "0000:01:00.0", "details": {"uuid": f"GPU-{h}"},
               "origin": "kafka:fleet.nvml/0/1"}
        sc.add(to_table([row], EVENTS_SCHEMA), now_us=now + S)
        sc.step(now_us=now + S)
    assert {h for h, _u in sc.uuid_lines} == {h for h, _u in sc.uuid_gpus} == {"b", "behind"}
