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

The batch's facts that are no events go the same way, so a correlate worker
knows what the single process's correlator knows: its link samples
(``nvidia-smi nvlink -s/-e``, DCGM: link states) and topology facts
(``nvidia-smi topo -m``/``nvlink -R`` paths, GPU index -> PCI bus id), each
host's rows under the key of the host's own events (:meth:`Domains.key`), one
Arrow IPC stream of ``schemas.samples.LINK_SAMPLES_SCHEMA`` or
``TOPOLOGY_SCHEMA`` per value, with a record header :data:`TABLE_HEADER`
naming the table (``link_samples`` or ``topology``). A record without that
header is an events record (what producers before it sent).
"""

from __future__ import annotations

import io
from collections import defaultdict
from collections.abc import Iterable

import pyarrow as pa
import pyarrow.compute as pc

from schemas.events import EVENTS_SCHEMA, check_ranges, check_required, check_values, out_of_range
from schemas.fleet import HostConfig
from schemas.samples import LINK_SAMPLES_SCHEMA, TOPOLOGY_SCHEMA

CONTENT_TYPE = b"application/vnd.apache.arrow.stream"
#: the record header that names a ``fleet.events`` value's table when it holds no events; absent: events
TABLE_HEADER = "firstfault-table"
#: the tables other than events that go over ``fleet.events``, by their :data:`TABLE_HEADER` value
FACT_TABLES: dict[str, pa.Schema] = {"link_samples": LINK_SAMPLES_SCHEMA, "topology": TOPOLOGY_SCHEMA}


class UnknownTable(ValueError):
    """A ``fleet.events`` record whose :data:`TABLE_HEADER` names no table this version reads."""


#: hosts whose latest communicator ``Domains`` keeps (``Domains._bound``): a fleet of 10,000 hosts and many days' pods
MAX_COMM_HOSTS = 100_000


class Domains:
    """Host -> correlation domain, from the fleet config and the NCCL init lines seen so far."""

    def __init__(self, hosts: dict[str, HostConfig] | None = None) -> None:
        self.hosts = hosts or {}
        #: host -> (ts µs, commId) of its latest init line; at most ``MAX_COMM_HOSTS`` hosts, those of the newest
        #: lines (``_bound``): pods come and go with new host names (issue 6)
        self.comm_of_host: dict[str, tuple[int, str]] = {}

    def seed(self, rows: list[tuple[str, int, str]]) -> None:
        """(host, ts µs, commId) rows, e.g. read back from the lake after a restart or a rebalance, so a
        worker that takes over a partition keys its events as the one before it did."""
        for h, t, c in rows:
            if h not in self.comm_of_host or self.comm_of_host[h][0] <= t:
                self.comm_of_host[h] = (t, c)
        self._bound()

    def _bound(self) -> None:
        """Keep the ``MAX_COMM_HOSTS`` hosts of the newest init lines once ``comm_of_host`` holds a quarter more
        (a sort every ~25,000 new hosts, not every batch). A host left out keys its events by itself
        (``host:<host>``) until its next init line, as one never heard of does."""
        if len(self.comm_of_host) > MAX_COMM_HOSTS + MAX_COMM_HOSTS // 4:
            newest = sorted(self.comm_of_host.items(), key=lambda kv: kv[1][0])[-MAX_COMM_HOSTS:]
            self.comm_of_host = dict(newest)

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
        self._bound()

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
    return _rows_by_key(events, [domains.key(h, c) for h, c in zip(events.column("host").to_pylist(),
                                                                    events.column("comm").to_pylist())])


def _rows_by_key(table: pa.Table, keys: list[str]) -> dict[str, pa.Table]:
    """``table``'s rows grouped by ``keys`` (one per row), in row order, the groups in key order."""
    idx: dict[str, list[int]] = defaultdict(list)
    for i, k in enumerate(keys):
        idx[k].append(i)
    return {k: table.take(pa.array(v)) for k, v in sorted(idx.items())}


def split_facts_by_domain(table: pa.Table, domains: Domains) -> dict[str, pa.Table]:
    """A batch's link samples or topology facts (any table with a ``host`` column) grouped by the correlation
    domain key of each row's host (:meth:`Domains.key` without a communicator: the key of the host's device
    events). Call it after :func:`split_by_domain` of the same batch, so the host's communicators are learned."""
    if table.num_rows == 0:
        return {}
    hosts = table.column("host").to_pylist()
    key_of = {h: domains.key(h) for h in set(hosts)}  # once per host
    return _rows_by_key(table, [key_of[h] for h in hosts])


