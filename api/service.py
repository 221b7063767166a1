"""The firstfault processes: all in one (``run``), or split for scale (``ingest``, ``correlate``).

* :class:`Service` (``firstfault run``, the demo): one ingest worker, the streaming correlator fed
  in-process with every durable batch, the pager and the HTTP API.
* :class:`IngestService` (``firstfault ingest``): a consumer-group member over the raw topics that
  stores events and publishes them, with the link samples and topology facts the correlator learns from, to
  ``fleet.events`` keyed by correlation domain (``ingest.publish``).
* :class:`CorrelateService` (``firstfault correlate``): a consumer-group member over ``fleet.events``
  (``correlate.consumer``) that stores incidents, pages, and writes the hourly degraded-link report.

Each runs until its stop event is set; with ``once`` until caught up with its topics.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import threading
import time
from collections.abc import Callable
from typing import Any

import uvicorn

import api.pager as api_pager
import api.sink as api_sink
import correlate.metrics as correlate_metrics
import ingest.metrics as ingest_metrics
from api.pager import Pager, api_base_url, paging_trouble
from api.sink import IncidentSink
from correlate.consumer import CorrelateWorker
from correlate.correlator import correlation_settings
from correlate.metrics import StepGuard, add_counted
from correlate.stream import StreamCorrelator
from ingest.consumer import Health, IngestWorker
from ingest.lake import Lake
from ingest.pipeline import Batch, Pipeline
from ingest.publish import Domains
from schemas.fleet import load_fleet_config
from schemas.settings import Settings

log = logging.getLogger("firstfault.service")
S = 1_000_000


#: hours back a worker catches up on the degraded-link reports it did not write (it was stopped, or the lake refused
#: them): a day of reports, written one a tick; older hours are said, not written (``firstfault report --store``)
CATCH_UP_HOURS = 24


class Hourly:
    """Writes the degraded-link report of each finished hour once its allowed lateness has passed: the hour due
    (``degraded_links.due_hour``) and those before it since the last report written (by this worker, else the latest
    stored in the lake within ``CATCH_UP_HOURS``), oldest first, one a call. A worker stopped from 03:10 to 05:10,
    or whose lake refused writes as long, wrote only 04's report: 03's was never written, and nothing said so (a
    break-it pass). ``done``: the last hour written (a UTC ``datetime``), None before the first."""

    def __init__(self, settings: Settings, lake: Lake) -> None:
        self.settings, self.lake, self.done, self.failed = settings, lake, None, None
        #: the first hour not written yet (``_next``): None until the lake was searched for the latest report stored
        self.owed = None
        #: the last hour compacted (``maybe_compact``): None before the first call
        self.compacted = None

    def _stored(self, hour) -> bool:
        from api.report import old_report_dir, report_dir

        h = f"{hour:%Y-%m-%dT%H}"  # where this version writes it, or an earlier one did
        return any(self.lake.exists(f"{d(h)}/degraded_links.html") for d in (report_dir, old_report_dir))

    def _next(self, due):
        """The hour to write at ``due`` (the hour due now), or None when every hour up to it is written. Raises
        OSError when the lake cannot be searched."""
        from datetime import timedelta

        hour = timedelta(hours=1)
        if self.owed is None:  # a worker's start: after the latest report stored, else (a new lake) the hour due
            stored = next((due - k * hour for k in range(CATCH_UP_HOURS + 1) if self._stored(due - k * hour)), None)
            self.owed = due if stored is None else stored + hour
        if self.owed > due:  # written (the clock may step back); again if its files went
            return None if self._stored(due) else due
        if due - self.owed >= CATCH_UP_HOURS * hour:
            first, self.owed = self.owed, due - (CATCH_UP_HOURS - 1) * hour
            log.warning("degraded-link reports for %s to %s not written: the service wrote none for more than %d "
                        "hours; write them with `firstfault report degraded-links --hour HOUR --store`",
                        f"{first:%Y-%m-%dT%H}", f"{self.owed - hour:%Y-%m-%dT%H}", CATCH_UP_HOURS,
                        extra={"stage": "report", "error_code": "report_skipped"})
        return self.owed

    async def maybe_write(self) -> None:
        """Write the report of the next hour to write (``_next``), if any. A lake that refuses it (StoreError,
        OSError, ValueError) is logged as a warning; any other error once an hour with its traceback. Either way
        the next call tries the same hour again: none is skipped while the lake refuses."""
        from datetime import datetime, timedelta, timezone

        from api.degraded_links import due_hour
        from api.report import write_hourly
        from api.store import StoreError

        h = due = due_hour(datetime.now(timezone.utc), self.settings.allowed_lateness_s)
        try:
            h = await asyncio.to_thread(self._next, due)
            if h is None:
                return
            await asyncio.to_thread(write_hourly, self.settings, h, lake=self.lake)
            self.done = h
            self.owed = max(self.owed, h + timedelta(hours=1))
        except (StoreError, OSError, ValueError) as e:  # the next tick tries again
            log.warning("degraded-link report for %s not written: %s", h, e)
        except Exception as e:  # noqa: BLE001 — a defect: said with its traceback once an hour, the ticks go on (a
            # TypeError ended the tick task, and with it the resolving of quiet incidents: a break-it pass)
            if self.failed != h:
                self.failed = h
                log.error("degraded-link report for %s failed (%s: %s); the next tick tries again", h,
                          type(e).__name__, e, exc_info=True, extra={"stage": "report", "error_code": "report_failed"})

    async def maybe_compact(self, stop: asyncio.Event | None = None) -> None:
        """Compact (``ingest.compact``) the next closed hour this worker has not: an hour is closed
        ``default_min_age_s`` (the allowed lateness plus ``MARGIN_S``) after its end. At a worker's start the
        ``CATCH_UP_HOURS`` closed hours before it are gone over again, one a call (a folder of one part costs
        a listing): late parts and a worker stopped for hours are merged so. Older hours: ``firstfault lake
        compact``. A folder that cannot be compacted (a corrupt part) is logged as a warning and counted
        (``firstfault_lake_compaction_failures_total``), and the hour's other folders are compacted: one bad part
        does not hold up the hours after it. A lake that cannot be listed: the next call tries the same hour.
        ``stop`` set: the hour's compaction ends before its next folder (each folder is whole either way), and the
        next call does the hour again."""
        from datetime import datetime, timedelta, timezone

        from correlate.metrics import LAKE_COMPACTION_FAILURES, LAKE_PARTS_COMPACTED
        from ingest.compact import closed_before, compact_folder, default_min_age_s, hour_folders
        from ingest.lake import LakeError

        hour = timedelta(hours=1)
        age = default_min_age_s(self.settings.allowed_lateness_s)
        latest = closed_before(datetime.now(timezone.utc), age) - hour
        if self.compacted is None:
            self.compacted = latest - CATCH_UP_HOURS * hour
        if self.compacted >= latest:
            return
        h = self.compacted + hour

        def one_hour() -> list:  # in a thread; a folder merged counts at once (a stop may end the hour after it)
            merged = []
            for folder in hour_folders(self.lake, h):  # h <= latest: closed
                if stop is not None and stop.is_set():
                    raise _Stopped
                try:
                    m = compact_folder(self.lake, folder)
                except LakeError as e:
                    LAKE_COMPACTION_FAILURES.inc()
                    log.warning("lake compaction of %s failed: %s", folder.rel, e,
                                extra={"stage": "compact", "error_code": "compaction_failed"})
                    continue
                if m is not None:
                    LAKE_PARTS_COMPACTED.inc(m.removed)
                    merged.append(m)
            return merged

        try:
            merged = await asyncio.to_thread(one_hour)
        except _Stopped:
            return
        except OSError as e:  # the lake could not be listed; the next call tries the same hour again
            LAKE_COMPACTION_FAILURES.inc()
            log.warning("lake compaction of %s failed: %s", f"{h:%Y-%m-%dT%H}", e,
                        extra={"stage": "compact", "error_code": "compaction_failed"})
            return
        except Exception as e:  # noqa: BLE001 — a defect: said with its traceback, the ticks go on
            LAKE_COMPACTION_FAILURES.inc()
            log.error("lake compaction of %s failed (%s: %s)", f"{h:%Y-%m-%dT%H}", type(e).__name__, e,
                      exc_info=True, extra={"stage": "compact", "error_code": "compaction_failed"})
            return
        self.compacted = h
        if merged:
            log.info("lake hour %s compacted: %d parts of %d folders merged into %d (%d -> %d rows)",
                     f"{h:%Y-%m-%dT%H}", sum(m.parts for m in merged), len(merged), sum(m.into for m in merged),
                     sum(m.rows_before for m in merged), sum(m.rows_after for m in merged))


class _Stopped(Exception):
    """A compaction ended between two folders because the worker stops."""


async def _compactions(hourly: Hourly, stop: asyncio.Event, every_s: float = 30.0) -> None:
    """The lake's compaction of each closed hour (``Hourly.maybe_compact``) on a task of its own: an hour of a fleet
    (tens of thousands of parts, ~3 ms each) delays neither the correlator's ticks nor the hourly report."""
    while not stop.is_set():
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(stop.wait(), every_s)
        if not stop.is_set():
            await hourly.maybe_compact(stop)


