"""Envelopes and files: Vector, Fluent Bit, Filebeat, journald; gzip/zstd; PCI id forms."""

from __future__ import annotations

import functools
import gzip

import orjson
import pytest
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st

from ingest.decode import decode_file, decode_message, decode_ndjson, end_nul_holes, per_record
from schemas.pci import bus_only, nccl_bus_id, normalize_bus_id

XID = "NVRM: Xid (PCI:0000:3b:00): 79, pid=0, GPU has fallen off the bus."


def msg(value: bytes, key: bytes | None = b"node09", headers=None):
    return decode_message(value, topic="fleet.dmesg", partition=2, offset=41, key=key, timestamp_ms=1_700_000_000_000,
                          headers=headers)


def test_plain_text_takes_the_key_as_host_and_kafka_time():
    d = msg(b"line one\n" + XID.encode())
    (seg,) = d.segments
    assert (seg.host, seg.ref_basis, seg.ref_ts, seg.origin) == ("node09", "kafka", 1_700_000_000_000_000,
                                                                  "kafka:fleet.dmesg/2/41")


def test_host_header_when_there_is_no_key():
    (seg,) = msg(XID.encode(), key=None, headers=[("host", b"node11")]).segments
    assert seg.host == "node11"


@pytest.mark.parametrize("record,host,ts", [
    # Vector
    ({"host": "node07", "timestamp": "2026-11-30T03:12:00.123456Z", "message": XID}, "node07",
     1796008320123456),
    # Fluent Bit: epoch seconds in "date", message in "log"
    ({"date": 1796008320.5, "hostname": "node08", "log": XID}, "node08", 1796008320500000),
    # Filebeat / ECS
    ({"@timestamp": "2026-11-30T03:12:00.000Z", "host": {"name": "node10"}, "message": XID}, "node10",
     1796008320000000),
    # ... with the ECS field written flat, as ECS allows (it went to the Kafka key: a fresh-user trial)
    ({"@timestamp": "2026-11-30T03:12:00.000Z", "host.name": "node11", "message": XID}, "node11",
     1796008320000000),
    # a pod's record names its node in its Kubernetes metadata (Fluent Bit, Vector, Filebeat): a keyless one was
    # dead-lettered "it names no host" (a break-it pass)
    ({"time": "2026-11-30T03:12:00.000Z", "kubernetes": {"host": "k8snode2", "pod_name": "p"}, "log": XID}, "k8snode2",
     1796008320000000),
    ({"timestamp": "2026-11-30T03:12:00Z", "kubernetes": {"pod_node_name": "k8snode3"}, "message": XID}, "k8snode3",
     1796008320000000),
    ({"@timestamp": "2026-11-30T03:12:00.000Z", "kubernetes": {"node": {"name": "k8snode4"}}, "message": XID},
     "k8snode4", 1796008320000000),
    # journald export JSON: µs strings, MESSAGE possibly a byte array
    ({"__REALTIME_TIMESTAMP": "1796008320000001", "__MONOTONIC_TIMESTAMP": "449410332316",
      "_HOSTNAME": "node12", "_BOOT_ID": "0123", "MESSAGE": list(XID.encode())}, "node12", 1796008320000001),
    # the writer's own time before journald's receipt (an Xid 79 received after the Xid 74 it caused: a break-it pass)
    ({"__REALTIME_TIMESTAMP": "1796008325000000", "_SOURCE_REALTIME_TIMESTAMP": "1796008320000001",
      "_HOSTNAME": "node12", "MESSAGE": XID}, "node12", 1796008320000001),
    # ... and journald's receipt when the writer's is no time (a second break-it pass: the record was skipped)
    ({"__REALTIME_TIMESTAMP": "1796008325000000", "_SOURCE_REALTIME_TIMESTAMP": "", "_HOSTNAME": "node12",
      "MESSAGE": XID}, "node12", 1796008325000000),
    ({"__REALTIME_TIMESTAMP": "1796008325000000", "_SOURCE_REALTIME_TIMESTAMP": "0", "_HOSTNAME": "node12",
      "MESSAGE": XID}, "node12", 1796008325000000),
])
def test_envelope_presets(record, host, ts):
    d = msg(orjson.dumps(record) + b"\n" + orjson.dumps(record))
    assert not d.rejects
    assert [s.host for s in d.segments] == [host, host]
    assert [s.ref_ts for s in d.segments] == [ts, ts]
    assert d.segments[0].data.decode() == XID
    assert d.segments[0].ref_basis == "envelope"



@pytest.mark.parametrize("stamp,us", [
    # Vector prints the fewest of 0, 3, 6 or 9 digits that hold the time; a fraction past µs is cut, not rounded
    ("2026-11-30T03:12:00Z", 1796008320000000), ("2026-11-30T03:12:00.123Z", 1796008320123000),
    ("2026-11-30T03:12:00.123456Z", 1796008320123456), ("2026-11-30T03:12:00.123456789Z", 1796008320123456),
    ("2024-02-29T23:59:59.999999999Z", 1709251199999999)])
def test_vector_records_are_read_column_by_column_with_the_times_of_each_stamp_width(stamp, us):
    """A value of Vector records (``message``, ``timestamp``, ``host`` and fields it adds) is read column by
    column (``_vector_columns``: one msgspec call, one Arrow cast of the stamps); the Kafka path gives each
    record's message, host and time as the record-by-record reading does (``benchmarks/fuzz.py`` checks that
    on generated values)."""
    from ingest.decode import _vector_columns, decode_ndjson, per_record

    recs = [{"file": "/var/log/kern.log", "host": h, "message": m, "source_type": "file", "timestamp": stamp}
            for h, m in (("node07", XID), ("", "  File \"train.py\", line 7"), ("node07", "step 3"))]
    value = b"\n".join(map(orjson.dumps, recs))
    assert _vector_columns((value, 3)) is not None
    d = decode_message(value, topic="fleet.dmesg", partition=2, offset=41, key=b"node09",
                       timestamp_ms=1_700_000_000_000, headers=None)
    assert not d.rejects
    got = [(s.data.decode(), s.host, s.ref_ts, s.ref_basis, s.origin) for s in per_record(d.segments)]
    assert got == [(XID, "node07", us, "envelope", "kafka:fleet.dmesg/2/41#r0"),
                   ('  File "train.py", line 7', "node09", us, "envelope", "kafka:fleet.dmesg/2/41#r1"),
                   ("step 3", "node07", us, "envelope", "kafka:fleet.dmesg/2/41#r2")]
    where = dict(origin="o", stream="s", host="k", ref_ts=0, ref_basis="kafka", ingest_ts=0, source=None, runs=True)
    assert decode_ndjson(value, **where) == decode_ndjson(value, columnar=False, **where)


def test_stamps_of_another_length_or_shape_in_a_vector_chunk_are_read_one_by_one():
    """Vector prints the fewest digits of fraction that hold the time: the stamps of the common length are read
    at once, the others (a whole ms, an offset, a year before 2000: no Arrow cast reads those as
    ``_rfc3339_us`` does) one by one by ``_rfc3339_us``, and the chunk stays column by column."""
    from ingest.decode import _vector_columns, decode_ndjson

    stamps = ["2026-11-30T03:12:00.123456789Z", "2026-11-30T03:12:00.123Z", "2026-11-30T03:12:00.5+01:00",
              "1999-12-31T23:59:59Z", "2026-11-30T03:12:01.000000001Z", "2026-11-30T03:12:02.999999999Z"]
    value = b"\n".join(orjson.dumps({"host": "node07", "message": XID, "timestamp": t}) for t in stamps)
    cols = _vector_columns((value, len(stamps)))
    assert cols is not None
    assert cols[2] == [1796008320123456, 1796008320123000, 1796004720500000, 946684799000000, 1796008321000000,
                       1796008322999999]
    where = dict(origin="o", stream="s", host="k", ref_ts=0, ref_basis="kafka", ingest_ts=0, source=None, runs=True)
    assert decode_ndjson(value, **where) == decode_ndjson(value, columnar=False, **where)


@pytest.mark.parametrize("odd", [
    {"MESSAGE": "journald's own message"}, {"format": "nvsmi-links/1"}, {"_HOSTNAME": "node10"},
    {"__MONOTONIC_TIMESTAMP": "1234"}, {"timestamp": "2026-02-30T03:12:00Z"}, {"host": {"name": "node10"}},
    # a number past a double (JSON allows it), which msgspec refuses in a field it reads: the record is a reject
    '"log":1e999', '"@timestamp":1e999', '"date":-1e999'])
def test_a_value_with_one_record_of_another_shape_is_read_record_by_record(odd):
    """One record whose fields change how it is read (journald's, a poller's sample, a time that is none,
    Filebeat's host object, a field read as a number that is none) sends the whole chunk
    to the record-by-record reading: the value gives what it gave before the column-by-column reading
    existed."""
    from ingest.decode import _vector_columns, decode_ndjson

    recs = [orjson.dumps({"host": "node07", "message": XID, "timestamp": "2026-11-30T03:12:00.123456Z",
                          **(odd if i == 1 and isinstance(odd, dict) else {})}) for i in range(3)]
    if isinstance(odd, str):
        recs[1] = recs[1][:-1] + b"," + odd.encode() + b"}"
    value = b"\n".join(recs)
    assert _vector_columns((value, 3)) is None
    where = dict(origin="o", stream="s", host="k", ref_ts=0, ref_basis="kafka", ingest_ts=0, source=None, runs=True)
    got = decode_ndjson(value, **where)
    assert got == decode_ndjson(value, columnar=False, **where)
    # the record with no time (Feb 30) or a number past a double is a reject; the others are read
    assert len(got.rejects) == (isinstance(odd, str) or odd == {"timestamp": "2026-02-30T03:12:00Z"})


@pytest.mark.parametrize(("record", "text", "ts"), [
    # zap (the EKS node monitoring agent, aws/containers-roadmap#2555): the cause in "error", the time in "ts"
    ({"level": "error", "ts": "2025-03-04T07:57:23Z", "msg": "failed to reconcile DCGM state", "hostname": "node01",
      "error": "failed to initialize DCGM: Error connecting to nv-hostengine: Host engine connection invalid"},
     "failed to reconcile DCGM state: failed to initialize DCGM: Error connecting to nv-hostengine: Host engine "
     "connection invalid", 1741075043000000),
    # zap's epoch seconds; slog's "err"
    ({"ts": 1741075043.5, "msg": "probe failed", "err": "timeout", "host": "node01"}, "probe failed: timeout",
     1741075043500000),
    # a "ts" that is no time is no error (the record has no time of its own); an "error" that is no string is not read
    ({"ts": "step 4", "msg": "loss 0.3", "error": 0, "host": "node01"}, "loss 0.3", None),
    # a logger's record (msg and level): the program's own "log", "time", "date" or "timestamp" fields neither hide
    # its msg nor refuse it, and a "host" that is an address with its port is no machine (a break-it pass: the Xid
    # line lost, the record refused, the event of host "10.0.0.5:29500")
    ({"level": "error", "ts": 1741075043.5, "msg": "NVRM: Xid 79", "log": "/var/log/kern.log", "hostname": "node01"},
     "NVRM: Xid 79", 1741075043500000),
    ({"level": "error", "ts": "2025-03-04T07:57:23Z", "msg": "m", "time": 1.53, "date": "Mon", "timestamp": "n/a",
      "host": "node01"}, "m", 1741075043000000),
    ({"level": "error", "ts": 1741075043.5, "msg": "health check failed", "host": "10.0.0.5:29500",
      "hostname": "node01", "error": "NVRM: Xid 79"}, "health check failed: NVRM: Xid 79", 1741075043500000),
    # ... its "ts" before a "timestamp" of the program's that reads as a time (a second break-it pass: 2021)
    ({"level": "error", "ts": 1741075043.5, "msg": "m", "timestamp": "2021-06-01T00:00:00Z", "host": "node01"}, "m",
     1741075043500000),
    # structlog's JSONRenderer: the message is "event" (NVIDIA/NVSentinel#772's preflight dcgm-diag logs were refused
    # whole, "no message field": a real-logs pass); its "exception" is not the cause a text encoder appends
    ({"event": "Test warn", "level": "warning", "timestamp": "2026-02-04T05:19:40.606906Z", "host": "node01",
      "module": "preflight-dcgm-diag", "error_code": 29}, "Test warn error_code=29 module=preflight-dcgm-diag",
     1770182380606906),
    # ... and its other fields after it, as its ConsoleRenderer prints them: the fault may be there alone (read as
    # text before, the Xid line was lost to the event alone: a break-it pass)
    ({"event": "gpu health check failed", "level": "error", "host": "node01",
      "dmesg": "NVRM: Xid (PCI:0000:3b:00): 79, pid=0, GPU has fallen off the bus."},
     "gpu health check failed dmesg=NVRM: Xid (PCI:0000:3b:00): 79, pid=0, GPU has fallen off the bus.", None),
    ({"event": "probe failed", "level": "error", "error": "NVRM: Xid 79", "hostname": "node01"},
     "probe failed: NVRM: Xid 79", None),
    # ... and another field beats it: a record's own message, an slog record whose "event" is an object
    ({"event": "started", "level": "info", "message": "NVRM: Xid 79", "host": "node01"}, "NVRM: Xid 79", None),
    ({"msg": "Health events received", "level": "INFO", "event": {"checkName": "x"}, "host": "node01"},
     "Health events received", None),
])
def test_a_structured_loggers_record_reads_its_error_and_its_ts(record, text, ts):
    """A structured logger's JSON line (zap, logrus, slog) is its message and its cause, as its text encoder prints
    them: "failed to reconcile DCGM state" alone hid the nv-hostengine error that names the fault (a real-logs pass)."""
    d = msg(orjson.dumps(record) + b"\n" + orjson.dumps(record))
    assert not d.rejects
    assert d.segments[0].data.decode() == text
    assert d.segments[0].host == "node01"
    assert (d.segments[0].ref_ts if d.segments[0].ref_basis == "envelope" else None) == ts


@pytest.mark.parametrize("record", [
    {"host": "node01", "message": "", "log": XID},
    {"host": "node01", "message": None, "log": XID},
    {"host": "node01", "message": "", "log": XID, "timestamp": "2026-11-30T03:12:00Z"},  # Vector's shape too
    {"host": "node01", "message": "", "msg": XID, "level": "error"},
    {"_HOSTNAME": "node01", "MESSAGE": "", "message": XID},
    # Vector's shape beside a Cloud Logging export's textPayload or an Azure SyslogMessage: read column by column, the
    # empty message was the line (a break-it pass)
    {"host": "node01", "message": "", "textPayload": XID, "timestamp": "2026-11-30T03:12:00Z"},
    {"host": "node01", "message": "", "SyslogMessage": XID, "timestamp": "2026-11-30T03:12:00Z"},
    # beside a Cloud Logging jsonPayload's message, or a journald byte array in a later field: read as an empty line
    # by every reading (a break-it pass)
    {"host": "node01", "message": "", "jsonPayload": {"message": XID}, "timestamp": "2026-11-30T03:12:00Z"},
    {"host": "node01", "message": None, "jsonPayload": {"MESSAGE": XID}},
    {"host": "node01", "message": "", "log": list(XID.encode()), "timestamp": "2026-11-30T03:12:00Z"},
    # a blank message (whitespace only) beside the shipper's log was read as a blank line by every reading (a
    # break-it pass)
    {"host": "node01", "message": " ", "log": XID},
    {"host": "node01", "message": " \t\r\n", "log": XID, "timestamp": "2026-11-30T03:12:00Z"},
    {"host": "node01", "message": "\u3000\u00a0", "textPayload": XID, "timestamp": "2026-11-30T03:12:00Z"},
    {"host": "node01", "message": "  ", "msg": XID, "level": "error"},
    {"_HOSTNAME": "node01", "MESSAGE": " ", "message": XID},
])
@pytest.mark.parametrize("runs", [False, True])
def test_an_empty_message_field_gives_way_to_a_later_one_that_holds_the_line(record, runs):
    """A message field that is empty or null before one that holds the line (a shipper's ``"message": ""`` beside
    Fluent Bit's ``log``, a logger's ``msg``) is skipped: the record was read as an empty line, its Xid lost without a
    dead letter (a break-it pass). One empty message with nothing after it stays an empty line; a null one alone a
    reject (``test_wrong_field_types_are_dead_lettered``)."""
    value = b"\n".join([orjson.dumps(record)] * 3)
    d = decode_message(value, topic="fleet.dmesg", partition=2, offset=41, key=b"node09",
                       timestamp_ms=1_700_000_000_000, runs=runs)
    segs = per_record(d.segments) if runs else d.segments
    assert not d.rejects
    assert [(s.data.decode(), s.host) for s in segs] == [(XID, "node01")] * 3
    (seg,) = msg(orjson.dumps({"host": "node01", "message": "", "log": ""})).segments
    assert seg.data == b""


