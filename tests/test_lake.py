"""The lake's Parquet parts (``ingest.lake``): what a reader gets back from a part is the table's schema, for
pyarrow and DuckDB alike, whether the part is small (time-column statistics only, no dictionary pages) or
large; no part stores the Arrow schema; each column has its codec (``ingest.lake.CODECS``: zstd or snappy)."""

from __future__ import annotations

import os

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from api.demo import SAMPLES
from api.diagnose import diagnose_paths
import ingest.lake
from ingest.lake import _DICTIONARY_ROWS, CODECS, PART_SCHEMAS, TABLES, TIME_COLUMN, Lake, read_part
from schemas.incidents import incident_rows
from schemas.settings import Settings


@pytest.fixture(scope="module")
def tables():
    """Rows of every lake table from the bundled real samples."""
    _, batch, incidents = diagnose_paths([SAMPLES], Settings())
    inc, ev = incident_rows(incidents, 1_764_547_200_000_000)
    return {"events": batch.events, "link_samples": batch.link_samples, "topology": batch.topology,
            "incidents": inc, "incident_evidence": ev}


def _one_hour(name: str, t: pa.Table) -> pa.Table:
    """``t``'s rows all moved into one hour (and, for events, one kind), so a write gives one part."""
    col = TIME_COLUMN[name]
    t = t.set_column(t.schema.get_field_index(col), col, pa.array([1_764_547_200_000_000] * t.num_rows,
                                                                  pa.timestamp("us", tz="UTC")))
    if name == "events":
        t = t.set_column(t.schema.get_field_index("kind"), "kind", pa.array(["xid"] * t.num_rows))
    return t.cast(TABLES[name])


