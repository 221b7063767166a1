"""The shapes the HTTP API answers with, as pydantic models, for its OpenAPI schema (``/openapi.json``).

They document; they do not serve: the routes return the incident objects (DESIGN.md, "Incidents"), event rows
(``schemas.events.EVENTS_SCHEMA``) and link states as the store gives them, serialized unvalidated (``api.app``),
so what the API returns is what it returned before the schema named its fields, and a page of 500 incidents is not
validated field by field. Every model allows fields it does not name (``extra="allow"``): an incident object may
carry a pattern's own keys, and a new events column reaches JSON before it reaches here.

``tests/test_api.py`` checks that the incident schema names DESIGN.md's fields and the event schema every column of
the events table.
"""

from __future__ import annotations

from typing import Any, Literal

import pyarrow as pa
from pydantic import BaseModel, ConfigDict, Field, create_model

from schemas.events import DEVICE_TYPES, EVENTS_SCHEMA, KINDS, SEVERITIES, SOURCES, TS_BASES
from schemas.incidents import Category

Severity = Literal[SEVERITIES]  # type: ignore[valid-type]
DeviceType = Literal[DEVICE_TYPES]  # type: ignore[valid-type]
#: an ISO 8601 UTC time as the API writes it: 2026-12-01T03:04:05.000006Z
Time = Field(json_schema_extra={"format": "date-time"})


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")


class Party(_Open):
    """An incident's party: the initiator, or one downstream reporter."""

    host: str | None = Field(description="host name as the fleet knows it (null: no single culprit)")
    device_type: str | None = Field(description="gpu, nvswitch, pcie_port, nic or link; null for the host or when "
                                                "no single device is the culprit")
    device: str | None = Field(description="PCI bus id (dddd:bb:dd.f, lower case) or NIC name; for a link, one "
                                           "end's bus id")
    link: int | None = Field(description="NVLink number on that GPU, port number on that NVSwitch")
    rank: int | None = Field(description="NCCL/PyTorch rank")
    kind: str | None = Field(description="the lead event's kind (xid, nvlink_down, nccl_timeout, …)")
    xid: int | None = None
    sxid: int | None = None
    peer: str | None = Field(None, description="a link's other end (bus id), when known")
    gpu_index: int | None = Field(None, description="the GPU's index as a tool printed it (nvidia-smi, NCCL cudaDev)")
    links: list[int] | None = Field(None, description="every link number its events name")
    events: list[str] = Field(description="event_id of its evidence, in log order")


class Initiator(Party):
    fault: str | None = Field(None, description="what failed, in a word (gpu_off_bus, link_fault, …)")
    candidates: list[str] | None = Field(None, description="the devices it may be, when the logs name none")


class Downstream(Party):
    relation: str | None = Field(description="how it is tied to the initiator: same_gpu, nvlink_peer, "
                                             "same_nvswitch, same_host, same_comm, …")


class ContextEvent(_Open):
    """An event of the incident that is neither a fault nor a reporter of one (a wiring fact, an init line)."""

    host: str
    kind: str
    signature: str
    event: str = Field(description="its event_id")


class Edge(_Open):
    """A correlation rule that tied a cause to an effect."""

    rule: str
    cause: str = Field(description="event_id")
    effect: str = Field(description="event_id")
    relation: str | None = None


class Recurrence(_Open):
    previous: list[str] = Field(description="ids of earlier incidents with the same initiator")
    first_seen: str = Time


class Clock(_Open):
    offset_s: float = Field(description="the host's estimated clock offset (added to its lines' times)")
    skew_bound_s: float = Field(description="how far off the host's clock may be")


class Incident(_Open):
    """An incident, in the DESIGN.md shape (the latest version of it)."""

    id: str
    version: int = Field(description="1, 2, … as later evidence changes it")
    status: Literal["open", "resolved", "superseded"]
    start: str = Time
    end: str = Time
    start_basis: str | None = Field(None, description="where the start time came from: line, inherited, envelope, "
                                                      "kafka, file, operator")
    scheduled: str | None = Field(None, description="when what its evidence announces happens, after `end` (a cloud "
                                  "maintenance notice's NotBefore or StartTime): open until then; absent when "
                                  "nothing does", json_schema_extra={"format": "date-time"})
    severity: Severity
    category: Category
    initiator: Initiator = Field(description="the fault that came first; device_type null when no single "
                                             "culprit can be named (the explanation says what is missing)")
    downstream: list[Downstream] = Field(description="the parties that reported it or failed because of it")
    context: list[ContextEvent] = Field(default_factory=list)
    confidence: float = Field(ge=0, le=1)
    explanation: str = Field(description="why this one is the initiator, naming the evidence")
    next_action: str = Field(description="what the on-call engineer does now")
    verify: list[str] = Field(description="commands that confirm the diagnosis on the host, and that the fix held")
    missing: list[str] = Field(description="evidence that would settle it, when confidence is low")
    recurrence: Recurrence
    pattern: str | None = Field(None, description="the correlation pattern that made it (roots, …)")
    evidence: list[Edge] = Field(default_factory=list)
    communicators: list[str] = Field(default_factory=list, description="NCCL commIds its events are of")
    clocks: dict[str, Clock] = Field(default_factory=dict, description="per host")
    downstream_total: int | None = Field(None, description="in a list (`GET /incidents`, a host's timeline), only "
                                                          "when `downstream_limit` cut `downstream`: how many "
                                                          "parties it has")
    evidence_total: int | None = Field(None, description="with `downstream_total`: how many edges `evidence` has")


