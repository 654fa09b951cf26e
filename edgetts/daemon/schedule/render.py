"""Scheduled speech rendered ahead into the phrase cache, so it starts on its second on a slow board.

The render runs on the side lane (edgetts.daemon.playout.client_synthesis): the synthesis thread
makes it a chunk at a time only while it has no announcement in hand, so rendering ahead never
delays one.  A thread of its own per render only waits for the chunks and writes the phrase,
keyed exactly as the play-out will look it up (the occurrence's id seeds its noise, whole
sentences: edgetts.daemon.playout.sync), so at its time the announcement plays from the cache.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator

from edgetts.daemon.playout.client_synthesis import ClientSynthesis, SideBusy, SideStream
from edgetts.daemon.playout.phrase_cache import PhraseCache
from edgetts.daemon.playout.synthesis import store_play
from edgetts.engine import AudioChunk, SynthesisConfig, Voice
from edgetts.errors import EdgeTTSError
from edgetts.text.prepare import Prepared
from edgetts.voice.piper.voice import PiperVoice

_LOGGER = logging.getLogger(__name__)


class _Whole:
    """``voice`` speaking whole sentences, never windows: what a `play_at` announcement is spoken
    with (a streamed sentence's windows follow each board's speed; the whole one does not)."""

    def __init__(self, voice: Voice) -> None:
        self._voice = voice
        self.name = voice.name
        self.sample_rate = voice.sample_rate

    def synthesize(self, text: str | Prepared, config: SynthesisConfig | None = None) -> Iterator[AudioChunk]:
        if isinstance(self._voice, PiperVoice):
            return self._voice.synthesize(text, config, stream=False)
        return self._voice.synthesize(text, config)


class Renders:
    """The renders in progress, by phrase-cache key."""

    def __init__(self, side: ClientSynthesis) -> None:
        self._side = side
        self._lock = threading.Lock()
        self._running: dict[str, SideStream] = {}
        self._dropped: set[str] = set()
        self.written = 0
        """Phrases written (for tests and the log)."""

    def start(self, key: str, voice: Voice, text: Prepared, config: SynthesisConfig, cache: PhraseCache) -> bool:
        """Render ``text`` into ``cache`` under ``key`` unless it is there or on its way; False when
        the side lane is full (the caller tries again at its next turn)."""
        with self._lock:
            if key in self._running or key in cache:
                return True
            try:
                stream = self._side.open(_Whole(voice), text, config)
            except SideBusy as exc:
                _LOGGER.info("rendering ahead waits: %s", exc)
                return False
            self._running[key] = stream
        threading.Thread(
            target=self._collect, args=(key, stream, cache, text.source), name="edgetts-render", daemon=True
        ).start()
        return True

    def running(self, key: str) -> bool:
        with self._lock:
            return key in self._running

    def _collect(self, key: str, stream: SideStream, cache: PhraseCache, source: str) -> None:
        chunks: list[AudioChunk] = []
        try:
            while (chunk := stream.get()) is not None:
                chunks.append(chunk)
        except EdgeTTSError as exc:  # it is synthesized (or falls back) at its time, as any announcement
            _LOGGER.warning("rendering %r ahead failed: %s", source[:60], exc)
            return
        finally:
            # (closed before its end, by drop() or the lane's shutdown: what came is not all of it)
            cut = stream.closed
            stream.close()
            with self._lock:
                self._running.pop(key, None)
                dropped = key in self._dropped
                self._dropped.discard(key)
        if dropped or cut or not chunks:
            return
        # Wanted at its time whatever cache.min_uses says (which spares an SD card a phrase said
        # once): put until it is written.
        for _ in range(max(1, cache.min_uses)):
            if store_play(cache, key, source, chunks):
                self.written += 1
                _LOGGER.info("rendered ahead: %r (%d pieces)", source[:60], len(chunks))
                return

    def drop(self, key: str) -> None:
        """Stop a render nobody needs any more (its announcement is being synthesized already)."""
        with self._lock:
            stream = self._running.get(key)
            if stream is not None:
                self._dropped.add(key)
        if stream is not None:
            stream.close()

    def close(self) -> None:
        with self._lock:
            streams = list(self._running.values())
            self._dropped.update(self._running)
        for stream in streams:
            stream.close()


__all__ = ["Renders"]
