"""Rendering ahead (edgetts.daemon.schedule.render): a scheduled phrase is written to the phrase cache
whole, whatever cache.min_uses says; one cut short (dropped, or the lane shut down) is never written;
a full side lane is said, so the timetable tries again."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from edgetts.daemon.playout.client_synthesis import ClientSynthesis
from edgetts.daemon.playout.phrase_cache import PhraseCache
from edgetts.daemon.schedule.render import Renders
from edgetts.engine import SynthesisConfig
from edgetts.text.prepare import TextOptions, prepare_text

from support.fakes import FakeVoice

TEXT = "Doors are closing. Please stand clear. The next train leaves in two minutes."


def _wait(predicate: object, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():  # type: ignore[operator]
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def test_a_render_writes_the_whole_phrase_once_whatever_min_uses(tmp_path: Path) -> None:
    lane = ClientSynthesis(1, 0)
    lane.start_worker()
    cache = PhraseCache(tmp_path, 10_000_000, min_uses=3)
    voice = FakeVoice()
    renders = Renders(lane)
    try:
        assert renders.start("k1", voice, prepare_text(TEXT, TextOptions()), SynthesisConfig(seed=7), cache)
        _wait(lambda: "k1" in cache and not renders.running("k1"))
        hit = cache.get("k1")
        assert hit is not None and hit.sample_rate == voice.sample_rate
        expected = [voice.sentence_audio(i, s) for i, s in enumerate(voice.sentences(TEXT))]
        assert len(hit.sentences) == 3 and all(np.array_equal(a, b) for a, b in zip(hit.sentences, expected))
        assert voice.configs == [SynthesisConfig(seed=7)] and renders.written == 1
        assert renders.start(
            "k1", voice, prepare_text(TEXT, TextOptions()), SynthesisConfig(seed=7), cache
        )  # there: no work
        time.sleep(0.1)
        assert len(voice.calls) == 1
    finally:
        lane.close()


def test_a_render_cut_short_is_never_written(tmp_path: Path) -> None:
    lane = ClientSynthesis(1, 0)
    lane.start_worker()
    cache = PhraseCache(tmp_path, 10_000_000)
    slow = FakeVoice(delay_s=0.3)  # three sentences: 0.9 s
    renders = Renders(lane)
    try:
        assert renders.start("dropped", slow, prepare_text(TEXT, TextOptions()), SynthesisConfig(), cache)
        _wait(lambda: len(slow.calls) == 1)
        time.sleep(0.45)  # its first sentence made, not the others
        renders.drop("dropped")
        _wait(lambda: not renders.running("dropped"))
        # The lane is full (limit 1, no backlog) while one renders: said, not queued.
        assert renders.start("first", slow, prepare_text(TEXT, TextOptions()), SynthesisConfig(), cache)
        assert not renders.start("second", slow, prepare_text("Another one.", TextOptions()), SynthesisConfig(), cache)
        _wait(lambda: len(slow.calls) == 2)
        time.sleep(0.45)
        lane.close()  # the daemon stopping mid-render
        _wait(lambda: not renders.running("first"))
        time.sleep(1.0)  # (past where a whole render would have ended)
        assert "dropped" not in cache and "first" not in cache and len(cache) == 0
        assert list(tmp_path.iterdir()) == []
    finally:
        lane.close()
