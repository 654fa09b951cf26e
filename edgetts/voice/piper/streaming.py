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

from collections.abc import Callable, Iterator, Sequence

import numpy as np

from edgetts.voice.piper.windows import SeamJoiner

FLOW_REACH = 24
"""Flow frames of context that make its output equal to a run over the whole sentence (the
receptive field is 32; 24 measured equal on the corpus)."""


class Latent:
    """The decoder's inputs for one sentence, computed by the flow only as far as asked.

    The flow runs twice: a short run for the first window (its frames plus
    ``flow_margin`` of context), then one run over the whole sentence, whose
    start needs no context, so everything after the first window is exactly
    what whole-sentence decoding computes.  (A flow run has a fixed cost of
    ~3.5 ms here, streaming its weights once: the rest is not split further.)
    """

    def __init__(
        self,
        front_out: dict[str, np.ndarray],
        run_flow: Callable[[dict[str, np.ndarray]], np.ndarray] | None,
        decoder_input: str,
        flow_margin: int,
        *,
        short_first: bool = True,
    ) -> None:
        """``short_first=False``: one flow run over the whole sentence at the first request."""
        self.frames = max(v.shape[-1] for v in front_out.values())
        self._front = front_out
        self._run_flow = run_flow
        self._name = decoder_input
        self._margin = flow_margin
        self._z: np.ndarray | None = None
        self._ready = 0
        self._short_first = short_first

    def _slice(self, feeds: dict[str, np.ndarray], lo: int, hi: int) -> dict[str, np.ndarray]:
        return {k: np.ascontiguousarray(v[..., lo:hi]) if v.shape[-1] == self.frames else v
                for k, v in feeds.items()}

    def window(self, lo: int, hi: int) -> dict[str, np.ndarray]:
        """Decoder inputs for frames [lo, hi)."""
        if self._run_flow is None:
            return self._slice(self._front, lo, hi)
        if hi > self._ready:
            if self._short_first and self._ready == 0 and hi + self._margin < self.frames:
                z = self._run_flow(self._slice(self._front, 0, hi + self._margin))
                self._z = np.ascontiguousarray(z[..., :hi])
                self._ready = hi
            else:
                # The second window reaches back to the sentence start (its left margin is
                # wider than the first window), so it and all later ones use this exact run.
                self._z = self._run_flow(self._front)
                self._ready = self.frames
        assert self._z is not None
        return {self._name: np.ascontiguousarray(self._z[..., lo:hi])}



def decode_windows(
    run_tail: Callable[[dict[str, np.ndarray]], np.ndarray],
    latent: Latent,
    hop: int,
    margin: int,
    windows: Sequence[tuple[int, int]],
    fade: int,
    joiner: SeamJoiner | None = None,
) -> Iterator[np.ndarray]:
    """Audio of each window, in order; seams are cross-faded over ``fade`` samples.

    Each window is decoded with ``margin`` frames of context on each side (the
    sentence's own edges need none: there the whole-sentence run pads with
    zeros too).  The window ending at ``latent.frames`` ends the sentence;
    ``joiner`` carries a seam over from earlier windows (fast start).
    """
    joiner = joiner or SeamJoiner(hop, fade)
    for start, end in windows:
        lo, hi = max(0, start - margin), min(latent.frames, end + margin)
        yield joiner.piece(run_tail(latent.window(lo, hi)), lo, start, end, end >= latent.frames)


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
        k: np.concatenate([head[k], v[..., skip:]], axis=-1) if v.shape[-1] == frames else v
        for k, v in whole.items()
    }
