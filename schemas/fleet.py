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

from dataclasses import dataclass
from pathlib import Path

import yaml


@dataclass(slots=True)
class HostConfig:
    """One host of the fleet config file."""

    platform: str | None = None  # GPU model, e.g. "NVIDIA H100 80GB HBM3"
    domain: str | None = None  # NVLink domain (NVL72 rack / clique) or None
    rack: str | None = None


def load_fleet_config(path: Path) -> dict[str, HostConfig]:
    """Read the fleet config. Raises ``ValueError`` naming the key when the file does not have that shape, or
    saying why it cannot be read (missing, a folder, not UTF-8, not YAML)."""
    try:
        doc = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
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
    for name, cfg in hosts.items():
        cfg = cfg or {}
        if not isinstance(cfg, dict):
            raise ValueError(f"{path}: host {name}: expected a mapping")
        unknown = set(cfg) - {"platform", "domain", "rack"}
        if unknown:
            raise ValueError(f"{path}: host {name}: unknown keys {sorted(unknown)}")
        out[str(name)] = HostConfig(**{k: (str(v) if v is not None else None) for k, v in cfg.items()})
    return out
