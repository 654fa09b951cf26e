"""The NPU behind a streamed Piper voice: each window's flow and decoder run on Rockchip's NPU.

The front (encoder, duration predictor, noise) stays on the CPU cores; the flow's spans and the
decoder's windows, which the streaming plan already cuts to bounded sizes (docs/streaming.md), run as
`.rknn` models converted at fixed sizes by `edgetts export-rknn` (:mod:`.manifest`).  A run is padded
to the smallest converted size that holds it and its output trimmed: the flow masks its padding
(``y_mask`` is zero there, so its frames are what the shorter run computes); the decoder sees zeros
after the window, as a whole-sentence run sees them after the sentence.  A run larger than every
converted size runs on the CPU session behind it.

The runtime object is ``rknnlite.api.RKNNLite`` on a board; anything with its ``load_rknn``,
``init_runtime(core_mask=)``, ``inference(inputs=)`` and ``release`` will do (tests put the toolkit's
simulator behind it, tools/rknn_sim.py).  Nothing here is ever silent: a missing runtime, driver or
model, a target or voice mismatch, or a failing inference leaves :attr:`Npu.problem` set (the daemon's
``degraded: npu``) and the CPU sessions speak.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from edgetts.voice.accel.manifest import Manifest, ManifestError, board_soc, check_export, export_dirs

if TYPE_CHECKING:
    from edgetts.voice.piper.voice import PiperVoice

_LOGGER = logging.getLogger(__name__)

RuntimeFactory = Callable[[], Any]
"""Makes one runtime object (one per loaded model, as RKNNLite holds one)."""


class NpuError(Exception):
    """Why the NPU cannot run a voice's windows (one line)."""


def rknnlite_factory() -> RuntimeFactory:
    """``RKNNLite`` from rknn-toolkit-lite2 (the board's runtime); NpuError when it is not installed."""
    try:
        from rknnlite.api import RKNNLite
    except ImportError as err:
        raise NpuError(f"rknn-toolkit-lite2 is not installed ({err})") from err
    except Exception as err:  # a broken install raises what its compiled modules raise
        raise NpuError(f"rknn-toolkit-lite2 does not load: {_first_line(err)}") from err
    return RKNNLite  # type: ignore[no-any-return]


def _first_line(err: BaseException) -> str:
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__


@contextlib.contextmanager
def _output_captured() -> Iterator[list[str]]:
    """What the process writes to its stdout and stderr meanwhile, file descriptors and Python streams
    alike (the runtime's C library and its Python logger write there, and that is where it says why
    it failed); written out again on stderr after."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = (os.dup(1), os.dup(2))
    streams = (sys.stdout, sys.stderr)
    captured: list[str] = []
    with tempfile.TemporaryFile() as sink:
        text_sink = open(os.dup(sink.fileno()), "w", encoding="utf-8", errors="replace")  # noqa: SIM115
        os.dup2(sink.fileno(), 1)
        os.dup2(sink.fileno(), 2)
        sys.stdout = sys.stderr = text_sink
        try:
            yield captured
        finally:
            text_sink.flush()
            sys.stdout, sys.stderr = streams
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])
            text_sink.close()
            sink.seek(0)
            text = sink.read().decode("utf-8", "replace")
            captured.append(text)
            if text:
                sys.stderr.write(text)
                sys.stderr.flush()


def runtime_reason(output: str, what: str, ret: object) -> str:
    """The runtime's own words for a failed ``what``: its error lines (``E ...``) and the exception it
    caught (``...Error: ...``, ``Exception: ...``), else what the call returned."""
    said = []
    for line in (raw.strip() for raw in output.splitlines()):
        if line.startswith("E ") and "Catch exception" not in line and "Traceback" not in line:
            said.append(_STAMP.sub("", line.removeprefix("E ")).strip())
        elif _EXCEPTION_LINE.match(line):
            said.append(line)
    said = list(dict.fromkeys(s for s in said if s))
    said = list(dict.fromkeys(said[:2] + said[-1:]))  # what it said first (the cause), and how it ended
    if said:
        return f"{what} failed: " + " / ".join(said)[:300]
    return f"{what} returned {ret!r}"


_EXCEPTION_LINE = re.compile(r"^[A-Za-z_.]*(Error|Exception): \S")
_STAMP = re.compile(r"\[\d\d:\d\d:\d\d\.\d+\]\s*")
"""The runtime's time stamp (``E RKNN: [08:01:02.003] ...``): the reason stays the same from load to load."""


