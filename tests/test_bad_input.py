"""Hostile and broken input, through the pure pipeline and the correlator: a correct event or a clear
rejection, never a crash, never a wrong value (findings of a break-it session)."""

from __future__ import annotations

import time
from datetime import datetime, timezone

import orjson
import pytest

from correlate.correlator import correlate
from ingest.decode import Decoded, Segment
from ingest.prefix import parse_prefix, to_us

T0 = 1_800_000_000_000_000


def run(pipeline, *lines: str):
    seg = Segment(data="\n".join(lines).encode(), origin="t:bad", stream="s", host="node07", ref_ts=T0,
                  ref_basis="kafka", ingest_ts=T0)
    b = pipeline.run(Decoded(segments=[seg]))
    incidents = correlate(b.events, b.link_samples, b.topology, now_us=T0)
    return b.events.to_pylist(), incidents


@pytest.mark.parametrize("line", [
    "2024-01-01T00:00:00+99:99 NVRM: Xid (PCI:0000:b9:00): 79, pid=1, name=p, x",
    "[2024-01-01 00:00:00+24:00] node07:1:2 [0] transport/nvls.cc:244 NCCL WARN Cuda failure 1 'x'",
    "9999-12-31T23:59:59-14:00 NVRM: Xid (PCI:0000:b9:00): 79, pid=1, GPU has fallen off the bus.",
    "0001-01-01T00:00:01Z NVRM: Xid (PCI:0000:b9:00): 79, pid=1, GPU has fallen off the bus.",
    "[99999999999999999999.000000] NVRM: Xid (PCI:0000:b9:00): 79, pid=1, GPU has fallen off the bus.",
])
def test_garbled_stamps_fall_back_to_arrival_time(pipeline, line):
    events, incidents = run(pipeline, line)
    assert len(events) == 1 and events[0]["ts_basis"] == "kafka"
    assert incidents and incidents[0]["start"].startswith("2027-01-15")


@pytest.mark.parametrize("line,column", [
    ("NVRM: Xid (PCI:0000:18:00): 2147483648, pid=1, name=p, x", "xid"),
    ("NVRM: Xid (PCI:0000:18:00): 79, pid=99999999999999999999, name=p, GPU has fallen off the bus.", "pid"),
    ("NVRM: Xid (PCI:0000:18:00): 74, pid='<unknown>', name=<unknown>, NVLink: fatal error detected on link "
     "40000(0x0, 0x0, 0x10000, 0x0, 0x0, 0x0, 0x0)", "link"),
    ("[Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=99999999999999999999999, "
     "OpType=ALLREDUCE, Timeout(ms)=600000) ran for 600060 milliseconds before timing out", "seq"),
])
def test_numbers_too_big_for_their_column_are_kept_as_text(pipeline, line, column):
    events, _ = run(pipeline, line)
    assert len(events) == 1 and events[0][column] is None
    assert f"{column}_text" in events[0]["details"]


@pytest.mark.parametrize("line,column", [
    ("node07:12098:12141 [40000] transport/nvls.cc:244 NCCL WARN Cuda failure 1 'invalid argument'", "gpu_index"),
    ("node07:99999999999:12141 [0] transport/nvls.cc:244 NCCL WARN Cuda failure 1 'invalid argument'", "pid"),
])
def test_a_number_out_of_range_in_a_line_prefix_costs_only_that_field(pipeline, line, column):
    """NCCL's ``host:pid:tid [device]`` prefix is read apart from the signature's fields: a device or pid its
    column cannot hold is null (kept as text in details), and the batch's other lines stay (it once failed
    the whole Arrow build: a file in ``diagnose``, a message sent to the dead-letter topic)."""
    xid = "2025-01-01T00:00:00Z node07 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=0, GPU has fallen off the bus."
    events, _ = run(pipeline, xid, line)
    assert [e["kind"] for e in events] == ["xid", "nccl_error"]
    assert events[1][column] is None
    assert orjson.loads(events[1]["details"])[f"{column}_text"] in ("40000", "99999999999")


