"""``edgetts quantize``: write an int8 or fp16 variant of a Piper voice.

The variant is just another voice: ``OUT.onnx`` with the source's
``.onnx.json`` copied beside it, chosen like any voice (``--voice OUT.onnx``,
``voice.model: OUT.onnx``).  Without ``--static``/``--fp16``: dynamic int8, weights unsigned
8-bit (QUInt8): measured here, signed int8 weights made the joe voice about 3x slower, unsigned
ones keep fp32's speed.  ``--static`` (calibrated QDQ int8, chosen layers) and ``--fp16`` are
made by :mod:`edgetts.voice.piper.quantize_static`.  Whether a variant is worth it is a
measurement, not an assumption: see docs/voices.md and tools/bench_quant.py.
"""

from __future__ import annotations

import argparse
import logging
import shutil
import sys
import tempfile
from pathlib import Path

from edgetts.errors import EdgeTTSError, VoiceError


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add the ``quantize`` verb."""
    parser = subparsers.add_parser(
        "quantize",
        help="write an int8 or fp16 variant of a Piper voice",
        description=(
            "Write a variant of a Piper voice, with its .onnx.json beside it: dynamic int8 (QUInt8 weights) by "
            "default, --static for calibrated static int8 (layers chosen by a sensitivity pass; minutes), "
            "--fp16 for float16 convolutions."
        ),
    )
    parser.add_argument("--voice", default="default", help="the voice to quantize (default: the packaged one)")
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("-o", "--output", help="the new model, e.g. joe-int8.onnx")
    where.add_argument(
        "--cache",
        action="store_true",
        help="with --static: write it into the model cache, where `voice.degrade_to: int8` finds it",
    )
    parser.add_argument("--force", action="store_true", help="replace OUTPUT if it exists")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--static", action="store_true", help="static int8 (QDQ), calibrated on the voice itself")
    mode.add_argument(
        "--fp16",
        action="store_true",
        help="float16 convolutions (onnxruntime has fp16 kernels on aarch64 with fp16 arithmetic, e.g. Cortex-A76)",
    )
    parser.add_argument(
        "--keep-float",
        nargs="+",
        action="extend",
        default=[],
        metavar="NODE_OR_PATTERN",
        help="with --static/--fp16: keep these nodes float32 (names or globs, e.g. '/dec/resblocks.[3-8]/*')",
    )
    parser.add_argument(
        "--activations",
        choices=("uint8", "int8"),
        help="with --static: activation type (default: uint8 on x86, int8 on ARM, where the variant is made)",
    )
    parser.add_argument(
        "--calibration",
        metavar="FILE",
        help=(
            "with --static: calibrate on these sentences, one per line (blank lines and '#' comments skipped; "
            "default: a built-in set of announcements); a site's own announcements fit its voice best"
        ),
    )
    parser.set_defaults(func=run)


def quantize_voice(source: Path, output: Path) -> Path:
    """Write the int8 variant of ``source`` to ``output`` (and its config beside it); returns ``output``."""
    try:
        from onnxruntime.quantization import QuantType, quantize_dynamic
    except ImportError as err:
        raise VoiceError(f"onnxruntime has no quantization tools: {err}") from err
    config = source.with_name(source.name + ".json")
    if not config.is_file():
        raise VoiceError(f"voice config not found: {config}")
    output.parent.mkdir(parents=True, exist_ok=True)
    # Written beside the target and renamed: a half-written voice is never found by `edgetts voices`.
    with tempfile.TemporaryDirectory(dir=output.parent, prefix=".edgetts-quantize-") as tmp:
        staged = Path(tmp) / output.name
        logging.disable(logging.WARNING)  # onnxruntime's quantizer warns per tensor on the root logger
        try:
            quantize_dynamic(str(source), str(staged), weight_type=QuantType.QUInt8)
        except Exception as err:  # onnx/onnxruntime raise many types for unusable graphs
            first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
            raise VoiceError(f"cannot quantize {source}: {first}") from err
        finally:
            logging.disable(logging.NOTSET)
        shutil.copyfile(config, Path(tmp) / (output.name + ".json"))
        (Path(tmp) / (output.name + ".json")).replace(output.with_name(output.name + ".json"))
        staged.replace(output)
    return output


def calibration_sentences(path: Path) -> list[str]:
    """The sentences of a ``--calibration`` file: one per line, blank lines and ``#`` comments skipped."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise VoiceError(f"cannot read the calibration file {path}: {err}") from err
    sentences = [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    if not sentences:
        raise VoiceError(f"the calibration file {path} has no sentence (one per line)")
    return sentences


def _variant(source: Path, output: Path, args: argparse.Namespace) -> None:
    """The static int8 or fp16 variant; what it converted and kept float on stderr."""
    from edgetts.voice.piper.quantize_static import CALIBRATION_SENTENCES, convert_fp16, quantize_static_voice

    def progress(line: str) -> None:
        print(f"edgetts: {line}", file=sys.stderr, flush=True)

    if args.static:
        sentences = calibration_sentences(Path(args.calibration)) if args.calibration else CALIBRATION_SENTENCES
        report = quantize_static_voice(
            source,
            output,
            keep_float=args.keep_float,
            sentences=sentences,
            activations=args.activations,
            progress=progress,
        )
    else:
        report = convert_fp16(source, output, keep_float=args.keep_float)
    progress(
        f"{report.mode}: {len(report.converted)} Conv converted, {len(report.kept_float)} kept float "
        f"(log-mel distance to fp32 {report.distance_db:.2f} dB; the list is in the model's metadata)"
    )


def _cache_path(model: Path, args: argparse.Namespace) -> Path:
    """Where ``--cache`` writes: the variant `degrade_to: int8` looks for (made for this machine)."""
    from edgetts.voice.model_cache import default_cache_dir
    from edgetts.voice.piper.int8_variant import int8_path

    if not args.static or args.keep_float or args.activations or args.calibration:
        raise VoiceError("--cache writes the variant `degrade_to: int8` uses: --static alone, no other options")
    cache = default_cache_dir()
    if cache is None:
        raise VoiceError("the model cache is off (EDGETTS_CACHE_DIR is empty): nowhere to write")
    return int8_path(model, cache)


def run(args: argparse.Namespace) -> int:
    """Quantize ``args.voice`` into ``args.output``; 1 with one error line on failure."""
    from edgetts.voice.catalog import resolve_voice

    try:
        info = resolve_voice(args.voice)
        if info.family != "piper":
            raise VoiceError(f"{info.path} is not a Piper voice: only Piper voices can be quantized")
        output = _cache_path(info.path, args) if args.cache else Path(args.output)
        if output.suffix != ".onnx":
            raise VoiceError(f"the output must end in .onnx (its config is written beside it): {output}")
        if output.exists() and not args.force:
            raise VoiceError(f"{output} exists (--force replaces it)")
        if args.keep_float and not (args.static or args.fp16):
            raise VoiceError("--keep-float needs --static or --fp16")
        if args.activations and not args.static:
            raise VoiceError("--activations needs --static")
        if args.calibration and not args.static:
            raise VoiceError("--calibration needs --static")
        if args.static or args.fp16:
            _variant(info.path, output, args)
        else:
            quantize_voice(info.path, output)
    except EdgeTTSError as err:
        print(f"edgetts: error: {err}", file=sys.stderr)
        return 1
    print(output)
    return 0
