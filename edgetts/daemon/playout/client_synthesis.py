"""Synthesis for others than the speaker: Wyoming clients, HTTP /api/tts (issues 17 and 18).

Such a client wants a voice's audio back, not played.  It must never delay an
announcement: on a board the CPU is the scarce thing, and two inferences at once
would each take twice as long.  So side streams do not get threads of their
own in the daemon: the synthesis thread runs them, one chunk at a time
(window by window for a streaming voice), only while it has no announcement
in hand, round-robin over at most ``limit`` streams.  An announcement that
arrives waits for the chunk in progress at most.  Without a daemon
(``edgetts wyoming``), :meth:`ClientSynthesis.start_worker` gives the lane a
thread of its own.

A client that goes away closes its stream: the lane drops it before its next
chunk, so it costs nothing more.  A slow reader holds at most
:data:`MAX_PENDING` chunks: the lane skips its stream until it catches up.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterator

from edgetts.engine import AudioChunk, SynthesisConfig, Voice
from edgetts.errors import EdgeTTSError, SynthesisError
from edgetts.text.prepare import Prepared

_LOGGER = logging.getLogger(__name__)

MAX_PENDING = 32
"""Chunks made ahead of a stream's reader; beyond that the stream waits (memory stays bounded)."""

FIRST_HANDOFF_S = 0.01
"""After a stream's first chunk the lane waits (at most this long) until the reader has sent it
on and asks for the next.  Otherwise the next window's model run takes every core at once, and
the reader's threads (the asyncio loop writing to the socket) wait for the scheduler: measured
here, 2 threads on 2 cores, the first Wyoming chunk reached its client 4-7 ms after the voice
made it, against about 1 ms with the wait."""


class SideBusy(EdgeTTSError):
    """More side streams were asked for than ``limit`` running plus ``backlog`` waiting."""


class _End:
    """The marker after a stream's last chunk."""


_END = _End()


class SideStream:
    """One client's synthesis: its chunks, in order, as the lane makes them."""

    def __init__(self, lane: ClientSynthesis, voice: Voice, text: Prepared, config: SynthesisConfig) -> None:
        self._lane = lane
        self._voice, self._text, self._config = voice, text, config
        self._out: queue.Queue[AudioChunk | _End | BaseException] = queue.Queue()
        self._chunks: Iterator[AudioChunk] | None = None
        self._ended = False
        """The reader has seen the end (or the error): later calls say so again."""
        self._error: BaseException | None = None
        self.closed = False
        self._handed = 0
        """Chunks the reader has taken (reader side only)."""
        self._asked = threading.Event()
        """Set when the reader asks for a chunk after the first, or goes (FIRST_HANDOFF_S)."""

    # ------------------------------------------------------------ reader side
    def get(self, timeout: float | None = None) -> AudioChunk | None:
        """The next chunk; None after the last one.  Raises the voice's error, or TimeoutError."""
        if self._ended:
            if self._error is not None:
                raise self._error
            return None
        if self._handed:
            self._asked.set()  # the first chunk is sent on: the lane may take the cores again
        try:
            item = self._out.get(timeout=timeout)
        except queue.Empty:
            raise TimeoutError("no audio yet") from None
        if self._out.qsize() == MAX_PENDING - 1:
            self._lane.wake()  # it was held back for this reader: it may run again
        if isinstance(item, _End):
            self._ended = True
            return None
        if isinstance(item, BaseException):
            self._ended, self._error = True, item
            raise item
        self._handed += 1
        return item

    def __iter__(self) -> Iterator[AudioChunk]:
        try:
            while (chunk := self.get()) is not None:
                yield chunk
        finally:
            self.close()

    async def chunks(self) -> AsyncIterator[AudioChunk]:
        """The chunks for an asyncio server (each wait runs in a worker thread, never on the event loop)."""
        import asyncio  # (here: only the servers that read this way need it, ~2 MB a daemon without them keeps)

        try:
            while (chunk := await asyncio.to_thread(self.get)) is not None:
                yield chunk
        finally:
            self.close()

    def close(self) -> None:
        """The reader is done (or gone): the lane drops the stream before its next chunk."""
        if not self.closed:
            self.closed = True
            self._asked.set()
            self._out.put(_END)  # a reader blocked in get() returns
            self._lane.wake()

    # -------------------------------------------------------------- lane side
    @property
    def runnable(self) -> bool:
        return not self.closed and self._out.qsize() < MAX_PENDING

    def step(self) -> bool:
        """Make the next chunk (lane thread only); False once the stream has ended."""
        try:
            first = self._chunks is None
            if self._chunks is None:
                self._chunks = iter(self._voice.synthesize(self._text, self._config))
            self._out.put(next(self._chunks))
            if first:
                self._asked.wait(FIRST_HANDOFF_S)
            return True
        except StopIteration:
            self._out.put(_END)
        except EdgeTTSError as exc:
            self._out.put(exc)
        except Exception as exc:  # a bug or a broken model: this client's error, never the daemon's
            _LOGGER.exception("side synthesis failed")
            self._out.put(SynthesisError(f"synthesis failed: {type(exc).__name__}: {exc}"))
        return False

    def drop(self) -> None:
        """Lane thread only: end the voice's generator (its model state goes with it)."""
        close = getattr(self._chunks, "close", None)
        if close is not None:
            close()


