"""A folded front's data movement made one gather, and its convolutions' zero padding their own (issue 40).

At a fixed length every shape is static, so a run of operators that only move values (Pad with zeros,
Reshape, Slice, Transpose, Squeeze, Unsqueeze) is a fixed map from input positions to output positions,
zeros where the padding lands.  VITS's relative attention spells its two changes of position frame
(relative to absolute and back) as five such operators each, twelve times in the joe voice's encoder:
:func:`gather_moves` finds the map by running the operators on the positions themselves and replaces
the run by one ``GatherElements`` along the last axis (and a ``Where`` for the zeros), or, where the map
mixes other axes, a ``Gather`` from the flattened tensor.  Its index is a constant of the output's
size (64 KB for a 64-id attention map).  :func:`pad_into_conv` gives a convolution the zero padding of
the Pad before it.  Both move the same values: the outputs are equal bit for bit.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

_MOVES = frozenset({"Pad", "Reshape", "Slice", "Transpose", "Squeeze", "Unsqueeze"})
_MIN_RUN = 3
"""Shortest run worth a gather (two operators become one or two)."""


def pad_into_conv(model: Any) -> int:
    """Fold each zero Pad along a convolution's spatial axes into the convolution's own pads; how many."""
    from onnx import helper, numpy_helper

    graph = model.graph
    consts = {init.name: init for init in graph.initializer}
    users = _users(graph)
    outputs = {o.name for o in graph.output}
    merged: set[int] = set()
    for pad in graph.node:
        if pad.op_type != "Pad" or pad.output[0] in outputs or not _zero_constant_pad(pad, consts):
            continue
        readers = users.get(pad.output[0], [])
        if len(readers) != 1 or readers[0].op_type != "Conv" or readers[0].input[0] != pad.output[0]:
            continue
        conv = readers[0]
        pads = numpy_helper.to_array(consts[pad.input[1]]).reshape(-1).tolist()
        rank = len(pads) // 2
        begin, end = pads[:rank], pads[rank:]
        attrs = {a.name: helper.get_attribute_value(a) for a in conv.attribute}
        if (
            begin[:2] != [0, 0]
            or end[:2] != [0, 0]
            or min(pads) < 0
            or attrs.get("auto_pad", b"NOTSET") not in (b"NOTSET", "NOTSET")
        ):
            continue
        own = list(attrs.get("pads", [0] * (2 * (rank - 2))))
        spatial = rank - 2
        new = [own[k] + begin[2 + k] for k in range(spatial)] + [own[spatial + k] + end[2 + k] for k in range(spatial)]
        for attr in conv.attribute:
            if attr.name == "pads":
                conv.attribute.remove(attr)
                break
        conv.attribute.append(helper.make_attribute("pads", new))
        conv.input[0] = pad.input[0]
        merged.add(id(pad))
    if merged:
        kept = [n for n in graph.node if id(n) not in merged]
        del graph.node[:]
        graph.node.extend(kept)
    return len(merged)


def _zero_constant_pad(pad: Any, consts: Mapping[str, Any]) -> bool:
    from onnx import helper, numpy_helper

    mode = {a.name: helper.get_attribute_value(a) for a in pad.attribute}.get("mode", b"constant")
    if mode not in (b"constant", "constant") or len(pad.input) < 2 or pad.input[1] not in consts:
        return False
    if len(pad.input) > 3 and pad.input[3]:
        return False  # axes given: not handled
    value = pad.input[2] if len(pad.input) > 2 else ""
    return not value or (value in consts and not np.any(numpy_helper.to_array(consts[value])))


def gather_moves(model: Any, shapes: Mapping[str, list[int] | None], types: Mapping[str, int]) -> int:
    """Replace each run of value-moving operators (``shapes`` static, ``types`` their onnx element
    types) by one gather; how many runs."""
    graph = model.graph
    consts = {init.name: init for init in graph.initializer}
    users = _users(graph)
    outputs = {o.name for o in graph.output}
    producer = {o: n for n in graph.node for o in n.output}
    replaced: dict[int, list[Any]] = {}
    dropped: set[int] = set()
    for node in graph.node:
        if id(node) in dropped or not _moves(node, consts):
            continue
        before = producer.get(node.input[0])
        if before is not None and _moves(before, consts) and len(users.get(node.input[0], [])) == 1:
            continue  # not the start of its run
        run = [node]
        while True:
            readers = users.get(run[-1].output[0], [])
            if run[-1].output[0] in outputs or len(readers) != 1:
                break
            following = readers[0]
            if not _moves(following, consts) or following.input[0] != run[-1].output[0]:
                break
            run.append(following)
        source, result = run[0].input[0], run[-1].output[0]
        in_shape, out_shape = shapes.get(source), shapes.get(result)
        if len(run) < _MIN_RUN or in_shape is None or out_shape is None:
            continue
        where = _position_map(run, consts, in_shape)
        if where is None or list(where.shape) != list(out_shape):
            continue
        new_nodes, new_consts = _gather(
            source, result, where, in_shape, f"edgetts_moves/{len(replaced)}", types.get(source)
        )
        graph.initializer.extend(new_consts)
        replaced[id(run[-1])] = new_nodes
        dropped.update(id(n) for n in run[:-1])
    if not replaced:
        return 0
    kept: list[Any] = []
    for n in graph.node:
        if id(n) in dropped:
            continue
        kept.extend(replaced.get(id(n), [n]))
    del graph.node[:]
    graph.node.extend(kept)
    return len(replaced)


def _users(graph: Any) -> dict[str, list[Any]]:
    users: dict[str, list[Any]] = {}
    for node in graph.node:
        for name in node.input:
            users.setdefault(name, []).append(node)
    return users


def _moves(node: Any, consts: Mapping[str, Any]) -> bool:
    """``node`` moves the values of its first input only, its other inputs constants."""
    if node.op_type not in _MOVES or len(node.output) != 1:
        return False
    if node.op_type == "Pad" and not _zero_constant_pad(node, consts):
        return False
    return all(not name or name in consts for name in node.input[1:])


def _position_map(run: Sequence[Any], consts: Mapping[str, Any], in_shape: Sequence[int]) -> np.ndarray | None:
    """Where each output value of ``run`` comes from: its input's flat position + 1, 0 for padding."""
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper

    nodes = []
    for node in run:
        copy = onnx.NodeProto()
        copy.CopyFrom(node)
        if copy.op_type == "Pad" and len(copy.input) > 2:
            del copy.input[2:]  # the zero value is float; positions are int64 (padding gives 0)
        nodes.append(copy)
    nodes[0].input[0] = "positions"
    used = {name for node in nodes for name in node.input[1:] if name}
    graph = helper.make_graph(
        nodes,
        "moves",
        [helper.make_tensor_value_info("positions", TensorProto.INT64, list(in_shape))],
        [helper.make_tensor_value_info(nodes[-1].output[0], TensorProto.INT64, None)],
        [consts[name] for name in used],
    )
    probe = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    probe.ir_version = 8
    positions = np.arange(1, int(np.prod(in_shape)) + 1, dtype=np.int64).reshape(in_shape)
    try:
        session = ort.InferenceSession(probe.SerializeToString(), providers=["CPUExecutionProvider"])
        return np.asarray(session.run(None, {"positions": positions})[0])
    except Exception:  # an operator onnxruntime has no int64 kernel for: the run stays
        return None


