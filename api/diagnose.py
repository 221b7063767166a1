"""``diagnose`` as a function: local files -> (batch of events, incidents). The CLI and the tests call it."""

from __future__ import annotations

import logging
import re
import textwrap
import time
from collections.abc import Callable, Iterable
from dataclasses import replace
from pathlib import Path, PurePosixPath
from typing import Any

import pyarrow as pa

from correlate.attribute import first_of
from correlate.correlator import Symptom, correlate, correlation_settings
from ingest.counters import with_counter_events
from ingest.decode import Decoded, Reject, decode_file, host_from_filename
from ingest.files import content_digest, decode_paths, unreadable, walk
from ingest.pipeline import Batch, Pipeline
from schemas.hostname import canonical_host
from schemas.settings import Settings

log = logging.getLogger("firstfault.diagnose")


def diagnose_paths(paths: Iterable[Path], settings: Settings, *, symptoms: list[Symptom] | None = None,
                   pipeline: Pipeline | None = None, now_us: int | None = None,
                   progress: Callable[[int, int, str], None] | None = None
                   ) -> tuple[Decoded, Batch, list[dict[str, Any]]]:
    """Decode, match, extract and correlate files. Raises ``FileNotFoundError`` for a missing path.

    ``progress(done, total, name)`` is called after each file is read. If reading or matching the files
    together raises (a bug, or input nobody foresaw), each file is tried on its own: a file that fails
    becomes a reject in the returned ``Decoded`` (``error_code`` ``decode_error`` or ``pipeline_error``,
    the reason naming the exception) and the other files are diagnosed as usual."""
    paths = list(paths)
    pipe = pipeline or Pipeline(tz=settings.tzinfo())
    try:
        decoded = decode_paths(paths, progress=progress)
        batch = _run(pipe, decoded)
    except (FileNotFoundError, PermissionError, IsADirectoryError):
        raise  # the caller's mistake, not the input's: said as it is (exit code 1 or 2)
    except Exception as e:  # noqa: BLE001 — isolate the file(s) that fail; never lose the others
        log.info("reading the files together failed (%s: %s); trying each on its own", type(e).__name__, e)
        decoded, batch = _per_file(paths, pipe, progress)
    incidents = correlate(batch.events, batch.link_samples, batch.topology, settings=correlation_settings(settings),
                          symptoms=place_symptoms(symptoms or [], decoded, batch),
                          now_us=now_us or int(time.time() * 1_000_000))
    return decoded, batch, incidents


class SymptomHostError(ValueError):
    """A symptom without a host (``--symptom hang``) on logs of several hosts, or of none."""


def place_symptoms(symptoms: list[Symptom], decoded: Decoded, batch: Batch) -> list[Symptom]:
    """``symptoms`` with the ones without a host (``Symptom.host`` empty: ``--symptom hang`` without ``@HOST``) given
    the one host the logs are of: per file, the hosts of its events, topology facts and link samples (a line's own
    host wins over its file's name: a ``kern.log`` whose lines all say ``node07`` is node07's), or, for a file none
    of whose lines was recognised, the host its name gives (a silent host is the usual suspect of a hang, not one to
    leave out), unless it holds only blank lines. Raises :class:`SymptomHostError` naming the hosts when they are
    several (a report about one host would change every host's incidents), or when there is none."""
    if all(x.host for x in symptoms):
        return symptoms
    hosts: set[str] = set()
    heard: set[str] = set()  # the files (segment streams, file:<name>@<digest>) some rows came from
    for t in (batch.events, batch.topology, batch.link_samples):
        hosts.update(t.column("host").unique().to_pylist())
        for origin in t.column("origin").unique().to_pylist():
            if f := file_of(origin):
                heard.add(f"file:{f[0]}@{f[1]}")
    # a file of blank lines is of no host (a folder's empty.log was one of "3 hosts": a fresh user's trial)
    hosts.update(seg.host for seg in decoded.segments if seg.host and seg.stream not in heard and seg.data.strip())
    hosts = sorted(hosts)
    kind = next(x.kind for x in symptoms if not x.host)
    if not hosts:
        raise SymptomHostError(f"no host to attach the symptom to; write {kind}@HOST")
    if len(hosts) > 1:
        named = first_of(hosts, 8)
        raise SymptomHostError(f"these logs are of {len(hosts)} hosts ({named}): write {kind}@HOST to say which one "
                               "the symptom is about (repeat --symptom for several)")
    return [x if x.host else replace(x, host=hosts[0]) for x in symptoms]


