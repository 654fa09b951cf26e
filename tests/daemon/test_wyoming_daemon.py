"""The Wyoming server and Home Assistant discovery inside the running daemon (issue 17)."""

from __future__ import annotations

import asyncio
import json
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("wyoming")
from test_homeassistant_discovery import retained
from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.client import AsyncTcpClient
from wyoming.error import Error
from wyoming.event import Event
from wyoming.tts import Synthesize

from edgetts.daemon.inbound.homeassistant.discovery import configs, node_id
from edgetts.engine import SynthesisConfig

from support.broker import Broker
from support.daemon import DaemonRig
from support.pcm import find, tone

pytestmark = pytest.mark.mqtt


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _rig(daemon_rig: Callable[..., DaemonRig], tmp_path: Path, **more: Any) -> tuple[DaemonRig, int]:
    port = _port()
    made = daemon_rig(
        extra=f"wyoming: {{enabled: true, uri: 'tcp://127.0.0.1:{port}', max_jobs: 1}}\n"
        "homeassistant: {discovery: true, prefix: hatest}\n",
        queue_extra=f"state_dir: {tmp_path / 'state'}",
        **more,
    )
    return made, port


@pytest.fixture()
def rig(daemon_rig: Callable[..., DaemonRig], tmp_path: Path) -> tuple[DaemonRig, int]:
    return _rig(daemon_rig, tmp_path)


async def _exchange(port: int, events: list[Event], last: str) -> list[Event]:
    async with AsyncTcpClient("127.0.0.1", port, read_timeout=30) as client:
        for event in events:
            await client.write_event(event)
        got = []
        while True:
            event = await client.read_event()
            assert event is not None
            got.append(event)
            if event.type in (last, "error"):
                return got


def test_wyoming_synthesizes_with_the_daemons_voice(rig: tuple[DaemonRig, int]) -> None:
    daemon, port = rig
    text = "Side lane speech. Second sentence."
    got = asyncio.run(_exchange(port, [Synthesize(text=text).event()], "audio-stop"))
    assert got[0].type == "audio-start" and got[-1].type == "audio-stop"
    pcm = b"".join(AudioChunk.from_event(e).audio for e in got if AudioChunk.is_type(e.type))
    want = b"".join(c.to_int16().tobytes() for c in daemon.voice.synthesize(text, SynthesisConfig()))
    assert pcm == want
    assert not any(e["id"] for e in daemon.probe.events)  # side speech is no announcement: no events


def test_announcement_audio_plays_through_the_queue_and_is_answered_played(rig: tuple[DaemonRig, int]) -> None:
    daemon, port = rig
    audio = tone(660, 0.8, rate=22050)
    ints = np.clip(audio * 32768.0, -32768, 32767).astype(np.int16)
    chunks = [
        AudioChunk(rate=22050, width=2, channels=1, audio=ints[i : i + 1024].tobytes()).event()
        for i in range(0, ints.size, 1024)
    ]
    got = asyncio.run(
        _exchange(port, [AudioStart(rate=22050, width=2, channels=1).event(), *chunks, AudioStop().event()], "played")
    )
    assert [e.type for e in got] == ["played"]
    # The device got it (its middle: the announcement's fades shape the ends) ...
    played = np.clip((ints.astype(np.float32) / np.float32(32768.0)) * 32767.0, -32767, 32767).astype(np.int16)
    assert find(daemon.capture.pcm(), played[600:-600]) >= 0
    # ... as an announcement of its own, with its events.
    daemon.probe.wait(lambda p: any(e["event"] == "finished" for e in p.events), what="its finished event")
    ids = [e["id"] for e in daemon.probe.events if e["event"] == "finished"]
    assert len(ids) == 1 and ids[0].startswith("wyoming-")
    assert daemon.probe.events_of(ids[0]) == ["queued", "started", "finished"]


def test_announcement_audio_that_is_cancelled_is_an_error(daemon_rig: Callable[..., DaemonRig], tmp_path: Path) -> None:
    # Paced like a sound card, so the 6 s announcement is still playing when it is cancelled.
    daemon, port = _rig(daemon_rig, tmp_path, audio_extra="realtime_pacing: true")
    ints = (tone(440, 6.0, rate=16000) * 32767).astype(np.int16)
    events = [
        AudioStart(rate=16000, width=2, channels=1).event(),
        AudioChunk(rate=16000, width=2, channels=1, audio=ints.tobytes()).event(),
        AudioStop().event(),
    ]

    async def run() -> list[Event]:
        task = asyncio.create_task(_exchange(port, events, "played"))
        deadline = time.monotonic() + 20
        while not any(e["event"] == "started" for e in daemon.probe.events) and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        daemon.probe.publish({"cmd": "cancel"}, topic=f"test/{daemon.probe.device}/control")
        return await task

    got = asyncio.run(run())
    assert got[-1].type == "error" and "cancelled" in Error.from_event(got[-1]).text, daemon.probe.events


