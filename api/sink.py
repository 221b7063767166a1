"""Where incident versions go: the lake (durably), then the pager; and what a restart needs back.

Shared by the all-in-one service and the ``firstfault correlate`` workers.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from functools import partial
from typing import Any

import pyarrow as pa
from prometheus_client import Counter, Gauge

from api.pager import Pager
from correlate.incident import current_until, member_ids
from correlate.window import DELAY_LINES, OFFSET_MAX_US, SKEW_CAP_US, AppendDelays
from ingest.lake import Lake, LakeError
from schemas.events import EVENTS_SCHEMA
from schemas.incidents import incident_rows, iso_us
from schemas.settings import Settings

log = logging.getLogger("firstfault.sink")
S = 1_000_000

INCIDENTS = Counter("firstfault_incident_versions_total", "incident versions emitted", ["category", "severity"])
OPEN = Gauge("firstfault_incidents_open", "incidents currently open")


#: the newest membership line of each rank (``topology.rank_membership``) before $1 and no older than $2 µs
#: before its host's newest event (a host whose clock runs days ahead does not move the others' window): NCCL
#: init and P2P-fallback lines with a rank and a communicator, or nccl-tests' rank lines (their communicator is
#: host:pid)
_MEMBERSHIP_SQL = """
    WITH newest AS (SELECT host, max(ts) AS t FROM events GROUP BY host)
    SELECT events.* FROM events JOIN newest USING (host)
    WHERE events.ts < ? AND events.ts >= newest.t - to_microseconds(?)
      AND kind IN ('nccl_init', 'nccl_p2p_fallback') AND rank IS NOT NULL
      AND (comm IS NOT NULL OR (signature = 'nccltests.rank' AND pid IS NOT NULL))
    QUALIFY row_number() OVER (PARTITION BY coalesce(comm, host || ':' || pid::VARCHAR), rank
                               ORDER BY events.ts DESC, event_id) = 1
    ORDER BY events.ts, event_id"""


#: a fact table's (``{table}``: ``link_samples`` or ``topology``) newest row of each ``{key}`` of the hosts $1 since
#: their times $2 (µs), at most $4 per host (the newest), oldest first; $3 the date of the earliest (only the date
#: partitions from it on are read: the lake is partitioned by ``ts``)
_FACTS_SQL = """
    WITH wanted AS (SELECT unnest(?::VARCHAR[]) AS host, unnest(?::BIGINT[]) AS since),
    newest AS (
        SELECT t.* FROM (SELECT {cols} FROM read_parquet(getvariable('lake') || '/{table}/**/*.parquet',
                                                         hive_partitioning = true, union_by_name = true)
                         WHERE date >= ?) t
        JOIN wanted USING (host) WHERE epoch_us(t.ts) >= wanted.since
        QUALIFY row_number() OVER (PARTITION BY {key} ORDER BY t.ts DESC, t.origin DESC) = 1)
    SELECT * FROM newest
    QUALIFY row_number() OVER (PARTITION BY host ORDER BY ts DESC, origin DESC) <= ?
    ORDER BY ts, origin"""


#: per host, the summary of its append delays the streaming correlator keeps (``correlate.window.AppendDelays``,
#: ``observe``'s rules, the lake's events each once as the ``events`` view keeps them): of its line-stamped lines that
#: came through Kafka and arrived within {offset_max} µs of their stamp, per UTC day of append time of its two newest
#: and apart for those stamped more than {cap} µs ahead (``ahead``), the {lines} of smallest (delay, event id)
_DELAYS_SQL = """
    WITH lines AS (
        SELECT host, epoch_us(ingest_ts) // 86400000000 AS day, epoch_us(ingest_ts) - epoch_us(ts) AS d, event_id
        FROM {source} WHERE ts_basis = 'line' AND ingest_ts IS NOT NULL AND starts_with(origin, 'kafka:'){hosts}),
    kept AS (SELECT *, d < -{cap} AS ahead, max(day) OVER (PARTITION BY host) AS newest
             FROM lines WHERE abs(d) <= {offset_max})
    SELECT host, day, ahead, d, event_id FROM kept WHERE day >= newest - 1
    QUALIFY row_number() OVER (PARTITION BY host, day, ahead ORDER BY d, event_id) <= {lines}
    ORDER BY host, day, ahead, d, event_id"""


#: the end of a span of the lake read from a time on (``events_between``): none of its events is later
_NO_END = datetime(9999, 12, 31, tzinfo=timezone.utc)


class IncidentSink:
    """``emit`` stores incident versions (one atomic lake part per call, named after the versions, so a
    replay rewrites the same file) and then enqueues pages; ``incidents`` holds the latest of each.

    The streaming correlator emits a version once; if the lake cannot take it (read-only, full), the
    version is kept here and written first by the next ``emit`` call, so no incident is lost while the
    process lives (after a crash the correlator rebuilds it from its replayed input)."""

    def __init__(self, settings: Settings, lake: Lake | None = None) -> None:
        self.settings = settings
        self.lake = lake or Lake(settings.lake)
        self.lake.init()
        self.pager = Pager(settings, public_url=settings.public_url)
        self.pager.latest = self.latest_versions  # its open pages follow what other workers store (Pager._follow)
        self.incidents: dict[str, dict[str, Any]] = {}
        #: versions emitted but not yet stored (the lake refused them); written first next time
        self.unstored: list[dict[str, Any]] = []

    def emit(self, incidents: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Store ``incidents`` (and any versions a failed call left) in the lake, then page them; return the
        versions stored (those a failed call left first). The outbox notes them first (``Pager.storing``): a death
        between the lake write and the outbox leaves them to be paged at the restart (``Pager.adopt``).

        Raises :class:`ingest.lake.LakeError` when the lake cannot be written; the versions are kept
        and stored by the next call (an empty list is enough to retry)."""
        incidents = self.unstored + list(incidents)
        if not incidents:
            return []
        inc_t, ev_t = incident_rows(incidents, int(time.time() * S))
        bid = hashlib.blake2b("|".join(f"{i['id']}:{i['version']}" for i in incidents).encode(),
                              digest_size=10).hexdigest()
        self.pager.storing(incidents)  # a death between the lake write and enqueue leaves a note (Pager.adopt)
        try:
            self.lake.write("incidents", inc_t, bid)
            self.lake.write("incident_evidence", ev_t, bid)
        except LakeError:
            self.unstored = incidents
            raise
        self.unstored = []
        self.pager.enqueue(incidents)  # pages only for versions durably stored
        for i in incidents:
            self.incidents[i["id"]] = i
            INCIDENTS.labels(category=i["category"], severity=i["severity"]).inc()
        OPEN.set(sum(1 for i in self.incidents.values() if i["status"] == "open"))
        return incidents

    def stored(self) -> list[dict[str, Any]]:
        """The latest stored version of every incident (for a correlator that starts over)."""
        from api.store import Store, StoreError

        store = Store(self.lake)
        try:
            rows = store.query("SELECT doc FROM incidents")
        except StoreError as e:
            log.warning("could not read stored incidents: %s", e)
            return []
        docs, bad = [], None
        for r in rows:  # a foreign part's row is skipped, said once: the service starts (it did not: a break-it pass)
            try:
                docs.append(store.incident_doc(r["doc"]))
            except StoreError as e:
                bad = (bad[0] + 1, bad[1]) if bad else (1, e)
        if bad:
            log.warning("skipped %d stored incident row(s): %s", *bad)
        for d in docs:  # the latest version of each
            had = self.incidents.get(d["id"])
            if had is None or int(d.get("version", 1)) > int(had.get("version", 1)):
                self.incidents[d["id"]] = d
        # the pages another worker opened for them (an incident moves with its partition): their next versions update
        # those pages, not open second ones (a break-it pass)
        self.pager.adopt(docs, self.first_versions)
        # the gauge from what is stored, not 0 until the first new version (a break-it pass: 29 open, 0 said)
        OPEN.set(sum(1 for i in self.incidents.values() if i["status"] == "open"))
        return docs

    def first_versions(self, ids: list[str], severities: list[str]) -> dict[str, dict[str, Any]]:
        """The first stored version (lowest ``version``) of each incident of ``ids`` whose severity is one of
        ``severities``: incident id -> the incident (DESIGN.md's shape); an id with none is left out. The version a
        pager paged first, whose labels its page keeps (``Pager.adopt``). Raises :class:`api.store.StoreError`."""
        if not ids or not severities:
            return {}
        return self._docs_by_id("SELECT arg_min(doc, version) AS doc FROM incident_versions "
                                "WHERE id IN (SELECT unnest(?)) AND severity IN (SELECT unnest(?)) "
                                "AND status <> 'superseded' GROUP BY id", [ids, severities])

    def latest_versions(self, ids: list[str]) -> dict[str, dict[str, Any]]:
        """The latest stored version of each incident of ``ids``: incident id -> the incident (DESIGN.md's shape);
        an id the lake does not hold is left out. What the pager's open pages follow (``Pager._follow``): another
        correlate worker may have stored a later version. Raises :class:`api.store.StoreError`."""
        if not ids:
            return {}
        # the incidents view holds one row per id, its latest version (schemas/views.sql)
        return self._docs_by_id("SELECT doc FROM incidents WHERE id IN (SELECT unnest(?))", [ids])

    def _docs_by_id(self, sql: str, params: list[Any]) -> dict[str, dict[str, Any]]:
        """The incidents (DESIGN.md's shape) of a query over the lake's views that gives one ``doc`` per id: incident
        id -> incident. Raises :class:`api.store.StoreError`."""
        from api.store import Store

        store = Store(self.lake)
        return {d["id"]: d for d in (store.incident_doc(r["doc"]) for r in store.query(sql, params))}

    #: how far back a restart looks for the membership lines of jobs still running (µs): a week
    MEMBERSHIP_US = 7 * 86_400 * 1_000_000

    def recent_events(self, horizon_us: int, incidents: list[dict[str, Any]] = (),
                      reach_back_us: int = 0, now: datetime | None = None) -> pa.Table | None:
        """Stored events within ``horizon_us`` of the latest one (to refill open windows after a restart), and
        before them the newest membership line of each rank (``nccl_init`` / ``nccl_p2p_fallback`` with a rank
        and a communicator, or nccl-tests' rank lines: ``topology.rank_membership``) of the last
        ``MEMBERSHIP_US``: a job started hours before the restart printed them
        once, and the streaming correlator names a hung job's silent rank from them. Those of communicators
        that have ended are dropped by its first step (``topology.comm_spans``). Then the events older than the
        horizon, within ``reach_back_us`` of the latest, of the ``incidents`` (stored versions) that are not
        superseded (all of one whose ``scheduled`` time lies within it: ``correlate.incident.current_until``): the
        streaming correlator keeps those of incidents that hold a fault for watchdog timeouts that come hours later
        (``StreamCorrelator.cold``), and a notice's until what it announces happens. Arrow table in ``EVENTS_SCHEMA``, each event once,
        or None when the lake has no events.

        "The latest" is the newest stored event's time, but not after ``now`` (aware; default the wall clock):
        one host whose clock runs ahead (a line stamped next month) put every other host's recent events outside
        the window."""
        def read(con, last) -> pa.Table:
            last = min(last, now or datetime.now(timezone.utc))
            since = last - timedelta(microseconds=horizon_us)
            t = con.sql(f"""
                SELECT * FROM ({_MEMBERSHIP_SQL})
                UNION ALL BY NAME
                SELECT * FROM events WHERE ts >= ?""",
                        params=[since, self.MEMBERSHIP_US, since]).to_arrow_table()
            live = [inc for inc in incidents if inc.get("status") != "superseded"]
            ids = sorted({m for inc in live for m in member_ids(inc)})
            if ids and reach_back_us > 0:
                back = last - timedelta(microseconds=reach_back_us)
                # through events_between, as incident_events: only the date partitions of the reach back are read
                olds = [con.sql("SELECT * FROM events_between(?, ?) WHERE ts < ? AND event_id IN (SELECT unnest(?))",
                                params=[back, since, since, ids]).to_arrow_table()]
                # an incident current until what it announces happens (``current_until``: a maintenance notice's
                # NotBefore, days after its line) is read from its start, an hour before as ``incident_events``
                # does: by the reach back alone a restart a day after the notice forgot it (a defect pass)
                back_us = int(back.timestamp() * S)
                ahead = [inc for inc in live if inc.get("scheduled") and iso_us(inc["start"]) - 3600 * S < back_us
                         and current_until(inc) >= back_us]
                if ahead:
                    lo = datetime.fromtimestamp(min(iso_us(inc["start"]) for inc in ahead) / S - 3600, timezone.utc)
                    olds.append(con.sql(
                        "SELECT * FROM events_between(?, ?) WHERE ts < ? AND event_id IN (SELECT unnest(?))",
                        params=[lo, back, back, sorted({m for inc in ahead for m in member_ids(inc)})]
                    ).to_arrow_table())
                have = set(t.column("event_id").to_pylist())
                old = pa.concat_tables(olds)
                old = old.filter(pa.array([i not in have for i in old.column("event_id").to_pylist()], pa.bool_()))
                t = pa.concat_tables([old.select(t.column_names).cast(t.schema), t]) if old.num_rows else t
            return t

        return self._read_events(read)

    def append_delays(self, anchors: dict[str, int] | None = None) -> AppendDelays | None:
        """The summary of the append delays of every event the lake holds (``correlate.window.AppendDelays``), as the
        streaming correlator keeps it of every event it is given (``StreamCorrelator.delays``) and the batch
        correlator reads it of the lake's events: the clocks a restarted service reads (``StreamCorrelator.restore``).
        The recent events a restart reads back gave it the lines of the last hour alone: a host whose fastest lines
        came earlier that day read a looser bound than the batch over the same lake (its clock moved at a restart).
        Per host and day the kept lines are picked in DuckDB (``_DELAYS_SQL``: a few columns of each event, at most
        ``DELAY_LINES`` rows per host and day out); None when the lake has no events or cannot be read (logged:
        the caller reads the events it restores instead).

        ``anchors`` (host -> a time in µs since the epoch: its events' watermark, or now, as ``host_facts``): of
        those hosts' events alone, stamped no earlier than ``DELAYS_BACK_US`` before the earliest anchor (only
        those date partitions are read: a whole-lake scan per read took 2 s per million events), None for none:
        what a correlate worker reads for the hosts its partitions bring when it first sees them
        (``correlate.consumer.CorrelateWorker``), merged into the summary of its replay (``AppendDelays.merge``).
        It is the whole lake's summary of those hosts when each host's newest such line was appended no earlier
        than the UTC day before its anchor's (the summary keeps a host's two newest days); a host whose lines
        stopped before that reads the clock of its replay alone. A lake that cannot be read then raises
        ``api.store.StoreError`` (the worker says so and asks again later)."""
        if anchors is not None and not anchors:
            return None

        def read(con, last) -> pa.Table:
            sql = partial(_DELAYS_SQL.format, cap=SKEW_CAP_US, offset_max=OFFSET_MAX_US, lines=DELAY_LINES)
            if anchors is None:
                return con.sql(sql(source="events", hosts="")).to_arrow_table()
            since = datetime.fromtimestamp(max(min(anchors.values()) - self.DELAYS_BACK_US, 0) / S, timezone.utc)
            return con.sql(sql(source="events_between(?, ?)", hosts=" AND host IN (SELECT unnest(?))"),
                           params=[since, _NO_END, sorted(anchors)]).to_arrow_table()

        t = self._read_events(read, strict=anchors is not None, schema=None, last=anchors is None)
        if t is None:
            return None
        cols = [t.column(c).to_pylist() for c in ("host", "day", "ahead", "d", "event_id")]
        return AppendDelays.of_rows(zip(*cols))

    def incident_events(self, incidents: list[dict[str, Any]]) -> pa.Table | None:
        """The stored events of ``incidents`` (``correlate.incident.member_ids``), from an hour before the
        earliest one's start on (a host's skew): what a correlate worker reads back for the hosts its partitions
        carry (``correlate.stream.StreamCorrelator.to_read_back``). Read through ``events_between``
        (``schemas/views.sql``), which reads only the date partitions of the span and keeps each event once, as
        the ``events`` view does over the whole lake. Arrow table in ``EVENTS_SCHEMA``, or None when there is none
        (or no lake).

        Raises ``api.store.StoreError`` when the lake cannot be read (a corrupt part, a storage error): the
        incidents were read from that lake, so their events are there, and the worker asks again later
        (``correlate.consumer.CorrelateWorker``) instead of going on without them."""
        ids = sorted({m for inc in incidents for m in member_ids(inc)})
        if not ids:
            return None
        since = datetime.fromtimestamp(min(iso_us(inc["start"]) for inc in incidents) / S - 3600, timezone.utc)
        return self._read_events(lambda con, last: con.sql(
            "SELECT * FROM events_between(?, ?) WHERE event_id IN (SELECT unnest(?))",
            params=[since, last, ids]).to_arrow_table(), strict=True)

    def membership_events(self) -> pa.Table | None:
        """The newest membership line of each rank of the last ``MEMBERSHIP_US`` of its host's events (as in
        ``recent_events``): what a correlate worker reads back when it starts over, so that its commit is not
        held back for them (``correlate.consumer.CorrelateWorker``). Arrow table in ``EVENTS_SCHEMA``, or None
        when there is none (or no lake)."""
        return self._read_events(lambda con, last: con.sql(_MEMBERSHIP_SQL, params=[
            last + timedelta(microseconds=1), self.MEMBERSHIP_US]).to_arrow_table())

    #: how far back of a host's time a correlate worker reads back the append delays of its lines (µs): the
    #: summary keeps a host's two newest UTC days of append time, the day before the anchor's may be the newest,
    #: and a line is stamped up to ``OFFSET_MAX_US`` before its append time
    DELAYS_BACK_US = 3 * 86_400 * S + OFFSET_MAX_US
    #: how far back of a host's time a correlate worker reads back its link samples (µs): a day, many polls of a
    #: link's state (a poller samples every few minutes; ``nvidia-smi nvlink -s`` runs at boot or by hand)
    LINK_SAMPLES_BACK_US = 86_400 * S
    #: how far back it reads back its topology facts (µs): a week, as membership lines (``MEMBERSHIP_US``): the
    #: wiring (``nvidia-smi topo -m``, ``nvlink -R``, a GPU index's bus id) is printed once, at boot
    TOPOLOGY_BACK_US = 7 * 86_400 * S
    #: rows read back per host and table at most, the newest (a host of 8 GPUs × 18 NVLinks, each with a state and
    #: four counters, has ~860 sample keys; a GB200 host of 4 GPUs half that)
    FACT_ROWS_PER_HOST = 4096

    def host_facts(self, anchors: dict[str, int]) -> tuple[pa.Table | None, pa.Table | None]:
        """The newest link sample of each (GPU, link, counter) and the newest topology fact of each (fact, GPU, link,
        peer) of the hosts of ``anchors`` (host -> a time in µs since the epoch: its events' watermark, or now), no
        older than ``LINK_SAMPLES_BACK_US`` / ``TOPOLOGY_BACK_US`` before its anchor, at most
        ``FACT_ROWS_PER_HOST`` per host and table (the newest): what a correlate worker reads back for the hosts it
        begins to see (``correlate.consumer.CorrelateWorker``), so that it knows them as ``firstfault run`` does
        though its replay starts after them. The keys are the correlator's (``correlate.stream.SAMPLE_KEY``,
        ``FACT_KEY``); one query per table, reading the rows of the date partitions from the earliest bound on only (as
        ``events_between``). Returns (link samples in
        ``LINK_SAMPLES_SCHEMA``, topology in ``TOPOLOGY_SCHEMA``), each oldest first, None for none.

        Raises ``api.store.StoreError`` when the lake cannot be read (a corrupt part, a storage error): the worker
        says so and asks again later."""
        import duckdb

        from api.store import StoreError, again_if_vanished, connect
        from correlate.stream import FACT_KEY, SAMPLE_KEY
        from schemas.samples import LINK_SAMPLES_SCHEMA, TOPOLOGY_SCHEMA

        if not anchors:
            return None, None
        self._lake_still_there()
        hosts = sorted(anchors)

        def read() -> list[pa.Table | None]:
            out: list[pa.Table | None] = []
            try:
                con = connect(self.lake)
                try:
                    for table, schema, keys, back in (("link_samples", LINK_SAMPLES_SCHEMA, SAMPLE_KEY,
                                                       self.LINK_SAMPLES_BACK_US),
                                                      ("topology", TOPOLOGY_SCHEMA, FACT_KEY, self.TOPOLOGY_BACK_US)):
                        since = [anchors[h] - back for h in hosts]
                        lo = datetime.fromtimestamp(max(min(since), 0) / S, timezone.utc).date()
                        t = con.sql(_FACTS_SQL.format(
                            table=table, cols=", ".join(f'"{c}"' for c in schema.names),
                            key=", ".join(f'"{c}"' for c in keys)),
                            params=[hosts, since, lo, self.FACT_ROWS_PER_HOST]).to_arrow_table()
                        out.append(t.select(schema.names).cast(schema) if t.num_rows else None)
                finally:
                    con.close()
            except duckdb.Error as e:
                raise StoreError(f"cannot read the lake's link samples and topology: {e}") from e
            return out

        out = again_if_vanished(read)  # a part the hourly compaction removed meanwhile: read again
        return out[0], out[1]

    def _lake_still_there(self) -> None:
        """Raise ``api.store.StoreError`` when the local lake this sink set up is gone (no ``events/`` folder: a lost
        mount, a deleted folder): a read-back is then asked again, not read as "nothing" against the empty lake that
        ``api.store.connect`` would lay out there (a break-it pass: every host's facts marked read, silently)."""
        from api.store import StoreError

        if not self.lake.remote and not (self.lake.root / "events").is_dir():
            raise StoreError(f"the lake at {self.lake.location} is gone (no events/ folder: a lost mount?)")

    def _read_events(self, read: Callable[[Any, Any], pa.Table], strict: bool = False,
                     schema: pa.Schema | None = EVENTS_SCHEMA, last: bool = True) -> pa.Table | None:
        """``read(con, last)`` on a connection to the lake's views (``api.store.connect``), ``last`` the newest
        event time (not ``last``: None, not asked: the ``events`` view reads the whole lake for it): its rows in
        ``schema`` (None: as read), or None when it has none, the lake has no events or there is no lake. A lake
        that cannot be read is logged and read as None, or with ``strict`` raises ``api.store.StoreError``."""
        import duckdb

        from api.store import StoreError, again_if_vanished, connect

        asked = last

        if strict:
            self._lake_still_there()

        def read_back() -> pa.Table | None:
            con = connect(self.lake)
            try:
                # fetchall, not fetchone: duckdb >= 2 refuses the next query while a result is unfinished
                if not asked:
                    return read(con, None)
                newest = con.execute("SELECT max(ts) FROM events").fetchall()[0][0]
                return read(con, newest) if newest is not None else None
            except duckdb.Error as e:
                raise StoreError(f"cannot read the lake's events: {e}") from e
            finally:
                con.close()

        try:
            t = again_if_vanished(read_back)  # a part the hourly compaction removed meanwhile: read again
        except (StoreError, duckdb.Error) as e:  # no lake yet is usual at a first start; a broken one is worth a line
            if strict and isinstance(e, StoreError):
                raise
            if strict:
                raise StoreError(f"cannot read the lake's events: {e}") from e
            log.warning("could not read events back from the lake: %s", e,
                        extra={"stage": "restore", "error_code": "lake_unreadable"})
            return None
        if t is None:
            return None
        if not t.num_rows:
            return None
        return t if schema is None else t.select(schema.names).cast(schema)

    def current(self) -> list[dict[str, Any]]:
        """The latest version of every incident not superseded (a later incident holds its events), by start: a
        superseded one was a row of the caught-up table beside the incident that superseded it (a break-it pass)."""
        return sorted((i for i in self.incidents.values() if i.get("status") != "superseded"),
                      key=lambda i: (i["start"], i["id"]))
