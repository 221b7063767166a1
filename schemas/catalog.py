"""Format of the signature catalog (``ingest/signatures/*.yaml``).

A signature is data: a stable id, what it means (kind, severity, role,
category, recommended action), one Python regular expression with named
groups, real example lines that must match (with where they come from) and
near misses that must not. The matcher compiles every ``pattern`` into one
Hyperscan database (named groups become non-capturing groups); the extractor
re-runs only the hit signature's ``pattern`` with Python ``re`` to read the
fields. Named groups whose name is an events column (``xid``, ``link``,
``rank`` …) fill that column; the converters below handle the rest; any
other group lands in the event's ``details`` JSON.

Validation errors raise :class:`pydantic.ValidationError` naming the file
and the entry, so a misspelled key stops start-up with a clear message.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from schemas.errors import error_text
from schemas.events import KINDS, SEVERITIES, SOURCES
from schemas.incidents import Category

Role = Literal["initiator", "downstream", "either", "application", "context"]
Emit = Literal["event", "link_sample", "topology", "context"]
Status = Literal["experimental", "stable"]

#: Group names with a special meaning for the extractor.
SPECIAL_GROUPS = {
    "pci": "device, from any printed PCI form (schemas.pci.normalize_bus_id)",
    "peer_pci": "peer, from any printed PCI form",
    "nccl_bus": "device, from NCCL's hex busId integer",
    "nccl_peer_bus": "peer, from NCCL's hex busId integer",
    "tests_bus": "device, from nccl-tests' [0xBB] bus number",
    "fatal_word": "fatal, from Fatal / Non-fatal / Nonfatal / Correctable",
    "name": "process",
    "peer_name": "details.peer_addr: a peer printed by its name where the pattern's other form prints its address",
    "cause": "cause_xid",
    "ran_ms": "elapsed_ms",
    "nic": "device (device_type nic): the RDMA device name, e.g. mlx5_32",
    "switch": "details.switch (nvswitchN) and device_type nvswitch",
    "link_signed": "link; the driver prints -1 when no specific link is meant (stored as null)",
    "uuid": "details.uuid; a context line's uuid is attached to the next event of that device",
    "occurs_at": "details.occurs_us (µs UTC): when the event the line announces happens (an Azure Scheduled "
                 "Event's NotBefore), the event's start in correlation, not its ts (ingest.assemble.occurs_time)",
}


class Example(BaseModel):
    """A real line that must match, where it was published, and fields it must give."""

    model_config = ConfigDict(extra="forbid")
    line: str
    src: str = Field(description="address of the public page the line was copied from")
    expect: dict[str, object] = Field(default_factory=dict)
    constructed: bool = Field(
        default=False,
        description="true when the line was assembled from a format string in driver source",
    )


class Signature(BaseModel):
    """One catalog entry."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(pattern=r"^[a-z0-9_]+(?:\.[a-z0-9_]+)*$")
    status: Status = "stable"
    source: str = Field(description="events.source: dmesg, nccl or nvml")
    kind: str
    severity: str = Field(
        description="critical|error|warning|info, or 'xid_catalog' / 'sxid_catalog' to look the code up"
    )
    severity_map: dict[str, str] = Field(
        default_factory=dict,
        description="group value (lower case) -> severity, overriding `severity` when the group matched",
    )
    severity_group: str | None = None
    kind_by_catalog_category: dict[str, str] = Field(
        default_factory=dict,
        description="for Xid/SXid entries: catalog CSV category -> event kind (e.g. gsp -> gsp_error)",
    )
    role: Role = "either"
    category: Category | None = Field(default=None, description="incident category this evidence suggests "
                                                                 "(``schemas.incidents.CATEGORIES``)")
    device_type: str | None = None
    emit: Emit = "event"
    priority: int = Field(default=0, description="when several signatures hit one line, the highest wins")
    multi: bool = Field(default=False, description="one event per occurrence in the line (wrapped tables)")
    parser: Literal["regex", "prometheus"] = Field(
        default="regex",
        description="how fields are read from a hit line: the entry's regex, or the Prometheus text-format "
                    "parser of prometheus_client (dcgm-exporter lines: metric name, labels, value)")
    pattern: str
    extra: list[str] = Field(
        default_factory=list, description="optional regexes searched on hit lines for more fields"
    )
    says: str | None = Field(default=None, description="what the line says, in a few words, where an explanation "
                             "names it (default: its kind's phrase, schemas.events.KIND_PHRASES)")
    action: str | None = Field(default=None, description="recommended action for the on-call engineer")
    action_map: dict[str, str] = Field(
        default_factory=dict,
        description="severity_group value (lower case; several joined by ' | ') -> the action for a line that says "
                    "it, in place of `action`: an HCA's port error and its catastrophic error need different work")
    verify: list[str] = Field(default_factory=list, description="commands that confirm it on the host")
    verify_by_category: dict[str, list[str]] = Field(
        default_factory=dict,
        description="for Xid entries: xid-catalog.csv category -> commands in place of `verify` (a GPU that fell "
                    "off the bus does not answer nvidia-smi -q -i; lspci still sees its slot)")
    sources: list[str] = Field(default_factory=list, description="documents the pattern comes from")
    examples: list[Example]
    near_misses: list[str] = Field(default_factory=list)

    @field_validator("source")
    @classmethod
    def _source(cls, v: str) -> str:
        if v not in SOURCES:
            raise ValueError(f"source must be one of {SOURCES}, not {v!r}")
        return v

    @field_validator("kind")
    @classmethod
    def _kind(cls, v: str) -> str:
        if v not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, not {v!r}")
        return v

    @field_validator("kind_by_catalog_category")
    @classmethod
    def _kinds_by_category(cls, v: dict[str, str]) -> dict[str, str]:
        # an event of another kind would be stored, and then refused by the API's kind filter (a break-it pass)
        bad = {c: k for c, k in v.items() if k not in KINDS}
        if bad:
            raise ValueError(f"kinds must be among {KINDS}, not {bad}")
        return v

    @field_validator("severity")
    @classmethod
    def _severity(cls, v: str) -> str:
        if v not in SEVERITIES and v not in ("xid_catalog", "sxid_catalog"):
            raise ValueError(f"severity must be one of {SEVERITIES} or xid_catalog/sxid_catalog, not {v!r}")
        return v

    @field_validator("pattern", "extra")
    @classmethod
    def _compiles(cls, v: str | list[str]) -> str | list[str]:
        for p in [v] if isinstance(v, str) else v:
            try:
                re.compile(p)
            except re.error as e:
                raise ValueError(f"pattern does not compile: {e}: {p!r}") from e
            if any(t in p for t in ("(?=", "(?!", "(?<=", "(?<!", "(?P=")):
                raise ValueError(f"look-around and back-references are not supported by Hyperscan: {p!r}")
        return v

    @model_validator(mode="after")
    def _checks(self) -> "Signature":
        if not self.examples:
            raise ValueError(f"{self.id}: at least one real example line is required")
        for k, sev in self.severity_map.items():
            if sev not in SEVERITIES:
                raise ValueError(f"{self.id}: severity_map[{k!r}] = {sev!r} is not a severity")
            if k != k.lower():  # the group's value is looked up in lower case (ingest.extract): it would never match
                raise ValueError(f"{self.id}: severity_map key {k!r} is not lower case")
        if self.severity_map and not self.severity_group:
            raise ValueError(f"{self.id}: severity_map needs severity_group")
        if self.action_map and not (self.severity_group and self.action):
            raise ValueError(f"{self.id}: action_map needs severity_group and an action for the other values")
        for k in self.action_map:
            # looked up in lower case too (correlate.attribute.catalog_action): nvml.q_clocks_event's "HW Power Brake
            # Slowdown" never matched, and the power brake got the generic text (a real-logs pass)
            if k != k.lower():
                raise ValueError(f"{self.id}: action_map key {k!r} is not lower case")
        return self


