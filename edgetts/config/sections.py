"""The YAML sections of sound, voices and announcements, one frozen dataclass each.

A field's docstring carries its unit.  ``validate()`` raises
:class:`~edgetts.config.errors.FieldError` with the key path below the section.
Adding a section is one dataclass (here, or in :mod:`edgetts.config.bus` for the
bus) plus one field on :class:`~edgetts.config.document.Config`: the loader is
generic over them.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from edgetts.config.errors import FieldError
from edgetts.text.language_id import DEFAULT_MIN_CONFIDENCE, KNOWN_LANGUAGES
from edgetts.vocabulary import BLOCK_FRAMES, CLIP_NAME_RE, MAX_DEADLINE_MS, NAME_RE, Priority


@dataclass(frozen=True)
class AudioSettings:
    """The sound output."""

    device: str | int = "default"
    """PortAudio/ALSA output device: `default`, a device index, or (part of) its name."""

    sample_rate: int | None = None
    """Hertz the device is opened at; None = the default voice's rate."""

    channels: int = 1
    """Channels the device is opened with (mono audio is copied to each)."""

    sample_format: Literal["int16", "int32", "float32"] = "int16"
    """Sample format the device is opened with."""

    block_frames: int = BLOCK_FRAMES
    """Frames per write to the device; smaller = quicker preemption, more CPU (see BLOCK_FRAMES)."""

    lead_in_ms: int = 0
    """Silence before each announcement, milliseconds, for amplifiers that wake on signal."""

    fade_ms: int = 5
    """Fade-in at the start and fade-out at the end of each announcement, milliseconds."""

    preempt_fade_ms: int = 20
    """Fade-out when an announcement is interrupted, milliseconds (at most 30)."""

    volume: float = 1.0
    """Linear gain for everything played (0-1); an announcement's volume multiplies it."""

    close_idle_s: float = 5.0
    """Close the device after this many idle seconds so other players may use it."""

    reopen_min_s: float = 0.5
    """First delay before reopening a failed device, seconds; doubled per failure."""

    reopen_max_s: float = 30.0
    """Cap of the reopen delay, seconds."""

    realtime_pacing: bool = False
    """Pace writes to real time; only for sinks that do not block (ALSA null/file plugin)."""

    output_delay_ms: float = 0.0
    """What the sound card cannot report: milliseconds from the samples leaving the device to the
    sound leaving the speaker (DAC, amplifier, a DSP); added to the device's delay when an
    announcement plays at its `play_at` (issue 19)."""

    def validate(self) -> None:
        if isinstance(self.device, int) and self.device < 0:
            raise FieldError(("device",), "a device index is >= 0")
        if self.sample_rate is not None and not 8000 <= self.sample_rate <= 192000:
            raise FieldError(("sample_rate",), "must be 8000-192000 Hz")
        if not 1 <= self.channels <= 8:
            raise FieldError(("channels",), "must be 1-8")
        if not 16 <= self.block_frames <= 8192:
            raise FieldError(("block_frames",), "must be 16-8192")
        for name, top in (("lead_in_ms", 5000), ("fade_ms", 100), ("preempt_fade_ms", 30)):
            value = getattr(self, name)
            if not 0 <= value <= top:
                raise FieldError((name,), f"must be 0-{top}")
        if not 0.0 <= self.volume <= 1.0:
            raise FieldError(("volume",), "must be 0-1")
        if self.close_idle_s < 0:
            raise FieldError(("close_idle_s",), "must be >= 0")
        if not 0.0 <= self.output_delay_ms <= 2000.0:
            raise FieldError(("output_delay_ms",), "must be 0-2000")
        if not 0 < self.reopen_min_s <= self.reopen_max_s:
            raise FieldError(("reopen_min_s",), "need 0 < reopen_min_s <= reopen_max_s")


PARALLEL_MODES = ("auto", "threads", "windows")


