"""How every benchmark in tools/ writes its figures: one JSON file per tool that also says which code,
which machine and which command made them, so a figure in docs/benchmarks.md can be traced and rerun.

    write_result("bench_engine", result, args.json)   # args.json defaults to default_path("bench_engine")

The tool's own fields stay as they are (other tools and tests read them); ``tool``, ``commit``,
``command`` and ``machine`` are added at the top.  A tool that already records a ``machine`` keeps its
own keys there: this module's only fill in the ones it lacks.
"""

from __future__ import annotations

import importlib.metadata
import json
import logging
import os
import platform
import shlex
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

_LOGGER = logging.getLogger(__name__)

ROOT = Path(__file__).resolve().parents[1]
RESULTS_DIR = ROOT / "benchmarks" / "results"
ADDED = ("tool", "commit", "command", "machine")
"""The keys this module puts at the top of every result file."""


def default_path(tool: str) -> Path:
    """Where ``tool`` writes its result unless ``--json`` says otherwise: what tools/report.py reads."""
    return RESULTS_DIR / f"{tool}.json"


def commit_info(root: Path = ROOT) -> dict[str, Any]:
    """HEAD of the checkout and whether tracked files differ from it (a figure from uncommitted code
    cannot be reproduced from the sha alone).  None for both outside a git checkout (a tarball)."""

    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return done.stdout.strip() if done.returncode == 0 else None

    sha = git("rev-parse", "HEAD")
    if sha is None:
        return {"sha": None, "dirty": None}
    status = git("status", "--porcelain", "--untracked-files=no")
    return {"sha": sha, "dirty": None if status is None else bool(status)}


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith(("model name", "Model", "Hardware")):  # x86; ARM boards name it one of the others
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _v2_quota(group: Path) -> float | None:
    """The tightest ``cpu.max`` from ``group`` up to the v2 root, in CPUs (None: no limit)."""
    limits = []
    for where in (group, *group.parents):
        try:
            quota, period = (where / "cpu.max").read_text().split()[:2]
        except (OSError, ValueError):
            continue
        if quota != "max":
            limits.append(int(quota) / int(period))
    return min(limits) if limits else None


def _v1_quota(group: Path) -> float | None:
    """The tightest ``cpu.cfs_quota_us`` from ``group`` up to the v1 cpu root, in CPUs (None: no limit)."""
    limits = []
    for where in (group, *group.parents):
        try:
            quota = int((where / "cpu.cfs_quota_us").read_text())
            period = int((where / "cpu.cfs_period_us").read_text())
        except (OSError, ValueError):
            continue
        if quota > 0:
            limits.append(quota / period)
    return min(limits) if limits else None


def cpu_quota() -> float | None:
    """The CFS bandwidth limit on this process in CPUs (a container's or a systemd slice's), None for none:
    on a quota, ``logical_cores`` overstates what the benchmark had."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    limits = []
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if controllers == "":
            limits.append(_v2_quota(Path("/sys/fs/cgroup") / path.lstrip("/")))
        elif "cpu" in controllers.split(","):
            limits.append(_v1_quota(Path("/sys/fs/cgroup/cpu") / path.lstrip("/")))
    found = [limit for limit in limits if limit is not None]
    return min(found) if found else None


def _version(package: str) -> str | None:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def machine_info() -> dict[str, Any]:
    """What the figures depend on besides the code: CPU, its share of it, kernel, and the runtimes."""
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        usable = os.cpu_count()
    return {
        "cpu": _cpu_model(),
        "logical_cores": os.cpu_count(),
        "usable_cores": usable,
        "cpu_quota": cpu_quota(),
        "kernel": platform.release(),
        "arch": platform.machine(),
        "python": platform.python_version(),
        "onnxruntime": _version("onnxruntime"),
        "numpy": _version("numpy"),
        # Written at the end of the run: a shared machine's load says how far to trust a figure.
        "load_avg_at_end": [round(x, 2) for x in os.getloadavg()],
    }


def command_line(tool: str, argv: Sequence[str] | None = None) -> str:
    """The run as one can paste it from the repository root (``argv``: the tool's arguments, default
    ``sys.argv[1:]``; the interpreter is named ``python``, whichever venv's it was)."""
    args = list(sys.argv[1:] if argv is None else argv)
    return shlex.join(["python", "-m", f"tools.{tool}", *args])


def with_provenance(tool: str, result: dict[str, Any], argv: Sequence[str] | None = None) -> dict[str, Any]:
    """``result`` with ``tool``, ``commit``, ``command`` and ``machine`` in front of its own fields."""
    clash = [key for key in ADDED if key in result and key != "machine"]
    if clash:
        raise ValueError(f"{tool}'s result already has {clash}: results.py adds those")
    own_machine = result.get("machine")
    machine = machine_info()
    if isinstance(own_machine, dict):
        machine.update(own_machine)  # the tool's own names and values win: others read them
    rest = {key: value for key, value in result.items() if key != "machine"}
    return {
        "tool": tool,
        "commit": commit_info(),
        "command": command_line(tool, argv),
        "machine": machine,
        **rest,
    }


def write_result(
    tool: str, result: dict[str, Any], path: Path | None = None, argv: Sequence[str] | None = None
) -> Path:
    """Write ``result`` with its provenance to ``path`` (default: benchmarks/results/<tool>.json)."""
    target = default_path(tool) if path is None else path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(with_provenance(tool, result, argv), indent=2) + "\n", encoding="utf-8")
    _LOGGER.info("wrote %s", target)
    return target
