"""Local files as input: the ``diagnose`` edge of the ingest path.

PATH is a file or a directory (every regular file under it, sorted). Each
file may hold raw lines or NDJSON envelopes, compressed (gzip, zstd) or not
(DESIGN.md). Event ids come from the file's name relative to the argument,
a digest of its content and the line number: the same file gives the same ids
wherever it lies, and two different files named alike do not collide.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from ingest.decode import Decoded, Reject, decode_file, path_text

#: what standard input is saved as (``diagnose -``: ``<short host name>.stdin``): its events' origins are
#: ``file:<host>.stdin@…``, and what is said of their times is "when standard input was read", not a file's
STDIN_SUFFIX = ".stdin"


def from_stdin(origin: str) -> bool:
    """Whether an event's ``origin`` is of standard input saved by ``diagnose -`` (:data:`STDIN_SUFFIX`)."""
    return origin.startswith("file:") and f"{STDIN_SUFFIX}@" in origin


#: the name endings of notes and configuration files (a write-up, a ticket, a case's expected.yaml): under a folder
#: they are not read, as logs they were hosts named after the file ("expected", "source") with incidents of the lines
#: they quote (a fresh user's trial); named as files they are read
NOTE_SUFFIXES = frozenset({".md", ".markdown", ".rst", ".adoc", ".yaml", ".yml", ".toml"})


def _note(name: str) -> bool:
    """A notes or configuration file's name (:data:`NOTE_SUFFIXES`), compressed or not (``expected.yaml.gz``)."""
    stem, dot, ext = name.lower().rpartition(".")
    if dot and ext in ("gz", "zst", "zstd", "bz2", "xz"):
        name = stem
    return Path(name).suffix.lower() in NOTE_SUFFIXES


def walk(paths: Iterable[Path], others: list[Path] | None = None,
         same: list[tuple[Path, Path]] | None = None,
         unlisted: list[tuple[Path, str]] | None = None,
         notes: list[Path] | None = None,
         hidden: list[tuple[Path, Path]] | None = None) -> Iterator[tuple[Path, str]]:
    """(file, name used in event ids) for every regular file under ``paths``; names that are not UTF-8 have
    their other bytes escaped (``decode.path_text``). ``others``, when given, gets the entries under a folder
    that are neither a regular file nor a folder (a FIFO, a socket, a device, a broken link): not read.
    ``unlisted``, when given, gets the folders (a folder given too) that cannot be listed and the entries that cannot
    be looked at, with the system's reason (``Permission denied``): their files were left out silently, or a folder
    that can be listed but not searched raised (break-it passes). Under a folder, hidden files, the files under a
    hidden folder and notes or configuration files (:data:`NOTE_SUFFIXES`) are not read; ``notes``, when given, gets
    the latter, ``hidden``, when given, the former as (folder given, file): unsaid, a job folder's logs under
    ``.cache/`` were "no files found", their Xid left out (a break-it pass).

    A file is given once: a symbolic or hard link to a file walked already (``current.log -> node01.log`` in the
    same folder; under a folder, links come after the regular files), or a file named twice, is not read again —
    its lines were counted twice, as two files' — and ``same``, when given, gets (that path, the path read).

    Raises ``FileNotFoundError`` for a path that does not exist.
    """
    seen: dict[tuple[int, int], Path] = {}

    def first(f: Path) -> bool:
        try:
            st = f.stat()
        except OSError:  # gone since the listing: read (and said gone) as any other (``decode_paths``)
            return True
        key = (st.st_dev, st.st_ino)
        if key in seen:
            if same is not None:
                same.append((f, seen[key]))
            return False
        seen[key] = f
        return True

    for p in paths:
        if not p.exists():
            raise FileNotFoundError(f"no such file or directory: {p}")
        if p.is_file():
            if first(p):
                yield p, path_text(p.name)
            continue
        files = []
        # the folder named itself: "no files found" said nothing of why (a break-it pass)
        if unlisted is not None and (why := _unlistable(p)):
            unlisted.append((p, why))
        for x in p.rglob("*"):
            # a hidden file, or any file under a hidden folder: `diagnose .` in a job's folder read the lake
            # `firstfault ingest` had made there (.firstfault/lake: 30 Parquet parts, each said skipped) and .git's
            # objects (a fresh user's trial)
            if any(part.startswith(".") for part in x.relative_to(p).parts):
                if hidden is not None and _regular(x):
                    hidden.append((p, x))
                continue
            try:
                is_file, is_dir = x.is_file(), x.is_dir()
            except OSError as e:  # a folder that can be listed but not searched (chmod -R 644): a traceback before
                if unlisted is not None:
                    unlisted.append((x, e.strerror or str(e)))
                continue
            if is_file:
                if _note(x.name):
                    if notes is not None:
                        notes.append(x)
                    continue
                files.append(x)
            elif not is_dir:
                if others is not None:
                    others.append(x)
            elif unlisted is not None and (why := _unlistable(x)):
                unlisted.append((x, why))
        for f in sorted(files, key=lambda f: (f.is_symlink(), f)):  # the file itself before a link to it
            if first(f):
                yield f, path_text(f"{p.name}/{f.relative_to(p).as_posix()}")


