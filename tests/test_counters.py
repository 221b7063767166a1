"""NVLink error counters that rise between samples become nvlink_errors events (ingest/counters.py)."""

from __future__ import annotations

from ingest.counters import counter_events
from ingest.decode import Decoded, Segment

T0 = 1_800_000_000_000_000
S = 1_000_000


def sample(pipeline, ts, recovery, crc=0):
    text = (f"GPU 0: NVIDIA GB200 (UUID: GPU-00000000-0000-0000-0000-000000000006)\n"
            f"         Link 14: Replay Errors: 0\n         Link 14: Recovery Errors: {recovery}\n"
            f"         Link 14: CRC Errors: {crc}")
    seg = Segment(data=text.encode(), origin=f"kafka:fleet.nvml/0/{ts}", stream="s", host="node01", ref_ts=ts,
                  ref_basis="kafka", ingest_ts=ts)
    return pipeline.run(Decoded(segments=[seg])).link_samples


def test_rising_recovery_counter_is_an_event_with_delta_and_rate(pipeline, catalog):
    state: dict = {}
    assert counter_events(sample(pipeline, T0, 502), catalog, state) == []  # first sample: the base
    ev = counter_events(sample(pipeline, T0 + 1260 * S, 505), catalog, state)  # +3 in 21 minutes
    assert len(ev) == 1
    e = ev[0]
    assert (e["kind"], e["host"], e["gpu_index"], e["link"]) == ("nvlink_errors", "node01", 0, 14)
    assert e["details"]["delta"] == 3 and abs(e["details"]["rate_per_s"] - 3 / 1260) < 1e-6
    assert "Recovery Errors" in e["message"]


def test_unchanged_or_reset_counters_are_not_events(pipeline, catalog):
    state: dict = {}
    counter_events(sample(pipeline, T0, 10, crc=5), catalog, state)
    assert counter_events(sample(pipeline, T0 + S, 10, crc=5), catalog, state) == []
    assert counter_events(sample(pipeline, T0 + 2 * S, 0, crc=0), catalog, state) == []  # reset
    ev = counter_events(sample(pipeline, T0 + 3 * S, 0, crc=7), catalog, state)
    assert [(e["details"]["counter"], e["details"]["delta"]) for e in ev] == [("CRC Errors", 7)]


def test_a_counter_that_rose_alone_is_a_link_fault_incident(tmp_path, catalog):
    """A rising NVLink counter with no other fault of its host (the degrading link the hourly report is for): two
    poller records of one link, and two ``nvidia-smi nvlink -e`` snapshots (files 10 minutes apart). Its derived
    signature lacked what the correlator reads of every signature (``action_map``, ``says``): ``diagnose`` and every
    ``correlate()`` crashed, and the Kafka correlator crash-looped on the batch (a break-it pass). Every attribute of a
    line signature the correlator reads exists on a derived one."""
    import os

    from api.diagnose import diagnose_paths
    from schemas.settings import Settings

    rec = ('{{"format": "firstfault.link_sample/1", "host": "node303", "timestamp": "2026-12-03T21:{m}:00Z", '
           '"gpu_index": 0, "device": "0000:18:00.0", "model": "NVIDIA H100 80GB HBM3", "links": [{{"link": 0, '
           '"state": "up", "gbps": 26.5, "counters": {{"CRC Errors": {crc}}}}}]}}')
    (tmp_path / "poller").mkdir()
    (tmp_path / "poller" / "node303.ndjson").write_text(rec.format(m=10, crc=0) + "\n" + rec.format(m=20, crc=5) + "\n")
    smi = tmp_path / "smi"
    smi.mkdir()
    for name, crc, t in (("node404.a.log", 0, 1_796_000_000), ("node404.b.log", 42, 1_796_000_600)):
        (smi / name).write_text("GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-11111111-2222-3333-4444-555555555555)\n"
                                f"\t Link 0: Replay Errors: 0\n\t Link 0: CRC Errors: {crc}\n")
        os.utime(smi / name, (t, t))
    for path, host in ((tmp_path / "poller", "node303"), (smi, "node404")):
        _, batch, incidents = diagnose_paths([path], Settings())
        (inc,) = incidents
        assert (inc["category"], inc["initiator"]["host"], inc["initiator"]["link"]) == ("link_fault", host, 0), inc
        assert inc["next_action"].startswith("An NVLink's error counters are rising")
    line_sig = next(c.sig for c in catalog.entries if c.sig.action_map)
    derived = [c.sig for c in catalog.by_id.values() if c.rx is None]
    assert derived
    for d in derived:
        for name in ("id", "kind", "source", "category", "role", "action", "action_map", "severity_group", "says",
                     "verify"):
            assert hasattr(d, name) and hasattr(line_sig, name), name


