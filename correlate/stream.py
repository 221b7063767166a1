"""Streaming correlation: event-time windows with a watermark and allowed lateness.

Events arrive in batches, in any order. The correlator keeps the events that
can still matter, and after each batch re-correlates them:

* an incident is **emitted** when its group is closed: the watermark of
  *each of its hosts* (``correlate.window.Watermark``, one per host, as stream
  processors keep one per input partition, so a host whose logs run ahead does
  not close the windows of a host still catching up) has passed its last event
  by the close window (a host whose lines print no time, timed by their
  arrival, has processing time for its watermark); or none of its hosts has
  sent anything for ``idle_us`` of processing time (a crashed host logs
  nothing more); or the input ended (``flush``);
* an incident whose evidence keeps coming with no quiet gap (a link-down state
  a poller reports every 30 s, an Xid a failing GPU prints every minute) is
  emitted **early**, status ``open``, once its evidence has gone on for
  ``early_after_us`` of event time since a step first held it back, and again
  per ``early_after_us`` of new evidence while it stays open: a fault that
  persists is paged while it lasts, not once it stops (Beam's and Flink's
  early firings); evidence that arrives at once, however long it spans, waits
  for the close window as before;
* when later evidence changes an emitted incident, it is emitted again with
  ``version + 1`` (same id) — not for new clock estimates alone (``clocks``),
  but at the flush;
* when late evidence changes which event comes first, the incident's id (made
  from its first event) changes: the old id gets a last version with status
  ``superseded`` and ``superseded_by``, so nothing stays open by mistake;
* an event older than its host's watermark minus the allowed lateness is too late
  to change incidents: it is counted in ``late_events`` (the lake still has it);
  that watermark is the one of the host's events from the same raw partition
  through the same events-topic partition (``add``), the only order Kafka keeps;
* events are forgotten once older than their host's watermark minus the
  lateness and the longest link window (capped at an hour); all but the
  faults and the kinds a longer link reaches (Fabric Manager state, ECC
  counts), once their host has sent nothing for that long of processing
  time (its watermark stands still while it is quiet);
* the events of an emitted incident that holds a fault go **cold** instead of
  being forgotten: kept aside, not correlated, until a new event may be
  related to them — a watchdog timeout whose collective began hours ago, at
  the fault (a 2 h NCCL timeout) — and then correlated again with their
  incident, for ``reach_back_us`` (24 h) of their host's watermark.

Whatever the arrival order, once the input has ended (``flush``) the latest
versions that are not superseded equal the batch correlator's incidents on
the same events (same ids, same content but ``version``/``status``).
"""

from __future__ import annotations

import hashlib
import math
from bisect import bisect_left
from dataclasses import dataclass, field
from typing import Any, Iterable

import orjson
import pyarrow as pa
import pyarrow.compute as pc

from correlate.attribute import is_fault
from correlate.cluster import FACT_KINDS
from correlate.correlator import AttributionCache, Settings, correlate
from correlate.incident import current_until, incident_hosts, member_ids
from correlate.model import AHEAD_MAX_US, Ev, events_from_table
from correlate.rules import Rules, default_rules
from correlate.topology import (HANDOVER_MARGIN_US, UNORDERED_BASES, Topology, build_topology, line_addr, line_gpu,
                                line_facts, rank_membership, teaches_topology)
from correlate.window import SKEW_CAP_US, AppendDelays, Watermark, closes
from ingest.catalog import Catalog, default_catalog
from ingest.gcpause import gc_paused
from schemas.incidents import iso_us

S = 1_000_000
# a new version is emitted when anything but the version number and the per-host clock estimates changes — the
# status too, so an incident that went quiet (open -> resolved) is emitted again when the service's clock ticks.
# The clock estimates (``clocks``: skew bound, offset) move a little with nearly every batch of the fleet's
# events; alone they made most versions (246 of 316 in 20 random scenarios). A version carries the estimates of
# its step, and a flushed step emits those whose estimates alone changed (the batch correlator's then)
_VOLATILE = ("version", "clocks")
#: time bases that are the host's own event time; "kafka"/"file" stand in for lines that printed none
EVENT_TIME_BASES = frozenset({"line", "monotonic+boot", "envelope", "inherited"})


def _content_hash(inc: dict[str, Any]) -> str:
    body = {k: v for k, v in inc.items() if k not in _VOLATILE}
    return hashlib.blake2b(orjson.dumps(body, option=orjson.OPT_SORT_KEYS), digest_size=16).hexdigest()


def _stored(inc: dict[str, Any]) -> tuple[int, str, dict[str, Any]]:
    """A stored incident version as ``StreamCorrelator.emitted`` holds it: (version, content hash, incident)."""
    return int(inc.get("version", 1)), _content_hash(inc), inc


#: ``StreamCorrelator.retired`` keeps at most this many forgotten incidents, the oldest dropped first: one entry each
#: (its version, hash, clocks and event ids) for the life of a service that runs for weeks; past it, a replay of a
#: topic older than the last 100,000 forgotten incidents stores them as version 1 again
RETIRED_MAX = 100_000


