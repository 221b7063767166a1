"""A seedable fleet simulator: scenarios with ground truth, as real-format log files and Kafka messages.

Pure: :func:`generate` takes a count and a seed and returns data (file contents with their
modification times, Kafka messages with their delivery times, the fleet config, the ground truth);
writing files and producing to Kafka are ``benchmarks.accuracy``'s job.

One **scenario** is one slice of a fleet at one time: a job whose ranks and communicators are spread
over hosts of one platform, plus whatever the injected fault (or benign case) makes them log, plus
background noise. Every scenario gets hosts of its own and a six-hour slot of its own, so scenarios
never meet in a correlation window; inside a scenario everything is as messy as the brief asks:

* **clocks**: each host's wall clock is off by up to ±2 s (uniform); every wall stamp it prints,
  every shipper envelope and Kafka ``CreateTime`` it sets, and a raw ``dmesg`` file's mtime, carry it;
* **stamp styles per host**: raw ``dmesg`` (monotonic seconds since boot; the boot time comes from the
  journald envelope on Kafka, from the file's mtime on disk), ``dmesg -T``, syslog RFC 3164 (with or
  without the forwarded kernel stamp), ``dmesg --time-format iso``; NCCL ``INFO`` lines print no time,
  ``WARN`` lines print ``[%F %T]`` from NCCL 2.26 on; PyTorch c10 lines print month/day and ns;
* **noise**: kernel chatter, NCCL start-up (bootstrap, NET/IB, init and channel lines), training
  progress, the nvidia-smi/topo/nvlink snapshots a poller ships, and now and then one corrected AER;
* **Kafka delivery**: lines are shipped in small batches (plain text, Vector or Filebeat NDJSON,
  journald export JSON for raw-dmesg hosts), delayed (log-normal, long tail), therefore reordered
  across hosts and sometimes within one, and ~3 % of messages are delivered twice.

Line shapes are copied from ``ingest/catalog/*.yaml`` examples and ``docs/reference/formats.md``;
the few that no public sample shows (Xid 48/64/95 wording, NET/IB completion text of a given NCCL
release, Fabric Manager version-mismatch text) are marked *constructed* where they are built.

Ground truth is written in firstfault's terms (``Truth``): the initiator (host, device_type, device,
peer, link, rank, category) and the downstream reporters ``{host, device, rank, gpu_index}``; a
benign scenario expects no incident of severity warning or above.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Callable

import orjson

S = 1_000_000  # µs
MS = 1_000
T0 = int(datetime(2025, 3, 3, tzinfo=timezone.utc).timestamp()) * S  # first scenario slot (UTC)
SLOT = 6 * 3600 * S  # one scenario per slot: far beyond every correlation window but the 24 h ones
MAX_SKEW = 2 * S

# --------------------------------------------------------------------------------------------------
# Platforms (docs/reference/topology.md §1–§5)


@dataclass(frozen=True)
class Platform:
    key: str
    model: str  # as nvidia-smi / DCGM print it
    fabric: str  # nvswitch | direct | nvl72 | pcie | bridge
    buses: tuple[str, ...]  # GPU bus ids, nvidia-smi index order
    switches: tuple[str, ...] = ()
    links: int = 0  # NVLinks per GPU
    gbps: str = ""  # per-link rate printed by nvidia-smi nvlink -s
    per_switch: tuple[int, ...] = ()  # links of one GPU to each switch, in switch order
    nics: int = 8
    pci_id: str = "10de:2330"
    short: str = "gpu"
    mem: str = "81559MiB"
    power: str = "700W"


PLATFORMS: dict[str, Platform] = {p.key: p for p in [
    Platform("h100", "NVIDIA H100 80GB HBM3", "nvswitch",
             ("0000:1b:00.0", "0000:43:00.0", "0000:52:00.0", "0000:61:00.0",
              "0000:9d:00.0", "0000:c3:00.0", "0000:d1:00.0", "0000:df:00.0"),
             ("0000:05:00.0", "0000:06:00.0", "0000:07:00.0", "0000:08:00.0"), 18, "26.562", (4, 5, 5, 4),
             short="h100"),
    Platform("a100", "NVIDIA A100-SXM4-80GB", "nvswitch",
             ("0000:07:00.0", "0000:0f:00.0", "0000:47:00.0", "0000:4e:00.0",
              "0000:87:00.0", "0000:90:00.0", "0000:b7:00.0", "0000:bd:00.0"),
             ("0000:c4:00.0", "0000:c5:00.0", "0000:c6:00.0", "0000:c7:00.0", "0000:c8:00.0", "0000:c9:00.0"),
             12, "25", (2, 2, 2, 2, 2, 2), pci_id="10de:20b2", short="a100", power="400W"),
    Platform("h100x4", "NVIDIA H100 80GB HBM3", "direct",
             ("0000:18:00.0", "0000:2a:00.0", "0000:ba:00.0", "0000:db:00.0"), (), 18, "26.562", nics=4,
             short="h4x"),
    Platform("a100x4", "NVIDIA A100-SXM4-40GB", "direct",
             ("0000:01:00.0", "0000:41:00.0", "0000:81:00.0", "0000:c1:00.0"), (), 12, "25", nics=4,
             pci_id="10de:20b0", short="a4x", mem="40536MiB", power="400W"),
    Platform("gb200", "NVIDIA GB200", "nvl72",
             ("0008:01:00.0", "0009:01:00.0", "0018:01:00.0", "0019:01:00.0"), (), 18, "53.125", nics=4,
             pci_id="10de:2941", short="gb", mem="189471MiB", power="1200W"),
    Platform("b200", "NVIDIA B200", "nvswitch",
             ("0000:1b:00.0", "0000:43:00.0", "0000:52:00.0", "0000:61:00.0",
              "0000:9d:00.0", "0000:c3:00.0", "0000:d1:00.0", "0000:df:00.0"), (), 18, "53.125",
             pci_id="10de:2901", short="b200", mem="183359MiB", power="1000W"),
    Platform("a100pcie", "NVIDIA A100 80GB PCIe", "pcie",
             ("0000:17:00.0", "0000:65:00.0", "0000:ca:00.0", "0000:e3:00.0"), (), 0, nics=2,
             pci_id="10de:20b5", short="a1p", power="300W"),
    Platform("l40s", "NVIDIA L40S", "pcie",
             ("0000:16:00.0", "0000:38:00.0", "0000:49:00.0", "0000:5a:00.0",
              "0000:98:00.0", "0000:b8:00.0", "0000:c8:00.0", "0000:d8:00.0"), (), 0, nics=2,
             pci_id="10de:26b9", short="l40s", mem="46068MiB", power="350W"),
    Platform("rtx4090", "NVIDIA GeForce RTX 4090", "pcie",
             ("0000:21:00.0", "0000:22:00.0", "0000:41:00.0", "0000:43:00.0"), (), 0, nics=1,
             pci_id="10de:2684", short="rtx", mem="24564MiB", power="450W"),
    Platform("a40", "NVIDIA A40", "bridge",
             ("0000:3b:00.0", "0000:5e:00.0"), (), 4, "14.062", nics=1, pci_id="10de:2235", short="a40",
             mem="46068MiB", power="300W"),
    Platform("a10", "NVIDIA A10", "pcie",
             ("0000:00:1e.0",), (), 0, nics=0, pci_id="10de:2236", short="a10", mem="23028MiB", power="150W"),
]}

NCCL_VERSIONS = ("2.18.6", "2.20.5", "2.21.5", "2.23.4", "2.26.2", "2.27.3")
DRIVER = "570.158.01"
KERNEL_STYLES = ("mono", "ctime", "syslog", "iso")
ENVELOPES = ("text", "vector", "filebeat")

# --------------------------------------------------------------------------------------------------
# Model of one scenario's hosts, job and lines


@dataclass
class Gpu:
    index: int
    bus: str  # dddd:bb:dd.f
    uuid: str
    serial: str

    @property
    def xid_bus(self) -> str:
        """How an Xid line prints it: ``PCI:0000:1b:00`` (no function)."""
        return self.bus[:-2]

    @property
    def nccl_bus(self) -> str:
        """NCCL's ``busId %lx`` (formats.md §11.4)."""
        d, b, rest = self.bus.split(":")
        dev, fn = rest.split(".")
        return f"{(int(d, 16) << 20) | (int(b, 16) << 12) | (int(dev, 16) << 4) | int(fn, 16):x}"


@dataclass
class Host:
    name: str
    plat: Platform
    style: str  # kernel stamp style
    skew: int  # µs, host clock = true time + skew
    boot: int  # true boot time, µs
    gpus: list[Gpu]
    nics: list[str]
    ips: dict[str, str]  # nic -> IPoIB address
    envelope: str  # Kafka shipper envelope for non-kernel lines
    syslog_mono: bool  # syslog style forwards the kernel's [mono] stamp too
    nccl_version: str
    wiring: dict[tuple[str, int], tuple[str, int]] = field(default_factory=dict)  # (gpu bus, link) -> far end

    def gpu(self, bus: str) -> Gpu:
        return next(g for g in self.gpus if g.bus == bus)

    @property
    def nccl(self) -> tuple[int, ...]:
        return tuple(int(x) for x in self.nccl_version.split("."))

    @property
    def nccl_stamps_warn(self) -> bool:
        """NCCL 2.26 added ``NCCL_DEBUG_TIMESTAMP_FORMAT`` (default on WARN lines)."""
        return self.nccl >= (2, 26)

    @property
    def channel_index(self) -> bool:
        """From 2.18.3 channel brackets hold the NVML index, before the busId."""
        return self.nccl >= (2, 18, 3)


@dataclass
class Rank:
    rank: int
    host: Host
    gpu: Gpu
    pid: int
    tid: int

    @property
    def nccl(self) -> str:
        return f"{self.host.name}:{self.pid}:{self.tid} [{self.gpu.index}]"


@dataclass
class Job:
    ranks: list[Rank]
    comm: str  # commId
    comm_ptr: dict[int, str]
    start: int  # true µs
    seq: int  # SeqNum of the collective in flight at the fault
    timeout_ms: int = 600_000  # the process group's watchdog timeout (one per job)

    def on(self, host: Host) -> list[Rank]:
        return [r for r in self.ranks if r.host is host]

    def of(self, host: Host, bus: str) -> Rank | None:
        return next((r for r in self.ranks if r.host is host and r.gpu.bus == bus), None)


@dataclass
class Line:
    """One log line (or one multi-line block) at true time ``t``.

    ``chan``: ``kernel`` (dmesg), ``system`` (journal: systemd, Fabric Manager), ``nccl`` (job
    output: NCCL, PyTorch, the training script), ``nvml`` (nvidia-smi / DCGM output, one block).
    ``stamp``: ``kernel`` (the host's kernel style), ``c10`` (PyTorch prefix; ``rank``, ``lvl``,
    ``where``), ``ncclwarn`` (NCCL ≥2.26 prints ``[%F %T] ``), ``none``.
    """

    t: int
    chan: str
    text: str
    stamp: str = "none"
    rank: int | None = None
    lvl: str = "E"
    where: str = "ProcessGroupNCCL.cpp:607"
    tag: str = "kernel"


