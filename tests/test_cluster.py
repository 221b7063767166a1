"""Clustering (correlate/cluster.py) against its definition.

``components`` buckets faults by the key a link rule's relation names (GPU or device, host, NVLink
domain, communicator) and searches context events outwards from their time. The definition is simpler:
two faults are linked when, for some link rule, both pass its kinds, ``window.within`` holds and
``rules.relation`` holds; a context event joins the component of the closest fault of its host within
its window. This test checks the fast form against that definition, pair by pair, on random fleets
(hypothesis), so any relation whose key drifts from ``rules.relation`` fails here.
"""

from __future__ import annotations

import dataclasses

from hypothesis import given, settings
from hypothesis import strategies as st

from correlate.cluster import FILE_REACH_US, _DSU, _context_window, _default_is_fault, _gpu_of, components, members
from correlate.model import Ev, across_reboot
from correlate.rules import LinkRule, Pred, Relations, any_holds, default_rules, relation
from correlate.topology import Topology
from correlate.window import Clocks, may_cause, within
from schemas.fleet import HostConfig

S = 1_000_000
HOSTS = ["h0", "h1", "h2", "h3"]
KINDS = ["xid", "nvlink_errors", "ecc", "nccl_error", "nccl_timeout", "fabric_manager", "nccl_p2p_fallback"]


def joins(rel: str, c: Ev, e: Ev, topo: Topology, rels: Relations | None = None) -> bool:
    """The relations as clustering reads them: ``rules.relation``, but ``same_host``, and ``same_domain`` of two
    lines of one host, hold on one host unless ``rules.Relations.other_job`` keeps the two apart (a GPU's own fault
    and a rank's report of a job NCCL's init lines place on none of its GPU's communicators: ``cluster._jobs_apart``'s
    buckets hold every other pair; the reference had the host one bucket whatever its jobs, and a draw of one job's
    Xid and another job's NCCL error on one host failed it); across hosts, ``same_domain`` keeps two jobs NCCL's init
    lines place apart (``cluster._domain_jobs``). ``rels``: the topology's, made when not given."""
    if rel == "same_host" or rel == "same_domain" and c.host == e.host:
        return c.host == e.host and not across_reboot(c, e) and not (rels or Relations(topo)).other_job(c, e)
    return relation(rel, c, e, topo)


def reference(events: list[Ev], links: list[LinkRule], topo: Topology, clocks: Clocks,
              related=None) -> list[list[str]]:
    """The definition, every pair tested: components as sorted lists of event ids."""
    evs = members(events)
    faults = [e for e in evs if _default_is_fault(e)]
    dsu = _DSU(len(faults))
    rels = Relations(topo)

    def loose(e: Ev, w: int) -> bool:  # an inherited time that spans more than the window: no join by it
        # (not one placed at a time the line states, details.occurs_us: that is exact to its own resolution
        # wherever the line lies, model.occurs_precision_us; a watchdog's span places it first)
        stated = "occurs_us" in e.details and not e.elapsed_ms and e.implied_start is None
        return "ts_until" in e.details and not stated and e.precision_us > w
    for i, a in enumerate(faults):
        for j, b in enumerate(faults[:i]):
            if a.host == b.host and any(x.signature == "operator.symptom" and x.details.get("untimed")
                                        for x in (a, b)):
                dsu.union(i, j)
            for r in links:
                if r.cause is not None or r.kinds and (a.kind not in r.kinds or b.kind not in r.kinds):
                    continue
                if loose(a, int(r.window_s * S)) or loose(b, int(r.window_s * S)):
                    continue
                if within(b, a, int(r.window_s * S), clocks) and joins(r.relation, b, a, topo, rels):
                    dsu.union(i, j)
    # a link derived from an explains rule joins each fault of its effect side to the nearest fault of its cause side
    # (by start; then the earlier, then the first in order) that may have caused it within its window, in its relation
    for r in links:
        if r.cause is None:
            continue
        for i, a in enumerate(faults):
            if not any_holds(r.effect, a) or loose(a, int(r.window_s * S)):
                continue
            near = [(abs(b.start - a.start), b.start, j) for j, b in enumerate(faults)
                    if j != i and any_holds(r.cause, b) and not loose(b, int(r.window_s * S))
                    and within(b, a, int(r.window_s * S), clocks)
                    and may_cause(b, a, int(r.window_s * S), clocks, int(r.lead_s * S))
                    and joins(r.relation, b, a, topo, rels)]
            if near:
                dsu.union(i, min(near)[2])
    # a component whose faults are all timed by their file's mtime joins the latest fault (by start, then order) with
    # a time of its own on its first fault's host that began at most FILE_REACH_US before it and is related to one
    if related is not None:
        comps: dict[int, list[int]] = {}
        for i in range(len(faults)):
            comps.setdefault(dsu.find(i), []).append(i)
        later = []
        for idx in list(comps.values()):
            if all(faults[i].ts_basis == "file" for i in idx):
                first = min(idx, key=lambda i: faults[i].order)
                t = min(faults[i].start for i in idx)
                timed = [j for j, f in enumerate(faults) if f.ts_basis != "file" and f.host == faults[first].host
                         and t - FILE_REACH_US <= f.start <= t and any(related(f, faults[i]) for i in idx)]
                if timed:
                    dsu.union(first, max(timed, key=lambda j: (faults[j].start, faults[j].order)))
                    continue
                # else the same, on the host a peer address of its faults names (NCCL's Bootstrap lines), the
                # first such host that has one
                for i in idx:
                    peer = topo.peer_host(faults[i]) if faults[i].details.get("peer_addr") else None
                    if not peer or peer == faults[i].host:
                        continue
                    timed = [j for j, f in enumerate(faults) if f.ts_basis != "file" and f.host == peer
                             and t - FILE_REACH_US <= f.start <= t and any(related(f, faults[k]) for k in idx)]
                    if timed:
                        dsu.union(first, max(timed, key=lambda j: (faults[j].start, faults[j].order)))
                        break
                    # else the peer host's faults its file's time dates (a raw dmesg stamp counted back from it)
                    filed = [j for j, f in enumerate(faults) if f.ts_basis == "file" and f.host == peer
                             and t - FILE_REACH_US <= f.start <= t and any(related(f, faults[k]) for k in idx)]
                    if filed:
                        dsu.union(first, max(filed, key=lambda j: (faults[j].start, faults[j].order)))
                        break
                else:
                    later.append((first, t, idx))
        # one no fault with a time of its own took joins, the same way, the file-dated faults of its host's other
        # components (as they stand after the joins before it)
        # (as long as the faults so joined span at most FILE_REACH_US)
        def span(root):
            s = [f.start for k, f in enumerate(faults) if dsu.find(k) == root]
            return min(s), max(s)

        for first, t, idx in later:
            root = dsu.find(first)
            untimed = [j for j, f in enumerate(faults) if f.ts_basis == "file" and f.host == faults[first].host
                       and dsu.find(j) != root and t - FILE_REACH_US <= f.start <= t
                       and any(related(f, faults[i]) for i in idx)
                       and max(span(root)[1], span(dsu.find(j))[1]) - min(span(root)[0], span(dsu.find(j))[0])
                       <= FILE_REACH_US]
            if untimed:
                dsu.union(first, max(untimed, key=lambda j: (faults[j].start, faults[j].order)))
        # a fault whose inherited time spans more than the shortest link's window, in a component with no other
        # fault with a time of its own, joins the latest related fault of its host (and GPU, when both name one)
        # with one that began from FILE_REACH_US before its time to the latest it may have been written
        if links:
            shortest = min(int(r.window_s * S) for r in links)
            vague = {i for i, f in enumerate(faults) if loose(f, shortest)}
            for i in sorted(vague, key=lambda i: faults[i].order):
                e = faults[i]
                if any(dsu.find(k) == dsu.find(i) and k not in vague and f.ts_basis != "file"
                       for k, f in enumerate(faults)):
                    continue
                cands = [j for j, f in enumerate(faults) if j not in vague and f.ts_basis != "file"
                         and f.host == e.host and e.ts - FILE_REACH_US <= f.start <= e.details["ts_until"] +
                         f.start_precision_us and ((g := _gpu_of(f, topo)) is None or _gpu_of(e, topo) in (None, g))
                         and not across_reboot(f, e) and related(f, e)]
                if cands:
                    dsu.union(i, max(cands, key=lambda j: (faults[j].start, faults[j].order)))
    groups: dict[int, list[str]] = {}
    for i, f in enumerate(faults):
        groups.setdefault(dsu.find(i), []).append(f.event_id)
    order = {f.event_id: f.order for f in faults}
    for e in evs:
        if _default_is_fault(e):
            continue
        w = _context_window(e, links) + 2 * S
        near = [(abs(f.start - e.start), order[f.event_id], i) for i, f in enumerate(faults)
                if f.host == e.host and within(e, f, w, clocks) and not loose(e, w) and not loose(f, w)]
        if near:
            best = min(near, key=lambda x: (x[0], x[1]))[2]
            groups[dsu.find(best)].append(e.event_id)
    return sorted(sorted(g) for g in groups.values())


