"""The HTTP API (FastAPI): incidents, events, links, hosts, SQL, health and metrics over the Parquet lake.

OpenAPI at ``/openapi.json``, interactive docs at ``/docs`` and ``/redoc`` (scripts served here, no CDN).
Responses use the DESIGN.md shapes; errors are RFC 9457 ``application/problem+json`` with no
stack traces. When ``api_token`` is set every route but ``/healthz``,
``/metrics``, ``/docs`` and ``/openapi.json`` (the schema is public) needs
``Authorization: Bearer <token>``. Request bodies larger than
``api_max_body_bytes`` get 413; a query over more than ``api_max_scan_days``
without a host filter gets 422 with what to narrow.
"""

from __future__ import annotations

import base64
import difflib
import io
import re
import secrets
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import date, datetime, time, timedelta, timezone
from http import HTTPStatus
from typing import Annotated, Any, Literal, get_args, get_origin

import orjson
import pyarrow as pa
from fastapi import Depends, FastAPI, HTTPException, Query, Request
from fastapi import Path as PathParam
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from fastapi.responses import JSONResponse, PlainTextResponse, Response, StreamingResponse
from fastapi_offline import FastAPIOffline
from prometheus_client import (CONTENT_TYPE_LATEST, REGISTRY, CollectorRegistry, disable_created_metrics,
                               generate_latest)
from prometheus_fastapi_instrumentator import Instrumentator
from prometheus_fastapi_instrumentator import metrics as http_metrics
from pydantic import (AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, StrictInt, TypeAdapter,
                      WithJsonSchema)

from api.incident_render import (DOWNSTREAM_DEFAULT, DOWNSTREAM_MAX, TIMELINE_DEFAULT, TIMELINE_MAX, cut_downstream,
                                 cut_timeline, suspect_events, to_html as incident_html)
from api.models import EventPage, HostTimeline, IncidentDetail, IncidentPage, LinkList
from api.sql import SqlRefused, check_read_only, query_problem
from api.store import (QUERY_FAILED, QUERY_INVALID, SORTS, Store, StoreError, decimal_floats, holds_no_events,
                       json_bytes, nanosecond_times, refuse_day_end_times)
from schemas.fleet import HostConfig, load_fleet_config
from schemas.hostname import canonical_host, close_hosts, is_host_name
from schemas.errors import error_text
from schemas.events import EventKind
from schemas.incidents import Category, iso_us
from schemas.pci import normalize_bus_id
from ingest.lake import Lake, LakeError
from ingest.prefix import from_us
from schemas.settings import Settings

Severity = Literal["critical", "error", "warning", "info"]
PROBLEM = "application/problem+json"
#: SQL queries that may run at once (each may use 2 threads and 1 GB); more get 429 with Retry-After
SQL_CONCURRENCY = 4


class Problem(BaseModel):
    """RFC 9457 problem details."""

    type: str = "about:blank"
    title: str
    status: int
    detail: str | None = None
    instance: str | None = None


#: the JSON of a route whose body is documented by an ``api.models`` model but served as the store gives it
_AS_IS = TypeAdapter(Any)


def _as_is(body: dict[str, Any]) -> Response:
    """``body`` as JSON, unvalidated: the bytes FastAPI wrote for it when the route's response model was
    ``list[dict[str, Any]]`` items (pydantic's ``dump_json``), without checking a page of 500 incidents against the
    typed models its OpenAPI schema names (``api.models``)."""
    return Response(_AS_IS.dump_json(body), media_type="application/json")


class SqlRequest(BaseModel):
    # a field the route does not take is a 422 naming it, as an unknown query parameter is ("max_row": 5 was
    # ignored, the server's cap applied: a break-it pass)
    model_config = ConfigDict(extra="forbid")
    query: str = Field(min_length=1, max_length=20_000, description="one read-only SELECT over the views")
    format: Literal["json", "arrow"] = Field("json", description="NDJSON rows, or an Arrow IPC stream")
    max_rows: StrictInt | None = Field(None, ge=1, description="at most this many rows (capped by the server)")


class Healthz(BaseModel):
    status: Literal["ok", "unhealthy"]
    reason: str = ""
    #: what a client should know that changes no status: a lake that holds no events yet
    note: str = ""
    ingest: dict[str, Any] = Field(default_factory=dict)


def _problem(status: int, title: str, detail: str | None = None, instance: str | None = None) -> JSONResponse:
    return JSONResponse(Problem(title=title, status=status, detail=detail, instance=instance).model_dump(),
                        status_code=status, media_type=PROBLEM)


def _encode_cursor(sort: str, inc: dict[str, Any]) -> str:
    key = inc.get("_sort_key")
    if isinstance(key, datetime):
        key = key.isoformat()
    return base64.urlsafe_b64encode(orjson.dumps([sort, key, inc["id"]])).decode()


def _decode_cursor(c: str, sort: str) -> tuple[Any, str]:
    try:
        s, key, iid = orjson.loads(base64.urlsafe_b64decode(c.encode()))
        if s != sort or not isinstance(iid, str):
            raise ValueError("cursor of another sort order")
        if sort in ("start", "end"):
            key = datetime.fromisoformat(key)
        elif isinstance(key, bool) or not isinstance(key, (int, float)):
            raise ValueError("bad cursor key")
        return key, iid
    except (ValueError, TypeError, orjson.JSONDecodeError, UnicodeDecodeError) as e:
        raise HTTPException(400, "invalid cursor: pass the next_cursor of the previous page unchanged") from e


def _event_json(r: dict[str, Any]) -> dict[str, Any]:
    """A DuckDB events row as JSON: times ISO 8601 UTC, ``details`` parsed."""
    out = {}
    for k, v in r.items():
        if isinstance(v, datetime):
            out[k] = v.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        elif k == "details" and isinstance(v, str):
            out[k] = orjson.loads(v)
        else:
            out[k] = v
    return out


# /metrics leaves out the ``<name>_created`` series beside each counter and histogram (a start time per series
# that dashboards and alerts do not read)
disable_created_metrics()

#: the request methods HTTP registers (RFC 9110 section 9, RFC 5789): the request series' ``method`` label values
HTTP_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE", "CONNECT"})


def bounded_method(info: http_metrics.Info) -> None:
    """An instrumentation of prometheus-fastapi-instrumentator, run before its default ones: a request method
    outside :data:`HTTP_METHODS` is labelled ``other``. The library labels the method as sent, and anyone (no
    credentials: the 405 comes first) made a label value per made-up method (``XA1B2C3D4 /incidents``), ~8 more
    lines in every scrape each, without bound (a break-it pass)."""
    if info.method not in HTTP_METHODS:
        info.method = "other"


def wants_html(accept: str) -> str | None:
    """"html" when an ``Accept`` header names ``text/html`` before (or without) ``application/json`` at a q-value
    no lower (a browser: ``text/html,application/xhtml+xml,…,*/*;q=0.8``), else None (curl's ``*/*``, a client
    asking for JSON)."""
    best: dict[str, float] = {}
    for i, part in enumerate(accept.lower().split(",")):
        kind, *params = [x.strip() for x in part.split(";")]
        q = 1.0
        for p in params:
            if p.startswith("q="):
                try:
                    q = float(p[2:])
                except ValueError:
                    q = 0.0
        best.setdefault(kind, q - i * 1e-6)  # the earlier of two equal q-values wins
    html, json = best.get("text/html"), best.get("application/json")
    return "html" if html is not None and html > 0 and (json is None or html > json) else None


