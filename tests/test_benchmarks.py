"""The ingest benchmark runs end to end in its quick mode (a smoke test: nothing here asserts a speed).

The benchmark's numbers mean something only on a quiet machine with the full input
(``python -m benchmarks.ingest``, benchmarks/README.md); here we check that every mode
runs through the real broker, reports the documented keys, and loses no line or event.
"""

from __future__ import annotations

import contextlib
import io
import json

import pytest

from benchmarks import ingest as bench
from benchmarks.generate import generate
from ingest.catalog import default_catalog
from ingest.match import HyperscanMatcher, ReferenceMatcher

KEYS = ("lines", "lines_per_s", "mb_per_s", "baseline_re_lines_per_s", "baseline_duckdb_lines_per_s",
        "read_split_lines_per_s", "peak_rss_mb")


def test_generator_mixes_noise_with_one_percent_faults_of_every_family():
    catalog = default_catalog()
    c = generate(20_000, seed=3)
    assert len(c.lines) == 20_000
    assert 0.005 < c.fault_lines / len(c.lines) < 0.02
    families = {f.family for f in bench_families()}
    assert set(c.families) == families
    # the lines that hit a signature are exactly the fault lines: noise never looks like a fault
    assert len(HyperscanMatcher(catalog).scan(b"\n".join(c.lines))) == c.fault_lines
    buf = b"\n".join(c.lines[:3000])
    assert ReferenceMatcher(catalog).scan(buf) == HyperscanMatcher(catalog).scan(buf)
    assert generate(2_000, seed=3).lines == generate(2_000, seed=3).lines  # reproducible



def test_storm_is_runs_of_one_host_s_kernel_fault_lines_in_three_stamp_shapes():
    from benchmarks.generate import STORM_FAMILIES, STORM_RUN, storm

    catalog = default_catalog()
    c = storm(3 * STORM_RUN, seed=3)
    assert len(c.lines) == 3 * STORM_RUN and set(c.hosts) == {"node001"} and set(c.source) == {0}
    assert 0.9 < c.fault_lines / len(c.lines) < 1 and set(c.families) <= set(STORM_FAMILIES)
    assert len(HyperscanMatcher(catalog).scan(b"\n".join(c.lines))) == c.fault_lines  # noise stays noise
    # each run is one stamp shape: rsyslog ISO, raw dmesg, journalctl short (no year)
    assert [c.lines[k * STORM_RUN][:1] for k in range(3)] == [b"2", b"[", b"J"]
    assert list(c.ts_us) == sorted(c.ts_us) and storm(500, seed=3).lines == storm(500, seed=3).lines

def bench_families():
    from benchmarks.generate import fault_templates

    return fault_templates(default_catalog())


@pytest.mark.kafka
def test_quick_benchmark_runs_every_mode(kafka, tmp_path):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert bench.main(["--quick", "--json", "--bootstrap", kafka, "--workdir", str(tmp_path)]) == 0
    r = json.loads(out.getvalue())
    assert set(r["modes"]) == {"files_diagnose", "files_ingest", "kafka_line", "kafka_batch", "kafka_ndjson"}
    n = r["input"]["lines"]
    for name, row in r["modes"].items():
        for k in KEYS:
            assert row[k] is not None and row[k] > 0, (name, k)
        if name.startswith("kafka"):
            assert row["lines"] == n, name
            assert row["lake_events"] == row["events"] > 0, name  # every event durable, once
            # the worker's CPU split by thread: the event loop's and the pipeline's threads ran, and what the
            # stages leave is the process's CPU less theirs
            assert row["thread_cpu_s"]["main"] > 0 and row["thread_cpu_s"]["pipeline"] > 0, name
            assert row["outside_stages_cpu_s"] == pytest.approx(
                row["cpu_s"] - sum(row["stage_cpu_s"].values()), abs=2e-3), name
    assert {"decode", "frame", "match", "extract", "assemble", "arrow", "write"} <= set(
        r["stages"]["batch"]["stage_cpu_s"])
    assert r["correlator"]["events"] > 0
    assert r["storm"]["lines"] == 6_000 and r["storm"]["events"] > 0 and r["storm"]["lines_per_s"] > 0
    assert r["storm"]["baseline_re_lines_per_s"] > 0
    # the same storm in Vector records: the same events (a storm's lines collapse alike whatever carries the time)
    assert r["storm"]["envelopes"]["events"] == r["storm"]["events"] and r["storm"]["envelopes"]["lines_per_s"] > 0
    assert r["quick"] and all(t["holds"] is None for t in r["targets"].values())  # a smoke test judges nothing
    # start-up with the compiled-database cache empty and kept: the samples' incidents either way
    st = r["startup"]
    assert st["runs"] == 1 and st["incidents"] >= 3 and all(st[k] > 0 for k in ("cold_wall_s", "warm_wall_s"))
    assert r["correlator"]["stream_steps"] >= 2 and 0 < r["correlator"]["stream_step_max_s"] < 60
    assert 0 < r["correlator"]["stream_attributions_reused"] < 1  # steps that touch few hosts reuse the rest
    job = r["correlator"]["job"]  # one communicator of 32 hosts x 8 ranks, one Xid 79: one incident, all ranks under it
    assert (job["ranks"], job["events"], job["incidents"]) == (256, 513, 1)
    assert job["initiator"] == "node0007 Xid 79" and job["downstream_events"] == 256 and job["events_per_s"] > 0
    # the same job restarted 4 times, 6 h apart: the stream keeps the last run's and the run before's membership
    # lines (younger than the lateness and the longest link window), not all four runs'
    runs = r["correlator"]["restarts"]
    assert (runs["runs"], runs["kept_membership"], runs["kept_runs"]) == (4, 512, 2)
    assert len(runs["step_cpu_s"]) == 4 and runs["last_step_s"] > 0
    # then the job's hosts are quiet for two hours: their lines are topology only, not events correlated each step
    assert (runs["quiet_kept_wiring"], runs["quiet_kept_events"], len(runs["quiet_step_cpu_s"])) == (256, 6, 6)
    assert set(r["targets"]) >= {"match_vs_re", "match_vs_duckdb", "kafka_line.lines_per_s_per_core",
                                 "correlator.stream_step_max_s"}
    assert r["commit"] == bench.commit()  # the measured code, named in the JSON
    if (bench.ROOT / ".git").exists():
        assert r["commit"] and len(r["commit"].removesuffix("-dirty")) >= 12
    assert not list(tmp_path.iterdir())  # the scratch folder is gone


