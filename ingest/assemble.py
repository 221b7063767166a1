"""Per-segment passes over the hit lines of one segment, in line order.

What one line cannot say alone:

* **time**: a stamp without a year takes its year from the nearest dated line
  of the same segment (of a file: a line no signature matched too,
  ``_year_from_unmatched``), after it when it is above, before it when below
  (``year_by_side``) (glog/c10 next to ``dmesg -T`` or an ``nvidia-smi``
  header); raw ``[  123.456]`` stamps become wall time with the boot time
  (journald, or a syslog line that printed both), else with the segment's
  reference time (a file's mtime, a Kafka value's append time, an envelope's
  time) as the time of its last kernel stamp; a line without any
  stamp inherits the closest earlier stamped line's time (``inherited``) of
  its segment (a file, a Kafka value), else of its host, or
  the segment's reference time (a file's mtime or the Kafka append time are
  only upper bounds: ``details.ts_upper_bound``);
* **carried context**: an ``nvidia-smi nvlink`` block header names the GPU
  of the link lines below it; a ``GPU at PCI:…: GPU-<uuid>`` preamble names
  the uuid of the Xid that follows; an ``nvidia-smi -q`` ``GPU <bus id>`` section
  header names the GPU of its Fabric and GPU Recovery Action lines; ``NCCL_P2P_DISABLE=1`` / ``NCCL_P2P_LEVEL``
  puts the ranks that follow on the P2P fallback path; a board serial line names
  the serial of the GPU of the preamble before it; the driver's RC watchdog line
  (``GPU is probably locked!``) gives its notify timeout to the host's next Xid;
  an ``ibstat`` block's ``CA '…'``, ``Port N:`` and ``State:`` lines name the
  HCA, port and logical state of its ``Physical state:`` line;
* **line groups**: an NVSwitch error is printed as up to three SXid lines of
  one switch and code (Fatal/Non-fatal line, Severity/Engine line, Data
  line), merged into one event.

Pure: takes the hits, returns rows.
"""

from __future__ import annotations

import re
import sys
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from email._parseaddr import _parsedate_tz  # parsedate_tz's, which reads a zone it does not know as UTC
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import numpy as np

from ingest.catalog import Compiled
from ingest.decode import Segment
from ingest.prefix import (US, Prefix, _second_us, _zone_named, clock_us, parse_iso_us, parse_prefix, plausible,
                           resolve_year, resolve_year_after, to_us, zones_apart)
from schemas.events import LINE_ID_PRECISION_US, TS_RANGE_US, line_event_id, make_event_id
from schemas.hostname import canonical_host, is_host_name

#: signatures whose events are also a link's state sample (GET /links): inactive, or down
_LINK_STATE_SIGS = frozenset({"nvml.nvlink_inactive", "dcgm.nvlink_down", "nvml.nvlink_status_row"})
_REF_PRECISION = {"kafka": 1000, "envelope": 1, "file": US}
#: reference times a segment's raw kernel stamps are counted back from, its last stamp taken as printed then
_COUNTED_BACK = frozenset({"file", "kafka", "envelope"})
#: a raw kernel stamp past this many seconds (ten years) is no uptime: a segment ending in one is not counted back
_MAX_UPTIME_S = 10 * 365 * 86400
_SXID_GROUP_US = 2 * US
#: every zone's offset from UTC is whole quarter hours (µs): +05:30, +05:45 (``prefix.zones_apart``)
QUARTER_HOUR_US = 900 * US
STORM_GAP_US = 60 * US
#: the longest a storm event spans from its first copy (µs): a longer storm is one event per span, so each stays within
#: the windows (120 s) of what it explains or follows. One event for an Xid 74 every 30 s for an hour was placed at its
#: first line alone: a watchdog timeout 45 minutes in was a hang of its own, and the incident ended where it began
#: (a break-it pass)
STORM_SPAN_US = 60 * US


@dataclass(slots=True)
class Hit:
    """One signature occurrence on one logical line."""

    seg: Segment  # the segment (message, record or file) the line came from
    line: int  # physical line index in the segment (0-based), where the logical line starts
    sub: int  # occurrence index on that line (multi entries), else 0
    c: Compiled
    row: dict[str, Any]
    prefix: Prefix
    text: str  # the logical line, as matched
    message: str  # the original text (newlines kept for joined lines)

    @property
    def origin(self) -> str:
        """Source coordinates: ``<segment origin>:<line number>``, plus ``#<n>`` for a line's n-th occurrence."""
        o = f"{self.seg.origin}:{self.line + self.seg.line_base}"
        return f"{o}#{self.sub}" if self.sub else o


@dataclass(slots=True)
class Assembled:
    events: list[dict[str, Any]] = field(default_factory=list)
    link_samples: list[dict[str, Any]] = field(default_factory=list)
    topology: list[dict[str, Any]] = field(default_factory=list)


_DATE_LINE = re.compile(r"^\s*(?:Timestamp\s+:\s+)?(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) ([A-Z][a-z]{2}) +(\d{1,2}) "
                        r"(\d{2}):(\d{2}):(\d{2}) (\d{4})")
_MON = {m: i for i, m in enumerate(["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov",
                                     "Dec"], 1)}


def _date_line_ts(text: str, tz) -> int | None:
    from datetime import datetime

    m = _DATE_LINE.match(text)
    if not m or m.group(1) not in _MON:
        return None
    try:
        return to_us(datetime(int(m.group(6)), _MON[m.group(1)], int(m.group(2)), int(m.group(3)),
                              int(m.group(4)), int(m.group(5)), tzinfo=tz))
    except ValueError:
        return None


_KERNEL_STAMP = re.compile(rb"\[ *(\d{1,10}\.\d{1,9})\]")  # at a line start


def last_kernel_stamp(data: bytes) -> float | None:
    """Seconds since boot of the last line of ``data`` that starts with a raw dmesg stamp (``[  123.456789]``);
    None when no line does. Reads backwards from the end, from one line starting with ``[`` to the one before
    (``bytes.rfind``: a regex over the bytes tries every position, ~0.3 ms for a 30 KB Kafka value)."""
    end = len(data)
    while True:
        nl = data.rfind(b"\n[", 0, end)
        m = _KERNEL_STAMP.match(data, nl + 1)  # nl = -1: the first line
        if m is not None:
            return float(m.group(1))
        if nl < 0:
            return None
        end = nl


#: a raw kernel stamp this much (seconds) below the stamp of the line before it starts another boot: the kernel's
#: ring buffer may print lines of two CPUs a few microseconds out of order, no boot ends within a second of starting
REBOOT_BACK_S = 1.0
#: every raw kernel stamp at a line start, with the newline before it (the data is searched with one before its first
#: line): ``findall`` gives the stamps at C speed, ``finditer`` their offsets where a reboot was seen
_KERNEL_STAMPS = re.compile(rb"\n\[ *(\d{1,10}\.\d{1,9})\]")


#: how many stamped lines after a drop of the stamps ``kernel_boots`` reads for a repeat of the boot's own lines
_REPEAT_LOOK = 1024  # (64 missed a second dump with 70 new lines before the repeat: a break-it pass)


def kernel_boots(data: bytes) -> list[tuple[int, float]]:
    """The boots of a capture of raw kernel lines that spans reboots (a serial console's log, ``dmesg`` outputs
    of one host appended to one file): ``(first line index, largest kernel stamp in s)`` of each boot, oldest first,
    the first boot from line 0; ``[]`` when the stamps never go back by :data:`REBOOT_BACK_S` (one boot).

    A raw stamp is the time since the boot *of that boot* (formats.md §1.1): a new boot's stamps start again at 0
    (``[    0.000000] Linux version …``), so a stamp below the one before it is a reboot — unless the lines after it
    repeat the boot's own lines, stamps and all: the same boot dumped again (``dmesg >> file`` twice), which was a
    reboot and a "recurrence" of its one fault (a break-it pass). A boot's first lines print the same text at
    ``0.000000`` every time, so the test is a repeated line stamped past a second among the first
    :data:`_REPEAT_LOOK` after the drop. Counting a file's stamps
    back from its mtime as one boot put a fault of the boot before the reboot at a time of the boot after it (a
    break-it pass). The largest stamp of a boot, not its last: two CPUs' lines may be a little out of order."""
    text = b"\n" + data
    stamps = _KERNEL_STAMPS.findall(text)
    if len(stamps) < 2:
        return []
    values = list(map(float, stamps))
    if all(b >= a - REBOOT_BACK_S for a, b in zip(values, values[1:])):
        return []
    matches = list(_KERNEL_STAMPS.finditer(text))

    def whole(i: int) -> bytes:  # stamped line i, stamp and text
        at = matches[i].start() + 1
        end = text.find(b"\n", at)
        return text[at:end if end >= 0 else len(text)]

    boots: list[tuple[int, float]] = []
    first, line, counted, top, prev = 0, 0, 0, values[0], values[0]
    seen: set[bytes] = set()  # the current boot's stamped lines
    for i, m in enumerate(matches):
        # the match starts at the newline before its line: data[m.start() - 1] (the added one for line 0)
        line += data.count(b"\n", counted, m.start())
        counted = m.start()
        value = values[i]
        if value < prev - REBOOT_BACK_S:
            # a line past a second among the first after the drop (before any further drop) that repeats one of this
            # boot's, stamp and text: the same boot dumped again. Not only the first such line: a second dump after
            # the ring buffer wrapped starts at a line the first one may not hold ("[5000] systemd…" then the same
            # Xid 79 at the same stamp: a reboot, the Xid two incidents, a break-it pass)
            again = False
            for j in range(i, min(i + _REPEAT_LOOK, len(values))):
                if j > i and values[j] < values[j - 1] - REBOOT_BACK_S:
                    break
                if values[j] > 1.0 and whole(j) in seen:
                    again = True
                    break
            if not again:
                boots.append((first, top))
                first, top, seen = line, value, set()
        top = max(top, value)
        seen.add(whole(i))
        prev = value
    boots.append((first, top))
    return boots if len(boots) > 1 else []


def nearest_dated(dated: list[tuple[int, int]], with_line: bool = False) -> Callable[[int], Any]:
    """For ``dated`` (line number, µs) pairs in hit order, a function from a line number to the time of the
    dated line nearest to it: the first in ``dated`` order of those at the least distance, as
    ``min(dated, key=distance)`` gives, found by binary search over the distinct line numbers (a storm of
    year-less lines among dated ones costs a search per line, not a pass over every dated line). With
    ``with_line``, that dated line's ``(line number, µs)``."""
    first: dict[int, int] = {}  # line number -> index of its first pair in ``dated``
    for i, (line, _ts) in enumerate(dated):
        first.setdefault(line, i)
    lines = sorted(first)

    def time_of(line: int) -> int:
        k = bisect_left(lines, line)
        below = lines[k - 1] if k > 0 else None
        above = lines[k] if k < len(lines) else None
        if below is None or (above is not None and (above - line, first[above]) < (line - below, first[below])):
            return dated[first[above]] if with_line else dated[first[above]][1]
        return dated[first[below]] if with_line else dated[first[below]][1]
    return time_of


def year_by_side(yearless: tuple[int, int, int, int, int, int], line: int, dated_line: int, dated_us: int,
                 tz, bound: int | None = None) -> int | None:
    """µs of a year-less stamp on ``line`` given the dated line ``dated_line`` (at ``dated_us``) nearest to it: a
    log is in its order, so after a dated line above it (:func:`ingest.prefix.resolve_year_after`), before one below
    it or on its own line (:func:`ingest.prefix.resolve_year`, at most two days after). The year nearest the dated
    line put an August line five months before its January banner, and a March line after the October one below it
    (a third break-it pass). ``bound`` (µs), its segment's reference time (a file's mtime, a Kafka append time: the
    log was written then or earlier), caps the year after a dated line: past it by more than two days, the lines are
    an older log appended below a newer one (``cat dmesg-T.txt syslog``: "Sep 28" under "Oct 2 2025" in a file of
    October 3, 2025 went to 2026, past its file's time, and fell back to the dated line's time, a break-it pass), and
    take the latest year at most two days after the bound. A file whose time is older than its dated line bounds
    nothing: the year that puts the line nearest the dated line (capping put a December 2026 line under a dated
    December 2026 line in 2025, silently; not capping put "Sep 28" under "Oct 2 2025" a year on: break-it passes)."""
    if dated_line < line:
        t = resolve_year_after(*yearless, dated_us, tz)
        if t is not None and bound is not None and plausible(bound) and t > bound + 2 * 86400 * US:
            if dated_us <= bound + 2 * 86400 * US:
                return resolve_year(*yearless, bound, tz)
            # a file older than its dated line bounds nothing: the year that puts the line nearest that dated line
            near = resolve_year(*yearless, dated_us, tz)
            if near is not None and abs(near - dated_us) < abs(t - dated_us):
                return near
        return t
    return resolve_year(*yearless, dated_us, tz)


#: a full date with its year where a line's prefix may print one: ISO (``2025-10-02 12:20:48``, Megatron's iteration
#: lines, Python's logging), ctime (``Thu Oct  2 12:20:54 2025``, ``dmesg -T``), Fabric Manager's ``Oct 31 2023
#: 20:45:27``. Only where :func:`ingest.prefix.parse_prefix` reads it as the line's stamp does it date anything
_FULL_DATE = re.compile(rb"(?:19|20)\d\d-[01]\d-[0-3]\d[ T]\d\d:\d\d"
                        rb"|[A-Z][a-z]{2} +\d{1,2} \d\d:\d\d:\d\d (?:19|20)\d\d"
                        rb"|[A-Z][a-z]{2} +\d{1,2} (?:19|20)\d\d \d\d:\d\d:\d\d")
#: the record's own RFC 3339 stamp with its zone at the start of a message: logrus' ``time="…"``, a JSON record's
#: ``"time"``/``"ts"``/``"timestamp"`` first, or the stamp alone (:func:`_own_date`). A date further in is the message's
#: (a certificate's expiry, a "lastSuccess" field), not the line's: it dated the whole file a year off (a break-it pass)
_OWN_DATE = re.compile(r'(?:time=|\{"(?:time|ts|timestamp|@timestamp)":\s*)?"?'
                       r'((?:19|20)\d\d-[01]\d-[0-3]\dT\d\d:\d\d:\d\d(?:[.,]\d{1,9})?(?:Z|[+-]\d\d:?\d\d))')


#: a JSON record's time field anywhere in it (logrus' JSON formatter sorts its keys: "time" comes last; zap writes
#: "ts" second, as epoch seconds or ISO 8601)
_JSON_OWN_DATE = re.compile(r'"(?:time|ts|timestamp|@timestamp)":\s*(?:"((?:19|20)\d\d-[01]\d-[0-3]\dT\d\d:\d\d:\d\d'
                            r'(?:[.,]\d{1,9})?(?:Z|[+-]\d\d:?\d\d))"|(1\d{9}(?:\.\d{1,9})?)\b)')


#: a program's name before a JSON record in a line ("preflight-dcgm-diag {…}")
_PROGRAM_BEFORE_RECORD = re.compile(r"[A-Za-z][\w.-]{0,63}:? (?=\{\")")


