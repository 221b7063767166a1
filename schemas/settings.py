"""One typed settings object per process, validated at start.

Sources, later wins: defaults, a TOML file (``firstfault.toml`` in the working
directory, or ``--config PATH`` / ``FIRSTFAULT_CONFIG``), environment variables
``FIRSTFAULT_<FIELD>`` (upper case). A misspelled key in the file or an
unknown ``FIRSTFAULT_*`` variable stops start-up with a message naming it.
"""

from __future__ import annotations

import difflib
import errno
import os
import re
import stat
import tomllib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import (BaseModel, ConfigDict, Field, PrivateAttr, SecretStr, ValidationError, ValidationInfo,
                      field_validator, model_validator)

from schemas.errors import error_text


#: a Kafka topic name (``org.apache.kafka.common.internals.Topic``)
_TOPIC = re.compile(r"[a-zA-Z0-9._-]{1,249}")
#: upper bounds of the settings in seconds: a clock-skew bound beyond a day says the clock is wrong, not skewed
DAY_S = 86_400
YEAR_S = 365 * DAY_S


def _ipv6(text: str) -> bool:
    """``text`` is an IPv6 address (``ipaddress``)."""
    import ipaddress

    try:
        ipaddress.IPv6Address(text)
    except ValueError:
        return False
    return True


class SettingsError(ValueError):
    """The configuration is invalid; the message says which key and why."""


def without_userinfo(url: str) -> str:
    """``url`` with its user and password (``http://user:secret@host``) shown as ``…``: for errors, logs and
    ``/healthz``."""
    return re.sub(r"//[^/@?#]*@", "//…@", url)


def _scalar_types(annotation: Any) -> set[type]:
    """The plain types an annotation admits (``float | None`` -> {float, NoneType}); empty for any other shape."""
    import types
    import typing

    args = typing.get_args(annotation) if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) \
        is typing.Union else (annotation,)
    return {a for a in args if isinstance(a, type)}


