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
import threading
import time
from collections import deque
from collections.abc import Callable
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
    # four records read, or more only after a second assignment (8 with one: a CI run, of a fetch read before its
    # assignment was set up, test_records_fetched_while_an_assignment_awaits_the_broker_are_read_once)
    assert [t.num_rows for t in w.correlator.samples] == [6]
    assert w.records == 4 or w.rebalances > 1, (w.records, w.rebalances)
    assert [t.column("fact").to_pylist() for t in w.correlator.topology] == [["gpu_bus"]]


@pytest.mark.kafka
@pytest.mark.parametrize("broker", ["late", "refuses once"])
def test_records_fetched_while_an_assignment_awaits_the_broker_are_read_once(kafka, pipeline, broker, caplog):
    """aiokafka sets a worker's partitions, and fetches them, before it calls ``assigned``: records read while the
    callback awaited their committed offsets went into the state it then replaced (a --once run could end there,
    holding nothing), or were read again after its seek (8 records read of 4, with one rebalance: a CI run). Made
    sure to happen: each committed offset is answered 1.5 s late, or the first ask fails (a ``KafkaError``: logged
    ``assignment_offsets_failed``, asked again after 0.5 s). Each record is read once, into the state set up."""
    from aiokafka.errors import KafkaConnectionError

    from tests.kafka_helpers import correlate_records
    from tests.test_reliability_input import _create

    b = batch_of(pipeline, int(time.time() * 1_000_000), "node011.nvml.log", "node036.nvml.log")
    topic = f"late_assign.{time.time_ns()}"
    asyncio.run(_create(kafka, [topic, f"{topic}.dlq"], big=False))
    records = [(b"host:node011", encode(getattr(b, name), FACT_TABLES[name]), fact_headers(name))
               for name in FACT_TABLES] + [(b"host:node011", encode(b.events), [])]
    asked = []

    def late(w) -> None:
        real = w.consumer.committed

        async def committed(tp):
            asked.append(tp)
            if broker == "refuses once" and len(asked) == 1:
                await asyncio.sleep(0.5)
                raise KafkaConnectionError("the coordinator went away")
            await asyncio.sleep(1.5 if broker == "late" else 0)
            return await real(tp)
        w.consumer.committed = committed

    with caplog.at_level(logging.ERROR, logger="firstfault.correlate"):
        incidents, w, _ = asyncio.run(correlate_records(kafka, topic, records, prepare=late))
    failed = [r.getMessage() for r in caplog.records if getattr(r, "error_code", None) == "assignment_offsets_failed"]
    assert len(failed) == (broker == "refuses once") and all("KafkaConnectionError" in m for m in failed), failed
    assert asked and w.rebalances == 1 and w.records == 3, (w.rebalances, w.records)
    assert [t.num_rows for t in w.correlator.samples] == [6]  # held once (twice: [6, 6]; none: [])
    assert [t.column("fact").to_pylist() for t in w.correlator.topology] == [["gpu_bus"]]
    [link] = {i["id"]: i for i in incidents if i["pattern"] == "link.inactive_where_wired"}.values()
    assert UP in link["explanation"]