_ARROW_TYPES = ((pa.types.is_string, str), (pa.types.is_boolean, bool), (pa.types.is_integer, int),
                (pa.types.is_floating, float))
_EVENT_FIELDS: dict[str, Any] = {}
for _f in EVENTS_SCHEMA:
    _extra = {}
    if _f.name == "details":  # a JSON object in the lake; the API parses it
        _type: Any = dict[str, Any]
    elif pa.types.is_timestamp(_f.type):
        _type, _extra = str, {"format": "date-time"}
    else:
        _type = next(t for test, t in _ARROW_TYPES if test(_f.type))
    _type = {"ts_basis": Literal[TS_BASES], "source": Literal[SOURCES], "kind": Literal[KINDS],  # type: ignore
             "severity": Severity, "device_type": DeviceType}.get(_f.name, _type)
    _EVENT_FIELDS[_f.name] = (_type | None if _f.nullable else _type,
                              Field(description=f"events column {_f.name} ({_f.type})", json_schema_extra=_extra))

#: an event: the events table's columns (``schemas.events.EVENTS_SCHEMA``), times as ISO 8601 UTC strings
Event = create_model("Event", __base__=_Open, __doc__="A recognised log line or sample: the events table's columns, "
                     "times as ISO 8601 UTC, details as an object.", **_EVENT_FIELDS)


class TimelineEvent(Event):  # type: ignore[misc, valid-type]
    """An event of an incident's evidence, with its place in it."""

    skew_adjusted_ts: str = Field(description="ts + the host's estimated clock offset", json_schema_extra={
        "format": "date-time"})
    skew_bound_s: float | None
    role: Literal["initiator", "downstream", "context"]
    relation: str | None


class BlastRadius(_Open):
    hosts: list[str]
    gpus: list[str] = Field(description="host:bus id, or host:gpu<i> for a GPU named by its index only")
    ranks: list[int]
    communicators: list[str]


class IncidentDetail(Incident):
    """One incident with its evidence timeline and blast radius."""

    timeline: list[TimelineEvent] = Field(description="the events of its evidence, by skew-adjusted time: all "
                                          "of them up to `timeline_limit`; past it, every initiator, suspect and "
                                          "context event and the earliest of the others")
    timeline_total: int = Field(description="the events of its evidence the lake holds; more than `timeline` "
                                            "has when cut to `timeline_limit`")
    blast_radius: BlastRadius


class LinkCounter(_Open):
    value: int | float | None
    rise: int | float | None = Field(description="how much it rose over the samples kept")


class Link(_Open):
    """One NVLink of one GPU: its latest state and counters against the expected topology."""

    host: str
    gpu: str | None
    gpu_index: int | None
    link: int | None
    state: str | None = Field(description="up, down, inactive, … (null: counters only)")
    gbps: float | None
    ts: str = Time
    model: str | None = Field(description="the GPU model")
    flapped: bool
    counters: dict[str, LinkCounter]
    expected_up: bool | None = Field(description="whether the GPU model's topology has it up (null: unknown)")
    degraded: bool = Field(description="down or inactive where expected up, flapping, or error counters rising")


class IncidentPage(BaseModel):
    items: list[Incident] = Field(description="incidents in the DESIGN.md shape")
    next_cursor: str | None = Field(None, description="pass as `cursor` for the next page; null on the last page")


class EventPage(BaseModel):
    items: list[Event] = Field(description="events with the columns of the events table")  # type: ignore[valid-type]
    next_offset: int | None = None


class LinkList(BaseModel):
    items: list[Link] = Field(description="one per host, GPU and link: state, counters, expected, degraded")


class HostTimeline(BaseModel):
    host: str
    incidents: list[Incident]
    events: list[Event]  # type: ignore[valid-type]
