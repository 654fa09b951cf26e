"""The synthesis thread: inference for the announcement playing, then a head start on the next.

It feeds the playback job sentence by sentence (sentence n+1 is synthesized
while sentence n plays), stores one full play in the phrase cache, and when
the voice raises hands the job its fallback clip (issue 6), telling the loop
first (:class:`FallbackUsed`).  When idle it runs the keepalive inference.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np

from edgetts.audio.job import PlaybackJob
from edgetts.daemon.pacing.keepalive import Keepalive
from edgetts.daemon.pacing.speed import Meter, Timed
from edgetts.daemon.playout.client_synthesis import ClientSynthesis
from edgetts.daemon.playout.clips import Clip
from edgetts.daemon.playout.latency import HopStamps
from edgetts.daemon.playout.phrase_cache import PhraseCache
from edgetts.engine import AudioChunk, SynthesisConfig, Voice
from edgetts.errors import EdgeTTSError, UnspeakableTextError
from edgetts.text.prepare import Prepared
from edgetts.voice.piper.voice import PiperVoice

_LOGGER = logging.getLogger(__name__)

#: Position (repeat, sentence) of a fallback clip in a job: after every sentence of its repeat.
FALLBACK_SENTENCE = 10**6


@runtime_checkable
class Interruptible(Protocol):
    """A voice whose model run can be ended from another thread (Piper voices)."""

    def interrupt(self) -> bool: ...


@runtime_checkable
class Resumable(Protocol):
    """A voice that can start a text at one of its sentences without running those before (Piper)."""

    def synthesize_from(
        self, text: str | Prepared, config: SynthesisConfig | None, first: int
    ) -> Iterator[AudioChunk]: ...


@dataclass(frozen=True)
class FallbackUsed:
    """To the loop: the synthesis thread handed ``job`` its fallback clip."""

    job: PlaybackJob
    reason: str
    detail: str


@dataclass(frozen=True)
class SynthRequest:
    """Everything the synthesis thread needs for one announcement."""

    job: PlaybackJob
    voice: Voice
    text: Prepared
    """Prepared at admission: the voice speaks it without preparing it again."""
    config: SynthesisConfig
    chime: Clip | None
    repeat: int
    start: tuple[int, int]
    """(repeat, sentence) to start from (after a preemption)."""
    fallback: Clip | None = None
    """Played when synthesis raises (reason synthesis_error or unspeakable)."""
    gain: float = 1.0
    """Loudness gain of this voice (1.0 = its own level): each piece's level, applied by the converter."""
    cache: PhraseCache | None = None
    cache_key: str | None = None
    speed_key: str | None = None
    """Whose runs these are in the speed samples (edgetts.daemon.pacing.speed): the voice's configured name,
    or its .onnx variant's key; None = ``voice.name``."""

    hops: HopStamps | None = None
    """Stamped when this thread takes the request and when the voice yields its first chunk."""

    whole: bool = False
    """Whole sentences even from a streaming voice (a synchronized announcement, edgetts.daemon.playout.sync)."""


class _Wake:
    """A side stream has work (edgetts.daemon.playout.client_synthesis): the thread looks again."""


_WAKE = _Wake()


@dataclass(frozen=True)
class Prefetch:
    """Synthesize the first sentence of what is likely to play next."""

    key: tuple[str, int, Prepared]
    """(announcement id, id(voice), text): a later request must match all three."""
    voice: Voice
    text: Prepared
    config: SynthesisConfig
    whole: bool = False
    """Whole sentences (a synchronized announcement's, seeded: its request is too)."""


