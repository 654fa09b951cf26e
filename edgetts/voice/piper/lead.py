"""When playback may start, and the windows that make it soonest (issue 14).

A listener hears a stutter when a chunk arrives after the audio before it has
played.  Given what the voice will run for a text (the windows and flow spans
of :mod:`.streaming` and :mod:`.fast_start`) and what each run costs on this
machine (:class:`~.speed.SpeedModel`), the chunks' ready times are predicted;
playback starting at S never waits for chunk k when S >= ready_k - (audio
before k).  The plan picks, sentence by sentence, the window schedule (first
window, growth, fast start or not) that makes S smallest, and the lead is S
minus the first chunk's ready time.

On a fast machine every schedule keeps up: the first window is the smallest
(first audio soonest) and windows grow to the largest (fewest seams, least
CPU).  Where decoding is barely faster than real time, small windows cost
more than they play (each is decoded with 2 x margin frames of context), so
the plan starts with larger ones and a lead instead of a stutter; on a board
too slow for real time the lead is what it takes, and the text starts later
rather than stopping mid-word.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from edgetts.voice.piper.graph_split import SplitModels
from edgetts.voice.piper.speed import SpeedModel
from edgetts.voice.piper.streaming import FLOW_REACH, flow_span
from edgetts.voice.piper.windows import (
    StreamingOptions,
    fast_start_applies,
    fast_start_kept,
    plan_windows,
    window_size,
)

SAFETY = 1.15
"""Predicted run times are stretched by this much, times the model's recent slowdown: the fit
follows the last few sentences, and a run can be slower than its neighbours (a busy core, a page
fault)."""

PAD_S = 0.1
"""The most added to a lead that is needed at all: the device starts a little after the first write,
and a sentence's frames are predicted from its ids (a window the prediction did not see can be larger)."""

PAD_SHARE = 0.5
"""A lead's pad is also at most this share of the predicted time until the chunk that needs the lead is
ready: what the pad covers is a prediction's error, which grows with what is predicted.  With the whole
100 ms, a 9 ms shortfall of a first 4-frame window at full speed held playback 109 ms, on 5-8 of 40 lines
in bench_daemon at 2 threads; on a board that chunk is ready ~1 s on, and its pad stays 100 ms."""

FAST_START_GAIN = 0.2
"""A first sentence that keeps up decoded exactly still takes fast start if that starts it this much
sooner.  Fast start costs one more front run, on its prefix: here, at 2 threads, a 205-id first
sentence then starts in ~37 ms instead of ~71 ms, while a 100-id one would start ~7 ms sooner for
about a fifth more CPU on that sentence."""

HEAD_SHARE = 0.8
"""Fast start's kept ids come to fewer frames than the voice's mean per id (which counts sentence
ends' long last phones): 0.74-1.22 of it, median 0.90, over the corpus's long first sentences at
64-128 ids and 3 seeds.  Before the prefix front has run, the plan takes this share, so a prefix
whose head would fall short of a first window is not chosen (it would run for nothing)."""

_FIRSTS = (4, 8, 16, 24, 32, 48, 64, 96, 128)
_GROWTHS = (1.5, 2.0, 3.0, 8.0)
_SEARCHED = 3
"""Items of a text whose schedule is searched for (the rest take the cheapest)."""
_PREFIXES = (1.0, 1.5, 2.0)
"""Fast start's prefix, in units of StreamingOptions.fast_start_ids: a longer one plays longer before the
whole sentence's encoder run (which then has more audio in hand), but starts later."""


