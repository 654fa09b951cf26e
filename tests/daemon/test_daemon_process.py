"""The real daemon (`python -m edgetts.cli.daemon run`, i.e. `edgetts run`) with
the real default voice, the real mosquitto and the ALSA capture plugin.

"Mid-announcement" for the SIGKILL test: the ALSA null sink is not paced, so
the config turns on ``audio.realtime_pacing`` (writes paced to the wall clock,
as a real sound card would), and the daemon is killed ~0.5 s after `started`
of an announcement that lasts several seconds.
"""

from __future__ import annotations

import re
import signal
import time
from pathlib import Path

import numpy as np
import pytest

from edgetts.engine import SynthesisConfig
from edgetts.runtime.memlock import find_initializers
from edgetts.voice.catalog import default_voice_path

from support.alsa import Capture
from support.broker import Broker
from support.daemon import DaemonProcess, config_yaml
from support.notify import NotifySocket
from support.pcm import assert_played
from support.probe import Probe

pytestmark = pytest.mark.mqtt

FADE = int(22050 * 5 / 1000)


@pytest.fixture(scope="module")
def reference_voice():  # type: ignore[no-untyped-def]
    """The voice the daemon loads (same model, thread count and locked weights: same floats;
    locked weights are used without onnxruntime's prepacking, which rounds differently)."""
    from edgetts.voice.catalog import load_voice

    return load_voice("default", threads=1, lock=True)


def reference(voice, text: str) -> np.ndarray:  # type: ignore[no-untyped-def]
    chunks = list(voice.synthesize(text, SynthesisConfig(noise_scale=0, noise_w=0)))
    return np.concatenate([c.to_int16() for c in chunks])


def test_announcement_pcm_sd_notify_and_clean_stop(
    mosquitto: Broker,
    alsa_capture: Capture,
    notify_socket: NotifySocket,
    tmp_path: Path,
    daemon_processes: list[DaemonProcess],
    reference_voice,  # type: ignore[no-untyped-def]
) -> None:
    config = tmp_path / "edgetts.yaml"
    config.write_text(config_yaml(mosquitto, "proc-real", audio_extra="lead_in_ms: 50"))
    probe = Probe(mosquitto, "test", "proc-real")
    env = {**alsa_capture.env, "NOTIFY_SOCKET": str(notify_socket.path), "WATCHDOG_USEC": "1000000"}
    daemon = DaemonProcess(config, env, tmp_path / "daemon.log").start()
    daemon_processes.append(daemon)
    try:
        msgs = notify_socket.collect(lambda m: any("READY=1" in x for x in m), 60)
        assert any("READY=1" in m for m in msgs), daemon.output()[-3000:]
        probe.wait_status(lambda s: s["state"] == "online")
        text = "The next train to arrive at platform two is the 9:42 service to Edinburgh Waverley. Mind the gap."
        probe.publish({"id": "real-1", "text": text})
        probe.wait_event("real-1", "finished", 60)
        assert probe.events_of("real-1") == ["queued", "started", "finished"]
        status = probe.statuses[-1]
        assert status["voice"] and status["version"] and status["queue_depth"] == 0
        assert status["degraded"] == []
        # the start-up heap is frozen: a full collection no longer walks it (runtime/heap.py)
        frozen = re.search(r"froze (\d+) start-up objects", daemon.output())
        assert frozen and int(frozen.group(1)) > 10_000, daemon.log_end()
        # memory.lock (default on) as root: the voice's weights are locked in RAM (issue 5)
        weights = sum(span.nbytes for span in find_initializers(default_voice_path()))
        assert status["locked_bytes"] >= weights

        expected = reference(reference_voice, text)
        pcm = alsa_capture.pcm()
        at = assert_played(pcm, expected, FADE)
        assert at == int(22050 * 0.05) and not pcm[:at].any()  # the lead-in, silent
        assert pcm.size == at + expected.size  # and nothing else was played
        lead_in_end = pcm.size

        notify_socket.collect(lambda m: sum(x == "WATCHDOG=1" for x in m) >= 2, 10)
        assert sum(m == "WATCHDOG=1" for m in notify_socket.messages) >= 2
        # systemctl reload with a broken file: refused, reported, old config in force
        good = config.read_text()
        config.write_text(good.replace("mqtt:\n", "mqtt:\n  port: lots\n"))
        daemon.signal(signal.SIGHUP)
        st = probe.wait_status(lambda s: any(d["what"] == "config" for d in s["degraded"]))
        assert f"{config}:" in st["degraded"][0]["reason"] and "mqtt/port" in st["degraded"][0]["reason"]
        probe.publish({"id": "real-2", "text": "Still here."})
        probe.wait_event("real-2", "finished", 60)
        assert_played(alsa_capture.pcm(), reference(reference_voice, "Still here."), FADE, lead_in_end)

        daemon.signal(signal.SIGTERM)
        daemon.assert_clean_exit(15)
        notify_socket.collect(lambda m: any("STOPPING=1" in x for x in m), 5)
        assert any(m.startswith("STOPPING=1") for m in notify_socket.messages)
        probe.wait_status(lambda s: s["state"] == "offline", 5)
        assert "Traceback" not in daemon.output()
    finally:
        probe.close()


