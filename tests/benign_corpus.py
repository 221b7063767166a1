"""A benign corpus: ordinary kernel, NCCL INFO and training output, with varying numbers and hosts.

The templates are shapes of ordinary lines seen in public logs (the NCCL INFO
lines of shared/reference/formats.md §11 and the reports of tests/corpus,
kernel boot and device messages of public kernel bug reports, PyTorch /
Lightning / HF Trainer progress output). None of them reports a fault, so
firstfault must raise no event of severity warning or above from them.
"""

from __future__ import annotations

import random

KERNEL = [
    "[{mono}] Linux version 5.15.0-{n}-generic (buildd@lcy02-amd64-{n}) (gcc (Ubuntu 11.4.0-1ubuntu1~22.04) 11.4.0, GNU ld (GNU Binutils for Ubuntu) 2.38) #101-Ubuntu SMP",
    "[{mono}] usb 1-{d}: new high-speed USB device number {n} using xhci_hcd",
    "[{mono}] EXT4-fs (nvme0n1p{d}): mounted filesystem with ordered data mode. Quota mode: none.",
    "[{mono}] NVRM: loading NVIDIA UNIX x86_64 Kernel Module  535.{n}.03  Thu Oct 19 18:56:32 UTC 2023",
    "[{mono}] nvidia-modeset: Loading NVIDIA Kernel Mode Setting Driver for UNIX platforms  535.{n}.03",
    "[{mono}] nvidia-nvswitch{d}: open (major={n})",
    "[{mono}] mlx5_core 0000:{bus}:00.0: firmware version: 28.39.{n}",
    "[{mono}] mlx5_core 0000:{bus}:00.0: Rate limit: 127 rates are supported, range: 0Mbps to 195312Mbps",
    "[{mono}] mlx5_core 0000:{bus}:00.0 enp{d}s0np0: Link up",
    "[{mono}] IPv6: ADDRCONF(NETDEV_CHANGE): ib{d}: link becomes ready",
    "[{mono}] pci 0000:{bus}:00.0: [10de:2330] type 00 class 0x030200",
    "[{mono}] pci 0000:{bus}:00.0: BAR 1: assigned [mem 0x{hex}-0x{hex} 64bit pref]",
    "[{mono}] pcieport 0000:{bus}:01.0: AER: enabled with IRQ {n}",
    "[{mono}] nvme nvme{d}: {n}/0/0 default/read/poll queues",
    "[{mono}] systemd[1]: Started Session {n} of User root.",
    "[{mono}] audit: type=1400 audit({n}.123:{n}): apparmor=\"STATUS\" operation=\"profile_load\" profile=\"unconfined\"",
    "[{mono}] e1000e 0000:00:1f.6 eno1: NIC Link is Up 1000 Mbps Full Duplex, Flow Control: Rx/Tx",
    "[{mono}] device-mapper: uevent: version 1.0.3",
    "[{mono}] nvidia_uvm: module uses symbols from proprietary module nvidia, inheriting taint.",
    "[{mono}] NVRM: GPU at PCI:0000:{bus}:00: GPU-{uuid}",
    "{mon} {day} {hms} node{d:02d} kernel: [{mono}] nvidia-peermem: module verification failed: signature and/or required key missing",
    "{mon} {day} {hms} node{d:02d} systemd[1]: Starting NVIDIA Persistence Daemon...",
    "{mon} {day} {hms} node{d:02d} nvidia-persistenced[{n}]: Started (1234)",
    "{mon} {day} {hms} node{d:02d} nv-fabricmanager[{n}]: Successfully configured all the available NVSwitches to route GPU NVLink traffic. NVLink Peer-to-Peer support will be enabled once the GPUs are successfully registered with the NVLink fabric.",
    "{mon} {day} {hms} node{d:02d} kernel: [{mono}] pcieport 0000:{bus}:01.0: AER: Corrected error received: 0000:{bus}:00.0",
]
NCCL = [
    "node{d:02d}:{pid}:{tid} [{g}] NCCL INFO Bootstrap : Using eth0:10.0.0.{d}<0>",
    "node{d:02d}:{pid}:{tid} [{g}] NCCL INFO NET/Plugin: No plugin found (libnccl-net.so)",
    "node{d:02d}:{pid}:{tid} [{g}] NCCL INFO NET/IB : Using [0]mlx5_{g}:1/IB [RO]; OOB eth0:10.0.0.{d}<0>",
    "node{d:02d}:{pid}:{tid} [{g}] NCCL INFO Using non-device net plugin version 0",
    "node{d:02d}:{pid}:{tid} [{g}] NCCL INFO Using network IB",
    "node{d:02d}:{pid}:{tid} [{g}] NCCL INFO comm 0x{hex} rank {r} nranks 64 cudaDev {g} nvmlDev {g} busId {bus}000 commId 0x{hex} - Init START",
    "node{d:02d}:{pid}:{tid} [{g}] NCCL INFO Setting affinity for GPU {g} to ffff,ffffffff",
    "node{d:02d}:{pid}:{tid} [{g}] NCCL INFO NVLS multicast support is available on dev {g}",
    "node{d:02d}:{pid}:{tid} [{g}] NCCL INFO Channel {ch:02d}/32 :    0   1   2   3   4   5   6   7",
    "node{d:02d}:{pid}:{tid} [{g}] NCCL INFO Trees [0] {r}/-1/-1->{r}->{r} [1] -1/-1/-1->{r}->{r}",
    "node{d:02d}:{pid}:{tid} [{g}] NCCL INFO P2P Chunksize set to 524288",
    "node{d:02d}:{pid}:{tid} [{g}] NCCL INFO Channel {ch:02d}/0 : {r}[{g}] -> {r}[{g}] via P2P/CUMEM/read",
    "node{d:02d}:{pid}:{tid} [{g}] NCCL INFO Channel {ch:02d}/0 : {r}[{g}] -> {r}[{g}] [send] via NET/IB/{g}/GDRDMA",
    "node{d:02d}:{pid}:{tid} [{g}] NCCL INFO Connected all rings",
    "node{d:02d}:{pid}:{tid} [{g}] NCCL INFO Connected all trees",
    "node{d:02d}:{pid}:{tid} [{g}] NCCL INFO threadThresholds 8/8/64 | 512/8/64 | 512 | 512",
    "node{d:02d}:{pid}:{tid} [{g}] NCCL INFO 32 coll channels, 32 collnet channels, 16 nvls channels, 32 p2p channels, 32 p2p channels per peer",
    "node{d:02d}:{pid}:{tid} [{g}] NCCL INFO comm 0x{hex} rank {r} nranks 64 cudaDev {g} nvmlDev {g} busId {bus}000 commId 0x{hex} - Init COMPLETE",
    "node{d:02d}:{pid}:{tid} [{g}] NCCL INFO P2P is disabled between connected GPUs {g} and {r8}. You can repress this message with NCCL_IGNORE_DISABLED_P2P=1.",
    "node{d:02d}:{pid}:{tid} [{g}] NCCL INFO comm 0x{hex} rank {r} nranks 64 cudaDev {g} busId {bus}000 - Destroy COMPLETE",
]
TRAINING = [
    "Epoch {d}: {pct}%|████████▉ | {n}/512 [01:{ss}<00:{ss}, 8.19it/s, loss={loss}, v_num=0]",
    "{{'loss': {loss}, 'grad_norm': {loss}, 'learning_rate': 1.9e-05, 'epoch': 0.{n}}}",
    "[2026-11-30 03:{mm}:{ss},{ms}] [INFO] [logging.py:96:log_dist] [Rank 0] step={n}, skipped=0, lr=[0.0001], mom=[(0.9, 0.95)]",
    "iteration {n}/  100000 | consumed samples: {n} | elapsed time per iteration (ms): 1234.5 | learning rate: 3.0E-04 | lm loss: {loss} | loss scale: 1.0 | grad norm: 0.{n} | number of skipped iterations:   0 |",
    "[rank{r}]:[W1130 03:{mm}:{ss}.123456789 ProcessGroupNCCL.cpp:4561] [PG ID 0 PG GUID 0 Rank {r}]  using GPU {g} to perform barrier as devices used by this process are currently unknown.",
    "INFO:root:Saving checkpoint to /checkpoints/step_{n}",
    "wandb: Syncing run eager-sunset-{n}",
    "  warnings.warn(",
    "Traceback (most recent call last):",
    # (a rank's CUDA out-of-memory error stood here; it is no noise but the program's own failure, which its peers'
    # timeouts follow: torch.cuda_oom, an application fault — modelscope/ms-swift#5943, a real-logs pass)
]
MON = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]


