"""The clip library: prerecorded WAV files addressed by name (issue 6).

A clip is ``<clips.dir>/<name>.wav``; a name is letters, digits, ``-`` and
``_`` (1-64 characters), never a path, so a payload cannot reach outside the
folder (``/``, ``..``, NUL and absolute paths are refused before any file
system call).  Files may have any rate, width (8/16/24/32-bit integer PCM,
32/64-bit float) and channel count: each is read once, mixed to mono and
converted to the device rate, its gain to the configured loudness measured,
and kept in memory, so a fallback clip plays even when the disk or the voice
is gone.  The gain is kept beside the audio, not multiplied in: the converter
applies it when it makes device frames (one place changes level, issue 12).
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from edgetts.audio.convert import int16_to_float, resample_linear
from edgetts.audio.loudness import gain_for, loudness_dbfs
from edgetts.errors import EdgeTTSError
from edgetts.vocabulary import CLIP_NAME_RE

_LOGGER = logging.getLogger(__name__)

MAX_CLIP_BYTES = 64 * 1024 * 1024
"""A larger file is refused (a clip is seconds of audio, not an album)."""


class ClipError(EdgeTTSError):
    """A clip name that is not allowed, or a clip file that cannot be read."""


def check_clip_name(name: object) -> str:
    """``name`` when it is a valid clip name; raises :class:`ClipError` saying why not."""
    if not isinstance(name, str):
        raise ClipError(f"a clip name is a string, not {type(name).__name__}")
    shown = repr(name[:80])
    if "\x00" in name:
        raise ClipError(f"clip name {shown} contains NUL")
    if name.startswith("/") or (len(name) > 1 and name[1] == ":"):
        raise ClipError(f"clip name {shown} is an absolute path")
    if "/" in name or "\\" in name or ".." in name:
        raise ClipError(f"clip name {shown} is a path")
    if not CLIP_NAME_RE.match(name):
        raise ClipError(f"clip name {shown} is not allowed (1-64 letters, digits, - and _)")
    return name


# ------------------------------------------------------------------ WAV files

_PCM, _FLOAT, _EXTENSIBLE = 0x0001, 0x0003, 0xFFFE


def read_wav(path: str | Path) -> tuple[np.ndarray, int]:
    """A WAV file as mono float32 (full scale 1.0) and its rate.

    RIFF/WAVE with integer PCM of 8 (unsigned), 16, 24 or 32 bits, or IEEE
    float of 32 or 64 bits, plain or WAVE_FORMAT_EXTENSIBLE; any number of
    channels (averaged).  Raises :class:`ClipError` (one line) otherwise.
    """
    path = Path(path)
    try:
        if path.stat().st_size > MAX_CLIP_BYTES:
            raise ClipError(f"{path}: larger than {MAX_CLIP_BYTES // 2**20} MiB")
        data = path.read_bytes()
    except OSError as exc:
        raise ClipError(f"{path}: cannot read: {exc.strerror or exc}") from None
    try:
        return _parse_wav(data)
    except (ValueError, struct.error) as exc:
        raise ClipError(f"{path}: {exc}") from None


def _parse_wav(data: bytes) -> tuple[np.ndarray, int]:
    if len(data) < 12 or data[:4] != b"RIFF" or data[8:12] != b"WAVE":
        raise ValueError("not a RIFF/WAVE file")
    fmt: tuple[int, int, int, int] | None = None
    pcm: bytes | None = None
    pos = 12
    while pos + 8 <= len(data):
        cid, size = data[pos : pos + 4], struct.unpack_from("<I", data, pos + 4)[0]
        body = data[pos + 8 : pos + 8 + size]
        if cid == b"fmt ":
            if len(body) < 16:
                raise ValueError("fmt chunk too short")
            tag, channels, rate, _bps, _align, bits = struct.unpack_from("<HHIIHH", body)
            if tag == _EXTENSIBLE:
                if len(body) < 26:
                    raise ValueError("extensible fmt chunk too short")
                tag = struct.unpack_from("<H", body, 24)[0]  # the sub-format GUID starts with the tag
            fmt = (tag, channels, rate, bits)
        elif cid == b"data":
            pcm = body
        pos += 8 + size + (size & 1)
    if fmt is None or pcm is None:
        raise ValueError("no fmt or data chunk")
    tag, channels, rate, bits = fmt
    if channels < 1 or not 1000 <= rate <= 384000:
        raise ValueError(f"bad format: {channels} channels at {rate} Hz")
    width = bits // 8
    if tag == _PCM and bits == 8:
        x = (np.frombuffer(pcm, np.uint8).astype(np.float32) - 128.0) / 128.0
    elif tag == _PCM and bits == 16:
        x = int16_to_float(np.frombuffer(pcm[: len(pcm) // 2 * 2], "<i2"))
    elif tag == _PCM and bits == 24:
        raw = np.frombuffer(pcm[: len(pcm) // 3 * 3], np.uint8).reshape(-1, 3).astype(np.int32)
        v = raw[:, 0] | (raw[:, 1] << 8) | (raw[:, 2] << 16)
        v = np.where(v >= 1 << 23, v - (1 << 24), v)
        x = v.astype(np.float32) / float((1 << 23) - 1)
    elif tag == _PCM and bits == 32:
        x = (np.frombuffer(pcm[: len(pcm) // 4 * 4], "<i4").astype(np.float64) / 2147483647.0).astype(np.float32)
    elif tag == _FLOAT and bits in (32, 64):
        dt = "<f4" if bits == 32 else "<f8"
        x = np.clip(np.frombuffer(pcm[: len(pcm) // width * width], dt), -1.0, 1.0).astype(np.float32)
    else:
        raise ValueError(f"unsupported WAV encoding (format tag {tag:#x}, {bits} bits)")
    frames = x.size // channels
    x = x[: frames * channels].reshape(frames, channels).mean(axis=1, dtype=np.float32)
    return np.ascontiguousarray(x, dtype=np.float32), int(rate)


# ------------------------------------------------------------------ the library


@dataclass(frozen=True)
class Clip:
    """One clip, ready to play."""

    name: str
    audio: np.ndarray
    """Mono float32 at ``rate``, as read (unscaled): ``gain`` brings it to the library's loudness."""

    rate: int
    """Hertz (the device rate the library converts to)."""

    source_dbfs: float | None
    """Loudness of the file as read (see edgetts.audio.loudness); None = silent."""

    gain: float
    """Linear gain that brings ``audio`` to the library's target (the piece gain it is played at)."""

    @property
    def duration_s(self) -> float:
        return self.audio.size / self.rate


