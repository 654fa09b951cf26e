"""Ducking through the sound server, and after a kill: the real daemon (subprocess, real voice) on a
private PulseAudio (tools/paced_sink.py, two zones of one null sink, recorded from its monitor).

A tone stream (`pacat`, another client) plays in zone 0 and the daemon in zone 1, so one
recording holds both, channel by channel: the tone is measured while the speech channel is
speaking, against itself before and after.  Then a daemon lowering PulseAudio, MPD and Snapcast at
once is killed (SIGKILL) mid-announcement: the levels stay down, and its next start puts them back.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest

from support.broker import Broker
from support.daemon import DaemonProcess, config_yaml
from support.mixers import MpdServer, SnapServer, ToneStream, missing
from support.probe import Probe
from tools.paced_sink import PacedSink, available

pytestmark = pytest.mark.mqtt

RATE = 22050
LEVEL_DB, FADE_MS, HOLD_MS = -15, 200, 500
PULSE_LOW = 10 ** (LEVEL_DB / 60)  # the stream's volume value (cubic curve): 0.5623
TEXT = "Attention please. The shop closes in fifteen minutes. Please bring your purchases to the tills."
LONG = (
    "Attention please. The evening service to the coast is delayed by about twenty minutes. "
    "Passengers for the harbour should change at the central station. We apologise for the delay. "
    "Refreshments are available in the waiting room on platform one. Thank you for your patience."
)
WINDOW = int(0.05 * RATE)


@pytest.fixture(scope="module")
def zones(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PacedSink]:
    """A private PulseAudio: null sink `cap` with two zones (`zone0`, `zone1`) recorded as two channels."""
    if why := available():
        pytest.skip(f"paced sink unavailable: {why} not installed (scripts/system-deps.sh --test)")
    with PacedSink(tmp_path_factory.mktemp("duck-pulse"), RATE, zones=2) as sink:
        yield sink


def duck_config(broker: Broker, device: str, state: Path, **mixers: str) -> str:
    keys = {"level_db": LEVEL_DB, "fade_ms": FADE_MS, "hold_ms": HOLD_MS, **mixers}
    state.mkdir(exist_ok=True)
    duck = "duck:\n" + "".join(f"  {k}: {v}\n" for k, v in keys.items())
    return config_yaml(broker, device, extra=duck, queue_extra=f"state_dir: {state}")


def window_db(x: np.ndarray) -> np.ndarray:
    """dBFS of each 50 ms window's RMS."""
    n = x.size // WINDOW
    rms = np.sqrt(np.mean(x[: n * WINDOW].astype(np.float64).reshape(n, WINDOW) ** 2, axis=1))
    return 20 * np.log10(np.maximum(rms, 1e-3) / 32767.0)


def wait_for(pred: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout} s: {what}")
        time.sleep(0.02)


def test_a_pulseaudio_tone_stream_is_lowered_by_level_db_and_restored(
    mosquitto: Broker, zones: PacedSink, tmp_path: Path, daemon_processes: list[DaemonProcess]
) -> None:
    config = tmp_path / "edgetts.yaml"
    config.write_text(duck_config(mosquitto, "duck-pulse", tmp_path / "state", pulse="true"))
    probe = Probe(mosquitto, "test", "duck-pulse")
    with ToneStream(tmp_path / "tone", zones.env, "zone0", RATE) as tone:
        daemon = DaemonProcess(config, zones.zone_env(1), tmp_path / "daemon.log").start()
        daemon_processes.append(daemon)
        try:
            status = probe.wait_status(lambda s: s["state"] == "online", 90)
            assert not status["degraded"], status
            assert tone.volume() == 1.0
            with zones.record() as rec:
                time.sleep(1.0)  # the tone as it was
                probe.publish({"id": "duck", "text": TEXT})
                probe.wait_event("duck", "finished", 60)
                time.sleep((HOLD_MS + FADE_MS) / 1000 + 1.5)  # held, brought back, and as it was again
                pcm = rec.stop()
        finally:
            probe.close()
        daemon.signal(signal.SIGTERM)
        daemon.assert_clean_exit()
    music, speech = window_db(pcm[:, 0]), window_db(pcm[:, 1])
    speaking = np.flatnonzero(speech > -40)
    assert speaking.size > 20, "the announcement is not in the recording"
    first, last = int(speaking[0]), int(speaking[-1])
    before = float(np.median(music[4:18]))  # (0.2-0.9 s: before it was published)
    during = float(np.median(music[first + 10 : last - 1]))  # (from 0.5 s into the speech to its end)
    back_from = last + int((HOLD_MS + FADE_MS) / 50) + 10
    after = float(np.median(music[back_from:]))
    print(f"tone: {before:.2f} dBFS before, {during - before:+.2f} dB while speaking, {after - before:+.2f} dB after")
    assert before > -20, f"no tone before the announcement ({before:.1f} dBFS)"
    assert during - before == pytest.approx(LEVEL_DB, abs=1.0), (before, during, after)
    assert after - before == pytest.approx(0.0, abs=0.3), (before, during, after)
    assert music[back_from:].size >= 10


def test_a_daemon_killed_mid_announcement_puts_the_levels_back_at_its_next_start(
    mosquitto: Broker, zones: PacedSink, tmp_path: Path, daemon_processes: list[DaemonProcess]
) -> None:
    if why := missing("mpd", "snapserver", "snapclient"):
        pytest.skip(f"{why} not installed (Debian packages mpd, snapserver, snapclient: scripts/system-deps.sh --test)")
    state = tmp_path / "state"
    with (
        MpdServer(tmp_path / "mpd") as mpd,
        SnapServer(tmp_path / "snapcast") as snap,
        ToneStream(tmp_path / "tone", zones.env, "zone0", RATE) as tone,
    ):
        config = tmp_path / "edgetts.yaml"
        config.write_text(
            duck_config(mosquitto, "duck-kill", state, pulse="true", mpd=mpd.address, snapcast=snap.address)
        )
        lowered = lambda: (mpd.volume(), snap.client_volume(), round(tone.volume() or 0, 3))  # noqa: E731
        probe = Probe(mosquitto, "test", "duck-kill")
        try:
            first = DaemonProcess(config, zones.zone_env(1), tmp_path / "first.log").start()
            daemon_processes.append(first)
            probe.wait_status(lambda s: s["state"] == "online", 90)
            # expires_at: the redelivery to the next start (the kill left it unacknowledged) is too late to play
            expires_at = time.time() + 8
            probe.publish({"id": "long", "text": LONG, "expires_at": expires_at})
            probe.wait_event("long", "started", 30)
            wait_for(lambda: lowered() == (45, 29, round(PULSE_LOW, 3)), 10, "all three lowered")
            assert len(list(state.glob("duck-*.json"))) == 3
            first.kill()  # SIGKILL, mid-announcement
            time.sleep(max(2.0, expires_at - time.time() + 0.5))  # (longer than hold + fade)
            assert lowered() == (45, 29, round(PULSE_LOW, 3)), "something was put back without a start"
            second = DaemonProcess(config, zones.zone_env(1), tmp_path / "second.log").start()
            daemon_processes.append(second)
            wait_for(lambda: lowered() == (80, 80, 1.0), 60, "all three put back")
            wait_for(lambda: not list(state.glob("duck-*.json")), 10, "the records removed")
            probe.wait_status(lambda s: s["state"] == "online", 90)
            assert "a previous run lowered" in second.output()
            second.signal(signal.SIGTERM)
            second.assert_clean_exit()
        finally:
            probe.close()
