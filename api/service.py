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

import uvicorn
from prometheus_client import Counter, Gauge

from correlate.correlator import correlation_settings
from correlate.stream import StreamCorrelator
from ingest.consumer import IngestWorker
from ingest.lake import Lake
from ingest.pipeline import Batch, Pipeline
from schemas.incidents import incident_rows
from schemas.settings import Settings

log = logging.getLogger("firstfault.service")
S = 1_000_000

LINES = Counter("firstfault_lines_total", "lines read from Kafka")
EVENTS = Counter("firstfault_events_total", "events stored", ["kind"])
REJECTS = Counter("firstfault_rejects_total", "records sent to the dead-letter topic")
INCIDENTS = Counter("firstfault_incident_versions_total", "incident versions emitted", ["category", "severity"])
OPEN = Gauge("firstfault_incidents_open", "incidents currently open")
LATE = Counter("firstfault_late_events_total", "events too late to change incidents")


class Service:
    """Wires the worker, the correlator and the lake (see module doc)."""

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

    def on_batch(self, batch: Batch) -> None:
        LINES.inc(batch.lines)
        REJECTS.inc(len(batch.rejects))
        for k in batch.events.column("kind").to_pylist():
            EVENTS.labels(kind=k).inc()
        LATE.inc(self.correlator.add(batch.events, batch.link_samples, batch.topology))
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
        for i in incidents:
            self.incidents[i["id"]] = i
            INCIDENTS.labels(category=i["category"], severity=i["severity"]).inc()
        OPEN.set(sum(1 for i in self.incidents.values() if i["status"] == "open"))

    def health(self) -> dict[str, Any]:
        h = self.worker.health
        return {"ok": h.ok, "reason": h.reason, "batches": h.batches, "records": h.records, "lines": h.lines,
                "events": h.events, "rejects": h.rejects, "lag": h.lag, "late_events": self.correlator.late_events,
                "incidents": len(self.incidents)}

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
        await self.worker.start()
        try:
            await self.worker.run(until_caught_up=True)
            # the input so far has ended: close every window now rather than wait for later events
            self.emit(self.correlator.step(now_us=int(time.time() * S), flush=True))
            if on_caught_up:
                on_caught_up(self.current())
            if not once:
                if server is not None and on_serving:
                    while not server.started:
                        await asyncio.sleep(0.05)
                    on_serving(server)
                await self.worker.run()
        finally:
            await self.worker.close()
            if server is not None:
                server.should_exit = True
                with contextlib.suppress(asyncio.CancelledError):
                    await server_task
        return self.current()

    def current(self) -> list[dict[str, Any]]:
        return sorted(self.incidents.values(), key=lambda i: (i["start"], i["id"]))
