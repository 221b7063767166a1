"""Which signatures hit which lines: one Hyperscan database, one scan per batch.

Lines are scanned as one newline-joined buffer (``HS_FLAG_MULTILINE``, so
``^``/``$`` bind to line ends); a match's end offset is mapped back to its
line's byte span, and lines are numbered by counting newlines between
consecutive hit lines. Hyperscan has no capture
groups, so this stage only answers *which* entry hit *which* line; fields are
read later from the hit lines alone (``ingest.extract``).

:class:`ReferenceMatcher` is the slow, obvious oracle (Python ``re`` over every
line, every signature); the tests hold the two to the same answers.
"""

from __future__ import annotations

import hashlib
import os
import platform
import re
import stat
import tempfile
import threading
from functools import lru_cache
from importlib.metadata import version as _dist_version
from pathlib import Path
from typing import Protocol

import hyperscan
import numpy as np

from ingest.catalog import Catalog, CatalogError, Compiled, to_hyperscan
from ingest.decode import MAX_LINE_BYTES

#: a pattern that begins with a class repeated without bound, anchored at a line's start, a word boundary or a
#: character outside the class, maybe as a group of its own: ``^[^\S\n]+Link …`` (``nvidia-smi``'s indented rows),
#: ``(?:^|[^\w-])(?P<driver>[\w-]+) <bus id>: AER`` (the kernel's PCIe AER lines, whose driver name comes first)
_LEADING_RUN = re.compile(r"^(?:\^|\\b|\(\?:\^\|\[\^(?:\\.|[^\]\\])*\]\))"  # the anchor
                          r"(?P<group>\((?:\?P<\w+>|\?:))?\[(?:\\.|[^\]\\])*\]\+(?(group)\))"  # [class]+
                          r"(?![+*?{])")


def prefilter(pattern: str) -> str | None:
    """The Hyperscan form of a pattern that begins with a run of a class (:data:`_LEADING_RUN`: ``^[…]+``,
    ``\\b(?P<name>[…]+)``, ``(?:^|[^…])(?P<name>[…]+)``): the rest, unanchored, a superset whose hits
    :class:`HyperscanMatcher` checks with the pattern's own regex; None for other patterns.

    With ``nvml.fabric_unhealthy``'s ``^[^\\S\\n]+(?:…Route Recovery in progress…)`` in the same database,
    Hyperscan 5.4 (python-hyperscan 0.9.1) missed ``\\tLink 0: 25 GB/s`` (``nvml.nvlink_active``) after some lines
    (21 or more other characters, 2,000 bytes into a buffer) where ``re`` matched it: found by
    ``tests/test_catalog.py``'s comparison of the two on a generated buffer. Bounding the run did not avoid it;
    dropping the anchored run does, and these lines are few (``nvidia-smi`` rows), so checking them costs little.

    A leading word run (the driver's name before a PCIe AER line's bus id) gives Hyperscan no literal to start from:
    it tries the run at every word of every line. The five AER patterns that begin so cost a third of the whole
    database's scan of the benchmark's fleet mix (``benchmarks/README.md``, twenty-seventh stop); without the run
    they start at the bus id's ``:`` and ``: ``, and the lines they hit are few. Their run follows ``(?:^|[^\\w-])``,
    not ``\\b``: the check's regex then starts it only where a run begins, in linear time (from every word
    boundary of ``a-a-a-…`` it was quadratic: 69 s for a 60 KB line, a break-it pass)."""
    m = _LEADING_RUN.match(pattern)
    return to_hyperscan(pattern[m.end():]) if m else None


#: bytes after a prefiltered match's end that its check of a long line reads too (a pattern's lookahead or ``\b``
#: looks past its end), and the most windows it reads of one long line
_AFTER_END = 64
_MAX_WINDOWS = 64

#: line index -> signature indexes that hit it (sorted)
Hits = dict[int, list[int]]
#: one hit line: (first byte, end byte (exclusive: its newline or the end), signature indexes sorted)
LineHit = tuple[int, int, list[int]]


def cache_dir() -> Path:
    """Where compiled Hyperscan databases are kept between processes: ``$XDG_CACHE_HOME/firstfault/hyperscan``
    (``~/.cache/firstfault/hyperscan`` when ``XDG_CACHE_HOME`` is unset or not absolute: the XDG Base Directory
    specification)."""
    base = os.environ.get("XDG_CACHE_HOME", "")
    root = Path(base) if os.path.isabs(base) else Path.home() / ".cache"
    return root / "firstfault" / "hyperscan"