def test_an_unknown_kafka_mode_is_refused_before_anything_runs(capsys):
    """``--modes line`` (not ``kafka_line``) used to run no Kafka mode at all and say nothing."""
    with pytest.raises(SystemExit) as e:
        bench.main(["--modes", "kafka_line,line", "--quick"])
    assert e.value.code == 2 and "unknown mode 'line'; choose from kafka_line, kafka_batch, kafka_ndjson" in \
        capsys.readouterr().err
    assert bench._modes("kafka_ndjson, kafka_line") == ["kafka_ndjson", "kafka_line"]


def test_report_benchmark_smoke():
    """`python -m benchmarks.report` runs (a smoke test, no timing asserted): two hosts, every link listed."""
    from benchmarks.report import GPUS, LINKS, run

    r = run(2)
    assert (r["hosts"], r["links_listed"]) == (2, 2 * GPUS * LINKS) and r["cpu_s"] >= 0


def test_steady_benchmark_smoke():
    """`python -m benchmarks.steady` (a smoke test, no timing asserted): a link a poller reports down at each of 40
    polls 10 s apart is one event per poll (one Kafka record each) kept by the streaming correlator, and early
    versions of its incident are emitted while it lasts (one per 300 s of evidence); the same polls in one
    batch fold into one event a minute (ingest.assemble.Storms, STORM_SPAN_US: 390 s of polls, seven) and one
    incident."""
    from benchmarks.steady import run

    r = run(40, 10.0, 20)
    assert [(c["poll"], c["kept_events"]) for c in r["checkpoints"]] == [(20, 20), (40, 40)]
    assert r["checkpoints"][-1]["emitted"] == 1  # at poll 31: 300 s of evidence since the first poll held it
    assert (r["one_batch"]["events"], r["one_batch"]["incidents"]) == (7, 1)


def test_correlator_against_a_commit_runs_both_codes_on_the_same_events(capsys):
    """``benchmarks.correlator`` (a smoke test: no speed asserted): HEAD against itself in child processes on
    the events of 20,000 lines gives one incident hash, one hash of the streamed versions and a row per code; a
    name that is no commit exits 2."""
    from benchmarks import correlator

    assert correlator.main(["--against", "HEAD", "--lines", "20000", "--rounds", "1", "--calls", "1", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["same_incidents"] is True and report["events"] > 50 and report["incidents"] > 0
    assert report["same_stream_versions"] is True
    for code in ("this", "against"):
        (run,) = report["runs"][code]
        assert run["events"] == report["events"] and run["stream_steps"] >= correlator.STEPS // 2
        assert run["correlate_cpu_s"] > 0 and run["stream_versions"] > 0 and len(run["stream_sha256"]) == 16
    assert correlator.main(["--against", "no-such-commit"]) == 2
    assert correlator.main(["--against", "HEAD", "--lines", "5", "--rounds", "1"]) == 2  # no event in 5 lines
