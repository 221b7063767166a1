"""The degraded-link report as files: JSON, CSV, Parquet, and HTML with inline SVG charts (pure).

Input is the report object of :func:`api.degraded_links.build_report`; every
function returns bytes or text and touches no file or network. Charts are
drawn by matplotlib's SVG backend without pyplot (no global figure state, safe
in threads) and inlined into the page, so the HTML opens offline: no script,
font or image is fetched (chart text is SVG ``<text>`` in the browser's own
sans-serif font). The heatmaps are SVG ``<rect>`` grids written by the
template (see :data:`CELL`). The same report gives the same bytes (no dates in
the SVG metadata, fixed hash salts).
"""

from __future__ import annotations

import io
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Final

import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
from jinja2 import Environment, FileSystemLoader, select_autoescape
from markupsafe import Markup, escape

from api.degraded_links import CLASSES

FORMATS: Final = {"json": "application/json", "csv": "text/csv; charset=utf-8",
                  "parquet": "application/vnd.apache.parquet", "html": "text/html; charset=utf-8"}
TEMPLATES = Path(__file__).with_name("templates")

# heatmap cell status -> (fill colour, letter drawn in the cell so colour is not the only cue, legend text).
# The heatmap is plain SVG <rect>s from the template (a tooltip and an id per cell; matplotlib took 0.25 s per
# host for the same grid); the rate charts, with time axes, are matplotlib's.
CELL: Final = {
    "down": ("#d32f2f", "D", "down, expected up"),
    "flapped": ("#8e24aa", "F", "flapped"),
    "errors": ("#f57c00", "E", "error counters rose"),
    "ok": ("#66bb6a", "", "up, no new errors"),
    "by_design": ("#bdbdbd", "", "not up, not expected (by design)"),
    "unknown": ("#8d8d8d", "?", "not up, wiring unknown"),
    "no_data": ("#ffffff", "", "no sample this hour"),
}
CLASS_COLOUR: Final = {"crc": "#d32f2f", "replay": "#1e88e5", "recovery": "#43a047"}

LINKS_SCHEMA: Final = pa.schema([
    pa.field("hour", pa.string()), pa.field("host", pa.string()), pa.field("domain", pa.string()),
    pa.field("gpu_index", pa.int16()), pa.field("link", pa.int16()), pa.field("device", pa.string()),
    pa.field("model", pa.string()), pa.field("problems", pa.list_(pa.string())), pa.field("status", pa.string()),
    pa.field("first_listed", pa.string()), pa.field("hours_listed", pa.int32()),
    pa.field("expected", pa.string()), pa.field("last_state", pa.string()),
    pa.field("down_since", pa.timestamp("us", tz="UTC")), pa.field("state_changes", pa.int32()),
    *[f for c in CLASSES for f in (pa.field(f"{c}_delta", pa.float64()), pa.field(f"{c}_rate_per_hour", pa.float64()))],
    pa.field("incident_ids", pa.list_(pa.string())),
    # the far end (api.degraded_links.link_peers): kind "gpu" (a bridge, a direct-connect board) or "other" (an
    # NVSwitch port, a fabric address); all null when no nvidia-smi nvlink -R line names it (the peer is unknown)
    pa.field("peer_kind", pa.string()), pa.field("peer_gpu_index", pa.int16()), pa.field("peer_link", pa.int16()),
    pa.field("peer_device", pa.string()), pa.field("peer_listed", pa.bool_()),
    pa.field("peer_problems", pa.list_(pa.string())), pa.field("peer_last_state", pa.string()),
    pa.field("next_action", pa.string()),  # what to do (api.degraded_links.next_action)
])


# --- tables --------------------------------------------------------------------------------------------------
def links_table(report: dict[str, Any]) -> pa.Table:
    """One row per listed link (:data:`LINKS_SCHEMA`), in the report's order (worst first): the CSV and Parquet
    forms of the report."""
    rows = []
    for x in report["links"]:
        st = x["state"] or {}
        row = {"hour": report["hour"], "host": x["host"], "domain": x["domain"], "gpu_index": x["gpu_index"],
               "link": x["link"], "device": x["device"], "model": x["model"], "problems": x["problems"],
               "status": x["status"], "first_listed": x["first_listed"], "hours_listed": x["hours_listed"],
               "expected": x["expected"], "last_state": st.get("last"),
               "down_since": _dt(st.get("down_since")), "state_changes": st.get("changes"),
               "incident_ids": [i["id"] for i in x["incidents"]]}
        peer = x.get("peer")
        row.update({"peer_kind": None, "peer_gpu_index": None, "peer_link": None, "peer_device": None,
                    "peer_listed": None, "peer_problems": None, "peer_last_state": None} if peer is None else
                   {"peer_kind": peer["kind"], "peer_gpu_index": peer["gpu_index"], "peer_link": peer["link"],
                    "peer_device": peer["device"], "peer_listed": peer["listed"], "peer_problems": peer["problems"],
                    "peer_last_state": (peer.get("state") or {}).get("last")})
        row["next_action"] = x.get("next_action")
        for c in CLASSES:
            mine = [k for k in x["counters"] if k["class"] == c]
            rates = [k["rate_per_hour"] for k in mine if k["rate_per_hour"] is not None]
            row[f"{c}_delta"] = x["errors"][c]
            row[f"{c}_rate_per_hour"] = round(sum(rates), 3) if rates else None
        rows.append(row)
    return pa.Table.from_pylist(rows, schema=LINKS_SCHEMA)


