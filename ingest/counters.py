"""Events from samples: an NVLink error counter that rose between two samples of the same link.

Pure: :func:`counter_events` takes the ``link_samples`` rows of a batch (in
``schemas.samples.LINK_SAMPLES_SCHEMA``) and the last value seen per counter
(``state``: (host, gpu, link, counter) -> (ts µs, value), updated in place) and
returns events rows for every increase of a counter the catalog's derived
signature names (CRC, replay, recovery …), with the delta and the rate per
second in ``details``. The event's ``message`` says both values (it is made
from two sample lines, each kept in ``link_samples``). A counter that went down was reset (driver reload,
``nvidia-smi nvlink -r``): no event, the new value is the base.

The state lives only as long as its process (a restart or a rebalance starts it empty: each counter's next
sample is its base). :func:`forget_quiet_hosts` forgets the counters of the hosts that sent no sample for
:data:`COUNTER_QUIET_S` of processing time, as a restart would: a fleet whose pods come and go (a new host name
per pod, ~600 counters each) grew the state by every counter the fleet ever had (issue 6).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pyarrow as pa

from ingest.catalog import Catalog
from schemas.events import make_event_id

State = dict[tuple, tuple[int, float]]

#: how long (s, processing time) a host may send no link sample before :func:`forget_quiet_hosts` forgets its
#: counters' last values: a week, far past any sampling interval (nvidia-smi every minute) or maintenance reboot
#: (which resets the counters anyway, so its next sample is a base either way)
COUNTER_QUIET_S = 7 * 86400.0
#: how often (s) the ingest worker forgets quiet hosts' counters (``forget_quiet_hosts``)
COUNTER_FORGET_EVERY_S = 3600.0


def counter_events(samples: pa.Table, catalog: Catalog, state: State | None = None) -> list[dict[str, Any]]:
    """Events rows (dicts, times in µs) for counter increases; see module doc."""
    state = {} if state is None else state
    derived = [c.sig for c in catalog.by_id.values() if c.rx is None]
    if samples.num_rows == 0 or not derived:
        return []
    rows = samples.to_pylist()
    ts_us = samples.column("ts").cast(pa.int64()).to_pylist()
    out: list[dict[str, Any]] = []
    order = sorted(range(len(rows)), key=lambda i: (ts_us[i], rows[i]["origin"]))
    for i in order:
        r = rows[i]
        counter, value = r.get("counter"), r.get("value")
        if counter is None or value is None:
            continue
        sig = next((d for d in derived if any(k in counter.lower() for k in d.counters)), None)
        if sig is None:
            continue
        gpu = r["device"] or (f"gpu{r['gpu_index']}" if r["gpu_index"] is not None else None)
        key = (r["host"], gpu, r["link"], counter)
        prev = state.get(key)
        state[key] = (ts_us[i], value)
        if prev is None or value <= prev[1] or ts_us[i] <= prev[0]:
            continue
        delta = value - prev[1]
        secs = (ts_us[i] - prev[0]) / 1e6
        origin = f"{r['origin']}#delta"
        out.append({
            "event_id": make_event_id(origin), "ts": ts_us[i], "ts_basis": "line", "host": r["host"],
            "source": sig.source, "kind": sig.kind, "signature": sig.id, "severity": sig.severity,
            "device_type": sig.device_type, "device": r["device"], "link": r["link"], "gpu_index": r["gpu_index"],
            "message": f"{counter} of GPU {r['gpu_index'] if r['gpu_index'] is not None else gpu} link {r['link']} "
                       f"on {r['host']}: {prev[1]:g} -> {value:g} (+{delta:g} in {secs:g} s)",
            "ts_precision_us": 1, "count": 1,
            "ingest_ts": ts_us[i], "origin": origin,
            "details": {"counter": counter, "from": prev[1], "to": value, "delta": delta,
                        "rate_per_s": round(delta / secs, 6), "since_us": prev[0], "model": r.get("model")},
        })
    return out


def forget_quiet_hosts(state: State, heard: dict[str, float], hosts: Iterable[str], now_s: float,
                       quiet_s: float = COUNTER_QUIET_S) -> int:
    """Note that ``hosts`` (those of a batch's link samples) were heard at processing time ``now_s`` (s, any
    monotonic clock) in ``heard`` (host -> s), then forget from ``state`` and ``heard`` every host heard last more
    than ``quiet_s`` before ``now_s``: its counters' next sample is their base, as after a restart. Returns the
    number of counters forgotten. ``state`` is scanned (~1 s over 6 M counters) whenever a host is forgotten: call it
    with no ``hosts`` at most every :data:`COUNTER_FORGET_EVERY_S` (a churning fleet forgets a host at nearly
    every batch), and note the hosts of each batch in ``heard`` directly in between."""
    for h in hosts:
        heard[h] = now_s
    gone = {h for h, t in heard.items() if now_s - t > quiet_s}
    if not gone:
        return 0
    for h in gone:
        del heard[h]
    stale = [k for k in state if k[0] in gone]
    for k in stale:
        del state[k]
    return len(stale)


def with_counter_events(events: pa.Table, samples: pa.Table, catalog: Catalog, state: State | None = None
                        ) -> pa.Table:
    """``events`` plus the counter-increase events derived from ``samples``."""
    from ingest.pipeline import to_table
    from schemas.events import EVENTS_SCHEMA

    rows = counter_events(samples, catalog, state)
    if not rows:
        return events
    return pa.concat_tables([events, to_table(rows, EVENTS_SCHEMA)])
