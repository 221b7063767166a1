"""A real single-node Apache Kafka 4.x broker on 127.0.0.1, for the demo and the tests.

Jars come from Maven Central through ``kafka/pom.xml`` (copied once into a
cache folder that later runs reuse: ``$FIRSTFAULT_CACHE`` or
``~/.cache/firstfault``). Storage is formatted with ``kafka.tools.StorageTool``
and the broker runs ``kafka.Kafka`` in KRaft mode
(``process.roles=broker,controller``, static quorum) on free loopback ports.
Facts: shared/reference/kafka-local.md.

The broker is a detached process; its pid, ports and data folder are kept in
``<state_dir>/kafka/state.json`` so ``status`` and ``stop`` work from any
later process. ``stop`` ends it with SIGTERM (SIGKILL after a timeout) and
leaves nothing running.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
POM = REPO / "kafka" / "pom.xml"
LOG4J = REPO / "kafka" / "log4j2.properties"
KAFKA_VERSION = "4.3.1"


class BrokerError(RuntimeError):
    """The local broker could not be resolved, started, reached or stopped; the message says how."""


class MissingTopicsError(RuntimeError):
    """Topics a worker reads or writes do not exist on the broker (``topics``: their names, in the order asked).
    Both the local broker and docker-compose's run with ``auto.create.topics.enable=false``: ``firstfault kafka
    topics`` creates them."""

    def __init__(self, topics: list[str], bootstrap: str) -> None:
        self.topics, self.bootstrap = topics, bootstrap
        names = ", ".join(topics)
        super().__init__(f"topic{'s' * (len(topics) != 1)} {names} {'do' if len(topics) != 1 else 'does'} not exist "
                         f"on the broker at {bootstrap}")


async def require_topics(admin, topics: list[str], bootstrap: str) -> None:
    """Raise :class:`MissingTopicsError` naming those of ``topics`` the broker does not have (``admin``: a started
    ``AIOKafkaAdminClient``). A worker asks at start: without its dead-letter or events topic it would fetch
    and then retry every batch's store for ever, unhealthy with aiokafka's unnamed
    ``UnknownTopicOrPartitionError``."""
    have = set(await admin.list_topics())
    missing = [t for t in dict.fromkeys(topics) if t not in have]
    if missing:
        raise MissingTopicsError(missing, bootstrap)


@dataclass(slots=True)
class BrokerState:
    pid: int
    port: int
    controller_port: int
    data_dir: str
    log_dir: str
    cluster_id: str
    started: float

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"


def cache_dir() -> Path:
    base = os.environ.get("FIRSTFAULT_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "firstfault")
    return Path(base) / f"kafka-{KAFKA_VERSION}"


def ensure_jars(log=print) -> Path:
    """Resolve the broker's runtime jars with Maven (once); return the folder holding them.

    Raises :class:`BrokerError` with Maven's output when resolution fails.
    """
    libs = cache_dir() / "libs"
    marker = cache_dir() / ".complete"
    if marker.exists() and any(libs.glob("kafka_2.13-*.jar")):
        return libs
    mvn = shutil.which("mvn")
    if not mvn:
        raise BrokerError("Maven (mvn) is not on PATH; it is needed once to fetch the Kafka jars")
    libs.mkdir(parents=True, exist_ok=True)
    # Maven runs quietly (-q): the line says what the wait is, and that it is once
    log(f"fetching the Apache Kafka {KAFKA_VERSION} jars from Maven Central into {libs} (once: they are kept) …")
    cmd = [mvn, "-B", "-q", "-f", str(POM), "package", f"-Djars.dir={libs}", f"-Dkafka.version={KAFKA_VERSION}"]
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=str(POM.parent))
    shutil.rmtree(POM.parent / "target", ignore_errors=True)
    if r.returncode != 0 or not any(libs.glob("kafka_2.13-*.jar")):
        raise BrokerError(f"`{' '.join(cmd)}` failed (exit {r.returncode}):\n{r.stdout[-4000:]}\n{r.stderr[-4000:]}")
    marker.write_text(time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
    return libs


def _java() -> str:
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "java").exists():
        return str(Path(home) / "bin" / "java")
    j = shutil.which("java")
    if not j:
        raise BrokerError("java is not on PATH (Kafka 4.x needs Java 17+)")
    return j


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _port_open(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie child of ours is not alive
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            return f.read().split(") ", 1)[1][:1] != "Z"
    except OSError:
        return True


def _state_file(state_dir: Path) -> Path:
    return state_dir / "kafka" / "state.json"


def read_state(state_dir: Path) -> BrokerState | None:
    f = _state_file(state_dir)
    if not f.exists():
        return None
    try:
        return BrokerState(**json.loads(f.read_text()))
    except (ValueError, TypeError):
        return None


def _properties(port: int, cport: int, data: Path, overrides: dict[str, str] | None = None) -> str:
    extra = [f"{k}={v}" for k, v in (overrides or {}).items()]
    return "\n".join([
        "process.roles=broker,controller",
        "node.id=1",
        f"controller.quorum.voters=1@127.0.0.1:{cport}",
        f"listeners=PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{cport}",
        f"advertised.listeners=PLAINTEXT://127.0.0.1:{port}",
        "controller.listener.names=CONTROLLER",
        "inter.broker.listener.name=PLAINTEXT",
        "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        f"log.dirs={data}",
        "num.partitions=3",
        "default.replication.factor=1",
        "offsets.topic.replication.factor=1",
        "offsets.topic.num.partitions=4",
        "transaction.state.log.replication.factor=1",
        "transaction.state.log.min.isr=1",
        "share.coordinator.state.topic.replication.factor=1",
        "share.coordinator.state.topic.min.isr=1",
        "min.insync.replicas=1",
        # without this every first group join waits 3 s
        "group.initial.rebalance.delay.ms=0",
        "auto.create.topics.enable=false",
        "num.network.threads=2",
        "num.io.threads=2",
        "num.recovery.threads.per.data.dir=1",
        "background.threads=2",
        "log.retention.hours=168",
        "log.segment.bytes=67108864",
        # bad-input tests send large values; the consumer, not the broker, rejects them
        "message.max.bytes=134217728",
        "replica.fetch.max.bytes=134217728",
        "socket.request.max.bytes=209715200",
        *extra,  # a later line wins in a Java properties file
        "",
    ])


def status(state_dir: Path) -> BrokerState | None:
    """The running broker's state, or ``None`` when none runs from ``state_dir``."""
    st = read_state(state_dir)
    if st and _alive(st.pid) and _port_open(st.port):
        return st
    return None


