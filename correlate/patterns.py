"""Whole-incident patterns, one function per ``patterns`` id in rules.yaml.

Each takes a :class:`~correlate.attribute.Scene` and returns a
:class:`~correlate.attribute.Verdict` when it recognises the incident, else
``None``. They are tried in the order rules.yaml lists them; each checks that
no device fault contradicts it before it claims an incident. The sources of
each pattern are in rules.yaml.
"""

from __future__ import annotations

from dataclasses import replace
import ipaddress
import re
from collections import Counter, defaultdict
from collections.abc import Iterable
from datetime import datetime, timezone
from typing import Callable, Final

from correlate.attribute import (RECOVERY_XID, SYMPTOM, S, Party, Scene, Verdict, catalog_action, downstream_parties,
                                 fault_name, first_of, initiator_fields, sentences, unknown_verdict, verify_commands)
from correlate.model import DESYNC_REPORT, PROCESS_END, TORCHRUN_AGENT, Ev, capture_of
from correlate.rules import config_value
from correlate.topology import bridge_gateway, expected_links, link_local, loopback, peer_name
from correlate.window import may_cause
from ingest.catalog import Catalog
from ingest.extract import recovery_action_code
from schemas.events import SEVERITY_RANK

PCIE_PATHS = {"PIX", "PXB", "PHB", "NODE"}
#: the ending of the ids of the signatures of a trainer's checkpoint-save start (torchtune.checkpoint_save, …)
CHECKPOINT_SAVE = "checkpoint_save"  # hf.trainer_checkpoint_save too (".checkpoint_save" missed it: a break-it pass)
#: how many lines before a timeout a save line that printed no time may stand (the lines between are the save's
#: own: torchtune's "Getting full model state dict took …"): one an hour of training lines before was "the save" (a
#: break-it pass; its bound was the watchdog line's time)
SAVE_LINES = 20


def ranks_said(ranks: list[int], names: dict[int, str], n: int = 8) -> str:
    """``0–4095`` for ranks named by their number alone, runs of four or more consecutive ones as ranges (a named one,
    ``1 (global rank 29)``, as its name), the first ``n`` pieces and how many more: 4,096 ranks listed one by one were
    23 KB of one explanation, 448 KB for 65,536, the page's whole description (a break-it pass). ``ranks``
    ascending. Up to ``n`` ranks are each said."""
    if len(ranks) <= n:
        return ", ".join(names.get(r, str(r)) for r in ranks)
    pieces: list[tuple[str, int]] = []  # (said, how many ranks)
    run: list[int] = []  # consecutive ranks named by their number alone

    def close_run() -> None:
        if len(run) < 4:
            pieces.extend((str(x), 1) for x in run)
        else:
            pieces.append((f"{run[0]}–{run[-1]}", len(run)))
        run.clear()

    for r in ranks:
        if r in names and names[r] != str(r):  # a named rank ends a run and is said by its name
            close_run()
            pieces.append((names[r], 1))
            continue
        if run and r != run[-1] + 1:
            close_run()
        run.append(r)
    close_run()
    said = ", ".join(p for p, _ in pieces[:n])
    left = sum(k for _, k in pieces[n:])
    return f"{said} and {left} more" if left else said


def _host_initiator(host: str | None, kind: str, events: list[Ev]) -> dict:
    return {"host": host, "device_type": None, "device": None, "link": None, "rank": None, "kind": kind,
            "xid": None, "sxid": None, "peer": None, "gpu_index": None, "links": None,
            "events": [e.event_id for e in sorted(events, key=lambda e: e.order)]}


def _only_host(scene: Scene) -> str | None:
    hosts = {e.host for e in scene.events}
    return hosts.pop() if len(hosts) == 1 else None


def _serious_device_fault(scene: Scene) -> list[Ev]:
    """Faults that by themselves mean a device is broken: fatal/initiating Xids, a fall, ECC, fatal SXid."""
    out = []
    for e in scene.hardware_faults():
        if e.kind in ("gpu_off_bus", "ecc", "gpu_init_failed"):
            out.append(e)
        elif e.kind in ("xid", "gsp_error") and e.sev >= 2 and scene.role(e) in ("initiator", "either") \
                and e.fatal is not False:
            out.append(e)
        elif e.kind == "sxid" and e.sev >= 3:
            out.append(e)
        elif e.kind == "pcie_aer" and e.sev >= 2:
            out.append(e)
    return out


def _hang(scene: Scene) -> list[Ev]:
    return [e for e in scene.events if e.kind == "nccl_timeout" or
            (e.signature == SYMPTOM and e.details.get("symptom") == "hang")]


# --- benign -------------------------------------------------------------------------------------

def fabric_manager_not_needed(scene: Scene) -> Verdict | None:
    ntd = [e for e in scene.events if e.signature == "fm.nothing_to_do"]
    if not ntd or any(e.kind != "fabric_manager" for e in scene.faults()):
        return None
    host = ntd[0].host
    return Verdict(
        pattern="benign.fabric_manager_not_needed", category="fabric_manager",
        initiator=_host_initiator(host, "fabric_manager", ntd), initiator_events=ntd,
        context=[e for e in scene.events if e not in ntd], confidence=0.9, severity="info",
        explanation=("Fabric Manager exited with NV_WARN_NOTHING_TO_DO: the NVSwitch driver found no NVSwitch on "
                     f"{host}. Fabric Manager only manages NVSwitch fabrics; GPUs joined by NVLink bridges or "
                     "plain PCIe need no Fabric Manager, so its failed unit is not a fault."),
        next_action=catalog_action(scene.catalog, ntd[0], scene.subject.get(ntd[0].event_id)),
        verify=["nvidia-smi topo -m", "systemctl disable --now nvidia-fabricmanager"])


def no_nvlink_on_gpu(scene: Scene) -> Verdict | None:
    faults = scene.faults()
    if not faults or any(e.kind != "nvlink_down" for e in faults):
        return None
    by_gpu: dict[tuple, list[Ev]] = defaultdict(list)
    for e in faults:
        by_gpu[scene.subject[e.event_id]].append(e)
    unknown_model = False
    for (host, _t, key), evs in by_gpu.items():
        if key is None or scene.topo.has_nvlink_evidence(host, key):
            return None
        down = {e.link for e in evs if e.link is not None}
        if down and down != set(range(len(down))):
            # a GPU without NVLink has every link down, and DCGM lists them from link 0 on (NVIDIA/DCGM#49,
            # NVIDIA/NVSentinel#1481: "link 0 … link 11"); links 16 and 17 down alone are a GB200's links still
            # training after a reboot (NVIDIA/NVSentinel#1701), links 0 and 9 a gap: the GPU has NVLink (a break-it
            # pass against "from link 0")
            return None
        model = scene.topo.gpu_model(host, key) or next((e.details.get("model") for e in evs
                                                          if e.details.get("model")), None)
        exp = expected_links(model)
        if exp:
            return None  # the platform wires NVLinks: "down" is a fault (link.inactive_where_wired)
        unknown_model |= exp is None
    (host, _t, key), evs = next(iter(by_gpu.items()))
    links = sorted({e.link for e in faults if e.link is not None})
    init = initiator_fields(scene, (host, "gpu", key), evs)
    return Verdict(
        pattern="benign.no_nvlink_on_gpu", category="link_fault", initiator=init, initiator_events=evs,
        confidence=0.6 if unknown_model else 0.85, severity="info",
        explanation=(f"Every NVLink reported for {key} on {host} is 'down' (links {links}, 0 on) and nothing "
                     "shows this GPU has NVLink at all: no link up, no NV# path in topo -m. PCIe GPUs without an "
                     "NVLink bridge report all links down by design; DCGM flags them anyway (a known false "
                     "positive)."),
        next_action=("No action: do not run field diagnostics or RMA for these links. If this GPU should have "
                     "NVLink, give its platform in the fleet config and re-run."),
        verify=[f"nvidia-smi nvlink -s -i {init.get('gpu_index') if init.get('gpu_index') is not None else 0}",
                "nvidia-smi topo -m", "nvidia-smi -q | grep -i 'product name'"],
        missing=(["the GPU model or the host's expected topology (fleet config, or nvidia-smi nvlink -s from a "
                  "healthy day) to confirm the GPU has no NVLink"] if unknown_model else []))


#: how long before srun's "task N: Killed" Slurm's own cancel of the step (``slurm.step_cancelled``) may come and be
#: why: srun's kill follows the step's signal within its KillWait (30 s by default) and the "Waiting up to 32 seconds"
CANCEL_REACH_US = 120 * S


def _cancel_before(c: Ev, k: Ev, scene: Scene) -> bool:
    """Slurm's cancel line ``c`` came before srun's kill report ``k`` and within :data:`CANCEL_REACH_US` of it: by
    their lines when both are of one capture (srun's output), else by their times."""
    if capture_of(c) == capture_of(k):
        if c.pos > k.pos:
            return False
    elif c.host != k.host:
        return False
    return may_cause(c, k, CANCEL_REACH_US, scene.clocks)


def job_cancelled(scene: Scene) -> Verdict | None:
    """Tasks srun reports Killed (``slurm.task_killed``) after Slurm cancelled their step on purpose (a time limit, a
    preemption, scancel: ``slurm.step_cancelled``) and nothing else: the kill of the cancel, no fault of the nodes (a
    real-logs pass: three time limits paged as errors). A task that crashed on its own signal, an OOM kill or any
    other fault keeps the incident what it was."""
    faults = scene.faults()
    if not faults or any(e.signature != "slurm.task_killed" for e in faults):
        return None
    cancels = [e for e in scene.events if e.signature == "slurm.step_cancelled"]
    if not cancels or not all(any(_cancel_before(c, k, scene) for c in cancels) for k in faults):
        return None
    first = cancels[0]
    reason = (first.details.get("cancel_reason") or "").lower()
    why = {"time limit": "its time limit", "preemption": "a preemption"}.get(reason, "scancel (no reason printed)")
    step = first.details.get("step") or "?"
    return Verdict(
        pattern="benign.job_cancelled", category="application",
        initiator=_host_initiator(first.host, "other", cancels), initiator_events=cancels,
        context=[e for e in scene.events if e not in cancels], confidence=0.9, severity="info",
        explanation=(f"Slurm cancelled step {step} on {first.host} on purpose ({why}); srun's \"Killed\" of the "
                     f"tasks on {first_of(sorted({k.host for k in faults}), noun='hosts')} after it is that cancel's "
                     "kill, not a fault of the nodes."),
        next_action=catalog_action(scene.catalog, first, scene.subject.get(first.event_id)),
        verify=verify_commands(scene.catalog, first, scene.subject.get(first.event_id)))


#: the port-state signatures of a NIC, and the states each calls up
PORT_UP = {"ib.mlx5_link": ("link_state", {"up"}), "ib.port_state": ("port_state", {"ACTIVE", "ACTIVE_DEFER"})}
#: how soon a port that went down must be up again for the down to be no incident: a link's negotiation at boot
#: (a ConnectX-6's "Link down" 16 s before its "Link up", a real-logs pass), not a port that stayed down under a job
PORT_BACK_US = 60 * S


def _port_of(e: Ev) -> tuple:
    return (e.host, e.signature, e.device, e.details.get("netdev") or e.details.get("ib_dev"), e.link)


def port_recovered(scene: Scene) -> Verdict | None:
    """A NIC port that went down once and came up again within :data:`PORT_BACK_US`, and nothing else: a link that
    negotiates at boot or a cable reseated, no fault (it stayed an open warning that said jobs die). A port that went
    down twice (a flap: a storm folded into one event counts its copies) or stayed down, or any other fault beside
    it (a job's NCCL errors: ``ib_port.explains_nccl``), keeps the incident what it was."""
    faults = scene.faults()
    if not faults or any(e.signature not in PORT_UP for e in faults):
        return None
    downs: dict[tuple, list[Ev]] = defaultdict(list)
    for e in faults:
        downs[_port_of(e)].append(e)
    for port, evs in downs.items():
        if len(evs) > 1 or evs[0].count > 1:
            return None
        down = evs[0]
        group, up_states = PORT_UP[down.signature]
        if not any(e is not down and _port_of(e) == port and e.details.get(group) in up_states
                   and e.order > down.order
                   and e.start - down.start <= PORT_BACK_US + e.start_precision_us + down.start_precision_us
                   for e in scene.events):  # not up again within the minute
            return None
    evs = sorted(faults, key=lambda e: e.order)
    key = scene.subject[evs[0].event_id]
    names = sorted({str(p[3] or p[2]) for p in downs})
    return Verdict(
        pattern="benign.port_recovered", category="ib_port",
        initiator=initiator_fields(scene, key, evs), initiator_events=evs,
        context=[e for e in scene.events if e not in evs], confidence=0.8, severity="info",
        explanation=(f"The NIC port{'s' if len(names) > 1 else ''} {', '.join(names)} of {evs[0].host} went down once "
                     "and came up again within a minute, and nothing else failed beside it: a link negotiating (at "
                     "boot, after a reset) or a cable reseated, not a flapping port."),
        next_action=("No action. If it goes down again, or jobs fail while it is down, check the cable or "
                     "transceiver and the switch port (ibstat, mlxlink, the switch's logs)."),
        verify=["ibstat", "ibdev2netdev"])


#: a node's CDI failures: its spec could not be generated, or a container asked for a device no spec defines
CDI_FAILED = frozenset({"nvidia_ctk.cdi_generate_failed", "cdi.unresolvable_devices"})
#: the line that says a CDI spec was generated (nvidia-ctk, ingest/signatures/nvml.yaml)
CDI_GENERATED = "nvidia_ctk.cdi_generated"
#: CDI devices no spec on disk serves: the NVIDIA runtime makes the runtime.nvidia.com spec itself as a container
#: starts (its automatic CDI mode), so a spec nvidia-ctk writes afterwards is no retry of that generation
CDI_RUNTIME_VENDOR = "runtime.nvidia.com"
#: how soon after a CDI failure its host must generate the spec for the failure to be recovered (µs): a retry, as the
#: refresh service's a second after NVML came up (NVIDIA/nvidia-container-toolkit#1611); no longer than a host's
#: context reaches a fault (rules.yaml's same_host link, 120 s), so the success line is in the failure's scene
CDI_BACK_US = 120 * S


