"""`edgetts voices install` then `edgetts run`: the daemon speaks with the installed voices by their names
(the config's `voice.model`, a payload's `"voice"`), a failed install meanwhile leaves it speaking, and
`voices remove` of a voice it speaks with is refused with the reason.

The real daemon, the real mosquitto and the ALSA file plugin (support.alsa): the default voice is
served by the loopback mirror under a catalog name, so what was played can be compared sample for
sample with the same model loaded here; the second voice is a tiny generated German one.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from edgetts.engine import SynthesisConfig
from edgetts.voice.catalog import default_voice_path

from support.alsa import Capture
from support.broker import Broker
from support.daemon import DaemonProcess, config_yaml
from support.pcm import assert_played
from support.probe import Probe
from support.voice_mirror import catalog_key, served_mirror, tiny_voice

pytestmark = pytest.mark.mqtt

JOE = "en_US-joemirror-medium"
"""The packaged default voice, published by the mirror under a catalog name of its own."""
DE = "de_DE-tiny-medium"
FADE = int(22050 * 5 / 1000)


def edgetts(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "edgetts.cli", *args], capture_output=True, text=True, timeout=120, env=dict(os.environ)
    )


def test_installed_voices_speak_by_name_and_the_one_in_use_is_not_removed(
    mosquitto: Broker, alsa_capture: Capture, tmp_path: Path, daemon_processes: list[DaemonProcess]
) -> None:
    voices = tmp_path / "voices"
    with served_mirror(tmp_path / "mirror") as (mirror, server):
        joe = tmp_path / "gen-joe" / "joe.onnx"
        joe.parent.mkdir()
        shutil.copyfile(default_voice_path(), joe)
        shutil.copyfile(f"{default_voice_path()}.json", f"{joe}.json")
        mirror.add(JOE, joe)
        mirror.add(DE, tiny_voice(tmp_path / "gen-de", "de"))
        mirror.add("fr_FR-tiny-low", tiny_voice(tmp_path / "gen-fr", "fr"))
        extra = (
            f"voices:\n  base_url: {server.url}\n  dir: {voices}\n"
            f"  de:\n    model: {DE}\n    threads: 1\n    streaming: false\n"
        )
        config = tmp_path / "edgetts.yaml"
        config.write_text(config_yaml(mosquitto, "voices-e2e", voice_extra=f"model: {JOE}", extra=extra))
        done = edgetts("voices", "install", JOE, DE, "--config", str(config))
        assert done.returncode == 0, done.stderr
        assert done.stdout.splitlines() == [
            f"{JOE}\tinstalled\t{voices / JOE / (JOE + '.onnx')}",
            f"{DE}\tinstalled\t{voices / DE / (DE + '.onnx')}",
        ]

        daemon = DaemonProcess(config, alsa_capture.env, tmp_path / "daemon.log").start()
        daemon_processes.append(daemon)
        probe = Probe(mosquitto, "test", "voices-e2e")
        try:
            status = probe.wait_status(lambda s: s["state"] == "online", 90)
            assert status["degraded"] == [] and sorted(status["voices"]) == ["de", "default"], status
            assert f"voice default loaded from {voices / JOE / (JOE + '.onnx')}" in daemon.output()

            # the installed voice's name in a payload: the configured voice that speaks with it
            text = "The next train to arrive at platform two is the 9:42 service to Edinburgh Waverley."
            probe.publish({"id": "joe-1", "text": text, "voice": JOE})
            probe.wait_event("joe-1", "finished", 60)
            from edgetts.voice.catalog import load_voice

            reference = load_voice(voices / JOE / f"{JOE}.onnx", threads=1, lock=True)
            expected = np.concatenate(
                [c.to_int16() for c in reference.synthesize(text, SynthesisConfig(noise_scale=0, noise_w=0))]
            )
            played_to = assert_played(alsa_capture.pcm(), expected, FADE) + expected.size

            probe.publish({"id": "de-1", "text": "Der Zug nach Berlin fährt ab.", "voice": DE})
            probe.wait_event("de-1", "finished", 60)
            german = alsa_capture.pcm()[played_to:].astype(np.float64)
            assert german.size > 22050 // 2 and np.sqrt(np.mean(german**2)) > 300  # the tiny voice's tone

            # a failed install meanwhile: one line, nothing in the folder, the daemon speaking on
            before = sorted(p.name for p in voices.iterdir())
            server.fault(catalog_key("fr_FR-tiny-low", ".onnx"), "truncate")
            failed = edgetts("voices", "install", "fr_FR-tiny-low", "--config", str(config))
            assert failed.returncode == 1 and "is truncated" in failed.stderr, failed.stderr
            assert sorted(p.name for p in voices.iterdir()) == before
            probe.publish({"id": "joe-2", "text": text})
            probe.wait_event("joe-2", "finished", 60)
            assert_played(alsa_capture.pcm(), expected, FADE, played_to + german.size)

            # what the running config speaks with is not removed
            for name, key in ((JOE, "voice/model"), (DE, "voices/de/model")):
                refused = edgetts("voices", "remove", name, "--config", str(config))
                assert refused.returncode == 1, refused.stdout
                assert refused.stderr.strip() == (
                    f"edgetts: error: {name} is in use by {key} in {config}: change the config (and reload) first"
                )
                assert (voices / name / f"{name}.onnx").is_file()

            daemon.signal(signal.SIGTERM)
            daemon.assert_clean_exit(15)
            assert "Traceback" not in daemon.output()
        finally:
            probe.close()
