"""The streaming decoder run: a split voice's sentence decoded window by window.

A Piper voice is one ONNX graph: text encoder and duration predictor (global:
attention over the whole sentence), then the flow and the HiFi-GAN-style
waveform decoder, which are stacks of convolutions over the frame axis and so
only see a few frames around each output sample.  Once the graph is split there
(:mod:`.graph_split`), the *front* runs once per sentence and gives the
:class:`Latent`; the *tail* runs over successive windows of its frames
(:func:`decode_windows`, schedule and seams in :mod:`.windows`), each with a
margin on each side that covers its receptive field (issue 4, docs/streaming.md).
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

import numpy as np

from edgetts.voice.piper.windows import SeamJoiner

FLOW_REACH = 24
"""Flow frames of context that make its output equal to a run over the whole sentence (the
receptive field is 32; 24 measured equal on the corpus)."""


FLOW_CHUNK = 192
"""Frames the flow computes per run after a sentence's first window.  One run over a whole long
sentence would sit between two windows (on a Pi 4 ~0.6 s for a 6 s sentence, longer than the audio in
hand, issue 14); runs of this size with FLOW_REACH of context each side cost ~25 % more flow time
(the flow is ~15 % of a sentence's cost) and keep every wait short."""


def flow_span(exact: int, hi: int, frames: int, first_margin: int, *, first: bool) -> tuple[int, int, int]:
    """The next flow run once frames [0, ``exact``) are known exactly and [.., hi) are wanted:
    (run_lo, run_hi, keep_hi): the flow runs over [run_lo, run_hi) and its frames up to keep_hi are kept.

    The ``first`` run, for a small first window, may be a short one with ``first_margin`` frames
    of context after it (its frames are close, not exact: the next run starts at frame 0 again); a
    larger first window gets an exact run over just what it asks for.  Later runs start at the
    exact frames, reach FLOW_REACH frames back and ahead of up to a FLOW_CHUNK (at least what is
    asked), and a remainder shorter than half a chunk joins the run before it.
    """
    if first and hi + first_margin < frames:
        if hi <= 2 * FLOW_REACH - first_margin:
            return 0, hi + first_margin, hi
        # A close run would save FLOW_REACH - first_margin frames now and cost hi - FLOW_REACH
        # later (the next run could not start at hi - FLOW_REACH): for a first window this large
        # (a later sentence's, or a slow board's) an exact one is cheaper.
        keep_hi = hi if frames - hi >= FLOW_CHUNK // 2 else frames
        return 0, min(frames, keep_hi + FLOW_REACH), keep_hi
    # Spans grow with the windows (twice what is asked, at most a chunk): an early small window
    # does not wait for a long span.
    keep_hi = min(frames, max(hi, min(exact + FLOW_CHUNK, 2 * hi)))
    if frames - keep_hi < FLOW_CHUNK // 2:
        keep_hi = frames
    return max(0, exact - FLOW_REACH), min(frames, keep_hi + FLOW_REACH), keep_hi


class Latent:
    """The decoder's inputs for one sentence, computed by the flow only as far as asked.

    The flow runs in short spans (:func:`flow_span`): the first window's frames with
    ``flow_margin`` of context, then spans of FLOW_CHUNK frames with FLOW_REACH of context
    each side, which makes them what one run over the whole sentence computes (to float
    rounding: the flow's receptive field is 32 frames, 24 measured equal on the corpus).
    """

    def __init__(
        self,
        front_out: dict[str, np.ndarray],
        run_flow: Callable[[dict[str, np.ndarray]], np.ndarray] | None,
        decoder_input: str,
        flow_margin: int,
    ) -> None:
        self.frames = max(v.shape[-1] for v in front_out.values())
        self._front = front_out
        self._run_flow = run_flow
        self._name = decoder_input
        self._margin = flow_margin
        self._z: np.ndarray | None = None
        self._ready = 0
        self._exact = 0
        """Frames [0, _exact) are what one flow run over the whole sentence computes; those up to
        _ready beyond them come from the first window's short run."""

    def _slice(self, feeds: dict[str, np.ndarray], lo: int, hi: int) -> dict[str, np.ndarray]:
        return {k: np.ascontiguousarray(v[..., lo:hi]) if v.shape[-1] == self.frames else v for k, v in feeds.items()}

    def window(self, lo: int, hi: int) -> dict[str, np.ndarray]:
        """Decoder inputs for frames [lo, hi)."""
        if self._run_flow is None:
            return self._slice(self._front, lo, hi)
        while hi > self._ready:
            first = self._ready == 0
            run_lo, run_hi, keep_hi = flow_span(self._exact, hi, self.frames, self._margin, first=first)
            z = self._run_flow(self._slice(self._front, run_lo, run_hi))
            if self._z is None:
                self._z = np.empty((*z.shape[:-1], self.frames), dtype=z.dtype)
            # A window after the first reaches back into the first one's frames: from the second
            # run on, every frame comes from a run with the flow's full reach around it.
            keep_lo = 0 if first else self._exact
            self._z[..., keep_lo:keep_hi] = z[..., keep_lo - run_lo : keep_hi - run_lo]
            self._ready = keep_hi
            if not first or run_hi - keep_hi >= FLOW_REACH or run_hi == self.frames:
                self._exact = keep_hi
        assert self._z is not None
        return {self._name: np.ascontiguousarray(self._z[..., lo:hi])}

    def adopt(self, other: Latent, upto: int) -> None:
        """Take the flow frames [0, ``upto``) that ``other`` has computed as this sentence's own (fast
        start: the spliced sentence's first frames are the prefix's, and so is their flow output, run
        for the first windows; ``upto``: where that output stops seeing the prefix's end)."""
        if other._z is None or self._run_flow is None:
            return
        ready = min(other._exact, upto, self.frames)
        if ready <= 0:
            return
        self._z = np.empty((*other._z.shape[:-1], self.frames), dtype=other._z.dtype)
        self._z[..., :ready] = other._z[..., :ready]
        self._ready = self._exact = ready


Feeds = dict[str, np.ndarray]
_Meta = TypeVar("_Meta")


class WindowWorkers:
    """The decoder run on up to ``workers`` windows at once, the windows' audio still in order.

    Each decoder run then runs on one core (the voice's sessions have one intra-op thread): two
    windows decode side by side without the barrier intra-op threads meet after every operator,
    which on a window's small tensors and a slow core costs much of what the second thread gains.
    The flow and the fronts run on the caller's thread meanwhile, preparing the next window's
    inputs.  A sentence's first window is waited for before anything else is prepared, so nothing
    delays it (see docs/streaming.md, "Cores").
    """

    def __init__(self, run: Callable[[Feeds], np.ndarray], workers: int) -> None:
        if workers < 2:
            raise ValueError(f"WindowWorkers needs at least 2 workers, not {workers}")
        self._run = run
        self.workers = workers
        self._pool: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()

    def _executor(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self.workers, thread_name_prefix="edgetts-decode")
            return self._pool

    def ordered(self, jobs: Iterable[tuple[_Meta, Feeds]]) -> Iterator[tuple[_Meta, np.ndarray]]:
        """Each job's ``meta`` and its decoded audio, in the jobs' order.  Computing a job's feeds
        (iterating ``jobs``) is the caller's work; at most ``workers`` decoder runs are in flight,
        and one that ended is handed on before the next job is prepared."""
        pool = self._executor()
        pending: deque[tuple[_Meta, Future[np.ndarray]]] = deque()
        try:
            for index, (meta, feeds) in enumerate(jobs):
                future = pool.submit(self._run, feeds)
                if index == 0:
                    yield meta, future.result()
                    continue
                pending.append((meta, future))
                while pending and (len(pending) >= self.workers or pending[0][1].done()):
                    head, done = pending.popleft()
                    yield head, done.result()
            while pending:
                head, done = pending.popleft()
                yield head, done.result()
        finally:
            # Abandoned (a stop, an error): runs not begun are dropped, those under way end first,
            # so no run of this sentence outlives it (the caller may interrupt them).
            for _meta, future in pending:
                future.cancel()
            for _meta, future in pending:
                if not future.cancelled():
                    future.exception()

    def close(self) -> None:
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)


