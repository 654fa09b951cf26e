"""Where inference runs: the daemon's decision from `cpu:` and the machine's topology.

Made once, at start-up, on the main thread: a reload keeps it (voices loaded
by a reload get the same cores and threads), so a change of ``cpu:`` takes
effect after a restart.  The synthesis thread applies it to itself
(:meth:`CpuPlan.apply_to_this_thread`), and the voices' onnxruntime sessions
get ``cores``/``threads`` so their worker threads are pinned where the caller
is not (docs/edge-runtime.md).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from edgetts.runtime.affinity import pin_current_thread, plan_pinning
from edgetts.runtime.numa import bind_thread_to_node
from edgetts.runtime.settings import CpuSettings
from edgetts.runtime.topology import default_threads, detect, resolve_cores

_LOGGER = logging.getLogger(__name__)


@dataclass(frozen=True)
class CpuPlan:
    """Inference cores and thread count, and what could not be done."""

    cores: tuple[int, ...] | None
    """CPUs inference is pinned to; None = not pinned (the scheduler decides)."""
    threads: int
    """Default intra-op threads of a voice whose `threads` is not set."""
    numa_node: int | None = None
    problem: str | None = None
    """Why the configured placement is not in force (shown as degraded `cpu`)."""

    def apply_to_this_thread(self) -> str | None:
        """Bind the calling (synthesis) thread to the NUMA node and the caller's core.

        Returns a problem to report, or None.
        """
        problems: list[str] = []
        numa = bind_thread_to_node(self.numa_node)
        if numa.error:
            problems.append(numa.reason)
        if self.cores is not None:
            caller = plan_pinning(self.cores, self.threads).caller_cores
            if not pin_current_thread(caller):
                problems.append(f"cannot pin the synthesis thread to CPUs {list(caller)}")
        return "; ".join(problems) or None


def plan_cpu(settings: CpuSettings, sysfs: Path | str = "/sys", allowed: Iterable[int] | None = None) -> CpuPlan:
    """The placement `settings` asks for on this machine.

    `auto` pins only where it matters: on a big.LITTLE board (the big cores),
    or when an audio core or a NUMA node is set; on a board of equal cores the
    scheduler keeps its freedom and only the thread count follows the topology.
    A placement the machine cannot honour is reported, and inference runs unpinned.
    """
    topo = detect(sysfs, allowed)
    try:
        cores = resolve_cores(
            settings.inference_cores, topo, audio_core=settings.audio_core, numa_node=settings.numa_node
        )
    except ValueError as exc:
        _LOGGER.error("%s; inference runs unpinned", exc)
        return CpuPlan(None, default_threads(topo.cpus), settings.numa_node, f"{exc}; running unpinned")
    pin = (
        settings.inference_cores != "auto"
        or topo.is_heterogeneous
        or settings.audio_core is not None
        or settings.numa_node is not None
    )
    return CpuPlan(cores if pin else None, default_threads(cores), settings.numa_node)