class Settings(BaseModel):
    """Every field is described; see the README's configuration table."""

    # times and bounds become µs integers: NaN and infinity are refused here, not left to fail there
    model_config = ConfigDict(extra="forbid", validate_assignment=True, allow_inf_nan=False)

    state_dir: Path = Field(Path(".firstfault"), description="local state: broker data, outbox, cursors")
    lake: str = Field(".firstfault/lake", description="Parquet lake root: a path, file:// URL or "
                      "s3://bucket/prefix (credentials and endpoint from the AWS_* environment)")
    kafka_bootstrap: str = Field("", description="host:port list; empty = the local broker started by "
                                 "`firstfault kafka start`")
    topics: list[str] = Field(["fleet.dmesg", "fleet.nccl", "fleet.nvml"], description="raw input topics")
    dlq_topic: str = Field("fleet.dlq", description="dead-letter topic for input that cannot be read")
    group_id: str = Field("firstfault-ingest", description="Kafka consumer group of the ingest workers")
    events_topic: str = Field("fleet.events", description="recognised events, link samples and topology facts, keyed "
                              "by correlation domain, from `firstfault ingest` to `firstfault correlate`")
    correlate_group_id: str = Field("firstfault-correlate", description="Kafka consumer group of the correlate workers")
    session_timeout_ms: int = Field(30000, ge=3000, le=3_600_000, description="Kafka consumer session timeout: how soon "
                                    "a dead worker's partitions move to another (at most an hour)")
    once_give_up_s: float = Field(60.0, gt=0, le=DAY_S, description="a --once run (`ingest`, `run`) whose broker or "
                                  "lake keeps failing a batch this long (s) exits 1 naming what was not stored; the "
                                  "long-running service keeps retrying")
    batch_max_records: int = Field(2000, ge=1, le=10_000_000, description="Kafka records per ingest batch at most")
    batch_linger_ms: int = Field(200, ge=0, le=60_000, description="wait this long for a batch to fill (at most a "
                                 "minute: a stop waits for it)")
    skew_default_s: float = Field(2.0, ge=0, le=DAY_S,
                                  description="clock-skew bound for hosts not listed in `skew_s`")
    skew_s: dict[str, float] = Field(default_factory=dict, description="per-host clock-skew bounds (seconds)")
    allowed_lateness_s: float = Field(300.0, ge=0, le=YEAR_S, description="late events this old still update incidents")
    close_after_s: float = Field(120.0, gt=0, le=YEAR_S,
                                 description="an incident is emitted once its hosts' event time has "
                                 "moved this far past its last event")
    early_after_s: float = Field(300.0, ge=0, le=YEAR_S,
                                 description="an incident whose evidence keeps coming (a link-down state polled "
                                 "every 30 s) is emitted open once its evidence spans this long, and again per this "
                                 "much new evidence until it goes quiet (0: only once quiet)")
    idle_close_s: float = Field(120.0, gt=0, le=YEAR_S, description="... or when its hosts sent nothing for this long "
                                "(processing time: a crashed host logs nothing more)")
    reach_back_s: float = Field(86400.0, ge=0, le=YEAR_S,
                                description="the faults of emitted incidents are kept aside this long for watchdog "
                                "timeouts whose collectives began at them (the longest NCCL timeout joined to its "
                                "cause)")
    resolve_after_s: float = Field(900.0, ge=0, le=YEAR_S,
                                   description="an incident with no new evidence this long is resolved")
    timezone: str = Field("UTC", description="zone of log stamps that print none (dmesg -T, syslog)")
    fleet_config: Path | None = Field(None, description="YAML: hosts -> platform, NVLink domain, rack")
    api_host: str = Field("127.0.0.1", description="HTTP API listen address")
    api_port: int = Field(8080, ge=0, le=65535, description="HTTP API port (0 = any free port)")
    worker_port: int | None = Field(None, ge=0, le=65535, description="port of an `ingest` or `correlate` worker's "
                                    "/healthz and /metrics on api_host (unset = none; 0 = any free port)")
    # secrets are SecretStr: never printed by repr, logs or error messages
    api_token: SecretStr | None = Field(None, description="bearer token required by the API; unset = no auth")
    api_max_scan_days: float = Field(31.0, gt=0, le=36500, description="longest time range a query may scan without a "
                                     "host filter (longer is refused with 422, not left to time out)")
    api_max_body_bytes: int = Field(65536, ge=1024, le=2**30, description="largest request body the API accepts")
    # bounded: a value past DuckDB's BIGINT passed the settings and failed every `firstfault sql` query with a cast
    # error (a break-it pass)
    sql_max_rows: int = Field(100_000, ge=1, le=10**9,
                              description="rows a POST /sql or `firstfault sql` result may hold")
    sql_max_bytes: int = Field(256 * 1024 * 1024, ge=1024, le=2**40,
                               description="bytes of Arrow data a POST /sql result may hold (a larger one is a "
                                           "400: the server holds a result whole before it answers)")
    sql_timeout_s: float = Field(30.0, gt=0, le=DAY_S, description="a SQL query running longer is interrupted")
    log_format: str = Field("text", description="text or json (one JSON object per log line)")
    log_level: str = Field("WARNING", description="DEBUG, INFO, WARNING or ERROR")
    public_url: str | None = Field(None, description="base URL on-call engineers use to reach the API; links in "
                                   "pages are <public_url>/incidents/<id> (default http://api_host:api_port)")
    alertmanager_url: str | None = Field(None, description="Alertmanager base URL for pages, e.g. http://127.0.0.1:9093")
    pagerduty_url: str | None = Field(None, description="PagerDuty Events v2 endpoint (enqueue URL)")
    pagerduty_routing_key: SecretStr | None = Field(None, description="PagerDuty integration (routing) key")
    page_min_severity: str = Field("error", description="page incidents at or above this severity")
    #: where each value :func:`load_settings` was given came from: the config file, the environment variable, "the
    #: command line"; a default is not listed
    _sources: dict[str, str] = PrivateAttr(default_factory=dict)

    def source_of(self, name: str) -> str:
        """Where setting ``name`` came from, as said beside it: ``from FIRSTFAULT_LAKE``, ``from firstfault.toml``,
        ``from the command line``, or ``the default``."""
        return f"from {self._sources[name]}" if name in self._sources else "the default"

    @field_validator("*", mode="before")
    @classmethod
    def _no_bool_as_number(cls, v: Any, info: Any) -> Any:
        """A TOML ``true``/``false`` is no number: pydantic reads it as 1 or 0, and ``resolve_after_s = false``
        resolved every incident at once (a break-it pass)."""
        if isinstance(v, bool):
            kinds = _scalar_types(cls.model_fields[info.field_name].annotation)
            if kinds and bool not in kinds and kinds & {int, float}:
                raise ValueError(f"is {str(v).lower()}, not a number")
        return v

    @field_validator("topics", "dlq_topic", "events_topic")
    @classmethod
    def _topic(cls, v: str | list[str]) -> str | list[str]:
        """Kafka's rule for a topic name (``org.apache.kafka.common.internals.Topic.validate``): 1 – 249 of
        ``[a-zA-Z0-9._-]``, not ``.`` or ``..``; at least one raw topic."""
        names = v if isinstance(v, list) else [v]
        if not names:
            raise ValueError("needs at least one topic")
        for t in names:
            if t in (".", "..") or not _TOPIC.fullmatch(t):
                raise ValueError(f"{t!r} is not a Kafka topic name (1 – 249 of a-z, A-Z, 0-9, '.', '_', '-')")
        return v

    @field_validator("kafka_bootstrap")
    @classmethod
    def _bootstrap(cls, v: str) -> str:
        """Empty (the local broker), or Kafka's ``bootstrap.servers``: comma-separated ``host:port``, ``host``
        (port 9092) or ``[IPv6]:port``, read by aiokafka's own parser (``aiokafka.conn.collect_hosts``), each
        port 1 – 65535, no spaces and no ``/`` (``PLAINTEXT://`` is Java's listener syntax) in a host, no ``:`` but
        in an IPv6 address: a value pasted with more on the line (``kafka status``'s ``pid=…``) is a configuration
        error here, not a traceback where the first client connects."""
        if not v.strip():
            return v
        from aiokafka.conn import get_ip_port_afi

        for item in v.split(","):
            addr = item.strip()
            try:
                host, port, _ = get_ip_port_afi(addr)
            except ValueError:
                host, port = "", 0
            if (not host or any(c.isspace() or c == "/" for c in host) or not 0 < port < 65536
                    or ":" in host and not _ipv6(host)):  # node01:9092:9093 read as host "node01:9092"
                raise ValueError(f"{addr!r} is not host:port (a list: host1:9092,host2:9092; IPv6 as [::1]:9092)")
        return v

    @field_validator("lake")
    @classmethod
    def _lake(cls, v: str) -> str:
        """A local path, a ``file://`` URL or ``s3://bucket[/prefix]`` (``ingest.lake.Lake``): another scheme
        (``ftp://``), an S3 URL without a bucket or an empty value is a configuration error here, not a
        traceback where the lake is first opened."""
        if not v.strip():
            raise ValueError("is empty: a path, file:// URL or s3://bucket/prefix")
        if v != v.strip():
            raise ValueError(f"{v!r} has spaces around it")
        if v.startswith("s3://"):
            if not v[len("s3://"):].strip("/"):
                raise ValueError(f"{v!r} names no bucket: s3://bucket/prefix")
            return v
        if v.startswith("file://"):
            from ingest.lake import LakeError, lake_path

            try:
                folder = lake_path(v)
            except LakeError as e:
                raise ValueError(str(e)) from None
        elif re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://", v):  # another scheme; ./a://b is a path
            raise ValueError(f"{v!r}: a lake is a path, file:// URL or s3://bucket/prefix")
        else:
            folder = Path(v)
        if Path(os.path.abspath(folder)) == Path("/"):  # its table folders would go there
            raise ValueError(f"{v!r} names no folder below the filesystem root")
        return v

    @field_validator("page_min_severity")
    @classmethod
    def _sev(cls, v: str) -> str:
        if v not in ("critical", "error", "warning", "info"):
            raise ValueError("must be critical, error, warning or info")
        return v

    @model_validator(mode="before")
    @classmethod
    def _empty_is_unset(cls, data: Any) -> Any:
        """``FIRSTFAULT_API_TOKEN=`` (empty, as compose passes an unset variable) means unset."""
        if isinstance(data, dict):
            return {k: (None if v == "" and k in _OPTIONAL else v) for k, v in data.items()}
        return data

    @field_validator("alertmanager_url", "pagerduty_url", "public_url")
    @classmethod
    def _url(cls, v: str | None, info: ValidationInfo) -> str | None:
        """An http(s) URL with a host and a port in 1 – 65535 (httpx parses it); Alertmanager's is its base URL,
        without the ``/api/v2/alerts`` the pager adds. Raises ValueError saying what is wrong."""
        if v is None:
            return v
        import httpx

        shown = without_userinfo(v)  # a password in the URL is not repeated in the error
        try:
            u = httpx.URL(v)
        except httpx.InvalidURL as e:
            raise ValueError(f"{shown!r} is no URL: {e}") from e
        if u.scheme not in ("http", "https") or not u.host:
            raise ValueError(f"{shown!r} is no http:// or https:// URL with a host")
        if u.port is not None and not 1 <= u.port <= 65535:
            raise ValueError(f"{shown!r}: port {u.port} is not in 1 – 65535")
        if u.query or u.fragment or "?" in v or "#" in v:
            raise ValueError(f"{shown!r}: a query or fragment has no place here (paths are added to this URL)")
        if re.search(r"%(?![0-9A-Fa-f]{2})", v):
            # Alertmanager's API (OpenAPI v2, generatorURL of format uri) refused every page linking to it, 422,
            # not retried: each page lost (a break-it pass)
            raise ValueError(f"{shown!r}: a % not followed by two hex digits is no URL's (write a % as %25)")
        if info.field_name == "alertmanager_url" and "/api/" in u.path.lower() + "/":
            raise ValueError(f"{shown!r}: give Alertmanager's base URL (e.g. http://127.0.0.1:9093); pages go to "
                             "its /api/v2/alerts")
        return v

    @model_validator(mode="after")
    def _topics_apart(self) -> "Settings":
        """The raw topics, the dead-letter topic and the events topic are different topics: a dead-letter topic that
        is also read dead-lettered each bad record to itself forever (1,271 copies of one record in 25 s: a break-it
        pass), a raw topic that is the events topic reads the events as log lines."""
        if len(set(self.topics)) != len(self.topics):
            twice = next(t for t in self.topics if self.topics.count(t) > 1)
            raise ValueError(f"topics names {twice!r} twice")
        for name, topic in (("dlq_topic", self.dlq_topic), ("events_topic", self.events_topic)):
            if topic in self.topics:
                raise ValueError(f"{name} {topic!r} is one of topics (the raw input): give it a topic of its own")
        if self.dlq_topic == self.events_topic:
            raise ValueError(f"dlq_topic and events_topic are both {self.dlq_topic!r}: give each a topic of its own")
        # Kafka refuses two topics whose names differ only by '.' and '_' (their metric names collide): `kafka
        # topics` said only "error code 17" (a break-it pass)
        seen: dict[str, str] = {}
        for name in [*self.topics, self.dlq_topic, self.events_topic]:
            other = seen.setdefault(name.replace(".", "_"), name)
            if other != name:
                raise ValueError(f"topics {other!r} and {name!r} differ only by '.' and '_', which Kafka refuses "
                                 "(their metric names collide): rename one")
        return self

    @model_validator(mode="after")
    def _pagerduty_key(self) -> "Settings":
        if self.pagerduty_url and not self.pagerduty_routing_key:
            raise ValueError("pagerduty_url is set but pagerduty_routing_key is not: set "
                             "FIRSTFAULT_PAGERDUTY_ROUTING_KEY (the integration key of the PagerDuty service)")
        return self

    @field_validator("api_token")
    @classmethod
    def _token(cls, v: SecretStr | None) -> SecretStr | None:
        # RFC 6750 §2.1's b64token, what an Authorization: Bearer header carries: a token with blanks around it or
        # characters beyond ASCII started the API, and no client could send it (curl's UTF-8 was 401: a break-it pass)
        if v is not None and v.get_secret_value() and not _B64TOKEN.fullmatch(v.get_secret_value()):
            raise ValueError("must be a bearer token (RFC 6750): letters, digits and - . _ ~ + /, then any '=', "
                             "no blanks (e.g. openssl rand -base64 32)")
        return v

    @field_validator("log_level")
    @classmethod
    def _loglevel(cls, v: str) -> str:
        if v.upper() not in ("DEBUG", "INFO", "WARNING", "ERROR"):
            raise ValueError("must be DEBUG, INFO, WARNING or ERROR")
        return v.upper()

    @field_validator("log_format")
    @classmethod
    def _logfmt(cls, v: str) -> str:
        if v not in ("text", "json"):
            raise ValueError("must be text or json")
        return v

    @field_validator("state_dir")
    @classmethod
    def _state_dir(cls, v: Path) -> Path:
        """A folder, or a path where one can be made: a file there (or a file above it) is a configuration error
        here, not a FileExistsError or NotADirectoryError traceback where the broker or the outbox first makes
        its folder. Whether it can be written is found where it is written."""
        if not str(v).strip():
            raise ValueError("is empty: a folder for local state")
        for p in (v, *v.parents):
            if p.exists():
                if not p.is_dir():
                    raise ValueError(f"{str(v)!r}: {str(p)!r} is a file, not a folder" if p != v else
                                     f"{str(v)!r} is a file, not a folder")
                break
        return v

    @field_validator("fleet_config")
    @classmethod
    def _fleet(cls, v: Path | None) -> Path | None:
        if v is not None:  # read once here, so a bad file stops start-up as a configuration error (exit 2)
            from schemas.fleet import load_fleet_config

            load_fleet_config(v)
        return v

    @field_validator("skew_s")
    @classmethod
    def _skews(cls, v: dict[str, float]) -> dict[str, float]:
        bad = [f"{h}={s}" for h, s in v.items() if not 0 <= s <= DAY_S]
        if bad:
            raise ValueError(f"skew bounds must be 0 to {DAY_S} seconds: {', '.join(bad)}")
        from schemas.hostname import canonical_host

        # as the events name the hosts (schemas.hostname); two names of one host are one given twice
        out: dict[str, float] = {}
        first: dict[str, str] = {}
        for h, s in v.items():
            c = canonical_host(h)
            if c in out:
                raise ValueError(f"hosts {first[c]!r} and {h!r} are one host, {c!r} (a host is its short name, in "
                                 "any case): give it once")
            out[c], first[c] = s, h
        return out

    @field_validator("timezone")
    @classmethod
    def _tz(cls, v: str) -> str:
        from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

        try:
            ZoneInfo(v)
        except (ZoneInfoNotFoundError, ValueError) as e:
            raise ValueError(f"unknown time zone {v!r}") from e
        return v

    def tzinfo(self):
        from zoneinfo import ZoneInfo

        return ZoneInfo(self.timezone)

    def early_after_us(self) -> int | None:
        """``early_after_s`` in µs for ``correlate.stream.StreamCorrelator``: None for 0 (only once quiet), at least
        1 µs for any other value (a value below a microsecond still asks for early versions)."""
        return max(1, round(self.early_after_s * 1_000_000)) if self.early_after_s > 0 else None


