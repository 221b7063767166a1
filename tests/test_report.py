"""The hourly degraded-link report: pure computation with explicit numbers, then the real thing.

The real thing: NVML poller output (tests/data/report/input, made by make_input.py there) through the
ingest pipeline into a Parquet lake, read back through the read-only DuckDB views; the JSON compared with
a golden file; the four formats written by ``write_hourly``; the HTTP route on the real uvicorn server;
the CLI; and the HTML opened in headless Chromium, its charts checked in the DOM and on a screenshot.

Golden file: UPDATE_GOLDEN=1 rewrites tests/data/report/expected.json; review the diff.
"""

from __future__ import annotations

import csv
import importlib.util
import io
import json
import os
import re
import shutil
import subprocess
import threading
import time
from datetime import datetime, timezone
from pathlib import Path

import duckdb
import httpx
import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from api.degraded_links import (
    LinkKey, Series, build_report, counter_class, counter_delta, due_hour, expectation, match_incidents,
    parse_hour, state_view, to_us,
)
from api.report import degraded_link_report, load_inputs, report_router, write_hourly
from api.report_render import CELL, host_grid, links_table, render
from correlate.incident import iso
from ingest.files import decode_paths
from ingest.lake import Lake
from ingest.pipeline import Pipeline
from schemas.incidents import incident_rows
from schemas.settings import Settings

DATA = Path(__file__).resolve().parent / "data" / "report"
GOLDEN = DATA / "expected.json"
HOUR = "2026-11-30T03"
M = 60 * 1_000_000  # a minute in µs
H3 = to_us(datetime(2026, 11, 30, 3, tzinfo=timezone.utc))  # start of the report hour
CHROMIUM = "/usr/bin/chromium"
_spec = importlib.util.spec_from_file_location("report_make_input", DATA / "make_input.py")
mk = importlib.util.module_from_spec(_spec)  # event_key, rekey: how incidents.json names its events
_spec.loader.exec_module(mk)


# --- pure: numbers worked out by hand ---------------------------------------------------------------------------
def test_counter_delta_counts_from_the_sample_before_the_hour():
    pts = [(H3 - 20 * M, 4.0), (H3, 10.0), (H3 + 20 * M, 25.0), (H3 + 40 * M, 55.0), (H3 + 60 * M, 900.0)]
    d = counter_delta(pts, H3, H3 + 60 * M)
    assert (d["start_value"], d["end_value"], d["delta"], d["resets"]) == (4, 55, 51, 0)
    assert d["span_s"] == 3600 and d["rate_per_hour"] == 51.0  # the 04:00 sample belongs to the next hour
    assert d["from"] == "2026-11-30T02:40:00.000000Z" and d["to"] == "2026-11-30T03:40:00.000000Z"


def test_counter_reset_counts_the_new_value():
    pts = [(H3 - 20 * M, 100.0), (H3 + 20 * M, 3.0), (H3 + 40 * M, 8.0)]
    d = counter_delta(pts, H3, H3 + 60 * M)
    assert (d["delta"], d["resets"], d["rate_per_hour"]) == (8, 1, 8.0)


def test_counter_without_baseline_starts_at_the_first_sample_and_none_without_samples():
    pts = [(H3 + 10 * M, 5.0), (H3 + 40 * M, 11.0)]
    d = counter_delta(pts, H3, H3 + 60 * M)
    assert (d["delta"], d["span_s"], d["rate_per_hour"]) == (6, 1800, 12.0)
    assert counter_delta(pts, H3 + 60 * M, H3 + 120 * M) is None
    one = counter_delta([(H3 + 10 * M, 5.0)], H3, H3 + 60 * M)
    assert one["delta"] == 0 and one["rate_per_hour"] is None
    # a rise over less than a minute gives its delta, no rate: 980 a microsecond after the baseline was 3.528e12 an
    # hour (a break-it pass); a minute is enough
    us = counter_delta([(H3 - 1, 20.0), (H3, 1000.0)], H3, H3 + 60 * M)
    assert (us["delta"], us["rate_per_hour"]) == (980, None)
    minute = counter_delta([(H3 - 1, 20.0), (H3 + M - 1, 1000.0)], H3, H3 + 60 * M)
    assert (minute["delta"], minute["rate_per_hour"]) == (980, 58800.0)


def test_state_view_counts_changes_from_the_state_before_the_hour():
    states = [(H3 - 20 * M, "up"), (H3, "up"), (H3 + 20 * M, "inactive"), (H3 + 40 * M, "up")]
    v = state_view(states, H3, H3 + 60 * M)
    assert (v["last"], v["changes"], v["samples"], v["down_since"]) == ("up", 2, 3, None)
    assert [(t["from"], t["to"]) for t in v["transitions"]] == [("up", "inactive"), ("inactive", "up")]
    down = [(H3 - 120 * M, "up"), (H3 - 60 * M, "inactive"), (H3 + 5 * M, "down")]
    v = state_view(down, H3, H3 + 60 * M)
    # inactive -> down is no change of up-ness; the link is down since the first not-up sample
    assert (v["last"], v["changes"], v["down_since"]) == ("down", 0, "2026-11-30T02:00:00.000000Z")


def test_expectation_platform_baseline_or_by_design():
    up_before = [(H3 - 60 * M, "up"), (H3 + 5 * M, "inactive")]
    assert expectation(7, 18, [], H3) == "platform"
    assert expectation(20, 18, up_before, H3 + 60 * M) == "baseline"
    assert expectation(3, 0, [(H3, "inactive")], H3 + 60 * M) is None  # a PCIe card's link: by design
    assert expectation(3, None, [(H3 + 70 * M, "up")], H3 + 60 * M) is None  # up only after the hour
    assert expectation(3, 0, [(H3, "inactive")], H3 + 60 * M, wired=True) == "wiring"  # -R names its far end


def test_a_bridged_link_never_sampled_up_is_down_where_nvlink_r_names_its_far_end():
    """Two H100 NVL cards on a bridge (the platform wires no link: 0), ``nvidia-smi nvlink -R`` naming each end's far
    end, link 1 inactive at both ends in every sample of the hour and never up: one row, down, ``expected``
    ``wiring``. It was no row at all (``not_up``, drawn "by design") while ``diagnose`` made it a link.both_ends
    incident and ``GET /links`` said degraded (a fresh user's trial). Without ``-R`` it stays by design."""
    rows = []
    for g in (0, 1):
        rows += _polled("ws1", g, 0, [], model="NVIDIA H100 NVL")
        rows += [{"host": "ws1", "ts": H3 + 20 * M, "gpu_index": g, "link": 1, "state": "inactive", "device": None,
                  "counter": None, "value": None, "model": "NVIDIA H100 NVL"}]
    r = build_report(rows, [], H3, topology=BRIDGE)
    assert [(x["gpu_index"], x["link"], x["problems"], x["expected"], x["peer"]["gpu_index"], x["peer"]["listed"])
            for x in r["links"]] == [(0, 1, ["down"], "wiring", 1, True)]
    assert (r["totals"]["links_listed"], r["totals"]["down"]) == (1, 1)
    assert "reset both (nvidia-smi -r -i 0, then -i 1)" in r["links"][0]["next_action"], r["links"][0]["next_action"]
    assert build_report(rows, [], H3)["links"] == []  # nothing names the far end: a PCIe card's link, by design


def test_a_link_not_up_on_a_gpu_of_unknown_wiring_is_not_drawn_by_design():
    """The demo's node008 (DCGM's NVLink lines, no GPU model, no fleet config) showed its five links down in grey as
    "not up, not expected (by design)" while ``/links`` said ``expected_up: null`` (a fresh user's trial): with the
    GPU's link count unknown its links are "wiring unknown"; a PCIe card's (0 links expected) stay by design."""
    from api.report_render import CELL, host_grid

    def grid(expected):
        host = {"host": "n1", "gpus": [{"gpu_index": 0, "model": None, "expected_links": expected,
                                        "sampled": [0, 1, 2], "not_up": [1, 2]}]}
        return host_grid(host, [])

    unknown, pcie = grid(None), grid(0)
    assert [c["status"] for c in unknown["rows"][0]["cells"]] == ["ok", "unknown", "unknown"]
    assert unknown["rows"][0]["cells"][1]["title"] == "GPU 0 link 1: not up, wiring unknown"
    assert unknown["present"] == ["ok", "unknown"] and CELL["unknown"][1] == "?"
    assert [c["status"] for c in pcie["rows"][0]["cells"]] == ["ok", "by_design", "by_design"]


