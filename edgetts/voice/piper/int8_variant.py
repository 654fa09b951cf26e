"""A Piper voice's own static int8 variant, kept in the model cache (`voice.degrade_to: int8`).

``edgetts quantize --static`` makes the variant on the machine that speaks with it: its
activation type and the kernels it is fused into depend on the CPU (uint8 on x86, int8 on
ARM), and the sensitivity pass measures that voice on that build of onnxruntime.  So the
variant is named by its source file, onnxruntime's version, the CPU and the activation type,
like every other optimised form in the cache (:mod:`edgetts.voice.model_cache`), and is made
again when any of them changes.

Its ``.onnx.json`` (the voice's config, copied) carries what the quantizer measured under
:data:`REPORT_KEY`, among it ``speed_ratio`` (the variant's synthesis time over fp32's), which
the daemon needs before the variant has spoken once: it is loaded only when it is first needed,
so a daemon that never degrades never holds a second copy of the voice.
"""

from __future__ import annotations

import json
import logging
import platform
import sys
from pathlib import Path
from typing import Any

from edgetts.vocabulary import DEGRADE_INT8
from edgetts.voice.model_cache import checksum, cpu_identity, family

_LOGGER = logging.getLogger(__name__)

INT8 = DEGRADE_INT8
"""The `degrade_to` that names the voice's own static int8 variant."""

REPORT_KEY = "edgetts_variant"
"""Where the variant's ``.onnx.json`` keeps what the quantizer measured (VariantReport)."""

FORMAT = "1"
"""Bumped when the quantizer makes a different variant from the same inputs: older ones are made again."""


def default_activations() -> str:
    """uint8 on x86 (where onnxruntime fuses only U8S8 QDQ), int8 on ARM."""
    return "int8" if platform.machine().lower() in ("aarch64", "arm64") else "uint8"


def int8_path(model: Path, cache_dir: Path) -> Path:
    """Where ``model``'s static int8 variant for this machine is kept in ``cache_dir``."""
    import onnxruntime

    stat = model.stat()
    identity = "\n".join(
        [str(stat.st_size), str(stat.st_mtime_ns), onnxruntime.__version__, default_activations(), FORMAT]
    )
    # A folder of their own: the cache drops files named like a model's optimised form once a newer
    # one is written (model_cache.stale_entries), and a variant is no optimised form.
    return cache_dir / "int8" / f"{family(model)}int8-{checksum(identity + cpu_identity())}.onnx"


def build_command(model: Path, output: Path) -> list[str]:
    """The command that makes ``model``'s variant at ``output`` (``edgetts quantize --static``)."""
    return [sys.executable, "-m", "edgetts.cli", "quantize", "--static", "--voice", str(model), "-o", str(output)]


def variant_report(path: Path) -> dict[str, Any] | None:
    """What the quantizer recorded beside the variant at ``path`` (None: no report, or unreadable)."""
    try:
        config = json.loads(path.with_name(path.name + ".json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        _LOGGER.warning("int8 variant %s: no readable config: %s", path, exc)
        return None
    report = config.get(REPORT_KEY) if isinstance(config, dict) else None
    return report if isinstance(report, dict) else None


def speed_ratio(path: Path) -> float | None:
    """The variant's synthesis time over its voice's, as measured where it was made (None: unknown)."""
    report = variant_report(path)
    ratio = report.get("speed_ratio") if report is not None else None
    return float(ratio) if isinstance(ratio, (int, float)) and ratio > 0 else None


__all__ = ["FORMAT", "INT8", "REPORT_KEY", "build_command", "default_activations", "int8_path", "speed_ratio"]