async def _stop_tasks(stop: asyncio.Event, *tasks: asyncio.Task) -> None:
    stop.set()
    for t in tasks:
        with contextlib.suppress(asyncio.CancelledError, asyncio.TimeoutError):
            await asyncio.wait_for(t, 5)


#: the modules whose metrics each worker's /metrics reports (``api.app.WorkerMetrics``)
METRIC_MODULES: dict[str, tuple[Any, ...]] = {"ingest": (ingest_metrics,),
                                              "correlate": (correlate_metrics, api_sink, api_pager)}
#: the metrics a worker's /metrics leaves out: a correlate worker's ``firstfault_incidents_open`` counted every open
#: incident of the lake it restored at its start, and never saw another worker resolve them (two workers said 17 and
#: 18 where the fleet had 11 open: an operator's trial); the fleet's count is the API's (``/incidents?status=open``)
LEAVE_OUT: dict[str, frozenset[str]] = {"ingest": frozenset(), "correlate": frozenset({"firstfault_incidents_open"})}


class WorkerEndpoint:
    """The ``/healthz`` and ``/metrics`` of an ``ingest`` or ``correlate`` worker (``api.app.create_worker_app``) on
    ``api_host:port`` (``--port``, the ``worker_port`` setting; None: nothing served), served by uvicorn on a thread
    of its own while the worker runs: the worker's event loop is busy for a batch's decoding or a correlator step at
    a time, and a probe that waited for it took up to 1.2 s while a backlog was read (a break-it pass; Kubernetes'
    probes time out after 1 s by default). ``on_listening(server)`` once it listens (port 0: the port the system
    chose). Before, a split deployment's workers served neither route: no liveness probe, and their counters (dead
    letters, store failures) were in no process Prometheus could scrape."""

    def __init__(self, settings: Settings, worker: str, health: Callable[[], dict[str, Any]], port: int | None,
                 on_listening: Callable[[Any], None] | None = None) -> None:
        self.settings, self.worker, self.health, self.port = settings, worker, health, port
        self.on_listening = on_listening
        self.server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    async def start(self, timeout_s: float = 10.0) -> None:
        """Start serving and wait until it listens (at most ``timeout_s``); a server that could not bind (another
        process took the port since the CLI checked it) is logged (``error_code`` ``cannot_bind``), and the worker
        runs without it."""
        if self.port is None:
            return
        from api.app import create_worker_app

        app = create_worker_app(self.worker, self.health, METRIC_MODULES[self.worker], LEAVE_OUT[self.worker])
        cfg = uvicorn.Config(app, host=self.settings.api_host,
                             port=self.port, log_config=None, log_level=self.settings.log_level.lower(),
                             lifespan="off")
        self.server = uvicorn.Server(cfg)  # on a thread not the main one it leaves the signals to the CLI
        self._thread = threading.Thread(target=self.server.run, name=f"firstfault-{self.worker}-endpoint", daemon=True)
        self._thread.start()
        end = time.monotonic() + timeout_s
        while not self.server.started and self._thread.is_alive() and time.monotonic() < end:
            await asyncio.sleep(0.01)
        if not self.server.started:
            log.error("%s worker: could not serve /healthz and /metrics on %s:%d", self.worker, self.settings.api_host,
                      self.port, extra={"stage": "serve", "error_code": "cannot_bind"})
            return
        if self.on_listening is not None:
            self.on_listening(self.server)

    async def stop(self) -> None:
        if self.server is None or self._thread is None:
            return
        self.server.should_exit = True
        await asyncio.get_running_loop().run_in_executor(None, self._thread.join, 5.0)


