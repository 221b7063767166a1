"""Group events into candidate incidents: connected components of the ``links`` rules.

Two faults are linked when a link rule's relation holds and they are within its
window (``correlate.window.within``: resolution and, across hosts, both skew
bounds added). Context events (informational lines: an NCCL fallback, a Fabric
Manager start-up line) never start an incident; each joins the incident of the
closest fault of its host within the link window of the ``same_host`` relation
(or the rule for its kind), or is left out. An operator-reported symptom
without a time links to every fault of its host (of a host that logged none: to the faults of the
communicators NCCL's init lines place ranks of it in). Faults dated only by their
file's mtime (lines that printed no time) that link to no fault with a time of
its own join the latest fault of their host with one, up to an hour before
them, that they may be related to, else the latest such fault of another file of
their host (``_join_file_timed``). A fault whose time is inherited from the stamped line before it and spans
more than a link's window (``details.ts_until``) is not joined by that link; unless another link joins it, it
joins the latest related fault of its host and GPU in its span (``_join_spanned``). Events that only describe
wiring (NCCL channel and init lines) are topology facts, not members.

Cost: faults are compared only with faults of the same host, NVLink domain or
communicator (whichever the rule's relation names) inside its window, nearest
first and skipping those already in the same component; within one host's
GPU or host bucket, one sorted pass over time intervals replaces the pairs;
context events are placed with a binary search, so a flood of informational
lines stays cheap.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from heapq import heappop, heappush
from operator import attrgetter
from typing import Final

from correlate.model import (RAY_WORKER_DIED, Ev, across_reboot, capture_of, cloud_event_key, notice_groups,
                             spares_job)
from correlate.rules import (KEYED_RELATIONS, ONE_HOST_RELATIONS, RANK_REPORTS, LinkRule, Relations, SideIndex,
                             collective_window_us, comms_of, gpu_key, job_local, log_of, named_collective, pred_shape,
                             rank_scope)
from correlate.topology import Topology
from correlate.window import FILE_REACH_US, Clocks, may_cause, start_skew, within
from ingest.catalog import Catalog

S = 1_000_000
#: kinds that describe wiring or configuration, never a fault on their own
FACT_KINDS = frozenset({"nccl_transport", "nccl_init"})
SYMPTOM = "operator.symptom"
#: relations decided by one key per event (see ``_buckets``); those whose buckets hold one host's faults (``_sweep``)
_KEYED, _ONE_HOST = KEYED_RELATIONS, ONE_HOST_RELATIONS


class _DSU:
    def __init__(self, n: int) -> None:
        self.p = list(range(n))

    def find(self, i: int) -> int:
        while self.p[i] != i:
            self.p[i] = self.p[self.p[i]]
            i = self.p[i]
        return i

    def add(self) -> int:
        """A new element of its own set; its index."""
        self.p.append(len(self.p))
        return len(self.p) - 1

    def union(self, a: int, b: int) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.p[max(ra, rb)] = min(ra, rb)

    def join(self, root: int, i: int) -> int:
        """Union ``i`` with ``root`` (a root) as :meth:`union` does; returns the root of both (one lookup, not
        two: a sweep keeps its run's root)."""
        r = self.find(i)
        if r == root:
            return root
        if r < root:
            self.p[root] = r
            return r
        self.p[r] = root
        return root


#: the kind a configuration line (``details.config_differs``) is linked as (the ``same_log`` link of rules.yaml)
_CONFIG_KIND: Final = "nccl_transport"


def members(events: list[Ev]) -> list[Ev]:
    """The events that can belong to an incident: not facts (transports, init lines), unless one is a setting the
    hosts of one job's log disagree on (``rules.mark_config_mismatch``: the job's fault)."""
    return [e for e in events if e.kind not in FACT_KINDS or "config_differs" in e.details]


def _default_is_fault(e: Ev) -> bool:
    return e.signature == SYMPTOM or e.sev >= 1 or e.kind in ("xid", "sxid", "gsp_error")


def components(events: list[Ev], links: list[LinkRule], topo: Topology, clocks: Clocks,
               is_fault: Callable[[Ev], bool] = _default_is_fault,
               related: Callable[[Ev, Ev], bool] | None = None, catalog: Catalog | None = None,
               side_bits: dict[tuple, int] | None = None) -> list[list[Ev]]:
    """Connected components (each sorted by ``Ev.order``), sorted by their first event. ``related(a, b)``: whether
    fault ``a``, with a time of its own, and the file-dated fault ``b`` may belong to one incident (the correlator's
    ``attribute.may_relate``; ``_join_file_timed``; None: file-dated faults are placed by the links alone).
    ``catalog``: what the predicates of links derived from explains rules read Xid facts from (default: the
    shipped one). ``side_bits``: event shape (``rules.pred_shape``) -> which sides of the derived links hold for
    it, kept by a caller that calls again with the same links and catalog (``ComponentCache``), read and filled."""
    faults: list[Ev] = []
    context: list[Ev] = []
    for e in members(events):
        (faults if is_fault(e) else context).append(e)
    faults.sort(key=attrgetter("order"))
    n = len(faults)
    dsu = _DSU(n)
    starts = [e.start for e in faults]
    # how much farther than a link's window two faults may be (window.tolerance): both skews and resolutions
    # an inherited time whose span (details.ts_until) is longer than a link's window joins no fault by that link:
    # it says when its line was written no closer than that (_loose_for; _join_spanned places it)
    spanned = [i for i, e in enumerate(faults) if e.spanned]
    firm_p = max((e.start_precision_us for e in faults if not e.spanned), default=0)
    spans = sorted(faults[i].start_precision_us for i in spanned)
    loose_memo: dict[int, frozenset[int]] = {}

    def loose_for(w: int) -> frozenset[int]:
        got = loose_memo.get(w)
        if got is None:
            got = loose_memo[w] = frozenset(i for i in spanned if faults[i].start_precision_us > w)
        return got

    def slack_for(w: int) -> int:
        """How much farther than ``w`` two faults joined by a link of window ``w`` may be (window.tolerance): both
        skews and resolutions, of the faults the link may join (not those of :func:`loose_for`)."""
        k = bisect_right(spans, w)
        return 2 * clocks.max_skew() + 2 * max(firm_p, spans[k - 1] if k else 0)
    starts2 = [2 * s for s in starts]
    precisions2 = [2 * e.start_precision_us for e in faults]
    lefts2 = [s - p for s, p in zip(starts2, precisions2)]
    by_host: dict[str, list[int]] = defaultdict(list)
    for i, e in enumerate(faults):
        by_host[e.host].append(i)
    for i, e in enumerate(faults):  # an untimed symptom joins every fault of its host
        if e.signature == SYMPTOM and e.details.get("untimed"):
            mine = [j for j in by_host[e.host] if j != i]
            for j in mine:
                dsu.union(i, j)
            if not mine:
                # a host that logged no fault: the faults of the jobs whose ranks NCCL's init lines place on it (its
                # silent ranks' peers that timed out: "failure@node07" was an incident of its own saying the logs hold
                # nothing of node07, beside the hang that named node07's silent ranks — a fresh user's trial)
                comms = {c for c, _dev in topo.comm_index().get(e.host, ())}
                for j, f in enumerate(faults):
                    if j != i and f.host != e.host and comms & comms_of(f, topo):
                        dsu.union(i, j)
    # a configuration line its job's hosts disagree on (rules.mark_config_mismatch) is linked as the NCCL transport fact
    # it says, whatever its signature's kind: a plugin that failed to load ("other": a GLIBC version missing) leaves
    # NCCL on its internal one, which another host's external plugin then disagrees with
    kinds = [_CONFIG_KIND if "config_differs" in e.details else e.kind for e in faults]
    hosts = [e.host for e in faults]
    skews2 = [2 * start_skew(e, clocks) for e in faults]  # doubled, as starts2: none for a start the cloud states
    # one instance for every rule's buckets and pairs: each fault's GPU key and communicators are found once, and
    # whether two profiles of faults are of two jobs (``_jobs_apart``) once per call, not once per same_host rule
    rels = Relations(topo)
    holds, apart_memo = rels.holds, _JobsMemo(faults, by_host, rels)
    # the faults of each shape (rules.pred_shape) with which sides of the derived links hold for it (bits 2k and
    # 2k + 1: the k-th derived link's cause and effect), decided once per shape for all those links
    shapes: list[tuple[list[int], int]] | None = None
    derived = [rule for rule in links if rule.cause is not None]
    for rule in links:
        w = int(rule.window_s * S)
        keyed = rule.relation in _KEYED
        loose, slack = loose_for(w), slack_for(w)
        if rule.cause is not None:  # derived from an explains rule: effect to its nearest cause
            if shapes is None:
                by_shape: dict[tuple, list[int]] = defaultdict(list)
                for i, e in enumerate(faults):
                    by_shape[pred_shape(e)].append(i)
                memo = side_bits if side_bits is not None else {}
                if not memo.keys() >= by_shape.keys():
                    index = SideIndex([p for r in derived for p in (r.cause, r.effect or [])], catalog)
                    for shape, idx in by_shape.items():
                        if shape not in memo:
                            memo[shape] = index.bits(faults[idx[0]])
                shapes = [(idx, memo[shape]) for shape, idx in by_shape.items()]
            sides = _sides(2 * next(k for k, r in enumerate(derived) if r is rule), shapes)
            if sides is not None:  # only the faults of either side are bucketed
                sub = sorted((sides[0] | sides[1]) - loose)
                sub_faults = [faults[i] for i in sub]
                sub_hosts: dict[str, list[int]] = defaultdict(list)
                for k, e in enumerate(sub_faults):
                    sub_hosts[e.host].append(k)
                # an effect in several buckets (a fault of two communicators; _jobs_apart's parts share the faults of
                # no job) takes its nearest cause over all of them: the first bucket's nearest, in a bucket without
                # the nearer cause of another, joined two jobs' components (the clustering property test)
                nearest: dict[int, tuple[int, int, int]] = {}
                for idx in _buckets(rule.relation, sub_faults, sub_hosts, topo, rels, apart_memo):
                    _reach([sub[k] for k in idx], sides, faults, starts, w, slack, nearest, clocks,
                           int(rule.lead_s * S))
                for i, (_d, _s, j) in nearest.items():
                    dsu.union(i, j)
            continue
        if rule.relation == "peer_host":
            _join_peers(faults, by_host, topo, starts, w, slack, dsu, clocks,
                        set(rule.kinds) if rule.kinds else None, kinds, loose)
            continue
        for idx in _buckets(rule.relation, faults, by_host, topo, rels, apart_memo):
            if rule.kinds:
                idx = [i for i in idx if kinds[i] in rule.kinds]
            if loose and not loose.isdisjoint(idx):
                idx = [i for i in idx if i not in loose]
            if rule.relation in _ONE_HOST or (keyed and _one_host(idx, hosts)):
                # within one host, a keyed bucket needs the time test only
                _sweep(idx, starts2, precisions2, w, dsu, lefts2)
                continue
            if keyed:  # across hosts: the time test with both skews (a communicator of thousands of ranks)
                _sweep_hosts(idx, hosts, starts2, precisions2, w, dsu, lefts2, skews2)
                continue
            lo = 0
            for a in range(len(idx)):
                i = idx[a]
                si = starts[i]
                while si - starts[idx[lo]] > w + slack:
                    lo += 1
                ri = dsu.find(i)
                for b in range(a - 1, lo - 1, -1):  # nearest first: later ones mostly join the same root
                    j = idx[b]
                    rj = dsu.find(j)
                    if ri == rj:
                        continue
                    if within(faults[j], faults[i], w, clocks) and (
                            keyed or holds(rule.relation, faults[j], faults[i])):
                        dsu.union(i, j)
                        ri = dsu.find(i)
    _join_notices(faults, dsu)
    if related is not None:
        _join_file_timed(faults, dsu, by_host, related, topo)
        if spanned and links:
            shortest = min(int(r.window_s * S) for r in links)
            _join_spanned(faults, loose_for(shortest), dsu, by_host, related, topo, starts, max(firm_p, shortest))
    groups_out: dict[int, list[Ev]] = defaultdict(list)
    for i, e in enumerate(faults):
        groups_out[dsu.find(i)].append(e)
    _attach_context(context, faults, dsu, groups_out, links, clocks)
    order = attrgetter("order")
    comps = [sorted(g, key=order) for g in groups_out.values()]
    return sorted(comps, key=lambda g: g[0].order)


#: the keyed relations whose reach across hosts :class:`ComponentCache` follows (``_coupled``: a host's NVLink domain,
#: the communicators of its events and of ``Topology.comm_index``, its lines' log files); any other relation is
#: bucketed by host (``_buckets``) but ``peer_host`` (``Topology.peer_host``). A keyed relation not named here makes it
#: cluster every event, as :func:`components` does
_COUPLED_RELATIONS = frozenset({"same_device", "same_gpu", "same_host", "same_comm", "same_collective", "same_domain",
                                "same_log"})


class ComponentCache:
    """The last call's components, so that a caller that clusters nearly the same events again (the streaming
    correlator, at every step) clusters again only the hosts whose components may have changed (:meth:`components`).

    Which hosts: a host's events can join another host's only through a relation that crosses hosts — a
    communicator (an event's own, or one ``Topology.comm_index`` gives a rank on the host: ``rules.comms_of``
    takes its communicators from those), the NVLink domain (``Topology.domain``), a log file (``rules.log_of``),
    a peer named by address (``Topology.peer_host``: ``peer_host`` links, ``_join_peer_host``) — or through
    a component that held both last time. Hosts so coupled (transitively) are clustered together; everything else
    :func:`components` does (context lines, file-dated and spanned faults, the sweeps) stays within a host. A
    host's components are a function of its events (object ids, starts and implied starts: ``follow_watchdogs``
    moves them), of what the topology says of it and of the communicators with a rank on it (``facts``: the
    numbers ``correlator.AttributionCache.check`` gives), of its events' own communicators' facts (``comms``), of
    its peers' hosts, of its skew bound (across hosts, ``window.within``), and of the links, the catalog,
    ``related`` and the fleet config (``fleet``). A host any of which changed since the last call is *dirty*; the
    hosts coupled to a dirty host are clustered again, and the last call's components of the others are kept. The
    largest skew bound and the precisions only bound the searches (``slack_for``): the components of the hosts
    clustered again are those of all the events. Every host is clustered again when any of the global inputs
    changed, when an operator's symptom is among the events (an untimed one joins every fault of its host and those
    of its communicators' hosts), or when a link's relation is a keyed one this does not follow.

    ``reused`` / ``redone``: member events whose components were kept / clustered, in the last call."""

    def __init__(self) -> None:
        self.inputs: tuple | None = None
        self.hosts: dict[str, tuple] = {}  # host -> its key (see the class doc)
        self.comps: list[list[Ev]] = []
        self.events: list[Ev] = []  # the last call's member events: kept alive, so that their ids stay theirs
        #: host -> (its events' part of its key, what of its events ``_coupled`` reads: see :func:`_own_keys`),
        #: reused while the host's events are the same objects with the same starts
        self.own: dict[str, tuple[tuple, tuple]] = {}
        #: id of each list of ``comps`` -> the hosts of its events (the lists are kept as made, never changed)
        self.comp_hosts: dict[int, frozenset[str]] = {}
        self.reused = 0
        self.redone = 0
        #: event shape -> which sides of the derived links hold for it (:func:`components`' ``side_bits``), for the
        #: last call's links and catalog
        self.side_bits: dict[tuple, int] = {}

    def components(self, events: list[Ev], links: list[LinkRule], topo: Topology, clocks: Clocks,
                   is_fault: Callable[[Ev], bool], related: Callable[[Ev, Ev], bool] | None, catalog: Catalog,
                   facts: dict[str, int], comms: dict[str, int], fleet: tuple) -> list[list[Ev]]:
        """:func:`components` of ``events`` (its arguments; ``is_fault`` must answer as the last call's did
        whenever ``catalog`` is the same object), kept from the last call for the hosts none of whose inputs
        changed (class doc). ``facts``: host -> the number of its topology facts; ``comms``: communicator -> the
        number of its facts; ``fleet``: a value that changes when the fleet config or the files read in part do."""
        mine = members(events)
        by_host: dict[str, list[Ev]] = defaultdict(list)
        for e in mine:
            by_host[e.host].append(e)
        keys: dict[str, tuple] = {}
        peers: dict[str, list[tuple[Ev, str | None]]] = {}  # host -> its lines that name a peer, with its host
        own: dict[str, tuple[tuple, tuple]] = {}
        last_own = self.own
        for h, evs in by_host.items():
            ek = tuple([(id(e), e.start, e.implied_start) for e in evs])
            got = last_own.get(h)
            if got is None or got[0] != ek:  # the same objects, starts and implied starts: the same lines
                got = (ek, _own_keys(evs))
            else:  # the last call's equal tuple: the host's key below then equals its last one item by identity,
                ek = got[0]  # not event by event again (_same_key compared every host's events twice per call)
            own[h] = got
            named_evs, ecomms, _couple = got[1]
            named = peers[h] = [(e, topo.peer_host(e)) for e in named_evs]
            # its events' communicators (each once, sorted) with their facts' numbers: with the events part equal,
            # as telling as one entry per event
            keys[h] = (ek, facts.get(h), clocks.skew(h), tuple([(id(e), p) for e, p in named]),
                       tuple([(c, comms.get(c)) for c in ecomms]))
        self.own = own
        inputs = (list(links), catalog, related, fleet)
        last, self.inputs = self.inputs, inputs
        # the same links and catalog (by identity) as the last call: the shapes' side bits still hold
        same_links = (last is not None and len(last[0]) == len(links) and all(a is b for a, b in zip(last[0], links))
                      and last[1] is catalog)
        if not same_links:
            self.side_bits = {}
        whole = (not same_links or last[2] is not related or last[3] != fleet
                 or not KEYED_RELATIONS <= _COUPLED_RELATIONS
                 or any(e.signature == SYMPTOM for e in mine))
        if whole:
            comps = components(events, links, topo, clocks, is_fault, related, catalog, self.side_bits)
            self.reused, self.redone = 0, len(mine)
        else:
            find = _coupled(by_host, peers, topo, self.comps, clocks, links,
                            {h: got[1][2] for h, got in own.items()}, self.comp_hosts)
            # a host coupled to no other is clustered alone, where its skew bound counts for nothing (window.tolerance
            # adds it across hosts only; the searches' bounds only widen): a new skew estimate alone leaves its
            # components as they were (nearly every streaming step moves some host's estimate)
            sizes = Counter(find(("h", h)) for h in by_host)
            dirty = {h for h in keys.keys() | self.hosts.keys()
                     if not _same_key(keys.get(h), self.hosts.get(h), sizes[find(("h", h))] == 1)}
            roots = {find(("h", h)) for h in dirty}
            hosts = {h for h in by_host if find(("h", h)) in roots}
            again = [e for e in events if e.host in hosts]
            kept = [c for c in self.comps if find(("h", c[0].host)) not in roots]
            comps = components(again, links, topo, clocks, is_fault, related, catalog, self.side_bits) if again else []
            if kept:
                comps = sorted(comps + kept, key=lambda g: g[0].order)
            self.redone = sum(len(by_host[h]) for h in hosts)
            self.reused = len(mine) - self.redone
        self.hosts, self.comps, self.events = keys, comps, mine
        last_hosts = self.comp_hosts
        self.comp_hosts = {id(c): last_hosts.get(id(c)) or frozenset(e.host for e in c) for c in comps}
        return [list(c) for c in comps]  # the caller's own lists: the kept ones stay as they were made


def _same_key(now: tuple | None, last: tuple | None, alone: bool) -> bool:
    """Whether a host's key now (:class:`ComponentCache`) is its last call's: equal, or, for a host ``alone`` (coupled
    to no other), equal but for its skew bound (the key's third item)."""
    if now == last:
        return True
    return alone and now is not None and last is not None and now[:2] == last[:2] and now[3:] == last[3:]


def _own_keys(evs: list[Ev]) -> tuple[list[Ev], tuple[str, ...], frozenset[tuple[str, str]]]:
    """What :class:`ComponentCache` reads of one host's events ``evs``, each a function of the event alone: its lines
    that name a peer (``details.peer_addr``), its events' own communicators (sorted, each once), and the keys
    :func:`_coupled` joins the host to through them (``("c", communicator)``, ``("l", log file)``)."""
    comms = {e.comm for e in evs if e.comm}
    couple = {("c", c) for c in comms}
    couple.update(("l", log) for e in evs if (log := log_of(e)) is not None)
    return [e for e in evs if e.details.get("peer_addr")], tuple(sorted(comms)), frozenset(couple)


def _coupled(by_host: dict[str, list[Ev]], peers: dict[str, list[tuple[Ev, str | None]]], topo: Topology,
             last: list[list[Ev]], clocks: Clocks, links: list[LinkRule],
             own: dict[str, frozenset[tuple[str, str]]],
             last_hosts: dict[int, frozenset[str]]) -> Callable[[tuple], object]:
    """``find`` of a union-find over hosts (``("h", host)``) whose events a relation across hosts may join
    (:class:`ComponentCache`): through a communicator (``("c", id)``: an event's own, or one with a rank on the host),
    an NVLink domain, a log file, a peer's host (``peers``: host -> its lines that name a peer, with the
    peer's host, ``Topology.peer_host``), or a component of ``last`` (the last call's) that held both. A
    line that names its peer couples its host with the peer's only when an event of the peer's host lies within the
    ``peer_host`` links' widest window of it (``window.tolerance``: both precisions, the peer host's coarsest, and
    both skew bounds; ``_join_peers``), or when it is dated by its file (``_join_peer_host`` reaches an hour back
    from a file-dated component's earliest fault): the benchmark mix's NCCL errors name peers on 28 hosts, at other
    times than those hosts' events. ``own``: host -> its events' communicator and log keys (:func:`_own_keys`),
    ``last_hosts``: id of each list of ``last`` -> its hosts (:attr:`ComponentCache.comp_hosts`; a host joined to a
    key once is joined as by one union per event)."""
    dsu, index = _DSU(0), {}  # key -> its element of ``dsu``

    def find(x: tuple) -> object:  # a key no relation named is a set of its own
        i = index.get(x)
        return x if i is None else dsu.find(i)

    def union(a: tuple, b: tuple) -> None:
        ia, ib = index.get(a), index.get(b)
        if ia is None:
            ia = index[a] = dsu.add()
        if ib is None:
            ib = index[b] = dsu.add()
        dsu.union(ia, ib)

    placed = topo.comm_index()
    peer_w = max((int(rule.window_s * S) for rule in links if rule.relation == "peer_host"), default=None)
    starts: dict[str, list[int]] = {}  # host -> its events' starts, sorted (the peers' hosts', when asked)
    coarsest: dict[str, int] = {}

    def near(e: Ev, peer: str) -> bool:
        if e.ts_basis == "file" or peer not in by_host:
            return e.ts_basis == "file"
        if peer_w is None:
            return False
        if peer not in starts:
            starts[peer] = sorted(f.start for f in by_host[peer])
            coarsest[peer] = max(f.start_precision_us for f in by_host[peer])
        tol = peer_w + e.start_precision_us + coarsest[peer] + clocks.skew(e.host) + clocks.skew(peer)
        on = starts[peer]
        k = bisect_left(on, e.start - tol)
        return k < len(on) and on[k] <= e.start + tol

    for h in by_host:
        me = ("h", h)
        union(me, ("d", topo.domain(h)))
        for comm in {comm for comm, _dev in placed.get(h, ())}:
            union(me, ("c", comm))
        for key in own[h]:
            union(me, key)
        for e, peer in peers[h]:
            if peer is not None and near(e, peer):
                union(me, ("h", peer))
    for comp in last:
        first = comp[0].host
        for h in last_hosts[id(comp)]:
            if h != first:
                union(("h", first), ("h", h))
    return find


def _join_notices(faults: list[Ev], dsu: _DSU) -> None:
    """Union the lines of one cloud event (``model.cloud_event_key``: one host and notice id, their lines within
    ``model.AHEAD_MAX_US`` of the first's, ``model.notice_groups``): its notices, which ``model.follow_notices``
    placed at one time, however far apart their lines and whatever their lines' time resolution, and its start. An
    Azure handler's line that inherits its time, its host logging every 5 min, joins no fault by time
    (``_loose_for``): a notice re-sent 10 min later was a second incident, paged apart (a defect pass); so was the
    event's start (EventStatus Started, at the notice's NotBefore or minutes after it, or before it once
    acknowledged): one eviction paged twice (a defect pass). One id's lines months apart are two events' (a break-it
    pass). One host's events only, as the cache's host-local clustering needs (``ComponentCache``)."""
    index = {id(e): i for i, e in enumerate(faults) if cloud_event_key(e) is not None}
    if len(index) < 2:
        return
    for group in notice_groups([faults[i] for i in index.values()], key=cloud_event_key):
        first = index[id(group[0])]
        for e in group[1:]:
            dsu.union(index[id(e)], first)


def _join_file_timed(faults: list[Ev], dsu: _DSU, by_host: dict[str, list[int]],
                     related: Callable[[Ev, Ev], bool], topo: Topology) -> None:
    """Join each component of faults timed only by their file (``ts_basis`` ``file``: lines that printed no time,
    dated by the file's mtime, so written then *or earlier*: ``window`` module doc) to the latest fault (by start,
    then order) of its first fault's host that has a time of its own, began no later than them and no more than
    ``FILE_REACH_US`` before, and is ``related`` to one of them: a job's log is dated by its last line, when the
    job died, often the NCCL timeout after its fault (a Python traceback's ``RuntimeError: CUDA error:
    uncorrectable ECC error encountered`` ten minutes after the Xid 94 it reports, not the NIC link-down of that
    host in between; an NCCL NET/IB port error beside the watchdog timeouts whose collectives it hung). A component
    that holds a fault with a time of its own is placed by it already. One that finds none joins, the same way, the
    latest related file-dated fault of another component of its host (afterwards, in component order) while the
    faults so joined span at most ``FILE_REACH_US`` (a chain of job logs 50 min apart is no one incident). Cost: a
    binary search per component, then its host's faults within the reach, latest first.

    A component its own host's faults do not take, whose faults name a peer (``details.peer_addr``) that ``topo``
    knows the host of (``Topology.peer_host``), joins that host's latest related fault the same way: NCCL before
    2.26 stamps no line, so a rank's "Got completion from peer 10.0.0.7" is dated by its log's end, and the fallen
    GPU of 10.0.0.7's host ten minutes before is what it reports (a fresh user's trial: it was an incident of its
    own that named the reporting ranks' GPUs as suspects)."""
    file_only: dict[int, list[int]] = {}
    timed_roots: set[int] = set()
    for i, e in enumerate(faults):
        r = dsu.find(i)
        if e.ts_basis == "file":
            file_only.setdefault(r, []).append(i)
        else:
            timed_roots.add(r)
    # (host, file-dated?) -> (starts, fault indices) of the host's faults with a time of their own, or dated by their
    # file, by (start, order): ``_host_faults``
    memo: dict[tuple[str, bool], tuple[list[int], list[int]]] = {}
    later: list[tuple[int, list[int]]] = []
    for r, idx in file_only.items():
        if r in timed_roots:
            continue
        starts, own = _host_faults(faults[idx[0]].host, False, faults, by_host, memo)
        t = min(faults[i].start for i in idx)
        if _join_latest(starts, own, t, idx, faults, dsu, related) is None and not _join_peer_host(
                idx, t, faults, by_host, memo, dsu, related, topo):
            later.append((r, idx))
    # then a component no fault with a time of its own took: the latest related fault of another such component of
    # its host (shine-cluster#171: nvidia-smi, run after the job died, cannot reach a GPU; the job's own log, another
    # file, holds the other ranks' watchdog timeouts 45 minutes before): both were written then or earlier
    # — as long as the joined faults span at most FILE_REACH_US: four job logs 50 min apart are no one incident
    if not later:
        return
    span: dict[int, tuple[int, int]] = {}  # component root -> its faults' earliest and latest start
    for i, f in enumerate(faults):
        r = dsu.find(i)
        lo, hi = span.get(r, (f.start, f.start))
        span[r] = (min(lo, f.start), max(hi, f.start))
    for r, idx in later:
        starts, own = _host_faults(faults[idx[0]].host, True, faults, by_host, memo)
        root = dsu.find(idx[0])
        lo, hi = span[root]
        fit = {j: rj for j in own if (rj := dsu.find(j)) != root
               and max(hi, span[rj][1]) - min(lo, span[rj][0]) <= FILE_REACH_US}
        keep = [k for k, j in enumerate(own) if j in fit]
        j = _join_latest([starts[k] for k in keep], [own[k] for k in keep], min(faults[i].start for i in idx), idx,
                         faults, dsu, related)
        if j is not None:
            (lo2, hi2), _ = span.pop(fit[j]), span.pop(root)
            span[dsu.find(root)] = (min(lo, lo2), max(hi, hi2))


def _host_faults(host: str, filed: bool, faults: list[Ev], by_host: dict[str, list[int]],
                 memo: dict[tuple[str, bool], tuple[list[int], list[int]]]) -> tuple[list[int], list[int]]:
    """``host``'s faults dated by their file (``ts_basis`` ``file``) when ``filed``, else those with a time of their
    own, as (starts, fault indices), by (start, order); kept in ``memo``."""
    got = memo.get((host, filed))
    if got is None:
        own = sorted((j for j in by_host.get(host, ()) if (faults[j].ts_basis == "file") == filed),
                     key=lambda j: (faults[j].start, faults[j].order))
        got = memo[(host, filed)] = ([faults[j].start for j in own], own)
    return got


def _join_peer_host(idx: list[int], t: int, faults: list[Ev], by_host: dict[str, list[int]],
                    memo: dict[tuple[str, bool], tuple[list[int], list[int]]], dsu: _DSU,
                    related: Callable[[Ev, Ev], bool], topo: Topology) -> bool:
    """Join the file-dated faults ``idx`` to the latest related fault with a time of its own of a host their peer
    addresses name (``_join_file_timed``), else of its faults its file's time dates (a raw kernel stamp counted back
    from it: plain ``dmesg``, the most common capture, whose peer's report beside it was an incident of its own, a
    break-it pass); whether one took them."""
    seen: set[str] = set()
    for i in idx:
        e = faults[i]
        if not e.details.get("peer_addr"):
            continue
        host = topo.peer_host(e)
        if not host or host == e.host or host in seen:
            continue
        seen.add(host)
        if any(_join_latest(*_host_faults(host, filed, faults, by_host, memo), t, idx, faults, dsu, related) is not None
               for filed in (False, True)):
            return True
    return False


def _join_latest(starts: list[int], own: list[int], t: int, idx: list[int], faults: list[Ev], dsu: _DSU,
                 related: Callable[[Ev, Ev], bool]) -> int | None:
    """Join the faults ``idx`` to the latest of ``own`` (fault indices sorted by start, then order; ``starts`` their
    starts, µs) that began no later than ``t`` and at most ``FILE_REACH_US`` before it and is ``related`` to one of
    them; the one joined, or None."""
    for k in range(bisect_right(starts, t) - 1, -1, -1):
        if starts[k] < t - FILE_REACH_US:
            break
        j = own[k]
        if any(related(faults[j], faults[i]) and not across_reboot(faults[j], faults[i]) for i in idx):
            dsu.union(idx[0], j)
            return j
    return None


def _join_spanned(faults: list[Ev], loose: frozenset[int], dsu: _DSU, by_host: dict[str, list[int]],
                  related: Callable[[Ev, Ev], bool], topo: Topology, starts: list[int], widest: int) -> None:
    """Join each fault of ``loose`` whose component holds no other fault with a time of its own to the latest fault
    of its host, of its GPU (:func:`_gpu_of`, when both name one), that is ``related`` to it and began within its
    span: after ``FILE_REACH_US`` before its time and no later than the latest it may have been written
    (``details.ts_until``, µs, plus that fault's precision). ``loose``: faults whose time is inherited from the stamped
    line before them (``ingest.assemble._span_inherited``) and spans more than a link's window, which that link does
    not join by time (``components``): a training script prints unstamped output for hours, so a rank's
    ``RuntimeError: CUDA error: uncorrectable ECC error encountered`` under the job's NCCL init line spans four hours,
    and joined by time alone it would join whatever its host logged in them; as ``_join_file_timed`` places a line
    dated only by its file, it joins the fault it reports, the Xid 48 of its GPU (a scenario trial), by its subject
    and a rule (``attribute.may_relate``). Faults dated by their file and other loose ones are not joined to.
    ``starts``: the faults' starts (µs); ``widest``: no fault but those of ``loose`` has a coarser precision (µs)."""
    find = dsu.find
    firm_roots = {find(i) for i, e in enumerate(faults) if e.ts_basis != "file" and i not in loose}
    gpus: dict[int, str | None] = {}

    def gpu(i: int) -> str | None:
        if i not in gpus:
            gpus[i] = _gpu_of(faults[i], topo)
        return gpus[i]

    for i in sorted(loose, key=lambda i: faults[i].order):
        if dsu.find(i) in firm_roots:
            continue
        e = faults[i]
        until = e.details["ts_until"]
        host = by_host.get(e.host, [])  # in faults order: by start
        for j in reversed(host[:bisect_right(host, until + widest, key=starts.__getitem__)]):  # latest first
            f = faults[j]
            if f.start < e.ts - FILE_REACH_US:
                break
            if j in loose or f.ts_basis == "file" or f.start > until + f.start_precision_us:
                continue
            mine, theirs = gpu(i), gpu(j)
            if (mine is None or theirs is None or mine == theirs) and not across_reboot(f, e) and related(f, e):
                dsu.union(i, j)
                firm_roots.add(dsu.find(i))
                break


def _gpu_of(e: Ev, topo: Topology) -> str | None:
    """The GPU ``e`` names (``rules.gpu_key``), or that of its rank when its line names none (a rank's
    ``CUDA error``): the one GPU of its host the communicators of ``e`` (``rules.comms_of``) place that rank on;
    None when unknown."""
    key = gpu_key(e, topo)
    if key is not None or e.rank is None:
        return key
    on = {where[1] for comm in comms_of(e, topo)
          if (where := topo.comm_ranks.get(comm, {}).get(e.rank)) is not None and where[0] == e.host and where[1]}
    return next(iter(on)) if len(on) == 1 else None


def _sides(bit: int, shapes: list[tuple[list[int], int]]) -> tuple[set[int], set[int]] | None:
    """The faults (indexes) that hold a derived link's ``cause`` and those that hold its ``effect`` (bits ``bit`` and
    ``bit + 1`` of each shape's ``rules.SideIndex`` bits; ``shapes``: the faults of each ``rules.pred_shape`` with
    them), or None when no fault holds one side."""
    cause: set[int] = set()
    effect: set[int] = set()
    for idx, bits in shapes:
        if bits >> bit & 1:
            cause.update(idx)
        if bits >> (bit + 1) & 1:
            effect.update(idx)
    return (cause, effect) if cause and effect else None


def _reach(idx: list[int], sides: tuple[set[int], set[int]], faults: list[Ev], starts: list[int], w: int,
           slack: int, nearest: dict[int, tuple[int, int, int]], clocks: Clocks, lead: int = 0) -> None:
    """Note in ``nearest`` (effect index -> (distance µs, start µs, cause index), the least kept over the buckets an
    effect is in; the caller joins each pair) each effect fault of the bucket ``idx``'s nearest cause fault (by
    start) that may have caused it within ``w``: ``window.within`` (the window, resolutions and, across hosts,
    both skews) and ``window.may_cause`` (not clearly after it: a Fabric Manager failure hours after an NVLS error
    is none of its cause); ``slack`` bounds how much farther than ``w`` that can be (µs); ``lead``: how much later
    than an effect its cause may be logged (µs, the rule's ``lead_s``). Of equally near causes, the earlier, then
    the first in ``faults`` order. A binary search per effect over the bucket's causes sorted by start, then outwards
    from it, nearest first: a host's thousands of Fabric Manager lines cost an effect the few nearest, not all of
    them."""
    cause, effect = sides
    causes = sorted((i for i in idx if i in cause), key=starts.__getitem__)
    if not causes:
        return
    cs = [starts[i] for i in causes]
    for i in idx:
        if i not in effect:
            continue
        for d, near in _outward(cs, causes, starts[i], w + slack):
            j = next((j for j in sorted(near, key=lambda j: (starts[j], j))
                      if j != i and within(faults[j], faults[i], w, clocks)
                      and may_cause(faults[j], faults[i], w, clocks, lead)), None)
            if j is not None:
                got = (d, starts[j], j)
                if i not in nearest or got < nearest[i]:
                    nearest[i] = got
                break


def _outward(starts: list[int], items: list[int], t: int, limit: int) -> Iterator[tuple[int, list[int]]]:
    """``items`` (sorted by ``starts``, their starts in µs) by distance from ``t``, nearest first, as (distance,
    the items at it), no farther than ``limit``: a binary search, then outwards both ways."""
    n = len(starts)
    right = bisect_left(starts, t)
    left = right - 1
    while True:
        dl = t - starts[left] if left >= 0 else limit + 1
        dr = starts[right] - t if right < n else limit + 1
        d = dl if dl < dr else dr
        if d > limit:
            return
        near = []
        while left >= 0 and t - starts[left] == d:
            near.append(items[left])
            left -= 1
        while right < n and starts[right] - t == d:
            near.append(items[right])
            right += 1
        yield d, near


def _join_peers(faults: list[Ev], by_host: dict[str, list[int]], topo: Topology, starts: list[int], w: int,
                slack: int, dsu: _DSU, clocks: Clocks, kinds_of_rule: set[str] | None, kinds: list[str],
                loose: frozenset[int] = frozenset()) -> None:
    """Union each fault that names its peer on another host (``Topology.peer_host``) with that host's faults within
    ``w`` (``window.within``): the ``peer_host`` relation holds for those pairs and no others, so a fault is compared
    with the peer host's faults near its start (a binary search over them, ``by_host`` lists are in start order),
    never with the other faults that name the same peer (8,000 ranks losing one host were 64 million pairs, 97 s: a
    break-it pass). ``slack`` bounds how much farther than ``w`` two faults may be (µs). The faults ``loose``
    (inherited times that span more than ``w``: ``components``) join none."""
    for i, e in enumerate(faults):
        p = topo.peer_host(e)
        if p is None or p == e.host or p not in by_host or (kinds_of_rule and kinds[i] not in kinds_of_rule) or (
                i in loose):
            continue
        there = by_host[p]
        s = starts[i]
        lo = bisect_left(there, s - w - slack, key=starts.__getitem__)
        hi = bisect_right(there, s + w + slack, key=starts.__getitem__)
        for j in there[lo:hi]:
            if (kinds_of_rule and kinds[j] not in kinds_of_rule) or j in loose or dsu.find(j) == dsu.find(i) or (
                    spares_job(faults[j])):  # an OOM kill of another program is no fault of the peer
                continue
            if within(faults[j], e, w, clocks):
                dsu.union(i, j)


def _one_host(idx: list[int], hosts: list[str]) -> bool:
    h = hosts[idx[0]] if idx else None
    return all(hosts[i] == h for i in idx)


def _sweep(idx: list[int], starts2: list[int], precisions2: list[int], w: int, dsu: _DSU,
           lefts2: list[int]) -> None:
    """Union the faults ``idx`` of one host's bucket that are close enough in time (``window.within``).

    On one host no skew applies, so ``|start_i - start_j| <= w + precision_i + precision_j`` says that the
    intervals ``start ± (w/2 + precision)`` overlap: the components are the runs of overlapping intervals,
    found in one pass over them sorted by left end (times doubled to stay in integers: ``starts2``,
    ``precisions2`` hold twice each fault's start and precision, µs; ``lefts2`` their difference). ``idx`` is in
    start order, so when its precisions are all equal it is already in that order. Each run's faults join the
    run's root (``_DSU``: the smallest index is a root), one lookup per fault."""
    if not idx:
        return
    p0 = precisions2[idx[0]]
    for i in idx:
        if precisions2[i] != p0:
            idx = sorted(idx, key=lefts2.__getitem__)  # which faults overlap does not depend on ties
            break
    find, join = dsu.find, dsu.join
    root = find(idx[0])
    reach = starts2[idx[0]] + w + precisions2[idx[0]]
    for i in idx[1:]:
        s, p = starts2[i], precisions2[i]
        if s - w - p <= reach:
            root = join(root, i)
            if s + w + p > reach:
                reach = s + w + p
        else:
            reach = s + w + p
            root = find(i)


def _sweep_hosts(idx: list[int], hosts: list[str], starts2: list[int], precisions2: list[int], w: int, dsu: _DSU,
                 lefts2: list[int], skews2: list[int]) -> None:
    """Union the faults ``idx`` of a keyed bucket that spans hosts (every pair stands in the relation) that are
    close enough in time (``window.within``), in O(n log n) rather than pair by pair.

    Pairs on one host are ``_sweep``'s (no skew). A pair on two hosts is within when
    ``|start_i - start_j| <= w + precision_i + precision_j + skew_i + skew_j``: the intervals
    ``start ± (w/2 + precision + skew)`` overlap (doubled to stay in integers, as in ``_sweep``; ``skews2``: each
    fault's ``window.start_skew``, doubled, none for a start the cloud states). Taken by left
    end, the intervals still open at a fault's left end all hold that point, so the fault is within of each of
    them on another host: it joins every component with such an open interval. Open components are indexed
    by the hosts of their open intervals (``multi``: two or more hosts, joined by any fault; ``single[h]``: only
    ``h``, joined by a fault of another host), so a fault visits only the components it joins."""
    per_host: dict[str, list[int]] = defaultdict(list)
    for i in idx:
        per_host[hosts[i]].append(i)
    for same in per_host.values():
        _sweep(same, starts2, precisions2, w, dsu, lefts2)
    half = [w + precisions2[i] + skews2[i] for i in idx]
    order = sorted(range(len(idx)), key=lambda a: starts2[idx[a]] - half[a])
    find, union = dsu.find, dsu.union
    open_: list[tuple[int, int]] = []  # heap of (right end, fault)
    comps: dict[int, dict[str, int]] = {}  # open component root -> its open intervals per host
    multi: set[int] = set()
    single: dict[str, set[int]] = {}  # no empty sets: a fault looks at the hosts that have open components

    def unindex(r: int) -> None:
        c = comps[r]
        if len(c) == 1:
            g = next(iter(c))
            single[g].discard(r)
            if not single[g]:
                del single[g]
        else:
            multi.discard(r)

    def index(r: int) -> None:
        c = comps[r]
        if not c:
            del comps[r]
        elif len(c) == 1:
            single.setdefault(next(iter(c)), set()).add(r)
        else:
            multi.add(r)

    for a in order:
        i = idx[a]
        h, left = hosts[i], starts2[i] - half[a]
        while open_ and open_[0][0] < left:  # closed before this fault's left end
            _, j = heappop(open_)
            r = find(j)
            unindex(r)
            c = comps[r]
            c[hosts[j]] -= 1
            if not c[hosts[j]]:
                del c[hosts[j]]
            index(r)
        joined = set(multi)
        for g, rs in single.items():
            if g != h:
                joined |= rs
        mine = find(i)
        if mine in comps:
            joined.add(mine)
        parts = []
        for r in joined:
            unindex(r)
            parts.append(comps.pop(r))
            union(i, r)
        # the smaller counts go into the largest (a communicator's component holds every host of the job)
        merged = max(parts, key=len) if parts else {}
        for c in parts:
            if c is not merged:
                for g, n in c.items():
                    merged[g] = merged.get(g, 0) + n
        merged[h] = merged.get(h, 0) + 1
        root = find(i)
        comps[root] = merged
        index(root)
        heappush(open_, (starts2[i] + half[a], i))


#: the kinds of a job's own lines (NCCL's and PyTorch's): a component of these alone is a job's report
_JOB_KINDS = frozenset({"nccl_timeout", "nccl_error", "nccl_init", "nccl_transport", "nccl_p2p_fallback"})
#: and torchrun's report of a worker that ended with an error of its own (not the -9 of a kill from outside): once it
#: follows its host's timeouts (model.AGENT_FOLLOW_UP_US) it was a host's "fault of its own" that kept the hosts of a
#: collective apart (a fresh user's trial)
_JOB_SIGNATURES = frozenset({"torch.elastic.worker_failed", "deepspeed.launcher.worker_failed"})


def _job_line(e: Ev) -> bool:
    """A line of the job's own (:data:`_JOB_KINDS`, :data:`_JOB_SIGNATURES`), or Ray's report of the worker its
    host's watchdog took down (``model.follow_watchdogs``: its death line after the timeout kept two hosts' timeouts
    of one collective apart, a break-it pass)."""
    return (e.kind in _JOB_KINDS or e.signature in _JOB_SIGNATURES
            or (e.implied_start is not None and e.signature == RAY_WORKER_DIED))


def join_named_collectives(comps: list[list[Ev]], topo: Topology, clocks: Clocks | None = None) -> list[list[Ev]]:
    """``comps`` (each sorted by ``Ev.order``, in order of their first event), with the components joined whose watchdog
    timeouts name one collective (``rules.collective_of``: process group, SeqNum, OpType, Numel, timeout) of ranks that
    no communicator places (no NCCL init lines: ``rules.comms_of`` gives none) and start within
    ``rules.collective_window_us`` of the first of them. Ray Train's workers on several hosts timing out on one
    allreduce without NCCL_DEBUG=INFO were one incident per host (NVIDIA/nccl#1193, a real-logs pass).

    Anchored at the first timeout of each group, not linked pair by pair: lines of one tuple every few seconds over
    half an hour (a fleet running one model's jobs; the benchmark mix repeats its example lines) chained every host's
    faults into one incident of 3,000 events when it was a link relation. A rank in the job (:func:`_job_rank`) that
    timed out on the collective from two hosts is two jobs': a group is taken in time order, a job at a time, each
    component whose ranks the job holds on other hosts left for the next; two such components of one instant join
    nothing (no line tells their jobs apart). A job holds at most one component with
    faults other than a job's lines (:data:`_JOB_KINDS`): the hosts whose ranks only timed out join the one whose GPU
    failed. Nothing else joins a component here. ``clocks``: the window widens by both hosts' skew bounds (a host 90 s
    ahead stayed apart: a break-it pass)."""
    first: dict[tuple, list[tuple[int, int]]] = defaultdict(list)  # key -> (start of its first timeout, component)
    # a component of a job's lines only (its ranks' timeouts and reports): joined to any; two with other faults (a
    # GPU's, a host's) are not joined by a collective their timeouts name: each has its own story, and the benchmark
    # mix's repeated lines made incidents of 500 parties so (correlate() 65 % slower)
    job_only = [all(_job_line(e) for e in comp) for comp in comps]
    # (key, component) -> rank in the job (_job_rank) -> the hosts that timed out as it: one rank on two hosts within
    # one group is two jobs at the same step of the same program, which the collective's name cannot tell apart (two
    # jobs' ranks 0 - 15 on SeqNum 808 were one incident, the second job's hosts "downstream" of the first's Xid 79: a
    # break-it pass; refusing the group, one replica more split the first job: a second one)
    ranks_of: dict[tuple, dict[int, set[str]]] = defaultdict(lambda: defaultdict(set))
    for k, comp in enumerate(comps):
        starts: dict[tuple, tuple[int, str]] = {}
        for e in comp:
            if (key := named_collective(e, topo)) is not None:
                if key not in starts or e.start < starts[key][0]:
                    starts[key] = (e.start, e.host)
                if (rank := _job_rank(e)) is not None:
                    ranks_of[(key, k)][rank].add(e.host)
        for key, (t, host) in starts.items():
            first[key].append((t, k, clocks.skew(host) if clocks is not None else 0))
    if not any(len(v) > 1 for v in first.values()):
        return comps
    dsu = _DSU(len(comps))
    for key, runs in first.items():
        runs.sort()
        groups: list[list[tuple[int, int]]] = []
        anchor = None  # the group's first timeout
        for t, k, skew in runs:
            if anchor is not None and t - anchor[0] <= collective_window_us(anchor[1], skew):
                groups[-1].append((t, k))
            else:
                anchor = (t, skew)
                groups.append([(t, k)])
        for group in groups:
            # two components that put one rank on two hosts within a second of each other: which job each is of, no
            # line tells (two jobs' ranks 0 - 15 at one instant); they join nothing
            unsure = _unsure(group, {k: ranks_of.get((key, k), {}) for _t, k in group})
            ks = [k for _t, k in group if k not in unsure]
            while len(ks) > 1:  # a job, then the components whose ranks it already holds on other hosts: another job
                taken: dict[int, set[str]] = {}  # rank -> its hosts, in this job
                other = False  # whether the job holds another's faults than a job's lines
                rest = []
                for k in ks:
                    ranks = ranks_of.get((key, k), {})
                    if _collide(ranks, taken):
                        rest.append(k)
                        continue
                    if k != ks[0]:
                        if not job_only[k] and other:
                            continue
                        dsu.union(ks[0], k)
                    other = other or not job_only[k]
                    for r, hosts in ranks.items():
                        taken.setdefault(r, set()).update(hosts)
                ks = rest
    groups: dict[int, list[int]] = defaultdict(list)
    for k in range(len(comps)):
        groups[dsu.find(k)].append(k)
    out = [comps[ks[0]] if len(ks) == 1 else sorted((e for k in ks for e in comps[k]), key=attrgetter("order"))
           for ks in groups.values()]
    out.sort(key=lambda c: c[0].order)
    return out


#: timeouts of one collective this close (µs) are of one instant: which of two colliding components is the earlier, no
#: line tells (:func:`join_named_collectives`)
_SAME_INSTANT_US = S


def _unsure(group: list[tuple[int, int]], ranks: dict[int, dict[int, set[str]]]) -> set[int]:
    """The components of ``group`` ((start, component) pairs) that put a rank on another host than a component within
    :data:`_SAME_INSTANT_US` of them does (:func:`_collide`, pair by pair). Compared rank by rank: only components
    that name one rank are compared, so a job of 4,096 hosts, each rank on one, is one pass (every pair of hosts was
    compared: 16.7M calls, 39 s, a break-it pass)."""
    by_rank: dict[int, list[tuple[int, int, set[str]]]] = defaultdict(list)
    for t, k in group:
        for r, hosts in ranks[k].items():
            by_rank[r].append((t, k, hosts))
    out: set[int] = set()
    for entries in by_rank.values():
        if len(entries) < 2 or len(set().union(*(h for _t, _k, h in entries))) < 2:
            continue
        entries.sort(key=lambda x: x[0])  # in time order: a pair further apart than an instant ends the search
        for i, (t, k, h) in enumerate(entries):
            for t2, k2, h2 in entries[i + 1:]:
                if t2 - t > _SAME_INSTANT_US:
                    break
                if k2 != k and len(h | h2) > 1:
                    out.update((k, k2))
    return out


def _collide(a: dict[int, set[str]], b: dict[int, set[str]]) -> bool:
    """Whether two components' ranks (rank -> hosts) put one rank on two hosts: they are of two jobs."""
    return any(len(hosts | b[r]) > 1 for r, hosts in a.items() if r in b)


def _job_rank(e: Ev) -> int | None:
    """A watchdog timeout's rank in its job (:func:`join_named_collectives`): c10's ``[rankN]:``
    (``details.global_rank``), else the line's own rank when it names no process group but the default one; None for a
    rank in another process group (``[PG ID 6 … Rank 0]``: each data-parallel replica's pipeline group has a rank 0 of
    its own)."""
    if "global_rank" in e.details:
        return e.details["global_rank"]
    return e.rank if str(e.details.get("pg") or "0") == "0" else None


def _buckets(rel: str, faults: list[Ev], by_host: dict[str, list[int]], topo: Topology, rels: Relations,
             memo: _JobsMemo) -> list[list[int]]:
    """Indexes of ``faults`` (each list in ``faults`` order) that may stand in relation ``rel``.

    For the relations in ``_KEYED`` the relation holds for every pair of a bucket and for no pair across
    buckets (one bucket per GPU or other device, host, NVLink domain, communicator, or communicator and SeqNum an
    event belongs to; an event of several communicators is in several buckets; ``rules.relation`` is the definition
    these keys follow; but the host is one bucket, ``same_host`` and ``same_domain`` within it, whose two jobs' GPUs
    ``rules.Relations.other_job`` tells apart only for attribution, ``correlator.apart`` splitting their incidents), so
    pairs need only the time test. The others are tested pair by pair within a host (``peer_host``:
    :func:`_join_peers`). ``rels``: the caller's ``Relations`` of ``topo`` and ``memo`` its ``_jobs_apart`` answers,
    kept over the calls of one :func:`components`."""
    if rel in ("same_device", "same_gpu"):
        out: dict[tuple, list[int]] = defaultdict(list)
        for i, e in enumerate(faults):
            key = gpu_key(e, topo)
            if key is not None:
                out[("gpu", e.host, key, e.boot)].append(i)
            elif (subject := e.subject())[2] is not None:
                # two jobs' ranks of one number on one host are two (rules.rank_scope)
                out[("subject", *subject, e.boot, rank_scope(e, topo) if subject[1] == "rank" else None)].append(i)
        return list(out.values())
    if rel == "same_domain":
        out = defaultdict(list)
        for host, idx in by_host.items():
            out[topo.domain(host)].append((host, idx))
        known = bool(topo.comm_index()) or any(e.comm for e in faults)
        groups = []
        for v in out.values():
            parts = _domain_jobs(v[0][1] if len(v) == 1 else sorted(i for _, idx in v for i in idx), faults, rels,
                                 memo)
            # a host's GPU fault and a report of a job none of its GPU's communicators hold are apart in its domain as
            # in its host's bucket (same_host, below): a host that is its own domain (no fleet config) joined by
            # same_domain what same_host kept apart (the clustering property test, a draw with partial init lines)
            if known and not all(memo.calm_host(h) for h, _ in v):
                parts = [part for idx in parts for part in _jobs_apart(idx, faults, rels, memo)]
            groups += parts
        if any(faults[i].boot for idx in groups for i in idx):  # boots apart, as in a host's bucket (below)
            return [[i for i in idx if faults[i].boot == b] for idx in groups
                    for b in sorted({faults[i].boot for i in idx})]
        return groups
    if rel in ("same_comm", "same_collective"):
        out = defaultdict(list)
        placed = topo.comm_index()  # hosts with ranks: an event with no communicator of its own elsewhere has none
        seq = rel == "same_collective"
        for i, e in enumerate(faults):
            if (not e.comm and e.host not in placed) or (seq and e.seq is None):
                continue
            for comm in comms_of(e, topo):
                out[(comm, e.seq) if seq else comm].append(i)
        return list(out.values())
    if rel == "same_log":
        out = defaultdict(list)
        for i, e in enumerate(faults):
            if (log := log_of(e)) is not None:
                out[log].append(i)
        return list(out.values())
    if rel == "same_host":
        groups = list(by_host.values())
        if any(e.boot for e in faults):  # by_host holds every fault of ``faults``
            # a fault of a boot before its capture's last (``Ev.boot``) is dated at the latest the next boot's start,
            # so a window that reaches across it joined it to a fault a minute into the next boot: one incident of two
            # boots (a break-it pass). A host's faults of each such boot are a bucket of their own (a device that fails
            # again after the reboot is a recurrence); ``rules.Relations.holds`` keeps apart only the lines of one
            # capture
            out = defaultdict(list)
            for host, idx in by_host.items():
                for i in idx:
                    out[(host, faults[i].boot)].append(i)
            groups = list(out.values())
        placed = topo.comm_index()
        if not placed and not any(e.comm for e in faults):  # no job known anywhere (most kernel logs)
            return groups
        calm = memo.calm_host
        return [part for idx in groups for part in
                ([idx] if calm(faults[idx[0]].host) else _jobs_apart(idx, faults, rels, memo))]
    return list(by_host.values())


class _JobsMemo:
    """What :func:`_jobs_apart` found over the calls of one ``Relations`` (one :func:`components`): each fault's
    profile (``id(event)`` -> profile; the caller keeps the events alive), per pair of profiles whether
    ``Relations.other_job`` holds for their faults, and per host the sets of its profiles no two of which it holds for
    (the first ``same_host`` link's buckets hold all of a host's faults; the links derived from explains rules, each a
    part of them, then need no pair tested). ``faults``, ``by_host``, ``rel``: all the faults of the
    :func:`components` call, their indexes by host and its ``Relations``, for :meth:`calm_host`."""

    __slots__ = ("profiles", "apart", "clean", "calm", "faults", "by_host", "rel")

    def __init__(self, faults: list[Ev], by_host: dict[str, list[int]], rel: Relations) -> None:
        self.profiles: dict[int, tuple] = {}
        self.apart: dict[tuple[tuple, tuple], bool] = {}
        self.clean: dict[str, list[frozenset[tuple]]] = {}
        self.calm: dict[str, bool] = {}
        self.faults, self.by_host, self.rel = faults, by_host, rel

    def calm_host(self, host: str) -> bool:
        """Whether ``Relations.other_job`` holds for no two of all the call's faults of ``host`` (``faults``): then
        for none of any part of them, and a ``same_host`` bucket of its faults is one bucket, whichever link's faults
        it holds. :func:`_jobs_apart` of the host's faults, asked once per call instead of once per link and host (it
        profiled every fault of a bucket again for each of the ~17 ``same_host`` links: 5 % of ``correlate()`` on the
        benchmark's mix, whose hosts' faults were never apart). False for a host with no fault of the call."""
        got = self.calm.get(host)
        if got is None:
            idx, faults, rel = self.by_host.get(host), self.faults, self.rel
            if idx is None:
                got = False
            elif not (any(faults[i].kind in RANK_REPORTS and rel.comms(faults[i]) for i in idx)
                      and any(job_local(e := faults[i]) and rel.key(e) is not None and rel.comms(e) for i in idx)):
                # on one host other_job (other_gpus) holds only between a GPU's own fault with a GPU key and
                # communicators and a rank's report with communicators: the communicators of no other fault are read
                got = True
            else:
                got = len(_jobs_apart(idx, faults, rel, self)) == 1
            self.calm[host] = got
        return got


def _jobs_apart(idx: list[int], faults: list[Ev], rel: Relations, memo: _JobsMemo) -> list[list[int]]:
    """The buckets of the faults ``idx`` (sorted) in which ``rules.Relations.other_job`` holds for no pair and which
    hold every pair it does not hold for: a host's faults (``same_host``), or those of jobs whose hosts meet in one
    NVLink domain (:func:`_domain_jobs`). On one host, ``other_job`` keeps apart a GPU's own fault
    (``rules.job_local``) and a rank's report of a job NCCL's init lines place on none of that GPU's communicators.
    One job's fallen GPU and another job's watchdog timeout on the host's other GPU were one candidate incident (the
    host's bucket, and the domain's, a host being its own domain when no fleet config names one), so that job's IB
    port down on its other host (``same_comm``) was listed "by no rule" under the Xid 79, and its hang named no fault
    (a break-it pass).

    Faults are grouped by profile (host, whether a GPU's own fault, whether a rank's report, GPU key, communicators):
    what ``other_job`` reads, so faults of one profile relate alike. ``[idx]`` when no two profiles are apart (no init
    lines, or one job: the most common); else one bucket per clique of profiles, found greedily (a host holds a few
    GPUs and jobs: a few profiles). ``memo``: each fault's profile and ``other_job`` of pairs of profiles, kept by the
    caller over the calls of one ``Relations`` (one :func:`components` asks again for each of its ~17 ``same_host``
    links)."""
    profiles: dict[tuple, list[int]] = defaultdict(list)
    known = memo.profiles
    for i in idx:
        e = faults[i]
        got = known.get(id(e))
        if got is None:
            local = job_local(e)
            got = known[id(e)] = (e.host, local, e.kind in RANK_REPORTS, rel.key(e) if local else None, rel.comms(e))
        profiles[got].append(i)
    if len(profiles) < 2:
        return [idx]
    keys = list(profiles)
    host = keys[0][0]
    one_host = all(k[0] == host for k in keys)
    # no two of a host's profiles apart: none of any part of them either (``other_job`` is of pairs of profiles)
    if one_host and any(c.issuperset(keys) for c in memo.clean.get(host, ())):
        return [idx]
    first = [faults[profiles[k][0]] for k in keys]
    n = len(keys)
    pairs = memo.apart
    apart = set()
    for a in range(n):
        for b in range(a + 1, n):
            got = pairs.get((keys[a], keys[b]))
            if got is None:
                got = pairs[(keys[a], keys[b])] = rel.other_job(first[a], first[b])
            if got:
                apart.add((a, b))
    if not apart:
        if one_host:
            memo.clean.setdefault(host, []).append(frozenset(keys))
        return [idx]
    cliques: list[list[int]] = []
    covered: set[tuple[int, int]] = set()
    for a in range(n):
        for b in range(a, n):
            if (a, b) in apart or (a, b) in covered:
                continue
            clique = [a] if a == b else [a, b]
            for c in range(n):
                if c not in clique and all((min(c, d), max(c, d)) not in apart for d in clique):
                    clique.append(c)
            covered.update((min(c, d), max(c, d)) for c in clique for d in clique)
            cliques.append(clique)
    return [sorted(i for k in clique for i in profiles[keys[k]]) for clique in cliques]


def _domain_jobs(idx: list[int], faults: list[Ev], rel: Relations, memo: _JobsMemo) -> list[list[int]]:
    """The buckets of one NVLink domain's faults ``idx`` (sorted) in which ``same_domain`` holds for every pair and
    which hold every such pair (``rules.Relations.other_job``: faults of two jobs that NCCL's init lines place on
    other hosts, or of a job so placed and a GPU's own fault on a host of none of its ranks, are not tied by their
    domain): the faults of no known job; per set of job hosts, the faults of that set with those of no known job they
    pair with; and per host of two such sets, their faults. One bucket, ``idx``, when no fault's job is known (no
    init lines: the most common). The faults of no known job are copied once per set, not per host (a 100-host job's
    timeouts beside a storm of 20,000 Xid 145 lines). ``rel``, ``memo``: as :func:`_buckets` takes them."""
    hosts_of: dict[int, frozenset[str]] = {}
    for i in idx:
        if (hosts := rel.job_of(faults[i])) is not None:
            hosts_of[i] = hosts
    if not hosts_of:
        return [idx]
    rest = [i for i in idx if i not in hosts_of]
    by_job: dict[frozenset[str], list[int]] = defaultdict(list)
    for i, hosts in hosts_of.items():
        by_job[hosts].append(i)
    out = [rest] + [sorted(mine + [i for i in rest if not job_local(faults[i]) or faults[i].host in hosts])
                    for hosts, mine in by_job.items()]
    if len(by_job) > 1:  # jobs whose hosts meet
        by_host: dict[str, list[int]] = defaultdict(list)
        for hosts, mine in by_job.items():
            for h in hosts:
                by_host[h].append(hosts)
        # their faults on one host are apart when one is a GPU's own and the other a rank's report of a job none of
        # whose ranks that GPU holds (_jobs_apart)
        out += [part for sets in by_host.values() if len(sets) > 1
                for part in _jobs_apart(sorted(i for hosts in sets for i in by_job[hosts]), faults, rel, memo)]
    return [b for b in out if len(b) > 1]


def _context_window(e: Ev, links: list[LinkRule]) -> int:
    w = max((l.window_s for l in links if l.relation == "same_host" and l.kinds and e.kind in l.kinds), default=None)
    if w is None:
        w = max((l.window_s for l in links if l.relation == "same_host" and not l.kinds and l.cause is None),
                default=0)
    return int(w * S)


def _attach_context(context: list[Ev], faults: list[Ev], dsu: _DSU, groups: dict[int, list[Ev]],
                    links: list[LinkRule], clocks: Clocks) -> None:
    """Each context event joins the component of the closest fault of its host within its window (of
    equally close ones, the first in ``faults`` order): the faults of its host are searched outwards from
    its time, nearest first, and no farther than any of them could be related."""
    per_host: dict[str, tuple[list[int], list[int]]] = {}
    for i, f in enumerate(faults):
        starts, idx = per_host.setdefault(f.host, ([], []))
        starts.append(f.start)
        idx.append(i)
    precision = [f.start_precision_us for f in faults]
    # an inherited time that spans more than a context event's window takes none (nor is one: components)
    spanned = [f.spanned for f in faults]
    widest = {h: max((precision[i] for i in idx if not spanned[i]), default=0) for h, (_s, idx) in per_host.items()}
    spanning = {h for h, (_s, idx) in per_host.items() if any(spanned[i] for i in idx)}
    windows: dict[str, int] = {}  # kind -> its context window (µs)
    skews = 2 * clocks.max_skew()
    for e in context:
        if e.host not in per_host:
            continue
        starts, idx = per_host[e.host]
        w = windows.get(e.kind)
        if w is None:
            w = windows[e.kind] = _context_window(e, links) + 2 * S
        if e.spanned and e.start_precision_us > w:
            continue
        limit = w + e.start_precision_us + max(widest[e.host], w if e.host in spanning else 0) + skews
        for d, near in _outward(starts, idx, e.start, limit):
            # window.within on one host (no skew): d <= w + both precisions
            room = d - w - e.start_precision_us
            hit = [i for i in near if precision[i] >= room and not (spanned[i] and precision[i] > w)]
            if hit:
                groups[dsu.find(min(hit))].append(e)
                break
        else:
            # a line that printed no time, dated by the stamped line after it (``details.ts_upper_bound``), came
            # before the faults its file prints next: it joins the first of them printed within its window, though
            # the fault's start lies earlier (a watchdog timeout's implied start: torchtune's unstamped "Saving
            # checkpoint" line before its ranks' timeouts, meta-pytorch/torchtune#2093, a real-logs pass)
            if e.undated():
                cap = capture_of(e)
                later = [i for i in idx if capture_of(faults[i]) == cap and faults[i].pos > e.pos
                         and 0 <= faults[i].ts - e.ts <= w + e.precision_us]
                if later:
                    groups[dsu.find(min(later, key=lambda i: faults[i].pos))].append(e)
