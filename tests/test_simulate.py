"""The accuracy benchmark's simulator and scorer (benchmarks/simulate.py, benchmarks/accuracy.py).

Fast: a few scenarios per kind. The simulated lines must be lines firstfault's own catalog recognises
as the intended signatures (checked with the real ingest pipeline, both as files and as Kafka values),
the stamps must carry the host's clock, and the scorer must give a perfect answer 100 %. No accuracy
thresholds here: the benchmark measures the correlator, it does not gate it.
"""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import pytest

from benchmarks.accuracy import SECTION, chunks, initiator_ok, score, summarize, update_readme
from benchmarks.simulate import (BENIGN_KINDS, FAULT_KINDS, KERNEL_STYLES, KINDS, MAX_SKEW, Scenario, generate,
                                 scenario)
from ingest.decode import Decoded, decode_message
from ingest.files import decode_paths

S = 1_000_000
PER_KIND = 2


@pytest.fixture(scope="module")
def fleet():
    return generate(PER_KIND * len(KINDS), seed=7)


def _files_batch(s: Scenario, root: Path, pipeline):
    d = root / f"s{s.sid:03d}"
    d.mkdir()
    for f in s.files:
        p = d / f.name
        p.write_bytes(f.data)
        os.utime(p, ns=(f.mtime * 1000, f.mtime * 1000))
    decoded = decode_paths([d])
    assert not decoded.rejects
    return pipeline.run(decoded)


def _kafka_batch(s: Scenario, pipeline):
    d = Decoded()
    for i, m in enumerate(s.messages):
        x = decode_message(m.value, topic=m.topic, partition=0, offset=i, key=m.key.encode(),
                           timestamp_ms=m.timestamp_ms)
        assert not x.rejects, x.rejects
        d.segments.extend(x.segments)
    return pipeline.run(d)


def _events(batch) -> list[dict]:
    return batch.events.to_pylist()


def _sigs(evs: list[dict]) -> Counter:
    return Counter(e["signature"] for e in evs)


def _xids(evs: list[dict], code: int) -> list[dict]:
    return [e for e in evs if e["kind"] == "xid" and e["xid"] == code]


def check_signatures(s: Scenario, evs: list[dict], topo: list[dict]) -> None:
    """The injected evidence of each kind is recognised as the signature it imitates (catalog ids)."""
    t, sig = s.truth, _sigs(evs)
    k = s.kind
    if k == "gpu_off_bus":
        if s.variant == "probe":
            assert [e["device"] for e in evs if e["signature"] == "gpu.off_bus.probe"] == [t.device]
            assert sig["gpu.probe_failed"] == 1
        else:
            assert {e["device"] for e in _xids(evs, 79)} == {t.device}
            assert any(e["signature"] == "gpu.off_bus" and e["device"] == t.device for e in evs)
            if s.variant in ("h100", "a100"):
                assert {e["device"] for e in evs if e["kind"] == "sxid" and e["sxid"] == 20034} == \
                       {r.device for r in t.downstream if r.rank is None}
    elif k == "pcie_surprise_down":
        assert any(e["signature"] == "pcie.aer.surprise_down" and e["device"] == t.device for e in evs)
        assert [e["severity"] for e in evs if e["signature"] == "pcie.aer.received"] == ["critical"]
        assert {e["device"] for e in _xids(evs, 79)} == {t.downstream[0].device}
    elif k == "ecc":
        code = int(s.variant[3:])
        assert {e["device"] for e in _xids(evs, code)} == {t.device}
    elif k == "link_fault":
        ends = {(e["device"], e["link"]) for e in _xids(evs, 74)}
        assert {d for d, _ in ends} == {t.device, t.peer} and (t.device, t.link) in ends
        assert any(r["fact"] == "nvlink_remote" for r in topo)
    elif k == "nvswitch_fault":
        victims = {e["device"] for e in _xids(evs, 74)}
        assert victims and victims <= {r.device for r in t.downstream if r.host == t.host}
        assert any(r["fact"] == "nvlink_remote" and r["peer_device"] == t.device for r in topo)
        if s.variant.endswith("sxid"):
            assert any(e["kind"] == "sxid" and e["device"] == t.device for e in evs)
    elif k == "nvl72_link_down":
        x149 = _xids(evs, 149)
        assert [(e["device"], e["link"], e["fatal"]) for e in x149] == [(t.device, t.link, True)]
        assert {(e["host"], e["device"]) for e in _xids(evs, 145)} == {(r.host, r.device) for r in t.downstream}
    elif k == "nccl_hang":
        ranks = {e["rank"] for e in evs if e["signature"] == "torch.watchdog_timeout"}
        inits = {e["rank"] for e in evs if e["kind"] == "nccl_init" and e["rank"] is not None}  # not Bootstrap lines
        assert t.rank not in ranks and ranks | {t.rank} == inits
        assert len({e["seq"] for e in evs if e["signature"] == "torch.watchdog_timeout"}) == 1
    elif k == "fabric_manager":
        assert any(e["signature"].startswith("nccl.nvls.") and e["host"] == t.host for e in evs)
        if s.variant == "not_running":
            assert sig["fm.service_failed"] >= 1
    elif k == "pcie_p2p":
        paths = {r["path"] for r in topo if r["fact"] == "topo_path"}
        assert paths and not any(p.startswith("NV") for p in paths)
        if s.variant == "pytorch_timeouts":
            assert sig["torch.watchdog_timeout"] == len(t.downstream)
    elif k == "ib_port":
        port = [e for e in evs if e["signature"] == "nccl.net_ib.async_event"]
        assert port and {e["device"] for e in port} == {t.device}
        assert "error" in {e["severity"] for e in port}
    elif k == "nccl_software":
        assert _xids(evs, 145) and _xids(evs, 137) and sig["torch.watchdog_timeout"] == len(t.downstream)
    elif k in ("benign_dcgm_pcie", "benign_dcgm_sku"):
        assert sig["dcgm.nvlink_down"] >= 4
    elif k == "benign_p2p_disabled":
        assert sig["nccl.transport.shm"] >= 2
        assert sig["nccl.p2p_disabled"] or sig["nccl.env.p2p"]
    elif k == "benign_app_xid":
        assert (_xids(evs, 13) or _xids(evs, 31)) and _xids(evs, 43)
    elif k == "benign_corrected_aer":
        aer = [e for e in evs if e["kind"] == "pcie_aer"]
        assert aer and all(e["severity"] == "info" for e in aer)
    elif k == "benign_fm_bridge":
        assert sig["fm.nothing_to_do"] == 1