@dataclass
class StreamCorrelator:
    """See module doc. ``close_after_us``: quiet time after the last event before an incident is emitted;
    ``early_after_us``: how long (event time) the evidence of an incident held back, not closed, may go on
    before it is emitted anyway (None: never early)."""

    settings: Settings = field(default_factory=Settings)
    lateness_us: int = 300 * S
    close_after_us: int = 120 * S
    early_after_us: int | None = 300 * S
    idle_us: int = 120 * S
    rules: Rules = field(default_factory=default_rules)
    watermark: Watermark = field(default_factory=Watermark)
    #: per host: what its windows close by (``_closed``, ``_horizons``); forgotten with its ``heard_us``
    #: (``_forget_hosts``): a host quiet past the events kept that holds nothing
    host_watermarks: dict[str, Watermark] = field(default_factory=dict)
    #: per (host, input source, raw partition): what lateness is judged against (``add``); forgotten with the host's
    #: ``heard_us`` (``_forget_hosts``)
    source_watermarks: dict[tuple[str, str | None, str | None], Watermark] = field(default_factory=dict)
    #: processing time at which each host's latest event that its own time dates arrived (``EVENT_TIME_BASES``);
    #: forgotten with the host's ``heard_us`` (``_forget_hosts``)
    arrived_us: dict[str, int] = field(default_factory=dict)
    #: processing time at which each host's latest event of any time basis arrived (``add`` with ``now_us``):
    #: a host quiet for longer than the events are kept holds none back (``_prune``). A host quiet that long that
    #: holds nothing any more is forgotten here and in ``appended_us`` when its events are (``_prune``): a fleet
    #: whose hosts come and go does not grow them for ever
    heard_us: dict[str, int] = field(default_factory=dict)
    #: per host, the latest time (µs) of its lines that printed none (``ts``: their Kafka append or file time), read
    #: live (``add`` with ``now_us``): with ``heard_us``, how far behind processing time the log of a host with no
    #: event-time watermark stands (``_unread_us``); forgotten with the host's ``heard_us``
    appended_us: dict[str, int] = field(default_factory=dict)
    events: dict[str, Ev] = field(default_factory=dict)
    #: event_id -> an event of an emitted incident that holds a fault, older than the events kept (``_prune``):
    #: not correlated again until a new event reaches back to it (``_revive``: a watchdog timeout whose
    #: collective began hours ago, at the fault), then brought back with its incident; forgotten once older
    #: than its host's watermark by ``reach_back_us``
    cold: dict[str, Ev] = field(default_factory=dict, repr=False)
    #: how far back of its host's watermark a new event may still find an old fault (µs): the longest NCCL
    #: timeout the stream joins to the fault that caused it (PyTorch's ``timeout`` may be set to hours)
    reach_back_us: int = 24 * 3600 * S
    #: ids of the events added since the last step: only they can reach an event gone cold
    fresh: list[str] = field(default_factory=list, repr=False)
    #: ids of cold events that came again (a correlate worker's replay) or were read back beside a held event of
    #: their incident (``add_cold``): the next step brings their incidents back (``_revive``)
    returned: set[str] = field(default_factory=set, repr=False)
    #: ids of the cold events the last ``_revive`` brought back because a new membership line (``rank_membership``)
    #: named their GPU: their incidents may name its rank now, so they are emitted again when they changed (``step``)
    retaught: set[str] = field(default_factory=set, repr=False)
    #: stored incidents a correlate worker has yet to read back from the lake (``restore(read_back=True)``,
    #: ``to_read_back``): incident id -> (its hosts that have sent nothing through the worker yet, the incident;
    #: ``emitted`` forgets a stored incident at the first step that holds none of its events)
    unread: dict[str, tuple[set[str], dict[str, Any]]] = field(default_factory=dict, repr=False)
    #: the same incidents by host (until the host is heard from) and by event id
    unread_by_host: dict[str, list[str]] = field(default_factory=dict, repr=False)
    unread_by_event: dict[str, str] = field(default_factory=dict, repr=False)
    #: stored incidents ``to_read_back`` handed out whose events the lake could not give (``read_back_failed``):
    #: the next ``to_read_back`` hands them out again
    read_back_again: list[dict[str, Any]] = field(default_factory=list, repr=False)
    #: event_id -> the newest membership line of a rank (``topology.rank_membership``) older than the events kept,
    #: while its communicator holds the rank's GPU (``_prune``): it teaches the topology, is not correlated again
    wiring: dict[str, Ev] = field(default_factory=dict)
    #: the same lines by (communicator, rank) (``topology.rank_membership``)
    wiring_ranks: dict[tuple[str, int], Ev] = field(default_factory=dict, repr=False)
    #: (host, GPU UUID) -> the newest line that gave the UUID a bus id or index (``topology.line_facts``): in
    #: ``wiring`` once older than the events kept, as the device plugin names a GPU by its UUID days after the
    #: driver's preamble did (a break-it pass: the mapping went with the Xid that carried it); at most
    #: ``MAX_UUID_LINES``, the newest (``_prune``)
    uuid_lines: dict[tuple[str, str], Ev] = field(default_factory=dict, repr=False)
    #: (host, address) -> the newest ``nccl.bootstrap`` line that gave the host that address (``topology.line_addr``):
    #: in ``wiring`` once older than the events kept, as a rank names its lost peer by that address hours after the
    #: job's start; at most ``MAX_ADDR_LINES``, the newest
    addr_lines: dict[tuple[str, str], Ev] = field(default_factory=dict, repr=False)
    #: (host, GPU UUID) -> the GPUs lines gave it (``_teaches``); of the keys of ``uuid_lines``
    uuid_gpus: dict[tuple[str, str], set[str | None]] = field(default_factory=dict, repr=False)
    #: event_id -> its (communicator, rank) or None, for the kept events the topology learns from
    #: (``topology.teaches_topology``), in the order of ``events``: read once, when they arrive
    teaching: dict[str, tuple[str, int] | None] = field(default_factory=dict, repr=False)
    #: ids of the kept events ``Topology.learn_events`` learns anything from (``topology.teaches_topology``, read
    #: once, when they arrive or come back): ``_learn`` hands it those alone, not every kept event
    topo_lines: set[str] = field(default_factory=set, repr=False)
    samples: list[pa.Table] = field(default_factory=list)
    topology: list[pa.Table] = field(default_factory=list)
    emitted: dict[str, tuple[int, str, dict[str, Any]]] = field(default_factory=dict)
    #: incident id -> (its last version, content hash, ``clocks``, event ids) of the incidents ``_prune`` forgot
    #: from ``emitted`` (none of their events kept): the same events read again (a new consumer group, offsets
    #: reset, a backlog older than ``reach_back_us`` replayed after a restart) form the same incident, which is no
    #: new version of it, and part of them no version at all; a changed one is the next version, not version 1
    #: again (a break-it pass: ``firstfault run`` over topics it had read stored every incident again as version 1,
    #: behind a version 2, and showed that version 1 as current)
    retired: dict[str, tuple[int, str, Any, frozenset[str]]] = field(default_factory=dict, repr=False)  # RETIRED_MAX
    #: ids of the stored incidents ``restore`` gave that this stream has not emitted a version of since: like a
    #: retired one, one formed again from part of its stored version's events is no version (a replay whose first
    #: batches held some of its events kept it in ``emitted``, and its part was stored as the next version)
    restored: set[str] = field(default_factory=set, repr=False)
    late_events: int = 0
    #: events whose line time lay further ahead of their Kafka append time than any clock is let be
    #: (``future_us``): correlated, but moving their host's watermarks only to that append time (``add``)
    future_events: int = 0
    #: incident id -> the time (µs) of its latest event when a step first held it back, not closed, or when a step
    #: emitted it early: its evidence has gone on since then without a quiet gap (``early_after_us``)
    held_since: dict[str, int] = field(default_factory=dict, repr=False)
    #: the append delays of every event given since the start, forgotten and late ones too, and after a restart of
    #: every stored event (``restore``): the clock estimates are read from them (``window.AppendDelays``), as the
    #: batch correlator reads them from every event
    delays: AppendDelays = field(default_factory=AppendDelays, repr=False)
    #: attributions of the last step's candidate incidents, reused when unchanged (``correlator.AttributionCache``)
    cache: AttributionCache = field(default_factory=AttributionCache)
    #: key columns (``SAMPLE_KEY``, ``FACT_KEY``) -> the table the last reduction of ``samples`` / ``topology`` gave
    #: (``_reduce``): already the newest row of each key
    reduced: dict[tuple[str, ...], pa.Table] = field(default_factory=dict, repr=False)
    #: incident id -> (a stored version of it, its ``member_ids``) (``_members``); of the incidents in ``emitted``
    members: dict[str, tuple[dict[str, Any], list[str]]] = field(default_factory=dict, repr=False)
    #: the last step's topology and what it was learned from (``_learn``)
    learned: tuple[tuple, Topology] | None = field(default=None, repr=False)
    #: (the processing time ``now_us`` of the last step, µs; the latest ``now_us`` until which a step would give what
    #: it gave, µs, None for no limit) when that step changed nothing it keeps — it emitted nothing, brought nothing
    #: back from ``cold``, forgot nothing and moved no incident's ``held_since`` — so that the next step, on the
    #: same kept state, would change nothing either until a time passes: the first ``open`` incident's quiet
    #: (``correlator.AttributionCache.open_until_us``), a held incident's hosts' ``idle_us`` or its hosts with no
    #: watermark past its last line by ``close_after_us`` (``_closed``), or a host's quiet that ``_prune`` forgets
    #: its events after (``heard_us``). Such a step is skipped (``step``: a consumer's poll that brought nothing
    #: re-correlated every kept event, ~80 ms over ~7,000). None: the next step correlates. Cleared by whatever
    #: changes the kept state: ``add``, ``restore``, ``add_cold``, ``add_older_facts``, and by a step that changed
    #: any of it or a flushed one
    steady: tuple[int, int | None] | None = field(default=None, repr=False)

    @gc_paused()  # an Ev per event, no cycles: ingest.gcpause
    def add(self, events: pa.Table, samples: pa.Table | None = None, topology: pa.Table | None = None,
            now_us: int | None = None, source: str | None = None) -> int:
        """Take a batch (arrived at processing time ``now_us``) from the input ``source`` (a partition of the
        events topic, ``topic/partition``; None for one ordered input); return how many of its events were
        too late to use.

        Lateness is judged within one ordered stream of a host's events: those that came through the same
        ``source`` from the same raw partition (the ``kafka:<topic>/<partition>`` of their ``origin``). Kafka
        keeps order only within a partition, and one host's events travel in several: its kernel and NCCL
        lines in different raw topics, and on the events topic keyed by host, NVLink domain or communicator.
        A consumer reads partitions at its own pace (all of one before the next when it replays after a
        rebalance), so a host's watermark taken over all of them would call its lines in the slower
        partition late."""
        self.steady = None
        late = 0
        evs = events_from_table(events)
        streams = [(e.host, source, _raw_partition(e.origin)) for e in evs]
        for e, key in zip(evs, streams):
            # its delay says its host's clock, late or not: the batch correlator reads it (``delays``; a line seen
            # again is one line). A host whose lines came late read no clock at the flush, the batch one of 19 s
            self.delays.observe(e)
            if e.event_id in self.events:  # held already (an at-least-once redelivery): nothing new, and not late
                # (a replay of what the stream held was counted in late_events, /healthz's: a break-it pass)
                continue
            hw = self.source_watermarks.get(key)
            # lateness is about when the line was written (a watchdog timeout printed now is on time, though
            # the collective it reports began ten minutes ago)
            if hw is not None and hw.too_late(e.ts, self.lateness_us, self.settings.clocks) and (
                    is_fault(e, default_catalog()) or not teaches_topology(e)):
                # a fact of the topology (NCCL's Init COMPLETE of a rank, a bootstrap address) is no evidence: late,
                # it still teaches the steps after it which communicator a rank is of (a job's init lines in a later
                # batch than its faults were dropped, and its timeout joined another job's Xid 79: a break-it pass)
                late += 1
                continue
            if e.event_id in self.cold:  # came again (a replay): its incident comes back whole (``_revive``)
                self.returned.add(e.event_id)
                self.fresh.append(e.event_id)
            else:
                self.events[e.event_id] = e
                self.fresh.append(e.event_id)
                if self._teaches(e):
                    self.teaching[e.event_id] = rank_membership(e)
                if teaches_topology(e):
                    self.topo_lines.add(e.event_id)
        ahead = self.future_us()
        for e, key in zip(evs, streams):
            if now_us is not None:
                self.heard_us[e.host] = max(self.heard_us.get(e.host, 0), now_us)
            if e.ts_basis not in EVENT_TIME_BASES:
                # an arrival time (Kafka, file) says nothing about how far the host's stamped log has got; read
                # later than it, it says how far behind its unstamped one is (``_unread_us``)
                if now_us is not None:
                    self.appended_us[e.host] = max(self.appended_us.get(e.host, e.ts), e.ts)
                continue
            ts = e.ts
            if e.ingest_ts is not None and ts > e.ingest_ts + ahead:
                # a line stamped 2099 (a garbled stamp, a clock set wrong) moved its host's watermark there: every
                # later line of the host was too late, and no incident of the host was ever made (a break-it pass).
                # It moves them as if written when it arrived: a host whose clock runs an hour fast closes its
                # windows by the quiet of its input (idle_us), not at once
                self.future_events += 1
                ts = e.ingest_ts
            self.watermark.observe(ts)
            self.host_watermarks.setdefault(e.host, Watermark()).observe(ts)
            self.source_watermarks.setdefault(key, Watermark()).observe(ts)
            if now_us is not None:
                self.arrived_us[e.host] = max(self.arrived_us.get(e.host, 0), now_us)
        if samples is not None and samples.num_rows:
            self.samples.append(samples)
        if topology is not None and topology.num_rows:
            self.topology.append(topology)
        self.late_events += late
        return late

    def future_us(self) -> int:
        """How far (µs) a line's time may lie ahead of its Kafka append time and still move its host's watermarks:
        the allowed lateness beyond the largest clock skew bound (``window.SKEW_CAP_US`` or the largest
        configured). Past it the clock or the stamp is wrong, not skewed."""
        return self.lateness_us + max(SKEW_CAP_US, self.settings.clocks.max_skew())

    def restore(self, incidents: list[dict[str, Any]], events: pa.Table | None = None,
                read_back: bool = False, delays: AppendDelays | None = None) -> None:
        """Continue after a restart: the latest stored version of each incident (so versions keep
        counting up), the recent stored events (so open windows are whole again) and ``delays``, the summary of
        the append delays of every stored event (``window.AppendDelays``, ``api.sink.IncidentSink.append_delays``;
        None: of ``events`` alone), so that the clocks read are those the stream read before the restart and the
        batch correlator reads over the lake — of the recent events alone a host whose fastest lines came before
        them read a looser bound, and the fleet's delay moved with it. ``events`` add nothing to it (the summary is
        of the set of lines: they are stored events too; a correlate worker gives none, and merges in each host's
        summary from the lake when its replay first brings the host: ``consumer.CorrelateWorker._read_facts``).
        The events of a stored
        incident that holds a fault, all older than the events are kept by, go cold at once (as ``_prune``
        would have left them): they are not correlated again, and their incident not emitted again, unless a
        new event reaches them (``_revive``).

        ``read_back``: a correlate worker's start, which rebuilds its open windows by replaying its partitions
        and has no ``events`` but membership lines. The stored incidents not superseded that ended, or whose
        ``scheduled`` time lies (``incident.current_until``: a maintenance notice's NotBefore), within
        ``reach_back_us`` of the newest stored incident of one of their hosts (each host by its own clock: one
        host whose clock runs a day ahead does not put the others' out of reach) are read back later, by host,
        as the worker's partitions show it which hosts are its own (``to_read_back``, ``add_cold``)."""
        self.steady = None
        if delays is not None:
            self.delays = delays
        for inc in incidents:
            self.emitted[inc["id"]] = _stored(inc)
        self.restored.update(inc["id"] for inc in incidents)
        live = [inc for inc in incidents if inc.get("status") != "superseded"]
        if read_back and live:
            hosts_of = [(inc, incident_hosts(inc), iso_us(inc["end"])) for inc in live]
            newest: dict[str, int] = {}  # host -> the end of its newest stored incident
            for _inc, hosts, end in hosts_of:
                for h in hosts:
                    newest[h] = max(newest.get(h, end), end)
            for inc, hosts, end in hosts_of:
                # until what it announces happens, for a notice (``current_until``: a maintenance's NotBefore days
                # ahead; by its ``end`` alone, a restart a day after its line forgot it, and its peers' resets at
                # that time made an incident of their own: a defect pass). Not the host's newest: a time ahead
                # would put the host's other incidents out of reach
                if hosts and current_until(inc) >= min(newest[h] for h in hosts) - self.reach_back_us:
                    self.unread[inc["id"]] = (hosts, inc)
                    for h in hosts:
                        self.unread_by_host.setdefault(h, []).append(inc["id"])
                    self.unread_by_event.update((m, inc["id"]) for m in member_ids(inc))
        if events is None or not events.num_rows:
            return
        self.add(events)
        keep, horizon = self._keep_us(), self._horizons()
        self._cool({k for k, e in self.events.items() if e.host not in horizon or e.ts >= horizon[e.host] - keep},
                   default_catalog())
        for k in self.cold.keys() & self.events.keys():
            del self.events[k]
            self.teaching.pop(k, None)
            self.topo_lines.discard(k)
        self.fresh = [k for k in self.fresh if k in self.events]

    def to_read_back(self) -> list[dict[str, Any]]:
        """The stored incidents (``restore(read_back=True)``) whose events a correlate worker reads back from the
        lake now and hands to ``add_cold``: those each of whose hosts has sent an event through the worker since
        (``heard_us``: its partitions carry those hosts' events), and those one of whose events came again (a
        replay, ``fresh``). An incident whose hosts are split between workers is read back by none until one
        of its events comes. Each incident once, or again after ``read_back_failed``; call it between ``add``
        and ``step``."""
        again, self.read_back_again = self.read_back_again, []
        if not self.unread:
            return again
        ready: set[str] = set()
        for h in self.unread_by_host.keys() & self.heard_us.keys():
            for iid in self.unread_by_host.pop(h):
                if iid in self.unread:
                    left = self.unread[iid][0]
                    left.discard(h)
                    if not left:
                        ready.add(iid)
        ready.update(i for k in self.fresh if (i := self.unread_by_event.get(k)) in self.unread)
        out = [self.unread.pop(iid)[1] for iid in sorted(ready)]
        if not self.unread:
            self.unread_by_host, self.unread_by_event = {}, {}
        return again + out

    def read_back_failed(self, incidents: list[dict[str, Any]]) -> None:
        """The events of ``incidents`` (``to_read_back``) could not be read from the lake (a storage error): the
        next ``to_read_back`` hands them out again. Their faults are not cold meanwhile; a step may find their
        incident again from the events it holds, as a worker without read-back would."""
        self.read_back_again.extend(incidents)

    def add_cold(self, events: pa.Table | None, incidents: list[dict[str, Any]]) -> None:
        """The events of stored ``incidents`` (``to_read_back``) read back from the lake (``EVENTS_SCHEMA``; None
        for none). Those of an incident that holds a fault go cold (as ``restore`` leaves them); an incident
        one of whose events is held (it came again) comes back whole at the next step (``returned``); the
        events of one that is neither are not kept."""
        self.steady = None
        if events is None or not events.num_rows:
            return
        by_id = {e.event_id: e for e in events_from_table(events)}
        catalog = default_catalog()
        for inc in incidents:
            # its stored version again, unless a step made a newer one meanwhile
            self.emitted.setdefault(inc["id"], _stored(inc))
            ids = member_ids(inc)
            read = [by_id[m] for m in ids if m in by_id and m not in self.events and m not in self.cold]
            if any(m in self.events for m in ids):
                self.cold.update((e.event_id, e) for e in read)
                self.returned.update(e.event_id for e in read)
            elif any(is_fault(e, catalog) for e in read):
                self.cold.update((e.event_id, e) for e in read)
            else:
                continue
            for e in read:  # read from the lake now, held since: their delays are the stream's (``delays``)
                self.delays.observe(e)

    def add_older_facts(self, samples: pa.Table | None, topology: pa.Table | None) -> None:
        """Link samples and topology facts read back from the lake for hosts a correlate worker has just begun to
        see (``api.sink.IncidentSink.host_facts``; ``schemas.samples`` schemas, None for none): what the single
        process learned before the worker's replay starts (a ``topo -m`` at boot, a link state sampled an hour ago).
        They go before the rows the stream holds, so of a link or fact the stream has a row of, its own stays the
        newest (the last of its key: ``_latest``), as the replay has it; the others fill in. Kept and bounded as
        the stream's own (the newest row of each key, at the next ``step``)."""
        self.steady = None
        if samples is not None and samples.num_rows:
            self.samples.insert(0, samples)
        if topology is not None and topology.num_rows:
            self.topology.insert(0, topology)

    def _window_us(self) -> int:
        """The longest link window, capped at an hour (µs)."""
        return min(max(int(l.window_s * S) for l in self.rules.links), 3600 * S)

    def _keep_us(self) -> int:
        """How long before its host's watermark an event is kept (µs): the allowed lateness and the longest
        link window, capped at an hour (``_prune``)."""
        return self.lateness_us + self._window_us()

    def _horizons(self) -> dict[str, int]:
        """Each host's watermark (µs)."""
        return {h: wm.value(self.settings.clocks) for h, wm in self.host_watermarks.items()}

    def _kind_windows(self) -> dict[str, int]:
        """kind -> the longest window (µs) of the links that name it (``rules.yaml`` ``links[].kinds``: an ECC
        count, Fabric Manager state: a day)."""
        out: dict[str, int] = {}
        for l in self.rules.links:
            for k in l.kinds or ():
                out[k] = max(out.get(k, 0), int(l.window_s * S))
        return out

    def _cool(self, kept: set[str], catalog: Catalog) -> None:
        """Of the emitted incidents that are not superseded: one any of whose events is ``kept`` is kept whole
        (``kept`` grows); the events of one none of whose events is kept go cold (``cold``) if it holds a fault.
        Events stay in ``events``: the caller drops them."""
        going_cold = []
        for _ver, _h, inc in self.emitted.values():
            if inc.get("status") != "superseded":
                ids = [m for m in self._members(inc) if m in self.events]
                if not kept.isdisjoint(ids):
                    kept.update(ids)
                elif any(is_fault(self.events[m], catalog) for m in ids):
                    going_cold.append(ids)
        self.cold.update((m, self.events[m]) for ids in going_cold for m in ids if m not in kept)

    @gc_paused()
    def step(self, now_us: int, flush: bool = False) -> list[dict[str, Any]]:
        """Incidents that are new or changed since the last step (each with its version). A step after one that
        changed nothing, with nothing added since and ``now_us`` not before that step's nor past the time it stands
        until (``steady``), returns [] at once: it would correlate the same kept events to the same incidents."""
        if not self.events and not self.returned:
            return []
        if not flush and self.steady is not None and self.steady[0] <= now_us and (
                self.steady[1] is None or now_us <= self.steady[1]):
            return []
        self.steady = None
        samples = self._reduce(self.samples, _SAMPLE_KEY)
        topo = self._reduce(self.topology, _FACT_KEY)
        self.samples = [samples] if samples is not None else []  # bounded by the fleet, not by time
        self.topology = [topo] if topo is not None else []
        revived = self._revive(everything=flush)
        evs = list(self.events.values())
        learned = self._learn(evs, samples, topo)
        incidents = correlate(evs, samples, topo, settings=self.settings, now_us=now_us, rules=self.rules,
                              previous=[v[2] for v in self.emitted.values()], cache=self.cache, built=learned,
                              unique=True, delays=self.delays)  # ``events`` is keyed by event_id
        by_id = {e.event_id: e for e in evs}
        out = []
        pending: set[str] = set()  # events of incidents not emitted yet: kept whatever their age
        owners = self._owners()
        held: dict[str, int] = {}
        marks = self._marks()
        idle_at: list[int] = []  # when a held incident closes by time alone (``_closed``: its hosts quiet for idle_us,
        # its hosts with no watermark past its last line by close_after_us), µs
        for inc in incidents:
            members = member_ids(inc)
            if revived and revived.issuperset(members) and not flush and self.retaught.isdisjoint(members):
                # brought back for a new event that did not join it: its last version stands (made when its
                # context was whole). Not at a flush (every cold event is back, the input has ended): what the
                # stream learned since, such as the rank a later init line gave its GPU, is the batch's too
                continue
            kept = [by_id[m] for m in members if m in by_id]
            if not flush and not self._closed(kept, now_us, marks):
                # held; emitted early once its evidence went on for early_after_us since it was first held, or
                # since its last early version
                last = max((e.ts for e in kept), default=0)
                since = self.held_since.get(inc["id"], last)
                if self.early_after_us is None or not kept or last - since < self.early_after_us:
                    held[inc["id"]] = since
                    pending.update(members)
                    hosts = {e.host for e in kept}
                    if (heard := self._last_heard(hosts)) is not None:
                        idle_at.append(heard + self.idle_us)
                    # a host with no watermark closes by processing time since its last line was read (_unread_us)
                    idle_at.extend(last + self.close_after_us + self._unread_us(h) for h in hosts if h not in marks)
                    continue
                held[inc["id"]] = last
            prev = self.emitted.get(inc["id"])
            if prev and prev[2].get("communicators"):
                # the communicators an incident was of stay its own when their init lines leave the kept topology
                # (``_prune``): a version that only lost them was emitted again at later steps
                was = set(prev[2]["communicators"])
                if not was.issubset(inc.get("communicators") or ()):
                    inc = {**inc, "communicators": sorted(was.union(inc.get("communicators") or ()))}
            h = _content_hash(inc)
            gone = self.retired.get(inc["id"]) if prev is None else None
            last = (prev[0], prev[1], prev[2].get("clocks")) if prev else gone  # its last version, hash, clocks
            if last and last[1] == h and not (flush and last[2] != inc.get("clocks")):
                continue  # unchanged; or, forgotten, formed again from the same events: its stored version stands
            stored = gone[3] if gone else (frozenset(self._members(prev[2])) if prev and inc["id"] in self.restored
                                           else None)
            if stored is not None and stored > set(members):
                # formed again from part of its stored version's events (a replay under way): that version, made with
                # more evidence, stands — the part was stored as the next version and paged as an update (a break-it
                # pass: v2 of six reporters, then v3 of two, then v4 of six again)
                continue
            # its parts are the attribution cache's (incident.body): the caller gets its own copy (an incident
            # holds JSON values only, DESIGN.md; orjson copies them ~4x faster than copy.deepcopy)
            inc = orjson.loads(orjson.dumps(inc))
            inc["version"] = last[0] + 1 if last else 1
            self.retired.pop(inc["id"], None)
            self.restored.discard(inc["id"])
            if prev:  # the events its last version held and this one does not are no longer its own
                for m in self._members(prev[2]):
                    owners.get(m, set()).discard(inc["id"])
            self.emitted[inc["id"]] = (inc["version"], h, inc)
            out.append(inc)
            out.extend(self._supersede(inc, members, owners))
        still = not out and not revived and held == self.held_since
        self.held_since = held
        before = (len(self.events), len(self.cold), len(self.emitted), self.wiring)
        cooled = self._prune(learned, pending, now_us)
        if still and not flush and not cooled and before[:3] == (len(self.events), len(self.cold), len(self.emitted)) \
                and tuple(before[3]) == tuple(self.wiring):
            keep = self._keep_us()
            # a time already passed decided what it decides (``_closed``'s tests only turn true as ``now_us`` grows):
            # a mixed group's host with no watermark, past its last line, held the skip off for good
            times = [*(t for t in idle_at if t >= now_us), *(t + keep for t in self.heard_us.values()
                                                            if t + keep >= now_us)]
            if self.cache.open_until_us is not None:
                times.append(self.cache.open_until_us)
            self.steady = (now_us, min(times, default=None))
        return out

    def _reduce(self, tables: list[pa.Table], keys: tuple[str, ...]) -> pa.Table | None:
        """``_latest`` of ``tables`` (None for none); a list that is the one table a step reduced before (no rows
        came since) is that table: ``_latest`` would give it back, after a group-by over every row (a step of the
        fleet mix spent ~2 % of its CPU regrouping facts that had not changed)."""
        if not tables:
            return None
        if len(tables) == 1 and tables[0] is self.reduced.get(keys):
            return tables[0]
        out = self.reduced[keys] = _latest(tables, keys)
        return out

    def _revive(self, everything: bool = False) -> set[str]:
        """Bring back to ``events`` the cold events (``cold``) a new event (``fresh``) may be related to, with
        every other cold event of their incidents, so that an incident is correlated whole: those that began no
        earlier than the earliest new event's start minus the longest link window (capped at an hour; on the
        new event's own host, the window of a link that names its kind: a day for an ECC count), the allowed
        lateness (more than the lines' own precision) and two hosts' skew bounds at their cap
        (``window.SKEW_CAP_US``, or the largest configured). A watchdog timeout of a 2 h NCCL timeout starts
        two hours before its line (``Ev.start``): the fault its collective hung on, on a host whose log went on
        meanwhile, is found again. An incident of brought-back events alone is not emitted again (``step``).
        ``everything`` (a flushed step: the input has ended) brings every cold event back, so that a flushed
        version gets the batch's clock estimates and what was learned after it went cold (the rank of its GPU).
        Returns the ids brought back."""
        fresh = [self.events[k] for k in self.fresh if k in self.events]
        self.fresh = []
        self.retaught = set()
        returned, self.returned = self.returned, set()
        if not self.cold or not (fresh or returned or everything):
            return set()
        back = set(self.cold) if everything else self._reached(fresh, returned)
        for k in back:
            e = self.events[k] = self.cold.pop(k)
            if teaches_topology(e):
                self.teaching[k] = rank_membership(e)
                self.topo_lines.add(k)
        return back

    def _reached(self, fresh: list[Ev], returned: set[str] = frozenset()) -> set[str]:
        """The ids of the cold events the new events ``fresh`` may be related to, and the ``returned`` ones
        (``returned``), with the other cold events of their incidents (``_revive``)."""
        back = returned & self.cold.keys()
        # a membership line that names a GPU (its rank in a communicator) may give a cold incident of that GPU
        # the rank it lacked: that incident comes back, and is emitted again if it changed (a break-it pass). Only
        # an event that began no more than HANDOVER_MARGIN_US before the line (or one timed only by its file or an
        # operator): a job that started on a GPU later held no rank on it then (Topology.comm_later), and each
        # later job's init line brought the incident back without the line that had named its rank, emitting a
        # version with rank null (a second break-it pass: a version per job)
        named: dict[tuple[str, str], float] = {}
        for e in fresh:
            if rank_membership(e) and (g := line_gpu(e)):  # a line dated by an upper bound may be of any time before
                t = -math.inf if e.undated() else e.ts
                named[(e.host, g)] = min(t, named.get((e.host, g), t))
        self.retaught = {
            k for k, e in self.cold.items()
            if (t := named.get((e.host, line_gpu(e)))) is not None
            and (t <= e.start + HANDOVER_MARGIN_US or e.ts_basis in UNORDERED_BASES)} if named else set()
        back |= self.retaught
        if fresh:
            slack = self.lateness_us + 2 * max(SKEW_CAP_US, self.settings.clocks.max_skew())
            lo = min(e.start for e in fresh) - self._window_us() - slack
            # a kind a longer link reaches (an ECC count, Fabric Manager state: same host, a day) reaches that
            # far back on its own host
            far = self._kind_windows()
            far_lo: dict[str, int] = {}
            for e in fresh:
                if e.kind in far:
                    far_lo[e.host] = min(far_lo.get(e.host, e.start), e.start - far[e.kind] - slack)
            # an event placed ahead of its line (a notice's NotBefore, days ahead) only by new events near that
            # time: with no upper bound every step brought it back, and correlated its incident again, for days
            hi = max(e.start for e in fresh) + max([self._window_us(), *far.values()]) + slack
            back |= {k for k, e in self.cold.items() if (e.start <= e.ts or e.start <= hi)
                     and (e.start >= lo or e.start >= far_lo.get(e.host, e.start + 1))}
        if back:
            for _ver, _h, inc in self.emitted.values():
                ids = self._members(inc)
                if inc.get("status") != "superseded" and not back.isdisjoint(ids):
                    back.update(m for m in ids if m in self.cold)
        return back

    def _teaches(self, e: Ev) -> bool:
        """Whether ``e`` teaches the stream's topology something new (``topology.teaches_topology``, from the same
        ``line_facts``, read once): anything but a GPU UUID's bus id, or that of a UUID the stream has not seen on its
        host or saw on another GPU. Every Xid after the driver's preamble carries its GPU's UUID: counted as teaching,
        each made the step learn the topology again (``_learn``); ``uuid_lines`` keeps the newest line of each UUID."""
        addr = line_addr(e)
        if addr is not None:  # every rank of a host prints its host's address: a line teaches its time if it is newer
            last = self.addr_lines.get((e.host, addr))  # (Topology.addr_hosts keeps each host's latest)
            if last is None or e.ts >= last.ts:
                self.addr_lines[(e.host, addr)] = e
            return last is None or e.ts > last.ts
        member, index, model, u = line_facts(e)
        if u is None:
            return (member, index, model) != (None, None, None)
        last = self.uuid_lines.get((e.host, u))
        if last is None or e.ts >= last.ts:
            self.uuid_lines[(e.host, u)] = e
        gpus = self.uuid_gpus.setdefault((e.host, u), set())
        gpus.add(line_gpu(e))
        # a UUID seen on more than one GPU (a board moved, lines out of order): which line the topology takes
        # depends on their order, so each teaches (a second break-it pass: the stream kept the cached mapping)
        return member is not None or index is not None or model is not None or last is None or len(gpus) > 1

    def _learn(self, evs: list[Ev], samples: pa.Table | None, topo: pa.Table | None) -> Topology:
        """``build_topology`` of the wiring lines and the kept events ``evs``, in that order, with ``samples``,
        ``topo`` and the fleet config — the last step's topology when it would be learned from the same
        things: the same wiring lines, the same kept events that teach the topology anything (``teaching``, read
        when they arrived), in the same order, and the same sample, fact and fleet-config objects.
        A step whose new events are faults (the usual case: an Xid, a timeout) then does not relearn the
        membership of every live rank (~5 µs a line: a second a step for 200,000 ranks). Of the kept events only
        those ``learn_events`` learns anything from (``topo_lines``) are handed to it, in the same order: it skips the
        others, and read each again at every step that learned (~4 % of the fleet mix's streaming CPU)."""
        key = (tuple(self.wiring), tuple(self.teaching))
        objects = (samples, topo, self.settings.hosts)
        if (self.learned is not None and self.learned[0][0] == key
                and all(a is b for a, b in zip(self.learned[0][1], objects))):
            return self.learned[1]
        lines = self.topo_lines
        learned = build_topology([*self.wiring.values(), *(e for e in evs if e.event_id in lines)], samples, topo,
                                 self.settings.hosts)
        self.learned = ((key, objects), learned)
        return learned

    def _members(self, inc: dict[str, Any]) -> list[str]:
        """``member_ids`` of a stored incident version (``emitted``), read once per version: ``_owners``, ``_cool``
        and ``_prune`` read those of every emitted incident at every step. The caller must not change the list."""
        got = self.members.get(inc["id"])
        if got is None or got[0] is not inc:  # a new version is a new dict (``step``, ``_supersede``)
            got = self.members[inc["id"]] = (inc, member_ids(inc))
        return got[1]

    def _owners(self) -> dict[str, set[str]]:
        """event_id -> the ids of the emitted incidents, not superseded, that hold the event."""
        owners: dict[str, set[str]] = {}
        for iid, (_ver, _h, inc) in self.emitted.items():
            if inc.get("status") != "superseded":
                for m in self._members(inc):
                    owners.setdefault(m, set()).add(iid)
        return owners

    def _marks(self) -> dict[str, int | None]:
        """Each host's watermark (``Watermark.value``, µs; None before its first event time), read once per step for
        ``_closed``."""
        clocks = self.settings.clocks
        return {h: wm.value(clocks) for h, wm in self.host_watermarks.items()}

    def _closed(self, evs: list[Ev], now_us: int, marks: dict[str, int | None]) -> bool:
        """Whether the group of ``evs`` is closed (module doc): each of its hosts' watermark (``marks``, ``_marks``)
        passed its last event by ``close_after_us`` (``window.closes``), or none of its hosts sent anything for
        ``idle_us``. A host with no watermark (its lines printed no time: their ``ts`` is their Kafka append or
        file time, ``EVENT_TIME_BASES``) has got as far as processing time ``now_us``, less how long after it was
        appended its latest line was read (``_unread_us``: 0 live, a backlog's delay). It counted as closed, and a
        group of such hosts was emitted at the step its first line came, then again with each later batch (a
        fresh-user trial: v1 0.2 s after ``firstfault send``, v2 at the next); at processing time itself, the polls
        that read a backlog of its lines appended minutes before were v1, v2 and v3 of one fault (a break-it pass)."""
        if not evs:
            return False
        last = max(e.ts for e in evs)  # the last line written, not the implied start of a timeout
        hosts = {e.host for e in evs}
        if all(closes(marks[h] if h in marks else now_us - self._unread_us(h), last, self.close_after_us)
               for h in hosts):
            return True
        heard = self._last_heard(hosts)
        return heard is not None and now_us - heard > self.idle_us

    def _unread_us(self, host: str) -> int:
        """How far (µs, 0 or more) the log of ``host``, a host with no watermark, stands behind processing time: its
        latest line was read (``heard_us``) that long after it was appended (``appended_us``, its arrival time). Its
        log has got to processing time less this (``_closed``): live, a line is read as it is appended (0, the
        service's clock); a backlog read minutes after it was appended closes only once as long has passed since it
        was read, or a line of the host appended after it passes its close. 0 for a host read before a restart."""
        appended, heard = self.appended_us.get(host), self.heard_us.get(host)
        return max(0, heard - appended) if appended is not None and heard is not None else 0

    def _last_heard(self, hosts: Iterable[str]) -> int | None:
        """The processing time (µs) of the latest line of ``hosts`` that counts for their quiet (``idle_us``,
        ``_closed``), None before any: quiet is that of the lines that move a host's watermark (``arrived_us``), so
        unstamped NCCL lines that keep coming do not hold back a group of its stamped kernel lines; a host with no
        watermark has only its lines' arrivals (``heard_us``)."""
        seen = [t for h in hosts if (t := self.arrived_us.get(h, self.heard_us.get(h))) is not None]
        return max(seen, default=None)

    def _supersede(self, inc: dict[str, Any], members: list[str],
                   owners: dict[str, set[str]]) -> list[dict[str, Any]]:
        """Earlier incidents whose events now belong to ``inc`` (a late, earlier event changed the
        incident's first event, hence its id): a last version with status ``superseded``, in the order they
        were first emitted. ``owners`` (``_owners``) finds them by event and is kept up to date: a step that
        emits thousands of incidents does not compare each with every other."""
        me = inc["id"]
        earlier = set().union(*(owners.get(m, ()) for m in members)) - {me}
        for m in members:
            owners.setdefault(m, set()).add(me)
        if not earlier:
            return []
        out = []
        for old_id in [k for k in self.emitted if k in earlier]:
            ver, _h, old = self.emitted[old_id]
            gone = dict(old, version=ver + 1, status="superseded", superseded_by=me)
            self.emitted[old_id] = (ver + 1, _content_hash(gone), gone)
            for m in self._members(old):
                owners.get(m, set()).discard(old_id)
            out.append(gone)
        return out

    def _prune(self, learned: Topology, pending: set[str] = frozenset(), now_us: int | None = None) -> bool:
        """Forget events older than their host's watermark minus the lateness and the longest link window
        (capped at an hour), and the events of a host that has sent nothing for that long of processing time
        (``heard_us``, ``now_us``: its watermark stands still while it is quiet, as most of a job's hosts are
        for hours after their NCCL init lines) but for its faults and the events of kinds a link reaches farther
        (``far``). Those stay, as before: a GPU that fell off the bus logs nothing more, and the other ranks'
        watchdog timeouts that it explains may come hours later, their collectives begun at its fault (a 2 h NCCL
        timeout); a Fabric Manager's state line at boot explains its error hours later — except the events of
        incidents not emitted yet (``pending``: an incident whose evidence spans hours, e.g. a volatile ECC count
        read long after the error, is emitted whole) and the events of an emitted incident while any of its
        events is kept (its events go together) — and emitted incidents none of whose events is kept (they
        cannot change).

        The newest line that says which communicator each rank is in (NCCL init lines print once, at job
        start, hours before a hang; without them the silent rank of a hung communicator cannot be named) goes
        to ``wiring`` instead, while the communicator holds the rank's GPU (``learned``: the step's topology,
        its ``comm_span``) or an event still kept may belong to it (a hang not emitted yet after its job was
        restarted: its silent rank is named from its communicator's lines). Once another process took the GPU
        over (a restarted job, the next job) the line is forgotten with its age like any other: the lines kept
        are as many as the fleet's live ranks, not every rank of every job since the start, and the step
        correlates only the recent events. Of communicators that never end that way (a restart whose
        processes get the pids of the run before, as in a container), ``MAX_COMMS_PER_GPU`` per GPU are
        kept, the most recent. Returns whether an event went cold or a cold one was forgotten (``steady``).

        A host quiet that long (``heard_us``, ``now_us``: silent past the longest link window and the allowed
        lateness) that holds nothing any more — no event kept or cold, no wiring line, no stored incident to read
        back (``unread_by_host``) — leaves ``heard_us`` and ``appended_us`` with its events: what they told (its
        quiet, how far behind its unstamped log stands) is asked only of a host with such state, and a line of the
        host that comes again starts them afresh. Before, they grew with every host the fleet ever had."""
        keep, horizon = self._keep_us(), self._horizons()
        cold_before = len(self.cold)
        # the newest membership line of each rank: the wiring's (one per rank already), or a kept event's
        newest: dict[tuple[str, int], Ev] = dict(self.wiring_ranks)
        for k, m in self.teaching.items():
            if m is not None and (m not in newest or self.events[k].ts > newest[m].ts):
                newest[m] = self.events[k]

        quiet = ({h for h, t in self.heard_us.items() if now_us - t > keep} if now_us is not None else set())
        catalog = default_catalog()  # what correlate() judges faults by
        # kinds a link reaches farther than the events are kept by (Fabric Manager state, a volatile ECC count)
        far = {k for k, w in self._kind_windows().items() if w > keep - self.lateness_us}
        # a notice of what happens later (``Ev.ahead``: a maintenance's NotBefore days after its line) is kept by that
        # time and the quiet that resolves its incident (``incident.finish``): gone cold by its line's time, its
        # incident was correlated no more and its last version, "open", stood for ever when no peer's reset came at
        # that time (the batch's "resolved"; a break-it pass)
        # (one pass, ``Ev.ahead`` inlined: a dict of every kept event's time at every step was ~3 % of a working step;
        # calling ``e.ahead()`` here instead was ~12 % slower on this loop, best of 40 over 6,644 kept events)
        resolve, kept = self.settings.resolve_after_us, set()
        for k, e in self.events.items():
            if k in pending:
                kept.add(k)
            elif e.host not in quiet or e.kind in far or is_fault(e, catalog):
                h = horizon.get(e.host)
                ahead = e.start if e.ts < e.start <= e.ts + AHEAD_MAX_US else 0  # (e.ahead() or 0)
                if h is None or max(e.ts, ahead + resolve) >= h - keep:
                    kept.add(k)
        # an emitted incident is kept whole while any of its events is: forgetting its old evidence alone
        # would re-form the rest into a new incident that supersedes it (node036: an ECC event and the
        # volatile ECC count read nine hours later)
        # — and one none of whose events is kept goes cold whole if it holds a fault (``_revive``)
        self._cool(kept, catalog)
        cooled = len(self.cold) != cold_before  # _cool adds to ``cold`` only (it and ``events`` share no id)
        cold_before = len(self.cold)
        if self.cold:  # by its own host's watermark: a host whose clock runs a day ahead forgets only its own
            # a notice placed ahead of its line (``Ev.start``: an EC2 maintenance StartTime days ahead) is kept until
            # its host's watermark passed that time, not its line: forgotten a day after its line, it met none of
            # its peers' resets at its StartTime, which the batch ties to it (a break-it pass)
            self.cold = {k: e for k, e in self.cold.items()
                         if e.host not in horizon or _kept_until(e) >= horizon[e.host] - self.reach_back_us}
        self.events = {k: e for k, e in self.events.items() if k in kept}
        self.teaching = {k: m for k, m in self.teaching.items() if k in kept}
        self.topo_lines &= kept
        # the communicators an event still kept may belong to (rules.comms_of): their lines stay whole. Wiring
        # facts belong to no incident (cluster.members): a new run's init lines do not keep the run before
        spans = learned.comm_span
        needed = _needed(learned, [e for e in self.events.values() if e.kind not in FACT_KINDS]) if spans else set()

        # per (communicator, host) with a span: does the communicator still hold its GPUs there, or may a kept
        # event belong to it? The others (no span) hold their GPUs still
        held = {(comm, host): until is None or comm in needed or host not in quiet
                and (host not in horizon or until >= horizon[host] - keep)
                for (comm, host), (_since, until) in spans.items()}
        wiring = [(m, e) for m, e in newest.items()
                  if e.event_id not in self.events and held.get((m[0], e.host), True)]
        self.wiring_ranks = dict(_recent_per_gpu(wiring, MAX_COMMS_PER_GPU))
        self.wiring = {e.event_id: e for e in self.wiring_ranks.values()}
        if len(self.uuid_lines) > MAX_UUID_LINES:  # pods come and go with their GPUs: the newest stay
            # by arrival (Kafka append time), not by stamp: a live host whose clock is days behind lost its
            # mapping first, one days ahead kept its for ever (a break-it pass)
            self.uuid_lines = dict(sorted(self.uuid_lines.items(), key=lambda kv: (
                kv[1].ingest_ts if kv[1].ingest_ts is not None else kv[1].ts, kv[0]))[-MAX_UUID_LINES:])
            self.uuid_gpus = {k: v for k, v in self.uuid_gpus.items() if k in self.uuid_lines}
        for e in self.uuid_lines.values():
            if e.event_id not in self.events:
                self.wiring[e.event_id] = e
        if len(self.addr_lines) > MAX_ADDR_LINES:  # pods come and go with new addresses: the newest stay
            newest_addr = sorted(self.addr_lines.items(), key=lambda kv: kv[1].ts)[-MAX_ADDR_LINES:]
            self.addr_lines = dict(newest_addr)
        for e in self.addr_lines.values():
            if e.event_id not in self.events:
                self.wiring[e.event_id] = e
        emitted = {}
        for k, v in self.emitted.items():
            if any(m in self.events or m in self.cold for m in self._members(v[2])):
                emitted[k] = v
            else:
                self.retired[k] = (v[0], v[1], v[2].get("clocks"), frozenset(self._members(v[2])))
                self.restored.discard(k)
        self.emitted = emitted
        self.members = {k: v for k, v in self.members.items() if k in emitted}
        while len(self.retired) > RETIRED_MAX:  # the oldest forgotten first (dicts keep insertion order)
            del self.retired[next(iter(self.retired))]
        if quiet:
            self._forget_hosts(quiet)
        return cooled or len(self.cold) != cold_before

    def _forget_hosts(self, quiet: set[str]) -> None:
        """Forget the ``heard_us``, ``appended_us``, ``arrived_us``, watermarks (``host_watermarks``, and
        ``source_watermarks`` of each of their streams) of the ``quiet`` hosts (``_prune``) that hold nothing any
        more: no event kept or cold, no wiring line (``wiring``, ``uuid_lines``, ``addr_lines``), no stored
        incident to read back (``unread_by_host``). Their watermarks are past every line they sent by the allowed
        lateness and the longest link window: a line of such a host that comes later starts them afresh, as its
        first did (one dated before its old watermark by more than the lateness was counted in ``late_events``
        before; now it is correlated, as the batch correlator does). Before, the watermarks and ``arrived_us``
        grew by one entry per host (and per host, source and raw partition) the fleet ever had. The set of hosts
        that hold state is built again at each call (~1-2 ms over 6,644 kept events; a working step of
        benchmarks.correlator takes 60-400 ms), not kept as per-host counts: those would have to follow every change
        to ``events``, ``cold``, ``wiring``, ``uuid_lines`` and ``addr_lines``."""
        held = {e.host for e in self.events.values()}
        held.update(e.host for e in self.cold.values())
        held.update(e.host for e in self.wiring.values())
        held.update(h for h, _ in self.uuid_lines)
        held.update(h for h, _ in self.addr_lines)
        gone = {h for h in quiet if h not in held and h not in self.unread_by_host}
        for h in gone:
            del self.heard_us[h]
            self.appended_us.pop(h, None)
            self.arrived_us.pop(h, None)
            self.host_watermarks.pop(h, None)
        if gone:  # (one pass over the streams, not one per host)
            self.source_watermarks = {k: w for k, w in self.source_watermarks.items() if k[0] not in gone}