_PREFIX = "FIRSTFAULT_"
#: RFC 6750 §2.1 b64token
_B64TOKEN = re.compile(r"[A-Za-z0-9\-._~+/]+=*")
_OPTIONAL = {"fleet_config", "api_token", "public_url", "alertmanager_url", "pagerduty_url", "pagerduty_routing_key"}


def _pairs(var: str, text: str, example: str | None = None) -> dict[str, float]:
    """``node01=0.5,node02=3`` -> ``{"node01": 0.5, "node02": 3.0}``; SettingsError names the bad pair (``example``:
    how the right form reads where it was given), or a host given twice (which bound is meant? a fleet config refuses
    a host twice too)."""
    out = {}
    for p in (x.strip() for x in text.split(",")):
        if not p:
            continue
        host, eq, num = p.partition("=")
        try:
            if not eq or not host.strip():
                raise ValueError
            seconds = float(num)
        except ValueError:
            raise SettingsError(f"{var}: {p!r} is not host=seconds (e.g. {example or var + '=node01=0.5,node02=3'})"
                                ) from None
        if host.strip() in out:
            raise SettingsError(f"{var}: host {host.strip()!r} is given twice")
        out[host.strip()] = seconds
    return out


def _closest(name: str, fields: Iterable[str]) -> list[str]:
    """The setting a misspelt ``name`` means, as a list of none or one: the closest (difflib, 0.75), else the first
    that begins with it (four characters or more: "resolv" for ``resolve_after_s``)."""
    fields = list(fields)
    return difflib.get_close_matches(name, fields, n=1, cutoff=0.75) or (
        [f for f in fields if f.startswith(name)][:1] if len(name) >= 4 else [])