def second_signal_exits(first: Callable[[], None], second: Callable[[], None]) -> Callable[[], None]:
    """A SIGINT / SIGTERM handler for a worker's event loop (``loop.add_signal_handler``): the first signal calls
    ``first`` (set the worker's stop: it finishes the batch in hand and commits, then returns); a later one calls
    ``second`` (say so) and ends the process at once, exit 1, without the last commit (its records are read again
    next time, at-least-once). A worker stopped while its broker was away waited for the broker to commit and ignored
    every later signal (break-it passes: the correlate worker, then the demo, 40 s)."""
    signals = 0

    def signalled() -> None:
        nonlocal signals
        signals += 1
        if signals == 1:
            first()
            return
        second()
        os._exit(1)

    return signalled


class _SignalsLeftAlone(uvicorn.Server):
    """The API server of :class:`Service`: SIGINT and SIGTERM stay the caller's (``api.cli._until_signalled``,
    the demo), which set the worker's stop; ``Service.run`` ends the server after the worker's last commit. uvicorn's
    own handlers (``Server.capture_signals``) ran beside the event loop's on the same signal (the loop's wakeup
    descriptor sees it too), shut the API down at once and raised the signal again once done: the CLI counted it as
    a second signal, so one SIGTERM of a serving ``firstfault run`` ended it at once, exit 1, before its last
    commit (a break-it pass)."""

    @contextlib.contextmanager
    def capture_signals(self) -> Any:
        yield


