"""Issue 14: windows and playback lead planned from the voice's measured speed."""

from __future__ import annotations

import pytest

from edgetts.voice.catalog import default_voice_path
from edgetts.voice.model_cache import default_cache_dir
from edgetts.voice.onnx_session import RuntimeOptions
from edgetts.voice.piper.lead import (
    FAST_START_GAIN,
    PAD_S,
    PAD_SHARE,
    Item,
    Shape,
    Windows,
    _chunks,
    _Clock,
    lead_s,
    plan_text,
)
from edgetts.voice.piper.reckon import Reckoner
from edgetts.voice.piper.speed import Cost, SpeedModel
from edgetts.voice.piper.voice import PiperVoice
from edgetts.voice.piper.windows import StreamingOptions

FAST = {"front": Cost(0.005, 0.00025), "flow": Cost(0.003, 0.00014), "tail": Cost(0.0, 0.0008)}
"""This machine at 1 thread: decoding ~10x faster than real time."""
PI4 = {"front": Cost(0.05, 0.0017), "flow": Cost(0.03, 0.0011), "tail": Cost(0.0, 0.0071)}
"""About a Pi 4 core (whole sentences at RTF ~0.8)."""
TOO_SLOW = {kind: Cost(c.fixed * 2, c.per_unit * 2) for kind, c in PI4.items()}
"""A board too slow for real time."""


@pytest.fixture(scope="module")
def shape() -> Shape:
    voice = PiperVoice.load(
        default_voice_path(),
        runtime=RuntimeOptions(threads=1),
        cache_dir=default_cache_dir(),
        streaming=StreamingOptions(fast_start_ids=64),
    )
    assert voice.split is not None
    return Shape(voice.split, voice.streaming, voice.sample_rate)


def _dry_seconds(
    items: list[Item], shape: Shape, speed: SpeedModel, windows: tuple[Windows | None, ...], lead: float
) -> float:
    """How long playback starting ``lead`` after the first chunk would wait, at the costs predicted."""
    ready, play, waited = 0.0, None, 0.0
    for item, schedule in zip(items, windows):
        for main, tail, audio in _chunks(item, shape, speed, schedule):
            ready += main + tail  # one worker: each chunk's runs one after the other
            if play is None:
                play = ready + lead
            waited += max(0.0, ready - play)
            play = max(play, ready) + audio
    return waited


TEXT = [Item(ids=140, first_in_text=True), Item(ids=60), Item(pause_s=0.3), Item(ids=220)]


def test_a_fast_machine_plays_the_first_small_window_at_once(shape: Shape) -> None:
    plan = plan_text(TEXT, shape, SpeedModel(assumed=FAST))
    assert plan.lead_s == 0.0
    first = plan.windows[0]
    assert first is not None and first.first == 4  # 46 ms: first audio as soon as can be
    later = [w for w in plan.windows[1:] if w is not None]
    assert later and all(w.first >= 64 for w in later)  # fewest seams once it keeps up


def _first_chunk_s(item: Item, shape: Shape, speed: SpeedModel, windows: Windows) -> float:
    main, tail, _audio = _chunks(item, shape, speed, windows)[0]
    return main + tail


def _planned_wait(item: Item, shape: Shape, speed: SpeedModel, windows: Windows) -> float:
    """How much later than its first chunk playback of ``item`` may start, as the plan reckons it
    (its safety margin included): 0 where every chunk is ready in time."""
    chunks = _chunks(item, shape, speed, windows)
    clock = _Clock(speed)
    return max(0.0, clock.trial(chunks)[0] - clock.trial(chunks[:1])[0])


TWO_THREADS = {"front": Cost(0.008, 0.00024), "flow": Cost(0.0018, 0.0000875), "tail": Cost(0.0005, 0.00034)}
"""This machine at 2 threads (the speed model's fit after the corpus): exact decoding keeps up."""
FLAT_FRONT = {**TWO_THREADS, "front": Cost(0.03, 0.000005)}
"""The same, but the front costs the same at any length: a prefix would start no sooner."""


