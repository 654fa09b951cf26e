"""The side lane (edgetts.daemon.playout.client_synthesis): Wyoming and HTTP synthesis that never
delays an announcement.

Unit tests on the lane with fake voices, then the lane on the daemon's synthesis thread:
an announcement's request goes before side chunks, side streams run when it has none.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import numpy as np
import pytest

from edgetts.daemon.playout.client_synthesis import MAX_PENDING, ClientSynthesis, SideBusy
from edgetts.daemon.playout.synthesis import Synthesizer, SynthRequest
from edgetts.engine import AudioChunk, SynthesisConfig
from edgetts.errors import SynthesisError
from edgetts.text.prepare import Prepared, TextOptions, prepare_text

from support.fakes import FakeVoice

CONFIG = SynthesisConfig(noise_scale=0.0, noise_w=0.0)


def _text(words: str) -> Prepared:
    return prepare_text(words, TextOptions())


class CountingVoice:
    """Yields ``n`` one-sample chunks (value = chunk index), logging each as (tag, index); can fail at one."""

    def __init__(
        self, log: list[tuple[str, int]], n: int = 5, fail_at: int | None = None, delay_s: float = 0.0
    ) -> None:
        self.log, self.n, self.fail_at, self.delay_s = log, n, fail_at, delay_s
        self.closed: list[str] = []

    name = "counting"
    sample_rate = 16000

    def synthesize(self, text: str | Prepared, config: SynthesisConfig | None = None) -> Iterator[AudioChunk]:
        tag = text.source if isinstance(text, Prepared) else text
        try:
            for i in range(self.n):
                if i == self.fail_at:
                    raise SynthesisError(f"{tag} broke at {i}")
                if self.delay_s:
                    time.sleep(self.delay_s)
                self.log.append((tag, i))
                yield AudioChunk(np.full(1, float(i), np.float32), self.sample_rate, 0)
        finally:
            self.closed.append(tag)


def _drain(lane: ClientSynthesis) -> int:
    steps = 0
    while lane.has_work():
        assert lane.step()
        steps += 1
    return steps


def test_streams_take_turns_and_deliver_their_chunks_in_order() -> None:
    log: list[tuple[str, int]] = []
    voice = CountingVoice(log, n=3)
    lane = ClientSynthesis(limit=2, backlog=1)
    a, b, c = (lane.open(voice, _text(t), CONFIG) for t in ("a", "b", "c"))
    _drain(lane)
    # a and b alternate; c waits in the backlog until one of them ends
    assert log[:4] == [("a", 0), ("b", 0), ("a", 1), ("b", 1)]
    assert log.index(("c", 0)) > log.index(("a", 2))
    for stream in (a, b, c):
        assert [float(ch.audio[0]) for ch in stream] == [0.0, 1.0, 2.0]
        assert stream.get() is None  # the end stays the end
    assert lane.streams == 0


def test_the_lane_lets_the_first_chunk_out_before_it_makes_the_next(monkeypatch: pytest.MonkeyPatch) -> None:
    """After a stream's first chunk the lane waits until the reader has sent it on (asks for the
    next), so the next model run does not take the cores the reader needs; never for long."""
    from edgetts.daemon.playout import client_synthesis as side

    monkeypatch.setattr(side, "FIRST_HANDOFF_S", 30.0)  # long enough that only the reader ends the wait
    log: list[tuple[str, int]] = []
    lane = ClientSynthesis(limit=1)
    stream = lane.open(CountingVoice(log, n=3), _text("a"), CONFIG)
    lane.start_worker()
    first = stream.get(timeout=10)
    assert first is not None and float(first.audio[0]) == 0.0
    time.sleep(0.05)  # "sending it on"
    log.append(("sent", 0))
    assert [float(c.audio[0]) for c in stream] == [1.0, 2.0]
    assert log == [("a", 0), ("sent", 0), ("a", 1), ("a", 2)]  # nothing was made while it was sent
    lane.close()

    # a reader that takes the first chunk and goes: the lane does not wait for it
    monkeypatch.setattr(side, "FIRST_HANDOFF_S", 0.05)
    log.clear()
    lane = ClientSynthesis(limit=1)
    gone = lane.open(CountingVoice(log, n=MAX_PENDING + 5), _text("g"), CONFIG)
    lane.start_worker()
    assert gone.get(timeout=10) is not None
    deadline = time.monotonic() + 10
    while len(log) < MAX_PENDING + 1:  # it goes on making chunks until the pending bound
        assert time.monotonic() < deadline, log
        time.sleep(0.01)
    lane.close()


def test_a_full_lane_refuses_with_sidebusy_and_a_closed_place_is_free_again() -> None:
    voice = CountingVoice([])
    lane = ClientSynthesis(limit=1, backlog=1)
    first = lane.open(voice, _text("a"), CONFIG)
    lane.open(voice, _text("b"), CONFIG)
    with pytest.raises(SideBusy, match="1 syntheses running and 1 waiting"):
        lane.open(voice, _text("c"), CONFIG)
    first.close()
    lane.open(voice, _text("c"), CONFIG)  # the closed one's place is free


def test_a_closed_stream_is_dropped_before_its_next_chunk() -> None:
    log: list[tuple[str, int]] = []
    voice = CountingVoice(log, n=100)
    lane = ClientSynthesis(limit=2)
    gone = lane.open(voice, _text("gone"), CONFIG)
    kept = lane.open(voice, _text("kept"), CONFIG)
    lane.step()
    lane.step()
    gone.close()
    lane.start_worker()
    assert len(list(kept)) == 100  # (its reader keeps up, so the lane runs it to the end)
    assert [t for t, _ in log].count("gone") == 1  # nothing made for it after it closed
    assert "gone" in voice.closed  # and its generator was closed (the voice's state released)
    lane.close()


def test_a_slow_reader_holds_back_only_its_own_stream() -> None:
    log: list[tuple[str, int]] = []
    voice = CountingVoice(log, n=MAX_PENDING * 3)
    lane = ClientSynthesis(limit=2)
    slow = lane.open(voice, _text("slow"), CONFIG)
    fast = lane.open(voice, _text("fast"), CONFIG)
    fast_got = 0
    while True:
        _drain(lane)
        if fast_got == MAX_PENDING * 3:
            break
        while fast_got < MAX_PENDING * 3:  # the fast reader takes what there is
            try:
                fast.get(timeout=0)
            except TimeoutError:
                break
            fast_got += 1
    assert fast.get(timeout=1) is None  # fast got everything and its end
    made = [t for t, _ in log]
    # the slow stream stopped at MAX_PENDING chunks made ahead of its reader
    assert made.count("slow") == MAX_PENDING and made.count("fast") == MAX_PENDING * 3
    assert not lane.has_work()
    assert slow.get(timeout=0) is not None
    assert lane.has_work()  # it may run again once its reader took one


def test_a_voice_error_reaches_the_reader_not_the_lane() -> None:
    voice = CountingVoice([], n=5, fail_at=2)
    lane = ClientSynthesis()
    stream = lane.open(voice, _text("x"), CONFIG)
    _drain(lane)
    assert stream.get() is not None and stream.get() is not None
    with pytest.raises(SynthesisError, match="x broke at 2"):
        stream.get()
    with pytest.raises(SynthesisError):  # and again: the stream is over
        stream.get()


def test_the_worker_thread_runs_the_lane_without_a_daemon() -> None:
    lane = ClientSynthesis()
    lane.start_worker()
    voice = FakeVoice()
    stream = lane.open(voice, _text("Gate five. Now boarding."), CONFIG)
    got = [chunk.audio for chunk in stream]
    expected = [voice.sentence_audio(i, s) for i, s in enumerate(voice.sentences("Gate five. Now boarding."))]
    assert len(got) == 2 and all(np.array_equal(g, e) for g, e in zip(got, expected))
    lane.close()
    with pytest.raises(SideBusy, match="shutting down"):
        lane.open(voice, _text("late"), CONFIG)


def test_the_synthesis_thread_serves_an_announcement_before_side_chunks() -> None:
    """While side streams have chunks to make, an announcement request waits for one chunk at most."""
    log: list[tuple[str, int]] = []
    side_voice = CountingVoice(log, n=40, delay_s=0.005)
    lane = ClientSynthesis(limit=2)
    synth = Synthesizer(side=lane)
    synth.start()
    try:
        streams = [lane.open(side_voice, _text(t), CONFIG) for t in ("s1", "s2")]
        readers = [threading.Thread(target=lambda s=s: list(s)) for s in streams]
        for reader in readers:
            reader.start()
        while len(log) < 6:
            time.sleep(0.001)
        job = _RecordingJob(log)
        announcement = CountingVoice(log, n=3)
        synth.submit(
            SynthRequest(
                job=job,
                voice=announcement,
                text=_text("ann"),
                config=CONFIG,  # type: ignore[arg-type]
                chime=None,
                repeat=1,
                start=(0, 0),
            )
        )
        for reader in readers:
            reader.join(10)
        assert job.ended.wait(5)
    finally:
        synth.close()
    first = log.index(("ann", 0))
    # the announcement's chunks came one after the other: no side chunk between them
    assert log[first : first + 3] == [("ann", 0), ("ann", 1), ("ann", 2)]
    assert len([e for e in log if e[0] != "ann"]) == 80  # and both side streams were made whole


class _RecordingJob:
    """The playback job's side the synthesis thread uses: accepts every piece."""

    def __init__(self, log: list[tuple[str, int]]) -> None:
        self.ended = threading.Event()
        self.stop_requested = False
        self.closed = False
        self.position = (0, 0)

    @property
    def token(self) -> object:
        return type("Token", (), {"id": "ann"})()

    def feed(self, *args: object, **kwargs: object) -> bool:
        return True

    def end(self) -> None:
        self.ended.set()

    def fail(self, detail: str) -> None:
        self.ended.set()
