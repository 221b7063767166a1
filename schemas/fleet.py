"""The fleet config file: which platform each host is, and which NVLink domain and rack it belongs to.

YAML::

    hosts:
      node07: {platform: "NVIDIA GB200", domain: rack3, rack: r3}
      node08: {platform: "NVIDIA H100 80GB HBM3"}

``platform`` is a GPU model name (expected links per GPU: correlate/platforms.yaml);
``domain`` an NVLink domain (GB200 NVL72 rack / clique) whose hosts' events are
correlated together; ``rack`` for filtering. Shared by ingest (event keys),
correlate (topology) and api (filters).
"""

from __future__ import annotations

import reprlib
from dataclasses import dataclass
from pathlib import Path

import yaml

from schemas.hostname import MAX_HOST_CHARS, canonical_host, is_host_name
from schemas.settings import read_config_text


@dataclass(slots=True)
class HostConfig:
    """One host of the fleet config file."""

    platform: str | None = None  # GPU model, e.g. "NVIDIA H100 80GB HBM3"
    domain: str | None = None  # NVLink domain (NVL72 rack / clique) or None
    rack: str | None = None


class _Strings(getattr(yaml, "CBaseLoader", yaml.BaseLoader)):  # libyaml's parser when PyYAML has it: ~10x
    """YAML with every scalar read as the text it is (PyYAML's ``BaseLoader``: host ``001`` stays ``001``, rack
    ``010`` is not octal 8, host ``no`` is no boolean, ``12:31`` no base-60 number), and a key given twice in one
    mapping an error, not the last one silently."""

    def construct_mapping(self, node, deep=False):
        seen: set[str] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if not isinstance(key, str):  # a list or mapping as a key: no name
                raise yaml.constructor.ConstructorError(None, None, f"a key must be a name, not {_short(key)}",
                                                        key_node.start_mark)
            if key in seen:
                raise yaml.constructor.ConstructorError(None, None, f"{key!r} is given twice", key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


#: YAML's spellings of null, read as "not given"
_NULLS = {"", "~", "null", "Null", "NULL"}


def _short(value: object) -> str:
    """A value for an error message, at most a line: ``reprlib`` stops at a few items and levels (a value built
    from nested aliases, "billion laughs", expands to gigabytes in a plain ``repr``)."""
    return _REPR.repr(value)


_REPR = reprlib.Repr()  # Python 3.11's takes no arguments
_REPR.maxlevel, _REPR.maxlist, _REPR.maxdict, _REPR.maxstring, _REPR.maxother = 2, 4, 4, 60, 60


#: (path, mtime ns, size) -> the hosts read from it: the settings, the API, the service and every
#: ``correlate()`` call read the same file
_LOADED: dict[tuple[str, int, int], dict[str, HostConfig]] = {}


def load_fleet_config(path: Path) -> dict[str, HostConfig]:
    """Read the fleet config (once per version of the file: ``_LOADED``; a new dict each call). Every value is
    text as written (``_Strings``). Raises ``ValueError`` naming the key when the file does not have that shape
    (a value that is a list or mapping, a host given twice), or saying why it cannot be read (missing, a
    folder, not UTF-8, not YAML)."""
    try:
        st = Path(path).stat()
        key = (str(Path(path).resolve()), st.st_mtime_ns, st.st_size)
    except OSError:
        key = None
    if key in _LOADED:
        return dict(_LOADED[key])
    hosts = _read(path)
    if key is not None:
        if len(_LOADED) >= 8:
            _LOADED.clear()
        _LOADED[key] = hosts
    return dict(hosts)


def _read(path: Path) -> dict[str, HostConfig]:
    try:
        doc = yaml.load(read_config_text(Path(path)), Loader=_Strings) or {}  # noqa: S506
    except (yaml.YAMLError, UnicodeDecodeError) as e:
        raise ValueError(f"{path}: not valid YAML: {e}") from e
    except RecursionError:
        raise ValueError(f"{path}: nested too deeply to be a fleet config") from None
    except OSError as e:
        raise ValueError(f"cannot read the fleet config {path}: {e.strerror or e}") from e
    hosts = doc.get("hosts") if isinstance(doc, dict) else None
    if not isinstance(hosts, dict):
        raise ValueError(f"{path}: expected a mapping 'hosts:'")
    out: dict[str, HostConfig] = {}
    first: dict[str, str] = {}  # host -> the name the file gave it first
    for name, cfg in hosts.items():
        if not isinstance(name, str) or name in _NULLS:
            raise ValueError(f"{path}: a host name must be text, not {_short(name)}")
        if not is_host_name(name):  # as ingest refuses it (bad_host): no event has such a host
            raise ValueError(f"{path}: {_short(name)} is no host name (at most {MAX_HOST_CHARS} characters, no "
                             "blanks, control or format characters or '/'; not syslog's '-' or dots alone)")
        cfg = {} if isinstance(cfg, str) and cfg in _NULLS else cfg
        if not isinstance(cfg, dict):
            raise ValueError(f"{path}: host {name}: expected a mapping")
        unknown = set(cfg) - {"platform", "domain", "rack"}
        if unknown:
            raise ValueError(f"{path}: host {name}: unknown keys {sorted(unknown)}")
        odd = sorted(k for k, v in cfg.items() if not isinstance(v, str))
        if odd:
            raise ValueError(f"{path}: host {name}: {odd[0]} must be one name, not {_short(cfg[odd[0]])}")
        host = canonical_host(name)  # as the events name it (schemas.hostname): node07.cluster.local is node07
        if host in out:
            raise ValueError(f"{path}: hosts {first[host]} and {name} are one host, {host} (a host is its short "
                             "name, in any case)")
        first[host] = name
        out[host] = HostConfig(**{k: (None if v in _NULLS else v) for k, v in cfg.items()})
    return out