@st.composite
def fleets(draw):
    n = draw(st.integers(1, 40))
    events = []
    for i in range(n):
        host = draw(st.sampled_from(HOSTS))
        basis = draw(st.sampled_from(["line", "line", "line", "file", "inherited"]))
        # a line that printed no time, dated by its file's mtime (window.file_dated): an upper bound
        dated = {"ts_upper_bound": True} if basis == "file" and draw(st.booleans()) else {}
        # or by the stamped line before it, written before the next (ingest.assemble._span_inherited): a span
        span = draw(st.sampled_from([3 * S, 200 * S, 5000 * S])) if basis == "inherited" else None
        kind = draw(st.sampled_from(KINDS))
        gpu = draw(st.one_of(st.none(), st.integers(0, 3)))
        by_bus = draw(st.booleans())
        info = draw(st.booleans())
        ts = draw(st.integers(0, 400)) * S + draw(st.sampled_from([0, 1, 999_999]))
        if span is not None:
            dated = {"ts_until": ts + span}
            if draw(st.integers(0, 3)) == 0:
                # a cloud notice's line: it states when the VM goes (details.occurs_us), to the second or the µs
                at = ts + draw(st.integers(-100, 300)) * S + draw(st.sampled_from([0, 868_757]))
                dated |= {"occurs_us": at, "occurs_at": f"12:{at // S // 60 % 60:02d}:{at // S % 60:02d}"
                          + (f".{at % S:06d}" if at % S else "")}
        events.append(Ev(
            event_id=f"e{i}", ts=ts,
            ts_basis=basis, host=host, source="dmesg", kind=kind, signature=kind,
            severity="info" if info else draw(st.sampled_from(["warning", "error", "critical"])),
            device_type=draw(st.sampled_from(["gpu", "gpu", None, "nvswitch"])),
            device=f"0000:{gpu + 1:02x}:00.0" if gpu is not None and by_bus else None,
            link=None, xid=None, sxid=None, peer=None,
            rank=draw(st.one_of(st.none(), st.integers(0, 7))), nranks=None,
            comm=draw(st.sampled_from([None, None, "c1", "c2"])), message="m",
            gpu_index=gpu if not by_bus else None,
            precision_us=span or draw(st.sampled_from([1, S, S, 90 * S])),
            origin=f"kafka:t/0/{i}:{draw(st.integers(0, 3))}",
            elapsed_ms=draw(st.sampled_from([None, None, 60_000])), seq=draw(st.sampled_from([None, None, 7, 8])),
            # a peer named by its host's name, by an address a Bootstrap line gave one host, two hosts, or none
            details=({"peer_addr": p} if (p := draw(st.sampled_from([None, None, "h1", "10.0.0.2", "10.0.0.9",
                                                                      "172.17.0.2"]))) else {}) | dated))
    inits = draw(st.lists(st.tuples(st.sampled_from(["c1", "c2", "c3"]), st.integers(0, 7), st.sampled_from(HOSTS),
                                     st.one_of(st.none(), st.integers(0, 3))), max_size=8))
    domains = draw(st.lists(st.sampled_from([None, "nvl72-a", "nvl72-b"]), min_size=len(HOSTS),
                            max_size=len(HOSTS)))
    skews = draw(st.lists(st.sampled_from([0, S, 2 * S]), min_size=len(HOSTS), max_size=len(HOSTS)))
    return events, inits, domains, skews