#: the largest settings or fleet config file read (bytes): a fleet of 100,000 hosts is ~5 MB of YAML; a valid 64 MiB
#: one took minutes and GBs to read (a break-it pass)
CONFIG_MAX_BYTES = 16 << 20


def read_config_text(path: Path) -> str:
    """The text (UTF-8) of a settings or fleet config file. Raises ``OSError`` with the reason for
    what is no regular file (a FIFO without a writer waited for ever; ``/dev/zero`` read until memory ran out: a
    break-it pass) or is larger than :data:`CONFIG_MAX_BYTES`, as for a file that cannot be read;
    ``UnicodeDecodeError`` for text that is not UTF-8."""
    st = os.stat(path)
    if stat.S_ISDIR(st.st_mode):
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
    if not stat.S_ISREG(st.st_mode):
        raise OSError("not a regular file (a pipe, a device)")
    with open(path, "rb") as f:
        data = f.read(CONFIG_MAX_BYTES + 1)
    if len(data) > CONFIG_MAX_BYTES:
        raise OSError(f"larger than {CONFIG_MAX_BYTES >> 20} MiB: no config file")
    return data.decode("utf-8")


#: ``FIRSTFAULT_*`` variables the project reads that are no setting: the config file's path, the Kafka jars' cache
#: folder (``ingest.broker``), a snapshot's revision (``benchmarks.accuracy``); they were refused as unknown settings,
#: and ``FIRSTFAULT_CACHE`` stopped every command (a break-it pass)
NOT_SETTINGS = frozenset({_PREFIX + "CONFIG", _PREFIX + "CACHE", _PREFIX + "REVISION"})


