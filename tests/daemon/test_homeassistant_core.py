"""edgetts under a real Home Assistant core (issue 17): `scripts/test.sh --ha`.

Home Assistant 2024.3.3 (the newest release for Python 3.11) runs from its own venv
(scripts/ha-venv.sh, whose python is $EDGETTS_HA_PYTHON) on 127.0.0.1, onboarded and set up
through its REST API as a person would in the UI: the MQTT integration on the test mosquitto,
the Wyoming integration on the daemon's Wyoming server.  Skipped without $EDGETTS_HA_PYTHON.
"""

from __future__ import annotations

import io
import os
import shutil
import signal
import socket
import wave
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest

from edgetts.config import load_config
from edgetts.daemon.homeassistant.discovery import node_id
from edgetts.engine import SynthesisConfig
from edgetts.voice.catalog import load_voice

from support.broker import Broker
from support.daemon import DaemonRig
from support.homeassistant import HomeAssistant
from support.pcm import find

HA_PYTHON = os.environ.get("EDGETTS_HA_PYTHON")
pytestmark = [pytest.mark.mqtt, pytest.mark.skipif(not HA_PYTHON, reason="needs scripts/test.sh --ha")]


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture()
def hass(tmp_path: Path) -> Iterator[HomeAssistant]:
    assert HA_PYTHON
    ha = HomeAssistant(HA_PYTHON, tmp_path / "hass")
    try:
        ha.wait_up()
        ha.onboard()
        yield ha
    finally:
        ha.close()


def _expected(text: str) -> np.ndarray:
    voice = load_voice("default", threads=1)
    return np.concatenate([c.to_int16() for c in voice.synthesize(text, SynthesisConfig(noise_scale=0, noise_w=0))])


def test_home_assistant_sees_the_device_announces_and_speaks_through_wyoming(
        daemon_rig: Callable[..., DaemonRig], hass: HomeAssistant, mosquitto: Broker, tmp_path: Path,
        test_voices: dict[str, Path]) -> None:
    port = _port()
    spare = tmp_path / "spare.onnx"  # missing at start: degraded until it is there and reloaded
    rig = daemon_rig(real_voices=True, online_timeout=60, audio_extra="realtime_pacing: true",
                     extra=f"voices:\n  spare: {{model: {spare}}}\n"
                           f"wyoming: {{enabled: true, uri: 'tcp://127.0.0.1:{port}'}}\n"
                           "homeassistant: {discovery: true}\n",
                     queue_extra=f"state_dir: {tmp_path / 'state'}")
    node = node_id(load_config(rig.config))

    assert hass.flow("mqtt", {"broker": "127.0.0.1", "port": mosquitto.port})["type"] == "create_entry"
    wyoming = hass.flow("wyoming", {"host": "127.0.0.1", "port": port})
    assert wyoming["type"] == "create_entry", wyoming

    # The device and its entities appear, available, the degraded sensor on with the reason.
    wanted = {f"text.{node}_message", f"sensor.{node}_state", f"sensor.{node}_queue_depth",
              f"sensor.{node}_last_announcement", f"binary_sensor.{node}_degraded", f"button.{node}_test",
              f"button.{node}_stop", f"select.{node}_voice", "tts.edgetts"}
    states = hass.wait_state(lambda s: wanted <= set(s) and s[f"binary_sensor.{node}_degraded"]["state"] == "on",
                             what="the device's entities")
    degraded = states[f"binary_sensor.{node}_degraded"]["attributes"]
    assert "spare" in degraded.get("voice", ""), degraded
    assert states[f"sensor.{node}_queue_depth"]["state"] == "0"
    assert states[f"select.{node}_voice"]["attributes"]["options"] == ["default", "spare"]

    # The announce entity's service makes edgetts play the message.
    text = "Hello from Home Assistant."
    before = rig.capture.pcm().size
    hass.call("text", "set_value", {"entity_id": f"text.{node}_message", "value": text})
    rig.probe.wait(lambda p: any(e["event"] == "finished" for e in p.events), 60, "the announcement")
    assert text in rig.said
    assert find(rig.capture.pcm(), _expected(text)[400:-400], before) >= 0
    hass.wait_state(lambda s: s[f"sensor.{node}_last_announcement"]["state"] not in ("unknown", ""),
                    what="the last announcement")

    # Its stop button ends what plays (a control message from the button's payload).
    long_text = " ".join(f"This is sentence {n} of a long announcement." for n in range(1, 9))
    rig.probe.publish({"id": "long-1", "text": long_text})
    rig.probe.wait_event("long-1", "started", 60)
    hass.call("button", "press", {"entity_id": f"button.{node}_stop"})
    assert rig.probe.wait_event("long-1", "cancelled", 30)["reason"] == "stopped from mqtt"

    # Home Assistant's Wyoming TTS through edgetts returns the voice's audio.
    url = hass.request("POST", "/api/tts_get_url", {"engine_id": "tts.edgetts", "message": "Platform two.",
                                                    "options": {"preferred_format": "wav"}})
    with wave.open(io.BytesIO(hass.request("GET", url["path"]))) as wav:
        assert (wav.getframerate(), wav.getsampwidth(), wav.getnchannels()) == (22050, 2, 1)
        audio = np.frombuffer(wav.readframes(wav.getnframes()), dtype="<i2")
    assert np.array_equal(audio, _expected("Platform two."))

    # The degraded sensor follows the voice: fixed and reloaded, it goes off.
    shutil.copy(test_voices["ok"], spare)
    shutil.copy(test_voices["ok"].with_name(test_voices["ok"].name + ".json"), spare.with_name("spare.onnx.json"))
    rig.daemon.on_signal(signal.SIGHUP)
    hass.wait_state(lambda s: s[f"binary_sensor.{node}_degraded"]["state"] == "off", 90, "degraded off")

    # And offline when the daemon stops (its status, as its Last Will would say).
    rig.stop()
    hass.wait_state(lambda s: s[f"sensor.{node}_state"]["state"] == "unavailable", 30, "unavailable")