def test_sigkill_mid_announcement_replays_after_restart(
    mosquitto: Broker,
    alsa_capture: Capture,
    tmp_path: Path,
    daemon_processes: list[DaemonProcess],
    reference_voice,  # type: ignore[no-untyped-def]
) -> None:
    config = tmp_path / "edgetts.yaml"
    config.write_text(config_yaml(mosquitto, "proc-kill", audio_extra="realtime_pacing: true"))
    probe = Probe(mosquitto, "test", "proc-kill")
    first_cap = {**alsa_capture.env, "ALSA_CAPTURE_FILE": str(tmp_path / "first.raw")}
    try:
        first = DaemonProcess(config, first_cap, tmp_path / "first.log").start()
        daemon_processes.append(first)
        probe.wait_status(lambda s: s["state"] == "online", 60)
        text = (
            "Attention all staff: a fire drill will take place today at 2 pm. When you hear the "
            "alarm, leave the building by the nearest exit. Do not use the lifts."
        )
        probe.publish({"id": "drill", "text": text})
        probe.wait_event("drill", "started", 60)
        time.sleep(1.0)
        first.kill()  # SIGKILL, mid-announcement (it lasts ~8 s, paced)
        assert probe.events_of("drill") == ["queued", "started"]
        probe.wait_status(lambda s: s["state"] == "offline", 10)  # the Last Will

        second = DaemonProcess(config, alsa_capture.env, tmp_path / "second.log").start()
        daemon_processes.append(second)
        probe.wait_event("drill", "finished", 90)
        assert probe.events_of("drill") == ["queued", "started", "queued", "started", "finished"]
        expected = reference(reference_voice, text)
        pcm = alsa_capture.pcm()
        at = assert_played(pcm, expected, FADE)
        assert at == 0 and pcm.size == expected.size  # all of it, once, from the start
        # and the first daemon really died mid-announcement: it had played a part of it
        partial = Capture(alsa_capture.conf, tmp_path / "first.raw").pcm()
        assert 0 < partial.size < expected.size // 2
        second.signal(signal.SIGTERM)
        second.assert_clean_exit(15)
    finally:
        probe.close()


def test_missing_voice_the_service_still_starts_on_clips(
    mosquitto: Broker,
    alsa_capture: Capture,
    notify_socket: NotifySocket,
    tmp_path: Path,
    daemon_processes: list[DaemonProcess],
) -> None:
    """Issue 6 (it used to exit 1): READY=1, `degraded: voice` with the reason, clips play."""
    from edgetts.daemon.playout.clips import ClipLibrary

    from support.pcm import clip_pcm, tone, write_clip

    clips = tmp_path / "clips"
    clips.mkdir()
    write_clip(clips / "sorry.wav", tone(440, 0.3))
    config = tmp_path / "edgetts.yaml"
    missing = tmp_path / "gone" / "voice.onnx"
    config.write_text(
        config_yaml(
            mosquitto,
            "proc-novoice",
            voice_extra=f"model: {missing}",
            extra=f"clips:\n  dir: {clips}\nfallback:\n  default_clip: sorry\n",
        )
    )
    probe = Probe(mosquitto, "test", "proc-novoice")
    env = {**alsa_capture.env, "NOTIFY_SOCKET": str(notify_socket.path)}
    daemon = DaemonProcess(config, env, tmp_path / "daemon.log").start()
    daemon_processes.append(daemon)
    try:
        msgs = notify_socket.collect(lambda m: any("READY=1" in x for x in m), 60)
        assert any("READY=1" in m for m in msgs), daemon.output()[-3000:]
        st = probe.wait_status(lambda s: s["state"] == "online")
        assert [d["what"] for d in st["degraded"]] == ["voice"] and str(missing) in st["degraded"][0]["reason"]
        probe.publish({"id": "nv", "text": "Anyone there?"})
        probe.wait_event("nv", "finished", 30)
        assert probe.events_of("nv") == ["queued", "fallback", "started", "finished"]
        # the clip as the daemon converts it (-20 dBFS: no voice to match)
        expected = clip_pcm(ClipLibrary(clips, 22050, -20.0).load().get("sorry"))
        assert assert_played(alsa_capture.pcm(), expected, FADE) == 0
        daemon.signal(signal.SIGTERM)
        daemon.assert_clean_exit(15)
        assert "Traceback" not in daemon.output()
    finally:
        probe.close()