class Service:
    """All in one process: ingest + correlate + pager + API (see module doc)."""

    #: how often the correlator runs without new input (incidents that went quiet get resolved)
    tick_s: float = 5.0

    def __init__(self, settings: Settings, bootstrap: str, *, group_id: str | None = None) -> None:
        self.settings = settings
        self.sink = IncidentSink(settings)
        self.lake, self.pager = self.sink.lake, self.sink.pager
        #: called with the incident versions each later step stores and the status each incident had before
        #: (id -> status), once caught up (``run``'s ``on_incidents``; progress only: what it raises is logged)
        self.on_incidents: Callable[[list[dict[str, Any]], dict[str, str]], None] | None = None
        self.step = StepGuard()  # a step that raises is said and tried again; ingest goes on
        self.correlator = StreamCorrelator(settings=correlation_settings(settings),
                                           lateness_us=int(settings.allowed_lateness_s * S),
                                           close_after_us=int(settings.close_after_s * S),
                                           early_after_us=settings.early_after_us(),
                                           idle_us=int(settings.idle_close_s * S),
                                           reach_back_us=int(settings.reach_back_s * S))
        self.worker = IngestWorker(
            bootstrap=bootstrap, topics=settings.topics, group_id=group_id or settings.group_id, lake=self.lake,
            dlq_topic=settings.dlq_topic, pipeline=Pipeline(tz=settings.tzinfo()), on_batch=self.on_batch,
            max_records=settings.batch_max_records, linger_ms=settings.batch_linger_ms,
            # as the ingest worker's: without it a `run` restarted after a kill -9 waited the default 30 s for its
            # dead predecessor's partitions whatever the setting said (a break-it pass)
            session_timeout_ms=settings.session_timeout_ms, once_give_up_s=settings.once_give_up_s)
        # the in-process correlator's health, read at each scrape, as a correlate worker's: only the worker set it, so
        # `run`'s and the demo's /metrics said `firstfault_correlate_healthy 0` while /healthz said ok (a fresh
        # user's trial: an alert on it fired for every healthy `run`)
        correlate_metrics.HEALTHY.set_function(lambda: 1 if self.health()["ok"] else 0)
        self.hourly = Hourly(settings, self.lake)
        # after a restart: incident versions and the recent events from the lake, with the older events of
        # incidents the correlator keeps aside (StreamCorrelator.cold), and the append delays of all its events
        # (the clocks read before the restart, and by the batch over the lake)
        stored = self.sink.stored()
        self.correlator.restore(stored, self.sink.recent_events(int((settings.allowed_lateness_s + 3600) * S),
                                                                stored, int(settings.reach_back_s * S)),
                                delays=self.sink.append_delays())

    @property
    def incidents(self) -> dict[str, dict[str, Any]]:
        return self.sink.incidents

    def on_batch(self, batch: Batch) -> None:
        add_counted(self.correlator, batch.events, batch.link_samples, batch.topology, now_us=int(time.time() * S))
        self.emit(self.step(self.correlator, int(time.time() * S)))

    def emit(self, incidents: list[dict[str, Any]]) -> None:
        emit_shown(self.sink, incidents, self.on_incidents)

    def health(self) -> dict[str, Any]:
        h = self.worker.health
        # a paging receiver that is down is reported but does not make ingest unhealthy (a restart would not bring it
        # back): the reason says so, as the status stays ok (it was empty: a fresh user's trial)
        failed = self.step.last_error
        pager = self.pager.health()
        reason = h.reason if failed is None else f"correlator steps fail: {failed}"
        reason = reason or paging_trouble(pager)
        return {"ok": h.ok and failed is None,
                "reason": reason, "batches": h.batches,
                "records": h.records, "lines": h.lines, "events": h.events, "rejects": h.rejects, "lag": h.lag,
                "late_events": self.correlator.late_events,
                "future_events": self.correlator.future_events,
                "incidents": len(self.incidents), "correlate_failures": self.step.failures,
                "pager": pager}

    def ingested(self, seconds: float | None = None) -> str:
        """``"ingested 26 Kafka records, 248 lines → 99 events in 2.1 s; lake: …"``: what the worker has read so
        far (``seconds``: how long it took, when the caller knows) and where it went, for a caught-up line."""
        return ingested_line(self.worker.health, self.settings.lake, seconds)

    async def run(self, *, once: bool = False, serve: bool = True, port: int | None = None,
                  on_caught_up=None, on_serving=None, on_incidents=None, on_listening=None,
                  on_stopped=None) -> list[dict[str, Any]]:
        """Consume until caught up, flush the correlator and call ``on_caught_up(incidents)`` (``self.worker.stop``
        set first, a signal: ``on_stopped(incidents)`` instead, the incidents of what it read, and it ends there);
        then, unless ``once``, keep consuming and serving until ``self.worker.stop`` is set, calling
        ``on_incidents(versions, before)`` with the incident versions each step stores and the status each of
        those incidents had before (id -> status; absent for a new one); ``on_serving(server)`` once it listens
        and has caught up; ``on_listening(server)`` as soon as it listens (port 0: the port the system chose)."""
        from api.app import create_app, when_listening

        server = server_task = None
        if serve:
            app = create_app(self.settings, health=self.health)
            cfg = uvicorn.Config(app, host=self.settings.api_host,
                                 port=self.settings.api_port if port is None else port,
                                 log_config=None, log_level=self.settings.log_level.lower(), lifespan="off")
            server = _SignalsLeftAlone(cfg)
            server_task = asyncio.create_task(server.serve())
        stop = asyncio.Event()
        if self.settings.public_url is None and (once or server is None):
            # pages link to the incident in the API this process serves; with none (--once: it stops when caught up,
            # --no-serve) a link to http://api_host:api_port led nowhere (a fresh-user trial): no link
            self.pager.base_url = None

        def listening(server: Any) -> None:
            if self.settings.public_url is None and not once:  # the port it got (--port, or 0: the system's pick)
                self.pager.base_url = api_base_url(self.settings.api_host,
                                                   server.servers[0].sockets[0].getsockname()[1])
            if on_listening:
                on_listening(server)

        pager_task = asyncio.create_task(self.pager.run_forever(stop))
        tick_task = asyncio.create_task(self._tick(stop))
        compact_task = asyncio.create_task(_compactions(self.hourly, stop))
        listen_task = asyncio.create_task(when_listening(server, listening, stop)) if server is not None else None
        await self.worker.start()
        try:
            caught_up = await self.worker.run(until_caught_up=True, give_up=once)
            # the input so far has ended: close every window now rather than wait for later events
            try:
                self.emit(self.step(self.correlator, int(time.time() * S), flush=True))
            except OSError as e:  # the lake refused them (full, read-only): kept by the sink, stored by a later
                if once:  # tick as the ticks' own are; the service ended here, exit 1 (a break-it pass: a full disk)
                    raise
                log.warning("incidents not stored when caught up: %s; they are kept and stored once the lake takes "
                            "them", e, extra={"stage": "store", "error_code": "incidents_not_stored"})
            if once and self.step.last_error is not None:  # the events are stored; no incidents could be made
                from correlate.consumer import CorrelateFailed
                raise CorrelateFailed(f"correlator steps fail: {self.step.last_error}")
            if not caught_up:  # a signal came first: said so (it said "caught up", a helper's pass)
                if on_stopped:
                    on_stopped(self.current())
            elif on_caught_up:
                on_caught_up(self.current())
            if once:
                await self.pager.flush(10)
            elif caught_up:
                self.on_incidents = on_incidents
                if server is not None and on_serving:
                    while not server.started:
                        await asyncio.sleep(0.05)
                    on_serving(server)
                await self.worker.run()
        finally:
            await _stop_tasks(stop, pager_task, tick_task, compact_task, *([listen_task] if listen_task else []))
            _tell_pending(self.pager)
            self.pager.close()
            await self.worker.close()
            if server is not None:
                server.should_exit = True
                with contextlib.suppress(asyncio.CancelledError):
                    await server_task
        return self.current()

    async def _tick(self, stop: asyncio.Event) -> None:
        """Every ``tick_s``, even without input: run the correlator (quiet incidents get resolved) and
        write the degraded-link report of the last hour once its allowed lateness has passed."""
        while not stop.is_set():
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(stop.wait(), self.tick_s)
            if stop.is_set():
                return
            try:
                self.emit(self.step(self.correlator, int(time.time() * S)))
            except OSError as e:  # the lake refused them: the sink keeps them for the next emit
                log.warning("incidents not stored on this tick: %s", e)
            await self.hourly.maybe_write()

    def current(self) -> list[dict[str, Any]]:
        return self.sink.current()


