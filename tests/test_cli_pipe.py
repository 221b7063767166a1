"""The ``firstfault`` command in a pipe whose reader went away (``firstfault sql … | head -1``): every command that
writes to stdout stops quietly, exit 141 (128 + SIGPIPE, what a shell reports for ``seq 1 100000 | head -1``), as
coreutils do. Each runs as a real process on a real pipe whose read end is closed before it starts, so its first
write to stdout fails with EPIPE (Python ignores SIGPIPE, so the write raises ``BrokenPipeError``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from api.demo import SAMPLES
from api.render import EXIT_READER_GONE

ROOT = Path(__file__).resolve().parents[1]
NODE015 = str(SAMPLES / "node015.nccl.log")


@pytest.fixture(scope="module")
def lake(tmp_path_factory) -> Path:
    """A lake of the sample fleet's rows written twice under two names: two parts per folder, in hours long closed,
    so ``lake compact --dry-run`` prints a line per folder, and ``sql`` has rows to print."""
    from api.diagnose import diagnose_paths
    from ingest.lake import Lake
    from schemas.settings import Settings

    root = tmp_path_factory.mktemp("pipe") / "lake"
    lk = Lake(str(root))
    lk.init()
    _, batch, _ = diagnose_paths([SAMPLES], Settings())
    for name in ("first", "second"):
        lk.write("events", batch.events, name)
    return root


def _run_into_a_closed_pipe(args: list[str], lake: Path, tmp_path: Path) -> subprocess.CompletedProcess:
    r, w = os.pipe()
    os.close(r)  # the reader is gone before the command writes anything
    env = {**os.environ, "PYTHONPATH": str(ROOT), "FIRSTFAULT_LAKE": str(lake),
           "FIRSTFAULT_STATE_DIR": str(tmp_path / "state"), "COLUMNS": "120"}
    try:
        return subprocess.run([sys.executable, "-m", "api.cli", *args], stdout=w, stderr=subprocess.PIPE, env=env,
                              cwd=tmp_path, timeout=120)
    finally:
        os.close(w)


@pytest.mark.parametrize("args", [
    ["sql", "SELECT host, kind, ts FROM events ORDER BY ALL"],
    ["sql", "-f", "csv", "SELECT host, kind, ts FROM events ORDER BY ALL"],
    ["sql", "-f", "json", "SELECT host, kind, ts FROM events ORDER BY ALL"],
    ["sql"],  # the views' listing
    ["diagnose", NODE015],
    ["diagnose", "-f", "json", NODE015],
    ["report", "degraded-links", "--hour", "2025-09-17T15"],
    ["report", "degraded-links", "--hour", "2025-09-17T15", "-f", "csv"],
    ["lake", "compact", "--dry-run", "--before", "2026-01-01"],  # plain print(): click's own EPIPE path
    ["--help"],  # typer's Rich console
    ["sql", "--help"],
    ["--version"],
], ids=lambda a: " ".join(a)[:40])
def test_a_command_whose_reader_went_away_stops_quietly_with_141(args, lake, tmp_path):
    """It was exit 1, a runtime failure's code (README, exit codes), or 0 when the output happened to fit the pipe's
    buffer; ``report`` said "[Errno 32] Broken pipe". Now 141 and nothing said on stderr beyond the command's usual
    progress lines: no traceback, no "Broken pipe", no "Exception ignored" at the interpreter's exit."""
    p = _run_into_a_closed_pipe(args, lake, tmp_path)
    said = p.stderr.decode()
    assert p.returncode == EXIT_READER_GONE == 141, said
    for word in ("Broken pipe", "Traceback", "Exception ignored", "Errno"):
        assert word not in said, said


def test_a_failure_while_the_reader_is_gone_keeps_its_own_code(lake, tmp_path):
    """Only a write that failed for want of a reader is 141: a query that fails is exit 1 and says so, whatever
    became of the pipe (it writes nothing to stdout)."""
    p = _run_into_a_closed_pipe(["sql", "SELECT error('no such luck')"], lake, tmp_path)
    assert p.returncode == 1
    assert "query failed" in p.stderr.decode() and "no such luck" in p.stderr.decode()


def test_a_reader_that_stays_gets_everything_and_exit_0(lake, tmp_path):
    """The same commands into a reader that reads it all: exit 0, the whole output (the change is the gone reader's
    alone)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "FIRSTFAULT_LAKE": str(lake),
           "FIRSTFAULT_STATE_DIR": str(tmp_path / "state")}
    p = subprocess.run([sys.executable, "-m", "api.cli", "sql", "-f", "csv", "SELECT count(*) AS n FROM events"],
                       capture_output=True, env=env, cwd=tmp_path, timeout=120)
    assert p.returncode == 0, p.stderr.decode()
    assert p.stdout.decode().splitlines()[0] == '"n"' and int(p.stdout.decode().splitlines()[1]) > 0
