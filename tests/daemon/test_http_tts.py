"""/api/tts and /api/tts/batch on the daemon with the real voice: the audio is `edgetts synth`'s at
noise 0, sample for sample; a batch is a zip of the same WAVs; the errors say what is wrong (issue 18)."""

from __future__ import annotations

import io
import subprocess
import sys
import wave
import zipfile
from pathlib import Path

import numpy as np
import pytest

from support.console import Client, free_port, http_extra
from support.paths import ROOT

pytest.importorskip("starlette")
pytestmark = [pytest.mark.mqtt, pytest.mark.slow]

TEXT = "Hello from the console. The 10:45 to Leeds leaves from platform 3."


def _pcm(body: bytes) -> tuple[np.ndarray, int]:
    assert body[:4] == b"RIFF" and body[8:16] == b"WAVEfmt " and body[36:40] == b"data"
    rate = int.from_bytes(body[24:28], "little")
    return np.frombuffer(body[44:], "<i2"), rate


def _synth(tmp_path: Path, text: str) -> np.ndarray:
    out = tmp_path / "synth.wav"
    # --threads 1 as the rig's voice: onnxruntime's sums may differ in the last bit with the thread count
    subprocess.run(
        [
            sys.executable,
            "-m",
            "edgetts.cli",
            "synth",
            "--noise-scale",
            "0",
            "--noise-w",
            "0",
            "--threads",
            "1",
            "-o",
            str(out),
            text,
        ],
        cwd=ROOT,
        check=True,
        capture_output=True,
    )
    with wave.open(str(out)) as w:
        return np.frombuffer(w.readframes(w.getnframes()), "<i2")


def test_tts_is_edgetts_synth_and_batch_is_a_zip_of_it(daemon_rig, tmp_path: Path) -> None:
    port = free_port()
    rig = daemon_rig(real_voices=True, online_timeout=120, extra=http_extra(port, "max_batch_texts: 3"))
    c = Client(port, timeout=120)
    c.wait_up()
    c.start()
    reply = c.post("/api/tts", {"text": TEXT})
    assert reply.status == 200, reply.body
    assert reply.headers["content-type"] == "audio/wav" and reply.headers["x-edgetts-voice"] == "default"
    pcm, rate = _pcm(reply.body)
    assert rate == 22050
    reference = _synth(tmp_path, TEXT)
    assert pcm.size == reference.size and np.array_equal(pcm, reference)
    # streamed: the header says "to the end" (its sizes are unknown when it is sent)
    assert reply.body[4:8] == b"\xff\xff\xff\xff" and reply.body[40:44] == b"\xff\xff\xff\xff"
    batch = c.post("/api/tts/batch", {"texts": [TEXT, "Second one."]})
    assert batch.status == 200 and batch.headers["content-type"] == "application/zip"
    with zipfile.ZipFile(io.BytesIO(batch.body)) as archive:
        assert archive.namelist() == ["0001.wav", "0002.wav"]
        with wave.open(io.BytesIO(archive.read("0001.wav"))) as w:
            assert w.getframerate() == 22050
            assert np.array_equal(np.frombuffer(w.readframes(w.getnframes()), "<i2"), reference)
        with wave.open(io.BytesIO(archive.read("0002.wav"))) as w:
            assert w.getnframes() > 22050 * 0.3
    # nothing of it went to the sound card, and the speed settings are the request's
    assert rig.capture.pcm().size == 0
    slow = _pcm(c.post("/api/tts", {"text": "Second one.", "length_scale": 1.5}).body)[0]
    with zipfile.ZipFile(io.BytesIO(batch.body)) as archive, wave.open(io.BytesIO(archive.read("0002.wav"))) as w:
        assert slow.size > 1.3 * w.getnframes()
    # what is wrong, said
    for body, status, words in (
        ({"text": ""}, 400, "text must be a non-empty string"),
        ({"text": 3}, 400, "text must be a non-empty string"),
        ({"text": "x" * 2001}, 400, "text too long"),
        ({"text": "x", "voice": "nobody"}, 404, "unknown voice"),
        ({"text": "x", "length_scale": 99}, 400, "length_scale must be a number 0.1-10"),
        ({"text": "x", "speaker_id": -1}, 400, "speaker_id"),
        ({"text": "x", "pitch": 2}, 400, "unknown key 'pitch'"),
        ({"text": "<speak><p>unclosed</speak>"}, 400, "bad SSML"),
        (b"[1, 2]", 400, "a JSON object is expected"),
        (b"{nope", 400, ""),
    ):
        reply = c.post("/api/tts", body)
        assert reply.status == status and words in reply.error, (body, reply.status, reply.body)
    for body in ({"texts": []}, {"texts": ["a"] * 4}, {"texts": "a"}, {"texts": ["a", 5]}):
        assert c.post("/api/tts/batch", body).status == 400, body
