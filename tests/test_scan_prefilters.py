"""A literal prefilter before a per-hit regex scan finds what the bare scan finds (ingest/pipeline.py).

``_after_last_error`` looks for "Last error:" before it runs ``_LAST_ERROR``: a speed change. The buffers below are
drawn from the pieces the pattern is made of (stamps, labels, NCCL prefixes, "Last error:", blanks, newlines), and
every line start is compared with the bare regex.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from ingest.pipeline import _LAST_ERROR, _after_last_error

PIECES = [b"\n", b" ", b"\t", b"Last error:", b"Last error: ", b"Last error", b"[rank3]:", b"[rank3]: ",
          b"[1,3]<stderr>:", b"(Worker pid=7, ip=10.0.0.2) ", b"Mar 21 21:42:01 node07 python[4181]: ",
          b"] NCCL ", b"] NCCL INFO ", b"node01:311:405 [0] NCCL WARN ", b"[12.345678] ", b"(pid=34272) ",
          b"9aee1c01f3e7:6727:7168 [1] NCCL INFO NET/IB", b"x" * 45, b"y" * 210, b"]", b"[", b":", b"0", b"ok"]


@settings(max_examples=400)
@given(st.lists(st.sampled_from(PIECES), max_size=40))
def test_after_last_error_is_the_bare_regex_at_every_line_start(pieces):
    buf = b"".join(pieces)
    for a in range(len(buf) + 1):
        bare = not (a < 12 or buf[a - 1] != 0x0A) and _LAST_ERROR.search(buf, max(0, a - 260), a - 1) is not None
        assert _after_last_error(buf, a) is bare


def test_after_last_error_behind_a_syslog_tag_and_not_after_other_text():
    quote = b"Mar 21 21:42:01 node07 python[4181]: [rank3]: Last error:\n"
    line = b"NET/IB : Got completion from peer\n"
    assert _after_last_error(quote + line, len(quote)) is True
    assert _after_last_error(b"Last error: none here\n" + line, 22) is False