def test_hours_and_counter_names():
    assert parse_hour("2026-11-30T03") == datetime(2026, 11, 30, 3, tzinfo=timezone.utc)
    assert parse_hour("2026-11-30T05:00:00+02:00") == datetime(2026, 11, 30, 3, tzinfo=timezone.utc)
    # the hour is checked in UTC: a half-hour zone's whole hour is no report's (its report was labelled 22 and
    # read 22:30 - 23:30, and --store wrote it over hour 22), and its half hour is one
    assert parse_hour("2026-12-01T22:30+00:30") == datetime(2026, 12, 1, 22, tzinfo=timezone.utc)
    with pytest.raises(ValueError, match=r"UTC hour.*22:30:00 UTC"):
        parse_hour("2026-12-02T04:00+05:30")
    for bad in ("2026-11-30T3x", "2026-11-30T03:30", "yesterday", "2026-11-30", "20261130"):
        with pytest.raises(ValueError, match="hour"):
            parse_hour(bad)
    with pytest.raises(ValueError, match="2026-11-30T00 for its first"):  # a day is not an hour of it
        parse_hour("2026-11-30")
    # the right form, an impossible date or hour: which part (it said "must look like 2026-11-30T03", which it did),
    # other scripts' digits, and a time off the hour by a microsecond said as such (a break-it pass)
    for bad, said in (("2026-13-03T09", "hour '2026-13-03T09' is no UTC hour: month must be in 1..12"),
                      ("2026-12-03T25", "is no UTC hour: hour must be in 0..23"),
                      ("٢٠٢٦-12-03T09", "ASCII digits"),
                      ("2026-12-03T09:00:00.000001Z", "(09:00:00.000001 UTC)")):
        with pytest.raises(ValueError, match=re.escape(said)):
            parse_hour(bad)
    # a zone's shift at the ends of the calendar overflowed (OverflowError: a traceback, a 500; a break-it pass)
    for far in ("0001-01-01T00:00+01:00", "9999-12-31T23:00-01:00"):
        with pytest.raises(ValueError, match="between 2000 and 2100"):
            parse_hour(far)
    assert due_hour(datetime(2026, 11, 30, 4, 4, tzinfo=timezone.utc), 300) == parse_hour("2026-11-30T02")
    assert due_hour(datetime(2026, 11, 30, 4, 6, tzinfo=timezone.utc), 300) == parse_hour("2026-11-30T03")
    assert [counter_class(n) for n in ("CRC Errors", "Replay Errors", "Recovery Errors",
                                       "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT", "Rx Bytes", None)] == \
        ["crc", "replay", "recovery", "crc", None, None]


def test_incidents_match_by_gpu_index_or_bus_id_and_keep_the_strongest_role():
    base = {"category": "link_fault", "severity": "error", "status": "open", "start": H3, "host": "n1", "link": 7}
    rows = [{**base, "id": "a", "role": "context", "gpu_index": 2, "device": None},
            {**base, "id": "a", "role": "initiator", "gpu_index": 2, "device": None},
            {**base, "id": "b", "role": "downstream", "gpu_index": None, "device": "0000:5d:00.0"},
            {**base, "id": "c", "role": "downstream", "gpu_index": 3, "device": None},
            {**base, "id": "d", "role": "downstream", "gpu_index": 2, "device": None, "host": "n2"}]
    got = match_incidents(LinkKey("n1", 2, 7), "0000:5d:00.0", rows)
    assert [(i["id"], i["role"]) for i in got] == [("a", "initiator"), ("b", "downstream")]
    assert [i["id"] for i in match_incidents(LinkKey("n1", 2, 7), None, rows)] == ["a"]


def test_build_report_on_rows_status_new_persisting_recurring():
    """Three links with CRC rises in different hours: status, first listed, hours listed, cleared."""
    def crc(host, points):
        return [{"host": host, "ts": t, "gpu_index": 0, "device": None, "link": 1, "state": None,
                 "counter": "CRC Errors", "value": v, "model": "NVIDIA H100 80GB HBM3"} for t, v in points]
    rows = (crc("new", [(H3 - 30 * M, 0), (H3 + 10 * M, 2)])
            + crc("persist", [(H3 - 90 * M, 0), (H3 - 30 * M, 1), (H3 + 10 * M, 2)])
            + crc("recur", [(H3 - 200 * M, 0), (H3 - 150 * M, 4), (H3 - 30 * M, 4), (H3 + 10 * M, 5)])
            + crc("gone", [(H3 - 90 * M, 0), (H3 - 30 * M, 1), (H3 + 10 * M, 1)])
            # listed the hour before, then no sample in the hour: not known well, so not cleared (the demo's next
            # hour, and a host that went silent after its links failed, said them cleared: a fresh user's trial)
            + crc("quiet", [(H3 - 90 * M, 0), (H3 - 30 * M, 1)]))
    r = build_report(rows, [], H3)
    got = {x["host"]: (x["status"], x["first_listed"], x["hours_listed"], x["errors"]["crc"]) for x in r["links"]}
    assert got == {"new": ("new", "2026-11-30T03", 1, 2), "persist": ("persisting", "2026-11-30T02", 2, 1),
                   "recur": ("recurring", "2026-11-30T00", 2, 1)}
    assert r["cleared"] == [{"host": "gone", "domain": "gone", "gpu_index": 0, "link": 1, "problems": ["errors"],
                            "peer": None}]
    assert r["silent_hosts"] == ["quiet"] and r["totals"]["cleared"] == 1
    # asked during the hour, "quiet" is silent so far; asked before the hour began, no host is (every host of the
    # window was listed silent, in red, beside the note that the hour had not begun: a fresh user's trial)
    assert build_report(rows, [], H3, asked_us=H3 + 5 * M)["silent_hosts"] == ["quiet"]
    early = build_report(rows, [], H3 + 60 * M, asked_us=H3 + 5 * M)
    assert early["silent_hosts"] == [] and early["totals"]["silent_hosts"] == 0
    assert build_report(rows, [], H3 + 60 * M)["silent_hosts"] == ["gone", "new", "persist", "quiet", "recur"]
    assert r["totals"]["hosts_sampled"] == 4 and r["totals"]["errors_delta"]["crc"] == 4
    rates = next(x for x in r["links"] if x["host"] == "new")["rates_24h"]
    assert len(rates) == 24 and rates[-1] == {"hour": HOUR, "crc": 3.0, "replay": None, "recovery": None}
    # a rise over less than a minute of samples: listed with its delta, no rate in the table nor the 24-hour chart (the
    # chart summed the missing rate and the report crashed, CLI, API and the service's hourly write: a break-it pass)
    r = build_report(crc("fast", [(H3 + 10 * M, 0), (H3 + 10 * M + 30_000_000, 5)]), [], H3)
    [x] = r["links"]
    assert x["errors"]["crc"] == 5 and x["rates_24h"][-1]["crc"] is None
    assert [k["rate_per_hour"] for k in x["counters"]] == [None]
    assert render(r, "csv") and render(r, "html") and render(r, "parquet")


def _polled(host, gpu, link, spells, first=-180, last=180, model="NVIDIA H100 80GB HBM3"):
    """State rows of one link polled each minute from ``first`` to ``last`` minutes around 03:00, up but for
    ``spells`` ([(down µs, up µs)]: a not-up sample at the first, up again at the second)."""
    rows = []
    for m in range(first, last):
        t = H3 + m * M
        up = not any(a <= t < b for a, b in spells)
        rows.append({"host": host, "ts": t, "gpu_index": gpu, "link": link, "state": "up" if up else "inactive",
                     "device": None, "counter": None, "value": None, "model": model})
    for a, b in spells:  # the samples at the spell's own ends
        rows += [{**rows[0], "ts": a, "state": "inactive"}, {**rows[0], "ts": b, "state": "up"}]
    return rows


def _problems(rows, hour_us):
    return {(x["host"], x["gpu_index"], x["link"]): x["problems"] for x in build_report(rows, [], hour_us)["links"]}