@dataclass
class Reporter:
    """One expected downstream reporter, in firstfault's terms."""

    host: str
    device: str | None = None
    rank: int | None = None
    gpu_index: int | None = None


@dataclass
class Truth:
    kind: str
    benign: bool
    host: str | None = None
    device_type: str | None = None
    device: str | None = None
    peer: str | None = None
    link: int | None = None
    rank: int | None = None
    category: str | None = None
    downstream: list[Reporter] = field(default_factory=list)
    own: list[Reporter] = field(default_factory=list)  # the initiator's own reports (allowed, not required)


@dataclass
class SymptomSpec:
    """What the operator says (``correlate.correlator.Symptom``): only the ``diagnose`` path can take it."""

    host: str
    kind: str = "hang"


@dataclass
class FileOut:
    name: str  # <host>.<source>.log
    data: bytes
    mtime: int  # µs


@dataclass
class KafkaMsg:
    topic: str
    key: str
    value: bytes
    timestamp_ms: int  # CreateTime set by the shipper (host clock)
    deliver: int  # true µs at which it reaches the broker (production order)
    duplicate: bool = False
    sid: int = -1  # the scenario it belongs to (not sent)


@dataclass
class Scenario:
    sid: int
    kind: str
    variant: str
    t0: int  # true fault time µs
    hosts: dict[str, Host]
    truth: Truth
    symptoms: list[SymptomSpec] = field(default_factory=list)
    kafka_expressible: bool = True  # False: only an operator symptom says anything (no Kafka channel for it)
    lines: dict[str, list[Line]] = field(default_factory=dict)  # host -> lines
    files: list[FileOut] = field(default_factory=list)
    messages: list[KafkaMsg] = field(default_factory=list)
    fleet: dict[str, dict[str, str]] = field(default_factory=dict)  # fleet config entries


@dataclass
class Fleet:
    scenarios: list[Scenario]
    seed: int

    def fleet_config(self) -> dict[str, Any]:
        """``hosts: {name: {platform, domain}}`` for ``correlate.topology.load_fleet_config``."""
        return {"hosts": {h: cfg for s in self.scenarios for h, cfg in s.fleet.items()}}

    def host_scenario(self) -> dict[str, int]:
        return {h: s.sid for s in self.scenarios for h in s.hosts}


# --------------------------------------------------------------------------------------------------
# Rendering: stamps in each host's clock and style (formats.md §1, §7, §11.1, §12.1)

