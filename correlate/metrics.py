"""Prometheus metrics of the streaming correlator's input (exposed by the API's ``/metrics``; ``firstfault run`` and
``firstfault correlate`` count them), as ``ingest.metrics`` for the ingest worker."""

from __future__ import annotations

import logging
import time
from typing import Any

import pyarrow as pa
from prometheus_client import Counter, Gauge

from correlate.stream import StreamCorrelator
from ingest.metrics import LAG  # noqa: F401 — one lag series per topic and partition: the correlate worker sets
# fleet.events's (``CorrelateWorker.observe``), and its /metrics reports it (``api.app.WorkerMetrics``)

LATE = Counter("firstfault_late_events_total", "events too late to change incidents")
FUTURE = Counter("firstfault_future_events_total", "events stamped further ahead of their Kafka append time than "
                 "any clock skew allows: correlated, but not moving their host's watermark")

LAKE_PARTS_COMPACTED = Counter("firstfault_lake_parts_compacted_total",
                               "Parquet parts the hourly compaction merged into one part per partition folder and "
                               "removed (ingest.compact; by this correlate worker)")
LAKE_COMPACTION_FAILURES = Counter("firstfault_lake_compaction_failures_total",
                                   "partition folders (or hours, when the lake could not be listed) the hourly "
                                   "compaction could not compact (a corrupt part, a read, write or removal refused): "
                                   "logged; nothing is lost, the parts stay as they are")

STEP_FAILURES = Counter("firstfault_correlate_step_failures_total",
                        "correlator steps that raised (a defect, or input nobody foresaw): said in the log and on "
                        "/healthz; the events stay stored and the next step tries again")

DEAD_LETTERS = Counter("firstfault_correlate_dead_letters_total",
                       "fleet.events records the correlate worker could not read, sent to the dead-letter topic with "
                       "the reason and acknowledged", ["error_code"])
DEAD_LETTER_FAILURES = Counter("firstfault_correlate_dead_letter_failures_total",
                               "tries to send the correlate worker's dead letters that the broker did not acknowledge: "
                               "said in the log, tried again; no offset is committed past them meanwhile")
DEAD_LETTERS_PENDING = Gauge("firstfault_correlate_dead_letters_pending",
                             "dead letters of the correlate worker the broker has not acknowledged yet (their records "
                             "hold their partitions' commits)")
PAUSED_PARTITIONS = Gauge("firstfault_correlate_paused_partitions",
                          "fleet.events partitions the correlate worker does not fetch while 50,000 records wait "
                          "behind their dead letters (fetched again once the broker takes them)")
HEALTHY = Gauge("firstfault_correlate_healthy", "1 while the correlate worker's steps succeed and its incidents are "
                "stored, 0 while not (its /healthz says why)")
REBALANCES = Counter("firstfault_correlate_rebalances_total",
                     "assignments a correlate worker set up (each rebuilds its state from the safe offsets); "
                     "/healthz counts them as rebalances")
FACTS_READ_BACK_FAILURES = Counter("firstfault_correlate_facts_read_back_failures_total",
                                   "lake reads of the link samples and topology facts of hosts a correlate worker "
                                   "began to see that failed: said in the log, tried again; correlation goes on")

log = logging.getLogger("firstfault.correlate")


class StepGuard:
    """Runs ``correlator.step`` so that a step that raises (a defect, or input nobody foresaw) does not stop its
    process: it is logged with its traceback (``error_code`` ``correlate_failed``), counted
    (``firstfault_correlate_step_failures_total``) and kept as ``last_error`` for ``/healthz`` until a step
    succeeds. A derived signature without what the correlator read of every signature made every step raise, and
    ``firstfault run`` and ``correlate`` crash-looped on their batch, ingest stopped with them (a break-it pass).
    The events stay where they were (the lake; the correlator's state): the next step tries them again."""

    def __init__(self) -> None:
        self.failures = 0
        self.last_error: str | None = None
        self._said_at = 0.0

    def __call__(self, correlator: StreamCorrelator, now_us: int, flush: bool = False) -> list[dict[str, Any]]:
        """``correlator.step(now_us=…, flush=…)``'s incidents, or ``[]`` when it raised."""
        try:
            out = correlator.step(now_us=now_us, flush=flush)
        except Exception as e:  # noqa: BLE001 — see the class doc: said, counted, tried again
            self.failures += 1
            STEP_FAILURES.inc()
            said = f"{type(e).__name__}: {e}"[:500]
            if said != self.last_error or time.monotonic() - self._said_at >= 60:  # its traceback once, then a
                # reminder a minute: a tick a second would fill the log
                self._said_at = time.monotonic()
                log.error("correlator step failed (%s, %d so far); the events stay stored and the next step tries "
                          "again", said, self.failures, exc_info=said != self.last_error,
                          extra={"stage": "correlate", "error_code": "correlate_failed"})
            self.last_error = said
            return []
        if self.last_error is not None:
            log.warning("correlator steps succeed again after %d failures", self.failures)
        self.last_error = None
        return out


def add_counted(correlator: StreamCorrelator, events: pa.Table, *args: Any, **kwargs: Any) -> int:
    """``correlator.add(events, *args, **kwargs)``, counted: its events too late to use (what it returns) and those
    it found stamped in the future (``future_events`` it added), the latter said in the log, one line per batch
    that had any."""
    before = correlator.future_events
    late = correlator.add(events, *args, **kwargs)
    LATE.inc(late)
    future = correlator.future_events - before
    if future:
        FUTURE.inc(future)
        log.warning("%d event(s) stamped more than %d s ahead of their Kafka append time (a wrong clock or a garbled "
                    "stamp): kept, but not moving their host's watermark", future, correlator.future_us() // 1_000_000,
                    extra={"stage": "correlate", "error_code": "future_event"})
    return late