def encode(table: pa.Table, schema: pa.Schema = EVENTS_SCHEMA) -> bytes:
    """A table (events, or ``schema``'s rows) as one Arrow IPC stream of ``schema``."""
    buf = io.BytesIO()
    with pa.ipc.new_stream(buf, schema) as w:
        w.write_table(table.cast(schema) if table.schema != schema else table)
    return buf.getvalue()


#: an events record's value at most (bytes): the worker's producer sends up to 16 MiB, and one domain's events of one
#: batch passed it (60,000 Xid lines of one host: 31.8 MB), so the worker retried the batch for ever (a break-it pass)
EVENTS_RECORD_BYTES = 4 * 1024 * 1024


def encode_records(table: pa.Table, max_bytes: int = EVENTS_RECORD_BYTES,
                   schema: pa.Schema = EVENTS_SCHEMA) -> list[bytes]:
    """An events table (or ``schema``'s rows) as Arrow IPC streams (:func:`encode`) of at most ``max_bytes`` each, in
    row order: cut into as many equal runs of rows as its encoding needs, each cut again if it still does not fit
    (rows differ in size); a single row larger than ``max_bytes`` is a record of its own."""
    value = encode(table, schema)
    if len(value) <= max_bytes or table.num_rows <= 1:
        return [value]
    parts = min(table.num_rows, -(-len(value) // max_bytes) + 1)  # one more: the parts' own stream headers
    step = -(-table.num_rows // parts)
    return [v for i in range(0, table.num_rows, step)
            for v in encode_records(table.slice(i, step), max_bytes, schema)]


def fact_headers(name: str) -> list[tuple[str, bytes]]:
    """The record headers of a value of the fact table ``name`` (a key of :data:`FACT_TABLES`)."""
    if name not in FACT_TABLES:
        raise UnknownTable(f"no table {name!r} goes over fleet.events (only {', '.join(FACT_TABLES)} besides events)")
    return [("content-type", CONTENT_TYPE), (TABLE_HEADER, name.encode())]


def table_of(headers: Iterable[tuple[str, bytes | None]] | None) -> str | None:
    """The fact table a record's headers name (its last :data:`TABLE_HEADER`), None for an events record (no such
    header). Raises :class:`UnknownTable` for a name this version does not read, quoting it (at most 64
    characters)."""
    name = None
    for k, v in headers or ():
        if k == TABLE_HEADER:
            name = (v or b"").decode("utf-8", "replace")
    if name is None or name == "events":
        return None
    if name not in FACT_TABLES:
        raise UnknownTable(f"a record of table {name[:64]!r} (header {TABLE_HEADER}), which this version does not read "
                           f"(it reads events and {', '.join(FACT_TABLES)})")
    return name


def decode_record(value: bytes | None, headers: Iterable[tuple[str, bytes | None]] | None = None
                  ) -> tuple[str, pa.Table]:
    """One ``fleet.events`` record (its value and headers) -> (table name, table): ``("events", t)`` for a record
    without :data:`TABLE_HEADER` (:func:`decode`), else ``("link_samples", t)`` or ``("topology", t)``
    (:func:`decode_facts`). Raises :class:`UnknownTable` (a ``ValueError``) for another table name, and what
    those two raise for a value that is not a good one."""
    name = table_of(headers)
    if name is None:
        return "events", decode(value)
    return name, decode_facts(value, name)


def decode_facts(value: bytes | None, name: str) -> pa.Table:
    """A ``fleet.events`` value of fact table ``name`` (``link_samples`` or ``topology``) back to a table of its
    schema (``schemas.samples``). Raises ``pyarrow.ArrowInvalid`` if corrupt, and ``ValueError`` if empty, if its
    columns do not cast to the schema, a required column holds nulls, a time is out of range (years 1900 - 2199) or
    a host is no host name: as :func:`decode`, naming the column."""
    schema = FACT_TABLES[name]
    if not value:
        raise ValueError(f"an empty {name} record (a null value: a tombstone, or a producer that sent nothing)")
    t = pa.ipc.open_stream(value).read_all()
    if t.schema != schema:
        loose = pa.schema([f.with_nullable(True) for f in schema])  # a cast refuses nulls unnamed: counted below
        try:
            t = t.select([f.name for f in schema]).cast(loose)
        except (pa.ArrowException, KeyError, ValueError) as e:
            raise ValueError(f"{name} record that does not fit the {name} schema: {e}") from e
    check_required(t, [f.name for f in schema if not f.nullable], name)
    t = t.cast(schema) if t.schema != schema else t
    bad = [f"{c} ({pc.sum(m).as_py()} of {t.num_rows} rows)" for c, m in out_of_range(t).items()]
    if bad:
        raise ValueError(f"{name} table with times out of range: {', '.join(bad)} (years 1900 - 2199)")
    check_values(t, name)  # of its columns, the host
    return t


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