def test_a_blank_message_gives_way_to_the_log_in_every_reading():
    """A whitespace-only ``message`` beside Fluent Bit's ``log`` among records of Vector's shape: the log's line,
    read column by column, record by record and one segment per record alike; a blank message with no later field
    stays the blank line it is, and one beside a blank ``log`` is not replaced by it."""
    kw = dict(origin="o", stream="s", host=None, ref_ts=0, ref_basis="file", ingest_ts=0, source=None)
    vec = {"host": "node01", "message": "kernel: hello", "timestamp": "2026-11-30T03:12:00Z"}
    blank = dict(vec, message="   ", log=XID)
    value = b"\n".join(orjson.dumps(r) for r in (vec, blank, vec))
    for reading in ({"runs": True, "columnar": True}, {"runs": True, "columnar": False}, {}):
        segs = decode_ndjson(value, **reading, **kw).segments
        got = [s.data.decode() for s in (per_record(segs) if reading else segs)]
        assert got == ["kernel: hello", XID, "kernel: hello"], reading
    for alone, want in ((dict(vec, message="  "), "  "), (dict(vec, message="  ", log=" "), "  ")):
        value = b"\n".join(orjson.dumps(alone) for _ in range(2))
        for reading in ({"runs": True, "columnar": True}, {"runs": True, "columnar": False}, {}):
            segs = decode_ndjson(value, **reading, **kw).segments
            assert [s.data.decode() for s in (per_record(segs) if reading else segs)] == [want] * 2, reading


def test_a_structlog_records_exception_is_read_after_its_event(tmp_path):
    """structlog's ``log.exception("step failed")`` writes the traceback in ``exception`` (``format_exc_info``; a
    list of ``{"exc_type", "exc_value", …}`` with ``dict_tracebacks``): read by ``event`` alone, the CUDA error in it
    gave no event, though the same record in a file with no time had been read as text and given one, and one with
    a time had been dead-lettered, not read as nothing (a break-it pass). It is read on the lines after the event,
    as structlog's ConsoleRenderer prints it."""
    from api.diagnose import diagnose_paths
    from schemas.settings import Settings

    tb = ('Traceback (most recent call last):\n  File "train.py", line 10, in step\n    loss.backward()\n'
          "RuntimeError: CUDA error: an illegal memory access was encountered")
    rec = {"event": "step failed", "level": "error", "timestamp": "2026-12-01T00:00:00Z", "host": "node01",
           "exception": tb}
    assert msg(orjson.dumps(rec)).segments[0].data.decode() == "step failed\n" + tb
    listed = dict(rec, exception=[{"exc_type": "RuntimeError", "exc_value": "CUDA error: an illegal memory access "
                                   "was encountered", "is_cause": False, "frames": []}])
    assert msg(orjson.dumps(listed)).segments[0].data.decode() == (
        "step failed\nRuntimeError: CUDA error: an illegal memory access was encountered")
    for r in (rec, listed, dict(rec, exception=None), dict(rec, exception=7)):  # runs read as record by record
        two = orjson.dumps(r) + b"\n" + orjson.dumps(r)
        kw = dict(origin="o", stream="s", host=None, ref_ts=0, ref_basis="file", ingest_ts=0, source=None)
        assert [s.data for s in per_record(decode_ndjson(two, runs=True, **kw).segments)] == [
            s.data for s in decode_ndjson(two, **kw).segments], r["exception"]
    log = tmp_path / "node07.train.log"
    log.write_bytes(orjson.dumps({k: v for k, v in rec.items() if k not in ("timestamp", "host")}) + b"\n")
    _, batch, _ = diagnose_paths([log], Settings())
    assert batch.events.column("signature").to_pylist() == ["cuda.program_error"]


def test_a_dmesg_t_line_whose_month_is_unreadable_says_so_and_keeps_its_event(tmp_path):
    """``[Mon Xyz  1 05:04:05 2026]``, ``[火 13月 …]``: a dmesg -T stamp whose month no locale names took the time
    of the line before it unsaid, where a date no calendar has (29 February 2026) says ``ts_unreadable`` (a helper's
    pass). Both say it now, and the line's event is whole: its device, its Xid, its message."""
    from api.diagnose import diagnose_paths
    from schemas.settings import Settings

    off = "NVRM: Xid (PCI:0000:{}:00): 79, pid=0, GPU has fallen off the bus."
    lines = [f"[Mon Dec  1 03:04:05 2026] {off.format('3b')}", f"[Mon Xyz  1 05:04:05 2026] {off.format('1b')}",
             f"[火 13月  1 05:04:05 2026] {off.format('2b')}", f"[Sun Feb 29 05:04:05 2026] {off.format('4b')}"]
    log = tmp_path / "node07.dmesg.log"
    log.write_text("\n".join(lines) + "\n")
    _, batch, _ = diagnose_paths([log], Settings())
    got = [(e["device"], e["xid"], e["ts_basis"], orjson.loads(e["details"]).get("ts_unreadable"), e["message"])
           for e in batch.events.to_pylist()]
    assert got == [("0000:3b:00.0", 79, "line", None, lines[0]),
                   ("0000:1b:00.0", 79, "inherited", "Mon Xyz  1 05:04:05 2026", lines[1]),
                   ("0000:2b:00.0", 79, "inherited", "火 13月  1 05:04:05 2026", lines[2]),
                   ("0000:4b:00.0", 79, "inherited", "Sun Feb 29 05:04:05 2026", lines[3])], got


def test_a_file_named_by_a_command_flag_alone_is_that_host(tmp_path):
    """``q.x.log`` in ``/tmp/r75x`` was host ``r75x``, its folder's, where ``y.x.log`` was ``y`` (a helper's pass):
    ``q`` is a log word as nvidia-smi's flag (``node07-nvidia-smi-q.txt``), so the file was taken for one named by its
    kind alone (``dmesg.log``). A flag (``q``, ``t``, ``k``, ``s``) is a kind of log only right after its command;
    alone, or after a host's name, it is the name (DESIGN.md: the file name up to its first ``.``)."""
    from pathlib import Path

    from api.diagnose import diagnose_paths
    from ingest.decode import host_from_filename
    from schemas.settings import Settings

    names = {"r75x/q.x.log": "q", "r75x/t.log": "t", "r75x/k.log": "k", "r75x/s.txt": "s", "r75x/y.log": "y",
             "r75x/Y.log": "Y", "gpu-t.log": "gpu-t", "rack1_s.log": "rack1_s", "t-node07.log": "t-node07",
             # ... after their command they are still its flag, at the end or in front of the host's name
             "node12-dmesg-T.log": "node12", "node07-nvidia-smi-q.txt": "node07", "node14-journalctl-k.txt": "node14",
             "dmesg-T-node07.log": "node07", "r75x/dmesg-T.log": "r75x", "r75x/dmesg.log": "r75x"}
    assert {n: host_from_filename(Path(n)) for n in names} == names
    (tmp_path / "job4711").mkdir()
    for name in ("q.x.log", "y.log"):
        (tmp_path / "job4711" / name).write_text("[Mon Dec  1 03:04:05 2026] NVRM: Xid (PCI:0000:3b:00): 79, pid=0, "
                                                 "GPU has fallen off the bus.\n")
        _, batch, incidents = diagnose_paths([tmp_path / "job4711" / name], Settings())
        assert batch.events.column("host").to_pylist() == [name[0]]
        assert [i["initiator"]["host"] for i in incidents] == [name[0]], name


def test_a_vector_record_whose_host_is_an_address_with_its_port_takes_the_key():
    """A clean run of Vector records was read column by column, its "host" kept as it came: "10.0.0.5:29500" over
    the Kafka key, where the record-by-record reading takes the key (a break-it pass)."""
    rec = {"message": XID, "timestamp": "2026-12-01T03:12:00Z", "host": "10.0.0.5:29500"}
    value = orjson.dumps(rec) + b"\n" + orjson.dumps(rec)
    for runs in (False, True):  # record by record; column by column, as the consumer reads (``runs``): the test
        # read only the first, and passed with the column reader's check of the port removed (a speed pass)
        d = decode_message(value, topic="fleet.dmesg", partition=2, offset=41, key=b"node099",
                           timestamp_ms=1_700_000_000_000, runs=runs)
        hosts = {h for s in d.segments for h in (s.hosts if hasattr(s, "hosts") else [s.host])}
        assert not d.rejects and hosts == {"node099"}, runs


def test_envelope_fields_the_decoder_does_not_read_cannot_reject_a_record():
    """Envelopes are read as ``ingest.decode.Envelope`` (msgspec): fields outside it are skipped, so a value
    a JSON parser may refuse there (a number past a double, an integer past 64 bits) costs nothing; the
    same value in a field that is read is a reject that names it; nesting past the decoder's depth
    is a reject, not a crash of the consumer."""
    d = msg(b'{"host": "a", "message": "' + XID.encode() + b'", "x": 1e999, "n": 123456789012345678901234567890}\n'
            b'{"host": "a", "message": "m", "timestamp": 1e999}\n'
            b'{"host": "a", "message": "m", "deep": ' + b"[" * 5000 + b"]" * 5000 + b'}\n'
            b'[1, 2]\n'
            b'{"host": "a", "message": null}')
    assert [s.data.decode() for s in d.segments] == [XID]
    assert [(r.origin.rsplit("#", 1)[1], r.error_code) for r in d.rejects] == [
        ("r1", "bad_envelope"), ("r2", "bad_envelope"), ("r3", "bad_envelope"), ("r4", "bad_envelope")]
    r1, r2, r3, r4 = (r.reason for r in d.rejects)
    assert "timestamp" in r1 and "out of range" in r1
    assert "depth" in r2 or "recursion" in r2
    assert "not an object" in r3 and "null" in r4


def test_envelope_bytes_that_are_not_utf8_reject_the_record_even_in_fields_not_read():
    """JSON text is UTF-8 (RFC 8259): a record with a stray byte or an encoded surrogate anywhere is a
    ``bad_envelope`` reject that says so (the surrogate's bytes named as such); the records around them come
    through. A lone escaped surrogate is JSON (RFC 8259 §8.2) that names no character: it reads as U+FFFD and
    its record is kept (test_a_lone_escaped_surrogate_reads_as_the_replacement_character)."""
    good = orjson.dumps({"host": "a", "message": XID})
    d = msg(good + b'\n{"message": "a", "junk": "\xff"}\n{"message": "a", "j": "\xed\xa0\x80"}\n'
            b'{"message": "\\ud800 hi"}\n' + good)
    assert [s.data.decode() for s in d.segments] == [XID, "\ufffd hi", XID]
    assert [r.origin.rsplit("#", 1)[1] for r in d.rejects] == ["r1", "r2"]
    assert d.rejects[0].reason == ("NDJSON record 1: not UTF-8: 'utf-8' codec can't decode byte 0xff in position 26: "
                                   "invalid start byte")
    assert d.rejects[1].reason == ("NDJSON record 2: not UTF-8: bytes ed a0 80 at byte 23 encode a UTF-16 surrogate "
                                   "(CESU-8 or WTF-8), which UTF-8 holds no character of")


@settings(max_examples=400, deadline=None)
@given(st.lists(st.lists(st.sampled_from([b"\\ud800", b"\\udc00", b"\\uDBFF", b"\\uDFFF", b"\\\\",
                                          b"\\u0041", b"\\n", b"\\", b"ud800", b"udc00", b"x", b"\"", b" "]),
                         max_size=8)
                .map(lambda parts: b'{"message": "' + b"".join(parts) + b'"}'), min_size=1, max_size=6))
def test_only_lines_that_may_hold_a_lone_surrogate_are_read_again(lines):
    """``_records_without_lone_surrogates`` reads again only the lines ``_LONE_CANDIDATE`` finds (pairs alone, an
    emoji's escape in every record of a value, were read twice: 45% more time on 200k records, a break-it pass), and
    gives what reading every JSON line with ``without_lone_surrogates`` gives: escaped backslashes, pairs and lone
    halves in any order, the lines joined as they came."""
    from ingest.decode import _records_without_lone_surrogates, without_lone_surrogates

    for data in (b"\n".join(lines), b"\n".join(lines * 70)):  # a few candidate lines, or many
        assert _records_without_lone_surrogates(data) == b"\n".join(without_lone_surrogates(x)
                                                                     for x in data.split(b"\n"))
    paired = b"\n".join(b'{"message": "\\ud83d\\ude00 %d"}' % i for i in range(50))
    assert _records_without_lone_surrogates(paired) is paired


LONE = XID.replace("pid=0", "pid=0 \\ud800").encode()  # the JSON escape of a surrogate alone (6 bytes)


@pytest.mark.parametrize("runs", [False, True])
def test_a_lone_escaped_surrogate_reads_as_the_replacement_character(runs):
    """A record whose message holds ``"\\ud800"`` (or a low surrogate alone, or a low one before a high one) was a
    ``bad_envelope`` reject, its Xid lost, and a JSON array value holding one was refused whole, its good records
    with it: each such escape reads as U+FFFD and every record comes through; a pair is the character it spells,
    an escaped backslash before ``ud800`` is no escape, and a text line among the records keeps its text."""
    recs = [b'{"host": "n1", "message": "' + LONE + b'"}',
            b'{"host": "n1", "message": "\\udc00\\ud800 x \\ud83d\\ude00"}',
            b'{"host": "n1", "message": "C:\\\\ud800 y"}', rb"Traceback: C:\ud800 z",
            b'{"host": "n1\\udfff", "message": "m"}']
    d = msg(b"\n".join(recs), key=None) if not runs else decode_message(
        b"\n".join(recs), topic="t", partition=0, offset=1, key=None, timestamp_ms=1_700_000_000_000, runs=True)
    segs = per_record(d.segments)
    assert [(s.data.decode(), s.host) for s in segs] == [
        (XID.replace("pid=0", "pid=0 \ufffd"), "n1"), ("\ufffd\ufffd x \U0001F600", "n1"), ("C:\\ud800 y", "n1"),
        ("Traceback: C:\\ud800 z", "n1"), ("m", "n1\ufffd")]
    assert not d.rejects
    arr = b"[" + b",".join([recs[0], orjson.dumps({"host": "n2", "message": XID})]) + b"]"
    d = msg(arr)
    assert [(s.data.decode(), s.host, s.origin) for s in d.segments] == [
        (XID.replace("pid=0", "pid=0 \ufffd"), "n1", "kafka:fleet.dmesg/2/41#r0"),
        (XID, "n2", "kafka:fleet.dmesg/2/41#r1")]
    assert not d.rejects
    mixed = b"[1, " + recs[0] + b"]"  # an array with an object among other values (looks_json_array's second form)
    d = msg(mixed)
    assert [s.data.decode() for s in d.segments] == [XID.replace("pid=0", "pid=0 \ufffd")]
    assert [r.reason for r in d.rejects] == ["NDJSON record 0: record is not an object (Expected `object`, got `int`)"]


