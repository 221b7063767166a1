"""The events table: one row per recognised line or sample.

This is the contract every stage shares (DESIGN.md, "Events"). Columns up to
``message`` are the minimum DESIGN.md fixes; the rest carry fields that the
correlator and analysts need and that DESIGN.md leaves open.

Times are UTC microseconds (``timestamp[us, tz=UTC]``). PCI bus ids are
normalised to ``dddd:bb:dd.f`` lower case (see ``schemas.pci``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Final, Literal

import pyarrow as pa
import pyarrow.compute as pc

from schemas.hostname import MAX_HOST_CHARS, not_host_names

# Where ``ts`` came from. ``line``: the line's own stamp; ``envelope``: the
# shipper's record time (Vector ``timestamp``, journald ``__REALTIME_TIMESTAMP``);
# ``kafka``: the Kafka record's append/create time; ``monotonic+boot``: a raw
# dmesg ``[  123.456]`` stamp plus the host's boot time; ``file``: a local
# file's modification time (the ``diagnose`` analogue of ``kafka``);
# ``inherited``: a line with no stamp of its own took the stamp of the closest
# earlier stamped line of the same stream (a traceback line, a pasted table).
TS_BASES: Final = ("line", "envelope", "kafka", "monotonic+boot", "file", "inherited")

SOURCES: Final = ("dmesg", "nccl", "nvml")
SEVERITIES: Final = ("critical", "error", "warning", "info")
SEVERITY_RANK: Final = {"info": 0, "warning": 1, "error": 2, "critical": 3}
DEVICE_TYPES: Final = ("gpu", "nvswitch", "pcie_port", "nic", "link")

# Event kinds (DESIGN.md). Each catalog entry names one.
KINDS: Final = (
    "xid",
    "sxid",
    "gpu_off_bus",
    "gpu_init_failed",
    "nvlink_down",
    "nvlink_errors",
    "pcie_aer",
    "ecc",
    "gsp_error",
    "fabric_manager",
    "ib_port",
    "nccl_transport",
    "nccl_p2p_fallback",
    "nccl_init",
    "nccl_error",
    "nccl_timeout",
    "cuda_error",
    "driver",
    "other",
)
#: an event's kind as a type (the API's ``kind`` filter: another value is a 422 naming these)
EventKind = Literal[KINDS]  # type: ignore[valid-type]

#: what an event of each kind says, for explanations ("gpu_off_bus (the GPU fell off the bus) on …", as an Xid's
#: catalog name follows its number); "" where the kind's name says it all
KIND_PHRASES: Final = {
    "xid": "", "sxid": "", "gpu_off_bus": "the GPU fell off the bus", "gpu_init_failed": "the GPU failed to initialise",
    "nvlink_down": "an NVLink went down", "nvlink_errors": "NVLink error counters rose",
    "pcie_aer": "a PCIe Advanced Error Reporting error", "ecc": "ECC errors", "gsp_error": "the GPU's GSP failed",
    "fabric_manager": "a Fabric Manager error", "ib_port": "an InfiniBand/RoCE port or HCA event",
    "nccl_transport": "an NCCL transport line", "nccl_p2p_fallback": "NCCL fell back from GPU peer-to-peer",
    "nccl_init": "an NCCL communicator's init line", "nccl_error": "an NCCL error",
    "nccl_timeout": "a collective timed out", "cuda_error": "a CUDA error", "driver": "a driver error", "other": "",
}

EVENTS_SCHEMA: Final = pa.schema(
    [
        pa.field("event_id", pa.string(), nullable=False),
        pa.field("ts", pa.timestamp("us", tz="UTC"), nullable=False),
        pa.field("ts_basis", pa.string(), nullable=False),
        pa.field("host", pa.string(), nullable=False),
        pa.field("source", pa.string(), nullable=False),
        pa.field("kind", pa.string(), nullable=False),
        pa.field("signature", pa.string(), nullable=False),
        pa.field("severity", pa.string(), nullable=False),
        pa.field("device_type", pa.string()),
        pa.field("device", pa.string()),
        pa.field("link", pa.int16()),
        pa.field("xid", pa.int32()),
        pa.field("sxid", pa.int32()),
        pa.field("peer", pa.string()),
        pa.field("rank", pa.int32()),
        pa.field("nranks", pa.int32()),
        pa.field("comm", pa.string()),
        pa.field("message", pa.string(), nullable=False),
        # --- beyond the DESIGN.md minimum ---
        # GPU index as the tool printed it: nvidia-smi/NVML index, NCCL cudaDev.
        pa.field("gpu_index", pa.int16()),
        pa.field("pid", pa.int32()),
        pa.field("process", pa.string()),
        # The line's own fatal/non-fatal word (SXid, NVLink5 Xids), when it has one.
        pa.field("fatal", pa.bool_()),
        # "caused by previous Xid N": the driver's own causal link.
        pa.field("cause_xid", pa.int32()),
        # PyTorch ProcessGroupNCCL: collective SeqNum / work id, op, timeout, elapsed.
        pa.field("seq", pa.int64()),
        pa.field("op", pa.string()),
        pa.field("timeout_ms", pa.int64()),
        pa.field("elapsed_ms", pa.int64()),
        # Resolution of ``ts`` in µs: 1 for µs stamps, 1_000_000 for second stamps.
        pa.field("ts_precision_us", pa.int64(), nullable=False),
        # Storm deduplication: how many identical lines this row stands for.
        pa.field("count", pa.int64(), nullable=False),
        pa.field("last_ts", pa.timestamp("us", tz="UTC")),
        # When the line reached us: Kafka append time, or the file's mtime.
        pa.field("ingest_ts", pa.timestamp("us", tz="UTC")),
        # Source coordinates the event_id was made from (human readable).
        pa.field("origin", pa.string(), nullable=False),
        # Other extracted fields, a JSON object (registers, transport, unit, ...).
        pa.field("details", pa.string()),
    ]
)

EVENT_COLUMNS: Final = tuple(EVENTS_SCHEMA.names)

#: Columns DESIGN.md fixes; the JSON output of ``diagnose`` always has them.
DESIGN_COLUMNS: Final = EVENT_COLUMNS[: EVENT_COLUMNS.index("message") + 1]


def make_event_id(origin: str, sub: int = 0) -> str:
    """Stable event id from source coordinates.

    ``origin`` is e.g. ``kafka:fleet.dmesg/0/1234#2`` (topic, partition,
    offset, line index) or ``file:node07.dmesg.log:17``. ``sub`` tells apart
    several events made from one line (rare). Replays give the same id.
    Returns 24 hex characters (96 bits of BLAKE2b).
    """
    h = hashlib.blake2b(origin.encode("utf-8", "surrogatepass"), digest_size=12)
    if sub:
        h.update(b"#%d" % sub)
    return h.hexdigest()


#: the coarsest stamp (µs) by which a line's own time tells it apart from another line of its host with the same words
#: (:func:`line_event_id`): two such lines are one line delivered twice
LINE_ID_PRECISION_US = 1000


def line_event_id(host: str, ts_us: int, signature: str, text: str, sub: int = 0) -> str:
    """Event id of a line whose own stamp is precise to ``LINE_ID_PRECISION_US`` or better (``ts_basis`` ``line``):
    from its host, time (µs), signature and words, not from where it came. At-least-once shippers deliver a line
    again (a producer's retry, a replay after a restart: another Kafka offset), and one kernel line may come twice
    (kern.log and the journal): the second copy was a second event, whose incident superseded the first under
    another id and paged again ("reported 2 lines": a break-it pass). A host does not print one line twice in one
    microsecond, but two of its processes may: ``text`` holds the rank a launcher's prefix named (``[rank2]:``).
    Returns 24 hex characters (96 bits of BLAKE2b), as :func:`make_event_id`."""
    h = hashlib.blake2b(b"line\x00", digest_size=12)
    h.update(f"{host}\x00{ts_us}\x00{signature}\x00{sub}\x00".encode("utf-8", "surrogatepass"))
    h.update(text.encode("utf-8", "surrogatepass"))
    return h.hexdigest()


#: the columns every event must fill: the correlator has no stand-in for them (``ts_precision_us``, ``count``,
#: ``message`` and ``origin`` have one, though the schema declares them non-nullable too)
REQUIRED: Final = ("event_id", "ts", "ts_basis", "host", "source", "kind", "signature", "severity")


def _plain(table: pa.Table, name: str) -> pa.ChunkedArray:
    """Column ``name`` with run-end and dictionary encodings undone (a null or a value may hide in them)."""
    col = table.column(name)
    if pa.types.is_run_end_encoded(col.type):
        col = pc.run_end_decode(col)
    if pa.types.is_dictionary(col.type):
        col = col.cast(col.type.value_type)
    return col


def check_required(table: pa.Table, required: Iterable[str] = REQUIRED, what: str = "events") -> None:
    """Raise ``ValueError`` naming each column of ``required`` (the events table's ``REQUIRED``) that holds nulls in
    ``table``, with how many; a missing one is left to the reader. Arrow's casts and IPC reads do not check
    nullability, so a table written by another producer may carry them. A dictionary- or run-end-encoded column is
    counted decoded (a null may hide in its dictionary or values). ``what`` names the table in the message."""
    bad = []
    for name in required:
        if name not in table.column_names:
            continue
        col = _plain(table, name)
        if col.null_count:
            bad.append(f"{name} ({col.null_count} of {table.num_rows} rows)")
    if bad:
        raise ValueError(f"{what} table with nulls in required columns: " + ", ".join(bad))


#: event times the correlator accepts (µs since the epoch): years 1900 – 2199 (``ts``, ``last_ts``, ``ingest_ts``)
TS_RANGE_US: Final = (-2_208_988_800_000_000, 7_258_118_400_000_000)
#: how long a timed-out collective may have run (``elapsed_ms``, ``timeout_ms``): up to ten years, in ms
DURATION_MAX_MS: Final = 10 * 366 * 86_400_000


#: the columns :func:`check_ranges` bounds, with their [low, high) limits
_LIMITS: Final = {"ts": TS_RANGE_US, "last_ts": TS_RANGE_US, "ingest_ts": TS_RANGE_US,
                  "elapsed_ms": (0, DURATION_MAX_MS + 1), "timeout_ms": (0, DURATION_MAX_MS + 1)}


def out_of_range(table: pa.Table) -> dict[str, pa.ChunkedArray]:
    """Per column of ``table`` that :func:`check_ranges` bounds and that holds a value out of range, the boolean
    mask of those rows (nulls are in range)."""
    out = {}
    for name, (lo, hi) in _LIMITS.items():
        if name not in table.column_names:
            continue
        col = _plain(table, name)
        if pa.types.is_timestamp(col.type):
            col = col.cast(pa.int64())
        if not pa.types.is_integer(col.type) or col.null_count == len(col):
            continue
        mask = pc.fill_null(pc.or_(pc.less(col, lo), pc.greater_equal(col, hi)), False)
        if pc.any(mask).as_py():
            out[name] = mask
    return out


def check_ranges(table: pa.Table) -> None:
    """Raise ``ValueError`` naming each column whose values the correlator cannot place in time: a time
    outside :data:`TS_RANGE_US` (a stray unit, or another producer's sentinel) or a negative duration or one
    longer than :data:`DURATION_MAX_MS`, with how many rows. Such a record is refused whole, as a bad record
    (``bad_events_record``), instead of failing every later step of the streaming correlator."""
    bad = [f"{name} ({pc.sum(mask).as_py()} of {table.num_rows} rows)" for name, mask in out_of_range(table).items()]
    if bad:
        raise ValueError("events table with values out of range: " + ", ".join(bad) + " (times: years 1900 - "
                         "2199; durations: 0 to ten years)")
    check_values(table)


#: the columns whose values are one of a set (:func:`check_values`)
_ALLOWED: Final = {"source": SOURCES, "kind": KINDS, "severity": SEVERITIES, "device_type": DEVICE_TYPES}


def check_values(table: pa.Table, what: str = "events") -> None:
    """Raise ``ValueError`` naming each column that holds what the ingest never writes: a ``source``, ``kind``,
    ``severity`` or ``device_type`` outside its set (:data:`KINDS`, …), a ``host`` that is no host name
    (``schemas.hostname.not_host_names``) or a ``count`` below 1, with how many rows and the first such value. A
    producer other than ours wrote ``device_type='toaster'`` or a host with a NUL to ``fleet.events``, and the
    correlator took them: a real Xid 79 became "no single culprit" beside a "toaster" (a break-it pass). ``what``
    names the table in the message."""
    bad = []
    for name, allowed in _ALLOWED.items():
        if name not in table.column_names:
            continue
        col = _plain(table, name)
        mask = pc.invert(pc.or_(pc.is_in(col, value_set=pa.array(allowed, col.type)), pc.is_null(col)))
        if pc.any(mask).as_py():
            first = pc.filter(col, mask)[0].as_py()
            bad.append(f"{name} ({pc.sum(mask).as_py()} of {table.num_rows} rows; {str(first)[:40]!r} is none of "
                       f"{', '.join(allowed)})")
    if "host" in table.column_names:
        mask = pc.fill_null(not_host_names(_plain(table, "host")), False)
        if pc.any(mask).as_py():
            bad.append(f"host ({pc.sum(mask).as_py()} of {table.num_rows} rows: empty, longer than {MAX_HOST_CHARS} "
                       "characters, or holding blanks, control characters or '/')")
    if "count" in table.column_names:
        mask = pc.fill_null(pc.less(_plain(table, "count"), 1), False)
        if pc.any(mask).as_py():
            bad.append(f"count ({pc.sum(mask).as_py()} of {table.num_rows} rows below 1)")
    if bad:
        raise ValueError(f"{what} table with values the ingest never writes: " + "; ".join(bad))


def empty_events() -> pa.Table:
    """An empty events table with :data:`EVENTS_SCHEMA`."""
    return EVENTS_SCHEMA.empty_table()
