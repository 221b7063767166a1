"""Load ``rules.yaml`` and evaluate its predicates and relations.

Predicates test one event; relations test a (cause, effect) pair against the
topology. Both are small and pure. The Xid facts (role, category, NVLink or
not) come from the signature catalog's xid-catalog.csv.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Hashable, Iterable
from functools import cached_property, lru_cache
from itertools import chain
from operator import attrgetter
from pathlib import Path
from typing import Any, Final, Literal, get_args

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from correlate.model import Ev, across_reboot, capture_of, process_group, spares_job
from correlate.topology import Topology, log_stream
from ingest.catalog import Catalog, default_catalog, read_yaml
from ingest.extract import LINK_DOWN_CAUSES, XID74_READINGS
from schemas.catalog import Role, validation_message
from schemas.events import KINDS, SEVERITY_RANK

RULES_FILE = Path(__file__).with_name("rules.yaml")

Relation = Literal["same_device", "same_gpu", "cause_xid", "nvlink_peer", "same_nvswitch", "same_host",
                   "same_comm", "same_collective", "same_domain", "peer_host", "same_log", "names_device"]

#: how much a relation says about causation (used for confidence)
RELATION_STRENGTH: dict[str, float] = {
    "cause_xid": 0.95, "nvlink_peer": 0.9, "same_nvswitch": 0.9, "same_comm": 0.85, "same_collective": 0.85,
    "same_gpu": 0.9,
    "same_device": 0.9, "same_host": 0.75, "same_domain": 0.7, "peer_host": 0.8, "same_log": 0.5,
    "names_device": 0.9,
}


def _known(values: list[str] | None, known, what: str) -> list[str] | None:
    """``values`` when each is one of ``known`` and there is at least one; else a ValueError naming the first."""
    if values is None:
        return None
    if not values:
        raise ValueError("an empty list matches nothing")
    bad = [v for v in values if v not in known]
    if bad:
        raise ValueError(f"no {what} {bad[0]!r} (one of {', '.join(sorted(known))})")
    return values


class Pred(BaseModel):
    """Conditions on one event, all of which must hold."""

    model_config = ConfigDict(extra="forbid")
    kind: list[str] | None = None
    signature: list[str] | None = None
    xid: list[int] | None = None
    sxid: bool | None = None
    xid_role: list[str] | None = None
    xid_category: list[str] | None = None
    xid_nvlink: bool | None = None
    severity_min: str | None = None
    fatal: bool | None = None
    has_cause_xid: bool | None = None
    #: an Xid 149's decoded link-down cause (``details.link_down_cause``, ``ingest.extract``: peer_side_down,
    #: signal_integrity, cable_or_transceiver …)
    link_down_cause: list[str] | None = None
    #: what an Xid 74's registers say of it (``details.register_reading``, ``ingest.extract.xid74_registers``, NVIDIA's
    #: WORKFLOW_NVLINK_ERR bits: sympathetic, ignorable, own_error)
    register_reading: list[str] | None = None
    #: an Xid 154's new recovery action (``details.new_action``, "0x2" of "changed from 0x0 (None) to 0x2 (Node Reboot
    #: Required)"), compared as numbers: 0x1 GPU Reset Required, 0x2 Node Reboot Required, 0x3 Drain P2P, 0x4 Drain and
    #: Reset (NVIDIA's memory error management guide, NVML_GPU_RECOVERY_ACTION_*)
    recovery_action: list[str] | None = None
    #: the event is NCCL's last error as an exception quotes it after "Last error:" (``details.quote``,
    #: ``ingest.pipeline.LAST_ERROR_QUOTE``), not a line NCCL printed
    quoted: bool | None = None
    #: the event follows a watchdog timeout of its host: it has the timeout's implied start (``Ev.implied_start``,
    #: ``model.follow_watchdogs``): Ray's worker death right after the watchdog took the process down, not before
    follows_timeout: bool | None = None
    #: the line printed its own time (``ts_basis`` ``line`` or ``monotonic+boot``), not a time of its arrival, its
    #: file or a line near it: a BMC event log's "Pre-Init" row (logged before the BMC knew the time, at the host's
    #: power-on) took its dump's time, and a SEL dumped a minute after an Xid 79 explained it by a PSU row of the
    #: day the host was racked (a break-it pass)
    own_time: bool | None = None
    #: the event is an OOM kill of a program not of a training job (``model.spares_job``: apache/doris#3525's
    #: palo_be), which leaves the job's ranks running: ``false`` for a kill of the job's process and every other event
    spares_job: bool | None = None
    #: the line is a job configuration setting (``JOB_CONFIG``: the NCCL network plugin) on which the hosts of one
    #: job's log disagree (``details.config_differs``, :func:`mark_config_mismatch`)
    config_differs: bool | None = None

    # a kind, role or cause no event has made the rule match nothing, silently; an empty list or no condition at all
    # matched nothing or everything (break-it passes: ``kind: [xidd]``, ``kind: []``, ``cause: [{}]``)
    @field_validator("kind")
    @classmethod
    def _kinds(cls, v: list[str] | None) -> list[str] | None:
        return _known(v, KINDS, "event kind")

    @field_validator("xid_role")
    @classmethod
    def _roles(cls, v: list[str] | None) -> list[str] | None:
        return _known(v, get_args(Role), "Xid role")

    @field_validator("link_down_cause")
    @classmethod
    def _causes(cls, v: list[str] | None) -> list[str] | None:
        return _known(v, LINK_DOWN_CAUSES, "link-down cause")

    @field_validator("register_reading")
    @classmethod
    def _readings(cls, v: list[str] | None) -> list[str] | None:
        return _known(v, XID74_READINGS, "register reading")

    @field_validator("recovery_action")
    @classmethod
    def _actions(cls, v: list[str] | None) -> list[str] | None:
        if v is None:
            return None
        if not v:
            raise ValueError("an empty list matches nothing")
        for a in v:
            if _action(a) is None:
                raise ValueError(f"no recovery action {a!r} (a hexadecimal number: 0x2)")
        return v

    @field_validator("signature", "xid", "xid_category")
    @classmethod
    def _some(cls, v: list | None) -> list | None:
        if v is not None and not v:
            raise ValueError("an empty list matches nothing")
        return v

    @model_validator(mode="after")
    def _any(self) -> Pred:
        if all(getattr(self, f) is None for f in type(self).model_fields):
            raise ValueError("a predicate with no condition matches every event")
        return self

    @field_validator("severity_min")
    @classmethod
    def _severity(cls, v: str | None) -> str | None:
        if v is not None and v not in SEVERITY_RANK:
            raise ValueError(f"no severity {v!r} (one of {', '.join(SEVERITY_RANK)})")
        return v

    @cached_property
    def signature_test(self) -> tuple[frozenset[str], tuple[str, ...]]:
        """``signature`` as (the names an event's signature may equal, the prefixes of those ending in ``*``): found
        once, not a pass over the list per event (:func:`holds` tests each new event shape against ~90 rule sides).
        Of the predicate as validated: not to be changed in place."""
        names = self.signature or ()
        return frozenset(names), tuple(s[:-1] for s in names if s.endswith("*"))


class LinkRule(BaseModel):
    """Two faults in ``relation`` within ``window_s`` (seconds) belong to one candidate incident (clustering,
    ``correlate.cluster``); ``kinds``: only events of these kinds. A link with ``cause`` and ``effect`` is derived
    from an ``explains`` rule (:func:`reach`; ``from_rule`` names it): it joins each fault of the effect's side to
    the nearest fault of the cause's side in the relation within the window, and nothing else."""

    model_config = ConfigDict(extra="forbid")
    relation: Relation
    window_s: float = Field(ge=0, allow_inf_nan=False)
    kinds: list[str] | None = None
    note: str | None = None
    cause: list[Pred] | None = None
    effect: list[Pred] | None = None
    from_rule: str | None = None
    lead_s: float = Field(default=0, ge=0, allow_inf_nan=False)  # the rule's (``ExplainRule.lead_s``)

    @field_validator("kinds")
    @classmethod
    def _kinds(cls, v: list[str] | None) -> list[str] | None:
        return _known(v, KINDS, "event kind")


class ExplainRule(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: str
    status: Literal["experimental", "stable"] = "stable"
    cause: list[Pred] = Field(min_length=1)
    effect: list[Pred] = Field(min_length=1)
    relations: list[Relation] = Field(min_length=1)
    window_s: float = Field(ge=0, allow_inf_nan=False)  # NaN crashed every correlate(), -120 matched nothing
    #: how long (seconds) an effect may be logged before its cause besides the clocks' uncertainty
    #: (``window.may_cause``): a report another interrupt handler prints first
    lead_s: float = Field(default=0, ge=0, allow_inf_nan=False)
    source: str


class PatternRef(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: str
    category: str
    source: str


#: relations clustering decides by one key per event (``cluster._buckets``); of them, those within one host
KEYED_RELATIONS = frozenset({"same_device", "same_gpu", "same_host", "same_comm", "same_collective", "same_domain",
                             "same_log"})
ONE_HOST_RELATIONS = frozenset({"same_device", "same_gpu", "same_host"})


class Rules(BaseModel):
    """``rules.yaml``: ``links`` (clustering), ``explains`` (attribution), ``patterns`` (whole incidents). After
    validation ``links`` also holds the links derived from the ``explains`` rules (``reach``)."""

    model_config = ConfigDict(extra="forbid")
    links: list[LinkRule]
    explains: list[ExplainRule]
    patterns: list[PatternRef] = Field(default_factory=list)

    @cached_property
    def host_window_us(self) -> int:
        """:func:`host_window_us`, found once: like the derived links, it is of the rules as validated (other links
        are other rules, made through validation: ``Rules.model_validate``, not ``model_copy``)."""
        return int(max((l.window_s for l in self.links
                        if l.relation == "same_host" and not l.kinds and l.from_rule is None), default=0) * 1_000_000)

    @model_validator(mode="after")
    def _derive_links(self) -> Rules:
        ids = [r.id for r in self.explains] + [p.id for p in self.patterns]
        twice = sorted({i for i in ids if ids.count(i) > 1})
        if twice:  # the evidence names rules by id
            raise ValueError(f"rule id {twice[0]!r} is given twice")
        self.links = [l for l in self.links if l.from_rule is None] + reach(self.links, self.explains)
        return self


def reach(links: list[LinkRule], explains: list[ExplainRule]) -> list[LinkRule]:
    """The links an ``explains`` rule needs beyond ``links``: an explains rule applies only inside one candidate
    incident, so a rule whose window is longer than every link of its relation would never apply past that link
    (a reset-required line eight minutes after its Xid, ``gpu_reset_required.explains_cuda_unavailable``'s 600 s
    beyond the ``same_host`` link's 120 s; a Fabric Manager error at boot and NCCL's NVLS failure hours later).
    For each keyed relation of such a rule (one-host relations are covered by its ``same_host`` when it names
    it), one link of that relation and the rule's window, cause and effect. Relations tested pair by pair
    (``cause_xid``, ``nvlink_peer``, ``same_nvswitch``) get none: they hold within one host, which the rule's
    ``same_host`` (if any) covers. A link covers a relation when it has no ``kinds``, is not derived, and is of
    that relation (or ``same_host``, for a one-host relation) with a window at least as long."""
    out: list[LinkRule] = []
    for r in explains:
        rels = [x for x in r.relations if x in KEYED_RELATIONS]
        if "same_host" in rels:
            rels = [x for x in rels if x not in ONE_HOST_RELATIONS or x == "same_host"]
        for rel in rels:
            covered = any(l.kinds is None and l.cause is None and l.window_s >= r.window_s
                          and (l.relation == rel or (rel in ONE_HOST_RELATIONS and l.relation == "same_host"))
                          for l in links)
            if not covered:
                out.append(LinkRule(relation=rel, window_s=r.window_s, cause=r.cause, effect=r.effect, from_rule=r.id,
                                    lead_s=r.lead_s,
                                    note=f"explains rule {r.id}: {r.window_s:g} s, longer than the links of {rel}"))
    return out


def host_window_us(rules: Rules) -> int:
    """The longest window (µs) of the ``same_host`` links without ``kinds`` (``rules.yaml``: 120 s): how far apart
    two faults of one host may lie and be joined by clustering as such, not through a chain of repeats
    (``Rules.host_window_us``, found once per rules object: ``correlator.apart`` asks once per candidate incident)."""
    return rules.host_window_us


class RulesError(ValueError):
    """``rules.yaml`` is invalid; the message names the file and what is wrong."""


@lru_cache(maxsize=1)
def default_rules() -> Rules:
    """The shipped rules, validated once per process. Raises :class:`RulesError` (YAML or validation errors, with
    the file's path)."""
    try:
        rules = Rules.model_validate(read_yaml(RULES_FILE.read_text(encoding="utf-8")))
    except ValidationError as e:
        raise RulesError(f"{RULES_FILE}: {validation_message(e)}") from e
    except (yaml.YAMLError, UnicodeDecodeError, OSError) as e:  # bytes that are no UTF-8 were a traceback
        raise RulesError(f"{RULES_FILE}: {e}") from e
    from correlate.patterns import PATTERNS  # the patterns import this module

    unknown = unknown_signatures(rules, default_catalog()) + [
        f"patterns: {p.id!r} is no pattern correlate/patterns.py implements" for p in rules.patterns
        if p.id not in PATTERNS]  # it was a KeyError at every correlate() (a break-it pass)
    if unknown:
        raise RulesError(f"{RULES_FILE}: {unknown[0]}")
    return rules


def unknown_signatures(rules: Rules, catalog: Catalog) -> list[str]:
    """Where ``rules`` name a signature the catalog does not have (a ``prefix.*`` pattern: that none begins with):
    such a predicate matches nothing, silently (a break-it pass: ``signature: [no.such.sig]``)."""
    known = set(catalog.by_id) | {"operator.symptom"}
    out = []
    named = [(f"explains rule {r.id}", r.cause, r.effect) for r in rules.explains] + [
        (f"links {i} ({l.relation})", l.cause or [], l.effect or []) for i, l in enumerate(rules.links)
        if l.from_rule is None]
    for where, cause, effect in named:
        for side, preds in (("cause", cause), ("effect", effect)):
            for p in preds:
                for sig in p.signature or ():
                    if not (sig in known or (sig.endswith("*") and any(k.startswith(sig[:-1]) for k in known))):
                        out.append(f"{where}: {side} names signature {sig!r}, which the catalog does not have")
    return out


def _action(v: Any) -> int | None:
    """A recovery action as a number ("0x2" -> 2), or None when ``v`` is no hexadecimal number."""
    try:
        return int(v, 16) if isinstance(v, str) else None
    except ValueError:
        return None


#: the time bases of a line that printed its own time (``schemas.events.TS_BASES``; ``Pred.own_time``)
OWN_TIME_BASES: Final = frozenset({"line", "monotonic+boot"})


def pred_shape(e: Ev) -> tuple:
    """What :func:`holds` reads of an event (its Xid's catalog facts follow from the Xid): events of one shape satisfy
    the same predicates, so rule sides are decided once per shape (``attribute.Scene.matching``,
    ``attribute.may_relate``). A predicate that reads more of an event adds it here. Kept on the event
    (``Ev.shape``): clustering and every scene the event is in ask again."""
    shape = e.shape
    if shape is None:
        shape = e.shape = (e.kind, e.signature, e.xid, e.sxid is not None, e.sev, e.fatal, e.cause_xid is not None,
                           e.details.get("link_down_cause"), e.details.get("register_reading"), "quote" in e.details,
                           e.implied_start is not None, e.details.get("new_action"), e.ts_basis in OWN_TIME_BASES,
                           spares_job(e), "config_differs" in e.details)
    return shape


def holds(p: Pred, e: Ev, catalog: Catalog | None = None) -> bool:
    """True when every condition of ``p`` holds for ``e``."""
    cat = catalog or default_catalog()
    if p.kind is not None and e.kind not in p.kind:
        return False
    if p.signature is not None:
        names, prefixes = p.signature_test  # a name as written, or a prefix of one ending in "*"
        if e.signature not in names and not e.signature.startswith(prefixes):
            return False
    if p.xid is not None and e.xid not in p.xid:
        return False
    if p.sxid is not None and (e.sxid is not None) != p.sxid:
        return False
    if p.severity_min is not None and e.sev < SEVERITY_RANK[p.severity_min]:
        return False
    if p.fatal is not None and e.fatal is not p.fatal:
        return False
    if p.has_cause_xid is not None and (e.cause_xid is not None) != p.has_cause_xid:
        return False
    if p.link_down_cause is not None and e.details.get("link_down_cause") not in p.link_down_cause:
        return False
    if p.register_reading is not None and e.details.get("register_reading") not in p.register_reading:
        return False
    if p.recovery_action is not None and \
            _action(e.details.get("new_action")) not in {_action(a) for a in p.recovery_action}:
        return False
    if p.quoted is not None and ("quote" in e.details) != p.quoted:
        return False
    if p.follows_timeout is not None and (e.implied_start is not None) != p.follows_timeout:
        return False
    if p.own_time is not None and (e.ts_basis in OWN_TIME_BASES) != p.own_time:
        return False
    if p.spares_job is not None and spares_job(e) != p.spares_job:
        return False
    if p.config_differs is not None and ("config_differs" in e.details) != p.config_differs:
        return False
    if p.xid_role is not None or p.xid_category is not None or p.xid_nvlink is not None:
        fact = cat.xids.get(e.xid) if e.xid is not None else None
        if p.xid_role is not None and (fact is None or fact.role not in p.xid_role):
            # non-Xid hardware events (off bus, ECC) count as initiators
            if not (fact is None and e.xid is None and "initiator" in p.xid_role):
                return False
        if p.xid_category is not None and (fact is None or fact.category not in p.xid_category):
            return False
        if p.xid_nvlink is not None and (fact is None or fact.nvlink_related != p.xid_nvlink):
            return False
    return True


def any_holds(preds: list[Pred], e: Ev, catalog: Catalog | None = None) -> bool:
    return any(holds(p, e, catalog) for p in preds)


class SideIndex:
    """Many predicate lists tested on one event at once: ``bits(e)`` has bit ``k`` set when
    ``any_holds(sides[k], e, catalog)``. Each predicate is filed under the first condition it must meet that one
    lookup decides — its ``kind``, else its signatures when none ends in ``*``, else its Xids — and only the
    predicates filed under the event's kind, signature and Xid (and those filed under none) are tested with
    :func:`holds`: a fault's shape met ~90 rule sides, two or three of which could hold (``attribute.ShapeMemo``,
    ``attribute.may_relate``, ``cluster.components``' derived links). Built for one rules and catalog, not to be
    changed in place."""

    __slots__ = ("catalog", "by_kind", "by_signature", "by_xid", "rest")

    def __init__(self, sides: list[list[Pred]], catalog: Catalog | None = None) -> None:
        self.catalog = catalog or default_catalog()
        self.by_kind: dict[str, list[tuple[int, Pred]]] = {}
        self.by_signature: dict[str, list[tuple[int, Pred]]] = {}
        self.by_xid: dict[int, list[tuple[int, Pred]]] = {}
        self.rest: list[tuple[int, Pred]] = []
        for k, preds in enumerate(sides):
            for p in preds:
                if p.kind is not None:
                    for v in set(p.kind):
                        self.by_kind.setdefault(v, []).append((k, p))
                elif p.signature is not None and not any(s.endswith("*") for s in p.signature):
                    for v in set(p.signature):
                        self.by_signature.setdefault(v, []).append((k, p))
                elif p.xid is not None:
                    for v in set(p.xid):
                        self.by_xid.setdefault(v, []).append((k, p))
                else:
                    self.rest.append((k, p))

    def bits(self, e: Ev) -> int:
        """Bit ``k`` set when a predicate of ``sides[k]`` holds for ``e`` (:func:`any_holds`)."""
        out = 0
        cat = self.catalog
        for filed in (self.by_kind.get(e.kind), self.by_signature.get(e.signature),
                      self.by_xid.get(e.xid) if e.xid is not None else None, self.rest):
            if filed:
                for k, p in filed:
                    if not out >> k & 1 and holds(p, e, cat):
                        out |= 1 << k
        return out


def log_of(e: Ev) -> str | None:
    """The log file a job-side line (NCCL, PyTorch, MPI: source ``nccl``) was read from (its ``origin`` without the
    line number), else None: the output of a job's launcher (mpirun, srun, a pdsh of the ranks) holds every host's
    ranks, one job's. Relation ``same_log`` joins two hosts' errors of such a file: the two ends of one failed
    connection that NCCL names by no peer address and no init line places ("NET/IB : Got completion with error 12"
    on gpu4 and on gpu5 were two incidents, each "the earliest fault" of its own host: NVIDIA/nccl-tests#24, #36; a
    real-logs pass, the third). Only lines that printed no stamp of their own (``ts_basis`` ``file``, or
    ``inherited`` from a stamped line near them: a launcher's capture of the ranks' output, as NCCL before 2.26 prints
    it): a syslog server's file holds every host's lines, each stamped, of no one job (three hosts' journald-wrapped
    NCCL errors were one incident, a break-it pass), and stamped lines a minute apart chained three hours of a file
    into one. Not a Kafka record's (one host's, as shipped). A line timed by the time its own message prints, with no
    stamp before it (``details.ts_in_text``: slurmstepd's "*** STEP … ON n17 CANCELLED AT 2023-03-06T03:17:51 DUE TO
    NODE FAILURE ***", torchrun's failure record) is such a line too: srun's "Node failure on n37" above it in the
    job's output was another incident (huggingface/m4-logs tr_141, a real-logs pass)."""
    if e.source != "nccl" or not e.origin.startswith("file:"):
        return None
    if e.ts_basis not in ("file", "inherited") and not (e.ts_basis == "line" and e.details.get("ts_in_text")):
        return None
    return capture_of(e)


#: NCCL's configuration lines a job's ranks must agree on, as signature -> (what they set, the value they say: a
#: constant, or ``{field}`` for the line's own ``details`` field). The network plugin (src/plugin/net.cc), NCCL's own
#: transports or an external library's: two plugins speak two wire protocols, and hosts of one job that load different
#: ones hang at their first collective between them, no error printed (NVIDIA/nccl#1634: HPC-X's RDMA/SHARP plugin on
#: HGX-H100-04, the internal one on HGX-H100-11; "you have libnccl-net.so on part of your hpc"). Two external plugins
#: are not compared: one release prints the library's path, another its name, for the same plugin. The NCCL release
#: (init.cc's "NCCL version 2.19.3+cuda12.3", the release without its CUDA build): NVIDIA/nccl#1267's bootstrap failed
#: ("family 0 is neither AF_INET(2) nor AF_INET6(10)") with hosts on 2.20.5 and 2.19.3, and ran once all were on one
#: release ("your hunch that the issue was due to mismatched versions was correct"); NVIDIA/nccl#354's maintainer
#: asked of a hang without a warning "could it be possible that you have different NCCL versions on different nodes?"
#: A plugin NCCL found but could not load (``nccl.net_plugin.load_failed``: a GLIBC version its library needs) leaves
#: NCCL on its own network too: every release's dlopen failure returns to the caller, which goes on with NCCL's IB and
#: socket transports (src/net.cc, src/init.cc; src/plugin/plugin_open.cc). Releases 2.12 - 2.18 and 2.21 on say so in
#: a line after it ("No plugin found, using internal implementation", "Using internal network plugin."); the releases
#: whose dlopen failure took the errno branch (NCCL up to 2.11, and 2.19 - 2.20: "NET/Plugin : Plugin load returned
#: %d : %s.") print nothing after it, so a host whose plugin needed a newer glibc was compared with no one and its
#: job's mismatch missed (a correlation pass). Not when NCCL aborts instead: ``NETWORK_NOT_FOUND``.
JOB_CONFIG: Final = {"nccl.net_plugin.internal": ("net_plugin", "internal"),
                     "nccl.net_plugin.load_failed": ("net_plugin", "internal"),
                     "nccl.net_plugin.external": ("net_plugin", "external"),
                     "nccl.version": ("nccl_version", "{nccl_version}")}


#: NCCL_NET names a network no loaded plugin offers ("Error: network gIB not found.", src/net.cc): the rank fails with
#: invalid usage and runs on no network, so its host's plugin lines saying NCCL's own network (a load failure, then
#: "Using internal network plugin.") are not what it ran (AI-Hypercomputer/gpu-recipes#5: gIB's plugin needed
#: GLIBC_2.32, and every rank aborted)
NETWORK_NOT_FOUND: Final = "nccl.net.not_found"


def config_value(e: Ev) -> str | None:
    """What a configuration line (``JOB_CONFIG``) says its setting is: the constant, or the line's ``details`` field
    the entry names in braces; None for a line of no such signature or without that field."""
    what = JOB_CONFIG.get(e.signature)
    if what is None:
        return None
    value = what[1]
    if value.startswith("{") and value.endswith("}"):
        got = e.details.get(value[1:-1])
        return None if got is None else str(got)
    return value


def mark_config_mismatch(events: list[Ev]) -> None:
    """Mark the configuration lines (``JOB_CONFIG``) of one job's log (:func:`log_of`) on which its hosts disagree:
    ``details.config_differs`` is the setting ("net_plugin", "nccl_version") on every such line of the job that
    counts, when two of its hosts printed values none of which both printed (a host whose own processes printed
    two, one of them another host's, is two programs', a tool on the system's NCCL beside a rank on a wheel's, as
    likely as a disagreement: a break-it pass). A process's last line of a setting is the one that counts: NCCL
    that opened an external plugin ("Plugin Path : …") and then fell back to its internal one ("Using internal
    network plugin") runs the internal one; the earlier line stays context. Such a line
    is a fault and an initiator (``attribute``); a line alone, or hosts that agree, stay context. Only lines of one
    job's output (a launcher's capture: mpirun, srun, pdsh): the hosts' lines are tied by being that output, which no
    field of theirs says, and split into the jobs the capture holds by :func:`_job_runs` (a rank restarted) and
    :func:`_capture_jobs` (communicators no host shares), then :func:`_capture_processes` (no process shares). Sets
    ``details`` in place, before any predicate is asked of the events (``pred_shape`` reads it). A host of the log
    that printed ``NETWORK_NOT_FOUND`` aborted rather than fell back: its lines saying NCCL's internal plugin do not
    count."""
    per_log: dict[tuple[str, str], list[Ev]] = {}
    members: dict[str, list[Ev]] = {}
    configs: dict[str, list[Ev]] = {}
    # a host's abort counts in its run of the job alone (``_job_runs``): a later run appended to the log that fell
    # back was left unread (a break-it pass)
    aborts: dict[str, list[Ev]] = {}
    for e in events:
        if e.signature == NETWORK_NOT_FOUND and e.host and (log := log_of(e)) is not None:
            aborts.setdefault(log, []).append(e)
    for e in events:
        what = JOB_CONFIG.get(e.signature)
        if what is None and (e.kind != "nccl_init" or e.rank is None):
            continue
        if (log := log_of(e)) is None:
            continue
        if what is not None and e.host and config_value(e) is not None:
            per_log.setdefault((log, what[0]), []).append(e)
            configs.setdefault(log, []).append(e)
        elif what is None:
            members.setdefault(log, []).append(e)
    # each log's jobs, by host and by process, read once: a log with a plugin and a release setting read them twice
    placed = {log: _capture_places(members.get(log, []), cs) for log, cs in configs.items()}
    for (log, setting), lines in per_log.items():
        jobs, procs = placed[log]
        for run in _job_runs(lines + aborts.get(log, []) if setting == "net_plugin" else lines):
            if setting == "net_plugin":
                aborted = {e.host for e in run if e.signature == NETWORK_NOT_FOUND}
                run = [e for e in run if e.signature != NETWORK_NOT_FOUND
                       and not (e.host in aborted and config_value(e) == "internal")]
            for job in (j for hosts_job in _split_jobs(run, jobs) for j in _split_processes(hosts_job, procs)):
                last: dict[tuple[str, int | None], Ev] = {}  # a process's last word on the setting
                for e in job:
                    last[(e.host, e.pid)] = e
                per_host: dict[str, set[str | None]] = {}
                for e in last.values():
                    per_host.setdefault(e.host, set()).add(config_value(e))
                values = list(per_host.values())
                if any(values[i].isdisjoint(v) for i in range(len(values)) for v in values[i + 1:]):
                    for e in last.values():
                        e.details["config_differs"] = setting


def _place(e: Ev) -> tuple:
    """Where a line of a log file stands in it: its line number, else ``Ev.order``."""
    n = e.origin.rsplit(":", 1)[-1]
    return (0, int(n), ()) if n.isdigit() else (1, 0, e.order)


def _job_runs(lines: list[Ev]) -> list[list[Ev]]:
    """``lines`` (one log's, ``log_of``) cut into the job's runs, in the log's order (:func:`_place`): a run ends where
    a GPU of a host (``gpu_index``) that printed in it prints again under another pid, a new process of that rank (a
    requeued job appending to its output file, a restart). Hosts of two runs never ran together: a host on the
    internal plugin in the first run and one on an external plugin in the second were "one job's" mismatch (a break-it
    pass). A line with no GPU index cuts no run."""
    runs: list[list[Ev]] = [[]]
    pids: dict[tuple[str, int], int | None] = {}
    for e in sorted(lines, key=_place):
        key = (e.host, e.gpu_index)
        if e.gpu_index is not None and key in pids and pids[key] != e.pid:
            runs.append([])
            pids = {}
        if e.gpu_index is not None:
            pids[key] = e.pid
        runs[-1].append(e)
    return runs


def _capture_places(members: list[Ev], configs: list[Ev]) -> tuple[dict[str, str],
                                                                   dict[tuple[str, int], tuple[str, int]]]:
    """:func:`_capture_jobs` and :func:`_capture_processes` of one log's membership lines ``members`` and setting
    lines ``configs``, its communicators without a commId (:func:`_sized_comms`) read once for both."""
    comms = _sized_comms(members, configs)
    return _capture_jobs(members, configs, comms), _capture_processes(members, configs, comms)


def _capture_jobs(members: list[Ev], configs: Iterable[Ev] = (), comms: list[list[Ev]] | None = None
                  ) -> dict[str, str]:
    """Host -> a representative host of its job, from one log's membership lines (kind ``nccl_init`` with a rank): the
    hosts with ranks of one communicator (NCCL's ``commId``, "comm 0x557fe785f7a0 rank 36 nranks 64 … commId
    0x5ae77eb5ea4ec1ee - Init COMPLETE", NVIDIA/nccl#1814) are one job's, and so are the hosts of one nccl-tests rank
    table ("#  Rank  0 Group  0 Pid 587622 on node01 device  0 …", one table per test run, from its Rank 0 on, in the
    log's order), joined through hosts they share. Hosts no such line places are absent. Two jobs a launcher ran one
    after the other into one file (two mpirun calls of a script, an srun step per job) share no communicator, so no
    host; the time between them is no cut, as the lines of such a capture print no time (``log_of``), and neither is
    the "NCCL version" banner, printed by rank 0 of every communicator, many per job. NCCL before 2.19 prints no
    commId: its cross-host communicators are read by size and rank (:func:`_sized_comms`); communicators each on one
    host are one job's when they ran at once (:func:`_join_concurrent`, ``configs`` the log's setting lines).
    ``comms``: :func:`_sized_comms` of ``members`` when the caller has it."""
    return _capture_groups(members, attrgetter("host"), configs, comms)


def _split_jobs(run: list[Ev], jobs: dict[str, str]) -> list[list[Ev]]:
    """``run``'s lines by job (:func:`_capture_jobs`) when its hosts' communicators place them in two jobs or more, in
    the run's order; a host no communicator places is then of no known job and left out (it is compared with no one).
    Else the run as one job: the log is the one tie its hosts have (NVIDIA/nccl#1634's two plugin lines, alone)."""
    placed = {jobs[e.host] for e in run if e.host in jobs}
    if len(placed) < 2:
        return [run]
    return [[e for e in run if jobs.get(e.host) == job] for job in sorted(placed)]


def _capture_processes(members: list[Ev], configs: Iterable[Ev] = (), comms: list[list[Ev]] | None = None
                       ) -> dict[tuple[str, int], tuple[str, int]]:
    """Process ``(host, pid)`` -> a representative process of its job, from one log's membership lines (as
    :func:`_capture_jobs`): the processes of one communicator (the host and pid of NCCL's prefix, "node01:984:1257"
    is pid 984 on node01), and of one nccl-tests rank table (its "Pid 587622 on node01"), joined through processes
    they share. Hosts meet where processes do not: a single-node nccl-tests run on one host of a job, before the job,
    is its host's and the job's, and joined by host the two were one job (a break-it pass). Lines with no pid place
    nothing. ``comms``: :func:`_sized_comms` of ``members`` when the caller has it."""
    return _capture_groups(members, lambda e: (e.host, e.pid) if e.pid is not None and e.host else None, configs,
                           comms)


def _sized_comms(members: list[Ev], configs: Iterable[Ev] = ()) -> list[list[Ev]]:
    """The cross-host communicators of one log's init lines that print no ``commId`` (NCCL before 2.19: "comm
    0x7fdf08000d00 rank 15 nranks 16 cudaDev 7 busId e7000 - Init COMPLETE", NVIDIA/nccl#629), in the log's order:
    lines of one ``nranks``, each rank of a communicator printing its line once, so one ends where a rank it holds
    prints again or its ``nranks`` ranks are all there (two jobs a capture holds one after the other). Not the lines
    of a communicator one host holds whole (:func:`_own_comms`): a host's own communicator (a node's eight GPUs) ties
    it to no other host, and interleaved with another host's of its size it would cut and join them at random. Other
    hosts' lines of that size still count: a single-node run of two GPUs on one host had two later two-host jobs of
    that size tied into one, their plugins a mismatch (a break-it pass). Each list's lines are of two hosts or more;
    no other line is in one. ``configs``: the log's setting lines, whose plugin lines say when a process started
    (:func:`_own_comms`). Near-linear: each open communicator keeps the set of its ranks (a 2,000-host capture
    of 8 ranks a host, each line scanning its whole open communicator, had not finished ``diagnose`` in 13 min)."""
    lines = [e for e in sorted(members, key=_place)
             if e.signature == "nccl.init" and not e.comm and e.rank is not None and e.nranks]
    own = _own_comms(lines, configs)
    comms: list[list[Ev]] = []
    current: dict[int, tuple[list[Ev], set[int]]] = {}  # nranks -> its open communicator's lines and their ranks
    for e in lines:
        if id(e) in own:
            continue
        now = current.get(e.nranks)
        if now is None or len(now[0]) >= e.nranks or e.rank in now[1]:
            now = current[e.nranks] = ([], set())
            comms.append(now[0])
        now[0].append(e)
        now[1].add(e.rank)
    return [c for c in comms if len({e.host for e in c}) > 1]


#: the setting lines NCCL prints once per process, as it starts: ``ncclInit`` (init.cc, once a process, from
#: ``ncclGetUniqueId`` or the process's first ``ncclCommInitRank``) loads the network plugin (``ncclNetPluginInit``)
#: before any communicator of the process is set up, so before any of its init lines
STARTS: Final = frozenset(s for s, (what, _) in JOB_CONFIG.items() if what == "net_plugin")


def _own_comms(lines: list[Ev], configs: Iterable[Ev] = ()) -> set[int]:
    """The ``id`` of each of ``lines`` (init lines without a commId, in the log's order: :func:`_sized_comms`) that
    is of a communicator one host holds whole: a stretch of one host's lines of one ``nranks`` that holds all its
    ranks, each once, of processes that could share a communicator. A process whose first plugin line (``STARTS``,
    of ``configs``) comes after the first line of the stretch, and before the process's own first init line, had not
    started when that rank's communicator was complete (a communicator's "Init COMPLETE" prints once all its ranks
    joined, each after its process's plugin line): it begins another stretch. Counted over the whole log, a host that
    was rank 1 of one two-host job of size 2 and rank 0 of the next (another GPU, so no new run: :func:`_job_runs`)
    "held" size 2 whole; its lines were left out, the first job's rank 0 and the second's rank 1 became one
    communicator, the two jobs one, and their plugins a mismatch (a break-it pass). A process with no plugin line
    before its init lines (NCCL_DEBUG_SUBSYS without INIT, a line lost) starts no stretch."""
    first: dict[tuple[str, int], tuple] = {}
    for e in lines:
        if e.pid is not None:
            first.setdefault((e.host, e.pid), _place(e))
    started: dict[tuple[str, int], tuple] = {}
    for e in configs:
        if e.signature in STARTS and e.pid is not None and (key := (e.host, e.pid)) in first:
            at = _place(e)
            if at < first[key] and (key not in started or at < started[key]):
                started[key] = at
    own: set[int] = set()
    stretch: dict[tuple[int, str], tuple[tuple, list[Ev], set[int]]] = {}  # its first line's place, lines, ranks
    for e in lines:
        now = stretch.get(key := (e.nranks, e.host))
        if now is None or e.rank in now[2] or (e.pid is not None and started.get((e.host, e.pid), ()) > now[0]):
            now = stretch[key] = (_place(e), [], set())
        now[1].append(e)
        now[2].add(e.rank)
        if len(now[2]) >= e.nranks:
            own.update(map(id, now[1]))
            del stretch[key]
    return own


def _capture_groups(members: list[Ev], member: Callable[[Ev], Hashable | None],
                    configs: Iterable[Ev] = (), comms: list[list[Ev]] | None = None) -> dict[Any, Any]:
    """``member(e)`` (a host, a process) -> a representative of its job, of one log's membership lines in the log's
    order (:func:`_place`): the members of one communicator (``Ev.comm``, else :func:`_sized_comms`) are one job's,
    and so are those of one nccl-tests rank table (one per test run, from its Rank 0 on), joined through members they
    share (a union-find), then jobs each on one host that ran at once (:func:`_join_concurrent`, with the log's setting
    lines ``configs``), except a job an nccl-tests rank table shows whole on one host: a table lists every rank of its
    run, and a pdsh of a single-node nccl-tests on every node at once (a health check, nodes of two types each on its
    own plugin) was one job and its plugins a mismatch (a break-it pass). A line whose ``member`` is None places
    nothing. ``comms``: :func:`_sized_comms` of ``members``, read here when None."""
    configs = list(configs)
    parent: dict[Any, Any] = {}

    def root(m: Any) -> Any:
        while parent.setdefault(m, m) != m:
            parent[m] = parent[parent[m]]
            m = parent[m]
        return m

    def join(ms: Iterable[Any]) -> None:
        first = None
        for m in ms:
            if first is None:
                first = root(m)
            elif root(m) != first:
                parent[root(m)] = first

    by_comm: dict[str, set[Any]] = defaultdict(set)  # commId -> the members of its lines
    rows = RankTables()  # each open nccl-tests rank table's last row: its rank, its (host, pid)
    tables: list[tuple[set[Any], set[str]]] = []  # per rank table (as rows): its members, the hosts of its ranks
    for e in sorted(members, key=_place):
        if (m := member(e)) is None:
            continue
        if e.signature == "nccltests.rank":
            if (i := rows.place(e)) == len(tables):
                tables.append((set(), set()))
            tables[i][0].add(m)
            tables[i][1].add(e.host)
        elif e.comm:
            by_comm[e.comm].add(m)
    sized = ({m for e in comm if (m := member(e)) is not None}
             for comm in (_sized_comms(members, configs) if comms is None else comms))
    for joined in chain(by_comm.values(), (ms for ms, _ in tables), sized):
        join(joined)
    # a rank table lists every rank of its run: one whose ranks are all on one host is a single-node run, whole
    whole = {root(m) for ms, hosts in tables if len(hosts) == 1 for m in ms}
    _join_concurrent([*members, *configs],
                     lambda e: m if (m := member(e)) in parent and root(m) not in whole else None, root, join)
    return {m: root(m) for m in parent}


class RankTables:
    """The nccl-tests rank tables of one capture as :meth:`place` reads them, row by row in the log's order: each
    table's last row (``last``: its rank and ``(host, pid)``) and indexes of the tables by that rank, process and
    host, so a row asks the few tables of its rank, process or host, not every table (a pdsh health check of 2,000
    nodes, 16,000 rows, scanned 2,000 tables a row: 9.7 s)."""

    def __init__(self) -> None:
        self.last: list[tuple[int | None, tuple]] = []
        self._by_rank: dict[int | None, set[int]] = defaultdict(set)
        self._by_proc: dict[tuple, set[int]] = defaultdict(set)
        self._by_host: dict[str | None, set[int]] = defaultdict(set)

    def __len__(self) -> int:
        return len(self.last)

    def _put(self, i: int, k: int | None, at: tuple) -> int:
        if i < len(self.last):
            r, was = self.last[i]
            self._by_rank[r].discard(i)
            self._by_proc[was].discard(i)
            self._by_host[was[0]].discard(i)
            self.last[i] = (k, at)
        else:
            self.last.append((k, at))
        self._by_rank[k].add(i)
        self._by_proc[at].add(i)
        self._by_host[at[0]].add(i)
        return i

    def place(self, row: Ev) -> int:
        """The index in ``last`` (each table's last row so far: its rank and ``(host, pid)``, updated here) of the
        nccl-tests rank table an "# Rank 3 Group 0 Pid 587622 on node01 …" row continues, or of a new one: a table lists
        its run's ranks in order from Rank 0, so a row continues a table whose last rank is one less. Two runs of one
        capture (a pdsh of a single-node nccl-tests on every node at once) can print their rows in turn; of the tables
        that expect the row's rank, the one whose last row is of the row's process (a run of one process and several
        GPUs, nGpus 8: every row's "Pid … on <host>" the same), else of the row's host (one process per GPU, mpirun -np
        8 on each node: each row's pid its own; the table opened last took the first node's Rank 1 and every table held
        two nodes, a break-it pass), else the one opened last. A row left out (a tagged or truncated line): a row goes
        on its own process's table whose last rank is lower before any other process's that expects it (a process is of
        one run), and when no table expects it on the newest table of its host whose last rank is lower, else on the
        table opened last when it is higher than that table's last, as before. The tables then opened last took every
        row of every run, joining the nodes of a health check into one job and their plugins into a mismatch (a
        correlation pass); rows of two multi-node runs in turn stay as ambiguous as the output where a run crosses to
        another host (nothing in the row says its run)."""
        k, at = row.rank, (row.host, row.pid)
        if k is not None and k > 0:
            expect = self._by_rank.get(k - 1, set())
            proc, host = self._by_proc.get(at, set()), self._by_host.get(row.host, set())

            def lower(ids: set[int]) -> list[int]:
                return [i for i in ids if (r := self.last[i][0]) is not None and r < k]

            # a process is of one run: its table, even past a row left out; then a table of the row's host
            for cands in (lambda: proc & expect, lambda: lower(proc), lambda: host & expect, lambda: expect,
                          lambda: lower(host),
                          lambda: [len(self.last) - 1] if self.last and self.last[-1][0] is not None
                          and k > self.last[-1][0] else []):
                if found := cands():
                    return self._put(max(found), k, at)
        return self._put(len(self.last), k, at)


def _join_concurrent(lines: list[Ev], member: Callable[[Ev], Hashable | None], root: Callable[[Any], Any],
                     join: Callable[[Iterable[Any]], None]) -> None:
    """When every job :func:`_capture_groups` found is on one host, join those whose ``lines`` (membership and setting
    lines of one log) interleave in the log: one launch's processes, printing at once. A job's ranks may form only
    their hosts' own communicators (a node's GPUs, each with its commId) while the one across hosts never printed an
    init line: NCCL 2.19 - 2.21 print "Init START" after the bootstrap (init.cc), which is what hosts on two releases
    fail (NVIDIA/nccl#1267), and every process prints its settings ("NET/Plugin …", "NCCL version …") as it starts,
    before any init line (NVIDIA/nccl-tests#244's two hosts, line by line in turn). Two single-node jobs a capture
    holds one after the other print in turn and stay apart; a job across hosts leaves them as they are (a host's
    own communicators beside it are another job's: a node's health check before it). Lines no job places count for
    none (``member`` None)."""
    spans: dict[Any, list] = {}
    hosts: dict[Any, set[str]] = defaultdict(set)
    for e in lines:
        if (m := member(e)) is None:
            continue
        r, at = root(m), _place(e)
        hosts[r].add(e.host)
        span = spans.setdefault(r, [at, at])
        span[0], span[1] = min(span[0], at), max(span[1], at)
    if len(spans) < 2 or any(len(h) > 1 for h in hosts.values()):
        return
    ordered = sorted(spans.items(), key=lambda kv: kv[1][0])
    run_root, run_end = ordered[0][0], ordered[0][1][1]
    for r, (start, end) in ordered[1:]:
        if start < run_end:
            join([run_root, r])
            run_end = max(run_end, end)
        else:
            run_root, run_end = r, end


def _split_processes(job: list[Ev], procs: dict[tuple[str, int], tuple[str, int]]) -> list[list[Ev]]:
    """``job``'s lines (one of :func:`_split_jobs`) by the job of the process that printed each
    (:func:`_capture_processes`), in their order, when every line's process is placed and they are in two jobs or
    more; else ``job`` as it is (a line whose process printed no membership line: the hosts are all there is)."""
    placed = [procs.get((e.host, e.pid)) for e in job]
    if None in placed or len(set(placed)) < 2:
        return [job]
    return [[e for e, p in zip(job, placed) if p == one] for one in sorted(set(placed))]


def gpu_key(e: Ev, topo: Topology) -> str | None:
    if e.device_type not in (None, "gpu"):
        return None
    return topo.gpu_key(e.host, e.device, e.gpu_index)


#: how far from the first of them the timeouts of one collective its lines name may start (µs) and be one collective
#: (``cluster.join_named_collectives``, ``attribute.collective_edges``): every rank enqueues it within seconds of the
#: others, clocks a few seconds apart
NAMED_COLLECTIVE_US = 60_000_000


def collective_window_us(skew_a_us: int, skew_b_us: int) -> int:
    """How far apart (µs) two hosts' timeouts of one collective may start: :data:`NAMED_COLLECTIVE_US` widened by both
    hosts' skew bounds (a host 90 s ahead stayed apart: a break-it pass), for the clustering's join and the
    attribution's edges alike."""
    return NAMED_COLLECTIVE_US + skew_a_us + skew_b_us


def collective_of(e: Ev) -> tuple | None:
    """The collective a watchdog timeout names (``cluster.join_named_collectives``, ``attribute.collective_edges``:
    ranks that no communicator places, no NCCL init lines): ``(process group, SeqNum, OpType, NumelIn, NumelOut,
    Timeout ms)``, or None unless the line gives its SeqNum, OpType and timeout (formats.md §12.2: "WorkNCCL(SeqNum=
    52311, OpType=ALLREDUCE, NumelIn=25165824, NumelOut=25165824, Timeout(ms)=600000)"; PyTorch before 2.2 prints no
    Numel, both are then None; the group is its GUID or id when the line prints one, else None). Every rank of one
    collective prints the same tuple, within seconds of the others (:data:`NAMED_COLLECTIVE_US`); two jobs' start-up
    barriers minutes apart print it too, and stay apart by that window, anchored at the first timeout (a break-it
    pass: as a link relation it chained them). Ray Train's workers on several hosts timing out on one allreduce
    without NCCL_DEBUG=INFO were one incident per host (NVIDIA/nccl#1193, a real-logs pass)."""
    if e.seq is None or e.op is None or e.timeout_ms is None:
        return None
    d = e.details
    return (process_group(e), e.seq, e.op, d.get("numel_in"), d.get("numel_out"), e.timeout_ms)


def named_collective(e: Ev, topo: Topology) -> tuple | None:
    """:func:`collective_of` a watchdog timeout (kind ``nccl_timeout``) whose rank no communicator places
    (:func:`comms_of` gives none: no NCCL init line), else None: the collective by which
    ``cluster.join_named_collectives`` joins such ranks' timeouts and ``attribute.collective_edges`` explains them."""
    if e.kind != "nccl_timeout" or (key := collective_of(e)) is None or comms_of(e, topo):
        return None
    return key


def comms_of(e: Ev, topo: Topology) -> set[str]:
    """Communicators ``e`` belongs to: its own id, or membership learned from NCCL init lines — of the
    communicators its host's GPUs were in when it began (``Topology.comm_live``). A rank's line without a GPU (a
    watchdog timeout) is of the communicators that hold its rank on its host (:func:`_holders`), or that put no rank
    of that number anywhere."""
    return placement(e, topo)[0]


def placement(e: Ev, topo: Topology) -> tuple[set[str], bool]:
    """:func:`comms_of` ``e``, and whether ``e`` is a rank's line without a GPU whose rank number communicators of
    several jobs hold on its host (on several GPUs: :func:`_holders`): then the rank number alone is no subject
    (:func:`rank_scope`)."""
    out = {e.comm} if e.comm else set()
    placed = topo.comm_index().get(e.host)
    if not placed:  # no init line places a rank on its host (most events of a fleet's kernel logs)
        return out, False
    key = gpu_key(e, topo)
    timed = bool(topo.comm_span)
    by_rank = key is None and e.rank is not None
    held: dict[str, str | None] = {}  # communicator holding e's rank on its host -> that rank's GPU
    unnumbered: dict[str, set[str | None]] = defaultdict(set)  # of no rank of that number -> its GPUs on the host
    for comm, dev in placed:
        # not of a communicator that began on the host long after e (Topology.comm_later), as a GPU's rank is not:
        # a job that inits on four hosts' GPUs two hours after each failed joined the four into one incident
        if (key is None or dev is None or dev == key) and _live_at(comm, e, topo, timed):
            if by_rank and (where := topo.comm_ranks.get(comm, {}).get(e.rank)) is not None:
                # a rank's line without a GPU is not of a communicator whose rank of that number is elsewhere
                if where[0] == e.host:
                    held[comm] = where[1]
                continue
            if by_rank:
                unnumbered[comm].add(dev)
            out.add(comm)
    if len(held) > 1 and not _one_gpu(held.values()) and (gpu := _global_gpu(e, topo, set(held.values()))) is not None:
        # c10's [rankN]: names the process, so its GPU, of the group rank the line names (a data-parallel group's
        # timeout, "[rank2]: … [Rank 1]", was of no communicator where a TP and a DP group hold a rank 1 on two GPUs
        # of its host, and the GPU fallen off the bus its DP peer held left it a hang of its own: a break-it pass)
        held = {c: dev for c, dev in held.items() if dev == gpu}
    if len(held) == 1 or _one_gpu(held.values()):
        # the rank is that GPU's process: a communicator with no rank of its number, whose ranks on the host are on
        # other GPUs, is another process's (three jobs on a host: job C's "[Rank 2]" timeout was of jobs A and B of
        # two ranks each too, and joined A's Xid 79 on GPU 0 as same_comm: a break-it pass)
        (gpu,) = set(held.values())
        out.difference_update(c for c, devs in unnumbered.items() if gpu is not None and None not in devs
                              and gpu not in devs and c != e.comm)
        out.update(held)
        return out, False
    if held:
        out |= _holders(e, held, topo)
    return out, bool(held)


def _live_at(comm: str, e: Ev, topo: Topology, timed: bool) -> bool:
    """Whether communicator ``comm`` may hold ``e``'s rank on its host when ``e`` began: live there then (when the
    topology has spans: ``timed``, ``Topology.comm_live``), and not begun there long after it (``comm_later``)."""
    return (not timed or topo.comm_live(comm, e.host, e)) and not topo.comm_later(comm, e.host, e)


def _global_gpu(e: Ev, topo: Topology, held: set[str]) -> str | None:
    """The GPU key of ``e``'s process on its host from its rank in the job (``details.global_rank``, c10's
    ``[rankN]:``): the GPU the largest communicators that hold that rank number put it on there (the job's default
    group holds every rank; a subgroup of as many ranks, its number elsewhere or nowhere); None without a global
    rank, when those communicators put it on several GPUs or on another host, or when they do not hold every GPU of
    ``held`` on the host (the GPUs of the communicators the line's group rank may be of): another job's larger world
    on the host then holds that number, and the line's group would be placed in that job (a break-it pass: job B's
    data-parallel timeout filtered to job A's GPU). Only the communicators with a rank on the host that were live
    there when ``e`` began count (``Topology.comm_live``, ``comm_later``, as :func:`placement`'s): an ended job's
    larger world held the number on another GPU of the host, and the line was filtered to the wrong group (a
    break-it pass); a world without a rank on the host is not the process's."""
    g = e.details.get("global_rank")
    if g is None:
        return None
    timed = bool(topo.comm_span)
    best, gpus, covered = 0, set(), set()
    for comm in {comm for comm, _dev in topo.comm_index().get(e.host, ())}:
        ranks = topo.comm_ranks.get(comm, {})
        size = topo.comm_size.get(comm) or len(ranks)
        if size <= g or size < best or (where := ranks.get(g)) is None or not _live_at(comm, e, topo, timed):
            continue
        if size > best:
            best, gpus, covered = size, set(), set()
        gpus.add(where if where[0] == e.host else None)
        covered.update(dev for host, dev in ranks.values() if host == e.host)
    if len(gpus) != 1 or not held <= covered:
        return None
    (where,) = gpus
    return where[1] if where is not None else None


def rank_scope(e: Ev, topo: Topology) -> frozenset[str] | None:
    """What tells apart the ranks of one number on ``e``'s host when communicators of several jobs hold that number
    there (:func:`placement`): the communicators ``e`` is of, else (its log chose none) the log it was read from
    (``topology.log_stream``: two logs, two processes); else None. Relations ``same_device`` / ``same_gpu`` hold
    between two lines of a rank (no GPU named: ``Ev.subject``) only when their scopes are equal: two jobs' watchdog
    timeouts of "rank 0" on one host, ten minutes apart, were one device's and joined the two jobs' incidents (a
    scenario trial). A rank that one job's communicators hold on the host (not shared) is scoped by those
    communicators that hold its number there when ``e`` began: a job restarted on the host's GPUs numbers its ranks
    again, and the restart's watchdog timeout of "rank 0", 13 minutes after the old run's, was a repeat of the old
    rank's (``same_device``): it joined the old run's Xid 79 on a GPU the restart does not use, and the restart's own
    IB port down was left "by no rule" (a break-it pass). None when no communicator places the rank there."""
    if e.rank is None:
        return None
    comms, shared = placement(e, topo)
    if not shared:
        mine = frozenset(c for c in comms if (topo.comm_ranks.get(c, {}).get(e.rank) or (None,))[0] == e.host)
        return mine or None
    return frozenset(comms) if comms else frozenset({log_stream(e)})


def _holders(e: Ev, held: dict[str, str | None], topo: Topology) -> set[str]:
    """Of the communicators ``held`` that hold ``e``'s rank on its host (-> that rank's GPU there), on several GPUs,
    those ``e`` is of (on one GPU they are one process's: its default group, its subgroups; ``placement`` takes them
    all). Such communicators are of several jobs (two jobs on GPUs 0-3 and 4-7 of two hosts, both numbering their
    ranks 0-7, each its own log per host), and ``e`` is of those whose init lines of its host its own log holds
    (``topology.log_stream``) when they put it on one GPU; otherwise of none: which job's rank timed out no line
    tells. A watchdog timeout names its rank but no GPU, and was of every communicator with a rank of that number on
    its host: another job's application Xid then explained it, and two jobs' hangs half an hour apart were one
    collective (a break-it pass); two jobs that share their hosts were one incident of both jobs' GPU faults, ten
    minutes apart, "no single culprit" (a scenario trial)."""
    log = log_stream(e)
    mine = {c: dev for c, dev in held.items() if log in topo.comm_logs.get((c, e.host), ())}
    return set(mine) if mine and (len(mine) == 1 or _one_gpu(mine.values())) else set()


#: the kinds of a rank's report of its communicator (:meth:`Relations.other_job`)
RANK_REPORTS = frozenset({"nccl_error", "nccl_timeout"})


def job_local(c: Ev) -> bool:
    """Is ``c`` a GPU's own fault, naming no NVLink link? What it stops is the job whose rank that GPU held; a
    link's fault reaches the NVLink domain's fabric (a fatal Xid 149 with the rack's Xid 145,
    marin-community/marin#9086), a switch's every GPU wired to it."""
    return c.device_type == "gpu" and c.link is None


def job_hosts(comms: Iterable[str], topo: Topology) -> frozenset[str] | None:
    """The hosts of the ranks of ``comms`` (communicator ids) when NCCL's init lines place every rank of each (its
    ``nranks``: ``Topology.comm_size``); None when ``comms`` is empty or one of them is not placed in full."""
    hosts: set[str] = set()
    for comm in comms:
        ranks = topo.comm_ranks.get(comm)
        size = topo.comm_size.get(comm)
        if not ranks or size is None or len(ranks) < size:
            return None
        hosts.update(h for h, _dev in ranks.values())
    return frozenset(hosts) if hosts else None


def _one_gpu(devs: Iterable[str | None]) -> bool:
    """Whether ``devs`` name one GPU, all of them known."""
    seen = set(devs)
    return len(seen) == 1 and None not in seen


def relation(rel: str, c: Ev, e: Ev, topo: Topology) -> bool:
    """Does relation ``rel`` hold between cause ``c`` and effect ``e``? (:class:`Relations`; for many pairs of one
    topology, keep one ``Relations``.)

    Raises ValueError for a relation not in :data:`Relation`."""
    return Relations(topo).holds(rel, c, e)


class Relations:
    """The relations of ``rules.yaml`` over one topology: ``holds(rel, cause, effect)``. Each event's GPU key
    (:func:`gpu_key`) and communicators (:func:`comms_of`) are found once per instance, kept by the event object
    (two events may share an id before ``correlate`` drops the repeats), so an instance serves while the
    topology's facts and the events stand (one ``find_edges`` or ``components`` call): a rule relating by
    communicator asks for every pair of a rank storm."""

    __slots__ = ("topo", "_keys", "_comms", "_scopes")

    def __init__(self, topo: Topology) -> None:
        self.topo = topo
        self._keys: dict[int, str | None] = {}  # id(event) ->
        self._comms: dict[int, frozenset[str]] = {}
        self._scopes: dict[int, frozenset[str] | None] = {}

    def key(self, e: Ev) -> str | None:
        """:func:`gpu_key` of ``e``."""
        try:
            return self._keys[id(e)]
        except KeyError:
            got = self._keys[id(e)] = gpu_key(e, self.topo)
            return got

    def comms(self, e: Ev) -> frozenset[str]:
        """:func:`comms_of` ``e``."""
        got = self._comms.get(id(e))
        if got is None:
            got = self._comms[id(e)] = frozenset(comms_of(e, self.topo))
        return got

    def scope(self, e: Ev) -> frozenset[str] | None:
        """:func:`rank_scope` of ``e``."""
        try:
            return self._scopes[id(e)]
        except KeyError:
            got = self._scopes[id(e)] = rank_scope(e, self.topo)
            return got

    def other_job(self, a: Ev, b: Ev) -> bool:
        """Are ``a`` and ``b`` of two jobs that NCCL's init lines tell apart? True when the hosts of their jobs
        (:meth:`job_of`) are known and share none, or when one's are known and the other is a GPU's own fault
        (:func:`job_local`) on a host of none of them. Then the NVLink domain the two hosts share ties nothing
        (``same_domain`` does not hold, either way): one job's fallen GPU explained another job's watchdog timeouts on
        other hosts of its GB200 rack, and two jobs' GPU faults there were one incident (a break-it pass). Not without
        init lines: then the domain is all that says which job a line may be of; nor for a link's or a switch's fault,
        which reaches the domain's fabric.

        On one host, true when one is a GPU's own fault whose GPU the init lines place in communicators none of which
        the other, a rank's report, is of, nor hold a rank on that GPU: ``same_host`` does not hold then (a job begun on
        another GPU of the host after one GPU fell off the bus, its watchdog timeouts 100 s after the Xid 79, was said
        to follow from it: a break-it pass)."""
        if a.host == b.host:
            return self.other_gpus(a, b) or self.other_gpus(b, a)
        ha, hb = self.job_of(a), self.job_of(b)
        if ha is not None and hb is not None:
            return ha.isdisjoint(hb)
        return (hb is not None and job_local(a) and a.host not in hb) or (
            ha is not None and job_local(b) and b.host not in ha)

    def other_gpus(self, c: Ev, e: Ev) -> bool:
        """Is ``c`` a GPU's own fault (:func:`job_local`) whose GPU NCCL's init lines place in communicators none of
        which ``e``, a rank's NCCL report, is of, and none of ``e``'s communicators with a rank on that GPU? (On one
        host, :meth:`other_job`; on any, what ``correlator.apart`` splits off.)"""
        if not job_local(c) or e.kind not in RANK_REPORTS:
            return False
        mine, theirs = self.comms(c), self.comms(e)
        key = self.key(c)
        if key is None or not mine or not theirs or not mine.isdisjoint(theirs):
            return False
        topo = self.topo
        return not any(h == c.host and dev is not None and topo.line_key(h, dev) == key
                       for comm in theirs for h, dev in topo.comm_ranks.get(comm, {}).values())

    def job_of(self, e: Ev) -> frozenset[str] | None:
        """The hosts of the job ``e`` is of, when NCCL's init lines tell: ``e`` is a rank's NCCL report (an error, a
        watchdog timeout) or a GPU's own fault (:func:`job_local`), and every communicator it is of (:func:`comms_of`)
        has all its ranks placed (:func:`job_hosts`); else None."""
        return job_hosts(self.comms(e), self.topo) if e.kind in RANK_REPORTS or job_local(e) else None

    def holds(self, rel: str, c: Ev, e: Ev) -> bool:
        """Does relation ``rel`` hold between cause ``c`` and effect ``e``? Raises ValueError for a relation not in
        :data:`Relation`."""
        if rel == "same_host":  # not across a reboot in one capture (model.across_reboot), nor two jobs' GPUs
            return c.host == e.host and not across_reboot(c, e) and not self.other_job(c, e)
        if rel == "same_comm":
            return not self.comms(c).isdisjoint(self.comms(e))
        if rel == "same_collective":  # one collective: its SeqNum within a communicator (formats.md §12.2)
            return c.seq is not None and c.seq == e.seq and not self.comms(c).isdisjoint(self.comms(e))
        if rel in ("same_gpu", "same_device"):
            if c.host != e.host or across_reboot(c, e):
                return False
            kc, ke = self.key(c), self.key(e)
            if kc is not None and ke is not None:
                return kc == ke
            # a rank's two lines (no GPU named) only when their scopes are equal (two jobs' "rank 0"); a device named
            # by its bus id is that device whatever rank printed it (cluster._buckets keys it so: an NVSwitch's Xid
            # and a rank's line naming that switch were one device there and two here, the clustering property test)
            return (c.subject() == e.subject() and c.subject()[2] is not None
                    and (c.subject()[1] != "rank" or self.scope(c) == self.scope(e)))
        if rel == "cause_xid":
            return e.cause_xid is not None and c.xid == e.cause_xid and self.holds("same_gpu", c, e)
        if rel == "nvlink_peer":
            if c.host != e.host or e.link is None:
                return False
            kc, ke = self.key(c), self.key(e)
            if kc is None or ke is None:
                return False
            far = self.topo.nvlink_peer(e.host, ke, e.link)
            return far is not None and far[0] == kc
        if rel == "same_nvswitch":
            if c.device_type != "nvswitch" or c.host != e.host or e.link is None:
                return False
            ke = self.key(e)
            if ke is None:
                return False
            far = self.topo.nvlink_peer(e.host, ke, e.link)
            return far is not None and far[0] == c.device
        if rel == "same_domain":
            return (self.topo.domain(c.host) == self.topo.domain(e.host) and not across_reboot(c, e)
                    and not self.other_job(c, e))
        if rel == "same_log":  # lines of one job's log file (log_of)
            return (k := log_of(c)) is not None and k == log_of(e)
        if rel == "names_device":  # the effect's line names the cause's device as its peer (an AER error's source)
            return e.peer is not None and e.peer == c.device and c.host == e.host and not across_reboot(c, e)
        if rel == "peer_host":  # on two hosts, one names the other as its peer (Topology.peer_host), whose fault
            # hit the job there: not an OOM kill of another program (model.spares_job)
            return c.host != e.host and not spares_job(c) and not spares_job(e) and (
                self.topo.peer_host(e) == c.host or self.topo.peer_host(c) == e.host)
        raise ValueError(f"unknown relation {rel!r}")
