"""Streaming VITS: split a Piper voice's graph and decode the latent in windows.

A Piper voice is one ONNX graph: text encoder and duration predictor (global:
attention over the whole sentence), then the flow and the HiFi-GAN-style
waveform decoder, which are stacks of convolutions over the frame axis and so
only see a few frames around each output sample.  :func:`split_model` cuts the
graph where the convolutional tail begins; the *front* runs once per sentence,
the *tail* runs over successive windows of frames with a margin on each side
that covers its receptive field, and the windows' outputs are cross-faded
(issue 4).  The cut is found from the graph itself (no names assumed) and
checked numerically on a real sentence before it is used; a graph that cannot
be split keeps the whole-sentence path.  See docs/streaming.md.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from edgetts.voice.model_cache import _checksum

_LOGGER = logging.getLogger(__name__)

SPLIT_VERSION = "2"
"""Bump when the split changes: older cached splits are then rebuilt."""

# Ops that act on each frame's neighbourhood only (or on channels), so running
# them on a window of frames gives the same values in the window's middle.
_TIME_LOCAL_OPS = frozenset({
    "Conv", "ConvTranspose", "LeakyRelu", "Relu", "Tanh", "Sigmoid", "Add", "Sub", "Mul", "Div",
    "Neg", "Exp", "Split", "Concat", "Slice", "Shape", "ConstantOfShape", "Unsqueeze", "Squeeze",
    "Constant", "Identity", "Softplus", "Clip",
})
_MIN_SDR_DB = 30.0
"""The split is accepted only if windowed decoding of the check sentence is at least this close
(a wrong cut gives a few dB; the joe voice at the default margins: ~50 dB)."""


_MIN_HOP = 32
"""Fewest output samples per frame of the decoder's input."""

FLOW_REACH = 24
"""Flow frames of context that make its output equal to a run over the whole sentence (the
receptive field is 32; 24 measured equal on the corpus)."""


class SplitError(Exception):
    """The graph has no convolutional tail that can be run in windows."""


@dataclass(frozen=True)
class SplitModels:
    """The parts of a voice and what is needed to run the last ones in windows.

    Two or three models: *front* (text encoder, durations: once per
    sentence), *flow* (when it could be cut off the front: run in windows
    with ``flow_margin``) and *tail*, the waveform decoder (run in windows
    with ``margin``).
    """

    front: bytes | Path
    tail: bytes | Path
    frame_inputs: tuple[str, ...]
    """Tail inputs (the decoder's), shaped (1, channels, frames) or (1, channels, 1)."""
    hop: int
    """Output samples per frame."""
    margin: int
    """Frames of context decoded on each side of a window (covers the decoder's receptive field)."""
    gain: float
    """Fixed gain of streamed audio at ``normalize_audio``: 1 / the largest peak of the check sentences."""
    flow: bytes | Path | None = None
    flow_inputs: tuple[str, ...] = ()
    """Front outputs = flow inputs (when ``flow``)."""
    flow_margin: int = 0
    """Frames of context of the first window's flow run (see :class:`Latent`)."""
    durations: str = ""
    """Extra front output: frames per phoneme id, shaped (1, 1, ids) (fast start); "" = none found."""

    @property
    def front_outputs(self) -> tuple[str, ...]:
        return self.flow_inputs if self.flow is not None else self.frame_inputs


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


# -- finding the cut ---------------------------------------------------------------
def _find_cut(model: Any) -> list[list[str]]:
    """Frontier tensors of the largest time-local tail before the output, and the tail's nodes.

    Walk back from the output through time-local ops, always expanding the
    latest-produced tensor; every state of the frontier is a candidate cut.
    Candidates are checked numerically later (:func:`_frame_tensors`).
    """
    graph = model.graph
    if len(graph.output) != 1:
        raise SplitError(f"the graph has {len(graph.output)} outputs, expected 1")
    nodes = list(graph.node)
    producer = {out: i for i, n in enumerate(nodes) for out in n.output}
    static = {i.name for i in graph.initializer}
    for node in graph.node:  # constants and what is computed from constants only
        if all(not x or x in static for x in node.input):
            static.update(node.output)
    frontier = {graph.output[0].name}
    blocked: set[str] = set()
    states: list[frozenset[str]] = []
    while True:
        open_ = [t for t in frontier if t not in blocked]
        if not open_:
            break
        latest = max(open_, key=lambda t: producer.get(t, -1))
        node = nodes[producer[latest]] if latest in producer else None
        if node is None or node.op_type not in _TIME_LOCAL_OPS:
            blocked.add(latest)
        else:
            frontier.discard(latest)
            frontier.update(x for x in node.input if x and x not in static)
        if frontier:
            states.append(frozenset(frontier))
        if len(states) > 20000:
            break
    if not states:
        raise SplitError("no time-local tail before the output")
    return [sorted(s) for s in states]


