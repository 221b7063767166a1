"""Prometheus metrics of the streaming correlator's input (exposed by the API's ``/metrics``; ``firstfault run`` and
``firstfault correlate`` count them), as ``ingest.metrics`` for the ingest worker."""

from __future__ import annotations

import logging
from typing import Any

import pyarrow as pa
from prometheus_client import Counter

from correlate.stream import StreamCorrelator

LATE = Counter("firstfault_late_events_total", "events too late to change incidents")
FUTURE = Counter("firstfault_future_events_total", "events stamped further ahead of their Kafka append time than "
                 "any clock skew allows: correlated, but not moving their host's watermark")

log = logging.getLogger("firstfault.correlate")


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