#: how far past its line a cold event placed ahead of it (``Ev.start``: a notice's NotBefore or StartTime) is kept for
#: (µs): as far as a time ahead is taken for a schedule (``model.AHEAD_MAX_US``); a time further out (a garbled or
#: placeholder date, a year 2099) keeps it no longer than this, so a cold event is not kept for ever
AHEAD_KEPT_MAX_US = AHEAD_MAX_US


def _kept_until(e: Ev) -> int:
    """The time (µs) by which a cold event is forgotten (``StreamCorrelator._prune``): its line's ``ts``, or its
    ``start`` when that is later (a notice of what happens then), at most ``AHEAD_KEPT_MAX_US`` past ``ts``."""
    return e.ts if e.start <= e.ts else min(e.start, e.ts + AHEAD_KEPT_MAX_US)


#: what a sample or a wiring fact is about: only the newest row of each teaches the topology anything
#: (``Topology.learn_samples`` / ``learn_topology`` keep the last value of each); a correlate worker reads back the
#: newest row of each from the lake (``api.sink.IncidentSink.host_facts``)
SAMPLE_KEY = _SAMPLE_KEY = ("host", "device", "gpu_index", "link", "counter", "model")
FACT_KEY = _FACT_KEY = ("host", "fact", "device", "gpu_index", "link", "peer_name")


