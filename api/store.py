"""Read-only DuckDB over the Parquet lake, with the views of ``schemas/views.sql``.

Each query opens its own in-memory DuckDB connection (cheap) so readers never
block the ingest workers that write the lake, and see every part written so
far. External access is limited to the lake folder and the configuration is
locked after the views are created (DuckDB ``allowed_directories``,
``enable_external_access``, ``lock_configuration``). Times are UTC.
"""

from __future__ import annotations

import base64
import logging
import os
import re
import threading
import time
from collections.abc import Callable, Iterator
from functools import lru_cache
from pathlib import Path
from typing import Any, TypeVar

import duckdb
import orjson
import pyarrow as pa

from correlate.topology import expected_links
from ingest.lake import TABLES, Lake, LakeError, LakeReplaced
from ingest.prefix import LATEST_US, from_us

log = logging.getLogger("firstfault.store")
T = TypeVar("T")

VIEWS_SQL = Path(__file__).resolve().parents[1] / "schemas" / "views.sql"
SEV_RANK_SQL = "CASE severity WHEN 'critical' THEN 3 WHEN 'error' THEN 2 WHEN 'warning' THEN 1 ELSE 0 END"
#: a row's severity at or above the one given as the parameter (``min_severity`` of events and incidents)
MIN_SEVERITY_SQL = f"{SEV_RANK_SQL} >= {SEV_RANK_SQL.replace('severity', '?')}"
#: sort name -> (SQL expression, python key of the cursor)
SORTS = {"start": "start", "severity": SEV_RANK_SQL, "confidence": "confidence", "end": '"end"'}


#: the upper bound of an open span: the latest time a fleet's log line can carry (ingest.prefix)
_FAR_FUTURE = from_us(LATEST_US)


class _Where:
    """The filters of one query (:meth:`Store.incidents`, :meth:`Store.events`): SQL conditions joined by AND, and
    the values of their ``?`` placeholders in the order they stand."""

    def __init__(self, *clauses: str) -> None:
        self.clauses, self.params = list(clauses), []

    def add(self, clause: str, *values: Any) -> None:
        """Narrow by ``clause``, whose ``?`` placeholders take ``values`` in order."""
        self.clauses.append(clause)
        self.params.extend(values)

    @property
    def sql(self) -> str:
        return " AND ".join(self.clauses)


def _incident_shaped(d: Any) -> bool:
    """Whether ``d`` has what the service and the API read of a stored incident (DESIGN.md's shape): its id, version,
    status and times, an initiator and downstream parties with their events, context entries with theirs. A foreign
    document ``{"id": …}`` alone passed the first check and stopped every restart (``KeyError: 'initiator'``: a
    break-it pass)."""
    if not isinstance(d, dict) or not isinstance(d.get("id"), str) or not isinstance(d.get("version"), int):
        return False
    if not all(isinstance(d.get(k), str) for k in ("status", "start", "end", "severity", "category")):
        return False
    init, down, ctx = d.get("initiator"), d.get("downstream"), d.get("context", [])
    return (isinstance(init, dict) and isinstance(init.get("events", []), list) and isinstance(down, list)
            and all(isinstance(p, dict) and isinstance(p.get("events"), list) for p in down)
            and isinstance(ctx, list) and all(isinstance(c, dict) and "event" in c for c in ctx))


#: how an analyst's query went wrong, the words that begin what ``firstfault sql`` and ``POST /sql`` both say of it
#: (they worded one error differently: a fresh user's trial): the query itself is wrong (it does not parse, names a
#: table, column or function the views do not have), it asks for what is not allowed (not read-only, files, the
#: network, settings, a type no format holds whole), or it failed while it ran (a value, the time limit)
QUERY_INVALID, QUERY_REFUSED, QUERY_FAILED = "query invalid", "query refused", "query failed"
_INVALID_QUERY_ERRORS = (duckdb.CatalogException, duckdb.BinderException, duckdb.ParserException)


def query_verdict(e: Exception) -> str:
    """:data:`QUERY_REFUSED` for a DuckDB error of what the connection does not allow (files, the network),
    :data:`QUERY_INVALID` for a query DuckDB cannot parse or bind, else :data:`QUERY_FAILED`."""
    if isinstance(e, duckdb.PermissionException):
        return QUERY_REFUSED
    return QUERY_INVALID if isinstance(e, _INVALID_QUERY_ERRORS) else QUERY_FAILED


class StoreError(RuntimeError):
    """A query failed; the message is safe to show to the caller. ``unavailable``: it read a table with a part the
    lake cannot read (``_create_views``), or the process's lake was deleted or replaced under it (:func:`connect`),
    which the query could not help (the API's 503, not a 400); ``verdict``:
    an analyst's query's :data:`QUERY_INVALID`, :data:`QUERY_REFUSED` or :data:`QUERY_FAILED` (the default);
    ``abandoned``: the query outlived its time limit and the interrupt, and runs on (:meth:`Store.stream_sql`)."""

    def __init__(self, message: str, *, unavailable: bool = False, verdict: str = QUERY_FAILED,
                 abandoned: bool = False) -> None:
        super().__init__(message)
        self.unavailable = unavailable
        self.abandoned = abandoned
        self.verdict = verdict


def holds_no_events(lake: str) -> bool:
    """Whether a local lake has no events partition but the empty ``_schema`` one (or no events folder): a
    lake nothing was ingested into, often a mistyped path (``serve`` says so at its start, ``/healthz`` in its
    ``note``). Reads the events folder's first level only (a lake of months holds ~10^5 parts). An S3 lake is not
    listed here: ``False``."""
    from ingest.lake import lake_path

    if lake.startswith("s3://"):
        return False
    try:
        folder = lake_path(lake) / "events"
        return not folder.is_dir() or all(p.name == "kind=_schema" for p in folder.iterdir())
    except (LakeError, OSError):
        return False


