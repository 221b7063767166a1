"""Pages to the paging system: Prometheus Alertmanager (v2 API) and PagerDuty Events v2, through a durable outbox.

What is paged
    One page per incident whose severity is at or above ``page_min_severity``.
    Only incidents are paged: an incident's downstream reporters are named in
    the page (annotations / ``custom_details``), never sent as pages of their
    own. Two cases where the streaming correlator's output would otherwise page
    a reporter separately are handled here:

    * *superseded*: a later incident names, among its events, the initiator
      events of an open page (late evidence re-rooted the story, so the
      incident id changed): the old page is resolved, annotated
      ``superseded_by`` — whether the pager sees this first or the streaming
      correlator's last version of the old id with status ``superseded``;
    * *inhibited*: a new incident whose initiator events are downstream or
      context events of an open page is not paged.

    A page, once open, follows its incident whatever its later severity: each
    new version updates it, a ``resolved`` version resolves it, an ``open``
    version after a resolve re-triggers it. An incident first seen already
    resolved (late logs, or firstfault was down longer than ``resolve_after_s``)
    is still paged, as a trigger followed by its resolve, so no page is lost.
    The streaming correlator emits a ``resolved`` version of an incident that
    went quiet only while it still keeps the incident's events (it forgets
    them after the allowed lateness and the longest link window), so an open
    page whose last evidence (``end``) is older than ``resolve_after_s`` is
    resolved here too — the rule ``correlate.incident.finish`` applies.

Receivers and dedup keys
    The dedup key of an incident is its id. PagerDuty: ``dedup_key`` = id; a
    trigger with an open key updates that PagerDuty incident, ``resolve``
    closes it. Alertmanager identifies an alert by its label set, so labels are
    stable for the life of a page: ``alertname=FirstFaultIncident``,
    ``incident_id`` and ``severity``/``category``/``host`` *as first paged*
    (for routing); what changes goes to annotations. A firing alert carries
    ``endsAt = now + am_hold_s`` and open pages are re-sent every
    ``am_resend_s`` (default 60 s; hold 240 s, Prometheus's own 4× rule), so
    Alertmanager keeps them across its restarts (it keeps alerts in memory
    only) and lets them expire if firstfault stops for good. A resolve sends
    ``endsAt = now``.

Delivery: the outbox
    ``<state_dir>/pager/outbox.sqlite`` (SQLite, WAL, ``synchronous=FULL``).
    ``enqueue`` writes one entry per (incident id, version, receiver, action)
    — idempotent, so a replayed incident version adds nothing — in the same
    transaction as the page state. A new version's entry coalesces the
    incident's pending entry of the same action for the same receiver (``_put``:
    at most a trigger and a resolve per incident wait, however long a receiver is
    down). The dispatcher sends each receiver's pending
    entries oldest first (so an incident's versions arrive in order) and marks
    an entry done only after a 2xx. A connection error, 408, 429 or 5xx is
    retried with exponential backoff (equal jitter, ``backoff_base_s`` doubling
    up to ``backoff_max_s``, or longer when the receiver's ``Retry-After`` asks,
    up to an hour) for that receiver; so are a redirect (3xx: not
    followed, a POST must not turn into a GET) and 401, 403, 404, 405, 407 and
    426: the receiver's URL, scheme or credentials are wrong, which an operator fixes, and the
    page waits for it (they were marked rejected and never sent after the fix).
    Other 4xx are deterministic (the payload is wrong), so the entry is marked
    ``rejected`` and counted.

    Why a restart or an outage loses and duplicates no page: an entry leaves
    ``pending`` only after the receiver acknowledged it, so a crash before the
    acknowledgement re-sends it after restart. That re-send carries the same
    dedup key / label set and the same version's content, which both receivers
    treat as the same page (PagerDuty: a trigger for an open key is an update;
    Alertmanager: the same label set is the same alert, and its notification
    log does not notify an unchanged group again) — at-least-once delivery of
    idempotent messages, i.e. each incident version becomes a page exactly once.

Metrics: ``firstfault_pages_sent_total`` / ``firstfault_pages_failed_total``
(label ``receiver``; each acknowledged / failed delivery of an outbox entry)
and ``firstfault_pages_pending``. Alertmanager re-sends are not pages and are
not counted; their failures show in ``health()``.
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import fcntl
import logging
import os
import random
import socket
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import httpx
import orjson
from prometheus_client import Counter, Gauge

from api.render import RANK_REPORTS, candidate_hosts
from schemas.events import SEVERITY_RANK
from schemas.settings import Settings, without_userinfo

log = logging.getLogger("firstfault.pager")

SENT = Counter("firstfault_pages_sent_total", "outbox entries (trigger, update, resolve) a receiver acknowledged",
               ["receiver"])
FAILED = Counter("firstfault_pages_failed_total", "failed deliveries of outbox entries (every failed attempt)",
                 ["receiver"])
PENDING = Gauge("firstfault_pages_pending", "outbox entries waiting for delivery", ["receiver"])
OUTBOX_FAILED = Counter("firstfault_pager_outbox_failures_total",
                        "enqueues the pager outbox (SQLite under state_dir) refused: a full or read-only disk")


class OutboxError(OSError):
    """The pager outbox (``<state_dir>/pager/outbox.sqlite``) cannot be opened: the message names the file and the
    reason (a full or read-only state folder was a sqlite3 traceback at start: a break-it pass)."""


def hold_lock(path: Path) -> tuple[Any, str]:
    """``flock`` ``path`` (made if missing) and write this process's pid in it: (the open file, "") — the lock lasts
    while the file is open, and goes with the process however it ends, so a ``kill -9`` leaves no stale lock — or,
    when another open file holds it, (None, the pid written there or "?"). A holder may remove ``path`` while it
    holds it (a demo refused before it starts leaves no lock behind: ``api.demo.run_demo``): a lock got on the file
    it removed, no longer at ``path``, is let go and ``path`` locked afresh, so two never both hold "the" lock."""
    while True:
        f = open(path, "a+")  # noqa: SIM115 — the caller holds it open
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            f.seek(0)
            pid = f.read().strip() or "?"
            f.close()
            return None, pid
        try:
            if os.stat(path).st_ino == os.fstat(f.fileno()).st_ino:
                break
        except FileNotFoundError:
            pass
        f.close()  # removed by its holder between our open and our lock: that file locks nothing now
    f.truncate(0)
    f.write(str(os.getpid()))
    f.flush()
    return f, ""


def outbox_free(state_dir: Path) -> None:
    """Raise :class:`OutboxInUse` when another process holds ``state_dir``'s pager outbox (``Pager._hold``): asked
    before anything is started, a demo refused by the outbox had started a broker and written the sample logs into
    the topics live workers read (a break-it pass)."""
    lock_path = Path(state_dir) / "pager" / "outbox.lock"
    with _HELD_LOCK:
        if str(lock_path.resolve()) in _HELD or not lock_path.exists():
            return
        f, pid = hold_lock(lock_path)
        if f is not None:
            f.close()
            return
    raise OutboxInUse(_in_use(lock_path, pid))


def _in_use(lock_path: Path, pid: str) -> str:
    return (f"the pager outbox {lock_path.with_suffix('.sqlite')} is in use by another process (pid {pid}): give "
            "each correlate worker or `run` its own state_dir (FIRSTFAULT_STATE_DIR)")


#: the outbox locks this process holds (``Pager._hold``): resolved lock path -> [its open file, pagers holding it]
_HELD: dict[str, list[Any]] = {}
_HELD_LOCK = threading.Lock()


class OutboxInUse(OutboxError):
    """Another process (another correlate worker or ``run`` given the same ``state_dir``) holds the pager outbox."""


ALERTNAME = "FirstFaultIncident"
_RETRY_STATUS = {408, 425, 429}
#: a receiver's URL, proxy or credentials are wrong (module doc): retried with backoff until an operator fixes them
_CONFIG_STATUS = {401, 403, 404, 405, 407, 426}
_CLOSED = ("resolved", "superseded")  # incident statuses that close a page
#: inhibited incidents kept to be paged if the page that inhibited them closes (the oldest dropped past it)
INHIBITED_KEPT = 1_000
#: how long an outbox entry that is over (done, coalesced, rejected) is kept, seconds: a week of what was sent, for
#: an operator reading the outbox after an incident; then deleted (``Pager._prune``). The ``pages`` rows stay: they
#: say which versions were paged, so a replayed version is not paged again
OUTBOX_KEEP_S = 7 * 86400.0
#: how often the outbox is pruned, seconds
PRUNE_EVERY_S = 3600.0
_SCHEMA = """
CREATE TABLE IF NOT EXISTS outbox (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  incident_id TEXT NOT NULL, version INTEGER NOT NULL, receiver TEXT NOT NULL,
  action TEXT NOT NULL,                      -- trigger | resolve
  doc BLOB NOT NULL,                         -- page_view() of the incident version, JSON
  state TEXT NOT NULL DEFAULT 'pending',     -- pending | done | rejected | coalesced
  attempts INTEGER NOT NULL DEFAULT 0, created REAL NOT NULL, sent REAL, last_error TEXT,
  UNIQUE (incident_id, version, receiver, action));