def _dt(text: str | None) -> datetime | None:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(timezone.utc) if text else None


def to_json(report: dict[str, Any]) -> bytes:
    """The report object, indented, keys in the order :func:`build_report` made them (fixed)."""
    return orjson.dumps(report, option=orjson.OPT_INDENT_2) + b"\n"


def to_parquet(report: dict[str, Any], *, hour: bool = True) -> bytes:
    """:func:`links_table` as Parquet; without its ``hour`` column when ``hour`` is false: the part stored in the
    lake under ``hour=<the hour>/``, whose folder names it (a hive key is a folder, not also a column: readers
    read the report's ``hour`` from the folder, as the string ``2026-11-30T03``)."""
    t = links_table(report)
    buf = io.BytesIO()
    pq.write_table(t if hour else t.drop_columns(["hour"]), buf, compression="zstd")
    return buf.getvalue()


def to_csv(report: dict[str, Any]) -> bytes:
    """:func:`links_table` with list cells joined by ``;`` (CSV has no lists), times in ISO 8601 as in the
    JSON form (``2026-11-30T03:12:00.000000Z``; Arrow's CSV writer puts a space for the ``T``), and a text cell
    that begins with ``= + - @``, a tab or a carriage return after a ``'`` (a spreadsheet runs it otherwise)."""
    t = links_table(report)
    for name in ("problems", "incident_ids", "peer_problems"):
        joined = pa.array([None if v is None else ";".join(v) for v in t.column(name).to_pylist()], pa.string())
        t = t.set_column(t.schema.get_field_index(name), name, joined)
    for i, f in enumerate(t.schema):
        if pa.types.is_timestamp(f.type):
            t = t.set_column(i, f.name, pc.strftime(t.column(i), format="%Y-%m-%dT%H:%M:%SZ"))
        elif pa.types.is_string(f.type):  # a text cell a spreadsheet would run as a formula is quoted (OWASP's CSV
            # injection advice): a host or model named "=cmd|calc!a1" was written as it is (a break-it pass)
            col = t.column(i)
            formula = pc.fill_null(pc.match_substring_regex(col, r"^[=+\-@\t\r]"), False)
            t = t.set_column(i, f.name, pc.if_else(formula, pc.binary_join_element_wise("'", col, ""), col))
    buf = io.BytesIO()
    pacsv.write_csv(t, buf)
    return buf.getvalue()


# --- charts ------------------------------------------------------------------------------------------------------
def svg_element(fig, chart_id: str, label: str) -> Markup:
    """A matplotlib figure as an inline ``<svg>`` element (no XML prolog), labelled for screen readers."""
    import matplotlib

    buf = io.StringIO()
    # text stays <text> (the browser's own font draws it): turning every glyph into a path costs seconds a chart
    with matplotlib.rc_context({"svg.hashsalt": chart_id, "svg.id": chart_id, "svg.fonttype": "none"}):
        fig.savefig(buf, format="svg", metadata={"Date": None})
    text = buf.getvalue()
    text = text[text.index("<svg"):]
    return Markup(text.replace("<svg ", f'<svg role="img" aria-label="{escape(label)}" ', 1))