@dataclass(frozen=True)
class VoiceModelSettings:
    """One voice: a model and how to run it."""

    model: str = "default"
    """`default` (the packaged en_US-joe-medium voice), a voice name, or a path to a Piper *.onnx voice."""

    threads: int | None = None
    """Inference threads; None = one per inference core (cpu.inference_cores)."""

    parallel: str = "auto"
    """How the voice's threads share the work: `threads` = each model run on all of them (onnxruntime's
    intra-op threads); `windows` = that many windows of a streamed sentence decoded at once, each run
    on one thread, the next window's flow and front prepared meanwhile; `auto` = `windows` on an ARM
    board, where it was measured to start sooner on less CPU, `threads` elsewhere (docs/streaming.md,
    "Cores")."""

    streaming: bool = True
    """Decode each sentence in windows planned for this machine's measured speed: first audio
    in tens of ms instead of after a whole sentence's synthesis, never running dry (issue 14,
    docs/streaming.md); false = whole sentences, like piper-tts.  Piper voices only."""

    fast_start_ids: int = 64
    """With streaming: where it starts sooner, a sentence longer than 1.5x this many phoneme
    ids starts from the encoder run on its first ids only (first audio no longer grows with
    its length; its first words differ slightly from whole-sentence output).  0 = never."""

    max_sentence_ids: int = 400
    """Piper voices: the most phoneme ids of one model run; a longer sentence is spoken in
    pieces cut at commas, then between words, with a comma's pause between (issue 13: one
    2 KB text without a full stop took 5.9 GB).  Per id ~0.5 MB of peak memory and ~3 ms at
    2 threads here; 400 (~9 s of speech) leaves every normal sentence whole."""

    length_scale: float | None = None
    """Speech duration multiplier (>1 slower); None = the voice's own."""

    noise_scale: float | None = None
    """Expressiveness noise; 0 = deterministic; None = the voice's own."""

    noise_w: float | None = None
    """Rhythm noise; 0 = deterministic; None = the voice's own."""

    speaker_id: int | None = None
    """Speaker of a multi-speaker voice; None = the first."""

    degrade_rtf: float = 0.8
    """Real-time factor (synthesis seconds per second of speech, over the last minute) above
    which this voice is too slow for the board: announcements then use `degrade_to`, and
    `degraded: speed` says so (issue 14: a slow board should speak faster, not stutter)."""

    degrade_to: str | None = "int8"
    """The faster variant spoken while this voice is too slow: ``int8`` (the voice's own static
    int8 variant, made on this machine the first time the voice is too slow; it passed the
    quality gate: tools/bench_quant.py), another configured voice's name, or a path to a Piper
    *.onnx file (e.g. from `edgetts quantize`); None = none."""

    accelerator: Literal["cpu", "npu"] = "cpu"
    """Where a streamed Piper voice's flow and decoder windows run: `cpu`, or `npu` (a Rockchip
    RK3588/RK3576/RK3566 NPU, models from `edgetts export-rknn`; the front stays on the CPU).  An NPU
    that cannot run them is `degraded: npu` with the reason, and the CPU speaks (docs/npu.md)."""

    npu_core_mask: int = 0
    """With `accelerator: npu`, the NPU cores the windows run on, as RKNNLite's core_mask: 0 = the
    runtime picks, 1/2/4 = core 0/1/2, 3 = cores 0 and 1, 7 = all three (RK3588)."""

    def validate(self) -> None:
        if not self.model:
            raise FieldError(("model",), "must not be empty")
        # A missing model file is not a config error (issue 6): the daemon starts without the
        # voice, plays clips, and reports `degraded: voice` with the loader's reason.
        if self.threads is not None and not 1 <= self.threads <= 64:
            raise FieldError(("threads",), "must be 1-64")
        if self.parallel not in PARALLEL_MODES:
            raise FieldError(("parallel",), f"must be one of {', '.join(PARALLEL_MODES)}")
        if not 0 <= self.fast_start_ids <= 4096:
            raise FieldError(("fast_start_ids",), "must be 0-4096 (0 = off)")
        if not 32 <= self.max_sentence_ids <= 4096:
            raise FieldError(("max_sentence_ids",), "must be 32-4096")
        if self.length_scale is not None and not 0.1 <= self.length_scale <= 10:
            raise FieldError(("length_scale",), "must be 0.1-10")
        for name in ("noise_scale", "noise_w"):
            value = getattr(self, name)
            if value is not None and not 0 <= value <= 2:
                raise FieldError((name,), "must be 0-2")
        if not 0.05 <= self.degrade_rtf <= 10:
            raise FieldError(("degrade_rtf",), "must be 0.05-10")
        # Whether degrade_to names a voice is checked by Config, which knows the voices.
        if self.degrade_to is not None and not self.degrade_to:
            raise FieldError(("degrade_to",), "must not be empty (null for none)")
        if not 0 <= self.npu_core_mask <= 7:
            raise FieldError(("npu_core_mask",), "must be 0-7 (0 = the runtime picks; bits 1, 2, 4 = cores 0, 1, 2)")


