"""The HTTP API (FastAPI): incidents, events, health and metrics over the Parquet lake.

OpenAPI at ``/openapi.json``, interactive docs at ``/docs``. Responses use the
DESIGN.md shapes; errors are RFC 9457 ``application/problem+json``. When
``api_token`` is set every route but ``/healthz`` needs ``Authorization:
Bearer <token>``.
"""

from __future__ import annotations

import base64
import secrets
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Annotated, Any, Literal

import orjson

from fastapi import Depends, FastAPI, HTTPException, Query, Request
from fastapi import Path as PathParam
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, generate_latest
from pydantic import BaseModel, Field

from api.store import Store, StoreError
from ingest.lake import Lake
from schemas.settings import Settings

Severity = Literal["critical", "error", "warning", "info"]
PROBLEM = "application/problem+json"


class Problem(BaseModel):
    """RFC 9457 problem details."""

    type: str = "about:blank"
    title: str
    status: int
    detail: str | None = None
    instance: str | None = None


class IncidentPage(BaseModel):
    items: list[dict[str, Any]] = Field(description="incidents in the DESIGN.md shape, newest first")
    next_cursor: str | None = Field(None, description="pass as `cursor` for the next page; null on the last page")


class EventPage(BaseModel):
    items: list[dict[str, Any]] = Field(description="events with the columns of the events table")
    next_offset: int | None = None


class Healthz(BaseModel):
    status: Literal["ok", "unhealthy"]
    reason: str = ""
    ingest: dict[str, Any] = Field(default_factory=dict)


def _problem(status: int, title: str, detail: str | None = None, instance: str | None = None) -> JSONResponse:
    return JSONResponse(Problem(title=title, status=status, detail=detail, instance=instance).model_dump(),
                        status_code=status, media_type=PROBLEM)


def _encode_cursor(inc: dict[str, Any]) -> str:
    return base64.urlsafe_b64encode(f"{inc['start']}|{inc['id']}".encode()).decode()


def _decode_cursor(c: str) -> tuple[str, str]:
    try:
        start, iid = base64.urlsafe_b64decode(c.encode()).decode().split("|", 1)
        datetime.fromisoformat(start.replace("Z", "+00:00"))
        return start, iid
    except (ValueError, UnicodeDecodeError) as e:
        raise HTTPException(400, "invalid cursor") from e


