"""Issue 14: the plan takes fast start's prefix only where its kept words hold a first window.

Fast start keeps a prefix's ids up to its last word boundary at least FAST_START_LOOKAHEAD ids
before the prefix ends.  A sentence whose words end early there keeps few ids: "The next train to
arrive at platform two is the 9:42 service ..." keeps 20 of a 64-id prefix, ~35 frames, too few for
a first window past the flow's and decoder's reach; the voice then runs the whole sentence's front
after the prefix's, and its first audio waited for both (76 ms instead of 36 here).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from test_lead import TWO_THREADS

from edgetts.engine import SynthesisConfig
from edgetts.voice.catalog import default_voice_path
from edgetts.voice.model_cache import default_cache_dir
from edgetts.voice.onnx_session import RuntimeOptions
from edgetts.voice.piper.fast_start import kept_ids
from edgetts.voice.piper.frontend import Sentence
from edgetts.voice.piper.lead import Item, Shape, Windows, _chunks, plan_text
from edgetts.voice.piper.speed import SpeedModel
from edgetts.voice.piper.voice import PiperVoice
from edgetts.voice.piper.windows import StreamingOptions

ROOT = Path(__file__).resolve().parents[2]
EARLY_ENDS = (3, 9, 14, 20, 40, 47, 58, 70, 77, 88, 100)
"""Word ends of a sentence like the one above: the last at or before id 32 is 20."""


@pytest.fixture(scope="module")
def voice() -> PiperVoice:
    return PiperVoice.load(
        default_voice_path(),
        runtime=RuntimeOptions(threads=1),
        cache_dir=default_cache_dir(),
        streaming=StreamingOptions(fast_start_ids=64),
    )


def test_a_prefix_too_short_for_a_first_window_is_modelled_as_run_for_nothing(voice: PiperVoice) -> None:
    shape = Shape(voice.split, voice.streaming, voice.sample_rate)
    speed = SpeedModel(assumed=TWO_THREADS, frames_per_id=2.2)
    early = Item(ids=205, first_in_text=True, word_ends=EARLY_ENDS)
    exact = _chunks(early, shape, speed, Windows(4, 3.0))
    wasted = _chunks(early, shape, speed, Windows(4, 3.0, 64))
    assert wasted[0][0] == pytest.approx(exact[0][0] + speed.cost("front")(64))  # the caller's runs
    assert [chunk[1:] for chunk in wasted] == [chunk[1:] for chunk in exact]  # decoder runs and audio
    # Where its words end is not known: all 32 ids are assumed kept, and the prefix holds windows.
    unknown = Item(ids=205, first_in_text=True)
    assert sum(_chunks(unknown, shape, speed, Windows(4, 3.0, 64))[0][:2]) < sum(exact[0][:2]) / 2
    chosen = plan_text([early], shape, speed).windows[0]
    assert chosen is not None and chosen.prefix != 64
    assert chosen.prefix == 96  # keeps 58 ids: starts well before the whole sentence's front
    unknown_chosen = plan_text([unknown], shape, speed).windows[0]
    assert unknown_chosen is not None and unknown_chosen.prefix == 64


def test_the_voice_s_plan_never_runs_a_prefix_for_nothing(voice: PiperVoice) -> None:
    """Over the corpus, as the daemon speaks it (seeded noise): wherever the plan takes a prefix, the
    voice's fast start runs from it (it tells the frames of the ids it keeps first) rather than
    falling back to the exact path.  The plan runs on this machine's fit at 2 threads, pinned:
    which lines take a prefix must not depend on how busy the machine is while the test runs (the
    speed the voice learnt took no prefix for the train line on a loaded machine)."""
    assert voice.split is not None
    config = SynthesisConfig()
    shape = Shape(voice.split, voice.streaming, voice.sample_rate)
    speed = SpeedModel(assumed=TWO_THREADS)
    lines = [line.strip() for line in (ROOT / "tests/data/announcements.txt").read_text().splitlines() if line.strip()]
    prefixed, told = [], []
    for line in lines:
        plan = voice.frontend.plan(voice.prepare(line))
        first = next(index for index, item in enumerate(plan) if isinstance(item, Sentence))
        items = voice._items(plan, first)
        assert items[first].word_ends  # the voice tells the plan where the words end
        schedule = plan_text(items, shape, speed).windows[first]
        sentence = plan[first]
        assert isinstance(sentence, Sentence) and schedule is not None
        ids = voice.frontend.phoneme_ids(sentence.phonemes)
        told.clear()
        list(voice.stream(ids, config, windows=schedule, on_frames=lambda _frames, of_ids: told.append(of_ids)))
        if schedule.prefix:  # fast start ran: it told the frames of the ids it kept first
            prefixed.append(line)
            keep = kept_ids(ids, schedule.prefix, voice.config.phoneme_id_map[" "][0])
            assert told == [keep, len(ids)], (line, schedule, told)
    assert any(line.startswith("The next train to arrive") for line in prefixed)
    assert len(prefixed) >= 5
