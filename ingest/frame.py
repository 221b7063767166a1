"""Frame a segment's bytes into logical lines: continuation lines join their first line.

Two real shapes continue a message over several physical lines:

* a multi-line printk in raw ``dmesg``: the continuation lines carry no
  stamp and are indented to exactly the width of the first line's
  ``[  1843.308145] `` stamp (shared/reference/formats.md §1.8, corpus 004);
* a ``dcgmi diag`` / ``dcgmi health`` table, whose long cells wrap onto rows
  with an empty first cell, breaking words anywhere (corpus 008).

Framing keeps the original text of a joined line (with its newlines) for the
event's ``message``, and maps each logical line back to the physical line it
starts on, so event ids keep pointing at real line numbers. Segments with
neither shape pass through untouched (the common, fast case).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_STAMP = re.compile(rb"^\[[^\]\n]{1,40}\] ")
_TABLE_ROW = re.compile(rb"^\|([^|\n]*)\|([^|\n]*)\|?[^\S\n]*$")


@dataclass(slots=True)
class Framed:
    """Logical lines of one segment.

    ``scan``: the bytes to match (logical lines joined by ``\\n``);
    ``first_line``: for each logical line, the index of its first physical
    line (``None`` when identical to the logical index);
    ``original``: logical line index -> original multi-line text, for joined lines.
    """

    scan: bytes
    first_line: list[int] | None = None
    original: dict[int, str] | None = None


def _needs_framing(data: bytes) -> bool:
    return b"\n  " in data or b"\n|" in data or data[:1] == b"|"


def frame(data: bytes) -> Framed:
    """Join continuation lines (see module doc). Pure; never raises."""
    if not _needs_framing(data):
        return Framed(scan=data)
    phys = data.split(b"\n")
    out: list[bytes] = []
    first: list[int] = []
    original: dict[int, str] = {}
    joined_from: list[list[bytes]] = []
    stamp_width = 0
    in_table = False
    for i, line in enumerate(phys):
        # dmesg continuation: exactly stamp_width spaces, then text
        if (stamp_width and out and len(line) > stamp_width and line[:stamp_width] == b" " * stamp_width
                and line[stamp_width:stamp_width + 1] not in (b" ", b"\t")):
            out[-1] = out[-1] + b" " + line[stamp_width:]
            joined_from[-1].append(line)
            continue
        t = _TABLE_ROW.match(line)
        if t and in_table and out and not t.group(1).strip() and t.group(2).strip():
            # wrapped table cell: glue the text on, no separator (DCGM breaks mid-word)
            out[-1] = out[-1] + t.group(2).strip()
            joined_from[-1].append(line)
            continue
        s = _STAMP.match(line)
        stamp_width = len(s.group(0)) if s else 0
        if t:
            in_table = True
            out.append(b"| " + t.group(1).strip() + b" | " + t.group(2).strip())
        else:
            in_table = False
            out.append(line)
        first.append(i)
        joined_from.append([line])
    for j, parts in enumerate(joined_from):
        if len(parts) > 1 or out[j] is not parts[0]:
            original[j] = b"\n".join(parts).decode("utf-8", "replace")
    if not original and len(out) == len(phys) and all(a is b for a, b in zip(out, phys)):
        return Framed(scan=data)
    return Framed(scan=b"\n".join(out), first_line=first, original=original or None)