@dataclass(frozen=True)
class VoiceSettings(VoiceModelSettings):
    """The default voice, used when an announcement names none."""

    name: str = "default"
    """The name announcements use to choose this voice (`"voice": "<name>"`)."""

    languages: dict[str, str] = field(default_factory=dict)
    """With `model: auto` (issue 43): language (the identifier's code: en, de, fr ...) -> the voice that
    speaks it: a name under `voices:`, or a voice's model by name (`default`, an installed voice), loaded
    with this section's settings (edgetts/config/auto_voice.py)."""

    language_default: str | None = None
    """With `model: auto`: the language (a key of `languages`) spoken when the identifier is unsure;
    its voice is this section's own (`name`)."""

    language_per: Literal["announcement", "sentence"] = "announcement"
    """With `model: auto`: one language for the whole text, or one per sentence (each sentence
    spoken by its language's voice)."""

    language_min_confidence: float = DEFAULT_MIN_CONFIDENCE
    """With `model: auto`: the identifier's probability (0-1, over the mapped languages) below which
    the text (or sentence) is taken to be in `language_default`."""

    def validate(self) -> None:
        super().validate()
        if not NAME_RE.match(self.name):
            raise FieldError(("name",), f"{self.name!r} is not a valid voice name")
        self._validate_languages()

    def _validate_languages(self) -> None:
        auto = self.model == "auto"  # (edgetts.config.auto_voice.AUTO: that module imports this one)
        if not auto:
            if self.languages or self.language_default is not None:
                key = "languages" if self.languages else "language_default"
                raise FieldError((key,), "only with model: auto (the voice chosen by the language of the text)")
            return
        if not self.languages:
            raise FieldError(("languages",), "required with model: auto (e.g. {en: default, de: de_DE-thorsten-low})")
        for lang, voice in self.languages.items():
            if lang not in KNOWN_LANGUAGES:
                raise FieldError(("languages", lang), f"{lang!r} is not a language the identifier knows (en, de ...)")
            if not voice:
                raise FieldError(("languages", lang), "must name a voice")
        if self.language_default is None:
            raise FieldError(("language_default",), "required with model: auto (a key of voice/languages)")
        if self.language_default not in self.languages:
            known = ", ".join(self.languages)
            raise FieldError(("language_default",), f"{self.language_default!r} is not in voice/languages ({known})")
        if not 0.0 <= self.language_min_confidence <= 1.0:
            raise FieldError(("language_min_confidence",), "must be 0-1")


@dataclass(frozen=True)
class QueueSettings:
    """Scheduling of announcements."""

    max_length: int = 32
    """Announcements waiting at most; a further one is rejected (or displaces a lower one)."""

    default_priority: Priority = "normal"
    """Priority of an announcement that names none (and of plain-text payloads)."""

    default_ttl_s: float | None = 600.0
    """Seconds an announcement without ttl/expires_at may wait before it expires; None = never."""

    on_preempt: Literal["resume", "drop"] = "resume"
    """An interrupted announcement is resumed from its sentence, or dropped."""

    dedup_window_s: float = 3600.0
    """Seconds an announcement id is remembered, so a duplicate plays once."""

    state_dir: str | None = None
    """Folder of the dedup memory (`dedup.jsonl`), so a redelivery after a restart plays once;
    None = `$STATE_DIRECTORY` under systemd (StateDirectory=), else the ids are kept in RAM only."""

    max_text_chars: int = 2000
    """Longest text accepted, characters."""

    max_repeat: int = 5
    """Largest `repeat` accepted."""

    def validate(self) -> None:
        if not 1 <= self.max_length <= 10000:
            raise FieldError(("max_length",), "must be 1-10000")
        if self.default_ttl_s is not None and self.default_ttl_s <= 0:
            raise FieldError(("default_ttl_s",), "must be > 0 (or null for never)")
        if self.dedup_window_s < 0:
            raise FieldError(("dedup_window_s",), "must be >= 0")
        if not 1 <= self.max_text_chars <= 100000:
            raise FieldError(("max_text_chars",), "must be 1-100000")
        if not 1 <= self.max_repeat <= 100:
            raise FieldError(("max_repeat",), "must be 1-100")

    def resolved_state_dir(self) -> Path | None:
        """The folder of the dedup memory, or None when it is kept in RAM only."""
        if self.state_dir is not None:
            return Path(self.state_dir)
        systemd = os.environ.get("STATE_DIRECTORY")
        return Path(systemd.split(":")[0]) if systemd else None


