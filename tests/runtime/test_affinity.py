"""Core pinning: the affinities string, and where onnxruntime's threads really run."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from edgetts.runtime.affinity import (
    AFFINITIES_KEY,
    apply_to_session_options,
    intra_op_affinities,
    pin_audio_thread,
    pin_current_thread,
    plan_pinning,
    thread_cores,
)
from edgetts.voice.onnx_session import RuntimeOptions, session_options


def test_affinities_string() -> None:
    assert intra_op_affinities((4, 5, 6, 7), 4) == "6;7;8"  # 1-based, threads-1 entries
    assert intra_op_affinities((1,), 2) == "2"
    assert intra_op_affinities((0, 1), 3) == "2;1"  # wraps: more threads than cores
    assert intra_op_affinities((2, 3), 1) is None  # no workers: no entry
    with pytest.raises(ValueError):
        intra_op_affinities((), 2)
    with pytest.raises(ValueError):
        intra_op_affinities((0,), 0)


def test_plan() -> None:
    plan = plan_pinning((7, 4, 5, 6))
    assert plan.threads == 4 and plan.caller_cores == (4,) and plan.affinities == "6;7;8"
    single = plan_pinning((3,), 1)
    assert single.caller_cores == (3,) and single.affinities is None


class _FakeOptions:
    def __init__(self) -> None:
        self.intra_op_num_threads = 0
        self.entries: dict[str, str] = {}

    def add_session_config_entry(self, key: str, value: str) -> None:
        self.entries[key] = value


def test_apply_to_session_options() -> None:
    so = _FakeOptions()
    plan = apply_to_session_options(so, (4, 5, 6), 3)
    assert so.intra_op_num_threads == 3 and so.entries == {AFFINITIES_KEY: "6;7"}
    assert plan.caller_cores == (4,)
    so1 = _FakeOptions()
    apply_to_session_options(so1, (2,), 1)
    assert so1.intra_op_num_threads == 1 and so1.entries == {}


def test_pin_is_per_thread() -> None:
    before = thread_cores()
    seen: list[tuple[int, ...]] = []

    def worker() -> None:
        assert pin_current_thread((min(before),))
        seen.append(thread_cores())

    t = threading.Thread(target=worker)
    t.start()
    t.join()
    assert seen == [(min(before),)]
    assert thread_cores() == before
    assert not pin_current_thread((4096,))  # refused, logged, no exception


def test_audio_thread_realtime_as_root() -> None:
    out: list = []

    def audio() -> None:
        out.append(pin_audio_thread(min(os.sched_getaffinity(0)), realtime=True))
        out.append(os.sched_getscheduler(0))

    t = threading.Thread(target=audio)
    t.start()
    t.join()
    result, policy = out
    assert result.pinned
    if os.geteuid() == 0:  # root here has CAP_SYS_NICE
        assert result.realtime and policy == os.SCHED_FIFO and result.problem is None
    else:
        assert not result.realtime and "CAP_SYS_NICE" in (result.problem or "")


def _tasks() -> dict[int, str]:
    out = {}
    for task in Path("/proc/self/task").iterdir():
        try:
            for line in (task / "status").read_text().splitlines():
                if line.startswith("Cpus_allowed_list:"):
                    out[int(task.name)] = line.split(":", 1)[1].strip()
        except OSError:
            continue
    return out


def _affinities_during(load: Callable[[], Any], run: Callable[[Any], object]) -> tuple[int, dict[int, str]]:
    """The synthesis thread's id, and every new thread's Cpus_allowed_list while ``run`` keeps
    inferring on that thread: ``load`` builds the model there, as the daemon's synthesis thread does."""
    before = set(_tasks())
    result: dict[str, int] = {}
    ready = threading.Event()
    stop = threading.Event()

    def synthesis_thread() -> None:
        model = load()
        result["tid"] = threading.get_native_id()
        run(model)
        ready.set()
        while not stop.is_set():
            run(model)

    t = threading.Thread(target=synthesis_thread)
    t.start()
    try:
        assert ready.wait(60)
        time.sleep(0.05)
        during = _tasks()
    finally:
        stop.set()
        t.join()
    tid = result["tid"]
    return tid, {k: v for k, v in during.items() if k not in before or k == tid}


_PLACEMENTS = [((1,), 2, "1", "1"), ((0, 1), 2, "1", "0")]


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs CPUs 0 and 1")
@pytest.mark.parametrize(("cores", "threads", "workers", "caller"), _PLACEMENTS)
def test_onnxruntime_workers_run_on_the_configured_cores(cores, threads, workers, caller) -> None:  # type: ignore[no-untyped-def]
    """Read every thread's Cpus_allowed_list while a real inference runs on another thread."""
    import onnxruntime as ort

    from edgetts.voice.catalog import default_voice_path

    ids = np.array([[1, 0] + [20, 0, 25, 0, 35, 0, 50, 0, 3, 0, 61, 0] * 20 + [2]], dtype=np.int64)
    feeds = {
        "input": ids,
        "input_lengths": np.array([ids.shape[1]], np.int64),
        "scales": np.array([0, 1, 0], np.float32),
    }

    def load() -> Any:
        # Through edgetts' one session builder: RuntimeOptions.cores pins the workers.
        so = session_options(RuntimeOptions(threads=threads, cores=cores))
        pin_current_thread(plan_pinning(cores, threads).caller_cores)
        return ort.InferenceSession(str(default_voice_path()), so, providers=["CPUExecutionProvider"])

    tid, during = _affinities_during(load, lambda sess: sess.run(None, feeds))
    new = {k: v for k, v in during.items() if k != tid}
    assert len(new) == threads - 1, during  # onnxruntime's intra-op workers
    assert set(new.values()) == {workers}
    assert during[tid] == caller


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs CPUs 0 and 1")
@pytest.mark.parametrize(("cores", "threads", "workers", "caller"), _PLACEMENTS)
def test_ar_voice_workers_run_on_the_configured_cores(cores, threads, workers, caller, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """cpu.inference_cores reaches an AR voice's LM and decoder as it does a Piper voice (issue 12):
    the voice is loaded by load_voice, as the daemon's voice loader does."""
    from edgetts.voice.catalog import load_voice

    from tools.make_ar_test_voice import make_voice

    manifest = make_voice(tmp_path)

    def load() -> Any:
        pin_current_thread(plan_pinning(cores, threads).caller_cores)  # what CpuPlan does on this thread
        return load_voice(manifest, threads=threads, cores=cores)

    tid, during = _affinities_during(load, lambda voice: list(voice.synthesize("Mind the gap.", seed=1)))
    new = {k: v for k, v in during.items() if k != tid}
    assert len(new) == 2 * (threads - 1), during  # intra-op workers of the LM's and the decoder's sessions
    assert set(new.values()) == {workers}
    assert during[tid] == caller