def running_elsewhere(state_dir: Path, proc: Path = Path("/proc")) -> list[tuple[Path, int]]:
    """(state folder, pid) of each local broker this user runs under another state folder than ``state_dir``, as
    ``start`` launched it (``java … kafka.Kafka <state>/kafka/server.properties``, its pid the one that folder's
    state file records), by their pid: ``kafka stop`` with the wrong folder said "not running" and no more while the
    demo's broker ran (a fresh user's trial), and this names the folder to stop it with. Linux (``/proc``); elsewhere,
    or when ``/proc`` cannot be read, none."""
    here, uid, out = state_dir.resolve(), os.getuid(), []
    try:
        pids = sorted(int(d.name) for d in proc.iterdir() if d.name.isdecimal())
    except OSError:
        return []
    for pid in pids:
        try:
            if (proc / str(pid)).stat().st_uid != uid:
                continue
            args = (proc / str(pid) / "cmdline").read_bytes().split(b"\0")
        except OSError:  # ended meanwhile, or not ours to read
            continue
        if b"kafka.Kafka" not in args or args.index(b"kafka.Kafka") + 1 >= len(args):
            continue
        props = Path(os.fsdecode(args[args.index(b"kafka.Kafka") + 1]))
        folder = props.parent.parent
        if props.name != "server.properties" or props.parent.name != "kafka" or folder == here:
            continue
        st = read_state(folder)
        if st is not None and st.pid == pid:
            out.append((folder, pid))
    return out


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def start(state_dir: Path, *, timeout_s: float = 120.0, heap: str = "512m", log=_stderr,
          overrides: dict[str, str] | None = None) -> BrokerState:
    """Start the broker (or return the one already running). Raises :class:`BrokerError`.

    ``log`` gets one line per step that may take a while, before it begins: fetching the jars (once), formatting the
    storage (once per data folder), waiting for the broker to answer on ``127.0.0.1:<port>``; none for a broker
    already running. ``kafka start`` said nothing for a minute on a busy machine (a fresh user's trial).
    ``overrides`` are broker properties set over the defaults above (e.g. the scale benchmark's
    ``group.initial.rebalance.delay.ms``)."""
    state_dir = state_dir.resolve()
    running = status(state_dir)
    if running:
        return running
    with _start_lock(state_dir, timeout_s):
        return status(state_dir) or _start(state_dir, timeout_s, heap, log, overrides)  # the one started meanwhile


