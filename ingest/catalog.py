"""Load the signature catalog (``ingest/signatures/*.yaml`` plus the Xid/SXid CSVs).

The YAML files follow :mod:`schemas.catalog`; ``xid-catalog.csv`` and
``sxid-catalog.csv`` are copies of shared/reference/ (column meanings in
shared/reference/formats.md §13). Loading validates everything and raises
:class:`CatalogError` with the file and entry named.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any
from re import _parser as _re_parser  # the parser re.compile uses: literal_requirements reads its tree

import yaml
from pydantic import ValidationError

from ingest.prefix import parse_prefix
from schemas.catalog import CatalogFile, DerivedSignature, Signature, validation_message

CATALOG_DIR = Path(__file__).with_name("signatures")

# xid-catalog.csv severity (fleet view) -> event severity
_XID_SEVERITY = {"fatal": "critical", "error": "error", "warning": "warning", "info": "info"}
_SXID_SEVERITY = {"fatal": "critical", "non-fatal": "warning", "fatal-or-non-fatal": "error", "unknown": "warning"}


class CatalogError(ValueError):
    """The catalog is invalid; the message names the file and entry."""


@dataclass(frozen=True, slots=True)
class XidFact:
    """One row of xid-catalog.csv (NVIDIA's catalog plus public sources)."""

    xid: int
    name: str
    category: str
    nvlink_related: bool
    role: str
    severity: str  # event severity: critical/error/warning/info
    action: str
    source: str
    #: NVIDIA's own resolution buckets, "<action> / <action if it repeats>" (``nvidia_action``: ``RESET_GPU /
    #: INVESTIGATE_SW`` for Xid 119), from the Xid catalog page
    nvidia_action: str = ""


@dataclass(frozen=True, slots=True)
class SxidFact:
    """One row of sxid-catalog.csv (driver enum, FM user guide)."""

    sxid: int
    name: str
    fatal: str
    meaning: str
    severity: str
    action: str
    source: str


def required_literal(rx: re.Pattern[str]) -> str | None:
    """The longest run of plain characters that every match of ``rx`` contains, or None (no such run, or a
    case-insensitive pattern): the longest one-string requirement of :func:`literal_requirements`."""
    single = [need[0] for need in literal_requirements(rx) if len(need) == 1]
    return single[0] if single else None


def literal_requirements(rx: re.Pattern[str]) -> list[tuple[str, ...]]:
    """What every match of ``rx`` contains, as requirements: each is a tuple of strings, one of which every
    match holds, so a text that holds none of a requirement's strings has no match and need not be searched.

    Read from the pattern's parse tree (``re._parser``, the standard library's own regex parser): each run of
    plain characters in the top-level sequence is a requirement of one string (each top-level item of a
    pattern matches, in order), as are the runs of a group in that sequence (a group that is not repeated
    or optional matches once); an alternation there gives one requirement of the longest run of each branch,
    when every branch has one (``Ch(?:annel)? …|channel …``: ``("Ch", "channel ")``). Repeated, optional and
    lookaround items give none; a case-insensitive pattern or group gives none. One-string requirements come
    first, longest first, then the alternations."""
    if rx.flags & re.IGNORECASE:
        return []
    needs = _requirements(_re_parser.parse(rx.pattern, rx.flags))
    return sorted(needs, key=lambda need: (len(need) > 1, -min(map(len, need))))


def _other_needs(rx: re.Pattern[str], literal: str | None) -> tuple[tuple[str, ...], ...]:
    """``Compiled.extra_needs`` of an extra: its first three requirements besides ``literal`` whose strings
    have two characters or more (a one-character one, ``(`` or ``:``, is on nearly every line: checking it
    costs more than it saves)."""
    needs = [need for need in literal_requirements(rx) if need != (literal,) and min(map(len, need)) >= 2]
    return tuple(needs[:3])


def _requirements(items) -> list[tuple[str, ...]]:
    """:func:`literal_requirements` of one sequence of parse-tree items (unsorted)."""
    needs: list[tuple[str, ...]] = []
    run: list[str] = []
    for op, arg in [*items, (None, None)]:
        if op is _re_parser.LITERAL:
            run.append(chr(arg))
            continue
        if run:
            needs.append(("".join(run),))
            run = []
        if op is _re_parser.SUBPATTERN:
            _group, add_flags, _del_flags, inner = arg
            if not add_flags & re.IGNORECASE:
                needs.extend(_requirements(inner))
        elif op is _re_parser.BRANCH:
            longest = []
            for branch in arg[1]:
                single = [need[0] for need in _requirements(branch) if len(need) == 1]
                if not single:
                    break
                longest.append(max(single, key=len))
            else:
                needs.append(tuple(longest))
    return needs


@dataclass(slots=True)
class Compiled:
    """A signature with its compiled Python regexes (``rx`` is None for a derived signature)."""

    sig: Signature | DerivedSignature
    index: int
    rx: re.Pattern[str] | None
    extras: list[re.Pattern[str]] = field(default_factory=list)
    #: per extra, a substring every match of it contains (:func:`required_literal`), or None: an extra is
    #: searched only on lines that hold it (two Xid extras start with ``\b[A-Z]…`` and cost ~5 µs a line)
    extra_literals: list[str | None] = field(default_factory=list)
    #: per extra, its other :func:`literal_requirements` (after that literal): checked only on lines that hold
    #: the literal (the Xid unit extra needs ``Link`` and ``XC``; an NVLink Xid 74 line holds the first only)
    extra_needs: list[tuple[tuple[str, ...], ...]] = field(default_factory=list)

    @property
    def at_line_start(self) -> bool:
        """The pattern is anchored at the line's start (``^``: a tool's rows as it prints them — ``ibdev2netdev``,
        ``ibstat``, ``nvidia-smi -L``/``--query-gpu``/``topo -m``, dcgm-exporter's text): its ``^`` binds to the
        message's start, behind the prefixes a collector writes in front (:meth:`search`)."""
        return self.rx is not None and self.sig.pattern.startswith("^")

    def read_from(self, line: str) -> str:
        """The text of ``line`` the pattern reads: the line; for a pattern :attr:`at_line_start` that finds nothing
        there, the line's message behind its prefixes (``ingest.prefix.parse_prefix``'s ``rest``: a syslog, ISO or
        kernel stamp, a host, a tag). ``ibdev2netdev | logger`` ships "Nov 30 03:12:01 node07 ibdev2netdev: mlx5_0
        port 1 ==> ib0 (Up)": a ``^`` of the raw line read nothing behind the stamp. The matchers
        (:meth:`search`) and field extraction (``ingest.extract.fields``) read the same text; a derived signature
        (no ``rx``) reads the line."""
        if self.at_line_start and self.rx.search(line) is None:
            return parse_prefix(line).rest
        return line

    def search(self, line: str) -> re.Match[str] | None:
        """``rx`` searched in the text of ``line`` it reads (:meth:`read_from`), whose offsets the match has. Raises
        ``AttributeError`` for a derived signature (no ``rx``)."""
        return self.rx.search(self.read_from(line))


@dataclass(slots=True)
class Catalog:
    """All signatures in load order, plus the per-code Xid/SXid facts."""

    entries: list[Compiled]
    by_id: dict[str, Compiled]
    xids: dict[int, XidFact]
    sxids: dict[int, SxidFact]
    families: dict[str, str]
    #: signature id -> the family of the catalog file that defines it (``xid``, ``fabric``, ``torch`` …)
    family_of: dict[str, str] = field(default_factory=dict)

    def hyperscan_expressions(self) -> list[bytes]:
        """Every pattern with named groups made non-capturing (Hyperscan has no captures)."""
        return [to_hyperscan(c.sig.pattern).encode() for c in self.entries]


def to_hyperscan(pattern: str) -> str:
    """The Hyperscan form of a catalog pattern.

    ``(?P<name>`` becomes ``(?:`` (Hyperscan has no captures). Lines are
    scanned as one newline-joined buffer, so nothing may match a newline:
    ``\\s`` outside a class becomes ``[^\\S\\n]`` and every negated class
    ``[^…]`` gains ``\\n``.
    """
    p = re.sub(r"\(\?P<\w+>", "(?:", pattern)
    out: list[str] = []
    i, in_class = 0, False
    while i < len(p):
        ch = p[i]
        if ch == "\\" and i + 1 < len(p):
            tok = p[i : i + 2]
            out.append("[^\\S\\n]" if tok == "\\s" and not in_class else tok)
            i += 2
            continue
        if not in_class and ch == "[":
            in_class = True
            if p.startswith("[^", i):
                out.append("[^\\n")
                i += 2
                if i < len(p) and p[i] == "]":  # "[^]…]": a literal ] first
                    out.append("\\]")
                    i += 1
                continue
        elif in_class and ch == "]":
            in_class = False
        out.append(ch)
        i += 1
    return "".join(out)


def _load_xids(path: Path) -> dict[int, XidFact]:
    out: dict[int, XidFact] = {}
    with path.open(newline="", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            x = int(row["xid"])
            out[x] = XidFact(
                xid=x,
                name=row["name"],
                category=row["category"],
                nvlink_related=row["nvlink_related"].strip().lower() == "true",
                role=row["typical_role"],
                severity=_XID_SEVERITY[row["severity"]],
                action=row["recommended_action"],
                source=row["source"],
                nvidia_action=row.get("nvidia_action") or "",
            )
    return out


def _load_sxids(path: Path) -> dict[int, SxidFact]:
    out: dict[int, SxidFact] = {}
    with path.open(newline="", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            if not row["numbering"].startswith("current"):
                continue  # legacy numbers meant something else before 550.40.07
            x = int(row["sxid"])
            out[x] = SxidFact(
                sxid=x,
                name=row["name"],
                fatal=row["fatal"],
                meaning=row["what_it_means"],
                # a non-fatal SXid whose meaning says it "can be ignored" (22013's MINION DLREQ interrupts, which the
                # driver prints at load) is information, not a warning (NVIDIA/nvtrust#124: a warning incident whose
                # action said "can be ignored", a real-logs pass). Not every IGNORE/NONFATAL of NVSentinel's mapping:
                # 136 rows, among them MINION boot errors and poisoned data (a break-it pass)
                severity=("info" if row["fatal"] == "non-fatal" and row["nvsentinel_action"].startswith("IGNORE")
                          and "can be ignored" in row["what_it_means"]
                          else _SXID_SEVERITY.get(row["fatal"], "warning")),
                action=row["nvsentinel_action"] or "",
                source=row["source"],
            )
    return out


#: PyYAML's safe loader on libyaml (C) when PyYAML was built with it: the same documents, a tenth of the time (0.40 →
#: 0.04 s for the catalog, rules and platforms, which every command reads at start-up)
_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def read_yaml(text: str) -> Any:
    """``yaml.safe_load(text)`` through libyaml when PyYAML has it (:data:`_SAFE_LOADER`); raises ``yaml.YAMLError``
    as ``safe_load`` does. ``tests/test_catalog.py`` holds the two loaders to the same documents for every shipped
    YAML file."""
    return yaml.load(text, Loader=_SAFE_LOADER)  # noqa: S506 — a safe loader, PyYAML's C build of SafeLoader


def load_catalog(directory: Path = CATALOG_DIR) -> Catalog:
    """Load and validate every ``*.yaml`` in ``directory`` (sorted by name).

    Raises :class:`CatalogError` on a YAML error, a schema violation, a
    duplicate id, or a pattern that does not compile.
    """
    entries: list[Compiled] = []
    by_id: dict[str, Compiled] = {}
    families: dict[str, str] = {}
    family_of: dict[str, str] = {}
    files = sorted(directory.glob("*.yaml"))
    if not files:
        raise CatalogError(f"no signature files (*.yaml) in {directory}")
    for path in files:
        try:
            raw = read_yaml(path.read_text(encoding="utf-8"))
            doc = CatalogFile.model_validate(raw)
        except ValidationError as e:
            raise CatalogError(f"{path.name}: {validation_message(e)}") from e
        except (yaml.YAMLError, UnicodeDecodeError) as e:  # bytes that are no UTF-8 were a traceback
            raise CatalogError(f"{path.name}: {e}") from e
        families[doc.family] = doc.description
        for sig in doc.signatures:
            if sig.id in by_id:
                raise CatalogError(f"{path.name}: duplicate signature id {sig.id!r}")
            extras = [re.compile(x) for x in sig.extra]
            literals = [required_literal(x) for x in extras]
            c = Compiled(sig=sig, index=len(entries), rx=re.compile(sig.pattern), extras=extras,
                         extra_literals=literals,
                         extra_needs=[_other_needs(x, lit) for x, lit in zip(extras, literals)])
            entries.append(c)
            by_id[sig.id] = c
            family_of[sig.id] = doc.family
        for d in doc.derived:
            if d.id in by_id:
                raise CatalogError(f"{path.name}: duplicate signature id {d.id!r}")
            missing = [s for s in d.from_signatures if s not in by_id]
            if missing:
                raise CatalogError(f"{path.name}: derived {d.id} names unknown signatures {missing}")
            by_id[d.id] = Compiled(sig=d, index=-1, rx=None)
            family_of[d.id] = doc.family
    return Catalog(
        entries=entries,
        by_id=by_id,
        xids=_load_xids(directory / "xid-catalog.csv"),
        sxids=_load_sxids(directory / "sxid-catalog.csv"),
        families=families,
        family_of=family_of,
    )


@lru_cache(maxsize=1)
def default_catalog() -> Catalog:
    """The shipped catalog, loaded once per process."""
    return load_catalog()
