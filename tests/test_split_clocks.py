"""A correlate worker reads its hosts' clocks as `firstfault run` and the batch over the lake do.

A host's clock bound is read from the fastest of its lines' append delays (``correlate.window.AppendDelays``, per UTC
day the 20 smallest). `firstfault run` reads that summary of every event of the lake when it restarts
(``api.sink.IncidentSink.append_delays``); a split correlate worker (`firstfault correlate`) rebuilt it from the
events it replays from its safe offset alone, so after a restart or a rebalance a host whose fastest lines came
before that offset read a looser bound than the batch over the same lake, and other incidents. It now reads each
host's summary from the lake when its replay first brings the host, and merges it into its own."""

from __future__ import annotations

import asyncio
import time
from datetime import datetime, timedelta, timezone

import pyarrow as pa
import pytest
from hypothesis import given, settings, strategies as st

from correlate.model import Ev
from correlate.window import DELAY_LINES, SKEW_CAP_US, AppendDelays

S = 1_000_000
_DAY = 86400 * S


def _line(host: str, n: int, ts: int, delay: int) -> Ev:
    """Line ``n`` of ``host``, stamped ``ts`` (µs) and appended to Kafka ``delay`` µs after it."""
    return Ev(event_id=f"{host}-{n}", ts=ts, ts_basis="line", host=host, source="dmesg", kind="info",
              signature="host.cper_severity", severity="info", device_type=None, device=None, link=None, xid=None,
              sxid=None, peer=None, rank=None, nranks=None, comm=None, message="m", origin=f"kafka:t/0/{n}:0",
              ingest_ts=ts + delay)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("hk"), st.integers(0, 60), st.integers(0, 3 * _DAY),
                          st.sampled_from([-9 * 3600 * S, -SKEW_CAP_US - 1, -SKEW_CAP_US, 0, 1, 100_000, 40 * S,
                                           2 * _DAY]) | st.integers(-SKEW_CAP_US * 2, 120 * S),
                          st.booleans()),
                max_size=3 * DELAY_LINES + 20))
def test_merging_two_summaries_is_the_summary_of_their_lines_together(lines):
    """Lines of two hosts over three UTC days (some of one event id twice, at other delays: a copy delivered later;
    some ahead of the skew cap, some further than a day from their append time), split in two sets however: the
    summary of one with the other's merged in (``AppendDelays.merge``) is the summary of all of them, and merging
    again changes nothing. A worker's replay and the lake's summary of its hosts are two such sets."""
    base = 1796000000 * S // _DAY * _DAY
    evs = [(_line(h, n, base + t, d), side) for h, n, t, d, side in lines]
    whole = AppendDelays.of([e for e, _ in evs])
    mine = AppendDelays.of([e for e, side in evs if side])
    mine.merge(AppendDelays.of([e for e, side in evs if not side]))
    assert mine.days == whole.days
    mine.merge(whole)
    assert mine.days == whole.days


def test_the_lake_gives_the_summary_of_the_hosts_asked_for_alone(pipeline, tmp_path):
    """``IncidentSink.append_delays(anchors)``: the summary of those hosts' lines in the lake, the same as of all
    their events observed one by one, when each host's newest line was appended no earlier than the day before its
    anchor's (b: its newest on that day, its fastest the day before it); no other host's (b's lines are not a's);
    a host whose lines stopped five days before its anchor, none (only the date partitions from
    ``DELAYS_BACK_US`` before the earliest anchor are read); None for no host. A lake that is gone raises (a worker
    asks again later) where the whole lake's read (``firstfault run``'s restart) gives None."""
    from api.sink import IncidentSink
    from api.store import StoreError
    from correlate.model import events_from_table
    from ingest.lake import Lake
    from schemas.settings import Settings
    from tests.test_window import _shipped

    anchor = datetime(2026, 11, 29, 1, 0, tzinfo=timezone.utc)
    minutes = lambda t, n: [t + timedelta(minutes=k) for k in range(n)]  # noqa: E731
    a = _shipped(pipeline, "a", minutes(anchor - timedelta(hours=3), 25), timedelta(seconds=1))
    b = pa.concat_tables([_shipped(pipeline, "b", minutes(anchor - timedelta(hours=20), 25), timedelta(seconds=2)),
                          _shipped(pipeline, "b", minutes(anchor - timedelta(hours=40), 25), timedelta(seconds=1))])
    old = _shipped(pipeline, "old", minutes(anchor - timedelta(days=5), 25), timedelta(seconds=3))
    lake = Lake(tmp_path / "lake")
    lake.init()
    for i, t in enumerate([a, b, old]):
        lake.write("events", t, f"p{i}")
    sink = IncidentSink(Settings(lake=str(tmp_path / "lake"), state_dir=tmp_path / "state"), lake)
    at = int(anchor.timestamp() * S)
    got = sink.append_delays({"b": at, "old": at, "nowhere": at})
    want = AppendDelays.of(events_from_table(b))
    assert set(got.days) == {"b"} and got.days == want.days and len(want.days["b"]) == 2
    assert [d for d, _ in got.days["b"][min(got.days["b"])][0]] == [S] * DELAY_LINES
    assert sink.append_delays({"a": at}).days == AppendDelays.of(events_from_table(a)).days
    # the whole lake's: every host of the fleet's three newest days (window.FLEET_DAYS), as the batch reads it of
    # every event; "old", five days before, voted in the fleet's delay after a restart (a break-it pass)
    whole = AppendDelays.of(events_from_table(pa.concat_tables([a, b, old])))
    assert sink.append_delays().days == whole.days and set(whole.days) == {"a", "b"}
    assert sink.append_delays({}) is None
    (tmp_path / "lake" / "events").rename(tmp_path / "gone")
    with pytest.raises(StoreError, match="is gone"):
        sink.append_delays({"a": at})
    assert sink.append_delays() is None


