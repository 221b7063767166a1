"""The ``firstfault`` command's words, in-process (``typer.testing.CliRunner``; no broker, no subprocess): the
demo's closing line, ``--help``'s choices and placeholders, usage errors, ``sql``'s listing and the file-time note
of ``diagnose`` (findings of a new user's trial)."""

from __future__ import annotations

from pathlib import Path

import orjson
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


def test_hints_name_firstfault_as_it_can_be_pasted_in_the_current_folder(monkeypatch, tmp_path):
    """The stop and status hints said ``.venv/bin/firstfault`` from any folder: from a job's log folder it named
    nothing (a fresh user's trial). From the repository's folder it is ``.venv/bin/firstfault``; elsewhere
    ``firstfault`` when PATH finds this install's, else its absolute path."""
    import shutil
    import sys

    from api import demo

    mine = Path(sys.prefix) / "bin" / "firstfault"
    assert demo.program() == ".venv/bin/firstfault"  # the tests run in the repository's folder
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    assert demo.program() == str(mine) and Path(demo.program()).samefile(mine)
    monkeypatch.setenv("PATH", f"{mine.parent}:/usr/bin:/bin")
    assert shutil.which("firstfault") and demo.program() == "firstfault"
    assert demo.stop_command(Path("/tmp/x")) == "FIRSTFAULT_STATE_DIR=/tmp/x firstfault kafka stop"


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


def test_the_demo_says_a_broker_already_running_as_kafka_start_does(monkeypatch, tmp_path):
    """A second ``make demo ARGS=--once`` with the broker up said "broker ready on … after 0.0 s", as if it had just
    started one (a second new user's trial); ``kafka start`` says "already running": so does the demo, with its
    pid. One it starts is "ready … after N s"."""
    from rich.console import Console

    from api import demo
    from schemas.settings import Settings

    class Stop(Exception):
        pass

    def ensure_topics(*a, **k):
        raise Stop  # the broker line is said: the rest needs a broker

    now: list[BrokerState | None] = [_state(4242, 40001)]
    monkeypatch.setattr(demo.broker, "status", lambda state_dir: now[0])
    monkeypatch.setattr(demo.broker, "start", lambda state_dir, log: _state(4242, 40001))
    monkeypatch.setattr(demo.broker, "ensure_topics", ensure_topics)
    for running, said in ((True, "broker already running on 127.0.0.1:40001 (pid 4242, data /x/data)"),
                          (False, "broker ready on 127.0.0.1:40001 (pid 4242, data /x/data) after 0.0 s")):
        now[0] = _state(4242, 40001) if running else None
        console = Console(record=True, width=200)
        with pytest.raises(Stop):
            demo._run_demo(Settings(state_dir=tmp_path), once=True, port=None, console=console, out=None)
        assert console.export_text().splitlines()[1] == said


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
    # pydantic's "Value error, " before it (typer 0.26+) is the library's wording, not the tool's (a fresh user's trial)
    said = "Invalid value for '--format' / '-f'" if option == "--format" else f"Invalid value for '{option}'"
    assert f"{said}: 'xlsx' is not one of" in _words(r.output) and "Value error" not in r.output, r.output
    if cmd == ("diagnose",):  # each value is accepted: the file is read and the report written
        log = tmp_path / "node07.log"
        log.write_text("[Mon Dec  1 03:04:05 2026] NVRM: Xid (PCI:0000:1b:00): 79, pid=1, GPU has fallen off the "
                       "bus.\n")
        for v in values:
            r = runner.invoke(app, ["diagnose", str(log), option, v])
            assert r.exit_code in (0, 3), (v, r.output)


@pytest.mark.parametrize("port,said", [("99999", "must be at most 65535, not 99999"),
                                       ("-1", "must be at least 0, not -1"),
                                       ("abc", "must be a whole number, not 'abc'")])
def test_a_port_out_of_range_or_no_number_is_said_in_the_tool_s_words(port, said):
    """``serve --port 99999`` said pydantic's "Input should be less than or equal to 65535", ``--port abc`` "unable
    to parse string as an integer" (a second new user's trial): what it must be, and what was given; exit 2."""
    r = runner.invoke(app, ["serve", "--port", port], env={"COLUMNS": "200"})
    assert r.exit_code == 2 and f"Invalid value for '--port': {said}" in _words(r.output), r.output
    assert "Input should" not in r.output


def test_diagnose_help_lists_its_exit_codes():
    """``diagnose --help`` listed no exit codes: a CI gate's author read them in the README only (a second new
    user's trial). One line after the options, as docs/diagnose.md's table says them, and 141, which the README's
    exit codes list and the epilog left out (a fresh user's trial: `diagnose … | head -1` exited 141)."""
    lines = [x.strip() for x in _help("diagnose").splitlines() if x.strip()]
    assert lines[-1] == ("exit 0 ok, 1 runtime failure, 2 usage/config error or nothing readable, 3 --fail-on matched, "
                         "141 stdout's reader left (| head)")
    assert lines[-2].startswith("╰"), lines[-3:]  # after the options' box


def test_report_help_says_what_a_row_is_and_where_the_rest_is():
    """``report degraded-links --help`` said what is listed but not that a row is one physical link (both ends, its
    peer), that rows are worst first with a next action, nor where the report is explained: a new operator met
    ``peer`` and ``next_action`` in the output first (a fresh user's trial)."""
    text = _words(_help("report", "degraded-links"))
    for words in ("One row per physical link, worst first (down, flapped, errors), each with its next action",
                  "nvidia-smi nvlink -R", "a flap across the hour's boundary is in both hours", "docs/report.md"):
        assert words in text, (words, text)
    summary = next(x for x in _help("report").splitlines() if "│ degraded-links " in x)
    assert "flapping links, for one hour." in summary and "One row" not in summary, summary


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


