"""Issue 13 item 2: one valid 2 KB announcement without sentence punctuation, in the real daemon.

It was one inference of 15-32k ids (5.9 GB in 9.5 s, no audio yet, every other announcement
meanwhile a deadline fallback).  Now: first audio within seconds, the process's peak (VmHWM)
under a few hundred MB, an emergency published while it is being synthesized starts within 2 s,
and the preempted announcement resumes with speech, not with a deadline fallback.

`python -m edgetts.cli run` with the real default voice, mosquitto and the ALSA capture, paced
to the wall clock (``audio.realtime_pacing``) so that "during it" means what it does on a board.
"""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest

from support.alsa import Capture
from support.broker import Broker
from support.daemon import DaemonProcess, config_yaml
from support.pcm import tone, write_clip
from support.probe import Probe

pytestmark = pytest.mark.mqtt

LONG = {
    "digits": "".join(str(i % 10) for i in range(1999)),
    "say-as": '<speak><say-as interpret-as="characters">' + "abcdefghijklmnopqrstuvwxyz" * 73 + "</say-as></speak>",
    "no-full-stop": " ".join(["the", "service", "to", "Edinburgh", "Waverley", "calls", "at", "every", "station"] * 40)[
        :2000
    ],
}
EMERGENCY = "Fire alarm. Please leave the building by the nearest exit."


def _vm(pid: int, key: str) -> float:
    """A /proc/<pid>/status figure, MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) / 1024
    raise AssertionError(f"no {key} for {pid}")


def _daemon(
    mosquitto: Broker, alsa_capture: Capture, tmp_path: Path, device: str, voice_extra: str = ""
) -> tuple[DaemonProcess, Probe]:
    """A daemon at 2 threads ("at full speed"; the rig's default is 1, for bit-exact references
    elsewhere) with a fallback clip, so a late first speech would show as a `fallback` event."""
    clips = tmp_path / "clips"
    clips.mkdir()
    write_clip(clips / "sorry.wav", tone(660, 0.5))
    config = tmp_path / "edgetts.yaml"
    config.write_text(
        config_yaml(
            mosquitto,
            device,
            audio_extra="realtime_pacing: true",
            voice_extra=voice_extra,
            extra=f"clips:\n  dir: {clips}\nfallback:\n  default_clip: sorry\n",
        ).replace("threads: 1", "threads: 2")
    )
    probe = Probe(mosquitto, "test", device)
    daemon = DaemonProcess(config, alsa_capture.env, tmp_path / "daemon.log").start()
    probe.wait_status(lambda s: s["state"] == "online", 60)
    return daemon, probe


@pytest.mark.parametrize("kind", LONG)
def test_long_announcement_is_bounded_and_an_emergency_cuts_in(
    mosquitto: Broker,
    alsa_capture: Capture,
    tmp_path: Path,
    daemon_processes: list[DaemonProcess],
    kind: str,
) -> None:
    daemon, probe = _daemon(mosquitto, alsa_capture, tmp_path, f"bounded-{kind}")
    daemon_processes.append(daemon)
    try:
        assert daemon.proc is not None
        loaded = _vm(daemon.proc.pid, "VmRSS")
        # Its own deadline: the first piece takes ~1-2 s here, up to ~5 s with the machine loaded.
        probe.publish({"id": "long", "text": LONG[kind], "deadline_ms": 10000})
        started = probe.wait_event("long", "started", 30)
        assert "fallback" not in probe.events_of("long"), probe.events
        assert started["latency_ms"] < 10000, started  # "within seconds"; it was none after 9.5 s
        time.sleep(3.0)  # it plays, and its synthesis runs ahead, piece after piece
        probe.publish({"id": "fire", "text": EMERGENCY, "priority": "emergency"})
        fire = probe.wait_event("fire", "started", 10)
        assert fire["latency_ms"] < 2000, fire  # the bound
        assert "fallback" not in probe.events_of("fire")
        probe.wait_event("fire", "finished", 30)
        fire_done = time.monotonic()
        # The preempted one comes back with its own speech within its deadline, not a clip.
        probe.wait(lambda p: p.events_of("long").count("started") == 2, 20, "long resumed")
        resumed_s = time.monotonic() - fire_done
        assert probe.events_of("long") == ["queued", "started", "preempted", "started"], probe.events
        time.sleep(3.0)
        peak = _vm(daemon.proc.pid, "VmHWM")
        print(
            f"{kind}: loaded {loaded:.0f} MB, peak {peak:.0f} MB, first audio {started['latency_ms']:.0f} ms, "
            f"emergency {fire['latency_ms']:.0f} ms, resumed after {resumed_s:.1f} s"
        )
        assert peak < 600, f"VmHWM {peak:.0f} MB"  # "a few hundred MB"; it was 5.9 GB and growing
        assert "Traceback" not in daemon.output()
        daemon.signal(signal.SIGTERM)
        daemon.assert_clean_exit(15)
    finally:
        probe.close()


def test_resuming_late_in_a_long_text_does_not_redo_its_pieces(
    mosquitto: Broker,
    alsa_capture: Capture,
    tmp_path: Path,
    daemon_processes: list[DaemonProcess],
) -> None:
    """Preempted at its ~16th piece, the text resumes there at once: redoing the pieces before
    it (~0.2-0.4 s each here at 64 ids) would pass its 3 s deadline and play the fallback clip."""
    daemon, probe = _daemon(mosquitto, alsa_capture, tmp_path, "bounded-resume", "max_sentence_ids: 64")
    daemon_processes.append(daemon)
    try:
        probe.publish({"id": "long", "text": LONG["digits"], "deadline_ms": 3000})
        probe.wait_event("long", "started", 30)
        time.sleep(26.0)  # ~1.3 s of speech a piece
        probe.publish({"id": "fire", "text": EMERGENCY, "priority": "emergency"})
        preempted = probe.wait_event("long", "preempted", 10)
        sentence = int(preempted["reason"].split("sentence ")[1].split()[0])
        assert sentence > 24, preempted  # pieces and their pauses: past its 12th piece
        probe.wait_event("fire", "finished", 30)
        probe.wait(lambda p: p.events_of("long").count("started") == 2, 20, "long resumed")
        assert probe.events_of("long") == ["queued", "started", "preempted", "started"], probe.events
        assert "fallback" not in [e["event"] for e in probe.events], probe.events
        daemon.signal(signal.SIGTERM)
        daemon.assert_clean_exit(15)
    finally:
        probe.close()
