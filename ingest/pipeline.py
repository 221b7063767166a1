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

import time
from dataclasses import dataclass, field
from datetime import timezone, tzinfo
from operator import attrgetter

import numpy as np
import orjson
import pyarrow as pa

from ingest.assemble import Hit, assemble
from ingest.catalog import Catalog, default_catalog
from ingest.decode import MAX_LINE_BYTES, Decoded, Reject
from ingest.extract import columns, fields
from ingest.frame import Framed, frame_all
from ingest.match import HyperscanMatcher, LineHit, Matcher, best, hit_lines
from ingest.prefix import parse_prefix
from schemas.events import EVENTS_SCHEMA
from schemas.samples import LINK_SAMPLES_SCHEMA, TOPOLOGY_SCHEMA

_DATA = attrgetter("data")


@dataclass(slots=True)
class Batch:
    """What one batch of input became."""

    events: pa.Table
    link_samples: pa.Table
    topology: pa.Table
    rejects: list[Reject] = field(default_factory=list)
    lines: int = 0
    bytes: int = 0


def to_table(rows: list[dict], schema: pa.Schema) -> pa.Table:
    """Rows (dicts; times as µs ints, ``details`` as a dict) to an Arrow table."""
    if not rows:
        return schema.empty_table()
    cols = {}
    for f in schema:
        vals = [r.get(f.name) for r in rows]
        if f.name == "details":
            vals = [orjson.dumps(v, option=orjson.OPT_SORT_KEYS).decode() if v else None for v in vals]
        cols[f.name] = pa.array(vals, type=f.type)
    return pa.table(cols, schema=schema)


class Pipeline:
    """Catalog + compiled matcher; :meth:`run` is pure given its input."""

    def __init__(self, catalog: Catalog | None = None, matcher: Matcher | None = None,
                 tz: tzinfo = timezone.utc) -> None:
        self.catalog = catalog or default_catalog()
        self.matcher = matcher or HyperscanMatcher(self.catalog)
        self.tz = tz

    def run(self, decoded: Decoded, timings: dict[str, float] | None = None) -> Batch:
        """Events, link samples and topology facts of one batch of decoded input.

        ``timings``, when given, accumulates this thread's CPU seconds per stage
        (``frame``, ``match``, ``extract``, ``assemble``, ``arrow``): the benchmark's profile.
        """
        clock = _Clock(timings)
        segs = decoded.segments
        buf, framed, starts = frame_all(list(map(_DATA, segs)))
        clock.lap("frame")
        hits = hit_lines(self.matcher, buf)
        clock.lap("match")
        located, lines = _locate(buf, starts, hits)
        per_stream = self._extract(buf, segs, framed, located)
        clock.lap("extract")
        events, samples, topo = [], [], []
        # lines of one stream (a file, or a topic/partition/key) share carried context across its messages
        for stream_hits in per_stream.values():
            out = assemble(stream_hits, self.tz)
            events.extend(out.events)
            samples.extend(out.link_samples)
            topo.extend(out.topology)
        clock.lap("assemble")
        batch = Batch(
            events=to_table(events, EVENTS_SCHEMA),
            link_samples=to_table(samples, LINK_SAMPLES_SCHEMA),
            topology=to_table(topo, TOPOLOGY_SCHEMA),
            rejects=list(decoded.rejects),
            lines=lines if segs else 0,
            bytes=len(buf),
        )
        clock.lap("arrow")
        return batch

    def _extract(self, buf: bytes, segs: list, framed: dict[int, Framed],
                 located: list[tuple[int, int, int, int, list[int]]]) -> dict[str, list[Hit]]:
        """Fields, prefixes and typed columns of the hit lines, grouped by stream in line order."""
        per_stream: dict[str, list[Hit]] = {}
        entries = self.catalog.entries
        for si, local, a, b, sigs in located:
            seg, fr = segs[si], framed.get(si)
            raw = buf[a:b]
            text = raw[:MAX_LINE_BYTES].decode("utf-8", "replace")
            c = entries[sigs[0] if len(sigs) == 1 else best(self.catalog, sigs)]
            occurrences = fields(c, text)
            if not occurrences:  # the Hyperscan form matched but the full regex did not
                continue
            truncated = len(raw) > MAX_LINE_BYTES
            message = text if not truncated else raw.decode("utf-8", "replace")
            phys = local
            if fr is not None:
                phys = fr.first_line[local] if fr.first_line else local
                message = (fr.original or {}).get(local) or message
            prefix = parse_prefix(text, ref_us=seg.ref_ts, tz=self.tz)
            stream = per_stream.get(seg.stream)
            if stream is None:
                stream = per_stream[seg.stream] = []
            for sub, f in enumerate(occurrences):
                row = columns(c, f, self.catalog)
                if truncated:
                    row["details"]["truncated_at"] = MAX_LINE_BYTES
                stream.append(Hit(seg=seg, line=phys, sub=sub, c=c, row=row, prefix=prefix, text=text,
                                  message=message))
        return per_stream


def _locate(buf: bytes, starts: np.ndarray, hits: list[LineHit]
            ) -> tuple[list[tuple[int, int, int, int, list[int]]], int]:
    """(segment, logical line within it, start, end, signatures) per hit line, and the lines of ``buf``.

    One pass of ``bytes.count`` over the buffer does both: hit lines are
    numbered by counting newlines since the previous hit (or since their
    segment's start), and the tail after the last hit completes the total.
    """
    out = []
    seg_of = np.searchsorted(starts, [h[0] for h in hits], side="right").tolist() if hits else []
    pos = newlines = 0  # newlines before byte pos
    cur, first = -1, 0  # segment of the previous hit; newlines before that segment's start
    for (a, b, sigs), si in zip(hits, seg_of):
        si -= 1
        if si != cur:
            s0 = int(starts[si])
            newlines += buf.count(b"\n", pos, s0)
            cur, first, pos = si, newlines, s0
        newlines += buf.count(b"\n", pos, a)
        pos = a
        out.append((si, newlines - first, a, b, sigs))
    return out, newlines + buf.count(b"\n", pos) + 1


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
