"""Whole-incident patterns on small hand-made inputs in real line formats (correlate/patterns.py)."""

from __future__ import annotations

import os
import re
from datetime import datetime, timedelta, timezone

import orjson
import pytest

from correlate.correlator import correlate
from ingest.decode import Decoded, Segment

T0 = 1_800_000_000_000_000


def run(pipeline, text: str, host="node07"):
    seg = Segment(data=text.encode(), origin=f"t:{host}", stream=host, host=host, ref_ts=T0, ref_basis="kafka",
                  ingest_ts=T0)
    b = pipeline.run(Decoded(segments=[seg]))
    return correlate(b.events, b.link_samples, b.topology, now_us=T0)


NVLINK_R = """GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-00000000-0000-0000-0000-000000000007)
         Link 0: Remote Device 00000000:07:00.0: Link 46
         Link 1: Remote Device 00000000:06:00.0: Link 2
GPU 1: NVIDIA H100 80GB HBM3 (UUID: GPU-00000000-0000-0000-0000-000000000008)
         Link 0: Remote Device 00000000:07:00.0: Link 12
         Link 1: Remote Device 00000000:05:00.0: Link 3
0, 00000000:18:00.0
1, 00000000:2a:00.0"""
XID74 = ("[Mon Nov 30 03:12:0{s} 2026] NVRM: Xid (PCI:0000:{bus}:00): 74, pid='<unknown>', name=<unknown>, "
         "NVLink: fatal error detected on link {link}(0x0, 0x0, 0x10000, 0x0, 0x0, 0x0, 0x0)")


def test_gpus_whose_failing_links_share_one_switch_blame_the_switch(pipeline):
    text = NVLINK_R + "\n" + XID74.format(s=1, bus="18", link=0) + "\n" + XID74.format(s=2, bus="2a", link=0)
    (inc,) = run(pipeline, text)
    assert inc["pattern"] == "nvswitch.common_end" and inc["category"] == "nvswitch_fault"
    assert (inc["initiator"]["device_type"], inc["initiator"]["device"]) == ("nvswitch", "0000:07:00.0")
    assert sorted(d["device"] for d in inc["downstream"]) == ["0000:18:00.0", "0000:2a:00.0"]
    assert {d["relation"] for d in inc["downstream"]} == {"same_nvswitch"}


def test_links_to_different_switches_are_not_a_switch_fault(pipeline):
    text = NVLINK_R + "\n" + XID74.format(s=1, bus="18", link=0) + "\n" + XID74.format(s=2, bus="2a", link=1)
    incs = run(pipeline, text)
    assert all(i["pattern"] != "nvswitch.common_end" for i in incs)


def test_surprise_down_explains_the_device_below_that_has_no_aer_driver(pipeline):
    """The root port reports Surprise Down; the GPU below it says it has no AER-aware driver (the NVIDIA
    driver has no AER callbacks) and then falls off the bus: the port is the initiator, the GPU downstream."""
    text = "\n".join([
        "[Mon Nov 30 03:12:01 2026] pcieport 0000:c7:00.0: AER: Uncorrected (Fatal) error received: 0000:c7:00.0",
        "[Mon Nov 30 03:12:01 2026] pcieport 0000:c7:00.0: PCIe Bus Error: severity=Uncorrected (Fatal), "
        "type=Transaction Layer, (Receiver ID)",
        "[Mon Nov 30 03:12:01 2026] pcieport 0000:c7:00.0:    [ 5] SDES                   (First)",
        "[Mon Nov 30 03:12:01 2026] nvidia 0000:c8:00.0: device has no AER-aware driver",
        "[Mon Nov 30 03:12:01 2026] NVRM: Xid (PCI:0000:c8:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen "
        "off the bus.",
    ])
    (inc,) = run(pipeline, text)
    assert (inc["initiator"]["device_type"], inc["initiator"]["device"]) == ("pcie_port", "0000:c7:00.0")
    assert [(d["device_type"], d["device"]) for d in inc["downstream"]] == [("gpu", "0000:c8:00.0")]


def test_a_surprise_down_with_no_gpu_below_is_a_pcie_incident_not_a_gpu_off_the_bus(pipeline):
    """A PCIe switch's downstream port reports Surprise Down and the endpoint below it (no GPU driver's line, no Xid)
    cannot recover (access.redhat.com/solutions/7128107): the port initiates a ``pcie`` incident. It was
    ``gpu_off_bus``, naming a GPU no line showed; with a GPU's Xid 79 below the port it still is."""
    text = "\n".join([
        "kernel: pcieport 0000:00:1b.2: AER: Uncorrectable (Fatal) error message received from 0000:03:04.0",
        "kernel: pcieport 0000:03:04.0: PCIe Bus Error: severity=Uncorrectable (Fatal), type=Transaction Layer, "
        "(Receiver ID)",
        "kernel: pcieport 0000:03:04.0:   device [111d:8063] error status/mask=00000020/00000000",
        "kernel: pcieport 0000:03:04.0:    [ 5] SDES                   (First)",
        "kernel: pci 0000:05:00.0: AER: can't recover (no error_detected callback)",
        "kernel: pcieport 0000:03:04.0: AER: device recovery failed",
    ])
    (inc,) = run(pipeline, text)
    assert (inc["initiator"]["device_type"], inc["initiator"]["device"]) == ("pcie_port", "0000:03:04.0")
    assert (inc["category"], inc["severity"]) == ("pcie", "critical")
    (inc,) = run(pipeline, text + "\nkernel: NVRM: Xid (PCI:0000:05:00): 79, pid='<unknown>', name=<unknown>, GPU has "
                 "fallen off the bus.")
    assert inc["category"] == "gpu_off_bus"
    assert ("gpu", "0000:05:00.0") in [(d["device_type"], d["device"]) for d in inc["downstream"]]


@pytest.mark.parametrize("port_lines", [
    # pciehp's surprise removal (pop-os/pop#3363's syslog: Link Down, Card not present, Xid 79 in the same ms)
    ["pcieport 0000:c7:00.0: pciehp: Slot(0): Link Down", "pcieport 0000:c7:00.0: pciehp: Slot(0): Card not present"],
    # Downstream Port Containment, 5.x wording (lore 20220317225944.GA765564@bhelgaas) and 6.x wording (lore
    # 20251015024159.56414-1-xueshuai): the port disabled the link below it
    ["pcieport 0000:c7:00.0: DPC: containment event, status:0x1f01 source:0x0000",
     "pcieport 0000:c7:00.0: DPC: unmasked uncorrectable error detected"],
    ["pcieport 0000:c7:00.0: DPC: containment event, status:0x200d, ERR_FATAL received from 0000:c8:00.0"],
    # the reason line alone, of the port's own uncorrectable error (an error, not critical: lore
    # 20220317225944.GA765564@bhelgaas)
    ["pcieport 0000:c7:00.0: DPC: unmasked uncorrectable error detected"],
    # a link that did not come back (lore ec99725df78f…@web.de: a dGPU's bridge failing to resume)
    ["pcieport 0000:c7:00.0: broken device, retraining non-functional downstream link at 2.5GT/s",
     "pcieport 0000:c7:00.0: retraining failed"],
], ids=["pciehp", "dpc-5x", "dpc-6x", "dpc-reason", "retrain-failed"])
def test_the_port_that_lost_the_link_explains_the_gpu_s_fall_below_it(pipeline, port_lines):
    """The port above a GPU says its link is gone (pciehp's Link Down, a DPC containment) and the GPU's Xid 79
    follows: the port initiates, the GPU is downstream. Without an AER line beside them the GPU was the initiator and
    the port's Link Down a downstream party of it (a real-logs pass)."""
    text = "\n".join([f"[Mon Nov 30 03:12:01 2026] {line}" for line in port_lines] + [
        "[Mon Nov 30 03:12:01 2026] NVRM: Xid (PCI:0000:c8:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen "
        "off the bus.",
    ])
    (inc,) = run(pipeline, text)
    assert (inc["initiator"]["device_type"], inc["initiator"]["device"]) == ("pcie_port", "0000:c7:00.0")
    assert [(d["device_type"], d["device"]) for d in inc["downstream"]] == [("gpu", "0000:c8:00.0")]
    assert "pcie.fatal_aer_explains_gpu_fall" in {x["rule"] for x in inc["evidence"]}
    assert inc["severity"] == "critical"


def test_a_link_retrained_at_gen1_alone_does_not_take_the_gpu_s_fall(pipeline):
    """The forced 2.5GT/s retrain that brought the link back (openwrt/openwrt#22970: "ready 0ms after bus reset" next)
    is a warning of its own; a GPU's Xid 79 some seconds later is not explained by it."""
    text = "\n".join([
        "[Mon Nov 30 03:12:01 2026] pcieport 0000:c7:00.0: broken device, retraining non-functional downstream link "
        "at 2.5GT/s",
        "[Mon Nov 30 03:12:03 2026] NVRM: Xid (PCI:0000:c8:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen "
        "off the bus.",
    ])
    rules = {x["rule"] for i in run(pipeline, text) for x in i["evidence"]}
    assert "pcie.fatal_aer_explains_gpu_fall" not in rules


def test_a_slot_s_card_arriving_and_its_link_s_capacity_raise_nothing(pipeline):
    """pciehp's Card present / Link Up and the PCI core's "available PCIe bandwidth, limited by" line of a
    Thunderbolt enclosure plugged in (system76/firmware-open#66) are no fault: no warning-or-above incident."""
    text = "\n".join([
        "[ 5372.032458] pcieport 0000:02:01.0: pciehp: Slot(1): Card present",
        "[ 5372.032463] pcieport 0000:02:01.0: pciehp: Slot(1): Link Up",
        "[ 5372.373620] pci 0000:04:00.0: 8.000 Gb/s available PCIe bandwidth, limited by 2.5 GT/s x4 link at "
        "0000:02:01.0 (capable of 31.504 Gb/s with 8 GT/s x4 link)",
    ])
    assert [i["severity"] for i in run(pipeline, text) if i["severity"] in ("warning", "error", "critical")] == []


def test_the_proxy_thread_losing_exiting_ranks_raises_nothing(pipeline):
    """A DeepEP test that passed, its processes exiting without destroy_process_group (deepseek-ai/DeepEP#41):
    NCCL's proxy service thread then fails to accept, to read from and to Close the connections of local ranks that
    are gone. Read as nccl.proxy_service_failed and nccl.warn it was an error incident on a healthy run."""
    text = "\n".join([
        "0bc8f5b83646:2374:2994 [0] proxy.cc:1458 NCCL WARN [Service thread] Accept failed Resource temporarily "
        "unavailable",
        "0bc8f5b83646:2374:2994 [0] NCCL INFO misc/socket.cc:826 -> 3",
        "0bc8f5b83646:2374:2994 [0] proxy.cc:1497 NCCL WARN [Service thread] Could not receive type from localRank 0,"
        " res=3, closed=0",
        "0bc8f5b83646:2374:2994 [0] proxy.cc:1521 NCCL WARN [Proxy Service 0] Failed to execute operation Close from "
        "rank 0, retcode 3",
        "0bc8f5b83646:2378:3013 [4] NCCL INFO misc/socket.cc:47 -> 3",
        "0bc8f5b83646:2378:3013 [4] NCCL INFO misc/socket.cc:775 -> 3",
        "0bc8f5b83646:2378:2984 [4] proxy.cc:1458 NCCL WARN [Service thread] Accept failed Resource temporarily "
        "unavailable",
    ])
    seg = Segment(data=text.encode(), origin="t:deepep", stream="s", host="node07", ref_ts=T0, ref_basis="kafka",
                  ingest_ts=T0)
    b = pipeline.run(Decoded(segments=[seg]))
    assert [(r["signature"], r["severity"]) for r in b.events.to_pylist()] == [
        ("nccl.proxy_service_teardown", "info")] * 4
    assert [i for i in correlate(b.events, b.link_samples, b.topology, now_us=T0) if i["severity"] != "info"] == []


def test_rccl_s_iommu_notice_at_every_start_raises_nothing(pipeline):
    """RCCL's start-up notice of a kernel command line without iommu=pt (ROCm/rccl#1454's lines), false where
    passthrough is the kernel's default (ROCm/rocm-systems#7916): one per rank, and no incident above info."""
    text = "\n".join(
        f"UVOSLinux:{pid}:{pid} [{dev}] /usr/src/debug/rccl/build/hipify/src/init.cc:136 NCCL WARN Missing "
        '"iommu=pt" from kernel command line which can lead to system instablity or hang!'
        for pid, dev in ((19402, 0), (19403, 1)))
    assert [i["severity"] for i in run(pipeline, text) if i["severity"] != "info"] == []


def test_what_an_explained_fault_caused_on_its_own_device_is_explained_with_it(pipeline):
    """A root port's fatal AER error explains the GPU's fall below it, and the fall the NCCL "unspecified launch
    failure" of that GPU's own rank. The GPU stayed a candidate by that last line (an edge of its own subject) and was
    named the initiator, the port a downstream party "no rule ties" (a fresh user's trial): the port initiates."""
    text = "\n".join([
        "node07:4242:4300 [3] NCCL INFO comm 0x7fdf08000d00 rank 3 nranks 16 cudaDev 3 nvmlDev 3 busId c8000 "
        "commId 0x5ae77eb5ea4ec1ee - Init COMPLETE",
        "[Mon Nov 30 03:12:01 2026] pcieport 0000:c7:00.0: AER: Multiple Uncorrected (Fatal) error received: "
        "0000:c7:00.0",
        "[Mon Nov 30 03:12:01 2026] pcieport 0000:c7:00.0: PCIe Bus Error: severity=Uncorrected (Fatal), "
        "type=Transaction Layer, (Requester ID)",
        "[Mon Nov 30 03:12:01 2026] nvidia 0000:c8:00.0: AER: can't recover (no error_detected callback)",
        "[Mon Nov 30 03:12:03 2026] NVRM: Xid (PCI:0000:c8:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen "
        "off the bus.",
        "[2026-11-30 03:12:05] node07:4242:4300 [3] enqueue.cc:1556 NCCL WARN Cuda failure 'unspecified launch "
        "failure'",
    ])
    (inc,) = run(pipeline, text)
    assert (inc["initiator"]["device_type"], inc["initiator"]["device"], inc["category"]) == \
        ("pcie_port", "0000:c7:00.0", "pcie"), inc["explanation"]
    assert [(d["device_type"], d["device"], d["relation"]) for d in inc["downstream"]] == \
        [("gpu", "0000:c8:00.0", "same_host")]
    assert {x["rule"] for x in inc["evidence"]} >= {"pcie.fatal_aer_explains_gpu_fall", "device_fault.explains_nccl"}


def test_an_aer_line_under_the_gpu_driver_s_name_is_the_gpu_s_own(pipeline):
    """AER prints the lines of the device that sent the error under its driver's name: ``nvidia 0000:c8:00.0: AER:
    PCIe Bus Error`` is the GPU's, not a port 0000:c8:00.0's. Filed as a port beside the GPU of the same bus id, it
    made two candidates of one fault and "no single culprit" (a fresh user's trial): one GPU, its port beside it."""
    text = "\n".join([
        "[Mon Nov 30 03:12:01 2026] pcieport 0000:c7:00.0: AER: Uncorrected (Fatal) error received: 0000:c8:00.0",
        "[Mon Nov 30 03:12:01 2026] nvidia 0000:c8:00.0: AER: PCIe Bus Error: severity=Uncorrected (Fatal), "
        "type=Transaction Layer, (Receiver ID)",
        "[Mon Nov 30 03:12:03 2026] NVRM: Xid (PCI:0000:c8:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen "
        "off the bus.",
    ])
    (inc,) = run(pipeline, text)
    assert (inc["initiator"]["device_type"], inc["initiator"]["device"], inc["initiator"]["xid"]) == \
        ("gpu", "0000:c8:00.0", 79), inc["explanation"]
    assert [(d["device_type"], d["device"]) for d in inc["downstream"]] == [("pcie_port", "0000:c7:00.0")]
    assert "PCIe AER errors came before it on 0000:c7:00.0" in inc["explanation"]


def test_a_port_s_aer_line_naming_another_source_relays_that_device_s_error(pipeline):
    """``AER: … error received: <source>`` on a port is the error message the source sent; the source logs its own
    lines after it. The port's line was a candidate of its own beside the GPU whose error it relayed ("no single
    culprit", 0.3: a break-it pass): the GPU initiates, the port is downstream by ``names_device``. A port that
    names itself as the source keeps its own error (the fall below it is its downstream)."""
    text = "\n".join([
        "[Mon Nov 30 03:12:01 2026] pcieport 0000:c7:00.0: AER: Uncorrected (Non-Fatal) error received: 0000:c8:00.0",
        "[Mon Nov 30 03:12:01 2026] nvidia 0000:c8:00.0: AER: PCIe Bus Error: severity=Uncorrected (Non-Fatal), "
        "type=Transaction Layer, (Requester ID)",
        "[Mon Nov 30 03:12:01 2026] nvidia 0000:c8:00.0: AER:    [14] CmpltTO                (First)",
        "[Mon Nov 30 03:12:01 2026] nvidia 0000:c8:00.0: AER: can't recover (no error_detected callback)",
    ])
    (inc,) = run(pipeline, text)
    assert (inc["initiator"]["device_type"], inc["initiator"]["device"]) == ("gpu", "0000:c8:00.0"), inc["explanation"]
    assert [(d["device_type"], d["device"], d["relation"]) for d in inc["downstream"]] == [
        ("pcie_port", "0000:c7:00.0", "names_device")]
    assert {x["rule"] for x in inc["evidence"]} == {"pcie.source_error_explains_port_report"}
    own = text.replace("received: 0000:c8:00.0", "received: 0000:c7:00.0")
    (inc,) = run(pipeline, own)
    assert "pcie.source_error_explains_port_report" not in {x["rule"] for x in inc["evidence"]}
    assert "names_device" not in {d["relation"] for d in inc["downstream"]}


def test_explained_ids_follow_edges_of_one_subject_from_an_explained_event_only():
    """:func:`correlate.attribute.explained_ids`: an edge from another subject explains its effect; an edge within a
    subject explains its effect only when its cause is explained, to any depth, whatever the edges' order."""
    from types import SimpleNamespace as NS

    from correlate.attribute import explained_ids

    ev = {i: NS(event_id=i) for i in "pabcdxy"}
    subject = {"p": "port", "a": "gpu", "b": "gpu", "c": "gpu", "d": "gpu", "x": "nic", "y": "nic"}
    edge = lambda c, e: NS(cause=ev[c], effect=ev[e])  # noqa: E731
    # p → a (across), then a → b → c within the GPU, listed last first; x → y within the NIC, x explained by nothing
    edges = [edge("b", "c"), edge("a", "b"), edge("p", "a"), edge("x", "y"), edge("d", "a")]
    assert explained_ids(edges, subject) == {"a", "b", "c"}
    assert explained_ids([x for x in edges if x.cause.event_id != "p"], subject) == set()
    assert explained_ids([edge("y", "x"), edge("x", "y")], subject) == set()  # a cycle of one subject explains nothing


def test_a_party_no_rule_reached_names_the_relation_that_holds_or_none(tmp_path):
    """Ranks of a job without init lines time out after node07's Xid 79; the other hosts' NET/IB errors name node07's
    address. The timeouts joined through those errors and their collective, no rule ties them to the Xid, and they
    were said to be in its window "(same_domain)" with no fleet config and no domain (a fresh user's trial). A party
    no rule reached names a relation that holds between it and the initiator, or none."""
    from api.diagnose import diagnose_paths
    from schemas.settings import Settings

    (tmp_path / "node07.dmesg.log").write_text(
        "[Sun Nov 29 03:10:00 2026] NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen "
        "off the bus.\n")
    wd = ("[rank{r}]:[E1129 03:20:00.40827125{r} ProcessGroupNCCL.cpp:616] [Rank {r}] Watchdog caught collective "
          "operation timeout: WorkNCCL(SeqNum=1580, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran "
          "for 600060 milliseconds before timing out.")
    for n in (7, 8, 9):
        lines = [f"[2026-11-29 02:00:00] node0{n}:40{n}:40{n} [0] NCCL INFO Bootstrap : Using eth0:10.0.0.{n}<0>"]
        if n != 7:
            lines.append(f"[2026-11-29 03:10:04] node0{n}:40{n}:42{n} [0] transport/net_ib.cc:1421 NCCL WARN NET/IB : "
                         "Got completion from peer 10.0.0.7<44206> with status=12 opcode=129 len=65536 vendor err 129 "
                         "(Recv)")
        lines.append(wd.format(r=n - 7))
        (tmp_path / f"node0{n}.nccl.log").write_text("\n".join(lines) + "\n")
    _, _, incidents = diagnose_paths([tmp_path], Settings())
    (inc,) = [i for i in incidents if i["initiator"].get("xid") == 79]
    assert "same_domain" not in inc["explanation"]
    rels = {(d["host"], d["kind"]): d["relation"] for d in inc["downstream"]}
    # node08's rank waited on the collective node07's stopped (its timeout names it: attribute.collective_edges)
    assert rels[("node08", "nccl_timeout")] == "same_collective" and rels[("node08", "nccl_error")] == "peer_host", rels


def test_an_unstamped_peer_report_joins_the_fault_of_the_peer_it_names(tmp_path):
    """NCCL before 2.26 stamps no line: a rank's "NET/IB : Got completion from peer 10.0.0.7" is dated by its log's
    mtime, 15 min after node07's GPU fell off the bus. It was an incident of its own that named the reporting
    ranks' GPUs as suspects (a fresh user's trial); the Bootstrap lines say 10.0.0.7 is node07, whose Xid 79 it
    reports (rule peer_fault.explains_peer_reports, the report timed only by an upper bound an hour deep)."""
    import os

    from api.diagnose import diagnose_paths
    from schemas.settings import Settings

    t_xid = int(datetime(2026, 11, 29, 3, 10, tzinfo=timezone.utc).timestamp())
    (tmp_path / "node07.dmesg.log").write_text(
        "[Sun Nov 29 03:10:00 2026] NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, GPU has "
        "fallen off the bus.\n")
    (tmp_path / "node07.nccl.log").write_text("node07:4007:4007 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.7<0>\n")
    for n in (8, 9):
        (tmp_path / f"node0{n}.nccl.log").write_text(
            f"node0{n}:40{n}:40{n} [0] NCCL INFO Bootstrap : Using eth0:10.0.0.{n}<0>\n"
            f"node0{n}:40{n}:41{n} [0] transport/net_ib.cc:1421 NCCL WARN NET/IB : Got completion from peer "
            f"10.0.0.7<44206> with status=12 opcode=129 len=65536 vendor err 129 (Recv)\n")
    for f in tmp_path.iterdir():
        os.utime(f, (t_xid + 900, t_xid + 900))
    _, _, incidents = diagnose_paths([tmp_path], Settings())
    (inc,) = incidents
    assert (inc["initiator"]["host"], inc["initiator"]["xid"]) == ("node07", 79)
    assert sorted((d["host"], d["relation"]) for d in inc["downstream"]) == [("node08", "peer_host"),
                                                                              ("node09", "peer_host")]
    # an hour and more before the log's time is another failure: the report stays apart
    for f in tmp_path.iterdir():
        if f.name != "node07.dmesg.log":
            os.utime(f, (t_xid + 3600 + 900, t_xid + 3600 + 900))
    _, _, incidents = diagnose_paths([tmp_path], Settings())
    assert [(i["initiator"]["host"], i["downstream"]) for i in incidents if i["initiator"]["xid"] == 79] == [
        ("node07", [])]


def test_silent_rank_is_found_in_its_own_communicator_among_many(tmp_path):
    """A fleet has many jobs: the communicators of every job are known at once. Each hang names the rank
    missing from its own communicator (the one whose rank -> host map fits its timeouts), not from another."""
    import os

    import yaml

    from api.diagnose import diagnose_paths
    from benchmarks.simulate import generate
    from schemas.settings import Settings

    fleet = generate(3, seed=11, kinds=["nccl_hang"])
    for s in fleet.scenarios:
        d = tmp_path / f"s{s.sid}"
        d.mkdir()
        for f in s.files:
            (d / f.name).write_bytes(f.data)
            os.utime(d / f.name, ns=(f.mtime * 1000, f.mtime * 1000))
    cfg = tmp_path / "fleet.yaml"
    cfg.write_text(yaml.safe_dump(fleet.fleet_config()))
    _, _, incidents = diagnose_paths([tmp_path / f"s{s.sid}" for s in fleet.scenarios], Settings(fleet_config=cfg))
    named = {(i["initiator"]["host"], i["initiator"]["rank"]) for i in incidents if i["pattern"] == "comm.silent_rank"}
    assert named == {(s.truth.host, s.truth.rank) for s in fleet.scenarios}


def test_no_single_culprit_says_which_came_first_when_the_times_do(pipeline):
    """An Xid 74 on one GPU, an SXid 20034 of an NVSwitch 40 s later, in one kernel log: no rule ties the two
    (which switch port the GPU's link reaches is not known without the topology), so there is no single culprit —
    but it read "The evidence does not say which came first" (a fresh user's trial). The order is said with its
    gap; faults in the same second stay unordered."""
    x74 = ("[Sun Nov 29 03:10:{s} 2026] NVRM: Xid (PCI:0000:18:00): 74, pid=5123, name=python, NVLink: fatal error "
           "detected on link 3(0x0, 0x0, 0x10000, 0x0, 0x0, 0x0, 0x0)")
    sxid = "[Sun Nov 29 03:10:40 2026] nvidia-nvswitch1: SXid (PCI:0000:06:00.0): 20034, Fatal, Link 48 LTSSM Fault Up"
    (inc,) = run(pipeline, x74.format(s="00") + "\n" + sxid, host="node21")
    assert inc["initiator"]["candidates"] == ["gpu 0000:18:00.0 on node21", "nvswitch 0000:06:00.0 on node21"]
    assert inc["explanation"].endswith("gpu 0000:18:00.0 on node21 came first, 40 s before nvswitch 0000:06:00.0 on "
                                       "node21; no rule here says that one caused the other.")
    other = x74.format(s="00").replace("0000:18:00", "0000:2a:00")  # another GPU's Xid 74 in the same second
    (inc,) = run(pipeline, x74.format(s="00") + "\n" + other, host="node21")
    assert inc["explanation"].endswith("The evidence does not say which came first."), inc["explanation"]


def test_when_every_rank_timed_out_none_is_silent_and_the_membership_is_not_asked_for(pipeline):
    """All 4 ranks of a communicator whose init lines are all here time out on one SeqNum: it said "Without the
    communicator's membership the silent rank cannot be named" and asked for the init lines it had (a fresh user's
    trial). No rank was silent: the incident says so and asks for the hosts' kernel logs."""
    init = "node0{h}:10{r}:10{r} [{r}] NCCL INFO comm 0x{r} rank {r} nranks 4 cudaDev {r} busId {r}8000 commId 0xabc - Init COMPLETE"
    wd = ("[rank{r}]:[E1130 03:22:01.51843200{r} ProcessGroupNCCL.cpp:616] [Rank {r}] Watchdog caught collective "
          "operation timeout: WorkNCCL(SeqNum=1580, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran "
          "for 600010 milliseconds before timing out.")
    text = "\n".join([init.format(h=1, r=r) for r in range(4)] + [wd.format(r=r) for r in range(4)])
    (inc,) = run(pipeline, text, host="node01")
    assert inc["pattern"] == "comm.silent_rank" and "membership" not in inc["explanation"]
    assert "All 4 ranks of the communicator timed out: no rank was silent" in inc["explanation"]
    assert inc["missing"][0] == "the kernel logs of every host of the job around the implied start of the timeout"
    assert inc["next_action"].startswith("Every rank timed out:")


def test_a_rank_that_timed_out_is_one_downstream_party_with_all_its_lines(pipeline):
    """Rank 3 of 4 is silent; each other rank logs its watchdog's timeout and, after it, the exception the watchdog
    raised (PyTorch 2.x, ProcessGroupNCCL.cpp). Each rank was listed twice downstream, a party per line (a scenario
    trial): one party per rank, holding both lines."""
    init = ("node01:10{r}:10{r} [{r}] NCCL INFO comm 0x{r} rank {r} nranks 4 cudaDev {r} busId {r}8000 commId 0xabc - "
            "Init COMPLETE")
    wd = ("[rank{r}]:[E1130 03:22:01.51843200{r} ProcessGroupNCCL.cpp:632] [Rank {r}] Watchdog caught collective "
          "operation timeout: WorkNCCL(SeqNum=1580, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran "
          "for 600010 milliseconds before timing out.")
    ex = ("[rank{r}]:[E1130 03:22:01.52600007{r} ProcessGroupNCCL.cpp:1785] [PG ID 0 PG GUID 0(default_pg) Rank {r}] "
          "Exception (either an error or timeout) detected by watchdog at work: 1580, last enqueued NCCL work: 1581, "
          "last completed NCCL work: 1579.")
    text = "\n".join([init.format(r=r) for r in range(4)] + [x.format(r=r) for r in range(3) for x in (wd, ex)])
    (inc,) = run(pipeline, text, host="node01")
    assert inc["pattern"] == "comm.silent_rank" and inc["initiator"]["rank"] == 3, inc["explanation"]
    assert [(d["rank"], len(d["events"])) for d in inc["downstream"]] == [(0, 2), (1, 2), (2, 2)]


def test_an_operators_report_of_a_silent_host_joins_its_jobs_hang(tmp_path):
    """node07 logs nothing; the other hosts' ranks time out and the init lines place node07's two ranks: the hang
    names node07. With ``--symptom failure@node07`` the report was an incident of its own, "the logs hold no fault of
    this host … nothing in them names a cause", beside the hang blaming node07, dated by node07's init line an hour
    earlier (a fresh user's trial). The report joins the hang, is said there, and dates nothing."""
    from api.diagnose import diagnose_paths
    from correlate.correlator import Symptom
    from schemas.settings import Settings

    for n in (7, 8, 9, 10):
        lines = [f"[2026-11-29 02:00:0{r}] node{n:02d}:40{n}{r}:41{n}{r} [{r}] NCCL INFO comm 0x5{n}{r} rank "
                 f"{2 * (n - 7) + r} nranks 8 cudaDev {r} busId {r + 3}b000 commId 0x5ae77eb5ea4ec1ee - Init COMPLETE"
                 for r in (0, 1)]
        if n != 7:
            lines += [f"[rank{2 * (n - 7) + r}]:[E1129 03:20:00.40827125{r} ProcessGroupNCCL.cpp:616] [Rank "
                      f"{2 * (n - 7) + r}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1580, "
                      "OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600060 milliseconds "
                      "before timing out." for r in (0, 1)]
        (tmp_path / f"node{n:02d}.nccl.log").write_text("\n".join(lines) + "\n")
    _, _, alone = diagnose_paths([tmp_path], Settings())
    _, _, told = diagnose_paths([tmp_path], Settings(), symptoms=[Symptom(host="node07", kind="failure", gpus=[])])
    (a,), (t,) = alone, told
    assert (t["pattern"], t["initiator"]["host"]) == (a["pattern"], a["initiator"]["host"]) == ("comm.silent_rank",
                                                                                               "node07")
    assert t["explanation"] == a["explanation"] + " The operator reported a failure of node07 too."
    assert (t["start"], t["end"]) == (a["start"], a["end"]) == ("2026-11-29T03:10:00.348271Z",
                                                               "2026-11-29T03:20:00.408271Z")


def test_a_rank_that_timed_out_on_an_earlier_collective_is_behind_not_silent(pipeline):
    """Ranks 0, 1, 3 time out on SeqNum 1580, rank 2 on SeqNum 1578: it is the rank the others waited for, but the
    explanation said "rank 2 did not … the rank that never reported" beside its own timeout line (a fresh user's
    trial; a break-it pass with 1,024 ranks). It says rank 2 was behind, its line is the initiator's evidence, and
    the checks name its host."""
    init = "node0{h}:10{r}:10{r} [{r}] NCCL INFO comm 0x{r} rank {r} nranks 4 cudaDev {r} busId {r}8000 commId 0xabc - Init COMPLETE"
    wd = ("[rank{r}]:[E1130 03:22:01.51843200{r} ProcessGroupNCCL.cpp:616] [Rank {r}] Watchdog caught collective "
          "operation timeout: WorkNCCL(SeqNum={seq}, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran "
          "for 600010 milliseconds before timing out.")
    text = "\n".join([init.format(h=1, r=r) for r in range(4)]
                      + [wd.format(r=r, seq=1578 if r == 2 else 1580) for r in range(4)])
    (inc,) = run(pipeline, text, host="node01")
    assert (inc["pattern"], inc["initiator"]["rank"], inc["initiator"]["host"]) == ("comm.silent_rank", 2, "node01")
    assert inc["explanation"] == ("3 of 4 ranks timed out on SeqNum 1580; rank 2 timed out on SeqNum 1578, behind "
                                  "them: the others were waiting for it to reach 1580.")
    assert len(inc["initiator"]["events"]) == 1 and sorted(d["rank"] for d in inc["downstream"]) == [0, 1, 3]
    assert inc["verify"] == ["nvidia-smi (on node01)", "dmesg -T | tail -100 (on node01)"]


def test_a_silent_rank_no_line_places_says_its_host_is_what_is_missing(pipeline):
    """Rank 0's init line and its watchdog timeout in a job's log, rank 1 silent and never placed: the table said
    "None nccl_timeout" and ``missing`` was empty (a break-it pass). The incident names rank 1, says its host is
    missing and how to find it; the report's one-liners say "host unknown"."""
    from api.pager import describe_initiator as page_initiator
    from api.render import describe_initiator

    text = "\n".join([
        "node01:100:100 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId 18000 commId 0xabc - Init COMPLETE",
        "[rank0]:[E1130 03:22:01.518432000 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught collective operation "
        "timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600010 "
        "milliseconds before timing out."])
    (inc,) = run(pipeline, text, host="node01")
    assert inc["pattern"] == "comm.silent_rank" and (inc["initiator"]["host"], inc["initiator"]["rank"]) == (None, 1)
    assert inc["missing"][0].startswith('the host of rank 1: its NCCL init line ("rank 1 nranks 2", NCCL_DEBUG=INFO)')
    assert inc["next_action"].startswith("Find the host of rank 1")
    # it logged no timeout: "silent_rank", not "nccl_timeout" (read as "rank 1 timed out": a fresh user's trial)
    assert (inc["initiator"]["kind"], inc["initiator"]["fault"]) == ("nccl_timeout", "silent_rank")
    assert describe_initiator(inc["initiator"]) == "rank 1 (host unknown) silent_rank"
    assert page_initiator(inc) == "rank 1 on unknown host (silent_rank)"
    assert describe_initiator({**inc["initiator"], "host": "node02"}) == "node02 rank 1 silent_rank"


def test_a_symptom_with_no_fault_logged_is_said_to_have_no_cause_in_the_logs(pipeline):
    """An operator's report and logs that hold no fault of its hosts (a silent hang logs nothing): the incident
    says nothing names a cause, lists the reported GPUs as candidates, and says what to collect; the report is
    not made its own first fault. With a fault logged, the fault is the initiator as before."""
    from correlate.correlator import Symptom

    quiet = "[Mon Nov 30 03:12:01 2026] usb 1-1: new high-speed USB device number 2 using xhci_hcd"
    seg = Segment(data=quiet.encode(), origin="t:node07", stream="node07", host="node07", ref_ts=T0,
                  ref_basis="kafka", ingest_ts=T0)
    b = pipeline.run(Decoded(segments=[seg]))
    hang = Symptom(host="node07", kind="hang", gpus=["0", "1"])
    (inc,) = correlate(b.events, b.link_samples, b.topology, now_us=T0, symptoms=[hang])
    assert (inc["pattern"], inc["category"], inc["confidence"]) == ("operator.symptom_only", "nccl_hang", 0.2)
    assert inc["initiator"]["device_type"] is None and inc["initiator"]["host"] == "node07"
    assert inc["initiator"]["candidates"] == ["gpu 0 on node07", "gpu 1 on node07"]
    assert "nvidia-smi -q -i 0,1" in inc["next_action"] and "py-spy dump" in inc["next_action"]
    assert inc["explanation"].startswith("Reported by the operator: hang on node07 (GPU 0, 1).")
    two = [Symptom(host="node07", kind="failure"), Symptom(host="node08", kind="failure")]
    incs = correlate(b.events, b.link_samples, b.topology, now_us=T0, symptoms=two)
    assert sorted((i["pattern"], i["category"], i["initiator"]["candidates"]) for i in incs) == [
        ("operator.symptom_only", "other", ["node07"]), ("operator.symptom_only", "other", ["node08"])]
    assert all("py-spy" not in i["next_action"] for i in incs)
    # the same report over the same logs is the same incident; over another day's logs of the host, another (its
    # id was of the report alone: two hangs of one host would share a ticket, a fresh user's trial)
    assert correlate(b.events, b.link_samples, b.topology, now_us=T0, symptoms=[hang])[0]["id"] == inc["id"]
    ids = []
    for day in ("11-30", "12-01"):  # a rank's init line of the host (information): where the report is placed
        init = INIT.format(host="node07", pid=100, dev=0, rank=0, n=8, bus="18")
        line = f"2026-{day}T03:12:01.000000+00:00 node07 python[100]: {init}"
        seg2 = Segment(data=line.encode(), origin="t:node07", stream="node07", host="node07", ref_ts=T0,
                       ref_basis="kafka", ingest_ts=T0)
        b2 = pipeline.run(Decoded(segments=[seg2]))
        (other,) = correlate(b2.events, b2.link_samples, b2.topology, now_us=T0, symptoms=[hang])
        assert other["pattern"] == "operator.symptom_only"
        ids.append(other["id"])
    assert len(set(ids)) == 2
    # logs with no event at all, only a host's topology facts (`nvidia-smi topo -m`): the report is told apart by
    # the facts' origins (their file's name and content digest), so two hosts' different matrices under one name
    # are two incidents, and the same matrix again is the same one (both were one id: a fresh user's trial)
    ids = []
    for second in ("NODE", "SYS", "NODE"):
        topo = (f"        GPU0    GPU1    CPU Affinity\nGPU0     X      {second}    0-63\n"
                f"GPU1    {second}     X      0-63\n")
        seg3 = Segment(data=topo.encode(), origin=f"file:node01.log@{second.lower()}", stream="node01",
                       host="node01", ref_ts=T0, ref_basis="file_mtime", ingest_ts=T0)
        b3 = pipeline.run(Decoded(segments=[seg3]))
        assert b3.events.num_rows == 0 and b3.topology.num_rows > 0
        (other,) = correlate(b3.events, b3.link_samples, b3.topology, now_us=T0,
                             symptoms=[Symptom(host="node01", kind="hang")])
        ids.append(other["id"])
    assert ids[0] != ids[1] and ids[0] == ids[2]
    logged = quiet + "\n" + XID74.format(s=2, bus="18", link=0)
    seg = Segment(data=logged.encode(), origin="t:node07", stream="node07", host="node07", ref_ts=T0,
                  ref_basis="kafka", ingest_ts=T0)
    b = pipeline.run(Decoded(segments=[seg]))
    (inc,) = correlate(b.events, b.link_samples, b.topology, now_us=T0, symptoms=[hang])
    assert inc["pattern"] != "operator.symptom_only"
    assert (inc["initiator"]["device"], inc["initiator"]["xid"]) == ("0000:18:00.0", 74)


def _corpus(case: str) -> str:
    from pathlib import Path

    (path,) = (Path(__file__).parent / "corpus").glob(f"{case}*/input/node01.log")
    return path.read_text()


def _with(pipeline, text: str, symptoms: list, host="node01"):
    seg = Segment(data=text.encode(), origin=f"t:{host}", stream=host, host=host, ref_ts=T0, ref_basis="kafka",
                  ingest_ts=T0)
    b = pipeline.run(Decoded(segments=[seg]))
    return correlate(b.events, b.link_samples, b.topology, now_us=T0, symptoms=symptoms)


def test_a_hang_with_other_device_faults_is_not_a_software_hang(pipeline):
    """The software-hang pattern (NVIDIA/nccl#2241) needs the NVLink privilege/non-fatal Xids to be the only
    device evidence. Corpus 002 also holds SXid 12028 on three NVSwitches and Xid 94 (a contained memory error
    that killed two processes): with a hang reported its verdict stays the one without it (five candidates),
    and corpus 029 (only Xid 145/137) is still a software hang."""
    from correlate.correlator import Symptom

    hang = [Symptom(host="node01", kind="hang", gpus=["0", "1"])]
    (plain,) = _with(pipeline, _corpus("002"), [])
    (hung,) = _with(pipeline, _corpus("002"), hang)
    assert hung["pattern"] != "software.nccl_hang_with_benign_nvlink" and hung["category"] == "nvswitch_fault"
    assert hung["initiator"]["candidates"] == plain["initiator"]["candidates"]
    assert len(plain["initiator"]["candidates"]) == 5
    assert hung["id"] == plain["id"]  # the report does not rename the incident
    # each candidate with the faults nothing explains: the GPUs' Xid 94, not their NVLink Xid 137 (the switches'
    # edges explain those), on one host reached over it (its evidence said same_host, its parties same_domain:
    # a second fresh-user trial); the Xid 137 said after it as explained (a GPU named by its Xid 94 alone hid what
    # ties it to the switches: a third)
    assert "gpu 0000:4c:00.0 on node01 (Xid 94; its Xid 137 another fault here explains)" in plain["explanation"]
    assert "gpu 0000:cb:00.0 on node01 (Xid 94);" in plain["explanation"]
    assert "nvswitch 0000:06:00.0 on node01 (SXid 12028)" in plain["explanation"]
    assert {d["relation"] for d in plain["downstream"]} == {"same_host"}
    (sw,) = _with(pipeline, _corpus("029"), hang)
    assert (sw["pattern"], sw["category"]) == ("software.nccl_hang_with_benign_nvlink", "nccl_software")


def test_a_symptom_does_not_turn_benign_lines_into_a_fault(pipeline):
    """Fabric Manager exiting with NV_WARN_NOTHING_TO_DO on a host without NVSwitch (corpus 013) is benign with
    or without a reported hang: the report's incident says the lines are not a fault and names no cause,
    instead of "Fabric Manager is not running: start it and reset the GPUs". An application's own Xids still
    explain a reported failure (corpus 032)."""
    from correlate.correlator import Symptom

    (plain,) = _with(pipeline, _corpus("013"), [])
    assert (plain["pattern"], plain["severity"]) == ("benign.fabric_manager_not_needed", "info")
    (hung,) = _with(pipeline, _corpus("013"), [Symptom(host="node01", kind="hang")])
    assert (hung["pattern"], hung["confidence"], hung["severity"]) == ("operator.symptom_only", 0.2, "error")
    assert "The lines logged are not a fault: Fabric Manager exited with NV_WARN_NOTHING_TO_DO" in hung["explanation"]
    assert "Fabric Manager is not running" not in hung["explanation"] + hung["next_action"]
    assert set(plain["initiator"]["events"]) <= {c["event"] for c in hung["context"]}
    # a benign verdict that names a cause of the report (the program's own Xid 13 and 31: it failed) stays
    failed = [Symptom(host="node01", kind="failure")]
    assert [i["pattern"] for i in _with(pipeline, _corpus("032"), failed)] == ["benign.application_xid"]


def test_fabric_manager_set_up_alone_says_the_symptom_the_operator_reported():
    """Corpus 030 logs only Fabric Manager's set-up (a B200 whose GPUs never became usable); its lines name their
    host, 10.0.0.1. With ``--symptom hang`` its incident said "A failure was reported" (a fresh user's trial): it
    says what the operator reported, hang or failure."""
    from pathlib import Path

    from api.diagnose import diagnose_paths
    from correlate.correlator import Symptom
    from schemas.settings import Settings

    (case,) = (Path(__file__).parent / "corpus").glob("030*/input")
    for kind in ("hang", "failure"):
        _, _, (inc,) = diagnose_paths([case], Settings(), symptoms=[Symptom(host="10.0.0.1", kind=kind, gpus=[])])
        assert (inc["pattern"], inc["category"], inc["confidence"]) == ("platform.host_context", "fabric_manager", 0.4)
        assert inc["explanation"].startswith(f"A {kind} was reported on 10.0.0.1 and the only platform activity "
                                             "logged is Fabric Manager's set-up (5 lines: ")


def test_a_reported_failure_follows_the_logged_fault_and_does_not_compete_with_it(pipeline):
    """An operator's ``failure`` on the host of a GPU that fell off the bus (corpus 004) is downstream of it:
    the initiator and the confidence are those without the report, and so is the incident's id; two reports
    are two symptom ids."""
    from correlate.correlator import Symptom

    (plain,) = _with(pipeline, _corpus("004"), [])
    (failed,) = _with(pipeline, _corpus("004"), [Symptom(host="node01", kind="failure")])
    assert (failed["initiator"]["device"], failed["confidence"], failed["id"]) == (
        plain["initiator"]["device"], plain["confidence"], plain["id"])
    assert [d["events"][0].startswith("symptom-node01-") for d in failed["downstream"]] == [True]
    (a,) = _with(pipeline, "x", [Symptom(host="node01", kind="hang", ts=T0)])
    (b,) = _with(pipeline, "x", [Symptom(host="node01", kind="hang", ts=T0 + 1_000_000)])
    assert a["id"] != b["id"]


def test_reports_on_two_hosts_of_one_domain_each_name_their_host(pipeline):
    """Two hosts of one NVLink domain, each reported and with nothing logged: the candidates are each host's
    reported GPUs, or the host where none was given; a reported hang makes it ``nccl_hang`` whatever comes first;
    each ``verify`` line says its host, and a GPU reported twice is named once."""
    from correlate.correlator import Settings, Symptom
    from schemas.fleet import HostConfig

    quiet = "[Mon Nov 30 03:12:01 2026] usb 1-1: new high-speed USB device number 2 using xhci_hcd"
    segs = [Segment(data=quiet.encode(), origin=f"t:{h}", stream=h, host=h, ref_ts=T0, ref_basis="kafka",
                    ingest_ts=T0) for h in ("node07", "node08")]
    b = pipeline.run(Decoded(segments=segs))
    settings = Settings(hosts={h: HostConfig(domain="rack3") for h in ("node07", "node08")})
    reports = [Symptom(host="node08", kind="failure"), Symptom(host="node07", kind="hang", gpus=["2", "2"])]
    (inc,) = correlate(b.events, b.link_samples, b.topology, now_us=T0, symptoms=reports, settings=settings)
    assert (inc["pattern"], inc["category"]) == ("operator.symptom_only", "nccl_hang")
    assert inc["initiator"]["candidates"] == ["gpu 2 on node07", "node08"]
    assert inc["verify"] == ["nvidia-smi -q -i 2 (on node07)", "nvidia-smi -q (on node08)", "dmesg -T | tail -200"]
    assert inc["explanation"].startswith("Reported by the operator: hang on node07 (GPU 2); failure on node08.")


def test_a_report_timed_far_from_the_hosts_fault_says_none_is_near_it(pipeline):
    """A report timed six hours after the host's Xid 79 joins no fault: the fault keeps its own incident, and
    the report's says that no fault lies within its correlation window (the host's logs do hold one)."""
    from correlate.correlator import Symptom

    fall = ("[Mon Nov 30 03:12:01 2026] NVRM: Xid (PCI:0000:06:00): 79, pid='<unknown>', name=<unknown>, GPU has "
            "fallen off the bus.")
    seg = Segment(data=fall.encode(), origin="t:node07", stream="node07", host="node07", ref_ts=T0,
                  ref_basis="kafka", ingest_ts=T0)
    b = pipeline.run(Decoded(segments=[seg]))
    late = b.events.column("ts").cast("int64")[0].as_py() + 6 * 3600 * 1_000_000
    incs = correlate(b.events, b.link_samples, b.topology, now_us=T0, symptoms=[Symptom("node07", "hang", ts=late)])
    assert sorted(i["pattern"] for i in incs) == ["operator.symptom_only", "roots"]
    (report,) = [i for i in incs if i["pattern"] == "operator.symptom_only"]
    assert "no fault of this host within the correlation window of the report" in report["explanation"]


def test_a_report_sharing_a_subject_with_logged_lines_never_names_them(pipeline):
    """The report joins the host-level subject of corpus 015's NCCL errors (downstream of the IB port): the
    port's confidence, the party's kind (the logged ``nccl_error``) and the id stay; an untimed report with no
    event to join keeps one id from run to run; GPUs come in index order, each once (``hang:10,2,1,01``)."""
    from api.cli import _parse_symptom
    from correlate.correlator import Symptom

    (plain,) = _with(pipeline, _corpus("015"), [])
    for kind in ("failure", "hang"):
        (inc,) = _with(pipeline, _corpus("015"), [Symptom(host="node01", kind=kind)])
        assert (inc["confidence"], inc["id"]) == (plain["confidence"], plain["id"])
        assert [d["kind"] for d in inc["downstream"]] == [d["kind"] for d in plain["downstream"]] == ["nccl_error"]
    ids = {correlate([], now_us=T0 + k, symptoms=[Symptom(host="node01", kind="hang")])[0]["id"] for k in (0, 7)}
    assert len(ids) == 1
    s = _parse_symptom("hang:10,2,1,01")
    assert (s.host, s.gpus) == ("", ["1", "2", "10"])  # no @HOST: the logs' one host (api.diagnose.place_symptoms)
    # a host or GPU list left empty is a mistake (a template's empty variable), not "the files' host" or "no
    # GPU": exit 2 naming it (both were taken silently: a fresh-user trial)
    import pytest
    import typer

    for bad, says in (("hang@:0", "names no host after @"), ("hang@ ", "names no host after @"),
                      ("hang:", "names no GPU after ':'"), ("failure@node01:,", "names no GPU after ':'"),
                      # an IPv6 host's bracket left open: said, not "GPUs are … not ':1'" (a break-it pass)
                      ("hang@[::1", "does not close it"),
                      # two hosts in one symptom: it was an incident of host "node01@node02" (a break-it pass)
                      ("hang@node01@node02:0", "names more than one host")):
        with pytest.raises(typer.BadParameter, match=says):
            _parse_symptom(bad)
    assert _parse_symptom("hang@ node01 :0").host == "node01"
    # a host ingest would refuse (bad_host) is named no event's: exit 2, not an incident of its own
    for bad in ("hang@node 07", "hang@node07/x", "hang@" + "n" * 256):
        with pytest.raises(typer.BadParameter, match="is no host name"):
            _parse_symptom(bad)
    # an IPv6 host in brackets, as in a URL, in the lake's one spelling (its colons were read as the GPU list: a
    # break-it pass)
    s = _parse_symptom("hang@[2001:DB8:0::1]:0,1")
    assert (s.host, s.gpus) == ("2001:db8::1", ["0", "1"])
    assert _parse_symptom("failure@[::FFFF:10.0.0.1]").host == "::ffff:10.0.0.1"
    with pytest.raises(typer.BadParameter, match="names no host after @"):
        _parse_symptom("hang@[]")


def test_p2p_hang_on_geforce_gpus_is_fixed_by_switching_p2p_off_elsewhere_by_acs(pipeline):
    """``platform.pcie_p2p_blocked``: GeForce cards can advertise PCIe P2P they do not support (corpus 018, four
    RTX 4090s: NVIDIA/nccl#631, #1127), so the next action leads with NCCL_P2P_DISABLE=1 and asks about ACS only
    if the model should do P2P; on other models (corpus 006, ACS on an AMD root complex) ACS and the IOMMU
    come first and the switch-off is the stopgap."""
    from correlate.correlator import Symptom

    hang = [Symptom(host="node01", kind="hang")]
    (geforce,) = _with(pipeline, _corpus("018"), hang)
    assert geforce["category"] == "pcie_p2p" and "GeForce RTX 4090" in geforce["explanation"]
    assert geforce["next_action"].startswith("These GeForce GPUs can advertise PCIe P2P they do not support")
    assert geforce["next_action"].index("NCCL_P2P_DISABLE=1") < geforce["next_action"].index("check ACS")
    (acs,) = _with(pipeline, _corpus("006"), hang)
    assert acs["category"] == "pcie_p2p" and "GeForce" not in acs["next_action"]
    assert acs["next_action"].startswith("Check ACS on the PCIe bridges")
    assert acs["next_action"].endswith("Until then NCCL_P2P_DISABLE=1 avoids the hang.")


def test_catalog_texts_are_filled_from_the_event_else_say_what_to_fill_in(catalog, pipeline):
    """``attribute.catalog_action`` and ``verify_commands`` over every signature: ``{device}`` is the bus id
    (``<bus id>`` when no line named one: a GPU index is no ``lspci -s`` argument), ``{gpu_index}`` the index
    (``<gpu>``), ``{module}`` and the other fields the line's own; no ``{field}`` is ever shown, no
    argument left empty. Corpus 014: the missing kernel module is named in the next action, not ``{module}``."""
    import re

    from correlate.attribute import catalog_action, verify_commands
    from correlate.model import Ev

    def ev(sig, device=None, gpu_index=None, details=None):
        return Ev(event_id="e", ts=T0, ts_basis="line", host="node01", source="nvml", kind="ecc", signature=sig,
                  severity="error", device_type="gpu", device=device, link=None, xid=None, sxid=None, peer=None,
                  rank=None, nranks=None, comm=None, message="", gpu_index=gpu_index, details=details or {})

    for entry in catalog.entries:
        for texts in ([catalog_action(catalog, ev(entry.sig.id))], verify_commands(catalog, ev(entry.sig.id))):
            for t in texts:
                assert not re.search(r"\{[a-z_]+\}", t), (entry.sig.id, t)
    cmd = "nvidia-smi -q -d ECC,ROW_REMAPPER -i "
    assert verify_commands(catalog, ev("nvml.smi_uncorrected_ecc", "0000:1a:00.0", 0)) == [cmd + "0000:1a:00.0"]
    assert verify_commands(catalog, ev("nvml.smi_uncorrected_ecc", None, 3)) == [cmd + "<bus id>"]
    assert "nvidia-smi -r -i 3)" in catalog_action(catalog, ev("nvml.nvlink_inactive", None, 3))
    assert "nvidia-smi -r -i <gpu>)" in catalog_action(catalog, ev("nvml.nvlink_inactive"))
    assert "(Reboot)" in catalog_action(catalog, ev("nvml.recovery_action", details={"recovery_action": "Reboot"}))
    # a line without the device, whose subject another line of its host named (attribute.resolve_subjects): the
    # subject's bus id, or its GPU index, fills in what the line lacks; a rank or a host-level subject does not
    ecc = ev("nvml.event.double_bit_ecc")
    assert verify_commands(catalog, ecc, ("node01", "gpu", "0000:1a:00.0")) == [
        "nvidia-smi -q -d ECC -i 0000:1a:00.0", "nvidia-smi -q -d ROW_REMAPPER -i 0000:1a:00.0"]
    assert "nvidia-smi -r -i 5)" in catalog_action(catalog, ev("nvml.nvlink_inactive"), ("node01", "gpu", "gpu5"))
    assert verify_commands(catalog, ecc, ("node01", "rank", "rank5")) == verify_commands(catalog, ecc) == [
        "nvidia-smi -q -d ECC -i <bus id>", "nvidia-smi -q -d ROW_REMAPPER -i <bus id>"]
    assert verify_commands(catalog, ev("nvml.smi_uncorrected_ecc", "0000:1b:00.0"), ("node01", "gpu", "0000:1a:00.0")
                           ) == [cmd + "0000:1b:00.0"]  # the line's own device first
    # corpus 036: the NVML event names no bus id; nvidia-smi's table row of the same GPU does
    (inc,) = [i for i in _with(pipeline, _corpus("036"), []) if i["category"] == "ecc"]
    assert inc["verify"] == ["nvidia-smi -q -d ECC -i 0000:1a:00.0", "nvidia-smi -q -d ROW_REMAPPER -i 0000:1a:00.0"]
    (fm,) = _with(pipeline, _corpus("014"), [])
    assert "modprobe ib_umad" in fm["next_action"] and "lsmod | grep ib_umad" in fm["verify"]


def test_a_catalog_text_is_filled_from_every_column_the_catalog_test_counts_as_given(catalog):
    """tests/test_catalog.py lets an action name any column its examples give (``op``, ``seq``, ``nranks``, …);
    ``attribute._fields`` filled only ``xid``, ``sxid``, ``link``, ``pid``, ``rank`` and ``peer``, so PyTorch's
    collective-mismatch action (aurekaresearch/OpenDDE#23, a real-logs pass) said "rank 1 running <op>". Each
    scalar column of an event is a field a text may name."""
    from correlate.attribute import _fields, catalog_action
    from correlate.model import Ev

    cols = dict(nranks=8, comm="0x5ae77eb5ea4ec1ee", seq=3104, op="ALLREDUCE", timeout_ms=600000,
                elapsed_ms=600060, process="python", cause_xid=79)
    e = Ev(event_id="e", ts=T0, ts_basis="line", host="node01", source="nccl", kind="other",
           signature="torch.collective_mismatch", severity="error", device_type=None, device=None, link=None,
           xid=None, sxid=None, peer=None, rank=1, message="", details={"other_rank": "0", "other_op": "BROADCAST"},
           **cols)
    assert {k: _fields(e).get(k) for k in cols} == {k: str(v) for k, v in cols.items()}
    assert "rank 1 running ALLREDUCE while rank 0 runs BROADCAST" in catalog_action(catalog, e)


def test_advice_pieces_are_joined_as_sentences(pipeline):
    """Catalog actions are often lowercase phrases without a full stop (Xid 13: "… -> run DCGM diag"); a next
    action that adds advice to one joins them as sentences (``attribute.sentences``), never glued together."""
    from correlate.attribute import sentences

    assert sentences("node healthy: debug the app -> run DCGM diag", "Do not drain the GPU.") == (
        "Node healthy: debug the app -> run DCGM diag. Do not drain the GPU.")
    assert sentences("  ", "check ACS", "") == "Check ACS."
    (inc,) = _with(pipeline, _corpus("032"), [])
    assert inc["pattern"] == "benign.application_xid"
    assert "run DCGM diag. Do not drain or RMA" in inc["next_action"]
    assert inc["next_action"][0].isupper()


def test_a_report_on_the_gpu_that_failed_stays_a_reporter_of_its_own(pipeline):
    """A hang reported on the GPU that fell off the bus corroborates its Xid 79: the report is a downstream
    party of its own (``host:reported hang`` in the table), not hidden in the initiator's events, and the
    confidence is the one of a report that names no GPU. Lines: the kernel's Xid 79 (formats.md)."""
    from api.render import _rows
    from correlate.correlator import Symptom

    text = ("[Mon Nov 30 03:12:05 2026] NVRM: Xid (PCI:0000:3d:00): 79, pid=0, name=python, GPU has fallen off the "
            "bus.")
    (host_level,) = _with(pipeline, text, [Symptom(host="node01", kind="hang")])
    for gpus in (["0000:3d:00.0"], ["0"], ["0000:3d:00.0", "1"]):
        incs = _with(pipeline, text, [Symptom(host="node01", kind="hang", gpus=gpus)])
        ((inc, _start, initiator, down),) = _rows(incs)
        assert (initiator, down) == ("node01 gpu 0000:3d:00.0 (Xid 79)", "node01:reported hang"), gpus
        assert not any(e.startswith("symptom-") for e in inc["initiator"]["events"])
        assert inc["confidence"] == host_level["confidence"], gpus


def test_the_table_names_an_operators_report_as_reported_not_as_a_logged_kind(pipeline):
    """In the incidents table a downstream party made only of an operator's report reads ``host:reported hang``
    (``reported failure``), not ``host:nccl_timeout``, which no line logged (a fresh-user trial)."""
    from api.render import _rows
    from correlate.correlator import Symptom

    text = ("[Mon Nov 30 03:12:05 2026] NVRM: Xid (PCI:0000:3d:00): 79, pid=0, name=python, GPU has fallen off the "
            "bus.")
    for kind, said in (("hang", "node01:reported hang"), ("failure", "node01:reported failure")):
        ((_inc, _start, initiator, down),) = _rows(_with(pipeline, text, [Symptom(host="node01", kind=kind)]))
        assert (initiator, down) == ("node01 gpu 0000:3d:00.0 (Xid 79)", said)


def test_an_untimed_symptom_is_placed_at_the_last_line_with_a_time_of_its_own(pipeline):
    """A symptom without a time on a host with no events is placed at the last event of any host: of those with
    a time of their own, not an NCCL INFO line (no stamp: shared/reference/formats.md) timed by its arrival,
    weeks after the lines around it (a fresh-user trial found the report placed at a file's mtime)."""
    from correlate.correlator import Symptom

    text = ("node01:4411:4411 [0] NCCL INFO comm 0x55d1f0 rank 0 nranks 2 cudaDev 0 busId 1b000 commId "
            "0x1234567890abcdef - Init COMPLETE\n"
            "[rank0]:[E1130 03:12:10.123456000 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught collective "
            "operation timeout: WorkNCCL(SeqNum=77, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) "
            "ran for 600030 milliseconds before timing out.")
    incs = _with(pipeline, text, [Symptom(host="node09", kind="hang")])
    (reported,) = [i for i in incs if i["initiator"]["host"] == "node09"]
    assert reported["start"] == "2026-11-30T03:12:10.123456Z", [(i["start"], i["initiator"]["host"]) for i in incs]


def test_an_untimed_report_at_a_lines_time_leaves_the_start_the_lines(pipeline):
    """An untimed symptom is placed at its host's last event; when that is the incident's first line too, the
    incident's ``start_basis`` is the line's (``line``), not ``operator``, so the table does not mark the start
    ``~`` (a break-it pass; in earlier code too)."""
    from correlate.correlator import Symptom

    text = ("[Mon Nov 30 03:12:01 2026] usb 1-1: new high-speed USB device number 2 using xhci_hcd\n"
            "[Mon Nov 30 03:12:05 2026] NVRM: Xid (PCI:0000:3d:00): 79, pid=0, name=python, GPU has fallen off the "
            "bus.")  # the Xid is the second line: the report, placed at its time, sorted before it
    (plain,) = _with(pipeline, text, [])
    (inc,) = _with(pipeline, text, [Symptom(host="node01", kind="hang")])
    assert (inc["start"], inc["start_basis"]) == (plain["start"], plain["start_basis"]) == (
        "2026-11-30T03:12:05.000000Z", "line")


def test_an_xid_whose_catalog_action_branches_on_fatal_takes_the_branch_its_line_says(pipeline):
    """Xid 144 – 148's catalog action gives both branches ("Fatal -> reset GPU, Nonfatal -> usually none"; its
    note: "Line token Fatal/Nonfatal sets the real severity"): the incident's next action names the one its line
    took (``correlate.incident.fatal_branch``). A fresh-user trial found a Nonfatal Xid 145 told to decode and
    maybe reset. An action without both branches stays as it is."""
    from correlate.incident import fatal_branch

    line = ("[Mon Nov 30 03:12:0{s} 2026] NVRM: Xid (PCI:0018:01:00): 145, RLW_RXPIPE {word} XC0 i0 Link 13 "
            "(0x0409a0c2 0x00000008 0x00000001 0x00000000 0x00100000 0x00000004)")
    (nonfatal,) = run(pipeline, line.format(s=1, word="Nonfatal"))
    assert (nonfatal["severity"], nonfatal["next_action"].split(";")[0]) == (
        "warning", "The line says Nonfatal: usually none")
    (fatal,) = run(pipeline, line.format(s=1, word="Fatal"))
    assert (fatal["severity"], fatal["next_action"].split(";")[0]) == ("critical", "The line says Fatal: reset GPU")
    assert fatal["next_action"].endswith("decode IntrInfo+ErrorStatus with NVIDIA's 144-150 table.")
    reset = "reset GPU; contact support if it repeats"  # Xid 62's: one branch
    assert fatal_branch(reset, True) == fatal_branch(reset, None) == reset


def test_an_xid_79_incident_checks_the_gpu_with_lspci_not_nvidia_smi(pipeline):
    """A GPU that fell off the bus does not answer ``nvidia-smi -q -i``: the Xid signature's ``verify`` for the
    catalog's ``gpu_off_bus`` category (``verify_by_category``) looks at its PCIe slot instead, as the probe-time
    off-bus signature does (a fresh-user trial). An NVLink Xid asks for the links' state and error counters
    (``nvidia-smi nvlink -s``/``-e``: never asked before, a second fresh user's trial); other Xids keep
    ``nvidia-smi -q -i``."""
    xid79 = ("[Mon Nov 30 03:12:01 2026] NVRM: Xid (PCI:0000:06:00): 79, pid='<unknown>', name=<unknown>, "
             "GPU has fallen off the bus.")
    (off,) = run(pipeline, xid79)
    assert off["verify"][:2] == ["lspci -s 0000:06:00.0 -vv", "nvidia-smi -L"]
    (link,) = run(pipeline, XID74.format(s=1, bus="18", link=3))
    assert link["verify"][:2] == ["nvidia-smi nvlink -s -i 0000:18:00.0", "nvidia-smi nvlink -e -i 0000:18:00.0"]
    (gsp,) = run(pipeline, "[Mon Nov 30 03:12:01 2026] NVRM: Xid (PCI:0000:18:00): 119, pid=1, name=nvidia-smi, "
                           "Timeout waiting for RPC from GSP! Expected function 76 (GSP_RM_CONTROL) (0x20801348 0x410).")
    assert gsp["verify"][0] == "nvidia-smi -q -i 0000:18:00.0", gsp["verify"]


def test_a_gpus_fall_explains_the_node_reboot_its_driver_asks_of_every_gpu_of_the_host(pipeline):
    """One GPU of an 8-GPU host fell off the bus and the driver set "Node Reboot Required" (Xid 154) on all eight
    (a real-logs pass: an HGX host whose GPU5 lost its PCIe link, "all eight GPUs given Xid 154 recovery action 0x2").
    The seven other GPUs' Xid 154 are reports of that fall (``gpu_loss.explains_hostwide_recovery_action``), not
    faults "no rule ties" to it; a GPU whose own Xid comes with its 154 stays a fault of its own, and a 154 on another
    host is no report of this host's fall."""
    xid154 = ("[Mon Sep 14 04:48:46 2026] NVRM: Xid (PCI:0000:{bus}:00): 154, GPU recovery action changed from 0x0 "
              "(None) to 0x2 (Node Reboot Required)")
    fall = ("[Mon Sep 14 04:48:46 2026] NVRM: Xid (PCI:0000:a1:00): 79, pid=9962, name=python, GPU has fallen off "
            "the bus.")
    others = ["01", "21", "41", "61", "81", "c1", "e1"]
    (inc,) = run(pipeline, "\n".join([fall] + [xid154.format(bus=b) for b in others + ["a1"]]))
    assert (inc["initiator"]["device"], inc["initiator"]["xid"]) == ("0000:a1:00.0", 79), inc["explanation"]
    assert sorted(d["device"] for d in inc["downstream"]) == [f"0000:{b}:00.0" for b in others]
    effects = {x["effect"] for x in inc["evidence"] if x["rule"] == "gpu_loss.explains_hostwide_recovery_action"}
    assert {d["device"] for d in inc["downstream"] if effects & set(d["events"])} == {f"0000:{b}:00.0" for b in others}
    assert "by rule gpu_loss.explains_hostwide_recovery_action" in inc["explanation"]
    # a GPU with a fault of its own beside its 154 (an uncorrectable ECC error) is not explained away by the fall
    own = ("[Mon Sep 14 04:48:46 2026] NVRM: Xid (PCI:0000:21:00): 48, pid=1, name=python, An uncorrectable double "
           "bit error (DBE) has been detected on GPU in the framebuffer at partition 6, subpartition 0.")
    (both,) = run(pipeline, "\n".join([fall, own] + [xid154.format(bus=b) for b in others + ["a1"]]))
    assert "gpu 0000:21:00.0 on node07 (Xid 48;" in both["explanation"], both["explanation"]
    assert "gpu 0000:a1:00.0 on node07 (Xid 79" in both["explanation"], both["explanation"]
    # the same 154 on another host: a fault of that host, not a report of this one's fall
    other_host = run(pipeline, xid154.format(bus="01"), host="node08")
    assert [i["initiator"]["host"] for i in other_host] == ["node08"]
    # another GPU's "GPU Reset Required" (0x1) asks a reset of that GPU alone: no report of the fall (it was said to
    # follow it by this rule: a break-it pass)
    reset = xid154.format(bus="21").replace("0x2 (Node Reboot Required)", "0x1 (GPU Reset Required)")
    (alone,) = run(pipeline, "\n".join([fall, xid154.format(bus="a1"), reset]))
    (gpu21,) = [d for d in alone["downstream"] if d["device"] == "0000:21:00.0"]
    tied = {x["effect"] for x in alone["evidence"] if x["rule"] == "gpu_loss.explains_hostwide_recovery_action"}
    assert tied and not tied & set(gpu21["events"]), alone["evidence"]
    assert "by rule gpu_loss.explains_hostwide_recovery_action" not in alone["explanation"], alone["explanation"]


UVM_FATAL = ("Sep 07 09:48:03 node07 kernel: NVRM: nvGpuOpsReportFatalError: uvm encountered global fatal error 0x60, "
             "requiring os reboot to recover.")
REBOOT_154 = ("Sep 07 09:48:03 node07 kernel: NVRM: Xid (PCI:0000:{bus}:00): 154, GPU recovery action changed from 0x0 "
              "(None) to 0x2 (Node Reboot Required)")


def test_uvms_global_fatal_error_explains_the_node_reboot_every_gpu_then_reports(pipeline):
    """UVM's global fatal error (``nvGpuOpsReportFatalError``, rmapi/nv_gpu_ops.c) takes no GPU and sets the host's
    reboot-required flag: every GPU then reports Xid 154 "Node Reboot Required" (NVIDIA/open-gpu-kernel-modules#1342).
    The line gave no event, and the 154 lines alone were candidates "the evidence does not say which came first" (a
    real-logs pass): the fatal error is the initiator, the 154s its reports, and the next step is the node's reboot.
    A 154 on another host is no report of it."""
    (inc,) = run(pipeline, "\n".join([UVM_FATAL] + [REBOOT_154.format(bus=b) for b in ("01", "02")]))
    assert (inc["initiator"]["kind"], inc["initiator"]["device"], inc["category"]) == ("driver", None, "gpu_failure")
    assert inc["severity"] == "critical"
    assert sorted(d["device"] for d in inc["downstream"]) == ["0000:01:00.0", "0000:02:00.0"]
    assert "by rule uvm_fatal.explains_hostwide_recovery_action" in inc["explanation"], inc["explanation"]
    assert "reboot" in inc["next_action"] and "status 0x60" in inc["next_action"], inc["next_action"]
    other = run(pipeline, REBOOT_154.format(bus="01"), host="node08") + run(pipeline, UVM_FATAL)
    assert all("uvm_fatal.explains_hostwide_recovery_action" not in i["explanation"] for i in other)


def test_the_gpu_fault_uvm_hit_comes_before_its_global_fatal_error(pipeline):
    """The fatal error follows the fault UVM got from a GPU (#1342: the GPU lost from the bus; an MMU fault, Xid 31):
    that GPU is the initiator, the fatal error and the host's 154s its reports (``gpu_fault.explains_uvm_fatal``).
    Xid 154 is no cause of it: the recovery action is what the fatal error sets."""
    xid31 = ("Sep 07 09:48:02 node07 kernel: NVRM: Xid (PCI:0000:02:00): 31, pid=684430, name=python3, channel "
             "0x00000002, intr 00000000. MMU Fault: ENGINE GRAPHICS GPC1 UNRECOGNIZED_CLIENT faulted @ "
             "0x1827f9_000b4bc0. Fault is of type FAULT_PDE ACCESS_TYPE_VIRT_READ")
    (inc,) = run(pipeline, "\n".join([xid31, UVM_FATAL] + [REBOOT_154.format(bus=b) for b in ("01", "02")]))
    assert inc["initiator"]["device"] == "0000:02:00.0", inc["explanation"]
    assert "its first line Xid 31" in inc["explanation"], inc["explanation"]
    assert sorted(str(d["device"]) for d in inc["downstream"]) == ["0000:01:00.0", "None"]  # the 154, the fatal error
    tied = {x["rule"] for x in inc["evidence"]}
    assert {"gpu_fault.explains_uvm_fatal", "uvm_fatal.explains_hostwide_recovery_action"} <= tied, tied
    (alone,) = run(pipeline, "\n".join([REBOOT_154.format(bus="01"), UVM_FATAL]))
    assert alone["initiator"]["kind"] == "driver", alone["explanation"]


def test_a_recovery_action_alone_says_its_cause_is_missing(pipeline):
    """Xid 154 is "informational only regarding another Xid" (NVIDIA's catalog): a GPU whose paste holds only its
    "Node Reboot Required" (a real capture: the GPU's preamble and the 154, nothing else) gets the driver's step,
    but its incident says the Xid that set it is missing and is less sure; with that Xid (79, real lines of a
    training host's four falls) nothing is missing."""
    lone = ("Aug 12 01:22:51 node07 kernel: NVRM: GPU at PCI:0000:01:00: GPU-9a613ad4-057b-4fb1-8572-ae2d3c112a92\n"
            "Aug 12 01:22:51 node07 kernel: NVRM: Xid (PCI:0000:01:00): 154, GPU recovery action changed from 0x0 "
            "(None) to 0x2 (Node Reboot Required)")
    (inc,) = run(pipeline, lone)
    assert inc["initiator"]["xid"] == 154 and inc["next_action"].startswith("The driver asks for: Node Reboot")
    assert inc["missing"][0].startswith("the Xid that changed the recovery action of 0000:01:00.0 on node07")
    assert inc["confidence"] < 0.7
    fell = ("[Mon Sep 14 04:48:45 2026] NVRM: Xid (PCI:0000:02:00): 79, pid=9962, name=python, GPU has fallen off "
            "the bus.\n[Mon Sep 14 04:48:45 2026] NVRM: Xid (PCI:0000:02:00): 154, GPU recovery action changed from "
            "0x0 (None) to 0x2 (Node Reboot Required)")
    (inc,) = run(pipeline, fell)
    assert inc["initiator"]["xid"] == 79 and not any("recovery action" in m for m in inc["missing"])
    assert inc["confidence"] >= 0.75


def test_a_recovery_action_row_of_query_gpu_is_a_fault_of_that_gpu(pipeline):
    """`nvidia-smi --query-gpu=index,gpu_recovery_action --format=csv,noheader` (NVIDIA/DCGM#263: GPU 1 "Reset" while
    DCGM's health check said Healthy): the one row that is not "None" is an error incident of that GPU, by index,
    and of its bus id when an index-to-bus-id query of the host names it; the healthy rows give nothing."""
    rows = "0, None\n1, Reset\n2, None\n3, None\n4, None\n5, None\n6, None\n7, None"
    (inc,) = run(pipeline, rows)
    assert (inc["severity"], inc["category"], inc["initiator"]["gpu_index"]) == ("error", "gpu_failure", 1)
    assert "(Reset)" in inc["next_action"]
    (inc,) = run(pipeline, "0, 00000000:18:00.0\n1, 00000000:2A:00.0\n" + rows)
    assert inc["initiator"]["device"] == "0000:2a:00.0"
    assert run(pipeline, rows.replace("1, Reset", "1, None")) == []


def test_an_explanation_says_what_a_kind_without_an_xid_means(pipeline):
    """An Xid's explanation names it ("Xid 79 (GPU has fallen off the bus)"); one of another kind said only
    its field name ("gpu_off_bus on gpu …"; a fresh-user trial). Every kind has its phrase
    (``schemas.events.KIND_PHRASES``), and the explanation gives it after the kind."""
    from schemas.events import KIND_PHRASES, KINDS

    assert set(KIND_PHRASES) == set(KINDS)
    probe = ("[ 1843.308145] NVRM: The NVIDIA GPU 0000:b3:00.0 NVRM: (PCI ID: 10de:26b5) installed in this system "
             "has NVRM: fallen off the bus and is not responding to commands.")
    (inc,) = run(pipeline, probe)
    assert inc["explanation"].startswith("gpu_off_bus (the GPU fell off the bus) on gpu 0000:b3:00.0 of node07")
    (xid,) = run(pipeline, XID74.format(s=1, bus="18", link=3))
    assert xid["explanation"].startswith("Xid 74 (") and "nvlink" not in xid["explanation"].split(" on ")[0]


def test_an_xid_nvidia_resolves_with_investigate_sw_asks_for_the_driver_version(pipeline, catalog):
    """Xids whose NVIDIA resolution includes INVESTIGATE_SW (xid-catalog.csv ``nvidia_action``: 60, 66, 110,
    119, 120, 160, 161) can be a driver or firmware bug: corpus 023's seven Xid 119 GSP timeouts were an early
    R525 bug, fixed in 525.105.17, yet the next action said only "reset GPU; power-cycle" and nothing was missing
    (a fresh-user trial). The next action now says so (as "it repeated" when it did) and ``missing`` asks for the
    host's driver version against its branch's release notes; an Xid without it (79) is unchanged."""
    from correlate.incident import software_cause

    assert {x for x in catalog.xids if software_cause(catalog, x)} == {60, 66, 110, 119, 120, 160, 161}
    gsp = ("[Fri Mar  3 04:4{m}:24 2023] NVRM: Xid (PCI:0000:61:00): 119, pid=2195, name=nvidia-smi, Timeout "
           "waiting for RPC from GSP! Expected function 76 (GSP_RM_CONTROL) (0x20800a4c 0x4).")
    (once,) = run(pipeline, gsp.format(m=4))
    assert "If it repeats, suspect the driver or GPU firmware" in once["next_action"], once["next_action"]
    assert once["next_action"].startswith("Reset GPU; power-cycle the node if it persists")
    assert len(once["missing"]) == 1 and once["missing"][0].startswith("the driver version of node07 against")
    (twice,) = run(pipeline, gsp.format(m=4) + "\n" + gsp.format(m=5))
    assert twice["next_action"].startswith("It repeated (2 times), so suspect the driver")  # first, then the reset
    assert "Reset GPU; power-cycle the node if it persists" in twice["next_action"]
    # a storm's count is written as the explanation writes its lines ("20993 times" beside "20,993 lines": a fresh
    # user's trial)
    (storm,) = run(pipeline, "\n".join([gsp.format(m=4)] * 1500 + [gsp.format(m=5)]))
    assert storm["next_action"].startswith("It repeated (1,501 times), so"), storm["next_action"]
    assert "it reported 1,501 lines" in storm["explanation"], storm["explanation"]
    (off_bus,) = run(pipeline, "[Fri Mar  3 04:44:24 2023] NVRM: Xid (PCI:0000:61:00): 79, pid=1, name=x, "
                               "GPU has fallen off the bus.")
    assert "INVESTIGATE_SW" not in off_bus["next_action"] and not any("driver version" in m for m in off_bus["missing"])


def test_a_gsp_rpc_dump_without_its_xid_119_is_the_gpu_s_gsp_failure(pipeline):
    """The RM's GSP RPC dump (its history headers, a stack through ``_kgspRpcRecvPoll``) is the GPU's GSP failure when
    its Xid 119 line is not in the log (NVIDIA/open-gpu-kernel-modules#942: no event from the dump alone, a real-logs
    pass); with the Xid 119 before it the incident is the Xid's, the dump one of its lines."""
    dump = ("[Mon Nov 30 03:12:01 2026] NVRM: GPU3 RPC history (CPU -> GSP):\n"
            "[Mon Nov 30 03:12:01 2026] NVRM:     entry function                   sequence data0\n"
            "[Mon Nov 30 03:12:01 2026] NVRM: GPU3 RPC event history (CPU <- GSP):\n"
            "[Mon Nov 30 03:12:01 2026]  os_dump_stack+0xe/0x20 [nvidia]\n"
            "[Mon Nov 30 03:12:01 2026]  _kgspRpcRecvPoll+0x650/0x820 [nvidia]\n"
            "[Mon Nov 30 03:12:01 2026]  _issueRpcAndWait+0xdd/0x970 [nvidia]")
    (alone,) = run(pipeline, dump)
    assert (alone["category"], alone["initiator"]["kind"]) == ("gsp_error", "gsp_error")
    assert alone["next_action"].startswith("The driver dumped its GSP RPC history")
    assert "/dev/nvidia3" in alone["next_action"]
    b = pipeline.run(Decoded(segments=[Segment(data=dump.encode(), origin="t:node07", stream="node07", host="node07",
                                               ref_ts=T0, ref_basis="kafka", ingest_ts=T0)]))
    assert b.events.column("signature").to_pylist() == ["gsp.rpc_history"] * 3
    assert len(alone["initiator"]["events"]) == 3
    xid = ("[Mon Nov 30 03:12:00 2026] NVRM: Xid (PCI:0000:18:00): 119, pid=1, name=nvidia-smi, Timeout waiting for "
           "RPC from GSP3! Expected function 76 (GSP_RM_CONTROL) (0x20801348 0x410).")
    (inc,) = run(pipeline, xid + "\n" + dump)
    assert (inc["initiator"]["xid"], inc["initiator"]["device"]) == (119, "0000:18:00.0")


def test_sxids_only_a_wrong_fabric_manager_partition_gives_are_its_configuration(pipeline):
    """SXid 11004 "ingress invalid ACL" on four NVSwitches at once (a Shared NVSwitch passthrough how-to: a VM's two
    GPUs from two partitions) was "no single culprit" among the switches at 0.3; the SXid catalog says it comes only
    from a wrong Fabric Manager partition setup (CHECK_FM_CONFIG). Beside another fault, it is judged as before."""
    sx = ("[ 8123.6175{i}] nvidia-nvswitch{i}: SXid (PCI:0000:00:0{b}.0): 11004, Non-fatal, Link 3{i} ingress invalid "
          "ACL (First)")
    text = "\n".join(sx.format(i=i, b=f"{7 + i:x}") for i in range(4))
    (inc,) = run(pipeline, text)
    assert (inc["pattern"], inc["category"], inc["confidence"]) == ("platform.fm_partition", "fabric_manager", 0.7)
    assert "SXid 11004 (NPORT_INGRESS_ACLFAIL) on 4 NVSwitches of node07" in inc["explanation"]
    assert inc["next_action"].startswith("Check Fabric Manager's partitions")
    fatal = "[ 8123.700000] nvidia-nvswitch0: SXid (PCI:0000:00:07.0): 20034, Fatal, Link 30 LTSSM Fault Up"
    assert all(i["pattern"] != "platform.fm_partition" for i in run(pipeline, text + "\n" + fatal))
    # the guest's jobs' Xid 45 is the catalog row's own follow-on; a Fatal 11004 asks for the reset too (a break-it
    # pass)
    xid45 = "[ 8124.000000] NVRM: Xid (PCI:0000:18:00): 45, pid=1, name=python, Ch 00000008"
    (inc,) = run(pipeline, text + "\n" + xid45)
    assert inc["pattern"] == "platform.fm_partition" and "reset them" not in inc["next_action"]
    (inc,) = run(pipeline, text.replace("Non-fatal", "Fatal"))
    assert inc["pattern"] == "platform.fm_partition" and "The switches said Fatal: reset them" in inc["next_action"]


def test_fabric_managers_copy_of_an_sxid_is_the_switchs_sxid_not_a_fabric_manager_error(pipeline):
    """Fabric Manager logs each SXid it sees again ("detected NVSwitch non-fatal error 12028 on fid 0 on NVSwitch pci
    bus id 00000000:86:00.0 physical id 3 port 61", leptonai/gpud's fabricmanager.log testdata): that copy was an
    error of Fabric Manager ("restart it"), in FM's journal nothing. It is the switch's SXid, at the SXid catalog's
    severity, and beside the kernel's own lines of that SXid one fault of one switch port."""
    fm = ("[Feb 27 2026 15:10:02] [ERROR] [tid 12727] detected NVSwitch {word} error {sxid} on fid 0 on NVSwitch pci "
          "bus id 00000000:86:00.0 physical id 3 port {port}")
    (inc,) = run(pipeline, fm.format(word="non-fatal", sxid=12028, port=61))
    assert (inc["category"], inc["severity"]) == ("nvswitch_fault", "warning")
    i = inc["initiator"]
    assert (i["device_type"], i["device"], i["link"], i["sxid"]) == ("nvswitch", "0000:86:00.0", 61, 12028)
    assert inc["next_action"].startswith("SXid 12028 (NPORT_EGRESS_PRIVRSPERR")
    (inc,) = run(pipeline, fm.format(word="fatal", sxid=20034, port=33))
    assert (inc["severity"], inc["initiator"]["link"]) == ("critical", 33)
    kernel = ("[Fri Feb 27 15:10:02 2026] nvidia-nvswitch1: SXid (PCI:0000:86:00.0): 12028, Non-fatal, Link 61 egress "
              "non-posted PRIV error (First)")
    (inc,) = run(pipeline, kernel + "\n" + fm.format(word="non-fatal", sxid=12028, port=61))
    assert (inc["initiator"]["device"], inc["initiator"]["link"], inc["downstream"]) == ("0000:86:00.0", 61, [])
    assert len(inc["initiator"]["events"]) == 2
    # FM's journal form; a Non-fatal SXid the catalog says to ignore raises nothing above information
    journal = ("Mar 03 18:39:57 node07 nv-fabricmanager[5183]: detected NVSwitch non-fatal error 22013 on NodeId 0 on "
               "NVSwitch pci bus id 00000000:08:00.0 physical id 3 port 60")
    assert all(i["severity"] == "info" for i in run(pipeline, journal))


def test_a_lone_nonfatal_nvlink_xid_says_nothing_failed_after_it(pipeline):
    """An NVLink Xid whose line says Nonfatal, with nothing downstream, is the earliest fault but not a failure
    anyone reported: confidence 0.15 lower and ``missing`` asks whether anything failed, and for a symptom if a job
    did (corpus 029 without its symptom blamed a red herring at 0.75: the hang was an NCCL bug, NVIDIA/nccl#2241;
    a fresh-user trial). A Fatal line, or one a downstream report follows, is judged as before."""
    x145 = "[Mon Nov 30 03:12:0{s} 2026] NVRM: Xid (PCI:0000:18:00): 145, RLW_RXPIPE {word} XC0 i0 Link 11 (0x0)"
    (lone,) = run(pipeline, x145.format(s=1, word="Nonfatal"))
    (fatal,) = run(pipeline, x145.format(s=1, word="Fatal"))
    assert lone["confidence"] == round(fatal["confidence"] - 0.15, 2) and fatal["missing"] == []
    assert lone["missing"] == ["whether anything failed: the lines of Xid 145 say Nonfatal or nothing of it, none "
                               "says Fatal, and nothing reported a failure after them; if a job hung or failed then, "
                               "diagnose its logs with that symptom (`firstfault diagnose … --symptom hang@node07`)"]
    # a rank's watchdog timeout after it: the hang is the report (patterns.nccl_hang_with_benign_nvlink), as before
    wd = ("[rank0]:[E1130 03:12:09.000000000 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught collective operation "
          "timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=5000) ran for 5000 "
          "milliseconds before timing out.")
    (followed,) = run(pipeline, x145.format(s=1, word="Nonfatal") + "\n" + wd)
    assert followed["category"] == "nccl_software" and not any("whether anything failed" in m
                                                               for m in followed["missing"])


# formats.md §12.1 – 12.2
WATCHDOG = ("[rank{rank}]:[E1130 03:12:1{s}.900000000 ProcessGroupNCCL.cpp:607] [Rank {rank}] Watchdog caught collective "
            "operation timeout: WorkNCCL(SeqNum=808, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) "
            "ran for 6000{s}2 milliseconds before timing out.")


def test_one_ranks_watchdog_timeout_is_not_named_the_cause(pipeline):
    """A rank's watchdog timeout says it waited for another rank: alone it is no initiator (a fresh-user trial saw
    one rank's timeout named the earliest fault nothing explains at 0.75, while two ranks' got 0.3 and "none of
    them is the cause"). With its communicator's membership (two ranks), the other rank is the silent one."""
    (one,) = run(pipeline, WATCHDOG.format(s=1, rank=16), host="node09")
    assert (one["pattern"], one["category"], one["confidence"]) == ("comm.silent_rank", "nccl_hang", 0.3)
    assert one["initiator"]["device_type"] is None and one["initiator"]["kind"] is None
    assert one["explanation"] == ("rank 16 timed out on a collective (SeqNum 808): it waited for another rank, so "
                                  "it is not the cause. Without the communicator's membership the silent rank cannot "
                                  "be named.")
    (two,) = run(pipeline, WATCHDOG.format(s=1, rank=8) + "\n" + WATCHDOG.format(s=2, rank=9), host="node08")
    assert (two["pattern"], two["confidence"]) == ("comm.silent_rank", 0.3)
    assert two["explanation"] == ("2 ranks (8, 9) timed out on the same collective (SeqNum 808); every visible rank "
                                  "waited, so none of them is the cause. Without the communicator's membership the "
                                  "silent rank cannot be named.")
    # beside another fault the roots fallback still names it (a break-it pass: a non-fatal SXid went downstream)
    sxid = "[Mon Nov 30 03:02:04 2026] nvidia-nvswitch3: SXid (PCI:0000:08:00.0): 28006, Non-fatal, Link 12 MC TS " \
           "crumbstore MCTO (First)"
    (beside,) = run(pipeline, sxid + "\n" + WATCHDOG.format(s=1, rank=16), host="node09")
    assert (beside["pattern"], beside["initiator"]["sxid"]) == ("roots", 28006), beside["explanation"]
    init = ("node09:1234:1234 [0] NCCL INFO comm 0x5573d6c0 rank {r} nranks 2 cudaDev {r} nvmlDev {r} busId {r}8000 "
            "commId 0x6a2b15e7c3f0a1d4 - Init COMPLETE")
    (named,) = run(pipeline, "\n".join([init.format(r=0), init.format(r=1), WATCHDOG.format(s=1, rank=1)]),
                   host="node09")
    assert (named["pattern"], named["initiator"]["rank"], named["confidence"]) == ("comm.silent_rank", 0, 0.7)


# PyTorch 2.1 – 2.3 after a watchdog timeout (MLI-lab/DeepDeWedge#22, vllm-project/vllm#6042)
TAKING_DOWN = ["[rank{rank}]:[E ProcessGroupNCCL.cpp:537] Some NCCL operations have failed or timed out. Due to the "
               "asynchronous nature of CUDA kernels, subsequent GPU operations might run on corrupted/incomplete data.",
               "[rank{rank}]:[E ProcessGroupNCCL.cpp:543] To avoid data inconsistency, we are taking the entire process "
               "down."]


@pytest.mark.parametrize("after", [[0], [1], [0, 1]])
def test_a_timed_out_ranks_own_reports_after_its_timeout_are_no_other_fault(pipeline, after):
    """The lines PyTorch's watchdog prints after a timeout, on the same rank ("Some NCCL operations have failed or
    timed out", "… taking the entire process down": catalog role downstream), report that timeout: they made the
    lone timeout "the earliest fault nothing else explains" at 0.75 (a real-logs pass: DeepDeWedge#22, vllm#6042),
    where the timeout alone is "not the cause" at 0.3. Another rank's downstream line still counts as another
    fault."""
    lines = [WATCHDOG.format(s=1, rank=1)] + [TAKING_DOWN[k].format(rank=1) for k in after]
    (one,) = run(pipeline, "\n".join(lines), host="node09")
    assert (one["pattern"], one["category"], one["confidence"]) == ("comm.silent_rank", "nccl_hang", 0.3)
    assert one["explanation"].startswith("rank 1 timed out on a collective (SeqNum 808): it waited for another rank")
    other = run(pipeline, "\n".join([WATCHDOG.format(s=1, rank=1), TAKING_DOWN[1].format(rank=2)]), host="node09")
    assert [i["pattern"] for i in other] != ["comm.silent_rank"]


def test_a_ranks_follow_up_lines_printed_just_before_its_rethrown_timeout_report_that_timeout(pipeline):
    """PyTorch 2.x prints a rank's "Timeout at NCCL work", "Some NCCL operations have failed" and "taking the entire
    process down" and then, 1.4 ms later, re-throws the timeout ("Process group watchdog thread terminated with
    exception: … ran for 1800014 milliseconds"; NVIDIA/nccl#1504, whose paste lacks the first "Watchdog caught"
    line): the follow-ups, before the only line that says how long the work ran, were an incident apart, the same hang
    twice (a real-logs pass). Another rank's lines stay its own."""
    pre = "[rank{r}]:[E1103 07:34:57.4608{f} ProcessGroupNCCL.cpp:{c}] "
    lines = [pre.format(r=1, f="01783", c=1834) + "[PG ID 0 PG GUID 0(default_pg) Rank 1] Timeout at NCCL work: 1, "
             "last enqueued NCCL work: 1, last completed NCCL work: -1.",
             pre.format(r=1, f="43251", c=630) + "[Rank 1] Some NCCL operations have failed or timed out. Due to the "
             "asynchronous nature of CUDA kernels, subsequent GPU operations might run on corrupted/incomplete data.",
             pre.format(r=1, f="51231", c=636) + "[Rank 1] To avoid data inconsistency, we are taking the entire "
             "process down.",
             "[rank1]:[E1103 07:34:57.462234381 ProcessGroupNCCL.cpp:1595] [PG ID 0 PG GUID 0(default_pg) Rank 1] "
             "Process group watchdog thread terminated with exception: [Rank 1] Watchdog caught collective operation "
             "timeout: WorkNCCL(SeqNum=1, OpType=COALESCED, NumelIn=18446744073709551615, "
             "NumelOut=18446744073709551615, Timeout(ms)=1800000) ran for 1800014 milliseconds before timing out."]
    (one,) = run(pipeline, "\n".join(lines), host="node01")
    assert one["pattern"] == "comm.silent_rank" and one["start"].startswith("2026-11-03T07:04:57")
    assert one["explanation"].startswith("rank 1 timed out on a collective (SeqNum 1)")
    other = [lines[-1], lines[2].replace("rank1]", "rank2]").replace("[Rank 1]", "[Rank 2]")]
    assert len(run(pipeline, "\n".join(other), host="node01")) == 2


def test_a_ranks_report_on_the_work_another_rank_timed_out_on_is_that_hang(pipeline):
    """Ranks 0 and 4 print the watchdog's timeout on SeqNum 1580 (ran for 600 s), ranks 0 and 3 its "Exception …
    detected by watchdog at work: 1580" (hiyouga/LlamaFactory#7396, each line behind a viewer's line number "[80746] ",
    ``prefix._LABEL``): rank 3's line, with no timeout of its own in the log, stood at its line time, 10 minutes after
    the others' implied start, and was an incident apart (a real-logs pass). Another work number, or another process
    group, stays apart."""
    t = ("[{n}] [rank{r}]:[E321 02:07:08.{f} ProcessGroupNCCL.cpp:607] [Rank {r}] Watchdog caught collective operation "
         "timeout: WorkNCCL(SeqNum=1580, OpType=ALLREDUCE, NumelIn=466119168, NumelOut=466119168, Timeout(ms)=600000) "
         "ran for 600060 milliseconds before timing out.")
    x = ("[{n}] [rank{r}]:[E321 02:07:08.{f} ProcessGroupNCCL.cpp:1664] [PG 1 Rank {r}] Exception (either an error or "
         "timeout) detected by watchdog at work: {w}, last enqueued NCCL work: 1582, last completed NCCL work: 1579.")
    lines = [t.format(n=80746, r=0, f="408271257"), t.format(n=80747, r=4, f="414640780"),
             x.format(n=80748, r=0, f="465150152", w=1580), x.format(n=80749, r=3, f="465224069", w=1580)]
    (inc,) = run(pipeline, "\n".join(lines), host="train")
    assert inc["start"].startswith("2026-03-21T01:57:08")  # the stamps behind the line numbers are read
    assert sorted(d["rank"] for d in inc["downstream"]) == [0, 3, 4]
    other = lines[:3] + [x.format(n=80749, r=3, f="465224069", w=1581)]
    assert len(run(pipeline, "\n".join(other), host="train")) == 2


# a 2-rank job on one host whose rank 1 dies of a CUDA error that PyTorch's NCCL watchdog caught, and rank 0 times out
# on the collective rank 1 left, 600 s later (PyTorch 2.4+ c10 prefix; torch.watchdog_cuda_error, cuda.ecc_uncorrectable)
CUDA_DEATH = ("[rank1]:[E810 15:36:05.945860779 ProcessGroupNCCL.cpp:1899] [PG ID 0 PG GUID 0(default_pg) Rank 1] "
              "Process group watchdog thread terminated with exception: CUDA error: {error}\n"
              "[rank0]:[E810 15:46:05.718597139 ProcessGroupNCCL.cpp:632] [Rank 0] Watchdog caught collective operation "
              "timeout: WorkNCCL(SeqNum=51753, OpType=ALLREDUCE, NumelIn=5057683, NumelOut=5057683, "
              "Timeout(ms)=600000) ran for 600072 milliseconds before timing out.")
KERNEL = "[Mon Aug 10 15:36:05 2026] NVRM: Xid (PCI:0000:55:00): {xid}"


def _parties(inc):
    return [(d["kind"], d["rank"]) for d in inc["downstream"]]


def test_a_rank_that_died_of_a_cuda_error_is_the_first_fault_of_its_job_and_its_gpu_says_whose(pipeline):
    """The rank whose process died of a CUDA error failed first; its peers' NCCL timeouts follow it
    (``cuda_error.explains_nccl``), not the reverse. What the error was decides the rest: an uncorrectable ECC
    error is the GPU's (critical, ``ecc``); an illegal memory access alone is a CUDA error of unknown cause (``other``:
    most often the program's, possibly the GPU's); with the application Xid 31 its GPU logged that second, it is the program's own fault (category ``application``, "debug
    the app"); with a hardware Xid 48 on the GPU, the Xid is the initiator and the CUDA error its reporter
    (``gpu_fault.explains_cuda_error``)."""
    ima = CUDA_DEATH.format(error="an illegal memory access was encountered")
    (alone,) = run(pipeline, ima, host="gpu-node-a")
    assert (alone["initiator"]["kind"], alone["initiator"]["rank"], alone["category"]) == ("cuda_error", 1, "other")
    assert _parties(alone) == [("nccl_timeout", 0)] and "cuda_error.explains_nccl" in alone["explanation"]
    (ecc,) = run(pipeline, CUDA_DEATH.format(error="uncorrectable ECC error encountered"), host="gpu-node-a")
    assert (ecc["initiator"]["kind"], ecc["initiator"]["rank"], ecc["category"], ecc["severity"]) == (
        "ecc", 1, "ecc", "critical")
    assert _parties(ecc) == [("nccl_timeout", 0)]
    assert "ECC errors) on the GPU of rank 1 of gpu-node-a at" in ecc["explanation"]
    mmu = KERNEL.format(xid="31, pid=2187734, name=python, Ch 00000008, intr 00000000. MMU Fault: ENGINE GRAPHICS "
                            "GPCCLIENT_T1_0 faulted @ 0x7f1b_2e000000. Fault is of type FAULT_PDE ACCESS_TYPE_VIRT_READ")
    (app,) = run(pipeline, mmu + "\n" + ima, host="gpu-node-a")
    assert (app["initiator"]["xid"], app["initiator"]["device"], app["category"]) == (31, "0000:55:00.0",
                                                                                      "application")
    assert sorted(_parties(app)) == [("cuda_error", 1), ("nccl_timeout", 0)]
    assert app["next_action"].startswith("Node healthy: debug the app")
    dbe = KERNEL.format(xid="48, pid=2187734, name=python, channel 0x00000002")
    (hw,) = run(pipeline, dbe + "\n" + ima, host="gpu-node-a")
    assert (hw["initiator"]["xid"], hw["category"], hw["severity"]) == (48, "ecc", "critical")
    assert sorted(_parties(hw)) == [("cuda_error", 1), ("nccl_timeout", 0)]
    assert "gpu_fault.explains_cuda_error" in hw["explanation"]


def test_a_worker_s_own_cuda_error_is_its_job_s_first_fault_as_the_watchdog_s_is(pipeline):
    """A process's own CUDA error before any watchdog caught it — vLLM's worker traceback (vllm-project/vllm#6725),
    the custom all-reduce's CUDACHECK (sgl-project/sglang#1421) — gave no event (a real-logs pass): it is the rank's
    failure as the watchdog's form is (``cuda.program_error``): its peers' timeouts follow it, and an Xid of its GPU
    that second is what it reports."""
    timeout = CUDA_DEATH.split("\n")[1]
    for own in ("(VllmWorker rank=1 pid=2187734) ERROR 08-10 15:36:05 [multiproc_executor.py:527] RuntimeError: "
                "CUDA error: an illegal memory access was encountered",
                "[rank1]:[E810 15:36:05.945860779 custom_all_reduce.cuh:330] Failed: Cuda error "
                "/workspace/csrc/custom_all_reduce.cuh:330 'an illegal memory access was encountered'"):
        (alone,) = run(pipeline, own + "\n" + timeout, host="gpu-node-a")
        assert (alone["initiator"]["kind"], alone["initiator"]["rank"]) == ("cuda_error", 1), own
        assert _parties(alone) == [("nccl_timeout", 0)] and "cuda_error.explains_nccl" in alone["explanation"]
        mmu = KERNEL.format(xid="31, pid=2187734, name=python, Ch 00000008, intr 00000000. MMU Fault: ENGINE GRAPHICS "
                                "GPCCLIENT_T1_0 faulted @ 0x7f1b_2e000000. Fault is of type FAULT_PDE")
        (app,) = run(pipeline, "\n".join([mmu, own, timeout]), host="gpu-node-a")
        assert (app["initiator"]["xid"], app["category"]) == (31, "application"), own
        assert sorted(_parties(app)) == [("cuda_error", 1), ("nccl_timeout", 0)], own
        # a single-GPU program's own Xid and its traceback, nothing else: the benign case it was before the traceback
        # was read (a warning of the roots: the simulated benign_app_xid scenarios' check)
        (benign,) = run(pipeline, "\n".join([mmu, own]), host="gpu-node-a")
        assert (benign["pattern"], benign["severity"]) == ("benign.application_xid", "info"), own
        assert _parties(benign) == [("cuda_error", 1)], own


def test_a_cublas_or_cudnn_failure_is_its_job_s_first_fault_and_a_gpu_xid_beside_it_explains_it(pipeline):
    """A process's failed cuBLAS or cuDNN call ("CUDA error: CUBLAS_STATUS_EXECUTION_FAILED when calling `…`",
    "cuDNN error: CUDNN_STATUS_EXECUTION_FAILED") gave no event (a real-logs pass: facebookresearch/SparseConvNet#208,
    pytorch/pytorch#40420): it is the rank's failure as cuda.program_error's is — its peers' timeouts follow it
    (``cuda_error.explains_nccl``) — and a hardware Xid of its host that second is what it reports
    (``gpu_fault.explains_cuda_error``); its own cuBLAS handle that found no memory is the program's
    (``cuda.cublas_alloc_failed``, category application)."""
    timeout = CUDA_DEATH.split("\n")[1]
    stamp = "[rank1]:[E810 15:36:05.945860779 Exceptions.h:120] "
    for own in (stamp + "RuntimeError: CUDA error: CUBLAS_STATUS_EXECUTION_FAILED when calling `cublasSgemm( handle, "
                        "opa, opb, m, n, k, &alpha, a, lda, b, ldb, &beta, c, ldc)`",
                stamp + "RuntimeError: cuDNN error: CUDNN_STATUS_EXECUTION_FAILED"):
        (alone,) = run(pipeline, own + "\n" + timeout, host="gpu-node-a")
        assert (alone["initiator"]["kind"], alone["initiator"]["rank"]) == ("cuda_error", 1), own
        assert _parties(alone) == [("nccl_timeout", 0)] and "cuda_error.explains_nccl" in alone["explanation"]
        off = KERNEL.format(xid="79, pid=0, GPU has fallen off the bus.")
        (hw,) = run(pipeline, "\n".join([off, own, timeout]), host="gpu-node-a")
        assert (hw["initiator"]["xid"], hw["category"]) == (79, "gpu_off_bus"), own
        assert ("cuda_error", 1) in _parties(hw) and "gpu_fault.explains_cuda_error" in hw["explanation"], own
    alloc = stamp + "RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`"
    (oom,) = run(pipeline, alloc + "\n" + timeout, host="gpu-node-a")
    assert (oom["initiator"]["kind"], oom["category"]) == ("cuda_error", "application")
    assert _parties(oom) == [("nccl_timeout", 0)]


def test_jax_and_tensorflow_own_gpu_failures_are_their_job_s_first_fault(pipeline):
    """XLA's out of memory ("RESOURCE_EXHAUSTED: Out of memory while trying to allocate …", jax-ml/jax#13428) and the
    stream executor's lost context with the driver's enum alone ("could not synchronize on CUDA context:
    CUDA_ERROR_LAUNCH_FAILED :: …", then TensorFlow's "GPU sync failed", tensorflow/tensorflow#1450) gave no event (a
    real-logs pass). A process's out of memory is its job's first fault, an application one, which the other
    process's aborted communicator follows (``cuda_error.explains_nccl``); a lost context is what its GPU's Xid that
    second caused (``gpu_fault.explains_cuda_error``) and, alone, what the other process's abort follows."""
    stamp = "2026-08-10 15:36:{s}.120000: E external/xla/xla/"
    oom = (stamp.format(s="05") + "pjrt/pjrt_stream_executor_client.cc:2432] Execution of replica 0 failed: "
           "RESOURCE_EXHAUSTED: Out of memory while trying to allocate 6291456 bytes.")
    abort = (stamp.format(s="09") + "service/gpu/nccl_utils.cc:191] Aborting communicator: 0x5555a108ff90 due to async "
             "NCCL error: remote process exited or there was a network error")
    (inc,) = run(pipeline, oom + "\n" + abort, host="gpu-node-a")
    assert (inc["initiator"]["kind"], inc["category"], inc["severity"]) == ("cuda_error", "application", "error")
    assert _parties(inc) == [("nccl_error", None)] and "cuda_error.explains_nccl" in inc["explanation"]
    lost = ("2026-08-10 15:36:06.421165: E tensorflow/stream_executor/cuda/cuda_driver.cc:1110] could not synchronize "
            "on CUDA context: CUDA_ERROR_LAUNCH_FAILED :: No stack trace available\n"
            "2026-08-10 15:36:06.421198: F tensorflow/core/common_runtime/gpu/gpu_util.cc:370] GPU sync failed")
    (alone,) = run(pipeline, lost + "\n" + abort, host="gpu-node-a")
    assert alone["initiator"]["kind"] == "cuda_error" and _parties(alone) == [("nccl_error", None)]
    assert "cuda_error.explains_nccl" in alone["explanation"]
    off = KERNEL.format(xid="79, pid=0, GPU has fallen off the bus.")
    (hw,) = run(pipeline, off + "\n" + lost, host="gpu-node-a")
    assert (hw["initiator"]["xid"], hw["category"]) == (79, "gpu_off_bus")
    assert _parties(hw) == [("cuda_error", None)] and "gpu_fault.explains_cuda_error" in hw["explanation"]


def test_tensorflows_out_of_memory_on_the_cpu_is_the_hosts_memory_not_a_gpus(pipeline):
    """TensorFlow's "OOM when allocating tensor … on /job:localhost/replica:0/task:0/device:CPU:0 by allocator cpu"
    (thtrieu/darkflow#873) is a tensor of the host's memory: xla.gpu_oom read it as "ran out of GPU memory", a
    cuda_error on a GPU (a break-it pass). The same words on device:GPU:0 stay the GPU's."""
    line = ("2024-02-16 16:13:21.692009: W tensorflow/core/framework/op_kernel.cc:1839] OP_REQUIRES failed at "
            "matmul_op_impl.h:921 : RESOURCE_EXHAUSTED: OOM when allocating tensor with shape[22436962,512] and type "
            "float on /job:localhost/replica:0/task:0/device:{dev}:0 by allocator {alloc}")
    (cpu,) = run(pipeline, line.format(dev="CPU", alloc="cpu"), host="c4-n37")
    assert (cpu["initiator"]["kind"], cpu["category"]) == ("other", "host_memory"), cpu["initiator"]
    assert "host memory" in cpu["next_action"] and "GPU memory" not in cpu["next_action"], cpu["next_action"]
    (gpu,) = run(pipeline, line.format(dev="GPU", alloc="GPU_0_bfc"), host="c4-n37")
    assert (gpu["initiator"]["kind"], gpu["initiator"]["gpu_index"]) == ("cuda_error", 0), gpu["initiator"]


def test_a_tracebacks_cuda_ecc_error_dated_by_its_file_is_the_gpu_that_logged_the_xid(pipeline):
    """A job's log whose traceback printed no time (``RuntimeError: CUDA error: uncorrectable ECC error
    encountered``, dated by the file's mtime ten minutes later, when the job died) and the kernel's Xid 94 on GPU
    0000:61:00.0: one incident, not two pages. The unnamed ECC error takes the one GPU of its host that logged an
    ECC fault (an Xid's category is its catalog's: 94 is ``gpu_memory_ecc``), and that GPU is named by the line
    with a time of its own (the Xid), not by the traceback's mtime."""
    kernel = Segment(data=("[Mon Aug 10 09:48:07 2026] NVRM: Xid (PCI:0000:61:00): 94, pid=1413329, name=python, "
                           "Contained: CE User Channel (0x9). RST: No, D-RST: No").encode(),
                     origin="t:k", stream="h1", host="h1", ref_ts=T0, ref_basis="kafka", ingest_ts=T0)
    mtime = int(datetime(2026, 8, 10, 9, 58, 7, tzinfo=timezone.utc).timestamp()) * 1_000_000
    # as PyTorch >= 2.2 prints it, each line after the rank's label ("[rank3]: "): a rank's line, still its GPU's
    for label in ("", "[rank3]: "):
        text = "".join(f"{label}{x}\n" for x in ("Traceback (most recent call last):", "    loss.backward()",
                                                  "RuntimeError: CUDA error: uncorrectable ECC error encountered"))
        job = Segment(data=text.encode(), origin="file:h1.job.log", stream="h1.job.log", host="h1", ref_ts=mtime,
                      ref_basis="file", ingest_ts=T0)
        b = pipeline.run(Decoded(segments=[kernel, job]))
        (inc,) = correlate(b.events, b.link_samples, b.topology, now_us=T0)
        init = inc["initiator"]
        assert (init["host"], init["device"], inc["category"], inc["severity"]) == ("h1", "0000:61:00.0", "ecc",
                                                                                     "critical")
        assert len(init["events"]) == 2 and inc["downstream"] == [] and init["xid"] == 94
        assert inc["explanation"].startswith("Xid 94 (Contained memory error (one app affected)) on gpu "
                                             "0000:61:00.0 of h1 at 2026-08-10T09:48:07")
        assert inc["next_action"].startswith("Restart the affected app")  # the Xid's, not the traceback's
    # without the kernel's line the traceback names the incident, and says its time is only its file's
    b = pipeline.run(Decoded(segments=[job]))
    (alone,) = correlate(b.events, b.link_samples, b.topology, now_us=T0)
    assert "at or before 2026-08-10T09:58:07.000000Z (its file's time: the line printed none) is the earliest" in \
        alone["explanation"]


def test_a_ranks_cuda_nvlink_error_reports_the_nvlink_fault_of_its_host_and_is_no_candidate(pipeline):
    """CUDA error 220 names no link: beside two GPUs' Xid 74 of that second the rank's error is their reporter
    (``gpu_hw.explains_cuda_nvlink_error``), not a third candidate for the first fault."""
    cuda = ("[rank1]:[E1130 03:12:02.945860779 ProcessGroupNCCL.cpp:1899] [PG ID 0 PG GUID 0(default_pg) Rank 1] "
            "Process group watchdog thread terminated with exception: CUDA error: uncorrectable NVLink error "
            "detected during the execution")
    text = "\n".join([XID74.format(s=1, bus="18", link=3), XID74.format(s=1, bus="2a", link=5), cuda])
    (inc,) = run(pipeline, text, host="node07")
    assert inc["category"] == "link_fault" and ("nvlink_errors", 1) in _parties(inc)
    assert inc["explanation"].startswith("2 candidates report faults that nothing here explains: gpu 0000:18:00.0 "
                                         "on node07 (Xid 74); gpu 0000:2a:00.0 on node07 (Xid 74).")


def test_a_ranks_cuda_ecc_error_beside_two_gpus_ecc_xids_reports_them(pipeline):
    """CUDA error 214 on a rank whose GPU is not known, beside two GPUs' Xid 48 that second: it reports one of
    them (``gpu_hw.explains_cuda_hw_error``), it is no third candidate."""
    cuda = CUDA_DEATH.format(error="uncorrectable ECC error encountered").splitlines()[0]
    dbe = "[Mon Aug 10 15:36:05 2026] NVRM: Xid (PCI:0000:{bus}:00): 48, pid=2187734, name=python, channel 0x00000002"
    (inc,) = run(pipeline, "\n".join([dbe.format(bus="55"), dbe.format(bus="56"), cuda]), host="gpu-node-a")
    assert inc["category"] == "ecc" and ("ecc", 1) in _parties(inc)
    assert inc["explanation"].startswith("2 candidates report faults that nothing here explains: gpu 0000:55:00.0 "
                                         "on gpu-node-a (Xid 48); gpu 0000:56:00.0 on gpu-node-a (Xid 48).")


def test_a_ranks_cuda_ecc_error_is_its_own_gpus_when_nccl_placed_the_rank_and_the_xid_names_the_incident(pipeline):
    """Two break-it findings. NCCL's init lines put rank 3 on 0000:56:00.0: its ``CUDA error: uncorrectable ECC
    error encountered`` is that GPU's, not the one GPU of its host that logged an ECC Xid (0000:55:00.0, rank 1's).
    And when the kernel's Xid and a program's line are one party, the Xid names it (``attribute.lead_key``): the
    incident of rank 1's error beside its GPU's Xid 94 is "Xid 94 …", with the Xid's action, not the program's."""
    init = ("[2026-08-10 15:30:00] node07:{pid}:{pid} [{r}] NCCL INFO comm 0x557fe785f7a{r} rank {r} nranks 4 "
            "cudaDev {r} nvmlDev {r} busId {bus}000 commId 0x5ae77eb5ea4ec1ee - Init COMPLETE")
    xid94 = ("[Mon Aug 10 15:36:04 2026] NVRM: Xid (PCI:0000:55:00): 94, pid=1111, name=python, Contained: CE User "
             "Channel (0x9). RST: No, D-RST: No")
    cuda = ("[rank{r}]:[E810 15:36:05.945860779 ProcessGroupNCCL.cpp:1899] [PG ID 0 PG GUID 0(default_pg) Rank {r}] "
            "Process group watchdog thread terminated with exception: CUDA error: uncorrectable ECC error encountered")
    lines = [xid94, init.format(pid=1111, r=1, bus=55), init.format(pid=3333, r=3, bus=56)]
    (inc,) = run(pipeline, "\n".join(lines + [cuda.format(r=3)]), host="node07")
    assert inc["initiator"]["device"] == "0000:55:00.0"
    assert [(d["device"], d["rank"], d["kind"]) for d in inc["downstream"]] == [("0000:56:00.0", 3, "ecc")]
    (own,) = run(pipeline, "\n".join(lines + [cuda.format(r=1)]), host="node07")
    init_ = own["initiator"]
    assert (init_["device"], init_["xid"], len(init_["events"]), own["downstream"]) == ("0000:55:00.0", 94, 2, [])
    assert own["explanation"].startswith("Xid 94 (Contained memory error (one app affected)) on gpu 0000:55:00.0 "
                                         "(rank 1, as NCCL's init lines placed it) of node07 at 2026-08-10T15:36:04")
    assert init_["rank"] == 1
    assert own["next_action"].startswith("Restart the affected app")


def test_a_programs_cuda_error_hangs_its_own_job_not_another_in_the_rack(pipeline):
    """``cuda_error.explains_nccl`` holds within a communicator or a host, not across an NVLink domain: another job's
    watchdog timeout on another host of the rack 90 s later is no reporter of a rank's illegal memory access (a
    break-it pass)."""
    from correlate.rules import default_rules

    rule = next(r for r in default_rules().explains if r.id == "cuda_error.explains_nccl")
    assert "same_domain" not in rule.relations and rule.relations[:2] == ["same_comm", "same_host"]


def test_a_dcgm_link_down_where_the_platform_wires_it_is_not_called_down_by_design(pipeline):
    """DCGM's "GPU 0's NvLink link 3 is currently down" on a host whose fleet config names an SXM GPU: the link is
    wired (reference/topology.md §1), so the incident is a link fault and its next action resets the GPU — not the
    signature's note that a PCIe card's links are down by design (NVIDIA/DCGM#49), which it said beside an
    explanation that the platform wires them (a fresh-user trial). Without a fleet config the same line is the
    benign PCIe case (link 0: a PCIe card's listing starts there)."""
    from correlate.correlator import Settings
    from schemas.fleet import HostConfig

    line = "2026-11-30T03:12:01Z node07 dcgm: GPU 0's NvLink link 0 is currently down"
    seg = Segment(data=line.encode(), origin="t:node07", stream="node07", host="node07", ref_ts=T0,
                  ref_basis="kafka", ingest_ts=T0)
    b = pipeline.run(Decoded(segments=[seg]))
    sxm = Settings(hosts={"node07": HostConfig(platform="NVIDIA A100-SXM4-80GB")})
    (inc,) = correlate(b.events, b.link_samples, b.topology, now_us=T0, settings=sxm)
    assert (inc["pattern"], inc["severity"]) == ("link.inactive_where_wired", "error")
    assert "by design" not in inc["next_action"]
    assert "nvidia-smi -r -i 0" in inc["next_action"] and "MIG" in inc["next_action"]
    (benign,) = correlate(b.events, b.link_samples, b.topology, now_us=T0)
    assert benign["severity"] == "info" and "by design" in benign["explanation"]


@pytest.mark.parametrize("links, benign", [((0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11), True), ((0, 1), True),
                                            ((16, 17), False), ((3,), False), ((5, 6, 7), False),
                                            ((0, 9), False), ((0, 1, 3), False)])
def test_dcgm_links_down_are_down_by_design_only_from_link_0(pipeline, links, benign):
    """A GPU without NVLink has every link down and DCGM lists them from link 0 (NVIDIA/DCGM#49, NVIDIA/NVSentinel#1481:
    links 0 – 11 of an A100 PCIe). Links 16 and 17 down alone, on a GPU of no known model, were called the PCIe
    false positive with "do not RMA" (NVIDIA/NVSentinel#1701: a GB200's links still training after a reboot; a
    real-logs pass): links down beside others not reported are an NVLink GPU's link fault."""
    text = "\n".join(f"2026-11-30T03:12:0{k % 10}Z node07 dcgm: GPU 3's NvLink link {n} is currently down"
                     for k, n in enumerate(links))
    (inc,) = run(pipeline, text, host="node07")
    assert (inc["pattern"] == "benign.no_nvlink_on_gpu", inc["category"]) == (benign, "link_fault")
    assert (inc["severity"] == "info") is benign
    assert ("do not run field diagnostics or RMA" in inc["next_action"]) is benign
    assert inc["initiator"]["gpu_index"] == 3


def test_a_wired_link_down_keeps_its_gpus_other_link_errors_as_evidence(tmp_path):
    """The poller's samples of one H100: link 5 down, link 2's CRC counter rising over three minutes. The incident
    named link 5 and left the three counter rises out of every part of it — initiator, downstream, context (a fresh
    user's trial). They are the initiator GPU's evidence too, and said; the initiator's link stays 5."""
    import orjson as _orjson

    from api.diagnose import diagnose_paths
    from schemas.settings import Settings

    rows = []
    for minute, crc in enumerate((0, 1000, 3000, 5000)):
        links = [{"link": n, "state": "down" if n == 5 else "up", "gbps": 26.562,
                  "counters": {"Replay Errors": 0, "CRC Errors": crc if n == 2 else 0}} for n in range(18)]
        rows.append(_orjson.dumps({"format": "firstfault.link_sample/1", "host": "gpuc02",
                                   "timestamp": f"2026-11-29T03:0{minute}:00Z", "gpu_index": 0,
                                   "device": "0000:18:00.0", "model": "NVIDIA H100 80GB HBM3", "links": links}))
    (tmp_path / "gpuc02.nvml.ndjson").write_bytes(b"\n".join(rows) + b"\n")
    _, batch, incidents = diagnose_paths([tmp_path], Settings())
    (inc,) = incidents
    assert (inc["pattern"], inc["initiator"]["link"], inc["initiator"]["links"]) == ("link.inactive_where_wired", 5,
                                                                                     [5])
    kinds = dict(zip(batch.events.column("event_id").to_pylist(), batch.events.column("kind").to_pylist()))
    # the down link's four samples a minute apart are four events (a state that stays is one event per
    # ingest.assemble.STORM_SPAN_US), the counter's three rises three
    assert sorted(kinds[i] for i in inc["initiator"]["events"]) == ["nvlink_down"] * 4 + ["nvlink_errors"] * 3
    assert inc["explanation"].endswith("The same GPU also reported nvlink_errors on link 2.")


def test_a_fault_no_rule_ties_to_the_initiator_is_named_beside_it_not_as_following_it(pipeline):
    """An ECC double-bit error (Xid 48, 63, 94) on one GPU and, a second later, an application's Xid 13 on another
    GPU of the host: nothing ties the two (rules.yaml has no rule from an ECC error to another GPU's Xid 13), so the
    explanation does not count the Xid 13 among the reporters that "follow it (same_host)" (it did, naming neither
    GPU: a fresh-user trial) but names it as in the window and tied by no rule; the NCCL timeout a rule explains
    still follows it by that rule."""
    text = "\n".join([
        "[Tue Dec  1 04:00:00 2026] NVRM: Xid (PCI:0000:3b:00): 48, pid=5555, name=python, An uncorrectable double "
        "bit error (DBE) has been detected on GPU in the framebuffer at partition 6, subpartition 0.",
        "[Tue Dec  1 04:00:00 2026] NVRM: Xid (PCI:0000:3b:00): 63, pid=5555, Row Remapper: New row marked for "
        "remapping, reset gpu to activate.",
        "[Tue Dec  1 04:00:01 2026] NVRM: Xid (PCI:0000:5e:00): 13, pid=5556, name=python, Graphics SM Warp Exception "
        "on (GPC 7, TPC 7, SM 0): Illegal Instruction Parameter"])
    (inc,) = run(pipeline, text, host="node61")
    assert (inc["initiator"]["device"], inc["initiator"]["xid"]) == ("0000:3b:00.0", 48)
    assert "follow it" not in inc["explanation"], inc["explanation"]
    assert ("; no rule ties it to 1 other subject in its window (same_host): gpu 0000:5e:00.0 (Xid 13)"
            in inc["explanation"]), inc["explanation"]
    timeout = ("[Tue Dec  1 04:00:30 2026] [rank1]:[E1201 04:00:30.000000000 ProcessGroupNCCL.cpp:616] [Rank 1] "
               "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=7, OpType=ALLREDUCE, NumelIn=1, "
               "NumelOut=1, Timeout(ms)=20000) ran for 20010 milliseconds before timing out.")
    (inc,) = run(pipeline, text + "\n" + timeout, host="node61")
    assert "; 1 other reporter follows it (same_host) by rule device_fault.explains_nccl" in inc["explanation"], \
        inc["explanation"]


def test_explanations_count_reporters_and_gpus_in_words_not_with_parenthesised_plurals(pipeline):
    """The explanation says "1 other reporter follows it" and "3 other reporters follow it", and NVLS failed "on 1
    GPU" or "on 2 GPUs": it read "1 other reporter(s) follow it" and "on 1 GPU(s)" on the demo's node015 and the
    NVLS incidents (a fresh user's trial). Lines: an Xid 48 (the ECC case above) with PyTorch watchdog timeouts of
    one or three ranks; NCCL's nvls.cc 'invalid argument' line of corpus 012 on one or two GPUs."""
    xid48 = ("[Tue Dec  1 04:00:00 2026] NVRM: Xid (PCI:0000:3b:00): 48, pid=5555, name=python, An uncorrectable "
             "double bit error (DBE) has been detected on GPU in the framebuffer at partition 6, subpartition 0.")
    timeout = ("[Tue Dec  1 04:00:30 2026] [rank{r}]:[E1201 04:00:30.000000000 ProcessGroupNCCL.cpp:616] [Rank {r}] "
               "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=7, OpType=ALLREDUCE, NumelIn=1, "
               "NumelOut=1, Timeout(ms)=20000) ran for 20010 milliseconds before timing out.")
    (inc,) = run(pipeline, xid48 + "\n" + timeout.format(r=1), host="node61")
    assert "; 1 other reporter follows it (same_host)" in inc["explanation"], inc["explanation"]
    (inc,) = run(pipeline, "\n".join([xid48] + [timeout.format(r=r) for r in (1, 2, 3)]), host="node61")
    assert "; 3 other reporters follow it (same_host)" in inc["explanation"], inc["explanation"]
    assert "(s)" not in inc["explanation"], inc["explanation"]
    nvls = "node01:12098:{tid} [{dev}] transport/nvls.cc:244 NCCL WARN Cuda failure 1 'invalid argument'"
    (inc,) = run(pipeline, nvls.format(tid=12141, dev=2), host="node01")
    assert "multicast (CUDA error 1) on 1 GPU." in inc["explanation"], inc["explanation"]
    (inc,) = run(pipeline, nvls.format(tid=12141, dev=2) + "\n" + nvls.format(tid=12142, dev=3), host="node01")
    assert "multicast (CUDA error 1) on 2 GPUs." in inc["explanation"], inc["explanation"]


def test_both_ends_of_a_direct_link_are_found_from_nvlink_r_alone():
    """``nvidia-smi nvlink -R`` names GPUs by index; the kernel's Xid 74 by bus id. On a direct-connect board the
    remote device of a link is the peer GPU (reference/topology.md §7), so -R alone places the indexes: GPU 0's
    link 2 reaches 0000:43:00.0 link 5 and GPU 1's link 5 reaches 0000:1b:00.0 link 2, so GPU 0 is 0000:1b:00.0.
    Without it, an Xid 74 at each end of the link 300 ms apart was "no single culprit", asking for the -R output
    it was given (a fresh-user trial). NVSwitch ports never answer back (a switch has no -R line), so a chance
    match of link numbers through switches places nothing."""
    from correlate.topology import direct_buses

    pair = {(0, 2): ("0000:43:00.0", 5), (1, 5): ("0000:1b:00.0", 2)}
    assert direct_buses(pair) == {0: "0000:1b:00.0", 1: "0000:43:00.0"}
    mesh = {(0, 0): ("0000:43:00.0", 0), (0, 1): ("0000:52:00.0", 0), (1, 0): ("0000:1b:00.0", 0),
            (1, 1): ("0000:52:00.0", 1), (2, 0): ("0000:1b:00.0", 1), (2, 1): ("0000:43:00.0", 1)}
    assert direct_buses(mesh) == {0: "0000:1b:00.0", 1: "0000:43:00.0", 2: "0000:52:00.0"}
    # H100 board: each GPU's links go to the four NVSwitches' ports; GPU 0 link 2 -> switch 07 port 5 and GPU 1
    # link 5 -> switch 06 port 2 match by chance, but switch 07's other ports are not GPU 1's links
    switched = {(0, 2): ("0000:07:00.0", 5), (1, 5): ("0000:06:00.0", 2), (0, 3): ("0000:06:00.0", 40),
                (1, 0): ("0000:07:00.0", 46)}
    assert direct_buses(switched) == {}
    assert direct_buses({(0, 2): ("0000:43:00.0", 5), (1, 5): ("0000:1b:00.0", 2),
                         (2, 5): ("0000:1b:00.0", 2)}) == {}  # two GPUs answer one link: not a wiring


def test_both_ends_of_a_direct_link_blame_the_link_with_nvlink_r_and_no_bus_id_map(pipeline):
    text = "\n".join([
        "2026-12-01T03:12:00,100000+00:00 NVRM: Xid (PCI:0000:1b:00): 74, pid=4242, name=python, NVLink: fatal "
        "error detected on link 2(0x0, 0x0, 0x10000, 0x0, 0x0, 0x0, 0x0)",
        "2026-12-01T03:12:00,400000+00:00 NVRM: Xid (PCI:0000:43:00): 74, pid=4243, name=python, NVLink: fatal "
        "error detected on link 5(0x2, 0x0, 0x0, 0x10000, 0x0, 0x0, 0x0)",
        "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-00000000-0000-0000-0000-000000000007)",
        "         Link 2: Remote Device 00000000:43:00.0: Link 5",
        "GPU 1: NVIDIA H100 80GB HBM3 (UUID: GPU-00000000-0000-0000-0000-000000000008)",
        "         Link 5: Remote Device 00000000:1b:00.0: Link 2"])
    (inc,) = run(pipeline, text, host="node21")
    assert (inc["pattern"], inc["category"]) == ("link.both_ends", "link_fault")
    assert (inc["initiator"]["device"], inc["initiator"]["peer"], inc["initiator"]["link"]) == (
        "0000:1b:00.0", "0000:43:00.0", 2)


def test_what_is_missing_is_the_bus_id_map_when_nvlink_r_names_gpus_by_index_only(pipeline):
    """Two GPUs' Xid 74 on links to one NVSwitch, with ``nvidia-smi nvlink -R`` but not the index -> bus id map: the
    switch cannot be told (the Xids name bus ids, -R indexes; NVSwitch ports never place them), and what is
    missing is that map, not the -R output given (it asked for -R: a fresh-user trial); with no -R at all, -R."""
    xids = XID74.format(s=1, bus="18", link=0) + "\n" + XID74.format(s=2, bus="2a", link=0)
    r_only = "\n".join(NVLINK_R.splitlines()[:6])
    incs = run(pipeline, r_only + "\n" + xids)
    assert all(i["pattern"] != "nvswitch.common_end" for i in incs)
    missing = [m for i in incs for m in i["missing"]]
    assert any(m.startswith("which GPU index is which PCI bus id on node07 (nvidia-smi --query-gpu=index,pci.bus_id "
                            "--format=csv)") for m in missing), missing
    assert not any("nvidia-smi nvlink -R from the host" in m for m in missing), missing
    missing = [m for i in run(pipeline, xids) for m in i["missing"]]
    assert any(m.startswith("nvidia-smi nvlink -R from the host") for m in missing), missing


def _job_files(pipeline, folder, files: dict[str, str]):
    """``files`` (name -> text) written in ``folder`` and read as ``diagnose`` reads them (``decode_file``): the
    events (as rows) and the incidents, ``now_us`` T0."""
    from ingest.decode import decode_file

    segs = []
    for name, text in files.items():
        f = folder / name
        f.write_text(text)
        segs += decode_file(f, relname=name).segments
    b = pipeline.run(Decoded(segments=segs))
    return b.events.to_pylist(), correlate(b.events, b.link_samples, b.topology, now_us=T0)


def _hosts(pipeline, files: dict[str, str]):
    segs = [Segment(data=text.encode(), origin=f"t:{h}", stream=h, host=h, ref_ts=T0, ref_basis="kafka", ingest_ts=T0)
            for h, text in files.items()]
    b = pipeline.run(Decoded(segments=segs))
    return correlate(b.events, b.link_samples, b.topology, now_us=T0)


INIT = ("{host}:{pid}:{pid} [{dev}] NCCL INFO comm 0x55{rank}0f0 rank {rank} nranks {n} cudaDev {dev} nvmlDev {dev} "
        "busId {bus}000 commId 0x7a11e5c0ffee0001 - Init COMPLETE")
TIMEOUT = ("[rank{rank}]:[E1129 03:20:00.03{rank}000000 ProcessGroupNCCL.cpp:616] [Rank {rank}] Watchdog caught "
           "collective operation timeout: WorkNCCL(SeqNum=4242, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
           "Timeout(ms)=600000) ran for 600030 milliseconds before timing out.")


def _job(silent: set[int], n: int = 6, per_host: int = 2, extra: dict[str, str] | None = None) -> dict[str, str]:
    """``n`` ranks, ``per_host`` a host (a1, a2, …), each host's NCCL init lines, a timeout of every rank not in
    ``silent``; ``extra`` lines appended per host."""
    files: dict[str, list[str]] = {}
    for r in range(n):
        host, dev = f"a{r // per_host + 1}", r % per_host
        lines = files.setdefault(host, [])
        lines.append(INIT.format(host=host, pid=1000 + dev, dev=dev, rank=r, n=n, bus=("18", "2a")[dev]))
    for r in range(n):
        if r not in silent:
            files[f"a{r // per_host + 1}"].append(TIMEOUT.format(rank=r))
    for h, line in (extra or {}).items():
        files[h].append(line)
    return {h: "\n".join(lines) for h, lines in files.items()}


def test_the_silent_ranks_of_one_host_name_that_host(pipeline):
    """A host that dies or hangs stops all its ranks: its ranks are the ones that log no timeout for the SeqNum the
    others time out on (formats.md §12.2). The NCCL init lines place them, all on a1: a1 is the initiator (only
    one silent rank was named before; a whole host's were "no culprit: without the communicator's membership",
    membership given: a break-it pass). Silent ranks on two hosts: no single culprit, both hosts the candidates,
    and what is missing is their logs, not the membership."""
    (inc,) = _hosts(pipeline, _job({0, 1}))
    assert (inc["pattern"], inc["category"], inc["initiator"]["host"]) == ("comm.silent_rank", "nccl_hang", "a1")
    assert inc["explanation"].startswith("4 of 6 ranks timed out on SeqNum 4242; the 2 that did not (ranks 0, 1) "
                                         "all ran on a1."), inc["explanation"]
    assert sorted(d["rank"] for d in inc["downstream"]) == [2, 3, 4, 5]
    (inc,) = _hosts(pipeline, _job({1, 4}))
    assert (inc["pattern"], inc["initiator"]["device_type"]) == ("comm.silent_rank", None)
    assert inc["initiator"]["candidates"] == ["a1", "a3"]
    assert "a1 (rank 1); a3 (rank 4)" in inc["explanation"], inc["explanation"]
    assert not any("NCCL init lines" in m for m in inc["missing"]), inc["missing"]
    (inc,) = _hosts(pipeline, _job({3}))  # one silent rank: named, with its host, as before
    assert (inc["initiator"]["rank"], inc["initiator"]["host"]) == (3, "a2")


@pytest.mark.parametrize("group", ["PG 1", "PG ID 0 PG GUID 0(default_pg)"])
def test_a_rank_whose_next_line_names_its_process_group_still_timed_out_with_the_others(pipeline, group):
    """PyTorch 2.2 – 2.3 name a rank's process group only in the line after its timeout ("[PG 1 Rank 8] Exception
    (either an error or timeout) detected by watchdog at work: …"): a rank whose log held it was taken as of another
    group than the ranks whose logs held the timeout line alone, and counted among the ranks that logged no timeout
    (node08 named first, a fresh user's trial). Of one SeqNum, they are one collective (PyTorch 2.4+'s default group,
    "PG ID 0 PG GUID 0(default_pg)", was the default already). The last completed work is said of the ranks only
    when each said it."""
    exc = ("[rank{rank}]:[E1129 03:20:00.04{rank}000000 ProcessGroupNCCL.cpp:1664] [{group} Rank {rank}] Exception "
           "(either an error or timeout) detected by watchdog at work: 4242, last enqueued NCCL work: 4243, last "
           "completed NCCL work: 4241.")
    files = _job({0, 1}, extra={"a3": exc.format(rank=4, group=group)})
    (inc,) = _hosts(pipeline, files)
    assert inc["pattern"] == "comm.silent_rank"
    assert inc["explanation"].startswith("4 of 6 ranks timed out on SeqNum 4242; the 2 that did not (ranks 0, 1) all "
                                         "ran on a1."), inc["explanation"]
    assert inc["initiator"]["host"] == "a1"
    (inc,) = _hosts(pipeline, _job(set(), extra={"a3": exc.format(rank=4, group="PG 1")}))  # every rank timed out
    assert inc["explanation"].startswith(
        "6 ranks (0, 1, 2, 3, 4, 5) timed out on the same collective (SeqNum 4242); every visible rank waited, so none "
        "of them is the cause. "), inc["explanation"]
    each = _job(set())  # each rank said its last completed work
    for r in range(6):
        each[f"a{r // 2 + 1}"] += "\n" + exc.format(rank=r, group="PG 1")
    (inc,) = _hosts(pipeline, each)
    assert "; every visible rank waited, so none of them is the cause, and their last completed work is the same " \
           "(4241)." in inc["explanation"], inc["explanation"]


def test_a_subgroup_on_the_default_groups_seqnum_stays_apart_when_the_default_group_names_itself(pipeline):
    """PyTorch 2.2 – 2.3: the default group's ranks print "[PG 0 Rank N] Exception …", a real subgroup's "[PG 6 Rank
    N] …" on a SeqNum of the same number; the timeout lines name none. The PG 6 ranks were merged into the default
    group's collective ("6 ranks timed out …, none of them is the cause") and a1, whose ranks 0 and 1 never reached
    it, went unnamed (a break-it pass)."""
    exc = ("[rank{rank}]:[E1129 03:20:00.04{rank}000000 ProcessGroupNCCL.cpp:1664] [PG {pg} Rank {rank}] Exception "
           "(either an error or timeout) detected by watchdog at work: 4242, last enqueued NCCL work: 4243, last "
           "completed NCCL work: 4241.")
    files = _job(set())
    for r in range(6):
        files[f"a{r // 2 + 1}"] += "\n" + exc.format(rank=r, pg=6 if r < 2 else 0)
    (inc,) = _hosts(pipeline, files)
    assert inc["explanation"].startswith("4 of 6 ranks timed out on SeqNum 4242; the 2 that did not (ranks 0, 1) all "
                                         "ran on a1."), inc["explanation"]


def test_an_application_xid_on_a_silent_ranks_gpu_is_the_first_fault_of_the_hang(pipeline):
    """A program's own fault (Xid 31, an MMU fault: xid-catalog.csv typical_role application) on the GPU of rank 0,
    at the implied start of the collective its peers then time out on: the Xid is the initiator and the timeouts
    follow it over the communicator (it was left out of the incident while the hang had no culprit: a break-it
    pass). The same Xid on a GPU that holds no rank of the job explains none of its timeouts."""
    xid = ("[Sun Nov 29 03:10:00 2026] NVRM: Xid (PCI:0000:{bus}:00): 31, pid=684430, name=python3, channel "
           "0x00000002, intr 00000000. MMU Fault: ENGINE GRAPHICS GPC1 UNRECOGNIZED_CLIENT faulted @ "
           "0x1827f9_000b4bc0. Fault is of type FAULT_PDE ACCESS_TYPE_VIRT_READ")
    incs = _hosts(pipeline, _job({0, 1}, extra={"a1": xid.format(bus="18")}))
    (inc,) = incs
    assert (inc["initiator"]["host"], inc["initiator"]["device"], inc["initiator"]["xid"]) == ("a1", "0000:18:00.0",
                                                                                                 31)
    assert inc["category"] == "application"
    assert {(d["relation"], d["rank"]) for d in inc["downstream"]} == {("same_comm", r) for r in (2, 3, 4, 5)}
    assert "by rule app_xid.explains_nccl" in inc["explanation"]
    incs = _hosts(pipeline, _job({0, 1}, extra={"a1": xid.format(bus="5e")}))  # a GPU of no rank of the job
    hang = [i for i in incs if i["category"] == "nccl_hang"]
    assert hang and hang[0]["pattern"] == "comm.silent_rank" and hang[0]["initiator"]["host"] == "a1", incs


def test_the_timeouts_of_one_collective_are_one_incident_however_far_apart_their_clocks(pipeline):
    """Ranks 2 and 3's host runs 130 s fast: its timeouts on SeqNum 4242 came 130 s after rank 1's, past the 120 s
    communicator link, and the hang split into two incidents neither of which named the silent rank 0 (a break-it
    pass). The SeqNum within a communicator names one collective (formats.md §12.2): ``same_collective`` links them
    whatever the clocks say, and rank 0 is named. Another SeqNum of the communicator stays apart."""
    files = _job({0}, n=4)
    files["a2"] = files["a2"].replace("03:20:00.03", "03:22:10.03")
    incs = _hosts(pipeline, files)
    (inc,) = incs
    assert (inc["pattern"], inc["initiator"]["rank"], inc["initiator"]["host"]) == ("comm.silent_rank", 0, "a1")
    assert "3 of 4 ranks timed out on SeqNum 4242" in inc["explanation"]
    files["a2"] = files["a2"].replace("SeqNum=4242", "SeqNum=4243")
    assert len(_hosts(pipeline, files)) == 2


def test_the_timeouts_of_one_collective_are_one_incident_without_init_lines(pipeline):
    """Without NCCL_DEBUG=INFO no init line places a rank: every rank's watchdog timeout names the collective it
    waited on, and the ranks of one job print the same one (formats.md §12.2: SeqNum, OpType, NumelIn, NumelOut,
    Timeout). Ray Train's workers on several hosts timing out on one allreduce were one incident per host, each
    "no single culprit" (NVIDIA/nccl#1193, a real-logs pass): one incident of every rank now, and a host's GPU
    fault is the initiator of all of them (``cluster.join_named_collectives``). Another collective (its NumelIn, its
    SeqNum, its process group) stays apart."""
    def files(numel_in: dict[str, int] | None = None, seq: dict[str, int] | None = None) -> dict[str, str]:
        out = {}
        for r in range(5):
            host = f"b{r // 2 + 1}"
            line = TIMEOUT.format(rank=r).replace("NumelIn=1,", f"NumelIn={(numel_in or {}).get(host, 1)},")
            out[host] = (out.get(host, "") + "\n" + line.replace("SeqNum=4242", f"SeqNum={(seq or {}).get(host, 4242)}"))
        return out

    (inc,) = _hosts(pipeline, files())
    assert (inc["pattern"], inc["category"]) == ("comm.silent_rank", "nccl_hang")
    assert inc["explanation"].startswith("5 ranks (0, 1, 2, 3, 4) timed out on the same collective (SeqNum 4242)")
    assert sorted({d["host"] for d in inc["downstream"]}) == ["b1", "b2", "b3"]
    assert len(_hosts(pipeline, files(numel_in={"b3": 2}))) == 2
    assert len(_hosts(pipeline, files(seq={"b2": 4243}))) == 2
    # a job that hangs at its first collective too (a break-it pass); two jobs' start-up barriers minutes apart stay
    # apart by the window (cluster.join_named_collectives' own test)
    assert len(_hosts(pipeline, files(seq={"b1": 1, "b2": 1, "b3": 1}))) == 1
    # nor two process groups that print their GUIDs (Megatron's groups each reach the same SeqNum)
    grouped = {h: re.sub(r"\[Rank (\d+)\] Watchdog", rf"[PG ID 2 PG GUID {h}(TP) Rank \1] Process group watchdog "
                         r"thread terminated with exception: [Rank \1] Watchdog", t) for h, t in files().items()}
    assert all("PG GUID" in t for t in grouped.values()) and len(_hosts(pipeline, grouped)) == 3
    kern = "[Sun Nov 29 03:09:59 2026] NVRM: Xid (PCI:0000:3b:00): 79, pid=0, GPU has fallen off the bus."
    with_xid = files()
    with_xid["b2"] = kern + with_xid["b2"]
    (inc,) = _hosts(pipeline, with_xid)
    assert (inc["category"], inc["initiator"]["host"], inc["initiator"]["xid"]) == ("gpu_off_bus", "b2", 79)
    assert sorted({d["host"] for d in inc["downstream"]}) == ["b1", "b2", "b3"]
    # the other hosts' ranks waited on the collective the Xid stopped: downstream by it, not "a fault of their own"
    # (attribute.collective_edges; a fresh user's trial)
    assert {(d["host"], d["relation"]) for d in inc["downstream"] if d["host"] != "b2"} == {
        ("b1", "same_collective"), ("b3", "same_collective")}, inc["downstream"]
    assert "a fault of their own" not in inc["explanation"]


def test_an_xid_or_sxid_the_catalogs_do_not_hold_gets_an_action_not_a_placeholder(pipeline):
    """A newer driver's Xid (177) or an SXid not in sxid-catalog.csv took its signature's placeholder "from
    xid-catalog.csv per code" as its next action, and that was paged (a break-it pass): it says the code is not in
    the catalog, where to look it up, and what to collect."""
    (inc,) = run(pipeline, "[Mon Nov 30 03:12:01 2026] NVRM: Xid (PCI:0000:3b:00): 177, pid=0, something new.")
    assert inc["next_action"].startswith("Xid 177 is not in this catalog (xid-catalog.csv; a newer driver's code)")
    assert "https://docs.nvidia.com/deploy/xid-errors/" in inc["next_action"] and "per code" not in inc["next_action"]
    (inc,) = run(pipeline, "[Mon Nov 30 03:12:01 2026] nvidia-nvswitch3: SXid (PCI:0000:07:00.0): 99999, Fatal, "
                           "Link 12 something new")
    assert inc["next_action"].startswith("SXid 99999 is not in this catalog (sxid-catalog.csv)"), inc["next_action"]
    (inc,) = run(pipeline, "[Mon Nov 30 03:12:01 2026] NVRM: Xid (PCI:0000:3b:00): 79, pid=0, GPU has fallen off "
                           "the bus.")
    assert "not in this catalog" not in inc["next_action"]  # a known code: the catalog's own action


def test_a_host_is_its_short_name_in_lower_case_whoever_names_it(pipeline):
    """rsyslog's ``$PreserveFQDN on`` writes ``a1.cluster.local kernel: NVRM: Xid …``, NCCL ``a1:1000:1100`` (the
    name up to its first '.', formats.md §11.1), an operator ``A1``: one host (RFC 4343: names are not
    case-sensitive). The Xid 79 stayed apart from its job's timeouts on another host "a1.cluster.local" (a
    break-it pass). Addresses stay whole; an IPv6 address is written one way (RFC 5952), an IPv4-mapped one
    dotted: ``2001:DB8:0:0::1`` and ``2001:db8::1`` were two hosts."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from schemas.hostname import canonical_host

    assert [canonical_host(h) for h in ("A1.Cluster.Local", "a1", "NODE302", "10.0.0.5", "fe80::1", "::ffff:10.0.0.1",
                                        "123.example.com")] == [
        "a1", "a1", "node302", "10.0.0.5", "fe80::1", "::ffff:10.0.0.1", "123.example.com"]
    assert [canonical_host(h) for h in ("2001:DB8:0:0::1", "2001:db8::1", "2001:0db8:0000:0000:0000:0000:0000:0001",
                                        "FE80::0:1%ETH0", "::FFFF:0A00:0001", "::ffff:10.0.0.1", "a:b:c:")] == [
        "2001:db8::1", "2001:db8::1", "2001:db8::1", "fe80::1%eth0", "::ffff:10.0.0.1", "::ffff:10.0.0.1", "a:b:c:"]
    # a port is no part of the host, nor an IPv6 address's brackets (node07:9100 was a host beside node07)
    assert [canonical_host(h) for h in ("node07:9100", "Node07.cluster.local:9100", "10.0.0.5:9092", "[FE80::1]:8080",
                                        "[::1]", "node07:4242:4301", "node07:123456")] == [
        "node07", "node07", "10.0.0.5", "fe80::1", "::1", "node07:4242:4301", "node07:123456"]

    @settings(max_examples=200, deadline=None)
    @given(st.text(max_size=30))
    def idempotent(h: str) -> None:
        assert canonical_host(canonical_host(h)) == canonical_host(h)

    idempotent()
    xid = "2026-11-29T03:10:00.000000+00:00 {} kernel: NVRM: Xid (PCI:0000:18:00): 79, pid=0, GPU has fallen off the bus."
    for name in ("a1.cluster.local", "A1"):
        files = _job({0}, n=4, extra={"a1": xid.format(name)})
        for h, text in files.items():  # the job's hang began at the Xid: its timeouts' implied start
            files[h] = text.replace("03:20:00.03", "03:20:00.00")
        (inc,) = _hosts(pipeline, files)
        assert (inc["initiator"]["host"], inc["initiator"]["xid"]) == ("a1", 79), (name, inc["explanation"])
        assert sorted(d["rank"] for d in inc["downstream"]) == [1, 2, 3]


def _xid149_pair(pipeline, peer_at: str):
    """Two Xid 149 of one GB200 NVL72 domain (rack1): r1's GPU 0008:01:00.0 link 14 down on its peer's side
    (reason 0x25) at ``peer_at`` (HH:MM:SS), r2's GPU 0009:01:00.0 link 3 down for its signal integrity (0x04) at
    03:30:01. Returns r1's line, the pipeline's batch and the correlator settings of the domain."""
    from correlate.correlator import Settings
    from schemas.fleet import HostConfig

    peer = (f"[Sun Nov 29 {peer_at} 2026] NVRM: Xid (PCI:0008:01:00): 149, NETIR_LINK_EVT Fatal XC0 i0 Link 14 "
            "(0x025001c6 0x00000000 0x00000000 0x00000000 0x00000000 0x00000000)")
    local = ("[Sun Nov 29 03:30:01 2026] NVRM: Xid (PCI:0009:01:00): 149, NETIR_LINK_EVT Fatal XC0 i0 Link 03 "
             "(0x004001c6 0x00000000 0x00000000 0x00000000 0x00000000 0x00000000)")
    segs = [Segment(data=t.encode(), origin=f"t:{h}", stream=h, host=h, ref_ts=T0, ref_basis="kafka", ingest_ts=T0)
            for h, t in (("r1", peer), ("r2", local))]
    rack = Settings(hosts={h: HostConfig(platform="NVIDIA GB200", domain="rack1") for h in ("r1", "r2")})
    return peer, pipeline.run(Decoded(segments=segs)), rack


def test_an_xid_149s_link_down_reason_says_which_side_went_down(pipeline):
    """Xid 149 NETIR_LINK_EVT carries its link-down reason in IntrInfo[25:20] (formats.md §2.4): 0x25, the peer side
    went down; 0x04, signal integrity on this side. In one NVL72 domain the GPU whose own link failed is the
    initiator and the one that saw its peer go down follows it; alone, the peer-side report says to look at the far
    end first (neither was read: the earlier of the two was blamed, or no single culprit; a break-it pass)."""
    peer, b, rack = _xid149_pair(pipeline, "03:30:00")
    details = [orjson.loads(d) for d in b.events.column("details").to_pylist()]
    assert [(d["link_down_reason"], d["link_down_cause"]) for d in details] == [
        ("0x25", "peer_side_down"), ("0x04", "signal_integrity")]
    (inc,) = correlate(b.events, b.link_samples, b.topology, now_us=T0, settings=rack)
    assert (inc["initiator"]["host"], inc["initiator"]["link"]) == ("r2", 3)
    assert [(d["host"], d["relation"]) for d in inc["downstream"]] == [("r1", "same_domain")]
    assert "nvlink5.local_link_down_explains_peer_side_down" in inc["explanation"]
    assert "Its link-down reason (0x04) says link 3 went down for its signal integrity, on this side" in \
        inc["explanation"]
    (inc,) = run(pipeline, peer, host="r1")
    assert "Its link-down reason (0x25) says the peer side went down: look at the far end of link 14" in \
        inc["explanation"], inc["explanation"]


def test_a_peer_side_link_down_logged_past_the_skew_bounds_before_its_cause_says_check_the_clocks(pipeline):
    """The two Xid 149 of one NVL72 domain with the peer-side one logged 10 s before the own-side one: past both
    hosts' skew bounds, so no rule may have it follow, and the incident has no single culprit. It said "no rule here
    says that one caused the other" (a break-it pass); the rule that would, but for the times, is named, and a clock
    off by more than its bound as what would make the later one the first fault."""
    _, b, rack = _xid149_pair(pipeline, "03:29:51")
    (inc,) = correlate(b.events, b.link_samples, b.topology, now_us=T0, settings=rack)
    assert inc["initiator"]["device_type"] is None
    assert ("gpu 0008:01:00.0 on r1 came first, 10 s before gpu 0009:01:00.0 on r2, though rule "
            "nvlink5.local_link_down_explains_peer_side_down has it follow gpu 0009:01:00.0 on r2: more apart than the "
            "clocks' skew bounds allow (r1, r2); if a clock was off by more, gpu 0009:01:00.0 on r2 is the first "
            "fault.") in inc["explanation"], inc["explanation"]
    assert "no rule here says" not in inc["explanation"]
    assert any(m.startswith("clock-skew bounds for r1, r2") for m in inc["missing"])


def test_a_fatal_sxid_of_a_domains_switch_explains_its_gpus_peer_side_link_downs(pipeline):
    """A multi-node NVLink domain whose switch logs on a host of its own: its fatal SXid 20034 on port 12, and within
    half a second GPUs of three compute trays report — one link down on its peer's side (Xid 149 reason 0x25), two
    RLW_SRC_TRACK packet losses (Xid 145). The switch is the initiator, over the domain; it and the peer-side
    link-down were two candidates of "no single culprit" (a break-it pass). A GPU's own-side link-down (0x02, signal
    integrity) is no report of the switch: it stays a candidate of its own."""
    from correlate.correlator import Settings
    from schemas.fleet import HostConfig

    def lines(reason: str) -> list[tuple[str, str]]:
        return [("sw1", "[Sun Nov 29 03:30:00 2026] nvidia-nvswitch3: SXid (PCI:0000:07:00.0): 20034, Fatal, Link 12 "
                        "LTSSM Fault Up"),
                ("c3", "[Sun Nov 29 03:29:59 2026] NVRM: Xid (PCI:0018:01:00): 149, NETIR_LINK_EVT Fatal XC0 i0 Link "
                       f"02 ({reason} 0x00000000 0x00000000 0x00000000 0x00000000 0x00000000)")] + [
                (h, f"[Sun Nov 29 03:30:00 2026] NVRM: Xid (PCI:00{b}:01:00): 145, RLW_SRC_TRACK Nonfatal XC0 i0 Link "
                    "03 (0x0409a0c2 0x00000008 0x00000001 0x00000000 0x00100000 0x00000004)")
                for h, b in (("c1", "08"), ("c2", "09"))]

    rack = Settings(hosts={h: HostConfig(domain="nvl72-1") for h in ("sw1", "c1", "c2", "c3")})
    got = {}
    for reason in ("0x025001c6", "0x002001c6"):
        segs = [Segment(data=t.encode(), origin=f"t:{h}", stream=h, host=h, ref_ts=T0, ref_basis="kafka",
                        ingest_ts=T0) for h, t in lines(reason)]
        b = pipeline.run(Decoded(segments=segs))
        (got[reason],) = correlate(b.events, b.link_samples, b.topology, now_us=T0, settings=rack)
    switch = got["0x025001c6"]
    assert (switch["initiator"]["host"], switch["initiator"]["sxid"], switch["category"]) == (
        "sw1", 20034, "nvswitch_fault")
    assert sorted((d["host"], d["relation"]) for d in switch["downstream"]) == [
        ("c1", "same_domain"), ("c2", "same_domain"), ("c3", "same_domain")]
    assert "nvswitch.fatal_explains_domain_nvlink5" in switch["explanation"]
    own = got["0x002001c6"]
    assert own["initiator"]["device_type"] is None and "gpu 0018:01:00.0 on c3 (Xid 149)" in own["explanation"]


def test_a_context_switch_timeout_on_a_ranks_gpu_explains_its_jobs_timeouts(pipeline):
    """Xid 109, a fatal context-switch timeout (xid-catalog.csv: reset the GPU), on rank 0's GPU at the hang's implied
    start: the timeouts follow it over the communicator, as for an Xid 79 or 48 (it reached them only over the
    NVLink domain, at 0.6: a break-it pass)."""
    xid = ("[Sun Nov 29 03:10:00 2026] NVRM: Xid (PCI:0000:18:00): 109, pid=684430, name=python3, channel 0x00000002, "
           "errorString CTX SWITCH TIMEOUT, Info 0x4c00c")
    (inc,) = _hosts(pipeline, _job({0}, n=4, extra={"a1": xid}))
    assert (inc["initiator"]["host"], inc["initiator"]["xid"]) == ("a1", 109)
    assert {(d["relation"], d["rank"]) for d in inc["downstream"]} == {("same_comm", r) for r in (1, 2, 3)}
    assert "device_fault.explains_nccl" in inc["explanation"]


def test_a_report_on_a_host_whose_kernel_lines_name_no_fault_asks_for_more_of_them(pipeline):
    """A reported hang beside two correctable AER lines of the host (no fault): it asked for "the kernel log of node01
    around the reported time", which it had been given (a fresh-user trial). It asks for a longer span of it; a host
    with no kernel line here is still asked for its kernel log."""
    from correlate.correlator import Symptom

    text = ("Sep 19 16:18:04 node01 kernel: [68185.875052] pcieport 0000:00:03.1: AER: Multiple Correctable error "
            "message received from 0000:00:00.0\nSep 19 16:18:04 node01 kernel: [68185.875295] nvidia 0000:07:00.0: "
            "PCIe Bus Error: severity=Correctable, type=Data Link Layer, (Transmitter ID)")
    incs = _with(pipeline, text, [Symptom(host="node01", kind="hang", gpus=["0", "1"])])
    (inc,) = [i for i in incs if i["pattern"] == "operator.symptom_only"]
    assert inc["missing"][0] == ("more of the kernel log of node01: the 2 lines given near the report name no fault "
                                 "(journalctl -k over the hours before it, or since the last boot)")
    incs = _with(pipeline, "", [Symptom(host="node01", kind="hang")])
    assert incs[0]["missing"][0] == "the kernel log of node01 around the reported time"


def test_a_raw_kernel_stamp_counted_back_from_its_files_time_is_said_as_about(pipeline):
    """A raw dmesg stamp (seconds since boot) counted back from the file's modification time was stated as an exact
    time, beside the "at or before" of a line that printed none (a fresh-user trial)."""
    seg = Segment(data=b"[ 1843.308145] NVRM: Xid (PCI:0000:3b:00): 79, pid=0, GPU has fallen off the bus.\n"
                       b"[ 1900.000000] usb 1-1: new high-speed USB device number 2 using xhci_hcd",
                  origin="file:node07.log", stream="file:node07.log", host="node07", ref_ts=T0, ref_basis="file",
                  ingest_ts=T0)
    b = pipeline.run(Decoded(segments=[seg]))
    (inc,) = correlate(b.events, b.link_samples, b.topology, now_us=T0)
    assert "of node07 at about 2027-01-15T07:59:03.308145Z" in inc["explanation"], inc["explanation"]  # 56.69 s before
    assert "(its seconds since boot counted back from its file's time)" in inc["explanation"]
    # and the wall-clock times are what would settle it (nothing asked for dmesg -T: a fresh user's trial)
    assert inc["missing"] == ["wall-clock times for the kernel lines of node07 (dmesg -T, journalctl -k): their raw "
                              "uptime stamps were counted back from the file's modification time, which a copy or a "
                              "later write moves"]


def test_another_jobs_application_xid_does_not_explain_a_ranks_timeout(pipeline):
    """Job A (commId 0xaaa: rank 0 on node07's GPU 1b, rank 1 on node08) hangs; job B (0xbbb: rank 0 on node08,
    rank 1 on node07's GPU 2b) hits an application Xid 13 on node07's 2b. Job A's rank-1 timeout on node08 names no
    GPU: it was of every communicator with a rank on node08, so job B's Xid "explained" it (a break-it pass). Job
    B's rank 1 is on node07, not node08: the timeout is job A's, whose silent rank 0 on node07 is named."""
    a = ("[2026-11-29 02:00:00] node07:100:200 [0] NCCL INFO comm 0x7f01 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId "
         "1b000 commId 0xaaa - Init COMPLETE\n[2026-11-29 02:00:00] node08:100:200 [0] NCCL INFO comm 0x7f02 rank 1 "
         "nranks 2 cudaDev 0 nvmlDev 0 busId 1b000 commId 0xaaa - Init COMPLETE\n[rank1]:[E1129 03:10:00.000000000 "
         "ProcessGroupNCCL.cpp:607] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=50, "
         "OpType=ALLREDUCE, Timeout(ms)=600000) ran for 600060 milliseconds before timing out.")
    b = ("[2026-11-29 02:00:00] node08:300:400 [0] NCCL INFO comm 0x7f03 rank 0 nranks 2 cudaDev 0 nvmlDev 1 busId "
         "2b000 commId 0xbbb - Init COMPLETE\n[2026-11-29 02:00:00] node07:300:400 [0] NCCL INFO comm 0x7f04 rank 1 "
         "nranks 2 cudaDev 0 nvmlDev 1 busId 2b000 commId 0xbbb - Init COMPLETE")
    kern = ("[Sun Nov 29 03:00:00 2026] NVRM: Xid (PCI:0000:2b:00): 13, Graphics SM Warp Exception on (GPC 1, TPC 1, "
            "SM 1): MMU Fault")
    segs = [Segment(data=t.encode(), origin=f"file:{n}", stream=f"file:{n}", host=h, ref_ts=T0, ref_basis="file",
                    ingest_ts=T0) for n, h, t in (("jobA.log", "node08", a), ("jobB.log", "node08", b),
                                                  ("node07.log", "node07", kern))]
    b_ = pipeline.run(Decoded(segments=segs))
    incs = correlate(b_.events, b_.link_samples, b_.topology, now_us=T0)
    hang = [i for i in incs if i["category"] == "nccl_hang"]
    app = [i for i in incs if i["category"] == "application"]
    assert len(hang) == 1 and (hang[0]["initiator"]["rank"], hang[0]["initiator"]["host"]) == (0, "node07"), incs
    assert len(app) == 1 and app[0]["downstream"] == [], app


def test_a_p2p_line_about_a_pair_of_gpus_names_both(pipeline):
    """NCCL's "P2P is disabled between NVLINK connected GPUs 1 and 0" names the second GPU by index only: the incident
    named GPU 1 alone (a fresh-user trial). The init lines map index 0 to its bus id: the initiator's peer."""
    text = ("node51:3052669:3052713 [1] NCCL INFO comm 0x7fdf08000d00 rank 1 nranks 2 cudaDev 1 nvmlDev 1 busId 2a000 "
            "commId 0x1111 - Init START\nnode51:3052668:3052712 [0] NCCL INFO comm 0x7fdf08000d01 rank 0 nranks 2 "
            "cudaDev 0 nvmlDev 0 busId 18000 commId 0x1111 - Init START\nnode51:3052669:3052713 [1] paths.cc:620 NCCL "
            "WARN P2P is disabled between NVLINK connected GPUs 1 and 0. This should not be the case given their "
            "connectivity, and is probably due to a hardware issue. If you still want to proceed, you can set "
            "NCCL_IGNORE_DISABLED_P2P=1.")
    (inc,) = run(pipeline, text, host="node51")
    assert (inc["initiator"]["device"], inc["initiator"]["peer"]) == ("0000:2a:00.0", "0000:18:00.0")


def test_a_gpu_left_needing_a_reset_explains_the_cuda_contexts_that_fail_on_it(pipeline):
    """NV_ERR_RESET_REQUIRED in the kernel log, then nccl-tests cannot make a context ("busy or unavailable",
    scitix/sichek#51): one incident, the driver's state first, the CUDA failure (a line with no time, in a file
    written a few seconds later) downstream by ``gpu_reset_required.explains_cuda_unavailable``, the action a GPU
    reset."""
    kernel = ("[Sun Jan 11 09:52:01 2026] NVRM: rpcRmApiAlloc_GSP: GspRmAlloc failed: hClient=0xc1d1a616; "
              "hParent=0x5c000054; hObject=0x5c00005b; hClass=0x0000c86f; paramsSize=0x00000170; "
              "paramsStatus=0x00000062; status=0x00000062\n"
              "[Sun Jan 11 09:52:01 2026] NVRM: nvAssertOkFailedNoLog: Assertion failed: Reset required "
              "[NV_ERR_RESET_REQUIRED] (0x00000062) returned from status @ kernel_channel.c:2874")
    written = int(datetime(2026, 1, 11, 9, 52, 9, tzinfo=timezone.utc).timestamp() * 1_000_000)
    segs = [Segment(data=text.encode(), origin=f"file:{name}", stream=name, host="node07", ref_ts=written,
                    ref_basis="file", ingest_ts=written)
            for name, text in (("kern.log", kernel),
                               ("nccl-tests.out", "Test CUDA failure common.cu:1007\n"
                                                  "'CUDA-capable device(s) is/are busy or unavailable'"))]
    b = pipeline.run(Decoded(segments=segs))
    (inc,) = correlate(b.events, b.link_samples, b.topology, now_us=written)
    assert (inc["initiator"]["kind"], inc["initiator"]["device_type"], inc["category"]) == (
        "driver", "gpu", "gpu_failure")
    assert [(d["kind"], d["relation"]) for d in inc["downstream"]] == [("cuda_error", "same_host")]
    assert {x["rule"] for x in inc["evidence"]} == {"gpu_reset_required.explains_cuda_unavailable"}
    assert "NV_ERR_RESET_REQUIRED" in inc["next_action"] and "nvidia-smi -r" in inc["next_action"]


def test_an_initiator_chosen_for_its_seriousness_is_not_called_the_earliest(pipeline):
    """Two GPUs of a host fail 20 s apart, no rule between them (NVIDIA/gpu-operator#1146): the Xid 48 was the
    initiator for its role and severity (``rank_key``), but the other GPU's init failure came first; the
    explanation said the Xid 48 was "the earliest fault", then "most serious", naming what came first, in one incident
    that started at the init failure. No rule ties them and the init failure came first: two incidents (README
    "start": only a watchdog timeout starts an incident before its initiator's line), each the earliest of its own."""
    text = ("Dec  2 11:38:27 worker4 kernel: [  199.234935] NVRM: GPU 0000:0a:00.0: rm_init_adapter failed, device "
            "minor number 5\n"
            "Dec  2 11:38:47 worker4 kernel: [  219.470994] NVRM: Xid (PCI:0000:07:00): 48, pid='<unknown>', "
            "name=<unknown>, An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at "
            "physAddr 0x7fffa8860")
    init, inc = run(pipeline, text)
    assert (init["initiator"]["device"], init["category"], init["start"]) == (
        "0000:0a:00.0", "gpu_failure", "2026-12-02T11:38:27.000000Z")
    assert (inc["initiator"]["device"], inc["initiator"]["xid"], inc["start"]) == (
        "0000:07:00.0", 48, "2026-12-02T11:38:47.000000Z")
    assert (inc["downstream"], inc["context"]) == ([], [])
    assert "is the earliest fault nothing else explains" in inc["explanation"]
    assert "0000:0a:00.0" not in inc["explanation"]
    # alone, or first, it is the earliest, as before
    (alone,) = run(pipeline, text.split("\n")[1])
    assert "is the earliest fault nothing else explains" in alone["explanation"]


PEER_LOST = """node22:183006:183220 [1] misc/socket.cc:518 NCCL WARN Net : Call to recv from 10.0.0.247<58355> failed : Broken pipe
node22:183006:183220 [1] NCCL INFO misc/socket.cc:535 -> 6
node22:183006:183220 [1] proxy.cc:1119 NCCL WARN [Proxy Service 9] Failed to execute operation Connect from rank 9, retcode 6
node22:183006:183181 [1] misc/socket.cc:538 NCCL WARN Net : Connection closed by remote peer 10.0.0.248<47861>"""


def test_ranks_that_only_report_a_lost_peer_name_no_culprit_of_their_own(pipeline):
    """A rank's connection closed or reset and nothing of its own failed (NVIDIA/nccl#795: a peer segfaulted):
    the roots fallback named the reporting GPU at 0.75. No single culprit, the peers named as the suspects, low
    confidence, their logs asked for — and a fault of the host's own (an Xid 79) still comes first."""
    (inc,) = run(pipeline, PEER_LOST, host="node22")
    assert (inc["pattern"], inc["category"], inc["initiator"]["device_type"], inc["initiator"]["host"]) == (
        "comm.peer_failed", "other", None, None)
    assert inc["initiator"]["candidates"] == ["the peer at 10.0.0.247", "the peer at 10.0.0.248"]
    assert inc["confidence"] < 0.5 and "10.0.0.247" in inc["missing"][0]
    assert "is not the suspect" in inc["next_action"]
    # the operator's report stays in the incident, as a party of the host (its key is the pseudo-initiator's)
    from correlate.correlator import Symptom
    seg = Segment(data=PEER_LOST.encode(), origin="t:node22", stream="node22", host="node22", ref_ts=T0,
                  ref_basis="kafka", ingest_ts=T0)
    b = pipeline.run(Decoded(segments=[seg]))
    (said,) = correlate(b.events, b.link_samples, b.topology, now_us=T0, symptoms=[Symptom(host="node22", kind="hang")])
    assert said["pattern"] == "comm.peer_failed"
    assert any(e.startswith("symptom-node22-") for d in said["downstream"] for e in d["events"])
    # a fault of the rank's own (its watchdog caught a CUDA error) is the initiator, the lost peer follows it
    own = ("[2027-01-15 07:59:59] [rank1]:[E115 07:59:59.000000000 ProcessGroupNCCL.cpp:1595] [PG ID 0 PG GUID "
           "0(default_pg) Rank 1] Process group watchdog thread terminated with exception: CUDA error: an illegal "
           "memory access was encountered\n"
           "[2027-01-15 08:00:01] node22:183006:183220 [1] misc/socket.cc:518 NCCL WARN Net : Call to recv from "
           "10.0.0.247<58355> failed : Connection reset by peer")
    (cuda,) = run(pipeline, own, host="node22")
    assert (cuda["pattern"], cuda["initiator"]["kind"]) == ("roots", "cuda_error")
    # the host's own GPU fell off the bus ten seconds before the file's time (the lines' upper bound): it is the
    # initiator, the lost connections its downstream
    xid79 = "[Fri Jan 15 07:59:50 2027] NVRM: Xid (PCI:0000:10:00): 79, pid=0, GPU has fallen off the bus."
    (own,) = run(pipeline, xid79 + "\n" + PEER_LOST, host="node22")
    assert (own["pattern"], own["initiator"]["xid"]) == ("roots", 79)
    assert {d["kind"] for d in own["downstream"]} == {"nccl_error"}
    # a peer that is the reporting host itself, by its FQDN (NVIDIA/nccl#795's second line): no suspect beside the
    # remote one; alone, another process of the host
    mine = PEER_LOST.replace("10.0.0.248<47861>", "node22.cluster-a.pcluster<47861>")
    (inc,) = run(pipeline, mine, host="node22")
    assert inc["initiator"]["candidates"] == ["the peer at 10.0.0.247"]
    (inc,) = run(pipeline, mine.split("\n")[-1], host="node22")
    assert inc["initiator"]["candidates"] == ["another process on node22"]
    # what is missing is that host's other processes' logs, not "which host is that" (pytorch/pytorch#124380)
    assert inc["missing"][0].startswith("the logs of the other processes on node22"), inc["missing"]


def test_the_device_plugins_xid_line_names_the_gpu_by_its_uuid(pipeline):
    """k8s-device-plugin's "XidCriticalError: Xid=69 on Device=GPU-…" (k8s-device-plugin#189) is an Xid event of
    that GPU: an application Xid, said with the UUID the line gives ("on None" and "nvidia-smi -q -i None" were
    written for a GPU with no bus id)."""
    uuid = "GPU-7540a9b3-eeb9-1214-1526-f93c9ea826a8"
    (inc,) = run(pipeline, f"2020/08/10 19:09:42 XidCriticalError: Xid=69 on Device={uuid}, the device will go "
                           "unhealthy.")
    assert (inc["pattern"], inc["initiator"]["xid"], inc["severity"]) == ("benign.application_xid", 69, "info")
    assert f"Xid 69 on {uuid} (node07)" in inc["explanation"] and inc["verify"][0].startswith(f"nvidia-smi -q -i {uuid}")


def test_a_contained_cuda_error_follows_the_nvlink_xid_of_its_host(pipeline):
    """cudaErrorContained ("Invalid access of peer GPU memory over nvlink or a hardware error", daydreamlive/scope
    #749) names no GPU: the host's Xid 74 of the same minute is the initiator, the CUDA error downstream by
    ``gpu_hw.explains_cuda_nvlink_error``; alone an error (a gpu_failure) of an unnamed GPU: an Xid 94's
    containment (restart the application) ends this way as much as a link's."""
    cuda = "torch.AcceleratorError: CUDA error: Invalid access of peer GPU memory over nvlink or a hardware error"
    (alone,) = run(pipeline, cuda)
    assert (alone["category"], alone["severity"], alone["initiator"]["kind"]) == ("gpu_failure", "error",
                                                                                 "cuda_error")
    xid74 = XID74.format(s=1, bus="18", link=3).replace("Mon Nov 30 03:12:0", "Fri Jan 15 07:59:5")
    (inc,) = run(pipeline, xid74 + "\n" + cuda)
    assert (inc["initiator"]["xid"], inc["initiator"]["device"]) == (74, "0000:18:00.0")
    assert {x["rule"] for x in inc["evidence"]} == {"gpu_hw.explains_cuda_nvlink_error"}


def test_a_gsp_heartbeat_timeout_is_a_critical_gsp_fault_of_the_gpu_the_driver_numbers(pipeline):
    """The RM's GSP heartbeat timeout and memory subsystem error, with no Xid line (NVIDIA/open-gpu-kernel-modules
    #1230), made no event: a critical gsp_error, the driver's GPU number kept (details.rm_gpu) and used in the
    action to find the GPU (the line names no bus id)."""
    text = ("[   24.302465] NVRM: GPU6 _kgspIsHeartbeatTimedOut: Heartbeat timed out, currentTimeMs 812751949 heartbeat "
            "1899482 heartbeatWithOffsetMs 812745879 diff 6070 timeout 5200\n"
            "[   84.300480] NVRM: GPU6 kgmmuCheckMemSubsysError_IMPL: Memory Subsystem Error detected. "
            "kbusSendSysmembarSingle failed.")
    (inc,) = run(pipeline, text)
    assert (inc["category"], inc["severity"], inc["initiator"]["kind"]) == ("gsp_error", "critical", "gsp_error")
    assert "GPU6, most often /dev/nvidia6 but not always" in inc["next_action"] and len(inc["initiator"]["events"]) == 2


def test_a_gpu_fault_that_names_no_gpu_is_of_the_gpu_whose_recovery_action_changed(pipeline):
    """GSP's heartbeat lines without the RM's "GPU<n>" (NVIDIA/open-gpu-kernel-modules#1200), then Xid 154 on
    0000:01:00: the initiator was "an unnamed GPU" beside the Xid 154's GPU, which "no rule ties" to it, and the
    action and verify commands printed "GPU<rm_gpu>" (a real-logs pass). The fault is of the GPU whose recovery
    action the driver changed, and a text's optional part (``[[…]]``) is dropped when the line lacks its field."""
    text = ("NVRM: _kgspIsHeartbeatTimedOut: Heartbeat timed out, currentTimeMs 3175895033 heartbeat 19834604 "
            "heartbeatWithOffsetMs 3175815351 diff 79682 timeout 5200\n"
            "NVRM: Xid (PCI:0000:01:00): 154, GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset Required)")
    (inc,) = run(pipeline, text)
    assert (inc["initiator"]["device"], inc["initiator"]["kind"], inc["downstream"]) == ("0000:01:00.0", "gsp_error",
                                                                                         [])
    assert len(inc["initiator"]["events"]) == 2
    assert "<" not in inc["next_action"] and not any("<" in v for v in inc["verify"])
    assert "Find it (`nvidia-smi --query-gpu=index,minor_number,pci.bus_id --format=csv`)" in inc["next_action"]
    # two GPUs' recovery actions changed: which one the unnamed line is of, nothing says
    other = text + "\nNVRM: Xid (PCI:0000:02:00): 154, GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset " \
                   "Required)"
    (two,) = run(pipeline, other)
    assert two["initiator"]["device"] is None


def test_an_nvml_double_bit_ecc_event_names_the_gpu_another_line_gave_and_asks_for_it_otherwise(pipeline):
    """The device plugin's NVML event (k8s-device-plugin#1014) names a handle, not a GPU: alone, its action asks for
    the GPU (a placeholder); with the host's nvidia-smi row showing Volatile Uncorr. ECC on one GPU, the action names
    that GPU, not "find the GPU" (a fresh user's trial of samples/fleet node036)."""
    event = ("I1025 02:19:08.002792       1 health.go:151] Skipping non-nvmlEventTypeXidCriticalError event: "
             "{Device:{Handle:0x7f0dcf40bdf8} EventType:2 EventData:0 GpuInstanceId:4294967295 ComputeInstanceId:"
             "4294967295}")
    (alone,) = run(pipeline, event)
    assert "ECC error on GPU <bus id> (the one nvidia-smi shows" in alone["next_action"]
    row = "|   0  NVIDIA H100 80GB HBM3          On  | 00000000:1A:00.0 Off |                    2 |"
    (named,) = run(pipeline, event + "\n" + row)
    assert named["initiator"]["device"] == "0000:1a:00.0"
    assert "ECC error on GPU 0000:1a:00.0 (the one" in named["next_action"] and "<" not in named["next_action"]
    assert "Find the GPU" not in named["next_action"]
    # the plugin keeps the GPU out of the allocatable count until it restarts: the same fault (corpus 036)
    assert "until the plugin's pod restarts: the same fault, not a second one" in named["next_action"]


def test_an_initiator_dated_only_by_its_record_is_not_said_to_follow_what_came_before_its_bound(pipeline):
    """An HCA's catastrophic error from an NCCL release that names no device and prints no time (NVIDIA/nccl#230)
    is the initiator; a beside fault stamped ten seconds before the record's time did not clearly come first (the
    line was written then or earlier): no "came first". Its verify command asks for the HCA's name, not a bus id."""
    text = ("node07:815:864 [0] transport/net_ib.cu:80 NCCL WARN NET/IB : Got async event : local catastrophic error\n"
            "[Fri Jan 15 07:59:50 2027] NVRM: Xid (PCI:0000:1a:00): 13, pid=7, name=python, Graphics SM Warp "
            "Exception on (GPC 1, TPC 0, SM 0): Out Of Range Address")
    got = run(pipeline, text)
    (inc,) = [i for i in got if i["initiator"]["kind"] == "ib_port"]
    assert inc["severity"] == "critical" and "at or before" in inc["explanation"]
    assert "came first" not in inc["explanation"] and "most serious" not in inc["explanation"]
    assert "ibstat <HCA, e.g. mlx5_0>" in inc["verify"]


def test_a_gpu_named_by_its_uuid_alone_is_that_gpu_not_any_other_of_its_host(pipeline):
    """The device plugin names a GPU by its UUID (k8s-device-plugin#189). With the driver's preamble mapping that
    UUID to a bus id, the plugin's Xid joins the kernel's Xid of that GPU; a line naming another UUID is another GPU,
    not merged into the one GPU of the host that logged an Xid (a break-it pass: an Xid 48 on GPU-2222… was counted
    as the Xid 79 GPU's second line)."""
    same = "GPU-7540a9b3-eeb9-1214-1526-f93c9ea826a8"
    other = "GPU-22222222-eeb9-1214-1526-f93c9ea826a8"
    kernel = (f"[Fri Jan 15 07:59:50 2027] NVRM: GPU at PCI:0000:10:00: {same}\n"
              "[Fri Jan 15 07:59:50 2027] NVRM: Xid (PCI:0000:10:00): 79, pid=0, GPU has fallen off the bus.\n")
    (inc,) = run(pipeline, kernel + f"2027/01/15 07:59:51 XidCriticalError: Xid=79 on Device={same}, the device "
                                    "will go unhealthy.")
    assert inc["initiator"]["device"] == "0000:10:00.0" and len(inc["initiator"]["events"]) == 2
    got = run(pipeline, kernel + f"2027/01/15 07:59:51 XidCriticalError: Xid=48 on Device={other}, the device will "
                                 "go unhealthy.")
    parties = {(p["device"], p["xid"]) for i in got for p in [i["initiator"], *i["downstream"]]}
    assert ("0000:10:00.0", 79) in parties and (other, 48) in parties


def test_a_gpu_named_by_its_uuid_is_the_gpu_a_preamble_of_days_before_gave_that_uuid(pipeline):
    """The driver prints "GPU at PCI:…: GPU-…" once, before a GPU's first Xid since boot; the device plugin names
    the GPU by that UUID at every later Xid. The mapping is a fact of the host, not of one incident: a preamble four
    days before the plugin's line maps it to its bus id (akash-network/support#244: the plugin's Xid 94 stayed on
    "gpu GPU-3b6ec030-…", a second suspect beside the kernel's Xid 94)."""
    uuid = "GPU-3b6ec030-5adc-1847-e155-79f635584b4e"
    kernel = (f"[Mon Jan 11 03:54:13 2027] NVRM: GPU at PCI:0000:00:07: {uuid}\n"
              "[Mon Jan 11 03:54:13 2027] NVRM: Xid (PCI:0000:00:07): 31, pid=2512125, name=python3.10, Ch 00000008, "
              "intr 00000000. MMU Fault: ENGINE GRAPHICS GPCCLIENT_T1_8 faulted @ 0x73ac_1c000000. Fault is of type "
              "FAULT_PDE ACCESS_TYPE_VIRT_WRITE\n")
    plugin = f"2027/01/15 07:59:51 XidCriticalError: Xid=48 on Device={uuid}, the device will go unhealthy."
    got = run(pipeline, kernel + plugin)
    (inc,) = [i for i in got if i["initiator"]["xid"] == 48]
    assert inc["initiator"]["device"] == "0000:00:07.0"
    (inc,) = run(pipeline, plugin)
    assert inc["initiator"]["device"] == uuid


def test_a_flushed_infiniband_completion_reports_its_peer(pipeline):
    """NCCL's "Got completion from peer … with status=5" (IBV_WC_WR_FLUSH_ERR: the queue pair was already in error)
    beside ncclRemoteError: the first error is the peer's (areal-project/AReaL#3: the reporting rank was the initiator
    at 0.75, "the earliest fault nothing else explains"). A completion error of its own first (status 12, retry
    exceeded: its link or the peer's) keeps the host a suspect."""
    flushed = ("[2027-01-15 08:00:01] node22:43581:43700 [4] transport/net_ib.cc:1696 NCCL WARN NET/IB : Got "
               "completion from peer 10.10.11.9<51354> with status={status} opcode=0 len=0 vendor err 249 (Recv) "
               "localGid ::ffff:10.10.15.1 remoteGids::ffff:10.10.14.4")
    remote = ("[2027-01-15 08:00:02] [rank12]:[E115 08:00:02.855233166 ProcessGroupNCCL.cpp:1534] [PG 134 Rank 1] "
              "Process group watchdog thread terminated with exception: NCCL error: remote process exited or there "
              "was a network error, NCCL version 2.22.3")
    (inc,) = run(pipeline, flushed.format(status=5) + "\n" + remote, host="node22")
    assert (inc["pattern"], inc["initiator"]["candidates"]) == ("comm.peer_failed", ["the peer at 10.10.11.9"])
    (own,) = run(pipeline, flushed.format(status=12) + "\n" + remote, host="node22")
    assert own["pattern"] != "comm.peer_failed" and own["initiator"]["host"] == "node22", own["pattern"]


def test_a_framework_error_raised_from_a_lost_peer_is_that_report(pipeline):
    """NCCL 2.7's "Net : Connection closed by remote peer" (no peer named) and PyTorch's "NCCL error: unhandled
    system error" after it (pytorch/elastic#134: another worker had been killed): the NCCL WARN explains the
    PyTorch error, which is no fault of the rank's own — the peer went away. The survivor was the initiator at
    0.75 (a real-logs pass). A framework error no report explains keeps the rank a suspect."""
    closed = ("[2027-01-15 08:00:01] multigpu:141:158 [0] include/socket.h:416 NCCL WARN Net : Connection closed by "
              "remote peer")
    raised = "[2027-01-15 08:00:02] RuntimeError: NCCL error: unhandled system error, NCCL version 2.7.8"
    (inc,) = run(pipeline, closed + "\n" + raised, host="multigpu")
    assert (inc["pattern"], inc["initiator"]["candidates"]) == ("comm.peer_failed", ["another rank of the job"])
    (own,) = run(pipeline, raised, host="multigpu")
    assert own["pattern"] != "comm.peer_failed" and own["initiator"]["host"] == "multigpu", own["pattern"]
    # a CUDA error of the rank's own is no lost peer's, whatever another process's WARN beside it says (a break-it
    # pass: "unhandled cuda error" and another pid's "Connection closed by remote peer" were "a peer went away")
    cuda = "[2027-01-15 08:00:01] RuntimeError: NCCL error: unhandled cuda error, NCCL version 2.7.8"
    other = ("[2027-01-15 08:00:02] multigpu:142:159 [1] include/socket.h:416 NCCL WARN Net : Connection closed by "
             "remote peer")
    incs = run(pipeline, cuda + "\n" + other, host="multigpu")
    assert all(i["pattern"] != "comm.peer_failed" for i in incs), [i["pattern"] for i in incs]
    # NCCL's "internal error" is how a remote peer's error surfaces (NVIDIA/nccl#795, #1514: a second break-it pass)
    internal = "[2027-01-15 08:00:02] RuntimeError: NCCL error: internal error, NCCL version 2.14.3"
    (inc,) = run(pipeline, closed + "\n" + internal, host="multigpu")
    assert inc["pattern"] == "comm.peer_failed", inc["pattern"]


@pytest.mark.parametrize("line, peer", [
    ("2019-05-19 15:08:13.128241: E tensorflow/core/common_runtime/ring_reducer.cc:369] Aborting RingReduce with "
     "Unavailable: Socket closed", True),
    ("2019-05-19 15:08:13.128241: E tensorflow/core/common_runtime/ring_reducer.cc:369] Aborting RingReduce with "
     "Deadline Exceeded: deadline exceeded", False),
    ("2023-01-15 08:00:02 OSError: (External) NCCL error(6), remote process exited or there was a network error.",
     True),
    ("2023-01-15 08:00:02 [1,1]<stderr>:RuntimeError: ncclCommInitRank failed: remote process exited or there was a "
     "network error", True),
    ("2023-01-15 08:00:02 [1,1]<stderr>:RuntimeError: ncclCommInitRank failed: invalid usage", False)])
def test_other_frameworks_reports_of_a_lost_peer_name_the_peer(pipeline, line, peer):
    """TensorFlow's collective abort on a closed socket (tensorflow/tensorflow#28891: a MultiWorkerMirroredStrategy
    peer failed) and PaddlePaddle's and Horovod's "remote process exited" report that a peer went away, as PyTorch's
    and XLA's do: "only downstream reports" before (a real-logs pass). Their other reasons stay the rank's own."""
    (inc,) = run(pipeline, line, host="worker3")
    assert (inc["pattern"] == "comm.peer_failed") is peer, inc["pattern"]
    if peer:
        assert inc["initiator"]["candidates"] == ["another rank of the job"]


def test_ranks_in_different_collectives_at_one_seqnum_are_out_of_step(pipeline):
    """NVIDIA/nccl#1409: rank 7 timed out in a BROADCAST and rank 3 in an ALLREDUCE, both SeqNum 80078 of the default
    process group — the program issued a collective on some ranks only; it was told to find the silent rank. The
    same collective on both stays a hang whose silent rank is sought."""
    line = ("[rank{r}]:[E816 01:45:40.183009389 ProcessGroupNCCL.cpp:607] [Rank {r}] Watchdog caught collective "
            "operation timeout: WorkNCCL(SeqNum=80078, OpType={op}, NumelIn=5056, NumelOut=5056, Timeout(ms)=600000) "
            "ran for 600026 milliseconds before timing out.")
    (inc,) = run(pipeline, "\n".join([line.format(r=7, op="BROADCAST"), line.format(r=3, op="ALLREDUCE")]))
    assert (inc["pattern"], inc["category"]) == ("comm.out_of_step", "application"), inc["explanation"]
    assert "ALLREDUCE of 5,056 elements on rank 3; BROADCAST of 5,056 elements on rank 7" in inc["explanation"]
    assert "TORCH_DISTRIBUTED_DEBUG=DETAIL" in inc["next_action"]
    (same,) = run(pipeline, "\n".join([line.format(r=7, op="ALLREDUCE"), line.format(r=3, op="ALLREDUCE")]))
    assert same["pattern"] == "comm.silent_rank", same["pattern"]
    # one OpType of two sizes (modelscope/ms-swift#10183: BROADCAST of 64 and of 24,084,544 elements at SeqNum 7219,
    # ranks sent into different broadcasts by a bug of the program; a real-logs pass); an all-to-all's counts are per
    # rank and say nothing
    sized = line.replace("NumelIn=5056, NumelOut=5056", "NumelIn={n}, NumelOut={n}")
    (bcast,) = run(pipeline, "\n".join([sized.format(r=2, op="BROADCAST", n=24084544),
                                        sized.format(r=3, op="BROADCAST", n=64)]))
    assert bcast["pattern"] == "comm.out_of_step" and "BROADCAST of 64 elements on rank 3" in bcast["explanation"]
    (a2a,) = run(pipeline, "\n".join([sized.format(r=2, op="ALLTOALL_BASE", n=100),
                                      sized.format(r=3, op="ALLTOALL_BASE", n=64)]))
    assert a2a["pattern"] == "comm.silent_rank", a2a["pattern"]
    # one rank in two of them: two process groups (two jobs of a host), not one out of step (a break-it pass)
    two = [sized.format(r=r, op="BROADCAST", n=n) for n in (100, 200) for r in (0, 1)]
    assert all(i["pattern"] != "comm.out_of_step" for i in run(pipeline, "\n".join(two)))


def test_a_full_dev_shm_is_the_initiator_and_its_peers_reports_follow(pipeline):
    """NCCL's shared-memory buffers live in /dev/shm: when it is full (pytorch/ci-infra#490, NVIDIA/nccl#525) the
    rank that says so is the initiator, a configuration fault (nccl_software) whose action is about /dev/shm, and
    another rank's generic NCCL warning of the same job follows it by ``nccl_shm.explains_nccl``; a second rank's
    own /dev/shm failure is a report of the same cause, not explained by the first."""
    shm = ("[2026-04-22 21:34:20] node07:202016:202235 [0] misc/shmutils.cc:88 NCCL WARN Error: failed to extend "
           "/dev/shm/nccl-WU88OE to 9637892 bytes, error: No space left on device (28)")
    warn = ("[2026-04-22 21:34:21] node07:202018:202240 [2] proxy.cc:1326 NCCL WARN Socket recv failed while polling "
            "for opId=0x7fb582222f90")
    (inc,) = run(pipeline, shm + "\n" + warn)
    assert (inc["category"], inc["initiator"]["gpu_index"], inc["initiator"]["kind"]) == ("nccl_software", 0,
                                                                                         "nccl_error")
    assert "/dev/shm" in inc["next_action"] and "NCCL_SHM_DISABLE=1" in inc["next_action"]
    assert [d["gpu_index"] for d in inc["downstream"]] == [2]
    assert {x["rule"] for x in inc["evidence"]} == {"nccl_shm.explains_nccl"}


def test_peer_access_unsupported_is_a_p2p_configuration_not_a_gpu_fault(pipeline):
    """CUDA error 217 from NCCL's P2P or SHM transport (NVIDIA/nccl#1838, ray_lightning#24): the GPUs cannot reach
    each other's memory and NCCL chose a path that needs it: a pcie_p2p initiator whose action keeps NCCL off peer
    access; the rank's NCCL error that follows is downstream (``p2p_unsupported.explains_nccl``)."""
    p2p = ("[2025-09-09 23:51:24] node07:774:854 [0] transport/shm.cc:590 NCCL WARN Cuda failure 217 'peer access is "
           "not supported between these two devices'")
    after = "[2025-09-09 23:51:24] node07:774:855 [1] init.cc:1401 NCCL WARN ncclCommInitRank failed: unhandled cuda error"
    (inc,) = run(pipeline, p2p + "\n" + after)
    assert (inc["category"], inc["initiator"]["kind"], inc["initiator"]["gpu_index"]) == ("pcie_p2p", "cuda_error", 0)
    assert "NCCL_P2P_DISABLE=1" in inc["next_action"] and "Not a GPU fault" in inc["next_action"]
    assert {x["rule"] for x in inc["evidence"]} == {"p2p_unsupported.explains_nccl"}


def test_a_gpu_nvml_cannot_reach_is_lost_as_one_that_fell_off_the_bus(pipeline):
    """nvidia-smi's "Unable to determine the device handle for GPU0000:03:00.0: Unknown Error" (rwth-i6/returnn
    #1484, open-gpu-kernel-modules#387: fixed by reseating the GPU) made no event: a hung job's host then had
    "nothing names a cause". It is a gpu_off_bus fault of that GPU; "Not Found" (a GPU never initialised) is not."""
    (inc,) = run(pipeline, "Unable to determine the device handle for GPU0000:03:00.0: Unknown Error")
    assert (inc["category"], inc["severity"], inc["initiator"]["device"]) == ("gpu_off_bus", "critical",
                                                                              "0000:03:00.0")
    (never,) = run(pipeline, "Unable to determine the device handle for GPU 0000:01:00.0: Not Found")
    assert (never["category"], never["initiator"]["kind"]) == ("gpu_failure", "gpu_init_failed")


def test_a_gpu_nvml_does_not_find_was_never_initialised_and_its_kernel_log_says_why(pipeline):
    """nvidia-smi's "Unable to determine the device handle for gpu 0000:01:00.0: Not Found" (NVIDIA/open-gpu-kernel-
    modules#246: the open module of 515.43.04 never brought the GPU up; the proprietary one did) made no event and
    diagnose said "nothing in these logs is a fault". It is the per-GPU "No devices were found": an error of that
    GPU's initialisation, not a GPU off the bus; with the kernel's GSP-RM failure of the same GPU before it, that
    failure is the initiator and nvidia-smi's line downstream."""
    smi = "Unable to determine the device handle for gpu 0000:01:00.0: Not Found"
    (alone,) = run(pipeline, smi)
    assert (alone["category"], alone["severity"], alone["initiator"]["kind"], alone["initiator"]["device"]) == (
        "gpu_failure", "error", "gpu_init_failed", "0000:01:00.0")
    assert "never initialised" in alone["next_action"]
    gsp = ("[Fri Jan 15 07:59:50 2027] NVRM: RmInitAdapter: Cannot initialize GSP firmware RM\n"
           "[Fri Jan 15 07:59:50 2027] NVRM: GPU 0000:01:00.0: RmInitAdapter failed! (0x62:0x25:2015)")
    (inc,) = run(pipeline, gsp + "\n" + smi)
    assert (inc["category"], inc["initiator"]["kind"], inc["initiator"]["device"]) == (
        "gsp_error", "gsp_error", "0000:01:00.0")
    assert "NVreg_EnableGpuFirmware" in inc["next_action"]


def test_a_fatal_xid_explains_the_reset_required_of_its_host(pipeline):
    """An Xid 79 leaves its GPU needing a reset: the RM's NV_ERR_RESET_REQUIRED a minute later (it names the GPU
    by the driver's own number only) follows it by ``gpu_fault.explains_reset_required``, not a second fault
    "no rule ties" to it."""
    xid = "[Fri Jan 15 07:59:50 2027] NVRM: Xid (PCI:0000:1a:00): 79, pid=0, GPU has fallen off the bus."
    reset = ("[Fri Jan 15 08:00:50 2027] NVRM: GPU0 nvCheckOkFailedNoLog: Check failed: Reset required "
             "[NV_ERR_RESET_REQUIRED] (0x00000062) returned from pRmApi->Control(pRmApi, RES_GET_CLIENT_HANDLE(pKernelChannel)")
    (inc,) = run(pipeline, xid + "\n" + reset)
    assert (inc["initiator"]["xid"], inc["initiator"]["device"]) == (79, "0000:1a:00.0")
    assert {x["rule"] for x in inc["evidence"]} == {"gpu_fault.explains_reset_required"}


def test_an_explains_rule_applies_as_far_as_its_window_past_the_links(pipeline):
    """Clustering joins two faults of a host only within its links (``same_host``: 120 s), and an explains rule only
    acts inside one candidate incident: a rule with a longer window never applied past the link. The Xid 109 of
    open-gpu-kernel-modules#1045 and its NV_ERR_RESET_REQUIRED 10 min 24 s later were two incidents, as were the
    reset-required line and a CUDA context that failed on the GPU five minutes after it (scitix/sichek#51). Each
    such rule adds a link of its own (``rules.reach``): the effect joins its nearest cause, as far as the rule's
    window and no farther."""
    xid = "Jun 12 16:21:26 box kernel: NVRM: Xid (PCI:0000:01:00): 109, channel 0x00000009, errorString CTX SWITCH TIMEOUT, Info 0xb400b"
    reset = ("Jun 12 16:31:50 box kernel: NVRM: GPU0 nvCheckOkFailedNoLog: Check failed: Reset required "
             "[NV_ERR_RESET_REQUIRED] (0x00000062) returned from _gpushareddataSendDataPollRpc(pGpu, polled)")
    cuda = "Jun 12 16:36:50 box python[4242]: RuntimeError: CUDA error: CUDA-capable device(s) is/are busy or unavailable"
    (inc,) = run(pipeline, "\n".join([xid, reset, cuda]), host="box")
    assert (inc["initiator"]["xid"], inc["initiator"]["device"]) == (109, "0000:01:00.0")
    # the reset-required line names the GPU by the driver's number, which no line here maps to a bus id
    assert [d["kind"] for d in inc["downstream"]] == ["driver", "cuda_error"]
    assert {x["rule"] for x in inc["evidence"]} == {"gpu_fault.explains_reset_required",
                                                    "gpu_reset_required.explains_cuda_unavailable"}
    # past the rule's window (an hour), the same lines are incidents of their own
    late = reset.replace("Jun 12 16:31:50", "Jun 12 17:31:50")
    assert len(run(pipeline, "\n".join([xid, late]), host="box")) == 2


def test_every_explains_rule_is_reached_by_clustering():
    """An explains rule can only act on two faults clustering puts in one incident: for each rule and each of its
    relations, some link of that relation (or ``same_host``, for a relation within one host) reaches the rule's
    window, undirected or derived from the rule itself (``rules.reach``)."""
    from correlate.rules import KEYED_RELATIONS, ONE_HOST_RELATIONS, Rules, default_rules

    rules = default_rules()
    derived = {(l.from_rule, l.relation) for l in rules.links if l.from_rule}
    assert ("gpu_reset_required.explains_cuda_unavailable", "same_host") in derived
    assert ("fabric_manager.explains_nvls", "same_host") in derived
    for r in rules.explains:
        for rel in r.relations:
            if rel not in KEYED_RELATIONS or (rel in ONE_HOST_RELATIONS and "same_host" in r.relations):
                continue
            assert any(l.window_s >= r.window_s and (l.relation == rel or (
                rel in ONE_HOST_RELATIONS and l.relation == "same_host")) and (
                l.from_rule == r.id or (l.from_rule is None and l.kinds is None)) for l in rules.links), (r.id, rel)
    # validating the rules again derives the same links, not a second copy of them
    assert Rules.model_validate(rules.model_dump()).links == rules.links


def test_ranks_whose_watchdog_got_stuck_hung_without_a_collective_named(pipeline):
    """PyTorch's heartbeat monitor stops a rank whose NCCL watchdog itself made no progress (LlamaFactory#8549: two
    ranks, a data-loading setting, no GPU fault): a hang of those ranks, no initiator; no SeqNum is printed, so the
    explanation says they hung (not "timed out on … SeqNum") and the next action is the line's own (a stack of a
    stuck rank), not "the rank that did not log a watchdog timeout for this SeqNum"."""
    line = ("[rank{r}]:[E704 13:48:58.26049472{r} ProcessGroupNCCL.cpp:1746] [PG ID 0 PG GUID 0(default_pg) Rank {r}] "
            "ProcessGroupNCCL's watchdog got stuck for 480 seconds without making progress in monitoring enqueued "
            "collectives. This typically indicates a NCCL/CUDA API (e.g., CudaEventDestroy) hang blocking the watchdog")
    (inc,) = run(pipeline, line.format(r=2) + "\n" + line.format(r=1), host="node07")
    assert (inc["category"], inc["pattern"], inc["initiator"]["kind"]) == ("nccl_hang", "comm.silent_rank", None)
    assert inc["explanation"].startswith("2 ranks (1, 2) hung in the same collective;")
    assert "py-spy dump" in inc["next_action"] and "SeqNum" not in inc["next_action"]
    assert "480 s" in inc["next_action"]


def test_a_gpu_nvidia_smi_cannot_reach_explains_the_timeouts_of_the_jobs_own_file(pipeline):
    """Two files of one host and no line with a time of its own (lyulyul/shine-cluster#171): the job's log (its
    mtime when it died) holds three ranks' watchdog timeouts, begun 30 min before; nvidia-smi, run 15 min after
    the job died, cannot reach the GPU at 1c. Each line was written at its file's time or earlier, so the lost GPU
    may well be what hung the collective: one incident, the GPU first, the timeouts downstream. They were two."""
    died = int(datetime(2023, 5, 4, 10, 20, tzinfo=timezone.utc).timestamp() * 1_000_000)
    smi = died + 14 * 60 * 1_000_000 + 41_000_000
    timeout = ("[E ProcessGroupNCCL.cpp:737] [Rank {r}] Watchdog caught collective operation timeout: "
               "WorkNCCL(SeqNum=86645, OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 180{r}320 milliseconds before "
               "timing out.")
    segs = [Segment(data=text.encode(), origin=f"file:{name}", stream=name, host="hoth", ref_ts=t, ref_basis="file",
                    ingest_ts=t)
            for name, text, t in (("train.log", "\n".join(timeout.format(r=r) for r in (2, 3, 1)), died),
                                  ("nvidia-smi.txt", "Unable to determine the device handle for GPU 0000:1C:00.0: "
                                                     "Unknown Error", smi))]
    b = pipeline.run(Decoded(segments=segs))
    (inc,) = correlate(b.events, b.link_samples, b.topology, now_us=smi)
    assert (inc["initiator"]["device"], inc["category"]) == ("0000:1c:00.0", "gpu_off_bus")
    assert sorted(d["rank"] for d in inc["downstream"]) == [1, 2, 3]
    assert {x["rule"] for x in inc["evidence"]} == {"device_fault.explains_nccl"}
    # more than an hour (FILE_REACH_US) after the collectives began, the two files stay apart
    far = [Segment(data=x.data, origin=x.origin, stream=x.stream, host="hoth", ref_ts=x.ref_ts + (3600_000_000 if
                   x.stream == "nvidia-smi.txt" else 0), ref_basis="file", ingest_ts=x.ingest_ts) for x in segs]
    b = pipeline.run(Decoded(segments=far))
    assert len(correlate(b.events, b.link_samples, b.topology, now_us=smi + 3600_000_000)) == 2
    # job logs 50 min apart, each related to the next: joined pairwise they chained into one incident of hours (a
    # break-it pass); what joins so spans at most an hour
    logs = [Segment(data=timeout.format(r=1).encode(), origin=f"file:job{k}.log", stream=f"job{k}.log", host="hoth",
                    ref_ts=died + k * 3000_000_000, ref_basis="file", ingest_ts=died) for k in range(4)]
    b = pipeline.run(Decoded(segments=logs))
    incs = correlate(b.events, b.link_samples, b.topology, now_us=died + 4 * 3000_000_000)
    assert [(i["start"][:16], len(i["events"]) if "events" in i else sum(len(d["events"]) for d in i["downstream"]))
            for i in incs] == [("2023-05-04T09:49", 2), ("2023-05-04T11:29", 2)]


def test_the_explanation_counts_every_line_of_the_initiator_and_names_what_it_said(pipeline):
    """A GPU's lines are one party: Bumblebee-Project/Bumblebee#677's Xid 32 twice (one event, count 2) and an Xid 31
    were told as "it reported 2 lines" (events, not lines), the Xid 31 nowhere. The lines are counted and, when the
    initiator said more than one thing, named."""
    x32 = "[Mon Nov 30 03:12:01 2026] NVRM: Xid (PCI:0000:01:00): 32, Channel ID 00000000 intr 00004000"
    x31 = "[Mon Nov 30 03:12:01 2026] NVRM: Xid (PCI:0000:01:00): 31, Ch 00000003, engmask 00000101, intr 10000000"
    (inc,) = run(pipeline, "\n".join([x32, x32, x31]))
    assert inc["initiator"]["xid"] == 32 and inc["downstream"] == []
    assert inc["explanation"].endswith("; it reported 3 lines (Xid 32 ×2, Xid 31).")
    (inc,) = run(pipeline, "\n".join([x32, x32]))
    assert inc["explanation"].endswith("; it reported 2 lines.")


def test_a_rank_still_on_an_earlier_collective_is_told_as_behind(pipeline):
    """Two ranks of one process group time out on consecutive SeqNums (vllm-project/vllm#23448): rank 0 on 5730, rank 3
    still on 5729. Without membership no silent rank is named, but the one behind is where to look; whichever line
    comes first, the explanation is about the latest collective and names the rank behind it."""
    line = ("[rank{r}]:[E822 16:31:16.13193166{r} ProcessGroupNCCL.cpp:632] [Rank {r}] Watchdog caught collective "
            "operation timeout: WorkNCCL(SeqNum={q}, OpType=BROADCAST, NumelIn=3612672, NumelOut=3612672, "
            "Timeout(ms)=600000) ran for 600009 milliseconds before timing out.")
    a, b = line.format(r=0, q=5730), line.format(r=3, q=5729)
    for text in (a + "\n" + b, b + "\n" + a):
        (inc,) = run(pipeline, text)
        assert inc["explanation"].startswith("rank 0 timed out on a collective (SeqNum 5730)")
        assert "; rank 3 is behind, still on SeqNum 5729: look there first." in inc["explanation"]


def test_a_driver_of_two_versions_is_the_fault_not_the_gpu_it_cannot_start(pipeline):
    """ublue-os/bazzite#2668: the libraries were updated, the kernel module not: "NVRM: API mismatch", then the GSP
    firmware of the module's version is missing, then RmInitAdapter failed. The GPU was named with "reset …, RMA";
    the fault is the driver installation (``driver_install.explains_init_failure``), which a reboot or a reinstall
    mends. Also for the mismatch alone on a syslog line with rsyslog's "#012" newlines (stackhpc#287)."""
    text = "\n".join([
        "[Mon Nov 30 03:12:01 2026] NVRM: API mismatch: the client has the version 570.153.02, but",
        "               NVRM: this kernel module has the version 570.144.  Please",
        "[Mon Nov 30 03:12:12 2026] nvidia 0000:07:00.0: Direct firmware load for nvidia/570.144/gsp_ga10x.bin failed "
        "with error -2",
        "[Mon Nov 30 03:12:12 2026] NVRM: RmFetchGspRmImages: No firmware image found",
        "[Mon Nov 30 03:12:12 2026] NVRM: GPU 0000:07:00.0: RmInitAdapter failed! (0x61:0x56:1770)"])
    (inc,) = run(pipeline, text)
    assert inc["category"] == "driver" and inc["initiator"]["kind"] == "driver"
    assert "The GPU is not at fault" in inc["next_action"] and "RMA" not in inc["next_action"]
    # the host's driver (the mismatch, and the firmware line that names no GPU) is the initiator, not the one GPU that
    # cannot start (its party took the host's lines in before: attribute.HOST_CATEGORIES); the GPU follows it
    assert inc["explanation"].endswith("it reported 2 lines (driver.api_mismatch, driver.firmware_missing).")
    assert inc["initiator"]["device"] is None and [d["device"] for d in inc["downstream"]] == ["0000:07:00.0"]
    # two GPUs that cannot start: the host's mismatch explains both
    two = text.split("\n")[0] + "\n" + "\n".join(
        f"[Mon Nov 30 03:12:12 2026] NVRM: GPU 0000:0{b}:00.0: RmInitAdapter failed! (0x61:0x56:1770)" for b in (7, 8))
    (inc,) = run(pipeline, two)
    assert (inc["category"], inc["initiator"]["device"]) == ("driver", None)
    assert [d["device"] for d in inc["downstream"]] == ["0000:07:00.0", "0000:08:00.0"]
    assert [x["rule"] for x in inc["evidence"]] == ["driver_install.explains_init_failure"] * 2
    # ten minutes later too: the mismatch stands until the driver is installed again (a break-it pass: "no single
    # culprit" with an NCCL action)
    (late,) = run(pipeline, two.replace("03:12:12 2026", "03:22:12 2026"))
    assert (late["category"], late["initiator"]["device"]) == ("driver", None), late
    # ... also with each GPU's firmware line (it follows from the mismatch: they were three candidates, a break-it pass)
    fw = "[Mon Nov 30 03:12:12 2026] nvidia 0000:0{b}:00.0: Direct firmware load for nvidia/570.144/gsp_ga10x.bin failed with error -2"
    (inc,) = run(pipeline, two + "\n" + "\n".join(fw.format(b=b) for b in (7, 8)))
    assert (inc["category"], inc["initiator"]["device"], len(inc["downstream"])) == ("driver", None, 2)
    assert {x["rule"] for x in inc["evidence"]} == {"driver_install.explains_init_failure",
                                                    "driver_mismatch.explains_firmware_missing"}
    # a mismatch (nvidia-smi of another version) after a GPU's Xid 109 takes nothing from it, nor explains a program's
    # illegal memory access (a break-it pass)
    x109 = ("[Mon Nov 30 03:11:01 2026] NVRM: Xid (PCI:0000:07:00): 109, pid=1, name=python, channel 0x00000009, "
            "errorString CTX SWITCH TIMEOUT, Info 0xb400b")
    incs = run(pipeline, x109 + "\n" + text.split("\n")[0].replace("03:12:01", "03:11:30"))
    assert [i["initiator"]["xid"] for i in incs][:1] == [109]
    ima = "Nov 30 03:12:40 node07 python[4242]: RuntimeError: CUDA error: an illegal memory access was encountered"
    (inc,) = run(pipeline, text.split("\n")[0] + "\n" + ima)
    assert not inc["evidence"]


def test_a_driver_of_the_wrong_flavour_or_version_is_the_fault_not_the_gpu(pipeline):
    """The kernel module of the wrong flavour for the GPU (NVIDIA/open-gpu-kernel-modules#1027: a Blackwell GPU "requires
    use of the NVIDIA open kernel modules"; #587: an H100 "not supported by open nvidia.ko" without its GSP
    firmware), and the version mismatch told from user space by NVML (lyulyul/shine-cluster#30): each was a GPU init
    failure with "… RMA", a GPU off the bus, or no event at all (a real-logs pass). The message's lines join when
    indented under the first's journal header or dmesg stamp, as journalctl and dmesg print them."""
    journal = "\n".join([
        "May 11 19:25:29 homecomp kernel: NVRM: The NVIDIA GPU 0000:01:00.0 (PCI ID: 10de:2b85)",
        "                                 NVRM: installed in this system requires use of the NVIDIA open kernel modules.",
        "May 11 19:25:29 homecomp kernel: NVRM: GPU 0000:01:00.0: RmInitAdapter failed! (0x22:0x56:1017)"])
    dmesg = "\n".join([
        "[  160.877997] NVRM: The NVIDIA GPU 0000:01:00.0 (PCI ID: 10de:2331)",
        "               NVRM: installed in this system is not supported by open",
        "               NVRM: nvidia.ko because it does not include the required GPU",
        "               NVRM: System Processor (GSP).",
        "[  166.261422] nvidia: probe of 0000:01:00.0 failed with error -1",
        "[  166.261517] NVRM: The NVIDIA probe routine failed for 1 device(s)."])
    # (each signature's own action says which flavour to install)
    for text, says in ((journal, "install the open flavour"), (dmesg, "install the proprietary flavour")):
        (inc,) = run(pipeline, text)
        assert (inc["category"], inc["initiator"]["kind"], inc["initiator"]["device"]) == (
            "driver", "driver", "0000:01:00.0"), inc
        assert says in inc["next_action"] and "RMA" not in inc["next_action"], inc["next_action"]
    assert [x["rule"] for x in inc["evidence"]] == ["driver_install.explains_init_failure"]  # the probe failure
    # a journal line indented otherwise (here by two blanks) is a line of its own, not a continuation: it names no
    # host (the stream's, node07), and homecomp's GPU is not told the driver's
    incs = run(pipeline, journal.replace(" " * 33 + "NVRM: installed", "  NVRM: installed"))
    # (a GPU that does not start is a GPU failure: attribute.KIND_CATEGORY)
    assert sorted((i["initiator"]["host"], i["category"]) for i in incs) == [("homecomp", "gpu_failure"),
                                                                             ("node07", "driver")]
    # journalctl's other forms, rsyslog's ISO stamps (an offset after a blank too), and kern.log's one header per line,
    # whose second line alone says it, naming no GPU (a break-it pass on this test's first cut: none was read)
    second = "NVRM: installed in this system requires use of the NVIDIA open kernel modules."
    for header in ("May 11 19:25:29.123456 homecomp kernel: ", "[  160.877997] homecomp kernel: ",
                   "Sun 2025-05-11 19:25:29 CEST homecomp kernel: ", "2025-05-11T19:25:29+0200 homecomp kernel: ",
                   "2025-05-11 19:25:29.123 +02:00 homecomp kernel: "):
        text = (header + "NVRM: The NVIDIA GPU 0000:01:00.0 (PCI ID: 10de:2b85)\n" + " " * len(header) + second + "\n"
                + header + "NVRM: GPU 0000:01:00.0: RmInitAdapter failed! (0x22:0x56:1017)")
        (inc,) = run(pipeline, text)
        assert (inc["category"], inc["initiator"]["device"]) == ("driver", "0000:01:00.0"), (header, inc)
    kern = "\n".join(["May 11 19:25:29 homecomp kernel: NVRM: The NVIDIA GPU 0000:01:00.0 (PCI ID: 10de:2b85)",
                      "May 11 19:25:29 homecomp kernel: " + second,
                      "May 11 19:25:29 homecomp kernel: NVRM: GPU 0000:01:00.0: RmInitAdapter failed! (0x22:0x56:1017)"])
    (inc,) = run(pipeline, kern)
    assert (inc["category"], inc["initiator"]["device"]) == ("driver", None), inc
    assert [d["device"] for d in inc["downstream"]] == ["0000:01:00.0"] and "RMA" not in inc["next_action"]
    nvml = "\n".join(["Failed to initialize NVML: Driver/library version mismatch",
                      "RuntimeError: CUDA error: all CUDA-capable devices are busy or unavailable"])
    (inc,) = run(pipeline, nvml)
    assert (inc["category"], inc["initiator"]["kind"], inc["initiator"]["device"]) == ("driver", "driver", None)
    assert "The GPU is not at fault" in inc["next_action"]
    syslog = ("Jun 30 11:07:05 gpu-0 kernel: NVRM: API mismatch: the client has the version 535.54.03, but#012NVRM: this "
              "kernel module has the version 530.30.02.  Please#012NVRM: make sure that this kernel module and all NVIDIA "
              "driver#012NVRM: components have the same version.")
    (inc,) = run(pipeline, syslog)
    assert (inc["category"], inc["initiator"]["host"]) == ("driver", "gpu-0")


def test_one_line_names_the_initiator_its_explanation_and_its_action(pipeline):
    """A GPU's Xid 74 on link 8, then its Xid 79: the initiator was "link 8 (Xid 79)", its explanation "Xid 74 … is the
    earliest fault" and its action Xid 74's (reset the GPU, check the peer), which a GPU off the bus cannot take
    (a real-logs pass). One event names all three (``attribute.initiator_event``): the Xid 79, on no link; the
    explanation says the Xid 74 came first. Likewise an Xid 13 before the same GPU's Xid 109 (leptonai/gpud#46)."""
    x74 = ("[Fri Aug 30 11:43:09 2024] NVRM: Xid (PCI:0000:48:00): 74, pid=22884, name=VLLM::Worker_TP, NVLink: fatal "
           "error detected on link 8(0x0, 0x0, 0x10000, 0x0, 0x0, 0x0, 0x0)")
    x79 = "[Fri Aug 30 11:43:14 2024] NVRM: Xid (PCI:0000:48:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus."
    (inc,) = run(pipeline, x74 + "\n" + x79)
    assert (inc["initiator"]["xid"], inc["initiator"]["link"], inc["initiator"]["links"]) == (79, None, [8])
    assert inc["category"] == "gpu_off_bus" and inc["next_action"].startswith("Drain node and reboot (cold)")
    assert inc["explanation"].startswith(
        "gpu 0000:48:00.0 of node07 is the earliest fault nothing else explains: its first line Xid 74 at "
        "2024-08-30T11:43:09.000000Z, its most serious Xid 79 (GPU has fallen off the bus) at 2024-08-30T11:43:14")
    x13 = ("[Fri Aug 30 11:43:09 2024] NVRM: Xid (PCI:0000:cb:00): 13, Graphics SM Warp Exception on (GPC 0, TPC 0, SM 0): "
           "Illegal Instruction Parameter")
    x109 = ("[Fri Aug 30 11:43:14 2024] NVRM: Xid (PCI:0000:cb:00): 109, pid=1234, name=python, channel 0x00000009, "
            "errorString CTX SWITCH TIMEOUT, Info 0xb400b")
    (inc,) = run(pipeline, x13 + "\n" + x109)
    assert inc["initiator"]["xid"] == 109 and "its first line Xid 13 at 2024-08-30T11:43:09" in inc["explanation"]
    (inc,) = run(pipeline, x109)  # one line: as before
    assert inc["explanation"].startswith("Xid 109 (Context switch timeout) on gpu 0000:cb:00.0 of node07 at")


def test_a_gpu_nvml_cannot_reach_is_said_as_such_and_its_cooling_checked(pipeline):
    """nvidia-smi's "Unable to determine the device handle … Unknown Error" is of kind gpu_off_bus, and its explanation
    said "the GPU fell off the bus", which the line does not say (the signature's ``says`` names it); a GPU that
    overheats is lost the same way (a passive card without airflow, pdbear/syno_nvidia_gpu_driver#22)."""
    (inc,) = run(pipeline, "Unable to determine the device handle for GPU0000:07:00.0: Unknown Error")
    assert inc["explanation"].startswith("gpu_off_bus (NVML cannot reach the GPU) on gpu 0000:07:00.0")
    assert "its cooling" in inc["next_action"] and "nvidia-smi -q -d TEMPERATURE" in inc["verify"]


def test_an_sxid_gets_something_to_do(pipeline):
    """An SXid's next action was its catalog meaning alone (SXid 12028, leptonai/gpud#338: "non-fatal per the FM
    guide", nothing to do), though NVSentinel's mapping resets the fabric for it. The action says what to do by
    NVSentinel's action, and whose word it is when the FM guide calls the SXid non-fatal; every action code of the
    catalog has its advice."""
    import csv

    from correlate.incident import SXID_ACTIONS
    from ingest.catalog import CATALOG_DIR

    line = ("kern  :err   : 2025-01-25T10:34:54,859532+00:00 nvidia-nvswitch1: SXid (PCI:0000:84:00.0): 12028, Data "
            "{0x000001c0, 0x00bd5c8a, 0x00000500, 0x00000064, 0x00000000, 0x40008000, 0x5a001100, 0x00000000, 0x00000000}")
    (inc,) = run(pipeline, line)
    assert inc["initiator"]["sxid"] == 12028
    assert "non-fatal per the FM guide. NVSentinel counts it fatal: drain the node's jobs, then reset the fabric" in (
        inc["next_action"])
    # fatal by the FM guide though NVSentinel ignores it (SXid 22010, MINION watchdog): no "nothing to do" (break-it)
    (inc,) = run(pipeline, line.replace("12028", "22010"))
    assert "The FM guide counts it fatal: drain the node's jobs" in inc["next_action"], inc["next_action"]
    assert "Nothing to do" not in inc["next_action"]
    with (CATALOG_DIR / "sxid-catalog.csv").open(newline="", encoding="utf-8") as f:
        codes = {r["nvsentinel_action"].partition("/")[0] for r in csv.DictReader(f)} - {""}
    assert codes <= set(SXID_ACTIONS)


def test_an_sxid_action_follows_what_its_line_says_over_the_catalogs_class(pipeline):
    """The driver prints each SXid Fatal, Non-fatal or Correctable (formats.md, NVSwitch SXid), and 33 codes are
    "fatal-or-non-fatal" in the catalog: the line's word decides for the report in hand. A catalog non-fatal code the
    line calls Fatal is not "nothing to do"; the header says the line's word when it differs from the catalog's."""
    line = "[Mon Nov 30 03:12:01 2026] nvidia-nvswitch2: SXid (PCI:0000:07:00.0): {code}, {word}, Link 12 {what}"
    either = {"code": 11017, "what": "ingress remap table ECC DBE error"}
    (fatal,) = run(pipeline, line.format(word="Fatal", **either))
    assert "(NPORT_INGRESS_REMAPTAB_ECC_DBE_ERR, fatal-or-non-fatal; this line: Fatal)" in fatal["next_action"]
    assert "It may stall NVLink traffic" in fatal["next_action"] and "NVSentinel counts" not in fatal["next_action"]
    (non,) = run(pipeline, line.format(word="Non-fatal", **either))
    assert "this line: Non-fatal)" in non["next_action"] and "NVSentinel counts it fatal: it may" in non["next_action"]
    ignored = {"code": 10001, "what": "PRI WRITE SYS error"}  # non-fatal in the catalog, IGNORE by NVSentinel
    (said,) = run(pipeline, line.format(word="Fatal", **ignored))
    assert "(HOST_PRIV_ERROR, non-fatal; this line: Fatal)" in said["next_action"]
    assert "The line says Fatal: drain the node's jobs" in said["next_action"] and "Nothing to do" not in said[
        "next_action"]
    (calm,) = run(pipeline, line.format(word="Non-fatal", **ignored))
    assert "(HOST_PRIV_ERROR, non-fatal):" in calm["next_action"] and "Nothing to do for the switch now" in calm[
        "next_action"]


def test_timeouts_of_other_process_groups_or_collectives_are_told_apart(pipeline):
    """SeqNums count within a process group (a break-it pass): PG 6's rank 2 (global rank 34) on its SeqNum 1 was
    "behind" the default group's ranks on 5000; ranks whose watchdog got stuck hid rank 0's timeout on SeqNum 100;
    a work count of -1 read as "their last completed work is the same (-1)"."""
    fail = ("[rank{g}]:[E108 16:19:09.61830271{g} ProcessGroupNCCL.cpp:2251] [PG ID {p} PG GUID {guid} Rank {r}]  failure "
            "detected by watchdog at work sequence id: {q} PG status: last enqueued work: {q}, last completed work: {c}")
    text = "\n".join([fail.format(g=0, p=0, guid="0(default_pg)", r=0, q=5000, c=4999),
                      fail.format(g=1, p=0, guid="0(default_pg)", r=1, q=5000, c=4999),
                      fail.format(g=34, p=6, guid="623(PIPELINE_MODEL_PARALLEL_GROUP)", r=2, q=1, c=0)])
    (inc,) = run(pipeline, text)
    assert "behind" not in inc["explanation"]
    assert inc["explanation"].startswith(
        "2 ranks (0, 1) timed out on the same collective (SeqNum 5000); every visible rank waited, so none of them is "
        "the cause, and their last completed work is the same (4999); also rank 2 (global rank 34) on SeqNum 1.")
    text = "\n".join(fail.format(g=g, p=6, guid="623(PIPELINE_MODEL_PARALLEL_GROUP)", r=r, q=1, c=-1)
                     for g, r in ((202, 12), (218, 13)))
    (inc,) = run(pipeline, text)
    assert inc["explanation"].startswith(
        "2 ranks (12 (global rank 202), 13 (global rank 218)) timed out on the same collective (SeqNum 1) of process "
        "group 623(PIPELINE_MODEL_PARALLEL_GROUP); every visible rank waited, so none of them is the cause, and none "
        "of them had completed any work yet.")
    stuck = ("[rank{r}]:[E704 13:48:58.26049472{r} ProcessGroupNCCL.cpp:1746] [PG ID 0 PG GUID 0(default_pg) Rank {r}] "
             "ProcessGroupNCCL's watchdog got stuck for 480 seconds without making progress in monitoring enqueued "
             "collectives.")
    text = "\n".join([stuck.format(r=2), stuck.format(r=3), fail.format(g=0, p=0, guid="0(default_pg)", r=0, q=100,
                                                                          c=99).replace("E108 16:19:09", "E704 13:48:58")])
    (inc,) = run(pipeline, text)
    assert "2 ranks (2, 3) hung in the same collective" in inc["explanation"]
    assert "; also rank 0 on SeqNum 100." in inc["explanation"]
    # one process's two lines about one collective, only one printing its group (Megatron-Bridge#2053): one rank
    text = ("[rank218]:[E108 16:19:09.618225457 ProcessGroupNCCL.cpp:685] [Rank 13] Watchdog caught collective operation "
            "timeout: WorkNCCL(SeqNum=1, OpType=COALESCED, NumelIn=0, NumelOut=0, Timeout(ms)=600000) ran for 636397 "
            "milliseconds before timing out.\n" + fail.format(g=218, p=6, guid="623(PIPELINE_MODEL_PARALLEL_GROUP)",
                                                                r=13, q=1, c=-1))
    (inc,) = run(pipeline, text)
    assert inc["explanation"].startswith("rank 13 (global rank 218) timed out on a collective (SeqNum 1) of process "
                                         "group 623(PIPELINE_MODEL_PARALLEL_GROUP): it waited for another rank")
    assert "also" not in inc["explanation"]


def test_candidates_that_all_report_one_fault_get_its_action(pipeline):
    """Every rank of a node fails its /dev/shm together (pytorch/ci-infra#490): two ranks' "No space left on device"
    are two candidates no edge orders, and the incident had the generic "collect the kernel log" as its action (a
    break-it pass). When the unexplained faults are one fault on every candidate, its catalog action is the next
    action, said to apply to each; two different faults keep the generic one."""
    line = ("[2026-04-22 21:34:20] node07:20201{r}:20223{r} [{r}] misc/shmutils.cc:88 NCCL WARN Error: failed to extend "
            "/dev/shm/nccl-WU88O{r} to 9637892 bytes, error: No space left on device (28)")
    (inc,) = run(pipeline, line.format(r=0) + "\n" + line.format(r=1))
    assert (inc["pattern"], inc["category"], len(inc["initiator"]["candidates"])) == ("unknown", "nccl_software", 2)
    assert inc["next_action"].startswith("Every candidate reports the same fault (nccl.shm.no_space). NCCL could not")
    p2p = ("[2026-04-22 21:34:20] node07:774:854 [1] transport/shm.cc:590 NCCL WARN Cuda failure 217 'peer access is "
           "not supported between these two devices'")
    got = run(pipeline, line.format(r=0) + "\n" + p2p)
    assert all(not i["next_action"].startswith("Every candidate") for i in got)


def test_an_operators_report_stays_a_party_of_an_incident_with_no_single_culprit(pipeline):
    """An incident with no single culprit (two GPUs' unrelated Xid 79 in one second) and the operator's report of
    the host's failure: the report is a downstream party of the host. It vanished (a fresh-user trial): the
    no-culprit verdict passed its parties the host's own key, (host, None, None), as the initiator's, and a
    host-level report has that key."""
    from correlate.correlator import Symptom

    text = ("[Fri Jan 15 07:59:50 2027] NVRM: Xid (PCI:0000:1a:00): 79, pid=0, GPU has fallen off the bus.\n"
            "[Fri Jan 15 07:59:50 2027] NVRM: Xid (PCI:0000:2a:00): 79, pid=0, GPU has fallen off the bus.")
    (inc,) = _with(pipeline, text, [Symptom(host="node01", kind="failure")])
    assert inc["pattern"] == "unknown" and len(inc["initiator"]["candidates"]) == 2
    # one fault on both: its action, and the checks of each GPU (a second break-it pass: the first GPU's alone)
    assert inc["next_action"].startswith("Every candidate reports the same fault (Xid 79).")
    assert {"lspci -s 0000:1a:00.0 -vv", "lspci -s 0000:2a:00.0 -vv"} <= set(inc["verify"]), inc["verify"]
    assert [(p["host"], p["device"]) for p in inc["downstream"] if p["device"] is None] == [("node01", None)]


def test_a_different_fault_of_the_same_gpu_is_no_recurrence(pipeline):
    """The explanation says a fault recurred only for an earlier incident of the same fault on the same initiator:
    an application's Xid 13 two hours before the GPU's Xid 79 is in ``recurrence.previous`` (same initiator) but is
    no recurrence of the fall off the bus (a second break-it pass: "It recurred" beside "RMA if it recurs"); a second
    Xid 79 is."""
    xid13 = ("[Fri Jan 15 05:59:50 2027] NVRM: Xid (PCI:0000:1a:00): 13, pid=1234, name=python, Graphics SM Warp "
             "Exception on (GPC 0, TPC 0, SM 0): Out Of Range Address")
    xid79 = "[Fri Jan 15 {h}:59:50 2027] NVRM: Xid (PCI:0000:1a:00): 79, pid=0, GPU has fallen off the bus."
    got = run(pipeline, xid13 + "\n" + xid79.format(h="07"))
    (fall,) = [i for i in got if i["initiator"]["xid"] == 79]
    assert fall["recurrence"]["previous"] and "recurred" not in fall["explanation"]
    got = run(pipeline, xid79.format(h="05") + "\n" + xid79.format(h="07"))
    (again,) = [i for i in got if i["recurrence"]["previous"]]
    assert "It recurred: 1 earlier incident(s) had the same fault on the same initiator" in again["explanation"]
    # its action says so too: the catalog's "if it repeats" step is now; an application's Xid before it is not counted
    assert again["next_action"].endswith(" It failed before: 1 earlier incident(s) of this gpu (Xid 79), the first at "
                                         "2027-01-15T05:59:50.000000Z: the step for a fault that repeats applies now.")
    assert "failed before" not in fall["next_action"]


def test_a_fault_timed_only_by_its_files_time_is_no_recurrence(pipeline):
    """A node condition that repeats the Xid 95 its kernel log printed months before (``kubectl describe node``, no
    time of its own: timed by the file, an upper bound) was a second incident "It recurred: 1 earlier incident(s)",
    and would be again at every capture (a break-it pass). It may be the earlier one seen again: listed under
    ``recurrence``, not called one; a second stamped Xid 95 still is."""
    stamped = ("[Mon Mar  9 06:11:10 2026] NVRM: Xid (PCI:0000:16:00): 95, pid=0, name=x, Uncontained memory error on "
               "GPU")
    segs = [Segment(data=stamped.encode(), origin="file:kern.log", stream="file:kern.log", host="node07",
                    ref_ts=T0, ref_basis="file", ingest_ts=T0),
            Segment(data=b"NVRM: Xid (PCI:0000:16:00): 95, pid=0, name=x, Uncontained memory error on GPU",
                    origin="file:describe.txt", stream="file:describe.txt", host="node07", ref_ts=T0,
                    ref_basis="file", ingest_ts=T0)]
    b = pipeline.run(Decoded(segments=segs))
    got = sorted(correlate(b.events, b.link_samples, b.topology, now_us=T0), key=lambda i: i["start"])
    assert len(got) == 2 and got[1]["recurrence"]["previous"] == [got[0]["id"]]
    assert "recurred" not in got[1]["explanation"] and "failed before" not in got[1]["next_action"]
    # a Kafka record's append time is no such bound: a line shipped as written recurs (a second break-it pass)
    segs[1] = Segment(data=segs[1].data, origin="kafka:fleet.dmesg/0/7", stream="fleet.dmesg/0/node07", host="node07",
                      ref_ts=T0, ref_basis="kafka", ingest_ts=T0)
    b = pipeline.run(Decoded(segments=segs))
    got = sorted(correlate(b.events, b.link_samples, b.topology, now_us=T0), key=lambda i: i["start"])
    assert "It recurred: 1 earlier incident(s)" in got[1]["explanation"]
    segs[1] = Segment(data=stamped.replace("Mar  9", "Mar 10").encode(), origin="file:kern.log.1",
                      stream="file:kern.log.1", host="node07", ref_ts=T0, ref_basis="file", ingest_ts=T0)
    b = pipeline.run(Decoded(segments=segs))
    got = sorted(correlate(b.events, b.link_samples, b.topology, now_us=T0), key=lambda i: i["start"])
    assert "It recurred: 1 earlier incident(s)" in got[1]["explanation"]


def test_a_serious_fault_after_another_of_the_same_gpu_takes_the_step_for_a_repeat(pipeline):
    """An RTX PRO 6000's Xid 62 (PMU halt) with Xid 154, then two days later its Xid 120 (GSP error) with Xid 154
    (NVIDIA developer forums, "Xid 62 / Xid 154 GSP PMU halt crash on RTX PRO 6000 Blackwell": it needed a power cycle
    each time): each incident read "… if it repeats" (a real-logs pass). The second says the GPU failed before."""
    text = "\n".join([
        "Mar 27 17:40:36 kern kernel: NVRM: Xid (PCI:0000:01:00): 62, 1f0c(2f9c) 00000000 00000000",
        "Mar 27 17:40:37 kern kernel: NVRM: Xid (PCI:0000:01:00): 154, GPU recovery action changed from 0x0 (None) to "
        "0x2 (Node Reboot Required)",
        "Mar 29 15:38:59 kern kernel: NVRM: Xid (PCI:0000:01:00): 120, pid=2042, name=python3, GSP task timeout @ pc:0x1a "
        "93c2b4, partition:0#0",
        "Mar 29 15:39:00 kern kernel: NVRM: Xid (PCI:0000:01:00): 154, GPU recovery action changed from 0x0 (None) to "
        "0x2 (Node Reboot Required)"])
    first, second = sorted(run(pipeline, text), key=lambda i: i["start"])
    assert (first["initiator"]["xid"], second["initiator"]["xid"]) == (62, 120)
    assert "failed before" not in first["next_action"]
    assert "It failed before: 1 earlier incident(s) of this gpu (Xid 62), the first at" in second["next_action"]
    assert second["next_action"].endswith(": the step for a fault that repeats applies now.")


def test_a_host_daemons_fault_that_names_no_gpu_stays_the_hosts_not_a_gpus_party(pipeline):
    """Fabric Manager failing at boot names no GPU. Half a day later a GPU falls off the bus (Xid 79) and NCCL's NVLS
    setup fails on it. The Fabric Manager failure was put in that GPU's party (the one device of the host that
    logged its category, ``fabric_manager``) and so shown downstream of the Xid 79 that came twelve hours after it (a
    break-it pass). A host's daemon or driver is the host's (``attribute.HOST_CATEGORIES``): it is said apart, as a
    fault that came first and that the Xid 79 does not explain, never as the Xid's reporter."""
    text = "\n".join([
        "2025-06-01T00:00:00+00:00 node07 systemd[1]: nvidia-fabricmanager.service: Control process exited, "
        "code=exited, status=1/FAILURE",
        "2025-06-01T12:00:00+00:00 node07 kernel: NVRM: Xid (PCI:0000:1b:00): 79, pid='<unknown>', name=<unknown>, "
        "GPU has fallen off the bus.",
        "2025-06-01T12:00:30+00:00 node07:12098:12141 [2] transport/nvls.cc:244 NCCL WARN Cuda failure 999 "
        "'unknown error'"])
    incs = run(pipeline, text)
    (inc,) = [i for i in incs if i["initiator"]["xid"] == 79]
    assert inc["initiator"]["device"] == "0000:1b:00.0"
    # the Fabric Manager's fault came first and no rule ties it: no reporter of the Xid (a fresh user's trial: an
    # earlier fault no rule ties was listed downstream), nor the Xid incident's context, which then started twelve
    # hours before its initiator (a fresh user's second trial): an incident of the host's own
    (nvls,) = inc["downstream"]
    assert (nvls["kind"], nvls["gpu_index"]) == ("nccl_error", 2)
    assert (inc["context"], inc["start"]) == ([], "2025-06-01T12:00:00.000000Z")
    (fm,) = [i for i in incs if i is not inc]
    assert (fm["category"], fm["initiator"]["host"], fm["initiator"]["device_type"]) == ("fabric_manager", "node07",
                                                                                          None)
    # nothing explains the Fabric Manager failure; the Xid 79 explains the NVLS failure (so may the Fabric Manager)
    assert {x["effect"] for x in inc["evidence"]} == set(nvls["events"])


def test_an_hca_event_gets_the_action_of_what_it_said(pipeline):
    """NCCL's NET/IB async events (transport/net_ib.cc; ibv_event_type_str): a port error sends the on-call to the
    port, its cable and the switch (llm-d#191), a catastrophic error to the HCA (NVIDIA/nccl#230), a queue pair's
    fatal error to one connection's memory use (GPUDirect RDMA); one action each, not all three in one text (a fresh
    user's trial). An event the map does not name keeps the whole text. The subnet manager's and the address table's
    events (a GID table change, an SM change, a client reregistration) are information: no incident (NVIDIA/nccl#1819,
    openucx/ucx#7349; a real-logs pass)."""
    line = "node07:815:864 [0] transport/net_ib.cc:80 NCCL WARN NET/IB : mlx5_0:1 {what}"
    said = {"Got async error event: port error": "a port went down or flapped",
            "Got async event : local catastrophic error": "the HCA itself failed",
            "async fatal event on QP (0x55d4): local access violation work queue error": "one connection's use of memory",
            "Got async event : path migration request error": "A port error or flap points at the port"}
    for what, action in said.items():
        (inc,) = run(pipeline, line.format(what=what))
        assert inc["initiator"]["kind"] == "ib_port" and action in inc["next_action"], what
        whole = what.endswith("path migration request error")
        assert ("a catastrophic error at the HCA" in inc["next_action"]) is whole, what
    for what in ("Got async event : SM change", "Got async event : GID table change",
                 "Got async event : client reregistration", "Got async event : P_Key change"):
        assert run(pipeline, line.format(what=what)) == [], what


def test_a_rank_thousands_of_collectives_back_is_not_behind_but_of_another_group(pipeline):
    """PyTorch before 2.3 prints "[Rank 7]" with no process group. The other ranks of one group cannot run more than a
    step's collectives past a rank that is stuck (patterns.SEQ_BEHIND_MAX), so rank 7 on SeqNum 64088 beside rank 0
    on 96125 is of another group, not "behind, look there first" (pytorch/pytorch#118369, a real-logs pass); a rank
    five collectives back still is."""
    line = ("[E ProcessGroupNCCL.cpp:458] [Rank {r}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum={q}, "
            "OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 25625593 milliseconds before timing out.")
    (far,) = run(pipeline, "\n".join([line.format(r=0, q=96125), line.format(r=7, q=64088)]))
    assert "behind, still on" not in far["explanation"]
    assert "also rank 7 on SeqNum 64088 (too far behind to be of the same process group)" in far["explanation"]
    (near,) = run(pipeline, "\n".join([line.format(r=0, q=96125), line.format(r=7, q=96120)]))
    assert "; rank 7 is behind, still on SeqNum 96120: look there first" in near["explanation"]


def test_a_rank_whose_own_timeouts_skip_seqnums_shows_several_groups_and_no_rank_is_behind(pipeline):
    """Lines that name no process group (PyTorch before 2.3): Megatron's rank 0 timed out on SeqNums 257, 1032 and
    1796 at once, of its data-, tensor- and pipeline-parallel groups, beside rank 3 on 33; rank 3 was told "behind,
    look there first" (NVIDIA/Megatron-LM#1142, a real-logs pass). One group's timeouts on a rank are consecutive
    SeqNums (the hung collective and those queued behind it), so SeqNums that skip are of several groups and do not
    compare. A rank on two consecutive SeqNums is still one group, and a rank behind it is still told."""
    line = ("[E ProcessGroupNCCL.cpp:828] [Rank {r}] Watchdog caught collective operation timeout: "
            "WorkNCCL(SeqNum={q}, OpType=ALLREDUCE, Timeout(ms)=600000) ran for 607565 milliseconds before timing out.")
    (mixed,) = run(pipeline, "\n".join(line.format(r=r, q=q) for r, q in ((3, 33), (0, 257), (0, 1032), (0, 1796))))
    assert "behind, still on" not in mixed["explanation"], mixed["explanation"]
    assert "also rank 3 on SeqNum 33 (the lines name no process group, and one rank's own timeouts skip SeqNums" \
        in mixed["explanation"]
    (one,) = run(pipeline, "\n".join(line.format(r=r, q=q) for r, q in ((3, 1790), (0, 1795), (0, 1796))))
    assert "; rank 3 is behind, still on SeqNum 1790: look there first" in one["explanation"], one["explanation"]


def test_ncclGetLastError_quoting_a_failed_nccl_allocation_is_the_ranks_own_failure(pipeline):
    """PyTorch's "internal error … ncclInternalError: Internal check failed." quoting NCCL's last WARN, "Failed to
    CUDA calloc async 1920 bytes", behind pdsh's host prefix (deepspeedai/DeepSpeed#3827's ZeRO++ all-to-all): only
    the internal error was read, whose advice was a peer's fault (a real-logs pass). The allocation that failed is
    this rank's own (nccl.alloc_failed) and explains the exception's lines: one incident, its advice the GPU's
    memory, not a peer."""
    text = "\n".join("192.168.1.51: " + x for x in (
        "RuntimeError: NCCL error in: /opt/conda/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1269, internal "
        "error, NCCL version 2.14.3",
        "ncclInternalError: Internal check failed.",
        "Last error:",
        "Failed to CUDA calloc async 1920 bytes"))
    (inc,) = run(pipeline, text, host="nodeds")
    assert (inc["category"], inc["initiator"]["kind"]) == ("application", "cuda_error"), inc["initiator"]
    assert {x["rule"] for x in inc["evidence"]} == {"cuda_error.explains_nccl"}
    assert inc["next_action"].startswith("NCCL could not allocate 1920 bytes of GPU memory"), inc["next_action"]


def test_an_xid_out_of_range_is_named_as_written_in_the_next_step(pipeline):
    """An Xid no driver prints (4294967296, past int32) keeps its text in ``details.xid_text``; the next step read
    "Xid <xid> is not in this catalog", the placeholder unfilled (a break-it pass). It names the code as written."""
    (inc,) = run(pipeline, "2026-11-29T03:10:00.000001Z node60 kernel: NVRM: Xid (PCI:0000:18:00): 4294967296, pid=0, "
                 "something new", host="node60")
    assert inc["next_action"].startswith("Xid 4294967296 is not in this catalog"), inc["next_action"]


def test_xid_154_says_what_the_gpu_needs_and_escalates_from_its_new_action(pipeline):
    """Xid 154 "GPU recovery action changed from 0x0 (None) to 0x4 (Drain and Reset)": the catalog's row is info,
    "escalate severity from the new value". After an Xid 13 it was "application, info … Node healthy … Do not drain
    or RMA the GPU", against the driver's word (a break-it pass). The new action sets the severity (reset, drain P2P,
    IMEX: error; node reboot, drain and reset: critical; None stays info) and is the next step."""
    x13 = ("2026-11-29T03:10:00.000001Z nodeq kernel: NVRM: Xid (PCI:0000:3b:00): 13, pid=2345, name=python, Graphics "
           "SM Warp Exception on (GPC 1, TPC 1, SM 1): MMU Fault")
    x154 = ("2026-11-29T03:10:00.000101Z nodeq kernel: NVRM: Xid (PCI:0000:3b:00): 154, GPU recovery action changed "
            "from 0x0 (None) to {code} ({name})")
    (inc,) = run(pipeline, x13 + "\n" + x154.format(code="0x4", name="Drain and Reset"), host="nodeq")
    assert (inc["category"], inc["severity"]) == ("driver", "critical")
    assert inc["next_action"] == "The driver asks for: Drain and Reset (Xid 154, the GPU's recovery action)."
    assert "Do not drain" not in inc["next_action"]
    for code, name, severity in (("0x1", "GPU Reset Required", "error"), ("0x2", "Node Reboot Required", "critical"),
                                 ("0x0", "None", "info")):
        (inc,) = run(pipeline, x154.format(code=code, name=name), host="nodeq")
        assert inc["severity"] == severity, code
        assert inc["next_action"].startswith("The driver asks for: " + name) == (code != "0x0"), code
    # with the action None it is a teardown line of the program's fault, as before
    (inc,) = run(pipeline, x13 + "\n" + x154.format(code="0x0", name="None"), host="nodeq")
    assert (inc["category"], inc["severity"]) == ("application", "info")


def test_application_xids_that_repeat_on_one_gpu_under_other_programs_go_to_dcgm_diag(pipeline):
    """NVIDIA's advice for Xid 31 (xid-catalog.csv): "repeated faults on the same GPU with different apps -> run DCGM
    diag". pytorch/pytorch#51382 ("likely a faulty device"): three processes' Xid 31 on one GPU in 50 minutes were
    three "Node healthy … Do not drain or RMA" incidents (a real-logs pass). Under two processes in one incident, or
    again in a later incident of the same GPU, the action is DCGM's diagnostics and the severity a warning; Xid 43,
    whose advice is "nothing to do", is not escalated; one program's fault once stays info."""
    x31 = ("[Fri Jan 29 {t} 2021] NVRM: Xid (PCI:0000:db:00): 31, pid={pid}, Ch 00000008, intr 00000000. MMU Fault: "
           "ENGINE GRAPHICS GPCCLIENT_T1_10 faulted @ 0x7fd7_90743000. Fault is of type FAULT_PDE ACCESS_TYPE_VIRT_READ")
    (once,) = run(pipeline, x31.format(t="23:42:34", pid=13641))
    assert once["severity"] == "info" and "Do not drain or RMA" in once["next_action"]
    assert "Xid 31 on 0000:db:00.0 (node07) is a fault of the program" in once["explanation"]
    assert "(Xid 31: GPU memory page fault (MMU fault)), not of the GPU: no hardware" in once["explanation"]
    (two,) = run(pipeline, x31.format(t="23:42:34", pid=13641) + "\n" + x31.format(t="23:42:50", pid=14323))
    assert two["severity"] == "warning" and "They came from 2 different processes." in two["explanation"]
    assert two["next_action"].startswith("Application Xids came from 2 different processes on this GPU: run DCGM")
    # once DCGM's diagnostics are the advice, the explanation no longer clears the GPU (it said "not of the GPU" beside
    # "before blaming the programs alone": a real-logs pass on pytorch/pytorch#51382)
    assert ("), not of the GPU unless the Xid keeps coming back on that GPU (below): no hardware Xid, ECC or link "
            "error accompanies them. They came from 2") in two["explanation"]
    apart = "\n".join(x31.format(t=t, pid=p) for t, p in (("21:00:00", 13641), ("22:00:00", 14323), ("23:00:00", 33275)))
    first, second, third = sorted(run(pipeline, apart), key=lambda i: i["start"])
    assert first["severity"] == "info" and (second["severity"], third["severity"]) == ("warning", "warning")
    assert "It recurred: 2 earlier incident(s) of application Xids on this GPU" in third["explanation"]
    assert "not of the GPU unless the Xid keeps coming back" in third["explanation"]
    assert "), not of the GPU: no" in first["explanation"] and "), not of the GPU: no" not in third["explanation"]
    assert third["next_action"].startswith("Application Xids came from 3 incidents on this GPU: run DCGM diagnostics")
    x43 = "[Fri Jan 29 {t} 2021] NVRM: Xid (PCI:0000:3d:00): 43, pid={pid}, Ch 00000008"
    calm = run(pipeline, "\n".join(x43.format(t=t, pid=p) for t, p in (("21:00:00", 1), ("21:00:05", 2), ("23:00:00", 3))))
    assert {i["severity"] for i in calm} == {"info"} and all("DCGM" not in i["next_action"] for i in calm)
    # runs of one program faulting at one address are that program's repeated fault, not other programs
    # (NVIDIA/open-gpu-kernel-modules#363: chrome's Xid 31 at 0x0_0abe0000 at each console switch; tinygrad#6947, an
    # open-module fix: a real-logs pass); another program, or another address, still escalates
    named = ("NVRM: Xid (PCI:0000:08:00): 31, pid={pid}, name={name}, Ch 00000023, intr 00000000. MMU Fault: ENGINE "
             "CE0 HUBCLIENT_HSCE0 faulted @ {at}. Fault is of type FAULT_PTE ACCESS_TYPE_VIRT_READ")
    runs = [named.format(pid=169800, name="chrome", at="0x0_0abe0000"),
            named.format(pid=174421, name="chrome", at="0x0_0abe0000")]
    (same,) = run(pipeline, "\n".join(runs))
    assert same["severity"] == "info" and same["next_action"].startswith("Node healthy: debug the app")
    assert same["next_action"].endswith("If it repeats with every run, compare the driver with its release notes.")
    assert ("The 2 processes were runs of one program (chrome) faulting at the same address (0x0_0abe0000)"
            in same["explanation"])
    for other in (named.format(pid=174421, name="python", at="0x0_0abe0000"),
                  named.format(pid=174421, name="chrome", at="0x7f57_2c9e8000")):
        (inc,) = run(pipeline, runs[0] + "\n" + other)
        assert inc["severity"] == "warning" and "They came from 2 different processes." in inc["explanation"]


def test_an_application_xid_of_another_gpu_is_not_put_on_the_initiator(pipeline):
    """flashinfer#3869: an Xid 13 on 0000:1a:00.0, then the program's Xid 31 on 0000:9a:00.0, read "Xid 13, 31 on
    0000:1a:00.0" (a real-logs pass): the initiator GPU's own Xids, the other GPU's said apart."""
    text = ("[Fri Jan 29 19:14:43 2021] NVRM: Xid (PCI:0000:1a:00): 13, Graphics Exception: ESR 0x50c730=0x201f0009\n"
            "[Fri Jan 29 19:15:34 2021] NVRM: Xid (PCI:0000:9a:00): 31, pid=477445, Ch 00000008, intr 00000000. MMU "
            "Fault: ENGINE GRAPHICS GPC0 UNRECOGNIZED_CLIENT faulted @ 0x7f00_00000000")
    (inc,) = run(pipeline, text)
    assert inc["explanation"].startswith("Xid 13 on 0000:1a:00.0 (node07) is a fault of the program")
    assert "Application Xids on 0000:9a:00.0 too." in inc["explanation"]


# NCCL's out-of-band address lines (nccl.bootstrap) and a peer's error naming that address: NVIDIA/nccl#1052,
# pytorch/pytorch#81628 (the line formats); NVIDIA/nccl#1710 (a peer's HCA access violation, the rank's completion
# error naming the peer by its address)
BOOT = ("[2026-11-20 10:00:01] {host}:1200:1200 [0] NCCL INFO Bootstrap : Using eth0:{addr}<0>\n"
        "[2026-11-20 10:00:01] {host}:1200:1290 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [RO]; OOB eth0:{addr}<0>")
HCA = ("[2026-11-20 10:05:00] {host}:1200:1290 [0] transport/net_ib.cc:101 NCCL WARN NET/IB : mlx5_0:1 Got async event "
       ": local access violation work queue error")
COMPLETION = ("[2026-11-20 10:05:01] {host}:1300:1390 [0] transport/net_ib.cc:1909 NCCL WARN NET/IB : Got completion "
              "from peer {addr}<33057> with status=12 opcode=0 len=0 vendor err 129 (Send) localGid ::ffff:10.206.1.23 "
              "remoteGids::ffff:10.206.1.11")
RECV = ("[2026-11-20 10:05:02] {host}:1300:1390 [1] misc/socket.cc:518 NCCL WARN Net : Call to recv from {addr}<58355> "
        "failed : Connection reset by peer")



def test_a_host_that_went_away_explains_the_resets_its_peers_report(pipeline):
    """A rank's host loses it — the OOM killer kills its process, Compute Engine terminates the VM for host
    maintenance (scylladb/scylla-cluster-tests#14964), a spot VM's Azure Preempt is scheduled 30 s ahead — and its
    peer on another host reads "Connection reset by peer" naming its address: one incident, the host that went away
    its initiator and the peer downstream by rule (``host_loss`` / ``cloud_event.explains_peer_reports``), not "no
    rule ties it" (a real-logs pass). An Azure notice of a Reboot scheduled for later is no cause of anything."""
    oom = ("[2026-11-20 10:05:00] node201 kernel: Out of memory: Killed process 1200 (python) total-vm:81204400kB, "
           "anon-rss:51842000kB, file-rss:0kB, shmem-rss:0kB, UID:1000 pgtables:1234kB oom_score_adj:0")
    gce = ("[2026-11-20 10:05:00] (GceInstanceEvent Severity.CRITICAL) period_type=one-time event_id=b8ba12ce: "
           "compute.instances.terminateOnHostMaintenance on node node201 at 2026-11-20 10:05:00: Instance terminated "
           "during Compute Engine maintenance.")
    notice = ('[2026-11-20 10:04:32] {{"DocumentIncarnation":3,"Events":[{{"EventId":"A1","EventStatus":"Scheduled",'
              '"EventType":"{what}","ResourceType":"VirtualMachine","Resources":["node201"],'
              '"NotBefore":"Fri, 20 Nov 2026 10:05:02 GMT"}}]}}')
    # AWS Node Termination Handler's record of a spot interruption notice (its log's form, aws.nth_event)
    itn = ('[2026-11-20 10:03:30] INF Adding new event to the event store event={"Description":"Spot ITN received. '
           'Instance will be interrupted at 2026-11-20T10:05:00Z","Kind":"SPOT_ITN","NodeName":"node201"}')
    # the kernel's own panic line as journald prints it (kernel/panic.c), not a line quoting it (the test below)
    panic = "Nov 20 10:05:00 node201 kernel: Kernel panic - not syncing: Fatal exception"
    for fault, rule, category in ((oom, "host_loss.explains_peer_reports", "host_memory"),
                                  (gce, "cloud_event.explains_peer_reports", "other"),
                                  (notice.format(what="Preempt"), "cloud_event.explains_peer_reports", "other"),
                                  (itn, "cloud_event.explains_peer_reports", "other")):
        files = {"node201": BOOT.format(host="node201", addr="10.1.3.201") + "\n" + fault,
                 "node024": RECV.format(host="node024", addr="10.1.3.201")}
        (inc,) = _hosts(pipeline, files)
        assert (inc["initiator"]["host"], inc["category"], inc["severity"]) == ("node201", category, "error"), inc
        assert [(d["host"], d["relation"]) for d in inc["downstream"]] == [("node024", "peer_host")]
        assert {x["rule"] for x in inc["evidence"] if x["relation"] == "peer_host"} == {rule}
    files = {"node201": BOOT.format(host="node201", addr="10.1.3.201") + "\n" + panic,
             "node024": RECV.format(host="node024", addr="10.1.3.201")}
    (inc,) = _hosts(pipeline, files)
    assert (inc["initiator"]["host"], inc["severity"]) == ("node201", "critical"), inc
    assert [(d["host"], d["relation"]) for d in inc["downstream"]] == [("node024", "peer_host")]
    assert {x["rule"] for x in inc["evidence"] if x["relation"] == "peer_host"} == {"host_loss.explains_peer_reports"}
    files = {"node201": BOOT.format(host="node201", addr="10.1.3.201") + "\n" + notice.format(what="Reboot"),
             "node024": RECV.format(host="node024", addr="10.1.3.201")}
    (inc,) = _hosts(pipeline, files)
    assert (inc["pattern"], inc["initiator"]["candidates"]) == (
        "comm.peer_failed", ["the peer at 10.1.3.201 (node201)"])
    # a VM the platform paused and kept running — Compute Engine's live migration, an Azure Freeze — keeps its
    # connections: no rule says it reset them (a break-it pass: both explained the reset by rule)
    mig = gce.replace("terminateOnHostMaintenance", "migrateOnHostMaintenance")
    freeze = ('[2026-11-20 10:05:00] {"DocumentIncarnation":2,"Events":[{"DurationInSeconds":6,"EventId":"F1",'
              '"EventStatus":"Started","EventType":"Freeze","ResourceType":"VirtualMachine","Resources":["node201"]}]}')
    for paused in (mig, freeze):
        files = {"node201": BOOT.format(host="node201", addr="10.1.3.201") + "\n" + paused,
                 "node024": RECV.format(host="node024", addr="10.1.3.201")}
        got = _hosts(pipeline, files)
        assert [x["rule"] for i in got for x in i["evidence"] if x["relation"] == "peer_host"] == [], got



# the catalog's real notices (azure.scheduled_event_notice: scylladb/scylla-cluster-tests#5608, a Reboot 15 minutes
# ahead; aws.nth_event: aws/aws-node-termination-handler#458, its event's StartTime), the event type made one whose
# VM goes (a Terminate; a Spot ITN, whose StartTime is the interruption's: pkg/monitor/spotitn)
AZURE_NOTICE = ("< t:2023-03-16 13:46:56,005 f:cluster_azure.py l:107  c:sdcm.cluster_azure   p:WARNING > Node "
                "longevity-10gb-3h-master-db-node-f78cd6ae-eastus-2 [13.92.183.112 | 10.0.0.6] (seed: False): Unhandled "
                "Azure scheduled event: {'EventId': 'CA9C0DC4-E841-476D-94D5-9FC2FF983BCD', 'EventStatus': 'Scheduled', "
                "'EventType': 'Terminate', 'ResourceType': 'VirtualMachine', 'Resources': "
                "['longevity-10gb-3h-master-db-node-eastus-2'], 'NotBefore': 'Thu, 16 Mar 2023 14:01:28 GMT', "
                "'Description': 'Virtual machine is going to be restarted as requested by authorized user.', "
                "'EventSource': 'User', 'DurationInSeconds': -1}")
AWS_ITN = ('2021/06/25 06:57:01 INF Adding new event to the event store event={"AutoScalingGroupName":"",'
           '"Description":"Spot ITN received. Instance will be interrupted at 2021-06-25T06:59:00Z \\n","Drained":false,'
           '"EndTime":"0001-01-01T00:00:00Z","EventID":"spot-itn-3fe70e54ea057bbd417f70d69829913d9e791afeb972b00bfeae",'
           '"InProgress":false,"InstanceID":"","Kind":"SPOT_ITN","NodeLabels":null,"NodeName":"ip-xxx-xxx-xxx-xxx.us-west-'
           '2.compute.internal","Pods":null,"StartTime":"2021-06-25T06:59:00Z","State":""}')


@pytest.mark.parametrize(("notice", "day", "at"), [
    (AZURE_NOTICE, "2023-03-16", "14:01:28"),  # NotBefore, 15 min after the line
    (AWS_ITN, "2021-06-25", "06:59:00"),  # StartTime, 2 min after the line
])
def test_a_cloud_notice_explains_its_peers_resets_at_the_time_it_names_not_at_its_line(pipeline, notice, day, at):
    """A cloud's notice says when the VM goes (Azure's NotBefore, EC2's StartTime: ``details.occurs_us``), minutes or
    days after its line was written. It explains its peers' "Connection reset by peer" from shortly before that time
    on (``cloud_event.explains_peer_reports``' lead_s 30, its window after), not a reset soon after the line: that
    one was the VM's doing while it still ran, and a notice of a week ahead explained the resets of its day while a
    15-minute one explained none at its NotBefore (a defect pass). The notice's incident begins at its line."""
    when = datetime.fromisoformat(f"{day}T{at}+00:00")
    line_ts = datetime.fromisoformat(notice[4:23] if notice.startswith("<") else notice[:19].replace("/", "-"))

    def reset(t: datetime) -> str:
        return (RECV.replace("[2026-11-20 10:05:02]", f"[{t:%Y-%m-%d %H:%M:%S}]")
                .format(host="node024", addr="10.1.3.201"))

    def rules(t: datetime) -> list[dict]:
        files = {"node201": BOOT.replace("2026-11-20 10:00:01", f"{line_ts - timedelta(seconds=5):%Y-%m-%d %H:%M:%S}")
                 .format(host="node201", addr="10.1.3.201") + "\n" + notice, "node024": reset(t)}
        return _hosts(pipeline, files)

    got = rules(when + timedelta(seconds=2))
    (inc,) = got
    assert (inc["initiator"]["host"], inc["severity"]) == ("node201", "error"), got
    assert [(d["host"], d["relation"]) for d in inc["downstream"]] == [("node024", "peer_host")]
    assert {x["rule"] for x in inc["evidence"] if x["relation"] == "peer_host"} == {"cloud_event.explains_peer_reports"}
    # the notice's line (or the one it inherits its time from), not its NotBefore
    assert inc["start"] <= f"{line_ts:%Y-%m-%dT%H:%M:%S}.999999Z", inc["start"]
    for t in (when - timedelta(seconds=25), when + timedelta(seconds=110)):  # lead_s 30 before, the window after
        assert {x["rule"] for i in rules(t) for x in i["evidence"] if x["relation"] == "peer_host"} == {
            "cloud_event.explains_peer_reports"}, t
    for t in (line_ts + timedelta(seconds=30), when - timedelta(seconds=90), when + timedelta(seconds=200)):
        got = rules(t)
        assert [x["rule"] for i in got for x in i["evidence"] if x["relation"] == "peer_host"] == [], (t, got)


def test_a_notice_a_week_ahead_is_no_cause_of_todays_resets(pipeline):
    """An Azure Preempt notice whose NotBefore is a week after its line: its peer's reset of the line's minute is no
    downstream of it (it was, by the line's time: a defect pass), and at its NotBefore it would be."""
    notice = ('[2026-11-20 10:04:32] {{"DocumentIncarnation":3,"Events":[{{"EventId":"A1","EventStatus":"Scheduled",'
              '"EventType":"Preempt","ResourceType":"VirtualMachine","Resources":["node201"],'
              '"NotBefore":"{nb}"}}]}}')
    for nb, tied in (("Fri, 27 Nov 2026 10:05:02 GMT", False), ("Fri, 20 Nov 2026 10:05:02 GMT", True)):
        files = {"node201": BOOT.format(host="node201", addr="10.1.3.201") + "\n" + notice.format(nb=nb),
                 "node024": RECV.format(host="node024", addr="10.1.3.201")}
        got = _hosts(pipeline, files)
        ruled = [x["rule"] for i in got for x in i["evidence"] if x["relation"] == "peer_host"]
        assert ruled == (["cloud_event.explains_peer_reports"] if tied else []), (nb, got)
        assert all(i["start"] <= i["end"] for i in got), got


# Azure's Scheduled Events document as the service returns it (learn.microsoft.com/azure/virtual-machines/linux/
# scheduled-events: EventId first, a new DocumentIncarnation at each change) and the catalog's real handler's dict
# (scylladb/scylla-cluster-tests#5608, tests.test_patterns.AZURE_NOTICE), each with its line time and NotBefore set
def _imds_notice(at: str, n: int, eid: str, host: str, nb: str) -> str:
    return (f'[{at}] {{"DocumentIncarnation":{n},"Events":[{{"EventId":"{eid}","EventStatus":"Scheduled",'
            f'"EventType":"Preempt","ResourceType":"VirtualMachine","Resources":["{host}"],"NotBefore":"{nb}"}}]}}')


def _sct_notice(at: str, n: int, eid: str, host: str, nb: str) -> str:
    return (AZURE_NOTICE.replace("2023-03-16 13:46:56", at).replace("CA9C0DC4-E841-476D-94D5-9FC2FF983BCD", eid)
            .replace("Thu, 16 Mar 2023 14:01:28 GMT", nb))


@pytest.mark.parametrize("form", [_imds_notice, _sct_notice])
@pytest.mark.parametrize("moved", ["later", "earlier"])
def test_a_re_sent_notice_of_one_event_is_one_incident_scheduled_at_the_latest_notices_time(pipeline, form, moved):
    """Azure re-sends a pending Scheduled Event with its ``EventId`` kept and its ``NotBefore`` moved (later, or
    earlier); each notice made an incident of its own at its own time, the first open until the stale time and
    paged apart (a defect pass). Notices of one id on one host (``details.notice_id``) are one incident whose
    ``scheduled`` time is the latest notice's (``correlate.model.follow_notices``), whichever way it moved, and a
    peer's reset at that time is its downstream. Notices of two ids, or of one id on two hosts, stay apart."""
    first, second = ("Fri, 20 Nov 2026 10:30:00 GMT", "Fri, 20 Nov 2026 11:30:00 GMT")
    if moved == "earlier":
        first, second = second, first
    want = "2026-11-20T" + second[17:25] + ".000000Z"

    def notices(host: str, eids: tuple[str, str]) -> str:
        return "\n".join([form("2026-11-20 10:04:32", 3, eids[0], host, first),
                           form("2026-11-20 10:05:32", 4, eids[1], host, second)])

    boot = BOOT.format(host="node201", addr="10.1.3.201")
    got = _hosts(pipeline, {"node201": boot + "\n" + notices("node201", ("A1", "A1"))})
    # (the handler's line prints a time the reader does not take: it inherits its host's line before)
    assert [(i["end"] <= "2026-11-20T10:05:32.000000Z", i.get("scheduled"), len(i["initiator"]["events"]))
            for i in got] == [(True, want, 2)], got
    reset = RECV.replace("[2026-11-20 10:05:02]", f"[2026-11-20 {second[17:22]}:02]")  # 2 s after the latest's
    (inc,) = _hosts(pipeline, {"node201": boot + "\n" + notices("node201", ("A1", "A1")),
                               "node024": reset.format(host="node024", addr="10.1.3.201")})
    assert [(d["host"], d["relation"]) for d in inc["downstream"]] == [("node024", "peer_host")], inc
    # two events of one host; one event id on two hosts (each host's own VM): apart, each at its own time
    got = _hosts(pipeline, {"node201": boot + "\n" + notices("node201", ("A1", "B2"))})
    assert sorted(i.get("scheduled") for i in got) == sorted(
        "2026-11-20T" + nb[17:25] + ".000000Z" for nb in (first, second)), got
    got = _hosts(pipeline, {"node201": boot + "\n" + form("2026-11-20 10:04:32", 3, "A1", "node201", first),
                            "node202": BOOT.format(host="node202", addr="10.1.3.202") + "\n"
                            + form("2026-11-20 10:05:32", 4, "A1", "node202", second)})
    assert sorted((i["initiator"]["host"], i.get("scheduled")) for i in got) == [
        ("node201", "2026-11-20T" + first[17:25] + ".000000Z"), ("node202", want)], got


# the catalog's real start of an event (azure.scheduled_event_started: Azure/AKS#3719, a node-termination handler's
# heartbeat of a Freeze), its time, id and type set
AZURE_STARTED = ('{at}+00:00\t{{"@timestamp":"{at}.407Z","log.level":"info","message":"Heartbeat report","Event":'
                 '{{"DocumentIncarnation":2,"Events":[{{"Description":"Host server is undergoing maintenance.",'
                 '"DurationInSeconds":6,"EventId":"{eid}","EventSource":"Platform","EventStatus":"Started",'
                 '"EventType":"{what}","NotBefore":"","ResourceType":"VirtualMachine","Resources":'
                 '["spot-node-34525998-vmss_24"]}}]}}}}')


@pytest.mark.parametrize("form", [_imds_notice, _sct_notice])
@pytest.mark.parametrize("started", ["10:04:50", "10:07:30", "11:45:00"])
def test_an_events_start_joins_the_incident_of_its_notice(pipeline, form, started):
    """Azure's Scheduled Event keeps its ``EventId`` from its notice (``EventStatus`` Scheduled) to its start
    (Started): before its NotBefore once a handler acknowledges it, at it, or minutes after. A start minutes from the
    notice's time was an incident of its own beside the notice's, one eviction paged twice (a defect pass). The
    start and the notices of one id on one host (``details.notice_id``, ``correlate.model.cloud_event_key``) are one
    incident, however far apart in time; a start of another id, or of the same id on another host, stays apart."""
    boot = BOOT.format(host="node201", addr="10.1.3.201")
    notice = form("2026-11-20 10:04:32", 3, "A1", "node201", "Fri, 20 Nov 2026 10:05:02 GMT")

    def start(eid: str) -> str:
        return AZURE_STARTED.format(at=f"2026-11-20T{started}", eid=eid, what="Preempt")

    (inc,) = _hosts(pipeline, {"node201": "\n".join([boot, notice, start("A1")])})
    assert (inc["initiator"]["host"], inc["severity"], len(inc["initiator"]["events"])) == ("node201", "error", 2), inc
    if started == "10:04:50":  # 12 s before the NotBefore: near enough in time for any start to join
        return
    got = _hosts(pipeline, {"node201": "\n".join([boot, notice, start("B2")])})
    assert sorted(len(i["initiator"]["events"]) for i in got) == [1, 1], got
    got = _hosts(pipeline, {"node201": boot + "\n" + notice,
                            "node202": BOOT.format(host="node202", addr="10.1.3.202") + "\n" + start("A1")})
    assert sorted(i["initiator"]["host"] for i in got) == ["node201", "node202"], got


@pytest.mark.parametrize("quote", [
    'level=info ts=2026-11-20T10:05:00.000Z caller=manager.go:1 component="rule manager" alert=NodeKernelPanic '
    'expr="Kernel panic - not syncing: Fatal exception"',
    "[2026-11-20 10:05:00] + grep -c 'Kernel panic - not syncing: Fatal exception' /var/log/kern.log",
    '[2026-11-20 10:05:00] search query=message:"Kernel panic - not syncing: Fatal exception" AND host:node024',
    "[2026-11-20 10:05:00] Running: gcloud compute operations list --filter=operationType=compute.instances.preempted",
    '[2026-11-20 10:05:00] watcher: checking for "compute.instances.hostError" events every 60s',
    "[2026-11-20 10:05:00] + grep -c \"'EventStatus': 'Started', 'EventType': 'Reboot'\" /var/log/azure/events.log",
])
def test_a_line_that_quotes_a_host_fault_does_not_blame_its_host_for_its_peers_resets(pipeline, quote):
    """A host's line that only quotes a fault — an alert rule's expr, a grep command line, a log search query, a
    watcher naming the cloud event it polls for — is no kernel panic or cloud event of that host: its peer's
    "Connection reset by peer" naming its address stays the peer's report (``comm.peer_failed``, the peer at that
    address a candidate), not downstream of that host by ``host_loss`` / ``cloud_event.explains_peer_reports`` (a
    break-it pass: each made its host the initiator)."""
    files = {"node201": BOOT.format(host="node201", addr="10.1.3.201") + "\n" + quote,
             "node024": RECV.format(host="node024", addr="10.1.3.201")}
    got = _hosts(pipeline, files)
    assert [x["rule"] for i in got for x in i["evidence"] if x["relation"] == "peer_host"] == [], got
    assert [i["initiator"].get("host") for i in got if i["initiator"].get("host") == "node201"] == [], got
    (inc,) = got
    assert (inc["pattern"], inc["initiator"]["candidates"]) == (
        "comm.peer_failed", ["the peer at 10.1.3.201 (node201)"])


def test_a_lost_peer_at_an_address_no_rank_announced_may_be_a_port_scanner(pipeline):
    """NCCL before 2.27.3 aborted its bootstrap when a connection to its port closed before NCCL's magic (an nmap
    scan), and named the scanner's address as the "remote peer" (NVIDIA/nccl#1612, #1613): the operator was sent to
    the logs of an address that is no rank. When the hosts' Bootstrap lines announce other addresses, the next action
    says it may be no rank; a peer one of them announced, or a peer printed by its name, is not said so."""
    closed = ("[2025-02-22 10:00:02] node1:100:120 [0] misc/socket.cc:71 NCCL WARN socketProgress: Connection closed "
              "by remote peer {peer}<36138>")
    boot = "[2025-02-22 10:00:00] {host}:100:100 [0] NCCL INFO Bootstrap : Using eth0:{addr}<0>"
    for peer, foreign in (("10.10.1.3", True), ("10.10.1.2", False), ("node3.cluster", False)):
        files = {"node1": boot.format(host="node1", addr="10.10.1.1") + "\n" + closed.format(peer=peer),
                 "node2": boot.format(host="node2", addr="10.10.1.2")}
        (inc,) = _hosts(pipeline, files)
        assert inc["pattern"] == "comm.peer_failed", inc
        assert ("10.10.1.3 is no address the ranks here announced (their 'Bootstrap : Using' lines: 10.10.1.1, "
                "10.10.1.2)" in inc["next_action"]) is foreign, inc["next_action"]
        assert ("NCCL before 2.27.3" in inc["next_action"]) is foreign
    # one host's log alone: too little is known to call any address foreign
    (inc,) = _hosts(pipeline, {"node1": boot.format(host="node1", addr="10.10.1.1") + "\n"
                               + closed.format(peer="10.10.1.3")})
    assert "NCCL before 2.27.3" not in inc["next_action"]
    # a third host of the job whose log holds no Bootstrap line (begun after it): 10.10.1.3 may be its address, no
    # scanner's (a break-it pass)
    node3 = ("[2025-02-22 10:00:03] node3:100:120 [0] misc/socket.cc:71 NCCL WARN socketProgress: Connection closed "
             "by remote peer 10.10.1.1<36138>")
    got = _hosts(pipeline, {"node1": boot.format(host="node1", addr="10.10.1.1") + "\n"
                            + closed.format(peer="10.10.1.3"),
                            "node2": boot.format(host="node2", addr="10.10.1.2"), "node3": node3})
    assert got and all("NCCL before 2.27.3" not in i["next_action"] for i in got), got


CXI_NO_VNI = (" libfabric:{pid}:1741146011::cxi:fabric:cxip_nic_get_rgroup_vni():253<warn> : Failed to find valid "
              "default rgroup and vni for cxi0 ")
OFI_DOMAIN = ("{host}:{pid}:{tid} [0] nccl_net_ofi_create_plugin:200 NCCL WARN NET/OFI Couldn't open a fabric access "
              "domain. RC: -38, ERROR: Function not implemented")


def test_a_slingshot_job_without_a_vni_starts_at_libfabrics_warning_not_a_generic_nccl_warning(pipeline):
    """On HPE Slingshot, libfabric's cxi provider finding no CXI service or VNI for the job is the cause, and the OFI
    plugin's "Couldn't open a fabric access domain. RC: -38" its consequence on the same host (aws/aws-ofi-nccl#801):
    the incident starts at the NIC's warning with the VNI advice, not at "NCCL warned on this rank". Each host's
    missing VNI is its own incident; the domain failure alone still says what RC -38 means."""
    files = {h: CXI_NO_VNI.format(pid=pid) + "\n" + OFI_DOMAIN.format(host=h, pid=pid, tid=pid + 40)
             for h, pid in (("node01", 507357), ("node02", 61234))}
    got = _hosts(pipeline, files)
    assert sorted((i["initiator"]["host"], i["initiator"]["device"], i["category"]) for i in got) == [
        ("node01", "cxi0", "nccl_software"), ("node02", "cxi0", "nccl_software")]
    for inc in got:
        assert [(d["host"], d["relation"]) for d in inc["downstream"]] == [(inc["initiator"]["host"], "same_host")]
        assert "CXI service or VNI" in inc["next_action"], inc["next_action"]
    (inc,) = _hosts(pipeline, {"node03": OFI_DOMAIN.format(host="node03", pid=7, tid=9)})
    assert (inc["severity"], inc["category"]) == ("error", "nccl_software")
    assert inc["next_action"].startswith("NCCL's AWS OFI plugin could not open a fabric access domain: RC -38"), inc


@pytest.mark.parametrize("kill, job", [
    # apache/doris#3525: a database's backend (palo_be) killed, a kernel before 4.19 and a memory cgroup's
    ("Killed process 18177 (palo_be), UID 0, total-vm:70347780kB, anon-rss:45563572kB, file-rss:0kB, shmem-rss:0kB",
     False),
    ("Memory cgroup out of memory: Kill process 24984 (palo_be) score 968 or sacrifice child", False),
    # the one-line summary (Linux 4.19+) naming a web server, and a PyTorch process by its main thread's name
    ("oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=user.slice,mems_allowed=0,oom_memcg=/user.slice/"
     "user-1000.slice,task_memcg=/user.slice/user-1000.slice,task=uvicorn,pid=32550,uid=525287", False),
    ("oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=cri-containerd-ec9ee266.scope,mems_allowed=0-1,"
     "oom_memcg=/kubepods.slice,task_memcg=/kubepods.slice/cri-containerd-ec9ee266.scope,task=pt_main_thread,"
     "pid=461754,uid=0", True),
    ("Killed process 89746 (python) total-vm:118026216kB, anon-rss:109819332kB, file-rss:3324kB, shmem-rss:0kB",
     True),  # intel/platform-resource-manager#42
    ("python invoked oom-killer: gfp_mask=0x14000c0(GFP_KERNEL), nodemask=(null), order=0, oom_score_adj=829",
     True)])  # NVIDIA/DALI#585
def test_an_oom_kill_explains_its_peers_reset_only_when_it_killed_the_jobs_process(pipeline, kill, job):
    """The OOM killer on a rank's host and a peer on another host that reads "Connection reset by peer" naming that
    host's address: the kill explains the reset when it ended the job's process (python, PyTorch's pt_main_thread),
    as in ``test_a_host_that_went_away_…``. A kill of another program there (a database's backend, a web server)
    left the rank running: it was still the reset's initiator, the peer's report tied to it (``peer_host``, a break-it
    pass). Then the kill is context, no fault of the job's (``attribute._judge``: alone on its host it is in no
    incident), and the reset's lost peer is the one incident (``comm.peer_failed``)."""
    files = {"node201": BOOT.format(host="node201", addr="10.1.3.201") + "\n[2026-11-20 10:05:00] node201 kernel: "
             + kill,
             "node024": RECV.format(host="node024", addr="10.1.3.201")}
    incs = _hosts(pipeline, files)
    if job:
        (inc,) = incs
        assert (inc["initiator"]["host"], inc["category"]) == ("node201", "host_memory"), inc
        assert [(d["host"], d["relation"]) for d in inc["downstream"]] == [("node024", "peer_host")]
        assert {x["rule"] for x in inc["evidence"]} == {"host_loss.explains_peer_reports"}
        return
    (peer,) = incs
    assert (peer["pattern"], peer["initiator"]["candidates"]) == (
        "comm.peer_failed", ["the peer at 10.1.3.201 (node201)"]), peer
    assert [d["host"] for d in peer["downstream"]] == ["node024"]


@pytest.mark.parametrize("kill, job", [
    ("Killed process 18177 (palo_be), UID 0, total-vm:70347780kB, anon-rss:45563572kB, file-rss:0kB, shmem-rss:0kB",
     False),  # apache/doris#3525
    ("Killed process 89746 (python) total-vm:118026216kB, anon-rss:109819332kB, file-rss:3324kB, shmem-rss:0kB",
     True)])  # intel/platform-resource-manager#42
def test_an_oom_kill_explains_its_own_hosts_rank_timeout_only_when_it_killed_the_jobs_process(pipeline, kill, job):
    """The OOM killer on a rank's host and, ten minutes later, the rank's watchdog timeout (pytorch/pytorch's
    "Watchdog caught collective operation timeout … ran for 600060 milliseconds", the catalog's line): the kill of
    the job's process (python) explains it (``host_oom.explains_job_failure``). A kill of another program there (a
    database's backend) left the rank running; it still explained the timeout, "1 other reporter follows it" at 0.88
    (a defect pass), as it no longer explains a peer's reset (``model.spares_job``). No rule ties them then."""
    text = ("May  8 14:05:27 gpu07 kernel: " + kill + "\nMay  8 14:15:27 gpu07 python[4181]: [rank0]:[E508 "
            "14:15:27.408271257 ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog caught collective operation timeout: "
            "WorkNCCL(SeqNum=1580, OpType=ALLREDUCE, NumelIn=466119168, NumelOut=466119168, Timeout(ms)=600000) ran "
            "for 600060 milliseconds before timing out.")
    got = run(pipeline, text, host="gpu07")
    rules = {x["rule"] for i in got for x in i["evidence"]}
    assert rules == ({"host_oom.explains_job_failure"} if job else set()), got
    if not job:
        assert all("no rule ties it" in i["explanation"] or i["initiator"].get("kind") != "other" for i in got), got


@pytest.mark.parametrize("line, killed", [
    # CentOS 6's kernel 2.6.32 prints the UID before the name (cPanelSSP/SSP#76)
    ("Mar  2 17:35:10 server1 kernel: [2858609.598568] Killed process 11726, UID 498, (mysqld) total-vm:7823732kB, "
     "anon-rss:2539268kB, file-rss:768kB", "mysqld"),
    # a name with parentheses: systemd's PAM helper is named "(sd-pam)" (systemd/systemd#10123); mm/oom_kill.c
    # prints the name as it is, "Killed process %d (%s)"
    ("Mar  2 17:35:10 server1 kernel: Out of memory: Killed process 1234 ((sd-pam)) total-vm:168864kB, "
     "anon-rss:4480kB, file-rss:0kB, shmem-rss:0kB, UID:0 pgtables:104kB oom_score_adj:0", "(sd-pam)"),
    # a name with a comma, as the 4.19+ summary prints it (oom-kill:…,task=%s,pid=%d)
    ("Mar  2 17:35:10 server1 kernel: oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0,"
     "global_oom,task_memcg=/user.slice,task=db,worker,pid=1240,uid=0", "db,worker"),
])
def test_an_oom_kill_is_an_event_whatever_the_layout_and_name_of_its_victim(pipeline, line, killed):
    """The kernel's OOM kill of a process whose name holds a parenthesis or a comma (a process's ``comm`` may hold
    any character), or in CentOS 6's layout (the UID before the name), gave no event: the host's kill was lost, and
    with it what ended its rank (a break-it pass). Each is an OOM kill of that process, and one of no training job
    (``model.spares_job``): context, no incident alone (this test asked for one and failed once such a kill became
    context, a break-it pass)."""
    seg = Segment(data=line.encode(), origin="t:server1", stream="server1", host="server1", ref_ts=T0,
                  ref_basis="kafka", ingest_ts=T0)
    b = pipeline.run(Decoded(segments=[seg]))
    (e,) = b.events.to_pylist()
    assert (e["signature"].startswith("host.oom_kill"), e["host"], e["severity"]) == (True, "server1", "error"), e
    details = orjson.loads(e["details"]) if isinstance(e["details"], (str, bytes)) else e["details"]
    assert details["killed"] == killed
    assert run(pipeline, line, host="server1") == []


@pytest.mark.parametrize("name", ["train", "a.out", "main"])
def test_an_oom_kill_at_a_slurm_jobs_limit_is_the_jobs_whatever_its_programs_name(pipeline, name):
    """A Slurm job step's program killed at its job's memory limit (the summary's oom_memcg "/slurm/uid_1000/
    job_81234", slurmd's cgroup v1 layout; mm/oom_kill.c's lines) is the job's process whatever it is called: a name
    not in ``model.JOB_PROCESSES`` ("train", "a.out") made it context and the diagnosis said no incident at all (a
    break-it pass)."""
    text = "\n".join([
        f"2026-11-20T10:05:00.000000+00:00 node07 kernel: {name} invoked oom-killer: "
        "gfp_mask=0x100cca(GFP_HIGHUSER_MOVABLE), order=0, oom_score_adj=0",
        "2026-11-20T10:05:00.100000+00:00 node07 kernel: oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),"
        "cpuset=step_0,mems_allowed=0-1,oom_memcg=/slurm/uid_1000/job_81234,task_memcg=/slurm/uid_1000/job_81234/"
        f"step_0/task_3,task={name},pid=41822,uid=1000",
        f"2026-11-20T10:05:00.100000+00:00 node07 kernel: Memory cgroup out of memory: Killed process 41822 ({name}) "
        "total-vm:1044537216kB, anon-rss:250112340kB, file-rss:0kB, shmem-rss:0kB, UID:1000 pgtables:490000kB "
        "oom_score_adj:0"])
    (inc,) = run(pipeline, text, host="node07")
    assert (inc["category"], inc["severity"], inc["initiator"]["host"]) == ("host_memory", "error", "node07"), inc
    assert f"killed {name} (pid 41822)" in inc["next_action"], inc


# GCP's GPUDirect-TCPX plugin's wait on a peer's control message (google/nccl-plugin-gpudirecttcpx#1, its line with
# this test's times and addresses) and a GPU NIC's address announced by NCCL's Bootstrap line
TCPX_WAIT = ("[2026-11-20 10:05:02] {host}:1300:1390 [0] tcpxResult_t tcpxCommProgress(tcpxComm*):1231 NCCL WARN "
             "0xadca8062b70:0xadca805d0f0, nic 0, enp12s0, 172.16.0.11<39187><-{addr}<46723> rx rx ctrl timeout cnt "
             "7331502, nanos 10000000585")


def test_a_tcpx_rank_waiting_on_its_peer_follows_that_peers_fault(pipeline):
    """A GPUDirect-TCPX rank that waits past the plugin's threshold for its peer's control message names the peer's
    address; when that host's GPU fell off the bus or its process was OOM-killed, the wait is that fault's
    downstream report (``peer_host``), not an incident of its own. Alone it is a warning that points at the peer."""
    xid79 = "[Fri Nov 20 10:04:59 2026] NVRM: Xid (PCI:0000:10:00): 79, pid=0, GPU has fallen off the bus."
    oom = ("[2026-11-20 10:05:00] node201 kernel: Out of memory: Killed process 1200 (python) total-vm:81204400kB, "
           "anon-rss:51842000kB, file-rss:0kB, shmem-rss:0kB, UID:1000 pgtables:1234kB oom_score_adj:0")
    for fault, rule in ((xid79, "peer_fault.explains_peer_reports"), (oom, "host_loss.explains_peer_reports")):
        files = {"node201": BOOT.format(host="node201", addr="172.16.0.95") + "\n" + fault,
                 "node024": TCPX_WAIT.format(host="node024", addr="172.16.0.95")}
        (inc,) = _hosts(pipeline, files)
        assert inc["initiator"]["host"] == "node201", inc
        assert [(d["host"], d["relation"]) for d in inc["downstream"]] == [("node024", "peer_host")]
        assert {x["rule"] for x in inc["evidence"] if x["relation"] == "peer_host"} == {rule}
    # alone: the peer whose logs are not here, as for a lost socket (comm.peer_failed)
    (inc,) = _hosts(pipeline, {"node024": TCPX_WAIT.format(host="node024", addr="172.16.0.95")})
    assert (inc["pattern"], inc["initiator"]["candidates"], inc["severity"]) == (
        "comm.peer_failed", ["the peer at 172.16.0.95"], "warning"), inc
    # a slowness report: the peer has not sent yet (#1's job waited an hour at its start, then ran); it was told "a
    # peer went away … its process died" (a break-it pass)
    assert "has not sent" in inc["explanation"] and "went away" not in inc["explanation"], inc["explanation"]


def test_a_network_plugin_that_did_not_load_explains_the_network_nccl_could_not_find(pipeline):
    """GCP's gIB plugin needs a newer glibc than the container's: NCCL says why it could not load it (an INFO
    line), then every rank fails on "Error: network gIB not found" (AI-Hypercomputer/gpu-recipes#5). One incident per
    host, started at the plugin's load failure with the image advice, the missing network its downstream by rule."""
    load = ("[2026-11-20 10:00:01] {host}:565:565 [7] NCCL INFO NET/Plugin: Plugin load returned 2 : "
            "/lib/x86_64-linux-gnu/libc.so.6: version `GLIBC_2.32' not found (required by "
            "/usr/local/nvidia/lib64/libnccl-net.so) : when loading libnccl-net.so")
    missing = "[2026-11-20 10:00:02] {host}:562:562 [5] net.cc:579 NCCL WARN Error: network gIB not found."
    got = _hosts(pipeline, {h: load.format(host=h) + "\n" + missing.format(host=h) for h in ("node01", "node02")})
    assert sorted((i["initiator"]["host"], i["category"]) for i in got) == [
        ("node01", "nccl_software"), ("node02", "nccl_software")]
    for inc in got:
        assert (inc["initiator"]["kind"], inc["initiator"]["gpu_index"]) == ("other", 7), inc["initiator"]
        assert [(d["host"], d["relation"]) for d in inc["downstream"]] == [(inc["initiator"]["host"], "same_host")]
        assert {x["rule"] for x in inc["evidence"]} == {"nccl_net_plugin.explains_network_not_found"}
        assert "GLIBC_2.32" in inc["next_action"], inc["next_action"]
    (inc,) = _hosts(pipeline, {"node03": missing.format(host="node03")})
    assert (inc["severity"], inc["category"]) == ("error", "nccl_software")
    assert inc["next_action"].startswith('NCCL was told to use the network "gIB"'), inc["next_action"]


def test_a_peers_error_that_names_its_address_follows_that_hosts_fault(pipeline):
    """A rank's IB completion error or lost socket names its peer by NCCL's out-of-band address; that host's
    Bootstrap / NET/IB OOB line says whose address it is, so the peer host's own fault (its HCA's access
    violation, its GPU falling off the bus) is the initiator and the reports on other hosts are its downstream,
    by the ``peer_host`` relation — not two incidents, each reporter the first fault of its own (NVIDIA/nccl#1710)."""
    files = {"node201": BOOT.format(host="node201", addr="10.1.3.201") + "\n" + HCA.format(host="node201"),
             "node023": BOOT.format(host="node023", addr="10.1.3.23") + "\n"
             + COMPLETION.format(host="node023", addr="10.1.3.201"),
             "node024": RECV.format(host="node024", addr="10.1.3.201")}
    (inc,) = _hosts(pipeline, files)
    assert (inc["initiator"]["host"], inc["initiator"]["device"], inc["category"]) == ("node201", "mlx5_0", "ib_port")
    assert sorted((d["host"], d["relation"]) for d in inc["downstream"]) == [
        ("node023", "peer_host"), ("node024", "peer_host")]
    assert {x["rule"] for x in inc["evidence"] if x["relation"] == "peer_host"} == {"peer_fault.explains_peer_reports"}
    # the GPU that fell off the bus on the peer host, and a peer printed by its name (NVIDIA/nccl#795's form)
    xid79 = "[Fri Nov 20 10:04:59 2026] NVRM: Xid (PCI:0000:10:00): 79, pid=0, GPU has fallen off the bus."
    named = ("[2026-11-20 10:05:03] node024:1300:1390 [1] misc/socket.cc:538 NCCL WARN Net : Connection closed by "
             "remote peer node201.cluster-a.pcluster<47861>")
    (inc,) = _hosts(pipeline, {"node201": xid79, "node024": named})
    assert (inc["initiator"]["host"], inc["initiator"]["xid"]) == ("node201", 79)
    assert [(d["host"], d["relation"]) for d in inc["downstream"]] == [("node024", "peer_host")]

    # a connection to the peer that failed (NCCL's three forms: NVIDIA/nccl-tests#166, modelscope/ms-swift#8043),
    # and a peer printed as an IPv4-mapped IPv6 address: each named no peer, an incident of its own (a break-it pass)
    boot = BOOT.format(host="node201", addr="10.1.3.201")
    for line in ("Net : Connect to {a}<43210> failed : Connection refused",
                 "socketStartConnect: Connect to {a}<45763> failed : Software caused connection abort",
                 "socketPollConnect: connect to {a}<52597> returned Connection refused",
                 "Net : Call to recv from ::ffff:{a}<58355> failed : Connection reset by peer"):
        warn = f"[2026-11-20 10:05:03] node024:1300:1390 [1] misc/socket.cc:484 NCCL WARN {line.format(a='10.1.3.201')}"
        (inc,) = _hosts(pipeline, {"node201": boot + "\n" + xid79, "node024": warn})
        assert (inc["initiator"]["host"], inc["initiator"]["xid"]) == ("node201", 79), line
        assert [(d["host"], d["relation"]) for d in inc["downstream"]] == [("node024", "peer_host")], line


CONNECT = ("[2026-11-20 10:05:0{rank}] {host}:14{rank}33:14{rank}33 [{rank}] misc/socket.cc:484 NCCL WARN "
           "socketStartConnect: Connect to {addr}<43369> failed : Software caused connection abort\n"
           "[2026-11-20 10:05:0{rank}] {host}:14{rank}33:14{rank}33 [{rank}] NCCL INFO bootstrap.cc:285 -> 2")


def test_ranks_that_cannot_connect_to_one_address_share_the_path(pipeline):
    """Several ranks that could not connect (sgl-project/sglang#6017: every local rank of a node to one link-local
    address) are one incident of the path they share, not a GPU each ("no single culprit" at 0.3 before); a
    link-local address or a bridge's gateway is NCCL's interface choice (nccl_software); an address of the job's
    network names its host when the Bootstrap lines say it; one rank alone stays the roots' (its GPU, the
    signature's advice); a rank's own CUDA error leaves the incident to the other rules."""
    for addr, category in (("169.254.20.10", "nccl_software"), ("172.17.0.1", "nccl_software"),
                           ("10.1.3.201", "other")):
        node = "\n".join(CONNECT.format(host="node031", rank=r, addr=addr) for r in (0, 1, 2))
        (inc,) = _hosts(pipeline, {"node031": node})
        assert (inc["pattern"], inc["category"], inc["confidence"]) == ("comm.connect_failed", category, 0.5), addr
        assert inc["initiator"]["host"] is None and inc["initiator"]["candidates"] == [f"the path to {addr}"], addr
        assert inc["explanation"].startswith(f"3 lines of 3 processes on node031 say they could not connect to {addr}")
        local = "no address of the job's hosts" in inc["explanation"]
        assert ("NCCL_SOCKET_IFNAME" in inc["next_action"]) and local == (category == "nccl_software"), addr
    # the address is a host of the job's (its Bootstrap line): named beside it
    files = {"node201": BOOT.format(host="node201", addr="10.1.3.201"),
             "node031": "\n".join(CONNECT.format(host="node031", rank=r, addr="10.1.3.201") for r in (0, 1))}
    (inc,) = _hosts(pipeline, files)
    assert inc["initiator"]["candidates"] == ["the path to 10.1.3.201 (node201)"]
    # one rank: its own incident, as before — unless its address is no host's (link-local, loopback, a bridge's
    # gateway: NCCL's interface, not its GPU; a break-it pass)
    (inc,) = _hosts(pipeline, {"node031": CONNECT.format(host="node031", rank=0, addr="10.1.3.201")})
    assert inc["pattern"] != "comm.connect_failed"
    assert inc["initiator"]["host"] == "node031" and inc["confidence"] == 0.75
    (inc,) = _hosts(pipeline, {"node031": CONNECT.format(host="node031", rank=0, addr="169.254.20.10")})
    assert (inc["pattern"], inc["category"]) == ("comm.connect_failed", "nccl_software")
    assert inc["explanation"].startswith("1 line of 1 process on node031 says it could not connect to 169.254.20.10")
    # loopback is a wrong interface only for processes of several hosts (one incident holds one host's: never so far):
    # on one host it is every process's own path, and a process's exit beside the failures (torchrun's record of
    # rank 0) is the listener that went away (a break-it pass)
    one = "\n".join(CONNECT.format(host="node031", rank=r, addr="127.0.0.1") for r in (1, 2))
    (inc,) = _hosts(pipeline, {"node031": one})
    assert (inc["pattern"], inc["category"]) == ("comm.connect_failed", "other")
    crash = ("[2026-11-20 10:04:59] torch.distributed.elastic.multiprocessing.errors.ChildFailedError:\n"
             + TORCHRUN_SUMMARY.format(code=1).replace("2024-09-11_09:17:37", "2026-11-20_10:04:59"))
    assert all(i["pattern"] != "comm.connect_failed" for i in _hosts(pipeline, {"node031": crash + "\n" + one}))
    # a rank's own CUDA error beside them: not this pattern
    oom = ("[2026-11-20 10:05:00] node031:14033:14033 [0] include/alloc.h:103 NCCL WARN Cuda failure 'out of memory'")
    incs = _hosts(pipeline, {"node031": oom + "\n" + "\n".join(
        CONNECT.format(host="node031", rank=r, addr="169.254.20.10") for r in (0, 1))})
    assert all(i["pattern"] != "comm.connect_failed" for i in incs)


IB12 = ("{host}:359{n}7:359{n}9 [0] transport/net_ib.cu:788 NCCL WARN NET/IB : Got completion with error {err}, "
        "opcode 1, len 0, vendor err 129")


def test_both_ends_of_an_ib_connection_failing_name_the_path_not_a_gpu_each(tmp_path):
    """Both hosts of one job's connection report an IB error completion in the launcher's output (NVIDIA/nccl-tests#24:
    gpu4 and gpu5 at error 12, one mpirun capture; fixed by NCCL_IB_GID_INDEX=3): one incident of the path between
    their HCAs, category ib_port, no GPU named; the CUDA failure gpu5's other GPU reported in the teardown is the
    completion's downstream (ib_completion.explains_own_host_cuda_failure). "No single culprit" among three GPUs at
    0.3 before. One host's completions alone, a flushed completion (a report of the peer) and a host's Xid leave
    the incident to the other rules."""
    from api.diagnose import diagnose_paths
    from schemas.settings import Settings

    cuda = "gpu5:35917:35917 [1] init.cu:194 NCCL WARN Cuda failure 'an illegal memory access was encountered'"

    def incidents(*lines: str, dmesg: str = "") -> list[dict]:
        for f in tmp_path.iterdir():
            f.unlink()
        (tmp_path / "all_reduce_perf.log").write_text("\n".join(lines) + "\n")
        os.utime(tmp_path / "all_reduce_perf.log", (1560938405, 1560938405))  # 2019-06-19 10:00:05 UTC
        if dmesg:
            (tmp_path / "gpu5.dmesg.log").write_text(dmesg + "\n")
        return diagnose_paths([tmp_path], Settings())[2]

    (inc,) = incidents(IB12.format(host="gpu5", n=1, err=12), IB12.format(host="gpu4", n=0, err=12), cuda)
    assert (inc["pattern"], inc["category"], inc["confidence"]) == ("comm.ib_both_ends", "ib_port", 0.5)
    assert inc["initiator"]["host"] is None and inc["initiator"]["device_type"] is None
    assert inc["initiator"]["candidates"] == ["the InfiniBand/RoCE path between gpu4 and gpu5"]
    assert inc["explanation"].startswith("2 IB error completions on gpu4, gpu5: both ends of the connection")
    assert "NCCL_IB_GID_INDEX" in inc["next_action"]
    assert "ib_completion.explains_own_host_cuda_failure" in [x["rule"] for x in inc["evidence"]]
    assert {(d["host"], d["kind"]) for d in inc["downstream"]} == {("gpu4", "nccl_error"), ("gpu5", "nccl_error")}
    # one host's completions: its own incident, as before
    (inc,) = incidents(IB12.format(host="gpu5", n=1, err=12))
    assert inc["pattern"] != "comm.ib_both_ends" and inc["initiator"]["host"] == "gpu5"
    # a flushed completion (status 5) reports the peer's failure, not the path
    incs = incidents(IB12.format(host="gpu5", n=1, err=12), IB12.format(host="gpu4", n=0, err=5))
    assert all(i["pattern"] != "comm.ib_both_ends" for i in incs)
    # ... but beside both ends at 12 a third host's flushed completions are reports of them, not a culprit of its own
    (inc,) = incidents(IB12.format(host="gpu5", n=1, err=12), IB12.format(host="gpu4", n=0, err=12),
                       IB12.format(host="gpu6", n=2, err=5))
    assert (inc["pattern"], inc["category"]) == ("comm.ib_both_ends", "ib_port"), inc
    assert inc["initiator"]["candidates"] == ["the InfiniBand/RoCE path between gpu4 and gpu5"]
    # a GPU of gpu5 that fell off the bus: not this pattern
    xid79 = ("2019-06-19T10:00:00.000000Z gpu5 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=0, GPU has fallen off "
             "the bus.")
    incs = incidents(IB12.format(host="gpu5", n=1, err=12), IB12.format(host="gpu4", n=0, err=12), dmesg=xid79)
    assert all(i["pattern"] != "comm.ib_both_ends" for i in incs)
    assert any(i["initiator"]["xid"] == 79 and i["initiator"]["host"] == "gpu5" for i in incs)


def test_a_cuda_failure_before_the_hosts_ib_completion_error_stays_its_own(pipeline):
    """ib_completion.explains_own_host_cuda_failure: a CUDA failure in NCCL that came clearly before its host's IB
    error completion is no teardown of that connection: the completion does not explain it."""
    lines = ("[2026-11-20 10:05:00] node031:14033:14033 [1] init.cu:194 NCCL WARN Cuda failure 'an illegal memory "
             "access was encountered'\n"
             "[2026-11-20 10:05:06] node031:14033:14035 [0] transport/net_ib.cc:1295 NCCL WARN NET/IB : Got completion "
             "from peer 10.1.3.201<43369> with error 12, opcode 1, len 0, vendor err 129")
    incs = run(pipeline, lines, host="node031")
    rules = [x["rule"] for i in incs for x in i["evidence"]]
    assert "ib_completion.explains_own_host_cuda_failure" not in rules
    after = lines.split("\n")[1] + "\n" + lines.split("\n")[0].replace("10:05:00", "10:05:07")
    rules = [x["rule"] for i in run(pipeline, after, host="node031") for x in i["evidence"]]
    assert "ib_completion.explains_own_host_cuda_failure" in rules


MPI_PEER = """[2026-11-20 10:05:01] An MPI communication peer process has unexpectedly disconnected.  This
usually indicates a failure in the peer process (e.g., a crash or
otherwise exiting without calling MPI_FINALIZE first).

Although this local MPI process will likely now behave unpredictably
(it may even hang or crash), the root cause of this problem is the
failure of the peer -- that is what you need to investigate.  For
example, there may be a core file that you can examine.  More
generally: such peer hangups are frequently caused by application bugs
or other external events.

  Local host: node313
  Local PID:  7720
  Peer host:  node316
--------------------------------------------------------------------------"""


def test_open_mpi_s_lost_peer_names_the_peer_host(pipeline):
    """Open MPI's "peer process has unexpectedly disconnected" help text gave no event (horovod/horovod#1950, a
    real-logs pass): it is a report of its ``Peer host:`` (``assemble.carry_context``), as NCCL's lost peer is —
    alone, the peer's logs are asked for; with the peer host's own fault, that fault is the initiator and the report
    its downstream; a help text cut before its peer line names no peer."""
    (inc,) = _hosts(pipeline, {"node313": MPI_PEER})
    assert (inc["pattern"], inc["initiator"]["candidates"]) == ("comm.peer_failed", ["the peer at node316"])
    assert inc["next_action"].startswith("Diagnose the logs of node316")
    xid79 = "[2026-11-20 10:05:00] NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=python, GPU has fallen off the bus."
    (both,) = _hosts(pipeline, {"node313": MPI_PEER, "node316": xid79})
    assert (both["initiator"]["host"], both["initiator"]["xid"]) == ("node316", 79)
    assert [(d["host"], d["relation"]) for d in both["downstream"]] == [("node313", "peer_host")]
    (cut,) = _hosts(pipeline, {"node313": MPI_PEER.split("\n  Peer host")[0]})
    assert (cut["pattern"], cut["initiator"]["candidates"]) == ("comm.peer_failed", ["another rank of the job"])
    # under a launcher's prefix (srun -l, mpirun's tag) the peer is read too; two blocks naming two peers are two
    # reports, not one event of the first peer (a break-it pass)
    tagged = "\n".join("[1,3]<stderr>:" + line for line in MPI_PEER.split("\n"))
    (inc,) = _hosts(pipeline, {"node313": tagged})
    assert inc["initiator"]["candidates"] == ["the peer at node316"]
    two = MPI_PEER + "\n" + MPI_PEER.replace("10:05:01", "10:05:03").replace("node316", "node317")
    (inc,) = _hosts(pipeline, {"node313": two, "node317": xid79})
    assert (inc["initiator"]["host"], [(d["host"], d["relation"]) for d in inc["downstream"]]) == (
        "node317", [("node313", "peer_host")])


def test_a_peer_address_no_line_gives_one_host_names_no_host(pipeline):
    """Without the peer's Bootstrap line, or with an address two hosts say they use (a container's 172.17.0.2),
    the report is not tied to any host's fault: the two stay apart, as before."""
    hca = HCA.format(host="node201")
    for boot in ("", BOOT.format(host="node201", addr="172.17.0.2") + "\n"
                 + BOOT.format(host="node201", addr="172.17.0.2").replace("node201", "node300")):
        files = {"node201": (boot + "\n" if boot else "") + hca,
                 "node023": COMPLETION.format(host="node023", addr="172.17.0.2" if boot else "10.1.3.201")}
        incs = _hosts(pipeline, files)
        assert sorted(i["initiator"]["host"] for i in incs) == ["node023", "node201"], boot


def test_a_lone_report_says_whose_address_its_peer_is(pipeline):
    """The reporting rank's logs and only the peer's Bootstrap line: the incident is the report's, and its
    explanation names the peer's host to read next; ranks that only lost a peer name it among the candidates."""
    files = {"node201": BOOT.format(host="node201", addr="10.1.3.201"),
             "node023": COMPLETION.format(host="node023", addr="10.1.3.201")}
    (inc,) = _hosts(pipeline, files)
    assert inc["initiator"]["host"] == "node023"
    assert "it names its peer 10.1.3.201, which is node201 (NCCL's Bootstrap line there)" in inc["explanation"]
    files["node023"] = RECV.format(host="node023", addr="10.1.3.201")
    (lost,) = _hosts(pipeline, files)
    assert (lost["pattern"], lost["initiator"]["candidates"]) == ("comm.peer_failed", ["the peer at 10.1.3.201 (node201)"])


def test_a_pcie_errors_action_is_that_of_the_class_its_line_says(pipeline):
    """An uncorrected fatal AER error was told "corrected errors are informational unless they repeat" first
    (DualCoder/vgpu_unlock#114: a Surprise Down, the host froze): the action of the class the line says."""
    line = "[74889.542044] pcieport 0000:00:02.0: PCIe Bus Error: severity={c}, type=Transaction Layer, (Receiver ID)"
    (fatal,) = run(pipeline, line.format(c="Uncorrected (Fatal)"))
    assert fatal["next_action"].startswith("PCIe AER reported an uncorrected fatal error on 0000:00:02.0 (Transaction "
                                           "Layer): the link below it failed")
    (nonfatal,) = run(pipeline, line.format(c="Uncorrected (Non-Fatal)"))
    assert nonfatal["next_action"].startswith("PCIe AER reported an uncorrected non-fatal error on 0000:00:02.0")
    assert "informational" not in fatal["next_action"] + nonfatal["next_action"]


def test_a_gpu_that_fell_off_the_bus_after_pcie_errors_says_they_came_first(pipeline):
    """Corrected PCIe errors on the port above a GPU, then its Xid 79 (NVIDIA/open-gpu-kernel-modules#1247: an eGPU's
    Physical Layer RxErr; rwth-i6/returnn#1486: Data Link Layer timeouts before NVML lost the GPU): no fault, so
    no rule makes them its cause, but the explanation says they came before it, with what they said (the action
    asked for the PCIe errors that came first, which were in the input). Lines with no time are "beside" it; errors
    after the fall, or a minute before, are not said."""
    aer = ("[Fri Nov 20 10:00:{s:02d} 2026] pcieport 0000:00:1b.0: PCIe Bus Error: severity=Correctable, type=Physical "
           "Layer, (Receiver ID)\n[Fri Nov 20 10:00:{s:02d} 2026] pcieport 0000:00:1b.0:    [ 0] RxErr   (First)")
    xid = "[Fri Nov 20 10:00:{s:02d} 2026] NVRM: Xid (PCI:0000:03:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus."
    (inc,) = run(pipeline, aer.format(s=1) + "\n" + xid.format(s=5))
    assert inc["initiator"]["xid"] == 79
    assert ("PCIe AER errors came before it on 0000:00:1b.0 (Correctable, Physical Layer, RxErr): the PCIe link to the "
            "GPU (slot, riser, cable, enclosure, power) likely failed first" in inc["explanation"])
    untimed = "\n".join(line.split("] ", 1)[1] for line in (aer.format(s=1) + "\n" + xid.format(s=5)).split("\n"))
    (inc,) = run(pipeline, untimed)
    assert "PCIe AER errors are logged beside it on 0000:00:1b.0" in inc["explanation"]
    for text in (xid.format(s=5) + "\n" + aer.format(s=9), aer.format(s=1).replace("10:00:", "09:59:") + "\n"
                 + xid.format(s=55)):
        incs = run(pipeline, text)
        assert not any("PCIe AER errors" in i["explanation"] for i in incs), text


def test_an_xid_names_its_gpu_whatever_the_order_of_its_lines_of_the_same_second(pipeline):
    """The kernel's "GPU has fallen off the bus" line and the Xid 79 of the same second: the incident was named by
    whichever came first, so ``diagnose`` said Xid 79 and the service, reading them in another order, a plain
    gpu_off_bus with another action and check (a fresh user's trial). The Xid names it in either order."""
    lines = ["[Wed Dec  3 14:02:11 2026] NVRM: GPU 0000:3b:00.0: GPU has fallen off the bus.",
             "[Wed Dec  3 14:02:11 2026] NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, GPU has "
             "fallen off the bus."]
    for text in ("\n".join(lines), "\n".join(reversed(lines))):
        (inc,) = run(pipeline, text)
        assert (inc["initiator"]["xid"], inc["initiator"]["kind"]) == (79, "xid"), text
        assert inc["next_action"].startswith("Drain node and reboot (cold)")


def test_an_initiator_logged_after_a_line_it_explains_is_not_called_the_earliest(pipeline):
    """A fatal AER on the port above a GPU, logged a second after that GPU's Xid 79 (within the lines' one-second
    resolution): the rule makes the port the initiator, and its explanation called it "the earliest fault" beside an
    Xid the table starts a second before (a fresh user's trial). It says the line it explains came first."""
    text = ("[Wed Dec  3 14:02:11 2026] NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen "
            "off the bus.\n[Wed Dec  3 14:02:12 2026] pcieport 0000:38:01.0: AER: Uncorrected (Fatal) error received: "
            "0000:3b:00.0")
    (inc,) = run(pipeline, text)
    assert inc["initiator"]["device"] == "0000:38:01.0"
    assert "at 2026-12-03T14:02:12.000000Z is the fault nothing else explains, though a line it explains was logged " \
           "1 s before it" in inc["explanation"]
    assert "earliest" not in inc["explanation"]


def test_an_earlier_fault_no_rule_ties_is_an_incident_of_its_own(pipeline):
    """An Xid 13 on one GPU, then 30 s later an Xid 79 on another of the host (one candidate incident by the same-host
    link, no rule between them): the Xid 13 was listed downstream, as if the Xid 79 had caused it (a fresh user's
    trial), then was the incident's context, the incident starting at it, 30 s before the Xid 79 (a second trial;
    README "start": only a watchdog timeout starts an incident before its initiator's line). It is an application
    incident of its own, the Xid 79's starts at its line; a fault after the initiator stays downstream."""
    x13 = ("2026-12-03T10:00:00+00:00 node55 kernel: NVRM: Xid (PCI:0000:18:00): 13, pid=2201, name=python3, Graphics "
           "Exception: ESR 0x50c730=0x201f0009")
    x79 = ("2026-12-03T10:00:30+00:00 node55 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, "
           "GPU has fallen off the bus.")
    app, inc = run(pipeline, x13 + "\n" + x79)
    assert (app["initiator"]["device"], app["category"], app["severity"], app["start"]) == (
        "0000:18:00.0", "application", "info", "2026-12-03T10:00:00.000000Z")
    assert (inc["initiator"]["device"], inc["downstream"], inc["context"]) == ("0000:3b:00.0", [], [])
    assert (inc["category"], inc["start"], inc["start_basis"]) == ("gpu_off_bus", "2026-12-03T10:00:30.000000Z", "line")
    assert "0000:18:00.0" not in inc["explanation"]
    (after,) = run(pipeline, x79.replace("10:00:30", "10:00:00") + "\n" + x13.replace("10:00:00", "10:00:30"))
    assert [d["device"] for d in after["downstream"]] == ["0000:18:00.0"]


def test_silent_ranks_placed_in_part_are_said_with_their_hosts(pipeline):
    """Ranks 0 – 1 on a1 logged no timeout and the init lines place them; ranks 4 – 5 logged none either, and no line
    of theirs is here. It said "without the communicator's membership the silent rank cannot be named" (a fresh
    user's trial: eight silent ranks on one host, placed). It names the placed ones' host first and asks where the
    others ran."""
    files = _job({0, 1, 4, 5})
    del files["a3"]  # ranks 4, 5: neither their init lines nor a timeout
    (inc,) = _hosts(pipeline, files)
    assert (inc["pattern"], inc["initiator"]["device_type"]) == ("comm.silent_rank", None)
    assert ("Of the 4 of 6 ranks that logged no timeout, NCCL's init lines place 0–1 on a1; where 4–5 ran is not "
            "known.") in inc["explanation"]
    assert "cannot be named" not in inc["explanation"]
    assert inc["next_action"].startswith("Check a1 first") and inc["missing"][0].startswith(
        "NCCL init lines or logs of ranks 4–5")
    assert inc["initiator"]["candidates"] == ["a1"]


def test_a_cached_attribution_is_made_again_when_an_address_line_names_its_peer(pipeline):
    """The streaming correlator keeps each candidate incident's attribution while its events and their hosts' facts
    stand (``AttributionCache``). A lone lost-peer report names "the peer at 10.1.3.201"; the peer's Bootstrap line,
    arriving later on another host, says whose address that is: the report's attribution is made again (its peers'
    hosts are part of what the entry was made with), not kept from before."""
    from correlate.correlator import AttributionCache
    from correlate.model import events_from_table

    def evs(host: str, text: str):
        seg = Segment(data=text.encode(), origin=f"t:{host}", stream=host, host=host, ref_ts=T0, ref_basis="kafka",
                      ingest_ts=T0)
        return events_from_table(pipeline.run(Decoded(segments=[seg])).events)

    report = evs("node023", RECV.format(host="node023", addr="10.1.3.201"))
    boot = evs("node201", BOOT.format(host="node201", addr="10.1.3.201"))
    cache = AttributionCache()
    (first,) = correlate(report, now_us=T0, cache=cache)
    assert first["initiator"]["candidates"] == ["the peer at 10.1.3.201"]
    (again,) = correlate(report + boot, now_us=T0, cache=cache)
    assert again["initiator"]["candidates"] == ["the peer at 10.1.3.201 (node201)"]
    assert cache.misses == 2 and cache.hits == 0
    (same,) = correlate(report + boot, now_us=T0, cache=cache)
    assert same == again and cache.hits == 1


def test_a_cached_attribution_of_a_copied_event_is_kept_while_its_copy_stands(pipeline):
    """Two kinds of line are correlated as a copy of themselves: PyTorch's desync report under a watchdog timeout
    (``model.follow_reports``: the timeout's host and rank; pytorch/pytorch#152623) and a Ray worker's line that names
    its node by address (``Topology.name_hosts``: the host whose NCCL said it uses it; vllm-project/vllm#2669's
    "(RayWorkerWrapper pid=…, ip=…)" prefix). The streaming correlator re-correlates its kept events at every step: a
    new copy at every call was a new event to the attribution cache, so these incidents were attributed again at
    every step. The same events give the same copies, and the cache's entries are used; a copy is made again when
    what it is made of changed (the address names another host)."""
    from correlate.correlator import AttributionCache
    from correlate.model import events_from_table

    def evs(host: str, text: str):
        seg = Segment(data=text.encode(), origin=f"t:{host}", stream=host, host=host, ref_ts=T0, ref_basis="kafka",
                      ingest_ts=T0)
        return events_from_table(pipeline.run(Decoded(segments=[seg])).events)

    lagging = "           - [3, 4, 5] joined but didn't finish collective #315 (count from 1)"
    report = evs("node01", "\n".join([DESYNC_WD.format(r=0), "[rank0]:[E515 18:36:47.343377708 "
                                       "ProcessGroupNCCL.cpp:1937] Rank 0", DESYNC_HEAD, lagging]))
    ray = evs("driver", "(RayWorkerWrapper pid=1100, ip=10.1.3.201) ERROR 12-01 03:10:02 [multiproc_executor.py:597] "
                        "RuntimeError: NCCL error: remote process exited or there was a network error")
    boot = evs("node201", BOOT.format(host="node201", addr="10.1.3.201"))
    both = report + ray + boot
    cache = AttributionCache()
    first = correlate(both, now_us=T0, cache=cache)
    assert any(i["pattern"] == "comm.silent_rank" for i in first)

    def of(incs, host):  # the incident the Ray line reports in, by the host it gives it
        return [i for i in incs if any(d["host"] == host for d in i["downstream"])]

    assert len(of(first, "node201")) == 1  # the Ray line is node201's
    made = cache.misses
    assert made >= 2 and cache.hits == 0
    assert correlate(both, now_us=T0, cache=cache) == first
    assert (cache.hits, cache.misses) == (made, made)  # every candidate incident kept, none attributed again
    # the address now names another host (its Bootstrap line on node202, and node201's gone): a copy of that host
    moved = evs("node202", BOOT.format(host="node202", addr="10.1.3.201"))
    again = correlate(report + ray + moved, now_us=T0, cache=cache)
    assert again == correlate(report + ray + moved, now_us=T0)
    assert len(of(again, "node202")) == 1 and of(again, "node201") == []
    # the memo holds the copies of the last call's events only: the report's go with the report
    assert {c.signature for _e, _m, c in cache.copies.now.values()} == {"torch.desync_report", "vllm.nccl_error"}
    correlate(ray + moved, now_us=T0, cache=cache)
    assert [c.host for _e, _m, c in cache.copies.now.values()] == ["node202"]
    correlate(ray + moved, now_us=T0, cache=cache)
    assert len(cache.copies.last) == len(cache.copies.now) == 1


def test_a_peer_address_names_its_host_as_an_address_is_used(pipeline):
    """What an address names (a second break-it pass on ``peer_host``): a loopback peer is the reporting host itself
    (hosta's ``lo:127.0.0.1`` tied hostb's report to hosta's Xid); an IPv6 link-local peer's zone is the reporting
    host's interface (``%ib1`` there, ``%ib0`` on the peer); an address another pod gave up hours before is the
    current pod's (it named no host for ever), one two hosts use at once names none."""
    xid = ("[Fri Nov 20 10:04:59 2026] NVRM: Xid (PCI:0000:10:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen "
           "off the bus.")
    lo = {"hosta": BOOT.format(host="hosta", addr="127.0.0.1").replace("eth0", "lo") + "\n" + xid,
          "hostb": RECV.format(host="hostb", addr="127.0.0.1")}
    assert sorted(i["initiator"]["host"] or "(none)" for i in _hosts(pipeline, lo)) == ["(none)", "hosta"]
    v6 = {"node201": BOOT.format(host="node201", addr="fe80::966d:ae03:8b:df78%ib0") + "\n" + HCA.format(host="node201"),
          "node023": COMPLETION.format(host="node023", addr="fe80::966d:ae03:8b:df78%ib1")}
    (inc,) = _hosts(pipeline, v6)
    assert (inc["initiator"]["host"], [d["host"] for d in inc["downstream"]]) == ("node201", ["node023"])
    old = "[2026-11-20 07:00:01] {host}:1200:1200 [0] NCCL INFO Bootstrap : Using eth0:10.1.3.201<0>"
    reuse = {"node300": old.format(host="node300"), **{k: v for k, v in _reuse_files().items()}}
    (inc,) = [i for i in _hosts(pipeline, reuse) if i["category"] == "ib_port"]
    assert (inc["initiator"]["host"], [d["host"] for d in inc["downstream"]]) == ("node201", ["node023"])
    at_once = {"node300": BOOT.format(host="node300", addr="10.1.3.201"), **_reuse_files()}
    assert sorted(i["initiator"]["host"] for i in _hosts(pipeline, at_once)) == ["node023", "node201"]


def _reuse_files() -> dict[str, str]:
    return {"node201": BOOT.format(host="node201", addr="10.1.3.201") + "\n" + HCA.format(host="node201"),
            "node023": COMPLETION.format(host="node023", addr="10.1.3.201")}


def test_pcie_errors_of_another_gpu_are_not_said_to_come_before_a_fall(pipeline):
    """Corrected AER errors of another GPU (``nvidia 0000:3b:00.0``), then 0000:1b:00.0 falls off the bus: they are that
    GPU's own, not the link above the one that fell (a second break-it pass); and a watchdog timeout logged ten minutes
    after the fault it reports is not "a line it explains logged before it" (its collective began before it)."""
    aer = ("[Fri Nov 20 10:00:01 2026] nvidia 0000:3b:00.0: PCIe Bus Error: severity=Corrected, type=Physical Layer, "
           "(Receiver ID)\n[Fri Nov 20 10:00:01 2026] nvidia 0000:3b:00.0:    [ 0] RxErr   (First)")
    xid = ("[Fri Nov 20 10:00:05 2026] NVRM: Xid (PCI:0000:1b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen "
           "off the bus.")
    assert not any("PCIe AER errors" in i["explanation"] for i in run(pipeline, aer + "\n" + xid))
    timeout = ("[rank3]:[E1120 10:10:03.000000000 ProcessGroupNCCL.cpp:616] [Rank 3] Watchdog caught collective "
               "operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran "
               "for 600001 milliseconds before timing out.")
    (inc,) = [i for i in run(pipeline, xid + "\n" + timeout) if i["initiator"]["xid"] == 79]
    assert [d["kind"] for d in inc["downstream"]] == ["nccl_timeout"]
    assert "earliest fault nothing else explains" in inc["explanation"] and "though" not in inc["explanation"]


def test_a_ray_worker_that_died_is_the_first_fault_of_its_peers_nccl_errors(pipeline):
    """Ray's raylet says a worker died of an unexpected system error (OpenRLHF/OpenRLHF#621), then a rank on that node
    raises "remote process exited": the worker's death is the initiator, on the node its address names, with its pid
    and exit type in the action, and the rank's NCCL error follows it (it was "no single culprit, another rank")."""
    died = ("(raylet) A worker died or was killed while executing a task by an unexpected system error. To troubleshoot "
            "the problem, check the logs for the dead worker. RayTask ID: ffff Worker ID: d893 Node ID: 8440 Worker IP "
            "address: 172.19.24.110 Worker port: 10185 Worker PID: 90738 Worker exit type: SYSTEM_ERROR Worker exit "
            "detail: Worker unexpectedly exits with a connection error code 2. End of file.")
    nccl = ("(RayWorkerWrapper pid=92234, ip=172.19.24.110) [rank1]:[E0115 07:59:58.483840160 ProcessGroupNCCL.cpp:542] "
            "[Rank 12] Collective WorkNCCL(SeqNum=1, OpType=BROADCAST, NumelIn=7, NumelOut=7, Timeout(ms)=1800000) "
            "raised the following async exception: NCCL error: remote process exited or there was a network error, "
            "NCCL version 2.21.5")
    (inc,) = run(pipeline, died + "\n" + nccl, host="driver")
    assert (inc["initiator"]["host"], inc["initiator"]["kind"]) == ("172.19.24.110", "other")
    assert inc["next_action"].startswith("A Ray worker (pid 90738) on 172.19.24.110 died of an unexpected system error "
                                         "(SYSTEM_ERROR)")
    assert [(d["kind"], d["relation"]) for d in inc["downstream"]] == [("nccl_error", "same_host")]


def test_a_ray_worker_the_watchdog_took_down_is_its_timeouts_report_not_a_first_fault(pipeline):
    """A rank's watchdog times out after two hours and takes its process down; in the same millisecond Ray's raylet
    says a worker on that node died (verl-project/verl#2995): the death was an incident apart, "the earliest fault
    nothing else explains" at 0.75 (a real-logs pass). It follows the timeout (``model.follow_watchdogs``) and
    reports it (``rank_failure.explains_torchrun_report``; ``follows_timeout``: not the reverse). A worker that died
    before its host's rank timed out is still what the rank waited on."""
    label = "(WorkerDict pid=835, ip=172.26.143.83) "
    timeout = (label + "[rank38]:[E809 14:59:30.411244289 ProcessGroupNCCL.cpp:629] [Rank 38] Watchdog caught "
               "collective operation timeout: WorkNCCL(SeqNum=10, OpType=ALLREDUCE, NumelIn=2, NumelOut=2, "
               "Timeout(ms)=7200000) ran for 7200015 milliseconds before timing out.")
    down = (label + "[rank38]:[E809 14:59:30.411351178 ProcessGroupNCCL.cpp:695] [Rank 38] To avoid data "
            "inconsistency, we are taking the entire process down.")
    died = ("(raylet) A worker died or was killed while executing a task by an unexpected system error. To "
            "troubleshoot the problem, check the logs for the dead worker. RayTask ID: ffff Worker ID: 39a9 Node ID: "
            "1f94 Worker IP address: 172.26.143.83 Worker port: 10005 Worker PID: 833 Worker exit type: SYSTEM_ERROR "
            "Worker exit detail: Worker unexpectedly exits with a connection error code 2. End of file.")
    for lines in ([timeout, down, died], [timeout, died]):  # the second: the death's stamp is the timeout's own
        (inc,) = run(pipeline, "\n".join(lines), host="driver")
        assert (inc["pattern"], inc["category"], inc["confidence"]) == ("comm.silent_rank", "nccl_hang", 0.3), inc
        assert ("other", "172.26.143.83") in [(d["kind"], d["host"]) for d in inc["downstream"]]
    # two hosts' ranks time out on the collective and Ray reports both workers dead: one hang, both deaths its reports
    # (the deaths were faults of their own, role "either", and kept the two hosts apart: a break-it pass)
    other = [x.replace("172.26.143.83", "172.26.143.84").replace("rank38", "rank39").replace("Rank 38", "Rank 39")
             .replace("Worker PID: 833", "Worker PID: 834") for x in (timeout, died)]
    (both,) = run(pipeline, "\n".join([timeout, other[0], died, other[1]]), host="driver")
    assert (both["pattern"], both["category"]) == ("comm.silent_rank", "nccl_hang"), both
    assert sorted((d["kind"], d["host"]) for d in both["downstream"] if d["kind"] == "other") == [
        ("other", "172.26.143.83"), ("other", "172.26.143.84")]


def test_a_line_delivered_twice_is_one_event_and_one_incident(pipeline):
    """At-least-once shippers deliver a line again (a producer's retry, a replay after a restart: another Kafka
    offset), and a kernel line may come through kern.log and the journal: the second copy was a second event, whose
    incident superseded the first under another id, paged again and said "it reported 2 lines" (a break-it pass). A
    line its own precise stamp dates has one event id wherever it came from; a second-precision stamp does not tell a
    repeat from a copy, so those stay apart."""
    line = ("2026-11-30T03:00:02.123456+00:00 dupnode kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=0, GPU has fallen off "
            "the bus.")

    def through(text: str, origins: list[str]):
        segs = [Segment(data=text.encode(), origin=o, stream=o.rsplit("/", 1)[0], host="dupnode", ref_ts=T0,
                        ref_basis="kafka", ingest_ts=T0) for o in origins]
        return pipeline.run(Decoded(segments=segs)).events

    import pyarrow as pa

    one = through(line, ["kafka:fleet.dmesg/0/7"])
    both = through(line, ["kafka:fleet.dmesg/0/7", "kafka:fleet.dmesg/0/9"])  # one batch: one event, counted once
    assert both.num_rows == 1 and both.column("count").to_pylist() == [1]
    later = through(line, ["kafka:fleet.dmesg/0/9"])  # a later batch: the same event again
    assert later.column("event_id").to_pylist() == one.column("event_id").to_pylist()
    (a,), (b,) = correlate(one, now_us=T0), correlate(pa.concat_tables([one, later]), now_us=T0)
    assert a["id"] == b["id"] and "reported" not in b["explanation"]
    coarse = line.replace("03:00:02.123456", "03:00:02")  # a repeat in the same second is counted, as before
    assert through(coarse, ["kafka:fleet.dmesg/0/7", "kafka:fleet.dmesg/0/9"]).column("count").to_pylist() == [2]


def test_a_rank_killed_by_sigbus_in_its_shared_memory_explains_its_peers(pipeline):
    """NCCL's shared-memory buffers are mapped files in /dev/shm; when /dev/shm cannot back a page the rank dies of
    SIGBUS with no NCCL WARN, UCX's handler printing "Caught signal 7 (Bus error: nonexistent physical address)"
    (msr-fiddle/pipedream#76, DeepSpeed#2638, Megatron-LM#516: /dev/shm too small in each). The line gave no event
    and the job's death no incident (a real-logs pass). It is the /dev/shm fault of nccl.shm.no_space, so it explains
    the surviving ranks' lost connections as that does; several ranks dying of it are one fault on every candidate,
    as are a PyTorch DataLoader worker's SIGBUS lines."""
    bus = "[2026-04-22 21:34:2{s}] [node07:37893{r}:0:38257{r}] Caught signal 7 (Bus error: nonexistent physical address)"
    lost = ("[2026-04-22 21:34:23] node07:378939:382529 [6] misc/socket.cc:538 NCCL WARN Net : Connection closed by "
            "remote peer node07<47861>")
    (inc,) = run(pipeline, "\n".join([bus.format(s=0, r=4), lost]))
    assert (inc["category"], inc["initiator"]["kind"]) == ("nccl_software", "nccl_error")
    assert inc["explanation"].endswith("it reported 2 lines (nccl.shm.bus_error, nccl.socket.peer_lost).")
    assert [(x["rule"], x["relation"]) for x in inc["evidence"]] == [("nccl_shm.explains_nccl", "same_host")]
    assert inc["next_action"].startswith("A rank of this job died of SIGBUS (a bus error) inside NCCL")
    (inc,) = run(pipeline, "\n".join([bus.format(s=0, r=4), bus.format(s=1, r=5), bus.format(s=1, r=8)]))
    assert inc["explanation"].endswith("it reported 3 lines.")
    assert inc["next_action"].startswith("A rank of this job died of SIGBUS")
    loader = ("[2026-04-22 21:34:20] RuntimeError: DataLoader worker (pid 3216) is killed by signal: Bus error. It is "
              "possible that dataloader's workers are out of shared memory. Please try to raise your shared memory "
              "limit.")
    (inc,) = run(pipeline, "\n".join([loader, lost]))
    assert inc["next_action"].startswith("A PyTorch DataLoader worker died of SIGBUS")
    assert [(x["rule"], x["relation"]) for x in inc["evidence"]] == [("nccl_shm.explains_nccl", "same_host")]


def test_a_line_whose_stamp_is_no_date_keeps_its_host_and_says_whose_time_it_took(pipeline):
    """A syslog line stamped "Feb 30" (or 23:59:60, or an offset of +99:00) lost its header's host with its time: two
    hosts' Xid 79 lines were one event of the file's host, and the incident gave the time of the line before it as its
    own (a break-it pass). The host stands, a leap second is a time, and a stamp that is no date is said to be."""
    xid = "{stamp} {host} kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=0, GPU has fallen off the bus."
    text = "\n".join([xid.format(stamp="2016-12-31T23:59:60.500000+00:00", host="node07"),
                      xid.format(stamp="2016-12-31T23:59:60.600000+00:00", host="node08"),
                      xid.format(stamp="Feb 30 14:15:47", host="node09")])
    incs = sorted(run(pipeline, text, host="collector"), key=lambda i: i["initiator"]["host"])
    assert [i["initiator"]["host"] for i in incs] == ["node07", "node08", "node09"]
    assert [i["start"] for i in incs] == ["2017-01-01T00:00:00.500000Z", "2017-01-01T00:00:00.600000Z",
                                          "2017-01-01T00:00:00.600000Z"]
    assert "of node07 at 2017-01-01T00:00:00.500000Z is the earliest" in incs[0]["explanation"]
    assert ("of node09 at about 2017-01-01T00:00:00.600000Z (the time of the line before it: its own stamp, Feb 30 "
            "14:15:47, is no date) is the earliest") in incs[2]["explanation"]
    assert incs[2]["start_basis"] == "inherited"
    far = xid.format(stamp="9999-01-01T00:00:00+00:00", host="node10")
    got = {i["initiator"]["host"]: i for i in run(pipeline, text + "\n" + far, host="collector")}
    assert ("of node10 at about 2017-01-01T00:00:00.600000Z (the time of the line before it: its own stamp is no "
            "believable time) is the earliest") in got["node10"]["explanation"]


def test_a_device_fault_on_another_host_that_no_rule_ties_is_an_incident_of_its_own(pipeline):
    """A job's communicator joins its hosts' faults into one candidate incident. node07's GPU fell off the bus and
    explains the job's watchdog timeouts; node08's fatal NVLink error two seconds later is explained by nothing (no
    NVLink joins two hosts without an NVLink domain). It was listed downstream of node07 "by no rule" with the
    relation ``same_domain`` no fleet config gave, and never paged (a fresh user's trial). It is an incident of its
    own; the job's timeouts stay node07's; a fault on another host that a rule does tie stays downstream."""
    job = "\n".join([
        "node07:1234:1290 [0] NCCL INFO comm 0x55d1c0a0 rank 0 nranks 4 cudaDev 0 busId 3b000 commId 0x7f2d1c3e5a6b7c8d"
        " - Init COMPLETE",
        "node07:1235:1291 [1] NCCL INFO comm 0x55d1c0b0 rank 1 nranks 4 cudaDev 1 busId 5e000 commId 0x7f2d1c3e5a6b7c8d"
        " - Init COMPLETE",
        "node08:2345:2390 [0] NCCL INFO comm 0x55e1c0a0 rank 2 nranks 4 cudaDev 0 busId 18000 commId 0x7f2d1c3e5a6b7c8d"
        " - Init COMPLETE",
        "node08:2346:2391 [1] NCCL INFO comm 0x55e1c0b0 rank 3 nranks 4 cudaDev 1 busId 86000 commId 0x7f2d1c3e5a6b7c8d"
        " - Init COMPLETE",
        *(f"[rank{r}]:[E1204 03:20:02.{r}12345913 ProcessGroupNCCL.cpp:616] [Rank {r}] Watchdog caught collective "
          f"operation timeout: WorkNCCL(SeqNum=8812, OpType=ALLREDUCE, NumelIn=262144, NumelOut=262144, "
          f"Timeout(ms)=600000) ran for 600071 milliseconds before timing out." for r in (1, 2, 3))])
    x79 = "Dec  4 03:10:02 node07 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=0, GPU has fallen off the bus."
    x74 = ("Dec  4 03:10:04 node08 kernel: NVRM: Xid (PCI:0000:18:00): 74, pid='<unknown>', name=<unknown>, NVLink: "
           "fatal error detected on link {l}(0x0, 0x0, 0x10000, 0x0, 0x0, 0x0, 0x0)")
    segs = [Segment(data=t.encode(), origin=f"t:{h}", stream=h, host=h, ref_ts=T0, ref_basis="kafka", ingest_ts=T0)
            for h, t in (("job", job), ("node07", x79), ("node08", x74.format(l=3) + "\n" + x74.format(l=5)))]
    b = pipeline.run(Decoded(segments=segs))
    incs = sorted(correlate(b.events, b.link_samples, b.topology, now_us=T0), key=lambda i: i["start"])
    assert [(i["initiator"]["host"], i["initiator"]["xid"], i["category"]) for i in incs] == [
        ("node07", 79, "gpu_off_bus"), ("node08", 74, "link_fault")]
    lost, link = incs
    assert {(d["host"], d["kind"], d["relation"]) for d in lost["downstream"]} == {
        ("node07", "nccl_timeout", "same_comm"), ("node08", "nccl_timeout", "same_comm")}
    assert "no rule ties" not in lost["explanation"]
    assert (link["initiator"]["device"], link["downstream"]) == ("0000:18:00.0", [])
    # what the split-off fault explains goes with it: the NCCL error of rank 2, on that GPU, a second later (it stayed
    # behind as a party "no rule ties" to node07's: a break-it pass)
    warn = ("[2026-12-04 03:10:05] node08:2345:2400 [0] transport/net_ib.cc:1295 NCCL WARN NET/IB : Got completion "
            "from peer 10.1.0.7<41234> with status=12 opcode=0 len=0 vendor err 129 (Recv)")
    segs.append(Segment(data=warn.encode(), origin="t:node08n", stream="node08n", host="node08", ref_ts=T0,
                        ref_basis="kafka", ingest_ts=T0))
    b = pipeline.run(Decoded(segments=segs))
    incs = sorted(correlate(b.events, b.link_samples, b.topology, now_us=T0), key=lambda i: i["start"])
    assert [(i["initiator"]["host"], i["initiator"]["xid"]) for i in incs] == [("node07", 79), ("node08", 74)]
    assert [(d["kind"], d["relation"]) for d in incs[1]["downstream"]] == [("nccl_error", "same_host")]
    assert "nccl_error" not in {d["kind"] for d in incs[0]["downstream"]}
    segs.pop()
    # two GPUs fallen off the bus on two hosts of the job, seconds apart: neither explains the other and either
    # explains the timeouts — no single culprit, the two said together as candidates (not split: one has no edge)
    later = "Dec  4 03:10:09 node08 kernel: NVRM: Xid (PCI:0000:18:00): 79, pid=0, GPU has fallen off the bus."
    segs[2] = Segment(data=later.encode(), origin="t:node08", stream="node08", host="node08", ref_ts=T0,
                      ref_basis="kafka", ingest_ts=T0)
    b = pipeline.run(Decoded(segments=segs))
    (inc,) = correlate(b.events, b.link_samples, b.topology, now_us=T0)
    assert sorted(inc["initiator"]["candidates"]) == ["gpu 0000:18:00.0 on node08", "gpu 0000:3b:00.0 on node07"]


def test_nccls_own_warn_explains_the_ranks_pytorch_nccl_error(pipeline):
    """PyTorch raises a failed NCCL call's result as "NCCL error: remote process exited or there was a network error,
    NCCL version …"; NCCL's WARN line before it says what failed. The two were two candidates of "no single culprit"
    (a real-logs pass on deepspeedai/DeepSpeed#6875: a NET/IB completion error with status 12, then rank 4's
    ncclRemoteError). The WARN is the initiator and the rank's error follows it."""
    warn = ("[2025-12-29 16:47:24] nodea:34610:36821 [4] ib_plugin.c:1673 NCCL WARN NET/IB: Got completion from peer "
            "10.0.0.2<47140> with status=12 opcode=0 len=0 vendor err 129 (Recv) hca ibp152s0")
    err = ("[rank4]:[E1229 16:47:25.333820755 ProcessGroupNCCL.cpp:541] [Rank 4] found async exception when checking "
           "for NCCL errors: NCCL error: remote process exited or there was a network error, NCCL version 2.22.3")
    (inc,) = run(pipeline, warn + "\n" + err, host="nodea")
    assert (inc["category"], inc["initiator"]["gpu_index"], inc["initiator"]["kind"]) == ("ib_port", 4, "nccl_error")
    assert [(d["rank"], d["relation"]) for d in inc["downstream"]] == [(4, "same_host")]
    assert [x["rule"] for x in inc["evidence"]] == ["nccl_warn.explains_torch_nccl_error"]


def test_ncclGetLastError_quoted_in_an_exception_is_a_copy_of_the_warn_not_a_second_report(pipeline):
    """PyTorch's NCCL exception ends in "Last error:" and ncclGetLastError(), NCCL's last WARN without its prefix: the
    copy was a second NET/IB report of the host without a GPU, and the failure had two candidates (a real-logs pass on
    deepspeedai/DeepSpeed#6875's whole excerpt). The copy is marked (``details.quote``), its WARN explains it, and
    the exception's "ncclRemoteError: …" line follows the WARN as its first line does. With torchrun's ``[rankN]:``
    before every line too; a line after "Last error:" that NCCL printed with its own prefix is no copy."""
    from api.pager import describe_initiator as page_initiator
    from api.render import describe_initiator

    warn = ("[2025-12-29 16:47:24] nodea:34610:36821 [4] ib_plugin.c:1673 NCCL WARN NET/IB: Got completion from peer "
            "10.0.0.2<47140> with status=12 opcode=0 len=0 vendor err 129 (Recv) hca ibp152s0")
    for tag in ("", "[rank4]: "):
        exc = "\n".join(tag + x for x in (
            "[E1229 16:47:25.333820755 ProcessGroupNCCL.cpp:541] [Rank 4] found async exception when checking for "
            "NCCL errors: NCCL error: remote process exited or there was a network error, NCCL version 2.22.3",
            "ncclRemoteError: A call failed possibly due to a network error or a remote process exiting prematurely.",
            "Last error:",
            "NET/IB: Got completion from peer 10.0.0.2<47140> with status=12 opcode=0 len=0 vendor err 129 (Recv) hca "
            "ibp152s0"))
        (inc,) = run(pipeline, warn + "\n" + exc, host="nodea")
        assert (inc["pattern"], inc["category"], inc["initiator"]["gpu_index"]) == ("roots", "ib_port", 4), tag
        rules = {x["rule"] for x in inc["evidence"]}
        assert rules == {"nccl_warn.explains_torch_nccl_error", "nccl_warn.explains_its_last_error_quote"}, tag
        assert "candidates" not in inc["initiator"] and "earliest fault nothing else explains" in inc["explanation"]
        # the table and the page name the rank's report on its GPU, not a fault of the GPU (real-logs passes on
        # NVIDIA/nccl#1405 and #302: a NET/IB error read "node gpu index 4")
        assert describe_initiator(inc["initiator"]) == "nodea rank on gpu index 4 (nccl_error)", tag
        assert page_initiator(inc) == "the rank on GPU index 4 on nodea (nccl_error)", tag
    assert describe_initiator({"host": "n1", "device_type": "gpu", "gpu_index": 4, "kind": "xid", "xid": 79}) == \
        "n1 gpu index 4 (Xid 79)"
    # downstream too: "node08:0000:3b:00.0" beside a failed GPU of that bus id on node07 read as a second faulty GPU
    from api.render import _party_label
    assert _party_label({"host": "node08", "device": "0000:3b:00.0", "kind": "nccl_error", "events": ["e1"]}) == \
        "node08:nccl_error (rank on 0000:3b:00.0)"
    assert _party_label({"host": "node08", "device": "0000:3b:00.0", "kind": "xid", "events": ["e1"]}) == \
        "node08:0000:3b:00.0"
    seg = Segment(data=(warn + "\n" + exc).encode(), origin="t:nodea", stream="nodea", host="nodea", ref_ts=T0,
                  ref_basis="kafka", ingest_ts=T0)
    ev = pipeline.run(Decoded(segments=[seg])).events.to_pylist()
    quoted = [e["signature"] for e in ev if "quote" in orjson.loads(e["details"] or "{}")]
    assert quoted == ["nccl.net_ib.completion_error"]
    # NCCL's own line after an unrelated "Last error:" keeps its prefix: not a copy
    own = "Last error:\n" + warn
    ev = pipeline.run(Decoded(segments=[Segment(data=own.encode(), origin="t:nodea", stream="nodea", host="nodea",
                                                ref_ts=T0, ref_basis="kafka", ingest_ts=T0)])).events.to_pylist()
    assert [("quote" in orjson.loads(e["details"] or "{}"), e["gpu_index"]) for e in ev] == [(False, 4)]


@pytest.mark.parametrize("tag", ["", "[rank4]: ", "2025-12-29T16:47:25.333Z [rank4]: ",
                                 "(RayWorkerWrapper pid=1019) [rank4]: ",
                                 "(MegatronPolicyWorker[rank=4] pid=1892406, ip=10.0.0.1) [rank4]: ",
                                 "Dec 29 16:47:25 nodea python3[34610]: [rank4]: ",
                                 # c10's and Open MPI's labels print no blank after them (a break-it pass)
                                 "Dec 29 16:47:25 nodea python3[34610]: [rank4]:",
                                 "(RayTrainWorker pid=1892406, ip=10.0.0.1) [rank4]:",
                                 "Dec 29 16:47:25 nodea mpirun[34610]: [1,4]<stderr>:"])
def test_ncclGetLastError_quoted_behind_any_wrappers_prefix_is_marked_a_copy(tag, pipeline):
    """The quote of NCCL's last error is the same copy behind every wrapper's prefix: behind Ray's
    ``(Worker pid=N) `` (its pid read as the line's) or a syslog tag, or a prefix over 40 bytes before "Last error:",
    it was read as a second report of its own (the last stop's open finding). A line NCCL printed after "Last error:"
    behind the same prefix, its own ``host:pid:tid [dev]`` on it, is no copy."""
    quoted = "NET/IB: Got completion from peer 10.0.0.2<47140> with status=12 opcode=0 len=0 vendor err 129 (Recv)"
    own = "nodea:34610:36821 [4] ib_plugin.c:1673 NCCL WARN " + quoted
    for line, copy in ((quoted, True), (own, False)):
        text = "\n".join(tag + x for x in (
            "ncclRemoteError: A call failed possibly due to a network error or a remote process exiting prematurely.",
            "Last error:", line))
        seg = Segment(data=text.encode(), origin="t:nodea", stream="nodea", host="nodea", ref_ts=T0,
                      ref_basis="kafka", ingest_ts=T0)
        ev = pipeline.run(Decoded(segments=[seg])).events.to_pylist()
        got = [("quote" in orjson.loads(e["details"] or "{}")) for e in ev
               if e["signature"] == "nccl.net_ib.completion_error"]
        assert got == [copy], (tag, line, got)


def test_a_programs_ncclcheck_line_follows_the_warn_that_says_what_failed(pipeline):
    """nccl-tests' "<host>: Test NCCL failure common.cu:958 '<ncclGetErrorString> / '" (and a program's NCCLCHECK
    of NCCL's documentation, "Failed, NCCL error <file>:<line>") gave no event: a run whose WARN lines were not
    logged had nothing at all (real-logs pass, NVIDIA/nccl#473, NVIDIA/nccl-tests#322, CAPS-UMU/FIDESlib#14). It is
    the host's NCCL error, named by the host the line prints, and NCCL's WARN before it explains it."""
    warn = ("[2026-12-04 03:10:01] nodea:9621:9685 [0] misc/socket.cc:538 NCCL WARN Net : Call to recv from "
            "10.0.0.2<43210> failed : Connection reset by peer")
    fail = "nodea: Test NCCL failure common.cu:958 'remote process exited or there was a network error / '"
    (inc,) = run(pipeline, warn + "\n" + fail, host="job-17")
    assert inc["pattern"] == "comm.peer_failed", inc["pattern"]
    assert {x["rule"] for x in inc["evidence"]} == {"nccl_warn.explains_torch_nccl_error"}
    (inc,) = run(pipeline, "fastmoe: Test NCCL failure common.cu:777 'unhandled system error'", host="job-17")
    assert (inc["initiator"]["host"], inc["initiator"]["kind"]) == ("fastmoe", "nccl_error")
    assert "NCCL call of this program failed" in inc["next_action"]


def test_a_quoted_last_error_alone_stands_for_its_warn(pipeline):
    """NVIDIA/nccl#2076: the exception's copy of NCCL's last error is all the logs hold ("socketProgressOpt: Call to
    recv from … failed : Connection reset by peer"); it names the lost peer as the WARN would, and the next step names
    the peer's address once (it read "Diagnose the logs of 172.16.0.5 (the peer at 172.16.0.5)")."""
    text = "\n".join("[rank1]: " + x for x in (
        "torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/NCCLUtils.hpp:268, "
        "remote process exited or there was a network error, NCCL version 2.21.5",
        "ncclRemoteError: A call failed possibly due to a network error or a remote process exiting prematurely.",
        "Last error:",
        "socketProgressOpt: Call to recv from 172.16.0.5<33759> failed : Connection reset by peer"))
    (inc,) = run(pipeline, text, host="node")
    assert (inc["pattern"], inc["initiator"]["candidates"]) == ("comm.peer_failed", ["the peer at 172.16.0.5"])
    assert inc["next_action"].startswith("Diagnose the logs of 172.16.0.5 with these:")


def test_one_peer_that_several_hosts_lost_is_named_once_and_by_its_host(pipeline):
    """Three hosts' ranks lose the same peer, 10.1.0.3, whose Bootstrap line says it is gpu-n03: the incident named
    "the peer at 10.1.0.3 (gpu-n03)" once per reporting host, three times in every field, and asked to "find the
    hosts of" a peer it had named (a fresh user's trial). It is one peer, and its host is the one to diagnose."""
    boot = ("2026-12-04T02:00:01.100000Z gpu-n0{n}:{n}100:{n}150 [0] NCCL INFO Bootstrap : Using eth0:10.1.0.{n}<0>\n"
            "2026-12-04T02:00:01.200000Z gpu-n0{n}:{n}100:{n}150 [0] NCCL INFO comm 0x5500{n} rank {r} nranks 4 cudaDev 0 "
            "nvmlDev 0 busId 18000 commId 0xabcdef0123456789 - Init COMPLETE")
    lost = ("2026-12-04T03:12:01.600000Z gpu-n0{n}:{n}100:{n}190 [0] misc/socket.cc:538 NCCL WARN Net : Call to recv "
            "from 10.1.0.3<43210> failed : Connection timed out")
    segs = [Segment(data=(boot.format(n=n, r=n - 1) + ("\n" + lost.format(n=n) if n != 3 else "")).encode(),
                    origin=f"t:gpu-n0{n}", stream=f"gpu-n0{n}", host=f"gpu-n0{n}", ref_ts=T0, ref_basis="kafka",
                    ingest_ts=T0) for n in (1, 2, 3, 4)]
    b = pipeline.run(Decoded(segments=segs))
    (inc,) = correlate(b.events, b.link_samples, b.topology, now_us=T0)
    assert (inc["pattern"], inc["initiator"]["candidates"]) == ("comm.peer_failed", ["the peer at 10.1.0.3 (gpu-n03)"])
    assert "report that a peer went away (the peer at 10.1.0.3 (gpu-n03)):" in inc["explanation"]
    assert inc["next_action"].startswith("Diagnose the logs of gpu-n03 (the peer at 10.1.0.3) with these:")
    assert inc["missing"][0] == "the kernel and NCCL logs of gpu-n03"


def test_one_xid_on_two_links_at_once_is_no_repeat(pipeline):
    """An Xid 74 on links 3 and 5 in one second is one report of two links; it read "It did: 2 lines of Xid 74"
    beside the catalog's "reseat/diag if it repeats" (a fresh user's trial). Lines of one second count once; the
    same Xid a second apart is a repeat, said as times."""
    x74 = ("[Fri Dec  4 03:10:0{s} 2026] NVRM: Xid (PCI:0000:18:00): 74, pid='<unknown>', name=<unknown>, NVLink: "
           "fatal error detected on link {l}(0x0, 0x0, 0x10000, 0x0, 0x0, 0x0, 0x0)")
    (inc,) = run(pipeline, x74.format(s=4, l=3) + "\n" + x74.format(s=4, l=5))
    assert "reseat/diag if it repeats" in inc["next_action"] and "It did" not in inc["next_action"]
    (inc,) = run(pipeline, x74.format(s=4, l=3) + "\n" + x74.format(s=6, l=3))
    # then what its registers say (formats.md §2.2): the 3rd register's bit 16, field diagnostics when it repeats
    assert inc["next_action"].endswith("reseat/diag if it repeats. It did: Xid 74 came 2 times. Its registers (3rd "
                                       "register bit 16) say: if it repeats, run NVIDIA's field diagnostics and "
                                       "report it.")


def test_nccl_without_the_cuda_library_is_the_library_path_not_a_gpu(pipeline):
    """NCCL that cannot load libcuda.so (WSL 2 keeps it in /usr/lib/wsl/lib: hiyouga/LlamaFactory#1169) fails every
    CUDA call, and PyTorch raises ncclUnhandledCudaError: it was a plain NCCL warning per rank with "collect the kernel
    log". It is an NCCL software fault whose action is the library path, and it explains the rank's error."""
    warn = ("node01:{pid}:{pid} [{dev}] misc/cudawrap.cc:179 NCCL WARN Failed to find CUDA library libcuda.so "
            "(NCCL_CUDA_PATH='') : libcuda.so: cannot open shared object file: No such file or directory")
    text = "\n".join([warn.format(pid=4163, dev=0), warn.format(pid=4164, dev=1),
                      "[rank0]: torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
                      "ProcessGroupNCCL.cpp:1691, unhandled cuda error (run with NCCL_DEBUG=INFO for details), NCCL "
                      "version 2.18.5",
                      "ncclUnhandledCudaError: Call to CUDA function failed."])
    (inc,) = run(pipeline, text, host="node01")
    assert inc["category"] == "nccl_software"
    assert "NCCL could not load the CUDA driver's library (libcuda.so)" in inc["next_action"]
    assert "kernel log" not in inc["next_action"]
    # the two ranks that could not load it are the candidates; rank 0's exception, which it explains, is none
    assert inc["initiator"]["candidates"] == ["gpu index 0 on node01", "gpu index 1 on node01"]


def test_an_hca_nccl_skips_at_init_is_no_fault(pipeline):
    """In a container NCCL lists every HCA of the host and skips those it cannot open ("NET/IB : Unable to open
    device mlx5_59", after "Call to ibv_open_device failed"), then uses the others: each rank's two WARNs were a
    fault of its GPU, an incident with every GPU a suspect (zai-org/ImageReward#65, a real-logs pass). They are
    init context: no incident."""
    lines = ["pod-2dxbs:80744:80744 [1] misc/ibvwrap.cc:212 NCCL WARN Call to ibv_open_device failed",
             "pod-2dxbs:80746:80746 [3] transport/net_ib.cc:149 NCCL WARN NET/IB : Unable to open device mlx5_59",
             "pod-2dxbs:80746:80746 [3] NCCL INFO NET/IB : Using [0]mlx5_1:1/RoCE [1]mlx5_18:1/RoCE ; OOB "
             "eth0:192.0.2.7<0>"]
    assert run(pipeline, "\n".join(lines), host="pod-2dxbs") == []
    # any other NCCL WARN of init is still a warning ("NET/IB : No device found." is a fact of its own now:
    # nccl.net_ib.no_device, sockets instead of InfiniBand)
    (other,) = run(pipeline, "pod-2dxbs:80746:80746 [3] transport/net_ib.cc:160 NCCL WARN NET/IB : Unable to query "
                             "device mlx5_59", host="pod-2dxbs")
    assert other["severity"] == "warning"


def test_a_cuda_failure_nccl_warns_of_is_this_ranks_own(pipeline):
    """NCCL's "Cuda failure 999 'unknown error'" (NVIDIA/nccl#1653: one desktop host) was a generic warning that gave
    way, as the initiator's line, to the PyTorch exception it explains, whose action points at "another rank". It is
    a CUDA error of this rank's GPU (signature nccl.cuda_failure), and a WARN bounded by the stamped line after it
    names the initiator before that line (``attribute.lead_key``)."""
    text = ("desktop-1:1689:2800 [0] include/alloc.h:112 NCCL WARN Cuda failure 999 'unknown error'\n"
            "desktop-1:1689:2800 [0] NCCL INFO include/alloc.h:199 -> 1\n"
            "2025-03-21 17:08:31,569 - finetrainers - ERROR - Error during training: NCCL error in: /pytorch/torch/csrc/"
            "distributed/c10d/NCCLUtils.hpp:268, unhandled cuda error (run with NCCL_DEBUG=INFO for details), NCCL "
            "version 2.21.5\n"
            "ncclUnhandledCudaError: Call to CUDA function failed.")
    (inc,) = run(pipeline, text, host="desktop-1")
    assert (inc["initiator"]["host"], inc["initiator"]["gpu_index"]) == ("desktop-1", 0)
    assert inc["next_action"].startswith("A CUDA call NCCL made on this rank's GPU failed ('unknown error')")
    assert "another rank" not in inc["next_action"]


TORCHRUN_SUMMARY = """torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
============================================================
train.py FAILED
------------------------------------------------------------
Failures:
[1]:
  time      : 2024-09-11_09:17:38
  host      : node9017.cluster.local
  rank      : 0 (local_rank: 0)
  exitcode  : -15 (pid: 886321)
  error_file: <N/A>
  traceback : Signal 15 (SIGTERM) received by PID 886321
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2024-09-11_09:17:37
  host      : node9018.idas
  rank      : 1 (local_rank: 1)
  exitcode  : {code} (pid: 886322)
  error_file: <N/A>
  traceback : Signal 6 (SIGABRT) received by PID 886322
============================================================"""


def test_torchrun_s_failure_summary_names_the_rank_and_host_that_failed_first(pipeline):
    """torchrun's ``ChildFailedError`` summary gave no event (NVIDIA/nccl#1439, a real-logs pass): its root cause's
    record, framed into one line with the line that names it (``ingest.frame``), names the rank, the host it ran on
    and the exit code. A kill (-9) is that rank's failure; another code is a report of what its own log says, which
    the incident asks for by rank and host. The other failures' records (``Failures:``) are no event."""
    b = pipeline.run(Decoded(segments=[Segment(data=TORCHRUN_SUMMARY.format(code=-6).encode(), origin="t:job",
                                               stream="job", host="job", ref_ts=T0, ref_basis="kafka", ingest_ts=T0)]))
    assert b.events.column("signature").to_pylist() == ["torch.elastic.root_cause"]
    ev = b.events.to_pylist()[0]
    # the log's host (the record's stays in details: a job log's other lines are of the same agent's host, and the
    # record on a host of its own split one failure into two incidents, a break-it pass); the record's time when the
    # line has none (its file's time parted it from the kernel's OOM kill of that pid: a second one)
    assert (ev["host"], ev["rank"], ev["pid"], orjson.loads(ev["details"])["failed_host"]) == ("job", 1, 886322,
                                                                                             "node9018.idas")
    assert (ev["ts"].isoformat(), ev["ts_basis"]) == ("2024-09-11T09:17:37+00:00", "line")
    assert ev["message"].startswith("Root Cause (first observed failure):\n[0]:\n  time      : 2024-09-11_09:17:37")
    (abort,) = run(pipeline, TORCHRUN_SUMMARY.format(code=-6))
    assert (abort["pattern"], abort["initiator"]["candidates"]) == ("unknown", ["rank 1 on node07"])
    assert abort["next_action"].startswith("The first failure torchrun observed: rank 1 (local_rank 1, pid 886322) "
                                           "on node9018.idas exited with -6")
    (killed,) = run(pipeline, TORCHRUN_SUMMARY.format(code=-9))
    assert (killed["initiator"]["host"], killed["initiator"]["rank"], killed["category"]) == ("node07", 1,
                                                                                           "application")
    assert "OOM killer" in killed["next_action"]
    oom = "[Wed Sep 11 09:17:36 2024] Out of memory: Killed process 886322 (python) total-vm:1kB, anon-rss:1kB"
    (by_oom,) = run(pipeline, oom + "\n" + TORCHRUN_SUMMARY.format(code=-9))
    assert (by_oom["category"], [d["kind"] for d in by_oom["downstream"]]) == ("host_memory", ["other"])
    # stopped from outside (SIGTERM: a preemption, scancel): not "the worker ended itself"
    (term,) = run(pipeline, TORCHRUN_SUMMARY.format(code=-15))
    assert "was stopped from outside (exit -15" in term["next_action"] and "ended itself" not in term["next_action"]
    # a record's fields join its head only: indented lines after another line stay lines of their own
    other = TORCHRUN_SUMMARY.format(code=-9).replace("Root Cause (first observed failure):\n[0]:\n", "Root Cause:\n")
    assert run(pipeline, other) == []


def test_c10d_store_and_monitored_barrier_reports_say_whose_failure_they_report(pipeline):
    """c10d's store lines (a lost TCPStore server, gpustack/gpustack#6019, sgl-project/sglang#20859) and the
    monitored barrier's (pytorch/pytorch#76198) gave no event (a real-logs pass): they are reports, and say where to
    look — the store's host, the rank the barrier names; a port the store could not bind is its host's fault."""
    lost = ("[rank12]:[W318 10:00:41.915284135 TCPStore.cpp:125] [c10d] recvValue failed on SocketImpl(fd=135, "
            "addr=[node02]:48750, remote=[node01]:20000): Connection reset by peer")
    (inc,) = run(pipeline, lost, host="node02")
    assert (inc["pattern"], inc["initiator"]["candidates"]) == ("unknown", ["rank 12 on node02"])
    assert inc["next_action"].startswith("The c10d key-value store (TCPStore, at MASTER_ADDR:MASTER_PORT: node01)")
    barrier = ("[E ProcessGroupGloo.cpp:136] Rank 1 successfully reached monitoredBarrier, but received errors while "
               "waiting for send/recv from rank 0. Please check rank 0 logs for faulty rank.")
    (inc,) = run(pipeline, barrier, host="node02")
    assert inc["pattern"] == "unknown" and inc["next_action"].startswith("PyTorch's monitored barrier names the "
                                                                         "faulty rank 0")
    bind = ("[W socket.cpp:436] [c10d] The server socket has failed to bind to 0.0.0.0:29500 (errno: 98 - Address "
            "already in use).")
    (inc,) = run(pipeline, bind, host="node01")
    assert (inc["initiator"]["host"], inc["category"]) == ("node01", "nccl_software")
    ipv6 = ("[W socket.cpp:436] [c10d] The server socket has failed to bind to [::]:29500 (errno: 97 - Address family "
            "not supported by protocol).")
    assert run(pipeline, ipv6, host="node01") == []
    (inc,) = run(pipeline, bind.replace("0.0.0.0", "10.0.0.9").replace("98 - Address already in use",
                                                                        "99 - Cannot assign requested address"))
    assert "MASTER_ADDR is no address of this host" in inc["next_action"]


def test_downstream_reports_alone_name_no_culprit_and_ask_for_the_first_failure(pipeline):
    """A job's lines that only report a failure that began elsewhere — PyTorch taking its process down, torchrun's
    worker that ended itself with -6 (modelscope/ms-swift#6301) — were "the earliest fault nothing else explains" at
    0.75 (a real-logs pass). Alone they name no culprit and ask for the first failure's logs; beside that failure
    (a rank's CUDA out-of-memory error, modelscope/ms-swift#5943) it is the initiator, an application fault."""
    down = ("[rank3]:[E626 16:48:25.440271515 ProcessGroupNCCL.cpp:698] [Rank 3] To avoid data inconsistency, we are "
            "taking the entire process down.")
    agent = ("E0626 16:48:31.101000 2904014 site-packages/torch/distributed/elastic/multiprocessing/api.py:882] failed "
             "(exitcode: -6) local_rank: 3 (pid: 2904068) of binary:  /usr/bin/python")
    keepalive = ("WARNING:torch.distributed.elastic.rendezvous.dynamic_rendezvous:The node 'docker.b_3427_0' has "
                 "failed to send a keep-alive heartbeat to the rendezvous 'test' due to an error of type "
                 "RendezvousConnectionError.")
    # reports of one kind say where to look themselves (torchrun's lost rendezvous: its endpoint's host; it was "the
    # job's other ranks", pytorch/pytorch#67742, a real-logs pass); reports of several kinds (torchrun's line is the
    # watchdog's, explained by it), the first failure
    for text, act in ((down, "PyTorch's NCCL watchdog is taking this process down"),
                      (agent, "Worker local_rank 3 (pid 2904068) of torchrun "),
                      (down + "\n" + agent, "PyTorch's NCCL watchdog is taking this process down"),
                      (keepalive + "\n" + down, "Find the failure these lines report"),
                      (keepalive, "The torchrun agent on this node cannot reach the rendezvous (test: "
                                  "RendezvousConnectionError)")):
        (inc,) = run(pipeline, text)
        assert (inc["pattern"], inc["confidence"], inc["initiator"]["device"]) == ("unknown", 0.3, None), inc
        assert inc["explanation"].startswith("Only downstream reports: "), inc["explanation"]
        assert inc["missing"][0].startswith("the first failure these lines report"), inc["missing"]
        assert inc["next_action"].startswith(act), inc["next_action"]
    # torchrun's line three seconds after its worker's watchdog timeout is that timeout's (it was an incident apart:
    # a break-it pass); the timeout stays "not the cause"
    timeout = ("[rank3]:[E626 16:48:22.440271515 ProcessGroupNCCL.cpp:616] [Rank 3] Watchdog caught collective "
               "operation timeout: WorkNCCL(SeqNum=52311, OpType=ALLREDUCE, NumelIn=8, NumelOut=8, Timeout(ms)=600000) "
               "ran for 600047 milliseconds before timing out.")
    (hang,) = run(pipeline, "\n".join([timeout, down, agent.replace("16:48:31", "16:48:25")]))
    assert (hang["pattern"], hang["category"]) == ("comm.silent_rank", "nccl_hang"), hang
    # a downstream line whose signature names its cause (CUDA 802: Fabric Manager) is that cause's, with its action
    # (ollama/ollama#12136: it was "only downstream reports", a second real-logs pass)
    (fm,) = run(pipeline, "ggml_cuda_init: failed to initialize CUDA: system not yet initialized")
    assert fm["category"] == "fabric_manager" and fm["next_action"].startswith("CUDA cannot start"), fm
    oom = ("[rank1]:[E626 16:48:20.000000000 x.py:1] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.63 "
           "GiB. GPU 1 has a total capacity of 79.11 GiB of which 2.61 GiB is free.")
    (inc,) = run(pipeline, oom.replace("[E626 16:48:20.000000000 x.py:1] ", "") + "\n" + down + "\n" + agent)
    assert (inc["category"], inc["initiator"]["kind"], inc["initiator"]["gpu_index"]) == ("application", "cuda_error", 1)
    assert inc["next_action"].startswith("The program ran out of GPU memory on this rank (tried to allocate 2.63 GiB)")


def test_xla_aborting_a_communicator_for_a_remote_error_reports_a_peer(pipeline):
    """XLA's "Aborting communicator: … due to async NCCL error: remote process exited or there was a network error"
    gave no event (NVIDIA/JAX-Toolbox#194: other processes segfaulted first; a real-logs pass): it reports another
    process's failure, as PyTorch's ncclRemoteError does."""
    (inc,) = run(pipeline, "2023-08-25 11:06:39.330561: E external/xla/xla/service/gpu/nccl_utils.cc:191] Aborting "
                           "communicator: 0x5555a108ff90 due to async NCCL error: remote process exited or there was a "
                           "network error")
    assert inc["pattern"] == "comm.peer_failed" and inc["initiator"]["device"] is None, inc
    assert "reports that a peer went away" in inc["explanation"]


def test_every_gpu_of_a_host_failing_init_alike_blames_what_they_share(pipeline):
    """Two GPUs of one host (a VM's passed-through pair) failing RmInitAdapter with the same code every five seconds,
    nothing else logged (NVIDIA/gpu-operator#649): "no single culprit" between the two with an NCCL-log next action
    before (a real-logs pass); the host's driver, PCIe/IOMMU or passthrough now, at 0.6. One GPU alone, two codes,
    or a cause a rule names (an API mismatch) stay as they were."""
    fail = ("[  {t}.281578] NVRM: GPU 0000:04:0{g}.0: RmInitAdapter failed! ({code})\n"
            "[  {t}.281732] NVRM: GPU 0000:04:0{g}.0: rm_init_adapter failed, device minor number {m}")
    both = "\n".join(fail.format(t=594 + 5 * i, g=1 + i % 2, m=i % 2, code="0x11:0x45:2525") for i in range(4))
    (inc,) = run(pipeline, both, host="ocpworker")
    assert (inc["pattern"], inc["category"], inc["initiator"]["host"], inc["initiator"]["device"]) == (
        "platform.every_gpu_init_failed", "driver", "ocpworker", None)
    assert "2 GPUs of ocpworker (0000:04:01.0, 0000:04:02.0) fail to initialise with the same code" in inc["explanation"]
    assert "NCCL" not in inc["next_action"] and inc["confidence"] == 0.6
    one = "\n".join(fail.format(t=594 + 5 * i, g=1, m=0, code="0x11:0x45:2525") for i in range(2))
    assert run(pipeline, one, host="ocpworker")[0]["pattern"] != "platform.every_gpu_init_failed"
    two_codes = both.replace("04:02.0: RmInitAdapter failed! (0x11:0x45:2525)", "04:02.0: RmInitAdapter failed! (0x62:0x40:2477)")
    assert two_codes != both
    assert run(pipeline, two_codes, host="ocpworker")[0]["pattern"] != "platform.every_gpu_init_failed"


def test_a_row_remap_pending_in_nvidia_smi_q_is_its_sections_gpus_ecc_fault(pipeline):
    """``nvidia-smi -q``'s "Remapped Rows … Pending : Yes" gave no event (leptonai/gpud#80: "This should alert"; a
    real-logs pass): an ECC fault of the section's GPU, whose reset applies the remap. ECC Mode's "Pending : Enabled"
    is no fault."""
    text = ("GPU 00000000:19:00.0\n    Remapped Rows\n        Correctable Error                 : 0\n"
            "        Uncorrectable Error               : 4\n        Pending                           : Yes\n"
            "        Remapping Failure Occurred        : No\n    ECC Mode\n        Current                           : "
            "Enabled\n        Pending                           : Enabled")
    (inc,) = run(pipeline, text)
    assert (inc["category"], inc["initiator"]["device"]) == ("ecc", "0000:19:00.0"), inc
    assert inc["next_action"].startswith("A row of this GPU's memory is to be remapped")
    # the output's own "Timestamp" line times it (it was the file's time: a break-it pass)
    (inc,) = run(pipeline, "Timestamp                                 : Sun Nov 29 03:05:00 2026\n" + text)
    assert inc["start"] == "2026-11-29T03:05:00.000000Z", inc["start"]
    assert run(pipeline, text.replace(": Yes", ": No")) == []


def test_a_device_fault_in_a_party_a_rule_reached_is_still_an_incident_of_its_own(tmp_path):
    """node08's GPU logged a fatal NVLink error (Xid 74, the rank's pid) two seconds after node07's GPU fell off the
    bus, and the rank on that GPU lost its peer node07 (which node07's fault explains): the two lines were one party
    reached "by rule", and the Xid 74 was hidden in it as a reporter, never its own incident or page (a fresh user's
    trial, against README's "One fault, one incident"). It is its own incident; the lost peer stays node07's."""
    files = {
        "node07.dmesg": "[Sun Nov 29 03:10:02 2026] NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, "
                        "GPU has fallen off the bus.",
        "node07.train": "node07:1001:1001 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.7<0>\n"
                        "node07:1001:1090 [0] NCCL INFO comm 0x5599a1b2c3d0 rank 0 nranks 3 cudaDev 0 nvmlDev 0 busId "
                        "3b000 commId 0x7f2d1c3e5a6b7c8d - Init COMPLETE",
        "node08.dmesg": "[Sun Nov 29 03:10:04 2026] NVRM: Xid (PCI:0000:3b:00): 74, pid=2001, name=python, NVLink: "
                        "fatal error detected on link 2(0x0, 0x0, 0x10000, 0x0, 0x0, 0x0, 0x0)",
        "node08.train": "node08:2001:2090 [0] NCCL INFO comm 0x55d0a1b2c3d0 rank 1 nranks 3 cudaDev 0 nvmlDev 0 busId "
                        "3b000 commId 0x7f2d1c3e5a6b7c8d - Init COMPLETE\n"
                        "node08:2001:2095 [0] misc/socket.cc:538 NCCL WARN socketProgress: Connection closed by remote "
                        "peer 10.0.0.7<35817>\n"
                        "[rank1]:[E1129 03:20:02.551000123 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught collective"
                        " operation timeout: WorkNCCL(SeqNum=52311, OpType=ALLREDUCE, NumelIn=25165824, NumelOut="
                        "25165824, Timeout(ms)=600000) ran for 600047 milliseconds before timing out.",
        "node09.train": "node09:3001:3090 [0] NCCL INFO comm 0x5612a1b2c3d0 rank 2 nranks 3 cudaDev 0 nvmlDev 0 busId "
                        "3b000 commId 0x7f2d1c3e5a6b7c8d - Init COMPLETE\n"
                        "[rank2]:[E1129 03:20:02.601000123 ProcessGroupNCCL.cpp:616] [Rank 2] Watchdog caught collective"
                        " operation timeout: WorkNCCL(SeqNum=52311, OpType=ALLREDUCE, NumelIn=25165824, NumelOut="
                        "25165824, Timeout(ms)=600000) ran for 600051 milliseconds before timing out."}
    from api.diagnose import diagnose_paths
    from schemas.settings import Settings

    for name, text in files.items():
        (tmp_path / f"{name}.log").write_text(text + "\n")
    _, _, incs = diagnose_paths([tmp_path], Settings())
    incs = sorted(incs, key=lambda i: i["start"])
    assert [(i["initiator"]["host"], i["initiator"]["xid"]) for i in incs] == [("node07", 79), ("node08", 74)]
    assert ("node08", "nccl_error") in {(d["host"], d["kind"]) for d in incs[0]["downstream"]}
    assert "nccl_error" not in {d["kind"] for d in incs[1]["downstream"]}


def test_the_kernels_nic_link_down_on_the_peer_host_explains_the_error_that_names_it(pipeline):
    """node09's kernel said "mlx5_core 0000:4b:00.0 ibp75s0: Link down" (a warning) three seconds before node08's
    NCCL completion error named node09's address as its peer: the rule asked an ib_port cause of error or worse, and
    node08's reporting rank was the initiator (a fresh user's trial). The peer's NIC is now."""
    files = {
        "node08": "2026-11-29T03:05:00.000000+00:00 node08:2001:2001 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.8<0>\n"
                  "2026-11-29T03:10:03.100000+00:00 node08:2001:2095 [0] transport/net_ib.cc:1295 NCCL WARN NET/IB : "
                  "Got completion from peer 10.0.0.9<53249> with error 12, opcode 0, len 0, vendor err 129 (Recv)",
        "node09": "2026-11-29T03:05:00.000000+00:00 node09:3001:3001 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.9<0>\n"
                  "2026-11-29T03:10:00.500000+00:00 node09 kernel: mlx5_core 0000:4b:00.0 ibp75s0: Link down"}
    (inc,) = _hosts(pipeline, files)
    assert (inc["category"], inc["initiator"]["host"], inc["initiator"]["device"]) == ("ib_port", "node09",
                                                                                       "0000:4b:00.0"), inc
    assert [(d["host"], d["kind"], d["relation"]) for d in inc["downstream"]] == [("node08", "nccl_error", "peer_host")]
    up = files | {"node09": files["node09"].replace("Link down", "Link up")}
    assert all(i["initiator"]["host"] != "node09" for i in _hosts(pipeline, up))


def test_two_gpus_with_the_same_xid_beside_nccls_report_get_that_xids_action(pipeline):
    """Two GPUs' Xid 74 and NCCL's "P2P is disabled between NVLINK connected GPUs" (their report): no single culprit,
    and the action was "Collect the kernel log, NCCL_DEBUG=INFO output and nvidia-bug-report.sh" — the input — since
    the report made the fault two kinds (a fresh user's trial). The Xids name the fault: Xid 74's action."""
    text = "\n".join([
        "2026-11-29T03:10:00.120100+00:00 node10 kernel: NVRM: Xid (PCI:0000:18:00): 74, pid=4101, name=python, NVLink:"
        " fatal error detected on link 3(0x0, 0x0, 0x10000, 0x0, 0x0, 0x0, 0x0)",
        "2026-11-29T03:10:00.120200+00:00 node10 kernel: NVRM: Xid (PCI:0000:2a:00): 74, pid=4102, name=python, NVLink:"
        " fatal error detected on link 9(0x0, 0x0, 0x10000, 0x0, 0x0, 0x0, 0x0)",
        "node10:4101:4160 [0] NCCL INFO comm 0x55aa00000000 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 18000 commId "
        "0x1111aaaa2222bbbb - Init START",
        "node10:4101:4160 [0] NCCL INFO P2P is disabled between NVLINK connected GPUs 0 and 1. This should not be the "
        "case given their connectivity, and is probably due to a hardware issue. If you still want to proceed, you can "
        "set NCCL_IGNORE_DISABLED_P2P=1."])
    (inc,) = run(pipeline, text, host="node10")
    assert inc["initiator"]["device"] is None and inc["category"] == "link_fault"
    assert inc["next_action"].startswith("Every candidate reports the same fault (Xid 74). Reset GPU"), inc["next_action"]


def test_a_silent_rank_from_a_file_read_in_part_is_said_with_less_confidence(pipeline):
    """A job's log cut just before one rank's timeout (a .gz copied while it was written) named that rank the one the
    others waited for, at 0.7, though the file was known to be cut (a break-it pass). The incident still names it, at
    0.4, says the file was read in part, and asks for the whole of it first."""
    files = _job({0})
    segs = [Segment(data=t.encode(), origin=f"file:{h}.log.gz@0:1", stream=h, host=h, ref_ts=T0, ref_basis="kafka",
                    ingest_ts=T0, cut=(h == "a1")) for h, t in files.items()]
    b = pipeline.run(Decoded(segments=segs))
    (inc,) = correlate(b.events, b.link_samples, b.topology, now_us=T0)
    assert (inc["pattern"], inc["initiator"]["rank"], inc["confidence"]) == ("comm.silent_rank", 0, 0.4), inc
    assert inc["explanation"].endswith("But a1.log.gz was read in part (cut short): a timeout of the ranks named here "
                                       "may be in the part lost."), inc["explanation"]
    assert inc["missing"][0].startswith("the whole of a1.log.gz")
    (whole,) = _hosts(pipeline, files)
    assert whole["confidence"] == 0.7 and "read in part" not in whole["explanation"]
    # another host's file read in part says nothing of the silent rank's line (a second break-it pass)
    segs = [Segment(data=t.encode(), origin=f"file:{h}.log.gz@0:1", stream=h, host=h, ref_ts=T0, ref_basis="kafka",
                    ingest_ts=T0, cut=(h == "a2")) for h, t in files.items()]
    b = pipeline.run(Decoded(segments=segs))
    (other,) = correlate(b.events, b.link_samples, b.topology, now_us=T0)
    assert other["confidence"] == 0.7 and "read in part" not in other["explanation"], other["explanation"]


def test_a_broken_gpus_later_views_follow_its_fault(pipeline):
    """A GPU left broken stays so until it is reset: nvidia-smi read half an hour after its Xid 79 shows it ERR!, and
    the container runtime's driver timeout comes on each kubelet retry after an Xid 119. Each was an incident of its
    own, "the earliest fault nothing else explains" (a break-it pass): they follow the fault, up to an hour; another
    GPU's ERR! row does not follow it."""
    xid79 = "Nov 29 03:00:01 node12 kernel: NVRM: Xid (PCI:0000:19:00): 79, pid=0, GPU has fallen off the bus."
    smi = ("Sun Nov 29 03:30:00 2026\n"
           "|   0  ERR!                           On  | {bus}:00.0 Off |                 ERR! |")
    (inc,) = _hosts(pipeline, {"node12": xid79 + "\n" + smi.format(bus="00000000:19")})
    assert inc["initiator"]["xid"] == 79 and "nvml.smi_gpu_err" in inc["explanation"], inc["explanation"]
    apart = _hosts(pipeline, {"node12": xid79 + "\n" + smi.format(bus="00000000:1A")})
    assert len(apart) == 2
    xid119 = ("Nov 29 03:00:01 node11 kernel: NVRM: Xid (PCI:0000:3b:00): 119, pid=1234, name=nvidia-smi, Timeout after "
              "6s of waiting for RPC response from GPU0 GSP! Expected function 76 (GSP_RM_CONTROL) (0x20800a4c 0x4).")
    cli = ("Nov 29 03:{m}:15 node11 kubelet[33460]: nvidia-container-cli: detection error: driver error: timed out: "
           "unknown")
    (inc,) = _hosts(pipeline, {"node11": "\n".join([xid119, cli.format(m="04"), cli.format(m="09")])})
    assert inc["initiator"]["xid"] == 119 and [d["kind"] for d in inc["downstream"]] == ["driver"], inc["downstream"]


def test_an_rm_gpu_number_keeps_an_unnamed_line_off_another_gpu(pipeline):
    """The RM's lines without a bus id name its own GPU number ("NVRM: GPU1 _issueRpcAndWait: rpcSendMessage failed");
    an Xid 119 says "from GPU0 GSP". GPU1's failed RPCs were folded into GPU0's Xid 119 as its lines (a break-it
    pass): they are not that GPU's; GPU0's own are."""
    xid = ("Nov 29 03:00:01 node03 kernel: NVRM: Xid (PCI:0000:3b:00): 119, pid=1234, name=python, Timeout after 6s of "
           "waiting for RPC response from GPU0 GSP! Expected function 76 (GSP_RM_CONTROL) (0x20800a4c 0x4).")
    rpc = ("Nov 29 03:00:05 node03 kernel: NVRM: GPU{n} _issueRpcAndWait: rpcSendMessage failed with status 0x0000000f "
           "for fn 10 sequence 12303!")
    (inc,) = run(pipeline, xid + "\n" + rpc.format(n=1), host="node03")
    assert inc["initiator"]["xid"] == 119 and "gsp.rpc_failed" not in inc["explanation"].split("it reported")[-1]
    assert [d["kind"] for d in inc["downstream"]] == ["gsp_error"], inc["downstream"]
    (inc,) = run(pipeline, xid + "\n" + rpc.format(n=0), host="node03")
    assert inc["explanation"].endswith("it reported 2 lines (Xid 119, gsp.rpc_failed)."), inc["explanation"]


def test_an_rm_gpu_number_names_the_gpu_its_minor_number_line_gives_a_bus_id(pipeline):
    """The RM numbers its GPUs by device minor: "NVRM: GPU0 _kgspBootGspRm: unexpected WPR2 already up" names no bus
    id, "NVRM: GPU 0000:01:00.0: rm_init_adapter failed, device minor number 0" gives GPU0 one. The GSP fault was on
    "an unnamed GPU" (NVIDIA/open-gpu-kernel-modules#1058, a real-logs pass); another minor's line names another GPU."""
    wpr2 = "[   81.967331] NVRM: GPU{n} _kgspBootGspRm: unexpected WPR2 already up, cannot proceed with booting GSP"
    init = "[   81.970029] NVRM: GPU 0000:{bus}:00.0: rm_init_adapter failed, device minor number {n}"
    (inc,) = run(pipeline, "\n".join([wpr2.format(n=0), init.format(bus="01", n=0)]), host="node03")
    assert (inc["initiator"]["kind"], inc["initiator"]["device"]) == ("gsp_error", "0000:01:00.0")
    assert "WPR2" in inc["next_action"] and "another release" not in inc["next_action"], inc["next_action"]
    both = "\n".join([wpr2.format(n=1), init.format(bus="01", n=0), init.format(bus="02", n=1)])
    devices = {i["initiator"]["device"] for i in run(pipeline, both, host="node03")}
    assert "0000:02:00.0" in devices and None not in devices, devices


def test_an_rm_gpu_number_apart_from_the_minor_still_names_the_gpu_whose_init_failed(pipeline):
    """The RM's number is not always the device minor: "GPU6 _kgspBootGspRm: unexpected WPR2 already up" between
    "GPU 0000:a1:00.0: RmInitAdapter failed!" and "rm_init_adapter failed, device minor number 7" lines was an unnamed
    GPU, and the bus id's init failure "a fault of its own" (NVIDIA/open-gpu-kernel-modules#1230, a real-logs pass):
    one GPU, whose GSP could not boot."""
    lines = ["[  101.209077] NVRM: GPU 0000:a1:00.0: RmInitAdapter failed! (0x62:0x40:2168)",
             "[  101.210899] NVRM: GPU 0000:a1:00.0: rm_init_adapter failed, device minor number 7",
             "[  101.287612] NVRM: GPU6 _kgspBootGspRm: unexpected WPR2 already up, cannot proceed with booting GSP",
             "[  101.287650] NVRM: GPU6 RmInitAdapter: Cannot initialize GSP firmware RM"]
    (inc,) = run(pipeline, "\n".join(lines), host="node01")
    assert (inc["initiator"]["kind"], inc["initiator"]["device"], inc["downstream"]) == (
        "gsp_error", "0000:a1:00.0", [])
    assert "WPR2" in inc["next_action"], inc["next_action"]


def test_a_gpu_whose_own_firmware_did_not_boot_is_the_boards_fault_not_the_drivers(pipeline):
    """NVIDIA/open-gpu-kernel-modules#789: GSP-RM could not start ("Cannot initialize GSP firmware RM", RmInitAdapter's
    0x65), and on a retry 19 minutes later the driver says why, the GPU's own firmware boot (GFW) never completed: no
    event, the incident's advice was to try another driver; it is the board's (a cold power-cycle, the VBIOS, an
    RMA), critical."""
    lines = ["[  903.609564] NVRM: RmInitAdapter: Cannot initialize GSP firmware RM",
             "[  903.610907] NVRM: GPU 0000:98:00.0: RmInitAdapter failed! (0x62:0x65:1792)",
             "[ 2052.745833] NVRM: gpuWaitForGfwBootComplete_TU102: failed to wait for GFW_BOOT: (progress 0x3)",
             "[ 2052.745838] NVRM: kgspWaitForGfwBootOk_TU102: failed to wait for GFW boot complete: 0x65 VBIOS "
             "version 94.02.59.00.05"]
    first, retry = run(pipeline, "\n".join(lines), host="node01")  # 19 minutes apart: two attempts to load
    assert (first["category"], first["initiator"]["device"]) == ("gsp_error", "0000:98:00.0")
    assert (retry["severity"], retry["category"], retry["initiator"]["kind"]) == (
        "critical", "gpu_failure", "gpu_init_failed"), retry["initiator"]
    assert "not the driver release" in retry["next_action"], retry["next_action"]


def test_a_gsp_rpc_timeout_after_a_gfw_boot_failure_joins_that_gpus_incident(pipeline):
    """NVIDIA/open-gpu-kernel-modules#795: on a resume the GPU's GFW boot did not complete, then the RM's RPCs to its
    GSP timed out ("_issueRpcAndWait: rpcRecvPoll timedout for fn 76!", the wait of Xid 119), which made no event.
    It is a critical GSP error that joins the GFW failure's incident, not a second one; the advice names the resume
    case beside the board's."""
    lines = [" kernel: NVRM: gpuWaitForGfwBootComplete_TU102: failed to wait for GFW_BOOT: (progress 0x3)",
             " kernel: NVRM: kgspWaitForGfwBootOk_TU102: failed to wait for GFW boot complete: 0x55 VBIOS version "
             "95.04.69.40.36",
             " kernel: NVRM: _kgspLogXid119: ********************************* GSP Timeout "
             "**********************************",
             " kernel: NVRM: _issueRpcAndWait: rpcRecvPoll timedout for fn 76!"]
    (inc,) = run(pipeline, "\n".join(lines), host="node01")
    assert (inc["severity"], inc["category"], inc["initiator"]["kind"]) == ("critical", "gpu_failure",
                                                                            "gpu_init_failed")
    assert len(inc["initiator"]["events"]) == 3, inc["initiator"]
    assert "resume from suspend" in inc["next_action"] and "RMA" in inc["next_action"], inc["next_action"]


def test_nvls_failures_on_a_healthy_fabric_are_not_sent_to_a_fabric_manager_restart(pipeline):
    """NVIDIA/nccl#2077: NVLS bind failing with CUDA error 2 ('out of memory') on a healthy fabric is the NVSwitches'
    multicast objects used up by a job's many communicators; pie-project/pie#500: nvls.cc's 'invalid argument' in a
    container without /dev/nvidia-caps. Both were told to restart Fabric Manager and reset every GPU (a real-logs
    pass); error 401 still points at the fabric's setup."""
    bind = ("node01:420:437 [5] transport/nvls.cc:379 (nvlsAllocateMem) NCCL WARN Failed to bind NVLink SHARP (NVLS) "
            "Multicast memory of size 2097152 : CUDA error {n} '{text}'.")
    (inc,) = run(pipeline, bind.format(n=2, text="out of memory"), host="node01")
    assert "multicast objects are used up" in inc["next_action"] and "restarting Fabric Manager does not help" in inc[
        "next_action"], inc["next_action"]
    (inc,) = run(pipeline, bind.format(n=401, text="the operation cannot be performed in the present state"),
                 host="node01")
    assert inc["next_action"].startswith("NVLS multicast memory could not be bound: the NVLink fabric is not set up")
    (inc,) = run(pipeline, "node01:12098:12141 [2] transport/nvls.cc:251 NCCL WARN Cuda failure 1 'invalid argument'",
                 host="node01")
    nxt = inc["next_action"]
    assert nxt.index("/dev/nvidia-caps") < nxt.index("reset all GPUs"), nxt


def test_dcgm_exporters_xid_metrics_name_the_gpu_and_its_xid(pipeline):
    """dcgm-exporter's Xid metrics gave no event (NVIDIA/dcgm-exporter#239, NVIDIA/DCGM#235; a real-logs pass): the
    windowed count (DCGM_EXP_XID_ERRORS_COUNT, label xid) is a recent Xid of the GPU its pci_bus_id names, with the
    Xid catalog's severity; the last-value gauge (DCGM_FI_DEV_XID_ERRORS) only a warning that such an Xid was seen,
    some time (it keeps its value); a value of 0 is none."""
    labels = 'gpu="{g}",UUID="GPU-00000000-0000-0000-0000-00000000000{g}",pci_bus_id="00000000:{bus}:00.0"'
    lines = ["DCGM_FI_DEV_XID_ERRORS{" + labels.format(g=0, bus="1B") + "} 79",
             "DCGM_FI_DEV_XID_ERRORS{" + labels.format(g=1, bus="2A") + "} 0",
             "DCGM_EXP_XID_ERRORS_COUNT{" + labels.format(g=0, bus="1B") + ',xid="79"} 2']
    (inc,) = run(pipeline, "\n".join(lines[:2]), host="node01")
    assert (inc["severity"], inc["initiator"]["device"]) == ("warning", "0000:1b:00.0"), inc["initiator"]
    assert "says nothing of when" in inc["next_action"], inc["next_action"]
    (inc,) = run(pipeline, "\n".join(lines), host="node01")
    assert (inc["severity"], inc["category"], inc["initiator"]["device"], inc["initiator"]["xid"]) == (
        "critical", "gpu_off_bus", "0000:1b:00.0", 79)


def test_an_aer_error_the_driver_cannot_recover_explains_the_gpus_next_fault(pipeline):
    """NVIDIA/open-gpu-kernel-modules#1229: a Completion Timeout the nvidia driver cannot recover (no AER callbacks),
    then an Xid 31 of the same GPU: "no rule ties it" before (a real-logs pass). The GPU's unrecovered AER error
    explains its Xid (pcie.unrecovered_aer_explains_gpu_fault), named as evidence."""
    lines = ["[  812.1] pcieport 0000:00:01.2: AER: Uncorrectable (Non-Fatal) error received from 0000:63:00.0",
             "[  812.2] nvidia 0000:63:00.0: AER: can't recover (no error_detected callback)",
             "[  812.9] NVRM: Xid (PCI:0000:63:00): 31, pid=2201, name=plasmashell, MMU Fault: ENGINE GR_HOST0 "
             "HUBCLIENT_ESC0 faulted @ 0x7f58_a0000000. Fault is of type FAULT_PDE ACCESS_TYPE_VIRT_READ"]
    incs = run(pipeline, "\n".join(lines), host="node01")
    rules = {x["rule"] for i in incs for x in i["evidence"]}
    assert "pcie.unrecovered_aer_explains_gpu_fault" in rules, [(i["initiator"], i["evidence"]) for i in incs]


def test_every_rank_of_a_host_failing_alike_in_nccl_gets_that_errors_action(pipeline):
    """pytorch/pytorch#152780: two RTX 5090s' NCCL "Cuda failure 700 'an illegal memory access was encountered'" in
    one second (NCCL 2.26.2; NVIDIA/nccl#1637, an NCCL P2P bug) was "collect the kernel log" (a real-logs pass): the
    same fault on every candidate, whose words give it an action (action_map), takes that action."""
    line = ("[2025-05-04 23:32:59] host-x:94092{r}:94092{r} [{r}] enqueue.cc:1556 NCCL WARN Cuda failure 700 'an "
            "illegal memory access was encountered'")
    (inc,) = run(pipeline, "\n".join([line.format(r=0), line.format(r=1)]), host="host-x")
    assert inc["next_action"].startswith("Every candidate reports the same fault (nccl.cuda_failure). An illegal "
                                         "memory access in a CUDA call NCCL made"), inc["next_action"]
    assert "NCCL_P2P_DISABLE=1" in inc["next_action"]


def test_a_peer_that_is_a_local_bridges_gateway_blames_the_interface_nccl_chose(pipeline):
    """dmlc/xgboost#7982: the only peer NCCL names, 172.18.0.1, is a Docker network's gateway on the reporting host,
    no host of the job; the operator was sent to "the logs of 172.18.0.1". The socket interface is the fault (the
    thread's fix: NCCL_SOCKET_IFNAME); a peer at a host's own address stays a lost peer."""
    line = ("ip-10-0-12-104:28056:39685 [0] misc/socket.cc:503 NCCL WARN Net : Call to recv from {addr}<34483> "
            "failed : Broken pipe")
    for addr in ("172.18.0.1", "172.17.0.1", "192.168.122.1"):
        (inc,) = run(pipeline, line.format(addr=addr), host="ip-10-0-12-104")
        assert (inc["pattern"], inc["category"], inc["confidence"]) == ("comm.peer_failed", "nccl_software", 0.5)
        assert "NCCL_SOCKET_IFNAME" in inc["next_action"] and addr in inc["explanation"], inc
    for addr in ("172.18.0.5", "172.31.7.1", "10.0.0.1"):
        (inc,) = run(pipeline, line.format(addr=addr), host="ip-10-0-12-104")
        assert (inc["pattern"], inc["category"]) == ("comm.peer_failed", "other"), (addr, inc["pattern"])


def test_a_gpu_lost_from_the_bus_is_the_fault_of_the_failed_rpcs_around_it(pipeline):
    """NVIDIA/open-gpu-kernel-modules#688: the RM's RPCs fail with status 0x0f before its assert names the status,
    NV_ERR_GPU_IS_LOST ("GPU lost from the bus"): the incident is the GPU that fell off the bus, not a GSP fault."""
    rpc = ("Feb 17 08:02:{s} dgx-a100 kernel: NVRM: _issueRpcAndWait: rpcSendMessage failed with status 0x0000000f for "
           "fn 76!")
    lost = ("Feb 17 08:02:35 dgx-a100 kernel: NVRM: nvAssertOkFailedNoLog: Assertion failed: GPU lost from the bus "
            "[NV_ERR_GPU_IS_LOST] (0x0000000F) returned from rmStatus @ kernel_ce_gv100.c:106")
    (inc,) = run(pipeline, "\n".join([rpc.format(s="06"), rpc.format(s="27"), lost, rpc.format(s="35")]),
                 host="dgx-a100")
    assert (inc["category"], inc["severity"]) == ("gpu_off_bus", "critical"), inc
    assert inc["next_action"].startswith("The driver says this GPU is lost from the bus"), inc["next_action"]


def test_nccls_shared_memory_registration_failure_is_not_the_gpus(pipeline):
    """horovod/horovod#893: include/shm.h:42's "Cuda failure 'invalid argument'" is NCCL registering its /dev/shm
    segment with CUDA; the generic Cuda failure told "an error of this process, its driver or its GPU"."""
    text = "\n".join([
        "heinzel135:151780:151928 [2] include/shm.h:42 NCCL WARN Cuda failure 'invalid argument'",
        "heinzel135:151780:151928 [2] NCCL INFO transport/shm.cu:187 -> 1",
        "heinzel135:151780:151928 [2] NCCL INFO init.cu:658 -> 1"])
    (inc,) = run(pipeline, text, host="heinzel135")
    assert (inc["category"], inc["initiator"]["kind"]) == ("nccl_software", "nccl_error"), inc
    assert "NCCL_SHM_DISABLE=1" in inc["next_action"] and "/dev/shm" in inc["next_action"]
    (other,) = run(pipeline, "desktop-1:1689:2800 [0] include/alloc.h:112 NCCL WARN Cuda failure 999 'unknown error'",
                   host="desktop-1")
    assert other["category"] != "nccl_software" and "NCCL_SHM_DISABLE" not in other["next_action"]


def test_a_vllm_workers_nccl_error_is_an_event_at_its_own_time_and_rank(pipeline):
    """vllm-project/vllm#21661: vLLM's NCCL binding raises "RuntimeError: NCCL error: <ncclGetErrorString>" behind its
    logger's month-day stamp and its worker's label; it gave no event, and the stamp was not read."""
    text = ("(VllmWorker rank=1 pid=213) ERROR 11-04 18:02:56 [multiproc_executor.py:597] RuntimeError: NCCL error: "
            "unhandled cuda error (run with NCCL_DEBUG=INFO for details)")
    (inc,) = run(pipeline, text, host="node01")
    assert inc["initiator"]["kind"] == "nccl_error" and inc["initiator"]["rank"] == 1, inc["initiator"]
    # the latest year that puts it before the reference (T0 is 2027-01-15)
    assert inc["start"] == "2026-11-04T18:02:56.000000Z", inc["start"]


def test_a_party_named_by_a_rank_says_the_rank_when_its_first_line_printed_none(pipeline):
    """kohya-ss/sd-scripts#1434: the traceback's ECC error names no rank, the watchdog's line of the same fault names
    rank 1: one party, the GPU of rank 1 (its initiator said "on the host", rank null)."""
    text = "\n".join([
        "RuntimeError: CUDA error: uncorrectable ECC error encountered",
        "[E ProcessGroupNCCL.cpp:916] [Rank 1] NCCL watchdog thread terminated with exception: CUDA error: "
        "uncorrectable ECC error encountered"])
    (inc,) = run(pipeline, text, host="h100-box")
    assert (inc["initiator"]["kind"], inc["initiator"]["rank"]) == ("ecc", 1), inc["initiator"]
    assert "the GPU of rank 1 of h100-box" in inc["explanation"], inc["explanation"]


def test_identical_lines_of_different_gpus_or_ranks_are_events_of_their_own(pipeline):
    """nvidia-smi nvlink -s prints "Link 3: <inactive>" under each GPU's header: one event of GPU 0 counted four times
    stood for four GPUs (a fresh user's trial); every wired link of each GPU down is what they share, not GPU 0."""
    block = "\n".join(f"         Link {k}: <inactive>" for k in range(18))
    text = "\n".join(f"GPU {g}: NVIDIA H100 80GB HBM3 (UUID: GPU-00000000-0000-0000-0000-00000000000{g})\n{block}"
                     for g in range(4))
    (inc,) = run(pipeline, text, host="node31")
    assert inc["pattern"] == "link.inactive_where_wired", inc["pattern"]
    assert (inc["initiator"]["host"], inc["initiator"]["device"], len(inc["initiator"]["events"])) == ("node31", None,
                                                                                                     72)
    assert "gpu3 (18 links)" in inc["explanation"] and "Fabric Manager" in inc["next_action"]
    # two GPUs of eight with every link down beside six with theirs up: the two are suspects, not what all share
    some = "\n".join(f"GPU {g}: NVIDIA H100 80GB HBM3 (UUID: GPU-00000000-0000-0000-0000-00000000000{g})\n"
                     + "\n".join(f"         Link {k}: " + ("<inactive>" if g in (2, 5) else "26.562 GB/s")
                                 for k in range(18)) for g in range(8))
    (inc,) = run(pipeline, some, host="node33")
    assert (inc["pattern"], inc["initiator"]["gpu_index"]) == ("link.inactive_where_wired", 2), inc["initiator"]
    # one link on each of two GPUs is no shared cause: the per-GPU verdict, its GPU the initiator
    two = "\n".join(f"GPU {g}: NVIDIA H100 80GB HBM3 (UUID: GPU-00000000-0000-0000-0000-00000000000{g})\n"
                    + "\n".join(f"         Link {k}: " + ("<inactive>" if k == 3 else "26.562 GB/s") for k in range(18))
                    for g in range(2))
    (inc,) = run(pipeline, two, host="node32")
    assert (inc["pattern"], inc["initiator"]["gpu_index"]) == ("link.inactive_where_wired", 0), inc["initiator"]


def test_a_hosts_clock_minutes_off_is_measured_by_the_collective_its_ranks_timed_out_on(pipeline):
    """Three hosts' ranks time out on one allreduce; node08's clock is off by up to three minutes, its GPU fell off
    the bus. The timeouts' implied starts give node08's offset (window.collective_skew): one incident, every host's
    ranks downstream (a break-it pass: two incidents past ~60 s of skew, "no single culprit" for the others)."""
    from datetime import timedelta

    line = ("[rank{r}]:[E1130 {t}.518432000 ProcessGroupNCCL.cpp:616] [Rank {r}] Watchdog caught collective operation "
            "timeout: WorkNCCL(SeqNum=42, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600005 "
            "milliseconds before timing out.")
    fault = datetime(2026, 11, 30, 3, 12, 1)
    for ahead in (0, 90, -75, 180):
        own = fault + timedelta(seconds=ahead)  # node08's clock
        timeout = (fault + timedelta(seconds=600)).strftime("%H:%M:%S")
        files = {"node07": "\n".join(line.format(r=r, t=timeout) for r in (0, 1)),
                 "node08": own.strftime("[%a %b %d %H:%M:%S %Y] ") + "NVRM: Xid (PCI:0000:3b:00): 79, pid=1, "
                           "name=python3, GPU has fallen off the bus.\n" + "\n".join(
                               line.format(r=r, t=(own + timedelta(seconds=600)).strftime("%H:%M:%S")) for r in (8, 9)),
                 "node09": "\n".join(line.format(r=r, t=timeout) for r in (16, 17))}
        (inc,) = _hosts(pipeline, files)
        assert inc["initiator"]["xid"] == 79, (ahead, inc["initiator"])
        assert {d["host"] for d in inc["downstream"]} == {"node07", "node08", "node09"}, (ahead, inc["downstream"])
        assert len(inc["downstream"]) == 6, (ahead, inc["downstream"])


def test_collective_skew_is_each_hosts_offset_from_the_collectives_median():
    from correlate.model import Ev
    from correlate.rules import collective_of
    from correlate.window import S, collective_skew

    def t(eid, host, start, seq=42):
        return Ev(event_id=eid, ts=start + 600 * S, ts_basis="line", host=host, source="nccl", kind="nccl_timeout",
                  signature="torch.watchdog_timeout", severity="error", device_type=None, device=None, link=None,
                  xid=None, sxid=None, peer=None, rank=None, nranks=None, comm=None, message="m", precision_us=1,
                  elapsed_ms=600_000, seq=seq, op="ALLREDUCE", timeout_ms=600_000)

    base = 1_000_000 * S
    evs = [t("a", "node07", base), t("b", "node07", base + S // 2), t("c", "node08", base + 90 * S),
           t("d", "node09", base), t("e", "node10", base + 7 * S, seq=43)]
    # the hosts' medians: node07 +0.5 s (the median), node08 +90 s, node09 0; each bound its offset from node07's plus
    # the collective's spread (2 s), rounded up to whole seconds; node10 shares no collective with another host
    assert collective_skew(evs, collective_of) == {"node07": 2 * S, "node08": 92 * S, "node09": 3 * S}
    assert collective_skew(evs, collective_of, cap_us=60 * S)["node08"] == 60 * S
    # a job restarted and hung again on the same collective: the host's first run counts; a straggler 20 s late does
    # not move the median; three runs of one line on a host are no one collective
    assert collective_skew(evs + [t("f", "node08", base + 1900 * S)], collective_of)["node08"] == 92 * S
    late = [t("g", "node09", base + S // 4), t("h", "node09", base + 20 * S)]
    assert collective_skew(evs + late, collective_of)["node08"] == 92 * S
    assert collective_skew(evs + [t(f"r{k}", "node08", base + k * 400 * S) for k in (1, 2)], collective_of) == {}
    # two jobs two minutes apart printing the same collective: the later job's hosts are off together, no clock
    two = [t("a", "node01", base), t("b", "node02", base), t("c", "node03", base + 120 * S),
           t("d", "node04", base + 120 * S)]
    assert all(v == 2 * S for v in collective_skew(two, collective_of).values())


def test_torchruns_report_of_a_worker_its_watchdog_took_down_follows_the_fault(pipeline):
    """torchrun's "failed (exitcode: -6) local_rank: 0" half a minute after its host's ranks timed out: a report of
    the timeout, downstream of what explains it (a fresh user's trial: one "only downstream reports" incident per host
    beside the Xid 74 that explained every timeout, and the hosts' collective kept apart)."""
    line = ("[rank{r}]:[E1104 18:12:10.150000123 ProcessGroupNCCL.cpp:632] [Rank {r}] Watchdog caught collective "
            "operation timeout: WorkNCCL(SeqNum=51234, OpType=ALLREDUCE, NumelIn=262144, NumelOut=262144, "
            "Timeout(ms)=600000) ran for 600041 milliseconds before timing out.")
    agent = ("E1104 18:12:41.412000 4400 torch/distributed/elastic/multiprocessing/api.py:869] failed (exitcode: -6) "
             "local_rank: 0 (pid: 4412) of binary: /usr/bin/python3")
    xid = ("[Wed Nov  4 18:02:10 2026] NVRM: Xid (PCI:0000:ab:00): 74, pid=4413, name=python3, NVLink: fatal error "
           "detected on link 4(0x0, 0x0, 0x10000, 0x0, 0x0, 0x0, 0x0)")
    files = {"node01": "\n".join([line.format(r=0), line.format(r=1), agent]),
             "node03": "\n".join([xid, line.format(r=4), line.format(r=5), agent])}
    (inc,) = _hosts(pipeline, files)
    assert (inc["initiator"]["host"], inc["initiator"]["xid"]) == ("node03", 74), inc["initiator"]
    assert "rank_failure.explains_torchrun_report" in inc["explanation"], inc["explanation"]
    assert sum(d["kind"] == "other" for d in inc["downstream"]) == 2, inc["downstream"]


def test_a_nic_modules_cable_error_explains_its_hosts_nccl_errors(pipeline):
    """mlx5's "Port module event[error]: module 0, Cable error, High power budget exceeded" gave no event: its host's
    ranks' timeouts had no cause on their host (a fresh user's trial)."""
    text = "\n".join([
        "[Wed Nov  4 18:00:42 2026] mlx5_core 0000:5e:00.0: Port module event[error]: module 0, Cable error, High "
        "power budget exceeded",
        "[rank8]:[E1104 18:10:42.150000123 ProcessGroupNCCL.cpp:632] [Rank 8] Watchdog caught collective operation "
        "timeout: WorkNCCL(SeqNum=7, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600010 "
        "milliseconds before timing out."])
    (inc,) = run(pipeline, text, host="node02")
    assert (inc["category"], inc["initiator"]["device"]) == ("ib_port", "0000:5e:00.0"), inc["initiator"]
    assert [d["kind"] for d in inc["downstream"]] == ["nccl_timeout"], inc["downstream"]
    assert "High power budget exceeded" in inc["next_action"]


def _repeats(line: str, first: datetime, every_s: int, n: int) -> list[str]:
    """``line`` (a ``{when}`` for ``dmesg -T``'s stamp) ``n`` times, ``every_s`` seconds apart from ``first``."""
    return [line.format(when=datetime.fromtimestamp(first.timestamp() + k * every_s, timezone.utc)
                        .strftime("%a %b %e %H:%M:%S %Y")) for k in range(n)]


XID13 = ("[{when}] NVRM: Xid (PCI:0000:1b:00): 13, pid=4242, name=python, Graphics SM Warp Exception on (GPC 0, "
         "TPC 0, SM 0): Out Of Range Address")
XID79 = "[{when}] NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus."
XID74_LINK = ("[{when}] NVRM: Xid (PCI:0000:1b:00): 74, pid='<unknown>', name=<unknown>, NVLink: fatal error "
              "detected on link 3(0x0, 0x0, 0x10000, 0x0, 0x0, 0x0, 0x0)")


@pytest.mark.parametrize("repeat,every_s,n,category", [
    (XID13, 61, 180, "application"),  # an application's Xid 13 every 61 s for three hours (a break-it pass)
    (XID74_LINK, 70, 10, "link_fault"),  # an NVLink error every 70 s for ten minutes (no storm: > 60 s apart)
])
def test_a_fault_going_on_long_before_the_initiator_on_its_host_is_an_incident_of_its_own(
        pipeline, repeat, every_s, n, category):
    """Repeats of one GPU's fault chain into one candidate incident (each within the link window of the last);
    another GPU of the host that fails at the end of the chain, tied to it by no rule, was in that incident, which
    started hours before its initiator. The fault that began more than the host's link window (``same_host``,
    120 s) before the initiator is going on of itself: an incident of its own; the initiator's starts at its line."""
    t0 = datetime(2026, 12, 1, 1, 0, 0, tzinfo=timezone.utc)
    chain = _repeats(repeat, t0, every_s, n)
    fall = _repeats(XID79, datetime.fromtimestamp(t0.timestamp() + every_s * (n - 1) + 30, timezone.utc), 1, 1)
    incs = run(pipeline, "\n".join(chain + fall), host="node44")
    assert len(incs) == 2, [(i["initiator"], i["start"]) for i in incs]
    early, off = incs
    assert (early["initiator"]["device"], early["start"][:19]) == ("0000:1b:00.0", "2026-12-01T01:00:00")
    assert (len(early["initiator"]["events"]), early["category"]) == (n, category)
    assert early["downstream"] == [] and early["context"] == []
    assert (off["initiator"]["device"], off["initiator"]["xid"], off["category"]) == ("0000:3b:00.0", 79, "gpu_off_bus")
    assert off["start"] == off["end"] and off["downstream"] == [] and off["context"] == []


def test_another_gpus_fault_just_before_the_initiator_is_an_incident_of_its_own(pipeline):
    """The other side of the rule above: an application's Xid 13 on one GPU a few seconds before another GPU of the
    host falls off the bus began within the host's link window. It was one incident, the Xid 13 named beside the Xid
    79 as tied by no rule, the incident starting 66 s before its initiator (README "start": only a watchdog timeout
    does). All its lines came first and no rule ties them: an incident of its own, as when it began long before."""
    t0 = datetime(2026, 12, 1, 1, 0, 0, tzinfo=timezone.utc)
    text = "\n".join(_repeats(XID13, t0, 61, 2) + _repeats(XID79, datetime.fromtimestamp(t0.timestamp() + 66,
                                                                                       timezone.utc), 1, 1))
    app, inc = run(pipeline, text, host="node44")
    assert (app["initiator"]["device"], len(app["initiator"]["events"]), app["category"]) == (
        "0000:1b:00.0", 2, "application")
    assert (inc["initiator"]["device"], inc["initiator"]["xid"], inc["start"][:19]) == (
        "0000:3b:00.0", 79, "2026-12-01T01:01:06")
    assert (inc["downstream"], inc["context"]) == ([], [])


def test_a_dimms_uncorrected_error_is_the_hosts_fault_named_by_its_signature(pipeline):
    """EDAC's uncorrected error of a host DIMM (ovro-lwa/lwa-issues#117: the GPU server froze, a DIMM was replaced) is
    a fault of the host, category ``host_memory``, named by its signature where its kind (``other``) says nothing
    ("gpu09 other" in the table: a real-logs pass); a corrected one (CE) is counted, no fault — unless its line says
    the controller's log overflowed or counts many (illinois-scicomp/machine-shop-maintenance#66: "262 CE … OVERFLOW",
    the DIMM replaced): a warning to replace the DIMM."""
    from api.render import describe_initiator

    ue = ("[Tue Dec  1 04:00:00 2026] EDAC MC3: 1 UE memory read error on CPU_SrcID#1_MC#1_Chan#2_DIMM#0 (channel:2 "
          "slot:0 page:0xb757589 offset:0x140 grain:32 -  OVERFLOW err_code:0101:0092 socket:1 imc:1 rank:0)")
    (inc,) = run(pipeline, ue, host="gpu09")
    i = inc["initiator"]
    assert (inc["category"], inc["severity"], i["host"], i["device_type"], i["fault"]) == (
        "host_memory", "critical", "gpu09", None, "host.edac_memory_error")
    assert describe_initiator(i) == "gpu09 host.edac_memory_error"
    assert "DIMM CPU_SrcID#1_MC#1_Chan#2_DIMM#0" in inc["next_action"], inc["next_action"]
    ce = ue.replace(" UE ", " CE ")
    assert run(pipeline, ce.replace("-  OVERFLOW ", ""), host="gpu09") == []
    (inc,) = run(pipeline, ce, host="gpu09")
    assert (inc["category"], inc["severity"], inc["initiator"]["fault"]) == (
        "host_memory", "warning", "host.edac_ce_flood")
    assert "replace the DIMM" in inc["next_action"]
    (inc,) = run(pipeline, ce.replace(": 1 CE", ": 262 CE").replace("-  OVERFLOW ", ""), host="gpu09")
    assert inc["initiator"]["fault"] == "host.edac_ce_flood"


XID74_ISO = ("{when} node44 kernel: NVRM: Xid (PCI:0000:18:00): 74, pid=1234, name=python3, NVLink: fatal error "
             "detected on link 3(0x0, 0x0, 0x10000, 0x0, 0x0, 0x0, 0x0)")


def test_a_storm_that_goes_on_explains_what_follows_it_late_in_the_storm(tmp_path):
    """One Xid 74 line every 30 s for an hour, and a watchdog timeout 45 minutes in: one event for the hour stood
    at its first line alone, the timeout was a hang of its own and the incident ended where it began (a break-it
    pass). A storm is one event per ``STORM_SPAN_US`` (its ``count`` and ``last_ts``), so the timeout follows the
    link's error, and the incident ends at the storm's last line."""
    from api.diagnose import diagnose_paths
    from ingest.assemble import STORM_SPAN_US
    from schemas.settings import Settings

    t0 = datetime(2026, 11, 26, tzinfo=timezone.utc).timestamp()
    lines = [XID74_ISO.format(when=datetime.fromtimestamp(t0 + 30 * k, timezone.utc).isoformat()) for k in range(120)]
    lines.append("2026-11-26T00:45:40+00:00 node44 python[9]: [rank0]:[E1126 00:45:40.000000 ProcessGroupNCCL.cpp:616] "
                 "[Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, "
                 "NumelIn=1, NumelOut=1, Timeout(ms)=30000) ran for 30000 milliseconds before timing out.")
    (tmp_path / "node44.log").write_text("\n".join(lines) + "\n")
    _, batch, incidents = diagnose_paths([tmp_path], Settings())
    counts = [c for c, k in zip(batch.events.column("count").to_pylist(), batch.events.column("kind").to_pylist())
              if k == "xid"]
    assert (sum(counts), len(counts)) == (120, 3600 * 1_000_000 // STORM_SPAN_US)
    (inc,) = incidents
    assert (inc["category"], inc["start"], inc["end"]) == ("link_fault", "2026-11-26T00:00:00.000000Z",
                                                            "2026-11-26T00:59:30.000000Z")
    assert [(p["host"], p["relation"]) for p in inc["downstream"]] == [("node44", "same_host")]


def test_a_fault_again_after_a_reboot_is_no_repeat_of_the_one_before(tmp_path):
    """A raw dmesg capture: the GPU falls off the bus, the host reboots (its stamps start again at 0), and the GPU
    falls off the bus 60 s into the next boot. Folded as one storm of two lines, the recurrence was lost and the
    step was the first time's (a break-it pass): two events, two incidents, the second "failed before"."""
    from api.diagnose import diagnose_paths
    from schemas.settings import Settings

    (tmp_path / "node73.dmesg.log").write_text(
        "[ 1843.308145] NVRM: Xid (PCI:0000:3b:00): 79, pid=0, GPU has fallen off the bus.\n"
        "[    0.000000] Linux version 6.5.0-1018-nvidia\n"
        "[    5.000000] NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.54.15\n"
        "[   60.000000] NVRM: Xid (PCI:0000:3b:00): 79, pid=0, GPU has fallen off the bus.\n")
    _, batch, incidents = diagnose_paths([tmp_path], Settings())
    assert batch.events.column("count").to_pylist() == [1, 1]
    first, again = incidents
    assert (first["recurrence"]["previous"], again["recurrence"]["previous"]) == ([], [first["id"]])


def test_copies_of_one_boots_dmesg_are_one_failure(tmp_path):
    """The same raw dmesg saved twice (``node71.dmesg.log`` and its rotated ``.1``), their seconds since boot counted
    back from mtimes an hour apart: two failures, the second "failed before" and pushed towards RMA (a break-it
    pass). A line its raw kernel stamp dates to the µs is one event wherever it was read (``line_event_id``), and so
    is kern.log's copy of it (the stamp in its brackets)."""
    import os

    from api.diagnose import diagnose_paths
    from schemas.settings import Settings

    text = ("[ 1843.308145] NVRM: Xid (PCI:0000:3b:00): 79, pid=0, GPU has fallen off the bus.\n"
            "[ 1850.000000] NVRM: Xid (PCI:0000:18:00): 74, pid=1234, name=python3, NVLink: fatal error detected on "
            "link 3(0x0, 0x0, 0x10000, 0x0, 0x0, 0x0, 0x0)\n")
    for name, hour in (("node71.dmesg.log", 11), ("node71.dmesg.log.1", 10)):
        (tmp_path / name).write_text(text)
        when = datetime(2026, 12, 4, hour, tzinfo=timezone.utc).timestamp()
        os.utime(tmp_path / name, (when, when))
    (tmp_path / "node71.kern.log").write_text(
        "Dec  4 10:31:16 node71 kernel: [ 1850.000000] NVRM: Xid (PCI:0000:18:00): 74, pid=1234, name=python3, "
        "NVLink: fatal error detected on link 3(0x0, 0x0, 0x10000, 0x0, 0x0, 0x0, 0x0)\n")
    _, batch, incidents = diagnose_paths([tmp_path], Settings())
    ids = batch.events.column("event_id").to_pylist()
    assert (len(ids), len(set(ids))) == (2, 2)  # five lines, two events, each listed once
    (inc,) = incidents
    assert (inc["category"], inc["recurrence"]["previous"]) == ("gpu_off_bus", [])


def test_a_gpu_fallen_off_the_bus_explains_a_collective_its_communicator_begins_minutes_later(tmp_path):
    """A GPU fallen off the bus stays gone until the node is restarted: a collective its communicator begins five
    minutes later never completes. The Xid 79 was an incident of its own beside a hang whose rank on the lost GPU
    "did not report" (device_fault.explains_nccl reaches 120 s; a fresh user's timeouts dated by their file). Rule
    gpu_fall.explains_later_hang ties them for the communicator NCCL's init lines give the GPU; a job begun after the
    GPU was lost never used it (a second break-it pass), nor does it an hour on."""
    from api.diagnose import diagnose_paths
    from schemas.settings import Settings

    init = ("2026-11-29T02:00:00+00:00 {host} python[9]: {host}:9:10 [{d}] NCCL INFO comm 0x55{r} rank {r} nranks 4 "
            "cudaDev {d} busId {bus} commId 0x7f3a2b1c4d5e6f70 - Init COMPLETE")
    timeout = ("2026-11-29T03:{mi}:00+00:00 {host} python[9]: [rank{r}]:[E1129 03:{mi}:00.000000 "
               "ProcessGroupNCCL.cpp:616] [Rank {r}] Watchdog caught collective operation timeout: WorkNCCL("
               "SeqNum=808, OpType=ALLREDUCE, NumelIn=4096, NumelOut=4096, Timeout(ms)=600000) ran for 600000 "
               "milliseconds before timing out.")
    xid = ("2026-11-29T02:57:00+00:00 node37 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', "
           "name=<unknown>, GPU has fallen off the bus.")
    (tmp_path / "node37.log").write_text("\n".join([
        init.format(host="node37", r=0, d=0, bus="3b000"), init.format(host="node37", r=1, d=1, bus="5e000"), xid,
        timeout.format(mi=12, host="node37", r=1)]) + "\n")
    (tmp_path / "node38.log").write_text("\n".join([
        init.format(host="node38", r=2, d=0, bus="18000"), init.format(host="node38", r=3, d=1, bus="86000"),
        timeout.format(mi=12, host="node38", r=2), timeout.format(mi=12, host="node38", r=3)]) + "\n")
    _, _, incidents = diagnose_paths([tmp_path], Settings())
    (inc,) = incidents
    assert (inc["category"], inc["initiator"]["xid"]) == ("gpu_off_bus", 79)
    assert sorted((p["host"], p["rank"], p["relation"]) for p in inc["downstream"]) == [
        ("node37", 1, "same_comm"), ("node38", 2, "same_comm"), ("node38", 3, "same_comm")]
    assert {x["rule"] for x in inc["evidence"]} == {"gpu_fall.explains_later_hang"}
    # a job whose init lines come after the GPU fell (its ranks on the host's other GPUs): not its cause
    for name in ("node37.log", "node38.log"):
        (tmp_path / name).write_text((tmp_path / name).read_text().replace("T02:00:00", "T03:00:00")
                                     .replace("busId 3b000", "busId 2c000"))
    _, _, incidents = diagnose_paths([tmp_path], Settings())
    assert all(x["rule"] != "gpu_fall.explains_later_hang" for i in incidents for x in i["evidence"])
    assert len(incidents) == 2


def test_a_hang_whose_silent_ranks_no_line_places_says_which_ranks_logs_are_missing(pipeline):
    """One host's log of a 16-rank job: NCCL's init lines place ranks 8 - 15 on node08, all of which timed out.
    The silent ranks 0 - 7 ran elsewhere; it said "without the communicator's membership" and asked for the init
    lines of every rank, which it had in part (a fresh user's trial): it names the ranks whose logs are missing."""
    inits = [f"node08:{2300 + r}:{2400 + r} [{r - 8}] NCCL INFO comm 0x55{r} rank {r} nranks 16 cudaDev {r - 8} busId "
             f"{r - 8}{r - 8}000 commId 0x7f3a2b1c4d5e6f70 - Init COMPLETE" for r in range(8, 16)]
    timeouts = [f"[rank{r}]:[E1201 03:20:02.120267000 ProcessGroupNCCL.cpp:607] [Rank {r}] Watchdog caught collective "
                "operation timeout: WorkNCCL(SeqNum=4521, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) "
                "ran for 600011 milliseconds before timing out." for r in range(8, 16)]
    (inc,) = run(pipeline, "\n".join(inits + timeouts), host="node08")
    assert inc["pattern"] == "comm.silent_rank"
    assert "8 of its 16 ranks (0–7) logged no timeout, and no line here places them" in inc["explanation"], \
        inc["explanation"]
    assert inc["missing"][0] == "NCCL init lines or logs of ranks 0–7, to see where they ran"


def test_the_oom_killer_explains_the_rank_it_killed_and_the_peers_that_waited(pipeline):
    """The kernel's OOM killer kills a rank (NVIDIA/DALI#585: a multi-GPU job hung, its container's memory limit
    exhausted; no event before, a real-logs pass): torchrun reports the worker killed (-9) and the host's other rank
    times out waiting; one incident, the host's memory its category, the GPUs not blamed."""
    text = "\n".join([
        "2026-12-01T03:10:00+00:00 node21 kernel: Memory cgroup out of memory: Killed process 4182 (python) "
        "total-vm:812044kB, anon-rss:518420kB, file-rss:1240kB, shmem-rss:0kB",
        "2026-12-01T03:10:01+00:00 node21 torchrun[77]: ERROR:torch.distributed.elastic.multiprocessing.api:failed "
        "(exitcode: -9) local_rank: 1 (pid: 4182) of binary: /opt/conda/bin/python",
        "2026-12-01T03:20:00+00:00 node21 python[4181]: [rank0]:[E1201 03:20:00.000000000 ProcessGroupNCCL.cpp:616] "
        "[Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=77, OpType=ALLREDUCE, NumelIn=1, "
        "NumelOut=1, Timeout(ms)=600000) ran for 600030 milliseconds before timing out."])
    (inc,) = run(pipeline, text, host="node21")
    assert (inc["category"], inc["initiator"]["fault"], inc["initiator"]["device_type"]) == (
        "host_memory", "host.oom_kill", None)
    assert {x["rule"] for x in inc["evidence"]} == {"host_oom.explains_job_failure"}
    assert "The GPUs are not at fault" in inc["next_action"]


def test_deepspeeds_launcher_reports_a_worker_as_torchrun_does(pipeline):
    """DeepSpeed's launcher ("<argv> exits with return code = <code>", deepspeedai/DeepSpeed#3232, DeepSpeed#4510 behind
    pdsh's "<host>: " prefix; no event before, a real-logs pass) is torchrun's agent's report in another form: the
    OOM killer explains its -9 as it explains torchrun's; a worker that ended itself (-6) after its rank's watchdog
    timeout is that timeout's report, not a fault of its own."""
    kill = ("2026-12-01T03:10:00+00:00 node21 kernel: Memory cgroup out of memory: Killed process 4182 (python) "
            "total-vm:812044kB, anon-rss:518420kB, file-rss:1240kB, shmem-rss:0kB")
    exit_ = ("node21: [2026-12-01 03:10:01,885] [ERROR] [launch.py:434:sigkill_handler] ['/usr/bin/python3', "
             "'-u', 'main.py', '--local_rank={rank}', '--deepspeed'] exits with return code = {code}")
    (inc,) = run(pipeline, "\n".join([kill, exit_.format(rank=1, code=-9)]), host="node21")
    assert (inc["category"], inc["initiator"]["fault"], len(inc["initiator"]["events"])) == (
        "host_memory", "host.oom_kill", 2)
    assert {x["rule"] for x in inc["evidence"]} == {"host_oom.explains_job_failure"}
    (alone,) = run(pipeline, exit_.format(rank=1, code=-9), host="node21")
    assert (alone["severity"], alone["category"]) == ("error", "application")
    assert alone["next_action"].startswith("A worker of DeepSpeed's launcher was killed by SIGKILL")
    timeout = ("node21: [rank0]:[E1201 03:09:30.000000000 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught "
               "collective operation timeout: WorkNCCL(SeqNum=77, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
               "Timeout(ms)=600000) ran for 600030 milliseconds before timing out.")
    incs = run(pipeline, "\n".join([timeout, exit_.format(rank=0, code=-6)]), host="node21")
    assert [i["category"] for i in incs] == ["nccl_hang"], [(i["category"], i["initiator"].get("fault")) for i in incs]


def test_nccls_ras_report_names_the_lost_process_as_the_peer_to_read(pipeline):
    """NCCL's RAS client names a dead or missing process by its node ("Process 3487984 on node 172.16.64.213 managing
    GPU 5", NCCL user guide, Troubleshooting: RAS; no event before, a real-logs pass): a report of that peer, whose
    logs are the ones to read, not a fault of the host where ncclras ran."""
    text = "\n".join(["Errors", "======", "", "DEAD",
                      "  1 job process is considered dead (unreachable via the RAS network)",
                      "  Process 3487984 on node 172.16.64.213 managing GPU 5"])
    (inc,) = run(pipeline, text, host="login01")
    assert (inc["pattern"], inc["initiator"]["candidates"]) == ("comm.peer_failed", ["the peer at 172.16.64.213"]), inc


def test_a_task_blocked_after_a_gpus_fault_follows_it(pipeline):
    """gpud#117: six Xid 45 on one GPU, then, three minutes later, a task blocked in the kernel (the driver hung,
    nvidia-smi stuck): two incidents before; the hung task follows the GPU's fault (gpu_fault.explains_host_stall).
    Alone, a hung task is an incident of its own host."""
    xid = "[Sat Oct 12 18:35:32 2024] NVRM: Xid (PCI:0000:61:00): 45, pid=1496200, name=distprovers-gpu, Ch 0000000a"
    hung = "[Sat Oct 12 18:38:44 2024] INFO: task cache_mgr_event:620917 blocked for more than 120 seconds."
    (inc,) = run(pipeline, xid + "\n" + hung, host="node1")
    assert (inc["initiator"]["xid"], [(p["kind"], p["relation"]) for p in inc["downstream"]]) == (
        45, [("other", "same_host")])
    (alone,) = run(pipeline, hung, host="node1")
    assert (alone["initiator"]["fault"], alone["category"], alone["severity"]) == ("host.hung_task", "other",
                                                                                   "warning")


def test_pods_the_kubelet_rejects_after_a_gpu_fell_off_the_bus_follow_it(pipeline):
    """NVIDIA/k8s-device-plugin#2038: a GPU falls off the bus (Xid 79), then the kubelet rejects every GPU pod of the
    node because the device plugin's GetPreferredAllocation fails: two incidents before; the rejection follows the
    GPU's fault (gpu_fault.explains_pod_admission). Alone, it is an incident of its own host (a real-logs pass)."""
    xid = ("Sep 17 10:01:02 gpu-node-3 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, "
           "GPU has fallen off the bus.")
    rejected = ("Sep 17 10:05:00 gpu-node-3 kubelet[2211]: Warning  UnexpectedAdmissionError  pod/...  Allocate failed "
                "due to device plugin GetPreferredAllocation rpc failed")
    (inc,) = run(pipeline, xid + "\n" + rejected, host="gpu-node-3")
    assert (inc["initiator"]["xid"], [(p["kind"], p["relation"]) for p in inc["downstream"]]) == (
        79, [("other", "same_host")])
    assert {x["rule"] for x in inc["evidence"]} == {"gpu_fault.explains_pod_admission"}
    (alone,) = run(pipeline, rejected, host="gpu-node-3")
    assert (alone["initiator"]["fault"], alone["severity"]) == ("k8s.admission.preferred_allocation_failed", "error")


def test_a_gpus_fault_going_on_before_the_initiator_stays_its_own_though_the_initiator_reaches_it(pipeline):
    """A GPU's NVLink Xid 74 every 30 s from five minutes before another GPU of the host falls off the bus, and once
    more 2 s after it: one incident of the Xid 79 starting five minutes before it, "though a line it explains was
    logged 5 min before it" (a second break-it pass). The link's fault, begun long before, is its own incident."""
    t0 = datetime(2026, 11, 29, 2, 50, tzinfo=timezone.utc)
    chain = _repeats(XID74_LINK, t0, 30, 10) + _repeats(XID74_LINK, datetime(2026, 11, 29, 2, 55, 2,
                                                                            tzinfo=timezone.utc), 1, 1)
    fall = _repeats(XID79, datetime(2026, 11, 29, 2, 55, tzinfo=timezone.utc), 1, 1)
    incs = run(pipeline, "\n".join(chain[:10] + fall + chain[10:]), host="node41")
    assert [(i["initiator"]["xid"], i["start"][11:19]) for i in incs] == [(74, "02:50:00"), (79, "02:55:00")]


def test_an_incidents_start_is_its_first_faults_not_its_contexts(pipeline):
    """NVIDIA/nccl#1043 (a real-logs pass): Fabric Manager's healthy "Successfully configured" INFO line came 14
    minutes before its first multicast error and the incident started at it. Context before a fault (that line, a
    communicator's init) is the scene; the start is the first fault's, the end still the last line's."""
    text = "\n".join([
        "[Oct 31 2023 20:45:27] [INFO] [tid 526845] Successfully configured all the available NVSwitches to route GPU "
        "NVLink traffic. NVLink Peer-to-Peer support will be enabled once the GPUs are successfully registered with "
        "the NVLink fabric.",
        "[Oct 31 2023 20:59:37] [ERROR] [tid 527118] failed to release multicast team with handle "
        "17117060486525261364, cannot find the team",
        "[Oct 31 2023 21:11:20] [ERROR] [tid 527118] failed to find the GPU handle 12766911663723876521 in the "
        "multicast team request setup 4285537028137661651."])
    (inc,) = run(pipeline, text, host="node08")
    assert inc["category"] == "fabric_manager", inc
    assert (inc["start"], inc["start_basis"], inc["end"]) == (
        "2023-10-31T20:59:37.000000Z", "line", "2023-10-31T21:11:20.000000Z"), inc
    assert len(inc["initiator"]["events"]) == 2, inc["initiator"]


def test_a_hang_in_the_communicators_abort_is_a_teardown_hang_not_a_collective_one(pipeline):
    """mit-han-lab/distrifuser#6 (a real-logs pass): after the run's last step, each rank's "Future for ProcessGroup
    abort timed out" and its heartbeat monitor with no work pending (workMetaList_.size()=0) were "2 ranks hung in the
    same collective" and a search for a silent rank (pytorch/pytorch#128751: the heartbeat monitor firing during
    commAbort misleads debugging). The abort explains the idle heartbeat; the action names the teardown. A heartbeat
    timeout with work pending stays a hang in a collective."""
    text = "\n".join(
        [f"[rank{r}]:[E ProcessGroupNCCL.cpp:1025] [PG 0 Rank {r}] Future for ProcessGroup abort timed out after "
         "600000 ms" for r in (0, 1)]
        + [f"[rank{r}]:[E ProcessGroupNCCL.cpp:1316] [PG 0 Rank {r}] Heartbeat monitor timed out! Process will be "
           "terminated after dumping debug info. workMetaList_.size()=0" for r in (1, 0)])
    (inc,) = run(pipeline, text, host="node01")
    assert inc["category"] == "nccl_software", inc
    assert "teardown" in inc["next_action"] and "600000 ms" in inc["next_action"], inc["next_action"]
    assert {x["rule"] for x in inc["evidence"]} == {"torch_abort.explains_idle_heartbeat"}, inc["evidence"]
    busy = ("[rank0]:[E1019 01:04:03.356947152 ProcessGroupNCCL.cpp:1413] [PG 3 Rank 0] Heartbeat monitor timed out! "
            "Process will be terminated after dumping debug info. workMetaList_.size()=121")
    (hang,) = run(pipeline, busy, host="node01")
    assert hang["category"] == "nccl_hang", hang


def test_a_process_groups_rank_is_named_with_the_processs_rank_in_the_job(pipeline):
    """NVIDIA-NeMo/Megatron-Bridge#836 (a real-logs pass): "[rank29]:… [PG ID 5 … Rank 1] … CUDA error" was "the GPU of
    rank 1": rank 1 of a tensor-parallel group is on every node, and an operator looks at the wrong process. The
    explanation names the job's rank first, the group's beside it."""
    line = ("[rank29]:[E1002 12:20:55.123831168 ProcessGroupNCCL.cpp:1923] [PG ID 5 PG GUID 83(TENSOR_MODEL_PARALLEL_"
            "GROUP) Rank 1] Process group watchdog thread terminated with exception: CUDA error: unspecified launch "
            "failure")
    (inc,) = run(pipeline, line, host="node03")
    assert inc["initiator"]["rank"] == 1, inc["initiator"]  # the event's rank stays its communicator's
    assert "on the GPU of rank 29 (rank 1 of its process group) of node03" in inc["explanation"], inc["explanation"]


def test_two_processes_of_one_group_rank_are_two_parties(pipeline):
    """xdit-project/xDiT#147 (a real-logs pass): "[rank0]:… [PG 5 Rank 0] Heartbeat monitor timed out!" and
    "[rank4]:… [PG 5 Rank 0] …" are two processes, each rank 0 of its own group of id 5: they were one event and one
    party ("rank 0, 4 events"). Each is its own, by the job's rank c10's prefix prints."""
    text = "\n".join(
        f"[rank{r}]:[E ProcessGroupNCCL.cpp:1316] [PG 5 Rank 0] Heartbeat monitor timed out! Process will be "
        f"terminated after dumping debug info. workMetaList_.size()={n}" for r, n in ((0, 3), (4, 3)))
    (inc,) = run(pipeline, text, host="node01")
    parties = sorted(len(p["events"]) for p in inc["downstream"] + [inc["initiator"]] if p["events"])
    assert parties == [1, 1], inc


def test_two_mpi_ranks_each_rank_0_of_its_group_are_two_events_with_their_job_ranks(pipeline):
    """Under ``mpirun --tag-output`` an older PyTorch prints no "[rankN]:": MPI ranks 5 and 6, each rank 0 of its own
    data-parallel group, print the same "[Rank 0] Watchdog caught …" in one second. Open MPI's label was part of the
    storm key only for a line that names no rank: they were one event of count 2 and no job rank (a break-it pass;
    c10's "[rank5]:" keeps them apart, xdit-project/xDiT#147). Each is its own, its MPI rank its ``global_rank``."""
    line = ("[E ProcessGroupNCCL.cpp:737] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=469508, "
            "OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 1802212 milliseconds before timing out.")
    text = "\n".join(f"[1,{r}]<stderr>:{line}" for r in (5, 6))
    seg = Segment(data=text.encode(), origin="t:node07", stream="node07", host="node07", ref_ts=T0, ref_basis="kafka",
                  ingest_ts=T0)
    ev = pipeline.run(Decoded(segments=[seg])).events.to_pylist()
    assert sorted((e["rank"], e["count"], orjson.loads(e["details"]).get("global_rank")) for e in ev) == [
        (0, 1, 5), (0, 1, 6)], ev


def test_the_imex_daemons_memory_export_errors_are_imexs_not_fabric_managers(pipeline):
    """kubernetes-sigs/dra-driver-nvidia-gpu#948 (a real-logs pass): the IMEX daemon's "Failed to get new memory
    reference with rc: 87" (GB200: no Fabric Manager on the compute trays) gave no event bare, and behind IMEX's log
    prefix was "Fabric Manager on … says", its advice Fabric Manager's; recreating the workload pods fixed it."""
    text = "\n".join(["[Mar 17 2026 10:00:00] [ERROR] [tid 77] Failed to get new memory reference with rc: 87",
                      "[Mar 17 2026 10:00:00] [ERROR] [tid 77] Failed to allocate memory reference.",
                      "[Mar 17 2026 10:00:01] [ERROR] [tid 77] Received import response from node id 0 with failure "
                      "status 3"])
    (inc,) = run(pipeline, text, host="gb200-n01")
    assert inc["category"] == "fabric_manager", inc
    assert inc["explanation"].startswith("The IMEX daemon on gb200-n01 says"), inc["explanation"]
    assert "nvidia-imex-ctl -N" in inc["next_action"] and "recreate the workload" in inc["next_action"], inc
    # beside Fabric Manager's own exit, the quoted line is the one whose daemon is named (a third break-it pass)
    fm = ("2026-03-17T10:00:00Z gb200-n01 systemd[1]: nvidia-fabricmanager.service: Main process exited, "
          "code=exited, status=1/FAILURE")
    (inc,) = run(pipeline, fm + "\n" + text, host="gb200-n01")
    assert inc["explanation"].startswith("The IMEX daemon on gb200-n01 says: “Failed to get new memory reference"), \
        inc["explanation"]


def test_a_gpu_its_fsp_refuses_to_boot_is_a_gpu_failure(pipeline):
    """An H100 whose firmware security processor answers the boot commands with an error (NVIDIA/nvtrust#19, a driver
    printing "NVRM kfsp…" with no colon): no event before, then an incident of category "other" (a real-logs pass).
    Any GPU that does not start, as RmInitAdapter's failure, is a GPU failure (``attribute.KIND_CATEGORY``)."""
    text = "\n".join([
        "[  343.059154] NVRM kfspProcessCommandResponse_GH100: FSP response reported error. Task ID: 0x2 Command type: "
        "0x14 Error code: 0x6",
        "[  343.060592] NVRM kfspSendBootCommands_GH100: Sent following content to FSP:",
        "[  343.065531] NVRM kfspSendBootCommands_GH100: FSP boot cmds failed. RM cannot boot.",
        "[  343.066452] NVRM kfspDumpDebugState_GH100: FSP microcode v4.76"])
    (inc,) = run(pipeline, text, host="cvm")
    assert (inc["category"], inc["severity"], inc["initiator"]["kind"], inc["initiator"]["host"]) == (
        "gpu_failure", "error", "gpu_init_failed", "cvm")
    assert "answered error 0x6" in inc["next_action"]
    rm = "[  199.234935] NVRM: GPU 0000:0a:00.0: RmInitAdapter failed! (0x25:0x40:1470)"
    (inc,) = run(pipeline, rm)
    assert (inc["category"], inc["initiator"]["device"]) == ("gpu_failure", "0000:0a:00.0")


def test_both_ends_of_one_failed_ib_connection_in_one_job_log_are_one_incident(pipeline, tmp_path):
    """mpirun's output of a 2-host nccl-tests run: both hosts' ranks print "NET/IB : Got completion with error 12"
    (retry count exceeded), NCCL names no peer address and no init line places the ranks (NVIDIA/nccl-tests#24, #36):
    two incidents, each blaming its own host at 0.75, one of them arbitrarily (real-logs passes, the third time). One
    job's log file ties them (``rules.log_of``, relation ``same_log``): one incident, no single culprit — the path
    between the two hosts (``comm.ib_both_ends``; both GPUs were the suspects at 0.3 before, and the thread's fix was
    the RoCE GID index: a fourth real-logs pass). The same lines in two hosts' own files stay apart (nothing ties
    them), and so do two errors an hour apart in one file."""
    warn = ("{h}:359{p}:359{q} [0] transport/net_ib.cc:774 NCCL WARN NET/IB : Got completion with error 12, opcode 0, "
            "len 32631, vendor err 129")

    def incidents(files):
        return _job_files(pipeline, tmp_path, files)[1]

    both = warn.format(h="gpu5", p=17, q=94) + "\n" + warn.format(h="gpu4", p=2, q=77) + "\n"
    (inc,) = incidents({"mpirun.log": both})
    assert (inc["initiator"]["device_type"], inc["category"], inc["confidence"]) == (None, "ib_port", 0.5)
    assert inc["initiator"]["candidates"] == ["the InfiniBand/RoCE path between gpu4 and gpu5"], inc["initiator"]
    # after a stamped line of the capture, whose time they take (ts_basis inherited): still one (a break-it pass)
    stamped = ("[rank1]:[E1130 02:59:00.123456789 ProcessGroupNCCL.cpp:1] [Rank 1] some line no signature reads\n"
               "2026-11-30T02:59:00Z job started\n" + both)
    ib = [i for i in incidents({"mpirun2.log": stamped}) if i["category"] == "ib_port"]
    assert len(ib) == 1 and ib[0]["pattern"] == "comm.ib_both_ends", ib
    apart = incidents({"gpu5.log": warn.format(h="gpu5", p=17, q=94) + "\n",
                       "gpu4.log": warn.format(h="gpu4", p=2, q=77) + "\n"})
    assert len(apart) == 2
    hour = incidents({"job.log": "2026-11-30T03:00:00Z " + warn.format(h="gpu5", p=17, q=94) + "\n"
                                 "2026-11-30T04:00:00Z " + warn.format(h="gpu4", p=2, q=77) + "\n"})
    assert len(hour) == 2


def test_a_large_jobs_configuration_mismatch_asks_no_relation_per_pair_of_its_lines(pipeline, tmp_path,
                                                                                    monkeypatch):
    """A job of 60 hosts x 8 ranks, each rank's network-plugin line and init line in the job's log, one host on an
    external plugin: each rank's plugin line was a party of its own, and ``downstream_parties`` asked every relation of
    it against each of the 480 lines (the initiator's own): a quadratic search, 2,000 hosts did not end in an hour and
    400 took 150 s (a break-it pass). The same incident, with relations asked a bounded number of times per line."""
    from correlate.rules import Relations

    plugin = {"in": "NET/Plugin: Using internal network plugin.",
              "ex": "NET/Plugin: Loaded net plugin NCCL RDMA Plugin v7 (v7)"}
    lines = []
    for i in range(60):
        for g in range(8):
            r, h = i * 8 + g, f"gpu-{i:03d}"
            lines += [f"{h}:{1000 + r}:{1000 + r} [{g}] NCCL INFO {plugin['ex' if i == 7 else 'in']}",
                      f"{h}:{1000 + r}:{1001 + r} [{g}] NCCL INFO comm 0x{r:x} rank {r} nranks 480 cudaDev {g} "
                      f"busId {g + 1}b000 commId 0x5ae77eb5ea4ec1ee - Init COMPLETE"]
    asked = []
    holds = Relations.holds
    monkeypatch.setattr(Relations, "holds", lambda self, rel, c, e: asked.append(rel) or holds(self, rel, c, e))
    _, (inc,) = _job_files(pipeline, tmp_path, {"job.log": "\n".join(lines) + "\n"})
    assert (inc["pattern"], inc["initiator"]["candidates"]) == ("config.job_mismatch", ["gpu-007"])
    assert len(inc["initiator"]["events"]) == 480 and inc["downstream"] == []
    assert len(asked) <= 10 * len(lines), len(asked)


def test_a_plugin_that_did_not_load_leaves_its_host_on_the_internal_plugin_unless_nccl_aborts(pipeline, tmp_path):
    """A network plugin NCCL found but could not load (its library needs a GLIBC the container lacks: the line of
    AI-Hypercomputer/gpu-recipes#5) leaves NCCL on its own network: the releases whose dlopen failure takes the errno
    branch (NCCL to 2.11, 2.19 - 2.20: "NET/Plugin : Plugin load returned %d : %s.", src/init.cc, src/net.cc) print
    no fallback line after it. Beside another host of the job on HPC-X's plugin (NVIDIA/nccl#1634's line) that is the
    job's plugin mismatch, as "Using internal network plugin." is; it was a load warning of one host, compared with
    no one. Not when NCCL aborts instead ("Error: network gIB not found.": NCCL_NET named the plugin's network)."""
    failed = ("{h}:565:565 [7] NCCL INFO NET/Plugin : Plugin load returned 22 : /lib/x86_64-linux-gnu/libc.so.6: "
              "version `GLIBC_2.32' not found (required by /usr/local/nvidia/lib64/libnccl-net.so).")
    external = "{h}:589474:589541 [0] NCCL INFO Plugin Path : /opt/hpcx/nccl_rdma_sharp_plugin/lib/libnccl-net.so"
    missing = "{h}:565:565 [7] net.cc:579 NCCL WARN Error: network gIB not found."
    lines = [failed.format(h="gpu-b-11"), external.format(h="gpu-a-04")]
    events, (inc,) = _job_files(pipeline, tmp_path, {"job.log": "\n".join(lines) + "\n"})
    assert (inc["pattern"], inc["category"], inc["severity"]) == ("config.job_mismatch", "nccl_software", "warning")
    assert inc["initiator"]["candidates"] == ["gpu-a-04", "gpu-b-11"]
    assert sorted(inc["initiator"]["events"]) == sorted(e["event_id"] for e in events)
    assert "gpu-a-04: /opt/hpcx/nccl_rdma_sharp_plugin/lib/libnccl-net.so; gpu-b-11: internal" in inc["explanation"]
    # the host that aborted on the plugin's missing network ran on none: its own NCCL software incident, no mismatch
    _, incs = _job_files(pipeline, tmp_path, {"job2.log": "\n".join(lines + [missing.format(h="gpu-b-11")]) + "\n"})
    assert "config.job_mismatch" not in {i["pattern"] for i in incs}, incs
    (inc,) = [i for i in incs if i["initiator"]["host"] == "gpu-b-11"]
    assert (inc["category"], inc["severity"]) == ("nccl_software", "error"), inc
    # ... but a run of the job after it (sbatch --open-mode=append, NCCL_NET unset: the host's GPU 7 under a new pid)
    # that fell back is that run's mismatch: the abort of the first run left every later run of the host unread
    rerun = [failed.format(h="gpu-b-11").replace(":565:565", ":901:901"),
             external.format(h="gpu-a-04").replace(":589474:", ":601233:")]
    _, incs = _job_files(pipeline, tmp_path, {"job4.log": "\n".join(lines + [missing.format(h="gpu-b-11")] + rerun)
                                              + "\n"})
    assert [i["initiator"]["candidates"] for i in incs if i["pattern"] == "config.job_mismatch"] == [
        ["gpu-a-04", "gpu-b-11"]], incs
    # both hosts' plugins failed to load: both on NCCL's internal one, no mismatch
    both = [failed.format(h="gpu-b-11"), failed.format(h="gpu-a-04")]
    _, incs = _job_files(pipeline, tmp_path, {"job3.log": "\n".join(both) + "\n"})
    assert "config.job_mismatch" not in {i["pattern"] for i in incs}, incs


def test_hosts_of_one_job_log_with_different_net_plugins_are_one_configuration_incident(pipeline, tmp_path):
    """The kind of NVIDIA/nccl#1634: one job's log (mpirun's output) holds its hosts' NCCL network-plugin lines, one
    host on an external plugin (HPC-X's libnccl-net.so, or "Loaded net plugin …" of nccl-tests#319), another on the
    internal one, and the job hangs. Each line alone is context; together they are the job's first fault, one incident
    of category nccl_software with no host or device named, the hosts' watchdog timeouts its downstream
    (``rules.mark_config_mismatch``, ``config_mismatch.explains_job_hang``, pattern ``config.job_mismatch``). Hosts
    that agree, one host's two lines, the same lines in each host's own file or stamped by a syslog server (a file of
    no one job) are no incident. Host names are drawn from the lines, none from the thread."""
    internal = ("{h}:18226:18274 [5] NCCL INFO NET/Plugin: Could not find: libnccl-net.so. Using internal network "
                "plugin.")
    external = "{h}:589474:589541 [0] NCCL INFO Plugin Path : /opt/hpcx/nccl_rdma_sharp_plugin/lib/libnccl-net.so"
    loaded = "{h}:2520140:2520237 [4] NCCL INFO NET/Plugin: Loaded net plugin NCCL RDMA Plugin v8 (v8)"
    timeout = ("{h}:18226:18274 [{r}] [Rank {r}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, "
               "OpType=ALLREDUCE, NumelIn=2, NumelOut=2, Timeout(ms)=600000) ran for 600060 milliseconds before "
               "timing out.")

    def incidents(files):
        return _job_files(pipeline, tmp_path, files)

    lines = [internal.format(h="gpu-b-11"), external.format(h="gpu-a-04")]
    events, incs = incidents({"job.log": "\n".join(lines) + "\n"})
    (inc,) = incs
    assert (inc["pattern"], inc["category"], inc["severity"]) == ("config.job_mismatch", "nccl_software", "warning")
    assert (inc["initiator"]["host"], inc["initiator"]["device_type"]) == (None, None)
    assert inc["initiator"]["candidates"] == ["gpu-a-04", "gpu-b-11"]
    assert sorted(inc["initiator"]["events"]) == sorted(e["event_id"] for e in events)
    # the hosts' watchdog timeouts, lines later in the same log: downstream, the incident an error
    timeouts = [timeout.format(h="gpu-a-04", r=0), timeout.format(h="gpu-b-11", r=8)]
    _, (inc,) = incidents({"job2.log": "\n".join(lines + timeouts) + "\n"})
    assert (inc["pattern"], inc["severity"], inc["confidence"]) == ("config.job_mismatch", "error", 0.8)
    assert {(d["host"], d["kind"]) for d in inc["downstream"]} == {("gpu-a-04", "nccl_timeout"),
                                                                  ("gpu-b-11", "nccl_timeout")}
    assert {r["rule"] for r in inc["evidence"]} == {"config_mismatch.explains_job_hang"}
    # the name-printing form of an external plugin against the internal one: the same mismatch
    _, incs = incidents({"job3.log": internal.format(h="gpu-b-11") + "\n" + loaded.format(h="gpu-a-04") + "\n"})
    assert [i["pattern"] for i in incs] == ["config.job_mismatch"]
    assert "gpu-a-04: NCCL RDMA Plugin v8; gpu-b-11: internal" in incs[0]["explanation"]
    # hosts that agree (two external plugins are not compared: one release prints the path, another the name)
    agree = [external.format(h="gpu-a-04"), loaded.format(h="gpu-b-11")]
    for name, text in {"agree.log": agree, "one.log": [internal.format(h="gpu-a-04"), external.format(h="gpu-a-04")]
                       }.items():
        events, incs = incidents({name: "\n".join(text) + "\n"})
        assert incs == [] and len(events) == len(text), name
    # three hosts of which two loaded HPC-X's plugin: the odd one is the candidate (all three were)
    _, (inc,) = incidents({"three.log": "\n".join(lines + [external.format(h="gpu-c-02")]) + "\n"})
    assert (inc["pattern"], inc["initiator"]["candidates"]) == ("config.job_mismatch", ["gpu-b-11"])
    # a requeued job appending to one output file (sbatch --open-mode=append): a run on gpu-a-04 and gpu-b-11, both
    # internal, then, the plugin installed, one on gpu-a-04 and gpu-c-02, both external. No run mismatched: gpu-a-04's
    # GPU 0 printing again under a new pid starts another run of the job (an incident of three hosts, a break-it pass)
    rerun = "\n".join([internal.format(h="gpu-a-04").replace("[5]", "[0]"), internal.format(h="gpu-b-11"),
                       external.format(h="gpu-a-04").replace("589474", "601233"), external.format(h="gpu-c-02")])
    events, incs = incidents({"requeued.log": rerun + "\n"})
    assert incs == [] and len(events) == 4
    # ... while a mismatch within the second run still is one
    events, incs = incidents({"requeued2.log": rerun.replace(external.format(h="gpu-c-02"),
                                                             internal.format(h="gpu-c-02")) + "\n"})
    assert [(i["pattern"], i["initiator"]["candidates"]) for i in incs] == [
        ("config.job_mismatch", ["gpu-a-04", "gpu-c-02"])]
    # each host's own file: nothing ties them
    events, incs = incidents({"gpu-a-04.log": lines[1] + "\n", "gpu-b-11.log": lines[0] + "\n"})
    assert incs == [] and len(events) == 2
    # a syslog server's file, every line stamped: every host's lines, of no one job
    stamped = "".join(f"2026-11-30T03:00:0{k}Z {x}\n" for k, x in enumerate(lines))
    events, incs = incidents({"syslog.log": stamped})
    assert incs == [] and len(events) == 2


def test_two_jobs_in_one_capture_are_compared_each_on_its_own(pipeline, tmp_path):
    """A launcher's log holding two jobs one after the other (two mpirun calls of one script), no host in common,
    each job's hosts agreeing on their network plugin but the two jobs loading different ones, was "one job's"
    mismatch of all four hosts. The jobs' communicators tie their hosts (``rules._capture_jobs``: NCCL's commId on
    the init lines, NVIDIA/nccl#1814; nccl-tests's rank table, one per test run): hosts no communicator shares are
    two jobs, each compared on its own, and a mismatch within one of them is still its incident. A process that
    opened an external plugin and then fell back to the internal one counts as internal (its last word)."""
    internal = ("{h}:18226:18274 [0] NCCL INFO NET/Plugin: Could not find: libnccl-net.so. Using internal network "
                "plugin.")
    external = "{h}:589474:589541 [0] NCCL INFO Plugin Path : /opt/hpcx/nccl_rdma_sharp_plugin/lib/libnccl-net.so"
    init = ("{h}:984:1257 [0] NCCL INFO comm 0x557fe785f7a0 rank {r} nranks 2 cudaDev 0 nvmlDev 0 busId 9b000 "
            "commId {c} - Init COMPLETE")
    table = "#  Rank  {r} Group  0 Pid 587622 on {h} device  0 [0x21] NVIDIA GeForce RTX 4090"

    def job(hosts, plugin, comm):
        return [x for r, h in enumerate(hosts)
                for x in (plugin[r].format(h=h), init.format(h=h, r=r, c=comm))]

    def incidents(name, lines):
        return _job_files(pipeline, tmp_path, {name: "\n".join(lines) + "\n"})

    a, b = ["gpu-a-01", "gpu-a-02"], ["gpu-b-01", "gpu-b-02"]
    two = job(a, [internal] * 2, "0x5ae77eb5ea4ec1ee") + job(b, [external] * 2, "0x996ee6f117cb8e1e")
    events, incs = incidents("two.log", two)
    assert incs == [] and len(events) == 8
    # the same two jobs told apart by nccl-tests's rank tables (no commId: NCCL before 2.19 prints none)
    tables = [table.format(r=r, h=h) for r, h in enumerate(a)] + [internal.format(h=h) for h in a] + [
        table.format(r=r, h=h) for r, h in enumerate(b)] + [external.format(h=h) for h in b]
    events, incs = incidents("tests.log", tables)
    assert incs == [] and len(events) == 8
    # a mismatch inside the second job: its two hosts only, not the first job's
    odd = job(a, [internal] * 2, "0x5ae77eb5ea4ec1ee") + job(b, [external, internal], "0x996ee6f117cb8e1e")
    _, incs = incidents("odd.log", odd)
    assert [(i["pattern"], i["initiator"]["candidates"]) for i in incs] == [("config.job_mismatch", b)]
    assert "gpu-b-01: /opt/hpcx/nccl_rdma_sharp_plugin/lib/libnccl-net.so; gpu-b-02: internal" in incs[0][
        "explanation"]
    # one job (one communicator over the four hosts): the mismatch of NVIDIA/nccl#1634
    _, incs = incidents("one.log", job(a + b, [internal] * 2 + [external] * 2, "0x5ae77eb5ea4ec1ee"))
    assert [(i["pattern"], i["initiator"]["candidates"]) for i in incs] == [("config.job_mismatch", a + b)]
    # a process that opened HPC-X's plugin and fell back to NCCL's own: internal, as its peer's
    fell_back = [external.format(h="gpu-a-01"), internal.format(h="gpu-a-01").replace("18226", "589474"),
                 internal.format(h="gpu-a-02")]
    events, incs = incidents("fallback.log", fell_back)
    assert incs == [] and len(events) == 3


def test_a_mismatch_of_many_hosts_is_explained_by_count_per_value_and_the_odd_hosts(pipeline, tmp_path):
    """A job of many hosts of which one or two loaded another network plugin (NVIDIA/nccl#1634's mismatch, at scale):
    the explanation named every host with its plugin (40 kB at 2,000 hosts) and so did the check to run. Now a value
    held by more than ``patterns.NAMED_HOSTS`` hosts is their count, the odd hosts are named with theirs, and the check
    names the odd hosts first; a few hosts are each named, as before. Lines as NVIDIA/nccl#1634's and
    NVIDIA/nccl#1814's init line (one commId, every rank), host names made up."""
    internal = ("{h}:{p}:{p} [0] NCCL INFO NET/Plugin: Could not find: libnccl-net.so. Using internal network "
                "plugin.")
    loaded = "{h}:{p}:{p} [0] NCCL INFO NET/Plugin: Loaded net plugin NCCL RDMA Plugin v8 (v8)"
    init = ("{h}:{p}:{p} [0] NCCL INFO comm 0x557fe785f7a0 rank {r} nranks {n} cudaDev 0 nvmlDev 0 busId 1b000 "
            "commId 0x5ae77eb5ea4ec1ee - Init COMPLETE")
    hosts = [f"node{r:04d}" for r in range(20)]
    odd = {"node0007", "node0013"}
    lines = [(loaded if h in odd else internal).format(h=h, p=1000 + r) for r, h in enumerate(hosts)] + [
        init.format(h=h, p=1000 + r, r=r, n=len(hosts)) for r, h in enumerate(hosts)]
    _, incs = _job_files(pipeline, tmp_path, {"big.log": "\n".join(lines) + "\n"})
    (inc,) = incs
    assert inc["initiator"]["candidates"] == ["node0007", "node0013"]
    assert inc["explanation"].startswith(
        "The hosts of one job's log loaded different NCCL network plugins (18 hosts: internal; node0007: NCCL RDMA "
        "Plugin v8; node0013: NCCL RDMA Plugin v8): their ranks speak two transports to each other")
    assert inc["verify"][0] == "NCCL_DEBUG=INFO: every host prints the same 'NET/Plugin' line (20 hosts; first " \
        "node0007, node0013)"
    # ... every host's watchdog timeout after it: the hosts that reported it are counted too
    timeout = ("{h}:{p}:{p} [0] [Rank {r}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, "
               "OpType=ALLREDUCE, NumelIn=2, NumelOut=2, Timeout(ms)=600000) ran for 600060 milliseconds before "
               "timing out.")
    hung = lines + [timeout.format(h=h, p=1000 + r, r=r) for r, h in enumerate(hosts)]
    _, (inc,) = _job_files(pipeline, tmp_path, {"hung.log": "\n".join(hung) + "\n"})
    assert (inc["severity"], len(inc["downstream"])) == ("error", 20)
    assert "with no error of its own, and 20 hosts reported it. No GPU" in inc["explanation"]
    # ... and a job of a few hosts names each, as before
    few = [internal.format(h="gpu-b-11", p=18226), loaded.format(h="gpu-a-04", p=2520140)]
    _, (inc,) = _job_files(pipeline, tmp_path, {"few.log": "\n".join(few) + "\n"})
    assert "(gpu-a-04: NCCL RDMA Plugin v8; gpu-b-11: internal)" in inc["explanation"]
    assert inc["verify"][0] == "NCCL_DEBUG=INFO: every host prints the same 'NET/Plugin' line (gpu-a-04, gpu-b-11)"


def test_a_rule_of_one_host_asks_its_relation_of_that_hosts_effects_only(pipeline, tmp_path, monkeypatch):
    """``attribute.find_edges`` with a rule whose relations are all one host's (``rules.ONE_HOST_RELATIONS``:
    ``config_mismatch.explains_job_hang``'s same_host) pairs a cause with its own host's effects only: a 2,000-host
    mismatched job whose every rank printed its watchdog timeout asked same_host of every configuration line and
    every host's timeout, 4 million pairs and most of diagnose's time (a break-it pass). Counted here as the
    relations asked, 200 hosts: each host's line and its own timeout, the edge each (lines as NVIDIA/nccl#1634's)."""
    from correlate.rules import Relations

    internal = ("{h}:{p}:{p} [0] NCCL INFO NET/Plugin: Could not find: libnccl-net.so. Using internal network "
                "plugin.")
    loaded = "{h}:{p}:{p} [0] NCCL INFO NET/Plugin: Loaded net plugin NCCL RDMA Plugin v8 (v8)"
    timeout = ("{h}:{p}:{p} [0] [Rank {r}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, "
               "OpType=ALLREDUCE, NumelIn=2, NumelOut=2, Timeout(ms)=600000) ran for 600060 milliseconds before "
               "timing out.")
    hosts = [f"node{r:04d}" for r in range(200)]
    lines = [(loaded if r == 7 else internal).format(h=h, p=1000 + r) for r, h in enumerate(hosts)] + [
        timeout.format(h=h, p=1000 + r, r=r) for r, h in enumerate(hosts)]
    asked: list[str] = []
    real = Relations.holds

    def counted(self, rel, c, e):
        asked.append(rel)
        return real(self, rel, c, e)

    monkeypatch.setattr(Relations, "holds", counted)
    _, (inc,) = _job_files(pipeline, tmp_path, {"hung.log": "\n".join(lines) + "\n"})
    assert (inc["pattern"], inc["severity"], len(inc["downstream"])) == ("config.job_mismatch", "error", 200)
    assert {r["rule"] for r in inc["evidence"]} == {"config_mismatch.explains_job_hang"}
    assert asked.count("same_host") <= 2 * len(hosts)


def test_hosts_tied_only_by_running_at_once_or_by_communicator_size_are_one_job(pipeline, tmp_path):
    """Two ways ``rules._capture_jobs`` misread a capture. (1) A job whose only init lines are its hosts' own
    communicators (each host's GPUs, each with its commId, NVIDIA/nccl#1814's form): the communicator across hosts never
    printed one (NCCL 2.19 - 2.21 print "Init START" after the bootstrap, which hosts on two plugins or releases fail),
    so each host was a job of its own and the mismatch of NVIDIA/nccl#1634 was missed. Processes that print their
    settings and init lines in turn, at once, are one launch's (``rules._join_concurrent``); two single-node jobs one
    after the other in the capture stay apart. (2) NCCL before 2.19 prints no commId (NVIDIA/nccl#629's "comm
    0x7fdf08000d00 rank 15 nranks 16 … - Init COMPLETE"): two two-host jobs run one after the other were one job and
    their different plugins a mismatch. A communicator's ranks, each printing once, of one size across hosts tie
    them (``rules._sized_comms``); a size one host holds whole (its own GPUs) ties nothing."""
    internal = ("{h}:{p}:{p} [0] NCCL INFO NET/Plugin: Could not find: libnccl-net.so. Using internal network "
                "plugin.")
    external = "{h}:{p}:{p} [0] NCCL INFO Plugin Path : /opt/hpcx/nccl_rdma_sharp_plugin/lib/libnccl-net.so"
    node = ("{h}:{p}:{p} [{g}] NCCL INFO comm 0x557fe785f7{g}0 rank {g} nranks 2 cudaDev {g} nvmlDev {g} busId "
            "{g}b000 commId {c} - Init COMPLETE")
    old = ("{h}:{p}:{p} [{g}] NCCL INFO comm 0x7fdf08000d{g}0 rank {r} nranks {n} cudaDev {g} busId {g}b000 - Init "
           "COMPLETE")

    def incidents(name, lines):
        return _job_files(pipeline, tmp_path, {name: "\n".join(lines) + "\n"})

    def host(h, p, plugin, c):
        return [plugin.format(h=h, p=p), *(node.format(h=h, p=p + g, g=g, c=c) for g in (0, 1))]

    # (1) one launch: both hosts' plugin lines first, then each host's own communicator
    a, b = host("gpu-a", 5000, internal, "0x5ae77eb5ea4ec1ee"), host("gpu-b", 6000, external, "0x996ee6f117cb8e1e")
    _, incs = incidents("once.log", [a[0], b[0], *a[1:], *b[1:]])
    assert [(i["pattern"], i["initiator"]["candidates"]) for i in incs] == [("config.job_mismatch", ["gpu-a", "gpu-b"])]
    # ... two single-node jobs, one after the other: no job of two hosts
    events, incs = incidents("turns.log", a + b)
    assert incs == [] and len(events) == 6
    # (2) no commId: two two-host jobs in turn, each agreeing (ranks 0-1 of nranks 2, one GPU a host)
    def job(hosts, plugin, pid):
        return [plugin.format(h=h, p=pid) for h in hosts] + [
            old.format(h=h, p=pid, g=0, r=r, n=len(hosts)) for r, h in enumerate(hosts)]
    two = job(["gpu-a-01", "gpu-a-02"], internal, 5000) + job(["gpu-b-01", "gpu-b-02"], external, 7000)
    events, incs = incidents("two.log", two)
    assert incs == [] and len(events) == 8
    # ... and after a single-node run of two GPUs on another host (a size that host holds whole: its lines tie
    # nothing, the others' of that size still do)
    single = [internal.format(h="gpu-c-01", p=3000)] + [old.format(h="gpu-c-01", p=3000, g=g, r=g, n=2) for g in (0, 1)]
    events, incs = incidents("three.log", single + two)
    assert incs == [] and len(events) == 11
    # ... one job over the four hosts is still one: its mismatch is the incident
    _, incs = incidents("one.log", [internal.format(h="gpu-a-01", p=5000), internal.format(h="gpu-a-02", p=5000),
                                    external.format(h="gpu-b-01", p=5000), external.format(h="gpu-b-02", p=5000)] + [
        old.format(h=h, p=5000, g=0, r=r, n=4) for r, h in enumerate(["gpu-a-01", "gpu-a-02", "gpu-b-01", "gpu-b-02"])])
    assert [(i["pattern"], i["initiator"]["candidates"]) for i in incs] == [
        ("config.job_mismatch", ["gpu-a-01", "gpu-a-02", "gpu-b-01", "gpu-b-02"])]
    # ... and each host's own communicator of its two GPUs (a size one host holds whole) splits no one job
    own = [internal.format(h="gpu-a", p=5000), external.format(h="gpu-b", p=6000)] + [
        old.format(h=h, p=p + g, g=g, r=g, n=2) for h, p in (("gpu-a", 5000), ("gpu-b", 6000)) for g in (0, 1)]
    _, incs = incidents("own.log", own)
    assert [(i["pattern"], i["initiator"]["candidates"]) for i in incs] == [("config.job_mismatch", ["gpu-a", "gpu-b"])]
    # (3) a single-node nccl-tests on every node at once (a pdsh health check; nodes of two types, each type on its
    # own plugin on purpose): each run's rank table lists all its ranks on its one host, so each is a job of its own,
    # however their lines interleave (NVIDIA/nccl-tests#244's table row; NVIDIA/nccl#1814's init line)
    table = "#  Rank  {g} Group  0 Pid {p} on {h} device  {g} [0x{g}b] NVIDIA H100 80GB HBM3"
    nodes = [("gpu-a01", 5000, internal, "0x5ae77eb5ea4ec1ee"), ("gpu-a02", 5100, internal, "0x1ae77eb5ea4ec1ee"),
             ("gpu-b01", 6000, external, "0x996ee6f117cb8e1e"), ("gpu-b02", 6100, external, "0x196ee6f117cb8e1e")]
    check = [table.format(h=h, p=p, g=g) for h, p, _, _ in nodes for g in (0, 1)] + [
        plugin.format(h=h, p=p) for h, p, plugin, _ in nodes] + [
        node.format(h=h, p=p, g=g, c=c) for h, p, _, c in nodes for g in (0, 1)]
    events, incs = incidents("health.log", check)
    assert incs == [] and len(events) == 20
    # ... and with their tables' rows in turn (each node's Rank 0, then each one's Rank 1): a row continues the table
    # that expects its rank, of its own process ("Pid … on <host>"); they went to the table opened last, the first
    # node's Rank 1 with the last node's table, and the health check paged a mismatch
    turns = [table.format(h=h, p=p, g=g) for g in (0, 1) for h, p, _, _ in nodes] + check[8:]
    events, incs = incidents("turns.log", turns)
    assert incs == [] and len(events) == 20
    # ... and with one process per GPU (mpirun -np 2 on each node: each row's "Pid … on <host>" its own, the pids
    # of no earlier row): a row continues the table that expects its rank on its own host; the table opened last
    # took the first node's Rank 1, each table then two nodes', and the health check was a mismatch (a break-it pass)
    per_gpu = [table.format(h=h, p=p + g, g=g) for g in (0, 1) for h, p, _, _ in nodes] + [
        plugin.format(h=h, p=p + g).replace("[0]", f"[{g}]") for h, p, plugin, _ in nodes for g in (0, 1)] + [
        node.format(h=h, p=p + g, g=g, c=c) for h, p, _, c in nodes for g in (0, 1)]
    events, incs = incidents("per_gpu.log", per_gpu)
    assert incs == [] and len(events) == 24
    # ... and a row left out (a truncated line): the first node's Rank 1 continues its own process's table, not the
    # table that expects Rank 1 (the second node's), which joined the two nodes (a break-it pass)
    rows = [table.format(h=h, p=p, g=g) for g in (0, 1, 2) for h, p, _, _ in nodes]
    events, incs = incidents("cut.log", [r for r in rows if r != table.format(h="gpu-a02", p=5100, g=1)] + check[8:])
    assert incs == [] and len(events) == 23
    # ... while the same lines without the tables are one launch's, as in (1)
    _, incs = incidents("launch.log", check[8:])
    assert [(i["pattern"], i["initiator"]["candidates"]) for i in incs] == [
        ("config.job_mismatch", ["gpu-a01", "gpu-a02", "gpu-b01", "gpu-b02"])]


def test_a_host_in_two_jobs_of_one_size_in_turn_holds_no_communicator_of_that_size_whole(pipeline, tmp_path):
    """NCCL before 2.19 prints no commId (NVIDIA/nccl#629's "comm 0x7fdf08000d00 rank 15 nranks 16 … - Init
    COMPLETE"): two two-host jobs of size 2 one after the other, the host they share rank 1 of the first (GPU 0) and
    rank 0 of the second (GPU 1, so no restart of a GPU cuts the capture in runs). Counted over the whole log that
    host "held" size 2 whole, its own communicator, so its lines were left out; the first job's rank 0 and the
    second's rank 1 made one communicator, the two jobs one, and each job's own plugin a mismatch (a break-it pass).
    Each process prints its plugin line as it starts, before its init lines (init.cc: ``ncclInit`` loads the plugin
    once a process): a process whose plugin line comes after a rank's "Init COMPLETE" was in no communicator with
    it (``rules._own_comms``). The jobs agree with themselves: no incident; the second's hosts disagreeing is its
    mismatch, of its two hosts; a host's own communicator (each process's plugin line first) still ties nothing."""
    internal = ("{h}:{p}:{p} [{g}] NCCL INFO NET/Plugin: Could not find: libnccl-net.so. Using internal network "
                "plugin.")
    external = "{h}:{p}:{p} [{g}] NCCL INFO Plugin Path : /opt/hpcx/nccl_rdma_sharp_plugin/lib/libnccl-net.so"
    old = ("{h}:{p}:{p} [{g}] NCCL INFO comm 0x7fdf08000d{g}0 rank {r} nranks {n} cudaDev {g} busId {g}b000 - Init "
           "COMPLETE")

    def job(hosts, plugins, pid, g):
        return [plugin.format(h=h, p=pid + i, g=g) for i, (h, plugin) in enumerate(zip(hosts, plugins))] + [
            old.format(h=h, p=pid + r, g=g, r=r, n=len(hosts)) for r, h in enumerate(hosts)]

    def incidents(name, lines):
        return _job_files(pipeline, tmp_path, {name: "\n".join(lines) + "\n"})

    first = job(["gpu-a-01", "gpu-a-02"], [internal, internal], 5000, 0)
    events, incs = incidents("turns.log", first + job(["gpu-a-02", "gpu-a-03"], [external, external], 7000, 1))
    assert incs == [] and len(events) == 8
    _, incs = incidents("mixed.log", first + job(["gpu-a-02", "gpu-a-03"], [external, internal], 7000, 1))
    assert [(i["pattern"], i["initiator"]["candidates"]) for i in incs] == [
        ("config.job_mismatch", ["gpu-a-02", "gpu-a-03"])]
    # ... a host's own communicator of two processes, each printing its plugin line first, and the two jobs after
    # it: that host's lines tie no one, the jobs stay two
    own = [internal.format(h="gpu-c-01", p=3000 + g, g=g) for g in (0, 1)] + [
        old.format(h="gpu-c-01", p=3000 + g, g=g, r=g, n=2) for g in (0, 1)]
    events, incs = incidents("own.log", own + first + job(["gpu-a-03", "gpu-a-04"], [external, external], 7000, 0))
    assert incs == [] and len(events) == 12


def test_communicators_without_a_commid_are_read_by_size_and_rank(pipeline, tmp_path):
    """``rules._sized_comms`` of a small NCCL < 2.19 capture (NVIDIA/nccl#629's init line, no commId), the hosts of
    each communicator it reads, in the log's order: a size-2 communicator of two hosts; a host's own two GPUs (their
    processes' plugin lines first: ``rules._own_comms``) in none, though they interleave with a two-host one of their
    size; a rank printing again ends one (two jobs in turn); a size-4 communicator across its four ranks' lines; a
    host that was rank 1 of one two-host job and rank 0 of the next (its second process started after the first job
    was complete) in both."""
    from correlate.model import events_from_table
    from correlate.rules import _own_comms, _place, _sized_comms
    from ingest.decode import decode_file

    plugin = "{h}:{p}:{p} [{g}] NCCL INFO NET/Plugin: Could not find: libnccl-net.so. Using internal network plugin."
    old = ("{h}:{p}:{p} [{g}] NCCL INFO comm 0x7fdf08000d{g}0 rank {r} nranks {n} cudaDev {g} busId {g}b000 - Init "
           "COMPLETE")
    # (host, pid, GPU, rank, nranks) of each init line, a plugin line of its process before its first
    lines = [("n1", 10, 0, 0, 2), ("own", 20, 0, 0, 2), ("n2", 11, 0, 1, 2), ("own", 21, 1, 1, 2),
             ("n3", 30, 0, 0, 4), ("n4", 31, 0, 1, 4), ("n3", 32, 1, 2, 4), ("n4", 33, 1, 3, 4),
             ("n5", 40, 0, 0, 2), ("n6", 41, 0, 1, 2), ("n6", 42, 1, 0, 2), ("n7", 43, 0, 1, 2)]
    text, seen = [], set()
    for h, p, g, r, n in lines:
        if (h, p) not in seen and h != "own":
            text.append(plugin.format(h=h, p=p, g=g))
        seen.add((h, p))
        text.append(old.format(h=h, p=p, g=g, r=r, n=n))
    text = [plugin.format(h="own", p=p, g=p - 20) for p in (20, 21)] + text
    f = tmp_path / "job.log"
    f.write_text("\n".join(text) + "\n")
    b = pipeline.run(Decoded(segments=decode_file(f, relname="job.log").segments))
    evs = events_from_table(b.events)
    members = [e for e in evs if e.kind == "nccl_init" and e.rank is not None]
    configs = [e for e in evs if e.signature.startswith("nccl.net_plugin.")]
    assert len(members) == 12 and len(configs) == 12
    comms = _sized_comms(members, configs)
    assert [[(e.host, e.rank) for e in c] for c in comms] == [
        [("n1", 0), ("n2", 1)], [("n3", 0), ("n4", 1), ("n3", 2), ("n4", 3)], [("n5", 0), ("n6", 1)],
        [("n6", 0), ("n7", 1)]]
    assert sorted((e.host, e.rank) for e in members if id(e) in _own_comms(
        sorted(members, key=_place), configs)) == [("own", 0), ("own", 1)]
    # without the plugin lines no process is known to start late: n6 holds size 2 whole, as a host's own would, and
    # its lines tie no one
    assert [[(e.host, e.rank) for e in c] for c in _sized_comms(members)] == [
        [("n1", 0), ("n2", 1)], [("n3", 0), ("n4", 1), ("n3", 2), ("n4", 3)], [("n5", 0), ("n7", 1)]]


@pytest.mark.parametrize("fallback", [
    # NCCL 2.9 - 2.18 (NVIDIA/nccl#1126), 2.19.3 with dlerror's text (NVIDIA/nccl#1231), 2.4 (NVIDIA/nccl#259), 2.26
    # (its "Using internal net plugin."), 2.27+'s silent "Could not find" (NVIDIA/nccl#1925: NCCL's IB plugin next)
    "{h}:702444:702444 [0] NCCL INFO NET/Plugin : No plugin found (libnccl-net.so), using internal implementation",
    "{h}:162637:162637 [0] NCCL INFO NET/Plugin : dlerror=libnccl-net.so: cannot open shared object file: No such file "
    "or directory No plugin found (libnccl-net.so), using internal implementation",
    "{h}:12877:12877 [0] NCCL INFO NET/Plugin : No plugin found (libnccl-net.so).",
    "{h}:10208:10226 [0] NCCL INFO NET/Plugin: Could not find: libnccl-net.so. Using internal net plugin.",
    "{h}:3769901:3769901 [0] NCCL INFO NET/Plugin: Could not find: libnccl-net.so",
])
def test_every_releases_fallback_to_nccls_own_network_is_the_internal_plugin(pipeline, tmp_path, fallback):
    """A host whose NCCL found no libnccl-net.so says so in its release's words, and then uses NCCL's own network;
    only two of those wordings were read, so a host that said it otherwise was compared with no one and
    NVIDIA/nccl#1634's mismatch (HPC-X's plugin on the other host) was missed. Each is
    ``nccl.net_plugin.internal``; two hosts that both fell back agree."""
    external = "{h}:589474:589541 [0] NCCL INFO Plugin Path : /opt/hpcx/nccl_rdma_sharp_plugin/lib/libnccl-net.so"
    events, incs = _job_files(pipeline, tmp_path, {"job.log": fallback.format(h="gpu-b-11") + "\n"
                                                   + external.format(h="gpu-a-04") + "\n"})
    assert [e["signature"] for e in events] == ["nccl.net_plugin.internal", "nccl.net_plugin.external"]
    assert [(i["pattern"], i["initiator"]["candidates"]) for i in incs] == [
        ("config.job_mismatch", ["gpu-a-04", "gpu-b-11"])]
    events, incs = _job_files(pipeline, tmp_path, {"same.log": fallback.format(h="gpu-b-11") + "\n"
                                                   + fallback.format(h="gpu-a-04") + "\n"})
    assert incs == [] and len(events) == 2


def test_hosts_of_one_job_log_on_two_nccl_releases_are_one_configuration_incident(pipeline, tmp_path):
    """NVIDIA/nccl#1267: a job's hosts on two NCCL releases (2.20.5 on one, 2.19.3 on the others) failed in NCCL's
    bootstrap, and ran once every host loaded one release ("your hunch that the issue was due to mismatched versions
    was correct"); NVIDIA/nccl#354's maintainer asked of a hang "could it be possible that you have different NCCL
    versions on different nodes?". The version line (``nccl.version``, NVIDIA/nccl#1936's INFO form) is a setting of
    ``rules.JOB_CONFIG`` as the network plugin is: two hosts of one job's log that print different releases are one
    incident (``config.job_mismatch``); the same release with another CUDA build, or one host, is none."""
    version = "{h}:205631:205631 [0] NCCL INFO NCCL version {v}+cuda{c}"

    def incidents(name, lines):
        return _job_files(pipeline, tmp_path, {name: "\n".join(lines) + "\n"})

    _, incs = incidents("job.log", [version.format(h="gpu-a-01", v="2.20.5", c="12.4"),
                                    version.format(h="gpu-a-02", v="2.19.3", c="12.3"),
                                    version.format(h="gpu-a-03", v="2.19.3", c="12.3")])
    (inc,) = incs
    assert (inc["pattern"], inc["category"], inc["severity"]) == ("config.job_mismatch", "nccl_software", "warning")
    assert inc["initiator"]["candidates"] == ["gpu-a-01"]
    assert "different NCCL versions (gpu-a-01: 2.20.5; gpu-a-02: 2.19.3; gpu-a-03: 2.19.3)" in inc["explanation"]
    assert "one NCCL release" in inc["next_action"]
    for name, lines in {"cuda.log": [version.format(h="gpu-a-01", v="2.19.3", c="12.3"),
                                     version.format(h="gpu-a-02", v="2.19.3", c="12.2")],
                        "alone.log": [version.format(h="gpu-a-01", v="2.19.3", c="12.3")]}.items():
        events, incs = incidents(name, lines)
        assert incs == [] and len(events) == len(lines), name


def test_a_health_check_and_the_job_after_it_on_one_host_are_two_jobs(pipeline, tmp_path):
    """A capture holding a single-node nccl-tests run on gpu-b (the system's NCCL 2.18.3) and then the training job
    over gpu-a and gpu-b (the wheel's NCCL 2.21.5): gpu-b is in both, so its host tied the two jobs' communicators and
    the test's banner on gpu-b was compared with the training's on gpu-a, a "mismatch" no rank of either job had
    (a break-it pass). The processes that printed the lines (host and pid, NCCL's prefix) are what a communicator
    holds: two banners whose processes share no communicator are two jobs' however their hosts meet. The same
    capture whose training ranks do disagree stays one incident."""
    init = ("{h}:{p}:{t} [{g}] NCCL INFO comm 0x55{r}a10 rank {r} nranks 2 cudaDev {g} nvmlDev {g} busId 1b000 "
            "commId {c} - Init COMPLETE")
    banner = "{h}:{p}:{p} [{g}] NCCL INFO NCCL version {v}+cuda12.4"
    check = ["#  Rank  0 Group  0 Pid  41000 on      gpu-b device  0 [0x1b] NVIDIA H100 80GB HBM3",
             "#  Rank  1 Group  0 Pid  41000 on      gpu-b device  1 [0x43] NVIDIA H100 80GB HBM3",
             banner.format(h="gpu-b", p=41000, g=0, v="2.18.3"),
             init.format(h="gpu-b", p=41000, t=41010, g=0, r=0, c="0x1111aaaa2222bbbb"),
             init.format(h="gpu-b", p=41000, t=41011, g=1, r=1, c="0x1111aaaa2222bbbb")]

    def training(v_b):
        return [banner.format(h="gpu-a", p=5000, g=0, v="2.21.5"),
                init.format(h="gpu-a", p=5000, t=5100, g=0, r=0, c="0x3333cccc4444dddd"),
                init.format(h="gpu-b", p=6000, t=6100, g=1, r=1, c="0x3333cccc4444dddd"),
                banner.format(h="gpu-b", p=6000, g=1, v=v_b)]

    events, incs = _job_files(pipeline, tmp_path, {"job.out": "\n".join(check + training("2.21.5")[:3]) + "\n"})
    assert incs == [] and len(events) == 8
    _, incs = _job_files(pipeline, tmp_path, {"odd.out": "\n".join(check + training("2.20.3")) + "\n"})
    assert [(i["pattern"], i["initiator"]["candidates"]) for i in incs] == [("config.job_mismatch",
                                                                             ["gpu-a", "gpu-b"])]
    assert "gpu-a: 2.21.5; gpu-b: 2.20.3" in incs[0]["explanation"]


def test_a_host_whose_own_processes_print_two_releases_is_no_job_mismatch(pipeline, tmp_path):
    """NCCL_DEBUG=VERSION prints the banner alone (no communicator line to tell processes apart): gpu-a's rank 0 on
    the wheel's NCCL 2.21.5, a tool on gpu-a's GPU 3 on the system's 2.18.3, gpu-b's rank on 2.21.5. gpu-a's two
    releases are two programs' on one host, and gpu-b agrees with one of them: "gpu-a: 2.18.3, 2.21.5; gpu-b: 2.21.5"
    was a job mismatch (a break-it pass). Hosts disagree when two of them share no value; a third host on a release no
    other printed is still the incident."""
    banner = "{h}:{p}:{p} [{g}] NCCL INFO NCCL version {v}+cuda12.4"
    lines = [banner.format(h="gpu-a", p=5000, g=0, v="2.21.5"), banner.format(h="gpu-a", p=7300, g=3, v="2.18.3"),
             banner.format(h="gpu-b", p=6000, g=0, v="2.21.5")]
    events, incs = _job_files(pipeline, tmp_path, {"job.out": "\n".join(lines) + "\n"})
    assert incs == [] and len(events) == 3
    lines.append(banner.format(h="gpu-c", p=6100, g=0, v="2.20.5"))
    _, incs = _job_files(pipeline, tmp_path, {"three.out": "\n".join(lines) + "\n"})
    assert [(i["pattern"], i["initiator"]["candidates"]) for i in incs] == [("config.job_mismatch",
                                                                             ["gpu-a", "gpu-b", "gpu-c"])]
    assert "gpu-a: 2.18.3, 2.21.5; gpu-b: 2.21.5; gpu-c: 2.20.5" in incs[0]["explanation"]


def test_a_connection_closed_by_its_own_failed_proxy_is_no_remote_peers_fault(pipeline):
    """NCCL's proxy thread of a process fails its Connect (retcode 2, a system error) and closes its socket; the
    process's main thread then says "Connection closed by remote peer 10.104.148.191": its own proxy (NVIDIA/nccl#914).
    It read "no single culprit, suspect the peer at 10.104.148.191" (a real-logs pass): the proxy's failure explains
    the closed connection (``nccl_proxy.explains_own_connection_closed``). A proxy's retcode 6 (a remote error) is
    the peer's, no event of this host's own."""
    text = "\n".join([
        "host:22337:22453 [6] NCCL INFO transport/net_ib.cc:605 -> 2",
        "host:22337:22453 [6] proxy.cc:1097 NCCL WARN [Proxy Service 14] Failed to execute operation Connect from rank "
        "14, retcode {rc}",
        "host:22337:22400 [6] misc/socket.cc:521 NCCL WARN Net : Connection closed by remote peer "
        "10.104.148.191<37877>",
        "host:22337:22400 [6] proxy.cc:862 NCCL WARN Proxy Call to rank 14 failed (Connect)"])
    (inc,) = run(pipeline, text.format(rc=2), host="host")
    assert (inc["initiator"]["kind"], inc["initiator"]["rank"], inc["category"]) == ("nccl_error", 14, "nccl_software")
    assert "nccl_proxy.explains_own_connection_closed" in [x["rule"] for x in inc["evidence"]]
    assert "10.104.148.191" not in inc["next_action"]
    remote = run(pipeline, text.format(rc=6), host="host")
    assert all(i["initiator"].get("kind") != "nccl_error" or "proxy" not in i["next_action"] for i in remote)


@pytest.mark.parametrize(("text", "rule", "category", "words"), [
    # the driver release does not support the GPU (NVIDIA/nvtrust#67): the probe failure after it is its downstream
    ("[  349.902869] NVRM: The NVIDIA GPU 0000:01:00.0 (PCI ID: 10de:2330)\n"
     "[  349.902869] NVRM: installed in this system is not supported by the\n"
     "[  349.902869] NVRM: NVIDIA 550.90.07 driver release.\n"
     "[  349.909739] NVRM: The NVIDIA probe routine failed for 1 device(s).\n",
     "driver_install.explains_init_failure", "driver", "driver branch that lists it"),
    # the firmware gave the GPU no memory window (Dunedan/mbp-2016-linux#60)
    ("[ 9.100000] NVRM: This PCI I/O region assigned to your NVIDIA device is invalid:\n"
     "             NVRM: BAR1 is 0M @ 0x0 (PCI:0000:0a:00.0)\n"
     "[ 9.100000] NVRM: The system BIOS may have misconfigured your GPU.\n"
     "[ 9.100100] NVRM: The NVIDIA probe routine failed for 1 device(s).\n",
     "pci_window.explains_init_failure", "pcie", "Above 4G Decoding"),
    # the open module of R515 - R525 refuses a GPU that is no data-center GPU (NVIDIA/open-gpu-kernel-modules#230):
    # its RmInitAdapter failure is that, not a GPU to RMA
    ("[    3.513141] NVRM: Open nvidia.ko is only ready for use on Data Center GPUs.\n"
     "[    3.513144] NVRM: To force use of Open nvidia.ko on other GPUs, see the\n"
     "[    3.824916] NVRM: GPU 0000:04:00.0: RmInitAdapter failed! (0x63:0x0:1905)\n"
     "[    3.827920] NVRM: GPU 0000:04:00.0: rm_init_adapter failed, device minor number 0\n",
     "driver_install.explains_init_failure", "driver", "NVreg_OpenRmEnableUnsupportedGpus=1"),
    # a VM's kernel could not place a hot-plugged GPU's BAR1 (kata-containers/kata-containers#835): the driver's
    # probe failure a minute later follows it, and the action names the VM's case
    ("[    9.976683] pci 0000:02:00.0: BAR 1: failed to assign [mem size 0x800000000 64bit pref]\n"
     "[   72.162223] NVRM: The NVIDIA probe routine failed for 1 device(s).\n",
     "pci_bar_unassigned.explains_init_failure", "pcie", "root port"),
    # RmInitAdapter's stage 0x22, the PCI memory windows (NVIDIA/open-gpu-kernel-modules#862): the BIOS, not an RMA
    ("[ 5.000000] NVRM: GPU 0000:01:00.0: rm_init_adapter failed, device minor number 0\n"
     "[ 5.000000] NVRM: GPU 0000:01:00.0: RmInitAdapter failed! (0x22:0x56:884)\n",
     None, "gpu_failure", "Resizable BAR"),
])
def test_a_gpu_the_host_cannot_start_for_its_configuration_says_so(pipeline, text, rule, category, words):
    """A GPU that never started because of the driver release or the BIOS (a real-logs pass): only the probe failure
    was read, as a GPU off the bus, or an RMA was the advice."""
    (inc,) = run(pipeline, text, host="node05")
    assert (inc["category"], words in inc["next_action"]) == (category, True), inc["next_action"]
    assert {x["rule"] for x in inc["evidence"]} == ({rule} if rule else set()), inc["evidence"]
    assert "RMA" not in inc["next_action"]


@pytest.mark.parametrize(("text", "rule", "says", "words"), [
    # Secure Boot refused the module, then nvidia-smi found no driver (canonical/nvidia-graphics-drivers#62)
    ("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA "
     "driver is installed and running.\n"
     "modprobe: ERROR: could not insert 'nvidia': Key was rejected by service\n",
     "module_refused.explains_driver_not_loaded", "driver.module_key_rejected", "mokutil --test-key"),
    # nouveau held the GPUs, then the container runtime found no driver (mattshma/bigdata#133's lines)
    ("[188549.976351] NVRM: The NVIDIA probe routine was not called for 3 device(s).\n"
     "[188560.000000] nvidia-container-cli: initialization error: nvml error: driver not loaded: unknown.\n",
     "module_refused.explains_driver_not_loaded", "driver.nouveau_conflict", "Blacklist nouveau"),
    # DKMS could not build the module for the new kernel (Frogging-Family/nvidia-all#34); after the reboot into it
    # modprobe finds none (NVIDIA/nvidia-docker#365's line)
    ("2026-11-30T03:00:00Z Error! Bad return status for module build on kernel: 5.12.0-rc5-144-tkg-cfs (x86_64)\n"
     "2026-11-30T09:00:00Z modprobe: FATAL: Module nvidia not found.\n",
     "dkms_failure.explains_driver_not_loaded", "driver.dkms_build_failed", "dkms autoinstall -k 5.12.0-rc5-144"),
])
def test_a_driver_that_is_not_loaded_is_explained_by_why(pipeline, text, rule, says, words):
    """A host whose NVIDIA driver does not load gave no event at all (a real-logs pass): the tools' "no driver" lines
    (nvidia-smi, the container runtime, modprobe) follow the reason the module is not there — Secure Boot refused it,
    nouveau holds the GPUs, DKMS did not build it for the kernel now running — one incident named by the reason."""
    (inc,) = run(pipeline, text, host="node05")
    assert inc["category"] == "driver"
    assert rule in {x["rule"] for x in inc["evidence"]}, inc["evidence"]
    assert words in inc["next_action"], inc["next_action"]
    assert "RMA" not in inc["next_action"]


def test_a_failed_cdi_generation_names_the_containers_that_found_no_spec(pipeline):
    """nvidia-ctk could not generate the node's CDI spec at boot (NVIDIA/nvidia-container-toolkit#1611: the refresh
    service ran before the driver was ready), and a GPU container then found no spec ("unresolvable CDI devices",
    #1537's runtime line): the generation's failure, with its reason, names the incident — not the container's line,
    whose action only says to generate a spec. Neither line had an event before (a real-logs pass)."""
    text = ('2026-01-25T00:45:43Z level=error msg="failed to generate CDI spec: failed to create device CDI specs: '
            'failed to construct device spec generators: failed to initialize NVML: Driver Not Loaded"\n'
            "2026-01-25T00:50:02Z docker: Error response from daemon: failed to create task for container: failed to "
            "create shim task: OCI runtime create failed: could not apply required modification to OCI specification: "
            "error modifying OCI spec: failed to inject CDI devices: unresolvable CDI devices nvidia.com/gpu=all: "
            "unknown\n")
    (inc,) = run(pipeline, text, host="node05")
    assert {x["rule"] for x in inc["evidence"]} == {"cdi_generate.explains_unresolvable_devices"}, inc["evidence"]
    assert inc["initiator"]["fault"] == "nvidia_ctk.cdi_generate_failed", inc["initiator"]
    assert "Driver Not Loaded" in inc["next_action"] and "nvidia-cdi-refresh" in inc["next_action"]
    assert inc["category"] == "other"


@pytest.mark.parametrize(("text", "category", "down"), [
    # CUDA in a container saw no GPU while the host's were fine (NVIDIA/gpu-operator#1900): the container's access,
    # no GPU fault
    ("cuda-validation Failed to allocate device vector A (error code no CUDA-capable device is detected)!\n",
     "other", 0),
    # the same after the host's GPU fell off the bus: a report of the fall
    ("2024-05-01T10:00:00Z kernel: NVRM: Xid (PCI:0000:18:00): 79, pid=0, GPU has fallen off the bus.\n"
     "2024-05-01T10:00:30Z RuntimeError: CUDA error: no CUDA-capable device is detected\n", "gpu_off_bus", 1),
])
def test_cuda_seeing_no_gpu_is_the_containers_access_unless_a_gpu_fell(pipeline, text, category, down):
    """"no CUDA-capable device is detected" (CUDA error 100) gave no event (a real-logs pass). Alone it is the
    process's or container's view of the GPUs, whose action starts from the host's nvidia-smi; after an Xid 79 of its
    host it is downstream of the fall."""
    (inc,) = run(pipeline, text, host="node05")
    assert (inc["category"], len(inc["downstream"])) == (category, down), (inc["category"], inc["downstream"])
    if category == "other":
        assert inc["next_action"].startswith("CUDA found no GPU") and "nvidia-smi" in inc["next_action"]
        assert "fallen off the bus" not in inc["next_action"] and "RMA" not in inc["next_action"]


@pytest.mark.parametrize("line", [
    "SKIPPED [3] tests/test_gpu.py:12: Skipping GPU tests: no CUDA-capable device is detected",
    "test_allreduce (tests.test_cuda.CudaTest) ... skipped 'cudaErrorNoDevice: no CUDA-capable device is detected'"])
def test_a_test_that_skips_itself_for_no_gpu_is_no_incident(pipeline, line):
    """A test that skips itself because CUDA sees no GPU (pytest's skip summary, unittest's skip line) decided to run
    without one: cuda.no_device read it as an error incident of the host's GPUs (a break-it pass). The event stays,
    as information."""
    seg = Segment(data=(line + "\n").encode(), origin="t:node05", stream="node05", host="node05", ref_ts=T0,
                  ref_basis="kafka", ingest_ts=T0)
    b = pipeline.run(Decoded(segments=[seg]))
    assert [(e["signature"], e["severity"]) for e in b.events.to_pylist()] == [("cuda.no_device", "info")]
    assert correlate(b.events, b.link_samples, b.topology, now_us=T0) == []


@pytest.mark.parametrize("text", [
    # TensorFlow's probe, printed by every TensorFlow process that sees no GPU, also one kept off the GPUs on purpose
    # (CUDA_VISIBLE_DEVICES=""): it goes on on the CPU (tensorflow/tensorflow#62494, #255)
    "2023-11-28 16:42:02.738968: E tensorflow/stream_executor/cuda/cuda_driver.cc:328] failed call to cuInit: "
    "CUDA_ERROR_NO_DEVICE: no CUDA-capable device is detected\n",
    "E tensorflow/stream_executor/cuda/cuda_driver.cc:466] failed call to cuInit: CUDA_ERROR_NO_DEVICE\n",
    # a test suite that skips its GPU tests on a host or in a container without them
    "Skipping GPU tests: no CUDA-capable device is detected\n",
    "skip: no CUDA-capable device is detected\n",
    # source text quoting the name (a grep, a compiler's context line)
    '        case cudaErrorNoDevice: return "cudaErrorNoDevice";\n',
])
def test_cuda_seeing_no_gpu_on_purpose_raises_no_incident(pipeline, text):
    """A bare ``cudaErrorNoDevice`` in source text, a test's skip and TensorFlow's cuInit probe from a process kept off
    the GPUs were each an error incident "CUDA found no GPU" (a leftovers pass): none says a program failed."""
    assert [i["severity"] for i in run(pipeline, text, host="node05")] == []


def test_a_version_mismatch_in_the_gpu_operators_pods_says_to_recreate_them(pipeline):
    """The GPU operator's validator crash-looped on the container runtime's "driver/library version mismatch" after
    the operator's driver container upgraded the driver, until its pods were deleted and recreated
    (NVIDIA/gpu-operator#898, a real-logs pass): the action said only to reboot or reinstall the driver."""
    (inc,) = run(pipeline, "failed to create containerd task: failed to create shim task: OCI runtime create failed: "
                           "runc create failed: unable to start container process: error during container init: error "
                           "running prestart hook #0: exit status 1, stdout: , stderr: Auto-detected mode as 'legacy'\n"
                           "nvidia-container-cli: initialization error: nvml error: driver/library version mismatch: "
                           "unknown\n", host="node05")
    assert inc["category"] == "driver" and "deleted and recreated" in inc["next_action"], inc["next_action"]


def test_secure_boot_lockdown_alone_is_no_incident(pipeline):
    """The kernel's lockdown line is printed at every boot of a Secure Boot host, also one whose module is signed by
    an enrolled key: context, no fault (Start9Labs/start-technologies#3702 had it beside nvidia-smi's failure)."""
    assert run(pipeline, "[    0.000000] Kernel is locked down from EFI Secure Boot mode; see man kernel_lockdown.7\n",
               host="node05") == []


@pytest.mark.parametrize(("text", "words"), [
    # NCCL's own internal error after a topology WARN (NVIDIA-NeMo/Run#266: NCCL 2.27 fixed it)
    ("graph/topo.h:230 NCCL WARN Could not find NET with id 0\n"
     "torch.distributed.DistBackendError: NCCL error in: /opt/pytorch/pytorch/torch/csrc/distributed/c10d/"
     "ProcessGroupNCCL.cpp:3376, internal error - please report this issue to the NCCL developers, NCCL version 2.25.1",
     "NCCL reached a state it did not expect (an internal error, NCCL 2.25.1)"),
    # 'invalid argument' from NCCL's enqueue on every rank (NVIDIA/TensorRT-LLM#4238: NCCL 2.26.2 fixed it)
    ("node0:1:2 [0] enqueue.cc:1500 NCCL WARN Cuda failure 1 'invalid argument'\n"
     "node0:1:3 [1] enqueue.cc:1500 NCCL WARN Cuda failure 1 'invalid argument'",
     "On every rank at once it is the NCCL release"),
])
def test_an_error_of_nccls_own_says_the_nccl_release(pipeline, text, words):
    """NCCL's own failures (a real-logs pass): its advice was a GPU, NVLink or network fault of another rank."""
    (inc,) = run(pipeline, text, host="node0")
    assert words in inc["next_action"], inc["next_action"]


def test_one_collective_timed_out_on_a_thousand_hosts_is_one_incident_said_in_ranges(pipeline):
    """A job's watchdog timeouts on 1,024 hosts, one rank each, with no init lines: one incident. Joining them compared
    every pair of hosts (4,096 hosts: 39 s, /healthz starved), and the explanation listed every rank (23 KB; 448 KB for
    65,536 ranks, the page's whole description): a break-it pass. The ranks are said as ranges."""
    line = ("[rank{r}]:[E626 06:24:44.{us:06d}000 ProcessGroupNCCL.cpp:616] [Rank {r}] Watchdog caught collective "
            "operation timeout: WorkNCCL(SeqNum=808, OpType=ALLREDUCE, NumelIn=9801523, NumelOut=9801523, "
            "Timeout(ms)=600000) ran for 600000 milliseconds before timing out.")
    incs = _hosts(pipeline, {f"node{r:05d}": line.format(r=r, us=r * 100) for r in range(1024)})
    assert len(incs) == 1 and len(incs[0]["downstream"]) == 1024, [len(i["downstream"]) for i in incs]
    assert incs[0]["explanation"].startswith("1024 ranks (0–1023) timed out on the same collective (SeqNum 808)")


def test_ranks_are_said_one_by_one_up_to_eight_then_in_ranges():
    from correlate.patterns import ranks_said

    assert ranks_said([0, 1, 2, 3, 4], {}) == "0, 1, 2, 3, 4"
    named = {13: "13 (global rank 29)"}
    assert ranks_said(list(range(10)) + [12, 13, 20], named) == "0–9, 12, 13 (global rank 29), 20"
    assert ranks_said(list(range(0, 40, 2)), {}) == "0, 2, 4, 6, 8, 10, 12, 14 and 12 more"


def test_a_health_checks_line_that_quotes_an_xid_is_that_xid(pipeline):
    """azurehpc-health-checks' check_gpu_xid quotes the kernel's Xid line (NHC2001): the catch-all NHC signature made it
    a warning of no GPU (a break-it pass). The Xid wins the line."""
    line = ("ERROR:  nhc:  Health check failed:  check_gpu_xid: GPU Xid errors detected: Nov 30 10:00:00 node82 "
            "kernel: [  123.456789] NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus.. "
            "FaultCode: NHC2001")
    (inc,) = run(pipeline, line, host="node82")
    assert (inc["initiator"]["xid"], inc["initiator"]["device"], inc["severity"]) == (79, "0000:3b:00.0", "critical")


def test_a_health_checks_report_of_an_xid_is_downstream_of_the_kernels_xid(pipeline):
    """NHC's "Found XID errors: 63" and "Check check_xid_errors returned 1" (mej/nhc#147), and the EKS node monitoring
    agent's DCGMHealthCode101 (aws/eks-node-monitoring-agent#39), minutes after the kernel's Xid: they name no GPU
    and report that Xid again. Four minutes after it they were an incident of their own, the check's "Check" read as
    its name (a real-logs pass); they are downstream of the kernel's line
    (``gpu_fault.explains_health_check_report``). A check of the node's setup that fails then is no such report."""
    xid = ("[2026-11-30 10:00:02] node63 kernel: NVRM: Xid (PCI:0000:3b:00): 63, pid=1234, name=python, Row Remapper: "
           "New row (0x0000000000123456) was marked for remapping, reset gpu to activate.")
    nhc = ("2026-11-30T10:04:00+00:00 node63 nhc[4242]: Found XID errors: 63\n"
           "2026-11-30T10:04:00+00:00 node63 nhc[4242]: ERROR:  nhc:  Health check failed:  Check check_xid_errors "
           "returned 1")
    eks = "2026-11-30T10:09:00+00:00 node63 node condition {Type:AcceleratedHardwareReady Status:False ... Reason:DCGMHealthCode101"
    (inc,) = run(pipeline, "\n".join([xid, nhc, eks]), host="node63")
    assert (inc["initiator"]["xid"], inc["initiator"]["device"]) == (63, "0000:3b:00.0")
    assert len(inc["initiator"]["events"]) + sum(len(d["events"]) for d in inc["downstream"]) == 4
    assert {d["relation"] for d in inc["downstream"]} == {"same_host"}
    assert "gpu_fault.explains_health_check_report" in inc["explanation"]
    setup = ("2026-11-30T10:04:00+00:00 node63 nhc[4242]: ERROR:  nhc:  Health check failed:  "
             "check_all_reduce_dependencies: HPCX_DIR is not set. Ensure HPCX is installed and sourced correctly.")
    incs = run(pipeline, xid + "\n" + setup, host="node63")
    assert sorted(i["initiator"]["kind"] for i in incs) == ["other", "xid"]
    assert any("check_all_reduce_dependencies" in i["next_action"] for i in incs)


def test_a_gpu_count_check_after_a_gpu_fell_off_the_bus_is_downstream_of_the_fall(pipeline):
    """Node Health Check's "Check check_nv_gpu_count 8 returned 1" (NVIDIA/deepops#660) five minutes after the kernel's
    Xid 79 was an error incident of its own (a real-logs pass): the count is short because that GPU is lost
    (``gpu_loss.explains_gpu_count_check``). Alone it is still the node's error."""
    xid = "2026-11-30T10:00:02+00:00 gpu09 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, GPU has fallen off the bus."
    count = ("2026-11-30T10:05:00+00:00 gpu09 nhc[4242]: ERROR:  nhc:  Health check failed:  Check check_nv_gpu_count "
             "8 returned 1")
    (inc,) = run(pipeline, xid + "\n" + count, host="gpu09")
    assert (inc["initiator"]["xid"], inc["initiator"]["device"], inc["severity"]) == (79, "0000:3b:00.0", "critical")
    assert [d["relation"] for d in inc["downstream"]] == ["same_host"]
    assert "gpu_loss.explains_gpu_count_check" in inc["explanation"]
    (alone,) = run(pipeline, count, host="gpu09")
    assert (alone["category"], alone["severity"]) == ("gpu_failure", "error")


def test_a_node_health_check_that_did_not_finish_is_no_check_of_the_gpus(pipeline):
    """NHC's own timeout and slurmd's kill of the health check (mej/nhc#161: nodes drained in batches, the hang was the
    resource manager's command; mej/nhc#9, #134): nhc.check_failed named "Script" the check that failed, and the
    syslog form and slurmd's line gave no event (a real-logs pass). One warning, of the health check itself."""
    text = ("2025-06-11T19:12:23.050922+00:00 cpu001 nhc[1013622]: Health check failed:  Script timed out.\n"
            "2025-06-11T19:12:24.052725+00:00 cpu001 nhc[1013628]: Health check failed:  Terminated by signal SIGTERM.\n"
            "[2025-06-11T19:12:28.063] error: health_check killed by signal 9 output:")
    (inc,) = run(pipeline, text, host="cpu001")
    assert (inc["initiator"]["kind"], inc["severity"]) == ("other", "warning")
    assert inc["explanation"].startswith("nhc.script_failed on the host of cpu001")
    assert inc["next_action"].startswith("The node health check did not finish")


def test_c10ds_retry_to_reach_the_store_is_no_fault(pipeline):
    """c10d's "[c10d] The client socket has failed to connect to …" while it retries at start-up (pytorch/PiPPy#158):
    an error incident when the job trained on, and a GPU's Xid after it lost confidence (a break-it pass). It is an
    event, no fault; the timeout that ends the tries is one."""
    retry = ("[W1130 10:00:00.223456 1234 torch/csrc/distributed/c10d/socket.cpp:697] [c10d] The client socket has "
             "failed to connect to [localhost]:29500 (errno: 99 - Cannot assign requested address).")
    assert run(pipeline, retry, host="node61") == []
    xid = "[2026-11-30 10:00:05] node62 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, GPU has fallen off the bus."
    (inc,) = run(pipeline, retry + "\n" + xid, host="node62")
    assert (inc["initiator"]["xid"], inc["confidence"]) == (79, 0.8)
    (inc,) = run(pipeline, "torch.distributed.DistStoreError: Socket Timeout", host="node61")
    assert inc["category"] == "nccl_software" and "c10d store" in inc["next_action"]


def test_the_tasks_srun_killed_after_one_failed_are_downstream_of_it(tmp_path):
    """lattice/quda#693: task 0 aborted on nid03679, srun terminated the step and the other nodes' tasks ended
    "Killed": five incidents, one per node, each "the earliest fault", the Killed ones told of their memory limit. The
    launcher's output is one job's: the killed tasks are downstream of the task that failed first
    (``slurm.task_crash_explains_step_kill``). A Killed task alone is an incident of its own, its action naming the
    teardown, the time limit and the OOM killer."""
    from api.diagnose import diagnose_paths
    from schemas.settings import Settings

    (tmp_path / "job.out").write_text("\n".join([
        "srun: error: nid03679: task 0: Aborted", "srun: Terminating job step 7355455.0",
        "srun: Job step aborted: Waiting up to 32 seconds for job step to finish.",
        *[f"srun: error: {h}: task {t}: Killed" for h, t in (("nid05031", 42), ("nid06267", 61), ("nid04508", 18))],
    ]) + "\n")
    [inc] = diagnose_paths([tmp_path], Settings())[2]
    assert (inc["initiator"]["host"], inc["category"]) == ("nid03679", "application")
    assert sorted(d["host"] for d in inc["downstream"]) == ["nid04508", "nid05031", "nid06267"]
    (tmp_path / "job.out").write_text("srun: error: nid05031: task 42: Killed\n")
    [inc] = diagnose_paths([tmp_path], Settings())[2]
    assert inc["initiator"]["host"] == "nid05031" and not inc["downstream"]
    assert "terminated the step" in inc["next_action"] and "OOM killer" in inc["next_action"]


def test_a_bad_argument_to_nccl_is_the_programs_and_a_collective_on_a_failed_comm_repeats_its_init(pipeline):
    """NVIDIA/nccl#1558: PyTorch's "invalid argument" with NCCL's "Last error: Broadcast : sendbuff (nil) is not a
    valid pointer" (a NULL buffer, "application specific") was an incident telling to look for a GPU, NVLink or
    network fault on another rank. horovod/horovod#3625: Horovod's collectives on a communicator whose init had failed
    ("AllReduce : invalid root 0 (root should be in the 0..-1 range)", "comm 0x… has already been destroyed") were
    generic NCCL warnings; they repeat the init's failure (a real-logs pass)."""
    text = "\n".join([
        "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:2777, "
        "invalid argument (run with NCCL_DEBUG=WARN for details), NCCL version 2.21.5",
        "ncclInvalidArgument: Invalid value for an argument.", "Last error:",
        "Broadcast : sendbuff (nil) is not a valid pointer"])
    (inc,) = run(pipeline, text, host="node31")
    assert (inc["category"], inc["severity"]) == ("application", "error")
    assert "not a GPU, NVLink or network fault" in inc["next_action"] and "sendbuff (nil)" in inc["next_action"]
    text = "\n".join([
        "node32:6502:6588 [0] misc/argcheck.cc:39 NCCL WARN AllReduce : invalid root 0 (root should be in the 0..-1 "
        "range)",
        "node32:6502:6588 [0] NCCL INFO enqueue.cc:1452 -> 4",
        "node32:6502:6588 [0] init.cc:1137 NCCL WARN comm 0x7fd72034c4d0 has already been destroyed"])
    (inc,) = run(pipeline, text, host="node32")
    assert (inc["category"], inc["severity"]) == ("nccl_software", "warning")
    assert "init failed" in inc["next_action"]


def test_the_node_slurm_lost_is_the_initiator_not_the_node_that_printed_the_cancel(tmp_path):
    """huggingface/m4-logs tr_141: a DeepSpeed training on Jean Zay ended with srun's "Node failure on jean-zay-iam37"
    and slurmstepd's "*** STEP 1943824.0 ON jean-zay-iam17 CANCELLED AT … DUE TO NODE FAILURE ***" ("a node crashed
    … most likely a HW issue"): no event (a real-logs pass). The lost node is the initiator; the survivor's cancel,
    timed by the time it prints, is its report in the one job's output (``slurm.node_failure_explains_step_end``,
    ``rules.log_of``). The cancel alone is a downstream report, not a fault of the node that printed it."""
    from api.diagnose import diagnose_paths
    from schemas.settings import Settings

    cancel = ("slurmstepd: error: *** STEP 1943824.0 ON n17 CANCELLED AT 2023-03-06T03:17:51 DUE TO NODE FAILURE, SEE "
              "SLURMCTLD LOG FOR DETAILS ***")
    (tmp_path / "n17.out").write_text("\n".join([
        "** Finished validation **", "srun: error: Node failure on n37",
        "srun: Job step aborted: Waiting up to 62 seconds for job step to finish.", cancel]) + "\n")
    [inc] = diagnose_paths([tmp_path], Settings())[2]
    assert (inc["initiator"]["host"], inc["initiator"]["fault"], inc["severity"]) == ("n37", "slurm.node_failure",
                                                                                      "error")
    assert [d["host"] for d in inc["downstream"]] == ["n17"]
    assert {x["rule"] for x in inc["evidence"]} == {"slurm.node_failure_explains_step_end"}
    assert "lost node n37" in inc["next_action"]
    (tmp_path / "n17.out").write_text(cancel + "\n")
    [inc] = diagnose_paths([tmp_path], Settings())[2]
    assert inc["severity"] == "warning" and "not at fault" in inc["next_action"]


def test_the_node_or_process_an_mpi_launcher_names_explains_the_ranks_reports_in_its_output(tmp_path):
    """open-mpi/ompi#11830, horovod/horovod#410: mpirun's output holds every rank's lines, then the launcher's own
    word on what failed first: "Remote daemon: [[…],1] on node node02" under "ORTE has lost communication with a
    remote daemon", or "mpirun noticed that process rank 3 … on node node07 exited on signal 9". The ranks'
    "Horovod has been shut down" above it were a second incident with no single culprit (a real-logs pass): the
    node the launcher names is the initiator, the ranks' reports its downstream
    (``mpi.launcher_named_failure_explains_job_reports``, ``rules.log_of``). The launcher's own node (the HNP line)
    is no party, and Ctrl-C's SIGINT explains nothing."""
    from api.diagnose import diagnose_paths
    from schemas.settings import Settings

    shut = ("Horovod has been shut down. This was caused by an exception on one of the ranks or an attempt to "
            "allreduce, allgather or broadcast a tensor after one of the ranks finished execution.")
    ranks = [f"[1,1]<stderr>:{shut}", f"[1,0]<stderr>:{shut}"]
    (tmp_path / "launcher.out").write_text("\n".join([
        *ranks, "ORTE has lost communication with a remote daemon.", "",
        "  HNP daemon   : [[32679,0],0] on node node01", "  Remote daemon: [[32679,0],1] on node node02", "",
        "This is usually due to either a failure of the TCP network"]) + "\n")
    [inc] = diagnose_paths([tmp_path], Settings())[2]
    assert (inc["initiator"]["host"], inc["initiator"]["fault"]) == ("node02", "mpi.daemon_lost")
    assert {d["host"] for d in inc["downstream"]} == {"launcher"}
    assert {x["rule"] for x in inc["evidence"]} == {"mpi.launcher_named_failure_explains_job_reports"}
    assert "node01" not in orjson.dumps(inc).decode()
    (tmp_path / "launcher.out").write_text("\n".join([
        *ranks, "mpirun noticed that process rank 3 with PID 0 on node node07 exited on signal 9 (Killed)."]) + "\n")
    [inc] = diagnose_paths([tmp_path], Settings())[2]
    assert (inc["initiator"]["host"], inc["initiator"]["fault"]) == ("node07", "mpi.rank_killed")
    assert {x["rule"] for x in inc["evidence"]} == {"mpi.launcher_named_failure_explains_job_reports"}
    (tmp_path / "launcher.out").write_text("\n".join([
        *ranks, "mpirun noticed that process rank 3 with PID 0 on node node07 exited on signal 2 (Interrupt)."]) + "\n")
    incs = diagnose_paths([tmp_path], Settings())[2]
    assert not any(x["rule"] == "mpi.launcher_named_failure_explains_job_reports" for i in incs for x in i["evidence"])


def test_slurms_oom_kill_report_explains_sruns_report_of_the_task(tmp_path):
    """hafs-community/HAFS#101: slurmstepd's "Detected 1 oom-kill event(s) in step 3495064.0 cgroup", then srun's
    "task 4: Out Of Memory" of the node: two incidents, the first no event (a real-logs pass). One job's OOM kill in
    one output file (``slurm.step_oom_explains_task_report``): the memory its category, srun's line downstream."""
    from api.diagnose import diagnose_paths
    from schemas.settings import Settings

    (tmp_path / "job.err").write_text("\n".join([
        "slurmstepd: error: Detected 1 oom-kill event(s) in step 3495064.0 cgroup. Some of your processes may have "
        "been killed by the cgroup out-of-memory handler.",
        "srun: error: Orion-01-01: task 4: Out Of Memory", "srun: Terminating job step 3495064.0"]) + "\n")
    [inc] = diagnose_paths([tmp_path], Settings())[2]
    assert (inc["category"], inc["initiator"]["fault"]) == ("host_memory", "slurm.step_oom_kill")
    assert [d["host"] for d in inc["downstream"]] == ["orion-01-01"]
    assert "raise its request" in inc["next_action"]


def test_the_old_oom_killer_lines_explain_the_rank_they_killed(pipeline):
    """Kernels before 4.19 print "Out of memory: Kill process N (comm) score S or sacrifice child" and "Killed process
    N (comm) total-vm:…" (intel/platform-resource-manager#42; no event, a real-logs pass): read as the newer form, so
    torchrun's -9 is their report as it is of "Out of memory: Killed process"."""
    text = "\n".join([
        "2026-12-01T03:10:00+00:00 node21 kernel: Out of memory: Kill process 4182 (python) score 1031 or sacrifice "
        "child",
        "2026-12-01T03:10:00+00:00 node21 kernel: Killed process 4182 (python) total-vm:118026216kB, "
        "anon-rss:109819332kB, file-rss:3324kB, shmem-rss:0kB",
        "2026-12-01T03:10:01+00:00 node21 torchrun[77]: ERROR:torch.distributed.elastic.multiprocessing.api:failed "
        "(exitcode: -9) local_rank: 1 (pid: 4182) of binary: /opt/conda/bin/python"])
    (inc,) = run(pipeline, text, host="node21")
    assert (inc["category"], inc["initiator"]["fault"]) == ("host_memory", "host.oom_kill")
    assert {x["rule"] for x in inc["evidence"]} == {"host_oom.explains_job_failure"}


def test_every_gpu_of_a_host_held_down_alike_is_the_servers_fault_not_each_gpus(pipeline):
    """A Dell C4130's iDRAC asserts the power brake on its four V100s (l4rz/reverse-engineering-dell-idrac-to-get-rid-
    of-gpu-throttling): "no single culprit" among four GPUs, missing "earlier kernel lines". Every GPU of one host held
    down by the power brake is the host's BMC or power supplies; by thermal slowdown, its cooling. One GPU, or GPUs
    held down for different reasons, are not this."""
    def smi(reasons: dict[str, str]) -> str:
        out = ["Timestamp                                 : Mon Aug  5 12:57:09 2024"]
        for bus, reason in reasons.items():
            out += [f"GPU 00000000:{bus}:00.0", "    Clocks Event Reasons",
                    "        HW Slowdown                       : Active",
                    f"            {reason:<30}: Active"]
        return "\n".join(out) + "\n"

    brake = "HW Power Brake Slowdown"
    [inc] = run(pipeline, smi({b: brake for b in ("1A", "1C", "1D", "1E")}))
    assert (inc["pattern"], inc["category"], inc["initiator"]["host"], inc["initiator"]["device"]) == (
        "platform.every_gpu_held_down", "thermal_power", "node07", None)
    assert "BMC" in inc["next_action"] and "Do not RMA" in inc["next_action"]
    [inc] = run(pipeline, smi({b: "HW Thermal Slowdown" for b in ("1A", "1C")}))
    assert inc["pattern"] == "platform.every_gpu_held_down" and "cooling" in inc["next_action"]
    for reasons in ({"1A": brake}, {"1A": brake, "1C": "HW Thermal Slowdown"}):
        assert all(i["pattern"] != "platform.every_gpu_held_down" for i in run(pipeline, smi(reasons))), reasons


def test_the_power_brake_under_hw_slowdown_names_the_incident_and_its_action(pipeline):
    """nvidia-smi -q's "HW Slowdown : Active" above "HW Power Brake Slowdown : Active" on one GPU (a V100 a Dell iDRAC
    held at 382 MHz, l4rz/reverse-engineering-dell-idrac-to-get-rid-of-gpu-throttling): the incident's action was
    the parent row's generic text, and the brake's own action (its key not lower case) never applied (a real-logs
    pass). The reason under the parent row names it: the server's brake, the GPU not at fault; pasted without the
    table's indent it is the same; the parent row alone is still a fault."""
    text = ("GPU 00000000:1A:00.0\n    Clocks Throttle Reasons\n        HW Slowdown                       : Active\n"
            "            HW Thermal Slowdown           : Not Active\n"
            "            HW Power Brake Slowdown       : Active\n")
    (inc,) = run(pipeline, text)
    assert (inc["category"], inc["initiator"]["device"]) == ("thermal_power", "0000:1a:00.0"), inc
    assert inc["next_action"].startswith("The server asserts this GPU's power brake"), inc["next_action"]
    (inc,) = run(pipeline, "HW Power Brake Slowdown: Active\n")
    assert "the GPU is not at fault" in inc["next_action"], inc["next_action"]
    (inc,) = run(pipeline, text.replace("Brake Slowdown       : Active", "Brake Slowdown       : Not Active"))
    assert inc["next_action"].startswith("This GPU's clocks are held down (HW Slowdown)"), inc["next_action"]


def test_an_operators_report_beside_one_ranks_timeout_keeps_the_category_the_logs_give(pipeline):
    """One rank's watchdog timeout alone is a hang whose silent rank is unknown (comm.silent_rank, ``nccl_hang``); with
    the operator's "hang" or "failure" beside it the pattern steps aside for the candidates' verdict, which said
    ``other``: telling the tool more made it say less (a fresh user's trial). The category stays ``nccl_hang``."""
    from correlate.correlator import Symptom

    line = ("[rank8]:[E1129 03:20:02.120267 ProcessGroupNCCL.cpp:607] [Rank 8] Watchdog caught collective operation "
            "timeout: WorkNCCL(SeqNum=1234, OpType=ALLREDUCE, NumelIn=1048576, NumelOut=1048576, Timeout(ms)=600000) "
            "ran for 600045 milliseconds before timing out.")
    (plain,) = _with(pipeline, line, [], host="node08")
    assert (plain["pattern"], plain["category"]) == ("comm.silent_rank", "nccl_hang")
    for kind in ("hang", "failure"):
        (told,) = _with(pipeline, line, [Symptom(host="node08", kind=kind)], host="node08")
        assert told["category"] == "nccl_hang", (kind, told["pattern"], told["category"])


def test_gpus_mig_parted_could_not_reset_explain_its_failure_to_apply(pipeline):
    """nvidia-mig-parted's GPUs "In use by another client" are why it could not apply the MIG configuration
    (NVIDIA/mig-parted#181: nvidia_drm held them): one incident whose action is theirs, not five suspects and
    "collect the kernel log" (a real-logs pass: no event before)."""
    text = ("ERRO[0003]\n"
            "The following GPUs could not be reset:\n"
            "  GPU 00000000:01:00.0: In use by another client\n"
            "  GPU 00000000:47:00.0: In use by another client\n"
            "FATA[0008] Error applying MIG configuration with hooks: error resetting all GPUs: exit status 255\n")
    (inc,) = run(pipeline, text, host="node01")
    assert {x["rule"] for x in inc["evidence"]} == {"mig_reset.explains_apply_failure"}, inc["evidence"]
    assert "nvidia_drm" in inc["next_action"], inc["next_action"]
    assert "collect the kernel log" not in inc["next_action"].lower()


def test_a_communicator_size_no_job_has_is_not_listed_rank_by_rank(tmp_path):
    """NCCL init lines saying "nranks 2147483647" (garbled or hostile) made the silent-rank pattern build a set of two
    billion ranks: 23 GB, and the service's every step failed with MemoryError (a break-it pass). A size past
    NRANKS_MAX is not believed: the members the init lines place are the communicator, and the rank of them that did
    not time out is named."""
    from api.diagnose import diagnose_paths
    from correlate.patterns import NRANKS_MAX
    from schemas.settings import Settings

    init = ("node0{n}:1234:1290 [{r}] NCCL INFO comm 0x7f2d1c3e5a6b7c8d rank {r} nranks {size} cudaDev {r} nvmlDev {r} "
            "busId 1{r}000 commId 0x1234abcd5678ef90 - Init COMPLETE")
    out = ("[rank{r}]:[E1201 03:22:44.903881913 ProcessGroupNCCL.cpp:616] [Rank {r}] Watchdog caught collective "
           "operation timeout: WorkNCCL(SeqNum=808, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran "
           "for 600020 milliseconds before timing out.")
    for size in (2**31 - 1, NRANKS_MAX + 1):
        (tmp_path / "job.log").write_text("\n".join([init.format(n=r + 1, r=r, size=size) for r in range(4)]
                                                    + [out.format(r=r) for r in range(3)]) + "\n")
        [inc] = diagnose_paths([tmp_path], Settings())[2]
        assert (inc["pattern"], inc["initiator"]["rank"], inc["initiator"]["host"]) == ("comm.silent_rank", 3, "node04")


def test_nvls_failing_alone_names_fabric_manager_as_likelier_and_the_nccl_release(pipeline):
    """NCCL's NVLS ``Cuda failure 1 'invalid argument'`` with no Fabric Manager line: the explanation said the fabric
    management "is the cause", where pytorch/pytorch#150852 found one node's older driver with NCCL 2.26.2, fixed by
    NCCL 2.26.5 (a real-logs pass). Without Fabric Manager's own line it is the likelier cause, and the NCCL release
    with the driver is named."""
    line = ("[2025-04-08 08:39:46] devgpu263:1234:1290 [0] transport/nvls.cc:254 NCCL WARN Cuda failure 1 "
            "'invalid argument'")
    (inc,) = run(pipeline, line, host="devgpu263")
    assert inc["pattern"] == "platform.fabric_manager"
    assert "likelier cause" in inc["explanation"] and "NCCL 2.26.5" in inc["explanation"]


def test_nvls_failing_with_another_cuda_error_does_not_cite_the_invalid_argument_fix(pipeline):
    """pytorch/pytorch#150852 (NCCL 2.26.5's fix) is NVLS's CUDA error 1, 'invalid argument'. Corpus 039's NVLS
    failure is CUDA error 999 (Fabric Manager in a "non critical error" state), and its explanation cited that fix
    as well (a fresh user's trial): the NCCL release is still named, the fix for another error is not."""
    line = "node01:4962:5097 [1] transport/nvls.cc:223 NCCL WARN Cuda failure 999 'unknown error'"
    (inc,) = run(pipeline, line, host="node01")
    assert inc["pattern"] == "platform.fabric_manager"
    assert "(CUDA error 999)" in inc["explanation"] and "likelier cause" in inc["explanation"]
    assert inc["explanation"].endswith("with Fabric Manager healthy, the NCCL release with this driver.")
    assert "150852" not in inc["explanation"] and "invalid argument" not in inc["explanation"]


def test_faults_near_an_unexplained_hang_are_named_nearest_first_even_at_one_instant():
    """Two hosts' faults at the same instant near a hang compared their incident dicts when sorted: a TypeError that
    stopped diagnose and every streaming step (a break-it pass). Both are named, nearest first; a fault of a host of
    the hang itself, a resolved-as-superseded one and one beyond 60 s are not."""
    from correlate.correlator import name_faults_near_hangs

    def inc(iid, host, start, category="gpu_failure", severity="critical", **kw):
        return {"id": iid, "start": start, "category": category, "severity": severity, "confidence": 0.8,
                "initiator": {"host": host}, "missing": [], "clocks": {host: {}}, **kw}

    hang = inc("inc-h", "node01", "2026-06-26T06:14:44Z", "nccl_hang", "error", confidence=0.3,
               explanation="2 ranks timed out.", next_action="Find the rank that did not time out.")
    hang["confidence"] = 0.3
    got = name_faults_near_hangs([hang, inc("inc-b", "node03", "2026-06-26T06:14:44Z"),
                                  inc("inc-a", "node02", "2026-06-26T06:14:44Z"),
                                  inc("inc-c", "node04", "2026-06-26T06:14:40Z"),
                                  inc("inc-own", "node01", "2026-06-26T06:14:44Z"),
                                  inc("inc-old", "node05", "2026-06-26T06:14:44Z", status="superseded"),
                                  inc("inc-far", "node06", "2026-06-26T06:16:00Z")])
    named = [m.split(" incident ")[1].split(" ")[0] for m in got[0]["missing"]]
    assert named == ["inc-a", "inc-b", "inc-c"]
    # the nearest is said in the explanation and the next action too, where a reader looks first
    assert got[0]["explanation"] == ("2 ranks timed out. node02's gpu_failure incident inc-a (critical) began 0.0 s "
                                     "before this collective's start: if node02 ran a rank of this job, it is the "
                                     "likely first fault.")
    assert got[0]["next_action"].startswith("First find whether node02 ran a rank of this job (its gpu_failure "
                                            "incident inc-a); then: Find the rank")


ACE_SAVE = ("2026-02-18T10:28:25.497Z 2026-02-18 10:28:25,496 - root - INFO - Saving latest checkpoint model trained "
            "for 3 complete epochs and 36738 additional batches, or 369000 total batches, with best_validation_loss "
            "0.20325350761413574 and best_inference_error 0.3175671041704888")
ACE_TIMEOUT = ("2026-02-18T10:48:25.681Z [rank{r}]:[E218 10:48:25.033625188 ProcessGroupNCCL.cpp:632] [Rank {r}] "
               "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1512677, OpType=ALLREDUCE, "
               "NumelIn=306176, NumelOut=306176, Timeout(ms)=1200000) ran for 1200027 milliseconds before timing out.")


def test_ranks_that_timed_out_while_a_checkpoint_save_ran_are_a_slow_save(pipeline):
    """ai2cm/ace#851: the trainer began saving its checkpoint at 10:28:25 and rank 7's ALLREDUCE, entered 0.2 s later,
    timed out 20 minutes after (1,200 s): a save slower than the process group's timeout, which was read as a silent
    rank nobody could name (a real-logs pass; meta-pytorch/torchtune#2093 alike). The save's host is the initiator,
    the timeouts its downstream, and the next action raises the timeout, not a look at the ranks' hardware."""
    (inc,) = run(pipeline, "\n".join([ACE_SAVE, ACE_TIMEOUT.format(r=7), ACE_TIMEOUT.format(r=6)]), host="job")
    assert (inc["pattern"], inc["category"], inc["severity"]) == ("comm.slow_checkpoint", "application", "error")
    assert inc["initiator"]["host"] == "job" and inc["confidence"] == pytest.approx(0.6)
    assert "Saving latest checkpoint model trained for 3 complete epochs" in inc["explanation"]
    assert "ranks 6, 7 timed out on SeqNum 1512677 after 1,200 s" in inc["explanation"]
    assert "2026-02-18 10:28:25" in inc["explanation"]
    assert "init_process_group(timeout=" in inc["next_action"] and "barrier" in inc["next_action"]
    assert sorted(d["rank"] for d in inc["downstream"]) == [6, 7]


def test_an_unstamped_save_line_before_the_timeouts_in_their_file_is_a_slow_save(pipeline):
    """torchtune prints its "Saving checkpoint. This may take some time." with no time (meta-pytorch/torchtune#2093):
    dated only by the stamped watchdog line after it, it counts when it comes before the timeouts in their file (at a
    lower confidence: the lines do not say when the save began)."""
    wd = ("[rank{r}]:[E1129 11:56:57.20405550{r} ProcessGroupNCCL.cpp:616] [Rank {r}] Watchdog caught collective "
          "operation timeout: WorkNCCL(SeqNum=28956, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran "
          "for 60002{r} milliseconds before timing out.")
    save = ("INFO:torchtune.utils._logging:Saving checkpoint. This may take some time. Retrieving full model state "
            "dict...")
    (inc,) = run(pipeline, "\n".join([save, "INFO:torchtune.utils._logging:Getting full model state dict took 114.73 "
                                            "secs", wd.format(r=4), wd.format(r=5)]))
    assert inc["pattern"] == "comm.slow_checkpoint" and inc["confidence"] == pytest.approx(0.5), inc["explanation"]
    assert "it printed no time of its own" in inc["explanation"]
    # after the timeouts in the file, it is no save they waited on
    incs = run(pipeline, "\n".join([wd.format(r=4), wd.format(r=5), save]))
    assert all(i["pattern"] != "comm.slow_checkpoint" for i in incs)


def test_a_slow_save_is_not_claimed_beside_a_device_fault(pipeline):
    """A GPU that fell off the bus on a host of the job is a cause of the hang the save's timing does not outweigh:
    the save is no initiator then."""
    xid = ("[Wed Feb 18 10:28:30 2026] NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen "
           "off the bus.")
    incs = run(pipeline, "\n".join([ACE_SAVE, xid, ACE_TIMEOUT.format(r=7)]), host="job")
    assert all(i["pattern"] != "comm.slow_checkpoint" for i in incs), [i["pattern"] for i in incs]


def test_a_save_that_began_a_whole_timeout_before_the_collective_is_no_slow_save(pipeline):
    """A save that began more than the timeout before the collective's implied start had ended before the ranks
    entered it (here 100 s before a 60 s timeout's start): the hang is not the save's."""
    wd = ("2026-02-18T10:31:05.681Z [rank7]:[E218 10:31:05.681000000 ProcessGroupNCCL.cpp:632] [Rank 7] Watchdog "
          "caught collective operation timeout: WorkNCCL(SeqNum=1512677, OpType=ALLREDUCE, NumelIn=306176, NumelOut=306176, "
          "Timeout(ms)=60000) ran for 60000 milliseconds before timing out.")
    incs = run(pipeline, "\n".join([ACE_SAVE, wd]), host="job")
    assert incs and all(i["pattern"] != "comm.slow_checkpoint" for i in incs), [i["pattern"] for i in incs]


@pytest.mark.parametrize("between, slow", [([], True), (["INFO:torchtune.utils._logging:Saving checkpoint took 40.80 secs"],
                                                       False),
                                           (["INFO:torchtune.utils._logging:Saving checkpoint took 965.61 secs"], True),
                                           (["E1129 11:47:01.101000 5000 site-packages/torch/distributed/elastic/"
                                             "multiprocessing/api.py:882] failed (exitcode: 1) local_rank: 1 (pid: 5002)"
                                             " of binary: /usr/bin/python"], False)])
def test_a_save_that_ended_in_time_or_a_crashed_worker_is_no_slow_checkpoint(pipeline, between, slow):
    """comm.slow_checkpoint blamed a save whose own log said it ended in 40.80 s, an hour before the hang (its line
    printed no time and took the watchdog line's), and a hang a worker's exception (exit code 1) began (a break-it
    pass). A save that ended shorter than the timeout, or a worker that failed on its own, is no slow save; a save
    that took longer than the timeout is."""
    save = "INFO:torchtune.utils._logging:Saving checkpoint. This may take some time. Retrieving full model state dict..."
    timeout = ("[rank{r}]:[E1129 11:56:57.204055504 ProcessGroupNCCL.cpp:616] [Rank {r}] Watchdog caught collective "
               "operation timeout: WorkNCCL(SeqNum=28956, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
               "Timeout(ms)=600000) ran for 600024 milliseconds before timing out.")
    text = "\n".join([save, *between, timeout.format(r=4), timeout.format(r=5)])
    incs = run(pipeline, text, host="node07")
    assert any(i["pattern"] == "comm.slow_checkpoint" for i in incs) is slow, [i["pattern"] for i in incs]


#: the desync report's line before its ranks (pytorch/pytorch#152623)
DESYNC_HEAD = "         - To our best knowledge, the lagging/dead/mismatched ranks that caused the desync are:"
DESYNC_WD = ("[rank{r}]:[E515 18:36:47.34180859{r} ProcessGroupNCCL.cpp:632] [Rank {r}] Watchdog caught collective "
             "operation timeout: WorkNCCL(SeqNum=241, OpType=ALLREDUCE, NumelIn=6, NumelOut=6, Timeout(ms)=600000) ran "
             "for 600086 milliseconds before timing out.")


def test_a_desync_report_names_the_rank_the_others_waited_for(pipeline):
    """PyTorch's desync report (TORCH_NCCL_DESYNC_DEBUG) under a watchdog timeout names the lagging rank ("[7]
    finished collective #182, but didn't join collective #183", pytorch/pytorch#152623): the hang's explanation said
    "without the communicator's membership the silent rank cannot be named" two lines above it (a real-logs pass).
    The named rank is the initiator, on the host NCCL's init lines give it; the timed-out ranks are downstream."""
    init = ("node0{h}:10{r}:10{r} [{d}] NCCL INFO comm 0x{r} rank {r} nranks 8 cudaDev {d} busId {d}8000 commId 0xabc"
            " - Init COMPLETE")
    text = "\n".join([init.format(h=1 + r // 4, r=r, d=r % 4) for r in range(8)]
                     + [DESYNC_WD.format(r=r) for r in (0, 1)]
                     + ["[rank0]:[E515 18:36:47.343377708 ProcessGroupNCCL.cpp:1937] Rank 0",
                        DESYNC_HEAD,
                        "             [7] finished collective #182, but didn't join collective #183 (count from 1)"])
    (inc,) = run(pipeline, text, host="node01")
    assert (inc["pattern"], inc["initiator"]["rank"], inc["initiator"]["host"]) == ("comm.silent_rank", 7, "node02")
    assert inc["confidence"] == 0.7 and sorted(d["rank"] for d in inc["downstream"]) == [0, 1]
    assert inc["explanation"] == (
        "2 ranks timed out on SeqNum 241; PyTorch's desync report (TORCH_NCCL_DESYNC_DEBUG) names rank 7: it finished "
        "a collective and did not join the next (#182, counted from 1 by the report), so the others were waiting for "
        "it.")
    assert inc["verify"] == ["nvidia-smi (on node02)", "dmesg -T | tail -100 (on node02)"]


def test_a_desync_report_of_several_ranks_names_them_when_no_line_places_them(pipeline):
    """Three ranks stuck inside a collective ("[3, 4, 5] joined but didn't finish collective #315") and no NCCL init
    lines: no one rank is the cause, but the explanation, the next action and what is missing name ranks 3 – 5
    instead of "the silent rank cannot be named"."""
    text = "\n".join([DESYNC_WD.format(r=0),
                      DESYNC_HEAD,
                      "           - [3, 4, 5] joined but didn't finish collective #315 (count from 1)"])
    (inc,) = run(pipeline, text, host="node01")
    assert inc["pattern"] == "comm.silent_rank" and inc["initiator"]["rank"] is None
    assert inc["explanation"].endswith("PyTorch's desync report names ranks 3–5 as those the others waited for; no "
                                       "line here places them.")
    assert "cannot be named" not in inc["explanation"]
    assert inc["next_action"].startswith("Find the hosts of ranks 3–5")
    assert inc["missing"][0] == "NCCL init lines or the job's rank-to-host map for ranks 3–5"


SRUN_TIME_LIMIT = """srun: Job step aborted: Waiting up to 32 seconds for job step to finish.
slurmstepd: error: *** STEP 32233190.0 ON nid01934 CANCELLED AT 2020-07-03T02:59:56 {reason}***
srun: error: nid01934: task 0: Killed"""


@pytest.mark.parametrize("reason", ["DUE TO TIME LIMIT ", "DUE TO PREEMPTION ", ""])
def test_tasks_killed_after_slurm_cancelled_their_step_are_no_fault(pipeline, reason):
    """srun's "task 0: Killed" right after slurmstepd's cancel of the step (a time limit, a preemption, scancel) is
    that cancel's kill: information, not an error of the node (desihub/desitarget#628; a real-logs pass)."""
    (inc,) = run(pipeline, SRUN_TIME_LIMIT.format(reason=reason), host="login1")
    assert (inc["pattern"], inc["severity"], inc["category"]) == ("benign.job_cancelled", "info", "application")
    assert inc["initiator"]["host"] == "nid01934"


def test_tasks_killed_after_a_node_failure_or_with_no_cancel_stay_errors(pipeline):
    node_fail = SRUN_TIME_LIMIT.format(reason="DUE TO NODE FAILURE, SEE SLURMCTLD LOG FOR DETAILS ")
    (inc,) = run(pipeline, node_fail, host="login1")
    assert inc["severity"] == "error" and inc["pattern"] != "benign.job_cancelled"
    (inc,) = run(pipeline, "srun: error: nid01934: task 0: Killed", host="login1")
    assert inc["severity"] == "error"
    # a task of the node that crashed on its own signal beside it is a fault the cancel does not explain
    crash = SRUN_TIME_LIMIT.format(reason="DUE TO TIME LIMIT ") + "\nsrun: error: nid01934: task 1: Segmentation fault"
    (inc,) = run(pipeline, crash, host="login1")
    assert inc["severity"] == "error" and inc["pattern"] != "benign.job_cancelled"


def test_a_cancel_after_the_kill_does_not_excuse_it(pipeline):
    text = "\n".join(reversed(SRUN_TIME_LIMIT.format(reason="DUE TO TIME LIMIT ").splitlines()))
    (inc,) = run(pipeline, text, host="login1")
    assert inc["severity"] == "error"


MLX5_LINK = "[Mon Nov 30 03:12:{s:02d} 2026] mlx5_core 0000:01:00.0 enp1s0np0: Link {state}"


def test_a_nic_port_down_once_then_up_is_no_incident_but_a_flap_is(pipeline):
    """A port that goes down once and is up again 16 s later (a link negotiating at boot: a ConnectX-6's boot log, a
    real-logs pass) is information; down, up, down, up within the minute is a flapping port, a warning still; so is a
    port that stays down."""
    once = "\n".join([MLX5_LINK.format(s=5, state="down"), MLX5_LINK.format(s=21, state="up")])
    (inc,) = run(pipeline, once)
    assert (inc["pattern"], inc["severity"]) == ("benign.port_recovered", "info")
    flap = "\n".join([MLX5_LINK.format(s=5, state="down"), MLX5_LINK.format(s=9, state="up"),
                      MLX5_LINK.format(s=20, state="down"), MLX5_LINK.format(s=24, state="up")])
    (inc,) = run(pipeline, flap)
    assert inc["severity"] == "warning" and inc["pattern"] != "benign.port_recovered"
    (inc,) = run(pipeline, MLX5_LINK.format(s=5, state="down"))
    assert inc["severity"] == "warning"
    late = "\n".join([MLX5_LINK.format(s=5, state="down"),
                      "[Mon Nov 30 03:14:30 2026] mlx5_core 0000:01:00.0 enp1s0np0: Link up"])
    (inc,) = run(pipeline, late)
    assert inc["severity"] == "warning"


# nvidia-ctk's lines as journald shows the nvidia-cdi-refresh service's (NVIDIA/nvidia-container-toolkit#1611: the
# catalog's failure at boot, NVML not ready); its success message as nvidia-ctk logs it (docker/docs, "Container Device
# Interface (CDI)": level=info msg="Generated CDI spec with version 0.8.0"), in the same journald form
CTK_FAILED = ('Jan 25 00:45:{s:02d} {host} nvidia-ctk[1600]: time="2026-01-25T00:45:{s:02d}+11:00" level=error '
              'msg="failed to generate CDI spec: failed to create device CDI specs: failed to construct device spec '
              'generators: failed to initialize NVML: Driver Not Loaded"')
CTK_MADE = ('Jan 25 00:{m:02d}:{s:02d} {host} nvidia-ctk[1612]: time="2026-01-25T00:{m:02d}:{s:02d}+11:00" level=info '
            'msg="Generated CDI spec with version 0.8.0"')
# podman's failure (NixOS/nixpkgs#420638), as journald shows it
PODMAN_UNRESOLVABLE = ("Jan 25 00:45:{s:02d} {host} podman[2000]: Error: setting up CDI devices: unresolvable CDI "
                       "devices {dev}")


def test_a_cdi_failure_a_retry_fixed_is_recovered(pipeline):
    """nvidia-ctk could not generate the node's CDI spec at boot (NVML not ready) and its retry a second later made
    it (NVIDIA/nvidia-container-toolkit#1611); a container's "unresolvable CDI devices" followed by the spec made:
    recovered, information (``benign.cdi_recovered``), not an open error saying containers fail. They stayed errors
    with no word of the success (a defect pass)."""
    def one(text: str) -> dict:
        (inc,) = _hosts(pipeline, {"gpu01": text})
        return inc

    inc = one(CTK_FAILED.format(s=43, host="gpu01") + "\n" + CTK_MADE.format(m=45, s=44, host="gpu01"))
    assert (inc["pattern"], inc["severity"], inc["initiator"]["host"]) == ("benign.cdi_recovered", "info", "gpu01")
    assert "nvidia-ctk generated it 1 s later" in inc["explanation"], inc["explanation"]
    assert "Driver Not Loaded" in inc["explanation"]
    inc = one("\n".join([PODMAN_UNRESOLVABLE.format(s=43, host="gpu01", dev="nvidia.com/gpu=all"),
                         PODMAN_UNRESOLVABLE.format(s=50, host="gpu01", dev="nvidia.com/gpu=all"),
                         CTK_MADE.format(m=46, s=30, host="gpu01")]))
    assert (inc["pattern"], inc["severity"]) == ("benign.cdi_recovered", "info"), inc
    assert "no spec defined nvidia.com/gpu=all" in inc["explanation"]


@pytest.mark.parametrize("made", [
    CTK_MADE.format(m=48, s=0, host="gpu01"),  # 137 s later: past the bound (CDI_BACK_US, 120 s)
    "",  # never
])
def test_a_cdi_failure_no_retry_fixed_in_time_stays_an_error(pipeline, made):
    """A failure with no success within the bound on its host stays the error it was."""
    text = CTK_FAILED.format(s=43, host="gpu01") + ("\n" + made if made else "")
    got = _hosts(pipeline, {"gpu01": text})
    assert [i["severity"] for i in got if i["severity"] != "info"] == ["error"], got
    assert all(i["pattern"] != "benign.cdi_recovered" for i in got), got


def test_a_cdi_success_elsewhere_or_before_does_not_recover_a_failure(pipeline):
    """The success clears its own host's failures only, and only those before it; a spec the NVIDIA runtime makes
    itself (``runtime.nvidia.com``, NVIDIA/nvidia-container-toolkit#1537) is no spec nvidia-ctk wrote; a fault beside
    the failure (an Xid 79 of the host) is not a retry's business: it stays critical."""
    other = _hosts(pipeline, {"gpu01": CTK_FAILED.format(s=43, host="gpu01"),
                              "gpu02": CTK_MADE.format(m=45, s=44, host="gpu02")})
    assert [i["severity"] for i in other if i["initiator"].get("host") == "gpu01"] == ["error"], other
    assert all(i["pattern"] != "benign.cdi_recovered" for i in other)
    before = _hosts(pipeline, {"gpu01": CTK_MADE.format(m=45, s=40, host="gpu01") + "\n"
                               + CTK_FAILED.format(s=43, host="gpu01")})
    assert [i["severity"] for i in before if i["pattern"] != "benign.cdi_recovered"] == ["error"], before
    jit = _hosts(pipeline, {"gpu01": PODMAN_UNRESOLVABLE.format(s=43, host="gpu01", dev="runtime.nvidia.com/gpu=all")
                            + "\n" + CTK_MADE.format(m=45, s=44, host="gpu01")})
    assert [i["severity"] for i in jit if i["pattern"] != "benign.cdi_recovered"] == ["error"], jit
    xid = ("Jan 25 00:45:44 gpu01 kernel: NVRM: Xid (PCI:0000:18:00): 79, pid='<unknown>', name=<unknown>, GPU has "
           "fallen off the bus.")
    beside = _hosts(pipeline, {"gpu01": "\n".join([CTK_FAILED.format(s=43, host="gpu01"), xid,
                                                   CTK_MADE.format(m=45, s=45, host="gpu01")])})
    # the GPU that fell off the bus is an incident of its own, and stays critical whatever the retry fixed
    assert [(i["pattern"], i["severity"]) for i in beside if i["initiator"].get("device") == "0000:18:00.0"] == [
        ("roots", "critical")], beside


def test_a_rank_stopped_on_a_nan_explains_its_peers_timeouts(pipeline):
    """Megatron's gradient check raises on the rank that found a NaN ("Rank 13, node …, device 5, iteration 1:
    Unexpected result nan", modelscope/ms-swift#6465; no event before, a real-logs pass) and ends its process; the
    other rank of the host then times out on the collective it waited in. One incident: the NaN the initiator, the
    job's own numerics (category application), the timeout its downstream — as a rank's CUDA error is."""
    nan = ("2026-12-01T03:10:00+00:00 node21 python[4182]: [rank1]: RuntimeError: Rank 1, node node21, device 1, "
           "iteration 7: Unexpected result nan (message='found NaN in local grad norm for bucket #0 in backward pass "
           "before data-parallel communication collective')")
    timeout = ("2026-12-01T03:20:00+00:00 node21 python[4181]: [rank0]:[E1201 03:20:00.000000000 "
               "ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=77, "
               "OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600030 milliseconds before "
               "timing out.")
    (inc,) = run(pipeline, "\n".join([nan, timeout]), host="node21")
    assert (inc["category"], inc["initiator"]["fault"], inc["initiator"]["rank"]) == (
        "application", "megatron.unexpected_result", 1)
    assert [d["kind"] for d in inc["downstream"]] == ["nccl_timeout"]
    assert {x["rule"] for x in inc["evidence"]} == {"cuda_error.explains_nccl"}
    assert "not the GPU" in inc["next_action"]


def _job_log(report: list[str], *, extra: list[str] = ()) -> str:
    """A job's log of two hosts (8 ranks, NCCL's init lines place 0–3 on node01, 4–7 on node02), ranks 0 and 1 timed
    out, then rank 0's desync report: its lines print no host."""
    init = ("node0{h}:10{r}:10{r} [{d}] NCCL INFO comm 0x{r} rank {r} nranks 8 cudaDev {d} busId {d}8000 commId 0xabc"
            " - Init COMPLETE")
    return "\n".join([init.format(h=1 + r // 4, r=r, d=r % 4) for r in range(8)]
                     + [DESYNC_WD.format(r=r) for r in (0, 1)] + list(extra)
                     + ["[rank0]:[E515 18:36:47.343377708 ProcessGroupNCCL.cpp:1937] Rank 0",
                        DESYNC_HEAD,
                        *report])


def test_a_desync_report_in_a_job_log_of_several_hosts_follows_its_timeout(pipeline):
    """A job's log ("train.log") holds every host's lines; the report's continuation lines print no host, so they were
    the file's host's and no scene held them beside the ranks (a break-it pass: "the logs do not say which" under a
    report naming rank 7). The report takes the host and rank of the watchdog timeout it follows."""
    (inc,) = run(pipeline, _job_log(["             [7] finished collective #182, but didn't join collective #183"
                                     " (count from 1)"]), host="train")
    assert (inc["pattern"], inc["initiator"]["rank"], inc["initiator"]["host"]) == ("comm.silent_rank", 7, "node02")
    assert sorted(d["rank"] for d in inc["downstream"]) == [0, 1]


@pytest.mark.parametrize("report", [
    # the ranks in the collective with those that timed out in it: no laggard
    ["           - [0, 1, 2, 3, 4, 5, 6, 7] joined but didn't finish collective #315 (count from 1)"],
    ["           - [0] joined but didn't finish collective #315 (count from 1)"],
    # no rank of this communicator of 8
    ["             [12] finished collective #182, but didn't join collective #183 (count from 1)"],
])
def test_a_desync_report_that_names_no_laggard_names_none(pipeline, report):
    """A report listing every rank, or a rank that timed out waiting in the same collective, or a rank past the
    communicator's size named that rank the one the others waited for, at 0.7 (a break-it pass). None of them is named:
    the six silent ranks' hosts are."""
    (inc,) = run(pipeline, _job_log(report), host="train")
    assert inc["pattern"] == "comm.silent_rank" and inc["initiator"]["rank"] is None
    assert inc["explanation"].startswith("2 of 8 ranks timed out on SeqNum 241; the 6 that did not ran on 2 hosts")


def test_a_desync_report_of_another_process_group_does_not_name_a_default_group_rank(pipeline):
    """A process group's own timeout ("[PG ID 6 PG GUID 623(TP) Rank 0]") and its report naming its rank 3 beside the
    default group's timeouts: rank 3 of the default group, which timed out like the others, was named the cause at
    0.7 (a break-it pass). The default group's hang names its own silent ranks."""
    pg = ("[rank4]:[E515 18:36:47.341808590 ProcessGroupNCCL.cpp:632] [PG ID 6 PG GUID 623(TP) Rank 0] Watchdog caught "
          "collective operation timeout: WorkNCCL(SeqNum=17, OpType=ALLREDUCE, NumelIn=6, NumelOut=6, "
          "Timeout(ms)=600000) ran for 600086 milliseconds before timing out.")
    text = _job_log([], extra=[DESYNC_WD.format(r=r) for r in (2, 3, 4, 5)]).splitlines()[:-2] + [
        pg, "[rank4]:[E515 18:36:47.343377708 ProcessGroupNCCL.cpp:1937] [PG ID 6 PG GUID 623(TP) Rank 0]",
        "             [3] finished collective #12, but didn't join collective #13 (count from 1)"]
    incs = run(pipeline, "\n".join(text), host="train")
    default = [i for i in incs if "6 of 8 ranks" in i["explanation"]]
    assert len(default) == 1 and default[0]["initiator"]["rank"] is None
    assert default[0]["initiator"]["host"] == "node02" and "ranks 6, 7" in default[0]["explanation"]


def test_a_rank_that_crashed_on_a_signal_explains_its_peers_timeout(pipeline):
    """NVIDIA/nccl#2213's job log: rank 1 crashed in ncclLocalOpAppend (Abseil's handler: "*** SIGSEGV received at
    time=…", a line whose only time is that epoch), rank 0 then timed out waiting for it, 1800 s later, printing no
    time (dated by its file, written then). They were two error incidents (a break-it pass); the crash explains the
    timeout as a rank's CUDA error does (``cuda_error.explains_nccl``)."""
    text = "\n".join([
        "*** SIGSEGV received at time=1775734074 on cpu 19 ***",
        "PC: @     0xe1e2567f5014  (unknown)  ncclLocalOpAppend()",
        "[Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1155874, OpType=ALLREDUCE, "
        "NumelIn=9445376, NumelOut=9445376, Timeout(ms)=1800000) ran for 1800002 milliseconds before timing out."])
    written = (1775734074 + 1802) * 1_000_000  # the file's time: when the watchdog printed
    seg = Segment(data=text.encode(), origin="file:node01.log", stream="file:node01.log", host="node01",
                  ref_ts=written, ref_basis="file", ingest_ts=written)
    b = pipeline.run(Decoded(segments=[seg]))
    (inc,) = correlate(b.events, b.link_samples, b.topology, now_us=written)
    assert inc["initiator"]["fault"] == "absl.fatal_signal" and inc["severity"] == "error"
    assert "at 2026-04-09T11:27:54.000000Z" in inc["explanation"]  # its epoch, not its file's time
    assert [(d["rank"], d["kind"]) for d in inc["downstream"]] == [(0, "nccl_timeout")]


def test_a_vllm_worker_that_crashed_on_a_segfault_explains_its_peers_timeout(pipeline):
    """tvm_ffi's handler (FlashInfer's, in vLLM and SGLang workers: vllm-project/vllm#27868) prints the crash as
    "!!!!!!! Segfault encountered !!!!!!!" and the frames under it: the same kind of first fault as Abseil's line, so
    the peer's watchdog timeout that follows is its downstream report (``cuda_error.explains_nccl``)."""
    text = "\n".join([
        "[2025-11-03 10:00:00] INFO engine started",
        "!!!!!!! Segfault encountered !!!!!!!",
        '  File "misc/cudawrap.cc", line 92, in ncclCuMemHostEnable()',
        "[2025-11-03 10:30:02] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=12, "
        "OpType=ALLREDUCE, NumelIn=8, NumelOut=8, Timeout(ms)=1800000) ran for 1800002 milliseconds before timing "
        "out."])
    seg = Segment(data=text.encode(), origin="file:node01.log", stream="file:node01.log", host="node01", ref_ts=T0,
                  ref_basis="file", ingest_ts=T0)
    b = pipeline.run(Decoded(segments=[seg]))
    (inc,) = correlate(b.events, b.link_samples, b.topology, now_us=T0)
    assert inc["initiator"]["fault"] == "tvm_ffi.fatal_signal" and inc["severity"] == "error"
    assert [(d["rank"], d["kind"]) for d in inc["downstream"]] == [(0, "nccl_timeout")]
    assert "by rule cuda_error.explains_nccl" in inc["explanation"]  # tied, not only beside it


def test_a_paddle_or_glog_crash_explains_the_ranks_nccl_error_and_coordination_timeout(pipeline):
    """A trainer that crashed on a signal, as PaddlePaddle's handler ("FatalError: `Segmentation fault` is detected by
    the operating system.", PaddlePaddle/Paddle#41709) or glog's ("*** SIGSEGV (@0x50) received by PID … from PID 80;
    stack trace: ***", PaddlePaddle/Paddle#18232) prints it, is its process's first fault: its NCCL error and a JAX
    process's coordination-service timeout after it are its reports (``cuda_error.explains_nccl``), as after Abseil's
    line. Neither crash line gave an event (a real-logs pass)."""
    paddle = "\n".join([
        "2023-04-06 22:26:40.000000: W init.cc:1] FatalError: `Segmentation fault` is detected by the operating "
        "system.",
        "2023-04-06 22:26:41.000000: E trainer.py:1] OSError: (External) NCCL error(2), unhandled system error."])
    (inc,) = run(pipeline, paddle, host="node07")
    assert inc["initiator"]["fault"] == "paddle.fatal_signal" and inc["category"] == "application"
    assert inc["explanation"].endswith("it reported 2 lines (paddle.fatal_signal, paddle.nccl_error).")
    jax = "\n".join([
        "2024-10-09 15:41:39.000000: E glog.cc:1] *** SIGSEGV (@0x50) received by PID 12833 (TID 0x7f56686c9700) from "
        "PID 80; stack trace: ***",
        "2024-10-09 15:41:40.000000: E external/xla/xla/pjrt/pjrt_stream_executor_client.cc:3072] Execution of "
        "replica 0 failed: DEADLINE_EXCEEDED: GetKeyValue() timed out with key: devices=[0,1,2,3]; stream=0 and "
        "duration: 10m"])
    (inc,) = run(pipeline, jax, host="node07")
    assert inc["initiator"]["fault"] == "glog.fatal_signal" and len(inc["initiator"]["events"]) == 2
    rank0 = ("2024-10-09 16:11:41.000000: [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=12, "
             "OpType=ALLREDUCE, NumelIn=8, NumelOut=8, Timeout(ms)=1800000) ran for 1800002 milliseconds before "
             "timing out.")
    (inc,) = run(pipeline, jax.splitlines()[0] + "\n" + rank0, host="node07")
    assert [(d["rank"], d["kind"]) for d in inc["downstream"]] == [(0, "nccl_timeout")]
    assert "by rule cuda_error.explains_nccl" in inc["explanation"]  # tied, not only beside it


@pytest.mark.parametrize("crash", [
    "*** SIGABRT (@0x3e800001055) received by PID 4181 (TID 0x7f56686c9700) from PID 4181; stack trace: ***",
    "FatalError: `Process abort signal` is detected by the operating system.",
    "*** SIGABRT received at time=1764559201 on cpu 3 ***"])
def test_a_crash_signal_after_its_hosts_watchdog_timeout_is_that_timeouts_teardown(pipeline, crash):
    """The watchdog ends a rank's process with abort() after its timeout; a crash handler linked into it (glog's,
    PaddlePaddle's, Abseil's) prints the SIGABRT. That line is the hang's teardown on its host (``model.CRASH_SIGNALS``,
    ``rank_failure.explains_torchrun_report``): it was an error incident of its own ("the earliest fault nothing else
    explains", category application) beside the hang it ended, a second page (a break-it pass). A crash before any
    timeout of its host still explains them (``test_a_paddle_or_glog_crash_explains_…``)."""
    text = "\n".join([
        "2026-12-01T03:20:00+00:00 node21 python[4181]: [rank0]:[E1201 03:20:00.000000000 ProcessGroupNCCL.cpp:616] "
        "[Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=77, OpType=ALLREDUCE, NumelIn=1, "
        "NumelOut=1, Timeout(ms)=600000) ran for 600030 milliseconds before timing out.",
        "2026-12-01T03:20:01+00:00 node21 python[4181]: " + crash])
    (inc,) = run(pipeline, text, host="node21")
    assert inc["category"] == "nccl_hang" and inc["initiator"]["fault"] is None
    assert sorted(d["kind"] for d in inc["downstream"]) == ["nccl_timeout", "other"]
    assert [x["rule"] for x in inc["evidence"]] == ["watchdog_timeout.explains_its_abort"]


@pytest.mark.parametrize("timeout_tag, crash_tag, teardown", [
    ("python[4181]: ", "python[4181]: ", True),  # one process's lines, as the journal tags them
    ("python[4181]: ", "python[4190]: ", False),  # another process of the host
    ("torchrun[777]: [default3]:", "torchrun[777]: [default3]:", True),  # torchrun relays worker 3's lines
    ("torchrun[777]: [default3]:", "torchrun[777]: [default0]:", False),  # ... and worker 0's, under its own pid
    # a systemd unit's tag on every child's line, the abort naming its own process (glog): a tag's pid is no process
    # to set against the line's own (a break-it pass: two incidents)
    ("torchrun[777]: ", "torchrun[777]: *** SIGABRT (@0x3e800001055) received by PID 4181 (TID 0x7f5a8c3ff700) from "
     "PID 4181; stack trace: ***", True)])
def test_a_crash_signal_of_another_process_is_no_teardown_of_its_hosts_timeout(pipeline, timeout_tag, crash_tag,
                                                                               teardown):
    """A crash handler's line that names no rank follows its host's watchdog timeout only when it is of the timeout's
    process (``model.other_process``): the pid its syslog tag gives, torchrun's "[default3]:" label's local rank. The
    SIGABRT of another process a second later was taken for the timeout's own abort whatever its pid (a defect pass),
    and under torchrun's tag every worker's line had torchrun's pid, so neither the pid nor the worker told them
    apart (``ingest.prefix``: a launcher's label after its tag makes the tag's pid the launcher's, not the line's)."""
    text = "\n".join([
        f"2026-12-01T03:20:00+00:00 node21 {timeout_tag}[rank3]:[E1201 03:20:00.000000000 ProcessGroupNCCL.cpp:616] "
        "[Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=77, OpType=ALLREDUCE, NumelIn=1, "
        "NumelOut=1, Timeout(ms)=600000) ran for 600030 milliseconds before timing out.",
        f"2026-12-01T03:20:01+00:00 node21 {crash_tag}"
        + ("" if "***" in crash_tag else "*** SIGABRT received at time=1764559201 on cpu 3 ***")])
    got = run(pipeline, text, host="node21")
    rules = [x["rule"] for i in got for x in i["evidence"]]
    assert rules == (["watchdog_timeout.explains_its_abort"] if teardown else []), got
    assert len(got) == (1 if teardown else 2)


ASYNC_ABORT = [  # PyTorch's watchdog taking rank 3's process down (snowflakedb/ArcticTraining#219, the catalog's lines)
    "[rank3]:[E626 16:48:25.440250129 ProcessGroupNCCL.cpp:684] [Rank 3] Some NCCL operations have failed or timed "
    "out. Due to the asynchronous nature of CUDA kernels, subsequent GPU operations might run on corrupted/incomplete "
    "data.",
    "[rank3]:[E626 16:48:25.440271515 ProcessGroupNCCL.cpp:698] [Rank 3] To avoid data inconsistency, we are taking "
    "the entire process down."]


@pytest.mark.parametrize("crash", [
    "*** SIGABRT (@0x3e800001055) received by PID 4181 (TID 0x7f56686c9700) from PID 4181; stack trace: ***",
    "FatalError: `Process abort signal` is detected by the operating system.",
    "*** SIGABRT received at time=1764559201 on cpu 3 ***"])
@pytest.mark.parametrize("error", [
    None,  # no error line: the watchdog's own lines are what the abort follows
    "RuntimeError: NCCL error in: /pytorch/torch/lib/c10d/ProcessGroupNCCL.cpp:410, unhandled system error, NCCL "
    "version 2.4.8",  # NVIDIA/nccl#286
    "torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/NCCLUtils.hpp:268, "
    "remote process exited or there was a network error, NCCL version 2.21.5"])  # NVIDIA/nccl#2076
def test_a_crash_signal_after_its_watchdogs_abort_on_an_nccl_error_is_that_errors_teardown(pipeline, crash, error):
    """The watchdog takes a rank's process down after an asynchronous NCCL error as after a timeout ("Some NCCL
    operations have failed or timed out", "taking the entire process down", then the error it re-throws and abort():
    tatsu-lab/stanford_alpaca#207), but no line gives an elapsed time: the crash handler's SIGABRT was the first fault
    and the cause of the lines before it, "the fault nothing else explains" (cuda_error.explains_nccl; a break-it pass).
    It is the error's teardown (``model.WATCHDOG_ABORTS``): the incident is the one without the SIGABRT, which joins it
    downstream by ``watchdog_error.explains_its_abort``."""
    lines = ASYNC_ABORT + ([error] if error else [])
    stamp = "2026-12-01T03:20:0{}+00:00 node21 python[4181]: {}".format
    text = "\n".join(stamp(i, line) for i, line in enumerate(lines))
    (alone,) = run(pipeline, text, host="node21")
    (inc,) = run(pipeline, text + "\n" + stamp(len(lines), crash), host="node21")
    for f in ("pattern", "category"):
        assert inc[f] == alone[f], (f, inc[f], alone[f])
    assert inc["initiator"]["fault"] == alone["initiator"]["fault"] != "absl.fatal_signal"
    if error and "system error" in error:  # the rank's own error is the initiator, its abort downstream of it
        assert (inc["initiator"]["fault"], inc["initiator"]["host"]) == ("nccl_error", "node21")
    assert [d["kind"] for d in inc["downstream"] if d["kind"] == "other"] == ["other"]
    assert {x["rule"] for x in inc["evidence"]} == {"watchdog_error.explains_its_abort"}


def test_jax_s_abort_after_its_fatal_coordination_error_is_a_report_as_that_line_is(pipeline):
    """JAX ends a process whose coordination service failed with LOG(FATAL): "Terminating process because the JAX
    distributed service detected fatal errors. This most likely indicates that another task died", then Abseil's
    handler prints the SIGABRT (openxla/xla#38624). The abort was "the earliest fault nothing else explains" and, by
    cuda_error.explains_nccl, the cause of the line that says another task died (a break-it pass); it is that line's
    teardown: only downstream reports, as the line alone is (``model.ABORTS_ON``)."""
    fatal = ("F0929 17:42:48.594200 1044529 client.h:77] Terminating process because the JAX distributed service "
             "detected fatal errors. This most likely indicates that another task died; see the other task logs for "
             "more details.")
    (alone,) = run(pipeline, fatal, host="node21")
    (inc,) = run(pipeline, fatal + "\n*** SIGABRT received at time=1790000000 on cpu 3 ***", host="node21")
    for i in (alone, inc):
        assert (i["pattern"], i["initiator"]["fault"], i["evidence"]) == ("unknown", None, []), i
        assert i["explanation"].startswith("Only downstream reports: node21"), i["explanation"]
    assert [len(d["events"]) for d in inc["downstream"]] == [2]  # the abort joins the line's party


def test_jax_coordination_service_reports_are_downstream_and_a_restarted_task_is_what_they_report(pipeline):
    """The coordinator's "Stopping coordination service as cluster registration failed" and the registration
    barrier's timeout under it ("Barrier timed out. Id: [Init]Wait_for_all_tasks_to_register::0",
    AI-Hypercomputer/gpu-recipes#2: the id's brackets gave no event) report processes that never came: only downstream
    reports, as a rank's watchdog timeout alone is. A task that connected again as a new incarnation
    (google/grain#802) is what the coordinator's stop and every process's "Terminating process" report: the initiator,
    the task named."""
    reg = "\n".join([
        "2025-02-20 10:00:00.000000: E coordination_service.cc:1] Stopping coordination service as cluster registration"
        " failed. This may be due to 1) some tasks crashed earlier before connecting, 2) some tasks were never "
        "scheduled, or 3) scheduling delays. Consider setting a longer initialization timeout if such delays are "
        "expected, the timeout is currently set to: 1h.",
        "2025-02-20 10:00:00.000100: E client.cc:1] Original error: DEADLINE_EXCEEDED: Barrier timed out. Id: "
        "[Init]Wait_for_all_tasks_to_register::0. This usually happens because a task triggered the barrier too early "
        "or too slowly."])
    (inc,) = run(pipeline, reg, host="node00")
    assert inc["explanation"].startswith("Only downstream reports: node00 (nccl_timeout)"), inc["explanation"]
    restarted = "\n".join([
        "2025-04-05 18:39:10.837611: E external/xla/xla/tsl/distributed_runtime/coordination/"
        "coordination_service.cc:962] /job:jax_worker/replica:0/task:1 unexpectedly tried to connect with a "
        "different incarnation. It has likely restarted.",
        "2025-04-05 18:39:10.838153: F external/xla/xla/pjrt/distributed/client.h:80] Terminating process because the "
        "JAX distributed service detected fatal errors. This most likely indicates that another task died; see the "
        "other task logs for more details."])
    (inc,) = run(pipeline, restarted, host="node00")
    assert inc["initiator"]["fault"] == "xla.task_restarted" and len(inc["initiator"]["events"]) == 2
    assert inc["next_action"].startswith("Task 1 (/job:jax_worker/replica:0/task:1) connected to JAX's coordinator")


XID74_REGS = ("[Tue Dec  1 10:00:0{s} 2026] NVRM: Xid (PCI:0000:{bus}:00): 74, pid='<unknown>', name=<unknown>, "
              "NVLink: fatal error detected on link {link}({regs})")


def test_a_sympathetic_xid_74_follows_the_gpu_whose_link_failed(pipeline):
    """Two GPUs of one host log Xid 74 a second apart: the first with the 3rd register's bit 16 (its link's own
    error), the second with only the 1st register's bit 1, which NVIDIA's WORKFLOW_NVLINK_ERR calls a sympathetic
    or secondary error, "follow the other Xid" (formats.md §2.2). The first is the initiator and the second follows
    it; the action says what the registers mean (it was "no single culprit", and asked the reader to decode the
    seven registers by hand: a fresh user's trial)."""
    text = "\n".join([XID74_REGS.format(s=5, bus="b3", link=14, regs="0x0, 0x0, 0x10000, 0x0, 0x0, 0x0, 0x0"),
                      XID74_REGS.format(s=6, bus="9b", link=2, regs="0x2, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0")])
    (inc,) = run(pipeline, text)
    i = inc["initiator"]
    assert (i["device_type"], i["device"], i["link"], i["xid"]) == ("gpu", "0000:b3:00.0", 14, 74)
    assert [(d["device"], d["link"], d["relation"]) for d in inc["downstream"]] == [
        ("0000:9b:00.0", 2, "same_host")]
    assert inc["confidence"] > 0.8
    assert "nvlink.fault_explains_sympathetic_xid74" in inc["explanation"]
    assert ("The Xid 74 of gpu 0000:9b:00.0 sets only sympathetic register bits (1st register bit 1)"
            in inc["explanation"]), inc["explanation"]
    assert "Its registers (3rd register bit 16) say: if it repeats, run NVIDIA's field diagnostics" in \
        inc["next_action"], inc["next_action"]
    assert "decode" not in inc["next_action"]
    # the other order of the lines in time says the same: the registers, not the clock, tell who follows
    text = "\n".join([XID74_REGS.format(s=5, bus="9b", link=2, regs="0x2, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0"),
                      XID74_REGS.format(s=6, bus="b3", link=14, regs="0x0, 0x0, 0x10000, 0x0, 0x0, 0x0, 0x0")])
    (inc,) = run(pipeline, text)
    assert (inc["initiator"]["device"], [d["device"] for d in inc["downstream"]]) == (
        "0000:b3:00.0", ["0000:9b:00.0"])


def test_a_sympathetic_xid_74_logged_first_by_microseconds_still_follows(pipeline):
    """The same two GPUs with microsecond stamps (``dmesg --time-format iso``): the peer's sympathetic Xid 74 printed
    10 ms before the Xid 74 whose 1st register's bit 4 says its link's own ECC/parity error. Each GPU's interrupt is
    serviced on its own, so the report may come first; the rule's ``lead_s`` (1 s) allows it. One clock and a
    microsecond's resolution made them two incidents, the sympathetic one "the earliest fault nothing else explains"
    (a break-it pass). Two seconds first is past the lead: the sympathetic one is no longer said to follow."""
    from correlate.rules import default_rules

    (rule,) = [r for r in default_rules().explains if r.id == "nvlink.fault_explains_sympathetic_xid74"]
    assert rule.lead_s == 1
    line = ("2026-12-01T10:00:{t},{us:06d}+00:00 NVRM: Xid (PCI:0000:{bus}:00): 74, pid='<unknown>', name=<unknown>, "
            "NVLink: fatal error detected on link {link}({regs}, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0)")
    own = line.format(t="05", us=0, bus="b3", link=14, regs="0x10")
    for t, us in (("04", 990_000), ("03", 0)):
        text = "\n".join([line.format(t=t, us=us, bus="9b", link=2, regs="0x2"), own])
        incs = run(pipeline, text)
        if us:
            (inc,) = incs
            assert (inc["initiator"]["device"], [(d["device"], d["relation"]) for d in inc["downstream"]]) == (
                "0000:b3:00.0", [("0000:9b:00.0", "same_host")])
            assert "though a line it explains was logged 10 ms before it" in inc["explanation"], inc["explanation"]
        else:
            assert all("nvlink.fault_explains_sympathetic_xid74" not in i["explanation"] for i in incs)


def test_a_sympathetic_xid_74_alone_is_still_reported(pipeline):
    """NVIDIA: a sympathetic Xid 74 "seen solo, please report a bug" (formats.md §2.2): with no other fault it is the
    incident's initiator, and the action says it follows a fault elsewhere and asks for the bug report. Two GPUs that
    both report only sympathetic bits explain neither the other: no single culprit, not one of them downstream."""
    (inc,) = run(pipeline, XID74_REGS.format(s=6, bus="9b", link=2, regs="0x100000, 0x0, 0x0, 0x10000, 0x0, 0x0, 0x0"))
    assert (inc["initiator"]["device"], inc["initiator"]["link"], inc["severity"]) == ("0000:9b:00.0", 2, "critical")
    assert inc["downstream"] == []
    assert ("Its registers (1st register bit 20, 4th register bit 16) say: a sympathetic (secondary) error: it "
            "follows a fault elsewhere") in inc["next_action"], inc["next_action"]
    assert "nvidia-bug-report.sh" in inc["next_action"]
    text = "\n".join([XID74_REGS.format(s=5, bus="9b", link=2, regs="0x2, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0"),
                      XID74_REGS.format(s=6, bus="b3", link=14, regs="0x2, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0")])
    (inc,) = run(pipeline, text)
    assert inc["initiator"]["device_type"] is None
    assert inc["initiator"]["candidates"] == ["gpu 0000:9b:00.0 on node07", "gpu 0000:b3:00.0 on node07"]


def test_an_xid_74_with_only_ignorable_bits_is_no_initiating_fault(pipeline):
    """The 1st register's bits 0, 23 and 30 "can be safely ignored" (NVIDIA's WORKFLOW_NVLINK_ERR, formats.md §2.2):
    alone such a line makes no incident of severity warning or above; beside another GPU's Xid 74 of its own it is
    not a candidate."""
    ignorable = XID74_REGS.format(s=6, bus="9b", link=2, regs="0x40800001, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0")
    incs = run(pipeline, ignorable)
    assert [i for i in incs if i["severity"] in ("warning", "error", "critical")] == []
    text = "\n".join([ignorable, XID74_REGS.format(s=7, bus="b3", link=14, regs="0x100, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0")])
    (inc,) = run(pipeline, text)
    assert (inc["initiator"]["device"], inc["initiator"]["link"]) == ("0000:b3:00.0", 14)
    assert "possibly hardware: check the link's mechanical connections and reseat it" in inc["next_action"]


def test_candidates_of_other_categories_in_either_file_order_are_said_alike(pipeline, tmp_path):
    """Two ranks of one communicator, their NCCL lines unstamped in files written a second apart: a CUDA failure on
    node07's GPU, a NET/IB completion error on node08's (a fresh user's trial). No rule ties them and they rank alike:
    no single culprit. Its category was the earlier file's candidate's (ib_port when node08's was written first,
    though no IB port event was logged) and its table cell "? (no single culprit)". The category is "other" in both
    orders, and the table and the page name the candidates' hosts."""
    import os

    from api.pager import describe_initiator as page_initiator
    from api.render import describe_initiator
    from ingest.decode import decode_file

    init = ("{h}:{p}:{p}0 [{g}] NCCL INFO comm 0x7fdf08000d00 rank {r} nranks 16 cudaDev {g} nvmlDev {g} busId {b}000 "
            "commId 0x5ae77eb5ea4ec1ee - Init COMPLETE\n")
    files = {"node07.nccl.log": init.format(h="node07", p=4242, g=3, r=3, b="b3")
             + "node07:4242:4300 [3] enqueue.cc:1556 NCCL WARN Cuda failure 'unspecified launch failure'\n",
             "node08.nccl.log": init.format(h="node08", p=5150, g=1, r=9, b="1b")
             + "node08:5150:5210 [1] ib_plugin.c:1615 NCCL WARN NET/IB : Got completion from peer 192.0.2.59<44206> "
               "with status=12 opcode=129 len=65536 vendor err 129 (Recv)\n"}
    seen = []
    for first in files:
        segs = []
        for k, (name, text) in enumerate(files.items()):
            f = tmp_path / first / name
            f.parent.mkdir(exist_ok=True)
            f.write_text(text)
            os.utime(f, (T0 / 1e6 + (name != first), T0 / 1e6 + (name != first)))
            segs += decode_file(f, relname=name).segments
        b = pipeline.run(Decoded(segments=segs))
        (inc,) = correlate(b.events, b.link_samples, b.topology, now_us=T0)
        assert (inc["initiator"]["host"], inc["initiator"]["device_type"], inc["category"]) == (None, None, "other")
        assert describe_initiator(inc["initiator"]) == "node07, node08 (no single culprit)"
        assert page_initiator(inc) == "no single culprit (node07, node08)"
        seen.append(inc["start"])
    assert seen[0] == seen[1]
    # candidates alike in category keep theirs: both ends' completion errors are ib_port (the test above)


#: rank 0's exit, then rank 1's timeout on the collective rank 0 never ran (NVIDIA/nccl#1504)
EXIT_LINE = ("[rank{r}]:[W1106 04:13:02.10722833{r} ProcessGroupNCCL.cpp:1250] Warning: WARNING: process group has NOT "
             "been destroyed before we destruct ProcessGroupNCCL. On normal program exit, the application should call "
             "destroy_process_group to ensure that any pending NCCL operations have finished in this process. In rare "
             "cases this process can exit before this point and block the progress of another member of the process "
             "group. This constraint has always been present,  but this warning has only been added since PyTorch 2.4 "
             "(function operator())")
EXIT_WD = ("[rank{r}]:[E1106 04:43:01.01894158{r} ProcessGroupNCCL.cpp:616] [Rank {r}] Watchdog caught collective "
           "operation timeout: WorkNCCL(SeqNum=1, OpType=COALESCED, NumelIn=18446744073709551615, "
           "NumelOut=18446744073709551615, Timeout(ms)=1800000) ran for 1800039 milliseconds before timing out.")


def test_a_rank_that_exited_after_the_collective_began_is_the_one_its_peers_waited_for(pipeline):
    """Rank 0's process exited without destroy_process_group ("process group has NOT been destroyed …") a second
    after rank 1's SeqNum 1 began, and rank 1 timed out 30 minutes later (NVIDIA/nccl#1504): it read "rank 1 timed out
    …: the silent rank cannot be named" with rank 0's exit line in the log (a real-logs pass). Rank 0 is the rank
    waited for, on the host its line names; rank 1 is downstream."""
    (inc,) = run(pipeline, "\n".join([EXIT_LINE.format(r=0), EXIT_WD.format(r=1)]), host="node03")
    assert (inc["pattern"], inc["initiator"]["rank"], inc["initiator"]["host"]) == ("comm.silent_rank", 0, "node03")
    assert inc["confidence"] == 0.7 and [d["rank"] for d in inc["downstream"]] == [1]
    assert inc["explanation"] == (
        "rank 1 timed out on SeqNum 1; rank 0 exited without destroy_process_group (PyTorch's warning at its exit) "
        "1.1 s after the collective began: its peers waited for a process that had ended.")
    assert inc["next_action"].startswith("Find why rank 0 on node03 ended while its peers were still in a collective")
    assert [c["signature"] for c in inc["context"]] == ["torch.pg_not_destroyed"]


@pytest.mark.parametrize("exits", [(1,), (0, 2)])
def test_an_exit_of_a_rank_that_timed_out_or_of_several_ranks_names_none(pipeline, exits):
    """The exit line of the rank that timed out itself, or of several ranks, names no rank the others waited for."""
    text = "\n".join([*(EXIT_LINE.format(r=r).replace("04:13:02", f"04:13:0{2 + r}") for r in exits),
                      EXIT_WD.format(r=1)])
    incs = run(pipeline, text, host="node03")
    assert [i["initiator"]["rank"] for i in incs if i["pattern"] == "comm.silent_rank"] == [None]


def test_an_exit_long_before_the_collective_began_names_none(pipeline):
    """A rank's exit more than ``EXIT_LEAD_US`` before the collective began is of an earlier run, not the hang's."""
    early = EXIT_LINE.format(r=0).replace("04:13:02", "04:05:02")
    incs = run(pipeline, "\n".join([early, EXIT_WD.format(r=1)]), host="node03")
    assert [i["initiator"]["rank"] for i in incs if i["pattern"] == "comm.silent_rank"] == [None]


def test_exit_lines_of_another_job_on_the_host_name_none_of_a_hangs_ranks(pipeline):
    """Two 4-GPU jobs on one host, their ranks numbered alike: one ends normally 30 s after the other's collective
    began (ranks 0 and 1 print the exit line), the other's ranks 1, 2 and 3 time out on it. Rank 1's exit before
    its own timeout is no process of the hung job: the exit lines are the other job's and name no rank (its rank 0
    was named the rank the hung job waited for, "a process that had ended"; a break-it pass)."""
    ended = [EXIT_LINE.format(r=r).replace("04:13:02", f"04:13:3{r}") for r in (0, 1)]
    incs = run(pipeline, "\n".join([*ended, *(EXIT_WD.format(r=r) for r in (1, 2, 3))]), host="node03")
    (hang,) = [i for i in incs if i["pattern"] == "comm.silent_rank"]
    assert hang["initiator"]["rank"] is None and "exited without" not in hang["explanation"], hang["explanation"]
    # the hung job's own rank 1, exiting after its timeout (rank 3's came 4 s later), does not hide rank 0's exit
    late = EXIT_LINE.format(r=1).replace("04:13:02", "04:43:03")
    wds = [EXIT_WD.format(r=r) for r in (1, 2)] + [EXIT_WD.format(r=3).replace("04:43:01", "04:43:05")]
    (named,) = run(pipeline, "\n".join([ended[0], *wds, late]), host="node03")
    assert (named["pattern"], named["initiator"]["rank"]) == ("comm.silent_rank", 0), named["explanation"]


def test_exit_lines_of_a_job_that_ended_are_information(pipeline):
    """Every rank prints the exit line at a normal exit without destroy_process_group (ai2cm/ace#679,
    anhvth/opensloth#17): no incident of warning or worse."""
    text = "\n".join(EXIT_LINE.format(r=r).replace("04:13:02", f"04:13:0{2 + r}") for r in range(4))
    incs = run(pipeline, text, host="node03")
    assert all(i["severity"] == "info" for i in incs), [(i["severity"], i["pattern"]) for i in incs]


NET_IB_PORT_ERROR = ("[2023-07-03 10:{t}] {host}:34050:34121 [0] transport/net_ib.cc:93 NCCL WARN NET/IB : Got async "
                     "event : port error")


def test_port_faults_of_several_hosts_at_one_moment_name_each_other_and_the_fabric(tmp_path):
    """NVIDIA/nccl#905: NCCL's "NET/IB : Got async event : port error" on several nodes at once, each its own incident
    that blamed its host's port and cable; the maintainer asked for the IB fabric to be checked (a real-logs pass).
    Hosts' port faults within seconds name each other and lead with the switch and the subnet manager; a host's port
    fault a minute apart from the others', and a GPU fault at the same moment, do not."""
    from api.diagnose import diagnose_paths
    from schemas.settings import Settings

    for host, t in (("gpu-a", "15:02"), ("gpu-b", "15:03"), ("gpu-c", "16:30")):
        (tmp_path / f"{host}.nccl.log").write_text(NET_IB_PORT_ERROR.format(t=t, host=host) + "\n")
    (tmp_path / "gpu-d.dmesg.log").write_text(
        "2023-07-03T10:15:02.500000+00:00 gpu-d kernel: NVRM: Xid (PCI:0000:18:00): 79, pid=0, GPU has fallen off the "
        "bus.\n")
    incs = {i["initiator"]["host"]: i for i in diagnose_paths([tmp_path], Settings())[2]}
    a, b, c, d = incs["gpu-a"], incs["gpu-b"], incs["gpu-c"], incs["gpu-d"]
    assert (a["category"], a["initiator"]["device_type"], a["initiator"]["host"]) == ("ib_port", "nic", "gpu-a")
    assert f"gpu-b's {b['id']}, 1.0 s after" in a["explanation"] and "gpu-c" not in a["explanation"]
    assert f"gpu-a's {a['id']}, 1.0 s before" in b["explanation"]
    assert a["next_action"].startswith("Ports of gpu-a, gpu-b failed at the same moment: check the switch they share")
    assert "subnet manager" in b["next_action"]
    # a minute later: its own port; a GPU's fault at the same moment is no port of the fabric
    assert "other host" not in c["explanation"] and not c["next_action"].startswith("Ports of")
    assert "other host" not in d["explanation"] and not d["next_action"].startswith("Ports of")


def test_port_faults_named_for_their_hosts_clock_skew_say_so(tmp_path):
    """gpu-b's clock runs a minute behind (its ranks' timeouts of SeqNum 5 a minute after gpu-a's and gpu-c's: a skew
    bound of 62 s). Its port error and gpu-a's, 60 s apart by their clocks, are named together, and the explanation
    says it is by the clocks' bounds: "within 10 s of it (…, 60.0 s after)" read as a contradiction (a break-it
    pass)."""
    from api.diagnose import diagnose_paths
    from schemas.settings import Settings

    wd = ("[rank{r}]:[E703 10:{t}.000000000 ProcessGroupNCCL.cpp:616] [Rank {r}] Watchdog caught collective operation "
          "timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600030 "
          "milliseconds before timing out.")
    for n, (host, t, port) in enumerate((("gpu-a", "05:00", "15:02"), ("gpu-b", "06:00", "16:02"),
                                          ("gpu-c", "05:00", None))):
        lines = [wd.format(r=2 * n + k, t=t) for k in (0, 1)] + ([NET_IB_PORT_ERROR.format(t=port, host=host)]
                                                                if port else [])
        (tmp_path / f"{host}.nccl.log").write_text("\n".join(lines) + "\n")
    incs = {i["initiator"]["host"]: i for i in diagnose_paths([tmp_path], Settings())[2] if i["category"] == "ib_port"}
    a, b = incs["gpu-a"], incs["gpu-b"]
    bounds = a["clocks"]["gpu-a"]["skew_bound_s"] + b["clocks"]["gpu-b"]["skew_bound_s"]
    assert bounds == 64.0, (a["clocks"], b["clocks"])
    assert f"(gpu-b's {b['id']}, 60.0 s after by clocks that may be off by 64 s)" in a["explanation"], a["explanation"]
    assert f"(gpu-a's {a['id']}, 60.0 s before by clocks that may be off by 64 s)" in b["explanation"], b["explanation"]


@pytest.mark.parametrize("line", [
    "mlx5_core 0000:5c:00.0: mlx5_pcie_event:299:(pid 268269): Detected insufficient power on the PCIe slot (27W).",
    "ena 0000:00:05.0 ens5: The number of lost tx completions is above the threshold (1019 > 128). Reset the device",
    "mlx5_core 0000:05:00.0: poll_health:840:(pid 0): device's health compromised - reached miss count"])
def test_nic_faults_of_their_own_on_several_hosts_at_one_moment_do_not_name_the_switch(tmp_path, line):
    """A NIC's own fault of kind ib_port (its PCIe slot's power, an AWS ENA reset, its firmware's health) on two hosts
    4 s apart — hosts powered on or loaded alike — is no port a switch or the subnet manager dropped: each keeps its
    own action, without "check the switch they share" (they were told so: a break-it pass). Only lines that say a
    port's link dropped (NCCL's async "port error", a port's state, a link down) name each other."""
    from api.diagnose import diagnose_paths
    from schemas.settings import Settings

    for h, s in (("r12a", "40"), ("r12b", "44")):
        (tmp_path / f"{h}.dmesg.log").write_text(f"2024-12-01T14:54:{s}.000000+00:00 {h} kernel: {line}\n")
    incs = diagnose_paths([tmp_path], Settings())[2]
    assert sorted((i["initiator"]["host"], i["initiator"]["device_type"]) for i in incs) == [
        ("r12a", "nic"), ("r12b", "nic")], [(i["category"], i["initiator"]) for i in incs]
    for i in incs:
        assert "other host" not in i["explanation"] and "switch they share" not in i["next_action"], i["next_action"]


def test_ports_of_several_hosts_back_within_a_minute_are_the_switch_not_a_negotiation(tmp_path):
    """mymdbook.github.io/xai_link_flap: 20+ servers logged "mlx5_eth0: Port: 1 Link DOWN" in one second, every
    server-facing port of one switch dropped and came back ~12 s later; each host's incident was "No action … a link
    negotiating or a cable reseated" (``benign.port_recovered``), and a name that is not mlx5_<n> gave no event at all
    (a real-logs pass). Together they name the switch and the subnet manager, still info (nothing to do on the
    hosts); one host's port back alone stays a negotiation."""
    from api.diagnose import diagnose_paths
    from schemas.settings import Settings

    line = "2025-12-14T16:{t}+00:00 {h} kernel: mlx5_core 0000:1a:00.0 mlx5_eth0: Port: 1 Link {s}"
    for h, t in (("srv-05", "29:41.210000"), ("srv-10", "29:41.480000"), ("srv-11", "31:02.000000")):
        up = t.replace(":41.", ":53.").replace(":02.", ":14.")
        (tmp_path / f"{h}.dmesg.log").write_text(line.format(t=t, h=h, s="DOWN") + "\n"
                                                 + line.format(t=up, h=h, s="ACTIVE") + "\n")
    incs = {i["initiator"]["host"]: i for i in diagnose_paths([tmp_path], Settings())[2]}
    a, b, alone = incs["srv-05"], incs["srv-10"], incs["srv-11"]
    assert {i["pattern"] for i in (a, b, alone)} == {"benign.port_recovered"}
    assert {i["severity"] for i in (a, b, alone)} == {"info"}
    assert a["explanation"].startswith("The NIC port of srv-05 went down and came up again, as ports of 1 other "
                                       f"host(s) did within 10 s (srv-10's {b['id']}, 0.3 s after)")
    assert "not this host's cable, nor a link negotiating" in b["explanation"]
    assert a["next_action"].startswith("Nothing to do on srv-05: its port came back. Check the switch that the ports "
                                       "of srv-05, srv-10 share and the subnet manager's log")
    assert "a link negotiating (at boot, after a reset)" in alone["explanation"]
    assert alone["next_action"].startswith("No action.")


def test_a_gpu_that_never_came_back_from_a_reset_or_wake_is_the_initiator_not_its_rm_init_failure(pipeline):
    """The kernel gave up on a GPU that did not answer after a wake from D3cold ("not ready 65535ms after resume;
    giving up", "Unable to change power state from D3cold to D0, device inaccessible") on a VM host binding it for
    passthrough (bryansteiner/gpu-passthrough-tutorial#39): the RmInitAdapter failures of stage 0x22 that follow are
    its downstream, and the action is the lost GPU's (power-cycle, D3cold), not the BIOS's BAR settings that stage 0x22
    alone is told (a real-logs pass: neither kernel line was read). The poll before the verdict is no event."""
    text = ("[   52.597123] nvidia 0000:01:00.0: not ready 32767ms after resume; waiting\n"
            "[   87.412701] nvidia 0000:01:00.0: not ready 65535ms after resume; giving up\n"
            "[   87.412759] nvidia 0000:01:00.0: Unable to change power state from D3cold to D0, device inaccessible\n"
            "[   87.473074] NVRM: GPU 0000:01:00.0: RmInitAdapter failed! (0x22:0x56:667)\n"
            "[   87.473112] NVRM: GPU 0000:01:00.0: rm_init_adapter failed, device minor number 0\n")
    (inc,) = run(pipeline, text, host="node05")
    assert (inc["category"], inc["severity"]) == ("gpu_off_bus", "critical")
    assert (inc["initiator"]["kind"], inc["initiator"]["device"]) == ("gpu_off_bus", "0000:01:00.0"), inc["initiator"]
    assert {x["rule"] for x in inc["evidence"]} == {"gpu_fall.explains_probe_failure"}, inc["evidence"]
    assert "d3cold_allowed" in inc["next_action"] and "Resizable BAR" not in inc["next_action"], inc["next_action"]


@pytest.mark.parametrize("license_line", [
    # nvidia-smi -q of the guest (NVIDIA/gpu-operator#628), which prints no time: the poll's
    "        License Status                    : Unlicensed (Restricted)\n",
    # the guest's licensing daemon (NVIDIA/nvidia-docker#1787), hours before
    "2027-01-15T05:58:03Z node05 nvidia-gridd: Failed to acquire license from XXX.XXX.XXX.XXX\n",
])
def test_an_unlicensed_vgpu_explains_cuda_finding_its_gpu_unavailable(pipeline, license_line):
    """A vGPU VM without a license is restricted: CUDA finds the healthy GPU "busy or unavailable" (Azure/AKS#4870,
    DDMAL/Rodan#1332). The license is the initiator and its action licenses the guest, not the CUDA error's "an
    Exclusive_Process GPU or a GPU that needs a reset" (a real-logs pass: no license line was read)."""
    text = license_line + "RuntimeError: CUDA error: CUDA-capable device(s) is/are busy or unavailable\n"
    (inc,) = run(pipeline, text, host="node05")
    assert (inc["category"], inc["initiator"]["kind"]) == ("driver", "driver"), inc["initiator"]
    assert {x["rule"] for x in inc["evidence"]} == {"vgpu_license.explains_cuda_unavailable"}, inc["evidence"]
    assert "ClientConfigToken" in inc["next_action"] and "Exclusive_Process" not in inc["next_action"]


def test_a_vgpu_in_its_license_grace_period_is_a_warning_that_explains_nothing(pipeline):
    """"Unlicensed (Unrestricted)" is the grace period: a warning of its own, and no CUDA error is put on it by the
    license rule."""
    grace = "        License Status                    : Unlicensed (Unrestricted)\n"
    (alone,) = run(pipeline, grace, host="node05")
    assert (alone["severity"], alone["category"]) == ("warning", "driver")
    incs = run(pipeline, grace + "RuntimeError: CUDA error: CUDA-capable device(s) is/are busy or unavailable\n",
               host="node05")
    assert not any(x["rule"] == "vgpu_license.explains_cuda_unavailable" for i in incs for x in i["evidence"])


def test_the_vgpu_managers_failure_explains_the_hosts_vgpu_start_failure(pipeline):
    """The host's vGPU manager could not set up the VM's vGPU (mbilker/vgpu_unlock-rs#5's vmiop_log line), and
    nvidia-vgpu-vfio's start of it failed with the manager's status 0x1 (DualCoder/vgpu_unlock#95's kernel line, here
    in the same journal): one incident named by the manager's reason, not two suspects or "read the vGPU manager's
    lines" (a real-logs pass: the manager's line was not read)."""
    text = ("Apr 06 13:46:20 pve nvidia-vgpu-mgr[25539]: error: vmiop_log: (0x0): init_device_instance failed for"
            " inst 0 with error 1 (error setting vGPU configuration information f>\n"
            "Apr 06 13:46:21 pve kernel: [nvidia-vgpu-vfio] 00eac34d-8b67-401e-9faa-feb8f2456c29: start failed."
            " status: 0x1\n")
    (inc,) = run(pipeline, text, host="pve")
    assert {x["rule"] for x in inc["evidence"]} == {"vgpu_manager.explains_vfio_start_failure"}, inc["evidence"]
    assert "init_device_instance error 1" in inc["next_action"], inc["next_action"]


def test_nvidia_imex_ctls_failed_probe_says_the_daemon_did_not_answer_not_that_an_export_failed(pipeline):
    """A ComputeDomain daemon pod's startup probe (nvidia-imex-ctl) that could not query the IMEX daemon
    (kubernetes-sigs/dra-driver-nvidia-gpu#333: the tool tried IPv6 on a node without it; #636: its exit status):
    no event before. Now one fabric incident that quotes the tool's line as the tool's, says the daemon did not
    answer, and does not say the IMEX daemons could not export or import memory (the export errors' explanation)."""
    line = ("Startup probe failed: Query Status returned error code: 14 - failed to connect to all addresses; last "
            "error: UNKNOWN: ipv6:%5B::%5D:50005: Address family not supported by protocol")
    (inc,) = run(pipeline, line, host="gb200-n02")
    assert (inc["category"], inc["pattern"]) == ("fabric_manager", "platform.fabric_manager"), inc
    assert inc["explanation"].startswith("nvidia-imex-ctl on gb200-n02 could not query the IMEX daemon: “Startup"), \
        inc["explanation"]
    assert "its IMEX daemon did not answer" in inc["explanation"] and "export" not in inc["explanation"]
    assert "nvidia-imex-ctl -q -i 127.0.0.1 50005" in inc["next_action"] and "no GPU or NVLink fault" in \
        inc["next_action"]


HOST_STALL_TIMEOUT = ("2026-12-01T03:{m}:15+00:00 {host} python[4181]: [rank{r}]:[E1201 03:{m}:15.000000000 "
                      "ProcessGroupNCCL.cpp:616] [Rank {r}] Watchdog caught collective operation timeout: WorkNCCL("
                      "SeqNum=9001, OpType=ALLREDUCE, NumelIn=8, NumelOut=8, Timeout(ms)=600000) ran for 600089 "
                      "milliseconds before timing out.")


@pytest.mark.parametrize("stall", [
    # Zygo/bees#191's line; deepspeedai/DeepSpeed#925's soft lockup
    "2026-12-01T03:10:40+00:00 node05 kernel: rcu: INFO: rcu_sched self-detected stall on CPU",
    "2026-12-01T03:10:40+00:00 node05 kernel: watchdog: BUG: soft lockup - CPU#7 stuck for 23s! [python:4181]",
    # aws/aws-parallelcluster#1150's NFS server
    "2026-12-01T03:10:40+00:00 node05 kernel: nfs: server 10.2.80.41 not responding, still trying",
])
def test_a_host_that_stalled_while_the_collective_ran_is_the_initiator_of_its_ranks_timeouts(pipeline, stall):
    """The host of two ranks stalled 25 s into their collective (a CPU stuck in the kernel, RCU's stall detector, an
    NFS server that stopped answering its reads and checkpoint writes); its ranks and a peer host's rank timed out on
    that collective 10 minutes later. The kernel's line was a "downstream" reporter of an NCCL hang with no
    initiator (a real-logs pass): the stall is the initiator, the three timeouts its downstream, by
    host_stall.explains_rank_timeouts."""
    node05 = "\n".join([stall] + [HOST_STALL_TIMEOUT.format(m=20, host="node05", r=r) for r in (0, 1)])
    node06 = HOST_STALL_TIMEOUT.format(m=20, host="node06", r=2)
    incs = _hosts(pipeline, {"node05": node05, "node06": node06})
    (inc,) = [i for i in incs if i["status"] != "superseded"]
    assert (inc["initiator"]["host"], inc["initiator"]["fault"].split(".")[0]) == ("node05", "host")
    assert inc["initiator"]["kind"] == "other" and inc["category"] == "other"
    assert sorted((d["host"], d["rank"]) for d in inc["downstream"]) == [("node05", 0), ("node05", 1), ("node06", 2)]
    assert "host_stall.explains_rank_timeouts" in {x["rule"] for x in inc["evidence"]}


def test_a_host_stall_long_before_the_collective_began_explains_no_timeout(pipeline):
    """The rule's window: a soft lockup an hour before the collective began is no cause of its timeout."""
    stall = "2026-12-01T02:05:40+00:00 node05 kernel: watchdog: BUG: soft lockup - CPU#7 stuck for 23s! [python:4181]"
    text = "\n".join([stall] + [HOST_STALL_TIMEOUT.format(m=20, host="node05", r=r) for r in (0, 1)])
    incs = [i for i in run(pipeline, text, host="node05") if i["status"] != "superseded"]
    assert "host_stall.explains_rank_timeouts" not in {x["rule"] for i in incs for x in i["evidence"]}
    assert {i["initiator"]["fault"] for i in incs if i["category"] == "other"} == {"host.cpu_lockup"}


def test_the_oom_killers_action_names_the_process_it_killed_from_its_later_line(pipeline):
    """The kernel prints "<comm> invoked oom-killer" first and "Out of memory: Killed process <pid> (<comm>)" after
    it (mm/oom_kill.c): the first line named the incident, and its action's "killed a process — python (pid 89746)"
    lost the process, which only the later line of the same incident gives (equinor/ert#7797's dmesg, a real-logs
    pass). NVIDIA/DALI#585's start line, intel/platform-resource-manager#42's kill of the job's python."""
    text = "\n".join([
        "[Thu Mar 14 01:57:54 2019] python invoked oom-killer: gfp_mask=0x14000c0(GFP_KERNEL), nodemask=(null), "
        "order=0, oom_score_adj=829",
        "[Thu Mar 14 01:57:55 2019] Killed process 89746 (python) total-vm:118026216kB, anon-rss:109819332kB, "
        "file-rss:3324kB, shmem-rss:0kB"])
    (inc,) = run(pipeline, text, host="ws01")
    assert (inc["initiator"]["fault"], len(inc["initiator"]["events"])) == ("host.oom_kill", 2)
    assert inc["start"] == "2019-03-14T01:57:54.000000Z"
    assert "killed a process — python (pid 89746) — a rank killed so" in inc["next_action"], inc["next_action"]


def test_an_oom_kill_of_another_program_alone_on_its_host_is_no_incident(pipeline):
    """equinor/ert#7797's dmesg: the OOM killer, invoked by "pool", killed perl, and nothing else is logged. No
    training job's process was killed (``model.spares_job``), so it is no fault of a GPU job: it was an error incident,
    paged, whose action said "a rank killed so leaves the others of its job waiting" (a defect pass). Kubernetes'
    node-problem-detector reads an OOM kill as a temporary event, no node condition (config/kernel-monitor.json). The
    lines are events (the lake keeps them) and context: beside a fault of the host they are that incident's."""
    text = "\n".join([
        "2024-04-29T14:55:41,678628+02:00 pool invoked oom-killer: gfp_mask=0x6200ca(GFP_HIGHUSER_MOVABLE), order=0, "
        "oom_score_adj=0",
        "2024-04-29T14:55:41,679700+02:00 Out of memory: Killed process 1440763 (perl) total-vm:87033376kB, "
        "anon-rss:60356340kB, file-rss:0kB, shmem-rss:0kB, UID:21417 pgtables:169956kB oom_score_adj:0"])
    assert run(pipeline, text, host="ws01") == []
    # beside a GPU that fell off the bus three seconds later (the catalog's Xid 79 line): that GPU's incident, the kill
    # its context
    xid79 = "2024-04-29T14:55:44,000000+02:00 NVRM: Xid (PCI:0000:3b:00): 79, pid=0, GPU has fallen off the bus."
    (inc,) = run(pipeline, text + "\n" + xid79, host="ws01")
    assert (inc["category"], inc["initiator"]["device"], inc["downstream"]) == ("gpu_off_bus", "0000:3b:00.0", [])
    assert [c["signature"] for c in inc["context"]] == ["host.oom_kill", "host.oom_kill"]


def test_the_oom_killers_summary_names_the_incident_before_its_start_line(pipeline):
    """From Linux 4.19 the OOM killer prints "<comm> invoked oom-killer", then its one-line summary
    "oom-kill:constraint=CONSTRAINT_MEMCG,…,oom_memcg=<cgroup>,…,task=<comm>,pid=<pid>" and then "Memory cgroup out of
    memory: Killed process …", all in one second (mm/oom_kill.c; NVIDIA/DALI#585's start line, leptonai/gpud#70's
    summary). The start line, first and of equal severity, named the incident with the generic action; the summary
    says whose limit ran out (a leftovers pass). The start line is a warning now: the summary names the incident, its
    action the cgroup's limit, and the start line's process is still one of its lines."""
    stamp = "[Thu Aug 29 06:58:55 2024] "
    text = "\n".join(stamp + ln for ln in [
        "python invoked oom-killer: gfp_mask=0x14000c0(GFP_KERNEL), nodemask=(null), order=0, oom_score_adj=829",
        "oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=cri-containerd-ec9ee266.scope,mems_allowed=0-1,"
        "oom_memcg=/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-podeded8c65.slice,task_memcg=/kubepods"
        ".slice/kubepods-burstable.slice/kubepods-burstable-podeded8c65.slice/cri-containerd-ec9ee266.scope,"
        "task=pt_main_thread,pid=461754,uid=0",
        "Memory cgroup out of memory: Killed process 461754 (pt_main_thread) total-vm:812044kB, anon-rss:518420kB, "
        "file-rss:1240kB, shmem-rss:0kB"])
    (inc,) = run(pipeline, text, host="gpu-a")
    assert (inc["initiator"]["fault"], len(inc["initiator"]["events"])) == ("host.oom_kill_summary", 3)
    assert (inc["severity"], inc["category"]) == ("error", "host_memory")
    assert inc["next_action"].startswith("The kernel's OOM killer killed pt_main_thread (pid 461754) because a memory "
                                         "cgroup (/kubepods.slice/"), inc["next_action"]


def test_a_rank_whose_checkpoint_write_failed_explains_its_peers_timeouts(pipeline):
    """torch.save on a full file system: "PytorchStreamWriter failed writing file data/3: file write failed" in a
    DeepSpeed ZeRO save (zai-org/ChatGLM-6B#1166; h2oai/h2o-llmstudio#214: the output volume full). No event before
    (a real-logs pass); the rank dies of it and its peers time out in the next collective: one incident, the failed
    write its initiator, by cuda_error.explains_nccl."""
    text = "\n".join([
        "2026-12-01T03:10:00+00:00 node09 python[4180]: [rank0]: RuntimeError: [enforce fail at inline_container.cc:471]"
        " . PytorchStreamWriter failed writing file data/3: file write failed",
        HOST_STALL_TIMEOUT.format(m=20, host="node09", r=1).replace(":15+00:00", ":01+00:00")
        .replace("03:20:15.000000000", "03:20:01.000000000")])
    (inc,) = run(pipeline, text, host="node09")
    assert (inc["initiator"]["fault"], inc["category"]) == ("torch.checkpoint_write_failed", "other")
    assert [d["rank"] for d in inc["downstream"]] == [1]
    assert {x["rule"] for x in inc["evidence"]} == {"cuda_error.explains_nccl"}
    assert "not a GPU fault" in inc["next_action"] and "data/3" in inc["next_action"]


def test_nccl_s_teardown_failure_is_explained_by_the_warn_before_it(pipeline):
    """pytorch/pytorch#155740 (a real-logs pass): as PyTorch destroyed its process groups, each rank's NCCL warned
    "Cuda failure 1 'invalid argument'" (transport/p2p.cc) and then "commReclaim: cleanup comm … rank N failed in
    destroy/abort, error 1". The teardown failure is the WARN's effect, not a second fault: the ranks' one CUDA error
    is what is left, and its action for 'invalid argument' on every rank at once applies (it was "no single culprit,
    collect the kernel log"). A teardown failure with no WARN before it stays a fault of its own."""
    lines = []
    for r in (0, 1):
        head = f"[2025-06-17 21:49:04] node01:335514{6 + r}:335514{6 + r} [{r}]"
        lines += [f"{head} transport/p2p.cc:1128 NCCL WARN Cuda failure 1 'invalid argument'",
                  f"{head} init.cc:2143 NCCL WARN commReclaim: cleanup comm 0x9801e1{r} rank {r} failed in "
                  "destroy/abort, error 1"]
    (inc,) = run(pipeline, "\n".join(lines), host="node01")
    assert "Every candidate reports the same fault (nccl.cuda_failure)" in inc["next_action"], inc["next_action"]
    assert "On every rank at once" in inc["next_action"], inc["next_action"]
    assert {x["rule"] for x in inc["evidence"]} == {"nccl_warn.explains_its_teardown_failure"}, inc["evidence"]
    (alone,) = run(pipeline, lines[1], host="node01")
    assert alone["evidence"] == [] and "communicator 0x9801e10 of rank 0" in alone["next_action"], alone
    # the rank's own GPU's WARN only (same_gpu): another job's (pid 1000, GPU 0) WARN 20 s before job B's (pid 2000,
    # GPU 4) teardown failure explained it (a break-it pass)
    two_jobs = ["[2025-06-17 21:49:04] node01:1000:1000 [0] transport/net_ib.cc:1294 NCCL WARN NET/IB : Got "
                "completion from peer 10.0.0.2<38447> with status=12 opcode=0 len=0 vendor err 129 (Recv)",
                "[2025-06-17 21:49:24] node01:2000:2000 [4] init.cc:2143 NCCL WARN commReclaim: cleanup comm "
                "0x98014e10 rank 4 failed in destroy/abort, error 1"]
    assert all(x["rule"] != "nccl_warn.explains_its_teardown_failure"
               for i in run(pipeline, "\n".join(two_jobs), host="node01") for x in i["evidence"])


def test_a_host_fault_beside_a_host_initiator_is_in_the_incident(pipeline):
    """A verdict whose initiator is the host itself (Fabric Manager's configuration error: the subject (host, None,
    None)) left the host's other lines out whole: an NVMe removal 34 s later was in no incident at all, listed
    nowhere (a break-it pass: 24 of the benchmark mix's 484 faults, a kernel Oops and an APEI hardware error among
    them). It is in the incident, on the same host."""
    text = "\n".join([
        "2026-11-30T03:12:01.270000+00:00 node07 kernel: fabric manager config file item: FABRIC_NODE_CONFIG_FILE "
        "has an invalid value",
        "2026-11-30T03:12:35.650000+00:00 node07 kernel: nvme nvme0: Removing after probe failure status: -5"])
    (inc,) = run(pipeline, text)
    assert (inc["pattern"], inc["category"]) == ("platform.fabric_manager", "fabric_manager")
    assert [(d["host"], d["relation"]) for d in inc["downstream"]] == [("node07", "same_host")]
    held = set(inc["initiator"]["events"]) | {m for d in inc["downstream"] for m in d["events"]}
    assert len(held) == 2 and not set(inc["initiator"]["events"]) & {m for d in inc["downstream"] for m in d["events"]}


def test_a_gpu_lost_minutes_before_a_serving_engine_died_is_its_initiator(pipeline):
    """vLLM's engine core waits VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS (300 s) for a worker before "RPC call to
    sample_tokens timed out" and "EngineCore encountered a fatal error" (vllm-project/vllm#37250,
    local-inference-lab/vllm#827; no event before, a real-logs pass): after a GPU of the host fell off the bus five
    minutes earlier, the engine's end is that GPU's report (one incident, the GPU its initiator), past
    device_fault.explains_nccl's 120 s. Without the Xid the engine's death is named on its own: the engine's, with
    its own next action, and no GPU to drain. SGLang's scheduler death likewise."""
    xid = ("2026-12-01T03:10:00+00:00 node21 kernel: NVRM: Xid (PCI:0000:18:00): 79, pid=4182, name=python3, "
           "GPU has fallen off the bus.")
    engine = [
        "2026-12-01T03:15:07+00:00 node21 python[413]: (EngineCore_DP0 pid=413) ERROR 12-01 03:15:07 [core.py:710] "
        "EngineCore encountered a fatal error.",
        "2026-12-01T03:15:07+00:00 node21 python[413]: (EngineCore_DP0 pid=413) ERROR 12-01 03:15:07 [core.py:710] "
        "TimeoutError: RPC call to sample_tokens timed out."]
    (inc,) = run(pipeline, "\n".join([xid, *engine]), host="node21")
    assert (inc["category"], inc["initiator"]["xid"]) == ("gpu_off_bus", 79)
    assert {x["rule"] for x in inc["evidence"]} == {"gpu_fault.explains_later_host_reports"}
    (alone,) = run(pipeline, engine[0], host="node21")
    assert (alone["severity"], alone["category"], alone["initiator"]["device_type"]) == ("error", "application", None)
    assert alone["next_action"].startswith("The vLLM engine core died of the exception its traceback names")
    assert "Do not drain the GPUs for this line alone" in alone["next_action"]
    sglang = ("2026-12-01T03:15:07+00:00 node21 python[413]: [2026-12-01 03:15:07 TP0] Scheduler hit an exception: "
              "Traceback (most recent call last):")
    (inc,) = run(pipeline, "\n".join([xid, sglang]), host="node21")
    assert (inc["category"], inc["initiator"]["xid"]) == ("gpu_off_bus", 79)
    # vLLM V1's executor on a worker whose process ended (vllm-project/vllm#20657)
    proc = ("2026-12-01T03:12:40+00:00 node21 python[413]: ERROR 12-01 03:12:40 [multiproc_executor.py:140] Worker "
            "proc VllmWorker-2 died unexpectedly, shutting down executor.")
    (inc,) = run(pipeline, "\n".join([xid, proc]), host="node21")
    assert (inc["category"], inc["initiator"]["xid"]) == ("gpu_off_bus", 79)
    # SGLang's watchdog fires after --watchdog-timeout (300 s) with no progress (sgl-project/sglang#3752): the lost
    # GPU's report too; alone a hang with no culprit named
    watchdog = ["2026-12-01T03:15:07+00:00 node21 python[413]: [2026-12-01 03:15:07 TP%d] Watchdog timeout "
                "(self.watchdog_timeout=300)" % r for r in (0, 1)]
    (inc,) = run(pipeline, "\n".join([xid, *watchdog]), host="node21")
    assert (inc["category"], inc["initiator"]["xid"]) == ("gpu_off_bus", 79)
    (hang,) = run(pipeline, "\n".join(watchdog), host="node21")
    assert (hang["category"], hang["initiator"]["device_type"], hang["confidence"]) == ("nccl_hang", None, 0.3)
    # an hour later it is another failure of the engine, not the lost GPU's report
    late = sglang.replace("03:15:07", "04:15:07")
    assert {i["category"] for i in run(pipeline, "\n".join([xid, late]), host="node21")} == {
        "gpu_off_bus", "application"}


def test_a_vllm_engine_core_ending_alone_is_no_incident(pipeline):
    """"Engine core proc EngineCore_DP0 died unexpectedly, shutting down client." is printed at every normal exit of
    an offline vLLM script by several releases (vllm-project/vllm#32468, #31681; PR #36270 removed it): alone no
    incident of warning or above. vLLM V0's worker monitor reports its own SIGTERM of the workers at shutdown (-15,
    vllm-project/vllm#6145) the same way; a -11 is a crash."""
    died = ("2026-12-01T03:15:07+00:00 node21 python[413]: ERROR 12-01 03:15:07 [core_client.py:564] Engine core proc "
            "EngineCore_DP0 died unexpectedly, shutting down client.")
    term = ("2026-12-01T03:15:07+00:00 node21 python[413]: ERROR 12-01 03:15:07 multiproc_worker_utils.py:120] Worker "
            "VllmWorkerProcess pid 382811 died, exit code: -15")
    assert [i for i in run(pipeline, "\n".join([died, term]), host="node21")
            if i["severity"] in ("warning", "error", "critical")] == []
    (crash,) = run(pipeline, term.replace("-15", "-11"), host="node21")
    assert (crash["severity"], crash["category"]) == ("error", "application")
    assert "segmentation fault" in crash["next_action"]


def test_rays_memory_monitor_explains_the_workers_it_killed(pipeline):
    """Ray's memory monitor kills a worker when its node's host memory passes Ray's threshold (hiyouga/EasyR1#185,
    vllm-project/vllm#2669; no event before, a real-logs pass): its summary names the node by address, as Ray's
    "ip=" prefix names the node of a worker's lines, and the NCCL error of a peer worker of that node after it is its
    report: one incident of the host's memory, no GPU blamed."""
    oom = ("(raylet) [2026-12-01 03:10:00,117 E 135782 135782] (raylet) node_manager.cc:3069: 1 Workers (tasks / "
           "actors) killed due to memory pressure (OOM), 0 Workers crashed due to other reasons at node (ID: "
           "351e406b196f66bb45eaad02a3b8b4725babfa8cc12949432f7ad7d8, IP: 172.26.143.83) over the last time period.")
    nccl = ("(RayWorkerWrapper pid=1100, ip=172.26.143.83) ERROR 12-01 03:10:02 [multiproc_executor.py:597] "
            "RuntimeError: NCCL error: remote process exited or there was a network error")
    (inc,) = run(pipeline, "\n".join([oom, nccl]), host="driver")
    assert (inc["category"], inc["initiator"]["fault"], inc["initiator"]["host"]) == (
        "host_memory", "ray.memory_monitor_kill", "172.26.143.83")
    assert {x["rule"] for x in inc["evidence"]} == {"host_oom.explains_job_failure"}
    assert "Not a GPU fault" in inc["next_action"]


def test_an_nvls_failure_after_the_driver_s_fabric_state_went_out_of_sync_is_downstream_of_it(pipeline):
    """NVIDIA/nvshmem#40 (H200): the kernel says the driver's cached NVLink fabric state is out of sync (Fabric
    Manager restarted without a GPU reset), then NVSHMEM's NVLS team cannot map its heap (cuMemMap 401). One
    incident: the fabric state (Fabric Manager's side) starts it, NVSHMEM's failure is downstream."""
    text = "\n".join([
        "[1891044.581319] NVRM: nvCheckOkFailedNoLog: Check failed: NVLink fabric state cached by the driver is out of "
        "sync [NV_ERR_FABRIC_STATE_OUT_OF_SYNC] (0x00000087) returned from status @ mem_multicast_fabric.c:2917",
        "/opt/nvshmem/src/host/team/team_internal_nvls.cpp:254: non-zero status: 401 cuMemMap failed to map "
        "274877906944 bytes handle at address: 0x1320000000 offset 0 on device 7",
    ])
    (inc,) = run(pipeline, text)
    assert inc["category"] == "fabric_manager" and inc["severity"] == "error"
    assert (inc["initiator"]["host"], inc["initiator"]["kind"]) == ("node07", "fabric_manager")
    assert [(d["kind"], d["gpu_index"], d["relation"]) for d in inc["downstream"]] == [("nccl_error", 7, "same_host")]
    assert "nvidia-smi -r" in inc["next_action"]


def test_the_imex_daemon_losing_a_peer_node_blames_the_peer_not_this_hosts_fabric_manager(pipeline):
    """kubernetes-sigs/dra-driver-nvidia-gpu#1447 (a real-logs pass): a peer IMEX daemon announced its shutdown and
    this node's daemon then logged "[ERROR] … Node disconnect event detected for node 1 with address …". Read as
    Fabric Manager's error line, the incident was an error whose explanation said this host's NVLink fabric
    management was the cause; the peer's going is the cause, a warning here, and the advice is the peer's."""
    notice = ("[Sep 01 2026 09:11:40] [INFO] [tid 937292] Received notification of shutdown from node 1 - "
              "compute-domain-daemon-0001")
    lost = ("[Sep 01 2026 09:11:40] [ERROR] [tid 937292] Node disconnect event detected for node 1 with address "
            "compute-domain-daemon-0001")
    (inc,) = run(pipeline, notice + "\n" + lost, host="gb200-n03")
    assert (inc["category"], inc["severity"]) == ("fabric_manager", "warning"), inc
    assert "the cause is its IMEX peer, node 1: it announced its own shutdown" in inc["explanation"], \
        inc["explanation"]
    assert "management of this host is the cause" not in inc["explanation"], inc["explanation"]
    assert "node 1 of its domain (compute-domain-daemon-0001)" in inc["next_action"], inc["next_action"]
    # without the peer's notice the cause is still the peer, said without claiming it announced anything
    (inc,) = run(pipeline, lost, host="gb200-n03")
    assert "its daemon stopped, restarted or became unreachable" in inc["explanation"], inc["explanation"]
    # the notice alone is information: no incident
    assert run(pipeline, notice, host="gb200-n03") == []


def test_nccls_invalid_device_ordinal_is_the_launchs_gpu_visibility_not_a_gpu_fault(pipeline):
    """NVIDIA/nccl#1948 (a real-logs pass): "transport/p2p.cc:275 NCCL WARN Cuda failure 101 'invalid device ordinal'"
    with each Slurm task given one GPU (--gpus-per-task=1; ACEsuit/mace#435 failed alike until --gpus-per-node). The
    incident's advice was the generic one of a local GPU error (read the kernel log for an Xid); it is the launch's
    GPU visibility, said so with the settings that fix it."""
    line = "holygpu8a25204:804052:804052 [0] transport/p2p.cc:275 NCCL WARN Cuda failure 101 'invalid device ordinal'"
    (inc,) = run(pipeline, line, host="holygpu8a25204")
    assert "named a GPU this process cannot see" in inc["next_action"], inc["next_action"]
    assert "not a GPU fault" in inc["next_action"] and "--gpus-per-node" in inc["next_action"], inc["next_action"]


SHM_PERMISSION = (  # NVIDIA/nccl#328: NCCL 2.4's SYSCHECK line names the cause, the segment line after it does not
    "node08:27106:27302 [0] include/shm.h:27 NCCL WARN Call to shm_open failed : Permission denied\n"
    "node08:27106:27302 [0] NCCL INFO include/shm.h:41 -> 2\n"
    "node08:27106:27302 [0] include/shm.h:48 NCCL WARN Error while creating shared memory segment "
    "nccl-shm-recv-b7948f403864987a-0-3-0 (size 4460544)\n")
SHM_FULL = (  # NVIDIA/nccl#342: the same segment line after a full /dev/shm's posix_fallocate
    "node08:27106:27302 [0] include/shm.h:28 NCCL WARN Call to posix_fallocate failed: No space left on device\n"
    "node08:27106:27302 [0] include/shm.h:48 NCCL WARN Error while creating shared memory segment "
    "nccl-shm-recv-250a7cc850ba9298-0-1-3 (size 9637888)\n")


@pytest.mark.parametrize("reverse", [False, True], ids=["as-logged", "reversed"])
def test_a_shm_segment_line_takes_its_cause_from_the_line_that_says_why(pipeline, reverse):
    """Before NCCL 2.12 the "Error while creating shared memory segment … (size …)" line names no cause; the
    SYSCHECK line before it does. After shm_open's "Permission denied" the incident's action is /dev/shm's
    permissions, not a larger /dev/shm (NVIDIA/nccl#328: chmod fixed it; a real-logs pass found the advice was
    --shm-size); after posix_fallocate's "No space left on device" it is the size. Whichever line comes first
    (``initiator_event`` ranks the cause's role above the segment line's), and one incident for the rank."""
    for text, says in ((SHM_PERMISSION, "permission denied, not a full /dev/shm"),
                       (SHM_FULL, "the file system is full or too small")):
        lines = text.splitlines(keepends=True)
        (inc,) = run(pipeline, "".join(reversed(lines)) if reverse else text, host="node08")
        assert inc["category"] == "nccl_software" and inc["severity"] == "error"
        assert inc["initiator"]["gpu_index"] == 0 and inc["initiator"]["host"] == "node08"
        assert says in inc["next_action"], inc["next_action"]


def test_no_single_culprit_of_a_few_kinds_of_fault_gives_each_kinds_own_action(pipeline):
    """Two NVSwitches of one host with two fatal SXids in one second (23001, 11001), or two GPUs of one host with Xid 79
    and Xid 48: no single culprit, and the next action was only "collect the kernel log", each fault's own action lost
    (a real-logs pass on Fabric Manager and NVSwitch lines). Each kind's action is listed, then what to collect; one
    kind on several subjects keeps "Every candidate reports the same fault"."""
    from correlate.incident import COLLECT_HOSTS_NAMED

    sxids = ("[2026-07-15T04:18:55.513286+00:00] nvidia-nvswitch0: SXid (PCI:0000:59:00.0): 23001, Fatal, Link 12 "
             "Always Fatal\n"
             "[2026-07-15T04:18:55.513290+00:00] nvidia-nvswitch1: SXid (PCI:0000:5a:00.0): 11001, Fatal, ingress "
             "invalid command")
    xids = ("[2026-07-15T04:18:55.513286+00:00] NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python, GPU has "
            "fallen off the bus.\n"
            "[2026-07-15T04:18:55.513290+00:00] NVRM: Xid (PCI:0000:5e:00): 48, pid=1234, name=python, An "
            "uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at partition 6, "
            "subpartition 0.")
    for text, names in ((sxids, ["SXid 23001 (", "SXid 11001 ("]), (xids, ["Xid 79: Drain node", "Xid 48: Drain"])):
        (inc,) = run(pipeline, text, host="nodeb")
        assert len(inc["initiator"]["candidates"]) == 2, inc["initiator"]
        action = inc["next_action"]
        assert action.startswith("No single culprit: 2 kinds of fault, each with its own action."), action
        assert all(n in action for n in names) and action.endswith(COLLECT_HOSTS_NAMED), action
    (inc,) = run(pipeline, sxids.replace("11001, Fatal, ingress invalid command", "23001, Fatal, Link 3 Always Fatal"),
                 host="nodeb")
    assert inc["next_action"].startswith("Every candidate reports the same fault (SXid 23001)"), inc["next_action"]


def test_an_mmu_fault_says_a_driver_update_can_be_its_cause(pipeline):
    """Xid 31 is the program's own fault in most cases, but a known-good program that faults right after a driver
    update is the driver's (NVIDIA's WORKFLOW_XID_31: "If known good APP: REPORT_ISSUE"): an RTX 5070 Ti's Xid 31
    FAULT_PDE under the 595.71.05 open module only (NVIDIA/open-gpu-kernel-modules#1030, real line), a fleet's on
    610.57.04 only (#1370). The next step said "debug the app" alone (a real-logs pass); the driver comparison is in
    it now, and the GPU is still not to be drained."""
    line = ("[  365.969681] NVRM: Xid (PCI:0000:01:00): 31, pid=13705, name=UnrealEditor, channel 0x0000000c, intr "
            "00000000. MMU Fault: ENGINE GRAPHICS GPC2 GPCCLIENT_PROP_0 faulted @ 0x0_00000000. Fault is of type "
            "FAULT_PDE ACCESS_TYPE_VIRT_READ")
    (inc,) = run(pipeline, line)
    assert inc["category"] == "application" and inc["severity"] == "info", inc
    assert "right after a driver update" in inc["next_action"], inc["next_action"]
    assert "compare the driver version with the release before it" in inc["next_action"]
    assert inc["next_action"].endswith("Do not drain or RMA the GPU for these Xids."), inc["next_action"]


def test_an_mpi_launchers_rank_label_is_a_training_lines_rank_not_a_kernel_lines(pipeline):
    """Under ``mpirun --tag-output`` every rank prints "Horovod has been shut down" with only Open MPI's "[1,N]<stderr>:"
    before it: the ranks were one event of no rank (horovod/horovod#3412, a real-logs pass). Each rank's line is its
    own event with its rank; a kernel line the same launcher printed (``mpirun dmesg``) is no rank's."""
    shut = ("Horovod has been shut down. This was caused by an exception on one of the ranks or an attempt to "
            "allreduce, allgather or broadcast a tensor after one of the ranks finished execution.")
    text = "\n".join([f"[1,0]<stderr>:{shut}", f"[1,1]<stderr>:{shut}",
                      "[1,1]<stdout>:[Mon Nov 30 03:12:01 2026] NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python, "
                      "GPU has fallen off the bus."])
    seg = Segment(data=text.encode(), origin="t:node07", stream="node07", host="node07", ref_ts=T0, ref_basis="kafka",
                  ingest_ts=T0)
    ev = pipeline.run(Decoded(segments=[seg])).events.to_pylist()
    assert sorted((e["signature"], e["rank"], e["count"]) for e in ev) == [
        ("horovod.shut_down", 0, 1), ("horovod.shut_down", 1, 1), ("xid", None, 1)], ev


def test_an_mpi_rank_label_before_ncclS_own_line_is_its_job_rank_not_its_communicator_rank(pipeline):
    """NCCL's own "host:pid:tid [dev]" line behind Open MPI's "[1,3]<stderr>:" is of a communicator in which the
    process may have another rank (Init COMPLETE's "rank 7"): the MPI rank is kept as ``details.global_rank``, not
    as the event's rank (a break-it pass: "nccl.socket.peer_lost rank=3"); its GPU places it."""
    text = ("[1,3]<stderr>:node07:4821:4890 [1] misc/socket.cc:538 NCCL WARN Net : Call to recv from 10.0.0.2<43210> "
            "failed : Connection reset by peer")
    seg = Segment(data=text.encode(), origin="t:node07", stream="node07", host="node07", ref_ts=T0, ref_basis="kafka",
                  ingest_ts=T0)
    (e,) = pipeline.run(Decoded(segments=[seg])).events.to_pylist()
    assert (e["rank"], e["gpu_index"], orjson.loads(e["details"]).get("global_rank")) == (None, 1, 3), e


def test_one_sxid_from_its_data_line_and_its_message_line_is_one_kind_of_fault(pipeline):
    """SXid 12028 of one NVSwitch read from its ``Data {…}`` line (signature ``sxid.data``) and of another from its
    ``Non-fatal, Link 62 …`` line (``sxid``) beside an Xid 94 is two kinds of fault, not three: the next action gave
    SXid 12028's action twice (corpus 002, a fresh user's trial). Two NVSwitches' SXid 12028 read from the two line
    forms alone is one fault of all, as the same line form on both is."""
    sxids = ("[Mon Feb 2 22:52:45 2026] nvidia-nvswitch1: SXid (PCI:0000:06:00.0): 12028, Data {0x000001c0, "
             "0x000e265f, 0x00000500, 0x00000040, 0x00000000, 0x00008000, 0x5a000100, 0x00000000, 0x00000000}\n"
             "[Mon Feb 2 22:52:45 2026] nvidia-nvswitch2: SXid (PCI:0000:07:00.0): 12028, Non-fatal, Link 62 egress "
             "non-posted PRIV error (First)")
    xid = "\n[Mon Feb 2 22:52:45 2026] NVRM: Xid (PCI:0000:cb:00): 94, pid=538578, name=python, channel 0x0000000b"
    (inc,) = run(pipeline, sxids + xid, host="nodeb")
    action = inc["next_action"]
    assert action.startswith("No single culprit: 2 kinds of fault, each with its own action."), action
    assert action.count("SXid 12028 (") == 1 and "Xid 94: " in action, action
    (inc,) = run(pipeline, sxids, host="nodeb")
    assert inc["next_action"].startswith("Every candidate reports the same fault (SXid 12028)"), inc["next_action"]


def test_a_link_down_at_both_ends_is_the_link_and_its_next_poll_a_recurrence(pipeline, tmp_path):
    """Two bridged GPUs (``nvidia-smi nvlink -R``: GPU 0's link 1 reaches 0000:41:00.0's link 1 and back) whose
    ``nvlink -s`` polls (NDJSON envelopes, 20 min apart) show link 1 inactive at both ends: the link is the
    initiator (``device_type: "link"``, one end and its peer), and the action resets both ends by bus id. It was "no
    single culprit" whose action reset GPU 0 alone, and each poll while the link stayed down was a new incident,
    none a recurrence of the last (a fresh user's trial: the hourly report's row said reset both). The same holds
    for an NVLink Xid at each end (test_both_ends_of_a_direct_link_blame_the_link_with_nvlink_r_and_no_bus_id_map)."""
    from api.diagnose import diagnose_paths
    from schemas.settings import Settings

    head = "GPU {g}: NVIDIA H100 NVL (UUID: GPU-00000000-0000-0000-0000-00000000000{g})\n"
    wiring = "\n".join(head.format(g=g) + f"\t Link 0: Remote Device 00000000:{far}:00.0: Link 0\n"
                       f"\t Link 1: Remote Device 00000000:{far}:00.0: Link 1" for g, far in ((0, "41"), (1, "01")))
    poll = "\n".join(head.format(g=g) + "\t Link 0: 25 GB/s\n\t Link 1: <inactive>" for g in (0, 1))
    records = [("2026-12-06T23:00:00Z", wiring), ("2026-12-06T23:20:00Z", poll), ("2026-12-06T23:40:00Z", poll)]
    (tmp_path / "ws71.ndjson").write_bytes(b"\n".join(
        orjson.dumps({"host": "ws71", "timestamp": t, "message": m}) for t, m in records))
    first, second = diagnose_paths([tmp_path], Settings(), pipeline=pipeline)[2]
    for inc in (first, second):
        assert (inc["pattern"], inc["category"]) == ("link.both_ends", "link_fault"), inc["explanation"]
        init = inc["initiator"]
        assert (init["device_type"], init["device"], init["peer"], init["link"]) == (
            "link", "0000:01:00.0", "0000:41:00.0", 1)
        assert "reset both GPUs (nvidia-smi -r -i 0000:01:00.0, then -i 0000:41:00.0)" in inc["next_action"]
        assert "nvml.nvlink_inactive" in inc["explanation"] and inc["downstream"] == []
        # a wired link down: an error, as link.inactive_where_wired's (nvlink -s's own line is a warning: it was one,
        # below page_min_severity, while its action drained both GPUs: a fresh user's trial)
        assert inc["severity"] == "error", inc["severity"]
    assert first["start"] < second["start"] and second["recurrence"]["previous"] == [first["id"]]


def test_one_fault_on_every_candidate_gives_each_candidates_own_action(pipeline):
    """No single culprit, one fault on every candidate (two GPUs' rows read ERR! in the nvidia-smi table): the
    action is the fault's, filled in for each candidate where it names one (its reset's ``-i``), the shared
    sentences once. The first candidate's alone was given: a link down at both ends got "Reset the GPU (nvidia-smi
    -r -i 0)" while the hourly report said reset both (a fresh user's trial)."""
    text = ("|   0  ERR!                On   | 00000000:19:00.0 Off |                 ERR! |\n"
            "|   1  ERR!                On   | 00000000:3B:00.0 Off |                 ERR! |")
    (inc,) = run(pipeline, text, host="node05")
    assert len(inc["initiator"]["candidates"]) == 2, inc["initiator"]
    action = inc["next_action"]
    assert action.startswith("Every candidate reports the same fault (nvml.smi_gpu_err)."), action
    assert "`nvidia-smi -r -i 0000:19:00.0`" in action and "`nvidia-smi -r -i 0000:3b:00.0`" in action, action
    assert action.count("The nvidia-smi table reads") == 1, action


def test_one_fault_on_every_candidate_puts_each_candidates_own_sentence_beside_the_first_ones(pipeline):
    """SGLang's scheduler exception on TP ranks 0 and 1 (sgl-project/sglang#5491's line form): the candidates' own
    sentence (which rank died) comes together, before the advice they share; rank 1's came after the whole shared
    advice, as a new finding, and its "below this line" named no line of the incident (a fresh user's trial)."""
    text = ("[2025-04-17 16:15:33 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
            "[2025-04-17 16:15:33 TP1] Scheduler hit an exception: Traceback (most recent call last):")
    (inc,) = run(pipeline, text, host="inf01")
    action = inc["next_action"]
    assert action.startswith(
        "Every candidate reports the same fault (sglang.scheduler_exception). An SGLang scheduler (TP rank 0) died of "
        "the exception its traceback names (the lines after this one in its log), and the server stops. An SGLang "
        "scheduler (TP rank 1) died of the exception its traceback names (the lines after this one in its log), and "
        "the server stops. A CUDA or NCCL error there:"), action
    assert action.endswith("do not drain the GPUs for it alone."), action


@pytest.mark.parametrize("gpus, tail", [(4, ""), (5, " The same for 1 more candidate."),
                                        (7, " The same for 3 more candidates.")])
def test_one_fault_on_more_candidates_than_are_named_counts_the_rest(pipeline, gpus, tail):
    """Past ``ACTIONS_NAMED`` candidates of one fault, the action counts the rest, in English: five GPUs' rows read
    ERR! said "The same for 1 more candidates." (a break-it pass)."""
    from correlate.incident import ACTIONS_NAMED

    text = "\n".join(f"|   {i}  ERR!                On   | 00000000:{0x19 + i:02X}:00.0 Off |                 ERR! |"
                     for i in range(gpus))
    (inc,) = run(pipeline, text, host="node05")
    action = inc["next_action"]
    assert ACTIONS_NAMED == 4 and action.count("`nvidia-smi -r -i 0000:") == 4, action
    assert action.endswith("or reboot the node; if it comes back in ERR!, reseat or replace it." + tail), action


def test_every_link_of_a_bridged_pair_down_at_both_ends_is_one_link_report(pipeline, tmp_path):
    """A bridge of four NVLinks between two GPUs (``nvidia-smi nvlink -R``), every link inactive at both ends in one
    ``nvlink -s`` poll: the initiator is the pair's links, all four, and neither GPU is its own downstream. Link 0
    alone was named, GPU 0's links 1 – 3 listed as a downstream reporter on the initiator's own GPU ("same_host") and
    GPU 1's links 1 – 3 in no part of the incident (a break-it pass)."""
    from api.diagnose import diagnose_paths
    from schemas.settings import Settings

    head = "GPU {g}: NVIDIA H100 NVL (UUID: GPU-00000000-0000-0000-0000-00000000000{g})\n"
    wiring = "\n".join(head.format(g=g) + "\n".join(f"\t Link {k}: Remote Device 00000000:{far}:00.0: Link {k}"
                                                    for k in range(4)) for g, far in ((0, "41"), (1, "01")))
    poll = "\n".join(head.format(g=g) + "\n".join(f"\t Link {k}: <inactive>" for k in range(4)) for g in (0, 1))
    records = [("2026-12-06T23:00:00Z", wiring), ("2026-12-06T23:20:00Z", poll)]
    (tmp_path / "ws71.ndjson").write_bytes(b"\n".join(
        orjson.dumps({"host": "ws71", "timestamp": t, "message": m}) for t, m in records))
    (inc,) = diagnose_paths([tmp_path], Settings(), pipeline=pipeline)[2]
    init = inc["initiator"]
    assert (inc["pattern"], init["device_type"], init["device"], init["peer"]) == (
        "link.both_ends", "link", "0000:01:00.0", "0000:41:00.0"), inc["explanation"]
    assert init["links"] == [0, 1, 2, 3] and inc["downstream"] == [], (init, inc["downstream"])
    assert len(init["events"]) == 8, init["events"]


def test_links_down_at_both_ends_to_two_peers_are_no_one_links_report(pipeline, tmp_path):
    """A GPU wired straight to two peers (``nvidia-smi nvlink -R``: GPU 0's links 0, 1 to GPU 1, its links 2, 3 to
    GPU 2, as on a four-GPU board without NVSwitches), every one of those links inactive at both ends in one poll: no
    one link is the first fault. link.both_ends named the link to GPU 1 and listed the other link's ends as its
    downstream reporters, the link's own GPU 0 among them (a break-it pass)."""
    from api.diagnose import diagnose_paths
    from schemas.settings import Settings

    head = "GPU {g}: NVIDIA H100 NVL (UUID: GPU-00000000-0000-0000-0000-00000000000{g})\n"
    bus = {0: "01", 1: "41", 2: "81"}
    wires = {0: [(1, 0), (1, 1), (2, 0), (2, 1)], 1: [(0, 0), (0, 1)], 2: [(0, 2), (0, 3)]}
    wiring = "\n".join(head.format(g=g) + "\n".join(f"\t Link {k}: Remote Device 00000000:{bus[p]}:00.0: Link {j}"
                                                    for k, (p, j) in enumerate(w)) for g, w in wires.items())
    poll = "\n".join(head.format(g=g) + "\n".join(f"\t Link {k}: <inactive>" for k in range(len(w)))
                     for g, w in wires.items())
    records = [("2026-12-06T23:00:00Z", wiring), ("2026-12-06T23:20:00Z", poll)]
    (tmp_path / "ws71.ndjson").write_bytes(b"\n".join(
        orjson.dumps({"host": "ws71", "timestamp": t, "message": m}) for t, m in records))
    (inc,) = diagnose_paths([tmp_path], Settings(), pipeline=pipeline)[2]
    assert inc["pattern"] != "link.both_ends", inc["explanation"]
    named = [inc["initiator"].get("device")] + [d["device"] for d in inc["downstream"]]
    assert len(named) == len(set(named)), named
    assert inc["initiator"]["candidates"] == [f"gpu 0000:{b}:00.0 on ws71" for b in ("01", "41", "81")], inc


def test_dcgms_ecc_health_code_is_downstream_of_an_ecc_fault_only(pipeline):
    """The EKS node monitoring agent's DCGMHealthCode4 (DCGM_FR_VOLATILE_DBE_DETECTED, aws/eks-node-monitoring-agent#39)
    reports the GPU's uncorrectable ECC error again, naming no GPU: one incident with the kernel's Xid 48 on the host
    (``ecc.explains_health_check_ecc_report`` where the host's GPU is not one). An application's Xid 13 twenty minutes before took it as its reporter
    by gpu_fault.explains_health_check_report, whose causes are every Xid: the ECC error an "application" incident
    (a break-it pass). It is an ECC incident of its own beside the Xid 13."""
    eks = ("2026-11-30T10:20:00+00:00 node63 node condition {Type:AcceleratedHardwareReady Status:False ... "
           "Reason:DCGMHealthCode4")
    x48 = ("[2026-11-30 10:00:02] node63 kernel: NVRM: Xid (PCI:0000:3b:00): 48, pid=4242, name=python3, "
           "An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at partition 6, "
           "subpartition 0.")
    x13 = ("[2026-11-30 10:00:02] node63 kernel: NVRM: Xid (PCI:0000:3b:00): 13, pid=4242, name=python3, Graphics "
           "Exception on GPC 0: 3DSCG Exception 0x00000001")
    (inc,) = run(pipeline, x48 + "\n" + eks, host="node63")
    assert (inc["initiator"]["xid"], inc["category"]) == (48, "ecc")
    assert len(inc["initiator"]["events"]) + sum(len(d["events"]) for d in inc["downstream"]) == 2
    incs = run(pipeline, x13 + "\n" + eks, host="node63")
    assert sorted((i["initiator"]["kind"], i["category"], len(i["downstream"])) for i in incs) == [
        ("ecc", "ecc", 0), ("xid", "application", 0)]


def test_a_fabric_fault_of_one_gpu_names_that_gpu_and_of_several_the_host(pipeline):
    """nvidia-smi -q's Fabric block of one GPU at Status "Unknown Error", Health Unhealthy, beside peers at Success
    (NVIDIA/NVSentinel#883): the GPU that did not register is the initiator, not its host alone (the device was
    dropped: a real-logs pass). Two GPUs failing alike point at the host's fabric management, so the host stays."""
    def block(bus: str, status: str) -> list[str]:
        return [f"GPU {bus}", "    Fabric", "        State                             : Completed",
                f"        Status                            : {status}",
                "        CliqueId                          : 32766",
                "        ClusterUUID                       : 9f410827-489f-46fd-8203-51266ca08eb7"]
    (inc,) = run(pipeline, "\n".join(block("00000008:01:00.0", "Unknown Error") + block("00000009:01:00.0", "Success")),
                 host="gb200-n01")
    assert (inc["category"], inc["initiator"]["host"], inc["initiator"]["device_type"], inc["initiator"]["device"]) \
        == ("fabric_manager", "gb200-n01", "gpu", "0008:01:00.0"), inc["initiator"]
    # and says so: it read "Fabric Manager on gb200-n01 says" and blamed the host's fabric management (a break-it pass)
    assert inc["explanation"].startswith("The fabric state of GPU 0008:01:00.0 on gb200-n01 reads “Unknown Error”"), \
        inc["explanation"]
    assert "fabric management of this host" not in inc["explanation"], inc["explanation"]
    (inc,) = run(pipeline, "\n".join(block("00000008:01:00.0", "Unknown Error")
                                     + block("00000009:01:00.0", "Unknown Error")), host="gb200-n01")
    assert (inc["category"], inc["initiator"]["device"]) == ("fabric_manager", None), inc["initiator"]


def test_an_unregistered_compute_domain_kubelet_plugin_is_the_nodes_kubernetes_set_up_not_fabric_manager(pipeline):
    """kubernetes-sigs/dra-driver-nvidia-gpu#814 (a real-logs pass): GB200 MPIJob workers stayed ContainerCreating
    while the kubelet said "DRA driver compute-domain.nvidia.com is not registered"; no event before, and as a
    fabric_manager event the incident read "Fabric Manager on … says", at error. It is a warning about the node's
    Kubernetes set-up: the DRA driver's kubelet plugin is not registered there."""
    text = ('Jan 14 22:32:39 node01 kubelet[14067]: E0114 22:32:39.849988   14067 kuberuntime_manager.go:1323] '
            '"Failed to prepare dynamic resources" err="prepare dynamic resources: DRA driver '
            'compute-domain.nvidia.com is not registered" pod="default/nccl-test-worker-0"')
    (inc,) = run(pipeline, text, host="node01")
    assert (inc["category"], inc["severity"], inc["initiator"]["host"]) == ("fabric_manager", "warning", "node01"), inc
    assert inc["explanation"].startswith("The kubelet on node01 could not prepare a pod's ComputeDomain claim"), \
        inc["explanation"]
    assert "Fabric Manager on" not in inc["explanation"] and "kubelet-plugin pod" in inc["next_action"], inc


DP_XID999 = ("I0723 10:00:30.000000       1 health.go:180] XidCriticalError: Xid=999 on "
             "Device=GPU-7540a9b3-eeb9-1214-1526-f93c9ea826a8; marking device as unhealthy.\n")


def test_the_device_plugins_xid_999_is_its_health_event_not_a_driver_xid(pipeline):
    """NVML gives an Xid event the code 999 when it does not know the Xid (nvml.h, nvmlEventData_t.eventData), and the
    NVIDIA device plugin prints it as "XidCriticalError: Xid=999 …": read as a driver Xid 999, whose action said to
    read the kernel's Xid 999 (a leftovers pass). Alone it is the plugin's health event (the GPU is unschedulable
    until the plugin restarts); after the kernel's Xid of its host, that Xid's downstream report."""
    (inc,) = run(pipeline, DP_XID999, host="node05")
    assert inc["initiator"]["fault"] == "k8s.device_plugin.unknown_xid", inc["initiator"]
    assert (inc["severity"], inc["category"]) == ("warning", "other")
    assert "unknown Xid" in inc["next_action"] and "restart the device plugin" in inc["next_action"]
    (inc,) = run(pipeline, "2023-07-23T10:00:00Z kernel: NVRM: Xid (PCI:0000:18:00): 79, pid=0, GPU has fallen off "
                           "the bus.\n" + DP_XID999, host="node05")
    assert inc["initiator"]["fault"] == "gpu_off_bus", inc["initiator"]
    assert [(d["device"], d["kind"], d["xid"]) for d in inc["downstream"]] == \
        [("GPU-7540a9b3-eeb9-1214-1526-f93c9ea826a8", "other", None)], inc["downstream"]
    assert {x["rule"] for x in inc["evidence"]} == {"gpu_fault.explains_health_check_report"}


DUMP_LOCAL = ("[rank1]:[E1128 21:11:49.041194513 ProcessGroupNCCL.cpp:1870] [PG ID 0 PG GUID 0(default_pg) Rank 1] "
              "Received a dump signal due to a collective timeout from this local rank and we will try our best to "
              "dump the debug info. Last enqueued NCCL work: {e}, last completed NCCL work: {c}.\n")


@pytest.mark.parametrize(("works", "never"), [(("22", "21"), False), (("-1", "-1"), True)])
def test_a_dump_on_a_local_timeout_explains_minus_one_only_when_the_line_says_it(pipeline, works, never):
    """torch.dump_on_local_timeout's action said "-1 and -1 mean the rank never launched a collective on this process
    group" of every line, also one whose last works were 22 and 21 (a leftovers pass; ProcessGroupNCCL.cpp's format,
    sgl-project/sglang#10216's -1 line)."""
    (inc,) = run(pipeline, DUMP_LOCAL.format(e=works[0], c=works[1]), host="node05")
    assert ("never launched a collective" in inc["next_action"]) is never, inc["next_action"]
    assert (f"last enqueued work {works[0]}, last completed {works[1]}" in inc["next_action"]) is not never


def _fabric_and_host(pipeline, node: str):
    """The subnet manager on sm01 drops the port of ``node``'s HCA 2 s before node08's rank reports a retry error
    (status 12) on its NET/IB connection; each log read as one Kafka record (append time: its lines' time). OpenSM's
    own stamp (osm_log.c: month, day, time, µs; no year, no zone: the host's, UTC here) is the drop's time."""
    from datetime import datetime, timezone

    at = datetime.fromtimestamp((T0 - 2_000_000) / 1e6, tz=timezone.utc)
    sm = (f"{at:%b %d %H:%M:%S} {at.microsecond:06d} [3DA006C0] 0x02 -> drop_mgr_remove_port: Removed port with "
          f"GUID:0x506b4b0300e5e461 LID range [5, 5] of node:{node} mlx5_0")
    warn = ("node08:2345:2400 [0] transport/net_ib.cc:1295 NCCL WARN NET/IB : Got completion from peer "
            "10.1.0.7<41234> with status=12 opcode=0 len=0 vendor err 129 (Recv)")
    segs = [Segment(data=t.encode(), origin=f"t:{h}", stream=h, host=h, ref_ts=T0 + dt, ref_basis="kafka",
                    ingest_ts=T0 + dt) for h, t, dt in (("sm01", sm, -2_000_000), ("node08", warn, 0))]
    b = pipeline.run(Decoded(segments=segs))
    return sorted(correlate(b.events, b.link_samples, b.topology, now_us=T0), key=lambda i: i["start"])


def test_the_subnet_managers_lost_port_explains_the_named_hosts_net_ib_errors(pipeline):
    """OpenSM logs on its own host; its drop manager names the lost port's node by its description, "<host>
    <device>" (linux-rdma/opensm osm_drop_mgr.c). The host named there loses its RDMA connections: its NCCL NET/IB
    error is downstream of the fabric's line (peer_host), not an incident of its own (a real-logs pass: two
    incidents, the host's error "the earliest fault nothing else explains")."""
    (inc,) = _fabric_and_host(pipeline, "node08")
    assert (inc["category"], inc["initiator"]["host"], inc["initiator"]["device"]) == (
        "ib_port", "sm01", "0x506b4b0300e5e461")
    assert [(d["host"], d["kind"], d["relation"]) for d in inc["downstream"]] == [
        ("node08", "nccl_error", "peer_host")]


def test_the_subnet_managers_lost_port_of_another_host_explains_nothing_here(pipeline):
    """The same line naming node09's HCA: node08's error is not its downstream; two incidents."""
    incs = _fabric_and_host(pipeline, "node09")
    assert [(i["initiator"]["host"], i["initiator"]["kind"], [d["host"] for d in i["downstream"]]) for i in incs] == [
        ("sm01", "ib_port", []), ("node08", "nccl_error", [])]


@pytest.mark.parametrize("node, peer", [("", None), (" mlx5_0", None), ("ノード08 mlx5_0", "ノード08"),
                                        ("nodé08 mlx5_0", "nodé08"), ("node08 mlx5_0", "node08"),
                                        ("ノ" * 70, "ノ" * 64)])
def test_the_subnet_managers_lost_port_is_an_event_whatever_its_node_description(pipeline, node, peer):
    """OpenSM prints the lost port's node description as the node set it (osm_drop_mgr.c: "of node:%s"): empty for
    a node that set none, or any UTF-8 text. The line gave no event unless the description began with an ASCII word
    (a break-it pass): the port's loss was dropped. It is an event with the port's GUID; its first word, whatever
    its characters (at most 64 of them), is ``details.peer_addr``, none when it begins blank."""
    line = ("Jun 17 17:21:28 933162 [3DA006C0] 0x02 -> drop_mgr_remove_port: Removed port with GUID:0x0000000000100004 "
            f"LID range [5, 5] of node:{node}")
    seg = Segment(data=line.encode(), origin="t:sm01", stream="sm01", host="sm01", ref_ts=T0, ref_basis="kafka",
                  ingest_ts=T0)
    b = pipeline.run(Decoded(segments=[seg]))
    assert b.events.column("signature").to_pylist() == ["ib.opensm_port_removed"]
    assert b.events.column("device").to_pylist() == ["0x0000000000100004"]
    assert orjson.loads(b.events.column("details")[0].as_py()).get("peer_addr") == peer


def test_a_switch_port_down_in_the_sm_sweep_explains_the_ports_it_lost(pipeline):
    """One sweep of OpenSM 5.21 (an ibsim walkthrough): a switch link went DOWN, then the GID of a port behind it went
    out of service and the port was removed. One initiator, the switch port; the other two its downstream."""
    text = "\n".join([
        "Jun 17 17:21:28 927893 [4F2006C0] 0x02 -> osm_pi_rcv_process: Switch 0x200000 Switch1 port 3 changed state "
        "from ACTIVE to DOWN",
        "Jun 17 17:21:28 933044 [3DA006C0] 0x02 -> log_notice: Reporting Generic Notice type:3 num:65 (GID out of "
        "service) from LID:1 GID:fe80::10:4",
        "Jun 17 17:21:28 933162 [3DA006C0] 0x02 -> drop_mgr_remove_port: Removed port with GUID:0x0000000000100004 LID "
        "range [5, 5] of node:Hca2",
        "Jun 17 17:21:28 954937 [3DA006C0] 0x02 -> SUBNET UP"])
    (inc,) = run(pipeline, text, host="sm01")
    assert (inc["initiator"]["device"], inc["initiator"]["link"]) == ("0x200000", 3)
    assert sorted((d["device"], d["relation"]) for d in inc["downstream"]) == [
        ("0x0000000000100004", "same_host"), ("fe80::10:4", "same_host")]


def _rank_table_of_every_table(row, tables: list) -> int:
    """The rank-table rule as it was written before :class:`correlate.rules.RankTables` indexed it (every table
    scanned per row): the oracle the indexed form must answer as."""
    k, at = row.rank, (row.host, row.pid)
    if k is not None and k > 0:
        expect = [i for i, (r, _) in enumerate(tables) if r == k - 1]
        lower = [i for i, (r, _) in enumerate(tables) if r is not None and r < k]
        for cands in ([i for i in expect if tables[i][1] == at], [i for i in lower if tables[i][1] == at],
                      [i for i in expect if tables[i][1][0] == row.host], expect,
                      [i for i in lower if tables[i][1][0] == row.host],
                      [len(tables) - 1] if tables and tables[-1][0] is not None and k > tables[-1][0] else []):
            if cands:
                tables[cands[-1]] = (k, at)
                return cands[-1]
    tables.append((k, at))
    return len(tables) - 1


def test_indexed_rank_tables_place_each_row_as_scanning_every_table_did():
    """Rows of interleaved, truncated and repeated nccl-tests runs (ranks, hosts, pids drawn, some None) go to the
    same table through RankTables' indexes as through a scan of every table; a 2,000-node health check in turn gives
    2,000 tables of eight rows each."""
    from types import SimpleNamespace

    from hypothesis import given, settings
    from hypothesis import strategies as st

    from correlate.rules import RankTables

    row = st.builds(SimpleNamespace, rank=st.one_of(st.none(), st.integers(0, 9)),
                    host=st.sampled_from([None, "a", "b", "c"]), pid=st.sampled_from([None, 1, 2, 3]))

    @settings(max_examples=400, deadline=None)
    @given(st.lists(row, max_size=60))
    def same(rows):
        indexed, scanned = RankTables(), []
        assert [indexed.place(r) for r in rows] == [_rank_table_of_every_table(r, scanned) for r in rows]
        assert indexed.last == scanned

    same()
    health = RankTables()
    placed = [health.place(SimpleNamespace(rank=r, host=f"n{h}", pid=100 + h)) for r in range(8) for h in range(2000)]
    assert len(health) == 2000 and placed[-2000:] == list(range(2000))
    assert health.last[7] == (7, ("n7", 107))
