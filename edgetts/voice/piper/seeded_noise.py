"""Seeded noise: a VITS graph's random draws made a function of a ``noise_seed`` input (issue 19).

A Piper voice draws normal noise twice per sentence (the duration predictor's and the prior's
``z_p``) with onnxruntime's RandomNormalLike, whose ``seed`` attribute seeds the session's
generator once: the same sentence sounds different on every run and on every board.  For a
synchronized announcement every board must speak the same samples, so :func:`add_seeded_noise`
replaces each random node with a counter-based generator: the value at each position is a hash
of (the seed, the node's number, the position), computed with exact int64 ops only, so every
machine computes the same integers.

The hash works modulo the prime P = 2147483579 (< 2^31, P = 2 mod 3, so cubing permutes the
residues): F is three rounds of ``x -> (x + c)^3 mod P`` (MiMC-like; every product < 2^62,
nothing overflows int64).  The seed's key is F of its three 21-bit parts in turn; each node and
use gets its own key from it.  Those keys depend on the seed alone, so :func:`seed_feed` computes
them once per run, in numpy with the same int64 arithmetic (:func:`noise_keys`), and the graph
takes them as its input ``noise_seed``: in the graph they were 220 scalar operators of the joe
voice's front (now 8 Slices), each a fixed cost of tens of microseconds on a board's core, for about
15 us of numpy here (issue 40).  Position (row, t), where t is the index along the last axis and
the row the index of everything before it, is ``(F(k + t) + F(k' + row))^3 mod P``: the draw
at a position does not depend on the tensor's length (a sentence's first frames get the same
noise whatever follows), rows are not shifted copies of each other, and the per-element work
is one cube (F runs over the rows and the columns only).  Uniforms are ``(2h + 1) / 2P``, in
(0, 1) and never 0; normals are Box-Muller with both values of each pair (positions 2j and
2j + 1), in float64 (IEEE division, log, sqrt, cos and sin, rounded once to the node's dtype).
Measured on 576,000 draws (tests/voice/test_seeded_noise.py): mean, standard deviation, KS,
tails, lag-1, neighbour-row and other-seed correlations as for true randomness.
"""

from __future__ import annotations

import math
import secrets
from dataclasses import replace
from typing import Any

import numpy as np

from edgetts.engine import SynthesisConfig

NOISE_SEED_INPUT = "noise_seed"
"""The graph input that drives the noise: int64, shape [NOISE_KEYS], the run's keys (:func:`seed_feed`)."""

VERSION = "2"
"""Bump when the generator or its graph input changes (cached graphs rebuild).  2: the keys are
computed outside the graph, same samples as 1."""

SEED_BITS = 63

_P = 2147483579
_ROUNDS = (0x2545F491, 0x1B873593, 0x68E31DA4, 0x3C6EF372, 0x5F356495, 0x0B4B82E9)
_NODE_STRIDE = 1000003
_KEYS_PER_NODE = 4  # two uniform draws (a normal's Box-Muller pair), each a column key and a row key
MAX_NODES = 8
"""Random nodes a graph may have: the feed holds keys for so many."""
NOISE_KEYS = _KEYS_PER_NODE * MAX_NODES
"""Keys in the ``noise_seed`` feed: key ``4 n + j`` is use ``j`` of random node ``n``."""
_REPLACED = ("RandomNormalLike", "RandomNormal", "RandomUniformLike", "RandomUniform")
_REFUSED = ("Multinomial", "Bernoulli")


class SeededNoiseError(Exception):
    """The graph draws random numbers in a way the transform cannot seed."""


# -- seeds ---------------------------------------------------------------------------
def seed_for(announcement_id: str) -> int:
    """The noise seed of an announcement: the first 8 bytes of SHA-256 of its id (UTF-8),
    big-endian, shifted right once (a 63-bit int).  Stable across machines, Python versions
    and processes, so every board that speaks one announcement draws the same noise."""
    import hashlib  # only here: a synchronized announcement is the only user

    digest = hashlib.sha256(announcement_id.encode("utf-8", "surrogatepass")).digest()
    return int.from_bytes(digest[:8], "big") >> 1


