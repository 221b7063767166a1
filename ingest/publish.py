"""Hand recognised events to the correlators: the ``fleet.events`` topic, keyed by correlation domain.

Ingest workers split the raw topics by host; correlation crosses hosts. So each
worker publishes its recognised events to a second topic whose key is the
event's **correlation domain**, and the correlate workers consume that topic
as their own consumer group: Kafka's partitioner sends every event of one
domain to one partition, hence to one correlator, whatever ingest worker
recognised it (DESIGN.md, Scale).

Domain of an event (first that applies):

1. ``domain:<d>`` — the host's NVLink domain from the fleet config (GB200 NVL72
   rack / clique): multi-node NVLink faults cross hosts inside it;
2. ``comm:<id>`` — the NCCL communicator the host's GPUs were last seen in
   (learned from the ``Init COMPLETE`` lines this worker reads for its hosts):
   a job's ranks and their hosts' device faults meet;
3. ``host:<h>`` — everything else.

A value is one Arrow IPC stream (``schemas.events.EVENTS_SCHEMA``) holding the
events of one domain from one batch. A job spanning two NVLink domains is
correlated within each domain (documented limit).
"""

from __future__ import annotations

import io
from collections import defaultdict

import pyarrow as pa
import pyarrow.compute as pc

from schemas.events import EVENTS_SCHEMA, check_ranges, check_required
from schemas.fleet import HostConfig

CONTENT_TYPE = b"application/vnd.apache.arrow.stream"


class Domains:
    """Host -> correlation domain, from the fleet config and the NCCL init lines seen so far."""

    def __init__(self, hosts: dict[str, HostConfig] | None = None) -> None:
        self.hosts = hosts or {}
        self.comm_of_host: dict[str, tuple[int, str]] = {}  # host -> (ts µs, commId) of its latest init line

    def seed(self, rows: list[tuple[str, int, str]]) -> None:
        """(host, ts µs, commId) rows, e.g. read back from the lake after a restart or a rebalance, so a
        worker that takes over a partition keys its events as the one before it did."""
        for h, t, c in rows:
            if h not in self.comm_of_host or self.comm_of_host[h][0] <= t:
                self.comm_of_host[h] = (t, c)

    def learn(self, events: pa.Table) -> None:
        """Remember each host's latest communicator (``nccl_init`` events with a commId)."""
        if events.num_rows == 0:
            return
        mask = pc.and_(pc.is_in(events.column("kind"), value_set=pa.array(["nccl_init", "nccl_p2p_fallback"])),
                       pc.is_valid(events.column("comm")))
        sub = events.filter(mask)
        if sub.num_rows == 0:
            return
        ts = sub.column("ts").cast(pa.int64()).to_pylist()
        for h, t, c in zip(sub.column("host").to_pylist(), ts, sub.column("comm").to_pylist()):
            if h not in self.comm_of_host or self.comm_of_host[h][0] <= t:
                self.comm_of_host[h] = (t, c)

    def key(self, host: str, comm: str | None = None) -> str:
        cfg = self.hosts.get(host)
        if cfg is not None and cfg.domain:
            return f"domain:{cfg.domain}"
        if comm:
            return f"comm:{comm}"
        if host in self.comm_of_host:
            return f"comm:{self.comm_of_host[host][1]}"
        return f"host:{host}"


def split_by_domain(events: pa.Table, domains: Domains) -> dict[str, pa.Table]:
    """The batch's events grouped by correlation domain key."""
    domains.learn(events)
    if events.num_rows == 0:
        return {}
    keys = [domains.key(h, c) for h, c in zip(events.column("host").to_pylist(), events.column("comm").to_pylist())]
    idx: dict[str, list[int]] = defaultdict(list)
    for i, k in enumerate(keys):
        idx[k].append(i)
    return {k: events.take(pa.array(v)) for k, v in sorted(idx.items())}


def encode(table: pa.Table) -> bytes:
    """An events table as one Arrow IPC stream."""
    buf = io.BytesIO()
    with pa.ipc.new_stream(buf, EVENTS_SCHEMA) as w:
        w.write_table(table.cast(EVENTS_SCHEMA) if table.schema != EVENTS_SCHEMA else table)
    return buf.getvalue()


#: an events record's value at most (bytes): the worker's producer sends up to 16 MiB, and one domain's events of one
#: batch passed it (60,000 Xid lines of one host: 31.8 MB), so the worker retried the batch for ever (a break-it pass)
EVENTS_RECORD_BYTES = 4 * 1024 * 1024


def encode_records(table: pa.Table, max_bytes: int = EVENTS_RECORD_BYTES) -> list[bytes]:
    """An events table as Arrow IPC streams (:func:`encode`) of at most ``max_bytes`` each, in row order: cut into as
    many equal runs of rows as its encoding needs, each cut again if it still does not fit (events differ in size);
    a single event larger than ``max_bytes`` is a record of its own."""
    value = encode(table)
    if len(value) <= max_bytes or table.num_rows <= 1:
        return [value]
    parts = min(table.num_rows, -(-len(value) // max_bytes) + 1)  # one more: the parts' own stream headers
    step = -(-table.num_rows // parts)
    return [v for i in range(0, table.num_rows, step) for v in encode_records(table.slice(i, step), max_bytes)]


def decode(value: bytes) -> pa.Table:
    """One ``fleet.events`` value back to an events table. Raises ``pyarrow.ArrowInvalid`` if corrupt, and
    ``ValueError`` naming the columns if its columns do not cast to ``EVENTS_SCHEMA``, a required one holds
    nulls (``schemas.events.check_required``), times are out of range or values none the ingest writes
    (``check_ranges``), or the value is empty (a tombstone: a null value crash-looped the correlate worker, a
    break-it pass)."""
    if not value:
        raise ValueError("an empty events record (a null value: a tombstone, or a producer that sent nothing)")
    t = pa.ipc.open_stream(value).read_all()
    if t.schema != EVENTS_SCHEMA:
        try:
            t = t.cast(EVENTS_SCHEMA)
        except pa.ArrowException as e:
            odd = [f"{f.name} ({t.schema.field(f.name).type}; the schema has {f.type})" for f in EVENTS_SCHEMA
                   if f.name in t.column_names and t.schema.field(f.name).type != f.type]
            raise ValueError(f"events record that does not fit the events schema: {', '.join(odd) or e}") from e
    check_required(t)
    check_ranges(t)
    return t
