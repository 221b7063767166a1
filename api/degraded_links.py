"""The hourly degraded-link report, computed: link samples + incidents in, one report object out (pure).

Input rows are those of the ``link_samples`` view (``schemas/samples.py``)
with ``ts`` as µs since the epoch, UTC, for the 24 hours that end with the
report hour, and the incident evidence of incidents overlapping the hour.
A link is ``(host, gpu_index, link)``; rows without a GPU index or link
number are skipped (and counted). For the hour ``[start, end)``:

``down``
    the link's last state sample in the hour is not ``up`` (``inactive`` from
    ``nvidia-smi nvlink -s``, ``down`` from DCGM) and the topology expects it
    up: the GPU model's platform wires that link (``correlate/platforms.yaml``,
    docs/reference/topology.md §1: link number < links per GPU), or the link
    was seen ``up`` earlier in the window (a baseline, topology.md §9 rule 2),
    or the host's ``nvidia-smi nvlink -R`` names its far end (``wiring``:
    a link that trained, topology.md §7). A PCIe card's links (0 expected)
    never seen up and named by no ``-R`` line are inactive by design.
    A link whose spell not up is a flap that ended just past the hour (see
    ``flapped``) is flapped, not down: it was up again when the report was written.
``errors``
    an error counter rose: every counter whose name says CRC, replay or
    recovery (``CRC Errors``, ``Replay Errors``, ``Recovery Errors`` of
    ``nvidia-smi nvlink -e``; DCGM's ``…CRC_FLIT_ERROR…`` etc.).
    ``delta`` = rises between consecutive samples from the last sample before
    the hour (the baseline; else the hour's first) to the hour's last sample,
    so hourly deltas add up without double counting. A value lower than the
    one before is a reset (``nvidia-smi nvlink -re``, driver reload): the
    counter restarted from 0, so its new value counts and ``resets`` says so.
    ``rate_per_hour`` = delta / (time from baseline to last sample, hours);
    none over less than ``MIN_RATE_SPAN_S`` (a minute: one rise a microsecond
    after its baseline was 3.5e12 an hour).
``flapped``
    the link changed between up and not up at least twice, counting from its
    state just before the hour (up -> inactive -> up is two changes); or a
    short spell not up (:data:`FLAP_MAX_S` or less from its first not-up sample
    to the up sample after it) overlaps the hour. A flap is thus one in every
    hour it touches, wherever the hour's boundary falls: down at 02:59:50 and up
    at 03:00:00 flapped in hour 02 and in hour 03, as the same pair at 03:20 flapped
    in hour 03 (it read ``down`` in 02 and ``cleared`` in 03: a break-it pass). The
    hour's report reads state samples up to :data:`FLAP_LOOKAHEAD_US` past its end
    for the up that closes such a spell (the service writes it after the allowed
    lateness, 5 minutes by default); a spell that ends later is a flap of the hour it
    ends in only (the earlier hour's report says ``down``, as it was when the hour ended).

One physical link is one row. Where the host's ``nvidia-smi nvlink -R`` lines
(the lake's ``topology`` facts ``nvlink_remote``, with ``gpu_bus`` and the link
samples' bus ids, or a direct-connect board's own wiring: ``correlate.topology``)
name a link's far end, the row's ``peer`` names it: ``kind`` ``gpu`` (a GPU of the
same host: an NVLink bridge or a direct-connect board, reference/topology.md §4, §7)
with its ``gpu_index`` and ``link``, or ``other`` (an NVSwitch port on HGX boards, or
a fabric address: §2, §3) with its bus id ``device`` and port ``link``. Both ends of
a GPU-to-GPU link degraded in the hour are one row, the end of the lower (GPU,
link) with the other as its ``peer`` (``listed`` true, its own ``problems``,
``state`` and ``counters``); ``problems`` is both ends', ``errors`` their sum
(they counted as two links, twice in ``down``: a break-it pass). ``peer`` null:
no ``-R`` line names the far end (the peer is unknown).

Listed links come worst first (:func:`severity_order`), each with a ``next_action``
(:func:`next_action`).

Each listed link is ``new`` (not listed in the window's 23 earlier hours),
``persisting`` (listed in the previous hour) or ``recurring`` (listed earlier,
not in the previous hour). ``cleared`` lists links of the previous hour's
report that a sample of this hour shows and that are not listed now (a link
with no sample in the hour is not cleared); ``silent_hosts`` hosts that sent
samples in the window but none in the hour.

Times in the report are ISO 8601 UTC strings; no wall-clock time is read,
so the same input gives the same report.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections import defaultdict
from collections.abc import Callable, Container, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from functools import lru_cache
from typing import Any, Final

from correlate.incident import iso
from correlate.topology import Topology, expected_links
from ingest.prefix import to_us
from schemas.fleet import HostConfig

US: Final = 1_000_000
HOUR_US: Final = 3600 * US
WINDOW_HOURS: Final = 24  # the charts and the new/persisting status look this far back (report hour included)
CLASSES: Final = ("crc", "replay", "recovery")
PROBLEMS: Final = ("down", "flapped", "errors")  # worst first
ROLE_RANK: Final = {"initiator": 0, "downstream": 1, "context": 2}
#: the longest spell not up between two up samples that is a flap, seconds: an hour, the longest a down-up pair inside
#: one hour can be (every such pair was a flap before spells across the hour's boundary were)
FLAP_MAX_S: Final = 3600
#: how far past the hour's end the report reads state samples, µs: only to close a spell not up that began in the hour
#: (:func:`flap_spells`); the hour's own findings (last state, counters) stop at its end. The default allowed lateness
#: (``Settings.allowed_lateness_s``), after which the service writes the hour's report.
FLAP_LOOKAHEAD_US: Final = 300 * US


# --- hours ------------------------------------------------------------------------------------------------
_HOUR_SHAPE = re.compile(r"(\d{4})-(\d{2})-(\d{2})T(\d{2})")


def parse_hour(text: str) -> datetime:
    """``2026-11-30T03`` (or any ISO 8601 time exactly on a UTC hour: ``2026-11-30T08:30+05:30`` is 03 UTC; no
    zone = UTC) -> aware UTC datetime.

    Raises ``ValueError`` with a message fit for the caller.
    """
    if not text.isascii():  # strptime and fromisoformat read other scripts' digits (٢٠٢٦-12-03T09)
        raise ValueError(f"hour must look like 2026-11-30T03 (UTC, ASCII digits), not {text!r}")
    if m := _HOUR_SHAPE.fullmatch(text):  # the right shape: a date or hour no clock has says which
        try:
            datetime(*map(int, m.groups()))
        except ValueError as e:
            raise ValueError(f"hour {text!r} is no UTC hour: {e}") from None
    try:
        dt = datetime.strptime(text, "%Y-%m-%dT%H")
    except ValueError:
        try:
            dt = datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            raise ValueError(f"hour must look like 2026-11-30T03 (UTC), not {text!r}") from None
        if len(text.strip()) <= 10:  # a date alone (2026-11-30, 20261130) names a day, not which hour of it
            raise ValueError(f"hour must name the hour: {dt:%Y-%m-%d}T00 for its first, not {text!r}")
    if not 2000 <= dt.year <= 2100:  # before the zone's shift: 0001-01-01T00+01:00 would overflow in UTC
        raise ValueError(f"hour must be between 2000 and 2100, not {text!r}")
    dt = dt.replace(tzinfo=timezone.utc) if dt.tzinfo is None else dt.astimezone(timezone.utc)
    if (dt.minute, dt.second, dt.microsecond) != (0, 0, 0):  # in UTC: 04:00+05:30 is 22:30 UTC, no report's hour
        raise ValueError(f"hour must be on a UTC hour (minutes and seconds 0 in UTC), not {text!r} "
                         f"({dt.time().isoformat()} UTC)")
    if not 2000 <= dt.year <= 2100:  # the report reads a day before and an hour after: keep far from the limits
        raise ValueError(f"hour must be between 2000 and 2100, not {text!r}")
    return dt


@lru_cache(maxsize=1024)  # the hours of one report's window, for every listed link
def hour_label(start_us: int) -> str:
    """µs of an hour's start -> ``2026-11-30T03``."""
    return datetime.fromtimestamp(start_us // US, tz=timezone.utc).strftime("%Y-%m-%dT%H")


def due_hour(now: datetime, lateness_s: float) -> datetime:
    """The latest hour whose report can be written at ``now``: it ended at least ``lateness_s`` ago.

    Late samples within the allowed lateness still land in their hour, so the
    service waits that long after an hour ends before reporting it.
    """
    t = now.astimezone(timezone.utc) - timedelta(seconds=lateness_s)
    return t.replace(minute=0, second=0, microsecond=0) - timedelta(hours=1)


@lru_cache(maxsize=1024)  # a fleet has a few counter names, looked up for every sample
def counter_class(name: str | None) -> str | None:
    """Error class of a counter name: ``CRC Errors`` -> ``crc``, ``…REPLAY_ERROR…`` -> ``replay``, else None."""
    low = (name or "").lower()
    return next((c for c in CLASSES if c in low), None)


# --- grouping samples per link ------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True, order=True)
class LinkKey:
    host: str
    gpu_index: int
    link: int


@dataclass(slots=True)
class Series:
    """One link's samples in the window, in time order."""

    device: str | None = None
    states: list[tuple[int, str]] = field(default_factory=list)  # (ts µs, "up" | "inactive" | "down")
    counters: dict[str, list[tuple[int, float]]] = field(default_factory=dict)  # name -> [(ts µs, value)]


@dataclass(slots=True)
class Samples:
    """The window's samples grouped per link, and the GPU models they named."""

    links: dict[LinkKey, Series]
    models: dict[tuple[str, int], str]  # (host, gpu_index) -> model of the latest sample naming one
    skipped: int = 0


def group_samples(rows: Iterable[Mapping[str, Any]]) -> Samples:
    """``link_samples`` rows (``ts`` µs) -> :class:`Samples`. Rows lacking a GPU index or link are skipped."""
    links: dict[LinkKey, Series] = {}
    models: dict[tuple[str, int], tuple[int, str]] = {}
    skipped = 0
    for r in sorted(rows, key=lambda r: r["ts"]):
        if r.get("gpu_index") is None or r.get("link") is None:
            skipped += 1
            continue
        key = LinkKey(r["host"], int(r["gpu_index"]), int(r["link"]))
        s = links.setdefault(key, Series())
        s.device = r.get("device") or s.device
        if r.get("model"):
            models[(key.host, key.gpu_index)] = (r["ts"], r["model"])
        if r.get("state"):
            s.states.append((r["ts"], r["state"]))
        elif r.get("counter") and r.get("value") is not None and counter_class(r["counter"]):
            s.counters.setdefault(r["counter"], []).append((r["ts"], float(r["value"])))
    return Samples(links=links, models={k: m for k, (_t, m) in models.items()}, skipped=skipped)


# --- one link, one hour ----------------------------------------------------------------------------------------
def _rise(points: list[tuple[int, float]], ts: list[int], start: int, end: int
          ) -> tuple[list[tuple[int, float]], float, int, float] | None:
    """(samples used, rise, resets, seconds spanned) of one counter over ``[start, end)`` (module doc); ``ts`` the
    points' times. None without a sample in it."""
    i0, i1 = bisect_left(ts, start), bisect_left(ts, end)
    if i0 == i1:
        return None
    seq = points[max(i0 - 1, 0):i1]
    delta = 0.0
    resets = 0
    for (_t0, a), (_t1, b) in zip(seq, seq[1:]):
        if b >= a:
            delta += b - a
        else:
            delta += b
            resets += 1
    return seq, delta, resets, (seq[-1][0] - seq[0][0]) / US


def counter_delta(points: list[tuple[int, float]], start: int, end: int) -> dict[str, Any] | None:
    """The rise of one counter over the hour ``[start, end)`` (see module doc); None without a sample in it."""
    got = _rise(points, [t for t, _v in points], start, end)
    if got is None:
        return None
    seq, delta, resets, span_s = got
    return {"from": iso(seq[0][0]), "to": iso(seq[-1][0]), "start_value": _num(seq[0][1]),
            "end_value": _num(seq[-1][1]), "delta": _num(delta), "resets": resets, "span_s": _num(span_s),
            "rate_per_hour": _per_hour(delta, span_s)}


#: the shortest span a rate per hour is given over, seconds: a rise over less says its delta only (two samples a
#: microsecond apart across the hour's start gave 3.528e12 an hour: a break-it pass). Pollers sample every 10 - 60 s.
MIN_RATE_SPAN_S = 60.0


def _per_hour(delta: float, span_s: float) -> float | None:
    """A counter's rise per hour over the seconds its samples span, 3 decimals; None over less than
    :data:`MIN_RATE_SPAN_S`."""
    return round(delta * 3600 / span_s, 3) if span_s >= MIN_RATE_SPAN_S else None


def state_view(states: list[tuple[int, str]], start: int, end: int) -> dict[str, Any] | None:
    """The link's state over the hour: last state, changes, transitions, since when it is down."""
    ts = [t for t, _s in states]
    i0, i1 = bisect_left(ts, start), bisect_left(ts, end)
    if i0 == i1:
        return None
    seq = states[max(i0 - 1, 0):i1]
    transitions = [{"ts": iso(t1), "from": a, "to": b} for (_t0, a), (t1, b) in zip(seq, seq[1:])
                   if (a == "up") != (b == "up")]
    last_ts, last = states[i1 - 1]
    down_since = None
    if last != "up":
        j = i1 - 1
        while j > 0 and states[j - 1][1] != "up":
            j -= 1
        down_since = iso(states[j][0])
    return {"last": last, "last_ts": iso(last_ts), "samples": i1 - i0, "changes": len(transitions),
            "transitions": transitions, "down_since": down_since,
            "flaps": [{"down": iso(a), "up": iso(b), "seconds": _num((b - a) / US)}
                      # from the sample before the earliest a flap of this hour can begin at (24 h of samples
                      # for each of the 24 hours of a listed link were 13 % of a fleet's report)
                      for a, b in flap_spells(states[max(bisect_left(ts, start - FLAP_MAX_S * US) - 1, 0):], start,
                                              end)]}


def flap_spells(states: list[tuple[int, str]], start: int, end: int) -> list[tuple[int, int]]:
    """The short spells not up that overlap ``[start, end)``: ``(first not-up sample, the up sample after it)`` in µs,
    at most :data:`FLAP_MAX_S` apart, the first before ``end`` and the second at or after ``start``. ``states``
    (time order) may reach past ``end`` (:data:`FLAP_LOOKAHEAD_US`) to close a spell that began in the hour; a spell
    with no up sample before it (the link's first samples) or after it (still down) is none."""
    out = []
    down_at = None
    was_up = False
    for t, s in states:
        if s == "up":
            if down_at is not None and down_at < end and t >= start and t - down_at <= FLAP_MAX_S * US:
                out.append((down_at, t))
            down_at, was_up = None, True
        elif was_up and down_at is None:
            down_at = t
        if t >= end and down_at is None:
            break
    return out


def expectation(link: int, n_expected: int | None, states: list[tuple[int, str]], end: int,
                wired: bool = False) -> str | None:
    """Why the topology expects ``link`` up: ``platform``, ``baseline`` (seen up before ``end``), ``wiring`` (the
    host's ``nvidia-smi nvlink -R`` names its far end: a link that trained, reference/topology.md §7, §9 rule 3), or
    None."""
    if n_expected is not None and link < n_expected:
        return "platform"
    if any(s == "up" for t, s in states if t < end):
        return "baseline"
    return "wiring" if wired else None


def assess(key: LinkKey, s: Series, n_expected: int | None, start: int, end: int,
           wired: bool = False) -> dict[str, Any] | None:
    """The link's finding for ``[start, end)`` when it is degraded (``problems`` non-empty), else None; ``wired``:
    the host's wiring facts name the link's far end (:func:`expectation`)."""
    st = state_view(s.states, start, end)
    expected = expectation(key.link, n_expected, s.states, end, wired)
    counters = []
    for name, points in sorted(s.counters.items()):
        d = counter_delta(points, start, end)
        if d and d["delta"] > 0:
            counters.append({"counter": name, "class": counter_class(name), **d})
    problems = []
    # a spell not up that a flap closed just past the hour is that flap's, not a link down (the up sample is known)
    if st and st["last"] != "up" and expected and not any(f["up"] >= iso(end) for f in st["flaps"]):
        problems.append("down")
    if st and (st["changes"] >= 2 or st["flaps"]):
        problems.append("flapped")
    if counters:
        problems.append("errors")
    if not problems:
        return None
    errors = {c: _num(sum(x["delta"] for x in counters if x["class"] == c)) for c in CLASSES}
    return {"problems": problems, "expected": expected, "state": st, "counters": counters, "errors": errors}


def hourly_rates(s: Series, window_start: int, hours: int) -> list[dict[str, Any]]:
    """Per hour of the window: errors per hour of each counter class (sum over its counters), None if unsampled
    (``counter_delta``'s ``rate_per_hour``, without the rest of its fields: this runs 24 times per listed link)."""
    by_class: dict[str, list[tuple[list[tuple[int, float]], list[int]]]] = {c: [] for c in CLASSES}
    for n, p in s.counters.items():
        if (c := counter_class(n)) is not None:
            by_class[c].append((p, [t for t, _v in p]))
    out = []
    for h in range(hours):
        a = window_start + h * HOUR_US
        row: dict[str, Any] = {"hour": hour_label(a)}
        for c in CLASSES:
            got = []
            for p, ts in by_class[c]:
                r = _rise(p, ts, a, a + HOUR_US)
                if r is not None and (rate := _per_hour(r[1], r[3])) is not None:  # none over less than a minute
                    got.append(rate)
            row[c] = round(sum(got), 3) if got else None
        out.append(row)
    return out


def _num(x: float) -> int | float:
    """Counts print as integers; ratios stay floats, and so does a count past 2^53 (a float holds no larger integer
    exactly, and JSON, CSV and Parquet writers refused one past 2^63: a break-it pass)."""
    return int(x) if float(x).is_integer() and abs(x) < 2**53 else round(x, 6)


# --- the far end of a link -------------------------------------------------------------------------------------
def link_peers(samples: Samples, topology: Iterable[Mapping[str, Any]]) -> dict[LinkKey, dict[str, Any]]:
    """The far end of each sampled link that the host's wiring facts name, by :class:`LinkKey`.

    ``topology``: rows of the lake's ``topology`` view (``schemas/samples.py``; ``ts`` µs) of facts ``nvlink_remote``
    (``nvidia-smi nvlink -R``: ``Link 0: Remote Device 00000000:07:00.0: Link 46``) and ``gpu_bus`` (GPU index ->
    bus id); the latest fact of a link wins. A GPU's bus id comes from those, from its samples' ``device``, or, on
    a direct-connect board whose ``-R`` names GPUs by index only, from that board's own wiring
    (:meth:`correlate.topology.Topology.learn_topology`, reference/topology.md §7). Returns ``{"kind": "gpu" |
    "other", "gpu_index": int | None, "link": int | None, "device": bus id}``: ``gpu`` when the remote device is a
    GPU of the same host (a bridge, a direct-connect board), ``other`` for any other device (an NVSwitch port, or
    an A100's fabric address ``0008:00:00.0``). A GPU end no line of its own names is named by the other end's
    line. A link no fact names is not in the result (its peer is unknown).
    """
    import pyarrow as pa

    rows = sorted((r for r in topology if r.get("fact") in ("nvlink_remote", "gpu_bus")), key=lambda r: r["ts"])
    if not rows:
        return {}
    t = Topology()
    for key, s in samples.links.items():
        if s.device:
            t.index_to_bus.setdefault((key.host, key.gpu_index), s.device)
    cols = ("host", "ts", "fact", "gpu_index", "device", "link", "peer_name", "peer_device", "peer_link", "path")
    t.learn_topology(pa.Table.from_pylist([{c: r.get(c) for c in cols} for r in rows]))
    index_of: dict[tuple[str, str], int] = {(h, d): i for (h, i), d in t.index_to_bus.items()}
    out: dict[LinkKey, dict[str, Any]] = {}
    named_by: dict[LinkKey, tuple[LinkKey, str | None]] = {}  # a GPU end -> the end whose line names it, its bus id
    for key, s in samples.links.items():
        bus = s.device or t.index_to_bus.get((key.host, key.gpu_index))
        far = (t.remote.get((key.host, bus, key.link)) if bus else None) \
            or t.remote.get((key.host, f"gpu{key.gpu_index}", key.link))
        if far is None:
            continue
        device, link = far
        gpu = index_of.get((key.host, device))
        out[key] = {"kind": "other" if gpu is None else "gpu", "gpu_index": gpu, "link": link, "device": device}
        if gpu is not None and link is not None:
            named_by.setdefault(LinkKey(key.host, gpu, int(link)), (key, bus))
    # an end with no line of its own (its GPU's -R not captured, its output cut) is named by the other's
    for other, (key, bus) in named_by.items():
        if other not in out and other in samples.links:
            out[other] = {"kind": "gpu", "gpu_index": key.gpu_index, "link": key.link, "device": bus}
    return out


def other_end(key: LinkKey, peers: Mapping[LinkKey, dict[str, Any]]) -> LinkKey | None:
    """The other GPU end of ``key``'s link (a bridge, a direct-connect board) when the wiring names it and that end
    does not name another link back (its own ``-R`` line names ``key``, or it has none); else None."""
    p = peers.get(key)
    if p is None or p["kind"] != "gpu" or p["link"] is None:
        return None
    other = LinkKey(key.host, p["gpu_index"], int(p["link"]))
    back = peers.get(other)
    if other == key or (back is not None and (back["kind"], back["gpu_index"], back["link"]) !=
                        ("gpu", key.gpu_index, key.link)):
        return None
    return other


# --- the report ------------------------------------------------------------------------------------------------
def match_incidents(key: LinkKey, device: str | None, rows: list[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Incidents whose evidence names this link: same host and link number, and same GPU index (or bus id).

    ``rows``: one per (incident, evidence event) with the incident's ``id``,
    ``category``, ``severity``, ``status``, ``start`` (µs) and the event's
    ``role``, ``host``, ``gpu_index``, ``device``, ``link``. The strongest role
    wins (initiator, downstream, context).
    """
    best: dict[str, dict[str, Any]] = {}
    for r in rows:
        if r["host"] != key.host or r["link"] != key.link:
            continue
        same_gpu = (r["gpu_index"] == key.gpu_index if r["gpu_index"] is not None
                    else bool(device) and r["device"] == device)
        if not same_gpu:
            continue
        old = best.get(r["id"])
        if old is None or ROLE_RANK.get(r["role"], 9) < ROLE_RANK.get(old["role"], 9):
            best[r["id"]] = {"id": r["id"], "category": r["category"], "severity": r["severity"],
                             "status": r["status"], "start": iso(r["start"]), "role": r["role"]}
    return sorted(best.values(), key=lambda i: (i["start"], i["id"]))


def gpu_models(samples: Samples, hosts: Mapping[str, HostConfig]) -> dict[tuple[str, int], str | None]:
    """Model per (host, GPU): the one the GPU reported, else the fleet config's platform of its host."""
    out = {}
    for key in samples.links:
        g = (key.host, key.gpu_index)
        if g not in out:
            cfg = hosts.get(key.host)
            out[g] = samples.models.get(g) or (cfg.platform if cfg else None)
    return out


def listed(samples: Samples, n_expected: Mapping[tuple[str, int], int | None], start: int,
           end: int, wired: Container[LinkKey] = ()) -> dict[LinkKey, dict[str, Any]]:
    """Every degraded link of ``[start, end)`` with its finding; ``wired``: the links whose far end the wiring facts
    name (:func:`link_peers`)."""
    out = {}
    for key, s in samples.links.items():
        f = assess(key, s, n_expected[(key.host, key.gpu_index)], start, end, key in wired)
        if f:
            out[key] = f
    return out


def build_report(rows: Iterable[Mapping[str, Any]], incident_rows: list[Mapping[str, Any]], start: int, *,
                 hosts: Mapping[str, HostConfig] | None = None, asked_us: int | None = None,
                 topology: Iterable[Mapping[str, Any]] = ()) -> dict[str, Any]:
    """The report of the hour starting at ``start`` (µs UTC, on an hour).

    ``rows``: ``link_samples`` rows of ``[start - 23 h, start + 1 h)``, ``ts`` in
    µs, and state rows up to :data:`FLAP_LOOKAHEAD_US` past the hour (read for flaps only; rows beyond are left
    out); ``incident_rows``: see :func:`match_incidents`; ``hosts``: the fleet
    config (NVLink domain and platform per host); ``asked_us`` (µs UTC): when it is
    asked — no host is silent in an hour that has not begun (every host of the
    window was, in red, beside the note that the hour had not begun: a fresh
    user's trial); ``topology``: wiring facts that name links' far ends (:func:`link_peers`). Returns the
    JSON-ready report (module doc; shape in tests/data/report/expected.json).
    """
    hosts = hosts or {}
    end = start + HOUR_US
    window_start = end - WINDOW_HOURS * HOUR_US
    rows = list(rows)
    samples = group_samples(r for r in rows if window_start <= r["ts"] < end)
    # the state samples just past the hour close a spell not up that began in it (flap_spells): only of links the
    # window knows, and only their states (the hour's counters, models and hosts stop at its end)
    for r in sorted((r for r in rows if end <= r["ts"] < end + FLAP_LOOKAHEAD_US and r.get("state")),
                    key=lambda r: r["ts"]):
        if r.get("gpu_index") is not None and r.get("link") is not None and \
                (s := samples.links.get(LinkKey(r["host"], int(r["gpu_index"]), int(r["link"])))) is not None:
            s.states.append((r["ts"], r["state"]))
    models = gpu_models(samples, hosts)
    n_expected = {g: expected_links(m) for g, m in models.items()}

    def domain(h: str) -> str:
        cfg = hosts.get(h)
        return cfg.domain if cfg and cfg.domain else h

    # a link whose far end the host's nvidia-smi nvlink -R names is wired, whatever its GPU model's platform says: an
    # H100 NVL pair's bridged link inactive at both ends, never sampled up, was an incident (link.both_ends) and
    # degraded in GET /links, yet no row here (a fresh user's trial)
    peers = link_peers(samples, topology)
    now = listed(samples, n_expected, start, end, peers)
    previous = listed(samples, n_expected, start - HOUR_US, start, peers)
    # the evidence rows by (host, link): each listed link looks at its own (every row for every link took 107 s
    # for 28,800 links of 200 hosts in a break-it pass)
    evidence: dict[tuple[str, int], list[Mapping[str, Any]]] = {}
    for r in incident_rows:
        evidence.setdefault((r["host"], r["link"]), []).append(r)

    def earlier_hours(key: LinkKey) -> set[int]:
        """Hours back (1 = the previous hour) in which this end was listed too."""
        s = samples.links[key]
        return {h for h in range(1, WINDOW_HOURS) if (key in previous if h == 1 else assess(
            key, s, n_expected[(key.host, key.gpu_index)], start - h * HOUR_US, start - (h - 1) * HOUR_US,
            key in peers))}

    def incidents_of(key: LinkKey) -> list[dict[str, Any]]:
        return match_incidents(key, samples.links[key].device, evidence.get((key.host, key.link), []))

    links = []
    for key, f in sorted(now.items()):
        other = other_end(key, peers)
        if other is not None and other in now and other < key:
            continue  # the other end's row holds this one: one physical link, one row
        s = samples.links[key]
        both = other is not None and other in now
        # the hours either end was listed: one physical link, whichever end saw it (its other end's CRC errors the hour
        # before made this hour's row of this end "new": a break-it pass)
        earlier = earlier_hours(key) | (earlier_hours(other) if other is not None and other in samples.links else set())
        incidents = incidents_of(key)
        if both:
            best = {i["id"]: i for i in incidents_of(other)}
            for i in incidents:  # the strongest role of either end, as match_incidents keeps for one
                if i["id"] not in best or ROLE_RANK.get(i["role"], 9) < ROLE_RANK.get(best[i["id"]]["role"], 9):
                    best[i["id"]] = i
            incidents = sorted(best.values(), key=lambda i: (i["start"], i["id"]))
        g = now[other] if both else None
        item = {"host": key.host, "domain": domain(key.host), "gpu_index": key.gpu_index, "link": key.link,
                "device": s.device, "model": models[(key.host, key.gpu_index)],
                "expected_links": n_expected[(key.host, key.gpu_index)], **f,
                "status": "new" if not earlier else "persisting" if 1 in earlier else "recurring",
                "first_listed": hour_label(start - max(earlier, default=0) * HOUR_US),
                "hours_listed": 1 + len(earlier),
                "incidents": incidents,
                "peer": _peer(peers.get(key), other, g, samples, start, end)}
        if g is not None:
            item["problems"] = [p for p in PROBLEMS if p in f["problems"] or p in g["problems"]]
            item["expected"] = f["expected"] or g["expected"]
            item["errors"] = {c: _num(f["errors"][c] + g["errors"][c]) for c in CLASSES}
        if "errors" in item["problems"]:
            item["rates_24h"] = hourly_rates(s, window_start, WINDOW_HOURS)
            if g is not None:  # the link's rate: both ends' counters
                theirs = hourly_rates(samples.links[other], window_start, WINDOW_HOURS)
                item["rates_24h"] = [{"hour": a["hour"], **{c: None if a[c] is None and b[c] is None else
                                                            round((a[c] or 0) + (b[c] or 0), 3) for c in CLASSES}}
                                     for a, b in zip(item["rates_24h"], theirs)]
        item["next_action"] = next_action(item, carried=_carried_flap(key, f, previous.get(key), earlier, start))
        links.append(item)
    links.sort(key=severity_order)
    host_rows = _hosts(samples, models, n_expected, links, start, end, domain)
    # a link is cleared only when a sample of the hour shows it: one with none (its host silent, or not polled) is
    # not known to be well, and a host that went silent after its links went down is the likeliest broken one
    seen = {(h["host"], g["gpu_index"], n) for h in host_rows for g in h["gpus"] for n in g["sampled"]}
    # an end whose other end is still listed is not cleared: its link is not; both ends cleared are one entry
    gone = {k: f for k, f in previous.items() if k not in now and (k.host, k.gpu_index, k.link) in seen
            and other_end(k, peers) not in now}
    cleared = []
    for k, f in sorted(gone.items()):
        other = other_end(k, peers)
        if other is not None and other in gone and other < k:
            continue
        problems = f["problems"] if other not in gone else \
            [p for p in PROBLEMS if p in f["problems"] or p in gone[other]["problems"]]
        p = peers.get(k)
        cleared.append({"host": k.host, "domain": domain(k.host), "gpu_index": k.gpu_index, "link": k.link,
                        "problems": problems, "peer": None if p is None else
                        {"kind": p["kind"], "gpu_index": p["gpu_index"], "link": p["link"], "device": p["device"]}})
    sampled = {h["host"] for h in host_rows}
    silent = sorted({k.host for k in samples.links} - sampled) if asked_us is None or asked_us >= start else []
    return {
        "report": "degraded_links",
        "hour": hour_label(start),
        "start": iso(start),
        "end": iso(end),
        "window_start": iso(window_start),
        "totals": {**_counts(links), "hosts_sampled": len(host_rows),
                   "links_sampled": sum(h["links_sampled"] for h in host_rows), "cleared": len(cleared),
                   "silent_hosts": len(silent), "samples_skipped": samples.skipped},
        "domains": _domains(host_rows, links),
        "hosts": host_rows,
        "links": links,
        "cleared": cleared,
        "silent_hosts": silent,
    }


def severity_order(x: Mapping[str, Any]) -> tuple:
    """Sort key of listed links, worst first: its worst problem (down, flapped, errors), more problems first, the
    larger error rise first, then host, GPU and link."""
    return (min(PROBLEMS.index(p) for p in x["problems"]), -len(x["problems"]), -sum(x["errors"].values()),
            x["host"], x["gpu_index"], x["link"])


def _carried_flap(key: LinkKey, now: Mapping[str, Any], before: Mapping[str, Any] | None, earlier: set[int],
                  start: int) -> bool:
    """Whether a flapped link of the hour from ``start`` (µs) is listed only for a flap across the hour's boundary
    that the hour before listed alone (``before``: that hour's finding of ``key``; ``earlier``: the hours back it was
    listed): one flap, in both hours' reports (docs/report.md), not a second one. A flap down at 23:59:50 and up at
    00:00:00 was 'Flapping again (2 of 24 h listed)' in the 00 hour's report, to be serviced as a down link (a fresh
    user's trial)."""
    flaps = (now.get("state") or {}).get("flaps") or []
    if now["problems"] != ["flapped"] or earlier != {1} or before is None or before["problems"] != ["flapped"]:
        return False
    if not flaps or any(fl["down"] >= iso(start) for fl in flaps):
        return False  # a flap that went down in this hour is this hour's own
    return {fl["down"] for fl in before["state"]["flaps"]} <= {fl["down"] for fl in flaps}


def next_action(x: Mapping[str, Any], *, carried: bool = False) -> str:
    """What to do about one listed link (a row of the report), in two or three sentences: the problem, the service
    the reference gives, the far end or how to name it, the incident to read (reference/topology.md: §3 an access
    link that failed on H100-generation boards just shows inactive, §4 bridges and direct-connect boards, §7 ``-R``
    names the far end, §8 recovery is a GPU reset with Fabric Manager's procedure, then hardware). ``carried``: its
    one flap crossed into this hour from the hour before, which listed it (:func:`_carried_flap`): watched, as a
    new flap is."""
    g, host = x["gpu_index"], x["host"]
    p = x.get("peer")
    pair = p is not None and p["kind"] == "gpu"
    if p is None:
        where = f"Far end unknown: nvidia-smi nvlink -R on {host} names it."
    elif pair:
        where = (f"Other end: GPU {p['gpu_index']} link {p['link']} (a bridge or a direct-connect board)"
                 + (", degraded too." if p["listed"] else "."))
    else:
        where = f"Far end: {p['device']} port {p['link']} (an NVSwitch port or a fabric address)."
    reset = (f"when the jobs on GPUs {g} and {p['gpu_index']} are done, reset both (nvidia-smi -r -i {g}, then -i "
             f"{p['gpu_index']})" if pair else f"when the jobs on GPU {g} are done, reset it (nvidia-smi -r -i {g})"
             ) + "; on an NVSwitch board use Fabric Manager's GPU reset procedure"
    ids = [i["id"] for i in x["incidents"] if i["role"] == "initiator"] or [i["id"] for i in x["incidents"]]
    see = [f"Incident {ids[0]} has the fault around it."] if ids else []
    if "down" in x["problems"]:
        st = x["state"] or {}
        since = f" since {st['down_since'][:16].replace('T', ' ')} UTC" if st.get("down_since") else ""
        what = f"Down{since}, expected up: {reset}; still inactive after that, it needs hardware service."
    elif "flapped" in x["problems"]:
        what = ("Went down and came back up: watch it; if it flaps again, service it as a down link." if
                x["status"] == "new" else
                "Went down and came back up across the hour's boundary, the flap the hour before lists: watch it; if "
                "it flaps again, service it as a down link." if carried else
                f"Flapping again ({x['hours_listed']} of 24 h listed): {reset}; then hardware service.")
    else:
        what = ("Error counters rose" + (f" ({x['hours_listed']} of 24 h listed)" if x["status"] != "new" else "")
                + f": watch its 24-hour rate; if it keeps rising or the link goes down, {reset}.")
    return " ".join([what, where, *see])


def _peer(p: dict[str, Any] | None, other: LinkKey | None, g: dict[str, Any] | None, samples: Samples, start: int,
          end: int) -> dict[str, Any] | None:
    """A row's ``peer`` (module doc): the far end :func:`link_peers` names, None when unknown; for a GPU end, whether
    it is listed too (``g``: its finding, folded into the row), its problems, its state in the hour and its rising
    counters."""
    if p is None:
        return None
    s = samples.links.get(other) if other is not None else None
    return {**p, "listed": g is not None, "problems": g["problems"] if g else [],
            "state": g["state"] if g else (state_view(s.states, start, end) if s else None),
            "counters": g["counters"] if g else []}


def _counts(links: list[dict[str, Any]]) -> dict[str, Any]:
    incidents = sorted({i["id"] for x in links for i in x["incidents"]})
    return {"links_listed": len(links),
            **{p: sum(p in x["problems"] for x in links) for p in PROBLEMS},
            **{s: sum(x["status"] == s for x in links) for s in ("new", "persisting", "recurring")},
            "errors_delta": {c: _num(sum(x["errors"][c] for x in links)) for c in CLASSES},
            "incidents": incidents}


def _hosts(samples: Samples, models: Mapping[tuple[str, int], str | None],
           n_expected: Mapping[tuple[str, int], int | None], links: list[dict[str, Any]], start: int, end: int,
           domain: Callable[[str], str]) -> list[dict[str, Any]]:
    """Per host sampled in the hour: its GPUs (links sampled, links not up) and the counts of its listed links."""
    gpus: dict[str, dict[int, dict[str, Any]]] = defaultdict(dict)
    for key, s in sorted(samples.links.items()):
        st = state_view(s.states, start, end)
        has_counter = any(_rise(p, [t for t, _v in p], start, end) for p in s.counters.values())
        if st is None and not has_counter:
            continue
        g = gpus[key.host].setdefault(key.gpu_index, {
            "gpu_index": key.gpu_index, "model": models[(key.host, key.gpu_index)],
            "expected_links": n_expected[(key.host, key.gpu_index)], "sampled": [], "not_up": []})
        g["sampled"].append(key.link)
        if st and st["last"] != "up":
            g["not_up"].append(key.link)
    listed_of: dict[str, list[dict[str, Any]]] = defaultdict(list)  # once: hosts x links was most of the time
    for x in links:
        listed_of[x["host"]].append(x)
    out = []
    for host in sorted(gpus):
        out.append({"host": host, "domain": domain(host), "links_sampled": sum(len(g["sampled"]) for g in
                                                                                gpus[host].values()),
                    **_counts(listed_of.get(host, [])), "gpus": [gpus[host][i] for i in sorted(gpus[host])]})
    return out


def _domains(host_rows: list[dict[str, Any]], links: list[dict[str, Any]]) -> list[dict[str, Any]]:
    by: dict[str, dict[str, None]] = defaultdict(dict)  # domain -> its hosts, in order, once each
    sampled: dict[str, int] = defaultdict(int)
    listed_in: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for h in host_rows:
        by[h["domain"]][h["host"]] = None
        sampled[h["domain"]] += h["links_sampled"]
    for x in links:
        by[x["domain"]][x["host"]] = None
        listed_in[x["domain"]].append(x)
    return [{"domain": d, "hosts": sorted(hs), "links_sampled": sampled[d], **_counts(listed_in[d])}
            for d, hs in sorted(by.items())]
