"""The incidents and incident_evidence tables (one row per incident version / per evidence event).

``incidents`` flattens the DESIGN.md incident object into columns analysts
filter on, and keeps the whole object in ``doc`` (JSON) — the API returns
``doc`` unchanged. ``incident_evidence`` links every incident version to its
events: role ``initiator`` / ``downstream`` / ``context``, and the relation.
Times are UTC µs.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Final, Literal, get_args

import orjson
import pyarrow as pa

from ingest.prefix import to_us

#: An incident's ``category`` (DESIGN.md "incident shape"): the kind of fault its initiator is. Made by
#: ``correlate.attribute`` (``XID_CATEGORY`` from the Xid catalog's categories, ``KIND_CATEGORY``), the
#: patterns of ``correlate.patterns`` and the signature catalog's ``category`` entries; ``other`` when none
#: says. ``tests/test_catalog.py`` checks that every category the code can name is listed here.
Category = Literal["application", "c2c", "driver", "ecc", "fabric_manager", "gpu_engine", "gpu_failure",
                   "gpu_off_bus", "gsp_error", "host_memory", "ib_port", "link_fault", "nccl_hang", "nccl_software",
                   "nvswitch_fault", "other", "pcie", "pcie_p2p", "security", "thermal_power"]
CATEGORIES: Final[tuple[str, ...]] = get_args(Category)

INCIDENTS_SCHEMA: Final = pa.schema([
    pa.field("id", pa.string(), nullable=False),
    pa.field("version", pa.int32(), nullable=False),
    pa.field("status", pa.string(), nullable=False),  # "open" | "resolved" | "superseded" (explained by a later one)
    pa.field("start", pa.timestamp("us", tz="UTC"), nullable=False),
    pa.field("end", pa.timestamp("us", tz="UTC"), nullable=False),
    pa.field("severity", pa.string(), nullable=False),
    pa.field("category", pa.string(), nullable=False),
    pa.field("initiator_host", pa.string()),
    pa.field("initiator_device_type", pa.string()),
    pa.field("initiator_device", pa.string()),
    pa.field("initiator_link", pa.int16()),
    pa.field("initiator_kind", pa.string()),
    pa.field("initiator_xid", pa.int32()),
    pa.field("hosts", pa.list_(pa.string())),  # blast radius: every host touched
    pa.field("confidence", pa.float32(), nullable=False),
    pa.field("explanation", pa.string(), nullable=False),
    pa.field("next_action", pa.string(), nullable=False),
    pa.field("doc", pa.string(), nullable=False),  # the full incident object (JSON)
    pa.field("written_at", pa.timestamp("us", tz="UTC"), nullable=False),
])

EVIDENCE_SCHEMA: Final = pa.schema([
    pa.field("incident_id", pa.string(), nullable=False),
    pa.field("version", pa.int32(), nullable=False),
    pa.field("event_id", pa.string(), nullable=False),
    pa.field("role", pa.string(), nullable=False),  # initiator | downstream | context
    pa.field("relation", pa.string()),
    pa.field("host", pa.string()),
    pa.field("device", pa.string()),
    pa.field("written_at", pa.timestamp("us", tz="UTC"), nullable=False),
])


def iso_us(iso: str) -> int:
    """An incident's ISO 8601 time (``start``, ``end``: ``2026-01-05T10:00:00.000001Z``) -> µs UTC."""
    return to_us(datetime.fromisoformat(iso.replace("Z", "+00:00")))


def incident_rows(incidents: list[dict[str, Any]], written_at_us: int) -> tuple[pa.Table, pa.Table]:
    """Incident objects -> (incidents table, incident_evidence table)."""
    rows, ev = [], []
    for inc in incidents:
        i = inc["initiator"]
        hosts = sorted({h for h in [i.get("host")] + [d["host"] for d in inc["downstream"]] if h})
        rows.append({
            "id": inc["id"], "version": inc.get("version", 1), "status": inc.get("status", "open"),
            "start": iso_us(inc["start"]), "end": iso_us(inc["end"]), "severity": inc["severity"],
            "category": inc["category"], "initiator_host": i.get("host"),
            "initiator_device_type": i.get("device_type"), "initiator_device": i.get("device"),
            "initiator_link": i.get("link"), "initiator_kind": i.get("kind"), "initiator_xid": i.get("xid"),
            "hosts": hosts, "confidence": inc["confidence"], "explanation": inc["explanation"],
            "next_action": inc["next_action"], "doc": orjson.dumps(inc).decode(), "written_at": written_at_us,
        })
        for eid in i.get("events", []):
            ev.append({"incident_id": inc["id"], "version": inc.get("version", 1), "event_id": eid,
                       "role": "initiator", "relation": None, "host": i.get("host"), "device": i.get("device"),
                       "written_at": written_at_us})
        for d in inc["downstream"]:
            for eid in d["events"]:
                ev.append({"incident_id": inc["id"], "version": inc.get("version", 1), "event_id": eid,
                           "role": "downstream", "relation": d.get("relation"), "host": d["host"],
                           "device": d.get("device"), "written_at": written_at_us})
        for c in inc.get("context", []):
            ev.append({"incident_id": inc["id"], "version": inc.get("version", 1), "event_id": c["event"],
                       "role": "context", "relation": None, "host": c["host"], "device": None,
                       "written_at": written_at_us})
    return (pa.Table.from_pylist(rows, schema=INCIDENTS_SCHEMA) if rows else INCIDENTS_SCHEMA.empty_table(),
            pa.Table.from_pylist(ev, schema=EVIDENCE_SCHEMA) if ev else EVIDENCE_SCHEMA.empty_table())