def _latest(tables: list[pa.Table], keys: tuple[str, ...]) -> pa.Table:
    """The rows of ``tables`` (in order) that are the last of their ``keys``, order kept: what
    ``build_topology`` learns from them is the same, and the tables stay as large as the fleet."""
    t = pa.concat_tables(tables) if len(tables) > 1 else tables[0]
    idx = t.append_column("_i", pa.array(range(t.num_rows), pa.int64()))
    last = idx.group_by(list(keys)).aggregate([("_i", "max")]).column("_i_max")
    return t.take(pc.take(last, pc.sort_indices(last))) if len(last) < t.num_rows else t


#: communicators whose membership lines are kept per GPU when none of them ends (``StreamCorrelator._prune``):
#: a process holds a few (PyTorch's default group, its data/tensor/pipeline-parallel groups; Megatron-LM up to
#: ~20; more with a group per pipeline or point-to-point pair), so this is many runs' worth
MAX_COMMS_PER_GPU = 256
#: hosts' NCCL addresses kept (``StreamCorrelator.addr_lines``): a fleet's hosts and a day's pods many times over
MAX_ADDR_LINES = 100_000
#: GPU UUIDs' lines kept (``StreamCorrelator.uuid_lines``, ``uuid_gpus``), the newest: a fleet of 10,000 hosts of 8
#: GPUs is 80,000; past it a UUID named by the oldest lines only is no longer mapped to its bus id
MAX_UUID_LINES = 100_000