#: link rules without the wide same-host link that hides most of what the others do (a deployment's own rules)
CROSS_HOST_ONLY = [LinkRule(relation="same_domain", window_s=60), LinkRule(relation="same_comm", window_s=30),
                   LinkRule(relation="same_gpu", window_s=20), LinkRule(relation="same_collective", window_s=300),
                   LinkRule(relation="peer_host", window_s=40),
                   # links derived from explains rules (rules.reach): effect to nearest cause, across hosts and on one
                   LinkRule(relation="same_domain", window_s=200, cause=[Pred(kind=["ecc", "xid"])],
                            effect=[Pred(kind=["nccl_error", "nccl_timeout", "xid"])], from_rule="t1"),
                   LinkRule(relation="same_host", window_s=300, cause=[Pred(kind=["fabric_manager"])],
                            effect=[Pred(kind=["nccl_p2p_fallback", "nvlink_errors"])], from_rule="t2")]


def same_kind(a: Ev, b: Ev) -> bool:
    """A ``related`` for the file-dated faults' join (the correlator's is ``attribute.may_relate``)."""
    return a.kind == b.kind


@settings(max_examples=300, deadline=None)
@given(fleets(), st.booleans(), st.sampled_from([None, same_kind]))
def test_components_equal_the_pairwise_definition(fleet, own_rules, related):
    """Also with resolutions far above a second (90 s) and rules whose keyed buckets decide alone: a keyed
    bucket on one host is swept, one across hosts compared pair by pair, and both equal the definition."""
    events, inits, domains, skews = fleet
    topo = Topology(hosts={h: HostConfig(domain=d) for h, d in zip(HOSTS, domains)})
    for comm, rank, host, gpu in inits:
        topo.comm_ranks[comm][rank] = (host, None if gpu is None else f"0000:{gpu + 1:02x}:00.0")
    topo.index_to_bus.update({("h0", 1): "0000:02:00.0"})  # one host where NVML told index -> bus id
    topo.addr_hosts.update({"10.0.0.2": {"h2": 0}, "172.17.0.2": {"h0": 0, "h3": 0}})  # NCCL Bootstrap lines
    clocks = Clocks(skew_us=dict(zip(HOSTS, skews)), default_skew_us=S)
    links = CROSS_HOST_ONLY if own_rules else default_rules().links
    got = sorted(sorted(e.event_id for e in c) for c in components(events, links, topo, clocks, related=related))
    assert got == reference(events, links, topo, clocks, related)


