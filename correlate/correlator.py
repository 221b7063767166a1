"""Events in, incidents out: the batch correlator that ``diagnose`` and the service share.

:func:`correlate` takes a set of events (Arrow table in ``EVENTS_SCHEMA``)
plus the link samples and topology facts of the same input, builds the
topology, groups the events into candidate incidents (``cluster``), attributes
each (``attribute`` + ``patterns``) and renders the incidents
(``incident``). An incident is emitted when it holds at least one fault, or
an operator-reported symptom.

Pure: ``now_us`` is passed in; the same input gives the same incidents.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Container
from dataclasses import dataclass, field
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.compute as pc

from correlate.attribute import (SYMPTOM, Scene, ShapeMemo, Verdict, collective_edges, find_edges, first_of, is_fault,
                                 may_relate, reach, resolve_subjects, roots_verdict)
from correlate.cluster import ComponentCache, components, join_named_collectives
from correlate.incident import body, finish, initiator_key, last_evidence_us, untied_before
from correlate.model import Copies, Ev, events_from_table, follow_notices, follow_reports, follow_watchdogs
from correlate.patterns import PATTERNS, symptom_verdict
from correlate.rules import (RANK_REPORTS, Rules, collective_of, default_rules, host_window_us, job_hosts, job_local,
                             mark_config_mismatch)
from correlate.topology import HostConfig, Topology, build_topology, unmatched_platforms
from correlate.window import AppendDelays, Clocks, collective_skew, estimate_clocks
from ingest.catalog import Catalog, default_catalog
from ingest.gcpause import gc_paused
from schemas.events import SEVERITY_RANK
from schemas.incidents import iso_us

S = 1_000_000
log = logging.getLogger("firstfault.correlate")


@dataclass(slots=True)
class Symptom:
    """What the on-call engineer knows and the logs may not say ("the job hung on GPUs 0 and 1").

    ``kind``: ``hang`` or ``failure``; ``ts`` µs or ``None`` (then it joins
    every event of its host); ``gpus``: indexes or bus ids.
    """

    host: str
    kind: str = "failure"
    ts: int | None = None
    gpus: list[str] = field(default_factory=list)
    note: str = ""


@dataclass(slots=True)
class Settings:
    """Correlation settings (µs)."""

    clocks: Clocks = field(default_factory=Clocks)
    resolve_after_us: int = 15 * 60 * S
    hosts: dict[str, HostConfig] = field(default_factory=dict)


def correlation_settings(s) -> Settings:
    """Correlation settings from the process settings (``schemas.settings.Settings``)."""
    from schemas.fleet import load_fleet_config

    hosts = load_fleet_config(s.fleet_config) if s.fleet_config else {}
    for name, named in unmatched_platforms(hosts).items():
        shown = first_of(named)
        log.warning("fleet config %s: platform %r (host%s %s) matches no GPU model of correlate/platforms.yaml: "
                    "those hosts' expected NVLinks are unknown, so a link down by design is not told from one down "
                    "by a fault; write the model as nvidia-smi prints it (\"NVIDIA H100 80GB HBM3\")", s.fleet_config,
                    name, "s" * (len(named) != 1), shown,
                    extra={"stage": "correlate", "error_code": "unknown_platform"})
    clocks = Clocks(skew_us={h: int(v * S) for h, v in s.skew_s.items()}, default_skew_us=int(s.skew_default_s * S))
    return Settings(clocks=clocks, resolve_after_us=int(s.resolve_after_s * S), hosts=hosts)


def symptom_events(symptoms: list[Symptom], events: list[Ev], now_us: int,
                   facts: tuple[pa.Table | None, ...] = ()) -> list[Ev]:
    """Symptoms as events (signature ``operator.symptom``) so they join incidents like evidence.

    A symptom without a time is placed at its host's last event, else at the last event of any host, else at
    ``now_us`` (µs: reported now, about logs that hold no event); ``details.untimed`` says it was not given.
    Events whose time is only an upper bound (``details.ts_upper_bound``: a line with no stamp, timed by its
    file's mtime or its Kafka arrival, maybe days after the lines around it) count only where no other does.
    ``facts``: the link-sample and topology tables (``origin`` and ``host`` columns); a symptom with no event to
    be placed at is told apart by the origins of its host's facts (a file's name and content digest, a Kafka
    record), so that one report about two different logs gives two event ids (and incident ids)."""
    if not symptoms:  # the usual call (every streaming step): no pass over the events
        return []
    out = []
    timed = [e for e in events if not e.undated()] or events
    latest = max((e.ts for e in timed), default=now_us)
    for i, s in enumerate(symptoms):
        host_ts = ([e.ts for e in timed if e.host == s.host]
                   or [e.ts for e in events if e.host == s.host])
        ts = s.ts if s.ts is not None else (max(host_ts) if host_ts else latest)
        # the id is of what was reported (its place, host, kind, time if given, GPUs, note): the same report gives
        # the same id on every run, also when it is placed at the time of the run; one with no line to be placed
        # at, of the logs it is about too ("hang" on node01 gave one incident id over two cases' different
        # topology-only logs: a fresh user's trial)
        about = _fact_origins(facts, s.host) if s.ts is None and not timed else []
        what = hashlib.blake2b(orjson.dumps([i, s.host, s.kind, s.ts, list(s.gpus), s.note, *about]), digest_size=6)
        # the report's GPUs are in details.gpus (patterns.symptom_verdict names them); the event is the host's, so
        # it stays a party of its own beside a GPU's own events, which it corroborates (a break-it pass found a
        # report placed on the failed GPU hidden in the initiator's events, and the confidence lower)
        out.append(Ev(event_id=f"symptom-{s.host}-{what.hexdigest()}", ts=ts, ts_basis="operator", host=s.host,
                      source="nccl", kind="nccl_timeout" if s.kind == "hang" else "other", signature=SYMPTOM,
                      severity="error", device_type=None, device=None, link=None, xid=None, sxid=None, peer=None,
                      rank=None, nranks=None, comm=None, message=f"reported by operator: {s.kind} {s.note}".strip(),
                      precision_us=S, details={"symptom": s.kind, "gpus": list(s.gpus),
                                               "untimed": s.ts is None,
                                               # placed at a logged line's time (not given, not the run's)
                                               "placed": s.ts is None and bool(host_ts or timed)}))
    return out


def _fact_origins(facts: tuple[pa.Table | None, ...], host: str) -> list[str]:
    """The sorted distinct ``origin`` values of ``host``'s rows in the tables ``facts`` (none for a table without
    the columns)."""
    got: set[str] = set()
    for t in facts:
        if t is not None and t.num_rows and {"host", "origin"} <= set(t.column_names):
            got.update(t.filter(pc.equal(t.column("host"), host)).column("origin").unique().to_pylist())
    return sorted(x for x in got if x is not None)


def attribute(scene: Scene) -> Verdict | None:
    """The first pattern that recognises the incident, else the candidates nothing explains.

    With an operator's symptom, the logged events are first attributed alone: when a benign pattern recognises
    them (they are not a fault), they explain nothing the operator reported either, and the incident is the
    symptom's (``patterns.symptom_verdict``), not the benign pattern's turned into a fault by the report; when the
    report defeated another pattern, the candidates' verdict keeps that pattern's category."""
    verdict = _first_pattern(scene)
    symptoms = scene.symptoms()
    if symptoms and len(symptoms) < len(scene.events) and not (verdict and verdict.pattern.startswith("benign.")):
        # a benign pattern that takes the report into account (an application's own Xid: the program failed)
        # keeps its verdict; one the report defeated is asked again without it
        logged = Scene(events=scene.logged(), topo=scene.topo,
                       catalog=scene.catalog, rules=scene.rules, clocks=scene.clocks, subject=scene.subject,
                       edges=[x for x in scene.edges if SYMPTOM not in (x.cause.signature, x.effect.signature)],
                       memo=scene.memo)
        plain = _first_pattern(logged) if logged.faults() else None
        if plain is not None and plain.pattern.startswith("benign."):
            return symptom_verdict(scene, benign=plain)
        if verdict is None and plain is not None:
            # the report defeated a pattern that named what the logs are (one rank's watchdog timeout: a hang,
            # comm.silent_rank): the roots verdict keeps that category, not "other" (a fresh user's trial: telling
            # the tool more made it say less)
            v = roots_verdict(scene)
            if v is not None and v.category == "other":
                v.category = plain.category
            return v
    return verdict or roots_verdict(scene)


def apart(scene: Scene, v: Verdict) -> list[tuple[Scene, Verdict]]:
    """The incidents of one candidate incident (``scene``, attributed ``v``): itself, unless it holds a fault of
    its own on another host — a device fault (``Scene.hardware_faults``: a kernel or NVML line, not Fabric Manager's;
    an initiator's or either role, error or worse)
    that nothing in the scene explains, of a subject no rule ties to the initiator. Such a subject, with its
    events, is an incident of its own; the rest is attributed again without it (and each part split again, so
    that two such hosts are two more incidents).

    A job's communicator joins its hosts' faults into one candidate incident (clustering by ``same_comm``): a GPU
    fallen off the bus on one host and a fatal NVLink error on another two seconds later were one incident, the
    second listed downstream "by no rule" under a relation no fleet config gave (``same_domain``), and it was never
    paged (a fresh user's trial). Subjects and edges are the scene's, kept for its parts."""
    host = v.initiator.get("host")
    if not host or v.initiator.get("device_type") is None or not v.initiator_events:
        return [(scene, v)]  # no single culprit: its candidates are said together
    hosts = {e.host for e in v.initiator_events}
    serious = SEVERITY_RANK["error"]
    device = {id(e) for e in scene.hardware_faults()}  # the scene's one definition of a device's fault
    # (a party a rule reached may hold one too: the rank on node08's GPU whose lost peer node07's fault explains, and
    # that GPU's own fatal NVLink error beside it, were one party "by rule" and the Xid 74 was never its own incident:
    # a fresh user's trial)
    own = {p.key for p in v.downstream
           if p.key[0] not in hosts
           and any(id(e) in device and e.sev >= serious and scene.role(e) in ("initiator", "either")
                   and not scene.explained(e) for e in p.events)}
    # and, on the initiator's host too, a subject whose device faults, nothing explaining them, began more than the
    # host's link window before it: going on long before (a chain of repeats joined it, not the initiator), whatever
    # of it the initiator may explain later. An application's Xid 13 every 61 s for two days and another GPU's Xid 79
    # were one incident starting two days before the Xid 79 (a break-it pass); a GPU's Xid 74 every 30 s from five
    # minutes before another GPU's Xid 79, one more 2 s after it, were one incident of the Xid 79 "though a line it
    # explains was logged 5 min before it" (a second one)
    begun = min(e.start for e in v.initiator_events) - host_window_us(scene.rules)
    first = {scene.subject[e.event_id] for e in v.initiator_events}
    own |= {k for k, evs in scene.parties().items()
            if k[0] in hosts and k not in first
            and min((e.start for e in evs if id(e) in device and not scene.explained(e)),
                    default=begun) < begun}
    # and a party no rule ties to the initiator whose faults all came before it (``incident.untied_before``): no
    # reporter of it, a fault of its own. An application's Xid 13 on one GPU 30 s before another GPU's Xid 79 was the
    # Xid 79's incident's context, and that incident started at the Xid 13 (README "start": only a watchdog timeout's
    # collective may start an incident before its initiator's line), the Xid 13 never an incident (a fresh user's
    # second trial)
    own |= {p.key for p in v.downstream if untied_before(scene, v, p)}
    # and a party of another job's rank reports that no rule ties to the initiator (``rules.Relations.other_gpus``:
    # NCCL's init lines place the job apart from the initiator's GPU): that job's hang, with its own suspects. A job
    # begun on another GPU of the host after one GPU fell off the bus, its watchdog timeouts listed downstream of the
    # Xid 79 "by no rule" (a break-it pass)
    rel, gpus = scene.relations(), [c for c in v.initiator_events if job_local(c)]
    if gpus:
        own |= {p.key for p in v.downstream
                if not p.rule and p.events and all(e.kind in RANK_REPORTS for e in p.events)
                and all(rel.other_gpus(c, e) for c in gpus for e in p.events)}
    if not own:
        return [(scene, v)]
    # with what it explains that the initiator does not: the NCCL error of a rank on the GPU whose fatal NVLink error
    # was split off stayed behind as a party "no rule ties" (a break-it pass)
    mine = (set(reach(scene, v.initiator_events)) - own) | first
    own |= set(reach(scene, [e for e in scene.events if scene.subject[e.event_id] in own])) - mine

    def split_off(e: Ev) -> bool:
        # an own subject's line that a fault outside it explains stays with that fault (the lost peer node07's GPU
        # explains is no line of node08's NVLink error)
        return (scene.subject[e.event_id] in own
                and not any(scene.subject[c.event_id] not in own for c in scene.causes_of(e)))

    parts = ([e for e in scene.events if not split_off(e)], [e for e in scene.events if split_off(e)])
    if not all(parts):  # every line of its own subjects explained from outside them: nothing to split
        return [(scene, v)]
    out = []
    for part in parts:
        ids = {e.event_id for e in part}
        sub = Scene(events=part, topo=scene.topo, catalog=scene.catalog, rules=scene.rules, clocks=scene.clocks,
                    subject={k: scene.subject[k] for k in ids}, memo=scene.memo,
                    edges=[x for x in scene.edges if x.cause.event_id in ids and x.effect.event_id in ids])
        got = attribute(sub) if sub.faults() else None
        if got is not None:
            out.extend(apart(sub, got))
    return out


def _first_pattern(scene: Scene) -> Verdict | None:
    """The verdict of the first pattern of ``rules.yaml`` that recognises ``scene``; ``None`` when none does."""
    for p in scene.rules.patterns:
        fn = PATTERNS.get(p.id)
        if fn is None:
            raise KeyError(f"rules.yaml names pattern {p.id!r} that correlate/patterns.py does not implement")
        v = fn(scene)
        if v is not None:
            return v
    return None


@dataclass(slots=True)
class AttributionCache:
    """The attribution of each candidate incident, kept from one :func:`correlate` call to the next (the
    streaming correlator re-correlates the events it keeps at every step, and most candidate incidents have
    not changed since the last one).

    A candidate incident's subjects, edges and verdict are a pure function of its events (each fixed once built but
    for its implied start, ``Ev.imply_start``), the rules, the catalog, the fleet config, and of the topology and
    clock bounds as read for its events' hosts: each host's facts (``Topology.host_facts``), the facts of the
    communicators with a rank on it (``Topology.comm_facts``) and, for a candidate incident of more than one host,
    its skew bound (``window.tolerance`` adds the skew bounds of two events' hosts only when the hosts differ, as
    ``attribute.find_edges`` and ``collective_edges`` do; the largest bound only limits a search: a one-host
    candidate's attribution reads none, and the estimates move with nearly every streaming step — ~700 of the ~1,400
    attributions redone over the benchmark's 41 steps were redone for them alone). Each call numbers the hosts'
    facts: a host keeps its number while its facts and those of its communicators equal the last call's (compared
    once per call, not once per candidate incident). An entry is keyed by its events (object ids, kept alive by the
    entry, starts and implied starts) and used only while its hosts' numbers (and, across hosts, skew bounds) are
    those it was made with; every entry is dropped when the rules, the catalog or the fleet config change, or when
    the shape memo outgrows ``MEMO_MAX_SHAPES``; an entry whose events name peers by address is used only while
    those addresses name the hosts they named (``Topology.peer_host``: an address line of any host may teach one).
    An entry keeps the incident's body too (``incident.body``); its status and recurrence (``incident.finish``) are
    redone at every call. Only the last call's candidate incidents are kept, so the entries are as many as the
    candidate incidents of the events the caller keeps; the rules, the catalog and a topology are not to be changed
    in place (they are compared by identity: the same topology object keeps the hosts' numbers).

    ``hits`` / ``misses``: candidate incidents taken from the cache / attributed, over the cache's life."""

    #: shapes the memo may hold before it starts again (one per distinct kind, signature, Xid … ever seen;
    #: another producer's events could bring any number)
    MEMO_MAX_SHAPES = 20_000

    #: events key -> (its incidents as (scene, verdict, ``incident.body``, each host's latest event time µs in the
    #: scene): none, one, or more when ``apart`` split it; {host: (its facts' number, its skew bound µs)} when made)
    scenes: dict[tuple, tuple[list[tuple[Scene, Verdict, dict[str, Any], dict[str, int]]], dict[str, tuple]]] = field(
        default_factory=dict)
    memo: ShapeMemo = field(default_factory=ShapeMemo)
    #: ``attribute.may_relate`` of the rules and catalog, kept with the shape memo: its answers are per pair of
    #: shapes, asked at every call of the faults whose times are spanned or file-dated (``cluster.components``)
    related: Callable[[Ev, Ev], bool] | None = None
    fleet: tuple | None = None  # (rules, catalog, fleet config) of the last call
    #: the last call's facts and their numbers: communicator -> (facts, number), host -> (facts, number)
    comms: dict[str, tuple[tuple, int]] = field(default_factory=dict)
    hosts: dict[str, tuple[tuple, int]] = field(default_factory=dict)
    numbered: int = 0
    hits: int = 0
    misses: int = 0
    #: the topology the numbers were taken from: the same object again (the streaming correlator reuses an
    #: unchanged one, ``StreamCorrelator._learn``) keeps them without comparing every host's facts
    topo: Topology | None = field(default=None, repr=False)
    #: the last call's candidate incidents before ``join_named_collectives``, by host: only the hosts whose events,
    #: facts or skew bound changed, and those coupled to them, are clustered again (``cluster.ComponentCache``)
    clusters: ComponentCache = field(default_factory=ComponentCache, repr=False)
    #: the copies ``follow_reports`` and ``Topology.name_hosts`` made of the last call's events: the same copy object
    #: again while what it is made of stands, so an entry keyed on it is found (``model.Copies``)
    copies: Copies = field(default_factory=Copies, repr=False)
    #: the latest ``now_us`` (µs) at which every incident the last call made ``open`` would still be open (the
    #: earliest of their last evidence plus ``Settings.resolve_after_us``: ``incident.finish``); None when it made
    #: none open. Set by every call; the streaming correlator skips a step that nothing but its time would change
    #: while its time has not passed it (``StreamCorrelator.step``)
    open_until_us: int | None = None

    def check(self, rules: Rules, catalog: Catalog, topo: Topology) -> dict[str, int]:
        """Drop every entry unless the rules, catalog and fleet config are the last call's (and the shape memo unless
        the rules and the catalog are, or when it outgrew ``MEMO_MAX_SHAPES``); return the number of each host's
        facts (hosts the topology knows nothing of have none)."""
        last = self.fleet
        # the fleet config, and the files read in part (fleet-wide: a silent rank's file: patterns._read_in_part)
        now = (rules, catalog, topo.fleet_facts(), {f: frozenset(h) for f, h in topo.cut_files.items()})
        if (last is None or last[0] is not rules or last[1] is not catalog
                or len(self.memo.ids) > self.MEMO_MAX_SHAPES):
            self.memo = ShapeMemo()  # shape ids are decided by the rules and the catalog
            self.related = None
            self.scenes = {}
        elif last[2:] != now[2:]:
            self.scenes = {}
        self.fleet = now
        if topo is self.topo:
            return {h: n for h, (_f, n) in self.hosts.items()}
        self.topo = topo
        self.comms = {c: self._number(self.comms.get(c), f) for c, f in topo.comm_facts().items()}
        hosts = {}
        for h, f in topo.host_facts().items():
            hosts[h] = self._number(self.hosts.get(h), (f[:5], tuple((c, self.comms[c][1]) for c in f[5]), f[6]))
        self.hosts = hosts
        return {h: n for h, (_f, n) in hosts.items()}

    def _number(self, last: tuple[tuple, int] | None, facts: tuple) -> tuple[tuple, int]:
        if last is not None and last[0] == facts:
            return last
        self.numbered += 1
        return facts, self.numbered


@gc_paused()  # many objects, no cycles: ingest.gcpause
def correlate(events: pa.Table | list[Ev], samples: pa.Table | None = None, topology: pa.Table | None = None,
              *, settings: Settings | None = None, symptoms: list[Symptom] | None = None, now_us: int,
              rules: Rules | None = None, catalog: Catalog | None = None,
              previous: list[dict[str, Any]] | None = None,
              cache: AttributionCache | None = None, built: Topology | None = None,
              unique: bool = False, delays: AppendDelays | None = None) -> list[dict[str, Any]]:
    """Incidents (DESIGN.md shape) for a batch of events, sorted by start.

    ``cache``: attributions kept from the caller's last call (:class:`AttributionCache`); the incidents are
    the same with or without it, but with it their nested parts are the cache's: copy an incident before
    changing it in place (``StreamCorrelator.step`` does). ``built``: the topology ``build_topology`` made of
    these events (one per event_id), ``samples``, ``topology`` and ``settings.hosts`` — and of older
    membership lines the caller keeps for the topology alone (``StreamCorrelator.wiring``) — when the caller
    needs it too; else it is built here from the events. ``unique``: the caller's events have one event per
    event_id already (the streaming correlator's, kept by id), so none is dropped as a replay's copy. ``delays``:
    the summary of the append delays of these events and of older ones the caller forgot
    (``window.AppendDelays``, ``StreamCorrelator.delays``), which the clock estimates are read from; else these
    events'."""
    settings = settings or Settings()
    rules = rules or default_rules()
    catalog = catalog or default_catalog()
    evs = events_from_table(events) if isinstance(events, pa.Table) else list(events)
    if delays is None:  # every copy's delay: a line's is its first arrival's, whichever copy _dedup keeps
        delays = AppendDelays.of(evs)
    if not unique:
        evs = _dedup(evs)
    follow_watchdogs(evs)
    mark_config_mismatch(evs)  # before any rule is asked of an event: a disagreeing setting is a fault
    follow_notices(evs)  # a re-sent notice's time is its event's: before any copy is made of a notice
    copies = cache.copies if cache is not None else None
    if copies is not None:
        copies.turn()
    evs = follow_reports(evs, copies)
    topo: Topology = built if built is not None else build_topology(evs, samples, topology, settings.hosts)
    # a line that named its host by an address NCCL said a host uses is that host's
    evs = topo.name_hosts(evs, copies)
    skew, offsets = estimate_clocks(evs, delays=delays)
    for h, bound in collective_skew(evs, collective_of).items():  # files: one collective's timeouts on several hosts
        skew[h] = max(skew.get(h, 0), bound)
    clocks = settings.clocks.with_estimates(skew)
    evs = evs + symptom_events(symptoms or [], evs, now_us, (samples, topology))
    incidents: list[dict[str, Any]] = []
    # earlier incidents by initiator (incident.finish names those of the same initiator: one lookup, not a scan
    # of every incident the streaming correlator emitted)
    history: dict[tuple, list[dict[str, Any]]] = {}
    for p in previous or []:
        history.setdefault(initiator_key(p["initiator"]), []).append(p)
    kept: dict[tuple, tuple[list[tuple[Scene, Verdict, dict[str, Any], dict[str, int]]], dict[str, tuple]]] = {}
    open_until: int | None = None  # AttributionCache.open_until_us
    if cache is not None:
        facts = cache.check(rules, catalog, topo)
    memo = cache.memo if cache is not None else ShapeMemo()
    related = cache.related if cache is not None else None
    if related is None:
        related = may_relate(rules, catalog)
        if cache is not None:
            cache.related = related
    if cache is not None:
        comps = cache.clusters.components(evs, rules.links, topo, clocks, lambda e: is_fault(e, catalog), related,
                                          catalog, facts, {c: n for c, (_f, n) in cache.comms.items()},
                                          cache.fleet[2:])
    else:
        comps = components(evs, rules.links, topo, clocks, is_fault=lambda e: is_fault(e, catalog),
                           related=related, catalog=catalog)
    for comp in join_named_collectives(comps, topo, clocks):
        if cache is not None:
            key = tuple([(id(e), e.start, e.implied_start) for e in comp])
            on = {e.host for e in comp}
            # a one-host candidate's attribution reads no skew bound (window.tolerance: across hosts only)
            hosts = ({h: (facts.get(h), clocks.skew(h)) for h in on} if len(on) > 1
                     else {h: (facts.get(h),) for h in on})
            # the hosts its peers' addresses name (Topology.peer_host: an address line of any host may teach one);
            # under "", which no host is named
            named = {(str(a), topo.peer_host(e) or "") for e in comp if (a := e.details.get("peer_addr"))}
            if named:
                hosts[""] = tuple(sorted(named))
            got = cache.scenes.get(key)
            if got is not None and got[1] != hosts:
                got = None
        else:
            got = None
        if got is not None:
            parts = got[0]
            for scene, *_ in parts:
                scene.topo, scene.clocks = topo, clocks  # they answer its hosts alike; the old ones can go
            cache.hits += 1
        else:
            scene = Scene(events=comp, topo=topo, catalog=catalog, rules=rules, clocks=clocks, memo=memo)
            v = None
            if scene.faults():
                scene.subject = resolve_subjects(comp, topo, catalog)
                scene.edges = collective_edges(scene, find_edges(scene))
                v = attribute(scene)
            parts = [(s, pv, body(s, pv), _host_latest(s.events)) for s, pv in apart(scene, v)] if v is not None else []
            if cache is not None:
                cache.misses += 1
        if cache is not None:
            kept[key] = (parts, hosts)
        for scene, v, made, latest in parts:
            same = initiator_key(v.initiator)
            inc = finish(made, scene, v, now_us=now_us, resolve_after_us=settings.resolve_after_us,
                         previous=history.get(same, []), offsets_us=offsets, latest_us=latest)
            inc["clocks"] = {h: {"skew_bound_s": clocks.skew(h) / S, "offset_s": offsets.get(h, 0) / S}
                             for h in sorted(latest)}
            history.setdefault(same, []).append(inc)
            incidents.append(inc)
            if inc["status"] == "open":
                until = last_evidence_us(made, scene, offsets, latest) + settings.resolve_after_us
                open_until = until if open_until is None else min(open_until, until)
    if cache is not None:
        cache.scenes = kept
        cache.open_until_us = open_until
    incidents = name_faults_near_hangs(incidents, placed=lambda comms: job_hosts(comms, topo))
    incidents = name_faults_after_reports(incidents)
    if sum(i["category"] == "ib_port" for i in incidents) > 1:  # the port lines looked for only when they may matter
        # of the port incidents' initiator events only (all that _port_fault asks of ``links``): a test per kept event
        # at every streaming step was ~1.5 % of its CPU
        asked = {x for i in incidents if i["category"] == "ib_port" for x in i["initiator"].get("events") or ()}
        incidents = name_port_faults_together(
            incidents, links={e.event_id for e in evs if e.event_id in asked and port_link_line(e)})
    return sorted(incidents, key=lambda i: (i["start"], i["id"]))


#: how far (µs) from an unexplained hang's start another host's fault is named beside it
#: (:func:`name_faults_near_hangs`)
NEAR_HANG_US = 60 * S
#: incident categories no host fault is: a hang, a program's own fault, the unclassified
_NOT_HOST_FAULTS = frozenset({"nccl_hang", "application", "other"})


def name_faults_near_hangs(incidents: list[dict[str, Any]], near_us: int = NEAR_HANG_US,
                           placed: Callable[[list[str]], frozenset[str] | None] | None = None
                           ) -> list[dict[str, Any]]:
    """``incidents`` (DESIGN.md shape), each hang no evidence explains (category ``nccl_hang``, confidence below
    0.5: the logs do not say which hosts ran the job) and each slow checkpoint save (``comm.slow_checkpoint``, read
    without the job's membership too) given, in ``missing``, up to three error or critical incidents of other hosts
    whose start lies within ``near_us`` (µs) of its start (the implied start of the collective that timed out),
    nearest first: a host's fatal PCIe error and Xid 79 at the very second a rank on another host began to wait
    were two incidents, the hang's asking for "the kernel logs of every host" that were already given (a fresh
    user's trial). Which hosts ran the job (NCCL's Init COMPLETE lines) joins them as initiator and downstream;
    without them, this names the candidates. A new list is set, never the cached one changed (``correlate``'s
    ``cache``). ``placed``: the hosts of a hang's communicators (its ``communicators``) when NCCL's init lines place
    every rank of them (``rules.job_hosts``), else None; another host's fault is then named only if it is one of
    them (a job placed on two hosts of a GB200 rack was asked "whether" a third host "ran a rank of this job", its
    init lines saying it did not: a break-it pass)."""
    faults = [(iso_us(i["start"]), i) for i in incidents if i["severity"] in ("error", "critical")
              and i["category"] not in _NOT_HOST_FAULTS and i.get("status") != "superseded"
              and i["initiator"].get("host")]
    if not faults:
        return incidents
    for inc in incidents:
        hang = inc["category"] == "nccl_hang" and inc["confidence"] < 0.5
        if not (hang or inc.get("pattern") == "comm.slow_checkpoint"):
            continue
        start, mine = iso_us(inc["start"]), set(inc.get("clocks") or ())
        job = placed(inc["communicators"]) if placed is not None and inc.get("communicators") else None
        # by distance, time and id: two faults at one instant compared their dicts (a TypeError that stopped diagnose
        # and every streaming step: a break-it pass)
        near = sorted(((abs(t - start), t, i["id"], i) for t, i in faults
                       if abs(t - start) <= near_us and i["initiator"]["host"] not in mine
                       and (job is None or i["initiator"]["host"] in job)), key=lambda x: x[:3])
        said = [f"whether {i['initiator']['host']} ran a rank of this job: its {i['category']} incident {i['id']} "
                f"({i['severity']}) began {abs(t - start) / S:.1f} s {'before' if t <= start else 'after'} the "
                "timeout's implied start (NCCL_DEBUG=INFO's Init COMPLETE lines tie each rank to its host)"
                for _, t, _id, i in near[:3]]
        if said:
            inc["missing"] = list(inc.get("missing") or []) + said
            # the nearest said where the reader looks first: it was a last `missing` line under a row of "? (no single
            # culprit)" (a fresh user's second trial); a new string, the cached body's left as it was
            d, t, _id, first = near[0]
            host = first["initiator"]["host"]
            if inc.get("explanation"):
                inc["explanation"] = (f"{inc['explanation']} {host}'s {first['category']} incident {first['id']} "
                                      f"({first['severity']}) began {d / S:.1f} s {'before' if t <= start else 'after'}"
                                      f" this collective's start: if {host} ran a rank of this job, it is the likely "
                                      "first fault.")
            if inc.get("next_action"):
                inc["next_action"] = (f"First find whether {host} ran a rank of this job (its {first['category']} "
                                      f"incident {first['id']}); then: {inc['next_action']}")
    return incidents


def name_faults_after_reports(incidents: list[dict[str, Any]], near_us: int = NEAR_HANG_US) -> list[dict[str, Any]]:
    """``incidents`` (DESIGN.md shape), each whose initiator is a rank's NCCL report (an error, a watchdog timeout:
    nothing in its scene explained it) given, in ``missing`` and its explanation, the nearest error or critical
    incident of another host of the same communicator (its ``communicators``) that began within ``near_us`` (µs)
    after it: a rank's NET/IB error 6 s before its peer's GPU fell off the bus, past both hosts' skew bounds, was an
    ``ib_port`` incident of its own that said nothing of the fall (a break-it pass). If the reporting host's clock
    ran ahead by more than its bound, that fault is the first. A new list is set, never the cached one changed."""
    faults = [(iso_us(i["start"]), i) for i in incidents if i["severity"] in ("error", "critical")
              and i["category"] not in _NOT_HOST_FAULTS and i.get("status") != "superseded"
              and i["initiator"].get("host") and i["initiator"].get("kind") not in RANK_REPORTS]
    for inc in incidents:
        host, comms = inc["initiator"].get("host"), set(inc.get("communicators") or ())
        if inc["initiator"].get("kind") not in RANK_REPORTS or not host or not comms:
            continue
        start = iso_us(inc["start"])
        later = sorted(((t - start, i["id"], i) for t, i in faults
                        if start < t <= start + near_us and i["initiator"]["host"] != host
                        and comms & set(i.get("communicators") or ())), key=lambda x: x[:2])
        if not later:
            continue
        d, _id, first = later[0]
        other = first["initiator"]["host"]
        said = (f"the {first['category']} incident {first['id']} ({first['severity']}) of {other}, a host of the "
                f"same communicator, began {d / S:.1f} s after it")
        inc["missing"] = list(inc.get("missing") or []) + [
            f"clock-skew bounds for {host}, {other} (NTP/PTP state): {said}, more than their bounds allow"]
        if inc.get("explanation"):
            inc["explanation"] = (f"{inc['explanation']} T{said[1:]}: if {host}'s clock ran ahead by more than its "
                                  "skew bound, that is the first fault and this a report of it.")
    return incidents


#: how far apart (µs, beyond both hosts' clock-skew bounds) two hosts' NIC port faults began to be named as one
#: moment of the fabric (:func:`name_port_faults_together`): a switch that reboots or a subnet manager that sweeps
#: drops its ports within a second, and each host's NCCL and kernel print it within a second or two of that
NEAR_PORT_US = 10 * S
#: the severities a NIC port incident has that another host's is named beside
_PORT_SEVERITIES = frozenset({"warning", "error", "critical"})
#: the pattern of a port that went down once and came back within a minute (``patterns.port_recovered``)
PORT_RECOVERED = "benign.port_recovered"
#: the lines that say a NIC port's link dropped or changed state (ingest/signatures/ib.yaml): what a switch or the
#: subnet manager does to several hosts' ports at once. Not a NIC's own fault of kind ``ib_port`` (its slot's power,
#: its driver's load, its firmware's health, an AWS ENA reset), which several hosts that boot or run alike print in
#: one second with no switch between them
PORT_LINK_SIGNATURES = frozenset({"ib.mlx5_link", "ib.port_state", "ib.bond_slave_down"})
#: NCCL's "NET/IB : Got async event : <ibv_event_type_str>" of a port's link (IBV_EVENT_PORT_ERR), not the HCA's own
#: "local catastrophic error" nor a queue pair's
NCCL_PORT_EVENT = ("nccl.net_ib.async_event", "port error")


def port_link_line(e: Ev) -> bool:
    """``e`` says a NIC port's link dropped or changed state (``PORT_LINK_SIGNATURES``, NCCL's async "port error")."""
    return e.signature in PORT_LINK_SIGNATURES or (
        e.signature == NCCL_PORT_EVENT[0] and str(e.details.get("ib_event") or "").lower() == NCCL_PORT_EVENT[1])


def _port_fault(i: dict[str, Any], links: Container[str] | None = None) -> bool:
    """``i`` (DESIGN.md incident shape) is a NIC's InfiniBand/RoCE port fault of warning or above, or a port that went
    down and came back (info), not superseded; with ``links`` (event ids of :func:`port_link_line` lines), one whose
    initiator logged such a line."""
    init = i["initiator"]
    return (i["category"] == "ib_port" and init.get("device_type") == "nic" and init.get("host") is not None
            and (i["severity"] in _PORT_SEVERITIES or i.get("pattern") == PORT_RECOVERED)
            and i.get("status") != "superseded"
            and (links is None or any(x in links for x in init.get("events") or ())))


def _skew_s(i: dict[str, Any]) -> float:
    """The clock-skew bound (s) of an incident's initiator host, from its ``clocks``; 0 when not given."""
    c = (i.get("clocks") or {}).get(i["initiator"]["host"]) or {}
    return float(c.get("skew_bound_s") or 0.0)


def name_port_faults_together(incidents: list[dict[str, Any]], near_us: int = NEAR_PORT_US,
                              links: Container[str] | None = None) -> list[dict[str, Any]]:
    """``incidents`` (DESIGN.md shape), each NIC port incident (category ``ib_port``, initiator a ``nic``, warning
    or above, or a port back within a minute) that began within ``near_us`` (µs, plus both hosts' clock-skew bounds)
    of another host's named beside it: in its explanation the other hosts and incidents (up to three, nearest first),
    and its next action led by what those hosts share (a port that came back keeps its severity, info, and says
    there is nothing to do on its host). Each such incident blamed its own host's port and cable, while NCCL's
    "NET/IB : Got async event : port error" on several nodes at once pointed at the fabric: its maintainer asked for
    the IB fabric to be checked (``ibqueryerrors``, UFM counters; NVIDIA/nccl#905, a real-logs pass). The initiators
    stay: which switch a port is cabled to is not in the logs. ``links``: the event ids of lines that say a port's link
    dropped (:func:`port_link_line`); an incident whose initiator logged none is no port of the fabric (two hosts'
    "Detected insufficient power on the PCIe slot" at one boot, two AWS instances' ENA resets, were told to check
    the switch they share and the subnet manager: a break-it pass); None: every NIC fault of kind ``ib_port``. A new
    dict is set for each incident changed, never the cached one."""
    ports = [(iso_us(i["start"]), i) for i in incidents if _port_fault(i, links)]
    if len(ports) < 2:
        return incidents
    is_port = {id(i) for _, i in ports}
    out = []
    for inc in incidents:
        if id(inc) not in is_port:
            out.append(inc)
            continue
        start, host = iso_us(inc["start"]), inc["initiator"]["host"]
        near = sorted(((abs(t - start), t, i["id"], i) for t, i in ports if i["initiator"]["host"] != host
                       and abs(t - start) <= near_us + (_skew_s(inc) + _skew_s(i)) * S), key=lambda x: x[:3])
        if not near:
            out.append(inc)
            continue
        hosts = list(dict.fromkeys(i["initiator"]["host"] for *_, i in near))
        # a pair farther apart than near_us by their clocks is named for their skew bounds: said so ("within 10 s …
        # 60.0 s after" read as a contradiction: a break-it pass)
        said = ", ".join(f"{i['initiator']['host']}'s {i['id']}, {d / S:.1f} s {'before' if t <= start else 'after'}"
                         + (f" by clocks that may be off by {_skew_s(inc) + _skew_s(i):g} s" if d > near_us else "")
                         for d, t, _id, i in near[:3])
        them = f"{', '.join([host, *hosts[:3]])}{' and others' if len(hosts) > 3 else ''}"
        inc = dict(inc)
        if inc.get("pattern") == PORT_RECOVERED:
            # a port back within a minute is no fault of its host, but not a link negotiating either when other hosts'
            # ports dropped with it: 20+ servers' "mlx5_eth0: Port: 1 Link DOWN" in one second, every server-facing
            # port of one switch (mymdbook.github.io/xai_link_flap, a real-logs pass: each "No action", "not a
            # flapping port"). Info still: the hosts have nothing to do
            inc["explanation"] = (f"The NIC port of {host} went down and came up again, as ports of {len(hosts)} other "
                                  f"host(s) did within {near_us / S:g} s ({said}): a switch, its power or firmware, "
                                  "or the subnet manager dropped them together — not this host's cable, nor a link "
                                  "negotiating.")
            inc["next_action"] = (f"Nothing to do on {host}: its port came back. Check the switch that the ports of "
                                  f"{them} share and the subnet manager's log for that moment (opensm or UFM; "
                                  "`ibqueryerrors`); if it repeats, take it to the switch's owner.")
            out.append(inc)
            continue
        inc["explanation"] = (f"{inc['explanation']} NIC port faults of {len(hosts)} other host(s) began within "
                              f"{near_us / S:g} s of it ({said}): ports of several hosts failing together point at "
                              "what they share — a switch, its power or firmware, or the subnet manager — more than at "
                              "each host's cable.")
        inc["next_action"] = (f"Ports of {them} failed at the same moment: check the switch they share and the subnet "
                              "manager's log (opensm or UFM; `ibqueryerrors`, `ibdiagnet` over the fabric) first; "
                              f"then: {inc['next_action']}")
        out.append(inc)
    return out


def _host_latest(evs: list[Ev]) -> dict[str, int]:
    """host -> the latest time (``Ev.ts``, µs) of its events in ``evs``: what ``incident.finish`` and an incident's
    ``clocks`` read of a scene's events, kept with its cached attribution (``AttributionCache``; ``ts`` is fixed once
    an event is built, only its start moves)."""
    out: dict[str, int] = {}
    for e in evs:
        t = out.get(e.host)
        if t is None or e.ts > t:
            out[e.host] = e.ts
    return out


def _dedup(evs: list[Ev]) -> list[Ev]:
    """One event per event_id (a replay may deliver a line twice)."""
    seen: set[str] = set()
    out = []
    for e in evs:
        if e.event_id not in seen:
            seen.add(e.event_id)
            out.append(e)
    return out
