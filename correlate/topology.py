"""Expected and observed wiring: which GPU links exist, where they go, who is in which communicator.

Learned from what hosts said (``nvidia-smi nvlink -s/-R``, ``nvidia-smi topo
-m``, DCGM, NCCL init and channel lines) and from a fleet config file
(host -> platform model, NVLink domain, rack). Expected link counts per GPU
model come from ``platforms.yaml`` (shared/reference/topology.md §1). Links
inactive by design are not faults (topology.md §6): the queries here say
what a host is *expected* to have, so the rules can tell "absent" from
"failed".
"""

from __future__ import annotations

import ipaddress
import math
from bisect import bisect_right
from collections import defaultdict
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable

import pyarrow as pa

from correlate.model import Copies, Ev, capture_of, copy_once
from ingest.catalog import read_yaml
from schemas.fleet import HostConfig, load_fleet_config  # noqa: F401  (re-exported)
from schemas.hostname import canonical_host

PLATFORMS_FILE = Path(__file__).with_name("platforms.yaml")

#: time bases that do not order a host's lines (every untimed line of a file gets the file's time; an operator's
#: report is placed at its host's last event): lifetimes are neither learned from nor applied to them
UNORDERED_BASES = frozenset({"file", "operator"})
#: how far a handover's time may be off what the events around it say (µs): NCCL's INFO lines print no time
#: of their own (shared/reference/formats.md), so membership lines are often timed by Kafka append time or
#: the shipper's envelope, seconds after they were written. Within this margin of a handover an event
#: counts for both communicators, as it did before lifetimes were known.
HANDOVER_MARGIN_US = 60_000_000


@lru_cache(maxsize=1)
def _platforms() -> list[dict[str, Any]]:
    return read_yaml(PLATFORMS_FILE.read_text(encoding="utf-8"))["platforms"]


def expected_links(model: str | None) -> int | None:
    """NVLinks a GPU of ``model`` has wired; 0 for PCIe cards; ``None`` when unknown."""
    if not model:
        return None
    low = model.lower()
    for p in _platforms():
        if p["match"].lower() in low:
            return p["links"]
    return None


def unmatched_platforms(hosts: dict[str, HostConfig]) -> dict[str, list[str]]:
    """Platform names of a fleet config (``schemas.fleet``) that no entry of ``platforms.yaml`` matches -> their
    hosts (sorted): a misspelt name ("Bogus GPU 9000", "H1OO") left those hosts' expected NVLinks unknown without
    a word (a fresh-user trial)."""
    out: dict[str, list[str]] = {}
    for host, cfg in sorted(hosts.items()):
        if cfg.platform and not any(p["match"].lower() in cfg.platform.lower() for p in _platforms()):
            out.setdefault(cfg.platform, []).append(host)
    return out