def test_nvmls_no_value_is_no_count(pipeline, catalog):
    """NVML's unsigned -1 (18446744073709551615) where a counter has no value was a rise of 1.8e19 CRC errors, and the
    degraded-link report's JSON, CSV and Parquet failed on it (a break-it pass): it is no value, and no event."""
    state: dict = {}
    counter_events(sample(pipeline, T0, 10, crc=5), catalog, state)
    none = sample(pipeline, T0 + S, 10, crc=18446744073709551615)
    assert [v for c, v in zip(none.column("counter").to_pylist(), none.column("value").to_pylist())
            if c == "CRC Errors"] == [None]
    assert counter_events(none, catalog, state) == []
    # DCGM's blank values (dcgm_structs.h: 32-bit 0x7ffffff0 and the three after it, 64-bit, double 2^47) are none
    # either: 2147483632 was a rise of 2.1e9 errors in a minute (a break-it pass)
    for k, blank in enumerate((2147483632, 2147483635, 9223372036854775792, 140737488355328)):
        none = sample(pipeline, T0 + (2 + k) * S, 10, crc=blank)
        assert counter_events(none, catalog, state) == [], blank


def test_the_reports_numbers_print_as_integers_only_where_a_float_holds_them():
    from api.degraded_links import _num

    assert [_num(3.0), _num(0.25), _num(2.0**60), _num(1e308)] == [3, 0.25, 2.0**60, 1e308]
    assert type(_num(2.0**52)) is int and type(_num(2.0**60)) is float


def test_a_prometheus_samples_own_timestamp_is_its_time(pipeline, catalog):
    """dcgm-exporter samples with their timestamps (a /federate dump): all three were at their file's time, in no
    order, and the counter's rise had no rate (a break-it pass). Each is at its own time; the rise has its rate."""
    lines = "\n".join(f'DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_L3{{gpu="3",pci_bus_id="00000000:19:00.0"}} {v} {ms}'
                      for v, ms in ((10, 1764471600000), (20, 1764472200000)))
    seg = Segment(data=lines.encode(), origin="file:node32.prom", stream="s", host="node32", ref_ts=T0,
                  ref_basis="file", ingest_ts=T0)
    samples = pipeline.run(Decoded(segments=[seg])).link_samples
    assert [t.timestamp() for t in samples.column("ts").to_pylist()] == [1764471600.0, 1764472200.0]
    (ev,) = counter_events(samples, catalog, {})
    assert ev["details"]["delta"] == 10 and abs(ev["details"]["rate_per_s"] - 10 / 600) < 1e-6


def test_a_partition_no_longer_assigned_leaves_no_lag_series(tmp_path):
    """``firstfault_consumer_lag_records`` kept the last lag of a partition a rebalance gave to another worker, for
    good: ``sum`` counted it twice and a "lag > N" alert on it fired on (an operator's trial). The series of a
    partition no longer assigned goes with it. (The consumer here is a stand-in with aiokafka's three calls
    ``lag()`` makes, so that the assignment can change between two calls without a second worker and a rebalance.)"""
    import asyncio

    from aiokafka import TopicPartition

    from ingest import metrics
    from ingest.consumer import IngestWorker
    from ingest.lake import Lake
    from ingest.pipeline import Pipeline

    class _Assigned:
        def __init__(self, tps, end):
            self.tps, self.end = set(tps), end

        def assignment(self):
            return set(self.tps)

        async def end_offsets(self, tps):
            return {tp: self.end for tp in tps}

        async def position(self, tp):
            return 0

    a, b = TopicPartition("lagt", 0), TopicPartition("lagt", 1)
    w = IngestWorker(bootstrap="127.0.0.1:9", topics=["lagt"], group_id="g", lake=Lake(str(tmp_path)), dlq_topic="d",
                     pipeline=Pipeline())
    w._consumer = _Assigned([a, b], 7)
    assert asyncio.run(w.lag()) == 14 and w.health.lag == {"lagt/0": 7, "lagt/1": 7}

    def series():
        return sorted(s.labels["partition"] for m in metrics.LAG.collect() for s in m.samples
                      if s.labels["topic"] == "lagt")

    assert series() == ["0", "1"]
    w._consumer = _Assigned([a], 3)  # partition 1 went to another worker
    assert asyncio.run(w.lag()) == 3 and w.health.lag == {"lagt/0": 3} and series() == ["0"]
    w._consumer = _Assigned([], 0)
    assert asyncio.run(w.lag()) == -1 and w.health.lag == {} and series() == []


