"""Read what a line's prefixes say: event time, host, and NCCL / PyTorch ids.

The same payload reaches us wrapped in different prefixes (shared/reference/
formats.md §1, §7, §11.1, §12.1). :func:`parse_prefix` peels them one layer at
a time — a ``grep`` file name, a source address, a syslog/journal header, a
kernel stamp — and returns what each layer said. It runs only on lines that
a signature matched.

Stamps without a zone are read in ``tz`` (UTC unless configured); stamps
without a year take the year that puts them at most two days after the
reference time (formats.md §1.5, "December lines read in January").
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone, tzinfo
from functools import lru_cache

import orjson

US = 1_000_000
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)

#: times outside this range are garbled stamps (far past or future), not times a GPU fleet's logs carry.
#: Fixed bounds, not "now", so decoding and the pipeline stay pure functions of their input.
EARLIEST_US = 946_684_800 * US  # 2000-01-01T00:00:00Z
LATEST_US = 4_102_444_800 * US  # 2100-01-01T00:00:00Z


def plausible(ts: int | float | None) -> bool:
    """A time (µs since the epoch, UTC) a real log line of a GPU fleet can carry: from 2000 to 2100."""
    return ts is not None and EARLIEST_US <= ts <= LATEST_US

MONTHS = {m: i for i, m in enumerate(
    ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"], 1)}
# journalctl honours the locale (formats.md §1.5): "фев 12", "11月 15" appear in public reports.
MONTHS.update({
    "янв": 1, "фев": 2, "мар": 3, "апр": 4, "май": 5, "мая": 5, "июн": 6, "июл": 7, "авг": 8,
    "сен": 9, "окт": 10, "ноя": 11, "дек": 12,
    "jän": 1, "mär": 3, "mai": 5, "okt": 10, "dez": 12,
    "janv.": 1, "févr.": 2, "mars": 3, "avr.": 4, "juin": 6, "juil.": 7, "août": 8,
    "sept.": 9, "oct.": 10, "nov.": 11, "déc.": 12,
})
# glibc's abbreviated months (localedata LC_TIME ``abmon``, what ``%b`` prints) of more locales a fleet's hosts run:
# pl_PL ("kwi 15 07:56:59 host kernel: NVRM: Xid …", NVIDIA/open-gpu-kernel-modules#1045), es_ES, it_IT, pt_BR, nl_NL;
# none names another month in a locale above
MONTHS.update({
    "sty": 1, "lut": 2, "kwi": 4, "maj": 5, "cze": 6, "lip": 7, "sie": 8, "wrz": 9, "paź": 10, "lis": 11, "gru": 12,
    "ene": 1, "abr": 4, "ago": 8, "dic": 12,
    "gen": 1, "mag": 5, "giu": 6, "lug": 7, "set": 9, "ott": 10,
    "fev": 2, "out": 10,
    "mrt": 3, "mei": 5,
})
# full month names: a locale whose ``%b`` prints the whole word ("april 24 16:22:15 host kernel: NVRM: Xid …", lower
# case, NVIDIA/open-gpu-kernel-modules#1010; the line's time was not read and its file's mtime stood for it), English's
# own in a paste ("April 24"), and the Nordic and German forms of the months whose word is short (nb_NO "juni", "des.")
MONTHS.update({m: i for i, m in enumerate(
    ["january", "february", "march", "april", "may", "june", "july", "august", "september", "october", "november",
     "december"], 1)})
MONTHS.update({"sept": 9, "juni": 6, "juli": 7, "des": 12, "märz": 3, "maart": 3})
MONTHS.update({f"{i}月": i for i in range(1, 13)})
MONTHS.update({f"{i}월": i for i in range(1, 13)})  # ko_KR
# glibc's ``abmon`` (what ``%b``, so ``dmesg -T`` and journalctl, print) of the locales whose names no locale above
# has, read from localedata/locales of glibc 2.36 (Debian 12's ``locales``; each checked against ``date +%b`` in the
# compiled locale): cs_CZ (its own three letters, not the genitive ``%B`` "ledna" nor Roman numerals), tr_TR, uk_UA
# (util-linux translates dmesg's stamp for cs and uk), sk_SK, sl_SI, ro_RO, hu_HU, lv_LV, bg_BG, sr_RS, fr_FR's
# "avril", fr_CA, el_GR, fi_FI, lt_LT, he_IL. Left out: hr_HR, whose "lip" (lipanj, June), "srp" (srpanj, July) and
# "lis" (listopad, October) are pl_PL's July and cs_CZ's August and November: a name is one month here
MONTHS.update({
    "led": 1, "úno": 2, "bře": 3, "dub": 4, "kvě": 5, "čen": 6, "čec": 7, "srp": 8, "zář": 9, "říj": 10, "pro": 12,
    "oca": 1, "şub": 2, "nis": 4, "haz": 6, "tem": 7, "ağu": 8, "eyl": 9, "eki": 10, "kas": 11, "ara": 12,
    "січ": 1, "лют": 2, "бер": 3, "кві": 4, "тра": 5, "чер": 6, "лип": 7, "сер": 8, "вер": 9, "жов": 10, "лис": 11,
    "гру": 12,
    "máj": 5, "jún": 6, "júl": 7, "avg": 8, "ian": 1, "iun": 6, "iul": 7, "febr": 2, "márc": 3, "ápr": 4,
    "szept": 9, "jūn": 6, "jūl": 7,
    "яну": 1, "юни": 6, "юли": 7, "сеп": 9, "ное": 11, "јан": 1, "феб": 2, "мај": 5, "јун": 6, "јул": 7, "нов": 11,
    "дец": 12,
    "avril": 4, "fév": 2, "avr": 4, "jui": 7, "aoû": 8, "déc": 12,
    "ιαν": 1, "φεβ": 2, "μαρ": 3, "απρ": 4, "μαΐ": 5, "ιουν": 6, "ιουλ": 7, "αυγ": 8, "σεπ": 9, "οκτ": 10, "νοε": 11,
    "δεκ": 12,
    "tammi": 1, "helmi": 2, "maalis": 3, "huhti": 4, "touko": 5, "kesä": 6, "heinä": 7, "elo": 8, "syys": 9,
    "loka": 10, "marras": 11, "joulu": 12,
    "saus": 1, "vas": 2, "kov": 3, "bal": 4, "geg": 5, "birž": 6, "liep": 7, "rugp": 8, "rugs": 9, "spal": 10,
    "lapkr": 11, "gruod": 12,
    "ינו": 1, "פבר": 2, "מרץ": 3, "אפר": 4, "מאי": 5, "יונ": 6, "יול": 7, "אוג": 8, "ספט": 9, "אוק": 10, "נוב": 11,
    "דצמ": 12,
})

_MON = r"(?P<mon>[A-Za-z]{3}|[а-яА-Я]{3}|\d{1,2}[月월]|[^\W\d_]{3,9}\.?)"


@dataclass(slots=True)
class Prefix:
    """What a line's prefixes say. Times are µs since the epoch, UTC."""

    ts: int | None = None
    precision_us: int = 1
    mono: float | None = None  # raw dmesg seconds since boot
    host: str | None = None
    source_addr: str | None = None
    #: ``host`` is the address before the line (talosctl's), which a Kafka key or an envelope's host overrides
    addr_host: bool = False
    #: the address a Ray label names for another node's worker (``(… pid=…, ip=10.0.0.2) ``): the line is that
    #: node's output, printed by the driver's node (``ingest.assemble.assign_hosts``)
    via: str | None = None
    pid: int | None = None
    gpu_index: int | None = None  # NCCL cudaDev
    rank: int | None = None
    #: the MPI rank Open MPI's ``--tag-output`` label gives ("[1,3]<stderr>:"): the rank of a training process's own
    #: line (Horovod's, PyTorch's under mpirun) where it names none, but not of a kernel line a ``mpirun dmesg``
    #: printed (``ingest.assemble`` reads it for NCCL/PyTorch signatures only)
    launcher_rank: int | None = None
    #: torchrun's ``--tee`` label's number ("[default3]:": role and local rank, the worker process on its node): which
    #: of a node's workers printed the line, where neither a rank nor a pid of its own says (``details.local_rank``)
    local_rank: int | None = None
    #: ``pid`` is a syslog tag's ("python[4181]: "): the process that wrote the line to the journal, which is the
    #: launcher relaying its workers' output when a launcher's label follows (``torchrun[777]: [default3]: …``)
    pid_from_tag: bool = False
    rest: str = ""
    #: a stamp without a year as (month, day, hour, minute, second, µs) when it gave ``ts``: the year can be
    #: resolved again against another reference (``ingest.assemble.resolve_times``) without parsing again
    yearless: tuple[int, int, int, int, int, int] | None = None
    #: the stamp a syslog or ISO header printed when it is no date ("Feb 30 12:00:00", an offset of +99:00): the
    #: line is untimed, but said so (``details.ts_unreadable``)
    unreadable: str | None = None
    #: a clock without a date (``18:11:06 ``) that gave ``ts``, (hour, minute, second, µs), its day taken from the
    #: reference (:func:`clock_us`): ``ingest.assemble.resolve_times`` dates it again, in its log's order
    clock: tuple[int, int, int, int] | None = None
    #: where that clock's day came from: ``line`` (a line of its log with a date), else its reference's basis
    day_from: str | None = None
    #: NCCL's ``[device]`` when it is no device index (over ``MAX_GPU_INDEX``): ``details.gpu_index_text``
    gpu_index_text: str | None = None
    #: ``ts`` came from a stamp that printed no zone (a wrapper's, maybe local time: ``zone_shift``)
    zoneless: bool = False
    #: c10's own stamp behind a zoneless one was whole hours from it and gave ``ts``: c10's minus the wrapper's, µs
    #: (``ingest.assemble.resolve_times`` moves the segment's lines with the wrapper's stamp alone by as much)
    zone_shift: int | None = None

    @property
    def nccl_own(self) -> bool:
        """The line carries NCCL's own ``host:pid:tid [dev]`` prefix (which always sets ``gpu_index`` or
        ``gpu_index_text``): a line NCCL printed, not a copy a wrapper quotes."""
        return self.gpu_index is not None or self.gpu_index_text is not None

    @property
    def dayless(self) -> bool:
        """``ts`` came from a clock without a date (``clock``)."""
        return self.clock is not None

    @property
    def year_inferred(self) -> bool:
        """``ts`` came from a stamp without a year or without a date (both inferred from the reference time)."""
        return self.yearless is not None or self.dayless


def to_us(dt: datetime) -> int:
    """A datetime (aware) to µs since the epoch, exact."""
    d = dt - _EPOCH
    return (d.days * 86400 + d.seconds) * US + d.microseconds


def from_us(us: int) -> datetime:
    return _EPOCH + timedelta(microseconds=us)


def _frac_us(frac: str | None) -> tuple[int, int]:
    """Fraction digits to (µs, precision µs). '903881913' -> (903881, 1)."""
    if not frac:
        return 0, US
    if len(frac) >= 6:  # microseconds or finer: the common case, without padding
        return int(frac[:6]), 1
    digits = frac.ljust(6, "0")
    return int(digits), max(1, 10 ** (6 - min(len(frac), 6)))


def _month(tok: str) -> int | None:
    return MONTHS.get(tok.lower()) or MONTHS.get(tok.lower().rstrip("."))


