#!/usr/bin/env python3
"""The static int8 variant on aarch64: its int8 kernels run, and it passes the same gate as on x86.

onnxruntime's int8 convolution kernels differ by architecture (x86 fuses only U8S8 QDQ; ARM fuses
S8S8 and has dot-product kernels on Cortex-A76: Pi 5, RK3588), so the variant is checked where a
board runs it.  Two steps, because pocketsphinx (the gate's word error rate) lives on the host:

    python -m tools.quant_arm speak OUT.npz --variant joe-static.onnx [--lines 2 5 11] [--seed 0]
    python -m tools.quant_arm judge OUT.npz [--json benchmarks/results/bench_quant_aarch64.json]

``speak`` (in the arm64 chroot, scripts/test-aarch64.sh; under emulation only correctness means
anything, never speed): onnxruntime's profiler over one run of the variant on the first line's
ids, counting the kernels each node ran by operator (``QLinearConv`` is onnxruntime's int8
convolution, which it fuses each converted Q/DQ group into), and each line spoken by fp32 and the
variant with the same seed, whole sentences (tools/bench_quant.py's way).  ``judge`` (on the host):
per line pocketsphinx WER of both, the log-mel distance to fp32, and the gate of tools/bench_quant.py
(WER at most one point above fp32's, median log-mel distance at most 1.5 dB), plus
``int8_kernels_ran``: every Conv the variant converted ran as a QLinearConv (``qdq_left``: the
QuantizeLinear / DequantizeLinear kernels left at the int8 groups' edges).  Fewer lines than the x86
gate (emulation is slow), so its WER moves by a word per line: ``wer_words`` / ``wer_fp32_words`` say
how many words that is.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import platform
import statistics
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from tools.results import default_path, write_result

DEFAULT_LINES = (1, 2, 5, 8, 11, 14)
"""Corpus lines (tests/data/spoken_corpus.tsv, 1-based) spoken on aarch64: short, medium and long
ones with numbers (emulation speaks ~1 s of audio in ~15 s)."""
INT8_OPS = ("QLinearConv", "QLinearMatMul", "ConvInteger", "MatMulInteger")


def kernel_counts(model: Path, feeds: dict[str, np.ndarray], threads: int) -> dict[str, int]:
    """How many kernels of each operator one run of ``model`` on ``feeds`` ran (onnxruntime's profiler)."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.enable_profiling = True
    with tempfile.TemporaryDirectory() as tmp:
        options.profile_file_prefix = str(Path(tmp) / "profile")
        session = ort.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])
        session.run(None, feeds)
        events = json.loads(Path(session.end_profiling()).read_text())
    counts: collections.Counter[str] = collections.Counter(
        e["args"]["op_name"] for e in events if e.get("cat") == "Node" and "op_name" in e.get("args", {})
    )
    return dict(counts)


def speak(out: Path, variant: Path, lines: Sequence[int], seed: int, threads: int) -> None:
    from edgetts.engine import SynthesisConfig
    from edgetts.voice.catalog import default_voice_path
    from edgetts.voice.onnx_session import RuntimeOptions
    from edgetts.voice.piper.check_feeds import model_feeds
    from edgetts.voice.piper.quantize_static import variant_metadata
    from edgetts.voice.piper.voice import PiperVoice

    from tools.bench_wer import corpus

    texts = [text for text, _ in corpus(list(lines))]
    runtime = RuntimeOptions(threads=threads)
    voices = {
        name: PiperVoice.load(path, runtime=runtime, cache_dir=None)
        for name, path in (("fp32", default_voice_path()), ("variant", variant))
    }
    ids = voices["variant"].frontend.sentence_ids(texts[0])[0]
    scales = np.array([0.667, 1.0, 0.8], dtype=np.float32)
    counts = kernel_counts(variant, model_feeds([int(i) for i in ids], scales), threads)
    config = SynthesisConfig(seed=seed, normalize_audio=False)
    audio = {
        f"{name}-{n}": np.concatenate([c.audio for c in voice.synthesize(text, config)])
        for name, voice in voices.items()
        for n, text in zip(lines, texts, strict=True)
    }
    recorded = variant_metadata(variant) or {}
    meta = {
        "machine": platform.machine(),
        "qemu_cpu": os.environ.get("QEMU_CPU"),  # (scripts/test-aarch64.sh: the emulated core)
        "lines": list(lines),
        "seed": seed,
        "kernels": counts,
        "converted": list(recorded.get("converted", [])),
        "activations": recorded.get("activations"),
        "sample_rate": voices["fp32"].sample_rate,
    }
    np.savez(out, meta=json.dumps(meta), **audio)
    print(f"{out}: kernels {json.dumps({k: v for k, v in counts.items() if k in (*INT8_OPS, 'Conv')})}")