def test_a_monotonic_time_that_is_no_decimal_count_gives_no_boot_time_and_loses_nothing():
    """``__MONOTONIC_TIMESTAMP`` is a decimal count of µs; "²" passes ``str.isdigit`` and 5,000 digits pass it
    too, but neither is a count ``int`` reads: the record keeps its message and time, without a boot time."""
    base = {"__REALTIME_TIMESTAMP": "1796008320000000", "_HOSTNAME": "n", "MESSAGE": XID}
    d = msg(b"\n".join(orjson.dumps({**base, "__MONOTONIC_TIMESTAMP": m}) for m in ("\u00b2", "9" * 5000, "12")))
    assert not d.rejects
    assert [s.boot_ts for s in d.segments] == [None, None, 1796008320000000 - 12]

def test_journald_gives_the_boot_time():
    rec = {"__REALTIME_TIMESTAMP": "1796008320000000", "__MONOTONIC_TIMESTAMP": "1000000", "_HOSTNAME": "n",
           "MESSAGE": XID}
    (seg,) = msg(orjson.dumps(rec)).segments
    assert seg.boot_ts == 1796008320000000 - 1000000


def test_a_broken_record_is_rejected_with_a_reason_and_the_rest_goes_on():
    good = orjson.dumps({"host": "a", "message": XID})
    d = msg(good + b'\n{"host": "a", "message": \n' + b'{"host": "a", "message": 5}\n' + good)
    assert len(d.segments) == 2
    assert [r.error_code for r in d.rejects] == ["bad_envelope", "bad_envelope"]
    assert "record 1" in d.rejects[0].reason and "not a string" in d.rejects[1].reason


def test_a_numeric_envelope_time_before_2000_times_no_event_and_loses_no_line(pipeline):
    """A host whose clock was reset to the epoch (a dead RTC battery) ships Fluent Bit's ``"date": 5.25``: the record
    was dead-lettered whole, so a kernel line stamped 2026 by its own clock reached no incident, where an ISO 8601
    envelope time of 1970 only times no event (docs/reliability.md, "Times"; a break-it pass). Now the number is kept
    as the rejected envelope time: the line's own stamp times it, else the Kafka record's time. A number that is no
    time in any unit (1e30: past 64-bit µs) still dead-letters its record."""
    from ingest.decode import Decoded
    from ingest.prefix import to_us

    stamped = f"2023-11-14T22:00:00Z node07 kernel: {XID}"  # before its Kafka record's time (msg: 2023-11-14T22:13:20)
    d = msg(b"\n".join(orjson.dumps(r) for r in (
        {"date": 5.25, "hostname": "node07", "log": stamped},
        {"date": -0.5, "hostname": "node08", "log": XID},
        {"date": 1e30, "hostname": "node09", "log": XID})))
    assert [(s.host, s.ref_ts, s.ref_basis) for s in d.segments] == [("node07", 5_250_000, "envelope"),
                                                                      ("node08", -500_000, "envelope")]
    assert len(d.rejects) == 1 and "record 2" in d.rejects[0].reason
    evs = {e["host"]: e for e in pipeline.run(Decoded(segments=d.segments)).events.to_pylist()}
    assert sorted(evs) == ["node07", "node08"] and evs["node07"]["xid"] == evs["node08"]["xid"] == 79
    assert (to_us(evs["node07"]["ts"]), evs["node07"]["ts_basis"]) == (1_699_999_200_000_000, "line")
    # no time of its own: the Kafka record's (msg: 1_700_000_000_000 ms), the envelope's kept as rejected
    assert (to_us(evs["node08"]["ts"]), evs["node08"]["ts_basis"]) == (1_700_000_000_000_000, "kafka")
    assert orjson.loads(evs["node08"]["details"])["envelope_ts_rejected"] == -500_000


@pytest.mark.parametrize("date", [86_400_000_000_000, 946_684_799_999_999_999, 9_300_000_000_000, -9.3e12,
                                  2**70, -(2**70)])
def test_a_numeric_envelope_time_in_ns_or_us_of_no_fleet_time_loses_no_line(pipeline, date):
    """Only the seconds reading of a number no unit places from 2000 to 2100 was kept as the rejected envelope
    time: a host with its clock reset to the epoch whose shipper counts ns (``86_400_000_000_000``: one day after
    it) or µs, a clock of 1999 in ns, had every record dead-lettered once that reading passed 64-bit µs (a break-it
    pass). Any unit's reading that fits is kept: the line is timed by its own stamp, no event by the envelope."""
    from ingest.decode import Decoded
    from ingest.prefix import to_us

    stamped = f"2023-11-14T22:00:00Z node07 kernel: {XID}"
    d = msg(b'{"date": %s, "hostname": "node07", "log": %s}' % (str(date).encode(), orjson.dumps(stamped)))
    assert not d.rejects and [s.ref_basis for s in d.segments] == ["envelope"]
    (ev,) = pipeline.run(Decoded(segments=d.segments)).events.to_pylist()
    assert (ev["xid"], to_us(ev["ts"]), ev["ts_basis"]) == (79, 1_699_999_200_000_000, "line")
    # a line with no time of its own: the Kafka record's (msg: 1_700_000_000_000 ms), the envelope's kept as rejected
    d = msg(b'{"date": %s, "hostname": "node07", "log": %s}' % (str(date).encode(), orjson.dumps(XID)))
    (ev,) = pipeline.run(Decoded(segments=d.segments)).events.to_pylist()
    assert (to_us(ev["ts"]), ev["ts_basis"]) == (1_700_000_000_000_000, "kafka")
    assert orjson.loads(ev["details"])["envelope_ts_rejected"] == d.segments[0].ref_ts


@pytest.mark.parametrize("date", [5.25, 86_400_000_000_000])
def test_a_yearless_stamp_of_a_record_whose_envelope_time_was_rejected_takes_its_year_from_the_arrival(pipeline,
                                                                                                      date):
    """A syslog stamp carries no year: it took the rejected envelope time's (1969 of a clock reset to the epoch),
    which was refused, and the line was timed by its Kafka record 13 minutes later instead of by its own stamp (a
    break-it pass). The year comes from the arrival when the envelope time is no fleet time."""
    from ingest.decode import Decoded
    from ingest.prefix import to_us

    d = msg(orjson.dumps({"date": date, "hostname": "node07", "log": f"Nov 14 22:00:00 node07 kernel: {XID}"}))
    (ev,) = pipeline.run(Decoded(segments=d.segments)).events.to_pylist()
    assert (to_us(ev["ts"]), ev["ts_basis"]) == (1_699_999_200_000_000, "line")
    assert "ts_rejected" not in orjson.loads(ev["details"])


def test_an_infinite_envelope_time_is_dead_lettered_saying_it_is_no_time():
    """``1.5e308`` s is finite, but its µs are not: the reason was Python's "cannot convert float infinity to
    integer", not what the field is."""
    (r,) = msg(b'{"date": 1.5e308, "hostname": "node07", "log": "x"}').rejects
    assert "field 'date' = 1.5e+308 is no time from 2000 to 2100" in r.reason


def test_a_dead_letter_fits_the_producer_whatever_the_original_key_and_headers():
    """A 17 MiB key (or headers as large) made the dead letter larger than the worker's producer sends: the worker
    retried it for ever and ingested nothing more (a break-it pass). The key is cut, and said; headers that large are
    dropped, and said; a dead letter of ordinary ones keeps them as they were."""
    from ingest.consumer import DLQ_KEPT_BYTES, dead_letters

    origin = "kafka:fleet.dmesg/2/41"
    big = b"k" * (17 << 20)
    [(key, _, headers)] = dead_letters(msg(None).rejects, {origin: (big, [("host", b"node07")])})
    h = dict(headers)
    assert (len(key), h["host"], h["ff-key-cut"]) == (DLQ_KEPT_BYTES, b"node07",
                                                       f"first {DLQ_KEPT_BYTES} of {len(big)} key bytes".encode())
    [(key, _, headers)] = dead_letters(msg(None).rejects, {origin: (b"node07", [("x", big), ("host", b"node07")])})
    assert key == b"node07" and [k for k, _ in headers][:2] == ["ff-headers-dropped", "ff-reason"]
    assert sum(len(v or b"") for _, v in headers) < 4096
    [(key, _, headers)] = dead_letters(msg(None).rejects, {origin: (b"node07", [("host", b"node07")])})
    assert (key, headers[0]) == (b"node07", ("host", b"node07"))


def test_a_domains_events_go_in_records_the_producer_takes():
    """One host's 60,000 events of one batch were one 31.8 MB events record, over the producer's 16 MiB: the worker
    retried the batch for ever (a break-it pass). They are records of at most EVENTS_RECORD_BYTES, in order, and
    read back whole."""
    import pyarrow as pa

    from ingest.publish import decode, encode_records
    from schemas.events import EVENTS_SCHEMA

    row = {f.name: None for f in EVENTS_SCHEMA}
    row.update(event_id="e", ts=1796008320000000, ts_basis="line", host="node050", source="dmesg", kind="xid",
               signature="xid", severity="error", message="NVRM: Xid (PCI:0000:3b:00): 13, " + "x" * 400)
    t = pa.Table.from_pylist([{**row, "event_id": f"e{i}"} for i in range(20_000)], EVENTS_SCHEMA)
    values = encode_records(t, 1 << 20)
    assert len(values) > 4 and max(map(len, values)) <= 1 << 20
    back = pa.concat_tables([decode(v) for v in values])
    assert back.column("event_id").to_pylist() == [f"e{i}" for i in range(20_000)]
    assert encode_records(t.slice(0, 10), 1 << 20) == [encode_records(t.slice(0, 10))[0]]


def test_tombstone_and_corrupt_compression_are_rejected():
    from ingest.consumer import dead_letters

    assert msg(None).rejects[0].error_code == "empty"
    assert msg(b"\x1f\x8b\x08\x00garbage").rejects[0].error_code == "bad_compression"
    # a tombstone's dead letter is a tombstone (it was b"", an empty line when sent again: a break-it pass)
    [(key, value, headers)] = dead_letters(msg(None, key=b"node07").rejects, {"kafka:fleet.dmesg/2/41": (b"node07", [])})
    assert (key, value, dict(headers)["ff-error-code"]) == (b"node07", None, b"empty")
    [(_, value, _)] = dead_letters(msg(b"\x1f\x8b\x08\x00garbage").rejects)
    assert value == b"\x1f\x8b\x08\x00garbage"
    # an empty value and one of NUL bytes only are dead-lettered too (they vanished unsaid: a break-it pass); a
    # value of blanks is an empty text, and NULs before text are a crash's zeroed blocks
    assert [(r.reason, r.error_code) for r in msg(b"").rejects] == [("empty value", "empty")]
    assert [r.error_code for r in msg(b"\x00" * 4096 + b"\n").rejects] == ["not_text"]
    assert not msg(b"  \n\n").rejects and not msg(b"\x00\x00[ 12.3] NVRM: x").rejects


def test_a_crashs_zeroed_blocks_after_a_cut_line_end_it(tmp_path, pipeline):
    """A crash cut a line and left zeroed blocks after it (ext4's delayed allocation): "… GPU has fal", 8 kB of NULs,
    then an Xid 48 line. The three were one line, read as the cut Xid 79, the Xid 48 lost (a break-it pass); in a
    file, a Kafka value and an envelope's message (Vector tailing the file: a second break-it pass) alike the NUL run
    ends the cut line (``decode.end_nul_holes``, in the pipeline). UTF-32 text without a byte order mark, whose
    runs are three NULs long, is not cut into characters."""
    x79 = b"Dec  1 03:12:05 node07 kernel: NVRM: Xid (PCI:0000:1b:00): 79, pid=1234, name=python3, GPU has fallen off"
    x48 = (b"Dec  1 03:20:00 node07 kernel: NVRM: Xid (PCI:0000:3b:00): 48, pid=1234, name=python3, An uncorrectable "
           b"double bit error (DBE) has been detected on GPU in the framebuffer at partition 1, subpartition 0.")
    text = x79 + b" the bus.\n" + x79[:80] + b"\x00" * 8192 + x48 + b"\n"
    f = tmp_path / "node07.log"
    f.write_bytes(text)
    vector = orjson.dumps({"host": "node07", "message": text.decode().rstrip("\n")})
    for d in (decode_file(f, relname=f.name), msg(text), msg(vector)):
        xids = pipeline.run(d).events.column("xid").to_pylist()
        assert sorted(xids) == [48, 79, 79], xids  # the cut line is an Xid 79 line still
    assert end_nul_holes("Dec  1 x".encode("utf-32-le")) == "Dec  1 x".encode("utf-32-le")
    # NDJSON records with the hole between them and no line feed: both read, in a file and a Kafka value (the hole was
    # ended only after the records were parsed, and the file was refused whole: a break-it pass)
    records = (orjson.dumps({"_HOSTNAME": "node07", "MESSAGE": x79.decode() + " the bus."}) + b"\x00" * 4096
               + orjson.dumps({"_HOSTNAME": "node07", "MESSAGE": x48.decode()}) + b"\n")
    g = tmp_path / "node07.json"
    g.write_bytes(records)
    for d in (decode_file(g, relname=g.name), msg(records)):
        assert sorted(pipeline.run(d).events.column("xid").to_pylist()) == [48, 79], d.rejects


def test_gzip_and_zstd_values_and_files(tmp_path):
    raw = ("[Fri Mar  3 04:44:24 2023] " + XID).encode()
    for blob in (gzip.compress(raw), zstandard.ZstdCompressor().compress(raw)):
        (seg,) = msg(blob).segments
        assert seg.data == raw
    f = tmp_path / "node05.dmesg.log.zst"
    f.write_bytes(zstandard.ZstdCompressor().compress(raw))
    (seg,) = decode_file(f, relname=f.name).segments
    assert (seg.host, seg.data, seg.ref_basis, seg.line_base) == ("node05", raw, "file", 1)


@pytest.mark.parametrize("codec,first", [("utf-16", ""), ("utf-16-be", ""), ("utf-32", ""), ("utf-32-be", ""),
                                         ("utf-16", "Журнал узла node05, выгружен PowerShell\r\n")])
def test_utf16_and_utf32_text_with_a_byte_order_mark_is_read(tmp_path, codec, first):
    """A capture saved by PowerShell's ``>`` is UTF-16LE with a byte order mark: it read as binary, gave no
    event and no message ("2 lines -> 0 events", a break-it pass), in a file and in a Kafka value alike. Text
    with a UTF-16 or UTF-32 mark is read as such, in either byte order, also when its first line is not ASCII
    (a second break-it pass: UTF-32BE and a Cyrillic first line still read as binary); the segments hold its
    UTF-8."""
    from types import SimpleNamespace

    from ingest.decode import decode_partition

    text = first + "[Fri Mar  3 04:44:24 2023] " + XID + "\r\n"
    raw = ("\ufeff" + text).encode(codec) if codec.endswith("-be") else text.encode(codec)
    assert raw[:2] in (b"\xff\xfe", b"\xfe\xff", b"\x00\x00")
    (seg,) = msg(raw).segments
    assert seg.data == text.encode()
    rec = SimpleNamespace(value=raw, key=b"n1", offset=7, timestamp=1_700_000_000_000, headers=[])
    (seg,) = decode_partition("fleet.dmesg", 2, [rec]).segments
    assert seg.data == text.encode()
    f = tmp_path / "node05.dmesg.log"
    f.write_bytes(raw)
    (seg,) = decode_file(f, relname=f.name).segments
    assert (seg.host, seg.data) == ("node05", text.encode())
    # the same two bytes before plain ASCII are no UTF-16 mark, only invalid UTF-8: the bytes stay as they are
    (seg,) = msg(b"\xff\xfe " + XID.encode()).segments
    assert seg.data == b"\xff\xfe " + XID.encode()


def test_file_name_gives_the_host(tmp_path):
    f = tmp_path / "node07.dmesg.log"
    f.write_text(XID)
    assert decode_file(f, relname=f.name).segments[0].host == "node07"


