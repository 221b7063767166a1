"""The lake's Parquet parts (``ingest.lake``): what a reader gets back from a part is the table's schema, for
pyarrow and DuckDB alike, whether the part is small (time-column statistics only, no dictionary pages) or
large; no part stores the Arrow schema."""

from __future__ import annotations

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from api.demo import SAMPLES
from api.diagnose import diagnose_paths
from ingest.lake import _DICTIONARY_ROWS, TABLES, TIME_COLUMN, Lake
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
        assert back.schema.equals(TABLES[name]), (path, back.schema)
        assert back.equals(rows)
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