def connect(lake: Lake, *, threads: int = 2, memory_limit: str = "1GB") -> duckdb.DuckDBPyConnection:
    """A locked-down connection with the analyst views (raises :class:`StoreError`)."""
    try:
        lake.init()
    except LakeReplaced as e:  # deleted or replaced under this process: an empty answer would read as "no faults";
        # the server's trouble, not the query's (POST /sql answered it a 400 "query failed": a fresh user's trial)
        raise StoreError(str(e), unavailable=True) from None
    except LakeError:
        pass  # a read-only mount of a lake the ingest side initialised: the views still read it
    root = lake.location
    con = duckdb.connect(":memory:", config={"threads": threads, "memory_limit": memory_limit})
    try:
        if lake.remote:
            # DuckDB reads s3:// through fsspec's s3fs (same AWS environment as the writer); the
            # allowed_directories lock below still confines queries to the lake's prefix
            import s3fs

            # a filesystem of its own without a listings cache: fsspec's shared instance kept each folder's first
            # listing, so once a part was written (or compacted away) after a process's first query, every query
            # of that table failed ("FileNotFoundError" of a part the cached listing did not have)
            con.register_filesystem(s3fs.S3FileSystem(use_listings_cache=False, skip_instance_cache=True))
        # no spilling to disk: a query bigger than memory_limit fails cleanly instead of filling the disk
        # (DuckDB's default spills to ./.tmp, up to 90 % of the disk, and makes that folder readable)
        con.execute("SET temp_directory = ''")
        con.execute("SET allowed_directories = [?]", [root + "/"])
        con.execute("SET enable_external_access = false")
        con.execute("SET autoinstall_known_extensions = false")
        con.execute("SET autoload_known_extensions = false")
        con.execute("SET TimeZone = 'UTC'")
        con.execute("SET VARIABLE lake = ?", [root])
        _create_views(con, root)
        con.execute("SET lock_configuration = true")
    except duckdb.Error as e:
        con.close()
        raise StoreError(f"cannot open the lake at {root}: {e}") from e
    return con


#: the views of ``schemas/views.sql`` that read a table's parts -> that table (``ingest.lake.TABLES``)
_TABLE_OF_VIEW = {"events": "events", "link_samples": "link_samples", "topology": "topology",
                  "incident_versions": "incidents", "incident_evidence": "incident_evidence"}
#: table macros that read the same parts as a view (``events_between``: the events' date partitions): they
#: cannot be read when it cannot
_SAME_PARTS = {"events_between": "events"}
#: the views and macros whose columns are a table's (``incidents``: the latest of ``incident_versions``)
_COLUMNS_OF = {**_TABLE_OF_VIEW, **_SAME_PARTS, "incidents": "incidents"}
_CREATED = re.compile(r"CREATE\s+OR\s+REPLACE\s+(?:VIEW|MACRO)\s+(?P<name>\w+)\s*(?:\([^)]*\))?\s*AS\s+(?:TABLE\s+)?",
                      re.IGNORECASE)


def _create_views(con: duckdb.DuckDBPyConnection, root: str, mismatched: dict[str, str] | None = None,
                  narrow: frozenset[str] = frozenset()) -> None:
    """Create the views and table macros of ``schemas/views.sql`` one statement at a time.

    Those that read a table's parts keep the table's columns (``ingest.lake.TABLES``): a part another writer
    left with more columns added them to every row, and a BLOB among them made ``/events`` answer 500. A table
    with a part DuckDB cannot read (a zero-byte or non-Parquet ``.parquet`` file) or whose
    column types differ from its schema gets, for each view or macro over it, one of the same name and columns
    that raises the reason, naming the file, when a query reads it; the other tables stay usable (one bad file
    under ``events/`` made every view, ``/links`` and ``/incidents`` fail; a part whose ``ts`` was text turned
    the whole column to VARCHAR and the API answered 500). A part gone between the view's glob and the read of
    its footer (the lake's compaction removed it: :func:`vanished_part`) is not such a part: the view is created
    again (up to ``VANISHED_RUNS`` times), which lists the merged part.

    The columns of the views over parts are checked once all are created (one catalog query). When one has a
    column of another type, or one more, the statements run again: with those views ``mismatched`` (view ->
    reason) from the start, so that what reads them raises too, and those with more columns (and the macros
    over the same parts) selecting the table's by name (``narrow``; not always: ~11 ms more per connection)."""
    broken: dict[str, str] = {}
    unlisted = _unlisted_folders(root)
    for sql in _view_statements():
        m = _CREATED.search(sql)
        if m is None:
            con.execute(sql)
            continue
        name, head, select = m["name"], sql[:m.end()], sql[m.end():]
        table = _COLUMNS_OF.get(name)
        cols = ", ".join(f'"{c}"' for c in TABLES[table].names) if table else "*"
        why = ((mismatched or {}).get(name) or broken.get(_SAME_PARTS.get(name, ""))
               or unlisted.get(_TABLE_OF_VIEW.get(name) or _SAME_PARTS.get(name, "")))
        if why is None:
            body = re.sub(r"'[^']*'", "''", select)  # names, not the paths in string literals
            upstream = next((b for b in broken if re.search(rf"\b{b}\b", body)), None)
            if upstream is not None:
                why = f"it reads {upstream}, which cannot be read: {broken[upstream]}"
        if why is None:
            reads_parts = name in narrow or _SAME_PARTS.get(name) in narrow
            create = f"{head}SELECT {cols} FROM ({select})" if reads_parts else sql
            for attempt in range(VANISHED_RUNS + 1):
                try:
                    con.execute(create)
                except duckdb.Error as e:
                    # a part the glob listed was compacted away before its footer was read: the next glob lists
                    # the merged part (it made the view one that raises "cannot be read", not retried)
                    if attempt < VANISHED_RUNS and vanished_part(e):
                        continue
                    why = re.sub(r"^[\w ]*Error: ", "", str(e).splitlines()[0])  # the caller says "Error" once
                break
        if why is not None:
            broken[name] = why
            text = f"{_SAME_PARTS.get(name, name)} cannot be read: {why}".replace("'", "''")
            # the same columns, so that a query binds and then fails with the reason (not "column not found"),
            # each from one value that only raises: random() keeps the optimiser from folding a filter on a
            # constant column into an empty result without reading it
            typed = ", ".join(f'CAST(v AS {t}) AS "{c}"' for c, t in _duck_types(table).items()) \
                if table else "v"
            con.execute(f"{head}SELECT {typed} FROM (SELECT CASE WHEN random() >= 0 THEN error('{text}') END AS v) "
                        "WHERE v IS NULL")
    if mismatched is None and time.monotonic() - _COLUMNS_CHECKED.get(root, -_RECHECK_S) >= _RECHECK_S:
        created = [v for v in _TABLE_OF_VIEW if v not in broken]
        # the catalog's column types of the views as created (a DESCRIBE would bind each again: every footer)
        have: dict[str, dict[str, str]] = {}
        for view, col, typ in con.execute("SELECT table_name, column_name, data_type FROM duckdb_columns() "
                                          "WHERE table_name IN (SELECT unnest(?))", [created]).fetchall():
            have.setdefault(view, {})[col] = typ
        odd = {v: why for v in created if (why := _schema_mismatch(con, v, root, have.get(v, {})))}
        wider = frozenset(v for v in created if set(have.get(v, {})) - set(TABLES[_TABLE_OF_VIEW[v]].names))
        if odd or wider:
            _create_views(con, root, odd, wider)
        elif not broken:
            _COLUMNS_CHECKED[root] = time.monotonic()


