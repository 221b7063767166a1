"""JSON and terminal views shared by the CLI and the HTTP API.

Events become objects with the events columns (``schemas.events``), times as
ISO 8601 UTC strings and ``details`` as an object — the DESIGN.md contract.
"""

from __future__ import annotations

from typing import Any

import orjson
import pyarrow as pa
from rich.table import Table
from rich.text import Text

from correlate.incident import iso

_TIME_COLUMNS = ("ts", "last_ts", "ingest_ts")


def events_json(table: pa.Table) -> list[dict[str, Any]]:
    """Arrow events -> list of JSON-ready dicts (times ISO 8601 UTC, details parsed)."""
    if table.num_rows == 0:
        return []
    ints = {c: table.column(c).cast(pa.int64()).to_pylist() for c in _TIME_COLUMNS if c in table.column_names}
    rows = table.drop_columns([c for c in ints]).to_pylist()
    for i, r in enumerate(rows):
        for c, vals in ints.items():
            r[c] = iso(vals[i]) if vals[i] is not None else None
        if r.get("details"):
            r["details"] = orjson.loads(r["details"])
    order = list(table.column_names)
    return [{k: r.get(k) for k in order} for r in rows]


#: start bases that are not the first line's own stamp (``~`` in the table)
_APPROX = ("kafka", "file", "inherited", "envelope", "operator")


def incidents_table(incidents: list[dict[str, Any]], title: str = "Incidents") -> Table:
    """A rich table: one row per incident, initiator first; rows by start, then initiator host (incidents
    timed by the same file or arrival share a start), then id — the same order wherever they come from."""
    approx_any = any(inc.get("start_basis") in _APPROX for inc in incidents)
    t = Table(title=title, show_lines=False,
              caption="~ the first line printed no time of its own: an earlier line's, the envelope's, the arrival "
                      "(Kafka), the file's or the operator's report's time is shown" if approx_any else None)
    for col in ("start (UTC)", "severity", "category", "initiator", "downstream", "conf"):
        t.add_column(col, overflow="fold", no_wrap=col in ("start (UTC)", "severity", "conf"))
    t.add_column("next action", overflow="ellipsis", max_width=60, no_wrap=True)
    style = {"critical": "bold red", "error": "red", "warning": "yellow", "info": "dim"}
    for inc in sorted(incidents, key=lambda x: (x["start"], x["initiator"].get("host") or "", x["id"])):
        i = inc["initiator"]
        who = describe_initiator(i)
        down = ", ".join(sorted({f"{d['host']}:{d.get('device') or d.get('kind')}" for d in inc["downstream"]}))
        approx = inc.get("start_basis") in _APPROX
        # host names, devices and actions hold text from the logs and the command line: never read as markup
        t.add_row(inc["start"][:19].replace("T", " ") + ("~" if approx else " "),
                  Text(inc["severity"], style=style.get(inc["severity"], "")), Text(inc["category"]), Text(who),
                  Text(down or "-"), f"{inc['confidence']:.2f}", Text(inc["next_action"]))
    return t


def describe_initiator(i: dict[str, Any]) -> str:
    """``node07 gpu 0000:9a:00.0 link 3 (xid 79)`` style one-liner."""
    if i.get("device_type") is None:
        base = f"{i.get('host') or '?'} (no single culprit)" if not i.get("kind") else f"{i.get('host')} {i['kind']}"
        return base
    parts = [str(i.get("host")), str(i["device_type"]),
             str(i.get("device") or (f"index {i['gpu_index']}" if i.get("gpu_index") is not None else "?"))]
    if i.get("links") and len(i["links"]) > 1:
        parts.append("links " + ",".join(map(str, i["links"])))
    elif i.get("link") is not None:
        parts.append(f"link {i['link']}")
    if i.get("peer"):
        parts.append(f"<-> {i['peer']}")
    if i.get("xid") is not None:
        parts.append(f"(Xid {i['xid']})")
    elif i.get("sxid") is not None:
        parts.append(f"(SXid {i['sxid']})")
    return " ".join(parts)