@lru_cache(maxsize=1)
def _platform_key() -> str:
    """What a serialized database depends on besides its expressions: the Hyperscan build and this CPU (Hyperscan
    compiles for the instruction sets it finds: a database from another CPU may be refused or slower); read once per
    process."""
    flags = ""
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as f:
            flags = next((line for line in f if line.startswith("flags")), "")
    except OSError:
        pass
    return f"{_dist_version('hyperscan')}|{platform.machine()}|{platform.processor()}|{flags.strip()}"


def cache_file(expressions: list[bytes], flags: list[int], mode: int = hyperscan.HS_MODE_BLOCK) -> Path:
    """The file of :func:`cache_dir` that keeps the database :func:`compile_database` compiles of these arguments:
    named by a SHA-256 of them and of :func:`_platform_key`."""
    key = hashlib.sha256(repr((mode, expressions, flags, _platform_key())).encode()).hexdigest()
    return cache_dir() / f"{key}.hsdb"


def compile_database(expressions: list[bytes], flags: list[int], mode: int = hyperscan.HS_MODE_BLOCK
                     ) -> hyperscan.Database:
    """A Hyperscan database of ``expressions`` (ids 0 … n−1) with their ``flags``, compiled once per machine:
    compiling the catalog takes ~1 s, loading it ~1 ms (``hyperscan.dumpb``/``loadb``), and every ``diagnose``,
    worker and API process starts with it.

    The file (:func:`cache_file`) is named by a SHA-256 of the mode, the expressions, the flags and
    :func:`_platform_key`, and holds the SHA-256 of the serialized database and that name's 32 bytes before it (a
    database of other expressions under this name, whole and checked, matched nothing: a break-it pass): a file that
    is short, is no regular file (:func:`_read_cached`), does not check out or that Hyperscan refuses is compiled
    again and replaced (written to a temporary file and renamed, so
    processes starting together never read half a file); the folder keeps the :data:`CACHE_KEEP` databases last used
    (:func:`_prune`). A cache folder that cannot be made or written costs only the
    compile. Raises ``hyperscan.error`` when an expression does not compile."""
    path = cache_file(expressions, flags, mode)
    key = bytes.fromhex(path.stem)
    blob = _read_cached(path)
    if blob is not None and len(blob) > 64 and blob[32:64] == key and hashlib.sha256(blob[64:]).digest() == blob[:32]:
        try:
            db = hyperscan.loadb(blob[64:], mode)
        except hyperscan.error:
            db = None
        if db is not None:
            try:
                os.utime(path)  # in use: the newest are kept (_prune)
            except OSError:
                pass  # a file this process may not touch is still read
            return db
    db = hyperscan.Database(mode=mode)
    db.compile(expressions=expressions, ids=list(range(len(expressions))), elements=len(expressions), flags=flags)
    try:
        body = hyperscan.dumpb(db)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(hashlib.sha256(body).digest() + key + body)
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
        _prune(path.parent)
    except (OSError, hyperscan.error):
        pass  # a read-only home, a full disk: compiled again next time
    return db


#: the largest cached database read (the catalog's is ~2 MB)
CACHE_MAX_BYTES = 64 << 20