def cdi_recovered(scene: Scene) -> Verdict | None:
    """A host's CDI failures — ``nvidia-ctk cdi generate`` failed, a container's "unresolvable CDI devices" — each
    followed on that host within :data:`CDI_BACK_US` by nvidia-ctk's "Generated CDI spec with version …", and nothing
    else: a retry made the spec (the refresh service at boot before the driver was ready, then again), no open error
    that says containers fail. The success line names no device: it clears the failures of its host, and of a device
    only where both name it. A failure with no later success within the bound, a spec the runtime makes itself
    (``runtime.nvidia.com``), or any other fault beside them keeps the incident what it was."""
    faults = scene.faults()
    if not faults or any(e.signature not in CDI_FAILED for e in faults):
        return None
    if any(e.signature == "cdi.unresolvable_devices" and e.details.get("cdi_vendor") == CDI_RUNTIME_VENDOR
           for e in faults):
        return None
    made = [e for e in scene.events if e.signature == CDI_GENERATED]
    fixed: dict[str, Ev] = {}
    for f in faults:
        after = [e for e in made if e.host == f.host and e.order > f.order
                 and (e.device is None or f.device is None or e.device == f.device)
                 and e.start - f.start <= CDI_BACK_US + e.start_precision_us + f.start_precision_us]
        if not after:
            return None
        fixed[f.event_id] = after[0]
    evs = sorted(faults, key=lambda e: e.order)
    key = scene.subject[evs[0].event_id]
    last = max(fixed.values(), key=lambda e: e.order)
    secs = max(0, (last.start - evs[0].start) // S)
    hosts = sorted({e.host for e in evs})
    what = "; ".join(dict.fromkeys(_cdi_failure(e) for e in evs))
    return Verdict(
        pattern="benign.cdi_recovered", category="other",
        initiator=initiator_fields(scene, key, evs), initiator_events=evs,
        context=[e for e in scene.events if e not in evs], confidence=0.8, severity="info",
        explanation=(f"The CDI spec of {', '.join(hosts)} could not be used ({what}), and nvidia-ctk generated it "
                     f"{secs} s later: a retry made it (at boot, NVML or the driver not ready yet, then ready), so "
                     "the failure is recovered and no container is left without its GPUs by it."),
        next_action=("No action. If containers still fail to start with \"unresolvable CDI devices\", list the "
                     "devices the node's specs define (nvidia-ctk cdi list) and generate the spec again."),
        verify=["nvidia-ctk cdi list", "ls -l /etc/cdi /var/run/cdi"])


def _cdi_failure(e: Ev) -> str:
    """What a CDI failure said, in a few words: the device no spec defined, or nvidia-ctk's reason."""
    if e.signature == "cdi.unresolvable_devices":
        return f"no spec defined {e.details.get('cdi_device') or 'the device'}"
    reason = str(e.details.get("cdi_error") or "").rsplit(": ", 1)[-1]
    return f"nvidia-ctk could not generate it: {reason}" if reason else "nvidia-ctk could not generate it"


#: an application Xid's last word, while it is one program's fault
APP_NO_RMA = "Do not drain or RMA the GPU for these Xids."
#: what an application Xid explanation says of the GPU (:func:`application_xid`), and what it says once the Xid has
#: come from several processes or incidents on that GPU, when NVIDIA's advice is DCGM's diagnostics (the recurring
#: incident said "not of the GPU" beside "run DCGM diagnostics … before blaming the programs alone": a real-logs pass
#: on pytorch/pytorch#51382)
APP_NOT_GPU = "), not of the GPU: no hardware Xid, ECC or link error accompanies"
APP_MAYBE_GPU = ("), not of the GPU unless the Xid keeps coming back on that GPU (below): no hardware Xid, ECC or link "
                 "error accompanies")
#: what to do once application Xids repeat on one GPU under different programs (NVIDIA's Xid catalog, Xid 31:
#: "repeated faults on the same GPU with different apps -> run DCGM diag"; Xid 13 alike); ``what`` says how it repeated
APP_RECUR_ADVICE = ("Application Xids came from {what}: run DCGM diagnostics on the GPU (dcgmi diag -r 3) before "
                    "blaming the programs alone; drain it if they fail, else debug the programs.")


#: the faulting address of an MMU fault's Xid line ("… faulted @ 0x0_0abe0000")
_FAULT_AT = re.compile(r"\bfaulted @ (0x[0-9a-fA-F_]+)")


def one_program_fault(events: list[Ev]) -> tuple[str, str] | None:
    """(program, address) when every line of ``events`` names the same program (``name=``: the event's ``process``)
    faulting at the same address (``faulted @``): one program repeating its own fault, run after run
    (NVIDIA/open-gpu-kernel-modules#363: chrome's Xid 31 at 0x0_0abe0000 on each console switch; tinygrad#6947: python's
    at 0x10_00200000, an open-module fix). None when a line names no program or no address, or two differ
    (pytorch/pytorch#51382: three processes' faults at three addresses, "likely a faulty device")."""
    seen = set()
    for e in events:
        at = _FAULT_AT.search(e.message)
        if not e.process or at is None:  # ingest.extract leaves an "<unknown>" program out
            return None
        seen.add((e.process, at[1].lower()))
        if len(seen) > 1:
            return None
    return next(iter(seen)) if seen else None


def recurs_to_diag(catalog: Catalog, xid: int | None) -> bool:
    """Whether NVIDIA's advice for application Xid ``xid`` sends it to DCGM's diagnostics when it repeats on one GPU
    under different programs (xid-catalog.csv: Xid 13 and 31 say so; Xid 43's is "nothing to do")."""
    fact = catalog.xids.get(xid) if xid is not None else None
    return fact is not None and "dcgm diag" in fact.action.lower()


def recovery_action(e: Ev) -> str | None:
    """What an Xid 154 says the GPU now needs ("Drain and Reset", "Node Reboot Required" …: its new recovery
    action, ``details.new_action_name``), or None for another event or the action "None". A GPU the driver wants
    reset or drained is not a program's fault alone (a break-it pass: Xid 13, then Xid 154 "to 0x4 (Drain and
    Reset)", was told "Node healthy … Do not drain")."""
    if e.xid != RECOVERY_XID or not recovery_action_code(e.details):  # 0 is the action "None"
        return None
    return str(e.details.get("new_action_name") or e.details.get("new_action"))


def _program_s_cuda_error(scene: Scene, e: Ev) -> bool:
    """``e`` is the CUDA error a program raised (its traceback's, its watchdog's) that an application Xid explains
    (``gpu_fault.explains_cuda_error``): the same fault seen from the program."""
    return e.kind == "cuda_error" and any(c.kind == "xid" and scene.role(c) == "application"
                                          for c in scene.causes_of(e))


def application_xid(scene: Scene) -> Verdict | None:
    """A program's own Xids (13, 31, 43 …) and their teardown, and the CUDA error the program raised for them (its
    traceback's "RuntimeError: CUDA error: an illegal memory access": read since cuda.program_error, it turned the
    benign case into a warning, a simulated scenario's check): the node is healthy."""
    faults = [e for e in scene.faults() if e.signature != SYMPTOM]
    if not faults or any(e.kind != "xid" and not _program_s_cuda_error(scene, e) for e in faults):
        return None
    app = [e for e in faults if e.kind == "xid" and scene.role(e) == "application"]
    if not app:
        return None
    # every other Xid must be a downstream teardown (43, 45, 154) on the same GPU as an application Xid
    app_gpus = {scene.subject[e.event_id] for e in app}
    mine = set(map(id, app))  # ``e in app`` compared every pair: 20,000 Xid 13 lines of one GPU took 3 s here alone
    for e in faults:
        if id(e) in mine or e.kind != "xid":  # the program's CUDA errors: checked above
            continue
        if scene.role(e) != "downstream" or scene.subject[e.event_id] not in app_gpus or recovery_action(e):
            return None
    first = min(app, key=lambda e: e.order)
    key = scene.subject[first.event_id]
    evs = [e for e in scene.events if scene.subject[e.event_id] == key]
    # the initiator GPU's own Xids; another GPU's are said apart ("Xid 13, 31 on 0000:1a:00.0" put the Xid 31 of
    # 0000:9a:00.0 on it: a real-logs pass on flashinfer#3869)
    own = [e for e in app if scene.subject[e.event_id] == key]
    xids = sorted({e.xid for e in own if e.xid is not None})
    lines = sum(e.count for e in own)
    others = sorted({str(g[2] or "an unnamed GPU") for e in app if (g := scene.subject[e.event_id]) != key})
    init = initiator_fields(scene, key, evs)
    init["kind"], init["xid"] = "xid", first.xid
    down, ctx = downstream_parties(scene, key, evs)
    # the GPU as the lines name it: its bus id, else its UUID (the device plugin's line), else unnamed ("on None"
    # and "nvidia-smi -q -i None" before: a break-it pass on k8s-device-plugin#189)
    gpu = key[2] or first.details.get("uuid")
    # what nvidia-smi -i takes: a bus id, an index or a UUID; not the subject's "gpu4" of a GPU named by index only
    # ("nvidia-smi -q -i gpu4" for DCGM's "Detected XID 31 for GPU 4": a real-logs pass, NVIDIA/NVSentinel#911)
    smi_id = (init["gpu_index"] if key[2] and key[2] == f"gpu{init.get('gpu_index')}" else gpu)
    one = lines == 1
    explanation = (f"Xid {', '.join(map(str, xids))} on {gpu or 'an unnamed GPU'} ({key[0]}) "
                   f"{'is a fault' if one else 'are faults'} of the program that ran there (Xid {first.xid}: "
                   f"{scene.catalog.xids[first.xid].name}{APP_NOT_GPU} {'it' if one else 'them'}.")
    if others:
        explanation += f" Application Xids on {first_of(others, 3, noun='GPUs')} too."
    action = sentences(scene.catalog.xids[first.xid].action, APP_NO_RMA)
    # NVIDIA's own advice (xid-catalog.csv, Xid 13 and 31): faults that repeat on one GPU under different programs
    # call for DCGM's diagnostics; a program's fault once does not (pytorch/pytorch#51382: three processes' Xid 31 on
    # one GPU, "likely a faulty device", were each "Node healthy … Do not drain or RMA": a real-logs pass)
    pids = {e.pid for e in own if e.pid is not None and e.pid > 0}
    severity = "info"
    same = one_program_fault(own) if len(pids) > 1 else None
    if same is not None:  # runs of one program that fault alike: the program's (or the driver's), not the GPU's
        explanation += (f" The {len(pids)} processes were runs of one program ({same[0]}) faulting at the same "
                        f"address ({same[1]}): a fault it repeats, not one of the GPU.")
        action = sentences(action, "If it repeats with every run, compare the driver with its release notes.")
    elif len(pids) > 1 and recurs_to_diag(scene.catalog, first.xid):  # a warning: what may be the GPU is no longer
        # one program's business
        severity = "warning"
        explanation = (explanation.replace(APP_NOT_GPU, APP_MAYBE_GPU, 1)
                       + f" They came from {len(pids)} different processes.")
        action = APP_RECUR_ADVICE.format(what=f"{len(pids)} different processes on this GPU")
    return Verdict(
        pattern="benign.application_xid", category="application", initiator=init, initiator_events=evs,
        downstream=down, context=ctx, confidence=0.8, severity=severity, explanation=explanation,
        next_action=action, verify=[f"nvidia-smi -q -i {smi_id or '<gpu>'} | grep -iA3 'Remapped\\|Retired'"])


# --- links --------------------------------------------------------------------------------------

#: next action for an NVLink inactive where the platform wires it (``inactive_where_wired``); ``{gpu}`` its index or
#: bus id. The by-design cases to rule out first: reference/topology.md §6 (MIG on A100, Fabric Manager not done);
#: reset, then field diagnostics and repair: §8 and §9 rule 3
WIRED_ACTION = ("A link the platform wires is inactive: a link or GPU fault, unless the GPU is in MIG mode (an A100's "
                "NVLinks are all inactive then) or Fabric Manager has not finished (`nvidia-smi -q`, Fabric State). "
                "Drain the GPU's jobs, reset it (nvidia-smi -r -i {gpu}) and recheck `nvidia-smi nvlink -s`; if the "
                "link stays inactive, run dcgmi diag -r 3 and have the GPU or baseboard repaired.")


def inactive_where_wired(scene: Scene) -> Verdict | None:
    downs = [e for e in scene.faults() if e.kind == "nvlink_down" and e.link is not None]
    if not downs or _serious_device_fault(scene):
        return None
    by_gpu: dict[tuple, list[Ev]] = defaultdict(list)
    for e in downs:
        by_gpu[scene.subject[e.event_id]].append(e)
    wired_off: dict[str, list[tuple]] = defaultdict(list)  # host -> its GPUs with links inactive where wired
    for (host, _t, key), evs in by_gpu.items():
        if key is None:
            continue
        up = scene.topo.links_up(host, key)
        model = scene.topo.gpu_model(host, key) or next((e.details.get("model") for e in evs
                                                          if e.details.get("model")), None)
        exp = expected_links(model)
        if up or exp:
            wired_off[host].append((key, evs, up, model, exp))
    for host, gpus in wired_off.items():
        # every wired link of each: what they share brought none up (a link or two of several GPUs are their own)
        # and no other GPU of the host with a link up (two GPUs of eight down, six up: the two are suspects, not what
        # all eight share: a break-it pass)
        mine = {k for k, *_ in gpus}
        if (len(gpus) > 1
                and all(exp and len({e.link for e in evs}) >= exp and not up for _k, evs, up, _m, exp in gpus)
                and not any(h == host and k not in mine and scene.topo.links_up(h, k)
                            for h, k in scene.topo.link_state)):
            return _gpus_inactive_where_wired(scene, host, gpus)
    for host, gpus in wired_off.items():
        key, evs, up, model, exp = gpus[0]
        links = sorted({e.link for e in evs})
        # the GPU's other faults are its own evidence too: link 2's CRC counters rising beside link 5 down were in
        # no part of the incident (a fresh user's trial)
        others = [e for e in scene.parties().get((host, "gpu", key), []) if scene.is_fault(e) and e not in evs]
        init = initiator_fields(scene, (host, "gpu", key), evs)  # the links down name the initiator's links
        init["kind"] = "nvlink_down"
        evs = evs + others
        init["events"] = [e.event_id for e in sorted(evs, key=lambda e: e.order)]
        down, ctx = downstream_parties(scene, (host, "gpu", key), evs)
        also = ""
        if others:
            kinds = sorted({e.kind for e in others})
            on = sorted({e.link for e in others if e.link is not None})
            also = (f" The same GPU also reported {', '.join(kinds)}"
                    + (f" on link{'s' if len(on) > 1 else ''} {', '.join(map(str, on))}" if on else "") + ".")
        wired = f"{exp} links on a {model}" if exp else f"{len(up)} other links of this GPU are up"
        gpu = init.get("gpu_index") if init.get("gpu_index") is not None else key
        return Verdict(
            pattern="link.inactive_where_wired", category="link_fault", initiator=init, initiator_events=evs,
            downstream=down, context=ctx, confidence=0.85 if exp else 0.7, severity="error",
            explanation=(f"NVLink{'s' if len(links) > 1 else ''} {', '.join(map(str, links))} of GPU {key} on {host} "
                         f"{'are' if len(links) > 1 else 'is'} inactive while the platform wires them ({wired}; up: "
                         f"{sorted(up) or 'unknown'}). Links inactive where they are wired are a link or GPU fault."
                         + also),
            # not the signature's own action: DCGM's "link N is currently down" says a PCIe card's links are down
            # by design, beside an explanation that the platform wires them (a fresh-user trial)
            next_action=WIRED_ACTION.format(gpu=gpu),
            verify=[f"nvidia-smi nvlink -s -i {gpu}", "nvidia-smi nvlink -e", "dcgmi diag -r 3"],
            missing=[] if scene.topo.nvlink_peer(host, key, links[0]) else
            ["nvidia-smi nvlink -R on the host, to name the far end of each inactive link"])
    return None


#: next action for NVLinks inactive where wired on several GPUs of one host: what those GPUs share first
#: (reference/topology.md §6: Fabric Manager and the NVSwitch baseboard on HGX; MIG mode on A100)
SHARED_WIRED_ACTION = ("The GPUs share what brings their NVLinks up: check Fabric Manager first (`systemctl status "
                       "nvidia-fabricmanager`, `nvidia-smi -q` Fabric State: it must be Completed) and MIG mode; then "
                       "drain the host, restart Fabric Manager after a GPU reset or reboot it, and recheck `nvidia-smi "
                       "nvlink -s`. Links that stay inactive on every GPU point at the NVSwitch baseboard: run dcgmi "
                       "diag -r 3 and have the baseboard repaired.")


def _gpus_inactive_where_wired(scene: Scene, host: str, gpus: list[tuple]) -> Verdict:
    """Every NVLink the platform wires inactive on several GPUs of ``host``: one cause they share (Fabric Manager,
    MIG, the NVSwitch baseboard), not one GPU each. The first GPU was named alone, its reset the action,
    the other GPUs' down links left out (a fresh user's trial: all 18 links of four H100s inactive)."""
    evs = sorted((e for _k, g, *_ in gpus for e in g), key=lambda e: e.order)
    init = _host_initiator(host, "nvlink_down", evs)
    init["links"] = sorted({e.link for e in evs})
    down, ctx = downstream_parties(scene, (host, None, None), evs)
    down = [p for p in down if not any(p.key == (host, "gpu", k) for k, *_ in gpus)]
    names = [f"{k} ({len({e.link for e in g})} link{'s' * (len({e.link for e in g}) != 1)})" for k, g, *_ in gpus]
    model = next((m for *_, m, _e in gpus if m), None)
    exp = next((x for *_, x in gpus if x), None)
    return Verdict(
        pattern="link.inactive_where_wired", category="link_fault", initiator=init,
        initiator_events=evs, downstream=down, context=ctx, confidence=0.8, severity="error",
        explanation=(f"NVLinks of {len(gpus)} GPUs on {host} are inactive while the platform wires them: "
                     f"{first_of(names, noun='GPUs')}" + (f" ({exp} links on a {model})" if exp else "")
                     + ". GPUs that lose their links together share the cause: Fabric Manager, MIG mode or the "
                     "NVSwitch baseboard, not each GPU."),
        next_action=SHARED_WIRED_ACTION,
        verify=["systemctl status nvidia-fabricmanager", "nvidia-smi -q | grep -A3 Fabric", "nvidia-smi nvlink -s",
                "dcgmi diag -r 3"])


def both_ends(scene: Scene) -> Verdict | None:
    """Both ends of one NVLink (``nvidia-smi nvlink -R``: GPU a's link i reaches GPU b's link j) report it: an
    NVLink Xid (74) at each end, or the link down / in errors at each end (``nvml.nvlink_inactive``, a DCGM link
    field), and neither GPU failed otherwise: the link is the initiator (``device_type: "link"``, ``device`` one
    end, ``peer`` the other; DESIGN.md), not either GPU. A bridged pair's link inactive at both ends was "no single
    culprit" with the first GPU's reset as its action, one incident per poll while it stayed down, none a recurrence
    of the last (a fresh user's trial)."""
    if any(e.kind in ("gpu_off_bus", "ecc") for e in scene.faults()):
        return None
    nv = [e for e in scene.faults() if e.link is not None and (
        e.kind in ("nvlink_down", "nvlink_errors")
        or (e.xid is not None and e.xid in scene.catalog.xids and scene.catalog.xids[e.xid].nvlink_related))]
    ends = {(e.host, scene.subject[e.event_id][2], e.link) for e in nv}
    pairs = {(a.host, frozenset((ka, far[0]))) for a in nv if (ka := scene.subject[a.event_id][2])
             and (far := scene.topo.nvlink_peer(a.host, ka, a.link)) and (a.host, far[0], far[1]) in ends}
    if len(pairs) > 1:
        # links of several GPU pairs down at both ends (a GPU wired straight to three peers, all its links down):
        # no one link is the first fault, and the other pairs' ends were listed as its downstream reporters, the
        # link's own GPU among them (a break-it pass)
        return None
    for a in nv:
        ka = scene.subject[a.event_id][2]
        far = scene.topo.nvlink_peer(a.host, ka, a.link) if ka else None
        if not far:
            continue
        for b in nv:
            if b is not a and b.host == a.host and scene.subject[b.event_id][2] == far[0] and b.link == far[1]:
                # every link of the pair reported at either end is of this report: a bridge whose four links all
                # went down named link 0 alone, GPU a's other links its own downstream ("same_host") and GPU b's
                # other links in no part of the incident (a break-it pass)
                kb = scene.subject[b.event_id]
                evs = [a, b] + [x for x in nv if x is not a and x is not b and x.host == a.host
                                and (pair := {scene.subject[x.event_id][2]}) & {ka, far[0]}
                                and (xf := scene.topo.nvlink_peer(a.host, scene.subject[x.event_id][2], x.link))
                                and {xf[0]} | pair == {ka, far[0]}]
                evs.sort(key=lambda e: e.order)
                links = sorted({x.link for x in evs if scene.subject[x.event_id][2] == ka} | {a.link})
                init = initiator_fields(scene, scene.subject[a.event_id], evs)
                init.update(device_type="link", device=ka, peer=far[0], link=a.link, links=links)
                down, ctx = downstream_parties(scene, scene.subject[a.event_id], evs)
                mine = {id(x) for x in evs}
                down = [p if p.key != kb else replace(p, events=[x for x in p.events if id(x) not in mine])
                        for p in down if p.key != kb or any(id(x) not in mine for x in p.events)]
                # a link the wiring names (-R) down at both ends is a fault of the link, an error as a link inactive
                # where the platform wires it is (link.inactive_where_wired): nvlink -s's "<inactive>" is a warning of
                # its own (by design on a PCIe card), and a bridged pair's link down at both ends, "drain both GPUs'
                # jobs", was a warning no page went out for (a fresh user's trial); an Xid keeps its own severity
                down_ = all(x.kind == "nvlink_down" for x in evs) and \
                    max(x.sev for x in scene.faults()) < SEVERITY_RANK["error"]
                return Verdict(
                    pattern="link.both_ends", category="link_fault", initiator=init, initiator_events=evs,
                    downstream=down, context=ctx, confidence=0.9, severity="error" if down_ else None,
                    explanation=(f"Both ends of one NVLink report {'errors' if a.xid is not None else a.kind} — "
                                 f"{ka} link {a.link} ({fault_name(a)}) and {far[0]} link {far[1]} ({fault_name(b)})"
                                 " — and neither GPU failed otherwise: the link itself (cable, connector, trace or "
                                 "transceiver) is the first fault."
                                 + (f" {ka}'s links {', '.join(map(str, links))} to {far[0]} all report it."
                                    if len(links) > 1 else "")),
                    next_action=(f"Drain both GPUs' jobs; reset both GPUs (nvidia-smi -r -i {ka}, then -i {far[0]}) "
                                 "and check the link's state and counters (nvidia-smi nvlink -s, -e); if the link "
                                 "errors or stays down again, have the NVLink path (bridge/baseboard/cable) "
                                 "repaired."),
                    verify=[f"nvidia-smi nvlink -e -i {ka}", f"nvidia-smi nvlink -e -i {far[0]}",
                            f"nvidia-smi nvlink -s -i {ka}"])
    return None


def nvswitch_common_end(scene: Scene) -> Verdict | None:
    """Several GPUs report link errors only on links that go to one NVSwitch: the switch is the common end.

    The wiring comes from ``nvidia-smi nvlink -R`` (GPU link -> switch bus id and port); SXids of that
    switch, when logged, are its own evidence.
    """
    if any(e.kind in ("gpu_off_bus", "ecc", "gpu_init_failed") for e in scene.faults()):
        return None
    nv = [e for e in scene.faults() if e.link is not None and (
        e.kind in ("nvlink_down", "nvlink_errors") or
        (e.xid is not None and e.xid in scene.catalog.xids and scene.catalog.xids[e.xid].nvlink_related))]
    ends: dict[tuple[str, str], dict[str, list[Ev]]] = defaultdict(lambda: defaultdict(list))
    unmapped = 0
    for e in nv:
        key = scene.subject[e.event_id][2]
        far = scene.topo.nvlink_peer(e.host, key, e.link) if key else None
        if far is None:
            unmapped += 1
            continue
        ends[(e.host, far[0])][key].append(e)
    if len(ends) != 1 or unmapped:
        return None
    (host, switch), gpus = next(iter(ends.items()))
    if len(gpus) < 2:
        return None
    sxids = [e for e in scene.faults() if e.kind == "sxid" and e.host == host and e.device == switch]
    init_events = sxids or []
    init = {"host": host, "device_type": "nvswitch", "device": switch, "link": None, "rank": None,
            "kind": "sxid" if sxids else "nvlink_errors", "xid": None, "sxid": sxids[0].sxid if sxids else None,
            "peer": None, "gpu_index": None, "links": None, "events": [e.event_id for e in init_events]}
    down = [Party((host, "gpu", k), evs, "same_nvswitch", "nvswitch.common_end") for k, evs in sorted(gpus.items())]
    down_ids = {e.event_id for p in down for e in p.events} | {e.event_id for e in init_events}
    ports = sorted({scene.topo.nvlink_peer(host, k, e.link)[1] for k, evs in gpus.items() for e in evs})
    return Verdict(
        pattern="nvswitch.common_end", category="nvswitch_fault", initiator=init, initiator_events=init_events,
        downstream=down, context=[e for e in scene.events if e.event_id not in down_ids],
        confidence=0.85 if sxids else 0.75, severity=None,
        explanation=(f"{len(gpus)} GPUs of {host} report NVLink errors, and every one of those links goes to the "
                     f"NVSwitch {switch} (ports {', '.join(map(str, ports))}, per nvidia-smi nvlink -R); no GPU "
                     "failed otherwise. The switch they share is the first fault"
                     + (f"; it logged SXid {sxids[0].sxid} itself." if sxids else ".")),
        next_action=("Drain the host; collect the Fabric Manager log and nvidia-bug-report.sh; reset the GPUs and "
                     "NVSwitches (stop FM, nvidia-smi -r, start FM). If the switch errors again, have the "
                     "baseboard serviced."),
        verify=["nvidia-smi nvlink -R", "nvidia-smi nvlink -e", "journalctl -u nvidia-fabricmanager -n 200"])


def fm_partition_sxids(scene: Scene) -> Verdict | None:
    """Every fault is an SXid whose catalog row says it comes only from Fabric Manager's configuration
    (``sxid-catalog.csv`` action ``CHECK_FM_CONFIG``: 11004 NPORT_INGRESS_ACLFAIL, "ingress invalid ACL", expected only
    with a wrong partition setup). The switches enforced the partitions they were given: GPUs of one VM or job in
    different partitions, not a switch fault. Four switches' SXids were "no single culprit" among the switches (a
    Shared NVSwitch passthrough how-to: two GPUs given to one VM from two partitions; a real-logs pass)."""
    # and the guest's jobs' Xid 45 (the catalog row: "the guest's CUDA jobs are aborted (Xid 45)", a break-it pass)
    faults = [e for e in scene.faults() if e.signature != SYMPTOM and e.xid != 45]
    if not faults or any(e.kind != "sxid" or e.sxid not in scene.catalog.sxids
                         or not scene.catalog.sxids[e.sxid].action.startswith("CHECK_FM_CONFIG") for e in faults):
        return None
    first = min(faults, key=lambda e: e.order)
    hosts = sorted({e.host for e in faults})
    switches = sorted({str(e.device) for e in faults if e.device})
    codes = sorted({e.sxid for e in faults})
    names = ", ".join(f"{c} ({scene.catalog.sxids[c].name})" for c in codes)
    init = {"host": hosts[0] if len(hosts) == 1 else None, "device_type": None, "device": None, "link": None,
            "rank": None, "kind": "fabric_manager", "xid": None, "sxid": first.sxid, "peer": None, "gpu_index": None,
            "links": None, "events": [e.event_id for e in faults]}
    ids = {e.event_id for e in faults}
    return Verdict(
        pattern="platform.fm_partition", category="fabric_manager", initiator=init, initiator_events=faults,
        downstream=[], context=[e for e in scene.events if e.event_id not in ids], confidence=0.7, severity="error",
        explanation=(f"SXid {names} on {len(switches) or 'the'} NVSwitch{'es' * (len(switches) != 1)} of "
                     f"{first_of(hosts, noun='hosts')}: the switches refused traffic their access control does not "
                     "allow, which NVIDIA expects only from a wrong Fabric Manager partition setup (sxid-catalog.csv: "
                     "CHECK_FM_CONFIG) — GPUs of one VM or job in different partitions. Not a switch fault."),
        next_action=sentences("Check Fabric Manager's partitions: the GPUs given to the VM or job must all be in one "
                              "activated partition (list and activate them with the partition API, e.g. NVIDIA's fmpm "
                              "sample: fmpm -l, fmpm -a <id>); then rerun. Fabric Manager's log says which partition "
                              "is active",
                              # a Fatal one left the switch needing its reset as any fatal SXid (the catalog: /FATAL)
                              "The switches said Fatal: reset them and the partition's GPUs before the rerun (stop "
                              "Fabric Manager, nvidia-smi -r, start it)" if any(e.fatal for e in faults) else ""),
        verify=["journalctl -u nvidia-fabricmanager -n 200", "nvidia-smi -q | grep -iA3 fabric"])


def missing_cause(scene: Scene) -> Verdict | None:
    unexplained = []
    for e in scene.faults():
        if e.signature != SYMPTOM and not scene.explained(e):
            if e.cause_xid is None:  # a fault nothing explains that names no cause: not this pattern
                return None
            unexplained.append(e)
    if not unexplained:
        return None
    present = {(scene.subject[e.event_id], e.xid) for e in scene.events}
    if any((scene.subject[e.event_id], e.cause_xid) in present for e in unexplained):
        return None
    refs: dict[tuple, set[int]] = defaultdict(set)
    for e in unexplained:
        refs[scene.subject[e.event_id]].add(e.cause_xid)
    facts = scene.catalog.xids

    def weight(x: int) -> tuple:
        f = facts.get(x)
        return ({"critical": 3, "error": 2, "warning": 1}.get(f.severity, 0) if f else 0,
                {"initiator": 2, "either": 1}.get(f.role, 0) if f else 0)

    ranked = sorted(refs.items(), key=lambda kv: max(weight(x) for x in kv[1]), reverse=True)
    hint = ranked[0][0] if len(ranked) == 1 or max(weight(x) for x in ranked[0][1]) > \
        max(weight(x) for x in ranked[1][1]) else None
    all_refs = sorted({x for s in refs.values() for x in s})
    cats = {facts[x].category for x in all_refs if x in facts}
    category = "link_fault" if "nvlink" in cats else "driver"
    sev = max((facts[x].severity for x in all_refs if x in facts),
              key=lambda s: {"critical": 3, "error": 2, "warning": 1, "info": 0}[s], default="error")
    desc = "; ".join(f"{k[2]} names Xid {', '.join(map(str, sorted(v)))}" for k, v in ranked)
    v = unknown_verdict(scene, [k for k, _ in ranked], category, why=(
        f"{len(unexplained)} lines ({', '.join(sorted({f'Xid {e.xid}' for e in unexplained}))}) say they were caused "
        f"by earlier Xids that are not in these logs: {desc}. "
        + (f"{hint[2]} is the only GPU whose cause is Xid {max(refs[hint], key=weight)} "
           f"({facts[max(refs[hint], key=weight)].name}), the likeliest first fault; " if hint else "")
        + "without the referenced lines the first fault cannot be named."))
    v.pattern, v.severity = "caused_by.missing_cause", sev
    v.initiator["referenced_xids"] = all_refs
    if hint:
        v.initiator["hint"] = {"host": hint[0], "device": hint[2], "xid": max(refs[hint], key=weight)}
    v.missing = [f"the kernel lines of Xid {', '.join(map(str, all_refs))} on "
                 f"{', '.join(sorted(str(k[2]) for k in refs))}"
                 " (full dmesg / journal of the host around these lines)",
                 "nvidia-smi nvlink -s and -e for the same GPUs"]
    v.next_action = sentences(f"Collect the full kernel log and nvidia-bug-report.sh from {ranked[0][0][0]}; look "
                              f"for the Xid {', '.join(map(str, all_refs))} lines to see which GPU and link failed "
                              "first", facts[all_refs[0]].action if all_refs and all_refs[0] in facts else "")
    return v


# --- platform and software ---------------------------------------------------------------------

def _host_parties(scene: Scene, host: str, faults: list[Ev]) -> tuple[list[Party], list]:
    """The downstream parties and context of a verdict whose initiator is ``host`` itself through ``faults``: those
    of :func:`downstream_parties` that hold more than those faults."""
    down, ctx = downstream_parties(scene, (host, None, None), faults)
    return [p for p in down if not set(p.events) <= set(faults)], ctx


def every_gpu_init_failed(scene: Scene) -> Verdict | None:
    """Several GPUs of one host whose driver initialisation fails with the same code (``RmInitAdapter failed!
    (0x11:0x45:2525)``) and nothing else: what they share failed — the driver, the host's PCIe/IOMMU, a VM's
    passthrough, the firmware — not each GPU. NVIDIA/gpu-operator#649 (two passed-through GPUs of a VM failing
    every five seconds) was "no single culprit" between the two GPUs with an NCCL-log next action (a real-logs
    pass). A cause a rule names (an API mismatch, GSP firmware missing: ``driver_install.explains_init_failure``)
    explains them, and this does not apply."""
    faults = [e for e in scene.faults() if e.signature != SYMPTOM]
    if not faults or any(e.kind != "gpu_init_failed" or scene.explained(e) for e in faults):
        return None
    host = _only_host(scene)
    gpus = sorted({scene.subject[e.event_id][2] for e in faults if scene.subject[e.event_id][2]}, key=str)
    codes = {e.details.get("code") for e in faults if e.details.get("code")}
    if host is None or len(gpus) < 2 or len(codes) != 1:
        return None
    code = codes.pop()
    down, ctx = _host_parties(scene, host, faults)
    return Verdict(
        pattern="platform.every_gpu_init_failed", category="driver",
        initiator=_host_initiator(host, "gpu_init_failed", faults), initiator_events=faults,
        downstream=down, context=ctx, confidence=0.6, severity="critical",
        explanation=(f"{len(gpus)} GPUs of {host} ({', '.join(gpus)}) fail to initialise with the same code "
                     f"(RmInitAdapter failed! ({code})) and nothing else is logged: what they share is the likelier "
                     "cause — the driver (its version, its install), the host's PCIe or IOMMU set-up, a VM's "
                     "passthrough, the firmware — than each GPU failing alike at once."),
        next_action=(f"Check what the GPUs of {host} share before replacing any: the driver and its firmware "
                     "(`modinfo nvidia`, the NVRM lines before these), a VM's passthrough settings (IOMMU, the MMIO "
                     "or 64-bit BAR space it gives the GPUs), the BIOS; then `nvidia-bug-report.sh`. Reseat or RMA a "
                     "GPU only if it still fails alone."),
        verify=[f"dmesg -T | grep -E 'NVRM|RmInitAdapter' (on {host})", f"nvidia-smi -q (on {host})"],
        missing=[f"the kernel log of {host} from the driver's load (the NVRM lines before the first failure)"])


def every_gpu_held_down(scene: Scene) -> Verdict | None:
    """Several GPUs of one host whose clocks the hardware holds down for the same reason (``nvidia-smi -q``'s
    "Clocks Event Reasons": ``HW Power Brake Slowdown : Active`` on each, with the ``HW Slowdown`` it sets) and
    nothing else: the server does it to all of them — its BMC asserts the power brake (a GPU its power table does not
    know, a power supply lost or in fault), or its cooling fails them all — not each GPU. A Dell C4130's four V100s
    braked by the iDRAC were "no single culprit" among the four, and the missing piece was said to be earlier kernel
    lines (l4rz/reverse-engineering-dell-idrac-to-get-rid-of-gpu-throttling; NVIDIA/NVSentinel#1666: two GPUs per node
    braked for 36 hours after a power event; a real-logs pass)."""
    faults = [e for e in scene.faults() if e.signature != SYMPTOM]
    if not faults or any(e.signature not in ("nvml.q_clocks_event", "nvml.q_hw_slowdown") for e in faults):
        return None
    host = _only_host(scene)
    by_gpu: dict[str, set[str]] = {}
    for e in faults:
        gpu = scene.subject[e.event_id][2]
        if gpu:
            by_gpu.setdefault(str(gpu), set()).add(str(e.details.get("clocks_reason") or ""))
    if host is None or len(by_gpu) < 2:
        return None
    if all(any("Power Brake" in r for r in rs) for rs in by_gpu.values()):
        what, why = "the power brake", ("the server's BMC asserting the brake (a GPU model its power table does not "
                                        "know, a power supply lost, failed or in redundancy loss)")
        action = (f"Look at {host}'s BMC, not the GPUs: its event log (`ipmitool sel elist`) for power supply "
                  "events, the power supplies' state, and whether the BMC firmware's power table knows this GPU "
                  "model (an update or the vendor's setting); `nvidia-smi -q -d PERFORMANCE` shows the brake clear "
                  "once it stops. Do not RMA the GPUs for this.")
    elif all(any("Thermal" in r for r in rs) for rs in by_gpu.values()):
        what, why = "thermal slowdown", "their cooling (fans, airflow, the inlet temperature)"
        action = (f"Check {host}'s cooling before the GPUs: its fans and their profile in the BMC, the inlet "
                  "temperature, blanking panels and airflow (`nvidia-smi -q -d TEMPERATURE,PERFORMANCE`, the BMC's "
                  "sensor and event logs).")
    else:
        return None
    gpus = sorted(by_gpu)
    down, ctx = _host_parties(scene, host, faults)
    return Verdict(
        pattern="platform.every_gpu_held_down", category="thermal_power",
        initiator=_host_initiator(host, "other", faults), initiator_events=faults,
        downstream=down, context=ctx, confidence=0.7, severity="warning",
        explanation=(f"{len(gpus)} GPUs of {host} ({', '.join(gpus)}) have their clocks held down by {what} and "
                     f"nothing else is logged: what they share — {why} — is the likelier cause than each GPU "
                     "failing alike at once."),
        next_action=action,
        verify=[f"ipmitool sel elist (on {host}'s BMC)", f"nvidia-smi -q -d PERFORMANCE (on {host})"],
        missing=[f"the BMC event log of {host} (`ipmitool sel elist`) from before the slowdown"])


def fabric_manager(scene: Scene) -> Verdict | None:
    fm = [e for e in scene.faults() if e.kind == "fabric_manager" and e.sev >= 1]
    nvls = [e for e in scene.faults() if e.signature.startswith("nccl.nvls.")]
    if not (fm or nvls) or _serious_device_fault(scene):
        return None
    lead = sorted(fm, key=lambda e: (-e.sev, e.start))[:1] or sorted(nvls, key=lambda e: e.start)[:1]
    host = lead[0].host
    parts = []
    # the IMEX daemon's own memory export errors (GB200/GB300: no Fabric Manager there) are no Fabric Manager's
    # (kubernetes-sigs/dra-driver-nvidia-gpu#948, a real-logs pass)
    imex = bool(lead) and lead[0].signature.startswith("imex.")
    # nvidia-imex-ctl's failed query of the daemon (a ComputeDomain daemon pod's probe) is the tool's line, not the
    # daemon's, and says the daemon is not ready, not that an export failed (kubernetes-sigs/dra-driver-nvidia-gpu#333,
    # a real-logs pass)
    unready = imex and lead[0].signature == "imex.daemon_unreachable"
    # the IMEX daemon losing a peer node of its domain is the peer's going (its daemon shut down or restarted), not
    # this host's fabric management (kubernetes-sigs/dra-driver-nvidia-gpu#1447, a real-logs pass)
    peer_lost = imex and lead[0].signature == "imex.peer_disconnected"
    # the kubelet finding no registered ComputeDomain kubelet plugin (the DRA driver's) on the node: the node's
    # Kubernetes set-up, neither Fabric Manager nor the IMEX daemon (kubernetes-sigs/dra-driver-nvidia-gpu#814, a
    # real-logs pass)
    unregistered = bool(lead) and lead[0].signature == "cd.kubelet_plugin_unregistered"
    # every fabric fault names one GPU (nvidia-smi -q's Fabric block of that GPU: Status an error, Health Unhealthy):
    # that GPU did not register, not the host's Fabric Manager at large, so the incident names it
    # (NVIDIA/NVSentinel#883: one GPU of a node at "Unknown Error" beside peers at Success; the device was dropped, a
    # real-logs pass)
    one_gpu = bool(fm) and not nvls and len({(e.host, e.device_type, e.device) for e in fm}) == 1 \
        and fm[0].device_type == "gpu" and bool(fm[0].device)
    if unregistered:
        parts.append(f"The kubelet on {host} could not prepare a pod's ComputeDomain claim: no kubelet plugin of the "
                     f"DRA driver {lead[0].details.get('dra_driver') or 'compute-domain.nvidia.com'} is registered "
                     "there")
    elif unready:
        parts.append(f"nvidia-imex-ctl on {host} could not query the IMEX daemon: "
                     f"“{lead[0].message.splitlines()[0].strip()[:160]}”")
    elif one_gpu:  # the GPU's own fabric state, not the daemon's word (a break-it pass: "Fabric Manager on … says")
        parts.append(f"The fabric state of GPU {fm[0].device} on {host} reads “{_payload(lead[0])}” "
                     f"({fault_name(lead[0])})")
    elif fm:  # the line the daemon named says (Fabric Manager's exit quoted as the IMEX daemon's: a break-it pass)
        parts.append(f"{'The IMEX daemon' if imex else 'Fabric Manager'} on {host} says: “{_payload(lead[0])}”")
    if nvls:
        gpus = len({scene.subject[e.event_id] for e in nvls})
        codes = sorted({e.details.get("cuda_error") for e in nvls if e.details.get("cuda_error")})
        parts.append(f"NCCL could not set up NVLS (NVLink SHARP) multicast"
                     f"{' (CUDA error ' + ', '.join(codes) + ')' if codes else ''} on "
                     f"{gpus} GPU{'s' if gpus > 1 else ''}")
    # pytorch/pytorch#150852 is CUDA error 1, 'invalid argument': named where NVLS failed so (or the code is not
    # printed), not for 401 or 999 (corpus 019, 027, 039: a fresh user's trial)
    invalid_argument = not nvls or any(e.details.get("cuda_error") in (None, "", "1") for e in nvls)
    init_events = fm + nvls
    down, ctx = downstream_parties(scene, (host, None, None), init_events)
    down = [p for p in down if not set(p.events) <= set(init_events)]
    initiator = _host_initiator(host, "fabric_manager", init_events)
    if one_gpu:
        initiator.update(device_type="gpu", device=fm[0].device,
                         gpu_index=next((e.gpu_index for e in fm if e.gpu_index is not None), None))
    return Verdict(
        pattern="platform.fabric_manager", category="fabric_manager",
        initiator=initiator, initiator_events=init_events,
        downstream=down, context=[e for e in ctx if e not in init_events],
        confidence=0.85 if fm else 0.7,
        severity="warning" if (peer_lost or unregistered and all(e.sev <= 1 for e in fm)) and not nvls else "error",
        explanation=("; ".join(parts) + ". No GPU, NVLink or NVSwitch fault is logged, so "
                     + ("" if peer_lost or unregistered or one_gpu else "the NVLink fabric ")
                     + (_imex_peer_lost(scene, lead[0]) if peer_lost else
                        "the node's Kubernetes set-up is the cause: the DRA driver's kubelet-plugin pod is not running "
                        "or not registered on it, so the pod waits in ContainerCreating and the domain's IMEX daemons "
                        "do not start here." if unregistered else
                        "this GPU did not register with the NVLink fabric: the fabric faults here are its alone, so "
                        "the GPU (its NVLinks, its reset), not the host's fabric management at large, is the first "
                        "suspect." if one_gpu else
                        "management of this host is the cause: its IMEX daemon did not answer (not ready, or the "
                        "tool reached for an address the daemon does not listen on), so a ComputeDomain's daemon pod "
                        "stays unready and the domain's multi-node NVLink workloads wait for it."
                        if unready else
                        "management of this host is the cause: the IMEX daemons of its domain could not export or "
                        "import memory (a workload started before every node's daemon was ready, a node missing from "
                        "the domain)." if imex else
                        "management of this host is the cause: Fabric Manager not running, restarted without a GPU "
                        "reset, or missing what it needs (IMEX channels, ib_umad on NVLink5 boards)."
                        if fm else
                        "management of this host is the likelier cause: Fabric Manager not running, restarted "
                        "without a GPU reset, or missing what it needs (IMEX channels, ib_umad on NVLink5 boards); "
                        "with Fabric Manager healthy, the NCCL release with this driver"
                        + (" (NVLS's 'invalid argument' on one node's older driver, fixed by NCCL 2.26.5: "
                           "pytorch/pytorch#150852)." if invalid_argument else "."))),
        next_action=catalog_action(scene.catalog, lead[0], scene.subject.get(lead[0].event_id)),
        verify=(verify_commands(scene.catalog, lead[0], scene.subject.get(lead[0].event_id))
                or ["systemctl status nvidia-fabricmanager", "nvidia-smi -q | grep -A3 Fabric"]),
        missing=[] if fm else ["the Fabric Manager journal (journalctl -u nvidia-fabricmanager): was it stopped, "
                                "restarted or failing when the job started?"])


def nccl_hang_with_benign_nvlink(scene: Scene) -> Verdict | None:
    """A hang whose only device evidence is non-fatal or privilege-class NVLink Xids (NVIDIA/nccl#2241): any
    other device fault (an NVSwitch SXid, a contained memory error Xid 94 that killed a rank's process, an
    AER error) is evidence this pattern cannot explain away, so it leaves the incident to the others."""
    hang = _hang(scene)
    if not hang or _serious_device_fault(scene):
        return None
    hardware = scene.hardware_faults()
    nv = [e for e in hardware if e.xid is not None and e.xid in scene.catalog.xids
          and scene.catalog.xids[e.xid].nvlink_related]
    if not nv or len(nv) != len(hardware) or any(
            e.fatal is True or (scene.role(e) != "application" and e.sev >= 3) for e in nv):
        return None
    host = _only_host(scene) or hang[0].host
    links = sorted({e.link for e in nv if e.link is not None})
    return Verdict(
        pattern="software.nccl_hang_with_benign_nvlink", category="nccl_software",
        initiator=_host_initiator(host, "nccl_error", hang), initiator_events=hang,
        context=[e for e in scene.events if e not in hang], confidence=0.5, severity="error",
        explanation=(f"Collectives hung on {host}. The only NVLink evidence is non-fatal or privilege-class Xids "
                     f"({', '.join(sorted({f'Xid {e.xid}' for e in nv}))} on link{'s' if len(links) > 1 else ''} "
                     f"{', '.join(map(str, links)) or '?'}): they do not take a link down. With no device fault, a "
                     "software hang (NCCL or the application's use of it) is the first suspect."),
        next_action=("Treat it as a software hang: rerun with NCCL_DEBUG=INFO and the flight recorder "
                     "(TORCH_NCCL_TRACE_BUFFER_SIZE), try NCCL_NVLS_ENABLE=0 or another NCCL release; keep the "
                     "NVLink counters under watch (nvidia-smi nvlink -e)."),
        verify=["nvidia-smi nvlink -e", "python -c 'import torch; print(torch.cuda.nccl.version())'"],
        missing=["the NCCL version and NCCL_DEBUG=INFO output of the hung run",
                 "whether the hang persists with NCCL_NVLS_ENABLE=0 or another NCCL version"])


def pcie_p2p_blocked(scene: Scene) -> Verdict | None:
    hang = _hang(scene)
    if not hang or scene.hardware_faults():
        return None
    host = _only_host(scene) or hang[0].host
    paths = scene.topo.host_paths(host)
    pcie = [(a, b, p) for a, b, p in paths if p in PCIE_PATHS]
    nvlink = [x for x in paths if x[2].startswith("NV")]
    disabled = [e for e in scene.events if e.kind == "nccl_p2p_fallback" and
                (e.details.get("p2p_disabled_by") or e.signature == "shell.env.p2p_disable")]
    models = {e.details.get("model") for e in scene.events if e.details.get("model")}
    if not ((pcie and not nvlink) or disabled):
        return None
    ev: list[str] = []
    if pcie:
        ev.append("topo -m shows the GPUs talking over PCIe (" + ", ".join(
            sorted({f"{a.replace('gpu', 'GPU')}-{b}: {p}" for a, b, p in pcie})) + ") with no NVLink")
    if disabled:
        ev.append("the run only works with " + sorted({e.details.get('p2p_disabled_by') or 'NCCL_P2P_DISABLE=1'
                                                     for e in disabled})[0] + " (P2P switched off)")
    if models:
        ev.append("GPUs: " + ", ".join(sorted(m for m in models if m)))
    return Verdict(
        pattern="platform.pcie_p2p_blocked", category="pcie_p2p",
        initiator=_host_initiator(host, "pcie_p2p", hang + disabled), initiator_events=hang + disabled,
        context=[e for e in scene.events if e not in hang and e not in disabled],
        confidence=0.6, severity="error",
        explanation=("Collectives hang with no GPU, link or PCIe error logged; " + "; ".join(ev) + ". GPU-to-GPU P2P "
                     "over PCIe is not working on this platform: PCIe ACS or the IOMMU (VT-d/AMD-Vi) redirects "
                     "P2P through the root complex, or the GPUs advertise P2P they do not support. "
                     "Not a single GPU's fault."),
        next_action=_p2p_action(models),
        verify=["nvidia-smi topo -m", "sudo lspci -vvv | grep -i acsctl", "dmesg | grep -iE 'DMAR|IOMMU|AMD-Vi'",
                "nvidia-smi topo -p2p r"],
        missing=["ACS control bits of the bridges above the GPUs, and whether the IOMMU is on"])


#: what to check when P2P over PCIe hangs (ACS or the IOMMU redirecting it: nccl-tests#117 and NCCL's docs)
_ACS_ACTION = ("check ACS on the PCIe bridges above the GPUs (lspci -vvv | grep ACSCtl) and the IOMMU setting; disable "
               "ACS (setpci, BIOS) or boot with iommu=pt / pci=noacs, then rerun nccl-tests.")


def _p2p_action(models: set[str | None]) -> str:
    """The next action of ``pcie_p2p_blocked``. GeForce cards can advertise PCIe P2P they do not support (RTX 4090:
    NVIDIA reproduced the hang, NVIDIA/nccl#631; "4090 does not support" P2P, NVIDIA/nccl#1127; corpus 018), so
    for them the P2P switch-off is the fix and ACS the check only if P2P should work; for other models ACS or
    the IOMMU is the usual cause and the switch-off the stopgap."""
    if any(m and "geforce" in m.lower() for m in models):
        return ("These GeForce GPUs can advertise PCIe P2P they do not support (RTX 4090: NVIDIA/nccl#631, #1127): "
                "run with NCCL_P2P_DISABLE=1. Only if this model should do P2P here: " + _ACS_ACTION)
    return sentences(_ACS_ACTION, "Until then NCCL_P2P_DISABLE=1 avoids the hang.")


def _comm_of(scene: Scene, timeouts: list[Ev]) -> str | None:
    """The communicator the timed-out ranks belong to: of the communicators NCCL init lines described (a
    fleet has many jobs, a job several communicators), the one whose rank -> host map agrees with the most
    of the timeouts' (rank, host) pairs; None when none agrees with any. A pair counts for a communicator only
    while it held the timeout's GPUs (``Topology.comm_live``): a job restarted on the same hosts is not
    matched against its previous run's membership. Within ``HANDOVER_MARGIN_US`` of a restart both runs'
    communicators count; the one that took the GPUs over last wins the tie (a job that hangs at its first
    collective after the restart is the new run's, also when Kafka timed its init lines late: the old run's
    processes were gone before the new ones started)."""
    topo = scene.topo
    seen: dict[tuple[int | None, str], list[Ev]] = {}
    for e in timeouts:
        seen.setdefault((e.rank, e.host), []).append(e)
    best, score = None, (0, 0, 0)
    for comm, members in topo.comm_ranks.items():
        hosts = [h for r, (h, _d) in members.items()
                 if (r, h) in seen and any(topo.comm_live(comm, h, e) for e in seen[(r, h)])]
        took_over = max((since for h in hosts if (since := topo.comm_span.get((comm, h), (None,))[0]) is not None),
                        default=0)
        if hosts and (len(hosts), took_over, len(members)) > score:
            best, score = comm, (len(hosts), took_over, len(members))
    return best


def _reports_for(scene: Scene, e: Ev, timeout: Ev) -> bool:
    """``e`` is a downstream line of the process that logged ``timeout`` (same host and rank; catalog role
    ``downstream``: PyTorch's watchdog taking the process down, its thread terminating; torchrun's line on that
    process's exit, which names its local rank only; a crash handler's line on the abort that ended it, which names
    none: ``model.CRASH_SIGNALS``), which reports that timeout and says nothing of another fault."""
    return (e.host == timeout.host and scene.role(e) == "downstream"
            and (e.rank == timeout.rank or (e.rank is None and e.signature.startswith(PROCESS_END))))


#: how many collectives of one process group the other ranks can be ahead of a rank that is stuck: those they enqueue
#: before a step's host sync waits for it (a training step runs hundreds, FSDP's per-layer gathers a few thousand at
#: most). A rank further behind is of another group whose SeqNums count apart, though the lines name none (PyTorch
#: before 2.3 prints "[Rank 7]" alone): pytorch/pytorch#118369's rank 7 on SeqNum 64088 beside rank 0 on 96125 was
#: told "behind, look there first" (a real-logs pass)
SEQ_BEHIND_MAX = 5_000


def _several_groups(timeouts: Iterable[Ev]) -> bool:
    """Whether ``timeouts`` (watchdog timeouts whose lines name no process group) are of several groups: a rank's
    own timeouts of one group are of consecutive SeqNums (its watchdog reports the hung collective, then the ones
    queued behind it), so a rank whose SeqNums skip some ran collectives of several groups. Megatron's rank 0 timed
    out on 257, 1032 and 1796 (its data-, tensor- and pipeline-parallel groups; PyTorch before 2.3 prints "[Rank 0]"
    alone) beside rank 3 on 33, and rank 3 was told "behind, look there first" (NVIDIA/Megatron-LM#1142, a real-logs
    pass)."""
    seqs: dict[int, set[int]] = defaultdict(set)
    for e in timeouts:
        if e.seq is not None and e.rank is not None:
            seqs[e.rank].add(e.seq)
    return any(max(qs) - min(qs) >= len(qs) for qs in seqs.values())


#: the most ranks a communicator's size is believed at (131,072: NCCL's largest jobs hold about a hundred thousand): a
#: larger ``nranks`` is a garbled or hostile line, not a size to list the silent ranks of (at 2^20, 300 communicators
#: of one init line each took 110 s: a break-it pass)
NRANKS_MAX = 1 << 17


#: how far a checkpoint save's start may stand from a timeout's window and still be taken as inside it: a line's time
#: and the watchdog's poll interval ("ran for 600058 milliseconds" of a 600000 ms timeout), a few seconds
SAVE_SLACK_US = 5_000_000


def _timeout_us(t: Ev) -> int:
    """The process group's timeout of watchdog timeout ``t``, µs (its elapsed time where it printed none); 0
    without."""
    return (t.timeout_ms or t.elapsed_ms or 0) * 1000


def _save_before(save: Ev, t: Ev) -> bool:
    """The checkpoint save ``save`` began at or before the implied start of the timeout ``t`` and within its timeout
    before it: the ranks entered the collective while the save ran. A save line that printed no time (a
    torchtune line before the stamped watchdog lines, timed by the line after it: ``details.ts_upper_bound``) counts
    when it comes at most :data:`SAVE_LINES` lines before the timeout in the same file and its bound does not put it
    a whole timeout before."""
    window = _timeout_us(t)
    if not window:
        return False
    if save.undated():
        return (capture_of(save) == capture_of(t) and 0 < t.pos - save.pos <= SAVE_LINES
                and save.ts >= t.start - window - SAVE_SLACK_US)
    return t.start - window - SAVE_SLACK_US <= save.ts <= t.start + SAVE_SLACK_US


def slow_checkpoint(scene: Scene) -> Verdict | None:
    """Ranks that timed out on a collective they entered while a checkpoint save was running (a trainer's "Saving
    checkpoint" line at or before the timeout's implied start, within the timeout): the rank that saved (rank 0,
    writing the whole model) did not reach the collective before the process group's timeout — a slow save, not a
    rank that stopped. meta-pytorch/torchtune#2093: "Saving checkpoint took 965.61 secs" against the 600 s default;
    ranks 3, 4, 5, 7 timed out and it read "the silent rank cannot be named" (a real-logs pass; a longer
    init_process_group timeout fixed it, PR #2901). Not with a device fault in the scene (an Xid, ECC, a link), nor
    with another fault than the timeouts and their reports (a worker that exited with its own error among them):
    those may be why the collective hung. The save is the job's (a timeout's own log, or a host the communicator's
    init lines place a rank on) and did not end, by its own log, in less than the timeout before the collective
    began (torchtune's "Saving checkpoint took N secs")."""
    timeouts = [e for e in scene.events if e.kind == "nccl_timeout" and e.elapsed_ms]
    saves = [e for e in scene.events if e.signature.endswith(CHECKPOINT_SAVE)]
    if not timeouts or not saves or scene.hardware_faults() or _serious_device_fault(scene):
        return None
    if any(e.kind not in ("nccl_timeout", "nccl_error") and e.signature != SYMPTOM and scene.role(e) != "downstream"
           and not e.signature.startswith(TORCHRUN_AGENT) for e in scene.faults()):
        return None
    if any(e.kind == "nccl_error" and scene.role(e) != "downstream" for e in scene.faults()):
        return None  # an NCCL error of its own (a lost peer, a transport failure) is another cause
    # a worker that exited with an error of its own (a Python exception: exit code 1) is why the others waited, not the
    # save (the watchdog's own abort, -6, is the timeouts' report): a break-it pass
    if any(e.signature in ("torch.elastic.worker_failed", "torch.elastic.root_cause")
           and str(e.details.get("exitcode", "")).isdigit() for e in scene.events):
        return None
    comm = _comm_of(scene, [e for e in timeouts if e.rank is not None])
    # the save's line is the job's: in a timeout's own log, or on a host the communicator's init lines place a rank of
    # the job on (another job's save on the same host was "the save": a break-it pass)
    members = {h for h, _d in scene.topo.comm_ranks[comm].values()} if comm else set()
    # a save whose end the log prints before the timeout, shorter than the timeout, made nobody wait that long
    # (torchtune's "Saving checkpoint took 40.80 secs" an hour before the hang: a break-it pass)
    ended = [e for e in scene.events if e.signature == "torchtune.checkpoint_saved"]
    fits = [(s, t) for t in timeouts for s in saves
            if (capture_of(s) == capture_of(t) or s.host in members) and _save_before(s, t)
            and not any(capture_of(x) == capture_of(s) and s.pos < x.pos < t.pos
                        and float(x.details.get("save_s") or 0) * S < _timeout_us(t) for x in ended)]
    if not fits:
        return None
    save = max((s for s, _t in fits), key=lambda e: e.order)  # the save nearest the hang
    waited = sorted({t for s, t in fits if s is save}, key=lambda e: e.order)
    lead = waited[0]
    ranks = sorted({e.rank for e in scene.events if e.kind == "nccl_timeout" and e.rank is not None})
    timeout_s = _timeout_us(lead) / S
    when = (f"before the timeout lines in {capture_of(save).split(':', 1)[-1].split('@', 1)[0]} (it printed no "
            "time of its own)" if save.undated() else f"at {_iso(save.ts)}")
    m = re.search(scene.catalog.by_id[save.signature].sig.pattern, save.message)
    said = save.message[m.start():m.start() + 120].splitlines()[0].strip() if m else _payload(save)
    down, ctx = _host_parties(scene, save.host, [save])
    init = _host_initiator(save.host, "other", [save])
    return Verdict(
        pattern="comm.slow_checkpoint", category="application", initiator=init, initiator_events=[save],
        downstream=down, context=ctx, confidence=0.5 if save.undated() else 0.6, severity="error",
        explanation=(f"A checkpoint save began on {save.host} {when} (\"{said}\"), and "
                     f"{'rank' if len(ranks) == 1 else 'ranks'} {ranks_said(ranks, {}) or '?'} timed out "
                     f"{'on SeqNum ' + str(lead.seq) + ' ' if lead.seq is not None else ''}after "
                     f"{timeout_s:,.0f} s in a collective {'it' if len(ranks) == 1 else 'they'} entered at "
                     f"{_iso(lead.start)}, while it ran: the rank "
                     "that saved (rank 0 writing the whole model, often) had not reached the collective within the "
                     "process group's timeout. A save slower than the timeout, not a rank that stopped; the ranks' "
                     "hardware is not the suspect."),
        next_action=(f"Make the timeout longer than the save: init_process_group(timeout=…) above the save's time (it "
                     f"is {timeout_s:,.0f} s now; the framework's own setting: torchtune's, Trainer's "
                     "`ddp_timeout`, DeepSpeed's `timeout`), or put a barrier with a long timeout around the save, or "
                     "save asynchronously or sharded (torch.distributed.checkpoint, async_save) so no rank writes "
                     "the whole model while the others wait. Check the save's time in its own log (\"Saving "
                     "checkpoint took …\") and the storage it writes to."),
        verify=[f"grep -iE 'saving|saved|checkpoint' <the job's log on {save.host}>",
                f"df -h <the checkpoint directory> (on {save.host})"],
        missing=["the save's end (its \"saved\" line and time) or its duration, to compare with the timeout"])


def _iso(us: int) -> str:
    return datetime.fromtimestamp(us / 1e6, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S")


def _rank_parties(timeouts: list[Ev]) -> list[Party]:
    """The ranks that timed out as downstream parties of a hang (``same_comm``, ``comm.silent_rank``): one per rank
    of a host, with its lines in their order. A rank's watchdog timeout and the exception its watchdog raised after
    it were two parties, each rank listed twice (a scenario trial)."""
    by_rank: dict[tuple, list[Ev]] = defaultdict(list)
    for e in sorted(timeouts, key=lambda e: e.order):
        by_rank[(e.host, "rank", f"rank{e.rank}")].append(e)
    return [Party(k, evs, "same_comm", "comm.silent_rank") for k, evs in by_rank.items()]


def _waited_for(scene: Scene, rank: int, where: tuple, size: int, why: str, timeouts: list[Ev], own: list[Ev],
                confidence: float, reports: list[Ev] | None = None) -> Verdict:
    """``comm.silent_rank``'s verdict naming ``rank`` as the one the timed-out ranks waited for: the rank that logged
    no timeout of a communicator's collective, or the one PyTorch's desync report names (``reports``). ``where``:
    its (host, GPU) from NCCL's init lines, or (None, None); ``own``: its own timeouts (on an earlier collective:
    behind the others), its initiator events; every other timeout is downstream (``same_comm``)."""
    init = {"host": where[0], "device_type": "gpu" if where[1] else None,
            "device": where[1] if where[1] and not where[1].startswith("gpu") else None, "link": None,
            "rank": rank, "kind": "nccl_timeout", "xid": None, "sxid": None, "peer": None,
            "gpu_index": None, "links": None, "events": [e.event_id for e in own]}
    down = _rank_parties([e for e in timeouts if e not in own])
    on_host = f" (on {where[0]})" if where[0] else ""
    v = Verdict(
        pattern="comm.silent_rank", category="nccl_hang", initiator=init, initiator_events=list(own),
        downstream=down, confidence=confidence, explanation=why,
        next_action=(f"Look at rank {rank}'s host{' ' + where[0] if where[0] else ''}: its kernel log (Xid, "
                     "AER), its process state (py-spy dump) and its GPU (nvidia-smi)."),
        verify=[f"nvidia-smi{on_host}", f"dmesg -T | tail -100{on_host}"])
    if reports:
        v.context = list(v.context) + [e for e in reports if e not in v.context]
    if where[0] is None:  # named, but no line placed it: say what would (it said nothing was missing)
        v.missing = [f"the host of rank {rank}: its NCCL init line (\"rank {rank} nranks {size or '<n>'}\", "
                     "NCCL_DEBUG=INFO), or the job's rank-to-host map from the scheduler",
                     f"the kernel log of rank {rank}'s host around the implied start of the timeout"]
        v.next_action = (f"Find the host of rank {rank} (the job's rank-to-host map, or its NCCL init line) and "
                         "look at its kernel log (Xid, AER), its process state (py-spy dump) and its GPU "
                         "(nvidia-smi).")
    return _read_in_part(scene, v, {where[0]})


#: the rank list of a desync report line: "[3, 4, 5] joined but didn't finish collective #315"
_LAGGING = re.compile(r"\[([\d, ]*)\] (?:joined but didn't finish|finished) collective #")


def _desync_ranks(scene: Scene, timeouts: list[Ev], size: int) -> tuple[list[int], list[Ev]]:
    """The ranks PyTorch's desync reports in ``scene`` name as those the others waited for, ascending, and those
    reports: only reports that follow one of ``timeouts`` (``details.report_of``, ``model.follow_reports``: a report
    under another process group's timeout names that group's ranks, a break-it pass), their whole bracketed list
    (read from the line: the signature's field holds at most its last 400 characters, "9" of "119" was read as rank
    9), without ranks at or past ``size`` when it is known (no rank of this communicator); none of a report that
    lists every rank of the communicator or a rank of ``timeouts`` (ranks in the collective with those that waited in
    it: it names no laggard). At most ``NRANKS_MAX`` ranks, each below it."""
    mine = {e.event_id for e in timeouts}
    waited = {e.rank for e in timeouts}
    reports = [e for e in scene.events if e.signature == DESYNC_REPORT and e.details.get("report_of") in mine]
    ranks: set[int] = set()
    used: list[Ev] = []
    for e in reports:
        m = _LAGGING.search(e.message)
        listed = [int(x) for x in (m.group(1).split(",") if m else ()) if x.strip().isdigit() and len(x.strip()) <= 7]
        if (size and len(set(listed)) >= size) or not waited.isdisjoint(listed):
            continue  # every rank, or ranks that timed out waiting here too: no laggard named
        named = [r for r in listed if r < NRANKS_MAX and (not size or r < size)]
        if named:
            used.append(e)
            ranks.update(named[:NRANKS_MAX - len(ranks)])
    return sorted(ranks), used


#: how long before a hang's collective began a rank's exit still counts as the one its peers waited for (µs): a
#: rank that left the loop before the others issued their last collective (the ``same_host`` link's window)
EXIT_LEAD_US = 120 * S
#: PyTorch's line at the exit of a process that never called destroy_process_group (torch.yaml)
PG_NOT_DESTROYED = "torch.pg_not_destroyed"


def _ranks_timed_out(ranks: set[int]) -> str:
    return f"rank {next(iter(ranks))}" if len(ranks) == 1 else f"{len(ranks)} ranks"


def _exited_rank(scene: Scene, mine: list[Ev]) -> tuple[int, list[Ev]] | None:
    """The one rank of the job whose process exited (``torch.pg_not_destroyed``: ProcessGroupNCCL's destructor
    without destroy_process_group) from ``EXIT_LEAD_US`` before the hang's collective began (``Ev.start`` of
    ``mine``, the timeouts of one collective) until its last timeout line, and that is none of the processes that
    timed out, with its exit lines; None when no rank or several did. Ranks are the job's (c10's ``[rank4]:``
    prefix; ``details.global_rank`` of a timeout of another process group). Every rank prints the line at a normal
    exit: alone it names nobody (NVIDIA/nccl#1504: rank 0 exited a second after rank 1's SeqNum 1 began, and rank 1
    timed out 30 minutes later; it read "the silent rank cannot be named"). An exit line of a rank that timed out,
    logged before its own timeout line, is no process of this job (a process that ended does not time out later): the
    exit lines are another job's on a shared host, and name none (two 4-GPU jobs on one host, one ending normally as
    the other hung: the ended job's rank 0 was named, its rank 1 passed over as a rank that timed out; a break-it
    pass)."""
    if not mine:
        return None
    timed_out: dict[int | str | None, int] = {}  # rank in the job -> its first timeout line (µs)
    for e in mine:
        r = e.details.get("global_rank", e.rank)
        timed_out[r] = min(timed_out.get(r, e.ts), e.ts)
    lo, hi = min(e.start for e in mine) - EXIT_LEAD_US, max(e.ts for e in mine)
    gone: dict[int, list[Ev]] = defaultdict(list)
    for e in scene.events:
        if e.signature != PG_NOT_DESTROYED or e.rank is None or not lo <= e.ts <= hi:
            continue
        if e.rank not in timed_out:
            gone[e.rank].append(e)
        elif e.ts < timed_out[e.rank]:
            return None
    if len(gone) != 1:
        return None
    r, evs = next(iter(gone.items()))
    return r, sorted(evs, key=lambda e: e.order)


def silent_rank(scene: Scene) -> Verdict | None:
    timeouts = [e for e in scene.events if e.kind == "nccl_timeout" and e.rank is not None]
    if not timeouts or _serious_device_fault(scene) or any(scene.explained(e) for e in timeouts):
        return None
    # one rank's timeout alone too: it waited for another rank, so it is no cause (the roots fallback would name it
    # the earliest fault nothing explains); beside another fault or an operator's report, the patterns after this
    # one and the roots fallback weigh them (a non-fatal SXid, Fabric Manager's set-up: a break-it pass)
    # (the rank's own reporting lines are no other fault: PyTorch's "Some NCCL operations have failed or timed out"
    # and "… taking the entire process down" after the timeout made it "the earliest fault nothing else explains",
    # DeepDeWedge#22, vllm#6042: a real-logs pass)
    if len(timeouts) == 1 and (scene.symptoms() or any(scene.is_fault(e) and not _reports_for(scene, e, timeouts[0])
                                                       for e in scene.events if e is not timeouts[0])):
        return None
    # SeqNums and ranks count within a process group: a line of another group than the default names its group
    # (``details.pg``, ``pg_guid``: "[PG ID 6 PG GUID 623(…) Rank 2]") or at least that it is another
    # (``details.global_rank``: "?"); the default group's ranks are those NCCL's init lines describe (a break-it
    # pass: PG 6's rank 2 was matched against them). A group's GUID is no communicator id across the fleet: every
    # job has a PG 1, so it is not the event's ``comm`` (which would join all jobs' PG 1 lines)
    def own_group(e: Ev) -> str | None:
        pg = e.details.get("pg")
        if pg is not None and str(pg) != "0":
            return f"pg:{e.details.get('pg_guid') or pg}"
        return "?" if "global_rank" in e.details else None

    # a process's lines about one collective are of one group, though only some print it ("[Rank 13] Watchdog caught
    # …" beside "[PG ID 6 … Rank 13] failure detected by watchdog at work sequence id: 1"): by host, rank in the job
    # and SeqNum
    def process(e: Ev) -> tuple:
        return e.host, e.details.get("global_rank", e.rank), e.seq

    printed = {process(e): g for e in timeouts if (g := own_group(e)) not in (None, "?")}

    def group_said(e: Ev) -> str | None:
        g = own_group(e)
        return printed.get(process(e), g) if g in (None, "?") else g

    # PyTorch 2.2 – 2.3 name a group only in the line after the timeout ("[PG 1 Rank 8] Exception (either an error or
    # timeout) detected by watchdog at work: 1580", no GUID; its "[Rank 8] Watchdog caught …" names none): where
    # ranks whose logs hold the timeout line alone name no group on a SeqNum, and the others' lines name one such
    # group, they are one collective, of the communicator NCCL's lines describe (rank 8 timed out on 1580, was told
    # "also rank 8 on SeqNum 1580" and counted among the ranks that logged no timeout: a fresh user's trial)
    unnamed = {e.seq for e in timeouts if e.seq is not None and group_said(e) is None}
    groups_at: dict[int, set[str]] = defaultdict(set)
    for e in timeouts:
        if e.seq in unnamed and (g := group_said(e)) is not None:
            groups_at[e.seq].add(g if g != "?" and not e.details.get("pg_guid") else "")
        elif e.seq in unnamed and str(e.details.get("pg")) == "0":  # "[PG 0 Rank 2]": the default group, named:
            groups_at[e.seq].add("")  # a "[PG 6 Rank 0]" beside it on that SeqNum is another group (a break-it pass)

    def group(e: Ev) -> str | None:
        g = group_said(e)
        return None if g is not None and len(groups_at.get(e.seq, ())) == 1 and "" not in groups_at[e.seq] else g

    by_seq: dict[tuple[str | None, int | None], set[int]] = defaultdict(set)
    for e in timeouts:
        by_seq[(group(e), e.seq)].add(e.rank)
    # the collective most ranks timed out on; of equally many, the default group's, then the latest (a rank behind
    # it is then told as behind)
    (grp, seq), ranks = max(by_seq.items(), key=lambda kv: (len(kv[1]), kv[0][0] is None,
                                                            -1 if kv[0][1] is None else kv[0][1]))
    mine = [e for e in timeouts if group(e) == grp and e.seq == seq]
    comm = _comm_of(scene, mine) if grp is None else None
    members = scene.topo.comm_ranks.get(comm, {}) if comm else {}
    # a communicator's size as its lines say it, up to NRANKS_MAX: an init line's "nranks 2147483647" built a set of
    # two billion ranks below (23 GB; the service's every step failed with MemoryError and no incident came out: a
    # break-it pass)
    size = max([n for e in (scene.events if grp is None else mine) if (n := e.nranks or 0) <= NRANKS_MAX]
               + [n if (n := scene.topo.comm_size.get(comm, 0) if comm else 0) <= NRANKS_MAX else 0, len(members)])
    member_ranks = set(members)
    silent_ranks = sorted(set(range(size)) - ranks) if size else []
    lagging, reports = _desync_ranks(scene, [e for e in timeouts if group(e) == grp], size)
    own_pg = grp not in (None, "?")  # a process group of its own, not the default one
    on_seq = ("" if seq is None else f" on SeqNum {seq}") + (f" of process group {grp[3:]}" if own_pg else "")
    if len(lagging) == 1:
        # PyTorch's desync report names the one rank the others waited for (pytorch/pytorch#152623: rank 7 finished
        # #182 and never joined #183; it read "the silent rank cannot be named" two lines above the report)
        r = lagging[0]
        state = {str(e.details.get("desync_state")) for e in reports}
        did = ("joined a collective and did not finish it" if state == {"joined but didn't finish"}
               else "finished a collective and did not join the next" if state == {"finished"}
               else "fell behind the others")
        seqs = ", #".join(sorted({str(e.details.get("lag_seq")) for e in reports}))
        why = (f"{_ranks_timed_out(ranks)} timed out{on_seq}; PyTorch's desync report (TORCH_NCCL_DESYNC_DEBUG) names "
               f"rank {r}: it {did} (#{seqs}, counted from 1 by the report), so the others were waiting for it.")
        return _waited_for(scene, r, members.get(r, (None, None)), size, why, timeouts, [], 0.7, reports)
    exited = _exited_rank(scene, mine)
    if exited is not None:
        r, gone = exited
        who = f"the process of global rank {r}" if own_pg else f"rank {r}"
        began = min(e.start for e in mine)
        lead = (gone[0].ts - began) / S
        when = f"{lead:.1f} s after" if lead >= 0 else f"{-lead:.1f} s before"
        why = (f"{_ranks_timed_out(ranks)} timed out{on_seq}; {who} exited without destroy_process_group (PyTorch's "
               f"warning at its exit) {when} the collective began: its "
               "peers waited for a process that had ended.")
        where = (None, None) if own_pg else members.get(r, (None, None))
        v = _waited_for(scene, r, where if where[0] else (gone[0].host, where[1]), size, why, timeouts, [], 0.7,
                        gone)
        v.next_action = (f"Find why {who} on {gone[0].host} ended while its peers were still in a collective: its "
                         "last lines and traceback (an exception, an OOM kill, a rank that left the training loop "
                         "early: uneven batches per rank, a condition on the rank), then make every rank run the same "
                         "collectives and call destroy_process_group at the end.")
        return v
    if len(silent_ranks) > 1 and len(ranks) < size and all(r in members and members[r][0] for r in silent_ranks):
        return _read_in_part(scene, _silent_ranks(scene, [e for e in timeouts if group(e) is None], seq, size,
                                                  silent_ranks, members), {members[r][0] for r in silent_ranks})
    if size and len(ranks) == size - 1:
        silent = silent_ranks[0]
        # the rank may have timed out too, on an earlier collective: behind the others, not silent (it read "rank 5
        # did not … never reported" beside rank 5's own timeout on SeqNum 1578: a fresh user's and a break-it pass)
        behind = [e for e in timeouts if e.rank == silent and group(e) == grp and e.seq is not None
                  and seq is not None and e.seq < seq]
        if behind:
            why = (f"{len(ranks)} of {size} ranks timed out on SeqNum {seq}; rank {silent} timed out on SeqNum "
                   f"{min(e.seq for e in behind)}, behind them: the others were waiting for it to reach {seq}.")
        else:
            why = (f"{len(ranks)} of {size} ranks timed out{'' if seq is None else f' on SeqNum {seq}'}; rank "
                   f"{silent} did not. The rank that never reported is the one the others were waiting for.")
        return _waited_for(scene, silent, members.get(silent, (None, None)), size, why, timeouts, behind, 0.7)
    lowest = {}
    for e in mine:
        done = e.details.get("last_completed")
        if done is not None:
            lowest[e.rank] = int(done)
    on = f" (SeqNum {seq})" if seq is not None else ""
    if own_pg:
        on += f" of process group {grp[3:]}"

    def named(e: Ev) -> str:
        # a rank of a process group other than the default one prints its rank in that group; c10's "[rank218]:"
        # prefix gives the process's rank in the job (``details.global_rank``, ingest.assemble)
        return f"{e.rank} (global rank {e.details['global_rank']})" if "global_rank" in e.details else str(e.rank)

    names = {e.rank: named(e) for e in mine}
    what = "timed out on" if seq is not None else "hung in"  # a stuck watchdog names no collective
    if len(ranks) > 1:
        same = sorted(set(lowest.values()))
        why = (f"{len(ranks)} ranks ({ranks_said(sorted(ranks), names)}) {what} the same collective{on}; "
               "every visible rank waited, so none of them is the cause"
               + ("" if len(lowest) < len(ranks) or len(same) != 1  # said of each only when each said it
                  else ", and none of them had completed any work yet" if same[0] < 0
                  else f", and their last completed work is the same ({same[0]})"))
    else:
        why = (f"rank {names[next(iter(ranks))]} {what} a collective{on}: it waited for another rank, so it is not "
               "the cause")
    # the other timeouts: of the same group on an earlier collective, the ranks behind (the one the others wait for,
    # or nearer to it); of another collective or group, said as such (a stuck watchdog's ranks hid a timed-out one)
    seen = {(group(e), e.rank) for e in mine}  # a rank named already: its other lines say nothing more
    rest = [e for e in timeouts if (group(e), e.rank) not in seen]
    mixed = grp is None and _several_groups(e for e in timeouts if group(e) is None)
    behind = [e for e in rest if grp != "?" and not mixed and group(e) == grp and e.seq is not None
              and seq is not None and seq - SEQ_BEHIND_MAX <= e.seq < seq]
    if behind:
        lo = min(e.seq for e in behind)
        late = sorted({named(e) for e in behind if e.seq == lo})
        why += (f"; rank{'s' if len(late) > 1 else ''} {', '.join(late)} "
                f"{'are' if len(late) > 1 else 'is'} behind, still on SeqNum {lo}: look there first")
    told = {id(e) for e in behind}
    far = {id(e) for e in rest if group(e) == grp and e.seq is not None and seq is not None
           and e.seq < seq - SEQ_BEHIND_MAX}
    other = sorted({(e.seq is None, e.seq or 0, named(e), id(e) in far) for e in rest if id(e) not in told})
    if other:
        said = [f"rank {n} {'hung' if none else f'on SeqNum {q}'}"
                + (" (too far behind to be of the same process group)" if apart else "")
                for none, q, n, apart in other]
        why += f"; also {first_of(said, 4, noun='ranks')}"
        if mixed:
            why += (" (the lines name no process group, and one rank's own timeouts skip SeqNums: they are of "
                    "several groups, whose SeqNums do not compare, so none of these ranks is known to be behind)")
    # the ranks that logged no timeout whose host NCCL's init lines give: the membership known in part is said (it
    # said "without the communicator's membership" while the lines placed 8 silent ranks on one host: a fresh user)
    placed: dict[str, list[int]] = defaultdict(list)
    for r in silent_ranks:
        if r in members and members[r][0]:
            placed[members[r][0]].append(r)
    unplaced = [r for r in silent_ranks if not (r in members and members[r][0])]
    # every rank of the communicator timed out: none was silent (it said "without the communicator's membership"
    # and asked for the init lines it had: a fresh user's trial)
    every = bool(size) and len(ranks) == size and not behind
    if placed and unplaced:
        at = "; ".join(f"{_rank_runs(rs)} on {h}" for h, rs in sorted(placed.items()))
        why += (f". Of the {len(silent_ranks)} of {size} ranks that logged no timeout, NCCL's init lines place {at}; "
                f"where {_rank_runs(unplaced)} ran is not known")
    elif every:
        why += (f". All {size} ranks of the communicator timed out: no rank was silent, so what stopped the "
                "collective is not in these ranks' lines (a host, NIC or network fault the kernel logs of the job's "
                "hosts may show, or a rank's process that stopped without a line)")
    elif unplaced and members and size:
        # NCCL's init lines of some ranks only (one host's log of two): the silent ranks are those the logs do not
        # hold (it said "without the communicator's membership" and asked for the init lines it had: a fresh user)
        why += (f". {len(unplaced)} of its {size} ranks ({_rank_runs(unplaced)}) logged no timeout, and no line here "
                "places them: their hosts' logs are not in these files")
    elif lagging:
        why += (f". PyTorch's desync report names ranks {_rank_runs(lagging)} as those the others waited for; no line "
                "here places them")
    else:
        why += ". Without the communicator's membership the silent rank cannot be named"
    v = unknown_verdict(scene, [(h, None, None) for h in sorted(placed)] if placed and unplaced else [], "nccl_hang",
                        why=why + ".")
    v.pattern = "comm.silent_rank"
    v.missing = ["NCCL init lines (rank, nranks, commId: NCCL_DEBUG=INFO) of every rank, to see which rank never "
                 "timed out", "the kernel logs of every host of the job around the implied start of the timeout"
                 if not member_ranks else "logs of the ranks that did not report"]
    if unplaced and (placed or (members and size)):
        v.missing[0] = f"NCCL init lines or logs of ranks {_rank_runs(unplaced)}, to see where they ran"
    elif every:
        v.missing = ["the kernel logs of every host of the job around the implied start of the timeout",
                     "a flight recorder dump (TORCH_NCCL_TRACE_BUFFER_SIZE) to see which rank stopped first"]
    if seq is not None and placed and unplaced:
        hosts = ", ".join(sorted(placed))
        its = "its" if len(placed) == 1 else "their"
        v.next_action = (f"Check {hosts} first (ranks there logged no watchdog timeout for this SeqNum): {its} kernel "
                         f"log (Xid, AER, NIC link), {its} processes (py-spy dump) and GPUs; then find where ranks "
                         f"{_rank_runs(unplaced)} ran.")
    elif every:
        v.next_action = ("Every rank timed out: check the kernel logs (Xid, AER, NIC link) and the network of the "
                         "job's hosts around the implied start of the timeout; enable TORCH_NCCL_TRACE_BUFFER_SIZE for "
                         "a flight recorder dump next time.")
    elif lagging:
        v.context = list(v.context) + [e for e in reports if e not in v.context]
        v.missing[0] = f"NCCL init lines or the job's rank-to-host map for ranks {_rank_runs(lagging)}"
        v.next_action = (f"Find the hosts of ranks {_rank_runs(lagging)} (the desync report's lagging ranks: the job's "
                         "rank-to-host map, or their NCCL init lines) and check them first: kernel log (Xid, AER, NIC "
                         "link), processes (py-spy dump) and GPUs.")
    elif seq is not None:
        v.next_action = ("Find the rank that did not log a watchdog timeout for this SeqNum and check its host; "
                         "enable TORCH_NCCL_TRACE_BUFFER_SIZE for a flight recorder dump next time.")
    else:  # what the ranks' own lines advise (a stuck watchdog: take a stack), then the silent rank
        lead = min(timeouts, key=lambda e: e.order)
        v.next_action = sentences(catalog_action(scene.catalog, lead, scene.subject.get(lead.event_id)),
                                  "Find the rank that did not report and check its host")
    return _out_of_step(v, mine, seq) if seq is not None else v


#: c10's OpTypes whose ranks all give one element count (``NumelIn``): not all-to-all, point-to-point, gather or
#: scatter, whose counts are per rank (c10d ProcessGroupNCCL.cpp, ``WorkNCCL``'s ``numelIn``)
SAME_NUMEL_OPS = frozenset({"BROADCAST", "ALLREDUCE", "REDUCE", "REDUCE_SCATTER", "_REDUCE_SCATTER_BASE", "ALLGATHER",
                            "_ALLGATHER_BASE", "COALESCED", "ALLREDUCE_COALESCED", "ALLGATHER_COALESCED",
                            "REDUCE_SCATTER_COALESCED"})


def _out_of_step(v: Verdict, mine: list[Ev], seq: int) -> Verdict:
    """Ranks that timed out on one SeqNum of one process group while running different collectives (c10's
    ``OpType``, or its ``NumelIn`` for a collective every rank gives one count: :data:`SAME_NUMEL_OPS`): they are
    out of step, each waiting for peers that are in another collective — the program issued a
    collective on some ranks only, not a rank that stopped. They were told to find a silent rank (NVIDIA/nccl#1409:
    rank 7's BROADCAST and rank 3's ALLREDUCE at SeqNum 80078, at the end of every epoch; a real-logs pass)."""
    ops: dict[str, list[int]] = defaultdict(list)
    for e in mine:
        if e.op and e.rank is not None:
            # a collective whose every rank gives the same element count names it too: the same BROADCAST of 64
            # and of 24,084,544 elements are two collectives (modelscope/ms-swift#10183, a real-logs pass)
            n = e.details.get("numel_in") if e.op in SAME_NUMEL_OPS else None
            ops[f"{e.op} of {int(n):,} elements" if n is not None and str(n).isdigit() else e.op].append(e.rank)
    # a rank in two of them: two process groups (two jobs of one host) that share SeqNum 1, not one out of step
    if len(ops) < 2 or sum(len(set(rs)) for rs in ops.values()) != len({r for rs in ops.values() for r in rs}):
        return v
    said = "; ".join(f"{op} on rank{'s' * (len(set(rs)) > 1)} {_rank_runs(sorted(set(rs)))}"
                     for op, rs in sorted(ops.items()))
    v.pattern, v.category, v.confidence = "comm.out_of_step", "application", 0.6
    v.explanation = (f"The ranks that timed out on SeqNum {seq} were not in the same collective ({said}): ranks that "
                     "issue different collectives at one sequence number are out of step, each waiting for peers "
                     "that are in another one. The program ran a collective on some ranks only (a branch on the "
                     "rank, an uneven number of batches per rank, a collective inside a condition); no rank's "
                     "hardware is shown at fault.")
    v.next_action = ("Find the code path that issues a collective on some ranks only: compare the ranks' stacks "
                     "(py-spy dump) or a flight recorder dump (TORCH_NCCL_TRACE_BUFFER_SIZE) at this SeqNum; "
                     "TORCH_DISTRIBUTED_DEBUG=DETAIL checks that every rank calls the same collective with the same "
                     "shapes.")
    v.missing = ["the Python stacks of the ranks at the timeout (py-spy dump, or the flight recorder dump)"]
    return v


def _rank_runs(ranks: list[int], most: int = 8) -> str:
    """Ranks as runs: ``[0, 1, 2, 3, 9, 11, 12]`` -> ``"0–3, 9, 11–12"``; past ``most`` runs, the first ``most`` and
    how many ranks in all ("8, 16, …, 64 … (80 ranks)": every 8th of 640 ranks printed 80 numbers, a break-it
    pass)."""
    runs: list[list[int]] = []
    for r in sorted(ranks):
        if runs and r == runs[-1][1] + 1:
            runs[-1][1] = r
        else:
            runs.append([r, r])
    said = ", ".join(str(lo) if lo == hi else f"{lo}–{hi}" for lo, hi in runs[:most])
    return said if len(runs) <= most else f"{said} … ({len(ranks)} ranks)"


def _read_in_part(scene: Scene, v: Verdict, hosts: set[str | None]) -> Verdict:
    """A silent rank is told by a line its log does not hold: when a file that would hold it was read in part
    (``Topology.cut_files``: a truncated .gz, a file past ``max_bytes``) — a file of the silent rank's host
    (``hosts``; any file when its host is unknown, ``None``), or a job's log of several hosts — the line may be in the
    part lost.
    A job's log cut just before rank 15's timeout named rank 15 the one the others waited for, at 0.7, though the file
    was known to be cut (a break-it pass): said, at 0.4, and the whole file is what is missing. Another host's file
    read in part says nothing of it (a second break-it pass)."""
    cut = sorted(f for f, of in scene.topo.cut_files.items() if None in hosts or len(of) > 1 or of & hosts)
    if not cut:
        return v
    v.confidence = min(v.confidence, 0.4)
    v.explanation += (f" But {first_of(cut, noun='files')} {'was' if len(cut) == 1 else 'were'} read in part (cut "
                      "short): a timeout of the ranks named here may be in the part lost.")
    v.missing = [f"the whole of {first_of(cut, noun='files')} (cut short: copied while it was written, a truncated "
                 ".gz)", *v.missing]
    return v


def _silent_ranks(scene: Scene, timeouts: list[Ev], seq: int | None, size: int, silent: list[int],
                  members: dict[int, tuple[str, str | None]]) -> Verdict:
    """Several ranks of the communicator logged no timeout for the collective the others timed out on, and NCCL's
    init lines place each of them (formats.md §12.2: every rank that times out reports the same SeqNum; the ones
    that do not are the suspects). All on one host — a host that died, hung or lost its network: its 8 GPUs are 8
    silent ranks — that host is the initiator; on several, no single culprit, those hosts the candidates. (Only
    one silent rank was named before; a whole host's were "no culprit: without the communicator's membership",
    with the membership given: a break-it pass.)"""
    by_host: dict[str, list[int]] = defaultdict(list)
    for r in silent:
        by_host[members[r][0]].append(r)
    down = _rank_parties(timeouts)
    timed = sorted({e.rank for e in timeouts})
    on = '' if seq is None else f' on SeqNum {seq}'
    ranks_text = ranks_said(sorted(silent), {})
    if len(by_host) == 1:
        (host, hr), = by_host.items()
        # an operator's report of that host agrees, said (cluster.components joins it to the job's hang: it was an
        # incident of its own saying the logs hold nothing of the host, a fresh user's trial); not the initiator's
        # evidence: an untimed report is placed at the host's first line, and would move the incident's start
        told = [e for e in scene.symptoms() if e.host == host]
        init = {"host": host, "device_type": None, "device": None, "link": None, "rank": None,
                "kind": "nccl_timeout", "xid": None, "sxid": None, "peer": None, "gpu_index": None, "links": None,
                "events": []}
        return Verdict(
            pattern="comm.silent_rank", category="nccl_hang", initiator=init, initiator_events=[], downstream=down,
            confidence=0.65,
            explanation=(f"{len(timed)} of {size} ranks timed out{on}; the {len(hr)} that did not (ranks "
                         f"{ranks_text}) all ran on {host}. The ranks that never reported are the ones the others "
                         f"were waiting for: {host} (a host that died, hung or lost its network stops all its ranks "
                         "at once)." + (f" The operator reported a {told[0].details.get('symptom', 'failure')} of "
                                        f"{host} too." if told else "")),
            next_action=(f"Look at {host}: is it up and reachable, its kernel log (Xid, AER, NIC link), its "
                         "processes' state (py-spy dump) and its GPUs (nvidia-smi)."),
            verify=[f"ping {host}", f"dmesg -T | tail -100 (on {host})", f"nvidia-smi (on {host})"],
            missing=[f"the kernel log of {host} around the implied start of the timeout"])
    # at most eight hosts, each one's ranks in ranges (512 silent ranks of 1,024 hosts were 30 KB of explanation, 3 KB
    # of next action and of missing: a break-it pass)
    names = [f"{h} (rank{'s' if len(rs) > 1 else ''} {ranks_said(sorted(rs), {})})"
             for h, rs in sorted(by_host.items())]
    why = (f"{len(timed)} of {size} ranks timed out{on}; the {len(silent)} that did not ran on "
           f"{len(by_host)} hosts: {first_of(names, 8, '; ', noun='hosts')}. The others waited for one of them; the "
           "logs do not say which.")
    v = unknown_verdict(scene, [(h, None, None) for h in sorted(by_host)], "nccl_hang", why=why)
    v.pattern = "comm.silent_rank"
    hosts = first_of(sorted(by_host), 8, noun="hosts")
    v.missing = [f"the kernel logs of {hosts} around the implied start of the timeout",
                 "which of those ranks' processes were still alive (py-spy dump, the scheduler's job state)"]
    v.next_action = (f"Check which of {hosts} stopped first: their kernel logs (Xid, AER, NIC link), processes "
                     "(py-spy dump) and GPUs (nvidia-smi).")
    return v


#: what a rank prints when the other end of its connection went away: its peer failed, not it (NCCL misc/socket.cc;
#: ncclRemoteError, "remote process exited or there was a network error": torch.yaml; XLA's too); an InfiniBand
#: completion flushed (status 5, IBV_WC_WR_FLUSH_ERR) because its queue pair was already in error: the first error
#: is elsewhere, the peer's when no other completion error of this host came before (areal-project/AReaL#3: the
#: reporting rank was the initiator at 0.75, the peer 10.10.11.9 unnamed; a real-logs pass)
IB_WC_WR_FLUSH_ERR = "5"


#: GPUDirect-TCPX's wait on a peer's control message (a slowness report: the peer has not sent yet)
TCPX_WAIT = "tcpx.ctrl_timeout"


def _reports_a_peer(e: Ev) -> bool:
    # GPUDirect-TCPX's wait for a peer's control message names the peer that has not sent
    # (google/nccl-plugin-gpudirecttcpx#1)
    if e.signature in ("nccl.socket.peer_lost", "mpi.peer_disconnected", "nccl.ras.process_lost", TCPX_WAIT):
        return True
    if e.signature == "nccl.net_ib.completion_error":
        return str(e.details.get("ib_status", e.details.get("ib_error"))) == IB_WC_WR_FLUSH_ERR
    if e.signature == "torch.nccl_result":
        return e.details.get("nccl_result") == "ncclRemoteError"
    if e.signature == "tf.collective_abort":  # TensorFlow's "Aborting RingReduce with Unavailable: Socket closed"
        return str(e.details.get("reason", "")).lower().startswith(("socket closed", "connection reset"))
    return (e.signature in ("torch.nccl_error", "nccltests.nccl_failure", "xla.nccl_error", "xla.nccl_async_error",
                            "vllm.nccl_error", "paddle.nccl_error", "horovod.nccl_error")
            and str(e.details.get("reason", "")).startswith("remote process exited"))


def _network_reason(e: Ev) -> bool:
    """A framework's NCCL error whose reason a lost peer may raise (NCCL's "unhandled system error", "remote process
    exited …"), not one of the rank's own GPU ("unhandled cuda error": another process's lost-peer WARN on the host
    excused it as "a peer went away": a break-it pass)."""
    reason = str(e.details.get("reason") or e.details.get("nccl_result") or "").lower()
    # NCCL's "internal error" too: a remote peer's error surfaces as one (NVIDIA/nccl#795, #1514: "Net : Connection
    # closed by remote peer" then "internal error"; a second break-it pass)
    return any(w in reason for w in ("system error", "remote process", "systemerror", "remoteerror", "internal error",
                                     "internalerror"))


def _explained_but_by_a_report(scene: Scene, e: Ev) -> bool:
    """An edge from another subject explains ``e`` (``Scene.explained``), and its cause is no report of a lost peer
    itself: NCCL's flushed completion explains PyTorch's "remote process exited" on its host by rule, and both report
    the peer."""
    me = scene.subject[e.event_id]
    return any(scene.subject[c.event_id] != me and not _reports_a_peer(c) for c in scene.causes_of(e))


def _named_elsewhere(scene: Scene, hosts: list[str], names: list[str], pattern: str, confidence: float,
                     why: str) -> Verdict:
    """No single culprit among the reporting ``hosts``: the candidates are what their lines name (``names``: a peer,
    the path to an address), the reports' symptoms kept as parties of their hosts (the pseudo-initiator's)."""
    v = unknown_verdict(scene, [(h, None, None) for h in hosts], "other", why=why)
    v.pattern, v.confidence = pattern, confidence
    v.initiator = {**v.initiator, "host": None, "candidates": names}
    said = [e for e in scene.symptoms() if not any(e in p.events for p in v.downstream)]
    for host in sorted({e.host for e in said}):
        v.downstream.append(Party((host, None, None), [e for e in said if e.host == host], "same_host", None))
    return v


#: NCCL's IB transport's error completion (transport/net_ib.cc; ingest/signatures/nccl.yaml)
IB_COMPLETION = "nccl.net_ib.completion_error"


def ib_both_ends(scene: Scene) -> Verdict | None:
    """Ranks of two or more hosts whose IB connections all failed with an error completion (NCCL's ``NET/IB : Got
    completion … with error 12``: retries exhausted) and nothing of their own but NCCL's generic warnings, downstream
    lines and what the completions explain: both ends of the connections report, so what failed is the path between
    their HCAs — a port, a cable, a switch port, or at a job's first collective on RoCE the GID index or routing —
    not a GPU of each. The roots fallback named each reporting GPU a candidate, "no single culprit" at 0.3
    (NVIDIA/nccl-tests#24: gpu4 and gpu5 both at error 12, fixed by ``NCCL_IB_GID_INDEX=3``; a real-logs pass). A
    flushed completion (status 5) is a report of the peer's failure (:func:`peer_failed`); a device fault of a host,
    or one host's completions alone, leaves the incident to the other patterns."""
    if scene.hardware_faults():
        return None
    ends: list[Ev] = []  # the completions that failed the connections
    others: list[Ev] = []  # every other fault, which must be no fault of its own
    for e in scene.faults():
        if e.signature == IB_COMPLETION:
            # a flushed completion (status 5) beside them is a third host's report of the failed connections, the
            # work queued behind them flushed: the incident fell to "no single culprit" among three GPUs (a break-it
            # pass). It is neither an end nor a fault of its own
            if not _reports_a_peer(e):
                ends.append(e)
        elif e.signature != SYMPTOM:
            others.append(e)
    hosts = sorted({e.host for e in ends})
    mine = {e.event_id for e in ends}
    if len(hosts) < 2 or not all(_beside_the_ends(scene, e, mine) for e in others):
        return None
    hcas = sorted({f"{e.host}'s {hca}" for e in ends if (hca := e.details.get("hca"))})
    on = first_of(hosts, noun="hosts")
    between = " and ".join(hosts) if len(hosts) == 2 else on
    names = [f"the InfiniBand/RoCE path between {between}" + (f" ({first_of(hcas, noun='HCAs')})" if hcas else "")]
    v = _named_elsewhere(scene, hosts, names, "comm.ib_both_ends", 0.5, (
        f"{len(ends)} IB error completion{'s' * (len(ends) != 1)} on {on}: both ends of the connection report that "
        "their transfers were not acknowledged, and nothing else here is a fault of its own. What failed is the path "
        "between the hosts' HCAs (a port, a cable, a switch port) or, when it fails at the job's first collective on "
        "RoCE, the GID index or routing NCCL used, not a GPU of either host."))
    v.category = "ib_port"
    v.next_action = ("Test the path between these hosts' HCAs outside NCCL (ib_write_bw with the GID index NCCL uses): "
                     "if that fails, check both ports, the cables and the switch ports (ibstat, the port counters, "
                     "ibdiagnet); on RoCE, set NCCL_IB_GID_INDEX to the RoCE v2 GID both NICs share (show_gids) and "
                     "check the routing between their subnets. No GPU needs draining for this.")
    v.missing = ["NCCL_DEBUG=INFO's 'NET/IB : Using' lines of both hosts (the HCAs and GID index each rank used)",
                 "the kernel logs of both hosts around these lines (an HCA or port event)"]
    return v


def _beside_the_ends(scene: Scene, e: Ev, ends: set[str]) -> bool:
    """Whether a fault beside ``ib_both_ends``'s error completions (``ends``: their event ids) is no fault of its own:
    one of them (another line's event of the same id), NCCL's generic warning, a downstream line, or a line they
    explain."""
    return (e.event_id in ends or e.signature == "nccl.warn" or scene.role(e) == "downstream"
            or any(c.event_id in ends for c in scene.causes_of(e)))


def peer_failed(scene: Scene) -> Verdict | None:
    """Ranks that only report losing a peer (a connection closed or reset, ncclRemoteError) and nothing of their
    own but NCCL's generic warnings and downstream lines: the failure is on the other side of the connection, whose
    logs are not here. The roots fallback named the reporting rank's GPU at 0.75 (a break-it pass on NVIDIA/nccl#795:
    a peer's segfault). A fault of the rank's own (a CUDA error its watchdog caught, an Xid, a NIC) or a rule that
    explains a report leaves the incident to the other patterns (a second break-it pass: a rank's own illegal memory
    access was told "nothing logged here is a fault of its own")."""
    if scene.hardware_faults():
        return None
    faults = [e for e in scene.faults() if e.signature != SYMPTOM]
    reports = [e for e in faults if _reports_a_peer(e)]
    # a framework's NCCL error that a report explains is that report raised ("NCCL error: unhandled system error"
    # after "Net : Connection closed by remote peer": pytorch/elastic#134, the survivor was the initiator at 0.75; a
    # real-logs pass)
    if not reports or any(not _reports_a_peer(e) and e.signature != "nccl.warn" and scene.role(e) != "downstream"
                          and not (_network_reason(e) and any(_reports_a_peer(c) for c in scene.causes_of(e)))
                          for e in faults) or any(_explained_but_by_a_report(scene, e) for e in reports):
        return None
    hosts = sorted({e.host for e in reports})
    # the peer's host when NCCL's Bootstrap / NET/IB OOB lines said whose address it is (Topology.peer_host); a peer
    # that is the reporting host itself (named by its FQDN: another process of the host) is said so, and only when no
    # other peer is named (NVIDIA/nccl#795: the reporting host was a suspect beside the remote one, a real-logs pass)
    peers = sorted({(str(p), scene.topo.peer_host(e), e.host) for e in reports if (p := e.details.get("peer_addr"))},
                   key=lambda x: (x[0], x[1] or "", x[2]))
    # one peer reported by several hosts is one peer (it was named once per reporting host: a fresh user's trial)
    remote = sorted({(p, h) for p, h, me in peers if h != me}, key=lambda x: (x[0], x[1] or ""))
    mine = sorted({me for _p, h, me in peers if h == me})
    names = [f"the peer at {p}" + (f" ({h})" if h and h != peer_name(p) else "") for p, h in remote] \
        or [f"another process on {h}" for h in mine] or ["another rank of the job"]
    shown, on = first_of(names), first_of(hosts, noun="hosts")
    lines = f"{len(reports)} line{'s' * (len(reports) != 1)} on {on} report{'s' * (len(reports) == 1)}"
    if all(e.signature == TCPX_WAIT for e in reports):
        # GPUDirect-TCPX's slowness report says the peer has not sent yet, not that it went away: its one real source
        # (google/nccl-plugin-gpudirecttcpx#1) is a job whose first collective waited an hour on ranks still
        # connecting, and then ran. It was told "a peer went away … its process died" (a break-it pass)
        why = (f"{lines} that GPUDirect-TCPX waited past its threshold for a control message of a peer ({shown}): the "
               "peer has not sent — it is still starting or connecting (a job's first collective may wait so for up "
               "to an hour), hung or gone — or the path between them drops. Nothing logged here is a fault of its "
               "own.")
    else:
        why = (f"{lines} that a peer went away ({shown}): the connection's other end failed first — its process "
               "died, or its host or the network did. Nothing logged here is a fault of its own.")
    v = _named_elsewhere(scene, hosts, names, "comm.peer_failed", 0.25, why)
    # the peers' hosts when NCCL's address lines said every one of them: no need to find them
    known = sorted({h for _p, h in remote if h}) if remote and all(h for _p, h in remote) else []
    v.missing = [f"the kernel and NCCL logs of {first_of(known, noun='hosts') if known else shown}"
                 + ("" if known else " (which host is that: the job's rank-to-host list, or NCCL_DEBUG=INFO's "
                    "'Bootstrap' and 'NET/IB : Using … OOB' lines of each host)"),
                 "the job's other ranks: the first one to stop (exit code, traceback, OOM kill) is the failure"]
    bridges = sorted({p for p, _h in remote if bridge_gateway(p)})
    if remote and len(bridges) == len({p for p, _h in remote}):
        # every peer NCCL names is a local bridge's gateway, no host of the job: the interface NCCL chose is wrong, no
        # peer failed (dmlc/xgboost#7982: the operator was sent to the logs of 172.18.0.1, a real-logs pass)
        addrs = first_of(bridges, noun="addresses")
        v.category, v.confidence = "nccl_software", 0.5
        v.explanation = (f"{len(reports)} line{'s' * (len(reports) != 1)} on {on} report{'s' * (len(reports) == 1)} "
                         f"that a peer went away, and the peer{'s' * (len(bridges) > 1)} NCCL connected to "
                         f"({addrs}) {'is' if len(bridges) == 1 else 'are'} the gateway of a host-local bridge "
                         "(Docker's or libvirt's), no host of the job: NCCL chose that bridge's interface for its "
                         "sockets.")
        v.next_action = ("Set NCCL_SOCKET_IFNAME to the interface of the hosts' own network (or exclude the bridges: "
                         "NCCL_SOCKET_IFNAME=^docker,br-,virbr,lo) on every rank and rerun; NCCL_DEBUG=INFO's "
                         "'NET/Socket : Using' lines say which interface each rank chose.")
        v.missing = ["NCCL_DEBUG=INFO's 'NET/Socket : Using' and 'Bootstrap : Using' lines of every host (the "
                     "interface and address each rank chose)"]
    elif not remote and mine:  # the peer is a process of the reporting host; the host is known, its own: not "which
        # host is that" (pytorch/pytorch#124380, a real-logs pass: a rank's peer was a process of its own host)
        v.missing[0] = (f"the logs of the other processes on {first_of(mine, noun='hosts')} (their tracebacks, exit "
                        "codes and NCCL lines) and that host's kernel log around these lines (an OOM kill, an Xid)")
        v.next_action = (f"Find which process on {first_of(mine, noun='hosts')} stopped first (a traceback, an OOM "
                         "kill in dmesg, an Xid) and diagnose its logs with these. The reporting rank's GPU is not the "
                         "suspect.")
    elif known:
        # the addresses that are not already the hosts' own names ("… of 172.16.0.5 (the peer at 172.16.0.5)" when
        # the topology knew the peer by its address alone)
        addrs = sorted({p for p, h in remote if h != peer_name(p)})
        at = f" (the peer{'s' * (len(addrs) > 1)} at {first_of(addrs, noun='addresses')})" if addrs else ""
        v.next_action = (f"Diagnose the logs of {first_of(known, noun='hosts')}{at} with these: a process that "
                         "died (a traceback, an OOM kill), an Xid, a NIC or port going down. The reporting rank's GPU "
                         "is not the suspect.")
    else:
        v.next_action = (f"Find the host{'s' * (len(names) != 1)} of {shown} and diagnose "
                         f"{'its' if len(names) == 1 else 'their'} logs with these: a process that died (a traceback, "
                         "an OOM kill), an Xid, a NIC or port going down. The reporting rank's GPU is not the suspect.")
    if v.category != "nccl_software" and (foreign := _foreign_peers(scene, [p for p, _h in remote])):
        # NCCL before 2.27.3 aborted its bootstrap when a connection to its listening port closed before NCCL's magic,
        # and named the connecting address as the "remote peer" (NVIDIA/nccl#1612, #1613: an nmap scan): an address
        # no rank of the logs announced may be no rank at all (a real-logs pass: the operator was sent to its logs)
        v.next_action += (
            f" {first_of(foreign, noun='addresses')} {'is' if len(foreign) == 1 else 'are'} no address the ranks here "
            f"announced (their 'Bootstrap : Using' lines: {first_of(sorted(scene.topo.addr_hosts), noun='addresses')})"
            ": if these logs hold every host of the job, no rank failed — another program (a port scanner, a "
            "monitoring probe) connected to NCCL's port and closed, and NCCL before 2.27.3 aborts its bootstrap on "
            "that. Upgrade NCCL to 2.27.3 or later, or keep scanners off the job's network.")
    return v


def _foreign_peers(scene: Scene, addrs: list[str]) -> list[str]:
    """The numeric ``addrs`` (IPv4 or IPv6, a lost peer's) that no host of the scene announced as its NCCL address
    (``Topology.addr_hosts``: "Bootstrap : Using <if>:<addr>") while at least two hosts announced theirs: an address
    foreign to the job as far as its logs go. A peer printed by its name, or a scene with fewer than two announced
    addresses (one host's log alone), gives none: too little is known to call it foreign. So does a scene where a
    host of the job announced none (a rank of a communicator's init lines there, or an NCCL line of the incident):
    the address may be that host's, its log begun after its Bootstrap line (a break-it pass: a third host whose
    Bootstrap line was missing was told "no rank failed" of its own address)."""
    known = scene.topo.addr_hosts
    announced = {h for said in known.values() for h in said}
    if len(announced) < 2:
        return []
    ranked = {h for ranks in scene.topo.comm_ranks.values() for h, _gpu in ranks.values()}
    if not ranked | {e.host for e in scene.events if (e.signature or "").startswith("nccl.")} <= announced:
        return []
    return sorted({peer_name(a) for a in addrs if _numeric(peer_name(a)) and peer_name(a) not in known})


def _numeric(addr: str) -> bool:
    """``addr`` is an IPv4 or IPv6 address (a zone ``%ib0`` allowed), not a host's name."""
    try:
        ipaddress.ip_address(addr.split("%")[0])
    except ValueError:
        return False
    return True


#: NCCL's warning that a connection to a peer's address could not be made (misc/socket.cc; ingest/signatures/nccl.yaml)
CONNECT_FAILED = "nccl.socket.connect_failed"


def connect_failed(scene: Scene) -> Verdict | None:
    """Several processes that could not connect to a peer's address (NCCL's ``Connect to <addr> failed``) and logged
    nothing of their own but NCCL's generic warnings and downstream lines: one cause they share — the network path
    (the interface NCCL chose, a firewall, a container network) or no process listening at that address — not a GPU
    each. The roots fallback named each reporting GPU a candidate, "no single culprit" at 0.3
    (sgl-project/sglang#6017: every local rank of one node failed to connect to one link-local address; a
    real-logs pass). One process's failure stays the roots' (its rank, with the signature's advice) unless every
    address it names is link-local, loopback or a bridge's gateway (NCCL's interface, whoever tried it: one process
    per host each blamed its GPU, a break-it pass); a fault of a rank's own, or a host's, leaves the incident to the
    other patterns."""
    if scene.hardware_faults():
        return None
    faults = [e for e in scene.faults() if e.signature != SYMPTOM]
    tries = [e for e in faults if e.signature == CONNECT_FAILED]
    # beside NCCL's generic warnings and its downstream lines only: a process's exit (torchrun's record of rank 0's
    # crash) is what a listener that went away left (a break-it pass)
    if not tries or any(e.signature not in (CONNECT_FAILED, "nccl.warn")
                        and (scene.role(e) != "downstream" or e.kind not in ("nccl_error", "nccl_timeout"))
                        for e in faults):
        return None
    procs = {(e.host, e.pid, e.rank, e.gpu_index) for e in tries}
    addrs = sorted({peer_name(str(a)) for e in tries if (a := e.details.get("peer_addr"))})
    hosts = sorted({e.host for e in tries})
    # no address of the job's hosts: link-local, a bridge's gateway, and loopback (``lo``: a break-it pass) when
    # processes of several hosts used it — on one host it is every process's own path
    local = [a for a in addrs if link_local(a) or bridge_gateway(a) or (loopback(a) and len(hosts) > 1)]
    # one process: the roots' (its rank), unless the address itself says NCCL's interface is wrong
    if len(procs) < 2 and not (local and len(local) == len(addrs)):
        return None
    peers = {a: h for e in tries if (a := e.details.get("peer_addr")) and (h := scene.topo.peer_host(e))}
    names = [f"the path to {a}" + (f" ({h})" if (h := peers.get(a)) and h != a else "") for a in addrs] \
        or ["the network path between the job's hosts"]
    on, shown = first_of(hosts, noun="hosts"), first_of(addrs, noun="addresses")
    v = _named_elsewhere(scene, hosts, names, "comm.connect_failed", 0.5, (
        f"{len(tries)} line{'s' * (len(tries) != 1)} of {len(procs)} process{'es' * (len(procs) != 1)} on {on} "
        f"say{'s' * (len(tries) == 1)} {'it' if len(procs) == 1 else 'they'} could not connect to "
        f"{shown or 'a peer'}: what they share is the network path (the interface NCCL "
        "chose, a firewall, a container network) or the process that should listen there, not a GPU of their own."
        + (f" {first_of(local, noun='addresses')} {'is' if len(local) == 1 else 'are'} no address of the job's hosts "
           "(link-local, loopback, or a host-local bridge's gateway): NCCL took it from an interface the peers do not "
           "share."
           if local else "")))
    if local and len(local) == len(addrs):
        v.category = "nccl_software"
        v.next_action = ("Set NCCL_SOCKET_IFNAME to the interface of the hosts' own network on every rank (or exclude "
                         "the others: NCCL_SOCKET_IFNAME=^docker,br-,virbr,lo) and rerun; NCCL_DEBUG=INFO's 'Bootstrap "
                         ": Using' and 'NET/Socket : Using' lines say which interface and address each rank chose.")
    else:
        v.next_action = ("Check the path from these hosts to the address: NCCL_SOCKET_IFNAME set to the interface "
                         "every host shares, no firewall dropping NCCL's ports, the peer's process started (its log); "
                         "in a running job, the peer's host may have failed first: read its kernel and NCCL logs.")
    v.missing = ["NCCL_DEBUG=INFO's 'Bootstrap : Using' and 'NET/Socket : Using' lines of every host (the interface "
                 "and address each rank chose)"]
    return v


def host_context(scene: Scene) -> Verdict | None:
    symptoms = scene.symptoms()
    if not symptoms or scene.hardware_faults():
        return None
    host = symptoms[0].host
    ctx = [e for e in scene.events if e.signature != SYMPTOM and e.host == host]
    fm = [e for e in ctx if e.kind == "fabric_manager"]
    if not fm:
        return None
    ports = sorted({e.device for e in fm if e.device} | {e.details.get("guid") for e in fm if e.details.get("guid")})
    # the operator's word for it (``--symptom hang``): "a failure was reported" read as if they had said failure
    said = "hang" if any(e.details.get("symptom") == "hang" for e in symptoms if e.host == host) else "failure"
    return Verdict(
        pattern="platform.host_context", category="fabric_manager",
        initiator=_host_initiator(host, "fabric_manager", fm), initiator_events=fm,
        downstream=[Party((host, None, None), symptoms, "same_host", None)],
        context=[e for e in ctx if e not in fm], confidence=0.4, severity="error",
        explanation=(f"A {said} was reported on {host} and the only platform activity logged is Fabric Manager's "
                     f"set-up ({len(fm)} lines{': ' + ', '.join(ports) if ports else ''}); no GPU or link fault is "
                     "logged. The NVLink fabric set-up is the likeliest cause, but the lines do not say it failed."),
        next_action=(catalog_action(scene.catalog, fm[-1], scene.subject.get(fm[-1].event_id))
                     or "Check that Fabric Manager finished and the GPUs joined the fabric."),
        verify=["nvidia-smi -q | grep -A3 Fabric", "journalctl -u nvidia-fabricmanager -n 100", "ibstat"],
        missing=["Fabric Manager / NVLSM log after start-up", "nvidia-smi -q Fabric State and Status of the GPUs"])


def symptom_only(scene: Scene) -> Verdict | None:
    """Only what the operator reported (``--symptom``): no fault is logged, so nothing names a cause
    (:func:`symptom_verdict`; a silent hang logs nothing, and the roots fallback would name the report itself as
    the first fault)."""
    symptoms = scene.symptoms()
    if not symptoms or len(symptoms) != len(scene.faults()):
        return None
    return symptom_verdict(scene)


def _index(g: str) -> tuple:
    """GPUs in index order (``2`` before ``10``)."""
    return (0, int(g), g) if g.isdigit() else (1, 0, g)


def symptom_verdict(scene: Scene, benign: Verdict | None = None) -> Verdict:
    """What the operator reported, when the logs name no cause for it: said so, with the reported GPUs (else
    the host) of each reported host as the candidates and what to collect, at confidence 0.2; a reported hang
    makes it ``nccl_hang``. ``benign``: what a benign pattern made of the logged lines alone (a Fabric Manager
    with no NVSwitch to manage, NVLinks a PCIe GPU does not have): they are not a fault, so they do not explain
    the report either; their explanation is kept and their lines are context."""
    symptoms = scene.symptoms()
    hosts = sorted({e.host for e in symptoms})
    gpus = {h: sorted({str(g) for e in symptoms if e.host == h for g in e.details.get("gpus", [])}, key=_index)
            for h in hosts}
    candidates = [c for h in hosts for c in ([(h, "gpu", g) for g in gpus[h]] or [(h, None, None)])]
    reported = "; ".join(
        f"{k} on {e.host}" + (f" (GPU {', '.join(g)})"
                              if (g := sorted({str(x) for x in e.details.get("gpus", [])}, key=_index))
                              else "") for e in symptoms for k in [e.details.get("symptom", "failure")])
    hang = any(e.details.get("symptom") == "hang" for e in symptoms)
    where = ", ".join(hosts)
    one = len(hosts) == 1
    logged = (f"The lines logged are not a fault: {benign.explanation.rstrip('.')}. Nothing in them names a cause."
              if benign else f"The logs hold no fault of {'this host' if one else 'these hosts'} within the "
              "correlation window of the report, so nothing in them names a cause.")
    category = "nccl_hang" if hang else scene.category_of(symptoms[0])
    v = unknown_verdict(scene, candidates, category, why=f"Reported by the operator: {reported}. {logged}")
    v.pattern = "operator.symptom_only"
    v.confidence = 0.2
    smi = {h: f"nvidia-smi -q -i {','.join(gpus[h])}" if gpus[h] else "nvidia-smi -q" for h in hosts}
    v.verify = [smi[h] if one else f"{smi[h]} (on {h})" for h in hosts] + ["dmesg -T | tail -200"]
    v.next_action = (f"Collect from {where}: the kernel log around the report (journalctl -k or dmesg -T: Xid, "
                     f"AER, NVLink), {' and '.join(v.verify[:-1])}"
                     + (", and a stack dump of the stuck ranks (py-spy dump --pid)" if hang else "")
                     + "; then diagnose again with them.")
    # a host whose kernel lines are here (none a fault) was asked for "the kernel log" it was given (a fresh-user
    # trial): what is missing there is a longer span of it
    kernel = {h: sum(1 for e in scene.logged() if e.host == h and e.source == "dmesg") for h in hosts}
    v.missing = [f"the kernel log of {h} around the reported time" if not kernel[h] else
                 f"more of the kernel log of {h}: the {kernel[h]} line{'s' * (kernel[h] != 1)} given near the report "
                 "name no fault (journalctl -k over the hours before it, or since the last boot)" for h in hosts] + (
        ["NCCL_DEBUG=INFO output and the watchdog lines of every rank of the job"] if hang else [])
    if benign:  # the benign lines are context, also where they share a subject with the report
        quiet = set(scene.logged())
        for p in v.downstream:
            p.events = [e for e in p.events if e not in quiet]
        v.downstream = [p for p in v.downstream if p.events]
        v.context = list(benign.initiator_events) + [e for e in scene.events if e in quiet
                                                     and e not in benign.initiator_events]
    for p in v.downstream:  # the report itself: of its own host, not reached over a domain
        if one and all(e.signature == SYMPTOM for e in p.events):
            p.relation = "same_host"
    return v


def _imex_peer_lost(scene: Scene, lost: Ev) -> str:
    """The end of ``fabric_manager``'s explanation for the IMEX daemon's "Node disconnect event detected for node N"
    (``imex.peer_disconnected``): the peer node N went, and whether it announced its shutdown first (a peer's
    "Received notification of shutdown from node N", ``imex.peer_shutdown_notice``, in the scene). Source:
    kubernetes-sigs/dra-driver-nvidia-gpu#1447."""
    node = lost.details.get("imex_node")
    told = any(e.signature == "imex.peer_shutdown_notice" and e.details.get("imex_node") == node
               for e in scene.events)
    return (f"the cause is its IMEX peer, node {node}: "
            + ("it announced its own shutdown just before, so its daemon stopped or restarted"
               if told else "its daemon stopped, restarted or became unreachable")
            + ", and this host's daemon only lost it. Memory imported from that node is invalid once it rejoins "
              "as a new instance.")


#: a job setting (``rules.JOB_CONFIG``) as the explanation names it: (name, why the ranks cannot run together, what to
#: do, how to check)
SETTINGS: dict[str, tuple[str, str, str, list[str]]] = {
    "net_plugin": (
        "network plugin", "their ranks speak two transports to each other",
        "Make every host of the job load the same NCCL network plugin: install the same plugin (libnccl-net.so: "
        "HPC-X's nccl_rdma_sharp_plugin, aws-ofi-nccl) on all of them, or none, and the same LD_LIBRARY_PATH / "
        "NCCL_NET_PLUGIN in the job's environment; then rerun.",
        ["NCCL_DEBUG=INFO: every host prints the same 'NET/Plugin' line ({hosts})", "ldconfig -p | grep libnccl-net"]),
    "nccl_version": (
        "version", "their ranks run two NCCL releases, whose bootstrap and wire protocols need not agree",
        "Make every host of the job load one NCCL release: the same libnccl.so.2 (the system's, under "
        "/usr/lib or /usr/local/nccl*, against the Python wheel's nvidia-nccl-cu*; LD_LIBRARY_PATH, LD_PRELOAD) on all "
        "of them; then rerun.",
        ["NCCL_DEBUG=INFO: every host prints the same 'NCCL version' line ({hosts})",
         "python -c 'import torch; print(torch.cuda.nccl.version())'", "pip list 2>/dev/null | grep -i nccl"]),
}


def config_mismatch(scene: Scene) -> Verdict | None:
    """The hosts of one job's log disagree on a setting its ranks must share (``rules.mark_config_mismatch``: the NCCL
    network plugin, an external library on some hosts and NCCL's own transports on others), and no device fault is
    logged: the configuration is the first fault, the ranks' hangs and errors its downstream. The initiator is no
    host or device (``device_type`` null): either side may be the one to change. NVIDIA/nccl#1634: HGX-H100-04 loaded
    HPC-X's RDMA/SHARP plugin, HGX-H100-11 none, and the two-node nccl-tests hung with no error; the maintainers'
    answer was the plugin present on part of the cluster only. Severity: the hangs' (an error), else a warning (the
    job has not failed yet, but cannot run across those hosts)."""
    lines = [e for e in scene.faults() if e.details.get("config_differs")]
    if not lines or _serious_device_fault(scene):
        return None
    per_setting: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for e in lines:
        per_setting[e.details["config_differs"]][e.host].add(_setting_said(e))
    settings = sorted(s for s, per_host in per_setting.items() if len(per_host) >= 2)
    if not settings:
        return None
    init_ids = {id(e) for e in lines}
    down, ctx = downstream_parties(scene, ("", "configuration", None), lines)
    down = [p for p in down if not {id(e) for e in p.events} <= init_ids]
    reported = bool(down)
    kinds = {e.kind for e in lines}
    initiator = _host_initiator(None, "nccl_transport" if "nccl_transport" in kinds else lines[0].kind, lines)
    initiator["candidates"] = sorted({h for s in settings
                                      for h in _odd_hosts([e for e in lines if e.details["config_differs"] == s])})
    differ = []
    for setting in settings:
        name, why, _, _ = SETTINGS[setting]
        said = _hosts_said(per_setting[setting])
        differ.append(f"different NCCL {name}s ({said}): {why}")
    return Verdict(
        pattern="config.job_mismatch", category="nccl_software", initiator=initiator, initiator_events=lines,
        downstream=down, context=[e for e in ctx if id(e) not in init_ids], confidence=0.8 if reported else 0.6,
        severity="error" if any(e.sev >= SEVERITY_RANK["error"] for p in down for e in p.events) else "warning",
        explanation=(f"The hosts of one job's log loaded {', and '.join(differ)}, so the job hangs or fails at its "
                     "first collective between them with no error of its own"
                     + (f", and {_named(sorted({p.key[0] for p in down}))} reported it" if reported else "")
                     + ". No GPU, link or NIC fault is logged: the configuration is the first fault."),
        next_action=" ".join(SETTINGS[s][2] for s in settings),
        verify=[v.format(hosts=_hosts_named(sorted(per_setting[s]), initiator["candidates"]))
                for s in settings for v in SETTINGS[s][3]],
        missing=[] if reported else ["whether the job hung or failed: its ranks' watchdog lines"])


#: at most this many hosts are named one by one in a configuration mismatch's explanation; more are counted
NAMED_HOSTS: Final = 8


def _hosts_said(per_host: dict[str, set[str]]) -> str:
    """What each host of a job said of one setting, as the explanation names it: ``host: value`` for each host when
    there are :data:`NAMED_HOSTS` or fewer ("gpu-a-04: NCCL RDMA Plugin v8; gpu-b-11: internal"), else per value
    (``per_host``'s sets, joined), the most held first: a value held by more than :data:`NAMED_HOSTS` hosts as their
    count, the others' hosts by name ("1,999 hosts: internal; node0007: NCCL RDMA Plugin v7"). A 2,000-host job's
    mismatch listed every host, 40 kB of explanation of which one name counted (a break-it pass)."""
    if len(per_host) <= NAMED_HOSTS:
        return "; ".join(f"{h}: {', '.join(sorted(v))}" for h, v in sorted(per_host.items()))
    by_value: dict[str, list[str]] = defaultdict(list)
    for h, v in sorted(per_host.items()):
        by_value[", ".join(sorted(v))].append(h)
    parts = []
    for value, hosts in sorted(by_value.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        parts += ([f"{len(hosts):,} hosts: {value}"] if len(hosts) > NAMED_HOSTS
                  else [f"{h}: {value}" for h in hosts])
    return "; ".join(parts)


def _named(hosts: list[str]) -> str:
    """``hosts`` (sorted) each by name when :data:`NAMED_HOSTS` or fewer, else their count ("2,000 hosts")."""
    return ", ".join(hosts) if len(hosts) <= NAMED_HOSTS else f"{len(hosts):,} hosts"


def _hosts_named(hosts: list[str], odd: list[str]) -> str:
    """``hosts`` (sorted) as a check names them: each, when :data:`NAMED_HOSTS` or fewer; else their count and the
    ``odd`` ones (``_odd_hosts``) to look at first, by name when :data:`NAMED_HOSTS` or fewer."""
    if len(hosts) <= NAMED_HOSTS:
        return ", ".join(hosts)
    if len(odd) <= NAMED_HOSTS and len(odd) < len(hosts):
        return f"{len(hosts):,} hosts; first {', '.join(odd)}"
    return f"{len(hosts):,} hosts"


def _odd_hosts(lines: list[Ev]) -> list[str]:
    """The hosts to change first (``config_mismatch``'s candidates, sorted), of ``lines`` (one setting's): those whose
    value (``rules.config_value``, what each host's lines say) fewer hosts share, when one value is held by more hosts
    than each other one; else every host. Three hosts of which two loaded HPC-X's plugin named all three, the odd one
    not told (a break-it pass)."""
    said: dict[str, set[str | None]] = defaultdict(set)
    for e in lines:
        said[e.host].add(config_value(e))
    count = Counter(frozenset(v) for v in said.values())
    most = max(count.values())
    if list(count.values()).count(most) > 1:
        return sorted(said)
    return sorted(h for h, v in said.items() if count[frozenset(v)] < most)


def _setting_said(e: Ev) -> str:
    """What a configuration line says, as the explanation names it: a network plugin's library name or path, else
    NCCL's internal one; the NCCL release a version line names."""
    if e.signature == "nccl.net_plugin.external":
        return str(e.details.get("net_plugin") or e.details.get("net_plugin_path") or "an external plugin")
    return config_value(e) or "?"


def _payload(e: Ev) -> str:
    msg = e.message.splitlines()[0]
    for marker in ("]: ", ": ", "] "):
        i = msg.rfind(marker, 0, 120)
        if 0 <= i < len(msg) - 10:
            msg = msg[i + len(marker):]
            break
    return msg.strip()[:160]


PATTERNS: dict[str, Callable[[Scene], Verdict | None]] = {
    "benign.fabric_manager_not_needed": fabric_manager_not_needed,
    "benign.no_nvlink_on_gpu": no_nvlink_on_gpu,
    "benign.job_cancelled": job_cancelled,
    "benign.port_recovered": port_recovered,
    "benign.cdi_recovered": cdi_recovered,
    "benign.application_xid": application_xid,
    "link.inactive_where_wired": inactive_where_wired,
    "link.both_ends": both_ends,
    "nvswitch.common_end": nvswitch_common_end,
    "platform.fm_partition": fm_partition_sxids,
    "caused_by.missing_cause": missing_cause,
    "platform.every_gpu_init_failed": every_gpu_init_failed,
    "platform.every_gpu_held_down": every_gpu_held_down,
    "platform.fabric_manager": fabric_manager,
    "software.nccl_hang_with_benign_nvlink": nccl_hang_with_benign_nvlink,
    "platform.pcie_p2p_blocked": pcie_p2p_blocked,
    "comm.slow_checkpoint": slow_checkpoint,
    "comm.silent_rank": silent_rank,
    "comm.ib_both_ends": ib_both_ends,
    "comm.peer_failed": peer_failed,
    "comm.connect_failed": connect_failed,
    "platform.host_context": host_context,
    "config.job_mismatch": config_mismatch,
    "operator.symptom_only": symptom_only,
}
