"""The CPU topology this process runs on, read from sysfs.

What core pinning needs to know: which CPUs are online, how fast each is
(``cpu_capacity``, else ``cpufreq/cpuinfo_max_freq``), which are the "big"
ones (on an RK3588 the Cortex-A76 cores 4-7, capacity 1024, against the A55s'
~530), and which NUMA node holds which CPUs.  The sysfs root is a parameter so
tests read the fake trees in ``tests/data/sysfs/``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

SYSFS = Path("/sys")

CoreSpec = Sequence[int] | Literal["big", "auto"]


def parse_cpulist(text: str) -> tuple[int, ...]:
    """``"0-3,6,8-9"`` -> ``(0, 1, 2, 3, 6, 8, 9)``; empty text -> ``()``."""
    cpus: set[int] = set()
    for part in text.strip().split(","):
        part = part.strip()
        if not part:
            continue
        if "-" in part:
            lo, hi = part.split("-", 1)
            cpus.update(range(int(lo), int(hi) + 1))
        else:
            cpus.add(int(part))
    return tuple(sorted(cpus))


def format_cpulist(cpus: Iterable[int]) -> str:
    """``(0, 1, 2, 5)`` -> ``"0-2,5"``."""
    ordered = sorted(set(cpus))
    runs: list[str] = []
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        runs.append(str(ordered[i]) if i == j else f"{ordered[i]}-{ordered[j]}")
        i = j + 1
    return ",".join(runs)


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None


def _read_int(path: Path) -> int | None:
    text = _read(path)
    try:
        return int(text) if text else None
    except ValueError:
        return None


@dataclass(frozen=True)
class Topology:
    """CPUs, their speed, clusters and NUMA nodes."""

    cpus: tuple[int, ...]
    """Online CPUs this process may use (sysfs ``online`` ∩ the affinity mask)."""

    capacity: dict[int, int]
    """CPU -> relative speed: ``cpu_capacity`` (1024 = fastest) or max frequency in kHz; empty if unknown."""

    clusters: tuple[tuple[int, ...], ...]
    """CPUs grouped by near-equal capacity (within :data:`SAME_CLASS`), slowest group first."""

    nodes: dict[int, tuple[int, ...]]
    """NUMA node -> its CPUs (only the CPUs in :attr:`cpus`); ``{0: cpus}`` without NUMA info."""

    @property
    def big(self) -> tuple[int, ...]:
        """The fastest CPUs: the last cluster; every CPU when all are equal or speed is unknown."""
        return self.clusters[-1] if self.clusters else self.cpus

    @property
    def is_heterogeneous(self) -> bool:
        """True on big.LITTLE (more than one capacity class)."""
        return len(self.clusters) > 1

    def node_of(self, cpu: int) -> int | None:
        for node, cpus in self.nodes.items():
            if cpu in cpus:
                return node
        return None


SAME_CLASS = 0.10
"""CPUs whose speeds differ by less than this fraction are one class.  An RK3588's two A76
clusters are binned separately (one 2352 MHz, the other 2304 MHz: ``cpu_capacity`` 1024 and
1003, the kernel scales it by the maximum frequency); they are all "big", the A55s (~40 %) not."""


def _group_by_speed(cpus: Sequence[int], capacity: dict[int, int]) -> tuple[tuple[int, ...], ...]:
    """``cpus`` in classes of near-equal capacity, slowest class first (one class if speed is unknown)."""
    classes: list[list[int]] = []
    floor = 0
    for cpu in sorted(cpus, key=lambda c: (capacity.get(c, 0), c)):
        speed = capacity.get(cpu, 0)
        if not classes or speed > floor * (1 + SAME_CLASS):
            classes.append([])
            floor = speed
        classes[-1].append(cpu)
    return tuple(tuple(sorted(group)) for group in classes)


def detect(root: str | os.PathLike[str] = SYSFS, allowed: Iterable[int] | None = None) -> Topology:
    """Read the topology under ``root`` (``/sys``).

    ``allowed``: CPUs this process may run on; default ``os.sched_getaffinity(0)``
    for the real ``/sys``, every online CPU for any other root (a fake tree).
    """
    root = Path(root)
    cpu_dir = root / "devices" / "system" / "cpu"
    online_text = _read(cpu_dir / "online")
    if online_text:
        online = parse_cpulist(online_text)
    else:
        found = [int(p.name[3:]) for p in cpu_dir.glob("cpu[0-9]*") if p.name[3:].isdigit()]
        online = tuple(sorted(found)) or tuple(sorted(os.sched_getaffinity(0)))
    if allowed is None and root == SYSFS:
        allowed = os.sched_getaffinity(0)
    cpus = tuple(c for c in online if allowed is None or c in set(allowed)) or online

    capacity: dict[int, int] = {}
    for cpu in cpus:
        value = _read_int(cpu_dir / f"cpu{cpu}" / "cpu_capacity")
        if value is None:
            value = _read_int(cpu_dir / f"cpu{cpu}" / "cpufreq" / "cpuinfo_max_freq")
        if value is not None:
            capacity[cpu] = value
    if len(capacity) != len(cpus):
        capacity = {}  # partial information would misclassify the unknown CPUs
    clusters = _group_by_speed(cpus, capacity)

    nodes: dict[int, tuple[int, ...]] = {}
    node_root = root / "devices" / "system" / "node"
    for path in sorted(node_root.glob("node[0-9]*")):
        if not path.name[4:].isdigit():
            continue
        listed = _read(path / "cpulist")
        if listed is None:
            continue
        mine = tuple(c for c in parse_cpulist(listed) if c in cpus)
        nodes[int(path.name[4:])] = mine
    if not nodes:
        nodes = {0: cpus}
    return Topology(cpus=cpus, capacity=capacity, clusters=clusters, nodes=nodes)


def resolve_cores(
    spec: CoreSpec,
    topo: Topology,
    *,
    audio_core: int | None = None,
    numa_node: int | None = None,
) -> tuple[int, ...]:
    """The CPUs inference runs on, for ``cpu.inference_cores``.

    * a list: exactly those CPUs (``ValueError`` naming any that is not usable);
    * ``"big"``: the fastest cluster (RK3588: 4-7; every CPU on a Pi or x86);
    * ``"auto"``: the fastest cluster without ``audio_core`` (kept when it is
      the only CPU left), limited to ``numa_node``'s CPUs when that is set and
      they overlap.
    """
    if isinstance(spec, str):
        if spec not in ("big", "auto"):
            raise ValueError(f"cpu.inference_cores: expected a list of CPUs, 'big' or 'auto', got {spec!r}")
        cores = topo.big
        if spec == "auto":
            if numa_node is not None:
                on_node = tuple(c for c in cores if c in topo.nodes.get(numa_node, ()))
                if not on_node:  # the node has no big core: all its CPUs then
                    on_node = topo.nodes.get(numa_node, ())
                cores = on_node or cores
            without_audio = tuple(c for c in cores if c != audio_core)
            cores = without_audio or cores
        return tuple(sorted(cores))
    cores = tuple(sorted(set(int(c) for c in spec)))
    if not cores:
        raise ValueError("cpu.inference_cores: an empty list; give CPUs, 'big' or 'auto'")
    bad = [c for c in cores if c not in topo.cpus]
    if bad:
        raise ValueError(
            f"cpu.inference_cores: CPU {format_cpulist(bad)} is not usable here "
            f"(online and allowed: {format_cpulist(topo.cpus)})"
        )
    return cores


def default_threads(cores: Sequence[int]) -> int:
    """Intra-op threads for inference on ``cores``: one per core (at least 1).

    ``cores`` comes from :func:`resolve_cores`, which already leaves out the
    audio core and the LITTLE cores, so on an RK3588 with the audio thread on
    core 0 this is 4, on a Pi 4/5 with ``audio_core: 3`` it is 3.
    """
    return max(1, len(cores))