def test_a_flap_is_one_in_every_hour_it_touches_wherever_the_boundary_falls():
    """Down at 02:59:50 and up at 03:00:00 read ``down`` in hour 02 and ``cleared`` in 03, never ``flapped``, while
    the same pair at 03:20 was ``flapped`` (a break-it pass). A short spell not up is a flap of each hour it
    overlaps, and the hour before says ``flapped``, not ``down``, once the up just past its end is known."""
    S = 1_000_000
    key = ("n1", 0, 1)
    for down, up in ((H3 - 10 * S, H3), (H3 - 10 * S, H3 + 10 * S), (H3 - 1, H3 + 4 * M),
                     (H3 - 30 * S, H3 + 30 * S)):
        rows = _polled(*key, [(down, up)])
        before, during = build_report(rows, [], H3 - 60 * M), build_report(rows, [], H3)
        assert _problems(rows, H3 - 60 * M) == {key: ["flapped"]}, (down, up)
        assert _problems(rows, H3) == {key: ["flapped"]}, (down, up)
        assert before["totals"]["down"] == 0 and during["cleared"] == []
        assert during["links"][0]["status"] == "persisting"
        assert during["links"][0]["state"]["flaps"] == [{"down": iso(down), "up": iso(up), "seconds": (up - down) / S}]
        assert _problems(rows, H3 + 60 * M) == {}  # the hour after: nothing
    # inside one hour, the same spell: flapped there only
    rows = _polled(*key, [(H3 + 20 * M - 10 * S, H3 + 20 * M)])
    assert (_problems(rows, H3 - 60 * M), _problems(rows, H3)) == ({}, {key: ["flapped"]})
    # a spell that ends past what the hour's report reads (12 minutes after it): down when that hour ended, a flap
    # of the next hour, which says it was listed the hour before
    rows = _polled(*key, [(H3 - 2 * M, H3 + 10 * M)])
    assert (_problems(rows, H3 - 60 * M), _problems(rows, H3)) == ({key: ["down"]}, {key: ["flapped"]})
    # an outage longer than an hour is no flap: down, then cleared
    rows = _polled(*key, [(H3 - 50 * M, H3 + 50 * M)])
    assert (_problems(rows, H3 - 60 * M), _problems(rows, H3)) == ({key: ["down"]}, {})
    assert [(c["link"], c["problems"]) for c in build_report(rows, [], H3)["cleared"]] == [(1, ["down"])]
    # a link that goes down and stays down after the hour is down; its first samples not up are no flap
    rows = _polled(*key, [(H3 - 5 * S, H3 + 120 * M)])
    assert _problems(rows, H3 - 60 * M) == {key: ["down"]}
    assert _problems(_polled(*key, [(H3 - 200 * M, H3 + 10 * M)], first=-180), H3) == {}


def _remote(host, gpu, link, peer, peer_link, ts=H3 - 600 * M):
    """A ``topology`` row as ``nvidia-smi nvlink -R`` gives it: GPU by index, remote by bus id and link."""
    return {"host": host, "ts": ts, "fact": "nvlink_remote", "gpu_index": gpu, "device": None, "link": link,
            "peer_name": None, "peer_device": peer, "peer_link": peer_link, "path": None}


#: two H100 NVL cards joined by a bridge: -R names the peer GPU's bus id (reference/topology.md §4, §7), by index only
BRIDGE = [_remote("ws1", 0, k, "0000:41:00.0", k) for k in range(2)] + \
    [_remote("ws1", 1, k, "0000:01:00.0", k) for k in range(2)]


def _bridged_rows():
    """ws1: GPU 0 and GPU 1 on one bridge, link 1 down from 03:20 on both ends; link 0 up, its CRC rising on both
    ends in hour 03 (2 on GPU 0's, 3 on GPU 1's)."""
    rows = []
    for g in (0, 1):
        rows += _polled("ws1", g, 0, [], model="NVIDIA H100 NVL")
        rows += _polled("ws1", g, 1, [(H3 + 20 * M, H3 + 180 * M)], model="NVIDIA H100 NVL")
        rows += [{"host": "ws1", "ts": t, "gpu_index": g, "link": 0, "state": None, "device": None,
                  "counter": "CRC Errors", "value": v, "model": None}
                 for t, v in ((H3 - 30 * M, 7), (H3 + 30 * M, 7 + 2 + g))]
    return rows


def test_both_ends_of_one_gpu_to_gpu_link_are_one_row_naming_both():
    """Both ends of one NVLink between two GPUs of a host were two rows, counted twice in ``down``, with no word of
    the other end (a break-it pass). Where ``nvidia-smi nvlink -R`` names the far end, one physical link is one
    row and its ``peer`` names the other end; where nothing names it, the peer is unknown (null)."""
    rows = _bridged_rows()
    bare = build_report(rows, [], H3)  # no -R: each end a row of its own, the peer unknown
    assert [(x["gpu_index"], x["link"], x["problems"], x["peer"]) for x in bare["links"]] == [
        (0, 1, ["down"], None), (1, 1, ["down"], None), (1, 0, ["errors"], None), (0, 0, ["errors"], None)]
    assert (bare["totals"]["links_listed"], bare["totals"]["down"]) == (4, 2)

    r = build_report(rows, [], H3, topology=BRIDGE)
    t = r["totals"]
    assert (t["links_listed"], t["down"], t["errors"], t["new"]) == (2, 1, 1, 2)
    assert t["errors_delta"]["crc"] == 5 == bare["totals"]["errors_delta"]["crc"]  # both ends' counters, once each
    down, crc = r["links"]  # worst first
    assert (down["gpu_index"], down["link"], down["problems"]) == (0, 1, ["down"])
    p = down["peer"]
    assert {k: p[k] for k in ("kind", "gpu_index", "link", "device", "listed", "problems")} == {
        "kind": "gpu", "gpu_index": 1, "link": 1, "device": "0000:41:00.0", "listed": True, "problems": ["down"]}
    assert p["state"]["down_since"] == "2026-11-30T03:20:00.000000Z"
    assert (crc["errors"]["crc"], [k["delta"] for k in crc["counters"]], crc["peer"]["counters"][0]["delta"]) == \
        (5, [2], 3)
    assert crc["rates_24h"][-1]["crc"] == 5.0  # the link's rate: both ends' counters
    host = r["hosts"][0]
    assert (host["links_listed"], host["down"], r["domains"][0]["down"]) == (2, 1, 1)
    # the heatmap colours both ends; the CSV and Parquet name the other end
    g = host_grid(host, r["links"])
    status = {(row["gpu"], c["link"]): c["status"] for row in g["rows"] for c in row["cells"]}
    assert (status[(0, 1)], status[(1, 1)], status[(1, 0)]) == ("down", "down", "errors")
    cell = next(c for row in g["rows"] if row["gpu"] == 1 for c in row["cells"] if c["link"] == 1)
    assert cell["title"] == "GPU 1 link 1: down (inactive since 2026-11-30 03:20) (other end: GPU 0 link 1)"
    csv_rows = list(csv.DictReader(io.StringIO(render(r, "csv").decode())))
    assert [(c["gpu_index"], c["link"], c["peer_kind"], c["peer_gpu_index"], c["peer_link"], c["peer_listed"],
             c["peer_problems"], c["peer_last_state"]) for c in csv_rows] == [
        ("0", "1", "gpu", "1", "1", "true", "down", "inactive"), ("0", "0", "gpu", "1", "0", "true", "errors", "up")]
    t = pq.read_table(io.BytesIO(render(r, "parquet")))
    assert t.column("peer_device").to_pylist() == ["0000:41:00.0"] * 2
    bare_t = links_table(bare)
    assert bare_t.column("peer_kind").to_pylist() == [None] * 4
    html = render(r, "html").decode()
    assert "GPU 1 link 1" in html and "one link, both ends" in html
    assert 'title="no nvidia-smi nvlink -R line names it">unknown</span>' in render(bare, "html").decode()
    # the hours after: persisting as one link; cleared as one, naming its other end
    later = build_report(rows, [], H3 + 60 * M, topology=BRIDGE)
    assert [(x["gpu_index"], x["link"], x["status"]) for x in later["links"]] == [(0, 1, "persisting")]
    assert [(c["gpu_index"], c["link"]) for c in later["cleared"]] == [(0, 0)]
    assert later["cleared"][0]["peer"] == {"kind": "gpu", "gpu_index": 1, "link": 0, "device": "0000:41:00.0"}
    # a link whose far end is an NVSwitch port (HGX): named by its bus id and port, no second row to fold
    switch = [_remote("ws1", 0, 1, "0000:07:00.0", 46)]
    one = build_report(_polled("ws1", 0, 1, [(H3 + 20 * M, H3 + 180 * M)], model="NVIDIA H100 80GB HBM3"), [], H3,
                       topology=switch)
    [x] = one["links"]
    assert {k: x["peer"][k] for k in ("kind", "gpu_index", "link", "device", "listed")} == {
        "kind": "other", "gpu_index": None, "link": 46, "device": "0000:07:00.0", "listed": False}