@pytest.mark.kafka
def test_partitions_added_to_the_events_topic_are_read_within_the_metadata_age(kafka, pipeline):
    """A partition added to ``fleet.events`` (``firstfault kafka topics --partitions N``) went unread for minutes
    while /healthz said ok with lag 0: aiokafka asks the topic's metadata again only every ``metadata_max_age_ms``,
    300 s by default (a break-it pass). The workers ask every ``METADATA_MAX_AGE_MS`` (30 s); here 1 s, and the new
    partition's record is read."""
    from aiokafka import TopicPartition

    from correlate.consumer import CorrelateWorker
    from correlate.correlator import Settings
    from ingest.broker import ensure_topics
    from ingest.consumer import METADATA_MAX_AGE_MS
    from tests.kafka_helpers import send_records

    assert METADATA_MAX_AGE_MS == 30_000
    b = batch_of(pipeline, int(time.time() * 1_000_000), "node011.nvml.log")
    topic = f"grow.{time.time_ns()}"
    asyncio.run(ensure_topics(kafka, [topic, f"{topic}.dlq"], partitions=1))

    async def go() -> tuple[CorrelateWorker, frozenset, float]:
        w = CorrelateWorker(bootstrap=kafka, topic=topic, group_id=topic, dlq_topic=f"{topic}.dlq",
                            settings=Settings(), lateness_us=300_000_000, on_incidents=lambda incs: None)
        w.metadata_max_age_ms = 1000
        await w.start()
        task = asyncio.create_task(w.run())
        try:
            for _ in range(300):
                if w.ready:
                    break
                await asyncio.sleep(0.1)
            first = w.ready
            await ensure_topics(kafka, [topic], partitions=2, grow=True)
            await send_records(kafka, topic, [(b"host:node011", encode(b.events), [])], partition=1)
            t0 = time.monotonic()
            for _ in range(300):
                if w.records:
                    break
                await asyncio.sleep(0.1)
            return w, first, time.monotonic() - t0
        finally:
            w.stop.set()
            await asyncio.wait_for(task, 30)
            await w.close()

    w, first, took = asyncio.run(go())
    assert first == {TopicPartition(topic, 0)}
    assert w.ready == {TopicPartition(topic, 0), TopicPartition(topic, 1)} and w.records == 1, (w.ready, w.records)
    assert took < 20, took


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


async def _commit_at_events_of(kafka: str, topic: str, partitions: int, group: str, key: bytes) -> dict[int, int]:
    """Commit for consumer group ``group`` on each of the ``partitions`` of ``topic`` the offset of the first events
    record (no `firstfault-table` header) keyed ``key``, else the partition's end: a correlate worker of that group
    then starts past the facts records published just before those events, as one whose commit passed them before a
    restart. Returns partition -> the offset committed."""
    from aiokafka import AIOKafkaConsumer, TopicPartition
    from aiokafka.structs import OffsetAndMetadata

    reader = AIOKafkaConsumer(bootstrap_servers=kafka, enable_auto_commit=False)
    await reader.start()
    try:
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        reader.assign(tps)
        await reader.seek_to_beginning(*tps)
        ends = await reader.end_offsets(tps)
        at = {tp: ends[tp] for tp in tps}
        while [tp for tp in tps if await reader.position(tp) < ends[tp]]:
            for tp, recs in (await reader.getmany(timeout_ms=1000)).items():
                for r in recs:
                    if r.key == key and table_of(r.headers) is None:
                        at[tp] = min(at[tp], r.offset)
    finally:
        await reader.stop()
    committer = AIOKafkaConsumer(bootstrap_servers=kafka, group_id=group, enable_auto_commit=False)
    await committer.start()
    try:
        committer.assign(list(at))
        await committer.commit({tp: OffsetAndMetadata(off, "") for tp, off in at.items()})
    finally:
        await committer.stop()
    return {tp.partition: off for tp, off in at.items()}


@pytest.mark.kafka
def test_a_correlate_worker_that_starts_past_a_hosts_facts_reads_them_back_from_the_lake(kafka, tmp_path):
    """`firstfault ingest --once` stores node011's link samples (`nvidia-smi nvlink -s`) in the lake and publishes
    them just before its events; the correlate group's offset is then committed at node011's events record, past
    its facts records (a worker whose commit passed them before it restarted, or facts published under the host's
    earlier key, on another partition). `firstfault correlate --once` reads them back from the lake when it first
    sees node011's events: its NVLink incident names the links that are up, as `firstfault run` does (it said
    "up: unknown")."""
    from ingest.broker import ensure_topics
    from ingest.consumer import produce_lines

    tag = str(time.time_ns())
    asyncio.run(ensure_topics(kafka, [f"r.{tag}", f"e.{tag}", f"d.{tag}"], partitions=2))
    asyncio.run(produce_lines(kafka, f"r.{tag}", "node011", [(SAMPLES / "node011.nvml.log").read_bytes()]))
    env = _env(kafka, tmp_path, "split", tag)

    def firstfault(*args: str) -> None:
        p = subprocess.run([FIRSTFAULT, *args], env=env, capture_output=True, timeout=300)
        assert p.returncode == 0, (args, p.stderr.decode()[-3000:])

    firstfault("ingest", "--once")
    at = asyncio.run(_commit_at_events_of(kafka, f"e.{tag}", 2, env["FIRSTFAULT_CORRELATE_GROUP_ID"], b"host:node011"))
    assert any(off > 0 for off in at.values()), at  # the facts records before node011's events are skipped
    firstfault("correlate", "--once")
    [nvlink] = [d for d in _incidents(tmp_path / "split" / "lake") if d["pattern"] == "link.inactive_where_wired"]
    assert nvlink["initiator"]["host"] == "node011" and UP in nvlink["explanation"], nvlink["explanation"]