@pytest.mark.parametrize("printed,norm", [
    ("PCI:0000:18:00", "0000:18:00.0"), ("0000:18:00.0", "0000:18:00.0"), ("00000000:18:00.0", "0000:18:00.0"),
    ("00000019:01:00.0", "0019:01:00.0"), ("0001:6C:00", "0001:6c:00.0"), ("PCI:...", None), ("", None),
    # a domain past 0xffff (Intel VMD) as Linux prints it, or nvidia-smi's eight digits of it: the last four digits
    # made it domain 0000, another GPU's (a break-it pass)
    ("PCI:10000:e1:00", "10000:e1:00.0"), ("00010000:E1:00.0", "10000:e1:00.0"), ("0000:3b:00.9", None),
])
def test_pci_forms(printed, norm):
    assert normalize_bus_id(printed) == norm


@pytest.mark.parametrize("line,device", [
    ("NVRM: Xid (PCI:10000:e1:00): 79, pid=0, GPU has fallen off the bus.", "10000:e1:00.0"),
    ("NVRM: Xid (PCI:00000000:3b:00): 79, pid=0, GPU has fallen off the bus.", "0000:3b:00.0"),
    ("NVRM: GPU 10000:e1:00.0: GPU has fallen off the bus.", "10000:e1:00.0"),
    ("nvidia-nvswitch2: SXid (PCI:10001:05:00.0): 12028, Non-fatal, Link 45 egress non-posted PRIV error",
     "10001:05:00.0"),
    ("pcieport 10000:e0:1d.0: AER: Uncorrected (Fatal) error received: 10000:e1:00.0", "10000:e0:1d.0"),
])
def test_device_lines_of_a_vmd_domain_give_events(pipeline, line, device):
    """The kernel and the driver print a PCI domain with ``%04x``: behind an Intel VMD controller it has five digits
    (``10000``), and the Xid, SXid, fallen-off-the-bus and AER signatures, which took four, dropped such lines
    without a word (a break-it pass)."""
    from ingest.decode import Decoded

    b = pipeline.run(Decoded(segments=msg(f"2026-11-30T03:12:00Z node07 kernel: {line}".encode()).segments))
    assert b.events.column("device").to_pylist() == [device] and not b.rejects


def test_nccl_bus_ids_decode_arithmetically():
    assert nccl_bus_id("18000") == "0000:18:00.0"
    assert nccl_bus_id("201c0") == "0000:20:1c.0"
    assert nccl_bus_id("801000") == "0008:01:00.0"
    assert bus_only("0x21") == "0000:21:00.0" and bus_only("0x1ff") is None


def test_poller_link_sample_format_becomes_samples_events_and_the_bus_id(pipeline):
    """The documented poller format (schemas.samples.PollerSample) on the NVML topic: link states and
    speeds, error counters, an inactive link and a link DCGM calls down as nvlink_down events (the down one
    keeps its state "down"), the GPU index -> bus id fact, and the bus id on every link sample of the GPU."""
    import orjson

    from ingest.decode import decode_message

    rec = {"format": "firstfault.link_sample/1", "host": "node07", "timestamp": "2026-11-30T03:12:01Z",
           "gpu_index": 2, "device": "0000:18:00.0", "model": "NVIDIA H100 80GB HBM3",
           "links": [{"link": 0, "state": "up", "gbps": 26.562, "counters": {"Replay Errors": 0, "CRC Errors": 3}},
                     {"link": 1, "state": "inactive"}, {"link": 2, "state": "down", "counters": {"CRC Errors": 57}}]}
    bad = {**rec, "links": [{"link": 0, "state": "up"}]}
    # counters NVML cannot give or the lake cannot hold: a negative count was silently no row, 2**63 a float
    # (a break-it pass)
    odd = [{**rec, "links": [{"link": 0, "state": "inactive", "counters": {"CRC Errors": n}}]} for n in (-7, 2**63)]
    # one link twice (up, then down, two counter values): the API's latest state of it changed between two identical
    # calls, and the hourly report found a flap and a counter rise in one sample (a break-it pass)
    twice = {**rec, "links": [{"link": 0, "state": "up", "gbps": 26.5, "counters": {"CRC Errors": 1}},
                              {"link": 0, "state": "down", "counters": {"CRC Errors": 999}}]}
    d = decode_message(b"\n".join(map(orjson.dumps, [rec, bad, *odd, twice])), topic="fleet.nvml", partition=0,
                       offset=1, key=None, timestamp_ms=1_796_000_000_000)
    assert [(r.error_code, "links.0" in r.reason and "no gbps" in r.reason) for r in d.rejects[:1]] == \
        [("bad_envelope", True)]
    assert [(r.error_code, "links.0.counters.CRC Errors" in r.reason) for r in d.rejects[1:3]] == \
        [("bad_envelope", True)] * 2, [r.reason for r in d.rejects]
    assert [(r.error_code, "link 0 listed more than once: one entry per link" in r.reason) for r in d.rejects[3:]] \
        == [("bad_envelope", True)], [r.reason for r in d.rejects]
    # a sample of another version of the format said it had "no message field"
    [r] = decode_message(orjson.dumps({**rec, "format": "firstfault.link_sample/2"}), topic="fleet.nvml", partition=0,
                         offset=2, key=None, timestamp_ms=1_796_000_000_000).rejects
    assert r.reason == ("NDJSON record 0: format 'firstfault.link_sample/2' is not read here: this firstfault reads "
                        "firstfault.link_sample/1")
    b = pipeline.run(d)
    rows = [(r["host"], r["gpu_index"], r["link"], r["state"], r["gbps"], r["counter"], r["value"])
            for r in b.link_samples.to_pylist()]
    assert rows == [("node07", 2, 0, "up", 26.562, None, None), ("node07", 2, 0, None, None, "Replay Errors", 0.0),
                    ("node07", 2, 0, None, None, "CRC Errors", 3.0), ("node07", 2, 1, "inactive", None, None, None),
                    ("node07", 2, 2, None, None, "CRC Errors", 57.0), ("node07", 2, 2, "down", None, None, None)]
    assert b.link_samples.column("device").to_pylist() == ["0000:18:00.0"] * 6
    assert b.link_samples.column("ts").cast("int64").to_pylist() == [1_796_008_321_000_000] * 6
    assert [(e["kind"], e["signature"], e["gpu_index"], e["link"]) for e in b.events.to_pylist()] == [
        ("nvlink_down", "nvml.nvlink_inactive", 2, 1), ("nvlink_down", "dcgm.nvlink_down", 2, 2)]
    assert [(t["fact"], t["gpu_index"], t["device"]) for t in b.topology.to_pylist()] == [("gpu_bus", 2, "0000:18:00.0")]


# --- one decode_lines call for a clean NDJSON value (ingest.decode._clean_records) ------------------------

#: lines an NDJSON value may hold: records of every shipper, broken ones, and lines that are two records or
#: half of one (a value that fooled a one-call read into other record boundaries would differ below)
_NDJSON_LINES = [
    b'{"host": "node07", "timestamp": "2026-11-30T03:12:00.123456789Z", "message": "' + XID.encode() + b'"}',
    b'{"host": "node07", "timestamp": "2026-11-30T03:12:00Z", "message": "plain"}',
    b'{"date": 1796008320.5, "hostname": "node08", "log": "fluent"}',
    b'{"@timestamp": "2026-11-30T03:12:00.000+01:00", "host": {"name": "node10"}, "message": "ecs"}',
    b'{"__REALTIME_TIMESTAMP": "1796008320000001", "__MONOTONIC_TIMESTAMP": "12", "_HOSTNAME": "n", '
    b'"MESSAGE": [78, 86]}',
    b'{"message": "no time, no host"}', b'{"MESSAGE": "j", "message": "v", "host": ""}',
    b'{"message": "m", "timestamp": "yesterday"}', b'{"message": "m", "timestamp": true}',
    b'{"message": 5}', b'{"log": "x", "realtime": null, "time": 1796008320}', b'{}',
    b'{"message": "\\ud800 lone"}', b'{"message": "caf\xc3\xa9"}', b'{"message": "a", "junk": "\xff"}',
    b'{"host": "a", "message":', b'1}', b'{"x": 1} {"y": 2}', b'{"x": 1},{"y": 2}', b'[1, 2]', b'',
    b'   ', b'{"message": "crlf"}\r', b' {"message": "lead"}', b'{"message": "m", "deep": ' + b"[" * 2000 +
    b"]" * 2000 + b'}',
    orjson.dumps({"format": "firstfault.link_sample/1", "host": "node07", "timestamp": "2026-11-30T03:12:01Z",
                  "gpu_index": 2, "links": [{"link": 1, "state": "inactive"}]}),
]


@given(st.lists(st.sampled_from(_NDJSON_LINES), min_size=1, max_size=12), st.booleans())
@settings(max_examples=400, deadline=None)
def test_a_clean_ndjson_value_read_in_one_call_equals_reading_it_line_by_line(lines, trailing_newline):
    """``decode_ndjson`` reads a value of ``{…}`` lines in one ``decode_lines`` call per megabyte: the segments
    and rejects (reasons included) are those of the line-by-line reading, whatever the lines hold and
    wherever the value is cut into chunks."""
    import ingest.decode as decode

    data = b"\n".join(lines) + (b"\n" if trailing_newline else b"")
    where = dict(origin="kafka:t/0/1", stream="t/0/h", host="h", ref_ts=1_796_000_000_000_000, ref_basis="kafka",
                 ingest_ts=1_796_000_000_000_001, source="dmesg")
    fast = decode.decode_ndjson(data, **where)
    clean, chunk = decode._clean_records, decode._NDJSON_CHUNK
    try:
        decode._NDJSON_CHUNK = 64  # a value read in many chunks, each cut at a line end
        chunked = decode.decode_ndjson(data, **where)
        decode._clean_records, decode._NDJSON_CHUNK = (lambda clean: None), chunk
        slow = decode.decode_ndjson(data, **where)
    finally:
        decode._clean_records, decode._NDJSON_CHUNK = clean, chunk
    assert fast.segments == slow.segments == chunked.segments
    assert fast.rejects == slow.rejects == chunked.rejects


def test_a_clean_ndjson_value_is_read_in_one_call():
    """The one-call reading is taken for what shippers send (else the property above tests nothing)."""
    from ingest.decode import _clean_body, _clean_records

    def read(value: bytes):
        return _clean_records(_clean_body(value))

    good = _NDJSON_LINES[:3]
    assert len(read(b"\n".join(good) + b"\n")) == 3
    assert read(b"\n".join(good[:1] + [b"{\"x\": 1} {\"y\": 2}"])) is None  # two values on a line
    assert read(b"\n".join([b'{"host": "a", "message":', b'1}'])) is None  # a value over two lines
    assert read(b"\n".join(good[:1] + [b""] + good[1:2])) is None  # a blank line: line by line


def test_a_value_of_bad_records_gives_at_most_a_thousand_rejects_and_keeps_the_rest_whole():
    """A 2 KB zstd value can hold millions of broken records: after ``MAX_REJECTS_PER_VALUE`` rejects the rest
    of the value is one reject that holds it from the next line on (nothing read from it, nothing lost), so
    memory stays bounded; a partition read stops at its byte limit on rejected parts as on text."""
    from types import SimpleNamespace

    from ingest.decode import MAX_REJECTS_PER_VALUE, decode_partition_until

    good = orjson.dumps({"host": "a", "message": XID})
    value = b"\n".join([b'{"message": 5}'] + [b"[1]"] * 699 + [b"{}"] * 800 + [good])
    d = msg(value)
    assert not d.segments and len(d.rejects) == MAX_REJECTS_PER_VALUE + 1
    assert [r.origin.rsplit("#", 1)[1] for r in d.rejects[-2:]] == ["r999", "r1000"]
    assert "not a string" in d.rejects[0].reason and "not an object" in d.rejects[1].reason
    assert "no message field" in d.rejects[999].reason
    tail = d.rejects[-1]
    assert tail.data == b"\n".join([b"{}"] * 500 + [good]) and "records 1000 on: not read" in tail.reason
    bomb = zstandard.ZstdCompressor(level=19).compress(b"{}\n" * 2_000_000)
    assert len(bomb) < 4096
    d = msg(bomb)
    assert len(d.rejects) == MAX_REJECTS_PER_VALUE + 1 and len(d.rejects[-1].data) == 3 * (2_000_000 - 1000)
    recs = [SimpleNamespace(value=bomb, key=b"n1", offset=i, timestamp=1_700_000_000_000, headers=[])
            for i in range(4)]
    out, read, size = decode_partition_until("fleet.dmesg", 0, recs, 1024)
    assert read == 1 and size == 2 * 1000 + 3 * (2_000_000 - 1000) and len(out.rejects) == MAX_REJECTS_PER_VALUE + 1


def test_one_line_records_of_each_key_are_read_as_one_run():
    """A partition of one-line messages (one line per Kafka record, keys interleaved): each key's one-line
    values become one ``Records``; a multi-line value and a ``|`` table row stay segments of their own, JSON is
    read as ``Envelopes``, and every key's lines keep their offset order. Record by record they are
    ``decode_message``'s segments."""
    from types import SimpleNamespace

    from ingest.decode import Envelopes, Records, decode_partition, per_record

    vals = [(b"a", b"[  1.0] one"), (b"b", b"2024-01-01T00:00:00Z two"), (b"a", b"[  2.0] three"),
            (b"a", b"four\n  five"), (b"b", b"| cell | x |"), (b"a", b"[  3.0] six"), (b"b", b'{"message": "m"}'),
            (b"b", b"seven {x}")]
    recs = [SimpleNamespace(value=v, key=k, offset=100 + i, timestamp=1_700_000_000_000 + i, headers=[])
            for i, (k, v) in enumerate(vals)]
    d = decode_partition("fleet.dmesg", 2, recs)
    shapes = [(type(s).__name__, s.data) for s in d.segments]
    assert shapes == [("Records", b"[  1.0] one\n[  2.0] three"), ("Records", b"2024-01-01T00:00:00Z two"),
                      ("Segment", b"four\n  five"), ("Segment", b"| cell | x |"),
                      ("Records", b"[  3.0] six"), ("Envelopes", b"m"), ("Records", b"seven {x}")]
    assert [s.host for s in d.segments if type(s) is not Envelopes] == ["a", "b", "a", "b", "a", "b"]
    # held: every value, but the JSON envelope is held as its message ("m", 15 bytes less)
    assert isinstance(d.segments[0], Records) and d.held_bytes() == sum(len(v) for _, v in vals) - 15
    one = [s for r in recs for s in decode_message(r.value, topic="fleet.dmesg", partition=2, offset=r.offset,
                                                   key=r.key, timestamp_ms=r.timestamp).segments]
    got = per_record(d.segments)
    for key in ("a", "b"):
        assert [s for s in got if s.host == key] == [s for s in one if s.host == key]
    assert [s.origin for s in got if s.host == "a"] == ["kafka:fleet.dmesg/2/100", "kafka:fleet.dmesg/2/102",
                                                       "kafka:fleet.dmesg/2/103", "kafka:fleet.dmesg/2/105"]