def _record_text(rest: str) -> str:
    """``rest`` when it begins as a logrus text record (``time="…``) or a JSON record (``{``), or the JSON record after
    a program's name (:data:`_PROGRAM_BEFORE_RECORD`); else "" (nothing of a record's own: the message's)."""
    if rest.startswith(('time="', "{")):
        return rest
    m = _PROGRAM_BEFORE_RECORD.match(rest)
    return rest[m.end():] if m else ""


def _own_date(rest: str) -> int | None:
    """µs of the RFC 3339 stamp a line's message begins with (:data:`_OWN_DATE`), or of a JSON record's time field
    wherever it stands (:data:`_JSON_OWN_DATE`: logrus' sorted keys, zap's epoch ``ts`` under a syslog header took the
    file's year, two years off: a break-it pass); None without one."""
    m = _OWN_DATE.match(rest)
    if m:
        return parse_iso_us(m[1])
    if rest.startswith("{") and (j := _JSON_OWN_DATE.search(rest, 0, 4096)):
        return parse_iso_us(j[1]) if j[1] else int(float(j[2]) * US)
    return None


#: the bytes of a file read for dated lines (:func:`_year_from_unmatched`): the scan is bounded, whatever the file
YEAR_SCAN_BYTES = 16 << 20
#: the dated candidates tried per year-less line, nearest first
_YEAR_TRIES = 8


def _year_from_unmatched(hits: list[Hit], tz) -> set[int]:
    """Year-less stamps (glog/c10's ``E1002 12:20:55``, syslog's ``Oct  2 12:20:55``) of a file's hits when none of
    the stream's hits is dated: the year the nearest line of the file whose prefix is a full date gives it
    (:func:`year_by_side`), matched or not (a Megatron iteration line ``[2025-10-02 12:20:48]`` above a rank's
    watchdog line), instead of the file's time.

    A copied file's time says nothing of its lines' year: a 2025 watchdog line read in 2026 was put in 2026, a year
    from the Xid of its GPU (NVIDIA-NeMo/Megatron-Bridge#836, a real-logs pass). Only files (``ref_basis`` "file"): a
    Kafka record's or an envelope's time is when the line was read, and its year the line's. At most
    ``YEAR_SCAN_BYTES`` of a file are searched (C-speed, :data:`_FULL_DATE`); a candidate dates only when
    :func:`ingest.prefix.parse_prefix` reads it as the line's stamp with its year. Lines are numbered as ``Hit.line``
    (0-based in the segment). Returns the ``id`` of each hit it dated."""
    dated: set[int] = set()
    by_seg: dict[int, list[Hit]] = {}
    for h in hits:
        if h.prefix.yearless is not None and h.seg.ref_basis == "file":
            by_seg.setdefault(id(h.seg), []).append(h)
    for todo in by_seg.values():
        data = todo[0].seg.data[:YEAR_SCAN_BYTES]
        lines: list[int] = []  # candidate line numbers, ascending, and where each line starts and ends
        spans: list[tuple[int, int]] = []
        line = last = 0
        for m in _FULL_DATE.finditer(data):
            start = data.rfind(b"\n", 0, m.start()) + 1
            if spans and start == spans[-1][0]:
                continue
            line += data.count(b"\n", last, start)
            last = start
            end = data.find(b"\n", m.end())
            lines.append(line)
            spans.append((start, len(data) if end < 0 else end))
        if not lines:
            continue
        known: dict[int, int | None] = {}

        def dated_at(k: int) -> int | None:
            if k not in known:
                a, b = spans[k]
                p = parse_prefix(data[a:b].decode("utf-8", "replace"), ref_us=None, tz=tz)
                known[k] = p.ts if p.ts is not None and not p.year_inferred and plausible(p.ts) else None
            return known[k]

        for h in todo:
            i = bisect_left(lines, h.line)
            order = sorted(range(max(0, i - _YEAR_TRIES), min(len(lines), i + _YEAR_TRIES)),
                           key=lambda k: (abs(lines[k] - h.line), k))
            ref = next(((lines[k], t) for k in order[:_YEAR_TRIES] if (t := dated_at(k)) is not None), None)
            if ref is not None and (t := year_by_side(h.prefix.yearless, h.line, *ref, tz,
                                                      year_ref(h.seg))) is not None:
                h.prefix.ts = t
                dated.add(id(h))
    return dated


#: how far (µs) a file's year-less stamp may lie from the dated lines of a related file for that file to give its
#: year (:func:`year_anchors`): the files of one job span hours, its hosts' kernel logs days at most
RELATED_YEAR_US = 7 * 86400 * US


@dataclass
class YearAnchors:
    """A batch's dated stamps for the year-less stamps of its files (:func:`year_anchors`): ``spans``, (``"comm"``,
    NCCL communicator id) or (``"host"``, host) -> the (earliest, latest) µs of each stream's dated stamps that holds
    that communicator's lines or that host's; ``predated``, the ``id`` of each hit a dated line of its own file (not
    a hit) already gave its year (:func:`_year_from_unmatched`, not run twice)."""

    spans: dict[tuple[str, str], list[tuple[int, int]]] = field(default_factory=dict)
    predated: set[int] = field(default_factory=set)


def year_anchors(streams: list[list[Hit]], tz) -> YearAnchors:
    """The dated stamps of a batch's streams (``Hit.row`` with its ``comm`` and ``host``, before
    :func:`resolve_times`): a stream's full stamps (a year printed, no raw uptime), or, in a file none of whose hits
    prints a year, the years its other dated lines give its hits (:func:`_year_from_unmatched`).

    The files of one job come together: a rank's log of c10/glog stamps without a year (``[rank21]:[E1204
    03:21:41…``), copied long after the job, took its year from its file's time, a year from its peer's log, which
    printed ``2025-12-04 03:11:40`` above the same stamps and shared its communicator — two hangs of one collective
    a year apart, each naming the other's host as the silent one (a fresh user's trial)."""
    out = YearAnchors()
    for hits in streams:
        # stamps a file's time believes (a clock set years ahead dated its job's other files, then lost them their
        # own times: a break-it pass)
        times = [h.prefix.ts for h in hits if h.prefix.ts is not None and not h.prefix.year_inferred
                 and _believable(h.prefix.ts, h.seg)]
        if not times and any(h.prefix.yearless is not None for h in hits):
            done = _year_from_unmatched(hits, tz)
            out.predated |= done
            times = [h.prefix.ts for h in hits if id(h) in done and h.prefix.ts is not None]
        if not times:
            continue
        span = (min(times), max(times))
        for k in _year_keys(hits):
            out.spans.setdefault(k, []).append(span)
    # a job's thousands of files overlap: merged, a year-less line tries a few spans, not one per file (quadratic in
    # a job's ranks: 2,000 rank logs took 152 s, a break-it pass)
    out.spans = {k: _merged(v) for k, v in out.spans.items()}
    return out


def _merged(spans: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """``spans`` ((lo, hi) µs) sorted, the overlapping ones merged."""
    out: list[tuple[int, int]] = []
    for lo, hi in sorted(spans):
        if out and lo <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], hi))
        else:
            out.append((lo, hi))
    return out


def _year_keys(hits: list[Hit]) -> set[tuple[str, str]]:
    """The communicators and hosts of a stream's hits, as :class:`YearAnchors` keys: a line's host is its header's
    or its segment's (the file's name or folder, the record's key) here, before :func:`assign_hosts` sets the rows'
    (a host's ``dmesg -T`` and its ``kern.log`` of syslog stamps were a year apart: a break-it pass)."""
    keys = {("comm", c) for h in hits if (c := h.row.get("comm"))}
    keys.update(("host", host) for h in hits if (host := h.row.get("host") or h.prefix.host or h.seg.host))
    return keys


def _year_from_related(hits: list[Hit], tz, anchors: YearAnchors, done: set[int]) -> set[int]:
    """Year-less stamps of a file's hits (``ref_basis`` "file", not in ``done``) that nothing of their own file dates:
    the year that puts each within :data:`RELATED_YEAR_US` of the dated stamps of a stream of the same communicator or
    host (:func:`year_anchors`), the nearest such span when several do; else they keep their file's time's year.
    Returns the ``id`` of each hit it dated."""
    spans = _merged(span for k in _year_keys(hits) for span in anchors.spans.get(k, ()))
    dated: set[int] = set()
    if not spans:
        return dated
    for h in hits:
        if h.prefix.yearless is None or id(h) in done or h.seg.ref_basis != "file":
            continue
        best: tuple[int, int] | None = None  # (distance to its span, µs)
        for lo, hi in spans:
            # the latest year at most the window after the span (resolve_year adds two days): inside, or just before
            t = resolve_year(*h.prefix.yearless, hi + RELATED_YEAR_US - 2 * 86400 * US, tz)
            if t is None or t < lo - RELATED_YEAR_US or not _believable(t, h.seg):
                continue
            gap = max(lo - t, t - hi, 0)
            if best is None or gap < best[0]:
                best = (gap, t)
        if best is not None:
            h.prefix.ts = best[1]
            dated.add(id(h))
    return dated


#: how far (µs) a line's time may lie ahead of its arrival (its Kafka append time, its file's mtime) and still be
#: its time: a day, far beyond any clock skew the correlator allows (``correlate.window.SKEW_CAP_US``). A line stamped
#: 2099 kept that time, and its incident, its page and the top of ``GET /incidents`` stayed open for ever (a break-it
#: pass); one a day ahead is a clock set wrong or a garbled stamp, as one from 1970
AHEAD_US = 86400 * US


def year_ref(seg: Segment) -> int:
    """The time (µs) a stamp of ``seg`` that lacks its year or date takes them from: the segment's reference time,
    but its arrival (``ingest_ts``) when that reference is no fleet time (:func:`prefix.plausible`). A record whose
    envelope time was 1970 (a host clock reset to the epoch: ``details.envelope_ts_rejected``) gave its syslog line
    ``Nov 14 22:00:00`` the year 1969, which was refused, and the line was timed by its arrival instead of its own
    stamp (a break-it pass)."""
    return seg.ref_ts if plausible(seg.ref_ts) else seg.ingest_ts


def _believable(ts: int, seg: Segment) -> bool:
    """``ts`` (µs) is :func:`prefix.plausible` and at most ``AHEAD_US`` after ``seg``'s arrival (when that is a
    time)."""
    return plausible(ts) and (ts <= seg.ingest_ts + AHEAD_US or not plausible(seg.ingest_ts))


