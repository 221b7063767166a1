"""A realistic, reproducible fleet log mix for the ingest benchmark.

What a GPU fleet ships, by volume: kernel noise (network, storage, audit,
cgroups), NCCL ``INFO`` chatter at job start, training output (step and loss
lines, progress bars, warnings, the odd traceback) and DCGM exporter samples.
About 1 % of the lines are fault lines, drawn round-robin from **every
signature family of the catalog** (``ingest/catalog/*.yaml``): each catalog
entry's real example lines, re-stamped with this fleet's clock and host names
so events land in realistic time partitions. A third of the fault lines come
as short storms (the same line repeated a few times), as Xid 13 or corrected
AER errors do.

Every noise template is checked, when the corpus is built, to match no
signature (the plain-``re`` reference matcher decides), and every fault
template to match at least one; :attr:`Corpus.fault_lines` counts them.

Lines keep their time order per host; ``ts_us`` is µs UTC. Seeded: the same
arguments give the same bytes.
"""

from __future__ import annotations

import random
import re
from array import array
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path

import orjson

from ingest.catalog import Catalog, default_catalog
from ingest.match import ReferenceMatcher
from ingest.prefix import US, parse_prefix, to_us

SOURCES = ("dmesg", "nccl", "nvml")
#: share of the noise lines per source (kernel, NCCL + training output, DCGM samples)
NOISE_MIX = {"kernel": 0.40, "nccl_info": 0.22, "training": 0.28, "dcgm": 0.10}
#: default start of the corpus's clock; the benchmark starts it shortly before now instead, because a
#: Kafka broker deletes records whose timestamps are older than its retention (7 days here)
T0 = datetime(2025, 6, 2, 10, 5, 0, tzinfo=timezone.utc)
#: the corpus spans this much fleet time, whatever its size (one hour partition of the lake)
SPAN_S = 30 * 60


@dataclass
class Corpus:
    """Generated lines in time order, with per-line host, source and time."""

    lines: list[bytes]
    host: array  # index into hosts
    source: array  # index into SOURCES
    ts_us: array
    hosts: list[str]
    fault_lines: int = 0
    families: dict[str, int] = field(default_factory=dict)  # fault lines per catalog family
    signatures: set[str] = field(default_factory=set)  # catalog entries with a fault template

    @property
    def bytes(self) -> int:
        return sum(len(x) for x in self.lines) + len(self.lines)

    def streams(self) -> dict[tuple[int, int], list[int]]:
        """(host, source) -> line indexes in time order: what one shipper sends."""
        out: dict[tuple[int, int], list[int]] = {}
        for i in range(len(self.lines)):
            out.setdefault((self.host[i], self.source[i]), []).append(i)
        return out

    def write_files(self, folder: Path) -> list[Path]:
        """One raw log file per host and source (``node007.dmesg.log``), mtime = the last line's time."""
        import os

        folder.mkdir(parents=True, exist_ok=True)
        files = []
        for (h, s), idx in sorted(self.streams().items()):
            f = folder / f"{self.hosts[h]}.{SOURCES[s]}.log"
            with open(f, "wb") as fh:
                for i in range(0, len(idx), 65536):
                    fh.write(b"".join(self.lines[j] + b"\n" for j in idx[i:i + 65536]))
            t = self.ts_us[idx[-1]] / US
            os.utime(f, (t, t))
            files.append(f)
        return files


# --- noise ------------------------------------------------------------------------------------------
# Shapes copied from real logs of the same kinds (kernel 6.x dmesg, NCCL 2.2x INFO, PyTorch/HF trainers,
# dcgm-exporter 3.x); the numbers vary.

def _rr(r: random.Random, a: int, b: int | None = None) -> int:
    """``randrange`` without its argument checks (4x faster; the corpus needs no better)."""
    return int(r.random() * a) if b is None else a + int(r.random() * (b - a))


def _hex(r: random.Random, n: int) -> str:
    return "%0*x" % (n, r.getrandbits(4 * n))


