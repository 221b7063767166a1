"""glibc malloc settings of a worker process: keep the memory a batch frees for the next batch.

A worker allocates a batch's large buffers anew for every batch — the joined lines (~60 MB for 2,000
messages of 256 lines), decompressed values, Arrow columns — and frees them when the batch is done. glibc
serves an allocation of more than its mmap threshold (128 KB, rising to at most 32 MB as it sees such
blocks freed) with a fresh ``mmap`` and gives it back with ``munmap`` when freed, so every batch pays a
page fault per 4 KB page it touches again: joining 60 MB took 0.065 CPU s with those faults and 0.010 s
without them. :func:`keep_freed_memory` raises the mmap threshold and the trim threshold (how much free
memory at the top of the heap is kept rather than returned to the system) to
:data:`KEEP_BYTES`, so such buffers come from the heap and their pages are reused.

Measured with ``python -m benchmarks.ingest`` (kafka_batch and a 3,000,000-line backlog, four runs each
way, alternating; benchmarks/README.md): the backlog's worker 403k – 464k → 492k – 553k lines/s per core,
its peak RSS 511 – 575 → 518 – 632 MB; the bare consumer (the ceiling, which takes the same setting)
1.24M – 1.47M → 1.52M – 1.83M lines/s per core.

Only with glibc (the Docker image's Debian, most Linux distributions); elsewhere (musl, macOS) nothing
changes. What the thresholds mean: mallopt(3).
"""

from __future__ import annotations

import ctypes
import ctypes.util

#: the mmap and trim thresholds a worker sets, bytes: a batch's buffers are below it, and a worker keeps at
#: most this much freed memory (its peak RSS target is 1 GiB: benchmarks/README.md)
KEEP_BYTES = 256 * 1024 * 1024
#: mallopt(3) parameter numbers (glibc's malloc.h)
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3


def keep_freed_memory(keep_bytes: int = KEEP_BYTES) -> bool:
    """Set glibc's mmap and trim thresholds to ``keep_bytes`` for this process (module doc). Returns whether
    both were set: False where the C library is not glibc or refuses the mmap threshold (an older glibc
    takes at most 32 MB): nothing changes then. Raises ``ValueError`` for a ``keep_bytes`` that is not 1 to
    2**31 - 1 (mallopt takes a C int)."""
    if not 0 < keep_bytes < 2**31:
        raise ValueError(f"keep_bytes must be 1 to 2**31 - 1, not {keep_bytes}")
    name = ctypes.util.find_library("c")
    if name is None:
        return False
    try:
        libc = ctypes.CDLL(name)
        libc.gnu_get_libc_version  # glibc's own: musl has mallopt too, but ignores these parameters
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    if not mallopt(_M_MMAP_THRESHOLD, keep_bytes):  # refused: keep the defaults, trim threshold too
        return False
    return bool(mallopt(_M_TRIM_THRESHOLD, keep_bytes))