def _unlisted_folders(root: str) -> dict[str, str]:
    """Table -> why its folder under a local lake ``root`` cannot be read whole: a partition folder that cannot be
    listed (``Permission denied``), which DuckDB's glob skips silently — ``SELECT count(*) FROM events WHERE
    kind='ecc'`` answered 0 for a lake whose ``kind=ecc`` folder another user's umask closed, which reads as "no
    ECC errors" (a break-it pass). Walked at most once per :data:`_RECHECK_S` per root while every folder is
    readable (``_LISTED``); an S3 lake has no such folders."""
    if "://" in root or time.monotonic() - _LISTED.get(root, -_RECHECK_S) < _RECHECK_S:
        return {}
    out: dict[str, str] = {}
    for table in TABLES:
        base = os.path.join(root, table)
        if not os.path.isdir(base):
            continue
        bad: list[str] = []
        for _ in os.walk(base, onerror=lambda e: bad.append(f"{e.filename} ({e.strerror or e})")):
            if bad:
                break
        if bad:
            out[table] = f"folder {bad[0]} cannot be listed: its parts would be left out"
    if not out:
        _LISTED[root] = time.monotonic()
    return out


#: lake root -> when every folder of its tables was last listed (``_unlisted_folders``)
_LISTED: dict[str, float] = {}
#: lake root -> when its views' columns were last found as their tables' (``time.monotonic``): the check binds
#: every view again (~30 ms, every part's footer), so a connection within ``_RECHECK_S`` of a clean one skips
#: it; a part of another schema written meanwhile is found by the first connection after that
_COLUMNS_CHECKED: dict[str, float] = {}
_RECHECK_S = 60.0


_LOCAL = threading.local()


def own_duckdb() -> duckdb.DuckDBPyConnection:
    """This thread's in-memory DuckDB connection, for parsing and typing that reads no lake (``extract_statements``,
    ``from_arrow``). duckdb's module functions share one connection across threads, which refuses a second call
    while one runs ("Resource In Use Error: connection is busy with another call"): queries at once in a fresh API
    process answered a good one 400 and /incidents 503 (a break-it pass)."""
    con = getattr(_LOCAL, "con", None)
    if con is None:
        con = _LOCAL.con = duckdb.connect(":memory:", config={"threads": 1})
    return con


@lru_cache(maxsize=1)
def _view_statements() -> tuple[str, ...]:
    """The statements of ``schemas/views.sql``, without their ``;``: read and split once per process."""
    text = VIEWS_SQL.read_text(encoding="utf-8")
    return tuple(st.query.strip().rstrip(";") for st in own_duckdb().extract_statements(text))


@lru_cache(maxsize=None)  # the lake's five tables
def _duck_types(table: str) -> dict[str, str]:
    """column of ``table`` (``ingest.lake.TABLES``) -> the DuckDB type its Arrow type reads as (``TIMESTAMP WITH
    TIME ZONE``, ``VARCHAR``, …). Not to be changed in place: it is cached."""
    schema = TABLES[table]
    return dict(zip(schema.names, map(str, own_duckdb().from_arrow(schema.empty_table()).types)))


def _schema_mismatch(con: duckdb.DuckDBPyConnection, view: str, root: str, have: dict[str, str]) -> str | None:
    """Why ``view`` (of ``_TABLE_OF_VIEW``), whose columns have the types ``have`` (column -> DuckDB type), does
    not have its table's column types (None when it does): the first column whose type differs and the parts
    that hold it in another type (read from the Parquet footers, only here)."""
    table = _TABLE_OF_VIEW[view]
    want = _duck_types(table)
    col = next((c for c, t in want.items() if c in have and have[c] != t), None)
    if col is None:
        return None
    rows = con.execute("SELECT file_name, type, logical_type FROM parquet_schema(?) WHERE name = ?",
                       [f"{root}/{table}/**/*.parquet", col]).fetchall()
    ref = next(((t, lt) for f, t, lt in rows if f.endswith("/_schema.parquet")), None)
    odd = sorted(f for f, t, lt in rows if ref is not None and (t, lt) != ref)
    where = (f"; parts that hold it otherwise: {', '.join(odd[:3])}" + (f" and {len(odd) - 3} more" if len(odd) > 3
             else "")) if odd else ""
    return f"column {col} reads as {have[col]}, not {want[col]}: a part of another schema is in {table}/{where}"