_WD = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_MO = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def _dt(us: int) -> datetime:
    return datetime.fromtimestamp(us // S, tz=timezone.utc).replace(microsecond=us % S)


def ctime(us: int) -> str:
    """``Fri Aug 30 11:43:09 2024`` (day padded with a space)."""
    d = _dt(us)
    return f"{_WD[d.weekday()]} {_MO[d.month - 1]} {d.day:2d} {d:%H:%M:%S} {d.year}"


def syslog_time(us: int) -> str:
    d = _dt(us)
    return f"{_MO[d.month - 1]} {d.day:2d} {d:%H:%M:%S}"


def iso_dmesg(us: int) -> str:
    """``dmesg --time-format iso``: ``2025-05-27T04:18:56,089671+00:00``."""
    d = _dt(us)
    return f"{d:%Y-%m-%dT%H:%M:%S},{d.microsecond:06d}+00:00"


def iso_z(us: int) -> str:
    d = _dt(us)
    return f"{d:%Y-%m-%dT%H:%M:%S}.{d.microsecond:06d}Z"


def c10_time(us: int, rng_ns: int) -> str:
    """``321 02:07:08.408271257``: month not zero-padded, day padded, nanoseconds."""
    d = _dt(us)
    return f"{d.month}{d.day:02d} {d:%H:%M:%S}.{d.microsecond:06d}{rng_ns:03d}"


def kernel_prefixes(h: Host, t: int, tag: str = "kernel") -> tuple[str, str]:
    """(first-line prefix, continuation prefix) of a kernel line in the host's style."""
    wall = t + h.skew
    mono = (t - h.boot) / S
    if h.style == "mono":
        p = f"[{mono:12.6f}] "
        return p, " " * len(p)
    if h.style == "ctime":
        p = f"[{ctime(wall)}] "
        return p, " " * len(p)
    if h.style == "iso":
        p = f"{iso_dmesg(wall)} "
        return p, " " * len(p)
    p = f"{syslog_time(wall)} {h.name} {tag}: " + (f"[{mono:12.6f}] " if h.syslog_mono and tag == "kernel" else "")
    return p, p  # syslog: every continuation is its own record with its own prefix


def render(h: Host, ln: Line, ns: int = 0) -> list[str]:
    """The physical lines of one ``Line`` as the host prints them."""
    wall = ln.t + h.skew
    if ln.chan == "system":
        return [f"{syslog_time(wall)} {h.name} {ln.tag}: {ln.text}"]
    if ln.stamp == "kernel":
        first, cont = kernel_prefixes(h, ln.t, ln.tag)
        parts = ln.text.split("\n")
        return [first + parts[0]] + [cont + p for p in parts[1:]]
    if ln.stamp == "c10":
        return [f"[rank{ln.rank}]:[{ln.lvl}{c10_time(wall, ns)} {ln.where}] {ln.text}"]
    if ln.stamp == "ncclwarn" and h.nccl_stamps_warn:
        d = _dt(wall)
        return [f"[{d:%Y-%m-%d %H:%M:%S}] {ln.text}"]
    return ln.text.split("\n")


# --------------------------------------------------------------------------------------------------
# The scenario builder: hosts, job, and line helpers


class Sc:
    """Builds one scenario (see module doc). ``r`` is the scenario's own RNG."""

    def __init__(self, sid: int, kind: str, seed: int) -> None:
        self.sid, self.kind = sid, kind
        self.r = random.Random(f"{seed}:{sid}:{kind}")
        self.t0 = T0 + sid * SLOT + self.r.randint(3 * 3600, 4 * 3600) * S + self.r.randint(0, S - 1)
        self.hosts: dict[str, Host] = {}
        self.lines: dict[str, list[Line]] = {}
        self.fleet: dict[str, dict[str, str]] = {}
        self.variant = ""
        self.symptoms: list[SymptomSpec] = []
        self.kafka_expressible = True

    # --- hosts ------------------------------------------------------------------------------------
    def host(self, key: str, domain: str | None = None, style: str | None = None) -> Host:
        p = PLATFORMS[key]
        r = self.r
        name = f"{p.short}-{self.sid:03d}{len(self.hosts) + 1:02d}"
        gpus = [Gpu(i, b, "GPU-" + "-".join(f"{r.getrandbits(n * 4):0{n}x}" for n in (8, 4, 4, 4, 12)),
                    f"16500{r.randint(10 ** 7, 10 ** 8 - 1)}") for i, b in enumerate(p.buses)]
        nics = [f"mlx5_{i}" for i in range(p.nics)]
        h = Host(name=name, plat=p, style=style or r.choice(KERNEL_STYLES), skew=r.randint(-MAX_SKEW, MAX_SKEW),
                 boot=self.t0 - r.randint(2 * 3600, 40 * 86400) * S, gpus=gpus, nics=nics,
                 ips={n: f"192.0.2.{r.randint(2, 250)}" if i % 2 else f"198.51.100.{r.randint(2, 250)}"
                      for i, n in enumerate(nics)},
                 envelope=r.choice(ENVELOPES), syslog_mono=r.random() < 0.5, nccl_version=r.choice(NCCL_VERSIONS))
        h.wiring = wiring(p)
        self.hosts[name] = h
        self.lines[name] = []
        self.fleet[name] = {"platform": p.model, **({"domain": domain} if domain else {})}
        return h

    # --- line helpers -----------------------------------------------------------------------------
    def k(self, h: Host, t: int, text: str, tag: str = "kernel") -> None:
        self.lines[h.name].append(Line(t, "kernel", text, "kernel", tag=tag))

    def sys(self, h: Host, t: int, tag: str, text: str) -> None:
        self.lines[h.name].append(Line(t, "system", text, tag=tag))

    def info(self, rk: Rank, t: int, msg: str) -> None:
        self.lines[rk.host.name].append(Line(t, "nccl", f"{rk.nccl} NCCL INFO {msg}"))

    def warn(self, rk: Rank, t: int, where: str, msg: str) -> None:
        self.lines[rk.host.name].append(Line(t, "nccl", f"{rk.nccl} {where} NCCL WARN {msg}", "ncclwarn"))

    def c10(self, rk: Rank, t: int, msg: str, where: str = "ProcessGroupNCCL.cpp:607", lvl: str = "E") -> None:
        self.lines[rk.host.name].append(Line(t, "nccl", msg, "c10", rank=rk.rank, lvl=lvl, where=where))

    def out(self, h: Host, t: int, text: str) -> None:
        self.lines[h.name].append(Line(t, "nccl", text))

    def block(self, h: Host, t: int, text: str) -> None:
        self.lines[h.name].append(Line(t, "nvml", text))

    def ms(self, a: float, b: float) -> int:
        return int(self.r.uniform(a, b) * S)

    # --- the job ----------------------------------------------------------------------------------
    def job(self, hosts: list[Host], per_host: int | None = None, nccl_log: bool = True, start: int | None = None,
            init_fails: Host | None = None) -> Job:
        """Ranks over ``hosts`` (consecutive ranks per host), NCCL start-up lines, training noise.
        ``init_fails``: that host's ranks never log ``Init COMPLETE``."""
        r = self.r
        ranks: list[Rank] = []
        for h in hosts:
            for g in h.gpus[:per_host or len(h.gpus)]:
                ranks.append(Rank(len(ranks), h, g, r.randint(2000, 4_000_000), 0))
        for rk in ranks:
            rk.tid = rk.pid + r.randint(30, 900)
        start = start if start is not None else self.t0 - r.randint(15 * 60, 8 * 3600) * S
        job = Job(ranks, comm=f"0x{r.getrandbits(64):016x}", comm_ptr={rk.rank: f"0x{r.getrandbits(44) | 1 << 44:x}0"
                                                                        for rk in ranks},
                  start=start, seq=r.randint(800, 200_000), timeout_ms=r.choice((600_000, 1_800_000)))
        if nccl_log:
            self.nccl_startup(job, init_fails)
        self.training(job)
        return job

    def nccl_startup(self, job: Job, init_fails: Host | None = None) -> None:
        r, n = self.r, len(job.ranks)
        t = job.start
        for rk in job.ranks:
            h = rk.host
            tt = t + r.randint(0, 3 * S)
            if rk.rank == 0:
                self.info(rk, tt, f"Bootstrap : Using eth0:{h.ips[h.nics[0]] if h.nics else '198.51.100.9'}<0>")
                self.info(rk, tt + 20, f"NCCL version {h.nccl_version}+cuda12.4")
            self.info(rk, tt + 40, "cudaDriverVersion 12040")
            if h.nics:
                nets = " ".join(f"[{i}]{nic}:1/IB" for i, nic in enumerate(h.nics))
                self.info(rk, tt + 900, f"NET/IB : Using {nets} ; OOB eth0:{h.ips[h.nics[0]]}<0>")
                self.info(rk, tt + 950, "Using network IB")
            api = "ncclCommInitRank " if h.nccl >= (2, 21) else ""
            ids = f"cudaDev {rk.gpu.index} nvmlDev {rk.gpu.index} busId {rk.gpu.nccl_bus} commId {job.comm}"
            self.info(rk, tt + 1000, f"{api}comm {job.comm_ptr[rk.rank]} rank {rk.rank} nranks {n} {ids} - Init START")
            nxt = job.ranks[(rk.rank + 1) % n]
            if nxt is not rk:
                for ch in range(2):
                    self.info(rk, tt + 2 * S + ch, self.channel(rk, nxt, ch))
            if h is init_fails:
                continue
            self.info(rk, tt + 3 * S, "Connected all rings")
            self.info(rk, tt + 3 * S + 10, f"{api}comm {job.comm_ptr[rk.rank]} rank {rk.rank} nranks {n} {ids}"
                                           " - Init COMPLETE")

    def channel(self, a: Rank, b: Rank, ch: int) -> str:
        h = a.host
        da = str(a.gpu.index) if h.channel_index else a.gpu.nccl_bus
        db = str(b.gpu.index) if h.channel_index else b.gpu.nccl_bus
        if a.host is not b.host:
            nic = h.nics[a.gpu.index % len(h.nics)] if h.nics else "eth0"
            return (f"Channel {ch:02d}/0 : {a.rank}[{da}] -> {b.rank}[{db}] [send] via "
                    f"NET/IB/{h.nics.index(nic) if h.nics else 0}/GDRDMA")
        if h.plat.fabric in ("pcie",):
            how = "P2P/direct pointer" if h.nccl < (2, 19) else "P2P/CUMEM"
        else:
            how = "P2P/CUMEM/read" if h.nccl >= (2, 19) else "P2P/IPC/read"
        return f"Channel {ch:02d}/0 : {a.rank}[{da}] -> {b.rank}[{db}] via {how}"

    def training(self, job: Job, until: int | None = None) -> None:
        """Progress lines of rank 0 and a few framework warnings (noise: no signature matches them)."""
        r = self.r
        r0 = job.ranks[0]
        t = max(job.start + 60 * S, self.t0 - 20 * 60 * S)
        end = until or self.t0
        step = r.randint(1000, 90_000)
        while t < end:
            loss = 1.2 + 2.5 * r.random()
            self.out(r0.host, t, f"[rank0]: step {step} | loss {loss:.4f} | lr 1.2e-04 | grad_norm {r.uniform(0.2, 2):.3f}"
                                 f" | tokens/s {r.randint(150_000, 420_000)}")
            step += 10
            t += self.ms(8, 25)
        self.c10(r0, job.start + 30 * S, "Warning: TORCH_NCCL_AVOID_RECORD_STREAMS=1 has no effect for "
                 "point-to-point collectives. (function operator())", "ProcessGroupNCCL.cpp:1200", "W")

    # --- consequences shared by many kinds --------------------------------------------------------
    def watchdog(self, rk: Rank, job: Job, start: int, timeout_ms: int) -> int:
        """PyTorch's watchdog timeout block for ``rk`` (formats.md §12.2); returns the log time."""
        ran = timeout_ms + self.r.randint(5, 90)
        t = start + ran * MS
        numel = self.r.choice((466119168, 9801523, 262144, 16777216))
        op = "ALLREDUCE"
        self.c10(rk, t, f"[Rank {rk.rank}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum={job.seq}, "
                        f"OpType={op}, NumelIn={numel}, NumelOut={numel}, Timeout(ms)={timeout_ms}) ran for {ran} "
                        "milliseconds before timing out.", "ProcessGroupNCCL.cpp:607")
        self.c10(rk, t + 300, f"[PG ID 0 PG GUID 0(default_pg) Rank {rk.rank}] Exception (either an error or timeout) "
                              f"detected by watchdog at work: {job.seq}, last enqueued NCCL work: {job.seq + 2}, last "
                              f"completed NCCL work: {job.seq - 1}.", "ProcessGroupNCCL.cpp:1785")
        self.c10(rk, t + 350, f"[Rank {rk.rank}] Some NCCL operations have failed or timed out. Due to the asynchronous "
                              "nature of CUDA kernels, subsequent GPU operations might run on corrupted/incomplete "
                              "data.", "ProcessGroupNCCL.cpp:684")
        self.c10(rk, t + 380, f"[Rank {rk.rank}] To avoid data inconsistency, we are taking the entire process down.",
                 "ProcessGroupNCCL.cpp:698")
        return t

    def remote_error(self, rk: Rank, t: int, peer_ip: str) -> None:
        """A rank whose peer vanished: NET/IB retry-exceeded, then PyTorch's DistBackendError (formats.md §11.5, §12.3)."""
        h = rk.host
        local = h.ips[h.nics[rk.gpu.index % len(h.nics)]] if h.nics else "198.51.100.7"
        # NCCL 2.21 net_ib.cc wording (constructed from nccl#1814's line with this release's file name)
        self.warn(rk, t, f"transport/net_ib.cc:{self.r.choice((1696, 1701))}",
                  f"NET/IB : Got completion from peer {peer_ip}<{self.r.randint(30000, 60000)}> with status=12 "
                  f"opcode=129 len=0 vendor err 129 (Recv) localGid ::ffff:{local} remoteGids::ffff:{peer_ip}")
        self.info(rk, t + 200, "transport/net.cc:1298 -> 6")
        for i, txt in enumerate((
                "torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/NCCLUtils.hpp:268, "
                f"remote process exited or there was a network error, NCCL version {h.nccl_version}",
                "ncclRemoteError: A call failed possibly due to a network error or a remote process exiting prematurely.",
                "Last error:",
                f"NET/IB : Got completion from peer {peer_ip}<43412> with status=12 opcode=129 len=0 vendor err 129")):
            self.out(h, t + self.ms(0.5, 1.5) + i, f"[rank{rk.rank}]: {txt}")

    def app_crash(self, rk: Rank, t: int, what: str) -> None:
        """The faulty GPU's own process dies (Python traceback lines: no signature)."""
        for i, txt in enumerate(("Traceback (most recent call last):",
                                 '  File "/workspace/train.py", line 412, in <module>',
                                 "    loss.backward()",
                                 f"RuntimeError: CUDA error: {what}",
                                 "CUDA kernel errors might be asynchronously reported at some other API call, so the "
                                 "stacktrace below might be incorrect.")):
            self.out(rk.host, t + i, f"[rank{rk.rank}]: {txt}")

    def job_fallout(self, job: Job, bad: Rank | None, t: int, *, remote: str = "error",
                    truth: list[Reporter], timeout_ms: int | None = None, skip: set[int] | None = None) -> None:
        """What the other ranks log when ``bad``'s rank stops at ``t``: local peers hang until the watchdog
        fires; ranks on other hosts see the IB peer vanish (``remote='error'``) or hang too (``'timeout'``)."""
        timeout_ms = timeout_ms or job.timeout_ms
        skip = skip or set()
        peer_ip = bad.host.ips[bad.host.nics[bad.gpu.index % len(bad.host.nics)]] if bad and bad.host.nics else \
            "198.51.100.77"
        for rk in job.ranks:
            if (bad is not None and rk is bad) or rk.rank in skip:
                continue
            if bad is not None and rk.host is not bad.host and remote == "error":
                self.remote_error(rk, t + self.ms(0.3, 15), peer_ip)
            else:
                # the collective in flight was enqueued up to a couple of seconds before the fault
                self.watchdog(rk, job, t + self.ms(-2.0, 0.2), timeout_ms)
            truth.append(Reporter(rk.host.name, rk.gpu.bus, rk.rank, rk.gpu.index))

    # --- nvidia-smi / topo snapshots ---------------------------------------------------------------
    def snapshots(self, h: Host, t: int, *, smi: float = 0.8, topo: float = 0.7, remote: float = 1.0,
                  status: float = 0.4) -> None:
        """What a poller or a health check ships from ``h`` at ``t`` (formats.md §9)."""
        r = self.r
        if r.random() < smi:
            self.block(h, t, smi_table(h, t + h.skew))
        if r.random() < topo:
            self.block(h, t + S, "$ nvidia-smi topo -m\n" + topo_matrix(h))
        if h.wiring and r.random() < remote:
            self.block(h, t + 2 * S, "$ nvidia-smi nvlink -R\n" + nvlink_remote(h))
        if h.plat.links and r.random() < status:
            self.block(h, t + 3 * S, "$ nvidia-smi nvlink -s\n" + nvlink_status(h))

    def noise(self, h: Host, start: int, end: int) -> None:
        """Kernel chatter and, now and then, one corrected AER far from anything (formats.md §6)."""
        r = self.r
        pool = [
            f"NVRM: loading NVIDIA UNIX Open Kernel Module for x86_64  {DRIVER}  Release Build  "
            "(dvs-builder@U22-I3-B10-02-5)  Mon Jun  2 13:13:04 UTC 2025",
            "nvidia-modeset: Loading NVIDIA Kernel Mode Setting Driver for UNIX platforms  570.158.01",
            f"nvidia-uvm: Loaded the UVM driver, major device number {r.randint(500, 511)}.",
            "EXT4-fs (nvme0n1p2): mounted filesystem with ordered data mode. Quota mode: none.",
            "IPv6: ADDRCONF(NETDEV_CHANGE): ib0: link becomes ready",
            f"mlx5_core 0000:{r.randint(0x0c, 0x0f):02x}:00.0: Port module event: module 0, Cable plugged",
            "audit: type=1400 audit(1709450000.123:245): apparmor=\"STATUS\" operation=\"profile_load\"",
            "perf: interrupt took too long (2503 > 2500), lowering kernel.perf_event_max_sample_rate to 79800",
            f"docker0: port {r.randint(1, 9)}(veth{r.getrandbits(28):07x}) entered forwarding state",
            "nvidia-nvswitch0: open (major=508)" if h.plat.switches else "nvidia 0000:00:00.0: enabling device",
            "TCP: request_sock_TCP: Possible SYN flooding on port 29500. Sending cookies.",
            "ib_srpt received unrecognized IB event 8",
            "NFS: state manager: check lease failed on NFSv4 server 198.51.100.20 with error 13",
        ]
        for _ in range(r.randint(8, 20)):
            self.k(h, r.randint(start, end), r.choice(pool))
        if r.random() < 0.12:  # one corrected error far from everything: benign (DESIGN.md)
            t = r.choice((start + r.randint(0, 40 * 60) * S, end - r.randint(0, 10 * 60) * S))
            corrected_aer(self, h, t)

    def done(self, truth: Truth) -> Scenario:
        return Scenario(self.sid, self.kind, self.variant, self.t0, self.hosts, truth, self.symptoms,
                        self.kafka_expressible, self.lines, fleet=self.fleet)


def wiring(p: Platform) -> dict[tuple[str, int], tuple[str, int]]:
    """(GPU bus, local link) -> (far bus, far link) as ``nvidia-smi nvlink -R`` reports it (topology.md §7)."""
    out: dict[tuple[str, int], tuple[str, int]] = {}
    if p.fabric == "nvswitch" and p.switches:
        for gi, g in enumerate(p.buses):
            link = 0
            for si, (sw, n) in enumerate(zip(p.switches, p.per_switch)):
                for j in range(n):
                    out[(g, link)] = (sw, 8 + gi * n + j)  # A100 trunk ports 0-7 stay unused
                    link += 1
    elif p.fabric == "direct":
        per = p.links // (len(p.buses) - 1)
        for gi, g in enumerate(p.buses):
            peers = [x for x in range(len(p.buses)) if x != gi]
            for slot, pj in enumerate(peers):
                back = [x for x in range(len(p.buses)) if x != pj].index(gi)
                for m in range(per):
                    out[(g, slot * per + m)] = (p.buses[pj], back * per + m)
    elif p.fabric == "bridge":
        a, b = p.buses[:2]
        for m in range(p.links):
            out[(a, m)] = (b, m)
            out[(b, m)] = (a, m)
    return out


def links_to(h: Host, far: str) -> list[tuple[str, int, int]]:
    """(GPU bus, local link, far link) of every link whose far end is ``far``."""
    return sorted((g, l, fl) for (g, l), (f, fl) in h.wiring.items() if f == far)


# --------------------------------------------------------------------------------------------------
# nvidia-smi, topo and DCGM text (formats.md §9, §10; nvml.yaml examples)


def smi_table(h: Host, wall: int, ecc: dict[str, int] | None = None) -> str:
    ecc = ecc or {}
    d = _dt(wall)
    rows = [f"{_WD[d.weekday()]} {_MO[d.month - 1]} {d.day:2d} {d:%H:%M:%S} {d.year}       ",
            "+---------------------------------------------------------------------------------------+",
            f"| NVIDIA-SMI {DRIVER}             Driver Version: {DRIVER}   CUDA Version: 12.8     |",
            "|-----------------------------------------+----------------------+----------------------+",
            "| GPU  Name                 Persistence-M | Bus-Id        Disp.A | Volatile Uncorr. ECC |",
            "| Fan  Temp   Perf          Pwr:Usage/Cap |         Memory-Usage | GPU-Util  Compute M. |",
            "|=========================================+======================+======================|"]
    for g in h.gpus:
        bus = f"0000{g.bus}".upper()  # nvidia-smi prints an 8-digit domain
        rows.append(f"| {g.index:>3}  {h.plat.model[:26]:<26}     On  | {bus} Off | {ecc.get(g.bus, 0):>20} |")
        rows.append(f"| N/A   {34 + g.index % 5}C    P0             {70 + g.index}W / {h.plat.power:>5} |"
                    f"      4MiB / {h.plat.mem:>9} |      0%      Default |")
        rows.append("|                                         |                      |             Disabled |")
        rows.append("+-----------------------------------------+----------------------+----------------------+")
    return "\n".join(rows)


def topo_matrix(h: Host) -> str:
    n, p = len(h.gpus), h.plat
    nics = [f"NIC{i}" for i in range(len(h.nics))]
    head = "\t" + "\t".join([f"GPU{i}" for i in range(n)] + nics + ["CPU Affinity", "NUMA Affinity", "GPU NUMA ID"])

    def gpu_path(i: int, j: int) -> str:
        if i == j:
            return " X "
        if p.fabric in ("nvswitch", "nvl72"):
            return f"NV{p.links}"
        if p.fabric == "direct":
            return f"NV{p.links // (n - 1)}"
        if p.fabric == "bridge":
            return f"NV{p.links}"
        half = max(1, n // 2)
        if i // half != j // half:
            return "SYS"
        return "PIX" if i // 2 == j // 2 else ("PXB" if n <= 4 else "NODE")

    rows = [head]
    for i in range(n):
        cells = [gpu_path(i, j) for j in range(n)]
        cells += ["PIX" if k * n // max(1, len(nics)) <= i < (k + 1) * n // max(1, len(nics)) else "SYS"
                  for k in range(len(nics))]
        numa = 0 if i < max(1, n // 2) else 1
        rows.append(f"GPU{i}\t" + "\t".join(cells) + f"\t{'0-55,112-167' if numa == 0 else '56-111,168-223'}\t{numa}\t\tN/A")
    rows += ["", "Legend:", "", "  X    = Self",
             "  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes (e.g., QPI/UPI)",
             "  NODE = Connection traversing PCIe as well as the interconnect between PCIe Host Bridges within a NUMA node",
             "  PHB  = Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)",
             "  PXB  = Connection traversing multiple PCIe bridges (without traversing the PCIe Host Bridge)",
             "  PIX  = Connection traversing at most a single PCIe bridge",
             "  NV#  = Connection traversing a bonded set of # NVLinks"]
    if h.nics:
        rows += ["", "NIC Legend:", ""] + [f"  NIC{i}: {nic}" for i, nic in enumerate(h.nics)]
    return "\n".join(rows)


def _gpu_header(h: Host, g: Gpu) -> str:
    return f"GPU {g.index}: {h.plat.model} (UUID: {g.uuid})"


def nvlink_remote(h: Host) -> str:
    rows = []
    for g in h.gpus:
        rows.append(_gpu_header(h, g))
        for l in range(h.plat.links):
            far = h.wiring.get((g.bus, l))
            if far:
                rows.append(f"\t Link {l}: Remote Device 0000{far[0].upper()}: Link {far[1]}")
    return "\n".join(rows)


def nvlink_status(h: Host, down: set[tuple[str, int]] | None = None) -> str:
    down = down or set()
    rows = []
    for g in h.gpus:
        rows.append(_gpu_header(h, g))
        for l in range(h.plat.links):
            rows.append(f"\t Link {l}: <inactive>" if (g.bus, l) in down else f"\t Link {l}: {h.plat.gbps} GB/s")
    return "\n".join(rows)


def dcgm_health_nvlink_down(h: Host, gpus: list[Gpu], links: int) -> str:
    """``dcgmi health -c`` with the NVLink watch on a GPU without NVLink (NVSentinel#1481 shape)."""
    rows = ["+---------------------------+-----------------------------------------------+",
            "| Health Monitor Report                                                     |",
            "+===========================+===============================================+",
            "| Overall Health            | Failure                                       |"]
    for g in gpus:
        rows.append(f"| -> {g.index:<23}| Failure                                       |")
        rows.append("|    -> NVLINK system       | Failure                                       |")
        for l in range(links):
            txt = f"GPU {g.index}'s NvLink link {l} is currently down"
            rows.append(f"|                           | {txt:<46}|")
    rows.append("+---------------------------+-----------------------------------------------+")
    return "\n".join(rows)


def dcgm_diag_nvlink_down(g: Gpu, links: int) -> str:
    """``dcgmi diag -r 1`` Integration/PCIe warning, wrapped at 46 columns (DCGM#49 shape)."""
    text = ", ".join(f"GPU {g.index}GPU {g.index}'s NvLink link {l} is currently down Run a field diagnostic on the GPU."
                     for l in range(links))
    width = 46
    chunks = [text[i:i + width] for i in range(0, len(text), width)]
    rows = ["+-----  Integration  -------+------------------------------------------------+",
            "| PCIe                      | Fail - All                                     |"]
    for i, c in enumerate(chunks):
        rows.append(f"| {'Warning' if i == 0 else '':<26}| {c:<47}|")
    rows.append("+---------------------------+------------------------------------------------+")
    return "\n".join(rows)


# --------------------------------------------------------------------------------------------------
# Kernel line builders (xid.yaml, sxid.yaml, pcie.yaml examples)


def xid(g: Gpu, code: int, msg: str, pid: str | None = "'<unknown>'", name: str | None = "<unknown>") -> str:
    ctx = (f", pid={pid}" if pid is not None else "") + (f", name={name}" if name is not None else "")
    return f"NVRM: Xid (PCI:{g.xid_bus}): {code}{ctx}, {msg}"


def preamble(sc: Sc, h: Host, g: Gpu, t: int) -> None:
    sc.k(h, t, f"NVRM: GPU at PCI:{g.xid_bus}: {g.uuid}")
    sc.k(h, t + 8, f"NVRM: GPU Board Serial Number: {g.serial}")


def sxid_group(sc: Sc, h: Host, sw: str, port: int, code: int, t: int, cls: str = "Fatal",
               desc: str = "LTSSM Fault Up") -> None:
    n = h.plat.switches.index(sw)
    dev = f"nvidia-nvswitch{n}: SXid (PCI:{sw}): {code:05d}"
    sc.k(h, t, f"{dev}, {cls}, Link {port:02d} {desc}")
    sc.k(h, t + sc.r.randint(1000, 5000), f"{dev}, Severity {1 if cls == 'Fatal' else 0} Engine instance {port:02d} "
                                         "Sub-engine instance 00")
    words = ", ".join(f"0x{w:08x}" for w in [0x10000000, 0x10000000, 0, 0x10000000, 0, 0, 0, 0, 0])
    sc.k(h, t + sc.r.randint(5000, 9000), f"{dev}, Data {{{words}}}")


def corrected_aer(sc: Sc, h: Host, t: int) -> None:
    port = sc.r.choice(("0000:00:1c.5", "0000:00:03.1", "0000:40:01.1", "0000:c0:03.1"))
    old = sc.r.random() < 0.5
    if old:
        sc.k(h, t, f"pcieport {port}: AER: Corrected error received: {port}")
        sc.k(h, t + 20, f"pcieport {port}: PCIe Bus Error: severity=Corrected, type=Physical Layer, (Receiver ID)")
    else:
        sc.k(h, t, f"pcieport {port}: AER: Correctable error message received from {port}")
        sc.k(h, t + 20, f"pcieport {port}: PCIe Bus Error: severity=Correctable, type=Physical Layer, (Receiver ID)")
    sc.k(h, t + 40, f"pcieport {port}:   device [8086:a110] error status/mask=00000001/00002000")
    sc.k(h, t + 60, f"pcieport {port}:    [ 0] RxErr                  (First)")


# --------------------------------------------------------------------------------------------------
# Fault kinds. Each builder fills the scenario and returns its Truth.

Builder = Callable[[Sc], Truth]


def _gpu_truth(kind: str, h: Host, g: Gpu, category: str, job: Job | None) -> Truth:
    rk = job.of(h, g.bus) if job else None
    own = [Reporter(h.name, g.bus, rk.rank if rk else None, g.index)]
    return Truth(kind, False, h.name, "gpu", g.bus, category=category, own=own)


def gpu_off_bus(sc: Sc) -> Truth:
    """Xid 79 (or the probe-time form): NVSwitch ports wired to it log SXid 20034, direct peers Xid 74, the
    other ranks of its communicators time out or lose their IB peer (formats.md §2.5)."""
    r = sc.r
    plat = r.choice(("h100", "h100", "a100", "h100x4"))
    probe = r.random() < 0.2 and plat != "h100x4"
    hosts = [sc.host(plat) for _ in range(1 if probe else r.randint(1, 3))]
    h = hosts[0]
    g = r.choice(h.gpus)
    t = sc.t0
    if probe:  # the host has just booted: its kernel log starts at boot
        h.boot = t - r.randint(20, 400) * S
    for x in hosts:
        sc.noise(x, max(x.boot + S, sc.t0 - 2 * 3600 * S), sc.t0 + 20 * 60 * S)
        sc.snapshots(x, max(x.boot + 60 * S, sc.t0 - r.randint(1, 2) * 3600 * S))
    if probe:
        sc.variant = "probe"
        # at driver load: no Xid, a multi-line printk (formats.md §1.8); the job never starts on this host
        sc.k(h, t, f"NVRM: The NVIDIA GPU {g.bus}\nNVRM: (PCI ID: {h.plat.pci_id}) installed in this system has\n"
                   "NVRM: fallen off the bus and is not responding to commands.")
        sc.k(h, t + 130_000, "NVRM: The NVIDIA probe routine failed for 1 device(s).")
        sc.k(h, t + 130_007, f"NVRM: loading NVIDIA UNIX Open Kernel Module for x86_64  {DRIVER}  Release Build  "
                             "(dvs-builder@U22-I3-B10-02-5)  Mon Jun  2 13:13:04 UTC 2025")
        tr = _gpu_truth("gpu_off_bus", h, g, "gpu_off_bus", None)
        return tr
    sc.variant = plat
    job = sc.job(hosts)
    tr = _gpu_truth("gpu_off_bus", h, g, "gpu_off_bus", job)
    preamble(sc, h, g, t - 10)
    sc.k(h, t, xid(g, 79, "GPU has fallen off the bus.", *r.choice([("'<unknown>'", "<unknown>"), ("0", None),
                                                                     (None, None)])))
    sc.k(h, t + 4, f"NVRM: GPU {g.bus}: GPU has fallen off the bus.")
    sc.k(h, t + 7, f"NVRM: GPU {g.bus}: GPU serial number is {g.serial}.")
    sc.k(h, t + 900, "NVRM: kgspRcAndNotifyAllChannels_IMPL: RC all channels for critical error 79.")
    if r.random() < 0.5:
        sc.k(h, t + 1500, xid(g, 154, "GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)",
                              None, None))
    if h.plat.fabric == "nvswitch":
        ports = links_to_switch_ports(h, g)
        for sw, port in r.sample(ports, k=max(1, len(ports) // r.choice((1, 2, 3)))):
            sxid_group(sc, h, sw, port, 20034, t + sc.ms(0.2, 12))
            tr.downstream.append(Reporter(h.name, sw))
        # dedupe switch reporters
        tr.downstream = _uniq(tr.downstream)
    else:  # direct-connect: the peers' ends of its links fail
        for (peer, pl) in sorted({v for (gb, l), v in h.wiring.items() if gb == g.bus}):
            if r.random() < 0.7:
                pg = h.gpu(peer)
                sc.k(h, t + sc.ms(0.01, 0.5), xid(pg, 74, f"NVLink: fatal error detected on link {pl}"
                                                          "(0x0, 0x0, 0x10000, 0x0, 0x0, 0x0, 0x0)"))
                rk = job.of(h, peer)
                tr.downstream.append(Reporter(h.name, peer, rk.rank if rk else None, pg.index))
    bad = job.of(h, g.bus)
    sc.app_crash(bad, t + sc.ms(0.1, 2), "unspecified launch failure")
    job_fallout(sc, job, bad, t, tr)
    sc.snapshots(h, t + r.randint(5, 30) * 60 * S, smi=0.3, topo=0, remote=0, status=0)
    return tr


def job_fallout(sc: Sc, job: Job, bad: Rank, t: int, tr: Truth) -> None:
    rest: list[Reporter] = []
    sc.job_fallout(job, bad, t, remote=sc.r.choice(("error", "timeout")), truth=rest)
    known = {(x.host, x.device) for x in tr.downstream}
    tr.downstream += [x for x in rest if (x.host, x.device) not in known]
    for x in tr.downstream:
        if x.rank is None:
            rk = next((k for k in job.ranks if k.host.name == x.host and k.gpu.bus == x.device), None)
            if rk:
                x.rank, x.gpu_index = rk.rank, rk.gpu.index


def links_to_switch_ports(h: Host, g: Gpu) -> list[tuple[str, int]]:
    return sorted({v for (gb, _l), v in h.wiring.items() if gb == g.bus})


def _uniq(rs: list[Reporter]) -> list[Reporter]:
    seen, out = set(), []
    for x in rs:
        k = (x.host, x.device, x.rank)
        if k not in seen:
            seen.add(k)
            out.append(x)
    return out


def pcie_surprise_down(sc: Sc) -> Truth:
    """AER Surprise Down on the port above a GPU, then its Xid 79 (formats.md §2.5, gpu-burn#1)."""
    r = sc.r
    plat = r.choice(("h100", "a100", "l40s"))
    hosts = [sc.host(plat) for _ in range(r.randint(1, 2))]
    h = hosts[0]
    g = r.choice(h.gpus)
    for x in hosts:
        sc.noise(x, sc.t0 - 2 * 3600 * S, sc.t0 + 20 * 60 * S)
        sc.snapshots(x, sc.t0 - r.randint(1, 2) * 3600 * S)
    job = sc.job(hosts)
    dom, bus = g.bus.split(":")[:2]
    port = f"{dom}:{int(bus, 16) - 1:02x}:00.0"  # the downstream switch port whose secondary bus holds the GPU
    sc.variant = plat
    t = sc.t0
    old = r.random() < 0.5
    ident = "id=0010" if old else port
    sc.k(h, t, f"pcieport {port}: AER: Uncorrected (Fatal) error received: {ident}")
    sc.k(h, t + 13, f"pcieport {port}: PCIe Bus Error: severity=Uncorrected (Fatal), type=Transaction Layer, "
                    f"{'id=0010' if old else ''}(Receiver ID)")
    sc.k(h, t + 50, f"pcieport {port}:   device [10b5:c010] error status/mask=00000020/00000000")
    sc.k(h, t + 153, f"pcieport {port}:    [ 5] {'Surprise Down Error    ' if old else 'SDES                   '}(First)")
    sc.k(h, t + 208, f"nvidia {g.bus}: {r.choice(('device has no AER-aware driver', 'AER: can' + chr(39) + 't recover (no error_detected callback)'))}")
    tf = t + sc.ms(0.05, 0.4)
    if r.random() < 0.5:
        preamble(sc, h, g, tf - 10)
    sc.k(h, tf, xid(g, 79, "GPU has fallen off the bus.", *r.choice([("'<unknown>'", "<unknown>"), (None, None)])))
    sc.k(h, tf + 4, f"NVRM: GPU {g.bus}: GPU has fallen off the bus.")
    sc.k(h, t + sc.ms(1, 2), f"pcieport {port}: AER: Root Port link has been reset (0)")
    rk = job.of(h, g.bus)
    tr = Truth("pcie_surprise_down", False, h.name, "pcie_port", port, category="gpu_off_bus",
               own=[Reporter(h.name, port)],
               downstream=[Reporter(h.name, g.bus, rk.rank if rk else None, g.index)])
    if h.plat.fabric == "nvswitch":
        for sw, p in r.sample(links_to_switch_ports(h, g), k=2):
            sxid_group(sc, h, sw, p, 20034, tf + sc.ms(0.2, 10))
            tr.downstream.append(Reporter(h.name, sw))
        tr.downstream = _uniq(tr.downstream)
    sc.app_crash(rk, tf + sc.ms(0.1, 2), "unspecified launch failure")
    job_fallout(sc, job, rk, tf, tr)
    return tr


ECC_VARIANTS = {
    # (Xid, message); 48's text is NVIDIA's DBE wording, 64/95 are constructed from the catalog names
    "xid48": [(48, "An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at "
                   "partition 6, subpartition 0."),
              (63, "Row Remapper: New row marked for remapping, reset gpu to activate.")],
    "xid64": [(64, "Row Remapper: Failed to remap row, remap pending on all banks; reset gpu to retry.")],
    "xid94": [(94, "Contained: SM (0x1). RST: No, D-RST: No")],
    "xid95": [(95, "Uncontained: FBHUB (0x8). RST: Yes, D-RST: No")],
}


def ecc(sc: Sc) -> Truth:
    """Uncorrectable ECC on one rank's GPU; the other ranks (other hosts too) error out or time out."""
    r = sc.r
    plat = r.choice(("h100", "a100", "b200", "gb200"))
    n = r.randint(2, 4) if plat != "gb200" else r.randint(2, 6)
    domain = f"rack{sc.sid:03d}" if plat == "gb200" else None
    hosts = [sc.host(plat, domain) for _ in range(n)]
    for x in hosts:
        sc.noise(x, sc.t0 - 2 * 3600 * S, sc.t0 + 20 * 60 * S)
        sc.snapshots(x, sc.t0 - r.randint(1, 2) * 3600 * S)
    job = sc.job(hosts)
    h = r.choice(hosts)
    g = r.choice(h.gpus)
    sc.variant = r.choice(list(ECC_VARIANTS))
    rk = job.of(h, g.bus)
    t = sc.t0
    if r.random() < 0.5:
        preamble(sc, h, g, t - 10)
    for i, (code, msg) in enumerate(ECC_VARIANTS[sc.variant]):
        sc.k(h, t + i * sc.ms(0.001, 0.5), xid(g, code, msg, str(rk.pid), "python"))
    if r.random() < 0.4:
        sc.block(h, t + r.randint(3, 20) * 60 * S, "$ nvidia-smi\n" + smi_table(h, t + h.skew + 600 * S, {g.bus: 2}))
    tr = _gpu_truth("ecc", h, g, "ecc", job)
    sc.app_crash(rk, t + sc.ms(0.05, 1), "uncorrectable ECC error encountered")
    job_fallout(sc, job, rk, t, tr)
    return tr


def link_fault(sc: Sc) -> Truth:
    """Xid 74 on both ends of one direct GPU-GPU link, no device failure; nvlink -R names the ends."""
    r = sc.r
    plat = r.choice(("h100x4", "a100x4"))
    hosts = [sc.host(plat) for _ in range(r.randint(1, 3))]
    h = hosts[0]
    for x in hosts:
        sc.noise(x, sc.t0 - 2 * 3600 * S, sc.t0 + 20 * 60 * S)
        sc.snapshots(x, sc.t0 - r.randint(1, 2) * 3600 * S, remote=1.0 if x is h else 0.7)
    job = sc.job(hosts)
    (a, la), (b, lb) = r.choice(sorted(h.wiring.items()))
    ga, gb = h.gpu(a), h.gpu(b)
    sc.variant = plat
    t = sc.t0
    regs = r.choice(("0x100, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0", "0x1000, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0",
                     "0x0, 0x0, 0x1, 0x0, 0x0, 0x0, 0x0", "0x10000, 0x0, 0x0, 0x0, 0x1000000, 0x0, 0x0"))
    first, second = r.sample([(ga, la), (gb, lb)], 2)
    sc.k(h, t, xid(first[0], 74, f"NVLink: fatal error detected on link {first[1]}({regs})"))
    sc.k(h, t + sc.ms(0.0005, 0.05), xid(second[0], 74, f"NVLink: fatal error detected on link {second[1]}({regs})"))
    if r.random() < 0.5:
        sc.block(h, t + r.randint(5, 30) * 60 * S, "$ nvidia-smi nvlink -s\n" + nvlink_status(h, {(a, la), (b, lb)}))
    own = [Reporter(h.name, x.bus, job.of(h, x.bus).rank, x.index) for x in (ga, gb)]
    tr = Truth("link_fault", False, h.name, "link", a, peer=b, link=la, category="link_fault", own=own)
    rest: list[Reporter] = []
    sc.job_fallout(job, None, t, truth=rest, remote="timeout")
    tr.downstream = [x for x in rest if (x.host, x.device) not in {(o.host, o.device) for o in own}]
    return tr


def nvswitch_fault(sc: Sc) -> Truth:
    """One NVSwitch fails: every GPU reports Xid 74 only on its links to that switch (nvlink -R wiring);
    the switch may or may not log an SXid of its own."""
    r = sc.r
    plat = r.choice(("h100", "a100"))
    hosts = [sc.host(plat) for _ in range(r.randint(1, 2))]
    h = hosts[0]
    for x in hosts:
        sc.noise(x, sc.t0 - 2 * 3600 * S, sc.t0 + 20 * 60 * S)
        sc.snapshots(x, sc.t0 - r.randint(1, 2) * 3600 * S, remote=1.0 if x is h else 0.7)
    job = sc.job(hosts)
    sw = r.choice(h.plat.switches)
    t = sc.t0
    sc.variant = f"{plat}-{'sxid' if r.random() < 0.5 else 'silent'}"
    tr = Truth("nvswitch_fault", False, h.name, "nvswitch", sw, category="nvswitch_fault", own=[Reporter(h.name, sw)])
    if sc.variant.endswith("sxid"):
        port = r.choice(links_to(h, sw))[2]
        code, desc = r.choice(((24007, "NPORT_SOURCETRACK timeout"), (20034, "LTSSM Fault Up"),
                               (22012, "MINION Link DLREQ interrupt")))
        sxid_group(sc, h, sw, port, code, t - sc.ms(0, 0.05), desc=desc)
    victims = r.sample(h.gpus, k=r.randint(max(3, len(h.gpus) // 2), len(h.gpus)))
    for g in victims:
        mine = [l for (gb, l, _fl) in links_to(h, sw) if gb == g.bus]
        for l in r.sample(mine, k=r.randint(1, len(mine))):
            sc.k(h, t + sc.ms(0.001, 0.3), xid(g, 74, f"NVLink: fatal error detected on link {l}"
                                                      "(0x0, 0x0, 0x10000, 0x0, 0x0, 0x0, 0x0)"))
        rk = job.of(h, g.bus)
        tr.downstream.append(Reporter(h.name, g.bus, rk.rank if rk else None, g.index))
    rest: list[Reporter] = []
    sc.job_fallout(job, None, t, truth=rest, remote="timeout")
    tr.downstream = _uniq(tr.downstream + [x for x in rest if x.device not in {v.bus for v in victims}
                                           or x.host != h.name])
    return tr


def nvl72_link_down(sc: Sc) -> Truth:
    """GB200 NVL72 rack (one domain in the fleet config): one GPU's fatal link-down Xid 149 with a local
    reason, many GPUs of the rack log non-fatal Xid 145 (formats.md §2.4; corpus 017)."""
    r = sc.r
    domain = f"rack{sc.sid:03d}"
    hosts = [sc.host("gb200", domain) for _ in range(r.randint(4, 9))]
    for x in hosts:
        sc.noise(x, sc.t0 - 2 * 3600 * S, sc.t0 + 20 * 60 * S)
        sc.snapshots(x, sc.t0 - r.randint(1, 2) * 3600 * S, remote=0)
    job = sc.job(hosts, nccl_log=r.random() < 0.8)
    h = r.choice(hosts)
    g = r.choice(h.gpus)
    link = r.randint(0, 17)
    t = sc.t0
    # IntrInfo bits 25:20 = the link-down reason; 0x0a/0x02/0x04 signal integrity, 0x2a/0x2b cable: local causes
    reason = r.choice((0x0a, 0x02, 0x04, 0x2a, 0x2b))
    unit = r.choice(("NETIR_LINK_EVT", "NETIR_LINK_DOWN"))
    sc.variant = unit
    sc.k(h, t, xid(g, 149, f"{unit} Fatal XC0 i0 Link {link:02d} (0x{reason << 20 | 0x1c6:08x} 0x00000000 "
                           "0x00000000 0x00000000 0x00000000 0x00000000)", None, None))
    sc.k(h, t + sc.ms(0.001, 0.01), xid(g, 154, "GPU recovery action changed from 0x0 (None) to 0x4 (Drain and Reset)",
                                        None, None))
    tr = Truth("nvl72_link_down", False, h.name, "gpu", g.bus, link=link, category="link_fault",
               own=[Reporter(h.name, g.bus, job.of(h, g.bus).rank, g.index)])
    others = [(x, y) for x in hosts for y in x.gpus if y is not g]
    for x, y in r.sample(others, k=max(3, int(len(others) * r.uniform(0.5, 1.0)))):
        sc.k(x, t + sc.ms(0.001, 1.5), xid(y, 145, f"RLW_SRC_TRACK Nonfatal XC0 i0 Link {r.randint(0, 17):02d} "
                                                   "(0x0409a0c2 0x00000008 0x00000001 0x00000000 0x00100000 0x00000004)",
                                           None, None))
        rk = job.of(x, y.bus)
        tr.downstream.append(Reporter(x.name, y.bus, rk.rank if rk else None, y.index))
    return tr


def nccl_hang(sc: Sc) -> Truth:
    """Every rank but one times out on the same SeqNum; the silent rank logs nothing (formats.md §12.2)."""
    r = sc.r
    plat = r.choice(("h100", "a100", "b200"))
    hosts = [sc.host(plat) for _ in range(r.randint(2, 4))]
    for x in hosts:
        sc.noise(x, sc.t0 - 2 * 3600 * S, sc.t0 + 45 * 60 * S)
        sc.snapshots(x, sc.t0 - r.randint(1, 2) * 3600 * S)
    job = sc.job(hosts)
    silent = r.choice(job.ranks)
    sc.variant = plat
    rest: list[Reporter] = []
    sc.job_fallout(job, None, sc.t0, truth=rest, remote="timeout", skip={silent.rank})
    return Truth("nccl_hang", False, silent.host.name, "gpu", silent.gpu.bus, rank=silent.rank, category="nccl_hang",
                 downstream=rest)


def fabric_manager(sc: Sc) -> Truth:
    """Fabric Manager restarted without a GPU reset, or not running: NVLS set-up fails on every local rank."""
    r = sc.r
    hosts = [sc.host("h100") for _ in range(r.randint(1, 3))]
    h = hosts[0]
    for x in hosts:
        sc.noise(x, sc.t0 - 2 * 3600 * S, sc.t0 + 20 * 60 * S)
        sc.snapshots(x, sc.t0 - r.randint(1, 2) * 3600 * S, remote=0.5)
    sc.variant = r.choice(("restart_without_reset", "not_running"))
    t = sc.t0
    fm_t = t - r.randint(5, 90) * 60 * S
    pid = r.randint(3000, 9000)
    if sc.variant == "restart_without_reset":
        for i, (tag, txt) in enumerate((("systemd[1]", "Stopping NVIDIA fabric manager service..."),
                                        ("systemd[1]", "nvidia-fabricmanager.service: Deactivated successfully."),
                                        ("systemd[1]", "Stopped NVIDIA fabric manager service."),
                                        ("systemd[1]", "Starting NVIDIA fabric manager service..."),
                                        (f"nv-fabricmanager[{pid}]", "Connected to 1 node."),
                                        (f"nv-fabricmanager[{pid}]", "Successfully configured all the available "
                                         "NVSwitches to route GPU NVLink traffic. NVLink Peer-to-Peer support will be "
                                         "enabled once the GPUs are successfully registered with the NVLink fabric."),
                                        ("systemd[1]", "Started NVIDIA fabric manager service."))):
            sc.sys(h, fm_t + i * 400_000, tag, txt)
    else:
        # version-mismatch text: constructed from the FM start-up check (a common public report)
        for i, (tag, txt) in enumerate((
                ("systemd[1]", "Starting NVIDIA fabric manager service..."),
                (f"nv-fabricmanager[{pid}]", "fabric manager NVIDIA GPU driver interface version 570.133.20 don't "
                                             f"match with driver version {DRIVER}. Please update with matching NVIDIA "
                                             "driver package."),
                ("systemd[1]", "nvidia-fabricmanager.service: Control process exited, code=exited, status=1/FAILURE"),
                ("systemd[1]", "nvidia-fabricmanager.service: Failed with result 'exit-code'."),
                ("systemd[1]", "Failed to start NVIDIA fabric manager service."))):
            sc.sys(h, fm_t + i * 300_000, tag, txt)
    # the job (re)starts after FM and dies in NVLS set-up at init
    job = sc.job(hosts, start=t - 3 * S, init_fails=h)
    init_t = t
    tr = Truth("fabric_manager", False, h.name, None, None, category="fabric_manager")
    for rk in job.on(h):
        tt = init_t + sc.ms(0, 2)
        if sc.variant == "restart_without_reset":
            sc.warn(rk, tt, "transport/nvls.cc:244", "Cuda failure 1 'invalid argument'")
            for j, loc in enumerate(("transport/nvls.cc:394 -> 1", "init.cc:1196 -> 1", "init.cc:1462 -> 1",
                                     "group.cc:75 -> 1 [Async thread]")):
                sc.info(rk, tt + 100 + j, loc)
        else:
            sc.warn(rk, tt, "transport/nvls.cc:379 (nvlsAllocateMem)",
                    "Failed to bind NVLink SHARP (NVLS) Multicast memory of size 2097152 : CUDA error 401 "
                    "'the operation cannot be performed in the present state'.")
            sc.info(rk, tt + 100, "transport/nvls.cc:412 -> 1")
        sc.out(h, tt + sc.ms(0.5, 1.5), f"[rank{rk.rank}]: torch.distributed.DistBackendError: NCCL error in: "
                                        "/pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1970, unhandled "
                                        "cuda error (run with NCCL_DEBUG=INFO for details), NCCL version "
                                        f"{h.nccl_version}")
        sc.out(h, tt + sc.ms(1.5, 1.6), f"[rank{rk.rank}]: ncclUnhandledCudaError: Call to CUDA function failed.")
        tr.own.append(Reporter(h.name, rk.gpu.bus, rk.rank, rk.gpu.index))
    bad = job.on(h)[0]
    rest: list[Reporter] = []
    sc.job_fallout(job, bad, init_t + 2 * S, truth=rest, remote="error",
                   skip={rk.rank for rk in job.on(h)})
    tr.downstream = rest
    return tr


def pcie_p2p(sc: Sc) -> Truth:
    """P2P over PCIe blocked by ACS/IOMMU (or not working on consumer cards): a hang, PCIe paths in
    topo -m, no device error (corpus 006, 018, 024). The hang is given as an operator symptom."""
    r = sc.r
    plat = r.choice(("rtx4090", "l40s", "a100pcie"))
    h = sc.host(plat)
    sc.noise(h, sc.t0 - 2 * 3600 * S, sc.t0 + 45 * 60 * S)
    for txt in ("DMAR: IOMMU enabled", "DMAR: Intel(R) Virtualization Technology for Directed I/O",
                "pci 0000:00:01.0: PCI bridge to [bus 01-ff]"):
        sc.k(h, h.boot + r.randint(1, 3) * S, txt)
    sc.block(h, sc.t0 - r.randint(10, 60) * 60 * S, "$ nvidia-smi topo -m\n" + topo_matrix(h))
    sc.block(h, sc.t0 - r.randint(10, 60) * 60 * S, smi_table(h, sc.t0 + h.skew - 3600 * S))
    sc.symptoms.append(SymptomSpec(h.name, "hang"))
    tr = Truth("pcie_p2p", False, h.name, None, None, category="pcie_p2p")
    if r.random() < 0.5:
        sc.variant = "nccl_tests_silent"
        sc.kafka_expressible = False  # nothing but the operator says it hung
        pid = r.randint(2000, 900_000)
        sc.out(h, sc.t0 - 5 * S, f"# nThread 1 nGpus {len(h.gpus)} minBytes 8 maxBytes 134217728 step: 2(factor) "
                                 "warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0")
        for g in h.gpus:
            sc.out(h, sc.t0 - 4 * S, f"#  Rank {g.index:2d} Group  0 Pid {pid} on {h.name} device {g.index:2d} "
                                     f"[0x{g.bus.split(':')[1]}] {h.plat.model}")
        sc.out(h, sc.t0 - 3 * S, "#       size         count      type   redop    root     time   algbw   busbw #wrong")
        return tr
    sc.variant = "pytorch_timeouts"
    job = sc.job([h])
    rest: list[Reporter] = []
    sc.job_fallout(job, None, sc.t0, truth=rest, remote="timeout")
    tr.downstream = rest
    return tr


def ib_port(sc: Sc) -> Truth:
    """An InfiniBand port flaps: NCCL on that host logs the async port error, its peers lose it."""
    r = sc.r
    plat = r.choice(("h100", "a100", "b200"))
    hosts = [sc.host(plat) for _ in range(r.randint(2, 4))]
    for x in hosts:
        sc.noise(x, sc.t0 - 2 * 3600 * S, sc.t0 + 20 * 60 * S)
        sc.snapshots(x, sc.t0 - r.randint(1, 2) * 3600 * S, remote=0.5)
    job = sc.job(hosts)
    h = r.choice(hosts)
    nic_i = r.randrange(len(h.nics))
    nic = h.nics[nic_i]
    users = [rk for rk in job.on(h) if rk.gpu.index % len(h.nics) == nic_i]
    t = sc.t0
    sc.variant = r.choice(("single", "flap"))
    for rk in users:
        src = r.choice(("transport/net_ib.cc:199", "net_ib.cc:199"))
        sc.warn(rk, t + sc.ms(0, 0.01), src, f"NET/IB : {nic}:1 Got async error event: port error")
        if sc.variant == "flap":
            sc.warn(rk, t + sc.ms(6, 9), src, f"NET/IB : {nic}:1 Got async error event: port active")
            sc.warn(rk, t + sc.ms(20, 60), src, f"NET/IB : {nic}:1 Got async error event: port error")
    tr = Truth("ib_port", False, h.name, "nic", nic, link=1, category="ib_port")
    peer_ip = h.ips[nic]
    for rk in job.ranks:
        if rk in users:
            # the rank on that NIC fails its own sends
            sc.out(h, t + sc.ms(1, 5), f"[rank{rk.rank}]: torch.distributed.DistBackendError: NCCL error in: "
                                       "/pytorch/torch/csrc/distributed/c10d/NCCLUtils.hpp:268, unhandled system "
                                       f"error (run with NCCL_DEBUG=INFO for details), NCCL version {h.nccl_version}")
            tr.own.append(Reporter(h.name, rk.gpu.bus, rk.rank, rk.gpu.index))
        elif rk.host is not h:
            sc.remote_error(rk, t + sc.ms(1, 20), peer_ip)
            tr.downstream.append(Reporter(rk.host.name, rk.gpu.bus, rk.rank, rk.gpu.index))
        else:
            sc.watchdog(rk, job, t + sc.ms(-2, 0.2), job.timeout_ms)
            tr.downstream.append(Reporter(rk.host.name, rk.gpu.bus, rk.rank, rk.gpu.index))
    return tr


def nccl_software(sc: Sc) -> Truth:
    """A hang with only non-fatal NVLink Xids logged: an NCCL bug, not a device (corpus 029)."""
    r = sc.r
    h = sc.host("b200")
    sc.noise(h, sc.t0 - 2 * 3600 * S, sc.t0 + 45 * 60 * S)
    sc.snapshots(h, sc.t0 - r.randint(1, 2) * 3600 * S)
    job = sc.job([h])
    g = r.choice(h.gpus)
    link = r.randint(0, 17)
    t = sc.t0
    sc.k(h, t - sc.ms(0, 1), xid(g, 145, f"RLW_RXPIPE Nonfatal XC0 i0 Link {link:02d} (0x0409a0c2 0x00000008 "
                                         "0x00000001 0x00000000 0x00100000 0x00000004)", None, None))
    sc.k(h, t - sc.ms(0, 1), xid(g, 137, f"RLW_RXPIPE interrupt hit on link {link} on GPU{g.index}: PRIV Error",
                                 None, None))
    sc.variant = r.choice(("timeouts", "timeouts_and_symptom"))
    if sc.variant == "timeouts_and_symptom":
        sc.symptoms.append(SymptomSpec(h.name, "hang"))
    rest: list[Reporter] = []
    sc.job_fallout(job, None, t, truth=rest, remote="timeout")
    return Truth("nccl_software", False, h.name, None, None, category="nccl_software", downstream=rest)


# --- benign ---------------------------------------------------------------------------------------


def benign_dcgm_pcie(sc: Sc) -> Truth:
    """DCGM health: "NvLink link N is currently down" for every link of a PCIe GPU with no NVLink (corpus 009)."""
    r = sc.r
    h = sc.host(r.choice(("a100pcie", "l40s")))
    sc.noise(h, sc.t0 - 2 * 3600 * S, sc.t0 + 20 * 60 * S)
    sc.snapshots(h, sc.t0 - 3600 * S, remote=0, status=0)
    gpus = r.sample(h.gpus, k=r.randint(1, len(h.gpus)))
    sc.variant = h.plat.key
    sc.block(h, sc.t0, "$ dcgmi health -c -g 1\n" + dcgm_health_nvlink_down(h, gpus, 12))
    if r.random() < 0.4:
        sc.block(h, sc.t0 + 5 * S, "$ nvidia-smi nvlink -s\n" + "\n".join(
            f"{_gpu_header(h, g)}\nNVML: Unable to retrieve NVLink information as all links are inActive"
            for g in h.gpus))
    return Truth("benign_dcgm_pcie", True)


def benign_dcgm_sku(sc: Sc) -> Truth:
    """``dcgmi diag`` warning about NVLinks the SKU does not have (corpus 008)."""
    r = sc.r
    h = sc.host(r.choice(("a10", "a100pcie", "l40s")))
    sc.noise(h, sc.t0 - 2 * 3600 * S, sc.t0 + 20 * 60 * S)
    sc.snapshots(h, sc.t0 - 3600 * S, remote=0, status=0)
    g = r.choice(h.gpus)
    sc.variant = h.plat.key
    sc.block(h, sc.t0, "$ dcgmi diag -r 1\n" + dcgm_diag_nvlink_down(g, r.choice((4, 6, 12))))
    return Truth("benign_dcgm_sku", True)


def benign_p2p_disabled(sc: Sc) -> Truth:
    """P2P switched off on purpose (NCCL_P2P_LEVEL=LOC / NCCL_P2P_DISABLE=1) or impossible over PCIe: SHM
    transport lines and "P2P is disabled between connected GPUs" INFO lines; the job runs (corpus 007, 016)."""
    r = sc.r
    h = sc.host(r.choice(("a100", "l40s", "a100pcie")))
    sc.noise(h, sc.t0 - 2 * 3600 * S, sc.t0 + 20 * 60 * S)
    sc.snapshots(h, sc.t0 - 3600 * S)
    job = sc.job([h], nccl_log=False)
    sc.variant = r.choice(("p2p_level_loc", "p2p_disable") + (("pcie_info",) * 2 if h.plat.fabric == "pcie" else ()))
    t = job.start
    rk0 = job.ranks[0]
    if sc.variant == "p2p_level_loc":
        sc.info(rk0, t, "NCCL_P2P_LEVEL set by environment to LOC")
    elif sc.variant == "p2p_disable":
        sc.info(rk0, t, "NCCL_P2P_DISABLE set by environment to 1")
    n = len(job.ranks)
    for rk in job.ranks:
        sc.info(rk, t + 500, f"comm {job.comm_ptr[rk.rank]} rank {rk.rank} nranks {n} cudaDev {rk.gpu.index} "
                             f"nvmlDev {rk.gpu.index} busId {rk.gpu.nccl_bus} commId {job.comm} - Init START")
        nxt = job.ranks[(rk.rank + 1) % n]
        if sc.variant == "pcie_info":
            sc.info(rk, t + 700, f"P2P is disabled between connected GPUs {rk.gpu.index} and {nxt.gpu.index}. You can "
                                 "repress this message with NCCL_IGNORE_DISABLED_P2P=1.")
        for ch in range(2):
            sc.info(rk, t + 900 + ch, f"Channel {ch:02d} : {rk.rank}[{rk.gpu.nccl_bus}] -> {nxt.rank}[{nxt.gpu.nccl_bus}]"
                                      " via SHM/direct/direct")
        sc.info(rk, t + 1200, "Connected all rings")
        sc.info(rk, t + 1300, f"comm {job.comm_ptr[rk.rank]} rank {rk.rank} nranks {n} cudaDev {rk.gpu.index} "
                              f"nvmlDev {rk.gpu.index} busId {rk.gpu.nccl_bus} commId {job.comm} - Init COMPLETE")
    return Truth("benign_p2p_disabled", True)


def benign_app_xid(sc: Sc) -> Truth:
    """An application's own Xid 13 (burst) or 31, then 43: a single-GPU program bug (corpus 032, 038)."""
    r = sc.r
    h = sc.host(r.choice(("h100", "a100", "l40s", "b200")))
    sc.noise(h, sc.t0 - 2 * 3600 * S, sc.t0 + 20 * 60 * S)
    sc.snapshots(h, sc.t0 - 3600 * S)
    g = r.choice(h.gpus)
    pid = r.randint(2000, 900_000)
    t = sc.t0
    sc.variant = r.choice(("xid13", "xid31"))
    if sc.variant == "xid13":
        for i in range(r.randint(1, 4)):
            gpc, tpc = r.randint(0, 7), r.randint(0, 8)
            sc.k(h, t + i * 10, xid(g, 13, f"Graphics SM Warp Exception on (GPC {gpc}, TPC {tpc}, SM {r.randint(0, 1)}): "
                                           "Out Of Range Address", str(pid), "python3"))
            sc.k(h, t + i * 10 + 5, xid(g, 13, "Graphics Exception: ESR 0x514730=0x201000e 0x514734=0x20 "
                                               "0x514728=0x4c1eb72 0x51472c=0x174", str(pid), "python3"))
    else:
        sc.k(h, t, xid(g, 31, "channel 0x00000002, intr 00000000. MMU Fault: ENGINE GRAPHICS GPC1 GPCCLIENT_T1_0 "
                              "faulted @ 0x7f2e_5a000000. Fault is of type FAULT_PDE ACCESS_TYPE_VIRT_READ",
                       str(pid), "python3"))
    sc.k(h, t + sc.ms(0.001, 0.3), xid(g, 43, f"Ch {r.randint(8, 64):08x}", str(pid), "python3"))
    sc.out(h, t + sc.ms(0.1, 1), "RuntimeError: CUDA error: an illegal memory access was encountered")
    return Truth("benign_app_xid", True)


def benign_corrected_aer(sc: Sc) -> Truth:
    """A single corrected PCIe error on an otherwise healthy host (DESIGN.md)."""
    h = sc.host(sc.r.choice(("h100", "a100", "l40s")))
    sc.noise(h, sc.t0 - 2 * 3600 * S, sc.t0 + 20 * 60 * S)
    sc.snapshots(h, sc.t0 - 3600 * S)
    sc.variant = h.plat.key
    corrected_aer(sc, h, sc.t0)
    return Truth("benign_corrected_aer", True)


def benign_fm_bridge(sc: Sc) -> Truth:
    """Fabric Manager NV_WARN_NOTHING_TO_DO on an NVLink-bridge box without NVSwitch (corpus 013)."""
    h = sc.host("a40")
    sc.noise(h, sc.t0 - 2 * 3600 * S, sc.t0 + 20 * 60 * S)
    sc.snapshots(h, sc.t0 - 3600 * S, status=0.8)
    pid = sc.r.randint(3000, 9000)
    sc.variant = "a40"
    for i, (tag, txt) in enumerate((
            ("systemd[1]", "Starting NVIDIA fabric manager service..."),
            (f"nv-fabricmanager[{pid}]", "request to query NVSwitch device information from NVSwitch driver failed "
                                         "with error:WARNING Nothing to do [NV_WARN_NOTHING_TO_DO]"),
            ("systemd[1]", "nvidia-fabricmanager.service: Control process exited, code=exited, status=1/FAILURE"),
            ("systemd[1]", "nvidia-fabricmanager.service: Failed with result 'exit-code'."),
            ("systemd[1]", "Failed to start NVIDIA fabric manager service."))):
        sc.sys(h, sc.t0 + i * 20_000, tag, txt)
    return Truth("benign_fm_bridge", True)


FAULT_KINDS: dict[str, Builder] = {
    "gpu_off_bus": gpu_off_bus, "pcie_surprise_down": pcie_surprise_down, "ecc": ecc, "link_fault": link_fault,
    "nvswitch_fault": nvswitch_fault, "nvl72_link_down": nvl72_link_down, "nccl_hang": nccl_hang,
    "fabric_manager": fabric_manager, "pcie_p2p": pcie_p2p, "ib_port": ib_port, "nccl_software": nccl_software,
}
BENIGN_KINDS: dict[str, Builder] = {
    "benign_dcgm_pcie": benign_dcgm_pcie, "benign_dcgm_sku": benign_dcgm_sku,
    "benign_p2p_disabled": benign_p2p_disabled, "benign_app_xid": benign_app_xid,
    "benign_corrected_aer": benign_corrected_aer, "benign_fm_bridge": benign_fm_bridge,
}
KINDS: dict[str, Builder] = {**FAULT_KINDS, **BENIGN_KINDS}

# --------------------------------------------------------------------------------------------------
# Output: files (what an operator collects) and Kafka messages (what shippers send)

_FILE_CHAN = {"kernel": "dmesg", "system": "syslog", "nccl": "nccl", "nvml": "nvml"}
_TOPIC = {"kernel": "fleet.dmesg", "system": "fleet.dmesg", "nccl": "fleet.nccl", "nvml": "fleet.nvml"}


def _rendered(h: Host, lines: list[Line], rng: random.Random) -> list[tuple[Line, list[str]]]:
    return [(ln, render(h, ln, rng.randint(0, 999))) for ln in sorted(lines, key=lambda x: x.t)]


def to_files(s: Scenario, rng: random.Random) -> list[FileOut]:
    """``<host>.<dmesg|syslog|nccl|nvml>.log`` per host; mtime = host clock at the last line (captured
    right away), which is also how firstfault dates raw ``dmesg`` stamps without a boot time."""
    out = []
    for name, h in s.hosts.items():
        for chan, fname in _FILE_CHAN.items():
            lines = [ln for ln in s.lines[name] if ln.chan == chan]
            if not lines:
                continue
            body = [p for _ln, phys in _rendered(h, lines, rng) for p in phys]
            last = max(ln.t for ln in lines)
            out.append(FileOut(f"{name}.{fname}.log", ("\n".join(body) + "\n").encode(), last + h.skew))
    return out


def _delay(rng: random.Random) -> int:
    """Shipper-to-broker delay: mostly sub-second, a long tail to a minute (µs)."""
    return int(min(60.0, rng.lognormvariate(-1.2, 1.3)) * S)


def _journald(h: Host, ln: Line, text: str, i: int) -> bytes:
    mono = ln.t - h.boot
    return orjson.dumps({
        "__CURSOR": f"s={h.name};i={ln.t:x}{i}", "__REALTIME_TIMESTAMP": str(ln.t + h.skew),
        "__MONOTONIC_TIMESTAMP": str(mono), "_BOOT_ID": f"{(h.boot * 0x9E3779B97F4A7C15) % (1 << 128):032x}",
        "_HOSTNAME": h.name, "_TRANSPORT": "kernel", "SYSLOG_IDENTIFIER": "kernel", "SYSLOG_FACILITY": "0",
        "PRIORITY": "4", "_SOURCE_MONOTONIC_TIMESTAMP": str(mono), "MESSAGE": text})


def _envelope(h: Host, text: str, read_wall: int) -> bytes:
    if h.envelope == "vector":
        return orjson.dumps({"host": h.name, "timestamp": iso_z(read_wall), "message": text,
                             "source_type": "file", "file": f"/var/log/{h.name}.log"})
    return orjson.dumps({"@timestamp": iso_z(read_wall), "host": {"name": h.name}, "message": text,
                         "log": {"file": {"path": "/var/log/job/stdout.log"}}})


def to_messages(s: Scenario, rng: random.Random) -> list[KafkaMsg]:
    """Shipper batches per host and channel (lines read within ~1 s, ≤ 50 per value), delayed, reordered and
    sometimes duplicated. Kernel lines of raw-dmesg hosts travel as journald export JSON (boot time from
    ``__MONOTONIC_TIMESTAMP``); nvidia-smi/DCGM blocks are one plain-text value each (a poller's output)."""
    out: list[KafkaMsg] = []
    for name, h in s.hosts.items():
        for chan in ("kernel", "system", "nccl", "nvml"):
            lines = _rendered(h, [ln for ln in s.lines[name] if ln.chan == chan], rng)
            batches: list[list[tuple[Line, list[str]]]] = []
            for item in lines:
                if chan != "nvml" and batches and item[0].t - batches[-1][0][0].t < S and len(batches[-1]) < 50:
                    batches[-1].append(item)
                else:
                    batches.append([item])
            for b in batches:
                read = b[-1][0].t + int(rng.uniform(0.05, 1.0) * S)  # the shipper reads the batch
                if chan == "kernel" and h.style == "mono":
                    recs = [_journald(h, ln, txt, i) for ln, _ in b
                            for i, txt in enumerate(ln.text.split("\n"))]
                    value = b"\n".join(recs)
                elif chan in ("nccl", "kernel") and h.envelope != "text":
                    value = b"\n".join(_envelope(h, p, read + h.skew) for _ln, phys in b for p in phys)
                else:
                    value = "\n".join(p for _ln, phys in b for p in phys).encode()
                deliver = read + _delay(rng)
                m = KafkaMsg(_TOPIC[chan], name, value, (read + h.skew) // MS, deliver, sid=s.sid)
                out.append(m)
                if rng.random() < 0.03:  # at-least-once shippers resend after a lost acknowledgement
                    out.append(KafkaMsg(m.topic, m.key, m.value, m.timestamp_ms,
                                        deliver + int(rng.uniform(0.5, 20) * S), duplicate=True, sid=s.sid))
    return sorted(out, key=lambda m: m.deliver)


# --------------------------------------------------------------------------------------------------


def kind_plan(n: int, kinds: list[str] | None = None) -> list[str]:
    """Round-robin over ``kinds`` (default: every kind) so each gets ⌊n/k⌋ or ⌈n/k⌉ scenarios."""
    ks = list(kinds or KINDS)
    return [ks[i % len(ks)] for i in range(n)]


def scenario(sid: int, kind: str, seed: int) -> Scenario:
    """One scenario of ``kind`` (deterministic in ``seed`` and ``sid``), with files and Kafka messages."""
    sc = Sc(sid, kind, seed)
    truth = KINDS[kind](sc)
    s = sc.done(truth)
    rng = random.Random(f"{seed}:{sid}:out")
    s.files = to_files(s, rng)
    s.messages = to_messages(s, rng)
    return s


def generate(n: int = 500, seed: int = 1, kinds: list[str] | None = None) -> Fleet:
    """``n`` scenarios, kinds round-robin (see :func:`kind_plan`)."""
    return Fleet([scenario(i, k, seed) for i, k in enumerate(kind_plan(n, kinds))], seed)