@dataclass(slots=True)
class Topology:
    """What we know of each host's wiring. GPU keys are bus ids or ``gpu<index>``."""

    hosts: dict[str, HostConfig] = field(default_factory=dict)
    # (host, gpu key) -> link -> state ("up" | "inactive" | "down")
    link_state: dict[tuple[str, str], dict[int, str]] = field(default_factory=lambda: defaultdict(dict))
    model: dict[tuple[str, str], str] = field(default_factory=dict)
    # (host, gpu key) -> peer name -> path ("NV18", "PIX", ...)
    paths: dict[tuple[str, str], dict[str, str]] = field(default_factory=lambda: defaultdict(dict))
    # (host, gpu bus id, link) -> (remote bus id, remote link)
    remote: dict[tuple[str, str, int], tuple[str, int]] = field(default_factory=dict)
    # (host, gpu index) -> bus id
    index_to_bus: dict[tuple[str, int], str] = field(default_factory=dict)
    #: (host, GPU UUID) -> the GPU a line gave that UUID with (its bus id, else ``gpu<index>``): the driver's
    #: "NVRM: GPU at PCI:…: GPU-…" preamble, ``nvidia-smi -L``
    uuid_gpu: dict[tuple[str, str], str] = field(default_factory=dict)
    # communicator id -> {rank: (host, gpu key)}, and its size
    comm_ranks: dict[str, dict[int, tuple[str, str | None]]] = field(default_factory=lambda: defaultdict(dict))
    comm_size: dict[str, int] = field(default_factory=dict)
    #: (communicator, host) -> (since, until) µs on that host's clock, where a GPU of the host changed hands
    #: between processes (``comm_spans``); a pair not here is not bounded in time
    comm_span: dict[tuple[str, str], tuple[int | None, int | None]] = field(default_factory=dict)
    #: (communicator, host) -> the logs (:func:`log_stream`) its membership lines of that host were read from: which
    #: of two jobs on one host a rank's line without a GPU is of (``rules.comms_of``)
    comm_logs: dict[tuple[str, str], set[str]] = field(default_factory=dict)
    #: (communicator, host) -> the time (µs, that host's clock) of its first membership line there that is timed by
    #: itself or its arrival (not by its file or an operator): before it the communicator held no GPU there
    #: (:meth:`gpu_rank`)
    comm_first: dict[tuple[str, str], int] = field(default_factory=dict)
    #: address (``peer_name``'s spelling) -> host whose NCCL said it uses it out of band (``nccl.bootstrap``:
    #: "Bootstrap : Using eth0:10.0.0.5<0>", "NET/IB : Using … ; OOB eth0:10.0.0.5<0>") -> the time of its latest
    #: such line (µs): a peer's error names the peer by that address (``peer_host``)
    addr_hosts: dict[str, dict[str, int]] = field(default_factory=dict)
    #: file read in part (a truncated .gz: ``details.file_cut``) -> the hosts its lines are of: what a silent rank's
    #: file does not hold may be in the part lost (``correlate.patterns``)
    cut_files: dict[str, set[str]] = field(default_factory=dict)
    #: host -> [(communicator, GPU key)], built from ``comm_ranks`` on first use (``comm_index``)
    _comm_index: dict[str, list[tuple[str, str | None]]] | None = field(default=None, repr=False, compare=False)
    #: host -> [(communicator, rank, GPU key)] of the ranks placed on a GPU of it, built with ``_comm_index``
    _rank_index: dict[str, list[tuple[str, int, str]]] = field(default_factory=dict, repr=False, compare=False)
    #: communicator -> the earliest ``until`` of its ``comm_span`` over its hosts (:meth:`comm_ended`), built lazily
    _comm_end: dict[str, int] | None = field(default=None, repr=False, compare=False)

    # --- building -----------------------------------------------------------
    def learn_samples(self, samples: pa.Table) -> None:
        for r in samples.to_pylist():
            key = self.gpu_key(r["host"], r["device"], r["gpu_index"])
            if key is None:
                continue
            if r["state"] and r["link"] is not None:
                self.link_state[(r["host"], key)][r["link"]] = r["state"]
            if r.get("model"):
                self.model[(r["host"], key)] = r["model"]

    def learn_topology(self, topo: pa.Table) -> None:
        rows = topo.to_pylist()
        for r in rows:  # index -> bus first, so nvlink -R rows (printed by index) key by bus id
            if r["fact"] == "gpu_bus" and r["gpu_index"] is not None and r["device"]:
                self.index_to_bus[(r["host"], r["gpu_index"])] = r["device"]
        for r in rows:
            if r["fact"] == "topo_path" and r["gpu_index"] is not None:
                self.paths[(r["host"], f"gpu{r['gpu_index']}")][r["peer_name"]] = r["path"]
            elif r["fact"] == "nvlink_remote" and r["link"] is not None and r["peer_device"]:
                key = self.gpu_key(r["host"], r["device"], r["gpu_index"])
                if key:
                    self.remote[(r["host"], key, r["link"])] = (r["peer_device"], r["peer_link"])
        self._infer_direct_buses()

    def _infer_direct_buses(self) -> None:
        """Bus ids of GPUs that ``nvidia-smi nvlink -R`` names by index only, from a direct-connect board's own
        wiring: there the remote device of a link is the peer GPU (reference/topology.md §7), so when GPU 0's
        link 2 goes to ``0000:43:00.0`` link 5 and GPU 1's link 5 goes to ``0000:1b:00.0`` link 2, GPU 0 is
        ``0000:1b:00.0`` and GPU 1 ``0000:43:00.0``. Taken only when every link of the host that names a bus id
        so placed has its far end's own line saying the same back (an NVSwitch port, never a GPU of ``-R``, has
        none); the index-keyed entries are then re-keyed by bus id. Without it an Xid 74 on each end of one link,
        300 ms apart, with ``-R`` given, was "no single culprit", asking for ``-R`` (a fresh-user trial)."""
        by_host: dict[str, dict[tuple[int, int], tuple[str, int | None]]] = defaultdict(dict)
        for (host, key, link), far in self.remote.items():
            if (i := gpu_index_key(key)) is not None:
                by_host[host][(i, link)] = far
        for host, links in by_host.items():
            bus = direct_buses(links)
            for (a, x), far in links.items():
                if a in bus:
                    del self.remote[(host, f"gpu{a}", x)]
                    self.remote[(host, bus[a], x)] = far
            for i, d in bus.items():
                self.index_to_bus.setdefault((host, i), d)

    def learn_events(self, events: list[Ev]) -> None:
        self._comm_index = None
        members: list[tuple[str, Ev]] = []
        for e in events:
            member, index, model, uuid = line_facts(e)
            if member is not None:
                comm = member[0]
                members.append((comm, e))
                self.comm_ranks[comm][e.rank] = (e.host, line_gpu(e))
                self.comm_logs.setdefault((comm, e.host), set()).add(log_stream(e))
                # a line dated only by an upper bound (its Kafka append, the stamped line after it) may have been
                # written long before: it says no communicator began after an event (``comm_later``)
                if e.ts_basis not in UNORDERED_BASES and not e.undated() \
                        and e.ts < self.comm_first.get((comm, e.host), e.ts + 1):
                    self.comm_first[(comm, e.host)] = e.ts
                if e.nranks:
                    self.comm_size[comm] = e.nranks
            if index is not None:
                self.index_to_bus[(e.host, index)] = e.device
            if model is not None:
                self.model.setdefault((e.host, f"gpu{e.gpu_index}"), model)
            if uuid is not None:
                self.uuid_gpu[(e.host, uuid)] = line_gpu(e)
            addr = line_addr(e)
            if addr is not None:
                said = self.addr_hosts.setdefault(addr, {})
                said[e.host] = max(said.get(e.host, e.ts), e.ts)
            if e.details.get("file_cut"):
                self.cut_files.setdefault(e.origin.split("@")[0].removeprefix("file:"), set()).add(e.host)
        self.comm_span = comm_spans(members)
        self._comm_end = None

    def peer_host(self, e: Ev) -> str | None:
        """The host ``e``'s peer is on, when ``e`` names its peer (``details.peer_addr``: NCCL's "Got completion from
        peer <addr><port>", "Call to recv from <addr><port> failed", "Connection closed by remote peer
        <name><port>"): the host whose NCCL said it uses that address (:attr:`addr_hosts`), else the address as a host
        name (``canonical_host``: a peer printed by its name, ``node22.cluster`` -> ``node22``; a host named by its
        address); a loopback address is ``e``'s own host. Of several hosts that said one address, the one that said
        it last before ``e``, when no other said it within ``ADDR_REUSE_US`` before that (a pod's address given to
        another pod hours later: the address named no host for ever, a break-it pass); hosts that use it at once
        (a container's 172.17.0.2 on every host) name none. None when ``e`` names no peer or no host is sure."""
        raw = e.details.get("peer_addr")
        if not isinstance(raw, str) or not raw:
            return None
        addr = peer_name(raw)
        if loopback(addr):
            return e.host
        said = self.addr_hosts.get(addr)
        if said is None:
            return addr
        return self._said_by(said, e.ts)

    @staticmethod
    def _said_by(said: dict[str, int], ts: int) -> str | None:
        """The host of an address that the hosts ``said`` (host -> the time of its latest address line, µs) use, at
        ``ts`` (µs): the one host, else the one that said it last before ``ts`` when no other said it within
        ``ADDR_REUSE_US`` before that; None when no host is sure (:meth:`peer_host`)."""
        if len(said) == 1:
            return next(iter(said))
        before = sorted(((t, h) for h, t in said.items() if t <= ts), reverse=True)
        if before and (len(before) == 1 or before[0][0] - before[1][0] > ADDR_REUSE_US):
            return before[0][1]
        return None

    def addr_host(self, e: Ev) -> str | None:
        """The host ``e``'s own host is, when ``e``'s line named its host by an IP address (a Ray driver's
        ``RayTaskError(…): ray::… (pid=7712, ip=172.16.142.233, …)``: the node that raised, by its address; a
        talosctl or syslog relay's address) and a host's NCCL said it uses that address (:attr:`addr_hosts`, as
        :meth:`peer_host` reads a peer's). None when ``e``'s host is no IP address, a loopback one, one no host
        said, or one no host is sure of; the name itself when it names itself."""
        name = peer_name(e.host)  # an IPv4-mapped address as its IPv4 one: "::ffff:127.0.0.1" is a loopback address
        try:  # (Python 3.11's is_loopback says no of it: a host whose NCCL said "Using lo:127.0.0.1" took the line)
            ip = ipaddress.ip_address(name)
        except ValueError:
            return None
        if ip.is_loopback or ip.is_unspecified:
            return None
        said = self.addr_hosts.get(name)
        return None if said is None else self._said_by(said, e.ts)

    def name_hosts(self, events: list[Ev], copies: Copies | None = None) -> list[Ev]:
        """``events`` with each one whose line named its host by an address a host's NCCL said it uses
        (:meth:`addr_host`) replaced by a copy on that host, ``details.host_addr`` the address. Without it a Ray
        driver's ``RayTaskError(DistBackendError): … ip=172.16.142.233`` was an incident of a host
        "172.16.142.233" beside the Xid 79 of the node whose NCCL said "Bootstrap : Using eth0:172.16.142.233"
        (a leftover of a defect pass). Lines that name a peer by address are read the same way (:meth:`peer_host`).
        ``copies``: the caller's copies from its last call (``model.Copies``), given again while the address names
        the same host (and the line's implied start and rescheduled time, which a copy keeps, are the same)."""
        if not self.addr_hosts:
            return events
        out = events
        for k, e in enumerate(events):
            if (e.host[:1].isdigit() or ":" in e.host) and (h := self.addr_host(e)) and h != e.host:
                if out is events:
                    out = list(events)
                out[k] = copy_once(copies, "host", e, (h, e.implied_start, e.rescheduled),
                                   lambda: replace(e, host=h, details={**e.details, "host_addr": e.host}))
        return out

    def host_facts(self) -> dict[str, tuple]:
        """host -> what the topology holds about it, as plain values for equality tests
        (``correlator.AttributionCache``): its GPUs' link states, models, ``topo -m`` paths, remote link ends and index
        -> bus ids, the communicators with a rank on it (ids, in ``comm_ranks`` order; their facts: :meth:`comm_facts`),
        and UUID -> GPU. Every query reads the facts of the host it is given, of a communicator with a rank on that host
        (``comm_index``; the communicator a timeout names is picked among those with a rank on the timeout's host), or
        the fleet config (:meth:`fleet_facts`)."""
        out: dict[str, tuple[dict, dict, dict, dict, dict, list, dict]] = {}

        def of(host: str) -> tuple[dict, dict, dict, dict, dict, list, dict]:
            f = out.get(host)
            if f is None:
                f = out[host] = ({}, {}, {}, {}, {}, [], {})
            return f

        for (h, k), links in self.link_state.items():
            of(h)[0][k] = dict(links)
        for (h, k), m in self.model.items():
            of(h)[1][k] = m
        for (h, k), peers in self.paths.items():
            of(h)[2][k] = dict(peers)
        for (h, k, l), far in self.remote.items():
            of(h)[3][(k, l)] = far
        for (h, i), bus in self.index_to_bus.items():
            of(h)[4][i] = bus
        for comm, ranks in self.comm_ranks.items():
            for h in {h for h, _dev in ranks.values()}:
                of(h)[5].append(comm)
        for (h, u), gpu in self.uuid_gpu.items():
            of(h)[6][u] = gpu
        return out

    def comm_facts(self) -> dict[str, tuple[int, dict[int, tuple[str, str | None]], int | None,
                                            dict[str, tuple[int | None, int | None]] | None,
                                            dict[str, frozenset[str]] | None, dict[str, int] | None]]:
        """communicator id -> (its place in ``comm_ranks``, rank -> (host, GPU key), size, host -> its
        ``comm_span``, host -> its ``comm_logs``, host -> its ``comm_first``), as plain values for equality tests (see
        :meth:`host_facts`)."""
        spans: dict[str, dict[str, tuple[int | None, int | None]]] = {}
        for (comm, host), span in self.comm_span.items():
            spans.setdefault(comm, {})[host] = span
        logs: dict[str, dict[str, frozenset[str]]] = {}
        for (comm, host), of in self.comm_logs.items():
            logs.setdefault(comm, {})[host] = frozenset(of)
        first: dict[str, dict[str, int]] = {}
        for (comm, host), t in self.comm_first.items():
            first.setdefault(comm, {})[host] = t
        return {comm: (pos, dict(ranks), self.comm_size.get(comm), spans.get(comm), logs.get(comm), first.get(comm))
                for pos, (comm, ranks) in enumerate(self.comm_ranks.items())}

    def fleet_facts(self) -> dict[str, tuple[str | None, str | None, str | None]]:
        """The fleet config as values (host -> platform, NVLink domain, rack): what queries read beyond
        :meth:`host_facts` and :meth:`comm_facts`."""
        return {h: (c.platform, c.domain, c.rack) for h, c in self.hosts.items()}

    def comm_index(self) -> dict[str, list[tuple[str, str | None]]]:
        """host -> [(communicator id, GPU key or None)] of the ranks NCCL init lines placed on it."""
        if self._comm_index is None:
            out: dict[str, list[tuple[str, str | None]]] = {}
            placed: dict[str, list[tuple[str, int, str]]] = {}
            for comm, ranks in self.comm_ranks.items():
                for rank, (host, dev) in ranks.items():
                    out.setdefault(host, []).append((comm, dev))
                    if dev is not None:
                        placed.setdefault(host, []).append((comm, rank, dev))
            self._comm_index, self._rank_index = out, placed
        return self._comm_index

    def gpu_rank(self, host: str, key: str, e: Ev) -> int | None:
        """The rank NCCL's init lines put on GPU ``key`` (:meth:`gpu_key`: a bus id, or ``gpu<index>``) of ``host``
        when ``e`` (an event of that GPU) began: of the communicators then live there (:meth:`comm_live`, not ended
        on another of their hosts: :meth:`comm_ended`, nor begun there after it: :meth:`comm_later`) with a
        rank on that GPU, the largest one's — the job's world communicator (its subgroups number their ranks anew:
        NCCL's ``ncclCommSplit``); None when no init line places a rank there, or when the largest put different
        ranks on it (two jobs' init lines no handover tells apart). An Xid 79 on the GPU of rank 5 was an initiator
        with rank null though the job's own ``Init COMPLETE`` line said which rank that GPU held (DESIGN.md's
        incident shape gives a GPU party its rank)."""
        self.comm_index()
        found = [(self.comm_size.get(comm) or len(self.comm_ranks[comm]), rank)
                 for comm, rank, dev in self._rank_index.get(host, ())
                 if self.line_key(host, dev) == key and self.comm_live(comm, host, e)
                 and not self.comm_ended(comm, e) and not self.comm_later(comm, host, e)]
        if not found:
            return None
        top = max(size for size, _ in found)
        ranks = {rank for size, rank in found if size == top}
        return ranks.pop() if len(ranks) == 1 else None

    def comm_later(self, comm: str, host: str, e: Ev) -> bool:
        """Did ``comm``'s first membership line on ``host`` (:attr:`comm_first`) come after ``e`` began, by more than
        ``HANDOVER_MARGIN_US``? A job that started on a GPU two hours after it failed held no rank on it then (its
        rank was the Xid's: a break-it pass); never for an event timed only by its file or an operator's report."""
        first = self.comm_first.get((comm, host))
        return first is not None and e.ts_basis not in UNORDERED_BASES and first > e.start + HANDOVER_MARGIN_US

    def comm_ended(self, comm: str, e: Ev) -> bool:
        """Had ``comm`` ended when ``e`` began, on any host of its ranks? True when another process took over a GPU
        of one of its ranks (:attr:`comm_span`'s ``until``, on that host's clock, plus ``HANDOVER_MARGIN_US``)
        before ``e.start``: a communicator's ranks live and die together (a job restarted on other GPUs of a host
        left its old communicator unbounded there, and a GPU it left was named by the dead run's rank); never for
        an event timed only by its file or an operator's report."""
        if e.ts_basis in UNORDERED_BASES:
            return False
        if self._comm_end is None:
            ends: dict[str, int] = {}
            for (c, _host), (_since, until) in self.comm_span.items():
                if until is not None and until < ends.get(c, until + 1):
                    ends[c] = until
            self._comm_end = ends
        end = self._comm_end.get(comm)
        return end is not None and e.start >= end + HANDOVER_MARGIN_US

    def comm_window(self, comm: str, host: str) -> tuple[float, float] | None:
        """``[lo, hi)`` µs: when an event of ``host`` that began then may belong to ``comm`` — its ``comm_span``
        widened by ``HANDOVER_MARGIN_US`` on either side (an open end unbounded); None when nothing bounds it."""
        span = self.comm_span.get((comm, host))
        if span is None:
            return None
        since, until = span
        return (-math.inf if since is None else since - HANDOVER_MARGIN_US,
                math.inf if until is None else until + HANDOVER_MARGIN_US)

    def comm_live(self, comm: str, host: str, e: Ev) -> bool:
        """Was ``comm`` (with a rank on ``host``) the communicator of its GPUs there when ``e`` (an event of
        ``host``) began? True unless ``e.start`` lies outside its :meth:`comm_window`; always true for an event
        timed only by its file or an operator's report."""
        window = self.comm_window(comm, host)
        return window is None or e.ts_basis in UNORDERED_BASES or window[0] <= e.start < window[1]

    def gpu_key(self, host: str, device: str | None, gpu_index: int | None) -> str | None:
        if device:
            return device
        if gpu_index is not None:
            return self.index_to_bus.get((host, gpu_index), f"gpu{gpu_index}")
        return None

    def line_key(self, host: str, gpu: str) -> str:
        """:meth:`gpu_key` of a GPU as the tables hold a line's GPU (:func:`line_gpu`: a bus id, or ``gpu<index>``
        whose bus id the host's lines may give)."""
        index = gpu_index_key(gpu)
        return self.gpu_key(host, None if index is not None else gpu, index)

    def links_up(self, host: str, key: str) -> set[int]:
        return {l for l, s in self.link_state.get((host, key), {}).items() if s == "up"}

    def gpu_model(self, host: str, key: str) -> str | None:
        m = self.model.get((host, key))
        if m:
            return m
        cfg = self.hosts.get(host)
        return cfg.platform if cfg else None

    def has_nvlink_evidence(self, host: str, key: str) -> bool:
        """Any sign this GPU has NVLink: a link up, an ``NV<k>`` path, a remote link."""
        if self.links_up(host, key):
            return True
        if any(p.startswith("NV") for p in self.paths.get((host, key), {}).values()):
            return True
        return any(h == host and k == key for (h, k, _l) in self.remote)

    def host_paths(self, host: str) -> list[tuple[str, str, str]]:
        """(gpu, peer, path) for every GPU pair of ``host`` that ``topo -m`` showed."""
        return [(k, peer, p) for (h, k), peers in self.paths.items() if h == host
                for peer, p in peers.items() if peer.startswith("GPU")]

    def domain(self, host: str) -> str:
        cfg = self.hosts.get(host)
        return (cfg.domain if cfg and cfg.domain else None) or host

    def nvlink_peer(self, host: str, key: str, link: int) -> tuple[str, int] | None:
        return self.remote.get((host, key, link))