def load_settings(config: Path | None = None, env: dict[str, str] | None = None,
                  overrides: dict[str, Any] | None = None) -> Settings:
    """Defaults < TOML file < environment < ``overrides``. Raises :class:`SettingsError`."""
    env = dict(os.environ if env is None else env)
    data: dict[str, Any] = {}
    path = config or (Path(env[_PREFIX + "CONFIG"]) if env.get(_PREFIX + "CONFIG") else None)
    try:
        here = path is None and Path("firstfault.toml").exists()
    except OSError:  # a current folder this user may not search (sudo -u svc … from /root: a traceback, a break-it
        here = False  # pass): no local config
    if here:
        path = Path("firstfault.toml")
    if path is not None:
        try:
            data.update(tomllib.loads(read_config_text(path)))
        except FileNotFoundError as e:
            raise SettingsError(f"config file not found: {path}") from e
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
            raise SettingsError(f"{path}: not valid TOML: {e}") from e
        except RecursionError:
            raise SettingsError(f"{path}: nested too deeply to be a settings file") from None
        except OSError as e:  # a folder, no permission
            raise SettingsError(f"cannot read the config file {path}: {e.strerror or e}") from e
    fields = Settings.model_fields
    for name, v in list(data.items()):  # the environment's form in the file too: skew_s = "node01=0.5,node02=3"
        if isinstance(v, str) and name in fields and fields[name].annotation == dict[str, float]:
            data[name] = _pairs(f"{name} (from {path})", v, f'{name} = "node01=0.5,node02=3"')
    source = {name: str(path) for name in data} if path is not None else {}  # where each value came from
    for k, v in env.items():
        if not k.startswith(_PREFIX) or k in NOT_SETTINGS or v == "":
            continue  # an empty variable counts as unset (compose passes unset ones as empty)
        name = k[len(_PREFIX):].lower()
        if name not in fields:
            close = _closest(name, fields)  # not by the common prefix
            # none close: a pointer to the table, not all 36 names on one line (a fresh user's trial)
            raise SettingsError(f"unknown setting {k}" + (f": did you mean {_PREFIX + close[0].upper()}?" if close
                                                          else " (none is close to it; the settings: README.md's "
                                                               "Configuration table)"))
        source[name] = k
        ann = fields[name].annotation
        if ann in (list[str],):
            data[name] = [x.strip() for x in v.split(",") if x.strip()]
        elif ann == dict[str, float]:
            data[name] = _pairs(k, v)
        else:
            data[name] = v
    given = {k: v for k, v in (overrides or {}).items() if v is not None}
    data.update(given)
    source.update((k, "the command line") for k in given)

    def _did_you_mean(err: dict) -> str:  # a misspelt key of the file: the setting it is closest to, or the one it
        # begins ("resolv": only "Extra inputs are not permitted", where FIRSTFAULT_RESOLV got a hint; a fresh user)
        if err["type"] != "extra_forbidden" or len(err["loc"]) != 1:
            return ""
        close = _closest(str(err["loc"][0]), fields)
        return (f" (did you mean {close[0]}?)" if close
                else f" (the settings are {', '.join(fields)})")

    try:
        settings = Settings.model_validate(data)
        settings._sources = source
        return settings
    except ValidationError as e:
        # each message says where its value came from: the file, the environment variable, the command line
        msgs = "; ".join((f"{'.'.join(map(str, err['loc']))}"
                          + (f" (from {source[str(err['loc'][0])]})" if str(err["loc"][0]) in source else "") + ": "
                          if err["loc"] else "")  # a check of several settings names them itself
                         + ("unknown setting" if err["type"] == "extra_forbidden" and len(err["loc"]) == 1
                            else error_text(err)) + _did_you_mean(err) for err in e.errors())
        raise SettingsError(msgs) from e  # said after "configuration error: " (it said "invalid configuration" too)