@dataclass(frozen=True)
class Item:
    """One item of a text as the voice will run it: a sentence of ``ids`` ids or a pause."""

    ids: int = 0
    pause_s: float = 0.0
    rate: float = 1.0
    first_in_text: bool = False
    """The text's first sentence: its schedule is chosen for the soonest start, the others' for the
    least CPU that keeps up."""
    frames: int = 0
    """The sentence's frames once its front has run (0: predicted from its ids, as before it has)."""
    prefix: tuple[int, int] = (0, 0)
    """(frames, ids) of the ids fast start keeps of its prefix, as the prefix's front gave them
    (which runs before the whole sentence's): until that has run, the sentence's frames are
    those and the rest predicted from their ids."""
    word_ends: tuple[int, ...] = ()
    """Where its words end (id positions): fast start keeps a prefix's ids up to one of them, so
    what its first windows may hold (none known: up to :func:`.windows.fast_start_keep_to`)."""


@dataclass(frozen=True)
class Shape:
    """How the voice runs: its split (None: whole model), streaming options (None: whole sentences)."""

    split: SplitModels | None
    options: StreamingOptions | None
    sample_rate: int


@dataclass(frozen=True)
class Windows:
    """A streamed sentence's schedule: first window, growth, and fast start's prefix (ids; 0 = exact)."""

    first: int
    growth: float
    prefix: int = 0


@dataclass(frozen=True)
class Plan:
    """Per item its windows (None: a pause or a whole sentence), and the lead of the text."""

    windows: tuple[Windows | None, ...]
    lead_s: float


Chunk = tuple[float, float, float]
"""A predicted chunk: (seconds of runs on the caller's thread before it: fronts and flow, seconds of
its decoder run, seconds of audio).  Whole sentences and pauses run everything on the caller's thread."""


def _ready_times(base: float, chunks: Sequence[Chunk], safety: float, workers: int) -> list[float]:
    """When each chunk of one sentence is ready, its first runs beginning at ``base``.

    As :class:`~.streaming.WindowWorkers` runs them: the caller prepares chunk j's inputs once it
    has prepared chunk j-1's and chunk j-``workers`` is ready (the first chunk is waited for before
    anything else), its decoder run then begins at once on a free worker, and chunks are handed on
    in order.  One worker is the serial voice: each chunk's runs one after the other."""
    ready: list[float] = []
    prepared = base
    for j, (main, tail, _audio) in enumerate(chunks):
        if j:
            prepared = max(prepared, ready[max(0, j - max(1, workers))])
        prepared += main * safety
        done = prepared + tail * safety
        ready.append(max(ready[-1], done) if ready else done)
    return ready


class _Clock:
    """Predicted compute and audio of the chunks so far: S, the earliest start that never waits."""

    def __init__(self, speed: SpeedModel, workers: int = 1) -> None:
        self.safety = SAFETY * speed.slowdown
        self.workers = workers
        self.ready = 0.0
        self.heard = 0.0
        self.first: float | None = None
        self.start = 0.0
        self.binding = 0.0
        """When the chunk that sets ``start`` is predicted ready."""

    def add(self, chunks: Sequence[Chunk]) -> None:
        """``chunks``: one item's (a sentence runs after the one before has ended)."""
        for ready, (_main, _tail, audio) in zip(_ready_times(self.ready, chunks, self.safety, self.workers), chunks):
            self.ready = ready
            if self.first is None:
                self.first = self.ready
            if self.ready - self.heard > self.start:
                self.start, self.binding = self.ready - self.heard, self.ready
            self.heard += audio

    def earliest(self, compute: float) -> float:
        """S at the least if the next chunk takes ``compute`` (what ``trial`` cannot go below)."""
        return max(self.start, self.ready + compute * self.safety - self.heard)

    def trial(self, chunks: Sequence[Chunk]) -> tuple[float, float]:
        """(S, compute: the runs so far and those of ``chunks``, one after the other) if ``chunks``
        came next.  Compute is what schedules of one start are told apart by (fewer seams cost
        less), and with several workers it is CPU, not when the last chunk is ready."""
        heard, start = self.heard, self.start
        for ready, (_main, _tail, audio) in zip(_ready_times(self.ready, chunks, self.safety, self.workers), chunks):
            start = max(start, ready - heard)
            heard += audio
        return start, self.ready + sum(main + tail for main, tail, _audio in chunks) * self.safety

    @property
    def lead(self) -> float:
        lead = self.start - (self.first or 0.0)
        return lead + min(PAD_S, PAD_SHARE * self.binding) if lead > 1e-6 else 0.0