def gpu_index_key(key: str) -> int | None:
    """The index of a GPU key that names a GPU by index only (``gpu3`` -> 3; :meth:`Topology.gpu_key`), else None
    (a bus id)."""
    return int(key[3:]) if key.startswith("gpu") and key[3:].isdecimal() else None


def direct_buses(links: dict[tuple[int, int], tuple[str, int | None]]) -> dict[int, str]:
    """GPU index -> bus id read from one host's ``nvidia-smi nvlink -R`` lines alone, ``{(GPU index, link):
    (remote bus id, remote link)}``, where the remote devices are the host's own GPUs (a direct-connect board,
    reference/topology.md §7): GPU a's link x reaching ``d`` link y, and GPU b's link y reaching ``d'`` link x,
    make a = d' and b = d. ``{}`` unless the pairs agree (one bus id per index and one index per bus id) and
    every link whose remote is a GPU so placed is answered by that GPU's own line (an NVSwitch's ports never
    are: it has no line of its own)."""
    back: dict[tuple[int, int], list[tuple[int, str]]] = defaultdict(list)  # (link, remote link) -> (GPU, remote)
    for (a, x), (far, y) in links.items():
        if y is not None:
            back[(x, y)].append((a, far))
    bus: dict[int, str] = {}
    for (a, x), (far, y) in links.items():
        for b, far2 in back.get((y, x), ()):
            if b == a or far2 == far:
                continue
            for i, d in ((a, far2), (b, far)):
                if bus.setdefault(i, d) != d:
                    return {}
    index_of = {d: i for i, d in bus.items()}
    if len(index_of) != len(bus):
        return {}
    for (a, x), (far, y) in links.items():
        i = index_of.get(far)
        if i is not None and links.get((i, y)) != (bus.get(a), x):
            return {}
    return bus