def _kernel(r: random.Random) -> str:
    k = _rr(r, 14)
    if k == 0:
        return f"IPv6: ADDRCONF(NETDEV_CHANGE): veth{_hex(r, 7)}: link becomes ready"
    if k == 1:
        return f"docker0: port {_rr(r, 1, 40)}(veth{_hex(r, 7)}) entered forwarding state"
    if k == 2:
        return (f'audit: type=1400 audit({_rr(r, 1700000000, 1750000000)}.{_rr(r, 1000):03d}:'
                f'{_rr(r, 100, 9999)}): apparmor="STATUS" operation="profile_replace" info="same as current '
                f'profile, skipping" profile="unconfined" name="docker-default" pid={_rr(r, 1000, 99999)} '
                f'comm="apparmor_parser"')
    if k == 3:
        return (f"EXT4-fs (nvme{_rr(r, 4)}n1p{_rr(r, 1, 3)}): mounted filesystem "
                f"{_hex(r, 8)}-{_hex(r, 4)}-{_hex(r, 4)}-{_hex(r, 4)}-{_hex(r, 12)} r/w with ordered data mode. "
                f"Quota mode: none.")
    if k == 4:
        a = _rr(r, 2501, 9000)
        return (f"perf: interrupt took too long ({a} > {a - _rr(r, 1, 400)}), lowering "
                f"kernel.perf_event_max_sample_rate to {_rr(r, 20000, 80000)}")
    if k == 5:
        return f"TCP: request_sock_TCP: Possible SYN flooding on port {_rr(r, 1024, 65535)}. Sending cookies."
    if k == 6:  # the recovery line only: "not responding, still trying" is a storage stall (host.nfs_not_responding)
        server = _rr(r, 1, 9)
        r.random()  # the draw that chose between the two, so the rest of the mix is drawn as before
        return f"nfs: server fs{server}.storage.internal OK"
    if k == 7:
        return (f"mlx5_core 0000:{_rr(r, 0x0c, 0xe0):02x}:00.{_rr(r, 2)}: mlx5_fw_tracer_handle_traces:"
                f"{_rr(r, 700, 800)}:(pid {_rr(r, 100, 99999)}): FWTracer: Events were lost")
    if k == 8:
        return (f"systemd-journald[{_rr(r, 300, 900)}]: Data hash table of /var/log/journal/{_hex(r, 32)}/"
                f"system.journal has a fill level at 75.0 ({_rr(r, 100000, 200000)} of "
                f"{_rr(r, 200000, 300000)} items, 25165824 file size, 87 bytes per hash table item), "
                f"suggesting rotation.")
    if k == 9:
        return f"kauditd_printk_skb: {_rr(r, 1, 200)} callbacks suppressed"
    if k == 10:
        # (not the OOM killer's "invoked oom-killer" line: a fault of the host since host.oom_kill, no noise)
        return (f"cgroup: fork rejected by pids controller in /kubepods.slice/kubepods-burstable.slice/"
                f"kubepods-burstable-pod{_hex(r, 8)}.slice")
    if k == 11:
        return f"eth{_rr(r, 4)}: renamed from veth{_hex(r, 7)}"
    if k == 12:
        return (f"nvme nvme{_rr(r, 4)}: I/O tag {_rr(r, 1000)} (0x{_hex(r, 4)}) opcode 0x2 (Read) "
                f"QID {_rr(r, 1, 64)} timeout, completion polled")
    return f"IPVS: rr: TCP 10.{_rr(r, 256)}.{_rr(r, 256)}.{_rr(r, 256)}:{_rr(r, 1024, 65535)} - no destination available"


_NCCL_INFO = [  # not NCCL's Bootstrap / NET/IB OOB address lines: a signature's (nccl.bootstrap), once per rank,
    # nor "Using internal network plugin." (nccl.net_plugin.internal: which plugin a rank loaded is a fact of its job)
    "NET/Plugin: No plugin found (libnccl-net.so)",
    "cudaDriverVersion 12040",
    "Using network IB",
    "Setting affinity for GPU {d} to ffffffff,ffffffff,00000000,00000000",
    "comm 0x{ptr} rank {r} nRanks 64 nNodes 8 localRanks 8 localRank {d} MNNVL 0",
    "Trees [0] {a}/-1/-1->{r}->{b} [1] {a}/-1/-1->{r}->{b} [2] -1/-1/-1->{r}->{b}",
    "P2P Chunksize set to 524288",
    "Connected all rings, use ring PXN 0 GDR 1",
    "Connected all trees",
    "threadThresholds 8/8/64 | 512/8/64 | 512 | 512",
    "32 coll channels, 32 collnet channels, 0 nvls channels, 32 p2p channels, 32 p2p channels per peer",
    "NCCL_IB_HCA set by environment to mlx5_0,mlx5_3,mlx5_4,mlx5_5",
    "Channel {ch:02d}/32 :    0   1   2   3   4   5   6   7   8   9  10  11  12  13  14  15",
    "AllReduce: opCount {op:x} sendbuff 0x{ptr} recvbuff 0x{ptr} count 33554432 datatype 7 op 0 root 0 comm 0x{ptr} [nranks=64] stream 0x{ptr}",
]


