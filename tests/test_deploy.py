"""docker-compose.yml and the Dockerfile cannot run here (no Docker engine); what can be checked is that
they name commands, settings and files that exist, so the deployment description stays true."""

from __future__ import annotations

import gzip
import json
import re
import shlex
from datetime import datetime, timedelta
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from api.cli import app
from schemas.settings import Settings, SettingsError, load_settings

ROOT = Path(__file__).resolve().parents[1]


def compose():
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def test_compose_runs_the_scaled_form():
    svc = compose()["services"]
    assert {"kafka", "topics", "ingest", "correlate", "api"} <= set(svc)
    assert svc["ingest"]["deploy"]["replicas"] >= 2 and svc["correlate"]["deploy"]["replicas"] >= 2
    assert svc["kafka"]["image"].startswith("apache/kafka:4.")


def test_compose_broker_keeps_its_data_in_its_volume():
    """The apache/kafka image's log.dirs is /tmp/kraft-combined-logs unless KAFKA_LOG_DIRS says otherwise
    (apache/kafka docker/resources/common-scripts/configureDefaults): with the volume mounted elsewhere, the topics and
    the committed offsets lived in the container and were lost when it was made again."""
    kafka = compose()["services"]["kafka"]
    mounts = {v.split(":")[1] for v in kafka["volumes"] if v.split(":")[0] in compose()["volumes"]}
    log_dirs = str(kafka["environment"].get("KAFKA_LOG_DIRS", "")).split(",")
    assert log_dirs != [""] and all(any(d == m or d.startswith(m + "/") for m in mounts) for d in log_dirs), \
        (log_dirs, mounts)


def test_compose_commands_exist():
    runner = CliRunner()
    for name, s in compose()["services"].items():
        if name == "kafka":
            continue
        cmd = s["command"]
        if s.get("entrypoint") == ["sh", "-c"]:
            cmd = shlex.split(re.sub(r"^.*exec firstfault ", "", cmd[0]))
        r = runner.invoke(app, [*cmd[: 2 if cmd[0] == "kafka" else 1], "--help"])
        assert r.exit_code == 0, (name, cmd, r.output)
        # a flag shows no type beside it, as if it took a value (typer 0.25+ printed "--once <bool>": a fresh
        # user's trial); an option that takes one does
        assert "<bool>" not in r.output and "--help" in r.output, r.output
    r = runner.invoke(app, ["run", "--help"])
    assert "<bool>" not in r.output and "<port> [0<=x<=65535]" in r.output, r.output


def test_compose_environment_is_known_settings():
    fields = {f"FIRSTFAULT_{f.upper()}" for f in Settings.model_fields}
    for name, s in compose()["services"].items():
        for k in (s.get("environment") or {}):
            if k.startswith("FIRSTFAULT_"):
                assert k in fields, (name, k)
    # what compose passes for an unset variable is accepted and means unset
    s = load_settings(env={"FIRSTFAULT_API_TOKEN": "", "FIRSTFAULT_ALERTMANAGER_URL": ""})
    assert s.api_token is None and s.alertmanager_url is None


def test_dockerfile_copies_what_the_package_needs():
    text = (ROOT / "Dockerfile").read_text()
    for folder in ("schemas", "ingest", "correlate", "api"):
        assert f"COPY {folder} ./{folder}" in text
    assert (ROOT / "config" / "fleet.yaml").exists()


def test_any_empty_variable_counts_as_unset():
    empty = {f"FIRSTFAULT_{f.upper()}": "" for f in Settings.model_fields}
    assert load_settings(env=empty) == load_settings(env={})


@pytest.mark.parametrize("env,said", [
    ({"FIRSTFAULT_SKEW_S": "a=b"}, "is not host=seconds"),
    ({"FIRSTFAULT_SKEW_S": "abc"}, "is not host=seconds"),
    ({"FIRSTFAULT_SKEW_S": "a=1,a=2"}, "host 'a' is given twice"),
    ({"FIRSTFAULT_SKEW_S": "a=1,A.example.com=2"}, "hosts 'a' and 'A.example.com' are one host, 'a'"),
    ({"FIRSTFAULT_SKEW_S": "node01=nan"}, "finite number"),
    ({"FIRSTFAULT_SKEW_S": "node01=1e308"}, "skew bounds must be 0 to 86400 seconds"),
    ({"FIRSTFAULT_SKEW_S": "node01=-1"}, "skew bounds must be 0 to 86400 seconds"),
    ({"FIRSTFAULT_SKEW_DEFAULT_S": "inf"}, "finite number"),
    ({"FIRSTFAULT_CLOSE_AFTER_S": "1e300"}, "close_after_s"),
    ({"FIRSTFAULT_EARLY_AFTER_S": "-1"}, "early_after_s"),
    ({"FIRSTFAULT_CONFIG": "/"}, "cannot read the config file /"),
    ({"FIRSTFAULT_TOPICS": ",,"}, "topics (from FIRSTFAULT_TOPICS): needs at least one topic"),
    ({"FIRSTFAULT_DLQ_TOPIC": "dead letters"}, "'dead letters' is not a Kafka topic name"),
    ({"FIRSTFAULT_FLEET_CONFIG": "/"}, "cannot read the fleet config /"),
    # a device or a pipe is no config file: /dev/zero was read until memory ran out, a FIFO without a writer waited
    # for ever (a break-it pass)
    ({"FIRSTFAULT_CONFIG": "/dev/zero"},
     "cannot read the config file /dev/zero: not a regular file (a pipe, a device)"),
    ({"FIRSTFAULT_FLEET_CONFIG": "/dev/zero"},
     "cannot read the fleet config /dev/zero: not a regular file (a pipe, a device)"),
    # an unusable lake was a LakeError or ArrowInvalid traceback where the lake was first opened (a break-it pass)
    ({"FIRSTFAULT_LAKE": "ftp://x/y"}, "'ftp://x/y': a lake is a path, file:// URL or s3://bucket/prefix"),
    ({"FIRSTFAULT_LAKE": "s3://"}, "'s3://' names no bucket"),
    ({"FIRSTFAULT_LAKE": "file://"}, "'file://' names no folder"),
    ({"FIRSTFAULT_LAKE": " "}, "lake (from FIRSTFAULT_LAKE): is empty"),
    # the filesystem root would get the table folders; another host's file:// URL is no local folder
    ({"FIRSTFAULT_LAKE": "file:///"}, "'file:///' names no folder below the filesystem root"),
    ({"FIRSTFAULT_LAKE": "/"}, "'/' names no folder below the filesystem root"),
    ({"FIRSTFAULT_LAKE": "file://nfs1/lake"}, "a file:// lake is on this host: file:///lake or file://localhost/lake"),
    ({"FIRSTFAULT_LAKE": " /tmp/lake"}, "' /tmp/lake' has spaces around it"),
    # pager receivers: a traceback at the first page (a port past 65535, an unclosed bracket), retries for ever
    # (no scheme, ftp://), a 404 page after page (Alertmanager's path given twice), a traceback at start (no
    # PagerDuty key) (a break-it pass); a stop waited on a linger of any length
    ({"FIRSTFAULT_ALERTMANAGER_URL": "http://127.0.0.1:99999"}, "port 99999 is not in 1 – 65535"),
    ({"FIRSTFAULT_ALERTMANAGER_URL": "http://[::1"}, "'http://[::1' is no URL"),
    ({"FIRSTFAULT_ALERTMANAGER_URL": "not a url"}, "'not a url' is no http:// or https:// URL with a host"),
    ({"FIRSTFAULT_PAGERDUTY_URL": "ftp://127.0.0.1/", "FIRSTFAULT_PAGERDUTY_ROUTING_KEY": "k"},
     "pagerduty_url (from FIRSTFAULT_PAGERDUTY_URL): 'ftp://127.0.0.1/' is no http:// or https://"),
    ({"FIRSTFAULT_PUBLIC_URL": "ff.example"}, "public_url (from FIRSTFAULT_PUBLIC_URL)"),
    ({"FIRSTFAULT_ALERTMANAGER_URL": "http://127.0.0.1:9093/api/v2/alerts/"}, "give Alertmanager's base URL"),
    ({"FIRSTFAULT_PAGERDUTY_URL": "https://events.pagerduty.com/v2/enqueue"},
     "pagerduty_url is set but pagerduty_routing_key is not"),
    # a query or fragment would swallow the path the pager adds; Alertmanager's API path given at all; a password
    # is not repeated in the error
    ({"FIRSTFAULT_ALERTMANAGER_URL": "http://am.example:9093?tenant=gpu"}, "a query or fragment has no place here"),
    ({"FIRSTFAULT_PUBLIC_URL": "http://ff.example:8080#top"}, "a query or fragment has no place here"),
    # a page's generatorURL Alertmanager's API refuses (format uri): every page lost, 422 (a break-it pass)
    ({"FIRSTFAULT_PUBLIC_URL": "http://ff.example:8080/gpu%team"}, "a % not followed by two hex digits is no URL's"),
    ({"FIRSTFAULT_ALERTMANAGER_URL": "http://am.example:9093/API/v2"}, "give Alertmanager's base URL"),
    ({"FIRSTFAULT_ALERTMANAGER_URL": "http://ops:hunter2@am.example:0"}, "'http://…@am.example:0': port 0 is not"),
    # a file as the state folder was a FileExistsError / NotADirectoryError traceback in `demo` and `kafka start` (a
    # fresh-user trial)
    ({"FIRSTFAULT_STATE_DIR": "/etc/passwd"}, "state_dir (from FIRSTFAULT_STATE_DIR): '/etc/passwd' is "
                                              "a file, not a folder"),
    ({"FIRSTFAULT_STATE_DIR": "/etc/passwd/state"}, "'/etc/passwd/state': '/etc/passwd' is a file, not a folder"),
    # a bootstrap pasted with the rest of `kafka status`'s line, or in Java's listener syntax, was a ValueError
    # traceback (aiokafka's int(port)) or a retry for ever at the first client's start
    ({"FIRSTFAULT_KAFKA_BOOTSTRAP": "127.0.0.1:35227 pid=4470"}, "'127.0.0.1:35227 pid=4470' is not host:port"),
    ({"FIRSTFAULT_KAFKA_BOOTSTRAP": "PLAINTEXT://k1:9092"}, "'PLAINTEXT://k1:9092' is not host:port"),
    ({"FIRSTFAULT_KAFKA_BOOTSTRAP": "k1:9092,k2:70000"}, "'k2:70000' is not host:port"),
    ({"FIRSTFAULT_KAFKA_BOOTSTRAP": "k1:9092,,k2:9092"}, "'' is not host:port"),
    ({"FIRSTFAULT_KAFKA_BOOTSTRAP": "[::1"}, "'[::1' is not host:port"),
    ({"FIRSTFAULT_KAFKA_BOOTSTRAP": "node01:9092:9093"}, "'node01:9092:9093' is not host:port"),
    ({"FIRSTFAULT_BATCH_LINGER_MS": "999999999999"}, "batch_linger_ms (from FIRSTFAULT_BATCH_LINGER_MS): must be at "
                                                    "most 60000, not 999999999999"),
    # past DuckDB's BIGINT: every `firstfault sql` query failed with a cast error (a break-it pass); the other counts
    # and sizes have bounds too
    ({"FIRSTFAULT_SQL_MAX_ROWS": "9" * 23}, "sql_max_rows (from FIRSTFAULT_SQL_MAX_ROWS): must be at most "
                                           "1000000000, not " + "9" * 23),
    ({"FIRSTFAULT_SQL_MAX_BYTES": "9" * 23}, "sql_max_bytes (from FIRSTFAULT_SQL_MAX_BYTES): must be at most"),
    ({"FIRSTFAULT_BATCH_MAX_RECORDS": "9" * 23}, "batch_max_records (from FIRSTFAULT_BATCH_MAX_RECORDS): must"),
    ({"FIRSTFAULT_API_MAX_BODY_BYTES": "9" * 23}, "api_max_body_bytes (from FIRSTFAULT_API_MAX_BODY_BYTES): must"),
    ({"FIRSTFAULT_SESSION_TIMEOUT_MS": "9" * 23}, "session_timeout_ms (from FIRSTFAULT_SESSION_TIMEOUT_MS): must"),
    # a dead-letter topic that is also read dead-lettered each bad record to itself, forever (a break-it pass)
    ({"FIRSTFAULT_TOPICS": "t3.loop", "FIRSTFAULT_DLQ_TOPIC": "t3.loop"},
     "dlq_topic 't3.loop' is one of topics (the raw input): give it a topic of its own"),
    ({"FIRSTFAULT_TOPICS": "a,b", "FIRSTFAULT_EVENTS_TOPIC": "b"}, "events_topic 'b' is one of topics"),
    ({"FIRSTFAULT_DLQ_TOPIC": "x", "FIRSTFAULT_EVENTS_TOPIC": "x"}, "dlq_topic and events_topic are both 'x'"),
    ({"FIRSTFAULT_TOPICS": "a,b,a"}, "topics names 'a' twice"),
    ({"FIRSTFAULT_TOPICS": "fleet.dmesg,fleet_dmesg"}, "topics 'fleet.dmesg' and 'fleet_dmesg' differ only by '.' and"),
])
def test_settings_that_cannot_be_used_are_refused_when_read(env, said):
    """Each of these once passed validation and failed later with a traceback (a skew of NaN or 1e308 as µs, a
    folder as the config file, a fleet config that is no file); SettingsError is exit 2 in every command."""
    with pytest.raises(SettingsError, match=re.escape(said)):
        load_settings(env=env)


def test_a_config_file_larger_than_any_config_is_refused_unread(tmp_path):
    """A 2 GB sparse file as the fleet config was read whole (MemoryError at 2.2 GB, a traceback: a break-it pass):
    past ``CONFIG_MAX_BYTES`` it is refused, naming the limit."""
    from schemas.settings import CONFIG_MAX_BYTES

    big = tmp_path / "fleet.yaml"
    with open(big, "wb") as f:
        f.truncate(CONFIG_MAX_BYTES + 1)
    for env, what in (({"FIRSTFAULT_FLEET_CONFIG": str(big)}, "fleet config"),
                      ({"FIRSTFAULT_CONFIG": str(big)}, "config file")):
        with pytest.raises(SettingsError, match=re.escape(f"cannot read the {what} {big}: larger than 16 MiB")):
            load_settings(env=env)


