"""Local files as input: the ``diagnose`` edge of the ingest path.

PATH is a file or a directory (every regular file under it, sorted). Each
file may hold raw lines or NDJSON envelopes, compressed (gzip, zstd) or not
(DESIGN.md). Event ids come from the file's path relative to the argument's
parent plus the line number, so the same files give the same ids anywhere.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

from ingest.decode import Decoded, decode_file


def walk(paths: Iterable[Path]) -> Iterator[tuple[Path, str]]:
    """(file, name used in event ids) for every regular file under ``paths``.

    Raises ``FileNotFoundError`` for a path that does not exist.
    """
    for p in paths:
        if not p.exists():
            raise FileNotFoundError(f"no such file or directory: {p}")
        if p.is_file():
            yield p, p.name
            continue
        for f in sorted(x for x in p.rglob("*") if x.is_file() and not x.name.startswith(".")):
            yield f, f"{p.name}/{f.relative_to(p).as_posix()}"


def decode_paths(paths: Iterable[Path]) -> Decoded:
    """Decode every file under ``paths`` into one batch of segments (and rejects)."""
    out = Decoded()
    for f, rel in walk(paths):
        d = decode_file(f, relname=rel)
        out.segments.extend(d.segments)
        out.rejects.extend(d.rejects)
    return out