def judge(spoken: Path) -> dict[str, Any]:
    from edgetts.voice.piper.logmel import logmel_distance_db

    from tools.bench_quant import GATE_LOGMEL_DB, GATE_WER_POINTS, _wer
    from tools.bench_wer import corpus

    data = np.load(spoken)
    meta = json.loads(str(data["meta"]))
    rate = int(meta["sample_rate"])
    words = dict(zip(meta["lines"], (w for _, w in corpus(meta["lines"])), strict=True))
    wers: dict[str, list[float]] = {"fp32": [], "variant": []}
    distances = []
    for n in meta["lines"]:
        reference, variant = data[f"fp32-{n}"], data[f"variant-{n}"]
        common = min(reference.size, variant.size)
        distances.append(logmel_distance_db(reference[:common], variant[:common], rate))
        for name, audio in (("fp32", reference), ("variant", variant)):
            wers[name].append(_wer(audio, rate, words[n]))
    kernels = meta["kernels"]
    int8 = {op: kernels.get(op, 0) for op in INT8_OPS}
    result = {
        "machine": meta["machine"],
        "qemu_cpu": meta.get("qemu_cpu"),
        "lines": meta["lines"],
        "seed": meta["seed"],
        "activations": meta["activations"],
        "converted": len(meta["converted"]),
        "kernels_int8": int8,
        "kernels_float_conv": kernels.get("Conv", 0) + kernels.get("FusedConv", 0),
        "qdq_left": kernels.get("QuantizeLinear", 0) + kernels.get("DequantizeLinear", 0),
        "wer": statistics.fmean(wers["variant"]),
        "wer_fp32": statistics.fmean(wers["fp32"]),
        "wer_words": round(sum(w * len(words[n]) for w, n in zip(wers["variant"], meta["lines"], strict=True))),
        "wer_fp32_words": round(sum(w * len(words[n]) for w, n in zip(wers["fp32"], meta["lines"], strict=True))),
        "words": sum(len(words[n]) for n in meta["lines"]),
        "logmel_db_median": float(statistics.median(distances)),
        "logmel_db_max": float(max(distances)),
    }
    result["int8_kernels_ran"] = bool(result["converted"]) and int8["QLinearConv"] >= result["converted"]
    result["passes_gate"] = (
        result["wer"] <= result["wer_fp32"] + GATE_WER_POINTS and result["logmel_db_median"] <= GATE_LOGMEL_DB
    )
    return result


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    verbs = parser.add_subparsers(dest="verb", required=True)
    make = verbs.add_parser("speak", help="profile the variant and speak the lines (on the board's architecture)")
    make.add_argument("out", type=Path)
    make.add_argument("--variant", type=Path, required=True, help="the static int8 variant (edgetts quantize --static)")
    make.add_argument("--lines", type=int, nargs="+", default=list(DEFAULT_LINES))
    make.add_argument("--seed", type=int, default=0)
    make.add_argument("--threads", type=int, default=2)
    check = verbs.add_parser("judge", help="WER, log-mel distance and the gate of what `speak` wrote (on the host)")
    check.add_argument("spoken", type=Path)
    check.add_argument("--json", type=Path, default=default_path("bench_quant_aarch64"))
    args = parser.parse_args(argv)
    if args.verb == "speak":
        speak(args.out, args.variant, args.lines, args.seed, args.threads)
        return 0
    result = judge(args.spoken)
    print(json.dumps(result, indent=1))
    write_result("quant_arm", result, args.json)
    return 0 if result["int8_kernels_ran"] and result["passes_gate"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
