-- firstfault: the analyst views over the Parquet lake (DuckDB).
--
-- Plain duckdb:   duckdb -cmd "SET VARIABLE lake = '.firstfault/lake'" -cmd ".read schemas/views.sql"
-- firstfault:     firstfault sql  (sets `lake` from the settings, read-only)
--
-- Tables (columns in schemas/events.py, schemas/samples.py, schemas/incidents.py):
--   events             one row per recognised line or sample; one row per event_id (replays deduplicated)
--   link_samples       NVLink state / speed / error counters per GPU link and sample time
--   topology           wiring facts: nvlink -R remote ends, topo -m paths
--   incident_versions  every version of every incident the correlator emitted
--   incidents          the latest version of each incident; `doc` is the full JSON object. An incident that a
--                      later one explains stays, with status 'superseded' (`doc.superseded_by`); the API's
--                      lists leave those out: add WHERE status <> 'superseded' to count live incidents
--   incident_evidence  the events of each incident's latest version, with role and relation
-- Times are TIMESTAMP WITH TIME ZONE in UTC.

-- events: `kind` is the folder's (kind=…); new parts do not hold it, an earlier version's do (the same value).
-- The columns are named so that they keep their order (a hive column comes after the files' columns).
CREATE OR REPLACE VIEW events AS
SELECT event_id, ts, ts_basis, host, source, kind, signature, severity, device_type, device, link, xid, sxid, peer,
       rank, nranks, comm, message, gpu_index, pid, process, fatal, cause_xid, seq, op, timeout_ms, elapsed_ms,
       ts_precision_us, count, last_ts, ingest_ts, origin, details
FROM read_parquet(getvariable('lake') || '/events/**/*.parquet', hive_partitioning = true, union_by_name = true)
WHERE kind <> '_schema'
QUALIFY row_number() OVER (PARTITION BY event_id ORDER BY ingest_ts NULLS LAST) = 1;

CREATE OR REPLACE VIEW link_samples AS
SELECT * EXCLUDE (date, hour)
FROM read_parquet(getvariable('lake') || '/link_samples/**/*.parquet', hive_partitioning = true, union_by_name = true)
QUALIFY row_number() OVER (PARTITION BY origin, link, counter ORDER BY ts) = 1;

CREATE OR REPLACE VIEW topology AS
SELECT * EXCLUDE (date, hour)
FROM read_parquet(getvariable('lake') || '/topology/**/*.parquet', hive_partitioning = true, union_by_name = true)
QUALIFY row_number() OVER (PARTITION BY origin, fact, link, peer_name ORDER BY ts) = 1;

-- A row stored twice (a compaction stopped between writing the merged part and removing the parts it merged:
-- ingest/compact.py) is one row here and in incident_evidence.
CREATE OR REPLACE VIEW incident_versions AS
SELECT * EXCLUDE (date, hour)
FROM read_parquet(getvariable('lake') || '/incidents/**/*.parquet', hive_partitioning = true, union_by_name = true)
QUALIFY row_number() OVER (PARTITION BY id, version, written_at) = 1;

CREATE OR REPLACE VIEW incidents AS
SELECT * FROM incident_versions
QUALIFY row_number() OVER (PARTITION BY id ORDER BY version DESC, written_at DESC) = 1;

CREATE OR REPLACE VIEW incident_evidence AS
SELECT DISTINCT e.* EXCLUDE (date, hour)
FROM read_parquet(getvariable('lake') || '/incident_evidence/**/*.parquet', hive_partitioning = true, union_by_name = true) e
SEMI JOIN incidents i ON e.incident_id = i.id AND e.version = i.version;

-- events_between(lo, hi): the events with lo <= ts <= hi, reading only the date partitions of that span
-- (the events view deduplicates over the whole lake before any filter can prune files). Same rows as
-- SELECT * FROM events WHERE ts BETWEEN lo AND hi: replayed copies of an event share its ts.
CREATE OR REPLACE MACRO events_between(lo, hi) AS TABLE
SELECT event_id, ts, ts_basis, host, source, kind, signature, severity, device_type, device, link, xid, sxid, peer,
       rank, nranks, comm, message, gpu_index, pid, process, fatal, cause_xid, seq, op, timeout_ms, elapsed_ms,
       ts_precision_us, count, last_ts, ingest_ts, origin, details
FROM read_parquet(getvariable('lake') || '/events/**/*.parquet', hive_partitioning = true, union_by_name = true)
WHERE kind <> '_schema' AND date BETWEEN CAST(CAST(lo AS TIMESTAMPTZ) AS DATE) AND CAST(CAST(hi AS TIMESTAMPTZ) AS DATE)
  AND ts BETWEEN lo AND hi
QUALIFY row_number() OVER (PARTITION BY event_id ORDER BY ingest_ts NULLS LAST) = 1;