@pytest.mark.parametrize(
    ("costs", "ids", "fast_start"),
    [
        (TWO_THREADS, 140, True),
        (TWO_THREADS, 205, True),
        (TWO_THREADS, 300, True),
        (FLAT_FRONT, 140, False),
        (FLAT_FRONT, 300, False),
    ],
)
def test_a_long_first_sentence_that_keeps_up_still_starts_from_its_prefix(
    shape: Shape,
    costs: dict[str, Cost],
    ids: int,
    fast_start: bool,
) -> None:
    """Exact decoding keeps up on a fast machine, but its first audio waits for the whole sentence's
    front: fast start is taken where it starts at least FAST_START_GAIN sooner, and only there."""
    speed = SpeedModel(assumed=costs)
    item = Item(ids=ids, first_in_text=True)
    plan = plan_text([item], shape, speed)
    chosen = plan.windows[0]
    assert shape.options is not None and chosen is not None and plan.lead_s == 0.0
    exact = Windows(shape.options.first_frames, shape.options.growth)
    assert (chosen.first, chosen.growth) == (exact.first, exact.growth)  # the voice's own schedule kept up
    fast = Windows(exact.first, exact.growth, prefix=chosen.prefix or 64)
    gain = 1 - _first_chunk_s(item, shape, speed, fast) / _first_chunk_s(item, shape, speed, exact)
    assert (chosen.prefix > 0) is fast_start, (gain, chosen)
    assert (gain >= FAST_START_GAIN) is fast_start, gain
    if fast_start and ids >= 205:
        assert gain > 0.35  # most of a long first sentence's wait is its whole front


MEASURED_TWO_THREADS = {"front": Cost(0.0063, 0.000155), "flow": Cost(0.0028, 0.000094), "tail": Cost(0.0016, 0.000365)}
"""The speed model's fit on this machine at 2 threads, after the corpus (3 December 2026): the decoder's
fixed cost is larger than TWO_THREADS's."""


SLOW_DECODER = {**MEASURED_TWO_THREADS, "tail": Cost(0.0032, 0.00073)}
"""MEASURED_TWO_THREADS with a decoder twice as slow (a busier core)."""


@pytest.mark.parametrize("ids", [125, 205])
def test_fast_start_grows_its_windows_as_slowly_as_it_needs_to_keep_up(shape: Shape, ids: int) -> None:
    """After the prefix's windows the whole sentence's front runs: with a slower decoder, at the
    voice's own growth (4 -> 32 frames) fast start's second window is late for the end of the first.
    The plan then grows more slowly rather than give up fast start or take it with a stop."""
    assert shape.options is not None
    # A slow speaker's 2.75 frames an id: the plan reckons its 32 kept ids at 70 frames (HEAD_SHARE),
    # enough windows before the whole front for the second window to be late at the voice's growth.
    speed = SpeedModel(assumed=SLOW_DECODER, frames_per_id=2.75)
    item = Item(ids=ids, first_in_text=True)
    own = Windows(shape.options.first_frames, shape.options.growth)
    assert _planned_wait(item, shape, speed, Windows(own.first, own.growth, 64)) > 0.002
    plan = plan_text([item], shape, speed)
    chosen = plan.windows[0]
    assert chosen is not None and (chosen.first, chosen.prefix) == (own.first, 64) and chosen.growth < own.growth
    assert plan.lead_s == 0.0 and _planned_wait(item, shape, speed, chosen) == 0.0
    gain = 1 - _first_chunk_s(item, shape, speed, chosen) / _first_chunk_s(item, shape, speed, own)
    assert gain >= FAST_START_GAIN, gain


ONE_THREAD = {"front": Cost(0.0033, 0.000215), "flow": Cost(0.0028, 0.000141), "tail": Cost(0.0, 0.000585)}
"""The speed model's fit on this machine at 1 thread, after the corpus (5 December 2026)."""


def _count_chunks(monkeypatch: pytest.MonkeyPatch) -> list[Windows | None]:
    """The schedules whose chunks the plan predicts from now on, in order."""
    import edgetts.voice.piper.lead as lead

    tried: list[Windows | None] = []
    counting = lead._chunks

    def count(item: Item, shape_: Shape, speed_: SpeedModel, windows: Windows | None) -> list[tuple[float, float]]:
        tried.append(windows)
        return counting(item, shape_, speed_, windows)

    monkeypatch.setattr(lead, "_chunks", count)
    return tried