def host_grid(host: dict[str, Any], links: list[dict[str, Any]]) -> dict[str, Any]:
    """One host's GPUs × links as cells for the heatmap: status (a key of :data:`CELL`) and a tooltip each.

    Columns run to the widest of the expected link counts and the highest link
    sampled. Returns ``{"ncols": int, "rows": [{"gpu": i, "cells": [{"link",
    "status", "title"}]}], "present": [statuses shown, in legend order]}``.
    """
    listed = {(x["gpu_index"], x["link"]): x for x in links if x["host"] == host["host"]}
    # the other end of a GPU-to-GPU link its row holds: its cell shows that end's own finding
    ends = {(p["gpu_index"], p["link"]): x for x in links if x["host"] == host["host"]
            and (p := x.get("peer")) and p["kind"] == "gpu" and p["listed"]}
    ncols = max([g["expected_links"] or 0 for g in host["gpus"]] + [max(g["sampled"]) + 1 for g in host["gpus"]])
    rows = []
    for g in host["gpus"]:
        cells = []
        for k in range(ncols):
            x = listed.get((g["gpu_index"], k))
            far = ends.get((g["gpu_index"], k)) if x is None else None
            # a link not up on a GPU whose model the samples do not name (DCGM's, no fleet config) may be wired:
            # it is no link "by design" (the API's expected_up is null), as node008 of the demo showed
            status = (x["problems"][0] if x else far["peer"]["problems"][0] if far else
                      ("unknown" if g["expected_links"] is None else "by_design") if k in g["not_up"]
                      else "ok" if k in g["sampled"] else "no_data")
            title = (_finding_text(x) + _peer_text(x) if x else
                     _finding_text(far["peer"]) + f" (other end: GPU {far['gpu_index']} link {far['link']})" if far
                     else CELL[status][2])
            cells.append({"link": k, "status": status, "title": f"GPU {g['gpu_index']} link {k}: " + title})
        rows.append({"gpu": g["gpu_index"], "cells": cells})
    present = [s for s in CELL if any(c["status"] == s for r in rows for c in r["cells"])]
    return {"ncols": ncols, "rows": rows, "present": present}


def peer_label(peer: dict[str, Any] | None) -> str:
    """The far end of a link in words: ``GPU 1 link 2``, ``0000:07:00.0 link 46`` (an NVSwitch port or a fabric
    address), ``unknown``."""
    if peer is None:
        return "unknown"
    if peer["kind"] == "gpu":
        return f"GPU {peer['gpu_index']} link {peer['link']}"
    return f"{peer['device']} link {peer['link']}" if peer["link"] is not None else peer["device"]


def _peer_text(x: dict[str, Any]) -> str:
    p = x.get("peer")
    return f" (other end: {peer_label(p)})" if p else " (other end unknown)"


def _finding_text(x: dict[str, Any]) -> str:
    """``down (inactive since 2026-11-30 03:20); CRC +51`` for a heatmap tooltip; ``x`` a listed link, or the end
    it names in its ``peer``."""
    parts = []
    if "errors" not in x:  # a peer's finding: its counters, not yet summed per class
        x = {**x, "errors": {c: sum(k["delta"] for k in x.get("counters", []) if k["class"] == c) for c in CLASSES}}
    st = x["state"] or {}
    if "down" in x["problems"]:
        parts.append(f"down ({st['last']} since {st['down_since'][:10]} {st['down_since'][11:16]})")
    if "flapped" in x["problems"]:
        spells = ", ".join(f"{f['down'][11:19]}–{f['up'][11:19]}" for f in st.get("flaps") or [])
        n = st["changes"]  # "1 changes" under a flap across the hour's boundary (a fresh user's trial)
        parts.append(f"flapped ({n} change{'' if n == 1 else 's'}" + (f"; not up {spells}" if spells else "") + ")")
    if "errors" in x["problems"]:
        parts.append(", ".join(f"{'CRC' if c == 'crc' else c} +{x['errors'][c]}" for c in CLASSES if x["errors"][c]))
    return "; ".join(parts)


def rate_svg(link: dict[str, Any], hour: str) -> Markup:
    """Errors per hour of each counter class over the 24 h window; the report hour shaded.

    Lines have ids ``rate-<host>-g<i>-l<k>-<class>``; an hour without samples is a gap.
    """
    from matplotlib.dates import DateFormatter, HourLocator
    from matplotlib.figure import Figure

    series = link["rates_24h"]
    starts = [datetime.strptime(p["hour"], "%Y-%m-%dT%H").replace(tzinfo=timezone.utc) for p in series]
    name = f"{link['host']}-g{link['gpu_index']}-l{link['link']}"
    fig = Figure(figsize=(6.4, 2.3))
    ax = fig.add_axes((0.09, 0.14, 0.89, 0.74))
    for c in CLASSES:
        if all(p[c] is None for p in series):  # no counter of this class on this link
            continue
        # a rate holds for its whole hour: a flat step per hour, a gap for an hour without samples
        xs, ys = [], []
        for a, p in zip(starts, series):
            if p[c] is None:
                xs.append(a)
                ys.append(float("nan"))
            else:
                xs += [a, a + timedelta(hours=1)]
                ys += [p[c], p[c]]
        ax.plot(xs, ys, linewidth=1.8, color=CLASS_COLOUR[c], label=c, gid=f"rate-{name}-{c}")
    ax.set_xlim(starts[0], starts[-1] + timedelta(hours=1))
    x_hour = datetime.strptime(hour, "%Y-%m-%dT%H").replace(tzinfo=timezone.utc)
    ax.axvspan(x_hour, x_hour + timedelta(hours=1), color="#ffe082", alpha=0.6, linewidth=0)
    ax.xaxis.set_major_locator(HourLocator(byhour=range(0, 24, 3), tz=timezone.utc))
    ax.xaxis.set_major_formatter(DateFormatter("%H:%M", tz=timezone.utc))
    ax.set_ylim(bottom=0)
    ax.set_ylabel("errors / hour", fontsize=8)
    ax.tick_params(labelsize=7)
    ax.grid(True, linewidth=0.3)
    ax.set_title(f"{link['host']} GPU {link['gpu_index']} link {link['link']}: error counter rates, "
                 f"24 h to {x_hour + timedelta(hours=1):%Y-%m-%d %H:%M} UTC", fontsize=8)
    ax.legend(fontsize=7, loc="upper left", frameon=False)
    return svg_element(fig, f"rate-{name}", f"{link['host']} GPU {link['gpu_index']} link {link['link']}: "
                                     f"CRC, replay and recovery errors per hour over the last 24 hours")