def vanished_part(e: BaseException | None) -> bool:
    """Whether ``e`` (a DuckDB or Arrow error, or a :class:`StoreError` caused by one) is a Parquet part the query
    had listed that was gone when it was opened: the lake's compaction (``ingest.compact``) removes the parts it
    merged once the merged part is written, so a query that globbed the folder just before reads the merged part
    when run again."""
    while isinstance(e, StoreError):
        e = e.__cause__
    if not isinstance(e, (duckdb.IOException, pa.ArrowException, OSError)):
        return False
    msg = str(e)
    return "No such file or directory" in msg or "No files found that match the pattern" in msg


#: how many times a query is run again when a part it listed was removed meanwhile (``again_if_vanished``): the
#: compaction of an hour removes one folder's parts after another for seconds to minutes, so a query of the whole
#: lake run again once met the next folder's removal (a break-it pass: 2 of 39 queries of 0.5 s failed during one
#: 15 s compaction of 14 folders)
VANISHED_RUNS = 5


def again_if_vanished(run: Callable[[], T]) -> T:
    """``run()``, and again, up to ``VANISHED_RUNS`` more times, while it raises :class:`StoreError` (or DuckDB's
    ``IOException`` itself, a caller that keeps DuckDB's errors: ``firstfault sql``) for a part removed meanwhile
    (:func:`vanished_part`); another failure, or the last, is raised."""
    for n in range(VANISHED_RUNS):
        try:
            return run()
        except (StoreError, duckdb.IOException) as e:
            if not vanished_part(e):
                raise
            log.info("a lake part was removed while a query read it (compacted); running the query again (%d): %s",
                     n + 1, e)
    return run()


