"""A folded front's noise hashing done in numpy: the same integers, a tenth of the operators (issue 40).

The seeded noise (:mod:`.seeded_noise`) hashes each uniform draw's positions in the graph: for every
uniform, three rounds of ``(x + c)^3 mod P`` over its columns and over its rows, then one cube per
element, about fifty int64 operators, over 200 of the joe voice's folded front of some 1,000.  At a
fixed length every uniform's shape is known, so :func:`cut_noise_bits` makes each uniform's integers
(``h``, before they become floats) an input of the folded front, ``edgetts_noise_bits.<key>.<rows>x<cols>``
(``key``: the uniform's first key in the ``noise_seed`` feed), and :func:`noise_bits_feeds` computes
them with numpy's int64 arithmetic, which is the graph's: every product stays below 2^62, so the
integers are equal bit for bit (:func:`.front_check.check_folded` requires the noise identical).  What
turns them into normals (float64 Box-Muller) stays in the graph, unchanged.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from edgetts.voice.piper.seeded_noise import NOISE_SEED_INPUT, uniform_bits

BITS_INPUT = "edgetts_noise_bits."
_BITS_NAME = re.compile(r"^edgetts_noise_bits\.(\d+)\.(\d+)x(\d+)$")
_DOUBLE = 11  # onnx TensorProto.DOUBLE


def cut_noise_bits(model: Any, shapes: Mapping[str, list[int] | None]) -> int:
    """Make each uniform draw's integers an input of ``model`` (a front at a fixed length: ``shapes``
    from onnx's shape inference); how many were cut (0 leaves the model as it was)."""
    from onnx import TensorProto, helper, numpy_helper

    graph = model.graph
    producer = {out: node for node in graph.node for out in node.output}
    consts = {init.name: numpy_helper.to_array(init) for init in graph.initializer if len(init.dims) <= 1}
    cut = 0
    for node in graph.node:
        to = {a.name: helper.get_attribute_value(a) for a in node.attribute}.get("to")
        if node.op_type != "Cast" or to != _DOUBLE:
            continue
        bits = node.input[0]
        shape = shapes.get(bits)
        key = _uniform_key(bits, producer, consts)
        if key is None or shape is None or len(shape) != 2:
            continue
        name = f"{BITS_INPUT}{key}.{shape[0]}x{shape[1]}"
        graph.input.append(helper.make_tensor_value_info(name, TensorProto.INT64, shape))
        node.input[0] = name
        cut += 1
    if cut:
        _drop_unused(graph)
    return cut


def _uniform_key(bits: str, producer: Mapping[str, Any], consts: Mapping[str, np.ndarray]) -> int | None:
    """The first ``noise_seed`` key a uniform's integers ``bits`` are hashed from (its two keys must be
    2k and 2k + 1, the columns' and the rows'), or None: ``bits`` is not made from the seed alone."""
    keys: set[int] = set()
    todo, seen = [bits], set()
    while todo:
        name = todo.pop()
        if name in seen or name in consts or not name:
            continue
        seen.add(name)
        node = producer.get(name)
        if node is None:
            return None  # a graph input other than the seed's keys
        if node.op_type == "Slice" and node.input[0] == NOISE_SEED_INPUT:
            start = consts.get(node.input[1])
            if start is None or start.size != 1:
                return None
            keys.add(int(start.reshape(())))
            continue
        if node.op_type not in ("Add", "Mul", "Mod", "Unsqueeze", "Range", "Cast"):
            return None
        todo.extend(node.input)
    first = min(keys, default=-1)
    return first if keys == {first, first + 1} and first % 2 == 0 else None


def _drop_unused(graph: Any) -> None:
    """Remove the nodes whose outputs nothing reads (the cut uniforms' hashing)."""
    wanted = {o.name for o in graph.output}
    kept = []
    for node in reversed(graph.node):
        if any(name in wanted for name in node.output):
            kept.append(node)
            wanted.update(node.input)
    del graph.node[:]
    graph.node.extend(reversed(kept))


def noise_bits_feeds(inputs: Iterable[str], feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The ``edgetts_noise_bits`` feeds among ``inputs`` (a folded front's), from ``feeds``'s ``noise_seed``."""
    keys = feeds.get(NOISE_SEED_INPUT)
    out = {}
    for name in inputs:
        match = _BITS_NAME.match(name)
        if match is None:
            continue
        if keys is None:
            raise ValueError(f"the folded front needs {NOISE_SEED_INPUT} for {name}")
        key, rows, cols = (int(g) for g in match.groups())
        out[name] = uniform_bits(np.asarray(keys).reshape(-1), key, rows, cols)
    return out