def line_facts(e: Ev) -> tuple[tuple[str, int] | None, int | None, str | None, str | None]:
    """What one line teaches :meth:`Topology.learn_events`: its rank's membership (:func:`rank_membership`), the
    index of the GPU whose bus id it names (an NVML / nvidia-smi line, or NCCL >= 2.18's ``nvmlDev``), the model
    of the GPU whose index it names, the UUID of the GPU it names by bus id or index (``details.uuid``)."""
    if e.source == "nvml" and e.gpu_index is not None and e.device:
        index = e.gpu_index  # nvidia-smi / NVML index
    elif e.signature == "nccl.init" and e.device and str(e.details.get("nvml_dev", "")).isdigit():
        index = int(e.details["nvml_dev"])
    else:
        index = None
    model = e.details.get("model") if e.gpu_index is not None else None
    uuid = e.details.get("uuid") if (e.device or e.gpu_index is not None) and e.device_type in (None, "gpu") else None
    return rank_membership(e), index, model or None, uuid if isinstance(uuid, str) and uuid else None


def log_stream(e: Ev) -> str:
    """The log a line was read from, as one job's process writes it: its file (``model.capture_of``), or its Kafka
    topic and partition (a Kafka value is a batch of a stream, not the stream: ``kafka:fleet.nccl/3/1207:5`` ->
    ``kafka:fleet.nccl/3``). Two jobs on one host write two logs: a rank's watchdog timeout is of the communicator whose
    init lines its own log holds (``rules.comms_of``; two jobs on GPUs 0-3 and 4-7 of two hosts, both numbering their
    ranks 0-7, were one incident of both GPUs' faults: a scenario trial)."""
    if e.origin.startswith("kafka:"):
        return e.origin.rsplit("/", 1)[0]
    return capture_of(e)


