"""Keepalive: schedule, preemption between steps, CPU cost accounting (fake clocks)."""

from __future__ import annotations

import pytest

from edgetts.daemon.pacing.keepalive import Keepalive


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def test_schedule() -> None:
    wall, cpu = Clock(), Clock()
    ka = Keepalive(30, lambda: None, clock=wall, cpu_clock=cpu)
    assert ka.seconds_until_due() == 30 and not ka.due()
    wall.t += 29.5
    assert not ka.run_if_due()
    wall.t += 0.5
    assert ka.due() and ka.run_if_due()
    assert ka.seconds_until_due() == 30  # idleness counts from the end of the run
    wall.t += 20
    ka.note_activity()  # a real announcement: the next keepalive is 30 s after it
    wall.t += 20
    assert not ka.due() and ka.seconds_until_due() == 10


def test_off() -> None:
    calls = []
    ka = Keepalive(0, lambda: calls.append(1))
    assert not ka.enabled and ka.seconds_until_due() is None and not ka.due()
    assert not ka.run_if_due() and calls == []
    assert ka.stats().cpu_s_per_hour == 0.0
    with pytest.raises(ValueError):
        Keepalive(-1, lambda: None)


def test_preempted_between_steps() -> None:
    done: list[int] = []
    waiting = {"real": False}

    def warm():  # type: ignore[no-untyped-def]
        for i in range(3):  # e.g. voice.synthesize(...): one item per sentence
            done.append(i)
            waiting["real"] = i == 0  # a real announcement arrives during step 0
            yield i

    ka = Keepalive(30, warm)
    assert ka.run(preempted=lambda: waiting["real"]) is False
    assert done == [0]  # stopped before the next step
    assert ka.stats().preempted == 1
    waiting["real"] = True
    assert ka.run(preempted=lambda: waiting["real"]) is False and done == [0]  # not even started


def test_cost_accounting() -> None:
    wall, cpu = Clock(), Clock()

    def warm() -> None:
        wall.t += 0.2
        cpu.t += 0.15  # 0.15 CPU s per run (two threads' worth would show here too)

    ka = Keepalive(30, warm, clock=wall, cpu_clock=cpu)
    for _ in range(4):
        wall.t += 30
        assert ka.run_if_due()
    stats = ka.stats()
    assert stats.runs == 4 and stats.preempted == 0
    assert stats.cpu_s_per_run == pytest.approx(0.15)
    assert stats.cpu_s_per_hour == pytest.approx(0.15 * 120)  # 120 runs an idle hour
    assert stats.wall_s == pytest.approx(0.8)
    assert stats.to_dict()["cpu_s_per_hour"] == 18.0


def test_failure_is_logged_not_raised(caplog: pytest.LogCaptureFixture) -> None:
    def boom() -> None:
        raise RuntimeError("model gone")

    ka = Keepalive(30, boom)
    assert ka.run() is True
    assert "keepalive inference failed" in caplog.text and ka.stats().runs == 1


def test_real_voice_cost(default_voice) -> None:  # type: ignore[no-untyped-def]
    from edgetts.daemon.pacing.keepalive import KEEPALIVE_TEXT
    from edgetts.engine import SynthesisConfig

    ka = Keepalive(30, lambda: default_voice.synthesize(KEEPALIVE_TEXT, SynthesisConfig(noise_scale=0, noise_w=0)))
    ka.run()
    ka.run()
    stats = ka.stats()
    assert 0 < stats.cpu_s_per_run < 5
    assert stats.cpu_s_per_hour == pytest.approx(stats.cpu_s_per_run * 120)