class Store:
    """The queries the API and the CLI need (each raises :class:`StoreError` on failure)."""

    def __init__(self, lake: Lake) -> None:
        self.lake = lake

    def query(self, sql: str, params: list[Any] | None = None) -> list[dict[str, Any]]:
        """The rows of ``sql`` as dicts; run again when a part it listed was removed meanwhile
        (:func:`again_if_vanished`). Raises :class:`StoreError`."""
        return again_if_vanished(lambda: self._query(sql, params))

    def _query(self, sql: str, params: list[Any] | None) -> list[dict[str, Any]]:
        con = connect(self.lake)
        try:
            cur = con.execute(sql, params or [])
            cols = [d[0] for d in cur.description]
            return [dict(zip(cols, row)) for row in cur.fetchall()]
        except duckdb.Error as e:
            raise StoreError(str(e).splitlines()[0]) from e
        finally:
            con.close()

    # --- incidents -------------------------------------------------------------------------------
    def incidents(self, *, since: Any = None, until: Any = None, host: str | None = None,
                  hosts_in: list[str] | None = None, severity: list[str] | None = None,
                  min_severity: str | None = None,
                  category: str | None = None, status: str | None = None, device: str | None = None,
                  comm: str | None = None, sort: str = "start", limit: int = 50,
                  cursor: tuple[Any, str] | None = None) -> list[dict[str, Any]]:
        """Latest versions, sorted descending by ``sort`` then id; ``cursor`` = (sort value, id) of the
        last item already seen. ``hosts_in``: incidents touching any of these hosts (a domain or rack).
        ``severity``: exactly these; ``min_severity``: this one or above (info < warning < error < critical)."""
        f = _Where("status <> 'superseded'")
        if since is not None:
            # or open until its scheduled time (``correlate.incident.current_until``: a maintenance notice's NotBefore,
            # days after its line's ``end``, kept in ``doc``): one current then was left out (a break-it pass)
            f.add("""("end" >= ? OR TRY_CAST(json_extract_string(doc, '$.scheduled') AS TIMESTAMPTZ) >= ?)""",
                  since, since)
        if until is not None:
            f.add("start <= ?", until)
        if host:
            f.add("list_contains(hosts, ?)", host)
        if hosts_in is not None:
            f.add("len(list_intersect(hosts, ?)) > 0", hosts_in)
        if severity:
            f.add("severity IN (" + ",".join("?" * len(severity)) + ")", *severity)
        if min_severity:
            f.add(MIN_SEVERITY_SQL, min_severity)
        if category:
            f.add("category = ?", category)
        if status:
            f.add("status = ?", status)
        if device:
            f.add("(initiator_device = ? OR id IN (SELECT incident_id FROM incident_evidence WHERE device = ?))",
                  device, device)
        if comm:  # the communicators its events are of (doc.communicators: membership from NCCL's init lines), or
            # an evidence line's own commId (incidents stored before the doc said them)
            f.add("(coalesce(list_contains(CAST(json_extract(doc, '$.communicators') AS VARCHAR[]), ?), false) "
                  "OR id IN (SELECT x.incident_id FROM incident_evidence x JOIN events e USING (event_id) "
                  "WHERE e.comm = ?))", comm, comm)
        key = SORTS[sort]
        if cursor:
            f.add(f"({key}, id) < (?, ?)", *cursor)
        sql = f"SELECT doc, {key} AS sort_key FROM incidents WHERE {f.sql} ORDER BY {key} DESC, id DESC LIMIT ?"
        out = []
        for r in self.query(sql, [*f.params, limit]):
            d = self.incident_doc(r["doc"])
            d["_sort_key"] = r["sort_key"]
            out.append(d)
        return out

    def incident(self, incident_id: str) -> dict[str, Any] | None:
        rows = self.query("SELECT doc FROM incidents WHERE id = ?", [incident_id])
        return self.incident_doc(rows[0]["doc"]) if rows else None

    def incident_doc(self, doc: Any) -> dict[str, Any]:
        """A stored incident row's ``doc`` column (DESIGN.md's incident, as JSON text) read. Raises
        :class:`StoreError` (``unavailable``: the API's 503) when it is no incident: a part of the incidents table
        that another writer or an older schema left has none (NULL), or another column by that name; it was an
        orjson traceback at every start of ``run`` and ``correlate``, and the API's 500 (a break-it pass)."""
        try:
            d = orjson.loads(doc) if isinstance(doc, (str, bytes)) else None
        except orjson.JSONDecodeError:
            d = None
        if not _incident_shaped(d):
            what = "no JSON" if d is None else f"JSON {type(d).__name__} that is no incident"
            where = f" under {self.lake.base}/incidents" if getattr(self.lake, "base", None) else ""
            raise StoreError(f"a stored incident has no readable document (its doc is {what}): a part{where} was not "
                             "written by firstfault's incidents schema; move it out of the lake", unavailable=True)
        return d

    # --- events ----------------------------------------------------------------------------------
    def events_by_id(self, ids: list[str]) -> list[dict[str, Any]]:
        if not ids:
            return []
        return self.query("SELECT * FROM events WHERE event_id IN (SELECT unnest(?)) ORDER BY ts, origin", [ids])

    def ranks_on(self, host: str, device: str, comms: list[str], since: Any, until: Any) -> list[int]:
        """The ranks NCCL's init lines (kind ``nccl_init``) of ``comms`` placed on GPU ``device`` (a PCI bus id) of
        ``host``, from lines of ``since`` … ``until`` (datetimes; the date partitions of that span are read)."""
        if not comms:
            return []
        rows = self.query("SELECT DISTINCT rank FROM events_between(?, ?) WHERE kind = 'nccl_init' AND host = ? "
                          "AND device = ? AND comm IN (SELECT unnest(?)) AND rank IS NOT NULL ORDER BY rank",
                          [since, until, host, device, comms])
        return [r["rank"] for r in rows]

    def events(self, *, since: Any = None, until: Any = None, host: str | None = None, kind: str | None = None,
               xid: int | None = None, sxid: int | None = None, device: str | None = None,
               signature: str | None = None, text: str | None = None, min_severity: str | None = None,
               evidence_of: list[str] | None = None, limit: int = 100, offset: int = 0) -> list[dict[str, Any]]:
        """Events, newest first (``ts`` desc, then ``event_id``), as the ``events`` view's rows. Each filter given
        narrows them; ``min_severity``: this severity or above, except the evidence of the incidents whose ids
        ``evidence_of`` lists (their latest version's ``incident_evidence``), which pass whatever their severity."""
        f = _Where("1=1")
        for col, val in (("host", host), ("kind", kind), ("xid", xid), ("sxid", sxid), ("device", device),
                         ("signature", signature)):
            if val is not None:
                f.add(f"{col} = ?", val)
        source, src_params = "events", []
        if since is not None:  # read only the date partitions of the span (schemas/views.sql)
            source, src_params = "events_between(?, ?)", [since, until if until is not None else _FAR_FUTURE]
        elif until is not None:
            f.add("ts <= ?", until)
        if text:
            f.add("contains(message, ?)", text)
        if min_severity:
            if evidence_of:  # the incidents' evidence passes whatever its severity
                f.add(f"({MIN_SEVERITY_SQL} OR event_id IN (SELECT event_id FROM incident_evidence "
                      "WHERE incident_id IN (SELECT unnest(?))))", min_severity, evidence_of)
            else:
                f.add(MIN_SEVERITY_SQL, min_severity)
        sql = f"SELECT * FROM {source} WHERE {f.sql} ORDER BY ts DESC, event_id LIMIT ? OFFSET ?"
        return self.query(sql, [*src_params, *f.params, limit, offset])

    def knows_host(self, host: str) -> bool:
        """Whether the lake holds anything of ``host``: an event, a link sample or a topology fact (of any
        time and severity)."""
        rows = self.query("SELECT EXISTS (SELECT 1 FROM events WHERE host = ?) "
                          "OR EXISTS (SELECT 1 FROM link_samples WHERE host = ?) "
                          "OR EXISTS (SELECT 1 FROM topology WHERE host = ?) AS known", [host, host, host])
        return bool(rows[0]["known"])

    def hosts(self) -> list[str]:
        """Every host the lake holds anything of (an event, a link sample or a topology fact), sorted."""
        rows = self.query("SELECT DISTINCT host FROM events UNION SELECT DISTINCT host FROM link_samples "
                          "UNION SELECT DISTINCT host FROM topology")
        return sorted(r["host"] for r in rows if r["host"] is not None)

    # --- links -----------------------------------------------------------------------------------
    def links(self, *, host: str | None = None) -> list[dict[str, Any]]:
        """Per host, GPU and link: the latest state and speed, the latest error counters and how much
        each rose over the samples kept, and what the GPU model is expected to have."""
        where, params = "", []
        if host:
            where, params = "WHERE host = ?", [host]
        states = self.query(
            f"SELECT host, coalesce(device, 'gpu' || gpu_index::VARCHAR) AS gpu, any_value(gpu_index) AS gpu_index, "
            f"link, arg_max(state, ts) AS state, arg_max(gbps, ts) AS gbps, max(ts) AS ts, "
            f"count(*) FILTER (WHERE state = 'up') AS up_samples, "
            f"count(*) FILTER (WHERE state IN ('inactive', 'down')) AS down_samples, any_value(model) AS model "
            f"FROM link_samples {where} {'AND' if where else 'WHERE'} state IS NOT NULL GROUP BY ALL", params)
        counters = self.query(
            f"SELECT host, coalesce(device, 'gpu' || gpu_index::VARCHAR) AS gpu, any_value(gpu_index) AS gpu_index, "
            f"link, counter, arg_max(value, ts) AS value, max(value) - arg_min(value, ts) AS rise, max(ts) AS ts "
            f"FROM link_samples {where} {'AND' if where else 'WHERE'} counter IS NOT NULL GROUP BY ALL", params)
        out: dict[tuple, dict[str, Any]] = {}
        for r in states:
            k = (r["host"], r["gpu"], r["link"])
            out[k] = {"host": r["host"], "gpu": r["gpu"], "gpu_index": r["gpu_index"], "link": r["link"],
                      "state": r["state"], "gbps": r["gbps"], "ts": r["ts"], "model": r["model"],
                      "flapped": bool(r["up_samples"] and r["down_samples"]), "counters": {}}
        for r in counters:
            k = (r["host"], r["gpu"], r["link"])
            # a link with counter samples only keeps its GPU's index (it was null: a break-it pass)
            d = out.setdefault(k, {"host": r["host"], "gpu": r["gpu"], "gpu_index": r["gpu_index"], "link": r["link"],
                                   "state": None, "gbps": None, "ts": r["ts"], "model": None, "flapped": False,
                                   "counters": {}})
            d["counters"][r["counter"]] = {"value": r["value"], "rise": r["rise"]}
        # expected links per GPU: from the model, or "every link seen up" on that GPU
        per_gpu: dict[tuple, list[dict[str, Any]]] = {}
        for d in out.values():
            per_gpu.setdefault((d["host"], d["gpu"]), []).append(d)
        for links in per_gpu.values():
            model = next((l["model"] for l in links if l["model"]), None)
            exp = expected_links(model)
            any_up = any(l["state"] == "up" for l in links)
            for l in links:
                l["expected_up"] = (l["link"] < exp) if exp else (any_up or None)
                l["degraded"] = bool(
                    (l["state"] in ("inactive", "down") and l["expected_up"])
                    or l["flapped"] or any((c["rise"] or 0) > 0 for c in l["counters"].values()))
        return sorted(out.values(), key=lambda d: (d["host"], str(d["gpu"]), d["link"] if d["link"] is not None
                                                  else -1))

    # --- SQL -------------------------------------------------------------------------------------
    def stream_sql(self, sql: str, *, max_rows: int, timeout_s: float, max_bytes: int = 256 * 1024 * 1024,
                   batch_rows: int = 10_000, ended: Callable[[], None] | None = None
                   ) -> tuple[pa.Schema, Iterator[pa.RecordBatch], bool | None]:
        """Run one checked read-only query: its Arrow schema, record batches of at most ``max_rows`` rows,
        and whether the result had more rows than that (cut; None when asking for one more failed).

        The rows are read before this returns, so the time limit covers the query and not how fast the
        caller reads, and a query that fails part-way raises here rather than cutting a response short.
        Interrupted after ``timeout_s``; raises :class:`StoreError` (with the reason) on any failure, and when
        the rows read hold more than ``max_bytes`` bytes of Arrow data (DuckDB's ``memory_limit`` does not count
        a result's strings: twenty values of 100 MB took the API to 8 GB). Run again when a part the query
        listed was removed meanwhile (:func:`again_if_vanished`: nothing was returned yet).

        The answer comes within ``timeout_s`` + :data:`STOP_GRACE_S`: DuckDB checks for an interrupt between
        chunks, never inside one function call, and ``SELECT repeat('a', 1000000000)`` built its 1 GB value for
        ~55 s before the 400 (its ``memory_limit`` does not count a value's bytes either: 10 MB let it through).
        Such a query is abandoned: a :class:`StoreError` (``abandoned``) now, while it runs on in its thread until
        that call returns and the interrupt stops it; ``ended`` (when given) is called then, so that the caller
        holds its slot until the query's CPU and memory are free (the API's ``SQL_CONCURRENCY``)."""
        return bounded_query(lambda: again_if_vanished(lambda: self._stream_sql(
            sql, max_rows=max_rows, timeout_s=timeout_s, max_bytes=max_bytes, batch_rows=batch_rows)),
            timeout_s, ended)

    def _stream_sql(self, sql: str, *, max_rows: int, timeout_s: float, max_bytes: int,
                    batch_rows: int) -> tuple[pa.Schema, Iterator[pa.RecordBatch], bool | None]:
        con = connect(self.lake)
        timer = threading.Timer(timeout_s, con.interrupt)
        timer.start()
        batches: list[pa.RecordBatch] = []
        try:
            rel = con.sql(sql)
            refuse_lossy_columns(rel)
            reader = rel.to_arrow_reader(batch_rows)
            left, cut, size = max_rows, False, 0
            while True:
                try:
                    b = reader.read_next_batch()
                except StopIteration:
                    break
                if b.num_rows > left:
                    b, cut = b.slice(0, left), True
                if b.num_rows:
                    batches.append(b)
                    left -= b.num_rows
                    size += b.nbytes
                    if size > max_bytes:
                        raise StoreError(f"the result holds more than {max_bytes} bytes (sql_max_bytes): select fewer "
                                         "rows or columns, or shorten long values (left(s, n))")
                if left == 0:
                    cut = cut or _has_more(reader)
                    break
            schema = reader.schema
        except (duckdb.Error, pa.ArrowException, OSError) as e:  # pyarrow reports an interrupt as OSError
            msg = query_error(e, timeout_s, "sql_timeout_s")  # as `firstfault sql` says it (a break-it pass)
            raise StoreError(msg, unavailable=" cannot be read: " in msg, verdict=query_verdict(e)) from e
        finally:
            timer.cancel()
            con.close()
        return schema, iter(batches), cut


