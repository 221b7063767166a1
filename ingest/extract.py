"""Read fields from the lines a signature hit, and turn them into event columns.

Pure functions: :func:`fields` runs one catalog entry's regex (and its
``extra`` regexes) on one line; :func:`columns` converts the named groups to
typed events columns (``schemas.events``), keeping anything else in
``details``. Per-segment passes that need several lines (carried context,
SXid line groups, time bases) live in ``ingest.assemble``.
"""

from __future__ import annotations

import math
import re
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from ingest.catalog import Catalog, Compiled
from schemas.events import DURATION_MAX_MS
from schemas.pci import bus_only, nccl_bus_id, normalize_bus_id

# integer columns and the Arrow type bounds they must fit (schemas/events.py); a value outside stays in details
_I16, _I32, _I64 = (-(2**15), 2**15 - 1), (-(2**31), 2**31 - 1), (-(2**63), 2**63 - 1)
# a timed-out collective's "ran for N milliseconds" / "Timeout(ms)=N": what the correlator can place in time
# (schemas.events.check_ranges); a line claiming more (99999999999999 ms) keeps its number in details only
_DURATION = (0, DURATION_MAX_MS)
_INT_COLUMNS = {"xid": _I32, "sxid": _I32, "link": _I16, "rank": _I32, "nranks": _I32, "gpu_index": _I16,
                "pid": _I32, "seq": _I64, "timeout_ms": _DURATION, "cause_xid": _I32, "elapsed_ms": _DURATION}
_STR_COLUMNS = {"comm", "op", "peer", "device", "process"}
# groups renamed to a column
_RENAME = {"cause": "cause_xid", "ran_ms": "elapsed_ms", "name": "process", "peer_name": "peer_addr"}
_UNKNOWN = {"<unknown>", "'<unknown>'", "", "..."}
#: the kernel drivers of NVIDIA GPUs, as an AER line names the device's driver (``nvidia 0000:b3:00.0: AER: …``;
#: the open and proprietary kernel modules both register as "nvidia"); ``correlate.incident`` reads events of lakes
#: written before such lines were filed as the GPU's by it too
GPU_DRIVERS = frozenset({"nvidia"})


_DCGM_LINK = re.compile(r"^(?P<counter>DCGM_FI_\w+?)_L(?P<link>\d+)(?:_TOTAL)?$")


# dcgm-exporter's windowed Xid count, by its ``xid`` label: the name of its HELP line and the name its PR's sample
# printed under that HELP line (NVIDIA/dcgm-exporter#239; formats.md §10.2: accept both)
_DCGM_XID_COUNTS = ("DCGM_EXP_XID_ERRORS_COUNT", "DCGM_FI_DEV_XID_ERRORS_ACTIVE")