class NpuModel:
    """One converted model (a part at one window size) loaded into a runtime object."""

    def __init__(self, runtime: Any, frames: int, path: Path) -> None:
        self.runtime = runtime
        self.frames = frames
        self.path = path
        self._lock = threading.Lock()  # one inference at a time per context (window workers run in parallel)

    def run(self, inputs: Sequence[np.ndarray], frames: int) -> np.ndarray:
        """The output for ``inputs`` of ``frames`` frames: padded to this model's size, trimmed back."""
        padded = [_padded(a, frames, self.frames) for a in inputs]
        with self._lock:
            result = self.runtime.inference(inputs=padded)
        if not result:
            raise NpuError(f"{self.path.name}: inference returned {result!r}")
        out = np.asarray(result[0], dtype=np.float32)
        per_frame, rest = divmod(out.shape[-1], self.frames)
        if rest or per_frame < 1:
            raise NpuError(f"{self.path.name}: output shape {out.shape} does not fit {self.frames} frames")
        out = out[..., : frames * per_frame]
        if not np.all(np.isfinite(out)):
            raise NpuError(f"{self.path.name}: NaN or infinite output")
        return np.ascontiguousarray(out)

    def release(self) -> None:
        with contextlib.suppress(Exception):
            self.runtime.release()


def _padded(array: np.ndarray, frames: int, size: int) -> np.ndarray:
    """``array`` with zeros after its frame axis up to ``size`` (tensors without it pass as they are)."""
    a = np.asarray(array, dtype=np.float32)
    if a.ndim < 2 or a.shape[-1] != frames or frames == size:
        return np.ascontiguousarray(a)
    out = np.zeros((*a.shape[:-1], size), dtype=np.float32)
    out[..., :frames] = a
    return out


class NpuPart:
    """What a voice runs one part's windows with: the NPU where a model fits and it works, else the
    CPU session behind it.  Looks like an onnxruntime session to the voice (``run``, ``get_inputs``)."""

    def __init__(self, npu: Npu, part: str, cpu: Any, inputs: tuple[str, ...], models: dict[int, NpuModel]) -> None:
        self._npu = npu
        self.part = part
        self.cpu = cpu
        self._inputs = inputs
        self._sizes = sorted(models)
        self._models = models

    def get_inputs(self) -> Any:
        return self.cpu.get_inputs()

    def get_outputs(self) -> Any:
        return self.cpu.get_outputs()

    def model_for(self, frames: int) -> NpuModel | None:
        """The smallest converted model that holds ``frames`` (None: the NPU is off, or none does)."""
        if self._npu.problem is not None:
            return None
        size = next((s for s in self._sizes if s >= frames), None)
        return None if size is None else self._models[size]

    def counts(self, frames: int) -> bool:
        """Whether a run of ``frames`` is a sample of this part's speed: on the NPU, or everything on the
        CPU (the NPU off).  A healthy NPU's CPU run of a shape it was not converted for (a whole
        sentence) is not: it would bend the fit the streaming plan reads (lead.py)."""
        return self._npu.problem is not None or self.model_for(frames) is not None

    def run(self, outputs: list[str] | None, feeds: dict[str, np.ndarray], run_options: Any = None) -> list[Any]:
        frames = max(v.shape[-1] for v in feeds.values() if getattr(v, "ndim", 0) >= 2)
        model = self.model_for(frames)
        if model is not None:
            try:
                out = model.run([feeds[name] for name in self._inputs], frames)
            except Exception as err:  # the runtime's own types: the CPU speaks, and the status says why
                self._npu.fail(f"{self.part} at {model.frames} frames: {_first_line(err)}")
            else:
                if run_options is not None and getattr(run_options, "terminate", False):
                    # An NPU run cannot be ended midway; the interrupt ends the synthesis here, as an
                    # onnxruntime run ends at its next operator.
                    raise RuntimeError("Exiting due to terminate flag being set to true.")
                return [out]
        return list(self.cpu.run(outputs, feeds, run_options))


