"""The split deployment's correlate workers see the facts that are no events, as the single process's correlator does.

`firstfault run` hands its correlator each batch's events, link samples (`nvidia-smi nvlink -s`: link states) and
topology facts (`nvidia-smi topo -m` paths, GPU index -> bus id). In the split deployment only the events went over
`fleet.events`: an NVLink incident's explanation said "up: unknown" where the single process said "up: [0, 1, 2, 4]".
The ingest worker now publishes the link samples and topology facts too, under the key of their host's events, each
value one Arrow IPC stream with a `firstfault-table` header naming its table (`ingest.publish`)."""

from __future__ import annotations

import asyncio
import logging
import os
import subprocess
import sys
import time
from collections import deque
from pathlib import Path

import orjson
import pyarrow as pa
import pytest

from api.demo import SAMPLES
from ingest.decode import Decoded, Segment
from ingest.publish import (FACT_TABLES, TABLE_HEADER, Domains, UnknownTable, decode_record, encode, encode_records,
                            fact_headers, split_facts_by_domain, table_of)
from schemas.fleet import HostConfig
from schemas.samples import LINK_SAMPLES_SCHEMA, TOPOLOGY_SCHEMA

FIRSTFAULT = str(Path(sys.executable).with_name("firstfault"))
#: the sample fleet's NVML hosts: nvidia-smi nvlink -s link states (node011: links 3 and 5 inactive where wired) and
#: topo -m paths (node024)
NVML = sorted(SAMPLES.glob("*.nvml.log"))
UP = "up: [0, 1, 2, 4]"


def batch_of(pipeline, now_us: int, *names: str):
    """The pure pipeline's batch (events, link samples, topology) of sample files (``node011.nvml.log``), each as
    its host's."""
    segs = [Segment(data=(SAMPLES / n).read_bytes(), origin=f"t:{n}", stream=n, host=n.split(".")[0], ref_ts=now_us,
                    ref_basis="kafka", ingest_ts=now_us) for n in names]
    return pipeline.run(Decoded(segments=segs))


# --- unit: encode / decode by header ----------------------------------------------------------------------------

def test_link_samples_and_topology_go_and_come_back_by_their_header(pipeline):
    """A record's `firstfault-table` header names its table; its value decodes to that table's schema, rows and
    values as they went. A record without the header is events, as producers before it sent them."""
    # node011: nvidia-smi nvlink -s; node024: topo -m; node036: a GPU index's bus id
    b = batch_of(pipeline, int(time.time() * 1_000_000), "node011.nvml.log", "node024.nvml.log", "node036.nvml.log")
    assert b.link_samples.num_rows == 6 and b.topology.num_rows == 13 and b.events.num_rows
    for name, table in (("link_samples", b.link_samples), ("topology", b.topology)):
        [value] = encode_records(table, schema=FACT_TABLES[name])
        headers = fact_headers(name)
        assert (TABLE_HEADER, name.encode()) in headers and table_of(headers) == name
        got_name, got = decode_record(value, headers)
        assert got_name == name and got.schema == FACT_TABLES[name]
        assert got.to_pylist() == table.cast(FACT_TABLES[name]).to_pylist()
    events_name, events = decode_record(encode(b.events), [("content-type", b"application/vnd.apache.arrow.stream")])
    assert events_name == "events" and events.column("event_id").to_pylist() == b.events.column("event_id").to_pylist()
    assert decode_record(encode(b.events), None)[0] == "events" and table_of([(TABLE_HEADER, b"events")]) is None
    # link 3 and 5 inactive, the others up: what the NVLink incident's explanation names
    states = {r["link"]: r["state"] for r in b.link_samples.to_pylist() if r["gpu_index"] == 3 and r["state"]}
    assert states == {0: "up", 1: "up", 2: "up", 3: "inactive", 4: "up", 5: "inactive"}