class IngestService:
    """``firstfault ingest``: raw topics -> lake + ``fleet.events`` (keyed by correlation domain)."""

    def __init__(self, settings: Settings, bootstrap: str) -> None:
        self.settings = settings
        hosts = load_fleet_config(settings.fleet_config) if settings.fleet_config else {}
        self.lake = Lake(settings.lake)
        self.lake.init()
        domains = Domains(hosts)
        self.worker = IngestWorker(
            bootstrap=bootstrap, topics=settings.topics, group_id=settings.group_id, lake=self.lake,
            dlq_topic=settings.dlq_topic, pipeline=Pipeline(tz=settings.tzinfo()),
            max_records=settings.batch_max_records, linger_ms=settings.batch_linger_ms,
            events_topic=settings.events_topic, domains=domains,
            session_timeout_ms=settings.session_timeout_ms, once_give_up_s=settings.once_give_up_s)
        self.worker.on_assigned = lambda: domains.seed(self._memberships())
        #: whether ``run`` caught up with the raw topics (False: not yet, or a signal stopped it first)
        self.caught_up = False

    def _memberships(self) -> list[tuple[str, int, str]]:
        """Each host's latest NCCL communicator, from the lake (what the previous owner of its partition saw)."""
        from api.store import Store, StoreError

        try:
            rows = Store(self.lake).query(
                "SELECT host, epoch_us(max(ts)) AS t, arg_max(comm, ts) AS comm FROM events "
                "WHERE kind IN ('nccl_init', 'nccl_p2p_fallback') AND comm IS NOT NULL GROUP BY host")
        except StoreError as e:
            log.warning("could not read communicator memberships from the lake: %s", e)
            return []
        return [(r["host"], r["t"], r["comm"]) for r in rows]

    def health(self) -> dict[str, Any]:
        """The worker's ``/healthz`` (``WorkerEndpoint``): ``ok``, ``reason`` (the lake cannot be written, a
        broker acknowledgement is late) and its counts (``ingest.consumer.Health``)."""
        h = self.worker.health
        return {"ok": h.ok, "reason": h.reason, "batches": h.batches, "records": h.records, "lines": h.lines,
                "events": h.events, "rejects": h.rejects, "fallbacks": h.fallbacks, "replays": h.replays,
                "lag": dict(h.lag)}  # a copy: the worker's loop changes it while this thread answers

    async def run(self, *, once: bool = False, on_listening: Callable[[Any], None] | None = None,
                  on_started: Callable[[], None] | None = None) -> None:
        """Consume until ``worker.stop`` is set (``once``: until caught up), serving ``/healthz`` and ``/metrics``
        on the ``worker_port`` setting when it is set; ``on_started()`` once the worker has reached the broker.
        ``caught_up`` then says whether it caught up (False: ``worker.stop`` ended it first, a signal)."""
        endpoint = WorkerEndpoint(self.settings, "ingest", self.health, self.settings.worker_port, on_listening)
        await endpoint.start()
        try:
            await self.worker.start()
            if on_started is not None:
                on_started()
            try:
                self.caught_up = await self.worker.run(until_caught_up=once, give_up=once)
            finally:
                await self.worker.close()
        finally:
            await endpoint.stop()