def test_a_configuration_error_is_one_line_on_stderr():
    """``configuration error: …`` is one line however long (Rich wrapped it at the console's width when stderr
    was no terminal: a break-it pass), exit 2, and names no password."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "FIRSTFAULT_ALERTMANAGER_URL": "http://ops:hunter2@alertmanager.monitoring.svc.cluster."
           "local:9093/api/v2/alerts", "COLUMNS": "80"}
    r = subprocess.run([sys.executable, "-m", "api.cli", "sql", "select 1"], cwd=ROOT, env=env, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.count("\n") == 1 and r.stderr.startswith("configuration error: alertmanager_url (from "
                                                             "FIRSTFAULT_ALERTMANAGER_URL)")
    assert "give Alertmanager's base URL" in r.stderr and "hunter2" not in r.stderr


def test_kafka_bootstraps_that_can_be_used_are_kept():
    """Kafka's bootstrap.servers forms, as aiokafka reads them: host:port lists, a bare host (port 9092), IPv6 in
    brackets; empty means the local broker."""
    for v in ("127.0.0.1:9092", "k1:9092, k2:9093", "kafka", "[::1]:9092", "::1", ""):
        assert load_settings(env={"FIRSTFAULT_KAFKA_BOOTSTRAP": v}).kafka_bootstrap == v


def test_receiver_urls_that_can_be_used_are_kept():
    s = load_settings(env={"FIRSTFAULT_ALERTMANAGER_URL": "http://[::1]:9093/", "FIRSTFAULT_PUBLIC_URL":
                           "https://ff.example/firstfault", "FIRSTFAULT_PAGERDUTY_URL":
                           "https://events.pagerduty.com/v2/enqueue", "FIRSTFAULT_PAGERDUTY_ROUTING_KEY": "k" * 32})
    assert (s.alertmanager_url, s.public_url, s.pagerduty_url) == (
        "http://[::1]:9093/", "https://ff.example/firstfault", "https://events.pagerduty.com/v2/enqueue")


def test_a_toml_boolean_is_no_number(tmp_path):
    """``resolve_after_s = false`` was read as 0 s (every incident resolved at once), ``sql_timeout_s = true`` as 1 s
    (a break-it pass): a boolean where a number goes is refused, naming the file; a boolean setting takes one."""
    for key in ("resolve_after_s", "sql_timeout_s", "batch_max_records"):
        (tmp_path / "b.toml").write_text(f"{key} = false\n")
        with pytest.raises(SettingsError, match=re.escape(f"{key} (from {tmp_path / 'b.toml'}): is "
                                                          "false, not a number")):
            load_settings(tmp_path / "b.toml", env={})
    (tmp_path / "n.toml").write_text("resolve_after_s = 60\n")
    assert load_settings(tmp_path / "n.toml", env={}).resolve_after_s == 60


def test_skew_bounds_in_the_file_take_the_table_or_the_environments_form(tmp_path):
    """``skew_s = "node01=0.5"`` in firstfault.toml was refused as "not a valid dictionary" while the README gives that
    form (a fresh user's trial): the file takes it as the environment does, or a ``[skew_s]`` table."""
    (tmp_path / "s.toml").write_text('skew_s = "node01=0.5, node02=3"\n')
    assert load_settings(tmp_path / "s.toml", env={}).skew_s == {"node01": 0.5, "node02": 3.0}
    (tmp_path / "t.toml").write_text("[skew_s]\nnode01 = 0.5\n")
    assert load_settings(tmp_path / "t.toml", env={}).skew_s == {"node01": 0.5}
    (tmp_path / "b.toml").write_text('skew_s = "node01"\n')
    with pytest.raises(SettingsError, match=re.escape(f"skew_s (from {tmp_path / 'b.toml'}): 'node01' is not "
                                                      'host=seconds (e.g. skew_s = "node01=0.5,node02=3")')):
        load_settings(tmp_path / "b.toml", env={})


def test_a_bad_number_in_the_config_file_is_said_once_in_the_tool_s_words(tmp_path):
    """``resolve_after_s = "ten"`` said "configuration error: invalid configuration: resolve_after_s (from …): Input
    should be a valid number, unable to parse string as a number" (a second new user's trial): "configuration
    error" once, then what the value must be and what it was."""
    (tmp_path / "ff.toml").write_text('resolve_after_s = "ten"\napi_port = 99999\n')
    r = CliRunner().invoke(app, ["serve", "--config", str(tmp_path / "ff.toml")], env={"COLUMNS": "500"})
    assert r.exit_code == 2 and " ".join(r.stderr.split()) == (
        f"configuration error: resolve_after_s (from {tmp_path / 'ff.toml'}): must be a number, not 'ten'; "
        f"api_port (from {tmp_path / 'ff.toml'}): must be at most 65535, not 99999"), r.stderr


def test_a_bad_setting_is_blamed_on_where_it_came_from(tmp_path):
    """A bad value names its source: the environment variable over a good file's value, the file for its own
    (a fresh-user trial found an environment value blamed on the file); a misspelt variable gets a suggestion."""
    (tmp_path / "ok.toml").write_text("reach_back_s = 600\n")
    (tmp_path / "bad.toml").write_text("reach_back_s = -600\n")
    with pytest.raises(SettingsError, match=re.escape("reach_back_s (from FIRSTFAULT_REACH_BACK_S): must be at "
                                                      "least 0, not -3")):
        load_settings(tmp_path / "ok.toml", env={"FIRSTFAULT_REACH_BACK_S": "-3"})
    with pytest.raises(SettingsError, match=re.escape(f"reach_back_s (from {tmp_path / 'bad.toml'}):")):
        load_settings(tmp_path / "bad.toml", env={})
    with pytest.raises(SettingsError, match=re.escape("reach_back_s (from the command line):")):
        load_settings(tmp_path / "ok.toml", env={}, overrides={"reach_back_s": -1})
    with pytest.raises(SettingsError, match="did you mean FIRSTFAULT_REACH_BACK_S[?]"):
        load_settings(env={"FIRSTFAULT_REACH_BAK_S": "5"})
    # nothing close: not a far guess (FIRSTFAULT_BOGUS was "did you mean FIRSTFAULT_TOPICS?", by the prefix they
    # share; a fresh-user trial), nor all 36 names on one line (a later one): where the settings are listed
    with pytest.raises(SettingsError) as e:
        load_settings(env={"FIRSTFAULT_BOGUS": "1"})
    assert str(e.value) == "unknown setting FIRSTFAULT_BOGUS (none is close to it; the settings: README.md's " \
        "Configuration table)"
    with pytest.raises(SettingsError) as e:
        load_settings(env={"FIRSTFAULT_RESOLVE_AFTR_S": "5"})
    assert str(e.value) == "unknown setting FIRSTFAULT_RESOLVE_AFTR_S: did you mean FIRSTFAULT_RESOLVE_AFTER_S?"
    # a misspelt key of the file gets its suggestion too
    (tmp_path / "typo.toml").write_text("api_prot = 8080\n")
    with pytest.raises(SettingsError, match=re.escape(f"api_prot (from {tmp_path / 'typo.toml'}): unknown setting "
                                                      "(did you mean api_port?)")):
        load_settings(tmp_path / "typo.toml", env={})
    # or the setting it begins, in the file and the environment ("resolv" had no hint: a fresh user's trial)
    (tmp_path / "short.toml").write_text("resolv = 1\n")
    with pytest.raises(SettingsError, match=r"resolv \(from .*\): unknown setting \(did you mean resolve_after_s\?\)"):
        load_settings(tmp_path / "short.toml", env={})
    with pytest.raises(SettingsError, match="did you mean FIRSTFAULT_RESOLVE_AFTER_S[?]"):
        load_settings(env={"FIRSTFAULT_RESOLV": "1"})
    assert load_settings(tmp_path / "ok.toml", env={}).reach_back_s == 600


def test_a_malformed_fleet_config_is_a_configuration_error(tmp_path):
    for text in (b"hosts: [1,2\n", b"hosts: {node01: 5}\n", b"\xff\xfe", b"? [a, b]\n: 1\n"):
        (tmp_path / "fleet.yaml").write_bytes(text)
        r = _firstfault("diagnose", str(tmp_path), "--fleet-config", str(tmp_path / "fleet.yaml"))
        assert r.returncode == 2 and "fleet_config" in r.stderr and "Traceback" not in r.stderr, (text, r.stderr)


def test_the_fleet_config_reads_names_as_written_and_refuses_lists_and_twice_given_hosts(tmp_path):
    """YAML typed the values first and str() followed: host ``001`` became ``1``, rack ``010`` became ``8``
    (octal), host ``no`` became ``False``, ``12:31`` became ``751`` (base 60), a domain list became its repr,
    and a host given twice kept its last entry silently (a break-it pass). Names are now read as written; a
    list or mapping value, or a host given twice, is a ValueError naming it."""
    from schemas.fleet import HostConfig, load_fleet_config

    f = tmp_path / "fleet.yaml"
    f.write_text('hosts:\n  001: {rack: 010}\n  no: {domain: yes}\n  12:31: {platform: "NVIDIA GB200", rack: ~}\n'
                 '  node08:\n')
    # ``12:31`` read as written, not 751, then as every host name is: its ``:31`` a port (schemas.hostname)
    assert load_fleet_config(f) == {"001": HostConfig(rack="010"), "no": HostConfig(domain="yes"),
                                    "12": HostConfig(platform="NVIDIA GB200"), "node08": HostConfig()}
    # host names as the events give them (schemas.hostname): the short name, lower case
    f.write_text('hosts:\n  Node07.Cluster.Local: {rack: r1}\n  10.0.0.5: {rack: r2}\n')
    assert load_fleet_config(f) == {"node07": HostConfig(rack="r1"), "10.0.0.5": HostConfig(rack="r2")}
    for text, said in (("hosts:\n  n1: {domain: [a, b]}\n", "host n1: domain must be one name, not ['a', 'b']"),
                       ("hosts:\n  n1: {rack: r1}\n  n1: {rack: r9}\n", "'n1' is given twice"),
                       ("hosts:\n  n1: {rack: r1}\n  N1.lan: {rack: r9}\n", "hosts n1 and N1.lan are one host, n1"),
                       # a name no event can have (ingest refuses it: bad_host), syslog's "-" (a break-it pass)
                       ('hosts:\n  "node 07": {rack: r1}\n', "'node 07' is no host name"),
                       ('hosts:\n  "-": {rack: r1}\n', "'-' is no host name"),
                       ('hosts:\n  "rack1/node402": {rack: r1}\n', "'rack1/node402' is no host name")):
        f.write_text(text)
        with pytest.raises(ValueError, match=re.escape(said)):
            load_fleet_config(f)
    # a value built from nested aliases ("billion laughs"): the message's repr expanded it for minutes and GBs
    levels = ["a: &a [x, x, x, x, x, x, x, x, x, x]"] + [
        f"{c}: &{c} [{', '.join(['*' + p] * 10)}]" for p, c in zip("abcdefgh", "bcdefghi")]
    f.write_text("\n".join(levels) + "\nhosts:\n  n1: {platform: *i}\n")
    with pytest.raises(ValueError, match=r"platform must be one name, not \[\[") as e:
        load_fleet_config(f)
    assert len(str(e.value)) < 400
    # read once per version of the file (the settings, the API, the service and each correlate() read it)
    f.write_text("hosts:\n  n1: {rack: r1}\n")
    first = load_fleet_config(f)
    assert load_fleet_config(f) == first and load_fleet_config(f) is not first
    f.write_text("hosts:\n  n1: {rack: r22}\n")
    assert load_fleet_config(f) == {"n1": HostConfig(rack="r22")}


def test_a_platform_no_gpu_model_matches_is_said_once_at_start(tmp_path, caplog):
    """A fleet config's platform that matches no entry of correlate/platforms.yaml ("Bogus GPU 9000") turned the
    expected-topology checks of its hosts off without a word (a fresh-user trial): the correlator's settings say
    which platform and hosts, as a warning; known models, long or short, say nothing."""
    import logging

    from correlate.correlator import correlation_settings
    from correlate.topology import unmatched_platforms
    from schemas.fleet import HostConfig

    hosts = {"node03": HostConfig(platform="Bogus GPU 9000"), "node01": HostConfig(platform="Bogus GPU 9000"),
             "node02": HostConfig(platform="NVIDIA H100 80GB HBM3"), "node04": HostConfig(platform="GB200"),
             "node05": HostConfig(domain="rack1")}
    assert unmatched_platforms(hosts) == {"Bogus GPU 9000": ["node01", "node03"]}
    f = tmp_path / "fleet.yaml"
    f.write_text('hosts:\n  node01: {platform: "H1OO SXM"}\n  node02: {platform: "NVIDIA A100-SXM4-80GB"}\n')
    with caplog.at_level(logging.WARNING, logger="firstfault.correlate"):
        correlation_settings(load_settings(env={"FIRSTFAULT_FLEET_CONFIG": str(f)}))
    assert [r.getMessage().split(":")[1] for r in caplog.records] == [" platform 'H1OO SXM' (host node01) matches no GPU "
                                                                      "model of correlate/platforms.yaml"]


def test_a_bad_log_level_is_a_configuration_error_not_a_traceback():
    r = _firstfault("sql", "SELECT 1", env={"FIRSTFAULT_LOG_LEVEL": "bogus"})
    assert r.returncode == 2 and "log_level" in r.stderr and "Traceback" not in r.stderr, r.stderr


def test_a_stray_environment_variable_stops_the_command_in_one_short_line(tmp_path):
    """``FIRSTFAULT_BOGUS=1 firstfault diagnose …`` listed all the settings' names on one line, where a misspelt key
    of the file got "did you mean …?" (a fresh user's trial): one short line, and still exit 2 (a deployment with a
    misspelt variable must not start with the setting it meant left at its default)."""
    for var, said in (("FIRSTFAULT_BOGUS", "unknown setting FIRSTFAULT_BOGUS (none is close to it; the settings: "
                                           "README.md's Configuration table)"),
                      ("FIRSTFAULT_RESOLVE_AFTER", "unknown setting FIRSTFAULT_RESOLVE_AFTER: did you mean "
                                                   "FIRSTFAULT_RESOLVE_AFTER_S?")):
        r = _firstfault("diagnose", str(tmp_path), env={var: "1"})
        assert (r.returncode, r.stdout, r.stderr) == (2, "", f"configuration error: {said}\n"), (var, r.stderr)


def test_the_projects_own_variables_that_are_no_settings_are_no_unknown_settings(tmp_path):
    """``FIRSTFAULT_CACHE`` (the Kafka jars' cache folder, ingest/broker.py) and ``FIRSTFAULT_REVISION``
    (benchmarks/accuracy.py) are read by the project but are no settings: they were refused as unknown settings,
    and every command stopped (a break-it pass)."""
    s = load_settings(env={"FIRSTFAULT_CACHE": str(tmp_path), "FIRSTFAULT_REVISION": "abc", "FIRSTFAULT_LAKE": "x"})
    assert s.lake == "x" and s.source_of("lake") == "from FIRSTFAULT_LAKE"
    (tmp_path / "node01.log").write_text("[ 12.000000] NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.\n")
    r = _firstfault("diagnose", str(tmp_path / "node01.log"), env={"FIRSTFAULT_CACHE": str(tmp_path)})
    assert r.returncode == 0 and "gpu_off_bus" in r.stdout and "unknown setting" not in r.stderr, r.stderr


def _firstfault(*args: str, env: dict[str, str] | None = None, stdin: str | None = None, cwd=None):
    import subprocess
    import sys
    from pathlib import Path

    exe = str(Path(sys.executable).with_name("firstfault"))
    return subprocess.run([exe, *args], env={"PATH": "/usr/bin:/bin", **(env or {})}, capture_output=True, text=True,
                          timeout=120, input=stdin, cwd=cwd)


def _boxed(text: str) -> str:
    """``text`` without click's error box and its wrapping: one space between words."""
    return " ".join(text.replace("│", " ").split())


def test_sql_on_a_lake_that_does_not_exist_says_so_and_creates_nothing(tmp_path):
    r = _firstfault("sql", "SELECT 1", env={"FIRSTFAULT_LAKE": str(tmp_path / "nolake")})
    assert r.returncode == 2 and "no lake at" in r.stderr and not (tmp_path / "nolake").exists()
    # the demo's lake it names is under the state folder these settings give (it named .firstfault/demo/lake whatever
    # FIRSTFAULT_STATE_DIR said: a fresh user's trial)
    r = _firstfault("sql", "SELECT 1", env={"FIRSTFAULT_LAKE": str(tmp_path / "nolake"),
                                            "FIRSTFAULT_STATE_DIR": str(tmp_path / "state")})
    assert r.returncode == 2 and f"its lake is {tmp_path / 'state' / 'demo' / 'lake'}" in " ".join(r.stderr.split())


def test_serve_of_a_lake_that_does_not_exist_exits_2_as_sql_does_and_creates_nothing(tmp_path):
    """``serve`` in a folder with no lake made ``.firstfault/lake``, warned and answered every route empty, /healthz
    ok, where ``sql`` exits 2 (a fresh user's trial): a reader refuses a lake folder that does not exist, naming
    the demo's lake and what creates one; in JSON log mode the refusal is one ERROR record."""
    import orjson

    env = {"FIRSTFAULT_LAKE": str(tmp_path / "nolake"), "FIRSTFAULT_STATE_DIR": str(tmp_path / "state")}
    r = _firstfault("serve", "--port", "0", env=env)
    said = " ".join(r.stderr.split())
    assert r.returncode == 2 and not (tmp_path / "nolake").exists() and not (tmp_path / "state").exists(), r.stderr
    assert said == (f"no lake at {tmp_path / 'nolake'} (no such folder): run `make demo` (its lake is "
                    f"{tmp_path / 'state' / 'demo' / 'lake'}), point FIRSTFAULT_LAKE / --config at one, or start an "
                    "ingest worker (or `firstfault run`) first: it creates the lake"), r.stderr
    r = _firstfault("serve", "--port", "0", env={**env, "FIRSTFAULT_LOG_FORMAT": "json"})
    [rec] = [orjson.loads(line) for line in r.stderr.splitlines() if line.strip()]
    assert (r.returncode, rec["level"], rec["error_code"], rec["stage"]) == (2, "ERROR", "no_lake", "serve"), r.stderr
    assert rec["message"].startswith(f"no lake at {tmp_path / 'nolake'} (no such folder): ")
    # the default lake, in a folder with none: the same (it created ./.firstfault/lake)
    r = _firstfault("serve", "--port", "0", env={"HOME": str(tmp_path)}, cwd=tmp_path)
    assert r.returncode == 2 and "no lake at .firstfault/lake (no such folder)" in r.stderr, r.stderr
    assert not (tmp_path / ".firstfault").exists()


def test_report_on_a_lake_that_does_not_exist_says_so_and_creates_nothing(tmp_path):
    r = _firstfault("report", "degraded-links", "--hour", "2026-11-30T03",
                    env={"FIRSTFAULT_LAKE": str(tmp_path / "nolake")})
    assert r.returncode == 2 and "no lake at" in r.stderr and not (tmp_path / "nolake").exists(), r.stderr


def test_sql_says_when_it_cut_the_rows_at_sql_max_rows(tmp_path):
    from ingest.lake import Lake

    Lake(str(tmp_path / "lake")).init()
    env = {"FIRSTFAULT_LAKE": str(tmp_path / "lake"), "FIRSTFAULT_SQL_MAX_ROWS": "3", "COLUMNS": "300"}
    r = _firstfault("sql", "SELECT * FROM range(5)", "--format", "json", env=env)
    assert r.returncode == 0 and len(r.stdout.splitlines()) == 3 and "truncated" in r.stderr, r.stderr
    r = _firstfault("sql", "SELECT * FROM range(3)", "--format", "csv", "-o", str(tmp_path / "x.csv"), env=env)
    assert r.returncode == 0 and "truncated" not in r.stderr and "wrote 3 rows" in r.stderr, r.stderr
    # said before the query, in click's box as the other usage errors (they were plain lines: a new user's trial)
    r = _firstfault("sql", "SELECT 1", "-o", str(tmp_path / "nosuch" / "x.csv"), env=env)
    assert r.returncode == 2 and "Usage: " in r.stderr and \
        f"Invalid value for --output: no such folder: {tmp_path / 'nosuch'}" in _boxed(r.stderr), r.stderr
    r = _firstfault("sql", "SELECT 1", "-o", str(tmp_path), env=env)  # was asked for a format by its name's ending
    assert r.returncode == 2 and f"Invalid value for --output: {tmp_path} is a folder" in _boxed(r.stderr) and \
        "say --format" not in r.stderr, r.stderr


def test_sql_s_table_shows_its_first_rows_and_no_terminal_codes(tmp_path):
    """The terminal table lays out every cell: 99k rows took minutes and GB (a break-it pass). It shows the first
    ``TABLE_MAX_ROWS`` and says how to get them all; a value's control characters are shown as escapes, not sent
    to the terminal (``chr(27)||'[2J'`` cleared it)."""
    from api.sql import TABLE_MAX_ROWS
    from ingest.lake import Lake

    Lake(str(tmp_path / "lake")).init()
    env = {"FIRSTFAULT_LAKE": str(tmp_path / "lake"), "COLUMNS": "120"}
    r = _firstfault("sql", f"SELECT range AS n FROM range({TABLE_MAX_ROWS + 5})", env=env)
    assert r.returncode == 0 and f"first {TABLE_MAX_ROWS:,} of {TABLE_MAX_ROWS + 5:,} rows" in r.stderr, r.stderr
    assert f" {TABLE_MAX_ROWS - 1} " in r.stdout and f" {TABLE_MAX_ROWS} " not in r.stdout
    r = _firstfault("sql", "SELECT chr(27) || '[2J' AS x", env=env)
    assert r.returncode == 0 and "\x1b" not in r.stdout and "\\x1b[2J" in r.stdout, r.stdout
    # a cell's start (1,000 cells of 64 KB took 8 s and 1 GB), and no right-to-left override (a break-it pass)
    r = _firstfault("sql", "SELECT repeat('x', 5000) || chr(8238) AS x FROM range(3)", env=env)
    assert r.returncode == 0 and r.stdout.count("x") == 3 * 1000 + 1 and "\u202e" not in r.stdout, r.stdout


def test_sql_writes_no_output_into_the_lake_and_replaces_a_file_only_with_force(tmp_path):
    """``sql -o <lake>/events/kind=xid/x.parquet`` wrote a file the events view then read as a broken Hive
    partition: every query failed until it was deleted; ``-o`` also replaced an input log silently (a break-it
    pass). Both are refused (exit 2) and nothing is written; ``--force`` replaces an existing file."""
    from ingest.lake import Lake

    Lake(str(tmp_path / "lake")).init()
    env = {"FIRSTFAULT_LAKE": str(tmp_path / "lake"), "FIRSTFAULT_STATE_DIR": str(tmp_path / "state"),
           "COLUMNS": "300"}  # click's box folds a long path
    (tmp_path / "lake" / "events" / "kind=xid").mkdir(parents=True, exist_ok=True)
    evil = tmp_path / "lake" / "events" / "kind=xid" / "evil.parquet"
    r = _firstfault("sql", "SELECT 1 AS a", "-o", str(evil), env=env)
    assert r.returncode == 2 and "Usage: " in r.stderr and not evil.exists(), r.stderr
    assert f"Invalid value for --output: {evil} is inside {tmp_path / 'lake'} (firstfault's own data" in \
        _boxed(r.stderr), r.stderr
    (tmp_path / "state").mkdir()
    r = _firstfault("sql", "SELECT 1 AS a", "-o", str(tmp_path / "state" / "x.csv"), env=env)
    assert r.returncode == 2 and f"is inside {tmp_path / 'state'} (firstfault's own" in _boxed(r.stderr), r.stderr
    log = tmp_path / "node07.csv"
    log.write_text("an input log\n")
    r = _firstfault("sql", "SELECT 1 AS a", "-o", str(log), env=env)
    assert r.returncode == 2 and "--force replaces it" in r.stderr and log.read_text() == "an input log\n", r.stderr
    r = _firstfault("sql", "SELECT 1 AS a", "-o", str(log), "--force", env=env)
    assert r.returncode == 0 and log.read_text().splitlines() == ['"a"', "1"], r.stderr
    r = _firstfault("sql", "SELECT count(*) AS n FROM events", "-f", "json", env=env)
    assert r.returncode == 0 and r.stdout.strip() == '{"n":0}', (r.stdout, r.stderr)


def test_sql_table_counts_its_rows_on_stderr(tmp_path):
    """An empty result prints an empty table: stderr says "0 rows" so it does not read as a failure."""
    from ingest.lake import Lake

    Lake(str(tmp_path / "lake")).init()
    env = {"FIRSTFAULT_LAKE": str(tmp_path / "lake")}
    r = _firstfault("sql", "SELECT * FROM events", env=env)
    assert r.returncode == 0 and "0 rows" in r.stderr, r.stderr
    r = _firstfault("sql", "SELECT * FROM range(3)", env=env)
    assert r.returncode == 0 and "3 rows" in r.stderr and "0 rows" not in r.stderr, r.stderr
    # no query: the views, and the table macro the README names with its parameters (it was not listed)
    r = _firstfault("sql", "-f", "csv", env=env)
    assert r.returncode == 0 and r.stdout.splitlines() == [
        '"name","type"', '"events","VIEW"', '"events_between(lo, hi)","TABLE MACRO"', '"incident_evidence","VIEW"',
        '"incident_versions","VIEW"', '"incidents","VIEW"', '"link_samples","VIEW"', '"topology","VIEW"'], r.stdout


def test_a_query_that_begins_with_a_comment_goes_after_the_options_end_or_on_standard_input(tmp_path):
    """The README's analyst queries begin with a ``--`` comment: pasted, the shell's argument was read as an option's
    name ("No such option: -- top initiating GPUs …", a fresh user's trial). After ``--``, or on standard input
    (``sql -``), it runs."""
    from ingest.lake import Lake

    Lake(str(tmp_path / "lake")).init()
    env = {"FIRSTFAULT_LAKE": str(tmp_path / "lake")}
    query = "-- the answer\nSELECT 42 AS x"
    for r in (_firstfault("sql", "-f", "csv", "--", query, env=env), _firstfault("sql", "-f", "csv", "-", env=env,
                                                                               stdin=query)):
        assert r.returncode == 0 and r.stdout.splitlines() == ['"x"', "42"], (r.stdout, r.stderr)
    # without either: exit 2 with the way out, not click's "No such option" with the whole query in its box
    r = _firstfault("sql", "-f", "csv", query, env=env)
    assert r.returncode == 2 and "put `--` before it" in r.stderr and "No such option" not in r.stderr, r.stderr
    # an option after `--` and the query is the query's extra text: exit 2 saying `--` ends the options, not click's
    # "Got unexpected extra argument(s) (-f csv)" (a fresh user's trial)
    for late in (["-f", "csv"], ["--format=csv"], ["-o", str(tmp_path / "x.csv")]):
        r = _firstfault("sql", "--", query, *late, env=env)
        assert r.returncode == 2 and "`--` ends the options; put them before it" in r.stderr, r.stderr
        assert "unexpected extra argument" not in r.stderr and not (tmp_path / "x.csv").exists(), r.stderr
    # bounded: a megabyte and more of "query" is refused, not read whole (a break-it pass: 100 MB, 790 MB of memory)
    r = _firstfault("sql", "-", env=env, stdin="SELECT 1 " + "-" * (1 << 20))
    assert r.returncode == 2 and "longer than 1,048,576 characters" in r.stderr, r.stderr


def test_sql_prints_a_float_column_as_it_was_stored(tmp_path):
    """An incident's ``confidence`` (FLOAT, float32) came out as 0.699999988079071 in json, csv and the table, where
    /incidents says 0.7 (a fresh-user trial): a FLOAT is printed by its shortest decimal text; Parquet keeps the
    float32."""
    import pyarrow.parquet as pq

    from ingest.lake import Lake

    Lake(str(tmp_path / "lake")).init()
    env = {"FIRSTFAULT_LAKE": str(tmp_path / "lake")}
    q = "SELECT 0.7::FLOAT AS confidence, 0.3::FLOAT AS c2, NULL::FLOAT AS c3, 0.1::DOUBLE AS d"
    r = _firstfault("sql", "-f", "json", q, env=env)
    assert r.returncode == 0 and json.loads(r.stdout) == {"confidence": 0.7, "c2": 0.3, "c3": None, "d": 0.1}, r.stdout
    r = _firstfault("sql", "-f", "csv", q, env=env)
    assert r.stdout.splitlines()[1] == "0.7,0.3,,0.1", r.stdout
    r = _firstfault("sql", q, env={**env, "COLUMNS": "200"})
    assert "0.7" in r.stdout and "0.6999" not in r.stdout, r.stdout
    r = _firstfault("sql", "-o", str(tmp_path / "x.parquet"), q, env=env)
    assert r.returncode == 0 and str(pq.read_schema(tmp_path / "x.parquet").field("confidence").type) == "float"


def test_a_folder_that_is_no_lake_is_refused_and_left_as_it_is(tmp_path):
    """A lake path one folder too high (``.firstfault/demo``) or any other folder: exit 2, nothing written into
    it; the same lake as a ``file://`` URL is read."""
    from ingest.lake import Lake

    Lake(str(tmp_path / "demo" / "lake")).init()
    for cmd in (["sql", "SELECT count(*) FROM events"], ["report", "degraded-links", "--hour", "2026-11-30T03"]):
        r = _firstfault(*cmd, env={"FIRSTFAULT_LAKE": str(tmp_path / "demo")})
        assert r.returncode == 2 and "no lake at" in r.stderr, r.stderr
    assert sorted(p.name for p in (tmp_path / "demo").iterdir()) == ["lake"]
    r = _firstfault("sql", "SELECT count(*) AS n FROM events", "-f", "json",
                    env={"FIRSTFAULT_LAKE": f"file://{tmp_path / 'demo' / 'lake'}"})
    assert r.returncode == 0 and r.stdout.strip() == '{"n":0}', r.stderr


def test_a_loop_of_links_or_a_link_to_nothing_is_said_as_such(tmp_path):
    """``diagnose`` on a loop of symbolic links said "no such file or directory" (a break-it pass): the system's own
    words now, and where a link leads when it leads nowhere; a path that is not there is still "no such file"."""
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    (tmp_path / "dangling").symlink_to(tmp_path / "gone")
    r = _firstfault("diagnose", str(tmp_path / "a"), str(tmp_path / "dangling"), str(tmp_path / "nope"))
    assert r.returncode == 2, r.stderr
    lines = [" ".join(x.split()) for x in r.stderr.replace(str(tmp_path), "T").strip().splitlines()]
    assert lines == ["no such file or directory: T/nope", "cannot read T/a: Too many levels of symbolic links",
                     "cannot read T/dangling: a symbolic link to nothing (T/gone does not exist)"], r.stderr


def test_a_folders_empty_files_are_said(tmp_path):
    """A folder's empty.log went unsaid while its notes and binary files were listed as skipped (a fresh user's
    trial): files with no line beside files with some are named on stderr; a file with lines but no event is not."""
    xid = "[Mon Feb  2 22:52:40 2026] NVRM: Xid (PCI:0000:4c:00): 79, pid=1, GPU has fallen off the bus.\n"
    (tmp_path / "node01.log").write_text(xid)
    (tmp_path / "empty.log").write_text("")
    (tmp_path / "blank.log").write_text("\n  \n")
    (tmp_path / "quiet.log").write_text("nothing to see\n")
    r = _firstfault("diagnose", str(tmp_path), "-f", "json")
    assert r.returncode == 0, r.stderr
    said = [x for x in r.stderr.replace(str(tmp_path), "T").splitlines() if x.startswith("skipped")]
    assert said == ["skipped, empty or blank lines only: T/blank.log, T/empty.log"], r.stderr


def test_a_folders_notes_and_configuration_files_are_said_not_read_and_read_when_named(tmp_path):
    """A case folder's write-up (``source.md``) and ``expected.yaml`` quote log lines: read as logs they were hosts
    "source" and "expected" with error incidents of their own (a fresh user's trial). Under a folder they are not
    read, and stderr says so; named as a file, one is read."""
    xid = "[Mon Feb  2 22:52:40 2026] NVRM: Xid (PCI:0000:4c:00): 79, pid=1, GPU has fallen off the bus.\n"
    (tmp_path / "node01.log").write_text(xid)
    (tmp_path / "source.md").write_text("The thread quoted:\n" + xid.replace("4c:00", "4d:00"))
    (tmp_path / "expected.yaml").write_text("note: |\n  " + xid.replace("4c:00", "4e:00"))
    r = _firstfault("diagnose", str(tmp_path), "-f", "json")
    assert r.returncode == 0, r.stderr
    hosts = {i["initiator"]["host"] for i in json.loads(r.stdout)["incidents"]}
    assert hosts == {"node01"}, hosts
    said = " ".join(r.stderr.split())
    assert "skipped, notes and configuration files under a folder" in said and "source.md" in said \
        and "expected.yaml" in said, r.stderr
    r = _firstfault("diagnose", str(tmp_path / "source.md"), "-f", "json")
    assert [i["initiator"]["device"] for i in json.loads(r.stdout)["incidents"]] == ["0000:4d:00.0"], r.stdout
    # compressed notes too; a folder of notes only says so (a second break-it pass: "no files found" alone)
    (tmp_path / "node01.log").unlink()
    (tmp_path / "expected.yaml").rename(tmp_path / "expected.YAML.gz")
    (tmp_path / "expected.YAML.gz").write_bytes(gzip.compress(xid.encode()))
    r = _firstfault("diagnose", str(tmp_path))
    said = " ".join(r.stderr.split())
    assert r.returncode == 2 and "expected.YAML.gz" in said and "(2 notes or configuration files, not read in a " \
        "folder: name one to read it)" in said, r.stderr

def test_markup_in_paths_and_settings_is_printed_as_text(tmp_path):
    """Paths, lake locations and error texts are user text: ``[/]`` in them is no markup to fail on (each
    exited 1 with rich's MarkupError traceback)."""
    r = _firstfault("diagnose", str(tmp_path / "nope[/]x"))
    assert r.returncode == 2 and "no such file or directory" in r.stderr and "nope[/]x" in r.stderr, r.stderr
    (tmp_path / "empty[/]dir").mkdir(parents=True)  # "empty[" holding "]dir"
    r = _firstfault("diagnose", str(tmp_path / "empty[/]dir"), "--fail-on", "error")
    assert r.returncode == 2 and "no files found" in r.stderr and "empty[/]dir" in r.stderr, r.stderr
    assert "hidden" not in r.stderr
    (tmp_path / "empty[/]dir" / ".node00.log").write_bytes(b"x\n")  # a hidden file is not read in a folder: said
    r = _firstfault("diagnose", str(tmp_path / "empty[/]dir"))
    assert r.returncode == 2 and "(1 hidden file, whose names begin with '.', is not read in a folder: pass it by " \
        "name)" in " ".join(r.stderr.split()), r.stderr
    (tmp_path / "empty[/]dir" / ".node00.log").unlink()
    (tmp_path / "empty[/]dir" / "node01.log").write_bytes(b"")  # an empty capture holds no line ("1 lines" before)
    (tmp_path / "empty[/]dir" / "node02.log.gz").write_bytes(gzip.compress(b""))
    (tmp_path / "empty[/]dir" / "node03.log").write_bytes(b"\n  \n\n")  # blank lines only
    (tmp_path / "empty[/]dir" / "node04.log").write_bytes(b"\0" * 1000)  # zeroed by a power loss: was "healthy"
    r = _firstfault("diagnose", str(tmp_path / "empty[/]dir"), "--fail-on", "error")
    assert r.returncode == 2 and "no log lines in" in r.stderr and "4 files, empty or blank" in r.stderr, r
    assert "lines →" not in r.stdout
    r = _firstfault("sql", "SELECT 1", env={"FIRSTFAULT_LAKE": str(tmp_path / "x[/]y")})
    assert r.returncode == 2 and "no lake at" in r.stderr and "x[/]y" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr


def test_sql_exit_codes_tell_a_wrong_query_from_a_failed_one(tmp_path):
    """A query the views cannot answer (no such table or column, no parse) is a usage error, exit 2; one that
    fails while running (here a cast of a bad value) is a runtime failure, exit 1 (api.cli's exit codes)."""
    from ingest.lake import Lake

    Lake(str(tmp_path / "lake")).init()
    env = {"FIRSTFAULT_LAKE": str(tmp_path / "lake")}
    for q, code, said in (("SELECT * FROM nosuch", 2, "nosuch"), ("SELECT nocol FROM events", 2, "nocol"),
                          ("SELEC 1", 2, "syntax error"), ("SELECT * FROM read_csv('/etc/passwd')", 2, "Permission"),
                          ("SELECT 'x'::INTEGER", 1, "query failed")):
        r = _firstfault("sql", q, env=env)
        assert r.returncode == code and said in r.stderr, (q, r.returncode, r.stderr)


def test_sql_output_format_follows_the_file_name(tmp_path):
    from ingest.lake import Lake

    Lake(str(tmp_path / "lake")).init()
    env = {"FIRSTFAULT_LAKE": str(tmp_path / "lake")}
    q = "SELECT 1 AS a, 'x' AS b"
    assert _firstfault("sql", q, "-o", str(tmp_path / "r.csv"), env=env).returncode == 0
    assert (tmp_path / "r.csv").read_text().splitlines() == ['"a","b"', '1,"x"']
    assert _firstfault("sql", q, "-o", str(tmp_path / "r.ndjson"), env=env).returncode == 0
    assert (tmp_path / "r.ndjson").read_text() == '{"a":1,"b":"x"}\n'
    r = _firstfault("sql", q, "-o", str(tmp_path / "r.txt"), env=env)
    assert r.returncode == 2 and "say --format" in r.stderr and not (tmp_path / "r.txt").exists()


def test_an_output_that_fails_to_be_written_leaves_what_was_there(tmp_path):
    """``sql -f parquet -o keep.parquet`` on a full disk deleted the earlier keep.parquet (pyarrow removes a path it
    failed to write), and ``-o /dev/full`` as root deleted the device (a break-it pass). ``--output`` is written
    under a temporary name and renamed once whole; what is no regular file (a link to ``/dev/null``, a FIFO, a
    device) is written as it is, never replaced."""
    import errno
    import os

    from api.render import write_output

    keep = tmp_path / "keep.parquet"
    keep.write_bytes(b"earlier result")

    def full_disk(f) -> None:
        f.write(b"half a")
        raise OSError(errno.ENOSPC, "No space left on device")

    try:
        write_output(keep, full_disk)
    except OSError as e:
        assert e.errno == errno.ENOSPC
    else:
        raise AssertionError("the write's error was not raised")
    assert keep.read_bytes() == b"earlier result" and sorted(os.listdir(tmp_path)) == ["keep.parquet"]
    keep.chmod(0o600)
    write_output(keep, lambda f: f.write(b"new result"))
    assert keep.read_bytes() == b"new result" and sorted(os.listdir(tmp_path)) == ["keep.parquet"]
    assert keep.stat().st_mode & 0o777 == 0o600  # its mode stays (0644 after the rename: a break-it pass)
    link = tmp_path / "latest.parquet"  # a link to a file: the file is written, the link stays one
    link.symlink_to("keep.parquet")
    write_output(link, lambda f: f.write(b"via the link"))
    assert link.is_symlink() and keep.read_bytes() == b"via the link"
    link.unlink()
    null = tmp_path / "null"
    null.symlink_to(os.devnull)
    from ingest.lake import Lake

    Lake(str(tmp_path / "lake")).init()
    r = _firstfault("sql", "SELECT 1 AS a", "-f", "parquet", "-o", str(null),
                    env={"FIRSTFAULT_LAKE": str(tmp_path / "lake")})
    assert r.returncode == 0, r.stderr
    assert null.is_symlink() and os.readlink(null) == os.devnull


def test_sql_writes_intervals_and_blobs_in_every_format_or_says_which_cannot(tmp_path):
    """An interval or BLOB column: JSON parts and base64 in json, csv and the table (csv and Parquet writes
    ended in an Arrow traceback, exit 1); Parquet has no interval type: exit 2 naming the cast, no file left;
    a TIME WITH TIME ZONE would lose its offset: exit 2 naming the cast."""
    from ingest.lake import Lake

    Lake(str(tmp_path / "lake")).init()
    env = {"FIRSTFAULT_LAKE": str(tmp_path / "lake")}
    q = "SELECT INTERVAL 1 DAY AS i, 'ab'::BLOB AS b"
    r = _firstfault("sql", q, "-f", "json", env=env)
    assert r.returncode == 0 and r.stdout == '{"i":{"months":0,"days":1,"nanoseconds":0},"b":"YWI="}\n', r.stderr
    r = _firstfault("sql", q, "-f", "csv", env=env)
    assert r.returncode == 0 and r.stdout.splitlines()[1] == '"{""months"":0,""days"":1,""nanoseconds"":0}","YWI="', r
    r = _firstfault("sql", "SELECT '\\xFF\\x00a'::BLOB AS b", "-f", "csv", env=env)  # not UTF-8: a traceback before
    assert r.returncode == 0 and r.stdout.splitlines() == ['"b"', '"/wBh"'], r
    r = _firstfault("sql", q, env=env)
    assert r.returncode == 0 and '{"months":0,"days":1,"nanoseconds":0}' in r.stdout and "YWI=" in r.stdout, r
    r = _firstfault("sql", q, "-o", str(tmp_path / "r.parquet"), env=env)
    assert r.returncode == 2 and "CAST that column to VARCHAR" in r.stderr and not (tmp_path / "r.parquet").exists()
    r = _firstfault("sql", "SELECT '12:00:00+02'::TIMETZ AS t", env=env)
    assert r.returncode == 2 and "CAST it to VARCHAR" in r.stderr and "Traceback" not in r.stderr, r.stderr
    r = _firstfault("sql", "SELECT 1 AS a, 2 AS a", "-f", "json", env=env)  # as POST /sql: was {"a":1,"a_1":2}
    assert r.returncode == 2 and "appear more than once" in r.stderr and not r.stdout, r
    for fmt in ("json", "table"):  # a value Python's datetime cannot hold: a traceback and exit 1 before
        r = _firstfault("sql", "SELECT 'infinity'::DATE AS d", "-f", fmt, env=env)
        assert r.returncode == 2 and "CAST it to" in r.stderr and "Traceback" not in r.stderr, (fmt, r.stderr)
    # csv alike: Arrow's writer printed "<value out of range: …>", or a year -28164 as data, exit 0 (a break-it pass)
    for q in ("SELECT 'infinity'::DATE AS d", "SELECT '-infinity'::TIMESTAMPTZ AS d",
              "SELECT '294247-01-10 04:00:54.775806'::TIMESTAMP AS d"):
        r = _firstfault("sql", q, "-f", "csv", env=env)
        assert r.returncode == 2 and "outside the years 1 - 9999" in r.stderr and not r.stdout, (q, r)
    r = _firstfault("sql", "SELECT '2026-01-01 10:00:00'::TIMESTAMP_S AS s, '9999-12-31 23:59:59'::TIMESTAMP_MS AS m",
                    "-f", "csv", env=env)  # seconds and milliseconds inside the years: written (the bounds truncated)
    assert r.returncode == 0 and r.stdout.splitlines() == ['"s","m"', "2026-01-01 10:00:00,9999-12-31 23:59:59.000"], r
    for fmt in ("json", "csv", "table"):  # a TIME of 24:00:00 was written as 00:00:00 (csv: "<value out of range>")
        for q in ("SELECT '24:00:00'::TIME AS t", "SELECT [{'a': TIME '24:00:00'}] AS t"):  # nested too
            r = _firstfault("sql", q, "-f", fmt, env=env)
            assert r.returncode == 2 and "holds the TIME 24:00:00" in r.stderr and not r.stdout, (fmt, q, r.stderr)
    r = _firstfault("sql", "SELECT '23:59:59.999999'::TIME AS t", "-f", "csv", env=env)
    assert r.returncode == 0 and r.stdout.splitlines() == ['"t"', "23:59:59.999999"], r
    # NaN and infinities are null in every format, in a column as inside a list (csv and the table printed
    # nan and inf beside a list's null)
    q = "SELECT 'nan'::DOUBLE AS x, 'inf'::FLOAT AS y, [1.5, '-inf'::DOUBLE] AS l, 2.5::DOUBLE AS z"
    r = _firstfault("sql", q, "-f", "csv", env=env)
    assert r.returncode == 0 and r.stdout.splitlines()[1] == ',,"[1.5,null]",2.5', r
    r = _firstfault("sql", q, "-f", "json", env=env)
    assert r.returncode == 0 and r.stdout == '{"x":null,"y":null,"l":[1.5,null],"z":2.5}\n', r
    r = _firstfault("sql", q, env={**env, "COLUMNS": "200"})
    assert r.returncode == 0 and "nan" not in r.stdout.lower() and "inf" not in r.stdout.lower() and "2.5" in r.stdout, r
    # the table prints values and names as text, not rich markup: a list printed empty, "[/]" was a traceback
    r = _firstfault("sql", "SELECT ['nan'::FLOAT] AS \"[x]\", '[rank0]:[E1129 03:12:10]' AS m, '[/]' AS s",
                    env={**env, "COLUMNS": "200"})
    assert r.returncode == 0 and "[null]" in r.stdout and "[x]" in r.stdout and "[rank0]:[E1129" in r.stdout, r
    assert "[/]" in r.stdout and "Traceback" not in r.stderr, r


def test_a_second_demo_leaves_the_running_demos_lake_alone(tmp_path):
    """A demo holds ``<state_dir>/demo.lock`` while it runs: a second one (``--once`` or not) stops before it
    makes the demo lake afresh; one on the running demo's port stops before that too."""
    import fcntl
    import os
    import socket

    lake = tmp_path / "demo" / "lake"
    lake.mkdir(parents=True)
    (lake / "kept").write_text("x")
    env = {"FIRSTFAULT_STATE_DIR": str(tmp_path)}
    with open(tmp_path / "demo.lock", "w") as lock:  # what a running demo holds
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        lock.write(str(os.getpid()))
        lock.flush()
        r = _firstfault("demo", "--once", env=env)
        assert r.returncode == 1 and f"another demo is running (pid {os.getpid()})" in r.stderr, r.stderr
        # how to run one beside it, as the README says (a second new user's trial)
        assert " ".join(r.stderr.split()) == (
            f"another demo is running (pid {os.getpid()}) and serving its lake {lake}: stop it first (Ctrl-C), or run "
            "your own beside it with FIRSTFAULT_STATE_DIR=/tmp/mine FIRSTFAULT_API_PORT=18080"), r.stderr
        with socket.create_server(("127.0.0.1", 0)) as busy:  # the running demo's port: named as the demo
            r = _firstfault("demo", "--port", str(busy.getsockname()[1]), env=env)
        assert r.returncode == 1 and "another demo is running" in r.stderr, r.stderr
    assert (lake / "kept").exists() and "Traceback" not in r.stderr
    with socket.create_server(("127.0.0.1", 0)) as busy:
        r = _firstfault("demo", "--port", str(busy.getsockname()[1]), env=env)
    assert r.returncode == 1 and "choose another with --port" in r.stderr and (lake / "kept").exists(), r.stderr


def test_a_demo_refused_before_it_starts_leaves_nothing_it_did_not_find(tmp_path):
    """A demo refused because its API port was busy said so and exited 1, but left ``demo.lock`` and the state
    folder it had made (a helper's pass): refused before it starts, it removes what it made — the lock, the folders
    — and leaves what it found: a folder's files, a lock file an earlier demo left, a running demo's lock."""
    import fcntl
    import os
    import socket

    def refused(state):
        with socket.create_server(("127.0.0.1", 0)) as busy:
            r = _firstfault("demo", "--port", str(busy.getsockname()[1]), env={"FIRSTFAULT_STATE_DIR": str(state)})
        assert r.returncode == 1 and "choose another with --port" in r.stderr and "Traceback" not in r.stderr, r
        return r

    refused(tmp_path / "new" / "state")  # two folders made, then refused
    assert list(tmp_path.iterdir()) == []
    found = tmp_path / "found"
    (found / "demo" / "lake").mkdir(parents=True)
    (found / "demo" / "lake" / "kept").write_text("x")
    refused(found)
    assert sorted(str(p.relative_to(found)) for p in found.rglob("*")) == ["demo", "demo/lake", "demo/lake/kept"]
    (found / "demo.lock").write_text("12345")  # an earlier demo's, not held: found, so kept
    refused(found)
    assert (found / "demo.lock").exists() and sorted(p.name for p in found.iterdir()) == ["demo", "demo.lock"]
    running = tmp_path / "running"
    running.mkdir()
    with open(running / "demo.lock", "w") as lock:  # a running demo's: refused as such, its lock kept
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        lock.write(str(os.getpid()))
        lock.flush()
        r = _firstfault("demo", "--once", env={"FIRSTFAULT_STATE_DIR": str(running)})
        assert r.returncode == 1 and "another demo is running" in r.stderr, r.stderr
        assert (running / "demo.lock").read_text() == str(os.getpid())


def test_a_demo_lock_whose_pid_is_dead_does_not_block_the_next_demo(tmp_path):
    """``demo.lock`` is an ``flock``, not its text: a demo that died (``kill -9``, a crash) let the lock go with its
    process, though the file still names its pid. The next demo takes it and writes its own pid; one refused after
    that (here by its ``check``, as by a busy port) leaves the file, which it found, unheld with its own pid, and
    the next takes it again."""
    import io
    import os
    import subprocess
    import sys

    from rich.console import Console

    from api.demo import run_demo

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    lock = tmp_path / "demo.lock"
    lock.write_text(dead.stdout.strip())  # a pid no process has now
    seen = []

    class Refused(Exception):
        pass

    def check():  # runs once the demo holds its lock: what the file says then
        seen.append(lock.read_text())
        raise Refused

    for _ in range(2):
        with pytest.raises(Refused):
            run_demo(Settings(state_dir=tmp_path), once=True, port=None, console=Console(file=io.StringIO()),
                     check=check)
    assert seen == [str(os.getpid())] * 2 and lock.read_text() == str(os.getpid())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["demo.lock"]


def test_a_lock_removed_by_its_holder_is_taken_afresh(tmp_path, monkeypatch):
    """A refused demo removes its ``demo.lock`` while it holds it: one who opened the file before that and locks it
    after would hold a file no longer at the path, beside a third who makes the path afresh. ``hold_lock`` takes
    only the path's own file: the removed one is let go and the path locked anew."""
    import fcntl
    import os

    from api import pager

    path = tmp_path / "demo.lock"
    first, _ = pager.hold_lock(path)
    flock = fcntl.flock

    def holder_removes_it_first(f, op):  # between hold_lock's open and its lock, the holder removes it and ends
        if first is not None and not first.closed:
            path.unlink()
            first.close()
        flock(f, op)

    monkeypatch.setattr(pager.fcntl, "flock", holder_removes_it_first)
    again, pid = pager.hold_lock(path)
    assert again is not None and pid == "" and path.read_text() == str(os.getpid())
    assert os.stat(path).st_ino == os.fstat(again.fileno()).st_ino
    monkeypatch.setattr(pager.fcntl, "flock", flock)
    assert pager.hold_lock(path) == (None, str(os.getpid()))
    again.close()


def test_where_the_api_listens_is_info_told_at_any_level_and_text_logs_are_utc(capsys):
    """``serve``'s "API on …" and "serving the lake at …" were WARNINGs (to pass the default level), which a log-based
    alert reads as trouble; text log lines printed local time with no zone beside UTC incidents (a fresh user's
    trial). INFO at any level, and text times end in Z."""
    import logging

    from api.cli import setup_logging

    root = logging.getLogger()
    saved = (root.handlers[:], root.level)
    try:
        for fmt in ("json", "text"):
            setup_logging(fmt, "WARNING")
            logging.getLogger("firstfault.serve").info("API on http://127.0.0.1:1")
            logging.getLogger("firstfault.other").info("hidden")
        err = capsys.readouterr().err.splitlines()
        assert len(err) == 2 and json.loads(err[0])["level"] == "INFO", err
        assert re.match(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ INFO firstfault.serve: API on", err[1]), err
    finally:
        root.handlers[:], _ = saved
        root.setLevel(saved[1])
        logging.getLogger("firstfault.serve").setLevel(logging.NOTSET)


def test_serve_says_where_its_lake_setting_came_from(tmp_path, monkeypatch):
    """``FIRSTFAULT_LAKE=.firstfault/demo/lake firstfault serve`` said "(set FIRSTFAULT_LAKE or --config to read
    another)" of a lake FIRSTFAULT_LAKE had set (a second new user's trial): it says where the value came from, the
    variable, the config file or the default (with how to read another)."""
    import socket

    import uvicorn

    from ingest.lake import Lake

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(uvicorn.Server, "run", lambda self, *a, **k: None)  # said before it serves: no server
    for k in ("FIRSTFAULT_LAKE", "FIRSTFAULT_CONFIG", "FIRSTFAULT_LOG_FORMAT"):
        monkeypatch.delenv(k, raising=False)
    for lake in ("mine", ".firstfault/lake", "other"):
        Lake(str(tmp_path / lake)).init()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = str(sock.getsockname()[1])

    def said(env: dict[str, str], *args: str) -> str:
        r = CliRunner().invoke(app, ["serve", "--port", port, *args], env=env)
        assert r.exit_code == 0, r.output
        return next(line for line in r.stderr.splitlines() if line.startswith("serving the lake at"))

    assert said({"FIRSTFAULT_LAKE": "mine"}) == "serving the lake at mine (from FIRSTFAULT_LAKE)"
    assert said({}) == ("serving the lake at .firstfault/lake (the default; set FIRSTFAULT_LAKE or --config to read "
                        "another)")
    (tmp_path / "other.toml").write_text('lake = "other"\n')
    assert said({}, "--config", "other.toml") == ("serving the lake at other (from other.toml; relative to the "
                                                 f"working folder: {(tmp_path / 'other').resolve()})")


def test_the_web_servers_own_logs_follow_log_format_and_log_level(tmp_path):
    """``serve`` with ``log_format = "json"`` (from firstfault.toml) and ``FIRSTFAULT_LOG_LEVEL=INFO``: uvicorn's
    start-up and access lines are JSON objects on stderr like firstfault's own, nothing on stdout."""
    import signal

    import orjson

    (tmp_path / "lake").mkdir()
    (tmp_path / "firstfault.toml").write_text(f'log_format = "json"\nlake = "{tmp_path / "lake"}"\n')
    _, out, err, port = _serve_until_healthy(tmp_path, {"PATH": "/usr/bin:/bin", "FIRSTFAULT_LOG_LEVEL": "INFO"},
                                             signal.SIGINT)
    lines = [orjson.loads(line) for line in err.decode().splitlines() if line.strip()]
    assert out == b"" and {"uvicorn.error", "uvicorn.access"} <= {r["logger"] for r in lines}, err.decode()
    assert any("GET /healthz" in r["message"] for r in lines if r["logger"] == "uvicorn.access")
    assert [r["level"] for r in lines if r["message"].startswith(("serving the lake at", "API on "))] == ["INFO"] * 2
    # a lake nothing was ingested into is said to be one (a mistyped lake path served empty answers silently)
    assert [r["level"] for r in lines if "holds no events yet" in r["message"]] == ["WARNING"], err.decode()
    assert [r.get("url") for r in lines if r["message"].startswith("API on ")] == [f"http://127.0.0.1:{port}"]
    # one message per record, no terminal colour codes; times are ISO 8601 UTC
    assert not any("color_message" in r or "\x1b" in r["message"] for r in lines), err.decode()
    assert all(datetime.fromisoformat(r["time"]).utcoffset() == timedelta(0) for r in lines)


def test_an_empty_lake_is_told_from_one_with_events(tmp_path):
    """``serve``'s check for a lake nothing was ingested into: no folder, only the ``_schema`` partition
    (``Lake.init``), then a lake with one events part; an S3 lake is not listed."""
    from api.store import holds_no_events as _holds_no_events
    from api.diagnose import diagnose_paths
    from ingest.lake import Lake
    from schemas.settings import Settings

    assert _holds_no_events(str(tmp_path / "nowhere"))
    lake = Lake(tmp_path / "lake")
    lake.init()
    assert _holds_no_events(str(tmp_path / "lake")) and _holds_no_events(f"file://{tmp_path / 'lake'}")
    _, batch, _ = diagnose_paths([Path(__file__).parent / "corpus" / "002-sxid12028-xid137-xid94-nvswitch-cascade"], Settings())
    lake.write("events", batch.events, "b1")
    assert not _holds_no_events(str(tmp_path / "lake")) and not _holds_no_events("s3://bucket/lake")


def test_diagnose_says_when_different_files_are_one_host_by_their_name(tmp_path):
    """Files of one name from other machines (``a/node01.log``, ``b/node01.log``: each corpus case's log) are one
    host to the correlator, which joined their faults into one incident with no word (a fresh-user trial):
    ``api.diagnose.same_named_files`` lists them, ``diagnose`` says so on stderr. One file given twice, and a host's
    files of different names, are not listed."""
    from api.diagnose import diagnose_paths, same_named_files
    from schemas.settings import Settings

    xid = "[ 100.0] NVRM: Xid (PCI:0000:1b:00): 79, pid=1, GPU has fallen off the bus.\n"
    for d, text in (("a", xid), ("b", xid.replace("1b:00", "3b:00")), ("c", xid)):
        (tmp_path / d).mkdir()
        (tmp_path / d / "node01.log").write_text(text)
    (tmp_path / "a" / "node01.nccl.log").write_text("node01:1:2 [0] NCCL INFO Init COMPLETE\n")
    _, batch, _ = diagnose_paths([tmp_path / "a", tmp_path / "b", tmp_path / "c"], Settings())
    [(host, files)] = same_named_files(batch.events).items()
    assert host == "node01" and len(files) == 2 and {f.split("@")[0] for f in files} == {"a/node01.log", "b/node01.log"}
    _, one, _ = diagnose_paths([tmp_path / "a", tmp_path / "c"], Settings())  # the same content twice: one file
    assert same_named_files(one.events) == {}
    # names in upper case give the lake's lower-case host: still said (it was lost, Node01 != node01: a break-it pass)
    for d, text in (("A", xid), ("B", xid.replace("1b:00", "3b:00"))):
        (tmp_path / d).mkdir()
        (tmp_path / d / "Node01.log").write_text(text)
    _, upper, _ = diagnose_paths([tmp_path / "A", tmp_path / "B"], Settings())
    assert list(same_named_files(upper.events)) == ["node01"]
    # files named by their kind take their folder's host: two hosts' kern.log under one job folder are said too
    for d in ("alpha", "bravo"):
        (tmp_path / "job-12345" / d).mkdir(parents=True)
        (tmp_path / "job-12345" / d / "kern.log").write_text(xid if d == "alpha" else xid.replace("1b:00", "3b:00"))
    _, job, _ = diagnose_paths([tmp_path / "job-12345"], Settings())
    [(host, files)] = same_named_files(job.events).items()
    assert host == "job-12345" and {f.split("@")[0] for f in files} == {"job-12345/alpha/kern.log",
                                                                         "job-12345/bravo/kern.log"}
    # ... also of different names; a host's logs of two kinds in the folder that names it are its own (not said)
    (tmp_path / "job-12345" / "bravo" / "kern.log").rename(tmp_path / "job-12345" / "bravo" / "dmesg.log")
    _, job, _ = diagnose_paths([tmp_path / "job-12345"], Settings())
    assert {f.split("@")[0] for f in same_named_files(job.events)["job-12345"]} == {"job-12345/alpha/kern.log",
                                                                                    "job-12345/bravo/dmesg.log"}
    (tmp_path / "node07").mkdir()
    (tmp_path / "node07" / "kern.log").write_text(xid)
    (tmp_path / "node07" / "dmesg.log").write_text(xid.replace("1b:00", "3b:00"))
    _, own, _ = diagnose_paths([tmp_path / "node07"], Settings())
    assert same_named_files(own.events) == {}
    r = _firstfault("diagnose", str(tmp_path / "a"), str(tmp_path / "b"))
    both = f"({tmp_path / 'a' / 'node01.log'}, {tmp_path / 'b' / 'node01.log'})"
    assert r.returncode == 0 and f"all host node01 by their name or folder {both}" in " ".join(r.stderr.split()), \
        r.stderr
    # two folders of one name given: each file by the path it was given as ("input/node01.log@2c5c58c6" twice told
    # nothing: a fresh user's trial)
    for d in ("x", "y"):
        (tmp_path / d / "input").mkdir(parents=True)
        (tmp_path / d / "input" / "node01.log").write_text(xid if d == "x" else xid.replace("1b:00", "3b:00"))
    r = _firstfault("diagnose", str(tmp_path / "x" / "input"), str(tmp_path / "y" / "input"))
    said = " ".join(r.stderr.split())
    assert ("2 different files are all host node01 by their name or folder "
            f"({tmp_path / 'x' / 'input' / 'node01.log'}, "
            f"{tmp_path / 'y' / 'input' / 'node01.log'})") in said, r.stderr
    assert "diagnose them apart" in r.stderr
    # what was read besides events is counted too: corpus 006's `nvidia-smi topo -m` gave "3 lines → 0 events"
    [case] = (Path(__file__).parent / "corpus").glob("006-*")
    r = _firstfault("diagnose", str(case / "input"))
    assert r.returncode == 0 and "3 lines → 0 events, 2 topology facts\n" in r.stderr, r.stderr
    # ... and a symptom of that host uses them: no "has no events in these logs" (a second fresh-user trial)
    r = _firstfault("diagnose", str(case / "input"), "--symptom", "hang:0,1", "--format", "json")
    assert r.returncode == 0 and "has no events" not in r.stderr, r.stderr
    assert [i["category"] for i in json.loads(r.stdout)["incidents"]] == ["pcie_p2p"]


def test_the_file_time_note_says_which_lines_printed_no_time():
    """The stderr note on events timed by their file's modification time names, per source, what the lines
    printed and how to capture wall-clock times: a raw dmesg stamp is a kernel line's, never an NCCL line's
    (it said "a raw dmesg stamp counts seconds since boot" for an NCCL log: a fresh-user trial)."""
    import pyarrow as pa

    from api.diagnose import mtime_note

    def table(*rows):
        return pa.table({"source": [r[0] for r in rows], "ts_basis": [r[1] for r in rows]})

    assert mtime_note(table(("nccl", "line"), ("dmesg", "envelope"))) is None
    note = mtime_note(table(("nccl", "file")))
    assert note.startswith("1 event timed by its file's modification time") and "1 NCCL/framework line with no " \
        "time printed, or a stamp of a form not read (docs/recognition.md: line stamps): NCCL 2.26 and later" in note \
        and "dmesg" not in note
    note = mtime_note(table(("dmesg", "file"), ("dmesg", "file"), ("nvml", "file"), ("nccl", "line")))
    assert note.startswith("3 events timed by their file's") and "2 kernel lines with a raw dmesg stamp" in note \
        and "`dmesg -T`" in note and "1 NVML/nvidia-smi line with no time printed" in note and "NCCL" not in note
    # standard input (`diagnose -`) is saved to a file when read: its lines are timed by that, not by a file's
    # modification time the user could look up (a fresh-user trial)
    piped = pa.table({"source": ["dmesg", "nccl", "dmesg"], "ts_basis": ["file"] * 3,
                      "origin": ["file:vm.stdin@1a2b:1", "file:node07.log@9f:4", "file:vm.stdin@1a2b:2"]})
    note = mtime_note(piped, "vm.stdin")
    assert note.splitlines()[:2] == ["1 event timed by its file's modification time:", "  - 1 NCCL/framework line "
                                     "with no time printed, or a stamp of a form not read (docs/recognition.md: line "
                                     "stamps): NCCL 2.26 and later stamp every level with "
                                     "NCCL_DEBUG_TIMESTAMP_LEVELS=ALL"] \
        and note.splitlines()[2:] == [
            "  - a copied file moves them: copy with `cp -p`, `scp -p` or `rsync -t`, or set it back with `touch -d`",
            "2 events timed by when standard input was read:",
            "  - 2 kernel lines with a raw dmesg stamp (seconds since boot, counted back from the time it was read) or "
            "none: `dmesg -T` or `journalctl -k -o short-iso` print wall-clock times"], note
    assert mtime_note(piped).startswith("3 events timed by their file's modification time")
    # a line whose own stamp is no time a fleet's log carries (1970, 2099) is said as such, not as one that printed
    # none (a break-it pass: "kernel lines with a raw dmesg stamp … or none" for a full ISO stamp of 1970)
    stamped = pa.table({"source": ["dmesg", "dmesg"], "ts_basis": ["file", "file"],
                        "details": ['{"ts_rejected": 5000000, "ts_upper_bound": true}', '{"ts_upper_bound": true}']})
    note = mtime_note(stamped)
    assert "1 kernel line with a raw dmesg stamp" in note and "1 line whose own stamp is no time from 2000 to 2100" \
        in note, note


def test_the_cli_loads_no_data_library_before_a_command_needs_one():
    """``firstfault --help`` (and every command's start) took 1.2 s, 0.9 s of it importing pyarrow, aiokafka and the
    correlator for a console and three exception classes (a fresh-user trial): importing the CLI loads none."""
    import subprocess
    import sys

    code = ("import sys, api.cli; heavy = [m for m in ('pyarrow', 'aiokafka', 'duckdb', 'hyperscan', 'correlate.attribute')"
            " if m in sys.modules]; print(heavy)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout.strip() == "[]", (r.stdout, r.stderr)


def test_serve_on_port_0_tells_the_port_the_system_gave_it(tmp_path):
    """``serve --port 0`` listens on a free port and says which once bound (it served 8080 and said so; a
    break-it pass); ``run`` takes the same path (``api.app.when_listening``)."""
    import re
    import signal
    import subprocess
    import sys

    import httpx

    (tmp_path / "lake").mkdir()
    exe = str(Path(sys.executable).with_name("firstfault"))
    p = subprocess.Popen([exe, "serve", "--port", "0"], cwd=tmp_path, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True,
                         env={"PATH": "/usr/bin:/bin", "FIRSTFAULT_LAKE": str(tmp_path / "lake")})
    try:
        port = None
        for line in p.stderr:  # the address line comes once the server listens
            if m := re.search(r"API on http://127\.0\.0\.1:(\d+) ", line):
                port = int(m[1])
                break
        assert port and port != 8080, port
        assert httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=5).status_code == 200
    finally:
        p.send_signal(signal.SIGINT)
        _, rest = p.communicate(timeout=30)
    # 130 where SIGINT's default action was inherited (uvicorn raises it again once shut down), 0 where ignored;
    # said, as the demo says "stopped; …" (it ended silently: a fresh user's trial)
    assert p.returncode in (0, 130) and "Traceback" not in rest and rest.splitlines()[-1:] == ["stopped"], rest


def test_a_closed_stderr_does_not_stop_a_command():
    """With file descriptor 2 closed (``2>&-``) Python's ``sys.stderr`` is None: every command exited 1 at
    import, ``run`` too (a break-it pass); it now runs, printing nothing there."""
    import os
    import subprocess
    import sys

    exe = str(Path(sys.executable).with_name("firstfault"))
    r = subprocess.run([exe, "--help"], stdout=subprocess.PIPE, text=True, timeout=60,
                       env={"PATH": "/usr/bin:/bin"}, preexec_fn=lambda: os.close(2))
    assert r.returncode == 0 and "diagnose" in r.stdout, r.returncode


def test_serve_on_a_busy_port_exits_1_with_a_hint(tmp_path):
    import socket

    (tmp_path / "lake").mkdir()  # a lake folder that does not exist is refused first (exit 2)
    lake = {"FIRSTFAULT_LAKE": str(tmp_path / "lake")}

    with socket.create_server(("127.0.0.1", 0)) as busy:
        r = _firstfault("serve", "--port", str(busy.getsockname()[1]), env=lake)
    assert r.returncode == 1 and "choose another with --port" in r.stderr and "Traceback" not in r.stderr
    with socket.create_server(("127.0.0.1", 0)) as busy:  # in json mode the refusal is a log record too
        r = _firstfault("serve", "--port", str(busy.getsockname()[1]), env={**lake, "FIRSTFAULT_LOG_FORMAT": "json"})
    import orjson

    [rec] = [orjson.loads(line) for line in r.stderr.splitlines() if line.strip()]
    assert r.returncode == 1 and rec["error_code"] == "port_in_use" and rec["level"] == "ERROR", r.stderr
    # an address this machine does not have (TEST-NET-1, RFC 5737) is no busy port: another code and hint
    r = _firstfault("serve", "--port", "18764",
                    env={**lake, "FIRSTFAULT_LOG_FORMAT": "json", "FIRSTFAULT_API_HOST": "192.0.2.1"})
    [rec] = [orjson.loads(line) for line in r.stderr.splitlines() if line.strip()]
    assert r.returncode == 1 and rec["error_code"] == "cannot_bind" and "FIRSTFAULT_API_HOST" in rec["message"], \
        r.stderr


def test_diagnose_refuses_a_device_and_reads_a_pipe_it_is_given(tmp_path):
    """A device (/dev/zero) is refused; a pipe named on the command line (a FIFO, a shell's ``<(journalctl -k)``) is
    read once as standard input is, named after its file (it was refused: a break-it pass)."""
    import os
    import subprocess
    import sys
    import threading

    r = _firstfault("diagnose", "/dev/zero")
    assert r.returncode == 2 and "not a regular file" in r.stderr, r.stderr
    fifo = tmp_path / "node01.dmesg.log"
    os.mkfifo(fifo)

    def write() -> None:
        with open(fifo, "w") as f:
            f.write("[Mon Nov 30 03:12:01 2026] NVRM: Xid (PCI:0000:3b:00): 79, pid=0, GPU has fallen off the bus.\n")
    t = threading.Thread(target=write, daemon=True)
    t.start()
    r = _firstfault("diagnose", str(fifo), "-f", "json")
    t.join(10)
    import orjson

    [e] = orjson.loads(r.stdout)["events"]
    assert r.returncode == 0 and (e["host"], e["xid"]) == ("node01", 79), r.stderr
    # the same pipe named twice, or by a link, is read once (opened again, it waited for a writer for ever)
    (tmp_path / "link.log").symlink_to(fifo)
    t = threading.Thread(target=write, daemon=True)
    t.start()
    r = _firstfault("diagnose", str(fifo), str(tmp_path / "link.log"), "-f", "json")
    t.join(10)
    assert r.returncode == 0 and [e["xid"] for e in orjson.loads(r.stdout)["events"]] == [79], r.stderr
    exe = str(Path(sys.executable).with_name("firstfault"))
    r = subprocess.run(["bash", "-c", f"{exe} diagnose -f json <(printf '%s\\n' "
                        "'[Mon Nov 30 03:12:01 2026] NVRM: Xid (PCI:0000:3b:00): 79, pid=0, fallen off the bus.')"],
                       capture_output=True, text=True, timeout=120, env={"PATH": "/usr/bin:/bin"})
    assert r.returncode == 0 and [e["xid"] for e in orjson.loads(r.stdout)["events"]] == [79], r.stderr


def test_diagnose_symptom_gpus_are_indexes_or_bus_ids(tmp_path):
    """GPUs as nvidia-smi names them: indexes, or PCI bus ids in any printed form (the 8-digit domain and upper
    case of ``nvidia-smi -q`` normalised), each once; anything else exits 2 saying both forms."""
    log = tmp_path / "node01.log"
    log.write_text("hello\n")
    r = _firstfault("diagnose", str(log), "--symptom", "hang:abc")
    assert r.returncode == 2 and "GPUs are indexes" in r.stderr and "PCI bus ids" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr
    assert _firstfault("diagnose", str(log), "--symptom", "hang:0,1").returncode == 0
    for odd in ("hang:²", "hang:٣"):  # digits to str.isdigit, not GPU indexes (the first was a traceback)
        r = _firstfault("diagnose", str(log), "--symptom", odd)
        assert r.returncode == 2 and "GPUs are indexes" in r.stderr and "Traceback" not in r.stderr, (odd, r.stderr)
    r = _firstfault("diagnose", str(log), "--symptom", "hang@node01:00000000:1B:00.0,1,0000:1b:00.0", "-f", "json")
    (inc,) = json.loads(r.stdout)["incidents"]
    assert r.returncode == 0 and "(GPU 1, 0000:1b:00.0)" in inc["explanation"], inc["explanation"]
    assert "nvidia-smi -q -i 1,0000:1b:00.0" in inc["next_action"], inc["next_action"]


def test_a_symptom_gpu_the_logs_do_not_name_is_said(tmp_path):
    """A reported bus id that none of the host's lines names (they name 0000:1b:00.0 and 0000:3d:00.0) is said
    on stderr, the report kept; a named one, or an index where the lines name no index, says nothing."""
    log = tmp_path / "node07.log"
    # the PCIe port above a GPU is no GPU (its AER line's bus id was listed among the GPUs: a fresh-user trial)
    log.write_text("[  12.1] NVRM: Xid (PCI:0000:1b:00): 13, pid=4411, name=python, Graphics Exception: ESR "
                   "0x404600=0x80000002\n[  12.5] NVRM: Xid (PCI:0000:3d:00): 79, pid=0, GPU has fallen off the bus.\n"
                   "[  12.4] pcieport 0000:00:02.0: AER: Uncorrected (Fatal) error received: 0000:00:02.0\n")
    r = _firstfault("diagnose", str(log), "--symptom", "hang:0000:1C:00.0,3,0000:3d:00.0")
    assert r.returncode == 0 and ("symptom GPU 0000:1c:00.0 of node07 is named by none of its recognised lines (they "
                                  "name GPU 0000:1b:00.0, 0000:3d:00.0)") in r.stderr, r.stderr
    for fine in ("hang:0000:1b:00.0", "hang:3"):
        r = _firstfault("diagnose", str(log), "--symptom", fine)
        assert r.returncode == 0 and "symptom GPU" not in r.stderr, (fine, r.stderr)


def test_an_untimed_symptom_on_logs_without_events_is_placed_now_and_a_stray_host_is_named(tmp_path):
    """A symptom without a time on logs with no event (an ``nvidia-smi topo -m`` matrix) was placed at the epoch
    (1970); it is placed when it is reported. A symptom on a host that has no events says so on stderr."""
    import json
    import time
    from datetime import datetime

    log = tmp_path / "node01.log"
    log.write_text("        GPU0    GPU1    CPU Affinity\nGPU0     X      NODE    0-63\n")
    before = time.time()
    r = _firstfault("diagnose", str(log), "--symptom", "hang:0,1", "--format", "json")
    [inc] = json.loads(r.stdout)["incidents"]
    assert inc["start_basis"] == "operator" and before - 1 <= datetime.fromisoformat(
        inc["start"].replace("Z", "+00:00")).timestamp() <= time.time() + 1, inc["start"]
    assert "symptom host node01 has no events in these logs (hosts with events: none)" in r.stderr
    xid = tmp_path / "node02.log"
    xid.write_text("[  12.5] NVRM: Xid (PCI:0000:3b:00): 79, pid=0, GPU has fallen off the bus.\n")
    r = _firstfault("diagnose", str(xid), "--symptom", "failure@node07")
    assert r.returncode == 0 and "symptom host node07 has no events in these logs (hosts with events: node02)" in \
        r.stderr, r.stderr
    r = _firstfault("diagnose", str(xid), "--symptom", "failure@node2")  # a typo of a host that has events
    assert r.returncode == 0 and "Did you mean node02?" in r.stderr, r.stderr
    # the same name but for zero padding first: difflib alone offered node027 for node07 beside node007
    fleet = tmp_path / "fleet"
    fleet.mkdir()
    for h in ("node027", "node007"):
        (fleet / f"{h}.log").write_text(xid.read_text())
    r = _firstfault("diagnose", str(fleet), "--symptom", "failure@node07")
    assert r.returncode == 0 and "Did you mean node007?" in r.stderr, r.stderr
    # host names are printed as text, not markup ("[/]" exited 1 with rich's MarkupError; a "/" is no host name
    # now: exit 2, as ingest refuses it)
    r = _firstfault("diagnose", str(xid), "--symptom", "failure@x[/]", "--format", "json")
    assert r.returncode == 2 and "is no host name" in r.stderr, r.stderr
    r = _firstfault("diagnose", str(xid), "--symptom", "failure@x[bold]", "--format", "json")
    assert r.returncode == 0 and json.loads(r.stdout)["incidents"] and "symptom host x[bold] has no events" in r.stderr
    # JSON too says on stderr what was read, and that the raw dmesg stamp was placed by the file's mtime
    assert "1 line → 1 event\n" in r.stderr and "1 event timed by its file's modification time" in r.stderr
    assert "1 kernel line with a raw dmesg stamp" in r.stderr
    # ... and in the table and the lines under it, which quote host names and log lines (the explanation,
    # next action, verify and missing lines of the report's incident name its host)
    r = _firstfault("diagnose", str(xid), "--symptom", "failure@[red]x", "--format", "table")
    assert r.returncode == 0 and "Reported by the operator: failure on [red]x." in r.stdout, r.stderr[-500:]
    assert re.search(r"missing +the kernel log of \[red\]x around the reported time", r.stdout), r.stdout


def test_piped_tables_have_no_trailing_spaces(tmp_path):
    """Rich pads a centred title and every cell of a grid to the console's width (200 in a pipe): the lines of
    ``diagnose --format table`` and its messages reach a pipe without that padding (they had 106 of 166 lines
    ending in spaces on the samples)."""
    log = tmp_path / "node02.log"
    log.write_text("[  12.5] NVRM: Xid (PCI:0000:3b:00): 79, pid=0, GPU has fallen off the bus.\n")
    r = _firstfault("diagnose", str(log), "--symptom", "failure@node07", "--format", "table")
    lines = r.stdout.splitlines()
    # titled with its counts, as the demo's (it was "Incidents" alone: a fresh user's trial)
    assert r.returncode == 0 and lines[0] == "2 incidents (2 open)" and any("verify" in x for x in lines), r.stdout
    # what was read is progress, on stderr; stdout is the report alone
    assert "1 line → 1 event" in r.stderr and "→" not in r.stdout
    assert [x for x in lines + r.stderr.splitlines() if x != x.rstrip()] == []
    assert r.stdout.endswith("\n") and "symptom host node07 has no events" in r.stderr


def test_diagnose_dash_reads_standard_input_as_this_machines_log(tmp_path):
    """``dmesg -T | firstfault diagnose -``: ``-`` is standard input (it was "no such file"), its lines that name
    no host are this machine's (its short host name), lines that name one keep it; the copy it is read from is
    removed at exit; an empty input exits 2 as an empty file does."""
    import socket
    import subprocess
    import sys

    exe = str(Path(sys.executable).with_name("firstfault"))
    lines = ("[  12.5] NVRM: Xid (PCI:0000:3b:00): 79, pid=0, GPU has fallen off the bus.\n"
             "2026-12-01T00:00:00Z node07 kernel: NVRM: Xid (PCI:0000:1b:00): 79, pid=0, GPU has fallen off the bus.\n")
    env = {"PATH": "/usr/bin:/bin", "TMPDIR": str(tmp_path)}
    r = subprocess.run([exe, "diagnose", "-", "-f", "json"], input=lines, capture_output=True, text=True, env=env,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    me = socket.gethostname().split(".", 1)[0]
    out = json.loads(r.stdout)
    assert sorted(e["host"] for e in out["events"]) == sorted([me, "node07"]), r.stdout[:500]
    # its raw dmesg stamp is counted back from when standard input was read, not from "its file's time" (a
    # fresh-user trial)
    (mine,) = [i for i in out["incidents"] if i["initiator"]["host"] == me]
    assert "(its seconds since boot counted back from the time standard input was read)" in mine["explanation"]
    # and what is missing says so too: it said "the file's modification time" (a fresh user's trial)
    assert any("counted back from the time standard input was read" in m for m in mine["missing"]), mine["missing"]
    assert not list(tmp_path.glob("firstfault-stdin-*")), list(tmp_path.iterdir())
    # a shell's process substitution is read as standard input is: stderr says so, without a copy's advice
    r = subprocess.run(["bash", "-c", f"{exe} diagnose <(printf %s \"$L\") -f json"], capture_output=True, text=True,
                       env={**env, "L": lines}, timeout=120)
    assert r.returncode == 0 and "timed by when standard input was read" in r.stderr, r.stderr
    assert "cp -p" not in r.stderr, r.stderr
    r = subprocess.run([exe, "diagnose", "-"], input="", capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 2 and "no log lines in standard input: empty or blank" in r.stderr, r.stderr  # no "1 file"


@pytest.mark.parametrize("zone,utc", [("America/New_York", "11:40:01"), ("Europe/Berlin", "05:40:01"),
                                      ("UTC", "06:40:01")])
def test_diagnose_dash_reads_zoneless_stamps_in_this_machines_zone(tmp_path, zone, utc):
    """`sudo dmesg -T | firstfault diagnose -` on a machine whose zone is not UTC: `dmesg -T` prints local time
    with no zone, and it was read as UTC, hours off, saying nothing (a fresh-user trial). Standard input alone is
    this machine's log: read in its zone (TZ here, /etc/localtime without it), and stderr says so; a configured
    `timezone` still wins, and a file is read as configured (it may be another machine's)."""
    import subprocess
    import sys

    exe = str(Path(sys.executable).with_name("firstfault"))
    line = "[Thu Dec  3 06:40:01 2026] NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=x, GPU has fallen off the bus.\n"
    env = {"PATH": "/usr/bin:/bin", "TMPDIR": str(tmp_path), "TZ": zone}

    def ts(*args: str, **more: str) -> tuple[str, str]:
        r = subprocess.run([exe, "diagnose", *args, "-f", "json"], input=line, capture_output=True, text=True,
                           env={**env, **more}, timeout=120)
        assert r.returncode == 0, r.stderr
        return json.loads(r.stdout)["events"][0]["ts"], r.stderr

    got, err = ts("-")
    assert got.startswith(f"2026-12-03T{utc}") and (f"read in this machine's zone, {zone}" in err) == (zone != "UTC")
    got, err = ts("-", FIRSTFAULT_TIMEZONE="UTC")
    assert got.startswith("2026-12-03T06:40:01") and "this machine's zone" not in err
    (tmp_path / "node07.log").write_text(line)
    got, err = ts(str(tmp_path / "node07.log"))
    assert got.startswith("2026-12-03T06:40:01") and "this machine's zone" not in err
    # a POSIX TZ string, which tzlocal passed over for /etc/localtime (the stamps were read 9 hours off, and stderr
    # named UTC as this machine's zone: a break-it pass): said, and read as configured
    got, err = ts("-", TZ="JST-9")
    assert got.startswith("2026-12-03T06:40:01") and "TZ='JST-9' is no IANA zone name (Area/City)" in err, err


def test_a_port_no_socket_has_and_an_output_that_cannot_be_written_are_one_clear_line(tmp_path):
    """``serve --port 70000`` (or -1) was an OverflowError traceback, exit 1: now exit 2 naming the range, as a
    bad setting is; ``diagnose`` into a full disk (``/dev/full``) was an OSError traceback: now one line, exit 1,
    as ``sql`` says it (a closed one too); a reader that goes away (``| head``) ends it quietly; ``serve`` of a lake
    that is a file started and answered empty pages (break-it passes)."""
    import os
    import subprocess
    import sys

    for port in ("70000", "-1"):
        r = _firstfault("serve", "--port", port, env={"FIRSTFAULT_LAKE": str(tmp_path / "lake")})
        assert r.returncode == 2 and "--port" in r.stderr and "Traceback" not in r.stderr, r.stderr
    log = tmp_path / "node07.log"
    log.write_text("".join(f"2026-12-01T00:{i // 60 % 60:02}:{i % 60:02}Z node07 kernel: NVRM: Xid "
                           f"(PCI:0000:{i % 256:02x}:00): 79, pid={i}, GPU has fallen off the bus.\n"
                           for i in range(2000)))  # ~2 MB of JSON
    exe = str(Path(sys.executable).with_name("firstfault"))
    for fmt in ("json", "table"):
        with open("/dev/full", "wb") as full:
            r = subprocess.run([exe, "diagnose", str(log), "-f", fmt], stdout=full, stderr=subprocess.PIPE, text=True,
                               env={"PATH": "/usr/bin:/bin"}, timeout=120)
        assert r.returncode == 1 and "cannot write the output: [Errno 28]" in r.stderr, r.stderr
        assert "Traceback" not in r.stderr and "Exception ignored" not in r.stderr, r.stderr
    p = subprocess.Popen([exe, "diagnose", str(log), "-f", "json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         env={"PATH": "/usr/bin:/bin"})
    p.stdout.read(10)
    p.stdout.close()  # the reader goes away after 10 bytes
    stderr = p.stderr.read().decode()
    # 141 (128 + SIGPIPE), as the shell reports `seq … | head -1`: 1 is a runtime failure (api.render.reader_gone)
    assert p.wait(timeout=120) == 141 and "Traceback" not in stderr and "Broken pipe" not in stderr, stderr
    # a lake that is a file, lies under one or is a broken link can hold no events, ever: exit 2, not a server
    # answering empty pages (or a 503 at every request)
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    for lake, why in ((log, "it is no folder"), (log / "sub", f"{log} is no folder"),
                      (tmp_path / "dangling", "it is a broken link")):
        r = _firstfault("serve", env={"FIRSTFAULT_LAKE": str(lake)})
        assert r.returncode == 2 and f"no lake can be at {lake}: {why}" in r.stderr, r.stderr
    # the same from `sql` and `report`, not "no lake at … run make demo" (a fresh-user trial)
    for args in (["sql", "SELECT 1"], ["report", "degraded-links"]):
        r = _firstfault(*args, env={"FIRSTFAULT_LAKE": str(log)})
        assert r.returncode == 2 and f"no lake can be at {log}: it is no folder" in r.stderr, r.stderr
    # a closed standard output (>&-: Python's sys.stdout is None) is one line too, not an AttributeError
    for args in (["diagnose", str(log), "-f", "json"], ["diagnose", str(log)]):
        r = subprocess.run([exe, *args], stderr=subprocess.PIPE, text=True, env={"PATH": "/usr/bin:/bin"},
                           timeout=120, preexec_fn=lambda: os.close(1))
        assert r.returncode == 1 and "cannot write the output: [Errno 9] standard output is closed" in r.stderr, \
            r.stderr
        assert "Traceback" not in r.stderr, r.stderr


@pytest.mark.parametrize("args", [("ingest", "--once"), ("correlate", "--once"), ("kafka", "topics")])
def test_an_unreachable_broker_is_one_clear_line_not_a_traceback(tmp_path, args):
    """A broker that is not there when a worker starts: exit 1 (a runtime failure) with what to check, where
    each command printed 60 lines of aiokafka traceback and "Unclosed AIOKafkaConsumer" (a fresh-user trial).
    Nothing listens on port 1 of 127.0.0.1."""
    r = _firstfault(*args, env={"FIRSTFAULT_KAFKA_BOOTSTRAP": "127.0.0.1:1", "FIRSTFAULT_LAKE": str(tmp_path / "lake"),
                                "FIRSTFAULT_STATE_DIR": str(tmp_path / "state")})
    assert r.returncode == 1 and r.stderr.startswith("cannot reach Kafka: KafkaConnectionError"), r.stderr
    assert "FIRSTFAULT_KAFKA_BOOTSTRAP" in r.stderr and "Traceback" not in r.stderr and "Unclosed" not in r.stderr


def test_a_lake_that_cannot_be_opened_is_one_line_and_exit_1(monkeypatch, capfd):
    """An S3 lake whose bucket cannot be reached raised LakeError through ``sql`` and ``report`` as a traceback
    (a break-it pass). No S3 endpoint runs here, so ``Lake`` is made to fail as pyarrow's S3 filesystem does
    for an unresolvable bucket (the one stand-in of this test); the CLI's ``main`` prints one line, exit 1."""
    import sys

    import api.cli
    from ingest import lake

    def unreachable(self, root):
        raise lake.LakeError(f"cannot open the lake {root}: Could not resolve host: b.s3.us-east-1.amazonaws.com")

    monkeypatch.setattr(lake.Lake, "__init__", unreachable)
    monkeypatch.setenv("FIRSTFAULT_LAKE", "s3://b/lake")
    monkeypatch.setattr(sys, "argv", ["firstfault", "sql", "SELECT 1"])
    with pytest.raises(SystemExit) as e:
        api.cli.main()
    err = capfd.readouterr().err
    assert e.value.code == 1 and "cannot open the lake s3://b/lake" in err and "Traceback" not in err
    assert "check lake (FIRSTFAULT_LAKE)" in " ".join(err.split())


def test_a_symptom_hosts_suggestion_compares_numbers_as_text():
    """Zero padding aside, names compare as written; a run of 4301 digits made int() raise (a break-it pass)."""
    from schemas.hostname import close_hosts

    assert close_hosts("node07", ["node027", "node007", "node0007"]) == ["node007", "node0007"]
    assert close_hosts("Node17", ["NODE017"]) == ["NODE017"]
    assert close_hosts("node" + "1" * 4301, ["node7"]) == []
    # another number is another host: node99 is no typo of node08 (it was offered: a fresh-user trial), nodo07 is
    assert close_hosts("node99", ["node01", "node08"]) == []
    assert close_hosts("nodo07", ["node07", "node08"]) == ["node07"]


def test_diagnose_with_a_terminal_on_stderr_finishes_and_draws_its_progress_there():
    """On a terminal, diagnose draws a progress bar on stderr. Rich's progress put its own proxy in sys.stderr, which
    the error console (render.TrimmedStream) writes to at each write: the proxy wrote into the console and back,
    and diagnose hung at 100 % CPU at a shell, every README example with it (a fresh user's trial; the tests ran it
    with stderr in a pipe). A pseudo-terminal on stderr, as a shell gives."""
    import os
    import pty
    import subprocess
    import sys
    import threading

    master, slave = pty.openpty()
    seen = bytearray()

    def drain() -> None:  # the terminal's side: read what diagnose draws, so it never blocks on a full buffer
        while True:
            try:
                chunk = os.read(master, 4096)
            except OSError:
                return
            if not chunk:
                return
            seen.extend(chunk)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    exe = str(Path(sys.executable).with_name("firstfault"))
    try:
        r = subprocess.run([exe, "diagnose", str(ROOT / "samples" / "fleet" / "node004.dmesg.log")], stdin=subprocess.DEVNULL,
                           stdout=subprocess.PIPE, stderr=slave, env={"PATH": "/usr/bin:/bin", "TERM": "xterm"},
                           timeout=90)
    finally:
        os.close(slave)
    reader.join(5)
    os.close(master)
    assert r.returncode == 0, bytes(seen[-2000:])
    # titled with its counts (open or resolved: the file's raw dmesg stamps count back from its modification time)
    assert re.match(rb"1 incident \(1 (open|resolved)\)\n", r.stdout) and b"node004" in r.stdout, r.stdout[:200]
    assert b"reading" in seen and b"Traceback" not in seen


def test_sql_read_by_a_program_that_stops_reading_ends_quietly(tmp_path):
    """`firstfault sql … | head -1`: the closed pipe ends the command with 141 (128 + SIGPIPE, as for `seq`; it was 1,
    the runtime failure's code) and no "cannot write the output: Broken pipe" (a fresh user's trial), as `diagnose`
    does."""
    import subprocess
    import sys

    (tmp_path / "lake" / "events").mkdir(parents=True)
    exe = str(Path(sys.executable).with_name("firstfault"))
    query = "SELECT * FROM range(200000) t(x)"
    r = subprocess.run(["bash", "-c", f"set -o pipefail; {exe} sql '{query}' -f json | head -1"],
                       capture_output=True, text=True, timeout=120,
                       env={"PATH": "/usr/bin:/bin", "FIRSTFAULT_LAKE": str(tmp_path / "lake")})
    assert r.stdout == '{"x":0}\n' and r.returncode == 141 and "cannot write" not in r.stderr, r.stderr


def test_the_makefile_s_pip_hides_setuptools_editable_warning_alone():
    """The first ``make demo`` opened with setuptools' ``BuildBackendWarning: Editable installation.`` (11 lines, a
    new user's trial): the Makefile's pip call filters that message, with a user's own PYTHONWARNINGS kept; another
    warning is still shown."""
    import shlex
    import subprocess
    import sys

    line = next(x.strip("\t@ \\") for x in (ROOT / "Makefile").read_text().splitlines() if "PYTHONWARNINGS=" in x)
    assert line == 'PYTHONWARNINGS="$${PYTHONWARNINGS:+$$PYTHONWARNINGS,}ignore:Editable installation"', line
    code = ("import warnings\nclass BuildBackendWarning(UserWarning): pass\n"
            "warnings.warn('Editable installation.\\n!!\\n', BuildBackendWarning)\nwarnings.warn('another one')\n")
    for before in ({}, {"PYTHONWARNINGS": "default"}):  # as the shell runs the recipe's line (make's $$ is $)
        cmd = f"{line.replace('$$', '$')} {shlex.quote(sys.executable)} -c {shlex.quote(code)}"
        r = subprocess.run(["sh", "-c", cmd],
                           env={"PATH": "/usr/bin:/bin", **before}, capture_output=True, text=True, timeout=60)
        assert r.returncode == 0 and "Editable installation" not in r.stderr and "UserWarning: another one" in \
            r.stderr, (before, r.stderr)


def test_config_before_the_command_name_says_where_it_goes(tmp_path):
    """``firstfault --config f.toml sql "SELECT 1"`` said "No such option: --config" and no more (a fresh user's
    trial): exit 2, saying where it goes, with the command and file given; after the name it is read."""
    for args, said in ((["--config", "f.toml", "sql", "SELECT 1"], "firstfault sql --config f.toml …"),
                       (["--config=x.toml", "kafka", "status"], "firstfault kafka status --config x.toml …"),
                       (["--config"], "firstfault <command> --config f.toml …"),
                       # the value of an option between is no command, nor is a word the app does not know (a
                       # break-it pass: "firstfault report 2026-12-05T19 …", "firstfault nosuchcmd …")
                       (["--config", "c.toml", "report", "--hour", "2026-12-05T19", "degraded-links"],
                        "firstfault report degraded-links --config c.toml …"),
                       (["--config", "c.toml", "nosuchcmd"], "firstfault <command> --config c.toml …")):
        r = _firstfault(*args)
        want = f"--config is an option of each command, not of firstfault: put it after the command name ({said})"
        assert (r.returncode, " ".join(r.stderr.split())) == (2, want), r
    (tmp_path / "f.toml").write_text('log_format = "xml"\n')  # after the name the file is read: its error is said
    r = _firstfault("sql", "--config", str(tmp_path / "f.toml"), "SELECT 1")
    assert r.returncode == 2 and f"log_format (from {tmp_path / 'f.toml'}): must be text or json" in r.stderr, r.stderr


def test_the_first_make_demo_says_each_stage_before_it(tmp_path, monkeypatch):
    """The first ``make demo`` said "creating .venv … (a few minutes the first time) …" then nothing for ~90 s while
    pip ran quietly (a fresh user's trial): a line on stderr before each pip run, one when the folder is ready;
    fetching the Kafka jars (Maven, quiet) is said as that, and as done once."""
    import shutil
    import subprocess

    from ingest import broker

    if shutil.which("make") is None:
        pytest.skip("no make")
    r = subprocess.run(["make", "-n", "-B", f"VENV={tmp_path / 'venv'}", "setup"], cwd=ROOT, capture_output=True,
                       text=True, timeout=60)
    lines = [" ".join(x.split()) for x in r.stdout.replace("\\\n", " ").splitlines()]  # a command a line
    said = [x for x in lines if x.startswith("echo ")]
    assert all(x.endswith(">&2") for x in said), said  # progress on stderr: stdout is the demo's incidents
    pips = [i for i, x in enumerate(lines) if "pip install" in x]
    assert len(pips) == 2 and all(lines[i - 1].startswith("echo ") for i in pips), lines
    assert said[-1] == f'echo " {tmp_path / "venv"} ready" >&2', said  # blanks squeezed above
    assert 'installing firstfault and its dependencies' in lines[pips[1] - 1]
    monkeypatch.setattr(broker, "cache_dir", lambda: tmp_path / "cache")
    monkeypatch.setattr(broker.shutil, "which", lambda name: "/usr/bin/mvn")

    def mvn(cmd, **kw):
        (tmp_path / "cache" / "libs" / "kafka_2.13-4.1.0.jar").write_bytes(b"")
        return subprocess.CompletedProcess(cmd, 0, "", "")

    monkeypatch.setattr(broker.subprocess, "run", mvn)
    logged: list[str] = []
    broker.ensure_jars(logged.append)
    broker.ensure_jars(logged.append)  # cached: nothing said
    assert logged == [f"fetching the Apache Kafka {broker.KAFKA_VERSION} jars from Maven Central into "
                      f"{tmp_path / 'cache' / 'libs'} (once: they are kept) …"]


def test_compose_workers_serve_and_check_their_health_on_their_worker_port():
    """Each ingest and correlate replica serves /healthz and /metrics on its worker_port, on every interface (for
    Prometheus in another container), and its health check asks that port."""
    svc = compose()["services"]
    for name in ("ingest", "correlate"):
        env = svc[name]["environment"]
        port = env["FIRSTFAULT_WORKER_PORT"]
        assert env["FIRSTFAULT_API_HOST"] == "0.0.0.0" and Settings(worker_port=port).worker_port == int(port)
        assert f"http://127.0.0.1:{port}/healthz" in " ".join(svc[name]["healthcheck"]["test"])


def test_serve_stopped_by_sigterm_says_so_and_exits_0(tmp_path):
    """A service manager stops ``serve`` with SIGTERM: uvicorn shut down and raised the signal again, whose default
    action killed the process unsaid, status -15 (stop 58's list). It says "stopped" and exits 0, as the workers."""
    import signal

    (tmp_path / "lake").mkdir()
    env = {"PATH": "/usr/bin:/bin", "FIRSTFAULT_LAKE": str(tmp_path / "lake"), "COLUMNS": "200"}
    code, _, err, _ = _serve_until_healthy(tmp_path, env, signal.SIGTERM)
    assert code == 0 and err.decode().rstrip().splitlines()[-1].endswith("stopped"), (code, err)


def _serve_until_healthy(cwd: Path, env: dict[str, str], sig: int) -> tuple[int, bytes, bytes, int]:
    """Run ``firstfault serve`` on a free port of 127.0.0.1 in ``cwd`` with ``env`` until its ``/healthz`` answers
    200 (20 s at most), then send it ``sig``: its exit code, stdout, stderr and port."""
    import socket
    import subprocess
    import sys
    import time

    import httpx

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    exe = str(Path(sys.executable).with_name("firstfault"))
    p = subprocess.Popen([exe, "serve", "--port", str(port)], cwd=cwd, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, env=env)
    try:
        for _ in range(200):
            try:
                if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.1)
    finally:
        p.send_signal(sig)
        out, err = p.communicate(timeout=30)
    return p.returncode, out, err, port


@pytest.mark.parametrize("cmd", [("diagnose", "-"), ("sql", "-")])
def test_dash_with_a_standard_input_that_cannot_be_read_exits_2_saying_why(tmp_path, cmd):
    """``-`` when standard input is closed (``firstfault diagnose - <&-``, a job started with none) or open for
    writing only (``0>file``) was a Python traceback, exit 1 (a break-it pass): it exits 2, in one line, and
    reads nothing. A real process: its file descriptor 0 is what is under test."""
    import os
    import subprocess
    import sys

    (tmp_path / "lake").mkdir()
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "TMPDIR": str(tmp_path),
           "FIRSTFAULT_LAKE": str(tmp_path / "lake"), "FIRSTFAULT_STATE_DIR": str(tmp_path / "state")}
    argv = [sys.executable, "-m", "api.cli", *cmd]
    closed = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120, cwd=tmp_path,
                            preexec_fn=lambda: os.close(0))
    with open(tmp_path / "out.txt", "wb") as wo:
        write_only = subprocess.run(argv, stdin=wo, capture_output=True, text=True, env=env, timeout=120,
                                    cwd=tmp_path)
    for r, why in ((closed, "it is closed"), (write_only, "it is open for writing only")):
        assert r.returncode == 2, r.stderr
        assert f"cannot read standard input: {why}" in r.stderr and "Traceback" not in r.stderr, r.stderr
        assert r.stdout == "", r.stdout


def test_diagnose_on_a_terminal_says_it_is_matching_once_the_files_are_read(tmp_path):
    """On a terminal the bar counted files and went once they were read: a log of 200,000 lines drew ``reading 1/1``
    for an instant, then nothing for the 30 s its matching took (a break-it pass). A line with the time spent says
    what it does until the report. A real process whose stderr is a pseudo-terminal."""
    import os
    import pty
    import subprocess
    import sys

    log = tmp_path / "node07.log"
    log.write_text("NVRM: Xid (PCI:0000:61:00): 79, pid=1234, name=python, GPU has fallen off the bus.\n" * 3000)
    master, slave = pty.openpty()
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "TMPDIR": str(tmp_path), "COLUMNS": "200"}
    proc = subprocess.Popen([sys.executable, "-m", "api.cli", "diagnose", str(log)], stdout=subprocess.PIPE,
                            stderr=slave, stdin=subprocess.DEVNULL, env=env, cwd=tmp_path)
    os.close(slave)
    said = b""
    while True:
        try:
            chunk = os.read(master, 1 << 16)
        except OSError:  # EIO: the terminal's last writer is gone
            break
        if not chunk:
            break
        said += chunk
    out = proc.stdout.read().decode()
    assert proc.wait(120) == 0 and "gpu_off_bus" in out, out
    text = said.decode("utf-8", "replace")
    assert "reading" in text and "matching and correlating the lines of 1 file" in text, text[-2000:]
    assert "3000 lines → 1 event" in text, text[-2000:]
    os.close(master)
