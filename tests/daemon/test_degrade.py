"""Degrade instead of stutter (issue 14): a voice too slow for the board hands over to its
`voice.degrade_to` variant, says so in `degraded: speed` and in `started`, and returns when
the board is fast again.

The in-process rig uses fake voices whose slowness is a sleep per sentence; the subprocess
test runs the real default voice, slowed by a cgroup v1 CPU quota on the daemon's process
(tests/support/quota.py), with an int8 variant written by `edgetts quantize` (its samples
differ from the voice's, so the capture shows which one spoke).  Not a tiny generated voice:
its cost is per-run overhead, not per second of speech, so the cost ratio at load (a long
calibration sentence) says little about its short announcements.
"""

from __future__ import annotations

import signal
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from edgetts.engine import SynthesisConfig

from support.alsa import Capture
from support.broker import Broker
from support.daemon import DaemonProcess, DaemonRig, config_yaml
from support.fakes import FakeVoice
from support.pcm import assert_played, find
from support.probe import Probe
from support.quota import cpu_quota, unavailable

pytestmark = pytest.mark.mqtt

FADE = int(22050 * 5 / 1000)
ALT = "voices:\n  alt:\n    model: alt\n"


def _speed(status: dict[str, Any]) -> str | None:
    return next((d["reason"] for d in status["degraded"] if d["what"] == "speed"), None)


def test_a_slow_voice_hands_over_to_its_variant(daemon_rig: Any) -> None:
    slow = FakeVoice(delay_s=0.3)  # ~0.13 s of audio a sentence: RTF ~2
    rig: DaemonRig = daemon_rig(slow, voice_extra="degrade_to: alt", extra=ALT)
    alt = rig.daemon.voices["alt"]
    assert _speed(rig.status or {}) is None and (rig.status or {})["rtf_1min"] is None
    costs = (rig.status or {})["speed"]["voices"]
    assert costs["default"]["rtf_load"] > 1 and costs["alt"]["rtf_load"] < 0.1  # the calibration runs

    first = rig.say("d1", "Hello there.")
    assert first["voice"] == "default" and "variant" not in first  # no runs yet: no evidence
    status = rig.probe.wait_status(lambda s: _speed(s) is not None)
    reason = _speed(status)
    assert reason is not None and reason.startswith("voice default: RTF ")
    assert "above degrade_rtf 0.80: speaking with degrade_to alt until below 0.68" in reason
    assert status["rtf_1min"] > 0.8 and status["speed"]["variants_in_use"] == {"default": "alt"}
    assert status["speed"]["voices"]["default"]["rtf_1min"] > 0.8

    second = rig.say("d2", "Second one.")
    assert second["voice"] == "default" and second["variant"] == "alt"
    assert second["reason"].startswith("voice default: RTF ")
    assert "Second one." in alt.calls and "Second one." not in slow.calls
    pcm = rig.capture.pcm()
    assert find(pcm, rig.expected("Hello there.")[FADE:-FADE]) >= 0  # the full voice spoke d1
    assert find(pcm, rig.expected("Second one.")[FADE:-FADE]) < 0  # and not d2


def test_without_a_variant_it_reports_and_keeps_the_voice(daemon_rig: Any) -> None:
    slow = FakeVoice(delay_s=0.3)
    rig: DaemonRig = daemon_rig(slow)
    rig.say("n1", "Hello there.")
    reason = _speed(rig.probe.wait_status(lambda s: _speed(s) is not None))
    assert reason is not None and reason.endswith("; no degrade_to variant to speak instead")
    second = rig.say("n2", "Second one.")
    assert second["voice"] == "default" and "variant" not in second
    assert "Second one." in slow.calls


def test_a_file_variant_loads_with_the_voice_and_a_bad_one_is_degraded_at_load(
    mosquitto: Broker,
    alsa_capture: Capture,
    tmp_path: Path,
) -> None:
    config = tmp_path / "variant.yaml"
    config.write_text(config_yaml(mosquitto, "variant-file", voice_extra="degrade_to: /v/fast.onnx"))
    fast, slow = FakeVoice("fast"), FakeVoice(delay_s=0.3)
    rig = DaemonRig(config, mosquitto, alsa_capture, {"default": slow, "/v/fast.onnx": fast})
    try:
        status = rig.wait_online(15)
        assert [model for model, _ in rig.loads] == ["default", "/v/fast.onnx"]
        assert status["degraded"] == [] and "default/degrade_to" in status["speed"]["voices"]
        assert status["voices"] == ["default"]  # a variant is no voice an announcement may name
        rig.say("f1", "Hello there.")
        rig.probe.wait_status(lambda s: _speed(s) is not None)
        second = rig.say("f2", "Second one.")
        assert second["variant"] == "/v/fast.onnx" and "Second one." in fast.calls

        # A reload that does not touch the voice keeps its variant as loaded.
        config.write_text(config.read_text().replace("dedup_window_s: 600", "dedup_window_s: 601"))
        rig.daemon.on_signal(signal.SIGHUP)
        rig.probe.wait(lambda p: rig.daemon.config.queue.dedup_window_s == 601, 15, "reload")
        assert [model for model, _ in rig.loads] == ["default", "/v/fast.onnx"]
        assert rig.say("f2b", "Third one.")["variant"] == "/v/fast.onnx"

        # A reload naming a file that does not load is refused: nothing fails at switch time.
        config.write_text(config.read_text().replace("/v/fast.onnx", "/v/missing.onnx"))
        rig.daemon.on_signal(signal.SIGHUP)
        refused = rig.probe.wait_status(lambda s: any(d["what"] == "config" for d in s["degraded"]))
        assert "reload refused" in next(d["reason"] for d in refused["degraded"] if d["what"] == "config")
        assert "default/degrade_to" in next(d["reason"] for d in refused["degraded"] if d["what"] == "config")
    finally:
        rig.close()

    # At start-up the daemon starts without it, and says why.
    rig = DaemonRig(config, mosquitto, alsa_capture, {"default": FakeVoice()})
    try:
        status = rig.wait_online(15)
        voice = next(d["reason"] for d in status["degraded"] if d["what"] == "voice")
        assert "'default/degrade_to' (/v/missing.onnx)" in voice
        assert rig.say("f3", "Hello there.")["voice"] == "default"
    finally:
        rig.close()