def resolve_times(hits: list[Hit], tz, seen_boots: dict[tuple, int] | None = None,
                  anchors: YearAnchors | None = None) -> None:
    """Set ``row['ts']``, ``ts_basis``, ``ts_precision_us`` on every hit of one stream (module doc).

    A stamp outside :func:`plausible` (year 0001, 9999, a garbled uptime) or more than ``AHEAD_US`` after its
    arrival (2099 in a line that reached Kafka today) is not used: the line's arrival time stands in, and
    ``details.ts_rejected`` keeps what the line said.

    ``seen_boots`` ((host, raw stamp, text after the prefixes) -> boot time, µs), shared by the streams of one batch,
    holds the lines that printed both a wall-clock and a raw stamp; a stream of the host with no boot time of its own
    that holds one of those very lines (the same boot captured twice: ``kern.log`` through syslog, and a raw ``dmesg``
    taken later) takes that boot time instead of counting back from its file's time, which put the same Xid 79 at
    two times an hour and a half apart, two incidents (a break-it pass). A line seen in one capture only says nothing
    of another boot.

    ``anchors`` (:func:`year_anchors` of the batch's streams) date the year-less stamps of a file nothing of its own
    dates by the files of its communicator or host; a year still taken from the file's time is said in
    ``details.ts_year_from`` (``file``; ``related`` when another file gave it)."""
    _shift_zoneless(hits)
    # 1. dated lines of this segment (full stamps, not year-inferred)
    dated: list[tuple[int, int]] = []
    unlent: set[int] = set()  # hits timed by an epoch in their message: not lent to the unstamped lines after them
    # segments some of whose hits print a wall-clock stamp: an epoch (UTC) there may disagree with their local time
    stamped = {id(h.seg) for h in hits if h.prefix.ts is not None or h.prefix.yearless is not None
               or h.prefix.clock is not None}
    # (stream, host) -> (hit index, shift µs) of its lines whose own zoned stamp showed their year-less, zoneless
    # header to be another zone's
    header_shift: dict[tuple[str, str], list[tuple[int, int]]] = {}
    for i, h in enumerate(hits):
        p = h.prefix
        if p.ts is None and p.mono is None:
            details = h.row["details"]
            if when := details.get("failure_time"):
                # torchrun's failure record prints the time its worker failed: the line's time when it has no stamp (a
                # copied file's time made its kill and the kernel's OOM kill of that pid two incidents: a break-it pass)
                if (t := _failure_time(when, tz)) is not None:
                    p.ts, p.precision_us = t, US
                    details["ts_in_text"] = True
            elif (t := _line_time(details.get("line_time"), tz)) is not None:
                # a message that prints when it happened as ISO 8601 (a signature's ``line_time`` group: slurmstepd's
                # "*** STEP 4008.0 ON nid001277 CANCELLED AT 2023-12-05T07:16:01 ***", its "STEPD TERMINATED ON cn106
                # AT …"): the step's end was at its file's copy time, hours from the dmesg of the node it ended on (a
                # real-logs pass, chrisknewman/tusas#149). ``ts_in_text``: the line printed no stamp of its own, a
                # job's output as its launcher wrote it (``correlate.rules.log_of``)
                p.ts, p.precision_us = t, US
                details["ts_in_text"] = True
            elif (sel := _sel_time(details.get("sel_date"), details.get("sel_time"), tz)) is not None:
                # a BMC event log row's own date and time (host.bmc_power_fault: ipmitool's "11/15/2019 | 18:50:40",
                # FreeIPMI's "Dec-09-2024 | 21:12:29"), the BMC's clock: a SEL dumped days later put a PSU failure at
                # the dump's time, and by that upper bound it explained any earlier Xid 79 of the host (a real-logs
                # pass). "PostInit" rows print none and keep their file's time
                p.ts, p.precision_us = sel, US
            elif ms := details.get("sample_ts_ms"):
                # a Prometheus sample's own timestamp (ms): three samples ten minutes apart were all at their file's
                # time, in no order, and a counter's rise had no rate (a break-it pass)
                if plausible(t := int(ms) * 1000):
                    p.ts, p.precision_us = t, 1000
            elif (sec := details.get("epoch_s")) and id(h.seg) not in stamped:
                # a line that prints its own time as epoch seconds (a signature's ``epoch_s`` group: Abseil's "***
                # SIGSEGV received at time=1775734074 on cpu 19 ***" from a signal handler, NVIDIA/nccl#2213): a crash
                # dated by its file's time was the file's copy time, not the crash's. Its time is its own only: in a
                # capture that prints no stamps the lines after it (the peers' watchdog timeouts half an hour later)
                # keep their file's time as an upper bound rather than take the crash's. Not in a segment whose other
                # lines print stamps: glog's, syslog's and dmesg -T's are local times without a zone, and the epoch's
                # UTC put the crash eight hours from the watchdog timeout it caused, two pages (a break-it pass); it
                # takes their times as before
                if plausible(t := int(sec) * US):
                    p.ts, p.precision_us = t, US
                    unlent.add(id(h))
        if h.c.sig.id == "clock.date_line":
            t = _date_line_ts(h.text, tz)
            if t is not None:
                p.ts, p.precision_us = t, US
        if p.yearless is not None and (own := _own_date(p.rest)) is not None:
            # a year-less header over a message that prints its own full date (logrus' time="2024-04-30T21:13:04Z"
            # under dockerd's syslog header): that date's year, when it is the header's day (NVIDIA/dcgm-exporter#319:
            # the file's time put it two years on, a real-logs pass)
            t = resolve_year(*p.yearless, own, tz)
            if t is not None and abs(t - own) <= 86400 * US:
                p.ts, p.yearless = t, None
                if zones_apart(own, t, QUARTER_HOUR_US):
                    # ... and whole hours from it (quarter hours: +05:30, +05:45): the header (no year, no zone) is
                    # another zone's local time, the message's stamp says its zone (logrus' time="…+11:00" under
                    # rsyslog's header read as UTC, a leftovers pass): the message's instant, and its host's other
                    # header-only lines of the stream move with it
                    p.ts = own
                    header_shift.setdefault((h.seg.stream, h.row["host"]), []).append(
                        (i, round((own - t) / QUARTER_HOUR_US) * QUARTER_HOUR_US))
                elif abs(own - t) <= 2 * US:
                    # seconds from it: the header is the decode zone's, and the lines nearest this one stay
                    header_shift.setdefault((h.seg.stream, h.row["host"]), []).append((i, 0))
        elif (p.ts is None and p.mono is None and p.yearless is None
              and (own := _own_date(_record_text(p.rest))) is not None):
            # a logrus text record with no header before it (time="2024-09-30T19:49:46Z" level=error msg="…": the
            # device plugin's and the GPU operator's own log, ComputeCanada/puppet-magic_castle#387), or a JSON
            # record read as text, after its program's name at most ("preflight-dcgm-diag {"event": "Test fail", …,
            # "timestamp": "2026-06-04T06:08:10.021979Z"}": NVIDIA/NVSentinel#1358): its own time, not its file's (a
            # real-logs pass)
            p.ts, p.precision_us = own, US
        if p.ts is not None and p.yearless is None and p.clock is None:  # not p.year_inferred
            dated.append((h.line, p.ts))
    # 2. year-less stamps take the year of the nearest dated line
    if dated:
        nearest = nearest_dated(dated, with_line=True)
        for h in hits:
            if h.prefix.yearless is not None:
                t = year_by_side(h.prefix.yearless, h.line, *nearest(h.line), tz, year_ref(h.seg))
                if t is not None:
                    h.prefix.ts = t
    else:
        # the file's own dated lines, matched or not; else those of the batch's files of its job or host; else the
        # year of its file's time, a guess said in ``details.ts_year_from``
        if anchors is not None:
            done = {id(h) for h in hits if id(h) in anchors.predated}
            related = _year_from_related(hits, tz, anchors, done)
        else:
            done, related = _year_from_unmatched(hits, tz), set()
        for h in hits:
            if h.prefix.yearless is not None and h.seg.ref_basis == "file" and id(h) not in done:
                h.row["details"]["ts_year_from"] = "related" if id(h) in related else "file"
    if any(shift for got in header_shift.values() for _i, shift in got):
        _shift_headers(hits, header_shift)
    # 2b. clocks without a date take their day from the nearest dated line, else in their log's order back from its
    # reference time (each line at or before the next: a log written before its file's time)
    _date_clocks(hits, tz)
    # 2c. a local time the zone's clock went back over (the hour repeated in autumn) is its second pass when the log's
    # order says so
    _fall_back(hits, tz)
    # 3. boot time: a segment's own envelope's (journald: a capture that spans a reboot holds two), else its
    # host's: an envelope's or a line of the host that printed wall time and the kernel stamp (one call may
    # hold several hosts' lines: unkeyed Kafka records, a job's aggregated log)
    boot: dict[str, int] = {}
    for h in hits:
        if h.seg.boot_ts is not None:
            boot.setdefault(h.row["host"], h.seg.boot_ts)
    for h in hits:
        if h.prefix.ts is not None and h.prefix.mono is not None:
            boot.setdefault(h.row["host"], h.prefix.ts - int(h.prefix.mono * US))
            if seen_boots is not None:
                seen_boots.setdefault((h.row["host"], h.prefix.mono, h.prefix.rest), boot[h.row["host"]])
    if seen_boots:
        rebooted: dict[int, bool] = {}  # segment -> it holds several boots (kernel_boots: a scan, once per segment)
        for h in hits:
            if h.prefix.mono is not None and h.prefix.ts is None and h.row["host"] not in boot and (
                    (b := seen_boots.get((h.row["host"], h.prefix.mono, h.prefix.rest))) is not None):
                several = rebooted.get(id(h.seg))
                if several is None:
                    several = rebooted[id(h.seg)] = bool(kernel_boots(h.seg.data))
                if not several:  # a capture of several boots: each its own (below)
                    boot[h.row["host"]] = b
    # a file, a Kafka value or an envelope without boot time: its reference time (the file's mtime, the Kafka
    # append time, the shipper's read time) is the time of its last kernel stamp (of any line, not only of the
    # lines that matched: a capture usually ends with noise written long after the fault), or later
    # A line whose stamp would count forward past the reference time (one before a reboot inside the capture, a
    # garbled uptime) is not counted back: it is timed as a line without a stamp (below); nor are the lines of a
    # segment whose last stamp is no uptime (over _MAX_UPTIME_S) or whose reference time is no time.
    # Where no line starts with a stamp (one after a syslog prefix), the hits' largest stamp is the last.
    # segment -> (it, its last stamp, the hits' largest, the last hit's, whether the hits' stamps went back)
    last: dict[int, tuple[Segment, float | None, float, float, bool]] = {}
    for h in hits:
        if h.prefix.mono is not None and h.prefix.ts is None and h.seg.ref_basis in _COUNTED_BACK:
            k = id(h.seg)
            got = last.get(k)
            if got is None:
                got = (h.seg, last_kernel_stamp(h.seg.data), h.prefix.mono, h.prefix.mono, False)
            back = got[4] or h.prefix.mono < got[3] - REBOOT_BACK_S  # the hits' own stamps go back: a reboot
            last[k] = (got[0], got[1], max(got[2], h.prefix.mono), h.prefix.mono, back)
    ref_boot: dict[int, int] = {}  # segment -> boot time counted back from its reference time, µs
    # segment -> (first line of each boot, the latest each boot may have begun, µs) when its lines span reboots: a
    # boot before the last ended before the next began, so its lines are counted back from that start, as upper bounds
    boots_of: dict[int, tuple[list[int], list[int]]] = {}
    for k, (seg, stamp, largest, _, back) in last.items():
        stamp = largest if stamp is None else stamp
        if stamp <= _MAX_UPTIME_S and plausible(seg.ref_ts):
            # a boot's first lines are stamped 0.000000, and a drop after the last hit shows as a last stamp below it
            # (C-speed tests; the full scan costs ~0.5 µs a line)
            boots = (kernel_boots(seg.data) if back or b"0.000000]" in seg.data or stamp < largest - REBOOT_BACK_S
                     else [])
            if boots and all(up <= _MAX_UPTIME_S for _, up in boots):
                ref_boot[k] = seg.ref_ts - int(boots[-1][1] * US)  # the last boot's largest stamp
                starts = [ref_boot[k]]
                for _, up in reversed(boots[:-1]):
                    starts.append(starts[-1] - int(up * US))
                boots_of[k] = ([first for first, _ in boots], starts[::-1])
            else:  # one boot: its largest stamp (two CPUs' lines a little out of order); the last past a garbled one
                ref_boot[k] = seg.ref_ts - int((stamp if boots else max(stamp, largest)) * US)
    # (ts, precision) of the closest earlier stamped line of the same segment (a file, a Kafka value: one
    # writer's lines in its order, whatever hosts they name), else of the same host in an earlier segment. The
    # hits of one call may come from many Kafka records (a run of unkeyed one-line records of several hosts):
    # a line does not take another host's time from another record, which would hang on how records were batched
    last_seg: dict[int, tuple[int, int]] = {}
    last_host: dict[str, tuple[int, int]] = {}
    last_line: dict[int, int] = {}  # segment -> the line of its last hit that gave ``last_seg``
    heads: dict[tuple[int, int], Any] = {}  # (segment, offset) -> a traceback header's time (_traceback_head)
    located: dict[int, tuple[np.ndarray, int]] = {}  # segment -> its newline offsets as far as read (_newlines)
    shifted = {id(h.seg) for h in hits if h.prefix.zone_shift is not None}  # _shift_zoneless moved their stamps
    bounded: set[int] = set()  # hits dated by their segment's reference time as an upper bound
    clocks: dict[tuple[int, int], int | bool] = {}  # whether a segment holds a clock (_holds_anywhere)
    for h in hits:
        p, row, seg = h.prefix, h.row, h.seg
        host = row["host"]
        prev = last_seg.get(id(seg)) or last_host.get(host)
        if p.ts is not None and not _believable(p.ts, seg):
            row["details"]["ts_rejected"] = p.ts
            p.ts = None
        elif p.unreadable is not None:
            row["details"]["ts_unreadable"] = p.unreadable
        b = seg.boot_ts if seg.boot_ts is not None else boot.get(host)
        if b is not None and not plausible(b):
            b = None
        if p.ts is not None:
            row["ts"], row["ts_basis"], row["ts_precision_us"] = p.ts, "line", p.precision_us
            if p.dayless:  # the line's clock, a day not its own: said (the explanation, details.ts_day_from)
                row["details"]["ts_day_from"] = p.day_from or seg.ref_basis
        elif p.mono is not None and b is not None:
            row["ts"], row["ts_basis"], row["ts_precision_us"] = b + int(p.mono * US), "monotonic+boot", 1
        elif (p.mono is not None and (spans := boots_of.get(id(seg))) is not None
              and (j := bisect_right(spans[0], h.line) - 1) < len(spans[0]) - 1):
            # a line of a boot before the capture's last (its stamps start again at 0 after it): written before the
            # boot after it began, the latest time that can be; counted as one boot it took a time of the last boot
            _counted_back(row, seg, spans[1][j] + int(p.mono * US), p.mono, upper_bound=True)
            row["details"]["reboots_after"] = len(spans[0]) - 1 - j
        elif p.mono is not None and id(seg) in ref_boot and (t := ref_boot[id(seg)] + int(p.mono * US)) <= seg.ref_ts:
            _counted_back(row, seg, t, p.mono, upper_bound=False)
        elif p.mono is None and (head := _traceback_head(seg, h.line, heads, last_line.get(id(seg), -1), located, tz)):
            row["ts"], row["ts_basis"], row["ts_precision_us"] = head.ts, "inherited", head.precision_us
            if row.get("rank") is None and head.rank is not None:
                row["rank"] = head.rank
        elif (p.mono is None and p.yearless is None and p.clock is None and p.unreadable is None  # printed no time
              and "ts_rejected" not in row["details"]
              and (near := _stamp_before(seg, h.line, last_line.get(id(seg), -1), located, shifted, tz, clocks))):
            row["ts"], row["ts_basis"], row["ts_precision_us"] = near.ts, "inherited", near.precision_us
        elif prev is not None:
            row["ts"], row["ts_basis"], row["ts_precision_us"] = prev[0], "inherited", prev[1]
        else:
            ref_ok = plausible(seg.ref_ts)
            row["ts"] = seg.ref_ts if ref_ok else seg.ingest_ts
            row["ts_basis"] = seg.ref_basis if ref_ok else _arrival_basis(seg)
            row["ts_precision_us"] = _REF_PRECISION.get(row["ts_basis"], US)
            if row["ts_basis"] in ("file", "kafka"):
                # the file's mtime or the Kafka append time: the line was written then or before
                row["details"]["ts_upper_bound"] = True
                bounded.add(id(h))
            if not ref_ok:
                row["details"]["envelope_ts_rejected"] = seg.ref_ts
        if not _believable(row["ts"], seg):  # e.g. a garbled uptime with a good boot time
            # an envelope's time (a day after its arrival) is the shipping host's, not the line's stamp (a break-it
            # pass: it was kept as ts_rejected, which the notes say as the line's own)
            row["details"]["envelope_ts_rejected" if row["ts_basis"] == "envelope" else "ts_rejected"] = row["ts"]
            # the arrival: a Kafka append time or a file's mtime, whatever the segment's reference was (an envelope's
            # time a day ahead was replaced by the file's and still said "envelope": a break-it pass)
            basis = seg.ref_basis if seg.ref_basis != "envelope" else _arrival_basis(seg)
            row["ts"], row["ts_basis"], row["ts_precision_us"] = seg.ingest_ts, basis, _REF_PRECISION.get(basis, US)
            row["details"]["ts_upper_bound"] = True
        if (row["ts_basis"] not in ("kafka", "envelope", "file") or p.mono is not None) and id(h) not in unlent:
            last_seg[id(seg)] = last_host[host] = (row["ts"], row["ts_precision_us"])
            last_line[id(seg)] = h.line
    if bounded:
        _bound_by_later_stamp(hits, bounded)
    _span_inherited(hits)
    for h in hits:
        details = h.row["details"]
        if (t := occurs_time(details.get("occurs_at"), tz)) is not None:
            details["occurs_us"] = t


def _span_inherited(hits: list[Hit]) -> None:
    """Widen the precision of each ``inherited`` time of ``hits`` to the span its line may have been written in. The
    line printed no time and took the time of the closest stamped line before it (:func:`resolve_times`): it was
    written after that line and before the next line of its segment and source (NCCL and PyTorch, the kernel: as
    :func:`_bound_by_later_stamp`) that printed a time of its own. Its ``ts_precision_us`` becomes that next time
    (plus its precision) less its time, µs, when larger than the precision of the stamped line it took, and
    ``details.ts_until`` (µs) says the latest it may have been written. A training script prints unstamped output for
    hours: a ``[rank5]: RuntimeError: CUDA error: uncorrectable ECC error encountered`` under the job's NCCL init line
    took that line's time, four hours before the Xid 48 it reports, with its 1 s precision, and made an incident of
    its own (a scenario trial); the span lets the correlation windows (``correlate.window.tolerance``) join it to the
    fault, and ``correlate.incident.body`` does not start the incident at it. A traceback right after a stamped line
    and before the next (the usual case) spans no more than that line's precision: unchanged. A later line stamped
    before it (another writer's lines in one file) bounds nothing. Past the last such line only the segment's
    reference time bounds it (a file's mtime, a Kafka append time), which may be a copy's, days or years later: that
    span was tried and joined an ``nvidia-smi`` table's ERR! row of one GPU, under its dated header, to another GPU's
    Xid 79 half an hour before (a test), and gave lines of the 1M-line mix spans of up to two years; it is not
    taken, the line keeps the stamped line's precision (as it did)."""
    later: dict[tuple, int] = {}  # (segment, source) -> the latest the nearest later self-timed hit may be (µs)
    for h in reversed(hits):
        row = h.row
        k = (id(h.seg), h.c.sig.source)
        if row["ts_basis"] == "inherited":
            until = later.get(k)
            if until is not None and until - row["ts"] > row["ts_precision_us"]:
                row["ts_precision_us"] = until - row["ts"]
                row["details"]["ts_until"] = until
        elif row["ts_basis"] in ("line", "monotonic+boot") and "ts_rejected" not in row["details"]:
            later[k] = row["ts"] + row["ts_precision_us"]


