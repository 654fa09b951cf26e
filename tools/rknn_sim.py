#!/usr/bin/env python3
"""Rockchip's x86 simulator behind edgetts' NPU adapter, and export directories for tests.

The toolkit's simulator runs only a model built in its own process (``init_runtime()`` without a
target refuses a loaded ``.rknn``), and the toolkit lives in a venv of its own (scripts/rknn-venv.sh).
So :class:`Simulator` runs ``edgetts/voice/accel/rknn_job.py serve`` with that venv's python: it is the
converter `edgetts export-rknn` calls (:meth:`Simulator.convert`: each model is built, written as
``.rknn`` and kept loaded in the simulator), and :meth:`Simulator.runtime` makes runtime objects with
RKNNLite's calls (``load_rknn``, ``init_runtime``, ``inference``, ``release``) whose inferences the
kept models answer.  The product's own adapter and streaming path run in front of them, unchanged.

:func:`write_export` writes an export directory (manifest and model files) from given bytes: the
default tier's fake runtime and the arm64 chroot's check (a runtime with no driver) use it.
"""

from __future__ import annotations

import os
import subprocess
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from edgetts.voice.accel import rknn_job
from edgetts.voice.accel.manifest import Manifest, PartModels, describe, sha256_of, write_manifest


def rknn_python() -> Path | None:
    """The rknn venv's python from $EDGETTS_RKNN_PYTHON (the --rknn tier sets it), else None."""
    given = os.environ.get("EDGETTS_RKNN_PYTHON")
    return Path(given) if given and Path(given).is_file() else None


def write_export(
    directory: Path,
    voice_model: Path,
    voice_name: str,
    parts: Mapping[str, tuple[tuple[str, ...], Mapping[int, bytes]]],
    *,
    target: str = "rk3588",
    hop: int = 256,
) -> Manifest:
    """An export directory of ``parts`` (part -> (input names, window -> model bytes)) for ``voice_model``."""
    directory.mkdir(parents=True, exist_ok=True)
    files, models = {}, {}
    for part, (inputs, by_window) in parts.items():
        names = {}
        for frames, data in by_window.items():
            path = directory / f"{part}-{frames}.rknn"
            path.write_bytes(data)
            files[path.name] = describe(path)
            names[frames] = path.name
        models[part] = PartModels(tuple(inputs), names)
    manifest = Manifest(voice_name, sha256_of(voice_model), target, "fp16", "test", hop, models, files)
    write_manifest(directory, manifest)
    return manifest


class Simulator:
    """One ``rknn_job.py serve`` process in the rknn venv: a converter, and the runtime behind the adapter."""

    def __init__(self, python: Path, log: Path | None = None) -> None:
        self._log = open(log, "ab") if log is not None else subprocess.DEVNULL  # noqa: SIM115 - closed in close()
        self._proc = subprocess.Popen(
            [str(python), str(rknn_job.SCRIPT), "serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
        )
        self._lock = threading.Lock()
        self._ids: dict[str, int] = {}
        """.rknn file name -> the simulator's model (names are unique per export: part-window.rknn)."""
        self.toolkit = "rknn-toolkit2"
        self.inferences = 0

    def call(self, header: dict[str, Any], arrays: list[np.ndarray] | None = None) -> tuple[dict[str, Any], list]:
        with self._lock:
            assert self._proc.stdin is not None and self._proc.stdout is not None
            rknn_job.send(self._proc.stdin, header, arrays or [])  # type: ignore[arg-type]
            reply = rknn_job.receive(self._proc.stdout)  # type: ignore[arg-type]
        if reply is None:
            raise RuntimeError(f"the simulator exited ({self._proc.poll()})")
        if "error" in reply[0]:
            raise RuntimeError(reply[0]["error"])
        return reply

    def convert(self, job: dict[str, Any]) -> dict[str, Any]:
        """edgetts.voice.accel.rknn_export.Converter: build each model, write its .rknn, keep it loaded."""
        for model in job["models"]:
            reply, _ = self.call({"op": "convert", "model": model, "target": job["target"], "dtype": job["dtype"]})
            self._ids[Path(model["output"]).name] = int(reply["id"])
            self.toolkit = str(reply.get("toolkit", self.toolkit))
            if model.get("check"):
                self._check(model, int(reply["id"]))
        return {"toolkit": self.toolkit}

    def _check(self, model: dict[str, Any], ident: int) -> None:
        with np.load(model["check"]) as data:
            count = 1 + max(int(name.split("_")[1]) for name in data.files)
            outs = {}
            for w in range(count):
                inputs = [data[f"{i}_{w}"] for i in range(len(model["inputs"]))]
                outs[str(w)] = self.call({"op": "infer", "id": ident}, inputs)[1][0]
        np.savez(model["check_out"], **outs)

    def runtime(self) -> SimRuntime:
        """A runtime object for edgetts.voice.accel.npu (its factory)."""
        return SimRuntime(self)

    def model_id(self, name: str) -> int | None:
        return self._ids.get(name)

    def close(self) -> None:
        if self._proc.poll() is None:
            try:
                self.call({"op": "quit"})
            except (RuntimeError, OSError, EOFError):
                pass
            try:
                self._proc.wait(30)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        if self._log is not subprocess.DEVNULL:
            self._log.close()  # type: ignore[union-attr]


class SimRuntime:
    """RKNNLite's calls, answered by a model the :class:`Simulator` built for that ``.rknn`` file."""

    def __init__(self, simulator: Simulator) -> None:
        self._sim = simulator
        self._id: int | None = None
        self.core_mask: int | None = None

    def load_rknn(self, path: str) -> int:
        if not Path(path).is_file():
            print(f"E load_rknn: Invalid RKNN model path: {path}")  # as RKNNLite says it
            return -1
        self._id = self._sim.model_id(Path(path).name)
        return 0 if self._id is not None else -1

    def init_runtime(self, target: str | None = None, core_mask: int = 0) -> int:
        self.core_mask = core_mask
        return 0 if self._id is not None else -1

    def inference(self, inputs: list[np.ndarray], **_: Any) -> list[np.ndarray] | None:
        if self._id is None:
            return None
        self._sim.inferences += 1
        return self._sim.call({"op": "infer", "id": self._id}, list(inputs))[1]

    def release(self) -> None:
        self._id = None