@pytest.mark.kafka
def test_a_restarted_correlate_worker_reads_the_clocks_and_incidents_of_the_batch(kafka, pipeline, tmp_path):
    """Hosts a, b, c and x shipped their fastest lines (0.1 s after their stamps) nine hours ago; 40 minutes ago
    a, b and c shipped more at 0.1 s and x a 40 s backlog; 20 minutes ago each an Xid 79 (x's in its backlog). Every
    line is in the lake and on ``fleet.events`` (partition 0, keyed by host); the correlate group's offset is
    committed past the early lines (a worker whose commit passed them before it restarted). The restarted worker
    reads a, b, c and x's summaries from the lake as its replay brings them (only those: the hosts its partition
    carries), and its clocks and incidents are the batch correlator's over the lake. Without that read (as before),
    x's clock read 40 s off the batch's, and in the incidents that name x."""
    from aiokafka import AIOKafkaConsumer, TopicPartition
    from aiokafka.structs import OffsetAndMetadata

    from api.sink import IncidentSink
    from correlate.consumer import CorrelateWorker
    from correlate.correlator import correlate, correlation_settings
    from correlate.model import events_from_table
    from correlate.window import estimate_clocks
    from ingest.lake import Lake
    from ingest.publish import encode
    from schemas.settings import Settings
    from tests.kafka_helpers import send_records
    from tests.test_reliability_input import _create
    from tests.test_window import _CORRECTED, _FALLEN, _shipped

    now = datetime.now(timezone.utc).replace(microsecond=0)
    minutes = lambda t, n: [t + timedelta(minutes=k, seconds=k) for k in range(n)]  # noqa: E731
    fast, slow = timedelta(milliseconds=100), timedelta(seconds=40)
    early = [(h, _shipped(pipeline, h, minutes(now - timedelta(hours=9), 6), fast)) for h in "abcx"]
    replay = [(h, _shipped(pipeline, h, minutes(now - timedelta(minutes=40), 6), fast, _CORRECTED)) for h in "abc"]
    replay += [("x", _shipped(pipeline, "x", minutes(now - timedelta(minutes=33), 6), slow))]
    replay += [(h, _shipped(pipeline, h, minutes(now - timedelta(minutes=20), 2), slow if h == "x" else fast, _FALLEN))
               for h in "abcx"]
    root = tmp_path / "lake"
    lake = Lake(root)
    lake.init()
    for i, (_, t) in enumerate(early + replay):  # as the ingest worker writes them, before it publishes them
        lake.write("events", t, f"p{i}")
    everything = pa.concat_tables([t for _, t in early + replay])
    conf = Settings(lake=str(root), state_dir=tmp_path / "state")
    topic = f"clocks.{time.time_ns()}"
    asyncio.run(_create(kafka, [topic, f"{topic}.dlq"], big=False))
    asyncio.run(send_records(kafka, topic, [(f"host:{h}".encode(), encode(t), []) for h, t in early + replay]))

    async def restarted(group: str, read_delays) -> CorrelateWorker:
        committer = AIOKafkaConsumer(bootstrap_servers=kafka, group_id=group, enable_auto_commit=False)
        await committer.start()
        try:  # the commit a worker made before its restart: past the early lines
            committer.assign([TopicPartition(topic, 0)])
            await committer.commit({TopicPartition(topic, 0): OffsetAndMetadata(len(early), "")})
        finally:
            await committer.stop()
        sink = IncidentSink(conf)
        w = CorrelateWorker(bootstrap=kafka, topic=topic, group_id=group, dlq_topic=f"{topic}.dlq",
                            settings=correlation_settings(conf), lateness_us=int(conf.allowed_lateness_s * S),
                            on_incidents=lambda incs: None, restore=sink.stored,
                            restore_events=sink.membership_events, read_back=sink.incident_events,
                            read_facts=sink.host_facts, read_delays=read_delays and read_delays(sink))
        await w.start()
        try:
            await asyncio.wait_for(w.run(until_caught_up=True), 120)
        finally:
            await w.close()
        return w

    asked: list[list[str]] = []

    def recorded(sink):
        def read(anchors: dict[str, int]) -> AppendDelays | None:
            asked.append(sorted(anchors))
            return sink.append_delays(anchors)
        return read

    w = asyncio.run(restarted(f"{topic}.g", recorded))
    assert w.records == len(replay) and sorted(h for hs in asked for h in hs) == list("abcx")
    want = estimate_clocks(events_from_table(everything))
    assert estimate_clocks([], delays=w.correlator.delays) == want and want[1]["x"] == want[1]["a"]
    expected = {i["id"]: i for i in correlate(everything, now_us=int(time.time() * S))}
    final = {i: v[2] for i, v in w.correlator.emitted.items() if v[2].get("status") != "superseded"}
    strip = lambda i: {k: v for k, v in i.items() if k not in ("version", "status", "recurrence")}  # noqa: E731
    assert expected and {i: strip(v) for i, v in final.items()} == {i: strip(v) for i, v in expected.items()}
    assert {h for i in expected.values() for h in i["clocks"]} == set("abcx")

    before = asyncio.run(restarted(f"{topic}.before", None))  # the defect: the clocks of the replay alone
    assert estimate_clocks([], delays=before.correlator.delays)[1]["x"] - want[1]["x"] >= 39 * S
    was = {i: v[2] for i, v in before.correlator.emitted.items() if v[2].get("status") != "superseded"}
    assert set(was) == set(expected)  # the same incidents, x's clock in them 40 s off
    assert {was[i]["clocks"]["x"]["offset_s"] - expected[i]["clocks"]["x"]["offset_s"] for i in was
            if "x" in expected[i]["clocks"]} == {39.9}