def teaches_topology(e: Ev) -> bool:
    """Whether :meth:`Topology.learn_events` learns anything from ``e`` (:func:`line_facts`, :func:`line_addr`, a line
    of a file read in part: ``details.file_cut``).
    Other events leave the topology as it is, so the streaming correlator reuses its last step's topology when
    only such events came (``StreamCorrelator._learn``)."""
    return line_facts(e) != (None, None, None, None) or line_addr(e) is not None or bool(e.details.get("file_cut"))


def line_addr(e: Ev) -> str | None:
    """The address ``e``'s host uses for NCCL's out-of-band connections (``details.oob_addr`` of an ``nccl.bootstrap``
    line), spelt as :func:`peer_name` spells a peer's; None for any other line, and for what is no IP address or a
    loopback one (``lo:127.0.0.1``: every host's; a peer's ``127.0.0.1`` was tied to the host that printed it: a
    break-it pass)."""
    raw = e.details.get("oob_addr")
    if not isinstance(raw, str) or not raw:
        return None
    addr = peer_name(raw)
    try:
        ip = ipaddress.ip_address(addr)
    except ValueError:
        return None
    return None if ip.is_loopback or ip.is_unspecified else addr


#: how long before one host's address line another host's line of the same address makes it ambiguous (µs): pods
#: take addresses others gave up; containers that use one at once (172.17.0.2) print it within the same minutes
ADDR_REUSE_US = 600_000_000


