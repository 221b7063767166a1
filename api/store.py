"""Read-only DuckDB over the Parquet lake, with the views of ``schemas/views.sql``.

Each query opens its own in-memory DuckDB connection (cheap) so readers never
block the ingest workers that write the lake, and see every part written so
far. External access is limited to the lake folder and the configuration is
locked after the views are created (DuckDB ``allowed_directories``,
``enable_external_access``, ``lock_configuration``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import orjson

from ingest.lake import Lake, LakeError

VIEWS_SQL = Path(__file__).resolve().parents[1] / "schemas" / "views.sql"


class StoreError(RuntimeError):
    """A query failed; the message is safe to show to the caller."""


def connect(lake: Lake, *, threads: int = 2, memory_limit: str = "1GB") -> duckdb.DuckDBPyConnection:
    """A locked-down connection with the analyst views (raises :class:`StoreError`)."""
    try:
        lake.init()
    except LakeError:
        pass  # a read-only mount of a lake the ingest side initialised: the views still read it
    root = str(lake.root)
    con = duckdb.connect(":memory:", config={"threads": threads, "memory_limit": memory_limit})
    try:
        con.execute("SET allowed_directories = [?]", [root + "/"])
        con.execute("SET enable_external_access = false")
        con.execute("SET autoinstall_known_extensions = false")
        con.execute("SET autoload_known_extensions = false")
        con.execute("SET TimeZone = 'UTC'")
        con.execute("SET VARIABLE lake = ?", [root])
        con.execute(VIEWS_SQL.read_text(encoding="utf-8"))
        con.execute("SET lock_configuration = true")
    except duckdb.Error as e:
        con.close()
        raise StoreError(f"cannot open the lake at {root}: {e}") from e
    return con


class Store:
    """The queries the API and the CLI need."""

    def __init__(self, lake: Lake) -> None:
        self.lake = lake

    def query(self, sql: str, params: list[Any] | None = None) -> list[dict[str, Any]]:
        con = connect(self.lake)
        try:
            cur = con.execute(sql, params or [])
            cols = [d[0] for d in cur.description]
            return [dict(zip(cols, row)) for row in cur.fetchall()]
        except duckdb.Error as e:
            raise StoreError(str(e).splitlines()[0]) from e
        finally:
            con.close()

    def incidents(self, *, since: Any = None, until: Any = None, host: str | None = None,
                  severity: list[str] | None = None, category: str | None = None, status: str | None = None,
                  device: str | None = None, limit: int = 50, cursor: tuple[str, str] | None = None
                  ) -> list[dict[str, Any]]:
        """Latest versions, newest first; ``cursor`` = (start ISO, id) of the last item already seen."""
        where, params = ["1=1"], []
        if since is not None:
            where.append('"end" >= ?')
            params.append(since)
        if until is not None:
            where.append("start <= ?")
            params.append(until)
        if host:
            where.append("list_contains(hosts, ?)")
            params.append(host)
        if severity:
            where.append("severity IN (" + ",".join("?" * len(severity)) + ")")
            params.extend(severity)
        if category:
            where.append("category = ?")
            params.append(category)
        if status:
            where.append("status = ?")
            params.append(status)
        if device:
            where.append("(initiator_device = ? OR doc LIKE ?)")
            params.extend([device, f"%{device}%"])
        if cursor:
            where.append("(start, id) < (CAST(? AS TIMESTAMPTZ), ?)")
            params.extend(cursor)
        sql = (f"SELECT doc FROM incidents WHERE {' AND '.join(where)} ORDER BY start DESC, id DESC LIMIT ?")
        params.append(limit)
        return [orjson.loads(r["doc"]) for r in self.query(sql, params)]

    def incident(self, incident_id: str) -> dict[str, Any] | None:
        rows = self.query("SELECT doc FROM incidents WHERE id = ?", [incident_id])
        return orjson.loads(rows[0]["doc"]) if rows else None

    def events_by_id(self, ids: list[str]) -> list[dict[str, Any]]:
        if not ids:
            return []
        return self.query("SELECT * FROM events WHERE event_id IN (SELECT unnest(?)) ORDER BY ts", [ids])

    def events(self, *, since: Any = None, until: Any = None, host: str | None = None, kind: str | None = None,
               xid: int | None = None, device: str | None = None, signature: str | None = None,
               text: str | None = None, limit: int = 100, offset: int = 0) -> list[dict[str, Any]]:
        where, params = ["1=1"], []
        for col, val in (("host", host), ("kind", kind), ("xid", xid), ("device", device),
                         ("signature", signature)):
            if val is not None:
                where.append(f"{col} = ?")
                params.append(val)
        if since is not None:
            where.append("ts >= ?")
            params.append(since)
        if until is not None:
            where.append("ts <= ?")
            params.append(until)
        if text:
            where.append("contains(message, ?)")
            params.append(text)
        sql = f"SELECT * FROM events WHERE {' AND '.join(where)} ORDER BY ts DESC, event_id LIMIT ? OFFSET ?"
        return self.query(sql, params + [limit, offset])
