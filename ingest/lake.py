"""The durable store: a hive-partitioned Parquet lake, written atomically per batch.

Layout (DESIGN.md, Storage)::

    <lake>/events/kind=<kind>/date=<YYYY-MM-DD>/hour=<HH>/part-<batch>.parquet
    <lake>/link_samples/date=…/hour=…/part-<batch>.parquet
    <lake>/topology/date=…/hour=…/part-<batch>.parquet
    <lake>/incidents/date=…/hour=…/part-<batch>.parquet
    <lake>/incident_evidence/date=…/hour=…/part-<batch>.parquet

A part is written to a temporary name, fsynced, then renamed into place, so
readers (DuckDB, analysts) never see half a file. The part name comes from
the batch's source coordinates, so a batch replayed after a crash rewrites
the same file instead of adding a duplicate; the DuckDB views also keep one
row per ``event_id``. Several ingest workers can write at once (each writes
its own files); DuckDB reads them all. Each table has an empty ``_schema``
part so its view works on an empty lake.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterable
from datetime import datetime, timezone
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from schemas.events import EVENTS_SCHEMA
from schemas.incidents import EVIDENCE_SCHEMA, INCIDENTS_SCHEMA
from schemas.samples import LINK_SAMPLES_SCHEMA, TOPOLOGY_SCHEMA

TABLES: dict[str, pa.Schema] = {
    "events": EVENTS_SCHEMA,
    "link_samples": LINK_SAMPLES_SCHEMA,
    "topology": TOPOLOGY_SCHEMA,
    "incidents": INCIDENTS_SCHEMA,
    "incident_evidence": EVIDENCE_SCHEMA,
}
#: the time column each table is partitioned by
TIME_COLUMN = {"events": "ts", "link_samples": "ts", "topology": "ts", "incidents": "written_at",
               "incident_evidence": "written_at"}


class LakeError(OSError):
    """A write to the lake failed (read-only folder, full disk …); nothing of the batch is visible."""


def lake_path(root: str) -> Path:
    """The local folder of a lake URL (``file://…`` or a path)."""
    if root.startswith("file://"):
        return Path(root[len("file://"):])
    if "://" in root:
        raise LakeError(f"only local lakes are supported by this build: {root}")
    return Path(root)


class Lake:
    """A local Parquet lake (see module doc). Methods raise :class:`LakeError`."""

    def __init__(self, root: str | Path) -> None:
        self.root = lake_path(str(root)).resolve()

    def init(self) -> None:
        """Create the table folders with their empty ``_schema`` parts (idempotent)."""
        try:
            for name, schema in TABLES.items():
                d = self.root / name / "_schema"
                if name == "events":
                    d = self.root / name / "kind=_schema" / "date=1970-01-01" / "hour=00"
                else:
                    d = self.root / name / "date=1970-01-01" / "hour=00"
                f = d / "_schema.parquet"
                if not f.exists():
                    d.mkdir(parents=True, exist_ok=True)
                    self._atomic_write(schema.empty_table(), f)
        except OSError as e:
            raise LakeError(f"cannot initialise the lake at {self.root}: {e}") from e

    def write(self, table_name: str, table: pa.Table, batch_id: str) -> list[Path]:
        """Write ``table`` as parts named after ``batch_id``; return the files written."""
        if table.num_rows == 0:
            return []
        schema = TABLES[table_name]
        table = table.cast(schema) if table.schema != schema else table
        written: list[Path] = []
        try:
            for keys, part in _partitions(table_name, table):
                d = self.root / table_name
                for k, v in keys:
                    d = d / f"{k}={v}"
                d.mkdir(parents=True, exist_ok=True)
                f = d / f"part-{batch_id}.parquet"
                self._atomic_write(part, f)
                written.append(f)
        except OSError as e:
            raise LakeError(f"writing {table_name} batch {batch_id} to {self.root} failed: {e}") from e
        return written

    @staticmethod
    def _atomic_write(table: pa.Table, final: Path) -> None:
        tmp = final.with_name(f".{final.name}.{uuid.uuid4().hex}.tmp")
        try:
            with open(tmp, "wb") as fh:
                pq.write_table(table, fh, compression="zstd")
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, final)
            dfd = os.open(final.parent, os.O_RDONLY)
            try:
                os.fsync(dfd)
            finally:
                os.close(dfd)
        finally:
            if tmp.exists():
                tmp.unlink()

    def files(self, table_name: str) -> list[Path]:
        return sorted((self.root / table_name).rglob("*.parquet"))


def _partitions(table_name: str, table: pa.Table) -> Iterable[tuple[list[tuple[str, str]], pa.Table]]:
    col = TIME_COLUMN[table_name]
    ts = table.column(col).cast(pa.int64()).to_pylist()
    keys_per_row = []
    for i, t in enumerate(ts):
        dt = datetime.fromtimestamp((t or 0) / 1e6, tz=timezone.utc)
        k = [("date", dt.strftime("%Y-%m-%d")), ("hour", dt.strftime("%H"))]
        if table_name == "events":
            k.insert(0, ("kind", table.column("kind")[i].as_py()))
        keys_per_row.append(tuple(k))
    groups: dict[tuple, list[int]] = {}
    for i, k in enumerate(keys_per_row):
        groups.setdefault(k, []).append(i)
    for k, idx in sorted(groups.items()):
        yield list(k), table.take(pa.array(idx)) if len(idx) != table.num_rows else table


def filter_events(table: pa.Table, kinds: set[str]) -> pa.Table:
    """Rows of ``table`` whose kind is in ``kinds``."""
    return table.filter(pc.is_in(table.column("kind"), value_set=pa.array(sorted(kinds))))