#: how long (s) past its time limit an analyst's query may take to stop once interrupted before it is abandoned
#: (:meth:`Store.stream_sql`): DuckDB stops at its next chunk, well within this
STOP_GRACE_S = 3.0


def bounded_query(run: Callable[[], T], timeout_s: float, ended: Callable[[], None] | None) -> T:
    """``run()``'s result or error, in a thread of its own, waited for ``timeout_s`` + :data:`STOP_GRACE_S` at
    most; then :class:`StoreError` (``abandoned``), and ``ended`` is called when ``run`` returns (it goes on)."""
    out: dict[str, Any] = {}
    lock, done = threading.Lock(), threading.Event()

    def work() -> None:
        try:
            out["value"] = run()
        except BaseException as e:  # noqa: BLE001 - handed to the waiting thread, raised there
            out["error"] = e
        with lock:
            done.set()
            late = out.get("abandoned", False)
        if late and ended is not None:
            ended()

    threading.Thread(target=work, name="sql-query", daemon=True).start()
    done.wait(timeout_s + STOP_GRACE_S)
    with lock:
        if not done.is_set():
            out["abandoned"] = True
            raise StoreError(f"the query ran longer than {timeout_s:g} s (sql_timeout_s) and did not stop when "
                             "interrupted: one function call builds one huge value (DuckDB cannot stop it part-way), "
                             "e.g. repeat(s, n) or rpad(s, n) with n in the millions; ask for a shorter value",
                             abandoned=True)
    if "error" in out:
        raise out["error"]
    return out["value"]