class Synthesizer:
    """The thread that runs inference, one announcement at a time.

    After the announcement in hand is synthesized (it is then still playing),
    the thread synthesizes the first sentence of the next queued one
    (:class:`Prefetch`), so back-to-back announcements follow without a gap
    for inference.  A prefetch nobody asks for is dropped at the next one.
    """

    def __init__(
        self,
        notify: Callable[[Any], None] | None = None,
        *,
        setup: Callable[[], None] | None = None,
        keepalive: Keepalive | None = None,
        side: ClientSynthesis | None = None,
    ) -> None:
        self._notify = notify or (lambda _msg: None)
        self._requests: queue.SimpleQueue[SynthRequest | Prefetch | _Wake | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="edgetts-synth", daemon=True)
        self._prefetched: tuple[tuple[str, int, Prepared], Timed] | None = None
        self._meter = Meter()
        """What the request in hand cost so far: reported to the loop when it ends (issue 14)."""
        self._setup = setup
        self.keepalive = keepalive
        self._lock = threading.Lock()
        self._current: SynthRequest | None = None
        """The request being synthesized (guarded by ``_lock``: :meth:`abandon` reads it)."""
        self.side = side
        """Wyoming and HTTP syntheses (:mod:`edgetts.daemon.playout.client_synthesis`), run here when no
        announcement is in hand."""
        if side is not None:
            side.attach(lambda: self._requests.put(_WAKE))

    @property
    def thread(self) -> threading.Thread:
        """The synthesis thread (where it runs is what cpu.inference_cores decides)."""
        return self._thread

    def start(self) -> None:
        self._thread.start()

    def submit(self, request: SynthRequest | Prefetch) -> None:
        self._requests.put(request)

    def abandon(self, job: PlaybackJob) -> None:
        """From the loop: ``job`` was stopped (preempted), so the model run working for it ends now.

        Otherwise the thread sees the stop only between chunks, after the piece in hand
        (up to ~1 s here, several on a Pi) while the emergency waits (issue 13).  Under the
        lock, so the run ended is one of ``job``'s, never one of the request after it.
        """
        with self._lock:
            current = self._current
            if current is not None and current.job is job and isinstance(current.voice, Interruptible):
                if current.voice.interrupt():
                    _LOGGER.debug("synthesis for %s interrupted", job.token.id)

    def close(self, timeout: float = 2.0) -> None:
        self._requests.put(None)
        if self._thread.is_alive():
            self._thread.join(timeout)

    def _next(self) -> SynthRequest | Prefetch | None:
        """The next request; while none comes, side streams' chunks, or the keepalive inference when due."""
        ka, side = self.keepalive, self.side
        while True:
            if side is not None and self._requests.empty() and side.has_work():
                # One chunk, then the requests are looked at again: an announcement waits for one
                # window at most (issues 17, 18).
                side.step()
                if ka is not None:
                    ka.note_activity()
                continue
            timeout = ka.seconds_until_due() if ka is not None else None
            try:
                request = self._requests.get(timeout=timeout)
            except queue.Empty:
                assert ka is not None
                # A request arriving meanwhile stops it between sentences (issue 5).
                ka.run(preempted=lambda: not self._requests.empty())
                continue
            if not isinstance(request, _Wake):
                return request

    def _run(self) -> None:
        if self._setup is not None:
            self._setup()  # NUMA node and core of this thread, before any inference on it
        while (request := self._next()) is not None:
            if self.keepalive is not None:
                self.keepalive.note_activity()
            if isinstance(request, Prefetch):
                self._prefetch(request)
                continue
            job = request.job
            if job.stop_requested or job.closed:
                continue
            if request.hops is not None:
                request.hops.handoff, request.hops.synth_first = time.monotonic(), None
            with self._lock:
                self._current = request
            self._meter = Meter()
            try:
                self._synthesize(request)
            except UnspeakableTextError as exc:
                self._failed(request, "unspeakable", str(exc))
            except EdgeTTSError as exc:
                self._failed(request, "synthesis_error", str(exc))
            except Exception as exc:  # a bug or a broken model must not kill the daemon
                _LOGGER.exception("synthesis failed")
                self._failed(request, "synthesis_error", f"synthesis failed: {type(exc).__name__}: {exc}")
            finally:
                with self._lock:
                    self._current = None
                if self._meter.audio_s > 0:  # also a stopped one: its runs were real work
                    self._notify(self._meter.sample(request.speed_key or request.voice.name))

    def _failed(self, req: SynthRequest, reason: str, detail: str) -> None:
        job = req.job
        if job.closed:  # the deadline's fallback got there first
            return
        clip = req.fallback
        if job.stop_requested:
            _LOGGER.debug("synthesis for %s abandoned: %s", job.token.id, detail)
        if clip is None or job.stop_requested:  # (an interrupted one is not replaced)
            job.fail(detail)
            return
        # Told before the clip is handed over, so `fallback` precedes its `started`.
        self._notify(FallbackUsed(job, reason, detail))
        if not job.take_over(
            clip.audio,
            clip.rate,
            (job.position[0], FALLBACK_SENTENCE),
            before_speech=False,
            times=req.repeat - job.position[0],
            gain=clip.gain,
        ):
            _LOGGER.debug("fallback for %s came too late", job.token.id)

    def _prefetch(self, req: Prefetch) -> None:
        self._prefetched = None
        if req.whole and isinstance(req.voice, PiperVoice):
            chunks = Timed(req.voice.synthesize(req.text, req.config, stream=False))
        else:
            chunks = Timed(req.voice.synthesize(req.text, req.config))  # its cost counts for the request
        try:
            chunks.peek()
        except StopIteration:
            return
        except Exception:  # the real request will run it again and report why
            _LOGGER.debug("prefetch failed", exc_info=True)
            return
        self._prefetched = (req.key, chunks)

    def _chunks(self, req: SynthRequest, skip: int) -> Iterator[AudioChunk]:
        """The chunks of one play of ``req``'s text; with ``skip``, from that sentence on (or all of
        them, for a voice that cannot skip: the caller drops those before)."""
        assert req.voice is not None and req.text is not None
        held, self._prefetched = self._prefetched, None
        key = (req.job.token.id, id(req.voice), req.text)
        if held is not None and held[0] == key and req.start == (0, 0):
            return held[1].bind(self._meter)
        if req.whole and isinstance(req.voice, PiperVoice):
            return Timed(req.voice.synthesize_from(req.text, req.config, skip, stream=False), self._meter)
        if skip and isinstance(req.voice, Resumable):
            # A long text preempted at its 30th piece would else redo 29 pieces before
            # speaking again, past its deadline: its fallback clip would replace it (issue 13).
            return Timed(req.voice.synthesize_from(req.text, req.config, skip), self._meter)
        return Timed(req.voice.synthesize(req.text, req.config), self._meter)

    def _synthesize(self, req: SynthRequest) -> None:
        job = req.job
        cached: list[AudioChunk] | None = None  # one full play
        first_repeat, first_sentence = req.start
        for rep in range(first_repeat, req.repeat):
            skip = first_sentence if rep == first_repeat else 0
            if req.chime is not None and skip == 0:
                job.feed(req.chime.audio, req.chime.rate, (rep, -1), gain=req.chime.gain)
            if cached is not None and skip == 0:
                for piece in cached:
                    if not job.feed(
                        piece.audio, piece.sample_rate, (rep, piece.sentence_index), speech=True, gain=req.gain
                    ):
                        return
                continue
            pieces: list[AudioChunk] = []
            for chunk in self._chunks(req, skip):
                if job.stop_requested:
                    return
                if req.hops is not None and req.hops.synth_first is None:
                    req.hops.synth_first = time.monotonic()
                    if chunk.lead_s > 0:  # the job holds it that long: not the device's time
                        req.hops.lead = req.hops.synth_first + chunk.lead_s
                pieces.append(chunk)
                if chunk.sentence_index >= skip and not job.feed(
                    chunk.audio,
                    chunk.sample_rate,
                    (rep, chunk.sentence_index),
                    speech=True,
                    gain=req.gain,
                    lead_s=chunk.lead_s,  # the engine's buffering before playback (issue 14)
                ):
                    return  # a fallback clip took the job over (deadline): this work is not wanted
            if skip == 0:
                cached = pieces
                if req.cache is not None and req.cache_key is not None and req.config.seed is None:
                    # (a seeded play is one announcement's: its id's noise never comes again)
                    store_play(req.cache, req.cache_key, req.text.source, pieces)
        job.end()


