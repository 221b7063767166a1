"""Attribution inside one candidate incident: who explains whom, and who came first.

1. **Subjects**: events are grouped by what reported them (a GPU, a switch, a
   NIC, a rank, the host). An event that names no device joins the one device
   of its host that reports the same kind or category (an NVML ECC event with
   only a handle joins the GPU whose ECC count is non-zero; an Xid's category is
   its catalog's). A rank's line of a device's fault (a CUDA ECC error) joins
   the GPU NCCL's init lines place the rank on, else the one GPU of its host
   that reports that category. A party is named by ``lead_key``.
2. **Edges**: every ``explains`` rule is tried on every ordered pair; an edge
   records the rule and the strongest relation that held.
3. **Verdict**: the whole-incident patterns (``correlate.patterns``) are tried
   in the order of ``rules.yaml``; if none recognises the incident, the
   subjects with unexplained faults are the candidates: one candidate is the
   initiator; several with no clear first are reported as unknown.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections import defaultdict, deque
from dataclasses import dataclass, field
from itertools import chain
from operator import itemgetter
from typing import Any, Callable, Hashable, Iterable

from correlate.model import CRASH_SIGNALS, RAY_WORKER_DIED, Ev, spares_job, subject_rank
from correlate.rules import (ONE_HOST_RELATIONS, RELATION_STRENGTH, Relations, Rules, SideIndex, any_holds,
                             collective_of, collective_window_us, log_of, named_collective, pred_shape)
from correlate.topology import Topology, gpu_index_key
from correlate.window import FILE_REACH_US, Clocks, file_dated, start_skew, within
from ingest.catalog import Catalog
from schemas.events import SEVERITY_RANK
from schemas.pci import normalize_bus_id

S = 1_000_000
ROLE_RANK = {"initiator": 3, "either": 2, "downstream": 1, "application": 0, "context": -1}
#: xid-catalog.csv category -> incident category
XID_CATEGORY = {"nvlink": "link_fault", "gpu_memory_ecc": "ecc", "gpu_off_bus": "gpu_off_bus", "gsp": "gsp_error",
                "pcie": "pcie", "application": "application", "driver": "driver", "thermal_power": "thermal_power",
                "gpu_engine": "gpu_engine", "c2c": "c2c", "security": "security", "virtualization": "driver",
                "fabric": "nvswitch_fault", "other": "driver"}
#: the categories of a device's own fault (the Xid catalog's, but a program's): a rank's line of one (a CUDA ECC error)
#: is its GPU's (``resolve_subjects``)
DEVICE_CATEGORIES = frozenset(XID_CATEGORY.values()) - {"application"}
#: what a host's daemon or driver reports when its line names no device (Fabric Manager failing to start, the
#: driver's API mismatch, CUDA's "system not yet initialized"): a fault of the host, which ``resolve_subjects``
#: does not hand to the one GPU of the host that logged the same category. A Fabric Manager that failed at boot was
#: the party of the GPU whose NVLS setup failed half a day later, and so downstream of that GPU's Xid 79 (a break-it
#: pass)
HOST_CATEGORIES = frozenset({"fabric_manager", "driver", "host_memory"})
#: event kind -> incident category, for an event that neither the Xid catalog nor its signature categorises. A GPU
#: that does not start (RmInitAdapter, its FSP refusing the boot) is a GPU failure as GFW's boot timeout is; it was
#: "other" (a real-logs pass: NVIDIA/nvtrust#19)
KIND_CATEGORY = {"ecc": "ecc", "gpu_off_bus": "gpu_off_bus", "nccl_timeout": "nccl_hang", "ib_port": "ib_port",
                 "fabric_manager": "fabric_manager", "gpu_init_failed": "gpu_failure"}
SYMPTOM = "operator.symptom"


@dataclass(slots=True)
class Edge:
    cause: Ev
    effect: Ev
    rule: str
    relation: str


@dataclass(slots=True)
class Party:
    """One subject taking part in an incident, with how it relates to the initiator."""

    key: tuple
    events: list[Ev]
    relation: str | None = None
    rule: str | None = None


@dataclass(slots=True)
class Verdict:
    """What the attribution concluded about one incident."""

    pattern: str
    category: str
    initiator: dict[str, Any]
    initiator_events: list[Ev]
    downstream: list[Party] = field(default_factory=list)
    context: list[Ev] = field(default_factory=list)
    confidence: float = 0.5
    explanation: str = ""
    next_action: str = ""
    verify: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    severity: str | None = None  # set when the pattern overrides "worst event"
    edges: list[Edge] = field(default_factory=list)


@dataclass
class ShapeMemo:
    """Rule tests decided once per event shape: (kind, signature, Xid, SXid or not, severity, fatal, cause
    or not) is all ``rules.any_holds`` reads of an event. Shared by the scenes of one ``correlate()`` call (and by
    the streaming correlator's calls while their rules and catalog are the same: ``correlator.Cache``)."""

    #: shape -> its id (0, 1, …)
    ids: dict[tuple, int] = field(default_factory=dict)
    #: shape id -> (cause, effect): bit k of each is set when that side of ``Rules.explains[k]`` holds for the shape
    sides: dict[int, tuple[int, int]] = field(default_factory=dict)
    #: (rules, catalog, the cause sides' index, the effect sides' index): ``rules.SideIndex`` of ``Rules.explains``
    index: tuple | None = field(default=None, repr=False)

    def side_bits(self, e: Ev, rules: Rules, catalog: Catalog) -> tuple[int, int]:
        """(cause, effect) bits of ``e`` under ``rules.explains`` (``sides``' values), through the rules' indexes."""
        got = self.index
        if got is None or got[0] is not rules or got[1] is not catalog:
            got = self.index = (rules, catalog, SideIndex([r.cause for r in rules.explains], catalog),
                                SideIndex([r.effect for r in rules.explains], catalog))
        return got[2].bits(e), got[3].bits(e)


@dataclass
class Scene:
    """Everything the patterns look at for one candidate incident. ``events`` are fixed once the scene is built:
    its memos (faults, shapes, parties) are made from them once."""

    events: list[Ev]
    topo: Topology
    catalog: Catalog
    rules: Rules
    clocks: Clocks
    subject: dict[str, tuple] = field(default_factory=dict)
    edges: list[Edge] = field(default_factory=list)
    #: rule tests by event shape, shared by the scenes of one ``correlate()`` call (its rules and catalog
    #: are theirs too)
    memo: ShapeMemo = field(default_factory=ShapeMemo, repr=False)
    _faults: list[Ev] | None = field(default=None, repr=False)
    #: the scene's distinct event shapes as (shape id, one event of that shape), and per shape id the indexes
    #: of its events (``_grouped``): ``live_rules`` and ``matching`` read a rule side once per shape
    _shapes: tuple[list[tuple[int, Ev]], dict[int, list[int]]] | None = field(default=None, repr=False)
    #: the live rules' bit mask, and (rule, side) -> the index groups of the shapes that side of a live rule holds
    #: for (``live_rules``, read by ``matching``)
    _sides: tuple[int, dict[tuple[int, int], list[list[int]]]] | None = field(default=None, repr=False)
    _causes_of: tuple | None = field(default=None, repr=False)  # (edges, their count, effect id -> causes)
    #: (edges, their count, subject, the ids of the events an edge from another subject explains): ``explained``
    _explained: tuple | None = field(default=None, repr=False)
    _relations: Relations | None = field(default=None, repr=False)  # ``relations``

    def relations(self) -> Relations:
        """One ``rules.Relations`` over the scene's topology for its events (each event's GPU key and communicators
        found once: ``find_edges`` and ``incident.body`` ask both), made again when the topology is set anew."""
        got = self._relations
        if got is None or got.topo is not self.topo:
            got = self._relations = Relations(self.topo)
        return got
    _parties: tuple | None = field(default=None, repr=False)  # (the subject it was grouped by, parties)

    # --- roles -------------------------------------------------------------
    def role(self, e: Ev) -> str:
        return role_of(e, self.catalog)

    def category_of(self, e: Ev) -> str:
        if e.kind == "sxid":
            return "nvswitch_fault"
        if e.xid is not None and e.xid in self.catalog.xids:
            return XID_CATEGORY.get(self.catalog.xids[e.xid].category, "driver")
        c = self.catalog.by_id.get(e.signature)
        if c and c.sig.category:
            return c.sig.category
        return KIND_CATEGORY.get(e.kind, "other")

    def is_fault(self, e: Ev) -> bool:
        """Evidence that something went wrong (not context, not wiring facts): :func:`is_fault` (inline: asked for
        most events of a scene by several patterns)."""
        judged = e.judged
        return (judged if judged is not None and judged[0] is self.catalog else _judge(e, self.catalog))[2]

    def faults(self) -> list[Ev]:
        if self._faults is None:
            self._faults = [e for e in self.events if self.is_fault(e)]
        return list(self._faults)

    def _grouped(self) -> tuple[list[tuple[int, Ev]], dict[int, list[int]]]:
        """The scene's distinct event shapes as (shape id, one event of that shape), and per shape id the indexes
        of its events; a shape seen for the first time gets its id and the sides of every ``explains`` rule that
        hold for it (``ShapeMemo.sides``: one test per shape and rule side, whatever the number of scenes)."""
        if self._shapes is None:
            memo = self.memo
            ids, sides = memo.ids, memo.sides
            groups: dict[int, list[int]] = {}
            reps: list[tuple[int, Ev]] = []
            for k, e in enumerate(self.events):
                shape = pred_shape(e)
                i = ids.get(shape)
                if i is None:
                    i = ids[shape] = len(ids)
                group = groups.get(i)
                if group is None:
                    groups[i] = [k]
                    reps.append((i, e))
                    if i not in sides:
                        sides[i] = memo.side_bits(e, self.rules, self.catalog)
                else:
                    group.append(k)
            self._shapes = (reps, groups)
        return self._shapes

    def live_rules(self) -> list[int]:
        """The indexes (ascending) of the ``explains`` rules with a cause and an effect among the scene's events
        (either may be the same event: :func:`find_edges` pairs distinct ones): the rules :func:`find_edges` tries,
        from one OR of the shapes' ``ShapeMemo.sides`` instead of a pass over the shapes per rule."""
        reps, groups = self._grouped()
        sides = self.memo.sides
        cause = effect = 0
        for i, _e in reps:
            c, f = sides[i]
            cause |= c
            effect |= f
        both = cause & effect
        # each shape's groups under the live rules' sides it holds for, one pass over its set bits (``matching``
        # passed over every shape once per rule side: 13 % of find_edges in a scene of a thousand events)
        by: dict[tuple[int, int], list[list[int]]] = {}
        for i, _e in reps:
            for side, bits in enumerate(sides[i]):
                bits &= both
                while bits:
                    low = bits & -bits
                    by.setdefault((low.bit_length() - 1, side), []).append(groups[i])
                    bits ^= low
        self._sides = (both, by)
        return [bit for bit in range(both.bit_length()) if both >> bit & 1]

    def matching(self, rule: int, side: int) -> list[int]:
        """The indexes (ascending) of the scene's events for which ``rules.any_holds`` holds for side ``side`` (0:
        cause, 1: effect) of ``Rules.explains[rule]``, decided once per event shape (``ShapeMemo.sides``): of a
        live rule, from the groups ``live_rules`` sorted by rule and side."""
        if self._sides is None:
            self.live_rules()
        both, by = self._sides
        if both >> rule & 1:
            hit = by.get((rule, side), [])
        else:  # a rule with no cause or no effect here: its side the same way, for any caller
            reps, groups = self._grouped()
            sides = self.memo.sides
            hit = [groups[i] for i, _e in reps if sides[i][side] >> rule & 1]
        if not hit:
            return []
        if len(hit) == 1:
            return list(hit[0])
        return sorted(k for group in hit for k in group)

    def symptoms(self) -> list[Ev]:
        return [e for e in self.events if e.signature == SYMPTOM]

    def logged(self) -> list[Ev]:
        """The events from the logs: every one but the operator's symptoms."""
        return [e for e in self.events if e.signature != SYMPTOM]

    def hardware_faults(self) -> list[Ev]:
        """Faults of devices (not NCCL/framework reports, not symptoms, not platform software)."""
        return [e for e in self.faults() if e.source in ("dmesg", "nvml") and e.kind not in ("fabric_manager",)]

    def parties(self) -> dict[tuple, list[Ev]]:
        """Subject key (``resolve_subjects``) -> its events, in ``events`` order; the keys in order of each
        subject's first event. Grouped once per scene (an incident with no single culprit asks once per
        candidate: quadratic in its subjects before); the dict is a copy, the lists are shared: not to be changed
        in place."""
        got = self._parties
        if got is None or got[0] is not self.subject:  # the subjects are set after the scene is built
            out: dict[tuple, list[Ev]] = {}
            subject = self.subject
            for e in self.events:
                key = subject[e.event_id]
                evs = out.get(key)
                if evs is None:
                    out[key] = [e]
                else:
                    evs.append(e)
            got = self._parties = (subject, out)
        return dict(got[1])

    def causes_of(self, e: Ev) -> list[Ev]:
        """The causes the scene's edges give ``e`` (an index of the edges by effect, built again when they change)."""
        if self._causes_of is None or self._causes_of[0] is not self.edges or self._causes_of[1] != len(self.edges):
            index: dict[str, list[Ev]] = defaultdict(list)
            for x in self.edges:
                index[x.effect.event_id].append(x.cause)
            self._causes_of = (self.edges, len(self.edges), index)
        return self._causes_of[2].get(e.event_id, [])

    def explained(self, e: Ev) -> bool:
        """An edge from another subject explains ``e``, or an edge from an explained event of its own subject: what
        a subject's explained fault caused is explained with it (a root port's fatal AER error explains the GPU's
        fall below it, and the fall the NCCL "unspecified launch failure" of that GPU's own rank: the GPU stayed a
        candidate by that last line and was named the initiator, the port a downstream party no rule reached — a
        fresh user's trial). The effects, found once per scene's edges and subjects (built again when either is set
        anew or the edges grow)."""
        got = self._explained
        if got is None or got[0] is not self.edges or got[1] != len(self.edges) or got[2] is not self.subject:
            got = self._explained = (self.edges, len(self.edges), self.subject, explained_ids(self.edges,
                                                                                              self.subject))
        return e.event_id in got[3]


def explained_ids(edges: list[Edge], subject: dict[str, tuple]) -> set[str]:
    """The ids of the events ``edges`` explain: effects of an edge from another subject (by ``subject``: event id ->
    subject key), then, to a fixed point, effects of an edge from an explained event of the same subject."""
    ids = {x.effect.event_id for x in edges if subject[x.cause.event_id] != subject[x.effect.event_id]}
    own = [x for x in edges if subject[x.cause.event_id] == subject[x.effect.event_id]]
    grew = bool(ids and own)
    while grew:
        grew = False
        for x in own:
            if x.cause.event_id in ids and x.effect.event_id not in ids:
                ids.add(x.effect.event_id)
                grew = True
    return ids


def role_of(e: Ev, catalog: Catalog) -> str:
    """initiator / either / downstream / application / context, from the Xid catalog or the signature."""
    judged = e.judged
    return (judged if judged is not None and judged[0] is catalog else _judge(e, catalog))[1]


def is_fault(e: Ev, catalog: Catalog) -> bool:
    """Evidence that something went wrong: a symptom, or a non-context event that is a warning or
    worse or an Xid/SXid report (an Xid 45 teardown is informational but still part of a failure)."""
    judged = e.judged
    return (judged if judged is not None and judged[0] is catalog else _judge(e, catalog))[2]


def _judge(e: Ev, catalog: Catalog) -> tuple[Catalog, str, bool]:
    """``Ev.judged``: :func:`role_of` and :func:`is_fault` of ``e`` under ``catalog``, decided once per event and
    catalog (the fields they read are fixed once the event is built)."""
    if e.signature == SYMPTOM:
        judged = (catalog, "downstream", True)
    else:
        if e.xid is not None and e.xid in catalog.xids and e.kind in ("xid", "gsp_error"):
            role = catalog.xids[e.xid].role
            # an Xid 74 whose registers NVIDIA's WORKFLOW_NVLINK_ERR reads (ingest.extract.xid74_registers, formats.md
            # §2.2): only sympathetic bits, "follow the other Xid/SXid", report of a fault elsewhere (rule
            # nvlink.fault_explains_sympathetic_xid74 names it; alone it is still the one fault here, and reported);
            # only ignorable bits, "can be safely ignored": no fault. Both were "either", a candidate beside the GPU
            # whose link failed (a fresh user's trial: "no single culprit")
            reading = e.details.get("register_reading") if e.xid == 74 else None
            role = {"sympathetic": "downstream", "ignorable": "context"}.get(reading, role)
        else:
            c = catalog.by_id.get(e.signature)
            role = c.sig.role if c else "either"
            if e.implied_start is not None and (e.signature == RAY_WORKER_DIED or e.signature in CRASH_SIGNALS):
                # Ray's death line that follows its host's watchdog timeout (model.follow_watchdogs): the teardown of
                # that timeout's process (it was "either", a fault of its own that split one collective's hang by
                # host and lost its category: a break-it pass). Not torchrun's -9: the OOM killer's, maybe first.
                # So is a crash handler's line on the signal (the watchdog's SIGABRT) that ended that process
                role = "downstream"
            if spares_job(e):
                # the OOM killer ended another program of the host (a database, a web server: apache/doris#3525's
                # palo_be), not a rank: the job runs on, so it is no fault of the job's, but context beside the host's
                # faults. Kubernetes' node-problem-detector reads it so: "OOMKilling" is a temporary event, no node
                # condition (config/kernel-monitor.json). Alone on its host it was an error incident, paged, saying
                # "a rank killed so leaves the others of its job waiting" (a defect pass)
                role = "context"
            if "config_differs" in e.details:
                # a setting the hosts of one job's log disagree on (rules.mark_config_mismatch): informational on
                # each host, the job's first fault across them (NVIDIA/nccl#1634: two network plugins, a hang)
                judged = e.judged = (catalog, "initiator", True)
                return judged
        judged = (catalog, role, role != "context" and (e.sev >= 1 or e.kind in ("xid", "sxid", "gsp_error")))
    e.judged = judged
    return judged


class _Fields(dict):
    """Template fields of one event; a field the event lacks reads ``<field>``, for the reader to fill in."""

    def __missing__(self, key: str) -> str:
        return f"<{key}>"


def _fields(e: Ev, subject: tuple | None = None) -> _Fields:
    """The fields a catalog text (``action``, ``verify``) may name: the event's scalar ``details`` (a module, a
    recovery action), ``device`` (a PCI bus id or a NIC; ``<bus id>`` when no line named it: a GPU index is
    no bus id for ``lspci -s``), ``gpu_index`` (``<gpu>``), ``device_short`` (the bus id without its
    function, as ``NVRM: Xid (PCI:…`` prints it), ``xid``, ``sxid``, ``link``, ``pid``, ``rank`` and the other
    scalar columns (``nranks``, ``comm``, ``seq``, ``op``, ``timeout_ms``, ``elapsed_ms``, ``process``, ``cause_xid``)
    when the event has them — every column tests/test_catalog.py counts as a field a text may name —, ``peer`` (the
    other end the line named: the device an AER message came from), its ``host``.

    ``subject``: the event's resolved subject (``Scene.subject``, :func:`resolve_subjects`), which names the
    device when the line did not but another line of the host did (an NVML ECC event without a bus id, and
    ``nvidia-smi``'s table row of the GPU): its bus id, or its ``gpu<i>`` index, fills what the line lacks."""
    f = _Fields({k: str(v) for k, v in e.details.items() if v is not None and not isinstance(v, (dict, list))})
    device, gpu_index = e.device, e.gpu_index
    if subject is not None and subject[1] in (None, "gpu") and (dev := subject[2]):
        if device is None and normalize_bus_id(dev) == dev:
            device = dev
        elif gpu_index is None and (i := gpu_index_key(dev)) is not None:
            gpu_index = i
    # a NIC no line named is an HCA name (ibstat mlx5_0), not a bus id
    unnamed = "<HCA, e.g. mlx5_0>" if e.device_type == "nic" else "<bus id>"
    f.update(device=device or unnamed, device_short=(device or "<bus id>").rsplit(".", 1)[0],
             gpu_index=str(gpu_index) if gpu_index is not None else "<gpu>")
    f.update((k, str(v)) for k, v in (("xid", e.xid), ("sxid", e.sxid), ("link", e.link), ("pid", e.pid),
                                      ("rank", e.rank), ("peer", e.peer), ("nranks", e.nranks), ("comm", e.comm),
                                      ("seq", e.seq), ("op", e.op), ("timeout_ms", e.timeout_ms),
                                      ("elapsed_ms", e.elapsed_ms), ("process", e.process),
                                      ("cause_xid", e.cause_xid)) if v is not None)
    for k in ("xid", "sxid", "link"):  # a number out of its column's range is kept as written (ingest.extract)
        if k not in f and (text := e.details.get(f"{k}_text")):
            f[k] = str(text)
    f.setdefault("host", e.host)
    return f


#: an optional part of a catalog text: kept (without the brackets) when the event gives every field it names,
#: dropped when it lacks one — for a field the line prints only sometimes (the RM's "GPU6" before a GSP line)
OPTIONAL_PART = re.compile(r"\[\[(.*?)\]\]", re.S)
_FIELD = re.compile(r"{(\w+)}")


def _fill(template: str, fields: _Fields) -> str:
    """A catalog text with an event's ``fields`` (``_fields``) in place of ``{field}``, its optional parts
    (:data:`OPTIONAL_PART`) kept or dropped; a text that is no template (a stray brace) as written."""
    if "[[" in template:
        template = OPTIONAL_PART.sub(lambda m: m.group(1) if all(f in fields for f in _FIELD.findall(m.group(1)))
                                     else "", template)
    try:
        return template.format_map(fields)
    except (IndexError, ValueError, AttributeError):
        return template


def catalog_action(catalog: Catalog, e: Ev, subject: tuple | None = None, also: Iterable[Ev] = ()) -> str:
    """The ``action`` of ``e``'s signature (its catalog entry) filled in for ``e`` and its resolved ``subject``
    (:func:`_fields`); "" without one. A signature's ``action_map`` gives the action for what the line said (the
    value of its ``severity_group``, kept in ``details``: an HCA's "port error" or its "local catastrophic error").

    ``also``: other events of the same report (an incident's initiator events); a field ``e`` lacks is taken from
    the first of them of ``e``'s signature that has it. The kernel's OOM killer prints "python invoked oom-killer"
    first and "Killed process 4182 (python)" after it: the first line named the incident and its action lost which
    process was killed (equinor/ert#7797's dmesg, a real-logs pass)."""
    c = catalog.by_id.get(e.signature)
    if not (c and c.sig.action):
        return ""
    text = c.sig.action
    if c.sig.action_map and (said := e.details.get(c.sig.severity_group or "")):
        said = str(said).lower()
        text = next((t for keys, t in c.sig.action_map.items() if said in (k.strip() for k in keys.split("|"))),
                    text)
    fields = _fields(e, subject)
    for other in also:
        if other is not e and other.signature == e.signature:
            for k, v in _fields(other).items():
                fields.setdefault(k, v)
    return _fill(text, fields)


def first_of(items: Iterable[str], n: int = 4, sep: str = ", ", noun: str = "") -> str:
    """``a, b, c, d and 3 more``: the first ``n`` of ``items`` joined by ``sep``, for a one-line message or a table
    cell (``noun``: what the rest are, ``and 3 more hosts``)."""
    items = list(items)
    rest = f" and {len(items) - n} more{' ' + noun if noun else ''}" if len(items) > n else ""
    return sep.join(items[:n]) + rest


def sentences(*texts: str) -> str:
    """Pieces of advice (catalog actions are often lowercase phrases without a full stop, e.g. Xid 13's "…
    -> run DCGM diag") joined as sentences: each stripped, its first letter capitalised, a full stop added
    when it ends without one; empty pieces left out."""
    out = []
    for t in texts:
        t = t.strip()
        if t:
            out.append(t[0].upper() + t[1:] + ("" if t[-1] in ".!?:" else "."))
    return " ".join(out)


def verify_commands(catalog: Catalog, e: Ev, subject: tuple | None = None) -> list[str]:
    """The ``verify`` commands of ``e``'s signature (its catalog entry) filled in for ``e`` and its resolved
    ``subject`` (:func:`_fields`, ``_fill``); for an Xid, those its ``verify_by_category`` gives the Xid's
    xid-catalog.csv category, when it names it."""
    c = catalog.by_id.get(e.signature)
    if not c:
        return []
    fields = _fields(e, subject)
    fact = catalog.xids.get(e.xid) if e.xid is not None else None
    by_category = getattr(c.sig, "verify_by_category", None)  # a derived signature has none
    templates = by_category.get(fact.category, c.sig.verify) if fact and by_category else c.sig.verify
    return [_fill(t, fields) for t in templates]


def lead_key(e: Ev) -> tuple[bool, bool, bool]:
    """How an event ranks to name its party, lowest first, before role and severity: a logged line before an
    operator's report; a line with a time of its own before one dated only by its file or Kafka append time
    (``Ev.undated``; one bounded by the stamped line after it, ``details.ts_next_line``, counts as timed: NCCL's
    unstamped "Cuda failure 999" WARN gave way to the PyTorch exception it explains, whose action points at another
    rank, a real-logs pass); the device's own report (kernel, NVML) before a program's (an NCCL or PyTorch line): a
    traceback's ``CUDA error: uncorrectable ECC error encountered`` beside its GPU's Xid 94 is named by the Xid."""
    return e.signature == SYMPTOM, e.undated() and not e.details.get("ts_next_line"), e.source == "nccl"


def fault_category(e: Ev, catalog: Catalog) -> str | None:
    """The category of fault ``e`` reports (``schemas.incidents.CATEGORIES``): its signature's, else its Xid's
    xid-catalog.csv category (``XID_CATEGORY``: an Xid 94 is an ``ecc`` fault), else None."""
    c = catalog.by_id.get(e.signature)
    if c and c.sig.category:
        return c.sig.category
    fact = catalog.xids.get(e.xid) if e.xid is not None else None
    return XID_CATEGORY.get(fact.category) if fact else None


def may_relate(rules: Rules, catalog: Catalog) -> Callable[[Ev, Ev], bool]:
    """``(a, b) ->`` whether faults ``a`` and ``b`` may belong to one incident, times and relations aside: an
    ``explains`` rule's cause predicates hold for one and its effect predicates for the other (either way: a
    file-dated NCCL NET/IB port error explains the timed watchdog timeouts of its host, a file-dated CUDA error
    reports the timed Xid), or both report the same category of fault (:func:`fault_category`). For
    ``cluster.components``' file-dated faults (``related``)."""
    memo: dict[tuple, bool] = {}  # per pair of event shapes (rules.pred_shape: fault_category reads no more of it)
    index = ShapeMemo()
    bits: dict[tuple, tuple[int, int]] = {}  # per event shape: which explains rules' (cause, effect) hold for it

    def sides(e: Ev) -> tuple[int, int]:
        shape = pred_shape(e)
        got = bits.get(shape)
        if got is None:
            got = bits[shape] = index.side_bits(e, rules, catalog)
        return got

    def explains(x: Ev, y: Ev) -> bool:  # a rule whose cause holds for x and whose effect holds for y
        return bool(sides(x)[0] & sides(y)[1])

    def related(a: Ev, b: Ev) -> bool:
        key = (pred_shape(a), pred_shape(b))
        got = memo.get(key)
        if got is None:
            cat = fault_category(a, catalog)
            got = memo[key] = (cat is not None and cat == fault_category(b, catalog)) or explains(a, b) or \
                explains(b, a)
        return got
    return related


#: the driver's "GPU recovery action changed" Xid (formats.md §2.6): printed for the GPU whose fault changed it
RECOVERY_XID = 154


def resolve_subjects(events: list[Ev], topo: Topology, catalog: Catalog) -> dict[str, tuple]:
    """event_id -> subject key (module doc, step 1)."""
    subj: dict[str, tuple] = {}
    for e in events:
        host, dtype, dev = e.subject()
        if dtype in (None, "gpu") and e.device is None and e.gpu_index is not None:
            dev = topo.index_to_bus.get((host, e.gpu_index), dev)
        subj[e.event_id] = (host, dtype, dev)

    #: per host, each distinct (subject, device type, kind, category) once (a storm's lines name one device alike)
    named: dict[str, dict[tuple[tuple, str | None, str, str | None], None]] = defaultdict(dict)
    recovering: dict[str, set[tuple]] = defaultdict(set)  # per host: the GPUs whose recovery action changed
    rm_of: dict[tuple, set[str]] = defaultdict(set)  # a named GPU -> the RM's numbers its lines gave it ("GPU4 GSP")
    minor_of: dict[tuple, set[str]] = defaultdict(set)  # and its device minor numbers ("device minor number 7")
    for o in events:  # per host: (subject, device type, kind, category) of the events that name a device
        if subj[o.event_id][2] is not None:
            named[o.host][(subj[o.event_id], o.device_type, o.kind, fault_category(o, catalog))] = None
            # the RM's GPU number is often the device minor ("rm_init_adapter failed, device minor number 0" beside
            # "GPU0 …"), not always: "GPU6 _kgspBootGspRm" beside minor number 7 of the same GPU
            # (NVIDIA/open-gpu-kernel-modules#1230, a real-logs pass), so a minor number names a GPU but rules none out
            if (rm := o.details.get("rm_gpu")) is not None:
                rm_of[subj[o.event_id]].add(str(rm))
            if (minor := o.details.get("minor")) is not None:
                minor_of[subj[o.event_id]].add(str(minor))
            if o.xid == RECOVERY_XID and subj[o.event_id][1] in (None, "gpu"):
                recovering[o.host].add(subj[o.event_id])
    memo: dict[tuple, set[tuple]] = {}
    for e in events:
        host, dtype, dev = subj[e.event_id]
        if e.signature == SYMPTOM:
            continue
        if dev is None and dtype in (None, "gpu") and (u := e.details.get("uuid")):
            # a GPU a line names by its UUID alone (the device plugin's "XidCriticalError: … on Device=GPU-…"): the
            # GPU a line of the host gave that UUID with a bus id (the driver's "GPU at PCI:…: GPU-…" preamble before
            # its Xid, in this incident or days before: akash-network/support#244; ``Topology.uuid_gpu``), else the
            # UUID itself; not whichever GPU of the host logged the same kind (two GPUs' Xids merged: a break-it pass)
            gpu = topo.uuid_gpu.get((host, u))
            subj[e.event_id] = (host, "gpu", topo.line_key(host, gpu) if gpu else u)
            continue
        if dev is None:
            q = (host, e.device_type, e.kind, fault_category(e, catalog))
            if e.device_type is None and q[3] in HOST_CATEGORIES:
                continue  # the host's daemon or driver: of the host, not of the one GPU that logged the category
            if q not in memo:
                memo[q] = {s for s, odt, okind, ocat in named.get(host, ())
                           if odt == (e.device_type or odt) and (okind == e.kind or (ocat and ocat == q[3]))}
                if not memo[q] and e.device_type in (None, "gpu"):
                    # none of its kind: the GPU whose recovery action the driver changed (Xid 154 follows the fault
                    # of its GPU, formats.md §2.6): "GSP RM heartbeat timed out", which names no GPU, then Xid 154
                    # on 0000:01:00 was an unnamed GPU beside a GPU no rule tied to it (a real-logs pass:
                    # NVIDIA/open-gpu-kernel-modules#1200)
                    memo[q] = set(recovering.get(host, ()))
                if not memo[q] and e.kind == "gsp_error":
                    # GSP-RM that could not boot names the GPU by the RM's number alone; the GPU whose init failed
                    # with it is named by its bus id ("GPU6 _kgspBootGspRm: unexpected WPR2 already up" between "GPU
                    # 0000:a1:00.0: RmInitAdapter failed!" lines was an unnamed GPU: #1230, a real-logs pass)
                    memo[q] = {s for s, _odt, okind, _ocat in named.get(host, ()) if okind == "gpu_init_failed"}
        elif dtype == "rank" and (c := fault_category(e, catalog)) in DEVICE_CATEGORIES:
            # a rank's line that reports its GPU's fault and names no GPU (a traceback's "[rank27]: RuntimeError:
            # CUDA error: uncorrectable ECC error encountered"): the GPU NCCL's init lines give the rank on its host
            # when they give one; when they give none, the one GPU of its host that logged that category
            gpus = _rank_gpus(topo, host, e.rank)
            if gpus:
                if len(gpus) == 1:
                    g = next(iter(gpus))
                    subj[e.event_id] = (host, "gpu", g)
                continue
            q = (host, "rank", None, c)
            if q not in memo:
                memo[q] = {s for s, _odt, _okind, ocat in named.get(host, ()) if s[1] == "gpu" and ocat == c}
        else:
            continue
        same = memo[q]
        if (rm := e.details.get("rm_gpu")) is not None:
            # the RM's own GPU number: not a GPU whose lines gave it another (GPU1's failed GSP RPCs went to GPU0's
            # Xid 119 "from GPU0 GSP": a break-it pass)
            same = {g for g in same if not rm_of.get(g) or str(rm) in rm_of[g]}
            if len(same) != 1:
                # the GPU a line of its host gave that number with a bus id ("NVRM: GPU0 _kgspBootGspRm: unexpected
                # WPR2 already up" before "NVRM: GPU 0000:01:00.0: rm_init_adapter failed, device minor number 0":
                # an unnamed GPU, NVIDIA/open-gpu-kernel-modules#1058, a real-logs pass)
                same = ({g for g, numbers in rm_of.items()
                         if g[0] == host and g[1] in (None, "gpu") and str(rm) in numbers}
                        or {g for g, numbers in minor_of.items()
                            if g[0] == host and g[1] in (None, "gpu") and str(rm) in numbers} or same)
        if len(same) == 1:
            subj[e.event_id] = next(iter(same))
    return subj


def _rank_gpus(topo: Topology, host: str, rank: int) -> set[str]:
    """The GPUs (bus ids, else ``gpu<index>``) that NCCL's init lines place rank ``rank`` on, on ``host``, in any
    communicator (``Topology.comm_ranks``)."""
    gpus = set()
    for ranks in topo.comm_ranks.values():
        at = ranks.get(rank)
        if at and at[0] == host and at[1]:
            gpus.add(topo.line_key(host, at[1]))  # a bus id, or "gpu<index>" when the init line gave only the index
    return gpus


def find_edges(scene: Scene) -> list[Edge]:
    """The (cause, effect, rule, relation) the ``explains`` rules allow (step 2), in the order of the rules, then of
    the causes, then of the effects in ``scene.events``: for each rule and effect, of each class of alike causes
    (:func:`cause_class`: one kind of line of one device, read alike by every relation) that ``window.may_cause``
    and a relation of the rule pair with it, the last that starts at or before the effect (in scene order), else
    the first after it: the copy going on when the effect came, which what explains that copy reaches (the
    earliest moved a CUDA error to the incident of an Xid 74 storm begun before the Xid 79 that explained the storm's
    later copies: a break-it pass). A device printing thousands of distinct Xid lines a minute (pids, channels,
    addresses) made an edge from every one of them to every other: 5,000 lines took 8 s and 61 MB of evidence, 20,000
    lines 68 s, 1.8 GB and 790 MB (a break-it pass); the other copies of a class say what the one kept says. Whether
    an event is explained by another subject is the same as with every pair.

    Cost: each rule's sides are tested once per event shape (``ShapeMemo.sides``), and only the rules with
    a cause and an effect in the scene are tried (``Scene.live_rules``). A cause alone in its class is
    paired only with the effects whose start lies within the widest tolerance ``window.may_cause`` could grant it (a
    binary search over the rule's effects by start; a cause timed only by an upper bound, ``details.ts_upper_bound``,
    may precede its effect by any amount), each pair tested by ``may_cause``'s conditions inline (what they read of
    an event taken once per call: :func:`_timing`), then by the rule's relations in order. A class of several causes
    takes the effects within reach of any of them, finds each effect's cause by a binary search over the class's
    starts, and tests the relations once per class of effect (:func:`relation_class`), so a flood costs its effects
    times its classes, not its lines squared. ``tests/test_cluster.py`` holds the edges equal to the pairwise
    definition thinned this way."""
    edges: list[Edge] = []
    evs = scene.events
    if len(evs) < 2:  # an edge pairs two events (312 of the mix's 575 scenes hold one)
        return edges
    clocks, topo = scene.clocks, scene.topo
    starts_of = [e.start for e in evs]
    slack = max(e.start_precision_us for e in evs) + clocks.max_skew()
    # per event, what the time test reads: (start, ts, precision, host, its skew, a watchdog span, file-dated)
    timing = [None] * len(evs)
    rel = scene.relations()
    holds = rel.holds
    numbers: dict[tuple, int] = {}  # relation_class -> the class's number
    # per whether communicators are read (0, 1): event index -> its relation class's number, and -> its cause_class
    class_no: tuple[dict[int, int], dict[int, int]] = ({}, {})
    cause_of: tuple[dict[int, tuple], dict[int, tuple]] = ({}, {})

    def class_of(i: int, comms: bool) -> int:
        """:func:`relation_class` of ``evs[i]`` as a small number (one per class in the call)."""
        got = class_no[comms].get(i)
        if got is None:
            key = relation_class(evs[i], rel, comms, rebooted)
            got = numbers.get(key)
            if got is None:
                got = numbers[key] = len(numbers)
            class_no[comms][i] = got
        return got
    rebooted = frozenset(e.origin.rpartition(":")[0] for e in evs if e.boot)  # captures that hold a reboot
    explains = scene.rules.explains
    for k in scene.live_rules():
        r = explains[k]
        causes = scene.matching(k, 0)
        effects = scene.matching(k, 1)
        effects.sort(key=starts_of.__getitem__)  # the rule's effects by start (stable: ties in scene order)
        for i in chain(causes, effects):
            if timing[i] is None:
                timing[i] = _timing(evs[i], clocks)
        # a rule whose every relation is one host's (ONE_HOST_RELATIONS: both lines on one host) pairs a cause with
        # its host's effects only: per host, its effects by start (a 2,000-host job's configuration lines, each a
        # cause alone, scanned every host's watchdog line: 4 million pairs, most of diagnose's time, a break-it pass)
        one_host = bool(r.relations) and ONE_HOST_RELATIONS.issuperset(r.relations)
        per_host: dict[str | None, list[int]] = {}  # host -> its effects, by start
        for i in (effects if one_host else ()):
            per_host.setdefault(evs[i].host, []).append(i)
        reach: dict[str | None, tuple[list[int], list[int], list[int], list[int]]] = {}  # host -> _reach(its own)
        all_effects = _reach(effects, starts_of, timing)
        comms = not _COMMS.isdisjoint(r.relations)
        # the causes by class, each in scene order (start order: Ev.order); a rule's only cause is a class alone
        by_cause: dict[tuple, list[int]] = {}
        if len(causes) == 1:
            by_cause[()] = causes
        else:
            known = cause_of[comms]
            for i in causes:
                key = known.get(i)
                if key is None:
                    key = known[i] = cause_class(evs[i], class_of(i, comms))
                by_cause.setdefault(key, []).append(i)
        w, lead = int(r.window_s * S), int(r.lead_s * S)
        found: list[tuple[int, int, Edge]] = []
        for members in by_cause.values():
            c = evs[members[0]]
            c_start, _, c_prec, c_host, c_skew, _, _ = timing[members[0]]
            upper_bound = c.undated()
            if one_host and len(members) == 1:
                got = reach.get(c.host)
                if got is None:
                    got = reach[c.host] = _reach(per_host.get(c.host, []), starts_of, timing)
                effects, starts, filed, filed_starts = got
            else:
                effects, starts, filed, filed_starts = all_effects
            bound = w + c_prec + c_skew + slack
            last = starts_of[members[-1]]
            # the effects any member's window may hold: every effect up to the last member's reach for an upper bound
            hi = bisect_right(starts, last + bound)
            lo = 0 if upper_bound else bisect_left(starts, c_start - bound)
            pairs = effects[lo:hi]
            if filed and not upper_bound:  # file-dated effects past the window, up to the reach
                pairs = chain(pairs, filed[bisect_right(filed_starts, last + bound):
                                           bisect_right(filed_starts, last + FILE_REACH_US + bound)])
            if len(members) == 1:
                _pair_one(members[0], pairs, evs, timing, w, r, holds, found, lead)
            else:
                _pair_class(members, pairs, evs, timing, w, r, holds, found, starts_of,
                            lambda i, comms=comms: class_of(i, comms), lead)
        found.sort(key=itemgetter(0, 1))  # the causes in scene order, then their effects
        edges.extend(x for _, _, x in found)
    return edges


def _reach(effects: list[int], starts_of: list[int], timing: list) -> tuple[list[int], list[int], list[int], list[int]]:
    """What :func:`find_edges` searches of a rule's ``effects`` (event indices, by start): them, their starts (µs),
    those dated by their file's mtime (``timing``'s last field: a cause up to ``FILE_REACH_US`` before that bound
    may explain them) and those ones' starts."""
    filed = [i for i in effects if timing[i][6]]
    return effects, [starts_of[i] for i in effects], filed, [starts_of[i] for i in filed]


def _pair_one(ci: int, pairs: Iterable[int], evs: list[Ev], timing: list, w: int, r: Any, holds: Callable,
              found: list, lead: int = 0) -> None:
    """:func:`find_edges` for a cause alone in its class: each effect of ``pairs`` it may cause in time and relates
    to by one of the rule's relations (the first that holds), appended to ``found`` as (cause, effect, edge).
    ``lead``: the rule's ``lead_s`` in µs (``window.may_cause``)."""
    c = evs[ci]
    c_start, _, c_prec, c_host, c_skew, _, _ = timing[ci]
    upper_bound = c.undated()
    for ei in pairs:
        e = evs[ei]
        if e is c:
            continue
        e_start, e_ts, e_prec, e_host, e_skew, span, e_filed = timing[ei]
        near = c_prec + e_prec + (c_skew + e_skew if c_host != e_host else 0)  # tolerance(c, e, 0)
        if upper_bound:
            if c_start < e_start - near - w:
                continue
        elif e_filed:
            if not e_start - FILE_REACH_US - w - near <= c_start <= e_start + near + lead:
                continue
        elif (abs(c_start - e_start) > near + w
              or c_start > (e_ts if span else e_start) + near + lead):
            continue
        for name in r.relations:
            if holds(name, c, e):
                found.append((ci, ei, Edge(c, e, r.id, name)))
                break


def _pair_class(members: list[int], pairs: Iterable[int], evs: list[Ev], timing: list, w: int, r: Any,
                holds: Callable, found: list, starts_of: list[int], class_of: Callable, lead: int = 0) -> None:
    """:func:`find_edges` for a class of alike causes (``members``, in start order): for each effect of ``pairs``,
    of the members that may cause it in time (a binary search: the time test bounds a member's start on both sides,
    an upper-bound member's from below only) other than the effect itself, the last that starts at or before it,
    else the first after it, paired by the relation the class and the effect's class stand in (decided once per
    class of effect: :func:`relation_class`)."""
    c = evs[members[0]]
    _, _, c_prec, c_host, c_skew, _, _ = timing[members[0]]
    upper_bound = c.undated()
    c_starts = [starts_of[i] for i in members]
    first, last = c_starts[0], c_starts[-1]
    related: dict[int, str | None] = {}
    for ei in pairs:
        e_start, e_ts, e_prec, e_host, e_skew, span, e_filed = timing[ei]
        near = c_prec + e_prec + (c_skew + e_skew if c_host != e_host else 0)  # tolerance(c, e, 0)
        if upper_bound:
            lo, hi = e_start - near - w, last
        elif e_filed:
            lo, hi = e_start - FILE_REACH_US - w - near, e_start + near + lead
        else:
            lo, hi = e_start - near - w, min(e_start + near + w, (e_ts if span else e_start) + near + lead)
        if hi < first or lo > last:
            continue
        # the member nearest before the effect (the copy that was going on when it came: the one an initiator of
        # the storm's later copies reaches, a break-it pass), else the first after it; never the effect itself
        k = bisect_right(c_starts, min(hi, e_start)) - 1
        if k >= 0 and members[k] == ei:
            k -= 1
        if k < 0 or c_starts[k] < lo:
            k = max(bisect_left(c_starts, lo), bisect_right(c_starts, e_start))
            if k == len(members) or c_starts[k] > hi:
                continue
        e = evs[ei]
        ek = class_of(ei)
        if ek in related:
            name = related[ek]
        else:
            name = related[ek] = next((x for x in r.relations if holds(x, c, e)), None)
        if name is not None:
            ci = members[k]
            found.append((ci, ei, Edge(evs[ci], e, r.id, name)))


#: the relations that read an event's communicators (``rules.Relations.holds``, ``comms_of``; ``same_domain`` through
#: ``Relations.other_job``): a rule of none of them
#: needs no ``comms_of`` for its classes (``relation_class``)
_COMMS = frozenset({"same_comm", "same_collective", "same_domain"})


def relation_class(e: Ev, rel: Relations, comms: bool, rebooted: frozenset[str]) -> tuple:
    """What ``rules.Relations.holds`` reads of ``e`` on either side of a pair (:func:`find_edges`): two events of one
    class stand in the same relations to any third. Its host, device, GPU key (``gpu_key``), GPU index, rank, link,
    Xid and the Xid it names as cause, SeqNum, its boot and — when its capture (``origin`` without the line) is one of
    ``rebooted``, those that hold a line of an earlier boot — its capture (``model.across_reboot``: the events of other
    captures are never across a reboot), the device it names as its peer (``names_device``), its job's log
    (``same_log``: ``rules.log_of``), its subject and rank scope (``same_gpu`` between lines that name no GPU:
    ``Ev.subject`` reads ``details.global_rank``, ``rules.rank_scope`` the log or communicators of a rank), and when
    ``comms`` its communicators (``comms_of``: a time reads them). An event that names its peer's address
    (``details.peer_addr``: ``Topology.peer_host`` reads its time too) is a class of its own. Without the peer, a
    port's line relaying another device's AER error took the verdict of the port's line relaying the GPU's, and
    the GPU's own relayed error lost its edge, by the order of the two lines."""
    if e.details.get("peer_addr"):
        return (id(e),)
    capture = e.origin.rpartition(":")[0] if rebooted else None
    return (e.host, e.device_type, e.device, e.gpu_index, e.rank, e.link, e.xid, e.cause_xid, e.seq, e.boot,
            capture if capture in rebooted else None, rel.key(e), rel.comms(e) if comms else None,
            e.peer, log_of(e), e.subject(), rel.scope(e))


def cause_class(c: Ev, relations: Hashable) -> tuple:
    """The class of alike causes ``c`` is in (:func:`find_edges`): its :func:`relation_class` (``relations``, or a
    number that stands for it), its shape (``rules.pred_shape``: which rules it satisfies) and what the time test
    reads of a cause besides its start and host (its precision, whether only an upper bound times it)."""
    return (relations, pred_shape(c), c.start_precision_us, c.undated())


def collective_edges(scene: Scene, edges: list[Edge]) -> list[Edge]:
    """``edges`` and, for each watchdog timeout a rule explains, the same cause explaining the timeouts of other
    hosts whose lines name the same collective (``rules.collective_of``) and that no communicator places (no NCCL
    init lines: ``rules.comms_of`` gives none), relation ``same_collective``: those ranks waited on the one the cause
    stopped. Without init lines an Xid 79 and its host's timeouts were one incident with the other hosts' timeouts of
    the same allreduce "no rule ties it to … a fault of their own" (a fresh user's trial).

    Per timeout and cause, the first explained edge of its collective (in ``edges`` order) whose effect is on
    another host within ``rules.collective_window_us`` gives the new edge; the new edges of one timeout in the order
    of those edges. Cost: nothing when no explained timeout names a collective; else the explained edges grouped
    by cause once per call and each host's skew read from the clocks' cache (``window.Clocks``), so a timeout
    costs its collective's causes (a pair it has an edge for already skipped at once), not its collective's edges:
    a domain of 72 hosts whose job died 20 times (11,540 events; ``benchmarks.bigdomain``) tested every timeout
    against every explained edge of its collective, 6.5M tests and 13M ``Clocks.skew`` calls, 30 s."""
    explained: dict[tuple, list[Edge]] = defaultdict(list)
    for x in edges:
        if x.effect.kind == "nccl_timeout" and (k := collective_of(x.effect)) is not None:
            explained[k].append(x)
    if not explained:
        return edges
    have = {(x.cause.event_id, x.effect.event_id) for x in edges}
    out = list(edges)
    skew = scene.clocks.skew  # cached per host (window.Clocks)
    # per collective: cause id -> its explained edges in order, as (index, effect host, effect start, host skew, edge)
    by_cause: dict[tuple, dict[str, list[tuple[int, str, int, int, Edge]]]] = {}
    for k, xs in explained.items():
        causes: dict[str, list[tuple[int, str, int, int, Edge]]] = {}
        for n, x in enumerate(xs):
            causes.setdefault(x.cause.event_id, []).append((n, x.effect.host, x.effect.start, skew(x.effect.host), x))
        by_cause[k] = causes
    for e in scene.events:
        if (causes := by_cause.get(named_collective(e, scene.topo))) is None:
            continue
        eid, host, start, e_skew = e.event_id, e.host, e.start, skew(e.host)
        got: list[tuple[int, Edge]] = []
        for cid, xs in causes.items():
            if (cid, eid) in have:  # explained by that cause already (only the first passing edge of a cause adds one)
                continue
            for n, h, s, sk, x in xs:
                if h != host and abs(s - start) <= collective_window_us(sk, e_skew) and x.cause is not e:
                    got.append((n, x))
                    break
        if len(got) > 1:
            got.sort(key=itemgetter(0))
        for _, x in got:
            out.append(Edge(x.cause, e, x.rule, "same_collective"))
            have.add((x.cause.event_id, eid))
    return out


def _timing(e: Ev, clocks: Clocks) -> tuple[int, int, int, str, int, bool, bool]:
    """What ``window.may_cause`` reads of ``e`` (:func:`find_edges`): its start, line time and the precision of its
    start (µs, ``Ev.start_precision_us``), host, the skew bound of its start (µs, ``window.start_skew``: none for a
    time the cloud states), whether it is a watchdog span (``elapsed_ms`` or an implied start: the cause may fall
    anywhere up to its line time) and whether it is dated by its file's mtime (``window.file_dated``)."""
    return (e.start, e.ts, e.start_precision_us, e.host, start_skew(e, clocks),
            bool(e.elapsed_ms or e.implied_start is not None), file_dated(e))


def rank_key(scene: Scene, evs: list[Ev]) -> tuple:
    """Higher is a more likely first fault: role, then severity, then earlier."""
    return (max(ROLE_RANK.get(scene.role(e), 0) for e in evs), max(e.sev for e in evs),
            -min(e.start for e in evs))


def reach(scene: Scene, sources: list[Ev]) -> dict[tuple, tuple[str, str]]:
    """Subjects reachable from ``sources`` over edges: subject -> (relation, rule) of the first hop."""
    out: dict[tuple, tuple[str, str]] = {}
    by_cause: dict[str, list[Edge]] = defaultdict(list)
    for x in scene.edges:
        by_cause[x.cause.event_id].append(x)
    q = deque(sources)
    seen = {e.event_id for e in sources}
    while q:
        c = q.popleft()
        for x in by_cause.get(c.event_id, []):
            k = scene.subject[x.effect.event_id]
            out.setdefault(k, (x.relation, x.rule))
            if x.effect.event_id not in seen:
                seen.add(x.effect.event_id)
                q.append(x.effect)
    return out


def initiator_event(scene: Scene, evs: list[Ev]) -> Ev:
    """The event that names an initiator (its kind, Xid, action and explanation): by :func:`lead_key`, then role
    (``ROLE_RANK``), then the worst, then the earliest. One choice for all of them: the initiator named an Xid 79
    while its explanation and action were those of the same GPU's Xid 74 (a real-logs pass). Of lines alike so far, an
    Xid before a line without one: the kernel's Xid 79 and its "GPU has fallen off the bus" line of the same second
    were named by whichever came first, so ``diagnose`` said Xid 79 and the service, reading them in another order,
    a plain gpu_off_bus with another action and check (a fresh user's trial)."""
    return min(evs, key=lambda e: (*lead_key(e), -ROLE_RANK.get(scene.role(e), 0), -e.sev, e.xid is None, e.order))


def initiator_fields(scene: Scene, key: tuple, evs: list[Ev]) -> dict[str, Any]:
    """The DESIGN.md initiator object for a subject and its events. ``link``: the first link its events name, none
    when the naming event is an Xid that is no NVLink error; ``links``: every link its events name."""
    host, dtype, dev = key
    main = initiator_event(scene, evs)
    links = sorted({e.link for e in evs if e.link is not None})
    fact = scene.catalog.xids.get(main.xid) if main.xid is not None else None
    return {
        "host": host, "device_type": dtype if dtype != "rank" else None,
        "device": dev if dev and not dev.startswith(("gpu", "rank")) else main.device,
        # an Xid that is no NVLink error (a GPU off the bus) is on no link, whatever link another of its lines named;
        # else the first of its links (not the naming event's own: of equal events that one depends on their ids,
        # which differ between the Kafka path and diagnose)
        "link": links[0] if links and (fact is None or fact.nvlink_related) else None,
        "rank": subject_rank(key, main.rank), "kind": main.kind, "xid": main.xid, "sxid": main.sxid,
        "peer": main.peer or _peer_gpu(scene, main),
        # a NIC, NVSwitch or PCIe port has no GPU index: a line's is the CUDA device of the process that printed
        # it (NCCL's "[0]"), which is no part of the initiator's name
        "gpu_index": main.gpu_index if dtype in (None, "gpu", "link", "rank") else None, "links": links or None,
        "events": [e.event_id for e in sorted(evs, key=lambda e: e.order)],
    }


def _peer_gpu(scene: Scene, e: Ev) -> str | None:
    """The peer GPU a line names by index only (NCCL's "P2P is disabled between NVLINK connected GPUs 1 and 0":
    ``details.peer_gpu_index``), as its bus id where the host's lines map the index (NCCL's init ``nvmlDev``,
    nvidia-smi), else ``gpu<i>``; None for a line that names none. Only one GPU of the pair was named (a
    fresh-user trial)."""
    i = e.details.get("peer_gpu_index")
    if i is None or not str(i).isdigit():
        return None
    return scene.topo.gpu_key(e.host, None, int(i))


#: relations across hosts a party that no rule reached is named by (:func:`downstream_parties`), nearest first
_CROSS_HOST = ("same_collective", "same_comm", "peer_host", "same_log")


def downstream_parties(scene: Scene, init_key: tuple, init_events: list[Ev]) -> tuple[list[Party], list[Ev]]:
    """Other subjects as downstream (with the relation that reached them) and pure context events."""
    reached = reach(scene, init_events)
    parties: list[Party] = []
    context: list[Ev] = []
    holds = None
    mine = {id(e) for e in init_events}
    for key, evs in scene.parties().items():
        if key == init_key:
            # the initiator's own subject: its other events are not dropped. A verdict whose initiator is a host
            # (Fabric Manager's config error, the key (host, None, None)) skipped the host's other lines whole: a
            # kernel Oops or an NVMe removal beside it was in no incident at all (a break-it pass)
            evs = [e for e in evs if id(e) not in mine]
            if not evs:
                continue
        faults = [e for e in evs if scene.is_fault(e)]
        if not faults:
            context.extend(evs)
            continue
        got = reached.get(key)
        if got is None and key[0] == init_key[0]:
            got = ("same_host", None)
        elif got is None:
            # on another host, by no rule: the relation that joined them (a communicator, a collective, a named peer),
            # and the NVLink domain only when nothing nearer holds ("same_domain" with no fleet config, no domain at
            # all, was said of a job's ranks: a fresh user's trial)
            # asked of its faults that are not the initiator's own lines: a job's configuration lines, one per rank
            # (config_mismatch), were each another subject's party and each asked of every other, a quadratic search
            # (2,000 hosts of one mismatched job: diagnose did not end in an hour, a break-it pass); the same answer
            # where a party's faults are not the initiator's, and no relation where all are (they are its evidence)
            others = [e for e in faults if id(e) not in mine]
            holds = holds or Relations(scene.topo).holds
            rel = next((r for r in _CROSS_HOST + ("same_domain",)
                        if any(holds(r, c, e) for e in others for c in init_events)), None) if others else None
            got = (rel, None)
        parties.append(Party(key, evs, *got))
    parties.sort(key=lambda p: (min(e.start for e in p.events), p.key[0], str(p.key[2])))
    return parties, context


def roots_verdict(scene: Scene) -> Verdict | None:
    """Fallback: the subjects whose faults nothing else explains (step 3)."""
    parties = scene.parties()
    unexplained = {k: [e for e in evs if scene.is_fault(e) and not scene.explained(e)] for k, evs in parties.items()}
    roots = {k: evs for k, evs in parties.items() if unexplained[k]}
    logged = {k: evs for k, evs in roots.items() if any(e.signature != SYMPTOM for e in unexplained[k])}
    roots = logged or roots  # an operator's report competes with no logged fault: it follows whatever broke
    if not roots:
        return None
    rank = {k: rank_key(scene, evs) for k, evs in roots.items()}  # each once: a scene may hold thousands of roots
    ranked = sorted(roots.items(), key=lambda kv: rank[kv[0]], reverse=True)
    if logged and all(_reports_elsewhere(scene, e) for k in roots for e in unexplained[k]):
        return _reports_only(scene, [k for k, _ in ranked])
    best_key, best_evs = ranked[0]
    clear = len(ranked) == 1 or rank[best_key][:2] > rank[ranked[1][0]][:2]

    def category_of(evs: list[Ev]) -> str:
        return scene.category_of(max(evs, key=lambda e: (e.signature != SYMPTOM, ROLE_RANK.get(scene.role(e), 0),
                                                         e.sev)))

    category = category_of(best_evs)
    if not clear:
        # no single culprit: the category is the candidates' that rank alike when they agree, else "other". It was
        # the earliest one's, an order two files' times gave two lines that printed none: two ranks' unstamped NCCL
        # errors, a CUDA failure on node07 and a NET/IB completion error on node08, were an ib_port incident when
        # node08's file was written first, though no IB port event was logged (a fresh user's trial)
        tied = {category_of(evs) for k, evs in ranked if rank[k][:2] == rank[best_key][:2]}
        return unknown_verdict(scene, [k for k, _ in ranked], category if len(tied) == 1 else "other")
    init = initiator_fields(scene, best_key, best_evs)
    down, ctx = downstream_parties(scene, best_key, best_evs)
    if category == "gpu_off_bus" and best_key[1] == "pcie_port" and not _gpu_lost_below(scene, best_key[0], down):
        # a port's Surprise Down with no GPU that went with it: the link to some device dropped, which these lines
        # do not say was a GPU (access.redhat.com/solutions/7128107: an IDT switch's downstream port and the
        # endpoint below it, "pci 0000:05:00.0: AER: can't recover" — a "gpu_off_bus" incident named a GPU that no
        # line showed; the NIC and NVMe ports of a GPU host report the same)
        category = "pcie"
    strengths = [RELATION_STRENGTH.get(p.relation or "", 0.5) for p in down if p.rule]
    conf = 0.6 + (0.3 * sum(strengths) / len(strengths) if strengths else 0.15)
    if len(ranked) > 1:
        conf -= 0.15
    # the role of its worst line; of lines as bad, the most initiator-like (a rank's unstamped "CUDA error:
    # uncorrectable ECC error encountered", role either, joined to the Xid 48 of its GPU took the bonus from it:
    # the order of their lines decided, a scenario trial)
    worst = max(e.sev for e in best_evs)
    if max(ROLE_RANK.get(scene.role(e), 0) for e in best_evs if e.sev == worst) >= 3:
        conf += 0.05
    missing = []
    faults = [e for e in best_evs if scene.is_fault(e)]
    if (not down and any(e.fatal is False for e in faults) and not any(e.fatal for e in faults)
            and max(e.sev for e in faults) <= SEVERITY_RANK["warning"]):
        # a line says Nonfatal (Xid 144 - 150, SXids), none says Fatal, none is worse than a warning, and nothing
        # reported a failure after them: the hardware recovered, or what failed logged nothing here
        # (NVIDIA/nccl#2241: a hang beside a Nonfatal Xid 145 and an Xid 137 was an NCCL bug)
        conf -= 0.15
        codes = sorted({fault_code(e) for e in faults})
        missing = [f"whether anything failed: the lines of {', '.join(codes)} say Nonfatal or nothing of it, none "
                   f"says Fatal, and nothing reported a failure after them; if a job hung or failed then, diagnose "
                   f"its logs with that symptom (`firstfault diagnose … --symptom hang@{best_key[0]}`)"]
    if faults and all(e.xid == RECOVERY_XID for e in faults):
        # only the driver's "GPU recovery action changed" (Xid 154): NVIDIA's catalog calls it "informational only
        # regarding another Xid", so what set the action is not in these lines (a GPU left "Node Reboot Required"
        # with no other Xid in its paste: its next step is right, its cause is unknown; a real-logs pass)
        conf -= 0.15
        missing.append(f"the Xid that changed the recovery action of {init.get('device') or 'this GPU'} on "
                       f"{best_key[0]}: Xid {RECOVERY_XID} only summarises another Xid, and none is in these lines "
                       "(the kernel log from before it: dmesg -T | grep 'NVRM: Xid')")
    return Verdict(pattern="roots", category=category, initiator=init, initiator_events=best_evs,
                   downstream=down, context=ctx, confidence=round(min(conf, 0.97), 2), missing=missing)


def _gpu_lost_below(scene: Scene, host: str, down: list[Party]) -> bool:
    """Whether a GPU of ``host`` went with a PCIe port's dropped link: a GPU among the incident's downstream
    parties (``down``: its Xid 79, the nvidia driver's "can't recover"), or a line of the host that says a GPU left
    the bus (kind ``gpu_off_bus``, Xid 79) whatever rule joined it. A port's Surprise Down is ``gpu_off_bus`` only
    then; else ``pcie``: the device below it is unnamed."""
    if any(p.key[1] == "gpu" for p in down):
        return True
    return any(e.host == host and (e.kind == "gpu_off_bus" or e.xid == 79) for e in scene.faults())


def _reports_elsewhere(scene: Scene, e: Ev) -> bool:
    """``e`` is a job's line (source ``nccl``) whose catalog role is ``downstream`` and whose signature names no cause
    of its own (no category, or ``nccl_hang``): a report of a failure that began elsewhere. CUDA's "system not yet
    initialized" (802) is downstream of Fabric Manager, which its category names: alone it is that host's fabric,
    with its own action (ollama/ollama#12136, NVIDIA/gpu-operator#1043: a real-logs pass found it "only downstream
    reports")."""
    if e.source != "nccl" or scene.role(e) != "downstream":
        return False
    if e.signature in CRASH_SIGNALS:  # downstream only when it ends a process on a failure elsewhere (_judge)
        return True
    c = scene.catalog.by_id.get(e.signature)
    return c is None or c.sig.category in (None, "nccl_hang", "other")


def _reports_only(scene: Scene, candidates: list[tuple]) -> Verdict:
    """Every fault nothing explains is a job's downstream report (catalog role ``downstream`` of a job's log, not the
    kernel's Xid 94 or 45: PyTorch taking its process down, torchrun's worker that ended itself, a watchdog line):
    they report a failure that began elsewhere, which
    these logs do not hold. The earliest was "the earliest fault nothing else explains" at 0.75 (torchrun's "failed
    (exitcode: -6)" alone, modelscope/ms-swift#6301; PyTorch's "taking the entire process down" alone: a real-logs
    pass); now no single culprit, and what is missing is the first failure's logs."""
    names = [candidate_name(*k) for k in candidates]
    said = "; ".join(f"{n} ({u})" if (u := _unexplained(scene, k)) else n for n, k in zip(names, candidates))
    v = unknown_verdict(scene, candidates, "other", why=(
        f"Only downstream reports: {said} — each reports a failure that began elsewhere (a collective that failed, a "
        "process taken down), and nothing logged here is that failure."))
    v.missing = ["the first failure these lines report: the logs of the job's other ranks and processes before "
                 "these lines (a traceback, a CUDA or NCCL error), and their hosts' kernel logs (Xid, OOM kill)"]
    v.next_action = ("Find the failure these lines report: the job's other ranks' logs from before them (a traceback, "
                     "a CUDA or NCCL error) and their hosts' kernel logs (Xid, OOM kill); these lines only report it.")
    # reports of one kind say where to look themselves (torchrun's lost rendezvous: the endpoint's host, not "the
    # job's other ranks" — pytorch/pytorch#67742, a real-logs pass)
    parties = scene.parties()
    reports = [e for k in candidates for e in parties.get(k, ()) if scene.is_fault(e) and not scene.explained(e)]
    if len({e.signature for e in reports}) == 1 and (act := catalog_action(scene.catalog, reports[0])):
        v.next_action = sentences(act)
    return v


def subject_label(device_type: str | None, device: str) -> str:
    """A subject's device as a sentence names it: ``nvswitch 0000:06:00.0``; a GPU its lines name by index only
    (subject ``gpu3``) ``gpu index 3``, a rank ``rank 5`` ("gpu gpu3", "rank rank9" before: a fresh user's trial)."""
    if device_type and device.startswith(device_type) and device[len(device_type):].isdigit():
        n = device[len(device_type):]
        return f"gpu index {n}" if device_type == "gpu" else f"{device_type} {n}"
    return f"{device_type or 'host'} {device}"


def candidate_name(host: str, device_type: str | None, device: str | None) -> str:
    """How an incident with no single culprit names a candidate (``initiator.candidates``):
    ``nvswitch 0000:06:00.0 on node002`` (:func:`subject_label`), or the host alone when no device is named."""
    return f"{subject_label(device_type, device)} on {host}" if device else host


#: the candidates an explanation names (``initiator.candidates`` lists them all): one job's log of 2,000 hosts' NCCL
#: errors named 16,000 in one sentence, 4.7 MB of incident (a break-it pass)
NAMED_CANDIDATES = 16


def unknown_verdict(scene: Scene, candidates: list[tuple], category: str, why: str | None = None) -> Verdict:
    """No single culprit: the initiator says so (``device_type: null``) and the incident lists candidates."""
    hosts = sorted({k[0] for k in candidates}) or sorted({e.host for e in scene.events})
    names = [candidate_name(*k) for k in candidates]
    # on one host the parties are reached over it (same_host), as from an initiator there; else over the domain. No
    # party is the initiator: the key names no subject (it was (host, None, None), an operator's report of the host's
    # failure, which then vanished from the incident: a fresh-user trial)
    down, ctx = downstream_parties(scene, (hosts[0] if len(hosts) == 1 else "", "no single culprit", None), [])
    return Verdict(missing=missing_evidence(scene, candidates),
        pattern="unknown", category=category,
        initiator={"host": hosts[0] if len(hosts) == 1 else None, "device_type": None, "device": None,
                   "link": None, "rank": None, "kind": None, "xid": None, "sxid": None, "peer": None,
                   "gpu_index": None, "links": None, "events": [], "candidates": names},
        initiator_events=[], downstream=down, context=ctx, confidence=0.3,
        explanation=why or (f"{len(candidates)} candidates report faults that nothing here explains: "
                            + "; ".join(f"{n} ({u})" if (u := _unexplained(scene, k)) else n
                                        for n, k in zip(names[:NAMED_CANDIDATES], candidates))
                            + (f"; and {len(names) - NAMED_CANDIDATES:,} more" if len(names) > NAMED_CANDIDATES
                               else "")
                            + ". " + _which_first(scene, candidates, names)))


def _which_first(scene: Scene, candidates: list[tuple], names: list[str]) -> str:
    """What the times say of the candidates' order: the first one's unexplained fault before every other's by more
    than the clocks' uncertainty (resolutions, and both hosts' skew across hosts) is said so, with the gap — an Xid
    74 forty seconds before the SXid of the same kernel log was "the evidence does not say which came first" (a
    fresh user's trial); else that it does not say. Faults timed only by an upper bound order nothing."""
    firsts: list[tuple[Ev, str]] = []
    parties = scene.parties()
    for k, name in zip(candidates, names):
        evs = [e for e in parties.get(k, ()) if scene.is_fault(e) and not scene.explained(e) and e.signature != SYMPTOM]
        if not evs or any(e.undated() for e in evs):
            return "The evidence does not say which came first."
        firsts.append((min(evs, key=lambda e: e.start), name))
    firsts.sort(key=lambda x: x[0].start)
    (a, first), rest = firsts[0], firsts[1:]
    if not rest:
        return "The evidence does not say which came first."

    def gap_ok(b: Ev) -> bool:
        tol = a.start_precision_us + b.start_precision_us
        if a.host != b.host:
            tol += start_skew(a, scene.clocks) + start_skew(b, scene.clocks)
        return b.start - a.start > tol

    if not all(gap_ok(b) for b, _ in rest):
        return "The evidence does not say which came first."
    b, second = rest[0]
    gap = (b.start - a.start) / S
    against = _rule_against_time(scene, b, a) if len(rest) == 1 else None
    if against is not None:
        # a rule that has the first follow the second, but for their times: a clock off by more than its bound (a
        # GPU's Xid 149 saying its peer side went down, 6.5 s before the other GPU's own link-down beyond both skew
        # bounds, was "no rule here says that one caused the other": a break-it pass)
        hosts = sorted({a.host, b.host})
        return (f"{first} came first, {gap:g} s before {second}, though rule {against} has it follow {second}: "
                f"more apart than the clocks' skew bounds allow ({', '.join(hosts)}); if a clock was off by more, "
                f"{second} is the first fault.")
    return (f"{first} came first, {gap:g} s before {second}{' and the others' if len(rest) > 1 else ''}; no rule here "
            "says that one caused the other.")


def _rule_against_time(scene: Scene, c: Ev, e: Ev) -> str | None:
    """The first ``explains`` rule by which ``c`` would explain ``e`` (its sides, a relation, the window) but for
    their order in time: ``e`` logged before ``c`` by more than the clocks' uncertainty; None when there is none."""
    rel = scene.relations()
    for r in scene.rules.explains:
        if (any_holds(r.cause, c, scene.catalog) and any_holds(r.effect, e, scene.catalog)
                and within(c, e, int(r.window_s * S), scene.clocks)
                and any(rel.holds(x, c, e) for x in r.relations)):
            return r.id
    return None


def fault_name(e: Ev) -> str:
    """``Xid 79``, ``SXid 12028``, else the signature id (:func:`fault_code`: else the kind)."""
    return f"Xid {e.xid}" if e.xid is not None else f"SXid {e.sxid}" if e.sxid is not None else e.signature


def fault_code(e: Ev) -> str:
    """A fault as its code names it: ``Xid 94``, ``SXid 12028``, else its kind (:func:`fault_name`: else its
    signature)."""
    return f"Xid {e.xid}" if e.xid is not None else f"SXid {e.sxid}" if e.sxid is not None else e.kind


def _unexplained(scene: Scene, key: tuple) -> str:
    """The codes (``Xid 94``, ``SXid 12028``, else the kind) of the faults of party ``key`` that no edge from
    another party explains: a GPU whose NVLink Xids an NVSwitch explains is a candidate for its other faults. Those
    another party explains follow, said so (``Xid 94; its Xid 137 another fault here explains``): a GPU
    named by its Xid 94 alone hid the NVLink Xid 137 that ties it to the switches (a fresh user's trial)."""
    codes: list[str] = []
    explained: list[str] = []
    for e in scene.parties().get(key, ()):
        if scene.is_fault(e):
            code = fault_code(e)
            into = explained if scene.explained(e) else codes
            if code not in into:
                into.append(code)
    explained = [c for c in explained if c not in codes]
    if not codes:
        return ""
    if explained:
        return f"{', '.join(codes)}; its {', '.join(explained)} another fault here explains"
    return ", ".join(codes)


def missing_evidence(scene: Scene, candidates: list[tuple]) -> list[str]:
    """What would settle an incident with several candidates (said instead of guessing)."""
    out = []
    types = {k[1] for k in candidates}
    nvlink = any(e.kind in ("sxid", "nvlink_down", "nvlink_errors") or (
        e.xid is not None and e.xid in scene.catalog.xids and scene.catalog.xids[e.xid].nvlink_related)
        for e in scene.events)
    hosts = sorted({k[0] for k in candidates})
    if "nvswitch" in types or nvlink:
        wired = {h for (h, _k, _l) in scene.topo.remote}
        by_index = {h for (h, k, _l) in scene.topo.remote if gpu_index_key(k) is not None}
        if any(h in by_index for h in hosts):
            # -R was given but names GPUs by index, the Xids by bus id (a fresh-user trial: it asked for the -R
            # output it had)
            out.append("which GPU index is which PCI bus id on " + ", ".join(h for h in hosts if h in by_index)
                       + " (nvidia-smi --query-gpu=index,pci.bus_id --format=csv): nvidia-smi nvlink -R names "
                       "GPUs by index, the kernel's Xids by bus id")
        elif not hosts or not all(h in wired for h in hosts):
            out.append("nvidia-smi nvlink -R from the host (which GPU link goes to which NVSwitch port or peer "
                       "GPU), to tell a switch fault from a GPU link fault")
    if "nvswitch" in types:
        out.append("the Fabric Manager log (journalctl -u nvidia-fabricmanager) around the first SXid")
    if len(hosts) > 1:
        out.append("clock-skew bounds for " + ", ".join(hosts) + " (NTP/PTP state), to order their events")
    out.append("kernel log lines from before these (dmesg -T / journalctl -k): the first fault may precede them")
    return out
