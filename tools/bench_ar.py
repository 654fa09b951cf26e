#!/usr/bin/env python3
"""Benchmark the block KV cache against a naive HF-layout export on a CosyVoice2-shaped LM.

    python -m tools.bench_ar --json bench-ar.json [--threads 2] [--cache-dir DIR]

The model has CosyVoice2's attention shape (24 layers, 14 query heads, 2 KV heads,
head_dim 64, hidden 896) with random weights; the MLP (intermediate 1024 instead
of 4864) and the vocabulary (6564 = CosyVoice2's speech tokens + stop tokens) are
reduced so that export and load stay fast on a 2-core machine.  Both exports are
cached in --cache-dir.

Measures (JSON names):
  cached_equals_full  block-cache decoding (block size 128, with and without a 300-token
                      shared prefix, prefill + one-token steps across several blocks)
                      vs a full forward pass without cache (the naive graph, past = 0):
                      logits within 1e-4 and identical greedy tokens
  step_ms             median ms of one decode step at 512 / 2048 / 8192 tokens of context,
                      block vs naive, each kind in its own fresh child process
  kv_bytes_8k         KV bytes of the blocks in use for an 8192-token sequence
  peak_rss_mb         VmHWM of those child processes (/proc/<pid>/status)
  first_token_ms      time to the first speech token after a 300-token speaker prompt:
                      prompt KV shared (prefix cache) vs recomputed per request
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from tools.export_qwen2_onnx import random_qwen2_weights, save_model
from tools.make_ar_test_voice import TINY_SHAPE
from tools.qwen2_graph import LmShape, build_block_lm, build_naive_lm
from tools.results import default_path, write_result

SHAPE = LmShape(
    vocab_size=6564,
    hidden_size=896,
    intermediate_size=1024,
    num_layers=24,
    num_heads=14,
    num_kv_heads=2,
    head_dim=64,
    rms_norm_eps=1e-6,
    rope_theta=1e6,
)
BLOCK = 128
CONTEXTS = (512, 2048, 8192)
if os.environ.get("EDGETTS_BENCH_AR_SMOKE"):  # a minutes-free run of the whole script (CI smoke)
    SHAPE = dataclasses.replace(TINY_SHAPE, vocab_size=300)
WARMUP, STEPS = 3, 21
PROMPT = 300
TEXT = 30


def model_paths(cache: Path) -> tuple[Path, Path]:
    key = hashlib.sha1(repr(SHAPE).encode()).hexdigest()[:10]
    d = cache / f"cv2shape-{key}"
    return d / "lm_block.onnx", d / "lm_naive.onnx"


def export_models(cache: Path) -> tuple[Path, Path]:
    """Build both models in a child process, so this one never holds the weights' memory."""
    block, naive = model_paths(cache)
    if not (block.is_file() and naive.is_file()):
        subprocess.run([sys.executable, "-m", "tools.bench_ar", "--child", "export", "--model", str(cache)], check=True)
    return block, naive


def child_export(cache: Path) -> None:
    block, naive = model_paths(cache)
    t = time.perf_counter()
    w = random_qwen2_weights(SHAPE, seed=0, scale=0.02)
    save_model(build_block_lm(SHAPE, w), block)
    save_model(build_naive_lm(SHAPE, w), naive)
    print(
        f"exported both models to {block.parent} in {time.perf_counter() - t:.0f} s",
        file=sys.stderr,
    )


def session(path: Path, threads: int):
    """Both kinds get the sessions edgetts itself makes (edgetts/voice/onnx_session.py)."""
    from edgetts.voice.onnx_session import RuntimeOptions, create_session

    return create_session(path, RuntimeOptions(threads=threads))


def block_lm(path: Path, threads: int):
    from edgetts.voice.ar.kv_cache import KvLayout
    from edgetts.voice.ar.lm import BlockLm

    layout = KvLayout(SHAPE.num_layers, SHAPE.num_kv_heads, SHAPE.head_dim, BLOCK)
    return BlockLm(session(path, threads), layout, SHAPE.vocab_size, path)


def naive_run(sess, ids: np.ndarray, start: int, past: list[np.ndarray]) -> list[np.ndarray]:
    feeds = {
        "input_ids": ids[None].astype(np.int64),
        "position_ids": np.arange(start, start + len(ids), dtype=np.int64)[None],
    }
    for i in range(SHAPE.num_layers):
        feeds[f"past_key_values.{i}.key"] = past[2 * i]
        feeds[f"past_key_values.{i}.value"] = past[2 * i + 1]
    return sess.run(None, feeds)


def empty_past() -> list[np.ndarray]:
    z = np.zeros((1, SHAPE.num_kv_heads, 0, SHAPE.head_dim), np.float32)
    return [z] * (2 * SHAPE.num_layers)