def test_a_peer_named_only_one_way_or_the_other_way_round():
    """One end's ``-R`` names the other, which has no line of its own: still one link. Two ends whose lines name
    other links than each other (a changed cabling, a misread) are not folded into one row."""
    rows = _bridged_rows()
    one_way = [x for x in BRIDGE if x["gpu_index"] == 0] + [
        {"host": "ws1", "ts": H3 - 600 * M, "fact": "gpu_bus", "gpu_index": g, "device": d, "link": None,
         "peer_name": None, "peer_device": None, "peer_link": None, "path": None}
        for g, d in ((0, "0000:01:00.0"), (1, "0000:41:00.0"))]
    r = build_report(rows, [], H3, topology=one_way)
    assert [(x["gpu_index"], x["link"], x["peer"]["gpu_index"], x["peer"]["listed"]) for x in r["links"]] == [
        (0, 1, 1, True), (0, 0, 1, True)]
    crossed = [x for x in one_way if x["fact"] == "gpu_bus"] + [
        _remote("ws1", 0, 1, "0000:41:00.0", 1), _remote("ws1", 1, 1, "0000:01:00.0", 0)]
    r = build_report(rows, [], H3, topology=crossed)
    assert r["totals"]["down"] == 2


def test_a_flap_across_the_boundary_is_not_flapping_again_in_the_later_hour():
    """Down at 02:59:50 and up at 03:00:00 is one flap in both hours' reports; the 03 report's next action read
    "Flapping again (2 of 24 h listed): … reset …; then hardware service" for that one 10-second flap (a fresh user's
    trial). It is watched there, as in 02; a second flap in 03 is flapping again."""
    S = 1_000_000
    key = ("n1", 0, 1)
    rows = _polled(*key, [(H3 - 10 * S, H3)])
    before, (x,) = build_report(rows, [], H3 - 60 * M)["links"][0], build_report(rows, [], H3)["links"]
    assert before["next_action"].startswith("Went down and came back up: watch it;"), before["next_action"]
    assert (x["status"], x["problems"]) == ("persisting", ["flapped"])
    assert x["next_action"].startswith("Went down and came back up across the hour's boundary, the flap the hour "
                                       "before lists: watch it;"), x["next_action"]
    assert "flapped (1 change; not up 02:59:50–03:00:00)" in render(build_report(rows, [], H3), "html").decode()
    rows = _polled(*key, [(H3 - 10 * S, H3), (H3 + 20 * M, H3 + 21 * M)])
    (x,) = build_report(rows, [], H3)["links"]
    assert x["next_action"].startswith("Flapping again (2 of 24 h listed): when the jobs on GPU 0 are done"), x


def test_a_link_seen_from_its_other_end_the_hour_before_persists():
    """One bridged link (``BRIDGE``): its GPU 0 end's CRC errors rise in hour 02, its GPU 1 end's in hour 03. The
    hour-03 row (the GPU 1 end alone) was ``new``, first listed in 03, though the physical link was listed the hour
    before from its other end (a break-it pass): it persists, listed since 02."""
    rows = []
    for g, values in ((0, (7, 9, 9)), (1, (3, 3, 6))):
        rows += _polled("ws1", g, 1, [], model="NVIDIA H100 NVL")
        rows += [{"host": "ws1", "ts": t, "gpu_index": g, "link": 1, "state": None, "device": None,
                  "counter": "CRC Errors", "value": v, "model": None}
                 for t, v in zip((H3 - 90 * M, H3 - 30 * M, H3 + 30 * M), values)]
    before, during = build_report(rows, [], H3 - 60 * M, topology=BRIDGE), build_report(rows, [], H3, topology=BRIDGE)
    assert [(x["gpu_index"], x["link"], x["status"]) for x in before["links"]] == [(0, 1, "new")]
    assert [(x["gpu_index"], x["link"], x["status"], x["hours_listed"], x["first_listed"]) for x in during["links"]] \
        == [(1, 1, "persisting", 2, "2026-11-30T02")]
    assert during["cleared"] == []


def test_empty_hour():
    r = build_report([], [], H3)
    assert r["totals"]["links_listed"] == 0 and r["hosts"] == [] and r["links"] == []
    html = render(r, "html").decode()
    assert "No NVLink samples arrived for this hour" in html
    assert links_table(r).num_rows == 0 and render(r, "csv").startswith(b'"hour","host"')


# --- the real lake ---------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def lake_settings(tmp_path_factory):
    """The fixed input through the ingest pipeline into a fresh Parquet lake, with the incidents snapshot."""
    root = tmp_path_factory.mktemp("report-lake")
    settings = Settings(lake=str(root / "lake"), state_dir=root / "state", fleet_config=DATA / "fleet.yaml")
    batch = Pipeline().run(decode_paths([DATA / "input"]))
    lake = Lake(settings.lake)
    lake.init()
    lake.write("events", batch.events, "fixture")
    lake.write("link_samples", batch.link_samples, "fixture")
    lake.write("topology", batch.topology, "fixture")
    ids = {mk.event_key(e): e["event_id"] for e in batch.events.to_pylist()}
    incidents = mk.rekey(json.loads((DATA / "incidents.json").read_text()), ids)
    inc_t, ev_t = incident_rows(incidents, to_us(datetime(2026, 11, 30, 6, tzinfo=timezone.utc)))
    lake.write("incidents", inc_t, "fixture")
    lake.write("incident_evidence", ev_t, "fixture")
    return settings


@pytest.fixture(scope="module")
def report(lake_settings):
    return degraded_link_report(lake_settings, HOUR)


def _link(report, host, gpu, link):
    return next(x for x in report["links"] if (x["host"], x["gpu_index"], x["link"]) == (host, gpu, link))


def test_golden_json(report):
    got = render(report, "json")
    if os.environ.get("UPDATE_GOLDEN"):
        GOLDEN.write_bytes(got)
    assert got.decode() == GOLDEN.read_text(), "report changed: UPDATE_GOLDEN=1 and review the diff"
    assert render(report, "json") == got  # the same input gives the same bytes


def test_report_values(report):
    """What make_input.py staged, as a person would read it off the report."""
    t = report["totals"]
    assert (t["links_listed"], t["down"], t["errors"], t["flapped"]) == (5, 2, 2, 1)
    assert (t["new"], t["persisting"], t["recurring"], t["hosts_sampled"], t["links_sampled"]) == (3, 2, 0, 4, 216)
    assert t["errors_delta"] == {"crc": 59, "replay": 9, "recovery": 1}
    crc = _link(report, "node07", 1, 5)
    assert crc["problems"] == ["errors"] and crc["status"] == "persisting" and crc["first_listed"] == "2026-11-30T02"
    by_name = {c["counter"]: (c["delta"], c["rate_per_hour"]) for c in crc["counters"]}
    assert by_name == {"CRC Errors": (51, 51.0), "Replay Errors": (9, 9.0), "Recovery Errors": (1, 1.0)}
    assert crc["rates_24h"][-2]["crc"] == pytest.approx(4 / (400 / 60), abs=1e-3)  # 20:00 -> 02:40, 4 errors
    down = _link(report, "node07", 2, 7)
    assert down["problems"] == ["down"] and down["status"] == "new" and down["expected"] == "platform"
    assert down["state"]["down_since"] == "2026-11-30T03:20:00.000000Z"
    assert [(i["category"], i["role"]) for i in down["incidents"]][:1] == [("link_fault", "downstream")]
    flap = _link(report, "node07", 3, 2)
    assert flap["problems"] == ["flapped"] and flap["state"]["changes"] == 2 and flap["state"]["last"] == "up"
    always = _link(report, "node08", 0, 11)
    assert always["state"]["down_since"] == "2026-11-29T08:00:00.000000Z" and always["hours_listed"] == 4
    assert any(i["role"] == "initiator" for i in always["incidents"])
    reset = _link(report, "node08", 1, 0)
    assert reset["counters"][0]["resets"] == 1 and reset["errors"]["crc"] == 8
    assert report["cleared"] == [{"host": "node09", "domain": "rack14", "gpu_index": 0, "link": 3,
                                  "problems": ["errors"], "peer": None}]
    assert not any(x["host"] == "node10" for x in report["links"])  # PCIe card: inactive by design
    domains = {d["domain"]: (d["hosts"], d["links_listed"]) for d in report["domains"]}
    assert domains == {"rack12": (["node07", "node08"], 5), "rack14": (["node09"], 0), "node10": (["node10"], 0)}
    node10 = next(h for h in report["hosts"] if h["host"] == "node10")
    assert node10["gpus"][0]["expected_links"] == 0 and node10["gpus"][0]["not_up"] == list(range(12))


