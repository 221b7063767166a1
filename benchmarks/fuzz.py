"""Properties of the pure input path, checked on generated input (hypothesis), and a long fuzz run.

The properties (each is a test in ``tests/test_properties.py``; ``python -m benchmarks.fuzz`` runs them
for longer and prints how long):

* ``decode_partition_until`` gives exactly what ``decode_message`` gives record by record, up to the
  record whose text and rejected parts pass its limit (its runs of one-line records, ``Records``, taken
  record by record: ``per_record``), and the pipeline gives the same events, samples, facts, line and byte
  counts from its runs as from the records one by one;
* ``decode_message`` never raises on any Kafka value, key, headers and timestamp, and loses nothing: a
  non-empty value gives segments or a reject with a reason;
* the pipeline never raises on any decoded text; every event's message is text of its input line (fields
  come only from matched lines), and its time is plausible (2000 – 2100) or the arrival time;
* hit lines are numbered within their segment, and a batch's lines counted, as counting newlines one by one
  would (``ingest.pipeline._locate``, whose block counts skip most of the bytes);
* an NDJSON value of Vector records read column by column (``ingest.decode._vector_columns``) gives the
  segments and rejects of the record-by-record reading, whatever near misses it holds;
* ``parse_prefix`` never raises (an implausible time it returns is set aside by ``assemble``);
* a real example line of any catalog signature, behind any stamp style its source really carries (kernel
  stamps for dmesg, logging/ISO stamps for NCCL and NVML), gives at least the signatures it gives alone.

Strategies draw from the catalog's own example lines (``ingest/signatures/*.yaml``), mutated, so the fuzz
reaches the extractors and not only the "no match" path.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from datetime import timezone
from types import SimpleNamespace

import orjson
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from ingest.catalog import default_catalog
from ingest.decode import (Decoded, Segment, decode_message, decode_partition, decode_partition_until, per_record,
                           strip_terminal_codes)
from ingest.frame import lf_line_ends
from ingest.prefix import parse_prefix, plausible

#: signature id -> its real example lines (each a single line: multi-line examples are left out here)
BY_SIG = {c.sig.id: [x.line for x in c.sig.examples if "\n" not in x.line] for c in default_catalog().entries}
EXAMPLES = sorted({ln for lines in BY_SIG.values() for ln in lines})
#: the stamps each log source really carries in front of its lines
SOURCE_STAMPS = {
    "dmesg": ["", "[ 1234.567890] ", "[Mon Nov 30 03:12:01 2026] ", "Nov 30 03:12:01 node07 kernel: ",
              "2026-11-30T03:12:01.123456+00:00 node07 kernel: ", "[  +0.000894] "],
    "nccl": ["", "2026-11-30 03:12:01,123 ", "2026-11-30T03:12:01.123456Z "],
    "nvml": ["", "2026-11-30T03:12:01.123456Z "],
}
SOURCE_OF = {ln: c.sig.source for c in default_catalog().entries for ln in BY_SIG[c.sig.id]}
#: stamp styles a line may carry in front (raw dmesg, dmesg -T, syslog, ISO, glog/c10, journald short-iso)
STAMPS = ["", "[ 1234.567890] ", "[Mon Nov 30 03:12:01 2026] ", "Nov 30 03:12:01 node07 kernel: ",
          "2026-11-30T03:12:01.123456+00:00 node07 kernel: ", "[rank3]:[E1130 03:12:01.123456789 x.cpp:1] ",
          "2026-11-30 03:12:01,123 ", "[  +0.000894] "]
T0_MS = 1_796_000_000_000  # 2026-11-30, ms


def _mutate(draw, line: str) -> str:
    ops = draw(st.lists(st.tuples(st.sampled_from(["cut", "insert", "dup", "case"]), st.integers(0, 10_000),
                                  st.text(max_size=8)), max_size=3))
    for op, at, txt in ops:
        i = at % (len(line) + 1)
        if op == "cut":
            line = line[:i] + line[i + len(txt) + 1:]
        elif op == "insert":
            line = line[:i] + txt + line[i:]
        elif op == "dup":
            line = line[:i] + line[i:i + 20] + line[i:]
        else:
            line = line.swapcase() if at % 2 else line
    return line


@st.composite
def log_lines(draw) -> str:
    """A log line: a catalog example (maybe mutated) behind a stamp style, or arbitrary text."""
    if draw(st.integers(0, 4)) == 0:
        return draw(st.text(max_size=300))
    line = draw(st.sampled_from(EXAMPLES))
    if draw(st.booleans()):
        line = _mutate(draw, line)
    return draw(st.sampled_from(STAMPS)) + line


@st.composite
def kafka_values(draw) -> bytes:
    """A Kafka value: plain lines, NDJSON envelopes (valid or not), raw bytes, maybe gzip/zstd."""
    import gzip

    import zstandard

    kind = draw(st.sampled_from(["text", "ndjson", "bytes", "array"]))
    lines = draw(st.lists(log_lines(), min_size=1, max_size=8))
    if kind == "text":
        data = "\n".join(lines).encode("utf-8", "surrogatepass") if draw(st.booleans()) else \
            "\r\n".join(lines).encode("utf-8", "replace")
    elif kind == "ndjson":
        recs = []
        for ln in lines:
            rec = {"message": ln, "host": draw(st.sampled_from(["node07", "", None, 7])),
                   "timestamp": draw(st.one_of(st.just("2026-11-30T03:12:01.5Z"), st.integers(-10**20, 10**20),
                                               st.floats(allow_nan=True), st.text(max_size=30), st.none()))}
            text = json.dumps(rec)  # the standard library writes integers past 64 bits and NaN, as some shippers do
            recs.append(text if draw(st.integers(0, 5)) else text[:draw(st.integers(0, 40))])
        data = "\n".join(recs).encode()
    elif kind == "array":
        data = orjson.dumps([{"message": ln, "host": "node07"} for ln in lines])[:draw(st.integers(1, 10_000))]
    else:
        data = draw(st.binary(max_size=400))
    codec = draw(st.sampled_from(["none", "none", "gzip", "zstd", "truncated"]))
    if codec == "gzip":
        data = gzip.compress(data)
    elif codec == "zstd":
        data = zstandard.ZstdCompressor().compress(data)
    elif codec == "truncated":
        data = gzip.compress(data)[: max(1, len(data) // 2)]
    return data


#: envelope fields beside Vector's own that change how a record is read, and fields any shipper adds
EXTRA_FIELDS = {"file": "/var/log/kern.log", "source_type": "file", "MESSAGE": "m", "format": "nvsmi-links/1",
                "host.name": "node09", "_HOSTNAME": "node09", "hostname": "node09",
                "__REALTIME_TIMESTAMP": "1796000000000000", "__MONOTONIC_TIMESTAMP": "1234", "@timestamp": 1.5,
                "log": "l", "time": "2026-11-30T03:12:01Z"}


@st.composite
def rfc3339_stamps(draw, misses: bool = True) -> object:
    """A ``timestamp`` field: an RFC 3339 UTC stamp with 0 – 12 digits of fraction (Vector prints 0, 3, 6 or 9),
    from 1990 to 2110; with ``misses``, as often as not a near miss (Feb 30, hour 24, second 60, lower-case
    ``z``, an offset, a blank for ``T``, no seconds, non-ASCII digits) or another type."""
    from datetime import datetime

    t = draw(st.datetimes(datetime(1990, 1, 1), datetime(2110, 1, 1)))
    digits = draw(st.sampled_from([0, 3, 6, 9, 9, 9, 1, 2, 4, 5, 7, 8, 10, 12]))
    frac = f"{t.microsecond:06d}{draw(st.integers(0, 999_999)):06d}"[:digits]
    stamp = t.strftime("%Y-%m-%dT%H:%M:%S") + (f".{frac}" if digits else "") + "Z"
    miss = draw(st.integers(0, 15)) if misses else 0
    if miss == 1:
        stamp = stamp.replace(stamp[5:10], "02-30")
    elif miss == 2:
        stamp = stamp[:11] + "24" + stamp[13:]
    elif miss == 3:
        stamp = stamp[:17] + "60" + stamp[19:]
    elif miss == 4:
        stamp = stamp[:-1] + draw(st.sampled_from(["z", "+00:00", "+05:30", "-01:00", ""]))
    elif miss == 5:
        stamp = stamp[:10] + draw(st.sampled_from([" ", "t", "_"])) + stamp[11:]
    elif miss == 6:
        stamp = stamp[:16] + "Z"
    elif miss == 7:
        stamp = stamp.replace("1", "\uff11")
    elif miss == 8:
        return draw(st.one_of(st.none(), st.integers(), st.floats(), st.text(max_size=30)))
    return stamp


@st.composite
def vector_values(draw) -> bytes:
    """An NDJSON value of Vector records (``message``, ``timestamp``, ``host``, ``file``, ``source_type``).
    Half of them clean: string fields, RFC 3339 stamps (what the column-by-column reading takes), messages
    that may still not join a run (several lines, none, a leading blank). The others hold near misses: another
    field that changes how a record is read, a key spelled with a ``\\u`` escape, a field missing or of
    another type, a number past a double, a lone surrogate, a broken line, stamps of several shapes."""
    n = draw(st.integers(1, 30))
    clean = draw(st.booleans())
    stamps = draw(st.lists(rfc3339_stamps(misses=not clean), min_size=1, max_size=3))
    hosts = ["node07", "node08", ""] + ([] if clean else [None, 7, {"name": "n"}])
    odd = ["", " x", "|a|", "a\r", "a\nb", "\x1b[31mred\x1b[0m", "ünï", "😀"]
    odd += [] if clean else ["\ud800x", 5, None]
    out = []
    for _ in range(n):
        rec = {"file": "/var/log/kern.log", "host": draw(st.sampled_from(hosts)),
               "message": draw(st.one_of(log_lines(), st.sampled_from(odd))),
               "source_type": "file", "timestamp": draw(st.sampled_from(stamps))}
        if not clean:
            for k in draw(st.lists(st.sampled_from(sorted(EXTRA_FIELDS)), max_size=2)) if draw(st.integers(0, 3)) == 0 \
                    else ():
                rec[k] = EXTRA_FIELDS[k]
            if draw(st.integers(0, 9)) == 0:
                del rec[draw(st.sampled_from(["message", "timestamp", "host"]))]
        text = json.dumps(rec, ensure_ascii=draw(st.booleans()))
        if not clean and draw(st.integers(0, 9)) == 0:
            text = text.replace('"message"', '"mess\\u0061ge"').replace('"MESSAGE"', '"MESS\\u0041GE"')
        if not clean and draw(st.integers(0, 14)) == 0:  # a number past a double, in a field read or not
            k = draw(st.sampled_from(["log", "msg", "@timestamp", "time", "date", "x", "host"]))
            text = text[:-1] + f', "{k}": {draw(st.sampled_from(["1e999", "-1e999", "1" + "0" * 400 + ".0"]))}}}'
        if not clean and draw(st.integers(0, 29)) == 0:
            text = text[:draw(st.integers(0, len(text)))]
        out.append(text)
    return "\n".join(out).encode("utf-8", "surrogatepass") + draw(st.sampled_from([b"", b"\n"]))


def by_stream(segments: list) -> list[Segment]:
    """``segments`` record by record (``per_record``), each stream's in their order, streams one after another."""
    return sorted(per_record(segments), key=lambda s: s.stream)