def test_discovery_from_the_daemon_is_retained_with_its_state(rig: tuple[DaemonRig, int], mosquitto: Broker) -> None:
    daemon, _port = rig
    from edgetts.config import load_config

    config = load_config(daemon.config)
    want = set(configs(config))
    deadline = time.monotonic() + 15
    node = node_id(config)  # the broker outlives the test: other devices' configs are there too
    while set(got := retained(mosquitto, f"hatest/+/{node}/#")) != want and time.monotonic() < deadline:
        pass
    assert set(got) == want
    daemon.say("ha-1", "Hello.")
    state_topic = f"{config.base_topic}/homeassistant/state"
    deadline = time.monotonic() + 15
    state: dict[str, Any] = {}
    while state.get("last_announcement") != "ha-1" and time.monotonic() < deadline:
        raw = retained(mosquitto, state_topic, 0.3).get(state_topic)
        state = json.loads(raw) if raw else {}
    assert state["last_announcement"] == "ha-1" and state["degraded"] == {}


def test_announcement_audio_with_a_bad_chunk_is_refused_once_and_never_played(rig: tuple[DaemonRig, int]) -> None:
    daemon, port = rig
    ints = (tone(500, 0.3, rate=16000) * 32767).astype(np.int16).tobytes()
    events = [
        AudioStart(rate=16000, width=2, channels=1).event(),
        AudioChunk(rate=16000, width=2, channels=1, audio=ints).event(),
        AudioChunk(rate=22050, width=2, channels=1, audio=ints).event(),  # not what audio-start said
        AudioChunk(rate=16000, width=2, channels=1, audio=ints).event(),
        AudioStop().event(),
    ]
    got = asyncio.run(_exchange(port, events, "played"))
    assert [e.type for e in got] == ["error"]
    assert "differs from its audio-start" in Error.from_event(got[0]).text
    assert not daemon.probe.events and daemon.capture.pcm().size == 0


def test_satellite_listener_names_a_satellite_and_answers_pings_while_it_announces(
    daemon_rig: Callable[..., DaemonRig], tmp_path: Path
) -> None:
    """What Home Assistant's assist_satellite needs (checked against HA 2026.2's wyoming integration):
    `info` with a satellite on its own port (HA takes no TTS from a satellite's entry, so the TTS
    port's `info` names none), `run-satellite` taken quietly, and `pong` while an announcement
    plays: HA drops a satellite that is silent for 5 s, and `played` comes only after the audio."""
    from wyoming.info import Describe, Info
    from wyoming.ping import Ping
    from wyoming.satellite import RunSatellite

    port, sat_port = _port(), _port()
    daemon = daemon_rig(
        extra=f"wyoming: {{enabled: true, uri: 'tcp://127.0.0.1:{port}', "
        f"satellite_uri: 'tcp://127.0.0.1:{sat_port}', satellite_area: Hall}}\n"
        "homeassistant: {name: Front desk}\n",
        audio_extra="realtime_pacing: true",
    )
    tts_info = Info.from_event(asyncio.run(_exchange(port, [Describe().event()], "info"))[-1])
    assert tts_info.satellite is None and tts_info.tts[0].name == "edgetts"

    ints = (tone(520, 3.0, rate=22050) * 32767).astype(np.int16)

    async def announce() -> tuple[Info, list[tuple[str, float]]]:
        async with AsyncTcpClient("127.0.0.1", sat_port, read_timeout=30) as client:
            await client.write_event(RunSatellite().event())
            await client.write_event(Describe().event())
            got = await client.read_event()
            assert got is not None and Info.is_type(got.type), got
            await client.write_event(AudioStart(rate=22050, width=2, channels=1).event())
            for i in range(0, ints.size, 1024):
                await client.write_event(
                    AudioChunk(rate=22050, width=2, channels=1, audio=ints[i : i + 1024].tobytes()).event()
                )
            await client.write_event(AudioStop().event())
            sent = time.monotonic()
            answers: list[tuple[str, float]] = []
            await asyncio.sleep(1.0)  # playing by now (3 s of audio, paced)
            await client.write_event(Ping(text="hi").event())
            while not answers or answers[-1][0] not in ("played", "error"):
                event = await client.read_event()
                assert event is not None
                answers.append((event.type, time.monotonic() - sent))
            return Info.from_event(got), answers

    info, answers = asyncio.run(announce())
    assert info.satellite is not None and info.satellite.installed
    assert (info.satellite.name, info.satellite.area) == ("Front desk", "Hall")
    assert [kind for kind, _ in answers] == ["pong", "played"], answers
    assert answers[0][1] < 2.0 < answers[1][1], answers  # pong at once; played after the 3 s of audio
    played = np.clip((ints.astype(np.float32) / np.float32(32768.0)) * 32767.0, -32767, 32767).astype(np.int16)
    assert find(daemon.capture.pcm(), played[600:-600]) >= 0
    assert not [e for e in daemon.probe.events if e["event"] == "error"]