def _arrival_basis(seg: Segment) -> str:
    """The ``ts_basis`` of ``seg.ingest_ts``, its arrival: ``kafka`` (the append time) or ``file`` (the mtime)."""
    return "kafka" if seg.origin.startswith("kafka:") else "file"


def _sel_time(date: str | None, clock: str | None, tz) -> int | None:
    """A BMC event log row's date and time (``host.bmc_power_fault``'s ``sel_date`` and ``sel_time``): ipmitool's
    ``11/15/2019`` / ``11/15/19`` (month first) and FreeIPMI's ``Dec-09-2024``, with ``18:50:40``, in µs, read in
    ``tz`` (the BMC's clock prints no zone); None for ``PostInit``/``Pre-Init`` rows (the BMC did not know the time
    yet), a missing part or a time no fleet's log carries."""
    if not date or not clock:
        return None
    return _local_time(f"{date} {clock}", ("%m/%d/%Y %H:%M:%S", "%m/%d/%y %H:%M:%S", "%b-%d-%Y %H:%M:%S"), tz)


def _line_time(text: str | None, tz) -> int | None:
    """A time a message prints of itself in ISO 8601 (``2023-12-05T07:16:01``; Slurm's, its daemons' local time),
    in µs, read in ``tz`` when it names no zone; None for no text, another form or a time no fleet's log carries."""
    if not text:
        return None
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        return None
    try:
        t = to_us(when if when.tzinfo else when.replace(tzinfo=tz))
    except (ValueError, OverflowError):
        return None
    return t if plausible(t) else None


#: the year of an RFC 1123 / RFC 822 date (``Thu, 16 Mar 2023 14:01:28 GMT``): day, month name, year
_RFC_YEAR = re.compile(r"\b\d{1,2}\s+[A-Za-z]{3}\s+(\d+)\s")
#: the time of day of a stated time (``14:01:28``, ``06:57:00.123456789``, ``14:01``): the date is before it, the
#: zone after it; the first one, as an offset's ``+02:00`` after it reads as one too
_STATED_CLOCK = re.compile(r"\d:\d\d(?::\d\d(?P<frac>[.,]\d+)?)?")
#: what may follow a stated time's clock: nothing (the host's zone), an offset (RFC 3339's ``Z``, ``+02:00``; RFC
#: 5322's ``-0000`` and ``+0500``; tzdata's numeric abbreviation ``+05``, Python's ``%Z`` of Asia/Tashkent) with
#: Go's ``Time.String()`` abbreviation after it (``+0000 UTC``, ``-0800 PST``, ``+0500 +05``); ``GMT``/``UTC``/``UT``
#: with an offset (Java's ``GMT+05:00``, JavaScript's ``GMT+0500``, Windows' ``UTC+05:00``); a zone abbreviation
#: (``PDT``) or an IANA name (``Europe/Berlin``); then an RFC 5322 comment (``(UTC)``)
_ZONE_TAIL = re.compile(
    r"\s*(?:(?P<offset>Z|[+-]\d\d(?::?\d\d)?)(?:\s+(?:[A-Za-z]{1,6}|[+-]\d\d(?:\d\d)?))?"
    r"|(?P<ut>GMT|UTC|UT)(?P<ut_offset>[+-]\d\d?(?::?\d\d)?)?"
    r"|(?P<name>[A-Za-z]{1,6}|[A-Za-z]+/[\w/+-]{1,40}))?(?:\s*\([^()]{0,60}\))?\s*$")


def occurs_time(text: str | None, tz) -> int | None:
    """When the event a line announces or records happens, as the line states it (a signature's ``occurs_at``
    group), in µs UTC: Azure Scheduled Events' ``NotBefore`` in RFC 1123 (``Thu, 16 Mar 2023 14:01:28 GMT``, whole
    seconds, always GMT: learn.microsoft.com/azure/virtual-machines/linux/scheduled-events), EC2's metadata
    ``NotBefore`` (``21 Jan 2019 09:00:43 GMT``, RFC 822 without the weekday), AWS Node Termination Handler's
    ``StartTime`` (Go's RFC 3339, ``2021-06-25T06:57:00Z``, up to ns) and its description's Go ``Time.String()``
    (``2023-01-23 00:18:29 +0000 UTC``: aws/aws-node-termination-handler#757), a Compute Engine harness's ISO time
    with its offset (``2026-05-27 11:41:47.868757+02:00``), or another ISO 8601 time; read in ``tz`` when it names
    no zone. It is not when the line was written and never the event's ``ts``: a notice of a reboot a week ahead was
    logged today. None for no text (Azure's ``"NotBefore": ""`` once the event started), another form, or a time no
    fleet's log carries (Go's zero time ``0001-01-01T00:00:00Z`` of an event with none). Read by
    ``correlate.model.Ev`` (its ``start``).

    What follows the clock is read as :data:`_ZONE_TAIL` says, whole, or the time is None: an offset as it says
    (``-0000`` is UTC, RFC 5322 §3.3); a zone name as a line's stamp reads it (``ingest.prefix``: the abbreviations
    of one offset as they say, an IANA name as that zone; another name in ``tz``). A tail it does not read, and
    ``GMT+5``, were read in the host's zone (a wrong time, hours off: a break-it pass); ``GMT+5`` with no minutes is
    None, as its sign is not known: old tzdata abbreviated Etc/GMT+5 (UTC-05) so, POSIX's sign, while Java and
    JavaScript print UTC+05 as ``GMT+05:00`` and ``GMT+0500``. Fractional seconds count in an RFC 1123 date too
    (``14:05:09.250 GMT``, which gave None; no cloud is known to print it). A leap second (``23:59:60``) is the
    second after :59. Never raises: a year no calendar holds (``Thu, 1 Mar 99999999999999999999 1:1:1``) is None;
    it raised OverflowError, and its file or Kafka value was skipped whole, the Xid beside the notice with it (a
    break-it pass)."""
    if not text:
        return None
    text = text.strip()
    if (clock := _STATED_CLOCK.search(text)) is None:
        return None
    zone = _tail_zone(text[clock.end():], tz)
    if zone is None:
        return None
    if (y := _RFC_YEAR.search(text[:clock.end()] + " ")) is not None:
        frac = clock["frac"]
        t = _rfc1123_time(text[:clock.start("frac") if frac else clock.end()], y[1], zone)
        if t is not None and frac:
            t += int(frac[1:7].ljust(6, "0"))
    else:
        t = parse_iso_us(text[:clock.end()], zone)
    return t if t is not None and plausible(t) else None


def _tail_zone(tail: str, tz):
    """The zone of a stated time's ``tail``, the text after its clock (:data:`_ZONE_TAIL`): ``tz`` for none, None for
    a tail it does not read or a zone no clock has (``+25:00``, ``Mars/Olympus_Mons``, ``GMT+5``: see
    :func:`occurs_time`)."""
    if (m := _ZONE_TAIL.match(tail)) is None:
        return None
    if m["offset"]:
        return _zone_named(m["offset"], tz)
    if m["ut"]:
        off = m["ut_offset"]
        if not off:
            return timezone.utc
        return _zone_named(off, tz) if len(off.replace(":", "")) == 5 else None
    return _named_zone(m["name"], tz) if m["name"] else tz


def _rfc1123_time(text: str, year: str, zone) -> int | None:
    """:func:`occurs_time` of an RFC 1123 / RFC 822 date and time without its zone (``year`` the digits it prints),
    read in ``zone``; None for none."""
    try:
        f = _parsedate_tz(text)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if f is None:
        return None
    y, mo, d, h, mi, s = f[:6]
    if len(year) > 2 and int(year) != y:
        return None  # a 4-digit year below 100 (.NET's MinValue, 0001), read as 2001 by email.utils: no time
    if not 1 <= y <= 9999:
        return None
    return _second_us(y, mo, d, h, mi, s, zone)


def _named_zone(name: str, tz):
    """The zone ``name`` names after a time, as ``ingest.prefix`` reads a stamp's (``UTC``, ``PDT``, an offset); an
    IANA name (``Europe/Berlin``) as that zone, None for one no zone database has; another name as ``tz``."""
    if "/" in name:
        try:
            return ZoneInfo(name)
        except (ValueError, ZoneInfoNotFoundError):
            return None
    return _zone_named(name.upper(), tz)


def _failure_time(text: str, tz) -> int | None:
    """torchrun's failure record's ``time`` (``2024-09-11_09:17:37``, its agent's local time:
    torch/distributed/elastic/multiprocessing/errors, ``time.strftime("%Y-%m-%d_%H:%M:%S")``), or Cray MPICH's abort
    line's ctime (``Fri Aug 28 22:45:13 2026``), in µs, read in ``tz``; None for any other text or a time no fleet's
    log carries."""
    return _local_time(" ".join(text.split()), ("%Y-%m-%d_%H:%M:%S", "%a %b %d %H:%M:%S %Y"), tz)


def _local_time(text: str, forms: tuple[str, ...], tz) -> int | None:
    """``text`` read by the first of ``forms`` (``strptime``) that reads it, in ``tz`` (a zoneless local time), in
    µs; None when none reads it or the time is one no fleet's log carries (:func:`plausible`)."""
    for form in forms:
        try:
            t = to_us(datetime.strptime(text, form).replace(tzinfo=tz))
        except (ValueError, OverflowError):
            continue
        return t if plausible(t) else None
    return None


#: how far (µs) a zoneless stamp may lie before the line before it without being read as the second pass of an hour
#: the zone's clock repeated (``_fall_back``): lines of two CPUs or threads a little out of order are not
FALL_BACK_SLACK_US = 60 * US


def _fall_back(hits: list[Hit], tz) -> None:
    """A stamp without a zone (syslog's, an ISO stamp with none) read in ``tz`` that falls in the hour a zone's
    clock repeats when it goes back (``01:00 – 02:00`` twice in America/New_York's November) is read as its first
    pass; a line of that hour more than :data:`FALL_BACK_SLACK_US` before the line before it, whose second pass is not,
    is the second (``datetime.fold``): ``01:59:58`` then ``01:00:03`` five seconds later was read an hour before it,
    the two faults two incidents (a break-it pass). The line before is its own host's (a file may hold several
    hosts' lines); lines in order, or in a zone without such an hour, are left."""
    last: dict[str, int] = {}  # host -> its latest line's time: another host's clock says nothing of this one's
    for h in hits:
        p = h.prefix
        if p.ts is None:
            continue
        prev = last.get(h.row["host"])
        if prev is not None and (p.yearless is not None or p.zoneless) and p.ts < prev - FALL_BACK_SLACK_US:
            try:
                local = datetime.fromtimestamp(p.ts / US, tz)
                later = to_us(local.replace(fold=1))
            except (OverflowError, OSError, ValueError):
                later = p.ts
            if later > p.ts and later >= prev - FALL_BACK_SLACK_US:
                p.ts = later
        last[h.row["host"]] = p.ts


def _shift_zoneless(hits: list[Hit]) -> None:
    """Move the hits of a segment whose time came from a stamp without a zone (``Prefix.zoneless``: a wrapper's, as
    "2025-06-24 17:29:06  " before a line) by the one shift its lines with c10's own stamp behind such a wrapper's
    gave (``Prefix.zone_shift``, whole hours: the wrapper's local time): the wrapper's lines alone stayed 8 hours
    from the c10 lines beside them (a break-it pass). Several shifts in a segment: none is moved."""
    shifts: dict[int, set[int]] = {}
    for h in hits:
        if h.prefix.zone_shift is not None:
            shifts.setdefault(id(h.seg), set()).add(round(h.prefix.zone_shift / (3600 * US)) * 3600 * US)
    if not shifts:
        return
    for h in hits:
        got = shifts.get(id(h.seg))
        if got is not None and len(got) == 1 and h.prefix.zoneless and h.prefix.ts is not None:
            h.prefix.ts += next(iter(got))


def _shift_headers(hits: list[Hit], shifts: dict[tuple[str, str], list[tuple[int, int]]]) -> None:
    """Move the year-less header lines of each (stream, host) in ``shifts`` (-> (index in ``hits``, shift µs) of the
    lines whose own zoned stamp gave a shift: ``resolve_times`` step 1) by the shift of the nearest such line in the
    stream's order, as :func:`_shift_zoneless` moves a wrapper's lines: an Xid under the same syslog header as a
    logrus line dated by its own ``+11:00`` stamp stayed 11 hours from it. Keyed by stream, not segment: a Kafka
    record is a segment of its own, and the Xid record beside the logrus one stayed 11 hours off where ``diagnose``
    of the same lines moved it; by host: a central syslog server's file holds several machines' headers, each in
    its zone (another host's shift moved an Xid 11 hours). The nearest line's, not one shift for all: the header's
    zone changes its offset inside a file that spans a change of daylight saving time (+01:00 then +02:00 each
    moved their own line and none of the Xids beside them, an hour from them; a break-it pass). A line whose stamp
    is seconds from its header is a shift of 0: one replayed record whose ``time=`` is whole hours old moved every
    line of its file (a break-it pass)."""
    nearest = {key: nearest_dated(got) for key, got in shifts.items()}
    for i, h in enumerate(hits):
        if h.prefix.yearless is not None and h.prefix.ts is not None and \
                (of := nearest.get((h.seg.stream, h.row["host"]))) is not None:
            h.prefix.ts += of(i)


#: how far a clock line's time may go back from the line before it in its log (two CPUs' lines, two processes' buffered
#: output, two hosts' clocks a few minutes apart in a merged log) and still be of the same day
CLOCK_ORDER_SLACK_US = 3600 * US


def _date_clocks(hits: list[Hit], tz) -> None:
    """Date again the hits whose time came from a clock without a date (``Prefix.dayless``), which
    ``prefix.parse_prefix`` dated one by one from the reference, in each segment's order: a clock line after a line
    with a time is the earliest such instant at or after that time less :data:`CLOCK_ORDER_SLACK_US`; the clock lines
    before the segment's first line with a date of its own go back from it (or, with none, from the segment's
    reference time, ``prefix.clock_us``), each the latest at or before the next one plus that slack. Dated one by
    one, a log of 09:10 then 11:45 written at 10:30 put its 11:45 line 21 hours before the first; a clock line among
    fully stamped lines took its file's day, 14 days from them; going back more than 5 minutes cost a day per step
    (break-it passes)."""
    segs = {id(h.seg) for h in hits if h.prefix.dayless}
    if not segs:
        return
    by_seg: dict[int, list[Hit]] = {}
    for h in hits:
        if id(h.seg) in segs and h.prefix.ts is not None:
            by_seg.setdefault(id(h.seg), []).append(h)
    for seg_hits in by_seg.values():
        seg_hits.sort(key=lambda x: x.line)
        prev, leading = None, []
        for h in seg_hits:
            p = h.prefix
            if not p.dayless:
                prev = p.ts
            elif prev is None:
                leading.append(h)
            elif (t := clock_us(*p.clock, prev - CLOCK_ORDER_SLACK_US, tz, after=True)) is not None:
                p.ts = prev = t
        nxt = anchor = next((h.prefix.ts for h in seg_hits if not h.prefix.dayless), None)  # the first dated line
        for h in reversed(leading):
            p = h.prefix
            t = (clock_us(*p.clock, year_ref(h.seg), tz) if nxt is None
                 else clock_us(*p.clock, nxt, tz, ahead_us=CLOCK_ORDER_SLACK_US))
            if t is not None:
                p.ts = nxt = t
        for h in seg_hits:
            if h.prefix.dayless:
                h.prefix.day_from = "line" if anchor is not None else h.seg.ref_basis


