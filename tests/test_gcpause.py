"""ingest.gcpause: the collector is off inside paused calls, on again after the last one, whatever raises."""

from __future__ import annotations

import gc
import threading

import pytest

from ingest.gcpause import gc_paused, gc_resumed


def test_nested_and_raising_blocks_restore_the_collector():
    assert gc.isenabled()
    with gc_paused():
        assert not gc.isenabled()
        with pytest.raises(ValueError), gc_paused():
            raise ValueError("inner")
        assert not gc.isenabled()  # the outer block is still inside
    assert gc.isenabled()


def test_a_wait_inside_a_paused_block_collects_and_the_block_stays_paused_after():
    with gc_paused():
        with gc_resumed():
            assert gc.isenabled()
        assert not gc.isenabled()
        with pytest.raises(ValueError), gc_resumed():
            raise ValueError("the wait failed")
        assert not gc.isenabled()
    assert gc.isenabled()
    with gc_resumed():  # outside any paused block: nothing changes
        assert gc.isenabled()
    assert gc.isenabled()


def test_a_collector_switched_off_before_stays_off():
    gc.disable()
    try:
        with gc_paused():
            with gc_resumed():  # nor does a wait inside switch it on
                assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_concurrent_paused_calls_in_threads():
    inside, leave = threading.Barrier(3), threading.Event()
    seen = []

    @gc_paused()
    def work():
        inside.wait(10)
        leave.wait(10)
        seen.append(gc.isenabled())

    threads = [threading.Thread(target=work) for _ in range(2)]
    for t in threads:
        t.start()
    inside.wait(10)  # both threads are inside
    assert not gc.isenabled()
    leave.set()
    for t in threads:
        t.join(10)
    assert seen == [False, False] and gc.isenabled()


def test_a_worker_process_collects_the_older_generations_less_often():
    from ingest.gcpause import WORKER_THRESHOLDS, tune_for_worker

    before = gc.get_threshold()
    try:
        gc.set_threshold(700, 10, 10)  # Python's default (another test may have started a worker in process)
        tune_for_worker()
        assert gc.get_threshold() == WORKER_THRESHOLDS == (700, 50, 50)
    finally:
        gc.set_threshold(*before)


def test_a_worker_process_reuses_the_pages_a_batch_frees():
    """``tune_for_worker`` keeps freed memory (``ingest.allocator``): a batch's 64 MB buffer, freed and made again,
    reuses its pages instead of faulting each 4 KB page in anew (16,384 minor faults). Run in a process of its own,
    with and without, so the test process keeps glibc's defaults."""
    import subprocess
    import sys

    code = ("import resource, sys\n"
            "from ingest.allocator import keep_freed_memory\n"
            "if sys.argv[1] == 'keep': assert keep_freed_memory()\n"
            "parts = [b'x' * 65536] * 1024\n"
            "b'\\n'.join(parts)\n"  # the first batch faults its pages in either way
            "f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt\n"
            "for _ in range(4): b'\\n'.join(parts)\n"
            "print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0)\n")
    faults = {how: int(subprocess.run([sys.executable, "-c", code, how], capture_output=True, text=True, check=True,
                                      cwd=str(__import__("pathlib").Path(__file__).parents[1])).stdout)
              for how in ("keep", "default")}
    assert faults["default"] > 4 * 16_000 and faults["keep"] < 2_000, faults


def test_keep_freed_memory_refuses_a_size_no_c_int_holds():
    """mallopt takes a C int: 2**31 would wrap to a negative threshold (a break-it pass), so it is refused."""
    from ingest.allocator import keep_freed_memory

    for bad in (0, -1, 2**31):
        with pytest.raises(ValueError, match="keep_bytes must be 1 to 2\\*\\*31 - 1"):
            keep_freed_memory(bad)