@lru_cache(maxsize=65536)
def peer_name(addr: str) -> str:
    """One spelling of a peer's address or name as NCCL prints it: ``canonical_host`` (lower case, a host name's
    first label, an IPv6 address as RFC 5952 writes it) without an IPv6 zone: the zone is the printing host's own
    interface (``fe80::…%ib1`` on one host is ``%ib0`` on the other: a break-it pass). An IPv4-mapped IPv6 address
    is its IPv4 address (``::ffff:10.0.0.7``, as a dual-stack socket prints a peer whose host said ``10.0.0.7``: it
    named no host, a break-it pass)."""
    name = canonical_host(addr)
    if ":" not in name:
        return name
    name = name.split("%", 1)[0]
    if name.startswith("::ffff:"):
        try:
            mapped = ipaddress.IPv6Address(name).ipv4_mapped
        except ValueError:
            mapped = None
        if mapped is not None:
            return str(mapped)
    return name


@lru_cache(maxsize=4096)
def bridge_gateway(addr: str) -> bool:
    """Whether ``addr`` is the gateway address of a host-local bridge, no other host's: Docker's networks
    (dockerd's default address pools, 172.17.0.0/16 … 172.31.0.0/16, each network's gateway its ``.0.1``: docker0 is
    172.17.0.1, a compose network's br-… 172.18.0.1) and libvirt's default network (virbr0, 192.168.122.1). NCCL
    that connects to one chose that bridge's interface for its sockets (dmlc/xgboost#7982: NCCL_SOCKET_IFNAME
    fixed it); in AWS's default VPC, 172.31.0.0/16, the ``.0.1`` is the VPC router's, no host either."""
    try:
        ip = ipaddress.ip_address(peer_name(addr))
    except ValueError:
        return False
    if ip.version != 4:
        return False
    a, b, c, d = ip.packed
    return (a == 172 and 17 <= b <= 31 and c == 0 and d == 1) or (a, b, c, d) == (192, 168, 122, 1)


