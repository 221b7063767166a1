"""Side tables the ingest path fills besides events: NVLink samples and topology facts.

``link_samples``: one row per link per sample (``nvidia-smi nvlink -s/-e``,
DCGM): state and speed, or one error counter and its value.
``topology``: what a host told us about its wiring: ``nvlink_remote`` rows from
``nvidia-smi nvlink -R`` (GPU link -> remote device and port), ``topo_path``
rows from ``nvidia-smi topo -m`` (GPU -> peer, path type
``NV<k>``/``PIX``/``PXB``/``PHB``/``NODE``/``SYS``) and ``gpu_bus`` rows (GPU
index -> PCI bus id, from the ``nvidia-smi`` table or ``--query-gpu``).
Times are UTC µs.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Final, Literal

import pyarrow as pa
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

LINK_SAMPLES_SCHEMA: Final = pa.schema([
    pa.field("host", pa.string(), nullable=False),
    pa.field("ts", pa.timestamp("us", tz="UTC"), nullable=False),
    pa.field("gpu_index", pa.int16()),
    pa.field("device", pa.string()),
    pa.field("link", pa.int16()),
    # "up", "inactive" (nvidia-smi), "down" (DCGM), or null for a counter row
    pa.field("state", pa.string()),
    pa.field("gbps", pa.float64()),  # per-link rate as nvidia-smi prints it, GB/s
    pa.field("counter", pa.string()),  # e.g. "CRC Errors", "Replay Errors", "Recovery Errors"
    pa.field("value", pa.float64()),  # counter value (counts, or a ratio such as a bit error rate)
    pa.field("model", pa.string()),
    pa.field("origin", pa.string(), nullable=False),
])

TOPOLOGY_SCHEMA: Final = pa.schema([
    pa.field("host", pa.string(), nullable=False),
    pa.field("ts", pa.timestamp("us", tz="UTC"), nullable=False),
    pa.field("fact", pa.string(), nullable=False),  # "nvlink_remote" | "topo_path" | "gpu_bus"
    pa.field("gpu_index", pa.int16()),
    pa.field("device", pa.string()),
    pa.field("link", pa.int16()),
    pa.field("peer_name", pa.string()),  # topo -m column name, e.g. "GPU1", "NIC0"
    pa.field("peer_device", pa.string()),  # remote PCI bus id (nvlink -R)
    pa.field("peer_link", pa.int16()),  # remote port / link number
    pa.field("path", pa.string()),  # topo -m cell: NV18, PIX, PXB, PHB, NODE, SYS
    pa.field("origin", pa.string(), nullable=False),
])


# --- the poller format -------------------------------------------------------------------------------------

POLLER_FORMAT: Final = "firstfault.link_sample/1"


#: a counter name as ``nvidia-smi nvlink -e`` prints it and signature ``nvml.nvlink_counter`` reads it
_COUNTER_NAME = re.compile(r"[A-Za-z]+(?: [A-Za-z]+)*")


class PollerLink(BaseModel):
    """One NVLink of a GPU as a poller read it (NVML ``nvmlDeviceGetNvLinkState`` / ``GetNvLinkSpeed`` /
    ``GetNvLinkErrorCounter``, or ``nvidia-smi nvlink -s -e``)."""

    model_config = ConfigDict(extra="forbid")
    link: int = Field(ge=0, le=63)
    state: Literal["up", "inactive", "down"]
    gbps: float | None = Field(default=None, ge=0, description="per-link rate, GB/s; required when up")
    # NVML's counters are unsigned 64-bit (nvmlDeviceGetNvLinkErrorCounter); what the lake stores is a signed one:
    # a negative count was no sample row at all, and 2**63 a float
    # (a count is a JSON integer: true and "7" were read as 1 and 7, rises of a link no poller saw: a break-it pass)
    counters: dict[str, Annotated[int, Field(ge=0, le=2**63 - 1)]] = Field(
        default_factory=dict, description='error counters by their nvidia-smi name, e.g. "Replay Errors", '
                                          '"Recovery Errors", "CRC Errors"; whole JSON numbers 0 to 2^63 - 1; NVML\'s '
                                          'unsigned -1, 2^64 - 1 (no value), is left out')

    @field_validator("counters", mode="before")
    @classmethod
    def _no_value(cls, v: Any) -> Any:
        """NVML's unsigned -1 (18446744073709551615: the counter has no value) is no count: that counter is left out,
        not the GPU's whole sample dead-lettered (a break-it pass; the text path reads it alike: assemble._NO_COUNT)."""
        if isinstance(v, dict):
            for k, c in v.items():
                if isinstance(c, (bool, str)):
                    raise ValueError(f"counter {str(k)[:64]!r} is {c!r}: a count is a JSON number")
            # NVML's unsigned -1 also as a float (1.8446744073709552e19: a JSON encoder of doubles) or signed (-1: a
            # poller that reads it as int64): no value either (a second break-it pass)
            return {k: c for k, c in v.items() if not (type(c) in (int, float) and c in (2**64 - 1, 2.0**64, -1))}
        return v

    @model_validator(mode="after")
    def _speed_when_up(self) -> "PollerLink":
        if self.state == "up" and self.gbps is None:
            raise ValueError(f"link {self.link} is up but has no gbps")
        for name in self.counters:
            # the names the counter signature reads (nvml.nvlink_counter, nvidia-smi nvlink -e: "Replay Errors"):
            # one accepted that it could not ("Link5", "Errors GB/s", "Ünicode Errors", a tab) was stored nowhere and
            # dead-lettered nowhere, and "Replay Errors " was a series of its own (a break-it pass)
            if len(name) > 64 or not _COUNTER_NAME.fullmatch(name):
                raise ValueError(f"counter name {name!r} must be ASCII letters in words one space apart, as nvidia-smi "
                                 "nvlink -e prints them (\"Replay Errors\"), at most 64 characters")
        return self