def _splitmix64(x: int) -> int:
    x = (x + 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
    return x ^ (x >> 31)


def sentence_seed(seed: int, index: int) -> int:
    """The seed of sentence ``index`` of a text seeded with ``seed``: a sentence's noise depends
    on the text's seed and its own index only, not on what the sentences before it drew."""
    return _splitmix64(_splitmix64(seed & 0xFFFFFFFFFFFFFFFF) ^ index) >> 1


def at_sentence(config: SynthesisConfig, index: int) -> SynthesisConfig:
    """``config`` for sentence ``index`` of its text: its seed made :func:`sentence_seed` (None stays
    None: every run draws a fresh one)."""
    return config if config.seed is None else replace(config, seed=sentence_seed(config.seed, index))


def fresh_seed() -> int:
    """A random seed (an unseeded run: every run sounds a little different, as before)."""
    return secrets.randbits(SEED_BITS)


def seed_feed(seed: int | None) -> np.ndarray:
    """The ``noise_seed`` feed of one run: the keys (:func:`noise_keys`) of ``seed`` (taken modulo
    2^63) or of a fresh one; int64, shape [NOISE_KEYS]."""
    return noise_keys(fresh_seed() if seed is None else seed % (1 << SEED_BITS))


def _hash(x: Any, offset: int = 0) -> Any:
    """F: three rounds of (x + c)^3 mod P, on an int or an int64 array (x in [0, 2^32): every
    product stays below 2^62, so int64 is exact and equals Python's ints)."""
    for i in range(3):
        x = (x + _ROUNDS[(i + offset) % len(_ROUNDS)]) % _P
        x = (x * x % _P) * x % _P
    return x


def noise_keys(seed: int, count: int = NOISE_KEYS) -> np.ndarray:
    """The first ``count`` keys of ``seed`` (0 <= seed < 2^63), int64 in [0, P): key ``s`` is F, its
    round constants taken from the third on, of (base + 1000003 (s + 1)) mod P, where base is
    F(F(F(low) + mid) + high) of the seed's 21-bit parts.  The graph computed them itself up to
    :data:`VERSION` 1 (tests/voice/test_seeded_noise.py holds them to that)."""
    if not 0 <= seed < 1 << SEED_BITS:
        raise ValueError(f"noise seed {seed} is not in [0, 2^63)")
    low, mid, high = seed & 0x1FFFFF, (seed >> 21) & 0x1FFFFF, seed >> 42
    base = _hash(_hash(_hash(low) + mid) + high)  # each sum < 2^32
    streams = np.arange(1, count + 1, dtype=np.int64) * _NODE_STRIDE
    return np.asarray(_hash((base + streams) % _P, 2), dtype=np.int64)


def uniform_bits(keys: np.ndarray, key: int, rows: int, cols: int) -> np.ndarray:
    """The integers (rows, cols) a uniform draw hashed from keys ``key`` (its columns') and ``key`` + 1
    (its rows') computes before they become floats: what :func:`_uniform`'s graph computes, in numpy's
    int64 arithmetic (every product below 2^62: equal bit for bit).  A folded front takes them as
    inputs (:mod:`.front_noise`)."""
    col = _hash((int(keys[key]) + np.arange(cols, dtype=np.int64)) % _P)
    row = _hash((int(keys[key + 1]) + np.arange(rows, dtype=np.int64)) % _P, 1)
    x = (row[:, np.newaxis] + col[np.newaxis, :]) % _P
    return np.asarray((x * x % _P) * x % _P, dtype=np.int64)


# -- the transform -------------------------------------------------------------------
class _Builder:
    """New nodes and shared constants, named under one prefix."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.nodes: list[Any] = []
        self.consts: dict[tuple[str, object], Any] = {}
        self._count = 0

    def const(self, value: float | int | list[int], dtype: str = "int64") -> str:
        from onnx import numpy_helper

        key = (dtype, tuple(value) if isinstance(value, list) else value)
        if key not in self.consts:
            name = f"{self.prefix}/c{len(self.consts)}"
            self.consts[key] = numpy_helper.from_array(np.array(value, dtype=dtype), name)
        return str(self.consts[key].name)

    def op(self, op_type: str, *inputs: str, **attrs: Any) -> str:
        from onnx import helper

        self._count += 1
        out = f"{self.prefix}/{op_type}_{self._count}"
        self.nodes.append(helper.make_node(op_type, list(inputs), [out], name=out, **attrs))
        return out

    def modp(self, x: str) -> str:
        return self.op("Mod", x, self.const(_P))

    def hash(self, x: str, offset: int = 0) -> str:
        """F: three rounds of (x + c)^3 mod P (x in [0, 2^32): every product stays below 2^62)."""
        for i in range(3):
            x = self.modp(self.op("Add", x, self.const(_ROUNDS[(i + offset) % len(_ROUNDS)])))
            x = self.modp(self.op("Mul", self.modp(self.op("Mul", x, x)), x))
        return x

    def key(self, stream: int) -> str:
        """Key ``stream`` (node and use) of the run, in [0, P), shape [1]: from the feed (:func:`noise_keys`)."""
        return self.op("Slice", NOISE_SEED_INPUT, self.const([stream]), self.const([stream + 1]))


def _uniform(b: _Builder, stream: int, rows: str, cols: str) -> str:
    """float64 uniforms in (0, 1), shape (rows, cols), of one stream."""
    key_t, key_r = b.key(2 * stream), b.key(2 * stream + 1)
    col = b.hash(b.modp(b.op("Add", key_t, b.op("Range", b.const(0), cols, b.const(1)))))
    row = b.hash(b.modp(b.op("Add", key_r, b.op("Range", b.const(0), rows, b.const(1)))), 1)
    # Per element one cube of (column key + row key): the keys are hashed already, and the cube
    # (a permutation mod P) breaks their sum's additive structure.  Mod is what costs here (a
    # 64-bit division per element and op): three per element, not the ten of a full hash.
    x = b.modp(b.op("Add", b.op("Unsqueeze", row, b.const([1])), col))
    h = b.modp(b.op("Mul", b.modp(b.op("Mul", x, x)), x))
    twice = b.op("Add", b.op("Mul", b.op("Cast", h, to=11), b.const(2.0, "float64")), b.const(1.0, "float64"))
    return b.op("Div", twice, b.const(2.0 * _P, "float64"))


def _normal(b: _Builder, number: int, rows: str, cols: str) -> str:
    """float64 standard normals, shape (rows, cols): Box-Muller, both of each pair's values used
    (positions 2j and 2j + 1 of a row share pair j: still independent of the tensor's length)."""
    half = b.op("Div", b.op("Add", cols, b.const(1)), b.const(2))
    radius = b.op("Sqrt", b.op("Mul", b.op("Log", _uniform(b, 2 * number, rows, half)), b.const(-2.0, "float64")))
    angle = b.op("Mul", _uniform(b, 2 * number + 1, rows, half), b.const(2.0 * math.pi, "float64"))
    pair = [b.op("Unsqueeze", b.op("Mul", radius, b.op(f, angle)), b.const([2])) for f in ("Cos", "Sin")]
    flat = b.op(
        "Reshape",
        b.op("Concat", *pair, axis=2),
        b.op("Concat", b.op("Unsqueeze", rows, b.const([0])), b.const([-1]), axis=0),
    )
    return b.op("Slice", flat, b.const([0]), b.op("Unsqueeze", cols, b.const([0])), b.const([1]))


def _attrs(node: Any) -> dict[str, Any]:
    from onnx import helper

    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def _replacement(b: _Builder, node: Any, number: int) -> None:
    """Nodes computing ``node``'s output from ``noise_seed``, appended to ``b.nodes``."""
    attrs = _attrs(node)
    like = node.op_type.endswith("Like")
    if like:
        shape = b.op("Shape", node.input[0])
    else:
        shape = b.const([int(d) for d in attrs["shape"]])
    # (rows, cols): the last axis and everything before it (a scalar is one row of one).
    full = b.op("Concat", b.const([1]), shape, axis=0)
    cols = b.op("Reshape", b.op("Slice", full, b.const([-1]), b.const([1 << 62])), b.const([]))
    size = b.op("ReduceProd", full, keepdims=0)
    rows = b.op("Div", size, b.op("Max", cols, b.const(1)))
    if node.op_type.startswith("RandomNormal"):
        value = _normal(b, number, rows, cols)
        scale, offset = float(attrs.get("scale", 1.0)), float(attrs.get("mean", 0.0))
    else:
        low, high = float(attrs.get("low", 0.0)), float(attrs.get("high", 1.0))
        value, scale, offset = _uniform(b, 2 * number, rows, cols), high - low, low
    if scale != 1.0:
        value = b.op("Mul", value, b.const(scale, "float64"))
    if offset != 0.0:
        value = b.op("Add", value, b.const(offset, "float64"))
    if "dtype" in attrs or not like:
        value = b.op("Cast", value, to=int(attrs.get("dtype", 1)))
    else:
        value = b.op("CastLike", value, node.input[0])
    # The last op is a Reshape, as opaque to graph_split's walk as the random node was.
    b.nodes.append(_reshape(value, shape, node.output[0]))


def _reshape(value: str, shape: str, out: str) -> Any:
    from onnx import helper

    return helper.make_node("Reshape", [value, shape], [out], name=f"{out}/seeded")


def _check_subgraphs(graph: Any) -> None:
    for node in graph.node:
        for attr in node.attribute:
            for sub in [attr.g] if attr.HasField("g") else list(attr.graphs):
                if any(n.op_type in _REPLACED + _REFUSED for n in sub.node):
                    raise SeededNoiseError(f"{node.name}: random numbers inside a {node.op_type} subgraph")
                _check_subgraphs(sub)


def add_seeded_noise(model: Any) -> int:
    """Replace, in place, every random node of ``model`` (an onnx ModelProto) with the seeded
    generator driven by a new graph input ``noise_seed`` (fed :func:`seed_feed`); the number
    replaced (0: the graph is unchanged and has no such input).  Raises :class:`SeededNoiseError`
    for random ops it does not handle (Multinomial, Bernoulli, random ops inside subgraphs) and for
    more than MAX_NODES random nodes."""
    from onnx import TensorProto, helper

    graph = model.graph
    refused = [n.name or n.op_type for n in graph.node if n.op_type in _REFUSED]
    if refused:
        raise SeededNoiseError(f"cannot seed {', '.join(refused)}: only {', '.join(_REPLACED)} are handled")
    _check_subgraphs(graph)
    random = sum(n.op_type in _REPLACED for n in graph.node)
    if not random:
        return 0
    if random > MAX_NODES:
        raise SeededNoiseError(f"{random} random nodes: the seeded generator has keys for {MAX_NODES}")
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)
    if opset < 15:
        raise SeededNoiseError(f"opset {opset}: the seeded generator needs opset 15 or later (CastLike)")
    if any(i.name == NOISE_SEED_INPUT for i in graph.input):
        raise SeededNoiseError(f"the graph already has an input {NOISE_SEED_INPUT!r}")
    b = _Builder("edgetts_noise")
    nodes: list[Any] = []
    number = 0
    for node in graph.node:
        if node.op_type not in _REPLACED:
            nodes.append(node)
            continue
        b.nodes = []
        _replacement(b, node, number)
        nodes.extend(b.nodes)  # in the random node's place: the graph stays in topological order
        number += 1
    del graph.node[:]
    graph.node.extend(nodes)
    graph.initializer.extend(b.consts.values())
    graph.input.append(helper.make_tensor_value_info(NOISE_SEED_INPUT, TensorProto.INT64, [NOISE_KEYS]))
    return number
