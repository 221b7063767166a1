"""pydantic's validation messages in firstfault's own words."""

from __future__ import annotations

from typing import Any

#: what pydantic puts before the text of a ValueError a validator raised (``Value error, '2026' is no time…``)
_PREFIXES = ("Value error, ", "Assertion failed, ")

#: pydantic's error types whose words are the library's ("Input should be less than or equal to 65535", "unable to
#: parse string as an integer", "Input should be a valid boolean, unable to interpret input": a second new user's
#: trial), as the tool says them; the value given follows ("…, not 99999")
_PLAIN = {
    "less_than_equal": "must be at most {le}",
    "less_than": "must be less than {lt}",
    "greater_than_equal": "must be at least {ge}",
    "greater_than": "must be more than {gt}",
    "int_parsing": "must be a whole number",
    "int_from_float": "must be a whole number",
    "int_type": "must be a whole number",
    "float_parsing": "must be a number",
    "float_type": "must be a number",
    "bool_parsing": "must be true or false",
    "bool_type": "must be true or false",
    "json_invalid": "is not JSON: {error}",
}

#: the longest given value quoted back (a body or a setting may be long)
_SHOWN_CHARS = 60


def given(value: Any) -> str:
    """A value as said after "not": a number as written (``99999``, from the command line or the environment too),
    other text quoted (``'maybe'``), cut at :data:`_SHOWN_CHARS` characters."""
    if isinstance(value, str):
        try:
            float(value)
            number = True
        except ValueError:
            number = False
        text = value if number else repr(value)
    else:
        text = str(value).lower() if isinstance(value, bool) else repr(value)
    return text if len(text) <= _SHOWN_CHARS else text[:_SHOWN_CHARS - 1] + "…"


def error_text(err: dict[str, Any]) -> str:
    """The message of one pydantic error (an item of ``ValidationError.errors()``) in the tool's words: without
    pydantic's ``Value error, `` before a validator's own text (a fresh user's trial), and the bounds, numbers,
    booleans and JSON of :data:`_PLAIN` said plainly with the value given (``must be at most 65535, not 99999``)."""
    plain = _PLAIN.get(str(err.get("type", "")))
    if plain is not None:
        try:
            # a bound of a float setting as written (0, not 0.0)
            text = plain.format(**{k: int(v) if isinstance(v, float) and v.is_integer() else v
                                   for k, v in (err.get("ctx") or {}).items()})
        except (KeyError, IndexError):  # a context this pydantic does not give: its own words
            text = None
        if text is not None:
            return text if err["type"] == "json_invalid" or "input" not in err else f"{text}, not {given(err['input'])}"
    msg = str(err.get("msg", ""))
    for p in _PREFIXES:
        if msg.startswith(p):
            return msg[len(p):]
    return msg
