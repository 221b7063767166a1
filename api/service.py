"""The firstfault service in one process: ingest worker + streaming correlator + HTTP API.

``run_service`` consumes the raw topics, stores events in the lake, feeds each
durable batch to the streaming correlator, stores the incidents it emits,
and serves the API over the same lake. With ``once`` it stops when ingest
has caught up with the topics, flushes the correlator (end of input) and
returns the incidents.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import time
from typing import Any

import orjson
import uvicorn
from prometheus_client import Counter, Gauge

from correlate.correlator import correlation_settings
from correlate.stream import StreamCorrelator
from api.pager import Pager
from ingest.consumer import IngestWorker
from ingest.lake import Lake
from ingest.pipeline import Batch, Pipeline
from schemas.incidents import incident_rows
from schemas.settings import Settings

log = logging.getLogger("firstfault.service")
S = 1_000_000

INCIDENTS = Counter("firstfault_incident_versions_total", "incident versions emitted", ["category", "severity"])
OPEN = Gauge("firstfault_incidents_open", "incidents currently open")
LATE = Counter("firstfault_late_events_total", "events too late to change incidents")


class Service:
    """Wires the worker, the correlator, the pager and the lake (see module doc)."""

    #: how often the correlator runs without new input (incidents that went quiet get resolved)
    tick_s: float = 5.0

    def __init__(self, settings: Settings, bootstrap: str, *, group_id: str | None = None) -> None:
        self.settings = settings
        self.lake = Lake(settings.lake)
        self.lake.init()
        self.correlator = StreamCorrelator(settings=correlation_settings(settings),
                                           lateness_us=int(settings.allowed_lateness_s * S))
        self.worker = IngestWorker(
            bootstrap=bootstrap, topics=settings.topics, group_id=group_id or settings.group_id, lake=self.lake,
            dlq_topic=settings.dlq_topic, pipeline=Pipeline(tz=settings.tzinfo()), on_batch=self.on_batch,
            max_records=settings.batch_max_records, linger_ms=settings.batch_linger_ms)
        self.incidents: dict[str, dict[str, Any]] = {}
        self.pager = Pager(settings, public_url=settings.public_url)
        self._report_hour = None
        self._restore()

    def _restore(self) -> None:
        """After a restart: incident versions and the recent events from the lake (see StreamCorrelator)."""
        from api.store import Store, StoreError

        try:
            store = Store(self.lake)
            docs = [orjson.loads(r["doc"]) for r in store.query("SELECT doc FROM incidents")]
            horizon = int((self.settings.allowed_lateness_s + 3600) * S)
            rows = store.query("SELECT max(ts) AS t FROM events")
        except StoreError as e:
            log.warning("could not read the lake to restore correlator state: %s", e)
            return
        self.correlator.restore(docs)
        for d in docs:
            self.incidents[d["id"]] = d
        if rows and rows[0]["t"] is not None:
            con_events = self._recent_events(rows[0]["t"], horizon)
            if con_events is not None:
                self.correlator.add(con_events)

    def _recent_events(self, last, horizon_us: int):
        from datetime import timedelta

        from api.store import connect

        con = connect(self.lake)
        try:
            t = con.execute("SELECT * FROM events WHERE ts >= ?",
                            [last - timedelta(microseconds=horizon_us)]).to_arrow_table()
        finally:
            con.close()
        from schemas.events import EVENTS_SCHEMA

        return t.select(EVENTS_SCHEMA.names).cast(EVENTS_SCHEMA) if t.num_rows else None

    def on_batch(self, batch: Batch) -> None:
        LATE.inc(self.correlator.add(batch.events, batch.link_samples, batch.topology,
                                     now_us=int(time.time() * S)))
        self.emit(self.correlator.step(now_us=int(time.time() * S)))

    def emit(self, incidents: list[dict[str, Any]]) -> None:
        """Store incident versions in the lake (durably) and remember the latest of each."""
        if not incidents:
            return
        now = int(time.time() * S)
        inc_t, ev_t = incident_rows(incidents, now)
        bid = hashlib.blake2b("|".join(f"{i['id']}:{i['version']}" for i in incidents).encode(),
                              digest_size=10).hexdigest()
        self.lake.write("incidents", inc_t, bid)
        self.lake.write("incident_evidence", ev_t, bid)
        self.pager.enqueue(incidents)  # pages only for versions durably stored
        for i in incidents:
            self.incidents[i["id"]] = i
            INCIDENTS.labels(category=i["category"], severity=i["severity"]).inc()
        OPEN.set(sum(1 for i in self.incidents.values() if i["status"] == "open"))

    def health(self) -> dict[str, Any]:
        h = self.worker.health
        # a paging receiver that is down is reported but does not make ingest unhealthy
        return {"ok": h.ok, "reason": h.reason, "batches": h.batches, "records": h.records, "lines": h.lines,
                "events": h.events, "rejects": h.rejects, "lag": h.lag, "late_events": self.correlator.late_events,
                "incidents": len(self.incidents), "pager": self.pager.health()}

    async def run(self, *, once: bool = False, serve: bool = True, port: int | None = None,
                  on_caught_up=None, on_serving=None) -> list[dict[str, Any]]:
        """Consume until caught up, flush the correlator and call ``on_caught_up(incidents)``;
        then, unless ``once``, keep consuming and serving until ``self.worker.stop`` is set."""
        from api.app import create_app

        server = server_task = None
        if serve:
            app = create_app(self.settings, health=self.health)
            cfg = uvicorn.Config(app, host=self.settings.api_host,
                                 port=self.settings.api_port if port is None else port,
                                 log_level="warning", lifespan="off")
            server = uvicorn.Server(cfg)
            server_task = asyncio.create_task(server.serve())
        pager_stop = asyncio.Event()
        pager_task = asyncio.create_task(self.pager.run_forever(pager_stop))
        tick_task = asyncio.create_task(self._tick(pager_stop))
        await self.worker.start()
        try:
            await self.worker.run(until_caught_up=True)
            # the input so far has ended: close every window now rather than wait for later events
            self.emit(self.correlator.step(now_us=int(time.time() * S), flush=True))
            if on_caught_up:
                on_caught_up(self.current())
            if once:
                await self.pager.flush(10)
            else:
                if server is not None and on_serving:
                    while not server.started:
                        await asyncio.sleep(0.05)
                    on_serving(server)
                await self.worker.run()
        finally:
            pager_stop.set()
            for t in (pager_task, tick_task):
                with contextlib.suppress(asyncio.CancelledError, asyncio.TimeoutError):
                    await asyncio.wait_for(t, 5)
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
            self.emit(self.correlator.step(now_us=int(time.time() * S)))
            await self._hourly_report()

    async def _hourly_report(self) -> None:
        from datetime import datetime, timezone

        from api.degraded_links import due_hour
        from api.report import report_dir, write_hourly
        from api.store import StoreError

        h = due_hour(datetime.now(timezone.utc), self.settings.allowed_lateness_s)
        if h == self._report_hour and (report_dir(self.lake.root, f"{h:%Y-%m-%dT%H}") / "degraded_links.html").exists():
            return
        try:
            await asyncio.to_thread(write_hourly, self.settings, h)
            self._report_hour = h
        except (StoreError, OSError, ValueError) as e:  # the next tick tries again
            log.warning("degraded-link report for %s not written: %s", h, e)

    def current(self) -> list[dict[str, Any]]:
        return sorted(self.incidents.values(), key=lambda i: (i["start"], i["id"]))
