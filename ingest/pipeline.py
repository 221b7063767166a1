"""The pure ingest path: decoded segments -> Arrow record batches.

``frame`` (continuation lines, all segments of the batch at once) -> one
Hyperscan scan over all lines of the batch, joined (``match``) -> fields from
hit lines only (``extract``) -> per-segment passes (``assemble``) -> Arrow
tables in the schemas of ``schemas.events`` and ``schemas.samples``. Nothing
runs per line in Python: per segment only a join and a length, per hit line
the extraction. The Kafka consumer, ``diagnose``, the tests and the benchmarks
all run this same function.
"""

from __future__ import annotations

import codecs
import dataclasses
import re
import time
from dataclasses import dataclass, field
from datetime import timezone, tzinfo
from operator import attrgetter
from typing import Any

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc

from ingest.assemble import Hit, assemble, year_anchors, year_ref
from ingest.catalog import Catalog, default_catalog
from ingest.decode import MAX_LINE_BYTES, Decoded, Reject, Segment, end_nul_holes, strip_terminal_codes
from ingest.extract import columns, fields
from ingest.frame import Framed, frame_all
from ingest.gcpause import gc_paused
from ingest.match import HyperscanMatcher, LineHit, Matcher, best, hit_lines
from ingest.prefix import EARLIEST_US, LATEST_US, Prefix, parse_prefix
from schemas.events import EVENTS_SCHEMA, out_of_range
from schemas.hostname import MAX_HOST_CHARS, canonical_hosts, not_host_names  # noqa: F401 (MAX_HOST_CHARS: api.cli)
from schemas.samples import LINK_SAMPLES_SCHEMA, TOPOLOGY_SCHEMA

_DATA = attrgetter("data")


@dataclass(slots=True)
class Batch:
    """What one batch of input became."""

    events: pa.Table
    link_samples: pa.Table
    topology: pa.Table
    rejects: list[Reject] = field(default_factory=list)  # decode's, plus line_too_long from matching
    lines: int = 0
    bytes: int = 0


def to_table(rows: list[dict], schema: pa.Schema) -> pa.Table:
    """Rows (dicts; times as µs ints, ``details`` as a dict) to an Arrow table of ``schema``.

    A column a row does not have is null; keys outside ``schema`` are ignored. ``details`` becomes JSON text
    (keys sorted; an empty dict is null). The rows are read by Arrow's own ``Table.from_pylist`` (C++), not
    column by column in Python: ~2.5x faster on a batch's events. The rows are not modified. A value its
    column cannot hold raises what Arrow raises (``ArrowInvalid``, ``ArrowTypeError``, ``OverflowError``; a
    float in an integer column is truncated, as ``pa.array`` does), ``details`` orjson cannot encode a
    ``TypeError``. Integers out of their column's range (a ``[40000]`` device in an NCCL prefix, a ``GPU99999``
    row of ``topo -m``) are the exception: such a value becomes null and ``details.<column>_text`` keeps it as
    text, as for a field extraction finds too big (those rows are copied), so one odd field does not cost the
    batch's other rows (``_bounded``). So are lone UTF-16 surrogates in text (``"\\ud800"``, which neither Arrow nor
    orjson encode as UTF-8): each becomes U+FFFD (``_without_surrogates``), as bytes that are no UTF-8 read.
    """
    if not rows:
        return schema.empty_table()
    fixes = {"bounded", "surrogates"}  # each fix once, in the order the rows need them
    while True:
        try:
            return _to_table(rows, schema)
        except (pa.ArrowInvalid, OverflowError):
            fixed = _bounded(rows, schema) if "bounded" in fixes else rows
            fixes.discard("bounded")
            if fixed is rows:
                raise
        except (UnicodeEncodeError, TypeError) as e:  # Arrow's and orjson's refusal of a lone surrogate
            if "surrogates not allowed" not in str(e) or "surrogates" not in fixes:
                raise
            fixes.discard("surrogates")
            fixed = [_without_surrogates(r) for r in rows]
        rows = fixed


