"""tools/bench_board.py end to end on a small budget, and the slow board's calibration."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from support.paths import ROOT
from tools import paced_sink, slowboard

ENGINE_FIELDS = ("rtf_median", "first_audio_median_s", "first_audio_p95_s", "underruns", "gap_ms_total", "cpu_s_total")


def _need_slow_board() -> None:
    missing = paced_sink.available()
    if missing:
        pytest.skip(f"paced sink needs {missing}")
    try:
        slowboard.cgroup_version()
    except OSError as exc:
        pytest.skip(f"no cgroup cpu controller here: {exc}")
    if os.geteuid() != 0:
        pytest.skip("CPU quota groups need root")


def test_the_earliest_start_is_the_first_that_never_waits_for_a_chunk() -> None:
    from tools.board_worker import earliest_start, simulate

    arrivals = [(1.0, 0.5), (1.2, 0.5), (2.5, 1.0), (2.6, 0.2)]
    start = earliest_start(arrivals)
    assert start == pytest.approx(1.5)  # the third chunk comes 1.5 s after the 1 s of audio before it
    assert simulate(arrivals, start) == (0, 0.0)
    underruns, gap = simulate(arrivals, start - 0.01)
    assert underruns == 1 and gap == pytest.approx(0.01)
    assert earliest_start([(0.3, 2.0), (0.4, 1.0)]) == pytest.approx(0.3)  # keeps up: its first chunk


@pytest.mark.slow
@pytest.mark.realtime
def test_bench_board_writes_the_fields_other_tools_read(tmp_path: Path) -> None:
    _need_slow_board()
    out = tmp_path / "board.json"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    bench = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tools.bench_board",
            "--board",
            "pi4-1core",
            "--lines",
            "2",
            "--runs",
            "1",
            "--quota",
            "0.5",
            "--whole",
            "--json",
            str(out),
        ],
        env=env,
        cwd=tmp_path,
    )
    try:
        assert bench.wait(timeout=300) == 0
    finally:
        if bench.poll() is None:
            bench.terminate()  # it cleans up on SIGTERM
            bench.wait(30)
    res = json.loads(out.read_text())
    assert res["piper_rtf_target"] == 0.8
    assert res["quota_cpus"] == 0.5 and res["lines"] == 2 and res["runs"] == 1
    assert res["board"] == "pi4-1core" and res["threads"] == 1
    for engine in ("piper", "edgetts", "edgetts_whole"):
        figures = res[engine]
        for key in ENGINE_FIELDS:
            assert isinstance(figures[key], (int, float)) and math.isfinite(figures[key]), (engine, key)
        # How fast is this machine's business (the tool's output), not a verdict: measured, and consistent.
        assert figures["rtf_median"] > 0, engine
        assert 0.0 < figures["first_audio_median_s"] <= figures["first_audio_p95_s"]
        assert figures["underruns"] >= 0 and figures["gap_ms_total"] >= 0
        assert figures["cpu_s_total"] > 0  # real synthesis ran
    for key in ("rtf_median", "first_audio_median_s", "first_audio_p95_s", "cpu_s_total"):
        assert res["ratio"][key] == pytest.approx(res["edgetts"][key] / res["piper"][key])
    edge = res["edgetts"]
    # The player's start is after the engine's first chunk; the recording saw the audio start too.
    assert edge["first_audio_median_s"] >= edge["engine_first_chunk_median_s"]
    assert edge["earliest_start_median_s"] >= edge["engine_first_chunk_median_s"]
    assert edge["recorded_first_audio_median_s"] is not None
    assert edge["audio_s_total"] == pytest.approx(res["piper"]["audio_s_total"], rel=0.5)
    assert len(res["per_line"]["edgetts"][0]) == 2
    # By default the player's thread runs on a slow core of its own, beside inference's.
    assert res["audio_core"] == "own" and res["audio_quota_cpus"] == 0.5
    assert len(res["worker"][0]["audio_tids"]) == 2  # edgetts and edgetts_whole each have a player
    assert not list(slowboard.V1_ROOT.glob(f"{slowboard.PREFIX}-{bench.pid}-*"))  # its groups are gone


def _check_search(found: dict[str, Any], target: float, threads: int, tolerance: float, max_steps: int) -> None:
    """What calibrate reports is its own search, step by step: the first quota from the unthrottled
    RTF (RTF ~ 1/quota), each next one the last corrected by measured/target, a stop only within
    ``tolerance`` or after ``max_steps``, and the step closest to the target reported."""
    steps = found["steps"]
    assert 1 <= len(steps) <= max_steps
    assert steps[0]["quota_cpus"] == pytest.approx(threads * found["piper_rtf_unthrottled"] / target)
    for before, after in zip(steps, steps[1:]):
        assert abs(before["rtf"] / target - 1.0) > tolerance  # it went on only while outside
        floor = slowboard.MIN_QUOTA_US / slowboard.MAX_PERIOD_US
        assert after["quota_cpus"] == pytest.approx(max(floor, before["quota_cpus"] * before["rtf"] / target))
    if len(steps) < max_steps:
        assert abs(steps[-1]["rtf"] / target - 1.0) <= tolerance
    best = min(steps, key=lambda step: abs(step["rtf"] / target - 1.0))
    assert (found["quota_cpus"], found["piper_rtf"]) == (best["quota_cpus"], best["rtf"])
    assert found["period_us"] == slowboard.period_for(found["quota_cpus"])
    assert found["piper_rtf_target"] == target and found["threads"] == threads


class _Worker:
    """calibrate's worker with given timings: RTF = ``cost`` / quota (a core's CPU cost per second of
    speech, which a quota stretches), times each measurement's disturbance in turn."""

    def __init__(self, cost: float, disturbance: list[float]) -> None:
        self.cost, self.disturbance = cost, list(disturbance)
        self.quotas: list[float] = []

    def __call__(self, quota: float) -> float:
        self.quotas.append(quota)
        return self.cost / min(quota, 1.0) * self.disturbance.pop(0)


