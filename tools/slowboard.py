#!/usr/bin/env python3
"""A slow board on this machine: processes under a CPU quota, and a quota calibrated to a board's speed.

:class:`CpuQuota` puts whole processes (every thread) into a new cgroup with a
CFS bandwidth limit: cgroup v1's cpu controller (``cpu.cfs_quota_us`` /
``cpu.cfs_period_us``, mounted at /sys/fs/cgroup/cpu here), or cgroup v2's
``cpu.max`` where that is what the machine has.  The period is short (10 ms) so
a throttled process behaves like a slow core, not like a fast one that stops
for a long time; the kernel takes no quota under 1 ms, so below 0.1 CPU the
period grows just enough (0.066 CPU -> 15.2 ms).  Needs root.

:func:`calibrate` finds the quota at which piper-tts 1.8.0 on the default joe
voice at 1 thread runs at a target real-time factor (0.8 = one Pi 4 core, the
published figure): a worker process in the group speaks a few lines, and since
RTF scales about as 1/quota the quota is corrected by measured/target until
it is within a tolerance.

    python -m tools.slowboard --piper-rtf 0.8            # prints the quota found
    python -m tools.slowboard --cpus 0.1 -- CMD ARGS...  # runs CMD on a 0.1-CPU core

Stdlib only, so other tools and tests import it (``from tools.slowboard import ...``).
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import errno
import json
import math
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

V1_ROOT = Path("/sys/fs/cgroup/cpu")
V2_ROOT = Path("/sys/fs/cgroup")
PERIOD_US = 10_000
"""CFS period: short, so a slowed process gets its share every 10 ms (a slow core)."""
MIN_QUOTA_US = 1_000
"""The kernel refuses a quota (and a period) under 1 ms."""
MAX_PERIOD_US = 1_000_000
PREFIX = "edgetts-slowboard"

ROOT = Path(__file__).resolve().parents[1]
CALIBRATION_LINES = (
    "Attention please: the next train to the city centre will depart from platform two.",
    "The lift on the east side is out of service; please use the stairs or the ramp by the main entrance.",
    "Customers are reminded that the car park closes at ten o'clock tonight.",
)
"""Ordinary announcements (about 15 s of speech together), not corpus lines the benchmarks measure."""


def period_for(cpus: float) -> int:
    """The CFS period (us) for ``cpus``: PERIOD_US, longer only where the quota would be under 1 ms."""
    if cpus <= 0:
        raise ValueError(f"cpus must be > 0, not {cpus}")
    return min(MAX_PERIOD_US, max(PERIOD_US, math.ceil(MIN_QUOTA_US / cpus)))


def _v2_group(pid: int | str) -> Path | None:
    """The cgroup v2 directory of ``pid`` (None when it has no v2 membership line)."""
    for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
        hier, _, rest = line.partition(":")
        controllers, _, path = rest.partition(":")
        if hier == "0" and controllers == "":
            return V2_ROOT / path.lstrip("/")
    return None


def _v1_group(pid: int | str) -> Path:
    """The cgroup v1 cpu-controller directory of ``pid``."""
    for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if "cpu" in controllers.split(","):
            return V1_ROOT / path.lstrip("/")
    return V1_ROOT


def cgroup_version() -> int:
    """1 with cgroup v1's cpu controller mounted, 2 with a v2 hierarchy that has cpu; raises OSError otherwise."""
    if (V1_ROOT / "cpu.cfs_quota_us").is_file():
        return 1
    controllers = V2_ROOT / "cgroup.controllers"
    if controllers.is_file() and "cpu" in controllers.read_text().split():
        return 2
    raise OSError(errno.ENOTSUP, "no cgroup cpu controller (v1 /sys/fs/cgroup/cpu or v2 cpu.max)")


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _remove_stale(parent: Path) -> None:
    """Groups a killed run of this module left behind (their creator is gone, no process in them)."""
    for group in parent.glob(f"{PREFIX}-*"):
        try:
            owner = int(group.name.split("-")[2])
        except (IndexError, ValueError):
            continue
        if owner != os.getpid() and not _pid_alive(owner):
            with contextlib.suppress(OSError):
                if not (group / "cgroup.procs").read_text().strip():
                    group.rmdir()


