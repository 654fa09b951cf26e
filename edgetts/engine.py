"""The engine interface every voice family implements.

The engine is a plain synchronous library: it knows nothing of MQTT, queues
or sound cards.  A voice turns text into an iterator of :class:`AudioChunk`;
the daemon, the CLI and the benchmarks consume that iterator and nothing else.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import numpy as np

from edgetts.audio.convert import float_to_int16
from edgetts.text.prepare import Prepared, TextOptions


@dataclass(frozen=True)
class SynthesisConfig:
    """Per-request synthesis settings. ``None`` always means "the voice's default"."""

    length_scale: float | None = None
    """Phoneme duration multiplier: > 1 is slower speech, < 1 faster."""

    noise_scale: float | None = None
    """VITS prior noise (expressiveness); 0 makes the output deterministic."""

    noise_w: float | None = None
    """VITS duration-predictor noise (rhythm variation); 0 makes durations deterministic."""

    speaker_id: int | None = None
    """Speaker index for multi-speaker voices."""

    volume: float = 1.0
    """Linear gain applied after synthesis (1.0 = unchanged); the result is clipped to [-1, 1]."""

    normalize_audio: bool = True
    """Scale each sentence to full scale before ``volume`` (what piper-tts does)."""

    seed: int | None = None
    """Noise seed (issue 19): None = fresh random noise on every run (speech varies a little, as
    ever); an int (taken modulo 2^63) = deterministic: each sentence's noise is drawn from
    (seed, its sentence index) only, so the same voice, text and settings give the same samples
    on every run and every board (edgetts.voice.piper.seeded_noise).  Ignored by the AR voice
    (edgetts.voice.ar), whose sampling has its own settings, and by graphs that draw no noise."""


@dataclass(frozen=True)
class AudioChunk:
    """A piece of synthesized mono audio, in the order it must be played."""

    audio: np.ndarray
    """Samples, float32 in [-1, 1], shape (n,)."""

    sample_rate: int
    """Hertz."""

    sentence_index: int
    """0-based index of the sentence this chunk belongs to."""

    is_last_in_sentence: bool = True
    """True for the final chunk of its sentence (every chunk, while chunks are whole sentences)."""

    phoneme_ids: tuple[int, ...] = field(default=(), repr=False)
    """Model input ids of the sentence (after BOS/EOS/pad interleaving); empty where not applicable."""

    lead_s: float = 0.0
    """Seconds after this chunk was produced before its playback should start (unless the text has
    ended by then): the engine's estimate, from its measured speed, of the buffering that keeps the
    rest of the text from running dry (issue 14).  A text's first chunk carries one (0 = play it as
    soon as it comes); a later chunk carries one only when the engine has learned, before the
    first chunk's wait is over, that it must be longer: playback then starts no earlier than
    this long after that chunk."""

    @property
    def duration_s(self) -> float:
        """Seconds of audio in this chunk."""
        return float(self.audio.shape[0]) / float(self.sample_rate)

    def to_int16(self) -> np.ndarray:
        """Samples as 16-bit signed PCM (clipped, rounded toward zero like piper-tts)."""
        return float_to_int16(self.audio)


@runtime_checkable
class Voice(Protocol):
    """What the daemon and the CLI need from any voice family."""

    @property
    def name(self) -> str:
        """A short name for logs and the status topic."""
        ...

    @property
    def sample_rate(self) -> int:
        """Hertz of every chunk this voice yields."""
        ...

    def synthesize(self, text: str | Prepared, config: SynthesisConfig | None = None) -> Iterator[AudioChunk]:
        """Speak ``text``: yield chunks as soon as each is ready.

        A :class:`Prepared` text (edgetts.text.prepare) is spoken as prepared
        where the voice prepares text that way (the same TextOptions), so the
        daemon's one preparation at admission is the only one; otherwise the
        voice reads ``text.source`` as it reads a str.

        Raises :class:`edgetts.errors.UnspeakableTextError` before yielding
        anything when the text has nothing to speak.
        """
        ...


@runtime_checkable
class PreparesText(Protocol):
    """A voice that prepares text itself (a Piper voice: its language, its phoneme map, issue 16).

    The daemon prepares an announcement's text with the voice that will speak it, so the
    language's rules, the spans it cannot read (``Prepared.warnings``) and a script it cannot
    speak (:class:`edgetts.errors.UnspeakableTextError`) are known at admission.
    """

    @property
    def text_options(self) -> TextOptions:
        """What this voice prepares text with (its ``language`` set)."""
        ...

    def prepare(self, text: str) -> Prepared:
        """``text`` prepared as this voice reads it; raises SSMLError or UnspeakableTextError."""
        ...