def test_a_local_stamp_in_the_hour_a_zone_repeats_follows_its_log_s_order():
    """In America/New_York the clock goes from 01:59:59 EDT back to 01:00:00 EST on 2026-11-01: ``01:59:58`` then
    ``01:00:03`` is five seconds later, not an hour earlier (two incidents, the Xid 74 "first": a break-it pass). A
    line a few seconds out of order in that hour, and a zone with no such hour, keep their times."""
    from zoneinfo import ZoneInfo

    from ingest.pipeline import Pipeline

    ny = Pipeline(tz=ZoneInfo("America/New_York"))
    lines = ["Nov  1 01:59:58 node07 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=0, GPU has fallen off the bus.",
             "Nov  1 01:00:03 node07 kernel: NVRM: Xid (PCI:0000:5e:00): 74, pid=1, name=p, Channel 0x1, NVLink: "
             "fatal error detected on link 3(0x10000, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0)",
             "Nov  1 01:00:01 node07 kernel: NVRM: Xid (PCI:0000:86:00): 13, pid=2, name=p, Graphics Exception"]
    seg = Segment(data="\n".join(lines).encode(), origin="t:dst", stream="s", host="node07",
                  ref_ts=us_of(2026, 11, 1, 12), ref_basis="kafka", ingest_ts=us_of(2026, 11, 1, 12))
    ts = ny.run(Decoded(segments=[seg])).events.column("ts").to_pylist()
    assert [t.strftime("%H:%M:%S") for t in ts] == ["05:59:58", "06:00:03", "06:00:01"]
    (inc,) = correlate(ny.run(Decoded(segments=[seg])).events, now_us=us_of(2026, 11, 1, 12))
    assert inc["initiator"]["xid"] == 79
    utc = Pipeline().run(Decoded(segments=[seg])).events.column("ts").to_pylist()
    assert [t.strftime("%H:%M:%S") for t in utc] == ["01:59:58", "01:00:03", "01:00:01"]
    # the line before is the host's own: another host's later line in the same file moves nothing (a break-it pass)
    other = lines[0].replace("node07", "node08") + "\n" + lines[1]
    seg = Segment(data=other.encode(), origin="t:dst2", stream="s", host=None, ref_ts=us_of(2026, 11, 1, 12),
                  ref_basis="kafka", ingest_ts=us_of(2026, 11, 1, 12))
    ts = ny.run(Decoded(segments=[seg])).events.column("ts").to_pylist()
    assert [t.strftime("%H:%M:%S") for t in ts] == ["05:59:58", "05:00:03"]


def us_of(*a: int) -> int:
    return to_us(datetime(*a, tzinfo=timezone.utc))


@pytest.mark.parametrize("value", ["NaN", "+Inf", "-Inf", "1e400"])
def test_a_dcgm_sample_that_is_no_finite_number_costs_only_its_value(pipeline, value):
    """NaN and ±Inf are legal in the Prometheus text format (a counter dcgm-exporter could not read): ``int(nan)``
    raised and the whole file — an Xid 79 beside it — was skipped, a Kafka value dead-lettered (a break-it pass).
    The sample is kept without a value (``value_text`` in ``prometheus_fields``), every other line as before."""
    from ingest.extract import prometheus_fields

    metric = ('DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_L3{gpu="3",pci_bus_id="00000000:3B:00.0",Hostname="node07"} '
              + value)
    (f,) = prometheus_fields(metric)
    assert "value" not in f and f["value_text"] in ("nan", "inf", "-inf") and f["link"] == "3"
    xid = "2025-01-01T00:00:00Z node07 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=0, GPU has fallen off the bus."
    events, incidents = run(pipeline, xid, metric)
    assert [e["xid"] for e in events] == [79] and incidents[0]["initiator"]["xid"] == 79


def test_an_out_of_range_topo_matrix_row_costs_only_that_value(pipeline):
    """The kind, not the line: every table of a batch is built with out-of-range integers nulled, here a
    ``topo -m`` row of ``GPU99999`` (int16 ``gpu_index`` of the topology facts)."""
    seg = Segment(data=b"        GPU0    GPU99999    CPU Affinity\nGPU0     X      NODE    0-63\n"
                       b"GPU99999     NODE      X    0-63\n", origin="t:bad", stream="s", host="node07",
                  ref_ts=T0, ref_basis="kafka", ingest_ts=T0)
    b = pipeline.run(Decoded(segments=[seg]))
    facts = b.topology.to_pylist()
    assert sorted((str(f["gpu_index"]), f["peer_name"]) for f in facts) == [("0", "GPU99999"), ("None", "GPU0")]


