"""The pager (api/pager.py): payload builders, the paging rules, the durable outbox, and delivery to real
receivers on loopback — a local HTTP receiver that behaves like PagerDuty's Events v2 endpoint, and a real
Prometheus Alertmanager (Debian's prometheus-alertmanager) started and stopped by the test."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import socket
import subprocess
import threading
import time
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest
from prometheus_client import REGISTRY

from api.pager import Pager, alert_labels, alertmanager_alert, pagerduty_event
from schemas.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
AM_BIN = "/usr/bin/prometheus-alertmanager"


def iso(t: float) -> str:
    return datetime.fromtimestamp(t, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def incident(iid="inc-a", version=1, status="open", severity="critical", category="link_fault",
             start=None, end=None, init_events=("e1",), downstream=(), next_action="Reseat the NVLink bridge.",
             explanation="Xid 74 on GPU 0000:9a:00.0 is the earliest fault nothing else explains."):
    now = time.time()
    return {
        "id": iid, "version": version, "status": status, "start": iso(start or now - 60), "end": iso(end or now - 30),
        "severity": severity, "category": category,
        "initiator": {"host": "node07", "device_type": "gpu", "device": "0000:9a:00.0", "link": 3, "rank": None,
                      "kind": "xid", "xid": 74, "events": list(init_events)},
        "downstream": [{"host": h, "device_type": "gpu", "device": d, "link": None, "rank": r, "kind": k, "xid": None,
                        "relation": rel, "events": list(ev)} for h, d, r, k, rel, ev in downstream],
        "context": [], "confidence": 0.9, "explanation": explanation, "next_action": next_action,
        "verify": ["nvidia-smi nvlink --status -i 0000:9a:00.0"], "missing": [],
        "recurrence": {"previous": [], "first_seen": iso(now - 60)}, "pattern": "roots", "evidence": [],
    }


DOWN = [("node07", "0000:1b:00.0", 5, "nccl_error", "same_host", ["d1", "d2"]),
        ("node08", None, 9, "nccl_timeout", "same_comm", ["d3"])]


class Receiver:
    """A real HTTP server on 127.0.0.1 that records every POST. For PagerDuty's shape it also keeps PagerDuty's
    dedup semantics: a trigger for a key that is not open is a new page, for an open key an update; a resolve
    closes the key. ``fail``: answer the next N requests with ``fail_status``; ``delay_s``: hold answers."""

    def __init__(self, port: int = 0) -> None:
        self.requests: list[tuple[float, str, object]] = []
        self.fail, self.fail_status, self.delay_s = 0, 500, 0.0
        self.pages, self.open_keys = 0, set()
        self.lock = threading.Lock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                with owner.lock:
                    owner.requests.append((time.monotonic(), self.path, body))
                    status = 202
                    if owner.fail:
                        owner.fail -= 1
                        status = owner.fail_status
                    elif isinstance(body, dict) and "dedup_key" in body:
                        owner._pagerduty(body)
                time.sleep(owner.delay_s)
                out = json.dumps({"status": "success" if status == 202 else "error"}).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

            def log_message(self, *a):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    def _pagerduty(self, e: dict) -> None:
        key = e["dedup_key"]
        if e["event_action"] == "trigger" and key not in self.open_keys:
            self.pages += 1
            self.open_keys.add(key)
        elif e["event_action"] == "resolve":
            self.open_keys.discard(key)

    def bodies(self, path: str | None = None) -> list:
        with self.lock:
            return [b for _, p, b in self.requests if path is None or p == path]

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def pd():
    r = Receiver()
    yield r
    r.stop()


def pd_settings(tmp_path: Path, url: str, **kw) -> Settings:
    return Settings(state_dir=tmp_path, pagerduty_url=url + "/v2/enqueue", pagerduty_routing_key="rk-test",
                    api_host="127.0.0.1", api_port=8080, **kw)


def metric(name: str, receiver: str) -> float:
    return REGISTRY.get_sample_value(name, {"receiver": receiver}) or 0.0


# ---- pure builders ---------------------------------------------------------------------------------------


def test_pages_name_every_link_of_the_initiator_as_the_table_does():
    """The demo's node011 incident is V100 NVLinks 3 and 5 of GPU 3 inactive (tests/corpus 011): the table and the
    incident page said "gpu index 3 links 3,5", its Alertmanager page "NVLink 3 of GPU index 3 on node011" (a
    fresh user's trial). A page names every link of ``links``; a NIC's or NVSwitch's several are ports."""
    from api.pager import describe_initiator
    from api.render import describe_initiator as table_initiator

    inc = incident(category="link_fault", severity="error")
    inc["initiator"] = {"host": "node011", "device_type": "gpu", "device": None, "gpu_index": 3, "link": 3,
                        "links": [3, 5], "kind": "nvlink_down", "fault": "nvlink_down", "events": ["e1", "e2"]}
    assert describe_initiator(inc) == "NVLinks 3, 5 of GPU index 3 on node011 (nvlink_down)"
    assert table_initiator(inc["initiator"]) == "node011 gpu index 3 links 3,5"
    a = alertmanager_alert(inc, "https://firstfault.example", now=1_800_000_000.0, hold_s=240)
    assert a["annotations"]["initiator"] == "NVLinks 3, 5 of GPU index 3 on node011 (nvlink_down)"
    assert a["annotations"]["summary"].startswith("[error] link_fault: NVLinks 3, 5 of GPU index 3 on node011")
    nic = {**inc, "initiator": {"host": "node015", "device_type": "nic", "device": "mlx5_32", "link": 1,
                                "links": [1, 2], "kind": "ib_port", "events": ["e1"]}}
    assert describe_initiator(nic) == "ports 1, 2 of NIC mlx5_32 on node015 (ib_port)"
    one = {**inc, "initiator": {**nic["initiator"], "links": [1]}}  # one link: as before
    assert describe_initiator(one) == "port 1 of NIC mlx5_32 on node015 (ib_port)"
    # a link both ends reported (link.both_ends): its link numbers and both ends, as the table; the page said
    # "NVLink 0000:01:00.0 on ws72 (nvlink_down)" (a fresh user's trial)
    link = {**inc, "initiator": {"host": "ws72", "device_type": "link", "device": "0000:01:00.0",
                                 "peer": "0000:41:00.0", "link": 1, "links": [1], "kind": "nvlink_down",
                                 "fault": "nvlink_down", "events": ["e1", "e2"]}}
    assert describe_initiator(link) == "NVLink 1 of GPU 0000:01:00.0 to GPU 0000:41:00.0 on ws72 (nvlink_down)"
    assert table_initiator(link["initiator"]) == "ws72 link 0000:01:00.0 link 1 <-> 0000:41:00.0"
    bridge = {**link, "initiator": {**link["initiator"], "links": [0, 1, 2, 3], "link": 0}}
    assert describe_initiator(bridge) == \
        "NVLinks 0, 1, 2, 3 of GPU 0000:01:00.0 to GPU 0000:41:00.0 on ws72 (nvlink_down)"


def test_payloads_name_initiator_category_next_action_and_link():
    inc = incident(downstream=DOWN)
    base = "https://firstfault.example"
    a = alertmanager_alert(inc, base, now=1_800_000_000.0, hold_s=240)
    assert a["labels"] == {"alertname": "FirstFaultIncident", "incident_id": "inc-a", "severity": "critical",
                           "category": "link_fault", "host": "node07"}
    ann = a["annotations"]
    assert "NVLink 3 of GPU 0000:9a:00.0 on node07 (Xid 74)" in ann["summary"]
    assert "link_fault" in ann["summary"] and "Reseat the NVLink bridge." in ann["summary"]
    assert ann["next_action"] == "Reseat the NVLink bridge."
    assert ann["downstream"].startswith("2 downstream reporters: node07 gpu 0000:1b:00.0 rank 5 nccl_error")
    assert a["generatorURL"] == ann["incident_url"] == "https://firstfault.example/incidents/inc-a"
    assert all(isinstance(v, str) for v in ann.values())
    assert a["endsAt"] == iso(1_800_000_240.0)  # firing: held for hold_s unless re-sent
    assert alertmanager_alert(inc | {"status": "resolved"}, base, now=1_800_000_000.0)["endsAt"] == iso(1.8e9)

    e = pagerduty_event(inc, "rk", base)
    assert e["event_action"] == "trigger" and e["dedup_key"] == "inc-a" and e["routing_key"] == "rk"
    p = e["payload"]
    assert p["severity"] == "critical" and p["source"] == "node07" and p["group"] == "link_fault"
    assert p["summary"] == ann["summary"] and len(p["summary"]) <= 1024
    assert p["custom_details"]["next_action"] == "Reseat the NVLink bridge."
    assert "node08" in p["custom_details"]["downstream"]
    assert e["links"] == [{"href": "https://firstfault.example/incidents/inc-a", "text": "firstfault incident inc-a"}]
    assert pagerduty_event(inc | {"status": "resolved"}, "rk", base) == {
        "routing_key": "rk", "dedup_key": "inc-a", "event_action": "resolve"}
    long = pagerduty_event(incident(next_action="x" * 5000), "rk", base)["payload"]["summary"]
    assert len(long) == 1024
    nobody = incident()
    nobody["initiator"] = {"host": "node08", "device_type": None, "device": None, "kind": None, "events": ["e1"]}
    p = pagerduty_event(nobody, "rk", base)["payload"]
    assert "component" not in p and "link_fault: no single culprit (node08)" in p["summary"]  # absent, not null
    # a fault of the host itself, as the table names it (it read "no single culprit": a fresh user's trial)
    fm = incident(category="fabric_manager")
    fm["initiator"] = {"host": "node012", "device_type": None, "device": None, "kind": "fabric_manager",
                       "events": ["e1"]}
    assert "fabric_manager: node012 (fabric_manager)" in pagerduty_event(fm, "rk", base)["payload"]["summary"]


def test_a_page_keeps_the_reporters_it_names_and_counts_the_rest():
    """A job of 5,000 reporting ranks made each stored page view ~1 MB (one per version and receiver; a break-it
    pass): the view keeps the reporters a page names and ``downstream_total``, and the payloads built from it say
    what they said from the incident."""
    from api.pager import DOWNSTREAM_NAMED, describe_downstream, page_view

    many = [(f"node{i:04d}", None, i, "nccl_timeout", "same_comm", [f"d{i}"]) for i in range(5000)]
    inc = incident(downstream=many)
    view = page_view(inc)
    assert len(view["downstream"]) == DOWNSTREAM_NAMED == 10 and view["downstream_total"] == 5000
    assert view["downstream"][0] == {k: v for k, v in inc["downstream"][0].items() if k != "events"}
    assert len(json.dumps(view)) < 5000
    text = describe_downstream(view)
    assert text == describe_downstream(inc) and text.startswith("5000 downstream reporters: node0000 rank 0 ")
    assert text.endswith("; and 4990 more")
    assert page_view(view) == view  # a stored view adopted again keeps its count
    now = time.time()
    assert alertmanager_alert(view, "http://127.0.0.1:8080", now=now) == alertmanager_alert(
        inc, "http://127.0.0.1:8080", now=now)
    two = page_view(incident(downstream=DOWN))
    assert two["downstream_total"] == 2 and describe_downstream(two).startswith("2 downstream reporters: ")


def test_a_page_of_no_single_culprit_names_its_suspects_as_the_table_does(pipeline):
    """An incident with no single culprit lists its candidates among ``downstream``; the CLI's table and the
    incident page call them suspects, the page called them "4 downstream reporters", each "gpu 0000:dc:00.0 xid Xid
    45" (a fresh user's trial, corpus case 001 through the demo's Alertmanager). The page names them suspects, first,
    then the reporters that are no candidate; the stored view keeps them first even past ``DOWNSTREAM_NAMED``."""
    from api.diagnose import diagnose_paths
    from api.pager import describe_downstream, page_view

    case = ROOT / "tests/corpus/001-xid45-after-xid149-145-nvlink-inactive/input"
    [inc] = diagnose_paths([case], Settings(), pipeline=pipeline)[2]
    assert len(inc["initiator"]["candidates"]) == len(inc["downstream"]) == 4
    text = alertmanager_alert(inc | {"status": "open"}, "http://h:1")["annotations"]["downstream"]
    assert text.startswith("4 suspects: node01 gpu 0000:") and "Xid 45 (same_host)" in text
    assert "downstream reporter" not in text and "xid Xid" not in text
    # in the candidates' order, the likeliest first fault first (as the explanation and the CLI): the page had them
    # in ``downstream``'s order, by bus id (a fresh user's trial)
    assert re.findall(r"gpu (\S+) Xid", text) == [c.split()[1] for c in inc["initiator"]["candidates"]]
    assert inc["initiator"]["candidates"][0].startswith("gpu 0000:dc:00.0")

    many = [(f"node{i:02d}", None, i, "nccl_timeout", "same_comm", [f"d{i}"]) for i in range(12)]
    mixed = incident(downstream=many + [("node07", "0000:1b:00.0", None, "xid", "same_host", ["x1"])])
    mixed["downstream"][-1]["xid"] = 13
    mixed["initiator"] = {"host": "node07", "device_type": None, "device": None, "kind": None, "events": [],
                          "candidates": ["gpu 0000:1b:00.0 on node07"]}
    view = page_view(mixed)
    assert view["downstream"][0]["device"] == "0000:1b:00.0" and view["downstream_total"] == 13
    assert describe_downstream(view) == describe_downstream(mixed) == (
        "1 suspect: node07 gpu 0000:1b:00.0 Xid 13 (same_host); 12 downstream reporters: "
        + "; ".join(f"node{i:02d} rank {i} nccl_timeout (same_comm)" for i in range(9)) + "; and 3 more")
    assert page_view(view) == view


def test_alert_start_never_after_send_time_and_labels_can_be_frozen():
    now = 1_800_000_000.0
    ahead = incident(start=now + 600, end=now + 700, severity="error", category="ecc")
    a = alertmanager_alert(ahead | {"status": "resolved"}, "http://x", now=now, labels=alert_labels(incident()))
    assert a["startsAt"] <= a["endsAt"] == iso(now)  # else Alertmanager rejects the alert
    assert a["labels"]["severity"] == "critical" and a["annotations"]["severity"] == "error"


def test_payloads_of_a_real_incident(pipeline):
    from api.diagnose import diagnose_paths

    case = ROOT / "tests/corpus/015-ib-port-flap-kills-vllm-tp-workers/input"
    [inc] = diagnose_paths([case], Settings(), pipeline=pipeline)[2]
    inc = inc | {"status": "open"}  # old logs: it is resolved already
    a = alertmanager_alert(inc, "http://h:1")
    e = pagerduty_event(inc, "rk", "http://h:1")
    json.dumps([a, e])
    assert "mlx5_32" in a["annotations"]["summary"] and "node01" in a["annotations"]["summary"]
    assert a["annotations"]["downstream"].startswith("1 downstream reporter: node01")
    assert e["payload"]["component"] == "nic mlx5_32" and e["payload"]["group"] == "ib_port"


# ---- paging rules, through a PagerDuty-shaped receiver ------------------------------------------------------


def test_one_page_per_incident_above_threshold_and_replays_add_nothing(tmp_path, pd):
    pager = Pager(pd_settings(tmp_path, pd.url, page_min_severity="error"))
    below = incident("inc-low", severity="warning")
    page = incident("inc-a", downstream=DOWN, init_events=["e1"])
    assert pager.enqueue([below, page]) == 1
    assert pager.enqueue([below, page]) == 0  # the same versions again (a replayed batch)
    assert asyncio.run(pager.flush(5)) == 0
    [e] = pd.bodies()
    assert e["dedup_key"] == "inc-a" and pd.pages == 1  # downstream reporters are named, never paged
    assert "node07 gpu 0000:1b:00.0" in e["payload"]["custom_details"]["downstream"]
    assert pager.enqueue([incident("inc-low", version=2, severity="warning")]) == 0
    pager.close()


def test_updates_resolve_and_reopen_follow_the_incident(tmp_path, pd):
    pager = Pager(pd_settings(tmp_path, pd.url))
    pager.enqueue([incident(version=1)])
    pager.enqueue([incident(version=2, severity="error", next_action="Replace the GPU.")])  # below is fine now
    pager.enqueue([incident(version=3, status="resolved")])
    assert pager.enqueue([incident(version=3, status="resolved")]) == 0
    assert asyncio.run(pager.flush(5)) == 0
    b = pd.bodies()
    # version 2's trigger, enqueued before version 1's was sent, stands for both (Pager._put)
    assert [(x["event_action"], x["dedup_key"]) for x in b] == [("trigger", "inc-a"), ("resolve", "inc-a")]
    assert b[0]["payload"]["custom_details"]["next_action"] == "Replace the GPU."
    assert pd.pages == 1 and not pd.open_keys
    pager.enqueue([incident(version=4)])  # new evidence after the resolve: the page opens again
    asyncio.run(pager.flush(5))
    assert pd.bodies()[-1]["event_action"] == "trigger" and pd.pages == 2
    pager.close()


def test_incident_first_seen_resolved_is_still_paged(tmp_path, pd):
    pager = Pager(pd_settings(tmp_path, pd.url))
    assert pager.enqueue([incident(status="resolved")]) == 2
    asyncio.run(pager.flush(5))
    assert [x["event_action"] for x in pd.bodies()] == ["trigger", "resolve"]
    pager.close()


def test_downstream_reporter_is_superseded_or_inhibited_by_the_incident_that_explains_it(tmp_path, pd):
    pager = Pager(pd_settings(tmp_path, pd.url))
    # an NCCL error paged on its own before its cause arrived (late) ...
    pager.enqueue([incident("inc-nccl", init_events=["n1"], category="nccl_error")])
    # ... then the incident rooted at the cause names it as downstream: the reporter's page resolves
    pager.enqueue([incident("inc-root", init_events=["x1"], downstream=[("node07", None, 1, "nccl_error",
                                                                            "same_host", ["n1", "n2"])])])
    # a reporter of an open page never gets a page of its own
    assert pager.enqueue([incident("inc-n2", init_events=["n2"])]) == 0
    asyncio.run(pager.flush(5))
    b = [(x["event_action"], x["dedup_key"]) for x in pd.bodies()]
    assert b == [("trigger", "inc-nccl"), ("trigger", "inc-root"), ("resolve", "inc-nccl")]
    assert pager.health()["inhibited"] == 1 and pager.health()["open_pages"] == 1
    pager.close()


def test_superseded_version_closes_the_page_and_never_opens_one(tmp_path, pd):
    pager = Pager(pd_settings(tmp_path, pd.url))
    pager.enqueue([incident("inc-old", init_events=["n1"])])
    gone = incident("inc-old", version=2, init_events=["n1"]) | {"status": "superseded", "superseded_by": "inc-new"}
    assert pager.enqueue([gone]) == 1
    assert pager.enqueue([incident("inc-never") | {"status": "superseded", "superseded_by": "inc-new"}]) == 0
    asyncio.run(pager.flush(5))
    assert [(x["event_action"], x["dedup_key"]) for x in pd.bodies()] == [("trigger", "inc-old"),
                                                                           ("resolve", "inc-old")]
    a = alertmanager_alert(gone, "http://x", now=1.8e9)
    assert a["endsAt"] == iso(1.8e9) and a["annotations"]["superseded_by"] == "inc-new"
    pager.close()


def test_the_old_ids_superseded_version_leaves_the_new_incidents_page_open(tmp_path, pd):
    """A watchdog timeout whose implied start came before the Xid re-rooted the incident (a new id): the new
    incident's page opened and resolved the old one, then the old id's last version (status superseded, the same
    initiator events) resolved the new page — an open critical incident with no page in Alertmanager (a break-it
    pass, 4 times of 4). A closed version supersedes nothing."""
    pager = Pager(pd_settings(tmp_path, pd.url))
    pager.enqueue([incident("inc-old", init_events=["x1"])])
    # the same Xid is the new incident's initiator; its id is the timeouts' earliest implied start's
    pager.enqueue([incident("inc-new", init_events=["x1"], downstream=[("node08", None, 9, "nccl_timeout",
                                                                            "same_comm", ["t1", "t2"])])])
    gone = incident("inc-old", version=2, init_events=["x1"]) | {"status": "superseded", "superseded_by": "inc-new"}
    pager.enqueue([gone])
    asyncio.run(pager.flush(5))
    assert [(x["event_action"], x["dedup_key"]) for x in pd.bodies()] == [
        ("trigger", "inc-old"), ("trigger", "inc-new"), ("resolve", "inc-old")]
    assert pager.health()["open_pages"] == 1
    pager.close()


def test_an_incident_inhibited_by_a_page_that_closes_is_paged_then(tmp_path, pd):
    """A re-rooted incident whose initiator had been the old incident's downstream reporter was inhibited by the old
    page, then the old id's superseded version resolved that page: an open incident with no page (a break-it pass).
    It is paged once the page that inhibited it closes, in the same call or a later one."""
    pager = Pager(pd_settings(tmp_path, pd.url))
    pager.enqueue([incident("inc-a", init_events=["x1"], downstream=[("node08", None, 9, "nccl_timeout", "same_comm",
                                                                      ["t1"])])])
    assert pager.enqueue([incident("inc-b", init_events=["t1"])]) == 0  # inhibited while inc-a's page is open
    gone = incident("inc-a", version=2, init_events=["x1"]) | {"status": "superseded", "superseded_by": "inc-b"}
    pager.enqueue([gone])
    asyncio.run(pager.flush(5))
    assert [(x["event_action"], x["dedup_key"]) for x in pd.bodies()] == [
        ("trigger", "inc-a"), ("resolve", "inc-a"), ("trigger", "inc-b")]
    assert pager.health()["open_pages"] == 1 and pager.health()["inhibited"] == 1
    pager.close()


def test_open_page_resolves_when_evidence_stops(tmp_path, pd):
    clock = [time.time()]
    pager = Pager(pd_settings(tmp_path, pd.url, resolve_after_s=900), clock=lambda: clock[0])
    pager.enqueue([incident(end=clock[0] - 10)])
    asyncio.run(pager.flush(5))
    clock[0] += 600
    asyncio.run(pager.flush(5))
    assert [x["event_action"] for x in pd.bodies()] == ["trigger"]
    clock[0] += 400  # 990 s after the last evidence: the correlator's own rule says resolved
    asyncio.run(pager.flush(5))
    assert [x["event_action"] for x in pd.bodies()] == ["trigger", "resolve"]
    pager.close()


def test_a_host_whose_clock_runs_behind_is_paged_until_its_fault_goes_quiet(tmp_path, pd):
    """A host whose clock runs 20 minutes behind the fleet's (its Kafka append times say so: the correlator's clock
    offset) sends an Xid 79. Its incident came out of the correlator ``resolved`` at once, and the pager sent the
    trigger and its resolve together (a break-it pass). It is open, and its page too, until its evidence has been
    quiet for ``resolve_after_s`` by the fleet's clock. The real streaming correlator and pager; the receiver is the
    local PagerDuty-like server."""
    from correlate.stream import StreamCorrelator
    from ingest.pipeline import to_table
    from schemas.events import EVENTS_SCHEMA

    S = 1_000_000
    now = int(time.time()) * S

    def row(eid, host, ts, dev, xid, severity):
        return {"event_id": eid, "ts": ts, "ts_basis": "line", "host": host, "source": "dmesg", "kind": "xid",
                "signature": "xid", "severity": severity, "device_type": "gpu", "device": dev, "xid": xid,
                "message": f"NVRM: Xid (PCI:{dev}): {xid}", "ts_precision_us": 1, "count": 1,
                "origin": f"kafka:fleet.dmesg/0/{eid}:0", "ingest_ts": ts + 100_000}

    rows = [row(f"{h}-{k}", h, now - 60 * S + k * S, f"0000:{k + 1:02x}:00.0", 13, "warning")
            for h in ("node01", "node02", "node03") for k in range(6)]  # the fleet's clocks: right
    behind = 1200 * S
    rows += [{**row(f"node07-{k}", "node07", now - 60 * S + k * S - behind, "0000:18:00.0", 79, "critical"),
              "ingest_ts": now - 60 * S + k * S + 100_000} for k in range(6)]
    sc = StreamCorrelator()
    sc.add(to_table(rows, EVENTS_SCHEMA), now_us=now)
    [fell] = [i for i in sc.step(now + 200 * S) if i["initiator"]["host"] == "node07"]
    assert fell["clocks"]["node07"]["offset_s"] == 1200.0
    assert fell["status"] == "open"

    clock = [now / S + 200]
    pager = Pager(pd_settings(tmp_path, pd.url, resolve_after_s=900), clock=lambda: clock[0])
    pager.enqueue([fell])
    asyncio.run(pager.flush(5))
    clock[0] += 600  # 805 s after the last Xid by the fleet's clock, 2005 s by node07's
    asyncio.run(pager.flush(5))
    assert [(x["event_action"], x["dedup_key"]) for x in pd.bodies()] == [("trigger", fell["id"])]
    clock[0] += 100  # 905 s: quiet
    asyncio.run(pager.flush(5))
    assert [x["event_action"] for x in pd.bodies()] == ["trigger", "resolve"]
    [later] = [i for i in sc.step(int(clock[0] * S)) if i["id"] == fell["id"]]
    assert later["status"] == "resolved"
    pager.close()


# ---- delivery: outages, restarts, rejects -----------------------------------------------------------------


def test_receiver_outage_retries_with_backoff_and_delivers_once(tmp_path, pd, caplog):
    sent0, failed0 = metric("firstfault_pages_sent_total", "pagerduty"), metric("firstfault_pages_failed_total",
                                                                                 "pagerduty")
    pager = Pager(pd_settings(tmp_path, pd.url), backoff_base_s=0.1, backoff_max_s=2.0)
    assert pager.health()["receivers"]["pagerduty"]["last_success"] is None
    pd.fail = 4  # HTTP 500 four times
    pager.enqueue([incident()])
    assert asyncio.run(pager.flush(5)) == 0
    # the last success is ISO 8601 UTC, as every other time /healthz and the API give (it was Unix seconds,
    # 1796496544.1: a fresh user's trial)
    from datetime import datetime, timezone
    last = pager.health()["receivers"]["pagerduty"]["last_success"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", last), last
    assert abs((datetime.now(timezone.utc) - datetime.fromisoformat(last.replace("Z", "+00:00"))).total_seconds()) < 60
    times = [t for t, _, _ in pd.requests]
    gaps = [b - a for a, b in zip(times, times[1:])]
    # the waits grow: the fourth is 0.4 – 0.8 s (equal jitter of 0.8 s), the first 0.05 – 0.1 s; each gap also holds
    # a request's time, which a loaded machine stretches (gaps[-1] > 2 * gaps[0] failed there: 0.27 against 0.19 s)
    assert len(times) == 5 and gaps[-1] - gaps[0] > 0.25, gaps
    assert pd.pages == 1
    assert metric("firstfault_pages_sent_total", "pagerduty") - sent0 == 1
    assert metric("firstfault_pages_failed_total", "pagerduty") - failed0 == 4

    # the receiver goes away entirely (connection refused), an update is enqueued meanwhile
    port = pd.port
    pd.stop()
    pager.enqueue([incident(version=2, next_action="Drain the node.")])
    assert asyncio.run(pager.flush(0.3)) == 1
    h = pager.health()
    assert not h["ok"] and h["receivers"]["pagerduty"]["pending"] == 1
    assert "ConnectError" in h["receivers"]["pagerduty"]["last_error"]
    # /healthz stays ok (a restart would not bring the receiver back) with the reason (it was empty: a fresh user)
    from api.pager import paging_trouble
    assert paging_trouble(h).startswith("paging fails (pagerduty: ConnectError") and paging_trouble(h).endswith(
        "pages wait in the outbox and are sent when it answers")
    # a run that stops now says so (a fresh-user trial: a demo with Alertmanager down ended quietly, exit 0)
    import logging

    from api.service import _tell_pending
    with caplog.at_level(logging.WARNING, logger="firstfault.service"):
        _tell_pending(pager)
    [said] = [r.getMessage() for r in caplog.records if r.name == "firstfault.service"]
    assert said.startswith("1 page of 1 incident not delivered yet (pagerduty: ") and "ConnectError" in said
    assert said.endswith(": kept in the outbox, the next run with this receiver sends it")
    back = Receiver(port)
    try:
        assert asyncio.run(pager.flush(5)) == 0
        [e] = back.bodies()
        assert e["payload"]["custom_details"]["next_action"] == "Drain the node."
        assert pager.health()["ok"] and paging_trouble(pager.health()) == ""
    finally:
        back.stop()
    pager.close()


def test_a_receiver_back_from_an_outage_gets_each_incidents_latest_state_not_every_version(tmp_path, pd):
    """The receiver is down while 5 incidents get 30 versions each; one of them is resolved and opened again. Every
    version was an outbox entry sent one by one when the receiver came back, oldest first, a new page behind them all
    (a break-it pass: 20 incidents of 60 versions, 1,200 POSTs, 11 s to a local receiver). A version's entry
    coalesces the incident's waiting one of the same action: each incident's latest trigger (and a resolve between),
    and every incident paged once."""
    pager = Pager(pd_settings(tmp_path, pd.url), backoff_base_s=0.01, backoff_max_s=0.05)
    pd.fail = 10**6  # down
    for v in range(1, 31):
        pager.enqueue([incident(f"inc-{k}", version=v, init_events=[f"e{k}"], next_action=f"step {v}")
                       for k in range(5)])
    pager.enqueue([incident("inc-0", version=31, status="resolved", init_events=["e0"])])
    pager.enqueue([incident("inc-0", version=32, init_events=["e0"], next_action="again")])
    assert pager.pending() == 6  # inc-0's resolve and trigger, the others' triggers
    assert asyncio.run(pager.flush(0.2)) == 6
    pd.fail, before = 0, len(pd.requests)
    assert asyncio.run(pager.flush(5)) == 0
    sent = [(b["dedup_key"], b["event_action"], b.get("payload", {}).get("custom_details", {}).get("next_action"))
            for _t, _p, b in pd.requests[before:]]
    assert sorted(sent) == [("inc-0", "resolve", None), ("inc-0", "trigger", "again")] + [
        (f"inc-{k}", "trigger", "step 30") for k in range(1, 5)]
    assert sent.index(("inc-0", "resolve", None)) < sent.index(("inc-0", "trigger", "again"))
    assert pd.pages == 5 and pd.open_keys == {f"inc-{k}" for k in range(5)}
    pager.close()


def test_a_long_outage_or_an_odd_retry_after_keeps_the_backoff_bounded(tmp_path, pd):
    """A break-it pass: the 1025th failure in a row (about 63 h of an outage at the capped backoff) raised
    OverflowError in ``2 ** (failures - 1)``, a ``Retry-After: ²`` (``str.isdigit``) ValueError, each at every round:
    no wait was set and the receiver was hit every 10 ms; a ``Retry-After`` of 10**30 s was never retried. A
    receiver's wait is its backoff, or its Retry-After (delay-seconds or an HTTP-date) up to an hour."""
    from email.utils import format_datetime

    from api.pager import RETRY_AFTER_MAX_S, retry_after_s

    now = 1_800_000_000.0
    at = format_datetime(datetime.fromtimestamp(now + 30, tz=timezone.utc), usegmt=True)
    assert [retry_after_s(v, now) for v in ("", "10", " 7 ", "\u00b2", "1" * 30, "-5", "1.5", at, "Mon, 99 Foo")] == [
        0.0, 10.0, 7.0, 0.0, RETRY_AFTER_MAX_S, 0.0, 0.0, 30.0, 0.0]
    pager = Pager(pd_settings(tmp_path, pd.url), backoff_base_s=0.05, backoff_max_s=1.0)
    [r] = pager.receivers
    r.failures = 1024
    pd.fail = 1
    pager.enqueue([incident()])
    assert asyncio.run(pager.flush(0.2)) == 1
    assert r.failures == 1025 and 0 < r.next_try - time.monotonic() <= 1.0
    pager.close()


def test_the_outbox_forgets_what_is_over_after_a_week_and_still_pages_no_version_twice(tmp_path, pd):
    """Every outbox entry was kept for good (about 1 KB per version and receiver: a service's outbox grew without
    end, a break-it pass). Entries that are over (done, coalesced) and older than ``OUTBOX_KEEP_S`` are deleted;
    pending entries stay, and so do the ``pages`` rows, so a replayed version of a pruned incident is not paged
    again. (A real HTTP receiver; the clock is the pager's own, moved a week on.)"""
    from api.pager import OUTBOX_KEEP_S

    now = [time.time()]
    pager = Pager(Settings(state_dir=tmp_path, alertmanager_url=pd.url, api_host="127.0.0.1", api_port=8080),
                  clock=lambda: now[0], poll_s=0.01)
    assert pager.enqueue([incident()]) == 1 and pager.enqueue([incident(version=2)]) == 1  # v1's coalesced
    assert asyncio.run(pager.flush(5)) == 0
    states = lambda: sorted(pager._rows("SELECT incident_id, version, state FROM outbox"))  # noqa: E731
    assert states() == [("inc-a", 1, "coalesced"), ("inc-a", 2, "done")]
    assert pager._prune() == 0  # not a week old
    now[0] += OUTBOX_KEEP_S + 60
    assert pager.enqueue([incident(iid="inc-b", init_events=("e9",))]) == 1  # waits: the receiver is not called
    assert pager._prune() == 2
    assert states() == [("inc-b", 1, "pending")]
    assert pager.enqueue([incident(version=2)]) == 0  # replayed: its page row says it was paged
    assert pager._rows("SELECT incident_id, version FROM pages ORDER BY 1") == [("inc-a", 2), ("inc-b", 1)]
    pager.close()


def test_an_alertmanager_re_send_refused_whole_is_not_repeated_at_every_round(tmp_path, pd):
    """A break-it pass: a re-send batch of the open alerts answered with a 4xx that is not retried (a proxy's 413 for
    its size, a 400 for one bad alert) was re-sent at every round, 175 times in 3 s; and one bad alert kept every
    other from being re-sent. The batch is tried alert by alert once, then not before ``am_resend_s``."""
    pager = Pager(Settings(state_dir=tmp_path, alertmanager_url=pd.url, api_host="127.0.0.1", api_port=8080),
                  am_resend_s=0.0, poll_s=0.01)
    pager.enqueue([incident(), incident(iid="inc-other", init_events=("e2",))])  # two faults: two open pages
    assert asyncio.run(pager.flush(5)) == 0
    pager.am_resend_s = 3600.0
    [r] = pager.receivers
    r.last_refresh = float("-inf")  # due now (0.0 was due only on a machine up for more than am_resend_s: time.monotonic())
    pd.fail, pd.fail_status = 1, 413  # the batch is refused, each alert alone is taken
    before = len(pd.requests)

    async def rounds() -> None:
        async with httpx.AsyncClient(timeout=2) as client:
            for _ in range(20):
                await pager._round(client)

    asyncio.run(rounds())
    sent = pd.bodies()[before:]
    assert [len(b) for b in sent] == [2, 1, 1]  # the batch, then each alert once; not again within am_resend_s
    assert sorted(b[0]["labels"]["incident_id"] for b in sent[1:]) == ["inc-a", "inc-other"]
    pager.close()


def test_restart_before_acknowledgement_re_sends_the_same_page(tmp_path, pd):
    """The receiver got the page but firstfault died before the 2xx: the restarted pager sends it again, with
    the same dedup key and content, so the receiver still has one page; once acknowledged, never again."""
    settings = pd_settings(tmp_path, pd.url)
    pager = Pager(settings)
    pager.enqueue([incident(downstream=DOWN)])
    pd.delay_s = 2.0

    async def crash_mid_send():
        task = asyncio.create_task(pager.flush(10))
        while not pd.requests:
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(crash_mid_send())
    pager.close()
    pd.delay_s = 0.0
    again = Pager(settings)
    assert again.pending() == 1
    assert again.enqueue([incident(downstream=DOWN)]) == 0  # the correlator replays the same version
    assert asyncio.run(again.flush(5)) == 0
    first, second = pd.bodies()
    assert first == second and pd.pages == 1
    again.close()
    third = Pager(settings)
    asyncio.run(third.flush(1))
    assert len(pd.bodies()) == 2
    third.close()


def test_restart_with_pages_never_sent(tmp_path, pd):
    settings = pd_settings(tmp_path, pd.url)
    pager = Pager(settings)
    pager.enqueue([incident("inc-a"), incident("inc-b", init_events=["e9"])])
    pager.close()  # firstfault stops before sending anything
    again = Pager(settings)
    assert asyncio.run(again.flush(5)) == 0
    assert sorted(b["dedup_key"] for b in pd.bodies()) == ["inc-a", "inc-b"] and pd.pages == 2
    again.close()


def test_rejected_payload_is_not_retried(tmp_path, pd):
    pager = Pager(pd_settings(tmp_path, pd.url), backoff_base_s=0.05)
    pd.fail, pd.fail_status = 1, 400
    pager.enqueue([incident("inc-a"), incident("inc-b", init_events=["e9"])])
    assert asyncio.run(pager.flush(5)) == 0
    assert [b["dedup_key"] for b in pd.bodies()] == ["inc-a", "inc-b"]
    assert pager.health()["receivers"]["pagerduty"]["rejected"] == 1
    pager.close()


@pytest.mark.parametrize("status,said", [(401, "check the receiver's URL and credentials"),
                                         (404, "check the receiver's URL and credentials"),
                                         (405, "check the receiver's URL and credentials"),
                                         (308, "redirected to '?'; set the receiver's URL to it")])
def test_a_receivers_wrong_url_or_credentials_hold_the_page_until_fixed(tmp_path, pd, status, said):
    """401/403/404/405/407/426 and redirects say the receiver's URL, proxy or credentials are wrong: the page waits,
    retried with backoff, and goes once they are fixed (here the receiver answers twice with the status, then
    202). They were marked rejected and never sent again, with one ERROR line (a break-it pass)."""
    pager = Pager(pd_settings(tmp_path, pd.url), backoff_base_s=0.05)
    pd.fail, pd.fail_status = 2, status
    pager.enqueue([incident("inc-a")])
    errors = []
    real_post = pager._post

    async def post(client, r, body):
        got = await real_post(client, r, body)
        errors.append(got[2])
        return got

    pager._post = post
    assert asyncio.run(pager.flush(5)) == 0
    assert [b["dedup_key"] for b in pd.bodies()] == ["inc-a"] * 3 and pd.pages == 1
    assert errors[0].startswith(f"HTTP {status}") and said in errors[0] and errors[2] == ""
    assert pager.health()["receivers"]["pagerduty"]["rejected"] == 0
    pager.close()


def test_configuration(tmp_path):
    assert Pager(Settings(state_dir=tmp_path)).enqueue([incident()]) == 0  # no receiver: nothing to page
    with pytest.raises(ValueError, match="routing_key"):
        Pager(Settings(state_dir=tmp_path, pagerduty_url="http://127.0.0.1:9/v2/enqueue"))
    p = Pager(pd_settings(tmp_path, "http://127.0.0.1:9"), public_url="https://ff.example/")
    assert p.base_url == "https://ff.example/"
    assert alertmanager_alert(incident(), p.base_url)["generatorURL"] == "https://ff.example/incidents/inc-a"


def test_a_page_without_an_api_to_link_to_carries_no_link():
    """`demo --once` paged with links to http://127.0.0.1:8080/incidents/…, which no API served (it stops when caught
    up; a fresh-user trial): a service that serves no API sets ``Pager.base_url`` to None, and then an alert has no
    ``generatorURL`` and no ``incident_url`` annotation, a PagerDuty event no links; one that serves the API links
    to the address it listens on, a wildcard one by this machine's name."""
    import socket

    from api.pager import api_base_url, pagerduty_event

    a = alertmanager_alert(incident(), None, now=1_800_000_000)
    assert "generatorURL" not in a and "incident_url" not in a["annotations"] and a["annotations"]["summary"]
    e = pagerduty_event(incident(), "k" * 32, None)
    assert "links" not in e and "client_url" not in e and "incident_url" not in e["payload"]["custom_details"]
    e = pagerduty_event(incident(), "k" * 32, "http://ff:8080")
    assert e["links"][0]["href"] == e["client_url"] == "http://ff:8080/incidents/inc-a"
    assert api_base_url("0.0.0.0", 18080) == f"http://{socket.gethostname()}:18080"
    assert api_base_url("::1", 8080) == "http://[::1]:8080" and api_base_url("127.0.0.1", 0) == "http://127.0.0.1:0"


def test_run_forever_delivers_in_the_background_and_stops(tmp_path, pd):
    pager = Pager(pd_settings(tmp_path, pd.url))

    async def go():
        async with running(pager, stop_within_s=2):
            await asyncio.sleep(0.05)
            pager.enqueue([incident()])  # wakes the dispatcher
            for _ in range(200):
                if pd.requests:
                    break
                await asyncio.sleep(0.01)

    asyncio.run(go())
    assert len(pd.bodies()) == 1 and pager.pending() == 0
    pager.close()


# ---- a real Alertmanager ---------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Alertmanager:
    """Debian's Alertmanager on a free loopback port, clustering off, with its own config and storage."""

    def __init__(self, tmp: Path, hook_url: str) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.dir = tmp
        self.config = tmp / "alertmanager.yml"
        self.config.write_text((ROOT / "tests/data/alertmanager.yml").read_text().replace("HOOK_URL", hook_url))
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        log = open(self.dir / "alertmanager.log", "ab")
        self.proc = subprocess.Popen(
            [AM_BIN, f"--config.file={self.config}", f"--storage.path={self.dir / 'data'}",
             f"--web.listen-address=127.0.0.1:{self.port}", "--cluster.listen-address=", "--log.level=warn"],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        log.close()
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, (self.dir / "alertmanager.log").read_text()
            try:
                if httpx.get(self.url + "/-/ready", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.05)
        raise RuntimeError("Alertmanager did not become ready")

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()  # SIGTERM: Alertmanager snapshots its notification log on the way out
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self.proc = None

    def alerts(self) -> list[dict]:
        return httpx.get(self.url + "/api/v2/alerts", timeout=5).json()


@pytest.fixture
def alertmanager(tmp_path):
    if not Path(AM_BIN).exists():
        pytest.skip(f"{AM_BIN} missing: run scripts/test-deps.sh (Debian package prometheus-alertmanager)")
    hook = Receiver()
    am = Alertmanager(tmp_path, hook.url + "/hook")
    am.start()
    try:
        yield am, hook
    finally:
        am.stop()
        hook.stop()


def wait_for(pred, timeout=10.0, what=""):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


async def until(pred, what: str, timeout: float = 15.0):
    """:func:`wait_for` off the event loop, so that a pager running on the loop goes on while it waits."""
    return await asyncio.get_running_loop().run_in_executor(None, lambda: wait_for(pred, timeout, what))


@contextlib.asynccontextmanager
async def running(pager: Pager, stop_within_s: float = 5.0):
    """``pager.run_forever`` as a task on the running loop while the block runs. Yields ``stopped``: awaited, it
    stops the pager and waits for its task (at most ``stop_within_s``); the block's end does so too, whatever
    happened in it."""
    stop = asyncio.Event()
    task = asyncio.create_task(pager.run_forever(stop))

    async def stopped() -> None:
        stop.set()
        await asyncio.wait_for(task, stop_within_s)

    try:
        yield stopped
    finally:
        await stopped()


def notified(hook: Receiver, status: str) -> list[str]:
    """The incident ids of the alerts Alertmanager's notifications to ``hook`` said were ``status`` (``firing`` or
    ``resolved``), in the order it sent them."""
    return [a["labels"]["incident_id"] for n in hook.bodies("/hook") for a in n["alerts"] if a["status"] == status]


def active(am: Alertmanager, iid: str) -> list[dict]:
    """Alertmanager's active alerts of incident ``iid``."""
    return [a for a in am.alerts() if a["labels"].get("incident_id") == iid and a["status"]["state"] == "active"]


def am_sink(state_dir: Path, am: Alertmanager, lake: str, *, resend_s: float, hold_s: float,
            poll_s: float | None = None) -> IncidentSink:
    """A correlate worker's sink over ``lake`` that pages ``am``: its pager re-sends open pages every ``resend_s``
    seconds, each held ``hold_s`` (``endsAt``), and follows its outbox every ``poll_s`` (its default: None)."""
    from api.sink import IncidentSink

    s = IncidentSink(Settings(state_dir=state_dir, alertmanager_url=am.url, api_port=8080, lake=lake))
    s.pager.am_resend_s, s.pager.am_hold_s = resend_s, hold_s
    if poll_s is not None:
        s.pager.poll_s = poll_s
    return s


def test_alertmanager_pages_update_resolve_and_survive_a_restart(tmp_path, alertmanager):
    am, hook = alertmanager
    settings = Settings(state_dir=tmp_path / "state", alertmanager_url=am.url, api_port=8080)
    pager = Pager(settings, am_resend_s=0.3, backoff_base_s=0.05, backoff_max_s=0.3)

    def ours():
        return [a for a in am.alerts() if a["labels"].get("alertname") == "FirstFaultIncident"]

    async def go():
        loop = asyncio.get_running_loop()
        async with running(pager):
            # a page arrives: one alert, one notification, downstream named, not alerted
            pager.enqueue([incident(downstream=DOWN), incident("inc-low", severity="info", init_events=["i1"])])
            [a] = await until(ours, "the alert")
            assert a["labels"] == {"alertname": "FirstFaultIncident", "incident_id": "inc-a", "severity": "critical",
                                   "category": "link_fault", "host": "node07"}
            assert "NVLink 3 of GPU 0000:9a:00.0 on node07" in a["annotations"]["summary"]
            assert a["annotations"]["downstream"].startswith("2 downstream reporters")
            assert a["generatorURL"] == "http://127.0.0.1:8080/incidents/inc-a"
            await until(lambda: notified(hook, "firing"), "the firing notification")

            # an update: same alert (same labels), new annotations, even though the severity changed
            pager.enqueue([incident(version=2, severity="error", next_action="Drain node07.", downstream=DOWN)])
            [a] = await until(lambda: [x for x in ours() if x["annotations"]["version"] == "2"], "version 2")
            assert a["labels"]["severity"] == "critical" and a["annotations"]["severity"] == "error"
            assert a["annotations"]["next_action"] == "Drain node07."

            # Alertmanager restarts (it keeps alerts in memory only); an update is enqueued while it is down
            await loop.run_in_executor(None, am.stop)
            pager.enqueue([incident(version=3, next_action="Replace the NVLink bridge.", downstream=DOWN)])
            await until(lambda: not pager.health()["ok"], "the pager to notice the outage")
            await loop.run_in_executor(None, am.start)
            [a] = await until(lambda: [x for x in ours() if x["annotations"]["version"] == "3"], "version 3")
            assert a["annotations"]["next_action"] == "Replace the NVLink bridge."
            await until(lambda: pager.health()["ok"] and pager.pending() == 0, "the outbox to drain")
            await asyncio.sleep(1.0)  # past group_wait and group_interval: a re-notification would be here by now
            assert notified(hook, "firing") == ["inc-a"]  # its notification log came back from --storage.path

            # resolve: the alert leaves the active list and the receiver hears "resolved"
            pager.enqueue([incident(version=4, status="resolved", downstream=DOWN)])
            await until(lambda: not ours(), "the alert to resolve")
            await until(lambda: notified(hook, "resolved"), "the resolved notification")

    asyncio.run(go())
    # one page in all: the restart did not make Alertmanager notify the open alert again
    assert notified(hook, "firing").count("inc-a") == 1 and notified(hook, "resolved") == ["inc-a"]
    assert "inc-low" not in notified(hook, "firing")
    pager.close()


def test_a_receiver_that_never_answers_is_said_as_a_timeout(tmp_path):
    """A receiver that takes the connection and never answers: httpx's ReadTimeout has no text, and the pager logged
    "failed (ReadTimeout: ); retrying" (a break-it pass). The health and the log say what timed out. (A real socket
    on 127.0.0.1 that accepts and stays silent.)"""
    import socket

    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(4)
    try:
        url = f"http://127.0.0.1:{silent.getsockname()[1]}/v2/enqueue"
        pager = Pager(pd_settings(tmp_path, url), timeout_s=0.3, backoff_base_s=0.05, backoff_max_s=0.1)
        pager.enqueue([incident()])
        assert asyncio.run(pager.flush(1.0)) == 1
        assert pager.health()["receivers"]["pagerduty"]["last_error"] == \
            "ReadTimeout: no answer within the read timeout"
        pager.close()
    finally:
        silent.close()


def test_a_full_outbox_holds_the_versions_and_enqueues_them_when_it_takes_them_again(tmp_path, pd, caplog):
    """A full state folder: the outbox's SQLite refused the insert ("database or disk is full") and the service died,
    the versions already stored never paged (a break-it pass). The refused versions (the latest of each incident)
    are held and enqueued with the next call once it takes them; /healthz says so meanwhile. SQLite's own page limit
    (``PRAGMA max_page_count``) makes the disk full here. An outbox that cannot be opened is an OutboxError naming
    its file (a sqlite3 traceback at start)."""
    import logging

    from api.pager import OutboxError, paging_trouble

    pager = Pager(pd_settings(tmp_path, pd.url, page_min_severity="error"))
    pages = pager.db.execute("PRAGMA page_count").fetchone()[0]
    pager.db.execute(f"PRAGMA max_page_count = {pages}")
    big = "x" * 20_000  # a version larger than the pages left
    with caplog.at_level(logging.ERROR, logger="firstfault.pager"):
        assert pager.enqueue([incident("inc-a", next_action=big)]) == 0
        assert pager.enqueue([incident("inc-a", version=2, next_action=big)]) == 0
    [said] = [r for r in caplog.records if r.name == "firstfault.pager"]  # once, not at every call
    assert "refuses pages" in said.getMessage() and said.error_code == "outbox_failed"
    h = pager.health()
    assert not h["ok"] and h["unqueued"] == 1 and "full" in h["outbox_error"]
    assert paging_trouble(h).startswith("the pager outbox refuses pages (OperationalError: database or disk is full)")
    pager.db.execute("PRAGMA max_page_count = 1073741823")
    # a delivery round enqueues what is held: no other incident need change (a break-it pass: it waited for one)
    assert asyncio.run(pager.flush(5)) == 0
    assert pager.health()["ok"] and pager.health()["unqueued"] == 0
    [e] = pd.bodies()
    assert e["dedup_key"] == "inc-a" and e["payload"]["custom_details"]["next_action"] == big
    pager.close()
    # a version still held when the process stops is said lost
    pager = Pager(pd_settings(tmp_path, pd.url, page_min_severity="error"))
    pager.unqueued = {"inc-b": incident("inc-b")}
    with caplog.at_level(logging.ERROR, logger="firstfault.pager"):
        pager.close()
    assert any("never took 1 incident version(s) to page" in r.getMessage() and "inc-b" in r.getMessage()
               for r in caplog.records)
    (tmp_path / "st").mkdir()
    (tmp_path / "st" / "pager").write_text("")  # no folder can be made there
    with pytest.raises(OutboxError, match="the pager outbox .*st/pager/outbox.sqlite cannot be opened"):
        Pager(pd_settings(tmp_path / "st", pd.url))


def test_a_page_no_receiver_can_be_sent_is_rejected_and_the_rest_go_on(tmp_path, pd):
    """A queued page whose start is no time made building the Alertmanager alert raise at every round, ahead of the
    pages behind it (a break-it pass): it is rejected with the reason, the next page is delivered."""
    pager = Pager(pd_settings(tmp_path, pd.url))
    pager.enqueue([incident("inc-bad"), incident("inc-good")])
    with pager._tx():  # the first page's document as a bad writer could have left it
        pager.db.execute("UPDATE outbox SET doc = ? WHERE incident_id = 'inc-bad'", (b"[]",))
    assert asyncio.run(pager.flush(5)) == 0
    assert [b["dedup_key"] for b in pd.bodies()] == ["inc-good"]
    rows = pager._rows("SELECT state, last_error FROM outbox WHERE incident_id = 'inc-bad'", ())
    assert rows and all(state == "rejected" and err.startswith("cannot build the page: ") for state, err in rows), rows
    pager.close()


@pytest.mark.parametrize("shape", ["trickle", "endless", "slow_headers", "slow_429"])
def test_a_receiver_that_answers_slowly_or_endlessly_is_given_up_on_time_and_bounded(tmp_path, shape):
    """A receiver that answers 500 and sends its body a byte every 0.2 s held every receiver's pages for ever (httpx's
    timeout bounds each read), health ok; one whose error body never ends was read whole into memory, 2.5 GB (a
    break-it pass; encode/httpx#1450). One deadline bounds the exchange and only the body's head is read; a status
    whose body is slow keeps its code and Retry-After (a slow 429 was hit again at once: a second break-it pass).
    (A real socket on 127.0.0.1 that answers so.)"""
    import socket
    import threading

    stop = threading.Event()
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(4)
    server.settimeout(0.2)

    def answer(c: socket.socket) -> None:
        with c:
            buf = b""
            while b"\r\n\r\n" not in buf:
                buf += c.recv(65536)
            status = b"429 Too Many Requests\r\nRetry-After: 60" if shape == "slow_429" else b"500 Oops"
            c.sendall(b"HTTP/1.1 " + status + b"\r\n")
            if shape != "slow_headers":
                c.sendall(b"Content-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n")
            chunk = b"y" * 65536 if shape == "endless" else b"x"
            while not stop.is_set():
                try:
                    c.sendall(b"X-A: b\r\n" if shape == "slow_headers" else b"%x\r\n%s\r\n" % (len(chunk), chunk))
                except OSError:
                    return
                if shape != "endless":
                    time.sleep(0.2)

    def serve() -> None:
        while not stop.is_set():
            try:
                c, _ = server.accept()
            except OSError:
                continue
            threading.Thread(target=answer, args=(c,), daemon=True).start()

    threading.Thread(target=serve, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.getsockname()[1]}"
        pager = Pager(pd_settings(tmp_path, url), timeout_s=0.3, backoff_base_s=0.05, backoff_max_s=0.1)
        pager.enqueue([incident()])
        t0 = time.monotonic()
        assert asyncio.run(pager.flush(2.0)) == 1
        assert time.monotonic() - t0 < 6, time.monotonic() - t0
        err = pager.health()["receivers"]["pagerduty"]["last_error"]
        if shape == "slow_headers":
            assert err == "no whole answer within 0.9 s", err
        elif shape == "endless":
            assert err == "HTTP 500: " + "y" * 300, err[:80]
        else:  # the status and headers came: the body's head that came is enough, and a Retry-After holds
            assert re.fullmatch(r"HTTP (500|429): x{1,10}", err), err
        if shape == "slow_429":
            assert pager.receivers[0].next_try - time.monotonic() > 50
        health = pager.health()
        assert health["receivers"]["pagerduty"]["consecutive_failures"] >= 1 and health["ok"] is False, health
        pager.close()
    finally:
        stop.set()
        server.close()


def test_a_second_process_on_one_state_dir_is_refused_naming_the_first(tmp_path):
    """Two correlate workers given one ``state_dir`` both started and shared one outbox, which docs/operations.md
    forbids (a fresh user's trial): the outbox is held (``flock``) while its pager lives; another process's pager
    is refused with the holder's pid, and takes it once the first has closed."""
    import os
    import sys

    from api.pager import OutboxInUse

    settings = Settings(state_dir=tmp_path / "state")
    first = Pager(settings)
    other = (f"import sys; sys.path.insert(0, {str(Path(__file__).parent.parent)!r})\n"
             "from api.pager import Pager, OutboxInUse\nfrom schemas.settings import Settings\n"
             f"try:\n    Pager(Settings(state_dir={str(tmp_path / 'state')!r})).close(); print('opened')\n"
             "except OutboxInUse as e:\n    print(e)")
    said = subprocess.run([sys.executable, "-c", other], capture_output=True, text=True, timeout=60)
    assert said.stdout.strip() == (f"the pager outbox {tmp_path / 'state' / 'pager' / 'outbox.sqlite'} is in use by "
                                   f"another process (pid {os.getpid()}): give each correlate worker or `run` its own "
                                   "state_dir (FIRSTFAULT_STATE_DIR)"), said
    first.close()
    said = subprocess.run([sys.executable, "-c", other], capture_output=True, text=True, timeout=60)
    assert said.stdout.strip() == "opened", said
    assert issubclass(OutboxInUse, OSError)


def test_a_correlate_worker_shows_the_incidents_each_step_stores(tmp_path):
    """``firstfault correlate`` printed nothing but warnings for 25 minutes while it stored and paged incidents (a
    fresh user's trial): its service hands each step's stored versions, with their statuses before, to
    ``on_incidents`` (the CLI's ``incident_progress``), as ``run`` does. No broker is reached: the worker's own
    callback is called as its step would."""
    from api.diagnose import diagnose_paths
    from api.service import CorrelateService

    corpus = Path(__file__).parent / "corpus" / "002-sxid12028-xid137-xid94-nvswitch-cascade"
    _, _, incidents = diagnose_paths([corpus], Settings())
    svc = CorrelateService(Settings(lake=str(tmp_path / "lake"), state_dir=str(tmp_path / "state")),
                           "127.0.0.1:9")
    shown: list[tuple[list[str], dict[str, str]]] = []
    svc.on_incidents = lambda versions, before: shown.append(([v["id"] for v in versions], before))
    svc.worker.on_incidents(incidents)
    svc.worker.on_incidents([{**incidents[0], "version": incidents[0]["version"] + 1, "status": "resolved"}])
    svc.worker.on_incidents(incidents)  # a replay after a restart: versions already stored, not shown (break-it)
    svc.sink.pager.close()
    assert incidents and shown == [([i["id"] for i in incidents], {}), ([incidents[0]["id"]], {
        incidents[0]["id"]: incidents[0]["status"]})], shown


def test_a_demo_or_run_refused_by_the_outbox_starts_nothing(tmp_path):
    """A demo whose state_dir's outbox another process held started a broker and wrote the sample logs into the
    topics live workers read, then exited 1 (a break-it pass): ``outbox_free`` refuses it before anything starts,
    ``demo`` and ``run`` exit 1 naming the holder, no broker under the state_dir, no sample written."""
    import os
    import sys

    from api.pager import outbox_free

    state = tmp_path / "state"
    outbox_free(state)  # no outbox yet: free
    first = Pager(Settings(state_dir=state))
    outbox_free(state)  # held by this process: free for it
    exe = str(Path(sys.executable).with_name("firstfault"))
    env = {"PATH": "/usr/bin:/bin", "FIRSTFAULT_STATE_DIR": str(state), "COLUMNS": "300"}
    try:
        for cmd in (["demo", "--once"], ["run", "--once", "--no-serve"]):
            r = subprocess.run([exe, *cmd], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60)
            assert r.returncode == 1 and f"is in use by another process (pid {os.getpid()})" in r.stderr, r.stderr
            assert "broker" not in r.stderr and not (state / "kafka").exists(), r.stderr
        # nor a lock of a demo that never ran (left behind: a helper's pass)
        assert sorted(p.name for p in state.iterdir()) == ["pager"]
    finally:
        first.close()


def test_an_incident_a_second_correlate_worker_takes_over_is_not_paged_again(tmp_path, pd):
    """Each correlate worker has its own outbox, but an incident moves between workers with its partition (a
    rebalance, a worker that died). The worker that takes it over read the incident back from the lake, yet its pager
    had never seen it: the incident's resolved version was paged as a trigger and its resolve, and the trigger
    reached PagerDuty after the first worker had resolved the page by its evidence's age: a second PagerDuty
    incident for one fault (a break-it pass). The taking worker's pager learns, from the stored versions, the pages
    the first worker opened. (Two real sinks over one real lake; a local receiver with PagerDuty's dedup rules.)"""
    from api.sink import IncidentSink

    now = time.time()
    lake = str(tmp_path / "lake")
    a = IncidentSink(pd_settings(tmp_path / "a", pd.url, lake=lake))
    a.emit([incident(version=1, end=now - 60)])
    assert asyncio.run(a.pager.flush(5)) == 0 and pd.pages == 1
    b = IncidentSink(pd_settings(tmp_path / "b", pd.url, lake=lake))
    b.stored()  # the rebalance: the taking worker's correlator starts from the stored incidents
    a.pager.clock = b.pager.clock = lambda: now + a.pager.resolve_after_s  # the evidence went quiet
    assert asyncio.run(a.pager.flush(5)) == 0 and not pd.open_keys  # the first worker resolves its page
    b.emit([incident(version=2, status="resolved", end=now - 60)])
    assert asyncio.run(b.pager.flush(5)) == 0
    assert pd.pages == 1 and not pd.open_keys
    assert [x["event_action"] for x in pd.bodies()] == ["trigger", "resolve", "resolve"]
    # the worker that takes it over re-opens the page when new evidence comes
    b.emit([incident(version=3, end=now + a.pager.resolve_after_s - 10)])
    assert asyncio.run(b.pager.flush(5)) == 0 and pd.pages == 2 and pd.open_keys == {"inc-a"}
    # an incident the first worker did not page (its initiator is a downstream reporter of an open page) is not
    # taken over as paged: its next version is inhibited again, not paged
    a.emit([incident("inc-x", downstream=DOWN), incident("inc-d", init_events=["d3"])])
    assert a.pager.inhibited == 1 and asyncio.run(a.pager.flush(5)) == 0 and pd.pages == 3
    c = IncidentSink(pd_settings(tmp_path / "c", pd.url, lake=lake))
    c.stored()
    c.emit([incident("inc-d", version=2, init_events=["d3"], next_action="Check the peer.")])
    assert asyncio.run(c.pager.flush(5)) == 0 and pd.pages == 3 and c.pager.inhibited == 1
    c.pager.close()
    a.pager.close()
    b.pager.close()


def test_a_page_taken_over_keeps_the_labels_it_was_first_paged_with(tmp_path, pd):
    """Alertmanager tells alerts apart by their labels, which a page keeps from its first version. The worker that
    took an incident over (a rebalance) sent its next version with the labels of that version: when the severity had
    changed since the first page, Alertmanager held two alerts for one incident, and the new one notified again (a
    break-it pass). It keeps the first paged version's labels, read from the lake, in its re-sends of the page too
    (``Pager._follow``). (Two real sinks over one real lake; a local receiver
    stands in for Alertmanager's /api/v2/alerts: the labels sent are what is compared.)"""
    from api.sink import IncidentSink

    now = time.time()
    lake = str(tmp_path / "lake")

    def settings(name):
        return Settings(state_dir=tmp_path / name, alertmanager_url=pd.url, api_port=8080, lake=lake)

    a = IncidentSink(settings("a"))
    a.pager.am_resend_s = 0.0
    a.emit([incident(version=1, severity="info", end=now - 90)])  # not paged: below page_min_severity
    a.emit([incident(version=2, severity="error", end=now - 60)])  # the first page: severity=error
    a.emit([incident(version=3, severity="critical", end=now - 30)])
    assert asyncio.run(a.pager.flush(5)) == 0
    b = IncidentSink(settings("b"))
    b.stored()
    b.pager.am_resend_s = 0.0

    async def rounds():
        async with httpx.AsyncClient() as client:
            await b.pager._round(client)

    asyncio.run(rounds())  # a re-send round of the taking worker: the latest stored version, the first labels
    assert len(pd.bodies()) == 2  # version 3's trigger stood for version 2's, unsent (Pager._put)
    b.emit([incident(version=4, severity="critical", end=now - 10)])
    assert asyncio.run(b.pager.flush(5)) == 0
    sent = [x["labels"] for body in pd.bodies() for x in body]
    assert [lb["severity"] for lb in sent] == ["error"] * 3
    assert [x["annotations"]["version"] for body in pd.bodies() for x in body] == ["3", "3", "4"]
    a.pager.close()
    b.pager.close()


def test_a_version_stored_by_a_worker_that_died_before_its_outbox_took_it_is_paged_after_the_restart(tmp_path, pd):
    """``IncidentSink.emit`` writes the lake, then the outbox. A worker that died between the two left a stored
    version no outbox had; at its restart ``stored`` took it for another worker's page (``Pager.adopt``): nothing was
    sent, and the incident's resolved version went out as a resolve alone, a critical incident never paged (a
    break-it pass; before adoption it was a trigger and a resolve). The outbox notes the versions it is about to
    store: those the lake has at the restart are paged, not taken over. (A real lake and outbox; the death between
    the two writes is an enqueue that raises; a local receiver with PagerDuty's dedup rules.)"""
    from api.sink import IncidentSink

    now = time.time()
    lake = str(tmp_path / "lake")
    a = IncidentSink(pd_settings(tmp_path / "a", pd.url, lake=lake))

    def died(incidents):
        raise KeyboardInterrupt  # the process ends here: the lake has the version, the outbox does not

    a.pager.enqueue = died
    with pytest.raises(KeyboardInterrupt):
        a.emit([incident(version=1, end=now - 60)])
    a.pager.close()
    again = IncidentSink(pd_settings(tmp_path / "a", pd.url, lake=lake))  # the same worker, restarted
    assert [i["id"] for i in again.stored()] == ["inc-a"]
    assert asyncio.run(again.pager.flush(5)) == 0 and pd.pages == 1 and pd.open_keys == {"inc-a"}
    again.emit([incident(version=2, status="resolved", end=now - 30)])
    assert asyncio.run(again.pager.flush(5)) == 0 and pd.pages == 1 and not pd.open_keys
    assert [x["event_action"] for x in pd.bodies()] == ["trigger", "resolve"]
    # a version noted but never stored (the death came before the lake took it) is no page: the replay makes it again
    b = IncidentSink(pd_settings(tmp_path / "b", pd.url, lake=str(tmp_path / "lake-b")))
    b.lake.write = lambda *a, **k: (_ for _ in ()).throw(KeyboardInterrupt())
    with pytest.raises(KeyboardInterrupt):
        b.emit([incident("inc-b", version=1, end=now - 60)])
    b.pager.close()
    b = IncidentSink(pd_settings(tmp_path / "b", pd.url, lake=str(tmp_path / "lake-b")))
    assert b.stored() == [] and asyncio.run(b.pager.flush(5)) == 0 and len(pd.bodies()) == 2
    assert b.pager._rows("SELECT count(*) FROM storing") == [(0,)]
    b.pager.close()
    again.pager.close()


def test_a_re_send_that_reached_alertmanager_after_another_workers_resolve_is_resolved_again(tmp_path, alertmanager):
    """Worker a re-sends its open page from a read of the lake made before worker b stored the resolved version:
    the re-send reaches Alertmanager after b's resolve and fires the alert again. a's next round follows the resolved
    version and resolves the alert again, rather than leave it active until its ``endsAt`` (``am_hold_s``, minutes
    in a deployment; a fresh user's trial saw the race on a loaded machine). A real Alertmanager, two real sinks over
    one real lake; the stale re-send is a's ``_refresh`` called before it follows the lake."""
    am, _ = alertmanager
    lake = str(tmp_path / "lake")
    # a long hold: the alert cannot expire in this test
    a, b = (am_sink(tmp_path / name, am, lake, resend_s=0.3, hold_s=60.0) for name in "ab")

    async def go():
        now = time.time()
        a.emit([incident(version=1, end=now - 10)])
        assert await a.pager.flush() == 0
        wait_for(lambda: active(am, "inc-a"), 10, "the first worker's page")
        b.stored()
        b.emit([incident(version=2, status="resolved", end=now - 5)])
        assert await b.pager.flush() == 0
        wait_for(lambda: not active(am, "inc-a"), 10, "the second worker's resolve")
        (am_receiver,) = [r for r in a.pager.receivers if r.name == "alertmanager"]
        async with httpx.AsyncClient() as client:
            await a.pager._refresh(client, am_receiver)  # a's stale re-send: it has not read v2 yet
        wait_for(lambda: active(am, "inc-a"), 10, "the stale re-send firing the alert again")
        a.pager._followed = 0.0  # its next round is due to follow the lake
        assert await a.pager.flush() == 0
        wait_for(lambda: not active(am, "inc-a"), 5, "the alert resolved again by the worker that re-sent it")

    asyncio.run(go())
    a.pager.close()
    b.pager.close()


def test_a_trigger_waiting_for_pagerduty_is_resolved_after_another_workers_resolve(tmp_path, pd):
    """Worker a pages an incident while PagerDuty is down (its trigger waits in a's outbox); the incident moves to
    worker b, which stores and sends its resolved version. When PagerDuty is back, a's waiting trigger reached it
    after b's resolve and opened a page nothing resolved: a follows b's version, and sends the resolve after its
    trigger (a break-it pass). Two real sinks over one real lake; the local receiver keeps PagerDuty's dedup
    semantics (a stand-in for PagerDuty's Events API, which cannot run here)."""
    from api.sink import IncidentSink

    lake = str(tmp_path / "lake")
    now = time.time()
    a = IncidentSink(pd_settings(tmp_path / "a", pd.url, lake=lake))
    a.pager.backoff_base_s, a.pager.backoff_max_s = 0.01, 0.05
    pd.fail = 10**6  # down
    a.emit([incident(version=1, end=now - 60)])
    assert asyncio.run(a.pager.flush(0.2)) == 1
    b = IncidentSink(pd_settings(tmp_path / "b", pd.url, lake=lake))
    b.stored()
    pd.fail, before = 0, len(pd.requests)
    b.emit([incident(version=2, status="resolved", end=now - 5)])
    assert asyncio.run(b.pager.flush(5)) == 0
    assert not pd.open_keys
    a.pager._followed, a.pager.am_resend_s = 0.0, 0.0  # a's next round follows the lake
    assert asyncio.run(a.pager.flush(5)) == 0
    sent = [x["event_action"] for x in pd.bodies()[before:]]  # b's resolve alone: it took a's page over
    assert sent == ["resolve", "trigger", "resolve"] and not pd.open_keys
    a.pager.close()
    b.pager.close()


def test_a_page_taken_over_is_re_sent_by_whoever_holds_its_latest_version(tmp_path, alertmanager):
    """Two correlate workers over one lake, each with its own outbox (the pages of an incident move with it,
    ``Pager.adopt``). A page taken over was never re-sent by the taking worker (its first worker's to re-send), and
    the first worker kept re-sending its own copy whatever the lake said since (a break-it pass):

    * the taking worker resolved the incident, and the first worker's next re-send fired the alert again, a second
      notification of a fault already over;
    * the first worker died: nobody re-sent the open page, and Alertmanager let it expire (``endsAt``), a resolved
      notification for an incident still open.

    Each pager now follows the lake's latest stored version of its open pages before it re-sends them (nothing is
    sent for it): a newer version another worker stored is what its page says now (resolved: not re-sent), and an
    open page at the latest version is re-sent by every worker that has it. (A real Alertmanager; two real sinks over
    one real lake; the death of a worker is its pager stopped.)"""
    am, hook = alertmanager
    a, b = (am_sink(tmp_path / name, am, str(tmp_path / "lake"), resend_s=0.3, hold_s=2.0, poll_s=0.1)
            for name in "ab")

    async def go():
        async with running(a.pager) as stop_a:
            now = time.time()
            a.emit([incident(version=1, end=now - 10)])
            await until(lambda: active(am, "inc-a"), "the first worker's page")
            b.stored()  # a rebalance: inc-a moves to the second worker
            async with running(b.pager):
                b.emit([incident(version=2, status="resolved", end=now - 5)])
                await until(lambda: b.pager.pending() == 0, "the resolve to be sent")
                await asyncio.sleep(1.5)  # the first worker's re-sends, every 0.3 s
                # a re-send the first worker made from a read of the lake before v2 was stored may reach
                # Alertmanager after the resolve (a loaded machine: a fresh user's trial); that worker resolves it
                # again once it follows v2, so the alert is not active for long — re-sent every 0.3 s, it would stay
                # active
                await until(lambda: not active(am, "inc-a"), "the alert resolved", timeout=3.0)
                assert notified(hook, "firing") == ["inc-a"] and notified(hook, "resolved") == ["inc-a"], \
                    hook.bodies("/hook")

                # an incident the first worker paged, taken over at a rebalance; then the first worker dies
                a.emit([incident("inc-y", init_events=["y1"], end=time.time() - 10)])
                await until(lambda: active(am, "inc-y"), "the page of inc-y")
                b.stored()
                await stop_a()
                await asyncio.sleep(4.0)  # twice the hold: the alert expires unless someone re-sends it
                assert active(am, "inc-y") and "inc-y" not in notified(hook, "resolved"), notified(hook, "resolved")

    asyncio.run(go())
    a.pager.close()
    b.pager.close()


def test_a_page_counts_the_suspects_it_lists():
    """A candidate named by its host alone (no device) is every party on that host that names no device: the page
    said "2 suspects" and listed three, then "2 downstream reporters" listing one "and 1 more" (a break-it pass).
    It counts the parties it calls suspects, in the incident and in its stored view."""
    from api.pager import describe_downstream, page_view

    inc = incident(downstream=[("node01", None, None, "oom_kill", "same_host", ["a"]),
                               ("node01", None, None, "proc_exit", "same_host", ["b"]),
                               ("node02", None, None, "oom_kill", "same_host", ["c"]),
                               ("node03", None, 0, "nccl_timeout", "same_comm", ["d"])])
    for d in inc["downstream"]:
        d["device_type"] = "host" if d["rank"] is None else None
    inc["initiator"] = {"host": None, "device_type": None, "device": None, "kind": None, "events": [],
                        "candidates": ["node01", "node02"]}
    want = ("3 suspects: node01 oom_kill (same_host); node01 proc_exit (same_host); node02 oom_kill (same_host); "
            "1 downstream reporter: node03 rank 0 nccl_timeout (same_comm)")
    assert describe_downstream(inc) == describe_downstream(page_view(inc)) == want


@pytest.mark.parametrize("stamped_min", [(1, 10, 20, 29), (10, 20, 29)])
def test_a_cloud_notice_ahead_is_one_alert_firing_until_the_peers_reset_at_its_time_goes_quiet(
        tmp_path, alertmanager, pipeline, stamped_min):
    """The catalog's real Azure notice (scylladb/scylla-cluster-tests#5608, its event type made a Terminate: a warning,
    paged at ``page_min_severity = "warning"``), written 30 min ago with its NotBefore 20 s from now, and the peer's
    "Connection reset by peer" naming its host's address 2 s after the NotBefore. The real streaming correlator and a
    real Alertmanager: the notice's version came out ``resolved`` (its line 30 min old), paged as a trigger and its
    resolve, and the reset's ``open`` fired it again (a defect pass). It is one alert, firing (its ``scheduled``
    annotation the NotBefore) through the pager's own quiet rule, updated by the reset's version and resolved once the
    reset has been quiet for ``resolve_after_s``: one firing notification and one resolved. The notice's line prints
    no stamp of its own (the harness's ``< t:…``): its host's next stamped line 1 min after it, or 10 min (past the
    120 s link window: its span kept it out of the peer link, and the reset was an incident of its own, a defect
    pass; its NotBefore is exact whatever the span)."""
    import pyarrow.compute as pc

    from correlate.stream import StreamCorrelator
    from ingest.decode import Decoded, Segment
    from tests.test_patterns import AZURE_NOTICE, BOOT, RECV

    S = 1_000_000
    now = float(int(time.time()))
    line, nb = datetime.fromtimestamp(now - 1800, timezone.utc), datetime.fromtimestamp(now + 20, timezone.utc)
    notice = AZURE_NOTICE.replace("2023-03-16 13:46:56", f"{line:%Y-%m-%d %H:%M:%S}").replace(
        "Thu, 16 Mar 2023 14:01:28 GMT", f"{nb:%a, %d %b %Y %H:%M:%S} GMT")
    later = [f"[{datetime.fromtimestamp(now - 1800 + m * 60, timezone.utc):%Y-%m-%d %H:%M:%S}] node201:1200:1200 [0] "
             f"NCCL INFO Bootstrap : Using eth0:10.1.3.201<0>" for m in stamped_min]
    boot = BOOT.replace("2026-11-20 10:00:01", f"{datetime.fromtimestamp(now - 1805, timezone.utc):%Y-%m-%d %H:%M:%S}")
    reset_at = datetime.fromtimestamp(now + 22, timezone.utc)
    reset = RECV.replace("[2026-11-20 10:05:02]", f"[{reset_at:%Y-%m-%d %H:%M:%S}]")
    files = {"node201": "\n".join([boot.format(host="node201", addr="10.1.3.201"), notice, *later]),
             "node024": reset.format(host="node024", addr="10.1.3.201")}
    segs = [Segment(data=x.encode(), origin=f"t:{h}", stream=h, host=h, ref_ts=int(now * S), ref_basis="kafka",
                    ingest_ts=int(now * S)) for h, x in files.items()]
    b = pipeline.run(Decoded(segments=segs))
    from_peer = pc.equal(b.events.column("host"), "node024")
    sc = StreamCorrelator()
    sc.add(b.events.filter(pc.invert(from_peer)), b.link_samples, b.topology, now_us=int(now * S))
    (v1,) = sc.step(now_us=int(now * S))
    assert (v1["status"], v1["severity"], v1["scheduled"]) == ("open", "warning", f"{nb:%Y-%m-%dT%H:%M:%S}.000000Z")
    sc.add(b.events.filter(from_peer), now_us=int((now + 22) * S))
    (v2,) = sc.step(now_us=int((now + 22 + 300) * S))  # the peer quiet for idle_us: its group closes
    (v3,) = sc.step(now_us=int((now + 22 + 901) * S))  # the reset quiet for resolve_after_s
    assert [(v["id"], v["version"], v["status"], len(v["downstream"])) for v in (v1, v2, v3)] == [
        (v1["id"], 1, "open", 0), (v1["id"], 2, "open", 1), (v1["id"], 3, "resolved", 1)]

    am, hook = alertmanager
    settings = Settings(state_dir=tmp_path / "state", alertmanager_url=am.url, api_port=8080,
                        page_min_severity="warning", resolve_after_s=900)
    pager = Pager(settings, am_resend_s=0.3, backoff_base_s=0.05, backoff_max_s=0.3)

    def ours(version=None):
        return [a for a in am.alerts() if a["labels"].get("incident_id") == v1["id"]
                and (version is None or a["annotations"]["version"] == str(version))]

    async def go():
        async with running(pager):
            pager.enqueue([v1])
            [a] = await until(lambda: ours(1), "the notice's alert")
            assert a["annotations"]["scheduled"] == v1["scheduled"] and a["status"]["state"] == "active"
            await until(lambda: notified(hook, "firing"), "the firing notification")
            await asyncio.sleep(1.0)  # rounds of the pager's own quiet rule (_expire): its line is 30 min old
            assert [a["status"]["state"] for a in ours()] == ["active"] and notified(hook, "resolved") == []
            pager.enqueue([v2])
            [a] = await until(lambda: ours(2), "the reset's version")
            assert a["status"]["state"] == "active" and "scheduled" not in a["annotations"]
            await asyncio.sleep(1.0)  # past group_interval: an update of one alert notifies nothing new
            pager.enqueue([v3])
            await until(lambda: not ours(), "the alert to resolve")
            await until(lambda: notified(hook, "resolved"), "the resolved notification")

    asyncio.run(go())
    assert (notified(hook, "firing"), notified(hook, "resolved")) == ([v1["id"]], [v1["id"]])
    assert pager.db.execute("SELECT version, action FROM outbox WHERE incident_id = ? ORDER BY seq",
                            (v1["id"],)).fetchall() == [(1, "trigger"), (2, "trigger"), (3, "resolve")]
    pager.close()
