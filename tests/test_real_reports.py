"""Public bug reports checked end to end: the lines a thread posted (tests/data/real_reports/<slug>/, one file per
host as posted, source.md: the URL and what the thread concluded) through `diagnose`, held to the first fault and
the downstream reporters THE THREAD names, never to what firstfault printed when the case was added.

A case gives the initiator the thread found (host; GPU bus id, NIC or none; event kind; Xid), the downstream
reporters it names (host, kind), and the symptoms its reporter wrote in prose (``diagnose --symptom``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest

from api.diagnose import diagnose_paths
from correlate.correlator import Symptom
from schemas.events import SEVERITY_RANK
from schemas.settings import Settings

DATA = Path(__file__).parent / "data" / "real_reports"


@dataclass(frozen=True)
class Report:
    slug: str
    host: str | None  # the initiator's host; None: the thread names no single host (nor a device of one)
    kind: str | None  # the initiator event's kind (schemas.events kinds)
    device: str | None = None  # a GPU's PCI bus id, or a NIC's name
    xid: int | None = None
    category: str | None = None
    downstream: tuple[tuple[str, str], ...] = ()  # (host, kind) of each reporter the thread names
    symptoms: tuple[Symptom, ...] = ()
    quiet: tuple[int, ...] = field(default=())  # Xids the thread calls the applications' own: no incident >= warning


REPORTS = [
    # GPU 0000:a1:00 of node1 fell off the bus, recurred, node cordoned
    Report("akash-209-xid79-node1", "node1", "xid", "0000:a1:00.0", xid=79, category="gpu_off_bus"),
    # Xid 94 on GPU 0000:00:08 needs a node reboot; the Xid 43/31 of other GPUs days earlier are the programs' own
    Report("akash-244-xid94-node4", "node4", "xid", "0000:00:08.0", xid=94, quiet=(43, 31)),
    # the maintainer: a flapping IB link
    Report("nccl-905-ib-port-flap", "node01", "ib_port"),
    # the jobs on dgk713 died on an uncorrectable ECC error; the node was fixed
    Report("jade-194-ecc-dgk713", "dgk713", "ecc", category="ecc"),
    # every CI job SLURM placed on L40S node atl1-1-03-007-29-0 failed at cuCtxCreate on an uncorrectable ECC error;
    # the node was excluded and reported for repair (an NVHPC runtime's line, no host printed: the file's name)
    Report("mfc-1748-ecc-l40s-node", "atl1-1-03-007-29-0", "ecc", category="ecc"),
    # a second node of that chassis, the same fault (105 ECC hits in one CI run); excluded too
    Report("mfc-1750-ecc-l40s-node", "atl1-1-03-007-31-0", "ecc", category="ecc"),
    # both ends of a RoCE connection at error 12 (gpu4 and gpu5, one mpirun capture): the GID index NCCL used, fixed
    # by NCCL_IB_GID_INDEX=3; no GPU, no single host; gpu5's illegal memory access in the teardown is downstream
    Report("nccl-tests-24-ib-gid-index", None, None, category="ib_port", downstream=(("gpu5", "nccl_error"),)),
    # IB error 4 with GPUDirect RDMA only: PCIe ACS still on for bridges between the NIC and the GPU (SrcValid+)
    Report("nccl-523-ib-error4-acs", "node01", "nccl_error", category="pcie_p2p"),
    # the "First error" a two-node alltoall crash printed: an async fatal event on a queue pair of mlx5_1 port 1 of
    # node-0; no GPU named (NIC mlx5_1 is the device)
    Report("nccl-1919-ib-qp-fatal-node0", "node-0", "ib_port", "mlx5_1"),
]

#: the thread's first fault is a configuration the job's hosts disagree on: no host, device or link is named
CONFIG = [
    # the two hosts of one job load different NCCL network plugins (HPC-X's on HGX-H100-04, none on HGX-H100-11) and
    # the job hangs: both hosts' lines are in the job's one log (mpirun's output, nccl_04_11.log), which ties them
    Report("nccl-1634-net-plugin-mismatch", None, "nccl_transport", category="nccl_software",
           downstream=(("hgx-h100-04", "nccl_timeout"), ("hgx-h100-11", "nccl_timeout")),
           symptoms=(Symptom("hgx-h100-04", "hang"), Symptom("hgx-h100-11", "hang"))),
]


def _diagnose(report: Report, pipeline) -> tuple[list[dict], list[dict]]:
    _, batch, incidents = diagnose_paths([DATA / report.slug], Settings(), symptoms=list(report.symptoms),
                                         pipeline=pipeline)
    return batch.events.to_pylist(), incidents


def _serious(inc: dict) -> bool:
    return SEVERITY_RANK[inc["severity"]] >= SEVERITY_RANK["warning"]


def _check(report: Report, pipeline) -> None:
    events, incidents = _diagnose(report, pipeline)
    loud = [i for i in incidents if _serious(i)]
    assert loud, f"{report.slug}: no incident of severity warning or above"
    first = loud[0] if len(loud) == 1 else None
    named = [i for i in loud if i["initiator"]["host"] == report.host and i["initiator"]["kind"] == report.kind
             and (report.device is None or i["initiator"]["device"] == report.device)
             and (report.xid is None or i["initiator"]["xid"] == report.xid)]
    assert named, (f"{report.slug}: no incident names the thread's initiator {report.host} {report.kind} "
                   f"{report.device} Xid {report.xid}: {[i['initiator'] for i in loud]}")
    inc = named[0]
    assert first is None or first is inc, f"{report.slug}: another incident leads: {[i['id'] for i in loud]}"
    if report.category:
        assert inc["category"] == report.category
    assert {(d["host"], d["kind"]) for d in inc["downstream"]} >= set(report.downstream)
    for xid in report.quiet:
        own = [i for i in incidents if i["initiator"]["xid"] == xid]
        assert own and not any(_serious(i) for i in own), f"{report.slug}: Xid {xid} raised {own}"
    if report.host is not None:
        assert sum(e["host"] == report.host for e in events) >= 1
    else:  # the thread names no single host: no GPU or other device of one either
        assert inc["initiator"]["device_type"] is None, inc["initiator"]


@pytest.mark.parametrize("report", REPORTS, ids=[r.slug for r in REPORTS])
def test_thread_first_fault(report, pipeline):
    _check(report, pipeline)


@pytest.mark.parametrize("report", CONFIG, ids=[r.slug for r in CONFIG])
def test_thread_config_mismatch(report, pipeline):
    events, incidents = _diagnose(report, pipeline)
    plugins = {(e["host"], e["signature"]) for e in events}
    assert plugins == {("hgx-h100-04", "nccl.net_plugin.external"), ("hgx-h100-11", "nccl.net_plugin.internal")}
    loud = [i for i in incidents if _serious(i)]
    # the thread's answer: one incident over both hosts, a configuration cause, no GPU or link named, the hangs of
    # both hosts its downstream
    assert len(loud) == 1, [i["initiator"] for i in loud]
    inc = loud[0]
    assert (inc["category"], inc["severity"], inc["pattern"]) == (report.category, "error", "config.job_mismatch")
    assert inc["initiator"]["device_type"] is None and inc["initiator"]["host"] is None
    assert inc["initiator"]["kind"] == report.kind
    assert inc["initiator"]["candidates"] == ["hgx-h100-04", "hgx-h100-11"]
    assert {(d["host"], d["kind"]) for d in inc["downstream"]} == set(report.downstream)
    assert "hgx-h100-04: /opt/hpcx/nccl_rdma_sharp_plugin/lib/libnccl-net.so; hgx-h100-11: internal" in inc[
        "explanation"]
