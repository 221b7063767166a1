"""A small fleet with incidents that cross hosts, in real line formats, for the scale-out tests.

* job A: hosts a1..a4, 2 GPUs each, one NCCL communicator (Init COMPLETE lines on every host); a1's GPU
  0000:18:00.0 falls off the bus, and 10 minutes later the other ranks' watchdogs time out (600 s);
* rack 1: hosts r1..r3 in one NVLink domain (fleet config); r1's GPU reports a fatal link-down Xid 149,
  r2 and r3 the downstream Xid 145;
* b1: an uncorrectable ECC Xid 48 of its own; b2: a GSP timeout;
* ordinary lines everywhere.
Each host is one file (``<host>.log``) and one stream of Kafka messages (key = host).
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

T0 = datetime(2026, 11, 29, 3, 0, 0, tzinfo=timezone.utc)
COMM = "0x7a11e5c0ffee0001"
FLEET = {"hosts": {h: {"platform": "NVIDIA GB200", "domain": "rack1"} for h in ("r1", "r2", "r3")}}


def _ctime(t: datetime) -> str:
    return t.strftime("[%a %b %e %H:%M:%S %Y]").replace("  ", " ").replace("[", "[", 1)


def _iso(t: datetime) -> str:
    return t.strftime("%Y-%m-%d %H:%M:%S")


def fleet() -> dict[str, list[str]]:
    """host -> lines (in order)."""
    out: dict[str, list[str]] = {}
    buses = ["18000", "2a000"]
    for i, h in enumerate(["a1", "a2", "a3", "a4"]):
        lines = [f"{_ctime(T0)} NVRM: loading NVIDIA UNIX x86_64 Kernel Module  570.158.01  Release Build"]
        for g in range(2):
            rank = 2 * i + g
            lines.append(f"{h}:{1000 + g}:{1100 + g} [{g}] NCCL INFO comm 0x55{rank:02d}f0 rank {rank} nranks 8 "
                         f"cudaDev {g} nvmlDev {g} busId {buses[g]} commId {COMM} - Init COMPLETE")
        lines += [f"{h}:{1000}:{1100} [0] NCCL INFO Channel 00/0 : {2 * i}[0] -> {2 * i + 1}[1] via P2P/CUMEM",
                  f"{h}:{1000}:{1100} [0] NCCL INFO Connected all rings"]
        fault = T0 + timedelta(minutes=10)
        if h == "a1":
            lines.append(f"{_ctime(fault)} NVRM: Xid (PCI:0000:18:00): 79, pid=0, GPU has fallen off the bus.")
        else:
            for g in range(2):
                rank = 2 * i + g
                ts = fault + timedelta(seconds=600, milliseconds=30 + rank)
                lines.append(f"[rank{rank}]:[E{ts.month}{ts.day:02d} {ts:%H:%M:%S}.{ts.microsecond:06d}000 "
                             f"ProcessGroupNCCL.cpp:616] [Rank {rank}] Watchdog caught collective operation timeout: "
                             f"WorkNCCL(SeqNum=4242, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) "
                             f"ran for 600030 milliseconds before timing out.")
        out[h] = lines
    t1 = T0 + timedelta(minutes=30)
    out["r1"] = [f"{_ctime(t1)} NVRM: Xid (PCI:0008:01:00): 149, NETIR_LINK_EVT Fatal XC0 i0 Link 14 (0x025001c6 "
                 "0x00000000 0x00000000 0x00000000 0x00000000 0x00000000)"]
    for k, h in enumerate(("r2", "r3")):
        t = t1 + timedelta(seconds=1 + k)
        out[h] = [f"{_ctime(t)} NVRM: Xid (PCI:0009:01:00): 145, RLW_SRC_TRACK Nonfatal XC0 i0 Link 3 (0x0409a0c2 "
                  "0x00000008 0x00000001 0x00000000 0x00100000 0x00000004)"]
    out["b1"] = [f"{_ctime(T0 + timedelta(minutes=50))} NVRM: Xid (PCI:0000:3b:00): 48, pid=77, name=python3, "
                 "An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at partition 6, "
                 "subpartition 0."]
    out["b2"] = [f"{_ctime(T0 + timedelta(minutes=55))} NVRM: Xid (PCI:0000:9b:00): 119, pid=2024380, name=nvidia-smi, "
                 "Timeout after 6s of waiting for RPC response from GPU4 GSP! Expected function 103 (GSP_RM_ALLOC) "
                 "(0x2081 0x4)."]
    for h, lines in out.items():  # ordinary noise around the faults
        lines.insert(0, f"{_ctime(T0 - timedelta(minutes=1))} usb 1-1: new high-speed USB device number 2 using xhci_hcd")
        lines.append(f"[{_iso(T0 + timedelta(hours=1))}] INFO step 1000 loss 1.23")
    return out
