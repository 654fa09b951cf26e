"""One Wyoming client's connection: its events in order, its answers as they are produced.

Requests and answers (wyoming 1.10):

* `describe` -> `info` (edgetts.daemon.inbound.wyoming.voices);
* `synthesize` {text, voice} -> `audio-start`, `audio-chunk`*, `audio-stop`;
* `synthesize-start` {voice}, `synthesize-chunk`* {text}, `synthesize` (ignored: it repeats the
  whole text for older servers), `synthesize-stop` -> `audio-start`, `audio-chunk`* (each finished
  sentence is spoken while more text arrives), `audio-stop`, `synthesize-stopped`;
* `audio-start`, `audio-chunk`*, `audio-stop` -> `played` once it has been announced
  (edgetts.daemon.inbound.wyoming.audio_announcer); the connection keeps answering while it plays;
* `ping` -> `pong`;
* on a satellite listener (``wyoming.satellite_uri``), `info` names a satellite, and Home
  Assistant's `run-satellite` / `pause-satellite` are taken quietly: it only ever announces.

Text is prepared as an announcement's is (normaliser, lexicon, SSML check), and synthesis runs
as a side stream (edgetts.daemon.playout.client_synthesis): it yields to the speaker's queue, and a client that goes
away closes its stream before the next chunk.  Whatever goes wrong with one request is an `error`
event on this connection only; events of another type are dropped, as Wyoming peers do.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from collections.abc import AsyncIterator, Callable
from typing import Any, Protocol

from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.event import Event
from wyoming.info import Describe, Satellite
from wyoming.ping import Ping, Pong
from wyoming.tts import Synthesize, SynthesizeChunk, SynthesizeStart, SynthesizeStop, SynthesizeStopped

from edgetts.daemon.admission.admit import prepared
from edgetts.daemon.admission.intake import PayloadError
from edgetts.daemon.assets import Assets
from edgetts.daemon.inbound.wyoming import voices
from edgetts.daemon.inbound.wyoming.audio_announcer import AnnouncementAudio, AudioAnnouncer
from edgetts.daemon.inbound.wyoming.wire import BadEvent, Limits, read_event, send_error, write_event
from edgetts.errors import EdgeTTSError, UnspeakableTextError

_LOGGER = logging.getLogger(__name__)

#: Where streamed text may be cut into what is spoken now: after a sentence's end and a space.
_SENTENCE_CUT = re.compile(r"(?<=[.!?;:\n])[\"')\]]*\s+")

#: Streamed text spoken at once even without a sentence end (a client that never sends one).
_MAX_PENDING_CHARS = 600


class Busy(EdgeTTSError):
    """More Wyoming syntheses than max_jobs + backlog."""


class Jobs:
    """At most ``limit`` syntheses at once (the rest wait, ``backlog`` of them at most): wyoming/max_jobs.

    Made on the server's event loop's first use, so it is bound to that loop."""

    def __init__(self, limit: int, backlog: int) -> None:
        self.limit, self.backlog = limit, backlog
        self._sem: asyncio.Semaphore | None = None
        self._waiting = 0

    @property
    def waiting(self) -> int:
        """Syntheses waiting for a job now."""
        return self._waiting

    @contextlib.asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        if self._sem is None:
            self._sem = asyncio.Semaphore(self.limit)
        if self._sem.locked() and self._waiting >= self.backlog:
            raise Busy(f"busy: {self.limit} syntheses running and {self._waiting} waiting")
        self._waiting += 1
        try:
            await self._sem.acquire()
        finally:
            self._waiting -= 1
        try:
            yield
        finally:
            self._sem.release()


class Backend(Protocol):
    """What a session needs of the daemon (or of `edgetts wyoming` on its own)."""

    def assets(self) -> Assets: ...

    @property
    def side(self) -> Any: ...

    @property
    def announcer(self) -> AudioAnnouncer | None:
        """Where announcement audio goes; None = not accepted."""
        ...

    @property
    def jobs(self) -> Jobs: ...


def _codes(exc: Exception) -> str:
    return {
        "SideBusy": "busy",
        "Busy": "busy",
        "NoSuchVoice": "unknown-voice",
        "PayloadError": "bad-request",
        "UnspeakableTextError": "unspeakable",
    }.get(type(exc).__name__, "synthesis-failed")


class Session:
    """Reads one client's events until it leaves; at most one request runs at a time."""

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        backend: Backend,
        limits: Limits,
        on_close: Callable[[Session], None] | None = None,
        satellite: Satellite | None = None,
    ) -> None:
        self._reader, self._writer, self._backend, self._limits = reader, writer, backend, limits
        self._on_close = on_close
        self._satellite = satellite
        self._plays: set[asyncio.Task[None]] = set()
        """Announcements received and not yet played (each answers `played` or `error` when done)."""
        self._stream_voice: voices.Picked | None = None
        self._stream_text = ""
        self._stream_started = False
        self._audio: AnnouncementAudio | None = None
        self.peer = str(writer.get_extra_info("peername"))

    async def run(self) -> None:
        try:
            await self._events()
        except (ConnectionError, OSError) as exc:
            _LOGGER.debug("wyoming client %s gone: %s", self.peer, exc)
        finally:
            if self._audio is not None:
                self._audio.discard()
            self._writer.close()
            if self._on_close is not None:
                self._on_close(self)

    async def _events(self) -> None:
        while True:
            try:
                event = await read_event(self._reader, self._limits)
            except BadEvent as exc:
                _LOGGER.warning("wyoming client %s: %s", self.peer, exc)
                await send_error(self._writer, str(exc), "bad-event")
                if exc.fatal:
                    return
                continue
            if event is None:
                return
            try:
                await self._handle(event)
            except (EdgeTTSError, PayloadError) as exc:
                _LOGGER.info("wyoming client %s: %s: %s", self.peer, event.type, exc)
                await send_error(self._writer, str(exc), _codes(exc))
            except (KeyError, TypeError, ValueError, AttributeError) as exc:
                # A known event type with the wrong fields: `synthesize` without text, a rate "x".
                _LOGGER.info("wyoming client %s: malformed %s: %r", self.peer, event.type, exc)
                await send_error(self._writer, f"malformed {event.type} event: {exc!r}"[:300], "bad-event")

    async def _handle(self, event: Event) -> None:
        if Describe.is_type(event.type):
            await write_event(voices.info(self._backend.assets(), self._satellite).event(), self._writer)
        elif SynthesizeStart.is_type(event.type):
            start = SynthesizeStart.from_event(event)
            self._stream_voice = voices.pick(self._backend.assets(), start.voice)
            self._stream_text, self._stream_started = "", False
        elif SynthesizeChunk.is_type(event.type):
            await self._stream_chunk(SynthesizeChunk.from_event(event).text)
        elif SynthesizeStop.is_type(event.type):
            await self._stream_stop()
        elif Synthesize.is_type(event.type):
            request = Synthesize.from_event(event)
            if self._stream_voice is not None:
                return  # the streaming request's own text, repeated whole for older servers
            picked = voices.pick(self._backend.assets(), request.voice)
            started = await self._speak(picked, _text(request.text), started=False)
            await self._finish_audio(picked, started)
        elif AudioStart.is_type(event.type) or AudioChunk.is_type(event.type) or AudioStop.is_type(event.type):
            await self._announcement_audio(event)
        elif Ping.is_type(event.type):
            await write_event(Pong(text=Ping.from_event(event).text).event(), self._writer)
        else:
            _LOGGER.debug("wyoming client %s: %s dropped", self.peer, event.type)

    # -------------------------------------------------------- streaming text
    async def _stream_chunk(self, text: str) -> None:
        if self._stream_voice is None:
            raise EdgeTTSError("synthesize-chunk without synthesize-start")
        self._stream_text += _text(text)
        ready, rest = _complete_sentences(self._stream_text)
        if ready:
            self._stream_text = rest
            self._stream_started = await self._speak_some(self._stream_voice, ready, self._stream_started)

    async def _stream_stop(self) -> None:
        picked = self._stream_voice
        if picked is None:
            raise EdgeTTSError("synthesize-stop without synthesize-start")
        text, started = self._stream_text, self._stream_started
        self._stream_voice, self._stream_text, self._stream_started = None, "", False
        if text.strip():
            started = await self._speak_some(picked, text, started)
        await self._finish_audio(picked, started)
        await write_event(SynthesizeStopped().event(), self._writer)

    async def _speak_some(self, picked: voices.Picked, text: str, started: bool) -> bool:
        # A streamed piece may be only marks or an emoji: the rest of the text still speaks.
        try:
            return await self._speak(picked, text, started)
        except UnspeakableTextError:
            return started

    # -------------------------------------------------------------- speaking
    async def _speak(self, picked: voices.Picked, text: str, started: bool) -> bool:
        """Send ``text``'s audio as the side stream yields it; whether `audio-start` has been sent."""
        assets = self._backend.assets()
        text_in = prepared(text, assets, picked.name)  # in that voice's language (issue 16)
        async with self._backend.jobs.slot():
            stream = self._backend.side.open(picked.voice, text_in, picked.config)
            try:
                async for chunk in stream.chunks():
                    if not started:
                        await self._audio_start(picked)
                        started = True
                    pcm = chunk.to_int16().tobytes()
                    await write_event(
                        AudioChunk(rate=picked.voice.sample_rate, width=2, channels=1, audio=pcm).event(), self._writer
                    )
            finally:
                stream.close()  # a client gone mid-stream: nothing more is synthesized for it
        return started

    async def _audio_start(self, picked: voices.Picked) -> None:
        await write_event(AudioStart(rate=picked.voice.sample_rate, width=2, channels=1).event(), self._writer)

    async def _finish_audio(self, picked: voices.Picked, started: bool) -> None:
        if not started:  # nothing speakable: still a well-formed, empty answer
            await self._audio_start(picked)
        await write_event(AudioStop().event(), self._writer)

    # ------------------------------------------------------ announcement audio
    async def _announcement_audio(self, event: Event) -> None:
        announcer = self._backend.announcer
        if announcer is None:
            raise EdgeTTSError("this server does not take announcement audio")
        if AudioStart.is_type(event.type):
            if self._audio is not None:
                self._audio.discard()
            self._audio = announcer.begin(AudioStart.from_event(event))
        elif self._audio is None:
            raise EdgeTTSError(f"{event.type} without audio-start")
        elif AudioChunk.is_type(event.type):
            try:
                chunk = AudioChunk.from_event(event)
            except (KeyError, TypeError, ValueError):
                self._audio.discard(f"malformed audio-chunk: {event.data!r}"[:200])
            else:
                self._audio.add(chunk)  # a refused announcement says so once, at its audio-stop
        else:
            audio, self._audio = self._audio, None
            task = asyncio.create_task(self._played(audio))
            self._plays.add(task)
            task.add_done_callback(self._plays.discard)

    async def _played(self, audio: AnnouncementAudio) -> None:
        """`played` once ``audio`` has been announced, or an `error` saying why not.  A task of its own:
        Home Assistant's satellite pings while it waits and drops a connection that does not answer
        within 5 s, and an announcement may wait in the queue and play for longer.  A client gone
        meanwhile changes nothing: the announcement was accepted and plays."""
        try:
            answer = await audio.play()
        except EdgeTTSError as exc:
            _LOGGER.info("wyoming client %s: %s", self.peer, exc)
            await send_error(self._writer, str(exc), "not-played")
            return
        with contextlib.suppress(ConnectionError, OSError):
            await write_event(answer, self._writer)


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError("text is not a string")
    return value


def _complete_sentences(text: str) -> tuple[str, str]:
    """``text`` cut after its last complete sentence: (what can be spoken now, the rest)."""
    cut = None
    for match in _SENTENCE_CUT.finditer(text):
        cut = match.end()
    if cut is None:
        if len(text) > _MAX_PENDING_CHARS:
            space = text.rfind(" ", 0, _MAX_PENDING_CHARS)
            cut = space + 1 if space > 0 else _MAX_PENDING_CHARS
        else:
            return "", text
    return text[:cut], text[cut:]


__all__ = ["Backend", "Busy", "Jobs", "Session"]
