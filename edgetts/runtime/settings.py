"""Config sections of the edge runtime: ``cpu``, ``keepalive``, ``memory``.

To be added to :class:`edgetts.config.Config` as ``cpu``, ``keepalive`` and
``memory`` (docs/edge-runtime.md, "How the daemon wires them").  ``validate()`` raises
:class:`RuntimeConfigError` with the key path below the section, like
``edgetts.config.errors.FieldError``; the loader prefixes the section name.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


class RuntimeConfigError(ValueError):
    """A bad value at ``path`` (below the section), e.g. ``("audio_core",)``."""

    def __init__(self, path: tuple[str, ...], problem: str) -> None:
        super().__init__(f"{'/'.join(path)}: {problem}")
        self.path = path
        self.problem = problem


_MAX_CPU = 1023  # CONFIG_NR_CPUS upper range on arm64/x86 distro kernels


@dataclass(frozen=True)
class CpuSettings:
    """Where inference and audio run."""

    inference_cores: tuple[int, ...] | Literal["big", "auto"] = "auto"
    """CPUs (0-based ids) for inference: a list, `big` (the fastest cluster), or `auto`
    (the fastest cluster without audio_core, on numa_node when set)."""

    audio_core: int | None = None
    """CPU (0-based id) the audio thread is pinned to; None = not pinned."""

    numa_node: int | None = None
    """NUMA node whose CPUs and memory inference uses; None = no binding (a no-op with one node)."""

    realtime_audio: bool = False
    """Run the audio thread SCHED_FIFO where permitted (needs CAP_SYS_NICE)."""

    def validate(self) -> None:
        cores = self.inference_cores
        if isinstance(cores, str):
            if cores not in ("big", "auto"):
                raise RuntimeConfigError(
                    ("inference_cores",), f"expected a list of CPUs, 'big' or 'auto', got {cores!r}"
                )
        else:
            if not cores:
                raise RuntimeConfigError(("inference_cores",), "an empty list; give CPUs, 'big' or 'auto'")
            for i, cpu in enumerate(cores):
                if isinstance(cpu, bool) or not isinstance(cpu, int) or not 0 <= cpu <= _MAX_CPU:
                    raise RuntimeConfigError(("inference_cores", str(i)), f"{cpu!r} is not a CPU id (0-{_MAX_CPU})")
            if len(set(cores)) != len(cores):
                raise RuntimeConfigError(("inference_cores",), "a CPU is listed twice")
        if self.audio_core is not None and not 0 <= self.audio_core <= _MAX_CPU:
            raise RuntimeConfigError(("audio_core",), f"{self.audio_core} is not a CPU id (0-{_MAX_CPU})")
        if self.numa_node is not None and not 0 <= self.numa_node <= 1023:
            raise RuntimeConfigError(("numa_node",), f"{self.numa_node} is not a NUMA node id")


@dataclass(frozen=True)
class KeepaliveSettings:
    """Dummy inference while idle, so a quiet board answers as fast as a busy one."""

    interval_s: float = 30.0
    """Seconds of idleness between keepalive inferences; 0 = off."""

    def validate(self) -> None:
        if self.interval_s != 0 and not 1.0 <= self.interval_s <= 86400:
            raise RuntimeConfigError(("interval_s",), "must be 0 (off) or 1-86400 seconds")


@dataclass(frozen=True)
class MemorySettings:
    """Voice weights in RAM."""

    lock: bool = True
    """mlock the voice weights (needs LimitMEMLOCK=infinity or CAP_IPC_LOCK; degraded, not fatal, without)."""

    def validate(self) -> None:
        if not isinstance(self.lock, bool):
            raise RuntimeConfigError(("lock",), f"expected true or false, got {self.lock!r}")