def test_the_first_sentence_s_search_stops_at_larger_first_windows_once_one_keeps_up(
    shape: Shape,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A 301-id first sentence (a piece of the 60-word probe) at 1 thread: the voice's own schedule
    does not quite keep up, so the plan searches.  A first window larger than one that kept up with
    the same prefix only starts later: the search skips them, and picks what trying every one
    picks (trying every one is 100 schedules with 64-frame windows, ~2 ms of that sentence's first
    audio)."""
    import edgetts.voice.piper.lead as lead

    speed = SpeedModel(assumed=ONE_THREAD, frames_per_id=2.2)
    items = [Item(ids=301, first_in_text=True)]
    assert shape.options is not None
    clock = _Clock(speed)
    every = [(clock.trial(_chunks(items[0], shape, speed, w))[0], w) for w in lead._candidates(items[0], shape.options)]
    own = every[0]
    assert own[0] > sum(_chunks(items[0], shape, speed, own[1])[0][:2]) * clock.safety  # it searches
    counting = lead._chunks
    tried = _count_chunks(monkeypatch)
    chosen = plan_text(items, shape, speed).windows[0]
    assert len(every) >= 100 and len(tried) < 30, len(tried)
    soonest = min(start for start, _ in every)
    assert chosen is not None and chosen.prefix == 64
    assert clock.trial(counting(items[0], shape, speed, chosen))[0] <= soonest * 1.02


@pytest.mark.parametrize(
    "costs",
    [FAST, ONE_THREAD, MEASURED_TWO_THREADS, PI4, TOO_SLOW],
    ids=["fast", "one-thread", "two-threads", "pi4", "too-slow"],
)
def test_the_search_skips_schedules_whose_front_alone_ends_too_late_and_chooses_the_same(
    shape: Shape,
    costs: dict[str, Cost],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A schedule whose front alone ends after the best start so far (+2 %) cannot be _better: the
    search skips it without predicting its chunks, and chooses exactly what trying it chooses."""
    import edgetts.voice.piper.lead as lead

    texts = [
        [Item(ids=301, first_in_text=True), Item(pause_s=0.05), Item(ids=285), Item(ids=287)],
        TEXT,
        [Item(ids=33, first_in_text=True)],
        [Item(ids=180, first_in_text=True), Item(ids=400)],
    ]
    tried = _count_chunks(monkeypatch)
    pruned = [plan_text(text, shape, SpeedModel(assumed=costs, frames_per_id=2.2)) for text in texts]
    with_bound = len(tried)
    tried.clear()
    monkeypatch.setattr(lead._Clock, "earliest", lambda self, compute: float("-inf"))
    every = [plan_text(text, shape, SpeedModel(assumed=costs, frames_per_id=2.2)) for text in texts]
    assert pruned == every
    assert with_bound <= len(tried)
    if costs is ONE_THREAD:  # the 60-word probe: 18 schedules tried instead of 22
        assert with_bound <= len(tried) - 4, (with_bound, len(tried))


@pytest.mark.parametrize("costs", [PI4, TOO_SLOW], ids=["pi4", "too-slow"])
def test_a_slow_board_gets_a_lead_that_never_runs_dry(shape: Shape, costs: dict[str, Cost]) -> None:
    speed = SpeedModel(assumed=costs)
    plan = plan_text(TEXT, shape, speed)
    assert plan.lead_s > 0
    assert _dry_seconds(TEXT, shape, speed, plan.windows, plan.lead_s) == 0.0
    # the lead is needed: started at the first chunk, the same plan would wait (~0.11 s with the
    # default 64-frame windows)
    assert _dry_seconds(TEXT, shape, speed, plan.windows, 0.0) > 0.05
    assert lead_s(TEXT, shape, speed, plan.windows) == pytest.approx(plan.lead_s)
    # small first windows cost more than they play there: the plan starts bigger
    first = plan.windows[0]
    assert first is not None and first.first > 4


def test_a_smaller_largest_window_needs_less_in_hand_on_a_slow_board(shape: Shape) -> None:
    """A window's audio comes when all of it is decoded: on a board the largest window sets what must
    be in hand before playback starts, and the plan reckons it so (64 frames against 128)."""
    assert shape.options is not None and shape.options.max_frames == 64  # the default
    larger_windows = Shape(shape.split, StreamingOptions(fast_start_ids=64, max_frames=128), shape.sample_rate)
    speed = SpeedModel(assumed=PI4)
    smaller, larger = plan_text(TEXT, shape, speed), plan_text(TEXT, larger_windows, speed)
    assert smaller.lead_s < larger.lead_s - 0.1, (smaller.lead_s, larger.lead_s)
    assert _dry_seconds(TEXT, shape, speed, smaller.windows, smaller.lead_s) == 0.0


def test_the_lead_grows_as_the_board_slows(shape: Shape) -> None:
    leads = [plan_text(TEXT, shape, SpeedModel(assumed=c)).lead_s for c in (FAST, PI4, TOO_SLOW)]
    assert leads[0] < leads[1] < leads[2]
    audio = sum(a for item in TEXT for _, _, a in _chunks(item, shape, SpeedModel(assumed=TOO_SLOW), None))
    assert leads[2] > 0.5 * audio  # twice too slow: about half the text must be in hand


def test_a_sentence_whose_front_has_run_is_planned_with_its_own_frames(shape: Shape) -> None:
    """A sentence longer than its ids predict has a last window later than predicted: the lead
    reckoned once its front has run (Item.frames) covers it."""
    speed = SpeedModel(assumed=PI4, frames_per_id=2.2)
    predicted = [Item(ids=85, first_in_text=True)]
    plan = plan_text(predicted, shape, speed)
    longer = Item(ids=85, first_in_text=True, frames=230)
    assert sum(a for _, _, a in _chunks(longer, shape, speed, plan.windows[0])) == pytest.approx(230 * 256 / 22050)
    lead_longer = lead_s([longer], shape, speed, plan.windows)
    assert lead_longer > plan.lead_s
    assert _dry_seconds([longer], shape, speed, plan.windows, lead_longer) == 0.0


def test_the_first_chunk_carries_the_lead_of_the_first_sentence_s_real_frames() -> None:
    """The voice's first chunk: its lead is the one of the sentence's frames as its front gave
    them, not of the frames its ids predicted (here a model that predicts 1 frame an id)."""
    from edgetts.engine import SynthesisConfig

    voice = PiperVoice.load(
        default_voice_path(),
        runtime=RuntimeOptions(threads=1),
        cache_dir=default_cache_dir(),
        streaming=StreamingOptions(fast_start_ids=64),
    )
    speed = voice.speed = SpeedModel(assumed=PI4, frames_per_id=1.0)
    assert voice.split is not None
    text = "Please stand clear of the closing doors."
    sentence = next(item for item in voice.frontend.plan(text) if hasattr(item, "phonemes"))
    ids = voice.frontend.phoneme_ids(sentence.phonemes)
    config = SynthesisConfig(noise_scale=0.0, noise_w=0.0)
    frames = voice.latent(ids, config).frames
    chunks = list(voice.synthesize(text, config))
    shape = Shape(voice.split, voice.streaming, voice.sample_rate)
    items = [Item(ids=len(ids), first_in_text=True)]
    windows = plan_text(items, shape, speed).windows
    real = lead_s([Item(ids=len(ids), first_in_text=True, frames=frames)], shape, speed, windows)
    assert frames > 1.5 * len(ids)
    assert chunks[0].lead_s == pytest.approx(real)
    assert real > lead_s(items, shape, speed, windows)


def test_fast_start_s_lead_is_reckoned_from_its_prefix_s_frames_then_the_whole_sentence_s(shape: Shape) -> None:
    """Fast start's first windows come before the sentence's front: the first chunk's lead is
    reckoned from the frames of the ids it keeps of its prefix (the rest predicted), and once the
    whole front has run, a longer sentence than reckoned extends the hold by what its real frames
    need."""
    speed = SpeedModel(assumed=PI4, frames_per_id=1.0)  # predicts far too few frames
    item = Item(ids=180, first_in_text=True)
    windows = (Windows(8, 1.5, 64),)
    reckoner = Reckoner([item], shape, speed, windows)
    reckoner.teller(0)(75, 32)  # the prefix's front: 75 frames for the 32 ids fast start keeps
    first = reckoner.lead()
    with_prefix = lead_s([Item(ids=180, first_in_text=True, prefix=(75, 32))], shape, speed, windows)
    assert first == pytest.approx(with_prefix)
    # 75 frames in hand from the 32 kept ids (not 32 x 0.8), 223 in all (not 180): not what the ids
    # predict
    assert abs(first - lead_s([item], shape, speed, windows)) > 0.05
    assert reckoner.more() == 0.0  # nothing more known yet
    reckoner.teller(0)(480, 180)  # the whole front: 480 frames
    whole = lead_s([Item(ids=180, first_in_text=True, frames=480, prefix=(75, 32))], shape, speed, windows)
    assert whole > first + 0.2  # (0.28 s more with the default 64-frame windows)
    extra = reckoner.more()
    assert whole - 0.05 < extra <= whole  # from now: the whole lead less what has passed since the first
    assert reckoner.more() == 0.0  # told once
    # A sentence no longer than reckoned needs no more.
    same = Reckoner([item], shape, speed, windows)
    same.teller(0)(75, 32)
    same.lead()
    same.teller(0)(75 + 148, 180)
    assert same.more() == 0.0


def test_the_voice_tells_fast_start_s_frames_as_each_front_runs() -> None:
    """The voice's side of the above: on fast start's path the frames of the ids it keeps of its
    prefix, then the whole sentence's; on the exact path the sentence's once."""
    from edgetts.engine import SynthesisConfig
    from edgetts.voice.piper.fast_start import kept_ids

    voice = PiperVoice.load(
        default_voice_path(),
        runtime=RuntimeOptions(threads=1),
        cache_dir=default_cache_dir(),
        streaming=StreamingOptions(fast_start_ids=64),
    )
    assert voice.split is not None
    text = "Flight BA 2490 to Lisbon is now boarding at gate 17."
    sentence = next(item for item in voice.frontend.plan(text) if hasattr(item, "phonemes"))
    ids = voice.frontend.phoneme_ids(sentence.phonemes)
    config = SynthesisConfig(noise_scale=0.0, noise_w=0.0)
    told: list[tuple[int, int]] = []
    for fast_start in (True, False):
        told.clear()
        pieces = list(voice.stream(ids, config, fast_start=fast_start, on_frames=lambda f, n: told.append((f, n))))
        audio = sum(piece.size for piece, _ in pieces)
        frames = audio // voice.split.hop
        if fast_start:  # the ids it keeps of its prefix (up to a word's end) and their frames
            keep = kept_ids(ids, 64, voice.config.phoneme_id_map[" "][0])
            assert [n for _, n in told] == [keep, len(ids)] and keep <= 32
            assert keep < told[0][0] < told[1][0] == frames
        else:
            assert told == [(frames, len(ids))]


def test_a_lead_s_pad_grows_with_what_is_predicted() -> None:
    """The pad covers a prediction's error: a first window a few ms short at full speed is not held
    100 ms more (it was, on 5-8 of 40 lines in bench_daemon), while a board's lead keeps the whole pad."""

    def lead(chunks: list[tuple[float, float]]) -> float:
        clock = _Clock(SpeedModel())
        clock.add([(compute / clock.safety, 0.0, audio) for compute, audio in chunks])
        return clock.lead

    assert lead([(0.02, 0.046), (0.035, 1.0)]) == 0.0  # the second window ready in time: no lead
    # Ready at 75 ms with 46 ms in hand from 20 ms: 9 ms short, padded by half of 75 ms.
    assert lead([(0.02, 0.046), (0.055, 1.0)]) == pytest.approx(0.009 + PAD_SHARE * 0.075)
    assert lead([(0.5, 0.9), (1.0, 1.0)]) == pytest.approx(0.1 + PAD_S)  # a board: 100 ms short


def test_the_speed_model_learns_from_runs() -> None:
    speed = SpeedModel()
    for size in (10, 40, 80, 120, 160):
        speed.record("tail", size, 0.002 + 0.01 * size)
    cost = speed.cost("tail")
    assert cost.per_unit == pytest.approx(0.01, rel=0.01) and cost.fixed == pytest.approx(0.002, abs=1e-3)
    for _ in range(60):  # the board slows down: the latest runs win
        speed.record("tail", 100, 3.0)
    assert speed.cost("tail")(100) == pytest.approx(3.0, rel=0.05)
    assert SpeedModel(assumed=FAST).cost("tail") == FAST["tail"]


def _run_at(speed: SpeedModel, costs: dict[str, Cost], times: int, factor: float = 1.0) -> None:
    for _ in range(times):
        for kind, size in (("front", 150), ("flow", 60), ("flow", 300), ("tail", 40), ("tail", 120)):
            speed.record(kind, size, costs[kind](size) * factor)


def test_a_sudden_slowdown_stretches_the_plan_before_the_fits_catch_up(shape: Shape) -> None:
    speed = SpeedModel()
    _run_at(speed, PI4, 10)  # steady runs: the fits match them
    assert speed.slowdown == pytest.approx(1.0)
    _run_at(speed, PI4, 1, factor=1.4)  # a busy neighbour: every run 40 % slower
    assert speed.slowdown > 1.2
    # the 48-sample fits have moved little: without the slowdown the plan would run dry
    plan = plan_text(TEXT, shape, speed)
    busy = SpeedModel(assumed={kind: Cost(c.fixed * 1.4, c.per_unit * 1.4) for kind, c in PI4.items()})
    assert _dry_seconds(TEXT, shape, busy, plan.windows, plan.lead_s) == 0.0
    _run_at(speed, PI4, 3)  # the neighbour is gone: back to the steady plan within a few runs
    assert speed.slowdown < 1.05
    _run_at(speed, PI4, 1, factor=0.7)  # faster runs never shrink the margin below SAFETY
    assert speed.slowdown == 1.0


@pytest.mark.parametrize("costs", [PI4, TOO_SLOW], ids=["pi4", "too-slow"])
def test_a_lead_planned_from_a_board_s_measured_runs_never_runs_dry_there(shape: Shape, costs: dict[str, Cost]) -> None:
    """The speed model as the voice fills it (its runs' costs, not assumed ones) plans a lead that
    never runs dry on the board those runs came from, and one that is needed there.

    (It was a run of the real voice under a CPU quota calibrated to RTF ~0.75, asserting its stops
    <= 30 ms: how well the plan predicts a real slowed core is a measurement, tools/bench_board.py's
    `underruns` / `gap_ms_total` for edgetts under its calibrated quota, beside `earliest_start_median_s`,
    the start perfect foresight would have chosen.)"""
    speed = SpeedModel()
    _run_at(speed, costs, 10)  # ten announcements' runs on that board
    plan = plan_text(TEXT, shape, speed)
    board = SpeedModel(assumed=costs)
    assert plan.lead_s > 0
    assert _dry_seconds(TEXT, shape, board, plan.windows, plan.lead_s) == 0.0
    assert _dry_seconds(TEXT, shape, board, plan.windows, 0.0) > 0.05  # the control: without it, it stops


def test_fast_start_s_whole_front_is_reckoned_as_slow_as_it_has_been(shape: Shape) -> None:
    """That front runs while the prefix's windows decode; measured on the Pi 4 profile it took
    1.4-1.7x what the front's fit (fronts run alone, mostly) predicts, and the line that ran dry
    there was short of its start by that much.  The speed model learns the ratio and the lead grows."""
    item = Item(ids=200, first_in_text=True, word_ends=tuple(range(5, 200, 6)))
    fast = (Windows(4, 8.0, prefix=64),)
    pinned = SpeedModel(assumed=PI4, frames_per_id=2.2)
    pinned.record_busy_front(predicted=0.4, seconds=0.8)
    assert pinned.busy_front == 1.0  # an assumed front cost plans the same whatever runs took
    speed = SpeedModel(assumed={k: c for k, c in PI4.items() if k != "front"}, frames_per_id=2.2)
    for _ in range(60):  # the front's fit learned: PI4's front, at two lengths
        speed.record("front", 64, PI4["front"](64))
        speed.record("front", 200, PI4["front"](200))
    assert speed.busy_front == 1.0
    before = lead_s([item], shape, speed, fast)
    for _ in range(8):
        speed.record_busy_front(predicted=0.4, seconds=0.8)  # twice the fit
    assert speed.busy_front == pytest.approx(2.0, abs=0.1)
    after = lead_s([item], shape, speed, fast)
    assert after > before + 0.2  # the 200-id front's 0.39 s predicted ~0.39 s longer, less the slack
    for _ in range(20):  # faster than the fit: back to it, never below
        speed.record_busy_front(predicted=0.4, seconds=0.1)
    assert speed.busy_front == pytest.approx(1.0, abs=1e-3)
    assert lead_s([item], shape, speed, fast) == pytest.approx(before, rel=1e-3)