def test_a_busy_worker_reports_its_lag(tmp_path):
    """An ingest worker measured its lag only when a fetch came back empty: 160,000 records behind, busy with one
    batch after another, its /healthz said ``lag: {}`` and /metrics had no ``firstfault_consumer_lag_records`` (a
    docs check against a real broker). A busy worker measures it too, every ``broker_check_s``. (The consumer and the
    batches are stand-ins: the loop's own calls, without a broker holding a backlog.)"""
    import asyncio
    from types import SimpleNamespace

    from aiokafka import TopicPartition

    from ingest import metrics
    from ingest.consumer import IngestWorker
    from ingest.lake import Lake
    from ingest.pipeline import Pipeline

    tp = TopicPartition("busyt", 0)
    done = []

    class _Behind:
        def assignment(self):
            return {tp}

        async def end_offsets(self, tps):
            return {t: 1000 for t in tps}

        async def position(self, t):
            return 10 * len(done)

    w = IngestWorker(bootstrap="127.0.0.1:9", topics=["busyt"], group_id="g", lake=Lake(str(tmp_path)),
                     dlq_topic="d", pipeline=Pipeline())
    w._consumer, w.broker_check_s = _Behind(), 0.0

    async def next_batch(idle_fetch_ms):
        return SimpleNamespace(records=[object()] * 10)  # never an empty fetch: a backlog

    async def one_batch(taken):
        done.append(taken)
        if len(done) == 3:
            w.stop.set()

    w._next_batch, w._one_batch = next_batch, one_batch
    asyncio.run(w.run())
    assert w.health.lag == {"busyt/0": 970}  # measured after the third batch, still behind
    assert metrics.LAG.labels(topic="busyt", partition="0")._value.get() == 970


def test_quiet_hosts_counters_are_forgotten_live_ones_kept(pipeline, catalog):
    """Issue 6: pods come and go with new host names; their counters' last values leave after COUNTER_QUIET_S
    without a sample, so the state stays as large as the hosts heard lately, and a live host's increase is the same
    event it was."""
    from ingest.counters import COUNTER_QUIET_S, forget_quiet_hosts

    state: dict = {}
    heard: dict[str, float] = {}
    counter_events(sample(pipeline, T0, 502), catalog, state)  # node01, live throughout
    per_host = len(state)
    assert per_host == 3  # replay, recovery, CRC of link 14
    for i in range(2000):  # 2,000 pods heard once each, an hour apart
        now = i * 3600.0
        for k in [k for k in state if k[0] == "node01"]:
            state[(f"pod-{i}", *k[1:])] = (T0, 1.0)
        forget_quiet_hosts(state, heard, ["node01", f"pod-{i}"], now)
        assert len(state) <= per_host * (1 + COUNTER_QUIET_S / 3600 + 1)
        assert len(heard) <= 1 + COUNTER_QUIET_S / 3600 + 1
    assert "pod-0" not in heard and not any(k[0] == "pod-0" for k in state)
    assert sum(k[0] == "pod-1999" for k in state) == per_host
    ev = counter_events(sample(pipeline, T0 + 1260 * S, 505), catalog, state)  # node01 kept its base
    assert [(e["host"], e["details"]["from"], e["details"]["to"]) for e in ev] == [("node01", 502, 505)]
    # a host quiet past COUNTER_QUIET_S starts from a base again, as after a restart
    n = len(state)
    assert forget_quiet_hosts(state, heard, [], 2000 * 3600.0 + COUNTER_QUIET_S + 1) == n > 0
    assert state == {} and heard == {}
    assert counter_events(sample(pipeline, T0 + 2520 * S, 509), catalog, state) == []