class PollerSample(BaseModel):
    """One NDJSON record of a GPU's NVLinks, sent by a poller to the NVML topic (docs/recognition.md, input shapes).

    ``{"format": "firstfault.link_sample/1", "host": "node07", "timestamp": "2026-11-30T03:12:01Z",
    "gpu_index": 0, "device": "0000:18:00.0", "model": "NVIDIA H100 80GB HBM3",
    "links": [{"link": 0, "state": "up", "gbps": 26.562, "counters": {"Replay Errors": 0}}]}``

    ``timestamp`` and ``host`` are the envelope's (any form the NDJSON reader accepts). Raises
    ``pydantic.ValidationError`` naming the bad field."""

    model_config = ConfigDict(extra="allow")  # the envelope's own fields (timestamp, host, labels …)
    format: Literal["firstfault.link_sample/1"]
    gpu_index: int = Field(ge=0, le=1023)
    device: str | None = Field(default=None, pattern=r"^(?:[0-9a-fA-F]{4,8}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$")
    model: str | None = Field(default=None, max_length=128, pattern=r"^[^\n()]*$")
    uuid: str | None = Field(default=None, pattern=r"^GPU-[0-9a-fA-F-]{36}$")
    links: list[PollerLink] = Field(max_length=64)

    @model_validator(mode="after")
    def _each_link_once(self) -> "PollerSample":
        """A link listed twice (up, then down, with two counter values) gave two rows of one link at one time: the
        API's latest state of it changed between two identical calls, and the hourly report found a flap and a
        counter rise in one sample (a break-it pass)."""
        seen: set[int] = set()
        twice = sorted({ln.link for ln in self.links if ln.link in seen or seen.add(ln.link)})
        if twice:
            raise ValueError(f"link{'s' * (len(twice) != 1)} {', '.join(map(str, twice))} listed more than once: one "
                             "entry per link")
        return self

    def as_smi_text(self) -> str:
        """The lines this sample stands for, so the catalog's NVML signatures read it: the ``nvidia-smi
        --query-gpu=index,pci.bus_id`` line (index -> bus id), the ``nvidia-smi nvlink`` block header, then per
        link its ``-s`` line (speed, or ``<inactive>``) and its ``-e`` counter lines; a link in DCGM's state
        ``down`` (nvidia-smi has no such state) as DCGM's health line, "GPU 2's NvLink link 1 is currently
        down" (signature ``dcgm.nvlink_down``), after the block."""
        out = []
        if self.device:
            dom, rest = self.device.split(":", 1) if self.device.count(":") == 2 else ("0000", self.device)
            out.append(f"{self.gpu_index}, {int(dom, 16):08X}:{rest.upper()}")
        out.append(f"GPU {self.gpu_index}: {self.model or 'NVIDIA GPU'}" + (f" (UUID: {self.uuid})" if self.uuid else ""))
        down = []
        for ln in sorted(self.links, key=lambda x: x.link):
            if ln.state == "down":
                down.append(f"GPU {self.gpu_index}'s NvLink link {ln.link} is currently down")
            else:
                out.append(f"         Link {ln.link}: {f'{ln.gbps:g} GB/s' if ln.state == 'up' else '<inactive>'}")
            out.extend(f"         Link {ln.link}: {name}: {v}" for name, v in ln.counters.items())
        return "\n".join(out + down)
