"""A slow board on this machine: a process under a cgroup v1 CPU quota (issue 14).

Writing a pid to a group's ``cgroup.procs`` moves the whole process, threads
included (``tasks`` would move one thread).  A short period (10 ms) makes it
behave like a slow core rather than stop-and-go.  The group is always
removed on exit, the process moved back to the root group first.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

CPU_ROOT = Path("/sys/fs/cgroup/cpu")
PERIOD_US = 10000
_SEQ = itertools.count()


class CpuQuota:
    """One cgroup v1 cpu group holding one process."""

    def __init__(self, path: Path, pid: int) -> None:
        self.path, self.pid = path, pid

    def set(self, quota_us: int) -> None:
        """CPU microseconds per 10 ms period the process may use; -1 = no limit."""
        (self.path / "cpu.cfs_quota_us").write_text(f"{quota_us}\n")

    def throttled_s(self) -> float:
        """Seconds the group spent throttled so far (cpu.stat)."""
        stat = dict(line.split() for line in (self.path / "cpu.stat").read_text().splitlines())
        return int(stat.get("throttled_time", "0")) / 1e9


def usable() -> bool:
    return CPU_ROOT.is_dir() and os.access(CPU_ROOT, os.W_OK) and (CPU_ROOT / "cgroup.procs").exists()


@contextmanager
def cpu_quota(pid: int, quota_us: int) -> Iterator[CpuQuota]:
    """``pid`` under a quota of ``quota_us`` per :data:`PERIOD_US`; skips where no cgroup v1 cpu is writable."""
    if not usable():
        pytest.skip("needs a writable cgroup v1 cpu controller at /sys/fs/cgroup/cpu (root)")
    path = CPU_ROOT / f"edgetts-degrade-test-{os.getpid()}-{next(_SEQ)}"
    path.mkdir()
    try:
        (path / "cpu.cfs_period_us").write_text(f"{PERIOD_US}\n")
        group = CpuQuota(path, pid)
        group.set(quota_us)
        (path / "cgroup.procs").write_text(f"{pid}\n")
        yield group
    finally:
        _empty(path)
        path.rmdir()


def _empty(path: Path) -> None:
    """Move every process still in the group back to the root group (a group must be empty to go)."""
    for line in (path / "cgroup.procs").read_text().split():
        try:
            (CPU_ROOT / "cgroup.procs").write_text(f"{line}\n")
        except ProcessLookupError:
            pass  # it ended meanwhile
