"""Block KV cache: cached decoding equals a full forward pass; pool accounting."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest

from edgetts.errors import SynthesisError
from edgetts.voice.ar.kv_cache import BlockPool, KvCapacityError, KvLayout
from edgetts.voice.ar.lm import BlockLm

from tools.export_qwen2_onnx import build_block_lm, build_naive_lm, random_qwen2_weights
from tools.make_ar_test_voice import TINY_SHAPE

BS = 4  # small blocks so short sequences cross many block boundaries


@pytest.fixture(scope="module")
def models():
    w = random_qwen2_weights(TINY_SHAPE, seed=5, scale=0.2)
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    block = ort.InferenceSession(
        build_block_lm(TINY_SHAPE, w).SerializeToString(), so, providers=["CPUExecutionProvider"]
    )
    naive = ort.InferenceSession(
        build_naive_lm(TINY_SHAPE, w).SerializeToString(), so, providers=["CPUExecutionProvider"]
    )
    layout = KvLayout(TINY_SHAPE.num_layers, TINY_SHAPE.num_kv_heads, TINY_SHAPE.head_dim, BS)
    return BlockLm(block, layout, TINY_SHAPE.vocab_size, Path("lm.onnx")), naive, layout


def naive_full(naive, ids: np.ndarray) -> np.ndarray:
    """Reference: the HF-layout graph over the whole sequence, no cache at all."""
    s = TINY_SHAPE
    feeds = {"input_ids": ids[None].astype(np.int64), "position_ids": np.arange(len(ids))[None]}
    for i in range(s.num_layers):
        for t in ("key", "value"):
            feeds[f"past_key_values.{i}.{t}"] = np.zeros((1, s.num_kv_heads, 0, s.head_dim), np.float32)
    return naive.run(["logits"], feeds)[0][0]


def test_full_forward_graphs_agree(models):
    lm, naive, layout = models
    ids = np.random.default_rng(0).integers(0, TINY_SHAPE.vocab_size, 23)
    pool = BlockPool(layout, 16)
    with pool.new_sequence() as seq:
        got = lm.forward(seq, ids)
    np.testing.assert_allclose(got, naive_full(naive, ids), atol=1e-4, rtol=0)


@pytest.mark.parametrize("prefix_len", [0, 6, 8, 11])
@pytest.mark.parametrize("chunks", [[1] * 30, [5, 1, 3, 7, 1, 1, 9, 2, 1]])
def test_cached_decoding_equals_full_forward(models, prefix_len, chunks):
    lm, naive, layout = models
    total = prefix_len + sum(chunks)
    ids = np.random.default_rng(prefix_len + len(chunks)).integers(0, TINY_SHAPE.vocab_size, total)
    ref = naive_full(naive, ids)
    pool = BlockPool(layout, 32)
    prefix = None
    if prefix_len:
        p = pool.new_sequence()
        lm.forward(p, ids[:prefix_len])
        prefix = p.freeze()
    with pool.new_sequence(prefix=prefix) as seq:
        pos = prefix_len
        for n in chunks:
            logits = lm.forward(seq, ids[pos : pos + n])
            np.testing.assert_allclose(logits, ref[pos : pos + n], atol=1e-4, rtol=0)
            pos += n
        assert seq.length == sum(chunks)
        assert len(seq.blocks) >= 30 // BS  # crossed several block boundaries


@pytest.mark.parametrize("with_prefix", [False, True])
def test_greedy_tokens_identical_to_full_forward(models, with_prefix):
    lm, naive, layout = models
    pool = BlockPool(layout, 32)
    start = list(np.random.default_rng(9).integers(0, TINY_SHAPE.vocab_size, 10))
    prefix = None
    if with_prefix:
        p = pool.new_sequence()
        lm.forward(p, np.asarray(start[:7]))
        prefix = p.freeze()
    seq_ids = list(start)
    with pool.new_sequence(prefix=prefix) as seq:
        logits = lm.forward(seq, np.asarray(start[7:] if with_prefix else start))[-1]
        for _ in range(25):  # 35 tokens = 9 blocks of 4
            tok = int(np.argmax(logits))
            seq_ids.append(tok)
            logits = lm.forward(seq, np.asarray([tok]))[-1]
    ref = naive_full(naive, np.asarray(seq_ids))
    assert [int(t) for t in np.argmax(ref[9:-1], axis=-1)] == seq_ids[10:]


def test_prefix_blocks_are_shared_never_written_and_freed(models):
    lm, _, layout = models
    pool = BlockPool(layout, 12)
    p = pool.new_sequence()
    lm.forward(p, np.arange(10))  # 10 tokens -> 3 blocks
    prefix = p.freeze()
    assert prefix.blocks == range(3) and prefix.length == 10
    assert pool.blocks_in_use == 3 and [pool.refcount(b) for b in prefix.blocks] == [1, 1, 1]
    snapshot = pool.keys[:, 0:3].copy(), pool.values[:, 0:3].copy()
    a = pool.new_sequence(prefix=prefix)
    assert [pool.refcount(b) for b in prefix.blocks] == [2, 2, 2]
    lm.forward(a, np.arange(5))  # own tokens start in a fresh block after the prefix
    assert set(a.blocks).isdisjoint(prefix.blocks)
    assert pool.blocks_in_use == 3 + 2
    b = pool.new_sequence(prefix=prefix)
    lm.forward(b, np.arange(3))
    assert [pool.refcount(x) for x in prefix.blocks] == [3, 3, 3]
    np.testing.assert_array_equal(pool.keys[:, 0:3], snapshot[0])
    np.testing.assert_array_equal(pool.values[:, 0:3], snapshot[1])
    a.close()
    b.close()
    assert pool.blocks_in_use == 3 and [pool.refcount(x) for x in prefix.blocks] == [1, 1, 1]
    prefix.release()
    assert pool.blocks_in_use == 0 and pool.bytes_in_use == 0


def test_pool_accounting_and_growth_by_whole_blocks():
    layout = KvLayout(num_layers=3, num_kv_heads=2, head_dim=8, block_size=4)
    pool = BlockPool(layout, 10)
    assert layout.block_bytes == 2 * 3 * 2 * 8 * 4 * 4
    assert pool.nbytes == 10 * layout.block_bytes
    keys, values = pool.arrays()
    assert keys.shape == (3, 10, 2, 8, 4) and values.shape == (3, 10, 2, 4, 8)
    seq = pool.new_sequence()
    for n, blocks in [(1, 1), (3, 1), (1, 2), (7, 3), (1, 4)]:
        kd = [np.full((2, n, 8), seq.length + 1, np.float32) for _ in range(3)]
        seq.append(kd, kd)
        assert pool.blocks_in_use == blocks, (n, blocks)
        assert pool.bytes_in_use == blocks * layout.block_bytes
        assert pool.blocks_free == 10 - blocks
    assert seq.length == 13
    seq.close()
    assert pool.blocks_in_use == 0


def test_sequence_limit_raises_capacity_error():
    pool = BlockPool(KvLayout(1, 1, 4, 4), 10)
    seq = pool.new_sequence(max_tokens=8)
    d = [np.zeros((1, 8, 4), np.float32)]
    seq.append(d, d)
    with pytest.raises(KvCapacityError, match="limit is 8"):
        seq.reserve(1)
    assert issubclass(KvCapacityError, SynthesisError)


def test_pool_exhaustion_raises_capacity_error_and_move_keeps_data():
    pool = BlockPool(KvLayout(1, 1, 2, 2), 5)
    a, b = pool.new_sequence(), pool.new_sequence()
    one = [np.ones((1, 2, 2), np.float32)]
    a.append(one, one)  # block 0
    b.append([2 * one[0]], [2 * one[0]])  # block 1: a cannot grow in place
    a.append([3 * one[0]], [3 * one[0]])  # a moves to blocks 2-3
    assert a.blocks == range(2, 4) and pool.blocks_in_use == 3
    k, v = a.past_views(0)
    assert k.shape == (2, 1, 2, 2) and np.all(k[0] == 1) and np.all(v[1] == 3)
    with pytest.raises(KvCapacityError, match="KV cache full"):
        b.append([np.zeros((1, 6, 2), np.float32)], [np.zeros((1, 6, 2), np.float32)])
    a.close()
    b.close()
    assert pool.blocks_in_use == 0


def test_views_are_zero_copy_slices_of_the_pool(models):
    _, _, layout = models
    pool = BlockPool(layout, 8)
    seq = pool.new_sequence()
    d = [np.ones((layout.num_kv_heads, 6, layout.head_dim), np.float32)] * layout.num_layers
    seq.append(d, d)
    k, _ = seq.past_views(1)
    assert k.flags.c_contiguous and np.shares_memory(k, pool.keys)
    assert k.shape == (2, layout.num_kv_heads, layout.head_dim, BS)