class Npu:
    """The NPU behind one voice: its loaded models, and why it is not (or no longer) in use."""

    def __init__(self, voice: str, problem: str | None = None) -> None:
        self.voice = voice
        self.problem = problem
        """None while the NPU runs the windows; else the reason (``degraded: npu``), and the CPU speaks."""
        self.manifest: Manifest | None = None
        self.directory: Path | None = None
        self._models: dict[str, dict[int, NpuModel]] = {}
        self._lock = threading.Lock()
        if problem is not None:
            _LOGGER.warning("voice %s: NPU not used, speaking on the CPU: %s", voice, problem)

    def fail(self, reason: str) -> None:
        """An inference failed: every later window runs on the CPU (logged once)."""
        with self._lock:
            if self.problem is not None:
                return
            self.problem = f"NPU inference failed, speaking on the CPU: {reason}"
        _LOGGER.error("voice %s: %s", self.voice, self.problem)

    @property
    def windows(self) -> dict[str, list[int]]:
        return {part: sorted(models) for part, models in self._models.items()}

    def load(self, directory: Path, manifest: Manifest, factory: RuntimeFactory, core_mask: int) -> None:
        """Load every model of ``manifest`` into its own runtime object; NpuError with the runtime's reason."""
        self.manifest, self.directory = manifest, directory
        for part, spec in manifest.parts.items():
            for frames, name in sorted(spec.models.items()):
                path = directory / name
                runtime = factory()
                self._models.setdefault(part, {})[frames] = model = NpuModel(runtime, frames, path)
                with _output_captured() as said:
                    ret = runtime.load_rknn(str(path))
                if ret != 0:
                    raise NpuError(runtime_reason(said[0], f"loading {name}", ret))
                with _output_captured() as said:
                    ret = model.runtime.init_runtime(core_mask=core_mask)
                if ret != 0:
                    raise NpuError(runtime_reason(said[0], "the NPU runtime", ret))

    def wrap(self, part: str, cpu: Any) -> Any:
        """What runs ``part``'s windows: the NPU in front of the CPU session ``cpu`` (just ``cpu`` when off)."""
        if self.problem is not None or self.manifest is None or part not in self._models:
            return cpu
        inputs = self.manifest.parts[part].inputs
        names = tuple(i.name for i in cpu.get_inputs())
        if sorted(names) != sorted(inputs):
            self.problem = (
                f"the NPU models' {part} inputs {list(inputs)} are not this split's {list(names)}: "
                "edgetts export-rknn again with this edgetts"
            )
            _LOGGER.warning("voice %s: NPU not used, speaking on the CPU: %s", self.voice, self.problem)
            return cpu
        return NpuPart(self, part, cpu, inputs, self._models[part])

    def close(self) -> None:
        for models in self._models.values():
            for model in models.values():
                model.release()
        self._models.clear()


def open_npu(
    model_path: Path,
    voice_name: str,
    search: Sequence[Path],
    *,
    core_mask: int = 0,
    factory: RuntimeFactory | None = None,
    soc: str | None | bool = True,
) -> Npu:
    """The NPU models of a voice, loaded; or an :class:`Npu` whose ``problem`` says why not.

    ``search``: voice directories where ``<voice>.rknn`` may be (:func:`.manifest.export_dirs`);
    ``factory``: the runtime objects (default RKNNLite); ``soc``: this board's SoC (True: read from
    the device tree; None: unknown, the runtime decides)."""
    board = board_soc() if soc is True else (soc or None)
    dirs = export_dirs(model_path, voice_name, list(search))
    found = next((d for d in dirs if d.is_dir()), None)
    if found is None:
        looked = ", ".join(str(d) for d in dirs[:3]) + (", ..." if len(dirs) > 3 else "")
        return Npu(voice_name, f"no NPU models for voice {voice_name} (looked in {looked}): edgetts export-rknn")
    npu = Npu(voice_name)
    try:
        manifest = check_export(found, model_path, str(board) if board else None)
        npu.load(found, manifest, factory or rknnlite_factory(), core_mask)
    except (ManifestError, NpuError) as err:
        npu.close()
        return Npu(voice_name, str(err))
    except Exception as err:  # the runtime's own types
        npu.close()
        return Npu(voice_name, f"the NPU runtime failed: {_first_line(err)}")
    _LOGGER.info("voice %s: flow and decoder windows on the NPU (%s, %s)", voice_name, found, npu.windows)
    return npu


def attach_npu(
    voice: PiperVoice,
    search: Sequence[Path],
    *,
    core_mask: int = 0,
    factory: RuntimeFactory | None = None,
    soc: str | None | bool = True,
) -> Npu:
    """Put the NPU in front of ``voice``'s flow and decoder (``voice.accelerator`` is then the
    returned :class:`Npu`); a voice that is not streamed in windows keeps the CPU, with the reason."""
    # The NPU first: what it lacks (its runtime, driver, models) is what an operator must mend first.
    npu = open_npu(voice.model_path, voice.name, search, core_mask=core_mask, factory=factory, soc=soc)
    if npu.problem is None and (voice.split is None or voice.streaming is None):
        npu.close()
        npu = Npu(voice.name, "the NPU runs a streamed voice's windows: this voice is not streamed (voice.streaming)")
    elif npu.problem is None:
        voice.accelerate(npu.wrap)
    voice.accelerator = npu
    return npu