def prometheus_fields(text: str) -> list[dict[str, str]]:
    """One dcgm-exporter sample line read with prometheus_client's text-format parser.

    Groups: ``counter`` (metric name without its ``_L<n>`` link suffix), ``link``, ``xid`` (dcgm-exporter's count of
    Xids within its window, DCGM_EXP_XID_ERRORS_COUNT or, as NVIDIA/dcgm-exporter#239 printed the sample under that
    HELP line, DCGM_FI_DEV_XID_ERRORS_ACTIVE, by its ``xid`` label), ``clock_event`` (its count of a clock
    event reason within its window, DCGM_EXP_CLOCK_EVENTS_COUNT: ``hw_thermal``, ``sw_power_cap``, …, by its
    ``clock_event`` label, NVIDIA/dcgm-exporter#261), ``last_xid`` (DCGM_FI_DEV_XID_ERRORS:
    the last Xid the GPU had, at some time — ``signatures/nvml.yaml``, ``dcgm.exporter.xid_last``),
    ``value`` (``value_text`` instead for NaN and ±Inf), ``gpu_index`` (label ``gpu``), ``pci`` (``pci_bus_id``),
    ``sample_ts_ms`` (the sample's own timestamp, when the line prints one),
    ``exporter_host`` (``Hostname``/``hostname``: often the exporter pod, not the node — formats.md §8,
    so the host comes from the Kafka key or the line's envelope), ``uuid``, ``model`` (``modelName``). Label names
    per formats.md §10.2 (``Hostname`` renamed ``hostname`` in dcgm-exporter #655).
    """
    s = text.strip()
    i = s.find("DCGM_")
    if i < 0:
        return []
    try:
        fams = list(text_string_to_metric_families(s[i:] + "\n"))
    except (ValueError, TypeError, IndexError):
        return []
    out = []
    for fam in fams:
        for smp in fam.samples:
            lab = smp.labels
            v = smp.value
            # NaN and ±Inf are legal sample values (a counter the exporter could not read): no number to keep, the line
            # is kept (``int(nan)`` raised, and the whole file or Kafka value holding it was lost: a break-it pass)
            f = {"metric": smp.name}
            if smp.timestamp is not None and math.isfinite(smp.timestamp):  # the sample's own time (ms in the text:
                # /federate and a scrape's dump print it), the line's time when it has no stamp of its own
                f["sample_ts_ms"] = str(round(smp.timestamp * 1000))
            if not math.isfinite(v):
                f["value_text"] = repr(v)
            else:
                f["value"] = repr(v) if v != int(v) else str(int(v))
            m = _DCGM_LINK.match(smp.name)
            f["counter"] = m.group("counter") if m else smp.name
            if smp.name in _DCGM_XID_COUNTS and lab.get("xid"):  # the windowed count's Xid
                f["xid"] = lab["xid"]
            elif smp.name == "DCGM_EXP_CLOCK_EVENTS_COUNT" and lab.get("clock_event"):  # the windowed count's reason
                f["clock_event"] = lab["clock_event"]
            elif smp.name == "DCGM_FI_DEV_XID_ERRORS":  # the last Xid the GPU had, at some time: no Xid column
                x = lab.get("err_code") or f.get("value")  # its newer err_code label (NVIDIA/DCGM#235), else its value
                if x:
                    f["last_xid"] = x
            if m:
                f["link"] = m.group("link")
            for src, dst in (("gpu", "gpu_index"), ("pci_bus_id", "pci"), ("Hostname", "exporter_host"),
                             ("hostname", "exporter_host"), ("UUID", "uuid"), ("uuid", "uuid"), ("modelName", "model")):
                if lab.get(src):
                    f.setdefault(dst, lab[src])
            out.append(f)
    return out


def fields(c: Compiled, text: str) -> list[dict[str, str]]:
    """Named groups of ``c`` on ``text``: one dict per occurrence for ``multi``
    entries, else at most one. ``extra`` regexes add groups not already set. A pattern anchored at the line's start
    reads the message behind the line's prefixes when the line itself does not match
    (:meth:`ingest.catalog.Compiled.read_from`)."""
    text = c.read_from(text)
    if c.sig.parser == "prometheus":
        return prometheus_fields(text)
    if c.sig.multi:
        found = [m.groupdict() for m in c.rx.finditer(text)]
    else:
        m = c.rx.search(text)
        found = [m.groupdict()] if m else []
    out = []
    for g in found:
        f = {k: v for k, v in g.items() if v is not None}
        for rx, literal, needs in zip(c.extras, c.extra_literals, c.extra_needs):
            if literal is not None and literal not in text:
                continue  # no match can lack it (catalog.required_literal)
            if needs and not _holds(text, needs):
                continue  # nor any of these (catalog.literal_requirements)
            m2 = rx.search(text)
            if m2:
                for k, v in m2.groupdict().items():
                    if v is not None and k not in f:
                        f[k] = v
        if "link_states" in f:
            out.extend(_links_down(f))
            continue
        out.append(f)
    return out


