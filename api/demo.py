"""The main job on an embedded default: local broker, bundled real logs, incidents, API.

``firstfault demo``: start (or reuse) the local Kafka broker, create the
topics, produce the sample fleet logs (``samples/fleet``, real cases from
public bug reports) once, consume them with a fresh consumer group into a
fresh lake, correlate, print the incidents, and serve the API until Ctrl-C
(or exit with ``--once``).
"""

from __future__ import annotations

import asyncio
import os
import shlex
import shutil
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path

from aiokafka import AIOKafkaConsumer
from rich.console import Console

from api.pager import hold_lock, outbox_free
from api.render import STOPPED_EARLY, IncidentsReport, incident_progress, incidents_title
from api.service import Service, second_signal_exits
from ingest import broker
from ingest.consumer import produce_lines
from schemas.settings import Settings

SAMPLES = Path(__file__).resolve().parents[1] / "samples" / "fleet"
LINES_PER_MESSAGE = 200


def sample_messages(folder: Path = SAMPLES) -> list[tuple[str, str, list[bytes]]]:
    """(topic, host key, values) per sample file ``<host>.<source>.log``; up to 200 lines per value."""
    out = []
    for f in sorted(folder.glob("*.log")):
        host, source = f.name.split(".")[:2]
        lines = f.read_bytes().splitlines()
        values = [b"\n".join(lines[i:i + LINES_PER_MESSAGE]) for i in range(0, len(lines), LINES_PER_MESSAGE)]
        out.append((f"fleet.{source}", host, values))
    return out


async def topics_empty(bootstrap: str, topics: list[str]) -> bool:
    """True when none of ``topics`` holds a record (the samples were never produced)."""
    from aiokafka import TopicPartition
    from aiokafka.admin import AIOKafkaAdminClient

    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        desc = await admin.describe_topics(topics)
    finally:
        await admin.close()
    tps = [TopicPartition(t["topic"], p["partition"]) for t in desc for p in t["partitions"]]
    c = AIOKafkaConsumer(bootstrap_servers=bootstrap)
    await c.start()
    try:
        ends = await c.end_offsets(tps)
        return sum(ends.values()) == 0
    finally:
        await c.stop()


async def produce_samples(bootstrap: str, console: Console) -> int:
    n = 0
    for topic, host, values in sample_messages():
        await produce_lines(bootstrap, topic, host, values)
        n += sum(v.count(b"\n") + 1 for v in values)
    console.print(f"produced {n} sample lines from {len(list(SAMPLES.glob('*.log')))} hosts into fleet.*")
    return n


class DemoRunning(RuntimeError):
    """Another demo holds ``<state_dir>/demo.lock``: its lake is in use (a second demo would wipe it)."""


def run_demo(settings: Settings, *, once: bool, port: int | None, console: Console,
             out: Console | None = None, check: Callable[[], None] | None = None) -> int:
    """Progress on ``console`` (stderr), the incidents table on ``out`` (stdout). Exit code 0 when
    incidents were produced from the samples. Raises :class:`DemoRunning` when another demo of the same
    state folder is running (its lake is left alone), ``api.pager.OutboxInUse`` when another process holds its
    pager outbox. ``check`` (the CLI's port check) runs once the demo holds its lock, before anything is started or
    removed. Refused there (``check`` raises, or the outbox is another's), it leaves nothing it did not find: its
    lock file and the state folders it made are removed (a refused demo left ``demo.lock`` in a new folder: a
    helper's pass); another demo's lock is never touched."""
    made = [d for d in (settings.state_dir, *settings.state_dir.parents) if not d.exists()]  # deepest first
    settings.state_dir.mkdir(parents=True, exist_ok=True)
    lock_path = settings.state_dir / "demo.lock"
    found = lock_path.exists()
    lock, pid = hold_lock(lock_path)  # released when the process ends, however it ends
    if lock is None:
        raise DemoRunning(f"another demo is running (pid {pid}) and serving its lake "
                          f"{settings.state_dir / 'demo' / 'lake'}: stop it first (Ctrl-C), or run your own "
                          "beside it with FIRSTFAULT_STATE_DIR=/tmp/mine FIRSTFAULT_API_PORT=18080")
    with lock:
        try:
            if check is not None:
                check()
            outbox_free(settings.state_dir)  # before a broker is started or a sample written
        except BaseException:  # typer.Exit from the port check, OutboxInUse: refused before anything started
            if not found:
                lock_path.unlink(missing_ok=True)  # while held: no other demo runs here (hold_lock's inode check)
            _remove_empty(made)
            raise
        return _run_demo(settings, once=once, port=port, console=console, out=out)


