"""A block-wise KV cache: one preallocated pool, contiguous block runs, a shared prefix.

Memory is bounded and known at load time: :class:`BlockPool` allocates every
block of every layer once and writes to each page (so the pool is resident and
can be ``mlock``-ed; :meth:`BlockPool.arrays` and :attr:`BlockPool.nbytes`).
Nothing is allocated per step.

Layout (per layer, one slab for keys and one for values)::

    keys[layer]   [num_blocks, kv_heads, head_dim, block_size]   # K stored transposed
    values[layer] [num_blocks, kv_heads, block_size, head_dim]

The block index is the outermost axis, so a run of consecutive blocks
``keys[layer][b0:b1]`` is one contiguous array: the host hands it to
onnxruntime as a zero-copy view and the model computes attention over the
blocks in place (docs/ar-voices.md).  Keys are stored transposed so the model's
``Q @ K`` needs no transpose of the past.

Why contiguous runs rather than a scattered block table: the LM is an ONNX graph,
and an arbitrary block table would need a gather of the past every step (an
O(T) copy per layer per step, ~48 MB per step at 2k tokens for CosyVoice2).
Each sequence therefore owns a run of consecutive blocks and grows by whole
blocks: in place when the next block is free (always, with one announcement at
a time), otherwise by moving its run once.  The shared prefix is a separate run
the model reads as a second segment, so it is never copied and never written.

Accounting: ``bytes_in_use == blocks_in_use * block_bytes``; a block is in use
while its reference count is above zero.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Self

import numpy as np

from edgetts.errors import SynthesisError


class KvCapacityError(SynthesisError):
    """A sequence would need more KV cache than the voice's hard limit or its free blocks."""