def _workers(shape: Shape) -> int:
    return shape.options.workers if shape.options is not None and shape.split is not None else 1


def plan_text(items: Sequence[Item], shape: Shape, speed: SpeedModel) -> Plan:
    """The schedule of each sentence of ``items`` that starts playback soonest, and its lead.

    Sentence by sentence: for the text's first one, the voice's own schedule (smallest first
    window) if it keeps up, else the schedule that starts soonest (the cheaper of two within
    2 %); for later ones, the cheapest that keeps up (largest windows, fewest seams), else the
    soonest.  Exact decoding is
    preferred to fast start, which is tried only where it is needed.
    """
    clock = _Clock(speed, _workers(shape))
    chosen: list[Windows | None] = []
    for index, item in enumerate(items):
        options = shape.options
        if item.ids <= 0 or options is None or shape.split is None:
            clock.add(_chunks(item, shape, speed, None))
            chosen.append(None)
            continue
        # Sentences after the first few are spoken while those play: the cheapest schedule, without
        # a search (which costs ~2 ms a sentence here, ten times that on a board's core).
        windows = _choose(clock, item, shape, options, speed) if index < _SEARCHED else next(_candidates(item, options))
        clock.add(_chunks(item, shape, speed, windows))
        chosen.append(windows)
    return Plan(tuple(chosen), clock.lead)


def _choose(clock: _Clock, item: Item, shape: Shape, options: StreamingOptions, speed: SpeedModel) -> Windows:
    best: tuple[float, float, Windows] | None = None
    kept_up: dict[int, int] = {}  # per prefix, the first window of a schedule that kept up
    front = speed.cost("front")  # once: each cost() takes the speed model's lock
    for index, windows in enumerate(_candidates(item, options)):
        if windows.first > kept_up.get(windows.prefix, options.max_frames):
            # Its first chunk decodes more frames after the same front, so it starts later than the
            # one that kept up (by more than _better's 2 %: 4 frames of decoding are ~5 % of a first
            # chunk here).  Trying all ~130 cost 2.8 ms of a 301-id first sentence's first audio.
            continue
        if best is not None and clock.earliest(front(windows.prefix or item.ids)) > best[0] * 1.02:
            continue  # its front alone ends too late to be _better (4 of the 60-word probe's 22 trials here)
        chunks = _chunks(item, shape, speed, windows)
        start, compute = clock.trial(chunks)
        floor = clock.start if clock.first is not None else (chunks[0][0] + chunks[0][1]) * clock.safety
        if start <= floor + 1e-6 and (index == 0 or not item.first_in_text):
            # Keeps up: for later sentences the cheapest that does; for the first, the
            # voice's own schedule (smallest first window) if it does, else the soonest start.
            if index == 0:
                return _sooner_with_fast_start(clock, item, shape, options, speed, windows, start)
            return windows
        if start <= floor + 1e-6:
            kept_up[windows.prefix] = windows.first
        if _better(start, compute, best):
            best = (start, compute, windows)
    assert best is not None
    return best[2]


def _better(start: float, compute: float, best: tuple[float, float, Windows] | None) -> bool:
    """A schedule starting at ``start`` beats ``best``: over 2 % sooner, or within 2 % and cheaper."""
    return best is None or start < best[0] * 0.98 or (start <= best[0] * 1.02 and compute < best[1])