def _gather(
    source: str, result: str, where: np.ndarray, in_shape: Sequence[int], name: str, element: int | None
) -> tuple[list[Any], list[Any]]:
    """Nodes giving ``result`` from ``source`` by the position map ``where`` (see :func:`_position_map`)."""
    from onnx import helper, numpy_helper

    taken = where > 0
    flat = np.where(taken, where - 1, 0)
    nodes, inits = [], []
    src = np.unravel_index(flat, tuple(in_shape))
    same_rank = len(in_shape) == where.ndim
    keeps_rows = same_rank and all(
        np.array_equal(np.where(taken, src[axis], 0), np.where(taken, np.indices(where.shape)[axis], 0))
        for axis in range(where.ndim - 1)
    )
    gathered = f"{result}/gathered" if not taken.all() else result
    if keeps_rows:
        index = numpy_helper.from_array(np.asarray(src[-1], dtype=np.int64), f"{name}/index")
        inits.append(index)
        nodes.append(
            helper.make_node("GatherElements", [source, index.name], [gathered], name=name, axis=where.ndim - 1)
        )
    else:
        shape = numpy_helper.from_array(np.array([-1], dtype=np.int64), f"{name}/flat")
        index = numpy_helper.from_array(flat.astype(np.int64), f"{name}/index")
        inits += [shape, index]
        nodes.append(helper.make_node("Reshape", [source, shape.name], [f"{result}/flat"], name=f"{name}/flat"))
        nodes.append(helper.make_node("Gather", [f"{result}/flat", index.name], [gathered], name=name, axis=0))
    if not taken.all():
        mask = numpy_helper.from_array(taken, f"{name}/mask")
        dtype = helper.tensor_dtype_to_np_dtype(element) if element else np.dtype(np.float32)
        zero = numpy_helper.from_array(np.zeros((), dtype=dtype), f"{name}/zero")
        inits += [mask, zero]
        nodes.append(helper.make_node("Where", [mask.name, gathered, zero.name], [result], name=f"{name}/zeros"))
    return nodes, inits