def test_every_kind_generated(fleet):
    assert Counter(s.kind for s in fleet.scenarios) == {k: PER_KIND for k in KINDS}


@pytest.mark.parametrize("kind", list(KINDS))
def test_files_match_intended_signatures(kind, fleet, pipeline, tmp_path):
    for s in (x for x in fleet.scenarios if x.kind == kind):
        batch = _files_batch(s, tmp_path, pipeline)
        check_signatures(s, _events(batch), batch.topology.to_pylist())


@pytest.mark.parametrize("kind", list(KINDS))
def test_kafka_values_match_intended_signatures(kind, fleet, pipeline):
    for s in (x for x in fleet.scenarios if x.kind == kind and x.kafka_expressible):
        batch = _kafka_batch(s, pipeline)
        check_signatures(s, _events(batch), batch.topology.to_pylist())


def test_stamps_carry_the_host_clock(fleet, pipeline, tmp_path):
    """The initiator's kernel line is read at true time + the host's skew (within the stamp's resolution)."""
    checked = Counter()
    for s in fleet.scenarios:
        if s.kind not in ("ecc", "nvl72_link_down") or not s.truth.host:
            continue
        h = s.hosts[s.truth.host]
        for path, batch in (("kafka", _kafka_batch(s, pipeline)), ("files", _files_batch(s, tmp_path, pipeline))):
            if path == "files" and h.style == "mono":
                continue  # dated from the file's mtime by firstfault: a property of firstfault, not of the stamps
            ev = min((e for e in _events(batch) if e["device"] == s.truth.device and e["kind"] == "xid"
                      and e["host"] == h.name), key=lambda e: e["ts"])
            ts = int(ev["ts"].timestamp() * S)
            assert abs(ts - (s.t0 + h.skew)) <= S + 1000, (s.sid, h.style, path, ts - s.t0, h.skew)
            checked[path] += 1
    assert checked["kafka"] and checked["files"]


