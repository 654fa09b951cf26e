"""The rolling real-time factor and the degrade/return decision (issue 14), on a fake clock."""

from __future__ import annotations

import numpy as np
import pytest

from edgetts.daemon.pacing.speed import RECOVER, WINDOW_S, Governor, Plan, SpeedSample, Timed, timed_run
from edgetts.engine import AudioChunk


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def run(voice: str, rtf: float, at: float, audio_s: float = 2.0) -> SpeedSample:
    return SpeedSample(voice, rtf * audio_s, audio_s, at)


def test_rtf_is_compute_over_audio_of_the_last_minute() -> None:
    clock = Clock()
    gov = Governor(clock=clock)
    assert gov.rtf() is None
    gov.add(run("default", 0.5, clock.t, audio_s=2.0))  # 1.0 s for 2 s
    gov.add(run("default", 2.0, clock.t, audio_s=1.0))  # 2.0 s for 1 s
    assert gov.rtf() == pytest.approx(3.0 / 3.0)
    clock.t += 30
    gov.add(run("fast", 0.1, clock.t, audio_s=4.0))
    assert gov.rtf() == pytest.approx(3.4 / 7.0)
    assert gov.rtf("default") == pytest.approx(1.0)
    assert gov.rtf("fast") == pytest.approx(0.1)
    clock.t += WINDOW_S - 29  # the first two are older than a minute now
    assert gov.rtf() == pytest.approx(0.1)
    assert gov.rtf("default") is None
    clock.t += 30
    assert gov.rtf() is None


def test_a_run_without_audio_is_not_counted() -> None:
    gov = Governor(clock=Clock())
    gov.add(SpeedSample("default", 1.0, 0.0, 1000.0))
    assert gov.rtf() is None


def test_estimate_scales_other_voices_by_their_cost_at_load() -> None:
    clock = Clock()
    gov = Governor(clock=clock)
    costs = {"default": 0.4, "default/degrade_to": 0.1}  # the variant costs a quarter
    gov.add(run("default/degrade_to", 0.3, clock.t))
    assert gov.estimate("default/degrade_to", costs) == pytest.approx(0.3)
    assert gov.estimate("default", costs) == pytest.approx(1.2)
    gov.add(run("default", 0.6, clock.t))  # its own run counts as it is
    assert gov.estimate("default", costs) == pytest.approx((1.2 * 2 + 0.6 * 2) / 4)
    assert gov.estimate("other", costs) is None  # no cost known: no ratio


def test_switches_above_the_limit_and_returns_below_the_recovery_point() -> None:
    clock = Clock()
    gov = Governor(clock=clock)
    plans = {"default": Plan(0.8, "fast")}
    costs = {"default": 1.0, "fast": 0.25}
    gov.add(run("default", 0.7, clock.t))
    assert gov.update(plans, costs) is None
    assert gov.variant_in_use("default") is None

    clock.t += WINDOW_S + 1
    gov.add(run("default", 1.5, clock.t))
    reason = gov.update(plans, costs)
    assert gov.variant_in_use("default") == "fast"
    assert reason == (
        "voice default: RTF 1.50 over the last minute, above degrade_rtf 0.80: "
        "speaking with degrade_to fast until below 0.68"
    )
    assert gov.why("default", plans["default"]) == reason

    # Between the recovery point and the limit it stays with the variant (no flapping).
    clock.t += WINDOW_S + 1
    gov.add(run("fast", 0.75 / 4, clock.t))  # = 0.75 for the full voice
    assert "RTF 0.75" in (gov.update(plans, costs) or "")
    assert gov.variant_in_use("default") == "fast"

    clock.t += WINDOW_S + 1
    gov.add(run("fast", 0.8 * RECOVER / 4 - 0.01, clock.t))
    assert gov.update(plans, costs) is None
    assert gov.variant_in_use("default") is None
    assert gov.why("default", plans["default"]) is None


def test_without_a_variant_it_only_says_so() -> None:
    clock = Clock()
    gov = Governor(clock=clock)
    gov.add(run("default", 1.2, clock.t))
    reason = gov.update({"default": Plan(0.8, None)}, {})
    assert reason == (
        "voice default: RTF 1.20 over the last minute, above degrade_rtf 0.80; no degrade_to variant to speak instead"
    )
    assert gov.variant_in_use("default") is None


def test_no_runs_is_no_evidence_of_recovery() -> None:
    clock = Clock()
    gov = Governor(clock=clock)
    plans = {"default": Plan(0.8, "fast")}
    gov.add(run("default", 1.5, clock.t))
    gov.update(plans, {})
    clock.t += 10 * WINDOW_S  # idle: the window is empty
    assert gov.update(plans, {}) is not None
    assert gov.variant_in_use("default") == "fast"
    assert gov.update({}, {}) is None  # the voice is gone (reload): nothing to degrade


def test_each_voice_is_judged_by_its_own_limit() -> None:
    clock = Clock()
    gov = Governor(clock=clock)
    costs = {"default": 1.0, "big": 2.0}
    plans = {"default": Plan(0.8, "fast"), "big": Plan(0.8, None)}
    gov.add(run("default", 0.5, clock.t))  # the big voice would be at 1.0
    reason = gov.update(plans, costs)
    assert reason is not None and reason.startswith("voice big: RTF 1.00") and "default" not in reason
    assert gov.variant_in_use("default") is None
    status = gov.status(costs)
    assert status["rtf_1min"] == 0.5 and status["runs_1min"] == 1 and status["audio_s_1min"] == 2.0
    assert status["voices"]["default"] == {"rtf_1min": 0.5, "rtf_load": 1.0}
    assert status["voices"]["big"] == {"rtf_1min": None, "rtf_load": 2.0}
    assert status["variants_in_use"] == {}


def _chunks(n: int, rate: int = 1000) -> list[AudioChunk]:
    return [AudioChunk(np.zeros(rate // 2, np.float32), rate, i) for i in range(n)]


def test_timed_counts_time_inside_the_voice_and_the_audio() -> None:
    clock = Clock()

    def slow() -> object:
        for chunk in _chunks(3):
            clock.t += 0.2  # the voice works
            yield chunk

    timed = Timed(slow(), clock=clock)  # type: ignore[arg-type]
    first = timed.peek()  # a prefetch makes the first chunk
    assert first.sentence_index == 0 and timed.meter.compute_s == pytest.approx(0.2)
    clock.t += 5.0  # waiting between chunks (the device) is not the voice's time
    from edgetts.daemon.pacing.speed import Meter

    meter = Meter(compute_s=1.0)
    got = [c.sentence_index for c in timed.bind(meter)]
    assert got == [0, 1, 2]
    assert meter.compute_s == pytest.approx(1.6) and meter.audio_s == pytest.approx(1.5)


def test_timed_run_reports_also_a_run_cut_short() -> None:
    notes: list[SpeedSample] = []
    gen = timed_run(_chunks(3), "default", notes.append, keepalive=True)
    next(gen)
    assert notes == []
    gen.close()  # preempted after its first step
    assert len(notes) == 1 and notes[0].voice == "default" and notes[0].keepalive
    assert notes[0].audio_s == pytest.approx(0.5)
    silent: list[SpeedSample] = []
    list(timed_run([], "default", silent.append))
    assert silent == []