def _gpu_name(e: dict[str, Any]) -> str | None:
    """An event's GPU for a blast radius: ``host:<bus id>``, else by the index a line gave (NCCL's cudaDev,
    DCGM's gpu label) ``host:gpu<i>``; None for an event that names no GPU."""
    if e.get("device_type") == "gpu" and e.get("device"):
        return f"{e['host']}:{e['device']}"
    return f"{e['host']}:gpu{e['gpu_index']}" if e.get("gpu_index") is not None else None


#: the OpenAPI groups of the routes (Swagger UI's sections), in the order a reader needs them
_TAGS = [
    {"name": "incidents", "description": "Incidents: the initiating fault, its downstream reporters, the evidence."},
    {"name": "events", "description": "Recognised log lines and samples: by host and time, a host's timeline."},
    {"name": "links", "description": "NVLink state now, from the newest link samples and the topology."},
    {"name": "reports", "description": "The hourly degraded-link report (JSON, HTML, CSV, Parquet)."},
    {"name": "sql",
     "description": "Ad-hoc read-only DuckDB SQL over the lake's views (NDJSON or an Arrow IPC stream)."},
    {"name": "operations", "description": "Health and Prometheus metrics."},
]


#: a date alone, ISO 8601 extended (``2026-12-01``) or basic (``20261201``); ASCII digits only
_DAY = re.compile(r"(\d{4})(-?)(\d{2})\2(\d{2})", re.ASCII)
#: a date-time in ISO 8601's basic form (``20261115T141547Z``), which pydantic refuses ("invalid date separator")
_BASIC_DATE_TIME = re.compile(r"\d{8}T\d{2}(\d{2}(\d{2}([.,]\d+)?)?)?(Z|[+-]\d{2}(?P<minutes>\d{2})?)?",
                              re.ASCII | re.IGNORECASE)
#: a date-time, ISO 8601 basic (``20261115T1415Z``) or extended (``2026-12-31T25:00``), as far as its hour
_DATE_TIME = re.compile(r"\d{4}(-?)\d{2}\1\d{2}[T ]\d{2}", re.ASCII | re.IGNORECASE)
#: what Python's ISO 8601 reader says of a field past its range (``hour must be in 0..23``)
_PAST_RANGE = re.compile(r"(\w+) must be in (\d+)\.\.(\d+)$")
#: a number as pydantic reads a time from it (Unix seconds; past ``MAX_UNIX_S`` milliseconds)
_NUMBER = re.compile(r"[+-]?(\d+)(\.\d*)?([eE][+-]?\d+)?", re.ASCII)
#: pydantic reads a number above this (or below its negative) as Unix milliseconds, not seconds (2603-10-11)
MAX_UNIX_S = 20_000_000_000


def _day(v: Any) -> date | None:
    """The date a query value names alone: ISO 8601 extended (``2026-12-01``) or basic (``20261201``, which
    pydantic would read as a Unix time, 1970-08-23); None for anything else (a ten-digit Unix time such as
    ``1712011234`` too: Python's ``date.fromisoformat`` would read its first eight digits as 1712-01-12).
    ValueError for a date that is no date (``20260230``, ``2026-02-30``), naming the form."""
    if not isinstance(v, str) or not (m := _DAY.fullmatch(v)):
        return None
    try:
        return date(int(m[1]), int(m[3]), int(m[4]))
    except ValueError:
        form = "YYYYMMDD" if len(v) == 8 else "YYYY-MM-DD"
        raise ValueError(f"{v!r} is no date ({form})" + ("; a Unix time in seconds has at least 9 digits since 1973"
                                                         if len(v) == 8 else "")) from None


def _time(v: Any) -> Any:
    """A value that is no bare date, for pydantic's datetime parsing: a date-time (ISO 8601's basic form,
    ``20261115T141547Z``, or the extended one) as Python's ``datetime.fromisoformat`` reads it (naive: UTC, as
    pydantic's), ValueError naming the field past its range (``20261205T2500Z``: "the hour is 00 to 23", an offset
    of 24 hours, 30 February); anything else as given. ValueError also for the values pydantic would read as
    another time than meant: a number of 1 to 8 digits
    but 0 (``2026``, ``202611``, ``2026335``, ``+20261201``: a Unix time in January – August 1970, where a year,
    month or date was meant; ``123`` alike, where ``99999`` was refused: a break-it pass), a number past
    ``MAX_UNIX_S`` (read as milliseconds: ``20000000001`` is 1970-08-20; in exponent form too, ``2.5e10``), a
    basic-form offset whose minutes are 60 or more (``+0060`` would be read as +01:00). A number in exponent form is
    given to pydantic as a decimal (it read ``1.7e9`` and refused ``17e8``)."""
    if not isinstance(v, str):
        return v
    shown = repr(v if len(v) <= 40 else v[:40] + "…")
    if m := _NUMBER.fullmatch(v):
        # 0 is the epoch: "from the beginning" (0.5 is no more a time than 9.5); an exponent form by its value, not
        # its digits (2.5e10 was read as milliseconds, 1970-10-17: a break-it pass)
        if (abs(float(v)) < 1e8 if m[3] else len(m[1]) <= 8) and float(v) != 0:
            raise ValueError(f"{shown} is no time: a date is YYYY-MM-DD or YYYYMMDD, a Unix time in seconds has at "
                             "least 9 digits since 1973")
        if abs(float(v)) > MAX_UNIX_S:
            raise ValueError(f"{shown} is no Unix time in seconds (beyond ±{MAX_UNIX_S:,}, the years 1336 – 2603; "
                             "milliseconds are not read)")
        return repr(float(v)) if m[3] else v
    if not _DATE_TIME.match(v):
        return v
    if (m := _BASIC_DATE_TIME.fullmatch(v)) and m["minutes"] and int(m["minutes"]) >= 60:
        raise ValueError(f"{shown}: an offset's minutes are 00 to 59")
    try:  # Python's reader takes what pydantic refuses (the basic form, ``T12``, ``+01``) and names what is wrong
        return datetime.fromisoformat(v.upper().replace(",", "."))
    except ValueError as e:
        said = str(e)
    if m := _PAST_RANGE.match(said):  # pydantic said "unexpected extra characters at the end of the input" (a
        # fresh user) or, of the basic form, "invalid date separator"
        raise ValueError(f"{shown}: the {m[1]} is {int(m[2]):02d} to {m[3]}") from None
    if said.startswith("offset must be"):  # ``+24:00``
        raise ValueError(f"{shown}: an offset is less than 24 hours, -23:59 to +23:59") from None
    if "out of range for month" in said:  # ``2026-02-30T10:00``
        raise ValueError(f"{shown}: {said}") from None
    return v  # a form Python does not read either: pydantic's words, with the forms that are read (_plus_hint)


def _from_day(v: Any) -> Any:
    """A ``since`` given as a bare date (``2026-12-01`` or ``20261201``) means from the start of that UTC day.
    Anything else is left to pydantic's datetime parsing (a date-time, a Unix time) after :func:`_time`."""
    day = _day(v)
    return datetime.combine(day, time.min, tzinfo=timezone.utc) if day else _time(v)


def _through_day(v: Any) -> Any:
    """An ``until`` given as a bare date (``2026-12-01`` or ``20261201``) means through the end of that UTC day,
    ``2026-12-01T23:59:59.999999Z``: "since 2026-12-01 until 2026-12-01" is that day, not its first
    microsecond. Anything else is left to pydantic's datetime parsing (a date-time, a Unix time) after
    :func:`_time`."""
    day = _day(v)
    return datetime.combine(day, time.max, tzinfo=timezone.utc) if day else _time(v)