def test_heatmap_grid(report):
    host = next(h for h in report["hosts"] if h["host"] == "node07")
    g = host_grid(host, report["links"])
    status = {(r["gpu"], c["link"]): c["status"] for r in g["rows"] for c in r["cells"]}
    assert g["ncols"] == 18 and len(status) == 72
    assert (status[(1, 5)], status[(2, 7)], status[(3, 2)]) == ("errors", "down", "flapped")
    assert sum(s == "ok" for s in status.values()) == 69
    cell = next(c for r in g["rows"] if r["gpu"] == 2 for c in r["cells"] if c["link"] == 7)
    assert cell["title"] == "GPU 2 link 7: down (inactive since 2026-11-30 03:20) (other end unknown)"


def test_csv_and_parquet_carry_the_links(report):
    rows = list(csv.DictReader(io.StringIO(render(report, "csv").decode())))
    # worst first: down, flapped, then error counters, the larger rise first (they were in host order, a host's
    # error counters above another's link down)
    assert [(r["host"], r["gpu_index"], r["link"], r["problems"]) for r in rows] == [
        ("node07", "2", "7", "down"), ("node08", "0", "11", "down"), ("node07", "3", "2", "flapped"),
        ("node07", "1", "5", "errors"), ("node08", "1", "0", "errors")]
    assert rows[3]["crc_delta"] == "51" and rows[3]["replay_rate_per_hour"] == "9"
    assert (rows[3]["down_since"], rows[0]["down_since"]) == ("", "2026-11-30T03:20:00.000000Z")  # as in the JSON
    # each row says what to do
    assert rows[0]["next_action"] == (
        "Down since 2026-11-30 03:20 UTC, expected up: when the jobs on GPU 2 are done, reset it (nvidia-smi -r -i 2); "
        "on an NVSwitch board use Fabric Manager's GPU reset procedure; still inactive after that, it needs hardware "
        "service. Far end unknown: nvidia-smi nvlink -R on node07 names it. Incident "
        f"{report['links'][0]['incidents'][0]['id']} has the fault around it.")
    assert rows[2]["next_action"].startswith("Went down and came back up: watch it")
    assert rows[4]["next_action"].startswith("Error counters rose: watch its 24-hour rate")
    # a text cell a spreadsheet would run as a formula is quoted (a break-it pass: a host "=cmd|calc!a1" as it was)
    odd = {**report, "links": [{**report["links"][0], "host": "=cmd|calc!a1", "model": "@SUM(1)", "domain": "-x"}]}
    [row] = list(csv.DictReader(io.StringIO(render(odd, "csv").decode())))
    assert (row["host"], row["model"], row["domain"], row["gpu_index"]) == ("'=cmd|calc!a1", "'@SUM(1)", "'-x", "2")
    t = pq.read_table(io.BytesIO(render(report, "parquet")))
    assert t.num_rows == 5 and t.column("incident_ids")[1].as_py() == [i["id"] for i in report["links"][1]["incidents"]]
    assert t.column("down_since")[0].as_py() == datetime(2026, 11, 30, 3, 20, tzinfo=timezone.utc)


def test_load_inputs_reads_the_window_only(lake_settings):
    samples, incidents = load_inputs(Lake(lake_settings.lake), H3)
    ts = [r["ts"] for r in samples]
    assert min(ts) == to_us(datetime(2026, 11, 29, 8, tzinfo=timezone.utc))
    # 04:00 is the next hour: its counters are not read, its states are (they close a flap that began in the hour)
    assert max(r["ts"] for r in samples if r["state"] is None) == to_us(datetime(2026, 11, 30, 3, 40,
                                                                                tzinfo=timezone.utc))
    assert max(ts) == to_us(datetime(2026, 11, 30, 4, tzinfo=timezone.utc))
    assert all(counter_class(r["counter"]) for r in samples if r["state"] is None)
    assert {r["host"] for r in incidents} == {"node07", "node08", "node10"}


def test_the_far_end_is_read_from_the_lakes_nvlink_r_lines(tmp_path):
    """``nvidia-smi nvlink -R`` and ``-s`` text of a bridged pair through the ingest pipeline into a Parquet lake,
    read back by the report through DuckDB: the ``topology`` view's ``nvlink_remote`` facts (GPUs by index only,
    placed by the board's own wiring) fold the two ends of the link that went down into one row."""
    def hdr(g):
        return f"GPU {g}: NVIDIA H100 NVL (UUID: GPU-00000000-0000-0000-0000-00000000000{g})"

    def nvlink_s(down):
        return "\n".join(line for g in (0, 1) for line in (
            hdr(g), "\t Link 0: 25 GB/s", "\t Link 1: <inactive>" if down else "\t Link 1: 25 GB/s"))

    remote = "\n".join([hdr(0), "\t Link 0: Remote Device 00000000:41:00.0: Link 0",
                        "\t Link 1: Remote Device 00000000:41:00.0: Link 1",
                        hdr(1), "\t Link 0: Remote Device 00000000:01:00.0: Link 0",
                        "\t Link 1: Remote Device 00000000:01:00.0: Link 1"])
    recs = [{"host": "ws1", "timestamp": "2026-11-30T01:00:00Z", "message": remote}]
    recs += [{"host": "ws1", "timestamp": f"2026-11-30T{h:02d}:{m:02d}:00Z", "message": nvlink_s((h, m) >= (3, 20))}
             for h in (2, 3) for m in (0, 20, 40)]
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "ws1.nvml.ndjson").write_text("".join(json.dumps(r) + "\n" for r in recs))
    settings = Settings(lake=str(tmp_path / "lake"), state_dir=tmp_path / "state")
    batch = Pipeline().run(decode_paths([tmp_path / "in"]))
    lake = Lake(settings.lake)
    lake.init()
    for kind in ("link_samples", "topology"):
        lake.write(kind, getattr(batch, kind), "fixture")
    r = degraded_link_report(settings, HOUR)
    [x] = r["links"]
    assert (x["gpu_index"], x["link"], x["problems"], r["totals"]["down"]) == (0, 1, ["down"], 1)
    assert {k: x["peer"][k] for k in ("kind", "gpu_index", "link", "device", "listed")} == {
        "kind": "gpu", "gpu_index": 1, "link": 1, "device": "0000:41:00.0", "listed": True}


@pytest.fixture(scope="module")
def stored(lake_settings):
    """What the service writes once an hour: the report files of the hour in the lake (local paths here)."""
    return [Path(f) for f in write_hourly(lake_settings, HOUR)]


def test_write_hourly_writes_every_format(lake_settings, report, stored):
    d = Lake(lake_settings.lake).root / "reports" / "degraded_links" / "date=2026-11-30" / "hour=2026-11-30T03"
    assert stored == [d / f"degraded_links.{x}" for x in ("json", "csv", "parquet", "html")]
    assert stored[0].read_bytes() == GOLDEN.read_bytes()
    assert pq.read_table(stored[2]).num_rows == 5
    assert stored[3].read_bytes() == render(report, "html")
    assert not [f for f in d.iterdir() if f.name.startswith(".")]  # no temporary file left


def test_the_stored_parquet_reads_as_the_reports_rows_with_hive_readers(lake_settings, report, stored):
    """The stored Parquet leaves ``hour`` to its folder (``hour=2026-11-30T03``), so hive readers read the report's
    ``hour`` once, as its string: it held an ``hour`` column under ``hour=03``, and DuckDB read the file's value
    where polars read the folder's ``3`` (pyarrow's dataset: "Unable to merge")."""
    import pyarrow.dataset as ds

    want = pq.read_table(io.BytesIO(render(report, "parquet")))  # what -f parquet gives
    assert "hour" not in pq.read_schema(stored[2]).names
    base = Path(lake_settings.lake) / "reports" / "degraded_links"
    got = ds.dataset(base, format="parquet", partitioning="hive", exclude_invalid_files=True).to_table()
    assert got.select(want.column_names).equals(want) and got.schema.field("hour").type == pa.string()
    con = duckdb.connect()
    rel = con.sql(f"SELECT * EXCLUDE (date) FROM read_parquet('{base}/**/*.parquet', hive_partitioning = true)")
    assert dict(zip(rel.columns, rel.types))["hour"] == "VARCHAR"
    assert rel.select(*want.column_names).arrow().read_all().to_pylist() == want.to_pylist()