def _without_surrogates(v: Any) -> Any:
    """``v`` (a row, or a value in one: dicts, lists and strings, keys too) with each UTF-16 surrogate that is not
    one of a pair replaced by U+FFFD (a pair is the one character it spells); ``v`` itself when it holds none."""
    if type(v) is str:
        try:
            v.encode("utf-8")
        except UnicodeEncodeError:
            return v.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
        return v
    if isinstance(v, dict):
        return {_without_surrogates(k): _without_surrogates(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return type(v)(_without_surrogates(x) for x in v)
    return v


def _int_range(t: pa.DataType) -> tuple[int, int]:
    bits = t.bit_width
    return (0, 2**bits - 1) if pa.types.is_unsigned_integer(t) else (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)


def _bounded(rows: list[dict], schema: pa.Schema) -> list[dict]:
    """``rows`` with each integer a column of ``schema`` cannot hold set to null and kept as text in its
    row's ``details.<column>_text``; ``rows`` itself when every integer fits."""
    ranges = {f.name: _int_range(f.type) for f in schema if pa.types.is_integer(f.type)}
    out, changed = [], False
    for r in rows:
        bad = {k: v for k, (lo, hi) in ranges.items()
               if isinstance(v := r.get(k), int) and not isinstance(v, bool) and not lo <= v <= hi}
        if bad:
            changed = True
            r = dict(r, **dict.fromkeys(bad))
            if "details" in schema.names:  # as the fields extraction finds too big (ingest.extract)
                r["details"] = {**(r.get("details") or {}), **{f"{k}_text": str(v) for k, v in bad.items()}}
        out.append(r)
    return out if changed else rows


def _to_table(rows: list[dict], schema: pa.Schema) -> pa.Table:
    i = schema.get_field_index("details")
    if i < 0:
        return pa.Table.from_pylist(rows, schema=schema)
    dumps, sort = orjson.dumps, orjson.OPT_SORT_KEYS
    details = pa.array([dumps(d, option=sort).decode() if (d := r.get("details")) else None for r in rows],
                       type=schema.field(i).type)
    if len(schema) == 1:
        return pa.Table.from_arrays([details], schema=schema)
    table = pa.Table.from_pylist(rows, schema=schema.remove(i))
    return table.add_column(i, schema.field(i), details)


_LINE_OF = re.compile(r":\d+(?:#\d+)?$")


def _input_of(origin: str | None) -> str:
    """The input a row came from, as decode rejects name it: its ``origin`` (``kafka:t/0/17#r3:0``,
    ``file:a.log@1f2e:5``) without the line it was on, so the consumer dead-letters the Kafka value it was in
    (``ingest.consumer.dead_letters``, with its original key and headers) and ``diagnose`` names the file."""
    return _LINE_OF.sub("", origin or "")


def _kafka_times(events: pa.Table, rejects: list[Reject]) -> pa.Table:
    """``events`` with Kafka record times that are no time from 2000 to 2100 (``ingest.prefix.plausible``: a
    producer's clock, a CreateTime it set, Kafka's -1 for none) not taken as times: an event timed by one (its line
    printed no time, ``ts_basis`` ``kafka``) is a ``bad_timestamp`` reject, as an envelope's impossible time is
    (no guess at when it was written); any other event keeps its own time and loses only its ``ingest_ts``
    (which clock-skew estimates compare its time with)."""
    if events.num_rows == 0:
        return events
    arrival = events.column("ingest_ts").cast(pa.int64())
    odd = pc.fill_null(pc.or_(pc.less(arrival, EARLIEST_US), pc.greater(arrival, LATEST_US)), False)
    if not pc.any(odd).as_py():
        return events
    timed = pc.and_(odd, pc.equal(events.column("ts_basis"), "kafka"))
    events = events.set_column(events.schema.get_field_index("ingest_ts"), events.schema.field("ingest_ts"),
                               pc.if_else(odd, pa.scalar(None, events.schema.field("ingest_ts").type),
                                          events.column("ingest_ts")))
    if not pc.any(timed).as_py():
        return events
    rows = events.filter(timed)
    reasons = [f"{sig} event not stored: its line prints no time, and its Kafka record's timestamp ({ms // 1000} ms) "
               "is no time from 2000 to 2100 (the producer's clock, or a CreateTime it set)"
               for sig, ms in zip(rows.column("signature").to_pylist(), rows.column("ts").cast(pa.int64()).to_pylist())]
    return _refuse(events, timed, reasons, "bad_timestamp", rejects)


def _in_range(events: pa.Table, rejects: list[Reject]) -> pa.Table:
    """``events`` without the rows the correlator cannot place in time (``schemas.events.out_of_range``: a time
    outside 1900 – 2199, a duration outside 0 – ten years), each appended to ``rejects`` (``out_of_range``,
    naming the column and value; the raw line as its data). Extraction keeps such values out of the columns;
    this is the guarantee that no event of the pipeline makes the streaming correlator refuse a batch (one
    such row stopped `firstfault run` at every restart)."""
    masks = out_of_range(events)
    if not masks:
        return events
    bad = None
    for mask in masks.values():
        bad = mask if bad is None else pc.or_(bad, mask)
    rows = events.filter(bad)
    # per column out of range: its value in each refused row, or None where that row's value is in range
    values = {name: [v if out else None for v, out in zip(rows.column(name).cast(pa.int64()).to_pylist(),
                                                          mask.filter(bad).to_pylist())]
              for name, mask in masks.items()}
    sigs = rows.column("signature").to_pylist()
    reasons = [f"{sig} event not stored: "
               + ", ".join(f"{name} = {vals[i]}{' µs' if name.endswith('ts') else ''}"
                           for name, vals in values.items() if vals[i] is not None)
               + " is out of range (times: years 1900 - 2199; durations: 0 to ten years)" for i, sig in enumerate(sigs)]
    return _refuse(events, bad, reasons, "out_of_range", rejects)


def _named_hosts(table: pa.Table, rejects: list[Reject], what: str) -> pa.Table:
    """``table`` (events, link samples or topology facts: ``host`` and ``origin`` columns) without the rows whose
    host is no host name — longer than :data:`MAX_HOST_CHARS`, or holding what :data:`_NOT_IN_HOST` lists —
    each a ``bad_host`` reject naming it (the host comes from a Kafka key, a header, an envelope field or a
    poller's sample, which anyone can fill: a 1 MB key became a 1 MB host in every incident of it); the others'
    hosts one name per host (``schemas.hostname``: ``Node07.cluster.local`` is ``node07``, as NCCL names it)."""
    if table.num_rows == 0:
        return table
    bad = not_host_names(table.column("host"))
    if pc.any(bad).as_py():
        table = _refuse_hosts(table, bad, rejects, what)
    i = table.schema.get_field_index("host")
    return table.set_column(i, table.schema.field(i), canonical_hosts(table.column(i)))


def _refuse_hosts(table: pa.Table, bad: pa.ChunkedArray, rejects: list[Reject], what: str) -> pa.Table:
    """``table`` without the rows of mask ``bad`` (``_named_hosts``), each a ``bad_host`` reject."""
    rows = table.filter(bad)
    reasons = [(f"{what} not stored: its host {h[:80]!r}{f'… ({len(h)} characters)' if len(h) > 80 else ''} is no "
                f"host name (at most {MAX_HOST_CHARS} characters, no blanks, control or format characters, '/' or "
                "bytes that were no UTF-8; not '-' or dots alone); "
                + (("its file's name holds bytes that are no UTF-8, which name no host (as a Kafka key's do not): "
                    "name the file after its host" if "\ufffd" in h else
                    "check the host the line names, or the file's name (it names the host of lines that name none)")
                   if (origin or "").startswith("file:") else
                   "check the shipper's Kafka key, host header or host field")) if h else
               # keyless records of several machines were all host "unknown": one host in every incident of them
               f"{what} not stored: it names no host (no Kafka key, host header or envelope host, and the line "
               "names none); key the records by host, as the shipper's Kafka sink can"
               for h, origin in zip(rows.column("host").to_pylist(), rows.column("origin").to_pylist())]
    return _refuse(table, bad, reasons, "bad_host", rejects)


def _refuse(table: pa.Table, bad: pa.ChunkedArray, reasons: list[str], code: str, rejects: list[Reject]) -> pa.Table:
    """``table`` without the rows of mask ``bad``; each one a reject (``code``, its reason from ``reasons`` in row
    order, its input from ``origin``: :func:`_input_of`, its raw line as data when the table has ``message``)."""
    rows = table.filter(bad)
    text = rows.column("message").to_pylist() if "message" in rows.column_names else [None] * rows.num_rows
    for origin, msg, why in zip(rows.column("origin").to_pylist(), text, reasons):
        rejects.append(Reject(_input_of(origin), why, (msg or "").encode("utf-8", "surrogateescape"), code))
    return table.filter(pc.invert(bad))


class Pipeline:
    """Catalog + compiled matcher; :meth:`run` is pure given its input."""

    def __init__(self, catalog: Catalog | None = None, matcher: Matcher | None = None,
                 tz: tzinfo = timezone.utc) -> None:
        self.catalog = catalog or default_catalog()
        self.matcher = matcher or HyperscanMatcher(self.catalog)
        self.tz = tz
        #: ``columns`` of an occurrence by (signature, groups): a pure function of them, and a storm repeats
        #: the same groups (same GPU, Xid, pid) with only the stamp changing. Each hit gets its own copy.
        self._columns: dict[tuple, dict] = {}
        #: the ``columns`` of each occurrence of a line, by (signature, line): ``fields`` is a pure function of
        #: them, and a storm shipped with its time in an envelope (journald through Vector) repeats the very
        #: same line. Each hit gets its own copy.
        self._lines: dict[tuple[int, str], list[dict]] = {}

    @gc_paused()  # many objects, no cycles: ingest.gcpause
    def run(self, decoded: Decoded, timings: dict[str, float] | None = None) -> Batch:
        """Events, link samples and topology facts of one batch of decoded input.

        ``Batch.rejects`` holds the decode rejects and any ``line_too_long``
        reject of a long line whose fields could not be read (:meth:`_extract`).

        ``timings``, when given, accumulates this thread's CPU seconds per stage
        (``frame``, ``match``, ``extract``, ``assemble``, ``arrow``): the benchmark's profile.
        """
        clock = _Clock(timings)
        segs = decoded.segments
        for seg in segs:  # terminal colours are no part of a line (decode.strip_terminal_codes), nor a crash's hole
            if b"\x1b" in seg.data:
                seg.data = strip_terminal_codes(seg.data)
            if 0 in seg.data:  # (decode.end_nul_holes: a run of NULs after text ends the line it cut)
                seg.data = end_nul_holes(seg.data)
        buf, framed, starts = frame_all(list(map(_DATA, segs)))
        clock.lap("frame")
        hits = hit_lines(self.matcher, buf)
        clock.lap("match")
        located, lines = _locate(buf, starts, hits)
        rejects = list(decoded.rejects)
        per_stream = self._extract(buf, segs, framed, located, rejects)
        clock.lap("extract")
        events, samples, topo = [], [], []
        # lines of one stream (a file, or a topic/partition/key) share carried context across its messages; the
        # streams whose kernel lines print both a wall-clock and a raw stamp go first: a raw capture of the same boot
        # in another stream takes its boot time from them (``assemble.resolve_times``, ``seen_boots``)
        streams = list(per_stream.values())
        order = sorted(range(len(streams)), key=lambda i: not any(
            h.prefix.mono is not None and (h.prefix.ts is not None or h.prefix.yearless is not None)
            for h in streams[i]))
        seen_boots: dict[tuple, int] = {}
        # the dated stamps of each job's and host's files, for the year-less stamps of the others
        anchors = year_anchors(streams, self.tz)
        done = [assemble(streams[i], self.tz, seen_boots, decoded.pod_nodes, anchors) for i in order]
        for _, out in sorted(zip(order, done), key=lambda x: x[0]):
            events.extend(out.events)
            samples.extend(out.link_samples)
            topo.extend(out.topology)
        clock.lap("assemble")
        batch = Batch(
            events=_named_hosts(_in_range(_kafka_times(to_table(events, EVENTS_SCHEMA), rejects), rejects), rejects,
                                "event"),
            link_samples=_named_hosts(to_table(samples, LINK_SAMPLES_SCHEMA), rejects, "link sample"),
            topology=_named_hosts(to_table(topo, TOPOLOGY_SCHEMA), rejects, "topology fact"),
            rejects=rejects,
            lines=lines if segs else 0,
            bytes=len(buf),
        )
        clock.lap("arrow")
        return batch

    def _extract(self, buf: bytes, segs: list, framed: dict[int, Framed],
                 located: list[tuple[int, int, int, int, list[int]]], rejects: list[Reject]
                 ) -> dict[str, list[Hit]]:
        """Fields, prefixes and typed columns of the hit lines, grouped by stream in line order.

        A line longer than ``MAX_LINE_BYTES`` is read as an excerpt of that size
        (:meth:`_long_line`): the event's ``message`` is the excerpt and
        ``details`` say so (``truncated_at``, ``line_bytes``, ``excerpt_from``).
        A long line whose fields the excerpt does not hold is appended to
        ``rejects`` (``line_too_long``), not dropped.
        """
        per_stream: dict[str, list[Hit]] = {}
        entries = self.catalog.entries
        lines_memo = self._lines
        # three passes over the hit lines, not every step per line: where each line is and what is remembered of it;
        # the fields of the lines not remembered, one signature's lines after another (its regexes stay hot); the
        # prefixes, then the hits in line order. The same events as one pass: ``fields``, ``parse_prefix`` and the
        # memos are pure functions of the line (a line read twice in one batch is read once, ``read``).
        work = []
        todo: dict[int, list[int]] = {}  # signature -> the places in ``work`` of its lines whose fields are to read
        for si, local, a, b, sigs in located:
            seg = segs[si]
            if type(seg) is not Segment:  # Records, Envelopes: line ``local`` is record ``local`` (framing leaves it)
                seg, local = seg.record(local), 0
            ci = sigs[0] if len(sigs) == 1 else best(self.catalog, sigs)
            if b - a <= MAX_LINE_BYTES:
                text = excerpt = buf[a:b].decode("utf-8", "replace")
                cut = None
                remember = len(text) <= _COLUMNS_MEMO_LINE  # a long line stays out of the memos: their size is bounded
                rows = lines_memo.get((ci, text)) if remember else None  # a remembered line's rows: never empty
                occurrences = None if rows is None else []
                if rows is None:
                    todo.setdefault(ci, []).append(len(work))
            else:
                text, excerpt, cut, occurrences = self._long_line(buf, a, b, ci)
                remember, rows = False, None
            work.append([si, seg, local, a, b, ci, text, excerpt, cut, remember, rows, occurrences])
        for ci, places in todo.items():
            c = entries[ci]
            read: dict[str, list[dict[str, str]]] = {}
            for k in places:
                w = work[k]
                text = w[6]
                found = read.get(text)
                if found is None:
                    found = read[text] = fields(c, text)
                w[11] = found
        tz = self.tz
        # a hit line that repeats the one before (same text, same reference time — the one its prefix is read
        # against, ``year_ref``: a 1970 envelope gives no year —: a storm's unstamped copies in one Kafka value or
        # file) copies its prefix; each copy gets its own Prefix (``resolve_times`` sets its time)
        prefixes: list[Prefix | None] = []
        last_read: tuple[str, int] | None = None
        last_prefix = None
        for w in work:
            if not (w[10] or w[11]):
                prefixes.append(None)
                continue
            read = (w[6], year_ref(w[1]))
            if read == last_read:
                prefixes.append(_copy_prefix(last_prefix))
            else:
                last_prefix = parse_prefix(w[6], ref_us=read[1], tz=tz)
                last_read = read
                prefixes.append(last_prefix)  # unchanged until assemble: copied when reused
        for (si, seg, local, a, b, ci, text, excerpt, cut, remember, rows, occurrences), prefix in zip(work, prefixes):
            c = entries[ci]
            if not (rows or occurrences):  # the Hyperscan form matched but the full regex did not
                if cut is not None:  # on a long line: say so, do not drop it silently
                    rejects.append(Reject(seg.origin, f"line {local}: signature {c.sig.id} hit a line of {b - a} "
                                          f"bytes but its fields cannot be read from the {MAX_LINE_BYTES} bytes "
                                          f"around the match", excerpt.encode("utf-8", "surrogateescape"),
                                          "line_too_long"))
                continue
            fr = framed.get(si)
            message = excerpt
            phys = local
            if fr is not None:
                phys = fr.first_line[local] if fr.first_line else local
                original = (fr.original or {}).get(local)
                if original is not None and cut is None:
                    message = original if len(original) <= MAX_LINE_BYTES else original[:MAX_LINE_BYTES]
            quote = c.sig.source == "nccl" and not prefix.nccl_own and _after_last_error(buf, a)
            stream = per_stream.get(seg.stream)
            if stream is None:
                stream = per_stream[seg.stream] = []
            if rows is None:
                if remember:
                    rows = lines_memo.get((ci, text))  # read earlier in this batch
                    if rows is None:
                        rows = [self._typed(ci, f) for f in occurrences]
                        if len(lines_memo) >= _COLUMNS_MEMO:
                            lines_memo.clear()
                        lines_memo[(ci, text)] = rows
                else:
                    rows = [columns(c, f, self.catalog) for f in occurrences]
            for sub, known in enumerate(rows):
                row = known.copy()
                row["details"] = known["details"].copy()
                if quote:
                    row["details"]["quote"] = LAST_ERROR_QUOTE
                if cut is not None:
                    row["details"]["truncated_at"] = MAX_LINE_BYTES
                    row["details"]["line_bytes"] = b - a
                    if cut:
                        row["details"]["excerpt_from"] = cut
                stream.append(Hit(seg=seg, line=phys, sub=sub, c=c, row=row, prefix=prefix, text=text,
                                  message=message))
        return per_stream

    def _typed(self, ci: int, f: dict[str, str]) -> dict:
        """``columns`` of occurrence ``f`` of signature ``ci``, remembered (``_columns``): not to be changed."""
        key = (ci, *f.items())
        known = self._columns.get(key)
        if known is None:
            if len(self._columns) >= _COLUMNS_MEMO:
                self._columns.clear()
            known = self._columns[key] = columns(self.catalog.entries[ci], f, self.catalog)
        return known

    def _long_line(self, buf: bytes, a: int, b: int, sig: int
                   ) -> tuple[str, str, int, list[dict[str, str]]]:
        """Read signature ``sig`` on a line ``buf[a:b]`` longer than ``MAX_LINE_BYTES``, in bounded pieces.

        Returns ``(head, excerpt, start, occurrences)``: ``head``, the line's
        first ``MAX_LINE_BYTES`` bytes as text (its prefix: stamps, host);
        ``excerpt``, at most ``MAX_LINE_BYTES`` bytes as text that the fields
        were read from; ``start``, the excerpt's byte offset in the line;
        ``occurrences``, what :func:`ingest.extract.fields` read (empty when
        the excerpt does not hold the match). The head is read first; when the
        signature's match lies beyond it, the matcher locates its first match
        and the excerpt starts just before it (or, when the matcher knows only
        where it ends, ends just after it). A UTF-8 character split by a cut
        is left out. Regexes never run over more than ``MAX_LINE_BYTES`` (a
        backtracking pattern over a 10 MB line could run for hours).
        """
        c = self.catalog.entries[sig]
        head = _text(buf, a, a + MAX_LINE_BYTES, cut_start=False)
        found = fields(c, head)
        first_match = getattr(self.matcher, "first_match", None)
        if found or first_match is None:
            return head, head, 0, found
        where = first_match(buf[a:b], sig)
        if where is None:
            return head, head, 0, found
        start, end = where
        if start is not None:  # from a little before the match's start (\b, lookbehinds)
            s = a + max(0, start - _AROUND_MATCH)
            e = min(b, s + MAX_LINE_BYTES)
        else:  # only the end is known: to a little after it (lookaheads, optional tails)
            e = min(b, a + end + _AROUND_MATCH)
            s = max(a, e - MAX_LINE_BYTES)
        if s == a:  # the head: already read, and it did not hold the match
            return head, head, 0, found
        excerpt = _text(buf, s, e, cut_start=True)
        return head, excerpt, s - a, fields(c, excerpt)


_PREFIX_FIELDS = attrgetter(*(f.name for f in dataclasses.fields(Prefix)))


def _copy_prefix(p: Prefix) -> Prefix:
    """A new ``Prefix`` equal to ``p`` (~1/6 of ``parse_prefix``'s cost on a kernel line; fields not copied deeper:
    ``resolve_times`` replaces them, it does not change them in place)."""
    return Prefix(*_PREFIX_FIELDS(p))


#: ``details.quote`` of an NCCL message that a framework's exception quotes after "Last error:" (PyTorch's
#: ``DistBackendError`` / ``ProcessGroupNCCL`` append ``ncclGetLastError()``, the text of NCCL's last WARN, without
#: its ``host:pid:tid [cudaDev] file:line NCCL WARN`` prefix): a copy of a report, not a report of its own when the
#: WARN is in the logs too (rule ``nccl_warn.explains_its_last_error_quote``). Seen in deepspeedai/DeepSpeed#6875
#: (the WARN, then its copy) and NVIDIA/nccl#2076 (the copy alone).
LAST_ERROR_QUOTE = "ncclGetLastError"
_LAST_ERROR = re.compile(rb"(?:^|\n)(?:[^\n]{0,40}|[^\n]{0,200}(?:[\]:)] |[\]>]:))Last error:[^\S\n]*\Z")


def _after_last_error(buf: bytes, a: int) -> bool:
    """The line before the one starting at byte ``a`` of ``buf`` ends in "Last error:" after its prefixes (at most
    40 bytes of any, or up to 200 ending in ``] ``, ``: ``, ``) ``, ``]:`` or ``>:``: a torchrun ``[rankN]:``, a
    stamp, Ray's ``(Worker pid=N, ip=…) ``, a syslog tag, Open MPI's ``[1,3]<stderr>:``): the line at ``a`` is
    NCCL's last error as an exception quotes it. c10's ``[rankN]:`` and Open MPI's label print no blank after them:
    behind a syslog tag or Ray's label, over 40 bytes, the copy read as a second report (a break-it pass). The
    caller asks it only of a line without NCCL's own ``host:pid:tid [dev]`` prefix (a line NCCL printed is no
    copy)."""
    if a < 12 or buf[a - 1] != 0x0A:
        return False
    lo = max(0, a - 260)
    # the pattern's literal, looked for first over the same bytes (no copy): most lines before an NCCL line hold none
    return buf.rfind(b"Last error:", lo, a - 1) >= 0 and _LAST_ERROR.search(buf, lo, a - 1) is not None


#: occurrences whose typed columns a pipeline remembers (``Pipeline._columns``), and lines whose occurrences'
#: typed columns it remembers (``Pipeline._lines``); then each starts again. Only
#: lines of at most ``_COLUMNS_MEMO_LINE`` characters are remembered (their fields are shorter), so each memo
#: holds at most ~16,384 × (512 characters of key + the rows): ~25 MB
_COLUMNS_MEMO = 1 << 14
_COLUMNS_MEMO_LINE = 512
#: bytes an excerpt of a long line keeps before (or after) the match it was cut for
_AROUND_MATCH = 1024
_UTF8 = codecs.getincrementaldecoder("utf-8")


def _text(buf: bytes, s: int, e: int, *, cut_start: bool) -> str:
    """``buf[s:e]`` as text, where ``s`` (when ``cut_start``) and ``e`` may cut a UTF-8 character in two:
    such a character is left out rather than read as U+FFFD. Other invalid bytes read as U+FFFD."""
    if cut_start:
        n = 0
        while n < 3 and s < e and 0x80 <= buf[s] < 0xC0:  # continuation bytes of a character begun before s
            s += 1
            n += 1
    return _UTF8("replace").decode(buf[s:e], final=False)  # holds back a character cut at the end


def _locate(buf: bytes, starts: np.ndarray, hits: list[LineHit]
            ) -> tuple[list[tuple[int, int, int, int, list[int]]], int]:
    """(segment, logical line within it, start, end, signatures) per hit line, and the lines of ``buf``.

    Lines are numbered by the newlines before a byte, taken from the block counts of
    :func:`newlines_per_block` (the total, and where each block starts) plus a ``bytes.count`` from the
    block's start, or from the previous hit or segment start when that lies in the same block: at most
    ``NEWLINE_BLOCK`` bytes are counted per hit. A segment's own last newline ends its last line
    (:func:`_ending_in_newline`).
    """
    before = newlines_per_block(buf)
    out = []
    seg_of = np.searchsorted(starts, [h[0] for h in hits], side="right").tolist() if hits else []
    pos = newlines = 0  # newlines before byte pos
    cur, first = -1, 0  # segment of the previous hit; newlines before that segment's start

    def upto(p: int) -> int:  # newlines before byte p >= pos
        k = p // NEWLINE_BLOCK
        if pos >= k * NEWLINE_BLOCK:
            return newlines + buf.count(b"\n", pos, p)
        return before[k] + buf.count(b"\n", k * NEWLINE_BLOCK, p)

    for (a, b, sigs), si in zip(hits, seg_of):
        si -= 1
        if si != cur:
            s0 = int(starts[si])
            newlines, pos = upto(s0), s0
            cur, first = si, newlines
        newlines, pos = upto(a), a
        out.append((si, newlines - first, a, b, sigs))
    return out, before[-1] + 1 - _ending_in_newline(buf, starts)


#: bytes per block of :func:`newlines_per_block`: the most ``_locate`` counts with ``bytes.count`` per hit line
NEWLINE_BLOCK = 2048
#: blocks compared per numpy call (256 KB of scratch)
_BLOCKS_PER_CALL = 128


def newlines_per_block(buf: bytes) -> list[int]:
    """Newlines in ``buf`` before each multiple of ``NEWLINE_BLOCK``: item ``k`` counts those in
    ``buf[:k * NEWLINE_BLOCK]`` for ``k`` up to ``len(buf) // NEWLINE_BLOCK``, and the last item all of them.

    numpy compares 256 KB at a time into a reused scratch and counts each block's bits (``bitwise_count`` over
    64-bit words): ~11 ms for a 60 MB batch, against ~24 ms for ``bytes.count`` over the same bytes."""
    full = len(buf) // NEWLINE_BLOCK
    counts = np.empty(full + 2, dtype=np.int64)
    counts[0] = 0
    if full:
        arr = np.frombuffer(buf, dtype=np.uint8, count=full * NEWLINE_BLOCK)
        scratch = np.empty(_BLOCKS_PER_CALL * NEWLINE_BLOCK, dtype=np.uint8)
        words = NEWLINE_BLOCK // 8
        for k in range(0, full, _BLOCKS_PER_CALL):
            r = min(_BLOCKS_PER_CALL, full - k)
            eq = scratch[:r * NEWLINE_BLOCK]
            np.equal(arr[k * NEWLINE_BLOCK:(k + r) * NEWLINE_BLOCK], 10, out=eq.view(np.bool_))
            np.sum(np.bitwise_count(eq.view(np.uint64)).reshape(r, words), axis=1, out=counts[k + 1:k + r + 1])
    counts[full + 1] = buf.count(b"\n", full * NEWLINE_BLOCK)
    return np.cumsum(counts).tolist()


def _ending_in_newline(buf: bytes, starts: np.ndarray) -> int:
    """How many segments of ``buf`` (segment offsets ``starts``; segments joined by ``\\n``) end with a line
    end of their own: a file or value ``"a\\nb\\n"`` holds two lines, not the three that counting its
    newlines plus one gives. Read with numpy at each segment's last byte, not per segment in Python."""
    if not len(starts) or not buf:
        return 0
    last = np.empty(len(starts), dtype=np.int64)
    last[:-1] = starts[1:] - 2  # the byte before the separator that follows the segment
    last[-1] = len(buf) - 1
    last = last[last >= starts]  # empty segments have no last byte
    return int(np.count_nonzero(np.frombuffer(buf, dtype=np.uint8)[last] == 10))


class _Clock:
    """Adds the thread's CPU time since the last lap to ``timings[stage]``; does nothing without ``timings``."""

    __slots__ = ("timings", "t")

    def __init__(self, timings: dict[str, float] | None) -> None:
        self.timings = timings
        self.t = time.thread_time() if timings is not None else 0.0

    def lap(self, stage: str) -> None:
        if self.timings is not None:
            t = time.thread_time()
            self.timings[stage] = self.timings.get(stage, 0.0) + t - self.t
            self.t = t