@pytest.mark.parametrize("name", sorted(TABLES))
def test_small_and_large_parts_read_back_as_the_tables_schema(tables, tmp_path, name):
    small = _one_hour(name, tables[name])
    assert 0 < small.num_rows < _DICTIONARY_ROWS
    large = pa.concat_tables([small] * (_DICTIONARY_ROWS // small.num_rows + 1))
    lake = Lake(str(tmp_path))
    [s_path] = lake.write(name, small, "small")
    [l_path] = lake.write(name, large, "large")
    for path, rows in ((s_path, small), (l_path, large)):
        back = pq.read_table(path)
        assert back.schema.equals(PART_SCHEMAS[name]), (path, back.schema)  # events: no kind (its folder's)
        assert back.equals(rows.select(PART_SCHEMAS[name].names))
        assert read_part(path, name).equals(rows)
        assert pq.read_schema(path).metadata is None or b"ARROW:schema" not in pq.read_schema(path).metadata
    described = [duckdb.sql(f"DESCRIBE SELECT * FROM read_parquet('{p}')").fetchall() for p in (s_path, l_path)]
    assert described[0] == described[1]
    assert dict((c[0], c[1]) for c in described[0])[TIME_COLUMN[name]] == "TIMESTAMP WITH TIME ZONE"
    # statistics: a small part has them for its time column only, a large one for every column
    for path, every in ((s_path, False), (l_path, True)):
        rg = pq.ParquetFile(path).metadata.row_group(0)
        with_stats = {rg.column(i).path_in_schema for i in range(rg.num_columns) if rg.column(i).is_stats_set}
        assert (with_stats == {c.path_in_schema for c in map(rg.column, range(rg.num_columns))}) if every \
            else with_stats == {TIME_COLUMN[name]}, with_stats
        # codecs: zstd for the long text, snappy for the rest (standard Parquet codecs; DuckDB reads every row)
        codecs = {rg.column(i).path_in_schema: rg.column(i).compression for i in range(rg.num_columns)}
        assert codecs == {c: CODECS[name][c].upper() for c in codecs}, codecs
        assert "ZSTD" in codecs.values() and "SNAPPY" in codecs.values()
        [(n,)] = duckdb.sql(f"SELECT count(*) FROM read_parquet('{path}')").fetchall()
        assert n == pq.read_metadata(path).num_rows


def test_a_bad_part_spoils_only_its_own_tables_views_and_says_which_file(tables, tmp_path):
    """One zero-byte ``.parquet`` under ``events/`` made every view fail (``/links`` and ``/incidents`` answered
    503, ``firstfault sql`` a traceback), and a part whose ``ts`` is text turned the whole column to VARCHAR
    (the API answered 500; a break-it pass). Now the views over that table raise the reason, naming the file,
    when a query reads them (``api.store.connect``), and the other tables answer as before."""
    from api.store import Store, StoreError

    lake = Lake(str(tmp_path / "lake"))
    lake.init()
    for name in TABLES:
        lake.write(name, _one_hour(name, tables[name]), "b1")
    store = Store(lake)
    counts = {v: store.query(f"SELECT count(*) AS n FROM {v}")[0]["n"] for v in
              ("events", "link_samples", "incidents", "incident_evidence")}
    assert counts["events"] > 0 and counts["link_samples"] > 0 and counts["incidents"] > 0
    zero = tmp_path / "lake" / "events" / "kind=xid" / "date=2025-12-01" / "hour=00" / "part-zero.parquet"
    zero.write_bytes(b"")
    with pytest.raises(StoreError, match=r"events cannot be read: .*part-zero\.parquet.* too small"):
        store.query("SELECT count(*) FROM events")
    with pytest.raises(StoreError, match="events cannot be read"):  # a query naming columns binds, then fails
        store.query("SELECT event_id, ts FROM events WHERE host = 'x'")
    # POST /sql answers it with a 503 (README), not the 400 of a query's own fault (a break-it pass found a 400)
    for q, unavailable in (("SELECT count(*) FROM events", True), ("SELECT nosuch FROM link_samples", False)):
        with pytest.raises(StoreError) as e:
            store.stream_sql(q, max_rows=10, timeout_s=30, max_bytes=1 << 20)
        assert e.value.unavailable is unavailable, (q, str(e.value))
    # the table macro over the same parts (the API's time-range reads) says the same, not "does not exist"
    with pytest.raises(StoreError, match=r"events cannot be read: .*part-zero\.parquet"):
        store.query("SELECT count(*) FROM events_between(TIMESTAMPTZ '2000-01-01', TIMESTAMPTZ '2100-01-01')")
    assert {v: store.query(f"SELECT count(*) AS n FROM {v}")[0]["n"] for v in
            ("link_samples", "incidents", "incident_evidence")} == {k: v for k, v in counts.items() if k != "events"}
    zero.unlink()
    old = zero.with_name("part-old.parquet")
    pq.write_table(pa.table({"event_id": ["x"], "ts": ["yesterday"], "host": ["h"]}), old)
    import api.store

    api.store._COLUMNS_CHECKED.clear()  # as a minute later: a clean check is trusted for _RECHECK_S seconds
    with pytest.raises(StoreError, match=r"column ts reads as VARCHAR, not TIMESTAMP WITH TIME ZONE: .*part-old"):
        store.query("SELECT count(*) FROM events")
    with pytest.raises(StoreError, match=r"events cannot be read: column ts reads as VARCHAR"):
        store.query("SELECT count(*) FROM events_between(TIMESTAMPTZ '2000-01-01', TIMESTAMPTZ '2100-01-01')")
    # a part with a column the schema does not have: the views keep the table's columns (a BLOB column there
    # made GET /events answer 500, and every event gained the key; a break-it pass)
    old.unlink()
    pq.write_table(pa.table({"event_id": ["x"], "ts": pa.array([1_764_547_200_000_000], pa.timestamp("us", tz="UTC")),
                             "zz_extra": [b"\x00"]}), old)
    api.store._COLUMNS_CHECKED.clear()
    for q in ("SELECT * FROM events LIMIT 1",
              "SELECT * FROM events_between(TIMESTAMPTZ '2000-01-01', TIMESTAMPTZ '2100-01-01') LIMIT 1"):
        assert list(store.query(q)[0]) == TABLES["events"].names
    # a bad part of incidents/ spoils the views over it (incidents, incident_evidence), not events
    old.unlink()
    (tmp_path / "lake" / "incidents" / "date=2025-12-01" / "hour=00" / "part-bad.parquet").write_bytes(b"PAR1")
    for view in ("incident_versions", "incidents", "incident_evidence"):
        with pytest.raises(StoreError, match=f"{view} cannot be read"):
            store.query(f"SELECT count(*) FROM {view}")
    assert store.query("SELECT count(*) AS n FROM events")[0]["n"] == counts["events"]


def test_the_readmes_example_questions_run_on_a_lake_of_the_samples(tables, tmp_path):
    """Every query of the README's "Example questions" block runs on a lake of the bundled samples (the tables
    written as the service writes them). The top-GPUs question leaves out what needs no action: it counted the
    benign PCIe capability lines of node008 and node009 (a fresh-user trial)."""
    import re as _re
    from pathlib import Path

    from api.store import Store

    text = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    block = _re.search(r"Example questions.*?```sql\n(.*?)```", text, _re.S).group(1)
    queries = [q.query for q in duckdb.extract_statements(block)]
    assert len(queries) == 3
    lake = Lake(str(tmp_path / "lake"))
    lake.init()
    for name in TABLES:
        lake.write(name, tables[name], "b1")
    store = Store(lake)
    results = [store.query(q) for q in queries]
    top = results[1]
    assert top and all(r["host"] not in ("node008", "node009") for r in top)
    severities = {r["host"]: r["severity"] for r in store.query(
        "SELECT initiator_host AS host, severity FROM incidents WHERE initiator_device_type = 'gpu'")}
    assert {"node008", "node009"} <= {h for h, s in severities.items() if s == "info"}
    assert results[2] and all(r["n"] > 0 for r in results[2])
    # the mean time from an initiator counts incidents that name one: a hang with no single culprit measured its
    # watchdog's timeout as a propagation delay (a fresh user's trial)
    unnamed = store.query("SELECT count(*) AS n FROM incidents WHERE initiator_kind IS NULL")[0]["n"]
    named = store.query("SELECT count(*) AS n FROM incidents i WHERE initiator_kind IS NOT NULL AND EXISTS ("
                        "SELECT 1 FROM incident_evidence x WHERE x.incident_id = i.id AND x.role = 'downstream')")[0]["n"]
    assert unnamed > 0 and sum(r["n"] for r in results[2]) == named


def test_lake_path_reads_the_file_urls_of_this_host_and_paths():
    """``file:///abs`` and RFC 8089's ``file://localhost/abs`` are the folder /abs (``file://localhost/x`` was the
    relative path ``localhost/x``); another host's URL, another scheme and ``file://`` alone are errors; a
    relative path with ``://`` inside a folder name is a path."""
    from pathlib import Path

    from ingest.lake import LakeError, lake_path

    assert lake_path("file:///srv/lake") == lake_path("file://localhost/srv/lake") == Path("/srv/lake")
    assert lake_path("./a://b") == Path("./a://b") and lake_path("lake") == Path("lake")
    for bad in ("file://nfs1/srv/lake", "file://", "ftp://x/y"):
        with pytest.raises(LakeError):
            lake_path(bad)


def test_a_link_with_counter_samples_only_keeps_its_gpu_index(tmp_path):
    """``/links`` of a link that only counter samples name (``nvidia-smi nvlink -e``) said ``gpu_index`` null though
    its rows hold it (a break-it pass)."""
    from api.store import Store
    from schemas.samples import LINK_SAMPLES_SCHEMA

    row = {f.name: None for f in LINK_SAMPLES_SCHEMA}
    row.update(host="node31", ts=1_764_547_200_000_000, gpu_index=0, link=0, counter="CRC Errors", value=5.0,
               origin="file:node31.log")
    lake = Lake(tmp_path / "lake")
    lake.init()
    lake.write("link_samples", pa.Table.from_pylist([row], LINK_SAMPLES_SCHEMA), "b0")
    (got,) = Store(lake).links(host="node31")
    assert (got["gpu"], got["gpu_index"], got["counters"]["CRC Errors"]["value"]) == ("gpu0", 0, 5.0)


def _old_writer(monkeypatch) -> None:
    """The writer as an earlier version had it: events parts (and the ``_schema`` placeholder) hold ``kind`` too."""
    monkeypatch.setattr(ingest.lake, "PARTITION_COLUMNS", {})
    monkeypatch.setattr(ingest.lake, "PART_SCHEMAS", dict(TABLES))


def test_hive_readers_read_the_events_table_with_its_types(tables, tmp_path):
    """pyarrow (``read_table``, ``dataset(partitioning="hive")``) and DuckDB's hive read of ``<lake>/events`` give
    the table's columns and types (schemas/events.py) plus the folders' ``date`` and ``hour``: a part holds no
    ``kind``, which its folder names. Parts that held it too made ``pq.read_table`` fail ("Unable to merge: Field
    kind has incompatible types: string vs dictionary")."""
    import pyarrow.dataset as ds

    lake = Lake(str(tmp_path / "lake"))
    lake.init()
    lake.write("events", tables["events"], "b1")
    ev = tables["events"].cast(TABLES["events"])
    n = ev.num_rows
    for f in lake.files("events"):
        assert "kind" not in pq.read_schema(f).names
    by_read_table = pq.read_table(lake.root / "events")  # pyarrow gives a partition key as a dictionary of strings
    by_dataset = ds.dataset(lake.root / "events", format="parquet", partitioning="hive").to_table()
    for t in (by_read_table, by_dataset):
        assert t.num_rows == n  # the placeholder has no rows
        got = t.select(ev.column_names).cast(TABLES["events"])
        by_id = lambda rows: sorted(rows, key=lambda r: r["event_id"])  # noqa: E731
        assert by_id(got.to_pylist()) == by_id(ev.to_pylist())
    assert by_dataset.schema.field("kind").type == pa.string()
    assert [(f.name, f.type) for f in by_dataset.select(ev.column_names).schema] == \
        [(f.name, f.type) for f in TABLES["events"]]
    glob = f"{lake.root}/events/**/*.parquet"
    rel = duckdb.sql(f"SELECT * FROM read_parquet('{glob}', hive_partitioning = true) WHERE kind <> '_schema'")
    types = dict(zip(rel.columns, map(str, rel.types)))
    want = dict(zip(TABLES["events"].names, map(str, duckdb.from_arrow(TABLES["events"].empty_table()).types)))
    assert {c: types[c] for c in want} == want and types["date"] == "DATE"
    assert sorted(rel.select("event_id, kind").fetchall()) == sorted(zip(ev.column("event_id").to_pylist(),
                                                                          ev.column("kind").to_pylist()))


def test_a_lake_of_old_and_new_parts_reads_as_before(tables, tmp_path, monkeypatch):
    """A lake an earlier version wrote (parts and placeholder holding ``kind``) with new parts beside them: the
    ``events`` view and ``events_between`` give what a lake of the old parts alone gave (columns, their order and
    types, rows), and the placeholder keeps an empty lake's view typed. The events are split into two batches, the
    first written the old way, the second the new way (and, in a third lake, all of them the old way)."""
    from api.store import Store

    ev = tables["events"]
    first, second = ev.slice(0, ev.num_rows // 2), ev.slice(ev.num_rows // 2)
    old, mixed, empty = (Lake(str(tmp_path / x)) for x in ("old", "mixed", "empty"))
    with monkeypatch.context() as m:
        _old_writer(m)
        for lake in (old, mixed):
            lake.init()
            lake.write("events", first, "b1")
        old.write("events", second, "b2")
        assert "kind" in pq.read_schema(next(mixed.root.glob("events/kind=_schema/*/*/_schema.parquet"))).names
    mixed.write("events", second, "b2")
    assert {"kind" in pq.read_schema(f).names for f in mixed.files("events")} == {True, False}
    queries = ["SELECT * FROM events ORDER BY event_id",
               "SELECT * FROM events_between(TIMESTAMPTZ '2000-01-01', TIMESTAMPTZ '2100-01-01') ORDER BY event_id",
               "SELECT kind, count(*) AS n FROM events GROUP BY kind ORDER BY kind"]
    for q in queries:
        a, b = (Store(lake).query(q) for lake in (old, mixed))
        assert a and a == b and list(a[0]) == list(b[0]), q
    assert list(Store(mixed).query(queries[0])[0]) == TABLES["events"].names  # the columns in the table's order
    from api.store import connect

    described = []
    for lake in (old, mixed, empty):
        if lake is empty:
            lake.init()
        con = connect(lake)
        described.append(con.execute("DESCRIBE SELECT * FROM events").fetchall())
        if lake is empty:
            assert con.execute("SELECT count(*) FROM events").fetchone() == (0,)
        con.close()
    assert described[0] == described[1] == described[2]
    assert [r[0] for r in described[2]] == TABLES["events"].names
    for f in mixed.files("events"):  # one part alone, old or new, reads as the table
        if f.name != "_schema.parquet":
            assert read_part(f, "events").schema.equals(TABLES["events"])


def test_a_lake_deleted_or_replaced_while_its_writer_runs_is_refused(tables, tmp_path):
    """A lake removed (``rm -rf``) under a running writer: its next write made the folders again and went on, the
    worker healthy and committing into a fresh lake while every event stored before was gone (a break-it pass: 801
    of 940). The writer that initialised the lake now refuses to write: LakeError, which the ingest worker reports
    (``/healthz`` 503, ``lake: …``) and retries without committing. So it does after a reader (the API, another
    process) has made the placeholders again, and after the lake was moved away and another put in its place. A
    Lake that was never initialised is not checked."""
    import shutil

    events = tables["events"]
    lake = Lake(tmp_path / "lake")
    lake.init()
    lake.write("events", events, "b1")
    shutil.rmtree(tmp_path / "lake")
    with pytest.raises(ingest.lake.LakeError, match="deleted or replaced while this process ran"):
        lake.write("events", events, "b2")
    Lake(tmp_path / "lake").init()  # a reader's connect (api.store.connect) makes the placeholders again
    with pytest.raises(ingest.lake.LakeError, match="deleted or replaced"):
        lake.write("events", events, "b2")
    assert not list((tmp_path / "lake" / "events").rglob("part-b2.parquet"))

    other = Lake(tmp_path / "other")
    other.init()
    (tmp_path / "other").rename(tmp_path / "moved")
    Lake(tmp_path / "other").init()
    with pytest.raises(ingest.lake.LakeError, match="deleted or replaced"):
        other.write("incidents", tables["incidents"], "b1")

    again = Lake(tmp_path / "lake")  # a restarted process: the lake now there
    again.init()
    assert again.write("events", events, "b2")
    unchecked = Lake(tmp_path / "fresh")
    assert unchecked.write("events", events, "b1")


def test_a_lake_deleted_under_its_process_is_not_made_again_by_that_process(tables, tmp_path):
    """A reader's ``init`` (``api.store.connect``, at every query) made a deleted lake again within seconds, empty:
    ``serve`` then answered every route empty with ``/healthz`` ok, and ``run``'s hourly report was stored into
    the new folders while its writer refused them (a fresh user's trial). A Lake that initialised the lake now
    refuses a second ``init`` and ``put_bytes`` too (``LakeReplaced``) and makes nothing; a new Lake (a restarted
    process) takes the lake now there."""
    import shutil

    lake = Lake(tmp_path / "lake")
    lake.init()
    lake.init()  # idempotent while it is the same lake
    lake.check()
    shutil.rmtree(tmp_path / "lake")
    for call in (lake.init, lake.check, lambda: lake.put_bytes("reports/x.json", b"{}")):
        with pytest.raises(ingest.lake.LakeReplaced, match="deleted or replaced while this process ran"):
            call()
    assert not (tmp_path / "lake").exists()
    with pytest.raises(ingest.lake.LakeError):  # a LakeReplaced is a LakeError: every caller's handling holds
        lake.write("events", tables["events"], "b1")
    again = Lake(tmp_path / "lake")
    again.init()
    assert again.put_bytes("reports/x.json", b"{}").endswith("x.json")
    Lake(tmp_path / "s3-like").check()  # never initialised here: nothing to check


def test_two_inits_of_a_fresh_lake_at_once_leave_both_writers_their_lake(tables, tmp_path, monkeypatch):
    """Two processes initialising a fresh lake at once (a second ingest worker, `serve` or `sql` started beside
    `run`): each found no placeholder, each wrote one, and the later one's rename replaced the file the earlier had
    already opened, so the earlier refused its own fresh lake ('deleted or replaced while this process ran') until
    restarted: 20 of 30 pairs of real processes forked to init together (a break-it pass). The later init now
    leaves a placeholder already there as it is. The race is made certain here by a second Lake whose check for the
    placeholder answers 'not there' (as it did before the first's write); the files are real."""
    first = Lake(tmp_path / "lake")
    first.init()
    held = {t: (tmp_path / "lake" / ingest.lake._placeholder(t)).stat().st_ino for t in TABLES}
    second = Lake(tmp_path / "lake")
    monkeypatch.setattr(second, "exists", lambda rel: False)
    second.init()
    assert {t: (tmp_path / "lake" / ingest.lake._placeholder(t)).stat().st_ino for t in TABLES} == held
    assert first.write("events", tables["events"], "b1") and second.write("events", tables["events"], "b2")
    assert not [p for p in (tmp_path / "lake").rglob("*") if p.name.endswith(".tmp")]


def test_a_link_to_the_lake_re_pointed_while_its_writer_runs_is_refused(tables, tmp_path):
    """The lake setting names a link (``lake -> lake-a``) and it is re-pointed at another lake (``ln -sfn lake-b
    lake``: a restore, a move to a bigger disk): the writer had resolved the link when it started and went on,
    healthy, writing into lake-a, while the API and every process started since read lake-b (a break-it pass). The
    path as given is now what is compared, so this is a lake replaced: refused. A relative setting is taken from
    the folder the process was in when it named the lake; it still writes after a chdir."""
    (tmp_path / "lake-a").mkdir()
    (tmp_path / "lake-b").mkdir()
    (tmp_path / "lake").symlink_to(tmp_path / "lake-a")
    lake = Lake(tmp_path / "lake")
    lake.init()
    lake.write("events", tables["events"], "b1")
    (tmp_path / "lake").unlink()
    (tmp_path / "lake").symlink_to(tmp_path / "lake-b")
    Lake(tmp_path / "lake").init()  # a reader of the lake now there
    with pytest.raises(ingest.lake.LakeError, match="deleted or replaced"):
        lake.write("events", tables["events"], "b2")
    assert not list(tmp_path.rglob("part-b2.parquet"))

    here = os.getcwd()
    os.chdir(tmp_path)
    try:
        relative = Lake("lake")
        relative.init()
    finally:
        os.chdir(here)
    assert relative.write("events", tables["events"], "b3")
    assert list((tmp_path / "lake-b").rglob("part-b3.parquet"))