def _remove_empty(folders: list[Path]) -> None:
    """Remove each of ``folders`` (deepest first) that is empty; one that is not (another process wrote in it
    meanwhile) is left, with the folders above it."""
    for d in folders:
        try:
            d.rmdir()
        except OSError:
            return


def _run_demo(settings: Settings, *, once: bool, port: int | None, console: Console,
              out: Console | None) -> int:
    t0 = time.monotonic()
    console.print("[bold]firstfault demo[/]: local Kafka broker, bundled real logs → incidents")
    running = broker.status(settings.state_dir.resolve())
    st = broker.start(settings.state_dir, log=lambda m: console.print(m))
    if running is not None and running.pid == st.pid:  # "ready … after 0.0 s" read as one just started (a trial)
        console.print(f"broker already running on {st.bootstrap} (pid {st.pid}, data {st.data_dir})")
    else:
        console.print(f"broker ready on {st.bootstrap} (pid {st.pid}, data {st.data_dir}) after "
                      f"{time.monotonic() - t0:.1f} s")
    t0 = time.monotonic()  # the ingest's time, below, without the broker's start (a JVM: seconds)
    # the events topic too: the README's scaling-out workers (`firstfault ingest` / `correlate`) read it from this
    # broker
    topics = settings.topics + [settings.dlq_topic, settings.events_topic]
    asyncio.run(broker.ensure_topics(st.bootstrap, topics))
    if asyncio.run(topics_empty(st.bootstrap, settings.topics)):
        asyncio.run(produce_samples(st.bootstrap, console))
    else:
        console.print("sample logs already in the topics; reading them again with a fresh consumer group")
    demo_dir = settings.state_dir / "demo"
    shutil.rmtree(demo_dir, ignore_errors=True)
    settings = settings.model_copy(update={"lake": str(demo_dir / "lake")})
    svc = Service(settings, st.bootstrap, group_id=f"firstfault-demo-{int(time.time() * 1000)}")
    shown: list[dict] = []

    def caught_up(incidents: list[dict], head: str = "") -> None:
        shown.extend(incidents)
        console.print(svc.ingested(time.monotonic() - t0))
        (out or console).print(IncidentsReport(incidents, title=incidents_title(incidents, head)))
        # the lake shell-quoted as the stop hint's state folder is (stop_command): a folder with a blank split it
        console.print(f"query it: FIRSTFAULT_LAKE={shell_quote(str(settings.lake))} {program()} sql "
                      "\"SELECT category, count(*) FROM incidents WHERE status <> 'superseded' GROUP BY ALL\"")

    def stopped(incidents: list[dict]) -> None:
        """A signal before it caught up (``Service.run``'s ``on_stopped``): the incidents of what it read, titled so,
        as ``run --once`` titles them (it showed them as the samples' whole, or, since the service called
        ``on_caught_up`` no longer then, nothing at all: a helper's pass); the exit is as a caught-up demo's."""
        caught_up(incidents, f"{STOPPED_EARLY}: ")

    def serving(server) -> None:
        host, port_ = settings.api_host, server.servers[0].sockets[0].getsockname()[1]
        console.print(f"API on http://{host}:{port_}  (docs: http://{host}:{port_}/docs, "
                      f"incidents: http://{host}:{port_}/incidents) — Ctrl-C to stop")

    def second() -> None:
        """Ctrl-C (or SIGTERM) again: with a broker that did not answer (stopped, paused), the demo waited for the
        commit's request timeout, 40 s, saying nothing, and every further Ctrl-C was one more ``stop.set()`` (a
        break-it pass); now it stops at once, as ``run``'s does."""
        console.print(f"a second signal: stopping now, without the last commit; {svc.worker.in_hand()}", style="red",
                      highlight=False, markup=False)
        console.print(exit_line(settings.state_dir, once), markup=False, highlight=False, soft_wrap=True)
        console.file.flush()

    def first() -> None:
        """Ctrl-C (or SIGTERM): said at once, as ``run`` says it. With a broker that did not answer the demo waited
        for its last commit saying nothing, and the operator could not know that a second Ctrl-C ends it (a fresh
        user's trial: 40 s of silence after ^C)."""
        svc.worker.stop.set()
        console.print("stopping: the batch in hand is finished and committed first; a second Ctrl-C stops at once",
                      highlight=False)
        console.file.flush()

    signalled = second_signal_exits(first, second)

    async def main() -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, signalled)
        await svc.run(once=once, serve=not once, port=port, on_caught_up=caught_up, on_stopped=stopped,
                      on_serving=serving, on_incidents=incident_progress(settings.log_format, console))

    asyncio.run(main())
    # the broker is left running for the next demo (README), said — after --once too (a script never learnt that a
    # JVM of 512 MB stayed behind: a fresh user's trial)
    console.print(exit_line(settings.state_dir, once), markup=False, highlight=False, soft_wrap=True)
    return 0 if shown else 1