def _has_more(reader: pa.RecordBatchReader) -> bool | None:
    """Whether ``reader`` has another row (empty batches skipped); None when reading on fails (an error
    in a later row, the time limit): the rows already read are whole, only whether more exist is unknown."""
    while True:
        try:
            if reader.read_next_batch().num_rows:
                return True
        except StopIteration:
            return False
        except (duckdb.Error, pa.ArrowException, OSError):
            return None


#: DuckDB's advice to change a setting, which the read-only connection refuses (``SET`` is no query here)
_SET_HINT = re.compile(r'\s*Use "SET [^"]*" to [^.]*\.?')


#: a query that names a table or table function the connection does not have (DuckDB's first line of it)
_NO_SUCH_TABLE = re.compile(r"Table (?:Function )?with name \S+ does not exist")


@lru_cache(maxsize=1)
def lake_names() -> str:
    """The views and table macros of ``schemas/views.sql``, as ``firstfault sql`` without a query lists them:
    ``events, …; the table macro events_between(lo, hi)``."""
    made = [re.search(r"CREATE\s+OR\s+REPLACE\s+(VIEW|MACRO)\s+(\w+)\s*(\([^)]*\))?", st, re.I)
            for st in _view_statements()]
    views = sorted(m[2] for m in made if m and m[1].upper() == "VIEW")
    macros = sorted(m[2] + " ".join((m[3] or "()").split()) for m in made if m and m[1].upper() == "MACRO")
    return ", ".join(views) + (f"; the table macro{'s' * (len(macros) > 1)} {', '.join(macros)}" if macros else "")


def query_error(e: Exception, timeout_s: float, setting: str = "") -> str:
    """A failed query's error in one line: its first line, "ran longer than …" for the time limit (``setting``
    names the limit's setting), and DuckDB's ``Use "SET …"`` advice as what can be done here (it advised a SET
    that is refused: a break-it pass). A table that is not there is said with the views there are (DuckDB's
    "Catalog Error: Table with name nope does not exist!" alone: a fresh user's trial)."""
    msg = str(e).splitlines()[0]
    if "INTERRUPT" in msg.upper():
        return f"the query ran longer than {timeout_s:g} s{f' ({setting})' if setting else ''} and was stopped"
    if isinstance(e, duckdb.CatalogException) and _NO_SUCH_TABLE.search(msg):
        return f"{msg} The lake's views: {lake_names()}"
    said = _SET_HINT.sub("", msg)
    return said + " (settings cannot be changed here: simplify the query)" if said != msg else msg


def json_default(v: Any) -> Any:
    """``orjson`` ``default=`` for the values of an analyst's query that JSON has no type for: bytes (a BLOB)
    as base64 text, an interval (Arrow ``month_day_nano``) as ``{"months", "days", "nanoseconds"}`` (lossless;
    the three parts may have different signs in DuckDB), anything else (decimals, hugeints) as its text.
    NaN and ±infinity are written as ``null`` by orjson: JSON has no such numbers."""
    if isinstance(v, (bytes, bytearray, memoryview)):
        return base64.b64encode(v).decode()
    if isinstance(v, pa.MonthDayNano):
        return {"months": v.months, "days": v.days, "nanoseconds": v.nanoseconds}
    return str(v)


def json_bytes(v: Any) -> bytes:
    """An analyst's query value or row as JSON (``orjson``, :func:`json_default` for what JSON has no type for),
    times in UTC ending in ``Z`` as every other response's: what ``POST /sql`` and ``firstfault sql`` write."""
    return orjson.dumps(v, default=json_default, option=orjson.OPT_UTC_Z)


#: Arrow time units -> one day in them (``refuse_day_end_times``)
_DAY_IN = {"s": 86_400, "ms": 86_400_000, "us": 86_400_000_000, "ns": 86_400_000_000_000}


