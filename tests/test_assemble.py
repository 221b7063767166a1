"""Per-stream passes: storms, carried context, SXid groups, time bases (ingest/assemble.py)."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from correlate.correlator import correlate
from ingest.assemble import kernel_boots, nearest_dated
from ingest.decode import Decoded, Segment

T0 = 1_800_000_000_000_000  # 2027-01-15: after the stamps of the lines below, as an arrival is


def run(pipeline, text: str, *, basis="kafka", ref=T0, boot=None):
    seg = Segment(data=text.encode(), origin="t:x", stream="s", host="node07", ref_ts=ref, ref_basis=basis,
                  ingest_ts=ref, boot_ts=boot)
    return pipeline.run(Decoded(segments=[seg]))


def test_storm_of_identical_lines_is_one_event_with_its_count(pipeline):
    line = "NVRM: Xid (PCI:0000:3b:00): 95, pid=1, name=x, Uncontained: FBHUB. RST: Yes, D-RST: No"
    lines = [f"[Mon Feb  2 22:52:{s:02d} 2026] {line}" for s in range(0, 50)] * 1
    ev = run(pipeline, "\n".join(lines * 2)).events.to_pylist()
    # 100 copies within 60 s of each other (the second half re-reads the same seconds)
    assert len(ev) == 1 and ev[0]["count"] == 100
    assert ev[0]["last_ts"] is not None and ev[0]["ts"] < ev[0]["last_ts"]


def test_a_storm_is_of_one_gpu_and_one_rank(pipeline):
    """The same line of two ranks, or under two GPUs' headers, is two events, each with its own count (a fresh
    user's trial: nvidia-smi nvlink -s's four GPUs were one event of GPU 0)."""
    err = "RuntimeError: CUDA error: uncorrectable ECC error encountered"
    ev = run(pipeline, "\n".join([f"[rank{r}]: {err}" for r in (0, 1, 0, 1, 1)])).events.to_pylist()
    assert sorted((e["rank"], e["count"]) for e in ev) == [(0, 2), (1, 3)]


def test_the_same_words_of_two_ranks_in_one_microsecond_are_two_events_and_a_copy_of_either_is_not(pipeline):
    """c10's prefix names the rank of a line its own stamp dates: ranks 0 and 2 printing PyTorch's exit warning in
    one µs (their ns stamps 2 ns apart) were one event, the second rank's exit lost (a real-logs pass); a line
    delivered twice (kern.log and the journal, a shipper's retry) stays one event."""
    def line(r: int, ns: str) -> str:
        return (f"[rank{r}]:[W1106 04:13:02.1072283{ns} ProcessGroupNCCL.cpp:1250] Warning: WARNING: process group "
                "has NOT been destroyed before we destruct ProcessGroupNCCL.")
    ev = run(pipeline, "\n".join([line(0, "30"), line(2, "32"), line(0, "30")])).events.to_pylist()
    assert sorted((e["rank"], e["count"]) for e in ev) == [(0, 1), (2, 1)]
    assert {e["signature"] for e in ev} == {"torch.pg_not_destroyed"} and len({e["event_id"] for e in ev}) == 2
    smi = "\n".join(f"GPU {g}: NVIDIA H100 80GB HBM3 (UUID: GPU-{g})\n         Link 3: <inactive>" for g in (0, 1, 0))
    ev = run(pipeline, smi).events.to_pylist()
    assert sorted((e["gpu_index"], e["link"], e["count"]) for e in ev) == [(0, 3, 2), (1, 3, 1)]


def test_hits_with_the_same_fields_get_rows_of_their_own(pipeline):
    """Typed columns are remembered per (signature, fields) for storms (``Pipeline._columns``): what one hit
    adds to its row (its time, a storm's count) must not reach another hit of the same fields."""
    line = "NVRM: Xid (PCI:0000:3b:00): 79, pid=7, name=python, GPU has fallen off the bus."
    ev = run(pipeline, f"[Mon Feb  2 10:00:00 2026] {line}\n[Mon Feb  2 12:00:00 2026] {line}\n"
                       f"[Mon Feb  2 12:00:01 2026] {line}").events.to_pylist()
    assert [(e["xid"], e["device"], e["ts"].hour, e["count"]) for e in ev] == [
        (79, "0000:3b:00.0", 10, 1), (79, "0000:3b:00.0", 12, 2)]


def test_the_same_line_in_envelopes_of_other_times_gets_rows_of_its_own(pipeline):
    """A storm shipped with its times in envelopes (journald through Vector) repeats the very same line: its
    typed columns are remembered per (signature, line) (``Pipeline._lines``), and each hit still gets its own
    row — its envelope's time, and a storm's count on the storm's event only."""
    import orjson

    from ingest.decode import decode_ndjson

    line = "NVRM: Xid (PCI:0000:3b:00): 79, pid=7, name=python, GPU has fallen off the bus."
    stamps = ["2026-02-02T10:00:00.000000Z", "2026-02-02T12:00:00.000000Z", "2026-02-02T12:00:01.000000Z"]
    value = b"\n".join(orjson.dumps({"host": "node07", "message": line, "timestamp": t}) for t in stamps)
    pipeline._lines.clear()
    for _ in range(2):  # the second time, every line's rows come from the memo
        d = decode_ndjson(value, origin="kafka:t/0/1", stream="s", host=None, ref_ts=T0, ref_basis="kafka",
                          ingest_ts=T0, source="kernel", runs=True)
        ev = pipeline.run(d).events.to_pylist()
        assert [(e["xid"], e["device"], e["ts"].hour, e["ts_basis"], e["count"]) for e in ev] == [
            (79, "0000:3b:00.0", 10, "envelope", 1), (79, "0000:3b:00.0", 12, "envelope", 2)]
        assert list(pipeline._lines) == [(pipeline.catalog.by_id["xid"].index, line)]


def test_repeats_apart_in_time_stay_separate(pipeline):
    line = "NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus."
    ev = run(pipeline, f"[Mon Feb  2 10:00:00 2026] {line}\n[Mon Feb  2 12:00:00 2026] {line}").events
    assert ev.num_rows == 2 and ev.column("count").to_pylist() == [1, 1]


def test_preamble_and_serial_attach_to_the_xid(pipeline):
    text = ("[Mon Feb 2 22:52:45 2026] NVRM: GPU at PCI:0000:4c:00: GPU-45eab12c-e144-7b1c-26a4-df5d9aa40520\n"
            "[Mon Feb 2 22:52:45 2026] NVRM: GPU Board Serial Number: 1652724066231\n"
            "[Mon Feb 2 22:52:45 2026] NVRM: Xid (PCI:0000:4c:00): 79, GPU has fallen off the bus.")
    import orjson

    ev = run(pipeline, text).events.to_pylist()
    assert len(ev) == 1
    d = orjson.loads(ev[0]["details"])
    assert d["uuid"] == "GPU-45eab12c-e144-7b1c-26a4-df5d9aa40520" and d["board_serial"] == "1652724066231"


def test_the_rc_watchdogs_timeout_attaches_to_the_xid_it_raised(pipeline):
    """The driver's RC watchdog line names no GPU (ggml-org/llama.cpp#27102: the whole kernel record, four lines): its
    notify timeout goes to the host's next Xid, once; it was a line no signature read (a real-logs pass)."""
    import orjson

    text = ("Aug 16 23:01:35 box kernel: NVRM: krcWatchdog_IMPL: RC watchdog: GPU is probably locked!  Notify Timeout "
            "Seconds: 7\n"
            "Aug 16 23:01:35 box kernel: NVRM: GPU at PCI:0000:01:00: GPU-3da9f59b-4d76-1187-950a-e2beea666068\n"
            "Aug 16 23:01:35 box kernel: NVRM: GPU Board Serial Number: 0\n"
            "Aug 16 23:01:35 box kernel: NVRM: Xid (PCI:0000:01:00): 8, pid=709378, name=llama-server, channel "
            "0x00000027\n"
            "Aug 16 23:05:35 box kernel: NVRM: Xid (PCI:0000:01:00): 13, pid=709378, name=llama-server, channel "
            "0x00000027")
    ev = run(pipeline, text).events.to_pylist()
    assert [(e["xid"], orjson.loads(e["details"]).get("rc_watchdog_timeout_s")) for e in ev] == [(8, "7"), (13, None)]


def test_nvlink_block_header_names_the_gpu_of_its_links(pipeline):
    text = "GPU 3: Tesla V100-SXM2-32GB (UUID: x)\n         Link 0: 25.781 GB/s\n         Link 3: <inactive>"
    b = run(pipeline, text)
    assert b.events.column("gpu_index").to_pylist() == [3]
    assert b.link_samples.column("state").to_pylist() == ["up", "inactive"]
    assert b.link_samples.column("gpu_index").to_pylist() == [3, 3]


def test_a_dcgmi_link_status_row_gives_each_down_link_of_the_gpu_above_it(pipeline):
    """``dcgmi nvlink --link-status`` prints one letter per link under "gpuId N:", link 0 first (NVIDIA/DCGM#198:
    every link of two H100 NVL "D", nothing read the table, a real-logs pass): one event per D, its link the
    letter's place, of the GPU of the header right above; a row of all U is none, and a row under an NVSwitch's
    "physicalId N:" is no GPU's links."""
    text = ("+----------------------+\n|  NvLink Link Status  |\n+----------------------+\nGPUs:\n"
            "    gpuId 0:\n        U U D U X _\n    gpuId 1:\n        U U U U U U\n    gpuId 2:\n"
            "        D D D D D D\nNvSwitches:\n    physicalId 8:\n        U D U U U U\n\n"
            "Key: Up=U, Down=D, Disabled=X, Not Supported=_")
    b = run(pipeline, text)
    ev = b.events.to_pylist()
    assert {e["kind"] for e in ev} == {"nvlink_down"}
    assert sorted((e["gpu_index"], e["link"]) for e in ev) == [(0, 2)] + [(2, k) for k in range(6)]
    assert [(r["gpu_index"], r["link"], r["state"]) for r in b.link_samples.to_pylist()][:1] == [(0, 2, "down")]


def test_link_samples_of_a_gpu_printed_by_index_take_its_bus_id_from_an_earlier_line(pipeline):
    """``nvidia-smi nvlink -s`` names GPUs by index; an earlier ``--query-gpu=index,pci.bus_id`` line of the same
    stream gives the bus id, so the link samples (``/links``, the degraded-link report) name the GPU by bus id.
    A GPU no line mapped keeps none."""
    text = ("0, 00000000:18:00.0\n1, 00000000:2A:00.0\nGPU 1: NVIDIA H100 80GB HBM3 (UUID: x)\n"
            "         Link 0: 26.562 GB/s\nGPU 2: NVIDIA H100 80GB HBM3 (UUID: y)\n         Link 0: <inactive>")
    b = run(pipeline, text)
    assert [(r["gpu_index"], r["device"], r["state"]) for r in b.link_samples.to_pylist()] == [
        (1, "0000:2a:00.0", "up"), (2, None, "inactive")]


def test_sxid_three_line_group_is_one_event(pipeline):
    text = ("[6781753.400584] nvidia-nvswitch1: SXid (PCI:0000:06:00.0): 20034, Fatal, Link 48 LTSSM Fault Up\n"
            "[6781753.404848] nvidia-nvswitch1: SXid (PCI:0000:06:00.0): 20034, Severity 1 Engine instance 48 Sub-engine instance 00\n"
            "[6781753.406566] nvidia-nvswitch1: SXid (PCI:0000:06:00.0): 20034, Data {0x10000000, 0x10000000, 0x00000000, 0x10000000, 0x00000000, 0x00000000, 0x00000000, 0x00000000, 0x00000000}")
    ev = run(pipeline, text).events.to_pylist()
    assert len(ev) == 1 and ev[0]["link"] == 48 and ev[0]["fatal"] is True and ev[0]["message"].count("\n") == 2


def test_raw_monotonic_with_journald_boot_time(pipeline):
    b = run(pipeline, "[  100.500000] NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.", basis="envelope",
            boot=T0)
    assert b.events.column("ts_basis").to_pylist() == ["monotonic+boot"]
    assert b.events.column("ts").cast("int64").to_pylist() == [T0 + 100_500_000]


def test_boot_time_from_a_line_that_printed_both(pipeline):
    text = ("Sep 19 16:18:04 node07 kernel: [68185.875052] pcieport 0000:00:03.1: AER: Multiple Correctable error "
            "message received from 0000:00:00.0\n"
            "[68190.000000] NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.")
    ev = run(pipeline, text).events
    bases = ev.column("ts_basis").to_pylist()
    assert bases == ["line", "monotonic+boot"]
    ts = ev.column("ts").cast("int64").to_pylist()
    assert abs((ts[1] - ts[0]) - (68190_000000 - 68185_875052)) < 2_000_000


def test_a_raw_capture_of_a_boot_another_file_dated_takes_that_boot_time(pipeline):
    """The same boot captured twice: ``kern.log`` through syslog (a wall-clock stamp and the kernel's raw one on each
    line: the boot time is known) and a raw ``dmesg`` taken an hour and a half later, whose stamps were counted back
    from its file's time — the same Xid 79 at two times, two incidents, the second a "recurrence" of the first (a
    break-it pass). A raw line that is one of the other file's lines, stamp and text, takes that file's boot time;
    a raw capture that shares no line with it (another boot, perhaps) still counts back from its own time."""
    xid = "NVRM: Xid (PCI:0000:1b:00): 79, pid=0, GPU has fallen off the bus."
    kern = f"Dec  1 03:12:05 node01 kernel: [ 9000.500000] {xid}"
    raw = f"[ 9000.500000] {xid}\n[ 9500.000000] usb 1-1: new high-speed USB device"
    ref = 1_796_101_200_000_000  # 2026-12-01 05:00 UTC: the raw file's time, long after

    def batch(raw_text: str):
        segs = [Segment(data=kern.encode(), origin="f:kern", stream="kern", host="node01", ref_ts=ref,
                        ref_basis="file", ingest_ts=ref),
                Segment(data=raw_text.encode(), origin="f:dmesg", stream="dmesg", host="node01", ref_ts=ref,
                        ref_basis="file", ingest_ts=ref)]
        return pipeline.run(Decoded(segments=segs[::-1])).events  # the raw file first: the order does not matter

    ev = batch(raw).to_pylist()
    assert [e["ts_basis"] for e in ev] == ["monotonic+boot", "line"] and ev[0]["ts"] == ev[1]["ts"], ev
    other = batch(raw.replace("9000.500000", "8000.500000")).to_pylist()
    assert other[0]["ts_basis"] == "file" and other[0]["ts"] != other[1]["ts"]


@pytest.mark.parametrize("header", ["Nov 20 03:11:44", "2026-11-20T03:11:44+00:00", "2026-11-20T03:11:44.123+00:00",
                                    "2026-11-20T03:11:44.123456+00:00"],
                         ids=["syslog", "iso-seconds", "iso-ms", "iso-us"])
def test_a_kern_log_copy_of_a_raw_dmesg_line_is_its_event_whatever_its_headers_precision(pipeline, header):
    """A raw ``dmesg`` line and kern.log's copy of it (a header, then the same raw stamp): one event id, whatever the
    header's precision. rsyslog's high-precision ISO stamps (Debian 12's default) gave the copy an id of its wall
    time, the raw line one of its stamp since boot: one Xid 119 was "reported 2 lines" (a break-it pass)."""
    xid = ("[ 1234.567890] NVRM: Xid (PCI:0000:61:00): 119, pid=1365232, name=nvidia-smi, Timeout waiting for RPC "
           "from GSP! Expected function 76 (GSP_RM_CONTROL) (0x20801348 0x410).")
    ref = 1_796_000_000_000_000  # 2026-11-29: the files copied after the line
    segs = [Segment(data=f"{header} node07 kernel: {xid}".encode(), origin="f:kern", stream="kern", host="node07",
                    ref_ts=ref, ref_basis="file", ingest_ts=ref),
            Segment(data=xid.encode(), origin="f:dmesg", stream="dmesg", host="node07", ref_ts=ref, ref_basis="file",
                    ingest_ts=ref)]
    ev = pipeline.run(Decoded(segments=segs)).events.to_pylist()
    assert [(e["signature"], e["xid"]) for e in ev] == [("xid", 119)] * 2 and ev[0]["event_id"] == ev[1]["event_id"], ev
    assert [e["ts_basis"] for e in ev] == ["line", "monotonic+boot"], ev  # the copy dated by its header


def test_unstamped_line_inherits_the_previous_stamp(pipeline):
    text = ("[2025-09-17 15:23:34] node01:311:405 [0] transport/net_ib.cc:199 NCCL WARN NET/IB : mlx5_32:1 Got "
            "async error event: port error\n WorkerProc hit an exception.")
    ev = run(pipeline, text).events.to_pylist()
    assert [e["ts_basis"] for e in ev] == ["line", "inherited"] and ev[0]["ts"] == ev[1]["ts"]


def test_a_line_that_prints_its_epoch_is_timed_by_it_and_lends_it_to_no_line_after_it(pipeline):
    """A signature's ``epoch_s`` group (Abseil's crash line, NVIDIA/nccl#2213) times a line that has no stamp; a
    stamp before it wins (vllm-project/vllm#13136 prints both: its logger's local time, the handler's UTC epoch); the
    unstamped lines after it keep their arrival as an upper bound (a peer's watchdog printed half an hour later)."""
    text = ("*** SIGSEGV received at time=1775734074 on cpu 19 ***\n"
            "[Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=7, OpType=ALLREDUCE, NumelIn=1, "
            "NumelOut=1, Timeout(ms)=1800000) ran for 1800002 milliseconds before timing out.")
    ev = run(pipeline, text, basis="file").events.to_pylist()
    assert [(e["signature"], e["ts_basis"]) for e in ev] == [("absl.fatal_signal", "line"),
                                                            ("torch.watchdog_timeout", "file")]
    assert ev[0]["ts"] == datetime(2026, 4, 9, 11, 27, 54, tzinfo=timezone.utc)
    assert ev[1]["ts"] == datetime.fromtimestamp(T0 / 1e6, timezone.utc)
    stamped = run(pipeline, "[2025-02-11T21:50:49Z] logging.cc:460: *** SIGSEGV received at time=1739339449 on "
                            "cpu 57 ***").events.to_pylist()
    assert stamped[0]["ts"] == datetime(2025, 2, 11, 21, 50, 49, tzinfo=timezone.utc)
    # among lines stamped in local time without a zone (c10/glog), the UTC epoch is not used: it put the crash eight
    # hours from the timeout it caused, two pages (a break-it pass); the crash takes their times as before
    local = run(pipeline, "[rank0]:[I409 03:20:01.000000000 ProcessGroupNCCL.cpp:900] [Rank 0] Watchdog caught "
                          "collective operation timeout: WorkNCCL(SeqNum=6, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
                          "Timeout(ms)=60000) ran for 60002 milliseconds before timing out.\n"
                          "[rank1]: *** SIGSEGV received at time=1775734074 on cpu 19 ***", basis="file")
    crash = [e for e in local.events.to_pylist() if e["signature"] == "absl.fatal_signal"]
    assert crash[0]["ts_basis"] != "line" and crash[0]["ts"].hour != 11


def _records(pipeline, values: list[tuple[str | None, str]]):
    """Kafka values (key, text) of one partition in one batch, as unkeyed one-line records arrive: one segment
    each, one stream (the partition's)."""
    segs = [Segment(data=text.encode(), origin=f"kafka:t/0/{i}", stream="t/0", host=key, ref_ts=T0, ref_basis="kafka",
                    ingest_ts=T0) for i, (key, text) in enumerate(values)]
    return pipeline.run(Decoded(segments=segs)).events.to_pylist()


def test_a_line_takes_no_time_from_another_hosts_record(pipeline):
    """Unkeyed records of several hosts in one batch: a line whose stamp is not used (year 9999) took the time
    of another host's line in an earlier record, eleven months before (a break-it pass). A line inherits the
    time of the closest earlier stamped line of its own record (a Kafka value, a file), else of its own host
    in an earlier record of the batch; else its arrival time stands in. A raw kernel stamp is read with its
    record's envelope boot time (a journald capture that spans a reboot holds two), else its own host's."""
    xid = "NVRM: Xid (PCI:0000:{}:00): 79, pid=0, GPU has fallen off the bus."
    ev = _records(pipeline, [(None, "2026-01-01T00:00:00Z nodeA kernel: " + xid.format("3b")),
                             (None, "9999-12-31T23:59:59Z nodeB kernel: " + xid.format("5e")),
                             ("nodeA", xid.format("60")),
                             ("nodeC", "2026-02-01T00:00:00Z nodeC kernel: " + xid.format("61") + "\n"
                              + xid.format("62"))])
    assert [(e["host"], e["ts_basis"]) for e in ev] == [  # host names are lower case (schemas.hostname)
        ("nodea", "line"), ("nodeb", "kafka"), ("nodea", "inherited"), ("nodec", "line"), ("nodec", "inherited")]
    ts = [int(e["ts"].timestamp() * 1e6) for e in ev]
    assert ts[1] == T0 and ts[2] == ts[0] and ts[4] == ts[3] and "ts_rejected" in ev[1]["details"]
    ev = _records(pipeline, [("nodeA", "Sep 19 16:18:04 nodeA kernel: [68185.875052] " + xid.format("3b")),
                             ("nodeB", "[68190.000000] " + xid.format("5e")),
                             ("nodeA", "[68190.000000] " + xid.format("60"))])
    assert [(e["host"], e["ts_basis"]) for e in ev] == [("nodea", "line"), ("nodeb", "kafka"),
                                                         ("nodea", "monotonic+boot")]
    # two journald records of one host across a reboot: each record's raw stamps with its own boot time (the
    # first record's boot time dated both; a second break-it pass)
    segs = [Segment(data=f"[  100.000000] {xid.format(bus)}".encode(), origin=f"kafka:t/0/{i}", stream="t/0",
                    host="nodeJ", ref_ts=T0, ref_basis="envelope", ingest_ts=T0, boot_ts=boot)
            for i, (bus, boot) in enumerate([("3b", T0 - 86_400_000_000), ("5e", T0 - 3_600_000_000)])]
    ev = pipeline.run(Decoded(segments=segs)).events.to_pylist()
    assert [int(e["ts"].timestamp() * 1e6) for e in ev] == [T0 - 86_400_000_000 + 100_000_000,
                                                           T0 - 3_600_000_000 + 100_000_000]


def test_year_from_the_nearest_dated_line(pipeline):
    text = ("I1025 02:19:08.002792       1 health.go:151] Skipping non-nvmlEventTypeXidCriticalError event: "
            "{Device:{Handle:0x7f0dcf40bdf8} EventType:2 EventData:0 GpuInstanceId:4294967295 ComputeInstanceId:4294967295}\n"
            "Fri Oct 25 11:35:11 2024\n"
            "|   0  NVIDIA H100 80GB HBM3          On  | 00000000:1A:00.0 Off |                    2 |")
    ev = run(pipeline, text).events.to_pylist()
    assert [e["ts"].year for e in ev] == [2024, 2024]


_INIT = ("{host}:91234:91290 [2] NCCL INFO comm 0x55d1c8a0 rank {rank} nranks 24 cudaDev 2 nvmlDev 2 busId 5e000 "
         "commId {comm} - Init COMPLETE")
_C10 = ("[rank{rank}]:[E1204 03:21:4{s}.527381 91234 ProcessGroupNCCL.cpp:632] [Rank {rank}] Watchdog caught "
        "collective operation timeout: WorkNCCL(SeqNum=18201, OpType=ALLREDUCE, NumelIn=8, NumelOut=8, "
        "Timeout(ms)=600000) ran for 600031 milliseconds before timing out.")
_COPIED = 1_796_400_000_000_000  # 2026-12-04: the files' time, a year after the job


def _files(pipeline, texts: dict[str, str]):
    segs = [Segment(data=t.encode(), origin=f"file:{h}.log", stream=f"file:{h}.log", host=h, ref_ts=_COPIED,
                    ref_basis="file", ingest_ts=_COPIED) for h, t in texts.items()]
    return pipeline.run(Decoded(segments=segs))


_STEP = "2025-12-04 03:11:40,112 INFO trainer: step 18200"


@pytest.mark.parametrize(("comm_b", "log_a", "year_b", "from_b"), [
    ("0x8f3c2a1b9d7e6f50", [_STEP, "{init}", "{c10}"], 2025, "related"),  # one job: node-a's dated lines
    ("0x8f3c2a1b9d7e6f50", ["[2025-12-04 03:11:40] {init}"], 2025, "related"),  # its dated init line
    ("0x1111111111111111", [_STEP, "{init}", "{c10}"], 2026, "file"),  # another job
    ("0x8f3c2a1b9d7e6f50", ["[2025-11-20 03:11:40] {init}"], 2026, "file"),  # its dates two weeks before
])
def test_a_files_year_less_stamps_take_the_year_of_a_dated_log_of_its_job(pipeline, comm_b, log_a, year_b, from_b):
    """Two ranks' logs of one job copied a year later (a fresh user's trial): node-a's prints a date above its c10
    stamps (``E1204``: no year), node-b's nothing but c10 stamps. node-b's took its year from its file's time, a year
    from node-a's: one collective's hang was two incidents a year apart. A file nothing of its own dates takes the
    year of a dated log of the same communicator (or host) within a week of it; else its file's, said in
    ``details.ts_year_from``."""
    comm = "0x8f3c2a1b9d7e6f50"
    b = _files(pipeline, {
        "node-a": "\n".join(x.format(init=_INIT.format(host="node-a", rank=10, comm=comm),
                                      c10=_C10.format(rank=10, s=0)) for x in log_a),
        "node-b": "\n".join([_INIT.format(host="node-b", rank=21, comm=comm_b), _C10.format(rank=21, s=1)])})
    ev = b.events.to_pylist()
    timeouts = {e["host"]: e for e in ev if e["signature"] == "torch.watchdog_timeout"}
    assert all(e["ts"].year == 2025 and "ts_year_from" not in json.loads(e["details"] or "{}")
               for e in ev if e["host"] == "node-a")
    assert timeouts["node-b"]["ts"].year == year_b
    assert json.loads(timeouts["node-b"]["details"])["ts_year_from"] == from_b
    if from_b == "related" and "node-a" in timeouts:
        assert timeouts["node-b"]["ts"] - timeouts["node-a"]["ts"] == timedelta(seconds=1)
        (hang,) = correlate(b.events, b.link_samples, b.topology, now_us=_COPIED)  # one hang of both ranks
        assert hang["category"] == "nccl_hang" and "2 ranks (10, 21) timed out" in hang["explanation"]


def test_a_hosts_year_less_log_takes_the_year_of_its_dated_log_but_not_of_a_clock_ahead_of_its_file(pipeline):
    """Of one host, a ``dmesg -T`` (dated) and a ``kern.log`` of syslog stamps (no year), both copied a year later:
    the key of the host was never set before the rows' hosts were (a break-it pass: two incidents a year apart); a
    dated line ahead of its own file's time (a clock set years on) dates no other file; a week past the dated lines
    is the window, not nine days."""
    def ts(texts: dict[str, tuple[str, str]]) -> dict[str, datetime]:
        segs = [Segment(data=t.encode(), origin=f"file:{name}", stream=f"file:{name}", host=host, ref_ts=_COPIED,
                        ref_basis="file", ingest_ts=_COPIED) for name, (host, t) in texts.items()]
        ev = pipeline.run(Decoded(segments=segs)).events.to_pylist()
        return {e["origin"].split(":")[1].split("@")[0]: e["ts"] for e in ev if e["signature"] == "xid"}

    xid = "NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=python, GPU has fallen off the bus."
    got = ts({"node07/dmesg-T.txt": ("node07", f"[Thu Dec  4 03:00:10 2025] {xid}"),
              "node07/kern.log": ("node07", f"Dec  4 03:00:11 node07 kernel: {xid}")})
    assert got["node07/kern.log"] == datetime(2025, 12, 4, 3, 0, 11, tzinfo=timezone.utc)
    ahead = ts({"a/dmesg-T.txt": ("node07", f"[Thu Dec  4 03:00:10 2031] {xid}"),
                "b/kern.log": ("node07", f"Dec  4 03:00:11 node07 kernel: {xid}")})
    assert ahead["b/kern.log"] == datetime(2026, 12, 4, 3, 0, 11, tzinfo=timezone.utc)  # its own file's year
    late = ts({"a/dmesg-T.txt": ("node07", f"[Thu Nov 25 03:00:10 2025] {xid}"),
               "b/kern.log": ("node07", f"Dec  4 03:00:11 node07 kernel: {xid}")})  # 9 days after
    assert late["b/kern.log"].year == 2026


def test_a_year_taken_from_the_files_time_is_said(pipeline):
    """A syslog Xid line of a file nothing dates: its year is its file's time's, a guess the incident's explanation
    and ``diagnose``'s stderr say (``details.ts_year_from``; a fresh user's trial found a year's gap unsaid)."""
    from api.diagnose import year_note

    b = _files(pipeline, {"node-c": "Dec  4 03:11:52 node-c kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=48213, "
                                    "name=python, GPU has fallen off the bus."})
    (e,) = b.events.to_pylist()
    assert e["ts"] == datetime(2026, 12, 4, 3, 11, 52, tzinfo=timezone.utc)
    assert json.loads(e["details"])["ts_year_from"] == "file"
    (inc,) = correlate(b.events, b.link_samples, b.topology, now_us=_COPIED)
    assert "at 2026-12-04T03:11:52.000000Z (its stamp prints no year; the year from its file's time)" \
        in inc["explanation"]
    assert [m for m in inc["missing"] if m.startswith("the year of the lines of node-c: their stamps print none")]
    assert year_note(b.events).startswith("1 event with a stamp that prints no year")
    assert year_note(run(pipeline, "[Thu Dec  4 03:11:52 2025] NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=x, "
                                   "GPU has fallen off the bus.", basis="file").events) is None


@pytest.mark.parametrize("dated", [
    " [2025-10-02 12:20:48] iteration       48/      50 | consumed samples:         3072 | elapsed time (ms): 1.2",
    "[Thu Oct  2 12:20:54 2025] systemd[1]: Started Session 4 of user trainer.",
    "2025-10-02 12:20:40,101 - INFO - training step 48",
])
def test_a_files_year_less_line_takes_the_year_of_its_nearest_dated_line_matched_or_not(pipeline, dated):
    """NVIDIA-NeMo/Megatron-Bridge#836 (a real-logs pass): a rank's c10 watchdog line (``E1002``: month and day)
    below Megatron's dated iteration lines, none of which a signature matches: the year was the copied file's
    (2026), a year from the rank's Xid. Lines a signature does not match date a file's year-less lines when no hit
    does; a Kafka record's arrival keeps its own year (a line is read when it is written)."""
    watchdog = ("[rank29]:[E1002 12:20:55.123831168 ProcessGroupNCCL.cpp:1923] [PG ID 5 PG GUID 83(TENSOR_MODEL_"
                "PARALLEL_GROUP) Rank 1] Process group watchdog thread terminated with exception: CUDA error: "
                "unspecified launch failure")
    text = "\n".join(["noise without a stamp", dated, "more noise", watchdog, "after"])
    (ev,) = run(pipeline, text, basis="file").events.to_pylist()
    assert ev["ts"].isoformat() == "2025-10-02T12:20:55.123831+00:00", ev["ts"]
    (ev,) = run(pipeline, text, basis="kafka").events.to_pylist()
    assert ev["ts"].year == 2026, ev["ts"]  # T0 is 2027-01-15: the latest year before it
    # a dated line the prefix reader does not read as the line's stamp dates nothing
    (ev,) = run(pipeline, "\n".join(["step done at 2025-10-02 12:20:48", watchdog]), basis="file").events.to_pylist()
    assert ev["ts"].year == 2026, ev["ts"]


def test_a_year_less_stamp_is_after_a_dated_line_above_and_before_one_below(pipeline):
    """A third break-it pass: the year nearest the dated line put an August Xid five months before its log's January
    banner above it, and a March Xid after the October Xid below it (the order reversed, the wrong initiator)."""
    xid = "node07 kernel: NVRM: Xid (PCI:0000:3b:00): {}, pid=123, name=python, GPU has fallen off the bus."
    ev = run(pipeline, "2025-01-10 08:00:00 INFO job started\nAug 12 03:20:55 " + xid.format(79),
             basis="file").events.to_pylist()
    assert [e["ts"].isoformat()[:10] for e in ev] == ["2025-08-12"], ev
    ev = run(pipeline, "Mar 15 03:20:55 " + xid.format(79) + "\n2025-10-01T08:00:00Z " + xid.format(48)).events
    assert [t.isoformat()[:10] for t in ev.column("ts").to_pylist()] == ["2025-03-15", "2025-10-01"]


def test_rays_deduplicated_copies_are_counted_into_the_line_they_repeat(pipeline):
    """Ray prints a line seen on other workers again once, "… [repeated 8x across cluster]" (verl-project/verl#2995):
    the event counted 1 for 9 workers' deaths (a real-logs pass). The copies count, into the line Ray printed first."""
    died = ("(raylet) A worker died or was killed while executing a task by an unexpected system error. Worker IP "
            "address: 172.26.143.83 Worker port: 10005 Worker PID: 833 Worker exit type: SYSTEM_ERROR")
    ev = run(pipeline, died + "\n" + died + " [repeated 8x across cluster]").events.to_pylist()
    assert [(e["signature"], e["count"]) for e in ev] == [("ray.worker_died", 9)], ev
    ev = run(pipeline, died + " [repeated 8x across cluster]").events.to_pylist()
    assert [e["count"] for e in ev] == [8]


def test_cray_mpichs_abort_line_gives_its_rank_node_and_time(pipeline):
    """Cray MPICH's "MPICH ERROR [Rank 2047] [job id …] [Fri Aug 28 22:45:13 2026] [nid004069] - Abort(1) …"
    (E3SM-Project/E3SM#8699): its host, rank and time were not read, a real-logs pass; the error before it on the same
    rank, with no stamp, takes that time as an upper bound."""
    text = ("2047: cudaSetDevice(cuda_device_id) error( cudaErrorDevicesUnavailable): CUDA-capable device(s) is/are "
            "busy or unavailable\n"
            "2047: MPICH ERROR [Rank 2047] [job id 57638547.0] [Fri Aug 28 22:45:13 2026] [nid004069] - Abort(1) (rank "
            "2047 in comm 432): application called MPI_Abort(comm=0xC4000001, 1) - process 2047")
    ev = run(pipeline, text, basis="file").events.to_pylist()
    got = [(e["signature"], e["host"], e["rank"], e["ts"].isoformat()[:19], e["ts_basis"]) for e in ev]
    assert got[1] == ("mpich.abort", "nid004069", 2047, "2026-08-28T22:45:13", "line"), got
    assert got[0][0] == "cuda.devices_unavailable" and got[0][3] == "2026-08-28T22:45:13", got


def test_a_year_after_the_dated_line_above_is_no_later_than_the_files_time(pipeline):
    """``cat dmesg-T.txt syslog`` in a file of October 3, 2025: the syslog's "Sep 28" lines under the dmesg's "Oct 2
    2025" lines went to 2026 (the year after the line above), past the file's time, and fell back to the dated line's
    time, both Xids at one instant (a break-it pass). The file's time caps the year: 2025, the two in their order. A
    log in its order keeps the year after its banner."""
    from datetime import datetime, timezone

    mtime = int(datetime(2025, 10, 3, 10, tzinfo=timezone.utc).timestamp() * 10**6)
    xid = "node07 kernel: NVRM: Xid (PCI:0000:{}:00): 79, pid=1234, name=python3, GPU has fallen off the bus."
    text = "\n".join(["[Thu Oct  2 12:20:54 2025] NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.54.15",
                      "Sep 28 10:00:00 " + xid.format("1b"), "Sep 28 10:00:05 " + xid.format("3b")])
    ev = [e for e in run(pipeline, text, basis="file", ref=mtime).events.to_pylist() if e["xid"] == 79]
    assert [(e["ts"].isoformat()[:19], e["ts_basis"]) for e in ev] == [("2025-09-28T10:00:00", "line"),
                                                                        ("2025-09-28T10:00:05", "line")]
    ev = [e for e in run(pipeline, text, basis="file").events.to_pylist() if e["xid"] == 79]  # a file of 2027
    assert [e["ts"].isoformat()[:10] for e in ev] == ["2026-09-28", "2026-09-28"]
    # a file older than its dated line bounds nothing: the line below it is not put a year before it (a break-it
    # pass: December 2026 under December 2026 went to 2025, silently)
    old = int(datetime(2025, 6, 1, tzinfo=timezone.utc).timestamp() * 10**6)
    ev = [e for e in run(pipeline, text, basis="file", ref=old).events.to_pylist() if e["xid"] == 79]
    assert all(e["ts"].year != 2024 for e in ev), ev
    # nor a year on from it: the year nearest the dated line (a file of Sep 29, 2025: "Sep 28" is 2025's, a third)
    sep29 = int(datetime(2025, 9, 29, tzinfo=timezone.utc).timestamp() * 10**6)
    ev = [e for e in run(pipeline, text, basis="file", ref=sep29).events.to_pylist() if e["xid"] == 79]
    assert [e["ts"].isoformat()[:10] for e in ev] == ["2025-09-28", "2025-09-28"], ev


@pytest.mark.parametrize("dated, stamp, expect", [
    ("2025-06-01 10:00:00,101 - INFO - starting training run", "E0605 03:20:55.123831", "2025-06-05T03:20:55"),
    ("2025-12-28 10:00:00,101 - INFO - starting training run", "E0102 03:20:55.123831", "2026-01-02T03:20:55"),
    # a dated hit above (the driver's load line) rather than an unmatched line: the same rule
    ("[Sun Jun  1 10:00:00 2025] NVRM: loading NVIDIA UNIX x86_64 Kernel Module  535.104.05",
     "E0605 03:20:55.123831", "2025-06-05T03:20:55"),
])
def test_a_year_less_stamp_below_a_dated_line_is_after_it_not_a_year_before(pipeline, monkeypatch, dated, stamp,
                                                                             expect):
    """A dated line above a year-less one is a time the line came after: a watchdog line of June 5 under a run's June 1
    banner was put in 2024 (the year's choice read every dated line as an upper bound: a break-it pass), one of
    January 2 under December 28's, a year early. Also past the bytes the scan reads (a 220 MB log: 166 of 200 lines a
    year off)."""
    watchdog = (f"[rank3]:[{stamp}168 ProcessGroupNCCL.cpp:1923] [PG ID 0 PG GUID 0(default_pg) Rank 3] Process group "
                "watchdog thread terminated with exception: CUDA error: unspecified launch failure")
    text = "\n".join([dated] + [f" iteration {i}/100000 | loss 2.3" for i in range(20)] + [watchdog])
    for ref in (T0, T0 - 365 * 86400 * 10**6):
        ev = [e for e in run(pipeline, text, basis="file", ref=ref).events.to_pylist()
              if e["signature"] != "driver.loaded"]
        assert [e["ts"].isoformat()[:19] for e in ev if e["rank"] == 3] == [expect], ev
    monkeypatch.setattr("ingest.assemble.YEAR_SCAN_BYTES", len(dated) + 40)  # the watchdog line past the scan
    ev = [e for e in run(pipeline, text, basis="file").events.to_pylist() if e["rank"] == 3]
    assert [e["ts"].isoformat()[:19] for e in ev] == [expect], ev


@given(st.lists(st.tuples(st.integers(0, 40), st.integers(0, 10**6)), min_size=1, max_size=12),
       st.integers(-3, 45))
def test_nearest_dated_line_is_the_first_of_the_closest(dated, line):
    """``nearest_dated`` (a binary search) gives what the definition gives: ``min`` over the dated lines by
    distance, the first in hit order on a tie (a line between two dated ones, several hits on one line)."""
    assert nearest_dated(dated)(line) == min(dated, key=lambda d: abs(d[0] - line))[1]


def test_year_less_storm_among_dated_lines_takes_each_line_its_nearest_year(pipeline):
    """The kind of input that made year resolution quadratic (every year-less line against every dated
    line): syslog-stamped Xid lines interleaved with ISO-dated lines of another year, in one stream."""
    iso = "{y}-12-31T23:59:{s:02d}.000000+00:00 node001 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus."
    syslog = "Dec 31 23:59:{s:02d} node001 kernel: NVRM: Xid (PCI:0000:3c:00): 79, pid=1, GPU has fallen off the bus."
    lines = [iso.format(y=2024, s=s) for s in range(0, 10)] + [syslog.format(s=s) for s in range(0, 60)] * 40 \
        + [iso.format(y=2025, s=s) for s in range(50, 60)]
    ev = run(pipeline, "\n".join(lines), ref=T0).events.to_pylist()
    years = {(e["device"], e["ts"].year) for e in ev}
    # the first half of the syslog run is nearer the 2024 lines, the second half nearer the 2025 lines
    assert years == {("0000:3b:00.0", 2024), ("0000:3b:00.0", 2025), ("0000:3c:00.0", 2024),
                     ("0000:3c:00.0", 2025)}


def test_a_dated_stamp_behind_a_year_less_one_keeps_its_own_time(pipeline):
    """A syslog relay's year-less header before a Talos kernel header with a full ISO stamp (formats.md
    §1.8): the line's time is the ISO stamp's. Year resolution against the nearest dated line re-resolves
    only the year-less stamp that gave a line its time (``Prefix.yearless``), never this one."""
    text = ("2024-12-31T23:59:58.000000+00:00 node001 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has "
            "fallen off the bus.\n"
            "Dec 31 23:59:59 192.0.2.9: kern: err: [2025-06-01T10:00:00Z]: NVRM: Xid (PCI:0000:3c:00): 79, "
            "pid=1, GPU has fallen off the bus.\n"
            "Dec 31 23:59:59 node001 kernel: NVRM: Xid (PCI:0000:3d:00): 79, pid=1, GPU has fallen off the bus.")
    ev = run(pipeline, text, ref=T0).events.to_pylist()
    # the last line's year: after the dated line above it (2025-06-01), as a log is in its order (ingest.assemble.
    # year_by_side; the year nearest it put lines before their banners: a break-it pass)
    assert [(e["device"], e["ts"].isoformat()) for e in ev] == [
        ("0000:3b:00.0", "2024-12-31T23:59:58+00:00"), ("0000:3c:00.0", "2025-06-01T10:00:00+00:00"),
        ("0000:3d:00.0", "2025-12-31T23:59:59+00:00")]


XID79 = "NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus."


@pytest.mark.parametrize("tz,dated,yearless,expect", [
    # just past New Year: the next year, not 364 days back (syslog and glog stamps)
    ("UTC", "[2025-12-31 23:59:55]", "Jan  1 00:00:05 node07 kernel:", "2026-01-01T00:00:05+00:00"),
    ("UTC", "[2025-12-31 23:59:55]", "I0101 00:00:05.000000       1 main.go:1]", "2026-01-01T00:00:05+00:00"),
    # December lines read against a January reference stay in the year before
    ("UTC", "[2026-01-01 00:00:05]", "Dec 31 23:59:55 node07 kernel:", "2025-12-31T23:59:55+00:00"),
    # the pipeline's zone is a year ahead of UTC on the night of New Year
    ("Asia/Tokyo", "[2026-01-01 08:00:00]", "Jan  1 08:00:01 node07 kernel:", "2025-12-31T23:00:01+00:00"),
])
def test_year_less_stamps_across_new_year_take_the_year_of_their_dated_neighbour(tz, dated, yearless, expect):
    """The rule of formats.md §1.5 (at most two days after the reference) picks the latest such year, which
    is the next one for a stamp just after midnight on 1 January."""
    from zoneinfo import ZoneInfo

    from ingest.pipeline import Pipeline

    pl = Pipeline(tz=ZoneInfo(tz))
    text = f"{dated} {XID79}\n{yearless} {XID79.replace('3b:00', '3c:00')}"  # two GPUs: two events
    seg = Segment(data=text.encode(), origin="t:x", stream="s", host="node07", ref_ts=T0, ref_basis="kafka",
                  ingest_ts=T0)
    ev = {e["device"]: e["ts"] for e in pl.run(Decoded(segments=[seg])).events.to_pylist()}
    assert ev["0000:3c:00.0"].astimezone(timezone.utc).isoformat() == expect


def test_a_relayed_line_with_a_full_stamp_is_a_dated_line_for_its_neighbours(pipeline):
    """A syslog relay's year-less header before a Talos header with an ISO stamp: the line is dated (its
    ISO stamp), so a year-less line next to it takes that year, not the reference's."""
    text = (f"Nov 30 03:12:45 relay kernel: kern: err: [2026-04-22T21:25:20Z]: {XID79}\n"
            f"Nov 30 03:12:46 relay kernel: {XID79.replace('3b:00', '3c:00')}")
    ev = run(pipeline, text, ref=1_812_000_000_000_000).events.to_pylist()  # a reference in June 2027
    # after the dated line above it (a relay received it after its inner stamp), not the year before
    assert [e["ts"].isoformat() for e in ev] == ["2026-04-22T21:25:20+00:00", "2026-11-30T03:12:46+00:00"]


def test_long_lines_stay_out_of_the_columns_memo(pipeline):
    """The memos of typed columns key on the fields and on the line; a long line (an Xid message of 60 KB)
    would keep megabytes alive per entry, so lines over 512 characters are not remembered."""
    pipeline._columns.clear()
    pipeline._lines.clear()
    lines = [f"[Mon Feb  2 10:{i:02d}:00 2026] {XID79} {i} " + "x" * 60_000 for i in range(20)]
    ev = run(pipeline, "\n".join(lines)).events.to_pylist()
    assert len(ev) == 20 and not pipeline._columns and not pipeline._lines
    run(pipeline, f"[Mon Feb  2 10:00:00 2026] {XID79}")
    assert len(pipeline._columns) == 1 and len(pipeline._lines) == 1

def test_smi_q_section_header_names_the_gpu_of_its_fabric_lines(pipeline):
    # nvidia-smi -q: "GPU <bus id>" opens a GPU's section; its Fabric and GPU Recovery Action lines name no
    # GPU themselves (formats.md §9.5; lines from Azure/azhpc-images#506, dra-driver-nvidia-gpu#626,
    # nvidia_gpu_exporter#393). A healthy section gives nothing.
    text = ("GPU 00000000:18:00.0\n    Fabric\n        State                             : Completed\n"
            "        Status                            : Success\n"
            "            Summary                       : Healthy\n"
            "    GPU Recovery Action                   : None\n"
            "GPU 00000000:2A:00.0\n    Fabric\n        State                             : Completed\n"
            "        Status                            : Insufficient Resources\n"
            "            Summary                       : Unhealthy\n"
            "    GPU Recovery Action                   : Reset\n")
    ev = run(pipeline, text).events.to_pylist()
    assert [(e["signature"], e["device"]) for e in ev] == [
        ("nvml.fabric_status_error", "0000:2a:00.0"),
        ("nvml.fabric_unhealthy", "0000:2a:00.0"),
        ("nvml.recovery_action", "0000:2a:00.0"),
    ]


def test_smi_q_reset_status_yes_is_a_fault_of_its_sections_gpu(pipeline):
    """nvidia-smi -q's "GPU Reset Status" (R535 - R565): "Reset Required : Yes" names no GPU itself; it is a fault
    of the GPU whose section it is in, and "No" (or 570's "deprecated") is none (a real capture: GPU 2 of eight left
    "Reset Required: Yes", CUDA init failing on it alone; field of gpuopenanalytics/pynvml#51)."""
    text = ("GPU 00000000:18:00.0\n    GPU Reset Status\n"
            "        Reset Required                    : No\n"
            "        Drain and Reset Recommended       : No\n"
            "GPU 00000000:39:00.0\n    GPU Reset Status\n"
            "        Reset Required                    : Yes\n"
            "        Drain and Reset Recommended       : No\n"
            "    Fan Speed                             : System is not in ready state\n"
            "GPU 00000001:00:00.0\n        GPU Reset Status\n"
            "            Reset Required                    : Requested functionality has been deprecated\n"
            "        GPU Recovery Action                   : None\n")
    ev = run(pipeline, text).events.to_pylist()
    assert [(e["signature"], e["device"], e["severity"]) for e in ev] == [
        ("nvml.q_reset_required", "0000:39:00.0", "error")]


def test_an_ibstat_block_names_the_hca_port_and_state_of_its_physical_state_line(pipeline):
    """``ibstat`` prints a block per HCA: its port's "Physical state:" line names neither the HCA nor the port, and its
    meaning depends on the logical "State:" above it. Blocks from real reports: pytorch/tensorpipe#455 (mlx5_1 not
    cabled, Disabled), Mellanox/network-operator#249 (a pod's VF with a physical link but State Down: no subnet
    manager brought it up) and leptonai/gpud#482 (Polling). The healthy port (Active, LinkUp) is context, no fault;
    without the carried context the three faults named no device and the LinkUp one was no warning."""
    block = ("CA '{ca}'\n        CA type: MT4123\n        Number of ports: 1\n        Port 1:\n"
             "                State: {state}\n                Physical state: {phys}\n                Rate: 200\n"
             "                Link layer: InfiniBand\n")
    text = "".join(block.format(ca=ca, state=st, phys=ph) for ca, st, ph in (
        ("mlx5_0", "Active", "LinkUp"), ("mlx5_1", "Down", "Disabled"), ("mlx5_7", "Down", "LinkUp"),
        ("mlx5_10", "Down", "Polling")))
    ev = run(pipeline, text).events.to_pylist()
    got = [(e["device"], e["link"], e["severity"], json.loads(e["details"]).get("port_state")) for e in ev]
    assert got == [("mlx5_0", 1, "info", "Active"), ("mlx5_1", 1, "warning", "Down"),
                   ("mlx5_7", 1, "warning", "Down"), ("mlx5_10", 1, "warning", "Down")]
    assert {e["device_type"] for e in ev} == {"nic"} and {e["kind"] for e in ev} == {"ib_port"}


def test_raw_dmesg_file_mtime_is_the_time_of_its_last_line_not_of_its_last_match(pipeline):
    """A `dmesg > file` capture: the mtime dates the last kernel stamp of the file, which is usually a noise
    line long after the fault (here 2,700 s after the Xid)."""
    text = ("[  100.500000] NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.\n"
            "[ 2000.000000] audit: type=1400 audit(1700000000.0:1): apparmor=\"STATUS\"\n"
            "[ 2800.500000] IPv6: ADDRCONF(NETDEV_CHANGE): eth0: link becomes ready\n")
    ev = run(pipeline, text, basis="file").events
    assert ev.column("ts_basis").to_pylist() == ["file"]
    assert ev.column("ts").cast("int64").to_pylist() == [T0 - 2_700_000_000]


@pytest.mark.parametrize("basis", ["kafka", "envelope"])
def test_raw_dmesg_lines_shipped_without_boot_time_keep_their_spacing(pipeline, basis):
    """Raw ``[ mono]`` stamps in a Kafka value or an envelope, with no boot time known: the reference time (the
    append time, the shipper's read time) dates the value's last kernel stamp, as a file's mtime does, so the
    lines keep their spacing (a fresh-user trial saw the Kafka path give both lines the append time, the
    second one ``inherited``, while ``diagnose`` on the file kept them 0.13 s apart)."""
    import orjson

    text = ("[ 1843.308145] NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.\n"
            "[ 1843.439662] NVRM: The NVIDIA probe routine failed for 1 device(s).\n"
            "[ 1850.000000] IPv6: ADDRCONF(NETDEV_CHANGE): eth0: link becomes ready\n")
    ev = run(pipeline, text, basis=basis).events
    assert ev.column("ts_basis").to_pylist() == [basis, basis]
    assert ev.column("ts").cast("int64").to_pylist() == [T0 - 6_691_855, T0 - 6_560_338]
    details = [orjson.loads(d) for d in ev.column("details").to_pylist()]
    assert [d.get("ts_upper_bound") for d in details] == ([True, True] if basis == "kafka" else [None, None])
    # the line's own stamp is kept beside the bound: the explanation says it was counted back, not that the line
    # printed no time (a fresh-user trial: the demo said "the line printed none" of a raw dmesg line)
    assert [d.get("uptime_s") for d in details] == ([1843.308145, 1843.439662] if basis == "kafka" else [None, None])
    if basis == "kafka":
        b = run(pipeline, text, basis=basis)
        (inc,) = correlate(b.events, b.link_samples, b.topology, now_us=T0)
        assert "(its seconds since boot counted back from its Kafka record's time)" in inc["explanation"]


@pytest.mark.parametrize("basis", ["kafka", "envelope", "file"])
def test_stamps_that_would_count_past_the_reference_are_not_counted_back(pipeline, basis):
    """A capture that spans a reboot, or holds a garbled uptime, does not move its other lines: the last stamp
    dates the reference time, a line whose stamp is past it (before the reboot, garbled) is timed as a line
    without one, and a last stamp of more than ten years of uptime dates nothing (a break-it pass saw a double-bit
    error dated 81 days back, and good lines dated 2014, by a minimum over every line's count back)."""
    xid = "NVRM: Xid (PCI:0000:3b:00): {}, pid=1, name=python, GPU has fallen off the bus."
    reboot = (f"[7000000.100000] {xid.format(79)}\n[    5.000000] Linux version 5.15\n"
              f"[  120.000000] {xid.format(48)}\n[  150.000000] eth0: link up")
    ev = run(pipeline, reboot, basis=basis).events
    # the line before the reboot: at or before the last boot's start (test_a_capture_that_spans_reboots_…)
    assert ev.column("ts").cast("int64").to_pylist() == [T0 - 150_000_000, T0 - 30_000_000]
    garbled = f"[ 1000.000000] {xid.format(79)}\n[400000000.0] {xid.format(48)}\n[ 1001.000000] eth0: link up"
    ev = run(pipeline, garbled, basis=basis).events
    assert ev.column("ts").cast("int64").to_pylist() == [T0 - 1_000_000, T0 - 1_000_000]
    assert ev.column("ts_basis").to_pylist() == [basis, "inherited"]
    last = f"[ 1000.000000] {xid.format(79)}\n[400000000.0] eth0: link up"
    ev = run(pipeline, last, basis=basis).events
    assert ev.column("ts").cast("int64").to_pylist() == [T0]


def test_kernel_boots_splits_a_capture_where_its_stamps_start_again():
    """``kernel_boots``: (first line, largest stamp) of each boot where the raw stamps go back by more than a second;
    none for one boot, nor for stamps a little out of order (two CPUs' lines)."""
    data = (b"[  100.000000] a\nnoise without a stamp\n[  200.500000] b\n[    0.000000] Linux version 6.8\n"
            b"[    5.000000] c\n[   50.000000] d\nkernel: [ 9.0] not at a line start\n[    0.000000] Linux\n[ 3.0] e")
    assert kernel_boots(data) == [(0, 200.5), (3, 50.0), (7, 3.0)]
    assert kernel_boots(b"[    0.000000] Linux version 6.8\n[  12.0] a\n[  13.0] b") == []
    assert kernel_boots(b"[  12.000010] a\n[  12.000002] b\n[  13.0] c") == []
    assert kernel_boots(b"") == [] and kernel_boots(b"no stamps\nat all") == []
    # a boot's last line alone above the next boot's first (a grep of a serial console: "NVRM: (loading|Xid)") is a
    # reboot: it was read as one garbled stamp (a break-it pass)
    grep = b"[   12.3] NVRM: loading\n[ 5000.1] NVRM: Xid 79\n[   12.4] NVRM: loading\n[  300.0] NVRM: Xid 13\n"
    assert kernel_boots(grep) == [(0, 5000.1), (2, 300.0)]
    # a boot's largest stamp, not its last (two CPUs' lines 0.4 s apart, within a second)
    assert kernel_boots(b"[ 5000.512] a\n[ 5000.1] b\n[    0.0] Linux\n[  9.0] c") == [(0, 5000.512), (2, 9.0)]
    # the same boot dumped twice (dmesg >> file): its lines again, stamps and all, are no reboot; a real reboot
    # prints its first lines at 0.000000 the same, and differs past its first second
    boot = b"[    0.000000] Linux version 5.15.0-91-generic\n[    0.000000] BIOS-e820: usable\n[    1.234567] x\n"
    fault = b"[ 5000.100000] NVRM: Xid (PCI:0000:1b:00): 79\n"
    assert kernel_boots(boot + fault + boot + fault + b"[ 5010.0] NVRM: Xid 13\n") == []
    again = boot.replace(b"1.234567", b"1.198310")
    assert kernel_boots(boot + fault + again + b"[  60.0] NVRM: Xid 48\n") == [(0, 5000.1), (4, 60.0)]
    # the second dump after the ring buffer wrapped begins at a line the first may not hold, then repeats the boot's
    # own lines: no reboot (the Xid 79 was two incidents 2.5 h apart: a break-it pass)
    assert kernel_boots(boot + fault + b"[ 4000.000000] systemd[1]: something\n" + fault + b"[ 9000.0] usb\n") == []


@pytest.mark.parametrize("basis", ["kafka", "file"])
def test_a_capture_that_spans_reboots_dates_each_boot_before_the_next(pipeline, basis):
    """A serial console's log (or ``dmesg`` outputs appended to one file) holds several boots: only the last boot's
    stamps count back from the reference time; a line of an earlier boot was written before the next boot began, so
    it is counted back from that start, as an upper bound (``details.reboots_after``). Counted as one boot, the Xid 79
    that took the node down was dated inside the boot after it, and joined that boot's unrelated Xid 13 (a break-it
    pass)."""
    import orjson

    xid = "NVRM: Xid (PCI:0000:{}:00): {}, pid=1, name=python, {}"
    text = (f"[ 4990.000000] {xid.format('3b', 79, 'GPU has fallen off the bus.')}\n"
            f"[ 5001.000000] eth0: link down\n"
            f"[    0.000000] Linux version 5.15.0-91-generic\n"
            f"[  400.000000] {xid.format('86', 48, 'An uncorrectable double bit error (DBE) has been detected.')}\n"
            f"[  410.000000] eth0: link up\n"
            f"[    0.000000] Linux version 5.15.0-91-generic\n"
            f"[  300.000000] {xid.format('af', 13, 'Graphics SM Warp Exception')}\n"
            f"[  900.000000] systemd[1]: Started Daily apt download activities.\n")
    b = run(pipeline, text, basis=basis)
    ev = b.events
    last_boot = T0 - 900_000_000
    second_boot = last_boot - 410_000_000
    assert ev.column("ts").cast("int64").to_pylist() == [second_boot - 11_000_000, last_boot - 10_000_000,
                                                          last_boot + 300_000_000]
    assert ev.column("ts_basis").to_pylist() == [basis] * 3
    details = [orjson.loads(d) for d in ev.column("details").to_pylist()]
    assert [d.get("reboots_after") for d in details] == [2, 1, None]
    assert [d.get("ts_upper_bound") for d in details] == [True, True, True if basis == "kafka" else None]
    assert [d.get("uptime_s") for d in details] == [4990.0, 400.0, 300.0 if basis == "kafka" else None]
    # each boot's fault its own incident: none reports a fault of another boot
    incidents = correlate(b.events, b.link_samples, b.topology, now_us=T0)
    assert len(incidents) == 3
    xid79 = next(i for i in incidents if "Xid 79" in i["explanation"])
    assert "logged 2 reboots before the last boot: its seconds since boot counted back from the latest time the " \
           "next boot can have begun" in xid79["explanation"]
    assert not xid79["downstream"]


@pytest.mark.parametrize("gpu,after", [("86", 100), ("3b", 100), ("86", 60)])
def test_a_fault_soon_after_a_reboot_is_no_incident_of_the_boot_before(pipeline, gpu, after):
    """The next boot's fault a minute after it began is within the one-host windows (same host 120 s, same device
    900 s, same NVLink domain 60 s) of the earlier boot's last lines, dated at that start: one incident, "no single
    culprit" of both GPUs (a break-it pass: a serial console's log). Boots are kept apart: two incidents, the same GPU's too (it failed
    again after the reboot: a recurrence, not one fault)."""
    xid = "NVRM: Xid (PCI:0000:{}:00): {}, pid=1, name=python, {}"
    text = (f"[ 5000.123456] {xid.format('3b', 79, 'GPU has fallen off the bus.')}\n"
            "[ 5000.200000] NVRM: GPU 0000:3b:00.0: GPU has fallen off the bus.\n"
            "[    0.000000] Linux version 5.15.0-91-generic\n"
            f"[  {after}.000000] {xid.format(gpu, 48, 'An uncorrectable double bit error (DBE) has been detected.')}\n")
    b = run(pipeline, text, basis="file")
    incidents = correlate(b.events, b.link_samples, b.topology, now_us=T0)
    assert sorted(i["initiator"]["xid"] for i in incidents) == [48, 79]
    assert all(i["confidence"] >= 0.8 and not i["downstream"] for i in incidents)


@pytest.mark.parametrize("basis", ["file", "kafka"])
def test_an_unstamped_line_before_a_stamped_one_is_dated_by_it(pipeline, basis):
    """NCCL before 2.26 stamps no WARN; with no stamped line before it, the line was dated by its file's mtime (or
    the Kafka append time), hours late for a log copied after the job: a second incident beside the Xid 74 it
    reported (a fresh user's trial). A stamped line after it in the same log bounds it nearer: it was written then
    or before (``details.ts_next_line``, still an upper bound). A line after a stamped one inherits its time, as
    before."""
    import orjson

    t = datetime(2026, 12, 4, 9, 47, 31, 180000, tzinfo=timezone.utc)
    stamp = t.strftime("%m%d %H:%M:%S.%f")
    text = ("trn-h100-017:48213:48448 [2] include/alloc.h:111 NCCL WARN Cuda failure 'uncorrectable NVLink error "
            "detected during the execution'\n"
            "trn-h100-017:48213:48448 [2] NCCL INFO transport.cc:200 -> 1\n"
            f"[rank2]:[E{stamp} ProcessGroupNCCL.cpp:1515] [PG 0 (default_pg) Rank 2] Process group watchdog thread "
            "terminated with exception: CUDA error: uncorrectable NVLink error detected during the execution\n"
            "trn-h100-017:48213:48448 [2] include/alloc.h:111 NCCL WARN Cuda failure 'unspecified launch failure'")
    ev = run(pipeline, text, basis=basis).events
    at = int(t.timestamp() * 1_000_000)
    assert ev.column("ts").cast("int64").to_pylist() == [at, at, at]
    assert ev.column("ts_basis").to_pylist() == [basis, "line", "inherited"]
    details = [orjson.loads(d) for d in ev.column("details").to_pylist()]
    assert [d.get("ts_next_line") for d in details] == [True, None, None]
    assert [d.get("ts_upper_bound") for d in details] == [True, None, None]
    # a stamped line of another source (a bug report's bundle: the job's log, then the host's dmesg -T from its boot
    # six days before) bounds nothing: the WARN keeps the reference time (a break-it pass)
    bundle = text.split("\n")[0] + ("\n[Mon Nov 23 08:00:01 2026] NVRM: Xid (PCI:0000:3b:00): 13, pid=2222, "
                                    "name=python3, Graphics SM Warp Exception on (GPC 0, TPC 0, SM 0)")
    ev = run(pipeline, bundle, basis=basis).events
    assert ev.column("ts").cast("int64").to_pylist()[0] == T0
    assert "ts_next_line" not in orjson.loads(ev.column("details")[0].as_py())


def test_a_job_log_copied_hours_later_reports_the_fault_its_stamped_lines_place(pipeline):
    """The kind of the test above, end to end: a kernel log with an Xid 74 and a job's log copied four hours
    later whose first fault line, an unstamped NCCL WARN, comes before PyTorch's stamped watchdog line: one incident,
    the WARN downstream of the Xid 74 (it was a second critical incident, "at or before" the copy's time)."""
    t = datetime(2026, 12, 4, 9, 47, 31, tzinfo=timezone.utc)
    at = int(t.timestamp() * 1_000_000)
    kern = ("[Fri Dec  4 09:47:31 2026] NVRM: Xid (PCI:0000:52:00): 74, pid=48213, name=python, NVLink: fatal error "
            "detected on link 5(0x0, 0x0, 0x10000, 0x0, 0x0, 0x0, 0x0)")
    job = ("trn-h100-017:48213:48448 [2] include/alloc.h:111 NCCL WARN Cuda failure 'uncorrectable NVLink error "
           "detected during the execution'\n"
           "[rank2]:[E1204 09:47:31.180000506 ProcessGroupNCCL.cpp:1515] [PG 0 (default_pg) Rank 2] Process group "
           "watchdog thread terminated with exception: CUDA error: uncorrectable NVLink error detected during the "
           "execution")
    copied = at + 4 * 3600 * 1_000_000
    segs = [Segment(data=kern.encode(), origin="file:kern.log", stream="k", host="trn-h100-017", ref_ts=copied,
                    ref_basis="file", ingest_ts=copied),
            Segment(data=job.encode(), origin="file:train.log", stream="j", host="trn-h100-017", ref_ts=copied,
                    ref_basis="file", ingest_ts=copied)]
    b = pipeline.run(Decoded(segments=segs))
    (inc,) = correlate(b.events, b.link_samples, b.topology, now_us=copied)
    assert (inc["category"], inc["initiator"]["xid"]) == ("link_fault", 74)
    assert {e for p in inc["downstream"] for e in p["events"]} | set(inc["initiator"]["events"]) == \
        set(b.events.column("event_id").to_pylist())


@pytest.mark.parametrize("basis", ["file", "kafka"])
def test_terminal_colours_inside_a_line_are_no_part_of_it(pipeline, basis):
    """``dmesg --color=always -T`` colours the stamp, ``NVRM: `` and the message apart: the code between ``NVRM: ``
    and ``Xid`` hid the line from its signature, "Incidents: none" and exit 0 for a GPU off the bus (a break-it
    pass); a raw stamp in colour was no kernel stamp. Colour codes are removed before framing
    (``decode.strip_terminal_codes``): the events are those of the same lines without them."""
    plain = ("[Sun Nov 15 14:00:00 2026] NVRM: Xid (PCI:0000:3b:00): 79, pid=0, GPU has fallen off the bus.\n"
             "[ 5000.123456] NVRM: Xid (PCI:0000:86:00): 74, pid=1234, name=python, NVLink: fatal error detected on "
             "link 3(0x0, 0x0, 0x10000, 0x0, 0x0, 0x0, 0x0)\n[ 5010.000000] eth0: link up")
    coloured = ("\x1b[32m[Sun Nov 15 14:00:00 2026] \x1b[0m\x1b[33mNVRM: \x1b[0m\x1b[1;31mXid (PCI:0000:3b:00): 79, "
                "pid=0, GPU has fallen off the bus.\x1b[0m\n"
                "\x1b[32m[ 5000.123456] \x1b[0m\x1b[33mNVRM: \x1b[0mXid (PCI:0000:86:00): 74, pid=1234, name=python, "
                "NVLink: fatal error detected on link 3(0x0, 0x0, 0x10000, 0x0, 0x0, 0x0, 0x0)\n"
                "\x1b[32m[ 5010.000000] \x1b[0meth0: link up\x1b]0;title\x07")
    want = run(pipeline, plain, basis=basis).events.select(["ts", "ts_basis", "kind", "xid", "device", "link"])
    got = run(pipeline, coloured, basis=basis).events.select(["ts", "ts_basis", "kind", "xid", "device", "link"])
    assert got.to_pylist() == want.to_pylist()
    assert want.column("xid").to_pylist() == [79, 74] and want.column("ts").cast("int64")[1].as_py() == T0 - 9_876_544


@pytest.mark.parametrize("kern", ["[ 4990.000000] eth0: up\n[ 5000.100000] {xid}\n[ 5600.000000] eth0: down",
                                  "[ 5000.100000] {xid}\n[    0.000000] Linux version 5.15\n[  600.0] eth0: up"])
def test_a_peers_report_follows_the_peers_fault_its_file_dates(pipeline, kern):
    """Plain ``dmesg`` (raw stamps counted back from the file's time; or before a reboot, an upper bound) is the most
    common capture: the peer's unstamped "Got completion from peer 10.0.0.7" joined only a peer fault with a time of
    its own, so it was an ib_port incident of the healthy host beside the Xid 79 (a break-it pass)."""
    xid = "NVRM: Xid (PCI:0000:1b:00): 79, pid=1, name=python3, GPU has fallen off the bus."
    job = ("node07:2233:2300 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.7<0>\n"
           "node08:2234:2300 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.8<0>\n"
           "node08:2234:2301 [0] transport/net_ib.cc:1696 NCCL WARN NET/IB : Got completion from peer 10.0.0.7<43210> "
           "with status=12 opcode=0 len=0 vendor err 129 (Recv) localGid ::ffff:10.0.0.8 remoteGids::ffff:10.0.0.7")
    segs = [Segment(data=kern.format(xid=xid).encode(), origin="file:node07.dmesg", stream="k", host="node07",
                    ref_ts=T0, ref_basis="file", ingest_ts=T0),
            Segment(data=job.encode(), origin="file:train.log", stream="j", host="train", ref_ts=T0 + 1_200_000_000,
                    ref_basis="file", ingest_ts=T0 + 1_200_000_000)]  # copied 20 min after the kernel log
    b = pipeline.run(Decoded(segments=segs))
    (inc,) = correlate(b.events, b.link_samples, b.topology, now_us=T0 + 1_200_000_000)
    assert (inc["initiator"]["host"], inc["initiator"]["xid"]) == ("node07", 79)
    assert [(d["host"], d["relation"]) for d in inc["downstream"]] == [("node08", "peer_host")]


def test_an_envelope_time_that_is_no_time_is_not_counted_back_from(pipeline):
    """An envelope whose time is no time (1970) dates nothing: its raw stamp is timed by the arrival time, the
    envelope's time kept as rejected (as before counting back; a break-it pass saw it labelled ``envelope``)."""
    import orjson

    seg = Segment(data=b"[ 1843.308145] NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.",
                  origin="kafka:t/0/1#r0", stream="s", host="node07", ref_ts=0, ref_basis="envelope", ingest_ts=T0)
    (e,) = pipeline.run(Decoded(segments=[seg])).events.to_pylist()
    assert e["ts_basis"] == "kafka" and orjson.loads(e["details"])["envelope_ts_rejected"] == 0


def test_unstamped_line_timed_by_its_file_is_an_upper_bound(pipeline):
    t = run(pipeline, "node01:311:405 [0] transport/net_ib.cc:199 NCCL WARN NET/IB : mlx5_3:1 Got async error "
                      "event: port error", basis="file").events
    ev = t.to_pylist()
    assert ev[0]["ts_basis"] == "file" and t.column("ts").cast("int64").to_pylist() == [T0]
    import orjson

    assert orjson.loads(ev[0]["details"])["ts_upper_bound"] is True


@pytest.mark.parametrize("line, want", [
    # slurmstepd's own lines as srun relays them to the job's output: no stamp of the line's own, a time in the
    # message (chrisknewman/tusas#149; the STEPD line's stamp removed, as srun prints it)
    ("slurmstepd: error: *** STEP 4008.0 ON nid001277 CANCELLED AT 2023-12-05T07:16:01 DUE TO TIME LIMIT ***",
     "2023-12-05T07:16:01"),
    ("error: *** STEP 63532.0 STEPD TERMINATED ON cn106 AT 2020-12-14T09:44:56 DUE TO JOB NOT ENDING WITH SIGNALS ***",
     "2020-12-14T09:44:56"),
    ("slurmstepd: error: *** JOB 830329 CANCELLED AT 2018-08-06T17:21:44 DUE TO TIME LIMIT on n447 ***",
     "2018-08-06T17:21:44"),
    ("slurmstepd: error: *** STEP 4008.0 ON nid001277 CANCELLED AT Tuesday ***", None),  # not a time: its file's
])
def test_a_line_that_prints_its_own_time_in_its_message_takes_it(pipeline, line, want):
    """A signature's ``line_time`` group (an ISO 8601 time the message prints, read in the configured zone when
    it names none) times a line that has no stamp of its own: Slurm's cancel of a step was at its file's copy time,
    hours from the node's dmesg (a real-logs pass)."""
    (ev,) = run(pipeline, line, basis="file").events.to_pylist()
    if want is None:
        assert ev["ts_basis"] == "file"
    else:
        assert ev["ts_basis"] == "line" and ev["ts"] == datetime.fromisoformat(want).replace(tzinfo=timezone.utc)


_DCGMI_ROW = (b"| Warning                   | GPU 0GPU 0's NvLink link 0 is currently down   |\n"
              b"|                           | Run a field diagnostic on the GPU., GPU 0GPU   |\n"
              b"|                           | 0's NvLink link 1 is currently down Run a fie  |\n")


def test_a_segment_ending_with_its_line_end_counts_the_lines_it_holds(pipeline):
    """``Batch.lines`` counts lines as ``wc -l`` would for a file, and one per line of a one-line value: a
    file's last newline ends its last line, it does not start an empty one (``diagnose`` on a folder counted
    one line more per file than ingesting the same lines from Kafka)."""
    def seg(data: bytes, i: int) -> Segment:
        return Segment(data=data, origin=f"t:{i}", stream=f"s{i}", host="node07", ref_ts=T0, ref_basis="kafka",
                       ingest_ts=T0)

    for datas, want in (([b"a\nb\n"], 2), ([b"a\nb"], 2), ([b"a\n", b"b", b"c\n"], 3), ([b"e\n\n"], 2),
                        ([b"d\r\n", b"x\r"], 2), ([b"\n"], 1), ([b"a", b"", b"b\n"], 3),
                        ([_DCGMI_ROW, b"next\n"], 2)):  # a dcgmi row wrapped over 3 lines is one logical line
        got = pipeline.run(Decoded(segments=[seg(d, i) for i, d in enumerate(datas)])).lines
        assert got == want, (datas, got)


def test_rows_become_a_table_of_the_schema_and_stay_as_they_were():
    """``to_table``: a missing column is null, an unknown key ignored, ``details`` sorted JSON (an empty one
    null), schema metadata kept, the rows not modified; a schema of ``details`` alone keeps its rows."""
    import copy

    import pyarrow as pa

    from ingest.pipeline import to_table
    from schemas.events import EVENTS_SCHEMA

    rows = [{"event_id": "a", "ts": T0, "host": "node07", "link": 3, "details": {"z": 1, "a": "é"}, "extra": 1},
            {"event_id": "b", "details": {}}]
    before = copy.deepcopy(rows)
    t = to_table(rows, EVENTS_SCHEMA)
    assert rows == before and t.schema.equals(EVENTS_SCHEMA, check_metadata=True)
    got = t.select(["event_id", "host", "link", "details"]).to_pylist()
    assert got == [{"event_id": "a", "host": "node07", "link": 3, "details": '{"a":"é","z":1}'},
                   {"event_id": "b", "host": None, "link": None, "details": None}]
    only = pa.schema([pa.field("details", pa.string())])
    assert to_table([{"details": {"k": 2}}, {}], only).to_pylist() == [{"details": '{"k":2}'}, {"details": None}]


def _diagnosed(path, text: str):
    """``text`` written to ``path`` and diagnosed: ([(kind, host)] of its events, its incidents)."""
    from api.diagnose import diagnose_paths
    from schemas.settings import Settings

    path.write_text(text)
    _, batch, incidents = diagnose_paths([path], Settings())
    return [(e["kind"], e["host"]) for e in batch.events.to_pylist()], incidents


_WATCHDOG = ("[rank{rank}]:[E321 02:07:08.408271257 ProcessGroupNCCL.cpp:607] [Rank {rank}] Watchdog caught collective "
             "operation timeout: WorkNCCL(SeqNum=1580, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) "
             "ran for 600060 milliseconds before timing out.\n")


def test_a_line_without_a_host_in_a_file_takes_the_host_of_the_lines_before_it(tmp_path):
    """The file name is only a guess at the host (``worker3.log``): a line that names none (here PyTorch's
    NCCL error, after NCCL lines that print ``node01:pid:tid``) belongs to the host the file's earlier lines
    named, so the incident is one (the IB port fault with the NCCL error downstream), on node01. A Kafka key
    names the host itself: there the key is kept (tests/test_decode.py)."""
    error = ("RuntimeError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/NCCLUtils.hpp:268, unhandled system "
             "error (run with NCCL_DEBUG=INFO for details), NCCL version 2.21.5\n")
    events, incidents = _diagnosed(tmp_path / "worker3.log", (
        "[2025-09-17 15:23:34] node01:311:405 [0] transport/net_ib.cc:199 NCCL WARN NET/IB : mlx5_32:1 Got async "
        "error event: port error\n") + error)
    assert events == [("ib_port", "node01"), ("nccl_error", "node01")]
    (inc,) = incidents
    assert inc["initiator"]["host"] == "node01" and inc["initiator"]["kind"] == "ib_port"
    assert [d["host"] for d in inc["downstream"]] == ["node01"]
    # a file whose prefixes name several hosts (a job's aggregated log) says nothing of a line without one but by
    # its rank (next test), and a host a line's text names (nccl-tests' rank table: "on node02") is no claim on
    # the lines after it
    events, _ = _diagnosed(tmp_path / "job-123.log", (
        "node01:100:100 [0] NCCL INFO comm 0x1 rank 0 nranks 16 cudaDev 0 busId 1000 - Init COMPLETE\n"
        "node02:200:200 [0] NCCL INFO comm 0x2 rank 8 nranks 16 cudaDev 0 busId 1000 - Init COMPLETE\n"
        + _WATCHDOG.format(rank=5)))
    assert events == [("nccl_init", "node01"), ("nccl_init", "node02"), ("nccl_timeout", "job-123")]
    events, _ = _diagnosed(tmp_path / "node01.log", (
        "#  Rank  0 Group  0 Pid 587622 on node01 device  0 [0x21] NVIDIA H100 80GB HBM3\n"
        "#  Rank  2 Group  0 Pid 91234 on node02 device  0 [0x21] NVIDIA H100 80GB HBM3\n"
        "P2P is disabled between NVLINK connected GPUs 1 and 0. This should not be the case given their "
        "connectivity, and is probably due to a hardware issue. If you still want to proceed, you can set "
        "NCCL_IGNORE_DISABLED_P2P=1.\n"))
    assert events == [("nccl_init", "node01"), ("nccl_init", "node02"), ("nccl_p2p_fallback", "node01")]
    # a file whose lines name no host is the file name's
    assert _diagnosed(tmp_path / "node09.log", error)[0] == [("nccl_error", "node09")]


def _init(host: str, rank: int, nranks: int, comm: str = "0x7a3e55c1d2f90b14") -> str:
    """An NCCL ``Init COMPLETE`` line (formats.md §6) of ``host``."""
    return (f"{host}:{100 + rank}:{200 + rank} [{rank % 8}] NCCL INFO comm 0x55d0c8a1e2b0 rank {rank} nranks "
            f"{nranks} cudaDev {rank % 8} busId {18000 + rank % 8 * 1000} commId {comm} - Init COMPLETE\n")


def test_a_rank_line_of_a_jobs_aggregated_log_is_the_host_its_rank_ran_on(tmp_path):
    """Every rank's output in one file (a scheduler's job output, ``torchrun``): NCCL lines name their host
    (``host:pid:tid``), PyTorch's c10 lines only their global rank (``[rank8]:``). A rank line is the host the
    file's init lines of the largest communicator (the world's, whose ranks are the global ranks) place that
    rank on; a rank no such line places, or two hosts claim, keeps the file name."""
    world = _init("node01", 0, 16) + _init("node01", 1, 16) + _init("node02", 8, 16)
    events, _ = _diagnosed(tmp_path / "job-7.out", world + "".join(_WATCHDOG.format(rank=r) for r in (8, 1, 5)))
    assert events[3:] == [("nccl_timeout", "node02"), ("nccl_timeout", "node01"), ("nccl_timeout", "job-7")]
    # c10's rank prefix before glog's form (torch._logging; a glog build): the same (a fresh user's trial put every
    # rank on the file's name, and said the init lines were missing)
    glog = ("[rank{rank}]:E1130 03:22:01.518432 48210 ProcessGroupNCCL.cpp:616] [Rank {rank}] Watchdog caught "
            "collective operation timeout: WorkNCCL(SeqNum=58213, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
            "Timeout(ms)=600000) ran for 600002 milliseconds before timing out.\n")
    events, _ = _diagnosed(tmp_path / "job-7g.out", world + "".join(glog.format(rank=r) for r in (8, 1)))
    assert events[3:] == [("nccl_timeout", "node02"), ("nccl_timeout", "node01")]
    # a sub-communicator's ranks restart on every node (rank 0 of a tensor-parallel group on each): the world's
    # say where the global rank ran
    sub = _init("node02", 0, 8, "0x11") + _init("node03", 0, 8, "0x12")
    events, _ = _diagnosed(tmp_path / "job-8.out", sub + _init("node03", 0, 16) + _WATCHDOG.format(rank=0))
    assert events[-1] == ("nccl_timeout", "node03")
    # only sub-communicators logged: rank 0 is on two hosts, so the line says nothing of its host
    events, _ = _diagnosed(tmp_path / "job-9.out", sub + _WATCHDOG.format(rank=0))
    assert events[-1] == ("nccl_timeout", "job-9")
    # the job restarted on other hosts in the same file at the same size: two worlds, so the line says nothing
    events, _ = _diagnosed(tmp_path / "job-10.out", world + _init("node05", 8, 16, "0x99") + _WATCHDOG.format(rank=8))
    assert events[-1] == ("nccl_timeout", "job-10")
    # ... or restarted elastic on fewer hosts: a smaller world that came later, whose rank 0 is not the old world's
    # (a break-it pass: the old world put node03's timeouts on node01, a healthy host of the first attempt)
    later = "".join(_init("node03", r, 8, "0x2222").replace(f":{100 + r}:", f":{900 + r}:") for r in range(8))
    events, _ = _diagnosed(tmp_path / "job-11.out", world + later + _WATCHDOG.format(rank=0))
    assert events[-1] == ("nccl_timeout", "job-11")
    # PyTorch's send/recv pairs (pipeline stages: nranks 2, one comm per pair) with no world logged: their rank 1
    # is not global rank 1 (it moved a timeout of node01 to node02)
    pairs = "".join(_init("node01", 0, 2, f"0x{r:04x}") + _init("node02", 1, 2, f"0x{r:04x}") for r in range(4))
    events, _ = _diagnosed(tmp_path / "job-12.out", pairs + _WATCHDOG.format(rank=1))
    assert events[-1] == ("nccl_timeout", "job-12")
    # a c10 line of a rank the largest logged communicator does not hold: that one is no world
    events, _ = _diagnosed(tmp_path / "job-13.out", world + _WATCHDOG.format(rank=1) + _WATCHDOG.format(rank=16))
    assert events[-2:] == [("nccl_timeout", "job-13")] * 2
    # NDJSON records name their host in the envelope: kept, when their init lines are one host's (its own log)
    records = [{"host": "node01", "message": _init("node01", 1, 16).strip()},
               {"host": "node03", "message": _WATCHDOG.format(rank=1).strip()}]
    events, _ = _diagnosed(tmp_path / "job-14.ndjson", "".join(json.dumps(r) + "\n" for r in records))
    assert events == [("nccl_init", "node01"), ("nccl_timeout", "node03")]
    # ... but a job's aggregated log shipped under one host (its launcher's; a Kafka key alike) is placed as the
    # plain file is: the envelope names where it was collected (a fresh user's trial: every rank on the launcher)
    records = [{"host": "node09", "message": line} for line in (world + _WATCHDOG.format(rank=8)).splitlines()]
    events, _ = _diagnosed(tmp_path / "job-17.ndjson", "".join(json.dumps(r) + "\n" for r in records))
    assert events[-1] == ("nccl_timeout", "node02")
    from ingest.decode import decode_message
    from ingest.pipeline import Pipeline

    value = (world + "".join(_WATCHDOG.format(rank=r) for r in (8, 1))).encode()
    b = Pipeline().run(decode_message(value, topic="fleet.nccl", partition=0, offset=0, key=b"node09",
                                      timestamp_ms=1_774_058_828_000, headers=[]))
    assert b.events.column("host").to_pylist()[3:] == ["node02", "node01"]
    one = (_init("node09", 1, 16) + _WATCHDOG.format(rank=1)).encode()
    b = Pipeline().run(decode_message(_WATCHDOG.format(rank=8).encode() + one, topic="fleet.nccl", partition=0,
                                      offset=1, key=b"node09", timestamp_ms=1_774_058_828_000, headers=[]))
    assert set(b.events.column("host").to_pylist()) == {"node09"}  # one host's NCCL lines: its own log
    # the same job's output as Kubernetes wrote it (an MPI launcher pod): CRI lines, or docker's json-file records,
    # which name no host: the ranks' hosts as in plain text (the timeouts were on a host named after the file, and
    # CRI's stream tag hid c10's rank: a break-it pass)
    lines = (world + "".join(_WATCHDOG.format(rank=r) for r in (8, 1))).splitlines()
    cri = "".join(f"2026-03-21T02:07:0{i % 10}.000000000Z stderr F {line}\n" for i, line in enumerate(lines))
    events, _ = _diagnosed(tmp_path / "job-15.log", cri)
    assert events[3:] == [("nccl_timeout", "node02"), ("nccl_timeout", "node01")]
    docker = "".join(json.dumps({"log": line + "\n", "stream": "stderr", "time": "2026-03-21T02:07:08.5Z"}) + "\n"
                     for line in lines)
    events, _ = _diagnosed(tmp_path / "job-16.log", docker)
    assert events[3:] == [("nccl_timeout", "node02"), ("nccl_timeout", "node01")]


def test_an_aggregated_job_log_puts_every_ranks_timeout_downstream_of_the_fault(tmp_path):
    """The kind of input a fresh-user trial fed: the job's aggregated log (init lines of two hosts, the watchdog
    timeouts of ranks on both) beside one host's kernel log with the Xid 79 the collective hung on. The timeouts
    are their ranks' hosts', so they join the Xid over the communicator: one incident, not a second one about a
    host named after the job's file."""
    from api.diagnose import diagnose_paths
    from schemas.settings import Settings

    (tmp_path / "job").mkdir()
    (tmp_path / "job" / "rank-logs.txt").write_text(
        _init("gpu-a17", 0, 16) + _init("gpu-a17", 1, 16) + _init("gpu-a18", 8, 16)
        + "".join(_WATCHDOG.format(rank=r).replace("E321 02:07:08", "E1201 03:12:13") for r in (0, 1, 8)))
    (tmp_path / "gpu-a17.dmesg.log").write_text(
        "2026-12-01T03:02:11,548779+00:00 NVRM: Xid (PCI:0000:19:00): 79, pid=101, name=python3, GPU has fallen "
        "off the bus.\n")
    _, batch, incidents = diagnose_paths([tmp_path], Settings())
    assert sorted({(e["kind"], e["host"]) for e in batch.events.to_pylist()}) == [
        ("nccl_init", "gpu-a17"), ("nccl_init", "gpu-a18"), ("nccl_timeout", "gpu-a17"), ("nccl_timeout", "gpu-a18"),
        ("xid", "gpu-a17")]
    (inc,) = incidents
    assert (inc["initiator"]["host"], inc["initiator"]["xid"]) == ("gpu-a17", 79)
    assert sorted({d["host"] for d in inc["downstream"]}) == ["gpu-a17", "gpu-a18"]


def test_a_parallel_shells_output_keeps_each_hosts_lines_apart(tmp_path):
    """``pdsh -w node[07,12] dmesg -T | grep Xid`` prints each host's lines behind ``host: `` (formats.md §1.8):
    each line is its host's, at its own stamp, and two hosts' Xids two seconds apart are two incidents (they
    were one, on a host named after the file, timed by its mtime, the Xid 74 downstream of the Xid 79)."""
    from api.diagnose import diagnose_paths
    from schemas.settings import Settings

    path = tmp_path / "xids.txt"
    path.write_text(
        "node07: [Mon Nov 30 03:12:01 2026] NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python, GPU has fallen "
        "off the bus.\n"
        "node12: [Mon Nov 30 03:12:03 2026] NVRM: Xid (PCI:0000:18:00): 74, pid=2345, name=python, NVLink: fatal "
        "error detected on link 7(0x0, 0x0, 0x10000, 0x0, 0x0, 0x0, 0x0)\n")
    _, batch, incidents = diagnose_paths([path], Settings())
    got = [(e["host"], e["xid"], e["ts_basis"], e["ts"]) for e in batch.events.to_pylist()]
    assert got == [("node07", 79, "line", datetime(2026, 11, 30, 3, 12, 1, tzinfo=timezone.utc)),
                   ("node12", 74, "line", datetime(2026, 11, 30, 3, 12, 3, tzinfo=timezone.utc))]
    assert sorted((i["initiator"]["host"], i["initiator"]["xid"], len(i["downstream"])) for i in incidents) == [
        ("node07", 79, 0), ("node12", 74, 0)]


def test_a_stamp_more_than_a_day_after_its_arrival_is_not_its_time(pipeline):
    """A line stamped 2099 that reached Kafka today kept 2099: its incident, its page and the top of
    ``GET /incidents`` stayed open for ever (a break-it pass). More than a day after its arrival (Kafka append time,
    a file's mtime) a stamp is a clock set wrong or garbled, as one from 1970: its arrival time stands in, and
    ``details.ts_rejected`` keeps it. A host's clock an hour fast keeps its stamps (the correlator's skew handles
    it)."""
    xid = "NVRM: Xid (PCI:0000:{}:00): 79, pid=0, GPU has fallen off the bus."
    hour, day = 3600 * 1_000_000, 86400 * 1_000_000
    stamp = lambda us: datetime.fromtimestamp(us / 1e6, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    ev = _records(pipeline, [("n1", f"2099-01-01T00:00:00Z n1 kernel: " + xid.format("3b")),
                             ("n2", f"{stamp(T0 + hour)} n2 kernel: " + xid.format("3b")),
                             ("n3", f"{stamp(T0 + day + 1)} n3 kernel: " + xid.format("3b")),
                             ("n4", f"{stamp(T0 + day)} n4 kernel: " + xid.format("3b"))])
    got = [(e["host"], int(e["ts"].timestamp() * 1e6), e["ts_basis"], json.loads(e["details"]).get("ts_rejected"))
           for e in ev]
    assert got == [("n1", T0, "kafka", 4070908800000000), ("n2", T0 + hour, "line", None),
                   ("n3", T0, "kafka", T0 + day + 1), ("n4", T0 + day, "line", None)]


def test_an_envelope_time_a_day_ahead_gives_way_to_the_arrival_and_says_so(pipeline):
    """A record whose envelope time is more than a day after its arrival (a file's mtime) was timed by the file and
    still said ``ts_basis`` "envelope" (a break-it pass): the basis is the arrival's, an upper bound, as for an
    envelope time outside the calendar; ``details.envelope_ts_rejected`` keeps it (it was ``ts_rejected``, which the
    diagnose note says as the line's own stamp: a break-it pass)."""
    xid = "NVRM: Xid (PCI:0000:4c:00): 79, pid=1, GPU has fallen off the bus."
    seg = Segment(data=xid.encode(), origin="file:env.ndjson#r0", stream="s", host="h1", ref_ts=T0 + 2 * 86400 * 10**6,
                  ref_basis="envelope", ingest_ts=T0)
    (e,) = pipeline.run(Decoded(segments=[seg])).events.to_pylist()
    d = json.loads(e["details"])
    assert (int(e["ts"].timestamp() * 1e6), e["ts_basis"], d["envelope_ts_rejected"], d["ts_upper_bound"]) == (
        T0, "file", T0 + 2 * 86400 * 10**6, True), (e, d)
    assert "ts_rejected" not in d

def test_a_rank_of_another_process_group_keeps_its_rank_in_the_job(pipeline):
    """c10's "[rank218]:" prefix is the process's rank in the job; a line of a process group other than the default
    names the rank in that group ("[PG ID 6 … Rank 13]", NVIDIA-NeMo/Megatron-Bridge#2053). The event keeps the
    group's rank (its communicator's) and ``details.global_rank``; where both agree (the default group) there is no
    such detail. The watchdog's "-1" (no work completed yet) is read too."""
    line = ("[rank218]:[E108 16:19:09.618302713 ProcessGroupNCCL.cpp:2251] [PG ID 6 PG GUID "
            "623(PIPELINE_MODEL_PARALLEL_GROUP) Rank 13]  failure detected by watchdog at work sequence id: 1 PG status: "
            "last enqueued work: 1, last completed work: -1")
    default = line.replace("[rank218]", "[rank13]").replace("PG ID 6 PG GUID 623(PIPELINE_MODEL_PARALLEL_GROUP)",
                                                            "PG ID 0 PG GUID 0(default_pg)")
    ev = run(pipeline, line + "\n" + default).events.to_pylist()
    assert [(e["signature"], e["rank"], e["seq"]) for e in ev] == [("torch.watchdog_failure", 13, 1)] * 2
    details = [json.loads(e["details"] or "{}") for e in ev]
    assert [d.get("global_rank") for d in details] == [218, None]
    assert details[0]["last_completed"] == "-1"
    # the group is kept, not as the communicator: a GUID ("1", "623(…)") is the same in every job of the fleet, and
    # as ``comm`` it joined all jobs' lines of that group into one incident (the correlator benchmark)
    assert [(e["comm"], d.get("pg_guid")) for e, d in zip(ev, details)] == [
        (None, "623(PIPELINE_MODEL_PARALLEL_GROUP)"), (None, "0(default_pg)")]


def test_a_kernel_line_after_the_driver_loaded_carries_its_version(pipeline):
    """The driver prints its version when it loads, hours before an Xid; an Xid with a software cause asks for it
    (NVIDIA's INVESTIGATE_SW), and the incident asked for a line its own log held (open-gpu-kernel-modules#829).
    Later kernel lines of the stream carry it as ``details.driver_version``; lines before it do not."""
    text = "\n".join([
        "[    1.000000] NVRM: Xid (PCI:0000:02:00): 13, Graphics SM Warp Exception on (GPC 0, TPC 0, SM 0): x",
        "[    6.252567] NVRM: loading NVIDIA UNIX x86_64 Kernel Module  575.51.02  Mon May  5 11:36:21 UTC 2025",
        "[   60.000000] NVRM: Xid (PCI:0000:02:00): 120, pid=1, name=x, GSP task exception: load access page fault"])
    ev = run(pipeline, text, basis="file").events.to_pylist()
    assert [(e["xid"], json.loads(e["details"] or "{}").get("driver_version")) for e in ev] == [
        (13, None), (120, "575.51.02")]


def test_a_ray_driver_log_puts_each_node_s_lines_on_that_node(pipeline):
    """A Ray driver's log holds its own workers' lines and, with "ip=…", other nodes' (vllm-project/vllm#13535). A
    remote line is that node's: named by the host its worker's NCCL lines name under the same address, else by the
    address; it does not name the file's host, so the driver node's own lines stay on the file's host (a break-it
    pass: they went to the first remote node named)."""
    c10 = ("[rank{r}]:[E822 16:31:16.13193166{r} ProcessGroupNCCL.cpp:632] [Rank {r}] Watchdog caught collective "
           "operation timeout: WorkNCCL(SeqNum=5730, OpType=BROADCAST, Timeout(ms)=600000) ran for 600009 "
           "milliseconds before timing out.")
    text = "\n".join([
        "(RayWorkerWrapper pid=901, ip=10.0.0.2) " + c10.format(r=1),
        "(RayWorkerWrapper pid=77, ip=10.0.0.3) gpu3:77:90 [1] NCCL INFO comm 0x5581 rank 2 nranks 3 cudaDev 1 "
        "busId 1b000 commId 0xabc123 - Init COMPLETE",
        "(RayWorkerWrapper pid=77, ip=10.0.0.3) " + c10.format(r=2),
        "(RayWorkerWrapper pid=55) " + c10.format(r=0),
        "RuntimeError: CUDA error: uncorrectable ECC error encountered"])
    seg = Segment(data=text.encode(), origin="head.log", stream="head.log", host="head", ref_ts=T0, ref_basis="file",
                  ingest_ts=T0)  # a file: its name is only a guess at its host
    ev = pipeline.run(Decoded(segments=[seg])).events.to_pylist()
    seg_host = "head"
    assert [(e["rank"], e["host"]) for e in ev if e["signature"] == "torch.watchdog_timeout"] == [
        (1, "10.0.0.2"), (2, "gpu3"), (0, seg_host)]
    assert [e["host"] for e in ev if e["signature"] == "cuda.ecc_uncorrectable"] == [seg_host]
    # another node that takes the address over later (another worker process) is named by its own NCCL lines
    later = ("(RayWorkerWrapper pid=88, ip=10.0.0.3) gpu9:88:99 [0] NCCL INFO comm 0x7781 rank 1 nranks 2 cudaDev 0 "
             "busId 1b000 commId 0xdef456 - Init COMPLETE\n(RayWorkerWrapper pid=88, ip=10.0.0.3) "
             + c10.format(r=1).replace("16:31:16", "21:31:16"))
    seg = Segment(data=(text + "\n" + later).encode(), origin="head.log", stream="head.log", host="head", ref_ts=T0,
                  ref_basis="file", ingest_ts=T0)
    ev = pipeline.run(Decoded(segments=[seg])).events.to_pylist()
    assert [(e["rank"], e["host"]) for e in ev if e["signature"] == "torch.watchdog_timeout"] == [
        (1, "10.0.0.2"), (2, "gpu3"), (0, seg_host), (1, "gpu9")]


def test_a_record_that_names_its_host_keeps_it_before_talos_address(pipeline):
    """talosctl's "192.168.11.119: kern: …" names the node in a file of several nodes' lines; a Kafka record whose key
    or envelope names the host keeps that name (a break-it pass: the Xid and the NVML line of one GPU, one with the
    address and one without, became two hosts)."""
    line = ("192.168.11.119: kern: warning: [2026-04-22T21:26:20.599716692Z]: NVRM: Xid (PCI:0000:48:00): 79, "
            "pid='<unknown>', name=<unknown>, GPU has fallen off the bus.")
    ev = run(pipeline, line).events.to_pylist()  # a Kafka segment of host node07
    assert [(e["host"], json.loads(e["details"])["source_addr"]) for e in ev] == [("node07", "192.168.11.119")]
    seg = Segment(data=line.encode(), origin="talos.log", stream="talos.log", host="talos", ref_ts=T0,
                  ref_basis="file", ingest_ts=T0)  # a file: its name is only a guess
    assert [e["host"] for e in pipeline.run(Decoded(segments=[seg])).events.to_pylist()] == ["192.168.11.119"]


def test_an_address_where_a_syslog_header_puts_the_host_names_it_unless_the_record_does(pipeline):
    """A central syslog server's file names each machine by its address when it has no name for it: four machines
    (2001:db8::11 – ::13, 10.1.2.3) were one host, "2001" or the file's name (a break-it pass). In a file the address
    is the host; a Kafka record whose key names the host keeps that name, the address kept as ``source_addr``."""
    lines = ["Nov 29 03:10:00 2001:db8::11 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=0, GPU has fallen off the bus.",
             "Nov 29 03:10:05 2001:db8::12 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=0, GPU has fallen off the bus.",
             "Nov 29 03:10:10 10.1.2.3 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=0, GPU has fallen off the bus."]
    seg = Segment(data="\n".join(lines).encode(), origin="messages", stream="messages", host="messages", ref_ts=T0,
                  ref_basis="file", ingest_ts=T0)
    got = pipeline.run(Decoded(segments=[seg])).events.to_pylist()
    assert [e["host"] for e in got] == ["2001:db8::11", "2001:db8::12", "10.1.2.3"]
    ev = run(pipeline, lines[2]).events.to_pylist()  # a Kafka segment of host node07
    assert [(e["host"], json.loads(e["details"])["source_addr"]) for e in ev] == [("node07", "10.1.2.3")]


def test_a_line_without_a_host_takes_the_one_host_its_files_nccl_lines_named(pipeline):
    """A rank's timeout after a page of NCCL INFO lines that no signature reads ("[Service thread] Connection closed
    by localRank 3") took the file's name as its host, though every NCCL prefix before it named train-m-0 (a
    real-logs pass on modelscope/FunASR#2006). The NCCL lines before it name its host when they all name one, and so
    do the NCCL lines after it when all of the file's name one (NVIDIA/Megatron-LM#735: a container's "[rank2]:"
    timeout before its process's NCCL lines went to the file's name, its peers' to the container); two hosts' lines
    before it, or two in a file whose lines are all after it, leave the file's name."""
    info = "train-m-0:14051:14895 [0] NCCL INFO [Service thread] Connection closed by localRank 3"
    stop = ("[rank11]:[E ProcessGroupNCCL.cpp:1537] [PG 1 Rank 11] Timeout at NCCL work: 15734, last enqueued NCCL "
            "work: 15735, last completed NCCL work: 15733.")

    def hosts(text):
        seg = Segment(data=text.encode(), origin="trainm0.log", stream="trainm0.log", host="trainm0", ref_ts=T0,
                      ref_basis="file", ingest_ts=T0)
        return [e["host"] for e in pipeline.run(Decoded(segments=[seg])).events.to_pylist()]

    assert hosts("\n".join([info, info, stop])) == ["train-m-0"]
    assert hosts("\n".join([stop, info])) == ["train-m-0"]
    assert hosts("\n".join([info, info.replace("train-m-0", "train-m-1"), stop])) == ["trainm0"]
    assert hosts("\n".join([stop, info, info.replace("train-m-0", "train-m-1")])) == ["trainm0"]
    # a kernel line is no container's: a node's dmesg, then its job's output, in one file (a break-it pass)
    xid = "[Fri Dec  4 10:00:00 2026] NVRM: Xid (PCI:0000:18:00): 79, pid=0, GPU has fallen off the bus."
    assert hosts("\n".join([xid, info, stop])) == ["trainm0", "train-m-0"]
    # a local Ray worker's NCCL lines, "(pid=34272) host:pid:tid …", after the driver's exception
    # (ray-project/ray#16979: the RuntimeError went to the file's name, its cause, the worker's P2P failure, to the
    # host: a real-logs pass)
    exc = ("RuntimeError: NCCL error in: /opt/conda/torch/lib/c10d/ProcessGroupNCCL.cpp:784, unhandled cuda error, "
           "NCCL version 2.7.8")
    ray = "(pid=34272) train-m-0:34272:34565 [0] NCCL INFO threadThresholds 8/8/64 | 32/8/64 | 8/8/64"
    assert hosts("\n".join([exc, ray])) == ["train-m-0"]
    assert hosts("\n".join([exc, ray.replace("(pid=34272)", "(pid=34272, ip=10.0.0.2)")])) == ["trainm0"]


def test_a_name_that_is_no_host_name_names_no_files_host(pipeline):
    """A syslog line whose host is 300 characters is refused; the raw dmesg line after it, which names no host, took
    that name as the file's and was refused too, its Xid 79 lost (a break-it pass): it is the file's (node11)."""
    text = ("Nov 30 03:09:00 " + "a" * 300 + " kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=0, GPU has fallen off the "
            "bus.\n[   12.3] NVRM: Xid (PCI:0000:5e:00): 79, pid=0, GPU has fallen off the bus.")
    seg = Segment(data=text.encode(), origin="file:node11.log", stream="f", host="node11", ref_ts=T0,
                  ref_basis="file", ingest_ts=T0)
    b = pipeline.run(Decoded(segments=[seg]))
    assert [(e["host"], e["device"]) for e in b.events.to_pylist()] == [("node11", "0000:5e:00.0")]


def test_an_exception_line_takes_the_time_of_its_tracebacks_stamped_header(pipeline):
    """sgl-project/sglang#3460: "[2025-02-09 21:23:00 TP2] Scheduler hit an exception: Traceback (most recent call
    last):", the frames, then "RuntimeError: NCCL error: unhandled system error": the exception line printed no time
    and was timed by its file's modification time. It is of the stamped record. A line after a later stamped hit, or
    far below the header, is not."""
    head = "[2025-02-09 21:23:00 TP2] Scheduler hit an exception: Traceback (most recent call last):"
    frames = ['  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 1787, in run',
              '    raise RuntimeError(f"NCCL error: {error_str}")']
    exc = "RuntimeError: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details)"

    def times(text: str, header: str = "sglang.scheduler_exception") -> list[tuple[int, str]]:
        """The events' (time, basis), but the header's own (SGLang's scheduler exception is a catalog entry)."""
        seg = Segment(data=text.encode(), origin="file:node1.log", stream="f", host="node1", ref_ts=T0,
                      ref_basis="file", ingest_ts=T0)
        return [(e["ts"], e["ts_basis"]) for e in pipeline.run(Decoded(segments=[seg])).events.to_pylist()
                if e["signature"] != header]

    header_ts = datetime(2025, 2, 9, 21, 23, tzinfo=timezone.utc)
    assert times("\n".join([head, *frames, exc])) == [(header_ts, "inherited")]
    assert times("\n".join([head, *frames, exc]), header="") == [(header_ts, "line"), (header_ts, "inherited")]
    # the logger's line before a bare "Traceback" header stamps it too
    plain = "2025-02-09 21:23:00,123 ERROR scheduler: exception in the loop"
    assert times("\n".join([plain, "Traceback (most recent call last):", *frames, exc])) == [
        (header_ts.replace(microsecond=123_000), "inherited")]
    # more than TRACEBACK_LINES below its header: the file's time, as before (a header no catalog entry reads: below
    # a recognised stamped line, a hit takes that line's time however far, as any unstamped hit does)
    quiet = head.replace("Scheduler hit an exception", "Exception in the event loop")
    far = times("\n".join([quiet, *frames * 150, exc]))
    assert far[0][1] == "file", far
    # the words inside lines, more often than TRACEBACK_WORDS_TRIED between the header and the exception: the header
    # is still found (the segment's headers read at once); and none is taken where the words end no line (a break-it
    # pass: 5,000 such lines took 36 s)
    inline = "  worker 3: Traceback (most recent call last): File x.py | RuntimeError: boom"
    assert times("\n".join([head, *[inline] * 12, *frames, exc])) == [(header_ts, "inherited")]
    assert times("\n".join([*[inline] * 12, exc]))[0][1] == "file"


def test_a_line_without_a_time_takes_the_nearest_stamped_line_above_it_recognised_or_not(pipeline):
    """sgl-project/sglang#3204: the logger's stamped lines ("[2025-01-29 08:52:44 TP2] Using default MoE config …"),
    none a fault, then "RuntimeError: CUDA error: uncorrectable ECC error encountered" with no time: it was timed by
    its file's modification time, an incident of its own years after the Xid 94 of that minute. Any stamped line above
    it dates it (a logger's, Python logging's, syslog's); a raw kernel stamp, a clock without a day or a line more than
    STAMP_LINES above do not, nor does a stamped line above a nearer hit that gave a time."""
    from ingest.assemble import STAMP_LINES

    ecc = "RuntimeError: CUDA error: uncorrectable ECC error encountered"
    noise = "frame #1: <unknown function> + 0xe4271b (0x79eb37e4271b in /usr/lib/libtorch_cuda.so)"
    t = datetime(2025, 1, 29, 8, 52, 44, tzinfo=timezone.utc)

    def times(*lines: str) -> list[tuple[datetime, str]]:
        return [(e["ts"], e["ts_basis"]) for e in _file_events(pipeline, "\n".join(lines))]

    moe = "[2025-01-29 08:52:44 TP2] Using default MoE config. Performance might be sub-optimal!"
    assert times("[2025-01-29 08:52:43 TP5] Using default MoE config.", moe, ecc) == [(t, "inherited")]
    assert times("2025-01-29 08:52:44,123 - root - INFO - loading weights", noise, noise, ecc) == [
        (t.replace(microsecond=123_000), "inherited")]
    assert times("2025-01-29T08:52:44+00:00 node1 python[311]: serving", ecc) == [(t, "inherited")]
    # the nearest of several, even when another stamped line is further up
    assert times("[2025-01-29 07:00:00 TP2] start", moe, noise, ecc) == [(t, "inherited")]
    file_time = datetime.fromtimestamp(T0 / 1e6, timezone.utc)
    for above in ("[  430.123456] eth0: link up", "12:00:01 worker started"):
        assert times(above, ecc) == [(file_time, "file")], above
    # not a stamp without a year (syslog's, glog's: its year is its dated neighbours', resolve_times), not a data row a
    # program printed (no word after the date), not across a progress bar's redraws (break-it passes)
    for above in ("Jan 29 08:52:44 node1 python[311]: serving", "E0129 08:52:44.123000 311 server.cc:10] serving",
                  "2012-01-01 02:00:00   0.5   0.3   1.2", moe + "\r 45%|####5 | 450/1000\r 99%|#########9|"):
        assert times(above, ecc) == [(file_time, "file")], above
    assert times(moe, *[noise] * STAMP_LINES, ecc) == [(file_time, "file")]
    assert times(moe, *[noise] * (STAMP_LINES - 1), ecc) == [(t, "inherited")]
    # a hit with its own time nearer than the stamped line: that hit's time, as before
    xid = "[Wed Jan 29 08:52:50 2025] NVRM: Xid (PCI:0000:52:00): 94, pid=2211, name=python3, Contained: SM"
    assert times(moe, xid, noise, ecc)[1] == (t.replace(second=50), "inherited")


def test_nvidia_smi_table_rows_behind_a_collectors_header_are_read_as_bare_ones(pipeline):
    """The nvidia-smi table as a DaemonSet's CRI lines (``kubectl logs --timestamps``) or behind syslog's header gave no
    event: its row patterns were anchored at the row's ``|`` (a break-it pass). The same GPUs read ERR! either way."""
    table = (_SMI_HEAD
             + "|   0  NVIDIA H100 80GB HBM3          On  |   00000000:18:00.0 Off |                    0 |\n"
             + "|   1  NVIDIA H100 80GB HBM3          On  |   00000000:2A:00.0 Off |                  N/A |\n"
             + "| ERR!  ERR!  ERR!             ERR! / ERR! |  4MiB /  81559MiB |    ERR!      Default |\n"
             + "|   2  NVIDIA H100 80GB HBM3          On  |   00000000:3A:00.0 Off |                 ERR! |\n")
    def smi(text: str) -> list[tuple[str, str]]:
        return [(e["device"], e["signature"]) for e in _file_events(pipeline, text)
                if e["signature"].startswith("nvml.smi")]

    bare = smi(table)
    assert bare == [("0000:2a:00.0", "nvml.smi_gpu_err_fields"), ("0000:3a:00.0", "nvml.smi_gpu_err")]
    for header in ("2026-12-01T03:12:00.123456789Z stdout F ", "Dec  1 03:12:00 node07 nvidia-smi[42]: "):
        text = "".join(header + row + "\n" for row in table.splitlines())
        assert smi(text) == bare, header


def test_nvidia_smi_q_clocks_event_reasons_are_of_their_sections_gpu(pipeline):
    """nvidia-smi -q's "HW Power Brake Slowdown : Active" under "GPU 00000000:1E:00.0" (a V100 held at 382 MHz by a
    server's BMC, l4rz/reverse-engineering-dell-idrac-to-get-rid-of-gpu-throttling): no event before; it is that
    GPU's, and a reason that is not Active, or the software power cap, is none."""
    text = ("GPU 00000000:1E:00.0\n    Product Name                    : Tesla V100-SXM2-32GB\n"
            "    Clocks Throttle Reasons\n        SW Power Cap                      : Active\n"
            "        HW Slowdown                       : Active\n"
            "            HW Thermal Slowdown           : Not Active\n"
            "            HW Power Brake Slowdown       : Active\nGPU 00000000:3B:00.0\n"
            "    Clocks Event Reasons\n        HW Thermal Slowdown               : Active\n")
    got = [(e["device"], json.loads(e["details"])["clocks_reason"]) for e in _file_events(pipeline, text)]
    assert got == [("0000:1e:00.0", "HW Slowdown"), ("0000:1e:00.0", "HW Power Brake Slowdown"),
                   ("0000:3b:00.0", "HW Thermal Slowdown")]


def test_clocks_without_a_date_are_dated_in_their_logs_order(pipeline):
    """Clock lines ("09:10:00  NVRM: …") were dated one by one from their file's time: written at 10:30, a log of
    09:10 then 11:45 put the 11:45 line 21 hours before the first; a clock line among fully stamped lines took the
    file's day, 14 days from them (a break-it pass). The last clock line takes the file's day, each earlier one the
    latest at or before the next; beside a dated line, the day nearest it; the explanation says the day is not the
    line's."""
    def run_(text: str, ref: datetime) -> list[tuple[datetime, str]]:
        ts = int(ref.timestamp() * 1_000_000)
        seg = Segment(data=text.encode(), origin="file:node1.log", stream="f", host="node1", ref_ts=ts,
                      ref_basis="file", ingest_ts=ts)
        return [(e["ts"], json.loads(e["details"]).get("ts_day_from"))
                for e in pipeline.run(Decoded(segments=[seg])).events.to_pylist()]

    xid = "{t}  NVRM: Xid (PCI:0000:{bus}:00): {x}, pid=1, name=python"
    log = "\n".join([xid.format(t="09:10:00", bus="1a", x=79), xid.format(t="11:45:00", bus="1b", x=74)])
    ref = datetime(2026, 12, 5, 10, 30, tzinfo=timezone.utc)
    assert run_(log, ref) == [(datetime(2026, 12, 4, 9, 10, tzinfo=timezone.utc), "file"),
                              (datetime(2026, 12, 4, 11, 45, tzinfo=timezone.utc), "file")]
    # across midnight, in order: the day before for the lines before it
    log = "\n".join([xid.format(t="23:59:58", bus="1a", x=79), xid.format(t="00:00:03", bus="1b", x=74)])
    assert [t for t, _ in run_(log, ref)] == [datetime(2026, 12, 4, 23, 59, 58, tzinfo=timezone.utc),
                                              datetime(2026, 12, 5, 0, 0, 3, tzinfo=timezone.utc)]
    # beside a dated line: its day
    log = "\n".join(["2026-11-20T10:00:00Z node1 kernel: NVRM: Xid (PCI:0000:1c:00): 48, pid=1",
                     xid.format(t="10:00:05", bus="1b", x=74)])
    assert run_(log, ref)[1] == (datetime(2026, 11, 20, 10, 0, 5, tzinfo=timezone.utc), "line")
    # more than 12 h after the dated line before it: the same day, after it (it was the day before, "earliest")
    log = "\n".join(["2026-11-20T08:00:00Z node1 kernel: NVRM: Xid (PCI:0000:1c:00): 13, pid=1",
                     xid.format(t="21:30:00", bus="1b", x=79)])
    assert run_(log, ref)[1][0] == datetime(2026, 11, 20, 21, 30, tzinfo=timezone.utc)
    # two writers' clocks 10 minutes apart, interleaved: one day, not a day lost per step back (a break-it pass)
    lines = [xid.format(t=f"{10 if k % 2 else 9}:{(k // 2) + (0 if k % 2 else 50):02d}:00", bus="1a", x=31)
             for k in range(20)]
    days = {t.date() for t, _ in run_("\n".join(lines), datetime(2026, 12, 3, 11, tzinfo=timezone.utc))}
    assert days == {datetime(2026, 12, 3).date()}, days


def test_a_wrappers_lines_alone_move_with_the_shift_c10s_stamps_gave(pipeline):
    """"2025-06-24 17:29:06  [rank0]:[E624 09:29:06…]" takes c10's time (the wrapper's is another zone's); the
    wrapper's own line after it, "2025-06-24 17:29:07  RuntimeError: NCCL error: …", stayed 8 hours away (a break-it
    pass): it moves by the same whole hours."""
    text = ("2025-06-24 17:29:06  [rank0]:[E624 09:29:06.123456789 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught "
            "collective operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
            "Timeout(ms)=600000) ran for 600026 milliseconds before timing out.\n"
            "2025-06-24 17:29:07  RuntimeError: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for "
            "details)")
    got = [e["ts"] for e in _file_events(pipeline, text)]
    assert got == [datetime(2025, 6, 24, 9, 29, 6, 123456, tzinfo=timezone.utc),
                   datetime(2025, 6, 24, 9, 29, 7, tzinfo=timezone.utc)], got


def _file_events(pipeline, text: str) -> list[dict]:
    """The events of ``text`` read as the file node1.log written at ``T0``."""
    seg = Segment(data=text.encode(), origin="file:node1.log", stream="f", host="node1", ref_ts=T0,
                  ref_basis="file", ingest_ts=T0)
    return pipeline.run(Decoded(segments=[seg])).events.to_pylist()


_SMI_HEAD = ("| GPU  Name                 Persistence-M | Bus-Id        Disp.A | Volatile Uncorr. ECC |\n"
             "|=========================================+======================+======================|\n")


@pytest.mark.parametrize(("rows", "want"), [
    # driver 535's table (NVIDIA/dcgm-exporter#313): the first row reads N/A, the second ERR! -> the first row's GPU
    (["|   0  NVIDIA A10G                    On  | 00000000:00:16.0 N/A |                  N/A |",
      "|ERR!  ERR! ERR!               N/A /  N/A |      0MiB / 23028MiB |     N/A      Default |",
      "|   1  NVIDIA A10G                    On  | 00000000:00:17.0 Off |                    0 |",
      "|  0%   28C    P8               9W / 300W |      0MiB / 23028MiB |      0%      Default |"],
     [("nvml.smi_gpu_err_fields", 0, "0000:00:16.0")]),
    # every field ERR! (NVIDIA/gpu-operator#559): the first row's report, not a second one of its next row
    (["|   0  ERR!                On   | 00000000:19:00.0 Off |                 ERR! |",
      "|ERR!  ERR! ERR!    ERR! / ERR! |      0MiB / 46068MiB |    ERR!      Default |"],
     [("nvml.smi_gpu_err", 0, "0000:19:00.0")]),
    # a second row with no first row above it names no GPU, and is still reported
    (["|ERR!  ERR! ERR!               N/A /  N/A |      0MiB / 23028MiB |     N/A      Default |"],
     [("nvml.smi_gpu_err_fields", None, None)]),
])
def test_an_nvidia_smi_row_of_err_is_the_gpu_of_the_row_above(pipeline, rows, want):
    """A GPU in error in nvidia-smi's table: its second row's ERR! (temperature, performance state) is the GPU its
    first row names; once per GPU."""
    got = [(e["signature"], e["gpu_index"], e["device"]) for e in _file_events(pipeline, _SMI_HEAD + "\n".join(rows))]
    assert got == want


def test_aws_ofi_nccl_without_efa_is_one_warning_not_an_init_failure(pipeline):
    """aws-ofi-nccl on an instance without EFA (aws/deep-learning-containers#2675): "Only EFA provider is supported"
    then "aws-ofi-nccl initialization failed", an error incident with EFA repair advice; harmless there (the
    maintainers). One warning per process; another process's init failure stays its own."""
    text = ("algo-1:249:249 [0] ofi_init:1288 NCCL WARN NET/OFI Only EFA provider is supported\n"
            "algo-1:249:249 [0] ofi_init:1339 NCCL WARN NET/OFI aws-ofi-nccl initialization failed\n"
            "algo-1:250:250 [1] ofi_init:1339 NCCL WARN NET/OFI aws-ofi-nccl initialization failed\n")
    got = [(e["signature"], e["severity"], e["pid"]) for e in _file_events(pipeline, text)]
    assert got == [("nccl.ofi.no_efa", "warning", 249), ("nccl.ofi.init_failed", "error", 250)]
    # the same pid a month later (a container's pids repeat) is another start, its failure its own (a break-it pass)
    text = ("2026-11-01T10:00:00Z node51:57:57 [0] ofi_init:1288 NCCL WARN NET/OFI Only EFA provider is supported\n"
            "2026-11-30T10:00:00Z node51:57:57 [0] ofi_init:1339 NCCL WARN NET/OFI aws-ofi-nccl initialization "
            "failed\n")
    assert [e["signature"] for e in _file_events(pipeline, text)] == ["nccl.ofi.no_efa", "nccl.ofi.init_failed"]


def test_the_drivers_two_lines_of_one_rm_init_failure_are_one_event_with_its_code(pipeline):
    """"rm_init_adapter failed, device minor number 0" and "RmInitAdapter failed! (0x22:0x56:884)" of one GPU, in
    either order, are one failure: one event with the code, whose stage 0x22 (the PCI memory windows) gives the BIOS
    advice, not an RMA (NVIDIA/open-gpu-kernel-modules#862, a real-logs pass). Another GPU's stays its own."""
    a = "Jul 01 22:55:07 gpu kernel: NVRM: GPU 0000:01:00.0: rm_init_adapter failed, device minor number 0"
    b = "Jul 01 22:55:07 gpu kernel: NVRM: GPU 0000:01:00.0: RmInitAdapter failed! (0x22:0x56:884)"
    c = "Jul 01 22:55:07 gpu kernel: NVRM: GPU 0000:02:00.0: RmInitAdapter failed! (0x25:0x65:1589)"
    for text in (f"{a}\n{b}\n{c}", f"{b}\n{a}\n{c}"):
        got = [(e["device"], json.loads(e["details"]).get("rm_stage"), json.loads(e["details"]).get("minor"))
               for e in _file_events(pipeline, text)]
        assert got == [("0000:01:00.0", "0x22", "0"), ("0000:02:00.0", "0x25", None)], text


@pytest.mark.parametrize(("line", "year"), [
    # dockerd's syslog line over logrus' own full stamp (NVIDIA/dcgm-exporter#319): the stamp's year, not the file's
    ('Apr 30 21:13:04 node1 dockerd[10261]: time="2024-04-30T21:13:04.829815111Z" level=error '
     'msg="nvidia-container-cli: detection error: nvml error: unknown error: unknown"', 2024),
    # a date of another day in the message is no stamp of the line: the file's year
    ("Apr 30 21:13:04 node1 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=x, cert valid to 2031-01-01T00:00:00Z",
     2026),
    # ... nor a date of the same day further in the message (a second break-it pass: a JSON record's "lastSuccess"
    # dated the whole file a year off)
    ('Apr 30 21:13:04 node1 agent[7]: {"level":"error","lastSuccess":"2025-04-30T21:12:00Z",'
     '"msg":"nvidia-container-cli: detection error: nvml error: unknown error"}', 2026),
    # a JSON record's own time field wherever it stands: logrus' JSON formatter sorts its keys ("time" last), zap
    # writes "ts" second, in epoch seconds (a third break-it pass: two years off)
    ('Apr 30 21:13:04 node1 agent[7]: {"level":"fatal","msg":"nvidia-container-cli: detection error: nvml error: '
     'unknown error","time":"2024-04-30T21:13:04Z"}', 2024),
    ('Apr 30 21:13:04 node1 agent[7]: {"level":"fatal","ts":1714511584.123,"msg":"nvidia-container-cli: detection '
     'error: nvml error: unknown error"}', 2024),
])
def test_a_year_less_header_takes_the_year_of_its_messages_own_stamp(pipeline, line, year):
    (ev,) = _file_events(pipeline, line)
    assert ev["ts"].year == year


def test_a_messages_zoned_stamp_under_a_zoneless_header_gives_the_instant_and_moves_the_header_lines(pipeline):
    """rsyslog's header ("Apr 30 21:13:04 node1 …") has no year and no zone; logrus' ``time="…+11:00"`` in the message
    says both. The header's year came from the message's stamp but its time of day stayed, read in the decode zone
    (UTC): a line 11 hours from the instant its own stamp says, and from the kernel lines of the same header beside
    it that print no stamp of their own (a leftovers pass). Whole hours apart, the message's stamp gives the instant
    and the segment's header-only lines move by as much; a stamp seconds from the header leaves it as it was."""
    text = ('Apr 30 21:13:04 node1 dockerd[10261]: time="2024-04-30T21:13:04.829815111+11:00" level=error '
            'msg="nvidia-container-cli: detection error: nvml error: unknown error: unknown"\n'
            "Apr 30 21:13:05 node1 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=x, GPU has fallen off the bus.")
    got = [ev["ts"].isoformat()[:19] for ev in _file_events(pipeline, text)]
    assert got == ["2024-04-30T10:13:04", "2024-04-30T10:13:05"], got
    same = text.replace("+11:00", "Z")
    assert [ev["ts"].isoformat()[:19] for ev in _file_events(pipeline, same)] == \
        ["2024-04-30T21:13:04", "2024-04-30T21:13:05"]


_LOGRUS = ('{d} {hms} {host} dockerd[10261]: time="{iso}" level=error '
           'msg="nvidia-container-cli: detection error: nvml error: unknown error: unknown"')
_XID = "{d} {hms} {host} kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=x, GPU has fallen off the bus."


def test_a_messages_zoned_stamp_moves_its_own_hosts_header_lines_by_the_shift_nearest_them(pipeline):
    """The shift a logrus stamp gives its zoneless syslog header is its host's, and the header's zone's offset
    at that time (a break-it pass): a central syslog server's file holds several machines' headers each in its own
    zone (node1's +11:00 moved node2's Xid 11 hours); a file across a change of daylight saving time has two
    shifts (+01:00 then +02:00: each moved its own line and none of the Xids beside them, an hour off); India's
    +05:30 is no whole hours (the line stayed 5.5 hours from its own stamp)."""
    def times(*lines: str) -> list[tuple[str, str]]:
        return [(ev["host"], ev["ts"].isoformat()[:19]) for ev in _file_events(pipeline, "\n".join(lines))]

    hms = "21:13:04"
    logrus = _LOGRUS.format(d="Apr 30", hms=hms, host="node1", iso="2024-04-30T21:13:04.829815111+11:00")
    assert times(logrus, _XID.format(d="Apr 30", hms="21:13:05", host="node2")) == [
        ("node1", "2024-04-30T10:13:04"), ("node2", "2024-04-30T21:13:05")]
    # Europe/Berlin's headers read in UTC; its clocks went forward on 2024-03-31 at 01:00 UTC
    winter = _LOGRUS.format(d="Mar 30", hms="10:00:00", host="node1", iso="2024-03-30T10:00:00.1+01:00")
    summer = _LOGRUS.format(d="Mar 31", hms="12:00:00", host="node1", iso="2024-03-31T12:00:00.1+02:00")
    assert times(winter, _XID.format(d="Mar 30", hms="10:00:01", host="node1"),
                 summer, _XID.format(d="Mar 31", hms="12:00:01", host="node1")) == [
        ("node1", "2024-03-30T09:00:00"), ("node1", "2024-03-30T09:00:01"),
        ("node1", "2024-03-31T10:00:00"), ("node1", "2024-03-31T10:00:01")]
    for zone, want in (("+05:30", "04-30T15:43"), ("+05:45", "04-30T15:28"), ("-09:30", "05-01T06:43")):
        india = _LOGRUS.format(d="Apr 30", hms=hms, host="node1", iso=f"2024-04-30T21:13:04.829815111{zone}")
        got = times(india, _XID.format(d="Apr 30", hms="21:13:05", host="node1"))
        assert got == [("node1", f"2024-{want}:04"), ("node1", f"2024-{want}:05")], (zone, got)
    # one replayed record whose time= is three hours old (a stamp seconds from its header beside the Xid says the
    # header is the decode zone's): the Xid stays
    now = _LOGRUS.format(d="Apr 30", hms=hms, host="node1", iso="2024-04-30T21:13:04.5Z")
    old = _LOGRUS.format(d="Apr 30", hms="21:20:00", host="node1", iso="2024-04-30T18:20:00.5Z")
    assert times(now, _XID.format(d="Apr 30", hms="21:13:05", host="node1"), old) == [
        ("node1", "2024-04-30T21:13:04"), ("node1", "2024-04-30T21:13:05"), ("node1", "2024-04-30T18:20:00")]
    # a stamp 20 minutes and 7 seconds from its header is no zone's: the header's time stands
    stale = _LOGRUS.format(d="Apr 30", hms=hms, host="node1", iso="2024-04-30T20:52:57Z")
    assert times(stale, _XID.format(d="Apr 30", hms="21:13:05", host="node1")) == [
        ("node1", "2024-04-30T21:13:04"), ("node1", "2024-04-30T21:13:05")]


def test_a_messages_zoned_stamp_moves_the_header_lines_of_the_kafka_records_beside_it(pipeline):
    """A shipper's one line per Kafka record: each record is a segment of its own, and the Xid record beside the
    logrus one stayed 11 hours from it where ``diagnose`` of the same lines moved it (a break-it pass). The
    records are aiokafka's own ``ConsumerRecord``s, decoded as the consumer decodes a partition (no broker: the
    pipeline reads what the consumer hands it)."""
    from aiokafka import ConsumerRecord

    from ingest.decode import decode_partition
    lines = [_LOGRUS.format(d="Apr 30", hms="21:13:04", host="node1", iso="2024-04-30T21:13:04.829815111+11:00"),
             _XID.format(d="Apr 30", hms="21:13:05", host="node1")]
    records = [ConsumerRecord(topic="fleet.syslog", partition=0, offset=i, timestamp=T0 // 1000, timestamp_type=0,
                              key=b"node1", value=line.encode(), checksum=None, serialized_key_size=5,
                              serialized_value_size=len(line), headers=[]) for i, line in enumerate(lines)]
    got = [ev["ts"].isoformat()[:19] for ev in
           pipeline.run(decode_partition("fleet.syslog", 0, records)).events.to_pylist()]
    assert got == ["2024-04-30T10:13:04", "2024-04-30T10:13:05"], got
    assert got == [ev["ts"].isoformat()[:19] for ev in _file_events(pipeline, "\n".join(lines))]


def test_a_keyed_record_s_hostless_line_takes_the_host_its_key_s_earlier_lines_name_as_a_file_s_does(pipeline):
    """One line per Kafka record, as ``firstfault send``, Vector and Fluent Bit ship a file: a vLLM traceback line
    after NCCL lines that all name node01 is node01's under the key gpu-a03, as in ``diagnose`` of a file named
    gpu-a03 (it was gpu-a03's, an incident of its own: a fresh user's trial); after lines of two hosts it is the
    key's, as the file's name; without a key it names no host and is refused, as before (an unkeyed partition holds
    every machine's records); an NDJSON record's envelope host still names it. Real lines: tests/corpus/015
    (llm-d/llm-d#191)."""
    from aiokafka import ConsumerRecord

    from ingest.decode import decode_partition
    warn = "[2025-09-17 15:23:34] {}:311:405 [0] transport/net_ib.cc:199 NCCL WARN NET/IB : mlx5_32:1 Got async " \
           "error event: port error"
    trace = " WorkerProc hit an exception."

    def hosts(values: list[tuple[bytes | None, str]]) -> list[tuple[str, str]]:
        records = [ConsumerRecord(topic="fleet.nccl", partition=0, offset=i, timestamp=T0 // 1000, timestamp_type=0,
                                  key=key, value=v.encode(), checksum=None, serialized_key_size=len(key or b""),
                                  serialized_value_size=len(v), headers=[]) for i, (key, v) in enumerate(values)]
        batch = pipeline.run(decode_partition("fleet.nccl", 0, records))
        return ([(e["host"], e["kind"]) for e in batch.events.to_pylist()]
                + [("refused", r.error_code) for r in batch.rejects])

    a03 = b"gpu-a03"
    assert hosts([(a03, warn.format("node01")), (a03, trace)]) == [("node01", "ib_port"), ("node01", "nccl_error")]
    assert hosts([(a03, warn.format("node01")), (a03, warn.format("node02").replace(":34]", ":35]")),
                  (a03, trace)]) == [("node01", "ib_port"), ("node02", "ib_port"), ("gpu-a03", "nccl_error")]
    assert hosts([(b"gpu-a04", warn.format("node01")), (a03, trace)]) == [  # another key's lines say nothing
        ("node01", "ib_port"), ("gpu-a03", "nccl_error")]
    assert hosts([(None, warn.format("node01")), (None, trace)]) == [("node01", "ib_port"), ("refused", "bad_host")]
    envelope = json.dumps({"host": "gpu-a05", "message": trace, "timestamp": "2025-09-17T15:23:51Z"})
    assert hosts([(a03, warn.format("node01")), (a03, envelope)]) == [("node01", "ib_port"), ("gpu-a05", "nccl_error")]


def test_a_key_whose_spelling_changes_mid_stream_is_one_file(pipeline):
    """A key is a file's name, and a host name is one host however it is spelled (``schemas.hostname``): a stream
    keyed ``node07`` whose key a shipper spells ``NODE07`` (or ``node07.cluster.local``) from some record on is one
    file. Its traceback line took what the stream's earlier lines named only under the raw spelling they came with,
    so the key's new spelling fell back to the key (node07) where ``diagnose`` of the file gave node01 (a break-it
    pass). Real lines: tests/corpus/015 (llm-d/llm-d#191)."""
    from aiokafka import ConsumerRecord

    from ingest.decode import decode_partition
    warn = "[2025-09-17 15:23:34] node01:311:405 [0] transport/net_ib.cc:199 NCCL WARN NET/IB : mlx5_32:1 Got async " \
           "error event: port error"
    trace = " WorkerProc hit an exception."

    def hosts(values: list[tuple[bytes, str]]) -> list[tuple[str, str]]:
        records = [ConsumerRecord(topic="fleet.nccl", partition=0, offset=i, timestamp=T0 // 1000, timestamp_type=0,
                                  key=key, value=v.encode(), checksum=None, serialized_key_size=len(key),
                                  serialized_value_size=len(v), headers=[]) for i, (key, v) in enumerate(values)]
        return [(e["host"], e["kind"]) for e in pipeline.run(decode_partition("fleet.nccl", 0, records)).events
                .to_pylist()]

    for again in (b"node07", b"NODE07", b"Node07.Cluster.Local"):
        assert hosts([(b"node07", warn), (again, trace)]) == [("node01", "ib_port"), ("node01", "nccl_error")], again
    # another host's key is another file still
    assert hosts([(b"node07", warn), (b"node08", trace)]) == [("node01", "ib_port"), ("node08", "nccl_error")]


def test_a_key_that_names_no_host_is_no_key_and_gives_no_line_another_writer_s_host(pipeline):
    """A shipper's key that is no host name stands for no file: a Logstash ``%{host}`` or Fluentd ``${hostname}``
    left unexpanded, a Python ``str(None)``, Go's ``<nil>``, a file path, bytes that were no UTF-8. Every machine's
    records share such a key, so a raw Xid line after nodeA's syslog lines under it is no more nodeA's than an
    unkeyed record's is: it is refused (bad_host, naming the key to fix) and nodeA keeps its own line. They were
    stored, the raw line on nodeA, or every machine's hostless lines as one host "none" (a break-it pass). A key
    that is a host name (node07) still names the file."""
    from aiokafka import ConsumerRecord

    from ingest.decode import decode_partition
    own = "2025-09-17T15:23:30+00:00 nodeA kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=0, GPU has fallen off the bus."
    raw = "[  12.345678] NVRM: Xid (PCI:0000:3b:00): 79, pid=0, GPU has fallen off the bus."

    def hosts(key: bytes, values: list[str]) -> list[tuple[str, str]]:
        records = [ConsumerRecord(topic="fleet.dmesg", partition=0, offset=i, timestamp=T0 // 1000, timestamp_type=0,
                                  key=key, value=v.encode(), checksum=None, serialized_key_size=len(key),
                                  serialized_value_size=len(v), headers=[]) for i, v in enumerate(values)]
        batch = pipeline.run(decode_partition("fleet.dmesg", 0, records))
        return [e["host"] for e in batch.events.to_pylist()] + [r.error_code for r in batch.rejects]

    for key in (b"%{host}", b"${hostname}", b"None", b"null", b"<nil>", b"undefined", b"/var/log/kern.log",
                b"\xff\xfe", b"k" * 10_000):
        assert hosts(key, [raw]) == ["bad_host"], key[:20]
        assert hosts(key, [own, raw]) == ["nodea", "bad_host"], key[:20]
    assert hosts(b"node07", [own, raw]) == ["nodea", "nodea"]  # a host's key: its file's earlier lines name it
    assert hosts(b"node07", [raw]) == ["node07"]


def test_a_key_with_a_port_or_an_ipv6_address_in_brackets_names_the_host_without_them(pipeline):
    """A shipper keying records by an ``instance`` label (``node04:9100``) or an address with its port: the host is
    the name without the port, as ``node04.cluster.local:9100`` already was, so one machine's Xid lines under
    ``node04:9100`` and ``node04`` are one host's; an IPv6 address in brackets (RFC 3986) is the address. They were
    stored as hosts ``node04:9100`` and ``[fe80::1]:8080`` beside ``node04`` (a break-it pass through the broker)."""
    from aiokafka import ConsumerRecord

    from ingest.decode import decode_partition
    raw = "[  12.345678] NVRM: Xid (PCI:0000:3b:00): 79, pid=0, GPU has fallen off the bus."

    def host(key: bytes) -> list[str]:
        record = ConsumerRecord(topic="fleet.dmesg", partition=0, offset=0, timestamp=T0 // 1000, timestamp_type=0,
                                key=key, value=raw.encode(), checksum=None, serialized_key_size=len(key),
                                serialized_value_size=len(raw), headers=[])
        return [e["host"] for e in pipeline.run(decode_partition("fleet.dmesg", 0, [record])).events.to_pylist()]

    assert [host(k) for k in (b"node04:9100", b"NODE04.cluster.local:9100", b"node04", b"10.0.0.5:9092",
                              b"[fe80::1]:8080", b"[2001:DB8::1]", b"node04:4242:4301")] == [
        ["node04"], ["node04"], ["node04"], ["10.0.0.5"], ["fe80::1"], ["2001:db8::1"], ["node04:4242:4301"]]


def test_a_static_rsyslog_key_or_the_kernel_s_unset_name_is_no_host_and_real_names_like_placeholders_are():
    """rsyslog's omkafka sends its ``Key`` as written unless ``DynaKey="on"`` (rsyslog.com/doc omkafka-dynakey:
    "If set, the key parameter becomes a template"): ``Key="%HOSTNAME%"`` without it is the key of every machine's
    records, and ``%$!host%`` too; a kernel whose host name was never set is "(none)" (include/linux/uts.h's
    UTS_NODENAME). They were hosts, every machine's lines one host's (a break-it pass). Names that only look like
    placeholders in a part of them (nil01, none-3, gpu-null-7, nullhost, undefined-1) are hosts."""
    import pyarrow as pa

    from schemas.hostname import not_host_names
    placeholders = ["%HOSTNAME%", "%hostname%", "%$!host%", "%fromhost-ip%", "(none)", "(NONE)"]
    real = ["nil01", "none-3", "gpu-null-7", "nullhost", "undefined-1", "gpu.null", "a%b", "host$", "n100%"]
    assert not_host_names(pa.array(placeholders + real)).to_pylist() == [True] * len(placeholders) + [False] * len(real)


def test_a_progress_bar_redrawn_before_a_fault_line_hides_nothing_of_it(pipeline):
    """tqdm's bar ends in ``\\r`` and the next write lands on the same line: the fault line's own stamp was behind the
    bar, and it took its file's time (two weeks off) and "printed no time" (a break-it pass). What follows the last
    ``\\r`` is the line, as a terminal shows it."""
    text = ("Training:  45%|####5     | 450/1000 [01:02<01:15,  7.30it/s]\r"
            "2026-11-15T14:15:47.300000Z node12 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=x, GPU has fallen "
            "off the bus.\n"
            "Training:  46%|####6     | 460/1000\rTraining:  47%|####7     | 470/1000\r"
            "[rank3]:[E1115 14:16:10.000000 ProcessGroupNCCL.cpp:607] [Rank 3] Watchdog caught collective operation "
            "timeout: WorkNCCL(SeqNum=9, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600081 "
            "milliseconds before timing out.\n")
    got = [(e["signature"], e["ts_basis"], e["ts"].isoformat()[:19]) for e in _file_events(pipeline, text)]
    assert got == [("xid", "line", "2026-11-15T14:15:47"), ("torch.watchdog_timeout", "line", "2026-11-15T14:16:10")]
    # a collector's header before the bar stays with its line (a second break-it pass: a syslog line took the host
    # and time of the line before it, a CRI line its file's time)
    nccl = ("torch.distributed.DistBackendError: NCCL error in: NCCLUtils.hpp:268, unhandled cuda error, NCCL version "
            "2.21.5\n")
    text = ("Nov 30 08:00:00 gpu-b02 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus.\n"
            f"Nov 30 10:00:01 gpu-a17 python[123]: \rEpoch 3:  45%|####5     | 450/1000\r{nccl}"
            f"2026-11-30T10:00:02.123456789Z stderr F \rTraining 1%|\r{nccl}")
    got = [(e["signature"], e["host"], e["ts_basis"], e["ts"].isoformat()[11:19]) for e in _file_events(pipeline, text)]
    assert got == [("xid", "gpu-b02", "line", "08:00:00"), ("torch.nccl_error", "gpu-a17", "line", "10:00:01"),
                   ("torch.nccl_error", "node1", "line", "10:00:02")]
    # the bar's first write in the header's own write, with no "\r" between them: the header stays all the same (a
    # third break-it pass: node02's ECC error took node01's host and its Xid 13 as its cause); a status line that is
    # no bar is redrawn over too, not joined to the line after it; a last write with its own date is the line alone
    ecc = "[rank1]: RuntimeError: CUDA error: uncorrectable ECC error encountered\n"
    text = ("Dec  1 03:12:01 node01 kernel: NVRM: Xid (PCI:0000:3b:00): 13, pid=9, Graphics Exception\n"
            f"Dec  1 03:12:02 node02 python[4411]: Epoch 3:  45%|####5 | 450/1000\r{ecc}"
            f"2026-12-01T03:12:03.123456789Z stderr F Training: 0%|\rTraining: 45%|\r{ecc}"
            f"step 122/1000 loss=0.5201\r2026-12-01T03:12:04Z node03 kernel: NVRM: Xid (PCI:0000:5e:00): 79, pid=1, "
            "GPU has fallen off the bus.\n")
    got = [(e["signature"], e["host"], e["ts"].isoformat()[11:19]) for e in _file_events(pipeline, text)]
    assert got == [("xid", "node01", "03:12:01"), ("cuda.ecc_uncorrectable", "node02", "03:12:02"),
                   ("cuda.ecc_uncorrectable", "node1", "03:12:03"), ("xid", "node03", "03:12:04")], got


@given(st.lists(st.sampled_from(["a", "a", "b x", "", "é", "\udcff", "NVRM: Xid 79"]), min_size=1, max_size=30),
       st.lists(st.integers(0, 40), max_size=8), st.sampled_from([1, 3, 64, 1 << 16]),
       st.sampled_from([2, 8, 64 << 20]))
def test_a_segments_newlines_are_found_as_far_as_asked_whatever_is_asked_before(lines, asked, piece, most):
    """``_newlines`` (where the searches for a traceback's header and a stamped line above a line look): the offsets
    of at least the first ``count`` newlines (all when fewer), whatever was asked of the segment before, read in
    pieces of any size, up to any size."""
    from unittest import mock

    from ingest import assemble
    from ingest.assemble import _newlines

    raw = [x.encode("utf-8", "surrogateescape") for x in lines]
    seg = Segment(data=b"\n".join(raw), origin="file:x", stream="f", host="x", ref_ts=T0, ref_basis="file",
                  ingest_ts=T0)
    want = [i for i, c in enumerate(seg.data) if c == 10]
    located: dict = {}
    with mock.patch.object(assemble, "NEWLINE_SCAN_BYTES", piece), \
            mock.patch.object(assemble, "NEWLINE_SCAN_MAX", most):
        for count in asked:
            got = _newlines(seg, count, located).tolist()
            assert got == want[:len(got)] and len(got) >= min(count, len(want)), (count, lines)


def test_nvidia_smi_q_retired_pages_pending_is_its_sections_gpus(pipeline):
    """nvidia-smi -q's "Retired Pages … Pending Page Blacklist : Yes" (a V100's dynamic page retirement,
    stas00/ml-engineering's debug guide) gave no event (a real-logs pass): an ECC fault of the section's GPU; N/A (A100
    and later print it there) and No are none."""
    text = ("GPU 00000000:3B:00.0\n    Product Name                          : Tesla V100-SXM2-32GB\n"
            "    Retired Pages\n        Single Bit ECC                    : 0\n"
            "        Double Bit ECC                    : 1\n        Pending Page Blacklist            : Yes\n"
            "GPU 00000000:3C:00.0\n    Retired Pages\n        Pending Page Blacklist            : N/A\n")
    got = [(e["device"], e["kind"], e["signature"]) for e in _file_events(pipeline, text)]
    assert got == [("0000:3b:00.0", "ecc", "nvml.q_retired_pages")]


@pytest.mark.parametrize("volatile, aggregate, memory, want", [
    (0, 1, "DRAM", [("Aggregate", "info")]), (1, 1, "DRAM", [("Volatile", "error")]),
    (0, 3, "SRAM", [("Aggregate", "warning")]), (2, 3, "SRAM", [("Volatile", "error"), ("Aggregate", "warning")]),
    (0, 12, "SRAM", [("Aggregate", "error")])])
def test_nvidia_smi_q_ecc_counts_are_read_with_their_section(pipeline, volatile, aggregate, memory, want):
    """nvidia-smi -q's ECC Errors counts under "Volatile" (since the driver loaded) and "Aggregate" (the GPU's
    lifetime): a GPU whose Aggregate DRAM Uncorrectable read 1 with Volatile 0 and no remap pending — a past error,
    repaired — was an error incident (a break-it pass). The section is read from the line above the counts: an
    Aggregate DRAM count is information, an Aggregate SRAM count a warning and above 4 an error (the RMA limit,
    stas00/ml-engineering), a Volatile one an error."""
    text = "\n".join(["GPU 00000000:10:1C.0", "    ECC Errors", "        Volatile",
                      f"            {memory} Uncorrectable            : {volatile}", "        Aggregate",
                      f"            {memory} Uncorrectable            : {aggregate}"])
    rows = [r for r in run(pipeline, text).events.to_pylist() if r["signature"] == "nvml.q_ecc_uncorrectable"]
    assert [(json.loads(r["details"])["ecc_section"], r["severity"]) for r in rows] == want
    assert {r["device"] for r in rows} == {"0000:10:1c.0"}


@pytest.mark.parametrize("uncorrectable, want", [("0", "warning"), ("4", "error"), (None, "error")])
def test_a_pending_row_remap_is_as_serious_as_the_errors_that_asked_for_it(pipeline, uncorrectable, want):
    """nvidia-smi -q's Remapped Rows "Pending : Yes" after correctable errors only ("Uncorrectable Error : 0" on the
    line above; stas00/ml-engineering's debug guide, an A100 with Xid 63) waits for a reset when convenient: a
    warning; it was an error incident (a real-logs pass). After uncorrectable ones ("Uncorrectable Error : 4",
    leptonai/gpud#80), or with the count not given, it stays an error; the section's count is kept."""
    rows = ["GPU 00000000:10:1C.0", "    Remapped Rows", "        Correctable Error                 : 1"]
    if uncorrectable is not None:
        rows.append(f"        Uncorrectable Error               : {uncorrectable}")
    rows += ["        Pending                           : Yes", "        Remapping Failure Occurred        : No"]
    (row,) = [r for r in run(pipeline, "\n".join(rows)).events.to_pylist() if r["signature"] == "nvml.q_row_remap"]
    assert (row["device"], row["severity"]) == ("0000:10:1c.0", want)
    assert json.loads(row["details"]).get("remap_uncorrectable") == uncorrectable


def test_a_logrus_text_record_without_a_header_is_timed_by_its_own_time(pipeline):
    """``time="2024-09-30T19:49:46Z" level=error msg="… In use by another client …"`` (the GPU operator's own log,
    ComputeCanada/puppet-magic_castle#387) was timed by its file: "the line printed no time" (a real-logs pass). Its
    own RFC 3339 time dates it; a time further in the message does not."""
    line = ('time="2024-09-30T19:49:46Z" level=error msg="The following GPUs could not be reset:  GPU 00000000:00:06.0: '
            'In use by another client"')
    (row,) = run(pipeline, line, basis="file").events.to_pylist()
    assert (row["ts"], row["ts_basis"]) == (datetime(2024, 9, 30, 19, 49, 46, tzinfo=timezone.utc), "line")
    (row,) = run(pipeline, 'level=error time="2024-09-30T19:49:46Z" ' + line[29:], basis="file").events.to_pylist()
    assert row["ts_basis"] != "line"
    # a JSON record after its program's name (NVIDIA/NVSentinel#1358's preflight-dcgm-diag)
    rec = ('preflight-dcgm-diag {"event": "Test fail", "level": "error", "test": "pcie", "detail": "Detected XID 45 '
           'for GPU 0 Please consult the documentation for details of this XID.", "timestamp": '
           '"2026-06-04T06:08:10.021979Z", "module": "preflight-dcgm-diag"}')
    (row,) = run(pipeline, rec, basis="file").events.to_pylist()
    assert (row["ts"], row["ts_basis"]) == (datetime(2026, 6, 4, 6, 8, 10, 21979, tzinfo=timezone.utc), "line")


_ECC_INIT = ("[2026-12-01 23:05:12] node201:84834:84895 [5] NCCL INFO comm 0x557508a8a0 rank 5 nranks 24 cudaDev 5 "
             "nvmlDev 5 busId c3000 commId 0x1f0e9d8c7b6a5948 - Init COMPLETE")
_ECC = "[rank5]: RuntimeError: CUDA error: uncorrectable ECC error encountered"
_ECC_C10 = ("[rank7]:[E1202 {clock} ProcessGroupNCCL.cpp:632] [Rank 7] Watchdog caught collective operation "
            "timeout: WorkNCCL(SeqNum=31207, OpType=ALLREDUCE, NumelIn=104857600, NumelOut=104857600, "
            "Timeout(ms)=600000) ran for 600021 milliseconds before timing out.")


def _us(t: datetime) -> int:
    return int(t.timestamp()) * 1_000_000 + t.microsecond


def test_an_inherited_time_spans_to_the_next_stamped_line(pipeline):
    """A scenario trial: a training script prints unstamped output for hours, so the rank's "CUDA error: uncorrectable
    ECC error encountered" under the job's NCCL init line took that line's time, hours before the Xid 48 it reports,
    with its 1 s precision: an incident of its own. Its precision spans to the next stamped line of its log
    (``details.ts_until``, µs); a line right before the next stamp, or after the last one, keeps the precision it
    took."""
    def ecc_row(*lines: str) -> dict:
        (row,) = [e for e in _file_events(pipeline, "\n".join(lines)) if e["signature"] == "cuda.ecc_uncorrectable"]
        row["details"] = json.loads(row["details"] or "{}")
        return row

    init = datetime(2026, 12, 1, 23, 5, 12, tzinfo=timezone.utc)
    row = ecc_row(_ECC_INIT, _ECC, _ECC_C10.format(clock="03:22:39.771000179"))
    until = _us(datetime(2026, 12, 2, 3, 22, 39, 771000, tzinfo=timezone.utc)) + 1  # the c10 line's µs
    assert (row["ts"], row["ts_basis"]) == (init, "inherited")
    assert row["ts_precision_us"] == until - _us(init) and row["details"]["ts_until"] == until
    # the usual case: the next stamp within the stamped line's second (or nothing after it), nothing changes
    same_second = _ECC_C10.format(clock="23:05:12.771000179").replace("E1202", "E1201")
    for lines in ([_ECC_INIT, _ECC, same_second], [_ECC_INIT, _ECC]):
        row = ecc_row(*lines)
        assert (row["ts"], row["ts_precision_us"]) == (init, 1_000_000) and "ts_until" not in row["details"], lines


@given(st.integers(0, 6 * 3600), st.integers(0, 6 * 3600), st.integers(0, 999_999))
def test_an_inherited_times_interval_holds_the_time_the_line_was_written(pipeline, before, after, frac):
    """A line written between two stamped ones (seconds since the first: ``before``; the second stamped ``after``
    seconds later, at ``frac`` µs into its second) lies within its inherited time ± its precision, as the correlation
    windows read it (``correlate.window.tolerance``)."""
    t0 = datetime(2026, 12, 1, 20, 0, 0, tzinfo=timezone.utc)
    t1 = t0 + timedelta(seconds=before + after, microseconds=frac)
    written = t0 + timedelta(seconds=before + after * 0.5)  # anywhere between them: its midpoint, say
    init = _ECC_INIT.replace("2026-12-01 23:05:12", t0.strftime("%Y-%m-%d %H:%M:%S"))
    c10 = _ECC_C10.format(clock=t1.strftime("%H:%M:%S.%f000")).replace("E1202", t1.strftime("E%m%d"))
    (row,) = [e for e in _file_events(pipeline, "\n".join([init, _ECC, c10]))
              if e["signature"] == "cuda.ecc_uncorrectable"]
    assert abs(_us(written) - _us(row["ts"])) <= row["ts_precision_us"]
    assert abs(_us(t1) - _us(row["ts"])) <= row["ts_precision_us"]  # up to the next line itself


def test_an_exception_under_an_hours_old_stamp_joins_the_fault_it_reports_and_starts_nothing(pipeline):
    """The scenario trial end to end: the rank's unstamped ECC error under the job's NCCL init line four hours
    before the Xid 48 of its GPU was a second incident (critical, its start marked "~"). It joins the Xid 48's
    incident, which starts at its earliest evidence with a time of its own (the watchdog's collective), not at the
    init line's time."""
    kern = ("[Wed Dec  2 03:12:40 2026] NVRM: Xid (PCI:0000:c3:00): 48, pid=84834, name=python, An uncorrectable "
            "double bit error (DBE) has been detected on GPU in the framebuffer at partition 3, subpartition 0.")
    job = "\n".join([_ECC_INIT, _ECC, _ECC_C10.format(clock="03:22:39.771000179")])
    b = pipeline.run(Decoded(segments=[
        Segment(data=t.encode(), origin=f"file:{n}", stream=n, host="node201", ref_ts=_COPIED, ref_basis="file",
                ingest_ts=_COPIED) for n, t in (("kern.log", kern), ("train.log", job))]))
    (inc,) = correlate(b.events, b.link_samples, b.topology, now_us=_COPIED)
    assert (inc["category"], inc["initiator"]["xid"]) == ("ecc", 48), inc["initiator"]
    assert inc["start_basis"] != "inherited" and inc["start"].startswith("2026-12-02T03:1"), inc["start"]
    assert "23:05" not in inc["explanation"], inc["explanation"]


_OMPI_CRASH = (  # NVIDIA/nccl#2380 (NCCL 2.30: a segfault in ncclTuningCostModelInit), Open MPI's handler
    "2026-08-31 12:27:50 [node03:00956] *** Process received signal ***\n"
    "2026-08-31 12:27:50 [node03:00956] Signal: Segmentation fault (11)\n"
    "2026-08-31 12:27:50 [node03:00956] Failing at address: 0x3bc\n"
    "2026-08-31 12:27:50 [node03:00956] [ 0] /usr/lib/x86_64-linux-gnu/libc.so.6(+0x45330)[0x7d1d0c3eb330]\n"
    "{frames}"
    "2026-08-31 12:27:50 [node03:00956] *** End of error message ***\n")


def test_a_crash_handler_s_backtrace_through_libnccl_names_nccl_the_initiator(tmp_path):
    """A crash handler's backtrace whose frames run through libnccl.so is a crash in NCCL's own code
    (NVIDIA/nccl#2380, #1996): the incident's initiator is that frame (category nccl_software) and its next action
    says to update NCCL, where the handler's own line alone said "the process's own crash" (application). The same
    handler with no NCCL frame stays the process's own crash."""
    nccl = "".join(f"2026-08-31 12:27:50 [node03:00956] [ {i}] /usr/local/nccl/lib/libnccl.so.2(+0x{a})[0x7d1d0c8f{a}]\n"
                   for i, a in ((4, "bd72c"), (5, "be74b")))
    _, (inc,) = _diagnosed(tmp_path / "node03.mpi.log", _OMPI_CRASH.format(frames=nccl))
    assert inc["category"] == "nccl_software"
    assert (inc["initiator"]["host"], inc["initiator"]["fault"]) == ("node03", "nccl.crash_frame")
    assert "crashed inside NCCL" in inc["next_action"] and "libnccl.so.2" in inc["next_action"]
    own = "2026-08-31 12:27:50 [node03:00956] [ 1] /usr/lib/x86_64-linux-gnu/libc.so.6(+0x19badc)[0x7d1d0c541adc]\n"
    _, (inc,) = _diagnosed(tmp_path / "node03.mpi.log", _OMPI_CRASH.format(frames=own))
    assert (inc["category"], inc["initiator"]["fault"]) == ("application", "mpi.signal_received")
    assert "inside NCCL" not in inc["next_action"]


def test_a_pci_bus_id_is_not_taken_for_a_clock_near_a_lines_start():
    """A line with no time of its own looks up to STAMP_LINES lines above for a stamp, parsing only those with a clock
    near their start (``_CLOCK``). ``PCI:0000:61:00`` read as the clock ``0:61:00``, so a storm of stamp-less Xid
    lines (``journalctl -o cat``) parsed the prefix of five lines per line: 200,000 of them took 30 s (a break-it
    pass). An hour has at most two digits; the clocks of real stamps still count."""
    from ingest.assemble import _CLOCK

    for line in (b"NVRM: Xid (PCI:0000:61:00): 79, pid=1234, GPU has fallen off the bus.",
                 b"nvidia 0000:41:00.0: NVRM: GPU at PCI:0000:41:00: GPU-1b2c",
                 b"pcieport 0000:00:01.1: AER: Corrected error received: 0000:01:00.0"):
        assert _CLOCK.search(line) is None, line
    for line in (b"Dec  1 03:12:00 node07 kernel: x", b"2026-12-01T03:12:00.5Z node07 x",
                 b"[Fri Mar  3 04:44:24 2023] x",
                 b"I1201 3:12:00.123 x", b"[2025-01-29 08:52:44 TP2] Using default MoE config"):
        assert _CLOCK.search(line) is not None, line


def test_the_fast_clock_check_answers_as_the_clock_regex_over_any_window():
    """``_has_clock`` (a search for ``:dd:dd`` first, then ``_CLOCK``) says what ``_CLOCK.search`` says, for every
    window of lines with and without clocks, next to PCI bus ids and windows that cut a clock in two: it stands for
    it in ``_stamp_before``, so a line's look-back dates exactly the lines it dated."""
    import random

    from ingest.assemble import _CLOCK, _has_clock

    r = random.Random(5)
    pieces = [b"12:00:03", b"2:00:03", b"0000:61:00", b":61:00", b"123:45:67", b"1:2:3", b"a", b" ", b"\n", b"7",
              b"Dec  1 03:12:00 node07", b"PCI:0000:41:00.0", b"::", b"9:99:99"]
    seen = {True: 0, False: 0}
    for _ in range(3000):
        data = b"".join(r.choice(pieces) for _ in range(r.randint(0, 8)))
        start, end = sorted((r.randint(0, len(data) + 2), r.randint(0, len(data) + 2)))
        want = _CLOCK.search(data, start, end) is not None
        assert _has_clock(data, start, end) is want, (data, start, end)
        assert _has_clock(data) is (_CLOCK.search(data) is not None), data
        seen[want] += 1
    assert min(seen.values()) > 300  # both answers were asked often


def test_copies_of_a_prefix_are_objects_of_their_own_with_values_nothing_changes_in_place(pipeline):
    """A line repeating the one before copies its prefix (``pipeline._copy_prefix``, not deeper): each copy is its own
    ``Prefix`` and every field value is immutable, so ``resolve_times`` setting one copy's time or ``assign_hosts``
    its host changes no other copy (a storm of unstamped copies in one Kafka value, issue 6)."""
    import dataclasses

    import numpy as np

    from ingest.match import hit_lines
    from ingest.pipeline import _locate
    from ingest.prefix import Prefix

    line = "NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus."
    text = "\n".join([f"Dec 31 23:59:59 node001 kernel: {line}"] * 3 + [line] * 3)
    seg = Segment(data=text.encode(), origin="t:x", stream="s", host="node07", ref_ts=T0, ref_basis="kafka",
                  ingest_ts=T0)
    buf = text.encode()
    located, _ = _locate(buf, np.array([0]), hit_lines(pipeline.matcher, buf))
    hits = [h for s in pipeline._extract(buf, [seg], {}, located, []).values() for h in s]
    assert len(hits) == 6 and len({id(h.prefix) for h in hits}) == 6
    assert [h.prefix.yearless is not None for h in hits] == [True] * 3 + [False] * 3
    for h in hits:
        hash(tuple(getattr(h.prefix, f.name) for f in dataclasses.fields(Prefix)))  # no list, dict or set in place
    hits[0].prefix.ts, hits[3].prefix.host = 0, "elsewhere"
    assert hits[1].prefix.ts not in (None, 0) and hits[4].prefix.host is None


_LINK_INFO = ("GPU 00000000:{bus}:00.0\n    PCI\n        GPU Link Info\n            PCIe Generation\n"
              "                Max                               : 4\n"
              "                Current                           : {gen}\n"
              "            Link Width\n"
              "                Max                               : 16x\n"
              "                Current                           : {width}x\n")


def test_nvidia_smi_q_link_width_below_its_max_is_a_degraded_link_of_its_sections_gpu(pipeline):
    """nvidia-smi -q's "GPU Link Info": a Link Width Current below its Max is a downtrained link (NVIDIA/NVSentinel#890:
    x16 → x8, the slot, riser, retimer or port above the GPU), a warning of the section's GPU; it gave no event (a
    real-logs pass). A Current generation below Max is an idle GPU saving power (Syllo/nvtop#6): none; a width as
    wide as Max, or a "Current : 8x" without its Max right above it, none."""
    text = (_LINK_INFO.format(bus="18", gen=1, width=16) + _LINK_INFO.format(bus="2A", gen=4, width=8)
            + "            Current                           : 8x\n")
    rows = run(pipeline, text).events.to_pylist()
    got = [(r["signature"], r["device"], r["device_type"], r["severity"], json.loads(r["details"])["link_width"],
            json.loads(r["details"]).get("link_width_max")) for r in rows]
    assert got == [("nvml.q_pcie_width_degraded", "0000:2a:00.0", "gpu", "warning", "8", "16")]


_LSPCI = ("62:00.0 VGA compatible controller: NVIDIA Corporation AD102 [GeForce RTX 4090] (rev a1) "
          "(prog-if 00 [VGA controller])\n"
          "\tSubsystem: Micro-Star International Co., Ltd. [MSI] AD102 [GeForce RTX 4090]\n"
          "\tCapabilities: [78] Express (v2) Legacy Endpoint, MSI 00\n"
          "\t\tLnkCap:\tPort #0, Speed 16GT/s, Width x16, ASPM L1, Exit Latency L1 <4us\n"
          "\t\tLnkSta:\tSpeed {speed}, Width {width}\n"
          "\t\t\tTrErr- Train- SlotClk+ DLActive- BWMgmt- ABWMgmt-\n")


@pytest.mark.parametrize("speed, width, want", [
    ("5GT/s (downgraded)", "x1 (downgraded)", [("0000:62:00.0", "gpu", "warning", "1")]),
    ("16GT/s (ok)", "x8 (downgraded)", [("0000:62:00.0", "gpu", "warning", "8")]),
    ("2.5GT/s (downgraded)", "x16 (ok)", []), ("2.5GT/s (downgraded)", "x16", [])])
def test_lspci_link_width_marked_downgraded_is_a_degraded_link_of_its_blocks_device(pipeline, speed, width, want):
    """`lspci -vv`'s "LnkSta: … Width x1 (downgraded)" (geerlingguy/raspberry-pi-pcie-devices#480) is a link trained
    with fewer lanes than the device has: a warning of the device of its block's header line (a VGA controller: a
    GPU). A speed marked downgraded alone is an idle link's power saving (janhq/jan#183, tinygrad's open-gpu-kernel-
    modules#6: "Speed 2.5GT/s (downgraded), Width x16"): none. It gave no event (a real-logs pass)."""
    rows = run(pipeline, _LSPCI.format(speed=speed, width=width)).events.to_pylist()
    got = [(r["device"], r["device_type"], r["severity"], json.loads(r["details"])["link_width"]) for r in rows]
    assert got == want
    if want:
        assert json.loads(rows[0]["details"])["pci_name"] == "NVIDIA Corporation AD102 [GeForce RTX 4090]"


def test_a_downgraded_lnksta_grepped_alone_names_no_device(pipeline):
    """`lspci -vv | grep LnkSta` keeps no header: the line is still a warning, of no device."""
    (row,) = run(pipeline, "\t\tLnkSta:\tSpeed 8GT/s, Width x4 (downgraded)\n").events.to_pylist()
    assert (row["signature"], row["device"], row["severity"]) == ("pcie.lspci_width_downgraded", None, "warning")


_ACS = ("[   77.571000] pcieport 0000:00:07.1: AER: Multiple Uncorrectable (Non-Fatal) error message received from "
        "0000:00:07.1\n"
        "[   77.571100] pcieport 0000:00:07.1: PCIe Bus Error: severity=Uncorrectable (Non-Fatal), type=Transaction "
        "Layer, (Receiver ID)\n"
        "[   77.571200] pcieport 0000:00:07.1:   device [8086:e44f] error status/mask=00200000/00000000\n"
        "[   77.571300] pcieport 0000:00:07.1:    [{bit}] {name}                (First)\n")


@pytest.mark.parametrize("bit, name, acs", [("21", "ACSViol", True), ("12", "Timeout", False)])
def test_an_aer_message_of_an_acs_violation_says_so_and_names_no_gpu(tmp_path, bit, name, acs):
    """A port's AER message whose status bit is ACSViol (minisforum-docs/MS-02-Ultra#10; the kernel's PTM patch's
    root port at 00:07.1) is an Access Control Services refusal, not a signal-integrity fault: its next action says so
    and does not send anyone to reseat. Another bit keeps the link advice. The action fits any device below the
    port: it names the device the message came from and no GPU the line does not name (it said "the port above a
    GPU", a real-logs pass)."""
    _, incidents = _diagnosed(tmp_path / "node05.kern.log", _ACS.format(bit=bit, name=name))
    text = " ".join(i["next_action"] for i in incidents)
    assert incidents and "0000:00:07.1" in text
    assert ("Access Control Services violation" in text) is acs
    assert ("reseating will not help" in text) is acs
    assert "above a GPU" not in text


@pytest.mark.parametrize(("text", "want"), [
    # Azure Scheduled Events' NotBefore, RFC 1123 (scylladb/scylla-cluster-tests#5608)
    ("Thu, 16 Mar 2023 14:01:28 GMT", datetime(2023, 3, 16, 14, 1, 28, tzinfo=timezone.utc)),
    # AWS Node Termination Handler's StartTime (aws/aws-node-termination-handler#458)
    ("2021-06-25T06:57:00Z", datetime(2021, 6, 25, 6, 57, tzinfo=timezone.utc)),
    # a harness's Compute Engine event time with its offset (scylladb/scylla-cluster-tests#14964)
    ("2026-05-27 11:41:47.868757+02:00", datetime(2026, 5, 27, 9, 41, 47, 868757, tzinfo=timezone.utc)),
    # zoneless: the host's zone
    ("2026-11-20 10:05:00", datetime(2026, 11, 20, 9, 5, tzinfo=timezone.utc)),
    ("", None),  # Azure's "NotBefore": "" of a started event
    ("0001-01-01T00:00:00Z", None),  # Go's zero time: an event with no EndTime
    # .NET's DateTime.MinValue in RFC 1123 ("R"): email.utils reads a year below 100 as 20xx/19xx, and it was
    # 2001-01-01, a plausible time that placed the notice 25 years back and began its incident then (a break-it pass)
    ("Mon, 01 Jan 0001 00:00:00 GMT", None),
    ("Sat, 01 Jan 0050 00:00:00 GMT", None),
    ("Thu, 16 Mar 23 14:01:28 GMT", datetime(2023, 3, 16, 14, 1, 28, tzinfo=timezone.utc)),  # RFC 822's 2 digits
    ("soon, maybe", None),
    # a break-it pass: a year no calendar holds raised OverflowError (its file or Kafka value skipped whole); a zone
    # email.utils does not know was read in the host's zone; a leap second and a date without its weekday (RFC 822
    # allows it) gave no time; an ISO time's zone name after it was left unread
    ("Thu, 1 Mar 99999999999999999999 1:1:1", None),
    ("Thu, 16 Mar 2023 14:01:28 +9999", None),
    ("Thu, 16 Mar 2023 14:01:28 CEST", datetime(2023, 3, 16, 12, 1, 28, tzinfo=timezone.utc)),
    ("Thu, 16 Mar 2023 14:01:28 Europe/Berlin", datetime(2023, 3, 16, 13, 1, 28, tzinfo=timezone.utc)),
    ("Thu, 16 Mar 2023 14:01:28 Mars/Olympus_Mons", None),
    # RFC 5322 §3.3: "-0000 also indicates Universal Time" (the local zone unsaid; email.utils.formatdate prints it
    # for a UTC time): read in the host's zone it was an hour off here (a break-it pass)
    ("Thu, 16 Mar 2023 14:01:28 -0000", datetime(2023, 3, 16, 14, 1, 28, tzinfo=timezone.utc)),
    ("Thu, 16 Mar 2023 14:01:28 -0000 (UTC)", datetime(2023, 3, 16, 14, 1, 28, tzinfo=timezone.utc)),
    ("Sat, 31 Dec 2016 23:59:60 GMT", datetime(2017, 1, 1, tzinfo=timezone.utc)),
    ("16 Mar 2023 14:01:28 GMT", datetime(2023, 3, 16, 14, 1, 28, tzinfo=timezone.utc)),
    ("2021-06-25 06:57:00 PDT", datetime(2021, 6, 25, 13, 57, tzinfo=timezone.utc)),
    ("2021-06-25 06:57:00 +0000 UTC", datetime(2021, 6, 25, 6, 57, tzinfo=timezone.utc)),  # Go's Time.String()
    ("9999-12-31T23:59:59Z", None),
    # a zone after the clock that was not read gave the host's zone, an hour off here and 4 hours off at +05 (a
    # break-it pass): tzdata's numeric abbreviation (Python's %Z, Go's Time.String() of Asia/Tashkent), an ISO
    # offset with no minutes, Java's and JavaScript's GMT with an offset, Windows' UTC with one
    ("2026-12-07T14:05:09 +05", datetime(2026, 12, 7, 9, 5, 9, tzinfo=timezone.utc)),
    ("2026-12-07T14:05:09+05", datetime(2026, 12, 7, 9, 5, 9, tzinfo=timezone.utc)),
    ("2026-12-07 14:05:09.5 +0500 +05", datetime(2026, 12, 7, 9, 5, 9, 500000, tzinfo=timezone.utc)),
    ("2023-01-23 00:18:29 -0800 PST", datetime(2023, 1, 23, 8, 18, 29, tzinfo=timezone.utc)),
    ("Mon, 07 Dec 2026 14:05:09 +05", datetime(2026, 12, 7, 9, 5, 9, tzinfo=timezone.utc)),
    ("Mon, 07 Dec 2026 14:05:09 GMT+05:00", datetime(2026, 12, 7, 9, 5, 9, tzinfo=timezone.utc)),
    ("Mon, 07 Dec 2026 14:05:09 UTC+05:00", datetime(2026, 12, 7, 9, 5, 9, tzinfo=timezone.utc)),
    ("2026-12-07 14:05:09 GMT+0500", datetime(2026, 12, 7, 9, 5, 9, tzinfo=timezone.utc)),
    ("2026-12-07 14:05:09 UTC-03:30", datetime(2026, 12, 7, 17, 35, 9, tzinfo=timezone.utc)),
    # GMT+5 with no minutes: old tzdata's abbreviation of Etc/GMT+5 (UTC-05, POSIX's sign) or UTC+05 as people
    # write it; its sign is not known, so no time rather than one 10 hours off
    ("Mon, 07 Dec 2026 14:05:09 GMT+5", None),
    ("2026-12-07 14:05:09 UTC-3", None),
    ("2026-12-07 14:05:09 +05 +05 +05", None),  # a tail it does not read: no time, not the host's zone
    ("2026-12-07 14:05:09 UTC+25:00", None),
    # fractional seconds in an RFC 1123 date gave no time
    ("Mon, 07 Dec 2026 14:05:09.250 GMT", datetime(2026, 12, 7, 14, 5, 9, 250000, tzinfo=timezone.utc)),
    ("Mon, 07 Dec 2026 14:05:09,123456789 +0100", datetime(2026, 12, 7, 13, 5, 9, 123456, tzinfo=timezone.utc)),
    # EC2's metadata NotBefore (RFC 822 without the weekday: aws/aws-node-termination-handler#315's layout
    # "2 Jan 2006 15:04:05 GMT"), NTH's description's Go Time.String() (aws/aws-node-termination-handler#757),
    # VM::EC2's ISO offset without its colon
    ("28 Dec 2020 06:00:00 GMT", datetime(2020, 12, 28, 6, tzinfo=timezone.utc)),
    ("2023-01-23 00:18:29 +0000 UTC", datetime(2023, 1, 23, 0, 18, 29, tzinfo=timezone.utc)),
    ("2011-12-05T13:00:00+0000", datetime(2011, 12, 5, 13, tzinfo=timezone.utc)),
    ("2020-09-09T16:10:47.123456789Z", datetime(2020, 9, 9, 16, 10, 47, 123456, tzinfo=timezone.utc)),
])
def test_occurs_time_reads_a_notices_own_time_of_the_event(text, want):
    """``occurs_time``: when the event a notice announces happens (µs UTC), as the notice states it; None for no
    such time."""
    from ingest.assemble import occurs_time
    cet = timezone(timedelta(hours=1))
    got = occurs_time(text, cet)
    assert got == (None if want is None else int(want.timestamp()) * 1_000_000 + want.microsecond)


def test_a_notices_time_of_the_event_is_its_start_not_its_ts(pipeline):
    """The catalog's real Azure notice (scylladb/scylla-cluster-tests#5608): ``details.occurs_us`` is its NotBefore,
    the correlator's ``Ev.start``; its ``ts`` stays its line's (13:46:56, 15 minutes before)."""
    from correlate.model import events_from_table
    line = ("< t:2023-03-16 13:46:56,005 f:cluster_azure.py l:107  c:sdcm.cluster_azure   p:WARNING > Node "
            "longevity-10gb-3h-master-db-node-f78cd6ae-eastus-2 [13.92.183.112 | 10.0.0.6] (seed: False): Unhandled "
            "Azure scheduled event: {'EventId': 'CA9C0DC4-E841-476D-94D5-9FC2FF983BCD', 'EventStatus': 'Scheduled', "
            "'EventType': 'Reboot', 'ResourceType': 'VirtualMachine', 'Resources': "
            "['longevity-10gb-3h-master-db-node-eastus-2'], 'NotBefore': 'Thu, 16 Mar 2023 14:01:28 GMT', "
            "'Description': 'Virtual machine is going to be restarted as requested by authorized user.', "
            "'EventSource': 'User', 'DurationInSeconds': -1}")
    # the harness's "< t:…" stamp is not read: the line is timed by its Kafka append, here the stamp's time
    sent = int(datetime(2023, 3, 16, 13, 46, 56, tzinfo=timezone.utc).timestamp()) * 1_000_000
    seg = Segment(data=line.encode(), origin="t:vm1", stream="vm1", host="vm1", ref_ts=sent, ref_basis="kafka",
                  ingest_ts=sent)
    (e,) = events_from_table(pipeline.run(Decoded(segments=[seg])).events)
    not_before = int(datetime(2023, 3, 16, 14, 1, 28, tzinfo=timezone.utc).timestamp()) * 1_000_000
    assert (e.signature, e.details["occurs_us"], e.start) == ("azure.scheduled_event_notice", not_before, not_before)
    assert e.ts == sent


def test_a_notice_whose_time_no_calendar_holds_loses_no_line_beside_it(pipeline):
    """An Azure notice whose NotBefore's year no calendar holds (a break-it pass: occurs_time raised OverflowError and
    the whole Kafka value or file was skipped, ``firstfault diagnose`` said "cannot match", the Xid 79 beside it
    lost): both lines are events, the notice without ``occurs_us`` (it counts at its line)."""
    from correlate.model import events_from_table
    notice = ("{'EventId': 'CA9C', 'EventStatus': 'Scheduled', 'EventType': 'Reboot', 'ResourceType': "
              "'VirtualMachine', 'Resources': ['vm1'], 'NotBefore': 'Thu, 1 Mar 99999999999999999999 1:1:1', "
              "'Description': 'x', 'EventSource': 'User', 'DurationInSeconds': -1}")
    data = (f"2023-03-16T13:46:56Z vm1 agent: Unhandled Azure scheduled event: {notice}\n"
            "2023-03-16T13:46:57Z vm1 kernel: NVRM: Xid (PCI:0000:1b:00): 79, pid=1, GPU has fallen off the bus.\n")
    sent = int(datetime(2023, 3, 16, 13, 47, tzinfo=timezone.utc).timestamp()) * 1_000_000
    seg = Segment(data=data.encode(), origin="t:vm1", stream="vm1", host="vm1", ref_ts=sent, ref_basis="kafka",
                  ingest_ts=sent)
    out = pipeline.run(Decoded(segments=[seg]))
    evs = sorted(events_from_table(out.events), key=lambda e: e.ts)
    assert [(e.signature, e.xid) for e in evs] == [("azure.scheduled_event_notice", None), ("xid", 79)]
    assert "occurs_us" not in evs[0].details and evs[0].start == evs[0].ts