#: GPU bus ids of an 8-GPU HGX host, in nvidia-smi index order (docs/reference/topology.md)
_HGX_BUSES = ("1b", "43", "52", "61", "9d", "c3", "d1", "df")


def _nccl_info(r: random.Random, host: str) -> str:
    d = _rr(r, 8)
    t = _NCCL_INFO[_rr(r, len(_NCCL_INFO))].format(
        d=d, a=_rr(r, 256), b=_rr(r, 256), c=_rr(r, 256), ptr=_hex(r, 12), r=_rr(r, 64),
        bus=_HGX_BUSES[d], ch=_rr(r, 32), op=_rr(r, 1 << 20))
    return f"{host}:{_rr(r, 1000, 99999)}:{_rr(r, 1000, 99999)} [{d}] NCCL INFO {t}"


_TRACEBACK = [
    "Traceback (most recent call last):",
    '  File "/workspace/train.py", line 412, in <module>',
    "    main(args)",
    '  File "/workspace/data/loader.py", line 88, in __getitem__',
    "    sample = self.records[idx]['input_ids']",
    "KeyError: 'input_ids'",
]


def _training(r: random.Random, step: int, day: str) -> list[str]:
    k = _rr(r, 100)
    rank = _rr(r, 64)
    if k < 45:
        return [f"[rank{rank}]: step {step}/200000 | loss {r.uniform(1.5, 3.5):.4f} | lr {r.uniform(1e-5, 3e-4):.3e}"
                f" | grad_norm {r.uniform(0.2, 2.0):.3f} | {_rr(r, 9000, 14000)} tokens/s/gpu"]
    if k < 65:
        p = _rr(r, 100)
        bar = "█" * (p // 10) + " " * (10 - p // 10)
        return [f"Epoch {_rr(r, 1, 4)}:  {p}%|{bar}| {p * 50}/5000 [{_rr(r, 60):02d}:{_rr(r, 60):02d}"
                f"<{_rr(r, 60):02d}:{_rr(r, 60):02d},  {r.uniform(1, 5):.2f}it/s, loss={r.uniform(1, 3):.3f}]"]
    if k < 80:
        return [f"{{'loss': {r.uniform(1, 3):.4f}, 'grad_norm': {r.uniform(0.2, 2):.4f}, 'learning_rate': "
                f"{r.uniform(1e-5, 3e-4):.3e}, 'epoch': {r.uniform(0, 3):.2f}}}"]
    if k < 90:
        return [f"{day} 10:{_rr(r, 60):02d}:{_rr(r, 60):02d},{_rr(r, 1000):03d} - INFO - "
                # (HF Trainer's "Saving model checkpoint to …" is a signature's, hf.trainer_checkpoint_save: its next
                # line, with the same draws)
                f"trainer - Configuration saved in /checkpoints/run-{_rr(r, 100)}/step_{step}/config.json"]
    if k < 99:
        return ["/usr/local/lib/python3.10/dist-packages/torch/utils/data/dataloader.py:558: UserWarning: This "
                "DataLoader will create 16 worker processes in total. Our suggested max number of worker in "
                "current system is 12, which is smaller than what this DataLoader is going to create."]
    return list(_TRACEBACK)


_DCGM = ["DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_GPU_TEMP",
         "DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "DCGM_FI_DEV_MEM_COPY_UTIL"]


def _dcgm(r: random.Random, host: str) -> str:
    g = _rr(r, 8)
    m = _DCGM[_rr(r, len(_DCGM))]
    return (f'{m}{{gpu="{g}",UUID="GPU-{_hex(r, 8)}-{_hex(r, 4)}-{_hex(r, 4)}-{_hex(r, 4)}-{_hex(r, 12)}",'
            f'device="nvidia{g}",modelName="NVIDIA H100 80GB HBM3",Hostname="{host}"}} {_rr(r, 0, 80000)}')


# --- fault lines from the catalog -----------------------------------------------------------------------

@dataclass(slots=True)
class _Fault:
    family: str
    sig_id: str
    source: int
    payload: str  # the example with its time prefix peeled off (or the whole line)
    stamp: str  # how this line is re-stamped: "kernel", "bracket", "date_line", "none"


def _families(catalog: Catalog) -> dict[str, str]:
    """signature id -> family (the YAML file it came from)."""
    import yaml

    from ingest.catalog import CATALOG_DIR

    out = {}
    for f in sorted(CATALOG_DIR.glob("*.yaml")):
        doc = yaml.safe_load(f.read_text(encoding="utf-8"))
        for s in doc.get("signatures", []):
            out[s["id"]] = doc["family"]
    return out


def fault_templates(catalog: Catalog) -> list[_Fault]:
    """One template per real example line of every catalog entry."""
    fam = _families(catalog)
    out = []
    ref = to_us(T0)
    for c in catalog.entries:
        for ex in c.sig.examples:
            if ex.line.startswith("{") and not _json_record(ex.line):
                continue  # a JSON record cut in its report (NVSentinel#953's): as a Kafka value, a bad envelope
            p = parse_prefix(ex.line, ref_us=ref)
            src = SOURCES.index(c.sig.source)
            if c.sig.id == "clock.date_line":
                stamp, payload = "date_line", ""
            elif c.sig.source == "dmesg":
                stamp, payload = "kernel", p.rest.strip()
            elif p.ts is not None:
                stamp, payload = "bracket", p.rest.strip()
            else:
                stamp, payload = "none", ex.line
            out.append(_Fault(fam.get(c.sig.id, "?"), c.sig.id, src, payload, stamp))
    return out


def _json_record(line: str) -> bool:
    """``line`` parses as a JSON object."""
    try:
        return isinstance(orjson.loads(line), dict)
    except orjson.JSONDecodeError:
        return False


_NODE01 = re.compile(r"\bnode01\b")
#: noise lines checked against the reference matcher per corpus (every shape appears among them)
_CHECK_NOISE = 5000


class _Clock:
    def __init__(self, n: int, t0: datetime) -> None:
        self.t0 = to_us(t0)
        self.step = max(1, SPAN_S * US // max(n, 1))

    def at(self, i: int) -> int:
        return self.t0 + i * self.step


_SECONDS: dict[int, str] = {}
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def _kernel_prefix(h: int, host: str, ts: int, boot: int) -> str:
    if h % 2 == 0:  # rsyslog file format (RSYSLOG_FileFormat), as journald-to-file hosts write it
        sec = ts // US
        s = _SECONDS.get(sec)
        if s is None:
            s = _SECONDS[sec] = datetime.fromtimestamp(sec, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")
        return f"{s}.{ts % US:06d}+00:00 {host} kernel: "
    mono = (ts - boot) / US  # raw dmesg, seconds since boot
    return f"[{mono:12.6f}] "


def _render(f: _Fault, h: int, host: str, ts: int, boot: int) -> str:
    if f.stamp == "date_line":
        dt = _EPOCH + timedelta(microseconds=ts)
        return dt.strftime("%a %b %d %H:%M:%S %Y")
    if f.stamp == "kernel":
        return _kernel_prefix(h, host, ts, boot) + _NODE01.sub(host, f.payload)
    if f.stamp == "bracket":
        dt = _EPOCH + timedelta(microseconds=ts)
        return f"[{dt.strftime('%Y-%m-%d %H:%M:%S')}] " + _NODE01.sub(host, f.payload)
    return _NODE01.sub(host, f.payload)


def _check_templates(catalog: Catalog, faults: list[_Fault]) -> list[_Fault]:
    """Keep the fault templates that still hit a signature once re-stamped (all of them, today)."""
    ref = ReferenceMatcher(catalog)
    host, ts = "node001", to_us(T0)
    keep = []
    for f in faults:
        if all(ref.scan(_render(f, h, host, ts, ts - 3600 * US).encode()) for h in (0, 1)):
            keep.append(f)
    return keep


def _by_family(faults: list[_Fault]) -> dict[str, list[_Fault]]:
    """Fault templates by catalog family, in catalog order."""
    out: dict[str, list[_Fault]] = {}
    for f in faults:
        out.setdefault(f.family, []).append(f)
    return out

def generate(n: int, *, seed: int = 7, hosts: int = 32, fault_rate: float = 0.01, t0: datetime = T0,
             catalog: Catalog | None = None) -> Corpus:
    """``n`` lines of the fleet mix described in the module doc, stamped from ``t0`` over ``SPAN_S``."""
    catalog = catalog or default_catalog()
    r = random.Random(seed)
    names = [f"node{i + 1:03d}" for i in range(hosts)]
    boots = [to_us(t0) - _rr(r, 3600, 90 * 86400) * US for _ in range(hosts)]
    faults = _check_templates(catalog, fault_templates(catalog))
    by_family = _by_family(faults)
    fam_order = sorted(by_family)
    fam_next = {k: 0 for k in fam_order}
    clock = _Clock(n, t0)
    day = t0.strftime("%Y-%m-%d")
    lines: list[bytes] = []
    host_a, src_a, ts_a = array("H"), array("B"), array("q")
    corpus = Corpus(lines, host_a, src_a, ts_a, names)
    mix = list(NOISE_MIX.items())
    cum, acc = [], 0.0
    for _, w in mix:
        acc += w
        cum.append(acc)
    checked = 0
    fam_i = 0
    step = 0
    i = 0
    while i < n:
        h = _rr(r, hosts)
        host = names[h]
        ts = clock.at(i)
        if r.random() < fault_rate:
            fam = fam_order[fam_i % len(fam_order)]
            fam_i += 1
            pool = by_family[fam]
            f = pool[fam_next[fam] % len(pool)]
            fam_next[fam] += 1
            repeat = 5 if r.random() < 0.07 else 1  # storms: ~1/3 of the fault lines
            for _ in range(min(repeat, n - i)):
                text = _render(f, h, host, clock.at(i), boots[h])
                lines.append(text.encode())
                host_a.append(h)
                src_a.append(f.source)
                ts_a.append(clock.at(i))
                corpus.fault_lines += 1
                corpus.families[fam] = corpus.families.get(fam, 0) + 1
                corpus.signatures.add(f.sig_id)
                i += 1
            continue
        x = r.random()
        kind = next(k for (k, _), c in zip(mix, cum) if x < c) if x < cum[-1] else mix[-1][0]
        if kind == "kernel":
            texts, src = [_kernel_prefix(h, host, ts, boots[h]) + _kernel(r)], 0
        elif kind == "nccl_info":
            texts, src = [_nccl_info(r, host)], 1
        elif kind == "training":
            step += 1
            texts, src = _training(r, step, day), 1
        else:
            texts, src = [_dcgm(r, host)], 2
        for t in texts:
            if i >= n:
                break
            if checked < _CHECK_NOISE:  # the noise shapes must not look like faults (the oracle decides)
                checked += 1
                if ReferenceMatcher(catalog).scan(t.encode()):
                    raise AssertionError(f"a noise line matches a signature: {t!r}")
            lines.append(t.encode())
            host_a.append(h)
            src_a.append(src)
            ts_a.append(clock.at(i))
            i += 1
    return corpus



#: lines per run of one repeated fault line in :func:`storm`
STORM_RUN = 2_000
#: the catalog families whose kernel lines come in floods (Xid 13/31/79 and AER storms are the classic ones)
STORM_FAMILIES = ("xid", "sxid", "pcie")



def _journal_prefix(host: str, ts: int) -> str:
    """journalctl's default short format: ``Nov 30 03:12:45 node001 kernel: `` (no year; formats.md §1.5)."""
    return (_EPOCH + timedelta(microseconds=ts)).strftime("%b %d %H:%M:%S") + f" {host} kernel: "


def storm(n: int, *, seed: int = 7, t0: datetime = T0, catalog: Catalog | None = None) -> Corpus:
    """``n`` kernel lines of one failing host: runs of :data:`STORM_RUN` copies of one fault line (the
    catalog's kernel examples of :data:`STORM_FAMILIES` in turn: Xid, SXid, PCIe AER), ~1 ms apart, with 5 % kernel noise
    between them. Each run takes one of three stamps a host's kernel log carries — rsyslog's ISO file
    format, raw ``dmesg`` seconds since boot, journalctl's short format without a year — so year-less and
    dated lines meet in one stream. What "a failing node floods identical kernel lines" looks like."""
    catalog = catalog or default_catalog()
    r = random.Random(seed)
    faults = [f for f in _check_templates(catalog, fault_templates(catalog))
              if f.stamp == "kernel" and f.family in STORM_FAMILIES]
    pools = _by_family(faults)
    # the families in turn: the first template of each, then the second of each, …
    faults = [f for k in range(max(map(len, pools.values()))) for fam in STORM_FAMILIES
              for f in pools.get(fam, [])[k:k + 1]]
    host = "node001"
    boot = to_us(t0) - 7 * 86400 * US
    lines: list[bytes] = []
    host_a, src_a, ts_a = array("H"), array("B"), array("q")
    corpus = Corpus(lines, host_a, src_a, ts_a, [host])
    ts = to_us(t0)
    i = 0
    while i < n:
        run = i // STORM_RUN
        f = faults[run % len(faults)]
        shape = run % 3
        ts += 1000
        if r.random() < 0.05:
            text, fault = _kernel(r), False
        else:
            text, fault = _NODE01.sub(host, f.payload), True
        if shape == 0:
            text = _kernel_prefix(0, host, ts, boot) + text
        elif shape == 1:
            text = _kernel_prefix(1, host, ts, boot) + text
        else:
            text = _journal_prefix(host, ts) + text
        lines.append(text.encode())
        host_a.append(0)
        src_a.append(0)
        ts_a.append(ts)
        if fault:
            corpus.fault_lines += 1
            corpus.families[f.family] = corpus.families.get(f.family, 0) + 1
            corpus.signatures.add(f.sig_id)
        i += 1
    return corpus

def chunks(idx: list[int], size: int) -> Iterator[list[int]]:
    for i in range(0, len(idx), size):
        yield idx[i:i + size]


def job_hang(hosts: int, *, t0: datetime = T0, bad_host: int = 7, timeout_s: int = 600) -> dict[str, list[str]]:
    """One training job of ``hosts`` × 8 ranks (one NCCL communicator) whose GPU falls off the bus: what a
    large job's death looks like, per host, in real line formats.

    Each rank prints NCCL's ``Init COMPLETE`` line (``host:pid:tid [dev] NCCL INFO comm <its own pointer> rank R
    nranks N cudaDev D nvmlDev D busId B commId <the communicator's id> - Init COMPLETE``, NCCL 2.19 on, as the
    catalog's nccl.init example; no time of its own) at job start; host ``bad_host``'s
    kernel logs Xid 79 for its GPU 0 (rsyslog ISO stamp); ``timeout_s`` later every rank's PyTorch watchdog
    prints its timeout (``[rankR]:[E… ProcessGroupNCCL.cpp:…] [Rank R] Watchdog caught collective operation
    timeout: … ran for … milliseconds``, c10 stamp). Returns host -> lines (the kernel line first on its host).
    The diagnosis is the Xid 79 with every rank downstream."""
    nranks = hosts * 8
    start = to_us(t0)
    fault = start + 3600 * US
    out: dict[str, list[str]] = {}
    for h in range(hosts):
        host = f"node{h:04d}"
        lines = []
        if h == bad_host % hosts:
            stamp = (_EPOCH + timedelta(microseconds=fault)).strftime("%Y-%m-%dT%H:%M:%S.%f+00:00")
            lines.append(f"{stamp} {host} kernel: NVRM: Xid (PCI:0000:{_HGX_BUSES[0]}:00): 79, pid=3721, "
                         "name=python3, GPU has fallen off the bus.")
        for g in range(8):
            rank = h * 8 + g
            lines.append(f"{host}:{3000 + g}:{3100 + g} [{g}] NCCL INFO comm 0x7f3c{h:04x}{g:04x} rank {rank} nranks "
                         f"{nranks} cudaDev {g} nvmlDev {g} busId {_HGX_BUSES[g]}000 commId 0x5ae77eb5ea4ec1ee - "
                         "Init COMPLETE")
        when = _EPOCH + timedelta(microseconds=fault + timeout_s * US + 250_000)
        for g in range(8):
            rank = h * 8 + g
            lines.append(_watchdog_timeout(rank, when, g, 52113, timeout_s))
        out[host] = lines
    return out


def _watchdog_timeout(rank: int, when: datetime, g: int, seq: int, timeout_s: int) -> str:
    """Rank ``rank``'s PyTorch watchdog timeout of the allreduce ``seq`` as c10 prints it, stamped ``when`` (its
    microseconds then ``g`` as three more digits: the ranks of one host a moment apart), ``timeout_s`` its timeout and
    250 ms more the time it ran."""
    return (f"[rank{rank}]:[E{when:%m%d %H:%M:%S}.{when.microsecond:06d}{g:03d} ProcessGroupNCCL.cpp:616] [Rank "
            f"{rank}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum={seq}, OpType=ALLREDUCE, "
            f"NumelIn=8388608, NumelOut=8388608, Timeout(ms)={timeout_s * 1000}) ran for {timeout_s * 1000 + 250} "
            "milliseconds before timing out.")


def job_runs(hosts: int, runs: int, *, t0: datetime = T0,
             every_s: int = 6 * 3600) -> list[tuple[int, dict[str, list[str]]]]:
    """One training job of ``hosts`` × 8 ranks restarted ``runs`` times on the same GPUs, ``every_s`` seconds
    apart (from its checkpoint, or the scheduler's next job on the same nodes): each run is new processes (pids)
    with a new NCCL communicator (commId), and each rank prints NCCL's ``Init COMPLETE`` as a journald/rsyslog
    export carries it (``<ISO time> <host> python[<pid>]: <host>:<pid>:<tid> [<dev>] NCCL INFO comm … commId …
    - Init COMPLETE``). Returns [(the run's start µs, host -> lines)], in order."""
    out = []
    for n in range(runs):
        start = to_us(t0) + n * every_s * US
        stamp = (_EPOCH + timedelta(microseconds=start)).strftime("%Y-%m-%dT%H:%M:%S.%f+00:00")
        comm = f"0x{0x5ae77eb5ea4ec1ee + n:016x}"
        logs = {}
        for h in range(hosts):
            host = f"node{h:04d}"
            logs[host] = [f"{stamp} {host} python[{pid}]: {host}:{pid}:{pid + 100} [{g}] NCCL INFO comm "
                          f"0x7f3c{h:04x}{g:04x} rank {h * 8 + g} nranks {hosts * 8} cudaDev {g} nvmlDev {g} busId "
                          f"{_HGX_BUSES[g]}000 commId {comm} - Init COMPLETE"
                          for g in range(8) for pid in [10_000 * (n + 1) + g]]
        out.append((start, logs))
    return out



def domain_restarts(hosts: int, restarts: int, *, t0: datetime = T0, every_s: int = 1800,
                    timeout_s: int = 600) -> dict[str, list[str]]:
    """One training job over ``hosts`` × 8 GPUs of one NVLink domain (a GB200 NVL72 rack's hosts, one ``domain`` of
    the fleet config) that its scheduler restarted ``restarts`` times, ``every_s`` seconds apart, each run dying
    the same way: a GPU falls off the bus (Xid 79, rsyslog ISO stamp, another host each run) and ``timeout_s``
    later every rank's PyTorch watchdog prints its timeout of the collective it hung in (c10 stamp, no year; each
    run its own SeqNum), with no NCCL ``Init COMPLETE`` lines (no ``NCCL_DEBUG=INFO``): only the collective each
    line names ties the ranks together (``rules.named_collective``). Returns file name -> lines in time order:
    ``<host>.kern.log`` (the host's Xid lines, hosts with one) and ``<host>.job.log`` (its ranks' timeouts)."""
    out: dict[str, list[str]] = {}
    for n in range(restarts):
        fault = to_us(t0) + n * every_s * US + 1200 * US
        bad = (7 + 13 * n) % hosts
        for h in range(hosts):
            host = f"node{h:04d}"
            if h == bad:
                stamp = (_EPOCH + timedelta(microseconds=fault)).strftime("%Y-%m-%dT%H:%M:%S.%f+00:00")
                out.setdefault(f"{host}.kern.log", []).append(
                    f"{stamp} {host} kernel: NVRM: Xid (PCI:0000:{_HGX_BUSES[n % 8]}:00): 79, pid={3721 + n}, "
                    "name=python3, GPU has fallen off the bus.")
            when = _EPOCH + timedelta(microseconds=fault + timeout_s * US + 250_000 + h * 1000)
            job = out.setdefault(f"{host}.job.log", [])
            for g in range(8):
                rank = h * 8 + g
                job.append(_watchdog_timeout(rank, when, g, 4000 + 37 * n, timeout_s))
    return out
