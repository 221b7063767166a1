"""The pure ingest path: decoded segments -> Arrow record batches.

``frame`` (continuation lines) -> one Hyperscan scan over all lines of the
batch (``match``) -> fields from hit lines only (``extract``) -> per-segment
passes (``assemble``) -> Arrow tables in the schemas of ``schemas.events`` and
``schemas.samples``. The Kafka consumer, ``diagnose``, the tests and the
benchmarks all run this same function.
"""

from __future__ import annotations

import time
from bisect import bisect_right
from dataclasses import dataclass, field
from datetime import timezone, tzinfo

import orjson
import pyarrow as pa

from ingest.assemble import Hit, assemble
from ingest.catalog import Catalog, default_catalog
from ingest.decode import MAX_LINE_BYTES, Decoded, Reject
from ingest.extract import columns, fields
from ingest.frame import frame
from ingest.match import HyperscanMatcher, Matcher, best, newline_offsets
from ingest.prefix import parse_prefix
from schemas.events import EVENTS_SCHEMA
from schemas.samples import LINK_SAMPLES_SCHEMA, TOPOLOGY_SCHEMA


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

        ``timings``, when given, accumulates CPU seconds per stage (``frame``,
        ``match``, ``extract``, ``assemble``, ``arrow``): the benchmark's profile.
        """
        clock = _Clock(timings)
        segs = decoded.segments
        framed = [frame(s.data) for s in segs]
        buf = b"\n".join(f.scan for f in framed)
        nl = newline_offsets(buf)
        # first logical line index of each segment in the joined buffer
        starts: list[int] = []
        n = 0
        for f in framed:
            starts.append(n)
            n += f.scan.count(b"\n") + 1
        clock.lap("frame")
        hits_by_line = self.matcher.scan(buf)
        clock.lap("match")
        per_stream: dict[str, list[Hit]] = {}
        for line in sorted(hits_by_line):
            si = bisect_right(starts, line) - 1
            seg, fr = segs[si], framed[si]
            local = line - starts[si]
            a = int(nl[line - 1]) + 1 if line else 0
            b = int(nl[line]) if line < len(nl) else len(buf)
            raw = buf[a:b]
            text = raw[:MAX_LINE_BYTES].decode("utf-8", "replace")
            phys = fr.first_line[local] if fr.first_line else local
            message = (fr.original or {}).get(local) or raw.decode("utf-8", "replace")
            c = self.catalog.entries[best(self.catalog, hits_by_line[line])]
            occurrences = fields(c, text)
            if not occurrences:  # the Hyperscan form matched but the full regex did not
                continue
            prefix = parse_prefix(text, ref_us=seg.ref_ts, tz=self.tz)
            for sub, f in enumerate(occurrences):
                row = columns(c, f, self.catalog)
                if len(raw) > MAX_LINE_BYTES:
                    row["details"]["truncated_at"] = MAX_LINE_BYTES
                per_stream.setdefault(seg.stream, []).append(Hit(seg=seg, line=phys, sub=sub, c=c, row=row,
                                                                 prefix=prefix, text=text, message=message))
        clock.lap("extract")
        events, samples, topo = [], [], []
        # lines of one stream (a file, or a topic/partition/key) share carried context across its messages
        for hits in per_stream.values():
            out = assemble(hits, self.tz)
            events.extend(out.events)
            samples.extend(out.link_samples)
            topo.extend(out.topology)
        clock.lap("assemble")
        out_batch = Batch(
            events=to_table(events, EVENTS_SCHEMA),
            link_samples=to_table(samples, LINK_SAMPLES_SCHEMA),
            topology=to_table(topo, TOPOLOGY_SCHEMA),
            rejects=list(decoded.rejects),
            lines=n if segs else 0,
            bytes=len(buf),
        )
        clock.lap("arrow")
        return out_batch


class _Clock:
    """Adds the CPU time since the last lap to ``timings[stage]``; does nothing without ``timings``."""

    __slots__ = ("timings", "t")

    def __init__(self, timings: dict[str, float] | None) -> None:
        self.timings = timings
        self.t = time.process_time() if timings is not None else 0.0

    def lap(self, stage: str) -> None:
        if self.timings is not None:
            t = time.process_time()
            self.timings[stage] = self.timings.get(stage, 0.0) + t - self.t
            self.t = t
