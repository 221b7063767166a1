"""One incident as a page a person reads: what broke first, what followed, and a picture of when (pure).

Input is the incident detail object of ``GET /incidents/{id}`` (:func:`api.app.create_app`): the incident of
DESIGN.md's shape plus ``timeline`` (its events, each with ``role`` — ``initiator`` / ``downstream`` /
``context`` —, ``relation`` and ``skew_adjusted_ts``, the line's time plus its host's estimated clock offset) and
``blast_radius``. :func:`to_html` returns the page as bytes and touches no file or network; like the degraded-link
report (:mod:`api.report_render`) it is self-contained (no script, font or image fetched) and its chart is drawn
by matplotlib's SVG backend without pyplot.

The chart, :func:`timeline_svg`, has one lane per party (a GPU, an NVSwitch, a link, a rank, or a host's own
lines): the initiator's lanes on top, then the downstream parties in the order they first reported, then context;
the x axis is seconds after the incident's first event, on skew-adjusted times, so an on-call engineer sees at a
glance which device spoke first and how long the others took to follow (600 s for a watchdog timeout after a GPU
fell off the bus). A storm folded into one event (``count`` copies until ``last_ts``) is drawn as a bar.
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime, timezone
from typing import Any, Final

from markupsafe import Markup

from api.report_render import page_environment, svg_element
from schemas.incidents import iso_us

#: lanes drawn one by one; the parties after them share one lane ("+N more parties")
MAX_LANES: Final = 24
#: role -> (marker colour, matplotlib marker, legend text); the marker's shape tells roles apart without colour
ROLE: Final = {
    "initiator": ("#c62828", "X", "initiator (first fault)"),
    "suspect": ("#6a1b9a", "D", "suspect (no single culprit)"),
    "downstream": ("#ef6c00", "o", "downstream reporter"),
    "context": ("#757575", "s", "context"),
}
#: lanes in this order of their most telling role
_ORDER: Final = {r: n for n, r in enumerate(ROLE)}
#: the shortest x axis (µs): lines stamped to the second that print in one second are not a millisecond apart
MIN_SPAN_US: Final = 2_000_000
#: the longest lane name drawn whole (characters); a longer one keeps its start and end around an ellipsis
MAX_LANE_CHARS: Final = 80


def lane_label(name: str) -> str:
    """A lane's name as the chart's y axis shows it: whole up to :data:`MAX_LANE_CHARS`, else its start and end
    around "…" (a party's host and its device or rank both stay readable)."""
    if len(name) <= MAX_LANE_CHARS:
        return name
    half = (MAX_LANE_CHARS - 1) // 2
    return f"{name[:half]}…{name[-(MAX_LANE_CHARS - 1 - half):]}"


def _us(text: str | None) -> int | None:
    """µs since the epoch of an ISO 8601 UTC time as the API writes it (``2026-12-02T09:00:00.000000Z``)."""
    if not text:
        return None
    return iso_us(text)


def lane_name(e: dict[str, Any]) -> str:
    """The party an event of the timeline (or a party of the incident) speaks for: ``host · gpu 0000:1b:00.0`` (a
    device by its PCI bus id, or an NVSwitch / NIC by its name), ``host · rank 5``, ``host · GPU 3`` (an index
    only), else ``host``."""
    host = e.get("host") or "?"
    if e.get("device"):
        return f"{host} · {e.get('device_type') or 'device'} {e['device']}"
    if e.get("rank") is not None:
        return f"{host} · rank {e['rank']}"
    if e.get("gpu_index") is not None:
        return f"{host} · GPU {e['gpu_index']}"
    return host


def candidate_parties(detail: dict[str, Any]) -> list[int]:
    """Indexes in ``downstream`` of the parties an incident with no single culprit names as its candidates
    (``initiator.candidates``; ``correlate.attribute.candidate_name``), in the candidates' order (the likeliest
    first fault first, as the explanation, the CLI and the API name them; a party's own order in ``downstream``
    breaks ties); none for an incident with an initiator."""
    from correlate.attribute import candidate_name
    from correlate.incident import party_subject

    order = {name: k for k, name in reversed(list(enumerate((detail.get("initiator") or {}).get("candidates") or ())))}
    if not order:
        return []
    found = [(order.get(candidate_name(*party_subject(d))), i) for i, d in enumerate(detail.get("downstream") or ())]
    return [i for _, i in sorted(f for f in found if f[0] is not None)]


def suspect_events(detail: dict[str, Any]) -> set[str]:
    """Ids of the events of the :func:`candidate_parties`: the API lists them among ``downstream``, and the page
    calls them suspects, as the CLI's table does (:func:`api.render._rows`)."""
    ds = detail.get("downstream") or []
    return {e for i in candidate_parties(detail) for e in ds[i].get("events") or ()}


def role_of(e: dict[str, Any], suspects: set[str]) -> str:
    """A timeline entry's role on the page: its ``role``, but ``suspect`` for a candidate's event."""
    return "suspect" if e.get("event_id") in suspects else e.get("role") or "context"


def lanes(detail: dict[str, Any]) -> list[dict[str, Any]]:
    """The chart's lanes: ``[{"name", "role", "events": [timeline entries]}]`` — a lane's role is its most
    telling event's (:data:`ROLE`'s order: initiator, suspect, downstream, context); lanes by that role, then by
    first skew-adjusted time. At most :data:`MAX_LANES` lanes; the parties after them are one lane named
    ``+N more parties`` (an 8,192-rank hang has 8,192 downstream ranks: its lanes would be unreadable), with
    ``"folded": True`` (its storms' counts are not written on the chart)."""
    by: dict[str, dict[str, Any]] = {}
    suspects = suspect_events(detail)
    # a party's lines are its lane, also one that names no device (the driver's "probe failed" after the GPU's
    # own line): the lane is named after the party
    party = {eid: lane_name(p) for p in [detail.get("initiator") or {}, *(detail.get("downstream") or ())]
             if p.get("host") for eid in p.get("events") or ()}
    for e in detail.get("timeline") or []:
        name = party.get(e.get("event_id")) or lane_name(e)
        lane = by.setdefault(name, {"name": name, "role": "context", "events": []})
        lane["events"].append(e)
        if _ORDER.get(role_of(e, suspects), 3) < _ORDER[lane["role"]]:
            lane["role"] = role_of(e, suspects)
    out = sorted(by.values(), key=lambda x: (_ORDER[x["role"]], min(_us(e.get("skew_adjusted_ts")) or 0
                                                                     for e in x["events"]), x["name"]))
    if len(out) > MAX_LANES:
        rest = out[MAX_LANES - 1:]
        out = out[:MAX_LANES - 1] + [{"name": f"+{len(rest)} more parties", "role": "downstream", "folded": True,
                                      "events": [e for x in rest for e in x["events"]]}]
    return out


def timeline_svg(detail: dict[str, Any]) -> Markup | None:
    """The incident's events as an inline ``<svg>``: one lane per party (:func:`lanes`), x = seconds after the
    first event (skew-adjusted; minutes past half an hour), a marker per event by role (:data:`ROLE`), a bar to
    ``last_ts`` for a folded storm, and a thin line back to when a timed-out collective began (``elapsed_ms``
    before its line: the ranks of a hang all waited from the moment the first fault struck); None when the
    timeline is empty (the lake no longer holds its events)."""
    from matplotlib.collections import LineCollection
    from matplotlib.figure import Figure

    rows = lanes(detail)
    suspects = suspect_events(detail)
    marks = [(y, e, t) for y, lane in enumerate(rows) for e in lane["events"]
             if (t := _us(e.get("skew_adjusted_ts"))) is not None]
    if not marks:
        return None
    began = {id(e): t - int(e["elapsed_ms"] * 1000) for _, e, t in marks if (e.get("elapsed_ms") or 0) > 0}
    t0 = min([t for *_, t in marks] + list(began.values()))
    t1 = max(t + max(0, (_us(e.get("last_ts")) or 0) - (_us(e.get("ts")) or 0)) for _, e, t in marks)
    span_us = max(t1 - t0, MIN_SPAN_US)
    unit, div = ("minutes", 60e6) if span_us > 1800e6 else ("seconds", 1e6)
    height = 1.4 + 0.3 * len(rows)
    fig = Figure(figsize=(10.0, height))
    # the left margin fits the longest lane name (7 pt DejaVu Sans: under 4.2 pt a character, of the figure's 720):
    # at a fixed 30 % a cloud node's name ("gke-…-pool-8a3c1f2e-9k2m · gpu 0000:06:00.0") lost its start, the part
    # that tells hosts apart
    labels = [lane_label(x["name"]) for x in rows]
    left = min(0.45, max(0.12, (4.2 * max(len(x) for x in labels) + 14) / 720))
    ax = fig.add_axes((left, 0.85 / height, 0.97 - left, 1 - 1.3 / height))
    # one artist per role and kind of mark, not one per event (matplotlib re-fits the axes' limits over every
    # artist at each new one: an 8,192-rank hang drawn event by event took a minute and 7 MB of SVG), and the
    # marks that fall on one spot (within 1/2,000 of the axis, finer than a pixel) drawn once: the ranks of a hang
    # that timed out in one second are one marker of their shared lane
    dots: dict[str, dict[tuple[int, int], tuple[float, int]]] = {}
    dashes: dict[str, dict[tuple[int, int, int], list[tuple[float, int]]]] = {}
    bars: dict[str, dict[tuple[int, int, int], list[tuple[float, int]]]] = {}
    spot = 2000 / (span_us / div)
    for y, e, t in marks:
        x = (t - t0) / div
        role = role_of(e, suspects)
        role = role if role in ROLE else "context"
        if id(e) in began:  # the collective this timeout line ends, from when it began
            x0 = (began[id(e)] - t0) / div
            dashes.setdefault(role, {}).setdefault((round(x0 * spot), round(x * spot), y), [(x0, y), (x, y)])
        last, ts = _us(e.get("last_ts")), _us(e.get("ts"))
        if (e.get("count") or 1) > 1 and last is not None and ts is not None:
            width = max(last - ts, 0) / div
            if (round(x * spot), round((x + width) * spot), y) in bars.setdefault(role, {}):
                continue
            bars[role][round(x * spot), round((x + width) * spot), y] = [(x, y), (x + width, y)]
            if not rows[y].get("folded"):  # the storms of hundreds of parties in one lane: their counts overlapped
                ax.annotate(f"×{e['count']}", (x + width, y), xytext=(3, 3), textcoords="offset points",
                            fontsize=7, color=ROLE[role][0])
        dots.setdefault(role, {}).setdefault((round(x * spot), y), (x, y))
    for role, segments in dashes.items():
        ax.add_collection(LineCollection(list(segments.values()), colors=ROLE[role][0], linewidths=1, alpha=0.5,
                                         linestyles="--"), autolim=False)
    for role, segments in bars.items():
        ax.add_collection(LineCollection(list(segments.values()), colors=ROLE[role][0], linewidths=4, alpha=0.45,
                                         capstyle="butt"), autolim=False)
    for role in ROLE:  # the legend in ROLE's order
        if role in dots:
            colour, marker, label = ROLE[role]
            xs, ys = zip(*dots[role].values())
            ax.scatter(xs, ys, s=46 if role in ("initiator", "suspect") else 26, c=colour, marker=marker, zorder=3,
                       label=label, edgecolors="none")
    # a lane's name is a host's and a device's as the lines gave them: text, never mathtext (a '$' pair in a
    # name was parsed as TeX, and one it could not parse failed the page)
    ax.set_yticks(range(len(rows)), labels, fontsize=7, parse_math=False)
    ax.set_ylim(len(rows) - 0.5, -0.5)
    ax.set_xlim(-span_us / div * 0.03, span_us / div * 1.08)
    first = min(t for *_, t in marks)
    ax.axvline((first - t0) / div, color="#c62828", linewidth=0.6, linestyle=":")
    stamp = datetime.fromtimestamp(t0 / 1e6, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S")
    dashed = "; dashed: a timed-out collective, from when it began" if began else ""
    # two lines: beside a wide lane-name margin the axis is narrower than the one-line label
    ax.set_xlabel(f"{unit} after {stamp} UTC\n(line times plus each host's estimated clock offset{dashed})",
                  fontsize=7)
    ax.tick_params(axis="x", labelsize=7)
    ax.grid(True, axis="x", linewidth=0.3)
    ax.legend(fontsize=7, loc="lower left", bbox_to_anchor=(0, 1.0), ncol=4, frameon=False)
    return svg_element(fig, f"timeline-{detail.get('id', 'incident')}",
                f"timeline of incident {detail.get('id', '')}: {len(rows)} parties, first event at "
                f"{datetime.fromtimestamp(first / 1e6, tz=timezone.utc):%Y-%m-%dT%H:%M:%S}Z")


#: ``GET /incidents/{id}``'s ``timeline_limit``: by default and at most. An incident of a job of 5,000 ranks whose
#: watchdogs each printed ten lines held 5,001 events: its answer was 7.5 MB (6 MB of it the timeline) and its page
#: 3.4 MB, growing with every reporter (a break-it pass); ``downstream`` names every reporter either way.
TIMELINE_DEFAULT = 1000
TIMELINE_MAX = 100_000


def cut_timeline(timeline: list[dict[str, Any]], limit: int, keep: set[str] | frozenset[str] = frozenset()
                 ) -> list[dict[str, Any]]:
    """At most ``limit`` entries of an incident's ``timeline`` (sorted by ``skew_adjusted_ts``), in that order:
    every entry whose ``role`` is ``initiator`` or ``context``, or whose ``event_id`` is in ``keep`` (the suspects'
    events, :func:`suspect_events`: an incident with no single culprit has no initiator event, and its verdict rests
    on its candidates' lines, which are ``downstream``), then the earliest of the others (downstream) — the first
    reporters are the ones nearest the fault. ``limit`` ≥ 1; when those kept alone exceed it, the earliest ``limit``
    of them. Pure."""
    if len(timeline) <= limit:
        return timeline

    def kept(e: dict[str, Any]) -> bool:
        return e.get("role") in ("initiator", "context") or e.get("event_id") in keep

    first = [i for i, e in enumerate(timeline) if kept(e)][:limit]
    rest = [i for i, e in enumerate(timeline) if not kept(e)]
    return [timeline[i] for i in sorted(first + rest[:limit - len(first)])]


#: ``GET /incidents`` and ``/hosts/{host}/timeline``'s ``downstream_limit``: by default and at most. A list item
#: carried every reporter and every edge to it: a job of 5,000 ranks made one item of 1.8 MB, and a page of 50 such
#: items 90 MB (a break-it pass); ``GET /incidents/{id}`` keeps them all.
DOWNSTREAM_DEFAULT = 100
DOWNSTREAM_MAX = 100_000


def cut_downstream(inc: dict[str, Any], limit: int, *, hosts: Collection[str] = (),
                   device: str | None = None) -> dict[str, Any]:
    """``inc`` (an incident in the DESIGN.md shape) with at most ``limit`` parties in ``downstream``: the candidates
    of an incident with no single culprit (``initiator.candidates``: its verdict rests on them), then the others in
    their stored order (the correlator's: earliest first). Before both, the parties the list was asked about: on one
    of ``hosts`` (a ``host``, ``domain`` or ``rack`` filter, a host's timeline) or of ``device`` (a ``device`` filter):
    the item is in the list for them, and a host's timeline showed an incident of 200 ranks without the host's own
    party when it was not among the first 100 (a break-it pass). The kept keep their stored order; ``evidence``
    keeps the edges whose effect is an event of the initiator, the context or a kept party; ``downstream_total``
    and ``evidence_total`` give the counts before the cut. An incident with ``limit`` parties or fewer is ``inc``
    itself, as stored (nothing added). ``limit`` ≥ 1. Pure: ``inc`` itself is not changed."""
    ds = inc.get("downstream") or []
    if len(ds) <= limit:
        return inc
    ev = inc.get("evidence") or []
    out = dict(inc, downstream_total=len(ds), evidence_total=len(ev))
    hosts = set(hosts)
    asked = [i for i, d in enumerate(ds) if d.get("host") in hosts or (device and d.get("device") == device)]
    first = list(dict.fromkeys(asked + candidate_parties(inc)))[:limit]  # the asked first, each once
    taken = set(first)
    rest = [i for i in range(len(ds)) if i not in taken]
    kept = [ds[i] for i in sorted(first + rest[:limit - len(first)])]
    events = {e for d in kept for e in d.get("events") or ()}
    events.update((inc.get("initiator") or {}).get("events") or ())
    events.update(c.get("event") for c in inc.get("context") or ())
    out["downstream"] = kept
    out["evidence"] = [e for e in ev if e.get("effect") in events]
    return out


def to_html(detail: dict[str, Any]) -> bytes:
    """The page for one incident: its verdict (severity, category, initiator, confidence, status), why, what to
    do now and how to verify it, what is missing, the timeline chart, its downstream parties, and the evidence
    lines with their times; UTF-8 HTML."""
    from api.render import describe_initiator

    suspects = suspect_events(detail)
    page = page_environment().get_template("incident.html.j2").render(
        i=detail, chart=timeline_svg(detail), role=ROLE, initiator=describe_initiator(detail.get("initiator") or {}),
        roles={e.get("event_id"): role_of(e, suspects) for e in detail.get("timeline") or ()},
        suspect_parties=[bool(set(d.get("events") or ()) & suspects) for d in detail.get("downstream") or ()],
        timeline_max=TIMELINE_MAX)
    return page.encode("utf-8")