class CpuQuota:
    """Processes (all their threads) limited to ``cpus`` CPUs together, while the context lasts.

    ``with CpuQuota(0.1) as q: q.add(pid)``; :meth:`set` changes the quota of
    the running group.  On exit (also on an exception or KeyboardInterrupt, and
    at interpreter exit as a last resort) every process still in the group goes
    back to the group it came from and the group is removed.
    """

    _serial = 0

    def __init__(self, cpus: float) -> None:
        self.cpus = float(cpus)
        period_for(self.cpus)  # validates
        self.version = cgroup_version()
        self.path: Path | None = None
        self._origin: dict[int, Path] = {}
        """Where each added pid came from (where it goes back to)."""
        self._home = _v1_group(os.getpid()) if self.version == 1 else (_v2_group(os.getpid()) or V2_ROOT)

    # -- lifetime --------------------------------------------------------------
    def __enter__(self) -> CpuQuota:
        CpuQuota._serial += 1
        if self.version == 1:
            parent = V1_ROOT
        else:
            parent = V2_ROOT  # a child of the root: v2 forbids processes in inner groups with children
            with contextlib.suppress(OSError):
                (parent / "cgroup.subtree_control").write_text("+cpu")
        _remove_stale(parent)
        path = parent / f"{PREFIX}-{os.getpid()}-{CpuQuota._serial}"
        path.mkdir()
        self.path = path
        atexit.register(self.close)
        try:
            self.set(self.cpus)
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Move every process in the group back where it came from and remove the group (idempotent)."""
        path, self.path = self.path, None
        if path is None:
            return
        atexit.unregister(self.close)
        # Retried: a process that forks while being moved, or a task still exiting, keeps it busy briefly.
        for _ in range(50):
            for pid in self._members(path):
                self._move(pid, self._origin.get(pid, self._home))
            try:
                path.rmdir()
                return
            except OSError as exc:
                if exc.errno == errno.ENOENT:
                    return
                if exc.errno != errno.EBUSY:
                    raise
            time.sleep(0.02)
        raise OSError(errno.EBUSY, f"cgroup {path} still has processes")

    # -- use -------------------------------------------------------------------
    def set(self, cpus: float) -> None:
        """Limit the group to ``cpus`` CPUs from now on (period 10 ms, longer under 0.1 CPU)."""
        path = self._require()
        period = period_for(cpus)
        quota = max(MIN_QUOTA_US, round(cpus * period))
        if self.version == 1:
            # Unlimited first: the kernel checks each write against the other value in place.
            (path / "cpu.cfs_quota_us").write_text("-1")
            (path / "cpu.cfs_period_us").write_text(str(period))
            (path / "cpu.cfs_quota_us").write_text(str(quota))
        else:
            (path / "cpu.max").write_text(f"{quota} {period}")
        self.cpus = float(cpus)

    def unlimit(self) -> None:
        """No limit from now on (the board is fast again); :meth:`set` limits it again."""
        path = self._require()
        if self.version == 1:
            (path / "cpu.cfs_quota_us").write_text("-1")
        else:
            (path / "cpu.max").write_text(f"max {PERIOD_US}")

    def add(self, pid: int) -> None:
        """Move process ``pid`` with all its threads (cgroup.procs, not tasks) into the group."""
        path = self._require()
        self._origin.setdefault(pid, _v1_group(pid) if self.version == 1 else (_v2_group(pid) or V2_ROOT))
        (path / "cgroup.procs").write_text(str(pid))

    def add_thread(self, tid: int) -> None:
        """Move one thread (cgroup v1 ``tasks``) into the group; threads it starts later follow it.

        For a second slow core inside one process (the audio thread beside inference).  On
        exit its process goes back whole to where the parent process was.
        """
        path = self._require()
        if self.version != 1:
            raise OSError(errno.ENOTSUP, "moving one thread needs cgroup v1 (v2 threaded groups are not set up)")
        (path / "tasks").write_text(str(tid))

    def pids(self) -> list[int]:
        """The processes in the group now."""
        return self._members(self._require())

    def join_self(self) -> Callable[[], None]:
        """A ``preexec_fn`` for subprocess: the child moves itself in before it execs (runs nothing unslowed)."""
        procs = self._require() / "cgroup.procs"
        return lambda: procs.write_text("0")  # "0": the writing process itself

    def throttled_s(self) -> float:
        """Seconds the group has been held back by its quota (cpu.stat)."""
        stats = dict(line.split(" ", 1) for line in (self._require() / "cpu.stat").read_text().splitlines())
        if "throttled_time" in stats:  # v1: ns
            return int(stats["throttled_time"]) / 1e9
        return int(stats.get("throttled_usec", "0")) / 1e6

    # -- inside ----------------------------------------------------------------
    def _require(self) -> Path:
        if self.path is None:
            raise RuntimeError("CpuQuota is not entered (use it as a context manager)")
        return self.path

    @staticmethod
    def _members(path: Path) -> list[int]:
        try:
            return [int(p) for p in (path / "cgroup.procs").read_text().split()]
        except FileNotFoundError:
            return []

    @staticmethod
    def _move(pid: int, destination: Path) -> None:
        if not destination.is_dir():  # where it came from is gone: the root takes it
            destination = V1_ROOT if destination.is_relative_to(V1_ROOT) else V2_ROOT
        try:
            (destination / "cgroup.procs").write_text(str(pid))
        except OSError as exc:
            if exc.errno != errno.ESRCH:  # exited meanwhile: nothing to move
                raise


# -- calibration -------------------------------------------------------------------
def _worker_main(threads: int) -> int:
    """The calibration worker: loads piper-tts, says `ready`, then answers each `go` with the lines' RTF."""
    from tools.bench_engine import _load_piper

    speak = _load_piper(threads, zero_noise=True)
    for _ in speak("Warm up."):
        pass
    print(json.dumps({"ready": os.getpid()}), flush=True)
    for command in sys.stdin:
        if command.strip() != "go":
            break
        busy = spoken = 0.0
        for line in CALIBRATION_LINES:
            t0 = time.perf_counter()
            spoken += sum(n / rate for n, rate, *_ in speak(line))  # (samples, rate[, when])
            busy += time.perf_counter() - t0
        print(json.dumps({"rtf": busy / spoken}), flush=True)
    return 0