def check_decode(value: bytes, key: bytes | None, ts_ms: int, headers: list[tuple[str, bytes]]) -> Decoded:
    d = decode_message(value, topic="fleet.dmesg", partition=0, offset=1, key=key, timestamp_ms=ts_ms,
                       headers=headers)
    assert d.segments or d.rejects, "a value gave neither segments nor a reject"
    for r in d.rejects:
        assert r.reason and r.error_code, r
    return d


def check_pipeline(pipeline, lines: list[str]) -> None:
    text = "\n".join(lines)
    seg = Segment(data=text.encode("utf-8", "replace"), origin="fuzz:x", stream="fuzz", host="node07",
                  ref_ts=T0_MS * 1000, ref_basis="kafka", ingest_ts=T0_MS * 1000)
    b = pipeline.run(Decoded(segments=[seg]))
    # terminal control sequences are no part of a line (decode.strip_terminal_codes): an nF one mid-line, ESC SP SP w,
    # left "0hat()" of "0\x1b  what()", no part of the text as written (a CI run's draw)
    src = strip_terminal_codes(text.encode("utf-8", "replace")).decode("utf-8", "replace")
    # a line a "\r" redrew is read as a terminal shows it, behind its collector's header (frame.lf_line_ends): a
    # message may join the two (a draw of "Dec  1 03:12:02 h p[1]: x\r<fault line>")
    shown = lf_line_ends([strip_terminal_codes(text.encode("utf-8", "replace"))])[0].decode("utf-8", "replace")
    for r in b.events.to_pylist():
        first = r["message"].split("\n", 1)[0][:200]
        assert first in src or first in shown or "…" in r["message"], (first, lines)  # long lines are cut around
        ts = r["ts"].timestamp() * 1e6
        assert plausible(ts) or r["ts_basis"] in ("kafka", "file"), r