def test_runs_count_the_lines_the_records_hold():
    """What stays out of a run (``Records``, ``Envelopes``) so that line counts and framing are those of the
    records one by one: an empty NDJSON message (two of them joined would read as one line end), a value
    ending in ``\\r`` (a CRLF shipper: joined, its ``\\r\\n`` would end the run's text), a ``|`` table row."""
    from types import SimpleNamespace

    from ingest.decode import Envelopes, Records, Segment, decode_partition, per_record
    from ingest.pipeline import Pipeline

    env = b'{"message": "%s", "host": "n1", "timestamp": "2026-11-30T03:12:01.5Z"}'
    cases = {
        "empty messages": [(b"n1", b"\n".join([env % b"a", env % b"", env % b""]))],
        "crlf values": [(b"n1", b"a"), (b"n1", b"b\r"), (b"n2", b"c"), (b"n1", b"\r")],
        "table rows": [(b"n1", b"| GPU 0 | ok |"), (b"n1", b"|       | wrapped |"), (b"n1", b"y")],
    }
    pipe = Pipeline()
    for name, vals in cases.items():
        recs = [SimpleNamespace(value=v, key=k, offset=i, timestamp=1_764_472_321_000 + i, headers=[])
                for i, (k, v) in enumerate(vals)]
        d = decode_partition("fleet.dmesg", 0, recs)
        one = type(d)(per_record(d.segments), d.rejects)
        assert (pipe.run(d).lines, pipe.run(d).bytes) == (pipe.run(one).lines, pipe.run(one).bytes), name
        assert [type(s) for s in d.segments] == {"empty messages": [Envelopes, Segment, Segment],
                                                 "crlf values": [Records, Segment, Records, Segment],
                                                 "table rows": [Segment, Segment, Records]}[name], name
    three = SimpleNamespace(value=b"\n".join([env % b"a", env % b"", env % b""]), key=b"n1", offset=0,
                            timestamp=1_764_472_321_000,
                            headers=[])
    assert pipe.run(decode_partition("fleet.dmesg", 0, [three])).lines == 3


@settings(max_examples=400, deadline=None)
@given(st.datetimes(), st.sampled_from(["", ".", ".5", ".12345", ".123456", ".1234567", ".123456789", ".12a456",
                                        ".१२३४५६"]), st.sampled_from(["Z", "z", "+00:00", ""]))
def test_envelope_times_read_fast_are_parse_iso_us(when, frac, zone):
    """``_rfc3339_us`` (an NDJSON envelope's ``timestamp``, with per-second and µs fast paths) gives what
    ``ingest.prefix.parse_iso_us`` gives for the same text, the second time too (from its caches)."""
    from ingest.decode import _rfc3339_us
    from ingest.prefix import parse_iso_us

    text = when.strftime("%Y-%m-%dT%H:%M:%S") + frac + zone
    assert _rfc3339_us(text) == parse_iso_us(text) == _rfc3339_us(text), text


def test_keys_that_name_one_host_keep_their_lines_in_offset_order():
    """Two keys that are not UTF-8 can name one host (b"\\xff" and b"\\xfe" both read "\\ufffd"): one stream, so a
    context line of one (NCCL_P2P_LEVEL sets the P2P fallback) must come before the later lines of the other.
    Found by an adversarial pass: runs were gathered per key, not per stream."""
    from types import SimpleNamespace

    from ingest.decode import decode_partition
    from ingest.pipeline import Pipeline

    init = b"node01:984:%d [4] NCCL INFO comm 0x557fe785f7a0 rank %d nranks 64 cudaDev 4 nvmlDev 4 busId 9b000 " \
           b"commId 0x5ae77eb5ea4ec1ee - Init COMPLETE"
    p2p = b"node01:5179:5230 [0] NCCL INFO NCCL_P2P_LEVEL set by environment to LOC"
    vals = [(b"\xff", init % (1257, 36)), (b"\xfe", p2p), (b"\xff", init % (1258, 37))]
    recs = [SimpleNamespace(value=v, key=k, offset=i, timestamp=1_764_472_321_000 + i, headers=[])
            for i, (k, v) in enumerate(vals)]
    b = Pipeline().run(decode_partition("fleet.nccl", 0, recs))
    assert sorted((e["origin"], e["kind"]) for e in b.events.to_pylist()) == [
        ("kafka:fleet.nccl/0/0:0", "nccl_init"), ("kafka:fleet.nccl/0/1:0", "nccl_p2p_fallback"),
        ("kafka:fleet.nccl/0/2:0", "nccl_p2p_fallback")]


def test_a_file_that_is_no_log_text_is_skipped_with_why(tmp_path):
    """``diagnose /bin/ls`` read an executable as 509 lines and reported a healthy fleet (a fresh-user trial):
    a file whose first 64 KB hold more than 5 % control characters text does not hold, or that starts with the
    magic number of a systemd journal, an executable, Parquet or SQLite, is a ``not_text`` reject saying so. A log
    with ANSI colours, a zero-filled block (a power loss) and a line of serial noise is still text."""
    import random

    xid = b"[ 12.5] NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus.\n"
    cases = {"node01.journal": b"LPKSHHRH" + bytes(200), "node02.bin": b"\x7fELF\x02\x01\x01" + xid,
             "node03.parquet": b"PAR1" + xid + b"PAR1", "node04.gz": gzip.compress(random.Random(1).randbytes(50_000))}
    for name, data in cases.items():
        (tmp_path / name).write_bytes(data)
        d = decode_file(tmp_path / name, relname=name)
        assert not d.segments and [r.error_code for r in d.rejects] == ["not_text"], name
        assert d.rejects[0].reason.startswith("not log text: "), name
    assert "journalctl --file FILE -o json" in decode_file(tmp_path / "node01.journal", relname="j").rejects[0].reason
    assert "control characters" in decode_file(tmp_path / "node04.gz", relname="g").rejects[0].reason
    log = (b"\x1b[31m" + xid + b"\x1b[0m" + bytes(4096) + b"\x01\x02 serial noise \x03\n" + xid * 20)
    # a break-it pass: terminal captures — tput colours under TERM=screen (ESC [ m SI), a script(1) spinner of
    # backspaces — and a log whose first line starts with PAR1 (a pdsh prefix) are logs, not binary or Parquet
    texts = {"node05.log": log, "node06.log": b"[\x1b[32m OK \x1b[m\x0f] \x1b[1mgpu3\x1b[m\x0f ok\n" * 400 + xid,
             "node07.log": b"\b|\b/\b-\b\\" * 500 + b"\n" + xid * 5, "node08.log": b"PAR1-gpu01: kernel: " + xid}
    for name, data in texts.items():
        (tmp_path / name).write_bytes(data)
        d = decode_file(tmp_path / name, relname=name)
        assert not d.rejects and d.segments and b"Xid" in d.segments[0].data, name
    assert decode_file(tmp_path / "node05.log", relname="node05.log").segments[0].data.count(b"Xid") == 21
    # a burst of binary bytes in a log of text lines (a serial console's capture) keeps the log: the whole file was
    # skipped, its Xid 79 lost (a break-it pass); random bytes with as many newlines stay binary
    noisy = xid + b"kernel: eth0: link up\n" * 200 + random.Random(2).randbytes(20_000) + b"\n" + xid
    (tmp_path / "node09.log").write_bytes(noisy)
    d = decode_file(tmp_path / "node09.log", relname="node09.log")
    assert not d.rejects and d.segments[0].data.count(b"Xid") == 2
    (tmp_path / "node10.bin").write_bytes(random.Random(3).randbytes(60_000))
    # a log whose first 70 KB a crash overwrote with junk: its lines of text are read, the junk said (it was skipped
    # whole and its Xid 79 lost: a break-it pass); random bytes hold no line of text
    (tmp_path / "node11.log").write_bytes(random.Random(4).randbytes(70_000) + b"\n" +
                                          b"kernel: eth0: link up\n" * 100 + xid)
    d = decode_file(tmp_path / "node11.log", relname="node11.log")
    assert d.segments[0].data.count(b"Xid") == 1 and d.segments[0].data.count(b"link up") == 100
    (reject,) = d.rejects
    assert reject.error_code == "not_text" and "; its 101 lines of text read, " in reject.reason, reject.reason
    assert reject.reason.endswith("bytes of binary data skipped"), reject.reason
    assert not decode_file(tmp_path / "node10.bin", relname="node10.bin").segments
    # a tar archive of logs is no log: its members' first lines were glued to their headers (a break-it pass)
    import io
    import tarfile
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        info = tarfile.TarInfo("nodeA.log")
        info.size = len(xid)
        tar.addfile(info, io.BytesIO(xid))
    (tmp_path / "logs.tar").write_bytes(buf.getvalue())
    d = decode_file(tmp_path / "logs.tar", relname="logs.tar")
    assert not d.segments and "a tar archive: unpack it (`tar xf FILE`)" in d.rejects[0].reason
    assert [r.error_code for r in decode_file(tmp_path / "node10.bin", relname="b").rejects] == ["not_text"]
    # a short serial capture: one line of boot noise, then two Xid lines (a second break-it pass: skipped whole)
    short = b"\x1b[0m\x00\xff\xfe" + bytes(range(3, 27)) + b"\n" + xid + xid
    (tmp_path / "node17.log").write_bytes(short)
    d = decode_file(tmp_path / "node17.log", relname="node17.log")
    assert not d.rejects and d.segments[0].data.count(b"Xid") == 2
    (tmp_path / "node11.bin").write_bytes(random.Random(4).randbytes(600) + b"\n" + xid)
    assert [r.error_code for r in decode_file(tmp_path / "node11.bin", relname="b").rejects] == ["not_text"]


def test_messages_that_may_not_join_a_run_are_found_in_the_joined_bytes():
    """``_not_in_run`` (numpy over the joined messages) names what ``_one_line`` refuses, message by message:
    empty, a blank or ``|`` first, ``\\r`` last — first, middle and last — and gives up (``None``) when a message
    holds a line end itself; ``_clean_body`` takes only ``{…}`` records joined by single newlines."""
    from ingest.decode import _clean_body, _not_in_run, _one_line

    cases = [[b"a", b"b"], [b"", b"a"], [b"a", b""], [b" a", b"b", b"|c|", b"d\r", b"e\rf", b"\tg"], [b""],
             [b"a", b"", b"", b"b"], [b"\r"], [b"x|", b"y "]]
    for msgs in cases + [c * 40 for c in cases]:  # a few one by one, many with numpy
        assert _not_in_run(b"\n".join(msgs), len(msgs)) == [j for j, m in enumerate(msgs) if not _one_line(m)], msgs
    assert _not_in_run(b"a\nb", 1) is None and _not_in_run(b"a\nb\n" * 40, 80) is None
    for k in (1, 2000):  # 2000: over 8 KiB, checked with numpy
        assert _clean_body(b'{"a":1}\n{"b":2}\n' * k) == ((b'{"a":1}\n{"b":2}\n' * k)[:-1], 2 * k)
        assert _clean_body(b'{"a":1}\n' * k + b'\n{"b":2}') is None and _clean_body(b'{"a":\n1}' * k) is None
        assert _clean_body(b'{"a":1}\n' * k + b'{"a":1} \n{"b":2}') is None
        assert _clean_body(b'{"a":1}\n' * k + b'{"a":"\xff"}') is None


@pytest.mark.parametrize("element", [b"{}", b'{"message":"NVRM: Xid (PCI:0000:3b:00): 79, x","host":"node07"}'])
def test_a_json_array_value_takes_memory_like_the_same_records_as_ndjson(element):
    """A value that is one JSON array of envelopes is read as the same records in NDJSON would be, at a like
    cost in memory (Python allocations, ``tracemalloc``): each element's re-serialised JSON is let go at once.
    A list of them held ~4 KB an element (orjson's output buffer), so 3 MB of ``[{},{},…]`` took 4.3 GB in a
    running service and 14 – 20 times the NDJSON reading here (a break-it pass)."""
    import tracemalloc

    def peak(value: bytes) -> tuple[int, list, list]:
        tracemalloc.start()
        try:
            d = decode_message(value, topic="fleet.dmesg", partition=0, offset=1, key=b"h",
                               timestamp_ms=1_800_000_000_000)
            return tracemalloc.get_traced_memory()[1], [s.data for s in d.segments], [r.reason for r in d.rejects]
        finally:
            tracemalloc.stop()

    array, array_segments, array_rejects = peak(b"[" + b",".join([element] * 50_000) + b"]")
    ndjson, ndjson_segments, ndjson_rejects = peak(b"\n".join([element] * 50_000))
    assert (array_segments, array_rejects) == (ndjson_segments, ndjson_rejects)
    assert len(array_segments) + len(array_rejects) >= 1001
    assert array <= 4 * ndjson, (array, ndjson)


@pytest.mark.parametrize("host,why", [(12345, "a number"), (True, "a boolean"), (["a", "b"], "an array")])
def test_an_envelope_host_of_the_wrong_type_is_a_bad_envelope(host, why):
    """A number, boolean or list as the envelope's host (a shipper's mapping gone wrong) was stored under the
    Kafka key's host, saying nothing, where a wrong-typed message or time is a ``bad_envelope`` reject (a break-it
    pass); an empty or null host, or an ECS host object without a name, still gives way to the key."""
    value = orjson.dumps({"host": host, "timestamp": "2026-11-30T03:12:00Z", "message": XID})
    d = msg(value)
    assert not d.segments and [(r.error_code, r.reason) for r in d.rejects] == [
        ("bad_envelope", f"NDJSON record 0: field 'host' is {why}, not a host name")]
    for usable in ("", None, {"ip": "10.0.0.7"}):
        (seg,) = msg(orjson.dumps({"host": usable, "timestamp": "2026-11-30T03:12:00Z", "message": XID})).segments
        assert seg.host == "node09"


def test_a_json_array_with_values_that_are_no_objects_gives_its_objects_and_a_reject_per_other_value():
    """``[1, "x", null, {envelope}]`` was one line of text under the Kafka key's host, its envelope unread and
    the other elements saying nothing (a break-it pass): each element that is no object is a ``bad_envelope``
    reject, the envelope an event of its own host, on either decoding path; a raw dmesg line that ends in ``]``
    is text as before."""
    from types import SimpleNamespace

    from ingest.decode import decode_partition

    env = {"host": "nodeArr", "timestamp": "2026-11-30T03:12:00Z", "message": XID}
    value = orjson.dumps([1, "x", None, env])
    raw = b"[  12.345678] pcieport 0000:00:01.0: {bad} state [x]"
    for d in (msg(value), decode_partition("fleet.dmesg", 2, [SimpleNamespace(value=v, key=b"node09", offset=41 + i,
              timestamp=1_700_000_000_000, headers=()) for i, v in enumerate([value, raw])])):
        segs = [s for s in d.segments if s.host == "nodeArr"]
        assert [(s.origin, s.data) for s in segs] == [("kafka:fleet.dmesg/2/41#r3", XID.encode())]
        assert [(r.origin, r.error_code) for r in d.rejects] == [
            (f"kafka:fleet.dmesg/2/41#r{i}", "bad_envelope") for i in range(3)]
    assert [s.data for s in d.segments if s.host == "node09"] == [raw]


def test_a_file_past_the_size_limit_gives_its_first_lines_and_says_the_rest_is_not_read(tmp_path):
    """A 1.15 GB log with an Xid 79 on its first line was skipped whole ("exceeds 1073741824"), and so was a 3.9 MB
    gzip of it (a break-it pass): the whole lines of its first ``max_bytes`` are read, plain or decompressed, and a
    ``too_large`` / ``bad_compression`` reject says how many and that the rest is not read."""
    line = (XID + "\n").encode()
    plain = tmp_path / "node07.log"
    plain.write_bytes(line * 100)
    d = decode_file(plain, relname=plain.name, max_bytes=len(line) * 10 + 5)
    assert [s.data for s in d.segments] == [line * 10]
    [r] = d.rejects
    assert r.error_code == "too_large" and r.reason.startswith(
        f"file of {len(line) * 100} bytes exceeds {len(line) * 10 + 5}: read its first 10 lines")
    gz = tmp_path / "node08.log.gz"
    gz.write_bytes(gzip.compress(line * 100))
    d = decode_file(gz, relname=gz.name, max_bytes=len(line) * 10 + 5)
    assert [s.data for s in d.segments] == [line * 10]
    [r] = d.rejects
    assert r.error_code == "bad_compression" and "decompressed size exceeds" in r.reason and \
        "read its first 10 lines" in r.reason
    # one line longer than the limit: nothing to read, said
    [r] = decode_file(plain, relname=plain.name, max_bytes=10).rejects
    assert r.error_code == "too_large" and "holds no line end" in r.reason


@settings(max_examples=150, deadline=None)
@given(name=st.one_of(st.sampled_from(["Replay Errors", "Data Tx", "Foo", "Ünicode Errors", "Link5", "A\tB",
                                       "Errors GB/s x", "X Link 3", "Replay Errors ", " CRC Errors", "CRC  Errors",
                                       "x" * 65]),
                      st.text(alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=20)))
