"""The durable store: a hive-partitioned Parquet lake, written atomically per batch.

Layout (DESIGN.md, Storage)::

    <lake>/events/kind=<kind>/date=<YYYY-MM-DD>/hour=<HH>/part-<batch>.parquet
    <lake>/link_samples/date=…/hour=…/part-<batch>.parquet
    <lake>/topology/date=…/hour=…/part-<batch>.parquet
    <lake>/incidents/date=…/hour=…/part-<batch>.parquet
    <lake>/incident_evidence/date=…/hour=…/part-<batch>.parquet

A partition key is a folder, not also a column of the part (as pyarrow's ``write_dataset`` and DuckDB's
``COPY … PARTITION_BY`` write them): an events part holds every column of the table but ``kind``, which its
``kind=`` folder names, so hive readers (pyarrow, DuckDB, polars) read the table's columns once each. Parts an
earlier version wrote hold ``kind`` as well; the DuckDB views and :func:`read_part` read both.

The lake is a local folder (a path or ``file://`` URL) or an S3 prefix
(``s3://bucket/prefix``; credentials, region and endpoint from the standard
AWS environment: ``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``,
``AWS_REGION``, ``AWS_ENDPOINT_URL`` for S3-compatible stores, or the
instance role). Locally a part is written to a temporary name, fsynced, then
renamed into place; on S3 a part is one PUT, which becomes visible whole or
not at all. Either way readers (DuckDB, analysts) never see half a file. The part name comes from
the batch's source coordinates, so a batch replayed after a crash rewrites
the same file instead of adding a duplicate; the DuckDB views also keep one
row per ``event_id``. Several ingest workers can write at once (each writes
its own files); DuckDB reads them all. Each table has an empty ``_schema``
part so its view works on an empty lake.
"""

from __future__ import annotations

import errno
import os
import re
import uuid
import weakref
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
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
#: the Parquet codec of each column, per table: zstd for the columns of long text (the raw line, ids, origins,
#: JSON), snappy for the others. Arrow makes a zstd compressor per column chunk (~10 µs, most of it
#: ``ZSTD_createCCtx``), which on the small parts of a batch (~100 rows, 33 columns) was ~40 % of a part's
#: encoding; snappy's is nearly free, and on short or mostly null columns it compresses about as well. The
#: 104 parts of 1M lines of the mix: 0.088 → 0.063 CPU s of encoding, 1.011 → 1.054 MB (+4 %). Both are
#: standard Parquet codecs that DuckDB and every Parquet reader read.
_ZSTD = {"events": {"event_id", "message", "origin", "details"}, "link_samples": {"origin"},
         "topology": {"origin"}, "incidents": {"explanation", "next_action", "doc"},
         "incident_evidence": {"incident_id", "event_id"}}


def _leaf_paths(schema: pa.Schema) -> list[str]:
    """The Parquet column paths of ``schema`` (a list column ``hosts`` is ``hosts.list.element``), which is what
    per-column writer settings are keyed by."""
    sink = pa.BufferOutputStream()
    pq.write_table(schema.empty_table(), sink)
    meta = pq.read_metadata(pa.BufferReader(sink.getvalue()))
    return [meta.schema.column(i).path for i in range(meta.num_columns)]


#: table -> Parquet column path -> codec (a nested column's leaves take their top-level column's)
CODECS: dict[str, dict[str, str]] = {
    name: {c: "zstd" if c.split(".", 1)[0] in _ZSTD[name] else "snappy" for c in _leaf_paths(schema)}
    for name, schema in TABLES.items()}
#: the columns a table's folders hold (``kind=…``) and its parts do not; ``date`` and ``hour`` are folders only
PARTITION_COLUMNS: dict[str, tuple[str, ...]] = {"events": ("kind",)}
#: table -> the schema of its parts: the table's without its ``PARTITION_COLUMNS``
PART_SCHEMAS: dict[str, pa.Schema] = {
    name: pa.schema([f for f in schema if f.name not in PARTITION_COLUMNS.get(name, ())])
    for name, schema in TABLES.items()}
#: the time column each table is partitioned by
TIME_COLUMN = {"events": "ts", "link_samples": "ts", "topology": "ts", "incidents": "written_at",
               "incident_evidence": "written_at"}