def test_the_service_writes_the_hours_it_missed(lake_settings, tmp_path, monkeypatch, caplog):
    """A correlate worker writes the report of the hour that is due (``Hourly.maybe_write``). One that was stopped
    from 03:10 to 05:10, or whose lake refused writes as long, then wrote only 04's: 03's, the hour with the
    degraded links, was never written, and nothing said so (a break-it pass). The hours since the last report stored
    are written, oldest first, one a tick. The wall clock is the one thing faked (``due_hour``): hours cannot pass."""
    import asyncio
    import logging

    import api.degraded_links
    from api.service import Hourly

    lake_dir = tmp_path / "lake"
    shutil.copytree(lake_settings.lake, lake_dir)
    shutil.rmtree(lake_dir / "reports", ignore_errors=True)  # what other tests stored
    settings = lake_settings.model_copy(update={"lake": str(lake_dir)})
    lake = Lake(settings.lake)
    due = {"hour": datetime(2026, 11, 30, 2, tzinfo=timezone.utc)}
    monkeypatch.setattr(api.degraded_links, "due_hour", lambda now, lateness_s: due["hour"])
    out = lake.root / "reports" / "degraded_links" / "date=2026-11-30"

    def written() -> list[str]:
        return sorted(d.name for d in out.iterdir() if (d / "degraded_links.html").exists()) if out.exists() else []

    asyncio.run(Hourly(settings, lake).maybe_write())  # the worker at 03:10
    assert written() == ["hour=2026-11-30T02"]
    due["hour"] = datetime(2026, 11, 30, 4, tzinfo=timezone.utc)  # stopped, started again at 05:10
    restarted = Hourly(settings, lake)
    for _ in range(3):  # ticks
        asyncio.run(restarted.maybe_write())
    assert written() == ["hour=2026-11-30T02", "hour=2026-11-30T03", "hour=2026-11-30T04"]
    assert (out / "hour=2026-11-30T03" / "degraded_links.json").read_bytes() == GOLDEN.read_bytes()

    # the same worker, its lake refusing the reports for longer than an hour (a file where their folder goes)
    due["hour"] = datetime(2026, 11, 30, 5, tzinfo=timezone.utc)
    shutil.move(out, tmp_path / "aside")
    out.write_bytes(b"")
    asyncio.run(restarted.maybe_write())
    due["hour"] = datetime(2026, 11, 30, 6, tzinfo=timezone.utc)
    asyncio.run(restarted.maybe_write())
    out.unlink()
    shutil.move(tmp_path / "aside", out)
    for _ in range(3):
        asyncio.run(restarted.maybe_write())
    assert written() == [f"hour=2026-11-30T0{h}" for h in range(2, 7)]

    # none written for more than a day (a lake refusing them, the process suspended): the last 24 hours are
    # written, the ones before are said. (A worker started again finds the reports stored within those 24 hours.)
    due["hour"] = datetime(2026, 12, 1, 8, tzinfo=timezone.utc)
    later = restarted
    with caplog.at_level(logging.WARNING, logger="firstfault.service"):
        asyncio.run(later.maybe_write())
    [said] = [r for r in caplog.records if getattr(r, "error_code", None) == "report_skipped"]
    assert "2026-11-30T07 to 2026-11-30T08 not written" in said.getMessage()
    assert later.done == datetime(2026, 11, 30, 9, tzinfo=timezone.utc) and "hour=2026-11-30T09" in written()


    # a lake whose latest report an earlier version stored (``…/hour=07/``): a worker starts after it
    shutil.rmtree(out)
    (out / "hour=07").mkdir(parents=True)
    (out / "hour=07" / "degraded_links.html").write_text("")
    due["hour"] = datetime(2026, 11, 30, 8, tzinfo=timezone.utc)
    asyncio.run(Hourly(settings, lake).maybe_write())
    assert written() == ["hour=07", "hour=2026-11-30T08"]


def test_the_service_writes_no_report_into_a_lake_deleted_under_it(lake_settings, tmp_path, monkeypatch, caplog):
    """A worker's hourly report opened the lake anew (``Lake(settings.lake)``): once its lake was deleted, the
    report's read made the folders again and wrote an empty report there, while the worker's writer refused the lake
    (a fresh user's trial). The report reads and writes through the worker's own lake: refused, said as a warning,
    nothing made. The wall clock is the one thing faked (``due_hour``)."""
    import asyncio
    import logging

    import api.degraded_links
    from api.service import Hourly

    lake_dir = tmp_path / "lake"
    shutil.copytree(lake_settings.lake, lake_dir)
    settings = lake_settings.model_copy(update={"lake": str(lake_dir)})
    lake = Lake(settings.lake)
    lake.init()  # the worker's writer at its start
    monkeypatch.setattr(api.degraded_links, "due_hour", lambda now, lateness_s: datetime(2026, 11, 30, 3,
                                                                                         tzinfo=timezone.utc))
    shutil.rmtree(lake_dir)
    with caplog.at_level(logging.WARNING, logger="firstfault.service"):
        asyncio.run(Hourly(settings, lake).maybe_write())
    assert not lake_dir.exists()
    [said] = [r.getMessage() for r in caplog.records if "not written" in r.getMessage()]
    assert "deleted or replaced while this process ran" in said


# --- HTTP and CLI ----------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def api(lake_settings):
    """The app as api/app.py builds it (the report router included), on real uvicorn at 127.0.0.1:0."""
    import uvicorn

    from api.app import create_app

    app = create_app(lake_settings)
    wired = "/reports/degraded-links" in app.openapi()["paths"]
    app.openapi_schema = None  # built again on request, with whatever is included below
    if not wired:  # an api/app.py that does not include the report router yet
        app.include_router(report_router(lake_settings))
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="off"))
    t = threading.Thread(target=server.run, daemon=True)
    t.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.05)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60) as c:
            yield c
    finally:
        server.should_exit = True
        t.join(10)


def test_http_route(api, report):
    r = api.get("/reports/degraded-links", params={"hour": HOUR})
    assert r.status_code == 200 and r.headers["content-type"] == "application/json"
    assert r.json() == orjson.loads(GOLDEN.read_bytes())
    r = api.get("/reports/degraded-links", params={"hour": HOUR, "format": "html"})
    assert r.headers["content-type"] == "text/html; charset=utf-8"
    assert r.content == render(report, "html", incidents_at="../incidents/")
    # served beside the incident pages, each incident id links to its page there (it was plain text: a fresh
    # user's trial); the files of the lake and the CLI, opened where no API answers, keep the ids plain
    links = re.findall(r'<a href="(\.\./incidents/[^"]+)"><code', r.text)
    ids = {i["id"] for x in report["links"] for i in x["incidents"]}
    assert ids and set(links) == {f"../incidents/{i}?format=html" for i in ids}
    for href in sorted(set(links)):
        page = api.get(str(httpx.URL(str(r.url)).join(href)))
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/html"), href
    assert b"../incidents/" not in render(report, "html")
    r = api.get("/reports/degraded-links", params={"hour": HOUR, "format": "csv"})
    assert r.headers["content-type"].startswith("text/csv") and r.content == render(report, "csv")
    assert r.headers["content-disposition"] == 'attachment; filename="degraded_links-2026-11-30T03.csv"'
    r = api.get("/reports/degraded-links", params={"hour": HOUR, "format": "parquet"})
    assert pq.read_table(io.BytesIO(r.content)).num_rows == 5
    r = api.get("/reports/degraded-links", params={"hour": "2026-11-30T3x"})  # the form named, not a regex
    assert r.status_code == 422 and r.headers["content-type"].startswith("application/problem+json")
    assert r.json()["title"] == "invalid request"
    assert r.json()["detail"] == "query.hour: hour must look like 2026-11-30T03 (UTC), not '2026-11-30T3x'"
    r = api.get("/reports/degraded-links", params={"hour": ""})  # an empty variable: not the last complete hour
    assert r.status_code == 422 and "hour must look like" in r.json()["detail"]
    r = api.get("/reports/degraded-links", params={"hour": "2026-02-30T03"})  # the right form, no such day
    assert r.status_code == 422 and r.json()["title"] == "invalid request" and "day is out of range for month" in \
        r.json()["detail"]
    r = api.get("/reports/degraded-links", params={"hour": HOUR, "format": "xml"})
    assert r.status_code == 422 and r.json()["title"] == "invalid request"
    assert "/reports/degraded-links" in api.get("/openapi.json").json()["paths"]
    assert "x-firstfault-note" not in api.get("/reports/degraded-links", params={"hour": HOUR}).headers
    # an hour without samples: empty, and it says why, as the CLI does (an empty report reads like a healthy fleet)
    r = api.get("/reports/degraded-links", params={"hour": "2026-11-30T07"})
    note = ("no host in the report of 2026-11-30T07: the lake has no link samples in that hour; it has some in ")
    assert r.status_code == 200 and r.json()["totals"]["hosts_sampled"] == 0 and r.json()["note"].startswith(note)
    assert r.json()["note"].endswith("(UTC; pass one with ?hour=)")
    assert r.headers["x-firstfault-note"] == r.json()["note"]
    r = api.get("/reports/degraded-links", params={"hour": "2026-11-30T07", "format": "csv"})
    assert r.headers["x-firstfault-note"].startswith(note)


