"""A split voice's waveform decoder rewritten to carry its convolutions' state from run to run.

The decoder (:mod:`.graph_split`'s *tail*) is a stack of convolutions over the
frame axis.  Decoded in windows, each window recomputes a margin of context on
each side: at small windows (a slow board, issue 14) most of the work.  This
module rewrites the tail's graph so that one run takes the next frames and the
state the last run left, and returns the audio that is now fully determined
plus the new state: every frame is decoded once, and the audio is what one run
over the whole sentence computes (to float rounding).  See docs/streaming.md,
"Carried state".

How each op on the frame axis is rewritten (``final`` / ``first``: 0 or 1 inputs):
- ``Conv`` (stride 1, symmetric pads p): its input is the state (the last 2p
  samples it saw; p zeros at the start, the sentence's own left padding) joined
  with the new samples, plus p zeros when ``final``; run unpadded.  It lags its
  input by p samples.
- ``ConvTranspose`` (stride s, kernel k, pads p): the state is its last
  ceil(k/s) - 1 input frames; the run is unpadded and sliced to the outputs
  whose inputs have all been seen: the first p are dropped at ``first``, and
  the k - s - p that only the sentence's end completes are kept at ``final``.
- Two inputs of an element-wise op that lag by different amounts: the one
  lagging less goes through a delay line of the difference.
- Element-wise ops of one frame-axis input (activations, constants): as they are.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

FIRST = "edgetts_first"
FINAL = "edgetts_final"
"""Inputs of the rewritten graph: int64 (1,) each, 1 on a sentence's first / last run."""

_POINTWISE = frozenset(
    {
        "LeakyRelu",
        "Relu",
        "Tanh",
        "Sigmoid",
        "Softplus",
        "Clip",
        "Neg",
        "Exp",
        "Identity",
        "Unsqueeze",
        "Squeeze",
    }
)
_BINARY = frozenset({"Add", "Sub", "Mul", "Div"})
_BIG = 1 << 40


class StatefulError(Exception):
    """The decoder has an op on its frame axis that cannot carry state (windows with margins stay)."""


@dataclass(frozen=True)
class StateSpec:
    """One carried state: the graph's input and output names and its initial value's shape."""

    name: str
    out: str
    shape: tuple[int, ...]