class LakeError(OSError):
    """A write to the lake failed (read-only folder, full disk …). No part is half-written (each appears whole or
    not at all), but the batch's other parts that were stored stay visible until the caller's retry, which
    rewrites the same names: no event is stored twice (it said "nothing of the batch is visible": a break-it pass
    saw 19 of a batch's 20 parts after the 20th failed)."""


class LakeReplaced(LakeError):
    """The local lake this process initialised was deleted, moved or replaced while it ran (:meth:`Lake.check`):
    neither a writer nor a reader of this process uses the lake now at that path until it is restarted."""


def lake_path(root: str) -> Path:
    """The local folder of a local lake URL (``file:///abs``, ``file://localhost/abs`` as RFC 8089 allows, or
    a path). Raises :class:`LakeError` for other schemes and for a ``file://`` URL naming another host."""
    if root.startswith("file://"):
        rest = root[len("file://"):]
        host, slash, path = rest.partition("/")
        if host not in ("", "localhost"):
            raise LakeError(f"a file:// lake is on this host: file:///{path} or file://localhost/{path}, not {root}")
        if not slash:
            raise LakeError(f"{root!r} names no folder")
        return Path(slash + path)
    if re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://", root):  # ./a://b is a path
        raise LakeError(f"not a local lake: {root}")
    return Path(root)


def _placeholder(table_name: str) -> str:
    """The path of a table's empty ``_schema`` part under the lake's root."""
    folder = "kind=_schema/date=1970-01-01/hour=00" if table_name == "events" else "date=1970-01-01/hour=00"
    return f"{table_name}/{folder}/_schema.parquet"