def test_february_29_without_a_year_takes_the_last_leap_year():
    ref = to_us(datetime(2025, 1, 15, tzinfo=timezone.utc))
    p = parse_prefix("Feb 29 16:18:04 node07 kernel: NVRM: x", ref_us=ref)
    assert datetime.fromtimestamp(p.ts / 1e6, tz=timezone.utc) == datetime(2024, 2, 29, 16, 18, 4, tzinfo=timezone.utc)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("line", [
    "NVRM: Xid (PCI:0000:18:00): 79, pid=1, name=p, " + "A" * 60000,
    "A" * 60000 + " pcieport 0000:00:02.0: AER: Uncorrected (Fatal) error received: id=0010",
    "NVRM: Xid (PCI:0000:18:00): 137, " + "A B " * 15000 + " interrupt hit on link 4",
])
def test_long_adversarial_lines_do_not_hang(pipeline, line):
    """Field regexes stay linear in the line length (a guard against catastrophic backtracking)."""
    events, _ = run(pipeline, line)
    assert len(events) == 1


def test_a_name_that_is_not_utf8_names_no_host_as_a_file_name_or_a_kafka_key(tmp_path, pipeline, monkeypatch):
    """Linux file names are bytes: one that is not UTF-8 (``n\\xfe07.log``) lost the whole file once (Arrow cannot
    store the surrogates Python reads it with); its name is kept in the origin with the odd bytes escaped. As a host
    it was ``n\\xfe07`` where the same bytes as a Kafka key named no host and its lines were dead-lettered (a stop's
    finding): now neither names a host. The file is read all the same: a line that names its own host keeps it, the
    file in a folder that names its host takes the folder's (as ``dmesg.log`` does), and a line that names none is
    refused (``bad_host``, stderr in ``diagnose``) saying to name the file after its host, as the key's line is."""
    import os
    from pathlib import Path
    from types import SimpleNamespace

    from api.diagnose import diagnose_paths
    from ingest.decode import decode_partition
    from schemas.settings import Settings

    xid = b"NVRM: Xid (PCI:0000:3b:00): 79, pid=0, GPU has fallen off the bus.\n"
    own = b"2026-11-30T03:12:00Z node09 kernel: NVRM: Xid (PCI:0000:5e:00): 79, pid=0, GPU has fallen off the bus.\n"
    monkeypatch.chdir(tmp_path)  # relative paths: no folder above ``logs`` names a host (pytest's have digits)
    for folder, host in (("logs", None), ("node05", "node05")):
        os.mkdir(folder)
        with open(os.path.join(folder.encode(), b"n\xfe07.log"), "wb") as f:
            f.write(xid + own)
        _, batch, incidents = diagnose_paths([Path(folder)], Settings())
        got = sorted((e["host"], e["device"]) for e in batch.events.to_pylist())
        assert all(e["origin"].startswith(f"file:{folder}/n\\xfe07.log@") for e in batch.events.to_pylist())
        if host:  # the folder's name is the host of the line that names none
            assert got == [("node05", "0000:3b:00.0"), ("node09", "0000:5e:00.0")] and not batch.rejects
            continue
        assert got == [("node09", "0000:5e:00.0")] and len(incidents) == 1
        (r,) = batch.rejects
        assert r.error_code == "bad_host" and r.reason.startswith("event not stored: its host 'n\ufffd07' is no host")
        assert r.reason.endswith("its file's name holds bytes that are no UTF-8, which name no host (as a Kafka "
                                 "key's do not): name the file after its host"), r.reason
    # the same bytes as a Kafka key: the line that names its host kept, the other dead-lettered
    recs = [SimpleNamespace(value=xid + own, key=b"n\xfe07", offset=0, timestamp=1_764_472_321_000, headers=[])]
    b = pipeline.run(decode_partition("fleet.dmesg", 0, recs))
    assert [(e["host"], e["device"]) for e in b.events.to_pylist()] == [("node09", "0000:5e:00.0")]
    (r,) = b.rejects
    assert r.error_code == "bad_host" and r.reason.startswith("event not stored: its host 'n\ufffd07' is no host")
    assert r.reason.endswith("check the shipper's Kafka key, host header or host field"), r.reason