def _links_down(f: dict[str, str]) -> list[dict[str, str]]:
    """One occurrence per link a link-state row says is down: ``dcgmi nvlink --link-status`` prints one letter per
    link, link 0 first (``Key: Up=U, Down=D, Disabled=X, Not Supported=_``), so a D's place is its link number;
    none for a row without a D (all up, disabled or unsupported). Source: NVIDIA/DCGM#198."""
    states = f["link_states"].split()
    rest = {k: v for k, v in f.items() if k != "link_states"}
    return [{**rest, "link": str(i), "links_listed": str(len(states))} for i, s in enumerate(states) if s == "D"]


def _bus_form(v: str) -> bool:  # "" (no such side) is no bus id
    """Whether the bracket of an NCCL transport line (``3[<v>]``) holds a busId (``%lx``, NCCL <= 2.18.1) rather than
    an NVML index (decimal): four digits or more, a hex letter, or a number no node has GPUs up to. A GPU on bus 0
    prints short (``0000:00:04.0`` is ``40``, ``0000:00:0b.0`` ``b0``: cloud VMs' GPUs) and was read as index 40 or,
    from hex, 176 (a break-it pass)."""
    return bool(v) and (len(v) >= 4 or not v.isdigit() or int(v) >= MAX_NODE_GPUS)


#: more GPUs than any node has: a bracket's decimal value this large is a busId
MAX_NODE_GPUS = 32

#: the sides of NCCL's "<rank>[<dev>] -> <peer rank>[<peer dev>]" transport line, sender first
_SIDES = (("rank", "peer_rank"), ("nccl_dev", "nccl_peer_dev"))


def _receiving(f: dict[str, str]) -> dict[str, str]:
    """The groups of a transport line that says ``[receive]``, its sides swapped: NCCL prints a connection as
    ``sender -> receiver``, so on a receiving rank's line the rank and GPU that logged it are the right-hand side and
    the sender is the peer (src/transport/net.cc ``recvSetup``: ``peerInfo->rank, peerInfo->nvmlDev, myInfo->rank,
    myInfo->nvmlDev``; ``sendSetup`` prints ``myInfo`` first). Read left to right, a receiving rank's line was put
    on its sender's GPU and rank (pytorch/pytorch#81628: ``0[2f000] -> 1[86000] [receive]`` logged by GPU 1)."""
    out = dict(f)
    for a, b in _SIDES:
        if a in f or b in f:
            out.pop(a, None)
            out.pop(b, None)
            if b in f:
                out[a] = f[b]
            if a in f:
                out[b] = f[a]
    return out


def _holds(text: str, needs: tuple[tuple[str, ...], ...]) -> bool:
    """Whether ``text`` holds one string of each requirement (``catalog.literal_requirements``)."""
    for need in needs:
        for literal in need:
            if literal in text:
                break
        else:
            return False
    return True


def _int(v: str) -> int | None:
    try:
        return int(v, 0) if v.lower().startswith("0x") else int(v)
    except ValueError:
        return None