def test_cli(lake_settings, tmp_path):
    import typer
    from typer.testing import CliRunner

    from api.report_cli import report_app

    app = typer.Typer()
    app.add_typer(report_app, name="report")  # as api/cli.py mounts it
    cfg = tmp_path / "firstfault.toml"
    cfg.write_text(f'lake = "{lake_settings.lake}"\nfleet_config = "{lake_settings.fleet_config}"\n')
    out = tmp_path / "r.json"
    run = CliRunner().invoke
    res = run(app, ["report", "degraded-links", "--hour", HOUR, "--output", str(out), "--config", str(cfg)])
    assert res.exit_code == 0, res.output
    assert out.read_bytes() == GOLDEN.read_bytes()
    # said on stderr, as `firstfault sql -o` says what it wrote (a fresh-user trial: the file came silently)
    assert f"wrote the json report of {HOUR} to {out}" in " ".join(res.stderr.split()), res.stderr
    res = run(app, ["report", "degraded-links", "--hour", HOUR, "-f", "csv", "--config", str(cfg)])
    assert res.exit_code == 0 and res.stdout.splitlines()[1].startswith('"2026-11-30T03","node07","rack12",2,7')
    assert run(app, ["report", "degraded-links", "--hour", HOUR, "-f", "parquet", "--config", str(cfg)]).exit_code == 2
    assert run(app, ["report", "degraded-links", "--hour", "03h", "--config", str(cfg)]).exit_code == 2
    # an empty --hour (a recipe's $HOUR that came out empty) is an error, not the last complete hour
    assert run(app, ["report", "degraded-links", "--hour", "", "--config", str(cfg)]).exit_code == 2
    # the format from --output's name, as `firstfault sql`: report.xlsx was written as JSON
    out = tmp_path / "r.csv"
    res = run(app, ["report", "degraded-links", "--hour", HOUR, "-o", str(out), "--config", str(cfg)])
    assert res.exit_code == 0 and out.read_text().startswith('"hour",')
    for name in ("r.xlsx", "r.ndjson"):  # NDJSON is no name for one indented JSON document
        res = run(app, ["report", "degraded-links", "--hour", HOUR, "-o", str(tmp_path / name), "--config", str(cfg)])
        assert res.exit_code == 2 and f"say --format for {name}" in res.output and not (tmp_path / name).exists()
    res = run(app, ["report", "degraded-links", "--hour", HOUR, "--store", "--config", str(cfg)])
    assert res.exit_code == 0 and res.stdout.strip().endswith("hour=2026-11-30T03/degraded_links.html")
    # --store writes every format into the lake: --output or --format beside it were ignored, silently (a break-it pass)
    for extra in (["-o", str(tmp_path / "x.json")], ["-f", "csv"]):
        res = run(app, ["report", "degraded-links", "--hour", HOUR, "--store", *extra, "--config", str(cfg)])
        assert res.exit_code == 2 and "--store writes every format into the lake" in " ".join(res.output.split())
    assert not (tmp_path / "x.json").exists()
    # a folder that does not exist: said as `firstfault sql` says it, a usage error (was a bare "[Errno 2]", exit 1)
    res = run(app, ["report", "degraded-links", "--hour", HOUR, "-o", str(tmp_path / "nosuch" / "r.html"),
                    "--config", str(cfg)])
    words = " ".join(res.output.replace("│", " ").split())  # click's box, as `sql`'s usage errors
    assert res.exit_code == 2 and "Usage: " in res.output and \
        f"Invalid value for --output: no such folder: {tmp_path / 'nosuch'}" in words, res.output


def test_cli_says_when_the_hour_has_no_samples(lake_settings, tmp_path):
    """An empty report is otherwise a healthy fleet: for an hour without link samples (before them all, or
    between two hours that have some) stderr says so and lists the hours the lake has samples for, the
    fixture's hour among them; an empty lake holds none; the report itself is still written (exit 0)."""
    import typer
    from typer.testing import CliRunner

    from api.report_cli import report_app
    from ingest.lake import Lake

    app = typer.Typer()
    app.add_typer(report_app, name="report")
    run = CliRunner().invoke
    cfg = tmp_path / "firstfault.toml"
    cfg.write_text(f'lake = "{lake_settings.lake}"\n')
    hours = sorted({datetime.fromtimestamp(t.timestamp(), timezone.utc).strftime("%Y-%m-%dT%H") for t in
                    pq.read_table(Path(lake_settings.lake) / "link_samples").column("ts").to_pylist()})
    assert HOUR in hours and len(hours) <= 6
    gap = "2026-11-30T00"
    assert hours[0] < gap < hours[-1] and gap not in hours  # the fixture's samples skip that hour
    for hour in ("2020-01-01T00", gap):
        res = run(app, ["report", "degraded-links", "--hour", hour, "--config", str(cfg)])
        assert res.exit_code == 0 and json.loads(res.stdout)["totals"]["hosts_sampled"] == 0
        said = " ".join(res.stderr.split())
        assert said == (f"no host in the report of {hour}: the lake has no link samples in that hour; it has some "
                        f"in {len(hours)} hours: {', '.join(hours)} (UTC; pass one with --hour)"), said
        # --store says it too (a fresh user's trial: it said nothing)
        stored = run(app, ["report", "degraded-links", "--hour", hour, "--store", "--config", str(cfg)])
        assert stored.exit_code == 0 and " ".join(stored.stderr.split()) == said
        # the JSON says it too, as the API's "note" (only the API's did: a fresh-user trial)
        assert " ".join(json.loads(res.stdout)["note"].split()) == said
    res = run(app, ["report", "degraded-links", "--hour", HOUR, "--config", str(cfg)])
    assert res.exit_code == 0 and "no host" not in res.stderr and "note" not in json.loads(res.stdout)
    Lake(str(tmp_path / "empty")).init()
    cfg.write_text(f'lake = "{tmp_path / "empty"}"\n')
    res = run(app, ["report", "degraded-links", "--hour", HOUR, "--config", str(cfg)])
    assert res.exit_code == 0 and "the lake holds no link samples yet" in " ".join(res.stderr.split()), res.stderr


def test_a_report_of_an_hour_not_over_says_so(api, lake_settings, tmp_path):
    """The report of the hour under way read like a complete one, and a future hour said only that the lake had no
    samples in it (a fresh user's trial): both say what the hour is, in the JSON's ``note``, the API's
    ``X-Firstfault-Note`` and the CLI's stderr; an hour that is over says nothing of it."""
    import typer
    from typer.testing import CliRunner

    from api.report import not_over
    from api.report_cli import report_app

    at = datetime(2026, 12, 6, 3, 5, tzinfo=timezone.utc)
    assert not_over(datetime(2026, 12, 6, 3, tzinfo=timezone.utc), at) == (
        "the hour 2026-12-06T03 is not over: its counts up to 03:05 UTC (it ends at 04:00 UTC; the correlator writes "
        "the hour's report after it)")
    assert not_over(datetime(2026, 12, 6, 5, tzinfo=timezone.utc), at) == (
        "the hour 2026-12-06T05 has not begun: it is 2026-12-06T03:05 UTC now")
    assert not_over(datetime(2027, 12, 6, 3, tzinfo=timezone.utc), at) == (  # a mistyped year: the date says it
        "the hour 2027-12-06T03 has not begun: it is 2026-12-06T03:05 UTC now")
    assert not_over(datetime(2026, 12, 6, 2, tzinfo=timezone.utc), at) is None
    assert not_over(datetime(2026, 12, 6, 2, tzinfo=timezone.utc), datetime(2026, 12, 6, 3, tzinfo=timezone.utc)) \
        is None  # over at its last microsecond
    now = datetime.now(timezone.utc)
    hour = f"{now:%Y-%m-%dT%H}"
    if now.minute == 59 and now.second > 50:  # the hour would end between the call and the check
        time.sleep(11)
        now, hour = datetime.now(timezone.utc), f"{datetime.now(timezone.utc):%Y-%m-%dT%H}"
    r = api.get("/reports/degraded-links", params={"hour": hour})
    assert r.json()["note"].startswith(f"the hour {hour} is not over: its counts up to ") and \
        "; no host in the report of" in r.json()["note"] and r.headers["x-firstfault-note"] == r.json()["note"]
    assert "x-firstfault-note" not in api.get("/reports/degraded-links", params={"hour": HOUR}).headers
    # the HTML says it in the page (it read as the whole hour's, and a page saved from the browser keeps no header)
    page = api.get("/reports/degraded-links", params={"hour": hour, "format": "html"}).text
    assert f'<p class="warn note">the hour {hour} is not over: its counts up to ' in page, page[:3000]
    assert 'class="warn note"' not in api.get("/reports/degraded-links", params={"hour": HOUR, "format": "html"}).text
    app = typer.Typer()
    app.add_typer(report_app, name="report")
    cfg = tmp_path / "firstfault.toml"
    cfg.write_text(f'lake = "{lake_settings.lake}"\n')
    res = CliRunner().invoke(app, ["report", "degraded-links", "--hour", hour, "--config", str(cfg)])
    assert res.exit_code == 0 and f"the hour {hour} is not over" in " ".join(res.stderr.split())
    assert json.loads(res.stdout)["note"].startswith(f"the hour {hour} is not over")
    html = tmp_path / "links.html"  # the README's command: -o links.html, opened in a browser
    res = CliRunner().invoke(app, ["report", "degraded-links", "--hour", hour, "-o", str(html), "--config", str(cfg)])
    assert res.exit_code == 0 and f'<p class="warn note">the hour {hour} is not over: its counts up to ' in \
        html.read_text(), html.read_text()[:3000]
    # --store refuses it: the stored files would read as the hour's report (a break-it pass), exit 2, nothing written
    res = CliRunner().invoke(app, ["report", "degraded-links", "--hour", hour, "--store", "--config", str(cfg)])
    assert res.exit_code == 2 and "--store writes an hour's report once the hour is over" in " ".join(
        res.stderr.split()), res.stderr
    assert not list(Path(lake_settings.lake).glob(f"reports/degraded_links/date={hour[:10]}/hour={hour}/*"))


