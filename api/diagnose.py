"""``diagnose`` as a function: local files -> (batch of events, incidents). The CLI and the tests call it."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from correlate.correlator import Symptom, correlate, correlation_settings
from ingest.counters import with_counter_events
from ingest.decode import Decoded, Reject, decode_file
from ingest.files import content_digest, decode_paths, walk
from ingest.pipeline import Batch, Pipeline
from schemas.settings import Settings

log = logging.getLogger("firstfault.diagnose")


def diagnose_paths(paths: Iterable[Path], settings: Settings, *, symptoms: list[Symptom] | None = None,
                   pipeline: Pipeline | None = None, now_us: int | None = None,
                   progress: Callable[[int, int, str], None] | None = None
                   ) -> tuple[Decoded, Batch, list[dict[str, Any]]]:
    """Decode, match, extract and correlate files. Raises ``FileNotFoundError`` for a missing path.

    ``progress(done, total, name)`` is called after each file is read. If reading or matching the files
    together raises (a bug, or input nobody foresaw), each file is tried on its own: a file that fails
    becomes a reject in the returned ``Decoded`` (``error_code`` ``decode_error`` or ``pipeline_error``,
    the reason naming the exception) and the other files are diagnosed as usual."""
    paths = list(paths)
    pipe = pipeline or Pipeline(tz=settings.tzinfo())
    try:
        decoded = decode_paths(paths, progress=progress)
        batch = _run(pipe, decoded)
    except (FileNotFoundError, PermissionError, IsADirectoryError):
        raise  # the caller's mistake, not the input's: said as it is (exit code 1 or 2)
    except Exception as e:  # noqa: BLE001 — isolate the file(s) that fail; never lose the others
        log.info("reading the files together failed (%s: %s); trying each on its own", type(e).__name__, e)
        decoded, batch = _per_file(paths, pipe, progress)
    incidents = correlate(batch.events, batch.link_samples, batch.topology, settings=correlation_settings(settings),
                          symptoms=symptoms or [], now_us=now_us or int(time.time() * 1_000_000))
    return decoded, batch, incidents


def _run(pipe: Pipeline, decoded: Decoded) -> Batch:
    batch = pipe.run(decoded)
    batch.events = with_counter_events(batch.events, batch.link_samples, pipe.catalog)
    return batch


def _per_file(paths: list[Path], pipe: Pipeline, progress: Callable[[int, int, str], None] | None
              ) -> tuple[Decoded, Batch]:
    """Each file decoded and matched on its own to find those that raise; the others together."""
    good = Decoded()
    bad: list[Reject] = []
    files = list(walk(paths))
    for n, (f, rel) in enumerate(files, 1):
        origin = f"file:{rel}"
        try:
            d = decode_file(f, relname=f"{rel}@{content_digest(f)}")
        except (PermissionError, IsADirectoryError):
            raise
        except Exception as e:  # noqa: BLE001
            bad.append(Reject(origin, f"cannot read {rel}: {type(e).__name__}: {e}", b"", "decode_error"))
            continue
        finally:
            if progress is not None:
                progress(n, len(files), rel)
        try:
            pipe.run(d)
        except Exception as e:  # noqa: BLE001
            bad.append(Reject(origin, f"cannot match {rel}: {type(e).__name__}: {e}", b"", "pipeline_error"))
            continue
        good.segments.extend(d.segments)
        good.rejects.extend(d.rejects)
    for rj in bad:
        log.info("%s", rj.reason, extra={"stage": "diagnose", "error_code": rj.error_code})
    good.rejects.extend(bad)
    batch = _run(pipe, Decoded(segments=good.segments, rejects=list(good.rejects)))
    return good, batch
