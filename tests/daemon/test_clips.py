"""The clip library (issue 6): names never paths, any WAV converted on load,
loudness matched, broken files reported without stopping anything."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np
import pytest

from edgetts.audio.loudness import loudness_dbfs
from edgetts.audio.wav import write_wav
from edgetts.daemon.admission.messages import Announcement, PayloadError
from edgetts.daemon.playout.clips import ClipError, ClipLibrary, check_clip_name, clip_path, read_wav


@pytest.mark.parametrize(
    "name",
    [
        "../etc/passwd",
        "..",
        "a/b",
        "/etc/passwd",
        "/abs",
        "a\x00b",
        "\x00",
        "C:evil",
        "a\\b",
        "fire\n",
        "",
        "x" * 65,
        "spa ce",
        "dot.wav",
        "ünï",
    ],
)
def test_clip_names_that_are_paths_or_odd_are_rejected(name: str, tmp_path: Path) -> None:
    with pytest.raises(ClipError):
        check_clip_name(name)
    with pytest.raises(ClipError):
        clip_path(tmp_path, name)
    assert ClipLibrary(tmp_path, 22050, None).load().get(name) is None
    for key in ("clip", "chime", "fallback"):  # and never accepted from the wire
        payload = {"text": "hi"} if key != "clip" else {}
        payload[key] = name
        with pytest.raises(PayloadError):
            Announcement.from_payload(json.dumps({"id": "x", **payload}).encode(), now=0.0)


@pytest.mark.parametrize("name", ["fire_alarm", "Gate-17", "a", "x" * 64, "0"])
def test_good_names(name: str, tmp_path: Path) -> None:
    assert check_clip_name(name) == name and clip_path(tmp_path, name) == tmp_path / f"{name}.wav"


def _wav(
    path: Path,
    tag: int,
    bits: int,
    rate: int,
    frames: np.ndarray,
    extensible: bool = False,
    channels: int | None = None,
) -> Path:
    """frames: (n, channels) already encoded to the target dtype (24-bit: (n, 3 * channels) bytes)."""
    channels = channels or frames.shape[1]
    data = frames.tobytes()
    align = channels * bits // 8
    if extensible:
        fmt = struct.pack(
            "<HHIIHHHHIH14s",
            0xFFFE,
            channels,
            rate,
            rate * align,
            align,
            bits,
            22,
            bits,
            0,
            tag,
            b"\x00\x00\x00\x00\x10\x00\x80\x00\x00\xaa\x00\x38\x9b\x71",
        )
    else:
        fmt = struct.pack("<HHIIHH", tag, channels, rate, rate * align, align, bits)
    odd = b"LIST" + struct.pack("<I", 3) + b"abc\x00"  # an odd-sized chunk before the data (padded)
    body = b"WAVE" + b"fmt " + struct.pack("<I", len(fmt)) + fmt + odd + b"data" + struct.pack("<I", len(data)) + data
    path.write_bytes(b"RIFF" + struct.pack("<I", len(body)) + body)
    return path


SINE = (0.5 * np.sin(2 * np.pi * 440 * np.arange(4410) / 22050)).astype(np.float64)


@pytest.mark.parametrize(
    ("kind", "tag", "bits", "encode", "tol"),
    [
        ("u8", 1, 8, lambda x: np.round(x * 127 + 128).astype(np.uint8), 1 / 100),
        ("s16", 1, 16, lambda x: np.round(x * 32767).astype("<i2"), 1e-4),
        ("s24", 1, 24, None, 1e-6),
        ("s32", 1, 32, lambda x: np.round(x * 2147483647).astype("<i4"), 1e-6),
        ("f32", 3, 32, lambda x: x.astype("<f4"), 1e-6),
        ("f64", 3, 64, lambda x: x.astype("<f8"), 1e-6),
    ],
)
@pytest.mark.parametrize("extensible", [False, True])
def test_any_width_and_channels_read_as_mono_float(
    tmp_path: Path, kind, tag, bits, encode, tol, extensible: bool
) -> None:
    stereo = np.stack([SINE, SINE * 0.5], axis=1)  # averaged: 0.75 x the sine
    if kind == "s24":
        v = np.round(stereo * 8388607).astype(np.int32).reshape(-1)
        raw = np.stack([v & 0xFF, (v >> 8) & 0xFF, (v >> 16) & 0xFF], axis=1).astype(np.uint8)
        frames = raw.reshape(stereo.shape[0], 6)
    else:
        frames = encode(stereo)
    path = _wav(tmp_path / f"{kind}.wav", tag, bits, 22050, frames, extensible, channels=2)
    audio, rate = read_wav(path)
    assert rate == 22050 and audio.dtype == np.float32 and audio.size == SINE.size
    assert np.max(np.abs(audio - SINE * 0.75)) < tol * 2


def test_library_converts_rate_and_loudness_and_reports_broken_files(tmp_path: Path) -> None:
    t = np.arange(48000) / 48000
    write_wav(tmp_path / "quiet48k.wav", (0.05 * np.sin(2 * np.pi * 300 * t)).astype(np.float32), 48000)
    write_wav(tmp_path / "loud.wav", (0.9 * np.sin(2 * np.pi * 300 * t[:22050])).astype(np.float32), 22050)
    (tmp_path / "broken.wav").write_bytes(b"RIFF\x10\x00\x00\x00WAVEjunk")
    (tmp_path / "bad name.wav").write_bytes((tmp_path / "loud.wav").read_bytes())
    (tmp_path / "notes.txt").write_text("not a clip")
    lib = ClipLibrary(tmp_path, 22050, -20.0).load()
    assert list(lib) == ["loud", "quiet48k"] and len(lib) == 2
    assert set(lib.problems) == {"broken.wav", "bad name.wav"}
    quiet, loud = lib.get("quiet48k"), lib.get("loud")
    assert quiet.rate == 22050 and abs(quiet.audio.size - 22050) <= 1  # 1 s at 48 kHz -> 22050 Hz
    for clip in (quiet, loud):  # both played at the target, from -29 and -4 dBFS
        assert abs(loudness_dbfs(clip.audio * np.float32(clip.gain), 22050) - (-20.0)) < 0.1, clip.name
    assert quiet.gain > 1 and loud.gain < 1 and quiet.source_dbfs < -28
    # the gain is kept beside the audio as read, applied once by the converter (issue 12)
    assert np.array_equal(loud.audio, read_wav(tmp_path / "loud.wav")[0])
    # no folder configured: an empty library; a missing folder is a problem, not a crash
    assert len(ClipLibrary(None, 22050, None).load()) == 0
    missing = ClipLibrary(tmp_path / "nope", 22050, None).load()
    assert len(missing) == 0 and str(tmp_path / "nope") in missing.problems
    # no target: the audio as read (16-bit / 32767), untouched
    raw = ClipLibrary(tmp_path, 22050, None).load().get("loud")
    assert raw.gain == 1.0 and np.array_equal(raw.audio, read_wav(tmp_path / "loud.wav")[0])


def test_unreadable_formats_are_one_line_errors(tmp_path: Path) -> None:
    path = _wav(tmp_path / "alaw.wav", 6, 8, 8000, np.zeros((10, 1), np.uint8))
    with pytest.raises(ClipError, match="unsupported WAV encoding"):
        read_wav(path)
    (tmp_path / "x.wav").write_bytes(b"not a wav")
    with pytest.raises(ClipError, match="not a RIFF/WAVE"):
        read_wav(tmp_path / "x.wav")
    with pytest.raises(ClipError, match="cannot read"):
        read_wav(tmp_path / "missing.wav")
