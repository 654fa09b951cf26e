"""Piper-format VITS voices: ``voice.onnx`` + ``voice.onnx.json``.

One method per stage: text -> phonemes (espeak-ng) -> ids -> audio, and only
:meth:`PiperVoice.infer` calls ``session.run``.
"""

from __future__ import annotations

import json
import logging
import time
import unicodedata
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from edgetts.engine import AudioChunk, SynthesisConfig
from edgetts.errors import SynthesisError, UnspeakableTextError, VoiceError
from edgetts.text.prepare import Break, Phonemes, TextOptions, prepare
from edgetts.voice.onnx_session import RuntimeOptions, create_session
from edgetts.voice.piper.phonemize import phonemize
from edgetts.voice.piper.streaming import (
    FLOW_REACH,
    Latent,
    SeamJoiner,
    SplitError,
    SplitModels,
    decode_windows,
    discard_split,
    load_split,
    plan_windows,
    splice_frames,
)

_LOGGER = logging.getLogger(__name__)

BOS = "^"
EOS = "$"
PAD = "_"
# Phonemes that carry no sound of their own: a sentence of only these is unspeakable.
_SILENT_PHONEMES = frozenset(" .,:;!?-'\"()")
_REQUIRED_INPUTS = ("input", "input_lengths", "scales")
# Sentences that check a split graph and measure a voice's streaming gain (docs/streaming.md).
_CHECK_TEXT = (
    "Attention please. The next train to arrive at platform two is the service to Edinburgh. "
    "Please stand clear of the closing doors. Mind the gap!"
)
_FALLBACK_LOGGED: set[str] = set()
_LONG_FLOW_FRAMES = 512
"""Fast start: a spliced sentence longer than this (~6 s) gets a short flow run before the whole one."""


@dataclass(frozen=True)
class StreamingOptions:
    """How a sentence's waveform is decoded in windows (issue 4, docs/streaming.md)."""

    first_frames: int = 4
    """Frames in the first window of each sentence (x hop = samples: 1024, 46 ms for a 22050 Hz medium voice)."""

    growth: float = 8.0
    """Each later window is this many times the one before (4, 32, 128, 128, ... frames)."""

    max_frames: int = 128
    """Largest window.  The decoder's activations grow with the window: peak RSS of a process
    speaking the corpus 168 / 187 / 199 / 224 MB at 64 / 128 / 192 / 256 frames (2 threads,
    memory patterns off); each seam costs two margins."""

    margin: int = 6
    """Decoder frames of context on each side of a window.  The joe voice's decoder reaches about
    12 frames; each seam recomputes 2 x margin frames.  Corpus, noise 0, streamed vs whole: SDR
    min 31.7 / 39.1 / 50.1 / 59.8 dB at 4 / 6 / 7 / 8 frames; total time 1.06 / 1.10 / - / 1.13x
    whole-sentence at 1 thread: 6 keeps 9 dB above the 30 dB bar at 1.1x the cost."""

    crossfade: int = 256
    """Samples over which two windows are blended at a seam."""

    flow_margin: int = 12
    """Flow frames of context for the first window (the flow's receptive field is 4 couplings x 4
    convolutions of kernel 5 = 32 frames, but the first window's audio is the same at 12: corpus
    SDR min 39.0 dB vs 39.1 at 24).  The rest of the sentence is one flow run from its start,
    exact, see ``vits_stream.Latent``."""

    fast_start_ids: int = 0
    """0 (default): every sentence is exactly what whole-sentence decoding gives.  N > 0: the
    first sentence of a text, when it has more than 1.5 N phoneme ids, starts from a run of the
    text encoder on its first N ids only, so it starts as soon as a short sentence would; the
    encoder attends over the whole sentence, so those first words differ slightly (durations by
    a frame here and there) from whole-sentence output.  See docs/streaming.md, "Fast start"."""