#: a Python traceback's first line, alone or after a logger's message ("[2025-02-09 21:23:00 TP2] Scheduler hit an
#: exception: Traceback (most recent call last):"), and how far below it its exception line may be
_TRACEBACK = re.compile(rb"Traceback \(most recent call last\):[ \t\r]*$", re.M)
_TRACEBACK_WORDS = b"Traceback (most recent call last):"
#: how many occurrences of the words that end no line :func:`_traceback_head` passes before it finds a segment's
#: headers all at once
TRACEBACK_WORDS_TRIED = 8
TRACEBACK_LINES = 200


def _traceback_head(seg: Segment, line: int, heads: dict[tuple[int, int], Any], after: int,
                    located: dict[int, tuple[np.ndarray, int]], tz) -> Prefix | None:
    """The prefix of the header of the Python traceback that physical line ``line`` of ``seg`` ends (the line printed
    no time): the traceback's first line, or the line before it, when one of them printed a time; the header at
    most :data:`TRACEBACK_LINES` above ``line`` and below ``after``, the last line of ``seg`` that gave a time (a
    nearer one is the line's, as before). ``None`` when there is none. An exception
    line of a traceback whose header a logger stamped ("[2025-02-09 21:23:00 TP2] Scheduler hit an exception:
    Traceback …", then "RuntimeError: NCCL error: unhandled system error") is of that record: it was timed by its
    file's modification time and named no rank (sgl-project/sglang#3460, a real-logs pass). The header is the last
    one at or above ``line``, looked for backwards from its end in those lines only (``bytes.rfind``; ``located``,
    :func:`_newlines`, says where they are): a scan of every segment for its headers was ~10 % of ``assemble``.
    ``heads`` keeps what each header's lines said ((segment, offset) -> prefix), read once for the lines below it,
    and whether a segment holds the words at all (under (segment, -2): :func:`_holds_anywhere`).
    Past :data:`TRACEBACK_WORDS_TRIED` occurrences of the words that end no line, the segment's headers are found
    once (``_TRACEBACK.finditer``, kept in ``heads`` under (segment, -1)) and bisected: 5,000 lines that each held the
    words a hundred times took 36 s where one pass takes 0.03 s (a break-it pass)."""
    lo = max(after + 1, line - TRACEBACK_LINES)
    if lo > line:
        return None
    if not _holds_anywhere(heads, seg, lambda data: _TRACEBACK_WORDS in data, -2):
        return None  # no header anywhere (a storm's copies each looked through their 200 lines)
    nl = _newlines(seg, line + 1, located)
    if lo > len(nl):  # past the data's last line
        return None
    data = seg.data
    start = int(nl[lo - 1]) + 1 if lo else 0
    stop = int(nl[line]) if line < len(nl) else len(data)
    for _ in range(TRACEBACK_WORDS_TRIED):  # the last header in lines lo .. line: the words, then the line's end
        at = data.rfind(_TRACEBACK_WORDS, start, stop)
        if at < 0:
            return None
        if _TRACEBACK.match(data, at) is not None:
            break
        stop = at + len(_TRACEBACK_WORDS) - 1
    else:  # the words inside lines: the segment's headers, found once
        every = heads.get((id(seg), -1))
        if every is None:
            every = heads[(id(seg), -1)] = [m.start() for m in _TRACEBACK.finditer(data)]
        j = bisect_left(every, stop) - 1
        if j < 0 or every[j] < start:
            return None
        at = every[j]
    start = data.rfind(b"\n", 0, at) + 1
    key = (id(seg), start)
    if key in heads:
        return heads[key]
    end = data.find(b"\n", start)
    before = data.rfind(b"\n", 0, max(start - 1, 0)) + 1 if start else None
    found = None
    for a, b in ((start, end if end >= 0 else len(data)),) + (((before, start - 1),) if before is not None else ()):
        p = parse_prefix(data[a:b].decode("utf-8", "replace"), ref_us=year_ref(seg), tz=tz)
        if p.ts is not None and _believable(p.ts, seg) and not p.dayless:  # a clock's day is its log's (_date_clocks)
            found = p
            break
    heads[key] = found
    return found


#: how far above a line that printed no time the stamped line whose time it takes may be (:func:`_stamp_before`): a
#: line printed right after a stamped one, a record's own next lines; lines further down may be hours later (a program's
#: unstamped output between says nothing of the time that passed: a simulated job's CUDA error 75 progress lines under
#: the job's start-up warning took its time, seven hours before the crash, and became an incident of its own)
STAMP_LINES = 5
#: a clock (``hh:mm:ss``) of a date and time near a line's start: :func:`_stamp_before` reads the prefix of a line only
#: when one begins at most :data:`CLOCK_NEAR_START` bytes after its start (searched for in its first 63 bytes). An hour
#: has at most two digits: a PCI bus id's ``0000:61:00`` is no clock (it was, and a storm of stamp-less Xid lines
#: parsed five lines' prefixes per line: a break-it pass)
_CLOCK = re.compile(rb"(?<!\d\d)\d:\d\d:\d\d")
CLOCK_NEAR_START = 56
#: what every match of :data:`_CLOCK` holds, led by a literal colon: ``re`` skips to each colon in C, where
#: ``_CLOCK``'s leading lookbehind and digit are tried at every byte (~0.5 against ~3 µs on a line's first 63 bytes).
#: A text without it holds no clock (:func:`_has_clock`)
_CLOCK_TAIL = re.compile(rb":\d\d:\d\d")


def _has_clock(data: bytes, start: int = 0, end: int = sys.maxsize) -> bool:
    """``_CLOCK.search(data, start, end) is not None``, asked first of :data:`_CLOCK_TAIL` (most lines hold no
    ``:dd:dd``: one fast search, not the slow one)."""
    return _CLOCK_TAIL.search(data, start, end) is not None and _CLOCK.search(data, start, end) is not None


#: a segment is searched whole for what a line's look-back needs (:func:`_holds_anywhere`) once its lines have asked
#: for one byte in this many of its bytes: a storm's copies ask thousands of times, while a batch of ordinary lines
#: asks a few times of a large Kafka value (searching each value whole made ``assemble`` twice as slow on the mix)
WHOLE_SEGMENT_BYTES_PER_ASK = 1024


def _holds_anywhere(memo: dict, seg: Segment, holds: Callable[[bytes], bool], tag: int = -3) -> bool:
    """False when ``holds(seg.data)`` is False: what a line's look-back seeks (a clock, a traceback header) is
    nowhere in the segment, so none of its lines need look. Asked per line; the segment is searched once, after its
    lines asked :data:`WHOLE_SEGMENT_BYTES_PER_ASK` times less often than it has bytes (until then True: look).
    ``memo`` keeps, under ``(id(seg), tag)``, the asks so far or the answer."""
    key = (id(seg), tag)
    got = memo.get(key, 0)
    if got is True or got is False:
        return got
    if (got + 1) * WHOLE_SEGMENT_BYTES_PER_ASK < len(seg.data):
        memo[key] = got + 1
        return True
    memo[key] = found = holds(seg.data)
    return found


def _stamp_before(seg: Segment, line: int, after: int, located: dict[int, tuple[np.ndarray, int]], shifted: set[int],
                  tz, clocks: dict[tuple[int, int], int | bool] | None = None) -> Prefix | None:
    """The prefix of the nearest line above physical line ``line`` of ``seg`` that printed a date and time of its own
    (``parse_prefix``: not a raw kernel stamp, not a clock without a day or a year, a time ``_believable`` for the
    segment, with a word after it; no ``\\r`` between them), at
    most :data:`STAMP_LINES` above it and below line ``after`` (the last line of ``seg`` that gave a time: a nearer one
    is the line's, as before); ``None`` when there is none. A line with no time of its own right after a stamped one
    (an exception line a program printed under its logger's stamped lines: ``RuntimeError: CUDA error: uncorrectable
    ECC error encountered`` after ``[2025-01-29 08:52:44 TP2] Using default MoE config …``) was written after that
    line: it was timed by its file's modification time, an incident of its own beside the Xid 94 of that minute
    (sgl-project/sglang#3204, a real-logs pass). Only lines with a clock near their start are read
    (:data:`_CLOCK`, searched in each line's first bytes, nearest line first). ``located`` keeps each segment's
    newline offsets (:func:`_newlines`); ``clocks``, whether each segment holds a clock anywhere
    (:func:`_holds_anywhere`: a segment without one, a storm of unstamped copies, has no such line to read)."""
    lo = max(after + 1, line - STAMP_LINES)
    if lo >= line:
        return None
    if clocks is not None and not _holds_anywhere(clocks, seg, _has_clock):
        return None
    nl = _newlines(seg, line + 1, located)
    if line > len(nl):  # past the data's last line
        return None
    data = seg.data
    # ends[k]: the newline before line lo + k (-1 before the first line); ends[k + 1] the one that ends it
    ends = ([-1] if lo == 0 else []) + nl[max(lo - 1, 0):line + 1].tolist()
    line_end = ends[line - lo + 1] if len(ends) > line - lo + 1 else len(data)
    if data.find(b"\r", ends[0] + 1, line_end) >= 0:
        # a progress bar redrawn between them (or on the line itself) is hours of a terminal's lines on one: the job's
        # start-up line above a tqdm bar dated its crash seven hours early (a break-it pass)
        return None
    for k in range(line - lo - 1, -1, -1):  # the nearest line first
        a, end = ends[k] + 1, ends[k + 1]
        if not _has_clock(data, a, min(a + CLOCK_NEAR_START + 7, end)):  # most often none: one fast C call
            continue
        p = parse_prefix(data[a:end].decode("utf-8", "replace"), ref_us=year_ref(seg), tz=tz)
        # a full date of a log's header: not one without a year (the year its hits take comes from their dated
        # neighbours: resolve_times), not a zoneless wrapper's of a segment whose stamps were shifted (``shifted``),
        # not a row of data a program printed (a DataFrame's "2012-01-01 02:00:00  0.5  0.3": no word after it; both
        # break-it passes)
        if (p.ts is not None and p.mono is None and not p.dayless and p.yearless is None and _believable(p.ts, seg)
                and not (p.zoneless and id(seg) in shifted) and _WORD.search(p.rest) is not None):
            return p
    return None


#: a word after a log header's stamp (a log line says something; a data row is numbers)
_WORD = re.compile(r"[A-Za-z]{2}")


#: bytes of a segment whose newlines :func:`_newlines` finds at a time, doubling as it reads on up to
#: :data:`NEWLINE_SCAN_MAX` (numpy's scratch for a piece is its size): a Kafka value's at once, a large file's only as
#: far as its hits need
NEWLINE_SCAN_BYTES = 1 << 16
NEWLINE_SCAN_MAX = 64 << 20


def _newlines(seg: Segment, count: int, located: dict[int, tuple[np.ndarray, int]]) -> np.ndarray:
    """The byte offsets in ``seg.data`` of its first ``count`` newlines or more (all of them when it holds fewer),
    ascending: line ``k`` starts after the ``k``-th (0 for line 0). ``located`` keeps each segment's offsets found so
    far and how many bytes they cover; the data is read on in pieces of :data:`NEWLINE_SCAN_BYTES` or more, with
    numpy (~4 GB/s, where ``bytes.count`` counts ~2 GB/s and finds no offsets): ~8 µs for a 30 KB Kafka value, where
    finding a line by its text and counting the newlines before it took ~14 µs."""
    data = seg.data
    got = located.get(id(seg))
    if got is not None and (len(got[0]) >= count or got[1] >= len(data)):
        return got[0]
    nl, read = got or (_NO_NEWLINES, 0)
    while len(nl) < count and read < len(data):
        n = min(len(data) - read, max(NEWLINE_SCAN_BYTES, min(read, NEWLINE_SCAN_MAX)))
        more = (np.frombuffer(data, dtype=np.uint8, count=n, offset=read) == 10).nonzero()[0]
        if read:
            more += read
        nl = np.concatenate((nl, more)) if len(nl) else more
        read += n
    located[id(seg)] = (nl, read)
    return nl


_NO_NEWLINES = np.empty(0, dtype=np.intp)


def _counted_back(row: dict[str, Any], seg: Segment, ts: int, mono: float, *, upper_bound: bool) -> None:
    """Time ``row`` by its raw kernel stamp ``mono`` (s) counted back from ``seg``'s reference time: ``ts`` (µs),
    the segment's basis. An upper bound when ``upper_bound`` (a boot before the capture's last) or when the reference
    is a Kafka append time (the value was written then or before, as a line without a stamp): ``details.
    ts_upper_bound``, with the line's own stamp kept in ``details.uptime_s``."""
    row["ts"], row["ts_basis"] = ts, seg.ref_basis
    row["ts_precision_us"] = 1 if seg.ref_basis != "kafka" else _REF_PRECISION["kafka"]
    if upper_bound or seg.ref_basis == "kafka":
        row["details"]["ts_upper_bound"] = True
        row["details"]["uptime_s"] = mono


def _bound_by_later_stamp(hits: list[Hit], bounded: set[int]) -> None:
    """The hits ``bounded`` (``id`` of each) printed no time and no stamped line came before them in their segment,
    so :func:`resolve_times` dated them by the segment's reference time (a file's mtime, a Kafka append time), an
    upper bound. The nearest later hit of the same segment that printed a stamp of its own is a nearer bound: a log is
    written in order, so the line was written then or before. It takes that time when earlier (``details.
    ts_next_line``; still ``ts_upper_bound``, its basis kept). NCCL before 2.26 stamps no WARN: a job's log copied
    hours after the job (``scp``, ``kubectl logs > file``) put its first WARN at the copy's time, a second incident
    beside the Xid 74 it reported a few lines before PyTorch's stamped watchdog line (a fresh user's trial). Only a
    line of the same source (the signature's: NCCL and PyTorch, the kernel): a bug report's bundle of a job's log
    and then the host's ``dmesg -T`` from its boot put the job's NCCL errors six days early (a break-it pass)."""
    later: dict[tuple, tuple[int, int]] = {}  # (segment, source) -> (ts, precision) of the nearest later stamped hit
    for h in reversed(hits):
        row = h.row
        k = (id(h.seg), h.c.sig.source)
        if id(h) in bounded:
            got = later.get(k)
            if got is not None and got[0] < row["ts"]:
                row["ts"], row["ts_precision_us"] = got
                row["details"]["ts_next_line"] = True
        elif (h.prefix.ts is not None or h.prefix.mono is not None) and row["ts_basis"] != "inherited" \
                and "ts_rejected" not in row["details"]:
            later[k] = (row["ts"], row["ts_precision_us"])