def _device(v: str | None) -> str | None:
    """A ``device`` query value as the lake stores it: a PCI bus id in any printed form (nvidia-smi's
    ``00000000:B3:00.0``, the kernel's ``PCI:0000:b3:00``, lspci's ``b3:00.0``) as ``dddd:bb:dd.f`` lower case
    (``schemas.pci.normalize_bus_id``, as ingest stores it); anything else (a NIC such as ``mlx5_0``) as given."""
    return (normalize_bus_id(v) or v) if v else v


#: ``device`` of the query routes (:func:`_device`)
DeviceQuery = Annotated[str | None, Query(max_length=64, description="PCI bus id (any printed form), NIC name …"),
                        AfterValidator(_device)]  # the length first: after the validator it said "64 items"


def _host(v: str | None) -> str | None:
    """A ``host`` parameter as the lake stores hosts (``schemas.hostname``): ``NODE07``, ``node07.cluster.local`` ->
    ``node07``, ``ｎｏｄｅ07`` -> ``node07``, ``bücher`` -> ``xn--bcher-kva``, blanks around it dropped (as a Kafka
    key's). Raises ValueError (a 422, as for any other parameter no value of its kind can be: an empty ``host``, a
    ``comm`` that is no hex number) for text no stored host can be (``is_host_name``: blanks inside, ``/``, control
    characters, ``-``, a placeholder such as ``None``): ``host=a%2Fb`` or a pasted ``" node004 "`` was an empty 200,
    which reads as a healthy host (a break-it pass), then a 404, which said the lake holds no such host where no
    host can be so named (a stop's finding). A host name the lake holds nothing of stays a 404 (``known_host``)."""
    if not v:
        return v
    name = canonical_host(v.strip())
    if not is_host_name(name):
        raise ValueError(f"{v[:80]!r} is no host name (at most 255 characters; no blanks, control characters, '/' or "
                         "U+FFFD inside; not '-', dots alone or a placeholder such as None): a host's short name, any "
                         "case, or its full name")
    return name


#: ``host`` of the query routes (:func:`_host`); empty is a 422, not the whole fleet
HostQuery = Annotated[str | None, Query(min_length=1, max_length=255, description="its short name, any case"),
                      AfterValidator(_host)]


def _comm_id(text: str | None) -> str | None:
    """A communicator id as NCCL prints its commId (``0x%lx``: lower case, with 0x), from any case, with or without
    the 0x and blanks around it (``0X7F2D…`` and ``7f2d…`` found nothing: a break-it pass). Raises ValueError (a
    422) for text that is no hex number: ``comm=0xZZ`` was an empty 200, as if the job had no incident (a second
    break-it pass)."""
    if text is None:
        return None
    t = text.strip()
    hexa = t[2:] if t[:2].lower() == "0x" else t
    if not hexa or any(c not in "0123456789abcdefABCDEF" for c in hexa):
        raise ValueError("a communicator id is hex digits, with or without 0x (NCCL's commId: 0x7f2d1c3e5a6b7c8d)")
    return f"0x{hexa.lower()}"


#: the OpenAPI schema of ``since`` and ``until``: a string, as they take more than RFC 3339's ``date-time`` (Unix
#: seconds, bare dates, ISO 8601's basic form, a time without an offset); ``format: date-time`` made a client or
#: gateway that validates requests against the schema refuse those (a break-it pass)
_TIME_SCHEMA = WithJsonSchema({"type": "string", "examples": ["2026-12-01T03:12:00Z", "2026-12-01", "1764558720"]})
#: ``since`` of the query routes: a date-time, or a date meaning from the start of that UTC day (:func:`_from_day`)
Since = Annotated[datetime | None, BeforeValidator(_from_day), _TIME_SCHEMA]
#: ``until`` of the query routes: a date-time, or a date meaning its whole UTC day (:func:`_through_day`)
Until = Annotated[datetime | None, BeforeValidator(_through_day), _TIME_SCHEMA]
#: ``since`` / ``until`` of the routes whose description is only that
SinceQuery = Annotated[Since, Query(description="ISO 8601 (a time without an offset is UTC; the basic form too) or "
                                                "Unix seconds; a bare date (2026-12-01 or 20261201): from the start "
                                                "of that UTC day")]
UntilQuery = Annotated[Until, Query(description="ISO 8601 (a time without an offset is UTC; the basic form too) or "
                                                "Unix seconds; a bare date (2026-12-01 or 20261201): through the end "
                                                "of that UTC day")]
DownstreamLimit = Annotated[int, Query(ge=1, le=DOWNSTREAM_MAX, description=(
    "at most this many parties in each incident's `downstream` (the parties of the host, domain, rack or device "
    "asked about first, then an incident's candidates, then the earliest); "
    "an incident cut so says how many it has (`downstream_total`) and keeps the `evidence` edges to those kept "
    "(`evidence_total` counts them all); `GET /incidents/{id}` gives every one"))]


def _fleet_hosts(fleet: dict[str, HostConfig] | None, domain: str | None, rack: str | None) -> list[str]:
    """The hosts of the fleet config (None: none is loaded) in ``domain`` and ``rack`` (either may be None: any).
    HTTPException 422 when a value is one the fleet config names for no host, or no host has both: a filter no
    host can pass would answer an empty page, as if that rack were healthy. The values it does name are listed
    (quoted: a name may hold a comma), the first 20 and how many more."""
    if fleet is None:
        raise HTTPException(422, "`domain` and `rack` need a fleet config naming each host's domain and rack (the "
                                 "fleet_config setting): none is loaded")
    for name, value in (("domain", domain), ("rack", rack)):
        known = sorted({getattr(c, name) for c in fleet.values()} - {None})
        if value is None or value in known:
            continue
        if not known:
            raise HTTPException(422, f"`{name}` needs a fleet config naming each host's {name}: the one loaded "
                                     f"({len(fleet)} hosts) names none")
        shown = ", ".join(map(repr, known[:20])) + (f" and {len(known) - 20} more" if len(known) > 20 else "")
        raise HTTPException(422, f"no host of the fleet config is in {name} {value!r}; its {name}s: {shown}")
    hosts = [h for h, c in fleet.items() if (domain is None or c.domain == domain) and (rack is None or c.rack == rack)]
    if not hosts:
        raise HTTPException(422, f"no host of the fleet config is in domain {domain!r} and rack {rack!r}")
    return hosts


async def when_listening(server: Any, call: Callable[[Any], None], stop: Any) -> None:
    """``call(server)`` once the uvicorn ``server`` listens (its port is known then: port 0 lets the system pick);
    nothing if ``stop`` (an ``asyncio.Event``) is set first: it never came up."""
    import asyncio

    while not server.started:
        if stop.is_set():
            return
        await asyncio.sleep(0.05)
    # stopped before this task ran (a start that failed at once): its sockets are closed, and ``call`` would raise
    # on them, hiding the error that stopped it (a break-it pass)
    if stop.is_set() or not server.servers or not server.servers[0].sockets:
        return
    call(server)


class WorkerHealthz(BaseModel):
    status: Literal["ok", "unhealthy"]
    reason: str = ""
    #: ``ingest`` or ``correlate``
    worker: str
    #: the worker's counters (records read, events, dead letters, paused partitions, …)
    counts: dict[str, Any] = Field(default_factory=dict)


def _health_parts(h: dict[str, Any]) -> tuple[str, str, dict[str, Any]]:
    """A health report (``ok``, ``reason`` and counts) as ``/healthz`` says it: (status, reason, the counts)."""
    return ("ok" if h.get("ok", True) else "unhealthy", h.get("reason", ""),
            {k: v for k, v in h.items() if k not in ("ok", "reason")})


def _health_answer(body: Healthz | WorkerHealthz) -> JSONResponse:
    """``body`` as JSON (a value JSON has no type for as its text), 200 when its status is ok, else 503."""
    return JSONResponse(orjson.loads(orjson.dumps(body.model_dump(), default=str)),
                        status_code=200 if body.status == "ok" else 503)