# -- (a) cached decoding == full forward -------------------------------------------------
def check_equality(block_path: Path, naive_path: Path, threads: int) -> dict:
    from edgetts.voice.ar.kv_cache import BlockPool

    lm = block_lm(block_path, threads)
    naive = session(naive_path, threads)
    rng = np.random.default_rng(1)
    result = {"ok": True, "max_abs_diff": 0.0, "cases": []}
    for prefix_len, prefill, steps in ((PROMPT, 40, 230), (0, 40, 300)):
        pool = BlockPool(lm.layout, 12)
        ids = list(rng.integers(0, SHAPE.vocab_size, prefix_len + prefill))
        prefix = None
        if prefix_len:
            p = pool.new_sequence()
            lm.prefill(p, np.asarray(ids[:prefix_len]))
            prefix = p.freeze()
        got = []
        with pool.new_sequence(prefix=prefix) as seq:
            logits = lm.forward(seq, np.asarray(ids[prefix_len:]))
            got.append(logits)
            for _ in range(steps):
                tok = int(np.argmax(logits[-1]))
                ids.append(tok)
                logits = lm.forward(seq, np.asarray([tok]))
                got.append(logits)
            blocks = len(seq.blocks)
        ref = naive_run(naive, np.asarray(ids), 0, empty_past())[0][0]
        cached = np.concatenate(got)  # logits of positions prefix_len .. end
        diff = float(np.max(np.abs(cached - ref[prefix_len:])))
        greedy_ok = [int(t) for t in np.argmax(ref[prefix_len + prefill - 1 : -1], axis=-1)] == [
            int(t) for t in ids[prefix_len + prefill :]
        ]
        ok = diff <= 1e-4 and greedy_ok
        result["cases"].append(
            {
                "prefix_tokens": prefix_len,
                "own_tokens": prefill + steps,
                "own_blocks": blocks,
                "max_abs_diff": diff,
                "greedy_identical": greedy_ok,
            }
        )
        result["ok"] &= ok
        result["max_abs_diff"] = max(result["max_abs_diff"], diff)
    return result


# -- (e) first token after a 300-token speaker prompt ----------------------------------
def first_token(block_path: Path, threads: int, runs: int = 3) -> dict:
    from edgetts.voice.ar.kv_cache import BlockPool

    lm = block_lm(block_path, threads)
    rng = np.random.default_rng(2)
    prompt = rng.integers(0, SHAPE.vocab_size, PROMPT)
    text = rng.integers(0, SHAPE.vocab_size, TEXT + 1)  # text + task_id
    pool = BlockPool(lm.layout, 8)
    p = pool.new_sequence()
    lm.prefill(p, prompt)
    prefix = p.freeze()
    times: dict[str, list[float]] = {"prefix_cached": [], "uncached": []}
    tokens = {}
    for _ in range(runs + 1):  # the first round warms up
        for kind in ("prefix_cached", "uncached"):
            t = time.perf_counter()
            if kind == "prefix_cached":
                with pool.new_sequence(prefix=prefix) as seq:
                    tok = int(np.argmax(lm.prefill(seq, text)[-1]))
            else:
                with pool.new_sequence() as seq:
                    tok = int(np.argmax(lm.prefill(seq, np.concatenate([prompt, text]))[-1]))
            times[kind].append((time.perf_counter() - t) * 1000)
            tokens[kind] = tok
    assert tokens["prefix_cached"] == tokens["uncached"], tokens
    return {k: round(statistics.median(v[1:]), 1) for k, v in times.items()}


# -- (b)+(c)+(d) decode step time per context, in a fresh child per kind ----------------
def vm_hwm_kib() -> int:
    with open(f"/proc/{os.getpid()}/status") as fh:
        for line in fh:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    raise RuntimeError("no VmHWM")


def child_block(path: Path, threads: int) -> dict:
    from edgetts.voice.ar.kv_cache import BlockPool

    lm = block_lm(path, threads)
    lo = lm.layout
    pool = BlockPool(lo, lo.blocks_for(max(CONTEXTS) + WARMUP + STEPS))
    rng = np.random.default_rng(3)
    out: dict = {"step_ms": {}}
    for ctx in CONTEXTS:
        with pool.new_sequence() as seq:
            for s in range(0, ctx, 1024):  # random KV: a step costs the same whatever the values
                n = min(1024, ctx - s)
                kd = [rng.standard_normal((lo.num_kv_heads, n, lo.head_dim), np.float32) for _ in range(lo.num_layers)]
                seq.append(kd, kd)
            if ctx == 8192:
                out["kv_bytes_8k"] = pool.bytes_in_use
            times = []
            for i in range(WARMUP + STEPS):
                t = time.perf_counter()
                lm.forward(seq, np.asarray([i + 1]))
                times.append((time.perf_counter() - t) * 1000)
            out["step_ms"][str(ctx)] = round(statistics.median(times[WARMUP:]), 2)
    out["pool_bytes"] = pool.nbytes
    out["vm_hwm_kib"] = vm_hwm_kib()
    return out