def resolve_year(month: int, day: int, h: int, mi: int, s: int, us: int, ref_us: int | None,
                 tz: tzinfo) -> int | None:
    """µs for a stamp without a year: the latest year that puts it at most two days after ``ref_us`` —
    the reference's year, the next one for a stamp just past New Year ("Jan  1 00:00:05" read against
    "Dec 31 23:59:55"; also when ``tz``'s year is ahead of UTC's), or an earlier one ("December lines read in
    January", formats.md §1.5). Without ``ref_us``: this year. ``None`` for a date no calendar has, or a
    reference outside the calendar."""
    if ref_us is None:
        years = [datetime.now(timezone.utc).year]
    else:
        try:
            ref_year = _year_of_day(ref_us // _DAY_US)
        except (OverflowError, ValueError):  # a reference no datetime holds (±2**62 µs)
            return None
        years = range(ref_year + 1, ref_year - 5, -1)
    t = None
    # a stamp more than two days ahead is from the year before
    for t in _in_years(years, month, day, h, mi, s, us, tz):
        if t is None or ref_us is None or t <= ref_us + 2 * 86400 * US:
            return t
    return t


def _in_years(years: Iterable[int], month: int, day: int, h: int, mi: int, s: int, us: int,
              tz: tzinfo) -> Iterator[int | None]:
    """The stamp's µs in each of ``years`` (lazily: callers stop at the first that fits) that has its date and is in
    the calendar (1 – 9999); ``None``, then no more, for a date no year has (29 February exists only in leap
    years: other years are passed over)."""
    for year in years:
        if not 1 <= year <= 9999:
            continue
        second = _second_us(year, month, day, h, mi, s, tz)
        if second is None:
            if month == 2 and day == 29:
                continue
            yield None
            return
        yield second + us


def resolve_year_after(month: int, day: int, h: int, mi: int, s: int, us: int, ref_us: int,
                       tz: tzinfo) -> int | None:
    """µs for a stamp without a year printed after a dated line of its log at ``ref_us`` (a line above it): the
    earliest year that puts it at most two days before ``ref_us`` or later — the reference's year, or the next one
    for a stamp past New Year. :func:`resolve_year` reads its reference as an upper bound (a file's time, a dated line
    below), so a watchdog line of June 5 under a run's banner of June 1 went a year back, and 166 of 200 lines of a
    220 MB log (a break-it pass); the year nearest the dated line put an August line five months before its January
    banner (a third). ``None`` for a date no calendar has, or a reference outside the calendar."""
    try:
        ref_year = _year_of_day(ref_us // _DAY_US)
    except (OverflowError, ValueError):
        return None
    t = None
    for t in _in_years(range(ref_year - 1, ref_year + 6), month, day, h, mi, s, us, tz):  # 29 February's years too
        if t is None or t >= ref_us - 2 * 86400 * US:
            return t
    return t


_DAY_US = 86400 * US
#: how far a clock without a date may run ahead of its reference and still be of the reference's day (a host's clock a
#: little ahead of the collector's, a line read just after midnight)
CLOCK_AHEAD_US = 3600 * US


def clock_us(h: int, mi: int, s: int, us: int, ref_us: int | None, tz: tzinfo, *,
             ahead_us: int = CLOCK_AHEAD_US, after: bool = False) -> int | None:
    """µs for a clock without a date (``19:14:43``) read against ``ref_us`` (a file's modification time, a record's
    arrival, the next line's time): the latest such instant at most ``ahead_us`` after the reference, so a log's
    lines from before midnight take the day before a reference after it; with ``after``, the earliest at or after
    the reference (the line before it in its log, less a tolerance). ``None`` without a reference, or for one outside
    the calendar."""
    if ref_us is None:
        return None
    try:
        day = from_us(ref_us).astimezone(tz).date()
        t = to_us(datetime(day.year, day.month, day.day, h, mi, tzinfo=tz)) + s * US + us  # 60: a leap second
    except (OverflowError, ValueError):
        return None
    if after:
        return t + _DAY_US if t < ref_us else t - _DAY_US if t - _DAY_US >= ref_us else t
    if t + _DAY_US <= ref_us + ahead_us:  # just after midnight, read just before it
        return t + _DAY_US
    return t - _DAY_US if t > ref_us + ahead_us else t


@lru_cache(maxsize=1024)
def _year_of_day(day: int) -> int:
    """The UTC year of day ``day`` since the epoch (the reference times of a stream fall on few days)."""
    return from_us(day * _DAY_US).year


# --- layers, outermost first -------------------------------------------------
# What a parallel shell or a launcher puts before each line of its output (formats.md §1.8: "pdsh/`mpirun
# --tag-output` style `host: `"): pdsh and clush "node07: ", Slurm's ``srun --label`` "8: " (the task number,
# padded), torchrun's ``--tee`` "[default0]:" (role and local rank), Open MPI's ``--tag-output``
# "[1,3]<stdout>:"; two of them may stand together ("0: [default0]:"). A bare "word: " is also how payloads begin
# ("NVRM: ", "nvidia-nvswitch1: ", "RuntimeError: ", "ERROR: [stamp]", "nv-fabricmanager: [stamp]"), so a host or
# task label counts only before a layer's stamp, another label, NCCL's "host:pid:tid [dev] " or the kernel's
# "NVRM: "/"nvidia-nvswitchN: " (the lookahead), and a host label is a name with a digit (fleets number their
# nodes: node07, gpu-a100-07, worker-0); a word without one is a level or a program's tag. The role and the
# digits of a bracket label are separate runs, so a line of "[a000…" is read in linear time.
#: Python logging's level names, as vLLM's logger prints them first (``_VLLM``)
_PY_LEVEL = r"(?:DEBUG|INFO|WARNING|ERROR|CRITICAL)"
_BRACKET_LABEL = r"\[(?!rank\d)[A-Za-z_][A-Za-z_-]*\d+\]: ?|\[\d+,\d+\]<std(?:out|err)>: ?"
_LABEL_NEXT = (r"(?=\[\s*\d+\.\d+\] |\[(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) |\[[A-Z][a-z]{2} \d|\[\d{4}-\d\d-\d\d[T ]"
               r"|\[rank\d+\]:|\[[IWEF]\d{3,4} |\[[IWEF] |" + _BRACKET_LABEL + r"|\d{4}-\d\d-\d\d[T ]"
               r"|\d{4}/\d\d/\d\d |\d\d/\d\d/\d{4} \d\d:\d\d:\d\d - |<\d{1,3}>|[A-Z][a-z]{2} {1,2}\d{1,2} \d\d:"
               r"|[IWEF]\d{4} \d\d:| ?\d\d-\d\d-\d{4} \d\d:\d\d:\d\d:\d{1,3} \[pid="
               r"|[A-Za-z0-9][\w.-]*:\d+:\d+ \[\d+\] |NVRM: |nvidia-nvswitch\d+: "
               r"|(?:kern|user|daemon|syslog):\s+\w+: \[\d{4}-|" + _PY_LEVEL + r" \d\d-\d\d \d\d:)")
# after a host label only: a Python exception or its traceback, as pdsh prints every rank's ("node07: RuntimeError:
# NCCL error in: …": NVIDIA/nccl#520, DeepSpeed's multi-node runner; the line took its file's name, a real-logs pass)
_EXCEPTION_NEXT = r"(?=(?:[a-z_]\w*\.)*[A-Z]\w*(?:Error|Exception): |Traceback \(most recent call last\):)"
# and not a program's own word with a number before its exception ("rank0: torch.distributed.DistBackendError",
# "cuda0: RuntimeError", "E1: Traceback"): hosts named rank0 and cuda0 split a host's lines (a break-it pass)
_NOT_HOST_BEFORE_EXCEPTION = (r"(?!(?i:rank|local_rank|gpu|cuda|cpu|dev|device|worker_id|step|epoch|iter|layer|error"
                              r"|warning|warn|err|info|debug|[ewid])\d+: " + _EXCEPTION_NEXT + ")")
# PyTorch >= 2.2 before each line a rank's Python exception prints: "[rank7]: torch.distributed.DistBackendError: …"
# (NVIDIA/nccl#1410): a blank after the colon, where c10's log prefix has its "[E…" stamp ("[rank7]:[E…")
_RANK_LABEL = r"\[rank(?P<rank>\d{1,7})\]: "
# torchrun's ``--tee`` label with ``--role rank`` (torchtitan's run_train.sh: ``--role rank --tee 3``), "[rank0]:" with
# no blank, before c10's own rank prefix: "[rank0]:[rank0]:[E128 13:23:00.788972321 ProcessGroupNCCL.cpp:1897] …"
# (pytorch/torchtitan#810: c10's stamp behind it was not read, the line took its file's time; a real-logs pass). Its
# number is the local rank of the label's node; c10's own after it is the rank the line is of
_TEE_RANK_LABEL = r"\[rank\d{1,7}\]:(?=\[rank\d{1,7}\]:)"
# Ray before each line of a worker's output: "(RayWorkerWrapper pid=1019) ", "(raylet, ip=10.0.0.2) " on another
# node, older Ray's "(pid=1019) " (formats.md §1.8). The driver prints its own node's workers without an address and
# another node's with it: that address is the host the line comes from (vllm-project/vllm#13535: a worker's watchdog
# timeout on 10.175.94.190 in the head node's log). vLLM's own worker processes print the same form with their rank
# in vLLM's world, which is their torch.distributed rank: "(VllmWorker rank=5 pid=948) " (vllm-project/vllm#14452).
# A label with a pid or an address is one whatever follows it (a worker's traceback line, "torch.distributed.…");
# a bare "(name) " only before a stamp or another prefix (the lookahead): a remote worker's NCCL error after
# "(RayWorkerVllm pid=…, ip=10.0.0.2) " was the driver node's (a break-it pass). An actor's name may hold a slash, as
# a named actor's index does: "(model_worker/12 pid=43581, ip=10.208.16.54) " (areal-project/AReaL#3: the label was
# not read, and the line took its file's name and time)
_RAY_LABEL = (r"\((?:[A-Za-z_][\w./-]*(?: rank=(?P<ray_rank>\d{1,7}))?(?: pid=(?P<ray_pid>\d+))?|pid=(?P<ray_pid0>\d+))"
              r"(?:, ip=(?P<ray_ip>[0-9A-Fa-f.:]+))?\) ")
# ``kubectl logs --prefix`` before each line: "[pod/<pod>/<container>] " (with ``--timestamps`` an RFC 3339 stamp
# follows). The pod is no host of a kernel line a node agent's pod relays, so it names none; NCCL's own prefix does
# (the stamp and the line were lost behind it: a break-it pass)
_KUBECTL_LABEL = r"\[pod/[a-z0-9][a-z0-9.-]{0,252}/[a-z0-9][a-z0-9-]{0,62}\] "
# a clock without a date before another prefix, as a terminal multiplexer or a log viewer adds:
# "18:11:06.680 [rank4]:[E205 18:11:06.375750231 ProcessGroupNCCL.cpp:1870] …" (modelscope/ms-swift#7992: c10's stamp
# behind it was not read, and the line took its file's time). It names no day: a stamp behind it gives the time; a
# line with none ("19:14:43  NVRM: Xid (PCI:0000:1a:00): 13, …", a paste with its hosts cut out,
# flashinfer-ai/flashinfer#3869: every Xid at its file's time, their order lost) is dated by its reference
# (``clock_us``)
_CLOCK_LABEL = (r"(?P<clock_h>[01]\d|2[0-3]):(?P<clock_mi>[0-5]\d):(?P<clock_s>[0-5]\d|60)"
                r"(?:[.,](?P<clock_frac>\d{1,9}))?[ \t]{1,2}")
# a runner's label of a process's stream: "<benchmark>.<node> [stderr] " (mila-iqia/milabench#269: "dinov2-giant-nodes.
# cn-d004 [stderr] [rank14]:[E909 09:55:29.307629539 …": c10's stamp behind it was not read); it names no host
_STD_LABEL = r"[\w.-]{1,253} \[std(?:out|err)\] "
# a viewer's line number in brackets before a stamp: "[80746] [rank0]:[E321 02:07:08.408271257 …" (each line the
# next number: hiyouga/LlamaFactory#7396, #8261; c10's stamp behind it was not read, every line took its file's time)
# Open MPI's ``--tag-output`` "[jobid,rank]<stderr>:" names the process's MPI rank, which Horovod's and a
# torch.distributed job's world rank is under mpirun (horovod/horovod#3412: the rank was lost, a real-logs pass):
# ``Prefix.launcher_rank``
_MPI_LABEL = r"\[\d+,(?P<mpi_rank>\d{1,7})\]<std(?:out|err)>: ?"
# torchrun's ``--tee`` label alone, its local rank named (``_BRACKET_LABEL`` is also a lookahead, where no group may
# be named twice): "[default3]:" (BLOOM-176B's logbook)
_TEE_LABEL = r"\[(?!rank\d)[A-Za-z_][A-Za-z_-]*(?P<tee_local>\d{1,7})\]: ?"
_LABEL = re.compile(
    r"^(?:" + _MPI_LABEL + r"|" + _TEE_LABEL + r"|" + _BRACKET_LABEL + r"|" + _TEE_RANK_LABEL + r"|" + _RANK_LABEL
    + r"|" + _KUBECTL_LABEL
    + r"|" + _RAY_LABEL
    + r"(?(ray_pid)|(?(ray_pid0)|(?(ray_ip)|" + _LABEL_NEXT + r")))"
    + r"| *\d{1,7}: " + _LABEL_NEXT + r"|\[\d{1,7}\] " + _LABEL_NEXT + r"|" + _STD_LABEL + _LABEL_NEXT
    + r"|" + _NOT_HOST_BEFORE_EXCEPTION + r"(?P<host>(?=[A-Za-z_.-]*\d)[A-Za-z][\w.-]{0,252}): (?:" + _LABEL_NEXT
    + "|" + _EXCEPTION_NEXT + ")"
    + r"|" + _CLOCK_LABEL + _LABEL_NEXT + ")")
#: a terminal's control sequences (ECMA-48), as `kubectl logs`, a colouring journal viewer or a captured terminal
#: leave around a line's stamp and host: CSI (``ESC [ … m``, colours), OSC (``ESC ] 0;title BEL``, a window title),
#: nF (``ESC ( B``, a character set: ``tput sgr0``) and the two-byte Fe/Fp/Fs ones
#: (an OSC never runs past a line: ``decode.strip_terminal_codes`` reads the same forms in a segment's bytes)
TERMINAL_CODES = r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b\n]*(?:\x07|\x1b\\)?|[ -/]+[0-~]|[0-~])"
_ANSI = re.compile(TERMINAL_CODES)
# "node01.log:[2025-09-17 15:16:23] …" — grep over several files prefixes the file name; ``grep -rn`` its path
# and the line number ("logs/node07/kern.log:5512:Dec  1 03:12:05 node07 kernel: …": the line's own host and time were
# lost behind it, every Xid on one host "xid-hits", a break-it pass), a rotated log its number (kern.log.1)
_GREP_FILE = re.compile(r"^(?P<file>/?(?:[\w.-]+/)*(?:[\w.-]+\.(?:log|txt|out|err|json)(?:\.\d{1,3})?(?:\.gz)?"
                        r"|(?P<named>(?:syslog|messages|dmesg|kern\.log)(?:[.-]\w{1,12}){0,2}(?:\.gz)?)))"
                        r"(?P<line_no>:\d{1,10})?:(?=\S|[^\S\n]+\|[^\S\n]*\d{4}-\d\d-\d\d)")