@contextlib.contextmanager
def _start_lock(state_dir: Path, timeout_s: float) -> Iterator[None]:
    """Held while one ``start`` starts the broker of ``state_dir`` (``<state_dir>/kafka/start.lock``, an exclusive
    ``flock``: released when its process ends, however it ends; the JVM does not inherit it). Two ``kafka start`` at
    once on one folder each wrote server.properties with ports of their own and launched a JVM on the one data
    folder: one broker took the other's port, both waited out their time limit and exited 1, and no broker ran (a
    break-it pass). The second now waits for the first. Raises :class:`BrokerError` after ``timeout_s`` + 60 s of
    waiting (the first's start, with the jars' fetch and the storage's format)."""
    home = state_dir / "kafka"
    home.mkdir(parents=True, exist_ok=True)
    with open(home / "start.lock", "a") as f:
        deadline = time.monotonic() + timeout_s + 60
        while True:
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise BrokerError(f"another `kafka start` has been starting the broker of {state_dir} for over "
                                      f"{timeout_s + 60:.0f} s; stop it, or wait for it") from None
                time.sleep(0.2)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _start(state_dir: Path, timeout_s: float, heap: str, log, overrides: dict[str, str] | None) -> BrokerState:
    """:func:`start` of a broker not running, under :func:`_start_lock`."""
    old = read_state(state_dir)
    if old and _alive(old.pid):  # alive but not answering: stop it before starting again
        _terminate(old.pid, 20)
    libs = ensure_jars(log)
    home = state_dir / "kafka"
    data, logs = home / "data", home / "logs"
    for d in (data, logs):
        d.mkdir(parents=True, exist_ok=True)
    port = old.port if old and not _port_open(old.port) else _free_port()
    cport = old.controller_port if old and not _port_open(old.controller_port) else _free_port()
    while cport == port:
        cport = _free_port()
    cluster_id = old.cluster_id if old and (data / "meta.properties").exists() else _cluster_id()
    props = home / "server.properties"
    props.write_text(_properties(port, cport, data, overrides))
    cp = f"{libs}/*"
    java = _java()
    jvm = [java, f"-Xms{heap}", f"-Xmx{heap}", "-XX:+UseG1GC", "-Djava.awt.headless=true",
           f"-Dlog4j2.configurationFile={LOG4J}", f"-Dkafka.logs.dir={logs}", "-cp", cp]
    if not (data / "meta.properties").exists():
        log(f"formatting the broker's storage in {data} …")
        r = subprocess.run(jvm + ["kafka.tools.StorageTool", "format", f"--cluster-id={cluster_id}", "-c", str(props)],
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise BrokerError(f"formatting Kafka storage failed:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
    out = open(logs / "stdout.log", "ab")
    proc = subprocess.Popen(jvm + ["kafka.Kafka", str(props)], stdout=out, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, start_new_session=True, cwd=str(home))
    st = BrokerState(pid=proc.pid, port=port, controller_port=cport, data_dir=str(data), log_dir=str(logs),
                     cluster_id=cluster_id, started=time.time())
    _state_file(state_dir).write_text(json.dumps(asdict(st)))
    # a JVM's start: seconds on an idle machine, a minute on a busy one
    log(f"started the broker (pid {proc.pid}); waiting for it to answer on {st.bootstrap} "
        f"(at most {timeout_s:.0f} s) …")
    try:
        asyncio.run(wait_ready(st.bootstrap, timeout_s, proc))
    except BrokerError:
        _terminate(proc.pid, 10)
        tail = (logs / "server.log").read_text(errors="replace")[-3000:] if (logs / "server.log").exists() else ""
        raise BrokerError(f"the broker did not answer on {st.bootstrap} within {timeout_s:.0f} s; "
                          f"last log lines:\n{tail}") from None
    return st


async def wait_ready(bootstrap: str, timeout_s: float, proc: subprocess.Popen | None = None) -> None:
    """Poll cluster metadata until the broker answers (no sleeping on a guess)."""
    from aiokafka.admin import AIOKafkaAdminClient
    from aiokafka.errors import KafkaError

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise BrokerError(f"the broker exited with code {proc.returncode}")
        admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=3000)
        try:
            await admin.start()
            await admin.list_topics()
            return
        except (KafkaError, OSError, asyncio.TimeoutError):
            await asyncio.sleep(0.5)
        finally:
            await admin.close()
    raise BrokerError(f"no answer from {bootstrap}")


def _cluster_id() -> str:
    """A Kafka cluster id (URL-safe base64 of 16 random bytes) that does not start with '-':
    StorageTool's argument parser would read such an id as an option."""
    import base64

    while True:
        cid = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if cid[0].isalnum():
            return cid


def _reap(pid: int) -> None:
    """Collect a child's exit status so no zombie is left (the broker is our child when we started it)."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


def _terminate(pid: int, timeout_s: float) -> None:
    try:
        os.killpg(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    except PermissionError:
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not _alive(pid):
            _reap(pid)
            return
        time.sleep(0.2)
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    time.sleep(0.2)
    _reap(pid)


def stop(state_dir: Path, timeout_s: float = 30.0) -> bool:
    """Stop the broker; True when one was running. Nothing is left running."""
    st = read_state(state_dir.resolve())
    if not st or not _alive(st.pid):
        return False
    _terminate(st.pid, timeout_s)
    return True


async def ensure_topics(bootstrap: str, topics: list[str], partitions: int = 3, *, grow: bool = False
                        ) -> dict[str, tuple[int | None, int]]:
    """Create the topics that do not exist yet with ``partitions`` partitions; with ``grow``, also add partitions to
    an existing topic that has fewer (Kafka cannot remove partitions: one with more keeps them). Returns topic ->
    (partitions before, None for a topic created; partitions now). Raises :class:`BrokerError` on a per-topic error.

    ``firstfault kafka topics --partitions 6`` after ``kafka start`` (which creates them with 3) said "topics ready"
    and left every topic at 3 (a fresh user's trial)."""
    from aiokafka.admin import AIOKafkaAdminClient, NewPartitions, NewTopic
    from aiokafka.errors import InvalidPartitionsError, KafkaError

    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=15000)
    await admin.start()
    try:
        have = set(await admin.list_topics())
        out: dict[str, tuple[int | None, int]] = {}
        new = [NewTopic(name=t, num_partitions=partitions, replication_factor=1) for t in topics if t not in have]
        if new:
            resp = await admin.create_topics(new)
            # aiokafka does not raise per-topic errors: read them from the response (kafka-local.md)
            for t in getattr(resp, "topic_errors", []) or getattr(resp, "topic_error_codes", []):
                name, code = t[0], t[1]
                if code not in (0, 36):  # 36: TOPIC_ALREADY_EXISTS
                    raise BrokerError(f"creating topic {name} failed with Kafka error code {code}")
            out.update({n.name: (None, partitions) for n in new})
        old = [t for t in topics if t in have]
        if old:
            counts = {d["topic"]: len(d["partitions"]) for d in await admin.describe_topics(old)}
            grown = set()
            for t in old:
                if grow and counts.get(t, partitions) < partitions:
                    try:
                        await admin.create_partitions({t: NewPartitions(total_count=partitions)})
                        grown.add(t)
                    except InvalidPartitionsError:  # the metadata was a moment old: it has that many already
                        for _ in range(20):
                            await asyncio.sleep(0.25)
                            [d] = await admin.describe_topics([t])
                            counts[t] = len(d["partitions"])
                            if counts[t] >= partitions:
                                break
                    except KafkaError as e:
                        raise BrokerError(f"adding partitions to topic {t} failed: {e}") from e
            out.update({t: (counts.get(t), partitions if t in grown else counts.get(t, partitions)) for t in old})
        return out
    finally:
        await admin.close()