class WorkerMetrics:
    """The default registry's metric families a worker reports (``generate_latest`` reads any object with
    ``collect()``): the ``firstfault_*`` families defined in ``modules`` (module-level metrics) but those named in
    ``leave_out``, and every family that is not firstfault's (``process_*``, ``python_*``). Every module's metrics
    are registered in every process that imports it: a correlate worker's ``/metrics`` said
    ``firstfault_ingest_healthy 0`` for good (only an ingest worker sets it), and an alert on it fired for every
    correlate replica (a break-it pass)."""

    def __init__(self, modules: tuple[Any, ...], leave_out: frozenset[str] = frozenset()) -> None:
        from prometheus_client.metrics import MetricWrapperBase

        self.names = frozenset(fam.name for mod in modules for m in vars(mod).values()
                               if isinstance(m, MetricWrapperBase) for fam in m.describe()) - leave_out

    def collect(self) -> Iterator[Any]:
        for fam in REGISTRY.collect():
            if fam.name in self.names or not fam.name.startswith("firstfault_"):
                yield fam


def _answer_problems(app: FastAPI) -> None:
    """Answer every error of ``app`` as RFC 9457 ``application/problem+json`` (:class:`Problem`): its own
    ``HTTPException``s and the router's 404/405, refused parameters (422), a lake that cannot be read (503) and
    anything else (500, without a stack trace). The API and the workers' own ``/healthz`` and ``/metrics`` both: a
    worker answered FastAPI's ``{"detail": "Not Found"}`` as application/json (a break-it pass)."""

    @app.exception_handler(StarletteHTTPException)  # also the router's own 404/405
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        # RFC 9457: the title is the kind of problem (the status phrase), the detail this occurrence; a 422 is
        # "invalid request" whether the route or the parameters' validation (below) refused the request
        try:
            title = "invalid request" if exc.status_code == 422 else HTTPStatus(exc.status_code).phrase
        except ValueError:
            title = "error"
        r = _problem(exc.status_code, title, str(exc.detail), instance=request.url.path)
        for k, v in (exc.headers or {}).items():
            r.headers[k] = v
        return r

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        # a body that is no JSON is "the body is not JSON: …" (it was "body.0: JSON decode error")
        detail = "; ".join(f"the body {error_text(e)}" if e["type"] == "json_invalid" and e["loc"][:1] == ("body",)
                           else f"{'.'.join(map(str, e['loc']))}: {error_text(e)}{_plus_hint(e)}" for e in exc.errors())
        if any(tuple(e["loc"][:1]) == ("body",) and (len(e["loc"]) == 1 or e["type"] == "json_invalid")
               for e in exc.errors()):
            # `curl -d 'SELECT 1' …/sql` (a form body) or a query not wrapped in JSON: pydantic's words alone did not
            # say what the body is (a fresh-user trial)
            detail += ('; the body is a JSON object, Content-Type: application/json, e.g. {"query": "SELECT 1"} '
                       "(curl --json '{\"query\": \"SELECT 1\"}' …)")
        return _problem(422, "invalid request", detail, request.url.path)

    @app.exception_handler(StoreError)
    async def _store(request: Request, exc: StoreError) -> JSONResponse:
        return _problem(503, "the lake could not be read", str(exc), request.url.path)

    @app.exception_handler(Exception)
    async def _any(request: Request, exc: Exception) -> JSONResponse:  # no stack traces in responses
        return _problem(500, "internal error", type(exc).__name__, request.url.path)


def create_worker_app(worker: str, health: Callable[[], dict[str, Any]], metric_modules: tuple[Any, ...],
                      leave_out: frozenset[str] = frozenset()) -> FastAPI:
    """The HTTP endpoints of an ``ingest`` or ``correlate`` worker (``--port``, the ``worker_port`` setting): what an
    orchestrator probes and Prometheus scrapes, as the API's own two routes. ``GET /healthz``: 200 ok, or 503
    unhealthy with the reason (``health()``: a dict with ``ok``, ``reason`` and the worker's counts); ``GET
    /metrics``: the Prometheus text of the worker's own series (``WorkerMetrics`` of ``metric_modules``: those of
    ``ingest.metrics``, or of ``correlate.metrics``, ``api.sink`` and ``api.pager``), which the API process, a
    reader of the lake, never had. No lake routes: the API (``serve``) has those."""
    reported = WorkerMetrics(metric_modules, leave_out)
    app = FastAPI(title=f"firstfault {worker} worker", version="0.1.0", docs_url=None, redoc_url=None,
                  openapi_tags=[{"name": "operations", "description": "Health and Prometheus metrics."}])
    _answer_problems(app)

    @app.head("/healthz", include_in_schema=False)
    @app.get("/healthz", response_model=WorkerHealthz, responses={503: {"model": WorkerHealthz}},
             tags=["operations"])
    async def healthz() -> JSONResponse:
        """Readiness: unhealthy while the worker cannot store, commit or correlate (the reason says why)."""
        status, reason, counts = _health_parts(health())
        return _health_answer(WorkerHealthz(status=status, reason=reason, worker=worker, counts=counts))

    @app.get("/metrics", response_class=PlainTextResponse, tags=["operations"])
    def metrics() -> Response:
        """Prometheus text exposition."""
        return Response(generate_latest(reported), media_type=CONTENT_TYPE_LATEST)  # type: ignore[arg-type]

    return app


