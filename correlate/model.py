"""The correlator's view of an event: the events columns it needs, as a small object.

Built from an Arrow events table (``schemas.events.EVENTS_SCHEMA``). Times
stay integers in µs UTC.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any

import orjson
import pyarrow as pa

from schemas.events import SEVERITY_RANK, check_ranges, check_required


#: how far past its line a time an event names ahead of it (``Ev.ahead``: a notice's NotBefore or StartTime) is taken
#: for a schedule (µs): EC2 announces scheduled maintenance about two weeks ahead, Azure a Redeploy days ahead
AHEAD_MAX_US = 31 * 24 * 3600 * 1_000_000


@dataclass(slots=True, eq=False)
class Ev:
    # identity equality: two reports of one line are told apart by event_id, not by value
    """One event. ``ts`` µs UTC; ``precision_us`` the resolution of ``ts``.

    Fixed once built: ``pos``, ``sev``, ``start`` and ``order`` are derived from the fields when the event is
    made, so the fields are not assigned afterwards; ``imply_start`` (``follow_watchdogs``) and ``reschedule``
    (``follow_notices``) are the changes."""

    event_id: str
    ts: int
    ts_basis: str
    host: str
    source: str
    kind: str
    signature: str
    severity: str
    device_type: str | None
    device: str | None
    link: int | None
    xid: int | None
    sxid: int | None
    peer: str | None
    rank: int | None
    nranks: int | None
    comm: str | None
    message: str
    gpu_index: int | None = None
    pid: int | None = None
    fatal: bool | None = None
    cause_xid: int | None = None
    seq: int | None = None
    op: str | None = None
    timeout_ms: int | None = None
    elapsed_ms: int | None = None
    process: str | None = None  # the program an Xid line names (``name=``)
    precision_us: int = 1
    count: int = 1
    details: dict[str, Any] = field(default_factory=dict)
    origin: str = ""
    ingest_ts: int | None = None  # Kafka append time (µs) when the event came through Kafka
    last_ts: int | None = None  # the last copy's time (µs) of a storm folded into this event (``count`` > 1)
    #: implied start (µs) taken from the watchdog timeout this line follows (``follow_watchdogs``)
    implied_start: int | None = None
    #: the time (µs UTC) a later notice of the same cloud event names (``follow_notices``): it supersedes this one's
    rescheduled: int | None = None

    #: derived once, in ``__post_init__`` (and ``imply_start``), from the fields above; read on every
    #: comparison the correlator makes, so plain slots rather than properties
    #: line number within its source (from ``origin`` ``…:<line>[#<n>]``): orders same-time events
    pos: int = field(init=False)
    #: ``SEVERITY_RANK`` of ``severity``
    sev: int = field(init=False)
    #: when the trouble this event reports began (µs). A watchdog timeout that "ran for N milliseconds" is
    #: placed at its implied start, line time − N, so a 10-minute timeout meets the fault that caused it
    #: (DESIGN.md, correlation semantics); a line that follows one, at ``implied_start``; a line that states when
    #: the event it reports happens (``details.occurs_us``, ``ingest.assemble.occurs_time``: an Azure notice's
    #: NotBefore, an EC2 event's StartTime), then; else ``ts``
    start: int = field(init=False)
    #: the resolution of ``start`` (µs), what the correlation windows widen by (``correlate.window.tolerance``):
    #: ``precision_us``, but for a start the line states (``details.occurs_us``) that time's own
    #: (:func:`occurs_precision_us`): a notice's NotBefore is exact to its second wherever its unstamped line lies
    start_precision_us: int = field(init=False)
    #: ``start`` is a time inherited from the stamped line before it that spans to ``details.ts_until`` (the latest
    #: the line may have been written, ``ingest.assemble._span_inherited``); not for a start the line states
    #: (``details.occurs_us``), which does not depend on where the line lies
    spanned: bool = field(init=False)
    #: ``start`` is the time the cloud states for the event (``details.occurs_us``, or a later notice's: an Azure
    #: notice's NotBefore, an EC2 event's StartTime), in the cloud's clock, UTC: no skew of its host's clock applies
    #: to it (``correlate.window.start_skew``)
    cloud_timed: bool = field(init=False)
    #: sort key: ``start``, then ``pos``, then ``event_id`` (ties in one second are common)
    order: tuple[int, int, str] = field(init=False)
    #: how many reboots follow the line in its capture (``details.reboots_after``, ``ingest.assemble.kernel_boots``):
    #: 0 for the last boot and for every line of a capture without a reboot (read by every one-host relation test)
    boot: int = field(init=False)
    #: (catalog, role, is a fault): what ``correlate.attribute.role_of`` and ``is_fault`` decided for the event
    #: under that catalog, kept with it (a streaming correlator asks again at every step)
    judged: tuple | None = field(default=None, init=False, repr=False)
    #: ``rules.pred_shape`` of the event, made on first use (the fields it reads do not change; ``imply_start``
    #: clears it: whether it follows a timeout is one)
    shape: tuple | None = field(default=None, init=False, repr=False)
    #: ``subject()``, made on first use (the fields it reads do not change)
    subj: tuple | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        self.pos = _pos(self.origin)
        self.sev = SEVERITY_RANK.get(self.severity, 0)
        self.boot = self.details.get("reboots_after") or 0
        self._place()

    def imply_start(self, us: int) -> None:
        """Set ``implied_start`` (µs) and the ``start`` and ``order`` derived from it."""
        self.implied_start = us
        self.shape = self.judged = None  # rules.pred_shape and attribute's role read whether it follows a timeout
        self._place()

    def reschedule(self, us: int) -> None:
        """Set ``rescheduled`` (µs UTC: the time a later notice of the same cloud event names) and the ``start`` and
        ``order`` derived from it. Nothing else derived reads it (no predicate asks whether a notice was re-sent)."""
        self.rescheduled = us
        self._place()

    def _place(self) -> None:
        self.start_precision_us, self.spanned = self.precision_us, "ts_until" in self.details
        self.cloud_timed = False
        if self.elapsed_ms:
            self.start = self.ts - self.elapsed_ms * 1000
        elif self.implied_start is not None:
            self.start = self.implied_start
        elif self.rescheduled is not None:  # a later notice of the same event moved its time (follow_notices)
            self.start, self.cloud_timed = self.rescheduled, True
        elif (t := stated_time(self.ts, self.details)) is not None:
            # a notice is of the VM going at its NotBefore (a week ahead, or 30 s): placed at its line's time, it
            # explained its peers' resets of that day and not those at the NotBefore of a 15-minute notice. That
            # time is the cloud's, exact to its own resolution: a notice line with no stamp of its own spans to the
            # next stamped line, 10 min later, and with that span it joined no peer's reset at its NotBefore (a
            # defect pass)
            self.start = t
            self.start_precision_us, self.spanned = occurs_precision_us(self.details.get("occurs_at")), False
            self.cloud_timed = True
        else:
            self.start = self.ts
        self.order = (self.start, self.pos, self.event_id)

    def subject(self) -> tuple:
        """What reported it: (host, device_type, device) or the best key we have (:func:`subject_of`); a rank is
        the process's in the job (``details.global_rank``, c10's ``[rank4]:``) where its line names another group's
        rank: ranks 0 and 4, each rank 0 of its own process group 5, were one party (xdit-project/xDiT#147)."""
        got = self.subj
        if got is None:
            got = self.subj = subject_of(self.host, self.device_type, self.device, self.gpu_index,
                                         self.details.get("global_rank", self.rank))
        return got

    def ahead(self) -> int | None:
        """The time (µs UTC) the line says the event it announces happens, when that lies after the line (``start``
        after ``ts``: a cloud maintenance notice's NotBefore or StartTime, ``details.occurs_us``) by no more than
        :data:`AHEAD_MAX_US`; else None. A time further out (a garbled or placeholder date, a year 2099) schedules
        nothing: it would hold an incident open, and a page firing, for ever (``correlate.incident.finish``)."""
        return self.start if self.ts < self.start <= self.ts + AHEAD_MAX_US else None

    def undated(self) -> bool:
        """True when its time is only an upper bound: the line printed no time and is dated by its file's mtime
        or its Kafka append time (``details.ts_upper_bound``, ``ingest.assemble``): written then or earlier."""
        return bool(self.details.get("ts_upper_bound"))


def stated_time(ts: int, details: dict[str, Any]) -> int | None:
    """The time (µs UTC) a line states for the event it announces (``details.occurs_us``: a notice's NotBefore or
    StartTime) when it lies within :data:`AHEAD_MAX_US` of the line's time ``ts`` (µs), before or after; else None.
    A time further (a NotBefore five years before its line or in 2045: a garbled or placeholder date, a stale
    document) is no time of the event: placed there, the notice's incident began years before any line of it (a
    break-it pass). One shortly before its line (a notice re-sent while its event waits to start) is taken."""
    t = details.get("occurs_us")
    return t if isinstance(t, int) and abs(t - ts) <= AHEAD_MAX_US else None


#: a time of day in a stated time (``details.occurs_at``): its seconds and their fraction, when it prints them
_CLOCK = re.compile(r"\d:\d\d(?P<sec>:\d\d(?:[.,](?P<frac>\d+))?)?")


def occurs_precision_us(text: object) -> int:
    """The resolution (µs) of a time a line states for the event it announces (``details.occurs_at``, read by
    ``ingest.assemble.occurs_time``): 1 s for whole seconds (Azure's ``NotBefore: Thu, 16 Mar 2023 14:01:28 GMT``,
    AWS's ``StartTime``), a minute for a time without seconds, ``10^(6 − n)`` µs for ``n`` decimals (the GCE
    harness's ``11:41:47.868757+02:00``: 1 µs); 1 s when there is no such text (an event made with
    ``details.occurs_us`` alone)."""
    m = _CLOCK.search(text) if isinstance(text, str) else None
    if m is None:
        return 1_000_000
    if m["sec"] is None:
        return 60_000_000
    return 10 ** max(0, 6 - len(m["frac"])) if m["frac"] else 1_000_000


def across_reboot(a: Ev, b: Ev) -> bool:
    """``a`` and ``b`` are lines of one capture (a file, a Kafka value: their ``origin`` without the line) on
    either side of a reboot in it (``Ev.boot``): the processes and the GPU state of one boot are gone in the next,
    so neither reports the other. A serial console's log put an Xid 79 of the boot before a reboot and an Xid 13 of
    the boot after it in one incident (a break-it pass)."""
    return a.boot != b.boot and capture_of(a) == capture_of(b)


#: the kernel's OOM-killer lines (``host.oom_kill``: "Killed process 18177 (palo_be) …", "python invoked oom-killer";
#: ``host.oom_kill_summary``: "oom-kill:…,task=pt_main_thread,pid=461754") and the process each names
OOM_KILLS = frozenset({"host.oom_kill", "host.oom_kill_summary"})
#: the names the kernel gives a training job's processes (its ``comm``, 15 characters at most), as prefixes, compared
#: without case: Python's interpreter (python, python3.10), PyTorch's threads (pt_main_thread: the kernel names a
#: process by the thread that ran out), torchrun, Ray's workers (ray::…), vLLM's and SGLang's workers (VLLM::Worker,
#: sglang::scheduler), DeepSpeed's and Accelerate's launchers, the serving and HPC binaries the catalog's GPU lines
#: come from (tritonserver, trtllm-serve, text-generation-launcher/-server, ollama, llama-server, HPL's xhpl,
#: LAMMPS' lmp, julia) and nccl-tests' binaries (all_reduce_perf: suffix). A job's binary of another name is spared:
#: the list errs that way, a name the kernel gives every job (``main``, ``a.out``) would tie any host's kill
JOB_PROCESSES = ("python", "pt_", "torchrun", "ray::", "vllm", "sglang", "deepspeed", "accelerate", "tritonserver",
                 "trtllm", "text-generation", "ollama", "llama", "xhpl", "lmp", "julia")
JOB_PROCESS_SUFFIXES = ("_perf",)


#: a Slurm job's memory cgroup (slurmd's cgroup v1 "/slurm/uid_1000/job_81234", v2 "/system.slice/slurmstepd.scope/
#: job_81234"), as an OOM kill's summary names the cgroup whose limit ran out (``details.oom_memcg``)
SLURM_JOB_CGROUP = re.compile(r"/slurm[^/]*/(?:uid_\d+/)?job_\d+(?:/|$)")


def spares_job(e: Ev) -> bool:
    """Is ``e`` an OOM kill (``OOM_KILLS``) that names a process not of a training job: the process killed
    (``details.killed``), or the one that invoked the killer when the line names no victim (``process``), is none
    of ``JOB_PROCESSES``, and its cgroup (``details.oom_memcg``) no Slurm job's (``SLURM_JOB_CGROUP``: a job step's
    "train" or "a.out" killed at its job's limit was context, no incident, a break-it pass)? Such a kill ended
    another program on the host (a database, a web server: apache/doris#3525's palo_be), not the rank whose peers
    then lose their connection: a peer's reset that names this host is no report of it (``peer_host``; it was tied
    to a peer's reset on another host as its initiator, a break-it pass). False for any other event and for a line
    that names no process."""
    if e.signature not in OOM_KILLS:
        return False
    name = e.details.get("killed") or e.process
    if not isinstance(name, str) or not name:
        return False
    if SLURM_JOB_CGROUP.search(str(e.details.get("oom_memcg") or "")):
        return False  # a batch job's memory limit: its process, whatever the program is called ("train", "a.out")
    name = name.lower()
    return not name.startswith(JOB_PROCESSES) and not name.endswith(JOB_PROCESS_SUFFIXES)


def capture_of(e: Ev) -> str:
    """The capture a line was read from (a file, a Kafka value): its ``origin`` without the line number."""
    return e.origin.rsplit(":", 1)[0]


def process_group(e: Ev) -> str | None:
    """The process group a PyTorch line names: its GUID, else its id (``details.pg_guid``, ``details.pg``)."""
    return e.details.get("pg_guid") or e.details.get("pg")


def subject_of(host: str, device_type: str | None, device: str | None, gpu_index: int | None,
               rank: int | None) -> tuple:
    """The subject ``(host, device_type, device)`` an event (or an incident's party) reports about: its device
    (a GPU when no type is said), else its GPU by index (``gpuN``), else its rank (``rankN``), else the host
    with the device type."""
    if device:
        return (host, device_type or "gpu", device)
    if gpu_index is not None and device_type in (None, "gpu"):
        return (host, "gpu", f"gpu{gpu_index}")
    if rank is not None and device_type in (None, "gpu"):
        return (host, "rank", f"rank{rank}")
    return (host, device_type, None)


def subject_rank(key: tuple, rank: int | None) -> int | None:
    """``rank``, else the rank a subject key (:func:`subject_of`) names, ``(host, "rank", "rank7")`` -> 7: a party
    whose naming line printed no rank (a traceback's "RuntimeError: CUDA error: uncorrectable ECC error
    encountered") but whose other lines did (kohya-ss/sd-scripts#1434: "[Rank 1] NCCL watchdog thread terminated",
    the incident said "on the host", a real-logs pass)."""
    if rank is None and key[1] == "rank" and key[2] and key[2][4:].isdecimal():
        return int(key[2][4:])
    return rank


_TS_FIELDS = ("ts",)
#: the signatures of a launcher's agent — torchrun's (torch.distributed.elastic), DeepSpeed's launcher, Ray's raylet —
#: whose line on a worker's exit names a local rank or a pid only (``str.startswith`` prefixes). Ray's "A worker died
#: or was killed …" right after its host's watchdog took a rank's process down is that teardown, not a death the
#: timeout waited on (verl-project/verl#2995: an incident apart, "the earliest fault nothing else explains")
#: Ray's death line, which follows a timeout as the others do and then reports it (``attribute._judge``)
RAY_WORKER_DIED = "ray.worker_died"
TORCHRUN_AGENT = ("torch.elastic.", "deepspeed.launcher.", RAY_WORKER_DIED)
#: a crash handler's line on the signal its process died on (Abseil's, glog's, PaddlePaddle's, tvm_ffi's). Right after
#: its host's watchdog timeout it is that timeout's teardown: PyTorch's watchdog ends the process with abort()
#: (SIGABRT), an XLA or Paddle process its fatal error, and ncclCommAbort may crash on the way out. It was "the
#: earliest fault nothing else explains", an error incident apart from the hang it ended, and a cause of the other
#: ranks' timeouts by cuda_error.explains_nccl (a break-it pass); before any timeout of its host it is still a crash
#: the others waited on
CRASH_SIGNALS = ("absl.fatal_signal", "glog.fatal_signal", "paddle.fatal_signal", "tvm_ffi.fatal_signal")
#: a process's own line that it ends on a failure elsewhere, by an abort a crash handler then prints (JAX's
#: "Terminating process because the JAX distributed service detected fatal errors …", LOG(FATAL): openxla/xla#38624)
ABORTS_ON = frozenset({"xla.coordination_error"})
#: PyTorch's own lines when its NCCL watchdog takes the process down on a failed collective that did not time out:
#: an asynchronous NCCL error ("failure detected by watchdog at work sequence id: …", "Some NCCL operations have failed
#: or timed out", "taking the entire process down", and the error it re-throws before abort(): "Process group watchdog
#: thread terminated with exception: NCCL error: remote process exited …", tatsu-lab/stanford_alpaca#207,
#: deepseek-ai/DeepEP#106). No line gives an elapsed time, so no timeout leads the crash handler's SIGABRT that
#: follows, and it was the incident's first fault, the cause of the lines that took it down (a break-it pass)
WATCHDOG_ABORTS = frozenset({"torch.watchdog_failure", "torch.watchdog_exception", "torch.taking_down",
                             "torch.nccl_error", "torch.nccl_result"})
#: the lines that report a process's end and follow its host's watchdog timeout without a rank (``follow_watchdogs``)
PROCESS_END = (*TORCHRUN_AGENT, *CRASH_SIGNALS)
#: how long after a watchdog timeout line the same rank's follow-up lines come (PyTorch prints them at once)
FOLLOW_UP_US = 5_000_000
#: how long after a watchdog timeout torchrun's agent reports the worker it took down: the process first waits for its
#: debug dump (TORCH_NCCL_WAIT_TIMEOUT_DUMP_MILSEC) and the agent sees the exit at its next poll (a fresh user's
#: trial: "failed (exitcode: -6)" 31 s after the timeouts was an incident apart, "only downstream reports")
AGENT_FOLLOW_UP_US = 120_000_000
#: how long before its timeout line a rank's own PyTorch follow-up line may come: PyTorch 2.x prints "Timeout at NCCL
#: work", "Some NCCL operations have failed" and "taking the entire process down" first and then re-throws the timeout
#: ("Process group watchdog thread terminated with exception: … Watchdog caught collective operation timeout … ran
#: for N milliseconds") 1.4 ms later (NVIDIA/nccl#1504); with the first "Watchdog caught" line missing from a paste,
#: the follow-ups were an incident apart, the same hang twice (a real-logs pass)
FOLLOW_LEAD_US = 100_000


#: PyTorch's desync report line (ingest/signatures/torch.yaml): the ranks a watchdog timeout waited for
DESYNC_REPORT = "torch.desync_report"
#: how many lines after its watchdog timeout (of the same capture) PyTorch prints the desync report: the "Rank 0"
#: header, "Timeout at collective", then the lagging ranks (pytorch/pytorch#152623: three lines)
REPORT_LINES = 16
#: how long after its watchdog timeout a desync report of a capture without the timeout (a Kafka value per line)
#: may come, of the same host (µs): the same millisecond or so
REPORT_REACH_US = 5_000_000


@dataclass(slots=True)
class Copies:
    """The copies of events :func:`follow_reports` and ``Topology.name_hosts`` made at a caller's calls, kept so that
    the same event object, with what its copy is made of unchanged, gives the same copy object at the next call.

    The attribution and cluster caches (``correlator.AttributionCache``, ``cluster.ComponentCache``) key candidate
    incidents on their events' identity: a new copy of a desync report or of a line that named its host by an address
    at every ``correlate`` call of the streaming correlator made its candidate incident a changed one, clustered and
    attributed again at every step. An event's other fields are fixed once built (:class:`Ev`), so a copy is a
    function of the event object and of ``made_of``: what the copy changes (the host, rank, implied start …) and the
    event's own implied start when the copy keeps it (``Ev.imply_start`` is the one change an event takes).

    Bounded: :meth:`turn`, once per call, forgets every copy not asked for at the call before, so the memo holds the
    copies of the caller's current events only (those of the events it pruned go)."""

    #: (what copied it, id of the event) -> (the event, kept alive so that its id names it; ``made_of``; the copy)
    last: dict[tuple[str, int], tuple[Ev, tuple, Ev]] = field(default_factory=dict)
    now: dict[tuple[str, int], tuple[Ev, tuple, Ev]] = field(default_factory=dict)

    def turn(self) -> None:
        """Start a call: the copies asked for at the call before are those kept."""
        self.last, self.now = self.now, {}

    def get(self, by: str, e: Ev, made_of: tuple) -> Ev | None:
        """The copy ``by`` (a name of what copies) made of ``e`` with ``made_of``, kept for this call; None when none
        was made since the call before (then make it and :meth:`put` it)."""
        key = (by, id(e))
        got = self.now.get(key) or self.last.get(key)
        if got is None or got[0] is not e or got[1] != made_of:
            return None
        self.now[key] = got
        return got[2]

    def put(self, by: str, e: Ev, made_of: tuple, copy: Ev) -> Ev:
        """Keep ``copy``, made by ``by`` of ``e`` with ``made_of``; returns ``copy``."""
        self.now[(by, id(e))] = (e, made_of, copy)
        return copy


def copy_once(copies: Copies | None, by: str, e: Ev, made_of: tuple, make: Callable[[], Ev]) -> Ev:
    """The copy ``by`` (a name of what copies) makes of ``e`` with ``made_of``: the one ``copies`` kept from the call
    before while ``e`` and ``made_of`` are the same (:meth:`Copies.get`), else ``make()``'s, kept (:meth:`Copies.put`);
    ``make()``'s alone without ``copies``. What ``follow_reports`` and ``Topology.name_hosts`` call."""
    if copies is None:
        return make()
    c = copies.get(by, e, made_of)
    return c if c is not None else copies.put(by, e, made_of, make())


def follow_reports(events: list[Ev], copies: Copies | None = None) -> list[Ev]:
    """``events`` with each PyTorch desync report (:data:`DESYNC_REPORT`) that follows a watchdog timeout replaced
    by a copy of the host, rank and implied start of that timeout (as ``follow_watchdogs`` gives the lines after a
    timeout of their host), ``details.report_of`` its event_id: the report's lines print
    neither (continuation lines under "[rank0]:[E… ProcessGroupNCCL.cpp:1937] Rank 0"), so a job's log of several
    hosts gave it the file's host and no scene held it beside the ranks it is about (a break-it pass). The timeout it
    follows: the nearest before it in its capture within :data:`REPORT_LINES` lines, else the latest of its host
    within :data:`REPORT_REACH_US` before it. A report that follows none is left as it is (``comm.silent_rank`` reads
    only followed ones: a report under another process group's timeout names that group's ranks). ``copies``: the
    caller's copies from its last call (:class:`Copies`), given again while the report follows the same timeout."""
    if not any(e.signature == DESYNC_REPORT for e in events):
        return events
    by_capture: dict[str, list[Ev]] = {}
    by_host: dict[str, list[Ev]] = {}
    for e in events:
        if e.kind == "nccl_timeout" and e.elapsed_ms:
            by_capture.setdefault(capture_of(e), []).append(e)
            by_host.setdefault(e.host, []).append(e)
    out = list(events)
    for k, e in enumerate(events):
        if e.signature != DESYNC_REPORT:
            continue
        before = [t for t in by_capture.get(capture_of(e), ()) if 0 < e.pos - t.pos <= REPORT_LINES]
        if before:  # the nearest line before it
            t = max(before, key=lambda t: (t.pos, t.ts))
        else:  # the latest of its host
            t = max((t for t in by_host.get(e.host, ()) if 0 <= e.ts - t.ts <= REPORT_REACH_US),
                    key=lambda t: t.ts, default=None)
        if t is None:
            continue
        start = t.start if e.implied_start is None else e.implied_start
        out[k] = copy_once(copies, "report", e, (t.host, t.rank, t.event_id, start),
                           lambda: replace(e, host=t.host, rank=t.rank, details={**e.details, "report_of": t.event_id},
                                           implied_start=start))
    return out


def follow_notices(events: list[Ev]) -> None:
    """Give each cloud maintenance notice the time the latest notice of the same event on its host names.

    A cloud re-sends a notice while the event is pending, and moves its time: Azure's Scheduled Events document keeps
    the event's ``EventId`` and changes its ``NotBefore`` (learn.microsoft.com/azure/virtual-machines/linux/
    scheduled-events: a new ``DocumentIncarnation`` each change), AWS's Node Termination Handler logs the event's
    ``EventID`` (aws/aws-node-termination-handler, pkg/monitor/scheduledevent: EC2's own id). Each notice placed at
    its own time (``Ev.start``: ``details.occurs_us``) made an incident apart per notice, the first one open until
    the stale time and its page fired twice for one maintenance (a defect pass). The notices of one event:
    :func:`notice_groups`; the latest written (``ts``, then its place in the log, then event id) supersedes the
    others' time, later or earlier than theirs. Sets ``Ev.rescheduled`` in place, as ``follow_watchdogs`` sets
    ``implied_start``: a streaming correlator's kept notice keeps the time, and stays as long as the latest
    (``Ev.ahead``), so stream and batch agree; never unset (a kept earlier notice whose latest was forgotten still
    says the latest's time, as the batch of both did)."""
    for group in notice_groups(events):
        t = group[-1]
        us = stated_time(t.ts, t.details)
        for e in group[:-1]:
            if e.rescheduled != us:
                e.reschedule(us)


def notice_groups(events: Iterable[Ev],
                  key: Callable[[Ev], tuple[str, ...] | None] | None = None) -> list[list[Ev]]:
    """The notices of ``events`` that are one cloud event's, in the order they were written (``ts``, then place in
    the log, then event id), for each event with more than one notice: those of one ``key`` (:func:`notice_key` by
    default; ``cluster`` gives :func:`cloud_event_key`, a notice's start too) whose lines lie within
    :data:`AHEAD_MAX_US` of the first's. A cloud names a pending event's time at most that far ahead and
    re-sends its notice until it happens; a notice of the same id later is another event's (a handler's reused id, a
    fleet's placeholder): one id's notices nine months apart were one incident from March to November, the March
    notice placed at November's time (a break-it pass). Cost: a sort of the notices."""
    key = key or notice_key
    by_key: dict[tuple[str, ...], list[Ev]] = {}
    for e in events:
        if (k := key(e)) is not None:
            by_key.setdefault(k, []).append(e)
    out: list[list[Ev]] = []
    for notices in by_key.values():
        if len(notices) < 2:
            continue
        notices.sort(key=lambda e: (e.ts, e.pos, e.event_id))
        group = [notices[0]]
        for e in notices[1:]:
            if e.ts - group[0].ts > AHEAD_MAX_US:
                if len(group) > 1:
                    out.append(group)
                group = []
            group.append(e)
        if len(group) > 1:
            out.append(group)
    return out


def notice_key(e: Ev) -> tuple[str, str, str] | None:
    """(host, signature, ``details.notice_id``) of a cloud maintenance notice that names its event's id and a time
    (:func:`stated_time`: ``details.occurs_us`` within :data:`AHEAD_MAX_US` of its line): the notices of one key
    are of one event while close in time (:func:`notice_groups`); None for any other event."""
    nid = e.details.get("notice_id")
    if nid and stated_time(e.ts, e.details) is not None:
        return (e.host, e.signature, str(nid))
    return None


def cloud_event_key(e: Ev) -> tuple[str, str] | None:
    """(host, ``details.notice_id``) of a line of one cloud maintenance event, its notices (:func:`notice_key`) and
    its start (Azure's ``EventStatus`` ``Started``: ``azure.scheduled_event_started``, which names no time of its
    own) alike: the cloud's event id (Azure's ``EventId``, a GUID kept from Scheduled to Started; EC2's, or the Node
    Termination Handler's hash of the notice) is one event's on its host while its lines lie within
    :data:`AHEAD_MAX_US` of the first's (``cluster.components`` joins them into one incident, :func:`notice_groups`);
    None for any other event."""
    nid = e.details.get("notice_id")
    return (e.host, str(nid)) if nid else None


def follow_watchdogs(events: list[Ev]) -> None:
    """Give the lines a rank prints right after a watchdog timeout the timeout's implied start.

    PyTorch's ProcessGroupNCCL prints, for one timeout, "Watchdog caught collective operation timeout …
    ran for N milliseconds" and then, within the same millisecond or so, "Exception (either an error or
    timeout) detected by watchdog at work: <SeqNum>", "Some NCCL operations have failed or timed out"
    and "To avoid data inconsistency, we are taking the entire process down" (formats.md, PyTorch
    watchdog). Only the first says how long the collective ran; the others report the same hang, so they
    are placed at the same start. A follow-up line is one of the same host and rank, from the NCCL/PyTorch
    log, with no elapsed time of its own, at most ``FOLLOW_UP_US`` after the timeout line (a PyTorch line of the
    rank: or up to ``FOLLOW_LEAD_US`` before it, as PyTorch 2.x re-throws the timeout after them) and with the
    same SeqNum when it prints one. Older PyTorch prints the follow-up lines with no rank ("[E ProcessGroupNCCL.cpp:471]
    Some NCCL operations have failed or timed out. …", ai2cm/ace#348): such a line follows the timeout of any rank of
    its host logged at most ``FOLLOW_UP_US`` before it (after it in the log's order when their times are equal; a
    PyTorch line: an NCCL WARN names no rank either, and is no follow-up of the watchdog's) —
    the line was its own incident, 30 minutes after the collective its ranks' timeouts place (a real-logs pass). So is
    torchrun's "failed (exitcode: -6) local_rank: 3" when its worker's process ended on the timeout (a break-it pass:
    an incident apart, "only downstream reports"), and a crash handler's line on the signal that ended it
    (``CRASH_SIGNALS``: "*** SIGABRT (@0x…) received by PID …" after the watchdog's abort). So is a crash handler's
    line at most ``FOLLOW_UP_US`` after its host's line that says the process ends on a failure elsewhere
    (``ABORTS_ON``: JAX's "Terminating process because the JAX distributed service detected fatal errors. This most
    likely indicates that another task died", whose LOG(FATAL) aborts: openxla/xla#38624), at that line's start; and
    one that follows no timeout, at most ``AGENT_FOLLOW_UP_US`` after its host's line of PyTorch's watchdog taking the
    process down on an asynchronous NCCL error (``WATCHDOG_ABORTS``: "NCCL error: remote process exited …", "taking
    the entire process down"), at the latest such line's start. Sets ``Ev.implied_start`` in place."""
    timeouts: dict[tuple[str, int | None], list[Ev]] = {}
    enders: dict[str, list[Ev]] = {}
    watchdogs: dict[str, list[Ev]] = {}
    # the lines that may follow one (``_follow_timeouts``' and ``_follow_enders``' tests of a line alone), in the
    # order of ``events``: found in this one pass, not in one pass over every event per rule (the streaming
    # correlator calls this over every kept event at every step)
    followers: list[Ev] = []
    crashes: list[Ev] = []
    for e in events:
        sig = e.signature
        if sig in CRASH_SIGNALS:
            crashes.append(e)
        if e.elapsed_ms:
            if e.rank is not None:
                timeouts.setdefault((e.host, e.rank), []).append(e)
            timeouts.setdefault((e.host, None), []).append(e)  # for the lines that print no rank
            continue
        if sig in ABORTS_ON:
            enders.setdefault(e.host, []).append(e)
        elif sig in WATCHDOG_ABORTS:
            watchdogs.setdefault(e.host, []).append(e)
        if e.source == "nccl" and (e.kind in ("nccl_timeout", "nccl_error") or sig.startswith(PROCESS_END)):
            followers.append(e)
    if enders and crashes:
        _follow_enders(crashes, enders, FOLLOW_UP_US)
    if timeouts and followers:
        _follow_timeouts(followers, timeouts)
    if watchdogs and crashes:  # after the timeouts: a crash that follows a timeout keeps that timeout's start
        _follow_enders(crashes, watchdogs, AGENT_FOLLOW_UP_US)


def _follow_timeouts(events: list[Ev], timeouts: dict[tuple[str, int | None], list[Ev]]) -> None:
    """Give the lines that follow a watchdog timeout (``follow_watchdogs``) its start: ``timeouts`` maps (host, rank)
    and (host, None) to the host's lines that give an elapsed time."""
    for lst in timeouts.values():
        lst.sort(key=lambda t: (t.ts, t.order))
    for e in events:
        if e.elapsed_ms or e.source != "nccl" or (e.kind not in ("nccl_timeout", "nccl_error")
                                                  and not e.signature.startswith(PROCESS_END)):
            continue
        best = None
        reach = AGENT_FOLLOW_UP_US if e.signature.startswith(PROCESS_END) else FOLLOW_UP_US
        lead = FOLLOW_LEAD_US if e.rank is not None and e.signature.startswith("torch.") else 0
        for t in timeouts.get((e.host, e.rank), ()):
            if e.rank is None and other_process(e, t, tags_only=True):
                continue  # a line with no rank of another process's (its pid, its torchrun label): not its end
            if (t.ts - lead <= e.ts <= t.ts + reach and (e.seq is None or t.seq is None or e.seq == t.seq)
                    and (e.rank is not None
                         or (e.signature.startswith(("torch.", *PROCESS_END))
                             and (t.ts < e.ts or _after_in_log(t, e))))):
                best = t
        if best is None and e.seq is not None and e.rank is not None and e.signature.startswith("torch."):
            best = _same_work(e, timeouts.get((e.host, None), ()))
        if best is not None:
            e.imply_start(best.start)


def _follow_enders(events: list[Ev], enders: dict[str, list[Ev]], reach_us: int) -> None:
    """Give a crash handler's line (``CRASH_SIGNALS``) with no implied start yet the start of the latest line of
    ``enders`` (host -> its lines that end the process: ``ABORTS_ON``, ``WATCHDOG_ABORTS``) of its host at most
    ``reach_us`` (µs) before it (or of its time and before it in the log), of its own process: not one of another
    (:func:`other_process`: the rank "[rank3]:" gives, glog's "received by PID 4181", torchrun's "[default3]:").
    Two ranks of one host aborting a minute apart: the first rank's SIGABRT, printed after its debug
    dump, took the second rank's abort, the latest on the host (a defect pass)."""
    for e in events:
        if e.signature not in CRASH_SIGNALS or e.implied_start is not None:
            continue
        best = None
        for t in enders.get(e.host, ()):
            if other_process(e, t):
                continue  # another process's end
            if t.ts <= e.ts <= t.ts + reach_us and (t.ts < e.ts or _after_in_log(t, e)) \
                    and (best is None or t.ts > best.ts):
                best = t
        if best is not None:
            e.imply_start(best.start)


def other_process(e: Ev, t: Ev, tags_only: bool = False) -> bool:
    """``e`` and ``t`` (two lines of one host) are of two processes by what both name: their ranks, their pids (a
    syslog tag's "python[4181]:", glog's "received by PID 4181", NCCL's "host:pid:tid"; not a launcher's tag that
    relays its workers: ``ingest.prefix``), or torchrun's labels' local ranks ("[default3]:" against
    "[default0]:", ``details.local_rank``). A worker's SIGABRT took another worker's timeout's start when its line
    named no rank (a defect pass). A tag's pid (``details.pid_from_tag``) is set against a tag's only: a systemd
    unit's "torchrun[777]:" tags every child's line, and a timeout so tagged lost its own process's glog "received
    by PID 4181" abort (a break-it pass). ``tags_only``: pids are set against each other only when both are tags'
    (``_follow_timeouts``: a line's own text may name the pid of what it reports, Ray's raylet "Worker PID: 833" of
    the worker the timeout's "(WorkerDict pid=835, …)" label names, verl-project/verl#2995; its death became a first
    fault again, a break-it pass)."""
    same_kind = e.details.get("pid_from_tag") == t.details.get("pid_from_tag")
    pids = (e.pid, t.pid) if same_kind and (not tags_only or e.details.get("pid_from_tag")) else (None, None)
    return any(a is not None and b is not None and a != b
               for a, b in ((e.rank, t.rank), pids,
                            (e.details.get("local_rank"), t.details.get("local_rank"))))


def _after_in_log(t: Ev, e: Ev) -> bool:
    """``e``, of ``t``'s time, comes after the timeout ``t``: by its line number when both are lines of one capture
    (a file, a Kafka value), else in correlation order (``Ev.order``), which the timeout's implied start leads. By
    that order alone a line above the timeout in its own file followed it, and a Ray worker's death printed before
    its host's timeout, stamped with that timeout's time, would be that timeout's report."""
    if capture_of(t) == capture_of(e):
        return t.pos < e.pos
    return t.order < e.order


def _same_work(e: Ev, timeouts: Iterable[Ev]) -> Ev | None:
    """The timeout of another rank of ``e``'s host on the same work (SeqNum, and process group when both print
    one) within ``FOLLOW_UP_US`` of ``e``, either side, for a rank whose own timeout line the log lacks: its
    "Exception … detected by watchdog at work: 1580" is the same collective's hang. Rank 3's line, 10 minutes after
    the implied start of ranks 0 and 4's timeouts on SeqNum 1580, was an incident apart (hiyouga/LlamaFactory#7396,
    a real-logs pass)."""
    pg = process_group(e)
    for t in timeouts:
        tpg = process_group(t)
        if t.seq == e.seq and t.rank != e.rank and abs(e.ts - t.ts) <= FOLLOW_UP_US and (
                pg is None or tpg is None or pg == tpg):
            return t
    return None


def _pos(origin: str) -> int:  # once per event (Ev.__post_init__): no cache
    tail = origin.rsplit(":", 1)[-1].split("#", 1)[0]
    return int(tail) if tail.isdigit() else 0


#: Ev's positional fields read straight from events columns of the same name (the rest are derived)
_COLUMN_FIELDS = ("event_id", "ts", "ts_basis", "host", "source", "kind", "signature", "severity", "device_type",
                  "device", "link", "xid", "sxid", "peer", "rank", "nranks", "comm", "message", "gpu_index", "pid",
                  "fatal", "cause_xid", "seq", "op", "timeout_ms", "elapsed_ms", "process")


def _details(text: str) -> dict[str, Any]:
    """An event's ``details`` JSON object; ``{}`` for text that is not one (another producer's): the event
    still counts, without the extra fields."""
    try:
        d = orjson.loads(text)
    except orjson.JSONDecodeError:
        return {}
    return d if isinstance(d, dict) else {}


def events_from_table(table: pa.Table) -> list[Ev]:
    """Arrow events table (``schemas.events.EVENTS_SCHEMA``; ``origin``, ``details``, ``process`` and ``last_ts`` may be
    absent) -> ``Ev`` objects, timestamps as µs ints; KeyError names another missing column, ValueError the required
    columns that hold nulls (``schemas.events.check_required``) or values out of range (``check_ranges``).
    A ``ts_precision_us`` below 1 reads as 1; ``details`` that are not a JSON object as ``{}``.

    Read column by column: a column converts to Python at ~50 ns a value, a row as a dict at ~10 µs."""
    n = table.num_rows
    if n == 0:
        return []
    check_required(table)
    check_ranges(table)
    names = set(table.column_names)

    def col(name: str) -> list:
        if name not in names:
            if name in ("origin", "details", "process", "last_ts"):
                return [None] * n
            raise KeyError(f"events table without the column {name!r}")
        c = table.column(name)
        if pa.types.is_timestamp(c.type):
            c = c.cast(pa.int64())
        return c.to_pylist()

    cols = [col(f) for f in _COLUMN_FIELDS]
    precision = [p if p and p > 0 else 1 for p in col("ts_precision_us")]  # a resolution is at least 1 µs
    count = [c or 1 for c in col("count")]
    details = [_details(d) if d else {} for d in col("details")]
    origin = [o or "" for o in col("origin")]
    return list(map(Ev, *cols, precision, count, details, origin, col("ingest_ts"), col("last_ts")))