@dataclass(frozen=True)
class KvLayout:
    """Shape of one model's KV cache."""

    num_layers: int
    num_kv_heads: int
    head_dim: int
    block_size: int = 128
    """Tokens per block."""

    @property
    def block_bytes(self) -> int:
        """Bytes of one block over all layers, keys and values (float32)."""
        return 2 * self.num_layers * self.num_kv_heads * self.head_dim * self.block_size * 4

    @property
    def token_bytes(self) -> int:
        """Bytes of KV per token over all layers, keys and values (float32)."""
        return self.block_bytes // self.block_size

    def blocks_for(self, tokens: int) -> int:
        """Whole blocks needed to hold ``tokens``."""
        return -(-tokens // self.block_size)


class BlockPool:
    """Every KV block a voice will ever use, allocated and touched once."""

    def __init__(self, layout: KvLayout, num_blocks: int) -> None:
        if num_blocks < 1:
            raise ValueError("num_blocks must be >= 1")
        self.layout = layout
        self.num_blocks = num_blocks
        lo = layout
        # np.empty + fill writes every page now (np.zeros would only map lazily-zeroed pages).
        self.keys = np.empty(
            (lo.num_layers, num_blocks, lo.num_kv_heads, lo.head_dim, lo.block_size),
            dtype=np.float32,
        )
        self.values = np.empty(
            (lo.num_layers, num_blocks, lo.num_kv_heads, lo.block_size, lo.head_dim),
            dtype=np.float32,
        )
        self.keys.fill(0.0)
        self.values.fill(0.0)
        # A zero block outside the pool: what the model reads for an empty segment.
        self.null_key = np.zeros((1, lo.num_kv_heads, lo.head_dim, lo.block_size), dtype=np.float32)
        self.null_value = np.zeros((1, lo.num_kv_heads, lo.block_size, lo.head_dim), dtype=np.float32)
        self._refs = np.zeros(num_blocks, dtype=np.int32)

    # -- accounting -----------------------------------------------------------------
    @property
    def nbytes(self) -> int:
        """Bytes of the whole pool (what a daemon would mlock)."""
        return int(self.keys.nbytes + self.values.nbytes)

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """The pool's two slabs (keys, values), e.g. for ``mlock``."""
        return self.keys, self.values

    @property
    def blocks_in_use(self) -> int:
        return int(np.count_nonzero(self._refs))

    @property
    def blocks_free(self) -> int:
        return self.num_blocks - self.blocks_in_use

    @property
    def bytes_in_use(self) -> int:
        """KV memory held by live blocks: blocks in use x block bytes."""
        return self.blocks_in_use * self.layout.block_bytes

    def refcount(self, block: int) -> int:
        return int(self._refs[block])

    # -- allocation -----------------------------------------------------------------
    def _find_run(self, n: int, avoid: range | None = None) -> int | None:
        free = self._refs == 0
        if avoid is not None:
            free[avoid.start : avoid.stop] = False
        run = 0
        for b in range(self.num_blocks):
            run = run + 1 if free[b] else 0
            if run == n:
                return b - n + 1
        return None

    def allocate_run(self, n: int) -> int:
        """Reserve ``n`` consecutive free blocks (refcount 1); returns the first block index."""
        start = self._find_run(n)
        if start is None:
            raise KvCapacityError(
                f"KV cache full: {n} consecutive blocks needed, {self.blocks_free} of "
                f"{self.num_blocks} free (block size {self.layout.block_size} tokens)"
            )
        self._refs[start : start + n] += 1
        return start

    def retain(self, blocks: range) -> None:
        if np.any(self._refs[blocks.start : blocks.stop] <= 0):
            raise ValueError("retain of a free block")
        self._refs[blocks.start : blocks.stop] += 1

    def release(self, blocks: range) -> None:
        if np.any(self._refs[blocks.start : blocks.stop] <= 0):
            raise ValueError("release of a free block")
        self._refs[blocks.start : blocks.stop] -= 1

    def new_sequence(self, *, prefix: SharedPrefix | None = None, max_tokens: int | None = None) -> KvSequence:
        """A new sequence that reads ``prefix`` (shared, read-only) before its own tokens."""
        return KvSequence(self, prefix=prefix, max_tokens=max_tokens)


@dataclass(frozen=True)
class SharedPrefix:
    """A read-only run of blocks holding the KV of tokens every sequence starts with."""

    pool: BlockPool
    blocks: range
    length: int
    """Tokens (positions 0 .. length-1)."""

    def release(self) -> None:
        """Drop the owner's reference (the blocks are freed once no sequence reads them)."""
        self.pool.release(self.blocks)


class KvSequence:
    """One sequence's own blocks: a contiguous run that grows by whole blocks."""

    def __init__(self, pool: BlockPool, *, prefix: SharedPrefix | None = None, max_tokens: int | None = None) -> None:
        if prefix is not None and prefix.pool is not pool:
            raise ValueError("prefix belongs to another pool")
        self.pool = pool
        self.prefix = prefix
        self.max_tokens = max_tokens
        """Hard limit of this sequence's own tokens (None: only the pool's free blocks)."""
        self.length = 0
        self._start = 0
        self._nblocks = 0
        self._closed = False
        if prefix is not None:
            pool.retain(prefix.blocks)

    # -- views the model reads --------------------------------------------------------
    @property
    def prefix_length(self) -> int:
        return 0 if self.prefix is None else self.prefix.length

    @property
    def next_position(self) -> int:
        """Absolute position (RoPE) of the next token: prefix + own tokens."""
        return self.prefix_length + self.length

    @property
    def blocks(self) -> range:
        return range(self._start, self._start + self._nblocks)

    def prefix_views(self, layer: int) -> tuple[np.ndarray, np.ndarray]:
        p = self.pool
        if self.prefix is None or self.prefix.length == 0:
            return p.null_key, p.null_value
        b = self.prefix.blocks
        return p.keys[layer, b.start : b.stop], p.values[layer, b.start : b.stop]

    def past_views(self, layer: int) -> tuple[np.ndarray, np.ndarray]:
        p = self.pool
        used = self.pool.layout.blocks_for(self.length)
        if used == 0:
            return p.null_key, p.null_value
        s = self._start
        return p.keys[layer, s : s + used], p.values[layer, s : s + used]

    # -- writing ------------------------------------------------------------------------
    def reserve(self, new_tokens: int) -> None:
        """Make room for ``new_tokens`` more, by whole blocks; raises KvCapacityError."""
        self._check_open()
        need_tokens = self.length + new_tokens
        if self.max_tokens is not None and need_tokens > self.max_tokens:
            raise KvCapacityError(f"sequence needs {need_tokens} KV tokens, the voice's limit is {self.max_tokens}")
        need = self.pool.layout.blocks_for(need_tokens)
        if need <= self._nblocks:
            return
        pool = self.pool
        if self._nblocks == 0:
            self._start = pool.allocate_run(need)
            self._nblocks = need
            return
        end = self._start + self._nblocks
        extra = need - self._nblocks
        if end + extra <= pool.num_blocks and not np.any(pool._refs[end : end + extra]):
            pool._refs[end : end + extra] += 1  # grow in place
            self._nblocks = need
            return
        # Move the run once (O(own tokens), rare: only when another sequence sits right after it).
        start = pool._find_run(need, avoid=self.blocks)
        if start is None:
            raise KvCapacityError(
                f"KV cache full: sequence needs {need} blocks, {pool.blocks_free} of {pool.num_blocks} free"
            )
        old = self.blocks
        pool.keys[:, start : start + self._nblocks] = pool.keys[:, old.start : old.stop]
        pool.values[:, start : start + self._nblocks] = pool.values[:, old.start : old.stop]
        pool._refs[start : start + need] += 1
        pool.release(old)
        self._start, self._nblocks = start, need

    def append(self, key_deltas: list[np.ndarray], value_deltas: list[np.ndarray]) -> None:
        """Write the new tokens' keys/values (per layer ``[kv_heads, N, head_dim]``) in place."""
        n = key_deltas[0].shape[1]
        self.reserve(n)
        pool, bs = self.pool, self.pool.layout.block_size
        pos, done = self.length, 0
        while done < n:
            blk, off = self._start + pos // bs, pos % bs
            if pool._refs[blk] != 1:  # never write a block someone else reads
                raise RuntimeError(f"block {blk} is shared (refcount {pool._refs[blk]})")
            m = min(bs - off, n - done)
            for layer, (kd, vd) in enumerate(zip(key_deltas, value_deltas)):
                pool.keys[layer, blk, :, :, off : off + m] = kd[:, done : done + m, :].transpose(0, 2, 1)
                pool.values[layer, blk, :, off : off + m, :] = vd[:, done : done + m, :]
            pos += m
            done += m
        self.length += n

    def freeze(self) -> SharedPrefix:
        """Turn this sequence into a shared prefix (its blocks become read-only)."""
        self._check_open()
        if self.prefix is not None:
            raise ValueError("a sequence that reads a prefix cannot become one")
        used = self.pool.layout.blocks_for(self.length)
        if used < self._nblocks:  # give back reserved but unused blocks
            self.pool.release(range(self._start + used, self._start + self._nblocks))
        self._closed = True
        return SharedPrefix(self.pool, range(self._start, self._start + used), self.length)

    def close(self) -> None:
        """Free this sequence's blocks and drop its reference to the prefix."""
        if self._closed:
            return
        self._closed = True
        if self._nblocks:
            self.pool.release(self.blocks)
        if self.prefix is not None:
            self.pool.release(self.prefix.blocks)
        self._nblocks = 0

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("sequence is closed")

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