class ClientSynthesis:
    """The lane of side streams: at most ``limit`` made at once (in turn), ``backlog`` more waiting."""

    def __init__(self, limit: int = 2, backlog: int = 16) -> None:
        if limit < 1 or backlog < 0:
            raise ValueError("limit must be at least 1 and backlog at least 0")
        self.limit, self.backlog = limit, backlog
        self._lock = threading.Condition()
        self._active: deque[SideStream] = deque()
        self._waiting: deque[SideStream] = deque()
        self._wake: Callable[[], None] | None = None
        self._worker: threading.Thread | None = None
        self._closed = False

    def attach(self, wake: Callable[[], None]) -> None:
        """Run on another thread's turn (the daemon's synthesis thread): ``wake`` tells it there is work."""
        self._wake = wake

    def open(self, voice: Voice, text: Prepared, config: SynthesisConfig) -> SideStream:
        """A new stream of ``voice`` speaking ``text``; SideBusy when the lane is full."""
        stream = SideStream(self, voice, text, config)
        with self._lock:
            if self._closed:
                raise SideBusy("synthesis is shutting down")
            self._prune()
            if self._live() + len(self._waiting) >= self.limit + self.backlog:
                raise SideBusy(f"busy: {self.limit} syntheses running and {self.backlog} waiting")
            (self._active if self._live() < self.limit else self._waiting).append(stream)
        self.wake()
        return stream

    def wake(self) -> None:
        with self._lock:
            self._lock.notify_all()
        if self._wake is not None:
            self._wake()

    @property
    def streams(self) -> int:
        """Streams running or waiting (for the status and tests)."""
        with self._lock:
            return self._live() + len(self._waiting)

    def _live(self) -> int:
        """Lock held: active streams not closed (a closed one stays until the lane's thread drops it)."""
        return sum(not s.closed for s in self._active)

    def has_work(self) -> bool:
        with self._lock:
            return any(stream.runnable for stream in self._active) or any(s.closed for s in self._active)

    def step(self) -> bool:
        """Make one chunk of the next stream in turn (the lane's thread only); False if none could run."""
        with self._lock:
            self._prune_closed()
            stream = next((s for s in self._active if s.runnable), None)
            if stream is None:
                return False
            self._active.remove(stream)
            self._active.append(stream)  # round-robin: the others go first next time
        if stream.step():
            return True
        with self._lock:
            if stream in self._active:
                self._active.remove(stream)
            self._prune()
        return True

    def _prune_closed(self) -> None:
        for stream in [s for s in self._active if s.closed]:
            self._active.remove(stream)
            stream.drop()
        self._prune()

    def _prune(self) -> None:
        """Lock held: forget closed waiting streams and move waiting ones up into free places."""
        self._waiting = deque(s for s in self._waiting if not s.closed)
        while self._waiting and self._live() < self.limit:
            self._active.append(self._waiting.popleft())

    def start_worker(self) -> None:
        """Give the lane a thread of its own (no daemon synthesis thread to run it)."""
        self._worker = threading.Thread(target=self._work, name="edgetts-side", daemon=True)
        self._worker.start()

    def _work(self) -> None:
        while True:
            with self._lock:
                while not self._closed and not self.has_work():
                    self._lock.wait(1.0)
                if self._closed:
                    return
            self.step()

    def close(self) -> None:
        """Refuse new streams and end the waiting ones' readers; the worker (if any) stops."""
        with self._lock:
            self._closed = True
            streams = [*self._active, *self._waiting]
            self._lock.notify_all()
        for stream in streams:
            stream.close()
        if self._worker is not None:
            self._worker.join(2.0)


__all__ = ["FIRST_HANDOFF_S", "MAX_PENDING", "SideBusy", "SideStream", "ClientSynthesis"]
