"""Multi-GPU inference servers (vLLM, SGLang, TensorRT-LLM, Triton and NGC images) on their real lines, through the
real pipeline and correlator: which process or rank failed, which lines only report it, which lines are notes."""

from __future__ import annotations

from tests.test_patterns import run


def test_an_ngc_image_on_a_driver_too_old_for_it_is_a_driver_incident(pipeline):
    """triton-inference-server/server#2225: Triton's 20.09 image on a TITAN Xp with driver 440.64 printed the NGC
    start-up check's "compatibility mode is UNAVAILABLE" and cuInit's 804, and gave no event; the maintainers' answer
    to the same banner was a newer driver (NVIDIA/TensorRT-LLM#23). The banner of minor version compatibility is a
    note of a container that runs (triton-inference-server/server#4406): no incident."""
    text = "\n".join([
        "ERROR: This container was built for NVIDIA Driver Release 450.51 or later, but",
        "       version 440.64.00 was detected and compatibility mode is UNAVAILABLE.",
        "",
        "       [[CUDA Driver UNAVAILABLE (cuInit(0) returned 804)]]",
        "",
        "I1105 01:26:08.071329 1 metrics.cc:184] found 1 GPUs supporting NVML metrics",
        "I1105 01:26:08.079242 1 server.cc:120] Initializing Triton Inference Server"])
    (inc,) = run(pipeline, text, host="node21")
    assert (inc["category"], inc["severity"], inc["initiator"]["host"]) == ("driver", "error", "node21")
    assert "release 450.51 or later" in inc["next_action"] and "the host has 440.64.00" in inc["next_action"]
    assert "not at fault" in inc["next_action"]
    text = "\n".join([
        "WARNING: CUDA Minor Version Compatibility mode ENABLED.",
        "  Using driver version 495.29.05 which has support for CUDA 11.5.  This container",
        "  was built with CUDA 11.6 and will be run in Minor Version Compatibility mode."])
    assert run(pipeline, text, host="node22") == []


def test_tensorrt_llms_assertion_on_an_nccl_error_is_the_jobs_host_not_a_host_named_failed(pipeline):
    """NVIDIA/TensorRT-LLM#9263: "[TensorRT-LLM][ERROR] Assertion failed: Failed, NCCL error …" read "failed" as the
    host of the NCCL error: an incident of a host "failed" beside the job's own."""
    text = "\n".join([
        "[2025-11-18 09:33:30] node23:42:982 [0] init.cc:737 NCCL WARN Duplicate GPU detected : rank 0",
        "RuntimeError: [TensorRT-LLM][ERROR] Assertion failed: Failed, NCCL error "
        "../tensorrt_llm/runtime/ncclCommunicator.cpp:90 'invalid usage (run with NCCL_DEBUG=WARN for details)'"])
    incs = run(pipeline, text, host="node23")
    hosts = {inc["initiator"]["host"] for inc in incs} | {d["host"] for inc in incs for d in inc["downstream"]}
    assert hosts == {"node23"}, incs


def test_an_sglang_scheduler_names_its_tp_rank_and_vllms_engine_start_failure_is_a_report(pipeline):
    """sgl-project/sglang#4503: "[… TP1] Scheduler hit an exception" named no rank (the prefix's TP<n> was not
    read). vllm-project/vllm#26898, #25143: "EngineCore failed to start." and the API server's "Engine core
    initialization failed. See root cause above." gave no event; with the worker's pynccl error before them, that
    rank's error is the initiator and they are its reports. vLLM's note that its custom all-reduce is off (no P2P) and its
    NCCL version are no incident (vllm-project/vllm#4770)."""
    text = "[2025-03-17 17:15:55 TP1] Scheduler hit an exception: Traceback (most recent call last):"
    (inc,) = run(pipeline, text, host="node24")
    assert inc["initiator"]["rank"] == 1 and "TP rank 1" in inc["next_action"], inc
    text = "\n".join([
        "(VllmWorker rank=1 pid=305150) ERROR 06-29 19:19:59 [multiproc_executor.py:492] RuntimeError: NCCL error: "
        "unhandled cuda error (run with NCCL_DEBUG=INFO for details)",
        "(EngineCore_DP0 pid=59619) ERROR 06-29 19:19:59 [core.py:708] EngineCore failed to start.",
        "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}"])
    (inc,) = run(pipeline, text, host="node25")
    assert (inc["initiator"]["rank"], inc["initiator"]["kind"]) == (1, "nccl_error"), inc["initiator"]
    assert len(inc["initiator"]["events"]) == 3 and "vllm.engine_core_start_failed ×2" in inc["explanation"], inc
    text = "\n".join([
        "(VllmWorkerProcess pid=3222325) INFO 01-15 13:09:57 pynccl.py:67] vLLM is using nccl==2.21.5",
        "(eager_allreduce pid=3040) WARNING 05-13 08:48:35 custom_all_reduce.py:166] Custom allreduce is disabled "
        "because your platform lacks GPU P2P capability or P2P test failed. To silence this warning, specify "
        "disable_custom_all_reduce=True explicitly."])
    assert run(pipeline, text, host="node26") == []