@pytest.mark.parametrize(
    ("cost", "disturbance"),
    [
        (0.2, [1.0, 1.0, 1.0]),  # a quiet machine: the first guess is right
        (0.2, [1.0, 1.3, 1.0, 1.0]),  # a busy neighbour during the first throttled run: corrected
        (0.05, [1.2, 0.9, 1.02, 1.0]),  # a fast machine, measured while busy: the guess is low
    ],
)
def test_calibration_corrects_the_quota_by_measured_over_target_from_the_unthrottled_speed(
    cost: float, disturbance: list[float]
) -> None:
    """calibrate's arithmetic on given timings (the real run's is checked by the realtime test below
    and done by tools/slowboard.py, whose speed it is): the same search on the same numbers."""
    target, threads, tolerance, max_steps = 1.0, 1, 0.05, 3
    worker = _Worker(cost, disturbance)
    full = worker(float(threads))
    quota, rtf, steps = slowboard.search_quota(
        worker, target, threads * full / target, tolerance=tolerance, max_steps=max_steps
    )
    found = {
        "piper_rtf_target": target,
        "quota_cpus": quota,
        "piper_rtf": rtf,
        "threads": threads,
        "piper_rtf_unthrottled": full,
        "period_us": slowboard.period_for(quota),
        "steps": steps,
    }
    _check_search(found, target, threads, tolerance, max_steps)
    assert abs(rtf / target - 1.0) <= tolerance  # within 3 steps, whatever the disturbance here
    assert worker.quotas[1:] == [step["quota_cpus"] for step in steps]  # it reports what it measured


@pytest.mark.slow
@pytest.mark.realtime
def test_calibration_reports_the_search_it_ran() -> None:
    """The real calibration on this machine: how close it gets depends on how busy the machine is
    (that figure is tools/slowboard.py's output, not a verdict here); what it reports must be the
    search it ran, step by step, on the RTFs it measured."""
    _need_slow_board()
    # Target RTF 0.5, not the tools' 0.8: each throttled step speaks the calibration lines at about
    # the target's RTF, and what is checked here is the report of the search, not a board's speed.
    found = slowboard.calibrate(0.5, threads=1, tolerance=0.05, max_steps=3)
    _check_search(found, 0.5, 1, 0.05, 3)
    assert all(step["rtf"] > 0 and math.isfinite(step["rtf"]) for step in found["steps"])
