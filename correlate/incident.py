"""Render a verdict as an incident in the DESIGN.md shape (a contract: keep it).

Shape: ``id, start, end, severity, category, initiator{host, device_type,
device, link, rank, kind, xid, events}, downstream[{…, relation, events}],
confidence, explanation, next_action, verify, missing, recurrence{previous,
first_seen}``, plus fields DESIGN.md leaves open: ``version``, ``status``,
``context`` (events that are part of the story but neither initiator nor
downstream), ``evidence`` (the rule chain: rule, cause event, effect event,
relation), ``pattern``. Times are ISO 8601 UTC strings.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from operator import attrgetter
from typing import Any

from correlate.attribute import (RECOVERY_XID, SYMPTOM, S, Party, Scene, Verdict, catalog_action, fault_code,
                                 fault_name, first_of, initiator_event, lead_key, sentences, subject_label,
                                 verify_commands)
from correlate.model import Ev, process_group, subject_of, subject_rank
from correlate.patterns import APP_MAYBE_GPU, APP_NOT_GPU, APP_RECUR_ADVICE, recovery_action, recurs_to_diag
from correlate.topology import peer_name
from ingest.files import from_stdin
from ingest.catalog import Catalog
from ingest.extract import GPU_DRIVERS
from schemas.events import KIND_PHRASES, SEVERITY_RANK
from schemas.incidents import iso_us

_SEV_NAME = {v: k for k, v in SEVERITY_RANK.items()}


_EPOCH = datetime(1970, 1, 1)  # naive UTC: isoformat then adds no offset


def iso(us: int) -> str:
    """µs since the epoch -> ``2026-11-30T03:12:00.123456Z`` (``isoformat``, a third of ``strftime``'s cost; a year
    before 1000, which ``isoformat`` pads to four digits and ``strftime`` does not, as ``strftime`` says it)."""
    dt = _EPOCH + timedelta(microseconds=us)
    if dt.year < 1000:
        dt = datetime.fromtimestamp(us // 1_000_000, tz=timezone.utc).replace(microsecond=us % 1_000_000)
        return dt.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return dt.isoformat(timespec="microseconds") + "Z"


def current_until(inc: dict[str, Any]) -> int:
    """Until when (µs UTC) a stored incident (DESIGN.md's shape) may still gain evidence that is its own: its ``end``,
    or its ``scheduled`` time when it has one (``body``: a cloud maintenance notice's NotBefore, days after its line,
    when its peers' resets will come). A restart reads back the incidents current within its reach back
    (``correlate.stream.StreamCorrelator.restore``, ``api.sink.IncidentSink.recent_events``). ValueError for a time
    that is no ISO 8601 time."""
    return max(iso_us(inc["end"]), iso_us(inc["scheduled"])) if inc.get("scheduled") else iso_us(inc["end"])


def incident_id(events: list[Ev]) -> str:
    """Stable id: from the earliest logged member event (time, then event id; an operator's symptom only when
    the incident holds nothing else, with the logged line's time it was placed at when no time was given:
    ``details.placed``). Replays give the same id, and a symptom added to the logs leaves it; a report with no
    line to place it at keeps one id from run to run. An untimed symptom's event id was of the report alone, so
    "hang" on node01 gave the same incident id over two cases' different logs (a fresh user's trial: two hangs of
    one host would share a ticket): it is placed at a logged line when there is one, else its event id is also of
    its host's facts' origins (``correlator.symptom_events``)."""
    logged = [e for e in events if e.signature != SYMPTOM]
    first = min(logged or events, key=lambda e: e.order)
    key = first.event_id if logged or not first.details.get("placed") else f"{first.event_id}@{first.ts}"
    return "inc-" + hashlib.blake2b(key.encode(), digest_size=8).hexdigest()


def member_ids(inc: dict[str, Any]) -> list[str]:
    """The event ids an incident (the DESIGN.md shape) holds: its initiator's, each downstream party's, then
    its context's."""
    ids = list(inc["initiator"].get("events", []))
    for d in inc["downstream"]:
        ids.extend(d["events"])
    ids.extend(c["event"] for c in inc.get("context", []))
    return ids


def incident_hosts(inc: dict[str, Any]) -> set[str]:
    """The hosts an incident (the DESIGN.md shape) names: its initiator's, each downstream party's and each
    context event's."""
    hosts = {inc["initiator"].get("host")} | {d.get("host") for d in inc["downstream"]}
    hosts.update(c.get("host") for c in inc.get("context", []))
    hosts.discard(None)
    return hosts


def _lead(evs: list[Ev]) -> Ev:
    """The event that names a party: by ``attribute.lead_key`` (a line with a time of its own, the device's own
    report, before a file-dated line or a program's; an operator's report only when the party has nothing else),
    then the worst, then an Xid (``attribute.initiator_event``), then the earliest."""
    if len(evs) == 1:
        return evs[0]
    return min(evs, key=lambda e: (*lead_key(e), -e.sev, e.xid is None, e.order))


_ORDER = attrgetter("order")


def _party(host: str, dtype: str | None, dev: str | None, evs: list[Ev], relation: str | None) -> dict[str, Any]:
    main = _lead(evs)
    links = sorted({e.link for e in evs if e.link is not None})
    return {"host": host, "device_type": dtype if dtype != "rank" else None,
            "device": dev if dev and not dev.startswith(("gpu", "rank")) else main.device,
            "link": main.link if main.link is not None else (links[0] if links else None),
            "rank": subject_rank((host, dtype, dev), main.rank), "kind": main.kind, "xid": main.xid,
            "sxid": main.sxid, "gpu_index": main.gpu_index, "links": links or None, "relation": relation,
            "events": [e.event_id for e in sorted(evs, key=_ORDER)]}


def _with_rank(scene: Scene, p: dict[str, Any], evs: list[Ev]) -> dict[str, Any]:
    """Party ``p`` (a dict of :func:`_party`'s shape, changed in place and returned; ``evs`` its events) with the
    rank of its GPU when none of its lines named one: the rank NCCL's init lines placed on that GPU (its bus id)
    when its first event began (``Topology.gpu_rank``)."""
    if p.get("rank") is None and p.get("device_type") == "gpu" and p.get("device") and evs:
        p["rank"] = scene.topo.gpu_rank(p["host"], p["device"], min(evs, key=_ORDER))
    return p


def party_subject(p: dict[str, Any]) -> tuple:
    """The subject ``(host, device_type, device)`` a party of an incident object (``initiator``, a ``downstream``
    entry) stands for, keyed as its events' (:func:`correlate.model.subject_of`); so
    ``candidate_name(*party_subject(p))`` is how the incident's ``initiator.candidates`` names it."""
    return subject_of(p.get("host"), p.get("device_type"), p.get("device"), p.get("gpu_index"), p.get("rank"))


#: an xid-catalog.csv action that depends on the line's Fatal/Nonfatal word (Xid 144 – 148): "<common>; Fatal ->
#: <then>, Nonfatal -> <else>"
_FATAL_BRANCHES = re.compile(r"^(?P<common>.*?);\s*Fatal\s*->\s*(?P<fatal>[^,]+),\s*Nonfatal\s*->\s*(?P<nonfatal>.+)$")


def fatal_branch(action: str, fatal: bool | None) -> str:
    """``action`` (an xid-catalog.csv ``recommended_action``) for a line whose own word says ``fatal`` (the events
    column, read from ``Fatal``/``Nonfatal``; None when the line has none): of an action that gives both
    branches ("…; Fatal -> reset GPU, Nonfatal -> usually none", Xid 144 – 148, whose catalog note says "Line
    token Fatal/Nonfatal sets the real severity"), the one the line took, named first; any other action as it
    is."""
    m = _FATAL_BRANCHES.match(action) if fatal is not None else None
    if m is None:
        return action
    word, then = ("Fatal", m["fatal"]) if fatal else ("Nonfatal", m["nonfatal"])
    return f"the line says {word}: {then.strip()}; {m['common'].strip()}"


#: what to do for an SXid, by the action NVSentinel's SXid mapping gives it (sxid-catalog.csv ``nvsentinel_action``,
#: from NVIDIA/NVSentinel distros/kubernetes/nvsentinel/charts/nvswitch-health-monitor/sxiderrorsmapping.csv); the
#: catalog's meaning alone told nothing to do (SXid 12028, leptonai/gpud#338)
SXID_ACTIONS = {
    "IGNORE": "Nothing to do for the switch now; if it repeats, or the GPUs report NVLink errors (Xid 74, 45) with it, "
              "collect nvidia-bug-report.sh",
    "RESET_FABRIC": "Drain the node's jobs, then reset the fabric: restart Fabric Manager and reset the NVSwitches and "
                    "GPUs (nvidia-smi -r), or reboot the node",
    "WORKFLOW_NVLINK_POTENTIALY_FATAL_ERR": "It may stall NVLink traffic: watch the GPUs for Xid 74, 45 or 145 and the "
                                            "node's jobs; if they stall, drain the node and reset the fabric (restart "
                                            "Fabric Manager, reset the GPUs)",
    "UNEXPECTED_ERR_REPORT_ISSUE": "NVIDIA does not expect it: collect nvidia-bug-report.sh and report it; drain the "
                                   "node if its jobs fail",
    "INVESTIGATE_LINK_SI": "Check the signal integrity of the port's link: its error counters (nvidia-smi nvlink -e), "
                           "then its cable or connector; drain the node if it repeats",
    "RUN_FIELDDIAG": "Drain the node and run NVIDIA's field diagnostics on it",
    "CHECK_LINK_MECHANICAL_CONNECTIONS": "Check the port's mechanical connection (cable, connector, tray seating) and "
                                         "reseat it",
    "RESET_GPU": "Drain the node's jobs and reset the GPUs on the switch (nvidia-smi -r)",
    "CHECK_THERMALS": "Check the switch tray's temperature and cooling",
    "CHECK_FM_CONFIG": ("Check Fabric Manager's configuration (/usr/share/nvidia/nvswitch/fabricmanager.cfg) "
                        "and its log"),
}


#: the candidates whose own verify commands an incident with no single culprit lists (the first, in event order)
VERIFY_SUBJECTS = 16
#: the candidates whose own action an incident with no single culprit, one fault on every candidate, gives (when
#: it differs between them, as a reset's GPU index does); the rest are counted
ACTIONS_NAMED = 4
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def default_action(scene: Scene, v: Verdict) -> tuple[str, list[str]]:
    """Next action and verify commands from the initiator's catalog entry (or the Xid/SXid catalog)."""
    if not v.initiator_events:
        same = _one_fault_of_all(scene)
        if same:  # no single culprit, but one kind of fault on every candidate: its action, for each of them
            action, verify = default_action(scene, replace(v, initiator_events=same))
            by_key: dict[tuple, list[Ev]] = {}
            for e in same:
                by_key.setdefault(scene.subject[e.event_id], []).append(e)
            seen = set(verify)
            # and each one's checks, grouped once and at most VERIFY_SUBJECTS of them (16,000 GPUs of one job's log
            # took 48 s here, a scan of every event per subject: a break-it pass)
            for key, evs in list(by_key.items())[:VERIFY_SUBJECTS]:
                for c in verify_commands(scene.catalog, _lead(evs), key):
                    if c not in seen:
                        seen.add(c)
                        verify.append(c)
            # each candidate's own action where it names the candidate (a reset's `nvidia-smi -r -i N`): the first
            # candidate's alone told to reset one GPU of a link down at both ends (a fresh user's trial)
            base = _SENTENCE_END.split(action)
            slots: list[list[str]] = [[t] for t in base]  # each sentence of the first's, then the others' own
            said, differ = set(base), False  # differ: a candidate's action said something the first's did not
            for evs in list(by_key.values())[1:ACTIONS_NAMED]:
                # only what differs: the sentence that names this candidate, not the whole action again, beside the
                # first candidate's sentence it stands for (SGLang's "An SGLang scheduler (TP rank 1) died …" came
                # after the shared advice, as if a new finding: a fresh user's trial); at the end where the two
                # actions do not split into as many sentences
                own = _SENTENCE_END.split(default_action(scene, replace(v, initiator_events=evs))[0])
                other = [t for t in own if t not in said]
                if other:
                    said.update(other)
                    differ = True
                    for j, t in enumerate(own):
                        if t in other:
                            (slots[j] if len(own) == len(base) else slots[-1]).append(t)
            action = " ".join(t for slot in slots for t in slot)
            # once the actions name their candidates, the ones past ACTIONS_NAMED are counted (counted only when
            # the four named differed: two of them alike left the rest unsaid, a break-it pass)
            more = len(by_key) - ACTIONS_NAMED if differ and len(by_key) > ACTIONS_NAMED else 0
            return sentences(f"Every candidate reports the same fault ({fault_name(same[0])})", action,
                             f"the same for {more} more candidate{'s' * (more != 1)}" if more else ""), verify
        kinds = _kinds_of_faults(scene)
        if kinds:  # a few kinds of fault, each naming its cause: each one's own action, then what to collect
            parts, verify, seen = [], [], set()
            for evs in kinds:
                action, checks = default_action(scene, replace(v, initiator_events=evs))
                name = fault_name(evs[0])
                parts.append(action if action.startswith(name) else f"{name}: {action}")
                for c in checks:
                    if c not in seen and len(verify) < VERIFY_SUBJECTS:
                        seen.add(c)
                        verify.append(c)
            return sentences(f"No single culprit: {len(kinds)} kinds of fault, each with its own action", *parts,
                             COLLECT_HOSTS_NAMED), verify
        return COLLECT_HOSTS_NAMED, []
    main = initiator_event(scene, v.initiator_events)
    action = ""
    if main.xid is not None and main.xid in scene.catalog.xids:
        action = fatal_branch(scene.catalog.xids[main.xid].action, main.fatal)
        # times the naming Xid came: its lines of one second are one report (an Xid 74 on links 3 and 5 together was
        # "It did: 2 lines of Xid 74" beside "if it repeats": a fresh user's trial); a storm's count stands
        seconds: dict[int, int] = {}
        for e in v.initiator_events:
            if e.xid == main.xid:
                seconds[e.ts // S] = max(seconds.get(e.ts // S, 0), e.count)
        n = sum(seconds.values())
        if software_cause(scene.catalog, main.xid) and "software" not in action:
            software = (f"{f'It repeated ({n:,} times), so' if n > 1 else 'If it repeats,'} suspect the "
                        f"driver or GPU firmware as much as the GPU: NVIDIA's resolution of Xid {main.xid} includes "
                        "INVESTIGATE_SW (xid-catalog.csv). Compare the driver version with its branch's release "
                        "notes before replacing hardware")
            # a repeated one is a known driver bug as often as a GPU (corpus 023): that comes first then
            action = sentences(software, action) if n > 1 else sentences(action, software)
        elif n > 1 and "repeat" in action:
            # "nothing to do …; contact support if it repeats" after 40 of them (a break-it pass): it did
            action = sentences(action, f"It did: Xid {main.xid} came {n:,} times")
        action = sentences(action, registers_say(main))  # an Xid 74's registers, read (formats.md §2.2)
    elif main.sxid is not None and main.sxid in scene.catalog.sxids:
        f = scene.catalog.sxids[main.sxid]
        code, _, cls = f.action.partition("/")
        # the line's own word (Fatal, Non-fatal, Correctable: details.fatal_word) decides for this report, over the
        # catalog's class: 33 SXids are "fatal-or-non-fatal" there, and the driver says which each time
        word = str(main.details.get("fatal_word") or "")
        fatal = ("fatal" if main.fatal else "non-fatal") if word and main.fatal is not None else f.fatal
        whose = "The line says Fatal" if word and main.fatal else "The FM guide counts it fatal"
        if fatal == "fatal" and code in ("IGNORE", ""):  # fatal by the FM guide: not "nothing to do" (break-it)
            then = (f"{whose}: " + SXID_ACTIONS["RESET_FABRIC"][0].lower()
                    + SXID_ACTIONS["RESET_FABRIC"][1:] + "; if it repeats, collect nvidia-bug-report.sh")
        else:
            then = SXID_ACTIONS.get(code or "IGNORE", "")
            if code not in ("IGNORE", "") and fatal != "fatal":  # the two sources disagree: say whose word it is
                then = f"NVSentinel counts it {cls.lower() or 'fatal'}: {then[0].lower()}{then[1:]}"
        said = f"; this line: {word}" if word and word.lower() != f.fatal else ""
        action = sentences(f"SXid {f.sxid} ({f.name}, {f.fatal}{said}): {f.meaning}", then)
    subject = scene.subject.get(main.event_id)
    asked = next((a for e in v.initiator_events if (a := recovery_action(e))), None)
    if asked:  # the driver's own word for this GPU comes first (Xid 154's new recovery action)
        said = f"The driver asks for: {asked} (Xid 154, the GPU's recovery action)"
        # the catalog's own text for Xid 154 is only "do what the new action says"
        own = action or catalog_action(scene.catalog, main, subject)
        action = said if main.xid == RECOVERY_XID else sentences(said, own)
    # as sentences: the Xid catalog's actions are lowercase phrases ("drain node and reboot (cold); …"), beside the
    # signatures' sentences in the next incident of the same table (a fresh-user trial)
    action = action or catalog_action(scene.catalog, main, subject, also=v.initiator_events)
    return sentences(action), verify_commands(scene.catalog, main, subject)


#: what an incident with no single culprit asks for when its candidates' faults say nothing more
COLLECT_HOSTS_NAMED = "Collect the kernel log, NCCL_DEBUG=INFO output and nvidia-bug-report.sh from the hosts named."
#: the most kinds of fault whose own actions an incident with no single culprit lists (:func:`_kinds_of_faults`)
KINDS_LISTED = 4


def _kinds_of_faults(scene: Scene) -> list[list[Ev]]:
    """The faults nothing explains by kind (signature, Xid, SXid), when there are 2 to :data:`KINDS_LISTED` kinds
    and every kind names its cause (an Xid or SXid, or a category in the catalog), else ``[]``. Two NVSwitches of one
    host with two fatal SXids in one second (23001 and 11001) had no single culprit, and the next action was only
    "collect the kernel log", each SXid's own action lost (a real-logs pass); each kind's action is listed."""
    faults = _unexplained_faults(scene)
    kinds: dict[tuple, list[Ev]] = {}
    for e in faults:
        kinds.setdefault(_fault_kind(e), []).append(e)
    if not 2 <= len(kinds) <= KINDS_LISTED:
        return []
    for e, *_ in kinds.values():
        c = scene.catalog.by_id.get(e.signature)
        if e.xid is None and e.sxid is None and (c is None or not c.sig.category):
            return []
    return list(kinds.values())


def _fault_kind(e: Ev) -> tuple:
    """The kind of fault ``e`` is, as an incident with no single culprit counts them: its Xid or SXid when it has
    one, whichever line of the driver's report it came from, else its signature. SXid 12028 from one NVSwitch's
    ``Non-fatal, Link 62 …`` line (signature ``sxid``) and another's ``Data {…}`` line (``sxid.data``) was two kinds,
    and the next action gave SXid 12028's action twice (corpus 002, a fresh user's trial)."""
    if e.xid is not None or e.sxid is not None:
        return ("xid", e.xid, e.sxid)
    return ("signature", e.signature)


def _unexplained_faults(scene: Scene) -> list[Ev]:
    """The faults of ``scene`` nothing explains, but the effects of their own subject's faults, and only the Xids and
    SXids among them when there are any (:func:`_one_fault_of_all`)."""
    faults = [e for e in scene.events if e.signature != SYMPTOM and scene.is_fault(e) and not scene.explained(e)]
    # a fault its own subject's fault caused (an edge within the subject: a rank's teardown failure after its WARN,
    # nccl_warn.explains_its_teardown_failure) is that fault's effect, not a second kind of fault
    caused = {x.effect.event_id for x in scene.edges
              if scene.subject[x.cause.event_id] == scene.subject[x.effect.event_id]}
    faults = [e for e in faults if e.event_id not in caused] or faults
    # the kernel's Xids and SXids name the fault when there are any: NCCL's "P2P is disabled between NVLINK connected
    # GPUs" beside two GPUs' Xid 74 is their report, and it made the fault two kinds (the Xid 74 action lost for
    # "collect the kernel log": a fresh user's trial)
    return [e for e in faults if e.xid is not None or e.sxid is not None] or faults


def _one_fault_of_all(scene: Scene) -> list[Ev]:
    """The faults nothing explains when they are all one fault — one signature (and Xid or SXid) that names a cause
    (a category in the catalog, or an Xid/SXid) — on more than one subject, else ``[]``: several ranks whose
    /dev/shm is full, two GPUs each with the same Xid. Their catalog action applies to each (a break-it pass:
    two ranks' "No space left on device" got "collect the kernel log", the /dev/shm action lost)."""
    faults = _unexplained_faults(scene)
    if not faults or len({_fault_kind(e) for e in faults}) != 1:
        return []
    if len({scene.subject[e.event_id] for e in faults}) < 2:
        return []
    e = faults[0]
    c = scene.catalog.by_id.get(e.signature)
    if e.xid is not None or e.sxid is not None or (c is not None and c.sig.category):
        return faults
    # or one that its line's words give an action of its own (action_map), the same on all: two GPUs' NCCL "Cuda
    # failure 700" in one second (pytorch/pytorch#152780) got "collect the kernel log" (a real-logs pass)
    group = c.sig.severity_group if c is not None and c.sig.action_map else None
    said = {str(x.details.get(group, "")).lower() for x in faults} if group else set()
    return faults if len(said) == 1 and next(iter(said)) in c.sig.action_map else []


def _says(catalog: Catalog, e: Ev) -> str | None:
    """What ``e``'s line says in a few words: its signature's ``says``, else its kind's phrase (an NVML "Unable to
    determine the device handle" is no GPU that "fell off the bus", though it is of that kind)."""
    c = catalog.by_id.get(e.signature)
    return (c.sig.says if c else None) or KIND_PHRASES.get(e.kind)


def software_cause(catalog: Catalog, xid: int) -> bool:
    """Whether NVIDIA's resolution of ``xid`` includes investigating software (``INVESTIGATE_SW`` in the Xid
    catalog's ``nvidia_action``: Xid 60, 66, 110, 119, 120, 160, 161): a driver or firmware bug can print it,
    as early R525 drivers printed Xid 119 (GSP RPC timeouts, fixed in 525.105.17: NVIDIA/open-gpu-kernel-modules
    #446)."""
    fact = catalog.xids.get(xid)
    return fact is not None and "INVESTIGATE_SW" in fact.nvidia_action.replace("INVESTIGATE_SW_USER", "")


def counted_back_missing(v: Verdict) -> list[str]:
    """Wall-clock kernel times, when the initiator's time is a raw ``dmesg`` uptime counted back from its file's
    mtime (``ts_basis`` ``file`` without ``details.ts_upper_bound``): a copy or a later write of the file moves
    them, and with them the order against other hosts' lines (a fresh user's trial: a copied raw dmesg made the
    GPU's fall its own incident, and nothing asked for ``dmesg -T``)."""
    counted = [e for e in v.initiator_events if e.ts_basis == "file" and not e.undated()]
    hosts = sorted({e.host for e in counted})
    if not hosts:
        return []
    # standard input's lines were counted back from when it was read (a fresh user's trial: "the file's modification
    # time" beside an explanation that said standard input)
    back = ("the time standard input was read, not when they were written" if all(from_stdin(e.origin) for e in counted)
            else "the file's modification time, which a copy or a later write moves")
    return [f"wall-clock times for the kernel lines of {first_of(hosts, noun='hosts')} (dmesg -T, journalctl -k): "
            f"their raw uptime stamps were counted back from {back}"]


def year_missing(scene: Scene) -> list[str]:
    """The year of the scene's lines whose stamps print none and took it from their file's time (``details.
    ts_year_from`` ``file``: ``ingest.assemble.resolve_times``): a copied old log lands in the year of its copy. Said
    whatever the incident's first line (a hang of no single culprit has none; a fresh user's trial)."""
    # (standard input's lines took the year it was read: this machine's live log, `journalctl -k | … diagnose -`)
    hosts = sorted({e.host for e in scene.events
                    if e.details.get("ts_year_from") == "file" and not from_stdin(e.origin)})
    if not hosts:
        return []
    return [f"the year of the lines of {first_of(hosts, noun='hosts')}: their stamps print none, and it was taken from "
            "their file's time (a log of the same job or host that prints dates gives it, or copy files with `cp -p`)"]


def software_missing(scene: Scene, v: Verdict) -> list[str]:
    """What to look up when the initiator is an Xid with a software cause (:func:`software_cause`): its host's
    driver version against the branch's release notes decides between a known driver bug and the GPU. The version is
    printed at driver load, usually hours before the Xid: an Xid after that line in the same stream carries it
    (``details.driver_version``), and it is quoted; otherwise asked for."""
    init = [e for e in v.initiator_events if e.xid is not None and software_cause(scene.catalog, e.xid)]
    if not init:
        return []
    why = (f"NVIDIA's resolution of Xid {init[0].xid} includes INVESTIGATE_SW, and some driver branches print it for a "
           "bug a later release fixes")
    version = next((e.details["driver_version"] for e in init if e.details.get("driver_version")), None)
    if version:  # the kernel log printed it at driver load (``ingest.assemble.carry_context``): no need to ask for it
        return [f"the release notes of driver {version} (what {init[0].host}'s kernel log says it loaded) and of its "
                f"branch's later releases: {why}"]
    return [f"the driver version of {init[0].host} against its branch's release notes (`nvidia-smi`, or the "
            f"kernel's `NVRM: loading NVIDIA UNIX … Kernel Module <version>` line): {why}"]


def body(scene: Scene, v: Verdict) -> dict[str, Any]:
    """The incident object for one verdict (see module doc) but ``version``, ``status`` and ``recurrence``
    (None, in their places; :func:`finish` sets them): a function of the scene and the verdict alone, so a
    cached attribution keeps it (``correlator.AttributionCache``). Not to be changed in place: :func:`finish`
    copies it."""
    evs = scene.events
    faults = scene.faults() or evs
    worst = max(e.sev for e in faults)
    severity = v.severity or _SEV_NAME[worst]
    action, verify = default_action(scene, v)
    # an operator's report given no time is placed at its host's first line (api.diagnose.place_symptoms): it
    # dates nothing when logged events are here (a silent host's report moved a hang's start an hour back to the
    # host's NCCL init line: a fresh user's trial)
    dated = [e for e in evs if not (e.signature == SYMPTOM and e.details.get("untimed"))] or evs
    # the start is the first fault's: context before it (Fabric Manager's "Successfully configured" line, a
    # communicator's init) is the scene, not the incident (an FM incident began at its healthy INFO line, 14 min
    # before its first error: NVIDIA/nccl#1043, a real-logs pass)
    first = [e for e in dated if scene.is_fault(e)] or dated
    first = _known_first(first)
    # a notice's start is when the VM goes (``Ev.start``: its NotBefore, maybe days ahead); the incident began when
    # the notice was written, not after its end
    start = min(min(e.start, e.ts) for e in first)
    end = max(max(e.ts, e.last_ts or 0) for e in dated)  # a storm's last copy (an Xid 74 every 30 s, folded)
    # what a notice says happens later (a cloud maintenance's NotBefore, days ahead: ``Ev.ahead``): the incident is
    # open until then (``finish``), paged until then (``api.pager.evidence_end``) and read back after a restart until
    # then (``current_until``). Judged by its line alone it was "resolved" fifteen minutes after the notice and open
    # again when its peers' resets came at that time: the page resolved and fired again (a defect pass)
    ahead = max((t for e in dated if (t := e.ahead()) is not None), default=end)
    evidence = [{"rule": x.rule, "cause": x.cause.event_id, "effect": x.effect.event_id, "relation": x.relation}
                for x in v.edges or scene.edges]
    init = _with_rank(scene, dict(v.initiator), v.initiator_events)
    explanation = v.explanation or _explain(scene, v, init.get("rank"))
    init.setdefault("fault", _fault(scene, v))
    untied = [p for p in v.downstream if untied_before(scene, v, p)]
    comms = scene.relations().comms  # rules.comms_of, once per event of the scene
    downstream = [_with_rank(scene, _party(p.key[0], p.key[1], p.key[2], p.events, p.relation), p.events)
                  for p in v.downstream if p not in untied]
    context = [*v.context, *(e for p in untied for e in p.events)]
    # the id is of the events the incident names (``member_ids``), not of a scene line it leaves out (a DCGM diag
    # table's "Fail - All" row before the links a benign pattern names): a streaming correlator keeps an emitted
    # incident's members, forgets the rest, and gave the incident a new id once that line was gone (a break-it pass)
    named = {m for m in init.get("events") or ()} | {m for d in downstream for m in d["events"]} | {
        e.event_id for e in context}
    return {
        "id": incident_id([e for e in evs if e.event_id in named] or evs),
        "version": None,
        "status": None,
        "start": iso(start),
        "end": iso(end),
        # when the evidence says what it announces happens, after ``end`` (ISO 8601 UTC); absent when nothing does
        **({"scheduled": iso(ahead)} if ahead > end else {}),
        # where the start time came from (events' ts_basis): "kafka"/"file"/"inherited" mean the log line
        # printed no usable time and the arrival or file time stands in; of events that start together, a logged
        # line's (an operator's report placed at a line's time does not make that start untimed)
        "start_basis": min(first, key=lambda e: (e.start, e.signature == SYMPTOM, e.order)).ts_basis,
        "severity": severity,
        "category": v.category,
        "initiator": init,
        "downstream": downstream,
        "context": [{"host": e.host, "kind": e.kind, "signature": e.signature, "event": e.event_id}
                    for e in sorted(context, key=lambda e: e.order)],
        "confidence": v.confidence,
        "explanation": explanation,
        "next_action": v.next_action or action,
        "verify": v.verify or verify,
        "missing": v.missing + [m for m in software_missing(scene, v) + counted_back_missing(v) + year_missing(scene)
                                if m not in v.missing],
        "recurrence": None,
        "pattern": v.pattern,
        "evidence": evidence,
        # the NCCL communicators (commIds) its events are of: their own, or membership from the init lines
        # (rules.comms_of). A watchdog timeout prints none, so a hung job's incident could not be found by its commId
        # (GET /incidents?comm=, blast_radius.communicators: a fresh user's trial)
        "communicators": sorted({c for e in evs if e.signature != SYMPTOM for c in comms(e)}),
    }


def known_before(e: Ev, t: int) -> bool:
    """``e`` began before ``t`` (µs) as far as its time tells: not a line that printed no time, took an earlier
    stamped line's and may have been written at ``t`` or after (its span, ``details.ts_until`` µs, the latest it may
    have been written: ``ingest.assemble._span_inherited``). Such a line says its fault came after that stamped line,
    not when (a ``[rank5]: RuntimeError: CUDA error: uncorrectable ECC error encountered`` under the job's NCCL init
    line, four hours before the Xid 48 it reports: a scenario trial)."""
    return e.start < t and (not e.spanned or e.details["ts_until"] < t)


def _known_first(evs: list[Ev]) -> list[Ev]:
    """The events of ``evs`` that may date an incident's start, its earliest evidence: each but a line whose
    inherited time spans (:func:`known_before`) to the earliest start of the others. Such a line started the
    incident of the Xid 48 it reports four hours early, with a "~" (a scenario trial). All of ``evs`` when each is
    such a line."""
    known = [e for e in evs if not e.spanned]
    if len(known) in (0, len(evs)):
        return evs
    first = min(e.start for e in known)
    return known + [e for e in evs if e.spanned and known_before(e, first)]


def untied_before(scene: Scene, v: Verdict, p: Party) -> bool:
    """A party in the incident's window that no rule ties to its one initiator and whose logged faults all came
    before the initiator's first: no downstream reporter of it (an Xid 13 on another GPU 30 s before an Xid 79 was
    listed downstream, as if the Xid 79 had caused it: a fresh user's trial). ``correlator.apart`` makes it an
    incident of its own (it was the incident's context, which then started at it, 30 s before the Xid 79 with no
    "~": a fresh user's second trial); where a scene still holds one, its lines are the incident's context and the
    explanation names it ("which came first")."""
    if p.rule or v.initiator.get("device_type") is None or not v.initiator_events:
        return False
    first = min(e.start for e in v.initiator_events)
    own = [e for e in p.events if e.signature != SYMPTOM and scene.is_fault(e)]
    return bool(own) and all(known_before(e, first) and not e.undated() for e in own)


def last_evidence_us(body: dict[str, Any], scene: Scene, offsets_us: dict[str, int] | None = None,
                     latest_us: dict[str, int] | None = None) -> int:
    """The time (µs, the fleet's clock) an incident's quiet is counted from (:func:`finish`: ``resolved`` once
    ``now_us`` is more than ``resolve_after_us`` past it): its latest event's ``ts`` moved by its host's clock offset
    (``offsets_us``, host -> µs to add; ``latest_us``: host -> the latest ``ts`` of its events in ``scene`` when the
    caller keeps it, else read from the events), or its ``scheduled`` time when later (a notice is open until what it
    announces happens; the cloud's time, no host offset)."""
    off = offsets_us or {}
    if latest_us is not None:  # the latest of a host's events stays its latest with the host's offset added
        last = max(t + off.get(h, 0) for h, t in latest_us.items())
    else:
        last = max(e.ts + off.get(e.host, 0) for e in scene.events)
    if body.get("scheduled"):
        last = max(last, iso_us(body["scheduled"]))
    return last


def finish(body: dict[str, Any], scene: Scene, v: Verdict, *, now_us: int, resolve_after_us: int,
           previous: list[dict[str, Any]] | None = None, version: int = 1,
           offsets_us: dict[str, int] | None = None, latest_us: dict[str, int] | None = None) -> dict[str, Any]:
    """A copy of ``body`` (made of ``scene`` and ``v``) with ``version``; ``status`` (``resolved`` once its last
    event is older than ``resolve_after_us`` at ``now_us``, µs, each event's time moved by its host's clock offset,
    ``offsets_us``: ``window.estimate_clocks``, host -> µs to add; else ``open``); and ``recurrence``: the earlier
    incidents of ``previous`` with the same initiator (that started no later than this one, each once: the
    streaming correlator passes its emitted incidents, later ones too), not this incident's own emitted
    versions (it re-renders an emitted incident at each step) nor one it superseded (the same fault).
    ``latest_us``: host -> the latest ``ts`` (µs) of its events in ``scene`` when the caller keeps it (the
    attribution cache's), else read from the events."""
    this = body["id"]
    prev = list({p["id"]: p for p in (previous or []) if p["id"] != this and p.get("status") != "superseded"
                 and p["start"] <= body["start"] and _same_initiator(p, v.initiator)}.values())
    inc = dict(body)
    inc["version"] = version
    # quiet by the fleet's clock, not the host's: the Xid 79 of a host whose clock ran 20 min behind came out
    # "resolved" the moment it was emitted, and was paged as a trigger and its resolve at once (a break-it pass)
    last = last_evidence_us(body, scene, offsets_us, latest_us)
    inc["status"] = "resolved" if now_us - last > resolve_after_us else "open"
    inc["recurrence"] = {"previous": [p["id"] for p in prev],
                         "first_seen": min([p["start"] for p in prev] + [body["start"]])}
    # the on-call engineer reads the explanation: a fault that came back is escalated, not handled anew. Only the same
    # fault of the same subject, earlier (not one of the same start: the stream's incident it is about to supersede),
    # and not a program's: an Xid 13 before an Xid 79 of the GPU is no recurrence of the Xid 79 (a break-it pass)
    # an initiator timed only by its file's time (an upper bound: written then or any time before) may be the earlier
    # one itself, seen again: a node condition that repeats the Xid 95 its kernel log printed months before, read from
    # `kubectl describe node`, was "It recurred" (a break-it pass); such an incident is listed under recurrence, not
    # called one. A Kafka record's append time is no such bound: a raw dmesg line shipped as written (a second
    # break-it pass: two Xid 79s 14 days apart lost their recurrence)
    proven = not v.initiator_events or any(not (e.undated() and e.ts_basis == "file") for e in v.initiator_events)
    prev_before = [p for p in prev if p["start"] < body["start"]] if proven else []
    again = [p for p in prev_before if _same_fault(p, body)]
    if again:
        inc["explanation"] = (f"{body['explanation']} It recurred: {len(again)} earlier incident(s) had the same "
                              f"fault on the same initiator, the first at {min(p['start'] for p in again)} "
                              f"({first_of([p['id'] for p in again], 3)}).")
    # a program's Xid again on the same GPU, in an earlier incident: NVIDIA's advice for application Xids that repeat
    # on one GPU (pytorch/pytorch#51382: three processes' Xid 31 on one GPU in 50 minutes, each "Node healthy")
    apps = [p for p in prev_before if p.get("category") == "application"
            and recurs_to_diag(scene.catalog, p["initiator"].get("xid"))] if (
        body.get("category") == "application" and recurs_to_diag(scene.catalog, body["initiator"].get("xid"))) else []
    if apps:
        inc["explanation"] = (f"{inc['explanation'].replace(APP_NOT_GPU, APP_MAYBE_GPU, 1)} It recurred: {len(apps)} "
                              f"earlier incident(s) of application Xids "
                              f"on this GPU, the first at {min(p['start'] for p in apps)} "
                              f"({first_of([p['id'] for p in apps], 3)}).")
        inc["next_action"] = APP_RECUR_ADVICE.format(what=f"{len(apps) + 1} incidents on this GPU")
        if SEVERITY_RANK[inc["severity"]] < SEVERITY_RANK["warning"]:
            inc["severity"] = "warning"  # what may be the GPU is no longer one program's business
    # a device's serious fault after another of its own (the same fault or not): the catalog's "if it repeats" step is
    # now (an RTX PRO 6000's Xid 62, then two days later its Xid 120, each read "… if it repeats": a real-logs pass on
    # an NVIDIA developer forum thread, "Xid 62 / Xid 154 GSP PMU halt crash")
    serious = SEVERITY_RANK["error"]
    before = [p for p in prev_before if p.get("category") != "application"
              and SEVERITY_RANK.get(p.get("severity"), 0) >= serious] if (
        body.get("category") != "application" and SEVERITY_RANK.get(body.get("severity"), 0) >= serious) else []
    if before:
        said = sorted({_incident_fault(p) for p in before})
        told = (f"It failed before: {len(before)} earlier incident(s) of this {body['initiator']['device_type']} "
                f"({first_of(said, 3, noun='faults')}), the first at {min(p['start'] for p in before)}")
        inc["next_action"] = sentences(inc["next_action"], told + (": the step for a fault that repeats applies now."
                                                                   if _REPEAT.search(inc["next_action"]) else "."))
    return inc


#: an action's step for a fault that comes back ("contact support if it repeats", "if it persists")
_REPEAT = re.compile(r"\b(?:repeats?|recurs?|persists?)\b", re.I)


def _incident_fault(inc: dict[str, Any]) -> str:
    """An incident's fault in a few words: ``Xid 62``, ``SXid 12028``, else its category."""
    i = inc["initiator"]
    return f"Xid {i['xid']}" if i.get("xid") is not None else (
        f"SXid {i['sxid']}" if i.get("sxid") is not None else str(inc.get("category")))


def _same_fault(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Whether incidents ``a`` and ``b`` (same initiator) report the same fault: its kind, Xid and SXid, and neither
    a program's (``application``)."""
    x, y = a["initiator"], b["initiator"]
    return ("application" not in (a.get("category"), b.get("category"))
            and (x.get("kind"), x.get("xid"), x.get("sxid")) == (y.get("kind"), y.get("xid"), y.get("sxid")))


def _fault(scene: Scene, v: Verdict) -> str | None:
    """What failed, in one word of the events vocabulary (``nvlink_down`` for a link-down Xid 149; the signature of
    an event of kind ``other``: ``host.edac_memory_error``)."""
    k = v.initiator.get("kind")
    ev = v.initiator_events
    if k == "xid" and ev:
        main = initiator_event(scene, ev)
        unit = str(main.details.get("unit", ""))
        if "LINK_DOWN" in unit or "LINK_EVT" in unit or main.xid == 155:
            return "nvlink_down"
        cat = scene.category_of(main)
        return {"link_fault": "nvlink_errors", "ecc": "ecc", "gpu_off_bus": "gpu_off_bus",
                "gsp_error": "gsp_error"}.get(cat, "xid")
    if k == "other" and ev:
        return _fault_word(initiator_event(scene, ev))
    if k == "nccl_timeout" and not ev:  # the rank the others waited on: it logged no timeout ("rank 0 (nccl_timeout)"
        return "silent_rank"  # read as "rank 0 timed out", a fresh user's trial)
    return k


def _fault_word(e: Ev) -> str:
    """``e``'s kind, or its signature when the kind is ``other`` and says nothing ("gpu09 other" named a DIMM's
    uncorrected error: a real-logs pass)."""
    return e.signature if e.kind == "other" else e.kind


def initiator_key(init: dict[str, Any]) -> tuple:
    """What makes two incidents' initiators the same for ``recurrence``: (host, device type, device, link)."""
    return init.get("host"), init.get("device_type"), init.get("device"), init.get("link")


def _same_initiator(p: dict[str, Any], init: dict[str, Any]) -> bool:
    return init.get("device_type") is not None and initiator_key(p.get("initiator", {})) == initiator_key(init)


def _explain(scene: Scene, v: Verdict, rank: int | None = None) -> str:
    """Why the initiator is it, naming its evidence; ``rank`` is the initiator's rank when only the init lines
    placed it on its GPU (:func:`_with_rank`): said after the GPU."""
    i = v.initiator
    if not v.initiator_events:
        return "No single culprit."
    main = initiator_event(scene, v.initiator_events)
    what = f"Xid {main.xid}" if main.xid is not None else f"SXid {main.sxid}" if main.sxid else _fault_word(main)
    if main.xid is not None and main.xid in scene.catalog.xids:
        what += f" ({scene.catalog.xids[main.xid].name})"
    elif main.xid is None and not main.sxid and (phrase := _says(scene.catalog, main)):
        what += f" ({phrase})"
    if i.get("device"):
        where = f"{i.get('device_type')} {i['device']}"
        if i.get("rank") is None and rank is not None:
            where += f" (rank {rank}, as NCCL's init lines placed it)"
    elif i.get("gpu_index") is not None:
        where = f"GPU index {i['gpu_index']}"
    elif i.get("device_type"):
        where = f"an unnamed {i['device_type'].upper() if i['device_type'] == 'gpu' else i['device_type']}"
    elif i.get("rank") is not None and main.device_type in (None, "gpu"):
        # a process group's rank is one of every node's (rank 1 of a TP group): c10's "[rank29]:" names the process
        # (details.global_rank; "rank 1" sent an operator to the wrong process: NVIDIA-NeMo/Megatron-Bridge#836, a
        # real-logs pass)
        pg = process_group(main)
        group = f"process group {pg}" if pg is not None else "its process group"
        where = (f"the GPU of rank {main.details['global_rank']} (rank {i['rank']} of {group})"
                 if "global_rank" in main.details else f"the GPU of rank {i['rank']}")
    else:
        where = "the host"
    when = f"at {iso(main.ts)}"
    arrival = ("the time standard input was read" if from_stdin(main.origin)  # diagnose -
               else "its file's time" if main.ts_basis == "file" else "its Kafka record's time")
    counted = f"its seconds since boot counted back from {arrival}"
    if main.undated():  # the append time bounds it; a raw kernel stamp (details.uptime_s) was counted back from it
        if n := main.details.get("reboots_after"):  # a boot before the capture's last: it ended before the next began
            how = (f"logged {'before the host rebooted' if n == 1 else f'{n} reboots before the last boot'}: its "
                   f"seconds since boot counted back from the latest time the next boot can have begun, itself "
                   f"counted back from {arrival}")
        elif main.details.get("ts_next_line"):  # ingest.assemble._bound_by_later_stamp
            how = "the time of a stamped line after it in its log: the line printed none"
        else:
            how = counted if "uptime_s" in main.details else f"{arrival}: the line printed none"
        when = f"at or before {iso(main.ts)} ({how})"
    elif main.ts_basis in ("file", "kafka"):  # a raw kernel stamp counted back from that time: as exact as it is
        when = f"at about {iso(main.ts)} ({counted})"
    elif year := main.details.get("ts_year_from"):  # a stamp without a year (ingest.assemble.resolve_times)
        src = ("a dated log of the same job or host" if year == "related" else "the time standard input was read"
               if from_stdin(main.origin) else "its file's time")
        when = f"at {iso(main.ts)} (its stamp prints no year; the year from {src})"
    elif day := main.details.get("ts_day_from"):  # a clock without a date (ingest.assemble._date_clocks)
        src = ("the nearest line with a date" if day == "line" else "the time standard input was read"
               if from_stdin(main.origin) else "its file's time" if day == "file" else "its Kafka record's time")
        when = f"at about {iso(main.ts)} (its clock; the day from {src})"
    elif main.ts_basis == "inherited" and ("ts_unreadable" in main.details or "ts_rejected" in main.details):
        # a line whose stamp is no date, or none to believe, took the time of the line before it: said, not passed off
        # as its own (a break-it pass: "Feb 30 …" read as the time of another host's line)
        own = main.details.get("ts_unreadable")
        why = f"its own stamp, {own}, is no date" if own else "its own stamp is no believable time"
        when = f"at about {iso(main.ts)} (the time of the line before it: {why})"
    beside = [p for p in v.downstream if not p.rule]
    # a fault of another subject no rule ties to it may have come first: the initiator is then the most serious
    # of them (``rank_key``), not the earliest (an Xid 48 named "earliest" 20 s after another GPU's init failure)
    # (not when the initiator's first line is dated only by its file or record: it may be the earliest after all)
    first = min(v.initiator_events, key=lambda e: e.start)
    earlier = [] if first.undated() else [p for p in beside
                                          if any(known_before(e, first.start) and scene.is_fault(e) for e in p.events)]
    # a reporter it explains logged before it (a fatal AER a second after the Xid 79 it explains, within the lines'
    # resolution and skew): it is not "the earliest" of the lines (a fresh user's trial read a contradiction)
    # (when it was logged: a watchdog timeout whose collective began before the fault was logged ten minutes after it;
    # not a line that took an earlier line's time and may have been written after it: "logged 98 min before it" of a
    # rank's unstamped CUDA error under the job's init line, a scenario trial)
    ahead = None if first.undated() else max(
        (first.start - e.ts for p in v.downstream if p.rule for e in p.events
         if e.ts < first.start and not e.undated() and known_before(e, first.start) and scene.is_fault(e)),
        default=None)
    rank = 'most serious ' if earlier else '' if ahead else 'earliest '
    # (not a line that took an earlier line's time and may have been written after the others: _known_first)
    own_first = min(_known_first([e for e in v.initiator_events if e.signature != SYMPTOM and scene.is_fault(e)]),
                    key=lambda e: e.order, default=main)
    if own_first is not main and own_first.start < main.start and fault_name(own_first) != fault_name(main):
        # named by its most serious line, which is not its first (an Xid 13 five seconds before the Xid 109 of the
        # same GPU: the Xid 109 was called "the earliest fault", a real-logs pass)
        s = (f"{where} of {i['host']} is the {rank}fault nothing else explains: its first line "
             f"{fault_name(own_first)} at {iso(own_first.ts)}, its most serious {what} {when}")
    else:
        s = f"{what} on {where} of {i['host']} {when} is the {rank}fault nothing else explains"
    if ahead and not earlier:
        # (in ms under a tenth of a second: a sympathetic Xid 74 10 ms before its peer's was "logged 0.0 s before it")
        said = _span(ahead) if ahead >= 100_000 else f"{ahead / 1000:.0f} ms"
        s += (f", though a line it explains was logged {said} before it (within the lines' time resolution, clock "
              "skew and lead the rule allows)")
    s += _aer_before(scene, v)
    peers = sorted({(str(a), h) for e in v.initiator_events if (a := e.details.get("peer_addr"))
                    and (h := scene.topo.peer_host(e)) and h != peer_name(str(a)) and h != e.host})
    if peers:  # its line names the peer by address; NCCL's Bootstrap / NET/IB OOB line of that host said whose it is
        s += "; it names its peer " + ", ".join(f"{a}, which is {h}" for a, h in peers) + (
            " (NCCL's Bootstrap line there): read that host's logs from then")
    follow = [p for p in v.downstream if p.rule]
    if follow:
        rels = sorted({f"{p.relation}" for p in follow})
        ruled = sorted({p.rule for p in follow})
        many = len(follow) > 1  # "1 other reporter follows it", "3 other reporters follow it"
        s += (f"; {len(follow)} other reporter{'s follow' if many else ' follows'} it ({', '.join(rels)}) "
              f"by rule{'s' if len(ruled) > 1 else ''} {', '.join(ruled)}")
    if beside:
        # in its window (same host or domain) but tied to it by no rule: an application Xid on another GPU a second
        # later was told as one more reporter that "follows it" (a fresh-user trial)
        named = first_of([_beside_name(p, i["host"]) for p in beside], 3)
        rels = sorted({p.relation for p in beside if p.relation})
        s += (f"; no rule ties it to {len(beside)} other subject{'s' if len(beside) > 1 else ''} in its window"
              + (f" ({', '.join(rels)})" if rels else "") + f": {named}")
        if earlier:
            own = f"a fault of {'their' if len(earlier) > 1 else 'its'} own, or one this does not explain"
            if len(earlier) == len(beside):  # the list just said: not again
                s += f", {'all of which' if len(earlier) > 1 else 'which'} came first: {own}"
            else:
                s += f"; {first_of([_beside_name(p, i['host']) for p in earlier], 3)} came first: {own}"
    own = [e for e in v.initiator_events if e.signature != SYMPTOM]  # logged lines, not the operator's report
    n = sum(e.count for e in own)  # a repeat of one line within a minute is one event with its count
    if n > 1:
        s += f"; it reported {n:,} lines"
        said: dict[str, int] = {}
        for e in own:
            said[fault_name(e)] = said.get(fault_name(e), 0) + e.count
        if len(said) > 1:  # what else the initiator said (an Xid 31 after its Xid 32, Bumblebee#677)
            s += " (" + first_of([f"{k} ×{c:,}" if c > 1 else k for k, c in said.items()], 4, noun="kinds") + ")"
    if (cause := main.details.get("link_down_cause")) in _LINK_DOWN_SAYS:
        link = f"link {main.link}" if main.link is not None else "the link"
        s += (f". Its link-down reason ({main.details.get('link_down_reason')}) says "
              + _LINK_DOWN_SAYS[cause].format(link=link))
    if said := registers_say(main):
        s += ". " + said
    follow74 = [e for p in follow for e in p.events if e.details.get("register_reading") == "sympathetic"]
    if follow74:  # why a GPU's Xid 74 follows it: its own registers say so
        s += (f". The Xid 74 of {first_of(sorted({subject_label('gpu', e.device or '?') for e in follow74}), 3)} "
              "sets only sympathetic register bits (" + "; ".join(sorted({_bits(e) for e in follow74})) + "): NVIDIA "
              "reads it as a secondary error, to follow the other Xid's resolution")
    return s + "."


#: what an Xid 149's decoded link-down cause (``details.link_down_cause``, ``ingest.extract``) tells the reader
#: (formats.md §2.4, NVIDIA's XID 144-150 Decode sheet)
_LINK_DOWN_SAYS = {
    "peer_side_down": "the peer side went down: look at the far end of {link} (the NVLink switch port or peer GPU) "
                      "first; this GPU reports it",
    "signal_integrity": "{link} went down for its signal integrity, on this side: reset the GPU, and check the "
                        "link's signal path and cables if it repeats",
    "cable_or_transceiver": "a cable or transceiver of {link} failed",
    "software": "software took {link} down (investigate the software or user action)",
    "host": "the host took {link} down (investigate the host)",
}


#: what a class of set bits of an Xid 74's registers (``details.register_classes``, ``ingest.extract.XID74_BITS``)
#: tells the reader: NVIDIA's WORKFLOW_NVLINK_ERR resolutions (formats.md §2.2, NVIDIA's Xid catalog "Resolution
#: Buckets"), in own words
_REGISTERS_SAY = {
    "sympathetic": "a sympathetic (secondary) error: it follows a fault elsewhere, whose resolution comes first (the "
                   "peer GPU or NVSwitch on that link, another Xid or SXid); alone, NVIDIA asks for a bug report "
                   "(nvidia-bug-report.sh)",
    "sympathetic_fabric_reset": "a sympathetic error after which the fabric needs a reset (restart Fabric Manager, "
                                "reset the GPUs)",
    "ignorable": "bits NVIDIA says can be safely ignored",
    "ecc_parity": "an ECC/parity error of the link, likely hardware: report it to NVIDIA if it comes more than twice "
                  "on the same link",
    "possible_hardware": "possibly hardware: check the link's mechanical connections and reseat it, run diagnostics "
                         "if it persists",
    "signal_integrity": "marginal signal integrity of the link: check its mechanical connections, run field "
                        "diagnostics",
    "report_if_repeated": "report it to NVIDIA if it repeats",
    "not_expected": "an error NVIDIA does not expect in production: report it",
    "field_diag_if_repeated": "if it repeats, run NVIDIA's field diagnostics and report it",
    "ecc_threshold": "the link crossed its ECC error threshold with no uncorrectable error: keep running (field "
                     "diagnostics check the link)",
    "undocumented": "a bit NVIDIA's table does not name: report it to NVIDIA",
}


#: the most set bits of an Xid 74 a sentence names one by one (seven registers of all ones set 224)
_BITS_SAID = 8


def _bits(e: Ev) -> str:
    """An Xid 74's set register bits as a sentence names them: ``1st register bit 1, 4th register bit 16``; past
    :data:`_BITS_SAID`, ``… and 216 more`` (a line of all ones named 224 bits, 5.7 kB: a break-it pass)."""
    words = str(e.details.get("register_bits", "")).split()
    said = ", ".join(f"{reg} register bit {bit}" for reg, _, bit in (w.partition(":") for w in words[:_BITS_SAID]))
    return said + (f" and {len(words) - _BITS_SAID} more" if len(words) > _BITS_SAID else "")


def registers_say(e: Ev) -> str:
    """What an Xid 74's registers say (``details.register_classes``, ``ingest.extract.xid74_registers``), as a
    sentence: ``Its registers (3rd register bit 16) say: if it repeats, run NVIDIA's field diagnostics and report
    it``; "" for another line. The catalog's action asked the reader to decode them by hand (a fresh user's trial)."""
    classes = [c for c in str(e.details.get("register_classes", "")).split() if c in _REGISTERS_SAY]
    if e.xid != 74 or not classes:
        return ""
    if len(classes) > 1:
        classes = [c for c in classes if c != "ignorable"]  # beside another bit, the ignorable ones say nothing
    return f"Its registers ({_bits(e)}) say: " + "; ".join(_REGISTERS_SAY[c] for c in classes)


def _span(us: int) -> str:
    """A duration in µs as a sentence says it: ``1 s``, ``2.5 s``, ``3 min``."""
    s = us / 1_000_000
    if s >= 120:
        return f"{s / 60:.0f} min"
    return f"{s:.0f} s" if s >= 10 or s == int(s) else f"{s:.1f} s"


#: how long before a GPU falls off the bus the PCIe errors of its host are told as what came before it (µs; the
#: ``pcie.fatal_aer_explains_gpu_fall`` rule's window)
AER_BEFORE_FALL_US = 30_000_000


def _aer_before(scene: Scene, v: Verdict) -> str:
    """A sentence for a GPU that fell off the bus (Xid 79, ``gpu_off_bus``) after PCIe AER errors of its host that
    no rule made its cause (a corrected or non-fatal error is no fault, the fatal ones' rule explains it): they came
    first, within ``AER_BEFORE_FALL_US`` (or earlier in one file, its lines dated by it), and say where the link
    failed (NVIDIA/open-gpu-kernel-modules#1247: an eGPU's Correctable Physical Layer RxErr on the port above it,
    then Xid 79; rwth-i6/returnn#1486: Data Link Layer timeouts, then NVML lost the GPU; the action asked for the
    PCIe errors that came first, which were in the input: a real-logs pass). Lines that printed no time say no
    order: they are "logged beside it". "" otherwise."""
    falls = [e for e in v.initiator_events if e.kind == "gpu_off_bus" or e.xid == 79]
    if not falls:
        return ""
    fall = min(falls, key=lambda e: e.order)
    # of the port above it or of the GPU itself: not another GPU's own errors (a second break-it pass), which its
    # driver (``nvidia 0000:3b:00.0: AER: …``) or another line of the host names as a GPU
    gpus = {o.device for o in scene.events if o.device and o.device_type in (None, "gpu") and o.kind != "pcie_aer"}
    near = [e for e in scene.events if e.kind == "pcie_aer" and e.host == fall.host and e not in v.initiator_events
            and (e.device == fall.device or e.device_type != "gpu" and not (
                e.device and (e.details.get("driver") in GPU_DRIVERS or e.device in gpus)))
            and abs(fall.start - e.start) <= AER_BEFORE_FALL_US + e.start_precision_us + fall.start_precision_us]
    # lines dated only by their file (or record) say no order: a paste puts nvidia-smi's output before the dmesg
    unordered = [e for e in near if e.undated() and fall.undated()]
    aer = [e for e in near if e not in unordered and e.order < fall.order] or unordered
    if not aer:
        return ""
    ports = sorted({e.device for e in aer if e.device})
    said: list[str] = []  # what the lines say (class, layer, status bits), each once, in the lines' order
    for e in sorted(aer, key=lambda e: e.order):
        for w in (e.details.get("aer_class"), e.details.get("aer_type"), e.details.get("aer_error")):
            if w and str(w) not in said:
                said.append(str(w))
    before = aer is not unordered
    return (f"; PCIe AER errors {'came before it' if before else 'are logged beside it'} on "
            f"{first_of(ports, noun='ports') if ports else 'its host'}" + (f" ({', '.join(said[:6])})" if said else "")
            + f": the PCIe link to the GPU (slot, riser, cable, enclosure, power) {'likely' if before else 'may have'} "
            "failed first")


def _beside_name(p: Party, host: str | None) -> str:
    """A downstream party no rule reached, as the explanation names it: ``gpu 0000:5e:00.0 (Xid 13)``, its host
    when not the initiator's, its faults' codes."""
    h, dtype, dev = p.key
    name = subject_label(dtype, dev) if dev else (dtype or "host")
    if h != host:
        name += f" on {h}" if dev or dtype else f" {h}"
    codes = list(dict.fromkeys(fault_code(e) for e in p.events if e.signature != SYMPTOM))
    return f"{name} ({', '.join(codes[:3])})" if codes else name