Resampler = Callable[[np.ndarray, int], np.ndarray]


class ClipLibrary:
    """Every ``<name>.wav`` of a folder, converted once and kept in memory."""

    def __init__(
        self, directory: str | Path | None, rate: int, target_dbfs: float | None, resample: Resampler | None = None
    ) -> None:
        self.directory = None if directory is None else Path(directory)
        self.rate = rate
        self.target_dbfs = target_dbfs
        self._resample = resample or (lambda a, r: resample_linear(a, r, rate))
        self._clips: dict[str, Clip] = {}
        self.problems: dict[str, str] = {}
        """File name -> why it was not loaded."""

    def load(self) -> ClipLibrary:
        """(Re)read the folder; unreadable files are logged and listed in :attr:`problems`."""
        clips: dict[str, Clip] = {}
        problems: dict[str, str] = {}
        if self.directory is not None:
            try:
                paths = sorted(self.directory.glob("*.wav"))
            except OSError as exc:
                paths = []
                problems[str(self.directory)] = str(exc)
            for path in paths:
                if not CLIP_NAME_RE.match(path.stem):
                    problems[path.name] = "not a clip name (letters, digits, - and _ only)"
                    continue
                try:
                    clips[path.stem] = self._convert(path.stem, *read_wav(path))
                except ClipError as exc:
                    problems[path.name] = str(exc)
            if not self.directory.is_dir():
                problems[str(self.directory)] = "no such directory"
        for name, why in problems.items():
            _LOGGER.warning("clip %s not loaded: %s", name, why)
        self._clips, self.problems = clips, problems
        return self

    def _convert(self, name: str, audio: np.ndarray, rate: int) -> Clip:
        audio = self._resample(audio, rate) if rate != self.rate else audio
        level = loudness_dbfs(audio, self.rate)
        gain = 1.0 if self.target_dbfs is None else gain_for(audio, self.rate, self.target_dbfs)
        return Clip(name, audio, self.rate, level, gain)

    def add(self, name: str, audio: np.ndarray, rate: int) -> Clip:
        """Put audio in the library under ``name`` (in memory only)."""
        clip = self._convert(check_clip_name(name), np.asarray(audio, np.float32), rate)
        self._clips[name] = clip
        return clip

    def get(self, name: str) -> Clip | None:
        """The clip called ``name``, or None (also for names that are not allowed)."""
        try:
            check_clip_name(name)
        except ClipError:
            return None
        return self._clips.get(name)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.get(name) is not None

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._clips))

    def __len__(self) -> int:
        return len(self._clips)


def clip_path(directory: str | Path, name: str) -> Path:
    """``directory/<name>.wav`` for a checked name (raises ClipError for a path-like one)."""
    return Path(directory) / f"{check_clip_name(name)}.wav"


__all__ = ["Clip", "ClipError", "ClipLibrary", "check_clip_name", "clip_path", "read_wav"]