def test_a_poller_counter_is_stored_under_its_name_or_refused_naming_it(name):
    """A counter name the sample schema accepted but the counter signature could not read ("Link5", "Errors GB/s x",
    "Ünicode Errors", a tab) was neither stored nor dead-lettered, and "Replay Errors " became a series of its own
    (a break-it pass). Every name either comes back as the ``counter`` of its link sample, as sent, or the record
    is a ``bad_envelope`` dead letter that names it."""
    rec = {"format": "firstfault.link_sample/1", "host": "node07", "timestamp": "2026-11-30T03:12:01Z",
           "gpu_index": 0, "links": [{"link": 0, "state": "inactive", "counters": {name: 5}}]}
    d = decode_message(orjson.dumps(rec), topic="fleet.nvml", partition=0, offset=1, key=None,
                       timestamp_ms=1_796_000_000_000)
    if d.rejects:
        [r] = d.rejects
        assert r.error_code == "bad_envelope" and "counter name" in r.reason, r.reason
        return
    rows = [(r["counter"], r["value"]) for r in _pipeline().run(d).link_samples.to_pylist() if r["counter"]]
    assert rows == [(name, 5.0)]


@pytest.mark.parametrize("value, stored", [(True, None), ("7", None), (1.5, None), (7, 7.0), (7.0, 7.0),
                                           (2**64 - 1, "left out"), (1.8446744073709552e19, "left out"),
                                           (-1, "left out"), (-7, None)])
def test_a_poller_counter_is_a_json_number(value, stored):
    """``true`` and ``"7"`` were read as counts 1 and 7: rises the degraded-link report counted on a link no poller
    saw (a break-it pass on the service path); they are a ``bad_envelope`` dead letter naming the counter. NVML's
    unsigned -1 (no value) dead-lettered the GPU's whole sample, every link's: that counter alone is left out."""
    rec = {"format": "firstfault.link_sample/1", "host": "node07", "timestamp": "2026-11-30T03:12:01Z",
           "gpu_index": 0, "links": [{"link": 0, "state": "inactive", "counters": {"CRC Errors": value}},
                                     {"link": 1, "state": "inactive", "counters": {"Replay Errors": 2}}]}
    d = decode_message(orjson.dumps(rec), topic="fleet.nvml", partition=0, offset=1, key=None,
                       timestamp_ms=1_796_000_000_000)
    if stored is None:
        [r] = d.rejects
        assert r.error_code == "bad_envelope" and "CRC Errors" in r.reason, r.reason
        return
    assert not d.rejects
    rows = {(r["link"], r["counter"]): r["value"] for r in _pipeline().run(d).link_samples.to_pylist() if r["counter"]}
    want = {(1, "Replay Errors"): 2.0} | ({} if stored == "left out" else {(0, "CRC Errors"): stored})
    assert rows == want


@functools.cache
def _pipeline():
    """One ``Pipeline`` for a hypothesis test's examples (a fixture is not reset between them)."""
    from ingest.pipeline import Pipeline

    return Pipeline()


def test_a_vector_pod_record_without_a_host_names_its_node_read_column_by_column():
    """Vector's kubernetes_logs records with ``"host": ""`` name the pod's node in ``kubernetes.pod_node_name``: read
    record by record they were that node's, read column by column (the Kafka worker's path for a megabyte of
    Vector's shape) the Kafka key's (a second break-it pass). Both read it now; a wrong type there is refused as
    record by record."""
    rec = {"host": "", "timestamp": "2026-11-30T03:12:00Z", "message": XID, "kubernetes": {"pod_node_name": "node7"}}
    value = b"\n".join(orjson.dumps(rec) for _ in range(300))
    for columnar in (True, False):
        d = decode_ndjson(value, origin="kafka:t/0/1", stream="kafka:t/0", host="keyhost", ref_ts=1, ref_basis="kafka",
                          ingest_ts=1, source=None, runs=True, columnar=columnar)
        assert not d.rejects and {h for s in d.segments for h in s.hosts} == {"node7"}, columnar
    bad = orjson.dumps({**rec, "kubernetes": {"pod_node_name": 5}})
    d = decode_ndjson(b"\n".join([value, bad]), origin="kafka:t/0/1", stream="kafka:t/0", host="keyhost", ref_ts=1,
                      ref_basis="kafka", ingest_ts=1, source=None, runs=True)
    [r] = d.rejects
    assert "field 'kubernetes.pod_node_name' is a number, not a host name" in r.reason


def test_a_pods_nccl_lines_are_its_nodes(pipeline):
    """Inside a pod NCCL's host name is the pod's (``job-a7de-master-0:617:2799 [3] … NCCL WARN Cuda failure 999``,
    scitix/sichek#44's form): its node's Xid 79 two seconds before was another host's, two incidents (a real-logs
    pass). The records' Kubernetes metadata place the pod on its node (``Decoded.pod_nodes``), in Vector's
    kubernetes_logs form, read column by column or record by record, and in Filebeat's; the pod stays in
    ``details.pod``. A pod of no record's metadata keeps its name."""
    from correlate.correlator import correlate

    node = {"host": "gpu-node-07", "timestamp": "2024-04-05T21:29:39.559615Z", "source_type": "journald",
            "message": "NVRM: Xid (PCI:0000:a1:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus."}
    line = "job-a7de-master-0:617:2799 [3] include/alloc.h:112 NCCL WARN Cuda failure 999 'unknown error'"
    vector = {"host": "", "timestamp": "2024-04-05T21:29:41.963223476Z", "source_type": "kubernetes_logs",
              "message": line, "kubernetes": {"pod_name": "job-a7de-master-0", "pod_node_name": "gpu-node-07"}}
    filebeat = {"@timestamp": "2024-04-05T21:29:41.963Z", "message": line,
                "kubernetes": {"pod": {"name": "job-a7de-master-0"}, "node": {"name": "gpu-node-07"}}}
    for pod, columnar in ((vector, True), (vector, False), (filebeat, True)):
        value = b"\n".join(orjson.dumps(r) for r in (node, pod))
        d = decode_ndjson(value, origin="file:k8s.ndjson", stream="file:k8s.ndjson", host="k8s", ref_ts=1,
                          ref_basis="file", ingest_ts=1, source=None, runs=True, columnar=columnar)
        assert d.pod_nodes == {"job-a7de-master-0": "gpu-node-07"}, (pod, columnar)
        b = pipeline.run(d)
        got = [(e["host"], orjson.loads(e["details"]).get("pod")) for e in b.events.to_pylist()]
        assert got == [("gpu-node-07", None), ("gpu-node-07", "job-a7de-master-0")], got
        (inc,) = correlate(b.events, b.link_samples, b.topology, now_us=1_800_000_000_000_000)
        assert (inc["initiator"]["xid"], [p["host"] for p in inc["downstream"]]) == (79, ["gpu-node-07"])
    alone = decode_ndjson(orjson.dumps({**vector, "kubernetes": {"pod_node_name": "gpu-node-07"}}),
                          origin="file:k.ndjson", stream="file:k.ndjson", host="k", ref_ts=1, ref_basis="file",
                          ingest_ts=1, source=None, runs=True)
    assert [e["host"] for e in pipeline.run(alone).events.to_pylist()] == ["job-a7de-master-0"]


def test_a_pods_node_is_its_own_records_and_no_kernel_line_is_a_pods(pipeline):
    """Break-it pass on the pod -> node mapping: a pod recreated under its name on another node (its last record names
    gpu-node-b) moved its fault on gpu-node-a to the healthy node — a line takes its own record's node; a node name
    that is no host name was spread to the pod's other records, which were refused with it; a pod named like a host
    moved that host's kernel lines; an Indexed Job's pod (name comm-demo-0-mrvlp) prints its host name comm-demo-0;
    a cloud export's fields make a record be read record by record (column by column they were lost)."""
    xid = "NVRM: Xid (PCI:0000:a1:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus."

    def hosts(*records, columnar=True):
        value = b"\n".join(orjson.dumps(r) for r in records)
        d = decode_ndjson(value, origin="file:k.ndjson", stream="file:k.ndjson", host="k", ref_ts=1,
                          ref_basis="file", ingest_ts=1, source=None, runs=True, columnar=columnar)
        return [(e["host"], e["signature"]) for e in pipeline.run(d).events.to_pylist()], d

    def pod(name, node, line, t="2024-04-05T21:29:41Z"):
        return {"host": "", "timestamp": t, "message": line,
                "kubernetes": {"pod_name": name, "pod_node_name": node}}

    cuda = "{}:617:2799 [3] include/alloc.h:112 NCCL WARN Cuda failure 999 'unknown error'"
    bootstrap = "{}:700:700 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.9<0>"
    got, _ = hosts({"host": "gpu-node-a", "timestamp": "2024-04-05T21:29:39Z", "message": xid},
                   pod("trainer-0", "gpu-node-a", cuda.format("trainer-0")),
                   pod("trainer-0", "gpu-node-b", bootstrap.format("trainer-0"), "2024-04-05T21:50:00Z"))
    assert got[:2] == [("gpu-node-a", "xid"), ("gpu-node-a", "nccl.cuda_failure")], got
    got, d = hosts(pod("job-0", "nodeA", cuda.format("job-0")), pod("job-0", "nodeA ", "some other line"))
    assert d.pod_nodes == {"job-0": "nodeA"} and got == [("nodea", "nccl.cuda_failure")], got  # hosts are lower case
    for columnar in (True, False):
        got, _ = hosts({"host": "node05", "timestamp": "2024-04-05T21:29:39Z", "message": xid},
                       pod("node05", "gpu-node-9", "hello", "2024-04-05T22:00:00Z"), columnar=columnar)
        assert got == [("node05", "xid")], got
    got, d = hosts(pod("comm-demo-0-mrvlp", "gpu-node-07", cuda.format("comm-demo-0")))
    assert got == [("gpu-node-07", "nccl.cuda_failure")] and d.pod_nodes["comm-demo-0"] == "gpu-node-07", got
    cloud = [{"message": xid, "timestamp": "2024-04-05T21:29:39Z", "host": "", "Computer": "azn1"},
             {"message": cuda.format("job-1"), "timestamp": "2024-04-05T21:29:41Z", "host": "",
              "resource": {"labels": {"pod_name": "job-1"}},
              "labels": {"compute.googleapis.com/resource_name": "gke-n1"}}]
    assert hosts(*cloud, columnar=True)[0] == hosts(*cloud, columnar=False)[0] == [
        ("azn1", "xid"), ("gke-n1", "nccl.cuda_failure")]
    gke = {"jsonPayload": {"MESSAGE": xid, "_HOSTNAME": "localhost"},
           "resource": {"type": "k8s_node", "labels": {"node_name": "gke-n1"}}, "timestamp": "2024-04-05T21:29:39Z"}
    assert hosts(gke)[0] == [("gke-n1", "xid")]


def test_cloud_logging_exports_give_their_lines_hosts_and_times(pipeline):
    """A Google Cloud Logging or Azure Monitor export names its fields otherwise: "no message field", the file skipped
    and its Xid 79 lost (a real-logs pass). Google's LogEntry (``textPayload``; GKE's node journal as ``jsonPayload``
    with ``MESSAGE`` and ``_HOSTNAME``; a container's entry with its node in ``labels`` and its pod in
    ``resource.labels``), as NDJSON or as ``gcloud logging read --format=json``'s array, and Azure's Syslog table
    (``SyslogMessage``, ``Computer``, ``TimeGenerated``) give the line, its host and its time."""
    xid = "NVRM: Xid (PCI:0000:a1:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus."
    node = {"insertId": "def", "jsonPayload": {"MESSAGE": xid, "_HOSTNAME": "gke-c1-pool-1-abcd",
                                               "SYSLOG_IDENTIFIER": "kernel"},
            "resource": {"type": "k8s_node", "labels": {"node_name": "gke-c1-pool-1-abcd"}},
            "timestamp": "2024-04-05T21:29:39.559615Z", "logName": "projects/p/logs/kubelet"}
    pod = {"textPayload": "job-a7de-master-0:617:2799 [3] include/alloc.h:112 NCCL WARN Cuda failure 999 'unknown "
                          "error'",
           "resource": {"type": "k8s_container", "labels": {"pod_name": "job-a7de-master-0"}},
           "labels": {"compute.googleapis.com/resource_name": "gke-c1-pool-1-abcd"},
           "timestamp": "2024-04-05T21:29:41.963223476Z"}
    azure = {"TimeGenerated": "2024-04-05T21:29:39.559Z", "Computer": "node1", "Facility": "kern",
             "SyslogMessage": xid}
    as_ndjson = b"\n".join(orjson.dumps(r) for r in (node, pod, azure))
    for data in (as_ndjson, orjson.dumps([node, pod, azure], option=orjson.OPT_INDENT_2)):
        d = decode_message(data, topic="t", partition=0, offset=1, key=None, timestamp_ms=1)
        assert not d.rejects, d.rejects
        got = [(e["host"], e["signature"], e["ts"].isoformat(), e["ts_basis"])
               for e in pipeline.run(d).events.to_pylist()]
        assert got == [("gke-c1-pool-1-abcd", "xid", "2024-04-05T21:29:39.559615+00:00", "envelope"),
                       ("gke-c1-pool-1-abcd", "nccl.cuda_failure", "2024-04-05T21:29:41.963223+00:00", "envelope"),
                       ("node1", "xid", "2024-04-05T21:29:39.559000+00:00", "envelope")], got


def test_a_log_whose_first_line_is_a_programs_json_is_text():
    """A training log that prints its config or metrics as JSON first, then text: it was read as NDJSON whole, its
    Xid line a broken record, the file skipped or the Kafka value dead-lettered whole (a break-it pass). Records
    that all open as objects stay NDJSON, a broken one among them a reject."""
    from ingest.decode import decode_message, looks_ndjson

    text = (b'{"loss": 1.25, "step": 100}\n'
            b"2026-11-30T03:10:00.123456Z node07 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=0, GPU has fallen off "
            b"the bus.\n")
    assert not looks_ndjson(text)
    d = decode_message(text, topic="t", partition=0, offset=1, key=b"node07", timestamp_ms=1)
    assert [s.data for s in d.segments] == [text] and d.rejects == []
    records = b'{"message": "a", "host": "n1"}\n\n  {"message": "b", "host": "n1"}\n{"message": "c\n'
    assert looks_ndjson(records)
    d = decode_message(records, topic="t", partition=0, offset=1, key=b"node07", timestamp_ms=1)
    assert [s.data for s in d.segments] == [b"a", b"b"] and len(d.rejects) == 1


@pytest.mark.parametrize("first", [
    b'026-02-02T22:52:40Z", "message": "NVRM: Xid (PCI:0000:4c:00): 79, pid=123, GPU has fallen off the bus."}',
    b"some banner line", b"null", b"42", b"[1]"])
def test_envelopes_after_a_first_line_that_is_no_record_stay_envelopes(tmp_path, first):
    """A file whose first record was cut (``tail -c``, a copy begun mid-record), or that opens with a banner or a
    JSON value that is no object: its envelopes were read as text of one host named after the file, each at the
    file's time (a break-it pass). The records keep their hosts and times; a record's cut end is a reject, not an
    Xid of the file's host."""
    rec = '{{"host": "{h}", "timestamp": "2026-02-02T22:52:{s}Z", "message": "NVRM: Xid (PCI:0000:4c:00): 79, ' \
          'pid=123, GPU has fallen off the bus."}}'
    f = tmp_path / "cut.ndjson"
    f.write_bytes(b"\n".join([first, rec.format(h="g2", s=45).encode(), rec.format(h="g3", s=50).encode()]) + b"\n")
    d = decode_file(f, relname=f.name)
    hosts = [(s.host, s.ref_basis) for s in d.segments if b"Xid" in s.data]
    assert hosts == [("g2", "envelope"), ("g3", "envelope")], hosts
    reasons = [r.reason for r in d.rejects]
    if first.endswith(b"}"):
        assert reasons == ["NDJSON record 0: the end of a record whose start is missing (the file begins or was cut "
                           "inside it)"], reasons
    elif first == b"some banner line":
        assert reasons == [], reasons  # text, read as text
    else:  # JSON that is no object: a bad record, as among records
        assert len(reasons) == 1 and "record is not an object" in reasons[0], reasons
    # text before a line that merely opens like a record, or before text, stays text
    f.write_bytes(b"banner\n" + rec.format(h="g2", s=45).encode() + b"\nplain text line\n")
    assert [s.host for s in decode_file(f, relname=f.name).segments] == ["cut"]