# --- reading a host's facts back from the lake ------------------------------------------------------------------

H = 3600 * 1_000_000
T = 1796008320000000  # 2026-11-30 (µs)


def _sample(host: str, ts: int, link: int, state: str | None = "up", counter: str | None = None) -> dict:
    row = {f.name: None for f in LINK_SAMPLES_SCHEMA}
    return {**row, "host": host, "ts": ts, "gpu_index": 0, "link": link, "state": state, "counter": counter,
            "value": 1.0 if counter else None, "origin": f"o:{host}:{ts}:{link}"}


def _fact(host: str, ts: int, peer: str, path: str) -> dict:
    row = {f.name: None for f in TOPOLOGY_SCHEMA}
    return {**row, "host": host, "ts": ts, "fact": "topo_path", "gpu_index": 0, "peer_name": peer, "path": path,
            "origin": f"o:{host}:{ts}:{peer}"}


def test_the_lake_gives_back_each_hosts_newest_sample_per_link_and_newest_fact_within_its_bounds(tmp_path):
    """`IncidentSink.host_facts`: only the hosts asked for; of each (GPU, link, counter) the newest sample no older
    than a day before the host's own time, of each topology fact the newest no older than a week; each host by its
    own time (one whose events are from 2024 gets its 2024 facts); at most `FACT_ROWS_PER_HOST` rows per host and
    table, the newest; oldest first, in the tables' schemas. A lake that cannot be read raises StoreError."""
    from api.sink import IncidentSink
    from api.store import StoreError
    from ingest.lake import Lake
    from schemas.settings import Settings

    lake = Lake(tmp_path / "lake")
    lake.init()
    old = T - 2 * 365 * 24 * H  # a host whose clock (and events) are two years behind
    samples = [_sample("n1", T - 2 * H, 0, "up"), _sample("n1", T - 1 * H, 0, "inactive"),  # newest wins
               _sample("n1", T - 3 * H, 0, None, "CRC Errors"),  # another key of the same link
               _sample("n1", T - 30 * H, 1, "up"),  # older than a day before n1's time
               _sample("n2", T - H, 0, "up"),  # not asked for
               _sample("n3", old - H, 2, "inactive")]
    facts = [_fact("n1", T - 3 * 24 * H, "GPU1", "NV2"), _fact("n1", T - 2 * 24 * H, "GPU1", "NV4"),
             _fact("n1", T - 8 * 24 * H, "NIC0", "PIX"),  # older than a week
             _fact("n3", old - 5 * 24 * H, "GPU1", "SYS")]
    # in two parts each, on several dates (the lake is partitioned by ts): a replay's copy of a row is harmless
    for i, part in enumerate((samples[:3], samples[3:], samples[:1])):
        lake.write("link_samples", pa.Table.from_pylist(part, LINK_SAMPLES_SCHEMA), f"s{i}")
    for i, part in enumerate((facts[:2], facts[2:])):
        lake.write("topology", pa.Table.from_pylist(part, TOPOLOGY_SCHEMA), f"t{i}")
    sink = IncidentSink(Settings(lake=str(tmp_path / "lake")))

    s, t = sink.host_facts({"n1": T, "n3": old, "n9": T})
    assert s.schema == LINK_SAMPLES_SCHEMA and t.schema == TOPOLOGY_SCHEMA
    assert [(r["host"], r["link"], r["state"], r["counter"], r["ts"].timestamp() * 1e6) for r in s.to_pylist()] == [
        ("n3", 2, "inactive", None, old - H), ("n1", 0, None, "CRC Errors", T - 3 * H),
        ("n1", 0, "inactive", None, T - H)]
    assert [(r["host"], r["peer_name"], r["path"]) for r in t.to_pylist()] == [("n3", "GPU1", "SYS"),
                                                                              ("n1", "GPU1", "NV4")]
    assert sink.host_facts({"n2": T + 30 * H}) == (None, None)  # its one sample is older than a day before
    assert sink.host_facts({}) == (None, None)
    sink.FACT_ROWS_PER_HOST = 1
    s, t = sink.host_facts({"n1": T})
    assert [(r["link"], r["state"]) for r in s.to_pylist()] == [(0, "inactive")] and t.num_rows == 1

    [bad] = (tmp_path / "lake" / "topology").glob("date=2024-*/*/*.parquet")
    bad.write_bytes(b"PAR1")  # a part cut short
    with pytest.raises(StoreError, match="cannot read the lake's link samples and topology"):
        sink.host_facts({"n1": T, "n3": old})
    # a lake gone (a lost mount) is said, not read as "no facts" against an empty lake laid out there (a break-it
    # pass: every host's facts were marked read, silently)
    import shutil

    shutil.rmtree(tmp_path / "lake")
    with pytest.raises(StoreError, match="is gone"):
        sink.host_facts({"n1": T})
    assert not (tmp_path / "lake").exists()


