"""The cluster scheduler's view of GPU faults (Slurm's GRES, prolog), through the whole pipeline: which node an
incident starts on and whether the scheduler's drain is a GPU's fault or its configuration's. Real lines, hosts
replaced; the catalog's own examples test each signature."""

from __future__ import annotations

from correlate.correlator import correlate
from ingest.decode import Decoded, Segment

T0 = 1_800_000_000_000_000


def run(pipeline, parts: list[tuple[str, str]]):
    """``parts``: (host, text) per segment, each read at ``T0`` (its lines that print no time take it)."""
    segs = [Segment(data=t.encode(), origin=f"t:{h}:{i}", stream=h, host=h, ref_ts=T0, ref_basis="file", ingest_ts=T0)
            for i, (h, t) in enumerate(parts)]
    b = pipeline.run(Decoded(segments=segs))
    return correlate(b.events, b.link_samples, b.topology, now_us=T0)


def raised(incs):
    return [i for i in incs if i["severity"] in ("warning", "error", "critical")]


def test_a_prolog_failure_is_the_node_s_not_the_login_node_s_that_printed_it(pipeline):
    """AMDResearch/hpcfund#69: salloc on the login node prints the node whose Prolog failed; slurmstepd's "Prolog hung
    on node" (nebius/nebius-solutions-library#265) likewise. The incident is that node's."""
    text = """salloc: Prolog failure on node k003-006
salloc: Job allocation 235454 has been revoked.
salloc: error: Job allocation 235454 has been revoked"""
    (inc,) = raised(run(pipeline, [("login01", text)]))
    assert (inc["initiator"]["host"], inc["severity"]) == ("k003-006", "error")
    (inc,) = raised(run(pipeline, [("login01", "slurmstepd: error: Prolog hung on node worker-7")]))
    assert inc["initiator"]["host"] == "worker-7"
