"""``firstfault send`` (api/send_cli.py): lines from a file or standard input into a raw topic, without kcat. The
packing and the topic choice are pure; the command itself runs against the real local broker (the ``kafka``
fixture's), and what it sent is read back and through the ingest pipeline."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from aiokafka import AIOKafkaConsumer
from typer.testing import CliRunner

from api.cli import app
from api.send_cli import pack, pick_topic
from ingest import broker
from ingest.consumer import decode_records

runner = CliRunner()
TOPICS = ["fleet.dmesg", "fleet.nccl", "fleet.nvml"]
#: the README's quick-start line (docs/operations.md, "Feeding your own lines"): Xid 79, NVIDIA's "GPU has fallen off
#: the bus", in the shape the driver prints it (tests/corpus/004 and its public report)
XID79 = ("2026-12-04T11:00:00.000000Z node099 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=0, GPU has fallen off the "
         "bus.")


def test_each_line_is_a_record_and_blank_lines_are_not_sent():
    values, n = pack([b"a\n", b"\n", b"  \r\n", b"b\r\n", b"c"])
    assert (values, n) == ([b"a", b"b", b"c"], 3)


def test_lines_per_record_packs_lines_as_the_demo_does_and_a_value_closes_at_its_byte_bound():
    assert pack([b"1", b"2", b"3", b"4", b"5"], 2) == ([b"1\n2", b"3\n4", b"5"], 5)
    # 4 + 1 + 4 = 9 bytes fit a bound of 9; the third line would make 14: the next value
    assert pack([b"aaaa", b"bbbb", b"cccc"], 100, max_bytes=9) == ([b"aaaa\nbbbb", b"cccc"], 3)
    # a line longer than the bound is a value of its own, whole (the broker says whether it takes it)
    assert pack([b"a", b"x" * 20, b"b"], 100, max_bytes=9) == ([b"a", b"x" * 20, b"b"], 3)


def test_a_topic_is_a_raw_topic_by_name_or_last_word_and_nothing_else():
    assert pick_topic("fleet.nccl", TOPICS) == "fleet.nccl"
    assert pick_topic("nvml", TOPICS) == "fleet.nvml"
    for wrong in ("fleet.dmseg", "fleet.dlq", "fleet.events", "fleet"):
        with pytest.raises(ValueError, match="fleet.dmesg, fleet.nccl, fleet.nvml"):
            pick_topic(wrong, TOPICS)
    with pytest.raises(ValueError):  # a last word two topics share names neither
        pick_topic("dmesg", ["a.dmesg", "b.dmesg"])


def test_a_topic_that_is_not_a_raw_topic_is_a_usage_error_before_any_broker_is_asked(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "node099.dmesg.log").write_text(XID79 + "\n")
    r = runner.invoke(app, ["send", "--topic", "fleet.dmseg", "node099.dmesg.log"],
                      env={"FIRSTFAULT_STATE_DIR": str(tmp_path / "state"), "FIRSTFAULT_KAFKA_BOOTSTRAP": ""})
    assert r.exit_code == 2, r.output
    said = " ".join(r.output.replace("│", " ").split())  # without click's error box
    assert "'fleet.dmseg' is not one of the raw topics the ingest workers read" in said


def _read_back(kafka: str, topic: str, n: int) -> list:
    async def go() -> list:
        c = AIOKafkaConsumer(topic, bootstrap_servers=kafka, auto_offset_reset="earliest", enable_auto_commit=False,
                             group_id=f"read-{uuid.uuid4().hex[:8]}")
        await c.start()
        got: list = []
        try:
            while len(got) < n:
                batch = await asyncio.wait_for(c.getmany(timeout_ms=1000), 60)
                got += [r for rs in batch.values() for r in rs]
        finally:
            await c.stop()
        return sorted(got, key=lambda r: (r.partition, r.offset))
    return asyncio.run(go())


@pytest.fixture
def raw_topics(kafka, monkeypatch, tmp_path):
    """Three raw topics of this test's own on the session broker, configured as ``topics`` (``<id>.dmesg``, …)."""
    tag = f"send-{uuid.uuid4().hex[:8]}"
    topics = [f"{tag}.dmesg", f"{tag}.nccl", f"{tag}.nvml"]
    asyncio.run(broker.ensure_topics(kafka, topics, partitions=3))
    monkeypatch.setenv("FIRSTFAULT_KAFKA_BOOTSTRAP", kafka)
    monkeypatch.setenv("FIRSTFAULT_TOPICS", ",".join(topics))
    monkeypatch.setenv("FIRSTFAULT_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.chdir(tmp_path)
    return topics


@pytest.mark.kafka
def test_send_puts_each_line_of_a_file_on_the_topic_keyed_by_the_file_s_host(kafka, raw_topics, tmp_path,
                                                                            pipeline):
    """The quick start's line (docs/operations.md) from a file ``node099.dmesg.log``: one record per line, in order,
    key ``node099`` (the file's name up to its first '.', as ``diagnose`` names hosts), on the topic named by its
    last word; read back and through the ingest pipeline, it is the Xid 79 event of node099."""
    other = XID79.replace("NVRM: Xid (PCI:0000:3b:00): 79, pid=0, GPU has fallen off the bus.",
                          "usb 1-1: new high-speed USB device number 2 using xhci_hcd")  # recognised as nothing
    (tmp_path / "node099.dmesg.log").write_text(f"{XID79}\n\n{other}\n")
    r = runner.invoke(app, ["send", "--topic", "dmesg", "node099.dmesg.log"])
    assert r.exit_code == 0, r.output
    assert f"sent 2 lines in 2 records to {raw_topics[0]} on {kafka} (key node099)" in " ".join(r.stderr.split())
    recs = _read_back(kafka, raw_topics[0], 2)
    assert [(rec.key, rec.value) for rec in recs] == [(b"node099", XID79.encode()), (b"node099", other.encode())]
    assert len({rec.partition for rec in recs}) == 1  # one key, one partition: the host's lines stay in order
    ev = pipeline.run(decode_records(recs)).events.to_pylist()
    assert [(e["host"], e["kind"], e["xid"]) for e in ev] == [("node099", "xid", 79)]


@pytest.mark.kafka
def test_send_reads_ndjson_envelopes_from_standard_input_packed_as_asked(kafka, raw_topics, pipeline):
    """Vector's envelopes (``host``, ``timestamp``, ``message``) on standard input, no key (the envelope names the
    host), two lines to a record: 3 lines in 2 records, read back whole, and the envelope's host and time are the
    event's."""
    env = [{"host": f"node09{i}", "timestamp": f"2026-12-04T11:00:0{i}.000000Z",
            "message": f"NVRM: Xid (PCI:0000:3b:00): 79, pid=0, GPU has fallen off the bus. ({i})"} for i in range(3)]
    text = "".join(json.dumps(e) + "\n" for e in env)
    r = runner.invoke(app, ["send", "--topic", raw_topics[0], "--lines-per-record", "2", "-"], input=text)
    assert r.exit_code == 0, r.output
    assert f"sent 3 lines in 2 records to {raw_topics[0]}" in r.stderr and "no key" in r.stderr
    recs = _read_back(kafka, raw_topics[0], 2)
    assert sorted(rec.value for rec in recs) == sorted([
        (json.dumps(env[0]) + "\n" + json.dumps(env[1])).encode(), json.dumps(env[2]).encode()])
    assert {rec.key for rec in recs} == {None}
    ev = pipeline.run(decode_records(recs)).events.to_pylist()
    assert sorted((e["host"], e["xid"], e["ts"].isoformat()) for e in ev) == [
        (f"node09{i}", 79, f"2026-12-04T11:00:0{i}+00:00") for i in range(3)]


@pytest.mark.kafka
def test_send_to_a_raw_topic_the_broker_lacks_says_how_to_create_it(kafka, raw_topics, monkeypatch, tmp_path):
    """A configured raw topic not created on the broker (it creates none on its own): exit 1 and the way out,
    nothing sent. Through ``main`` (the console script's path), where the missing topic is said."""
    (tmp_path / "node099.log").write_text(XID79 + "\n")
    root = Path(__file__).resolve().parents[1]
    p = subprocess.run([sys.executable, "-m", "api.cli", "send", "--topic", "gone.dmesg", "node099.log"],
                       capture_output=True, text=True, timeout=120, cwd=tmp_path,
                       env={**os.environ, "PYTHONPATH": str(root),
                            "FIRSTFAULT_TOPICS": "gone.dmesg," + raw_topics[1]})
    assert p.returncode == 1, p.stderr
    assert f"topic gone.dmesg does not exist on the broker at {kafka}: `firstfault kafka topics` creates" in p.stderr


def test_a_file_is_read_as_diagnose_reads_it_compressed_utf16_or_with_carriage_returns():
    """gzip, bzip2 and xz decompressed, UTF-16 (its byte order mark dropped) as UTF-8, a serial console's CR-only
    lines split: a gzip file went out as records of compressed fragments, all dead letters (a break-it pass)."""
    import bz2
    import gzip
    import lzma

    from api.send_cli import log_text

    text = (XID79 + "\nsecond line\n").encode()
    for raw in (gzip.compress(text), bz2.compress(text), lzma.compress(text), text.decode().encode("utf-16"),
                text.replace(b"\n", b"\r")):
        assert pack(log_text(raw).split(b"\n")) == ([XID79.encode(), b"second line"], 2), raw[:8]


def test_binary_data_or_a_broken_gzip_file_is_refused_and_nothing_is_sent(tmp_path, monkeypatch):
    """Exit 2 before any broker is asked (none is configured here), saying why, as ``diagnose`` skips such a file."""
    import gzip

    monkeypatch.chdir(tmp_path)
    (tmp_path / "node1.bin").write_bytes(bytes(range(256)) * 64)
    (tmp_path / "node2.log.gz").write_bytes(gzip.compress((XID79 + "\n").encode())[:20])
    env = {"FIRSTFAULT_STATE_DIR": str(tmp_path / "state"), "FIRSTFAULT_KAFKA_BOOTSTRAP": "127.0.0.1:1"}
    r = runner.invoke(app, ["send", "--topic", "fleet.dmesg", "node1.bin"], env=env)
    assert r.exit_code == 2 and "nothing sent: node1.bin is not log text" in " ".join(r.stderr.split()), r.output
    r = runner.invoke(app, ["send", "--topic", "fleet.dmesg", "node2.log.gz"], env=env)
    assert r.exit_code == 2, r.output
    assert "cannot read node2.log.gz: truncated gzip stream" in " ".join(r.stderr.split()), r.stderr


@pytest.mark.kafka
def test_a_gzip_file_goes_out_as_its_lines_and_a_line_past_a_mebibyte_whole(kafka, raw_topics, tmp_path, pipeline):
    """A gzip file's lines, decompressed, one record each; a 2 MiB line is one record of its own, taken by the local
    broker (``message.max.bytes`` 128 MiB): aiokafka's own 1 MiB ``max_request_size`` refused it in a traceback,
    exit 1, before the broker saw it (a break-it pass)."""
    import gzip

    long = b"x" * (2 * 1024 * 1024)
    (tmp_path / "node099.dmesg.log.gz").write_bytes(gzip.compress(XID79.encode() + b"\n" + long + b"\n"))
    r = runner.invoke(app, ["send", "--topic", "dmesg", "node099.dmesg.log.gz"])
    assert r.exit_code == 0, r.output
    assert "sent 2 lines in 2 records" in r.stderr and "(key node099)" in r.stderr
    recs = _read_back(kafka, raw_topics[0], 2)
    assert [rec.value for rec in recs] == [XID79.encode(), long]
    ev = pipeline.run(decode_records(recs[:1])).events.to_pylist()
    assert [(e["host"], e["xid"]) for e in ev] == [("node099", 79)]



#: a job's log with NCCL lines of node01 and then its vLLM traceback, which names no host: the real lines of
#: tests/corpus/015 (llm-d/llm-d#191, https://github.com/llm-d/llm-d/issues/191), up to the traceback's header
IB_CASE = Path(__file__).parent / "corpus" / "015-ib-port-flap-kills-vllm-tp-workers" / "input" / "node01.log"


@pytest.mark.kafka
@pytest.mark.parametrize("per_record", [1, 200])
def test_a_sent_file_s_hostless_line_takes_the_host_its_earlier_lines_name_as_diagnose_gives_it(
        kafka, raw_topics, tmp_path, pipeline, per_record):
    """A file's line that names no host (a vLLM traceback) after lines that all name node01 (NCCL's
    ``node01:311:405``) is node01's through the broker as in ``diagnose``, whatever the file's name (the key, here
    gpu-a03), one line per record (as Vector and Fluent Bit ship a file) or 200 to a record: it went to gpu-a03, an
    ``other`` incident of its own, and node01's ib_port incident lost its downstream (a fresh user's trial). When
    the earlier lines name two hosts the line is the key's, as in ``diagnose`` the file name's."""
    from api.diagnose import diagnose_paths
    from correlate.correlator import correlate, correlation_settings
    from schemas.settings import Settings

    lines = IB_CASE.read_text().splitlines()[:4]  # three NCCL WARN lines of node01, then " WorkerProc hit …"
    assert all("] node01:311:405 [0]" in x for x in lines[:3]) and lines[3] == " WorkerProc hit an exception."
    two = [lines[0], lines[1].replace("node01:311:405", "node02:311:405"), *lines[2:]]  # node01, node02, node01
    files = {"gpu-a03": lines, "gpu-a04": two}
    for key, text in files.items():
        (tmp_path / f"{key}.nccl.log").write_text("\n".join(text) + "\n")
        r = runner.invoke(app, ["send", "--topic", "nccl", "--lines-per-record", str(per_record), f"{key}.nccl.log"])
        assert r.exit_code == 0, r.output
    recs = _read_back(kafka, raw_topics[1], 8 if per_record == 1 else 2)

    def seen(events: list[dict]) -> list[tuple]:
        return [(e["host"], e["kind"], e["ts"].isoformat(), e["ts_basis"]) for e in events]

    def shape(incidents: list[dict]) -> list[tuple]:
        return [(i["category"], i["initiator"]["host"], [(d["host"], d["kind"]) for d in i["downstream"]])
                for i in incidents]

    settings, now_us = Settings(), 1_800_000_000_000_000  # 2027: every incident of 2025 is quiet
    batches, local = {}, {}
    for key in files:
        batches[key] = pipeline.run(decode_records([rec for rec in recs if rec.key == key.encode()]))
        local[key] = diagnose_paths([tmp_path / f"{key}.nccl.log"], settings, now_us=now_us)
    # each line has the host diagnose gives it: the traceback node01's, or the key's after lines of two hosts
    for key, hostless in (("gpu-a03", "node01"), ("gpu-a04", "gpu-a04")):
        hosts = [(e["host"], e["kind"]) for e in batches[key].events.to_pylist()]
        assert hosts == [(e["host"], e["kind"]) for e in local[key][1].events.to_pylist()]
        assert hosts[-1] == (hostless, "nccl_error")
    # node01's traceback takes the time of node01's line before it and its port error explains it: one incident,
    # as diagnose's, its downstream on node01
    a03 = batches["gpu-a03"]
    assert seen(a03.events.to_pylist()) == seen(local["gpu-a03"][1].events.to_pylist())
    assert seen(a03.events.to_pylist())[-1] == ("node01", "nccl_error", "2025-09-17T15:23:34+00:00", "inherited")
    incidents = correlate(a03.events, a03.link_samples, a03.topology, settings=correlation_settings(settings),
                          now_us=now_us)
    assert shape(incidents) == shape(local["gpu-a03"][2]) == [("ib_port", "node01", [("node01", "nccl_error")])]


def _on_topic(kafka: str, topic: str) -> int:
    """How many records ``topic`` (one of ``raw_topics``: 3 partitions) holds, the sum of its end offsets."""
    from aiokafka import TopicPartition

    async def go() -> int:
        c = AIOKafkaConsumer(bootstrap_servers=kafka, enable_auto_commit=False)
        await c.start()
        try:
            return sum((await c.end_offsets([TopicPartition(topic, p) for p in range(3)])).values())
        finally:
            await c.stop()
    return asyncio.run(go())


@pytest.mark.kafka
@pytest.mark.parametrize("keep", [None, 0])
def test_several_files_go_in_one_send_each_keyed_by_the_host_its_own_name_gives(kafka, raw_topics, tmp_path, pipeline,
                                                                                monkeypatch, keep):
    """``send --topic dmesg logs/*.dmesg.log`` exited 2, click's "unexpected extra argument", and the docs gave a
    shell loop (a fresh user's trial). Each file's records carry the host its name gives
    (``host_from_filename``, as ``diagnose``: ``node02-dmesg.log`` is node02, a gzip file's read decompressed), each
    file is said on stderr as one file is, then the total; a file named twice is sent once, one of blank lines not.
    With ``KEEP_READ_BYTES`` 0 every file is read again at its turn (a folder too large to hold): the same records."""
    import gzip

    if keep is not None:
        monkeypatch.setattr("api.send_cli.KEEP_READ_BYTES", keep)
    logs = tmp_path / "logs"
    logs.mkdir()
    lines = {h: [XID79.replace("node099", h).replace("11:00:00", f"11:00:0{i}") for i in range(n)]
             for h, n in (("node01", 3), ("node02", 1), ("node03", 2))}
    (logs / "node01.dmesg.log").write_text("\n".join(lines["node01"]) + "\n\n")
    (logs / "node02-dmesg.log").write_text("\n".join(lines["node02"]) + "\n")
    (logs / "node03.dmesg.log.gz").write_bytes(gzip.compress(("\n".join(lines["node03"]) + "\n").encode()))
    (logs / "node04.dmesg.log").write_text("\n \n")
    r = runner.invoke(app, ["send", "--topic", "dmesg", "logs/node01.dmesg.log", "logs/node02-dmesg.log",
                            "logs/node04.dmesg.log", "logs/node03.dmesg.log.gz", "logs/../logs/node01.dmesg.log"])
    assert r.exit_code == 0, r.output
    said = " ".join(r.stderr.split())
    assert said.index(f"sent 3 lines in 3 records of logs/node01.dmesg.log to {raw_topics[0]} on {kafka} (key "
                      "node01)") < said.index("sent 1 line in 1 record of logs/node02-dmesg.log") < said.index(
        "sent 2 lines in 2 records of logs/node03.dmesg.log.gz")
    assert "logs/../logs/node01.dmesg.log is logs/node01.dmesg.log, named already: sent once" in said
    assert "logs/node04.dmesg.log holds no line: not sent" in said
    assert said.endswith(f"sent 3 files: 6 lines in 6 records to {raw_topics[0]}")
    recs = _read_back(kafka, raw_topics[0], 6)
    assert _on_topic(kafka, raw_topics[0]) == 6  # nothing twice
    for host, want in lines.items():  # each host's lines under its key, in order, on one partition
        mine = [rec for rec in recs if rec.key == host.encode()]
        assert [rec.value.decode() for rec in mine] == want and len({rec.partition for rec in mine}) == 1
    # through the ingest pipeline each file's Xid 79 is its host's (a GPU's repeats are one event, as in diagnose)
    ev = pipeline.run(decode_records(recs)).events.to_pylist()
    assert sorted((e["host"], e["xid"]) for e in ev) == [("node01", 79), ("node02", 79), ("node03", 79)]


@pytest.mark.kafka
@pytest.mark.parametrize("bad", ["missing", "binary", "folder", "unreadable"])
def test_a_file_that_cannot_be_sent_among_several_is_named_and_nothing_is_sent(kafka, raw_topics, tmp_path, bad):
    """One missing, binary, unreadable file or a folder among several: exit 2 naming it, and the topic holds
    nothing, not the files before it (the shell loop the docs gave sent those, then stopped)."""
    (tmp_path / "node01.dmesg.log").write_text(XID79 + "\n")
    (tmp_path / "node03.dmesg.log").write_text(XID79 + "\n")
    path = tmp_path / "node02.dmesg.log"
    if bad == "binary":
        path.write_bytes(bytes(range(256)) * 64)
    elif bad == "folder":
        path.mkdir()
    elif bad == "unreadable":
        if os.geteuid() == 0:
            pytest.skip("root reads a file of mode 000")
        path.write_text(XID79 + "\n")
        path.chmod(0)
    r = runner.invoke(app, ["send", "--topic", "dmesg", "node01.dmesg.log", "node02.dmesg.log", "node03.dmesg.log"])
    assert r.exit_code == 2, r.output
    said = " ".join(r.stderr.split())
    assert {"missing": "cannot send node02.dmesg.log: no such file nothing sent (1 file of 3 not sendable)",
            "binary": "nothing sent: node02.dmesg.log is not log text",
            "folder": "cannot send node02.dmesg.log: a folder: name its files (folder/*.log)",
            "unreadable": "nothing sent: cannot read node02.dmesg.log: Permission denied"}[bad] in said, said
    assert "sent 1 line" not in said
    assert _on_topic(kafka, raw_topics[0]) == 0


@pytest.mark.kafka
def test_key_with_several_files_only_when_their_names_give_one_host(kafka, raw_topics, tmp_path):
    """``--key`` over files of several hosts put every host's lines under one: refused (exit 2, each file's host
    named). A host's rotated logs under a folder that names no host (``logs/kern.log``, ``logs/kern.log.1``: both
    host ``kern``) take it, every record keyed by it."""
    logs = tmp_path / "logs"
    logs.mkdir()
    (tmp_path / "node01.dmesg.log").write_text(XID79 + "\n")
    (tmp_path / "node02.dmesg.log").write_text(XID79 + "\n")
    r = runner.invoke(app, ["send", "--topic", "dmesg", "--key", "node07", "node01.dmesg.log", "node02.dmesg.log"])
    assert r.exit_code == 2, r.output
    said = " ".join(r.output.replace("│", " ").split())
    assert "one key for files of different hosts (node01.dmesg.log: node01, node02.dmesg.log: node02)" in said
    assert _on_topic(kafka, raw_topics[0]) == 0
    (logs / "kern.log.1").write_text(XID79 + "\n")
    (logs / "kern.log").write_text(XID79.replace("11:00:00", "11:00:01") + "\nsecond\n")
    r = runner.invoke(app, ["send", "--topic", "dmesg", "--key", "node07", "logs/kern.log.1", "logs/kern.log"])
    assert r.exit_code == 0, r.output
    assert "sent 2 files: 3 lines in 3 records" in " ".join(r.stderr.split())
    recs = _read_back(kafka, raw_topics[0], 3)
    assert [rec.key for rec in recs] == [b"node07"] * 3
    assert [rec.value for rec in recs] == [XID79.encode(), XID79.replace("11:00:00", "11:00:01").encode(), b"second"]


@pytest.mark.kafka
def test_standard_input_among_files_has_no_key_and_is_read_once(kafka, raw_topics, tmp_path):
    """``-`` among files is standard input, without a key (each line's host is what it names); named twice it is
    refused, it can be read once."""
    (tmp_path / "node01.dmesg.log").write_text(XID79 + "\n")
    r = runner.invoke(app, ["send", "--topic", "dmesg", "-", "node01.dmesg.log", "-"], input=XID79 + "\n")
    assert r.exit_code == 2 and "can be read once" in r.output, r.output
    r = runner.invoke(app, ["send", "--topic", "dmesg", "-", "node01.dmesg.log"], input=XID79 + "\n")
    assert r.exit_code == 0, r.output
    said = " ".join(r.stderr.split())
    assert "sent 1 line in 1 record of standard input" in said and "(no key: each line's host is what it names)" in said
    recs = _read_back(kafka, raw_topics[0], 2)
    assert sorted(rec.key or b"" for rec in recs) == [b"", b"node01"]