@lru_cache(maxsize=65536)
def loopback(addr: str) -> bool:
    """Whether ``addr`` (as :func:`peer_name` spells it) is a loopback IP address (a peer on the reporting host
    itself)."""
    try:
        return ipaddress.ip_address(addr).is_loopback
    except ValueError:
        return False


@lru_cache(maxsize=4096)
def link_local(addr: str) -> bool:
    """Whether ``addr`` is a link-local IP address (169.254.0.0/16, fe80::/10: an interface without an address of the
    hosts' network, a USB NIC, a cloud metadata or an unconfigured port): no address a peer is reached at."""
    try:
        return ipaddress.ip_address(peer_name(addr)).is_link_local
    except ValueError:
        return False


def line_gpu(e: Ev) -> str | None:
    """The GPU a line names, as the membership tables key it: its bus id, else ``gpu<index>``, else None."""
    return e.device or (f"gpu{e.gpu_index}" if e.gpu_index is not None else None)


def rank_membership(e: Ev) -> tuple[str, int] | None:
    """(communicator id, rank) when ``e`` says which communicator a rank belongs to: an NCCL ``Init
    COMPLETE`` / init line or a P2P fallback line with its comm id, or an nccl-tests rank line (its
    communicator named by host and pid)."""
    if e.kind not in ("nccl_init", "nccl_p2p_fallback") or e.rank is None:
        return None
    comm = e.comm or (f"{e.host}:{e.pid}" if e.signature == "nccltests.rank" and e.pid else None)
    return (comm, e.rank) if comm else None