def create_app(settings: Settings, *, health: Callable[[], dict[str, Any]] | None = None) -> FastAPI:
    """The app over ``settings.lake``; ``health`` reports the ingest worker when one runs in-process."""
    store = Store(Lake(settings.lake))
    fleet = load_fleet_config(settings.fleet_config) if settings.fleet_config else None
    # FastAPIOffline: FastAPI with /docs and /redoc served from the package's own Swagger UI and ReDoc files, as
    # a fleet's management network often reaches no CDN
    def authorized(request: Request) -> bool:
        if not settings.api_token:
            return True
        got = request.headers.get("authorization", "")
        want = settings.api_token.get_secret_value().encode()
        scheme, _, token = got.partition(" ")
        return scheme.lower() == "bearer" and secrets.compare_digest(token.strip().encode(), want)

    def auth(request: Request) -> None:
        if not authorized(request):
            raise HTTPException(401, "missing or wrong bearer token", headers={"WWW-Authenticate": "Bearer"})

    async def known_query(request: Request) -> None:
        if authorized(request):  # else the route's auth answers 401 first, whatever the query
            _known_query(request)

    app = FastAPIOffline(title="firstfault", version="0.1.0",
                         description="Which GPU, link or host broke first — incidents from fleet-wide GPU logs.",
                         responses={401: {"model": Problem}, 422: {"model": Problem}}, openapi_tags=_TAGS,
                         dependencies=[Depends(known_query)])

    sql_slots = threading.BoundedSemaphore(SQL_CONCURRENCY)

    def check_range(since: datetime | None, until: datetime | None) -> None:
        if since is not None and until is not None and _aware(since) > _aware(until):
            raise HTTPException(422, "`since` is after `until`")

    def limit_scan(since: datetime | None, until: datetime | None, host: str | None) -> None:
        check_range(since, until)
        if host:
            return
        lo = _aware(since) if since else datetime(1970, 1, 1, tzinfo=timezone.utc)
        hi = _aware(until) if until else datetime.now(timezone.utc)
        if hi - lo > timedelta(days=settings.api_max_scan_days):
            days = f"{settings.api_max_scan_days:g} days"
            # without `since`, "closer together" named a parameter not given (a new user's trial)
            fix = f"give `since` (at most {days} before `until`), or a `host`" if since is None else \
                "give `since` (and `until`) closer together, or a `host`"
            raise HTTPException(422, f"this query would scan more than {days} of the whole fleet: {fix}")

    app.add_middleware(BodyLimit, limit=settings.api_max_body_bytes)
    app.add_middleware(HeadAsGet)
    # request metrics (docs/api.md#metrics): `firstfault_api_http_requests_total{handler,method,status}`, the
    # durations (s) and the request/response sizes (bytes), by route template and status class (bounded labels; a
    # path no route has is `none`), from prometheus-fastapi-instrumentator rather than a middleware of our own. The
    # outermost middleware, so a 413 of BodyLimit counts. In a registry of this app's own, which /metrics adds to the
    # process's: the library registers once per registry and counted nothing for a second app of one process.
    http_registry = CollectorRegistry()
    Instrumentator(excluded_handlers=["/metrics"], registry=http_registry).add(
        bounded_method,  # a made-up method is `other`: before the defaults, which read info.method
        http_metrics.default(metric_namespace="firstfault", metric_subsystem="api", registry=http_registry),
    ).instrument(app, metric_namespace="firstfault", metric_subsystem="api")

    _answer_problems(app)

    # HEAD too (a load balancer's probe): the same handler, one operation in the schema (two would share its id)
    def known_host(host: str | None, found: bool) -> None:
        """A 404 for a ``host`` filter the lake holds nothing of (no event, link sample or topology fact), as
        ``/hosts/{host}/timeline`` says it: ``/links?host=nope`` was a 200 with no items, which reads as a host with
        no link trouble (a fresh user's trial). Asked only when the page found nothing."""
        if host and not found and not store.knows_host(host):
            close = close_hosts(host, store.hosts())  # node4 for node004: as diagnose --symptom offers it
            raise HTTPException(404, f"no host {host} in the lake: no event, link sample or topology fact names it"
                                + (f"; did you mean {' or '.join(close)}?" if close else ""))

    events_seen = False

    def empty_lake_note() -> str:
        """The note of a lake that holds no events yet (a mistyped lake path answered every route empty with
        ``/healthz`` ok: a fresh user's trial); the status stays ok (a new deployment's lake is empty until its
        first batch). Once it holds events it is not listed again."""
        nonlocal events_seen
        if events_seen or not holds_no_events(settings.lake):
            events_seen = True
            return ""
        return (f"the lake at {settings.lake} holds no events yet: every query answers empty until an ingest worker "
                "(or `firstfault run`) writes there; if it should hold some, check the lake setting")

    @app.head("/healthz", include_in_schema=False)
    @app.get("/healthz", response_model=Healthz, responses={503: {"model": Healthz}}, tags=["operations"])
    async def healthz() -> JSONResponse:
        """Liveness and readiness: unhealthy while ingest cannot store or commit (the reason says why).
        Runs on the event loop, not in the worker threads, so slow SQL cannot delay it."""
        h = health() if health else {"ok": True}
        try:
            store.lake.check()
        except LakeError as e:  # serve's own lake deleted or replaced (LakeReplaced): every answer would be empty,
            # not "ok"; or its path unreadable
            h = {**h, "ok": False, "reason": f"lake: {e}"}
        status, reason, counts = _health_parts(h)
        return _health_answer(Healthz(status=status, reason=reason, note=empty_lake_note(), ingest=counts))

    @app.get("/incidents", response_model=None, responses={200: {"model": IncidentPage}}, dependencies=[Depends(auth)],
             tags=["incidents"])
    def list_incidents(
        since: Annotated[Since, Query(description="incidents that ended at or after this time (ISO 8601 or Unix "
                                                   "seconds; a bare date, 2026-12-01 or 20261201: from the start of "
                                                   "that UTC day)")] = None,
        until: Annotated[Until, Query(description="incidents that started at or before this time (ISO 8601 or Unix "
                                                  "seconds; a bare date, 2026-12-01 or 20261201: through the end of "
                                                  "that UTC day)")] = None,
        host: Annotated[str | None, Query(min_length=1, max_length=255, description="any host the incident touched "
                                                                                   "(its short name, any case)"),
                        AfterValidator(_host)] = None,
        domain: Annotated[str | None, Query(max_length=255, description="NVLink domain (fleet config; one it names "
                                                                        "for no host is a 422 listing those it "
                                                                        "names)")] = None,
        rack: Annotated[str | None, Query(max_length=255, description="rack (fleet config; as domain)")] = None,
        device: DeviceQuery = None,
        comm: Annotated[str | None, Query(max_length=64, description="NCCL communicator id (the job), as NCCL "
                                          "prints it (0x7f2d1c3e5a6b7c8d); any case, with or without 0x; other "
                                          "text is a 422"), AfterValidator(_comm_id)] = None,
        severity: Annotated[list[Severity] | None, Query(description="exactly these severities (repeat it: "
                                                                     "severity=error&severity=critical)")] = None,
        min_severity: Annotated[Severity | None, Query(description="this severity or above (info < warning < "
                                                                   "error < critical)")] = None,
        category: Annotated[Category | None, Query(description="the initiator's kind of fault")] = None,
        status: Annotated[Literal["open", "resolved"] | None, Query()] = None,
        sort: Annotated[Literal["start", "end", "severity", "confidence"], Query(
            description="descending; ties by id")] = "start",
        limit: Annotated[int, Query(ge=1, le=500)] = 50,
        cursor: Annotated[str | None, Query(max_length=512, description="opaque: the next_cursor of the "
                                                                        "previous page")] = None,
        downstream_limit: DownstreamLimit = DOWNSTREAM_DEFAULT,
    ) -> Response:
        """Incidents (latest versions), with cursor pagination; each with at most ``downstream_limit`` downstream
        parties (one cut says how many it has in ``downstream_total``; ``GET /incidents/{id}`` gives every one)."""
        check_range(since, until)
        hosts_in = None
        if domain or rack:
            hosts_in = _fleet_hosts(fleet, domain or None, rack or None)
        items = store.incidents(since=since, until=until, host=host, hosts_in=hosts_in, severity=severity,
                                min_severity=min_severity, category=category, status=status, device=device,
                                comm=comm, sort=sort, limit=limit + 1,
                                cursor=_decode_cursor(cursor, sort) if cursor else None)
        known_host(host, bool(items))
        more = len(items) > limit
        items = items[:limit]
        nxt = _encode_cursor(sort, items[-1]) if more and items else None
        for i in items:
            i.pop("_sort_key", None)
        asked = {host} if host else set(hosts_in or ())
        return _as_is({"items": [cut_downstream(i, downstream_limit, hosts=asked, device=device) for i in items],
                       "next_cursor": nxt})

    @app.get("/incidents/{incident_id}", dependencies=[Depends(auth)], response_model=None,
             responses={200: {"model": IncidentDetail, "content": {"text/html": {}}}, 404: {"model": Problem}},
             tags=["incidents"])
    def get_incident(incident_id: Annotated[str, PathParam(max_length=64)], request: Request,
                     format: Annotated[Literal["json", "html"] | None, Query(
                         description="json, or html: a page with the verdict, a timeline chart of every party's "
                                     "events and the evidence lines; default: html when the Accept header asks "
                                     "for text/html before JSON (a browser following an alert's link), else "
                                     "json")] = None,
                     timeline_limit: Annotated[int, Query(
                         ge=1, le=TIMELINE_MAX, description="at most this many events in `timeline`: every event "
                                                            "of the initiator, the suspects and the context, then "
                                                            "the earliest of the others; `timeline_total` counts "
                                                            "them all")
                     ] = TIMELINE_DEFAULT) -> Response:
        """One incident with its evidence timeline — every event with its raw line, time basis and
        skew-adjusted time (line time + the host's estimated clock offset), up to ``timeline_limit`` — and its
        blast radius (of every event); as a page with a timeline chart for a browser (``format``)."""
        inc = store.incident(incident_id)
        if inc is None:
            raise HTTPException(404, f"no incident {incident_id}")
        role: dict[str, tuple[str, str | None]] = {e: ("initiator", None) for e in inc["initiator"].get("events", [])}
        for d in inc["downstream"]:
            role.update({e: ("downstream", d.get("relation")) for e in d["events"]})
        role.update({c["event"]: ("context", None) for c in inc.get("context", [])})
        clocks = inc.get("clocks", {})
        timeline = []
        for e in store.events_by_id(list(role)):
            j = _event_json(e)
            off = clocks.get(e["host"], {}).get("offset_s", 0.0)
            j["skew_adjusted_ts"] = (e["ts"] + timedelta(seconds=off)).astimezone(timezone.utc).strftime(
                "%Y-%m-%dT%H:%M:%S.%fZ")
            j["skew_bound_s"] = clocks.get(e["host"], {}).get("skew_bound_s")
            j["role"], j["relation"] = role[e["event_id"]]
            timeline.append(j)
        timeline.sort(key=lambda j: j["skew_adjusted_ts"])
        inc = dict(inc)
        # a suspect's lines are what a verdict of no single culprit rests on: kept as the initiator's are
        inc["timeline"] = cut_timeline(timeline, timeline_limit, keep=suspect_events(inc))
        inc["timeline_total"] = len(timeline)
        init = inc["initiator"]
        # the ranks NCCL placed on the initiator's GPU: the process on a GPU that fell off the bus logs nothing, and
        # was left out (a fresh user's trial); its communicators' init lines within a week of the incident (a line
        # that printed no time is dated by its file or its Kafka record, after it)
        placed: list[int] = []
        if init.get("device_type") == "gpu" and init.get("device") and init.get("host"):
            placed = store.ranks_on(init["host"], init["device"], list(inc.get("communicators") or ()),
                                    from_us(iso_us(inc["start"])) - timedelta(days=7),
                                    from_us(iso_us(inc["end"])) + timedelta(days=7))
        inc["blast_radius"] = {
            "hosts": sorted({e["host"] for e in timeline} | {init.get("host")} - {None}),
            "gpus": sorted({g for e in timeline if (g := _gpu_name(e)) is not None}),
            "ranks": sorted({e["rank"] for e in timeline if e.get("rank") is not None} | set(placed)),
            "communicators": sorted({e["comm"] for e in timeline if e.get("comm")} | set(inc.get("communicators") or ())),
        }
        if (format or wants_html(request.headers.get("accept", ""))) == "html":
            out = Response(incident_html(inc), media_type="text/html; charset=utf-8")
        else:
            out = _as_is(inc)
        if format is None:  # the body was chosen by the Accept header: a cache keys it by that too (RFC 9110 12.5.5)
            out.headers["Vary"] = "Accept"
        return out

    @app.get("/events", response_model=None, responses={200: {"model": EventPage}}, dependencies=[Depends(auth)],
             tags=["events"])
    def list_events(
        since: SinceQuery = None,
        until: UntilQuery = None,
        host: HostQuery = None,
        kind: Annotated[EventKind | None, Query(description="the event's kind (an Xid's is xid, but gsp_error "
                                                             "for the GSP's Xid 119 and 120)")] = None,
        xid: Annotated[int | None, Query(ge=0, le=100000)] = None,
        sxid: Annotated[int | None, Query(ge=0, le=100000)] = None,
        device: DeviceQuery = None,
        signature: Annotated[str | None, Query(max_length=128)] = None,
        text: Annotated[str | None, Query(max_length=256,
                                          description="substring of the raw line, case-sensitive (Xid, not xid)")] = None,
        min_severity: Annotated[Severity | None, Query()] = None,
        limit: Annotated[int, Query(ge=1, le=1000)] = 100,
        offset: Annotated[int, Query(ge=0, le=1_000_000)] = 0,
    ) -> Response:
        """Events, newest first."""
        limit_scan(since, until, host)
        rows = store.events(since=since, until=until, host=host, kind=kind, xid=xid, sxid=sxid, device=device,
                            signature=signature, text=text, min_severity=min_severity, limit=limit + 1,
                            offset=offset)
        known_host(host, bool(rows))
        more = len(rows) > limit
        return _as_is({"items": [_event_json(r) for r in rows[:limit]],
                       "next_offset": offset + limit if more else None})

    @app.get("/links", response_model=None, responses={200: {"model": LinkList}}, dependencies=[Depends(auth)],
             tags=["links"])
    def list_links(host: HostQuery = None,
                   degraded: Annotated[bool, Query(description="only links down where expected up, "
                                                               "flapping, or with rising error counters")] = False
                   ) -> Response:
        """NVLink state and error counters per host, GPU and link, against the expected topology."""
        links = store.links(host=host)
        known_host(host, bool(links))
        return _as_is({"items": [_event_json(d) for d in links if d["degraded"] or not degraded]})

    @app.get("/hosts/{host}/timeline", response_model=None, dependencies=[Depends(auth)], tags=["events"],
             responses={200: {"model": HostTimeline}, 404: {"model": Problem}})
    def host_timeline(host: Annotated[str, PathParam(max_length=255), AfterValidator(_host)],
                      since: SinceQuery = None,
                      until: UntilQuery = None,
                      min_severity: Annotated[Severity, Query()] = "warning",
                      limit: Annotated[int, Query(ge=1, le=2000)] = 500,
                      downstream_limit: DownstreamLimit = DOWNSTREAM_DEFAULT) -> Response:
        """What happened on one host: its incidents and its events, ``min_severity`` and worse (``warning`` by
        default; of an incident, its own severity), and the host's events that are evidence of the incidents listed
        whatever their severity. 404 when the lake holds nothing of the host at all (no event, link sample or
        topology fact)."""
        check_range(since, until)
        # min_severity is the incidents' filter too: it filtered the events alone, so ?min_severity=critical still
        # listed an info incident (a fresh user's trial)
        incs = store.incidents(host=host, since=since, until=until, min_severity=min_severity, limit=limit)
        for i in incs:
            i.pop("_sort_key", None)
        incs = [cut_downstream(i, downstream_limit, hosts=(host,)) for i in incs]
        # and the evidence of the incidents it lists, whatever its severity: a critical link_fault inferred from
        # Xid 45 lines (info) showed no event at all (a fresh user's trial)
        evs = store.events(host=host, since=since, until=until, min_severity=min_severity,
                           evidence_of=[i["id"] for i in incs], limit=limit)
        known_host(host, bool(incs or evs))
        return _as_is({"host": host, "incidents": incs, "events": [_event_json(e) for e in evs]})

    @app.post("/sql", dependencies=[Depends(auth)], tags=["sql"], response_class=StreamingResponse,
              responses={200: {"content": {"application/x-ndjson": {}, "application/vnd.apache.arrow.stream": {}}},
                         400: {"model": Problem},
                         503: {"model": Problem, "description": "a table the query reads has a part the lake "
                                                                "cannot read"}})
    def post_sql(req: SqlRequest) -> StreamingResponse:
        """One read-only SELECT over the views; rows streamed as NDJSON or an Arrow IPC stream.

        Writes, COPY, ATTACH, INSTALL, SET and reads outside the lake are refused; results are capped
        at ``max_rows`` (at most ``sql_max_rows``; header ``X-Firstfault-Truncated: true`` when rows were
        left out), a result of more than ``sql_max_bytes`` is a 400, and queries are stopped after
        ``sql_timeout_s``."""
        try:
            check_read_only(req.query)
        except SqlRefused as e:  # in the words `firstfault sql` uses (it said "refused: …": a fresh user's trial)
            raise HTTPException(400, "{}: {}".format(*query_problem(e))) from None
        max_rows = min(req.max_rows or settings.sql_max_rows, settings.sql_max_rows)
        if not sql_slots.acquire(blocking=False):
            raise HTTPException(429, f"{SQL_CONCURRENCY} SQL queries are already running; retry shortly",
                                headers={"Retry-After": "5"})
        held = True
        try:
            # a query abandoned at its time limit keeps its slot until it really ends (store.stream_sql's ended)
            schema, batches, cut = store.stream_sql(req.query, max_rows=max_rows, timeout_s=settings.sql_timeout_s,
                                                    max_bytes=settings.sql_max_bytes, ended=sql_slots.release)
            # JSON is written before the status goes out (a value JSON cannot hold is a 400, not a cut stream), and
            # while the query's slot is held: its text and objects are this query's memory too
            rows = None if req.format == "arrow" else _ndjson(schema, batches, settings.sql_max_bytes)
        except StoreError as e:  # a table the lake cannot read is the server's trouble (README), not the query's
            held = not e.abandoned
            raise HTTPException(503 if e.unavailable else 400, "{}: {}".format(*query_problem(e))) from None
        finally:
            if held:
                sql_slots.release()
        # a result cut at the row cap says so (the rows themselves cannot: NDJSON and Arrow have no trailer);
        # "unknown" when the rows were whole but asking for one more failed
        headers = {"X-Firstfault-Truncated": {True: "true", False: "false", None: "unknown"}[cut],
                   "X-Firstfault-Max-Rows": str(max_rows)}
        if req.format == "arrow":
            return StreamingResponse(_arrow_stream(schema, batches), media_type="application/vnd.apache.arrow.stream",
                                     headers=headers)
        return StreamingResponse(iter(rows), media_type="application/x-ndjson", headers=headers)

    @app.get("/metrics", response_class=PlainTextResponse, tags=["operations"])
    def metrics() -> Response:
        """Prometheus text exposition: the process's series and the API's request metrics."""
        return Response(generate_latest(REGISTRY) + generate_latest(http_registry), media_type=CONTENT_TYPE_LATEST)

    _include_optional_routers(app, settings, auth, store.lake)
    _problem_openapi(app)
    return app


