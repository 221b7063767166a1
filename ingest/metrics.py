"""Prometheus metrics of the ingest worker (exposed by the API's ``/metrics``).

Names follow Prometheus conventions: ``_total`` counters, ``_seconds``
histograms, base units. Labels are bounded: topic/partition, event kind,
signature family (the catalog file's family, e.g. ``xid``, ``fabric``, ``torch``; ``other`` for
events no signature file defines, such as counter events), error code.
"""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

LINES = Counter("firstfault_lines_total", "lines read from Kafka")
BYTES = Counter("firstfault_bytes_total", "bytes of message values read from Kafka")
RECORDS = Counter("firstfault_records_total", "Kafka records consumed", ["topic"])
EVENTS = Counter("firstfault_events_total", "events stored", ["kind"])
MATCHES = Counter("firstfault_signature_matches_total", "events per signature family", ["family"])
REJECTS = Counter("firstfault_rejects_total", "records sent to the dead-letter topic", ["error_code"])
BATCH_SECONDS = Histogram("firstfault_batch_seconds", "decode + match + extract + store time per batch",
                          buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30))
LAG = Gauge("firstfault_consumer_lag_records", "records behind the end of the partition", ["topic", "partition"])
HEALTHY = Gauge("firstfault_ingest_healthy", "1 while ingest stores and commits, 0 while it cannot")
STORE_FAILURES = Counter("firstfault_store_failures_total", "batches that could not be stored or committed")
FALLBACKS = Counter("firstfault_batch_fallbacks_total",
                    "batches the pipeline raised on, processed record by record (the failing records dead-lettered)")