def columns(c: Compiled, f: dict[str, str], catalog: Catalog) -> dict[str, Any]:
    """Typed event columns from one occurrence's groups.

    Returns a dict with events columns (``kind``, ``severity``, ``device`` …)
    and ``details`` (a dict of the remaining groups). Severity and kind follow
    the entry, the line's own fatal word, and the Xid/SXid catalogs.
    """
    sig = c.sig
    row: dict[str, Any] = {"signature": sig.id, "kind": sig.kind, "device_type": sig.device_type}
    details: dict[str, Any] = {}
    if f.get("direction") == "receive":
        f = _receiving(f)
    # NCCL prints both sides of a transport line in one form: a busId on either side makes both busIds
    bus = _bus_form(f.get("nccl_dev", "")) or _bus_form(f.get("nccl_peer_dev", ""))
    for k, v in f.items():
        k = _RENAME.get(k, k)
        if k == "pci":
            row["device"] = normalize_bus_id(v)
        elif k == "peer_pci":
            row["peer"] = normalize_bus_id(v)
        elif k == "nccl_bus":
            row["device"] = nccl_bus_id(v)
        elif k == "nccl_dev":
            # NCCL <= 2.18.1 prints the busId in hex, later versions the NVML index (formats.md §11.2)
            if bus:
                row["device"] = nccl_bus_id(v)
            else:
                row["gpu_index"] = int(v)
        elif k == "nccl_peer_dev":
            if bus:
                row["peer"] = nccl_bus_id(v)
            else:
                details["peer_gpu_index"] = int(v)
        elif k == "tests_bus":
            row["device"] = bus_only(v)
        elif k == "fatal_word":
            row["fatal"] = v.lower() == "fatal"
            details["fatal_word"] = v
        elif k == "link_signed":
            n = _int(v)
            row["link"] = None if n is None or not 0 <= n <= _I16[1] else n
        elif k == "nic":
            row["device"] = v
            row["device_type"] = "nic"
        elif k == "port" and sig.device_type == "nic":
            n = _int(v)
            row["link"] = n if n is not None and 0 <= n <= _I16[1] else None
        elif k == "host":
            row["host"] = v
        elif k in _INT_COLUMNS:
            if v in _UNKNOWN:
                continue
            n = _int(v.strip("'"))
            lo, hi = _INT_COLUMNS[k]
            if n is not None and lo <= n <= hi:
                row[k] = n
            else:  # a number no driver prints (e.g. a 20-digit Xid): keep the text, not a wrong value
                details[f"{k}_text"] = v[:64]
        elif k in _STR_COLUMNS:
            if v not in _UNKNOWN:
                row[k] = v
        else:
            details[k] = v
    if sig.kind == "pcie_aer" and row["device_type"] == "pcie_port" and details.get("driver") in GPU_DRIVERS:
        # AER prints the lines of the device that reported the error under its driver's name (aer_print_error:
        # pci_err(dev, …)): "nvidia 0000:b3:00.0: AER: PCIe Bus Error" is the GPU's own, not a port's (it was filed
        # as a pcie_port 0000:b3:00.0 beside the GPU 0000:b3:00.0: a fresh user's trial)
        row["device_type"] = "gpu"
    xid = row.get("xid")
    sev = sig.severity
    if sig.severity_group and f.get(sig.severity_group, "").lower() in sig.severity_map:
        sev = sig.severity_map[f[sig.severity_group].lower()]
        if sev == "warning" and sig.severity == "sxid_catalog" and (
                sfact := catalog.sxids.get(row.get("sxid", -1))) is not None and sfact.severity == "info":
            sev = "info"  # a Non-fatal SXid the catalog says can be ignored (catalog._load_sxids)
    elif sev == "xid_catalog":
        fact = catalog.xids.get(xid) if xid is not None else None
        sev = fact.severity if fact else "error"
    elif sev == "sxid_catalog":
        sfact = catalog.sxids.get(row.get("sxid", -1))
        sev = sfact.severity if sfact else "warning"
    row["severity"] = sev
    if xid is not None and sig.kind_by_catalog_category:
        fact = catalog.xids.get(xid)
        if fact and fact.category in sig.kind_by_catalog_category:
            row["kind"] = sig.kind_by_catalog_category[fact.category]
    if xid == 149 and (cause := _link_down_cause(details)) is not None:
        details["link_down_reason"], details["link_down_cause"] = cause
    if xid == 74 and (read := xid74_registers(details.get("registers"))) is not None:
        details.update(read)
        if read["register_reading"] == "ignorable":
            # NVIDIA: those bits "can be safely ignored" (formats.md §2.2), as a Non-fatal SXid the catalog ignores
            row["severity"] = "info"
    if xid == 154 and (escalated := _RECOVERY_SEVERITY.get(recovery_action_code(details) or 0)):
        # the catalog's row is "info … escalate severity from the new value": a GPU the driver wants reset or
        # drained is no information line (a break-it pass: Xid 13 then "to 0x4 (Drain and Reset)" read "Node
        # healthy … do not drain")
        row["severity"] = escalated
    row["details"] = details
    return row


