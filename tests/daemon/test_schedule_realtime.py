"""A scheduled announcement starts on its second on a sound card with a real clock (issue 44).

The real daemon (subprocess, real default voice, real mosquitto) plays into the paced sink
(tools/paced_sink.py: a PulseAudio null sink consumed at its rate).  A reload gives it an entry due
a few seconds later; its speech is rendered ahead into the phrase cache and started with the
`play_at` machinery.  Its first sample is found in the recording by cross-correlation with the very
samples the daemon speaks (the voice here, whole sentences, noise seeded from the occurrence's id,
as edgetts.daemon.playout.sync does), and must be within 20 ms of the second; what the daemon
reported of it (`started`: `sync_error_ms`, `cached`, `schedule`) must agree with the recording.
"""

from __future__ import annotations

import signal
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pytest

from edgetts.config import Config, VoiceSettings
from edgetts.daemon.assets import load_configured_voice
from edgetts.daemon.playout import sync
from edgetts.daemon.playout.phrase_cache import voice_synthesis_config

from support.broker import Broker
from support.daemon import DaemonProcess, config_yaml
from support.probe import Probe
from tools.onsets import match
from tools.paced_sink import PacedSink

pytestmark = [pytest.mark.mqtt, pytest.mark.realtime]

RATE = 22050
TEXT = "The last train to the harbour leaves in five minutes."
HEAD_S = 0.3
BUDGET_MS = 20.0
"""The issue's promise for a scheduled start: its first sample within 20 ms of its second."""


def _reference(name: str) -> np.ndarray:
    """What the daemon of config_yaml speaks for the occurrence ``name``: gain 1 (no loudness target)."""
    settings = VoiceSettings(noise_scale=0, noise_w=0, threads=1, streaming=False)
    voice = load_configured_voice(settings, Config().text_options())
    seeded = sync.seeded(voice_synthesis_config(settings), name)
    return np.concatenate([c.audio for c in voice.synthesize(TEXT, seeded, stream=False)]).astype(np.float32)


def test_a_scheduled_announcement_starts_within_20_ms_of_its_second(
    mosquitto: Broker, paced_sink: PacedSink, tmp_path: Path, daemon_processes: list[DaemonProcess]
) -> None:
    cache = f"cache:\n  dir: {tmp_path / 'cache'}\n"
    config = tmp_path / "edgetts.yaml"
    base = config_yaml(mosquitto, "schedule-rt", queue_extra=f"state_dir: {tmp_path / 'state'}", extra=cache)
    config.write_text(base)
    probe = Probe(mosquitto, "test", "schedule-rt")
    daemon = DaemonProcess(config, dict(paced_sink.env), tmp_path / "daemon.log").start()
    daemon_processes.append(daemon)
    try:
        probe.wait_status(lambda s: s["state"] == "online", 90)
        at = float(int(time.time()) + 12)  # (rendered 10 s before: the automatic prepare_s here)
        name = f"soon@{datetime.fromtimestamp(at, timezone.utc):%Y-%m-%dT%H:%M:%SZ}"
        hms = datetime.fromtimestamp(at, timezone.utc).strftime("%H:%M:%S")
        entry = f'    - id: soon\n      at: "{hms}"\n      timezone: UTC\n      text: "{TEXT}"\n'
        config.write_text(f"{base}schedule:\n  entries:\n{entry}")
        with paced_sink.record() as rec:
            daemon.signal(signal.SIGHUP)
            # (the reload applied, well before its second: else the machine was too busy to tell)
            probe.wait_status(lambda s: (s.get("schedule") or {}).get("at") == at, 8)
            started = probe.wait_event(name, "started", 30)
            finished = probe.wait_event(name, "finished", 30)
            time.sleep(0.3)
            pcm = rec.stop()
        assert "Traceback" not in daemon.output()
    finally:
        probe.close()
    ref = _reference(name)
    channel = pcm if pcm.ndim == 1 else pcm[:, 0]
    # Its first HEAD_S say where it started (a dropout later, counted in `finished`, cannot move that).
    head = ref[: int(HEAD_S * RATE)] * 32767.0
    onset, score = match(channel, head, rec.index_at_unix(at), RATE, search_s=0.2)
    error_ms = (rec.unix_at(onset) - at) * 1000.0
    said = started.get("sync_error_ms")
    context = f"heard {error_ms:+.2f} ms from its second (score {score:.3f}); it said {started}; then {finished}"
    print(context)
    assert score > 0.9, context  # the very samples: rendered ahead with its id's noise
    assert started["schedule"] == "soon" and started["cached"] is True, context
    assert abs(error_ms) <= BUDGET_MS, context
    assert isinstance(said, float) and "late_ms" not in started, context
    assert abs(error_ms - said) <= BUDGET_MS, context  # what it reported is what was heard
