"""PCI bus id normalisation: every printed form to ``dddd:bb:dd.f`` lower case.

Forms seen in real logs (shared/reference/formats.md §0, §8, §11.4):

* kernel Xid ``PCI:0000:18:00`` (no function)      -> ``0000:18:00.0``
* NVRM / AER ``0000:18:00.0``                     -> as is
* nvidia-smi ``00000000:18:00.0`` (8-digit domain) -> ``0000:18:00.0``
* a domain past 0xffff (Intel VMD: ``10000:e1:00``)  -> ``10000:e1:00.0``, as Linux prints it
* NCCL ``busId 18000`` (hex int, ``domain<<20 | bus<<12 | dev<<4 | fn``)
  -> ``0000:18:00.0``; GB200 ``801000`` -> ``0008:01:00.0``
* nccl-tests ``[0x21]`` (bus only)                -> ``0000:21:00.0``
"""

from __future__ import annotations

import re
from functools import lru_cache

_BDF = re.compile(
    r"^(?:PCI:)?(?:(?P<dom>[0-9a-fA-F]{4,8}):)?(?P<bus>[0-9a-fA-F]{2}):(?P<dev>[0-9a-fA-F]{2})(?:\.(?P<fn>[0-7]))?$"
)


@lru_cache(maxsize=4096)  # a host has a few dozen PCI addresses, printed on every line of a storm
def normalize_bus_id(text: str | None) -> str | None:
    """Normalise a printed PCI address to ``dddd:bb:dd.f``; ``None`` if unreadable.

    Accepts the kernel, nvidia-smi and lspci forms. A redacted id such as
    ``PCI:...`` gives ``None``. The domain is written as Linux writes it (``%04x``): nvidia-smi's 8-digit
    ``00000000`` is ``0000``, an Intel VMD domain (``10000``, ``00010000``) keeps its five digits.
    """
    if not text:
        return None
    m = _BDF.match(text.strip())
    if not m:
        return None
    dom = int(m.group("dom") or "0", 16)  # as Linux prints it (%04x): a VMD domain has five digits, 10000
    return f"{dom:04x}:{m.group('bus')}:{m.group('dev')}.{m.group('fn') or '0'}".lower()


def nccl_bus_id(hexid: str) -> str | None:
    """Decode NCCL's ``busId`` integer (printed with ``%lx``) to ``dddd:bb:dd.f``.

    NCCL's ``int64ToBusId`` (src/misc/utils.cc): ``f = id & 0xf;
    d = (id >> 4) & 0xff; b = (id >> 12) & 0xff; dom = id >> 20``. Always
    decode arithmetically: ``801000`` is ``0008:01:00.0``.
    """
    try:
        v = int(hexid, 16)
    except (TypeError, ValueError):
        return None
    return f"{v >> 20:04x}:{(v >> 12) & 0xFF:02x}:{(v >> 4) & 0xFF:02x}.{v & 0xF:x}"


def bus_only(hexbus: str) -> str | None:
    """nccl-tests prints ``[0x21]`` (the bus number only): ``0000:21:00.0``."""
    try:
        v = int(hexbus, 16)
    except (TypeError, ValueError):
        return None
    if not 0 <= v <= 0xFF:
        return None
    return f"0000:{v:02x}:00.0"
