"""A folded front's layer norms as one operator each (:mod:`.front_fold`, issue 40).

VITS normalises over channels with ``F.layer_norm`` between two transposes, which the export at
opset 15 spells out as nine operators (ReduceMean, Sub, Pow, ReduceMean, Add, Sqrt, Div, Mul, Add).
onnxruntime fuses that chain only over a tensor's last axis, and its transpose optimiser first moves
the transposes through it, so all 36 of the joe voice's front stay unfused: 324 of its operators,
each a fixed cost per run that a board's core pays many times over.  :func:`fuse_layer_norms`
replaces each chain by ``LayerNormalization`` (opset 17, over the last axis as the chain is), raising
the model's opset from 15 or 16 to 17: no operator the front holds changed meaning between them.

Its float rounding differs from the chain's in the last bits; :func:`.front_check.check_folded` holds
the folded front to the dynamic one as before (outputs within its tolerance, durations equal).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

_LAYER_NORM_OPSET = 17
_CHANGED_SINCE_15 = frozenset({"RoiAlign", "GridSample", "If", "Loop", "Scan"})
"""Operators whose meaning or attributes changed in opsets 16-17: a graph holding one keeps its opset."""
_CHAIN = ("Sub", "Pow", "ReduceMean", "Add", "Sqrt", "Div", "Mul", "Add")
"""What follows the mean: x - mean, squared, its mean, + eps, sqrt, divided, times gamma, + beta."""


def fuse_layer_norms(model: Any) -> int:
    """Replace ``model``'s spelled-out layer norms (over the last axis, constant eps, gamma and beta)
    with ``LayerNormalization``; how many were replaced (0 leaves the model as it was)."""
    from onnx import helper

    graph = model.graph
    opset = next((o for o in model.opset_import if o.domain in ("", "ai.onnx")), None)
    if opset is None or not 15 <= opset.version <= _LAYER_NORM_OPSET:
        return 0
    if any(node.op_type in _CHANGED_SINCE_15 for node in graph.node):
        return 0
    consts = _constants(model)
    users: dict[str, list[Any]] = {}
    for node in graph.node:
        for name in node.input:
            users.setdefault(name, []).append(node)
    outputs = {o.name for o in graph.output}
    fused: dict[int, Any] = {}
    dropped: set[int] = set()
    for node in graph.node:
        chain = _chain(node, users, consts)
        if chain is None or any(id(n) in dropped for n in chain):
            continue
        if any(n.output[0] in outputs for n in chain[:-1]):  # an inner value the graph gives out
            continue
        epsilon, gamma, beta = float(consts[chain[4].input[1]].reshape(())), chain[7].input[1], chain[8].input[1]
        norm = helper.make_node(
            "LayerNormalization",
            [node.input[0], gamma, beta],
            [chain[8].output[0]],
            name=f"{chain[8].name}/edgetts_layer_norm",
            axis=-1,
            epsilon=epsilon,
        )
        fused[id(chain[8])] = norm
        dropped.update(id(n) for n in chain[:-1])
    if not fused:
        return 0
    kept = [fused.get(id(n), n) for n in graph.node if id(n) not in dropped]
    del graph.node[:]
    graph.node.extend(kept)
    opset.version = _LAYER_NORM_OPSET
    return len(fused)


def _constants(model: Any) -> dict[str, np.ndarray]:
    """The model's initializers and Constant nodes' values, by name (small ones are all this needs)."""
    from onnx import numpy_helper

    values = {init.name: numpy_helper.to_array(init) for init in model.graph.initializer if _small(init.dims)}
    for node in model.graph.node:
        if node.op_type == "Constant" and node.attribute and node.attribute[0].name == "value":
            values[node.output[0]] = numpy_helper.to_array(node.attribute[0].t)
    return values


def _small(dims: Sequence[int]) -> bool:
    return int(np.prod(dims)) <= 4096 if len(dims) else True


def _chain(mean: Any, users: Mapping[str, list[Any]], consts: Mapping[str, np.ndarray]) -> list[Any] | None:
    """The nodes of a layer norm whose first mean is ``mean`` (the mean, then _CHAIN), or None."""
    if mean.op_type != "ReduceMean" or not _last_axis(mean):
        return None
    x = mean.input[0]
    chain = [mean]
    for op_type in _CHAIN:
        following = users.get(chain[-1].output[0], [])
        if op_type == "Sub":
            nexts = [n for n in following if n.op_type == "Sub" and list(n.input) == [x, mean.output[0]]]
            if len(following) != 1 or len(nexts) != 1:
                return None
        elif op_type == "Div" and chain[-1].op_type == "Sqrt":
            # The Div reads the centred x (chain[1]) over this sqrt.
            nexts = [n for n in following if n.op_type == "Div" and list(n.input) == [chain[1].output[0], n.input[1]]]
            if len(following) != 1 or len(nexts) != 1:
                return None
        else:
            nexts = [n for n in following if n.op_type == op_type]
            if op_type == "Pow" and len(following) != 2:  # the centred x: squared and divided
                return None
            if op_type != "Pow" and len(following) != 1:
                return None
            if len(nexts) != 1:
                return None
        chain.append(nexts[0])
    return chain if _operands_fit(chain, consts) else None


def _last_axis(node: Any) -> bool:
    from onnx import helper

    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    return list(attrs.get("axes", [])) == [-1] and int(attrs.get("keepdims", 1)) == 1 and len(node.input) == 1


def _operands_fit(chain: Sequence[Any], consts: Mapping[str, np.ndarray]) -> bool:
    """The chain's constants are a layer norm's: squares, eps a scalar, gamma and beta vectors over
    the normalised axis (their shape alone: LayerNormalization broadcasts them the same way)."""
    _mean, sub, power, second, add_eps, _sqrt, div, scale, shift = chain
    linked = (power, sub), (second, power), (add_eps, second), (scale, div), (shift, scale)
    if any(node.input[0] != before.output[0] for node, before in linked):
        return False
    exponent, eps = consts.get(power.input[1]), consts.get(add_eps.input[1])
    gamma, beta = consts.get(scale.input[1]), consts.get(shift.input[1])
    if exponent is None or exponent.size != 1 or float(exponent.reshape(())) != 2.0:
        return False
    if eps is None or eps.size != 1 or not _last_axis(second):
        return False
    return gamma is not None and beta is not None and gamma.ndim == 1 and gamma.shape == beta.shape