def _p2p_off(h: Hit) -> tuple[str, str] | None:
    d = h.row["details"]
    env, val = d.get("env"), str(d.get("env_value", ""))
    if env == "NCCL_P2P_DISABLE" and val == "1":
        return env, val
    if env == "NCCL_P2P_LEVEL" and val.upper() in ("LOC", "0"):
        return env, val
    return None


#: lines of an ``nvidia-smi -q`` GPU section that name no GPU themselves (formats.md §9.5)
_Q_SECTION_SIGS = frozenset({"nvml.fabric_status_error", "nvml.fabric_unhealthy", "nvml.recovery_action",
                             "nvml.q_reset_required",
                             "nvml.q_row_remap", "nvml.fabric_state_incomplete", "nvml.q_clocks_event",
                             "nvml.q_hw_slowdown", "nvml.q_retired_pages", "nvml.q_ecc_uncorrectable",
                             "nvml.q_ecc_section", "nvml.q_remap_uncorrectable", "nvml.q_pcie_width_degraded"})

#: an `lspci` block header's classes (pcie.lspci_header) whose device is a GPU
_LSPCI_GPU_CLASSES = frozenset({"VGA compatible controller", "3D controller", "Display controller"})

#: the AER status bit of an Access Control Services violation, as kernels name it (short since 6.x, long before)
_AER_ACS_BITS = frozenset({"ACSViol", "ACS Violation"})

#: how many lines below its AER message line a port's status bits are printed (the message, "PCIe Bus Error:",
#: "device [8086:e44f] error status/mask=…", then one line per bit)
AER_BIT_LINES = 8


#: how many lines after Open MPI's "peer process has unexpectedly disconnected" its help text names the peer (13 in
#: help-mpi-btl-tcp.txt's "peer hung up")
MPI_HELP_LINES = 20


#: the context lines of an `ibstat` block (ib.yaml): its HCA's, its port's and the port's logical state's
_IBSTAT_CONTEXT = frozenset({"ib.ibstat_ca", "ib.ibstat_port", "ib.ibstat_state"})


def carry_context(hits: list[Hit]) -> list[Hit]:
    """Fill fields one line takes from an earlier line of the same segment (module doc); the hits kept: a line
    that repeats the report of the line before it is dropped (an nvidia-smi table's second row that reads ERR! under a
    first row that did too; aws-ofi-nccl's "initialization failed" after its "Only EFA provider is supported"; the
    driver's two lines of one RmInitAdapter failure)."""
    kept: list[Hit] = []
    gpu_ctx: dict[str, Any] | None = None
    status_header: Hit | None = None  # the last "gpuId N:" of a `dcgmi nvlink --link-status` table
    smi_row: Hit | None = None  # the nvidia-smi table's last first row of a GPU (nvml.smi_table_row, nvml.smi_gpu_err)
    rm_init: dict[tuple[str, Any], Hit] = {}  # (host, device) -> its last RmInitAdapter line (gpu.rm_init_failed)
    no_efa: dict[tuple[str, Any], Hit] = {}  # (host, pid) -> aws-ofi-nccl's "Only EFA provider is supported"
    # (host, device) -> its UUID, its board serial: a merged journal's preamble of node1's GPU gave its UUID to node2's
    # Xid on the same bus id (a real-logs pass)
    uuids: dict[tuple[str, str], str] = {}
    serials: dict[tuple[str, str], str] = {}
    last_preamble: tuple[str, str] | None = None
    p2p_off: tuple[str, str] | None = None
    q_device: str | None = None
    q_section: str | None = None  # the nvidia-smi -q ECC section the next counts are of (nvml.q_ecc_section)
    q_remap_unc: str | None = None  # its Remapped Rows' "Uncorrectable Error" count (nvml.q_remap_uncorrectable)
    q_width_max: Hit | None = None  # its Link Width "Max : 16x" line (nvml.q_pcie_width_max)
    lspci: Hit | None = None  # the `lspci -vv` block header above (pcie.lspci_header)
    # (host, port, signature) -> the port's last AER message line (pcie.aer.received, pcie.aer.bus_error), which the
    # status bits below it detail
    aer_msg: dict[tuple[str, Any, str], Hit] = {}
    driver: dict[str, str] = {}  # host -> the version its driver printed when it loaded (driver.loaded)
    mpi_report: Hit | None = None  # Open MPI's last "peer … unexpectedly disconnected" (mpi.peer_disconnected)
    rc_watchdog: dict[str, str] = {}  # host -> the notify timeout of its driver's RC watchdog line (driver.rc_watchdog)
    # the `ibstat` block the next "Physical state:" line is under: its segment, HCA, port and logical State
    ibstat: dict[str, Any] = {}
    for h in hits:
        sid, row, d = h.c.sig.id, h.row, h.row["details"]
        kept.append(h)
        if sid in ("nvml.smi_table_row", "nvml.smi_gpu_err"):
            smi_row = h
        elif sid == "nvml.smi_gpu_err_fields":  # the row below a GPU's first row (its Fan/Temp/Perf row)
            above, smi_row = smi_row, None
            if above is not None and above.seg is h.seg and h.line - above.line == 1:
                if above.c.sig.id == "nvml.smi_gpu_err":  # the first row's ERR! reported it
                    kept.pop()
                    continue
                for k in ("gpu_index", "device"):
                    if row.get(k) is None and above.row.get(k) is not None:
                        row[k] = above.row[k]
                if above.row["details"].get("model") and "model" not in d:
                    d["model"] = above.row["details"]["model"]
        if sid == "gpu.rm_init_failed":  # "RmInitAdapter failed! (0x22:0x56:884)" and "rm_init_adapter failed, device
            # minor number 0", a line apart, are one failure: one event, with the code (whose stage chooses the action)
            at = (row["host"], row.get("device"))
            prev = rm_init.get(at)
            if prev is not None and at[1] is not None and prev.seg is h.seg and 0 < h.line - prev.line <= 2 and \
                    ("code" in d) != ("code" in prev.row["details"]):
                for k in ("code", "rm_stage", "minor"):
                    if k in d:
                        prev.row["details"].setdefault(k, d[k])
                rm_init.pop(at)
                kept.pop()
                continue
            rm_init[at] = h
        if sid == "nccl.ofi.no_efa":  # the plugin's "initialization failed" of that process stands for the same
            if pid := row.get("pid") or h.prefix.pid:
                no_efa[(row["host"], pid)] = h
        elif sid == "nccl.ofi.init_failed" and d.get("ofi_init") and \
                (said := no_efa.get((row["host"], row.get("pid") or h.prefix.pid))) is not None and \
                said.seg is h.seg and abs(row["ts"] - said.row["ts"]) <= 60 * US:  # one start of that process
            kept.pop()
            continue
        if sid == "mpi.peer_disconnected":
            mpi_report = h
        elif sid == "mpi.peer_host":  # its help text's "Peer host:" line, a dozen lines on, names the peer it lost
            if mpi_report is not None and mpi_report.seg is h.seg and 0 < h.line - mpi_report.line <= MPI_HELP_LINES:
                mpi_report.row["details"].setdefault("peer_addr", d.get("peer_host"))
            mpi_report = None
            continue
        if sid == "driver.loaded":  # of its own host: a file may hold several hosts' kernel lines (a break-it pass)
            if d.get("driver_version"):
                driver[row["host"]] = d["driver_version"]
            continue
        if h.c.sig.source == "dmesg" and "driver_version" not in d and (version := driver.get(row["host"])):
            d["driver_version"] = version
        if sid == "nvml.q_gpu_header":
            q_device, q_section, q_remap_unc, q_width_max = row.get("device"), None, None, None
            continue
        if sid == "nvml.q_pcie_width_max":
            q_width_max = h
            continue
        if sid == "nvml.q_pcie_width_degraded":  # "Current : 8x" right below its Link Width's "Max : 16x": a link
            # trained narrower than this GPU and system can do (NVIDIA/NVSentinel#890); alone, or as wide, it is none
            above, q_width_max = q_width_max, None
            top = above.row["details"].get("link_width_max") if above is not None else None
            if above is None or above.seg is not h.seg or h.line - above.line != 1 or \
                    not 0 < int(d.get("link_width") or 0) < int(top or 0):
                kept.pop()
                continue
            d["link_width_max"] = top
        if sid == "pcie.lspci_header":
            lspci = h
            continue
        if sid == "pcie.lspci_width_downgraded" and lspci is not None and lspci.seg is h.seg:  # of its block's device
            if not row.get("device"):
                row["device"] = lspci.row.get("device")
            for k in ("pci_class", "pci_name"):
                if lspci.row["details"].get(k):
                    d.setdefault(k, lspci.row["details"][k])
            if d.get("pci_class") in _LSPCI_GPU_CLASSES:
                row["device_type"] = "gpu"
        if sid in ("pcie.aer.received", "pcie.aer.bus_error"):
            aer_msg[(row["host"], row.get("device"), sid)] = h
        elif sid == "pcie.aer.status_bit" and d.get("aer_error") in _AER_ACS_BITS:  # an ACS violation, no link fault:
            # the action of the message above it says so (minisforum-docs/MS-02-Ultra#10, a real-logs pass)
            for msg_sid in ("pcie.aer.received", "pcie.aer.bus_error"):
                msg = aer_msg.get((row["host"], row.get("device"), msg_sid))
                if msg is not None and msg.seg is h.seg and 0 < h.line - msg.line <= AER_BIT_LINES:
                    msg.row["details"].setdefault("aer_acs", d["aer_error"])
        if sid == "nvml.q_remap_uncorrectable":  # the Remapped Rows count above its "Pending : Yes"
            q_remap_unc = d.get("remap_uncorrectable")
            continue
        if sid == "nvml.q_row_remap" and q_remap_unc is not None:
            d["remap_uncorrectable"] = q_remap_unc
            if q_remap_unc == "0" and d.get("remap_state") == "Pending":  # after correctable errors only: a reset
                row["severity"] = "warning"  # when convenient (NVIDIA's memory error management guide)
        if sid == "nvml.q_ecc_section":  # the ECC counts' section below it: Volatile or Aggregate
            q_section = d.get("ecc_section")
            continue
        if sid == "nvml.q_ecc_uncorrectable" and q_section:
            d["ecc_section"] = q_section
            if q_section == "Aggregate":  # the GPU's lifetime: a past error (Volatile's own row says a new one); a DRAM
                # one was repaired by a remap; an SRAM count is a warning, an error above 4 (the RMA limit:
                # stas00/ml-engineering; 12 was a warning no page followed: a second break-it pass)
                sram = d.get("ecc_memory", "").upper() == "SRAM"
                row["severity"] = ("error" if int(d.get("ecc_count") or 0) > 4 else "warning") if sram else "info"
        if sid in _Q_SECTION_SIGS and q_device and not row.get("device"):
            row["device"] = q_device
        if sid in _IBSTAT_CONTEXT:  # `ibstat`'s "CA 'mlx5_1'", "Port 1:", "State: Down" above a port's physical state
            if sid == "ib.ibstat_ca" or ibstat.get("seg") is not h.seg:
                ibstat = {"seg": h.seg, "nic": row.get("device") if sid == "ib.ibstat_ca" else None}
            if sid == "ib.ibstat_port":
                ibstat.update(link=row.get("link"), port_state=None)
            elif sid == "ib.ibstat_state":
                ibstat["port_state"] = d.get("port_state")
            continue
        if sid == "ib.ibstat_physical_state" and ibstat.get("seg") is h.seg:
            if ibstat.get("nic") and not row.get("device"):
                row["device"] = ibstat["nic"]
            if ibstat.get("link") is not None and row.get("link") is None:
                row["link"] = ibstat["link"]
            if state := ibstat.get("port_state"):
                d.setdefault("port_state", state)
                # a physical link under a logical state short of Active: no subnet manager brought the port up
                # (Mellanox/network-operator#249); under Active it is the healthy port
                if d.get("phys_state") == "LinkUp" and state != "Active":
                    row["severity"] = "warning"
        if sid == "nvml.gpu_header":
            gpu_ctx = {"gpu_index": row.get("gpu_index"), "model": d.get("model"), "uuid": d.get("uuid")}
            continue
        if sid == "nvml.dcgmi_gpu_header":  # `dcgmi nvlink --link-status`: the GPU of the row right below it
            status_header = h
            continue
        if sid == "nvml.nvlink_status_row":  # a row of link states names its GPU only by the header line above it:
            # a row elsewhere (an NVSwitch's, under "physicalId N:") is no GPU's links (NVIDIA/DCGM#198)
            above = status_header
            if above is None or above.seg is not h.seg or h.line - above.line != 1:
                kept.pop()
                continue
            row["gpu_index"] = above.row.get("gpu_index")
        if sid == "gpu.preamble" and row.get("device"):
            last_preamble = (row["host"], row["device"])
            uuids[last_preamble] = d.get("uuid", "")
            continue
        if sid == "gpu.board_serial":
            if last_preamble:
                serials[last_preamble] = d.get("board_serial", "")
            continue
        if sid == "driver.rc_watchdog":  # names no GPU: the host's next Xid is the one it raised
            rc_watchdog[row["host"]] = d.get("rc_watchdog_timeout_s", "")
            continue
        if row["kind"] == "xid" and (timeout_s := rc_watchdog.pop(row["host"], None)) is not None:
            d.setdefault("rc_watchdog_timeout_s", timeout_s)
        if h.c.sig.source == "nvml" and gpu_ctx and row.get("gpu_index") is None and sid.startswith("nvml.nvlink"):
            row["gpu_index"] = gpu_ctx["gpu_index"]
            for k in ("model", "uuid"):
                if gpu_ctx.get(k) and k not in d:
                    d[k] = gpu_ctx[k]
        at = (row["host"], row.get("device"))
        if at in uuids and "uuid" not in d:
            d["uuid"] = uuids[at]
        if at in serials and "board_serial" not in d:
            d["board_serial"] = serials[at]
        off = _p2p_off(h) if sid in ("nccl.env.p2p", "shell.env.p2p_disable") else None
        if off:
            p2p_off = off
        elif p2p_off and row["kind"] == "nccl_init":
            row["kind"] = "nccl_p2p_fallback"
            d["p2p_disabled_by"] = f"{p2p_off[0]}={p2p_off[1]}"
    return kept


def merge_sxid_groups(hits: list[Hit]) -> list[Hit]:
    """Merge the Fatal/Non-fatal, Severity and Data lines of one SXid into one hit.

    A Fatal/Non-fatal (or free-text) line opens a group; a Severity or Data
    line joins the latest group of the same switch and code within 2 s that
    lacks that kind of line, else opens its own group (a Data line alone is
    still an SXid event). The merged hit keeps the first line's position and
    the header's fields; its message holds every line of the group.
    """
    latest: dict[tuple, list[Hit]] = {}
    ordered: list[Hit | list[Hit]] = []
    for h in hits:
        if h.row["kind"] != "sxid" or h.row.get("sxid") is None:
            ordered.append(h)
            continue
        key = (h.row["host"], h.row.get("device"), h.row["sxid"])
        part, g = _part(h), latest.get(key)
        if (g is not None and part != "header" and all(_part(x) != part for x in g)
                and abs(h.row["ts"] - g[0].row["ts"]) <= _SXID_GROUP_US):
            g.append(h)
            continue
        latest[key] = [h]
        ordered.append(latest[key])
    return [item if isinstance(item, Hit) else _merge(item) for item in ordered]