def lines(n: int, seed: int = 7) -> list[str]:
    """``n`` benign lines (deterministic for a seed)."""
    rnd = random.Random(seed)
    pools = [KERNEL] * 4 + [NCCL] * 5 + [TRAINING] * 3
    out = []
    for i in range(n):
        t = rnd.choice(rnd.choice(pools))
        out.append(t.format(
            mono=f"{rnd.uniform(0, 999999):12.6f}", n=rnd.randrange(1, 99999), d=rnd.randrange(1, 64),
            bus=f"{rnd.randrange(0x10, 0xff):02x}", hex=f"{rnd.getrandbits(48):x}",
            uuid="-".join(f"{rnd.getrandbits(b * 4):0{b}x}" for b in (8, 4, 4, 4, 12)),
            mon=rnd.choice(MON), day=rnd.randrange(1, 29), hms=f"{rnd.randrange(24):02d}:{rnd.randrange(60):02d}:"
            f"{rnd.randrange(60):02d}", pid=rnd.randrange(100, 99999), tid=rnd.randrange(100, 99999),
            g=rnd.randrange(8), r=rnd.randrange(64), r8=rnd.randrange(8), ch=rnd.randrange(32),
            pct=rnd.randrange(101), ss=f"{rnd.randrange(60):02d}", mm=f"{rnd.randrange(60):02d}",
            ms=f"{rnd.randrange(1000):03d}", loss=f"{rnd.uniform(0.5, 4):.4f}"))
    return out