def test_fleet_is_messy_as_asked(fleet):
    f = fleet
    hosts = [h for s in f.scenarios for h in s.hosts.values()]
    assert all(abs(h.skew) <= MAX_SKEW for h in hosts)
    assert {h.style for h in hosts} == set(KERNEL_STYLES)
    assert {h.envelope for h in hosts} == {"text", "vector", "filebeat"}
    msgs = [m for s in f.scenarios for m in s.messages]
    assert any(m.duplicate for m in msgs)
    # within one host and topic, some later batch reaches the broker before an earlier one
    reordered = 0
    for s in f.scenarios:
        seen: dict[tuple, int] = {}
        for m in sorted(s.messages, key=lambda m: m.deliver):
            k = (m.key, m.topic)
            if k in seen and m.timestamp_ms < seen[k]:
                reordered += 1
            seen[k] = max(seen.get(k, 0), m.timestamp_ms)
    assert reordered
    # scenarios never share hosts, and their slots never overlap
    assert len({h.name for h in hosts}) == len(hosts)


def test_deterministic():
    a, b = scenario(5, "ecc", 3), scenario(5, "ecc", 3)
    assert [(f.name, f.data, f.mtime) for f in a.files] == [(f.name, f.data, f.mtime) for f in b.files]
    assert [(m.value, m.deliver) for m in a.messages] == [(m.value, m.deliver) for m in b.messages]
    assert [f.data for f in scenario(5, "ecc", 4).files] != [f.data for f in a.files]


# --- the scorer ---------------------------------------------------------------------------------------


def perfect(s: Scenario) -> list[dict]:
    """What a perfect correlator would answer, in firstfault's incident shape."""
    t = s.truth
    if t.benign:
        return [{"severity": "info", "category": "application", "initiator": {"host": next(iter(s.hosts))},
                 "downstream": [], "context": []}]
    init = {"host": t.host, "device_type": t.device_type, "device": t.device, "peer": t.peer, "link": t.link,
            "rank": t.rank, "links": [t.link] if t.link is not None else None}
    down = [{"host": r.host, "device": r.device, "rank": r.rank, "gpu_index": r.gpu_index} for r in t.downstream]
    return [{"severity": "error", "category": t.category, "initiator": init, "downstream": down, "context": []}]


def test_perfect_answer_scores_full_marks(fleet):
    res = [score(s, perfect(s)) for s in fleet.scenarios]
    summary = summarize(res)
    for kind in FAULT_KINDS:
        k = summary[kind]
        assert k["initiator_accuracy"] == 1.0, kind
        assert k["downstream_precision"] in (1.0, None) and k["downstream_recall"] in (1.0, None), (kind, k)
        assert k["extra_serious"] == 0.0
    for kind in BENIGN_KINDS:
        assert summary[kind]["serious_on_benign"] == 0.0
    assert summary["overall"]["fault"]["initiator_accuracy"] == 1.0


def test_wrong_answers_score_zero(fleet):
    for s in fleet.scenarios:
        inc = perfect(s)[0]
        if s.truth.benign:
            inc["severity"] = "warning"
            assert score(s, [inc]).serious == 1
            continue
        assert initiator_ok(s.truth, inc)
        wrong = dict(inc, initiator=dict(inc["initiator"], host="elsewhere"))
        assert not score(s, [wrong]).correct
        quiet = dict(inc, severity="info")
        assert not score(s, [quiet]).correct
        assert score(s, []).ds[2] == 0


def test_readme_section_replaced_in_place(tmp_path):
    p = tmp_path / "README.md"
    p.write_text("# Benchmarks\n\n## Ingest throughput\n\nfast\n")
    update_readme(p, "first")
    text = p.read_text()
    assert text.startswith("# Benchmarks\n\n## Ingest throughput\n\nfast\n") and text.count(SECTION) == 1
    p.write_text(text.rstrip("\n") + "\n\nnotes written by hand\n\n## Later section\n\nkept\n")
    update_readme(p, "second")
    text = p.read_text()
    assert text.count(SECTION) == 1 and "second" in text and "first" not in text
    assert "notes written by hand" in text and text.endswith("## Later section\n\nkept\n")


def test_chunks_cut_only_at_events():
    class M:
        def __init__(self, d):
            self.deliver = d
    msgs = [M(t * S) for t in (0, 1, 50, 70, 200, 201)]
    assert [len(c) for c in chunks(msgs, 60 * S)] == [3, 1, 2]
    assert [len(c) for c in chunks(msgs, 60 * S, marks={0, 4})] == [4, 2]  # unmarked messages ride along
    assert [len(c) for c in chunks(msgs, 0)] == [6]
