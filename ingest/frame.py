"""Frame a segment's bytes into logical lines: continuation lines join their first line.

Two real shapes continue a message over several physical lines:

* a multi-line printk in raw ``dmesg``: the continuation lines carry no
  stamp and are indented to exactly the width of the first line's
  ``[  1843.308145] `` stamp (shared/reference/formats.md §1.8, corpus 004);
* a ``dcgmi diag`` / ``dcgmi health`` table, whose long cells wrap onto rows
  with an empty first cell, breaking words anywhere (corpus 008);
* a record of torchrun's failure summary (``ChildFailedError``: ``[0]:`` then
  its ``  time      : …``, ``  host      : …``, ``  rank      : …`` lines,
  torch/distributed/elastic/multiprocessing/errors), with the ``Root Cause
  (first observed failure):`` line before it: one line, which a signature
  reads whole (NVIDIA/nccl#1439: no event from it before).

Framing keeps the original text of a joined line (with its newlines) for the
event's ``message``, and maps each logical line back to the physical line it
starts on, so event ids keep pointing at real line numbers. Segments with
neither shape pass through untouched (the common, fast case).
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from itertools import chain, repeat

import hyperscan
import numpy as np

from ingest.prefix import parse_prefix

#: what a continuation line is indented under: dmesg's stamp, or a syslog/journal header through its tag
#: (journalctl aligns a multi-line message's later lines under its first: "May 11 19:25:29 homecomp kernel: NVRM:
#: The NVIDIA GPU …" then 33 blanks and "NVRM: installed in this system requires …",
#: NVIDIA/open-gpu-kernel-modules#1027), in journalctl's short, short-precise, short-iso(-precise), short-full and
#: short-monotonic forms and rsyslog's ISO stamps (an offset after a blank too)
_STAMP = re.compile(
    rb"^(?P<stamp>\[[^\]\n]{1,40}\]"
    rb"|[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d(?:\.\d{1,9})?"
    rb"|(?:[A-Z][a-z]{2} )?\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d{1,9})?(?: ?(?:Z|[+-]\d\d:?\d\d)| [A-Z]{2,5})?)"
    rb" (?P<tail>[^\s:\[]+ [^\s:\[]+(?:\[\d+\])?: )?")


def _stamp_widths(line: bytes) -> tuple[int, ...]:
    """The indentations that continue ``line``: under its dmesg stamp, and under its whole header (stamp, host
    and tag) when it has one; none for a line with neither."""
    m = _STAMP.match(line)
    if m is None:
        return ()
    under_stamp = (m.end("stamp") + 1,) if line[:1] == b"[" else ()
    return under_stamp + ((m.end(),) if m["tail"] else ())


_TABLE_ROW = re.compile(rb"^\|([^|\n]*)\|([^|\n]*)\|?[^\S\n]*$")

#: torchrun's failure summary (torch/distributed/elastic/multiprocessing/errors/__init__.py, _FAILURE_FORMAT_TEMPLATE):
#: a record's head, ``[<idx>]:``, the line before it that names the record the root cause, and the record's fields
_RECORD_HEAD = re.compile(rb"\[\d{1,6}\]:[^\S\n]*$")
_ROOT_CAUSE = b"Root Cause (first observed failure):"
_RECORD_FIELD = re.compile(rb"^  (?:time|host|rank|exitcode|error_file|traceback) *: ")


@dataclass(slots=True)
class Framed:
    """Logical lines of one segment.

    ``scan``: the bytes to match (logical lines joined by ``\\n``);
    ``first_line``: for each logical line, the index of its first physical
    line (``None`` when identical to the logical index);
    ``original``: logical line index -> original multi-line text, for joined lines.
    """

    scan: bytes
    first_line: list[int] | None = None
    original: dict[int, str] | None = None


def _needs_framing(data: bytes) -> bool:
    return b"\n  " in data or b"\n|" in data or data[:1] == b"|"


def _join_lines(lines: list[bytes]) -> tuple[list[bytes], list[int], list[list[bytes]]]:
    """The framing rules over consecutive physical lines, from a clean state.

    Returns the logical lines, the index in ``lines`` where each starts, and
    the physical lines each was made of.
    """
    out: list[bytes] = []
    first: list[int] = []
    joined_from: list[list[bytes]] = []
    widths: tuple[int, ...] = ()
    in_table = in_record = False
    for i, line in enumerate(lines):
        if in_record and _RECORD_FIELD.match(line):  # a field of torchrun's failure record: onto its head
            out[-1] = out[-1] + b" " + line.strip()
            joined_from[-1].append(line)
            continue
        in_record = _RECORD_HEAD.match(line) is not None
        if in_record and out and out[-1].rstrip() == _ROOT_CAUSE:  # the root cause's record: onto that line
            out[-1] = out[-1].rstrip() + b" " + line.strip()
            joined_from[-1].append(line)
            continue
        # a continuation: exactly as many spaces as the stamp (or header) of the line it continues, then text
        w = next((w for w in widths if len(line) > w and line[:w] == b" " * w and line[w:w + 1] not in (b" ", b"\t")),
                 0) if widths and out else 0
        if w:
            out[-1] = out[-1] + b" " + line[w:]
            joined_from[-1].append(line)
            continue
        t = _TABLE_ROW.match(line)
        if t and in_table and out and not t.group(1).strip() and t.group(2).strip():
            # wrapped table cell: glue the text on, no separator (DCGM breaks mid-word)
            out[-1] = out[-1] + t.group(2).strip()
            joined_from[-1].append(line)
            continue
        widths = _stamp_widths(line)
        if t:
            in_table = True
            out.append(b"| " + t.group(1).strip() + b" | " + t.group(2).strip())
        else:
            in_table = False
            out.append(line)
        first.append(i)
        joined_from.append([line])
    return out, first, joined_from


def _candidate_starts(data: bytes) -> list[int]:
    """Byte offsets of the lines that start with two spaces or ``|`` (the first line only with ``|``).

    Only such lines can continue a line or be a table row; any other line
    passes through unchanged and leaves a clean state (no table, the stamp
    width of its own stamp) behind it.
    """
    starts = []
    for pat in (b"\n  ", b"\n|"):
        i = data.find(pat)
        while i != -1:
            starts.append(i + 1)
            i = data.find(pat, i + 1)
    if data[:1] == b"|":
        starts.append(0)
    starts.sort()
    return starts


def _runs(data: bytes, starts: list[int]) -> list[tuple[int, int]]:
    """Byte spans ``[start, end)`` of the runs of consecutive candidate lines (``starts`` sorted)."""
    runs: list[tuple[int, int]] = []
    for p in starts:
        e = data.find(b"\n", p)
        e = len(data) if e == -1 else e
        if runs and runs[-1][1] + 1 == p:
            runs[-1] = (runs[-1][0], e)
        else:
            runs.append((p, e))
    return runs


def frame(data: bytes) -> Framed:
    """Join continuation lines (see module doc). Pure; never raises.

    Only the runs of candidate lines (and the line before each run, which a
    continuation joins) go through the rules, so a large segment with a few
    indented lines costs a few ``find`` calls, not a loop over every line.
    """
    if not _needs_framing(data):
        return Framed(scan=data)
    return _frame_runs(data, _runs(data, _candidate_starts(data)))


#: runs' bytes (with the line before each) that :func:`_join_lines` left as they were: a run repeated (the same
#: traceback in many messages: ~2 µs a line through the rules) is known to pass at the cost of a set lookup.
#: ``_join_lines`` is pure, so what it did to a run it does again. Runs of at most ``_PASSING_BYTES``; cleared when
#: it holds ``_PASSING_MAX`` (so at most ~8 MB). Threads framing at once share it (a set's add and lookup are atomic)
_PASSING: set[bytes] = set()
_PASSING_MAX = 4096
_PASSING_BYTES = 2048


def _frame_runs(data: bytes, runs: list[tuple[int, int]]) -> Framed:
    # (first physical line, last physical line, logical lines, their first lines, their parts)
    edits: list[tuple[int, int, list[bytes], list[int], list[list[bytes]]]] = []
    pos = line_no = 0  # line_no: physical index of the line starting at byte pos (counted only up to an edit)
    for a, b in runs:
        if a > 0:  # include the line before the run: a continuation joins it
            a = data.rfind(b"\n", 0, a - 1) + 1
            if a > 0 and _RECORD_HEAD.match(data, a, data.find(b"\n", a)):  # and a record's root-cause line before it
                a = data.rfind(b"\n", 0, a - 1) + 1
        text = data[a:b]
        if text in _PASSING:  # these lines passed through the rules unchanged before
            continue
        lines = text.split(b"\n")
        out, first, parts = _join_lines(lines)
        if len(out) == len(lines) and all(o is x for o, x in zip(out, lines)):
            if len(text) <= _PASSING_BYTES:
                if len(_PASSING) >= _PASSING_MAX:
                    _PASSING.clear()
                _PASSING.add(text)
        else:
            line_no += data.count(b"\n", pos, a)
            pos = a
            edits.append((line_no, line_no + len(lines) - 1, out, first, parts))
    if not edits:
        return Framed(scan=data)
    phys = data.split(b"\n")
    logical: list[bytes] = []
    first_line: list[int] = []
    original: dict[int, str] = {}
    cursor = 0
    for la, lb, out, first, parts in edits:
        logical.extend(phys[cursor:la])
        first_line.extend(range(cursor, la))
        for o, f, pp in zip(out, first, parts):
            if len(pp) > 1 or o is not pp[0]:
                original[len(logical)] = b"\n".join(pp).decode("utf-8", "replace")
            logical.append(o)
            first_line.append(la + f)
        cursor = lb + 1
    logical.extend(phys[cursor:])
    first_line.extend(range(cursor, len(phys)))
    return Framed(scan=b"\n".join(logical), first_line=first_line, original=original or None)


def segment_starts(scans: list[bytes]) -> np.ndarray:
    """Byte offset of each of ``scans`` in ``b"\\n".join(scans)`` (int64 array; no Python loop)."""
    lens = np.fromiter(map(len, scans), dtype=np.int64, count=len(scans))
    starts = np.zeros(len(scans), dtype=np.int64)
    np.cumsum(lens[:-1] + 1, out=starts[1:])
    return starts


def lf_line_ends(datas: list[bytes]) -> list[bytes]:
    """``datas`` with every CRLF line end made LF, a ``\\r`` that ends a segment dropped, and a line that a
    ``\\r`` redraws read as a terminal shows it: the text after its last ``\\r``, behind a collector's header
    (:func:`_as_shown`).

    The ``\\r`` of a CRLF line end (files written on Windows, serial consoles, some shippers) belongs to
    the line end, not the text: left in, it ends the event's ``message`` and keeps ``$`` from matching
    (Hyperscan's multiline ``$`` binds before ``\\n`` only). A ``\\r`` inside a line is a progress bar
    redrawing itself (tqdm's ``Training:  45%|####5 | 450/1000\\r``), and what follows the last one is the line
    the log holds: with the bar in front, a fault line's own stamp was not read and it took its file's time (a
    break-it pass). Line counts do not change. Segments without ``\\r`` are returned as they are (same objects).
    """
    return [_REDRAWN.sub(_as_shown, d.replace(b"\r\n", b"\n").removesuffix(b"\r")) if 13 in d else d for d in datas]


#: a line that holds a ``\\r`` (:func:`lf_line_ends`)
_REDRAWN = re.compile(rb"(?m)^[^\n\r]*\r[^\n]*")


def _as_shown(m: re.Match) -> bytes:
    """A line with ``\\r`` in it as a terminal shows its last write — the text after its last ``\\r`` — behind the
    collector's header the line began with (syslog's ``Dec  1 03:12:02 node02 python[4411]: ``, CRI's ``<stamp>
    stderr F ``: what ``parse_prefix`` reads as the line's prefixes), which is the header of the whole line, not of the
    text the program redrew: the text between is dropped, a progress bar or a status line (``step 122/1000
    loss=0.52``). The header stays unless the last write has a date or a host of its own. Before, a progress bar in
    the first write took the header with it (the ECC error of node02's rank 1 took node01's Xid 13 as its cause, and
    a CRI record's line its file's time: a break-it pass), and a status line was joined to the line after it. A line
    whose last ``\\r`` ends it stays as it is."""
    line = m.group(0)
    head, *_, last = line.split(b"\r")
    if not last.strip():
        return line
    text = head.decode("utf-8", "surrogateescape")
    rest = parse_prefix(text).rest
    if not rest:  # the first write is a header alone
        header = text
    elif text.endswith(rest):
        header = text[:-len(rest)]
    else:
        header = ""
    if not header.strip():
        return last
    own = parse_prefix(last.decode("utf-8", "surrogateescape"))
    return last if own.ts is not None or own.host is not None else header.encode("utf-8", "surrogateescape") + last


def frame_all(datas: list[bytes]) -> tuple[bytes, dict[int, Framed], np.ndarray]:
    """Frame many segments at once.

    ``datas``: each segment's bytes (lines separated by ``\\n``; CRLF line
    ends are made LF first, :func:`lf_line_ends`). Returns their logical lines
    joined by ``\\n``, the framed segments that changed (the others pass
    through untouched) and each segment's byte offset in the joined bytes
    (int64 array). Candidate lines are found in one Hyperscan pass,
    whatever the number of segments (one Kafka message per line gives
    thousands per batch), and only segments holding one are framed. Large
    segments are scanned where they lie (vectored mode) and joined once, after
    framing; many small ones are joined first (a vectored scan pays per block).
    """
    starts = segment_starts(datas)
    joined = None
    if datas and int(starts[-1]) + len(datas[-1]) < _VECTORED_MIN * len(datas):
        joined = b"\n".join(datas)
        if 13 in joined:  # "\r": one memchr over the batch; the per-segment work only when there is a \r
            datas = lf_line_ends(datas)
            starts = segment_starts(datas)
            joined = b"\n".join(datas)
        found = _find_candidates(joined)
    else:
        if any(13 in d for d in datas):  # "\r" (memchr); few, large segments here
            datas = lf_line_ends(datas)
            starts = segment_starts(datas)
        found = _find_candidates(datas)
    local: dict[int, list[int]] = {0: [0]} if datas and datas[0][:1] == b"|" else {}
    if len(found):
        pos = found >> 1  # line offsets as if joined, ascending
        seg = np.searchsorted(starts, pos, side="right") - 1
        off = pos - starts[seg]
        keep = (off != 0) | ((found & 1) != 0)  # an indented first line cannot continue anything; a table row can be
        seg, off = seg[keep], off[keep]
        # per segment, its candidates' offsets (ascending: seg is too): one slice per segment, not a step per line
        cut = (np.flatnonzero(seg[1:] != seg[:-1]) + 1).tolist()
        seg_l, off_l = seg.tolist(), off.tolist()
        for i, j in zip([0, *cut], [*cut, len(seg_l)]):
            if i < j:
                local.setdefault(seg_l[i], []).extend(off_l[i:j])
    changed = {}
    for si, offs in local.items():
        fr = _frame_runs(datas[si], _runs(datas[si], sorted(offs)))
        if fr.scan is not datas[si]:
            changed[si] = fr
    if not changed:
        return b"\n".join(datas) if joined is None else joined, {}, starts
    if joined is None:
        scans = list(datas)
        for si, fr in changed.items():
            scans[si] = fr.scan
        return b"\n".join(scans), changed, segment_starts(scans)
    # already joined: splice the framed segments in (one copy of the bytes, no second join of every segment)
    view, pieces, prev = memoryview(joined), [], 0
    shift = np.zeros(len(datas), dtype=np.int64)
    for si in sorted(changed):
        a = int(starts[si])
        pieces += [view[prev:a], changed[si].scan]
        prev = a + len(datas[si])
        if si + 1 < len(datas):
            shift[si + 1] = len(changed[si].scan) - len(datas[si])
    pieces.append(view[prev:])
    return b"".join(pieces), changed, starts + np.cumsum(shift)


#: mean segment size from which the candidate scan runs vectored over the segments instead of a join
_VECTORED_MIN = 2048
_DB: dict[bool, object] = {}  # vectored? -> the compiled candidate-line database
_SCRATCH = threading.local()  # a Hyperscan scratch serves one scan at a time: one per thread and database


def _find_candidates(data: bytes | list[bytes]) -> np.ndarray:
    """Every line after the first starting with two spaces or ``|``, ascending: its offset times two, plus one when
    it is a table row (``|``) — int64 array, ``>> 1`` the offset, ``& 1`` the row bit.

    ``data``: the joined bytes, or the segments themselves — Hyperscan's
    vectored mode then scans them with a newline between each, as if joined,
    without copying them; offsets are those of the joined bytes either way.
    """
    if not data:
        return np.zeros(0, dtype=np.int64)
    vectored = isinstance(data, list)
    db = _DB.get(vectored)
    if db is None:
        db = hyperscan.Database(mode=hyperscan.HS_MODE_VECTORED if vectored else hyperscan.HS_MODE_BLOCK)
        db.compile(expressions=[b"\\n  ", b"\\n\\|"], ids=[0, 1], elements=2, flags=[0, 0])
        db = _DB.setdefault(vectored, db)
    scratches = _SCRATCH.__dict__
    scratch = scratches.get(vectored)
    if scratch is None:
        scratch = scratches[vectored] = hyperscan.Scratch(db)
    out: list[int] = []
    add = out.append

    def on_match(pid: int, _from: int, to: int, _flags: int, _ctx: object) -> None:
        add(2 * (to - 2) if pid == 0 else 2 * (to - 1) + 1)

    db.scan(list(chain.from_iterable(zip(data, repeat(b"\n")))) if vectored else data,
            match_event_handler=on_match, scratch=scratch)
    out.sort()
    return np.array(out, dtype=np.int64)
