"""tools/slowboard.py: a process under a CPU quota runs slower, and the group is gone afterwards."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tools import slowboard
from tools.slowboard import CpuQuota, period_for, search_quota

# A fixed amount of pure-Python work, timed by the process itself after the parent says "go".
LOOP = """
import sys, time
sys.stdin.readline()
t0 = time.perf_counter()
x = 0
for i in range(1_500_000):
    x += i * i
print(time.perf_counter() - t0, flush=True)
sys.stdin.readline()
"""


def _need_cgroups() -> None:
    try:
        slowboard.cgroup_version()
    except OSError as exc:
        pytest.skip(f"no cgroup cpu controller here: {exc}")
    if os.geteuid() != 0:
        pytest.skip("moving processes between cgroups needs root")


def _cgroup_of(pid: int) -> str:
    lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
    return next(line for line in lines if ":cpu:" in line or ":cpu," in line or line.startswith("0::"))


def _timed_loop(quota: CpuQuota | None) -> float:
    proc = subprocess.Popen([sys.executable, "-c", LOOP], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert proc.stdin is not None and proc.stdout is not None
    try:
        if quota is not None:
            quota.add(proc.pid)
            assert proc.pid in quota.pids()
        proc.stdin.write("go\n")
        proc.stdin.flush()
        seconds = float(proc.stdout.readline())
        proc.stdin.write("end\n")
        proc.stdin.flush()
        proc.wait(30)
        return seconds
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)


def test_a_process_in_a_tenth_of_a_cpu_runs_several_times_slower_and_the_group_goes() -> None:
    _need_cgroups()
    outside = min(_timed_loop(None) for _ in range(2))
    with CpuQuota(0.1) as quota:
        path = quota.path
        assert path is not None and path.is_dir()
        inside = _timed_loop(quota)
    # 0.1 CPU is 10x slower in theory; wide bounds: this checks the mechanism, not any speed.
    assert 3.0 < inside / outside < 40.0, (inside, outside)
    assert not path.exists()


def test_an_interrupted_group_moves_its_process_back_and_is_removed() -> None:
    _need_cgroups()
    proc = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        before = _cgroup_of(proc.pid)
        with pytest.raises(KeyboardInterrupt), CpuQuota(0.2) as quota:
            quota.add(proc.pid)
            path = quota.path
            assert path is not None
            assert path.name in _cgroup_of(proc.pid)
            quota.set(0.05)  # under 0.1 CPU the period grows: the kernel takes no quota under 1 ms
            assert (path / "cpu.cfs_period_us").read_text().strip() == str(period_for(0.05))
            raise KeyboardInterrupt
        assert not path.exists()
        assert proc.poll() is None  # still running, back where it was
        assert _cgroup_of(proc.pid) == before
    finally:
        proc.kill()
        proc.wait(10)


def test_period_is_ten_ms_and_grows_only_where_the_quota_would_be_under_a_millisecond() -> None:
    assert period_for(0.5) == 10_000
    assert period_for(0.1) == 10_000
    assert period_for(0.066) == 15_152
    with pytest.raises(ValueError):
        period_for(0)


def test_quota_search_corrects_by_measured_over_target() -> None:
    # RTF as 1/quota with an offset (the real curve is not exactly 1/q): it still converges.
    def measure(q: float) -> float:
        return 0.09 / q + 0.05

    quota, rtf, steps = search_quota(measure, 0.8, 0.1, tolerance=0.03, max_steps=5)
    assert abs(rtf / 0.8 - 1) <= 0.03
    assert abs(measure(quota) - rtf) < 1e-12
    assert 2 <= len(steps) <= 5