def _tail_nodes(graph: Any, cut: Sequence[str]) -> list[Any]:
    nodes = list(graph.node)
    producer = {out: i for i, n in enumerate(nodes) for out in n.output}
    keep: set[int] = set()
    todo = [graph.output[0].name]
    seen = set(cut)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        if name not in producer:
            continue
        keep.add(producer[name])
        todo.extend(x for x in nodes[producer[name]].input if x)
    return [n for i, n in enumerate(nodes) if i in keep]


def _build_tail(model: Any, cut: Sequence[str]) -> Any:
    import onnx
    from onnx import helper

    graph = model.graph
    nodes = _tail_nodes(graph, cut)
    used = {x for n in nodes for x in n.input}
    inits = [i for i in graph.initializer if i.name in used]
    inputs = [helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, [1, None, "frames"]) for name in cut]
    tail = helper.make_graph(nodes, "edgetts-vits-tail", inputs, list(graph.output), inits)
    out = helper.make_model(tail, opset_imports=list(model.opset_import))
    out.ir_version = model.ir_version
    return out


# -- running the tail in windows ---------------------------------------------------
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
        following = min(largest, max(size + 1, int(size * growth)))
        if windows and frames - end < following and frames - start <= largest:
            end = frames
        windows.append((start, end))
        start, size = end, following
    return windows


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


def _sdr_db(reference: np.ndarray, estimate: np.ndarray) -> float:
    error = float(np.sum((reference.astype(np.float64) - estimate) ** 2))
    signal = float(np.sum(reference.astype(np.float64) ** 2))
    return float("inf") if error == 0.0 else 10.0 * np.log10(signal / error)


# -- split, check, cache -----------------------------------------------------------
def _are_durations(value: np.ndarray | None, n_ids: int, frames: int) -> bool:
    """Frames per phoneme id: (1, 1, ids), whole non-negative numbers adding up to the frames."""
    if value is None or value.shape != (1, 1, n_ids) or frames <= 0:
        return False
    return bool(np.all(value >= 0) and np.all(value == np.round(value)) and int(value.sum()) == frames)


def _frame_lengths(arrays: Sequence[np.ndarray | None]) -> list[int] | None:
    """Lengths of the last axis of tensors shaped (1, C, n), None if any is not such a tensor."""
    if any(a is None or a.ndim != 3 or a.shape[0] != 1 or a.dtype != np.float32 for a in arrays):
        return None
    return [a.shape[-1] for a in arrays if a is not None]