def _problem_openapi(app: FastAPI) -> None:
    """Document every error response as RFC 9457 ``application/problem+json`` with the Problem schema
    (what the exception handlers return), on every operation, for 400/401/404/413/422/429/500/503, but a status
    whose body the route declares itself (``/healthz``'s 503: the Healthz shape)."""
    from fastapi.openapi.utils import get_openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema:
            return app.openapi_schema
        doc = get_openapi(title=app.title, version=app.version, description=app.description, routes=app.routes,
                          tags=app.openapi_tags)
        comps = doc.setdefault("components", {}).setdefault("schemas", {})
        comps["Problem"] = Problem.model_json_schema()
        ref = {"$ref": "#/components/schemas/Problem"}
        for path in doc.get("paths", {}).values():
            for op in path.values():
                resps = op.setdefault("responses", {})
                for code in ("400", "401", "404", "413", "422", "429", "500", "503"):
                    if code == "401" and op.get("operationId", "").startswith(("healthz", "metrics")):
                        resps.pop(code, None)  # public: the app's default responses listed a 401 (a break-it pass)
                        continue
                    r = resps.setdefault(code, {"description": Problem.__doc__.strip()})
                    schema = next(iter((r.get("content") or {}).values()), {}).get("schema", {})
                    if r.get("content") and schema.get("$ref", "").rpartition("/")[2] not in (
                            "Problem", "HTTPValidationError"):
                        continue  # the route's own body for this status (/healthz's 503 is a Healthz, not a
                        # Problem: the schema said problem+json, a break-it pass); FastAPI's 422 is the Problem
                    r["content"] = {PROBLEM: {"schema": ref}}
        comps.pop("HTTPValidationError", None)
        comps.pop("ValidationError", None)
        app.openapi_schema = doc
        return doc

    app.openapi = openapi  # type: ignore[method-assign]


