"""Group events into candidate incidents: connected components of the ``links`` rules.

Two events are linked when a link rule's relation holds and they are within
its window (``correlate.window.within``: resolution and, across hosts, both
skew bounds added). An operator-reported symptom without a time links to
every event of its host. Events that only describe wiring (NCCL channel and
init lines) are facts for the topology, not members of incidents.
"""

from __future__ import annotations

from collections import defaultdict

from correlate.model import Ev
from correlate.rules import LinkRule, relation
from correlate.topology import Topology
from correlate.window import Clocks, within

S = 1_000_000
#: kinds that describe wiring or configuration, never a fault on their own
FACT_KINDS = frozenset({"nccl_transport", "nccl_init"})
SYMPTOM = "operator.symptom"


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


def components(events: list[Ev], links: list[LinkRule], topo: Topology, clocks: Clocks) -> list[list[Ev]]:
    """Connected components, each sorted by (start, event_id); components sorted by first event."""
    evs = sorted(members(events), key=lambda e: e.order)
    n = len(evs)
    dsu = _DSU(n)
    max_w = max((int(l.window_s * S) for l in links), default=0)
    slack = 2 * clocks.max_skew() + 2 * S
    # symptoms without a time of their own join everything on their host
    by_host: dict[str, list[int]] = defaultdict(list)
    for i, e in enumerate(evs):
        by_host[e.host].append(i)
    for i, e in enumerate(evs):
        if e.signature == SYMPTOM and e.details.get("untimed"):
            for j in by_host[e.host]:
                dsu.union(i, j)
    # sweep: only pairs whose starts are within the widest window can link
    starts = [e.start for e in evs]
    j0 = 0
    for i in range(n):
        while starts[i] - starts[j0] > max_w + slack:
            j0 += 1
        for j in range(j0, i):
            if dsu.find(i) == dsu.find(j):
                continue
            a, b = evs[j], evs[i]
            for l in links:
                if l.kinds and not (a.kind in l.kinds and b.kind in l.kinds):
                    continue  # a rule for long-lived states links only events of those kinds
                if within(a, b, int(l.window_s * S), clocks) and relation(l.relation, a, b, topo):
                    dsu.union(i, j)
                    break
    groups: dict[int, list[Ev]] = defaultdict(list)
    for i, e in enumerate(evs):
        groups[dsu.find(i)].append(e)
    return sorted(groups.values(), key=lambda g: g[0].order)