def _sooner_with_fast_start(
    clock: _Clock,
    item: Item,
    shape: Shape,
    options: StreamingOptions,
    speed: SpeedModel,
    windows: Windows,
    start: float,
) -> Windows:
    """The first sentence keeps up with ``windows`` (exact): fast start's variant of it if that
    starts at least FAST_START_GAIN sooner (a long sentence's whole front before its first audio)."""
    best: tuple[float, float, Windows] | None = None
    for prefix in _prefixes(item, options):  # shortest first
        sooner, compute, candidate, keeps_up = _fast_variant(clock, item, shape, speed, windows, prefix)
        if sooner < start * (1.0 - FAST_START_GAIN) and _better(sooner, compute, best):
            best = (sooner, compute, candidate)
        if keeps_up and sooner < start:
            # It starts at its first chunk, and a longer prefix's front makes that later (unless
            # this prefix kept too few ids for a window and was modelled as run for nothing).
            break
    return windows if best is None else best[2]


def _fast_variant(
    clock: _Clock, item: Item, shape: Shape, speed: SpeedModel, windows: Windows, prefix: int
) -> tuple[float, float, Windows, bool]:
    """(S, compute, schedule, keeps up) of fast start on ``prefix`` with ``windows``' first window
    and the largest growth that keeps up (else the soonest).  After the prefix's windows the whole
    sentence's front runs, so a growth that keeps up exactly may not here: the second window, made
    larger, can be late for the end of the first (with fast start keeping ids 16 ahead of its
    prefix's end, this machine's fit at 2 threads: S 35 ms instead of 30 at growth 8 for 125 ids).
    Searched from the largest growth down, and only as far as needed: each trial costs ~0.1-0.3 ms
    of the text's first audio here."""
    best: tuple[float, float, Windows, bool] | None = None
    for growth in sorted({windows.growth, *_GROWTHS}, reverse=True):
        candidate = Windows(windows.first, growth, prefix)
        chunks = _chunks(item, shape, speed, candidate)
        sooner, compute = clock.trial(chunks)
        keeps_up = sooner <= clock.trial(chunks[:1])[0] + 1e-6
        if best is None or sooner < best[0]:
            best = (sooner, compute, candidate, keeps_up)
        if keeps_up:
            break  # no smaller growth starts sooner, and each costs more seams
    assert best is not None
    return best


def lead_s(items: Sequence[Item], shape: Shape, speed: SpeedModel, windows: Sequence[Windows | None]) -> float:
    """The lead of ``items`` run with ``windows`` (reckoned again with the speed model as it is now)."""
    clock = _Clock(speed, _workers(shape))
    for item, schedule in zip(items, windows):
        clock.add(_chunks(item, shape, speed, schedule))
    return clock.lead


def _candidates(item: Item, options: StreamingOptions) -> Iterator[Windows]:
    """Schedules in order of preference (see :func:`plan_text`), made as they are asked for: on a
    machine that keeps up the first one or two are taken, and building all ~130 cost ~0.4 ms of a
    text's first audio here."""
    largest = options.max_frames
    firsts = sorted({min(f, largest) for f in (*_FIRSTS, options.first_frames)})
    if not item.first_in_text:
        firsts.reverse()
    exact = [Windows(options.first_frames, options.growth)] if item.first_in_text else []
    exact += [Windows(f, g) for f in firsts for g in _GROWTHS if f < largest or g == _GROWTHS[-1]]
    exact = list(dict.fromkeys(exact))  # the voice's own schedule is also in the grid: tried once
    yield from exact
    for prefix in _prefixes(item, options):
        for w in exact:
            yield Windows(w.first, w.growth, prefix)


def _prefixes(item: Item, options: StreamingOptions) -> list[int]:
    """Fast start's prefixes (ids) that apply to ``item``."""
    limit = options.fast_start_ids
    return [round(limit * p) for p in _PREFIXES if fast_start_applies(item.ids, round(limit * p))]


def _chunks(item: Item, shape: Shape, speed: SpeedModel, windows: Windows | None) -> list[Chunk]:
    """Predicted :data:`Chunk` of each chunk of ``item``."""
    if item.ids <= 0:
        return [(0.0, 0.0, item.pause_s)]
    frames = _frames(item, speed)
    split = shape.split
    if split is None:
        return [(speed.cost("whole")(item.ids), 0.0, frames * 256 / shape.sample_rate)]
    if windows is None or shape.options is None:
        cost = speed.cost("front")(item.ids) + speed.cost("tail")(frames)
        if split.flow is not None:
            cost += speed.cost("flow")(frames)
        return [(cost, 0.0, frames * split.hop / shape.sample_rate)]
    return _streamed(item, frames, split, shape.options, windows, shape.sample_rate, speed)