def split_model(
    model_path: Path,
    check_feeds: Sequence[dict[str, np.ndarray]],
    make_session: Callable[[bytes | Path], Any],
    *,
    margin: int,
    flow_margin: int,
) -> SplitModels:
    """Split ``model_path`` (models as bytes) or raise :class:`SplitError`.

    ``check_feeds``: model inputs of real sentences (noise 0); the first
    checks the split, all of them measure the streaming gain.
    """
    try:
        import onnx
    except ImportError as err:  # pragma: no cover - onnx is a dependency
        raise SplitError("the onnx package is not installed") from err
    model = onnx.load(str(model_path))
    states = _find_cut(model)
    out_name = model.graph.output[0].name
    # Which candidates have a frame axis: ask the model for every candidate tensor once.
    names = sorted({t for s in states for t in s} - {out_name})
    # Duration candidates: VITS rounds each phoneme's length in frames up (w_ceil).
    rounded = [o for n in model.graph.node if n.op_type in ("Ceil", "Round") for o in n.output]
    names = sorted(set(names) | set(rounded))
    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    for name in names:
        probe.graph.output.append(onnx.helper.make_empty_tensor_value_info(name))
    session = make_session(probe.SerializeToString())
    feeds = dict(check_feeds[0])
    values = dict(zip([o.name for o in session.get_outputs()], session.run(None, feeds)))
    del session, probe
    whole = np.asarray(values[out_name], dtype=np.float32).reshape(-1)
    n_ids = feeds["input"].shape[-1]
    # Decoder cut: one tensor with a frame axis (plus, for multi-speaker voices,
    # conditioning tensors of one frame, passed whole).  Flow cut: the earliest
    # cut whose tensors all have the frame axis (or one frame).  The flow's
    # receptive field (~32 frames) is wider than the decoder's (~12): each part
    # gets its own margin, so the decoder does not recompute 32 frames per seam.
    cut: list[str] | None = None
    flow_cut: list[str] | None = None
    frames = 0
    for state in reversed(states):
        if out_name in state:
            continue
        lengths = _frame_lengths([values.get(t) for t in state])
        if lengths is None:
            continue
        long_ = sorted({n for n in lengths if n != 1})
        # The tail must upsample frames to samples (a vocoder: hop 256 for Piper voices); a cut
        # after the last upsampling (an int8 graph blocks the walk at DynamicQuantizeLinear)
        # would stream nothing worth having.
        if len(long_) != 1 or long_[0] == n_ids or whole.size % long_[0] != 0 or whole.size // long_[0] < _MIN_HOP:
            continue
        if sum(1 for n in lengths if n != 1) == 1:
            cut, frames = list(state), long_[0]
            break
        if flow_cut is None:
            flow_cut = list(state)
    durations = next((name for name in rounded if _are_durations(values.get(name), n_ids, frames)), "")
    del values
    if cut is None:
        raise SplitError("no convolutional decoder found (no tensor with a frame axis feeds the output alone)")
    if flow_cut is not None and len(cut) != 1:
        flow_cut = None  # conditioning tensors would have to pass through the flow stage: not done
    hop = whole.size // frames
    from onnx.utils import Extractor

    extractor = Extractor(model)
    inputs = [i.name for i in model.graph.input]
    front = extractor.extract_model(inputs, (flow_cut or cut) + ([durations] if durations else [])).SerializeToString()
    flow = extractor.extract_model(flow_cut, cut).SerializeToString() if flow_cut else None
    tail = _build_tail(model, cut).SerializeToString()
    del model, extractor
    split = SplitModels(front, tail, tuple(cut), hop, margin, 1.0, flow, tuple(flow_cut or ()),
                        flow_margin if flow_cut else 0, durations)
    front_session, tail_session = make_session(front), make_session(tail)
    flow_session = make_session(flow) if flow else None
    outputs = list(split.front_outputs)

    def run_tail(f: dict[str, np.ndarray]) -> np.ndarray:
        return np.asarray(tail_session.run(None, f)[0], dtype=np.float32).reshape(-1)

    def run_flow(f: dict[str, np.ndarray]) -> np.ndarray:
        assert flow_session is not None
        return np.asarray(flow_session.run(None, f)[0], dtype=np.float32)

    peaks = []
    for index, sample in enumerate(check_feeds):
        front_out = dict(zip(outputs, front_session.run(outputs, dict(sample))))
        latent = Latent(front_out, run_flow if flow else None, cut[0], split.flow_margin)
        full = run_tail(latent.window(0, latent.frames))
        peaks.append(float(np.max(np.abs(full))))
        if index == 0:
            latent = Latent(front_out, run_flow if flow else None, cut[0], split.flow_margin)
            windows = plan_windows(latent.frames, 4, 8.0, 128)
            windowed = np.concatenate(list(decode_windows(run_tail, latent, hop, margin, windows, hop)))
            sdr = _sdr_db(whole, windowed)
            if windowed.size != whole.size or sdr < _MIN_SDR_DB:
                raise SplitError(f"windowed decoding differs from the whole model's output ({sdr:.1f} dB)")
    gain = 1.0 / max(max(peaks), 1e-3)
    return SplitModels(front, tail, split.frame_inputs, hop, margin, gain, flow, split.flow_inputs,
                       split.flow_margin, durations)