def _run(pipe: Pipeline, decoded: Decoded) -> Batch:
    batch = pipe.run(decoded)
    batch.events = _first_of_each(with_counter_events(batch.events, batch.link_samples, pipe.catalog))
    return batch


def _first_of_each(events: pa.Table) -> pa.Table:
    """``events`` with one row per ``event_id`` (the first): a line read in two files — two copies of one boot's dmesg,
    kern.log and the journal — is one event (``schemas.events.line_event_id``), listed and counted once (it was twice
    in the JSON and the count: a break-it pass)."""
    ids = events.column("event_id").to_pylist()
    if len(set(ids)) == len(ids):
        return events
    seen: set[str] = set()
    keep = [not (i in seen or seen.add(i)) for i in ids]
    return events.filter(pa.array(keep))


def _per_file(paths: list[Path], pipe: Pipeline, progress: Callable[[int, int, str], None] | None
              ) -> tuple[Decoded, Batch]:
    """Each file decoded and matched on its own to find those that raise; the others together."""
    good = Decoded()
    bad: list[Reject] = []
    files = list(walk(paths))
    for n, (f, rel) in enumerate(files, 1):
        origin = f"file:{rel}"
        try:
            d = decode_file(f, relname=f"{rel}@{content_digest(f)}")
        except IsADirectoryError:
            raise
        except PermissionError as e:  # as ingest.files.decode_paths says it
            bad.append(unreadable(rel, e))
            continue
        except Exception as e:  # noqa: BLE001
            bad.append(Reject(origin, f"cannot read {rel}: {type(e).__name__}: {e}", b"", "decode_error"))
            continue
        finally:
            if progress is not None:
                progress(n, len(files), rel)
        try:
            pipe.run(d)
        except Exception as e:  # noqa: BLE001
            bad.append(Reject(origin, f"cannot match {rel}: {type(e).__name__}: {e}", b"", "pipeline_error"))
            continue
        good.add(d)
    for rj in bad:
        log.info("%s", rj.reason, extra={"stage": "diagnose", "error_code": rj.error_code})
    good.rejects.extend(bad)
    batch = _run(pipe, Decoded(segments=good.segments, rejects=list(good.rejects), pod_nodes=good.pod_nodes))
    return good, batch


def file_of(origin: str) -> tuple[str, str] | None:
    """``(name relative to its argument, content digest)`` of a local file's event origin
    (``file:<rel>@<digest>:<line>[#<n>]``, ``ingest.files``; an NDJSON record's ``file:<rel>@<digest>#r<record>:…``);
    ``None`` for another origin."""
    if not origin.startswith("file:"):
        return None
    rel, at, rest = origin[len("file:"):].rpartition("@")
    return (rel, rest.split(":", 1)[0].split("#", 1)[0]) if at else None