@st.composite
def jobs(draw):
    """A communicator's or an NVLink domain's faults over many hosts with unequal skews: the keyed buckets that
    ``cluster._sweep_hosts`` joins by intervals instead of pair by pair."""
    hosts = [f"h{i}" for i in range(draw(st.integers(2, 12)))]
    events = [Ev(event_id=f"e{i}", ts=draw(st.integers(0, 300)) * S + draw(st.sampled_from([0, 1, 999_999])),
                 ts_basis="line", host=draw(st.sampled_from(hosts)), source="nccl",
                 kind=draw(st.sampled_from(["nccl_error", "nccl_timeout", "xid"])), signature="x", severity="error",
                 device_type=None, device=None, link=None, xid=None, sxid=None, peer=None,
                 rank=draw(st.integers(0, 15)), nranks=16, comm=draw(st.sampled_from(["c1", "c1", "c2", None])),
                 message="m", precision_us=draw(st.sampled_from([1, 1000, S, S, 20 * S])), origin=f"f:{i}",
                 seq=draw(st.sampled_from([None, 7, 7, 8])))
              for i in range(draw(st.integers(2, 60)))]
    topo = Topology(hosts={h: HostConfig(domain=draw(st.sampled_from([None, "d1", "d1", "d2"]))) for h in hosts})
    for r in range(16):
        topo.comm_ranks["c1"][r] = (draw(st.sampled_from(hosts)), None)
        topo.comm_ranks["c2"][r] = (draw(st.sampled_from(hosts)), None)
    clocks = Clocks(skew_us={h: draw(st.sampled_from([0, S // 2, S, 2 * S, 7 * S])) for h in hosts},
                    default_skew_us=S)
    links = draw(st.sampled_from([[LinkRule(relation="same_comm", window_s=w)] for w in (0, 1, 10, 30)]
                                 + [[LinkRule(relation="same_domain", window_s=w)] for w in (0, 5, 60)]
                                 + [[LinkRule(relation="same_collective", window_s=w)] for w in (0, 10, 3600)]))
    return events, links, topo, clocks


@settings(max_examples=200, deadline=None)
@given(jobs())
def test_buckets_across_many_hosts_equal_the_pairwise_definition(job):
    """The interval pass over a keyed bucket that spans hosts (skew added across hosts, not on one host) gives
    the components of the pair-by-pair definition; it replaced a nearest-first scan that visited every earlier
    fault in the window, O(n²) for a communicator of thousands of ranks timing out together."""
    events, links, topo, clocks = job
    got = sorted(sorted(e.event_id for e in c) for c in components(events, links, topo, clocks))
    assert got == reference(events, links, topo, clocks)


def _fault(i: int, start: int, precision: int, host: str = "h0") -> Ev:
    return Ev(event_id=f"e{i}", ts=start, ts_basis="line", host=host, source="dmesg", kind="xid", signature="xid",
              severity="error", device_type="gpu", device="0000:01:00.0", link=None, xid=None, sxid=None, peer=None,
              rank=None, nranks=None, comm=None, message="m", precision_us=precision, origin=f"f:{i}")


def test_one_host_links_hold_exactly_at_the_tolerance():
    """On one host two faults are linked at |Δt| = window + both resolutions, and not 1 µs beyond, whichever
    of them is the coarse one (the interval pass of ``cluster._sweep`` against ``window.within``)."""
    clocks = Clocks(skew_us={}, default_skew_us=5 * S)  # skew never applies on one host
    for rel in ("same_gpu", "same_host"):
        rule = [LinkRule(relation=rel, window_s=30)]
        for p0, p1 in ((S, 1), (1, S), (S, S), (1, 1)):
            tol = 30 * S + p0 + p1
            for gap, linked in ((tol, True), (tol + 1, False)):
                evs = [_fault(0, 100 * S, p0), _fault(1, 100 * S + gap, p1)]
                got = components(evs, rule, Topology(), clocks)
                assert (len(got) == 1) is linked, (rel, p0, p1, gap)
                assert within(evs[0], evs[1], 30 * S, clocks) is linked



def test_a_device_named_by_its_bus_id_is_one_device_whatever_rank_printed_it():
    """An NVSwitch's fault and a rank's line naming that switch by its PCI bus id are one device's (``same_device``)
    in the relation as in ``cluster._buckets``' keys: the relation asked their rank scopes to agree (which tells two
    jobs' "rank 0" apart, a line naming no device), so a draw of the clustering property found them one component in
    ``components`` and two in the definition."""
    topo = Topology()
    topo.comm_ranks["c1"][0] = ("h0", None)
    switch = dataclasses.replace(_fault(0, 349 * S, 1), device_type="nvswitch", severity="warning")
    ranks = dataclasses.replace(switch, event_id="e1", ts=0, severity="info", rank=0)
    assert relation("same_device", switch, ranks, topo) and relation("same_device", ranks, switch, topo)
    links = [LinkRule(relation="same_device", window_s=900)]
    clocks = Clocks(skew_us={}, default_skew_us=S)
    got = sorted(sorted(e.event_id for e in c) for c in components([switch, ranks], links, topo, clocks))
    assert got == [["e0", "e1"]] == reference([switch, ranks], links, topo, clocks)


def test_an_effect_in_two_buckets_joins_its_nearest_cause_over_both():
    """A link derived from an explains rule joins an effect to its nearest cause among every bucket it is in: a host's
    faults split by ``_jobs_apart`` (two jobs' communicators, faults of neither in both parts) had an Xid with no job
    join the far cause of the one part lacking its near cause (61 s against 3 s), and with it two jobs' components
    (a draw of the clustering property; the definition joins the nearest)."""
    def xid(i: int, t: int, **kw) -> Ev:
        return dataclasses.replace(_fault(i, t * S, 1, host="h2"), device=None, severity="warning", **kw)
    events = [xid(0, 61, gpu_index=0, comm="c2"), xid(1, 0),
              dataclasses.replace(xid(7, 0, comm="c1"), kind="nccl_error", signature="nccl_error"),
              xid(9, 64, ts_basis="inherited", precision_us=3 * S, details={"ts_until": 67 * S})]
    links = [LinkRule(relation="same_domain", window_s=200, cause=[Pred(kind=["ecc", "xid"])],
                      effect=[Pred(kind=["nccl_error", "nccl_timeout", "xid"])], from_rule="t1")]
    topo, clocks = Topology(hosts={"h2": HostConfig()}), Clocks(skew_us={}, default_skew_us=S)
    got = sorted(sorted(e.event_id for e in c) for c in components(events, links, topo, clocks))
    assert got == [["e0", "e9"], ["e1", "e7"]] == reference(events, links, topo, clocks)

# --- edges (correlate/attribute.py find_edges) -------------------------------------------------------------

EDGE_KINDS = ["xid", "xid", "gpu_off_bus", "sxid", "nvlink_errors", "nvlink_down", "nccl_error", "nccl_timeout",
              "pcie_aer", "gpu_init_failed"]


@st.composite
def scenes(draw):
    """Events of one candidate incident, in ``Ev.order`` as ``components`` hands them over, some timed only
    by an upper bound (``details.ts_upper_bound``: a file's mtime or a Kafka time), some watchdog timeouts (``elapsed_ms``) and lines placed at the
    start of the timeout they follow (``implied_start``); ids may repeat (``find_edges`` may be given events
    that ``correlate`` has not deduplicated: its relations once kept what they found by id)."""
    n = draw(st.integers(1, 30))
    events = []
    for i in range(n):
        kind = draw(st.sampled_from(EDGE_KINDS))
        gpu = draw(st.integers(0, 3))
        # timed only by an upper bound: its file's mtime (window.file_dated: up to an hour earlier) or its Kafka time
        bound = draw(st.sampled_from([None, None, None, None, None, "file", "kafka"]))
        events.append(Ev(
            event_id=f"e{draw(st.integers(0, i))}", ts=draw(st.integers(0, 900)) * S + draw(st.sampled_from([0, 1, 999_999])),
            ts_basis=bound or "line", host=draw(st.sampled_from(HOSTS)), source="dmesg", kind=kind, signature=kind,
            severity=draw(st.sampled_from(["warning", "error", "critical"])),
            device_type="nvswitch" if kind == "sxid" else "gpu", device=f"0000:{gpu + 1:02x}:00.0", link=None,
            xid=draw(st.sampled_from([79, 74, 48, 145])) if kind == "xid" else None,
            sxid=20034 if kind == "sxid" else None, peer=None, rank=draw(st.one_of(st.none(), st.integers(0, 7))),
            nranks=None, comm=draw(st.sampled_from([None, "c1"])), message="m",
            cause_xid=draw(st.sampled_from([None, 79])) if kind == "xid" else None,
            precision_us=draw(st.sampled_from([1, S])),
            # a Kafka record of its own, or a line of its host's file (alike lines of one file: one class of cause)
            origin=draw(st.sampled_from([f"kafka:t/0/{i}:0", f"file:/logs/{i % 2}.log:{i}"])),
            elapsed_ms=draw(st.sampled_from([None, 600_000])) if kind == "nccl_timeout" else None,
            # a line of the boot before a reboot in its capture (model.across_reboot)
            details={**({"ts_upper_bound": True} if bound else {}),
                     **({"reboots_after": 1} if draw(st.integers(0, 5)) == 0 else {})}))
    for e in events:  # a line that follows a watchdog timeout is placed at the collective's start
        if e.kind == "nccl_error" and draw(st.booleans()):
            e.imply_start(e.ts - draw(st.sampled_from([S, 300 * S])))
    # alike lines: copies of a line at other times (a storm of distinct lines, one class of cause in find_edges)
    for k in range(draw(st.integers(0, 12))):
        e = events[draw(st.integers(0, len(events) - 1))]
        copy = dataclasses.replace(e, event_id=f"c{k}", ts=e.ts + draw(st.integers(-200, 200)) * S)
        if e.implied_start is not None:
            copy.imply_start(copy.ts - (e.ts - e.implied_start))
        events.append(copy)
    skews = draw(st.lists(st.sampled_from([0, S, 30 * S]), min_size=len(HOSTS), max_size=len(HOSTS)))
    return sorted(events, key=lambda e: e.order), skews


@settings(max_examples=200, deadline=None)
@given(scenes())
def test_edges_equal_the_pairwise_definition(scene_):
    """``find_edges`` pairs a cause only with effects near it in time, and of a class of alike causes
    (``attribute.cause_class``) only one that may cause an effect; the definition tries every ordered pair with
    ``window.may_cause`` and ``rules.relation``, then keeps, per rule, effect and class of cause, the last cause in
    scene order that starts at or before the effect, else the first after it. Same edges, in the same order."""
    from correlate.attribute import Scene, cause_class, find_edges, relation_class
    from correlate.rules import Relations, any_holds
    from correlate.window import may_cause
    from ingest.catalog import default_catalog

    events, skews = scene_
    topo = Topology(hosts={h: HostConfig(domain="nvl72-a" if h in ("h0", "h1") else None) for h in HOSTS})
    topo.comm_ranks["c1"].update({r: (HOSTS[r % 4], f"0000:{r % 4 + 1:02x}:00.0") for r in range(8)})
    clocks = Clocks(skew_us=dict(zip(HOSTS, skews)), default_skew_us=S)
    rules, catalog = default_rules(), default_catalog()
    scene = Scene(events=events, topo=topo, catalog=catalog, rules=rules, clocks=clocks)
    got = [(x.cause.event_id, x.effect.event_id, x.rule, x.relation) for x in find_edges(scene)]
    rel = Relations(topo)
    rebooted = frozenset(e.origin.rpartition(":")[0] for e in events if e.boot)
    want = []
    for r in rules.explains:
        w = int(r.window_s * S)
        comms = any(x in ("same_comm", "same_collective", "same_domain") for x in r.relations)
        chosen: dict[tuple, tuple[int, int, str]] = {}  # (effect, class of cause) -> (cause, effect, relation)
        for i, c in enumerate(events):
            if not any_holds(r.cause, c, catalog):
                continue
            for j, e in enumerate(events):
                if c is e or not any_holds(r.effect, e, catalog) or not may_cause(c, e, w, clocks, int(r.lead_s * S)):
                    continue
                rel_name = next((x for x in r.relations if relation(x, c, e, topo)), None)
                if not rel_name:
                    continue
                key = (j, cause_class(c, relation_class(c, rel, comms, rebooted)))
                had = chosen.get(key)
                # the causes come in scene order: a later one at or before the effect replaces any before it; one
                # after the effect only fills an empty place
                if had is None or c.start <= e.start:
                    chosen[key] = (i, j, rel_name)
        for i, j, rel_name in sorted(chosen.values()):  # by cause, then effect: find_edges' order
            want.append((events[i].event_id, events[j].event_id, r.id, rel_name))
    assert got == want


def test_edges_of_a_class_of_causes_read_each_effects_peer():
    """A port relays the AER errors of the devices below it ("pcieport 0000:b0:02.0: AER: Uncorrected (Non-Fatal)
    error received: 0000:b3:00.0"): rule ``pcie.source_error_explains_port_report`` ties the GPU's own AER errors (two
    copies: one class of cause, ``attribute.cause_class``) to the port's line that names the GPU as its peer
    (``names_device``), and to no line that names another device, whichever of the two the port printed first.
    ``find_edges`` decides a class of causes' relation once per class of effect (``relation_class``), which read
    no peer: the GPU's relayed error lost its edge, or the other device's took one, by the order of the lines."""
    from correlate.attribute import Scene, find_edges
    from ingest.catalog import default_catalog

    gpu, other, port = "0000:b3:00.0", "0000:b4:00.0", "0000:b0:02.0"

    def aer(i: int, signature: str, device: str, peer: str | None) -> Ev:
        return Ev(event_id=f"e{i}", ts=(100 + i) * S, ts_basis="line", host="h0", source="dmesg", kind="pcie_aer",
                  signature=signature, severity="error", device_type="pcie", device=device, link=None, xid=None,
                  sxid=None, peer=peer, rank=None, nranks=None, comm=None, message="m", origin=f"file:/k.log:{i}")

    for first, second in ((other, gpu), (gpu, other)):
        events = [aer(0, "pcie.aer.bus_error", gpu, None), aer(1, "pcie.aer.bus_error", gpu, None),
                  aer(2, "pcie.aer.received", port, first), aer(3, "pcie.aer.received", port, second)]
        scene = Scene(events=events, topo=Topology(), catalog=default_catalog(), rules=default_rules(), clocks=Clocks())
        got = [(x.cause.event_id, x.effect.event_id) for x in find_edges(scene) if x.relation == "names_device"]
        relays_gpu = "e2" if first == gpu else "e3"
        assert got == [("e1", relays_gpu)], (first, second)


@st.composite
def shaped_events(draw):
    """One event of any shape the rules' predicates read (``rules.pred_shape``): the kinds, signatures (a
    ``prefix*`` one's matches too) and Xids the shipped rules name, and others; every flag either way."""
    from ingest.catalog import default_catalog
    from schemas.events import KINDS as ALL_KINDS

    rules, catalog = default_rules(), default_catalog()
    preds = [p for r in rules.explains for p in r.cause + r.effect] + [
        p for l in rules.links for p in (l.cause or []) + (l.effect or [])]
    named = sorted({s for p in preds for s in p.signature or ()})
    signatures = sorted({s for s in named if not s.endswith("*")}
                        | {k for k in catalog.by_id for s in named if s.endswith("*") and k.startswith(s[:-1])}
                        | {"nccl.other", "kern.unknown", "operator.symptom"})
    xids = sorted({x for p in preds for x in p.xid or ()} | set(list(catalog.xids)[:40]) | {1, 999})
    details = {}
    if draw(st.booleans()):
        details["link_down_cause"] = draw(st.sampled_from(["peer_side_down", "signal_integrity",
                                                           "cable_or_transceiver", "other"]))
    if draw(st.booleans()):
        details["quote"] = "Last error: …"
    e = Ev(event_id="e", ts=S, ts_basis="line", host="h0", source=draw(st.sampled_from(["dmesg", "nccl", "nvml"])),
           kind=draw(st.sampled_from(sorted(ALL_KINDS))), signature=draw(st.sampled_from(signatures)),
           severity=draw(st.sampled_from(["debug", "info", "warning", "error", "critical"])), device_type=None,
           device=None, link=None, xid=draw(st.one_of(st.none(), st.sampled_from(xids))),
           sxid=draw(st.one_of(st.none(), st.integers(10000, 30000))), peer=None, rank=None, nranks=None, comm=None,
           message="m", fatal=draw(st.sampled_from([None, True, False])),
           cause_xid=draw(st.one_of(st.none(), st.sampled_from(xids))), details=details)
    if draw(st.booleans()):
        e.imply_start(0)
    return e


@settings(max_examples=400, deadline=None)
@given(st.lists(shaped_events(), min_size=1, max_size=6))
def test_the_side_index_equals_any_holds_on_every_side(events):
    """``rules.SideIndex`` tests only the predicates filed under an event's kind, signature and Xid (and those filed
    under none): bit for bit what ``any_holds`` says of every side of the explains rules and of the links derived from
    them; and ``attribute.may_relate``, which reads those bits, says what the rules say pair by pair."""
    from correlate.attribute import ShapeMemo, fault_category, may_relate
    from correlate.rules import SideIndex
    from ingest.catalog import default_catalog

    rules, catalog = default_rules(), default_catalog()
    sides = [r.cause for r in rules.explains] + [r.effect for r in rules.explains] + [
        p for l in rules.links if l.cause is not None for p in (l.cause, l.effect)]
    index = SideIndex(sides, catalog)
    memo = ShapeMemo()
    for e in events:
        want = sum(1 << k for k, preds in enumerate(sides) if any_holds(preds, e, catalog))
        assert index.bits(e) == want
        n = len(rules.explains)
        assert memo.side_bits(e, rules, catalog) == (want & ((1 << n) - 1), want >> n & ((1 << n) - 1))
    related = may_relate(rules, catalog)
    for a in events:
        for b in events:
            cat = fault_category(a, catalog)
            want = (cat is not None and cat == fault_category(b, catalog)) or any(
                (any_holds(r.cause, x, catalog) and any_holds(r.effect, y, catalog))
                for r in rules.explains for x, y in ((a, b), (b, a)))
            assert related(a, b) == want


def test_a_fault_dated_only_by_its_file_joins_the_fault_of_its_host_it_most_likely_reports():
    """A traceback's ``RuntimeError: CUDA error: uncorrectable ECC error encountered`` printed no time: dated by its
    job log's mtime (the job's last line, ten minutes after the Xid it reports, when the other ranks timed out),
    it joins the latest fault of its host that has a time of its own and that it may report (the correlator's
    ``attribute.may_relate``: an ``explains`` rule, or the same category of fault), up to ``FILE_REACH_US`` before
    it — not the later NIC link-down it has nothing to do with (a break-it pass), not one of another host, not one
    older than the reach, and a file-dated fault already linked to a timed one stays there. Without ``related``
    the links alone place it."""
    from correlate.attribute import may_relate
    from ingest.catalog import default_catalog

    def ev(eid, host, ts, basis="line", kind="xid", signature="xid", xid=None, device_type="gpu"):
        return Ev(event_id=eid, ts=ts, ts_basis=basis, host=host, source="dmesg", kind=kind, signature=signature,
                  severity="critical", device_type=device_type, device=None, link=None, xid=xid, sxid=None,
                  peer=None, rank=None, nranks=None, comm=None, message="m", precision_us=S)

    t = 1_800_000_000 * S
    topo, clocks, rules = Topology(), Clocks(default_skew_us=S), default_rules()
    related = may_relate(rules, default_catalog())

    def groups(evs, related=related):
        return sorted(sorted(e.event_id for e in c) for c in components(evs, rules.links, topo, clocks,
                                                                        related=related))

    older, xid = ev("older", "h1", t - 3 * 3600 * S, xid=94), ev("xid", "h1", t, xid=94)
    nic = ev("nic", "h1", t + 300 * S, kind="ib_port", signature="ib.mlx5_link", device_type="nic")
    cuda = ev("cuda", "h1", t + 600 * S, basis="file", kind="ecc", signature="cuda.ecc_uncorrectable")
    assert groups([older, xid, nic, cuda]) == [["cuda", "xid"], ["nic"], ["older"]]
    assert groups([older, xid, nic, cuda], related=None) == [["cuda"], ["nic"], ["older"], ["xid"]]
    assert groups([older, cuda]) == [["cuda"], ["older"]]  # more than an hour before the file's time
    assert groups([ev("xid", "h2", t, xid=94), cuda]) == [["cuda"], ["xid"]]  # another host's
    late = ev("late", "h1", t + 600 * S, kind="ecc", signature="cuda.ecc_uncorrectable")  # placed by that one
    assert groups([xid, late, cuda]) == [["cuda", "late"], ["xid"]]
    # the other way round: a file-dated NCCL NET/IB port error and the timed watchdog timeouts of its host whose
    # collectives it hung, 25 minutes before the file's time (``ib_port.explains_nccl``)
    port = ev("port", "h3", t + 600 * S, basis="file", kind="ib_port", signature="nccl.net_ib.async_event",
              device_type="nic")
    timeout = ev("timeout", "h3", t - 900 * S, kind="nccl_timeout", signature="torch.watchdog_timeout")
    assert groups([timeout, port]) == [["port", "timeout"]]
    assert FILE_REACH_US == 3600 * S


def test_a_fault_whose_inherited_time_spans_hours_joins_by_its_subject_and_a_rule_not_by_time():
    """A rank's unstamped ``RuntimeError: CUDA error: uncorrectable ECC error encountered`` under its job's NCCL init
    line took that line's time, four hours before the Xid 48 it reports; its span (``details.ts_until``: the next
    stamped line of its log, µs) is longer than the links' windows, which then join it to nothing by time: not
    another GPU's Xid 13 in its span, not a context line (a NIC's "Link ACTIVE") hours before the Xid. It joins
    the latest fault of its host, of its rank's GPU (NCCL's init line: rank 5 on 0000:c3:00.0), that may be what it
    reports (``attribute.may_relate``) and began in its span: the Xid 48 (a scenario trial: an incident of its own,
    hours early). A short span (a traceback right under a stamped c10 line) joins by time as before."""
    from correlate.attribute import may_relate
    from ingest.catalog import default_catalog

    t = 1_800_000_000 * S

    def ev(eid, ts, kind="xid", signature="xid", xid=None, device=None, rank=None, precision=S, until=None,
           severity="critical", device_type="gpu"):
        return Ev(event_id=eid, ts=ts, ts_basis="inherited" if until else "line", host="h1", source="dmesg",
                  kind=kind, signature=signature, severity=severity, device_type=device_type, device=device,
                  link=None, xid=xid, sxid=None, peer=None, rank=rank, nranks=None, comm=None, message="m",
                  precision_us=precision, details={"ts_until": until} if until else {})

    topo, clocks, rules = Topology(), Clocks(default_skew_us=S), default_rules()
    topo.comm_ranks["c1"][5] = ("h1", "0000:c3:00.0")
    topo.comm_ranks["c1"][2] = ("h1", "0000:52:00.0")
    related = may_relate(rules, default_catalog())

    def groups(evs):
        return sorted(sorted(e.event_id for e in c) for c in components(evs, rules.links, topo, clocks,
                                                                        related=related))

    span = 4 * 3600 * S + 600 * S
    cuda = ev("cuda", t - 4 * 3600 * S, kind="ecc", signature="cuda.ecc_uncorrectable", rank=5, precision=span,
              until=t - 4 * 3600 * S + span)
    xid48 = ev("xid48", t, xid=48, device="0000:c3:00.0")
    xid13 = ev("xid13", t - 2 * 3600 * S, xid=13, device="0000:52:00.0", severity="info")
    nic = ev("nic", t - 3 * 3600 * S, kind="ib_port", signature="ib.port_state", severity="info", device_type="nic")
    assert groups([cuda, xid48, xid13, nic]) == [["cuda", "xid48"], ["xid13"]]
    # its rank on another GPU: the Xid 48 is no fault of its own
    other = dataclasses.replace(cuda, rank=2)
    assert groups([other, xid48]) == [["cuda"], ["xid48"]]
    # after the latest it may have been written: not what it reports
    assert groups([cuda, dataclasses.replace(xid48, ts=t + 900 * S)]) == [["cuda"], ["xid48"]]
    # a span within the windows (the usual traceback under a stamped line): the links join it by time
    short = dataclasses.replace(cuda, ts=t + 2 * S, precision_us=2 * S, details={"ts_until": t + 4 * S})
    assert groups([short, xid48, xid13]) == [["cuda", "xid48"], ["xid13"]]


def test_a_collective_one_rank_timed_out_on_from_two_hosts_is_two_jobs():
    """Two jobs of one program at the same step: ranks 0 and 1 on h0, h1 (h0's GPU fell off the bus) and ranks 0 and 1
    on h2, h3, all timing out on one SeqNum. The collective's name cannot tell the jobs apart: joined, h2 and h3 were
    "downstream" of h0's Xid 79 (a break-it pass). A rank on two hosts within one group is two jobs: taken in time
    order, a job at a time (refusing the whole group, a second replica split the first job: a second break-it pass).
    A process group's own ranks that repeat across hosts are one job's, with c10's rank in the job distinct
    (``details.global_rank``) or without it (``[PG ID 6 … Rank 0]``: each replica's group has a rank 0)."""
    from correlate.cluster import join_named_collectives

    def timeout(host: str, rank: int, start_s: int, global_rank: int | None = None, pg: str | None = None) -> Ev:
        return Ev(event_id=f"t{host}", ts=(start_s + 600) * S, ts_basis="line", host=host, source="nccl",
                  kind="nccl_timeout", signature="torch.watchdog_timeout", severity="error", device_type=None,
                  device=None, link=None, xid=None, sxid=None, peer=None, rank=rank, nranks=None, comm=None,
                  message="m", origin=f"f:{host}", seq=808, op="ALLREDUCE", timeout_ms=600_000, elapsed_ms=600_000,
                  details={"numel_in": "8", "numel_out": "8",
                           **({"global_rank": global_rank} if global_rank is not None else {}),
                           **({"pg": pg} if pg is not None else {})})

    xid = Ev(event_id="x", ts=0, ts_basis="line", host="h0", source="dmesg", kind="xid", signature="xid",
             severity="critical", device_type=None, device=None, link=None, xid=79, sxid=None, peer=None, rank=None,
             nranks=None, comm=None, message="m", origin="f:x")
    topo = Topology()
    two = [[xid, timeout("h0", 0, 0)], [timeout("h1", 1, 1)], [timeout("h2", 0, 30)], [timeout("h3", 1, 31)]]
    assert sorted(sorted(e.event_id for e in c) for c in join_named_collectives(two, topo)) == [
        ["th0", "th1", "x"], ["th2", "th3"]]
    # the two jobs at one instant: which of h1 and h3 is h0's job, no line tells; they join nothing
    same = [[xid, timeout("h0", 0, 0)], [timeout("h1", 1, 0)], [timeout("h2", 0, 0)], [timeout("h3", 1, 0)]]
    assert len(join_named_collectives(same, topo)) == 4
    replicas = [[xid, timeout("h0", 0, 0, pg="6")], [timeout("h1", 1, 1, pg="6")], [timeout("h2", 0, 2, pg="6")]]
    assert [sorted(e.event_id for e in c) for c in join_named_collectives(replicas, topo)] == [
        ["th0", "th1", "th2", "x"]]
    one = [[xid, timeout("h0", 0, 0, 0)], [timeout("h1", 0, 1, 8)], [timeout("h2", 1, 2, 9)]]
    assert [sorted(e.event_id for e in c) for c in join_named_collectives(one, topo)] == [["th0", "th1", "th2", "x"]]


def test_named_collectives_join_anchored_at_their_first_timeout_not_chained():
    """``join_named_collectives``: components whose watchdog timeouts name one collective (no NCCL init lines place
    their ranks) and start within a minute of the first of them are one; a line of the same tuple every 50 s over ten
    minutes is no single collective (as a link relation it chained every host's faults of the benchmark mix into one
    incident of 3,000 events), nor are two tuples, nor ranks a communicator places."""
    from correlate.cluster import join_named_collectives
    from correlate.rules import NAMED_COLLECTIVE_US

    def timeout(i: int, start_s: int, seq: int = 4242, host: str | None = None) -> Ev:
        return Ev(event_id=f"t{i}", ts=(start_s + 600) * S, ts_basis="line", host=host or f"h{i}", source="nccl",
                  kind="nccl_timeout", signature="torch.watchdog_timeout", severity="error", device_type=None,
                  device=None, link=None, xid=None, sxid=None, peer=None, rank=i, nranks=None, comm=None, message="m",
                  origin=f"f:{i}", seq=seq, op="ALLREDUCE", timeout_ms=600_000, elapsed_ms=600_000,
                  details={"numel_in": "8", "numel_out": "8"})

    topo = Topology()
    got = join_named_collectives([[timeout(i, 50 * i)] for i in range(12)], topo)
    assert [[e.event_id for e in c] for c in got] == [["t0", "t1"], ["t2", "t3"], ["t4", "t5"], ["t6", "t7"],
                                                      ["t8", "t9"], ["t10", "t11"]]
    assert NAMED_COLLECTIVE_US == 60 * S
    assert len(join_named_collectives([[timeout(0, 0)], [timeout(1, 5, seq=4243)]], topo)) == 2
    assert len(join_named_collectives([[timeout(0, 0, seq=1)], [timeout(1, 5, seq=1)]], topo)) == 1  # a start-up one
    assert len(join_named_collectives([[timeout(0, 0, seq=1)], [timeout(1, 300, seq=1)]], topo)) == 2  # two jobs'
    # a group holds at most one component with other faults than a job's lines: the ranks that only timed out join
    # the host whose GPU failed; two such hosts' components stay apart (the benchmark mix made 500-party incidents)
    xid = Ev(event_id="x", ts=0, ts_basis="line", host="h9", source="dmesg", kind="xid", signature="xid",
             severity="critical", device_type=None, device=None, link=None, xid=79, sxid=None, peer=None, rank=None,
             nranks=None, comm=None, message="m", origin="f:x")
    got = join_named_collectives([[xid, timeout(0, 0)], [timeout(1, 5)], [timeout(2, 6)]], topo)
    assert [sorted(e.event_id for e in c) for c in got] == [["t0", "t1", "t2", "x"]]
    xid2 = Ev(**{**{f: getattr(xid, f) for f in ("event_id", "ts", "ts_basis", "host", "source", "kind", "signature",
                                                 "severity", "device_type", "device", "link", "xid", "sxid", "peer",
                                                 "rank", "nranks", "comm", "message", "origin")},
                 "event_id": "x2", "host": "h8", "origin": "f:x2"})
    got = join_named_collectives([[xid, timeout(0, 0)], [xid2, timeout(1, 5)], [timeout(2, 6)]], topo)
    assert sorted(sorted(e.event_id for e in c) for c in got) == [["t0", "t2", "x"], ["t1", "x2"]]
    topo.comm_ranks["c1"][0] = ("h0", None)
    topo.comm_ranks["c1"][1] = ("h1", None)
    topo._comm_index = None
    assert len(join_named_collectives([[timeout(0, 0)], [timeout(1, 5)]], topo)) == 2


def test_a_flood_of_alike_lines_gives_each_effect_one_edge_of_their_class(tmp_path):
    """GPUs printing distinct Xid lines by the thousand (pids and channels differ, so no storm folds them): an edge
    from each hardware Xid line to each application Xid line of its GPU made 279,318 edges of evidence for 5,000
    lines (20,000: 68 s, 1.8 GB; a break-it pass). Of each class of alike causes only the first pairs with an effect
    (``attribute.find_edges``): per rule and effect at most one cause of a class — here 1,194 edges where every pair
    gave 60,000 — and the same incident as every pair gave (four GPUs with hardware Xids: no single culprit)."""
    from api.diagnose import diagnose_paths
    from schemas.settings import Settings

    lines = []
    t = 1000.0
    for i in range(1200):
        t += 0.01
        bus = ["18", "2a", "3a", "5d"][i % 4]
        xid = [74, 48, 13, 43, 31, 79][i % 6]  # hardware Xids, each explaining its GPU's application Xids
        lines.append(f"[{t:12.6f}] NVRM: Xid (PCI:0000:{bus}:00): {xid}, pid={1000 + i}, name=python{i}, "
                     f"Ch 0000{i % 99:04d}")
    (tmp_path / "node01.log").write_text("\n".join(lines) + "\n")
    _, batch, incidents = diagnose_paths([tmp_path / "node01.log"], Settings())
    assert batch.events.num_rows == 1200
    assert [(i["category"], i["initiator"]["device_type"], len(i["downstream"])) for i in incidents] == [
        ("ecc", None, 4)]
    evidence = incidents[0]["evidence"]
    per: dict[tuple, int] = {}
    for x in evidence:
        per[(x["rule"], x["effect"])] = per.get((x["rule"], x["effect"]), 0) + 1
    # an effect is explained by the hardware Xids of its GPU, or the Xid 79s of its host (two GPUs print them): one
    # edge of each class, not one per line
    assert max(per.values()) == 2
    assert len(evidence) == 1194


def test_an_effect_of_a_storm_is_paired_with_the_copy_going_on_when_it_came(tmp_path):
    """An Xid 74 every 10 s on one link (distinct pids: no storm folds them), a GPU that falls off the bus at
    10:04:58 and a CUDA NVLink error a second after the last Xid 74: the Xid 79 explains the Xid 74s after it, and
    through the one going on when the CUDA error came, the CUDA error. Pairing it with the storm's first copy, before
    the Xid 79, moved it to the Xid 74s' incident (a break-it pass on the thinned edges)."""
    from api.diagnose import diagnose_paths
    from schemas.settings import Settings

    xid74 = ("[Fri Dec  4 10:{m:02d}:{s:02d} 2026] NVRM: Xid (PCI:0000:4c:00): 74, pid={pid}, name=python, NVLink: "
             "fatal error detected on link 4(0x0, 0x0, 0x10000, 0x0, 0x0, 0x0, 0x0)")
    lines = [xid74.format(m=k * 10 // 60, s=k * 10 % 60, pid=1001 + k) for k in range(31)]
    lines.append("[Fri Dec  4 10:04:58 2026] NVRM: Xid (PCI:0000:18:00): 79, pid=0, GPU has fallen off the bus.")
    (tmp_path / "node01.log").write_text("\n".join(lines) + "\n")
    (tmp_path / "job.log").write_text(
        "[2026-12-04 10:05:01] node01:48213:48448 [2] include/alloc.h:111 NCCL WARN Cuda failure 'Invalid access of "
        "peer GPU memory over nvlink or a hardware error'\n")
    _, _, incidents = diagnose_paths([tmp_path], Settings())
    by_xid = {i["initiator"]["xid"]: i for i in incidents}
    assert sorted(by_xid) == [74, 79], [(i["initiator"]["xid"], i["category"]) for i in incidents]
    assert {p["kind"] for p in by_xid[79]["downstream"]} == {"xid", "cuda_error"}, by_xid[79]["downstream"]
    assert by_xid[74]["downstream"] == [], by_xid[74]["downstream"]
