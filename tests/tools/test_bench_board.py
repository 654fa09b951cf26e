"""tools/bench_board.py end to end on a small budget, and the slow board's calibration."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

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
def test_bench_board_writes_the_fields_other_tools_read(tmp_path: Path) -> None:
    _need_slow_board()
    out = tmp_path / "board.json"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    bench = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tools.bench_board",
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
    for engine in ("piper", "edgetts", "edgetts_whole"):
        figures = res[engine]
        for key in ENGINE_FIELDS:
            assert isinstance(figures[key], (int, float)) and math.isfinite(figures[key]), (engine, key)
        # Slowed to half a core: slower than real time would be absurd for 2 ordinary lines, but not 0.
        assert 0.02 < figures["rtf_median"] < 5.0, engine
        assert 0.0 < figures["first_audio_median_s"] <= figures["first_audio_p95_s"]
        assert figures["underruns"] >= 0 and figures["gap_ms_total"] >= 0
        assert figures["cpu_s_total"] > 0.1  # two lines of real synthesis
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


@pytest.mark.slow
def test_calibration_finds_a_quota_near_the_target_rtf() -> None:
    _need_slow_board()
    found = slowboard.calibrate(1.0, threads=1, tolerance=0.05, max_steps=3)
    assert found["piper_rtf_unthrottled"] < 1.0  # this machine is faster than real time at full speed
    assert 0.01 < found["quota_cpus"] < 1.0
    assert 1 <= len(found["steps"]) <= 3
    # Wide: a shared machine moves a measurement; it is the search that is checked, not a speed.
    assert abs(found["piper_rtf"] / 1.0 - 1.0) < 0.25, found
