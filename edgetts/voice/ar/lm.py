"""The LM session: one onnxruntime call per step against a :class:`KvSequence`."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import numpy as np

from edgetts.errors import SynthesisError, VoiceError
from edgetts.voice.ar.kv_cache import KvLayout, KvSequence
from edgetts.voice.onnx_session import RuntimeOptions, create_session

_LOGGER = logging.getLogger(__name__)


def make_session(path: Path, runtime: RuntimeOptions) -> Any:
    """A CPU session through the project's one session builder (edgetts.voice.onnx_session):
    threads, pinned cores (``cpu.inference_cores``) and locked weights (``memory.lock``)
    as for a Piper voice.

    No optimised-model cache: an LM is hundreds of MB and would be stored twice.
    Memory patterns are off, as for every model (``RuntimeOptions.memory_pattern``).
    """
    return create_session(Path(path), runtime)


class BlockLm:
    """An LM exported with the block-cache contract (tools/export_qwen2_onnx.py)."""

    def __init__(self, session: Any, layout: KvLayout, vocab_size: int, path: Path) -> None:
        self.session = session
        self.layout = layout
        self.vocab_size = vocab_size
        names_in = {i.name for i in session.get_inputs()}
        names_out = [o.name for o in session.get_outputs()]
        want_in = {"input_ids", "position_ids", "prefix_length", "past_length"}
        for i in range(layout.num_layers):
            want_in |= {f"prefix_key.{i}", f"prefix_value.{i}", f"past_key.{i}", f"past_value.{i}"}
        missing = sorted(want_in - names_in)
        if missing:
            raise VoiceError(
                f"{path}: not an edgetts-ar-1 LM for kv.num_layers={layout.num_layers}: missing input {missing[0]}"
            )
        want_out = ["logits"]
        for i in range(layout.num_layers):
            want_out += [f"key_delta.{i}", f"value_delta.{i}"]
        if names_out[: len(want_out)] != want_out:
            raise VoiceError(f"{path}: LM outputs must be {want_out[:3]}..., got {names_out[:3]}...")
        k0 = next(i for i in session.get_inputs() if i.name == "past_key.0").shape
        if k0[1] != layout.num_kv_heads or k0[2] != layout.head_dim:
            raise VoiceError(
                f"{path}: past_key.0 has kv_heads={k0[1]} head_dim={k0[2]}, manifest "
                f"kv says {layout.num_kv_heads}/{layout.head_dim}"
            )
        self._out_names = want_out

    @classmethod
    def load(cls, path: Path, layout: KvLayout, vocab_size: int, runtime: RuntimeOptions | None = None) -> BlockLm:
        return cls(make_session(path, runtime or RuntimeOptions()), layout, vocab_size, path)

    def forward(self, seq: KvSequence, token_ids: np.ndarray) -> np.ndarray:
        """Run ``token_ids`` (after everything ``seq`` holds); append their KV; return logits [N, V]."""
        ids = np.ascontiguousarray(token_ids, dtype=np.int64).reshape(-1)
        n = ids.shape[0]
        seq.reserve(n)  # fail before running the model, not after
        start = seq.next_position
        feeds: dict[str, np.ndarray] = {
            "input_ids": ids,
            "position_ids": np.arange(start, start + n, dtype=np.int64),
            "prefix_length": np.array(seq.prefix_length, dtype=np.int64),
            "past_length": np.array(seq.length, dtype=np.int64),
        }
        for i in range(self.layout.num_layers):
            feeds[f"prefix_key.{i}"], feeds[f"prefix_value.{i}"] = seq.prefix_views(i)
            feeds[f"past_key.{i}"], feeds[f"past_value.{i}"] = seq.past_views(i)
        try:
            out = self.session.run(self._out_names, feeds)
        except Exception as exc:
            raise SynthesisError(f"LM failed: {exc}".splitlines()[0]) from exc
        logits = out[0]
        if logits.shape != (n, self.vocab_size) or not np.all(np.isfinite(logits[-1])):
            raise SynthesisError(f"LM returned logits of shape {logits.shape} or non-finite values")
        seq.append(out[1::2], out[2::2])
        return logits

    def prefill(self, seq: KvSequence, token_ids: np.ndarray, chunk: int = 256) -> np.ndarray:
        """:meth:`forward` in chunks of at most ``chunk`` tokens (bounds activation memory)."""
        ids = np.asarray(token_ids, dtype=np.int64).reshape(-1)
        logits = None
        for s in range(0, ids.shape[0], chunk):
            logits = self.forward(seq, ids[s : s + chunk])
        if logits is None:
            raise SynthesisError("nothing to prefill")
        return logits
