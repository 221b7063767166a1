"""``diagnose`` as a function: local files -> (batch of events, incidents). The CLI and the tests call it."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from correlate.correlator import Symptom, correlate, correlation_settings
from ingest.counters import with_counter_events
from ingest.decode import Decoded
from ingest.files import decode_paths
from ingest.pipeline import Batch, Pipeline
from schemas.settings import Settings


def diagnose_paths(paths: Iterable[Path], settings: Settings, *, symptoms: list[Symptom] | None = None,
                   pipeline: Pipeline | None = None, now_us: int | None = None,
                   progress: Callable[[int, int, str], None] | None = None
                   ) -> tuple[Decoded, Batch, list[dict[str, Any]]]:
    """Decode, match, extract and correlate files. Raises ``FileNotFoundError`` for a missing path.

    ``progress(done, total, name)`` is called after each file is read."""
    decoded = decode_paths(list(paths), progress=progress)
    pipe = pipeline or Pipeline(tz=settings.tzinfo())
    batch = pipe.run(decoded)
    batch.events = with_counter_events(batch.events, batch.link_samples, pipe.catalog)
    incidents = correlate(batch.events, batch.link_samples, batch.topology, settings=correlation_settings(settings),
                          symptoms=symptoms or [], now_us=now_us or int(time.time() * 1_000_000))
    return decoded, batch, incidents
