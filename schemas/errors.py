"""pydantic's validation messages in firstfault's own words."""

from __future__ import annotations

from typing import Any

#: what pydantic puts before the text of a ValueError a validator raised (``Value error, '2026' is no time…``)
_PREFIXES = ("Value error, ", "Assertion failed, ")


def error_text(err: dict[str, Any]) -> str:
    """The message of one pydantic error (an item of ``ValidationError.errors()``), without pydantic's
    ``Value error, `` before a validator's own text: the library's wording, not the tool's (a fresh user's trial)."""
    msg = str(err.get("msg", ""))
    for p in _PREFIXES:
        if msg.startswith(p):
            return msg[len(p):]
    return msg