class Lake:
    """A Parquet lake (see module doc) at a local path or ``s3://bucket/prefix``. Methods raise :class:`LakeError`.

    ``location`` is what DuckDB globs read (a folder path, or the ``s3://`` URL);
    ``root`` is the local folder (``None`` for an S3 lake).
    """

    def __init__(self, root: str | Path) -> None:
        url = str(root)
        self.remote = url.startswith("s3://")
        if self.remote:
            from pyarrow import fs as pafs

            try:
                self.fs, path = pafs.FileSystem.from_uri(url.rstrip("/"))
            except (OSError, ValueError, pa.ArrowException) as e:
                raise LakeError(f"cannot open the lake {url}: {e}") from e
            self.base = path.rstrip("/")
            self.root: Path | None = None
            self.given: Path | None = None
            self.location = f"s3://{self.base}"
        else:
            self.root = lake_path(url).resolve()
            #: the path as given (absolute, links not followed): what _check_same asks, so a link re-pointed at
            #: another lake (``ln -sfn``) is a lake replaced, as a folder moved away and another put there is
            self.given = lake_path(url).absolute()
            self.base = str(self.root)
            self.location = self.base
        #: table -> an open descriptor of its ``_schema`` part as :meth:`init` found or made it (a local lake)
        self._placeholders: dict[str, int] = {}

    def __repr__(self) -> str:
        return f"Lake({self.location!r})"

    def init(self) -> None:
        """Create the table folders with their empty ``_schema`` parts (idempotent). A local lake remembers which
        files they are: :meth:`write`, :meth:`put_bytes` and a later ``init`` refuse a lake whose placeholders went
        since (:meth:`check`, :class:`LakeReplaced`): a reader's ``init`` made a deleted lake again within seconds,
        empty, and ``serve`` answered every route empty with ``/healthz`` ok (a fresh user's trial)."""
        self.check()
        try:
            for name, schema in TABLES.items():
                rel = _placeholder(name)
                if not self.exists(rel):  # never over another's: two inits at once (a second worker, serve) each
                    # made it and the later replaced the file the earlier held, which then refused its own fresh lake
                    self._write_part(PART_SCHEMAS[name].empty_table(), rel.rsplit("/", 1)[0], "_schema.parquet",
                                     replace=False)
                if not self.remote and name not in self._placeholders:
                    # held open: the file's inode stays taken, so a placeholder made again after a delete is
                    # another inode (a freed one is reused at once: ext4, overlayfs)
                    fd = os.open(self.root / rel, os.O_RDONLY | os.O_CLOEXEC)
                    weakref.finalize(self, os.close, fd)
                    self._placeholders[name] = fd
        except OSError as e:
            raise LakeError(f"cannot initialise the lake at {self.location}: {e}") from e

    def check(self) -> None:
        """Raise :class:`LakeReplaced` when a ``_schema`` part this lake's :meth:`init` found or made is gone or is
        another file (:meth:`_check_same`); nothing for a lake not initialised here, or an S3 lake."""
        for name in self._placeholders:
            self._check_same(name)

    def _check_same(self, table_name: str) -> None:
        """Raise :class:`LakeReplaced` when the ``_schema`` part of ``table_name`` that :meth:`init` found or made is
        gone or is another file: the lake was deleted (or moved) while this process ran. Its folders were made again
        by the next write (``mkdir(parents=True)``), and a reader's ``init`` made new placeholders: ``firstfault run``
        went on healthy, committing batches into a fresh lake, while every event stored before was gone (801 of 940
        in a break-it pass), and nothing said so. A lake folder now a file, or a symbolic link that loops, is replaced
        too (their ``NotADirectoryError`` and ``ELOOP`` escaped as such: ``serve`` answered 500s, a break-it pass); any
        other error reading the path is a :class:`LakeError`. A lake this process did not ``init`` is not checked."""
        fd = self._placeholders.get(table_name)
        if fd is None:
            return
        try:
            st, held = (self.given / _placeholder(table_name)).stat(), os.fstat(fd)
            same = (st.st_dev, st.st_ino) == (held.st_dev, held.st_ino)
        except (FileNotFoundError, NotADirectoryError):  # gone, or its folder is now a file
            same = False
        except OSError as e:
            if e.errno != errno.ELOOP:
                raise LakeError(f"cannot check the lake at {self.location}: {e}") from e
            same = False  # the lake's path is now a symbolic link that loops: not the lake init found
        if not same:
            raise LakeReplaced(f"the lake at {self.location} was deleted or replaced while this process ran (its "
                            f"{_placeholder(table_name)} is gone or another file): nothing more is stored or "
                            "committed; restart the process to use the lake now there")

    # --- whole objects (reports) ---------------------------------------------------------------
    def exists(self, rel: str) -> bool:
        """Whether ``<lake>/<rel>`` exists."""
        if self.remote:
            from pyarrow import fs as pafs

            return self.fs.get_file_info(f"{self.base}/{rel}").type != pafs.FileType.NotFound
        return (self.root / rel).exists()

    def put_bytes(self, rel: str, data: bytes) -> str:
        """Write ``data`` to ``<lake>/<rel>`` atomically (replacing it); return its location. Raises LakeError
        (:class:`LakeReplaced` for a lake deleted or replaced since :meth:`init`: the hourly report of a ``run``
        whose lake was deleted was stored in the folders a reader made again)."""
        self.check()
        try:
            if self.remote:
                with self.fs.open_output_stream(f"{self.base}/{rel}") as f:
                    f.write(data)
                return f"s3://{self.base}/{rel}"
            final = self.root / rel
            final.parent.mkdir(parents=True, exist_ok=True)
            _atomic_bytes(data, final)
            return str(final)
        except OSError as e:
            raise LakeError(f"writing {rel} to {self.location} failed: {e}") from e

    def write(self, table_name: str, table: pa.Table, batch_id: str) -> list[Path]:
        """Write ``table`` as parts named after ``batch_id``; return the files written.

        Each part is atomic on its own (temporary name, fsync, rename, fsync of
        its folder). The parts are encoded one after the other in the calling
        thread, then stored side by side on a few threads (each storing its
        share in turn), so their fsyncs overlap instead of queueing (encoding
        on those threads too made Arrow's allocator, mimalloc, hand memory
        back and forth between threads: in the
        real worker 0.10 of the write's 0.31 CPU s per 1M lines were the
        kernel's, during encoding). If any part fails, :class:`LakeError` is
        raised after the others have finished; the caller retries the whole
        batch, which rewrites the same names.
        """
        if table.num_rows == 0:
            return []
        schema = TABLES[table_name]
        table = table.cast(schema) if table.schema != schema else table
        jobs: list[tuple[Lake, pa.Buffer, str, str]] = []
        name = f"part-{batch_id}.parquet"
        try:
            self._check_same(table_name)
            for keys, part in _partitions(table_name, table):
                rel = "/".join([table_name, *(f"{k}={v}" for k, v in keys)])
                jobs.append((self, _encode(part, table_name), rel, name))
            if len(jobs) == 1:
                self._store_part(*jobs[0][1:])
            else:  # one task per thread, each storing its share in turn: a task per part cost ~0.15 ms of CPU
                # in thread hand-offs (175 parts of 1M lines of the mix: 87 → 72 ms of storing, as fast in wall time)
                shares = [jobs[k::_THREADS] for k in range(min(_THREADS, len(jobs)))]
                errors = [e for share in _POOL.map(_try_store_all, shares) for e in share if e is not None]
                if errors:
                    raise errors[0]
        except OSError as e:
            raise LakeError(f"writing {table_name} batch {batch_id} to {self.location} failed: {e}") from e
        return [self._path(rel, name) for _, _, rel, name in jobs]

    def _path(self, rel: str, name: str) -> Path | str:
        return f"s3://{self.base}/{rel}/{name}" if self.remote else self.root / rel / name

    def _write_part(self, table: pa.Table, rel: str, name: str, *, replace: bool = True) -> None:
        self._store_part(_encode(table, rel.split("/", 1)[0]), rel, name, replace=replace)

    def _store_part(self, data: pa.Buffer, rel: str, name: str, *, replace: bool = True) -> None:
        """Put one encoded part (:func:`_encode`) at ``<lake>/<rel>/<name>``: one PUT, or atomically on disk
        (``replace=False``: not over a file there by then, :func:`_atomic_bytes`; a PUT replaces)."""
        if self.remote:  # one PUT: the object appears whole or not at all
            with self.fs.open_output_stream(f"{self.base}/{rel}/{name}") as f:
                f.write(data)
            return
        d = self.root / rel
        d.mkdir(parents=True, exist_ok=True)
        _atomic_bytes(data, d / name, replace=replace)

    def files(self, table_name: str) -> list[Path] | list[str]:
        """The Parquet files of a table (paths, or ``s3://`` URLs), sorted."""
        if self.remote:
            from pyarrow import fs as pafs

            infos = self.fs.get_file_info(pafs.FileSelector(f"{self.base}/{table_name}", recursive=True,
                                                            allow_not_found=True))
            return sorted(f"s3://{i.path}" for i in infos if i.path.endswith(".parquet"))
        return sorted((self.root / table_name).rglob("*.parquet"))


