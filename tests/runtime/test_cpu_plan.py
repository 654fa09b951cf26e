"""The daemon's CPU placement from `cpu:` and the topology (fake sysfs trees)."""

from __future__ import annotations

import os
from pathlib import Path

from edgetts.runtime.cpu_plan import plan_cpu
from edgetts.runtime.settings import CpuSettings

SYSFS = Path(__file__).resolve().parents[1] / "data" / "sysfs"
EIGHT = range(8)


def test_rk3588_auto_pins_inference_to_the_big_cores() -> None:
    plan = plan_cpu(CpuSettings(), SYSFS / "rk3588", allowed=EIGHT)
    assert (plan.cores, plan.threads, plan.problem) == ((4, 5, 6, 7), 4, None)


def test_equal_cores_auto_leaves_the_scheduler_free() -> None:
    plan = plan_cpu(CpuSettings(), SYSFS / "pi4", allowed=range(4))
    assert (plan.cores, plan.threads) == (None, 4)


def test_an_audio_core_is_kept_out_of_inference() -> None:
    plan = plan_cpu(CpuSettings(audio_core=3), SYSFS / "pi5", allowed=range(4))
    assert (plan.cores, plan.threads) == ((0, 1, 2), 3)


def test_an_explicit_list_is_pinned() -> None:
    plan = plan_cpu(CpuSettings(inference_cores=(2, 3)), SYSFS / "pi4", allowed=range(4))
    assert (plan.cores, plan.threads) == ((2, 3), 2)


def test_cores_the_machine_lacks_degrade_to_unpinned() -> None:
    plan = plan_cpu(CpuSettings(inference_cores=(9,)), SYSFS / "pi4", allowed=range(4))
    assert plan.cores is None and plan.threads == 4
    assert plan.problem is not None and "cpu.inference_cores" in plan.problem


def test_apply_pins_the_calling_thread_only() -> None:
    import threading

    before = os.sched_getaffinity(0)
    plan = plan_cpu(CpuSettings(inference_cores=(1,)), "/sys")
    seen: list[tuple[str | None, set[int]]] = []

    def worker() -> None:
        problem = plan.apply_to_this_thread()
        seen.append((problem, os.sched_getaffinity(0)))

    t = threading.Thread(target=worker)
    t.start()
    t.join()
    assert seen == [(None, {1})]
    assert os.sched_getaffinity(0) == before