@dataclass(frozen=True)
class StatefulTail:
    """The rewritten decoder and what its runs need."""

    model: bytes
    frame_input: str
    states: tuple[StateSpec, ...]
    lag: int
    """Samples of audio the decoder holds back after a run that is not ``final``: it has
    returned hop x frames seen - lag samples in all.  The sentence's end returns the rest."""
    hop: int
    """Output samples per input frame (the upsamplers' strides)."""

    @property
    def reach(self) -> int:
        """Frames past a sample's own that it waits for: ceil(lag / hop)."""
        return -(-self.lag // self.hop)

    @property
    def first_frames(self) -> int:
        """The fewest frames of a sentence's first run, unless it is also its last: each layer
        must see its whole reach before it returns anything."""
        return self.lag // self.hop + 1


class _Builder:
    """Rewrites the nodes one by one, tracking each frame-axis tensor's lag (in its own samples)."""

    def __init__(self, graph: Any) -> None:
        from onnx import helper, numpy_helper

        self.helper, self.numpy_helper = helper, numpy_helper
        self.inits = {i.name: i for i in graph.initializer}
        self.nodes: list[Any] = []
        self.new_inits: list[Any] = []
        self.lag: dict[str, int] = {}
        self.channels: dict[str, int] = {}
        self.states: list[StateSpec] = []
        self.hop = 1
        self._count = 0
        self._const("one", np.array([1], dtype=np.int64))
        self._const("zero", np.array([0], dtype=np.int64))
        self._const("big", np.array([_BIG], dtype=np.int64))
        self._const("last_axis", np.array([-1], dtype=np.int64))
        self._node("Sub", ["edgetts_c_one", FINAL], "edgetts_not_final")

    # -- small helpers -------------------------------------------------------------
    def _name(self, what: str) -> str:
        self._count += 1
        return f"edgetts_{what}_{self._count}"

    def _const(self, name: str, value: np.ndarray) -> str:
        full = f"edgetts_c_{name}"
        self.new_inits.append(self.numpy_helper.from_array(value, full))
        return full

    def _int(self, value: int) -> str:
        return self._const(self._name("i"), np.array([value], dtype=np.int64))

    def _node(self, op: str, inputs: list[str], output: str | None = None, **attrs: Any) -> str:
        output = output or self._name(op.lower())
        self.nodes.append(self.helper.make_node(op, inputs, [output], **attrs))
        return output

    def _length(self, tensor: str) -> str:
        return self._node("Shape", [tensor], start=-1)

    def _slice(self, tensor: str, start: str, end: str) -> str:
        return self._node("Slice", [tensor, start, end, "edgetts_c_last_axis"])

    def _scaled(self, flag: str, amount: int) -> str:
        return self._node("Mul", [flag, self._int(amount)])

    def _state(self, channels: int, initial: int) -> tuple[str, str]:
        """A carried state of ``channels`` rows, ``initial`` zero samples at a sentence's start."""
        name = self._name("state")
        out = f"{name}_out"
        self.states.append(StateSpec(name, out, (1, channels, initial)))
        return name, out

    def _keep_tail(self, joined: str, out: str, length: int) -> None:
        self._node("Slice", [joined, self._int(-length), "edgetts_c_big", "edgetts_c_last_axis"], out)

    # -- ops -----------------------------------------------------------------------
    def conv(self, node: Any, attrs: dict[str, Any]) -> None:
        x = node.input[0]
        k, d = attrs["kernel_shape"][0], attrs.get("dilations", [1])[0]
        pads, strides = attrs.get("pads", [0, 0]), attrs.get("strides", [1])
        if strides != [1] or pads[0] != pads[1] or 2 * pads[0] != d * (k - 1):
            raise StatefulError(f"{node.name or node.output[0]}: a Conv that is not stride-1 'same'")
        p, channels = pads[0], self._in_channels(node)
        if p == 0:
            self.nodes.append(node)
            self.lag[node.output[0]] = self.lag[x]
            return
        state, state_out = self._state(channels, p)
        # One copy: the state, the new samples and (at the end) the right padding, joined.
        pad_shape = self._node("Concat", ["edgetts_c_one", self._int(channels), self._scaled(FINAL, p)], axis=0)
        zeros = self._node("ConstantOfShape", [pad_shape])
        padded = self._node("Concat", [state, x, zeros], axis=-1)
        self._keep_tail(padded, state_out, 2 * p)  # (at the end it holds padding: never used again)
        attrs = {**attrs, "pads": [0, 0]}
        self.nodes.append(self.helper.make_node("Conv", [padded, *node.input[1:]], list(node.output), **attrs))
        self.lag[node.output[0]] = self.lag[x] + p

    def conv_transpose(self, node: Any, attrs: dict[str, Any]) -> None:
        x = node.input[0]
        k, s = attrs["kernel_shape"][0], attrs.get("strides", [1])[0]
        pads = attrs.get("pads", [0, 0])
        if (
            attrs.get("dilations", [1]) != [1]
            or pads[0] != pads[1]
            or attrs.get("output_padding", [0]) != [0]
            or attrs.get("group", 1) != 1
            or k < s
        ):
            raise StatefulError(f"{node.name or node.output[0]}: a ConvTranspose of an unexpected form")
        p, m = pads[0], max(0, math.ceil(k / s) - 1)
        joined = x
        if m:
            state, state_out = self._state(self._in_channels(node), m)
            joined = self._node("Concat", [state, x], axis=-1)
            self._keep_tail(joined, state_out, m)
        run = self._node("ConvTranspose", [joined, *node.input[1:]], **{**attrs, "pads": [0, 0]})
        # Outputs [m s + p first, len(joined) s + (k - s - p) final) of the unpadded run.
        start = self._node("Add", [self._int(m * s), self._scaled(FIRST, p)])
        end = self._node(
            "Add", [self._node("Mul", [self._length(joined), self._int(s)]), self._scaled(FINAL, k - s - p)]
        )
        self._node("Slice", [run, start, end, "edgetts_c_last_axis"], node.output[0])
        self.lag[node.output[0]] = s * self.lag[x] + p
        self.hop *= s

    def binary(self, node: Any) -> None:
        a, b = node.input[0], node.input[1]
        if a in self.lag and b in self.lag and self.lag[a] != self.lag[b]:
            early, late = (a, b) if self.lag[a] < self.lag[b] else (b, a)
            delayed = self._delay(early, self.lag[late] - self.lag[early])
            inputs = [delayed if x == early else x for x in node.input]
            node = self.helper.make_node(node.op_type, inputs, list(node.output))
            self.lag[node.output[0]] = self.lag[late]
        else:
            self.lag[node.output[0]] = max(self.lag.get(a, 0), self.lag.get(b, 0))
        self.nodes.append(node)

    def _delay(self, tensor: str, amount: int) -> str:
        """``tensor`` held back by ``amount`` samples (all of it handed out at ``final``)."""
        state, state_out = self._state(self.channels.get(tensor, 0), 0)
        joined = self._node("Concat", [state, tensor], axis=-1)
        self._keep_tail(joined, state_out, amount)
        end = self._node("Sub", [self._length(joined), self._scaled("edgetts_not_final", amount)])
        return self._slice(joined, "edgetts_c_zero", end)

    def _in_channels(self, node: Any) -> int:
        weight = self.inits.get(node.input[1])
        if weight is None:
            raise StatefulError(f"{node.output[0]}: weights that are not constants")
        # Conv weights are (out, in, k); ConvTranspose weights (in, out, k).
        channels = int(weight.dims[0] if node.op_type == "ConvTranspose" else weight.dims[1])
        out = int(weight.dims[1] if node.op_type == "ConvTranspose" else weight.dims[0])
        self.channels[node.output[0]] = out
        return channels

    def add(self, node: Any) -> None:
        on_axis = [x for x in node.input if x in self.lag]
        if not on_axis:
            self.nodes.append(node)
            return
        attrs = {a.name: self.helper.get_attribute_value(a) for a in node.attribute}
        if node.op_type == "Conv":
            self.conv(node, attrs)
        elif node.op_type == "ConvTranspose":
            self.conv_transpose(node, attrs)
        elif node.op_type in _BINARY:
            self.binary(node)
        elif node.op_type in _POINTWISE and len(on_axis) == 1:
            self.nodes.append(node)
            self.lag[node.output[0]] = self.lag[on_axis[0]]
        else:
            raise StatefulError(f"{node.op_type} on the frame axis cannot carry state")
        for out in node.output:
            self.channels.setdefault(out, self.channels.get(on_axis[0], 0))


def make_stateful(tail: Any, frame_input: str) -> StatefulTail:
    """The stateful form of ``tail`` (an onnx ModelProto of a split voice's decoder)."""
    import onnx
    from onnx import TensorProto, helper

    graph = tail.graph
    if [i.name for i in graph.input] != [frame_input] or len(graph.output) != 1:
        raise StatefulError("the decoder has other inputs than its frames, or several outputs")
    builder = _Builder(graph)
    builder.lag[frame_input] = 0
    channels = [d.dim_value for d in graph.input[0].type.tensor_type.shape.dim]
    builder.channels[frame_input] = channels[1] if len(channels) > 1 else 0
    for node in graph.node:
        builder.add(node)
    output = graph.output[0].name
    if output not in builder.lag:
        raise StatefulError("the decoder's output is not on the frame axis")
    flags = [helper.make_tensor_value_info(n, TensorProto.INT64, [1]) for n in (FIRST, FINAL)]
    state_in = [
        helper.make_tensor_value_info(s.name, TensorProto.FLOAT, [1, s.shape[1] or None, None]) for s in builder.states
    ]
    state_out = [
        helper.make_tensor_value_info(s.out, TensorProto.FLOAT, [1, s.shape[1] or None, None]) for s in builder.states
    ]
    inputs = [*graph.input, *flags, *state_in]
    rewritten = helper.make_graph(
        builder.nodes,
        "edgetts-vits-tail-stateful",
        inputs,
        [*graph.output, *state_out],
        [*graph.initializer, *builder.new_inits],
    )
    model = helper.make_model(rewritten, opset_imports=list(tail.opset_import))
    model.ir_version = tail.ir_version
    onnx.checker.check_model(model)
    return StatefulTail(model.SerializeToString(), frame_input, tuple(builder.states), builder.lag[output], builder.hop)


class TailStream:
    """One sentence decoded through a :class:`StatefulTail`: frames in, audio out, in order."""

    def __init__(self, tail: StatefulTail, run: Any) -> None:
        """``run(feeds) -> list of outputs`` runs the rewritten graph (output 0 the audio)."""
        self._tail, self._run = tail, run
        self._state = {s.name: np.zeros(s.shape, dtype=np.float32) for s in tail.states}
        self._first = True
        self.done = False

    def feed(self, frames: np.ndarray, *, final: bool = False) -> np.ndarray:
        """The audio that ``frames`` (the decoder's input, (1, channels, n)) make fully determined
        (all that is left at ``final``), flat float32."""
        assert not self.done, "the sentence has ended"
        if self._first and not final and frames.shape[-1] < self._tail.first_frames:
            raise ValueError(
                f"a first run of {frames.shape[-1]} frames: at least "
                f"{self._tail.first_frames} are needed (or the whole sentence)"
            )
        feeds = {
            self._tail.frame_input: frames,
            **self._state,
            FIRST: np.array([int(self._first)], dtype=np.int64),
            FINAL: np.array([int(final)], dtype=np.int64),
        }
        outputs = self._run(feeds)
        self._state = {s.name: v for s, v in zip(self._tail.states, outputs[1:])}
        self._first, self.done = False, final
        return np.asarray(outputs[0], dtype=np.float32).reshape(-1)
