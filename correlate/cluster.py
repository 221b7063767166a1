"""Group events into candidate incidents: connected components of the ``links`` rules.

Two faults are linked when a link rule's relation holds and they are within its
window (``correlate.window.within``: resolution and, across hosts, both skew
bounds added). Context events (informational lines: an NCCL fallback, a Fabric
Manager start-up line) never start an incident; each joins the incident of the
closest fault of its host within the link window of the ``same_host`` relation
(or the rule for its kind), or is left out. An operator-reported symptom
without a time links to every fault of its host. Events that only describe
wiring (NCCL channel and init lines) are topology facts, not members.

Cost: faults are compared only with faults of the same host inside each rule's
window (all hosts only for cross-host relations); context events are placed
with a binary search, so a flood of informational lines stays cheap.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import defaultdict
from collections.abc import Callable

from correlate.model import Ev
from correlate.rules import LinkRule, relation
from correlate.topology import Topology
from correlate.window import Clocks, within

S = 1_000_000
#: kinds that describe wiring or configuration, never a fault on their own
FACT_KINDS = frozenset({"nccl_transport", "nccl_init"})
SYMPTOM = "operator.symptom"
_CROSS_HOST = ("same_comm", "same_domain")


class _DSU:
    def __init__(self, n: int) -> None:
        self.p = list(range(n))

    def find(self, i: int) -> int:
        while self.p[i] != i:
            self.p[i] = self.p[self.p[i]]
            i = self.p[i]
        return i

    def union(self, a: int, b: int) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.p[max(ra, rb)] = min(ra, rb)


def members(events: list[Ev]) -> list[Ev]:
    """The events that can belong to an incident."""
    return [e for e in events if e.kind not in FACT_KINDS]


def _default_is_fault(e: Ev) -> bool:
    return e.signature == SYMPTOM or e.sev >= 1 or e.kind in ("xid", "sxid", "gsp_error")


def components(events: list[Ev], links: list[LinkRule], topo: Topology, clocks: Clocks,
               is_fault: Callable[[Ev], bool] = _default_is_fault) -> list[list[Ev]]:
    """Connected components (each sorted by ``Ev.order``), sorted by their first event."""
    evs = members(events)
    faults = sorted((e for e in evs if is_fault(e)), key=lambda e: e.order)
    context = [e for e in evs if not is_fault(e)]
    n = len(faults)
    dsu = _DSU(n)
    slack = 2 * clocks.max_skew() + 2 * S
    by_host: dict[str, list[int]] = defaultdict(list)
    for i, e in enumerate(faults):
        by_host[e.host].append(i)
    for i, e in enumerate(faults):  # an untimed symptom joins every fault of its host
        if e.signature == SYMPTOM and e.details.get("untimed"):
            for j in by_host[e.host]:
                dsu.union(i, j)
    for rule in links:
        w = int(rule.window_s * S)
        groups = [list(range(n))] if rule.relation in _CROSS_HOST else list(by_host.values())
        for idx in groups:
            if rule.kinds:
                idx = [i for i in idx if faults[i].kind in rule.kinds]
            starts = [faults[i].start for i in idx]
            lo = 0
            for a in range(len(idx)):
                while starts[a] - starts[lo] > w + slack:
                    lo += 1
                for b in range(lo, a):
                    i, j = idx[a], idx[b]
                    if dsu.find(i) == dsu.find(j):
                        continue
                    if within(faults[j], faults[i], w, clocks) and relation(rule.relation, faults[j], faults[i], topo):
                        dsu.union(i, j)
    groups_out: dict[int, list[Ev]] = defaultdict(list)
    for i, e in enumerate(faults):
        groups_out[dsu.find(i)].append(e)
    _attach_context(context, faults, dsu, groups_out, links, clocks)
    comps = [sorted(g, key=lambda e: e.order) for g in groups_out.values()]
    return sorted(comps, key=lambda g: g[0].order)


def _context_window(e: Ev, links: list[LinkRule]) -> int:
    w = max((l.window_s for l in links if l.relation == "same_host" and l.kinds and e.kind in l.kinds), default=None)
    if w is None:
        w = max((l.window_s for l in links if l.relation == "same_host" and not l.kinds), default=0)
    return int(w * S)


def _attach_context(context: list[Ev], faults: list[Ev], dsu: _DSU, groups: dict[int, list[Ev]],
                    links: list[LinkRule], clocks: Clocks) -> None:
    """Each context event joins the component of the closest fault of its host within its window."""
    per_host: dict[str, tuple[list[int], list[int]]] = {}
    for i, f in enumerate(faults):
        starts, idx = per_host.setdefault(f.host, ([], []))
        starts.append(f.start)
        idx.append(i)
    for e in context:
        if e.host not in per_host:
            continue
        starts, idx = per_host[e.host]
        w = _context_window(e, links) + 2 * S
        lo, hi = bisect_left(starts, e.start - w), bisect_right(starts, e.start + w)
        best = None
        for k in range(lo, hi):
            f = faults[idx[k]]
            if within(e, f, w, clocks) and (best is None or abs(f.start - e.start) < abs(best[0].start - e.start)):
                best = (f, idx[k])
        if best is not None:
            groups[dsu.find(best[1])].append(e)