def _include_optional_routers(app: FastAPI, settings: Settings, auth, lake: Lake) -> None:
    """Surfaces that live in their own modules (the degraded-link report, over the app's own ``lake``)."""
    try:
        from api.report import report_router
    except ImportError:
        return
    app.include_router(report_router(settings, lake), dependencies=[Depends(auth)])


#: routes whose callers may add query parameters of their own: a Prometheus scrape config's ``params``, a load
#: balancer's probe (routes outside the schema, such as /docs and its OAuth redirect, take any too)
_ANY_QUERY = frozenset({"/metrics", "/healthz"})
#: unknown parameters a 422 names (with a suggestion each); the rest are counted: a query of thousands of
#: names costs no more than a few
_NAMED_UNKNOWN = 5


def _known_query(request: Request) -> None:
    """Refuse a query parameter the route does not take (a 422 naming it, the closest one it takes and all it
    takes): a misspelt filter (``hots=node004``) would otherwise be ignored and answer for the whole fleet.
    Only routes of the OpenAPI schema, but /metrics and /healthz.

    Raises ``HTTPException(422)``."""
    route = request.scope.get("route")
    if route is None or not getattr(route, "include_in_schema", False) or route.path in _ANY_QUERY:
        return
    takes = _query_names(route)
    unknown = [k for k in dict.fromkeys(request.query_params.keys()) if k not in takes]
    if not unknown:
        # a filter of one value given twice (``host=a&host=b``) was answered for the last alone: say so, as for a
        # name it does not take (``severity`` is a list: repeat it)
        given = Counter(k for k, _ in request.query_params.multi_items())
        if any(n > 1 for n in given.values()):
            lists = sorted(q.alias for q in _query_params(route) if _takes_list(q))
            twice = [k for k, n in given.items() if n > 1 and k not in lists]
            if twice:
                raise HTTPException(422, "query: " + ", ".join(f"'{k[:64]}'" for k in twice[:_NAMED_UNKNOWN]) +
                                    f" given more than once; {'each takes' if len(twice) > 1 else 'it takes'} one "
                                    "value" + (f" (only {', '.join(lists)} may be repeated)" if lists else ""))
        return
    parts = []
    for k in unknown[:_NAMED_UNKNOWN]:
        close = difflib.get_close_matches(k[:64].lower(), sorted(takes), n=1)
        parts.append(f"'{k[:64]}'" + (f" (did you mean '{close[0]}'?)" if close else ""))
    if len(unknown) > _NAMED_UNKNOWN:
        parts.append(f"and {len(unknown) - _NAMED_UNKNOWN} more")
    allowed = ", ".join(sorted(takes)) if takes else "none"
    raise HTTPException(422, f"query: unknown parameter{'s' if len(unknown) > 1 else ''} {', '.join(parts)}; "
                             f"{route.path} takes: {allowed}")


def _query_params(route: Any) -> Iterator[Any]:
    """The query parameters (FastAPI's fields: ``alias``, ``field_info``) a route takes, its dependencies' too."""
    todo = [route.dependant]
    while todo:
        d = todo.pop()
        yield from d.query_params
        todo.extend(d.dependencies)


def _query_names(route: Any) -> set[str]:
    """The query parameter names (aliases) a FastAPI route takes, its dependencies' too."""
    return {q.alias for q in _query_params(route)}