def test_only_a_files_first_line_is_read_as_a_records_cut_end(tmp_path):
    """A second break-it pass: the cut-record reject took fluentd's out_stdout line ("… kern.node07: {…}") among
    records for one, its Xid 79 lost; Docker's json-file tail (its message key first: ``…","stream":"stderr",
    "time":"…"}``) and a cut first line past 8 kB were still text of the file's host."""
    xid = "NVRM: Xid (PCI:0000:4c:00): 79, pid=1, GPU has fallen off the bus."
    rec = lambda h: orjson.dumps({"host": h, "timestamp": "2025-10-02T12:00:00Z", "message": xid})
    f = tmp_path / "fluentd-0.log"
    f.write_bytes(rec("a") + b"\n" + rec("b") + b"\n2025-10-02 12:00:05.123456789 +0000 kern.node07: "
                  + orjson.dumps({"host": "node07", "message": xid}) + b"\n")
    d = decode_file(f, relname=f.name)
    assert d.rejects == [] and sum(s.data.count(b"Xid") for s in d.segments) == 3, d
    # the same line first: a whole "{…}" after text is text, not a record's cut end (a third break-it pass)
    out_stdout = b"2025-10-02 12:00:05.123456789 +0000 kern.node07: " + orjson.dumps({"host": "node07", "message": xid})
    f.write_bytes(out_stdout + b"\n" + rec("a") + b"\n" + rec("b") + b"\n")
    d = decode_file(f, relname=f.name)
    assert d.rejects == [] and sum(s.data.count(b"Xid") for s in d.segments) == 3, d
    docker = lambda: orjson.dumps({"log": xid + "\n", "stream": "stderr", "time": "2025-10-02T11:00:00.000000000Z"})
    f = tmp_path / "node07.json"
    f.write_bytes(xid.encode() + b'\\n","stream":"stderr","time":"2025-10-02T11:00:00.000000000Z"}\n'
                  + docker() + b"\n" + docker() + b"\n")
    d = decode_file(f, relname=f.name)
    assert len(d.rejects) == 1 and sum(s.data.count(b"Xid") for s in d.segments) == 2, d
    f = tmp_path / "fleet.ndjson"
    f.write_bytes(b"x" * 9000 + b'", "message": "' + xid.encode() + b'"}\n' + rec("nodea") + b"\n" + rec("nodeb"))
    d = decode_file(f, relname=f.name)
    assert [s.host for s in d.segments] == ["nodea", "nodeb"] and len(d.rejects) == 1, d

def test_text_lines_among_ndjson_records_are_read_as_text():
    """A crash's lines after a program's JSON records, a comment among a shipper's envelopes, an Xid after nine
    metrics lines: they were rejects ("record is not an object"), the Xid and NCCL errors lost, or the comment
    turned the envelopes into text, their hosts lost (a break-it pass). A line that opens as an object and is
    broken stays a reject."""
    from ingest.decode import decode_message

    xid = b"[Fri Dec  4 10:00:00 2026] NVRM: Xid (PCI:0000:1a:00): 79, pid=1234, GPU has fallen off the bus."
    env = b'{"message": "a", "host": "node07", "timestamp": "2026-12-04T10:00:00Z"}'
    metrics = [b'{"step": %d, "loss": 1.2}' % i for i in range(9)]
    d = decode_message(b"\n".join([*metrics, xid, xid]), topic="t", partition=0, offset=1, key=b"n1",
                       timestamp_ms=1)
    assert [(s.data, s.line_base) for s in d.segments] == [(xid + b"\n" + xid, 9)] and len(d.rejects) == 9
    d = decode_message(b"\n".join([env, b"# exported by vector", env, b'{"message": "c']), topic="t", partition=0,
                       offset=1, key=b"n1", timestamp_ms=1)
    # a text line is its record's writer's: the host and time of the record before it
    assert [(s.data, s.host, s.ref_ts) for s in d.segments] == [
        (b"a", "node07", 1796378400000000), (b"# exported by vector", "node07", 1796378400000000),
        (b"a", "node07", 1796378400000000)]
    assert [r.origin.rsplit("#", 1)[1] for r in d.rejects] == ["r3"]


def test_an_envelopes_placeholder_host_names_no_host():
    """Two machines' envelopes each saying host "localhost" were one host (a break-it pass): the Kafka key names it,
    as for a syslog header's "localhost"; a real name still wins over the key."""
    from ingest.decode import decode_message

    for h, want in (("localhost", "node07"), ("127.0.0.1", "node07"), ("node09", "node09")):
        value = orjson.dumps({"message": "NVRM: Xid (PCI:0000:1a:00): 79", "host": h})
        d = decode_message(value, topic="t", partition=0, offset=1, key=b"node07", timestamp_ms=1)
        assert [s.host for s in d.segments] == [want], h


OWN = "not log text: firstfault's own output (diagnose's, the API's, `sql`'s or a page of it): diagnose the logs it " \
      "was made from"


def test_diagnoses_own_output_saved_beside_the_logs_is_no_log(tmp_path):
    """``diagnose logs/ -f json > logs/diag.json`` then ``diagnose logs/``: its quoted lines were a second host's
    faults, and the same GPU's fault "recurred" (a real-logs pass). Its JSON and its table are skipped, and said."""
    from api.diagnose import diagnose_paths
    from ingest.decode import known_format
    from schemas.settings import Settings

    log = tmp_path / "node04.log"
    log.write_text("[  12.5] NVRM: Xid (PCI:0000:3b:00): 79, pid=0, GPU has fallen off the bus.\n")
    _, batch, incidents = diagnose_paths([log], Settings())
    (tmp_path / "diag.json").write_bytes(orjson.dumps({"events": batch.events.to_pylist(), "incidents": incidents},
                                                      option=orjson.OPT_INDENT_2, default=str))
    (tmp_path / "diag.txt").write_text("Incidents\n\u250f━━━┓\n┃ start ┃\n")
    decoded, again, _ = diagnose_paths([tmp_path], Settings())
    assert sorted(r.reason for r in decoded.rejects) == [
        OWN] * 2
    assert again.events.num_rows == batch.events.num_rows == 1
    assert known_format(b'{"host": "node04", "message": "x"}') is None and known_format(b"Incidents: none\n") is None
    # another tool's {"events": [ (aws logs get-log-events) is a log; ours after stderr's lines (2>&1) is ours (a
    # second break-it pass)
    assert known_format(b'{\n    "events": [\n        {"timestamp": 1, "message": "NVRM: Xid"}]}') is None
    ours = (tmp_path / "diag.json").read_bytes()
    assert known_format(b"1 line \xe2\x86\x92 1 event\n" + ours) is not None
    # ... as PowerShell's `>` writes it (UTF-16), or its incidents alone (`jq '{incidents}'`): ours too (a third
    # break-it pass); a table 7 KB into a job's log is no output of ours: the log is read (a fourth)
    table = "Incidents\n\u250f━━━┓\n┃ start ┃\n"
    assert known_format("\ufeff".encode("utf-16-le") + table.encode("utf-16-le")) is not None
    assert known_format(b"health check ok\n" * 500 + table.encode()) is None
    assert known_format(orjson.dumps({"incidents": incidents}, option=orjson.OPT_INDENT_2)) is not None
    # its table titled with its counts, as diagnose titles it now (as the demo's: a fresh user's trial), and the
    # demo's and `run --once`'s; a log line that says as much over no table is a log
    for title in ("20 incidents (11 open, 9 resolved)", "1 incident (1 open)", "caught up: 3 incidents (3 resolved)"):
        assert known_format(f"{title}\n\u250f━━━┓\n┃ start ┃\n".encode()) is not None, title
        assert known_format(f"{title}\nnext line\n".encode()) is None, title
    # ... and saved with colour (FORCE_COLOR=1 … > file): its title set in SGR codes and padded to the table's width
    # (a phantom host's incident: a fifth break-it pass)
    colour = "\x1b[3m20 incidents (11 open, 9 resolved)" + " " * 120 + "\x1b[0m\n\u250f━━━┓\n┃ start ┃\n"
    assert known_format(colour.encode()) is not None
    assert known_format(colour.replace("\u250f", "+").encode()) is None


def test_firstfaults_api_sql_and_page_exports_saved_beside_the_logs_are_no_log(tmp_path):
    """An on-call engineer's job folder after the README's workflow: ``curl …/incidents/inc-… > incident.json`` was
    read as a log line (a phantom host ``incident`` with an SXid event), the incident's page saved as ``inc.html``
    as ten events of a phantom host ``inc`` and an incident of its own, and ``firstfault sql -f json|csv "SELECT *
    FROM events"`` as the events again (a fresh user's trial). Each of firstfault's exports is skipped and said; the
    logs beside them give what they gave alone."""
    from api.diagnose import diagnose_paths
    from api.incident_render import to_html
    from ingest.decode import known_format
    from schemas.settings import Settings

    log = tmp_path / "node04.log"
    log.write_text("[  12.5] NVRM: Xid (PCI:0000:3b:00): 79, pid=0, GPU has fallen off the bus.\n")
    _, batch, incidents = diagnose_paths([log], Settings())
    events = orjson.loads(orjson.dumps(batch.events.to_pylist(), default=str))
    api_incident = orjson.loads(orjson.dumps(incidents[0], default=str)) | {"timeline": events}
    (tmp_path / "incident.json").write_bytes(orjson.dumps(api_incident))  # as the API answers it: compact
    (tmp_path / "incidents.json").write_bytes(orjson.dumps({"items": [incidents[0]], "next_cursor": None},
                                                           default=str))
    (tmp_path / "inc.html").write_bytes(to_html(api_incident))
    (tmp_path / "events.ndjson").write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in events))
    header = ",".join(f'"{k}"' for k in events[0])
    (tmp_path / "events.csv").write_text(header + "\n" + ",".join(f'"{v}"' for v in events[0].values()) + "\n")
    decoded, again, found = diagnose_paths([tmp_path], Settings())
    assert sorted(r.reason for r in decoded.rejects) == [OWN] * 5
    assert again.events.column("host").to_pylist() == batch.events.column("host").to_pylist() == ["node04"]
    assert [i["initiator"]["host"] for i in found] == ["node04"]
    # an incident page saved before its frame said its generator: its title says firstfault
    old_page = to_html(api_incident).replace(b'<meta name="generator" content="firstfault">\n', b"")
    assert b"generator" not in old_page and known_format(old_page) == OWN
    # a log that quotes one of our keys, or a shipper's CSV with an event id, is a log
    assert known_format(b'{"message": "NVRM: Xid 79", "event_id": "42"}\n') is None
    assert known_format(b'"time","event_id","message"\n"1","2","NVRM: Xid 79"\n') is None


def test_a_files_json_line_that_is_no_log_record_is_read_as_text(tmp_path, pipeline):
    """ollama/ollama#4226: the API's error body, one JSON line in a client's log, said "CUDA error: uncorrectable ECC
    error encountered" and had no message field: skipped ("read in part"), no event. A file's JSON object that names
    none of an envelope's message fields is the text it is; its neighbours stay records. A Kafka value of such records
    is still dead-lettered (a shipper's mistake, kept with its reason)."""
    body = {"error": {"message": "timed out waiting for llama runner to start: CUDA error: uncorrectable ECC error "
                                 "encountered\n  current device: 0", "type": "api_error", "param": None}}
    rec = orjson.dumps({"host": "node07", "timestamp": "2024-05-07T10:00:00Z", "message": XID})
    f = tmp_path / "client.log"
    f.write_bytes(b"\n".join([rec, orjson.dumps(body), rec.replace(b"10:00:00", b"10:00:09")]) + b"\n")
    d = decode_file(f, relname="client.log")
    assert not d.rejects and len(d.segments) == 3
    assert d.segments[1].data == orjson.dumps(body) and d.segments[1].host == "node07"  # the records' writer's
    got = sorted((e["signature"], e["count"]) for e in pipeline.run(d).events.to_pylist())
    assert got == [("cuda.ecc_uncorrectable", 1), ("xid", 2)], got  # the two Xid records: one storm of two
    k = decode_message(b"\n".join([rec, orjson.dumps(body)]), topic="t", partition=0, offset=1, key=None,
                       timestamp_ms=1)
    assert len(k.segments) == 1 and [r.reason for r in k.rejects] == [
        "NDJSON record 1: no message field (MESSAGE, message, log, msg, textPayload, SyslogMessage, jsonPayload's "
        "MESSAGE or message, or a string event beside a string level as structlog writes)"]


def test_a_run_framing_left_as_it_was_is_left_so_again_and_a_joined_one_is_joined_again():
    """``ingest.frame`` remembers the runs of candidate lines its rules left unchanged (``_PASSING``) and skips them
    when they come again; a run the rules changed is never remembered. The same segment framed twice, the second
    time from the memo, gives the same logical lines, first lines and originals."""
    from ingest import frame as fr

    fr._PASSING.clear()
    tb = b"Traceback (most recent call last):\n  File \"train.py\", line 3, in <module>\n    main()"
    dmesg = b"[  1843.308145] NVRM: Xid 79, GPU has fallen\n                NVRM: off the bus."
    data = b"\n".join([b"start", tb, b"x", dmesg, b"y", tb, b"end"])
    first = fr.frame_all([data, tb, data])
    assert tb in fr._PASSING  # the traceback's run: its line before, then its indented lines
    assert not any(b"off the bus" in p for p in fr._PASSING)  # joined: not remembered
    again = fr.frame_all([data, tb, data])
    assert first[0] == again[0] and (first[2] == again[2]).all()
    assert {k: (v.scan, v.first_line, v.original) for k, v in first[1].items()} == \
        {k: (v.scan, v.first_line, v.original) for k, v in again[1].items()}
    assert first[1][0].original == {5: dmesg.decode()} and first[1][0].first_line[5:] == [5, 7, 8, 9, 10, 11]