def child_naive(path: Path, threads: int) -> dict:
    sess = session(path, threads)
    rng = np.random.default_rng(3)
    out: dict = {"step_ms": {}}
    for ctx in CONTEXTS:
        past = [
            rng.standard_normal((1, SHAPE.num_kv_heads, ctx, SHAPE.head_dim), np.float32)
            for _ in range(2 * SHAPE.num_layers)
        ]
        times = []
        for i in range(WARMUP + STEPS):
            t = time.perf_counter()
            res = naive_run(sess, np.asarray([i + 1]), ctx + i, past)
            past = res[1:]  # present becomes the next past: the whole cache is new memory each step
            times.append((time.perf_counter() - t) * 1000)
        out["step_ms"][str(ctx)] = round(statistics.median(times[WARMUP:]), 2)
        del past, res
    out["vm_hwm_kib"] = vm_hwm_kib()
    return out


def run_child(kind: str, path: Path, threads: int) -> dict:
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "tools.bench_ar",
            "--child",
            kind,
            "--model",
            str(path),
            "--threads",
            str(threads),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    if r.returncode:
        raise SystemExit(f"{kind} child failed:\n{r.stderr[-2000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--json", type=Path, default=default_path("bench_ar"), help="write the results here (default: %(default)s)"
    )
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--cache-dir", type=Path, default=Path(tempfile.gettempdir()) / "edgetts-bench-ar")
    ap.add_argument("--child", choices=("block", "naive", "export"), help=argparse.SUPPRESS)
    ap.add_argument("--model", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")

    if args.child == "export":
        child_export(args.model)
        return 0
    if args.child:
        fn = child_block if args.child == "block" else child_naive
        print(json.dumps(fn(args.model, args.threads)))
        return 0

    t0 = time.perf_counter()
    load_at_start = os.getloadavg()[0]  # another benchmark running at the same time skews step_ms
    block_path, naive_path = export_models(args.cache_dir)
    kids = {k: run_child(k, p, args.threads) for k, p in (("block", block_path), ("naive", naive_path))}
    eq = check_equality(block_path, naive_path, args.threads)
    ftok = first_token(block_path, args.threads)
    result = {
        "cached_equals_full": bool(eq["ok"]),
        "step_ms": {k: kids[k]["step_ms"] for k in ("block", "naive")},
        "kv_bytes_8k": int(kids["block"]["kv_bytes_8k"]),
        "peak_rss_mb": {k: round(kids[k]["vm_hwm_kib"] / 1024, 1) for k in ("block", "naive")},
        "first_token_ms": ftok,
        "meta": {
            "model": f"random weights, {SHAPE.num_layers} layers, {SHAPE.num_heads} query heads, "
            f"{SHAPE.num_kv_heads} KV heads, head_dim {SHAPE.head_dim}, hidden "
            f"{SHAPE.hidden_size} (CosyVoice2's attention shape); REDUCED: MLP intermediate "
            f"{SHAPE.intermediate_size} (CosyVoice2: 4864), vocab {SHAPE.vocab_size} "
            "(6561 speech tokens + 3 stop tokens)",
            "block_size": BLOCK,
            "threads": args.threads,
            "onnxruntime": _ort_version(),
            "equality": eq,
            "block_pool_bytes_for_8k_run": kids["block"]["pool_bytes"],
            "seconds": round(time.perf_counter() - t0, 1),
            "loadavg_at_start": load_at_start,
        },
    }
    print_table(result)
    write_result("bench_ar", result, args.json, argv)
    return 0 if result["cached_equals_full"] else 1


def _ort_version() -> str:
    import onnxruntime

    return onnxruntime.__version__


def print_table(r: dict) -> None:
    print(f"{'metric':<28}{'block cache':>14}{'naive concat':>14}")
    for ctx in CONTEXTS:
        print(
            f"{'step ms @ ' + str(ctx) + ' ctx':<28}{r['step_ms']['block'][str(ctx)]:>14}"
            f"{r['step_ms']['naive'][str(ctx)]:>14}"
        )
    print(f"{'peak RSS MB (VmHWM)':<28}{r['peak_rss_mb']['block']:>14}{r['peak_rss_mb']['naive']:>14}")
    print(f"kv_bytes_8k: {r['kv_bytes_8k']} ({r['kv_bytes_8k'] / 2**20:.0f} MiB, blocks in use)")
    print(
        f"first_token_ms (300-token prompt): prefix cached {r['first_token_ms']['prefix_cached']}, "
        f"uncached {r['first_token_ms']['uncached']}"
    )
    eq = r["meta"]["equality"]
    print(
        f"cached_equals_full: {r['cached_equals_full']} (max |diff| {eq['max_abs_diff']:.2e}; "
        + ", ".join(
            f"prefix {c['prefix_tokens']} + own {c['own_tokens']} in {c['own_blocks']} blocks" for c in eq["cases"]
        )
        + ")"
    )
    print(f"model: {r['meta']['model']}")


if __name__ == "__main__":
    sys.exit(main())