@dataclass(frozen=True)
class PiperVoiceConfig:
    """What a voice's ``.onnx.json`` says, validated."""

    sample_rate: int
    """Hertz."""

    espeak_voice: str
    """espeak-ng voice name, e.g. ``en-us``."""

    phoneme_id_map: Mapping[str, tuple[int, ...]]
    """Phoneme -> model input ids."""

    num_speakers: int = 1
    speaker_id_map: Mapping[str, int] = field(default_factory=dict)
    noise_scale: float = 0.667
    length_scale: float = 1.0
    noise_w: float = 0.8
    phoneme_type: str = "espeak"
    vowel_clusters: frozenset[tuple[str, ...]] = frozenset()
    """Phoneme sequences merged into one symbol before id lookup (e.g. ``a ɪ`` -> ``aɪ``)."""
    default_speaker_id: int = 0

    @staticmethod
    def from_dict(data: Mapping[str, Any], source: str = "voice config") -> PiperVoiceConfig:
        """Validate a parsed ``.onnx.json``; errors name the file and the field."""

        def need(path: str) -> Any:
            node: Any = data
            for key in path.split("."):
                if not isinstance(node, Mapping) or key not in node:
                    raise VoiceError(f"{source}: missing field {path!r}")
                node = node[key]
            return node

        try:
            sample_rate = int(need("audio.sample_rate"))
            raw_map = need("phoneme_id_map")
            if not isinstance(raw_map, Mapping) or not raw_map:
                raise VoiceError(f"{source}: 'phoneme_id_map' must be a non-empty object")
            id_map = {str(k): tuple(int(i) for i in v) for k, v in raw_map.items()}
            for symbol in (BOS, EOS, PAD):
                if symbol not in id_map:
                    raise VoiceError(f"{source}: phoneme_id_map lacks {symbol!r}")
            phoneme_type = str(data.get("phoneme_type", "espeak"))
            espeak_voice = str(need("espeak.voice")) if phoneme_type == "espeak" else ""
            inference = data.get("inference", {}) or {}
            clusters = data.get("vowel_clusters", {}) or {}
            config = PiperVoiceConfig(
                sample_rate=sample_rate,
                espeak_voice=espeak_voice,
                phoneme_id_map=id_map,
                num_speakers=int(data.get("num_speakers", 1)),
                speaker_id_map={str(k): int(v) for k, v in (data.get("speaker_id_map") or {}).items()},
                noise_scale=float(inference.get("noise_scale", 0.667)),
                length_scale=float(inference.get("length_scale", 1.0)),
                noise_w=float(inference.get("noise_w", 0.8)),
                phoneme_type=phoneme_type,
                vowel_clusters=frozenset(tuple(c) for c in clusters.values())
                if isinstance(clusters, Mapping)
                else frozenset(tuple(c) for c in clusters),
                default_speaker_id=int(data.get("default_speaker_id", 0)),
            )
        except (TypeError, ValueError) as err:
            raise VoiceError(f"{source}: {err}") from err
        if config.sample_rate <= 0:
            raise VoiceError(f"{source}: audio.sample_rate must be positive")
        if config.phoneme_type not in ("espeak", "text"):
            raise VoiceError(
                f"{source}: phoneme_type {config.phoneme_type!r} is not supported "
                "(edgetts speaks espeak and text voices)"
            )
        return config

    @staticmethod
    def from_file(path: Path) -> PiperVoiceConfig:
        """Read and validate a ``.onnx.json`` file."""
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError as err:
            raise VoiceError(f"voice config not found: {path}") from err
        except (OSError, UnicodeDecodeError) as err:
            raise VoiceError(f"cannot read voice config {path}: {err}") from err
        try:
            data = json.loads(text)
        except json.JSONDecodeError as err:
            raise VoiceError(
                f"voice config {path} is not valid JSON: {err.msg} at line {err.lineno}"
            ) from err
        if not isinstance(data, Mapping):
            raise VoiceError(f"voice config {path} must hold a JSON object")
        return PiperVoiceConfig.from_dict(data, source=str(path))


def _merge_clusters(phonemes: list[str], clusters: frozenset[tuple[str, ...]]) -> list[str]:
    """Merge known multi-codepoint phonemes, longest first."""
    if not clusters:
        return phonemes
    longest = max(len(c) for c in clusters)
    merged: list[str] = []
    i = 0
    while i < len(phonemes):
        for n in range(min(longest, len(phonemes) - i), 1, -1):
            if tuple(phonemes[i : i + n]) in clusters:
                merged.append("".join(phonemes[i : i + n]))
                i += n
                break
        else:
            merged.append(phonemes[i])
            i += 1
    return merged