def _merge(group: list[Hit]) -> Hit:
    if len(group) == 1:
        return group[0]
    head = next((g for g in group if _part(g) == "header"), group[0])
    row, details = dict(head.row), dict(head.row["details"])
    for g in group:
        if g is head:
            continue
        for k, v in g.row["details"].items():
            details.setdefault(k, v)
        for k in ("link", "fatal"):
            if row.get(k) is None and g.row.get(k) is not None:
                row[k] = g.row[k]
    details["lines"] = len(group)
    row["details"] = details
    return Hit(seg=group[0].seg, line=group[0].line, sub=0, c=head.c, row=row, prefix=head.prefix, text=head.text,
               message="\n".join(g.message for g in group))


def _part(h: Hit) -> str:
    sid = h.c.sig.id
    return "data" if sid == "sxid.data" else "severity" if sid == "sxid.severity" else "header"


_TOPO_CELL = re.compile(r"X|NV\d+|PIX|PXB|PHB|NODE|SYS|SOC")


def assign_hosts(hits: list[Hit], known: dict[str, bool] | None = None, pods: dict[str, str] | None = None) -> None:
    """Set each hit's ``host`` (``known``: the host-name answers of the batch so far, :func:`_is_host`): the line's
    own claim (a syslog prefix, NCCL's ``host:pid:tid``, a field such as nccl-tests' ``on node02``) wins over the
    envelope, the Kafka key or the file name (DESIGN.md, Inputs). A claim that names a pod the batch's Kubernetes
    records place on a node (``pods``, ``decode.Decoded.pod_nodes``: inside a pod a process's host name is the pod's)
    is that node's, the pod kept in ``details.pod``: a pod's NCCL error and its node's Xid 79 were two hosts. In a
    plain-text file (:func:`_file_text`) the file name (``worker3.log``) is only a guess (DESIGN.md: where neither
    the line nor the envelope names the host), so a line that names none (a traceback line, a PyTorch line
    without the prefix) is, in order:

    * the host its rank ran on, when the line prints its global rank in PyTorch's c10 prefix (``[rank8]:``) and
      the file's NCCL init lines say where it ran (:func:`rank_hosts`): a job's aggregated log (every rank's
      output in one file, as a scheduler's job output or ``torchrun`` writes it) holds the NCCL lines of every
      host, each with its ``host:pid:tid``. So also in a Kafka value or NDJSON record whose stream's NCCL lines
      name several hosts: its key or envelope host names where that log was collected, not where each rank ran (a
      job's log shipped under its launcher's key put every rank's watchdog timeout on the launcher, where
      ``diagnose`` of the same file put each on its host: a fresh user's trial);
    * the host the file's earlier recognised lines all named in their prefix (the log's writer, not a host the
      text mentions); a file whose prefixes name several hosts says nothing more about such a line; before any
      recognised line, the host its earlier NCCL lines (``host:pid:tid [dev] NCCL …``, INFO lines no signature
      reads) all named, or all of them when they name one host (:func:`_nccl_hosts_before`: a rank's timeout after a
      page of NCCL INFO lines took the file's name, a real-logs pass on modelscope/FunASR#2006);
    * the file name.

    A plain-text Kafka record's key (or ``host`` header) is read as a file's name (:func:`_keyed_text`): a line that
    names no host takes, in the same order, the one host the stream's earlier recognised lines of this batch named,
    else its record's NCCL lines', else the key. ``firstfault send gpu-a03.nccl.log`` of a job's log whose NCCL lines
    name ``node01:311:405`` put its vLLM traceback on gpu-a03, an incident of its own, where ``diagnose`` of the
    same file put it on node01 (a fresh user's trial); a shipper that sends a file's lines one per record under the
    file's host (Vector, Fluent Bit) gives the same stream. An envelope (an NDJSON record's ``host``, in a file
    too) names the host of any other line.

    A Ray driver prints another node's worker output with that node's address (``Prefix.via``): such a line is
    that node's, named by the host its worker's NCCL lines name under the same address (one node, one name: its
    watchdog timeout and its NCCL lines were two hosts), else by the address; it is no line of the file's writer,
    so it does not name the file's host (the driver node's own lines went to the first remote node named). A name
    that is no host name (300 characters, a blank) names no file's host: its own line is refused, and a raw dmesg
    line after it took it and was refused too, its Xid 79 lost (a break-it pass)."""
    # file stream, or (stream, key) of keyed Kafka text -> the one host its prefixes named so far (None: several)
    named: dict[str | tuple[str, str | None], str | None] = {}
    nccl: dict[int, tuple[int, str, int]] = {}  # id(segment) -> its NCCL lines' hosts (_nccl_hosts_before)
    if pods:
        for h in hits:
            if h.c.sig.source == "dmesg":  # the kernel's lines are the node's own: no pod writes them (a break-it pass)
                continue
            if h.prefix.host in pods:
                h.prefix.host = _pod_node(h, h.prefix.host, pods)
            if h.row.get("host") in pods:
                h.row["host"] = _pod_node(h, h.row["host"], pods)
    placed = rank_hosts(hits)
    # by worker process (address and pid): a node that takes the address over later is another (a break-it pass)
    alias = {(h.seg.stream, h.prefix.via, h.prefix.pid): h.prefix.host for h in hits
             if h.prefix.via and h.prefix.host and h.prefix.host != h.prefix.via}
    for h in hits:
        if h.prefix.via and h.prefix.host == h.prefix.via and (
                name := alias.get((h.seg.stream, h.prefix.via, h.prefix.pid))):
            h.prefix.host = name
        own = h.row.get("host") or h.prefix.host
        seg = h.seg
        text = _file_text(seg)
        # a key that is no host name (a path, a placeholder, bytes that were no UTF-8) is no file's name: its
        # stream is every machine's, as an unkeyed partition's (a raw Xid line after nodeA's took nodeA: break-it)
        keyed = not text and _keyed_text(seg) and _is_host(seg.host, known)
        # a key's lines, whatever stream a caller made, by the host the key names as stored (``node07`` and then
        # ``NODE07`` are one file: what its earlier lines named was forgotten at the new spelling, a break-it pass)
        scope = seg.stream if text else (seg.stream, canonical_host(seg.host) if keyed else seg.host)
        if (h.prefix.addr_host and own == h.prefix.source_addr and not h.row.get("host") and not text
                and seg.host):  # talosctl's address before the line; the record's key or envelope names the host
            own = seg.host
        if ((text or keyed) and own and own == h.prefix.host and not h.prefix.via
                and _is_host(own, known)):
            was = named.get(scope, h.prefix.host)
            named[scope] = h.prefix.host if was == h.prefix.host else None
        ranks = placed.get(seg.stream) if not own and h.prefix.rank is not None else None
        if own:
            h.row["host"] = own
        elif ranks and (at := ranks.get(h.prefix.rank)):  # where the stream's NCCL lines put its rank
            h.row["host"] = at
        elif text or keyed:  # a plain-text Kafka record's key is its file's name here (a fresh user's trial)
            got = (named.get(scope) if scope in named
                   else _nccl_hosts_before(seg, h.line, nccl, h.c.sig.source != "dmesg"))
            got = got or seg.host
            if text and pods and got in pods and h.c.sig.source != "dmesg":  # a file named by its pod (kubectl logs)
                got = _pod_node(h, got, pods)
            h.row["host"] = got or ("unknown" if text else "")
        else:  # a Kafka key, host header or envelope host; none: refused (``pipeline._named_hosts``)
            h.row["host"] = seg.host or ""


def _pod_node(h: Hit, pod: str, pods: dict[str, str]) -> str:
    """The node pod ``pod`` ran on when ``h``'s line was written (:func:`assign_hosts`), the pod kept in
    ``details.pod``: its own record's node, when it came in one whose envelope names one (a pod recreated under its
    name on another node after the first one's GPU fell off: the batch's last record of it moved the fault to the
    healthy node, a break-it pass); else the batch's (``pods``, ``decode.Decoded.pod_nodes``)."""
    h.row["details"].setdefault("pod", pod)
    seg = h.seg
    return seg.host if seg.host and not _file_text(seg) and seg.host not in pods else pods[pod]


#: NCCL's prefix at a line's start, after a stamp or a local Ray worker's "(pid=34272) " / "(RayWorker pid=7) " at
#: most (formats.md §11.1; a worker of another node, "(pid=7, ip=10.0.0.2) ", is no line of the file's writer):
#: "node01:311:405 [0] NCCL INFO …"
_NCCL_LINE = re.compile(rb"^(?:\[[^\]\n]{1,40}\] |\((?:[\w.:-]{1,80} )?pid=\d{1,10}\) )?"
                        rb"([A-Za-z0-9][\w.-]{0,252}):\d+:\d+ \[\d+\] NCCL ", re.M)


def _nccl_hosts_before(seg: Segment, line: int, memo: dict[int, tuple[int, str, int]], backward: bool = True
                       ) -> str | None:
    """The one host the NCCL lines of ``seg`` before physical line ``line`` name in their ``host:pid:tid`` prefix,
    recognised or not; None when they name none or several. With ``backward`` (a job's line, not the kernel's), when
    all of the segment's NCCL lines name one host, a line before the first of them is that host's too: a rank's
    watchdog timeout printed before the NCCL lines of its process (a container's log: NVIDIA/Megatron-LM#735,
    "[rank2]:[E …] Watchdog caught collective operation timeout" and then "9aee1c01f3e7:6727:7168 [1] NCCL INFO …")
    went to the file's name, its peers' to the container (a real-logs pass); a kernel line is no container's (a
    node's dmesg and then a job's output in one file gave the node's Xid 79 to the container: a break-it pass).
    ``memo`` keeps each segment's (line of its first NCCL line, that host, line of the first naming another host):
    the text is read once, up to a second host, and only for a line that names no host of its own (a copy of every
    NCCL line was searched per such line: 5 minutes for a file of 2.4 million INFO lines and 2,000 timeouts, a
    break-it pass)."""
    got = memo.get(id(seg))
    if got is None:
        # only the lines that hold "] NCCL " (every match does) are matched, each from its start: a kernel log's
        # record is not scanned at every position (since a Kafka record's key stands for a file's name, the scan of
        # each batched dmesg record that has a hostless hit took the batched benchmark's assemble stage from ~0.15
        # to ~0.40 CPU s per 300k lines), nor a job's log at every line (0.48 s for 300k lines with six NCCL lines,
        # now 0.04). The next "] NCCL " is sought from a matched line's match on (one more in that line is
        # skipped), from another line's end. A host's name is ASCII (``\w`` of a bytes pattern): its bytes compare
        # as its text
        data, first, host, other, at, n, last = seg.data, -1, b"", -1, 0, 0, -1
        find, match = data.find, _NCCL_LINE.match
        pos = find(b"] NCCL ")
        while pos >= 0:
            start = data.rfind(b"\n", 0, pos) + 1
            if start != last and (m := match(data, start)) is not None:
                last = start
                n += data.count(b"\n", at, start)
                at = start
                name = m.group(1)
                if first < 0:
                    first, host = n, name
                elif name != host:
                    other = n
                    break
                pos = find(b"] NCCL ", m.end())
                continue
            end = find(b"\n", pos)
            pos = -1 if end < 0 else find(b"] NCCL ", end)
        got = memo[id(seg)] = (first, host.decode(), other)
    first, host, other = got
    if first < 0 or (line <= first and (other >= 0 or not backward)) or 0 <= other < line:
        return None
    return host


def _keyed_text(seg: Segment) -> bool:
    """``seg`` is a plain-text Kafka record (not an NDJSON record, ``#r<n>``, whose envelope may name its host): its
    host is the record's key or ``host`` header, where a shipper (``firstfault send``, Vector, Fluent Bit) collected
    the file, which :func:`assign_hosts` gives a line that names none only after what the stream's earlier lines
    named, as it gives a file's name. A record without a key or header names no host: its stream is its
    partition's unkeyed records, of any writer; so is one whose key is no host name (``assign_hosts`` asks)."""
    return bool(seg.host) and seg.ref_basis == "kafka" and "#r" not in seg.origin


def _file_text(seg: Segment) -> bool:
    """``seg``'s host is only its file name's guess: a local file's own text, or an NDJSON record of a file whose
    envelope names no host (a docker json-file log: ``Segment.host_guessed``). An envelope that names a host
    names it for its record."""
    return (seg.ref_basis == "file" and seg.origin == seg.stream) or seg.host_guessed


def rank_hosts(hits: list[Hit]) -> dict[str, dict[int, str]]:
    """Stream -> global rank -> the host it ran on, read from the stream's NCCL init lines
    (``host:pid:tid … comm P rank R nranks N … commId C - Init START|COMPLETE``, formats.md §6) of the job's world
    communicator: the one of the largest ``nranks`` in the file, whose ranks are PyTorch's global ranks (those of
    its c10 prefix, ``[rankR]:``). Only where that is sure; a file gets no placement when:

    * two communicators (commIds) have that largest ``nranks``: the job restarted at the same size, or the largest
      logged are sub-communicators (tensor-parallel groups, PyTorch's send/recv pairs), whose ranks restart at 0
      in each;
    * an init line after the world's first one comes from a process outside it (``host``, ``pid``): the job
      restarted (an elastic restart to fewer hosts is a smaller world that came later);
    * a c10 line without a host of the file prints a rank the world does not hold (rank >= ``nranks``): the
      largest logged is not the world.

    A rank two hosts claim is left out. A Kafka stream (topic, partition, key) or a file's NDJSON records whose
    key or envelope names a host are read alike (the lines of this batch: ``assemble``'s hits of one stream) when
    their NCCL init lines name several hosts: an aggregated job log, collected on one of them."""
    streams: dict[str, list[Hit]] = {}
    most: dict[str, int] = {}  # stream -> the largest rank of its c10 lines without a host
    keyed: set[str] = set()  # streams whose records name a host (a Kafka key, an envelope)
    for h in hits:
        if not _file_text(h.seg):
            keyed.add(h.seg.stream)
        if h.c.sig.kind == "nccl_init":
            streams.setdefault(h.seg.stream, []).append(h)
        elif h.prefix.rank is not None and not (h.row.get("host") or h.prefix.host):
            most[h.seg.stream] = max(most.get(h.seg.stream, 0), h.prefix.rank)
    out: dict[str, dict[int, str]] = {}
    for stream, inits in streams.items():
        lines = []  # (host, pid, rank, nranks, commId) of the init lines that say all of it but the commId
        for h in inits:
            row = h.row
            host, rank, nranks = row.get("host") or h.prefix.host, row.get("rank"), row.get("nranks")
            if host and isinstance(rank, int) and isinstance(nranks, int) and 0 <= rank < nranks:
                lines.append((host, row.get("pid") or h.prefix.pid, rank, nranks, row.get("comm")))
        if not lines or (stream in keyed and len({x[0] for x in lines}) < 2):  # a keyed stream of one host's NCCL
            # lines is that host's log: its key or envelope names its lines' host
            continue
        size = max(x[3] for x in lines)
        world = [x for x in lines if x[3] == size]  # one communicator's lines, or no placement
        if len({x[4] for x in world}) > 1 or most.get(stream, -1) >= size:
            continue
        procs = {(x[0], x[1]) for x in world}
        if any((x[0], x[1]) not in procs for x in lines[lines.index(world[0]):]):
            continue
        hosts: dict[int, set[str]] = {}
        for host, _pid, rank, _nranks, _comm in world:
            hosts.setdefault(rank, set()).add(host)
        out[stream] = {r: next(iter(hs)) for r, hs in hosts.items() if len(hs) == 1}
    return out


