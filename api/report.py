"""The hourly degraded-link report at the edges: read the lake, write the report files, serve it over HTTP.

The computation is :mod:`api.degraded_links` (pure), the file formats
:mod:`api.report_render` (pure). Here:

* :func:`load_inputs` reads the window's ``link_samples`` and the evidence of
  incidents overlapping the hour through the read-only DuckDB views, :func:`load_topology` the wiring facts
  that name links' far ends;
* :func:`degraded_link_report` = load + compute, for one hour;
* :func:`write_hourly` writes the four formats into
  ``<lake>/reports/degraded_links/date=YYYY-MM-DD/hour=YYYY-MM-DDTHH/degraded_links.{json,csv,parquet,html}``
  (each file atomically; the Parquet without the ``hour`` column its folder names), what the service calls
  once an hour (:func:`due_hour` says which);
* :func:`report_router` serves ``GET /reports/degraded-links?hour=&format=``, computed from the lake
  on each request (so late samples show up).

Errors: :class:`api.store.StoreError` when the lake cannot be read; ``ValueError``
for a bad hour or fleet config; ``OSError`` when a report file cannot be written.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Annotated, Any, Literal

import duckdb
from fastapi import APIRouter, Query
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response

from api.degraded_links import (
    CLASSES, FLAP_LOOKAHEAD_US, HOUR_US, WINDOW_HOURS, build_report, due_hour, parse_hour, to_us,
)
from api.report_render import FORMATS, render, to_parquet
from api.store import StoreError, again_if_vanished, connect
from schemas.fleet import HostConfig, load_fleet_config
from ingest.lake import Lake
from schemas.settings import Settings

__all__ = ["degraded_link_report", "due_hour", "load_inputs", "load_topology", "report_dir", "report_router",
           "write_hourly"]

# only state rows and error counters leave DuckDB (DCGM also ships traffic counters per link)
_SAMPLES_SQL = f"""
SELECT host, epoch_us(ts) AS ts, gpu_index, device, link, state, counter, value, model
FROM link_samples
WHERE ts >= ? AND (ts < ? OR (state IS NOT NULL AND ts < ?))
  AND (state IS NOT NULL OR {" OR ".join(f"contains(lower(counter), '{c}')" for c in CLASSES)})
"""
_INCIDENTS_SQL = """
SELECT i.id, i.category, i.severity, i.status, epoch_us(i.start) AS start, e.role,
       ev.host, ev.gpu_index, ev.device, ev.link
FROM incidents i
JOIN incident_evidence e ON e.incident_id = i.id
JOIN events ev ON ev.event_id = e.event_id
WHERE i.start < ? AND i."end" >= ? AND ev.link IS NOT NULL
"""


def load_inputs(lake: Lake, start_us: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(link sample rows of the 24 h ending with the hour, and its state rows up to
    :data:`api.degraded_links.FLAP_LOOKAHEAD_US` after it, which close a flap that began in the hour; incident
    evidence rows of the hour); ``ts`` in µs. Read
    again when a part the query listed was compacted away meanwhile (``api.store.again_if_vanished``). Raises
    :class:`StoreError`."""
    end = start_us + HOUR_US
    t = lambda us: datetime.fromtimestamp(us / 1e6, tz=timezone.utc)  # noqa: E731
    samples, incidents = _read_rows(lake, (_SAMPLES_SQL, [t(end - WINDOW_HOURS * HOUR_US), t(end),
                                                          t(end + FLAP_LOOKAHEAD_US)]),
                                    (_INCIDENTS_SQL, [t(end), t(start_us)]))
    return samples, incidents


def _read_rows(lake: Lake, *queries: tuple[str, list[Any]]) -> list[list[dict[str, Any]]]:
    """The rows of each ``(sql, parameters)`` of ``queries`` over one connection to ``lake``, all read again when a
    part a query listed was compacted away meanwhile (``api.store.again_if_vanished``). Raises
    :class:`StoreError`."""

    def read() -> list[list[dict[str, Any]]]:
        con = connect(lake)
        try:
            return [_rows(con.execute(sql, args)) for sql, args in queries]
        except duckdb.Error as e:
            raise StoreError(str(e).splitlines()[0]) from e
        finally:
            con.close()

    return again_if_vanished(read)  # a part the hourly compaction removed meanwhile: read again


_TOPOLOGY_SQL = """
SELECT host, epoch_us(ts) AS ts, fact, gpu_index, device, link, peer_name, peer_device, peer_link, path
FROM topology
WHERE ts < ? AND fact IN ('nvlink_remote', 'gpu_bus')
"""


