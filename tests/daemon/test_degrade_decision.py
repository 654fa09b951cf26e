"""The loop's side of degrading (edgetts/daemon/pacing/degrade.py) on given speed samples and an
injected clock: which voice speaks, what `degraded: speed` says, and when it returns.

The Governor's arithmetic (the window, the estimate, the hysteresis) is tests/daemon/test_speed.py's;
here the same decisions through :class:`Degrade`, the loaded assets and the health map, as the
play-out asks them, so no verdict depends on how fast this machine synthesizes
(tests/daemon/test_degrade.py runs them in the daemon).
"""

from __future__ import annotations

import pytest

from edgetts.config.loader import parse_config
from edgetts.daemon.assets import Assets
from edgetts.daemon.health import Health
from edgetts.daemon.pacing.degrade import Degrade, speed_plans
from edgetts.daemon.pacing.speed import RECOVER, WINDOW_S, Governor, Plan, SpeedSample
from edgetts.daemon.pacing.variants import variant_key
from edgetts.engine import Voice

from support.fakes import FakeVoice

LIMIT = 0.8


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def _assets(voice_extra: str = "  degrade_to: alt\n", files: bool = False) -> Assets:
    config = parse_config(f"voice:\n  degrade_rtf: {LIMIT}\n{voice_extra}voices:\n  alt:\n    model: alt\n")
    full, alt, onnx = FakeVoice(), FakeVoice("alt"), FakeVoice("int8")
    variants: dict[str, Voice] = {variant_key("default"): onnx} if files else {}
    cost = {"default": 1.0, "alt": 0.25, variant_key("default"): 0.5}  # at load: alt a quarter, the file half
    return Assets(config, voices={"default": full, "alt": alt}, variants=variants, speed_cost=cost)


def _run(voice: str, rtf: float, at: float, audio_s: float = 2.0) -> SpeedSample:
    return SpeedSample(voice, rtf * audio_s, audio_s, at)


def test_a_slow_run_hands_the_voice_over_to_its_variant_and_says_why() -> None:
    clock, health = Clock(), Health()
    assets, degrade = _assets(), Degrade(health, Governor(clock=clock))
    assert speed_plans(assets) == {"default": Plan(LIMIT, "alt"), "alt": Plan(LIMIT, None)}
    degrade.on_sample(_run("default", 0.7, clock.t), assets)  # keeps up: no evidence to switch
    assert "speed" not in health and degrade.variant_for("default", assets) is None

    degrade.on_sample(_run("default", 1.1, clock.t), assets)  # the window: (0.7 + 1.1) / 2 = 0.9
    reason = health.get("speed")
    assert reason == (
        "voice default: RTF 0.90 over the last minute, above degrade_rtf 0.80: "
        f"speaking with degrade_to alt until below {LIMIT * RECOVER:.2f}"
    )
    chosen = degrade.variant_for("default", assets)
    assert chosen is not None
    variant, why = chosen
    assert (variant.label, variant.key, variant.voice) == ("alt", "alt", assets.voices["alt"])
    assert why == reason
    assert degrade.variant_for("alt", assets) is None  # the variant itself keeps up
    status = degrade.status(assets)
    assert status["variants_in_use"] == {"default": "alt"} and status["rtf_1min"] == pytest.approx(0.9)
    assert status["voices"]["default"]["rtf_load"] == 1.0 and status["voices"]["alt"]["rtf_1min"] is None


def test_the_variant_s_runs_keep_it_degraded_until_the_estimate_is_below_the_recovery_point() -> None:
    clock, health = Clock(), Health()
    assets, degrade = _assets(), Degrade(health, Governor(clock=clock))
    degrade.on_sample(_run("default", 1.2, clock.t), assets)
    assert degrade.variant_for("default", assets) is not None
    clock.t += WINDOW_S + 1  # the slow run is out of the window: only the variant's runs are evidence
    # alt at 0.18 costs the full voice 0.18 x 1.0 / 0.25 = 0.72: below the limit, above 0.68 (RECOVER)
    degrade.on_sample(_run("alt", 0.18, clock.t), assets)
    assert degrade.variant_for("default", assets) is not None and "RTF 0.72" in (health.get("speed") or "")
    clock.t += WINDOW_S + 1
    degrade.on_sample(_run("alt", 0.16, clock.t), assets)  # 0.64: below the recovery point
    assert "speed" not in health and degrade.variant_for("default", assets) is None
    assert degrade.status(assets)["variants_in_use"] == {}


def test_without_runs_of_late_it_stays_degraded_until_evidence_comes() -> None:
    clock, health = Clock(), Health()
    assets, degrade = _assets(), Degrade(health, Governor(clock=clock))
    degrade.on_sample(_run("default", 2.0, clock.t), assets)
    clock.t += WINDOW_S + 1
    degrade.refresh(assets)  # the window is empty: no evidence the board is fast again
    assert degrade.variant_for("default", assets) is not None and "speed" in health


def test_a_file_variant_speaks_under_its_own_key_and_its_own_cost_ratio() -> None:
    clock, health = Clock(), Health()
    assets = _assets("  degrade_to: /v/int8.onnx\n", files=True)
    degrade = Degrade(health, Governor(clock=clock))
    degrade.on_sample(_run("default", 1.0, clock.t), assets)
    chosen = degrade.variant_for("default", assets)
    assert chosen is not None
    variant, why = chosen
    assert (variant.label, variant.key) == ("/v/int8.onnx", variant_key("default"))
    assert variant.voice is assets.variants[variant_key("default")] and "degrade_to /v/int8.onnx" in why
    clock.t += WINDOW_S + 1
    # The file at 0.3 is the full voice at 0.3 x 1.0 / 0.5 = 0.6 (not 0.3 x 4, alt's ratio): it returns.
    degrade.on_sample(_run(variant_key("default"), 0.3, clock.t), assets)
    assert degrade.variant_for("default", assets) is None and "speed" not in health


def test_without_a_variant_it_reports_and_keeps_the_voice() -> None:
    clock, health = Clock(), Health()
    assets, degrade = _assets(voice_extra=""), Degrade(health, Governor(clock=clock))
    degrade.on_sample(_run("default", 1.5, clock.t), assets)
    assert (health.get("speed") or "").endswith("; no degrade_to variant to speak instead")
    assert degrade.variant_for("default", assets) is None
