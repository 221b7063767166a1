"""Hostile input, each class through the real broker and through `diagnose`: a correct event or a dead-letter
record with the reason, the consumer goes on, nothing is silently dropped, memory stays bounded (issue 7).

Classes: invalid UTF-8, NUL bytes, a 10 MB line, a 100 MB message, broken or truncated NDJSON envelopes,
wrong field types, times in the far past or future, compression (Kafka batch codecs from kcat, gzip/zstd
values, an unknown format), lines that almost match a signature, a storm of one repeated line, records that
make decoding or the pipeline raise, and a value with thousands of bad parts (one dead-letter record).

The broker and ``diagnose`` tests are marked ``kafka`` (they share the slow fixtures: a broker, 100 MB
values and files); the unit tests of ``ingest/decode.py`` and ``ingest/pipeline.py`` at the end are not, so
``-m "not kafka"`` runs them.
"""

from __future__ import annotations

import asyncio
import gzip
import itertools
import lzma
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest
import zstandard
from aiokafka import AIOKafkaProducer

from benchmarks.crash import read_topic
from ingest.catalog import default_catalog
from ingest.consumer import DLQ_VALUE_BYTES, IngestWorker, produce_lines
from ingest.decode import Decoded, decode_file, decode_message
from ingest.lake import Lake

ROOT = Path(__file__).resolve().parents[1]
FIRSTFAULT = str(Path(sys.executable).with_name("firstfault"))
XID = "NVRM: Xid (PCI:0000:{bus}:00): 79, pid=1, name=p, GPU has fallen off the bus."
T_MS = int(time.time() * 1000)


def xid(bus: str = "18") -> bytes:
    return XID.format(bus=bus).encode()


def corrupt_gzip(data: bytes) -> bytes:
    """A gzip stream whose deflate blocks are damaged (the header is intact): zlib raises on it."""
    g = gzip.compress(data)
    return g[:10] + bytes(b ^ 0x55 for b in g[10:40]) + g[40:]


#: hand-made near misses: the shape of a fault line with the part that makes it one broken
NEAR = ["NVRM: Xid (PCI:0000:18:00): seventy-nine, pid=1, name=p, GPU has fallen off the bus.",
        "NVRM Xid 79 GPU has fallen off the bus",
        "Xid (PCI:0000:18:00): 79 reported by a test harness, not the driver",
        "nvidia-nvswitch0: SXid (PCI:0000:06:00.0) pending",
        "pcieport 0000:00:02.0: AER: no error received",
        "NCCL INFO Channel 00 : 0[0] -> 1[1] via",
        "[Rank 0] Watchdog caught collective operation",
        "mlx5_core 0000:3b:00.0: Port module event"]


def near_misses() -> list[str]:
    """Lines that almost match a signature and match none: the catalog's near misses that the plain-re
    oracle finds no signature in (many near misses of one entry rightly match another), and ``NEAR``."""
    from ingest.match import ReferenceMatcher

    cat = default_catalog()
    ref = ReferenceMatcher(cat)
    lines = [n for c in cat.entries for n in (c.sig.near_misses or [])] + NEAR
    return [n for n in lines if not ref.scan(n.encode())]


def envelope(**kw) -> bytes:
    return orjson.dumps(kw)


#: (Kafka key = host of the class, values). Keys name the class so its events are found by host.
STORM = 20_000