def ingested_line(h: Health, lake: str, seconds: float | None = None, *, ran: bool = False) -> str:
    """``"ingested 26 Kafka records, 248 lines → 99 events in 2.1 s; lake: …"`` (``Service.ingested``), from an
    ingest worker's ``Health``; ``seconds`` when the caller knows how long it took. ``ran``: ``seconds`` is how long
    a worker ran until signalled, not how long catching up took, and the line says ``… events over 168.9 s of
    running`` (a fresh user read the worker's "in 168.9 s" as the demo's catch-up time)."""
    took = "" if seconds is None else f" over {seconds:.1f} s of running" if ran else f" in {seconds:.1f} s"
    dead = f", {h.rejects} dead-lettered" if h.rejects else ""
    return (f"ingested {h.records} Kafka record{'s' * (h.records != 1)}, {h.lines} line{'s' * (h.lines != 1)} → "
            f"{h.events} event{'s' * (h.events != 1)}{dead}{took}; lake: {lake}")


def emit_shown(sink: IncidentSink, incidents: list[dict[str, Any]],
               on_incidents: Callable[[list[dict[str, Any]], dict[str, str]], None] | None) -> list[dict[str, Any]]:
    """``sink.emit(incidents)`` (raises as it does), then ``on_incidents(new, before)``: the versions stored that
    are newer than the incident's stored one, and the status each incident had before them
    (``api.render.incident_progress`` shows them). A correlate worker restarted on its group replays its partitions
    from the safe offsets and emits versions already stored, which were shown "updated" by the hundred (a break-it
    pass). Returns the versions stored."""
    had = {i["id"]: sink.incidents[i["id"]] for i in sink.unstored + list(incidents)
           if i["id"] in sink.incidents} if on_incidents is not None else {}
    stored = sink.emit(incidents)
    new = [v for v in stored if v["id"] not in had or v.get("version", 1) > had[v["id"]].get("version", 1)]
    if new and on_incidents is not None:
        try:  # progress only: a closed stderr (rich exits on a broken pipe) must not stop the service
            on_incidents(new, {k: inc["status"] for k, inc in had.items()})
        except (Exception, SystemExit) as e:  # noqa: BLE001
            log.warning("could not show the incidents stored: %s: %s", type(e).__name__, e)
    return stored


