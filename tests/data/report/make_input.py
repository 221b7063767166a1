"""Writes the fixed input of the degraded-link report tests (run once; the output is committed).

    .venv/bin/python tests/data/report/make_input.py

``input/*.ndjson`` are the log lines. ``incidents.json`` is what the
correlator made of them (with ``fleet.yaml``) when this script last ran: a
snapshot, so the report's golden file changes only when the report does,
not whenever the correlation rules move. Events are named there by
:func:`event_key` (host, time, signature, GPU, link) rather than by event id,
which depends on how ingest names its sources; the tests map the keys back to
the ids the pipeline gives today.

What a fleet's NVML poller would ship through Vector: one NDJSON envelope
(``host``, ``timestamp``, ``message``) per ``nvidia-smi nvlink -s`` and
``nvidia-smi nvlink -e`` run, in the exact text shapes of formats.md §9.1-9.2,
plus one kernel line (Xid 74, formats.md §2.2). The report hour of the tests
is 2026-11-30T03; samples reach back into the previous day (24 h charts) and
one sample at 04:00 lies just past the hour. The scenario, per host:

* node07 (H100, rack12): GPU 1 link 5 CRC and replay counters rise in hours 02 and 03 (persisting);
  GPU 2 link 7 goes ``<inactive>`` at 03:20 and stays (new, down) with an Xid 74 naming link 7;
  GPU 3 link 2 goes up -> inactive -> up inside hour 03 (flapped).
* node08 (H100, rack12): GPU 0 link 11 inactive in every sample (down since the first, persisting);
  GPU 1 link 0 CRC counter reset (``nvidia-smi nvlink -re``) and then rising again (new).
* node09 (A100-SXM4, rack14): GPU 0 link 3 replay errors rise only in hour 02 (cleared in hour 03).
* node10 (A100 PCIe, no fleet-config entry): every link inactive by design (never listed).
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

HERE = Path(__file__).resolve().parent
T = datetime(2026, 11, 30, tzinfo=timezone.utc)
TIMES = [T - timedelta(hours=16), T - timedelta(hours=4)] + [
    T + timedelta(hours=h, minutes=m) for h, m in ((2, 0), (2, 20), (2, 40), (3, 0), (3, 20), (3, 40), (4, 0))]

HOSTS = {
    "node07": ("NVIDIA H100 80GB HBM3", 4, 18, "26.562"),
    "node08": ("NVIDIA H100 80GB HBM3", 4, 18, "26.562"),
    "node09": ("NVIDIA A100-SXM4-80GB", 4, 12, "25"),
    "node10": ("NVIDIA A100 80GB PCIe", 2, 12, None),
}


def hm(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M")


def state(host: str, gpu: int, link: int, t: datetime) -> bool:
    """True when the link is up at time ``t``."""
    if HOSTS[host][3] is None:
        return False
    if (host, gpu, link) == ("node07", 2, 7):
        return t < T + timedelta(hours=3, minutes=20)
    if (host, gpu, link) == ("node07", 3, 2):
        return hm(t) != "2026-11-30T03:20"
    if (host, gpu, link) == ("node08", 0, 11):
        return False
    return True


# (host, gpu, link, counter) -> {time "YYYY-MM-DDTHH:MM": value}; a value holds until the next entry
COUNTERS = {
    ("node07", 1, 5, "CRC Errors"): {"2026-11-29T08:00": 0, "2026-11-30T02:00": 2, "2026-11-30T02:40": 4,
                                     "2026-11-30T03:00": 10, "2026-11-30T03:20": 25, "2026-11-30T03:40": 55,
                                     "2026-11-30T04:00": 900},
    ("node07", 1, 5, "Replay Errors"): {"2026-11-29T08:00": 0, "2026-11-30T03:20": 3, "2026-11-30T03:40": 9},
    ("node07", 1, 5, "Recovery Errors"): {"2026-11-29T08:00": 0, "2026-11-30T03:40": 1},
    ("node08", 1, 0, "CRC Errors"): {"2026-11-29T08:00": 100, "2026-11-30T03:20": 3, "2026-11-30T03:40": 8},
    ("node09", 0, 3, "Replay Errors"): {"2026-11-29T08:00": 0, "2026-11-30T02:20": 7},
}


def counter(host: str, gpu: int, link: int, name: str, t: datetime) -> int:
    series = COUNTERS.get((host, gpu, link, name), {})
    v = 0
    for at, x in sorted(series.items()):
        if at <= hm(t):
            v = x
    return v


def header(gpu: int, model: str) -> str:
    return f"GPU {gpu}: {model} (UUID: GPU-00000000-0000-0000-0000-{gpu:012d})"


def nvlink_s(host: str, t: datetime) -> str:
    model, gpus, links, gbps = HOSTS[host]
    out = []
    for g in range(gpus):
        out.append(header(g, model))
        out += [f"         Link {k}: {gbps} GB/s" if state(host, g, k, t) else f"         Link {k}: <inactive>"
                for k in range(links)]
    return "\n".join(out)


def nvlink_e(host: str, t: datetime) -> str:
    model, gpus, links, gbps = HOSTS[host]
    out = []
    for g in range(gpus):
        out.append(header(g, model))
        for k in range(links):
            if state(host, g, k, t):
                out += [f"         Link {k}: {c}: {counter(host, g, k, c, t)}"
                        for c in ("Replay Errors", "Recovery Errors", "CRC Errors")]
    return "\n".join(out)


def main() -> None:
    for host, (_model, _g, _l, gbps) in HOSTS.items():
        recs = []
        for t in TIMES:
            stamp = t.strftime("%Y-%m-%dT%H:%M:%SZ")
            recs.append({"host": host, "timestamp": stamp, "message": nvlink_s(host, t)})
            if gbps is not None:
                recs.append({"host": host, "timestamp": stamp, "message": nvlink_e(host, t)})
        (HERE / "input" / f"{host}.nvml.ndjson").write_text("".join(json.dumps(r) + "\n" for r in recs))
    xid = ("NVRM: Xid (PCI:0000:5d:00): 74, pid='<unknown>', name=<unknown>, "
           "NVLink: fatal error detected on link 7(0x0, 0x0, 0x10000, 0x0, 0x0, 0x0, 0x0)")
    (HERE / "input" / "node07.dmesg.ndjson").write_text(
        json.dumps({"host": "node07", "timestamp": "2026-11-30T03:19:58Z", "message": xid}) + "\n")


def event_key(e: dict) -> str:
    """``node07 2026-11-30T03:19:58 xid gpu- link7``: an event of this input, told apart without its id."""
    return (f"{e['host']} {e['ts'].astimezone(timezone.utc):%Y-%m-%dT%H:%M:%S} {e['signature']} "
            f"gpu{'-' if e['gpu_index'] is None else e['gpu_index']} link{'-' if e['link'] is None else e['link']}")


def rekey(incidents: list[dict], names: dict[str, str]) -> list[dict]:
    """Incidents with every evidence event id replaced through ``names`` (id -> key, or key -> id)."""
    out = json.loads(json.dumps(incidents))
    for inc in out:
        inc["initiator"]["events"] = [names[e] for e in inc["initiator"].get("events", [])]
        for d in inc["downstream"]:
            d["events"] = [names[e] for e in d["events"]]
        for c in inc.get("context", []):
            c["event"] = names[c["event"]]
    return out


def snapshot_incidents() -> None:
    """Run the real pipeline and correlator over ``input/``; keep the incidents (``now`` fixed)."""
    from correlate.correlator import correlate, correlation_settings
    from ingest.files import decode_paths
    from ingest.pipeline import Pipeline
    from schemas.settings import Settings

    batch = Pipeline().run(decode_paths([HERE / "input"]))
    settings = Settings(fleet_config=HERE / "fleet.yaml")
    now_us = int(datetime(2026, 11, 30, 6, tzinfo=timezone.utc).timestamp()) * 1_000_000
    incidents = correlate(batch.events, batch.link_samples, batch.topology,
                          settings=correlation_settings(settings), now_us=now_us)
    keys = {e["event_id"]: event_key(e) for e in batch.events.to_pylist()}
    assert len(set(keys.values())) == len(keys), "event_key does not tell these events apart"
    (HERE / "incidents.json").write_text(json.dumps(rekey(incidents, keys), indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
    snapshot_incidents()