def create_app(settings: Settings, *, health: Callable[[], dict[str, Any]] | None = None) -> FastAPI:
    """The app over ``settings.lake``; ``health`` reports the ingest worker when one runs in-process."""
    store = Store(Lake(settings.lake))
    app = FastAPI(title="firstfault", version="0.1.0",
                  description="Which GPU, link or host broke first — incidents from fleet-wide GPU logs.",
                  responses={401: {"model": Problem}, 422: {"model": Problem}})

    def auth(request: Request) -> None:
        if not settings.api_token:
            return
        got = request.headers.get("authorization", "")
        if not (got.startswith("Bearer ") and secrets.compare_digest(got[7:], settings.api_token)):
            raise HTTPException(401, "missing or wrong bearer token", headers={"WWW-Authenticate": "Bearer"})

    @app.exception_handler(HTTPException)
    async def _http(request: Request, exc: HTTPException) -> JSONResponse:
        r = _problem(exc.status_code, str(exc.detail), instance=request.url.path)
        for k, v in (exc.headers or {}).items():
            r.headers[k] = v
        return r

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        detail = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        return _problem(422, "invalid request", detail, request.url.path)

    @app.exception_handler(StoreError)
    async def _store(request: Request, exc: StoreError) -> JSONResponse:
        return _problem(503, "the lake could not be read", str(exc), request.url.path)

    @app.exception_handler(Exception)
    async def _any(request: Request, exc: Exception) -> JSONResponse:  # no stack traces in responses
        return _problem(500, "internal error", type(exc).__name__, request.url.path)

    @app.get("/healthz", response_model=Healthz, responses={503: {"model": Healthz}})
    def healthz() -> JSONResponse:
        """Liveness and readiness: unhealthy while ingest cannot store or commit (the reason says why)."""
        h = health() if health else {"ok": True}
        body = Healthz(status="ok" if h.get("ok", True) else "unhealthy", reason=h.get("reason", ""),
                       ingest={k: v for k, v in h.items() if k not in ("ok", "reason")})
        return JSONResponse(body.model_dump(), status_code=200 if body.status == "ok" else 503)

    @app.get("/incidents", response_model=IncidentPage, dependencies=[Depends(auth)])
    def list_incidents(
        since: Annotated[datetime | None, Query(description="incidents that ended at or after this time")] = None,
        until: Annotated[datetime | None, Query(description="incidents that started at or before this time")] = None,
        host: Annotated[str | None, Query(max_length=255, description="any host the incident touched")] = None,
        device: Annotated[str | None, Query(max_length=64, description="PCI bus id, NIC name …")] = None,
        severity: Annotated[list[Severity] | None, Query()] = None,
        category: Annotated[str | None, Query(max_length=64)] = None,
        status: Annotated[Literal["open", "resolved"] | None, Query()] = None,
        limit: Annotated[int, Query(ge=1, le=500)] = 50,
        cursor: Annotated[str | None, Query(max_length=512)] = None,
    ) -> IncidentPage:
        """Incidents, newest first, with cursor pagination."""
        items = store.incidents(since=since, until=until, host=host, severity=severity, category=category,
                                status=status, device=device, limit=limit + 1,
                                cursor=_decode_cursor(cursor) if cursor else None)
        more = len(items) > limit
        items = items[:limit]
        return IncidentPage(items=items, next_cursor=_encode_cursor(items[-1]) if more and items else None)

    @app.get("/incidents/{incident_id}", dependencies=[Depends(auth)], responses={404: {"model": Problem}})
    def get_incident(incident_id: Annotated[str, PathParam(max_length=64)]) -> dict[str, Any]:
        """One incident, with its evidence timeline (every event with its raw line) and blast radius."""
        inc = store.incident(incident_id)
        if inc is None:
            raise HTTPException(404, f"no incident {incident_id}")
        ids = list(inc["initiator"].get("events", []))
        for d in inc["downstream"]:
            ids.extend(d["events"])
        ids.extend(c["event"] for c in inc.get("context", []))
        timeline = store.events_by_id(ids)
        inc = dict(inc)
        inc["timeline"] = [_event_json(e) for e in timeline]
        inc["blast_radius"] = {
            "hosts": sorted({e["host"] for e in timeline} | {inc["initiator"].get("host")} - {None}),
            "gpus": sorted({f"{e['host']}:{e['device']}" for e in timeline if e.get("device_type") == "gpu"
                            and e.get("device")}),
            "ranks": sorted({e["rank"] for e in timeline if e.get("rank") is not None}),
            "communicators": sorted({e["comm"] for e in timeline if e.get("comm")}),
        }
        return inc

    @app.get("/events", response_model=EventPage, dependencies=[Depends(auth)])
    def list_events(
        since: datetime | None = None, until: datetime | None = None,
        host: Annotated[str | None, Query(max_length=255)] = None,
        kind: Annotated[str | None, Query(max_length=64)] = None,
        xid: Annotated[int | None, Query(ge=0, le=100000)] = None,
        device: Annotated[str | None, Query(max_length=64)] = None,
        signature: Annotated[str | None, Query(max_length=128)] = None,
        text: Annotated[str | None, Query(max_length=256, description="substring of the raw line")] = None,
        limit: Annotated[int, Query(ge=1, le=1000)] = 100,
        offset: Annotated[int, Query(ge=0, le=1_000_000)] = 0,
    ) -> EventPage:
        """Events, newest first."""
        rows = store.events(since=since, until=until, host=host, kind=kind, xid=xid, device=device,
                            signature=signature, text=text, limit=limit + 1, offset=offset)
        more = len(rows) > limit
        return EventPage(items=[_event_json(r) for r in rows[:limit]], next_offset=offset + limit if more else None)

    @app.get("/metrics", response_class=PlainTextResponse)
    def metrics() -> Response:
        """Prometheus text exposition."""
        return Response(generate_latest(REGISTRY), media_type=CONTENT_TYPE_LATEST)

    return app


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
