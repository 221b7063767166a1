"""Time semantics of correlation, stated once.

* Events of one host share one clock: they are related in time when
  ``|t1 − t2| ≤ W + r1 + r2`` (``r`` = the resolution of each stamp: a
  ``dmesg -T`` or syslog stamp is only good to the second; ``Ev.start_precision_us``:
  for an event placed at a time its line states, a cloud notice's NotBefore
  (``details.occurs_us``), that time's own resolution, not its line's).
* Across hosts h1, h2 each clock may be off by its skew bound:
  ``|t1 − t2| ≤ W + skew(h1) + skew(h2) + r1 + r2`` (DESIGN.md).
* A watchdog timeout is placed at its implied start (``Ev.start``): the time
  its collective began. A cause may come after that start (the collective was
  running when the device failed), up to the timeout's own line time.
* A line with no stamp of its own, timed by its file's mtime or its Kafka
  append time, was written then *or earlier*: as a cause it may precede its
  effects by any amount (``details.ts_upper_bound``).
* Streaming: the **watermark** is the largest event time seen minus the
  largest skew bound; a group of events is *closed* when the watermark has
  passed its last event by ``W``; an event older than the watermark minus the
  **allowed lateness** is *too late* to change an emitted incident (it is
  still stored, and counted).

All times are µs (int).
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass, field

from correlate.model import Ev

S = 1_000_000
#: the largest skew bound estimated for a host (µs): a larger one is a clock to fix, not a delay to allow for
SKEW_CAP_US = 300 * S


@dataclass(slots=True)
class Clocks:
    """Per-host skew bounds (µs): configured, else estimated, else the default.

    ``skew_us``: configured bounds (they win); ``estimated_us``: from
    :func:`estimate_skew`; an estimate only ever widens the default.

    Each host's bound is cached on first ask (``skew``), for every reader of these clocks: the attribution
    (``attribute._timing``, ``window.start_skew`` per event, ``attribute.collective_edges``) and the clustering
    (``cluster``'s windows and keys) ask it of the same hosts again and again. The cache is never invalidated:
    a Clocks is not changed once made (``with_estimates`` makes a new one, with an empty cache); a caller that
    changed ``skew_us``, ``default_skew_us`` or ``estimated_us`` in place would read stale bounds.
    """

    skew_us: dict[str, int] = field(default_factory=dict)
    default_skew_us: int = 2 * S
    estimated_us: dict[str, int] = field(default_factory=dict)
    #: host -> its bound (µs), as :meth:`skew` first computed it
    _skews: dict[str, int] = field(default_factory=dict, init=False, repr=False, compare=False)

    def skew(self, host: str) -> int:
        got = self._skews.get(host)
        if got is None:
            got = self._skews[host] = (self.skew_us[host] if host in self.skew_us
                                       else max(self.default_skew_us, self.estimated_us.get(host, 0)))
        return got

    def max_skew(self) -> int:
        return max([self.default_skew_us, *self.skew_us.values(), *self.estimated_us.values()])

    def with_estimates(self, estimated: dict[str, int]) -> "Clocks":
        return Clocks(skew_us=dict(self.skew_us), default_skew_us=self.default_skew_us, estimated_us=estimated)


#: how many of a host's fastest lines per day its clock is read from (:class:`AppendDelays`)
DELAY_LINES = 20
#: how many of the fleet's newest UTC days of append time the clocks are read from (:class:`AppendDelays`): a host
#: whose lines all came before them reads no clock and counts in no fleet delay (its lines of old are no clock now)
FLEET_DAYS = 3
#: which of them says the clock: the ``1 / CLOCK_QUANTILE`` quantile of those kept (:meth:`AppendDelays.levels`)
CLOCK_QUANTILE = 5
_DAY = 86400 * S


@dataclass(slots=True)
class AppendDelays:
    """Per host, a bounded summary of its lines' append delays ``d = Kafka append time − line time`` (µs): per UTC
    day of append time, the :data:`DELAY_LINES` smallest ``(d, event_id)`` of its line-stamped lines that came
    through Kafka, apart for the lines stamped further ahead than :data:`SKEW_CAP_US` (``d < −cap``: ``ahead``) and
    the others (``near``); the host's two newest days are kept, of the fleet's :data:`FLEET_DAYS` newest (``newest``:
    the newest day of any line taken). A host none of whose lines is that recent leaves ``days``: a fleet whose
    hosts come and go (k8s pods) kept one entry per host it ever had, and each voted in the fleet's delay for ever;
    it holds at most (hosts heard from in those days) x 2 days x 2 lists x :data:`DELAY_LINES` lines. Lines further
    than :data:`OFFSET_MAX_US` (a day) from their append time are old (logs replayed, a backlog shipped late) or
    stamped wrong, and left out.

    The summary is a function of the set of lines alone, whatever their order, split and repeats (ties are broken
    by event id, a line seen again is one line): the streaming correlator keeps one across the events it forgets
    (``StreamCorrelator.delays``) and reads the clocks the batch correlator reads from every event. A median over
    the events kept was not that (nor a low quantile of them: the fastest lines are the old ones it forgets).

    ``days``: host -> UTC day (append time) -> (near, ahead), each sorted, at most :data:`DELAY_LINES`."""

    days: dict[str, dict[int, tuple[list[tuple[int, str]], list[tuple[int, str]]]]] = field(default_factory=dict)
    #: min_events -> host -> its level (None: too few lines), as :meth:`levels` last read it; a host's entries go
    #: when its summary changes. A streaming step reads every host's clock, and of 10,000 hosts 0.3 – 0.5 s a step
    #: went to reading the same lines again (a break-it pass)
    read: dict[int, dict[str, tuple[int, int] | None]] = field(default_factory=dict, repr=False, compare=False)
    #: the newest UTC day (days since the epoch) of a line taken (:meth:`_take`); None before any
    newest: int | None = field(default=None, repr=False, compare=False)

    @classmethod
    def of(cls, events: list[Ev]) -> "AppendDelays":
        """The summary of ``events`` (the same as :meth:`observe` of each, in any order)."""
        out = cls()
        for e in events:
            out.observe(e)
        return out

    @classmethod
    def of_rows(cls, rows) -> "AppendDelays":
        """The summary whose kept lines are ``rows``: ``(host, day, ahead, d, event_id)`` each (``day`` the UTC day of
        the line's Kafka append time, days since the epoch; ``ahead``: ``d < −``:data:`SKEW_CAP_US`; ``d`` µs), at
        most :data:`DELAY_LINES` per (host, day, ahead), of the host's two newest days, one per event id: a lake's
        summary computed where its events are (``api.sink.IncidentSink.append_delays``), of the rows' fleet's
        :data:`FLEET_DAYS` newest days (the others left out, as :meth:`observe` leaves them). Raises ValueError on rows
        that are no such summary (more lines than kept, a day outside the host's two newest, a line in the wrong
        list): read from a query that drifted from :meth:`observe`, they would read other clocks silently."""
        out = cls()
        for host, day, ahead, d, eid in rows:
            lists = out.days.setdefault(host, {}).setdefault(day, ([], []))
            if bool(ahead) != (d < -SKEW_CAP_US) or abs(d) > OFFSET_MAX_US:
                raise ValueError(f"{host}: a delay of {d} µs is not a line of the {'ahead' if ahead else 'near'} list")
            lists[1 if ahead else 0].append((d, eid))
        for host, days in out.days.items():
            if min(days) < max(days) - 1:
                raise ValueError(f"{host}: days {sorted(days)} are more than its two newest")
            for lists in days.values():
                for kept in lists:
                    kept.sort()
                    if len(kept) > DELAY_LINES or len({eid for _, eid in kept}) < len(kept):
                        raise ValueError(f"{host}: {len(kept)} lines kept of a day, or one line twice")
        # the fleet's FLEET_DAYS newest days, as observe keeps them: the lake's query keeps each host's two newest,
        # and a pod gone for weeks voted in the fleet's delay after a restart; with no newest day known, a replay's
        # lines of an older day were taken before the lake's summary and not after it (a break-it pass)
        if out.days:
            out.newest = max(max(days) for days in out.days.values())
            out._forget_before(out.newest - FLEET_DAYS + 1)
        return out

    def observe(self, e: Ev) -> None:
        """Take ``e``'s delay into its host's summary, if it is a line-stamped line that came through Kafka."""
        if e.ts_basis != "line" or e.ingest_ts is None or not e.origin.startswith("kafka:"):
            return
        d = e.ingest_ts - e.ts
        if abs(d) > OFFSET_MAX_US:
            return
        self._take(e.host, e.ingest_ts // _DAY, d, e.event_id)

    def merge(self, other: "AppendDelays") -> None:
        """Take every line ``other`` keeps into this summary, as :meth:`observe` of each: the summary of the union of
        both summaries' lines (the summary of a set of lines is that of any of its subsets' summaries together). A
        correlate worker merges a host's summary read from the lake into the one of the events it replays
        (``correlate.consumer.CorrelateWorker``, ``api.sink.IncidentSink.append_delays``)."""
        for host, days in other.days.items():
            for day, lists in sorted(days.items()):
                for kept in lists:
                    for d, eid in kept:
                        self._take(host, day, d, eid)

    def _take(self, host: str, day: int, d: int, event_id: str) -> None:
        """Keep line ``event_id`` of ``host``, appended on UTC ``day`` (days since the epoch) ``d`` µs after its
        stamp (within :data:`OFFSET_MAX_US`), if it is among the fastest of its day and list (:meth:`observe`), and
        its day among the fleet's :data:`FLEET_DAYS` newest; a newer day forgets the days older than those, and the
        hosts left with none (once a day of the fleet's: a pass over the hosts)."""
        if self.newest is None or day > self.newest:
            self._forget_before(day - FLEET_DAYS + 1)
            self.newest = day
        elif day <= self.newest - FLEET_DAYS:
            return  # older than the fleet's days read: it can never be read
        days = self.days.get(host)
        if days is None:
            days = self.days[host] = {}
        elif day not in days:
            newest = max(days)
            if day < newest - 1:
                return  # older than the two days read: it can never be read
            if day > newest:
                for old in [k for k in days if k < day - 1]:
                    del days[old]
        lists = days.get(day)
        if lists is None:
            lists = days[day] = ([], [])
        kept = lists[1] if d < -SKEW_CAP_US else lists[0]
        item = (d, event_id)
        if len(kept) >= DELAY_LINES and item >= kept[-1]:
            return
        i = bisect_left(kept, item)
        if i < len(kept) and kept[i] == item:
            return  # the same line again (a redelivery, a replay)
        # a copy of it delivered at another time (kern.log and syslog both carry a kernel line; ``line_event_id``):
        # a line's delay is its first arrival's, and the line counts once (twice, a host's 5 lines shipped again
        # 100 s later read a 100 s bound: a break-it pass)
        j = next((j for j, (_, eid) in enumerate(kept) if eid == event_id), None)
        if j is not None:
            if j < i:
                return
            del kept[j]
        kept.insert(i, item)
        for read in self.read.values():
            read.pop(host, None)
        del kept[DELAY_LINES:]

    def _forget_before(self, first: int) -> None:
        """Forget the days before ``first`` (UTC day, days since the epoch), and the hosts that hold no other."""
        for host in list(self.days):
            days = self.days[host]
            if min(days) < first:
                for old in [k for k in days if k < first]:
                    del days[old]
                if not days:
                    del self.days[host]
                for read in self.read.values():
                    read.pop(host, None)

    def levels(self, min_events: int) -> dict[str, tuple[int, int]]:
        """host -> (its delay, the spread of the lines that say it), µs, for each host with at least
        ``min_events`` lines in its two newest days (at most :data:`DELAY_LINES`).

        A line arrives no earlier than it was written, so a backlog only adds delay: the host's fastest lines say
        its clock, and a host that shipped a 3 h backlog and then fewer live lines keeps the live lines' delay (the
        median of all took the backlog's and moved its live lines hours ahead: a break-it pass). Its delay is the
        ``1 / CLOCK_QUANTILE`` quantile of its fastest lines kept (the 2nd of 5 – 9, the 5th of 20), so the few
        lines before it, stamped wrongly ahead, do not move it; its spread the median distance from it of the lines
        kept within :data:`SKEW_CAP_US` of it (a backlog hours old is no jitter of this clock). That quantile of a
        host's 20 fastest reads lower the more lines a host has (the 5th of 28 lines shipped in batches 0 – 30 s
        late was 7 s, of 222 lines 0.3 s): the spread of those kept keeps the bound over that (of the 2q + 1
        fastest alone, the benchmark mix's quiet hosts with their clocks moved 10 s ahead had bounds of 7 – 8 s).
        Lines stamped further ahead than the skew cap (a program's local time read as UTC) are read only when the
        others are too few (fewer than ``min_events`` and than they): a clock that far ahead. Three of ten lines
        stamped 8 h ahead read as the clock gave offset −8 h and the 300 s bound (a break-it pass)."""
        if min_events > DELAY_LINES:
            raise ValueError(f"min_events {min_events} > DELAY_LINES {DELAY_LINES}")
        read = self.read.setdefault(min_events, {})
        out = {}
        for h, days in self.days.items():
            if h in read:
                if (got := read[h]) is not None:
                    out[h] = got
                continue
            read[h] = None
            newest = max(days)
            ahead = _first_copies(x for k in (newest - 1, newest) if k in days for x in days[k][1])
            far = {eid for _, eid in ahead}
            near = _first_copies(x for k in (newest - 1, newest) if k in days for x in days[k][0] if x[1] not in far)
            if len(near) + len(ahead) < min_events:
                continue
            d = [x for x, _ in (near if len(near) >= min(min_events, len(ahead)) else ahead)]
            q = len(d) // CLOCK_QUANTILE
            near_it = sorted(abs(x - d[q]) for x in d if abs(x - d[q]) <= SKEW_CAP_US)  # the backlog's are not
            out[h] = read[h] = (d[q], near_it[len(near_it) // 2])
        return out


def _first_copies(items) -> list[tuple[int, str]]:
    """The :data:`DELAY_LINES` smallest ``(d, event_id)`` of ``items``, each event id once (its smallest ``d``:
    its first arrival; a line's copies appended on two days, or one of them stamped past the cap)."""
    seen: set[str] = set()
    out = []
    for d, eid in sorted(items):
        if eid not in seen:
            seen.add(eid)
            out.append((d, eid))
    return out[:DELAY_LINES]


def _append_delays(events: list[Ev], min_events: int,
                   delays: AppendDelays | None = None) -> tuple[dict[str, tuple[int, int]], int] | None:
    """Per host: its delay and spread (:meth:`AppendDelays.levels` of ``delays``, else of ``events``), and the
    fleet's median of those delays; None with fewer than two such hosts.

    The fleet's median is taken over the hosts whose delay is within :data:`SKEW_CAP_US` of zero when there are
    any: a delay that small is a clock that is right and lines shipped as written (a backlog only adds to ``d``, and
    a wrong clock meets the broker's by chance alone), while one hours long is either of a backlog or a clock, which
    ``d`` does not tell apart. Over every host, one live host beside one whose lines arrived 23 h late took the upper
    of the two medians: the live host's offset was −23 h (its Xid 79 "resolved" as it was read) and its bound the
    cap, while at 25 h both had none (a break-it pass)."""
    levels = (delays if delays is not None else AppendDelays.of(events)).levels(min_events)
    if len(levels) < 2:
        return None
    live = sorted(m for m, _ in levels.values() if abs(m) <= SKEW_CAP_US) or sorted(m for m, _ in levels.values())
    return levels, live[len(live) // 2]


def estimate_skew(events: list[Ev], *, min_events: int = 5, cap_us: int = SKEW_CAP_US) -> dict[str, int]:
    """Per-host skew bound (µs) from line time vs Kafka append time.

    For every host with at least ``min_events`` line-stamped events that came
    through Kafka, ``d = append time − line time`` mixes shipping delay and
    clock offset. A host's delay is that of its fastest lines (a low quantile:
    :meth:`AppendDelays.levels`), the fleet's median of those the typical
    delay; a host's bound is ``|its delay − the fleet's|`` plus the spread of
    its fastest lines about it (at least the median spread of the hosts the
    fleet's delay is taken over), rounded up to whole seconds and capped at
    ``cap_us``. Hosts without enough evidence get none (the default applies).

    Whole seconds: the delays move a little with every event, and a bound
    only has to be wide enough; rounded up, it stays put from one streaming
    step to the next (so do the attributions ``correlator.AttributionCache``
    keeps), and it is never narrower than the estimate.
    """
    return estimate_clocks(events, min_events=min_events, cap_us=cap_us)[0]


#: the largest clock offset believed (µs): further, a host's lines are old, not its clock wrong (estimate_clocks)
OFFSET_MAX_US = 86400 * S


def estimate_clocks(events: list[Ev], *, min_events: int = 5, cap_us: int = SKEW_CAP_US,
                    delays: AppendDelays | None = None) -> tuple[dict[str, int], dict[str, int]]:
    """(:func:`estimate_skew`, the per-host clock offsets) of ``events`` from their append delays (``delays``: their
    summary kept by the caller, :class:`AppendDelays`, read instead of ``events``), host -> µs each; both empty with
    fewer than two hosts of ``min_events`` such events. A host's offset (add it to a line time to get fleet time) is
    its delay (:meth:`AppendDelays.levels`) less the fleet's median of them, with ``d = Kafka append time − line
    time``; a line that arrived more than :data:`OFFSET_MAX_US` (a day) from its stamp is not read, and a host with
    no other has neither: its lines are old (logs replayed, as the demo's samples of 2023 beside 2026's), and
    moving them by years (``skew_adjusted_ts`` 2.9 years from both the line and its arrival: a fresh user's trial)
    says nothing; nor does a bound, which took the 300 s cap in a run that read live hosts beside it and the default
    in one that did not (a replay stored an old incident again as version 2, its clocks alone changed: a fresh
    user's trial), while the same lines read from files have the default. A clock minutes off keeps its offset
    (dropped past the 300 s skew cap, a 10-minute error went uncorrected: a break-it pass)."""
    got = _append_delays(events, min_events, delays)
    if got is None:
        return {}, {}
    levels, fleet = got
    # the fleet's delay is read as well as its hosts' are: the fifth of a host's 20 fastest lines reads lower the
    # more lines it has, so a chatty host's clock is read against quiet hosts' later lines, its offset short of its
    # clock's by up to their spread (10,000 lines beside hosts of 5 – 30, shipped 0 – 30 s late: a clock 10 s off
    # was bound by 5 s, a break-it pass). The live hosts' median spread is in every host's bound
    spreads = sorted(spread for m, spread in levels.values() if abs(m) <= SKEW_CAP_US) or sorted(
        spread for _, spread in levels.values())
    floor = spreads[len(spreads) // 2]
    skew = {h: min(cap_us, -(-(abs(m - fleet) + max(spread, floor)) // S) * S) for h, (m, spread) in levels.items()}
    return skew, {h: m - fleet for h, (m, _) in levels.items() if abs(m - fleet) <= OFFSET_MAX_US}


#: how far apart in time the ranks of one collective start it (µs): a training step's straggling, on top of the clocks
COLLECTIVE_SPREAD_US = 2 * S


def collective_skew(events: list[Ev], key, *, cap_us: int = SKEW_CAP_US,
                    spread_us: int = COLLECTIVE_SPREAD_US, gap_us: int = 60 * S) -> dict[str, int]:
    """Per-host skew bound (µs) from watchdog timeouts of one collective on several hosts, for logs that came with no
    Kafka append time (:func:`estimate_skew` needs one: files). Every rank of a collective starts it within a step of
    the others, so its timeouts' implied starts (``Ev.start``, line-stamped) differ across hosts by their clocks.

    Per collective (``key(e)``: ``rules.collective_of``) and host, the ranks' starts fall in runs apart by more than
    ``gap_us``: the first run is the host's (a job that restarted and hung again prints the collective again later),
    its median the host's start; a collective some host printed in more than two runs is not used (the same line
    repeated is no one collective: the benchmark mix's gave every host a 300 s bound). A host's offset is its start
    minus the median over the collective's hosts; the bound is the median of its offsets over the collectives plus
    ``spread_us``, rounded up to whole seconds, capped at ``cap_us`` — for a host whose clock is off alone: hosts off
    by the same amount (within ``2 × spread_us`` of each other) are a second job that started later, printing the same
    collective, not clocks off alike (a break-it pass: two jobs two minutes apart were joined, one's Xid blamed for the
    other's ranks). One host's clock 90 s ahead split a job's incident in two (a break-it pass)."""
    groups: dict[tuple, dict[str, list[int]]] = {}
    for e in events:
        if e.kind == "nccl_timeout" and e.ts_basis == "line" and (k := key(e)) is not None:
            groups.setdefault(k, {}).setdefault(e.host, []).append(e.start)
    offsets: dict[str, list[int]] = {}
    for hosts in groups.values():
        if len(hosts) < 2:
            continue
        first: dict[str, int] = {}
        for h, starts in hosts.items():
            starts.sort()
            runs = [[starts[0]]]
            for t in starts[1:]:
                if t - runs[-1][-1] > gap_us:
                    runs.append([t])
                else:
                    runs[-1].append(t)
            if len(runs) > 2:
                break
            first[h] = runs[0][len(runs[0]) // 2]
        else:
            mid = sorted(first.values())[len(first) // 2]
            offs = {h: t - mid for h, t in first.items()}
            for h, o in offs.items():
                if abs(o) > spread_us and any(g != h and abs(p - o) <= 2 * spread_us for g, p in offs.items()):
                    continue  # off together with another host: a second job, not this host's clock
                offsets.setdefault(h, []).append(o)
    out = {}
    for h, o in offsets.items():
        off = sorted(o)[len(o) // 2]
        out[h] = min(cap_us, -(-(abs(off) + spread_us) // S) * S)
    return out


def start_skew(e: Ev, clocks: Clocks) -> int:
    """The clock-skew bound (µs) of ``e``'s start: its host's, but none for a time the cloud states
    (``Ev.cloud_timed``: an Azure notice's NotBefore, in the cloud's clock, UTC). With its host's bound of 300 s, a
    notice's peer's reset 200 s past the window was tied to it (a defect pass)."""
    return 0 if e.cloud_timed else clocks.skew(e.host)


def tolerance(a: Ev, b: Ev, window_us: int, clocks: Clocks) -> int:
    """The largest |t_a − t_b| (µs) at which ``a`` and ``b`` may be related."""
    tol = window_us + a.start_precision_us + b.start_precision_us
    if a.host != b.host:
        tol += start_skew(a, clocks) + start_skew(b, clocks)
    return tol


def within(a: Ev, b: Ev, window_us: int, clocks: Clocks) -> bool:
    """``a`` and ``b`` are close enough in time to be related (module doc)."""
    return abs(a.start - b.start) <= tolerance(a, b, window_us, clocks)


#: how long before its file's mtime a line that printed no time may have been written and still be related to a
#: fault with a time of its own (``cluster._join_file_timed``, :func:`may_cause`): a job's log ends when the job
#: dies, which is at most the NCCL timeout after the fault (PyTorch's default 10 min; 30 min before 2.2)
FILE_REACH_US = 3600 * S


def file_dated(e: Ev) -> bool:
    """``e`` printed no time and is dated by its file's mtime (``ts_basis`` ``file``, ``details.ts_upper_bound``):
    written then or up to :data:`FILE_REACH_US` earlier."""
    return e.ts_basis == "file" and e.undated()


def may_cause(cause: Ev, effect: Ev, window_us: int, clocks: Clocks, lead_us: int = 0) -> bool:
    """``cause`` may have happened within ``window_us`` before ``effect`` (or after it by no more than the
    clocks' uncertainty): :func:`within` and :func:`not_after`. An effect that is a watchdog timeout spans
    from its implied start to its line time: the cause may fall anywhere in it. A cause whose time is only an upper
    bound (a line with no stamp of its own, timed by its file's mtime or its Kafka append time:
    ``details.ts_upper_bound``) happened at that time or earlier, so it passes unless even that latest
    time is too early. An effect dated by its file's mtime (:func:`file_dated`) happened then or earlier: a cause
    not after it and at most :data:`FILE_REACH_US` plus the window before it may be its cause. ``lead_us``: how much
    later than the effect (µs) the cause may be logged besides that uncertainty (``rules.ExplainRule.lead_s``)."""
    if cause.undated():
        return cause.start >= effect.start - tolerance(cause, effect, window_us, clocks)
    if file_dated(effect):
        # written at its file's mtime or earlier: a cause up to FILE_REACH_US (and the window) before that bound may
        # be what it reports (a rank's unstamped "Got completion from peer" in a log that ended 15 min after the
        # peer's GPU fell off the bus: a fresh user's trial)
        near = tolerance(cause, effect, 0, clocks)
        return effect.start - FILE_REACH_US - window_us - near <= cause.start <= effect.start + near + lead_us
    if effect.elapsed_ms or effect.implied_start is not None:
        # a watchdog timeout (or a line that follows one): the collective began at ``effect.start`` and hung
        # until the line's time, so a fault that came after the collective began (within the window) is
        # consistent with it
        return within(cause, effect, window_us, clocks) and cause.start <= effect.ts + tolerance(cause, effect, 0,
                                                                                              clocks) + lead_us
    return within(cause, effect, window_us, clocks) and not_after(cause, effect, clocks, lead_us)


def not_after(cause: Ev, effect: Ev, clocks: Clocks, lead_us: int = 0) -> bool:
    """``cause`` did not clearly happen after ``effect``: a cause may look later
    than its effect only by the clocks' uncertainty (and ``lead_us``, µs: :func:`may_cause`)."""
    return cause.start <= effect.start + tolerance(cause, effect, 0, clocks) + lead_us


def closes(wm: int | None, last_start: int, window_us: int) -> bool:
    """Whether a watermark of value ``wm`` (:meth:`Watermark.value`, µs; None before any event) closes a group whose
    last event started at ``last_start``: past it by more than ``window_us``."""
    return wm is not None and wm > last_start + window_us


@dataclass(slots=True)
class Watermark:
    """Event-time progress of a stream (µs)."""

    max_ts: int | None = None

    def observe(self, ts: int) -> None:
        if self.max_ts is None or ts > self.max_ts:
            self.max_ts = ts

    def value(self, clocks: Clocks) -> int | None:
        """Largest time t such that no event with time < t is still expected on time."""
        return None if self.max_ts is None else self.max_ts - clocks.max_skew()

    def closed(self, last_start: int, window_us: int, clocks: Clocks) -> bool:
        """A group whose last event started at ``last_start`` can take no more on-time events."""
        return closes(self.value(clocks), last_start, window_us)

    def too_late(self, ts: int, lateness_us: int, clocks: Clocks) -> bool:
        """An event this old can no longer change an emitted incident."""
        wm = self.value(clocks)
        return wm is not None and ts < wm - lateness_us
