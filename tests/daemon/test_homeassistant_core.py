"""edgetts under a real Home Assistant core (issue 17): `scripts/test.sh --ha`.

Two releases, each on 127.0.0.1, onboarded and set up through its REST API as a person
would in the UI (the MQTT integration on the test mosquitto, the Wyoming integration on
the daemon's Wyoming server):

* 2024.3.3, the newest release for Debian 12's Python 3.11, from its own venv
  (scripts/ha-venv.sh; its python is $EDGETTS_HA_PYTHON): a release without MQTT notify
  and without assist_satellite;
* 2026.2.3, the newest release for Python 3.13, in a Debian 13 chroot (scripts/ha-chroot.sh;
  its python is $EDGETTS_HA_NEW_PYTHON): MQTT notify, and assist_satellite.announce
  through the daemon's satellite listener.

Each is skipped without its variable.
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
from edgetts.daemon.inbound.homeassistant.discovery import node_id
from edgetts.engine import SynthesisConfig
from edgetts.voice.catalog import load_voice

from support.broker import Broker
from support.daemon import DaemonRig
from support.homeassistant import HomeAssistant
from support.pcm import find

RELEASES = {"2024.3.3": "EDGETTS_HA_PYTHON", "2026.2.3": "EDGETTS_HA_NEW_PYTHON"}
pytestmark = pytest.mark.mqtt


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _start(release: str, folder: Path) -> Iterator[HomeAssistant]:
    python = os.environ.get(RELEASES[release])
    if not python:
        pytest.skip(f"Home Assistant {release}: needs scripts/test.sh --ha (${RELEASES[release]})")
    ha = HomeAssistant(python, folder)
    try:
        ha.wait_up()
        ha.onboard()
        yield ha
    finally:
        ha.close()


@pytest.fixture(params=list(RELEASES))
def hass(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[HomeAssistant]:
    yield from _start(request.param, tmp_path / "hass")


@pytest.fixture()
def new_hass(tmp_path: Path) -> Iterator[HomeAssistant]:
    yield from _start("2026.2.3", tmp_path / "hass")


def _expected(text: str) -> np.ndarray:
    voice = load_voice("default", threads=1)
    return np.concatenate([c.to_int16() for c in voice.synthesize(text, SynthesisConfig(noise_scale=0, noise_w=0))])


def _announced(ints: np.ndarray) -> np.ndarray:
    """``ints`` as the daemon plays received announcement audio: read as x/32768, written as x*32767."""
    return np.clip(ints.astype(np.float32) / np.float32(32768.0) * 32767.0, -32767, 32767).astype(np.int16)


def _wav(raw: bytes) -> tuple[tuple[int, int, int], np.ndarray]:
    """(rate, width, channels) and the samples of a WAV from HA's TTS.  Newer releases stream it:
    the header is sent before the audio and says 0 frames, so the samples are all after `data`."""
    with wave.open(io.BytesIO(raw)) as wav:
        params = (wav.getframerate(), wav.getsampwidth(), wav.getnchannels())
    start = raw.index(b"data", 12) + 8
    return params, np.frombuffer(raw[start : start + (len(raw) - start) // 2 * 2], dtype="<i2")


def test_home_assistant_sees_the_device_announces_and_speaks_through_wyoming(
    daemon_rig: Callable[..., DaemonRig],
    hass: HomeAssistant,
    mosquitto: Broker,
    tmp_path: Path,
    test_voices: dict[str, Path],
) -> None:
    port = _port()
    spare = tmp_path / "spare.onnx"  # missing at start: degraded until it is there and reloaded
    rig = daemon_rig(
        real_voices=True,
        online_timeout=60,
        audio_extra="realtime_pacing: true",
        extra=f"voices:\n  spare: {{model: {spare}}}\n"
        f"wyoming: {{enabled: true, uri: 'tcp://127.0.0.1:{port}'}}\n"
        "homeassistant: {discovery: true}\n",
        queue_extra=f"state_dir: {tmp_path / 'state'}",
    )
    node = node_id(load_config(rig.config))

    assert hass.flow("mqtt", {"broker": "127.0.0.1", "port": mosquitto.port})["type"] == "create_entry"
    wyoming = hass.flow("wyoming", {"host": "127.0.0.1", "port": port})
    assert wyoming["type"] == "create_entry", wyoming

    # The device and its entities appear, available, the degraded sensor on with the reason.
    wanted = {
        f"text.{node}_message",
        f"sensor.{node}_state",
        f"sensor.{node}_queue_depth",
        f"sensor.{node}_last_announcement",
        f"binary_sensor.{node}_degraded",
        f"button.{node}_test",
        f"button.{node}_stop",
        f"select.{node}_voice",
        "tts.edgetts",
    }
    states = hass.wait_state(
        lambda s: wanted <= set(s) and s[f"binary_sensor.{node}_degraded"]["state"] == "on",
        what="the device's entities",
    )
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
    hass.wait_state(
        lambda s: s[f"sensor.{node}_last_announcement"]["state"] not in ("unknown", ""), what="the last announcement"
    )

    # Its stop button ends what plays (a control message from the button's payload).
    long_text = " ".join(f"This is sentence {n} of a long announcement." for n in range(1, 9))
    rig.probe.publish({"id": "long-1", "text": long_text})
    rig.probe.wait_event("long-1", "started", 60)
    hass.call("button", "press", {"entity_id": f"button.{node}_stop"})
    assert rig.probe.wait_event("long-1", "cancelled", 30)["reason"] == "stopped from mqtt"

    # Home Assistant's Wyoming TTS through edgetts returns the voice's audio.
    url = hass.request(
        "POST",
        "/api/tts_get_url",
        {"engine_id": "tts.edgetts", "message": "Platform two.", "options": {"preferred_format": "wav"}},
    )
    params, audio = _wav(hass.request("GET", url["path"]))
    assert params == (22050, 2, 1)
    assert np.array_equal(audio, _expected("Platform two."))

    # The degraded sensor follows the voice: fixed and reloaded, it goes off.
    shutil.copy(test_voices["ok"], spare)
    shutil.copy(test_voices["ok"].with_name(test_voices["ok"].name + ".json"), spare.with_name("spare.onnx.json"))
    rig.daemon.on_signal(signal.SIGHUP)
    hass.wait_state(lambda s: s[f"binary_sensor.{node}_degraded"]["state"] == "off", 90, "degraded off")

    # And offline when the daemon stops (its status, as its Last Will would say).
    rig.stop()
    hass.wait_state(lambda s: s[f"sensor.{node}_state"]["state"] == "unavailable", 30, "unavailable")


def test_home_assistant_announces_through_notify_and_its_assist_satellite(
    daemon_rig: Callable[..., DaemonRig], new_hass: HomeAssistant, mosquitto: Broker, tmp_path: Path
) -> None:
    hass = new_hass
    port, sat_port = _port(), _port()
    rig = daemon_rig(
        real_voices=True,
        online_timeout=60,
        extra=f"wyoming: {{enabled: true, uri: 'tcp://127.0.0.1:{port}', "
        f"satellite_uri: 'tcp://127.0.0.1:{sat_port}', satellite_area: Hall}}\n"
        "homeassistant: {discovery: true, name: Front desk}\n",
        queue_extra=f"state_dir: {tmp_path / 'state'}",
    )
    node = node_id(load_config(rig.config))
    assert hass.flow("mqtt", {"broker": "127.0.0.1", "port": mosquitto.port})["type"] == "create_entry"
    assert hass.flow("wyoming", {"host": "127.0.0.1", "port": port})["type"] == "create_entry"
    satellite = hass.flow("wyoming", {"host": "127.0.0.1", "port": sat_port})
    assert satellite["type"] == "create_entry" and satellite["title"] == "Front desk", satellite

    states = hass.wait_state(
        lambda s: (
            s.get(f"notify.{node}_announce", {}).get("state", "unavailable") != "unavailable"
            and "tts.edgetts" in s
            and any(k.startswith("assist_satellite.") for k in s)
        ),
        what="notify (available) and the satellite",
    )
    entity = next(k for k in states if k.startswith("assist_satellite."))
    assert states[entity]["state"] == "idle", states[entity]

    # MQTT notify, the entity newer releases show for "send a message to a device".
    text = "Hello from the notify entity."
    hass.call("notify", "send_message", {"entity_id": f"notify.{node}_announce", "message": text})
    rig.probe.wait(lambda p: any(e["event"] == "finished" for e in p.events), 60, "the notify announcement")
    assert text in rig.said
    assert find(rig.capture.pcm(), _expected(text)[400:-400]) >= 0

    # assist_satellite.announce: HA renders the media (here its own TTS through edgetts's Wyoming
    # server), converts it with ffmpeg and streams it to the satellite, which plays it through the
    # queue as an announcement of its own and answers `played`.
    url = hass.request(
        "POST",
        "/api/tts_get_url",
        {"engine_id": "tts.edgetts", "message": "Mind the gap.", "options": {"preferred_format": "wav"}},
    )
    before = rig.capture.pcm().size
    finished = len([e for e in rig.probe.events if e["event"] == "finished"])
    hass.call(
        "assist_satellite", "announce", {"entity_id": entity, "media_id": hass.url + url["path"], "preannounce": False}
    )
    rig.probe.wait(
        lambda p: len([e for e in p.events if e["event"] == "finished"]) > finished, 60, "the satellite's announcement"
    )
    ids = [e["id"] for e in rig.probe.events if e["event"] == "finished"]
    assert ids[-1].startswith("wyoming-"), ids
    assert find(rig.capture.pcm(), _announced(_expected("Mind the gap."))[600:-600], before) >= 0
    # And a message: HA speaks it with the satellite's pipeline's TTS.  A fresh install's
    # pipeline has none (it was made before the Wyoming entry), so set it to edgetts's, as a
    # person would under Settings > Voice assistants.
    pipelines = hass.websocket({"type": "assist_pipeline/pipeline/list"})[0]["result"]
    pipeline = next(p for p in pipelines["pipelines"] if p["id"] == pipelines["preferred_pipeline"])
    fields = {
        k: pipeline[k]
        for k in (
            "conversation_engine",
            "conversation_language",
            "language",
            "name",
            "stt_engine",
            "stt_language",
            "wake_word_entity",
            "wake_word_id",
        )
    }
    updated = hass.websocket(
        {
            "type": "assist_pipeline/pipeline/update",
            "pipeline_id": pipeline["id"],
            **fields,
            "tts_engine": "tts.edgetts",
            "tts_language": "en_US",
            "tts_voice": "default",
        }
    )
    assert updated[0]["success"], updated
    before = rig.capture.pcm().size
    text = "The shop closes in ten minutes."
    hass.call("assist_satellite", "announce", {"entity_id": entity, "message": text, "preannounce": False})
    rig.probe.wait(
        lambda p: len([e for e in p.events if e["event"] == "finished"]) > finished + 1, 60, "the satellite's message"
    )
    assert find(rig.capture.pcm(), _announced(_expected(text))[600:-600], before) >= 0
    assert "Did not receive played event" not in hass.output()
    assert "deprecated option `object_id`" not in hass.output()  # it stops working in 2026.4
