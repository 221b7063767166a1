"""Decode Kafka message values and local files into :class:`Segment` s of lines.

A segment is a run of newline-separated lines that share what the transport
says about them: host, reference time and its basis, and source coordinates.

Message values come in the shapes real shippers produce (DESIGN.md, Inputs):

* plain text, one or many lines; host from the line, else the Kafka key, else
  a ``host`` header;
* NDJSON envelopes, one or many records per value, with field-name presets:
  Vector (``host``, ``timestamp``, ``message``), Fluent Bit (``log`` or
  ``message``, ``hostname``/``host``, ``date`` epoch seconds or ``time``),
  Filebeat (``host.name``, ``@timestamp``, ``message``) and journald export
  JSON (``_HOSTNAME``, ``__REALTIME_TIMESTAMP`` µs, ``MESSAGE``, ``_BOOT_ID``,
  ``__MONOTONIC_TIMESTAMP`` µs) — shared/reference/formats.md §1.7.

Bad input never raises out of here: a record that cannot be read becomes a
:class:`Reject` with a reason (the consumer sends it to the dead-letter topic)
and the rest of the value goes on.
"""

from __future__ import annotations

import gzip
import io
import re
from dataclasses import dataclass, field
from pathlib import Path

import orjson
import zstandard

from ingest.prefix import US, parse_iso_us

TOPIC_SOURCE = {"fleet.dmesg": "dmesg", "fleet.nccl": "nccl", "fleet.nvml": "nvml"}

#: Hard limits: a value or file larger than this is rejected, not read into memory.
MAX_VALUE_BYTES = 64 * 1024 * 1024
#: A line longer than this is cut for matching (the event keeps the cut text and says so).
MAX_LINE_BYTES = 64 * 1024


@dataclass(slots=True)
class Segment:
    """Lines sharing transport facts. Times are µs since the epoch, UTC."""

    data: bytes  # newline-separated lines
    origin: str  # "kafka:<topic>/<partition>/<offset>" or "file:<relpath>"; "#r<n>" for NDJSON record n
    stream: str  # context scope: lines of one stream share carried context (file, or topic/partition/key)
    host: str | None  # envelope host, Kafka key, header, or file-name host
    ref_ts: int  # envelope / Kafka / file time
    ref_basis: str  # "envelope" | "kafka" | "file"
    ingest_ts: int  # Kafka append time or file mtime
    source: str | None = None  # from the topic; None: decided per signature
    line_base: int = 0  # number of the first line (files count from 1)
    boot_ts: int | None = None  # wall time of boot when the envelope tells it (journald)


@dataclass(slots=True)
class Reject:
    """Input that could not be read, with the reason. Nothing is dropped silently."""

    origin: str
    reason: str
    data: bytes
    error_code: str


@dataclass(slots=True)
class Decoded:
    segments: list[Segment] = field(default_factory=list)
    rejects: list[Reject] = field(default_factory=list)


_GZIP = b"\x1f\x8b"
_JSON_OBJECT_START = re.compile(rb'\s*\{\s*["}]')
_ZSTD = b"\x28\xb5\x2f\xfd"


def decompress(data: bytes, limit: int = MAX_VALUE_BYTES) -> bytes:
    """gzip and zstd by magic number; other bytes as they are.

    Raises ``ValueError`` on a corrupt stream or when the output would exceed
    ``limit`` bytes (a decompression bomb).
    """
    if data[:2] == _GZIP:
        with gzip.GzipFile(fileobj=io.BytesIO(data)) as f:
            out = f.read(limit + 1)
    elif data[:4] == _ZSTD:
        with zstandard.ZstdDecompressor().stream_reader(io.BytesIO(data)) as r:
            out = r.read(limit + 1)
    else:
        return data
    if len(out) > limit:
        raise ValueError(f"decompressed size exceeds {limit} bytes")
    return out


def looks_ndjson(data: bytes) -> bool:
    """True when the value starts with a JSON object: ``{`` and then ``"`` or ``}``.

    Only the opening is looked at, so a broken record still goes to the
    dead-letter topic. A plain-text line that starts with a Python dict
    (Hugging Face's trainer prints ``{'loss': 1.23, …}`` on every logging
    step) is text, not a broken envelope.
    """
    return _JSON_OBJECT_START.match(data) is not None


def _host_of(rec: dict) -> str | None:
    for k in ("_HOSTNAME", "hostname", "host"):
        v = rec.get(k)
        if v is None:
            continue
        if isinstance(v, str) and v:
            return v
        if isinstance(v, dict):  # Filebeat / ECS: {"host": {"name": …}}
            n = v.get("name") or v.get("hostname")
            if isinstance(n, str) and n:
                return n
    return None


