"""Windows of a streamed sentence: their schedule, their margins and the cross-fades at seams.

A split voice decodes each sentence in windows of frames that grow from a short
first one (first audio sooner) to a bounded largest one (bounded memory); each
is decoded with a margin of context on each side, and neighbouring windows are
blended over a few samples at their seam.  See docs/streaming.md.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class StreamingOptions:
    """How a sentence's waveform is decoded in windows (issue 4, docs/streaming.md)."""

    first_frames: int = 4
    """Frames in the first window of each sentence (x hop = samples: 1024, 46 ms for a 22050 Hz medium voice)."""

    growth: float = 8.0
    """Each later window is this many times the one before (4, 32, 64, 64, ... frames)."""

    max_frames: int = 64
    """Largest window (0.74 s of audio).  The decoder's activations grow with the window: peak RSS
    of a process speaking the corpus 168 / 187 / 199 / 224 MB at 64 / 128 / 192 / 256 frames (2
    threads, memory patterns off), and on a slow board a window's audio comes when all of it is
    decoded, so the largest one also sets how much must be in hand before playback can start: 64
    frames start a Pi 4's playback ~12 % sooner than 128 and keep the daemon within its memory
    budget, for a little more CPU (each seam recomputes two margins: 1.15x whole sentences' CPU
    on a Pi 4 against 1.11x at 128; docs/streaming.md, "Memory")."""

    margin: int = 6
    """Decoder frames of context on each side of a window.  The joe voice's decoder reaches about
    12 frames; each seam recomputes 2 x margin frames.  Corpus, noise 0, streamed vs whole: SDR
    min 31.7 / 39.1 / 50.1 / 59.8 dB at 4 / 6 / 7 / 8 frames; total time 1.06 / 1.10 / - / 1.13x
    whole-sentence at 1 thread: 6 keeps 9 dB above the 30 dB bar at 1.1x the cost."""

    crossfade: int = 256
    """Samples over which two windows are blended at a seam."""

    flow_margin: int = 12
    """Flow frames of context for the first window (the flow's receptive field is 4 couplings x 4
    convolutions of kernel 5 = 32 frames, but the first window's audio is the same at 12: corpus
    SDR min 39.0 dB vs 39.1 at 24).  The rest of the sentence is one flow run from its start,
    exact, see :class:`edgetts.voice.piper.streaming.Latent`."""

    workers: int = 1
    """Windows decoded at once, each decoder run on one core (1: one after the other, each run on
    the voice's intra-op threads).  With N > 1 the voice's sessions should run one intra-op thread
    each: the N runs are the parallelism (docs/streaming.md, "Cores")."""

    fast_start_ids: int = 0
    """0 (default): every sentence is exactly what whole-sentence decoding gives.  N > 0: the
    first sentence of a text, when it has more than 1.5 N phoneme ids, starts from a run of the
    text encoder on its first N ids only, so it starts as soon as a short sentence would; the
    encoder attends over the whole sentence, so those first words differ slightly (durations by
    a frame here and there) from whole-sentence output.  See docs/streaming.md, "Fast start"."""


FAST_START_LOOKAHEAD = 32
"""Ids after fast start's kept ids that its prefix holds (half a prefix shorter than 64): what each
kept id's encoder run saw of what follows.  With 16 (the last quarter of a 64-id prefix), fast
start forced on the nine long corpus lines read +0.010 / +0.016 pocketsphinx WER above exact
decoding over seeds 0-9 / 10-19 (standard errors 0.009 / 0.008), "Flight BA 2490 ..." 0.61 against
0.48; with 32, -0.001 / -0.004 (docs/streaming.md, "Fast start")."""


def fast_start_keep_to(prefix: int) -> int:
    """The most ids of a ``prefix``-id fast-start prefix that are kept (K is the last word boundary
    at or before it)."""
    return prefix - min(FAST_START_LOOKAHEAD, prefix // 2)


def fast_start_applies(ids: int, prefix: int) -> bool:
    """Fast start on a prefix of ``prefix`` ids is worth it: the sentence (``ids`` ids) is well over
    that length (the voice runs it, and the plan models it, only then)."""
    return prefix > 0 and ids > prefix + prefix // 2


def fast_start_kept(prefix: int, boundaries: Iterable[int]) -> int:
    """K, the ids a ``prefix``-id fast-start prefix keeps: the last word boundary (of the id
    positions ``boundaries``) at or before :func:`fast_start_keep_to`, so each kept id saw at least
    FAST_START_LOOKAHEAD ids after it; with none there, all ids up to it."""
    keep_to = fast_start_keep_to(prefix)
    return max((k for k in boundaries if 1 <= k <= keep_to), default=keep_to)


def plan_windows(frames: int, first: int, growth: float, largest: int) -> list[tuple[int, int]]:
    """[start, end) frame ranges covering ``frames``: ``first`` frames, then each ``growth`` times larger.

    Windows are at most ``largest`` frames (bounded shapes, bounded memory);
    a remainder shorter than the next window joins the window before it
    (fewer seams: each seam costs two margins of recomputation).
    """
    windows: list[tuple[int, int]] = []
    start, size = 0, max(1, first)
    while start < frames:
        end = min(frames, start + size)
        following = _grown(size, growth, largest)
        if windows and frames - end < following and frames - start <= largest:
            end = frames
        windows.append((start, end))
        start, size = end, following
    return windows


def window_size(index: int, first: int, growth: float, largest: int) -> int:
    """The size :func:`plan_windows` gives window ``index`` (from 0) before a remainder joins it:
    where fast start's windows of the whole sentence go on from its prefix's."""
    size = max(1, first)
    for _ in range(index):
        size = _grown(size, growth, largest)
    return size


def _grown(size: int, growth: float, largest: int) -> int:
    """The window after one of ``size`` frames: ``growth`` times larger, at least one more, at most ``largest``."""
    return min(largest, max(size + 1, int(size * growth)))


class SeamJoiner:
    """Cuts each decoded window to its own frames and cross-fades the seams.

    The tail of each window's audio (``fade`` samples around its end) is held
    back and blended with the next window's start, so a seam is a crossfade
    of two nearly equal signals.
    """

    def __init__(self, hop: int, fade: int) -> None:
        self.hop, self.half = hop, fade // 2
        self._held: np.ndarray | None = None

    def piece(self, audio: np.ndarray, lo: int, start: int, end: int, last: bool) -> np.ndarray:
        """The audio to hand out for window [start, end) of a run decoded from frame ``lo``."""
        hop, half = self.hop, self.half
        first = start * hop - (half if start > 0 else 0)
        stop = end * hop + (0 if last else half)
        piece = audio[first - lo * hop : stop - lo * hop]
        if self._held is not None:
            n = self._held.size
            ramp = (np.arange(n, dtype=np.float32) + 0.5) / np.float32(n)
            piece = piece.copy()
            piece[:n] = self._held * (1.0 - ramp) + piece[:n] * ramp
        self._held = None
        if not last:
            self._held = piece[piece.size - 2 * half :].copy()
            piece = piece[: piece.size - 2 * half]
        return piece