CREATE INDEX IF NOT EXISTS outbox_pending ON outbox (receiver, state, seq);
CREATE TABLE IF NOT EXISTS pages (           -- one row per paged incident: its latest version
  incident_id TEXT PRIMARY KEY, version INTEGER NOT NULL,
  status TEXT NOT NULL,                      -- open | resolved: the page, not necessarily the incident
  doc BLOB NOT NULL,                         -- page_view() of the latest version, with page_labels
  initiator_events BLOB NOT NULL,            -- JSON list: to find pages a later incident supersedes
  explained_events BLOB NOT NULL);           -- JSON list: downstream + context events (inhibition)
CREATE TABLE IF NOT EXISTS storing (         -- versions this worker is about to store in the lake (Pager.storing)
  incident_id TEXT NOT NULL, version INTEGER NOT NULL, PRIMARY KEY (incident_id, version));
"""


# ---- pure payload builders ------------------------------------------------------------------------------


#: the longest wait a receiver's Retry-After is followed for, seconds (a larger one waits this long)
RETRY_AFTER_MAX_S = 3600.0


def retry_after_s(value: str, now: float) -> float:
    """Seconds a ``Retry-After`` header asks to wait (RFC 9110 §10.2.3: delay-seconds, ASCII digits, or an HTTP-date,
    read with :func:`email.utils.parsedate_to_datetime`), at most :data:`RETRY_AFTER_MAX_S`; 0 for none or a value
    that is neither (``²`` passed ``str.isdigit`` and raised in ``float``; 10**30 s never retried: a break-it pass).
    ``now``: the epoch seconds an HTTP-date is measured from."""
    value = value.strip()
    if not value:
        return 0.0
    if value.isascii() and value.isdigit():
        return min(float(value), RETRY_AFTER_MAX_S)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError, OverflowError):
        return 0.0
    if when.tzinfo is None:
        return 0.0
    return min(max(0.0, when.timestamp() - now), RETRY_AFTER_MAX_S)


def _iso(t: float) -> str:
    return datetime.fromtimestamp(t, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _epoch(s: str | None) -> float | None:
    return datetime.fromisoformat(s).timestamp() if s else None


def evidence_end(inc: dict[str, Any]) -> float | None:
    """When an incident's last evidence was written by the fleet's clock, epoch seconds: its ``end`` plus the largest
    clock offset of its hosts (its ``clocks``: ``correlate.window.estimate_clocks``), no earlier than the time
    ``correlate.incident.finish`` judges it quiet by. The ``end`` alone of a host whose clock ran 20 min behind
    resolved its page as soon as it was opened (a break-it pass). Its ``scheduled`` time when later (what a cloud
    maintenance notice announces, days ahead: the cloud's clock, no host offset), as ``finish`` holds it open until
    then: the page of a notice resolved fifteen minutes after it and fired again when its peers' resets came at that
    time (a defect pass). None without an ``end``; ValueError for one that is no ISO 8601 time."""
    end = _epoch(inc.get("end"))
    if end is None:
        return None
    offsets = [c.get("offset_s") for c in (inc.get("clocks") or {}).values() if isinstance(c, dict)]
    offsets = [o for o in offsets if isinstance(o, (int, float))]
    end = end + max(offsets) if offsets else end
    ahead = _epoch(inc.get("scheduled"))
    return end if ahead is None else max(end, ahead)


def api_base_url(host: str, port: int) -> str:
    """The API's base URL at ``host:port`` as a link for someone on another machine: a wildcard address
    (``0.0.0.0``, ``::``) as this machine's name, an IPv6 address in brackets."""
    if host in ("0.0.0.0", "::", ""):
        host = socket.gethostname()
    return f"http://{f'[{host}]' if ':' in host else host}:{port}"


def incident_url(base_url: str | None, incident_id: str) -> str | None:
    """The incident's page in the API at ``base_url``; None when no API is known to serve it (``Pager.base_url``)."""
    return f"{base_url.rstrip('/')}/incidents/{incident_id}" if base_url else None


def describe_initiator(inc: dict[str, Any]) -> str:
    """``NVLink 14 of GPU 0000:9a:00.0 on node01 (Xid 149)``, ``NVLinks 3, 5 of GPU index 3 on node011
    (nvlink_down)`` when its ``links`` are several; a link's own initiator (``device_type`` ``link``, both ends
    reporting it: correlate.patterns.both_ends) ``NVLink 1 of GPU 0000:01:00.0 to GPU 0000:41:00.0 on ws72
    (nvlink_down)``; ``rank 5 on node03 (nccl_timeout)``; ``node12 (fabric_manager)``, a fault of the host; ``no
    single culprit (node01)``."""
    i = inc.get("initiator") or {}
    host = i.get("host") or "unknown host"
    if not i.get("device_type"):
        if not i.get("kind"):  # candidates on several hosts: their hosts, not "unknown host" (api.render)
            return f"no single culprit ({i.get('host') or candidate_hosts(i) or host})"
        if i.get("rank") is not None:  # the silent rank of a hang
            return f"rank {i['rank']} on {host} ({i.get('fault') or i['kind']})"
        # a fault of the host itself (Fabric Manager, a daemon): the table says "node012 fabric_manager", the page
        # said "no single culprit (node012)" (a fresh user's trial)
        return f"{host} ({i.get('fault') or i['kind']})"
    dtype = {"gpu": "GPU", "nic": "NIC", "nvswitch": "NVSwitch", "pcie_port": "PCIe port",
             "link": "NVLink"}.get(i["device_type"], i["device_type"])
    dev = i.get("device") or (f"index {i['gpu_index']}" if i.get("gpu_index") is not None else "")
    what = f"{dtype} {dev}".strip()
    if i["device_type"] == "gpu" and i.get("kind") in RANK_REPORTS:
        # NCCL's report names the GPU its rank runs on, not a fault of the GPU (api.render.describe_initiator)
        rank = i.get("rank")
        what = f"the rank{f' {rank}' if rank is not None else ''} on {what}"
    port = i["device_type"] in ("nic", "nvswitch")
    links = i.get("links") or []
    if i["device_type"] == "link":
        # the link's links, its end and its far end, as the table says them ("ws72 link 0000:01:00.0 link 1 <->
        # 0000:41:00.0"): the page said "NVLink 0000:01:00.0 on ws72", no link and no other end (a fresh user's trial)
        nums = links if len(links) > 1 else [i["link"]] if i.get("link") is not None else []
        what = (f"{'NVLinks' if len(nums) > 1 else 'NVLink'} {', '.join(map(str, nums))} of GPU {dev or '(unnamed)'}"
                if nums else f"NVLink of GPU {dev or '(unnamed)'}")
        if i.get("peer"):
            what += f" to GPU {i['peer']}"
    if len(links) > 1 and i["device_type"] != "link":
        # every link of the initiator, as the table and the incident page say them ("links 3,5"): the page said
        # "NVLink 3 of GPU index 3" of V100 links 3 and 5 both inactive (a fresh user's trial)
        what = f"{'ports' if port else 'NVLinks'} {', '.join(map(str, links))} of {what}"
    elif i.get("link") is not None and i["device_type"] != "link":
        what = f"{'port' if port else 'NVLink'} {i['link']} of {what}"
    code = fault_code(i)
    return f"{what} on {host}" + (f" ({code})" if code else "")


def fault_code(party: dict[str, Any]) -> str | None:
    """A party's fault in a word or two: ``Xid 79``, ``SXid 12028``, else its ``fault`` (an initiator's: a silent
    rank's ``silent_rank``) or ``kind``."""
    if party.get("xid") is not None:
        return f"Xid {party['xid']}"
    if party.get("sxid") is not None:
        return f"SXid {party['sxid']}"
    return party.get("fault") or party.get("kind")


#: the downstream reporters a page names (``describe_downstream``) and keeps (``page_view``); the rest are counted
DOWNSTREAM_NAMED = 10


def describe_downstream(inc: dict[str, Any], limit: int = DOWNSTREAM_NAMED) -> str:
    """``3 downstream reporters: node01 gpu 0000:1b:00.0 Xid 74 (nvlink_peer); …`` or ``none``; of an incident or
    its ``page_view`` (whose ``downstream_total`` counts the reporters it does not keep). An incident with no single
    culprit names its candidates first, as the CLI's table and the incident page do: ``4 suspects: …``, then
    ``; 2 downstream reporters: …`` (its page called every candidate a downstream reporter: a fresh user's trial).
    A party's code is its ``Xid 45`` or ``SXid 12028`` where it has one, else its kind (``nccl_timeout``)."""
    ds = inc.get("downstream") or []
    if not ds:
        return "none"
    total = inc.get("downstream_total", len(ds))
    cands = set(candidate_parties(inc))
    # the parties named suspects are counted, not the candidate names: a host named as a candidate is the name of
    # each party on it that names no device, and "2 suspects" listed three, its reporters' count one short (a
    # break-it pass). A stored view keeps the suspects first: all of them are in it unless it holds suspects alone
    n_cands = len(cands)
    if cands and n_cands == len(ds) < total:
        n_cands = max(n_cands, min(len((inc.get("initiator") or {}).get("candidates") or ()), total))

    def party(d: dict[str, Any]) -> str:
        dev = f" {d['device_type'] or ''} {d['device']}".replace("  ", " ") if d.get("device") else ""
        rank = f" rank {d['rank']}" if d.get("rank") is not None else ""
        return f"{d.get('host')}{dev}{rank} {fault_code(d)} ({d.get('relation')})"

    def group(parts: list[str], n: int, noun: str) -> str:
        more = f"; and {n - len(parts)} more" if n > len(parts) else ""
        return f"{n} {noun}{'s' if n > 1 else ''}: " + "; ".join(parts) + more

    named = _suspects_first(inc)[:limit]
    out = []
    if n_cands:
        out.append(group([party(ds[i]) for i in named if i in cands], n_cands, "suspect"))
    if total > n_cands:
        out.append(group([party(ds[i]) for i in named if i not in cands], total - n_cands, "downstream reporter"))
    return "; ".join(out)


def _suspects_first(inc: dict[str, Any]) -> list[int]:
    """Indexes of ``inc['downstream']``: the :func:`candidate_parties` first, then the others in their order."""
    first = candidate_parties(inc)
    chosen = set(first)
    return first + [i for i in range(len(inc.get("downstream") or ())) if i not in chosen]


def candidate_parties(inc: dict[str, Any]) -> list[int]:
    """:func:`api.incident_render.candidate_parties` (imported when first needed: that module loads the page's
    templates)."""
    from api.incident_render import candidate_parties as parties

    return parties(inc)


def page_summary(inc: dict[str, Any], limit: int = 1024) -> str:
    """One line naming severity, category, initiator and next action (PagerDuty allows 1024 characters)."""
    s = f"[{inc['severity']}] {inc['category']}: {describe_initiator(inc)}. Next: {inc.get('next_action') or '-'}"
    return s if len(s) <= limit else s[:limit - 1] + "…"


def alert_labels(inc: dict[str, Any]) -> dict[str, str]:
    """The label set of an incident's alert; frozen at the first page (see module doc)."""
    labels = {"alertname": ALERTNAME, "incident_id": inc["id"], "severity": inc.get("severity"),
              "category": inc.get("category"), "host": (inc.get("initiator") or {}).get("host")}
    return {k: str(v) for k, v in labels.items() if v not in (None, "")}


def alertmanager_alert(incident: dict[str, Any], base_url: str | None, *, now: float | None = None,
                       hold_s: float = 240.0, labels: dict[str, str] | None = None) -> dict[str, Any]:
    """One postable alert of the Alertmanager v2 API (``POST /api/v2/alerts`` takes a list of these).

    ``now``: send time, epoch seconds. Firing (status ``open``): ``endsAt = now + hold_s``; resolved:
    ``endsAt = now``. ``startsAt`` is the incident start, but never after ``now`` (a host clock ahead
    must not make Alertmanager reject ``endsAt`` before ``startsAt``). ``labels`` default to
    :func:`alert_labels` of this version; the pager passes the labels of the first page."""
    now = time.time() if now is None else now
    url = incident_url(base_url, incident["id"])
    start = min(_epoch(incident.get("start")) or now, now)
    resolved = incident.get("status") in _CLOSED
    ann = {
        "summary": page_summary(incident),
        "description": incident.get("explanation") or "",
        "initiator": describe_initiator(incident),
        "category": str(incident.get("category")),
        "severity": str(incident.get("severity")),
        "next_action": incident.get("next_action") or "",
        "verify": "\n".join(incident.get("verify") or []),
        "downstream": describe_downstream(incident),
        "confidence": str(incident.get("confidence")),
        "version": str(incident.get("version")),
    }
    if url:
        ann["incident_url"] = url
    if incident.get("superseded_by"):
        ann["superseded_by"] = incident["superseded_by"]
    if incident.get("scheduled"):  # when what a notice announces happens: the alert fires until then
        ann["scheduled"] = incident["scheduled"]
    alert = {"labels": labels or alert_labels(incident), "annotations": ann, "startsAt": _iso(start),
             "endsAt": _iso(now if resolved else now + hold_s)}
    if url:  # optional in Alertmanager's API: absent rather than a link to an API that is not there
        alert["generatorURL"] = url
    return alert


def pagerduty_event(incident: dict[str, Any], routing_key: str, base_url: str | None) -> dict[str, Any]:
    """A PagerDuty Events v2 event: ``trigger`` for an open incident, ``resolve`` for a resolved (or
    superseded) one."""
    base = {"routing_key": routing_key, "dedup_key": incident["id"]}
    if incident.get("status") in _CLOSED:
        return base | {"event_action": "resolve"}
    url = incident_url(base_url, incident["id"])
    init = {k: v for k, v in (incident.get("initiator") or {}).items() if k != "events"}
    payload = {
        "summary": page_summary(incident),
        "source": init.get("host") or "firstfault",
        "severity": incident.get("severity") if incident.get("severity") in SEVERITY_RANK else "error",
        "timestamp": incident.get("start"),
        "component": " ".join(str(x) for x in (init.get("device_type"), init.get("device")) if x) or None,
        "group": incident.get("category"),
        "class": init.get("fault") or init.get("kind"),
        "custom_details": {
            "incident_id": incident["id"], "version": incident.get("version"),
            "initiator": describe_initiator(incident), "initiator_fields": init,
            "downstream": describe_downstream(incident), "explanation": incident.get("explanation"),
            "next_action": incident.get("next_action"), "verify": incident.get("verify") or [],
            "missing": incident.get("missing") or [], "confidence": incident.get("confidence"),
            "start": incident.get("start"), "end": incident.get("end"), "incident_url": url,
        },
    }
    if url is None:
        del payload["custom_details"]["incident_url"]
    return base | {
        "event_action": "trigger",
        "payload": {k: v for k, v in payload.items() if v is not None},  # optional fields: absent, not null
        "client": "firstfault",
    } | ({"links": [{"href": url, "text": f"firstfault incident {incident['id']}"}], "client_url": url} if url else {})


def page_view(inc: dict[str, Any]) -> dict[str, Any]:
    """What a page needs of an incident version: the DESIGN.md shape without event id lists, and of ``downstream``
    the first ``DOWNSTREAM_NAMED`` parties (what the page names: the suspects first), with ``downstream_total``
    counting them all: the outbox stores a view per version and receiver, and a job of 5,000 reporting ranks made
    each ~1 MB (a break-it pass)."""
    keys = ("id", "version", "status", "start", "end", "severity", "category", "confidence", "explanation",
            "next_action", "verify", "missing", "pattern", "superseded_by", "scheduled")
    view = {k: inc.get(k) for k in keys}
    view["initiator"] = {k: v for k, v in (inc.get("initiator") or {}).items() if k != "events"}
    ds = inc.get("downstream") or []
    view["downstream"] = [{k: v for k, v in ds[i].items() if k != "events"}
                          for i in _suspects_first(inc)[:DOWNSTREAM_NAMED]]
    view["downstream_total"] = inc.get("downstream_total", len(ds))
    with contextlib.suppress(ValueError, TypeError):
        view["evidence_end"] = evidence_end(inc)  # what ``_expire`` judges it quiet by
    return view


def _members(inc: dict[str, Any]) -> tuple[list[str], list[str]]:
    """(initiator event ids, downstream + context event ids)."""
    explained = [e for d in inc.get("downstream") or [] for e in d.get("events", [])]
    explained += [c["event"] for c in inc.get("context") or [] if c.get("event")]
    return list((inc.get("initiator") or {}).get("events", [])), explained


def _plan(paged: str | None, status: str) -> list[str]:
    """Actions for a new version, given the page's current state (None: never paged). ``superseded``
    (correlate.stream: late evidence gave the incident a new id) closes a page but never opens one."""
    if status not in _CLOSED:
        return ["trigger"]
    if paged == "open":
        return ["resolve"]
    return ["trigger", "resolve"] if paged is None and status == "resolved" else []


# ---- the pager ------------------------------------------------------------------------------------------


#: the bytes of a receiver's error answer read (its first 300 go into the error): the rest is not read
_ERROR_BODY_BYTES = 4096
#: a POST's whole exchange (connect, send, answer) may take this many times the per-step timeout (``timeout_s``)
_EXCHANGE_STEPS = 3
#: what an httpx error without a message means (``Pager._post``)
_NO_TEXT = {"ReadTimeout": "no answer within the read timeout", "ConnectTimeout": "no connection within the timeout",
            "WriteTimeout": "the request could not be sent within the timeout",
            "PoolTimeout": "no free connection within the timeout"}


@dataclass
class Receiver:
    """A paging endpoint and its delivery state (in memory; the outbox is the durable part)."""

    name: str  # "alertmanager" | "pagerduty"
    url: str
    failures: int = 0  # consecutive
    next_try: float = 0.0  # time.monotonic()
    last_error: str = ""
    last_success: float | None = None  # epoch seconds
    last_refresh: float = float("-inf")  # time.monotonic(), Alertmanager only


class Pager:
    """See module doc. Used from one asyncio loop; ``enqueue`` is synchronous (one SQLite transaction).

    ``public_url``: base URL of the API for incident links (default ``http://{api_host}:{api_port}``; the service
    that serves the API sets ``base_url`` to the address it listens on, and to None, no link, when it serves
    none). The receivers' URLs and a PagerDuty URL's routing key are checked with the settings
    (``schemas.settings``)."""

    def __init__(self, settings: Settings, *, clock: Callable[[], float] = time.time, public_url: str | None = None,
                 am_resend_s: float = 60.0, am_hold_s: float = 240.0, backoff_base_s: float = 1.0,
                 backoff_max_s: float = 300.0, timeout_s: float = 10.0, poll_s: float = 1.0) -> None:
        self.clock = clock
        self.base_url: str | None = public_url or api_base_url(settings.api_host, settings.api_port)
        self.min_rank = SEVERITY_RANK[settings.page_min_severity]
        self.resolve_after_s = settings.resolve_after_s
        self.routing_key = (settings.pagerduty_routing_key.get_secret_value()
                            if settings.pagerduty_routing_key else "")
        self.am_resend_s, self.am_hold_s = am_resend_s, am_hold_s
        self.backoff_base_s, self.backoff_max_s = backoff_base_s, backoff_max_s
        self.timeout_s, self.poll_s = timeout_s, poll_s
        self.receivers: list[Receiver] = []
        if settings.alertmanager_url:
            self.receivers.append(Receiver("alertmanager", settings.alertmanager_url.rstrip("/") + "/api/v2/alerts"))
        if settings.pagerduty_url:
            self.receivers.append(Receiver("pagerduty", settings.pagerduty_url))
        self.inhibited = 0
        self._wake: asyncio.Event | None = None
        path = self.path = Path(settings.state_dir) / "pager" / "outbox.sqlite"
        # health() may be called from another thread (the API's thread pool): one lock around the connection
        self._lock = threading.RLock()
        self._lock_key, self._released = "", True  # nothing held yet (_hold)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._hold(path.with_suffix(".lock"))
            self.db = sqlite3.connect(path, check_same_thread=False)
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=FULL")
            self.db.executescript(_SCHEMA)
        except OutboxInUse:
            raise
        except (sqlite3.Error, OSError) as e:
            self._release()  # held, then the outbox would not open: not held for good
            raise OutboxError(f"the pager outbox {path} cannot be opened: {e}") from e
        #: incident id -> its latest version the outbox refused (a full or read-only disk): enqueued first next time,
        #: so no page is lost while the process lives (one version per incident: bounded by the incidents)
        self.unqueued: dict[str, dict[str, Any]] = {}
        #: incident id -> its latest open version not paged because an open page explains its initiator
        self.inhibited_by: dict[str, dict[str, Any]] = {}
        self.outbox_error: str | None = None
        #: ``latest(ids)``: incident id -> the latest stored version of each of ``ids`` the lake holds
        #: (``IncidentSink.latest_versions``; None: no lake, pages are not followed); see ``_follow``
        self.latest: Callable[[list[str]], dict[str, dict[str, Any]]] | None = None
        self._followed = float("-inf")  # time.monotonic() of the last _follow that read the lake
        self._pruned = float("-inf")  # time.monotonic() of the last _prune
        self._following = False  # the last _follow read the lake: adopted pages are re-sent too (_refresh)

    def _hold(self, lock_path: Path) -> None:
        """Hold ``lock_path`` (``flock``, released when the process ends, however it ends) with this process's pid in
        it. Raises :class:`OutboxInUse` naming the other pid when another process holds it: two correlate workers
        given one ``state_dir`` both started and shared one outbox, which docs/operations.md forbids (a fresh user's
        trial)."""
        self._lock_key, self._released = str(lock_path.resolve()), False
        with _HELD_LOCK:
            held = _HELD.get(self._lock_key)
            if held is not None:  # this process's own (a sink made again, tests): one flock per process
                held[1] += 1
                return
            f, pid = hold_lock(lock_path)  # held open while a pager of this process lives (close)
            if f is None:
                raise OutboxInUse(_in_use(lock_path, pid))
            _HELD[self._lock_key] = [f, 1]

    def _release(self) -> None:
        """Let go of this pager's hold on the outbox's lock (once); the last of the process's pagers frees it."""
        with _HELD_LOCK:
            held = _HELD.get(self._lock_key)
            if held is not None and not self._released:
                self._released = True
                held[1] -= 1
                if held[1] <= 0:
                    held[0].close()
                    del _HELD[self._lock_key]

    def close(self) -> None:
        # versions the outbox refused that would page (at or above page_min_severity): said, as they are lost with the
        # process (every held version was named, those no page would follow too: a break-it pass)
        lost = sorted(i for i, inc in self.unqueued.items()
                      if SEVERITY_RANK.get(inc.get("severity"), 0) >= self.min_rank)
        if lost:
            log.error("the pager outbox %s never took %d incident version(s) to page; they are not paged: %s",
                      self.path, len(lost), ", ".join(lost[:10]), extra={"error_code": "outbox_failed"})
        with self._lock:
            self.db.close()
            self._closed = True
        self._release()  # the outbox is free for the next process of this state_dir

    @contextmanager
    def _tx(self) -> Iterator[None]:
        """One transaction, under the lock."""
        with self._lock, self.db:
            yield

    def _rows(self, sql: str, args: tuple[Any, ...] = ()) -> list[Any]:
        with self._lock:
            return self.db.execute(sql, args).fetchall()

    # -- enqueue (called by the service for every batch of incident versions) --

    def enqueue(self, incidents: list[dict[str, Any]]) -> int:
        """Record the pages these incident versions call for; return how many outbox entries were added
        (one per receiver and action; 0 for a version seen before, below the threshold, or inhibited)."""
        if not self.receivers:
            return 0
        for inc in incidents:  # the latest version of each, after those the outbox refused before
            held = self.unqueued.get(inc["id"])
            if held is None or inc["version"] >= held["version"]:
                self.unqueued[inc["id"]] = inc
        pending = list(self.unqueued.values())
        added = 0
        try:
            with self._tx():
                for inc in pending:
                    added += self._enqueue_one(inc)
                # incidents inhibited by a page that has closed since: paged now, unless another open page explains
                # them (a re-rooted incident whose initiator had been the old page's reporter was inhibited, then
                # the old page resolved, and the open incident had no page: a break-it pass)
                for inc in list(self.inhibited_by.values()):
                    n = self._enqueue_one(inc)
                    added += n
                    if n or self.db.execute("SELECT 1 FROM pages WHERE incident_id = ?", (inc["id"],)).fetchone():
                        self.inhibited_by.pop(inc["id"], None)
                # the versions noted before their lake write (``storing``) are in the outbox now
                self.db.executemany("DELETE FROM storing WHERE incident_id = ? AND version <= ?",
                                    [(i["id"], int(i["version"])) for i in pending])
        except sqlite3.Error as e:
            # a full or read-only state folder: the versions stay in memory and are enqueued with the next call (the
            # service died of it, with pages of versions already stored never queued: a break-it pass)
            OUTBOX_FAILED.inc()
            if self.outbox_error is None:
                log.error("the pager outbox %s refuses pages (%s): %d incident version(s) held until it takes them",
                          self.path, e, len(pending), extra={"error_code": "outbox_failed"})
            self.outbox_error = f"{type(e).__name__}: {e}"
            return 0
        if self.outbox_error is not None:
            log.warning("the pager outbox %s takes pages again (%d version(s) enqueued)", self.path, len(pending))
        self.unqueued, self.outbox_error = {}, None
        if added and self._wake is not None:
            self._wake.set()
        return added

    def storing(self, incidents: list[dict[str, Any]]) -> None:
        """Note ``incidents`` (versions: ``id``, ``version``) as about to be stored in the lake, before the lake write
        (``IncidentSink.emit``); ``enqueue`` clears the note. A worker that dies between the lake write and
        ``enqueue`` leaves a stored version no outbox has: at its restart ``adopt`` pages the versions noted here
        that the lake holds (they were taken for another worker's pages and never paged: a break-it pass). An outbox
        that refuses the note (a full or read-only disk) is said and the lake write goes on: the version is then
        paged by ``enqueue``, or, if the worker dies first, taken over as paged by ``adopt`` (as before the note)."""
        if not self.receivers or not incidents:
            return
        try:
            with self._tx():
                self.db.executemany("INSERT OR IGNORE INTO storing VALUES (?, ?)",
                                    [(i["id"], int(i["version"])) for i in incidents])
        except sqlite3.Error as e:
            OUTBOX_FAILED.inc()
            log.warning("the pager outbox %s could not note %d incident version(s) before storing them: %s",
                        self.path, len(incidents), e, extra={"error_code": "outbox_failed"})

    def _write_page(self, inc: dict[str, Any], status: str, view: dict[str, Any],
                    members: tuple[list[str], list[str]] | None = None) -> None:
        """The ``pages`` row of ``inc``'s version (new or replacing the incident's): ``status`` (open, resolved),
        ``view`` (``page_view`` with ``page_labels``) and ``members`` (``_members(inc)``, made when not given)."""
        initiator, explained = members or _members(inc)
        self.db.execute("INSERT OR REPLACE INTO pages VALUES (?, ?, ?, ?, ?, ?)",
                        (inc["id"], int(inc.get("version", 1)), status, orjson.dumps(view), orjson.dumps(initiator),
                         orjson.dumps(explained)))

    def _enqueue_one(self, inc: dict[str, Any]) -> int:
        row = self.db.execute("SELECT version, status, doc FROM pages WHERE incident_id = ?", (inc["id"],)).fetchone()
        if row is not None and inc["version"] <= row[0]:
            return 0  # this version (or a later one) is already in the outbox
        initiator, explained = _members(inc)
        if row is None and SEVERITY_RANK.get(inc.get("severity"), 0) < self.min_rank:
            return 0
        actions = _plan(row[1] if row else None, inc["status"])
        if row is None and not actions:
            return 0  # superseded before it was ever paged
        if (row is None or row[1] == "resolved") and self._explained_by_open_page(inc["id"], initiator):
            if inc["id"] not in self.inhibited_by:
                self.inhibited += 1
                log.info("incident %s not paged: its initiator is a downstream reporter of an open page", inc["id"])
            if inc["status"] not in _CLOSED:  # kept, to be paged if that page closes while this stays open
                self.inhibited_by[inc["id"]] = inc
                while len(self.inhibited_by) > INHIBITED_KEPT:
                    self.inhibited_by.pop(next(iter(self.inhibited_by)))
            else:
                self.inhibited_by.pop(inc["id"], None)
            return 0
        self.inhibited_by.pop(inc["id"], None)
        view = page_view(inc)
        view["page_labels"] = orjson.loads(row[2])["page_labels"] if row else alert_labels(inc)
        status = "resolved" if inc["status"] in _CLOSED else "open"
        self._write_page(inc, status, view, (initiator, explained))
        n = sum(self._put(view, a) for a in actions)
        if status != "open":  # a closed version re-roots nothing: the old id's last, superseded, version shares its
            return n  # events with the incident that superseded it, and resolved that page too (a break-it pass)
        return n + self._supersede(inc["id"], set(initiator) | set(explained))

    def adopt(self, stored: list[dict[str, Any]],
              first: Callable[[list[str], list[str]], dict[str, dict[str, Any]]] | None = None) -> int:
        """Take over the pages of stored incidents this outbox has never seen: the latest stored version of each
        (``IncidentSink.stored``, read when a correlate worker's correlator starts over: a start, a rebalance).
        Returns how many pages it took over; nothing is sent.

        Each correlate worker has its own outbox, but an incident moves between workers with its partition. The
        worker that stored an incident's version paged it, so a version at or above ``page_min_severity`` whose
        evidence is younger than ``resolve_after_s`` (the ``_expire`` rule) is taken as an open page, and one
        resolved (or older) as a closed one; superseded and lower versions are left alone. The taking worker's pager
        had none of them: the incident's next version was a new page, its resolved one a trigger and a resolve
        (PagerDuty opened a second incident for a dedup key the first worker had resolved), and its labels those of
        that version (Alertmanager: a second alert when the severity had changed since the first page: a break-it
        pass). ``first(ids, severities)``: the first stored version of each of ``ids`` whose severity is one of
        ``severities`` (the version the first worker paged; a failure is said and the stored one used): a page taken
        over keeps its labels. It is re-sent to Alertmanager once ``_follow`` has read the lake (then while its version
        is the latest stored: the same alert as the first worker's re-sends). One whose initiator a stored open
        incident names among its downstream or context events was not paged (inhibited): it is not taken over, so
        its next version is inhibited again. An incident stored while no receiver was configured is taken as paged
        too: configure receivers before the first incident. A version this outbox noted it was about to store
        (``storing``: the worker died between the lake write and ``enqueue``) is its own, never paged: it is
        enqueued now, and the notes are cleared (one the lake does not hold was never stored: the replay makes it
        again)."""
        if not self.receivers:
            return 0
        noted = {(i, v) for i, v in self._rows("SELECT incident_id, version FROM storing")}
        mine = [inc for inc in stored if (inc.get("id"), int(inc.get("version", 1))) in noted]
        if noted:
            with self._tx():
                for inc in mine:  # this worker's own versions, stored and never enqueued: paged as enqueue would
                    self._enqueue_one(inc)
                self.db.execute("DELETE FROM storing")
            if mine:
                log.warning("paging %d incident version(s) stored before this worker's last stop but never enqueued",
                            len(mine), extra={"error_code": "outbox_failed"})
                if self._wake is not None:
                    self._wake.set()
        todo = []
        for inc in stored:
            if inc.get("status") not in ("open", "resolved") or not isinstance(inc.get("id"), str) \
                    or SEVERITY_RANK.get(inc.get("severity"), 0) < self.min_rank:
                continue
            if not self._rows("SELECT 1 FROM pages WHERE incident_id = ?", (inc["id"],)):
                todo.append(inc)
        if not todo:
            return 0
        firsts: dict[str, dict[str, Any]] = {}
        if first is not None:
            try:
                firsts = first([i["id"] for i in todo], [s for s, r in SEVERITY_RANK.items() if r >= self.min_rank])
            except Exception as e:  # noqa: BLE001 — the stored version's labels are the next best
                log.warning("could not read the first paged versions of %d stored incident(s): %s", len(todo), e)
        # one a stored open incident explains was not paged (inhibited): left to the inhibition of its next version
        explains = {i["id"]: set(_members(i)[1]) for i in stored
                    if i.get("status") == "open" and SEVERITY_RANK.get(i.get("severity"), 0) >= self.min_rank}
        now, n = self.clock(), 0
        with self._tx():
            for inc in todo:
                if self.db.execute("SELECT 1 FROM pages WHERE incident_id = ?", (inc["id"],)).fetchone():
                    continue
                init = set(_members(inc)[0])
                if init and any(init & ex for iid, ex in explains.items() if iid != inc["id"]):
                    continue
                try:
                    end = evidence_end(inc)
                    labels = alert_labels(firsts.get(inc["id"]) or inc)
                    view = page_view(inc) | {"page_labels": labels, "adopted": True}
                except (ValueError, TypeError, KeyError, AttributeError):
                    continue  # a stored row no page can be made of: as before, its next version is a new page
                quiet = end is not None and now - end > self.resolve_after_s
                self._write_page(inc, "open" if inc["status"] == "open" and not quiet else "resolved", view)
                n += 1
        if n:
            log.info("took over %d page(s) of stored incidents this outbox had not seen", n)
        return n

    def _explained_by_open_page(self, iid: str, initiator: list[str]) -> bool:
        if not initiator:
            return False
        for (ex,) in self.db.execute("SELECT explained_events FROM pages WHERE status = 'open' AND incident_id != ?",
                                     (iid,)):
            if set(initiator) & set(orjson.loads(ex)):
                return True
        return False

    def _supersede(self, iid: str, members: set[str]) -> int:
        """Resolve open pages whose initiator is among this incident's events (see module doc)."""
        n = 0
        rows = self.db.execute("SELECT incident_id, doc, initiator_events FROM pages "
                               "WHERE status = 'open' AND incident_id != ?", (iid,)).fetchall()
        for pid, doc, init in rows:
            if members & set(orjson.loads(init)):
                log.info("page %s superseded by incident %s", pid, iid)
                n += self._resolve_page(pid, orjson.loads(doc), superseded_by=iid)
        return n

    def _resolve_page(self, pid: str, view: dict[str, Any], **note: Any) -> int:
        view = view | {"status": "resolved"} | note
        self.db.execute("UPDATE pages SET status = 'resolved', doc = ? WHERE incident_id = ?",
                        (orjson.dumps(view), pid))
        return self._put(view, "resolve")

    def _put(self, view: dict[str, Any], action: str) -> int:
        """Add ``action`` (trigger, resolve) of ``view`` for every receiver; the incident's pending entry of the same
        action, an older version, is coalesced (state ``coalesced``, never sent): both receivers keep a page's state by
        its key (Alertmanager: the label set; PagerDuty: ``dedup_key``), so its latest trigger says all an older one
        did, and a trigger still comes before the resolve that follows it. A receiver down for an hour, an incident
        updated every minute, had sixty versions of it sent one by one when it came back, the new pages behind them (a
        break-it pass: 20 incidents of 60 versions, 1,200 POSTs); at most a trigger and a resolve per incident wait."""
        return sum(self._put_one(view, action, r) for r in self.receivers)

    def _put_one(self, view: dict[str, Any], action: str, r: Receiver) -> int:
        """:meth:`_put` for one receiver ``r``: the incident's pending ``action`` of an older version coalesced, this
        version's added (0 when it is there already)."""
        self.db.execute("UPDATE outbox SET state = 'coalesced' WHERE incident_id = ? AND receiver = ? "
                        "AND action = ? AND state = 'pending' AND version < ?",
                        (view["id"], r.name, action, view["version"]))
        return self.db.execute("INSERT OR IGNORE INTO outbox (incident_id, version, receiver, action, doc, created) "
                               "VALUES (?, ?, ?, ?, ?, ?)",
                               (view["id"], view["version"], r.name, action, orjson.dumps(view), self.clock())).rowcount

    def _prune(self) -> int:
        """Delete the outbox entries that are over (done, coalesced, rejected) and older than :data:`OUTBOX_KEEP_S`;
        returns how many. Every version of every incident was kept for good, about 1 KB per version and receiver, so a
        service's outbox grew without end (a break-it pass). Pending entries and the ``pages`` rows are kept."""
        self._pruned = time.monotonic()
        try:
            with self._tx():
                n = self.db.execute("DELETE FROM outbox WHERE state IN ('done', 'coalesced', 'rejected') "
                                    "AND created < ?", (self.clock() - OUTBOX_KEEP_S,)).rowcount
        except sqlite3.Error as e:  # a full or read-only disk: pruning waits for the next time
            log.warning("could not prune the pager outbox: %s", e)
            return 0
        if n:
            log.info("pruned %d outbox entries older than %.0f days", n, OUTBOX_KEEP_S / 86400)
        return n

    def _expire(self) -> None:
        """Resolve open pages whose last evidence is older than ``resolve_after_s`` (see module doc)."""
        now = self.clock()
        with self._tx():
            for pid, doc in self.db.execute("SELECT incident_id, doc FROM pages WHERE status = 'open'").fetchall():
                view = orjson.loads(doc)
                # a page written before its view held ``evidence_end`` is judged by its ``end``
                end = view["evidence_end"] if "evidence_end" in view else _epoch(view.get("end"))
                if end is not None and now - end > self.resolve_after_s:
                    log.info("page %s resolved: no new evidence for %.0f s", pid, now - end)
                    self._resolve_page(pid, view)

    # -- dispatch --

    async def run_forever(self, stop: asyncio.Event) -> None:
        """Deliver pending pages and re-send open Alertmanager alerts until ``stop`` is set."""
        self._wake = asyncio.Event()
        try:
            async with httpx.AsyncClient(timeout=self.timeout_s) as client:
                while not stop.is_set():
                    try:
                        await self._round(client)
                    except Exception:  # a dead dispatcher would page nothing: log, wait, try again
                        log.exception("pager round failed; retrying")
                    waits = [asyncio.ensure_future(stop.wait()), asyncio.ensure_future(self._wake.wait())]
                    _, pending = await asyncio.wait(waits, timeout=self._next_due(),
                                                    return_when=asyncio.FIRST_COMPLETED)
                    for w in pending:
                        w.cancel()
                    self._wake.clear()
        finally:
            self._wake = None

    async def flush(self, timeout_s: float = 10.0) -> int:
        """Send everything pending now, retrying with backoff until done or ``timeout_s`` passes.
        Returns how many entries are still pending (0: all delivered or rejected)."""
        deadline = time.monotonic() + timeout_s
        async with httpx.AsyncClient(timeout=min(self.timeout_s, timeout_s)) as client:
            while True:
                await self._round(client, refresh=False)
                left = self.pending()
                if left == 0 or time.monotonic() >= deadline:
                    return left
                await asyncio.sleep(max(0.0, min(self._next_due(), deadline - time.monotonic())))

    def _next_due(self) -> float:
        now = time.monotonic()
        due = [now + self.poll_s]
        for r in self.receivers:
            if r.failures:
                due.append(r.next_try)
            elif r.name == "alertmanager":
                due.append(r.last_refresh + self.am_resend_s)
        return min(max(min(due) - now, 0.01), self.poll_s)

    async def _round(self, client: httpx.AsyncClient, *, refresh: bool = True) -> None:
        # one delivery round at a time: flush() and run_forever() may both be running, and two rounds
        # reading the same pending rows would send each page twice
        if not hasattr(self, "_round_lock"):
            self._round_lock = asyncio.Lock()
        async with self._round_lock:
            await self._round_locked(client, refresh=refresh)

    async def _round_locked(self, client: httpx.AsyncClient, *, refresh: bool) -> None:
        if self.unqueued:  # versions the outbox refused (a full disk): tried every round, not only when another
            self.enqueue([])  # incident changes (a held page was never sent once the space came back: a break-it pass)
        if self.latest is not None and time.monotonic() - self._followed >= self.am_resend_s:
            await self._follow()
        if time.monotonic() - self._pruned >= PRUNE_EVERY_S:
            self._prune()
        self._expire()
        for r in self.receivers:
            if time.monotonic() < r.next_try:
                continue
            await self._deliver(client, r)
            if refresh and r.name == "alertmanager" and not r.failures \
                    and time.monotonic() - r.last_refresh >= self.am_resend_s:
                await self._refresh(client, r)
        for r in self.receivers:
            PENDING.labels(receiver=r.name).set(self.pending(r.name))

    async def _deliver(self, client: httpx.AsyncClient, r: Receiver) -> None:
        rows = self._rows("SELECT seq, incident_id, version, action, doc FROM outbox "
                          "WHERE receiver = ? AND state = 'pending' ORDER BY seq", (r.name,))
        for seq, iid, version, action, doc in rows:
            try:
                view = orjson.loads(doc) | {"status": "resolved" if action == "resolve" else "open"}
                body = self._body(r, view)
            except (ValueError, TypeError, KeyError, AttributeError) as e:
                # a page no receiver can be sent (a start that is no time): rejected with the reason, not raised at
                # every round ahead of the pages behind it (a break-it pass)
                ok, retry, err = False, False, f"cannot build the page: {type(e).__name__}: {e}"
            else:
                ok, retry, err = await self._post(client, r, body)
            with self._tx():
                if ok:
                    self.db.execute("UPDATE outbox SET state = 'done', sent = ?, attempts = attempts + 1 "
                                    "WHERE seq = ?", (self.clock(), seq))
                else:
                    self.db.execute("UPDATE outbox SET state = ?, attempts = attempts + 1, last_error = ? "
                                    "WHERE seq = ?", ("pending" if retry else "rejected", err, seq))
            if ok:
                SENT.labels(receiver=r.name).inc()
                log.info("page %s v%s %s delivered to %s", iid, version, action, r.name)
                continue
            FAILED.labels(receiver=r.name).inc()
            if retry:
                log.warning("page %s v%s %s to %s failed (%s); retrying in %.1f s", iid, version, action, r.name,
                            err, r.next_try - time.monotonic())
                return  # the receiver is likely down: back off instead of trying the rest now
            log.error("page %s v%s %s rejected by %s: %s", iid, version, action, r.name, err)

    def _put_followed_resolve(self, view: dict[str, Any]) -> None:
        """Queue the resolve of ``view``'s page, as :meth:`_follow` found it resolved by another worker: for
        Alertmanager always — this worker's re-send (``_refresh``) may have reached Alertmanager after that worker's
        resolve (it read the lake before the resolved version was stored) and fired the alert again until its
        ``endsAt`` (``am_hold_s``; a fresh user's trial saw it active 1.5 s after the resolve); Alertmanager keeps one
        resolved alert per label set, so a second resolve notifies no one — and for any other receiver this worker
        still has an entry of the incident waiting for: its trigger, sent once the receiver is back, reached
        PagerDuty after the other worker's resolve and opened a page there that nothing resolved (a break-it pass).
        The resolve comes after it, as ``_put``'s do."""
        for r in self.receivers:
            if r.name != "alertmanager" and self.db.execute(
                    "SELECT 1 FROM outbox WHERE incident_id = ? AND receiver = ? AND state = 'pending' LIMIT 1",
                    (view["id"], r.name)).fetchone() is None:
                continue
            self._put_one(view, "resolve", r)

    async def _follow(self) -> None:
        """Bring the open pages up to the latest stored version of their incidents (``latest``): one another
        correlate worker stored since (the incident moved to it with its partition) is what the page says now —
        resolved when that version is closed (that worker sent the resolve; this one sends it to Alertmanager again,
        and to a receiver an entry of it still waits for, :meth:`_put_followed_resolve`), else open with its content,
        the labels kept, sending nothing. Called before ``_expire`` and the re-sends, at most every ``am_resend_s``.

        Each worker's outbox had only its own versions: the worker an incident had left kept re-sending its page to
        Alertmanager after the taking worker resolved it (the alert fired again: a second notification), and its
        ``_expire`` resolved the page by its old evidence while the taking worker's newer evidence kept it open; the
        taking worker did not re-send a page it took over (``adopt``), so when the first worker died Alertmanager let
        the alert expire (a break-it pass). Once followed, an open page at the latest version is re-sent by every
        worker that has it (the same labels and version: one alert). A lake that cannot be read is said and the
        pages are left as they are (taken-over pages are then not re-sent, as before)."""
        self._followed = time.monotonic()
        ids = [i for (i,) in self._rows("SELECT incident_id FROM pages WHERE status = 'open'")]
        if not ids:
            self._following = True
            return
        try:
            got = await asyncio.to_thread(self.latest, ids)
        except Exception as e:  # noqa: BLE001 — an injected lake read: storage errors of every kind
            if self._following:
                log.warning("could not read the latest stored versions of %d open page(s): %s", len(ids), e)
            self._following = False
            return
        self._following = True
        n = 0
        with self._tx():
            for iid, inc in got.items():
                row = self.db.execute("SELECT version, status, doc FROM pages WHERE incident_id = ?",
                                      (iid,)).fetchone()
                try:
                    if row is None or row[1] != "open" or int(inc["version"]) <= row[0]:
                        continue  # this worker's own version (or one it stored since the read) is the latest
                    view = page_view(inc) | {"page_labels": orjson.loads(row[2])["page_labels"], "adopted": True}
                    _epoch(inc.get("end"))
                except (ValueError, TypeError, KeyError, AttributeError):
                    continue  # a stored row no page can be made of: the page stays as it is
                status = "resolved" if inc.get("status") in _CLOSED else "open"
                self._write_page(inc, status, view | {"status": status})
                if status == "resolved":
                    self._put_followed_resolve(view | {"status": status})
                n += 1
        if n:
            log.info("%d open page(s) follow a later version another worker stored", n)

    async def _refresh(self, client: httpx.AsyncClient, r: Receiver) -> None:
        """Re-send every open page that has nothing pending, so Alertmanager neither expires nor forgets it; a page
        taken over (``adopt``) only once ``_follow`` has read the lake (else its first worker re-sends it)."""
        docs = [doc for doc in (orjson.loads(d) for (d,) in self._rows(
            "SELECT doc FROM pages WHERE status = 'open' AND incident_id NOT IN "
            "(SELECT incident_id FROM outbox WHERE receiver = ? AND state = 'pending')", (r.name,)))
                if self._following or not doc.get("adopted")]
        if docs:
            now = self.clock()
            body = [alertmanager_alert(d, self.base_url, now=now, hold_s=self.am_hold_s, labels=d["page_labels"])
                    for d in docs]
            ok, retry, err = await self._post(client, r, body)
            if not ok and not retry and len(body) > 1:  # refused whole (a 400 for one bad alert, a proxy's 413 for
                # the batch's size): each alone, so one alert does not keep the others from being re-sent
                sent = 0
                for alert in body:
                    one, retry, err = await self._post(client, r, [alert])
                    sent += one
                    if retry:
                        break
                ok = sent == len(body)
            if not ok:
                log.warning("re-sending %d open alerts to %s failed: %s", len(docs), r.name, err)
        # tried: the next re-send is am_resend_s away (a refusal that is not retried re-sent the batch at every round,
        # 175 times in 3 s: a break-it pass); a receiver that is down is retried by its backoff
        r.last_refresh = time.monotonic()

    def _body(self, r: Receiver, view: dict[str, Any]) -> Any:
        if r.name == "alertmanager":
            return [alertmanager_alert(view, self.base_url, now=self.clock(), hold_s=self.am_hold_s,
                                       labels=view.get("page_labels"))]
        return pagerduty_event(view, self.routing_key, self.base_url)

    async def _post(self, client: httpx.AsyncClient, r: Receiver, body: Any) -> tuple[bool, bool, str]:
        """POST ``body``; returns (acknowledged, worth retrying, error) and keeps the receiver's backoff."""
        code, headers, head = None, None, b""
        try:
            # one deadline for the whole exchange, and at most _ERROR_BODY_BYTES of an error's body: httpx's timeout
            # bounds each read, so a receiver that sent a byte every 2 s held every receiver's pages for ever while
            # health said ok, and an endless error body was read whole into memory (a break-it pass; encode/httpx#1450)
            deadline = asyncio.timeout(_EXCHANGE_STEPS * self.timeout_s)
            async with deadline, client.stream("POST", r.url, json=body) as resp:
                code, headers = resp.status_code, resp.headers
                if 200 <= code < 300:
                    r.failures, r.next_try, r.last_error, r.last_success = 0, 0.0, "", self.clock()
                    return True, False, ""
                async for chunk in resp.aiter_bytes():
                    head += chunk
                    if len(head) >= _ERROR_BODY_BYTES:
                        break
        except TimeoutError:
            if code is None:
                err, retry, after = f"no whole answer within {_EXCHANGE_STEPS * self.timeout_s:g} s", True, ""
            # else: the status and headers came, the body was slow: what came of it is enough (a slow 429 lost its
            # Retry-After and a 301 its advice, the receiver hit again at once: a second break-it pass)
        except httpx.HTTPError as e:  # httpx's timeouts carry no text: "ReadTimeout: " said nothing (a break-it pass)
            if code is None:
                why = str(e) or _NO_TEXT.get(type(e).__name__, "no detail")
                err, retry, after = f"{type(e).__name__}: {why}", True, ""
        if code is not None and headers is not None:
            err = f"HTTP {code}: {head[:300].decode('utf-8', 'replace')}"
            if 300 <= code < 400:
                to = without_userinfo(headers.get("location", "?"))[:300]
                err = f"HTTP {code}: redirected to {to!r}; set the receiver's URL to it"
            elif code in _CONFIG_STATUS:
                err += " (check the receiver's URL and credentials)"
            retry = code in _RETRY_STATUS or code in _CONFIG_STATUS or code >= 500 or 300 <= code < 400
            after = headers.get("retry-after", "")
        r.last_error = err
        if retry:
            r.failures += 1
            # the exponent capped: 2 ** 1024 is no float (a receiver down for ~63 h at the capped backoff raised at
            # every round and was retried every 10 ms: a break-it pass)
            d = min(self.backoff_max_s, self.backoff_base_s * 2 ** min(r.failures - 1, 64))
            d = d / 2 + random.uniform(0, d / 2)  # equal jitter: grows, yet receivers are not hit in lockstep
            r.next_try = time.monotonic() + max(d, retry_after_s(after, self.clock()))
        return False, retry, err

    # -- state --

    def pending(self, receiver: str | None = None) -> int:
        """Entries waiting for ``receiver`` (default: for any configured receiver)."""
        names = [receiver] if receiver else [r.name for r in self.receivers]
        return sum(self._rows("SELECT count(*) FROM outbox WHERE state = 'pending' AND receiver = ?", (n,))[0][0]
                   for n in names)

    def pending_incidents(self) -> int:
        """Incidents with an entry waiting for a configured receiver (a trigger and its resolve are two entries)."""
        names = [r.name for r in self.receivers]
        if not names:
            return 0
        marks = ", ".join("?" * len(names))
        return self._rows(f"SELECT count(DISTINCT incident_id) FROM outbox WHERE state = 'pending' "
                          f"AND receiver IN ({marks})", tuple(names))[0][0]

    def health(self) -> dict[str, Any]:
        """``ok`` is false while a receiver is failing; per receiver: pending entries, rejected entries,
        consecutive failures, the last error and the last success (ISO 8601 UTC, as every time the API gives; it was
        Unix seconds: a fresh user's trial)."""
        if getattr(self, "_closed", False):
            return {"ok": True, "closed": True}
        counts = {(rcv, st): n for rcv, st, n in self._rows(
            "SELECT receiver, state, count(*) FROM outbox WHERE state != 'done' GROUP BY receiver, state")}
        recv = {r.name: {"url": without_userinfo(r.url), "pending": counts.get((r.name, "pending"), 0),
                         "rejected": counts.get((r.name, "rejected"), 0), "consecutive_failures": r.failures,
                         "last_error": r.last_error,
                         "last_success": None if r.last_success is None else _iso(r.last_success)}
                for r in self.receivers}
        open_pages = self._rows("SELECT count(*) FROM pages WHERE status = 'open'")[0][0]
        return {"ok": all(r.failures == 0 for r in self.receivers) and self.outbox_error is None, "receivers": recv,
                "open_pages": open_pages, "inhibited": self.inhibited, "outbox_error": self.outbox_error,
                "unqueued": len(self.unqueued)}


def paging_trouble(health: dict[str, Any]) -> str:
    """What ``/healthz`` says of paging (:meth:`Pager.health`) when its receivers fail: "" while they answer. The
    service stays healthy (a restart would not bring Alertmanager back), but its reason was empty while every page
    waited (a fresh user's trial)."""
    if health.get("ok", True):
        return ""
    if health.get("outbox_error"):
        return (f"the pager outbox refuses pages ({health['outbox_error']}): {health.get('unqueued', 0)} incident "
                "version(s) held in memory until it takes them")
    down = [f"{name}: {r.get('last_error') or 'failing'}" for name, r in health.get("receivers", {}).items()
            if r.get("consecutive_failures")]
    return f"paging fails ({'; '.join(down)}): pages wait in the outbox and are sent when it answers"
