"""Hourly compaction of the Parquet lake: the parts of a closed hour's partition folder merged into one.

Every ingest batch writes one small part per partition folder (``ingest.lake``: ~70 rows each, ~69 parts per
2,000-record batch), so a day of a fleet leaves hundreds of thousands of files, and every DuckDB query over the
views globs and opens them all. DESIGN.md (Storage) says the lake is "compacted hourly"; this does it, one folder at
a time (:func:`compact_folder`)::

    <lake>/events/kind=xid/date=2026-11-30/hour=03/part-<batch>.parquet × n  ->  part-compacted-<hash>.parquet

Steps, each safe to stop after:

1. list the folder's parts (``part-*.parquet``; the ``_schema`` part and temporary files are not parts) with their
   size and modification time;
2. read them (:func:`ingest.lake.read_part`: parts of the old layout hold ``kind``, new ones do not) and drop the
   rows the views of ``schemas/views.sql`` drop anyway (``DEDUP``), so every view answers the same rows after;
3. write ONE part, atomically, with the writer, codecs and schema of ``Lake.write``, named
   ``part-compacted-<sha256 of the member names>.parquet`` (no batch is named so, and a new member set gives a new
   name);
4. only then remove the members, each only if it is unchanged since step 1 (a batch replayed meanwhile rewrote
   it: it stays, and the next run merges it).

A crash between 3 and 4 leaves the merged part beside its members: nothing is lost, the rows are there twice, which
the ``events``, ``link_samples`` and ``topology`` views deduplicate; ``incident_versions`` and
``incident_evidence`` do not, so those two tables' rows are also made distinct (``DISTINCT`` of whole rows, which
only a compaction's crash or a copied file makes), and the next run heals the folder. A second run over a folder
of one part changes nothing.

Readers: a DuckDB query that globbed a folder just before step 4 fails opening a removed member ("No such file").
The API's queries (``api.store.Store``) run again on that error (a few times), reading the merged part; an analyst's
``firstfault sql`` or plain ``duckdb`` query that raced a compaction fails with that message and is simply run
again. Removing at once (not after a grace period) keeps the window to the one run, and leaves no duplicated
incident rows visible meanwhile.

Only closed hours are compacted: an hour whose end is at least ``min_age_s`` ago (default: the correlator's
``allowed_lateness_s`` setting plus ``MARGIN_S``), the same rule as the hourly report's (``due_hour``). Late parts
and replays into a compacted hour are merged by the next run over it.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyarrow import fs as pafs

from ingest.lake import (PARTITION_COLUMNS, PART_SCHEMAS, TABLES, TIME_COLUMN, Lake, LakeError, _encode,
                         with_partition_columns)

#: table -> (PARTITION BY, ORDER BY) of the view that keeps one row per key (schemas/views.sql); None: the view keeps
#: every row, and only exact copies of a row are dropped
DEDUP: dict[str, tuple[str, str] | None] = {
    "events": ("event_id", "ingest_ts NULLS LAST"),
    "link_samples": ("origin, link, counter", "ts"),
    "topology": ("origin, fact, link, peer_name", "ts"),
    "incidents": None,
    "incident_evidence": None,
}
#: seconds after an hour's allowed lateness has passed before its folders are compacted (a batch still in flight,
#: an ingest worker catching up a few minutes)
MARGIN_S = 600.0
#: the most rows one merged part is made of: a folder's members are merged in runs of at most this many rows
#: (:func:`row_groups`), as a merge holds its rows in memory, ~1.5 kB a row at its peak (a break-it pass: 1.6M events
#: rows took 2.4 GB; one hour of a fleet's link samples may hold tens of millions), so a correlate worker's
#: compaction stays within a few hundred MB
MAX_ROWS = 200_000
#: the prefix of a merged part's name; a batch's parts are ``part-<batch>.parquet`` with the batch's source
#: coordinates, which never begin so
COMPACTED_PREFIX = "part-compacted-"
_HOUR_RE = re.compile(r"date=(\d{4}-\d{2}-\d{2})/hour=(\d{2})$")


@dataclass(frozen=True, slots=True)
class Member:
    """One part of a folder as listed: its name, size (bytes) and modification time (ns since the epoch)."""

    name: str
    size: int
    mtime_ns: int | None


@dataclass(slots=True)
class Folder:
    """One partition folder of a table (``rel``: ``events/kind=xid/date=2026-11-30/hour=03``) and its parts."""

    table: str
    rel: str
    hour: datetime
    members: list[Member] = field(default_factory=list)


@dataclass(slots=True)
class Merged:
    """What compacting one folder did (or, dry, would do): ``parts`` merged into ``name``; rows and bytes of the
    members and of the merged part (``bytes_after``: the encoded size; ``removed``: members removed, fewer than
    ``parts`` when one changed meanwhile)."""

    table: str
    rel: str
    parts: int
    rows_before: int
    rows_after: int
    bytes_before: int
    bytes_after: int
    name: str
    removed: int = 0
    #: merged parts written: more than one when the members' rows exceed ``MAX_ROWS`` (:func:`row_groups`)
    into: int = 1


def closed_before(now: datetime, min_age_s: float) -> datetime:
    """The latest end of an hour closed at ``now`` (UTC, on the hour): an hour is closed when it ended at least
    ``min_age_s`` seconds before ``now``; the hour starting at the returned time is the first one not closed."""
    t = now.astimezone(timezone.utc) - timedelta(seconds=min_age_s)
    return t.replace(minute=0, second=0, microsecond=0)


def default_min_age_s(allowed_lateness_s: float) -> float:
    """The age (seconds after its end) an hour must reach to be compacted: the allowed lateness plus ``MARGIN_S``."""
    return allowed_lateness_s + MARGIN_S


def merged_name(members: Iterable[str]) -> str:
    """``part-compacted-<sha256 of the sorted member names, 16 hex>.parquet``."""
    h = hashlib.sha256("\n".join(sorted(members)).encode()).hexdigest()[:16]
    return f"{COMPACTED_PREFIX}{h}.parquet"


def _fs(lake: Lake) -> tuple[pafs.FileSystem, str]:
    return (lake.fs, lake.base) if lake.remote else (pafs.LocalFileSystem(), str(lake.root))


def _is_part(name: str) -> bool:
    return name.startswith("part-") and name.endswith(".parquet")


def _members(fs: pafs.FileSystem, path: str) -> list[Member]:
    infos = fs.get_file_info(pafs.FileSelector(path, allow_not_found=True))
    return sorted((Member(i.base_name, i.size, i.mtime_ns) for i in infos
                   if i.type == pafs.FileType.File and _is_part(i.base_name)), key=lambda m: m.name)


def _dirs(fs: pafs.FileSystem, path: str) -> list[str]:
    infos = fs.get_file_info(pafs.FileSelector(path, allow_not_found=True))
    return sorted(i.base_name for i in infos if i.type == pafs.FileType.Directory)


def hour_folders(lake: Lake, hour: datetime) -> list[Folder]:
    """The partition folders of every table for ``hour`` (a UTC datetime; minutes ignored), with their parts, sorted
    by path; those that do not exist are left out. Raises OSError when the lake cannot be listed."""
    fs, base = _fs(lake)
    hour = hour.astimezone(timezone.utc).replace(minute=0, second=0, microsecond=0)
    tail = f"date={hour:%Y-%m-%d}/hour={hour:%H}"
    out = []
    for table in TABLES:
        prefixes = [table]
        if PARTITION_COLUMNS.get(table):  # events: one folder per kind=
            prefixes = [f"{table}/{d}" for d in _dirs(fs, f"{base}/{table}") if d != "kind=_schema"]
        for p in prefixes:
            members = _members(fs, f"{base}/{p}/{tail}")
            if members:
                out.append(Folder(table, f"{p}/{tail}", hour, members))
    return sorted(out, key=lambda f: f.rel)


def folders_before(lake: Lake, before: datetime) -> list[Folder]:
    """Every partition folder (of every table) of an hour that ended at or before ``before``, with its parts; one
    recursive listing per table. A folder whose ``date=``/``hour=`` names no hour (``hour=24``) is left out (it
    raised ValueError, which ended the whole compaction). Raises OSError when the lake cannot be listed."""
    fs, base = _fs(lake)
    out: dict[str, Folder] = {}
    for table in TABLES:
        infos = fs.get_file_info(pafs.FileSelector(f"{base}/{table}", recursive=True, allow_not_found=True))
        for i in infos:
            if i.type != pafs.FileType.File or not _is_part(i.base_name):
                continue
            rel = i.path[len(base) + 1:].rsplit("/", 1)[0]
            m = _HOUR_RE.search(rel)
            if m is None or "kind=_schema/" in rel:
                continue
            try:
                hour = datetime.strptime(f"{m[1]}T{m[2]}", "%Y-%m-%dT%H").replace(tzinfo=timezone.utc)
            except ValueError:  # hour=24, date=2026-02-30: no folder Lake.write makes; left as it is
                continue
            if hour + timedelta(hours=1) > before:
                continue
            f = out.setdefault(rel, Folder(table, rel, hour))
            f.members.append(Member(i.base_name, i.size, i.mtime_ns))
    for f in out.values():
        f.members.sort(key=lambda m: m.name)
    return [out[k] for k in sorted(out)]


def read_members(lake: Lake, folder: Folder) -> pa.Table:
    """The rows of every member of ``folder`` as one table of the table's schema (``TABLES``), in member order;
    a member's partition columns from the folder when it does not hold them, and a column of the table it does not
    hold (a part of an earlier schema) as nulls, as the views read it (``union_by_name``). Raises OSError, and
    ArrowInvalid for a member holding a column the table has not (a part of a later schema, or of another table:
    merging it would drop that column's values), one of another type, or a null where the table requires a value.
    """
    fs, base = _fs(lake)
    schema = TABLES[folder.table]
    tables = []
    for m in folder.members:
        part = pq.read_table(f"{base}/{folder.rel}/{m.name}", filesystem=fs)
        if extra := [c for c in part.column_names if c not in schema.names]:
            raise pa.ArrowInvalid(f"{m.name} holds {', '.join(extra)}, which {folder.table} has not: a part of "
                                  "another schema (merging it would drop those columns)")
        part = with_partition_columns(part, folder.table, folder.rel.split("/"), f"{folder.rel}/{m.name}")
        for f in schema:
            if f.name not in part.column_names:
                part = part.append_column(f.name, pa.nulls(part.num_rows, f.type))
        try:
            tables.append(part.select(schema.names).cast(schema))
        except ValueError as e:  # ArrowInvalid included; a null where the schema requires a value is a ValueError
            raise pa.ArrowInvalid(f"{m.name}: {e}") from e
    return pa.concat_tables(tables) if tables else schema.empty_table()


def dedup(table_name: str, table: pa.Table) -> pa.Table:
    """The rows of ``table`` (of ``table_name``) that the views could still answer: for a view keeping one row
    per key (``DEDUP``), the rows ranked first in the view's order (ties all kept: the view picks among them as it
    did); then one of each set of identical rows. Sorted by the table's time column (readers prune by its min/max),
    else in their order. Column types unchanged (rows are taken, not converted)."""
    if table.num_rows == 0:
        return table
    cols = ", ".join(f'"{c}"' for c in table.column_names)
    indexed = table.append_column("_i", pa.array(range(table.num_rows), pa.int64()))
    rank = DEDUP[table_name]
    inner = "SELECT * FROM indexed"
    if rank is not None:
        inner += f" QUALIFY rank() OVER (PARTITION BY {rank[0]} ORDER BY {rank[1]}) = 1"
    con = duckdb.connect(config={"threads": 1})
    try:
        con.register("indexed", indexed)
        keep = con.sql(f"SELECT min(_i) FROM ({inner}) GROUP BY {cols}").to_arrow_table()
    finally:
        con.close()
    kept = pc.take(keep.column(0), pc.sort_indices(keep.column(0)))  # row numbers, in the rows' order
    # one take of the rows (two, the kept rows then their sorted copy, held a third copy of the folder: +25 % peak)
    order = pc.sort_indices(pc.take(table.column(TIME_COLUMN[table_name]), kept))  # stable, nulls last
    return table.take(pc.take(kept, order))


def plan(lake: Lake, folder: Folder) -> tuple[pa.Buffer, Merged]:
    """Read and deduplicate ``folder``'s members: the merged part, encoded as ``Lake.write`` encodes a part (the
    part's schema, without the partition columns; ``ingest.lake._encode``), and what merging would do. Raises
    OSError / ArrowInvalid."""
    rows = read_members(lake, folder)
    n = rows.num_rows
    kept = dedup(folder.table, rows).drop_columns(list(PARTITION_COLUMNS.get(folder.table, ())))
    del rows  # the members' rows are not held while the merged part is encoded
    kept = kept.cast(PART_SCHEMAS[folder.table])
    data = _encode(kept, folder.table)
    merged = Merged(folder.table, folder.rel, len(folder.members), n, kept.num_rows,
                    sum(m.size for m in folder.members), data.size, merged_name(m.name for m in folder.members))
    return data, merged


def write_merged(lake: Lake, folder: Folder, data: pa.Buffer) -> str:
    """Write ``data`` (:func:`plan`) as ``folder``'s merged part, atomically (``Lake._store_part``: a temporary
    name, fsync, rename, fsync of the folder; one PUT on S3); return its name. Raises LakeError."""
    name = merged_name(m.name for m in folder.members)
    try:
        lake._store_part(data, folder.rel, name)
    except OSError as e:
        raise LakeError(f"writing {folder.rel}/{name} to {lake.location} failed: {e}") from e
    return name


def remove_members(lake: Lake, folder: Folder, keep: str) -> int:
    """Remove ``folder``'s members but ``keep`` (the merged part), each only if its size and modification time are
    those listed (a batch replayed since rewrote it: it stays for the next run); return how many were removed.
    A member already gone, or gone between the check and the removal (another compaction of the folder: it raised
    'Cannot delete file', a failure of the folder), counts as removed. Raises LakeError."""
    fs, base = _fs(lake)
    removed = 0
    try:
        for m in folder.members:
            if m.name == keep:
                continue
            path = f"{base}/{folder.rel}/{m.name}"
            info = fs.get_file_info(path)
            if info.type == pafs.FileType.NotFound:
                removed += 1
                continue
            if info.size != m.size or info.mtime_ns != m.mtime_ns:
                continue
            try:
                fs.delete_file(path)
            except OSError:  # another compaction of the folder removed it after the check: gone all the same
                if fs.get_file_info(path).type != pafs.FileType.NotFound:
                    raise
            removed += 1
    except OSError as e:
        raise LakeError(f"removing the parts merged into {folder.rel}/{keep} from {lake.location} failed: {e}") from e
    return removed


def _vanished(lake: Lake, folder: Folder) -> bool:
    """Whether a member of ``folder`` is gone since it was listed."""
    fs, base = _fs(lake)
    try:
        infos = fs.get_file_info([f"{base}/{folder.rel}/{m.name}" for m in folder.members])
    except OSError:
        return False
    return any(i.type == pafs.FileType.NotFound for i in infos)


def row_groups(lake: Lake, folder: Folder, max_rows: int | None = None) -> list[Folder]:
    """``folder`` as runs of its members (in name order) of at most ``max_rows`` rows each by their Parquet footers
    (default ``MAX_ROWS``; a member of more rows is a run of its own), the runs of one member left out: what
    :func:`compact_folder` merges, one merged part each. ``folder`` whole when a footer cannot be read (the merge
    then says why)."""
    max_rows = MAX_ROWS if max_rows is None else max_rows
    fs, base = _fs(lake)
    try:
        rows = [pq.read_metadata(f"{base}/{folder.rel}/{m.name}", filesystem=fs).num_rows for m in folder.members]
    except (OSError, pa.ArrowException):
        return [folder]
    runs: list[list[Member]] = [[]]
    total = 0
    for m, n in zip(folder.members, rows):
        if runs[-1] and total + n > max_rows:
            runs.append([])
            total = 0
        runs[-1].append(m)
        total += n
    return [Folder(folder.table, folder.rel, folder.hour, run) for run in runs if len(run) > 1]


def compact_folder(lake: Lake, folder: Folder, *, dry_run: bool = False) -> Merged | None:
    """Merge ``folder``'s parts (:func:`compact_run`), in runs of at most ``MAX_ROWS`` rows (:func:`row_groups`):
    what was merged, summed over the runs (``into`` merged parts); None when nothing was. Raises LakeError as
    :func:`compact_run` does (the runs merged before stay merged)."""
    out: Merged | None = None
    for run in row_groups(lake, folder):
        m = compact_run(lake, run, dry_run=dry_run)
        if m is None:
            continue
        if out is None:
            out = m
            continue
        out.parts += m.parts
        out.rows_before += m.rows_before
        out.rows_after += m.rows_after
        out.bytes_before += m.bytes_before
        out.bytes_after += m.bytes_after
        out.removed += m.removed
        out.into += 1
        out.name = m.name
    return out


def compact_run(lake: Lake, folder: Folder, *, dry_run: bool = False) -> Merged | None:
    """Merge ``folder``'s parts into one (module doc); None when it holds fewer than two. ``dry_run``: read and
    count, write and remove nothing. None too when a member was removed since the listing (another compaction of
    the folder has its rows: two at once made the later one say the folder could not be read, exit code 1, a
    failure counted). Raises LakeError (a member unreadable or of another schema included: nothing is removed
    then)."""
    if len(folder.members) < 2:
        return None
    try:
        data, merged = plan(lake, folder)
    except (OSError, pa.ArrowException) as e:
        if isinstance(e, OSError) and _vanished(lake, folder):
            return None  # another compaction of the folder (a second worker, the CLI) merged and removed it
        raise LakeError(f"cannot read the parts of {folder.rel} in {lake.location}: {e}") from e
    if not dry_run:
        write_merged(lake, folder, data)
        merged.removed = remove_members(lake, folder, merged.name)
    return merged


def compact(lake: Lake, *, hour: datetime | None = None, before: datetime | None = None,
            now: datetime | None = None, min_age_s: float = MARGIN_S + 300.0, dry_run: bool = False,
            progress: Callable[[int, int, str], None] | None = None,
            on_error: Callable[[Folder, LakeError], None] | None = None) -> list[Merged]:
    """Compact the closed hours' folders: those of ``hour`` alone, or of every hour ending at or before ``before``
    (default: every closed hour). An hour is closed when it ended ``min_age_s`` seconds before ``now`` (default:
    the clock); ``hour`` or ``before`` beyond that is cut to it (an open hour is never compacted: ``hour`` not
    closed gives []). ``progress(done, total, folder)`` after each folder. Returns what was merged, in folder
    order. Raises LakeError when the lake cannot be listed, and when a folder cannot be compacted (a corrupt
    part: nothing of that folder is removed) unless ``on_error(folder, error)`` is given, which is then called and
    the other folders are compacted (the folders merged before stay merged either way)."""
    limit = closed_before(now or datetime.now(timezone.utc), min_age_s)
    try:
        if hour is not None:
            hour = hour.astimezone(timezone.utc).replace(minute=0, second=0, microsecond=0)
            folders = hour_folders(lake, hour) if hour + timedelta(hours=1) <= limit else []
        else:
            folders = folders_before(lake, min(before, limit) if before is not None else limit)
    except OSError as e:
        raise LakeError(f"cannot list the lake at {lake.location}: {e}") from e
    todo = [f for f in folders if len(f.members) > 1]
    out = []
    for n, f in enumerate(todo, 1):
        try:
            m = compact_folder(lake, f, dry_run=dry_run)
        except LakeError as e:
            if on_error is None:
                raise
            on_error(f, e)
            m = None
        if m is not None:
            out.append(m)
        if progress is not None:
            progress(n, len(todo), f.rel)
    return out
