"""A folded front held to the dynamic one before it is used (:mod:`.front_fold`, issue 40).

:func:`check_folded` runs both on :func:`fold_feeds` (the voice's check sentences at several noises and
seeds): the seeded noise must be identical, bit for bit, the durations equal and every other output
within :data:`.front_fold.TOLERANCE`.  A folded front takes the integers of the noise it no longer
hashes itself from numpy (:mod:`.front_noise`), as :class:`.front_fold.FrontSessions` gives them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from edgetts.voice.piper import front_fold
from edgetts.voice.piper.front_fold import FoldError, MakeSession
from edgetts.voice.piper.front_noise import noise_bits_feeds
from edgetts.voice.piper.seeded_noise import NOISE_SEED_INPUT, seed_feed


def noise_outputs(model: Any) -> list[str]:
    """The seeded noise tensors of ``model`` (an onnx ModelProto): values computed from ``noise_seed``
    alone (and shapes) that something else uses."""
    graph = model.graph
    depends: dict[str, frozenset[str]] = {i.name: frozenset([i.name]) for i in graph.input}
    for init in graph.initializer:
        depends[init.name] = frozenset()
    seed_only = frozenset([NOISE_SEED_INPUT])
    found: dict[str, None] = {}
    for node in graph.node:
        # A shape is not a value: the noise's shape comes from the sentence, its values from the seed.
        inputs = [] if node.op_type in ("Shape", "Size") else [n for n in node.input if n]
        these = frozenset().union(*(depends.get(n, frozenset()) for n in inputs))
        for name in inputs:
            if depends.get(name) == seed_only and these != seed_only:
                found[name] = None
        for name in node.output:
            depends[name] = these
    found.update((o.name, None) for o in graph.output if depends.get(o.name) == seed_only)
    return list(found)


def with_outputs(model: Any, names: Sequence[str]) -> bytes:
    """``model`` (a ModelProto, not changed) serialised with the tensors ``names`` as outputs too."""
    import onnx

    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    present = {o.name for o in probe.graph.output}
    probe.graph.output.extend(onnx.helper.make_empty_tensor_value_info(n) for n in names if n not in present)
    return bytes(probe.SerializeToString())


def fold_feeds(check: Sequence[Mapping[str, np.ndarray]], length: int) -> list[dict[str, np.ndarray]]:
    """Feeds of ``length`` ids from the voice's check sentences (``check``: graph_split's, noise 0):
    the voice's usual noise at two seeds, no noise, and noise large enough (3x noise_w at a tenth of the
    length scale, which keeps the frames few) to reach the spline's tails."""
    ids = np.concatenate([np.asarray(f["input"]).reshape(-1) for f in check])
    length_scale = float(np.asarray(check[0]["scales"]).reshape(-1)[1])
    variants = (
        (0.667, 1.0, 0.8, 1),
        (0.667, 1.0, 0.8, 2),
        (0.0, 1.0, 0.0, 3),
        (0.667, 0.1, 3.0, 4),
        (1.0, 0.1, 3.0, 5),
    )
    feeds = []
    for k, (noise, length_share, noise_w, seed) in enumerate(variants):
        window = np.resize(np.roll(ids, -(k * ids.size) // len(variants)), length).astype(np.int64)
        feed = dict(check[0])
        feed.update(
            input=window[np.newaxis, :],
            input_lengths=np.array([length], dtype=np.int64),
            scales=np.array([noise, length_scale * length_share, noise_w], dtype=np.float32),
        )
        feed[NOISE_SEED_INPUT] = seed_feed(seed)  # dropped by check_folded if not an input
        feeds.append(feed)
    return feeds


def check_folded(
    front: bytes, folded: bytes, feeds: Sequence[Mapping[str, np.ndarray]], make_session: MakeSession
) -> float:
    """The largest difference between ``folded``'s outputs and ``front``'s on ``feeds``; raises
    :class:`FoldError` when one is over :data:`.front_fold.TOLERANCE`, a shape differs or the noise is not identical."""
    import onnx

    dynamic_model = onnx.load_from_string(front)
    outputs = [o.name for o in dynamic_model.graph.output]
    noise = [n for n in noise_outputs(dynamic_model) if n not in outputs]
    dynamic = make_session(with_outputs(dynamic_model, noise))
    del dynamic_model
    folded_model = onnx.load_from_string(folded)
    missing = sorted(set(noise) - {o for n in folded_model.graph.node for o in n.output})
    if missing:
        raise FoldError(f"the folded front does not compute the noise {missing[0]}")
    probe = make_session(with_outputs(folded_model, noise))
    del folded_model
    inputs = {i.name for i in dynamic.get_inputs()}
    probe_inputs = [i.name for i in probe.get_inputs()]
    worst = 0.0
    for feed in feeds:
        given = {name: value for name, value in feed.items() if name in inputs}
        want = dynamic.run(noise + outputs, given)
        got = probe.run(noise + outputs, {**given, **noise_bits_feeds(probe_inputs, given)})
        for name, a, b in zip(noise + outputs, want, got):  # the noise first: it must be exact
            if a.shape != b.shape or a.dtype != b.dtype:
                raise FoldError(f"{name}: {b.dtype}{list(b.shape)} where the front gives {a.dtype}{list(a.shape)}")
            if name in noise:
                if not np.array_equal(a, b, equal_nan=True):
                    raise FoldError(f"the noise {name} differs from the front's")
                continue
            diff = float(np.max(np.abs(a.astype(np.float64) - b.astype(np.float64)), initial=0.0))
            tolerance = front_fold.TOLERANCE  # the fold's contract, read where it is stated
            if not diff <= tolerance:
                raise FoldError(f"{name} differs from the front's by {diff:.3g} (tolerance {tolerance:g})")
            worst = max(worst, diff)
    return worst