def _split_family(model_path: Path) -> str:
    """Shared by every split of one model file; unlike model_cache's names it has no ``-`` after the stem,
    so the optimised-model cache never mistakes a split for a stale entry of the voice."""
    return f"{model_path.name.removesuffix('.onnx')}.split-{_checksum(str(model_path.resolve()))[:8]}-"


def _split_key(model_path: Path, margin: int, flow_margin: int) -> str:
    stat = model_path.stat()
    identity = "\n".join([str(stat.st_size), str(stat.st_mtime_ns), SPLIT_VERSION, str(margin), str(flow_margin)])
    return f"{_split_family(model_path)}{_checksum(identity)}"


def load_split(
    model_path: Path,
    cache_dir: Path | None,
    check_feeds: Callable[[], Sequence[dict[str, np.ndarray]]],
    make_session: Callable[[bytes | Path], Any],
    *,
    margin: int,
    flow_margin: int,
) -> SplitModels:
    """The split of ``model_path``: from ``cache_dir`` when there, else made (and stored there).

    Raises :class:`SplitError` when the graph cannot be split (not cached:
    a later edgetts may split it).
    """
    if cache_dir is not None:
        key = _split_key(model_path, margin, flow_margin)
        meta_path = cache_dir / f"{key}.json"
        paths = {part: cache_dir / f"{key}.{part}.onnx" for part in ("front", "flow", "tail")}
        try:
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
            has_flow = bool(meta["flow_inputs"])
            if all(p.is_file() for part, p in paths.items() if part != "flow" or has_flow):
                return SplitModels(paths["front"], paths["tail"], tuple(meta["frame_inputs"]), int(meta["hop"]),
                                   int(meta["margin"]), float(meta["gain"]), paths["flow"] if has_flow else None,
                                   tuple(meta["flow_inputs"]), int(meta["flow_margin"]), str(meta["durations"]))
        except FileNotFoundError:
            pass
        except (OSError, ValueError, KeyError, TypeError) as err:
            _LOGGER.warning("rebuilding the unusable split of %s: %s", model_path, err)
    try:
        split = split_model(model_path, check_feeds(), make_session, margin=margin, flow_margin=flow_margin)
    except SplitError:
        raise
    except Exception as err:  # onnx / onnxruntime on a graph the split did not foresee: speak whole sentences
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise SplitError(f"cannot split the graph: {first}") from err
    if cache_dir is None:
        return split
    try:
        for part, data in (("front", split.front), ("flow", split.flow), ("tail", split.tail)):
            if isinstance(data, bytes):
                tmp = paths[part].with_name(f".{paths[part].name}.{os.getpid()}.part")
                tmp.write_bytes(data)
                tmp.replace(paths[part])
        meta = {"frame_inputs": list(split.frame_inputs), "hop": split.hop, "margin": margin, "gain": split.gain,
                "flow_inputs": list(split.flow_inputs), "flow_margin": split.flow_margin,
                "durations": split.durations,
                "source": str(model_path), "version": SPLIT_VERSION}
        tmp = meta_path.with_name(f".{meta_path.name}.{os.getpid()}.part")
        tmp.write_text(json.dumps(meta), encoding="utf-8")
        tmp.replace(meta_path)  # written last: its presence means the models are complete
    except OSError as err:
        _LOGGER.debug("could not store the split of %s: %s", model_path, err)
        return split
    for stale in cache_dir.glob(f"{_split_family(model_path)}*"):
        if not stale.name.startswith(key):
            stale.unlink(missing_ok=True)
    return SplitModels(paths["front"], paths["tail"], split.frame_inputs, split.hop, margin, split.gain,
                       paths["flow"] if split.flow is not None else None, split.flow_inputs, split.flow_margin,
                       split.durations)


def discard_split(model_path: Path, cache_dir: Path | None, margin: int, flow_margin: int) -> None:
    """Delete the cached split of ``model_path`` (it failed to load: it is rebuilt next)."""
    if cache_dir is None:
        return
    for path in cache_dir.glob(f"{_split_key(model_path, margin, flow_margin)}*"):
        path.unlink(missing_ok=True)