def _takes_list(q: Any) -> bool:
    """Query parameter ``q`` takes a list: its name may be given more than once
    (``severity=error&severity=critical``)."""
    t = q.field_info.annotation
    return any(get_origin(a) in (list, set, tuple) for a in (t, *get_args(t)))


#: a time, a blank, then what an offset's digits look like: ``17:44:00 02:00`` (not ``2026-12-31 23:61``, a date-time
#: with a blank for its T, whose minutes are out of range)
_BLANK_OFFSET = re.compile(r"\d{2}:?\d{2}(:?\d{2}([.,]\d+)?)? \d{2}(:?\d{2})?$", re.ASCII)


def _plus_hint(error: dict[str, Any]) -> str:
    """For a query time that failed with a blank in it: a ``+02:00`` offset sent unencoded, which a URL query reads
    as a space (``2026-06-24T17:44:00 02:00``): how to write it; for any other time pydantic could not parse, the
    forms that are read (``since=yesterday`` was told only "input is too short": a fresh user's trial). For
    ``status=superseded``: where those are."""
    value = error.get("input")
    if tuple(error.get("loc", ())) == ("query", "status") and isinstance(value, str) and \
            value.strip().lower() == "superseded":  # a bare "should be 'open' or 'resolved'" (a fresh user's trial)
        return (" (superseded versions, which a later incident explains, are left out of the lists: "
                "`POST /sql` or `firstfault sql` reads them, SELECT * FROM incidents WHERE status = 'superseded'; "
                "the view incident_versions holds every version)")
    if error.get("loc", ())[:1] == ("query",) and isinstance(value, str) and _BLANK_OFFSET.search(value.strip()):
        return " (a '+' in a URL query is a space: write it %2B, or give the time in UTC with Z)"
    if str(error.get("type", "")).startswith(("datetime_", "date_")):  # pydantic's words named no form that is read
        return (" (a time is ISO 8601, 2026-12-01T10:00:00Z, or Unix seconds, 1796119200; a bare date, 2026-12-01, is "
                "that UTC day; words such as 'yesterday' are not read)")
    return ""


def _aware(t: datetime) -> datetime:
    return t if t.tzinfo is not None else t.replace(tzinfo=timezone.utc)


class HeadAsGet:
    """ASGI middleware: a ``HEAD`` request is answered as the ``GET`` of the same URL would be, without its body
    (RFC 9110 §9.3.2): the status, ``Content-Type`` and ``Content-Length``. FastAPI's GET routes answered HEAD with
    405, which a monitoring probe or ``curl -I`` reads as the route being down (a break-it pass). The routes keep
    one OpenAPI operation each. A 405's ``Allow`` that lists ``GET`` lists ``HEAD`` too, as it is served."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if scope["method"] != "HEAD":
            async def allow_head(message) -> None:
                if message["type"] == "http.response.start" and message["status"] == 405:
                    message = {**message, "headers": [_with_head(k, v) for k, v in message.get("headers", ())]}
                await send(message)

            await self.app(scope, receive, allow_head)
            return

        async def without_body(message) -> None:
            if message["type"] == "http.response.body":
                message = {**message, "body": b""}
            await send(message)

        await self.app({**scope, "method": "GET"}, receive, without_body)


def _with_head(name: bytes, value: bytes) -> tuple[bytes, bytes]:
    """An ``Allow`` header naming ``GET`` also names ``HEAD`` (``HeadAsGet`` serves it); other headers as they are."""
    if name.lower() == b"allow":
        methods = [m.strip() for m in value.split(b",")]
        if b"GET" in methods and b"HEAD" not in methods:
            value = b", ".join([*methods, b"HEAD"])
    return name, value


class BodyLimit:
    """ASGI middleware: a request body over ``limit`` bytes gets 413 (problem+json) before any route reads
    it — by its Content-Length, or, for a chunked body, by counting bytes as they arrive (at most ``limit``
    bytes are held), so neither an unauthenticated client nor a missing header can make the server buffer
    more."""

    def __init__(self, app, limit: int) -> None:
        self.app, self.limit = app, limit

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        n = headers.get(b"content-length")
        if n is not None:
            if not n.isdigit() or int(n) > self.limit:
                await self._refuse(scope, send)
                return
            await self.app(scope, receive, send)
            return
        if b"chunked" not in headers.get(b"transfer-encoding", b"").lower():
            await self.app(scope, receive, send)
            return
        body = bytearray()
        while True:
            msg = await receive()
            if msg["type"] == "http.disconnect":
                return
            body += msg.get("body", b"")
            if len(body) > self.limit:
                await self._refuse(scope, send)
                return
            if not msg.get("more_body", False):
                break
        replayed = False

        async def replay():
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": bytes(body), "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    async def _refuse(self, scope, send) -> None:
        r = _problem(413, "request body too large", f"at most {self.limit} bytes", scope.get("path"))
        await r(scope, _no_receive, send)


async def _no_receive():
    return {"type": "http.disconnect"}


#: Arrow bytes of the rows turned into Python objects at once for JSON (``_ndjson``): a list of 5,000 booleans
#: is 625 bytes of Arrow and 40 KB of Python list, so a whole 10,000-row batch of them took 1.3 GB (a break-it pass)
_JSON_SLICE_BYTES = 256 * 1024


def _ndjson(schema: pa.Schema, batches: Iterator[pa.RecordBatch], max_bytes: int) -> list[bytes]:
    """One JSON object per row, one chunk per slice of a record batch of at most ``_JSON_SLICE_BYTES`` of Arrow
    data (``Store.stream_sql`` has read them all), so the Python objects a row becomes stay few at a time.

    Raises HTTPException 400 when the rows cannot be JSON objects: two columns of one name (an object
    keeps one), or a value Python's datetime cannot hold (``'infinity'::TIMESTAMP``, year 290000); and when the
    JSON text holds more than ``max_bytes`` bytes (``sql_max_bytes``: text can be far larger than the Arrow data
    that limit counts, ``[x > -1 FOR x IN range(5000)]`` 40 times)."""
    dup = sorted({n for n in schema.names if schema.names.count(n) > 1})
    if dup:
        raise HTTPException(400, f"{QUERY_INVALID}: columns {', '.join(map(repr, dup))} appear more than once: a "
                                 "JSON row keeps one; give them distinct aliases, or ask for format arrow")
    out: list[bytes] = []
    size = 0
    try:
        for b in batches:
            refuse_day_end_times(b)
            b = nanosecond_times(decimal_floats(b))
            step = max(1, b.num_rows * _JSON_SLICE_BYTES // max(b.nbytes, 1))
            for start in range(0, b.num_rows, step):
                chunk = b"".join(json_bytes(row) + b"\n" for row in b.slice(start, step).to_pylist())
                size += len(chunk)
                if size > max_bytes:
                    raise HTTPException(400, f"{QUERY_FAILED}: the result as JSON holds more than {max_bytes} bytes "
                                             "(sql_max_bytes): select fewer rows or columns, or ask for format arrow")
                out.append(chunk)
    except (OverflowError, ValueError, pa.ArrowException) as e:
        raise HTTPException(400, f"{QUERY_FAILED}: a value cannot be written as JSON ({type(e).__name__}: {e}); CAST "
                                 "it to VARCHAR, or ask for format arrow") from None
    return out


def _arrow_stream(schema: pa.Schema, batches: Iterator[pa.RecordBatch]) -> Iterator[bytes]:
    """Arrow IPC stream, one chunk per record batch as it is read."""
    buf = io.BytesIO()

    def drain() -> bytes:
        data = buf.getvalue()
        buf.seek(0)
        buf.truncate()
        return data

    w = pa.ipc.new_stream(buf, schema)
    yield drain()
    for b in batches:
        w.write_batch(b)
        yield drain()
    w.close()
    yield drain()
