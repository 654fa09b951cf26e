"""`edgetts wyoming` on its own (issue 17), and the config sections it reads."""

from __future__ import annotations

import asyncio
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("wyoming")
from wyoming.audio import AudioChunk, AudioStart
from wyoming.client import AsyncTcpClient
from wyoming.info import Describe, Info
from wyoming.tts import Synthesize, SynthesizeVoice

from edgetts.config import ConfigError, parse_config
from edgetts.daemon.inbound.wyoming.mdns import SERVICE_TYPE, service_info

from support.paths import ROOT


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_standalone_server_serves_the_configs_voices(tmp_path: Path, test_voices: dict[str, Path]) -> None:
    config = tmp_path / "edgetts.yaml"
    config.write_text(
        f"voice: {{name: tiny, model: {test_voices['multi']}, threads: 1}}\nmemory: {{lock: false}}\n", encoding="utf-8"
    )
    port = _port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "edgetts.cli", "wyoming", "--uri", f"tcp://127.0.0.1:{port}", "--config", str(config)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().decode()
        assert line.startswith("edgetts wyoming: serving tiny on tcp://127.0.0.1:"), line

        async def run() -> tuple[Info, bytes, str]:
            async with AsyncTcpClient("127.0.0.1", port, read_timeout=30) as client:
                await client.write_event(Describe().event())
                info = Info.from_event(await client.read_event())  # type: ignore[arg-type]
                await client.write_event(
                    Synthesize(text="One two three.", voice=SynthesizeVoice(name="tiny", speaker="b")).event()
                )
                pcm = b""
                while (event := await client.read_event()) is not None and event.type != "audio-stop":
                    if AudioChunk.is_type(event.type):
                        pcm += event.payload or b""
                # No speaker queue here: announcement audio is refused, the connection goes on.
                await client.write_event(AudioStart(rate=16000, width=2, channels=1).event())
                refused = await client.read_event()
                assert refused is not None
                return info, pcm, refused.type

        info, pcm, refused = asyncio.run(run())
        assert [v.name for v in info.tts[0].voices] == ["tiny"]
        assert len(pcm) > 1000
        assert refused == "error"
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(20) == 0


def test_wyoming_and_homeassistant_sections_are_checked() -> None:
    config = parse_config(
        "wyoming: {enabled: true, uri: 'unix:///run/edgetts/wyoming.sock', max_jobs: 3}\n"
        "homeassistant: {discovery: true, prefix: ha, test_chime: ding}\n"
    )
    assert config.wyoming.max_jobs == 3 and config.homeassistant.prefix == "ha"
    assert not parse_config("").wyoming.enabled and not parse_config("").homeassistant.discovery
    for bad, where in (
        ("wyoming: {uri: 'http://x:1'}", "wyoming/uri"),
        ("wyoming: {uri: 'tcp://host'}", "wyoming/uri"),
        ("wyoming: {max_jobs: 0}", "wyoming/max_jobs"),
        ("wyoming: {bogus: 1}", "wyoming/bogus"),
        ("homeassistant: {prefix: 'a/#'}", "homeassistant/prefix"),
        ("homeassistant: {test_chime: '../x'}", "homeassistant/test_chime"),
    ):
        with pytest.raises(ConfigError) as err:
            parse_config(bad + "\n")
        assert where in err.value.problems[0], (bad, err.value.problems)


def test_the_mdns_record_is_the_wyoming_service() -> None:
    info = service_info("edgetts-hall", "127.0.0.1", 10200)
    assert SERVICE_TYPE == "_wyoming._tcp.local."
    assert info.type == SERVICE_TYPE and info.name == "edgetts-hall._wyoming._tcp.local."
    assert info.port == 10200 and info.parsed_addresses() == ["127.0.0.1"]