def _read_cached(path: Path) -> bytes | None:
    """The bytes of a cached database file, or None: no such file, not a regular file (a FIFO blocked the reader, a
    link to /dev/zero filled memory: a break-it pass), a symbolic link, or larger than :data:`CACHE_MAX_BYTES`."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > CACHE_MAX_BYTES:
            return None
        with os.fdopen(fd, "rb", closefd=False) as f:
            return f.read(CACHE_MAX_BYTES + 1)
    except OSError:
        return None
    finally:
        os.close(fd)


#: compiled databases kept (the catalog's is ~2 MB; an edited catalog, or a test's, is another file)
CACHE_KEEP = 16


def _prune(folder: Path) -> None:
    """Remove all but the :data:`CACHE_KEEP` databases of ``folder`` last written or loaded (a file another process
    removes first is no error)."""
    files = []
    for p in folder.glob("*.hsdb"):
        try:
            files.append((p.stat().st_mtime, p))
        except OSError:
            pass
    for _, p in sorted(files, reverse=True)[CACHE_KEEP:]:
        p.unlink(missing_ok=True)


class Matcher(Protocol):
    def scan(self, buf: bytes) -> Hits: ...


def newline_offsets(buf: bytes) -> np.ndarray:
    """Byte offsets of every ``\\n`` in ``buf`` (int64 array)."""
    return np.flatnonzero(np.frombuffer(buf, dtype=np.uint8) == 10)


class HyperscanMatcher:
    """Compiled once per catalog; :meth:`scan` is safe to call repeatedly, from any thread."""

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        exprs = catalog.hyperscan_expressions()
        #: signature -> its entry, for the signatures scanned by a superset (:func:`prefilter`; a pattern anchored
        #: at the line's start without its ``^``, which reads its message behind a collector's stamp too:
        #: :meth:`ingest.catalog.Compiled.search`)
        self._check: dict[int, Compiled] = {}
        for c in catalog.entries:
            if (loose := prefilter(c.sig.pattern)) is not None:
                exprs[c.index] = loose.encode()
                self._check[c.index] = c
            elif c.at_line_start:
                exprs[c.index] = to_hyperscan(c.sig.pattern[1:]).encode()
                self._check[c.index] = c
        try:
            self._db = compile_database(exprs, [hyperscan.HS_FLAG_MULTILINE] * len(exprs))
        except hyperscan.error as e:  # name the entry that failed
            for c in catalog.entries:
                try:
                    hyperscan.Database().compile(expressions=[to_hyperscan(c.sig.pattern).encode()])
                except hyperscan.error as e1:
                    raise CatalogError(f"signature {c.sig.id}: Hyperscan cannot compile its pattern: {e1}") from e
            raise CatalogError(f"Hyperscan cannot compile the catalog: {e}") from e
        self._scratches = threading.local()  # a scratch serves one scan at a time: one per thread
        self._som: dict[int, hyperscan.Database | bool] = {}  # signature -> its start-tracking database

    @property
    def _scratch(self) -> hyperscan.Scratch:
        s = getattr(self._scratches, "s", None)
        if s is None:
            s = self._scratches.s = hyperscan.Scratch(self._db)
        return s

    def scan(self, buf: bytes) -> Hits:
        """Scan a newline-joined buffer; return hits per line index."""
        hits: Hits = {}
        line = pos = 0  # `line` is the index of the line that starts at byte `pos`
        for start, _, sigs in self.hit_lines(buf):
            line += buf.count(b"\n", pos, start)
            pos = start
            hits[line] = sigs
        return hits

    def hit_lines(self, buf: bytes) -> list[LineHit]:
        """Scan a newline-joined buffer; return the hit lines in order, as byte spans.

        The match ends are sorted, and each new hit line is found with
        ``rfind``/``find`` around its first match: no per-line work and no array
        of every line's offset. Numbering the lines is left to the caller, who
        can do it in the same pass as whatever else it counts.
        """
        if not buf:
            return []
        ends: list[tuple[int, int]] = []
        add = ends.append

        def on_match(sig: int, _from: int, to: int, _flags: int, _ctx: object) -> None:
            add((to, sig))

        self._db.scan(buf, match_event_handler=on_match, scratch=self._scratch)
        if not ends:
            return []
        ends.sort()
        out: list[LineHit] = []
        end = -1
        sigs: list[int] = []
        check = self._check
        match_ends: dict[tuple[int, int], list[int]] = {}  # (hit line, prefiltered signature) -> its matches' ends
        for to, sig in ends:
            # a match ending at `to` (exclusive) lies on the line holding byte to-1; patterns
            # never match a newline (see ingest.catalog.to_hyperscan), so that byte is not one.
            p = to - 1
            if p >= end:
                end = buf.find(b"\n", p)
                if end < 0:
                    end = len(buf)
                sigs = [sig]
                out.append((buf.rfind(b"\n", 0, p) + 1, end, sigs))
            elif sig not in sigs:
                sigs.append(sig)
            if check and sig in check:
                match_ends.setdefault((len(out) - 1, sig), []).append(to)
        for hit in out:
            hit[2].sort()
        if match_ends:
            out = self._checked(buf, out, match_ends)
        return out

    def _checked(self, buf: bytes, out: list[LineHit], match_ends: dict[tuple[int, int], list[int]]
                 ) -> list[LineHit]:
        """``out`` without the hits of prefiltered signatures (:func:`prefilter`) whose own regex does not match
        their line (decoded as :class:`ReferenceMatcher` decodes it). A line of at most ``MAX_LINE_BYTES`` is
        searched whole; a longer one in windows of that size ending a little after each of the superset's match
        ends there (the pattern's own match ends where the superset's does; at most ``_MAX_WINDOWS``), not whole:
        a backtracking pattern over a 10 MB line could run for hours."""
        check = self._check
        emptied = False
        for (k, s), ends in match_ends.items():  # only the lines such a signature hit, not every hit line
            start, end, sigs = out[k]
            if not self._holds(check[s], buf, start, end, ends):
                sigs.remove(s)
                emptied = emptied or not sigs
        return [hit for hit in out if hit[2]] if emptied else out

    @staticmethod
    def _holds(c: Compiled, buf: bytes, start: int, end: int, ends: list[int]) -> bool:
        """Whether ``c`` matches the line ``buf[start:end]`` (:meth:`_checked`; a pattern anchored at the line's
        start also behind the line's prefixes, :meth:`ingest.catalog.Compiled.search`, when the line is read
        whole: a window of a longer line has no prefix in front)."""
        if end - start <= MAX_LINE_BYTES:
            return c.search(buf[start:end].decode("utf-8", "replace")) is not None
        rx = c.rx
        last = -1
        for to in ends[:_MAX_WINDOWS]:
            if to <= last:  # within the window just read
                continue
            a, last = max(start, to - MAX_LINE_BYTES), min(end, to + _AFTER_END)
            if rx.search(buf[a:last].decode("utf-8", "replace")):
                return True
        return False

    def first_match(self, line: bytes, sig: int) -> tuple[int | None, int] | None:
        """``(start, end)`` byte offsets of signature ``sig``'s first match in ``line`` (one line, no
        newline), or ``None`` when it does not match; ``start`` is ``None`` when Hyperscan cannot track
        it for this pattern.

        It locates a hit on a line too long to read whole (``ingest.pipeline``), at the cost of one more
        scan of that line with a one-pattern database that tracks where matches start (compiled on first
        use, per signature: start tracking costs memory and speed the batch scan does not pay).
        """
        db = self._som.get(sig)
        if db is None:
            db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
            expr = to_hyperscan(self.catalog.entries[sig].sig.pattern).encode()
            try:
                db.compile(expressions=[expr], ids=[sig], elements=1,
                           flags=[hyperscan.HS_FLAG_MULTILINE | hyperscan.HS_FLAG_SOM_LEFTMOST])
            except hyperscan.error:  # some patterns cannot track their start: the end alone, from the main db
                db = False
            self._som[sig] = db
        found: list[tuple[int | None, int]] = []

        def on_match(s: int, start: int, end: int, _flags: int, _ctx: object) -> bool:
            if s != sig:
                return False
            found.append((start if db else None, end))
            return True  # the first match is all we need: halt the scan

        try:
            (db or self._db).scan(line, match_event_handler=on_match,
                                  scratch=self._som_scratch(sig) if db else self._scratch)
        except hyperscan.ScanTerminated:
            pass
        return found[0] if found else None

    def _som_scratch(self, sig: int) -> hyperscan.Scratch:
        scratches = self._scratches.__dict__.setdefault("som", {})
        s = scratches.get(sig)
        if s is None:
            s = scratches[sig] = hyperscan.Scratch(self._som[sig])
        return s


def hit_lines(matcher: Matcher, buf: bytes) -> list[LineHit]:
    """Hit lines as byte spans, from any matcher (Hyperscan's own fast path when it has one)."""
    fast = getattr(matcher, "hit_lines", None)
    if fast is not None:
        return fast(buf)
    hits = matcher.scan(buf)
    if not hits:
        return []
    nl = newline_offsets(buf)
    out = []
    for line in sorted(hits):
        a = int(nl[line - 1]) + 1 if line else 0
        b = int(nl[line]) if line < len(nl) else len(buf)
        out.append((a, b, hits[line]))
    return out


class ReferenceMatcher:
    """Every signature's Python regex on every line. Slow on purpose: the oracle."""

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog

    def scan(self, buf: bytes) -> Hits:
        hits: Hits = {}
        for i, raw in enumerate(buf.split(b"\n")):
            line = raw.decode("utf-8", "replace")
            found = [c.index for c in self.catalog.entries if c.search(line)]
            if found:
                hits[i] = found
        return hits


def best(catalog: Catalog, sigs: list[int]) -> int:
    """The signature that wins a line: highest priority, then catalog order."""
    return max(sigs, key=lambda i: (catalog.entries[i].sig.priority, -i))