def assemble(hits: list[Hit], tz, seen_boots: dict[tuple, int] | None = None,
             pods: dict[str, str] | None = None,
             anchors: YearAnchors | None = None) -> Assembled:
    """Rows for one stream's hits, in stream order: events, link samples, topology facts. ``seen_boots`` and
    ``anchors`` (:func:`year_anchors`) are shared by the streams of one batch (:func:`resolve_times`); ``pods``: pod
    name -> node (``decode.Decoded.pod_nodes``, :func:`assign_hosts`)."""
    out = Assembled()
    host_ok: dict[str, bool] = {}  # host -> is_host_name, asked once per host (_is_host)
    # first: a line's time is inherited from, and its boot time read off, its own host's lines
    assign_hosts(hits, host_ok, pods)
    resolve_times(hits, tz, seen_boots, anchors)
    hits = merge_sxid_groups(carry_context(hits))
    topo_rows: list[Hit] = []
    storms = Storms()
    copies: set[str] = set()  # the ids of the lines their own precise stamps date (line_event_id), this batch
    #: (host, GPU index) -> bus id, from the stream's ``gpu_bus`` lines so far (``nvidia-smi --query-gpu`` or
    #: its table before ``nvidia-smi nvlink`` output; a poller's sample): link samples printed by index get it
    bus_of: dict[tuple[str, int], str] = {}
    for h in hits:
        sig, row, p, seg = h.c.sig, h.row, h.prefix, h.seg
        if sig.emit == "topology":
            origin = h.origin
            if sig.id == "nvml.topo_row":
                topo_rows.append(h)
            elif sig.id in ("nvml.smi_table_row", "nvml.query_gpu_bus"):
                if row.get("gpu_index") is not None and row.get("device"):
                    bus_of[(row["host"], row["gpu_index"])] = row["device"]
                out.topology.append({
                    "host": row["host"], "ts": row["ts"], "fact": "gpu_bus", "gpu_index": row.get("gpu_index"),
                    "device": row.get("device"), "link": None, "peer_name": None, "peer_device": None,
                    "peer_link": None, "path": None, "origin": origin})
            else:
                out.topology.append({
                    "host": row["host"], "ts": row["ts"], "fact": "nvlink_remote",
                    "gpu_index": row.get("gpu_index"), "device": row.get("device"), "link": row.get("link"),
                    "peer_name": None, "peer_device": row.get("peer"),
                    "peer_link": _maybe_int(row["details"].get("peer_link")), "path": None, "origin": origin})
            continue
        if sig.emit == "link_sample" or sig.id in _LINK_STATE_SIGS:
            d = row["details"]
            state = "up" if "gbps" in d else "inactive" if sig.id == "nvml.nvlink_inactive" else \
                "down" if sig.id in ("dcgm.nvlink_down", "nvml.nvlink_status_row") else None
            out.link_samples.append({
                "host": row["host"], "ts": row["ts"], "gpu_index": row.get("gpu_index"),
                "device": row.get("device") or bus_of.get((row["host"], row.get("gpu_index"))),
                "link": row.get("link"), "state": state,
                "gbps": float(d["gbps"]) if "gbps" in d else None, "counter": d.get("counter"),
                "value": _sample_value(d.get("value")), "model": d.get("model"), "origin": h.origin})
            if sig.emit == "link_sample":
                continue
        if sig.emit == "context":
            continue
        if seg.cut:  # read in part: what the file does not show may be in the part lost (decode.Segment.cut)
            row["details"]["file_cut"] = True
        # the GPU and the rank a line is of are part of what repeats: nvidia-smi nvlink -s prints the same "Link 3:
        # <inactive>" under each GPU's header, and ranks the same error; one event of GPU 0 counted four times stood
        # for four GPUs' down links (a fresh user's trial)
        # Ray's log deduplication prints a line seen again on other workers once, with "[repeated 8x across cluster]":
        # eight more copies, counted (they were one; verl-project/verl#2995, a real-logs pass), and the same line as
        # the copy Ray printed first
        rest, repeats = p.rest, 1
        if rest.endswith("cluster]") and (m := _RAY_REPEATED.search(rest)):
            rest, repeats = rest[:m.start()], max(1, int(m[1]))
        # an MPI launcher's label names the rank of a training process's line, not of a kernel line it printed: the
        # process's rank in the job, as c10's "[rank4]:" is
        rank = p.rank if p.rank is not None or sig.source != "nccl" else p.launcher_rank
        key = (row["host"], row["signature"], row.get("device"), row.get("link"), rest,
               row.get("gpu_index", p.gpu_index), row.get("rank", rank),
               # and the process's rank in the job (c10's "[rank4]:", Open MPI's "[1,4]<stderr>:"): two processes,
               # each rank 0 of its own group of one id ("[PG 5 Rank 0]"), were one event of one party
               # (xdit-project/xDiT#147, a real-logs pass; under mpirun, two MPI ranks' "[Rank 0] Watchdog caught …" of
               # two groups were one event of count 2, a break-it pass)
               rank,
               # a line of the boot before a reboot in the capture is no repeat of the same line after it (a GPU fallen
               # off the bus again after the reboot was one event, and no recurrence: a break-it pass)
               row["details"].get("reboots_after"),
               # and the peer a line's context named (Open MPI's "Peer host:": two blocks of one text naming two
               # peers were one event of the first peer, a break-it pass)
               row["details"].get("peer_addr"))
        # a line the pipeline will refuse joins only the repeats of its own Kafka value (or file): each value it came
        # in is then a reject of its own and dead-lettered (three keyless records of one line were one reject, one
        # dead letter, the other two values committed and lost: a break-it pass), and a flood of it in one value is
        # still one event (one reject per line doubled the memory of a 400k-line storm: a second one)
        if not _storable(row, seg.ingest_ts, host_ok):
            key = (*key, seg.origin)
        # a line its own precise stamp dates is one event however often it is delivered (schemas.line_event_id): a
        # second copy in the batch is no repeat of it (a storm's lines have stamps of their own)
        # the rank a launcher's prefix named (c10's "[rank2]:", Open MPI's "[1,2]<stderr>:") is part of what the line
        # says: two ranks of one host print the same words in one microsecond (PyTorch's exit warning of ranks 0 and 2
        # were one event: the second rank's exit lost, a real-logs pass); every copy of one line carries its prefix
        text = p.rest if rank is None else f"rank{rank}\x00{p.rest}"
        if p.mono is None:
            eid = (line_event_id(row["host"], row["ts"], row["signature"], text, h.sub)
                   if row["ts_basis"] == "line" and row["ts_precision_us"] <= LINE_ID_PRECISION_US else None)
        else:
            # so is a line its raw kernel stamp dates to the µs since boot, however its wall time was got: two copies
            # of one boot's dmesg counted back from two files' mtimes an hour apart were two failures, the second
            # "failed before" (a break-it pass); kern.log's copy of it (its stamp in the brackets) is the same event,
            # whatever its header's precision (rsyslog's high-precision ISO stamps, Debian 12's default, gave it an id
            # of its wall time: one Xid 119 of a dmesg and a kern.log was "reported 2 lines", a second break-it pass)
            eid = line_event_id(row["host"], round(p.mono * US), row["signature"], "uptime\x00" + text, h.sub)
        if eid is not None:
            if eid in copies:
                continue
            copies.add(eid)
        if storms.joins(key, row["ts"], repeats):
            continue
        # the row's columns, then the event's own (the line's pid, GPU and rank where the row has none)
        origin = h.origin
        ev = dict(row)
        ev["event_id"] = eid or make_event_id(origin, h.sub)
        ev["source"], ev["message"], ev["origin"], ev["count"] = sig.source, h.message, origin, repeats
        if seg.ingest_ts is not None or "ingest_ts" not in ev:
            ev["ingest_ts"] = seg.ingest_ts
        if "pid" not in ev:
            ev["pid"] = p.pid
            if p.pid_from_tag:
                # a syslog tag's: the process that wrote the line to the journal, a unit's main process (torchrun,
                # a shell) for every child that inherited its stdout; no pid to set against one the line itself
                # prints (glog's "received by PID 4181", NCCL's "host:pid:tid": model.other_process)
                row["details"]["pid_from_tag"] = True
        if "gpu_index" not in ev:
            ev["gpu_index"] = p.gpu_index
        if "rank" not in ev:
            # NCCL's own "host:pid:tid [dev]" line is of a communicator whose rank of the process the launcher's MPI
            # rank need not be (Init COMPLETE's "rank 7" beside "[1,3]<stderr>:"): that is its job rank alone, and its
            # GPU places it (a break-it pass)
            nccl_own = p.rank is None and p.nccl_own
            ev["rank"] = None if nccl_own else rank
            if nccl_own and rank is not None:
                row["details"]["global_rank"] = rank
        if p.gpu_index_text is not None and ev["gpu_index"] is None:
            row["details"].setdefault("gpu_index_text", p.gpu_index_text)
        if p.local_rank is not None and sig.source == "nccl":  # torchrun's "[default3]:": which worker of its node
            row["details"].setdefault("local_rank", p.local_rank)
        if rank is not None and ev["rank"] != rank and ev["rank"] is not None:
            # c10's "[rank218]:" is the process's rank in the job; a line of another process group names the rank in
            # that group ("[PG ID 6 … Rank 13]", NVIDIA-NeMo/Megatron-Bridge#2053), which stays the event's rank (the
            # rank its communicator knows it by)
            row["details"]["global_rank"] = rank
        if p.source_addr:
            row["details"]["source_addr"] = p.source_addr
        storms.start(key, ev)
        out.events.append(ev)
    out.topology.extend(_topology_matrix(topo_rows))
    return out


def _storable(row: dict[str, Any], ingest_ts: int | None, host_ok: dict[str, bool]) -> bool:
    """Whether the pipeline stores an event of ``row`` (``ingest.pipeline``: ``_named_hosts``, ``_in_range``,
    ``_kafka_times``): its host is a host name, its time one the correlator places (``schemas.events.TS_RANGE_US``),
    and a line timed by its Kafka record has a record time from 2000 to 2100. ``host_ok`` remembers the hosts."""
    ts = row.get("ts")
    return (_is_host(row.get("host") or "", host_ok) and ts is not None and TS_RANGE_US[0] <= ts < TS_RANGE_US[1]
            and (row.get("ts_basis") != "kafka" or plausible(ingest_ts)))


def _is_host(name: str, known: dict[str, bool] | None) -> bool:
    """``schemas.hostname.is_host_name(name)``, asked once per name of a batch: ``known`` remembers the answers."""
    if known is None:
        return is_host_name(name)
    ok = known.get(name)
    if ok is None:
        ok = known[name] = is_host_name(name)
    return ok


#: Ray's deduplicated copies at a line's end: "… [repeated 8x across cluster]" (ray/_private/ray_logging.py)
_RAY_REPEATED = re.compile(r"\s*\[repeated (\d{1,9})x across cluster\]$")


class Storms:
    """Identical lines repeated in a burst become one event with ``count`` and ``last_ts``, one per
    :data:`STORM_SPAN_US` of a longer storm.

    A failing node can print one line hundreds of thousands of times (800,000
    copies of one Xid 95 line have been seen). Lines of one stream are the same
    when host, signature, device, link and the text after the time prefix are
    (the key); a repeat joins the event while it comes within ``gap_us`` of the
    previous copy. The event keeps the first copy's id, time and message;
    nothing of the count is lost. A repeat is decided before its event is
    built, so a storm costs one event, not one per line.
    """

    def __init__(self, gap_us: int = STORM_GAP_US, span_us: int = STORM_SPAN_US) -> None:
        self.gap_us = gap_us
        self.span_us = span_us
        self.open: dict[tuple, dict[str, Any]] = {}

    def joins(self, key: tuple, ts: int, copies: int = 1) -> bool:
        """True when a line of ``key`` at ``ts`` (µs) repeats the open event of its key: counted into it (``copies``
        times: a line Ray's deduplication says was repeated). Not when the event would span ``span_us`` or more from
        its first copy (:data:`STORM_SPAN_US`)."""
        cur = self.open.get(key)
        if cur is None:
            return False
        last = cur.get("last_ts") or cur["ts"]
        if abs(ts - last) > self.gap_us or abs(ts - cur["ts"]) >= self.span_us:
            return False
        cur["count"] += copies
        cur["last_ts"] = max(last, ts)
        cur["ts"] = min(cur["ts"], ts)
        return True

    def start(self, key: tuple, ev: dict[str, Any]) -> None:
        """``ev`` (count 1) is the open event of ``key`` from now on."""
        self.open[key] = ev


#: a counter sample at or past this is no count: NVML's unsigned -1 (18446744073709551615) where a counter has no value;
#: read as one, it was a rise of 1.8e19 errors, and the degraded-link report's JSON, CSV and Parquet failed on it (a
#: break-it pass)
_NO_COUNT = float(2**63)


#: DCGM's "blank" values and the three after them (not found, not supported, no permission) that dcgm-exporter passes
#: on where a field has no value: 32-bit 0x7ffffff0, 64-bit 0x7ffffffffffffff0, double 2^47 (dcgm_structs.h
#: DCGM_INT32_BLANK, DCGM_INT64_BLANK, DCGM_FP64_BLANK). 2147483632 read as a count was a rise of 2.1e9 NVLink errors
#: in a minute (a break-it pass)
_DCGM_BLANKS = frozenset(float(b + k) for b in (0x7FFFFFF0, 0x7FFFFFFFFFFFFFF0, 2.0**47) for k in range(4))


def _sample_value(v: Any) -> float | None:
    """A link sample's value (float), None when it is no number, not finite, negative, at least :data:`_NO_COUNT` or
    one of DCGM's blank values (:data:`_DCGM_BLANKS`)."""
    x = _maybe_float(v)
    return x if x is not None and 0 <= x < _NO_COUNT and x not in _DCGM_BLANKS else None


def _maybe_float(v: Any) -> float | None:
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def _maybe_int(v: Any) -> int | None:
    try:
        return int(v)
    except (TypeError, ValueError):
        return None


def _topology_matrix(rows: list[Hit]) -> list[dict[str, Any]]:
    """``nvidia-smi topo -m`` rows: the i-th cell of a row is the path to the i-th row's device."""
    facts: list[dict[str, Any]] = []
    names = [h.row["details"].get("topo_dev") for h in rows]
    for h in rows:
        a = h.row["details"].get("topo_dev")
        cells = _TOPO_CELL.findall(h.row["details"].get("cells", ""))
        for j, cell in enumerate(cells):
            if j >= len(names) or names[j] == a or cell == "X":
                continue
            facts.append({
                "host": h.row["host"], "ts": h.row["ts"], "fact": "topo_path",
                "gpu_index": int(a[3:]) if a and a.startswith("GPU") else None, "device": None, "link": None,
                "peer_name": names[j], "peer_device": None, "peer_link": None, "path": cell,
                "origin": h.origin})
    return facts