def _regular(path: Path) -> bool:
    """Whether ``path`` is a regular file (or a link to one); False when it cannot be looked at."""
    try:
        return path.is_file()
    except OSError:
        return False


def hidden_roots(files: Iterable[tuple[Path, Path]]) -> dict[Path, int]:
    """The hidden entries :func:`walk` left out (its ``hidden``: (folder given, file under it)), each as the path of
    the first hidden file or folder on the file's way from the folder (``job/.git``, ``job/.node03.log``) -> how many of
    the files it holds, in path order."""
    out: dict[Path, int] = {}
    for folder, f in files:
        parts = f.relative_to(folder).parts
        first = next(i for i, part in enumerate(parts) if part.startswith("."))
        root = folder.joinpath(*parts[:first + 1])
        out[root] = out.get(root, 0) + 1
    return dict(sorted(out.items()))


def _unlistable(folder: Path) -> str | None:
    """Why ``folder`` cannot be listed (the system's words: ``Permission denied``), or None when it can."""
    try:
        with os.scandir(folder):
            return None
    except OSError as e:
        return e.strerror or str(e)


def unreadable(rel: str, e: OSError) -> Reject:
    """The reject of a file ``rel`` (its name in event ids) that cannot be read: origin ``file:<rel>``, ``error_code``
    ``decode_error``, the system's reason (``Permission denied``)."""
    return Reject(f"file:{rel}", f"{rel} cannot be read: {e.strerror or e}", b"", "decode_error")


def content_digest(f: Path, limit: int = 1 << 20) -> str:
    """8 hex characters of BLAKE2b over the file's size and first MiB."""
    h = hashlib.blake2b(digest_size=4)
    h.update(str(f.stat().st_size).encode())
    with open(f, "rb") as fh:
        h.update(fh.read(limit))
    return h.hexdigest()


def decode_paths(paths: Iterable[Path], progress: Callable[[int, int, str], None] | None = None) -> Decoded:
    """Decode every file under ``paths`` into one batch of segments (and rejects).

    A file found by the walk that is gone when it is read (a log rotated or removed meanwhile), or that cannot be
    read (``Permission denied``: it ended the whole run, exit 1, the readable files not diagnosed; a break-it pass),
    is a reject (origin ``file:<name>``, ``error_code`` ``decode_error``), not the end of the others.
    ``progress(done, total, name)`` is called after each file."""
    out = Decoded()
    files = list(walk(paths))
    for n, (f, rel) in enumerate(files, 1):
        try:
            d = decode_file(f, relname=f"{rel}@{content_digest(f)}")
        except FileNotFoundError:
            d = Decoded(rejects=[Reject(f"file:{rel}", f"{rel} was gone before it was read (removed or rotated "
                                                       "meanwhile)", b"", "decode_error")])
        except OSError as e:
            d = Decoded(rejects=[unreadable(rel, e)])
        if progress is not None:
            progress(n, len(files), rel)
        out.add(d)
    return out