@pytest.fixture
def empty_lake(tmp_path, monkeypatch):
    from ingest.lake import Lake

    Lake(str(tmp_path / "lake")).init()
    monkeypatch.setenv("FIRSTFAULT_LAKE", str(tmp_path / "lake"))
    monkeypatch.setenv("FIRSTFAULT_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_sql_says_its_usage_errors_as_the_other_commands_do(empty_lake):
    """``report degraded-links``'s usage errors were click's boxed ones, ``sql``'s plain lines (a new user's trial):
    both say them through click now (its "Usage:" and "Invalid value for …"), exit 2 as before, and nothing is
    written."""
    (empty_lake / "keep.csv").write_text("kept\n")
    for args, said in ((["-o", "r.txt"], "Invalid value for --format: say --format for r.txt"),
                       (["-f", "parquet"], "Invalid value for --format: parquet needs --output FILE"),
                       (["-f", "table", "-o", "t.csv"], "Invalid value for --format: table is for the terminal"),
                       (["-o", "keep.csv"], "Invalid value for --output: keep.csv exists (--force replaces it)")):
        r = runner.invoke(app, ["sql", "SELECT 1 AS a", *args])
        assert r.exit_code == 2 and r.output.count("Usage: ") == 1 and said in _words(r.output), (args, r.output)
        # alone: no "lake: …" before it (a fresh user's trial)
        assert r.stderr.startswith("Usage: "), (args, r.stderr)
    r = runner.invoke(app, ["report", "degraded-links", "-o", "r.txt"])
    assert r.exit_code == 2 and "Usage: " in r.output and "Invalid value for --format: say --format" in \
        _words(r.output), r.output
    # as --help says it ("from --output's name, else json" read as json for r.txt: a fresh user's trial)
    assert "default: from --output's suffix (.json .html .csv .parquet); json without -o; another suffix needs " \
        "--format" in _words(_help("report", "degraded-links"))
    assert sorted(p.name for p in empty_lake.iterdir()) == ["keep.csv", "lake"]
    assert (empty_lake / "keep.csv").read_text() == "kept\n"
    r = runner.invoke(app, ["sql", "SELECT 1 AS a", "-o", "keep.csv", "--force"])
    assert r.exit_code == 0 and (empty_lake / "keep.csv").read_text() == '"a"\n1\n', r.output


def test_sql_writes_times_in_csv_as_the_report_and_the_api_do(empty_lake):
    """A ``TIMESTAMPTZ`` in ``sql -f csv`` read ``2026-11-30 03:12:00.000000Z`` (Arrow's CSV writer), the report's CSV
    and the API ``2026-11-30T03:12:00.000000Z``: the same ISO 8601 form in UTC, whatever the session's time zone; a
    time without a zone is written as it is."""
    q = ("SELECT TIMESTAMPTZ '2026-11-30 04:12:00.5+01' AS t, TIMESTAMP '2026-11-30 03:12:00' AS naive, "
         "TIMESTAMPTZ '2026-11-30 03:12:00+00' AS whole")
    r = runner.invoke(app, ["sql", q, "-f", "csv"])
    assert r.exit_code == 0, r.output
    assert r.stdout.splitlines() == ['"t","naive","whole"',
                                     '"2026-11-30T03:12:00.500000Z",2026-11-30 03:12:00.000000,'
                                     '"2026-11-30T03:12:00.000000Z"']


def test_sql_says_an_invalid_query_apart_from_one_that_fails(empty_lake):
    """``SELECT * FROM nosuch`` exits 2 (a usage error) but said "query failed", the words of a query that fails
    while it runs, exit 1 (README): it is "query invalid"."""
    for q, code, said in (("SELECT * FROM nosuch", 2, "query invalid: Catalog Error: Table with name nosuch"),
                          ("SELECT nocol FROM events", 2, "query invalid: Binder Error"),
                          ("SELECT 'x'::INTEGER", 1, "query failed: Conversion Error"),
                          ("SELECT * FROM read_csv('/etc/passwd')", 2, "query refused: Permission Error")):
        r = runner.invoke(app, ["sql", q])
        assert r.exit_code == code and said in r.output and "Usage: " not in r.output, (q, r.output)


def test_sql_of_a_table_that_is_not_there_lists_the_views(empty_lake):
    """``SELECT * FROM nope`` said DuckDB's "Catalog Error: Table with name nope does not exist!" alone (a fresh
    user's trial): the views and table macro the lake has follow it, as ``sql`` without a query lists them."""
    views = ("The lake's views: events, incident_evidence, incident_versions, incidents, link_samples, topology; the "
             "table macro events_between(lo, hi)")
    for q, said in (("SELECT * FROM nope", "Table with name nope does not exist!"),
                    ("SELECT * FROM events_betwen(1, 2)", "Table Function with name events_betwen does not exist!")):
        r = runner.invoke(app, ["sql", q])
        assert r.exit_code == 2 and _words(r.output).endswith(f"query invalid: Catalog Error: {said} {views}"), r.output
    r = runner.invoke(app, ["sql", "SELECT nocol FROM events"])  # another catalog or binder error: as it was
    assert r.exit_code == 2 and "The lake's views" not in r.output, r.output


def test_sql_without_a_query_ends_its_listing_with_how_to_see_columns(empty_lake):
    """``firstfault sql`` lists the views and table macros, not their columns (a new user's trial): its last line
    says the query that shows them, on stderr (a csv listing stays csv)."""
    r = runner.invoke(app, ["sql"])
    lines = r.output.splitlines()
    assert r.exit_code == 0 and lines[-2:] == ["7 rows", 'columns: firstfault sql "DESCRIBE events" (or another '
                                                           'view; events_between(lo, hi) is a macro)'], lines
    assert "│ events_between(lo, hi) │ TABLE MACRO │" in r.output
    r = runner.invoke(app, ["sql", "DESCRIBE events", "-f", "csv"])
    assert r.exit_code == 0 and r.output.splitlines()[2].startswith('"event_id","VARCHAR"'), r.output
    assert "DESCRIBE" not in r.output  # a query: no hint


def test_the_file_time_note_is_a_short_line_and_a_wrapped_line_per_point():
    """``diagnose``'s note on events timed by their file's modification time was one line of ~560 characters (a new
    user's trial): a short first line, then an indented line per source and one for the copy's advice, wrapped to the
    terminal's width with the continuation indented under its point."""
    import pyarrow as pa

    from api.diagnose import mtime_note

    events = pa.table({"source": ["dmesg", "dmesg", "nvml", "nccl"], "ts_basis": ["file", "file", "file", "line"]})
    lines = mtime_note(events, width=60).splitlines()
    assert lines == [
        "3 events timed by their file's modification time:",
        "  - 2 kernel lines with a raw dmesg stamp (seconds since",
        "    boot, counted back from the file's time) or none:",
        "    `dmesg -T` or `journalctl -k -o short-iso` print",
        "    wall-clock times",
        "  - 1 NVML/nvidia-smi line with no time printed, or a stamp",
        "    of a form not read: capture `date` beside it, or send",
        "    the poller's JSON samples",
        "  - a copied file moves them: copy with `cp -p`, `scp -p` or",
        "    `rsync -t`, or set it back with `touch -d`"], lines
    assert mtime_note(events).splitlines()[1] == "  - 2 kernel lines with a raw dmesg stamp (seconds since boot, " \
        "counted back from the file's time) or none: `dmesg -T` or `journalctl -k -o short-iso` print wall-clock times"


def test_the_file_time_note_says_a_record_time_that_was_none_apart_from_raw_stamps():
    """A record whose envelope time was no time (a host clock reset to 1970: ``details.envelope_ts_rejected``) is timed
    by its file too; the note called its kernel line one "with a raw dmesg stamp … or none", pointing at ``dmesg -T``
    where the shipping host's clock is at fault (a break-it pass)."""
    import pyarrow as pa

    from api.diagnose import mtime_note

    events = pa.table({"source": ["dmesg", "dmesg"], "ts_basis": ["file", "file"],
                       "details": ['{"envelope_ts_rejected":5250000,"ts_upper_bound":true}', None]})
    assert mtime_note(events).splitlines()[:3] == [
        "2 events timed by their file's modification time:",
        "  - 1 kernel line with a raw dmesg stamp (seconds since boot, counted back from the file's time) or none: "
        "`dmesg -T` or `journalctl -k -o short-iso` print wall-clock times",
        "  - 1 line of a record whose time is no time from 2000 to 2100, or more than a day after the file's time "
        "(details.envelope_ts_rejected keeps it): the shipping host's clock"]


def test_diagnose_prints_the_file_time_note_wrapped_to_the_terminal(tmp_path, monkeypatch):
    log = tmp_path / "node07.dmesg.log"
    log.write_text("[  12.5] NVRM: Xid (PCI:0000:3b:00): 79, pid=0, GPU has fallen off the bus.\n")
    monkeypatch.setenv("COLUMNS", "72")
    from api import cli

    monkeypatch.setattr(cli, "err", cli.cli_console("stderr"))  # made at import: COLUMNS read again
    r = runner.invoke(app, ["diagnose", str(log), "-f", "json"])
    assert r.exit_code == 0, r.output
    note = r.output[r.output.index("1 event timed by"):].splitlines()[:6]
    assert note == ["1 event timed by its file's modification time:",
                    "  - 1 kernel line with a raw dmesg stamp (seconds since boot, counted",
                    "    back from the file's time) or none: `dmesg -T` or",
                    "    `journalctl -k -o short-iso` print wall-clock times",  # a command is not cut
                    "  - a copied file moves them: copy with `cp -p`, `scp -p` or `rsync -t`,",
                    "    or set it back with `touch -d`"], note
    assert all(len(x) <= 72 for x in note)


def test_diagnose_titles_its_table_with_its_counts_as_the_demo_does(tmp_path):
    """``diagnose`` titled its table "Incidents" where ``demo``, ``run --once`` and ``correlate --once`` say "20
    incidents (11 open, 9 resolved)" (a fresh user's trial); none is "0 incidents", as theirs (it was "Incidents:
    none", unlike every other run's title: a helper's pass). The JSON says the same as before: no incident."""
    log = tmp_path / "node07.dmesg.log"
    log.write_text("[Mon Dec  1 03:04:05 2026] NVRM: Xid (PCI:0000:3b:00): 79, pid=0, GPU has fallen off the bus.\n")
    r = runner.invoke(app, ["diagnose", str(log)], env={"COLUMNS": "200"})
    assert r.exit_code == 0 and r.stdout.splitlines()[0] == "1 incident (1 resolved)", r.output
    quiet = tmp_path / "node08.log"
    quiet.write_text("[Mon Dec  1 03:04:05 2026] systemd[1]: Started Session 1 of user root.\n")
    r = runner.invoke(app, ["diagnose", str(quiet)], env={"COLUMNS": "200"})
    assert r.exit_code == 0 and r.stdout.splitlines() == ["0 incidents"], r.output
    r = runner.invoke(app, ["diagnose", str(quiet), "--format", "json"], env={"COLUMNS": "200"})
    assert r.exit_code == 0 and orjson.loads(r.stdout) == {"events": [], "incidents": []}, r.output
    r = runner.invoke(app, ["diagnose", str(quiet)], env={"COLUMNS": "200"})
    # and stderr says what a silent hang needs (tests/corpus/006 read "Incidents: none" and nothing more: a fresh
    # user's trial), not when a symptom was given or an incident found
    hint = "no incident: nothing in these logs is a fault. If a job hung or failed anyway, say so with --symptom"
    assert hint in " ".join(r.stderr.split()), r.stderr
    r = runner.invoke(app, ["diagnose", str(quiet), "--symptom", "hang"], env={"COLUMNS": "200"})
    assert r.exit_code == 0 and "no incident:" not in r.stderr and r.stdout.startswith("1 incident"), r.output
    r = runner.invoke(app, ["diagnose", str(log)], env={"COLUMNS": "200"})
    assert "no incident:" not in r.stderr, r.stderr


def test_sql_prints_one_block_per_row_when_the_columns_do_not_fit(empty_lake, monkeypatch):
    """``SELECT * FROM events LIMIT 2`` squeezed 33 columns to 1 - 3 characters each, and one row of ``incidents``
    took 143 lines (a new user's trial): when the columns do not fit the terminal, one block per row (a line per
    column, as DuckDB's ``.mode line``), said on stderr; a table that fits is still a table."""
    from api import cli
    from api.sql import TABLE_MIN_COLUMN, table_fits

    monkeypatch.setenv("COLUMNS", "60")
    monkeypatch.setattr(cli, "out", cli.cli_console())  # made at import: COLUMNS read again
    cols = ", ".join(f"'v{i}' AS column_{i}" for i in range(6))
    r = runner.invoke(app, ["sql", f"SELECT {cols}, repeat('x', 70) AS long_value FROM range(2)"])
    assert r.exit_code == 0, r.output
    blocks = [f"-[ row {n} ]-\n" + "".join(f"column_{i}    v{i}\n" for i in range(6)) + f"long_value  {'x' * 48}\n"
              f"            {'x' * 22}\n" for n in (1, 2)]
    assert r.stdout == "\n".join(blocks), r.stdout
    assert r.stderr.splitlines()[1:] == ["too wide for the terminal: one block per row (-f csv / -f json for a "
                                         "file)", "2 rows"], r.stderr
    # narrow: the table, its long value folded in its column; no note
    r = runner.invoke(app, ["sql", "SELECT 'node07' AS host, 79 AS xid, repeat('y', 100) AS message"])
    assert r.exit_code == 0 and r.stdout.splitlines()[1] == "┃ host   ┃ xid ┃ message" + " " * 35 + "┃", r.stdout
    assert "too wide" not in r.stderr and r.stderr.splitlines()[-1] == "1 row", r.stderr
    # the rule: each column at least TABLE_MIN_COLUMN wide (or as its widest cell), with the borders
    names = ["a" * 20] * 4
    assert table_fits(names, [], 4 * TABLE_MIN_COLUMN + 13) and not table_fits(names, [], 4 * TABLE_MIN_COLUMN + 12)
    assert table_fits(["n", "x"], [["1", "2"]], 9) and not table_fits(["n", "x"], [["1", "2"]], 8)


def test_sql_right_aligns_columns_of_numbers(empty_lake, monkeypatch):
    """``SELECT host, xid, count(*) … FROM events`` printed ``xid`` 13 and 119 flush left, as text (a new user's
    trial): a column of numbers (ints, floats, decimals; nulls among them) is right-aligned, as DuckDB's and psql's
    tables do; text, booleans and an all-null column stay left."""
    from api import cli

    monkeypatch.setenv("COLUMNS", "100")
    monkeypatch.setattr(cli, "out", cli.cli_console())
    r = runner.invoke(app, ["sql", "SELECT * FROM (VALUES ('node32', 13, 1.5::DECIMAL(5, 2), 2.5::DOUBLE, true, NULL), "
                                   "('node023', 119, 100.25, NULL, false, NULL)) t(host, xid, d, f, ok, nothing)"])
    assert r.exit_code == 0, r.output
    assert r.stdout.splitlines()[3:5] == [
        "│ node32  │  13 │   1.50 │ 2.5 │ True  │         │",
        "│ node023 │ 119 │ 100.25 │     │ False │         │",
    ], r.stdout


def test_the_demo_s_stop_hint_quotes_a_folder_that_is_not_utf_8(monkeypatch):
    """A state folder whose name is not UTF-8 was quoted ``'/…/st\\udcffdir'``, which names another folder when
    pasted (a break-it pass): bash's ``$'…'`` with ``\\xNN`` for its bytes that are not UTF-8, which bash reads back
    as the folder's own bytes."""
    import os
    import subprocess

    from api import demo

    monkeypatch.delenv("FIRSTFAULT_STATE_DIR", raising=False)
    folder = os.fsdecode(b"/tmp/st\xffdir/\xc3\xa9t\xc3 it's\\ \x1b")
    said = demo.stop_command(Path(folder))
    assert said == "FIRSTFAULT_STATE_DIR=$'/tmp/st\\xffdir/\u00e9t\\xc3 it\\'s\\\\ \\x1b' " \
        ".venv/bin/firstfault kafka stop"
    quoted = said.removeprefix("FIRSTFAULT_STATE_DIR=").removesuffix(" .venv/bin/firstfault kafka stop")
    r = subprocess.run(["bash", "-c", f"printf %s {quoted}"], capture_output=True, check=True)
    assert r.stdout == os.fsencode(folder)
    assert demo.shell_quote("/tmp/my demo") == "'/tmp/my demo'"  # UTF-8: as shlex.quote


def test_help_lists_each_command_in_one_clean_sentence():
    """``firstfault --help`` broke ``diagnose``'s and ``sql``'s entries mid-sentence (their docstrings' line breaks;
    a new user's trial): at 200 columns every command is one line, ending its sentence."""
    box = _help().split("Commands")[1]
    entries = [x.strip("│ ").rstrip() for x in box.splitlines()[1:] if x.startswith("│")]
    assert [e.split()[0] for e in entries] == ["diagnose", "demo", "run", "ingest", "correlate", "serve", "sql",
                                               "send", "kafka", "report", "lake"], entries
    assert all(e.endswith(".") for e in entries), entries
    assert entries[0] == "diagnose   Find the first fault in local log files and print its incidents, without Kafka."


def test_every_command_list_shows_each_command_in_one_clean_sentence():
    """``firstfault kafka --help`` and ``lake --help`` broke ``start``'s, ``topics``', ``status``' and ``compact``'s
    entries mid-sentence ("print its address (on stdout, alone: a" then " script reads it)": rich keeps the line
    breaks of a docstring's first paragraph in a command list; a fresh user's trial). Every command of every group
    is listed in one line (a ``short_help``, or a docstring whose first paragraph is one line) ending its sentence."""
    import inspect

    import typer.main

    def entries(group, path):
        for name, c in getattr(group, "commands", {}).items():
            yield (*path, name), inspect.cleandoc(c.short_help or c.help or "").split("\n\n")[0]
            yield from entries(c, (*path, name))

    listed = dict(entries(typer.main.get_command(app), ()))
    assert {p for p, h in listed.items() if "\n" in h or not h.endswith(".")} == set(), listed
    assert listed["kafka", "start"] == "Start the local broker and print its address."
    for group in ("kafka", "lake"):
        box = runner.invoke(app, [group, "--help"], env={"COLUMNS": "200"}).output.split("Commands")[1]
        assert all(x.split("│")[1].split()[0] in {"start", "topics", "stop", "status", "compact"}
                   for x in box.splitlines()[1:] if x.startswith("│")), box


def test_kafka_start_says_a_broker_already_running(monkeypatch):
    """``kafka start`` on a running broker printed its address alone, exit 0 (a new user's trial): stderr says it was
    running, with its pid; stdout is the address alone still (a script reads it)."""
    from ingest import broker

    async def no_topics(*a, **k):
        return {}

    monkeypatch.setattr(broker, "status", lambda state_dir: _state(4242, 42237))
    monkeypatch.setattr(broker, "ensure_topics", no_topics)
    r = runner.invoke(app, ["kafka", "start"])
    assert r.exit_code == 0 and r.stdout == "127.0.0.1:42237\n", r.output
    assert r.stderr == "already running: 127.0.0.1:42237 (pid 4242)\n", r.stderr


def test_kafka_stop_names_the_broker_it_stopped(monkeypatch):
    """``kafka stop`` said "stopped" alone, which a fresh user's trial did not see as an answer: it names the broker
    (its address and pid); a second one says "not running" and the folder it looked in (state_dir is relative: run
    from another folder, "not running" alone read as the demo's broker being down, a fresh user's trial)."""
    from ingest import broker

    running = [True]

    def stop(state_dir, timeout_s=30.0):
        was, running[0] = running[0], False
        return was

    monkeypatch.setattr(broker, "read_state", lambda state_dir: _state(4242, 42237) if running[0] else None)
    monkeypatch.setattr(broker, "stop", stop)
    monkeypatch.setattr(broker, "running_elsewhere", lambda state_dir: [])
    r = runner.invoke(app, ["kafka", "stop"])
    assert r.exit_code == 0 and r.stderr == "stopped the broker on 127.0.0.1:42237 (pid 4242)\n", r.stderr
    r = runner.invoke(app, ["kafka", "stop"])
    assert r.exit_code == 0 and _words(r.stderr).startswith("not running: no local broker under "), r.stderr


@pytest.mark.parametrize("command", ["stop", "status"])
def test_kafka_stop_and_status_with_another_folder_name_the_folder_and_the_broker_s_own(command, monkeypatch,
                                                                                       tmp_path):
    """``kafka stop`` under the wrong state folder (another shell's folder, the demo run elsewhere) said "not
    running" and no more, while the demo's broker ran on: it names the folder it looked in and where that came
    from, and the folder of the one local broker that runs elsewhere, as a command to paste; several are named and
    none picked; none, the way to name one."""
    from ingest import broker

    demo = tmp_path / "demo folder" / ".firstfault"
    monkeypatch.setenv("FIRSTFAULT_STATE_DIR", str(tmp_path / "mine"))
    monkeypatch.setattr(broker, "running_elsewhere", lambda state_dir: [(demo, 4242)])
    r = runner.invoke(app, ["kafka", command])
    assert r.exit_code == (0 if command == "stop" else 1)
    assert _words(r.stderr) == (
        f"not running: no local broker under {tmp_path / 'mine'} (state_dir, from FIRSTFAULT_STATE_DIR). One runs "
        f"under {demo} (pid 4242): FIRSTFAULT_STATE_DIR='{demo}' .venv/bin/firstfault kafka {command}"), r.stderr
    monkeypatch.setattr(broker, "running_elsewhere",
                        lambda state_dir: [(tmp_path / f"s{i}", 100 + i) for i in range(5)])
    said = _words(runner.invoke(app, ["kafka", command]).stderr)
    assert f"Local brokers run under {tmp_path / 's0'} (pid 100); {tmp_path / 's1'} (pid 101); {tmp_path / 's2'} " \
        "(pid 102) and 2 more: FIRSTFAULT_STATE_DIR=<its folder> .venv/bin/firstfault kafka " + command in said, said
    monkeypatch.setattr(broker, "running_elsewhere", lambda state_dir: [])
    said = _words(runner.invoke(app, ["kafka", command]).stderr)
    assert said.endswith("A broker started under another folder is named by it: FIRSTFAULT_STATE_DIR=<that folder> "
                         f".venv/bin/firstfault kafka {command} (the demo's is .firstfault in the folder `make demo` "
                         "ran in)"), said


def test_send_with_no_broker_here_names_the_one_local_broker_running_elsewhere_with_its_address(monkeypatch,
                                                                                              tmp_path):
    """``send`` from a job's log folder (no broker under its ``.firstfault``, the demo's under another folder) said
    only how to look the demo's broker up (a fresh user's trial): it names that broker's folder, pid and address and
    the setting to paste; with none or several running elsewhere, how to find one. Exit 2, a configuration's gap."""
    from ingest import broker

    demo = tmp_path / "demo folder" / ".firstfault"
    states = {demo: _state(4242, 40001)}
    monkeypatch.setenv("FIRSTFAULT_STATE_DIR", str(tmp_path / "job"))
    monkeypatch.delenv("FIRSTFAULT_KAFKA_BOOTSTRAP", raising=False)
    monkeypatch.setattr(broker, "status", lambda state_dir: None)
    monkeypatch.setattr(broker, "read_state", lambda state_dir: states.get(state_dir))
    monkeypatch.setattr(broker, "running_elsewhere", lambda state_dir: [(demo, 4242)])
    (tmp_path / "node07.dmesg.log").write_text("kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=0, GPU has fallen off\n")
    r = runner.invoke(app, ["send", "--topic", "dmesg", str(tmp_path / "node07.dmesg.log")])
    assert (r.exit_code, _words(r.stderr)) == (2, (
        f"no Kafka bootstrap configured and no local broker running under {tmp_path / 'job'} (state_dir, from "
        f"FIRSTFAULT_STATE_DIR); one runs under {demo} (pid 4242) on 127.0.0.1:40001: set "
        f"FIRSTFAULT_KAFKA_BOOTSTRAP=127.0.0.1:40001 (or FIRSTFAULT_STATE_DIR='{demo}') to use it, or run "
        "`firstfault kafka start`")), r.stderr
    states[tmp_path / "other"] = _state(4343, 40003)  # several (other users' tests): each with its address
    monkeypatch.setattr(broker, "running_elsewhere", lambda state_dir: [(demo, 4242), (tmp_path / "other", 4343)])
    r = runner.invoke(app, ["send", "--topic", "dmesg", str(tmp_path / "node07.dmesg.log")])
    assert r.exit_code == 2 and _words(r.stderr).endswith(
        f"; local brokers run under {demo} (pid 4242) on 127.0.0.1:40001; {tmp_path / 'other'} (pid 4343) on "
        "127.0.0.1:40003: set FIRSTFAULT_KAFKA_BOOTSTRAP=<its address> to use one, or run `firstfault kafka start`"), \
        r.stderr
    monkeypatch.setattr(broker, "running_elsewhere", lambda state_dir: [])
    r = runner.invoke(app, ["send", "--topic", "dmesg", str(tmp_path / "node07.dmesg.log")])
    assert r.exit_code == 2 and "`FIRSTFAULT_STATE_DIR=<it> firstfault kafka status` prints its address" in \
        _words(r.stderr), r.stderr


def test_sql_past_its_time_limit_is_interrupted_and_its_thread_ends(empty_lake, monkeypatch):
    """`firstfault sql` of a slow query (a big cross join) past sql_timeout_s: its connection's ``interrupt()`` stops
    it, exit 1 saying so, and the query's thread (``store.bounded_query``'s) has ended soon after, not run on (the
    bound leaves room for a loaded CI machine: it tells "ended" from "ran on", not a speed)."""
    import threading
    import time

    monkeypatch.setenv("FIRSTFAULT_SQL_TIMEOUT_S", "1")
    before = {t for t in threading.enumerate() if t.name == "sql-query"}
    t0 = time.monotonic()
    r = runner.invoke(app, ["sql", "SELECT count(*) FROM range(1000000000000) a, range(1000) b"])
    assert (r.exit_code, r.stderr.splitlines()[-1]) == (
        1, "query failed: the query ran longer than 1 s (sql_timeout_s) and was stopped"), r.stderr
    left = {t for t in threading.enumerate() if t.name == "sql-query"} - before
    for th in left:
        th.join(max(0.0, t0 + 30 - time.monotonic()))
    assert time.monotonic() - t0 < 30 and not any(th.is_alive() for th in left)


def test_sql_refuses_two_statements_saying_to_run_them_one_at_a_time(empty_lake):
    r = runner.invoke(app, ["sql", "-"], input="SELECT 1; SELECT 2;")
    assert r.exit_code == 2 and r.stderr.splitlines()[-1] == \
        "query refused: send exactly one statement (got 2): run them one at a time", r.stderr
    r = runner.invoke(app, ["sql", "-"], input="-- nothing")
    assert r.exit_code == 2 and r.stderr.splitlines()[-1] == \
        "query refused: send exactly one statement (got 0)", r.stderr


COMMANDS = [("diagnose",), ("demo",), ("run",), ("ingest",), ("correlate",), ("serve",), ("sql",), ("send",),
            ("kafka", "start"),
            ("kafka", "topics"), ("kafka", "stop"), ("kafka", "status"), ("report", "degraded-links"),
            ("lake", "compact")]


def test_the_readme_names_every_command():
    """``kafka topics`` was in ``kafka --help`` and docs/operations.md but not in the README's command block (a fresh
    user's trial): each command is named there, as ``firstfault <command>``, `` `<command>` `` or ``make demo``."""
    import re

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    missing = [" ".join(c) for c in COMMANDS if not re.search(r"(firstfault |`|make )" + " ".join(c) + r"\b", readme)]
    assert missing == [] and ".venv/bin/firstfault kafka topics " in readme, missing


@pytest.mark.parametrize("cmd", [(), ("kafka",), ("report",), ("lake",), *COMMANDS],
                         ids=lambda c: " ".join(c) or "firstfault")
def test_help_at_80_columns_cuts_no_word(cmd):
    """At a terminal's 80 columns rich cuts a word longer than its help column with "…": ``diagnose --help`` showed
    ``hang|failure[@HOST][:GPU…`` and ``report degraded-links --help`` ``<lake>/reports/degraded_links/da…`` (a fresh
    user's trial). Every help text wraps at its blanks instead."""
    r = runner.invoke(app, [*cmd, "--help"], env={"COLUMNS": "80", "TERMINAL_WIDTH": "80"})
    assert r.exit_code == 0 and "Usage:" in r.output, r.output
    assert max(map(len, r.output.splitlines())) <= 80
    assert [x for x in r.output.splitlines() if "…" in x] == [], r.output


@pytest.mark.parametrize("cmd", COMMANDS, ids=" ".join)
def test_help_shows_no_python_type_names(cmd):
    """``diagnose --help`` showed ``Usage: … {PATH}...``, ``PATH <list[str]>`` and ``--symptom <list[str]>`` (a fresh
    user's trial), ``--port`` ``<int range>``, ``sql``'s query ``<str>``: a required argument is its name, an
    optional one in brackets, and every value a placeholder of what it is."""
    text = _help(*cmd)
    usage = next(x for x in text.splitlines() if "Usage:" in x).split()
    want = {("diagnose",): ["[OPTIONS]", "PATH..."], ("sql",): ["[OPTIONS]", "[QUERY]"],
            ("send",): ["[OPTIONS]", "FILE..."]}.get(cmd, ["[OPTIONS]"])
    assert usage[usage.index(cmd[-1]) + 1:] == want, usage
    for raw in ("<list[", "<str>", "<int", "<float", "<path>", "{"):
        assert raw not in text, (raw, text)
    placeholders = {"--symptom": "<symptom>", "--port": "<port> [0<=x<=65535]", "--partitions": "<n> [1<=x<=10000]",
                    "--hour": "<hour>"}
    for option, shown in placeholders.items():
        line = next((x for x in text.splitlines() if f"│ {option} " in x), None)
        assert line is None or f" {shown} " in line, line


def test_kafka_status_says_a_configured_broker_is_another_one_not_checked(monkeypatch, tmp_path):
    """With ``FIRSTFAULT_KAFKA_BOOTSTRAP`` naming a running broker and no local one, ``kafka status`` said "… names
    127.0.0.1:N, not the local broker …" then "not running", which read as that broker being down (a fresh user's
    trial): no local broker under the state folder, and the configured one not checked. Exit codes are the local
    broker's, as documented (0 running, 1 not)."""
    from ingest import broker

    now: list[BrokerState | None] = [None]
    monkeypatch.setattr(broker, "status", lambda state_dir: now[0])
    monkeypatch.setenv("FIRSTFAULT_STATE_DIR", str(tmp_path))
    monkeypatch.setenv("FIRSTFAULT_KAFKA_BOOTSTRAP", "127.0.0.1:46159")
    r = runner.invoke(app, ["kafka", "status"], env={"COLUMNS": "300"})
    assert (r.exit_code, _words(r.output)) == (1, f"no local broker under {tmp_path}; kafka_bootstrap 127.0.0.1:46159 "
                                                  "(from FIRSTFAULT_KAFKA_BOOTSTRAP) is not the local broker (not "
                                                  "checked)")
    now[0] = _state(4242, 40001)
    r = runner.invoke(app, ["kafka", "status"], env={"COLUMNS": "300"})
    assert (r.exit_code, r.output.splitlines()) == (0, [
        f"kafka_bootstrap 127.0.0.1:46159 (from FIRSTFAULT_KAFKA_BOOTSTRAP) is not the local broker (not checked); the "
        f"local broker under {tmp_path}:", "127.0.0.1:40001 pid=4242 data=/x/data"]), r.output
    for local in ("127.0.0.1:40001", "localhost:40001", "[::1]:40001"):  # the local broker itself: its status alone
        monkeypatch.setenv("FIRSTFAULT_KAFKA_BOOTSTRAP", local)
        r = runner.invoke(app, ["kafka", "status"])
        assert (r.exit_code, r.output) == (0, "127.0.0.1:40001 pid=4242 data=/x/data\n"), local
    monkeypatch.delenv("FIRSTFAULT_KAFKA_BOOTSTRAP")  # a config file's value is said as the file's (a break-it pass)
    (tmp_path / "c.toml").write_text('kafka_bootstrap = "127.0.0.1:1"\n')
    r = runner.invoke(app, ["kafka", "status", "--config", str(tmp_path / "c.toml")], env={"COLUMNS": "300"})
    assert r.exit_code == 0 and f"kafka_bootstrap 127.0.0.1:1 (from {tmp_path / 'c.toml'}) is not" in _words(r.output)
    monkeypatch.setenv("FIRSTFAULT_KAFKA_BOOTSTRAP", "127.0.0.1:40001")
    monkeypatch.delenv("FIRSTFAULT_KAFKA_BOOTSTRAP")
    now[0] = None
    monkeypatch.setattr(broker, "running_elsewhere", lambda state_dir: [])
    r = runner.invoke(app, ["kafka", "status"])
    assert r.exit_code == 1 and _words(r.output).startswith(f"not running: no local broker under {tmp_path} "), r.output


def test_a_worker_s_end_line_says_how_long_it_ran_and_a_catch_up_how_long_it_took():
    """The demo and ``ingest --once`` say ``in 4.5 s`` (catching up); a worker stopped by a signal says how long it
    ran, which a fresh user read as catch-up time when both said ``in``."""
    from api.service import ingested_line
    from ingest.consumer import Health

    h = Health(records=2, lines=13, events=5)
    assert ingested_line(h, "lake", 4.52) == "ingested 2 Kafka records, 13 lines → 5 events in 4.5 s; lake: lake"
    assert ingested_line(h, "lake", 168.94, ran=True) == \
        "ingested 2 Kafka records, 13 lines → 5 events over 168.9 s of running; lake: lake"
    one = Health(records=1, lines=1, events=1)
    assert ingested_line(one, "l") == "ingested 1 Kafka record, 1 line → 1 event; lake: l"


def test_a_folders_files_under_hidden_folders_are_said_not_read(tmp_path):
    """A folder's hidden files and the files under its hidden folders are not read (``ingest.files.walk``: the lake
    ``firstfault ingest`` made there, ``.git``), but that went unsaid: a job folder whose logs sat under
    ``.cache/job1/`` said "no files found" with no reason, and beside a read file a hidden folder's Xid 79 was left
    out with no word (a break-it pass). stderr names them, one line per diagnose, by the hidden entry and its count;
    named, the hidden folder is read."""
    xid = "[Mon Feb  2 22:52:40 2026] NVRM: Xid (PCI:0000:4c:00): 79, pid=1, GPU has fallen off the bus.\n"
    (tmp_path / "only" / ".cache" / "job1").mkdir(parents=True)
    (tmp_path / "only" / ".cache" / "job1" / "node01.log").write_text(xid)
    r = runner.invoke(app, ["diagnose", str(tmp_path / "only"), "-f", "json"])
    said = " ".join(r.stderr.split())
    assert r.exit_code == 2 and "no files found" in said, r.stderr
    assert "1 file under hidden folders" in said and ".cache/ (1 file)" in said, r.stderr
    (tmp_path / "job" / ".cache" / "job1").mkdir(parents=True)
    (tmp_path / "job" / ".cache" / "job1" / "node01.log").write_text(xid)
    (tmp_path / "job" / ".git" / "objects").mkdir(parents=True)
    for i in range(3):
        (tmp_path / "job" / ".git" / "objects" / f"o{i}").write_text("x\n")
    (tmp_path / "job" / ".node03.log").write_text(xid)
    (tmp_path / "job" / "node02.log").write_text(xid)
    r = runner.invoke(app, ["diagnose", str(tmp_path / "job"), "-f", "json"])
    assert r.exit_code == 0, r.stderr
    assert {i["initiator"]["host"] for i in orjson.loads(r.stdout)["incidents"]} == {"node02"}
    said = [x for x in r.stderr.replace(str(tmp_path), "T").splitlines() if x.startswith("skipped, hidden")]
    assert said == ["skipped, hidden files and files under hidden folders (name one to read it): 5 files: "
                    "T/job/.cache/ (1 file), T/job/.git/ (3 files), T/job/.node03.log"], r.stderr
    r = runner.invoke(app, ["diagnose", str(tmp_path / "job" / ".cache"), "-f", "json"])
    assert r.exit_code == 0 and "hidden" not in r.stderr, r.stderr
    assert {i["initiator"]["host"] for i in orjson.loads(r.stdout)["incidents"]} == {"node01"}