def test_a_record_of_a_table_it_does_not_read_or_a_bad_facts_value_is_refused_naming_why():
    """An unknown table name is an UnknownTable (a ValueError: the worker's bad-record path), quoting the name; a
    facts value that is empty, of another schema, with a null host or a time no year holds is a ValueError naming
    the table and the column."""
    with pytest.raises(UnknownTable, match="'gpu_temps' .*header firstfault-table"):
        decode_record(b"x", [(TABLE_HEADER, b"gpu_temps")])
    with pytest.raises(UnknownTable):
        fact_headers("gpu_temps")
    row = {f.name: None for f in TOPOLOGY_SCHEMA}
    row.update(host="node011", ts=1796008320000000, fact="gpu_bus", gpu_index=3, device="0000:3b:00.0", origin="o")
    good = pa.Table.from_pylist([row], TOPOLOGY_SCHEMA)
    assert decode_record(encode(good, TOPOLOGY_SCHEMA), fact_headers("topology"))[1].equals(good)
    with pytest.raises(ValueError, match="an empty topology record"):
        decode_record(None, fact_headers("topology"))
    with pytest.raises(ValueError, match="does not fit the link_samples schema"):
        decode_record(encode(good, TOPOLOGY_SCHEMA), fact_headers("link_samples"))
    no_host = good.set_column(0, pa.field("host", pa.string()), pa.nulls(1, pa.string()))
    with pytest.raises(ValueError, match=r"topology table with nulls in required columns: host \(1 of 1 rows\)"):
        decode_record(encode(no_host, no_host.schema), fact_headers("topology"))
    ts = TOPOLOGY_SCHEMA.field("ts")
    far = good.set_column(1, ts, pa.array([2**62], pa.int64()).cast(ts.type))  # year 148108
    with pytest.raises(ValueError, match=r"topology table with times out of range: ts \(1 of 1 rows\)"):
        decode_record(encode(far, TOPOLOGY_SCHEMA), fact_headers("topology"))
    nul = good.set_column(0, TOPOLOGY_SCHEMA.field("host"), pa.array(["nöde 7\x00"]))
    with pytest.raises(ValueError, match=r"topology table with values the ingest never writes: host"):
        decode_record(encode(nul, TOPOLOGY_SCHEMA), fact_headers("topology"))


def test_a_hosts_facts_go_under_the_key_of_its_device_events():
    """The NVLink domain of the fleet config, else the communicator the host was last seen in, else the host."""
    d = Domains({"n1": HostConfig(domain="rack7")})
    d.seed([("n2", 1, "c0ffee")])
    row = {f.name: None for f in LINK_SAMPLES_SCHEMA}
    rows = [{**row, "host": h, "ts": 1796008320000000, "link": i, "origin": "o"}
            for i, h in enumerate(["n1", "n2", "n3", "n1"])]
    got = split_facts_by_domain(pa.Table.from_pylist(rows, LINK_SAMPLES_SCHEMA), d)
    assert {k: t.column("link").to_pylist() for k, t in got.items()} == {
        "domain:rack7": [0, 3], "comm:c0ffee": [1], "host:n3": [2]}
    assert split_facts_by_domain(LINK_SAMPLES_SCHEMA.empty_table(), d) == {}


def test_facts_records_never_hold_the_commit_and_stay_with_the_events_right_after_them():
    """A record of link samples or topology holds no events: alone, or after events no longer held, the commit
    passes it; right before a record whose events the correlator still holds (the same batch's facts), it stays
    with it, so a replay from the safe offset brings them back."""
    from aiokafka import TopicPartition

    from correlate.consumer import CorrelateWorker, _Partition
    from correlate.correlator import Settings

    w = CorrelateWorker(bootstrap="127.0.0.1:9", topic="t", group_id="g", dlq_topic="d", settings=Settings(),
                        lateness_us=1, on_incidents=lambda incs: None)
    tp = TopicPartition("t", 0)

    def safe(held: list, kept: set[str], tail_from: int = 1 << 62) -> int:
        w.parts = {tp: _Partition(held=deque(held), last=held[-1][0], tail_from=tail_from)}
        w.correlator.events = dict.fromkeys(kept)
        return w.safe_offsets({tp})[tp]

    assert safe([(0, None), (1, None)], set()) == 2  # facts alone: not held
    assert safe([(0, ["a"]), (1, None), (2, None)], set()) == 3  # facts after forgotten events: not held
    assert safe([(0, ["a"]), (1, None), (2, ["b"]), (3, None)], {"b"}) == 1  # the facts before held events stay
    assert safe([(0, None), (1, ["a"]), (2, None), (3, ["b"])], {"b"}) == 2
    assert safe([(0, None), (1, []), (2, ["b"])], {"b"}) == 2  # an empty record between: its facts are older
    assert safe([(0, ["a"]), (1, None), (2, ["b"])], {"a", "b"}) == 0
    # a poll that ended between a batch's facts and its events: the facts at the end it read wait for them (a
    # break-it pass: the commit passed them, and a restart said "up: unknown"); those an earlier poll read go
    assert safe([(0, []), (1, None), (2, None)], set(), tail_from=0) == 1
    assert safe([(0, []), (1, None), (2, None)], set(), tail_from=2) == 2
    assert safe([(0, []), (1, None), (2, None)], set(), tail_from=3) == 3


# --- the real broker -------------------------------------------------------------------------------------------