class DerivedSignature(BaseModel):
    """An event made from several samples rather than from one line (a counter that rose).

    It has no pattern: ``ingest.counters`` makes it from the ``link_samples``
    rows of the signatures named in ``from_signatures``. Its ``message`` is the
    later sample's line.
    """

    model_config = ConfigDict(extra="forbid")
    id: str = Field(pattern=r"^[a-z0-9_]+(?:\.[a-z0-9_]+)*$")
    status: Status = "stable"
    source: str
    kind: str
    severity: str
    role: Role = "either"
    category: Category | None = None
    device_type: str | None = "gpu"
    from_signatures: list[str]
    counters: list[str] = Field(description="counter names (lower case substrings) whose increase is an event")
    says: str | None = Field(default=None, description="what the event says, in a few words, where an explanation "
                             "names it (default: its kind's phrase, schemas.events.KIND_PHRASES)")
    action: str | None = None
    verify: list[str] = Field(default_factory=list)
    sources: list[str] = Field(default_factory=list)

    # what a pattern signature reads from its line's own words and a derived event has none of (the correlator reads
    # them of every signature: without them a counter that rose crashed every correlate() — a break-it pass)
    @property
    def action_map(self) -> dict[str, str]:
        """No action per word of the line: :attr:`action` is the action."""
        return {}

    @property
    def severity_group(self) -> None:
        """No group of the line names a severity."""
        return None

    @field_validator("kind")
    @classmethod
    def _kind(cls, v: str) -> str:
        if v not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, not {v!r}")
        return v


class CatalogFile(BaseModel):
    """One YAML file of the catalog: a family of signatures."""

    model_config = ConfigDict(extra="forbid")
    family: str
    description: str
    signatures: list[Signature]
    derived: list[DerivedSignature] = Field(default_factory=list)


def validation_message(e: ValidationError) -> str:
    """A pydantic error as one line: where and what, for each problem (at most three), without pydantic's links (a
    signature or rules file that did not validate printed several lines ending in a URL: a break-it pass)."""
    parts = [f"{'.'.join(map(str, err['loc'])) or 'the file'}: {error_text(err)}" for err in e.errors()[:3]]
    more = len(e.errors()) - len(parts)
    return "; ".join(parts) + (f" (and {more} more)" if more > 0 else "")