def _time_of(rec: dict) -> int | None:
    v = rec.get("__REALTIME_TIMESTAMP")
    if v is not None:
        return int(v)  # journald: decimal string of µs since the epoch, UTC
    for k in ("timestamp", "@timestamp", "time", "date"):
        v = rec.get(k)
        if v is None:
            continue
        if type(v) is str:  # the common case first (a str is never a bool or a number)
            t = _rfc3339_us(v)
            if t is None:
                raise ValueError(f"field {k!r} is not an ISO 8601 time: {v[:60]!r}")
            return t
        if isinstance(v, bool):
            raise ValueError(f"field {k!r} is a boolean, not a time")
        if isinstance(v, (int, float)):
            # epoch seconds (Fluent Bit "date"); ms, µs or ns when the number is that large
            x = float(v)
            if x != x or x in (float("inf"), float("-inf")):
                raise ValueError(f"field {k!r} is not a finite number")
            if abs(x) > 1e17:
                return int(x / 1e3)
            if abs(x) > 1e14:
                return int(x)
            if abs(x) > 1e11:
                return int(x * 1e3)
            return int(x * US)
        if isinstance(v, str):
            t = _rfc3339_us(v)
            if t is None:
                raise ValueError(f"field {k!r} is not an ISO 8601 time: {v[:60]!r}")
            return t
        raise ValueError(f"field {k!r} has type {type(v).__name__}, not a time")
    return None


# Vector and Filebeat stamp every record "2026-11-30T03:12:00.123456789Z": read that shape directly, with
# the second's start from a cache (records of one second share it) or else the minute's; anything else
# goes to parse_iso_us, which gives the same answer for this shape, only slower.
_RFC3339_Z = re.compile(r"(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}):(\d{2})(?:\.(\d+))?Z")
_MINUTES: dict[str, int | None] = {}
_SECONDS: dict[str, int] = {}  # "YYYY-MM-DDTHH:MM:SS" already read -> its µs


def _rfc3339_us(v: str) -> int | None:
    base = _SECONDS.get(v[:19])
    if base is not None and v[-1:] == "Z":  # the first 19 characters matched the regex before
        if len(v) == 20:
            return base
        frac = v[20:-1]
        if v[19] == "." and frac.isdecimal():  # isdecimal() is what \d matches in a str pattern
            return base + int(frac[:6].ljust(6, "0"))
    m = _RFC3339_Z.fullmatch(v)
    if m is None:
        return parse_iso_us(v)
    minute, sec, frac = m.groups()
    base = _MINUTES.get(minute, -1)
    if base == -1:
        if len(_MINUTES) >= 4096:
            _MINUTES.clear()
        base = _MINUTES[minute] = parse_iso_us(minute + ":00Z")
    s = int(sec)
    if base is None or s > 59:
        return parse_iso_us(v)
    if len(_SECONDS) >= 4096:
        _SECONDS.clear()
    base = _SECONDS[v[:19]] = base + s * US
    return base + (int(frac[:6].ljust(6, "0")) if frac else 0)


def _message_of(rec: dict) -> str:
    for k in ("MESSAGE", "message", "log", "msg"):
        if k in rec:
            v = rec[k]
            if isinstance(v, str):
                return v
            if isinstance(v, list) and all(isinstance(b, int) and 0 <= b < 256 for b in v):
                # journald: a field that is not valid UTF-8 is an array of byte values
                return bytes(v).decode("utf-8", "replace")
            if v is None:
                raise ValueError(f"field {k!r} is null (journald drops very large fields)")
            raise ValueError(f"field {k!r} has type {type(v).__name__}, not a string")
    raise ValueError("no message field (MESSAGE, message, log or msg)")


def decode_ndjson(data: bytes, *, origin: str, stream: str, host: str | None, ref_ts: int,
                  ref_basis: str, ingest_ts: int, source: str | None) -> Decoded:
    """One segment per NDJSON record; unreadable records become rejects."""
    out = Decoded()
    add = out.segments.append
    for i, raw in enumerate(data.split(b"\n")):
        if not raw or raw.isspace():
            continue
        rorigin = f"{origin}#r{i}"
        try:
            rec = orjson.loads(raw)
            if not isinstance(rec, dict):
                raise ValueError(f"record is a JSON {type(rec).__name__}, not an object")
            msg = _message_of(rec)
            ts = _time_of(rec)
        except (orjson.JSONDecodeError, ValueError, TypeError, OverflowError) as e:
            out.rejects.append(Reject(rorigin, f"NDJSON record {i}: {e}", raw, "bad_envelope"))
            continue
        boot = None
        mono = rec.get("__MONOTONIC_TIMESTAMP")
        if ts is not None and isinstance(mono, str) and mono.isdigit():
            boot = ts - int(mono)
        add(Segment(msg.encode("utf-8", "surrogateescape"), rorigin, stream, _host_of(rec) or host,
                    ts if ts is not None else ref_ts, "envelope" if ts is not None else ref_basis, ingest_ts,
                    source, 0, boot))
    return out