def decimal_floats(data: pa.Table | pa.RecordBatch) -> pa.Table | pa.RecordBatch:
    """``data`` with each ``FLOAT`` (float32) column as the doubles its shortest decimal text reads as: an
    incident's ``confidence`` 0.7 as a Python float is 0.699999988079071, which JSON, CSV and the terminal table
    printed (a fresh-user trial); 0.7 is what was stored, to float32's precision. Other columns are unchanged;
    Parquet output keeps the float32."""
    idx = [i for i, f in enumerate(data.schema) if pa.types.is_float32(f.type)]
    for i in idx:
        data = data.set_column(i, pa.field(data.schema.field(i).name, pa.float64()),
                               data.column(i).cast(pa.string()).cast(pa.float64()))
    return data


def nanosecond_times(data: pa.Table | pa.RecordBatch) -> pa.Table | pa.RecordBatch:
    """``data`` with each nanosecond ``TIMESTAMP_NS`` column as ISO 8601 text to the nanosecond
    (``2026-12-03T10:00:00.123456789``, with ``Z`` when the column is UTC): Python's datetime holds microseconds,
    and pyarrow's ``to_pylist`` of such a column asked for pandas ("Install pandas to return as Timestamp with
    nanosecond support"), the error ``POST /sql`` and ``firstfault sql`` answered (a break-it pass). For the
    outputs written through Python values (JSON, the terminal table); CSV and Parquet write the column itself."""
    import pyarrow.compute as pc

    for i, f in enumerate(data.schema):
        if pa.types.is_timestamp(f.type) and f.type.unit == "ns":
            col, z = data.column(i), ""
            if f.type.tz is not None:  # a zone's times in UTC
                col, z = col.cast(pa.timestamp("ns", tz="UTC")), "Z"
            data = data.set_column(i, pa.field(f.name, pa.string()), pc.strftime(col, format=f"%Y-%m-%dT%H:%M:%S{z}"))
        elif (t := _ns_as_text(f.type)) != f.type:  # inside a list or struct: Arrow's own text of each value
            data = data.set_column(i, pa.field(f.name, t), data.column(i).cast(t))
    return data


def _ns_as_text(t: pa.DataType) -> pa.DataType:
    """``t`` with every nanosecond timestamp inside lists and structs as a string (``nanosecond_times``)."""
    if pa.types.is_timestamp(t) and t.unit == "ns":
        return pa.string()
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        inner = _ns_as_text(t.value_type)
        return t if inner == t.value_type else (pa.list_ if pa.types.is_list(t) else pa.large_list)(inner)
    if pa.types.is_struct(t):
        fields = [t.field(k) for k in range(t.num_fields)]
        new = [f.with_type(_ns_as_text(f.type)) for f in fields]
        return t if new == fields else pa.struct(new)
    return t


def refuse_day_end_times(data: pa.Table | pa.RecordBatch) -> None:
    """Raise ValueError when a ``TIME`` value of ``24:00:00`` is anywhere in ``data`` — a column, or inside a list,
    struct, map or union (DuckDB's TIME reaches it, Arrow keeps it, Python's ``datetime.time`` does not: pyarrow
    turns it into ``00:00:00``, and CSV prints "<value out of range>"): what JSON, CSV and the terminal table are
    written through would show another value."""
    import pyarrow.compute as pc

    for name, col in zip(data.schema.names, data.columns):
        if not _holds_time(col.type):
            continue
        for chunk in col.chunks if isinstance(col, pa.ChunkedArray) else [col]:
            for times in _time_values(chunk):
                top = pc.max(times).value if len(times) > times.null_count else None
                if top is not None and top >= _DAY_IN[times.type.unit]:
                    raise ValueError(f"column {name!r} holds the TIME 24:00:00, which this format would write "
                                     "as 00:00:00")


def _holds_time(t: pa.DataType) -> bool:
    """A TIME type, or one nested in ``t``."""
    return pa.types.is_time(t) or any(_holds_time(t.field(i).type) for i in range(t.num_fields))


def _time_values(a: pa.Array) -> Iterator[pa.Array]:
    """The arrays of TIME values in ``a`` and nested in it (lists, structs, maps, unions)."""
    t = a.type
    if pa.types.is_time(t):
        yield a
    elif isinstance(a, pa.MapArray):
        yield from _time_values(a.keys)
        yield from _time_values(a.items)
    elif isinstance(a, (pa.ListArray, pa.LargeListArray, pa.FixedSizeListArray)):
        yield from _time_values(a.flatten())
    elif isinstance(a, (pa.StructArray, pa.UnionArray)):
        for i in range(t.num_fields):
            yield from _time_values(a.field(i))


#: DuckDB types that reach Arrow as something else: ``TIME WITH TIME ZONE`` as a bare ``time64`` without its
#: offset (``'12:00:00+02'`` arrives as 12:00); ``UHUGEINT`` as a signed 128-bit decimal (its largest values
#: wrap to negative numbers); ``BIT`` and ``VARINT`` (``BIGNUM``) as DuckDB's own bytes
_LOSSY_TYPES = re.compile(r"\b(TIME WITH TIME ZONE|UHUGEINT|BIT|VARINT|BIGNUM)\b")


def refuse_lossy_columns(rel: duckdb.DuckDBPyRelation) -> None:
    """Raise :class:`StoreError` naming the result columns whose type Arrow cannot carry whole
    (``_LOSSY_TYPES``, also inside a list or struct), so that no output format shows a value that is not the
    one stored."""
    lossy = [f"{n} ({t})" for n, t in zip(rel.columns, map(str, rel.types)) if _LOSSY_TYPES.search(t)]
    if lossy:
        raise StoreError(f"{', '.join(lossy)}: this type cannot be written as it is stored (a time zone's offset, "
                         "the largest UHUGEINTs, BIT and VARINT values would be lost); CAST it to VARCHAR",
                         verdict=QUERY_REFUSED)