# (a log named by its kind alone, syslog, messages-20261129, kern.log.2.gz — zgrep over rotated logs — is a grep
# prefix only with a folder or grep -n's line number: "syslog:err   : …" is dmesg -x's facility and level; blanks
# after it only before a CloudWatch export's stamp, "node07.log:  | 2025-05-16T16:39:55Z | …": a break-it pass)
#: a syslog or ISO stamp right after a bare log name's colon: "messages:Jun 17 20:18:08 ip-172-31-27-211 kernel: …",
#: "messages-20190616:Jun 16 …" — grep over /var/log/messages* in its folder (aws/aws-parallelcluster#1150: the
#: line's own host and time were lost, and lines after a path-prefixed one took its host and time; a real-logs pass)
_STAMP_AFTER = re.compile(_MON + r" {1,2}\d{1,2} \d\d:\d\d:\d\d |\d{4}-\d\d-\d\d[T ]\d\d:")
# Talos and syslog relays: "192.0.2.119: kern: warning: [2026-04-22T21:25:20.458998481Z]: …" (formats.md §1.8)
_ADDR = re.compile(r"^(?P<addr>\d{1,3}(?:\.\d{1,3}){3}|[0-9a-fA-F:]*:[0-9a-fA-F:]+): ")
_TALOS = re.compile(r"^(?P<fac>kern|user|daemon|syslog):\s+(?P<lvl>\w+): \[(?P<iso>[^\]]+)\]: ")
# RFC 5424: "<34>1 2003-10-11T22:14:15.003Z host app procid msgid SD msg"
_RFC5424 = re.compile(
    r"^<\d{1,3}>\d{1,2} (?P<iso>\S+) (?P<host>\S+) (?P<app>\S+) (?P<procid>\S+) (?P<msgid>\S+) "
    r"(?:-|(?:\[(?:[^\]\"\\]|\\.|\"(?:[^\"\\]|\\.)*\")*\])+)(?: |$)(?:\ufeff|BOM)?")
# RFC 3164 / journalctl short: "Sep 19 16:18:04 node07 kernel: …", "11月 15 14:15:47 node01 nv-fabricmanager[4177]: …",
# and a shipper that drops the tag: "Jul 20 16:15:36 node01:  …".
#: where a syslog or journal header puts the host: a name, or an IPv6 address before the blank and the tag (its colons
#: ended the name at "2001", and four machines' lines were one host "2001": a break-it pass)
_HOST = (r"(?P<host>(?:[0-9A-Fa-f]{0,4}:){2,7}(?:[0-9A-Fa-f]{0,4}|\d{1,3}(?:\.\d{1,3}){3})(?:%[\w.-]+)?(?= )"
         r"|[^\s:\[]+)")  # IPv4-mapped (::ffff:10.0.0.1) and scoped (fe80::1%eth0) too (a break-it pass)
_RFC3164 = re.compile(
    r"^(?:<\d{1,3}>)?" + _MON + r" {1,2}(?P<day>\d{1,2}) (?P<h>\d{2}):(?P<mi>\d{2}):(?P<s>\d{2})(?:\.(?P<frac>\d+))?"
    r"(?:(?P<nohost>  )(?=\S)| "
    + _HOST + r"(?:(?:\[(?P<tag_pid>\d+)\])?:|(?: (?P<tag>[^\s:\[]+)(?:\[(?P<pid>\d+)\])?:)) ?)")
# OpenSM's own log file (/var/log/opensm.log), not its syslog copy: month, day, local time, then the microseconds as a
# number of their own, the thread in brackets and the message's level in hex (linux-rdma/opensm, opensm/osm_log.c,
# osm_log: fprintf "%s %02d %02d:%02d:%02d %06d [%04X] 0x%02x -> %s"): "Jun 17 17:21:28 933162 [3DA006C0] 0x02 ->
# drop_mgr_remove_port: Removed port …". No year and no host: the year is resolved as a syslog stamp's, the host is
# the file's or the record's (its lines took their file's time, the fabric's order of a sweep lost: a fabric pass)
_OPENSM = re.compile(r"^(?P<mon>[A-Z][a-z]{2}) (?P<day>[0-9]{2}) (?P<h>[0-9]{2}):(?P<mi>[0-9]{2}):(?P<s>[0-9]{2})"
                     r" (?P<frac>[0-9]{6}) \[[0-9A-F]{4,16}\] 0x[0-9a-f]{2} -> ")
#: rsyslog's severity words as SONiC's templates print them (``%syslogseverity-text:::uppercase%``)
_SONIC_SEVERITY = r"(?:EMERG|ALERT|CRIT|ERR|WARNING|NOTICE|INFO|DEBUG)"
# SONiC's syslog file (sonic-buildimage files/image_config/rsyslog/rsyslog.conf.j2, template SONiCFileFormat:
# "%timegenerated:::date-year% %timegenerated%.%timegenerated:::date-subseconds% {{ hostname }}
# %syslogseverity-text:::uppercase% %syslogtag%%msg…"): the year first, the time with µs, the host, a severity word,
# then the tag: "2024 Jun  5 02:21:24.818583 str2-7050cx3-acs-14 NOTICE swss#orchagent: :- updatePortOperStatus: …"
# (sonic-net/sonic-swss#3185); releases before the year was added print the rest alone: "May 23 09:17:30.561319
# sonic-mellanox WARNING kernel: [  618.609820] …" (sonic-net/SONiC#194). Neither's time nor host was read (the
# severity word stands where a syslog header's tag does): every switch's lines were their file's, at its time
_SONIC = re.compile(r"^(?:(?P<y>[0-9]{4}) )?(?P<mon>[A-Z][a-z]{2}) {1,2}(?P<day>[0-9]{1,2}) (?P<h>[0-9]{2})"
                    r":(?P<mi>[0-9]{2}):(?P<s>[0-9]{2})(?:\.(?P<frac>[0-9]{1,9}))? (?P<host>[^\s:\[]+) "
                    + _SONIC_SEVERITY + r" (?P<tag>[^\s:\[]+)(?:\[(?P<pid>[0-9]+)\])?: ?")
#: a host and a tag with ": " after a syslog stamp's two blanks (``_RFC3164``'s ``nohost``)
_HOST_TAG = re.compile(r"(?P<host>[^\s:\[]+) (?P<tag>[^\s:\[]+)(?:\[(?P<pid>\d+)\])?: ")
#: journalctl -o short-monotonic's host and the kernel's tag after the raw stamp (journalctl(1): "[ 3731.387524]
#: node2 kernel: …")
_MONO_HOST = re.compile(r"(?P<host>[A-Za-z0-9][\w.-]{0,252}) kernel: ")
#: UCX's "[host:pid:tid]" after its Unix-time stamp (ucs/debug/log.c), and the stamps it may be (2001 – 2100)
_UCX_HOST = re.compile(r"\[(?P<host>[A-Za-z0-9][\w.-]{0,252}):(?P<pid>\d{1,10}):\d{1,10}\] +")
_EPOCH_MIN_S, _EPOCH_MAX_S = 978_307_200, 4_102_444_800
#: a log level where a header's host would stand: Python logging's "%(asctime)s %(levelname)s %(name)s: …" ("2026-11-15
#: 14:15:51,456 ERROR trainer: RuntimeError: …") has the ISO header's shape, and every such line was of host "error",
#: over the file's, the record's key and NCCL's own host (a break-it pass). The level and logger stay in the message
_LEVEL_WORD = re.compile(r"(?i)(?:emerg|emergency|alert|crit|critical|err|error|warn|warning|notice|info|debug|trace"
                         r"|fatal|severe|verbose|panic)")