def is_speakable(phonemes: Sequence[str]) -> bool:
    """True when a sentence has at least one phoneme that makes a sound."""
    return any(p not in _SILENT_PHONEMES for p in phonemes)


@dataclass(frozen=True)
class Sentence:
    """One model run: a sentence's phonemes and its prosody."""

    phonemes: tuple[str, ...]
    rate: float = 1.0
    """Speed multiplier (SSML prosody rate): divides the length scale."""
    volume: float = 1.0
    """Linear gain (SSML prosody volume)."""


@dataclass(frozen=True)
class Pause:
    """Silence between sentences (SSML break)."""

    seconds: float


class PiperFrontend:
    """Text -> phonemes -> model ids for one voice config (no model needed)."""

    def __init__(self, config: PiperVoiceConfig, text: TextOptions | None = None) -> None:
        self.config = config
        self.text = text or TextOptions()

    def _espeak(self, text: str) -> list[list[str]]:
        if self.config.phoneme_type == "text":
            return [list(unicodedata.normalize("NFD", text))] if text.strip() else []
        return phonemize(text, self.config.espeak_voice)

    def plan(self, text: str) -> list[Sentence | Pause]:
        """Sentences (with prosody) and pauses, in speaking order.

        Phonemes given directly (lexicon ``/IPA/`` entries, SSML ``<phoneme>``)
        join the sentence around them, so they do not break its intonation.
        """
        segments = prepare(
            text,
            options=self.text.normalize_options,
            lexicon=self.text.lexicon,
            ssml=self.text.ssml,
            normalize=self.text.normalize,
        )
        plan: list[Sentence | Pause] = []
        current: list[str] = []
        prosody = (1.0, 1.0)

        def close() -> None:
            if current and is_speakable(current):
                merged = _merge_clusters(current, self.config.vowel_clusters)
                plan.append(Sentence(tuple(merged), rate=prosody[0], volume=prosody[1]))
            current.clear()

        for segment in segments:
            if isinstance(segment, Break):
                close()  # a break always ends the sentence; Break(0) is a paragraph end
                if segment.seconds > 0:
                    plan.append(Pause(segment.seconds))
                continue
            if (segment.rate, segment.volume) != prosody:
                close()
                prosody = (segment.rate, segment.volume)
            if isinstance(segment, Phonemes):
                if current and current[-1] != " ":
                    current.append(" ")
                current.extend(unicodedata.normalize("NFD", segment.ipa.strip()))
                continue
            sentences = self._espeak(segment.text)
            for index, phonemes in enumerate(sentences):
                if current and current[-1] != " " and phonemes:
                    current.append(" ")
                current.extend(phonemes)
                ends = phonemes[-1:] and phonemes[-1] in ".?!"
                if index < len(sentences) - 1 or ends:
                    close()
        close()
        return plan

    def phonemize(self, text: str) -> list[list[str]]:
        """Phonemes of each speakable sentence of ``text``."""
        return [list(item.phonemes) for item in self.plan(text) if isinstance(item, Sentence)]

    def phoneme_ids(self, phonemes: Sequence[str]) -> list[int]:
        """Model input ids: BOS, then each phoneme followed by PAD, then EOS."""
        id_map = self.config.phoneme_id_map
        ids: list[int] = [*id_map[BOS], *id_map[PAD]]
        for phoneme in phonemes:
            mapped = id_map.get(phoneme)
            if mapped is None:
                _LOGGER.warning("phoneme %r is not in the voice's id map; skipped", phoneme)
                continue
            ids.extend(mapped)
            ids.extend(id_map[PAD])
        ids.extend(id_map[EOS])
        return ids

    def sentence_ids(self, text: str) -> list[list[int]]:
        """Model input ids of each speakable sentence of ``text``."""
        return [self.phoneme_ids(p) for p in self.phonemize(text)]


