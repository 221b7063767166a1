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
  ``__MONOTONIC_TIMESTAMP`` µs) — shared/reference/formats.md §1.7;
* a JSON array of such envelopes (a shipper's batch), read element by element;
* any of these compressed with gzip (every member), zstd (every frame), zlib,
  bzip2 or xz (every stream: logrotate's ``compresscmd``), decompressed in
  bounded steps under a size cap (a decompression bomb is rejected, not
  expanded).

A UTF-8 byte order mark before the value is dropped. Other compression
formats (lz4, snappy, zip, 7z) are rejected by name.

Bad input never raises out of here: a record that cannot be read becomes a
:class:`Reject` with a reason (the consumer sends it to the dead-letter topic)
and the rest of the value goes on.
"""

from __future__ import annotations

import bz2
import ipaddress
import lzma
import math
import re
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import groupby
from pathlib import Path
from typing import Any, NamedTuple

import msgspec
import numpy as np
import orjson
import zstandard
from msgspec import UNSET, UnsetType

from ingest.prefix import TERMINAL_CODES, US, parse_iso_us, placeholder_host, plausible
from schemas.hostname import canonical_host, is_host_name
from schemas.samples import POLLER_FORMAT, PollerSample

TOPIC_SOURCE = {"fleet.dmesg": "dmesg", "fleet.nccl": "nccl", "fleet.nvml": "nvml"}

#: Hard limits: a value or file larger than this is rejected, not read into memory.
MAX_VALUE_BYTES = 64 * 1024 * 1024
#: A line longer than this is read as an excerpt of this size around its match (the event says so: ingest.pipeline).
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
    #: ``host`` is only the file name's guess: an NDJSON record of a file whose envelope names no host (a docker
    #: json-file log, a CRI log read as JSON) — a line's own host, or its rank's, comes first (``assemble``)
    host_guessed: bool = False
    #: the file was read in part (a truncated .gz, a file past ``max_bytes``): its events say so
    #: (``details.file_cut``), and what they do not hold may be in the part lost
    cut: bool = False


@dataclass(slots=True)
class Records:
    """One-line plain-text Kafka records of one partition and key, in offset order, held as one segment.

    What a shipper that sends one line per message gives (the hot path of that mode): record ``i`` is line
    ``i`` of ``data``, and :meth:`record` is the :class:`Segment` that :func:`decode_message` gives for it
    (the pipeline asks only for the records of hit lines). Only values that framing would leave alone go
    in: no ``\n``, no ``\r`` at the end and no first byte that may start a continuation or a table row (a
    blank, ``|``), so the lines, their bytes, their framing and their count are those of the records one by
    one (``tests/test_properties.py``).
    """

    data: bytes  # the values joined by "\n"
    records: list  # the Kafka records (``value``, ``offset``, ``timestamp`` in ms since the epoch)
    prefix: str  # origin prefix "kafka:<topic>/<partition>/"
    stream: str
    host: str
    source: str | None

    def record(self, i: int) -> Segment:
        """Record ``i`` as its own segment: ``decode_message``'s segment for it."""
        r = self.records[i]
        ts = r.timestamp * 1000
        return Segment(r.value, self.prefix + str(r.offset), self.stream, self.host, ts, "kafka", ts, self.source)

    def held_bytes(self) -> int:
        """Bytes of the values (without the separators)."""
        return len(self.data) - len(self.records) + 1


@dataclass(slots=True)
class Envelopes:
    """NDJSON records of one value whose messages are one line each, held as one segment (as :class:`Records`).

    Record ``i`` is line ``i`` of ``data``; :meth:`record` is the :class:`Segment` that
    :func:`decode_ndjson` gives for it. Only messages that framing and line counting would leave alone go in:
    not empty, no ``\n``, no ``\r`` at the end and no first character that may start a continuation or a
    table row (a blank, ``|``). The records' other fields are columns, one item per record (no object per
    record: a Vector chunk of a megabyte is ~4,000 records).
    """

    data: bytes  # the messages joined by "\n"
    lines: list[int]  # each record's line in the value (its origin is "<origin>#r<line>")
    hosts: list[str | None]
    times: list[int]  # ref_ts, µs since the epoch, UTC
    bases: list[str]  # ref_basis: "envelope", else the caller's
    boots: list[int | None]  # boot_ts (journald), µs since the epoch
    origin: str  # the value's origin
    stream: str
    ingest_ts: int
    source: str | None
    _messages: list[bytes] | None = None  # ``data`` split, on the first :meth:`record`

    def record(self, i: int) -> Segment:
        """Record ``i`` as its own segment: ``decode_ndjson``'s segment for it."""
        msgs = self._messages
        if msgs is None:
            msgs = self._messages = self.data.split(b"\n")
        return Segment(msgs[i], f"{self.origin}#r{self.lines[i]}", self.stream, self.hosts[i], self.times[i],
                       self.bases[i], self.ingest_ts, self.source, 0, self.boots[i])

    def held_bytes(self) -> int:
        """Bytes of the messages (without the separators)."""
        return len(self.data) - len(self.lines) + 1


class _Run:
    """The one-line records :func:`decode_ndjson` has gathered for the next :class:`Envelopes`, as columns."""

    __slots__ = ("parts", "lines", "hosts", "times", "bases", "boots")

    def __init__(self) -> None:
        self.parts: list[bytes] = []  # pieces of ``Envelopes.data``, each one or more lines
        self.lines: list[int] = []
        self.hosts: list[str | None] = []
        self.times: list[int] = []
        self.bases: list[str] = []
        self.boots: list[int | None] = []

    def add(self, m: bytes, line: int, host: str | None, ts: int, basis: str, boot: int | None) -> None:
        """One record."""
        self.parts.append(m)
        self.lines.append(line)
        self.hosts.append(host)
        self.times.append(ts)
        self.bases.append(basis)
        self.boots.append(boot)

    def extend(self, data: bytes, lines: range, hosts: list[str | None], times: list[int]) -> None:
        """Records of Vector's shape (:func:`_add_columns`): ``data`` their messages joined, one item each in the
        other arguments; their basis ``envelope``, no boot time."""
        self.parts.append(data)
        self.lines += lines
        self.hosts += hosts
        self.times += times
        self.bases += ["envelope"] * len(lines)
        self.boots += [None] * len(lines)

    def flush(self, out: Decoded, origin: str, stream: str, ingest_ts: int, source: str | None) -> None:
        """Append the records gathered so far to ``out`` as one :class:`Envelopes`, and start again."""
        if self.lines:
            out.segments.append(Envelopes(b"\n".join(self.parts), self.lines, self.hosts, self.times, self.bases,
                                          self.boots, origin, stream, ingest_ts, source))
            self.__init__()


def per_record(segments: list) -> list[Segment]:
    """``segments`` with every :class:`Records` or :class:`Envelopes` as its records' segments: what
    :func:`decode_message` gives record by record."""
    out: list[Segment] = []
    for s in segments:
        if type(s) is Segment:
            out.append(s)
        else:
            out += [s.record(i) for i in range(len(s.lines if type(s) is Envelopes else s.records))]
    return out


@dataclass(slots=True)
class Reject:
    """Input that could not be read, with the reason. Nothing is dropped silently."""

    origin: str
    reason: str
    data: bytes
    error_code: str


@dataclass(slots=True)
class Decoded:
    """Segments of lines (:class:`Records` and :class:`Envelopes` for runs of one-line records) and rejects, in
    input order; ``pod_nodes``: pod name -> the node it ran on, from the Kubernetes metadata of the records
    (:func:`_k8s_pod`): inside a pod a process's host name (NCCL's ``host:pid:tid``) is the pod's."""

    segments: list[Segment | Records | Envelopes] = field(default_factory=list)
    rejects: list[Reject] = field(default_factory=list)
    pod_nodes: dict[str, str] = field(default_factory=dict)

    def add(self, other: Decoded) -> None:
        """Append ``other``'s segments, rejects and pods (a later record's node for a pod wins)."""
        self.segments += other.segments
        self.rejects += other.rejects
        if other.pod_nodes:
            self.pod_nodes.update(other.pod_nodes)

    def held_bytes(self) -> int:
        """Bytes of text and of rejected parts this holds: what a partition read's byte limit counts."""
        return sum([len(x.data) if type(x) is Segment else x.held_bytes() for x in self.segments]) + sum(
            [len(x.data) for x in self.rejects])


_GZIP = b"\x1f\x8b"
#: a terminal's control sequences (ECMA-48) in a line's bytes: CSI (``ESC [ … m``: ``dmesg --color=always``,
#: ``journalctl`` to a terminal, ``kubectl logs`` of a colouring program), OSC up to its end (never past a line), nF
#: and the two-byte ones: ``ingest.prefix.TERMINAL_CODES``, which peels the same from a line's prefix
_TERMINAL_CODES = re.compile(TERMINAL_CODES.encode())


def strip_terminal_codes(data: bytes) -> bytes:
    """``data`` without terminal control sequences (:data:`_TERMINAL_CODES`); no newline is removed, so lines keep
    their numbers. ``dmesg --color=always -T`` puts one between ``NVRM: `` and ``Xid``: the Xid 79 of a coloured
    capture matched nothing, "Incidents: none" and exit 0 (a break-it pass). Callers test ``b"\x1b" in data`` first
    (a C-speed search): most data has none."""
    return _TERMINAL_CODES.sub(b"", data)


_JSON_OBJECT_START = re.compile(rb'\s*\{\s*["}]')
_JSON_ARRAY_START = re.compile(rb'\s*\[\s*\{\s*["}]')
_BOM = b"\xef\xbb\xbf"
#: byte order marks of UTF-32 and UTF-16 text (PowerShell's ``>`` writes UTF-16LE with one): (mark, codec, width
#: of a code unit, offset of its high bytes); UTF-32LE's mark begins as UTF-16LE's, so it is tried first
_WIDE_BOMS = ((b"\xff\xfe\x00\x00", "utf-32", 4, 1), (b"\x00\x00\xfe\xff", "utf-32", 4, 0),
              (b"\xff\xfe", "utf-16", 2, 1), (b"\xfe\xff", "utf-16", 2, 0))
#: first bytes of the marks above
_WIDE_FIRST = (b"\xff\xfe", b"\xfe\xff", b"\x00\x00")


#: (codec, code unit width, offsets of the bytes that are zero for ASCII): UTF-32 first (its text also has a zero
#: byte after each letter)
_WIDE_NO_BOM = (("utf-32-le", 4, (1, 2, 3)), ("utf-32-be", 4, (0, 1, 2)), ("utf-16-le", 2, (1,)),
                ("utf-16-be", 2, (0,)))


def bomless_codec(data: bytes) -> str | None:
    """The codec of UTF-16 or UTF-32 log text written without a byte order mark (``iconv -t UTF-16LE``, a Windows
    tool's log), or None: in its first 512 code units every byte a character of ASCII leaves zero is zero in at
    least 90 % of them, and the other byte in at least 90 % is not. Such a file read as 3 lines and 0 events,
    exit 0 (a break-it pass). Log text in UTF-8 holds no zero byte; binary data rarely holds this pattern."""
    for codec, width, zero in _WIDE_NO_BOM:
        units = _code_units(data[:512 * width], width)
        n = len(units)
        if n < 8:
            continue
        letter = next(i for i in range(width) if i not in zero)
        if (int(_ascii(units, zero).sum()) * 10 >= n * 9
                and int((units[:, letter] != 0).sum()) * 10 >= n * 9):
            return codec
    return None


#: a stretch of UTF-16 text inside a file of other text: Latin-1 characters (each code unit a byte then a zero
#: byte, UTF-16LE; a zero byte then a byte, UTF-16BE: group ``be``), at least 16 of them, after an optional byte order
#: mark. Windows PowerShell's ``>>`` appends UTF-16LE (its Out-File default; ``-Encoding BigEndianUnicode``: BE) to a
#: UTF-8 log: the appended lines matched nothing, their Xid lost without a word (a break-it pass). A character outside
#: Latin-1 ends a stretch (its two bytes stay as they are); NUL runs (zeroed blocks) are none. BE text without its
#: mark after a line end reads as LE one byte on (``\n`` then ``\x00N``, …: the same characters), so the leftmost
#: match decodes it right either way; with its mark ``FE FF`` it did not (``ÿ`` before the line's time, a break-it
#: pass)
_UTF16_STRETCH = re.compile(rb"(?:\xff\xfe)?(?:[^\x00]\x00){16,}|(?P<be>\xfe\xff(?:\x00[^\x00]){16,})")


def _utf16_text(m: re.Match) -> bytes:
    """A :data:`_UTF16_STRETCH` match as UTF-8, its byte order mark dropped."""
    if m.group("be") is not None:
        return m.group()[2:].decode("utf-16-be").encode()
    return m.group().removeprefix(b"\xff\xfe").decode("utf-16-le").encode()


def utf16_stretches(data: bytes) -> bytes:
    """``data`` with each stretch of UTF-16 text among its other text (:data:`_UTF16_STRETCH`) as UTF-8, its
    byte order mark dropped; lines keep their numbers (a ``\\n`` code unit is one ``\\n``). ``data`` itself when it
    holds no zero byte. For a file read as text (``decode_file``) that is not UTF-16 as a whole
    (:func:`bomless_text`, a byte order mark: read as such before)."""
    if b"\x00" not in data:
        return data
    return _UTF16_STRETCH.sub(_utf16_text, data)


def bomless_text(data: bytes) -> bytes | None:
    """``data`` as UTF-8 when the whole of it is UTF-16 or UTF-32 text without a byte order mark
    (:func:`bomless_codec` of its head, :func:`_wide_all` of all of it), else None; a file's and a Kafka value's
    (``decode_file``, ``decode_message``)."""
    if 0 in data[:4096] and _wide_codec(data) is None and (codec := bomless_codec(data)) and _wide_all(data, codec):
        return data.decode(codec, "replace").encode("utf-8")
    return None


def _code_units(data: bytes, width: int) -> np.ndarray:
    """``data``'s whole code units of ``width`` bytes, one row of bytes each."""
    n = len(data) // width
    return np.frombuffer(data, dtype=np.uint8, count=n * width).reshape(n, width)


def _ascii(units: np.ndarray, zero: tuple[int, ...]) -> np.ndarray:
    """Per code unit (:func:`_code_units`): the bytes at offsets ``zero``, which a character of ASCII leaves zero,
    are zero."""
    return (units[:, list(zero)] == 0).all(axis=1)


#: code units of a stretch :func:`_wide_all` looks at: a line of another encoding is longer than this
_WIDE_WINDOW = 32


def _wide_all(data: bytes, codec: str) -> bool:
    """Whether the whole of ``data`` is text of ``codec`` (:func:`bomless_codec` reads its head only): the bytes
    ASCII leaves zero are zero in at least 90 % of its code units and in a quarter of every :data:`_WIDE_WINDOW` of
    them. A file of UTF-16 lines then UTF-8 ones read as UTF-16 lost the UTF-8 lines' events, silently (a break-it
    pass); such a file is read as it was before."""
    _, width, zero = next(x for x in _WIDE_NO_BOM if x[0] == codec)
    ascii_ = _ascii(_code_units(data, width), zero)
    n = len(ascii_)
    if not n or int(ascii_.sum()) * 10 < n * 9:
        return False
    # nor any stretch of another encoding: a UTF-8 line among UTF-16 ones is 32 code units with few zero bytes
    window = min(_WIDE_WINDOW, n)
    return int(np.convolve(ascii_.astype(np.int32), np.ones(window, np.int32), "valid").min()) * 4 >= window


def _wide_codec(data: bytes) -> str | None:
    """The codec of text that begins with a UTF-16 or UTF-32 byte order mark and goes on as such text of log
    lines does: the high bytes of at least a quarter of its next 256 code units are zero (ASCII: log lines are
    mostly ASCII, though a first line may be in another script). Bytes ``FF FE`` before plain ASCII are no
    UTF-16, only invalid UTF-8 (no high byte is zero): None, and they stay as they are."""
    for mark, codec, width, high in _WIDE_BOMS:
        if data.startswith(mark):
            units = [data[i:i + width] for i in range(len(mark), min(len(data), len(mark) + 256 * width), width)]
            units = [u for u in units if len(u) == width]
            zero = sum(1 for u in units if not any(u[high:high + width - 1]))  # its high bytes all zero
            return codec if units and zero * 4 >= len(units) else None
    return None
#: magic numbers, by format. gzip, zstd, zlib (the RFC 1950 headers of the default 32 KB window, whose
#: second byte is never printable text), bzip2 and xz are read; the others are formats this service does not read:
#: such a value is rejected with the format's name, not taken as (binary) text.
_MAGIC = re.compile(rb"""(?P<gzip>\x1f\x8b)|(?P<zstd>\x28\xb5\x2f\xfd)|(?P<zlib>\x78[\x01\x9c\xda])
    |(?P<bzip2>BZh[1-9](?:1AY&SY|\x17rE8P\x90))|(?P<xz>\xfd7zXZ\x00)|(?P<lz4_frame>\x04\x22\x4d\x18)
    |(?P<lz4_legacy>\x02\x21\x4c\x18)|(?P<snappy_framed>\xff\x06\x00\x00sNaPpY)|(?P<zip>PK\x03\x04)
    |(?P<_7z>7z\xbc\xaf\x27\x1c)""", re.VERBOSE)
#: first bytes of the magic numbers above: any other value skips the regex
_MAGIC_FIRST = frozenset(bytes([b]) for b in b"\x1f\x28\x78\xfd\x04\x02\xffBP7")
#: a zstd block holds at most 128 KB and an RLE block encodes one in 4 bytes: a zstd input of n bytes
#: decompresses to at most n << 15 bytes (deflate: n * 1032, far less)
_ZSTD_MAX_RATIO_SHIFT = 15


class CompressionError(ValueError):
    """A compressed value or file that cannot be read (corrupt, truncated, too large, or an unread format).

    ``partial``: for a truncated stream, what it decompressed to before it ended (a log copied while it was
    still being written or rotated); for one with bytes after its end, the whole stream (``trailing``); for one
    past the size limit, its first ``limit`` bytes; else empty."""

    def __init__(self, message: str, partial: bytes = b"", too_large: bool = False, trailing: bool = False) -> None:
        super().__init__(message)
        self.partial = partial
        #: it decompresses past the size limit (a decompression bomb, or a batch too large): not cut short
        self.too_large = too_large
        #: the stream is whole and bytes that are none of it follow: only they are not read
        self.trailing = trailing

    def lost(self, lines: int, size: int) -> str:
        """What reading the whole lines of ``partial`` (``lines`` of them, ``size`` bytes) leaves out, said after
        this error's message."""
        if self.trailing:
            return f"read its {lines} line{'s' * (lines != 1)} ({size} bytes), not the trailing bytes"
        return f"read its first {lines} line{'s' * (lines != 1)} ({size} bytes), the rest is lost"


def compression_of(data: bytes) -> str | None:
    """The compression format ``data`` starts with, by magic number; ``None`` for uncompressed bytes.

    ``"gzip"``, ``"zstd"``, ``"zlib"``, ``"bzip2"`` and ``"xz"`` are read by :func:`decompress`; any other name
    (``"lz4 frame"``, ``"zip"``, …) is a format this service does not read.
    """
    if data[:1] not in _MAGIC_FIRST:
        return None
    m = _MAGIC.match(data)
    if m is None or m.lastgroup is None:
        return None
    return m.lastgroup.strip("_").replace("_", " ")  # group names are identifiers: "_7z", "lz4_frame"


def decompress(data: bytes, limit: int = MAX_VALUE_BYTES) -> bytes:
    """Decompress a gzip, zstd, zlib, bzip2 or xz value (by magic number); any other bytes come back as they are.

    ``data``: one value or file as it was stored. Every gzip member, zstd
    frame and bzip2 or xz stream is read (shippers and ``pbzip2`` concatenate
    them), in bounded steps: at most ``limit`` bytes of output are ever
    decompressed (held twice over while the pieces are joined), so a
    decompression bomb is rejected after ``limit`` bytes, not expanded.

    Returns the decompressed bytes (at most ``limit``). Raises
    :class:`CompressionError` (a ``ValueError``) when the stream is corrupt
    or truncated, has trailing garbage, would decompress to more than
    ``limit`` bytes, or is in a format this service does not read (lz4,
    snappy, zip, 7z: see :func:`compression_of`).
    """
    kind = compression_of(data)
    if kind is None:
        return data
    try:
        if kind == "zstd":
            return _unzstd(data, limit)
        if kind in ("gzip", "zlib"):
            return _inflate(data, limit, wbits=31 if kind == "gzip" else 15, kind=kind)
        if kind in _STDLIB_STREAMS:
            return _unstream(data, limit, kind)
    except zstandard.ZstdError as e:
        raise CompressionError(f"corrupt zstd stream: {e}") from None
    except zlib.error as e:
        raise CompressionError(f"corrupt {kind} stream: {e}") from None
    raise CompressionError(f"{kind} compression is not read here (gzip, zstd, zlib, bzip2 or xz only)")


#: bzip2 and xz, read by the standard library's incremental decompressors: (decompressor, magic of a next stream)
_STDLIB_STREAMS = {"bzip2": (bz2.BZ2Decompressor, b"BZh"), "xz": (lzma.LZMADecompressor, b"\xfd7zXZ\x00")}


def _unstream(data: bytes, limit: int, kind: str) -> bytes:
    """Every bzip2 or xz stream of ``data`` (``pbzip2`` and ``xz`` of concatenated files write several), never more
    than ``limit + 1`` bytes of output held (``max_length``), as :func:`_inflate` reads gzip members. logrotate's
    ``compresscmd`` may be either; they were skipped ("not read here", a break-it pass)."""
    make, magic = _STDLIB_STREAMS[kind]
    out: list[bytes] = []
    n = whole = 0
    rest = data
    while True:
        d = make()
        chunk = rest
        while True:
            try:
                piece = d.decompress(chunk, max_length=limit + 1 - n)
            except (OSError, EOFError, ValueError, lzma.LZMAError) as e:
                if not whole:  # the first stream: corrupt
                    raise CompressionError(f"corrupt {kind} stream: {e}") from None
                raise _trailing(len(rest), kind, out) from None
            n += len(piece)
            out.append(piece)
            if n > limit:
                raise _too_large(limit, out)
            chunk = b""
            if d.eof:
                break
            if d.needs_input:
                raise CompressionError(f"truncated {kind} stream (ends after {len(data)} bytes)", b"".join(out))
        whole += 1
        rest = d.unused_data
        if not rest.strip(b"\x00"):  # the end, or zero padding
            return b"".join(out)
        # xz's stream padding (NUL bytes, a multiple of four, between streams: xz-file-format.txt §2.2) before the
        # next stream; its second stream was "trailing data", its lines lost (a break-it pass)
        rest = rest.lstrip(b"\x00")
        if not rest.startswith(magic):
            raise _trailing(len(rest), kind, out)


def _too_large(limit: int, out: list[bytes] | None = None) -> CompressionError:
    """The error of a stream that decompresses past ``limit`` bytes (``too_large``), holding its first ``limit``
    bytes (``out``: the pieces so far) as ``partial``: a file's reader keeps the whole lines of it
    (:func:`decode_file`), a Kafka value is refused whole (:func:`decode_message`)."""
    head = b"".join(out)[:limit] if out else b""
    if out:
        out.clear()
    return CompressionError(f"decompressed size exceeds {limit} bytes", head, too_large=True)


def _trailing(size: int, kind: str, out: list[bytes]) -> CompressionError:
    """The error of a whole stream (``out``: its pieces) that ``size`` bytes of no part of it follow: its lines are
    read, as ``gzip -dc`` reads them and warns (a whole file with junk after it was skipped whole: a break-it pass)."""
    return CompressionError(f"{size} bytes of trailing data after the {kind} stream", b"".join(out), trailing=True)


def _inflate(data: bytes, limit: int, *, wbits: int, kind: str) -> bytes:
    """Every gzip member (or the zlib stream), never more than ``limit + 1`` bytes of output held."""
    out: list[bytes] = []
    n = whole = 0  # bytes out; members read whole
    rest: bytes = data
    while True:
        d = zlib.decompressobj(wbits)
        while True:
            try:
                piece = d.decompress(rest, limit + 1 - n)  # max_length: the output of one step is bounded
            except zlib.error:
                if not whole:  # the first member: corrupt
                    raise
                raise _trailing(len(rest), kind, out) from None  # junk that begins like another member (\x1f\x8b)
            n += len(piece)
            out.append(piece)
            if n > limit:
                raise _too_large(limit, out)
            rest = d.unconsumed_tail
            if d.eof or not rest:
                break
        if not d.eof:
            raise CompressionError(f"truncated {kind} stream (ends after {len(data)} bytes)", b"".join(out))
        whole += 1
        rest = d.unused_data
        if wbits == 31 and rest == _GZIP[:1]:  # the first byte of another member's magic: a cut inside its header
            raise CompressionError(f"truncated {kind} stream (ends after {len(data)} bytes)", b"".join(out))
        # another gzip member follows (concatenated gzip is one gzip file); zero padding is not data
        if wbits != 31 or rest[:2] != _GZIP:
            if rest.strip(b"\x00"):
                raise _trailing(len(rest), kind, out)
            return b"".join(out)


def _unzstd(data: bytes, limit: int) -> bytes:
    """Every zstd frame, fed in steps small enough that one step cannot expand past ``limit``."""
    dctx = zstandard.ZstdDecompressor()
    step = max(1024, limit >> _ZSTD_MAX_RATIO_SHIFT)
    view = memoryview(data)
    out: list[bytes] = []
    n = pos = frames = 0  # bytes out; where the next frame starts; frames read whole
    while pos < len(data):
        start = pos
        d = dctx.decompressobj()
        while not d.eof:
            if pos >= len(data):
                raise CompressionError(f"truncated zstd frame (the value ends after {len(data)} bytes)",
                                       b"".join(out))
            chunk = view[pos:pos + step]
            pos += len(chunk)
            try:
                piece = d.decompress(chunk)
            except zstandard.ZstdError:
                if not frames:  # the first frame: corrupt
                    raise
                raise _trailing(len(data) - start, "zstd", out) from None  # junk after whole frames
            n += len(piece)
            out.append(piece)
            if n > limit:
                raise _too_large(limit, out)
        pos -= len(d.unused_data)  # the start of the next frame, fed again to a fresh decompressor
        frames += 1
    return b"".join(out)


#: a message field of an envelope (``_MESSAGE_FIELDS``) as a JSON key
_MESSAGE_KEY = re.compile(rb'"(?:MESSAGE|message|log|msg|textPayload|SyslogMessage|jsonPayload)"\s*:')
#: the lines after the first that :func:`looks_ndjson` looks at, and the bytes it looks in
_NDJSON_HEAD_LINES = 8
_NDJSON_HEAD_BYTES = 8192
#: how far :func:`looks_ndjson` looks for the end of a first line that is no record (a cut one, a banner)
_FIRST_LINE_BYTES = 1 << 20
#: a JSON string's end and the next key, as in the tail of a record whose start was cut off (``…","stream":"stderr",
#: "time":"…"}``: Docker's json-file log, whose message key comes first)
_RECORD_TAIL = re.compile(rb'"\s*,\s*"[\w@.$-]{1,64}"\s*:')


def looks_ndjson(data: bytes) -> bool:
    """True when the value starts with a JSON object (``{`` and then ``"`` or ``}``), unless that object names no
    message field (no envelope: a program's JSON, its metrics or config) and one of the next
    :data:`_NDJSON_HEAD_LINES` lines that is not blank, in its first :data:`_NDJSON_HEAD_BYTES` bytes, is no JSON.

    Only the openings are looked at, so a broken record still goes to the
    dead-letter topic. A plain-text line that starts with a Python dict
    (Hugging Face's trainer prints ``{'loss': 1.23, …}`` on every logging
    step) is text, not a broken envelope; so is a log whose first line is a program's JSON and whose next lines
    are text: it was read as NDJSON whole, its Xid line a broken record ("record is not an object", its stamp read
    as the number 2026) and the file skipped, or the Kafka value dead-lettered whole (a break-it pass). Text lines
    among envelopes are read as text (:func:`decode_ndjson`).

    A first line that is no JSON object before envelopes (a record whose start was cut off — ``tail -c``, a copy
    begun mid-record —, a banner, ``null``) does not make the records text: when each of the next lines that are
    not blank (up to :data:`_NDJSON_HEAD_LINES`, in the :data:`_NDJSON_HEAD_BYTES` bytes after the first line, which
    may be up to :data:`_FIRST_LINE_BYTES` long) opens as a JSON object and the first names a message field, it is
    NDJSON. Three hosts' records were read as text of one host named after the file, each at the file's time (a
    break-it pass).
    """
    if _JSON_OBJECT_START.match(data) is None:
        return _envelopes_after_first_line(data)
    nl = data.find(b"\n", 0, _NDJSON_HEAD_BYTES)
    if nl < 0 or _MESSAGE_KEY.search(data, 0, nl):
        return True
    for line in data[nl + 1:_NDJSON_HEAD_BYTES].split(b"\n", _NDJSON_HEAD_LINES)[:_NDJSON_HEAD_LINES]:
        first = line.lstrip()[:1]
        if first and first != b"{" and not _is_json(line):  # a record that is JSON but no object: a bad record
            return False
    return True


def _envelopes_after_first_line(data: bytes) -> bool:
    """:func:`looks_ndjson` of data whose first line is no JSON object: the lines after it are envelopes."""
    nl = data.find(b"\n", 0, _FIRST_LINE_BYTES)  # a cut record may be long (a 9 kB one was text: a break-it pass)
    if nl < 0:
        return False
    head = data[nl + 1:nl + 1 + _NDJSON_HEAD_BYTES]
    lines = [line for line in head.split(b"\n", _NDJSON_HEAD_LINES)[:_NDJSON_HEAD_LINES] if line.strip()]
    return (bool(lines) and _MESSAGE_KEY.search(lines[0]) is not None
            and all(_JSON_OBJECT_START.match(line) is not None for line in lines))


#: a JSON string's escape: a high surrogate with its low one after it (a pair: one character), a surrogate alone
#: (high or low), or any other escape (``\\\\`` among them, so a backslash that is escaped starts no escape)
_ESCAPE = re.compile(rb"""\\(?: u[dD][89abAB][0-9a-fA-F]{2} (?:\\u[dD][c-fC-F][0-9a-fA-F]{2})?
                              | u[dD][c-fC-F][0-9a-fA-F]{2}
                              | . )""", re.VERBOSE | re.DOTALL)
#: where a surrogate's escape may be (a quick test before :data:`_ESCAPE` reads the escapes)
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


def _lone_surrogate_escape(m: re.Match) -> bytes:
    g = m.group()
    return b"\\ufffd" if len(g) == 6 else g  # a surrogate alone is 6 bytes; a pair is 12, any other escape 2


def without_lone_surrogates(data: bytes) -> bytes:
    """JSON text ``data`` with each ``\\u`` escape of a UTF-16 surrogate that is not one of a pair (``"\\ud800"``)
    spelled ``\\ufffd`` (U+FFFD, the replacement character), the rest as it is (``data`` itself when it holds
    none). The JSON grammar allows such an escape (RFC 8259 §8.2) but it names no character: msgspec and orjson
    refuse the record, and neither UTF-8 nor Parquet can hold it. Its record was a ``bad_envelope`` reject, and a
    JSON array value's every record was lost with it; read so, the record's other characters (its fault) are kept,
    as a text line's bytes that are no UTF-8 read as U+FFFD."""
    if _SURROGATE_ESCAPE.search(data) is None:
        return data
    return _ESCAPE.sub(_lone_surrogate_escape, data)


#: where a surrogate's escape may stand alone: a high one with no low one's escape after it, a low one with no high
#: one's before it or with an escaped backslash before that (``\\ud800\udc00``: text "\ud800", then a low
#: surrogate alone). Every lone one :data:`_ESCAPE` finds is found here, and more (``\\ud800`` is text): the
#: lines this finds none in are left unread, so that pairs alone (Python's ``json.dumps`` of an emoji: one in every
#: record of a value) cost one search of the value
_LONE_CANDIDATE = re.compile(rb"""\\u[dD](?: [89abAB][0-9a-fA-F]{2}(?!\\u[dD][c-fC-F][0-9a-fA-F]{2})
                                         | [c-fC-F][0-9a-fA-F]{2}
                                           (?: (?<!\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2})
                                             | (?<=\\\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2})))""",
                             re.VERBOSE)


def _records_without_lone_surrogates(data: bytes) -> bytes:
    """:func:`without_lone_surrogates` of each line of NDJSON ``data`` that opens as JSON (``{`` or ``[``) and may
    hold a lone surrogate's escape (:data:`_LONE_CANDIDATE`); text lines among the records stay as they are
    (``C:\\ud800x`` in a traceback is text, not an escape), and so do the other lines, unread (``data`` itself when
    no line may hold one). Reading every line again took 0.56 s of 200k records whose every record held an escaped
    pair (Python's ``json.dumps`` of an emoji), 0.3 s for one lone surrogate among them; now 0.07 s and 0.05 s.
    Reading every line once candidates were many (more than one line in 16), a second path, cost more than it saved:
    of 200k records, 10 % candidates took 0.69 s so and 0.2-0.3 s here; it was faster only when every record was
    one, 0.86-1.03 s against 0.96-1.56 s (CPU time, a loaded machine)."""
    if _SURROGATE_ESCAPE.search(data) is None:
        return data
    out: list[bytes] = []
    done = 0  # data[:done] is in out
    for m in _LONE_CANDIDATE.finditer(data):
        if m.start() < done:
            continue
        a = data.rfind(b"\n", 0, m.start()) + 1
        b = data.find(b"\n", m.end())
        b = len(data) if b < 0 else b
        line = data[a:b]
        out += [data[done:a], without_lone_surrogates(line) if line.lstrip()[:1] in b"{[" else line]
        done = b
    if not out:
        return data
    out.append(data[done:])
    return b"".join(out)


def _is_json(line: bytes) -> bool:
    try:
        msgspec.json.decode(line)
    except msgspec.DecodeError:
        return False
    return True


class Envelope(msgspec.Struct, rename={"realtime": "__REALTIME_TIMESTAMP", "monotonic": "__MONOTONIC_TIMESTAMP",
                                       "source_realtime": "_SOURCE_REALTIME_TIMESTAMP",
                                       "at_timestamp": "@timestamp", "host_name": "host.name"}):
    """The fields of an NDJSON envelope that decoding reads (shared/reference/formats.md §1.7); any other
    field is skipped unread. Each is any JSON value, or ``UNSET`` when the record does not have it (a field
    that is present and ``null`` is ``None``): the readers below check the types themselves, so a record of
    the wrong shape is a reject that names the field, not a validation error.

    Message (first present): ``MESSAGE`` (journald), ``message`` (Vector, Filebeat), ``log`` (Fluent Bit),
    ``msg`` — a structured logger's (zap, logrus, slog), whose ``error`` or ``err`` field holds the cause, read as
    ``msg: error`` as their text encoders print it (the EKS node monitoring agent's "failed to reconcile DCGM state"
    named nv-hostengine in ``error`` alone: no event, a real-logs pass), then structlog's ``event`` (a string, in a
    record with a string ``level``: its JSONRenderer's message key; NVIDIA/NVSentinel#772's preflight check logs
    were refused whole, "no message field", a real-logs pass). Time (first not null):
    ``_SOURCE_REALTIME_TIMESTAMP`` µs (journald: when the message was written, as its writer said;
    ``__REALTIME_TIMESTAMP`` is when journald received it, seconds later under load: an Xid 79 received after the Xid
    74 it caused was left unexplained, a break-it pass), ``__REALTIME_TIMESTAMP`` µs, ``timestamp`` (Vector),
    ``@timestamp`` (Filebeat), ``time``, ``date`` (Fluent Bit, s), then zap's ``ts`` when it reads as a time (ISO 8601
    or epoch seconds; another ``ts`` is no error). Host (first usable): ``_HOSTNAME``,
    ``hostname``, ``host`` (a string, or Filebeat's ``{"name": …}``), ``host.name`` (the same ECS field written
    flat, as ECS allows dotted names), then the node a pod ran on: ``kubernetes.host`` (Fluent Bit's kubernetes
    filter), ``kubernetes.pod_node_name`` (Vector's kubernetes_logs source), ``kubernetes.node.name`` (Filebeat's
    kubernetes processor). ``format``: a poller's link sample
    (``schemas.samples.POLLER_FORMAT``).

    Cloud logging exports name their fields otherwise (a GCP or Azure export gave "no message field" and the whole
    file was skipped, its Xid 79 lost: a real-logs pass): Google Cloud Logging's LogEntry (``textPayload``, or
    ``jsonPayload`` holding a journald record's ``MESSAGE`` / ``_HOSTNAME`` as GKE's node logs do; ``timestamp``;
    the node in ``resource.labels.node_name``), Azure Monitor's Syslog table (``SyslogMessage``, ``Computer``,
    ``TimeGenerated``). They come after the fields above: a record that has both reads the first.

    ``condition``: a node condition a structured logger's record carries beside its ``msg`` (the EKS node monitoring
    agent's "sending condition to exporter" with ``{"Reason": "DCGMHealthCode101", "Message": …}``): the fault is
    in it, and the record is read with its JSON after the ``msg`` (:func:`_with_health_events`). ``line``: the log
    line a structured logger's record quotes (gpud's "known sxid" / "known xid" scan records: the kernel's own line,
    stamped), read on the line after the ``msg`` (leptonai/gpud#338: the SXid 12028 it found gave no event)."""

    MESSAGE: Any = UNSET
    message: Any = UNSET
    log: Any = UNSET
    msg: Any = UNSET
    event: Any = UNSET
    level: Any = UNSET
    error: Any = UNSET
    err: Any = UNSET
    exception: Any = UNSET
    ts: Any = UNSET
    realtime: Any = UNSET
    source_realtime: Any = UNSET
    timestamp: Any = UNSET
    at_timestamp: Any = UNSET
    time: Any = UNSET
    date: Any = UNSET
    monotonic: Any = UNSET
    _HOSTNAME: Any = UNSET
    hostname: Any = UNSET
    host: Any = UNSET
    host_name: Any = UNSET
    kubernetes: Any = UNSET
    format: Any = UNSET
    textPayload: Any = UNSET
    SyslogMessage: Any = UNSET
    jsonPayload: Any = UNSET
    TimeGenerated: Any = UNSET
    Computer: Any = UNSET
    resource: Any = UNSET
    labels: Any = UNSET
    condition: Any = UNSET
    line: Any = UNSET


#: one decoder for every record: typed decoding reads the fields above and skips the rest of the record
_ENVELOPE = msgspec.json.Decoder(Envelope)
#: (field name, Envelope attribute) in the order each reader tries them
_MESSAGE_FIELDS = (("MESSAGE", "MESSAGE"), ("message", "message"), ("log", "log"), ("msg", "msg"),
                   ("textPayload", "textPayload"), ("SyslogMessage", "SyslogMessage"))
_TIME_FIELDS = (("timestamp", "timestamp"), ("@timestamp", "at_timestamp"), ("time", "time"), ("date", "date"),
                ("TimeGenerated", "TimeGenerated"))


#: an address with its port ("10.0.0.5:29500", "node07:8080"): a program's field, not the machine a record is of
_HOST_PORT = re.compile(r"[^:\s\[\]]+:\d{1,5}|\[[0-9A-Fa-f:.]+\]:\d{1,5}")


def _host_of(rec: Envelope) -> str | None:
    """The record's host (the first usable host field, :class:`Envelope`), or None when it names none (no field, an
    empty or null one, an address with its port, an ECS ``host`` object without a name). Raises ``ValueError`` for a
    host field that is a number, a boolean or a list: a shipper's mapping gone wrong, which took the Kafka key's host
    silently (a break-it pass)."""
    for name, v in (("_HOSTNAME", rec._HOSTNAME), ("hostname", rec.hostname), ("host", rec.host),
                    ("host.name", rec.host_name)):
        if v is None or v is UNSET:
            continue
        if isinstance(v, str):
            if v and not _HOST_PORT.fullmatch(v):  # "10.0.0.5:29500": a program's peer, no machine (a break-it pass)
                return v
            continue
        if isinstance(v, dict):  # Filebeat / ECS: {"host": {"name": …}}
            n = v.get("name") or v.get("hostname")
            if isinstance(n, str) and n:
                return n
            continue
        raise ValueError(f"field {name!r} is {_json_kind(v)}, not a host name")
    return _k8s_host(rec.kubernetes) or _cloud_host(rec)


#: the label GKE puts on a container's log entries naming the node (Google Cloud Logging, ``LogEntry.labels``)
_GKE_NODE_LABEL = "compute.googleapis.com/resource_name"


def _cloud_host(rec: Envelope) -> str | None:
    """The host of a cloud logging export's record (:class:`Envelope`): Azure's ``Computer``, the journald record
    GKE puts in ``jsonPayload`` (``_HOSTNAME``), Google Cloud's ``resource.labels.node_name`` (a ``k8s_node``
    resource) or, for a container's entry, the node GKE names in ``labels`` (:data:`_GKE_NODE_LABEL`); None when it
    names none. Raises ``ValueError`` for one that is no string."""
    payload = rec.jsonPayload if isinstance(rec.jsonPayload, dict) else {}
    resource = rec.resource if isinstance(rec.resource, dict) else {}
    labels = resource.get("labels") if isinstance(resource.get("labels"), dict) else {}
    entry = rec.labels if isinstance(rec.labels, dict) else {}
    for name, v in (("Computer", rec.Computer), ("jsonPayload._HOSTNAME", payload.get("_HOSTNAME")),
                    ("resource.labels.node_name", labels.get("node_name")),
                    ("labels.compute.googleapis.com/resource_name", entry.get(_GKE_NODE_LABEL))):
        if v is None or v is UNSET or v == "":
            continue
        if isinstance(v, str):
            if placeholder_host(v):  # journald's _HOSTNAME before the host name was set: the next field names it
                continue
            return v
        raise ValueError(f"field {name!r} is {_json_kind(v)}, not a host name")
    return None


#: a pod name of an Indexed Job: its host name, then a dash and Kubernetes' five random characters
_INDEXED_POD = re.compile(r"(?P<hostname>.+-\d+)-[bcdfghjklmnpqrstvwxz2456789]{5}")


def _k8s_pod(k8s: Any, pods: dict[str, str]) -> None:
    """Note in ``pods`` the pod a record's Kubernetes metadata names and the node it ran on: ``kubernetes.pod_name``
    (Vector's kubernetes_logs source, Fluent Bit's kubernetes filter) or ``kubernetes.pod.name`` (Filebeat), with
    the node of :func:`_k8s_host`. A pod's NCCL lines name the pod (``job-a7de-master-0:617:2799 [3] … NCCL WARN
    Cuda failure 999``): its node's Xid 79 two seconds before was another host's, two incidents
    (scitix/sichek#44's form; a real-logs pass). Names of another type than a string say nothing."""
    if not isinstance(k8s, dict):
        return
    pod = k8s.get("pod_name")
    if pod is None and isinstance(k8s.get("pod"), dict):
        pod = k8s["pod"].get("name")
    try:
        node = _k8s_host(k8s)
    except ValueError:
        return
    _note_pod(pods, pod, node)


def _note_pod(pods: dict[str, str], pod: Any, node: str | None) -> None:
    """``pods[pod] = node`` (:func:`_k8s_pod`; a GKE container's entry), for a pod name (a non-empty string) and a
    node that is a host name: one that is not ("nodeA ", a newline) is refused with its own record, and spread to
    the pod's other records it lost their events too (a break-it pass). An Indexed Job's pod (JobSet's) also under
    its host name, <job>-<index>, its name a random suffix more (kubernetes.io, "Job with pod-to-pod communication":
    pod comm-demo-0-mrvlp, host name comm-demo-0)."""
    if not isinstance(pod, str) or not pod or not node or node == pod or not is_host_name(node):
        return
    pods[pod] = node
    if (m := _INDEXED_POD.fullmatch(pod)) is not None:
        pods.setdefault(m["hostname"], node)


def _k8s_host(k8s: Any) -> str | None:
    """The node a pod's record names in its Kubernetes metadata (:class:`Envelope`): a pod's record names no host of
    its own (a keyless one was dead-lettered "it names no host": a break-it pass). Raises ``ValueError`` for a field
    of another type than a string."""
    if not isinstance(k8s, dict):
        return None
    node = k8s.get("node")
    for name, v in (("kubernetes.host", k8s.get("host")), ("kubernetes.pod_node_name", k8s.get("pod_node_name")),
                    ("kubernetes.node.name", node.get("name") if isinstance(node, dict) else None)):
        if v is None or v == "":
            continue
        if isinstance(v, str):
            return v
        raise ValueError(f"field {name!r} is {_json_kind(v)}, not a host name")
    return None


def _json_kind(v: Any) -> str:
    """How JSON calls the type of a decoded value (for a reject's reason)."""
    return ("a boolean" if isinstance(v, bool) else "a number" if isinstance(v, (int, float)) else
            "an array" if isinstance(v, list) else "an object" if isinstance(v, dict) else "a string")


def _time_of(rec: Envelope) -> int | None:
    """The record's own time, µs since the epoch (UTC); ``None`` when it names none.

    Raises ``ValueError`` for a time field that is not a time: a boolean, an
    unreadable string, a number that is no time in any unit (:func:`_envelope_number_us`), a
    journald ``__REALTIME_TIMESTAMP`` that is not a decimal count of µs.
    """
    v = rec.source_realtime
    if v is not None and v is not UNSET:
        try:  # the writer's time when it is one; else journald's receipt (an empty or garbled field hid a valid one)
            t = _journald_us(v)
            if plausible(t):
                return t
        except ValueError:
            pass
    v = rec.realtime
    if v is not None and v is not UNSET:
        return _journald_us(v)
    logger = _logger_record(rec)
    if logger and (t := _zap_ts(rec.ts)) is not None:  # zap's own time before the program's fields
        return t
    for k, attr in _TIME_FIELDS:
        v = getattr(rec, attr)
        if v is None or v is UNSET:
            continue
        try:
            if type(v) is str:  # the common case first (a str is never a bool or a number)
                t = _rfc3339_us(v)
                if t is None:
                    raise ValueError(f"field {k!r} is not an ISO 8601 time: {v[:60]!r}")
                return t
            if isinstance(v, bool):
                raise ValueError(f"field {k!r} is a boolean, not a time")
            if isinstance(v, (int, float)):
                return _envelope_number_us(v, k)
            raise ValueError(f"field {k!r} has type {type(v).__name__}, not a time")
        except ValueError:
            if not logger:  # a structured logger's other fields are the program's: not times, no error
                raise
    return _zap_ts(rec.ts)


def _zap_ts(v: Any) -> int | None:
    """zap's ``ts``: read when it is a time (ISO 8601 or epoch seconds …), else the record has none (another program's
    "ts" is no error)."""
    if type(v) is str:
        return _rfc3339_us(v)
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        try:
            return _epoch_us(v, "ts")
        except ValueError:
            return None
    return None


def _journald_us(v: object) -> int:
    """journald's ``__REALTIME_TIMESTAMP``: a decimal string (or, from other writers, an integer) of µs."""
    if type(v) is str and v.isascii() and v.isdecimal():
        t = int(v)
    elif type(v) is int:  # not bool: True is no time
        t = v
    else:
        raise ValueError(f"field '__REALTIME_TIMESTAMP' is {type(v).__name__} {str(v)[:40]!r}, "
                         "not a decimal count of µs")
    if not 0 <= t < 1 << 63:
        raise ValueError(f"field '__REALTIME_TIMESTAMP' {t} µs is outside the 64-bit time range")
    return t


def _readings_us(v: int | float) -> tuple[int | float, ...]:
    """``v`` read as s, ms, µs and ns since the epoch, in µs: exact for an int (no float rounding of ns counts)."""
    return (v * US, v * 1000, v, v // 1000) if type(v) is int else (v * US, v * 1e3, v, v / 1e3)


def _epoch_us(v: int | float, k: str) -> int:
    """A number since the epoch in s (Fluent Bit ``date``), ms, µs or ns: the one unit that puts it
    from 2000 to 2100 (the four ranges do not overlap). A number no unit places there (0, 9e13, 1e30)
    says nothing about when the line was written: ``ValueError``, not a guess."""
    for t in _readings_us(v):  # nan and inf fall through: no comparison holds
        if plausible(t):
            return int(t)
    raise ValueError(f"field {k!r} = {str(v)[:40]} is no time from 2000 to 2100 in s, ms, µs or ns "
                     "since the epoch")


def _envelope_number_us(v: int | float, k: str) -> int:
    """An envelope's numeric time field (Fluent Bit's ``date``, a ``time`` or ``timestamp`` in epoch units) -> µs
    since the epoch: :func:`_epoch_us` when a unit places it from 2000 to 2100; else the first reading in s, ms, µs
    or ns whose µs fit 64 bits, which no event takes: ``assemble`` keeps it as ``details.envelope_ts_rejected`` and
    times the line by its own stamp, else by its arrival (docs/reliability.md, "Times"), as it does an ISO 8601
    envelope time of 1970. A host whose clock was reset to the epoch (a dead RTC battery) ships ``"date": 5.25``: that
    refused the whole record, so its Xid 79 line, stamped 2026 by the kernel, reached no incident (a break-it pass);
    so did a shipper's µs or ns count of such a clock past 9.2e12 (ns: 1970-01-01T02:33Z; and 1999 in ns), whose
    seconds reading alone was tried (a break-it pass). Raises ``ValueError`` for a number that is no time in any unit
    (``1e30``, ``-9e27``, infinity: past 64-bit µs even in ns), which dead-letters its record as before."""
    try:
        return _epoch_us(v, k)
    except ValueError:
        if isinstance(v, float) and not math.isfinite(v):  # NaN, infinity: no reading (msgspec refuses JSON's)
            raise
        for t in _readings_us(v):
            if isinstance(t, float):
                if not math.isfinite(t):
                    continue
                t = round(t)  # round: 5.25 s is 5250000 µs, not 5249999
            if -(1 << 63) <= t < 1 << 63:
                return int(t)
        raise


# Vector and Filebeat stamp every record "2026-11-30T03:12:00.123456789Z": read that shape directly, with
# the second's start from a cache (records of one second share it) or else the minute's; anything else
# goes to parse_iso_us, which gives the same answer for this shape, only slower.
_RFC3339_Z = re.compile(r"(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}):(\d{2})(?:\.(\d+))?Z")
_MINUTES: dict[str, int | None] = {}
_SECONDS: dict[str, int] = {}  # "YYYY-MM-DDTHH:MM:SS" already read -> its µs


def _rfc3339_us(v: str) -> int | None:
    base = _SECONDS.get(v[:19])
    if base is not None and v[-1:] == "Z":  # the first 19 characters matched the regex before
        if len(v) == 27:  # µs, the common shape (Vector, Fluent Bit): no padding or cutting
            frac = v[20:26]
            if v[19] == "." and frac.isdecimal():
                return base + int(frac)
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


def _logger_record(rec: Envelope) -> bool:
    """A structured logger's record (zap, logrus, slog: a string ``msg`` and a string ``level``): its ``msg``, its
    ``ts`` or ``time`` and its ``error``/``err`` are the logger's, any other field the program's own — a ``log`` field
    (a file path), a ``time`` that is a duration (1.53), a ``date`` of "Mon" shadowed its message or refused the
    record, its Xid line lost (a break-it pass)."""
    return type(rec.msg) is str and type(rec.level) is str


def _structlog_record(rec: Envelope) -> bool:
    """A structlog record (its JSONRenderer's): a string ``event``, its message, beside a string ``level``; an
    ``event`` of another type is a program's own field (NVSentinel's slog records nest a HealthEvent there, read by
    :func:`_with_health_events`)."""
    return type(rec.event) is str and type(rec.level) is str


def _message_of(rec: Envelope, raw: bytes | None = None) -> str:
    """The record's message (:class:`Envelope`'s fields, first present); ``raw``, the record's JSON, for a structlog
    record's other fields (:func:`_structlog_fields`). Raises ``ValueError`` for a message field of the wrong type,
    :class:`NoMessageField` when there is none."""
    if _logger_record(rec) and rec.MESSAGE is UNSET and type(rec.message) is not str:
        return _with_cause(rec.msg, rec)
    for i, (k, attr) in enumerate(_MESSAGE_FIELDS):
        v = getattr(rec, attr)
        if v is UNSET or ((v is None or _blank(v)) and _later_message(rec, i, solid=bool(v))):
            # an empty, blank or null field before one that holds the line (a shipper's "message": "" or " " beside
            # Fluent Bit's "log", a logger's "msg"): the Xid in the later field was read as an empty (or blank) line,
            # lost unsaid (two break-it passes)
            continue
        if isinstance(v, str):
            return _with_cause(v, rec) if k == "msg" else v
        if isinstance(v, list) and all(isinstance(b, int) and 0 <= b < 256 for b in v):
            # journald: a field that is not valid UTF-8 is an array of byte values
            return bytes(v).decode("utf-8", "replace")
        if v is None:
            raise ValueError(f"field {k!r} is null (journald drops very large fields)")
        raise ValueError(f"field {k!r} has type {type(v).__name__}, not a string")
    payload = rec.jsonPayload
    if isinstance(payload, dict):  # Google Cloud Logging: a structured payload, GKE's node logs a journald record
        for k in ("MESSAGE", "message"):
            v = payload.get(k)
            if isinstance(v, str):
                return v
            if v is not None:
                raise ValueError(f"field 'jsonPayload.{k}' has type {type(v).__name__}, not a string")
    if _structlog_record(rec):
        event = rec.event + _structlog_fields(raw) if raw is not None else rec.event
        return _with_traceback(_with_cause(event, rec), rec.exception)
    fmt = rec.format
    if isinstance(fmt, str) and fmt.startswith(POLLER_FORMAT.rsplit("/", 1)[0] + "/"):  # a poller's sample, another
        # version: say so, not that it has no message (a break-it pass)
        raise ValueError(f"format {fmt[:64]!r} is not read here: this firstfault reads {POLLER_FORMAT}")
    raise NoMessageField("no message field (MESSAGE, message, log, msg, textPayload, SyslogMessage, jsonPayload's "
                         "MESSAGE or message, or a string event beside a string level as structlog writes)")


def _blank(v: Any) -> bool:
    """A message field's value ``v`` is a string of whitespace only, or empty (``str.strip``'s whitespace: blanks,
    tabs, line ends, Unicode spaces): a line with nothing to recognise, which a later field's line wins over."""
    return type(v) is str and not v.strip()


def _holds_line(v: Any, solid: bool = False) -> bool:
    """A message field's value ``v`` holds a line :func:`_message_of` reads: a non-empty string (``solid``: one not
    :func:`_blank`) or journald's non-empty array of byte values."""
    if type(v) is str:
        return v != "" and not (solid and _blank(v))
    return type(v) is list and v != [] and all(type(b) is int and 0 <= b < 256 for b in v)


def _later_message(rec: Envelope, i: int, solid: bool = False) -> bool:
    """A message field after the ``i``-th of :data:`_MESSAGE_FIELDS` holds a non-empty string, or a journald byte
    array, or Cloud Logging's ``jsonPayload`` a ``MESSAGE`` or ``message`` string (read after them by
    :func:`_message_of`): an empty ``message`` beside ``"jsonPayload": {"message": "NVRM: Xid …"}`` was read as an
    empty line, the Xid lost unsaid (a break-it pass). ``solid``: a line that is not :func:`_blank` (what a blank
    field gives way to; an empty one gives way to any)."""
    if any(_holds_line(getattr(rec, attr), solid) for _k, attr in _MESSAGE_FIELDS[i + 1:]):
        return True
    payload = rec.jsonPayload
    return isinstance(payload, dict) and any(_holds_line(v, solid) and type(v) is str
                                             for v in (payload.get("MESSAGE"), payload.get("message")))


#: a key of NVSentinel's HealthEvent (its one versioned event schema: version, agent, componentClass, checkName,
#: isFatal, message, errorCode, entitiesImpacted, nodeName), as its modules' JSON logs write it, escaped or not
_HEALTH_EVENT_KEY = b"checkName"
_HEALTH_EVENT = re.compile(rb'checkName\\{0,3}"\s*:.{0,4000}?componentClass|componentClass\\{0,3}"\s*:'
                           rb'.{0,4000}?checkName', re.S)


def _with_health_events(msg: str, raw: bytes, condition: bool = False, quoted: bool = False) -> str:
    """A structured logger's message (``msg``) and, on the line after it, the record itself when it carries
    NVSentinel health events or (``condition``) a node condition: the fault is in them, not in the ``msg`` the
    record is read by.

    The EKS node monitoring agent logs zap records "sending condition to exporter" whose ``condition`` holds the
    fault (``"Reason":"DCGMHealthCode101","Message":"DCGM detected issues in health check system with error code
    101"``): read by ``msg`` alone they gave no event, though the catalog reads them (eks.dcgm_health_xid,
    eks.dcgm_health_ecc; aws/eks-node-monitoring-agent#39, a real-logs pass).

    NVSentinel's modules (platform-connectors' "Health events received", the syslog health monitor's "Attempting to
    send health event", fault-quarantine's "Handling event for ruleset") log slog JSON records whose ``msg`` names
    the step and whose nested ``events``/``event``/``annotations`` hold the HealthEvents: their ``message`` (DCGM's
    "Detected XID 145 for GPU 0", the kernel's Xid line the syslog monitor read), ``errorCode``, the GPU's index,
    bus id and UUID in ``entitiesImpacted`` and the node in ``nodeName``. Read by ``msg`` alone they gave no event
    (NVIDIA/NVSentinel#1357, #288: a real-logs pass), though the catalog's patterns read them in the record's own
    text (dcgm.health_xid, dcgm.xid_error: the escapes of an event nested in a string included). ``raw``: the
    record's line (UTF-8 bytes); a line that is not UTF-8 reads its bad bytes as U+FFFD. ``quoted``: the record's
    string ``line`` is read on a line of its own (``decode_ndjson``), so the record is read without it: a gpud
    scan record with a condition too read the SXid it quotes twice, once at the scan's time (a break-it pass)."""
    if not condition and _HEALTH_EVENT.search(raw) is None:
        return msg
    if quoted:
        try:
            raw = orjson.dumps({k: v for k, v in orjson.loads(raw).items() if k != "line"})
        except (orjson.JSONDecodeError, AttributeError):
            pass
    return f"{msg}\n{raw.decode('utf-8', 'replace')}"


def _with_cause(msg: str, rec: Envelope) -> str:
    """A structured logger's ``msg`` with its error after it (``msg: error``), as its text encoder prints them."""
    cause = _cause_of(rec)
    return f"{msg}: {cause}" if cause else msg


#: a structlog record's keys its message is not rendered with: its own (event, level, timestamp, exception), the
#: cause _with_cause appends, and the host and time fields the envelope is read by
_STRUCTLOG_OWN = frozenset({"event", "level", "timestamp", "exception", "error", "err", "host", "hostname", "_HOSTNAME",
                            "time", "ts", "date", "@timestamp"})


def _structlog_fields(raw: bytes) -> str:
    """A structlog record's other fields (``raw``: the record's JSON) as its ConsoleRenderer prints them after the
    event: `` key=value`` by key, a string as it is, any other value as JSON; "" when there are none or ``raw`` is
    no JSON object. The fault may be there alone: ``{"event": "gpu health check failed", "dmesg": "NVRM: Xid …
    79 …"}`` was read as text before structlog's records were read by their event, and as the event alone it gave
    no event (a break-it pass)."""
    try:
        rec = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return ""
    if not isinstance(rec, dict):
        return ""
    return "".join(f" {k}={v if isinstance(v, str) else orjson.dumps(v).decode()}" for k, v in sorted(rec.items())
                   if k not in _STRUCTLOG_OWN)


def _with_traceback(msg: str, exc: Any) -> str:
    """A structlog record's message with its ``exception`` on the lines after it, as its ConsoleRenderer prints
    them: ``format_exc_info``'s traceback (a string), or ``dict_tracebacks``' list of ``{"exc_type", "exc_value",
    …}`` as ``exc_type: exc_value`` lines, the last a traceback's own. The fault of a record logged with
    ``log.exception(...)`` is there ("RuntimeError: CUDA error: an illegal memory access was encountered"): read
    by ``event`` alone it gave no event, though the record read as text had given one (a break-it pass). Any
    other value adds nothing."""
    if isinstance(exc, str) and exc:
        return f"{msg}\n{exc}"
    if isinstance(exc, list):
        said = [f"{e['exc_type']}: {e.get('exc_value') or ''}".rstrip(": ") for e in exc
                if isinstance(e, dict) and isinstance(e.get("exc_type"), str)]
        if said:
            return "\n".join([msg, *said])
    return msg


def _cause_of(rec: Envelope) -> str | None:
    """A structured logger's error field (``error``: zap, logrus; ``err``: slog's convention), when a string."""
    for v in (rec.error, rec.err):
        if isinstance(v, str) and v:
            return v
    return None


def _poller_text(rec: dict) -> str:
    """A poller's link sample (``schemas.samples.PollerSample``) as the nvidia-smi lines it stands for;
    raises ``ValueError`` naming the bad field."""
    from pydantic import ValidationError

    from schemas.errors import error_text

    try:
        return PollerSample.model_validate(rec).as_smi_text()
    except ValidationError as e:
        first = e.errors()[0]
        raise ValueError(f"{POLLER_FORMAT}: {'.'.join(map(str, first['loc']))}: {error_text(first)}") from None


#: bad_envelope rejects one value may give: past this the rest of the value is one reject, kept whole, not read
#: (a 2 KB zstd value of "{}" lines would otherwise hold millions of rejects in memory)
MAX_REJECTS_PER_VALUE = 1000
#: bytes of an NDJSON value read per msgspec call (cut at a line end): the envelopes held at once
_NDJSON_CHUNK = 1 << 20


class _TooManyRejects(Exception):
    """Raised by :func:`_reject` at ``MAX_REJECTS_PER_VALUE``: ``line`` is where reading stopped."""

    def __init__(self, line: int) -> None:
        self.line = line


class NoMessageField(ValueError):
    """A JSON object with none of the fields a log shipper's envelope holds its message in (``Envelope``): a
    program's own JSON (an API's error body), not a log record."""


def _says_whence(rec: Envelope) -> bool:
    """``rec`` has one of the fields an envelope names its host or time in (set, whatever its value)."""
    return any(getattr(rec, a) is not UNSET for a in _WHENCE)


#: the host and time fields of :class:`Envelope`
_WHENCE = ("_HOSTNAME", "hostname", "host", "host_name", "kubernetes", "Computer", "realtime", "source_realtime",
           "timestamp", "at_timestamp", "time", "date", "TimeGenerated", "ts", "monotonic")


def decode_ndjson(data: bytes, *, origin: str, stream: str, host: str | None, ref_ts: int,
                  ref_basis: str, ingest_ts: int, source: str | None, runs: bool = False,
                  columnar: bool = True) -> Decoded:
    """One segment per NDJSON record (origin ``<origin>#r<line index>``); unreadable records become rejects
    (``bad_envelope``, the record as it came), but a file's JSON object with no message field (:class:`NoMessageField`)
    and no host or time field either (:func:`_says_whence`) is read as a text line. Times are µs since the epoch, UTC.
    Never raises. With ``runs``, consecutive records whose messages are one line each are one :class:`Envelopes`
    (:func:`per_record` gives the same segments).

    Each line is read as an :class:`Envelope` (msgspec: only the fields decoding uses are built; a
    poller's link sample is read whole by ``schemas.samples.PollerSample``), a clean megabyte of lines in
    one call (:func:`_envelopes`). With ``runs`` and ``columnar``, a megabyte of records of Vector's own
    shape is read column by column instead (:func:`_vector_columns`), with the same result (``columnar=False``
    is the record-by-record reading it is checked against: ``benchmarks/fuzz.py``). After
    ``MAX_REJECTS_PER_VALUE`` rejects, the rest of the value (from the line after the last one) is one more
    ``bad_envelope`` reject that holds it whole, unread."""
    data = _records_without_lone_surrogates(data)  # "\\ud800" alone: U+FFFD, its record kept (a stop's finding)
    out = Decoded()
    add = out.segments.append
    lines = None  # the value's lines, split only for a reject's or a poller's record
    run = _Run()  # with ``runs``: one-line records
    text: list[tuple[int, bytes]] = []  # consecutive text lines among the records (_each_record): one segment
    # the host, time and basis of the record before them, and whether its host is the file name's guess: the text
    # lines are its writer's, written after it (they took the file's name and time, 13 days and a host away from the
    # records around them: a break-it pass)
    last = (host, ref_ts, ref_basis, ref_basis == "file")

    def end_text() -> None:
        if text:
            add(Segment(b"\n".join(t for _, t in text), origin, stream, last[0], last[1], last[2], ingest_ts, source,
                        text[0][0], None, last[3]))
            text.clear()

    health = _HEALTH_EVENT_KEY in data  # an NVSentinel module's records may carry health events (one find a value)
    try:
        for first, chunk in _chunks(data):
            clean = _clean_body(chunk)
            cols = _vector_columns(clean, out.pod_nodes) if clean is not None and runs and columnar else None
            if cols is not None:
                _add_columns(out, run, cols, first, origin, stream, host, ingest_ts, source)
                continue
            for i, rec in _envelopes(chunk, first, origin, out.rejects, clean):
                if type(rec) is bytes:  # text lines among the records: a segment of each run of them, numbered
                    if not (text and text[-1][0] == i - 1):
                        end_text()
                        run.flush(out, origin, stream, ingest_ts, source)
                    text.append((i, rec))
                    continue
                end_text()
                try:
                    fmt = rec.format
                    if fmt is not UNSET and fmt == POLLER_FORMAT:
                        if lines is None:
                            lines = data.split(b"\n")
                        msg = _poller_text(orjson.loads(lines[i]))
                    else:
                        msg = rec.message  # Vector's shape first: the readers below give the same for it, slower
                        if type(msg) is not str or not msg.strip() or rec.MESSAGE is not UNSET:
                            if _structlog_record(rec):  # its other fields are read from its JSON
                                if lines is None:
                                    lines = data.split(b"\n")
                                msg = _message_of(rec, lines[i])
                            else:
                                msg = _message_of(rec)
                        # what a logger's record holds beside its msg, read when its msg is the message read: a
                        # record of Vector's shape reads its ``message`` (its whole line, the fields included), as
                        # its columns do (_vector_columns; a break-it pass: the quoted line read twice, or once of
                        # two readings)
                        own = _logger_record(rec) and rec.MESSAGE is UNSET and type(rec.message) is not str
                        quoted = own and type(rec.line) is str and rec.line
                        if own and (health or type(rec.condition) is dict):
                            if lines is None:
                                lines = data.split(b"\n")
                            msg = _with_health_events(msg, lines[i], type(rec.condition) is dict, bool(quoted))
                        if quoted:
                            msg = f"{msg}\n{rec.line}"  # the line it quotes, on a line of its own (Envelope)
                    ts = rec.timestamp
                    if (type(ts) is not str or rec.realtime is not UNSET or rec.source_realtime is not UNSET
                            or rec.level is not UNSET or (ts := _rfc3339_us(ts)) is None):
                        ts = _time_of(rec)  # a logger's record: its "ts" before the program's "timestamp" (break-it)
                    h = rec.host
                    if (type(h) is not str or not h or rec._HOSTNAME is not UNSET or rec.hostname is not UNSET
                            or ":" in h):
                        h = _host_of(rec)
                    if rec.kubernetes is not UNSET:
                        _k8s_pod(rec.kubernetes, out.pod_nodes)
                    elif h and isinstance(rec.resource, dict) and isinstance(
                            labels := rec.resource.get("labels"), dict):  # a GKE container's entry: its pod, its node
                        _note_pod(out.pod_nodes, labels.get("pod_name"), h)
                except (msgspec.DecodeError, RecursionError, ValueError, TypeError, OverflowError) as e:
                    if lines is None:
                        lines = data.split(b"\n")
                    if type(e) is NoMessageField and not origin.startswith("kafka:") and not _says_whence(rec):
                        # a file's JSON line that is no log record, no message and no host or time (ollama's API
                        # error body, whose message said "CUDA error: uncorrectable ECC error encountered": skipped, a
                        # real-logs pass): read as the text it is, as the text lines among records are. A record with
                        # a host or a time but no message, or a Kafka value of either, is a shipper's mistake: a
                        # reject with its reason (dead-lettered)
                        run.flush(out, origin, stream, ingest_ts, source)
                        text.append((i, lines[i]))
                        continue
                    _reject(out.rejects, origin, i, e, lines[i])
                    continue
                boot = None
                mono = rec.monotonic
                # journald's __MONOTONIC_TIMESTAMP: a decimal count of µs; any other value says nothing of the boot
                if (ts is not None and type(mono) is str and 0 < len(mono) <= 19 and mono.isascii()
                        and mono.isdigit()):
                    boot = ts - int(mono)
                m = msg.encode("utf-8", "surrogateescape")
                rts, basis = (ts, "envelope") if ts is not None else (ref_ts, ref_basis)
                if h and placeholder_host(h):  # "localhost": every machine's name, no host (prefix.PLACEHOLDER_HOSTS;
                    h = None                    # two files' envelopes were one host: a break-it pass)
                last = (h or host, rts, basis, not h and ref_basis == "file")
                # a blank or "|" may start a continuation or a table row: such a message, one of many lines, an
                # empty one or one that ends in "\r" (a line end) stays a segment of its own, so framing and line
                # counts see the lines they would see record by record
                if runs and _one_line(m):
                    run.add(m, i, h or host, rts, basis, boot)
                    continue
                run.flush(out, origin, stream, ingest_ts, source)
                add(Segment(m, f"{origin}#r{i}", stream, h or host, rts, basis, ingest_ts, source, 0, boot,
                            not h and ref_basis == "file"))
    except _TooManyRejects as stop:
        start = 0
        for _ in range(stop.line):  # the byte where line ``stop.line`` starts
            start = data.find(b"\n", start) + 1
            if not start:
                break
        rest = data[start:] if start else b""
        if rest.strip():
            out.rejects.append(Reject(f"{origin}#r{stop.line}", f"NDJSON records {stop.line} on: not read, "
                                      f"{MAX_REJECTS_PER_VALUE} records of this value before them were unreadable",
                                      rest, "bad_envelope"))
    end_text()
    run.flush(out, origin, stream, ingest_ts, source)
    return out


def _one_line(m: bytes) -> bool:
    """A message that may join a run (:class:`Envelopes`): not empty, one line, not ending in ``\r``, not
    starting with a blank or ``|`` (which may start a continuation or a table row)."""
    return bool(m) and 10 not in m and m[0] != 32 and m[0] != 124 and m[-1] != 13


class VectorRecord(msgspec.Struct, gc=False, rename={
        "realtime": "__REALTIME_TIMESTAMP", "monotonic": "__MONOTONIC_TIMESTAMP", "host_name": "host.name",
        "at_timestamp": "@timestamp", "source_realtime": "_SOURCE_REALTIME_TIMESTAMP"}):
    """A record of Vector's own shape (shared/reference/formats.md §1.7): ``message``, ``timestamp`` (RFC 3339)
    and ``host``, each a string, and none of the other :class:`Envelope` fields that would change what its
    message, time, boot or host is read as (``UnsetType``: a record that has one fails to decode as this).
    The fields :class:`Envelope` reads that Vector's win over (``log``, ``msg``, ``@timestamp``, ``time``,
    ``date``) are read as there, so a value msgspec refuses in them (a number past a double) refuses the record
    as there (a break-it pass found it let through); any other field is skipped unread. msgspec reads keys
    spelled with ``\\u`` escapes as the key, and refuses a lone surrogate, so the strings encode to UTF-8 as
    they are."""

    message: str
    timestamp: str
    host: str
    MESSAGE: UnsetType = UNSET
    realtime: UnsetType = UNSET
    source_realtime: UnsetType = UNSET
    monotonic: UnsetType = UNSET
    _HOSTNAME: UnsetType = UNSET
    hostname: UnsetType = UNSET
    host_name: UnsetType = UNSET
    format: UnsetType = UNSET
    # cloud exports' fields: a record that has one is read record by record, where a host or a GKE pod they name
    # counts (read column by column, the Kafka key stood in: a break-it pass)
    Computer: UnsetType = UNSET
    resource: UnsetType = UNSET
    labels: UnsetType = UNSET
    jsonPayload: UnsetType = UNSET
    log: Any = UNSET
    msg: Any = UNSET
    # the later message fields (``_MESSAGE_FIELDS``): read beside an empty ``message`` (``_vector_columns``)
    textPayload: Any = UNSET
    SyslogMessage: Any = UNSET
    at_timestamp: Any = UNSET
    time: Any = UNSET
    date: Any = UNSET
    kubernetes: Any = UNSET  # a pod's node when ``host`` is empty (kubernetes_logs: ``pod_node_name``)


_VECTOR = msgspec.json.Decoder(VectorRecord)


def _later_line(r: VectorRecord, solid: bool = False) -> bool:
    """A message field after ``message`` in :data:`_MESSAGE_FIELDS` holds a non-empty string in ``r`` (its line,
    which ``_message_of`` reads beside an empty or blank ``message``). Of ``log`` and ``msg`` alone, an empty message
    beside a Cloud Logging export's ``textPayload`` or an Azure ``SyslogMessage`` was read column by column as an
    empty line: the Xid in it lost unsaid, while the record-by-record reading (``columnar=False``) kept it (a
    break-it pass)."""
    return any(_holds_line(getattr(r, attr), solid) for _k, attr in _MESSAGE_FIELDS[2:])


def _vector_columns(clean: tuple[bytes, int], pods: dict[str, str] | None = None
                    ) -> tuple[list[str], list[str], list[int]] | None:
    """(messages, hosts, times in µs since the epoch, UTC) of a clean chunk (:func:`_clean_body`'s body and
    number of lines) whose every record has Vector's shape (:class:`VectorRecord`) and a time
    :func:`_rfc3339_us` reads (:func:`_vector_times`); ``None`` for any other chunk. A host is ``""`` where the
    record's is empty. The pods the records' Kubernetes metadata names go to ``pods`` (:func:`_k8s_pod`)."""
    try:
        recs = _VECTOR.decode_lines(clean[0])
    except (msgspec.DecodeError, RecursionError):  # a record of another shape (ValidationError is one)
        return None
    if len(recs) != clean[1]:
        return None
    messages = [r.message for r in recs]
    # one pass for empty and blank messages alike: strip gives a message back as it is unless it has a blank at an
    # end (as fast as the `"" in messages` this was, which let a blank one through: read as a blank line)
    if not all(map(str.strip, messages)) and any(_blank(r.message) and _later_line(r, bool(r.message))
                                                  for r in recs):
        return None  # a blank message beside a line in a later field: read record by record (_message_of)
    times = _vector_times([r.timestamp for r in recs])
    if times is None:
        return None
    hosts = [r.host for r in recs]
    # the checks per distinct host, and the Kubernetes metadata's only when a record has some: a value's records
    # name one host or a few, and seldom a pod
    if any(":" in h for h in set(hosts)):  # an address with its port is no host (_host_of): read record by record
        return None                        # (a break-it pass: the columns kept "10.0.0.5:29500" over the Kafka key)
    if [r.kubernetes for r in recs].count(UNSET) != len(recs):
        for i, r in enumerate(recs):
            if pods is not None and r.kubernetes is not UNSET:
                _k8s_pod(r.kubernetes, pods)
            if not r.host and r.kubernetes is not UNSET:  # as the record-by-record reading reads it (a break-it
                try:                                      # pass: the Kafka key stood in for the pod's node)
                    hosts[i] = _k8s_host(r.kubernetes) or ""
                except ValueError:
                    return None  # the record-by-record reading says why
    return messages, hosts, times


def _vector_times(stamps: list[str]) -> list[int] | None:
    """µs since the epoch (UTC) of RFC 3339 stamps, as :func:`_rfc3339_us` reads each; ``None`` when one is no
    time it reads (the record-by-record reading then says why).

    A few stamps (up to ``_FEW_RECORDS``) are read one by one; of more, those of the most common length are read
    at once (:func:`_stamps_of_width`): Vector prints the fewest
    of 0, 3, 6 or 9 digits of fraction that hold the time, so most stamps of a chunk share a length and a few
    (those of a whole ms or µs) do not; those, and all of them when the common length is not read at once,
    are read one by one."""
    if len(stamps) <= _FEW_RECORDS:  # one Arrow cast costs ~100 µs: more than reading a few one by one
        times = list(map(_rfc3339_us, stamps))
        return None if None in times else times
    lengths = list(map(len, stamps))
    widths = set(lengths)
    w = lengths[0] if len(widths) == 1 else max(widths, key=lengths.count)
    same = None if len(widths) == 1 else [i for i, k in enumerate(lengths) if k == w]  # None: every stamp
    got = _stamps_of_width(stamps if same is None else [stamps[i] for i in same], w)
    if got is None:
        times = list(map(_rfc3339_us, stamps))
    elif same is None:
        return got
    else:
        times = [_rfc3339_us(v) if k != w else 0 for v, k in zip(stamps, lengths)]
        for i, t in zip(same, got):
            times[i] = t
    return None if None in times else times


def _stamps_of_width(stamps: list[str], w: int) -> list[int] | None:
    """µs since the epoch (UTC) of RFC 3339 stamps of length ``w``, ``YYYY-MM-DDTHH:MM:SS[.f…]Z`` with 1 to 9
    digits of fraction in ASCII (Vector's and Fluent Bit's shape), read by one Arrow cast; ``None`` when any
    stamp has another shape, is no time (Feb 30, hour 24, second 60: Arrow refuses them) or is outside 2000 to
    2100. What it reads, :func:`_rfc3339_us` reads to the same µs (the fraction past µs cut, not rounded)."""
    n = len(stamps)
    if not (w == 20 or 22 <= w <= 30):  # 19 + "Z", or 19 + "." + 1 to 9 digits + "Z"
        return None
    text = "".join(stamps)
    if not text.isascii():
        return None
    raw = text.encode("ascii")
    # the layout of every stamp at once: each digit read as 0, the stamps are the one template n times
    if raw.translate(_DIGITS_AS_0) != (_STAMP_SHAPE + (b"." + b"0" * (w - 21) if w > 20 else b"") + b"Z") * n:
        return None
    import numpy as np
    import pyarrow as pa

    offsets = np.arange(0, (n + 1) * w, w, dtype=np.int32)
    stamps_arr = pa.StringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(raw))
    try:
        ns = stamps_arr.cast(pa.timestamp("ns", "UTC")).view(pa.int64()).to_numpy()
    except pa.ArrowInvalid:  # a day the month has not, hour 24, second 60: read one by one
        return None
    if ns.min() < _Y2000_NS or ns.max() >= _Y2100_NS:
        return None
    return (ns // 1000).tolist()


_STAMP_SHAPE = b"0000-00-00T00:00:00"
_DIGITS_AS_0 = bytes.maketrans(b"0123456789", b"0" * 10)
_Y2000_NS, _Y2100_NS = 946_684_800 * 10**9, 4_102_444_800 * 10**9


def _add_columns(out: Decoded, run: _Run, cols: tuple[list[str], list[str], list[int]], first: int, origin: str,
                 stream: str, host: str | None, ingest_ts: int, source: str | None) -> None:
    """Add the records of :func:`_vector_columns` (lines ``first`` on) to ``out`` as :func:`decode_ndjson` adds
    them record by record with ``runs``: one-line messages to ``run``, each other one a segment of its own after
    the run so far."""
    msgs, hosts, times = cols
    n = len(msgs)
    joined = "\n".join(msgs).encode()  # UTF-8; no surrogates: msgspec refuses a lone one
    # per distinct name, not per record: a value's records name one host or a few (2 % of an NDJSON chunk's CPU)
    named = {h: h if h and not placeholder_host(h) else host for h in set(hosts)}
    hosts = [named[hosts[0]]] * n if len(named) == 1 else list(map(named.__getitem__, hosts))
    bad = _not_in_run(joined, n)
    if bad is not None:  # line k of ``joined`` is message k
        pieces = joined.split(b"\n") if bad else None
    else:  # a message holds a line end: split them as they are
        pieces = list(map(str.encode, msgs))
        bad = [j for j, m in enumerate(pieces) if not _one_line(m)]
    if not bad:
        run.extend(joined, range(first, first + n), hosts, times)
        return
    prev = 0
    for j in bad + [n]:
        if j > prev:
            run.extend(b"\n".join(pieces[prev:j]), range(first + prev, first + j), hosts[prev:j], times[prev:j])
        if j == n:
            break
        run.flush(out, origin, stream, ingest_ts, source)
        out.segments.append(Segment(pieces[j], f"{origin}#r{first + j}", stream, hosts[j], times[j], "envelope",
                                    ingest_ts, source, 0, None))
        prev = j + 1


#: up to these, records and bytes are checked one by one, not with numpy (:func:`_not_in_run`, :func:`_clean_body`)
_FEW_RECORDS, _FEW_BYTES = 32, 8192


def _not_in_run(joined: bytes, n: int) -> list[int] | None:
    """The indexes of the messages that may not join a run (:func:`_one_line`: empty, a blank or ``|`` first,
    ``\\r`` last) among ``n`` messages joined by ``\\n`` into ``joined``; ``None`` when a message holds a ``\\n``
    itself (``joined`` has more than ``n`` lines). Vectorized over the bytes (numpy): per message, its first and
    last byte; a few messages one by one (numpy's fixed cost, ~15 µs, is more than theirs: Vector's Kafka sink
    sends one record per message)."""
    if n <= _FEW_RECORDS:
        if joined.count(b"\n") != n - 1:
            return None
        return [j for j, m in enumerate(joined.split(b"\n")) if not _one_line(m)]
    data = np.frombuffer(joined + b"\n", np.uint8)  # the pad: what an empty message's first and last byte read
    ends = np.flatnonzero(data == 10)  # where each message ends (the last: at the pad)
    if len(ends) != n:
        return None
    starts = np.empty(n, np.int64)
    starts[0] = 0
    starts[1:] = ends[:-1] + 1
    first, last = data[starts], data[ends - 1]
    return np.flatnonzero((starts == ends) | (first == 32) | (first == 124) | (last == 13)).tolist()


def _reject(rejects: list[Reject], origin: str, i: int, e: Exception | str, raw: bytes) -> None:
    """Append the ``bad_envelope`` reject of line ``i`` (its reason: ``e`` when a text, else :func:`_why`'s); raise
    :class:`_TooManyRejects` at the cap."""
    why = e if isinstance(e, str) else _why(e, raw)
    rejects.append(Reject(f"{origin}#r{i}", f"NDJSON record {i}: {why}", raw, "bad_envelope"))
    if len(rejects) >= MAX_REJECTS_PER_VALUE:
        raise _TooManyRejects(i + 1)


def _chunks(data: bytes) -> Iterator[tuple[int, bytes]]:
    """(index of its first line, chunk) of ``data`` cut in ``_NDJSON_CHUNK`` bytes at line ends."""
    pos, first, n = 0, 0, len(data)
    while pos < n:
        end = data.find(b"\n", pos + _NDJSON_CHUNK)
        if end < 0:
            yield first, data[pos:] if pos else data
            return
        chunk = data[pos:end]
        yield first, chunk
        first += chunk.count(b"\n") + 1
        pos = end + 1


def _envelopes(chunk: bytes, first: int, origin: str, rejects: list[Reject], clean: tuple[bytes, int] | None
               ) -> Iterator[tuple[int, Envelope | bytes]]:
    """(line index, envelope or a text line's bytes: :func:`_each_record`) of each record of a chunk
    (:func:`_chunks`) whose first line is line ``first``: a
    clean chunk (``clean``: what :func:`_clean_body` gave for it) in one call (:func:`_clean_records`), any
    other line by line (:func:`_each_record`, whose unreadable lines go to ``rejects``)."""
    recs = _clean_records(clean)
    if recs is not None:
        return enumerate(recs, first)
    return _each_record(chunk.split(b"\n"), first, origin, rejects)


def _clean_body(data: bytes) -> tuple[bytes, int] | None:
    """(``data`` without its trailing newline, its number of lines) when it is clean — ``{…}`` records joined
    by single newlines, UTF-8 (what Vector and Fluent Bit send) — else ``None``."""
    body = data[:-1] if data[-1:] == b"\n" else data  # a trailing newline ends the last record
    if body[:1] != b"{" or body[-1:] != b"}":
        return None
    if len(body) <= _FEW_BYTES:  # a few records (numpy's fixed cost is more than two counts)
        n = body.count(b"\n")
        if body.count(b"}\n{") != n:
            return None
    else:
        raw = np.frombuffer(body, np.uint8)
        ends = np.flatnonzero(raw == 10)  # each between "}" and "{" (neither is the first or last byte)
        if len(ends) and ((raw[ends - 1] != 125).any() or (raw[ends + 1] != 123).any()):
            return None
        n = len(ends)
    if not body.isascii():
        try:
            body.decode()  # JSON text is UTF-8 (RFC 8259), in the fields that are skipped too
        except UnicodeDecodeError:
            return None
    return body, n + 1


def _clean_records(clean: tuple[bytes, int] | None) -> list[Envelope] | None:
    """The envelopes of a clean value (``clean``: what :func:`_clean_body` gave for it) read in one
    ``decode_lines`` call; ``None`` for any other value (read line by line).

    One call reads the same records as one call per line: a line that starts with ``{`` and ends with
    ``}`` cannot end inside a JSON value (a value goes on after a newline only behind ``:``, ``[`` or
    ``,``; a string cannot hold a raw newline), so a value per line is the same as as many values as lines.
    """
    if clean is None:
        return None
    try:
        recs = _ENVELOPE.decode_lines(clean[0])
    except (msgspec.DecodeError, RecursionError):
        return None
    return recs if len(recs) == clean[1] else None


def _each_record(lines: list[bytes], first: int, origin: str, rejects: list[Reject]
                 ) -> Iterator[tuple[int, Envelope | bytes]]:
    """(line index, envelope) of each line that is not blank (``lines`` start at line ``first``), read one by
    one; a line that is not a JSON object in UTF-8 is a ``bad_envelope`` reject (:func:`_reject`), but a line that
    does not open as one and is no JSON at all — text among the records: a crash's traceback after a program's JSON
    records, a comment — is (line index, its bytes), read as text (a break-it pass: such lines were rejects, an
    NCCL error among them lost)."""
    decode = _ENVELOPE.decode
    for i, raw in enumerate(lines, first):
        if not raw or raw.isspace():
            continue
        if raw.lstrip()[:1] != b"{" and not _is_json(raw):
            if i == 0 and raw.rstrip().endswith(b"}") and raw.count(b"}") > raw.count(b"{") and (
                    _MESSAGE_KEY.search(raw) is not None or _RECORD_TAIL.search(raw) is not None):
                # a record's end whose start was cut off (a file copied from an offset): its host and time are lost,
                # and read as text it was a fault of a host named after the file, at the file's time (a break-it pass).
                # Only the first line, and one whose opening braces were cut off: a line that holds a whole "{…}"
                # after text (fluentd's out_stdout "… kern.node07: {…}") is text (break-it passes)
                _reject(rejects, origin, i, "the end of a record whose start is missing (the file begins or was cut "
                        "inside it)", raw)
                continue
            yield i, raw
            continue
        try:
            raw.decode()  # JSON text is UTF-8 (RFC 8259), in the fields that are skipped too
            rec = decode(raw)
        except (msgspec.DecodeError, RecursionError, ValueError, TypeError, OverflowError) as e:
            _reject(rejects, origin, i, e, raw)
            continue
        yield i, rec


def _why(e: Exception, raw: bytes) -> str:
    """A reject's reason for an NDJSON record ``raw`` that failed with ``e``."""
    if isinstance(e, UnicodeDecodeError):
        o = e.object[e.start:e.start + 3]
        if len(o) == 3 and o[0] == 0xED and 0xA0 <= o[1] <= 0xBF and 0x80 <= o[2] <= 0xBF:  # what "\ud800" encodes to
            return (f"not UTF-8: bytes {o.hex(' ')} at byte {e.start} encode a UTF-16 surrogate (CESU-8 or WTF-8), "
                    "which UTF-8 holds no character of")
        return f"not UTF-8: {e}"
    if isinstance(e, msgspec.ValidationError):  # every field is Any: a record that is no object, or a number
        s = str(e)                              # past a double in a field that is read
        return f"record is not an object ({s})" if s.startswith("Expected `object`") else s
    if isinstance(e, msgspec.DecodeError):  # malformed JSON: orjson names what is wrong and where
        try:
            orjson.loads(raw)
        except orjson.JSONDecodeError as oe:
            return str(oe)
    return str(e)

def looks_json_array(data: bytes) -> bool:
    """True when the value is a JSON array of objects: ``[``, then ``{`` and ``"`` or ``}``; or a JSON array (it
    ends in ``]`` and parses) that holds an object among other values (``[1, "x", null, {…}]``: it was read as one
    line of text, and the elements that are no envelopes said nothing: a break-it pass), whose other elements are
    then ``bad_envelope`` rejects (:func:`decode_json_array`).

    A raw dmesg line (``[  12.345678] …``) or a bracketed tag (``[Rank 0] …``) is text.
    """
    if _JSON_ARRAY_START.match(data) is not None:
        return True
    return _mixed_json_array(data)


def _mixed_json_array(data: bytes) -> bool:
    """``data`` is a JSON array with at least one object (:func:`looks_json_array`'s second form)."""
    if 123 not in data or data.lstrip()[:1] != b"[" or data.rstrip()[-1:] != b"]":
        return False
    try:
        v = orjson.loads(without_lone_surrogates(data))
    except orjson.JSONDecodeError:
        return False
    return isinstance(v, list) and any(isinstance(x, dict) for x in v)


def decode_json_array(data: bytes, **where) -> Decoded:
    """A value that is one JSON array of envelopes (a shipper's batch): one segment per element.

    ``where``: the keyword arguments of :func:`decode_ndjson`. Element ``i`` reads as NDJSON record
    ``i`` would (origin ``#r<i>``; an element that is not an object is a ``bad_envelope`` reject).
    An array that is not valid JSON is one ``bad_envelope`` reject holding the whole value. Never raises.
    """
    try:
        recs = orjson.loads(without_lone_surrogates(data))  # "\\ud800" alone: U+FFFD (the whole value was lost)
    except orjson.JSONDecodeError as e:
        return Decoded(rejects=[Reject(where["origin"], f"JSON array value: {e}", data, "bad_envelope")])
    # one record per line, so element i is NDJSON record i: a single reading of envelopes, not two. Each
    # element's JSON is appended and let go at once: orjson's output of a small object keeps a buffer of ~4 KB,
    # so a list of them (a join) held ~1,400 times the value's size (a 3 MB array of "{}" took 4.3 GB)
    lines = bytearray()
    dumps = orjson.dumps
    for rec in recs:
        lines += dumps(rec)
        lines += b"\n"
    del recs
    if lines:
        del lines[-1]  # the last newline, in place: a slice would copy the whole value once more
    return decode_ndjson(bytes(lines), **where)


def _decode_text(data: bytes, *, origin: str, stream: str, host: str | None, ref_ts: int, ref_basis: str,
                 ingest_ts: int, source: str | None, line_base: int) -> Decoded:
    """Decompressed bytes: NDJSON envelopes, a JSON array of them, or plain text lines.

    A UTF-8 byte order mark (Windows editors, PowerShell's ``Out-File``) is not text: it is dropped,
    so neither an envelope nor a first line's ``^`` anchor sees it. Text that begins with a UTF-16 or UTF-32
    byte order mark (a capture saved by PowerShell's ``>``) is read as such and handled as UTF-8 from then on
    (bytes that are no text of it read as U+FFFD); without a mark, such text is recognised by its zero bytes
    (:func:`bomless_codec`: ``decode_file``, ``decode_message``) before it gets here.
    """
    if data[:3] == _BOM:
        data = data[3:]
    elif data[:2] in _WIDE_FIRST and (codec := _wide_codec(data)):
        data = data.decode(codec, "replace").encode("utf-8")
    if 0 in data:  # before the records are parsed: a hole with no line feed glued two records (a break-it pass)
        data = end_nul_holes(data)
    if looks_ndjson(data):
        return decode_ndjson(data, origin=origin, stream=stream, host=host, ref_ts=ref_ts, ref_basis=ref_basis,
                             ingest_ts=ingest_ts, source=source)
    if looks_json_array(data):
        return decode_json_array(data, origin=origin, stream=stream, host=host, ref_ts=ref_ts,
                                 ref_basis=ref_basis, ingest_ts=ingest_ts, source=source)
    return Decoded(segments=[Segment(data, origin, stream, host, ref_ts, ref_basis, ingest_ts, source, line_base)])


#: (topic, partition) -> (origin prefix, source); (topic, partition, key) -> (host, stream). One Kafka key
#: per host, so two small caches spare every record the same string building.
_PARTITIONS: dict[tuple[str, int], tuple[str, str | None]] = {}
_KEYED: dict[tuple[str, int, bytes], tuple[str, str]] = {}
_CACHE_MAX = 1 << 16
#: bytes a value that is more than plain text may start with: a JSON object or array (after blanks), or a
#: byte order mark. Any other value takes the plain-text path at once.
_NOT_PLAIN_FIRST = b"{[ \t\n\r\x0b\x0c\xef\xff\xfe\x00"
_new_decoded = Decoded.__new__


def _partition_names(topic: str, partition: int) -> tuple[str, str | None]:
    """(origin prefix ``kafka:<topic>/<partition>/``, source from the topic), cached."""
    tp = _PARTITIONS.get((topic, partition))
    if tp is None:
        if len(_PARTITIONS) >= _CACHE_MAX:
            _PARTITIONS.clear()
        tp = _PARTITIONS[(topic, partition)] = (f"kafka:{topic}/{partition}/", TOPIC_SOURCE.get(topic))
    return tp


def _key_names(topic: str, partition: int, key: bytes) -> tuple[str, str]:
    """(host, stream ``<topic>/<partition>/<host>``) a Kafka key names, cached: :func:`_host_stream`."""
    known = _KEYED.get((topic, partition, key))
    if known is None:
        if len(_KEYED) >= _CACHE_MAX:
            _KEYED.clear()
        h = key.decode("utf-8", "replace").strip()  # "node07\n": a shipper's template's line end
        known = _KEYED[(topic, partition, key)] = (h, _host_stream(topic, partition, h))
    return known


def _host_stream(topic: str, partition: int, host: str | None) -> str:
    """The stream of a partition's records that a key or ``host`` header names ``host`` (as sent): the host as
    stored (``schemas.hostname.canonical_host``), so ``node07`` and ``NODE07`` of one partition are one stream, as
    they are one host: one file for what its earlier lines said (a traceback line under ``NODE07`` after NCCL lines
    under ``node07`` took the key where ``diagnose`` of the file gave the host they named, a break-it pass). A name
    that is no host name is kept as it is (``assign_hosts`` refuses it as a file's name)."""
    return f"{topic}/{partition}/{canonical_host(host) if host and is_host_name(host) else host or ''}"


def decode_message(value: bytes | None, *, topic: str, partition: int, offset: int, key: bytes | None,
                   timestamp_ms: int, headers: list[tuple[str, bytes]] | None = None, runs: bool = False) -> Decoded:
    """Decode one Kafka record value: plain text, NDJSON envelopes or a JSON array of them, optionally
    compressed (gzip, zstd or zlib: :func:`decompress`).

    ``timestamp_ms``: the Kafka record time (ms since the epoch); segments carry it as ``ref_ts`` and
    ``ingest_ts`` in µs. Host: the envelope's, else the Kafka key, else a ``host`` header.

    Returns the segments and the rejects (origin ``kafka:<topic>/<partition>/<offset>``): ``empty``
    (a tombstone), ``too_large`` (over :data:`MAX_VALUE_BYTES`), ``bad_compression`` (corrupt, truncated,
    an unread format, or more than :data:`MAX_VALUE_BYTES` decompressed), ``not_text`` (bytes with a NUL that
    :func:`binary_file` finds no text: random data, an executable), ``bad_envelope`` (per record).
    Never raises on bad input. With ``runs``, an NDJSON value's one-line records come as :class:`Envelopes`
    (``decode_ndjson``); :func:`per_record` gives the segments without it.

    Runs once per Kafka record, so the plain-text path does the least it can:
    no decompression call unless a magic number says so, the origin's prefix,
    the key's host and the stream name from caches.
    """
    tp = _partition_names(topic, partition)
    origin = tp[0] + str(offset)
    if not value:  # a null value, or an empty one: dead-lettered alike (the empty one vanished unsaid: a break-it pass)
        return Decoded(rejects=[Reject(origin, "empty value (tombstone)" if value is None else "empty value", b"",
                                       "empty")])
    if len(value) > MAX_VALUE_BYTES:
        # the value itself (the record holds it already): the dead letter keeps as much of it as it can take
        return Decoded(rejects=[Reject(origin, f"value of {len(value)} bytes exceeds {MAX_VALUE_BYTES}",
                                       value, "too_large")])
    data = value
    if value[:1] in _MAGIC_FIRST and _MAGIC.match(value):
        try:
            data = decompress(value)
        except CompressionError as e:  # deterministic: redelivery would fail the same way
            # the whole lines before the cut of a value cut short are read, as a file's are (a truncated gzip value
            # lost its good lines to the dead-letter topic: a break-it pass); the value goes there whole either way.
            # One that decompresses past the limit is refused whole: its head would make a bomb an amplifier
            head = b"" if e.too_large else e.partial[:e.partial.rfind(b"\n") + 1]
            d = decode_message(head, topic=topic, partition=partition, offset=offset, key=key,
                               timestamp_ms=timestamp_ms, headers=headers, runs=runs) if head else None
            if d is None or not d.segments:  # nothing before the cut, or no text (binary data): one dead letter
                return Decoded(rejects=[Reject(origin, f"cannot decompress: {e}", value, "bad_compression")])
            said = e.lost(head.count(b"\n"), len(head))
            d.rejects.append(Reject(origin, f"cannot decompress: {e}; {said}", value, "bad_compression"))
            return d
    if (text := bomless_text(data)) is not None and binary_file(text) is None:
        # UTF-16/32 text without a byte order mark, as a file's is read (decode_file): its lines matched nothing,
        # no event and no dead letter (a break-it pass on the service path); what decodes to no text (random 16-bit
        # values) stays the binary data it is, a not_text reject below (a second break-it pass)
        data = text
    if 0 in data and (why := binary_file(data)) is not None:  # random bytes, an executable: matched nothing before,
        # and neither an event nor a dead letter said so (a break-it pass); a log zeroed by a crash is still text
        return Decoded(rejects=[Reject(origin, why, value, "not_text")])  # whole: sent again, it reads alike
    if 0 in data and not data.strip(b"\x00 \t\r\n"):  # zeroed blocks and nothing else: no text at all, said (a
        # 9 MB value of NUL bytes vanished unsaid: a break-it pass)
        return Decoded(rejects=[Reject(origin, "only NUL bytes and blanks: no text", value, "not_text")])
    host = None
    if key:
        host, stream = _key_names(topic, partition, key)
    if not host:  # no key, or one of blanks only: the host header, if any (its surrounding blanks dropped, as a key's)
        said = sorted({v.decode("utf-8", "replace").strip() for k, v in headers or ()
                       if k == "host" and v and v.strip()})
        # one host however it is spelled (schemas.hostname: node07, NODE07 and node07.cluster.local are one); asked
        # only of a record with several headers
        hosts = sorted({canonical_host(h) for h in said}) if len(said) > 1 else said
        if len(hosts) > 1:  # which machine wrote it? The last one won, silently (a break-it pass)
            return Decoded(rejects=[Reject(origin, f"the record's host headers name {len(hosts)} hosts ("
                                           + ", ".join(h[:80] for h in hosts[:4]) + "): which one wrote it is not "
                                           "known; key the record by its host, or send one host header",
                                           value, "bad_host")])
        host = said[0] if said else None
        stream = _host_stream(topic, partition, host)
    ts = timestamp_ms * 1000
    source = tp[1]
    if 0 in data:  # a crash's hole ends its line before any record is parsed (end_nul_holes)
        data = end_nul_holes(data)
    if data[:1] in _NOT_PLAIN_FIRST:
        if looks_ndjson(data):  # the common structured case, straight (_decode_text would ask again)
            return decode_ndjson(data, origin=origin, stream=stream, host=host, ref_ts=ts, ref_basis="kafka",
                                 ingest_ts=ts, source=source, runs=runs)
        if data[:3] == _BOM or data[:2] in _WIDE_FIRST or looks_json_array(data):
            return _decode_text(data, origin=origin, stream=stream, host=host, ref_ts=ts, ref_basis="kafka",
                                ingest_ts=ts, source=source, line_base=0)
    data = _cr_value(data)
    out = _new_decoded(Decoded)  # the dataclass __init__ costs twice as much as the assignments
    out.segments = [Segment(data, origin, stream, host, ts, "kafka", ts, source)]
    out.rejects = []
    out.pod_nodes = {}
    return out


#: first bytes of values that may be more than plain text (compressed, JSON, a byte order mark, blanks
#: before JSON): :func:`decode_partition` sends those through :func:`decode_message`, the rest straight on
_SPECIAL_FIRST = frozenset(b"\x1f\x28\x78\xfd\x04\x02\xffBP7" + _NOT_PLAIN_FIRST)
_BRACKETS = frozenset(b"{[")


def decode_partition(topic: str, partition: int, records) -> Decoded:
    """Decode Kafka records of one partition, in order: the same segments (:func:`per_record`) and rejects as
    :func:`decode_message` on each record, in one pass (:func:`decode_partition_until` without a limit)."""
    return decode_partition_until(topic, partition, records, None)[0]


def decode_partition_until(topic: str, partition: int, records, max_bytes: int | None
                           ) -> tuple[Decoded, int, int]:
    """Decode Kafka records of one partition in order until the bytes they hold — decoded text and rejected
    parts — pass ``max_bytes`` (the record that passes it is included; ``None``: no limit). Returns (decoded,
    records read, those bytes);
    the decoded part equals :func:`decode_message` on each record read (segments as :func:`per_record`, in
    offset order within each key). At most one value is decoded past
    the limit, so a run of compressed values costs memory up to the limit, not up to the run.

    ``records``: objects with ``value`` (bytes or None), ``offset``, ``key`` (bytes or None),
    ``timestamp`` (ms since the epoch) and ``headers`` (``(str, bytes)`` pairs) — aiokafka's
    ``ConsumerRecord``. A plain-text value with a key (what a shipper sends per line, the common case at
    one line per message) is not decoded one by one: the one-line values of each key become one
    :class:`Records` (whatever other keys' values come between them), a multi-line one a :class:`Segment`.
    Any other value goes through :func:`decode_message`. The segments of each stream (the host a key names,
    in which lines share carried context) stay in offset order; streams' segments may interleave differently
    than their records. :func:`per_record` gives the segments record by record. Never raises on bad input.
    """
    out = _new_decoded(Decoded)
    segments: list[Segment | Records] = []
    rejects: list[Reject] = []
    reject_offsets: list[int] = []  # each reject's record: a run's NUL records are read stream by stream
    out.segments, out.rejects, out.pod_nodes = segments, rejects, {}
    prefix, source = _partition_names(topic, partition)
    special = _SPECIAL_FIRST
    limit = (1 << 62) if max_bytes is None else max_bytes  # None: no limit
    size = read = 0
    # per stream (the host a key names; two keys can name one, b"\xff" and b"\xfe" both "\ufffd"): (host, its
    # one-line records read since the last segment of another shape)
    runs: dict[str, tuple[str, list]] = {}
    last_key: bytes | None = None
    run: list = []
    max_value = MAX_VALUE_BYTES

    def end_runs() -> None:  # before any other segment: the order within each stream is kept
        for stream, (host, rs) in runs.items():
            data = b"\n".join([x.value for x in rs])
            if 0 not in data:  # one memchr per run: a value with a NUL byte is decode_message's to judge (binary
                segments.append(Records(data, rs, prefix, stream, host, source))  # data is a not_text reject)
                continue
            for nul, group in groupby(rs, key=lambda x: 0 in x.value):
                group = list(group)
                if not nul:
                    segments.append(Records(b"\n".join([x.value for x in group]), group, prefix, stream, host, source))
                    continue
                for x in group:
                    decode_one(x)
        runs.clear()

    def decode_one(r) -> int:  # a record decode_message reads on its own; the bytes it holds
        d = decode_message(r.value, topic=topic, partition=partition, offset=r.offset, key=r.key,
                           timestamp_ms=r.timestamp, headers=r.headers, runs=True)
        segments.extend(d.segments)
        if d.rejects:
            rejects.extend(d.rejects)
            reject_offsets.extend([r.offset] * len(d.rejects))
        if d.pod_nodes:
            out.pod_nodes.update(d.pod_nodes)
        return d.held_bytes()

    def via_message(r) -> int:  # decode_one after the runs so far (the order within each stream is kept)
        nonlocal last_key
        if runs:
            end_runs()
            last_key = None
        return decode_one(r)

    for r in records:
        read += 1
        value, key = r.value, r.key
        if (not value or not key or len(value) > max_value or value[0] in special and (
                # "[  12.345678] …" (raw dmesg) or "{'loss': …}" is text: only JSON openings are more (a "["
                # line without a "{" is no array of objects: memchr spares each raw dmesg line the regex)
                value[0] not in _BRACKETS or 123 in value and (
                    _JSON_OBJECT_START if value[0] == 123 else _JSON_ARRAY_START).match(value)
                or value[0] == 91 and 123 in value and value.rstrip()[-1:] == b"]"  # [1, {…}]: looks_json_array
                # a first line that is no record before envelopes (a lone "{", a cut record): decode_message reads
                # them as records (looks_ndjson), and so must this (a property's draw: "{\n\n{"message": …}")
                or 123 in value and 10 in value and _envelopes_after_first_line(value))):
            size += via_message(r)  # asks
            if size > limit:
                break
            continue
        # "|" may start a table row; several lines, or a "\r" line end (a CRLF shipper): a segment of its own
        if value[0] == 124 or 10 in value or value[-1] == 13:
            host, stream = _key_names(topic, partition, key)
            if not host or 0 in value:  # a key of blanks (the host header names it), a NUL byte (binary data?)
                size += via_message(r)
                if size > limit:
                    break
                continue
            if runs:
                end_runs()
                last_key = None
            ts = r.timestamp * 1000
            data = _cr_value(value)  # as decode_message reads it
            segments.append(Segment(data, prefix + str(r.offset), stream, host, ts, "kafka", ts, source))
        else:
            if key != last_key:
                host, stream = _key_names(topic, partition, key)
                if not host:  # a key of blanks: the host header names it
                    size += via_message(r)
                    if size > limit:
                        break
                    continue
                got = runs.get(stream)
                if got is None:
                    got = runs[stream] = (host, [])
                run = got[1]
                last_key = key
            run.append(r)
        size += len(value)
        if size > limit:
            break
    if runs:
        end_runs()
    if any(a > b for a, b in zip(reject_offsets, reject_offsets[1:])):
        # in offset order, as decode_message on each record gives them (and the dead-letter topic gets them): the
        # binary values of two keys' runs came stream by stream (a property's draw: offsets 2 before 1)
        order = sorted(range(len(rejects)), key=reject_offsets.__getitem__)
        out.rejects = [rejects[i] for i in order]
    return out, read, size


_HOST_FROM_NAME = re.compile(r"^([^.]+)")


def path_text(name: str) -> str:
    """A file name as UTF-8 text: bytes that are not UTF-8 (which Python keeps as surrogates, and Arrow cannot
    store) as ``\\xff`` escapes."""
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


#: bytes of a file that :func:`binary_file` looks at, and the share of control bytes from which it is no text
_SNIFF_BYTES = 65536
_BINARY_SHARE = 0.05
#: control bytes that log text does not hold: C0 without NUL (a log zero-filled by a power loss holds runs of
#: it), bell and backspace (a terminal capture's spinner: ``script(1)``), tab, line feed, form feed, carriage
#: return, shift out and in (``tput sgr0`` under TERM=screen writes ``ESC [ m SI``) and escape (ANSI colours)
_CONTROL = bytes(b for b in range(1, 32) if b not in (7, 8, 9, 10, 12, 13, 14, 15, 27))
#: formats someone may point ``diagnose`` at by mistake, by the magic number they start with (Parquet: and end
#: with, as a log line may start with ``PAR1``): what to do instead
_NOT_LOGS = ((b"LPKSHHRH", b"",
              "a systemd journal file: export it first, `journalctl --file FILE -o json > FILE.json`"),
             (b"\x7fELF", b"", "an executable (ELF)"),
             (b"PAR1", b"PAR1", "a Parquet file: query it with `firstfault sql`"),
             (b"SQLite format 3\x00", b"", "an SQLite database"))


def known_format(data: bytes) -> str | None:
    """Why bytes of a format known by its magic number are no log text (what to do instead), or None: a magic number
    of :data:`_NOT_LOGS`, or a tar archive's at offset 257 (a break-it pass: its members were read as one log, their
    first lines glued to their headers)."""
    for magic, end, what in _NOT_LOGS:
        if data.startswith(magic) and data.endswith(end):
            return f"not log text: {what}"
    if data[257:262] == b"ustar":
        return "not log text: a tar archive: unpack it (`tar xf FILE`) and diagnose its folder"
    head = data[:_OWN_HEAD_BYTES]
    if (codec := _wide_codec(data[:4 * _OWN_HEAD_BYTES])) is not None:  # PowerShell's `>` writes UTF-16 (a break-it
        head = data[:4 * _OWN_HEAD_BYTES].decode(codec, "replace").encode()[:_OWN_HEAD_BYTES]  # pass)
    if _own_output(head):
        return ("not log text: firstfault's own output (diagnose's, the API's, `sql`'s or a page of it): diagnose the "
                "logs it was made from")
    return None


#: the first bytes of a file in which diagnose's own output is looked for: its start, after a few of stderr's lines (a
#: job's log with a table pasted 7 KB in was skipped whole with its ECC error: a break-it pass)
_OWN_HEAD_BYTES = 4096
#: ``firstfault diagnose``'s own table: its title over a box (U+250F, its corner): ``Incidents``, or its counts as
#: ``api.render.incidents_title`` says them (``20 incidents (11 open, 9 resolved)``; ``demo``'s and ``run --once``'s
#: too, after ``caught up: ``)
#: Saved with colour (``FORCE_COLOR=1 … > file``) the title is set in SGR codes and padded with spaces to the table's
#: width: it was read as a log and made a phantom host's incident (a break-it pass)
_SGR = rb"(?:\x1b\[[0-9;]*m)*"
_OWN_TABLE = re.compile(rb"(?m)^" + _SGR + rb"(?:Incidents|(?:caught up: )?\d+ incidents?(?: \([a-z0-9, ]+\))?)"
                        + _SGR + rb" *" + _SGR + rb"\r?\n" + _SGR + "\u250f".encode())


#: a JSON key of firstfault's events (``event_id``, ``ts_basis``) or incidents (``initiator``, ``next_action``) with
#: the start of its value, as diagnose (``"key": "``) and the API and ``sql -f json`` (``"key":"``) write them
def _own_key(name: bytes, opens: bytes) -> re.Pattern[bytes]:
    return re.compile(b'"' + name + b'": ?' + opens)


_OWN_EVENT_KEYS = (_own_key(b"event_id", b'"'), _own_key(b"ts_basis", b'"'))
_OWN_INCIDENT_KEYS = (_own_key(b"initiator", rb"\{"), _own_key(b"next_action", b'"'))
#: ``sql -f csv``'s header over the events' columns (``SELECT * FROM events``)
_OWN_CSV = re.compile(rb'(?m)^(?:[^\n]*,)?"?event_id"?,(?:[^\n]*,)?"?ts_basis"?(?:,|\r?$)')
#: firstfault's HTML pages (an incident's, the degraded-link report): their frame's generator mark, or an incident
#: page's title (``error · nvswitch_fault · node07 · firstfault``) as pages before the mark wrote it
_OWN_PAGE = re.compile(rb'<meta name="generator" content="firstfault"|<title>[^<\n]* \xc2\xb7 firstfault</title>')


def _own_output(head: bytes) -> bool:
    """Whether a file's first bytes are firstfault's own output saved beside the logs it read: ``diagnose``'s JSON
    (events with ``event_id`` and ``ts_basis``) or its table, after stderr's lines when both went to the file (read
    again, its quoted lines were a second host's faults, and the same GPU's fault "recurred": a real-logs pass); its
    incidents alone too (``jq '{incidents}'``); the API's JSON (``curl …/incidents/inc-… > incident.json``: a phantom
    host ``incident`` with an SXid; a fresh user's trial), ``sql -f json``'s and ``-f csv``'s events and firstfault's
    HTML pages (an incident page saved beside the logs: a phantom host ``inc`` with 10 events and an incident).
    Another tool's ``{"events": [`` (``aws logs get-log-events``) is a log (a break-it pass). ``head``: the first
    4 KB (:data:`_OWN_HEAD_BYTES`), UTF-16 or UTF-32 decoded."""
    return all(k.search(head) for k in _OWN_EVENT_KEYS) or all(k.search(head) for k in _OWN_INCIDENT_KEYS) \
        or any(p.search(head) is not None for p in (_OWN_CSV, _OWN_PAGE, _OWN_TABLE))


def binary_file(data: bytes) -> str | None:
    """Why a file's (decompressed) bytes are no log text, or None when they may be: a format known by its magic
    number (:func:`known_format`), or (unless it is UTF-16 or UTF-32 text with a byte order mark) more than 5 %
    control bytes that text does not hold (:data:`_CONTROL`) among the non-NUL bytes of its first 64 KB. Log lines
    hold almost none (a serial console's noise, a terminal capture's spinner: 0 – 3 %); an executable, a database or
    compressed data of a format not read here, ~8 % or more (random bytes: 8.6 %)."""
    if (why := known_format(data)) is not None:
        return why
    if _wide_codec(data) is not None:  # UTF-16 or UTF-32 text: its code units hold such bytes
        return None
    head = data[:_SNIFF_BYTES]
    text = len(head) - head.count(0)
    control = len(head) - len(head.translate(None, _CONTROL))
    if text and control > _BINARY_SHARE * text and not _mostly_clean_lines(head):
        return (f"not log text: {control} of its first {len(head)} bytes are control characters that text does not "
                f"hold (binary data)")
    return None


#: a run of NUL bytes right after text: the zeroed blocks a crash leaves where a file's write was cut (ext4's delayed
#: allocation), after the line it cut. Eight or more: UTF-16 and UTF-32 text without a byte order mark, which a Kafka
#: value may be, holds runs of one to three (it became a line per character, a break-it pass)
_NUL_HOLE = re.compile(rb"([^\n\x00])\x00{8,}")


def end_nul_holes(data: bytes) -> bytes:
    """``data`` with each run of eight or more NUL bytes that follows text ended by a line feed: the line a crash cut
    and the zeroed blocks after it were one line with the next, whose Xid was lost (a break-it pass: "… GPU has fal",
    8 kB of NULs, then an Xid 48 line read as the cut Xid 79). NUL runs at a line's start stay (``prefix`` drops them,
    lines keep their numbers); a cut line adds one. Applied to a file's text and a Kafka value before their records
    are parsed (a hole after a record glued it to the next, both lost), and to every segment
    (``ingest.pipeline.Pipeline.run``): an envelope's message too (Vector's file source ships the hole inside it)."""
    return _NUL_HOLE.sub(rb"\1\n", data) if b"\x00" * 8 in data else data


#: the fewest characters of a line of text among binary data (:func:`text_lines`): random bytes do not make one
_TEXT_LINE_MIN = 16


def text_lines(data: bytes) -> tuple[bytes, int, int] | None:
    """The lines of text among binary data, or None when there is none: (``data`` with every other line emptied, so
    the lines keep their numbers; how many lines were kept; how many bytes were dropped). A line of text is UTF-8
    of at least :data:`_TEXT_LINE_MIN` characters with no control byte text does not hold (:data:`_CONTROL`) and no
    NUL. A kern.log whose first 70 KB a crash overwrote with junk was skipped whole, its Xid 79 lost (a break-it
    pass)."""
    out: list[bytes] = []
    kept = dropped = 0
    for ln in data.split(b"\n"):
        ok = len(ln) >= _TEXT_LINE_MIN and _clean(ln)
        if ok:
            try:
                ok = len(ln.decode("utf-8")) >= _TEXT_LINE_MIN
            except UnicodeDecodeError:
                ok = False
        if ok:
            out.append(ln)
            kept += 1
        else:
            out.append(b"")
            dropped += len(ln)
    return (b"\n".join(out), kept, dropped) if kept else None


def _clean(line: bytes) -> bool:
    """``line`` holds no control byte text does not hold (:data:`_CONTROL`) and no NUL."""
    return 0 not in line and len(line.translate(None, _CONTROL)) == len(line)


#: clean lines (no control byte text does not hold) from which a head with a burst of binary bytes is still a log
_CLEAN_LINES_MIN = 20


def _mostly_clean_lines(head: bytes) -> bool:
    """At least :data:`_CLEAN_LINES_MIN` lines of ``head`` and half of its lines hold no control byte text does not
    hold (:data:`_CONTROL`), or its clean lines (two or more) hold four fifths of its bytes: a log with a burst of
    binary noise (a serial console's capture), not binary data, whose newlines fall every ~256 bytes in lines of
    noise. The file of an Xid 79, 200 lines and 20 KB of random bytes was skipped whole, its first fault lost (a
    break-it pass); so was a short serial capture of two Xid lines after one line of boot noise (a second one)."""
    lines = head.split(b"\n")
    clean = [ln for ln in lines if ln and _clean(ln)]
    if len(clean) >= _CLEAN_LINES_MIN and 2 * len(clean) >= len(lines):
        return True
    return len(clean) >= 2 and 5 * sum(map(len, clean)) >= 4 * (len(head) - head.count(0))


#: a file named after its host's IPv4 address, with a port or not, as a Kafka key may name it: ``10.0.0.8.log``,
#: ``10.0.0.5:9092.log`` (host ``10`` once: a stop's finding)
_IPV4_NAME = re.compile(r"^(\d{1,3}(?:\.\d{1,3}){3})(?::\d{1,5})?(?:[._-]|$)")
#: a file named after its host's IPv6 address: in brackets with a port or not (``[fe80::1]:8080.log``, RFC 3986's
#: form), or bare (``fe80::1.log``, ``::ffff:10.0.0.1-dmesg.log``); a scope (``%eth0``) too. The bare address is
#: the longest run of these characters that :mod:`ipaddress` reads (``::ffff:10`` was the host of the last one)
_IPV6_NAME = re.compile(r"^\[([0-9A-Fa-f:.]+(?:%\w+)?)\](?::\d{1,5})?(?:[._-]|$)|^([0-9A-Fa-f:.]*:[0-9A-Fa-f:.]*)")


def _address_name(name: str) -> str | None:
    """The IP address a file's name starts with (:data:`_IPV4_NAME`, :data:`_IPV6_NAME`), its port and brackets
    dropped, as a Kafka key's are (``schemas.hostname``); None when it starts with none (``999.1.1.1.log`` neither)."""
    if m := _IPV4_NAME.match(name):  # as written (``010.0.0.5`` too), each number a byte
        return m.group(1) if all(int(n) <= 255 for n in m.group(1).split(".")) else None
    if (m := _IPV6_NAME.match(name)) is None:
        return None
    if m.group(1):
        try:
            ipaddress.IPv6Address(m.group(1))
            return m.group(1)
        except ValueError:
            return None
    run = m.group(2)
    for end in range(len(run), 1, -1):  # the longest that is an address and ends where the name's next part begins
        if end < len(name) and name[end] not in "._-":
            continue
        try:
            ipaddress.IPv6Address(run[:end])
            return run[:end]
        except ValueError:
            continue
    return None


#: words that name a kind of log, not a host, in a file or folder name: ``node07-dmesg.log``, ``dmesg_node07.txt``,
#: ``node07/dmesg.log`` (a per-host folder, as sosreport-style collections lay them out)
LOG_WORDS = frozenset({"dmesg", "kern", "kernel", "syslog", "messages", "journal", "journalctl", "nccl", "train",
                       "training", "torchrun", "stdout", "stderr", "console", "serial", "log", "logs", "out", "err",
                       # the program or tool that wrote it: ``gb200node-torch.log`` was host ``gb200node-torch``, its
                       # CUDA error an incident apart from the host's own fault (a real-logs pass); ``nvidia-smi``,
                       # ``nvidia-bug-report``, ``dcgmi``, Fabric Manager's log
                       "torch", "pytorch", "nvidia", "smi", "bug", "report", "dcgm", "dcgmi", "fabricmanager",
                       "q", "diag",  # nvidia-smi -q's output: node07-nvidia-smi-q.txt; dcgmi diag's
                       "vllm", "sglang",  # the inference servers' own logs: node01-vllm.log
                       # the command and its flag: node12-dmesg-T.log, node14-journalctl-k.txt, node10-nvlink-s.txt,
                       # node13-kmsg.log (hosts node12-dmesg-t … split one machine's fault from its ranks: a fresh
                       # user's trial)
                       "kmsg", "nvlink", "topo", "t", "k", "s",  # a flag only after its command: _FLAG_WORDS
                       # the container runtime's and the node agent's: popos-docker.log (saharmor/dalle-playground#104's
                       # compose output beside its dmesg: two hosts "popos" and "popos-docker", a real-logs pass)
                       "docker", "containerd", "kubelet",
                       # a raw capture, and the command with its flag run together: node07-raw.log, node07-dmesgT.log
                       # (hosts node07-raw, node07-dmesgt: a break-it pass)
                       "raw", "dmesgt",
                       # health checks and benchmarks run on the node: node01-nhc.log, node01-nvbandwidth.txt (hosts
                       # node01-nhc … apart from node01: a real-logs pass)
                       "nhc", "health", "nvbandwidth"})
#: the log words that also begin host names (``log-server-03``, ``train-017``, ``console-7``, ``nvidia-dgx-01``): one
#: alone is not cut from the front (a run of two or more log words is: ``nvidia-bug-report-node07``)
_HOST_WORDS = frozenset({"log", "logs", "out", "err", "train", "training", "serial", "console", "nvidia", "bug",
                         "report", "dcgm", "vllm", "sglang"})  # a pod's name: vllm-0, sglang-worker-1
#: the log words that are a command's flag (``dmesg -T``, ``journalctl -k``, ``nvlink -s``, ``nvidia-smi -q``): a kind
#: of log only right after their command (``node12-dmesg-T.log``); alone or after a host's name they are a name:
#: ``q.x.log`` took its folder's name as a file named ``dmesg.log`` does, ``t.log`` too, and ``gpu-t.log`` was host
#: ``gpu`` (a helper's pass)
_FLAG_WORDS = frozenset({"q", "t", "k", "s"})
_NAME_PARTS = re.compile(r"[-_]")
#: a name that is a date or a number, not a host: ``2026-11-29``, ``20261129`` (logrotate's layouts)
_DATE_NAME = re.compile(r"^[\d._-]+$")
#: a folder that is a date, a number, or a rank's or an attempt's, not a host (torchrun's ``rank0/``, ``attempt_1/``);
#: a file named ``rank1.log`` stays host ``rank1`` (a folder above it would put every rank's file on one host)
_NO_HOST_FOLDER = re.compile(r"^(?:[\d._-]+|rank\d+|attempt[_-]?\d+)$", re.I)


def host_from_filename(path: Path) -> str:
    """``node07.dmesg.log`` -> ``node07`` (DESIGN.md: the file name up to its first ``.``; an IPv4 address whole:
    ``10.0.0.8.log`` -> ``10.0.0.8``), as text
    (``path_text``), a host name: blanks and other characters no host name holds (``ingest.pipeline``'s host check)
    as ``_`` (``node01 (1).log``, a browser's second copy, is host ``node01_(1)``), at most 255 characters.

    A kind of log joined to the host by ``-`` or ``_`` (:data:`LOG_WORDS`: ``node07-dmesg.log``, ``dmesg_node07.txt``;
    logrotate's date after it, ``messages-20261129``) is no part of it when what stays has a letter (``train-017``
    stays: a log word that begins a name is kept), and a file named only by its kind (``dmesg.log``, ``kern.log``) or
    by a date takes the host of the nearest folder above it whose name has a digit and is no date, rank or attempt
    (:data:`_NO_HOST_FOLDER`; ``logs/node07/2026-11-29/dmesg.log``, ``node07/rank0/stdout.log``): host
    ``node07-dmesg`` beside the ``node07`` its NCCL lines named split one fault into two incidents, and two hosts'
    ``dmesg.log`` were one host ``dmesg`` (a break-it pass).

    A name with bytes that are not UTF-8 (``n\\xfe07.log``) names no host, as such a Kafka key names none: it takes
    its folder's as a name of a kind of log does, else it stays with U+FFFD for those bytes, a name the pipeline
    refuses (``bad_host``) for each line that names no host of its own, saying so. It was host ``n\\xfe07`` where
    the same bytes as a key were dead-lettered (a stop's finding)."""
    name = _name_text(path.name)
    ip = _address_name(name)  # 10.0.0.8.log is host 10.0.0.8, not 10 (a break-it pass)
    m = None if ip else _HOST_FROM_NAME.match(name)
    host = ip or (m.group(1) if m else name)
    if not ip:
        host = _without_log_words(host)
        if _log_word([host], 0) or _DATE_NAME.match(host) or "\ufffd" in host:
            host = next((h for parent in path.parents[:6]
                         if (h := _without_log_words(_name_text(parent.name))) and not _log_word([h], 0)
                         and not _NO_HOST_FOLDER.match(h) and any(c.isdigit() for c in h) and "\ufffd" not in h),
                        host)
    return "".join(c if c.isprintable() and c not in " /" else "_" for c in host)[:255] or "_"


def _name_text(name: str) -> str:
    """A file or folder name as the text of a host name: bytes that are not UTF-8 (which Python keeps as
    surrogates) as U+FFFD, as a Kafka key's are read (``_key_names``), which no host name holds
    (``schemas.hostname.is_host_name``)."""
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def _log_word(parts: list[str], i: int) -> bool:
    """Whether ``parts[i]`` of a name split at ``-`` and ``_`` is a kind of log (:data:`LOG_WORDS`): a flag
    (:data:`_FLAG_WORDS`) only right after another log word, its command's."""
    word = parts[i].lower()
    return word in LOG_WORDS and (word not in _FLAG_WORDS or (i > 0 and parts[i - 1].lower() in LOG_WORDS))


def _without_log_words(name: str) -> str:
    """``name`` without the :data:`LOG_WORDS` (and, after them, dates: digits only, six or more) joined to its ends by
    ``-`` or ``_``, when what stays has a letter; else ``name`` as it is."""
    parts = _NAME_PARTS.split(name)
    seps = _NAME_PARTS.findall(name)
    lo, hi = 0, len(parts)
    while hi - lo > 1 and (_log_word(parts, hi - 1) or (parts[hi - 1].isdigit() and len(parts[hi - 1]) >= 6)):
        hi -= 1
    run = lo  # the log words at its front: two or more are no host's (nvidia-bug-report-node07), one is unless it may
    # begin a host name (_HOST_WORDS: nvidia-dgx-01, train-017)
    while hi - run > 1 and _log_word(parts, run):
        run += 1
    if run - lo >= 2 or (run - lo == 1 and parts[lo].lower() not in _HOST_WORDS):
        lo = run
    kept = "".join(p + sep for p, sep in zip(parts[lo:hi], seps[lo:hi - 1] + [""]))
    # what stays names a host when it has a letter (``gpu-node-dmesg.log`` was host ``gpu-node-dmesg`` beside the
    # ``gpu-node`` its NCCL lines named: one machine split in two, a real-logs pass); a digit is not asked
    if kept != name and not any(c.isalpha() for c in kept):
        return parts[lo] if hi - lo == 1 and parts[lo].lower() in LOG_WORDS else name
    return kept


def _cr_value(data: bytes) -> bytes:
    """A Kafka value whose lines end in CR alone (``XidA\rXidB\r``, also with a final LF), read as a file's are
    (:func:`_cr_lines`): the redraw rule showed its last line only, the Xid before it lost unsaid (two break-it passes
    on the service path). A value with no line terminator at its end (one line a progress bar redrew) stays a line;
    a value of several LF-ended lines costs one search for its first LF."""
    if data[-1:] not in (b"\r", b"\n"):
        return data
    i = data.find(b"\n")
    if i >= 0 and data[i:].strip(b"\r\n"):
        return data
    return _cr_lines(data) if 13 in data else data


def _cr_lines(data: bytes) -> bytes:
    """``data`` with lines ended by a carriage return alone (a serial console's capture, old Mac files) ended by
    newlines, when it has no newline but at its very end (editors add one); else as it is: a lone CR among
    newlines (a progress bar redrawn) stays inside its line, and UTF-16/32 text (whose code units may hold the
    byte 0x0D) is left to its decoder."""
    body = data.rstrip(b"\r\n")
    if b"\r" not in body or b"\n" in body or data.startswith(tuple(m for m, *_ in _WIDE_BOMS)):
        return data
    return body.replace(b"\r", b"\n") + b"\n"


#: the largest local file (and its decompressed size) ``decode_file`` reads by default, bytes
MAX_FILE_BYTES = 1 << 30


class FileText(NamedTuple):
    """A file's log text (:func:`file_text`)."""

    #: UTF-8 lines ended by ``\\n`` (the last may have none); empty for a file that holds (or decompresses to) nothing
    data: bytes
    #: what a salvage left out: (the reason said, up to 4 KiB of the raw bytes it concerns, error code
    #: ``bad_compression`` or ``not_text``), a :class:`Reject`'s fields but its origin; None when all was read
    lost: tuple[str, bytes, str] | None = None


def file_text(raw: bytes, *, salvage: bool, limit: int = MAX_FILE_BYTES) -> FileText:
    """The log text of a file's bytes ``raw``, as ``decode_file`` (``diagnose``) and ``firstfault send`` read it.

    Normalised: gzip, zstd, zlib, bzip2 or xz decompressed (:func:`decompress`, at most ``limit`` bytes); lines ended
    by a carriage return alone (a serial console's) ended by ``\\n`` (:func:`_cr_lines`); UTF-16 or UTF-32 text, with a
    byte order mark (dropped, a second one too) or without (:func:`bomless_text`), as UTF-8; stretches of UTF-16 text
    among other text as UTF-8 (:func:`utf16_stretches`).

    Raises :class:`CompressionError` (corrupt, truncated, an unread format, over ``limit`` decompressed) and
    ``ValueError`` saying why the bytes are no log text (:func:`binary_file`: binary data, an executable, a journal
    file). With ``salvage`` only when nothing of them is left: a truncated or overlong stream gives the whole lines
    it decompressed to and binary data its lines of text (:func:`text_lines`; not a format known by its magic number),
    ``lost`` saying what was left out."""
    lost = None
    try:
        data = _cr_lines(decompress(raw, limit=limit))
    except CompressionError as e:
        if not salvage:
            raise
        partial = _cr_lines(e.partial)
        data = partial[:partial.rfind(b"\n") + 1]  # whole lines only: the last one may be cut
        if not data:
            raise
        said = e.lost(data.count(b"\n"), len(data))
        lost = (f"cannot decompress: {e}; {said}", raw[-4096:], "bad_compression")
    if not data:
        return FileText(data)
    if (text := bomless_text(data)) is not None:
        data = text  # as its byte order mark would have said
    if (why := binary_file(data)) is not None:
        kept = None if not salvage or known_format(data) is not None else text_lines(data)
        if kept is None:
            raise ValueError(why)
        data, lines, dropped = kept
        lost = (f"{why}; its {lines} line{'s' * (lines != 1)} of text read, {dropped} bytes of binary data skipped",
                raw[:4096], "not_text")
    if (codec := _wide_codec(data)) is not None:  # a byte order mark's: dropped with it
        return FileText(data.decode(codec, "replace").encode().removeprefix("\ufeff".encode()), lost)
    return FileText(utf16_stretches(data), lost)


def decode_file(path: Path, *, relname: str, max_bytes: int = MAX_FILE_BYTES) -> Decoded:
    """Decode a local file: raw lines, NDJSON envelopes or a JSON array of them; gzip, zstd or zlib or not.

    The host is the file name up to its first ``.``; the reference time is
    the file's modification time (µs since the epoch, basis ``file``); lines
    count from 1. ``max_bytes`` bounds the file and its decompressed size.

    Returns the segments and the rejects (origin ``file:<relname>``): ``too_large``,
    ``bad_compression`` (corrupt, truncated, an unread format, or over ``max_bytes`` decompressed),
    ``not_text`` (an executable, a journal file, binary data: :func:`binary_file`), ``bad_envelope`` (per
    record); an empty file (or one that decompresses to nothing) gives neither. A
    truncated gzip or zstd file (copied while it was written or rotated, as ``zcat`` reads it) gives the whole
    lines it decompressed to before it ended, and a ``bad_compression`` reject that says the rest is lost. A file
    without a newline whose lines end in a carriage return alone (a serial console's capture) is read line by
    line; a lone CR among newlines (a progress bar redrawn) stays inside its line.
    Raises ``OSError`` only when the file cannot be read.
    """
    origin = f"file:{relname}"
    st = path.stat()
    mtime = int(st.st_mtime * US)
    lost = None
    if st.st_size > max_bytes:  # its first max_bytes, as for a stream that decompresses past them (it was skipped
        # whole: a break-it pass)
        with path.open("rb") as f:
            raw = f.read(max_bytes)
        if not _MAGIC.match(raw):
            raw = raw[:raw.rfind(b"\n") + 1]  # whole lines only
            lines = raw.count(b"\n")
            lost = Reject(origin, f"file of {st.st_size} bytes exceeds {max_bytes}: read its first {lines} line"
                                  f"{'s' * (lines != 1)} ({len(raw)} bytes), the rest is not read; split it "
                                  f"(split -C {max_bytes} FILE part.) to diagnose the rest", b"", "too_large")
            if not raw:
                return Decoded(rejects=[Reject(origin, f"file of {st.st_size} bytes exceeds {max_bytes} and holds "
                                                       "no line end in them", b"", "too_large")])
    else:
        raw = path.read_bytes()
    try:
        text = file_text(raw, salvage=True, limit=max_bytes)
    except CompressionError as e:
        return Decoded(rejects=[Reject(origin, f"cannot decompress: {e}", raw[:4096], "bad_compression")])
    except ValueError as e:
        return Decoded(rejects=[Reject(origin, str(e), raw[:4096], "not_text")])
    if not text.data:  # an empty file holds no line (``wc -l``), where an empty Kafka value is one empty line
        return Decoded()
    data = text.data
    if text.lost is not None:
        lost = Reject(origin, *text.lost)
    out = _decode_text(data, origin=origin, stream=origin, host=host_from_filename(path), ref_ts=mtime,
                       ref_basis="file", ingest_ts=mtime, source=None, line_base=1)
    if lost is not None:
        out.rejects.append(lost)
        for seg in out.segments:
            seg.cut = True
    return out