def check_prefix(line: str) -> None:
    p = parse_prefix(line, ref_us=T0_MS * 1000, tz=timezone.utc)
    assert p.ts is None or isinstance(p.ts, int)


def _props(n: int):
    """The properties as hypothesis-decorated functions with ``n`` examples each."""
    from ingest.pipeline import Pipeline

    pipe = Pipeline()
    cfg = settings(max_examples=n, deadline=None, database=None, suppress_health_check=list(HealthCheck))

    @cfg
    @given(kafka_values(), st.one_of(st.none(), st.binary(max_size=40)), st.integers(-2**62, 2**62),
           st.lists(st.tuples(st.sampled_from(["host", "x"]), st.binary(max_size=20)), max_size=2))
    def decode(value, key, ts_ms, headers):
        check_decode(value, key, ts_ms, headers)

    @cfg
    @given(st.lists(st.tuples(
        st.one_of(kafka_values(), log_lines().map(lambda ln: ln.encode("utf-8", "surrogatepass")),
                  st.sampled_from([None, b"", b"[  12.345678] NVRM: Xid", b"{'loss': 1.2}", b'{"message": "x"}',
                                   b'[{"message": "x"}]', b"\xef\xbb\xbfline", b" {}"])),
        st.sampled_from([None, b"", b"node07", b"node08", b"\xff", b"\xfe"]),
        st.lists(st.tuples(st.sampled_from(["host", "x"]), st.binary(max_size=20)), max_size=2)), max_size=12),
        st.one_of(st.none(), st.integers(0, 3000)))
    # binary values in two keys' runs: their rejects came stream by stream, offset 2 before 1 (a draw of this property)
    @example([(b"[ 1234.567890] \t Link 0: 25 GB/s", b"node08", []), (b"\x1e\x00", b"node07", []),
              (b"\x1e\x00", b"node08", [])], None)
    def decode_partition_is_decode_message(records, max_bytes):
        rs = [SimpleNamespace(value=v, key=k, headers=h, offset=i, timestamp=T0_MS + i)
              for i, (v, k, h) in enumerate(records)]
        one, read, size = Decoded(), 0, 0
        for r in rs:  # record by record until the text passes max_bytes, that record included
            d = decode_message(r.value, topic="fleet.dmesg", partition=3, offset=r.offset, key=r.key,
                               timestamp_ms=r.timestamp, headers=r.headers)
            one.segments += d.segments
            one.rejects += d.rejects
            read, size = read + 1, size + sum(len(s.data) for s in d.segments) + sum(len(r.data) for r in d.rejects)
            if max_bytes is not None and size > max_bytes:
                break
        got, got_read, got_size = decode_partition_until("fleet.dmesg", 3, rs, max_bytes)
        # the same segments in the same order within each stream (a key's), the same rejects in the same order
        assert (by_stream(got.segments), got.rejects, got_read, got_size) == (
            by_stream(one.segments), one.rejects, read, size)
        assert got.held_bytes() == size
        if max_bytes is None:
            whole = decode_partition("fleet.dmesg", 3, rs)
            assert (by_stream(whole.segments), whole.rejects) == (by_stream(one.segments), one.rejects)

    @cfg
    @given(st.lists(st.tuples(
        st.one_of(log_lines().map(lambda ln: ln.encode("utf-8", "surrogatepass")), kafka_values(),
                  st.sampled_from([b"|  1 | x |", b"|     | wrapped text |", b"  continued", b"a\r", b"\rb", b"\r",
                                   b"x\r\n  y", b"a\n", b"a\rb", b"\r\r",
                                   b"[  12.345678] NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.",
                                   b'{"message": "x"}', None, b""])),
        # b"\xff" and b"\xfe" name one host ("\ufffd"): one stream, whose lines keep their order across both
        st.sampled_from([b"node07", b"node07", b"node08", None, b"\xff", b"\xfe"])), max_size=40))
    def partition_events_are_record_by_record(records):
        rs = [SimpleNamespace(value=v, key=k, headers=[], offset=i, timestamp=T0_MS + i)
              for i, (v, k) in enumerate(records)]
        whole = decode_partition("fleet.dmesg", 3, rs)
        one = Decoded(per_record(whole.segments), whole.rejects)
        a, b = pipe.run(whole), pipe.run(one)
        assert (a.lines, a.bytes, sorted(r.origin for r in a.rejects)) == (
            b.lines, b.bytes, sorted(r.origin for r in b.rejects))
        for t in ("events", "link_samples", "topology"):  # rows of different streams may come in another order
            assert sorted(map(repr, getattr(a, t).to_pylist())) == sorted(map(repr, getattr(b, t).to_pylist())), t

    @cfg
    @given(st.lists(vector_values(), min_size=1, max_size=3), st.integers(1, 4000), st.sampled_from([None, "k"]))
    def ndjson_columns_are_record_by_record(values, chunk, host):
        import ingest.decode as dec

        data = b"\n".join(v.rstrip(b"\n") for v in values)
        where = dict(origin="kafka:fleet.dmesg/0/1", stream="s", host=host, ref_ts=T0_MS * 1000, ref_basis="kafka",
                     ingest_ts=T0_MS * 1000, source=None, runs=True)
        keep, dec._NDJSON_CHUNK = dec._NDJSON_CHUNK, chunk  # chunks of a few records: runs across their ends
        try:
            assert dec.decode_ndjson(data, **where) == dec.decode_ndjson(data, columnar=False, **where)
        finally:
            dec._NDJSON_CHUNK = keep

    @cfg
    @given(st.lists(st.one_of(st.text("ab\n |", max_size=60).map(str.encode),
                              st.integers(0, 9000).map(lambda n: (b"ab\n" * n)[:n])), min_size=1, max_size=8),
           st.lists(st.integers(0, 10**6), max_size=12))
    def line_numbers(segments, picks):
        from ingest.frame import frame_all
        from ingest.pipeline import _locate

        buf, _framed, starts = frame_all(segments)
        ends = [int(x) - 1 for x in starts[1:]] + [len(buf)]
        spans = [(si, a, buf.find(b"\n", a, e) if b"\n" in buf[a:e] else e)
                 for si, (s0, e) in enumerate(zip(starts.tolist(), ends))
                 for a in [s0] + [i + 1 for i in range(s0, e) if buf[i] == 10]
                 if a < e and buf[a] != 10]  # a hit line is not empty
        chosen = sorted({spans[p % len(spans)] for p in picks} if spans else set(), key=lambda x: x[1])
        got, lines = _locate(buf, starts, [(a, b, [0]) for _si, a, b in chosen])
        assert got == [(si, buf.count(b"\n", int(starts[si]), a), a, b, [0]) for si, a, b in chosen]
        assert lines == sum(buf[s0:e].count(b"\n") + 1 - buf[s0:e].endswith(b"\n")
                            for s0, e in zip(starts.tolist(), ends))

    @cfg
    @given(st.lists(log_lines(), min_size=1, max_size=20))
    @example(["0\x1b  what():  CUDA error: uncorrectable ECC error encountered"])  # an nF sequence mid-line (a CI run)
    def pipeline(lines):
        check_pipeline(pipe, lines)

    @cfg
    @given(log_lines())
    def prefix(line):
        check_prefix(line)

    def signatures(text: str) -> set[str]:
        seg = Segment(data=text.encode(), origin="fuzz:x", stream="fuzz", host="node07", ref_ts=T0_MS * 1000,
                      ref_basis="kafka", ingest_ts=T0_MS * 1000)
        b = pipe.run(Decoded(segments=[seg]))
        return {s for t in (b.events, b.link_samples, b.topology) if "signature" in t.column_names
                for s in t.column("signature").to_pylist() if not s.startswith("clock.")}

    @cfg
    @given(st.sampled_from(EXAMPLES), st.integers(0, 5))
    def examples_behind_stamps(line, k):
        # report output (nvidia-smi tables and -q / nvlink blocks) is shipped as printed, without stamps; a tool's
        # rows a signature reads from the line's start (ibdev2netdev, --query-gpu CSV) are read behind them too
        report = line[:1].isspace() or line[:1] == "|"
        stamps = SOURCE_STAMPS[SOURCE_OF[line]] if not report else [""]
        stamp = stamps[k % len(stamps)]
        bare = signatures(line)
        assert bare <= signatures(stamp + line), (stamp + line, bare)

    return {"decode": decode, "decode_partition_is_decode_message": decode_partition_is_decode_message,
            "partition_events_are_record_by_record": partition_events_are_record_by_record,
            "ndjson_columns_are_record_by_record": ndjson_columns_are_record_by_record,
            "line_numbers": line_numbers, "pipeline": pipeline,
            "prefix": prefix, "examples_behind_stamps": examples_behind_stamps}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.fuzz", description=__doc__.split("\n\n")[0])
    ap.add_argument("--examples", type=int, default=20_000, help="examples per property (default 20,000)")
    ap.add_argument("--only", default="", help="comma-separated property names (default: all; an unknown one "
                    "exits 2 with the list)")
    a = ap.parse_args(argv)
    props = _props(a.examples)
    only = [x for x in a.only.split(",") if x]
    unknown = sorted(set(only) - set(props))
    if unknown:  # a typo would run nothing and pass
        ap.error(f"unknown properties {', '.join(unknown)}; known: {', '.join(props)}")
    failed = 0
    for name, fn in props.items():
        if only and name not in only:
            continue
        t0 = time.perf_counter()
        try:
            fn()
            status = "ok"
        except Exception as e:  # noqa: BLE001 — report every property, then exit 1
            failed += 1
            status = f"FAILED: {type(e).__name__}: {str(e)[:500]}"
        print(f"{name}: {a.examples} examples in {time.perf_counter() - t0:.1f} s: {status}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
