"""Python's cyclic garbage collector, paused around the pure stages that allocate many objects.

Decoding, the pipeline and the correlator create hundreds of thousands of
objects per batch (Kafka records, segments, events, graph nodes) that hold no
reference cycles: reference counting frees every one of them. With the
collector's default thresholds each 700 allocations start a collection, and
objects that live for a batch reach the oldest generation, whose collections
walk every live object of the process: measured on 1,000,000 one-line Kafka
records (20,000 per batch), 3.7 of 17.1 CPU seconds went to the collector
(``gc.callbacks``), and ``correlate()`` over 6,042 events took 0.36 - 0.43 s
instead of 0.53 - 0.59 s with it paused (benchmarks/README.md, "What changed
for speed" and "The correlator").

:func:`gc_paused` turns the automatic collector off for the duration of a
call, process-wide (the collector is global), and back on when the last
paused call in any thread returns. Cycles created meanwhile are collected
after: only their reclamation is delayed, never skipped.

A paused block that returns many live objects (a chunk's segments) pays for
them when it ends: the allocations counted meanwhile start a collection that
walks them all. The ingest worker therefore keeps the collector paused for a
whole batch, from fetching it to its lake writes, and frees the batch's records
and segments before it resumes (``IngestWorker.run``; 1,000,000 one-line
records: worker CPU 10.9 - 11.8 -> 9.6 - 10.4 s). While a batch is held
through an outage (retries, a broker that does not acknowledge),
:func:`gc_resumed` turns the collector back on for the wait.

Outside those calls a worker still allocates per Kafka record (aiokafka's
records, buffered until their batch is taken): :func:`tune_for_worker` makes
the two older generations' collections rarer in a worker process (``firstfault
run``, ``ingest``, ``correlate``), and sets the allocator's thresholds there
(``ingest.allocator``).
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_depth = 0
_was_enabled = False

#: collector thresholds of a worker process: Python's default is (700, 10, 10). The youngest generation is
#: collected as often as before; the middle one every 50 of its collections (35,000 allocations), the oldest
#: every 50 of the middle one's. On 1,000,000 one-line Kafka records (80,000 per batch): collector time
#: 4.2 -> 1.7 s, worker CPU 14.1 -> 10.7 s, peak RSS 453 -> 482 MB (benchmarks/README.md).
WORKER_THRESHOLDS = (700, 50, 50)


def tune_for_worker() -> None:
    """Set :data:`WORKER_THRESHOLDS` for this process (a long-running worker: the objects of a batch live for
    the batch, and each collection of the older generations walks all of them), and keep the memory a batch
    frees for the next one (:func:`ingest.allocator.keep_freed_memory`: glibc's mmap and trim thresholds)."""
    from ingest.allocator import keep_freed_memory

    gc.set_threshold(*WORKER_THRESHOLDS)
    keep_freed_memory()


@contextmanager
def gc_paused() -> Iterator[None]:
    """Automatic garbage collection off inside the block (nested and concurrent blocks allowed: the last
    one to leave restores the state the first one found). Also a decorator: ``@gc_paused()``."""
    global _depth, _was_enabled
    with _lock:
        if _depth == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _was_enabled:
                gc.enable()


@contextmanager
def gc_resumed() -> Iterator[None]:
    """Inside paused blocks, the collector back on for the duration of a wait of unknown length (a broker or
    lake outage while a batch is held): the process keeps collecting whatever it allocates meanwhile. Outside
    any paused block, or with the collector switched off before the first one, it changes nothing."""
    with _lock:
        if _depth > 0 and _was_enabled:
            gc.enable()
    try:
        yield
    finally:
        with _lock:
            if _depth > 0 and _was_enabled:
                gc.disable()
