"""``edgetts export-rknn``: a voice's flow and decoder windows as RKNN models for a Rockchip NPU.

Run on an x86_64 (or aarch64) machine with the converter's virtualenv (scripts/rknn-venv.sh); copy
the output directory to the board as ``<voice>.rknn`` beside the voice or in a voice directory, and
set ``voice.accelerator: npu`` (docs/npu.md).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from edgetts.errors import EdgeTTSError, VoiceError


def _window(value: str) -> int:
    number = int(value)
    if not 1 <= number <= 1024:
        raise argparse.ArgumentTypeError(f"a window is 1-1024 frames, not {value}")
    return number


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add the ``export-rknn`` verb."""
    from edgetts.voice.accel.manifest import TARGETS
    from edgetts.voice.accel.rknn_export import WINDOWS

    parser = subparsers.add_parser(
        "export-rknn",
        help="convert a voice's flow and decoder windows for a Rockchip NPU (RKNN)",
        description=(
            "Convert a Piper voice's flow and decoder, at the fixed window sizes the streaming plan uses, into "
            ".rknn models for an RK3588/RK3576/RK3566 NPU (fp16), with a manifest.json. Needs rknn-toolkit2 in "
            "its own venv: scripts/rknn-venv.sh (EDGETTS_RKNN_PYTHON: its python)."
        ),
    )
    parser.add_argument("--voice", default="default", help="the voice to convert (default: the packaged one)")
    parser.add_argument("--target", required=True, choices=TARGETS, help="the board's SoC")
    parser.add_argument(
        "--window",
        type=_window,
        nargs="+",
        action="extend",
        metavar="N",
        help=f"decoder runs to convert, in frames with their context (default: {' '.join(map(str, WINDOWS))})",
    )
    parser.add_argument("-o", "--output", required=True, help="the directory to write (e.g. <voice>.rknn)")
    parser.add_argument(
        "--int8",
        action="store_true",
        help="int8 instead of fp16, refused unless every model passes the int8 quality gate (log-mel)",
    )
    parser.add_argument("--force", action="store_true", help="replace OUTPUT's models if it has some")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Convert as ``args`` say; 1 with one error line on failure."""
    from edgetts.voice.accel.manifest import MANIFEST
    from edgetts.voice.accel.rknn_export import WINDOWS, ExportPlan, OneShot, export_voice, rknn_python

    def progress(line: str) -> None:
        print(f"edgetts: {line}", file=sys.stderr, flush=True)

    try:
        output = Path(args.output)
        if (output / MANIFEST).exists() and not args.force:
            raise VoiceError(f"{output} already holds converted models (--force replaces them)")
        converter = OneShot(rknn_python())
        converter.check()  # before the voice is split and minutes are spent
        voice = _load(args.voice)
        plan = ExportPlan(args.target, tuple(sorted(set(args.window or WINDOWS))), int8=args.int8)
        manifest = export_voice(voice, plan, output, converter, progress=progress)
    except EdgeTTSError as err:
        print(f"edgetts: error: {err}", file=sys.stderr)
        return 1
    for name in sorted(manifest.files):
        print(output / name)
    print(output / MANIFEST)
    return 0


def _load(spec: str) -> object:
    """The voice, split for streaming (what the NPU runs is the split's flow and decoder)."""
    from edgetts.voice.catalog import resolve_voice
    from edgetts.voice.model_cache import default_cache_dir
    from edgetts.voice.piper.voice import PiperVoice

    info = resolve_voice(spec)
    if info.family != "piper":
        raise VoiceError(f"{info.path} is not a Piper voice: only Piper voices run on the NPU")
    return PiperVoice.load(info.path, name=info.name, cache_dir=default_cache_dir(), streaming=True)