def inputs() -> list[tuple[str, list[bytes]]]:
    good = envelope(host="json", message=xid("20").decode(), timestamp="2026-01-05T10:00:00Z")
    return [
        ("utf8", [b"\xff\xfe " + xid("21").replace(b"name=p", b"name=\xc3\x28\xa0\xa1")]),
        ("nul", [xid("22").replace(b"name=p", b"name=a\x00b") + b"\n\x00\x00\x00"]),
        ("long", [xid("23") + b" " + b"A" * (10 << 20)]),
        ("huge", [b"x" * (100 << 20)]),
        ("after", [xid("24")]),  # a plain record after the huge ones: the consumer went on
        ("json", [b"\n".join([good, b'{"host": "json", "message": "NVRM: Xid (PCI:0000:2', b"[1, 2]",
                              b'{"host": "json"}', good.replace(b"20:00", b"25:00")])]),
        ("types", [envelope(host=["a"], message=xid("32").decode()), envelope(host="types", message=5),
                   envelope(host="types", message="x", timestamp={"a": 1}),
                   envelope(MESSAGE=None, _HOSTNAME="types")]),
        ("time", [b"0001-01-01T00:00:01Z " + xid("26"), b"9999-12-31T23:59:59-14:00 " + xid("27"),
                  envelope(host="time", message=xid("28").decode(), timestamp="0001-01-01T00:00:00Z"),
                  envelope(host="time", message=xid("29").decode(), timestamp="2999-01-01T00:00:00Z")]),
        ("overflow", [envelope(host="overflow", message=xid("2a").decode(), timestamp=1e30), xid("2b")]),
        ("gz", [gzip.compress(xid("2c")), zstandard.ZstdCompressor().compress(xid("2d"))]),
        ("zlib", [corrupt_gzip(xid("2e") * 50), xid("2f")]),
        ("near", ["\n".join(near_misses()).encode()]),
        ("storm", [b"\n".join([xid("30")] * 1000) for _ in range(STORM // 1000)]),
        ("amplify", [b"\n".join(b'{"host": "amplify", "message": ' + str(i).encode() for i in range(5000))]),
        # a watchdog line claiming a collective ran 3,000 years, beside a real fault (it stopped `firstfault run`
        # at every restart: a break-it pass)
        ("duration", [xid("33") + b"\n" + WATCHDOG_3000_YEARS]),
        *((key, [xid("37")]) for key in BAD_HOST_KEYS),
        ("surrogate", SURROGATES),
    ]


def _with(rec: bytes, odd: bytes) -> bytes:
    return rec.replace(b"name=p", b"name=p" + odd)


#: lone UTF-16 surrogates: escaped in an NDJSON record and in a JSON array value (each was a reject, the array
#: value's good record lost with it), encoded as bytes in a text line, and as bytes in an NDJSON record (no UTF-8:
#: that record alone is a reject, its reason naming the surrogate)
SURROGATES = [b"\n".join([_with(envelope(host="surrogate", message=xid("70").decode()), rb"\ud800"),
                          envelope(host="surrogate", message=xid("71").decode())]),
              b"[" + _with(envelope(host="surrogate", message=xid("72").decode()), rb"\udfff") + b","
              + envelope(host="surrogate", message=xid("73").decode()) + b"]",
              _with(xid("74"), b"\xed\xa0\x80"),
              b"\n".join([envelope(host="surrogate", message=xid("75").decode()),
                          _with(envelope(host="surrogate", message=xid("76").decode()), b"\xed\xa0\x80")])]


#: Kafka keys that name no host (a host from its key, as the line names none): a path, a name longer than the
#: API takes, a newline (a 1 MB key became a 1 MB host in every incident, "rack1/node402"'s timeline could not
#: be asked for: a break-it pass)
BAD_HOST_KEYS = ("rack1/node402", "n" * 300, "node111\nx")


WATCHDOG_3000_YEARS = (b"[rank3]:[E1130 03:12:09.000000000 ProcessGroupNCCL.cpp:616] [Rank 3] Watchdog caught "
                       b"collective operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
                       b"Timeout(ms)=600000) ran for 99999999999999 milliseconds before timing out.")
#: Kafka CreateTimes a producer may set that say nothing of when a line was written (ms): 1897, 1970
ODD_KAFKA_TIMES = {"ts1897": -2_300_000_000_000, "ts1970": 1}


async def _create(bootstrap: str, topics: list[str], big: bool) -> None:
    from aiokafka.admin import AIOKafkaAdminClient, NewTopic

    # the local broker's log segments are 64 MB: a topic that takes a 100 MB value needs larger ones
    cfg = {"segment.bytes": str(256 << 20), "max.message.bytes": str(128 << 20)} if big else {}
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(t, 2, 1, topic_configs=cfg) for t in topics])
    finally:
        await admin.close()


def kcat(bootstrap: str, topic: str, key: str, codec: str, value: bytes) -> None:
    """One record through kcat with Kafka batch compression ``codec`` (a real third-party producer)."""
    subprocess.run(["kcat", "-P", "-b", bootstrap, "-t", topic, "-k", key, "-z", codec], input=value,
                   check=True, timeout=60)


BOMBS = 6  # gzip values of 60 MB decompressed each: 360 MB together, more than one batch may hold


def peak_rss_mib(p: subprocess.Popen, timeout: float) -> int:
    """Wait for ``p``; its peak resident set size (VmHWM, MiB), read from /proc while it runs."""
    peak = 0
    deadline = time.monotonic() + timeout
    while p.poll() is None and time.monotonic() < deadline:
        try:
            with open(f"/proc/{p.pid}/status") as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        peak = max(peak, int(line.split()[1]) // 1024)
        except OSError:
            pass
        time.sleep(0.02)
    if p.poll() is None:
        p.kill()
        p.wait(10)
        raise AssertionError(f"`firstfault ingest --once` did not finish in {timeout} s")
    return peak


@pytest.fixture(scope="module")
def through_kafka(kafka, tmp_path_factory):
    """Every class produced to a fresh topic, read by one `firstfault ingest --once` process (the real
    command) until caught up; its peak memory is watched from /proc."""
    tmp = tmp_path_factory.mktemp("badkafka")
    topic = f"bad.{time.time_ns()}"
    dlq = topic + ".dlq"
    asyncio.run(_create(kafka, [topic], big=True))
    asyncio.run(_create(kafka, [dlq, topic + ".events"], big=False))
    bomb = gzip.compress(b"x" * (60 << 20), compresslevel=1)

    async def produce() -> None:
        for key, values in inputs():
            await produce_lines(kafka, topic, key, values)
        await produce_lines(kafka, topic, "bombs", [bomb] * BOMBS)
        p = AIOKafkaProducer(bootstrap_servers=kafka, acks="all")
        await p.start()
        try:  # a bad record whose host is only in a header (as Fluent Bit's kafka output can send it)
            await (await p.send(topic, value=envelope(message=5), key=b"hdr",
                                headers=[("host", b"hdr-host"), ("x-shipper", b"fluent-bit")]))
            for key, ms in ODD_KAFKA_TIMES.items():  # an unstamped line whose record's time is no time
                await (await p.send(topic, value=xid("34"), key=key.encode(), timestamp_ms=ms))
        finally:
            await p.stop()

    asyncio.run(produce())
    if shutil.which("kcat"):
        for codec in ("gzip", "snappy", "lz4", "zstd"):
            # padded: librdkafka sends a batch uncompressed when compressing does not make it smaller (one short line),
            # and lz4, snappy and zstd batches then never reached the consumer's codecs (aiokafka needs cramjam for
            # them: without it ingest died at every restart on the first such batch, a break-it pass)
            kcat(kafka, topic, f"kcat-{codec}", codec, xid("31") + b" " + b"0" * 4096 + b" " + codec.encode())
    env = {k: v for k, v in os.environ.items() if not k.startswith("FIRSTFAULT_")}
    env.update(FIRSTFAULT_KAFKA_BOOTSTRAP=kafka, FIRSTFAULT_LAKE=str(tmp / "lake"), FIRSTFAULT_TOPICS=topic,
               FIRSTFAULT_DLQ_TOPIC=dlq, FIRSTFAULT_EVENTS_TOPIC=topic + ".events", FIRSTFAULT_GROUP_ID=topic,
               FIRSTFAULT_STATE_DIR=str(tmp), FIRSTFAULT_BATCH_LINGER_MS="50", FIRSTFAULT_LOG_LEVEL="INFO")
    p = subprocess.Popen([FIRSTFAULT, "ingest", "--once"], env=env, cwd=str(tmp), stdout=subprocess.DEVNULL,
                         stderr=open(tmp / "ingest.log", "wb"))
    peak = peak_rss_mib(p, 240)
    log = (tmp / "ingest.log").read_text(errors="replace")
    assert p.returncode == 0, log[-3000:]
    from api.store import Store

    events = Store(Lake(tmp / "lake")).query(
        "SELECT host, kind, xid, device, message, count, ts_basis, details, origin, epoch_us(ts) AS ts FROM events")
    dead = read_topic(kafka, dlq, 2)
    return {"events": events, "dead": dead, "topic": topic, "peak_mib": peak, "log": log,
            "records": len(read_topic(kafka, topic, 2))}


def of(events: list[dict], host: str) -> list[dict]:
    return [e for e in events if e["host"] == host]


def dlq_of(dead: list, origins: set[str]) -> list[dict]:
    """The dead-letter records (headers as str, plus the value) of records with these origins."""
    out = [{k: v.decode() for k, v in r.headers} | {"value": r.value, "key": r.key} for r in dead]
    return [h for h in out if h["ff-origin"] in origins]


def record_of(event_origin: str) -> str:
    """``kafka:t/0/17:5`` or ``kafka:t/0/17#r3:0`` -> ``kafka:t/0/17``."""
    return event_origin.split("#")[0] if "#" in event_origin else event_origin.rsplit(":", 1)[0]


@pytest.fixture(scope="module")
def origins(kafka, through_kafka) -> dict[str, set[str]]:
    """Kafka coordinates of each class's records (key -> {"kafka:topic/p/o"})."""
    out: dict[str, set[str]] = {}
    for r in read_topic(kafka, through_kafka["topic"], 2):
        out.setdefault(r.key.decode(), set()).add(f"kafka:{r.topic}/{r.partition}/{r.offset}")
    return out


#: the broker tests, and the diagnose tests that share their slow inputs
kafka = pytest.mark.kafka


@kafka
def test_the_consumer_went_on_and_stayed_healthy(through_kafka, origins):
    events = through_kafka["events"]
    assert through_kafka["records"] == sum(len(o) for o in origins.values())
    assert of(events, "after"), "the record after the 10 MB line and the 100 MB value was stored"
    assert "ingest unhealthy" not in through_kafka["log"]


@kafka
def test_invalid_utf8_and_nul_bytes_give_events(through_kafka, origins):
    events, dead = through_kafka["events"], through_kafka["dead"]
    [u] = of(events, "utf8")
    assert u["device"] == "0000:21:00.0" and "\ufffd" in u["message"]
    [n] = of(events, "nul")
    assert n["device"] == "0000:22:00.0" and "\x00" in n["message"]
    assert not dlq_of(dead, origins["utf8"]) and not dlq_of(dead, origins["nul"])


@kafka
def test_a_lone_surrogate_costs_no_other_line(through_kafka, origins):
    """An escaped lone surrogate reads as U+FFFD, in an NDJSON record and in a JSON array value, and bytes that
    encode one in a text line too: every fault is stored (through Parquet); the NDJSON record whose bytes encode one
    is no UTF-8, so it alone is dead-lettered, with that reason, and the record beside it is stored."""
    events, dead = through_kafka["events"], through_kafka["dead"]
    got = sorted((e["device"], "\ufffd" in e["message"]) for e in of(events, "surrogate"))
    assert got == [("0000:70:00.0", True), ("0000:71:00.0", False), ("0000:72:00.0", True), ("0000:73:00.0", False),
                   ("0000:74:00.0", True), ("0000:75:00.0", False)]
    [d] = dlq_of(dead, origins["surrogate"])
    assert d["ff-count"] == "1" and d["ff-parts"] == "r1:bad_envelope" and d["key"] == b"surrogate"
    assert "bytes ed a0 80 at byte" in d["ff-reason"] and "encode a UTF-16 surrogate" in d["ff-reason"]


@kafka
def test_a_10_mb_line_gives_its_event(through_kafka):
    events = through_kafka["events"]
    [e] = of(events, "long")
    assert e["device"] == "0000:23:00.0" and e["xid"] == 79


@kafka
def test_an_impossible_duration_or_kafka_time_neither_stops_ingest_nor_is_lost(through_kafka, origins):
    """A watchdog line claiming a collective ran 99999999999999 ms is stored with its number in ``details``
    only (no ``elapsed_ms`` the correlator would refuse); a record whose Kafka CreateTime is 1897 or 1970 is
    dead-lettered with the reason (1897 stopped `firstfault run` at every restart, 1970 became the event's time:
    a break-it pass), as an envelope's impossible time is."""
    events, dead = through_kafka["events"], through_kafka["dead"]
    got = {e["kind"]: e for e in of(events, "duration")}
    assert set(got) == {"xid", "nccl_timeout"} and got["xid"]["device"] == "0000:33:00.0"
    assert orjson.loads(got["nccl_timeout"]["details"])["elapsed_ms_text"] == "99999999999999"
    for key in ODD_KAFKA_TIMES:
        assert not of(events, key), key
        [d] = dlq_of(dead, origins[key])
        assert d["ff-error-code"] == "bad_timestamp" and "is no time from 2000 to 2100" in d["ff-reason"], d
        assert d["value"] == xid("34") and d["key"] == key.encode()


@kafka
def test_a_key_that_names_no_host_is_dead_lettered_with_the_reason(through_kafka, origins):
    events, dead = through_kafka["events"], through_kafka["dead"]
    for key in BAD_HOST_KEYS:
        assert not of(events, key), key
        [d] = dlq_of(dead, origins[key])
        assert d["ff-error-code"] == "bad_host" and "is no host name" in d["ff-reason"] and d["key"] == key.encode()
        assert d["value"] == xid("37")


@kafka
def test_a_100_mb_message_is_dead_lettered_with_the_reason(through_kafka, origins):
    events, dead = through_kafka["events"], through_kafka["dead"]
    [d] = dlq_of(dead, origins["huge"])
    assert d["ff-error-code"] == "too_large" and "104857600 bytes" in d["ff-reason"]
    # as much of it as a dead letter takes, and said so: the whole record stays at its origin (a break-it pass: a
    # 77 MB value of 700,000 Xid lines was a 4 KiB stub that said nothing of it)
    assert len(d["value"]) == DLQ_VALUE_BYTES and not of(events, "huge")
    assert d["ff-value-bytes"] == "104857600" and d["ff-value-cut"].startswith(f"first {DLQ_VALUE_BYTES} bytes")


@kafka
def test_broken_envelopes_one_dead_letter_record_listing_the_bad_parts(through_kafka, origins):
    events, dead = through_kafka["events"], through_kafka["dead"]
    assert sorted(e["device"] for e in of(events, "json")) == ["0000:20:00.0", "0000:25:00.0"]
    [d] = dlq_of(dead, origins["json"])
    assert d["ff-count"] == "3" and d["ff-error-code"] == "bad_envelope"
    assert d["ff-parts"] == "r1:bad_envelope,r2:bad_envelope,r3:bad_envelope"
    assert "not an object" in d["ff-reason"] and "no message field" in d["ff-reason"]
    assert d["value"].count(b"\n") == 2  # the three bad records, as they came
    assert d["key"] == b"json"  # the original key: sent again, the value lands where its key chose


@kafka
def test_a_dead_letter_keeps_the_original_key_and_headers(through_kafka, origins):
    [r] = [r for r in through_kafka["dead"] if r.key == b"hdr"]
    assert [k for k, _ in r.headers] == ["host", "x-shipper", "ff-reason", "ff-error-code", "ff-origin", "ff-parts",
                                         "ff-count"]
    h = {k: v.decode() for k, v in r.headers}
    assert h["host"] == "hdr-host" and h["x-shipper"] == "fluent-bit" and h["ff-error-code"] == "bad_envelope"
    assert {h["ff-origin"]} == origins["hdr"]


@kafka
def test_wrong_field_types_are_dead_lettered(through_kafka, origins):
    events, dead = through_kafka["events"], through_kafka["dead"]
    ds = dlq_of(dead, origins["types"])  # four values with one bad record each: four dead-letter records
    assert len(ds) == 4 and all(d["ff-count"] == "1" and d["ff-error-code"] == "bad_envelope" for d in ds)
    reasons = " ".join(d["ff-reason"] for d in ds)
    assert "has type int" in reasons and "has type dict" in reasons and "is null" in reasons
    # a host of the wrong type (a list) is a shipper's mapping gone wrong, as a message of the wrong type is: it
    # took the Kafka key's host silently before (a break-it pass)
    assert "field 'host' is an array, not a host name" in reasons and of(events, "types") == []


@kafka
def test_far_past_and_future_times_fall_back_to_the_arrival_time(through_kafka):
    events = through_kafka["events"]
    evs = of(events, "time")
    assert sorted(e["device"] for e in evs) == ["0000:26:00.0", "0000:27:00.0", "0000:28:00.0", "0000:29:00.0"]
    for e in evs:
        assert e["ts_basis"] == "kafka" and abs(e["ts"] // 1000 - T_MS) < 3_600_000, e
        assert "ts_rejected" in e["details"] or "envelope_ts_rejected" in e["details"]


@kafka
def test_an_impossible_envelope_time_is_dead_lettered(through_kafka, origins):
    """An envelope time of 1e30 is no time in any unit (it once made the pipeline raise, an int64
    overflow): decode dead-letters that record as bad_envelope; the record after it is stored."""
    events, dead = through_kafka["events"], through_kafka["dead"]
    [d] = dlq_of(dead, origins["overflow"])
    assert d["ff-error-code"] == "bad_envelope" and "no time from 2000 to 2100" in d["ff-reason"]
    assert [e["device"] for e in of(events, "overflow")] == ["0000:2b:00.0"]


@kafka
def test_a_record_that_makes_the_pipeline_raise_is_isolated(kafka, tmp_path):
    """The pipeline raising on a record (a bug or unforeseen input; none is known today, so a pipeline that
    raises on a marker stands in): the worker finds that record, dead-letters it with error_code
    pipeline_error and stores the rest of the batch."""
    from ingest.pipeline import Pipeline

    class Raising(Pipeline):
        def run(self, decoded, timings=None):
            if any(b"RAISE-HERE" in s.data for s in decoded.segments):
                raise TypeError("Integer exceeds 64-bit range")
            return super().run(decoded, timings)

    topic = f"raise.{time.time_ns()}"
    asyncio.run(_create(kafka, [topic, topic + ".dlq"], big=False))
    asyncio.run(produce_lines(kafka, topic, "raise", [xid("2c"), b"RAISE-HERE " + xid("2d"), xid("2e")]))
    lake = Lake(tmp_path / "lake")
    w = IngestWorker(bootstrap=kafka, topics=[topic], group_id=topic, lake=lake, dlq_topic=topic + ".dlq",
                     pipeline=Raising(), linger_ms=50)

    async def go() -> None:
        await w.start()
        try:
            await w.run(until_caught_up=True, idle_timeout_s=60)
        finally:
            await w.close()

    asyncio.run(go())
    from api.store import Store

    events = Store(lake).query("SELECT device FROM events")
    [d] = [{k: v.decode() for k, v in r.headers} for r in read_topic(kafka, topic + ".dlq", 2)]
    assert d["ff-error-code"] == "pipeline_error" and "TypeError" in d["ff-reason"]
    assert sorted(e["device"] for e in events) == ["0000:2c:00.0", "0000:2e:00.0"]


@kafka
@pytest.mark.skipif(not shutil.which("kcat"), reason="kcat (a librdkafka producer) sends the header aiokafka cannot")
def test_a_record_whose_header_key_is_not_utf8_is_dead_lettered_and_the_rest_stored(kafka, tmp_path):
    """Kafka's protocol makes a header key UTF-8; the broker does not check it and aiokafka's consumer decodes it
    so, raising out of ``getmany``: a record of kcat's with header key ``\\xff\\xfe`` stopped the worker, and
    every restart (or the replica given the partition) stopped at the same offset, the good records around it
    never stored (a break-it pass). The record is dead-lettered (``unreadable_record``, its coordinates), the
    records before and after it, on its partition and the other, are stored once, and the offsets pass it (the last
    of its partition too)."""
    from aiokafka import TopicPartition

    from api.store import Store

    topic = f"hdrkey.{time.time_ns()}"
    asyncio.run(_create(kafka, [topic, topic + ".dlq"], big=False))

    async def produce() -> None:
        p = AIOKafkaProducer(bootstrap_servers=kafka, acks="all")
        await p.start()
        try:
            for bus in ("40", "41", "42"):
                await p.send_and_wait(topic, xid(bus), key=b"node07", partition=0)
            await p.send_and_wait(topic, xid("50"), key=b"node08", partition=1)
        finally:
            await p.stop()

    asyncio.run(produce())

    def unreadable() -> None:
        subprocess.run([b"kcat", b"-P", b"-b", kafka.encode(), b"-t", topic.encode(), b"-p", b"0", b"-k", b"node07",
                        b"-H", b"\xff\xfe=v"], input=xid("43"), check=True, timeout=60)

    unreadable()

    async def after() -> None:  # after it, on its partition and the other
        p = AIOKafkaProducer(bootstrap_servers=kafka, acks="all")
        await p.start()
        try:
            await p.send_and_wait(topic, xid("44"), key=b"node07", partition=0)
            await p.send_and_wait(topic, xid("51"), key=b"node08", partition=1)
        finally:
            await p.stop()

    asyncio.run(after())
    unreadable()  # the last record of its partition: the commit passes it too, none is dead-lettered twice
    lake = Lake(tmp_path / "lake")
    w = IngestWorker(bootstrap=kafka, topics=[topic], group_id=topic, lake=lake, dlq_topic=topic + ".dlq",
                     linger_ms=50)

    async def go() -> dict:
        await w.start()
        try:
            await asyncio.wait_for(w.run(until_caught_up=True, idle_timeout_s=60), 120)
            return {p: await w._consumer.committed(TopicPartition(topic, p)) for p in (0, 1)}
        finally:
            await w.close()

    committed = asyncio.run(go())
    got = Store(lake).query("SELECT host, device FROM events ORDER BY device")
    assert [(e["host"], e["device"][5:7]) for e in got] == [("node07", b) for b in ("40", "41", "42")] + [
        ("node07", "44"), ("node08", "50"), ("node08", "51")]
    dead = sorted(read_topic(kafka, topic + ".dlq", 2), key=lambda d: d.key)  # keyed by origin: two partitions
    for d, offset in zip(dead, (3, 5), strict=True):
        h = {k: v.decode() for k, v in d.headers}
        assert h["ff-error-code"] == "unreadable_record" and "not UTF-8" in h["ff-reason"]
        assert h["ff-origin"] == f"kafka:{topic}/0/{offset}" and d.key == h["ff-origin"].encode() and d.value == b""
    assert committed == {0: 6, 1: 2} and w.health.ok and w.health.rejects == 2


@kafka
def test_a_backlog_is_fetched_once_not_dropped_and_fetched_again(kafka, tmp_path, monkeypatch):
    """A backlog larger than the worker's buffer: partitions with two chunks buffered are left alone (their
    fetch response waits in aiokafka), never paused — pausing made aiokafka drop a whole fetch response and
    fetch it again on resume, for every few hundred records taken (peak RSS ~1 GB over 1M one-line records).
    Every record is stored once, and the broker sends each record's bytes about once."""
    from aiokafka.consumer import fetcher

    topic = f"backlog.{time.time_ns()}"
    asyncio.run(_create(kafka, [topic, topic + ".dlq"], big=False))
    lines = [b"[  %d.000001] NVRM: Xid (PCI:0000:%02x:00): 79, GPU has fallen off the bus." % (i, i % 200)
             for i in range(6000)]
    asyncio.run(produce_lines(kafka, topic, "node07", lines))
    fetched = []  # bytes of each fetch response's record set, as aiokafka receives them
    real_init = fetcher.PartitionRecords.__init__

    def counting(self, tp, records, *a, **kw):
        fetched.append(records.size_in_bytes())
        real_init(self, tp, records, *a, **kw)

    monkeypatch.setattr(fetcher.PartitionRecords, "__init__", counting)
    lake = Lake(tmp_path / "lake")
    w = IngestWorker(bootstrap=kafka, topics=[topic], group_id=topic, lake=lake, dlq_topic=topic + ".dlq",
                     linger_ms=50, max_records=200)  # chunks of 25 records: the buffer fills at once
    paused = []

    async def go() -> None:
        await w.start()
        real_pause = w._consumer.pause
        w._consumer.pause = lambda *tps: paused.append(tps) or real_pause(*tps)
        try:
            await w.run(until_caught_up=True, idle_timeout_s=60)
        finally:
            await w.close()

    asyncio.run(go())
    assert not [p for p in paused if p]  # only an outage pauses partitions
    assert w.health.records == 6000 and w.health.events > 0
    produced = sum(map(len, lines))
    assert produced < sum(fetched) < 2 * produced, (produced, sum(fetched), len(fetched))


@kafka
def test_a_corrupt_deflate_stream_is_isolated(through_kafka, origins):
    """A damaged deflate stream is dead-lettered by decode as bad_compression, with zlib's reason."""
    events, dead = through_kafka["events"], through_kafka["dead"]
    [d] = dlq_of(dead, origins["zlib"])
    assert d["ff-error-code"] == "bad_compression" and "corrupt gzip stream" in d["ff-reason"]
    assert [e["device"] for e in of(events, "zlib")] == ["0000:2f:00.0"]


@kafka
def test_compressed_values_and_kafka_batch_codecs(through_kafka):
    events = through_kafka["events"]
    assert sorted(e["device"] for e in of(events, "gz")) == ["0000:2c:00.0", "0000:2d:00.0"]
    if not shutil.which("kcat"):
        pytest.skip("kcat missing: run scripts/test-deps.sh")
    for codec in ("gzip", "snappy", "lz4", "zstd"):
        [e] = of(events, f"kcat-{codec}")
        assert e["message"].endswith(codec) and e["device"] == "0000:31:00.0"


@kafka
def test_near_misses_give_no_event_and_no_dead_letter(through_kafka, origins):
    events, dead = through_kafka["events"], through_kafka["dead"]
    assert len(near_misses()) > 20
    assert not [e for e in events if record_of(e["origin"]) in origins["near"]]
    assert not dlq_of(dead, origins["near"])


@kafka
def test_a_storm_of_one_line_counts_every_copy(through_kafka):
    events = through_kafka["events"]
    evs = of(events, "storm")
    assert sum(e["count"] for e in evs) == STORM
    assert len(evs) <= STORM // 1000  # collapsed: at most one event per record here


@kafka
def test_thousands_of_bad_parts_make_one_dead_letter_record(through_kafka, origins):
    dead = through_kafka["dead"]
    [d] = dlq_of(dead, origins["amplify"])
    # 1,000 rejects, then the rest of the value whole (ingest.decode.MAX_REJECTS_PER_VALUE)
    assert d["ff-count"] == "1001" and len(d["ff-parts"]) <= 1000 and len(d["ff-reason"]) <= 1000
    assert d["value"].count(b"\n") == 4999  # every bad part, as it came
    dead_origins = [dict(r.headers)["ff-origin"] for r in dead]
    assert len(dead_origins) == len(set(dead_origins))  # never two dead-letter records for one value


@kafka
def test_nothing_silently_dropped(through_kafka, origins):
    """Every record is accounted for: it gave events, or a dead-letter record. The exceptions are the near
    misses (rightly nothing) and a storm's later records (counted in the first event's ``count``, above)."""
    events, dead = through_kafka["events"], through_kafka["dead"]
    dead_origins = {dict(r.headers)["ff-origin"].decode() for r in dead}
    stored = {record_of(e["origin"]) for e in events}
    for key, recs in origins.items():
        if key in ("near", "storm", "bombs"):
            continue
        for o in sorted(recs):
            assert o in dead_origins or o in stored, (key, o)
    assert stored & origins["storm"]


# --- memory ---------------------------------------------------------------------------------------------


@kafka
def test_memory_stays_bounded(through_kafka, origins):
    """The run above — a 100 MB value, a 10 MB line, a 20,000-line storm, six gzip values of 60 MB each
    decompressed (360 MB together: more than one batch may hold, so the batch is cut) — peaks under 1 GiB
    resident (VmHWM of the `firstfault ingest` process)."""
    assert 0 < through_kafka["peak_mib"] < 1024, through_kafka["peak_mib"]
    assert "cut after" in through_kafka["log"] or BOMBS * 60 <= 256
    assert not of(through_kafka["events"], "bombs") and not dlq_of(through_kafka["dead"], origins["bombs"])


# --- the same classes through diagnose -----------------------------------------------------------------


@pytest.fixture(scope="module")
def bad_folder(tmp_path_factory):
    d = tmp_path_factory.mktemp("badfiles")
    for key, values in inputs():
        if key == "huge":
            (d / "huge.log").write_bytes(xid("50") + b" " + b"x" * (100 << 20) + b"\n" + xid("51") + b"\n")
            continue
        if key == "gz":
            (d / "gz.log.gz").write_bytes(values[0])
            (d / "gz2.log.zst").write_bytes(values[1])
            continue
        if key in ("zlib", "overflow"):  # one bad part each: test_diagnose_cli_… below names them
            continue
        if key in BAD_HOST_KEYS:  # Kafka keys: no file is named so (test_hosts_that_are_no_host_names_… covers it)
            continue
        if key == "surrogate":  # a file each: NDJSON, a JSON array, text (named surrogate2), NDJSON
            for i, v in enumerate(values):
                (d / f"surrogate{i}.log").write_bytes(v + b"\n")
            continue
        (d / f"{key}.log").write_bytes(b"\n".join(values) + b"\n")
    return d


@kafka
def test_diagnose_reads_every_class(bad_folder):
    from api.diagnose import diagnose_paths
    from schemas.settings import Settings

    decoded, batch, _ = diagnose_paths([bad_folder], Settings())
    ev = batch.events.to_pylist()
    by_host: dict[str, list] = {}
    for e in ev:
        by_host.setdefault(e["host"], []).append(e)
    assert [e["device"] for e in by_host["utf8"]] == ["0000:21:00.0"] and "\ufffd" in by_host["utf8"][0]["message"]
    assert [e["device"] for e in by_host["nul"]] == ["0000:22:00.0"]
    assert [e["device"] for e in by_host["long"]] == ["0000:23:00.0"]
    assert sorted(e["device"] for e in by_host["huge"]) == ["0000:50:00.0", "0000:51:00.0"]
    assert sorted(e["device"] for e in by_host["json"]) == ["0000:20:00.0", "0000:25:00.0"]
    assert sorted(e["device"] for e in by_host["gz"] + by_host["gz2"]) == ["0000:2c:00.0", "0000:2d:00.0"]
    assert "near" not in by_host
    assert sum(e["count"] for e in by_host["storm"]) == STORM and len(by_host["storm"]) == 1
    assert all(e["ts_basis"] == "file" for e in by_host["time"] if e["device"] in ("0000:26:00.0", "0000:27:00.0"))
    assert sum(1 for r in decoded.rejects if r.origin.startswith(f"file:{bad_folder.name}/json.log")) == 3
    assert sum(1 for r in decoded.rejects if r.origin.startswith(f"file:{bad_folder.name}/types.log")) == 4  # the list as host too
    assert sum(1 for r in decoded.rejects if r.origin.startswith(f"file:{bad_folder.name}/amplify.log")) == 1001  # 1,000 + the rest
    assert sorted((e["device"], "\ufffd" in e["message"]) for e in by_host["surrogate"] + by_host["surrogate2"]) == [
        ("0000:70:00.0", True), ("0000:71:00.0", False), ("0000:72:00.0", True), ("0000:73:00.0", False),
        ("0000:74:00.0", True), ("0000:75:00.0", False)]
    [r] = [r for r in decoded.rejects if "/surrogate" in r.origin]
    assert r.origin.startswith(f"file:{bad_folder.name}/surrogate3.log") and r.origin.endswith("#r1")
    assert "bytes ed a0 80 at byte" in r.reason and "encode a UTF-16 surrogate" in r.reason


@kafka
def test_diagnose_cli_names_the_bad_files_and_diagnoses_the_others(tmp_path):
    """A damaged deflate stream and an envelope time of 1e30 (they once made decoding and matching raise)
    are named with the reason; the other file is still diagnosed, the command succeeds, and a file with
    5000 bad records is one line, not 5000."""
    d = tmp_path / "logs"
    d.mkdir()
    (d / "zlib.log.gz").write_bytes(corrupt_gzip(xid("2e") * 50))
    (d / "overflow.log").write_bytes(envelope(host="overflow", message=xid("2a").decode(), timestamp=1e30))
    (d / "amplify.log").write_bytes(b"\n".join(b'{"message": ' + str(i).encode() for i in range(5000)))
    (d / "node07.log").write_bytes(xid("60") + b"\n")
    r = subprocess.run([FIRSTFAULT, "diagnose", str(d), "--format", "json"], capture_output=True, timeout=120,
                       cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr.decode()[-2000:]
    err = r.stderr.decode()
    assert "zlib.log.gz" in err and "cannot decompress" in err and "Traceback" not in err
    assert "overflow.log" in err and "no time from 2000 to 2100" in err
    assert err.count("amplify.log") == 1 and "1001 unreadable parts" in err
    out = orjson.loads(r.stdout)
    assert [e["device"] for e in out["events"]] == ["0000:60:00.0"]


# --- decode.py / pipeline.py on their own: once open defects (xfail), now fixed ------------------------------


def test_a_lone_surrogate_in_a_row_is_stored_as_u_fffd(tmp_path):
    """Arrow and orjson refuse a lone surrogate (no decoder gives one today; one that did made the pipeline
    raise and its Kafka record dead-lettered whole): ``to_table`` stores it as U+FFFD, in text columns and in
    ``details`` (keys too); a pair stays the one character it spells, and an integer out of range beside it is
    still kept as text."""
    from api.store import Store
    from ingest.pipeline import to_table
    from schemas.events import EVENTS_SCHEMA

    row = {"event_id": "e1", "ts": 1_700_000_000_000_000, "ts_basis": "kafka", "host": "node\ud800", "kind": "xid",
           "source": "dmesg", "signature": "xid", "severity": "error", "ts_precision_us": 1, "count": 1,
           "message": "a\udcff b \ud83d\ude00", "origin": "kafka:t/0/1", "seq": 2 ** 70,
           "details": {"k\udfff": "v\ud800"}}
    before = dict(row)
    lake = Lake(tmp_path / "lake")
    lake.write("events", to_table([row], EVENTS_SCHEMA), "b1")
    [e] = Store(lake).query("SELECT host, message, seq, details FROM events")
    assert row == before
    assert (e["host"], e["message"], e["seq"]) == ("node\ufffd", "a\ufffd b \U0001F600", None)
    assert orjson.loads(e["details"]) == {"k\ufffd": "v\ufffd", "seq_text": str(2 ** 70)}


def dm(value: bytes):
    return decode_message(value, topic="fleet.dmesg", partition=0, offset=1, key=b"node1", timestamp_ms=T_MS)


def test_decode_rejects_a_damaged_deflate_stream():
    d = dm(corrupt_gzip(xid() * 50))
    assert not d.segments and [r.error_code for r in d.rejects] == ["bad_compression"]


def test_decode_rejects_a_truncated_zstd_value():
    z = zstandard.ZstdCompressor().compress(xid() * 1000)
    d = dm(z[: len(z) // 2])
    assert [r.error_code for r in d.rejects] == ["bad_compression"]


def test_decode_reads_every_zstd_frame():
    two = zstandard.ZstdCompressor().compress(b"first\n") + zstandard.ZstdCompressor().compress(xid())
    d = dm(two)
    assert b"".join(s.data for s in d.segments) == b"first\n" + xid()


@pytest.mark.parametrize("value", [b"\x04\x22\x4d\x18" + b"\x00" * 20, b"PK\x03\x04" + b"\x00" * 20],
                         ids=["lz4frame", "zip"])
def test_decode_rejects_unknown_compression(value):
    d = dm(value)
    assert not d.segments and [r.error_code for r in d.rejects] == ["bad_compression"]


@pytest.mark.parametrize("kind", ["xz", "bzip2"])
def test_decode_reads_every_bzip2_and_xz_stream_and_bounds_them(kind, tmp_path):
    """logrotate's ``compresscmd`` may be bzip2 or xz (``.log.bz2``, ``.log.xz``): they were skipped, "not read here"
    (a break-it pass). Every stream is read (``pbzip2``, ``cat a.xz b.xz``), a cut stream gives its whole lines and
    says what is lost, a corrupt one is refused, one past the size cap is refused, not expanded."""
    import bz2

    from ingest.decode import CompressionError, decompress

    pack = lzma.compress if kind == "xz" else bz2.compress
    two = pack(b"first\n") + pack(xid())
    d = dm(two)
    assert b"".join(s.data for s in d.segments) == b"first\n" + xid() and not d.rejects
    text = b"".join(b"%08d " % i + xid() for i in range(30_000))  # 3.6 MB: several of bzip2's 900 kB blocks
    cut = pack(text)
    with pytest.raises(CompressionError, match=f"truncated {kind} stream") as e:
        decompress(cut[: len(cut) // 2])
    assert e.value.partial and text.startswith(e.value.partial)
    with pytest.raises(CompressionError, match=f"corrupt {kind} stream"):
        decompress(cut[:12] + b"\x00" * 64)
    with pytest.raises(CompressionError, match="exceeds 1000 bytes") as e:
        decompress(pack(b"\x00" * 10_000_000), limit=1000)
    assert e.value.too_large and len(e.value.partial) == 1000
    with pytest.raises(CompressionError, match="trailing data"):
        decompress(pack(xid()) + b"junk that is no stream")
    # xz's stream padding between streams, which `xz -dc` reads through (a break-it pass: "trailing data")
    assert decompress(pack(b"first\n") + b"\x00" * 4 + pack(xid())) == b"first\n" + xid()
    f = tmp_path / f"kern.log.1.{'xz' if kind == 'xz' else 'bz2'}"
    f.write_bytes(two)
    from ingest.decode import decode_file

    assert b"".join(s.data for s in decode_file(f, relname=f.name).segments) == b"first\n" + xid()


def test_decode_reads_an_envelope_after_a_bom():
    d = dm(b"\xef\xbb\xbf" + envelope(host="n1", message="hello", timestamp="2026-01-05T10:00:00Z"))
    assert [(s.host, s.data, s.ref_basis) for s in d.segments] == [("n1", b"hello", "envelope")]


def test_decode_reads_or_rejects_a_json_array():
    d = dm(b"[" + envelope(host="n1", message="hello") + b"]")
    assert d.rejects or [s.data for s in d.segments] == [b"hello"]


def test_decode_rejects_a_boolean_journald_time():
    d = dm(envelope(_HOSTNAME="n1", MESSAGE="hello", __REALTIME_TIMESTAMP=True))
    assert [r.error_code for r in d.rejects] == ["bad_envelope"]


@pytest.mark.parametrize("t", [1e30, float(2**80)])
def test_decode_rejects_impossible_numeric_times(t):
    """A number no unit can hold (past 64-bit µs even read as ns) is no time: its record is a dead letter."""
    d = dm(envelope(host="n1", message="hello", timestamp=t))
    assert [r.error_code for r in d.rejects] == ["bad_envelope"]


def test_decode_keeps_a_record_whose_numeric_time_is_no_fleet_time():
    """A number some unit holds but none places from 2000 to 2100 (9e13: 2.85 million years in seconds, year ~4800 in
    ms) was a dead letter; the record is kept, its time left for assemble to refuse (details.envelope_ts_rejected)
    and its line timed by its own stamp or its arrival (this stop's break-it passes)."""
    from ingest.prefix import plausible

    d = dm(envelope(host="n1", message="hello", timestamp=9e13))
    assert not d.rejects and [s.host for s in d.segments] == ["n1"]
    assert not plausible(d.segments[0].ref_ts)


def test_crlf_lines_lose_their_carriage_return(pipeline):
    b = pipeline.run(dm(xid() + b"\r\n" + xid("19") + b"\r\n"))
    assert [e["message"][-1] for e in b.events.to_pylist()] == [".", "."]


def test_a_long_line_is_truncated_in_the_event(pipeline):
    b = pipeline.run(dm(xid() + b" " + b"A" * (1 << 20)))
    [e] = b.events.to_pylist()
    assert len(e["message"]) <= 64 * 1024


def test_a_match_after_64_kb_is_not_dropped_silently(pipeline):
    b = pipeline.run(dm(b"A" * (70 * 1024) + b" " + xid()))
    assert b.events.num_rows == 1 or b.rejects


def test_decode_file_rejects_a_damaged_deflate_stream(tmp_path):
    f = tmp_path / "n.log.gz"
    f.write_bytes(corrupt_gzip(xid() * 50))
    d = decode_file(f, relname="n.log.gz")
    assert not d.segments and [r.error_code for r in d.rejects] == ["bad_compression"]


@pytest.mark.parametrize("kind", ["gzip", "zstd"])
def test_decode_file_keeps_the_whole_lines_of_a_truncated_file_and_says_the_rest_is_lost(tmp_path, kind):
    """A compressed log copied while it was written or rotated ends mid-stream: ``zcat`` prints the lines it
    got, and the file gave none ("Incidents: none", exit 0; a break-it pass). Now its whole lines are read (the
    cut last line is not) and a ``bad_compression`` reject says how many, and that the rest is lost."""
    lines = b"".join(xid(f"{i:02x}") + b"\n" for i in range(0x10, 0x70)) * 40  # zstd: past one 128 KB block
    packed = gzip.compress(lines) if kind == "gzip" else zstandard.ZstdCompressor().compress(lines)
    f = tmp_path / f"node07.log.{'gz' if kind == 'gzip' else 'zst'}"
    f.write_bytes(packed[:-20])
    d = decode_file(f, relname=f.name)
    got = b"".join(s.data for s in d.segments)
    assert got and lines.startswith(got) and got.endswith(b"\n") and len(got) < len(lines)
    [r] = d.rejects
    n = got.count(b"\n")
    assert r.error_code == "bad_compression" and f"read its first {n} lines" in r.reason
    assert "the rest is lost" in r.reason
    assert all(s.cut for s in d.segments)  # its events say so (details.file_cut): a silent rank may be in the rest
    assert not any(s.cut for s in decode_file(_whole(tmp_path, lines), relname="whole.log").segments)


def _whole(tmp_path, data: bytes):
    f = tmp_path / "whole.log"
    f.write_bytes(data)
    return f


def _without_root_powers() -> list[str]:
    """The prefix that runs a command without the privilege to read what its mode refuses: as root, ``setpriv``
    (util-linux) drops the capabilities that override file modes; else none is needed."""
    if os.geteuid() != 0:
        return []
    caps = "-dac_override,-dac_read_search"
    return ["setpriv", f"--bounding-set={caps}", f"--inh-caps={caps}"]


def test_diagnose_skips_what_it_may_not_read_and_reads_the_rest(tmp_path):
    """One root-owned 0600 log in a collected folder ended the run ("[Errno 13] Permission denied", exit 1) and the
    readable files were not diagnosed; a folder that cannot be listed was left out silently; a file under a folder
    without search permission gave a traceback; an empty PATH (`diagnose "$LOG"`, LOG unset) diagnosed the current
    folder (a break-it pass). Each is said, the rest read."""
    d = tmp_path / "logs"
    (d / "locked").mkdir(parents=True)
    (d / "node07.log").write_bytes(xid())
    (d / "secret.log").write_bytes(xid("3b"))
    (d / "secret.log").chmod(0)
    (d / "locked" / "node08.log").write_bytes(xid())
    (d / "locked").chmod(0)
    try:
        r = subprocess.run([*_without_root_powers(), FIRSTFAULT, "diagnose", str(d), "--format", "json"],
                           capture_output=True, timeout=120, cwd=str(tmp_path))
        err = r.stderr.decode()
        assert r.returncode == 0, err[-2000:]
        assert f"skipped {d / 'secret.log'}: logs/secret.log cannot be read: Permission denied" in err, err
        assert f"skipped, cannot be listed or read: {d / 'locked'} (Permission denied)" in err, err
        assert [e["host"] for e in orjson.loads(r.stdout)["events"]] == ["node07"]
        r = subprocess.run([*_without_root_powers(), FIRSTFAULT, "diagnose", str(d / "locked" / "node08.log")],
                           capture_output=True, timeout=120, cwd=str(tmp_path))
        err = r.stderr.decode()
        assert (r.returncode, err.strip()) == (2, f"cannot read {d / 'locked' / 'node08.log'}: Permission denied")
        # a folder that can be listed but not searched (chmod -R 644) raised a traceback; a folder given that cannot
        # be listed said "no files found" (a second break-it pass)
        (d / "locked").chmod(0o444)
        r = subprocess.run([*_without_root_powers(), FIRSTFAULT, "diagnose", str(d), "--format", "json"],
                           capture_output=True, timeout=120, cwd=str(tmp_path))
        err = r.stderr.decode()
        assert r.returncode == 0 and f"{d / 'locked' / 'node08.log'} (Permission denied)" in err, err[-2000:]
        (d / "locked").chmod(0)
        r = subprocess.run([*_without_root_powers(), FIRSTFAULT, "diagnose", str(d / "locked")],
                           capture_output=True, timeout=120, cwd=str(tmp_path))
        err = r.stderr.decode()
        assert r.returncode == 2 and f"cannot be listed or read: {d / 'locked'} (Permission denied)" in err, err
    finally:
        (d / "locked").chmod(0o755)
    r = subprocess.run([FIRSTFAULT, "diagnose", ""], capture_output=True, timeout=120, cwd=str(d))
    assert r.returncode == 2 and "an empty path names no file or folder" in r.stderr.decode(), r.stderr.decode()


def test_diagnose_exits_2_when_every_file_was_skipped(tmp_path):
    """Nothing read is no healthy fleet: a folder whose only file is corrupt said "Incidents: none" and
    exited 0 (as an empty capture does not: exit 2)."""
    d = tmp_path / "logs"
    d.mkdir()
    (d / "node07.log.gz").write_bytes(corrupt_gzip(xid() * 50))
    r = subprocess.run([FIRSTFAULT, "diagnose", str(d)], capture_output=True, timeout=120, cwd=str(tmp_path))
    err = r.stderr.decode()
    # the file by its path, not its origin (file:logs/node07.log.gz@<digest>: a fresh-user trial)
    assert r.returncode == 2 and "nothing could be read" in err and f"skipped {d / 'node07.log.gz'}: " in err, err
    assert "file:" not in err and "@" not in err, err[-1000:]
    assert "nothing could be read in " + str(d) + ": 1 file, 1 skipped as above\n" in err, err
    # with empty files beside it: they are counted apart ("3 files, skipped as above" said nothing of the two
    # empty ones: a fresh user's trial)
    (d / "empty.log").write_bytes(b"")
    (d / "blank.log").write_bytes(b"\n\n")
    r = subprocess.run([FIRSTFAULT, "diagnose", str(d)], capture_output=True, timeout=120, cwd=str(tmp_path))
    said = " ".join(r.stderr.decode().split())
    assert r.returncode == 2 and ": 3 files, 1 skipped as above, 2 empty or blank lines only" in said, said
    (d / "empty.log").unlink()
    (d / "blank.log").unlink()
    # a truncated file gives its lines before the cut: "read in part", not "skipped"; one line is "1 line"
    (d / "node07.log.gz").write_bytes(gzip.compress(xid() + b"\n" + xid("3b") * 400)[:-20])
    r = subprocess.run([FIRSTFAULT, "diagnose", str(d)], capture_output=True, timeout=120, cwd=str(tmp_path))
    err = r.stderr.decode()
    assert r.returncode == 0 and f"read in part {d / 'node07.log.gz'}: " in err and "skipped" not in err, err[-1000:]
    assert "read its first 1 line (" in err, err[-1000:]
    # two files of one name given: each named with its content digest, told apart
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "node07.log.gz").write_bytes(corrupt_gzip(xid("3b") * 60))
    r = subprocess.run([FIRSTFAULT, "diagnose", str(d / "node07.log.gz"), str(tmp_path / "other" / "node07.log.gz")],
                       capture_output=True, timeout=120, cwd=str(tmp_path))
    named = sorted(x.split(": ", 1)[0].split(" ")[-1] for x in r.stderr.decode().splitlines() if "node07.log.gz@" in x)
    assert len(named) == 2 and named[0] != named[1] and all(n.startswith("node07.log.gz@") for n in named), named
    # a file name with an emoji code in it is named as written, not as 🔥 (a break-it pass)
    (tmp_path / "emo").mkdir()
    (tmp_path / "emo" / "node01:fire:x.log").write_bytes(b"\x7fELF\x02\x01\x01" + bytes(200))
    r = subprocess.run([FIRSTFAULT, "diagnose", str(tmp_path / "emo")], capture_output=True, timeout=120,
                       cwd=str(tmp_path))
    assert f"skipped {tmp_path / 'emo' / 'node01:fire:x.log'}: not log text" in r.stderr.decode(), r.stderr[-500:]


def test_a_file_removed_while_diagnose_reads_its_folder_is_skipped_and_the_others_are_diagnosed(tmp_path):
    """Logs rotate while a folder is read: a file the walk listed and that is gone when its turn comes is a
    reject naming it (the CLI prints it as "skipped" with its path), not the end of the run (a break-it pass: one
    rotated file of 3,000 lost the whole report, exit 1). The file is removed for real, between the reads."""
    from api.cli import _skipped
    from api.diagnose import diagnose_paths
    from schemas.settings import Settings

    d = tmp_path / "logs"
    d.mkdir()
    for name in ("a", "b", "c"):
        (d / f"node07-{name}.log").write_bytes(xid({"a": "18", "b": "3b", "c": "5e"}[name]) + b"\n")

    def rotate(done: int, total: int, name: str) -> None:
        if name.endswith("node07-a.log"):
            (d / "node07-b.log").unlink()

    decoded, batch, incidents = diagnose_paths([d], Settings(), progress=rotate)
    assert sorted(batch.events.column("device").to_pylist()) == ["0000:18:00.0", "0000:5e:00.0"]
    [r] = decoded.rejects
    assert (r.origin, r.error_code) == ("file:logs/node07-b.log", "decode_error")
    assert "gone before it was read" in r.reason
    assert _skipped(decoded.rejects, {"logs/node07-b.log": [str(d / "node07-b.log")]}) == [
        (r.origin, f"{d / 'node07-b.log'}: logs/node07-b.log was gone before it was read (removed or rotated "
                   "meanwhile)")]


def test_a_fifo_or_a_broken_link_in_a_folder_is_named_as_skipped(tmp_path):
    """Entries of a folder that are no regular file are not read (a FIFO could block for ever), and stderr says
    which (they were left out without a word: a break-it pass)."""
    import os

    from typer.testing import CliRunner

    from api.cli import app

    d = tmp_path / "logs"
    d.mkdir()
    (d / "node07.log").write_bytes(xid() + b"\n")
    os.mkfifo(d / "pipe")
    (d / "gone.log").symlink_to(tmp_path / "nowhere.log")
    r = CliRunner().invoke(app, ["diagnose", str(d), "--format", "json"])
    assert r.exit_code == 0, r.output
    assert f"skipped, not regular files (FIFOs, sockets, devices, broken links): {d / 'gone.log'}, {d / 'pipe'}" \
        in r.output, r.output
    assert len(orjson.loads(r.stdout)["events"]) == 1


def test_the_records_of_one_ndjson_file_are_one_file_not_several_of_one_name(tmp_path):
    """An NDJSON record's origin carries its record number (``file:node01.ndjson@<digest>#r1:0``): the records of
    one file are that file (``api.diagnose.file_of``), not "2 different files are all host node01 by their name"
    (a review of the symptom placement found the note on one file)."""
    from typer.testing import CliRunner

    from api.cli import app
    from api.diagnose import file_of

    assert file_of("file:logs/node01.ndjson@92fd7773#r1:0") == file_of("file:logs/node01.ndjson@92fd7773:3") == (
        "logs/node01.ndjson", "92fd7773")
    records = [{"message": XID.format(bus=b)} for b in ("3b", "1b")]
    (tmp_path / "node01.ndjson").write_text("".join(orjson.dumps(r).decode() + "\n" for r in records))
    r = CliRunner().invoke(app, ["diagnose", str(tmp_path / "node01.ndjson"), "--format", "json"])
    assert r.exit_code == 0 and len(orjson.loads(r.stdout)["events"]) == 2, r.output
    assert "different files" not in r.output, r.output


# the wider class of each defect above


def test_decode_reads_every_gzip_member_and_rejects_what_follows_a_stream():
    assert [s.data for s in dm(gzip.compress(b"first\n") + gzip.compress(xid())).segments] == [b"first\n" + xid()]
    assert [s.data for s in dm(gzip.compress(xid()) + b"\x00" * 8).segments] == [xid()]  # zero padding
    for bad in (gzip.compress(xid()) + b"junk", gzip.compress(xid() * 100)[:-6], b"\x1f\x8b"):
        d = dm(bad)
        assert not d.segments and [r.error_code for r in d.rejects] == ["bad_compression"], bad[-8:]


def test_decode_reads_zlib_and_names_the_unread_formats():
    import zlib

    assert [s.data for s in dm(zlib.compress(xid())).segments] == [xid()]
    assert [s.data for s in dm(lzma.compress(xid())).segments] == [xid()]
    assert "lz4 frame compression is not read here" in dm(b"\x04\x22\x4d\x18" + b"\x00" * 20).rejects[0].reason
    # text that merely starts like a magic number is text
    for text in (b"BZh " + xid(), b"PK " + xid(), b"x" + xid(), b"(" + xid()):
        assert [s.data for s in dm(text).segments] == [text]


@pytest.mark.parametrize("codec", ["gzip", "zstd", "xz"])
def test_a_decompression_bomb_is_rejected_not_expanded(codec):
    """256 MB of zeros compressed to a few hundred KB: rejected after 64 MB (MAX_VALUE_BYTES) of output,
    and never more than about that much held at once."""
    import resource

    raw = b"\x00" * (256 << 20)
    bomb = (gzip.compress(raw, compresslevel=1) if codec == "gzip" else lzma.compress(raw, preset=0) if codec == "xz"
            else zstandard.ZstdCompressor().compress(raw))
    del raw
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    d = dm(bomb)
    assert [r.error_code for r in d.rejects] == ["bad_compression"] and "exceeds" in d.rejects[0].reason
    grown_mib = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) // 1024
    assert grown_mib < 200, grown_mib


def test_decode_file_reads_every_zstd_frame_and_rejects_truncation(tmp_path):
    f = tmp_path / "n.log.zst"
    f.write_bytes(zstandard.ZstdCompressor().compress(b"first\n") + zstandard.ZstdCompressor().compress(xid()))
    assert [s.data for s in decode_file(f, relname="n.log.zst").segments] == [b"first\n" + xid()]
    z = zstandard.ZstdCompressor().compress(xid() * 1000)
    f.write_bytes(z[:-3])
    assert [r.error_code for r in decode_file(f, relname="n.log.zst").rejects] == ["bad_compression"]


def test_a_bom_is_dropped_before_text_and_in_files(tmp_path):
    assert [s.data for s in dm(b"\xef\xbb\xbf" + xid()).segments] == [xid()]
    f = tmp_path / "n1.log"
    f.write_bytes(b"\xef\xbb\xbf" + envelope(host="n1", message="hello") + b"\n")
    assert [s.data for s in decode_file(f, relname="n1.log").segments] == [b"hello"]


def test_a_json_array_gives_a_segment_per_object_and_a_reject_per_other_element():
    d = dm(b"[" + envelope(host="n1", message="a") + b", 5, " + envelope(host="n2", message="b") + b"]")
    assert [(s.host, s.data, s.origin.rsplit("#", 1)[1]) for s in d.segments] == [("n1", b"a", "r0"),
                                                                                 ("n2", b"b", "r2")]
    assert [(r.error_code, r.origin.rsplit("#", 1)[1]) for r in d.rejects] == [("bad_envelope", "r1")]
    d = dm(b'[{"message": "a"}, {"mess')
    assert not d.segments and [r.error_code for r in d.rejects] == ["bad_envelope"]
    # a raw dmesg line or a bracketed tag is text, not an array
    for text in (b"[  12.345678] " + xid(), b"[Rank 0] Watchdog caught collective operation timeout"):
        assert [s.data for s in dm(text).segments] == [text]


@pytest.mark.parametrize("t", [1_767_607_200, 1_767_607_200.5, 1_767_607_200_500, 1_767_607_200_500_000,
                               1_767_607_200_500_000_000], ids=["s", "s.frac", "ms", "us", "ns"])
def test_numeric_times_in_any_unit_are_read(t):
    [s] = dm(envelope(host="n1", message="hello", timestamp=t)).segments
    assert s.ref_basis == "envelope" and s.ref_ts // 1_000_000 == 1_767_607_200


@pytest.mark.parametrize("v", ["1e30", "-5", "1" * 40, 1.5e15, [1]], ids=["exp", "neg", "huge", "float", "list"])
def test_journald_times_that_are_not_counts_of_us_are_rejected(v):
    d = dm(envelope(_HOSTNAME="n1", MESSAGE="hello", __REALTIME_TIMESTAMP=v))
    assert [r.error_code for r in d.rejects] == ["bad_envelope"]


def test_journald_time_as_an_integer_is_read():
    [s] = dm(envelope(_HOSTNAME="n1", MESSAGE="hello", __REALTIME_TIMESTAMP=1_767_607_200_000_001)).segments
    assert s.ref_ts == 1_767_607_200_000_001


def test_crlf_in_files_and_envelopes_and_a_carriage_return_inside_a_line(pipeline, tmp_path):
    f = tmp_path / "node07.log"
    f.write_bytes(b"[  12.5] " + xid() + b"\r\n[  13.5] " + xid("19") + b"\r\n")
    b = pipeline.run(decode_file(f, relname="node07.log"))
    assert [e["message"][-1] for e in b.events.to_pylist()] == [".", "."]
    b = pipeline.run(dm(envelope(host="n1", message=xid().decode() + "\r")))
    assert [e["message"][-1] for e in b.events.to_pylist()] == ["."]
    # a progress bar redrawn on one line, then the line: what a terminal shows, the line (its \r were text, and a
    # stamp behind the bar was not read: a break-it pass)
    b = pipeline.run(dm(b"10%\r20%\r" + xid()))
    assert [e["message"] for e in b.events.to_pylist()] == [xid().decode()]


def test_a_long_line_excerpt_does_not_split_a_character(pipeline):
    b = pipeline.run(dm("é".encode() * (40 * 1024) + xid() + b" " + b"B" * (1 << 20)))
    [e] = b.events.to_pylist()
    assert e["device"] == "0000:18:00.0" and "\ufffd" not in e["message"]
    assert len(e["message"].encode()) <= 64 * 1024
    details = orjson.loads(e["details"])
    assert details["truncated_at"] == 64 * 1024 and details["line_bytes"] > (1 << 20) and details["excerpt_from"]


def _records(topic: str, partition: int, values: list[bytes], first: int = 0):
    from aiokafka import ConsumerRecord

    return [ConsumerRecord(topic=topic, partition=partition, offset=first + i, timestamp=T_MS, timestamp_type=0,
                           key=b"node07", value=v, checksum=None, serialized_key_size=6,
                           serialized_value_size=len(v), headers=[]) for i, v in enumerate(values)]


def test_a_chunk_is_cut_after_the_record_whose_text_passes_the_limit(tmp_path, monkeypatch):
    """A chunk is decoded in one pass; only when its text passes MAX_CHUNK_BYTES is it decoded record by record
    to cut it right after the record that passes the limit (that record included); the rest stays buffered."""
    from ingest import consumer
    from ingest.consumer import TopicPartition

    monkeypatch.setattr(consumer, "MAX_CHUNK_BYTES", 250)
    w = IngestWorker(bootstrap="127.0.0.1:1", topics=["t"], group_id="g", lake=Lake(tmp_path / "lake"),
                     dlq_topic="t.dlq", max_records=80)
    tp = TopicPartition("t", 0)
    w._buf[tp] = _records("t", 0, [b"x" * 100] * 6)
    records, decoded, spans, counts = w._take([(tp, 9)])
    assert [r.offset for r in records] == [0, 1, 2] and len(decoded.segments) == 3  # 300 bytes > 250 after 3
    assert spans == {tp: (0, 2)} and counts == {tp: 3}  # from the chunk's ends, not counted per record
    assert [r.offset for r in w._buf[tp]] == [3, 4, 5]
    monkeypatch.setattr(consumer, "MAX_CHUNK_BYTES", 10_000)
    records, decoded, spans, counts = w._take([(tp, 4)])  # under the limit: the chunk ends at its last offset
    assert [r.offset for r in records] == [3, 4] and [s.origin for s in decoded.segments] == ["kafka:t/0/3",
                                                                                              "kafka:t/0/4"]
    assert spans == {tp: (3, 4)} and counts == {tp: 2}
    assert [r.offset for r in w._buf[tp]] == [5]


def test_a_chunk_of_compressed_values_is_decompressed_only_up_to_the_limit(tmp_path, monkeypatch):
    """Memory stays bounded by the chunk limit plus one value: the values after the one whose text passes
    MAX_CHUNK_BYTES are not decompressed (a chunk of 250 values of 60 MB each once took 60 MB per value)."""
    from ingest import consumer, decode
    from ingest.consumer import TopicPartition

    calls = []
    real = decode.decode_message
    monkeypatch.setattr(decode, "decode_message", lambda value, **kw: calls.append(kw["offset"]) or real(value, **kw))
    monkeypatch.setattr(consumer, "MAX_CHUNK_BYTES", 25_000)
    w = IngestWorker(bootstrap="127.0.0.1:1", topics=["t"], group_id="g", lake=Lake(tmp_path / "lake"),
                     dlq_topic="t.dlq", max_records=80)
    tp = TopicPartition("t", 0)
    w._buf[tp] = _records("t", 0, [gzip.compress(b"y" * 10_000)] * 8)
    records, decoded, spans, counts = w._take([(tp, 9)])
    assert calls == [0, 1, 2] and [r.offset for r in records] == [0, 1, 2]  # 30,000 bytes > 25,000 after 3
    assert sum(len(s.data) for s in decoded.segments) == 30_000 and len(w._buf[tp]) == 5


def test_a_batch_with_offset_gaps_spans_its_ends_and_counts_its_records(tmp_path):
    """Offsets have gaps (a compacted topic, transaction markers): a batch's span is its first and last
    offset per partition, its count the records there are, and its id the one ``batch_id`` gives."""
    import dataclasses

    from ingest.consumer import TopicPartition, _batch_id, batch_id
    from ingest.decode import per_record

    w = IngestWorker(bootstrap="127.0.0.1:1", topics=["t"], group_id="g", lake=Lake(tmp_path / "lake"),
                     dlq_topic="t.dlq", max_records=80)
    a, b = TopicPartition("t", 0), TopicPartition("t", 2)
    w._buf[a] = [dataclasses.replace(r, offset=o) for r, o in zip(_records("t", 0, [b"x"] * 3), (10, 12, 15))]
    w._buf[b] = _records("t", 2, [b"y"] * 2, first=4)
    taken = w._take([(a, 15), (b, 5)])
    assert taken.spans == {a: (10, 15), b: (4, 5)} and taken.counts == {a: 3, b: 2}
    assert [r.offset for r in taken.records] == [10, 12, 15, 4, 5]
    assert [s.origin for s in per_record(taken.decoded.segments)] == [f"kafka:t/0/{o}" for o in (10, 12, 15)] + [
        f"kafka:t/2/{o}" for o in (4, 5)]
    assert batch_id(taken.records) == _batch_id(taken.spans)


def test_a_batch_begun_before_is_replayed_by_the_call_that_takes_it_not_by_the_fetchs_peek(tmp_path):
    """``_next_batch`` asks ``_ready`` twice: before its fetch, only whether anything is ready (how long to wait), then
    for what to take. A batch begun before (a crash between its begin and its commit) whose partitions could not all
    be read whole within ``REPLAY_WAIT_S`` is released by whichever call finds the time run out: when that was the
    first, the release was thrown away and the partitions cut into chunks anew (another batch id, the crashed
    batch's parts left in the lake beside the new ones: a speed pass's reading). The first call now only peeks.
    The consumer is a stand-in for its assignment and positions (the worker is not started): the time running out
    between the two calls cannot be arranged with a real broker."""
    from ingest.consumer import REPLAY_WAIT_S, TopicPartition

    w = IngestWorker(bootstrap="127.0.0.1:1", topics=["t"], group_id="g", lake=Lake(tmp_path / "lake"),
                     dlq_topic="t.dlq", max_records=80)  # chunks of 10 records
    a, b = TopicPartition("t", 0), TopicPartition("t", 1)
    w._buf[a] = _records("t", 0, [b"x"] * 10)
    w._buf[b] = _records("t", 1, [b"y"] * 3)

    class Consumer:  # a stand-in: what the broker gave (a: offsets 0 - 9, b: 0 - 2), no broker
        def assignment(self):
            return {a, b}

        async def position(self, tp):
            return {a: 10, b: 3}[tp]

        def highwater(self, tp):
            return {a: 10, b: 3}[tp]

    w._consumer = Consumer()
    w._intents = {a: (4, "b1"), b: (9, "b1")}  # begun as a: 0 - 4 (the live edge then), b: 0 - 9 (not all there now)
    w._intents_since = time.monotonic() - REPLAY_WAIT_S - 1
    assert asyncio.run(w._ready(peek=True)) == [(a, 4), (b, 9)] and w._intents  # ready, and still to be taken
    assert asyncio.run(w._ready()) == [(a, 4), (b, 9)] and not w._intents and w.health.replays == 1
    # no replay left: the aligned chunks (the round-robin turns between the two calls)
    assert sorted(asyncio.run(w._ready(peek=True))) == sorted(asyncio.run(w._ready())) == [(a, 9), (b, 9)]


def test_batch_spans_and_ids_do_not_depend_on_how_partitions_interleave():
    from ingest.consumer import TopicPartition, _spans, batch_id

    a, b = _records("t", 0, [b"a"] * 4, first=10), _records("t", 1, [b"b"] * 3, first=7)
    runs = a + b
    mixed = [a[2], b[0], a[0], b[2], a[3], b[1], a[1]]
    want = {TopicPartition("t", 0): (10, 13), TopicPartition("t", 1): (7, 9)}
    assert _spans(runs) == _spans(mixed) == want
    assert batch_id(runs) == batch_id(mixed) != batch_id(a)


def test_diagnose_refuses_a_symptom_without_a_host_on_files_of_several_hosts(tmp_path):
    """``--symptom hang:0,1`` on files of several hosts would be reported for every one of them (and change every
    host's incidents): it exits 2 naming the hosts; with ``@HOST``, or on one host's files, it is taken."""
    from typer.testing import CliRunner

    from api.cli import app

    for h in ("node07", "node08"):
        (tmp_path / f"{h}.log").write_bytes(xid("60") + b"\n")
    run = CliRunner().invoke
    r = run(app, ["diagnose", str(tmp_path), "--symptom", "hang:0,1", "--format", "json"])
    text = " ".join(r.output.replace("│", " ").split())  # the error box wraps with the terminal's width
    assert r.exit_code == 2 and "2 hosts (node07, node08)" in text and "hang@HOST" in text
    r = run(app, ["diagnose", str(tmp_path), "--symptom", "hang@node08:0,1", "--format", "json"])
    assert r.exit_code == 0, r.output
    r = run(app, ["diagnose", str(tmp_path / "node07.log"), "--symptom", "hang:0,1", "--format", "json"])
    assert r.exit_code == 0, r.output
    # the host is the one the lines name, not the file's name: a kern.log of node07 (a break-it pass found the
    # report on a host "kern", an incident of its own beside node07's Xid 79)
    (tmp_path / "kern.log").write_text("2026-12-01T00:00:00Z node07 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=0, "
                                       "GPU has fallen off the bus.\n")
    r = run(app, ["diagnose", str(tmp_path / "kern.log"), "--symptom", "hang", "--format", "json"])
    assert r.exit_code == 0, r.output
    (inc,) = orjson.loads(r.stdout)["incidents"]
    assert inc["initiator"]["host"] == "node07" and [d["host"] for d in inc["downstream"]] == ["node07"]
    assert "symptom host" not in r.output  # no "has no events in these logs"
    # a file none of whose lines is recognised still names its host: a silent host is a hang's usual suspect, so
    # node07's Xid beside node08's quiet log is two hosts (a break-it pass: the hang went to node07, exit 0)
    (tmp_path / "two").mkdir()
    (tmp_path / "two" / "node07.kern.log").write_bytes(xid("60") + b"\n")
    (tmp_path / "two" / "node08.kern.log").write_bytes(b"[  12.5] usb 1-1: new high-speed USB device\n")
    r = run(app, ["diagnose", str(tmp_path / "two"), "--symptom", "hang", "--format", "json"])
    text = " ".join(r.output.replace("│", " ").split())
    assert r.exit_code == 2 and "2 hosts (node07, node08)" in text, text
    # a folder of one host's files whose lines name none: the file names say which
    (tmp_path / "one").mkdir()
    (tmp_path / "one" / "node09.dmesg.log").write_bytes(b"[  12.5] usb 1-1: new high-speed USB device\n")
    r = run(app, ["diagnose", str(tmp_path / "one"), "--symptom", "failure", "--format", "json"])
    assert r.exit_code == 0 and orjson.loads(r.stdout)["incidents"][0]["initiator"]["host"] == "node09", r.output
    # a file of blank lines beside it is of no host (empty.log was one of "3 hosts": a fresh user's trial)
    (tmp_path / "one" / "empty.log").write_bytes(b"\n  \n\n")
    r = run(app, ["diagnose", str(tmp_path / "one"), "--symptom", "failure", "--format", "json"])
    assert r.exit_code == 0 and orjson.loads(r.stdout)["incidents"][0]["initiator"]["host"] == "node09", r.output


@kafka
def test_an_events_record_with_nulls_in_required_columns_is_skipped_and_correlation_goes_on(kafka, pipeline,
                                                                                           caplog):
    """``fleet.events`` records come from the ingest side, but Arrow IPC does not check a column's nullability:
    a record of another producer whose ``ts`` holds nulls, one whose ``details`` no cast turns into the
    schema's text (``ArrowNotImplementedError``), and one whose ``ts`` no year holds (``check_ranges``; it made
    every later step raise), are logged (``bad_events_record``, naming the column) and dead-lettered, and the next
    record's Xid 79 still becomes an incident. Before, such a record reached the
    correlator and raised a TypeError from inside its step (for a table of one wiring line) or clustering. So are
    a null value (a tombstone: it raised AttributeError and the worker crash-looped on it, its offset never
    committed) and values the ingest never writes (``check_values``: a device type "toaster", a host with a NUL; a
    break-it pass)."""
    import logging

    import pyarrow as pa

    from ingest.decode import Decoded, Segment
    from ingest.publish import encode
    from tests.kafka_helpers import correlate_records

    now_us = int(time.time() * 1_000_000)
    seg = Segment(data=xid("3a"), origin="t:node31", stream="node31", host="node31", ref_ts=now_us,
                  ref_basis="kafka", ingest_ts=now_us)
    good = pipeline.run(Decoded(segments=[seg])).events
    assert good.num_rows == 1
    i = good.schema.get_field_index("ts")
    bad = good.set_column(i, good.schema.field(i), pa.nulls(good.num_rows, good.schema.field(i).type))
    j = good.schema.get_field_index("details")  # a struct where the schema has JSON text: no cast exists
    odd = good.set_column(j, "details", pa.array([{"a": 1}] * good.num_rows))
    # a time no year holds (year 148108: it made every later step of the streaming correlator raise)
    far = good.set_column(i, good.schema.field(i), pa.array([2**62], pa.int64()).cast(good.schema.field(i).type))
    k = good.schema.get_field_index("device_type")
    toaster = good.set_column(k, good.schema.field(k), pa.array(["toaster"]).cast(good.schema.field(k).type))
    h = good.schema.get_field_index("host")
    nul = good.set_column(h, good.schema.field(h), pa.array(["nöde 7\x00"]).cast(good.schema.field(h).type))

    def ipc(t: pa.Table) -> bytes:  # as another producer would write it, in its own schema
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, t.schema) as w:
            w.write_table(t)
        return sink.getvalue().to_pybytes()
    topic = f"nullts.{time.time_ns()}"
    asyncio.run(_create(kafka, [topic, f"{topic}.dlq"], big=False))

    values = (encode(bad), ipc(odd), encode(far), None, encode(toaster), encode(nul), encode(good))
    with caplog.at_level(logging.ERROR, logger="firstfault.correlate"):
        incidents, _, _ = asyncio.run(correlate_records(kafka, topic, [(b"node31", v, []) for v in values]))
    # once each; a consumer-group rebalance on a loaded machine may deliver the records again (Kafka's
    # at-least-once): a redelivered record is logged again with the same text
    nulls, cast, ranges, tombstone, device_type, host = dict.fromkeys(
        r.getMessage() for r in caplog.records if getattr(r, "error_code", None) == "bad_events_record")
    assert "nulls in required columns: ts (1 of 1 rows)" in nulls and "details" in cast, (nulls, cast)
    assert "values out of range: ts (1 of 1 rows)" in ranges, ranges
    assert "an empty events record" in tombstone and "device_type (1 of 1 rows; 'toaster'" in device_type
    assert "host (1 of 1 rows" in host, host
    assert [(i["category"], i["initiator"]["device"]) for i in incidents] == [("gpu_off_bus", "0000:3a:00.0")]


def test_events_with_odd_details_or_precision_still_correlate(pipeline):
    """Another producer's events: ``details`` that are not a JSON object (``null``, a list, broken text) read
    as ``{}`` and a resolution below 1 µs as 1 — the events still count (they raised AttributeError or
    JSONDecodeError inside the streaming correlator, and a negative resolution joined events too far apart)."""
    import pyarrow as pa

    from correlate.model import events_from_table
    from correlate.stream import StreamCorrelator
    from ingest.decode import Decoded, Segment

    now_us = int(time.time() * 1_000_000)
    segs = [Segment(data=xid(b), origin=f"t:node3{b[1]}", stream=f"s{b}", host="node31", ref_ts=now_us,
                    ref_basis="kafka", ingest_ts=now_us) for b in ("3a", "3b", "3c")]
    t = pipeline.run(Decoded(segments=segs)).events
    j, k = t.schema.get_field_index("details"), t.schema.get_field_index("ts_precision_us")
    t = t.set_column(j, t.schema.field(j), pa.array(["null", "[1, 2]", "{not json"], pa.string()))
    t = t.set_column(k, t.schema.field(k), pa.array([-50_000_000, 0, 1], pa.int64()))
    assert [(e.details, e.precision_us) for e in events_from_table(t)] == [({}, 1), ({}, 1), ({}, 1)]
    sc = StreamCorrelator()
    sc.add(t, now_us=now_us)
    incidents = sc.step(now_us=now_us, flush=True)
    members = {e for i in incidents for e in i["initiator"]["events"] + [x for d in i["downstream"] for x in d["events"]]}
    assert incidents and members == set(t.column("event_id").to_pylist())


def test_correlate_names_required_columns_that_hold_nulls(pipeline):
    """``correlate()`` on an events table whose required columns hold nulls: a ValueError naming each column
    and how many rows, not a TypeError from deep inside clustering."""
    import pyarrow as pa

    from correlate.correlator import correlate
    from ingest.decode import Decoded, Segment

    now_us = int(time.time() * 1_000_000)
    segs = [Segment(data=xid(b), origin=f"t:node3{b[1]}", stream="s", host="node31", ref_ts=now_us, ref_basis="kafka",
                    ingest_ts=now_us) for b in ("3a", "3b")]
    t = pipeline.run(Decoded(segments=segs)).events
    assert t.num_rows == 2
    for name in ("ts", "host"):
        i = t.schema.get_field_index(name)
        t = t.set_column(i, t.schema.field(i), pa.array([None, t.column(i)[1].as_py()], t.schema.field(i).type))
    with pytest.raises(ValueError, match=r"nulls in required columns: ts \(1 of 2 rows\), host \(1 of 2 rows\)"):
        correlate(t, now_us=now_us)


def test_a_file_whose_lines_end_in_a_carriage_return_alone_is_read_line_by_line(tmp_path, pipeline):
    """A serial console's capture ends its lines with CR alone: two Xids on two GPUs were one line and the
    second was lost (a break-it pass). A file with no newline is split at its carriage returns; in a file with
    newlines a lone CR (a progress bar redrawn) stays inside its line."""
    f = tmp_path / "node07.cr.log"
    f.write_bytes(xid("3b") + b"\r" + xid("5e") + b"\r")
    b = pipeline.run(decode_file(f, relname=f.name))
    assert sorted(e["device"] for e in b.events.to_pylist()) == ["0000:3b:00.0", "0000:5e:00.0"]
    f.write_bytes(b"epoch 1:  10%|#   | 1/10\r epoch 1:  20%|##  | 2/10\n" + xid("3b") + b"\n")
    d = decode_file(f, relname=f.name)
    assert b"".join(s.data for s in d.segments).count(b"\r") == 1
    # ... also with the one newline an editor adds at the end (the lines merged again; a break-it pass)
    for end in (b"\n", b"\r\n"):
        f.write_bytes(xid("3b") + b"\r" + xid("5e") + b"\r" + xid("86") + end)
        assert pipeline.run(decode_file(f, relname=f.name)).events.num_rows == 3
    # UTF-16 text is left to its decoder: its code units may hold the byte 0x0D ("č" is 0D 01 in UTF-16LE)
    f.write_bytes("\ufeffnode07 č".encode("utf-16-le"))
    assert [s.data for s in decode_file(f, relname=f.name).segments] == ["node07 č".encode()]


def test_utf16_or_utf32_log_text_without_a_byte_order_mark_is_read(tmp_path, pipeline):
    """``iconv -t UTF-16LE`` writes no byte order mark: such a file read as 3 lines and 0 events, exit 0 (a break-it
    pass). Its zero bytes say which of UTF-16/32, little or big endian, it is (decode.bomless_codec); UTF-8 text,
    random bytes and zeros are none of them."""
    import os

    from ingest.decode import bomless_codec

    text = (xid("3b") + b"\n" + xid("5e") + b"\n").decode()
    f = tmp_path / "node07.log"
    for codec in ("utf-16-le", "utf-16-be", "utf-32-le", "utf-32-be"):
        f.write_bytes(text.encode(codec))
        d = decode_file(f, relname=f.name)
        assert b"".join(s.data for s in d.segments) == text.encode() and not d.rejects, codec
        assert pipeline.run(d).events.num_rows == 2, codec
    assert [bomless_codec(b) for b in (text.encode(), os.urandom(4096), bytes(4096), bytes(range(256)) * 8)] == [None] * 4
    # UTF-16 lines, then UTF-8 ones: not all of it is UTF-16, so it is read as before (read as UTF-16, the UTF-8
    # lines' events were lost, silently: a second break-it pass)
    f.write_bytes(("x" * 2000 + "\n").encode("utf-16-le") + xid("3b") + b"\n")
    assert pipeline.run(decode_file(f, relname=f.name)).events.num_rows == 1
    # UTF-8 lines, then UTF-16LE ones (PowerShell's `>>` appends its Out-File default to a UTF-8 log), with or without
    # their byte order mark, then UTF-8 again: every line read, the numbers of the lines kept (the UTF-16 Xid was lost
    # without a word: a break-it pass); a UTF-16 line first is read too
    # (``-Encoding BigEndianUnicode`` appends UTF-16BE: with its mark, the line read "ÿ" before its time, which was
    # lost, a break-it pass)
    for mark, codec in itertools.product(("\ufeff", ""), ("utf-16-le", "utf-16-be")):
        f.write_bytes(xid("3b") + b"\n" + (mark + xid("5e").decode() + "\n").encode(codec) + xid("61") + b"\n")
        d = decode_file(f, relname=f.name)
        assert b"".join(s.data for s in d.segments) == xid("3b") + b"\n" + xid("5e") + b"\n" + xid("61") + b"\n", codec
        ev = pipeline.run(d).events
        assert sorted(ev.column("device").to_pylist()) == ["0000:3b:00.0", "0000:5e:00.0", "0000:61:00.0"], mark
        assert sorted(ev.column("message").to_pylist()) == sorted(xid(b).decode() for b in ("3b", "5e", "61")), codec
    f.write_bytes(("x" * 2000 + "\n" + xid("5e").decode() + "\n").encode("utf-16-le") + xid("3b") + b"\n")
    assert pipeline.run(decode_file(f, relname=f.name)).events.num_rows == 2
    # NUL runs (a crash's zeroed blocks) and NUL-separated words (/proc/PID/cmdline) are no UTF-16
    from ingest.decode import utf16_stretches

    for raw in (xid("3b") + bytes(4096) + b"\n", b"python\x00train.py\x00--lr\x003e-4\x00\n", b"a\x00" * 15 + b"\n"):
        assert utf16_stretches(raw) == raw



@pytest.mark.parametrize("value", [
    (xid("3b") + b"\n" + xid("5e") + b"\n").decode().encode("utf-16-le"),
    (xid("3b") + b"\n" + xid("5e") + b"\n").decode().encode("utf-16-be"),
    xid("3b") + b"\r" + xid("5e") + b"\r", xid("3b") + b"\r" + xid("5e") + b"\n",
    xid("3b") + b"\r" + xid("5e") + b"\r\n"])
def test_a_kafka_value_of_bomless_utf16_or_cr_ended_lines_is_read_as_a_files(pipeline, value):
    """UTF-16 text without a byte order mark, and lines ended by CR alone, read in a file gave their events; sent as
    a Kafka value they gave none and no dead letter (the NULs of UTF-16 were no binary data; the CR-ended lines were
    read as one line redrawn, its last write shown): silent loss (a break-it pass on the service path). The record
    by itself and in a partition's one-pass decoding alike."""
    from types import SimpleNamespace

    from ingest.decode import decode_partition

    d = decode_message(value, topic="fleet.dmesg", partition=0, offset=7, key=b"node07", timestamp_ms=T_MS,
                       headers=[])
    assert not d.rejects and pipeline.run(d).events.num_rows == 2
    rec = SimpleNamespace(value=value, offset=7, key=b"node07", timestamp=T_MS, headers=())
    assert [x.data for x in decode_partition("fleet.dmesg", 0, [rec]).segments] == [x.data for x in d.segments]
    # a progress bar's redraws in one line stay one line
    bar = decode_message(b"10%\r20%\r" + xid("3b"), topic="fleet.dmesg", partition=0, offset=8, key=b"node07",
                         timestamp_ms=T_MS, headers=[])
    assert [x.data.count(b"\n") for x in bar.segments] == [0]
    # random 16-bit values whose high bytes are zero decode to no text: still binary data, dead-lettered (a second
    # break-it pass: 6 KB of junk text, no reject)
    noise = bytes(b for k in range(4000) for b in ((k * 7919) % 255 + 1, 0))
    junk = decode_message(noise, topic="fleet.dmesg", partition=0, offset=9, key=b"node07", timestamp_ms=T_MS,
                          headers=[])
    assert not junk.segments and [r.error_code for r in junk.rejects] == ["not_text"]


def test_a_gzip_cut_inside_its_second_members_header_keeps_the_first_members_lines(tmp_path):
    """Concatenated gzip members (a rotated log appended to) cut one byte into the next member: that byte
    read as "1 bytes of trailing data" and the complete first member's lines were lost (a break-it pass); a
    CR-only file cut short lost every line the same way, its lines were cut at the last newline it had none of."""
    f = tmp_path / "node07.log.gz"
    f.write_bytes(gzip.compress(xid("3b") + b"\n" + xid("5e") + b"\n") + gzip.compress(xid("86") + b"\n")[:1])
    d = decode_file(f, relname=f.name)
    assert b"".join(s.data for s in d.segments) == xid("3b") + b"\n" + xid("5e") + b"\n"
    assert [r.error_code for r in d.rejects] == ["bad_compression"] and "the rest is lost" in d.rejects[0].reason
    f.write_bytes(gzip.compress(b"".join(xid(f"{i:02x}") + b"\r" for i in range(0x10, 0x30)))[:-8])
    d = decode_file(f, relname=f.name)
    assert b"".join(s.data for s in d.segments).count(b"\n") == 0x20
    # a whole gzip stream with bytes after it that are no gzip: its lines are read, as gzip -dc reads them, and the
    # reject says only the trailing bytes are not (the file was skipped whole: a break-it pass); so for a Kafka
    # value, which is dead-lettered whole besides
    body = xid("3b") + b"\n" + xid("5e") + b"\n"
    f.write_bytes(gzip.compress(body) + b"junk junk junk junk 1234")
    d = decode_file(f, relname=f.name)
    assert b"".join(s.data for s in d.segments) == body
    assert [r.reason.split("; ")[1] for r in d.rejects] == ["read its 2 lines (" + str(len(body)) + " bytes), not the "
                                                            "trailing bytes"]
    v = decode_message(gzip.compress(body) + b"junk", topic="fleet.dmesg", partition=0, offset=7, key=b"node07",
                       timestamp_ms=T_MS, headers=[])
    assert b"".join(s.data for s in v.segments) == body and [r.error_code for r in v.rejects] == ["bad_compression"]
    # junk that begins like another gzip member, and junk after a zstd frame: the same (both were skipped whole: a
    # second break-it pass); a corrupt first member or frame is still corrupt
    for packed in (gzip.compress(body) + b"\x1f\x8bjunk junk junk junk", zstandard.compress(body) + b"junk junk"):
        f.write_bytes(packed)
        d = decode_file(f, relname=f.name)
        assert b"".join(s.data for s in d.segments) == body and "not the trailing bytes" in d.rejects[0].reason
    f.write_bytes(b"\x1f\x8b\x08\x00junk junk junk junk")
    assert not decode_file(f, relname=f.name).segments


def test_the_pipeline_never_gives_an_event_the_correlator_refuses(pipeline):
    """Whatever reaches the pipeline, its events pass ``schemas.events.check_ranges``: a line timed by a reference
    time no year 1900 – 2199 holds (a file's mtime, a Kafka time another path let through) is an ``out_of_range``
    reject naming the column and value, the other events go on, and the streaming correlator takes the batch
    (one such row made `firstfault run` and `diagnose` raise: a break-it pass)."""
    from correlate.stream import StreamCorrelator
    from ingest.decode import Decoded, Segment
    from schemas.events import check_ranges

    old = -3_000_000_000_000_000  # 1874, µs
    segs = [Segment(xid("35"), "file:a.log@0", "a", "node1", old, "file", old, None),
            Segment(xid("36"), "file:b.log@0", "b", "node2", T_MS * 1000, "file", T_MS * 1000, None)]
    b = pipeline.run(Decoded(segments=segs))
    check_ranges(b.events)
    assert b.events.column("host").to_pylist() == ["node2"]
    [r] = [r for r in b.rejects if r.error_code == "out_of_range"]
    assert r.origin.startswith("file:a.log@0") and "ts = -3000000000000000 µs" in r.reason and r.data == xid("35")
    s = StreamCorrelator()
    s.add(b.events, b.link_samples, b.topology)
    assert s.events
    # a duration no collective runs stays out of the columns (extraction), so the event is kept
    d = pipeline.run(Decoded(segments=[Segment(WATCHDOG_3000_YEARS, "t:0", "t", "node3", T_MS * 1000, "kafka",
                                               T_MS * 1000, None)]))
    assert d.events.column("elapsed_ms").to_pylist() == [None] and not d.rejects


def test_hosts_that_are_no_host_names_are_rejected_with_the_reason(pipeline):
    """A host from a Kafka key, a header, an envelope or a poller's sample must be a host name: at most 255
    characters, no blanks or control characters, no '/', no bytes that were no UTF-8 (U+FFFD). Events, link
    samples and topology facts of another host are stored; each refused row is a ``bad_host`` reject."""
    from ingest.decode import Decoded, Segment
    from ingest.pipeline import MAX_HOST_CHARS

    good = ["node-01.rack_2", "y" * MAX_HOST_CHARS, "nœud-ünï", "fe80::1", "node1.example.com"]
    # too long, '/', newline, space, no UTF-8, a C1 control, no-break space, line separator, zero-width space;
    # syslog's NILVALUE and dots alone (URL dot segments: /hosts/../timeline names no host)
    hosts = [*good, "x" * (MAX_HOST_CHARS + 1), "rack1/node402", "node\nx", "node 1", "\ufffd node106", "node07\x85",
             "a\u00a0b", "a\u2028b", "a\u200bb", "-", ".", ".."]
    smi = b"GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-1)\n\t Link 0: 26.562 GB/s"
    segs = [Segment(xid("38") + b"\n" + smi, f"t:{i}", f"s{i}", h, T_MS * 1000, "kafka", T_MS * 1000, None)
            for i, h in enumerate(hosts)]
    b = pipeline.run(Decoded(segments=segs))
    # stored as one name per host (schemas.hostname): the short name, lower case; an IPv6 address whole; a Unicode
    # name as DNS carries it, its A-label (IDNA 2008, UTS #46)
    stored = ["node-01", "y" * MAX_HOST_CHARS, "xn--nud-n-gta3g67a", "fe80::1", "node1"]
    assert sorted(set(b.events.column("host").to_pylist())) == sorted(stored)
    assert sorted(set(b.link_samples.column("host").to_pylist())) == sorted(stored)
    bad = [r for r in b.rejects if r.error_code == "bad_host"]
    assert sorted({r.origin for r in bad}) == sorted(f"t:{i}" for i in range(len(good), len(hosts)))
    assert {r.reason.split(":")[0] for r in bad} == {"event not stored", "link sample not stored"}
    assert any(f"… ({MAX_HOST_CHARS + 1} characters)" in r.reason for r in bad)
    # the answers are kept for names that may be host names only: distinct 200 KB keys held 400 MB (a break-it pass)
    from schemas.hostname import _short_host_name, is_host_name

    kept = _short_host_name.cache_info().currsize
    assert not any(is_host_name(f"{k}" + "x" * 200_000) for k in range(20))
    assert _short_host_name.cache_info().currsize == kept


def test_each_kafka_value_of_a_refused_line_is_dead_lettered_not_only_the_first(pipeline):
    """Three keyless records of one line (no host anywhere), or three records of a line without a time whose Kafka
    timestamp is no time: the storm rule folded the copies into one event before it was refused, so one reject, one
    dead letter, and the other two values were committed and lost (a break-it pass). A line the pipeline will not
    store joins no repeat: one reject per value, so one dead letter each; stored copies still fold."""
    from aiokafka import ConsumerRecord

    from ingest.consumer import dead_letters, decode_records

    def records(line: bytes, key: bytes | None, ms: int):
        return [ConsumerRecord(topic="fleet.dmesg", partition=0, offset=11 + i, timestamp=ms, timestamp_type=0,
                               key=key, value=line, checksum=None, serialized_key_size=-1,
                               serialized_value_size=len(line), headers=[]) for i in range(3)]

    stamped = b"[Mon Nov 30 03:12:05 2026] " + xid("3a")
    for recs, code in ((records(stamped, None, T_MS), "bad_host"), (records(xid("3a"), b"node07", 1), "bad_timestamp")):
        b = pipeline.run(decode_records(recs))
        assert b.events.num_rows == 0
        assert sorted(r.origin for r in b.rejects if r.error_code == code) == [
            f"kafka:fleet.dmesg/0/{o}" for o in (11, 12, 13)]
        assert len(dead_letters(b.rejects)) == 3
    kept = pipeline.run(decode_records(records(stamped, b"node07", T_MS)))
    assert kept.events.column("count").to_pylist() == [3] and not kept.rejects
    # a flood of a refused line in one value (or file) is still one event, one reject: one per line doubled a 400k-line
    # storm's memory (a second break-it pass)
    flood = records(b"\n".join([stamped] * 1000), None, T_MS)[:1]
    b = pipeline.run(decode_records(flood))
    assert [r.error_code for r in b.rejects] == ["bad_host"]


def test_a_kafka_time_that_is_no_time_times_no_event(pipeline):
    """A Kafka record's timestamp outside 2000 - 2100 (1970, Kafka's -1 for none, a producer's 1999 clock) times
    no event: a line that prints no time is a ``bad_timestamp`` reject; a line with its own time keeps it and
    loses only its ``ingest_ts`` (a first cut dead-lettered such records whole, stamped lines too: a break-it
    pass)."""
    from ingest.decode import Decoded, decode_message

    stamped = b"[Mon Nov 30 03:12:05 2026] " + xid("3a")
    for ms in (1, -1, 915_148_800_000):  # 1970, none, 1999-01-01
        d = decode_message(stamped, topic="fleet.dmesg", partition=0, offset=8, key=b"node1", timestamp_ms=ms)
        d2 = decode_message(xid("3b"), topic="fleet.dmesg", partition=0, offset=9, key=b"node2", timestamp_ms=ms)
        b = pipeline.run(Decoded(segments=d.segments + d2.segments))
        [e] = b.events.to_pylist()
        assert e["device"] == "0000:3a:00.0" and e["ts"].year == 2026 and e["ingest_ts"] is None, ms
        [r] = b.rejects
        assert r.error_code == "bad_timestamp" and r.origin == "kafka:fleet.dmesg/0/9" and r.data == xid("3b")
        assert "its line prints no time" in r.reason and "no time from 2000 to 2100" in r.reason


def test_a_file_name_gives_a_host_name_and_a_key_its_stripped_text(tmp_path):
    """The host a file's name gives holds no blank or other character no host name holds (``node01 (1).log``, a
    browser's second copy, lost every event as a ``bad_host`` reject: a break-it pass); a Kafka key's surrounding
    blanks are no part of the host (``node07\\n``, a shipper template's line end)."""
    from ingest.decode import decode_file, decode_message, host_from_filename

    assert host_from_filename(Path("node01 (1).log")) == "node01_(1)"
    assert host_from_filename(Path("Copy of node01.dmesg.log")) == "Copy_of_node01"
    assert host_from_filename(Path("node\u00a007.log")) == "node_07" and host_from_filename(Path("node07.log")) == "node07"
    # a file named after an IPv4 address is that host, not its first number (two machines were one host "10": a
    # break-it pass)
    assert [host_from_filename(Path(n)) for n in ("10.0.0.8.log", "10.0.0.9", "1.2.3.log")] == ["10.0.0.8", "10.0.0.9",
                                                                                             "1"]
    f = tmp_path / "node01 (1).log"
    f.write_bytes(xid("39") + b"\n")
    assert [s.host for s in decode_file(f, relname=f.name).segments] == ["node01_(1)"]
    [seg] = decode_message(xid("39"), topic="fleet.dmesg", partition=0, offset=1, key=b" node07\n", timestamp_ms=T_MS
                           ).segments
    assert seg.host == "node07"


def test_a_kind_of_log_in_a_file_name_is_no_part_of_its_host(tmp_path):
    """``node07-dmesg.log`` was host ``node07-dmesg`` beside the ``node07`` the job's NCCL lines named: one fault,
    two incidents; ``logs/node07/dmesg.log`` and ``logs/node08/dmesg.log`` were one host ``dmesg``, node08's Xid 74
    "downstream" of node07's Xid 79 (a break-it pass). A kind of log joined by ``-`` or ``_`` is dropped, and a file
    named by its kind alone takes the nearest folder above it whose name has a digit."""
    from correlate.correlator import correlate
    from ingest.decode import decode_file, host_from_filename
    from ingest.pipeline import Pipeline

    names = {"node07-dmesg.log": "node07", "node07_dmesg.txt": "node07", "dmesg_node07.log": "node07",
             "gpu-node-3-kern.log": "gpu-node-3", "trn-h100-017.train.log": "trn-h100-017", "slurm-4711.out":
             "slurm-4711", "logs/node07/dmesg.log": "node07", "node08/var/log/kern.log": "node08",
             "tmp/dmesg.log": "dmesg", "dmesg": "dmesg", "10.0.0.8-dmesg.log": "10.0.0.8",
             # a second break-it pass: a host name that begins with a log word keeps it; dates and rank folders are
             # no hosts (logrotate, torchrun); a file named by its rank stays that rank
             "train-017.dmesg.log": "train-017", "kern-01": "kern-01", "log-server-03": "log-server-03",
             "console-7.log": "console-7", "logs/node07/2026-11-29/dmesg.log": "node07",
             "node07/messages-20261129": "node07", "node07/rank0/stdout.log": "node07", "logs/job-1/rank0.log": "rank0",
             # a real-logs pass: the program that wrote it (kubernetes-sigs/dra-driver-nvidia-gpu#982's job log)
             "gb200node-torch.log": "gb200node", "node07-nvidia-smi.txt": "node07",
             "node07_nvidia-bug-report.log": "node07", "nvidia-dgx-01.log": "nvidia-dgx-01", "node07-dcgmi.log": "node07",
             # a host name without a digit (a second real-logs pass: gpu-node-dmesg beside gpu-node), nvidia-smi -q's
             "gpu-node-dmesg.log": "gpu-node", "hostA-dmesg.log": "hostA", "node07-nvidia-smi-q.txt": "node07",
             # a run of log words in front is none (a second break-it pass), one that may begin a name is kept
             "nvidia-bug-report-node07.log": "node07", "node3-dcgmi-diag.txt": "node3",
             "logs/node07/nvidia-smi-q.txt": "node07", "logs/node07/dcgmi-diag.txt": "node07",
             # an inference server's log (vllm-project/vllm#21661's workers); a pod named after it keeps the name
             "node01-vllm.log": "node01", "node02_sglang.log": "node02", "vllm-0.log": "vllm-0",
             "sglang-worker-1.log": "sglang-worker-1",
             # a command and its flag (a fresh user's trial; a real-logs pass: dmesg-T.log was host "t")
             "node12-dmesg-T.log": "node12", "node13-kmsg.log": "node13", "node14-journalctl-k.txt": "node14",
             "node10-nvlink.txt": "node10", "node31-nvlink-s.txt": "node31", "logs/gpu4/dmesg-T.log": "gpu4",
             "dmesg_T.log": "dmesg",
             # the container runtime's and the node agent's (a real-logs pass)
             "popos-docker.log": "popos", "node07-kubelet.log": "node07", "node08_containerd.txt": "node08",
             # a raw capture; the command and its flag run together (a break-it pass)
             "node07-raw.log": "node07", "node07-dmesgT.log": "node07",
             # health checks and benchmarks run on the node (a real-logs pass: node01-nhc was a host of its own)
             "node01-nhc.log": "node01", "node01-nvbandwidth.txt": "node01", "node01-health.log": "node01",
             # a job id after a host's name is dropped (a trailing run of six or more digits); one before a name
             # is kept: "%x-%j-%N" (node) and "%j-%x" (job name) or "%j-%u" (user) cannot be told apart — a rule for
             # the first made job names, users and "gpt2" hosts, two jobs one host (two break-it passes)
             "node07-682842.out": "node07", "tr1-13B-round3-682842-node07.out": "tr1-13B-round3-682842-node07",
             "682842-llama3.out": "682842-llama3", "node-123456-a.out": "node-123456-a",
             "node07_20261130_103015_crash.log": "node07_20261130_103015_crash", "gpu-node-0123.log": "gpu-node-0123"}
    assert {n: host_from_filename(Path(n)) for n in names} == names
    xid = "[Sun Nov 15 14:00:0{s} 2026] NVRM: Xid (PCI:0000:{bus}:00): {x}, pid=1, name=python, {text}\n"
    for host, (bus, x, text) in {"node07": ("3b", 79, "GPU has fallen off the bus."),
                                 "node08": ("86", 74, "NVLink: fatal error detected on link 3(0x0, 0x0, 0x10000, "
                                                      "0x0, 0x0, 0x0, 0x0)")}.items():
        (tmp_path / host).mkdir()
        (tmp_path / host / "dmesg.log").write_text(xid.format(s=1 if x == 79 else 2, bus=bus, x=x, text=text))
    decoded = [decode_file(tmp_path / h / "dmesg.log", relname=f"{h}/dmesg.log") for h in ("node07", "node08")]
    b = Pipeline(default_catalog()).run(Decoded(segments=[s for d in decoded for s in d.segments]))
    incidents = correlate(b.events, b.link_samples, b.topology, now_us=2_000_000_000_000_000)
    assert sorted((i["initiator"]["host"], i["initiator"]["xid"]) for i in incidents) == [("node07", 79),
                                                                                         ("node08", 74)]


def test_a_record_that_names_no_host_is_refused_and_a_blank_key_gives_way_to_the_host_header(pipeline):
    """Kafka records of different machines with no key (or a key of blanks), no host header, no envelope host
    and no host in the line were all host ``unknown``: one host in every incident of them, and a blank key hid a
    valid ``host`` header (a break-it pass). Such a line is a ``bad_host`` reject saying it names no host; a key
    of blanks gives way to the header; a line that names its host keeps it."""
    from ingest.decode import Decoded, decode_message

    def rec(value: bytes, offset: int, key: bytes | None, headers=None) -> Decoded:
        return decode_message(value, topic="fleet.dmesg", partition=0, offset=offset, key=key, timestamp_ms=T_MS,
                              headers=headers)

    raw = b"[ 99.123456] " + xid("3b")
    ds = [rec(raw, 1, None), rec(raw.replace(b"3b", b"3d"), 2, b"   "), rec(raw, 3, b"   ", [("host", b"nodeHdr3")]),
          rec(b"2026-11-30T03:12:00Z node44 kernel: " + xid("3c"), 4, None)]
    b = pipeline.run(Decoded(segments=[s for d in ds for s in d.segments]))
    assert sorted(zip(b.events.column("host").to_pylist(), b.events.column("device").to_pylist())) == [
        ("node44", "0000:3c:00.0"), ("nodehdr3", "0000:3b:00.0")]  # host names are lower case (schemas.hostname)
    assert sorted((r.origin, r.error_code) for r in b.rejects) == [("kafka:fleet.dmesg/0/1", "bad_host"),
                                                                     ("kafka:fleet.dmesg/0/2", "bad_host")]
    assert all(r.reason.startswith("event not stored: it names no host (no Kafka key, host header or envelope host")
               for r in b.rejects)


def test_a_binary_kafka_value_is_a_not_text_dead_letter(pipeline):
    """4 KB of random bytes (or an executable) in a Kafka record matched nothing and left no dead letter, where
    `diagnose` skips such a file saying why (a break-it pass): a value with a NUL byte that is no text is a
    ``not_text`` reject, whether it comes alone or among one-line records (``decode_partition``'s fast path); a
    kernel log zeroed by a crash (NULs before a line) and UTF-16 text are still read."""
    import random
    from types import SimpleNamespace

    from ingest.decode import decode_partition

    rnd = random.Random(7).randbytes(4096)
    values = [xid("3a"), rnd, b"\x00" * 64 + b"2026-11-30T03:12:00Z node07 kernel: " + xid("3b"),
              b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)) * 8, ("\ufeff" + xid("3c").decode()).encode("utf-16-le")]
    recs = [SimpleNamespace(value=v, key=b"node07", offset=i, timestamp=T_MS, headers=()) for i, v in enumerate(values)]
    d = decode_partition("fleet.dmesg", 0, recs)
    assert sorted((r.origin, r.error_code) for r in d.rejects) == [("kafka:fleet.dmesg/0/1", "not_text"),
                                                                     ("kafka:fleet.dmesg/0/3", "not_text")]
    assert all(r.reason.startswith("not log text: ") for r in d.rejects)
    # each whole, as it came: sent again from the dead-letter topic it reads alike (it was its first 4 KiB: a break-it
    # pass); a value larger than a dead letter takes is cut there, and its headers say so
    assert [r.data for r in sorted(d.rejects, key=lambda r: r.origin)] == [values[1], values[3]]
    from ingest.consumer import dead_letters
    big = random.Random(8).randbytes(DLQ_VALUE_BYTES + 10)
    (_k, value, headers), = dead_letters(decode_partition("fleet.dmesg", 0, [SimpleNamespace(
        value=big, key=b"node07", offset=9, timestamp=T_MS, headers=())]).rejects)
    h = dict(headers)
    assert value == big[:DLQ_VALUE_BYTES] and h["ff-value-bytes"] == str(len(big)).encode()
    assert h["ff-value-cut"] == f"first {DLQ_VALUE_BYTES} bytes; the whole value is at ff-origin".encode()
    b = pipeline.run(d)
    assert sorted(b.events.column("device").to_pylist()) == ["0000:3a:00.0", "0000:3b:00.0", "0000:3c:00.0"]


def test_a_truncated_compressed_kafka_value_gives_its_whole_lines_and_a_dead_letter_of_the_value(pipeline):
    """A gzip (or zstd) value cut short was dead-lettered whole, its good lines never read, where `diagnose` reads
    the whole lines before the cut of the same file (a break-it pass): the lines before the cut are events, and the
    value goes to the dead-letter topic whole, saying how many lines were read."""
    import gzip

    from ingest.decode import decode_message

    def lines(n: int) -> bytes:
        return b"".join(b"2026-11-30T03:%02d:%02dZ node07 kernel: " % (i // 60 % 60, i % 60) + xid(f"{i % 256:02x}")
                        + b"\n" for i in range(n))

    # a zstd frame gives nothing of a block cut short (128 KB): three blocks of lines, cut in the last
    for n, packed in ((200, gzip.compress(lines(200))), (3000, zstandard.ZstdCompressor().compress(lines(3000)))):
        cut = packed[:len(packed) * 5 // 6]
        d = decode_message(cut, topic="fleet.dmesg", partition=0, offset=5, key=b"node07", timestamp_ms=T_MS)
        [r] = d.rejects
        read = int(r.reason.split("read its first ")[1].split(" ")[0])
        assert r.error_code == "bad_compression" and r.data == cut and 0 < read < n, r.reason
        b = pipeline.run(d)
        assert b.events.column("device").to_pylist() == [f"0000:{i % 256:02x}:00.0" for i in range(read)]


def test_a_kafka_value_that_decompresses_past_the_limit_is_refused_whole(pipeline):
    """A 228 KB gzip value of one line repeated decompresses past the 64 MiB value limit: refused whole, one dead
    letter, no event (a first cut that read the lines of a truncated value read such a bomb's first 64 MiB: a
    break-it pass); a truncated value of binary data is one dead letter, not a ``not_text`` one beside it."""
    import gzip
    import random

    from ingest.decode import MAX_VALUE_BYTES, decode_message

    line = b"2026-11-30T03:12:00Z node07 kernel: " + xid("3a") + b"\n"
    bomb = gzip.compress(line * (MAX_VALUE_BYTES // len(line) + 10), 9)
    d = decode_message(bomb, topic="fleet.dmesg", partition=0, offset=3, key=b"node07", timestamp_ms=T_MS)
    assert not d.segments and [(r.error_code, r.reason) for r in d.rejects] == [
        ("bad_compression", f"cannot decompress: decompressed size exceeds {MAX_VALUE_BYTES} bytes")]
    binary = gzip.compress(random.Random(3).randbytes(300_000))
    d = decode_message(binary[:len(binary) // 2], topic="fleet.dmesg", partition=0, offset=4, key=b"node07",
                       timestamp_ms=T_MS)
    assert not d.segments and [r.error_code for r in d.rejects] == ["bad_compression"]
    assert "read its first" not in d.rejects[0].reason


def test_the_worker_path_gives_a_blank_key_the_host_header_and_reads_a_mixed_array_with_a_line_end(pipeline):
    """``decode_partition`` (the worker's reading) must give what ``decode_message`` gives record by record: a key of
    blanks gave way to the ``host`` header only in the second, and the first stored the Xid as bad_host; a JSON
    array mixing envelopes and other values ending in a line end was one line of text there (a second break-it
    pass). A header host's surrounding blanks are dropped, as a key's."""
    from types import SimpleNamespace

    from ingest.decode import decode_message, decode_partition

    env = {"host": "nodeArr", "timestamp": "2026-11-30T03:12:00Z", "message": xid("3e").decode()}
    recs = [(b"[  1.0] " + xid("3c"), b"  ", [("host", b"node62")]),
            (b"[  1.0] " + xid("3d"), b"\n", [("host", b" node63\n")]),
            (orjson.dumps([1, env]) + b"\r\n", b"k", [])]
    rs = [SimpleNamespace(value=v, key=k, offset=i, timestamp=T_MS, headers=h) for i, (v, k, h) in enumerate(recs)]
    for d in (decode_partition("fleet.dmesg", 0, rs),
              *[decode_message(r.value, topic="fleet.dmesg", partition=0, offset=r.offset, key=r.key,
                               timestamp_ms=T_MS, headers=r.headers) for r in rs]):
        b = pipeline.run(d)
        got = sorted(zip(b.events.column("host").to_pylist(), b.events.column("device").to_pylist()))
        assert set(got) <= {("node62", "0000:3c:00.0"), ("node63", "0000:3d:00.0"), ("nodearr", "0000:3e:00.0")}
        assert got and all(r.error_code == "bad_envelope" and r.reason.startswith("NDJSON record 0: record is not "
                                                                                  "an object") for r in b.rejects)
    b = pipeline.run(decode_partition("fleet.dmesg", 0, rs))
    assert sorted(b.events.column("host").to_pylist()) == ["node62", "node63", "nodearr"]


def test_a_link_to_a_file_read_already_or_a_file_named_twice_is_read_once(tmp_path):
    """``current.log -> node07.log`` in one folder, a hard link, or a file named twice on the command line: its
    lines were read as two files', every event twice (a break-it pass). The file is read once, under its own
    name (a folder's links after its regular files: the host comes from the name), and stderr says which paths
    were the same file."""
    import os

    from typer.testing import CliRunner

    from api.cli import app

    d = tmp_path / "logs"
    d.mkdir()
    (d / "node07.log").write_bytes(xid() + b"\n")
    (d / "current.log").symlink_to("node07.log")
    os.link(d / "node07.log", tmp_path / "copy.log")
    r = CliRunner().invoke(app, ["diagnose", str(d), str(d / "node07.log"), str(tmp_path / "copy.log"),
                                 "--format", "json"])
    assert r.exit_code == 0, r.output
    [ev] = orjson.loads(r.stdout)["events"]
    assert ev["host"] == "node07"
    assert (f"read once, the same file as one read already (a link, or named twice): {d / 'current.log'} (= "
            f"{d / 'node07.log'}), {d / 'node07.log'} (named twice), {tmp_path / 'copy.log'} (= {d / 'node07.log'})"
            in " ".join(r.output.split())), r.output


def test_every_command_that_serves_refuses_a_port_out_of_range():
    """``demo --port 99999`` bound it and died with ``OverflowError: bind(): port must be 0-65535`` (a fresh-user
    trial): ``run`` and ``serve`` refused it. Every command with ``--port`` refuses it before anything starts."""
    from typer.main import get_command
    from typer.testing import CliRunner

    from api.cli import app

    served = sorted(name for name, cmd in get_command(app).commands.items()
                    if any("--port" in p.opts for p in cmd.params))
    assert served == ["correlate", "demo", "ingest", "run", "serve"]
    for name in served:
        for port in ("99999", "-1"):
            r = CliRunner().invoke(app, [name, "--port", port])
            assert r.exit_code == 2 and "Invalid value for '--port'" in r.output, (name, port, r.output)


def test_a_broken_signature_or_rules_file_is_one_line_and_exit_2(monkeypatch, capsys):
    """Signatures and rules are data a user edits: a bad edit said ~40 lines of traceback and exit 1 (a fresh-user
    trial); it is one line naming the file, and exit 2, as a bad setting is. (The command is replaced by one that
    raises what loading the files raises: the shipped files are valid.)"""
    import pytest

    import api.cli as cli
    from correlate.rules import RulesError
    from ingest.catalog import CatalogError

    for exc, said in ((CatalogError("nvml.yaml: signatures.11.says: Extra inputs are not permitted"),
                       "signature catalog error: nvml.yaml"),
                      (RulesError("rules.yaml: 1 validation error for Rules"), "correlation rules error: rules.yaml")):
        def broken():
            raise exc

        monkeypatch.setattr(cli, "app", broken)
        with pytest.raises(SystemExit) as ended:
            cli.main()
        out = capsys.readouterr().err
        assert ended.value.code == 2 and said in out and "Traceback" not in out, out



def test_rules_that_would_match_nothing_or_crash_are_refused_with_where_and_what(tmp_path, monkeypatch):
    """rules.yaml is data a user edits (a break-it pass): a window of NaN crashed every correlate(); a negative window,
    a kind or a signature no event has, an empty cause and a rule id given twice were accepted and silently matched
    nothing (or named two rules alike); bytes that are no UTF-8 were a traceback. Each is a RulesError naming the file
    and where, in one line without pydantic's links; a signature file that is no UTF-8 is a CatalogError."""
    import re

    import pytest

    from correlate import rules as R
    from ingest.catalog import CatalogError, load_catalog

    shipped = R.RULES_FILE.read_text(encoding="utf-8")
    cases = [("{relation: same_host, window_s: 120}", "{relation: same_host, window_s: .nan}", "finite number"),
             ("{relation: same_host, window_s: 120}", "{relation: same_host, window_s: -120}",
              "must be at least 0, not -120"),
             ("cause: [{kind: [xid, gsp_error]}]", "cause: [{kind: [xidd]}]", "no event kind 'xidd'"),
             ("cause: [{kind: [xid, gsp_error]}]", "cause: [{signature: [no.such.sig]}]",
              "names signature 'no.such.sig', which the catalog does not have"),
             ("cause: [{kind: [xid, gsp_error]}]", "cause: []", "at least 1 item"),
             ("  - id: xid.caused_by_previous", "  - id: pcie.fatal_aer_explains_gpu_fall", "given twice")]
    for old, new, said in cases:
        assert old in shipped, old
        path = tmp_path / "rules.yaml"
        path.write_text(shipped.replace(old, new, 1), encoding="utf-8")
        monkeypatch.setattr(R, "RULES_FILE", path)
        R.default_rules.cache_clear()
        with pytest.raises(R.RulesError, match=re.escape(said)) as e:
            R.default_rules()
        assert str(e.value).startswith(str(path)) and "\n" not in str(e.value) and "pydantic.dev" not in str(e.value)
    # a second break-it pass: a link's kind, an Xid role or link-down cause no event has, an empty list or predicate,
    # a link naming an unknown signature, a pattern no code implements (a KeyError at every correlate())
    import yaml

    doc = yaml.safe_load(shipped)
    for change, said in (
            (lambda d: d["links"].append({"relation": "same_host", "kinds": ["xidd"], "window_s": 60}),
             "no event kind 'xidd'"),
            (lambda d: d["explains"][1]["effect"].append({"xid_role": ["bogus"]}), "no Xid role 'bogus'"),
            (lambda d: d["explains"][1]["effect"].append({"link_down_cause": ["bogus"]}), "no link-down cause"),
            (lambda d: d["explains"][1].__setitem__("cause", [{}]), "a predicate with no condition"),
            (lambda d: d["explains"][1].__setitem__("cause", [{"kind": []}]), "an empty list matches nothing"),
            (lambda d: d["links"].append({"relation": "same_host", "window_s": 60, "cause": [{"signature": ["no.such"]}],
                                          "effect": [{"kind": ["xid"]}]}), "names signature 'no.such'"),
            (lambda d: d["patterns"].append({"id": "benign.nope", "category": "x", "source": "s"}),
             "'benign.nope' is no pattern")):
        d = yaml.safe_load(shipped)
        change(d)
        path.write_text(yaml.safe_dump(d), encoding="utf-8")
        R.default_rules.cache_clear()
        with pytest.raises(R.RulesError, match=re.escape(said)):
            R.default_rules()
    d = dict(doc, explains=[dict(doc["explains"][1], window_s=0)] + doc["explains"][2:])  # odd but valid: kept
    path.write_text(yaml.safe_dump(d), encoding="utf-8")
    R.default_rules.cache_clear()
    assert R.default_rules().explains[0].window_s == 0
    path.write_bytes(shipped.encode() + b"\xff")
    R.default_rules.cache_clear()
    with pytest.raises(R.RulesError, match="utf-8"):
        R.default_rules()
    monkeypatch.undo()
    R.default_rules.cache_clear()
    sigs = tmp_path / "sigs"
    sigs.mkdir()
    (sigs / "x.yaml").write_bytes(b"family: x\n\xff\n")
    with pytest.raises(CatalogError, match="x.yaml: .*utf-8"):
        load_catalog(sigs)


def test_a_record_whose_host_headers_name_two_hosts_is_refused_whole(pipeline):
    """A keyless record with host headers node205 and node206 was stored as node206, silently (a break-it pass): which
    machine wrote it is not known, so the value is a ``bad_host`` reject (dead-lettered whole, its headers kept); the
    same host twice is one host."""
    from ingest.decode import decode_message

    line = b"[Mon Nov 30 03:12:05 2026] " + xid("3a")
    two = decode_message(line, topic="fleet.dmesg", partition=0, offset=4, key=None, timestamp_ms=T_MS,
                         headers=[("host", b"node205"), ("host", b"node206")])
    assert not two.segments and [(r.error_code, r.data) for r in two.rejects] == [("bad_host", line)]
    assert "host headers name 2 hosts (node205, node206)" in two.rejects[0].reason
    one = decode_message(line, topic="fleet.dmesg", partition=0, offset=5, key=None, timestamp_ms=T_MS,
                         headers=[("host", b"node205"), ("host", b" node205 ")])
    assert [s.host for s in one.segments] == ["node205"] and not one.rejects
    # one host however spelled (schemas.hostname): NODE07 and node07.cluster.local are node07 (a second break-it pass)
    spelled = decode_message(line, topic="fleet.dmesg", partition=0, offset=6, key=None, timestamp_ms=T_MS,
                             headers=[("host", b"node07"), ("host", b"NODE07"), ("host", b"node07.cluster.local")])
    assert len(spelled.segments) == 1 and not spelled.rejects
