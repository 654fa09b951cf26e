"""The Wyoming TTS server (issue 17), spoken to with the `wyoming` package's own client.

The server runs on the real default voice through the real side synthesis; the audio a
client gets is compared with `edgetts synth`'s WAV sample for sample.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import wave
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("wyoming")
from wyoming.audio import AudioChunk, AudioStart
from wyoming.client import AsyncTcpClient
from wyoming.error import Error
from wyoming.event import Event
from wyoming.info import Describe, Info
from wyoming.tts import (
    Synthesize,
    SynthesizeChunk,
    SynthesizeStart,
    SynthesizeStop,
    SynthesizeVoice,
)

from edgetts.config import parse_config
from edgetts.daemon.assets import Loading, VoiceRuntime, build_assets, load_configured_voice
from edgetts.daemon.inbound.wyoming.server import WyomingServer
from edgetts.daemon.inbound.wyoming.wire import Limits
from edgetts.daemon.playout.client_synthesis import ClientSynthesis

from support.paths import ROOT

CONFIG = """
voice: {name: joe, noise_scale: 0, noise_w: 0, streaming: false, threads: 2}
voices:
  tiny: {model: %s, threads: 1}
"""
TEXT = "Hello there. The next train to the city centre leaves from platform two."


class CountingVoice:
    """The real voice, counting the chunks it yields (what a closed stream still costs)."""

    def __init__(self, voice: Any) -> None:
        self._voice = voice
        self.yielded = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._voice, name)

    @property
    def name(self) -> str:
        return str(self._voice.name)

    @property
    def sample_rate(self) -> int:
        return int(self._voice.sample_rate)

    def synthesize(self, text: Any, config: Any = None) -> Iterator[Any]:
        for chunk in self._voice.synthesize(text, config):
            self.yielded += 1
            yield chunk


@pytest.fixture(scope="module")
def assets(test_voices: dict[str, Path]) -> Any:
    config = parse_config(CONFIG % test_voices["multi"])
    built = build_assets(config, Loading(load_configured_voice, VoiceRuntime(), 2))
    assert set(built.voices) == {"joe", "tiny"}, built.voice_errors
    return built


@pytest.fixture(scope="module")
def server(assets: Any) -> Iterator[WyomingServer]:
    side = ClientSynthesis(limit=2, backlog=16)
    side.start_worker()
    srv = WyomingServer("tcp://127.0.0.1:0", lambda: assets, side, limits=Limits(4096, 1 << 20))
    srv.start()
    yield srv
    srv.close()
    side.close()


def _client(server: WyomingServer) -> AsyncTcpClient:
    return AsyncTcpClient("127.0.0.1", server.address[1], read_timeout=60)


async def _until(client: AsyncTcpClient, last: str) -> list[Event]:
    events = []
    while True:
        event = await client.read_event()
        assert event is not None, f"connection closed before {last}: {[e.type for e in events]}"
        events.append(event)
        if event.type in (last, "error"):
            return events


def _pcm(events: list[Event]) -> bytes:
    return b"".join(AudioChunk.from_event(e).audio for e in events if AudioChunk.is_type(e.type))


def _synth_wav(tmp_path: Path, text: str) -> bytes:
    out = tmp_path / "synth.wav"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "edgetts.cli",
            "synth",
            text,
            "-o",
            str(out),
            "--threads",
            "2",
            "--noise-scale",
            "0",
            "--noise-w",
            "0",
        ],
        check=True,
        cwd=ROOT,
        capture_output=True,
    )
    with wave.open(str(out), "rb") as wav:
        return wav.readframes(wav.getnframes())


def test_describe_lists_voices_with_language_and_speakers(server: WyomingServer) -> None:
    async def run() -> Info:
        async with _client(server) as client:
            await client.write_event(Describe().event())
            return Info.from_event((await _until(client, "info"))[-1])

    info = asyncio.run(run())
    program = info.tts[0]
    assert program.supports_synthesize_streaming
    voices = {v.name: v for v in program.voices}
    assert set(voices) == {"joe", "tiny"}
    assert voices["joe"].languages == ["en_US"]
    assert voices["joe"].speakers is None
    assert [s.name for s in voices["tiny"].speakers or []] == ["a", "b"]


def test_synthesize_equals_edgetts_synth(server: WyomingServer, tmp_path: Path) -> None:
    async def run() -> list[Event]:
        async with _client(server) as client:
            await client.write_event(Synthesize(text=TEXT, voice=SynthesizeVoice(name="joe")).event())
            return await _until(client, "audio-stop")

    events = asyncio.run(run())
    assert [e.type for e in events][0] == "audio-start"
    start = AudioStart.from_event(events[0])
    assert (start.rate, start.width, start.channels) == (22050, 2, 1)
    assert events[-1].type == "audio-stop"
    assert sum(AudioChunk.is_type(e.type) for e in events) >= 2  # sentence by sentence, not one blob
    assert _pcm(events) == _synth_wav(tmp_path, TEXT)


def test_streaming_synthesize_speaks_each_sentence_as_it_completes(server: WyomingServer, tmp_path: Path) -> None:
    pieces = ["Hello ", "there. The next train to the city ", "centre leaves from platform two."]

    async def run() -> tuple[list[Event], list[Event]]:
        async with _client(server) as client:
            await client.write_event(SynthesizeStart(voice=SynthesizeVoice(name="joe")).event())
            await client.write_event(SynthesizeChunk(text=pieces[0]).event())
            await client.write_event(SynthesizeChunk(text=pieces[1]).event())
            # The first sentence is complete: its audio comes before the text has ended.
            early = await _until(client, "audio-chunk")
            await client.write_event(SynthesizeChunk(text=pieces[2]).event())
            await client.write_event(Synthesize(text="".join(pieces)).event())  # ignored while streaming
            await client.write_event(SynthesizeStop().event())
            return early, await _until(client, "synthesize-stopped")

    early, rest = asyncio.run(run())
    assert [e.type for e in early] == ["audio-start", "audio-chunk"]
    types = [e.type for e in rest]
    assert types[-2:] == ["audio-stop", "synthesize-stopped"]
    assert "audio-start" not in types and "error" not in types
    expected = _synth_wav(tmp_path, "Hello there.") + _synth_wav(
        tmp_path, "The next train to the city centre leaves from platform two."
    )
    assert _pcm(early + rest) == expected


def test_eight_clients_at_once_each_get_their_own_audio(server: WyomingServer, assets: Any) -> None:
    texts = [f"Announcement number {n} for platform {n + 1}." for n in range(8)]
    voice = assets.voices["joe"]
    from edgetts.engine import SynthesisConfig

    expected = [
        b"".join(c.to_int16().tobytes() for c in voice.synthesize(t, SynthesisConfig(noise_scale=0, noise_w=0)))
        for t in texts
    ]

    async def one(text: str) -> bytes:
        async with _client(server) as client:
            await client.write_event(Synthesize(text=text, voice=SynthesizeVoice(name="joe")).event())
            events = await _until(client, "audio-stop")
            assert events[-1].type == "audio-stop", events[-1]
            return _pcm(events)

    async def run() -> list[bytes]:
        return list(await asyncio.gather(*(one(t) for t in texts)))

    got = asyncio.run(run())
    for text, audio, want in zip(texts, got, expected):
        assert audio == want, text


def test_client_killed_mid_stream_costs_nothing_more(assets: Any) -> None:
    counting = CountingVoice(assets.voices["joe"])
    long_text = " ".join(f"This is sentence number {n} of a very long announcement." for n in range(12))
    side = ClientSynthesis(limit=2, backlog=4)
    side.start_worker()
    view = type(assets)(**{**assets.__dict__, "voices": {**assets.voices, "joe": counting}})
    srv = WyomingServer("tcp://127.0.0.1:0", lambda: view, side)
    srv.start()
    try:

        async def run() -> list[Event]:
            client = _client(srv)
            await client.connect()
            await client.write_event(Synthesize(text=long_text, voice=SynthesizeVoice(name="joe")).event())
            await _until(client, "audio-chunk")
            client._writer.transport.abort()  # type: ignore[union-attr]  # killed: no goodbye
            async with _client(srv) as other:
                await other.write_event(Synthesize(text="Still here.", voice=SynthesizeVoice(name="tiny")).event())
                return await _until(other, "audio-stop")

        other_events = asyncio.run(run())
        assert other_events[-1].type == "audio-stop" and _pcm(other_events)
        # Give a forgotten stream every chance to run on before counting what it cost.
        asyncio.run(asyncio.sleep(1.0))
        assert counting.yielded < 12, "the killed client's text was synthesized to the end"
    finally:
        srv.close()
        side.close()


def test_garbage_and_oversized_headers_get_errors_and_hurt_no_one(server: WyomingServer) -> None:
    async def raw(data: bytes) -> tuple[list[Event], bool]:
        client = _client(server)
        await client.connect()
        assert client._writer is not None
        client._writer.write(data)
        await client._writer.drain()
        events: list[Event] = []
        closed = False
        for _ in range(3):
            try:
                event = await asyncio.wait_for(client.read_event(), 5)
            except asyncio.TimeoutError:
                break
            if event is None:
                closed = True
                break
            events.append(event)
            if event.type == "info":
                break
        await client.disconnect()
        return events, closed

    async def run() -> dict[str, tuple[list[Event], bool]]:
        cases = {
            "garbage": b"\x00\xff\xfe not json at all\n" + b'{"type": "describe"}\n',
            "array": b'[1, 2, 3]\n{"type": "describe"}\n',
            "missing_text": b'{"type": "synthesize", "data": {}}\n{"type": "describe"}\n',
            "long_header": b'{"type": "describe", "pad": "' + b"x" * 10000 + b'"}\n',
            "huge_payload": b'{"type": "audio-chunk", "payload_length": 999999999}\n',
            "huge_data": b'{"type": "synthesize", "data_length": 99999999}\n',
        }
        results = await asyncio.gather(*(raw(data) for data in cases.values()))
        return dict(zip(cases, results))

    results = asyncio.run(run())
    for name in ("garbage", "array", "missing_text"):
        events, closed = results[name]
        assert [e.type for e in events] == ["error", "info"], (name, events)  # still served after the error
        assert Error.from_event(events[0]).code == "bad-event"
    for name in ("long_header", "huge_payload", "huge_data"):
        events, closed = results[name]
        assert [e.type for e in events] == ["error"] and closed, (name, events)
    # And a well-behaved client after all that:
    test_describe_lists_voices_with_language_and_speakers(server)


def test_unknown_voice_and_bad_ssml_are_errors(server: WyomingServer) -> None:
    async def run(event: Event) -> Event:
        async with _client(server) as client:
            await client.write_event(event)
            return (await _until(client, "audio-stop"))[-1]

    unknown = asyncio.run(run(Synthesize(text="Hi.", voice=SynthesizeVoice(name="nobody")).event()))
    assert unknown.type == "error" and Error.from_event(unknown).code == "unknown-voice"
    speaker = asyncio.run(run(Synthesize(text="Hi.", voice=SynthesizeVoice(name="tiny", speaker="zz")).event()))
    assert speaker.type == "error" and "speaker" in Error.from_event(speaker).text
    ssml = asyncio.run(run(Synthesize(text="<speak><prosody>Hi.</speak>").event()))
    assert ssml.type == "error" and "SSML" in Error.from_event(ssml).text
    by_language = asyncio.run(run(Synthesize(text="Hi.", voice=SynthesizeVoice(language="en")).event()))
    assert by_language.type == "audio-stop"


def test_speakers_pick_different_audio(server: WyomingServer) -> None:
    async def run(speaker: str) -> bytes:
        async with _client(server) as client:
            await client.write_event(
                Synthesize(text="One two.", voice=SynthesizeVoice(name="tiny", speaker=speaker)).event()
            )
            return _pcm(await _until(client, "audio-stop"))

    a, b = asyncio.run(run("a")), asyncio.run(run("b"))
    assert a and b
    assert np.frombuffer(a, np.int16).shape == np.frombuffer(b, np.int16).shape


def test_max_jobs_and_backlog_cap_syntheses_then_busy(assets: Any) -> None:
    side = ClientSynthesis(limit=4, backlog=4)
    side.start_worker()
    srv = WyomingServer("tcp://127.0.0.1:0", lambda: assets, side, max_jobs=1, backlog=1)
    srv.start()
    request = Synthesize(
        text=" ".join(f"Sentence number {n} of a long one." for n in range(6)), voice=SynthesizeVoice(name="joe")
    ).event()
    try:

        async def run() -> list[str]:
            first, second, third = _client(srv), _client(srv), _client(srv)
            for c in (first, second, third):
                await c.connect()
            await first.write_event(request)
            await _until(first, "audio-chunk")  # running: it holds the one job
            await second.write_event(request)
            while srv.jobs.waiting < 1:  # the second waits for it
                await asyncio.sleep(0.01)
            await third.write_event(request)  # no room left in the backlog
            results = [(await _until(c, "audio-stop"))[-1] for c in (third, first, second)]
            for c in (first, second, third):
                await c.disconnect()
            return [e.type if e.type != "error" else str(Error.from_event(e).code) for e in results]

        assert asyncio.run(run()) == ["busy", "audio-stop", "audio-stop"]
    finally:
        srv.close()
        side.close()