# --- HTML ----------------------------------------------------------------------------------------------------------
def page_environment() -> Environment:
    """The Jinja2 environment of the HTML pages (``api/templates``: the degraded-link report and the incident page,
    which extend ``page.html.j2``): autoescaped, with the filters ``hm`` (an ISO time's ``HH:MM``) and ``dhm``
    (``YYYY-MM-DD HH:MM``)."""
    env = Environment(loader=FileSystemLoader(TEMPLATES), autoescape=select_autoescape(["html", "j2"]),
                      trim_blocks=True, lstrip_blocks=True)
    env.filters["hm"] = lambda s: s[11:16] if s else ""  # "2026-11-30T03:20:00.000000Z" -> "03:20"
    env.filters["dhm"] = lambda s: f"{s[:10]} {s[11:16]}" if s else ""
    env.filters["peer"] = peer_label
    return env


#: a report of more hosts than this draws no heatmap of a host whose every cell is ``ok`` (all sampled links up, no
#: error counter rose): its section says so in a line. A heatmap of 144 links is ~30 kB: 2,000 hosts made a page of
#: 65 MB, 290,000 SVG rects, 25 s to render, whose few degraded hosts were lost among green grids (a break-it pass)
HEATMAPS_OF_EVERY_HOST_MAX: Final = 50


def to_html(report: dict[str, Any], *, incidents_at: str | None = None) -> bytes:
    """The page a person reads: summary, tables per link / domain / host, a heatmap per host (in a report of more
    than :data:`HEATMAPS_OF_EVERY_HOST_MAX` hosts, only of the hosts with a cell that is not ``ok``), rate charts.
    ``incidents_at``: the URL the incident pages are under (``../incidents/``, as the API serves the report beside
    ``GET /incidents/{id}``): each incident id links to its page (``<incidents_at><id>?format=html``); None (a
    file of the lake or the CLI, opened where no API answers) leaves the ids plain text."""
    links_of: dict[str, list[dict[str, Any]]] = {}  # host -> its listed links: each host's grid and charts read its
    for x in report["links"]:  # own, not every link of the report (hosts × links: quadratic in a fleet-wide outage)
        links_of.setdefault(x["host"], []).append(x)
    grids = {h["host"]: host_grid(h, links_of.get(h["host"], [])) for h in report["hosts"] if h["gpus"]}
    if len(report["hosts"]) > HEATMAPS_OF_EVERY_HOST_MAX:
        healthy = {h for h, g in grids.items() if all(c["status"] == "ok" for r in g["rows"] for c in r["cells"])}
        grids = {h: g for h, g in grids.items() if h not in healthy}
    else:
        healthy = set()
    rates = {(x["host"], x["gpu_index"], x["link"]): rate_svg(x, report["hour"])  # a link with a rate to draw (one
             for x in report["links"]  # whose rises all came over less than a minute has its deltas, no chart)
             if any(p[c] is not None for p in x.get("rates_24h", []) for c in CLASSES)}
    page = page_environment().get_template("degraded_links.html.j2").render(
        r=report, grids=grids, rates=rates, classes=CLASSES, cell=CELL, incidents_at=incidents_at, links_of=links_of,
        healthy=healthy, heatmaps_max=HEATMAPS_OF_EVERY_HOST_MAX)
    return page.encode("utf-8")


def render(report: dict[str, Any], fmt: str, *, incidents_at: str | None = None) -> bytes:
    """The report in ``fmt`` (one of :data:`FORMATS`; ``incidents_at``: HTML's links, :func:`to_html`); raises
    ``ValueError`` for another."""
    if fmt not in FORMATS:
        raise ValueError(f"format must be one of {', '.join(FORMATS)}, not {fmt!r}")
    if fmt == "html":
        return to_html(report, incidents_at=incidents_at)
    return {"json": to_json, "csv": to_csv, "parquet": to_parquet}[fmt](report)
