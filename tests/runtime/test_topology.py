"""CPU topology from fake sysfs trees (tests/data/sysfs/): the right cores and thread counts."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from edgetts.runtime.topology import default_threads, detect, format_cpulist, parse_cpulist, resolve_cores

SYSFS = Path(__file__).resolve().parents[1] / "data" / "sysfs"


def test_cpulist_round_trip() -> None:
    assert parse_cpulist("0-3,6,8-9\n") == (0, 1, 2, 3, 6, 8, 9)
    assert parse_cpulist("") == ()
    assert format_cpulist([5, 0, 1, 2, 9]) == "0-2,5,9"


def test_rk3588_big_cores_are_the_a76() -> None:
    topo = detect(SYSFS / "rk3588")
    assert topo.cpus == tuple(range(8))
    assert topo.is_heterogeneous
    assert topo.clusters == ((0, 1, 2, 3), (4, 5, 6, 7))
    assert topo.big == (4, 5, 6, 7)
    assert resolve_cores("big", topo) == (4, 5, 6, 7)
    assert resolve_cores("auto", topo) == (4, 5, 6, 7)
    assert default_threads(resolve_cores("auto", topo)) == 4
    # the audio thread on a LITTLE core does not cost a big one ...
    assert resolve_cores("auto", topo, audio_core=0) == (4, 5, 6, 7)
    # ... on a big core it does
    cores = resolve_cores("auto", topo, audio_core=7)
    assert cores == (4, 5, 6) and default_threads(cores) == 3
    assert resolve_cores("big", topo, audio_core=7) == (4, 5, 6, 7)  # "big" means exactly those


def test_rk3588_from_cpufreq_only() -> None:
    topo = detect(SYSFS / "rk3588-freqonly")
    assert topo.big == (4, 5, 6, 7)
    assert topo.capacity[0] == 1800000


@pytest.mark.parametrize("source", ["cpu_capacity", "cpufreq"])
def test_rk3588_binned_a76_clusters_are_all_big(source: str, tmp_path: Path) -> None:
    """Issue 15: an RK3588's two A76 clusters binned apart (2352 and 2304 MHz, capacity 1024 and
    1003) are one "big" class of four cores, not two clusters of two; the A55s stay LITTLE."""
    import shutil

    root = tmp_path / "sys"
    shutil.copytree(SYSFS / "rk3588-binned", root)
    if source == "cpufreq":
        for path in root.glob("devices/system/cpu/cpu*/cpu_capacity"):
            path.unlink()
    topo = detect(root)
    assert topo.clusters == ((0, 1, 2, 3), (4, 5, 6, 7))
    assert topo.big == (4, 5, 6, 7)
    assert topo.capacity[6] == (1003 if source == "cpu_capacity" else 2304000)  # raw values kept
    assert default_threads(resolve_cores("auto", topo, audio_core=0)) == 4


def test_speed_classes_split_only_on_a_real_gap(tmp_path: Path) -> None:
    cpu = tmp_path / "devices" / "system" / "cpu"
    for n, capacity in enumerate([1024, 940, 1024, 600]):  # 8 % apart: one class; 41 % slower: another
        (cpu / f"cpu{n}").mkdir(parents=True)
        (cpu / f"cpu{n}" / "cpu_capacity").write_text(f"{capacity}\n")
    (cpu / "online").write_text("0-3\n")
    topo = detect(tmp_path)
    assert topo.clusters == ((3,), (0, 1, 2))
    assert topo.big == (0, 1, 2)


@pytest.mark.parametrize("board", ["pi4", "pi5"])
def test_raspberry_pi_all_cores_equal(board: str) -> None:
    topo = detect(SYSFS / board)
    assert not topo.is_heterogeneous
    assert topo.big == (0, 1, 2, 3)
    assert default_threads(resolve_cores("auto", topo)) == 4
    cores = resolve_cores("auto", topo, audio_core=3)
    assert cores == (0, 1, 2) and default_threads(cores) == 3


def test_x86_two_numa_nodes() -> None:
    topo = detect(SYSFS / "x86-numa2")
    assert topo.nodes == {0: (0, 1, 2, 3), 1: (4, 5, 6, 7)}
    assert topo.node_of(5) == 1
    assert resolve_cores("auto", topo) == tuple(range(8))
    assert resolve_cores("auto", topo, numa_node=1) == (4, 5, 6, 7)
    assert resolve_cores("auto", topo, numa_node=1, audio_core=4) == (5, 6, 7)


def test_explicit_list_and_errors() -> None:
    topo = detect(SYSFS / "rk3588")
    assert resolve_cores([6, 4, 6], topo) == (4, 6)
    with pytest.raises(ValueError, match=r"cpu.inference_cores: CPU 8-9 is not usable"):
        resolve_cores([4, 8, 9], topo)
    with pytest.raises(ValueError, match="cpu.inference_cores"):
        resolve_cores([], topo)
    with pytest.raises(ValueError, match="cpu.inference_cores"):
        resolve_cores("fast", topo)  # type: ignore[arg-type]


def test_allowed_mask_limits_cpus(tmp_path: Path) -> None:
    topo = detect(SYSFS / "rk3588", allowed={0, 1, 4, 5})
    assert topo.cpus == (0, 1, 4, 5)
    assert topo.big == (4, 5)


def test_missing_files_degrade(tmp_path: Path) -> None:
    """No online file, a CPU without capacity: every CPU is "big", one node."""
    cpu = tmp_path / "devices" / "system" / "cpu"
    for n in range(3):
        (cpu / f"cpu{n}").mkdir(parents=True)
    (cpu / "cpu0" / "cpu_capacity").write_text("512\n")  # partial: ignored
    topo = detect(tmp_path)
    assert topo.cpus == (0, 1, 2)
    assert topo.big == (0, 1, 2)
    assert topo.nodes == {0: (0, 1, 2)}


def test_this_machine() -> None:
    topo = detect()
    assert set(topo.cpus) <= os.sched_getaffinity(0)
    assert resolve_cores("auto", topo)