class CorrelateService:
    """``firstfault correlate``: ``fleet.events`` -> incidents in the lake, pages, hourly report."""

    def __init__(self, settings: Settings, bootstrap: str) -> None:
        self.settings = settings
        self.sink = IncidentSink(settings)
        #: ``on_incidents(versions, before)`` with the versions each step stores (the CLI shows them: a worker
        #: printed nothing but warnings for 25 minutes, a fresh user's trial)
        self.on_incidents: Callable[[list[dict[str, Any]], dict[str, str]], None] | None = None
        self.worker = CorrelateWorker(
            bootstrap=bootstrap, topic=settings.events_topic, group_id=settings.correlate_group_id,
            dlq_topic=settings.dlq_topic, settings=correlation_settings(settings),
            lateness_us=int(settings.allowed_lateness_s * S),
            on_incidents=lambda incidents: emit_shown(self.sink, incidents, self.on_incidents),
            restore=self.sink.stored, restore_events=self.sink.membership_events,
            read_back=self.sink.incident_events, read_facts=self.sink.host_facts,
            read_delays=self.sink.append_delays,
            session_timeout_ms=settings.session_timeout_ms, close_after_us=int(settings.close_after_s * S),
            early_after_us=settings.early_after_us(),
            idle_us=int(settings.idle_close_s * S), reach_back_us=int(settings.reach_back_s * S))
        self.hourly = Hourly(settings, self.sink.lake)
        #: whether ``run`` caught up with ``fleet.events`` (False: not yet, or a signal stopped it first)
        self.caught_up = False

    def health(self) -> dict[str, Any]:
        """The worker's ``/healthz`` (``WorkerEndpoint``): ``CorrelateWorker.health`` and the pager's state (a
        receiver down is said in the reason but leaves the status ok, as on ``run``'s API)."""
        h = self.worker.health()
        pager = self.sink.pager.health()
        # no count of incidents: the sink holds every incident of the lake at its start, not what this worker
        # correlates (two workers said 33 each: an operator's trial)
        return {**h, "reason": h["reason"] or paging_trouble(pager), "pager": pager}

    async def run(self, *, once: bool = False, on_listening: Callable[[Any], None] | None = None,
                  on_started: Callable[[], None] | None = None) -> list[dict[str, Any]]:
        """Consume ``fleet.events`` until ``worker.stop`` is set (``once``: until caught up), paging and writing the
        hourly report, serving ``/healthz`` and ``/metrics`` on the ``worker_port`` setting when it is set;
        ``on_started()`` once the worker has reached the broker. ``caught_up`` then says whether it caught up (False:
        ``worker.stop`` ended it first, a signal)."""
        stop = asyncio.Event()
        endpoint = WorkerEndpoint(self.settings, "correlate", self.health, self.settings.worker_port, on_listening)
        await endpoint.start()
        pager_task = asyncio.create_task(self.sink.pager.run_forever(stop))
        report_task = asyncio.create_task(self._reports(stop))
        compact_task = asyncio.create_task(_compactions(self.hourly, stop))
        try:
            await self.worker.start()
            if on_started is not None:
                on_started()
            try:
                self.caught_up = await self.worker.run(until_caught_up=once)
                if once:
                    await self.sink.pager.flush(10)
            finally:
                await _stop_tasks(stop, pager_task, report_task, compact_task)
                _tell_pending(self.sink.pager)
                self.sink.pager.close()
                await self.worker.close()
        finally:
            await endpoint.stop()
        return self.sink.current()

    async def _reports(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(stop.wait(), 30)
            if not stop.is_set():
                await self.hourly.maybe_write()


def _tell_pending(pager: Pager) -> None:
    """On stopping, say how many pages no receiver has taken yet (a receiver down or refusing): they stay in the
    outbox and the next run sends them, but a run that ends quietly would look as if every page went out."""
    left = pager.pending()
    if not left:
        return
    why = "; ".join(f"{r.name}: {r.last_error}" for r in pager.receivers if r.last_error)
    n = pager.pending_incidents()
    log.warning("%d page%s of %d incident%s not delivered yet%s: kept in the outbox, the next run with %s "
                "sends %s", left, "s" * (left != 1), n, "s" * (n != 1), f" ({why})" if why else "",
                "these receivers" if len(pager.receivers) > 1 else "this receiver", "them" if left != 1 else "it")
