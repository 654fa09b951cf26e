"""What `edgetts export-rknn` writes beside its `.rknn` files, and the checks a load makes of them.

An export directory holds one `.rknn` model per part (`flow`, `tail`: the decoder) and fixed window
size, and ``manifest.json``: the target SoC, the windows, the source voice's SHA-256, the toolkit's
version, and each file's size and SHA-256.  A load refuses, with a reason a person can act on, a
directory made for another voice or another SoC, and a file that is missing, truncated or changed:
then the CPU speaks (docs/npu.md).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

FORMAT = "edgetts-rknn-1"
"""``format`` of a manifest this edgetts reads (bumped when the layout changes)."""

MANIFEST = "manifest.json"

TARGETS = ("rk3588", "rk3576", "rk3566")
"""SoCs `edgetts export-rknn --target` converts for (the toolkit's rk3566 models also run on an rk3568)."""

PARTS = ("flow", "tail")


class ManifestError(Exception):
    """An export directory that cannot be used: the one-line reason."""


@dataclass(frozen=True)
class PartModels:
    """One part's converted models: its inputs in the order the runtime takes them, a file per window."""

    inputs: tuple[str, ...]
    models: dict[int, str]
    """Window (frames) -> file name in the export directory."""


@dataclass(frozen=True)
class Manifest:
    """An export directory's ``manifest.json``."""

    voice: str
    voice_sha256: str
    target: str
    dtype: str
    """``fp16`` or ``int8``."""
    toolkit: str
    hop: int
    parts: dict[str, PartModels]
    files: dict[str, dict[str, Any]] = field(default_factory=dict)
    """File name -> {"bytes": size, "sha256": hex}."""

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "voice": self.voice,
            "voice_sha256": self.voice_sha256,
            "target": self.target,
            "dtype": self.dtype,
            "toolkit": self.toolkit,
            "hop": self.hop,
            "windows": {part: sorted(models.models) for part, models in self.parts.items()},
            "parts": {
                part: {"inputs": list(m.inputs), "models": {str(k): v for k, v in sorted(m.models.items())}}
                for part, m in self.parts.items()
            },
            "files": self.files,
        }

    @staticmethod
    def from_json(data: Mapping[str, Any]) -> Manifest:
        if data.get("format") != FORMAT:
            raise ManifestError(f"not an edgetts RKNN manifest of format {FORMAT} (format {data.get('format')!r})")
        try:
            parts = {
                part: PartModels(
                    tuple(str(n) for n in spec["inputs"]), {int(k): str(v) for k, v in spec["models"].items()}
                )
                for part, spec in data["parts"].items()
            }
            return Manifest(
                str(data["voice"]),
                str(data["voice_sha256"]),
                str(data["target"]),
                str(data["dtype"]),
                str(data["toolkit"]),
                int(data["hop"]),
                parts,
                {str(k): dict(v) for k, v in data["files"].items()},
            )
        except (KeyError, TypeError, ValueError, AttributeError) as err:
            raise ManifestError(f"malformed manifest: {type(err).__name__}: {err}") from err


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def describe(path: Path) -> dict[str, Any]:
    """A file's entry in ``files``."""
    return {"bytes": path.stat().st_size, "sha256": sha256_of(path)}


def write_manifest(directory: Path, manifest: Manifest) -> Path:
    """Write ``manifest.json`` last (its presence means the models beside it are complete)."""
    path = directory / MANIFEST
    tmp = directory / f".{MANIFEST}.part"
    tmp.write_text(json.dumps(manifest.to_json(), indent=1) + "\n", encoding="utf-8")
    tmp.replace(path)
    return path


def read_manifest(directory: Path) -> Manifest:
    path = directory / MANIFEST
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as err:
        raise ManifestError(f"no {MANIFEST} in {directory}") from err
    except (OSError, ValueError) as err:
        raise ManifestError(f"cannot read {path}: {err}") from err
    if not isinstance(data, dict):
        raise ManifestError(f"{path} is not a JSON object")
    return Manifest.from_json(data)


def check_export(directory: Path, voice_model: Path, target: str | None) -> Manifest:
    """The manifest of ``directory`` if it was made from ``voice_model`` for ``target`` (None: this
    board's SoC is unknown, the runtime decides) and every model file is whole; else ManifestError."""
    manifest = read_manifest(directory)
    for part in PARTS:
        if part not in manifest.parts or not manifest.parts[part].models:
            raise ManifestError(f"{directory}: no {part} models in the manifest")
    if target is not None and manifest.target != target:
        raise ManifestError(
            f"{directory} was converted for {manifest.target}, this board is {target} "
            f"(edgetts export-rknn --target {target})"
        )
    if sha256_of(voice_model) != manifest.voice_sha256:
        raise ManifestError(
            f"{directory} was converted from another voice file than {voice_model} "
            f"({manifest.voice}, SHA-256 {manifest.voice_sha256[:12]}...): edgetts export-rknn again"
        )
    for name in _model_files(manifest):
        _check_file(directory / name, manifest.files.get(name))
    return manifest


def _model_files(manifest: Manifest) -> Iterator[str]:
    for models in manifest.parts.values():
        yield from models.models.values()


def _check_file(path: Path, expected: Mapping[str, Any] | None) -> None:
    if expected is None:
        raise ManifestError(f"{path.name} is not listed in the manifest's files")
    if not path.is_file():
        raise ManifestError(f"{path} is missing")
    size = path.stat().st_size
    if size != int(expected.get("bytes", -1)):
        raise ManifestError(f"{path} has {size} bytes, the manifest says {expected.get('bytes')} (truncated?)")
    if sha256_of(path) != expected.get("sha256"):
        raise ManifestError(f"{path} is not the file the manifest lists (SHA-256 differs)")


def export_dirs(model_path: Path, voice_name: str, search: list[Path]) -> list[Path]:
    """Where the NPU models of a voice are looked for, in order: ``<voice>.rknn`` beside its model,
    then in each voice directory (``search``: $EDGETTS_VOICE_PATH, /var/lib/edgetts/voices, ...)."""
    stem = model_path.name.removesuffix(".onnx")
    found = [model_path.with_name(f"{stem}.rknn")]
    found += [d / f"{name}.rknn" for d in search for name in dict.fromkeys((voice_name, stem))]
    return list(dict.fromkeys(found))


def board_soc(compatible: Path = Path("/proc/device-tree/compatible")) -> str | None:
    """This board's NPU family as export targets name it (rk3588, rk3576, rk3566), None when unknown
    (not a Rockchip board, or no device tree: a container, an emulator)."""
    try:
        names = compatible.read_bytes().decode("ascii", "replace").split("\0")
    except OSError:
        return None
    for name in names:
        soc = name.partition(",")[2]
        if soc.startswith("rk3588"):
            return "rk3588"
        if soc.startswith("rk3576"):
            return "rk3576"
        if soc.startswith(("rk3566", "rk3568")):
            return "rk3566"
    return None