def test_the_keepalive_measures_the_default_voice_while_idle(daemon_rig: Any) -> None:
    rig: DaemonRig = daemon_rig(FakeVoice(delay_s=0.05), keepalive_s=1)
    status = rig.probe.wait_status(lambda s: (s.get("speed") or {}).get("runs_1min", 0) >= 1, 15)
    assert status["speed"]["voices"]["default"]["rtf_1min"] > 0 and status["rtf_1min"] is not None


# ------------------------------------------------------------------ the real voice on a slow board

QUOTA_CPUS = 0.1
"""0.1 CPU (per 10 ms period): the default voice at 1 thread runs at RTF ~1 here (~0.2 unthrottled)."""

LIMIT = 0.5
"""voice.degrade_rtf of the test: between the two speeds, with a margin on both sides."""


def _reference(voice: Any, text: str) -> np.ndarray:
    chunks = list(voice.synthesize(text, SynthesisConfig(noise_scale=0, noise_w=0)))
    return np.concatenate([c.to_int16() for c in chunks])


def test_real_voice_degrades_under_a_cpu_quota_and_recovers(
    mosquitto: Broker,
    alsa_capture: Capture,
    tmp_path: Path,
    daemon_processes: list[DaemonProcess],
) -> None:
    why = unavailable()
    if why:
        pytest.skip(f"cannot slow the daemon: {why}")
    from edgetts.cli.quantize import quantize_voice
    from edgetts.voice.catalog import default_voice_path, load_voice

    int8 = quantize_voice(default_voice_path(), tmp_path / "joe-int8.onnx")
    config = tmp_path / "slow.yaml"
    config.write_text(config_yaml(mosquitto, "slow-board", voice_extra=f"degrade_to: {int8}\ndegrade_rtf: {LIMIT}"))
    probe = Probe(mosquitto, "test", "slow-board")
    daemon = DaemonProcess(config, alsa_capture.env, tmp_path / "daemon.log").start()
    daemon_processes.append(daemon)
    assert daemon.proc is not None
    full, variant = load_voice("default", threads=1, lock=True), load_voice(str(int8), threads=1, lock=True)
    long_text = "The next train to arrive at platform two is the service to Edinburgh Waverley."
    try:
        online = probe.wait_status(lambda s: s["state"] == "online", 90)
        assert online["degraded"] == [], daemon.output()[-3000:]
        assert set(online["speed"]["voices"]) == {"default", "default/degrade_to"}
        assert _say(probe, "p0", "Mind the gap.", 60).get("variant") is None  # full speed: the voice

        with cpu_quota(daemon.proc.pid, QUOTA_CPUS) as group:
            slow = _say(probe, "s1", long_text, 180)
            assert slow.get("variant") is None  # said by the voice, whose slowness it showed
            status = probe.wait_status(lambda s: _speed(s) is not None, 30)
            assert status["rtf_1min"] > LIMIT and status["speed"]["variants_in_use"] == {"default": str(int8)}
            degraded = _say(probe, "s2", "Mind the gap.", 120)
            assert degraded["variant"] == str(int8) and "RTF" in degraded["reason"]
            assert group.throttled_s() > 0  # the quota really held the daemon back

            group.unlimit()  # the board is fast again
            recovered = _recover(probe, 120)
        assert recovered is not None, f"speed never recovered: {probe.statuses[-1]}"
        last = _say(probe, "r-end", "Still here.", 60)
        assert last["voice"] == "default" and last.get("variant") is None

        pcm = alsa_capture.pcm()
        at = assert_played(pcm, _reference(full, long_text), FADE)  # s1: the voice
        assert find(pcm, _reference(full, "Mind the gap.")[FADE:-FADE], at) < 0  # s2 was not the voice
        at = assert_played(pcm, _reference(variant, "Mind the gap."), FADE, at)  # s2: the variant
        assert_played(pcm, _reference(full, "Still here."), FADE, at)  # after recovery: the voice
        assert "Traceback" not in daemon.output()
    finally:
        probe.close()


def _say(probe: Probe, ident: str, text: str, timeout: float) -> dict[str, Any]:
    probe.publish({"id": ident, "text": text})
    probe.wait_event(ident, "finished", timeout)
    return probe.wait_event(ident, "started")


def _recover(probe: Probe, timeout: float) -> dict[str, Any] | None:
    """Announce short lines (spoken by the variant, now fast) until `degraded: speed` clears."""
    deadline = time.monotonic() + timeout
    n = 0
    while time.monotonic() < deadline:
        n += 1
        started = _say(probe, f"r{n}", "Mind the gap.", 60)
        time.sleep(0.2)  # the status after its run
        if _speed(probe.statuses[-1]) is None:
            return started
    return None