def recovery_action_code(details: dict[str, Any]) -> int | None:
    """Xid 154's new recovery action as a number (``details.new_action``, printed ``0x4``), None when the line gave
    none: the one reading of it, for the event's severity here and the incident's next step
    (``correlate.patterns.recovery_action``)."""
    return _int(str(details.get("new_action", "")))


#: Xid 154's new recovery action (``details.new_action``; NV2080_CTRL_GPU_RECOVERY_ACTION in open-gpu-kernel-modules
#: ctrl2080gpu.h, xid-catalog.csv's note: 0 None, 1 GPU Reset Required, 2 Node Reboot Required, 3 Drain P2P,
#: 4 Drain and Reset, 5 Recover IMEX Domain) -> the event's severity; 0 keeps the catalog's (info)
_RECOVERY_SEVERITY = {1: "error", 2: "critical", 3: "error", 4: "critical", 5: "error"}


#: Xid 149 NETIR_LINK_EVT's link-down reason, ``IntrInfo[25:20]`` (formats.md §2.4, NVIDIA's "XID 144-150 Decode"
#: sheet): what it says of where the link went down
_LINK_DOWN_CAUSES = {0x15: "peer_side_down", **{r: "peer_side_down" for r in range(0x20, 0x26)},
                     0x26: "software", 0x28: "host", 0x01: "report_issue", 0x02: "signal_integrity",
                     0x04: "signal_integrity", 0x0A: "signal_integrity", 0x2A: "cable_or_transceiver",
                     0x2B: "cable_or_transceiver"}


#: every cause ``_link_down_cause`` gives (``details.link_down_cause``: what rules.yaml predicates may name)
LINK_DOWN_CAUSES = frozenset(_LINK_DOWN_CAUSES.values()) | {"unknown"}


def _link_down_cause(details: dict[str, Any]) -> tuple[str, str] | None:
    """(reason ``0x25``, cause ``peer_side_down``) of an Xid 149 ``NETIR_LINK_EVT`` / ``NETIR_LINK_DOWN`` line from
    its first register word (IntrInfo), cause ``unknown`` for a reason the sheet does not name; None for another
    unit or no registers. ``0x025001c6`` -> ``0x25``, the peer side went down (formats.md §2.4)."""
    if not str(details.get("unit", "")).startswith("NETIR_LINK"):
        return None
    words = str(details.get("registers") or "").split()
    intr = _int(words[0]) if words else None
    if intr is None or intr < 0:
        return None
    reason = (intr >> 20) & 0x3F
    return f"0x{reason:02x}", _LINK_DOWN_CAUSES.get(reason, "unknown")