def decode_jobs(
    run_tail: Callable[[Feeds], np.ndarray],
    jobs: Iterable[tuple[_Meta, Feeds]],
    workers: WindowWorkers | None = None,
) -> Iterator[tuple[_Meta, np.ndarray]]:
    """Each job's ``meta`` and decoded audio, in order: by ``workers`` several at once, else one
    after the other with ``run_tail``."""
    if workers is not None:
        return workers.ordered(jobs)
    return ((meta, run_tail(feeds)) for meta, feeds in jobs)


def window_jobs(
    latent: Latent, margin: int, windows: Sequence[tuple[int, int]]
) -> Iterator[tuple[tuple[int, int, int], Feeds]]:
    """Each window's (lo, start, end) and decoder inputs, with ``margin`` frames of context each
    side: the flow runs as each is asked for (:meth:`Latent.window`)."""
    for start, end in windows:
        lo, hi = max(0, start - margin), min(latent.frames, end + margin)
        yield (lo, start, end), latent.window(lo, hi)


def decode_windows(
    run_tail: Callable[[Feeds], np.ndarray],
    latent: Latent,
    hop: int,
    margin: int,
    windows: Sequence[tuple[int, int]],
    fade: int,
    joiner: SeamJoiner | None = None,
    workers: WindowWorkers | None = None,
) -> Iterator[np.ndarray]:
    """Audio of each window, in order; seams are cross-faded over ``fade`` samples.

    Each window is decoded with ``margin`` frames of context on each side (the
    sentence's own edges need none: there the whole-sentence run pads with
    zeros too).  The window ending at ``latent.frames`` ends the sentence;
    ``joiner`` carries a seam over from earlier windows (fast start); ``workers``
    decode several windows at once (None: one after the other, with ``run_tail``).
    """
    joiner = joiner or SeamJoiner(hop, fade)
    for (lo, start, end), audio in decode_jobs(run_tail, window_jobs(latent, margin, windows), workers):
        yield joiner.piece(audio, lo, start, end, end >= latent.frames)


def splice_frames(
    head: dict[str, np.ndarray], whole: dict[str, np.ndarray], durations: np.ndarray, keep: int
) -> dict[str, np.ndarray]:
    """Front outputs of a sentence whose first ``keep`` ids come from ``head`` (fast start).

    ``head``: the frames of those ids from a run on a prefix; ``whole``: the
    run on the whole sentence, ``durations`` its frames per id (1, 1, ids).
    The result is ``head``'s frames, then ``whole``'s from the first frame
    of id ``keep`` on; tensors without the frame axis come from ``whole``.
    """
    skip = int(np.asarray(durations).reshape(-1)[:keep].sum())
    frames = max(v.shape[-1] for v in whole.values())
    return {
        k: np.concatenate([head[k], v[..., skip:]], axis=-1) if v.shape[-1] == frames else v for k, v in whole.items()
    }