#: what stands alone before the colon of a stamped syslog line without a host (``journalctl --no-hostname -k``:
#: "Mar 21 21:42:01 kernel: NVRM: …") is the kernel's tag, not a host; so is a word with a pid ("nv-fabricmanager[88]:")
_KERNEL_TAGS = frozenset({"kernel", "kern"})
#: what the kernel's NVIDIA lines begin with ("NVRM: Xid …", "nvidia-nvswitch3: SXid …", "nvidia-modeset: ERROR: …"):
#: a syslog line pasted without its host and tag ("Sep 18 20:07:01 NVRM: Xid (PCI:0000:02:00): 109, …",
#: NVIDIA/open-gpu-kernel-modules#1146) puts it where the host goes. It is the message's first word, not a host:
#: every line was of host "nvrm" (a real-logs pass)
_KERNEL_MESSAGE = re.compile(r"(?i)(?:NVRM|nvidia(?:-(?:modeset|uvm|drm|peermem|nvlink|nvswitch\d*))?|nvswitch\d*)")
# ISO 8601 at the start (dmesg --time-format iso uses a comma; rsyslog's file format adds host and tag, a program's
# name beginning with a letter: "GPU 3: Tesla V100 …", nvidia-smi's row behind a bare stamp, names no host; Open MPI's
# ``mpirun --timestamp-output`` a colon, before its ``--tag-output`` label: "2019-06-02T16:13:44.884Z: [1,12]<stdout>:",
# NVIDIA/nccl#230); a log viewer's export may put a space before the offset ("2025-11-09 15:39:31.043 +08:00 [2025-…",
# NVIDIA/nccl#1905: the offset was dropped, the line 8 h late). A stamp to the minute (``date '+%F %R'`` before each
# line of a job's output, after a blank: " 2025-02-18 12:54 [rank13]:[E218 04:54:22…", NVIDIA/nccl#1610) is read with
# a precision of a minute: the whole prefix was skipped, and c10's rank and time behind it with it (a real-logs pass).
# A syslog priority may lead: rsyslog's forwarding template RSYSLOG_ForwardFormat, "<%PRI%>%TIMESTAMP:::date-rfc3339%
# %HOSTNAME% %syslogtag:1:32%%msg…" (rsyslog.com/doc/reference/templates/templates-examples.html), what omfwd or
# omkafka send with it: "<4>2026-12-05T10:00:00.123+05:45 node07 kernel: NVRM: Xid …" kept no stamp, no host and no
# tag, and the line took its record's time (a break-it pass). SONiC forwards its lines so with a severity word before
# the tag (sonic-buildimage's rsyslog.conf.j2, SONiCForwardFormat: "<%PRI%>%TIMESTAMP:::date-rfc3339% {{ hostname }}
# %syslogseverity-text:::uppercase% %syslogtag%…"): its host is read only after a stamp with a zone, as RFC 3339's
# always has; "2026-11-15 14:15:51,456 trainer INFO worker: …" is Python logging's, its logger's name no host
_ISO = re.compile(
    r"^(?:<\d{1,3}>)?(?P<lead>[ \t]{1,8})?(?P<y>\d{4})-(?P<mo>\d{2})-(?P<d>\d{2})[T ](?P<h>\d{2}):(?P<mi>\d{2})"
    r"(?::(?P<s>\d{2})(?:[.,](?P<frac>\d+))?|(?= ))"
    r"(?: ?(?P<tz>Z|[+-]\d{2}:?\d{2}))?(?P<colon>:)?\s+"
    r"(?:" + _HOST + r" (?:(?P<severity>" + _SONIC_SEVERITY + r") )?(?P<tag>[A-Za-z_][^\s:\[]*)"
    r"(?:\[(?P<pid>\d+)\])?: )?")
# Go log: "2025/11/25 13:58:49 …"
_GOLOG = re.compile(r"^(?P<y>\d{4})/(?P<mo>\d{2})/(?P<d>\d{2}) (?P<h>\d{2}):(?P<mi>\d{2}):(?P<s>\d{2})"
                    r"(?:\.(?P<frac>\d+))? ")
# Hugging Face's example scripts and trainers built on them (LlamaFactory, DeepSpeed examples): logging.basicConfig(
# format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", datefmt="%m/%d/%Y %H:%M:%S"): "02/11/2024 22:38:41 -
# INFO - llmtuner.data.template - …". Month first, as the datefmt says; only before " - <level> - ", which makes it
# that format (a line's stamps gave no date and a copied file's year was used: hiyouga/LlamaFactory#2470, a real-logs
# pass)
_HFLOG = re.compile(r"^(?P<mo>\d{2})/(?P<d>\d{2})/(?P<y>\d{4}) (?P<h>\d{2}):(?P<mi>\d{2}):(?P<s>\d{2})(?P<frac>)"
                    r" - (?=" + _PY_LEVEL + r" - )")
# cuFile's log (cufile.log of GPUDirect Storage): " 29-12-2025 13:30:14:51 [pid=111425 tid=112507] ERROR  0:522 …":
# day first, then milliseconds after a colon, unpadded ("51" is 51 ms), and the process; only before its "[pid=N
# tid=N] ", which makes it that format (its lines were timed by their file: NVIDIA/gds-nvidia-fs#19, a real-logs pass)
_CUFILE = re.compile(r"^ ?(?P<d>\d{2})-(?P<mo>\d{2})-(?P<y>\d{4}) (?P<h>\d{2}):(?P<mi>\d{2}):(?P<s>\d{2})"
                     r":(?P<frac>\d{1,3}) \[pid=(?P<pid>\d{1,10}) tid=\d{1,10}\] ")
# NCCL >= 2.26 WARN / logger: "[2025-09-17 15:16:23] …"
# also after a word inside the bracket: Taskcluster's "[task 2025-07-01T05:06:30.004+00:00] "
_BRACKET_ISO = re.compile(
    # (mozilla/translations#1167: its nvidia-smi failure was timed by its file); SGLang's parallel ranks after the
    # stamp, "[2025-11-04 18:02:56 TP1] ", "[… DP0 TP3] " (its logger: "[%(asctime)s{prefix}] "; a break-it pass)
    r"^\[(?:[A-Za-z][\w-]{0,15} )?(?P<y>\d{4})-(?P<mo>\d{2})-(?P<d>\d{2})[T ](?P<h>\d{2}):(?P<mi>\d{2}):(?P<s>\d{2})"
    r"(?:[.,](?P<frac>\d+))?(?P<tz>Z|[+-]\d{2}:?\d{2})?(?: [A-Z]{1,4}\d{1,5}){0,4}\]:? ")
# dmesg -T: "[Fri Aug 30 11:43:09 2024] ", one or two spaces before the day; Open MPI's ``mpirun --timestamp-output``
# the same ctime(3) stamp unbracketed before its ``--tag-output`` label: "Fri Aug 11 12:31:45 2023[1,0]<stdout>:"
# (NVIDIA/nccl#957: every line was timed by its file)
_CTIME = re.compile(
    r"^(?P<open>\[)?(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) (?P<mon>[A-Z][a-z]{2}) {1,2}(?P<day>\d{1,2})"
    r" (?P<h>\d{2}):(?P<mi>\d{2})"
    r":(?P<s>\d{2}) (?P<y>\d{4})(?(open)\] |(?=\[\d+,\d+\]<))")
# dmesg -T in another locale: util-linux formats the stamp with strftime(_("%a %b %e %H:%M:%S %Y")) after
# setlocale(LC_ALL, ""), so the day's and month's names are the locale's and its translation may put the day first
# (sys-utils/dmesg.c, record_ctime: "TRANSLATORS: … Please, set proper month/day order here"): "[Sa Dez  5 10:00:00
# 2026] ", "[sam. déc.  5 …]", "[土 12月  5 …]", "[Sa  5. Dez …]". Their time was not read, and the line took its
# Kafka record's or file's time (a break-it pass). A month :data:`MONTHS` does not know leaves the line untimed and
# said (``Prefix.unreadable``), unless a log level stands for the weekday (``parse_prefix``). glibc's ja_JP, ko_KR
# and zh_TW pad a month's number to two places with a blank (localedata ``abmon`` " 3月"): "[木  3月 16 14:01:28 2023] "
# was not read from January to September (a break-it pass)
_CTIME_LOCAL = re.compile(
    r"^\[(?P<wd>[^\W\d_]{1,9})\.?,? {1,2}" + _MON + r"\.? {1,2}(?P<day>\d{1,2})\.? (?P<h>\d{2}):(?P<mi>\d{2})"
    r":(?P<s>\d{2}) (?P<y>\d{4})\] ")
_CTIME_DAY_FIRST = re.compile(
    r"^\[(?P<wd>[^\W\d_]{1,9})\.?,? {1,2}(?P<day>\d{1,2})\.? " + _MON + r"\.? (?P<h>\d{2}):(?P<mi>\d{2}):(?P<s>\d{2})"
    r" (?P<y>\d{4})\] ")
# ... and the translations that put the year before the time (util-linux 2.38.1's po/cs.po "%a %e. %b %Y %H:%M:%S",
# po/de.po "%a, %e. %b %Y, %H:%M:%S"), as `LC_ALL=cs_CZ.UTF-8 dmesg -T` and de_DE print them: "[Po  7. pro 2026
# 05:52:27] ", "[Mo,  7. Dez 2026, 05:52:27] " (the time was not read: the line took its file's or record's time)
_CTIME_DAY_YEAR = re.compile(
    r"^\[(?P<wd>[^\W\d_]{1,9})\.?,? {1,2}(?P<day>\d{1,2})\.? " + _MON + r"\.? (?P<y>\d{4}),? (?P<h>\d{2}):(?P<mi>\d{2})"
    r":(?P<s>\d{2})\] ")
# Fabric Manager log file: "[May 16 2025 15:10:21] "
_FMTIME = re.compile(r"^\[(?P<mon>[A-Z][a-z]{2}) (?P<day>\d{1,2}) (?P<y>\d{4}) "
                     r"(?P<h>\d{2}):(?P<mi>\d{2}):(?P<s>\d{2})\] ")
# raw dmesg "[  123.456789] " (seconds since boot) and dmesg -H "[  +0.000844] " (relative)
_MONO = re.compile(r"^\[\s*(?P<mono>\d+\.\d+)\] ")
_DELTA = re.compile(r"^\[\s*\+\s*\d+\.\d+\] ")
# c10: "[rank1]:[E626 06:24:44.903881913 ProcessGroupNCCL.cpp:616] " / old "[E ProcessGroupNCCL.cpp:737] "
# c10's "[rank8]:[E1201 03:20:02.120267 ProcessGroupNCCL.cpp:607] "; glog's thread id and a path inside the brackets
# too ("[E1201 03:20:02.120267 41200 torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:607]": the time was not read, a
# fresh user's trial)
_C10 = re.compile(
    r"^(?:\[rank(?P<rank>\d+)\]:)?\[(?P<lvl>[IWEF])(?:(?P<mmdd>\d{3,4}) (?P<h>\d{2}):(?P<mi>\d{2}):(?P<s>\d{2})"
    r"\.(?P<frac>\d+) )?\s*(?:\d+\s+)?[\w./-]+:\d+\] ")
# glog: "I1025 02:19:08.002792       1 health.go:151] "; PyTorch's Python logging prints it with a path and, in a
# distributed job, c10's rank prefix: "[rank0]:E0515 22:06:12.551000 34254 site-packages/torch/_subclasses/
# fake_tensor.py:2759] " (the rank and the time were lost: a fresh user's trial). Abseil's logging, which XLA and JAX
# use, prints the same prefix with a zero date and the seconds since the epoch before its time zone is set up
# (absl/log/internal/log_format.cc): "E0000 00:00:1743713172.513857  698835 pjrt_stream_executor_client.cc:3072] "
# (EnzymeAD/Enzyme-JAX#623: the line took its file's time)
_GLOG = re.compile(r"^(?:\[rank(?P<rank>\d+)\]:)?(?P<lvl>[IWEF])(?:0000 00:00:(?P<epoch>\d{9,10})\.(?P<efrac>\d{1,9})"
                   r"|(?P<mmdd>\d{4}) (?P<h>\d{2}):(?P<mi>\d{2}):(?P<s>\d{2})\.(?P<frac>\d+))\s+\d+ [\w./-]+:\d+\] ")