#: (topic, partition) -> (origin prefix, source); (topic, partition, key) -> (host, stream). One Kafka key
#: per host, so two small caches spare every record the same string building.
_PARTITIONS: dict[tuple[str, int], tuple[str, str | None]] = {}
_KEYED: dict[tuple[str, int, bytes], tuple[str, str]] = {}
_CACHE_MAX = 1 << 16
#: bytes a JSON object may start with (looks_ndjson is only asked when the value starts with one)
_JSON_FIRST = b"{ \t\n\r\x0b\x0c"
_new_decoded = Decoded.__new__


def decode_message(value: bytes | None, *, topic: str, partition: int, offset: int, key: bytes | None,
                   timestamp_ms: int, headers: list[tuple[str, bytes]] | None = None) -> Decoded:
    """Decode one Kafka record value (plain text or NDJSON, optionally gzip/zstd).

    Runs once per Kafka record, so the plain-text path does the least it can:
    no decompression call unless a magic number says so, the origin's prefix,
    the key's host and the stream name from caches.
    """
    tp = _PARTITIONS.get((topic, partition))
    if tp is None:
        if len(_PARTITIONS) >= _CACHE_MAX:
            _PARTITIONS.clear()
        tp = _PARTITIONS[(topic, partition)] = (f"kafka:{topic}/{partition}/", TOPIC_SOURCE.get(topic))
    origin = tp[0] + str(offset)
    if value is None:
        return Decoded(rejects=[Reject(origin, "empty value (tombstone)", b"", "empty")])
    if len(value) > MAX_VALUE_BYTES:
        return Decoded(rejects=[Reject(origin, f"value of {len(value)} bytes exceeds {MAX_VALUE_BYTES}",
                                       value[:4096], "too_large")])
    data = value
    if value[:2] == _GZIP or value[:4] == _ZSTD:
        try:
            data = decompress(value)
        except (ValueError, OSError, EOFError, zstandard.ZstdError) as e:
            return Decoded(rejects=[Reject(origin, f"cannot decompress: {e}", value, "bad_compression")])
    if key:
        known = _KEYED.get((topic, partition, key))
        if known is None:
            if len(_KEYED) >= _CACHE_MAX:
                _KEYED.clear()
            h = key.decode("utf-8", "replace")
            known = _KEYED[(topic, partition, key)] = (h, f"{topic}/{partition}/{h}")
        host, stream = known
    else:
        host = None
        for k, v in headers or ():
            if k == "host" and v:
                host = v.decode("utf-8", "replace")
        stream = f"{topic}/{partition}/{host or ''}"
    ts = timestamp_ms * 1000
    source = tp[1]
    if data[:1] in _JSON_FIRST and looks_ndjson(data):
        return decode_ndjson(data, origin=origin, stream=stream, host=host, ref_ts=ts, ref_basis="kafka",
                             ingest_ts=ts, source=source)
    out = _new_decoded(Decoded)  # the dataclass __init__ costs twice as much as the two assignments
    out.segments = [Segment(data, origin, stream, host, ts, "kafka", ts, source)]
    out.rejects = []
    return out


_HOST_FROM_NAME = re.compile(r"^([^.]+)")


def host_from_filename(path: Path) -> str:
    """``node07.dmesg.log`` -> ``node07`` (DESIGN.md: the file name up to its first ``.``)."""
    m = _HOST_FROM_NAME.match(path.name)
    return m.group(1) if m else path.name


def decode_file(path: Path, *, relname: str, max_bytes: int = 1 << 30) -> Decoded:
    """Decode a local file: raw lines or NDJSON envelopes, gzip/zstd or not.

    The host is the file name up to its first ``.``; the reference time is
    the file's modification time (basis ``file``).
    """
    origin = f"file:{relname}"
    st = path.stat()
    mtime = int(st.st_mtime * US)
    if st.st_size > max_bytes:
        return Decoded(rejects=[Reject(origin, f"file of {st.st_size} bytes exceeds {max_bytes}", b"", "too_large")])
    raw = path.read_bytes()
    try:
        data = decompress(raw, limit=max_bytes)
    except (ValueError, OSError, EOFError, zstandard.ZstdError) as e:
        return Decoded(rejects=[Reject(origin, f"cannot decompress: {e}", raw[:4096], "bad_compression")])
    host = host_from_filename(path)
    if looks_ndjson(data):
        return decode_ndjson(data, origin=origin, stream=origin, host=host, ref_ts=mtime, ref_basis="file",
                             ingest_ts=mtime, source=None)
    return Decoded(segments=[Segment(data=data, origin=origin, stream=origin, host=host, ref_ts=mtime,
                                     ref_basis="file", ingest_ts=mtime, source=None, line_base=1)])
