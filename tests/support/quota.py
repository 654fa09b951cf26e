"""A slow board for tests: one process under a CPU quota, through tools/slowboard.py's CpuQuota (the one
implementation; benchmarks use it too).

The group holds the whole process, threads included, and is removed on exit even when the test fails.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

from tools.slowboard import V1_ROOT, V2_ROOT, CpuQuota


def unavailable() -> str | None:
    """None when a CPU quota can be set here; else why not (the test then skips, saying so)."""
    if os.geteuid() != 0:
        return "a CPU quota needs root"
    if (V1_ROOT / "cpu.cfs_quota_us").exists():
        return None
    controllers = V2_ROOT / "cgroup.controllers"
    if controllers.exists() and "cpu" in controllers.read_text().split():
        return None
    return "no cgroup cpu controller (v1 /sys/fs/cgroup/cpu or v2 cpu.max)"


@contextmanager
def cpu_quota(pid: int, cpus: float) -> Iterator[CpuQuota]:
    """Process ``pid`` limited to ``cpus`` CPUs while inside (``.set``, ``.unlimit``, ``.throttled_s``)."""
    with CpuQuota(cpus) as quota:
        quota.add(pid)
        yield quota