@pytest.mark.kafka
def test_a_lake_that_cannot_give_the_facts_back_is_said_counted_and_asked_again_and_correlation_goes_on(
        kafka, pipeline, tmp_path, caplog):
    """node011's events alone on `fleet.events` (its facts records went before the worker's commit); the lake
    holds its link samples but also a part cut short, so the read back fails: the worker logs it
    (`facts_read_back_failed`), counts it, keeps node011 to ask again after a back-off, and correlates on: its NVLink
    incident is made, its links' states unknown. Once the part is whole again, the next read gives the correlator
    node011's link samples and the host is not asked for again."""
    from api.sink import IncidentSink
    from correlate.consumer import CorrelateWorker
    from correlate.correlator import correlation_settings
    from correlate.metrics import FACTS_READ_BACK_FAILURES
    from ingest.lake import Lake
    from schemas.settings import Settings
    from tests.kafka_helpers import send_records
    from tests.test_reliability_input import _create

    now = int(time.time() * 1_000_000)
    b = batch_of(pipeline, now, "node011.nvml.log")
    lake = Lake(tmp_path / "lake")
    lake.init()
    lake.write("link_samples", b.link_samples, "b0")
    cut = tmp_path / "lake" / "link_samples" / "date=2026-01-01" / "hour=00" / "part-cut.parquet"
    cut.parent.mkdir(parents=True)
    cut.write_bytes(b"PAR1")
    conf = Settings(lake=str(tmp_path / "lake"))
    topic = f"facts.{time.time_ns()}"
    asyncio.run(_create(kafka, [topic, f"{topic}.dlq"], big=False))
    failed_before = FACTS_READ_BACK_FAILURES._value.get()

    async def go() -> tuple[list[dict], CorrelateWorker]:
        await send_records(kafka, topic, [(b"host:node011", encode(b.events), [])])
        got: list[dict] = []
        w = CorrelateWorker(bootstrap=kafka, topic=topic, group_id=topic, dlq_topic=f"{topic}.dlq",
                            settings=correlation_settings(conf), lateness_us=300_000_000, on_incidents=got.extend,
                            read_facts=IncidentSink(conf).host_facts)
        await w.start()
        try:
            await asyncio.wait_for(w.run(until_caught_up=True), 120)
        finally:
            await w.close()
        return got, w

    with caplog.at_level(logging.ERROR, logger="firstfault.correlate"):
        incidents, w = asyncio.run(go())
    said = [r.getMessage() for r in caplog.records if getattr(r, "error_code", None) == "facts_read_back_failed"]
    assert said and "1 host(s)" in said[0] and "too small to be a Parquet file" in said[0]
    assert w.facts_read_back_failures == len(said) == FACTS_READ_BACK_FAILURES._value.get() - failed_before
    assert list(w.facts_wanted) == ["node011"] and not w.facts_read and w.facts_wait.delay > 0.5
    [inc] = [i for i in incidents if i["pattern"] == "link.inactive_where_wired"]
    assert "up: unknown" in inc["explanation"] and not w.correlator.samples
    cut.unlink()
    asyncio.run(w._read_facts())
    assert w.facts_read == {"node011"} and not w.facts_wanted and w.facts_wait.delay == 0.5
    assert [t.num_rows for t in w.correlator.samples] == [6]