# vLLM's logger: level, month-day and time without a year, then the file and line (vllm/logger.py: "%(levelname)s
# %(asctime)s %(filename)s:%(lineno)d] %(message)s", datefmt "%m-%d %H:%M:%S"; later versions bracket the file):
# "INFO 06-25 15:26:04 api_server.py:177] " (vllm-project/vllm#5828), "ERROR 11-04 18:02:56
# [v1/executor/multiproc_executor.py:597] " (vllm-project/vllm#21661); often after a Ray or vLLM worker label
_VLLM = re.compile(r"^(?P<lvl>" + _PY_LEVEL + r") (?P<mmdd>\d\d-\d\d) (?P<h>\d{2}):(?P<mi>\d{2})"
                   r":(?P<s>\d{2})(?:\.(?P<frac>\d+))? \[?[\w./-]+:\d+\] ")
# dmesg -x (--decode): facility and level before the stamp, "kern  :warn  : [Sun Nov 29 03:10:00 2026] …",
# "syslog:err   : …" (formats.md §1.3: gpud's logs print them; dmesg(1) pads each to six characters)
_DMESG_X = re.compile(r"^(?:kern|user|mail|daemon|auth|syslog|lpr|news|uucp|cron|authpriv|ftp|local[0-7]) *:"
                      r"(?:emerg|alert|crit|err|warn|notice|info|debug) *: ")
# journalctl -o short-full: weekday, date, time and zone name, "Sun 2026-11-29 03:10:00 UTC a1 kernel: …"
# (journalctl(1), https://www.freedesktop.org/software/systemd/man/latest/journalctl.html#short-full)
_JFULL = re.compile(
    r"^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) (?P<y>\d{4})-(?P<mo>\d{2})-(?P<d>\d{2}) (?P<h>\d{2}):(?P<mi>\d{2}):(?P<s>\d{2})"
    r"(?:\.(?P<frac>\d+))? (?P<zone>[A-Za-z][A-Za-z0-9_+-]{0,31}|[+-]\d{2}(?::?\d{2})?) " + _HOST + r" "
    r"(?P<tag>[^\s:\[]+)(?:\[(?P<pid>\d+)\])?: ")
# journalctl -o short-unix: seconds since the epoch, "1795921800.000000 a1 kernel: …" (journalctl(1), short-unix)
# (six digits after the point, a tag that begins with a letter: "1795921800.5 step 100: …" is no journal line)
_UNIX = re.compile(r"^(?P<epoch>\d{9,11})\.(?P<frac>\d{6}) " + _HOST + r" (?P<tag>[A-Za-z_][^\s:\[]*)"
                   r"(?:\[(?P<pid>\d+)\])?: ")
# a table export of CloudWatch Logs (its console's and Logs Insights' copy: "  | 2025-05-16T16:39:55.218-07:00 |
# node01:86:2554 [0] … NCCL WARN …", the stamp the log service gave the line between bars; aws/aws-ofi-nccl#889,
# #715: its lines were timed by their file, a real-logs pass)
_CWLOGS = re.compile(r"^[ \t]*\|[^\S\n]*(?P<iso>\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d{1,9})?(?:Z|[+-]\d\d:?\d\d)?)"
                     r"[^\S\n]*\|[^\S\n]*")
# libfabric's own log prefix, "libfabric:<pid>:<epoch seconds>::<provider>:<subsystem>:<function>():<line><<level>> "
# (ofiwg/libfabric, src/log.c: "%s:%d:%ld:%s:%s:%s:%s():%d<%s> "; aws/aws-ofi-nccl#346, a real-logs pass)
_LIBFABRIC = re.compile(r"^libfabric:(?P<pid>\d{1,10}):(?P<epoch>\d{9,11}):")
# Kubernetes CRI container log, after its RFC 3339 stamp: the stream and the partial/full tag,
# "2026-11-29T03:20:00.040000000Z stderr F [rank2]:[E1129 …" (kubelet's log format, as containerd writes it)
_CRI = re.compile(r"^(?:stdout|stderr) [PF] ")
# a bare journal tag left over: "kernel: NVRM: …"
_TAG = re.compile(r"^(?:kernel|kern): ")
# NCCL: "<host>:<pid>:<tid> [<cudaDev>] " anywhere before "NCCL"; host is the short name (formats.md §11.1)
#: the largest CUDA device index NCCL's prefix may name (64 GPUs of 8 MIG instances and more, well past any host)
MAX_GPU_INDEX = 1023
_NCCL = re.compile(r"(?:^|[\s:])(?P<host>[A-Za-z0-9][\w.-]*):(?P<pid>\d+):(?P<tid>\d+) \[(?P<dev>\d+)\] ")
#: what follows NCCL's prefix in NCCL <= 2.2, whose lines said "INFO" / "WARN" without the word NCCL
#: ("gpu-bql-144-103:18553:18611 [0] include/socket.h:360 WARN Call to connect failed : …", NVIDIA/nccl-tests#15:
#: the line had no host; a real-logs pass)
_NCCL_UNTAGGED = re.compile(r"(?:[\w./-]{1,120}\.(?:h|cu|cc):\d+ )?(?:WARN|INFO) ")
# nccl-tests host tag or a shell prompt is not a host claim; only the forms above are.
# UCX (Open MPI's pml/ucx, UCC, any program on UCX): "[<host>:<pid>:<thread>:<tid>] " before its log and its signal
# handler's lines, the pid padded to five ("%-5d", ucs/debug/log.c: "[8d6bf97c3bf4:3039 :0:3095] Caught signal 7 …"):
# the host of "[compute001:31180:0:31180] ib_mlx5_log.c:143  Transport retry count exceeded on mlx5_0:1/RoCE" was the
# file's name (openucx/ucx#6000, a real-logs pass); by the pid's width "[Epoch:1:2:3]", "[step1:2:3:4]" and
# "[INFO:1:2:3]" are no UCX prefixes (break-it passes)
_CONTAINER_ID = re.compile(r"[0-9a-f]{12}")
_UCX = re.compile(r"\[(?P<host>(?=[\w.-]*[A-Za-z])[A-Za-z0-9][\w.-]*):(?P<pidf>(?P<pid>\d{1,10}) *)"
                  r":\d{1,6}:\d{1,10}\] ")

def _label(s: str) -> re.Match | None:
    """``_LABEL.match(s)``, asked only where it can match: kubectl's ``[pod/…]``, a bracket (not c10's
    ``[rank8]:[``) whose first ``]`` is followed by ``:`` or ``<`` (or a number's by a blank), a first word (after
    blanks) that is not all letters and ends with ``:`` and a blank, or a clock (``18:11:06.680 ``: a digit and a
    colon); most hit lines are none of them, "NVRM: " the most common: the regex alone cost ~1 µs a hit line."""
    if s[0] == "(" or s.startswith("[pod/"):  # Ray's label, kubectl logs --prefix
        return _LABEL.match(s)
    if s[0] == "[":
        j = s.find("]")
        if j < 0 or (s[j + 1:j + 2] not in (":", "<") and not (s[j + 1:j + 2] == " " and s[1:j].isdecimal())) or (
                s.startswith("[rank") and s[5:6].isdecimal() and s[j + 2:j + 3] != " "
                and not s.startswith("[rank", j + 2)):  # c10's "[rank8]:[E…", not torchrun's "[rank0]:" before it
            return None
    else:
        t = s.lstrip(" ") if s[0] == " " else s
        j = t.find(" ")
        if (j < 2 or t[j - 1] != ":" or t[:j - 1].isalpha()) \
                and not (t[2:3] == ":" and t[:2].isdecimal()) \
                and t[j + 1:j + 9] not in ("[stderr]", "[stdout]"):  # a word with a digit ends with the colon ("NVRM:")
            return None
    return _LABEL.match(s)


#: the layers by name (what :func:`can_begin` returns), in the order ``parse_prefix`` tries them (``label`` last,
#: on the line's beginning only)
LAYERS: dict[str, re.Pattern] = {
    "grep_file": _GREP_FILE, "addr": _ADDR, "talos": _TALOS, "dmesg_x": _DMESG_X, "rfc5424": _RFC5424,
    "jfull": _JFULL, "unix": _UNIX, "cwlogs": _CWLOGS, "libfabric": _LIBFABRIC, "cri": _CRI,
    "opensm": _OPENSM, "rfc3164": _RFC3164, "sonic": _SONIC, "bracket_iso": _BRACKET_ISO, "iso": _ISO,
    "golog": _GOLOG, "hflog": _HFLOG,
    "cufile": _CUFILE, "ctime": _CTIME, "ctime_local": _CTIME_LOCAL, "ctime_day_first": _CTIME_DAY_FIRST,
    "ctime_day_year": _CTIME_DAY_YEAR, "fmtime": _FMTIME, "c10": _C10, "glog": _GLOG, "vllm": _VLLM, "tag": _TAG,
    "mono": _MONO, "delta": _DELTA, "label": _LABEL}


#: the layers of a dated stamp (numbers only) and of a month's name, each tried in this order (``parse_prefix``)
_DATED_LAYERS = (("bracket_iso", _BRACKET_ISO), ("iso", _ISO), ("golog", _GOLOG), ("hflog", _HFLOG),
                 ("cufile", _CUFILE))
_MONTH_NAMED_LAYERS = (("ctime", _CTIME), ("ctime_local", _CTIME_LOCAL), ("ctime_day_first", _CTIME_DAY_FIRST),
                       ("ctime_day_year", _CTIME_DAY_YEAR), ("fmtime", _FMTIME))


@lru_cache(maxsize=4096)
def can_begin(c: str) -> frozenset[str]:
    """The names of the layers (:data:`LAYERS`) whose regex can match a text beginning with the character ``c``:
    ``parse_prefix`` tries a layer only when its text starts with such a character (the same result as trying every
    layer, without ~15 failing calls per hit line). ``label``: ``[``, ``(``, a space or a word character (``_ . -`` too:
    a runner's ``<name> [stderr]`` label, a property's draw ". [stdout] "); ``grep_file``: a word character, ``.``,
    ``-`` or ``/``; ``addr``: a digit, a hex letter or ``:``; ``talos``: ``k u d s``; ``rfc5424``: ``<``; ``rfc3164``:
    ``<`` or any ``str.isalnum`` (its month is ``[^\\W\\d_]``: ``²`` too, which is neither a letter nor a decimal
    digit); ``iso``: a digit, a blank, a tab or ``<``; ``golog``: a digit; ``cufile``: a digit or a blank; ``opensm``:
    an ASCII capital (its month); ``sonic``: that or an ASCII digit (its year); ``glog``: ``I W E F`` or ``[`` (c10's
    rank prefix); ``vllm``: ``D I W E C``; ``tag``: ``k``; ``dmesg_x``: the first letters of the syslog facilities;
    ``jfull``: ``M T W F S``; ``unix``: a digit; ``cwlogs``: ``|``, a blank or a tab; ``libfabric``: ``l``; ``cri``:
    ``s``; ``ctime``: ``[`` or ``M T W F S``; the other bracketed ones: ``[``.
    (``\\w`` and ``\\d`` are Unicode: ``str.isalnum`` and ``str.isdecimal``.)"""
    word, digit, bracket = c.isalnum() or c in "_.-", c.isdecimal(), c == "["
    return frozenset(name for name, ok in (
        ("label", bracket or word or c in " ("), ("grep_file", word or c == "/"),
        ("addr", digit or c in "abcdefABCDEF:"), ("talos", c in ("k", "u", "d", "s")),
        ("dmesg_x", c in "kumdaslncf"), ("jfull", c in "MTWFS"), ("unix", digit), ("cwlogs", c in "| \t"),
        ("libfabric", c == "l"), ("cri", c == "s"),
        ("rfc5424", c == "<"), ("rfc3164", c == "<" or c.isalnum()), ("bracket_iso", bracket),
        ("opensm", "A" <= c <= "Z"), ("sonic", "A" <= c <= "Z" or "0" <= c <= "9"),
        ("iso", digit or c in " \t<"),
        ("golog", digit), ("hflog", digit), ("cufile", digit or c == " "),
        ("ctime", bracket or c in "MTWFS"), ("ctime_local", bracket), ("ctime_day_first", bracket),
        ("ctime_day_year", bracket), ("fmtime", bracket), ("c10", bracket),
        ("glog", bracket or c in ("I", "W", "E", "F")), ("vllm", c in "DIWEC"), ("tag", c == "k"), ("mono", bracket),
        ("delta", bracket)) if ok)