def load_topology(lake: Lake, start_us: int) -> list[dict[str, Any]]:
    """The wiring facts that name links' far ends (``nvidia-smi nvlink -R``'s ``nvlink_remote``, and ``gpu_bus``)
    up to the hour's end, however old (a host prints ``-R`` at boot, or when asked); ``ts`` in µs. Read again
    when a part was compacted away meanwhile. Raises :class:`StoreError`."""
    end = datetime.fromtimestamp((start_us + HOUR_US) / 1e6, tz=timezone.utc)
    (rows,) = _read_rows(lake, (_TOPOLOGY_SQL, [end]))
    return rows


def _rows(cur: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    cols = [d[0] for d in cur.description]
    return [dict(zip(cols, r)) for r in cur.fetchall()]


def fleet_hosts(settings: Settings) -> dict[str, HostConfig]:
    """The fleet config's hosts (NVLink domain, platform), or none. Raises ``ValueError`` on a bad file."""
    return load_fleet_config(settings.fleet_config) if settings.fleet_config else {}


def why_empty(settings: Settings, hour: str, option: str = "--hour", *, lake: Lake | None = None) -> str:
    """Why the report of ``hour`` (``2026-11-30T03``) lists no host: the lake has no link samples in that hour
    (then the latest hours it has samples for), or the hour's samples hold nothing the report reads, or the lake
    holds none at all; ``option`` is how the caller names another hour; ``lake``: the process's own
    (:func:`degraded_link_report`), else ``settings.lake`` opened anew. Raises :class:`StoreError` when the
    lake cannot be read (read again first when a part it listed was compacted away meanwhile)."""

    def read() -> list[str]:
        con = connect(lake or Lake(settings.lake))
        try:
            return [h for (h,) in con.execute("SELECT DISTINCT strftime(ts, '%Y-%m-%dT%H') AS h FROM link_samples "
                                             "ORDER BY h DESC").fetchall()]
        except duckdb.Error as e:
            raise StoreError(str(e).splitlines()[0]) from e
        finally:
            con.close()

    hours = again_if_vanished(read)  # a part the hourly compaction removed meanwhile: read again
    if hour in hours:
        return "its link samples of that hour hold no NVLink state or error counter the report reads"
    if hours:
        latest = ", ".join(sorted(hours[:6]))
        return (f"the lake has no link samples in that hour; it has some in {len(hours)} hour"
                f"{'s' if len(hours) > 1 else ''}" + (f", the latest: {latest}" if len(hours) > 6 else f": {latest}")
                + f" (UTC; pass one with {option})")
    return "the lake holds no link samples yet"


def not_over(hour: datetime, now: datetime | None = None) -> str | None:
    """What to say of the report of ``hour`` (an aware UTC datetime on the hour) asked at ``now`` (default: the
    current time) before that hour ended: its counts are those so far, or the hour has not begun. None once it is
    over. A report of the hour under way read like a complete one (a fresh user's trial)."""
    now = now or datetime.now(timezone.utc)
    end = hour + timedelta(hours=1)
    if now >= end:
        return None
    if now < hour:
        # the time now with its date: an hour of another day (a mistyped year or day) said only "it starts at 17:00"
        return f"the hour {hour:%Y-%m-%dT%H} has not begun: it is {now:%Y-%m-%dT%H:%M} UTC now"
    return (f"the hour {hour:%Y-%m-%dT%H} is not over: its counts up to {now:%H:%M} UTC (it ends at {end:%H:%M} "
            "UTC; the correlator writes the hour's report after it)")


def degraded_link_report(settings: Settings, hour: datetime | str, *,
                         hosts: dict[str, HostConfig] | None = None, lake: Lake | None = None) -> dict[str, Any]:
    """The report of ``hour`` (``2026-11-30T03`` or an aware datetime on the hour) over ``settings.lake``.

    ``lake``: the long-running process's own :class:`ingest.lake.Lake` (``serve``'s store, ``run``'s writer), so a
    lake deleted or replaced under it is refused (:class:`StoreError`, the API's 503) as its other reads are; a
    ``Lake`` opened anew for each report made a deleted lake again, empty, and ``serve`` answered the report 200 with
    no host (a fresh user's trial). None (a one-shot command): ``settings.lake`` opened anew."""
    start = to_us(parse_hour(hour) if isinstance(hour, str) else hour.astimezone(timezone.utc))
    lake = lake or Lake(settings.lake)
    samples, incidents = load_inputs(lake, start)
    return build_report(samples, incidents, start, hosts=fleet_hosts(settings) if hosts is None else hosts,
                        asked_us=to_us(datetime.now(timezone.utc)), topology=load_topology(lake, start))


def report_dir(hour: str) -> str:
    """``reports/degraded_links/date=2026-11-30/hour=2026-11-30T03`` (relative to the lake) for hour
    ``2026-11-30T03``: the folder's ``hour`` is the report's own (a hive reader reads it as the report's ``hour``
    column, which the stored Parquet leaves to the folder). An earlier version wrote ``…/hour=03``
    (:func:`old_report_dir`), with the ``hour`` column in its Parquet as well."""
    return f"reports/degraded_links/date={hour[:10]}/hour={hour[:13]}"


def old_report_dir(hour: str) -> str:
    """Where an earlier version wrote the report of ``hour``: ``reports/degraded_links/date=2026-11-30/hour=03``."""
    return f"reports/degraded_links/date={hour[:10]}/hour={hour[11:13]}"


def write_hourly(settings: Settings, hour: datetime | str, *, report: dict | None = None,
                 lake: Lake | None = None) -> list[str]:
    """Write the hour's report (``report``, when the caller made it already) in every format under ``<lake>/``
    :func:`report_dir`; return the files (json, csv, parquet, html) as paths or ``s3://`` URLs.

    Each file is written atomically (:meth:`ingest.lake.Lake.put_bytes`), so readers never see half a
    report; writing the same hour again replaces it. ``lake``: the worker's own (:func:`degraded_link_report`),
    else ``settings.lake`` opened anew. Raises :class:`ingest.lake.LakeError` (:class:`ingest.lake.LakeReplaced`
    for a worker's lake deleted or replaced under it) and :class:`StoreError`.
    Blocking (DuckDB, matplotlib): call it from a thread in async code.
    """
    lake = lake or Lake(settings.lake)
    report = report if report is not None else degraded_link_report(settings, hour, lake=lake)
    d = report_dir(report["hour"])
    return [lake.put_bytes(f"{d}/degraded_links.{fmt}", to_parquet(report, hour=False) if fmt == "parquet"
                           else render(report, fmt)) for fmt in ("json", "csv", "parquet", "html")]


def report_router(settings: Settings, lake: Lake | None = None) -> APIRouter:
    """``GET /reports/degraded-links`` over ``lake`` (the app's own, :func:`degraded_link_report`; None: the
    ``settings.lake`` opened anew per request). Include it with the app's auth dependency (it has none of its
    own)."""
    router = APIRouter(tags=["reports"])
    hosts = fleet_hosts(settings)  # read once, like the correlator: a bad file stops start-up

    @router.get("/reports/degraded-links", response_class=Response, responses={
        200: {"description": "the report; JSON shape as in tests/data/report/expected.json",
              "content": {m: {} for m in FORMATS.values()}},
        422: {"description": "hour or format not understood"},
        503: {"description": "the lake could not be read"}})
    def degraded_links(
        hour: Annotated[str | None, Query(max_length=40, examples=["2026-11-30T03"],
                                          description="UTC hour, e.g. 2026-11-30T03 (or an ISO 8601 time on the "
                                                      "hour); default: the last complete hour")] = None,
        format: Annotated[Literal["json", "html", "csv", "parquet"], Query()] = "json",
    ) -> Response:
        """Links down that the topology expects up, error counters that rose, flapping links, per host and domain."""
        try:
            # "?hour=" (a script's empty variable) is an error, as the CLI's --hour "", not the last complete hour
            dt = parse_hour(hour) if hour is not None else due_hour(datetime.now(timezone.utc), 0)
        except ValueError as e:  # parse_hour's message names the form (a regex in a 422 says less)
            raise RequestValidationError([{"loc": ("query", "hour"), "msg": str(e), "type": "value_error"}]) from None
        report = degraded_link_report(settings, dt, hosts=hosts, lake=lake)
        headers, notes = {}, [n for n in (not_over(dt),) if n]
        if not report["totals"]["hosts_sampled"]:  # an empty report reads like a healthy fleet: say why it is empty
            try:
                why = why_empty(settings, report["hour"], option="?hour=", lake=lake)
            except StoreError:
                why = None
            if why:
                notes.append(f"no host in the report of {report['hour']}: {why}")
        if notes:
            headers["X-Firstfault-Note"] = "; ".join(notes)
            if format in ("json", "html"):  # a page saved from the browser keeps no header
                report = {**report, "note": headers["X-Firstfault-Note"]}
        if format in ("csv", "parquet"):
            headers["Content-Disposition"] = f'attachment; filename="degraded_links-{report["hour"]}.{format}"'
        # the page links each incident to its page on this server (relative: behind a proxy's prefix too); the
        # lake's and the CLI's files, opened where no API answers, keep the ids plain (a fresh user's trial)
        return Response(render(report, format, incidents_at="../incidents/"), media_type=FORMATS[format],
                        headers=headers)

    return router
