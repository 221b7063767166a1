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