def test_a_facts_read_a_rebalance_overtook_is_dropped_and_asked_again(pipeline):
    """A rebalance (``CorrelateWorker.assigned``: a fresh correlator, no hosts read or wanted) while the lake is read
    for node011: the read's rows do not go to the fresh correlator, which asks for node011 again when its events
    come (test_scale: the read deleted a host the rebalance had forgotten, and the KeyError ended the worker)."""
    from correlate.consumer import CorrelateWorker
    from correlate.correlator import Settings

    b = batch_of(pipeline, int(time.time() * 1_000_000), "node011.nvml.log")

    def read_facts(anchors: dict[str, int]) -> tuple[pa.Table, None]:
        assert list(anchors) == ["node011"]
        w.correlator, w.facts_read, w.facts_wanted = w._fresh(), set(), {}  # what assigned() does meanwhile
        return b.link_samples, None

    w = CorrelateWorker(bootstrap="127.0.0.1:9", topic="t", group_id="g", dlq_topic="d", settings=Settings(),
                        lateness_us=1, on_incidents=lambda incs: None, read_facts=read_facts)
    w.facts_wanted = {"node011": int(time.time() * 1_000_000)}
    asyncio.run(w._read_facts())
    assert not w.correlator.samples and not w.facts_read and not w.facts_wanted