def _frames(item: Item, speed: SpeedModel) -> int:
    """The sentence's frames: as its front gave them, and predicted for the ids it has not seen."""
    if item.frames:
        return item.frames
    frames, ids = item.prefix
    return max(1, frames + round(max(0, item.ids - ids) * _predicted_per_id(item, speed)))


def _predicted_per_id(item: Item, speed: SpeedModel) -> float:
    """Frames an id of ``item`` is predicted to come to (the model's mean, at the item's rate)."""
    return speed.frames_per_id / max(item.rate, 0.1)


def _streamed(
    item: Item,
    frames: int,
    split: SplitModels,
    options: StreamingOptions,
    windows: Windows,
    rate: int,
    speed: SpeedModel,
) -> list[Chunk]:
    front = speed.cost("front")
    largest = options.max_frames
    prefixed = bool(split.durations) and fast_start_applies(item.ids, windows.prefix)  # as the voice runs it
    if prefixed:
        limit = windows.prefix
        keep_ids = fast_start_kept(limit, item.word_ends)
        # Once the prefix's front has run, the voice has told what the kept ids came to.
        prefix_frames, prefix_ids = item.prefix
        per_id = (
            prefix_frames / prefix_ids
            if prefix_ids
            else frames / item.ids
            if item.frames
            else _predicted_per_id(item, speed) * HEAD_SHARE
        )
        kept = round(keep_ids * per_id)
        safe = kept - FLOW_REACH - split.margin
        if safe >= 2 * options.first_frames:
            spans = plan_windows(safe, windows.first, windows.growth, largest)
            head = _decode(kept, spans, split, rate, speed, 0)
            following = window_size(len(spans), windows.first, windows.growth, largest)
            rest = [(safe + a, safe + b) for a, b in plan_windows(frames - safe, following, windows.growth, largest)]
            tail = _decode(frames, rest, split, rate, speed, safe + split.margin)
            head[0] = (head[0][0] + front(limit), *head[0][1:])
            # That front runs while the prefix's windows decode: it takes longer than one alone.
            tail[0] = (tail[0][0] + front(item.ids) * speed.busy_front, *tail[0][1:])
            return head + tail
    out = _decode(frames, plan_windows(frames, windows.first, windows.growth, largest), split, rate, speed, 0)
    # A prefix too short for a first window was still run (the voice finds out from its durations).
    wasted = front(windows.prefix) if prefixed else 0.0
    out[0] = (out[0][0] + front(item.ids) + wasted, *out[0][1:])
    return out


def _decode(
    frames: int, windows: Sequence[tuple[int, int]], split: SplitModels, rate: int, speed: SpeedModel, exact: int
) -> list[Chunk]:
    """Costs and audio of decoding ``windows`` of a sentence of ``frames`` frames, the flow run in the
    spans :class:`~.streaming.Latent` runs (from frame ``exact``, what is already known)."""
    tail, flow = speed.cost("tail"), speed.cost("flow")
    ready = exact
    out: list[Chunk] = []
    for start, end in windows:
        lo, hi = max(0, start - split.margin), min(frames, end + split.margin)
        cost = 0.0
        while split.flow is not None and hi > ready:
            first = ready == 0
            run_lo, run_hi, keep_hi = flow_span(exact, hi, frames, split.flow_margin, first=first)
            cost += flow(run_hi - run_lo)
            if not first or run_hi - keep_hi >= FLOW_REACH or run_hi == frames:
                exact = keep_hi
            ready = keep_hi
        out.append((cost, tail(hi - lo), (end - start) * split.hop / rate))
    return out
