"""A split voice's front at a fixed number of ids: what the shapes make constant, folded (issue 40).

The front (text encoder, duration predictor, seeded noise: :mod:`.graph_split`) is exported for any
number of ids, so most of its operators compute shapes and masks: Shape, Gather, Concat, Range, the
masks of ``input_lengths``.  Fast start runs it on exactly ``fast_start_ids`` ids first, and that run
is what a long first sentence's first chunk waits for (:mod:`.fast_start`).  :func:`fold_front` makes
the front of one length (batch 1, ``input_lengths`` equal to it):

1. every shape static, and every value computed from shapes and constants alone a constant (onnx's
   shape inference; the constant nodes run once by onnxruntime; again until nothing changes);
2. a product with a mask of ones, or a choice by a constant condition, the tensor itself (exact);
3. the duration predictor's spline dense: it indexes with boolean masks (NonZero, then GatherND and
   ScatterND: shapes that depend on values), now every position is computed, zeros where the mask is
   false, and the mask chooses (Where) what is written back.  The spline acts on each position alone,
   so the chosen positions compute what they did; the others compute on zeros and are dropped;
4. each spelled-out layer norm one ``LayerNormalization`` (:mod:`.front_fuse`);
5. each run of value-moving operators one gather, each zero Pad before a convolution its own padding
   (:mod:`.front_moves`);
6. the integers of each noise draw of a fixed shape an input computed by numpy (:mod:`.front_noise`).

What depends on the ids, scales and seed is computed as before: the seeded noise (:mod:`.seeded_noise`)
is the same integer and float64 operations on tensors of the same shapes, so it is identical.
:func:`.front_check.check_folded` holds a folded front to that (noise bit for bit, outputs within
TOLERANCE) on sentences of the voice, some with noise large enough to reach the spline's tails.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from edgetts.voice.piper.front_fuse import fuse_layer_norms
from edgetts.voice.piper.front_moves import gather_moves, pad_into_conv
from edgetts.voice.piper.front_noise import BITS_INPUT, cut_noise_bits, noise_bits_feeds

FOLD_VERSION = "4"
"""Bump when :func:`fold_front` changes: cached folded fronts are then made again."""

TOLERANCE = 1e-4
"""Largest difference allowed between a folded front's float outputs and the dynamic front's.  At fixed
shapes onnxruntime may choose other kernels (fused ops, other loop splits), whose float32 roundings
differ in the last bits; 1e-4 on latents of magnitude ~1 is -80 dB, far under the 30 dB the split's
windows are held to.  The durations (whole frames) must be equal, the noise identical.  Measured here:
1.1e-5 with the layer norms fused (:mod:`.front_fuse`), 0 without (docs/streaming.md, "The front at
fixed lengths")."""

_MAX_ELEMENTS = 1 << 20
"""Largest tensor made a constant (a bigger one would cost more memory than its operators cost time)."""
_MAX_ROUNDS = 16
_SKIPPED = ("If", "Loop", "Scan", "DequantizeLinear", "QuantizeLinear", "DynamicQuantizeLinear")
"""Never run at fold time: subgraphs, and an int8 voice's (de)quantization (folded, its weights would
become float32: four times the memory, and not what the voice was quantized for)."""

MakeSession = Callable[[bytes], Any]
"""Builds an onnxruntime session from model bytes."""


class FoldError(Exception):
    """The front cannot be folded at that length, or the folded front is not the dynamic one."""


def fold_front(front: bytes, length: int) -> bytes:
    """The front model ``front`` (serialised) for runs on exactly ``length`` ids, folded (serialised).

    Its inputs stay those of ``front`` (``input`` now shaped (1, length); ``input_lengths`` is still
    accepted and must be [length]).  Raises :class:`FoldError` when the graph is not a front of ids.
    """
    import onnx

    if length < 1:
        raise FoldError(f"cannot fold a front at {length} ids")
    model = onnx.load_from_string(front)
    _fix_length(model, length)
    _fold(model)
    if _dense_masks(model, *_inferred(model)):
        _fold(model)
    fuse_layer_norms(model)
    pad_into_conv(model)
    gather_moves(model, *_inferred(model))
    cut_noise_bits(model, _inferred(model)[0])
    graph = model.graph
    used = {name for node in graph.node for name in node.input}
    kept = [init for init in graph.initializer if init.name in used]
    del graph.initializer[:], graph.value_info[:]
    graph.initializer.extend(kept)
    return bytes(model.SerializeToString())


# -- fixed length --------------------------------------------------------------------
def _fix_length(model: Any, length: int) -> None:
    from onnx import numpy_helper

    graph = model.graph
    inputs = {i.name: i for i in graph.input}
    if "input" not in inputs or len(inputs["input"].type.tensor_type.shape.dim) != 2:
        raise FoldError("the front has no input 'input' shaped (batch, ids)")
    batch = inputs["input"].type.tensor_type.shape.dim[0].dim_param
    for value in graph.input:
        for axis, dim in enumerate(value.type.tensor_type.shape.dim):
            if (batch and dim.dim_param == batch) or (value.name == "input" and axis == 0):
                dim.Clear()
                dim.dim_value = 1
    ids = inputs["input"].type.tensor_type.shape.dim[1]
    ids.Clear()
    ids.dim_value = length
    if "input_lengths" in inputs:
        # Fed [length] on every run (check_feeds.model_feeds), now a constant: the masks fold.
        fixed = "edgetts_fold/input_lengths"
        graph.initializer.append(numpy_helper.from_array(np.array([length], dtype=np.int64), fixed))
        for node in graph.node:
            for k, name in enumerate(node.input):
                if name == "input_lengths":
                    node.input[k] = fixed
    del graph.value_info[:]
    for output in graph.output:
        output.type.tensor_type.ClearField("shape")


def _inferred(model: Any) -> tuple[dict[str, list[int] | None], dict[str, int]]:
    """Each tensor's shape where onnx's shape inference knows all of it (else None), and its type."""
    from onnx import shape_inference

    graph = shape_inference.infer_shapes(model, data_prop=True).graph
    shapes: dict[str, list[int] | None] = {}
    types: dict[str, int] = {}
    for value in [*graph.value_info, *graph.input, *graph.output]:
        kind = value.type.tensor_type
        dims = kind.shape.dim if kind.HasField("shape") else None
        known = dims is not None and all(d.HasField("dim_value") for d in dims)
        shapes[value.name] = [int(d.dim_value) for d in dims] if known and dims is not None else None
        types[value.name] = int(kind.elem_type)
    for init in model.graph.initializer:
        shapes[init.name] = [int(d) for d in init.dims]
        types[init.name] = int(init.data_type)
    return shapes, types


def static_shapes(model: Any) -> tuple[dict[str, list[int] | None], dict[str, int]]:
    """Each tensor's shape where all of it is known (else None), and its onnx element type."""
    return _inferred(model)


# -- constants -----------------------------------------------------------------------
def _fold(model: Any) -> None:
    for _ in range(_MAX_ROUNDS):
        if not _fold_once(model, _inferred(model)[0]):
            return


def _fold_once(model: Any, shapes: Mapping[str, list[int] | None]) -> bool:
    """One pass: static Shapes, constant nodes and identities replaced; False when none was found."""
    from onnx import numpy_helper

    graph = model.graph
    nodes = list(graph.node)
    outputs = {o.name for o in graph.output}
    initial = {i.name: i for i in graph.initializer}
    known = set(initial)
    values: dict[str, np.ndarray] = {}
    run: list[Any] = []
    alias: dict[str, str] = {}
    kept = []
    for node in nodes:
        static = None if node.output[0] in outputs else _shape_value(node, shapes)
        if static is not None:
            values[node.output[0]] = static
            known.add(node.output[0])
        elif _constant(node, known, outputs, shapes):
            run.append(node)
            known.update(node.output)
        elif (same := _identity(node, shapes, initial, outputs)) is not None:
            alias[node.output[0]] = same
        else:
            kept.append(node)
    if not (values or run or alias):
        return False
    used = {name for node in kept for name in node.input} | outputs
    needed = [name for node in run for name in node.output if name in used]
    values.update(_evaluate(model, run, values, needed))
    for node in kept:
        for k, name in enumerate(node.input):
            while name in alias:
                name = alias[name]
            node.input[k] = name
    del graph.node[:]
    graph.node.extend(kept)
    graph.initializer.extend(numpy_helper.from_array(np.asarray(v), name) for name, v in values.items())
    return True


def _shape_value(node: Any, shapes: Mapping[str, list[int] | None]) -> np.ndarray | None:
    """The value of a Shape or Size node whose input's shape is static."""
    if node.op_type not in ("Shape", "Size") or node.domain not in ("", "ai.onnx"):
        return None
    dims = shapes.get(node.input[0])
    if dims is None:
        return None
    if node.op_type == "Size":
        return np.array(int(np.prod(dims)), dtype=np.int64)
    attrs = {a.name: a.i for a in node.attribute}
    start, end = attrs.get("start", 0), attrs.get("end", len(dims))
    return np.array(dims, dtype=np.int64)[start:end]


def _constant(node: Any, known: set[str], outputs: set[str], shapes: Mapping[str, list[int] | None]) -> bool:
    """``node`` computes from constants alone (and not too much, nor anything random)."""
    if node.domain not in ("", "ai.onnx") or node.op_type.startswith("Random") or node.op_type in _SKIPPED:
        return False
    if any(name and name not in known for name in node.input) or any(o in outputs for o in node.output):
        return False
    return all((dims := shapes.get(o)) is None or int(np.prod(dims)) <= _MAX_ELEMENTS for o in node.output)


def _small(name: str, initial: Mapping[str, Any]) -> np.ndarray | None:
    from onnx import numpy_helper

    init = initial.get(name)
    if init is None or int(np.prod(init.dims)) > _MAX_ELEMENTS:
        return None
    return np.asarray(numpy_helper.to_array(init))


def _identity(
    node: Any, shapes: Mapping[str, list[int] | None], initial: Mapping[str, Any], outputs: set[str]
) -> str | None:
    """The input that ``node`` returns unchanged (times ones, a constant choice, the same shape), or None."""
    if node.domain not in ("", "ai.onnx") or len(node.output) != 1 or node.output[0] in outputs:
        return None
    out = shapes.get(node.output[0])
    if out is None:
        return None
    candidates: Iterable[tuple[int, int]] = ()
    if node.op_type == "Mul":
        candidates = ((0, 1), (1, 0))
    elif node.op_type == "Div":
        candidates = ((0, 1),)
    for keep, one in candidates:
        value = _small(node.input[one], initial)
        if value is not None and value.size and np.all(value == 1) and shapes.get(node.input[keep]) == out:
            return str(node.input[keep])
    if node.op_type == "Where":
        value = _small(node.input[0], initial)
        if value is not None and value.size and (bool(np.all(value)) or not np.any(value)):
            chosen = node.input[1] if bool(np.all(value)) else node.input[2]
            return str(chosen) if shapes.get(chosen) == out else None
    if node.op_type in ("Expand", "Reshape", "Identity") and shapes.get(node.input[0]) == out:
        return str(node.input[0])
    return None


def _evaluate(model: Any, nodes: Sequence[Any], values: Mapping[str, np.ndarray], needed: Sequence[str]) -> dict:
    """The tensors ``needed`` of the constant ``nodes``, computed once by onnxruntime."""
    if not needed:
        return {}
    import onnxruntime as ort
    from onnx import helper, numpy_helper

    inputs = {name for node in nodes for name in node.input if name}
    inits = [i for i in model.graph.initializer if i.name in inputs]
    inits += [numpy_helper.from_array(np.asarray(v), name) for name, v in values.items() if name in inputs]
    outs = [helper.make_empty_tensor_value_info(name) for name in needed]
    graph = helper.make_graph(list(nodes), "edgetts-fold", [], outs, inits)
    sub = helper.make_model(graph, opset_imports=list(model.opset_import))
    sub.ir_version = model.ir_version
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.intra_op_num_threads = 1
    options.log_severity_level = 3
    session = ort.InferenceSession(sub.SerializeToString(), options, providers=["CPUExecutionProvider"])
    return dict(zip(needed, session.run(list(needed), {})))


# -- boolean-mask indexing made dense ----------------------------------------------------
def _dense_masks(model: Any, shapes: Mapping[str, list[int] | None], types: Mapping[str, int]) -> int:
    """Rewrite each NonZero -> Transpose -> GatherND / ScatterND / Shape of a static mask densely
    (module docstring, 3.); the number rewritten (one whose uses do not fit is left as it is)."""
    from onnx import helper, numpy_helper

    graph = model.graph
    nodes = list(graph.node)
    users: dict[str, list[int]] = {}
    for k, node in enumerate(nodes):
        for name in node.input:
            users.setdefault(name, []).append(k)
    replaced: dict[int, list[Any]] = {}
    dropped: set[int] = set()
    for k, node in enumerate(nodes):
        plan = _dense_plan(nodes, k, users, shapes)
        if plan is None:
            continue
        transpose, mask_shape = plan
        every = np.argwhere(np.ones(mask_shape, dtype=bool)).astype(np.int64)
        name = f"{node.name or node.output[0]}/dense"
        graph.initializer.append(numpy_helper.from_array(every, f"{name}/every"))
        dropped.update((k, transpose))
        for use in users[nodes[transpose].output[0]]:
            user = nodes[use]
            if user.op_type == "Shape":
                user.input[0] = f"{name}/every"
            else:
                zero = np.zeros((), dtype=helper.tensor_dtype_to_np_dtype(types.get(user.input[0], 1)))
                replaced[use] = _dense_use(graph, user, (node.input[0], mask_shape), shapes, zero, f"{name}/{use}")
    result = []
    for k, node in enumerate(nodes):
        if k not in dropped:
            result.extend(replaced.get(k, [node]))
    del graph.node[:]
    graph.node.extend(result)
    return len(dropped) // 2


def _dense_plan(
    nodes: Sequence[Any], k: int, users: Mapping[str, list[int]], shapes: Mapping[str, list[int] | None]
) -> tuple[int, list[int]] | None:
    """(the Transpose, the mask's shape) when node ``k`` is a NonZero whose indices are only gathered
    from, scattered to or measured, on tensors led by the mask's shape; else None."""
    node = nodes[k]
    mask = shapes.get(node.input[0]) if node.op_type == "NonZero" else None
    after = users.get(node.output[0], []) if mask else []
    if mask is None or len(after) != 1 or nodes[after[0]].op_type != "Transpose":
        return None
    transpose = nodes[after[0]]
    if [a.ints for a in transpose.attribute if a.name == "perm"] != [[1, 0]]:
        return None
    for use in users.get(transpose.output[0], []):
        user = nodes[use]
        attrs = {a.name: a for a in user.attribute}
        if user.op_type == "Shape" and not attrs:
            continue
        if user.op_type not in ("GatherND", "ScatterND") or list(user.input).index(transpose.output[0]) != 1:
            return None
        if ("batch_dims" in attrs and attrs["batch_dims"].i) or (
            "reduction" in attrs and attrs["reduction"].s != b"none"
        ):
            return None
        data = shapes.get(user.input[0])
        if data is None or data[: len(mask)] != mask:
            return None
    return after[0], mask


def _dense_use(
    graph: Any,
    user: Any,
    mask: tuple[str, list[int]],
    shapes: Mapping[str, list[int] | None],
    zero: np.ndarray,
    name: str,
) -> list[Any]:
    """The nodes that replace one GatherND or ScatterND of a dense NonZero (``mask``: its condition
    and shape; ``zero``: of the gathered tensor's type)."""
    from onnx import helper, numpy_helper

    condition, mask_shape = mask
    data = shapes[user.input[0]]
    assert data is not None
    made: list[Any] = []

    def constant(value: np.ndarray, suffix: str) -> str:
        graph.initializer.append(numpy_helper.from_array(value, f"{name}/{suffix}"))
        return f"{name}/{suffix}"

    if len(data) > len(mask_shape):
        shape = constant(np.array(mask_shape + [1] * (len(data) - len(mask_shape)), np.int64), "mask_shape")
        made.append(helper.make_node("Reshape", [condition, shape], [f"{name}/mask"], name=f"{name}/mask"))
        condition = f"{name}/mask"
    if user.op_type == "GatherND":
        # Every position in order, zeros where the mask is false (what they compute is never used;
        # zeros keep it finite and in range, and it does not depend on the sentence).
        kept = f"{name}/kept"
        made.append(helper.make_node("Where", [condition, user.input[0], constant(zero, "zero")], [kept], name=kept))
        rows = constant(np.array([int(np.prod(mask_shape)), *data[len(mask_shape) :]], np.int64), "rows")
        made.append(helper.make_node("Reshape", [kept, rows], [user.output[0]], name=f"{name}/gathered"))
    else:
        whole = f"{name}/whole"
        shape = constant(np.array(data, np.int64), "shape")
        made.append(helper.make_node("Reshape", [user.input[2], shape], [whole], name=whole))
        made.append(helper.make_node("Where", [condition, whole, user.input[0]], [user.output[0]], name=name))
    return made


# -- running them ----------------------------------------------------------------------
class FrontSessions:
    """The front as one session: a run on a folded length goes to its folded session, any other to
    the dynamic one (``get_inputs`` and the rest are the dynamic session's)."""

    def __init__(self, dynamic: Any, folded: Mapping[int, Any]) -> None:
        self.dynamic = dynamic
        self.folded = dict(folded)
        self._bits = {n: [i.name for i in s.get_inputs() if i.name.startswith(BITS_INPUT)] for n, s in folded.items()}
        """Per folded length, its inputs of noise integers (front_noise)."""

    def run(self, outputs: Sequence[str] | None, feeds: Mapping[str, np.ndarray], run_options: Any = None) -> Any:
        ids = feeds.get("input")
        session = self.folded.get(int(ids.shape[-1]), self.dynamic) if ids is not None else self.dynamic
        bits = self._bits.get(int(ids.shape[-1])) if ids is not None and session is not self.dynamic else None
        if bits:  # a folded front takes its noise's integers computed in numpy (front_noise)
            feeds = {**feeds, **noise_bits_feeds(bits, feeds)}
        return session.run(outputs, feeds, run_options)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.dynamic, name)
