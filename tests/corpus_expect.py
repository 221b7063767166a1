"""How a corpus case's ``expected.yaml`` is read and checked (tests/corpus/README.md).

The right values come from the case; these rules only say how its fields are
compared with firstfault's output, the same way for every case:

* an expected event marked ``prose: true`` — or whose note says it was
  reported "in prose" — was not logged, so it is not looked for among the
  events; prose ``nccl_timeout`` events become a ``hang`` symptom and other
  prose ``nccl_error``/``other`` events a ``failure`` symptom of their host:
  what the reporter told, as the on-call engineer would type it
  (``diagnose --symptom``);
* events of kind ``other`` are context the case describes in words; they are
  not looked for (there is no event kind "other" to compare with);
* ``gpu`` as a PCI bus id (also inside text such as ``nvswitch1 0000:06:00.0``)
  must equal the event's ``device``; as an integer, the event's ``gpu_index``
  (a line that names no GPU at all cannot be held to one); ``rank N`` the
  event's ``rank``; a list: each item; free text ("all", "2 TP workers"): no
  device check;
* ``link``: an integer must equal; a list needs every link; a range string
  ("0-11") needs one link in the range;
* ``initiator: none`` / ``benign: true``: no incident of severity warning or
  above; ``initiator: unknown``: one incident holds every expected event and
  names no culprit with confidence (``device_type`` null or confidence < 0.5)
  and says what is missing; an initiator object: an incident whose initiator
  matches host, device (bus id, GPU index, or a NIC name in the text), kind
  (the initiator's ``kind`` or ``fault``; ``other`` means "not a GPU": the
  platform, a NIC or the host), Xid when a logged event carries it, and link;
  and every other expected event must be in that incident.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import yaml

from correlate.correlator import Symptom
from schemas.events import SEVERITY_RANK
from schemas.hostname import canonical_host
from schemas.pci import normalize_bus_id

_BDF = re.compile(r"\b[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]\b")
_NIC = re.compile(r"\bmlx5_\d+\b")
_RANK = re.compile(r"^rank (\d+)$")


@dataclass
class Case:
    name: str
    path: Path
    expected: dict[str, Any]
    events: list[dict[str, Any]] = field(default_factory=list)  # logged, checkable
    prose: list[dict[str, Any]] = field(default_factory=list)

    @property
    def benign(self) -> bool:
        return bool(self.expected.get("benign")) or self.expected.get("initiator") == "none"


def is_prose(e: dict[str, Any]) -> bool:
    note = str(e.get("note", "")).lower()
    return bool(e.get("prose")) or "in prose" in note or "(prose)" in note


def load_case(path: Path) -> Case:
    exp = yaml.safe_load((path / "expected.yaml").read_text(encoding="utf-8"))
    c = Case(name=path.name, path=path, expected=exp)
    for e in exp.get("events", []):
        (c.prose if is_prose(e) else c.events).append(e)
    return c


def symptoms(case: Case) -> list[Symptom]:
    out = []
    for e in case.prose:
        host = str(e.get("host", ""))
        if not re.fullmatch(r"[\w.-]+", host):
            continue
        if e["kind"] == "nccl_timeout":
            out.append(Symptom(host=host, kind="hang", gpus=_gpu_list(e.get("gpu"))))
        elif e["kind"] in ("nccl_error", "other"):
            out.append(Symptom(host=host, kind="failure", gpus=_gpu_list(e.get("gpu"))))
    return out


def _gpu_list(g: Any) -> list[str]:
    if isinstance(g, list):
        return [str(x) for x in g]
    if isinstance(g, int):
        return [str(g)]
    return []


def gpu_matchers(gpu: Any) -> list[Any] | None:
    """What each expected GPU item must equal: ('device', bdf) | ('index', n) | ('rank', n); None = no check."""
    if gpu is None:
        return None
    items = gpu if isinstance(gpu, list) else [gpu]
    out = []
    for it in items:
        if isinstance(it, int):
            out.append(("index", it))
            continue
        s = str(it)
        bdfs = _BDF.findall(s)
        if len(bdfs) == 1 and not s.lower().startswith(("all", "redacted")):
            out.append(("device", normalize_bus_id(bdfs[0])))
            continue
        m = _RANK.match(s)
        if m:
            out.append(("rank", int(m.group(1))))
    return out or None


def link_set(link: Any) -> tuple[str, set[int]] | None:
    if link is None:
        return None
    if isinstance(link, int):
        return "all", {link}
    if isinstance(link, list):
        return "all", set(link)
    m = re.fullmatch(r"(\d+)-(\d+)", str(link))
    if m:
        return "any", set(range(int(m.group(1)), int(m.group(2)) + 1))
    return None


def _dev_ok(ev: dict[str, Any], m: tuple) -> bool:
    kind, val = m
    if kind == "device":
        return ev.get("device") == val
    if kind == "index":
        if ev.get("gpu_index") is not None:
            return ev["gpu_index"] == val
        return ev.get("device") is None  # the line names no GPU: nothing to hold it to
    return ev.get("rank") == val


def matching_events(exp: dict[str, Any], events: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """For each GPU item (or once), the output events that satisfy ``exp`` (host, kind, codes, device)."""
    host = str(exp.get("host", ""))

    def base(ev: dict[str, Any]) -> bool:
        if re.fullmatch(r"[\w.-]+", host) and ev["host"] != host:
            return False
        if ev["kind"] != exp["kind"]:
            return False
        for code in ("xid", "sxid"):
            if exp.get(code) is not None and ev.get(code) != exp[code]:
                return False
        return True

    cands = [e for e in events if base(e)]
    gm = gpu_matchers(exp.get("gpu"))
    groups = [[e for e in cands if _dev_ok(e, m)] for m in gm] if gm else [cands]
    ls = link_set(exp.get("link"))
    if ls:
        mode, links = ls
        if mode == "all":
            groups = [[e for e in g if e.get("link") in links] for g in groups]
            # every expected link must be present among the group
            for g in groups:
                if {e.get("link") for e in g} != links:
                    g.clear()
        else:
            groups = [[e for e in g if e.get("link") in links] for g in groups]
    return groups


def member_ids(inc: dict[str, Any]) -> set[str]:
    ids = set(inc["initiator"].get("events", []))
    for d in inc["downstream"]:
        ids.update(d["events"])
    ids.update(c["event"] for c in inc.get("context", []))
    return ids


def initiator_matches(exp: dict[str, Any], inc: dict[str, Any], case: Case) -> list[str]:
    """Mismatches between an expected initiator and an incident's (empty = it matches)."""
    i = inc["initiator"]
    bad = []
    if str(exp.get("host")) != str(i.get("host")):
        bad.append(f"host {i.get('host')} != {exp.get('host')}")
    kind = exp.get("kind")
    if kind == "other":
        if i.get("device_type") == "gpu":
            bad.append("expected a platform/NIC/host initiator, got a GPU")
    elif kind not in (i.get("kind"), i.get("fault")):
        bad.append(f"kind {i.get('kind')}/{i.get('fault')} != {kind}")
    gpu = exp.get("gpu")
    if kind != "other":
        for m in gpu_matchers(gpu) or []:
            if m[0] == "device" and i.get("device") != m[1]:
                bad.append(f"device {i.get('device')} != {m[1]}")
            if m[0] == "index" and i.get("gpu_index") is not None and i["gpu_index"] != m[1]:
                bad.append(f"gpu index {i.get('gpu_index')} != {m[1]}")
    nic = _NIC.findall(str(gpu))
    if nic and i.get("device") not in nic:
        bad.append(f"device {i.get('device')} not the NIC {nic}")
    logged_xids = {e.get("xid") for e in case.events}
    if exp.get("xid") is not None and exp["xid"] in logged_xids and i.get("xid") != exp["xid"]:
        bad.append(f"xid {i.get('xid')} != {exp['xid']}")
    ls = link_set(exp.get("link"))
    if ls:
        have = set(i.get("links") or []) | ({i["link"]} if i.get("link") is not None else set())
        if not ls[1] <= have if ls[0] == "all" else not (ls[1] & have):
            bad.append(f"links {sorted(have)} do not cover {sorted(ls[1])}")
    return bad


def serious(inc: dict[str, Any]) -> bool:
    return SEVERITY_RANK[inc["severity"]] >= SEVERITY_RANK["warning"]


def renamed(case: Case, old: str, name: str) -> tuple[Case, Callable[[bytes], bytes]]:
    """``case`` as if its host ``old`` were called ``name`` (maybe a full name, ``a1.rack2.example``): the case
    with every ``host`` field equal to ``old`` made the host ``name`` is (``schemas.hostname.canonical_host``),
    and the change to make to its input files' bytes (``old`` as a whole word becomes ``name``)."""
    host = canonical_host(name)

    def one(e: dict[str, Any]) -> dict[str, Any]:
        return {**e, "host": host} if str(e.get("host")) == old else dict(e)

    exp = {k: ([one(e) for e in v] if k == "events" else one(v) if isinstance(v, dict) else v)
           for k, v in case.expected.items()}
    word = re.compile(rb"(?<![\w.-])" + re.escape(old.encode()) + rb"(?![\w-])")
    new = Case(name=case.name, path=case.path, expected=exp)
    for e in exp.get("events", []):
        (new.prose if is_prose(e) else new.events).append(e)
    return new, lambda data: word.sub(name.encode(), data)
