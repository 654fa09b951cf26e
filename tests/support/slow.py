"""A slow board on this machine: a process under a CPU quota (cgroup v1 cpu controller, v2 cpu.max).

A short period (10 ms) makes the quota behave like a slow core rather than run-and-stop (system
recipe section 8).  Writing a pid to a group's ``cgroup.procs`` moves the whole process, threads
included; on exit it goes back to the root group and the group is removed, even on failure.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from pathlib import Path

V1 = Path("/sys/fs/cgroup/cpu")
V2 = Path("/sys/fs/cgroup")


def unavailable() -> str | None:
    """None when a CPU quota can be set here; else why not."""
    if os.geteuid() != 0:
        return "a CPU quota needs root"
    if (V1 / "cpu.cfs_quota_us").exists():
        return None
    controllers = V2 / "cgroup.controllers"
    if controllers.exists() and "cpu" in controllers.read_text().split():
        return None
    return "no cgroup cpu controller (v1 /sys/fs/cgroup/cpu or v2 cpu.max)"


@contextlib.contextmanager
def cpu_quota(pid: int, quota_us: int, period_us: int = 10000) -> Iterator[Path]:
    """Process ``pid`` limited to ``quota_us`` of CPU time per ``period_us`` while inside."""
    v1 = (V1 / "cpu.cfs_quota_us").exists()
    root = V1 if v1 else V2
    group = root / f"edgetts-test-{os.getpid()}-{time.monotonic_ns()}"
    group.mkdir()
    try:
        if v1:
            (group / "cpu.cfs_period_us").write_text(f"{period_us}\n")
            (group / "cpu.cfs_quota_us").write_text(f"{quota_us}\n")
        else:
            (group / "cpu.max").write_text(f"{quota_us} {period_us}\n")
        (group / "cgroup.procs").write_text(f"{pid}\n")
        yield group
    finally:
        with contextlib.suppress(OSError):  # (gone already if the process ended)
            (root / "cgroup.procs").write_text(f"{pid}\n")
        for _ in range(50):  # rmdir fails while a task is still leaving the group
            try:
                group.rmdir()
                break
            except OSError:
                time.sleep(0.02)