def comm_spans(members: Iterable[tuple[str, Ev]]) -> dict[tuple[str, str], tuple[int | None, int | None]]:
    """When each communicator held its GPUs on each host: ``(communicator, host) -> (since, until)`` µs, on
    that host's clock, for the pairs where a GPU changed hands. ``members``: (communicator, line) for each
    membership line (:func:`rank_membership`).

    A GPU changes hands when another process (a different pid) prints a membership line
    (:func:`rank_membership`) of another communicator on it after the last membership line of the
    communicator there before: a job restarted from its checkpoint, or the scheduler's next job, inits new
    communicators on the same GPUs. The old communicator's ranks there are gone (a process holds its
    communicators until it exits), so it is bounded ``until`` the new one's first line on the host; the new
    one is bounded ``since`` that line. Sub-communicators of one process (PyTorch process groups, NCCL
    ``ncclCommSplit``) share its pid and never bound each other. Lines without a pid or a GPU, or timed only
    by their file (``UNORDERED_BASES``), bound nothing; a pair absent from the result is unbounded (the
    communicator's first job on the host, as far as the events go).

    Without bounds every communicator ever initialised on a host would count for every later event of the
    host (``rules.comms_of``): faults of two consecutive jobs on shared hosts would join as one communicator's,
    a restarted job's hang would be matched against the membership of its previous run, and the streaming
    correlator would keep every job's membership lines for ever (``stream.StreamCorrelator._prune``)."""
    # (host, GPU key) -> communicator -> [first, last, pid] of its membership lines there
    per_gpu: dict[tuple[str, str], dict[str, list[int]]] = {}
    for comm, e in members:
        if e.pid is None or e.ts_basis in UNORDERED_BASES:
            continue
        dev = line_gpu(e)
        if dev is None:
            continue
        gpu = per_gpu.get((e.host, dev))
        if gpu is None:
            gpu = per_gpu[(e.host, dev)] = {}
        seen = gpu.get(comm)
        if seen is None:
            gpu[comm] = [e.ts, e.ts, e.pid]
        elif e.ts < seen[0]:
            seen[0] = e.ts
        elif e.ts > seen[1]:
            seen[1] = e.ts
    since: dict[tuple[str, str], int] = {}
    until: dict[tuple[str, str], int] = {}
    for (host, _dev), comms in per_gpu.items():
        if len(comms) < 2:
            continue
        if len(comms) == 2:  # the usual case (a run and the one before it), without sorting
            (a, (fa, la, pa)), (b, (fb, lb, pb)) = comms.items()
            if pa != pb and (fb > la or fa > lb):
                (old, new, at) = (a, b, fb) if fb > la else (b, a, fa)
                if at < until.get((old, host), at + 1):
                    until[(old, host)] = at
                if at < since.get((new, host), at + 1):
                    since[(new, host)] = at
            continue
        # O(k log k) in the k communicators one GPU saw (a week of nccl-tests runs is thousands of processes)
        by_first = sorted(comms.values(), key=lambda v: v[0])
        firsts = [v[0] for v in by_first]
        # by_first index -> the first index at or after it of another pid than its (one process may hold
        # thousands of communicators on a GPU: they are skipped in one step)
        other_pid = [len(by_first)] * len(by_first)
        for j in range(len(by_first) - 2, -1, -1):
            other_pid[j] = j + 1 if by_first[j + 1][2] != by_first[j][2] else other_pid[j + 1]
        # the earliest last line, and the earliest of another pid than its: what another process's line may follow
        lasts = sorted((v[1], v[2]) for v in comms.values())
        other = next(((t, p) for t, p in lasts if p != lasts[0][1]), None)
        for comm, (first, last, pid) in comms.items():
            i = bisect_right(firsts, last)  # the first lines after this communicator's last one ...
            if i < len(by_first) and by_first[i][2] == pid:  # ... of another process: it took the GPU over
                i = other_pid[i]
            if i < len(by_first) and by_first[i][0] < until.get((comm, host), by_first[i][0] + 1):
                until[(comm, host)] = by_first[i][0]
            before = lasts[0] if lasts[0][1] != pid else other  # another process's line came before this one's
            if before is not None and before[0] < first and first < since.get((comm, host), first + 1):
                since[(comm, host)] = first
    return {k: (since.get(k), until.get(k)) for k in since.keys() | until.keys()}


def build_topology(events: list[Ev], samples: pa.Table | None, topo: pa.Table | None,
                   hosts: dict[str, HostConfig] | None = None) -> Topology:
    """Everything known about wiring, from one batch of inputs."""
    t = Topology(hosts=dict(hosts or {}))
    t.learn_events(events)
    if samples is not None:
        t.learn_samples(samples)
    if topo is not None:
        t.learn_topology(topo)
    return t