def start_worker(argv: list[str], env: dict[str, str] | None = None) -> tuple[subprocess.Popen[str], dict[str, Any]]:
    """A worker process (``python argv...``: ``-m tools.NAME ...``, found from any cwd as the root goes
    first on its PYTHONPATH) that prints one JSON `ready` line once loaded."""
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    full_env = dict(os.environ, ORT_DISABLE_TELEMETRY="1", PYTHONPATH=path, **(env or {}))
    proc = subprocess.Popen(
        [sys.executable, *argv], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=full_env
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line:
        proc.wait(30)
        raise RuntimeError(f"worker {' '.join(argv[:2])} exited with {proc.returncode} before it was ready")
    return proc, json.loads(line)


def ask(proc: subprocess.Popen[str], command: str) -> dict[str, Any]:
    """Send one command line to a worker and read its one JSON answer."""
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(command + "\n")
    proc.stdin.flush()
    line = proc.stdout.readline()
    if not line:
        raise RuntimeError(f"worker exited ({proc.wait(30)}) without answering {command!r}")
    return dict(json.loads(line))


def stop_worker(proc: subprocess.Popen[str]) -> None:
    """End a worker: close its stdin (it exits), kill it if it does not within 10 s."""
    with contextlib.suppress(OSError):
        if proc.stdin is not None:
            proc.stdin.close()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)


def search_quota(
    measure: Callable[[float], float], target: float, start: float, *, tolerance: float = 0.03, max_steps: int = 5
) -> tuple[float, float, list[dict[str, float]]]:
    """The quota at which ``measure(quota)`` (an RTF) is within ``tolerance`` of ``target``.

    RTF scales about as 1/quota, so each step multiplies the quota by
    measured/target.  Returns (quota, its RTF, every step); the last step is the
    closest tried when ``max_steps`` ran out.
    """
    steps: list[dict[str, float]] = []
    quota = start
    for _ in range(max_steps):
        rtf = measure(quota)
        steps.append({"quota_cpus": quota, "rtf": rtf})
        if abs(rtf / target - 1.0) <= tolerance:
            break
        quota = max(MIN_QUOTA_US / MAX_PERIOD_US, quota * rtf / target)
    best = min(steps, key=lambda s: abs(s["rtf"] / target - 1.0))
    return best["quota_cpus"], best["rtf"], steps


def calibrate(
    target_rtf: float,
    *,
    threads: int = 1,
    tolerance: float = 0.03,
    max_steps: int = 5,
    log: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """The CPU quota at which piper-tts on the joe voice at ``threads`` threads runs at ``target_rtf``.

    One worker process speaks CALIBRATION_LINES; first unthrottled (``threads``
    CPUs of quota), which gives the first guess, then under each corrected quota.
    """
    say = log or (lambda _msg: None)
    proc, _ready = start_worker(["-m", "tools.slowboard", "--worker", "--threads", str(threads)])
    try:
        with CpuQuota(float(threads)) as group:
            group.add(proc.pid)

            def measure(quota: float) -> float:
                group.set(quota)
                rtf = float(ask(proc, "go")["rtf"])
                say(f"quota {quota:.4f} CPU: piper RTF {rtf:.3f}")
                return rtf

            full = measure(float(threads))
            quota, rtf, steps = search_quota(
                measure, target_rtf, threads * full / target_rtf, tolerance=tolerance, max_steps=max_steps
            )
    finally:
        stop_worker(proc)
    return {
        "piper_rtf_target": target_rtf,
        "quota_cpus": quota,
        "piper_rtf": rtf,
        "threads": threads,
        "piper_rtf_unthrottled": full,
        "period_us": period_for(quota),
        "steps": steps,
    }


def _terminate(signum: int, _frame: object) -> None:
    raise SystemExit(128 + signum)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--piper-rtf", type=float, default=0.8, help="target RTF of piper-tts (0.8 = a Pi 4 core)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--cpus", type=float, help="run the command after -- under this quota instead")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("command", nargs="*")
    args = parser.parse_args()
    # SIGTERM (and SIGINT, which a shell's background job ignores) unwinds like an exception, so
    # the quota group, the worker and the sink are cleaned up.
    signal.signal(signal.SIGTERM, _terminate)
    if args.worker:
        return _worker_main(args.threads)
    if args.cpus is not None:
        if not args.command:
            parser.error("--cpus needs a command after --")
        with CpuQuota(args.cpus) as group:
            return subprocess.call(args.command, preexec_fn=group.join_self())
    found = calibrate(args.piper_rtf, threads=args.threads, log=lambda m: print(m, file=sys.stderr))
    print(json.dumps(found, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