def program() -> str:
    """This install's ``firstfault`` as the user can paste it in the current folder: ``.venv/bin/firstfault`` when
    that names it from here (the repository's folder, where the README runs it), ``firstfault`` when the shell finds
    this very executable on PATH, else its absolute path (shell-quoted). A fixed ``.venv/bin/firstfault`` named
    nothing when ``kafka status`` ran from a job's log folder (a fresh user's trial)."""
    here = Path(sys.prefix) / "bin" / "firstfault"
    for said, where in ((".venv/bin/firstfault", ".venv/bin/firstfault"), ("firstfault", shutil.which("firstfault"))):
        try:
            if where and os.path.samefile(where, here):
                return said
        except OSError:  # not there (an install without the script, a folder removed): the next form
            pass
    return shell_quote(str(here))


def stop_command(state_dir: Path) -> str:
    """The command that stops this state folder's broker, as the user can paste it: with
    ``FIRSTFAULT_STATE_DIR=<it>`` (shell-quoted) when the folder is not the default one or the variable is set
    (run as ``firstfault kafka stop`` alone, it stopped the default folder's broker: another user's demo, a fresh
    user's trial)."""
    cmd = f"{program()} kafka stop"
    default = Settings.model_fields["state_dir"].default
    if os.environ.get("FIRSTFAULT_STATE_DIR") or Path(os.path.abspath(state_dir)) != Path(os.path.abspath(default)):
        return f"FIRSTFAULT_STATE_DIR={shell_quote(str(state_dir))} {cmd}"
    return cmd


def shell_quote(path: str) -> str:
    """``path`` quoted for bash: ``shlex.quote`` when its bytes are UTF-8, else bash's ``$'…'`` with ``\\xNN`` for
    each byte that is not (and for control characters): ``shlex.quote`` of a non-UTF-8 folder gave
    ``'/…/st\\udcffdir'``, which names another folder when pasted (a break-it pass)."""
    raw = os.fsencode(path)
    try:
        raw.decode("utf-8")
        return shlex.quote(path)
    except UnicodeDecodeError:
        pass
    out = []
    for ch in raw.decode("utf-8", "surrogateescape"):
        if "\udc80" <= ch <= "\udcff":  # a byte that is not UTF-8
            out.append(f"\\x{ord(ch) - 0xDC00:02x}")
        elif ch in "\\'":
            out.append("\\" + ch)
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\x{ord(ch):02x}")
        else:
            out.append(ch)
    return "$'" + "".join(out) + "'"


def exit_line(state_dir: Path, once: bool) -> str:
    """What the demo says at its end of the broker it leaves: the one running from ``state_dir`` now, looked up
    again (one stopped and started anew under the demo has another pid: the pid of its start was named, a fresh
    user's trial), or that none runs."""
    done = "done" if once else "stopped"
    st = broker.status(state_dir)
    if st is None:
        return f"{done}; no broker is running from {state_dir} now (it was stopped under the demo)"
    return f"{done}; the broker on {st.bootstrap} keeps running (pid {st.pid}): `{stop_command(state_dir)}` stops it"