@pytest.mark.kafka
def test_a_correlate_worker_hands_facts_records_to_its_correlator_and_skips_an_unknown_table(kafka, pipeline,
                                                                                            caplog):
    """A link-samples and a topology record before the events of node011 give the worker's NVLink incident the
    links that are up; a record whose header names a table this version does not read is logged as a bad record
    (`bad_events_record`, naming the table) and dead-lettered, and correlation goes on."""
    from tests.kafka_helpers import correlate_records
    from tests.test_reliability_input import _create

    b = batch_of(pipeline, int(time.time() * 1_000_000), "node011.nvml.log", "node036.nvml.log")  # 036: gpu_bus
    topic = f"facts.{time.time_ns()}"
    asyncio.run(_create(kafka, [topic, f"{topic}.dlq"], big=False))

    records = [(b"host:node011", encode(getattr(b, name), FACT_TABLES[name]), fact_headers(name))
               for name in FACT_TABLES]
    records += [(b"host:node011", b"\x00", [(TABLE_HEADER, b"gpu_temps")]), (b"host:node011", encode(b.events), [])]
    with caplog.at_level(logging.ERROR, logger="firstfault.correlate"):
        incidents, w, _ = asyncio.run(correlate_records(kafka, topic, records))
    bad = {r.getMessage() for r in caplog.records if getattr(r, "error_code", None) == "bad_events_record"}
    assert len(bad) == 1 and "'gpu_temps' (header firstfault-table)" in bad.pop()
    [inc] = [i for i in incidents if i["pattern"] == "link.inactive_where_wired"]
    assert UP in inc["explanation"] and inc["initiator"]["link"] in (3, 5)
    assert [t.num_rows for t in w.correlator.samples] == [6] and w.records == 4
    assert [t.column("fact").to_pylist() for t in w.correlator.topology] == [["gpu_bus"]]


def _env(kafka: str, tmp: Path, name: str, tag: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FIRSTFAULT_")}
    env.update(FIRSTFAULT_KAFKA_BOOTSTRAP=kafka, FIRSTFAULT_LAKE=str(tmp / name / "lake"), FIRSTFAULT_TOPICS=f"r.{tag}",
               FIRSTFAULT_EVENTS_TOPIC=f"e.{tag}", FIRSTFAULT_DLQ_TOPIC=f"d.{tag}", FIRSTFAULT_GROUP_ID=f"{name}.{tag}",
               FIRSTFAULT_CORRELATE_GROUP_ID=f"{name}c.{tag}", FIRSTFAULT_STATE_DIR=str(tmp / name),
               FIRSTFAULT_BATCH_LINGER_MS="50")
    return env


def _incidents(lake: Path) -> list[dict]:
    """The lake's current incident versions, without what differs between two runs of the same input (when a version
    was made, its number, the hosts' clock estimates of its time)."""
    from api.store import Store
    from ingest.lake import Lake

    docs = [orjson.loads(r["doc"]) for r in Store(Lake(lake)).query(
        "SELECT doc FROM incidents WHERE status <> 'superseded'")]
    return sorted(({k: v for k, v in d.items() if k not in ("updated", "version", "clocks")} for d in docs),
                  key=lambda d: d["id"])


@pytest.mark.kafka
def test_the_split_workers_incidents_equal_the_single_processs_on_nvlink_states(kafka, tmp_path):
    """The sample fleet's NVML hosts (nvidia-smi nvlink -s and topo -m output) through `firstfault run --once` and
    through `firstfault ingest --once` then `firstfault correlate --once`, on the same Kafka records: the same
    incidents, field for field; node011's NVLink incident names the links that are up in both (the split workers
    said "up: unknown")."""
    from ingest.broker import ensure_topics
    from ingest.consumer import produce_lines

    tag = str(time.time_ns())
    asyncio.run(ensure_topics(kafka, [f"r.{tag}", f"e.{tag}", f"d.{tag}"], partitions=2))
    for f in NVML:
        asyncio.run(produce_lines(kafka, f"r.{tag}", f.name.split(".")[0], [f.read_bytes()]))

    def firstfault(name: str, *args: str) -> None:
        p = subprocess.run([FIRSTFAULT, *args], env=_env(kafka, tmp_path, name, tag), capture_output=True,
                           timeout=300)
        assert p.returncode == 0, (args, p.stderr.decode()[-3000:])

    firstfault("single", "run", "--once", "--no-serve")
    firstfault("split", "ingest", "--once")
    firstfault("split", "correlate", "--once")
    single, split = _incidents(tmp_path / "single" / "lake"), _incidents(tmp_path / "split" / "lake")
    [nvlink] = [d for d in single if d["pattern"] == "link.inactive_where_wired"]
    assert nvlink["initiator"]["host"] == "node011" and UP in nvlink["explanation"], nvlink["explanation"]
    assert len(single) >= 3 and split == single