def same_named_files(events: pa.Table) -> dict[str, list[str]]:
    """Host -> the files (``<rel>@<digest>``, sorted) of two or more different files of one file name whose
    events carry the host that name (or, for a name that is a kind of log, its folder) gives
    (``ingest.decode.host_from_filename``): ``a/node01.log`` and
    ``b/node01.log`` from two machines are one host ``node01`` to the correlator, which joins their events
    (a corpus of cases each called ``node01.log``). One file read twice (same content digest) is one file; a
    host's files of different names (``node01.dmesg.log``, ``node01.nccl.log``) are one host by design
    (DESIGN.md) and are not listed, nor are files of different names in one folder that names their host
    (``node07/kern.log``, ``node07/nccl.log``); in different folders that name one host they are."""
    by: dict[tuple[str, str], set[tuple[str, str]]] = {}
    # per file (its path in the run), the host its path gives and the host its name alone gives: once per file, not
    # per event (a 4,000-line capture asked pyarrow 8,000 times, a third of diagnose's time, a break-it pass)
    hosts_of: dict[str, tuple[str, str]] = {}
    for host, origin in zip(events.column("host").to_pylist(), events.column("origin").to_pylist()):
        f = file_of(origin or "")
        if f is None:
            continue
        path = PurePosixPath(f[0])
        got = hosts_of.get(f[0])
        if got is None:
            got = hosts_of[f[0]] = (canonical_host(host_from_filename(path)),
                                    canonical_host(host_from_filename(PurePosixPath(path.name))))
        # the host its name gives (as the lake names it: Node01.log), grouped by that name; or its folder's, for a file
        # named by its kind, grouped by host: job-1/alpha/kern.log and job-1/bravo/dmesg.log are both host job-1
        # (merged with no word, two break-it passes)
        if got[0] == host:
            by.setdefault((host, path.name if got[1] == host else ""), set()).add(f)
    out: dict[str, list[str]] = {}
    for (host, name), files in sorted(by.items()):
        first = {}  # per content digest, the first of its names: one file read twice is one file
        for rel, digest in sorted(files):
            first.setdefault(digest, f"{rel}@{digest}")
        # files of a folder-named host from one folder are that host's logs of different kinds (DESIGN.md)
        if len(first) > 1 and (name or len({PurePosixPath(r).parent for r, _d in files}) > 1):
            out.setdefault(host, []).extend(sorted(first.values()))
    return out


#: per events ``source``: (what a line placed by its file's modification time is, what it printed and how to get
#: wall-clock times) (shared/reference/formats.md §1, §11.1); a stamp of a form the prefixes do not read is said too
#: (a hybrid glog stamp was "no time printed": a fresh user's trial)
_NO_TIME = {
    "dmesg": ("kernel line", "with a raw dmesg stamp (seconds since boot, counted back from the file's time) or "
                             "none: `dmesg -T` or `journalctl -k -o short-iso` print wall-clock times"),
    "nccl": ("NCCL/framework line", "with no time printed, or a stamp of a form not read (docs/recognition.md: "
                                    "line stamps): NCCL 2.26 and later stamp every level with "
                                    "NCCL_DEBUG_TIMESTAMP_LEVELS=ALL"),
    "nvml": ("NVML/nvidia-smi line", "with no time printed, or a stamp of a form not read: capture `date` beside "
                                     "it, or send the poller's JSON samples"),
}


def year_note(events: pa.Table, stdin: str | None = None) -> str | None:
    """What stderr says of the events whose stamps print no year and took it from their file's time
    (``details.ts_year_from`` ``file``: ``ingest.assemble.resolve_times``): a copied old log lands in the year it was
    copied, a year from the logs of its job's other hosts (a fresh user's trial); ``None`` when there are none.
    ``stdin``: the name standard input was saved under (:func:`mtime_note`): its lines took the year it was read,
    their own (`journalctl -k | firstfault diagnose -` prints syslog stamps), and are not counted."""
    if "details" not in events.column_names:
        return None
    origins = events.column("origin").to_pylist() if "origin" in events.column_names else [None] * events.num_rows
    piped = f"file:{stdin}@" if stdin else None
    n = sum(1 for d, o in zip(events.column("details").to_pylist(), origins)
            if d and '"ts_year_from":"file"' in d and not (piped and o and o.startswith(piped)))
    if not n:
        return None
    return (f"{n} event{'s' * (n != 1)} with a stamp that prints no year (glog/c10 `E1204 03:21:41`, syslog `Dec  4 "
            f"03:21:41`) took {'their' if n != 1 else 'its'} year from {'their' if n != 1 else 'its'} file's time: "
            "give a log of the same job or host that prints dates, or copy the files with `cp -p`")