class PiperVoice:
    """A loaded Piper voice: phonemizer settings, id map and an onnxruntime session."""

    def __init__(
        self,
        name: str,
        config: PiperVoiceConfig,
        session: Any,
        model_path: Path,
        text: TextOptions | None = None,
        *,
        split: SplitModels | None = None,
        tail_session: Any = None,
        flow_session: Any = None,
        streaming: StreamingOptions | None = None,
    ) -> None:
        """``session`` runs the whole model, or, with ``split``, its front (``flow_session`` the
        flow, ``tail_session`` the decoder); ``streaming`` (needs ``split``) makes
        :meth:`synthesize` yield windows."""
        self._name = name
        self.split = split
        self._tail = tail_session
        self._flow = flow_session
        self.streaming = streaming if split is not None else None
        self.config = config
        self.frontend = PiperFrontend(config, text)
        self.session = session
        self.model_path = model_path
        inputs = {i.name for i in session.get_inputs()}
        missing = [n for n in _REQUIRED_INPUTS if n not in inputs]
        if missing:
            raise VoiceError(
                f"{model_path} is not a Piper voice model: it has inputs "
                f"{sorted(inputs)}, expected {list(_REQUIRED_INPUTS)}"
            )
        if config.num_speakers > 1 and "sid" not in inputs:
            raise VoiceError(f"{model_path}: config has {config.num_speakers} speakers but no 'sid' input")
        self._has_sid = "sid" in inputs

    @staticmethod
    def load(
        model_path: Path,
        config_path: Path | None = None,
        *,
        runtime: RuntimeOptions | None = None,
        name: str | None = None,
        text: TextOptions | None = None,
        cache_dir: Path | None = None,
        streaming: StreamingOptions | bool | None = None,
    ) -> PiperVoice:
        """Load ``model_path`` and its ``.onnx.json`` (beside it unless given).

        ``cache_dir``: where the graph-optimised model (and the split of a
        streaming voice) is kept between loads (None: made on every load).
        ``streaming``: decode each sentence in windows, first audio after a
        few tens of ms (True: default :class:`StreamingOptions`).  A graph that
        cannot be split is spoken whole-sentence (logged once).  Off by
        default: whole-sentence chunks normalised per sentence, like piper-tts.
        """
        model_path = Path(model_path)
        if config_path is None:
            config_path = model_path.with_name(model_path.name + ".json")
        if not model_path.is_file():
            raise VoiceError(f"voice model not found: {model_path}")
        config = PiperVoiceConfig.from_file(Path(config_path))
        started = time.perf_counter()
        runtime = runtime or RuntimeOptions()
        voice_name = name or model_path.name.removesuffix(".onnx")
        options = StreamingOptions() if streaming is True else (streaming or None)
        if options is not None:
            split = _load_streaming(model_path, config, runtime, cache_dir, options)
            if split is not None:
                models, front, flow, tail = split
                _LOGGER.debug("loaded %s (split) in %.3f s", model_path, time.perf_counter() - started)
                return PiperVoice(voice_name, config, front, model_path, text, split=models, tail_session=tail,
                                  flow_session=flow, streaming=options)
        session = create_session(model_path, runtime, cache_dir=cache_dir)
        _LOGGER.debug("loaded %s in %.3f s", model_path, time.perf_counter() - started)
        return PiperVoice(voice_name, config, session, model_path, text)

    @property
    def name(self) -> str:
        return self._name

    @property
    def sample_rate(self) -> int:
        return self.config.sample_rate

    # -- ids -> audio -----------------------------------------------------------
    def _scales(self, config: SynthesisConfig) -> np.ndarray:
        pick = lambda value, default: default if value is None else value  # noqa: E731
        return np.array(
            [
                pick(config.noise_scale, self.config.noise_scale),
                pick(config.length_scale, self.config.length_scale),
                pick(config.noise_w, self.config.noise_w),
            ],
            dtype=np.float32,
        )

    def _speaker(self, config: SynthesisConfig) -> np.ndarray | None:
        if not self._has_sid:
            if config.speaker_id not in (None, 0):
                raise SynthesisError(f"voice {self.name} has one speaker; speaker_id {config.speaker_id} is invalid")
            return None
        sid = self.config.default_speaker_id if config.speaker_id is None else config.speaker_id
        if not 0 <= sid < max(self.config.num_speakers, 1):
            raise SynthesisError(
                f"speaker_id {sid} is out of range for voice {self.name} "
                f"({self.config.num_speakers} speakers)"
            )
        return np.array([sid], dtype=np.int64)

    def _feeds(self, ids: Sequence[int], config: SynthesisConfig) -> dict[str, np.ndarray]:
        feeds: dict[str, np.ndarray] = {
            "input": np.asarray(ids, dtype=np.int64)[np.newaxis, :],
            "input_lengths": np.array([len(ids)], dtype=np.int64),
            "scales": self._scales(config),
        }
        sid = self._speaker(config)
        if sid is not None:
            feeds["sid"] = sid
        return feeds

    def _run(self, session: Any, feeds: dict[str, np.ndarray], outputs: list[str] | None = None) -> list[np.ndarray]:
        """The one place a model runs."""
        try:
            return list(session.run(outputs, feeds))
        except Exception as err:
            raise SynthesisError(f"voice {self.name} failed to run: {str(err).strip().splitlines()[0]}") from err

    def _checked(self, output: np.ndarray) -> np.ndarray:
        audio = np.asarray(output, dtype=np.float32).reshape(-1)
        if audio.size == 0:
            raise SynthesisError(f"voice {self.name} produced no audio")
        if not np.all(np.isfinite(audio)):
            raise SynthesisError(f"voice {self.name} produced NaN or infinite samples")
        return audio

    def latent(self, ids: Sequence[int], config: SynthesisConfig) -> Latent:
        """Split voices: the decoder's inputs for one sentence (encoder and durations run here, once;
        the flow, if split off, runs as windows ask for frames)."""
        assert self.split is not None
        names = list(self.split.front_outputs)
        front = dict(zip(names, self._run(self.session, self._feeds(ids, config), names)))
        return Latent(front, self._flow_runner(), self.split.frame_inputs[0], self.split.flow_margin)

    def _flow_runner(self) -> Callable[[dict[str, np.ndarray]], np.ndarray] | None:
        """The split-off flow as a function of its inputs (None: the front ends at the decoder)."""
        if self._flow is None:
            return None
        return lambda feeds: self._run(self._flow, feeds)[0]

    def decode(self, feeds: dict[str, np.ndarray]) -> np.ndarray:
        """Split voices: raw audio of (a window of) the decoder's inputs."""
        return self._checked(self._run(self._tail, feeds)[0])

    def infer(self, ids: Sequence[int], config: SynthesisConfig) -> np.ndarray:
        """Run the model on one sentence's ids: raw float32 audio, shape (n,)."""
        if self.split is not None:
            latent = self.latent(ids, config)
            return self.decode(latent.window(0, latent.frames))
        return self._checked(self._run(self.session, self._feeds(ids, config))[0])

    def stream(
        self, ids: Sequence[int], config: SynthesisConfig, *, fast_start: bool = False
    ) -> Iterator[tuple[np.ndarray, bool]]:
        """Raw audio of one sentence in windows (split voices), each with "is it the last";
        concatenated, equal to :meth:`infer`'s (``fast_start``: see :meth:`_stream_fast`)."""
        assert self.split is not None
        options = self.streaming or StreamingOptions()
        limit = options.fast_start_ids
        if fast_start and limit > 0 and self.split.durations and len(ids) > limit + limit // 2:
            fast = self._stream_fast(ids, config, options)
            if fast is not None:
                yield from fast
                return
        latent = self.latent(ids, config)
        windows = plan_windows(latent.frames, options.first_frames, options.growth, options.max_frames)
        fade = min(options.crossfade, 2 * self.split.margin * self.split.hop)
        pieces = decode_windows(self.decode, latent, self.split.hop, self.split.margin, windows, fade)
        for index, piece in enumerate(pieces):
            yield piece, index == len(windows) - 1

    def _stream_fast(
        self, ids: Sequence[int], config: SynthesisConfig, options: StreamingOptions
    ) -> Iterator[tuple[np.ndarray, bool]] | None:
        """Fast start: the first windows from the encoder run on a prefix, the rest exact.

        The front runs on ``ids[:N]``; its first K ids (K: the last word boundary at or
        before 3/4 N, so each kept id saw at least N/4 ids of what follows) give the frames
        of the first windows, decoded while only those frames are known.  Then the front
        runs on the whole sentence and the sentence continues with its durations and
        frames from id K on, spliced after the prefix's frames; everything from there is
        what whole-sentence decoding computes.  None when the prefix is too short to hold
        a first window (then the exact path runs).
        """
        assert self.split is not None
        split = self.split
        limit = options.fast_start_ids
        space = self.config.phoneme_id_map.get(" ", (-1,))[0]
        keep_to = limit - max(4, limit // 4)
        keep = max((k for k in range(1, keep_to + 1) if ids[k] == space), default=keep_to)
        names = [*split.front_outputs, split.durations]
        prefix = dict(zip(names, self._run(self.session, self._feeds(ids[:limit], config), names)))
        prefix_durations = prefix.pop(split.durations).reshape(-1)
        kept = int(prefix_durations[:keep].sum())
        # Windows of the prefix end where the flow and the decoder would start to see its end.
        safe = kept - FLOW_REACH - split.margin
        if safe < 2 * options.first_frames:
            return None
        return self._fast_windows(ids, config, options, prefix, keep, kept, safe)

    def _fast_windows(
        self,
        ids: Sequence[int],
        config: SynthesisConfig,
        options: StreamingOptions,
        prefix: dict[str, np.ndarray],
        keep: int,
        kept: int,
        safe: int,
    ) -> Iterator[tuple[np.ndarray, bool]]:
        assert self.split is not None
        split = self.split
        prefix_frames = max(v.shape[-1] for v in prefix.values())
        head = {k: np.ascontiguousarray(v[..., :kept]) if v.shape[-1] == prefix_frames else v
                for k, v in prefix.items()}
        flow = self._flow_runner()
        joiner = SeamJoiner(split.hop, min(options.crossfade, 2 * split.margin * split.hop))
        windows = plan_windows(safe, options.first_frames, options.growth, options.max_frames)
        latent = Latent(head, flow, split.frame_inputs[0], split.flow_margin)
        for start, end in windows:
            lo, hi = max(0, start - split.margin), end + split.margin
            yield joiner.piece(self.decode(latent.window(lo, hi)), lo, start, end, False), False
        # The whole sentence, spliced after the prefix's first `keep` ids.
        names = [*split.front_outputs, split.durations]
        whole = dict(zip(names, self._run(self.session, self._feeds(ids, config), names)))
        spliced = splice_frames(head, whole, whole.pop(split.durations), keep)
        # The flow then runs over the whole spliced sentence, once; for a very long one that
        # would delay the next window past the audio in hand, so a short run with the flow's
        # full reach (exact) comes first, as for a first window.
        frames = max(v.shape[-1] for v in spliced.values())
        latent = Latent(spliced, flow, split.frame_inputs[0], FLOW_REACH, short_first=frames > _LONG_FLOW_FRAMES)
        following = min(options.max_frames, int(options.first_frames * options.growth))
        rest = [(safe + a, safe + b) for a, b in plan_windows(latent.frames - safe, following, options.growth,
                                                             options.max_frames)]
        pieces = decode_windows(self.decode, latent, split.hop, split.margin, rest, 0, joiner)
        for index, piece in enumerate(pieces):
            yield piece, index == len(rest) - 1

    def _finish(self, audio: np.ndarray, config: SynthesisConfig, *, streamed: bool = False) -> np.ndarray:
        if config.normalize_audio and streamed:
            # A window is played before the sentence's peak exists: a fixed gain per
            # voice (1 / the largest peak of the check sentences), see docs/streaming.md.
            assert self.split is not None
            audio = audio * np.float32(self.split.gain)
        elif config.normalize_audio:
            peak = float(np.max(np.abs(audio)))
            audio = audio / peak if peak >= 1e-8 else np.zeros_like(audio)
        if config.volume != 1.0:
            audio = audio * config.volume
        return np.clip(audio, -1.0, 1.0).astype(np.float32)

    def synthesize(
        self, text: str, config: SynthesisConfig | None = None, *, stream: bool | None = None
    ) -> Iterator[AudioChunk]:
        """Chunks in speaking order, each yielded as soon as it is computed.

        Whole-sentence: one chunk per sentence (and per pause).  Streaming
        (``stream``, default: the voice's setting): several chunks per
        sentence, the last with ``is_last_in_sentence``.
        """
        config = config or SynthesisConfig()
        streamed = (self.streaming is not None) if stream is None else (stream and self.split is not None)
        plan = self.frontend.plan(text)
        if not any(isinstance(item, Sentence) for item in plan):
            raise UnspeakableTextError(f"nothing speakable in {_preview(text)}")
        # Fast start (opt-in) only where first audio waits on it: the text's first sentence.
        first_sentence = next(i for i, item in enumerate(plan) if isinstance(item, Sentence))
        for index, item in enumerate(plan):
            if isinstance(item, Pause):
                silence = np.zeros(round(item.seconds * self.sample_rate), dtype=np.float32)
                yield AudioChunk(audio=silence, sample_rate=self.sample_rate, sentence_index=index)
                continue
            ids = self.frontend.phoneme_ids(item.phonemes)
            sentence_config = config
            if item.rate != 1.0 or item.volume != 1.0:
                length = config.length_scale if config.length_scale is not None else self.config.length_scale
                sentence_config = replace(
                    config, length_scale=length / item.rate, volume=config.volume * item.volume
                )
            if streamed:
                # Each window is yielded as soon as it is decoded (not when the next one is:
                # that would put the second window's time into the first audio).
                for piece, last in self.stream(ids, sentence_config, fast_start=index == first_sentence):
                    yield AudioChunk(
                        audio=self._finish(piece, sentence_config, streamed=True),
                        sample_rate=self.sample_rate,
                        sentence_index=index,
                        is_last_in_sentence=last,
                        phoneme_ids=tuple(ids),
                    )
                continue
            audio = self._finish(self.infer(ids, sentence_config), sentence_config)
            yield AudioChunk(
                audio=audio,
                sample_rate=self.sample_rate,
                sentence_index=index,
                is_last_in_sentence=True,
                phoneme_ids=tuple(ids),
            )


def _load_streaming(
    model_path: Path,
    config: PiperVoiceConfig,
    runtime: RuntimeOptions,
    cache_dir: Path | None,
    options: StreamingOptions,
) -> tuple[SplitModels, Any, Any, Any] | None:
    """The split of a voice and its two sessions, or None (whole-sentence fallback, logged once)."""
    from edgetts.voice.model_cache import prepare_dir

    usable = prepare_dir(cache_dir)

    def make_session(source: bytes | Path) -> Any:
        return create_session(source, runtime)

    def check_feeds() -> list[dict[str, np.ndarray]]:
        frontend = PiperFrontend(config, TextOptions(normalize=False))
        scales = np.array([0.0, config.length_scale, 0.0], dtype=np.float32)  # noise 0: deterministic
        feeds: list[dict[str, np.ndarray]] = []
        for ids in frontend.sentence_ids(_CHECK_TEXT):
            feed: dict[str, np.ndarray] = {
                "input": np.array([ids], dtype=np.int64),
                "input_lengths": np.array([len(ids)], dtype=np.int64),
                "scales": scales,
            }
            if config.num_speakers > 1:
                feed["sid"] = np.array([config.default_speaker_id], dtype=np.int64)
            feeds.append(feed)
        return feeds

    for attempt in (1, 2):
        try:
            models = load_split(model_path, usable, check_feeds, make_session, margin=options.margin,
                                flow_margin=options.flow_margin)
            front = create_session(models.front, runtime, cache_dir=usable)
            flow = None if models.flow is None else create_session(models.flow, runtime, cache_dir=usable)
            tail = create_session(models.tail, runtime, cache_dir=usable)
            return models, front, flow, tail
        except SplitError as err:
            key = str(model_path.resolve())
            if key not in _FALLBACK_LOGGED:
                _FALLBACK_LOGGED.add(key)
                _LOGGER.warning("%s: streaming off, whole sentences only: %s", model_path, err)
            return None
        except VoiceError as err:
            if attempt == 2 or usable is None:
                raise
            _LOGGER.warning("rebuilding the unusable split of %s: %s", model_path, err)
            discard_split(model_path, usable, options.margin, options.flow_margin)
    return None


def _preview(text: str, limit: int = 40) -> str:
    shown = text if len(text) <= limit else text[: limit - 1] + "…"
    return repr(shown)