@pytest.mark.kafka
def test_the_split_workers_serve_their_health_and_metrics_on_their_port(kafka, tmp_path):
    """`firstfault ingest --port 0` and `firstfault correlate --port 0`, as processes on the real broker, say where
    their /healthz and /metrics listen; /healthz is 200 ok with the worker's counts once it has read the sample
    fleet's NVML records, /metrics holds its own series (the dead letters the correlate worker counts were in no
    process Prometheus could scrape: a split deployment's workers served nothing), and SIGTERM ends each with 0."""
    import re
    import signal
    import urllib.request

    from ingest.broker import ensure_topics
    from ingest.consumer import produce_lines

    tag = str(time.time_ns())
    asyncio.run(ensure_topics(kafka, [f"r.{tag}", f"e.{tag}", f"d.{tag}"], partitions=2))
    for f in NVML:
        asyncio.run(produce_lines(kafka, f"r.{tag}", f.name.split(".")[0], [f.read_bytes()]))

    def get(url: str) -> tuple[int, bytes]:
        try:
            with urllib.request.urlopen(url, timeout=10) as r:
                return r.status, r.read()
        except urllib.error.HTTPError as e:
            return e.code, e.read()

    procs = {w: subprocess.Popen([FIRSTFAULT, w, "--port", "0"], env=_env(kafka, tmp_path, "w", tag),
                                 stderr=subprocess.PIPE, stdout=subprocess.DEVNULL) for w in ("ingest", "correlate")}
    try:
        seen = {}
        for w, p in procs.items():
            assert p.stderr is not None
            line = p.stderr.readline().decode()  # its first line: where it listens
            m = re.search(r"health on (http://127\.0\.0\.1:\d+)/healthz, metrics on \1/metrics", line)
            assert m and line.startswith(f"{w} worker:"), line
            base = m.group(1)
            # then what it reads and where it writes (only the lake at its exit: a fresh user's trial)
            where = p.stderr.readline().decode()
            lake = tmp_path / "w" / "lake"
            assert where == (f"ingest worker: reading r.{tag} on {kafka} (group w.{tag}) into the lake {lake}, events "
                             f"to e.{tag}, dead letters to d.{tag}\n" if w == "ingest" else
                             f"correlate worker: reading e.{tag} on {kafka} (group wc.{tag}), incidents into the "
                             f"lake {lake}\n"), where
            for _ in range(300):
                status, body = get(f"{base}/healthz")
                h = orjson.loads(body)
                if status == 200 and h["counts"]["records"] >= (len(NVML) if w == "ingest" else 1) \
                        and (w == "ingest" or h["counts"]["lag"]):  # a correlate worker's lag: after its first step
                    break
                time.sleep(0.1)
            assert status == 200 and h["status"] == "ok" and h["worker"] == w, h
            seen[w] = h
            status, text = get(f"{base}/metrics")
            other = "correlate" if w == "ingest" else "ingest"  # each worker's own series only: a correlate worker
            # said firstfault_ingest_healthy 0 for good (a break-it pass)
            assert status == 200 and f"firstfault_{w}_".encode() in text and f"firstfault_{other}_".encode() not in text
            assert b"process_cpu_seconds_total" in text
        assert seen["ingest"]["counts"]["records"] == len(NVML) and seen["ingest"]["counts"]["events"] > 0
        # /healthz and /metrics read one moment apart: asked again until the worker has caught up (its lag 0
        # everywhere), as the ingest worker's events may still be coming in (a CI run: /healthz said 6, /metrics 0)
        for _ in range(300):
            c = orjson.loads(get(f"{base}/healthz")[1])["counts"]
            status, text = get(f"{base}/metrics")
            if c["lag"] and not any(c["lag"].values()) and b'topic="e.' in text and not re.search(
                    rb'firstfault_consumer_lag_records\{[^}]*\} [1-9]', text):
                break
            time.sleep(0.1)
        assert (c["dead_letters_pending"], c["paused_partitions"], c["correlate_failures"]) == (0, 0, 0), c
        assert b"firstfault_correlate_paused_partitions 0.0" in text
        assert b"firstfault_correlate_dead_letters_pending 0.0" in text
        # its own lag and health (only the ingest worker's were there: stop 58's list), as /healthz says them
        assert b"firstfault_correlate_healthy 1.0" in text
        # its assignments, as /healthz counts them (only /healthz did: a break-it pass)
        assert f"firstfault_correlate_rebalances_total {float(c['rebalances'])}".encode() in text and c["rebalances"]
        lags = re.findall(rb'firstfault_consumer_lag_records\{partition="(\d+)",topic="([^"]+)"\} (\d+)', text)
        assert lags and {f"{t.decode()}/{p.decode()}": int(n) for p, t, n in lags} == c["lag"], (lags, c)
        # not the open incidents of the lake it restored at its start (an operator's trial): the API's to count
        assert b"firstfault_incidents_open" not in text and "incidents" not in c
    finally:
        for p in procs.values():
            p.send_signal(signal.SIGTERM)
        codes = {w: p.wait(60) for w, p in procs.items()}
    assert codes == {"ingest": 0, "correlate": 0}, [p.stderr.read().decode()[-2000:] for p in procs.values()]


def test_a_worker_port_that_is_taken_is_one_line_and_exit_1(tmp_path):
    """A worker whose --port another socket holds exits 1 before it connects, naming the worker_port setting."""
    import socket

    with socket.create_server(("127.0.0.1", 0)) as held:
        port = held.getsockname()[1]
        env = _env("127.0.0.1:9", tmp_path, "w", "x")
        p = subprocess.run([FIRSTFAULT, "correlate", "--port", str(port)], env=env, capture_output=True, timeout=60)
    err = p.stderr.decode()
    assert p.returncode == 1 and f"cannot serve on 127.0.0.1:{port}" in err and "FIRSTFAULT_WORKER_PORT" in err, err


def test_a_worker_serving_its_port_without_a_broker_says_so_in_one_line(tmp_path):
    """`correlate --port 0` and `ingest --once --port 0` with no broker at kafka_bootstrap: the one-line "cannot reach
    Kafka" and exit 1, as without --port (the endpoint's listening callback ran on closed sockets and its IndexError
    traceback hid the error: a break-it pass)."""
    for args in (["correlate", "--port", "0"], ["ingest", "--once", "--port", "0"]):
        p = subprocess.run([FIRSTFAULT, *args], env=_env("127.0.0.1:1", tmp_path, "nb", "x"), capture_output=True,
                           timeout=120)
        err = p.stderr.decode()
        assert p.returncode == 1 and "cannot reach Kafka" in err and "Traceback" not in err, (args, err[-2000:])