@dataclass(frozen=True)
class ClipSettings:
    """Prerecorded clips and chimes."""

    dir: str | None = None
    """Directory of `<name>.wav` files (any rate, width, channels); None = no clips (every clip is unknown)."""


def _check_clip_name(path: tuple[str, ...], name: str | None) -> None:
    if name is not None and not CLIP_NAME_RE.match(name):
        raise FieldError(path, f"{name[:80]!r} is not a clip name (letters, digits, - and _ only)")


@dataclass(frozen=True)
class FallbackRule:
    """A regex on the announcement text and the clip it falls back to."""

    match: str
    """Regular expression, searched case-insensitively in the text (e.g. `fire|evacuat`)."""

    clip: str
    """Clip name played when speech cannot be produced for a matching text."""

    def validate(self) -> None:
        try:
            re.compile(self.match)
        except re.error as exc:
            raise FieldError(("match",), f"bad regular expression: {exc}") from None
        _check_clip_name(("clip",), self.clip)


@dataclass(frozen=True)
class FallbackSettings:
    """What plays when speech cannot be produced in time (issue 6)."""

    default_clip: str | None = None
    """Clip played when no announcement field and no rule chose one; None = the announcement fails."""

    deadline_ms: int = 4000
    """Milliseconds from an announcement's turn to its first speech audio before the fallback clip plays."""

    rules: tuple[FallbackRule, ...] = ()
    """First matching rule (regex on the text) chooses the clip, before default_clip."""

    def validate(self) -> None:
        _check_clip_name(("default_clip",), self.default_clip)
        if not 50 <= self.deadline_ms <= MAX_DEADLINE_MS:
            raise FieldError(("deadline_ms",), f"must be 50-{MAX_DEADLINE_MS}")


@dataclass(frozen=True)
class CacheSettings:
    """The phrase cache: synthesized audio kept on disk (issue 6)."""

    dir: str | None = None
    """Folder of cached phrases; None = `$CACHE_DIRECTORY/phrases` under systemd (CacheDirectory=), else no cache."""

    max_mb: float = 200.0
    """Megabytes (10^6 bytes) the folder may hold; least recently used phrases go first; 0 = no cache."""

    min_uses: int = 1
    """A phrase is written when it is synthesized for the n-th time since the daemon started
    (1 = at once; 2 spares an SD card the texts that come only once)."""

    def validate(self) -> None:
        if self.max_mb < 0:
            raise FieldError(("max_mb",), "must be >= 0")
        if not 1 <= self.min_uses <= 100:
            raise FieldError(("min_uses",), "must be 1-100")

    def resolved_dir(self) -> Path | None:
        """The folder in use, or None when the cache is off."""
        if self.max_mb <= 0:
            return None
        if self.dir is not None:
            return Path(self.dir)
        systemd = os.environ.get("CACHE_DIRECTORY")
        return Path(systemd.split(":")[0]) / "phrases" if systemd else None


@dataclass(frozen=True)
class LoudnessSettings:
    """One loudness for clips and speech (gated RMS level, see edgetts/audio/loudness.py)."""

    target_dbfs: float | None = None
    """dBFS clips and every voice are brought to; None = the default voice's own level (speech untouched)."""

    def validate(self) -> None:
        if self.target_dbfs is not None and not -60.0 <= self.target_dbfs <= 0.0:
            raise FieldError(("target_dbfs",), "must be -60 to 0 dBFS")


@dataclass(frozen=True)
class LoggingSettings:
    """Logging (to journald under systemd, stderr otherwise)."""

    level: Literal["debug", "info", "warning", "error"] = "info"
    """Lowest level logged."""