_HOSTLIKE_IP = re.compile(r"^\d{1,3}(?:\.\d{1,3}){3}$")


def _is_ip(text: str) -> bool:
    """An IPv4 or IPv6 address as Ray prints one (no leading zeros, no unspecified address)."""
    try:
        return len(text) <= 45 and not ipaddress.ip_address(text).is_unspecified
    except ValueError:
        return False


def _tzof(tok: str | None, default: tzinfo) -> tzinfo | None:
    """A zone from ``Z`` / ``+hh:mm``; ``None`` for an offset no clock has (over 23:59)."""
    if not tok:
        return default
    if tok == "Z":
        return timezone.utc
    return _offset_zone(tok)


#: zone abbreviations that name one offset wherever they are printed (the tz database's, as ``strftime("%Z")`` and
#: journalctl's ``short-full`` print them): "03:12:05 EST" was read in the configured zone, UTC, five hours early (a
#: break-it pass). The ambiguous ones (``CST``: US Central or China, ``IST``: India, Ireland or Israel, ``BST``) are
#: not here: they are read in the configured zone
_ZONE_HOURS = {"EST": -5, "EDT": -4, "CDT": -5, "MST": -7, "MDT": -6, "PST": -8, "PDT": -7, "AKST": -9, "AKDT": -8,
               "HST": -10, "WET": 0, "WEST": 1, "CET": 1, "CEST": 2, "EET": 2, "EEST": 3, "MSK": 3, "JST": 9, "KST": 9,
               "HKT": 8, "SGT": 8, "AWST": 8, "ACST": 9.5, "ACDT": 10.5, "AEST": 10, "AEDT": 11, "NZST": 12,
               "NZDT": 13}


@lru_cache(maxsize=256)
def _zone_named(tok: str, default: tzinfo) -> tzinfo | None:
    """The zone of journalctl's ``short-full`` stamp: ``UTC``/``GMT``/``Z``, offsets (``+0900``, ``+09:00``, ``+09``),
    the zone set for stamps that print none (``default``, ``FIRSTFAULT_TIMEZONE``) when it is that zone's own name,
    and the abbreviations of one offset (:data:`_ZONE_HOURS`) as they say; any other name (``CST``, ``IST``: not
    unique) as the zone set."""
    if tok in ("UTC", "GMT", "Z", "UT"):
        return timezone.utc
    if tok[0] in "+-":
        return _offset_zone(tok if len(tok) > 3 else tok + "00")
    for m in (1, 7):  # the configured zone's own name, at the offset it names (EST and EDT in a fall-back hour)
        at = datetime(2026, m, 15)
        if default.tzname(at) == tok and (off := default.utcoffset(at)) is not None:
            return timezone(off, tok)  # Asia/Manila's PST is +08:00, not the Pacific's (a break-it pass: 16 h off)
    if (hours := _ZONE_HOURS.get(tok)) is not None:
        return timezone(timedelta(hours=hours), tok)
    return default


@lru_cache(maxsize=256)  # a fleet's lines carry a few offsets; each would otherwise build a zone per line
def _offset_zone(tok: str) -> tzinfo | None:
    sign = 1 if tok[0] == "+" else -1
    hh, mm = int(tok[1:3]), int(tok[-2:])
    if hh > 23 or mm > 59:
        return None
    return timezone(sign * timedelta(hours=hh, minutes=mm))


def _full(y: str, mo: int | str, d: str, h: str, mi: str, s: str, frac: str | None, tz: tzinfo | None
          ) -> tuple[int, int] | None:
    """(µs UTC, precision µs) of a dated stamp's fields as the line prints them (``mo`` a number or its
    digits), or None for a zone (``tz``) or a date no clock has."""
    if tz is None:
        return None
    t = _second_of(y, mo, d, h, mi, s, tz)
    if t is None:
        return None
    us, prec = _frac_us(frac)
    return t + us, prec


@lru_cache(maxsize=4096)  # the lines of one second share it: read once, not per line
def _second_of(y: str, mo: int | str, d: str, h: str, mi: str, s: str, tz: tzinfo) -> int | None:
    """:func:`_second_us` of a stamp's digits as printed."""
    return _second_us(int(y), int(mo), int(d), int(h), int(mi), int(s), tz)


@lru_cache(maxsize=4096)  # the lines of one second share it: a storm builds one datetime per second, not per line
def _second_us(y: int, mo: int, d: int, h: int, mi: int, s: int, tz: tzinfo) -> int | None:
    """µs since the epoch (UTC) of a wall-clock second in ``tz``; ``None`` for a date no calendar has."""
    if s == 60 and mi == 59:  # a leap second (RFC 3339 §5.7: "1990-12-31T23:59:60Z"): no datetime holds it; it is
        # read as the second after :59, the instant the kernel's clock steps back to (a break-it pass: the stamp did
        # not parse and the line lost its header's host as well as its time)
        before = _second_us(y, mo, d, h, mi, 59, tz)
        return None if before is None else before + US
    try:
        return to_us(datetime(y, mo, d, h, mi, s, tzinfo=tz))
    except ValueError:
        return None


def _parse_iso(text: str, tz: tzinfo) -> tuple[int, int] | None:
    """(µs UTC, precision µs) of an RFC 3339 / ISO 8601 stamp, or None. A stamp to the minute (``_ISO`` takes
    one before a blank) has a minute's precision, as at the start of a line: its missing seconds were ``int(None)``
    here, and the file of a Talos line "[2023-05-04T07:37 25.959281413Z]: …" was skipped whole (a TypeError; the
    catalog's property test, test_hyperscan_agrees_with_reference, met such a mangled line)."""
    m = _ISO.match(text.strip() + " ")
    if not m:
        return None
    r = _full(*m.group("y", "mo", "d", "h", "mi"), m["s"] or "00", m["frac"], _tzof(m["tz"], tz))
    return r if r is None or m["s"] else (r[0], 60 * US)


def parse_iso_us(text: str, tz: tzinfo = timezone.utc) -> int | None:
    """RFC 3339 / ISO 8601 (comma or dot, up to nanoseconds, ``Z`` or offset) to µs UTC."""
    r = _parse_iso(text, tz)
    return r[0] if r else None


def _iso_into(p: Prefix, text: str, tz: tzinfo) -> None:
    """Set ``p``'s time from an ISO stamp (Talos, RFC 5424 headers); unchanged when it does not parse."""
    r = _parse_iso(text, tz)
    if r:
        p.ts, p.precision_us = r
        # a dated stamp after a year-less one (Talos behind a syslog relay) gives the time: a dated line
        p.yearless = None


@lru_cache(maxsize=1024)
def _grep_host(path: str) -> str | None:
    """The host a grep prefix's file name names, as a file's name names its own (``decode.host_from_filename`` of
    the name alone: ``node07.log``, ``logs/node07-dmesg.txt`` -> node07), when that has a digit (as a host label's
    must): ``grep Xid node07.log node08.log`` put two hosts' Xid 79s on one host, the output file's, a "recurrence"
    (a break-it pass). Not a folder's name: ``/home/user1/dmesg.txt``, ``a100-80g/dmesg.txt``, ``job-4711/…`` name
    no host (a second break-it pass); ``kern.log:`` or ``output.txt:`` none either. A host the line names itself (its
    syslog header, a label, NCCL's prefix) wins."""
    from pathlib import PurePosixPath

    from ingest.decode import LOG_WORDS, host_from_filename

    host = host_from_filename(PurePosixPath(PurePosixPath(path).name))
    return host if any(c.isdigit() for c in host) and host.lower() not in LOG_WORDS else None


#: the names a machine has before it is given its own (the kernel's "(none)", a container's or an installer's
#: "localhost"): three machines' syslog lines, each "localhost", were one host whose incident folded node08's Xid 74
#: into node07's Xid 79 (a break-it pass). Such a name names no host: the file's, the Kafka key's or the envelope's does
PLACEHOLDER_HOSTS = frozenset({"localhost", "localhost.localdomain", "localhost4", "localhost4.localdomain4",
                               "localhost6", "localhost6.localdomain6", "ip6-localhost", "ip6-loopback", "(none)"})


@lru_cache(maxsize=1 << 14)
def placeholder_host(name: str) -> bool:
    """``name`` is one of :data:`PLACEHOLDER_HOSTS` (any case) or a loopback address (127.0.0.0/8, ::1, and
    IPv4-mapped ones); asked once per name (a fleet's hosts repeat in every record)."""
    if name.lower() in PLACEHOLDER_HOSTS:
        return True
    try:
        ip = ipaddress.ip_address(name)
    except ValueError:
        return False
    # an IPv4 address mapped into IPv6 (::ffff:127.0.0.1, rsyslog on a dual-stack socket) is the IPv4 one's
    return (ip.ipv4_mapped or ip).is_loopback if isinstance(ip, ipaddress.IPv6Address) else ip.is_loopback


def zones_apart(a: int, b: int, step_us: int = 3600 * US) -> bool:
    """``a`` and ``b`` (µs) are one ``step_us`` to 14 hours apart in whole steps, give or take 2 s: two clocks of one
    instant, one of them in another zone (the stamps may be taken a moment apart). Steps of an hour (the default:
    a wrapper's stamp beside a process's own) or of 15 minutes (every zone's offset is whole quarter hours, India's
    +05:30, Nepal's +05:45: ``ingest.assemble``'s logrus stamp under a syslog header)."""
    steps = round((a - b) / step_us)
    return 1 <= abs(steps) <= 14 * 3600 * US // step_us and abs(a - b - steps * step_us) <= 2 * US


def _host_or_addr(p: Prefix, name: str) -> None:
    """The name a syslog or journal header puts where the host stands. An address is the sender's (``source_addr``),
    and names the host as talosctl's address does (``addr_host``: a Kafka key or an envelope's host names it
    better): a central syslog server's file of many machines each named by its address was one host, the file's
    name (a break-it pass; it was taken for a relay's before). No address (``999.999.999.999``) names none, nor
    syslog's ``-`` (no value), nor a name every machine may have (:data:`PLACEHOLDER_HOSTS`, a loopback address);
    any other name is the host."""
    if name == "-" or placeholder_host(name):  # syslog's NILVALUE: the sender gave no name
        return
    if _HOSTLIKE_IP.match(name) or ":" in name:
        p.source_addr = name
        if _is_ip(name) and (p.host is None or p.addr_host):
            p.host, p.addr_host = name, True
    else:
        p.host, p.addr_host = name, False


def _stamp_into(p: Prefix, m: re.Match, ref_us: int | None, tz: tzinfo) -> bool:
    """Set ``p``'s time from a fabric log's stamp (:data:`_OPENSM`, :data:`_SONIC`): month by name, day, time,
    fraction (µs or finer), and a year when it prints one (else resolved as a syslog stamp's, ``yearless``), read in
    ``tz``. A date no calendar has ("Feb 30") leaves the line untimed and says so (``unreadable``). False when the
    month is no month's name (OpenSM's "???" for a broken clock): the text is no such stamp."""
    mo = _month(m["mon"])
    if mo is None:
        return False
    if m.re.groupindex.get("y") and m["y"]:
        r = _full(m["y"], mo, m["day"], m["h"], m["mi"], m["s"], m["frac"], tz)
    else:
        us, prec = _frac_us(m["frac"])
        stamp = (mo, int(m["day"]), int(m["h"]), int(m["mi"]), int(m["s"]), us)
        r = (t, prec) if (t := resolve_year(*stamp, ref_us, tz)) is not None else None
        if r:
            p.yearless = stamp
    if r:
        p.ts, p.precision_us = r
    else:
        p.unreadable = m.string[m.start():m.end("frac") if m["frac"] else m.end("s")]
    return True