def test_a_workers_health_answers_while_its_event_loop_is_busy():
    """The worker's /healthz is served on a thread of its own: a probe answered in up to 1.2 s while the worker's
    loop decoded a backlog (a break-it pass; Kubernetes' probes time out after 1 s by default). With the loop blocked
    for 2 s, /healthz answers within 0.5 s."""
    import urllib.request

    from api.service import WorkerEndpoint
    from schemas.settings import Settings

    got: dict = {}

    async def go() -> None:
        told: list[int] = []
        ep = WorkerEndpoint(Settings(), "ingest", lambda: {"ok": True, "reason": "", "records": 7}, 0,
                            lambda server: told.append(server.servers[0].sockets[0].getsockname()[1]))
        await ep.start()
        try:
            def probe() -> None:
                t = time.monotonic()
                with urllib.request.urlopen(f"http://127.0.0.1:{told[0]}/healthz", timeout=5) as r:
                    got.update(status=r.status, body=orjson.loads(r.read()), took=time.monotonic() - t)
            th = threading.Thread(target=probe)
            th.start()
            time.sleep(2.0)  # the worker's loop busy: a batch decoded, a correlator step
            th.join(5)
        finally:
            await ep.stop()

    asyncio.run(go())
    assert got["status"] == 200 and got["body"] == {"status": "ok", "reason": "", "worker": "ingest",
                                                    "counts": {"records": 7}}
    assert got["took"] < 0.5, got


def test_a_second_signal_ends_a_worker_that_waits_for_its_broker(tmp_path):
    """A correlate worker whose broker does not answer (here a socket that accepts and never replies) waits on it,
    and ignored every later SIGTERM (a break-it pass: 115 s and two TERMs, still running). The first SIGTERM asks it
    to stop after its commit; a second ends it at once, exit 1, saying so."""
    import signal
    import socket

    with socket.create_server(("127.0.0.1", 0)) as silent:
        silent.listen(16)
        env = _env(f"127.0.0.1:{silent.getsockname()[1]}", tmp_path, "sig", "x")
        p = subprocess.Popen([FIRSTFAULT, "correlate"], env=env, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL)
        conn = None
        try:
            # started, its signal handlers set (before it connects) and waiting for the broker's answer: a fixed 3 s
            # sleep was too short for a start-up on a loaded machine, and the first SIGTERM found Python's default
            # (exit -15: a break-it pass running its tests beside others)
            silent.settimeout(60)
            conn, _ = silent.accept()
            time.sleep(0.5)
            p.send_signal(signal.SIGTERM)
            time.sleep(1.0)
            assert p.poll() is None  # the first asks; it still waits
            p.send_signal(signal.SIGTERM)
            t = time.monotonic()
            code = p.wait(10)
            took = time.monotonic() - t
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
            if conn is not None:
                conn.close()
    err = p.stderr.read().decode()
    assert code == 1 and took < 5 and "a second signal: stopping now" in err, (code, took, err[-2000:])