# --- looked at as a person would: headless Chromium -----------------------------------------------------------
def _chromium(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    assert Path(CHROMIUM).exists(), "Debian chromium is needed (scripts/test-deps.sh installs it)"
    profile = tmp_path / f"chromium-profile-{len(list(tmp_path.iterdir()))}"
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
           "--disable-background-networking", "--disable-component-update", "--disable-sync",
           "--hide-scrollbars", "--force-color-profile=srgb", f"--user-data-dir={profile}", *args]
    return subprocess.run(cmd, capture_output=True, timeout=120, check=True)


def _count(img, colour: str, tol: int = 8) -> int:
    """Pixels of ``img`` (H×W×3 array) within ``tol`` of ``colour`` (#rrggbb) on every channel."""
    import numpy as np

    rgb = np.array([int(colour[i:i + 2], 16) for i in (1, 3, 5)])
    return int((np.abs(img.astype(int) - rgb) <= tol).all(axis=2).sum())


def test_the_summary_cards_say_one_in_the_singular(report):
    """The HTML summary's counts agree with their nouns: "1 incident involved", "1 host sampled (1 link)", never
    "1 incidents involved" (a fresh-user trial); other counts in the plural."""
    import copy

    for n in (1, 3):
        r = copy.deepcopy(report)
        t = r["totals"]
        t["hosts_sampled"] = t["links_sampled"] = t["silent_hosts"] = n
        t["incidents"] = (t["incidents"] * 3)[:n]
        html = render(r, "html").decode()
        cards = re.findall(r'<div class="card[^"]*"><b>(\d+)</b>(\w+)[^<]*(?:<small>\((\d+) (\w+)\))?', html)
        words = {w: int(c) for c, w, *_ in cards if w.rstrip("s") in ("host", "incident")}
        words.update({w: int(c) for *_, c, w in cards if w.rstrip("s") == "link"})
        assert len(words) == 3 and set(words.values()) == {n}, cards
        assert all(w.endswith("s") == (n != 1) for w in words), cards


def test_html_in_chromium(stored, tmp_path):
    """The stored page, opened from disk (no server, no network): its charts are in the DOM and on screen."""
    import numpy as np
    from PIL import Image

    page = stored[3]
    html = page.read_text()
    assert not re.search(r'(src|href)="(https?:)?//', html) and "<script" not in html  # nothing to fetch
    shot = tmp_path / "report.png"
    dom = _chromium(tmp_path, "--dump-dom", "--window-size=1280,4000", f"--screenshot={shot}",
                    page.as_uri()).stdout.decode()
    # one heatmap per host, one square per GPU link, coloured by status
    assert len(re.findall(r'<svg [^>]*class="heatmap"', dom)) == 4
    assert len(re.findall(r'<rect id="cell-node07-g\d+-l\d+"', dom)) == 72
    cell = re.search(r'<rect id="cell-node07-g2-l7" class="cell down"[^>]*fill="([^"]+)"', dom)
    assert cell and cell.group(1) == CELL["down"][0]
    # one rate chart per link with rising counters; each counter class a drawn line
    assert len(re.findall(r'<figure class="chart rate"', dom)) == 2
    for cls in ("crc", "replay", "recovery"):
        line = re.search(rf'<g id="rate-node07-g1-l5-{cls}">\s*<path d="([^"]+)"', dom)
        assert line and line.group(1).count("L") >= 4, f"{cls} line has no data path"

    if os.environ.get("REPORT_SCREENSHOT"):
        shutil.copy(shot, os.environ["REPORT_SCREENSHOT"])
    img = np.asarray(Image.open(shot).convert("RGB"))
    count = {s: _count(img, CELL[s][0]) for s in ("down", "flapped", "errors", "ok", "by_design")}
    cell_px = 15 * 15  # a cell is 18 px square; letters and borders take some
    assert count["down"] >= 2 * cell_px  # node07 g2 l7, node08 g0 l11 (plus table badges)
    assert count["flapped"] >= cell_px and count["errors"] >= 2 * cell_px
    assert count["ok"] >= 200 * cell_px  # 204 healthy links on 3 hosts
    assert count["by_design"] >= 24 * cell_px  # node10: 2 GPUs × 12 links
    # the rate charts' replay line (the CRC line shares its red with 'down')
    assert _count(img, "#1e88e5", 30) >= 100


def _fleet_rows(n_hosts: int, start: int, down: tuple[str, int, int]) -> list[dict]:
    """State samples of ``n_hosts`` H100 hosts (8 GPUs × 18 NVLinks) before and in the hour at ``start``: every link
    up, but ``down`` (host, GPU, link) down in the hour."""
    rows = []
    for h in range(n_hosts):
        host = f"node{h:04d}"
        for t in (start - 3_000_000_000, start + 60_000_000):
            for g in range(8):
                for k in range(18):
                    state = "down" if (host, g, k) == down and t > start else "up"
                    rows.append({"host": host, "ts": t, "gpu_index": g, "device": f"0000:{g + 0x10:02x}:00.0",
                                 "link": k, "state": state, "gbps": 26.562, "counter": None, "value": None,
                                 "model": "NVIDIA H100 80GB HBM3", "origin": "t"})
    return rows


def test_html_of_a_large_fleet_draws_heatmaps_of_the_hosts_with_something_to_see():
    """2,000 hosts made a page of 65 MB (a heatmap of every host, 290,000 SVG rects, 25 s to render) where the few
    degraded hosts were lost among green grids (a break-it pass). Past HEATMAPS_OF_EVERY_HOST_MAX hosts, a host whose
    links are all up with no error gets a line, not a heatmap; every host keeps its section (the by-host table links
    to it); a smaller report still draws every host."""
    from api.degraded_links import build_report, to_us
    from api.report_render import HEATMAPS_OF_EVERY_HOST_MAX

    start = to_us(datetime(2026, 11, 30, 3, tzinfo=timezone.utc))
    n = HEATMAPS_OF_EVERY_HOST_MAX + 10
    rep = build_report(_fleet_rows(n, start, ("node0007", 2, 7)), [], start, asked_us=start + 7_200_000_000)
    assert [(x["host"], x["gpu_index"], x["link"], x["problems"]) for x in rep["links"]] == \
        [("node0007", 2, 7, ["down"])]
    html = render(rep, "html").decode()
    assert re.findall(r'<svg [^>]*class="heatmap" id="heatmap-([^"]+)"', html) == ["node0007"]
    assert re.search(r'<rect id="cell-node0007-g2-l7" class="cell down"', html)
    assert len(re.findall(r'<section class="host" id="host-node\d{4}"', html)) == n
    assert html.count("All 144 sampled links up, no error counter rose: no heatmap drawn") == n - 1
    small = build_report(_fleet_rows(HEATMAPS_OF_EVERY_HOST_MAX, start, ("node0007", 2, 7)), [], start,
                         asked_us=start + 7_200_000_000)
    html = render(small, "html").decode()
    assert len(re.findall(r'<svg [^>]*class="heatmap"', html)) == HEATMAPS_OF_EVERY_HOST_MAX
    assert "no heatmap drawn" not in html