def test_nvsentinel_health_events_are_read_from_its_modules_json_records(tmp_path, pipeline):
    """NVSentinel's modules log slog JSON records whose ``msg`` names the step ("Health events received",
    "Attempting to send health event") and whose nested HealthEvents hold the fault: DCGM's "Detected XID 145 for
    GPU 0" (NVIDIA/NVSentinel#1357) or the kernel's Xid line the syslog monitor read (NVIDIA/NVSentinel#288), the GPU
    in ``entitiesImpacted`` and the node in ``nodeName``. Read by ``msg`` alone they gave no event (a real-logs pass).
    A healthy event ("No Health Failures", NVIDIA/NVSentinel#1475) and a logger record without health events stay
    quiet; the records read record by record or in one clean call give the same."""
    dcgm = {"time": "2026-06-02T19:47:38.025768133Z", "level": "INFO", "msg": "Health events received",
            "module": "platform-connectors", "events": {"version": 1, "events": [
                {"version": 1, "agent": "preflight-dcgm-diag", "componentClass": "GPU",
                 "checkName": "DcgmDiagnosticMemory", "isFatal": True,
                 "message": "Detected XID 145 for GPU 0 Please consult the documentation for details of this XID.",
                 "errorCode": ["DCGM_FR_XID_ERROR"],
                 "entitiesImpacted": [{"entityType": "GPU_UUID",
                                       "entityValue": "GPU-95d4eaef-812a-5157-fec0-7d64667313dc"}],
                 "nodeName": "node-b"}]}}
    syslog = {"time": "2025-11-07T05:38:55.554629925Z", "level": "INFO", "msg": "Attempting to send health event",
              "module": "syslog-health-monitor", "events": {"version": 1, "events": [
                  {"version": 1, "agent": "syslog-health-monitor", "componentClass": "GPU",
                   "checkName": "SysLogsXIDError", "isFatal": True,
                   "message": "MESSAGE=kernel: [16450076.463693] NVRM: Xid (PCI:0002:00:00): 45, pid=2864945, "
                              "name=kit, Ch 0000000e", "errorCode": ["45"],
                   "entitiesImpacted": [{"entityType": "PCI", "entityValue": "0002:00:00"}],
                   "nodeName": "node-c"}]}}
    healthy = {"time": "2026-07-10T07:38:05.417260137Z", "level": "INFO", "msg": "Attempting to send health event",
               "module": "syslog-health-monitor", "events": {"version": 1, "events": [
                   {"version": 1, "agent": "syslog-health-monitor", "componentClass": "GPU",
                    "checkName": "SysLogsXIDError", "isHealthy": True, "message": "No Health Failures",
                    "entitiesImpacted": [{"entityType": "PCI", "entityValue": "0001:00:00"}],
                    "nodeName": "node-d"}]}}
    other = {"time": "2026-07-10T07:38:06Z", "level": "INFO", "msg": "Successfully sent health events",
             "module": "syslog-health-monitor", "count": 1}
    value = b"\n".join(orjson.dumps(r) for r in (dcgm, syslog, healthy, other)) + b"\n"
    for runs in (True, False):
        d = decode_ndjson(value, origin="file:nvsentinel.log", stream="file:nvsentinel.log", host="nvsentinel-pod",
                          ref_ts=1, ref_basis="file", ingest_ts=1, source=None, runs=runs)
        assert not d.rejects
        got = sorted((e["signature"], e["host"], e["xid"], e["device"], orjson.loads(e["details"]).get("uuid"),
                      e["ts"].isoformat()) for e in pipeline.run(d).events.to_pylist())
        assert got == [
            ("dcgm.xid_error", "node-b", 145, None, "GPU-95d4eaef-812a-5157-fec0-7d64667313dc",
             "2026-06-02T19:47:38.025768+00:00"),
            ("xid", "node-c", 45, "0002:00:00.0", None, "2025-11-07T05:38:55.554629+00:00")], (runs, got)


def test_a_logger_records_node_condition_is_read_with_its_msg(pipeline):
    """The EKS node monitoring agent logs zap records "sending condition to exporter" whose ``condition`` holds the
    fault, DCGM's health code (aws/eks-node-monitoring-agent#39): read by ``msg`` alone they gave no event, though
    the catalog reads the condition (a real-logs pass). A record whose ``condition`` is no object, and one without
    it, stay as they were; the records read record by record or in one clean call give the same."""
    cond = {"level": "info", "ts": "2026-01-29T10:00:01Z", "msg": "sending condition to exporter",
            "condition": {"Reason": "DCGMHealthCode101", "Message": "DCGM detected issues in health check system "
                          "with error code 101", "Severity": "Fatal", "MinOccurrences": 0},
            "conditionType": "AcceleratedHardwareReady"}
    flat = {"level": "info", "ts": "2026-01-29T10:00:02Z", "msg": "reconciled", "condition": "DCGMHealthCode101"}
    plain = {"level": "info", "ts": "2026-01-29T10:00:03Z", "msg": "sending condition to exporter"}
    value = b"\n".join(orjson.dumps(r) for r in (cond, flat, plain)) + b"\n"
    for runs in (True, False):
        d = decode_ndjson(value, origin="file:agent.log", stream="file:agent.log", host="node-a", ref_ts=1,
                          ref_basis="file", ingest_ts=1, source=None, runs=runs)
        assert not d.rejects
        got = [(e["signature"], e["host"], e["ts"].isoformat()) for e in pipeline.run(d).events.to_pylist()]
        assert got == [("eks.dcgm_health_xid", "node-a", "2026-01-29T10:00:01+00:00")], (runs, got)


def test_a_logger_records_quoted_line_is_read_at_its_own_time(pipeline):
    """gpud's scan logs zap records ("known sxid") whose ``line`` quotes the kernel's line it found, stamped
    (leptonai/gpud#338): read by ``msg`` alone the SXid gave no event (a real-logs pass). The quoted line is read
    on a line of its own, at its own stamp, not the scan's ``ts``; a numeric ``line`` (a caller's line number) and a
    record that is no logger's stay as they were."""
    sxid = ("kern  :err   : 2025-01-25T10:34:54,859532+00:00 nvidia-nvswitch1: SXid (PCI:0000:84:00.0): 12028, Data "
            "{0x000001c0, 0x00bd5c8a, 0x00000500, 0x00000064, 0x00000000, 0x40008000, 0x5a001100, 0x00000000, "
            "0x00000000}")
    scan = {"level": "warn", "ts": "2025-01-28T06:47:16Z", "caller": "diagnose/scan.go:263", "msg": "known sxid",
            "line": sxid}
    numbered = {"level": "info", "ts": "2025-01-28T06:47:17Z", "msg": "scanned", "line": 263}
    value = b"\n".join(orjson.dumps(r) for r in (scan, numbered)) + b"\n"
    for runs in (True, False):
        d = decode_ndjson(value, origin="file:gpud.log", stream="file:gpud.log", host="node-b", ref_ts=1,
                          ref_basis="file", ingest_ts=1, source=None, runs=runs)
        assert not d.rejects
        got = [(e["signature"], e["sxid"], e["device"], e["ts"].isoformat())
               for e in pipeline.run(d).events.to_pylist()]
        assert got == [("sxid.data", 12028, "0000:84:00.0", "2025-01-25T10:34:54.859532+00:00")], (runs, got)


def test_a_kernel_line_gpud_quotes_in_a_text_line_is_the_kernels_line_once(pipeline):
    """gpud quotes the kernel lines it found as ``dmesg --decode --time-format iso`` printed them: its scan's text
    ("line kern  :err   : <stamp> …") and its zap record (``"line":"kern  :err   : …"``) in the journal line of its
    service (leptonai/gpud#338). Read at gpud's stamp (or the file's time) the quote was a second event of the fault,
    days after the kernel's own; read as a line of its own at its own stamp it is the kernel line's event, one with
    the kernel's line however many copies come, and one alone when the kernel's own line is not there."""
    sxid = ("2025-01-25T10:34:54,859532+00:00 nvidia-nvswitch1: SXid (PCI:0000:84:00.0): 12028, Data {0x000001c0, "
            "0x00bd5c8a, 0x00000500, 0x00000064, 0x00000000, 0x40008000, 0x5a001100, 0x00000000, 0x00000000}")
    own = "2025-01-25T10:34:54.859532+00:00 node-b kernel: " + sxid.split(" ", 1)[1]
    scan = "line kern  :err   : " + sxid
    record = {"level": "warn", "ts": "2025-01-28T06:47:16Z", "caller": "diagnose/scan.go:263", "msg": "known sxid",
              "line": "kern  :err   : " + sxid}
    journal = "Jan 28 06:47:16 node-b gpud[4242]: " + orjson.dumps(record).decode()
    want = ("sxid.data", 12028, "0000:84:00.0", "2025-01-25T10:34:54.859532+00:00", "line")
    for lines in ([own, scan, journal], [scan], [journal], [scan, journal]):
        d = decode_message("\n".join(lines).encode(), topic="fleet.dmesg", partition=0, offset=1, key=b"node-b",
                           timestamp_ms=1_738_100_000_000)
        got = [(e["signature"], e["sxid"], e["device"], e["ts"].isoformat(), e["ts_basis"])
               for e in pipeline.run(d).events.to_pylist()]
        assert got == [want], (lines, got)
    # a line that names a line of its own but quotes no stamped kernel line is read as before
    d = decode_message(b'Jan 28 06:47:16 node-b gpud[4242]: line kern  :err   : nvidia-nvswitch1: SXid '
                       b'(PCI:0000:84:00.0): 12028, Data {0x0}', topic="fleet.dmesg", partition=0, offset=2,
                       key=b"node-b", timestamp_ms=1_738_100_000_000)
    assert [e["ts"].isoformat() for e in pipeline.run(d).events.to_pylist()] == ["2025-01-28T06:47:16+00:00"]


def test_a_logger_records_quoted_line_is_read_once_whatever_else_it_holds(pipeline):
    """A gpud scan record ("known sxid", leptonai/gpud#338) that carries a node condition too is read with its
    condition and its quoted line each once: the record's JSON, read for its condition, held the line as well, and
    the SXid was read twice, once at the scan's time, and the condition's DCGM health code not at all. A record of
    Vector's shape (``message`` its whole line, the logger's fields merged beside it, as Vector's ``parse_json``
    leaves them) reads its ``message`` record by record as its columns read it: the SXid once (two readings gave
    one event and two before; a break-it pass)."""
    sxid = ("kern  :err   : 2025-01-25T10:34:54,859532+00:00 nvidia-nvswitch1: SXid (PCI:0000:84:00.0): 12028, Data "
            "{0x000001c0, 0x00bd5c8a, 0x00000500, 0x00000064, 0x00000000, 0x40008000, 0x5a001100, 0x00000000, "
            "0x00000000}")
    scan = {"level": "warn", "ts": "2025-01-28T06:47:16Z", "caller": "diagnose/scan.go:263", "msg": "known sxid",
            "line": sxid}
    both = dict(scan, condition={"Reason": "DCGMHealthCode101", "Message": "DCGM detected issues in health check "
                                 "system with error code 101"})
    vector = {"message": orjson.dumps(scan).decode(), "timestamp": "2025-01-28T06:47:16.000000Z", "host": "node-b",
              **scan}
    cases = [(both, "file:gpud.log", [("eks.dcgm_health_xid", "2025-01-28T06:47:16+00:00"),
                                      ("sxid.data", "2025-01-25T10:34:54.859532+00:00")]),
             # at the kernel line's own stamp, as the record's own reading: the quote is read so in any line
             # (ingest.prefix._quoted_kernel_line); it was the scan's time, a second event of the fault
             (vector, "kafka:fleet.gpud:0", [("sxid.data", "2025-01-25T10:34:54.859532+00:00")])]
    for rec, origin, want in cases:
        for runs, columnar in ((True, True), (True, False), (False, False)):
            d = decode_ndjson(orjson.dumps(rec) + b"\n", origin=origin, stream=origin, host="node-b", ref_ts=1,
                              ref_basis="file", ingest_ts=1, source=None, runs=runs, columnar=columnar)
            assert not d.rejects
            got = [(e["signature"], e["ts"].isoformat()) for e in pipeline.run(d).events.to_pylist()]
            assert got == want, (origin, runs, columnar, got)


def test_a_folders_hidden_folders_are_not_read(tmp_path):
    """`diagnose .` in a job's folder where `firstfault ingest` had made its default lake (`.firstfault/lake`) listed
    each of its 30 Parquet parts as skipped, and would read a `.git/` or an editor's `.backup/` copy of the logs as
    a second copy of the host's faults (a fresh user's trial): a folder's hidden files were skipped, the files under
    its hidden folders were not. Both are now; a hidden folder named itself is read, as a hidden file named is."""
    from ingest.files import walk

    log = b"[  12.5] NVRM: Xid (PCI:0000:3b:00): 79, pid=0, GPU has fallen off the bus.\n"
    (tmp_path / "node04.log").write_bytes(log)
    for hidden in (".backup/node04.log", ".firstfault/lake/events/part-1.parquet", ".node05.log"):
        (tmp_path / hidden).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / hidden).write_bytes(log)
    assert [name for _, name in walk([tmp_path])] == [f"{tmp_path.name}/node04.log"]
    assert [name for _, name in walk([tmp_path / ".backup"])] == [".backup/node04.log"]


@pytest.mark.parametrize("name,host", [
    ("10.0.0.5:9092.log", "10.0.0.5"), ("10.0.0.5:9092", "10.0.0.5"), ("10.0.0.5.log", "10.0.0.5"),
    ("10.0.0.5-dmesg.log", "10.0.0.5"), ("[fe80::1]:8080.log", "fe80::1"), ("[FE80::1].kern.log", "fe80::1"),
    ("fe80::1.log", "fe80::1"), ("2001:DB8:0:0::1-dmesg.log", "2001:db8::1"),
    ("::ffff:10.0.0.1.log", "::ffff:10.0.0.1"),
])
def test_a_file_named_by_an_address_is_that_address_as_its_kafka_key_would_be(pipeline, tmp_path, name, host):
    """A file named after its host's IPv4 or IPv6 address, with a port or not, is that address, its port dropped, as
    a Kafka key of that text is (``10.0.0.5:9092.log`` was host ``10``, ``::ffff:10.0.0.1.log`` host ``::ffff:10``:
    a stop's finding). ``999.1.1.1.log`` is no address: the name up to its first ``.``."""
    from pathlib import Path

    from ingest.decode import Decoded, host_from_filename

    assert host_from_filename(Path("999.1.1.1.log")) == "999"

    f = tmp_path / name
    f.write_text(XID + "\n")
    from_file = pipeline.run(decode_file(f, relname=name)).events.column("host").to_pylist()
    key = name.removesuffix(".log").removesuffix(".kern").removesuffix("-dmesg").encode()
    from_key = pipeline.run(Decoded(segments=msg(XID.encode(), key=key).segments)).events.column("host").to_pylist()
    assert from_file == from_key == [host], (from_file, from_key)


def test_one_host_however_its_letters_are_written_as_dns_reads_a_name(pipeline, tmp_path):
    """A name of other letters than ASCII is one host with the name DNS carries (IDNA 2008 with UTS #46's mapping,
    as browsers, curl and the ``idna`` package read it): full-width letters are ASCII (``ｎｏｄｅ07`` is ``node07``),
    a Unicode label its punycode A-label (``bücher`` is ``xn--bcher-kva``), the form stored; they were hosts apart
    (a stop's finding). A label IDNA refuses stays as written, in lower case; a name the mapping would make no host
    name stays as written: ``／`` (U+FF0F) does not become a ``/``, ``－`` no ``-``, ``Ｎｏｎｅ`` no placeholder."""
    from ingest.decode import Decoded
    from schemas.hostname import canonical_host, canonical_hosts, is_host_name

    import pyarrow as pa

    forms = {"node07": ["ｎｏｄｅ07", "ＮＯＤＥ07．cluster．local", "node07。cluster", "Ｎｏｄｅ07：9100", "NODE07"],
             "xn--bcher-kva": ["bücher", "BÜCHER.cluster.local", "XN--BCHER-KVA", "ｂüｃｈｅｒ"],
             "xn---node-kqa": ["ß-node"], "ü_x": ["Ü_x"], "node／07": ["node／07"], "－": ["－"], "ｎｏｎｅ": ["Ｎｏｎｅ"]}
    for want, names in forms.items():
        assert [canonical_host(n) for n in names] == [want] * len(names), want
        assert canonical_hosts(pa.chunked_array([names + [None]])).to_pylist() == [want] * len(names) + [None]
        assert is_host_name(want)
    got = []
    for i, key in enumerate(["ｎｏｄｅ07", "bücher"]):
        got += pipeline.run(Decoded(segments=msg(XID.encode(), key=key.encode()).segments)).events.column(
            "host").to_pylist()
        f = tmp_path / f"{['ＮＯＤＥ07', 'BÜCHER'][i]}.dmesg.log"
        f.write_text(XID + "\n")
        got += pipeline.run(decode_file(f, relname=f.name)).events.column("host").to_pylist()
    line = f"2026-11-30T03:12:00Z Bücher kernel: {XID}".encode()
    got += pipeline.run(Decoded(segments=msg(line, key=None).segments)).events.column("host").to_pylist()
    assert got == ["node07", "node07", "xn--bcher-kva", "xn--bcher-kva", "xn--bcher-kva"]