def join_sentences(chunks: Sequence[AudioChunk]) -> tuple[int, list[np.ndarray]] | None:
    """One full play of a text as (rate, one array a sentence): a streaming voice's windows joined.

    None when ``chunks`` are no such play (nothing, several rates, sentences out of order).
    """
    rates = {chunk.sample_rate for chunk in chunks}
    if len(rates) != 1:
        return None
    sentences: list[list[np.ndarray]] = []
    for chunk in chunks:
        if chunk.sentence_index == len(sentences):
            sentences.append([chunk.audio])
        elif chunk.sentence_index == len(sentences) - 1:
            sentences[-1].append(chunk.audio)
        else:
            return None
    return rates.pop(), [parts[0] if len(parts) == 1 else np.concatenate(parts) for parts in sentences]


def store_play(cache: PhraseCache, key: str, text: str, chunks: Sequence[AudioChunk]) -> bool:
    """Store one full play of ``text`` (the daemon's and `edgetts render`'s one way); True if written."""
    play = join_sentences(chunks)
    if play is None:
        return False
    rate, sentences = play
    return cache.put(key, rate, sentences, text)


__all__ = [
    "FALLBACK_SENTENCE",
    "FallbackUsed",
    "Interruptible",
    "Prefetch",
    "Resumable",
    "SynthRequest",
    "Synthesizer",
    "join_sentences",
    "store_play",
]