def _needed(topo: Topology, events: Iterable[Ev]) -> set[str]:
    """The communicators with a rank on the host of one of ``events`` and live when it began
    (``Topology.comm_live``): per (communicator, host), a search over the host's event starts, not a test
    per event and rank."""
    starts: dict[str, list[int]] = {}
    unordered: set[str] = set()
    for e in events:
        if e.ts_basis in UNORDERED_BASES:
            unordered.add(e.host)
        else:
            starts.setdefault(e.host, []).append(e.start)
    for v in starts.values():
        v.sort()
    out: set[str] = set()
    for host, entries in topo.comm_index().items():
        if host not in starts and host not in unordered:
            continue
        on = starts.get(host, [])
        for comm in {c for c, _dev in entries} - out:
            window = topo.comm_window(comm, host)
            if window is None or host in unordered or bisect_left(on, window[0]) < bisect_left(on, window[1]):
                out.add(comm)  # unbounded, or a start in [lo, hi)
    return out


def _recent_per_gpu(lines: list[tuple[tuple[str, int], Ev]], most: int) -> list[tuple[tuple[str, int], Ev]]:
    """The ((communicator, rank), membership line) pairs of the ``most`` communicators with the newest lines on
    each GPU (host, bus id or index); lines without a GPU are all kept. Order kept."""
    if len({m[0] for m, _e in lines}) <= most:  # no GPU can hold more
        return lines
    newest: dict[tuple[str, str], dict[str, int]] = {}
    for (comm, _rank), e in lines:
        dev = line_gpu(e)
        if dev is not None:
            on = newest.setdefault((e.host, dev), {})
            on[comm] = max(on.get(comm, e.ts), e.ts)
    crowded = {gpu: set(sorted(on, key=on.__getitem__, reverse=True)[:most])
               for gpu, on in newest.items() if len(on) > most}
    if not crowded:
        return lines
    return [(m, e) for m, e in lines if (gpu := (e.host, line_gpu(e))) not in crowded or m[0] in crowded[gpu]]


def _raw_partition(origin: str) -> str | None:
    """``kafka:fleet.dmesg/3/1207:5#r2`` -> ``kafka:fleet.dmesg/3``: the raw partition a line came from
    (its ordered stream); None for lines read from files (one file is one ordered stream per host)."""
    return origin.rsplit("/", 1)[0] if origin.startswith("kafka:") else None
