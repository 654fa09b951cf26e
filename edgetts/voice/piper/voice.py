"""Piper-format VITS voices: ``voice.onnx`` + ``voice.onnx.json``.

One method per stage: text -> phonemes -> ids (:class:`PiperFrontend`), ids ->
audio (:meth:`PiperVoice.infer`; a streaming voice runs :meth:`PiperVoice.latent`
once, then :meth:`PiperVoice.decode` per window), audio -> chunks
(:meth:`PiperVoice.synthesize`).  Every model run, of the voice's own session and of
its split-off parts, goes through :meth:`PiperVoice._run`, the one caller of ``session.run``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from edgetts.engine import AudioChunk, SynthesisConfig
from edgetts.errors import SynthesisError, UnspeakableTextError, VoiceError
from edgetts.text.prepare import Prepared, TextOptions
from edgetts.voice.onnx_session import Runs, RuntimeOptions, create_session, return_free_heap
from edgetts.voice.piper.check_feeds import check_feeds, model_feeds
from edgetts.voice.piper.fast_start import stream_fast, word_ends
from edgetts.voice.piper.frontend import Pause, PiperFrontend, Sentence
from edgetts.voice.piper.graph_split import SplitModels
from edgetts.voice.piper.lead import Item, Shape, Windows, plan_text
from edgetts.voice.piper.model_config import PiperVoiceConfig
from edgetts.voice.piper.pieces import MAX_SENTENCE_IDS
from edgetts.voice.piper.reckon import Reckoner
from edgetts.voice.piper.seeded_model import SEEDED_NOISE
from edgetts.voice.piper.seeded_noise import NOISE_SEED_INPUT, at_sentence, seed_feed
from edgetts.voice.piper.speed import SpeedModel
from edgetts.voice.piper.split_cache import open_split
from edgetts.voice.piper.streaming import Latent, WindowWorkers, decode_windows
from edgetts.voice.piper.windows import StreamingOptions, fast_start_applies, plan_windows

_LOGGER = logging.getLogger(__name__)

_REQUIRED_INPUTS = ("input", "input_lengths", "scales")


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
        max_sentence_ids: int = MAX_SENTENCE_IDS,
        runtime: RuntimeOptions | None = None,
    ) -> None:
        """``session`` runs the whole model, or, with ``split``, its front (``flow_session`` the
        flow, ``tail_session`` the decoder); ``streaming`` (needs ``split``) makes
        :meth:`synthesize` yield windows; ``max_sentence_ids``: the most ids of one run (a
        longer sentence is spoken in pieces); ``runtime``: how its runs run (:class:`Runs`)."""
        self._name = name
        self.split = split
        self._tail = tail_session
        self._flow = flow_session
        self.streaming = streaming if split is not None else None
        self.config = config
        self.frontend = PiperFrontend(config, text, max_ids=max_sentence_ids)
        self._runs = Runs(runtime or RuntimeOptions())
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
        self._seeded = NOISE_SEED_INPUT in inputs
        self.speed = SpeedModel()
        """What this voice's runs cost on this machine, learned as they run (issue 14)."""
        workers = self.streaming.workers if self.streaming is not None else 1
        self._workers = WindowWorkers(self.decode, workers) if workers > 1 else None
        self.accelerator: Any = None
        """What runs the flow's and decoder's windows besides the CPU (edgetts.voice.accel.npu.Npu: its
        ``problem`` says why it is not in use), None: the CPU alone."""

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
        max_sentence_ids: int = MAX_SENTENCE_IDS,
    ) -> PiperVoice:
        """Load ``model_path`` and its ``.onnx.json`` (beside it unless given).

        ``cache_dir``: where the graph-optimised model (and the split of a
        streaming voice) is kept between loads (None: made on every load).
        ``streaming``: decode each sentence in windows, first audio after a
        few tens of ms (True: default :class:`StreamingOptions`).  A graph that
        cannot be split is spoken whole-sentence (logged once).  Off by
        default: whole-sentence chunks normalised per sentence, like piper-tts.
        ``max_sentence_ids``: a sentence of more input ids is spoken in pieces
        (:mod:`.pieces`: what a run costs per id).
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
            split = open_split(
                model_path,
                runtime,
                cache_dir,
                lambda: check_feeds(config),
                margin=options.margin,
                flow_margin=options.flow_margin,
                # What a long first sentence's first chunk waits for runs folded (front_fold: same numbers).
                fold_lengths=(options.fast_start_ids,) if options.fast_start_ids > 0 else (),
            )
            if split is not None:
                models, front, flow, tail = split
                _LOGGER.debug("loaded %s (split) in %.3f s", model_path, time.perf_counter() - started)
                return PiperVoice(
                    voice_name,
                    config,
                    front,
                    model_path,
                    text,
                    split=models,
                    tail_session=tail,
                    flow_session=flow,
                    streaming=options,
                    max_sentence_ids=max_sentence_ids,
                    runtime=runtime,
                )
        session = create_session(model_path, runtime, cache_dir=cache_dir, transform=SEEDED_NOISE)
        _LOGGER.debug("loaded %s in %.3f s", model_path, time.perf_counter() - started)
        return PiperVoice(
            voice_name, config, session, model_path, text, max_sentence_ids=max_sentence_ids, runtime=runtime
        )

    @property
    def name(self) -> str:
        return self._name

    def prepare(self, text: str) -> Prepared:
        """``text`` prepared as this voice reads it (edgetts.engine.PreparesText)."""
        return self.frontend.prepare(text)

    @property
    def text_options(self) -> TextOptions:
        return self.frontend.text

    @property
    def sample_rate(self) -> int:
        return self.config.sample_rate

    # -- ids -> audio -----------------------------------------------------------
    def _scales(self, config: SynthesisConfig) -> np.ndarray:
        given = (config.noise_scale, config.length_scale, config.noise_w)
        voice = (self.config.noise_scale, self.config.length_scale, self.config.noise_w)
        return np.array([v if g is None else g for g, v in zip(given, voice)], dtype=np.float32)

    def _speaker(self, config: SynthesisConfig) -> int | None:
        if not self._has_sid:
            if config.speaker_id not in (None, 0):
                raise SynthesisError(f"voice {self.name} has one speaker; speaker_id {config.speaker_id} is invalid")
            return None
        sid = self.config.default_speaker_id if config.speaker_id is None else config.speaker_id
        if not 0 <= sid < max(self.config.num_speakers, 1):
            raise SynthesisError(
                f"speaker_id {sid} is out of range for voice {self.name} ({self.config.num_speakers} speakers)"
            )
        return sid

    def _feeds(self, ids: Sequence[int], config: SynthesisConfig) -> dict[str, np.ndarray]:
        scales, speaker = self._scales(config), self._speaker(config)
        return model_feeds(ids, scales, speaker, seed_feed(config.seed) if self._seeded else None)

    def _run(self, session: Any, feeds: dict[str, np.ndarray], outputs: list[str] | None = None) -> list[np.ndarray]:
        """The one place a model runs (and where what it costs is learned, :class:`SpeedModel`)."""
        started = time.perf_counter()
        try:
            result = self._runs.run(session, outputs, feeds)
        except Exception as err:
            raise SynthesisError(f"voice {self.name} failed to run: {str(err).strip().splitlines()[0]}") from err
        if session is self.session:
            kind, size = ("front" if self.split is not None else "whole"), feeds["input"].shape[-1]
        else:
            kind, size = ("flow" if session is self._flow else "tail"), max(v.shape[-1] for v in feeds.values())
        counts = getattr(session, "counts", None)  # an accelerator's: its CPU run of a shape it lacks is not its speed
        if counts is None or counts(int(size)):
            self.speed.record(kind, int(size), time.perf_counter() - started)
        return result

    def interrupt(self) -> bool:
        """From another thread: end the model run under way at its next operator, so the
        :meth:`synthesize` running it raises :class:`SynthesisError`; False if none was running."""
        return self._runs.interrupt()

    def _checked(self, output: np.ndarray) -> np.ndarray:
        audio = np.asarray(output, dtype=np.float32).reshape(-1)
        if audio.size == 0:
            raise SynthesisError(f"voice {self.name} produced no audio")
        if not np.all(np.isfinite(audio)):
            raise SynthesisError(f"voice {self.name} produced NaN or infinite samples")
        return audio

    def front(self, ids: Sequence[int], config: SynthesisConfig, names: list[str]) -> dict[str, np.ndarray]:
        """Split voices: the outputs ``names`` of the front (the voice's own session) on ``ids``."""
        return dict(zip(names, self._run(self.session, self._feeds(ids, config), names)))

    def latent(self, ids: Sequence[int], config: SynthesisConfig) -> Latent:
        """Split voices: the decoder's inputs for one sentence (encoder and durations run here, once;
        the flow, if split off, runs as windows ask for frames)."""
        assert self.split is not None
        front = self.front(ids, config, list(self.split.front_outputs))
        latent = Latent(front, self.flow_runner(), self.split.frame_inputs[0], self.split.flow_margin)
        self.speed.record_frames(len(ids), latent.frames)
        return latent

    def flow_runner(self) -> Callable[[dict[str, np.ndarray]], np.ndarray] | None:
        """The split-off flow as a function of its inputs (None: the front ends at the decoder)."""
        if self._flow is None:
            return None
        return lambda feeds: self._run(self._flow, feeds)[0]

    def accelerate(self, wrap: Callable[[str, Any], Any]) -> None:
        """Split voices: ``wrap(part, session)`` is what runs the ``flow`` and ``tail`` windows from now on,
        the CPU ``session`` behind it for what it cannot run (an NPU, edgetts.voice.accel.npu)."""
        assert self.split is not None
        if self._flow is not None:
            self._flow = wrap("flow", self._flow)
        self._tail = wrap("tail", self._tail)

    def decode(self, feeds: dict[str, np.ndarray]) -> np.ndarray:
        """Split voices: raw audio of (a window of) the decoder's inputs."""
        return self._checked(self._run(self._tail, feeds)[0])

    def window_workers(self) -> WindowWorkers | None:
        """What decodes several windows at once (StreamingOptions.workers > 1), else None."""
        return self._workers

    def infer(self, ids: Sequence[int], config: SynthesisConfig) -> np.ndarray:
        """Run the model on one sentence's ids: raw float32 audio, shape (n,)."""
        if self.split is not None:
            latent = self.latent(ids, config)
            return self.decode(latent.window(0, latent.frames))
        return self._checked(self._run(self.session, self._feeds(ids, config))[0])

    def stream(
        self,
        ids: Sequence[int],
        config: SynthesisConfig,
        *,
        fast_start: bool = False,
        windows: Windows | None = None,
        on_frames: Callable[[int, int], None] | None = None,
    ) -> Iterator[tuple[np.ndarray, bool]]:
        """Raw audio of one sentence in windows (split voices), each with "is it the last";
        concatenated, equal to :meth:`infer`'s (``fast_start``: see :mod:`.fast_start`).
        ``windows``: the schedule (default: the voice's StreamingOptions; :func:`.lead.plan_text`
        picks one for this machine's speed), whose ``prefix`` overrides ``fast_start``.
        ``on_frames``: told (frames, of how many first ids) as soon as a front has run: the
        sentence's before its first window; on fast start's path the ids it keeps of its prefix
        first, then the whole sentence's."""
        assert self.split is not None
        options = self.streaming or StreamingOptions()
        windows = windows or Windows(options.first_frames, options.growth, options.fast_start_ids if fast_start else 0)
        if self.split.durations and fast_start_applies(len(ids), windows.prefix):
            fast = stream_fast(self, ids, config, options, windows, on_frames)
            if fast is not None:
                yield from fast
                return
        latent = self.latent(ids, config)
        if on_frames is not None:
            on_frames(latent.frames, len(ids))
        spans = plan_windows(latent.frames, windows.first, windows.growth, options.max_frames)
        fade = min(options.crossfade, 2 * self.split.margin * self.split.hop)
        pieces = decode_windows(
            self.decode, latent, self.split.hop, self.split.margin, spans, fade, workers=self._workers
        )
        for index, piece in enumerate(pieces):
            yield piece, index == len(spans) - 1

    # -- audio -> chunks ----------------------------------------------------------
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
        self, text: str | Prepared, config: SynthesisConfig | None = None, *, stream: bool | None = None
    ) -> Iterator[AudioChunk]:
        """Chunks in speaking order, each yielded as soon as it is computed.

        A :class:`Prepared` text made with this voice's TextOptions is not prepared
        again (:meth:`PiperFrontend.segments`).

        Whole-sentence: one chunk per sentence (and per pause).  Streaming
        (``stream``, default: the voice's setting): several chunks per
        sentence, the last with ``is_last_in_sentence``.  A sentence longer
        than ``max_sentence_ids`` is several sentences (its pieces), so a
        consumer that stops between chunks stops within one bounded run.
        """
        return self.synthesize_from(text, config, 0, stream=stream)

    def synthesize_from(
        self, text: str | Prepared, config: SynthesisConfig | None, first: int, *, stream: bool | None = None
    ) -> Iterator[AudioChunk]:
        """:meth:`synthesize`'s chunks from sentence index ``first`` on; those before are planned,
        not run (a preempted text resumes without redoing the pieces it had played)."""
        try:
            yield from self._synthesize(text, config, stream, first)
        finally:
            # Finished or abandoned: what its runs freed goes back to the system, not only
            # to this process's heap (issue 13: a long text's peak stayed for good).
            return_free_heap()

    def _synthesize(
        self, text: str | Prepared, config: SynthesisConfig | None, stream: bool | None, first: int
    ) -> Iterator[AudioChunk]:
        config = config or SynthesisConfig()
        streamed = (self.streaming is not None) if stream is None else (stream and self.split is not None)
        plan = self.frontend.plan(text)
        if not any(isinstance(item, Sentence) for item in plan):
            source = text.source if isinstance(text, Prepared) else text
            raise UnspeakableTextError(f"nothing speakable in {_preview(source)}")
        # Fast start only where first audio waits on it: the text's first sentence.
        first_sentence = next(i for i, item in enumerate(plan) if isinstance(item, Sentence))
        items = self._items(plan[first:], first_sentence - first)
        shape = Shape(self.split, (self.streaming or StreamingOptions()) if streamed else None, self.sample_rate)
        schedule = plan_text(items, shape, self.speed)
        # The lead is reckoned again with the first sentence's frames as its front gave them.
        reckoner = Reckoner(items, shape, self.speed, schedule.windows, first)
        chunks = self._chunks(plan, first, config, schedule.windows, reckoner.teller)
        head = next(chunks, None)
        if head is None:
            return
        yield replace(head, lead_s=reckoner.lead())
        for chunk in chunks:  # fast start's: may extend the hold once the whole front has run
            more = reckoner.more()
            yield replace(chunk, lead_s=more) if more > 0 else chunk

    def _items(self, plan: Sequence[Sentence | Pause], fast_index: int) -> list[Item]:
        """``plan`` as :mod:`.lead` sees it: each sentence's ids and where its words end, each
        pause's length."""
        ids = [[] if isinstance(item, Pause) else self.frontend.phoneme_ids(item.phonemes) for item in plan]
        return [
            Item(pause_s=item.seconds)
            if isinstance(item, Pause)
            else Item(
                ids=len(ids[index]),
                rate=item.rate,
                first_in_text=index == fast_index,
                word_ends=word_ends(ids[index], self.config.space_id),
            )
            for index, item in enumerate(plan)
        ]

    def _chunks(
        self,
        plan: Sequence[Sentence | Pause],
        first: int,
        config: SynthesisConfig,
        windows: Sequence[Windows | None],
        tell: Callable[[int], Callable[[int, int], None]],
    ) -> Iterator[AudioChunk]:
        """The chunks of ``plan`` from item ``first`` on; ``tell(index)`` is told each streamed
        sentence's (frames, of how many ids) as its fronts run (:meth:`stream`)."""
        for index, item in enumerate(plan):
            if index < first:
                continue
            schedule = windows[index - first]
            if isinstance(item, Pause):
                silence = np.zeros(round(item.seconds * self.sample_rate), dtype=np.float32)
                yield AudioChunk(audio=silence, sample_rate=self.sample_rate, sentence_index=index)
            else:
                yield from self._speak(item, index, config, schedule, tell(index))

    def _speak(
        self,
        sentence: Sentence,
        index: int,
        config: SynthesisConfig,
        windows: Windows | None,
        on_frames: Callable[[int, int], None] | None = None,
    ) -> Iterator[AudioChunk]:
        """The chunks of one sentence: its ``windows`` (streamed) or the whole of it (None)."""
        ids = self.frontend.phoneme_ids(sentence.phonemes)
        config = at_sentence(config, index)
        if sentence.rate != 1.0 or sentence.volume != 1.0:
            length = config.length_scale if config.length_scale is not None else self.config.length_scale
            config = replace(config, length_scale=length / sentence.rate, volume=config.volume * sentence.volume)
        if windows is not None:
            # Each window is yielded as soon as it is decoded (not when the next one is:
            # that would put the second window's time into the first audio).
            for piece, last in self.stream(ids, config, windows=windows, on_frames=on_frames):
                yield AudioChunk(
                    audio=self._finish(piece, config, streamed=True),
                    sample_rate=self.sample_rate,
                    sentence_index=index,
                    is_last_in_sentence=last,
                    phoneme_ids=tuple(ids),
                )
            return
        yield AudioChunk(
            audio=self._finish(self.infer(ids, config), config),
            sample_rate=self.sample_rate,
            sentence_index=index,
            is_last_in_sentence=True,
            phoneme_ids=tuple(ids),
        )


def _preview(text: str, limit: int = 40) -> str:
    shown = text if len(text) <= limit else text[: limit - 1] + "…"
    return repr(shown)
