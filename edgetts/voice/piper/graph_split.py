"""Splitting a Piper voice's ONNX graph for streaming and checking the split.

:func:`split_model` cuts the graph where the convolutional tail begins: the
*front* (text encoder, durations), the *flow* when it can be cut off the front,
and the *tail*, the waveform decoder.  The cut is found from the graph itself
(no names assumed) and checked numerically on a real sentence before it is
used; a graph that cannot be split keeps the whole-sentence path
(:mod:`.split_cache` keeps splits between loads).  See docs/streaming.md.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from edgetts.voice.piper.seeded_noise import VERSION as SEEDED_NOISE_VERSION
from edgetts.voice.piper.seeded_noise import add_seeded_noise, seed_feed
from edgetts.voice.piper.streaming import Latent, decode_windows
from edgetts.voice.piper.windows import plan_windows

SPLIT_VERSION = f"3.{SEEDED_NOISE_VERSION}"
"""Bump when the split changes: older cached splits are then rebuilt (3: the front's noise is
seeded, issue 19; the seeded generator's own version follows the dot)."""

# Ops that act on each frame's neighbourhood only (or on channels), so running
# them on a window of frames gives the same values in the window's middle.
_TIME_LOCAL_OPS = frozenset(
    {
        "Conv",
        "ConvTranspose",
        "LeakyRelu",
        "Relu",
        "Tanh",
        "Sigmoid",
        "Add",
        "Sub",
        "Mul",
        "Div",
        "Neg",
        "Exp",
        "Split",
        "Concat",
        "Slice",
        "Shape",
        "ConstantOfShape",
        "Unsqueeze",
        "Squeeze",
        "Constant",
        "Identity",
        "Softplus",
        "Clip",
        # Static int8 variants (edgetts quantize --static): fixed scales, per tensor or per channel.
        "QuantizeLinear",
        "DequantizeLinear",
    }
)
_MIN_SDR_DB = 30.0
"""The split is accepted only if windowed decoding of the check sentence is at least this close
(a wrong cut gives a few dB; the joe voice at the default margins: ~50 dB)."""

_MIN_HOP = 32
"""Fewest output samples per frame of the decoder's input."""

MakeSession = Callable[[bytes | Path], Any]
"""Builds an onnxruntime session from model bytes or a model file."""


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


def _sdr_db(reference: np.ndarray, estimate: np.ndarray) -> float:
    error = float(np.sum((reference.astype(np.float64) - estimate) ** 2))
    signal = float(np.sum(reference.astype(np.float64) ** 2))
    return float("inf") if error == 0.0 else 10.0 * np.log10(signal / error)


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


# -- split and check ---------------------------------------------------------------
def split_model(
    model_path: Path,
    check_feeds: Sequence[dict[str, np.ndarray]],
    make_session: MakeSession,
    *,
    margin: int,
    flow_margin: int,
) -> SplitModels:
    """Split ``model_path`` (models as bytes) or raise :class:`SplitError`.

    ``check_feeds``: model inputs of real sentences (noise 0); the first
    checks the split, all of them measure the streaming gain.  The graph's noise is seeded
    first (:mod:`.seeded_noise`: the front takes ``noise_seed``); SeededNoiseError passes up.
    """
    try:
        import onnx
    except ImportError as err:  # pragma: no cover - onnx is a dependency
        raise SplitError("the onnx package is not installed") from err
    model = onnx.load(str(model_path))
    if add_seeded_noise(model):
        # Noise 0: the seed changes nothing the check sees, but the front needs the input.
        check_feeds = [dict(feeds, noise_seed=seed_feed(0)) for feeds in check_feeds]
    states = _find_cut(model)
    out_name = model.graph.output[0].name
    # Duration candidates: VITS rounds each phoneme's length in frames up (w_ceil).
    rounded = [o for n in model.graph.node if n.op_type in ("Ceil", "Round") for o in n.output]
    values = _probe(model, states, rounded, check_feeds[0], make_session)
    whole = np.asarray(values[out_name], dtype=np.float32).reshape(-1)
    n_ids = check_feeds[0]["input"].shape[-1]
    cut, flow_cut, frames = _choose_cuts(states, values, out_name, n_ids, whole.size)
    durations = next((name for name in rounded if _are_durations(values.get(name), n_ids, frames)), "")
    del values
    front, flow, tail = _extract_parts(model, cut, flow_cut, durations)
    del model
    split = SplitModels(
        front,
        tail,
        tuple(cut),
        whole.size // frames,
        margin,
        1.0,
        flow,
        tuple(flow_cut or ()),
        flow_margin if flow_cut else 0,
        durations,
    )
    return replace(split, gain=_check_split(split, check_feeds, whole, make_session))


def _probe(
    model: Any, states: list[list[str]], rounded: list[str], feeds: dict[str, np.ndarray], make_session: MakeSession
) -> dict[str, np.ndarray]:
    """Every candidate tensor's value on one sentence: which have a frame axis, which are durations."""
    import onnx

    out_name = model.graph.output[0].name
    names = sorted(({t for s in states for t in s} - {out_name}) | set(rounded))
    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    for name in names:
        probe.graph.output.append(onnx.helper.make_empty_tensor_value_info(name))
    session = make_session(probe.SerializeToString())
    return dict(zip([o.name for o in session.get_outputs()], session.run(None, dict(feeds))))


def _choose_cuts(
    states: list[list[str]], values: dict[str, np.ndarray], out_name: str, n_ids: int, samples: int
) -> tuple[list[str], list[str] | None, int]:
    """The decoder cut, the flow cut (None: the flow stays in the front) and the cut's frames.

    Decoder cut: one tensor with a frame axis (plus, for multi-speaker voices,
    conditioning tensors of one frame, passed whole).  Flow cut: the earliest
    cut whose tensors all have the frame axis (or one frame).  The flow's
    receptive field (~32 frames) is wider than the decoder's (~12): each part
    gets its own margin, so the decoder does not recompute 32 frames per seam.
    """
    flow_cut: list[str] | None = None
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
        if len(long_) != 1 or long_[0] == n_ids or samples % long_[0] != 0 or samples // long_[0] < _MIN_HOP:
            continue
        if sum(1 for n in lengths if n != 1) == 1:
            # Conditioning tensors would have to pass through the flow stage: not done.
            return list(state), flow_cut if len(state) == 1 else None, long_[0]
        if flow_cut is None:
            flow_cut = list(state)
    raise SplitError("no convolutional decoder found (no tensor with a frame axis feeds the output alone)")


def _extract_parts(
    model: Any, cut: list[str], flow_cut: list[str] | None, durations: str
) -> tuple[bytes, bytes | None, bytes]:
    """The front, flow (None: not cut off) and tail models, serialised."""
    from onnx.utils import Extractor

    extractor = Extractor(model)
    inputs = [i.name for i in model.graph.input]
    front = extractor.extract_model(inputs, (flow_cut or cut) + ([durations] if durations else [])).SerializeToString()
    flow = extractor.extract_model(flow_cut, cut).SerializeToString() if flow_cut else None
    tail = _build_tail(model, cut).SerializeToString()
    return front, flow, tail


def _check_split(
    split: SplitModels, check_feeds: Sequence[dict[str, np.ndarray]], whole: np.ndarray, make_session: MakeSession
) -> float:
    """The streaming gain of ``split``; raises :class:`SplitError` when windowed decoding of
    the first check sentence is not what the whole model gives (``whole``)."""
    front_session, tail_session = make_session(split.front), make_session(split.tail)
    flow_session = make_session(split.flow) if split.flow else None
    outputs = list(split.front_outputs)

    def run_tail(f: dict[str, np.ndarray]) -> np.ndarray:
        return np.asarray(tail_session.run(None, f)[0], dtype=np.float32).reshape(-1)

    def run_flow(f: dict[str, np.ndarray]) -> np.ndarray:
        assert flow_session is not None
        return np.asarray(flow_session.run(None, f)[0], dtype=np.float32)

    flow = run_flow if flow_session is not None else None
    peaks = []
    for index, sample in enumerate(check_feeds):
        front_out = dict(zip(outputs, front_session.run(outputs, dict(sample))))
        latent = Latent(front_out, flow, split.frame_inputs[0], split.flow_margin)
        full = run_tail(latent.window(0, latent.frames))
        peaks.append(float(np.max(np.abs(full))))
        if index == 0:
            latent = Latent(front_out, flow, split.frame_inputs[0], split.flow_margin)
            windows = plan_windows(latent.frames, 4, 8.0, 128)
            pieces = decode_windows(run_tail, latent, split.hop, split.margin, windows, split.hop)
            windowed = np.concatenate(list(pieces))
            sdr = _sdr_db(whole, windowed)
            if windowed.size != whole.size or sdr < _MIN_SDR_DB:
                raise SplitError(f"windowed decoding differs from the whole model's output ({sdr:.1f} dB)")
    return 1.0 / max(max(peaks), 1e-3)