def _atomic_bytes(data: pa.Buffer | bytes, final: Path, *, replace: bool = True) -> None:
    """Write ``data`` to a temporary name beside ``final``, fsync, rename into place, fsync the folder.
    ``replace=False``: a ``final`` that exists by then is left as it is (a hard link of the temporary file, which
    fails on an existing name; a plain rename where the file system has no hard links)."""
    tmp = final.with_name(f".{final.name}.{uuid.uuid4().hex}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        finally:
            os.close(fd)
        if replace:
            os.replace(tmp, final)
        else:
            try:
                os.link(tmp, final)
            except FileExistsError:
                pass
            except OSError:  # no hard links here (EPERM, ENOTSUP): the rename, unless the file came meanwhile
                if not final.exists():
                    os.replace(tmp, final)
        dfd = os.open(final.parent, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    finally:
        if tmp.exists():
            tmp.unlink()


def _encode(table: pa.Table, table_name: str) -> pa.Buffer:
    """``table`` (rows of ``table_name``) as the bytes of one Parquet file.

    Parquet is encoded in memory by Arrow's native writer (no Python file object in the loop), then written
    with one system call (locally) or one PUT (S3). Dictionary pages only pay off on parts with many rows; on
    the small parts of a batch they cost ~40 % of the writer's CPU for nothing. A small part keeps min/max
    statistics only for its time column (what readers prune parts by); no part stores the Arrow schema, as the
    Parquet types read back to the same Arrow and DuckDB types (tests/test_lake.py). Both make a 30-row events
    part ~40 % smaller (12.3 → 7.5 kB) and its encoding ~12 % cheaper. Codecs per column (``CODECS``): zstd
    for the long text, snappy for the rest.
    """
    sink = pa.BufferOutputStream()
    small = table.num_rows < _DICTIONARY_ROWS
    pq.write_table(table, sink, compression=CODECS[table_name], use_dictionary=not small, store_schema=False,
                   write_statistics=[TIME_COLUMN[table_name]] if small else True)
    return sink.getvalue()


def _try_store(job: tuple[Lake, pa.Buffer, str, str]) -> OSError | None:
    lake, data, rel, name = job
    try:
        lake._store_part(data, rel, name)
    except OSError as e:
        return e
    return None


def _try_store_all(jobs: list[tuple[Lake, pa.Buffer, str, str]]) -> list[OSError | None]:
    """:func:`_try_store` of each job in turn (every one is tried, whatever an earlier one gave)."""
    return [_try_store(job) for job in jobs]


#: parts of one batch are written concurrently (fsync waits overlap); a few threads suffice
_THREADS = 4
_POOL = ThreadPoolExecutor(max_workers=_THREADS, thread_name_prefix="lake-write")
_HOUR_US = 3600 * 1_000_000
_DICTIONARY_ROWS = 1024


def _partitions(table_name: str, table: pa.Table) -> Iterable[tuple[list[tuple[str, str]], pa.Table]]:
    """(partition keys, rows) per partition, in key order; rows keep their order; the rows without the
    table's ``PARTITION_COLUMNS`` (their folder names them).

    Keys are computed column-wise: the hour of each row's time (a null time
    counts as the epoch), then one label per distinct (kind,) hour.
    """
    col = TIME_COLUMN[table_name]
    us = table.column(col).cast(pa.int64()).fill_null(0).to_numpy()
    hours = np.floor_divide(us, _HOUR_US)
    if table_name == "events":
        kinds = table.column("kind").combine_chunks().dictionary_encode()
        names = kinds.dictionary.to_pylist() + [None]  # a null kind gets the last label
        kind_ix = kinds.indices.fill_null(len(names) - 1).to_numpy().astype(np.int64)
        keys = np.stack([kind_ix, hours], axis=1)
    else:
        names = []
        keys = hours[:, None]
    uniq, inverse = np.unique(keys, axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    groups = []
    for g, key in enumerate(uniq.tolist()):
        dt = datetime.fromtimestamp(key[-1] * 3600, tz=timezone.utc)
        k = [("date", dt.strftime("%Y-%m-%d")), ("hour", dt.strftime("%H"))]
        if table_name == "events":
            k.insert(0, ("kind", names[key[0]]))
        groups.append((tuple(k), g))
    table = table.drop_columns(list(PARTITION_COLUMNS.get(table_name, ())))
    if len(uniq) == 1:
        yield list(groups[0][0]), table
        return
    # one take puts each partition's rows together (stable: rows keep their order), then zero-copy slices
    order = np.argsort(inverse, kind="stable")
    grouped = table.take(pa.array(order))
    offsets = np.concatenate([[0], np.cumsum(np.bincount(inverse, minlength=len(uniq)))]).tolist()
    for k, g in sorted(groups):
        yield list(k), grouped.slice(offsets[g], offsets[g + 1] - offsets[g])


def read_part(path: str | Path, table_name: str) -> pa.Table:
    """One local part of ``table_name`` as a table of its schema (``TABLES``), its ``PARTITION_COLUMNS`` taken
    from the ``key=value`` folders of ``path`` (``…/events/kind=xid/date=…/hour=…/part-….parquet``); a part an
    earlier version wrote, which holds them too, reads the same. Raises OSError / ``pyarrow.ArrowInvalid`` for a
    file that is not such a part."""
    path = Path(path)
    part = with_partition_columns(pq.read_table(path), table_name, path.parent.parts, str(path))
    return part.select(TABLES[table_name].names).cast(TABLES[table_name])


def with_partition_columns(part: pa.Table, table_name: str, folders: Iterable[str], where: str) -> pa.Table:
    """``part`` (a part of ``table_name``) with the ``PARTITION_COLUMNS`` it does not hold, as strings from the
    ``key=value`` names among ``folders`` (a part an earlier version wrote holds them itself). Raises
    ``pyarrow.ArrowInvalid`` naming ``where`` when neither gives one."""
    keys = dict(p.split("=", 1) for p in folders if "=" in p)
    for name in PARTITION_COLUMNS.get(table_name, ()):
        if name not in part.column_names:
            if name not in keys:
                raise pa.ArrowInvalid(f"{where}: neither its folders nor the part name its {name}")
            part = part.append_column(name, pa.array([keys[name]] * part.num_rows, pa.string()))
    return part


def filter_events(table: pa.Table, kinds: set[str]) -> pa.Table:
    """Rows of ``table`` whose kind is in ``kinds``."""
    return table.filter(pc.is_in(table.column("kind"), value_set=pa.array(sorted(kinds))))
