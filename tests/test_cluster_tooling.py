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


# SlinkyProject/slurm-operator#111: slurmd ignores the eight H100 it detected (their type matches no configured Gres);
# the drain that follows is `scontrol show node`'s reason (awslabs/awsome-distributed-ai#195's form, count of this node)
IGNORED = """2026-01-12T16:24:01.310Z | [2026-01-12T16:24:01] warning: The following autodetected GPUs are being ignored:
2026-01-12T16:24:01.310Z | [2026-01-12T16:24:01]     GRES[gpu] Type:nvidia_h100_80gb_hbm3 Count:1 Cores(224):0-55  Links:(null) Flags:HAS_FILE,HAS_TYPE,ENV_NVML File:/dev/nvidia0 UniqueId:GPU-6944fa2c-3ae5-e9f0-b06e-797869cb0282"""
DRAIN = ("2026-01-12T16:24:05.000Z | [2026-01-12T16:24:05]    Reason=gres/gpu count reported lower than configured "
         "(0 < 8) [slurm@2026-01-12T16:24:05]")
# illinois-scicomp/machine-shop-maintenance#80's Xid 79, dated the same minute
XID79 = ("2026-01-12T16:23:50.000Z | [Mon Jan 12 16:23:50 2026] NVRM: Xid (PCI:0000:02:00): 79, pid='<unknown>', "
         "name=<unknown>, GPU has fallen off the bus.")


def test_gpus_slurmd_ignored_explain_the_drain_that_follows(pipeline):
    """slurmd ignoring the GPUs it found (a configured type that matches none) and slurmctld draining the node for
    too few GPUs: one incident of the configuration (category other, "make the configured types agree"); the drain's
    own reading, "a GPU missing from nvidia-smi -L is lost", named it (category gpu_failure) before."""
    (inc,) = raised(run(pipeline, [("worker0", IGNORED + "\n" + DRAIN)]))
    assert (inc["category"], inc["initiator"]["fault"]) == ("other", "slurm.gres_gpus_ignored")
    assert "The GPUs are not at fault" in inc["next_action"]
    assert "slurm.gres_config_explains_gpu_count_drain" in {x["rule"] for x in inc["evidence"]}


def test_a_drain_alone_or_after_a_lost_gpu_is_still_read_as_a_gpu_missing(pipeline):
    (inc,) = raised(run(pipeline, [("worker0", DRAIN)]))
    assert (inc["category"], inc["initiator"]["fault"]) == ("gpu_failure", "slurm.gpu_count_drain")
    (inc,) = raised(run(pipeline, [("worker0", XID79 + "\n" + DRAIN)]))
    assert (inc["category"], inc["initiator"]["xid"]) == ("gpu_off_bus", 79)
    assert "slurm.gres_config_explains_gpu_count_drain" not in {x["rule"] for x in inc["evidence"]}


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