def mtime_note(events: pa.Table, stdin: str | None = None, width: int | None = None) -> str | None:
    """What stderr says of the events timed by their file's modification time (``ts_basis`` ``file``): how many,
    which lines, per source, and how to capture wall-clock times; ``None`` when there are none. ``stdin``: the
    name (``<host>.stdin``) standard input was saved under (``diagnose -``): its events are timed by when it was
    read, and the note says so apart (``origin`` ``file:<stdin>@…``).

    A short line per group (``3 events timed by their file's modification time:``), then one indented line per
    source and one for the copy's advice, each wrapped to ``width`` columns (the terminal's; None: not wrapped). It
    was one line of ~560 characters (a new user's trial)."""
    bases = events.column("ts_basis").to_pylist()
    details = events.column("details").to_pylist() if "details" in events.column_names else [None] * len(bases)
    # (a line dated by a stamped line after it in its file, details.ts_next_line, is not moved by a copy)
    timed = [b == "file" and not (d and '"ts_next_line"' in d) for b, d in zip(bases, details)]
    if not any(timed):
        return None
    # a line whose own stamp was no time a fleet's log carries (year 1970 or 2099: ingest.assemble.resolve_times)
    # is said as such, not as a line that printed none (a break-it pass)
    # so is a line of a record whose envelope time was none (a host clock reset to 1970: details.envelope_ts_rejected),
    # not a kernel line with a raw stamp: the shipper's clock is what to fix (a break-it pass)
    sources = [f"{s}:stamp" if t and d and '"ts_rejected"' in d else
               f"{s}:envelope" if t and d and '"envelope_ts_rejected"' in d else s
               for t, s, d in zip(timed, events.column("source").to_pylist(), details)]
    origins = events.column("origin").to_pylist() if stdin and "origin" in events.column_names else [None] * len(timed)
    piped = f"file:{stdin}@"
    groups: dict[bool, list[str]] = {}
    for t, s, o in zip(timed, sources, origins):
        if t:
            groups.setdefault(bool(o and o.startswith(piped)), []).append(s)
    lines = []
    for from_stdin, srcs in sorted(groups.items()):
        n = len(srcs)
        when = "when standard input was read" if from_stdin else \
            f"{'their' if n != 1 else 'its'} file's modification time"
        lines.append(f"{n} event{'s' * (n != 1)} timed by {when}:")
        points = []
        for s in sorted(set(srcs)):
            k = srcs.count(s)
            noun, rest = _NO_TIME.get(s, (f"{s} line", "with no time printed, or a stamp of a form not read")) \
                if not s.endswith((":stamp", ":envelope")) else (
                "line", "whose own stamp is no time from 2000 to 2100, or more than a day after the file's time "
                        "(details.ts_rejected keeps it)") if s.endswith(":stamp") else (
                "line", "of a record whose time is no time from 2000 to 2100, or more than a day after the file's "
                        "time (details.envelope_ts_rejected keeps it): the shipping host's clock")
            if from_stdin:
                rest = rest.replace("the file's time", "the time it was read")
            points.append(f"{k} {noun}{'s' * (k != 1)} {rest}")
        if not from_stdin:
            points.append("a copied file moves them: copy with `cp -p`, `scp -p` or `rsync -t`, or set it back with "
                          "`touch -d`")
        for p in points:
            if not width:
                lines.append(f"  - {p}")
                continue
            # a command in backquotes stays on one line (`dmesg` and `-T` apart were two commands to paste)
            whole = re.sub(r"`[^`]*`", lambda m: m.group().replace(" ", "\x00"), p)
            lines.extend(x.replace("\x00", " ") for x in textwrap.wrap(
                whole, width, initial_indent="  - ", subsequent_indent="    ", break_on_hyphens=False,
                break_long_words=False))
    return "\n".join(lines)