#: Xid 74's registers, (register, bit) -> what NVIDIA says of a set bit: WORKFLOW_NVLINK_ERR in NVIDIA's Xid catalog
#: (https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html, sheet "Resolution Buckets" of
#: https://docs.nvidia.com/Xid-Catalog.xlsx; quoted in NVIDIA/NVSentinel docs/designs/019-workflow-nvlink-err.md),
#: summarised in formats.md §2.2. Registers count from 1 as the catalog does; it names bits of the 1st, 3rd, 4th and
#: 5th only (the ones Hopper fills). ``sympathetic``: "generally sympathetic or secondary errors: if seen with other
#: bits set or other Xid/SXid, follow the resolution for those; if seen solo, report a bug";
#: ``sympathetic_fabric_reset``: the same, "though a reset of the fabric is required"; ``ignorable``: "can be safely
#: ignored"; ``ecc_parity``: "likely HW issue with ECC/Parity", report if more than 2 times on the same link;
#: ``possible_hardware``: "check link mechanical connections and re-seat", run diags if it persists;
#: ``signal_integrity``: "marginal channel SI issue"; ``report_if_repeated``; ``not_expected`` ("not expected to be
#: seen in production": report it); ``field_diag_if_repeated``; ``ecc_threshold`` ("a threshold of ECC errors being
#: exceeded. There was no uncorrectable error at this time. Continue operation")
XID74_BITS: dict[tuple[int, int], str] = {
    **{(1, b): "ignorable" for b in (0, 23, 30)},
    **{(1, b): "sympathetic" for b in (1, 20)},
    **{(1, b): "ecc_parity" for b in (4, 5)},
    **{(1, b): "possible_hardware" for b in (8, 9, 12, 16, 17, 24, 28)},
    **{(1, b): "signal_integrity" for b in (21, 22)},
    **{(1, b): "report_if_repeated" for b in (27, 29)},
    **{(3, b): "ecc_parity" for b in (0, 1, 2, 6)},
    (3, 13): "not_expected",
    **{(3, b): "field_diag_if_repeated" for b in (16, 19)},
    **{(3, b): "report_if_repeated" for b in (17, 18)},
    **{(4, b): "sympathetic" for b in (16, 17)},
    (4, 18): "sympathetic_fabric_reset",
    **{(5, b): "ecc_parity" for b in (18, 19, 21, 22, 24, 25, 27, 28)},
    **{(5, b): "ecc_threshold" for b in (20, 23, 26, 29)},
}
#: a set bit the table does not name: NVIDIA "If bits other than those specifically outlined below are seen, please
#: report a bug" (the same source)
XID74_UNDOCUMENTED = "undocumented"
#: classes that say the line reports a fault elsewhere (NVIDIA: "follow the resolution for those")
_SYMPATHETIC = frozenset({"sympathetic", "sympathetic_fabric_reset"})
#: what an Xid 74's registers say of the line as a whole (``details.register_reading``, what rules.yaml predicates may
#: name): ``sympathetic`` (only sympathetic bits, ignorable ones beside them: a report of a fault elsewhere),
#: ``ignorable`` (only ignorable bits), ``own_error`` (any other bit: this link's own error, whose resolution comes
#: first — NVIDIA: sympathetic bits "seen with other bits set", follow those)
XID74_READINGS = frozenset({"sympathetic", "ignorable", "own_error"})


def xid74_registers(registers: Any) -> dict[str, str] | None:
    """What an Xid 74 line's seven registers (``details.registers``: ``0x2, 0x0, …``) say, by :data:`XID74_BITS`:
    ``register_bits`` (the set bits, ``1st:1 3rd:16``), ``register_classes`` (their classes in that order, each
    once: ``sympathetic``), ``register_reading`` (:data:`XID74_READINGS`). None without seven registers or with no
    bit set. ``0x0, 0x0, 0x10000, 0x0, …`` -> 3rd register bit 16, ``field_diag_if_repeated``, ``own_error``;
    ``0x2, 0x0, …`` -> 1st bit 1, ``sympathetic`` (formats.md §2.2)."""
    words = [w for w in re.split(r"[,\s]+", str(registers or "")) if w]
    values = [_int(w) for w in words]
    # 32-bit registers: a wider value is no register the driver printed (a 9,300-digit one listed every bit of it,
    # megabytes per event: a break-it pass)
    if len(values) != 7 or any(v is None or not 0 <= v <= 0xFFFFFFFF for v in values):
        return None
    bits: list[str] = []
    classes: list[str] = []
    for reg, value in enumerate(values, start=1):
        for bit in range(value.bit_length()):
            if value >> bit & 1:
                bits.append(f"{_ORDINAL[reg]}:{bit}")
                cls = XID74_BITS.get((reg, bit), XID74_UNDOCUMENTED)
                if cls not in classes:
                    classes.append(cls)
    if not classes:
        return None
    found = set(classes)
    if found <= {"ignorable"}:
        reading = "ignorable"
    elif found <= _SYMPATHETIC | {"ignorable"}:
        reading = "sympathetic"
    else:
        reading = "own_error"
    return {"register_bits": " ".join(bits), "register_classes": " ".join(classes), "register_reading": reading}


_ORDINAL = {1: "1st", 2: "2nd", 3: "3rd", 4: "4th", 5: "5th", 6: "6th", 7: "7th"}
