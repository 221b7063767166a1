"""The ``firstfault`` command's words, in-process (``typer.testing.CliRunner``; no broker, no subprocess): the
demo's closing line, ``--help``'s choices and placeholders, usage errors, ``sql``'s listing and the file-time note
of ``diagnose`` (findings of a new user's trial)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from api.cli import app
from ingest.broker import BrokerState

runner = CliRunner()


def _state(pid: int, port: int) -> BrokerState:
    return BrokerState(pid=pid, port=port, controller_port=port + 1, data_dir="/x/data", log_dir="/x/logs",
                       cluster_id="c", started=0.0)


def test_the_demo_s_stop_hint_names_its_own_state_folder(monkeypatch):
    """``FIRSTFAULT_STATE_DIR=/tmp/x/mine make demo`` said "`.venv/bin/firstfault kafka stop` stops it": run as
    printed, that stopped the default folder's broker, another user's demo. With the folder not the default, or the
    variable set, the hint carries the variable, shell-quoted."""
    from api import demo

    monkeypatch.setattr(demo.broker, "status", lambda state_dir: _state(9898, 46159))
    monkeypatch.delenv("FIRSTFAULT_STATE_DIR", raising=False)
    assert demo.exit_line(Path(".firstfault"), True) == (
        "done; the broker on 127.0.0.1:46159 keeps running (pid 9898): `.venv/bin/firstfault kafka stop` stops it")
    assert demo.exit_line(Path("/tmp/x/mine"), True) == (
        "done; the broker on 127.0.0.1:46159 keeps running (pid 9898): "
        "`FIRSTFAULT_STATE_DIR=/tmp/x/mine .venv/bin/firstfault kafka stop` stops it")
    assert demo.stop_command(Path("/tmp/my demo")) == \
        "FIRSTFAULT_STATE_DIR='/tmp/my demo' .venv/bin/firstfault kafka stop"
    monkeypatch.setenv("FIRSTFAULT_STATE_DIR", ".firstfault")  # set, even to the default: said as set
    assert demo.stop_command(Path(".firstfault")) == "FIRSTFAULT_STATE_DIR=.firstfault .venv/bin/firstfault kafka stop"


def test_the_demo_s_exit_names_the_broker_running_then(monkeypatch):
    """The broker stopped and started again under a running demo has a new pid: Ctrl-C named the pid of the demo's
    start. The closing line reads the broker's status at exit; with none running it says so."""
    from api import demo

    monkeypatch.delenv("FIRSTFAULT_STATE_DIR", raising=False)
    seen: list[Path] = []
    now: list[BrokerState | None] = [_state(4242, 40001)]

    def status(state_dir: Path) -> BrokerState | None:
        seen.append(state_dir)
        return now[0]

    monkeypatch.setattr(demo.broker, "status", status)
    assert demo.exit_line(Path(".firstfault"), False) == (
        "stopped; the broker on 127.0.0.1:40001 keeps running (pid 4242): `.venv/bin/firstfault kafka stop` stops it")
    now[0] = None
    assert demo.exit_line(Path(".firstfault"), False) == \
        "stopped; no broker is running from .firstfault now (it was stopped under the demo)"
    assert seen == [Path(".firstfault")] * 2


def _words(text: str) -> str:
    """``text`` without click's error box and its wrapping: one space between words."""
    return " ".join(text.replace("│", " ").split())


def _help(*cmd: str) -> str:
    r = runner.invoke(app, [*cmd, "--help"], env={"COLUMNS": "200"})
    assert r.exit_code == 0, r.output
    return r.output


@pytest.mark.parametrize("cmd,option,choices", [
    (("diagnose",), "--format", "<json|table>"),
    (("diagnose",), "--fail-on", "<critical|error|warning|info>"),
    (("sql",), "--format", "<table|csv|json|parquet>"),
    (("report", "degraded-links"), "--format", "<json|html|csv|parquet>"),
])
def test_help_shows_an_option_s_choices(cmd, option, choices, tmp_path):
    """``--help`` showed ``--format -f <str> json or table`` and ``--fail-on <str>`` (a new user's trial): the
    choices are the type; the same values are accepted, another exits 2 naming them."""
    line = next(x for x in _help(*cmd).splitlines() if f"│ {option} " in x)
    assert choices in line and "<str>" not in line, line
    values = choices.strip("<>").split("|")
    # a wrong value: a usage error before anything runs (no lake, no file needed)
    r = runner.invoke(app, [*cmd, *(["x.log"] if cmd == ("diagnose",) else []), option, "xlsx"])
    assert r.exit_code == 2 and f"'xlsx' is not one of {', '.join(map(repr, values))}" in _words(r.output), r.output
    if cmd == ("diagnose",):  # each value is accepted: the file is read and the report written
        log = tmp_path / "node07.log"
        log.write_text("[Mon Dec  1 03:04:05 2026] NVRM: Xid (PCI:0000:1b:00): 79, pid=1, GPU has fallen off the "
                       "bus.\n")
        for v in values:
            r = runner.invoke(app, ["diagnose", str(log), option, v])
            assert r.exit_code in (0, 3), (v, r.output)


def test_help_names_a_file_option_file_and_says_what_the_demo_does():
    """A file option's placeholder is ``<file>`` everywhere (``sql -o`` and ``--fleet-config`` said ``<path>``), and
    the demo's summary says what it does ("The main job on the embedded default: …" did not)."""
    for cmd, option in ((("sql",), "--output"), (("diagnose",), "--fleet-config"), (("diagnose",), "--config"),
                        (("report", "degraded-links"), "--output")):
        line = next(x for x in _help(*cmd).splitlines() if f"│ {option} " in x)
        assert " <file> " in line and "<path>" not in line, line
    summary = next(x for x in _help().splitlines() if "│ demo " in x)
    assert "Start a local Kafka broker, ingest the bundled sample logs, print their incidents and serve the API" \
        in summary and "main job" not in summary, summary