@pytest.mark.kafka
def test_one_sigterm_stops_a_serving_run_after_its_commit(kafka, tmp_path):
    """`firstfault run` serving its API (the default), stopped by one SIGTERM as a service manager does: uvicorn's
    own signal handlers saw the signal beside the CLI's, raised it again once the API had shut down, and the CLI took
    that for a second signal: "a second signal: stopping now, without the last commit", exit 1, every time (a
    break-it pass). It now finishes and commits, exit 0, its group's commit at the end of the topic, and its last
    line says it stopped (its last was "stopping: …": a fresh user's trial)."""
    import signal

    from aiokafka import TopicPartition
    from aiokafka.admin import AIOKafkaAdminClient

    from ingest.broker import ensure_topics
    from ingest.consumer import produce_lines

    tag = f"term{time.time_ns()}"
    env = _env(kafka, tmp_path, "run", tag) | {"FIRSTFAULT_API_PORT": "0", "FIRSTFAULT_SESSION_TIMEOUT_MS": "6000"}
    asyncio.run(ensure_topics(kafka, [f"r.{tag}", f"e.{tag}", f"d.{tag}"], partitions=1))
    lines = [b"[  100.000000] NVRM: Xid (PCI:0000:18:00): 79, pid=0, GPU has fallen off the bus."] * 3
    asyncio.run(produce_lines(kafka, f"r.{tag}", "node07", lines))
    p = subprocess.Popen([FIRSTFAULT, "run"], env=env, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    err: list[str] = []
    caught_up, reader = _reading(p.stderr, err, lambda line: line.startswith("caught up"))
    try:
        assert caught_up.wait(120), "".join(err)
        p.send_signal(signal.SIGTERM)
        code = p.wait(30)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    reader.join(10)
    text = "".join(err)
    assert code == 0 and "a second signal: stopping now" not in text and "Traceback" not in text, (code, text[-3000:])
    assert text.splitlines()[-1] == f"stopped; lake: {env['FIRSTFAULT_LAKE']}", text[-3000:]  # its end is said

    async def committed() -> dict:
        admin = AIOKafkaAdminClient(bootstrap_servers=kafka)
        await admin.start()
        try:
            return await admin.list_consumer_group_offsets(f"run.{tag}")
        finally:
            await admin.close()

    assert committed_offset(asyncio.run(committed()), TopicPartition(f"r.{tag}", 0)) == 3


def _reading(stream, lines: list[str], said: Callable[[str], bool]) -> tuple[threading.Event, threading.Thread]:
    """A daemon thread that keeps a child's output ``stream`` in ``lines``, and the event it sets once a line is
    ``said``."""
    seen = threading.Event()

    def read() -> None:
        for line in stream:
            lines.append(line)
            if said(line):
                seen.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    return seen, reader


def committed_offset(offsets: dict, tp) -> int | None:
    """The offset of ``tp`` in an admin client's ``list_consumer_group_offsets`` answer (None: not committed)."""
    meta = offsets.get(tp)
    return None if meta is None else meta.offset


@pytest.mark.kafka
def test_a_second_ctrl_c_ends_a_demo_whose_broker_does_not_answer(tmp_path):
    """`firstfault demo` serving, its broker paused (SIGSTOP: a broker that does not answer): Ctrl-C asked the worker
    to stop after its last commit, which waited for the request timeout, 40 s, saying nothing, and each further
    Ctrl-C only asked again (a break-it pass: three Ctrl-C, exit after 40.4 s). A second one now ends it at once,
    exit 1, saying so, as `run`'s does; the first says at once that it waits for that commit and that a second
    Ctrl-C ends it (it said nothing: a fresh user's trial). The broker is a real one of the test's own state folder
    (the demo starts or takes the broker of its state folder)."""
    import signal

    from ingest import broker

    st = broker.start(tmp_path / "st", timeout_s=180)
    env = {k: v for k, v in os.environ.items() if not k.startswith("FIRSTFAULT_")}
    env.update(FIRSTFAULT_STATE_DIR=str(tmp_path / "st"), FIRSTFAULT_API_PORT="0")
    p = subprocess.Popen([FIRSTFAULT, "demo"], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    out: list[str] = []
    serving, reader = _reading(p.stdout, out, lambda line: "Ctrl-C to stop" in line)
    try:
        assert serving.wait(150), "".join(out)[-3000:]
        os.kill(st.pid, signal.SIGSTOP)
        time.sleep(1.0)
        p.send_signal(signal.SIGINT)
        time.sleep(1.5)
        assert p.poll() is None  # the first asks for the last commit: it waits for the broker
        waiting = "".join(out)  # what the operator reads while it waits: that a second Ctrl-C ends it
        p.send_signal(signal.SIGINT)
        t = time.monotonic()
        code = p.wait(20)
        took = time.monotonic() - t
    finally:
        os.kill(st.pid, signal.SIGCONT)
        if p.poll() is None:
            p.kill()
            p.wait()
        broker.stop(tmp_path / "st")
    reader.join(10)
    text = "".join(out)
    assert code == 1 and took < 5 and "a second signal: stopping now" in text, (code, took, text[-2000:])
    assert "stopping: the batch in hand is finished and committed first; a second Ctrl-C stops at once" in waiting
    assert "Traceback" not in text and "keeps running" in text.splitlines()[-1]
