"""``attribute.collective_edges`` against its definition: for every event whose line names an explained collective
(``rules.named_collective``), every explained edge of that collective in order, the pair kept when the edge's effect is
on another host within ``rules.collective_window_us``, the cause is not the event, and no edge of that cause and event
is there yet. The function groups the explained edges by cause and reads each host's skew once (a domain of 72 hosts
whose job died 20 times tested every timeout against every explained edge: ``benchmarks.bigdomain``); on random
scenes of several collectives, causes, rules, hosts with their own skew bounds, and events listed twice, the two must
give the same edges in the same order."""

from __future__ import annotations

import random

from correlate.attribute import Edge, Scene, collective_edges
from correlate.model import Ev
from correlate.rules import collective_of, collective_window_us, default_rules, named_collective
from correlate.topology import Topology
from correlate.window import Clocks
from ingest.catalog import default_catalog

S = 1_000_000


def reference(scene: Scene, edges: list[Edge]) -> list[Edge]:
    """The definition, every event against every explained edge of its collective."""
    explained: dict[tuple, list[Edge]] = {}
    for x in edges:
        if x.effect.kind == "nccl_timeout" and (k := collective_of(x.effect)) is not None:
            explained.setdefault(k, []).append(x)
    have = {(x.cause.event_id, x.effect.event_id) for x in edges}
    out = list(edges)
    skew = scene.clocks.skew
    for e in scene.events:
        for x in explained.get(named_collective(e, scene.topo), []):
            if x.effect.host != e.host \
                    and abs(x.effect.start - e.start) <= collective_window_us(skew(x.effect.host), skew(e.host)) \
                    and (x.cause.event_id, e.event_id) not in have and x.cause is not e:
                out.append(Edge(x.cause, e, x.rule, "same_collective"))
                have.add((x.cause.event_id, e.event_id))
    return out


def _timeout(eid: str, host: str, ts: int, seq: int) -> Ev:
    return Ev(event_id=eid, ts=ts, ts_basis="line", host=host, source="nccl", kind="nccl_timeout",
              signature="pytorch.watchdog_timeout", severity="error", device_type=None, device=None, link=None,
              xid=None, sxid=None, peer=None, rank=int(eid[1:]), nranks=None, comm=None, message="m", seq=seq,
              op="ALLREDUCE", timeout_ms=600_000, elapsed_ms=600_250)


def _xid(eid: str, host: str, ts: int) -> Ev:
    return Ev(event_id=eid, ts=ts, ts_basis="line", host=host, source="dmesg", kind="xid", signature="xid",
              severity="critical", device_type="gpu", device="0000:1b:00.0", link=None, xid=79, sxid=None, peer=None,
              rank=None, nranks=None, comm=None, message="m")


def _scene(rng: random.Random) -> tuple[Scene, list[Edge]]:
    hosts = [f"h{i}" for i in range(rng.randint(1, 6))]
    timeouts = [_timeout(f"t{i}", rng.choice(hosts), rng.randrange(0, 400 * S), rng.choice([1, 1, 2, 3]))
                for i in range(rng.randint(1, 40))]
    causes = [_xid(f"x{i}", rng.choice(hosts), rng.randrange(0, 400 * S)) for i in range(rng.randint(1, 4))]
    # a timeout as a cause too (a rank's report explaining another's), so a cause may be the event itself
    pool = causes + rng.sample(timeouts, min(2, len(timeouts)))
    edges = [Edge(rng.choice(pool), rng.choice(timeouts), rng.choice(["r1", "r2"]), rng.choice(["same_domain", "x"]))
             for _ in range(rng.randint(0, 60))]
    events = causes + timeouts + rng.sample(timeouts, min(3, len(timeouts)))  # some listed twice
    rng.shuffle(events)
    clocks = Clocks(skew_us={h: rng.choice([1, 2, 30, 200]) * S for h in hosts if rng.random() < 0.5},
                    estimated_us={h: rng.choice([0, 5, 90]) * S for h in hosts})
    return Scene(events, Topology(), default_catalog(), default_rules(), clocks), edges


def _ids(edges: list[Edge]) -> list[tuple]:
    return [(x.cause.event_id, x.effect.event_id, x.rule, x.relation) for x in edges]


def test_collective_edges_equal_the_pairwise_definition():
    rng = random.Random(7)
    added = 0
    for _ in range(400):
        scene, edges = _scene(rng)
        want = reference(scene, edges)
        assert _ids(collective_edges(scene, edges)) == _ids(want)
        added += len(want) - len(edges)
    assert added > 1000  # the scenes do add edges: the comparison is not of two empty tails