def parse_prefix(line: str, *, ref_us: int | None = None, tz: tzinfo = timezone.utc) -> Prefix:
    """Peel the prefixes of ``line``; return time, host and NCCL/PyTorch ids.

    ``ref_us`` (µs UTC) resolves stamps without a year. Never raises: an
    unreadable prefix leaves the fields ``None`` and ``rest`` the line.

    A line indented before its stamp (a log pasted as a Markdown code block, a mail's quoted log:
    "     Mar 21 21:42:01 kernel: NVRM: …", ublue-os/bazzite#4449) is read from its stamp on when the blanks hide
    one; an indented line with no stamp after its blanks (``nvidia-smi -q``'s rows) keeps them.
    """
    if line[:1] in (" ", "\t"):
        p = _parse_prefix(line.lstrip(" \t"), ref_us, tz)
        if p.ts is not None or p.mono is not None:
            return p
    return _parse_prefix(line, ref_us, tz)


#: what no prefix begins with and a damaged line may: a byte-order mark, the replacement character of a byte that was
#: no UTF-8 (a line's first byte garbled: "\xff[Mon Nov 30 03:12:09 2026] NVRM: Xid …" took the time of the line
#: before it, hours off: a break-it pass), NUL and the other control characters but the tab and ESC
#: box-drawing verticals a terminal log viewer frames lines with (vllm-project/vllm#6976: "│ ERROR 09-27 06:46:46
#: engine.py:157] RuntimeError: CUDA error: …": the vLLM stamp behind it was not read, the line took its file's time)
_BOX_EDGES = "│┃║"
_LEADING_JUNK = "\ufeff\ufffd" + "".join(chr(c) for c in range(32) if c not in (9, 10, 27)) + "\x7f"


def _parse_prefix(line: str, ref_us: int | None, tz: tzinfo) -> Prefix:
    p = Prefix()
    # NUL bytes before a line (the zeroed blocks a crash leaves in a syslog file) and terminal colour codes are no
    # part of its prefixes: they hid the stamp and the host, and the line took its file's name and time (a break-it
    # pass)
    s = line.lstrip(_LEADING_JUNK)
    if "\x1b" in s:
        s = _ANSI.sub("", s).lstrip(_LEADING_JUNK)
    if s and s[0] in _BOX_EDGES:  # a terminal viewer's frame: "│ ERROR 09-27 06:46:46 engine.py:157] …"
        s = s.lstrip(_BOX_EDGES + " \t")
    label_at = s  # where a label may stand: the start, after a grep file name or a label
    grep_host = None  # the host a grep prefix's file name names: the line's when nothing else names one
    labels = 0
    clock = None  # a clock label's match: the line's time when nothing after it gives one
    zoneless = False  # the stamp that gave ``p.ts`` printed no zone (a wrapper's local time, maybe)
    ray_ip = None  # the host a Ray label named (NCCL's own host name wins over it)
    for _ in range(8):  # layers are few; the bound guards against a pathological line
        if not s:
            break
        can = can_begin(s[0])  # each layer is tried only when the text's first character can begin it
        m = _GREP_FILE.match(s) if "grep_file" in can else None
        if m and m["named"] and "/" not in m["file"] and not m["line_no"] and not _STAMP_AFTER.match(s, m.end()):
            m = None
        if m:
            s = label_at = s[m.end():]  # a label may follow: "node01.log:node07: [ 12.3] …"
            grep_host = _grep_host(m["file"])  # the line's own header, label or NCCL prefix names it better (below)
            continue
        m = _ADDR.match(s) if "addr" in can else None
        if m and p.ts is None:
            # talosctl's "-n <node>" prefix: the node the line comes from (formats.md §1.8: "source host"), its host
            # unless a header or label after it names one (a relay's syslog line), or the record's key or envelope
            # does (``addr_host``: ``ingest.assemble.assign_hosts``); vllm-project/vllm#40652 had two nodes' lines in
            # one file put on one host, their GPUs 0000:48:00.0 merged. "999.999.999.999:" or a MAC address is none
            p.source_addr = addr = m.group("addr")
            if _is_ip(addr):
                p.host, p.addr_host = addr, True
            s = label_at = s[m.end():]  # a host label may follow: "192.0.2.5: node07: kern: …"
            continue
        m = _TALOS.match(s) if "talos" in can else None
        if m:
            _iso_into(p, m.group("iso"), tz)
            s = s[m.end():]
            continue
        m = _DMESG_X.match(s) if "dmesg_x" in can else None
        if m is None and p.ts is not None and "cri" in can:
            m = _CRI.match(s)
            if m:  # the container's own line follows, with its launcher's label: "[rank1]: RuntimeError: …" (the
                # rank was lost behind the CRI header: a break-it pass)
                s = label_at = s[m.end():]
                continue
        if m:
            s = s[m.end():]
            continue
        if p.ts is None:
            # journalctl's short-full (a weekday: a letter) or short-unix (epoch seconds: a digit), host and tag
            m = (_JFULL.match(s) if "jfull" in can else None) or (_UNIX.match(s) if "unix" in can else None)
            if m:
                if m.re is _JFULL:
                    r = _full(*m.group("y", "mo", "d", "h", "mi", "s", "frac"), _zone_named(m["zone"], tz))
                else:
                    us, prec = _frac_us(m["frac"])
                    r = (t, prec) if plausible(t := int(m["epoch"]) * US + us) else None
                if r:
                    p.ts, p.precision_us = r
                _host_or_addr(p, m["host"])
                if m["pid"]:
                    p.pid = int(m["pid"])
                s = s[m.end():]
                continue
            m = _CWLOGS.match(s) if "cwlogs" in can else None
            if m:
                # the line as the service got it follows, with its own prefixes: read whole (its syslog header's host:
                # the export of a fleet's /var/log/messages mixes instances, whose lines went to one host — a break-it
                # pass); the service's stamp, with its zone, times it
                collected = _parse_iso(m.group("iso"), tz)
                inner = _parse_prefix(s[m.end():], collected[0] if collected else ref_us, tz)
                if collected:
                    inner.ts, inner.precision_us = collected
                    inner.yearless = inner.clock = inner.day_from = inner.zone_shift = None
                    inner.zoneless = False
                return inner
            m = _LIBFABRIC.match(s) if "libfabric" in can else None
            if m:
                if plausible(t := int(m["epoch"]) * US):
                    p.ts, p.precision_us = t, US
                p.pid = int(m["pid"])
                s = s[m.end():]
                break  # the rest is libfabric's provider, subsystem and function: the message
            m = _RFC5424.match(s) if "rfc5424" in can else None
            if m:
                _iso_into(p, m.group("iso"), tz)
                if m.group("host") != "-":
                    p.host = m.group("host")
                s = s[m.end():]
                continue
            # OpenSM's log file: asked only where its fixed-width stamp puts the thread's bracket (a syslog line pays a
            # slice)
            m = _OPENSM.match(s) if "opensm" in can and s[22:24] == " [" else None
            if m and _stamp_into(p, m, ref_us, tz):
                s = s[m.end():]
                continue
            m = _RFC3164.match(s) if "rfc3164" in can else None
            if m and (mo := _month(m.group("mon"))):
                us, prec = _frac_us(m.group("frac"))
                stamp = (mo, int(m["day"]), int(m["h"]), int(m["mi"]), int(m["s"]), us)
                t = resolve_year(*stamp, ref_us, tz)
                # a stamp no calendar has ("Feb 30", a bad clock) still heads a syslog line: its host and tag are read
                # and the line is untimed (its host was dropped with its time: two hosts' lines were one event of the
                # file's host, a break-it pass)
                if t is not None:
                    p.ts, p.precision_us, p.yearless = t, prec, stamp
                else:
                    p.unreadable = s[:m.start("host" if m["host"] else "nohost")].strip()
                if m["nohost"]:
                    # two blanks: a header whose host is empty (a paste with its host cut out: "Aug 19 11:36:35  NVRM:
                    # Xid …", amoghmunikote/cmpunlocker#31); the message begins after them, its first word no host
                    # ("  mlx5_core 0000:ab:00.0 mlx5_5: …" was host mlx5_core: a break-it pass) — unless a host and
                    # a tag with ": " follow ("  gpu-node-7 kernel: …": its host was lost, a second break-it pass)
                    s = s[m.end():]
                    ht = _HOST_TAG.match(s)
                    if ht and not _LEVEL_WORD.fullmatch(ht["host"]) and not _KERNEL_MESSAGE.fullmatch(ht["host"]):
                        _host_or_addr(p, ht["host"])
                        if ht["pid"]:
                            p.pid, p.pid_from_tag = int(ht["pid"]), True
                        s = s[ht.end():]
                    continue
                if _LEVEL_WORD.fullmatch(m["host"]) or (m["tag"] is None and not m["tag_pid"]
                                                        and _KERNEL_MESSAGE.fullmatch(m["host"])):
                    s = s[m.start("host"):]  # the message begins at the word: no host, no tag
                    continue
                if m["tag"] is None and (m["tag_pid"] or m["host"] in _KERNEL_TAGS):
                    if m["tag_pid"]:
                        p.pid, p.pid_from_tag = int(m["tag_pid"]), True
                else:
                    _host_or_addr(p, m.group("host"))
                if m.group("pid"):
                    p.pid, p.pid_from_tag = int(m.group("pid")), True
                s = s[m.end():]
                if p.pid_from_tag:
                    label_at = s  # a launcher's label may follow its program's tag: "torchrun[777]: [default3]:"
                continue
            # SONiC's header, a severity word before the tag: asked where a syslog header was not read and a blank
            # follows a month or a year ("NVRM: …", "GPU 0: …", a prefix's message, pays slices, not a failing regex)
            m = _SONIC.match(s) if "sonic" in can and (
                s[3:4] == " " and s[1:3].islower() or s[4:5] == " " and s[:4].isdecimal()) else None
            if m and _stamp_into(p, m, ref_us, tz):
                _host_or_addr(p, m["host"])
                if m["pid"]:
                    p.pid = int(m["pid"])
                s = s[m.end():]
                continue
            for name, rx in _DATED_LAYERS:
                m = rx.match(s) if name in can else None
                if m:
                    frac = m["frac"].zfill(3) if name == "cufile" else m["frac"]  # cuFile's unpadded milliseconds
                    if name == "cufile":
                        p.pid = int(m["pid"])
                    r = _full(*m.group("y", "mo", "d", "h", "mi"), m["s"] or "00", frac,
                              _tzof(m["tz"] if "tz" in rx.groupindex else None, tz))
                    if r:
                        p.ts, p.precision_us = r if m["s"] else (r[0], 60 * US)
                        zoneless = "tz" not in rx.groupindex or not m["tz"]
                    else:
                        end = (m.end("tz") if "tz" in rx.groupindex and m["tz"]
                               else m.end("frac") if m["frac"] else m.end("s") if m["s"] else m.end("mi"))
                        p.unreadable = s[:end].lstrip("[ \t")
                    # the header's host even when its stamp is none a calendar has (a break-it pass, as RFC 3164)
                    if "host" in rx.groupindex and m["host"] and m["tag"]:
                        if _LEVEL_WORD.fullmatch(m["host"]) or (m["severity"] and not m["tz"]):
                            s = s[m.start("host"):]  # a level and a logger's name, no host: the message keeps them
                            break
                        _host_or_addr(p, m["host"])
                        if "pid" in rx.groupindex and m["pid"]:
                            # rsyslog's RFC 3339 form of a journal line, "… node21 python[4181]: ": the tag's pid was
                            # read in the RFC 3164 form only (a defect pass: a SIGABRT of another process followed a
                            # rank's timeout as its own)
                            p.pid, p.pid_from_tag = int(m["pid"]), True
                    s = s[m.end():]
                    if ("colon" in rx.groupindex and m["colon"]) or p.pid_from_tag:
                        label_at = s  # a launcher's stamp, or its program's tag: its label may follow
                    break
            else:
                m = None
            if m:
                continue
            unnamed = None  # the first stamp of a month-named layer's shape whose month is no month's name
            for name, rx in _MONTH_NAMED_LAYERS:
                m = rx.match(s) if name in can else None
                if m and (mo := _month(m["mon"])):
                    r = _full(m["y"], mo, m["day"], m["h"], m["mi"], m["s"], None, tz)
                    if r:
                        p.ts, p.precision_us = r
                    else:  # "[Sun Feb 29 10:00:00 2026]", an hour 25: peeled, and said (it was peeled unsaid, as
                        # if the line had printed no stamp: a break-it pass)
                        p.unreadable = s[:max(m.end("y"), m.end("s"))].lstrip("[ \t")  # its year, or time, last
                    break
                if m and not ("wd" in m.re.groupindex and _LEVEL_WORD.fullmatch(m["wd"])):
                    unnamed = unnamed or m
            else:
                # none read a month: a stamp of dmesg -T's shape whose month no locale here names ("[Mon Xyz 12 …]",
                # "[火 13月 16 …]", a garbled byte) is peeled and said as a date no calendar has is; it was left on
                # the line, unsaid, and the line took the time of the line before it (a helper's pass). A log level
                # where the weekday stands ("[INFO main  5 10:00:00 2026]") is a logger's bracket: the line's own
                m = unnamed
                if m:
                    p.unreadable = s[:max(m.end("y"), m.end("s"))].lstrip("[ \t")
            if m:
                s = s[m.end():]
                if m.re is _CTIME and not m["open"]:
                    label_at = s  # Open MPI's label follows its stamp
                continue
        # c10's and glog's prefixes after a collector's stamp too (a CRI container log, syslog): the rank, and the
        # line's own time when nothing before it gave one
        m = (_C10.match(s) if "c10" in can else None) or (_GLOG.match(s) if "glog" in can and p.ts is None else None) \
            or (_VLLM.match(s) if "vllm" in can and p.ts is None else None)
        if m:
            if "rank" in m.re.groupindex and m["rank"]:
                p.rank = int(m["rank"])
            if m.re is _GLOG and m["epoch"] and p.ts is None:
                us, prec = _frac_us(m["efrac"])
                if plausible(t := int(m["epoch"]) * US + us):
                    p.ts, p.precision_us = t, prec
            elif m["mmdd"] and (p.ts is None or zoneless):
                mmdd = m["mmdd"]
                mo, d = int(mmdd[:-2].rstrip("-")), int(mmdd[-2:])
                us, prec = _frac_us(m["frac"])
                stamp = (mo, d, int(m["h"]), int(m["mi"]), int(m["s"]), us)
                t = resolve_year(*stamp, ref_us if p.ts is None else p.ts, tz)
                if t is not None and (p.ts is None or zones_apart(t, p.ts)):
                    # a wrapper's stamp without a zone whole hours from the process's own: one of them is another
                    # zone's, and the process's is the one its lines without the wrapper print
                    # ("2025-06-24 17:29:06  [rank0]:[E624 09:29:06.969…]": one rank's timeout was two incidents
                    # 8 hours apart, limuloo/PyDIff#31, a real-logs pass); its year is the wrapper's, printed
                    if p.ts is not None:
                        p.zone_shift = t - p.ts
                    p.ts, p.precision_us, p.yearless = t, prec, (stamp if p.ts is None else None)
            s = s[m.end():]
            continue
        m = _TAG.match(s) if "tag" in can else None
        if m:
            s = s[m.end():]
            continue
        m = _MONO.match(s) if "mono" in can else None
        if m and p.mono is None:
            mono = float(m.group("mono"))
            s = s[m.end():]
            if _EPOCH_MIN_S <= mono < _EPOCH_MAX_S and p.ts is None and (u := _UCX_HOST.match(s)):
                # UCX's own stamp, Unix seconds (ucs/debug/log.c: "[1739305867.601977] [dgx14:1131436:0]"), not an
                # uptime: its lines were timed by their file, and the line after them took that time as its own
                # (rapidsai/rapidsmpf#69, a real-logs pass)
                p.ts, p.precision_us = int(round(mono * US)), 1
                _host_or_addr(p, u["host"])
                p.pid = int(u["pid"])
                s = s[u.end():]
                continue
            # seconds since boot: a machine up for more than ~300 years is a garbled stamp, not an uptime
            p.mono = mono if mono < 1e10 else None
            if p.host is None and (h := _MONO_HOST.match(s)):
                # journalctl -o short-monotonic: "[ 3731.387524] node2 kernel: …", the host after the stamp (a merged
                # journal of two hosts put node2's Xid 79 on the file's name: a real-logs pass)
                _host_or_addr(p, h["host"])
                s = s[h.end():]
            continue
        m = _DELTA.match(s) if "delta" in can else None
        if m:
            s = s[m.end():]
            continue
        # a parallel shell's or a launcher's label before the line's own prefixes: asked where the line (or what
        # a grep file name or a label left) begins with no other layer (none can begin a label's text), so a line
        # that begins with a stamp pays nothing
        m = _label(s) if s is label_at and labels < 2 and "label" in can else None
        if m is None:
            break
        if p.pid_from_tag and not m["host"] and not m["clock_h"] and not m["rank"]:
            # a launcher's label after a syslog tag: the tag's pid is the launcher's (torchrun's, mpirun's, srun's),
            # relaying every worker's output, not the line's process (``torchrun[777]: [default3]: *** SIGABRT …``:
            # two workers' lines shared it, a defect pass); the line's own pid is its payload's, if any (NCCL's
            # "host:pid:tid", glog's "received by PID", Ray's "(… pid=1019)"). Not after c10's own "[rank3]: ", the
            # process's own prefix
            p.pid, p.pid_from_tag = None, False
        if m["host"]:
            p.host, p.addr_host = m["host"], False
        elif m["clock_h"]:
            clock = m
        elif m["rank"]:
            p.rank = int(m["rank"])
        elif m["mpi_rank"]:
            p.launcher_rank = int(m["mpi_rank"])
        elif m["tee_local"]:
            p.local_rank = int(m["tee_local"])
        elif m["ray_ip"] or m["ray_pid"] or m["ray_pid0"] or m["ray_rank"]:
            if m["ray_ip"] and _is_ip(m["ray_ip"]):  # "ip=cafe", "ip=::" or 4,000 digits name no node
                p.host = p.via = ray_ip = m["ray_ip"]
            if (ray := m["ray_pid"] or m["ray_pid0"]) and p.pid is None:  # older Ray: "(pid=1019) "
                p.pid = int(ray)
            if m["ray_rank"] and p.rank is None:
                p.rank = int(m["ray_rank"])
        s = label_at = s[m.end():]  # another may follow: srun's "0: " before torchrun's "[default0]:"
        labels += 1
    m = None
    if "NCCL" in s or "NCCL" in line:
        m = _NCCL.search(s)
    elif "WARN " in s or "INFO " in s:  # NCCL <= 2.2: its prefix before "INFO" / "WARN" alone
        m = _NCCL.search(s)
        if m and not _NCCL_UNTAGGED.match(s, m.end()):
            m = None
    if m:
        # NCCL's own host name wins over Ray's address of the same node, and over a parallel shell's address
        # label ("104.171.201.171: lambda-scalar02:95750:95750 [0] NCCL INFO …": DeepSpeed's pdsh over addresses,
        # huggingface/accelerate#1317, a real-logs pass): it is the name the host's other logs use
        if not placeholder_host(m["host"]) and (
                p.host is None or p.host == ray_ip or (p.addr_host and p.host == p.source_addr)):
            p.host, p.addr_host = m["host"], False
        p.pid = p.pid or int(m.group("pid"))
        # a CUDA device index no host has (a thread's garbage, "[32707]", NVIDIA/nccl#1485) names no GPU: it was
        # a suspect "gpu index 32707 on node2" (a real-logs pass)
        dev = int(m.group("dev")) if len(m.group("dev")) <= 4 else MAX_GPU_INDEX + 1
        p.gpu_index = dev if dev <= MAX_GPU_INDEX else None
        if p.gpu_index is None:
            p.gpu_index_text = m.group("dev")[:64]  # kept in details, as a number too big for its column
    if (s[:1] == "[" and (p.host is None or p.pid is None) and (m := _UCX.match(s)) is not None
            and len(m["pidf"]) >= 5):
        # a Docker container's short id ("[8d6bf97c3bf4:3039 :0:3095] Caught signal 7") is the container's name for
        # itself, not its machine's: the line stays its file's or stream's host, as before UCX's prefix was read (the
        # benchmark's fleet mix: a node's SIGBUS lines became incidents of phantom hosts)
        container = _CONTAINER_ID.fullmatch(m["host"]) is not None
        if p.host is None and not container and not placeholder_host(m["host"]):
            p.host = m["host"]
        if p.host == m["host"] or (container and p.host is None):  # not another host's process's pid
            p.pid = p.pid or int(m["pid"])
    if p.host is None and grep_host:
        p.host = grep_host
    p.zoneless = zoneless and p.zone_shift is None
    if clock is not None and p.ts is None and p.mono is None:
        us, prec = _frac_us(clock["clock_frac"])
        hms = (int(clock["clock_h"]), int(clock["clock_mi"]), int(clock["clock_s"]), us)
        if (t := clock_us(*hms, ref_us, tz)) is not None:
            p.ts, p.precision_us, p.clock = t, prec, hms
    p.rest = s
    if "line" in s and (q := _quoted_kernel_line(s, ref_us, tz)) is not None:
        q.host = q.host or p.host
        q.addr_host, q.source_addr = q.addr_host or p.addr_host, q.source_addr or p.source_addr
        return q
    return p


#: a kernel line gpud (leptonai/gpud) quotes in its own log, as ``dmesg --decode --time-format iso`` printed it: its
#: scan's text, "line kern  :err   : 2025-01-25T10:34:54,859532+00:00 nvidia-nvswitch1: SXid (PCI:0000:84:00.0):
#: 12028, …", and its zap record's ``"line":"kern  :err   : …"`` inside a journal or syslog line of gpud's
#: (leptonai/gpud#338, the same record the NDJSON reader reads: ``ingest.decode.Envelope.line``). The quote is the
#: kernel's line, the fault once: read at its own stamp, it is the kernel's line's event (``schemas.line_event_id``);
#: at gpud's stamp (or the file's) it was a second event of the fault, days after (a leftover of a defect pass)
_GPUD_QUOTE = re.compile(r'(?:^line |"line": ?")(?=' + _DMESG_X.pattern[1:] + r"\d{4}-\d\d-\d\dT)")


def _quoted_kernel_line(s: str, ref_us: int | None, tz: tzinfo) -> Prefix | None:
    """The prefixes of the kernel line gpud quotes in ``s`` (:data:`_GPUD_QUOTE`), read as a line of its own (a
    JSON string's escapes undone, up to its closing quote), when its stamp dates it; else None."""
    m = _GPUD_QUOTE.search(s)
    if m is None:
        return None
    body = s[m.end():]
    if m.group().endswith('"'):
        try:
            body = orjson.loads(_JSON_STRING.match('"' + body)[0])
        except (TypeError, orjson.JSONDecodeError):
            return None
    q = _parse_prefix(body, ref_us, tz)
    return q if q.ts is not None else None


#: a JSON string from its opening quote to its closing one
_JSON_STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"')
