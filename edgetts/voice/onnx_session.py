"""The one place that builds onnxruntime sessions.

Every model edgetts runs (Piper voices and their split parts, the
autoregressive LM and decoder) gets its ``SessionOptions`` here, so thread
counts, spinning, graph optimisation, core pinning (``cpu.inference_cores``)
and locked weights (``memory.lock``) are decided once, from one
:class:`RuntimeOptions`.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import logging
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import cast

import numpy as np
import onnxruntime as ort

from edgetts.errors import VoiceError
from edgetts.runtime.affinity import apply_to_session_options
from edgetts.runtime.memlock import lock_weights
from edgetts.voice.model_cache import cache_key, exclusive, family, prepare_dir, stale_entries

_LOGGER = logging.getLogger(__name__)

# onnxruntime writes a telemetry id under $HOME, which a hardened unit
# (ProtectHome=yes) forbids; it also has nothing to report to offline.
os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")

_OPT_LEVELS = {
    "disable": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
    "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
    "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
    "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
}


@dataclass(frozen=True)
class RuntimeOptions:
    """How onnxruntime runs a model."""

    threads: int | None = None
    """Intra-op threads; ``None`` = one per CPU core this process may use."""

    spinning: bool = True
    """Let worker threads spin between the operators of one run (no futex wake-up per operator:
    first audio at 2 threads ~15 % sooner here).  They stop spinning as soon as the run returns
    (``session.force_spinning_stop``), so an idle board burns nothing: without that, spinning
    cost 97 % of a core between requests here (tests/voice/test_piper_voice.py checks the idle cost)."""

    optimization: str = "all"
    """Graph optimisation level: disable | basic | extended | all."""

    memory_arena: bool = True
    """onnxruntime's CPU arena: it grows to the largest shapes seen and, unless
    ``arena_shrinkage``, never shrinks.  Off, activations go back to malloc after each
    run, at a higher peak (see docs/streaming.md)."""

    shared_arena: bool = True
    """One CPU arena for every session of the process (onnxruntime's environment allocator,
    ``session.use_env_allocators``) instead of one per session.  A split voice runs three or four
    sessions one after the other, and each arena kept the blocks of its own largest run; shared,
    the front's, flow's and decoder's runs reuse the same blocks.  Measured here, the
    daemon with the default config over the corpus (tools/bench_daemon.py): peak RSS 217 -> 207 MB,
    after it 214 -> 200 MB; the joe voice alone, streamed, 2 threads: peak 203 -> 196 MB; CPU time
    the same within noise.  A long run's arena shrinkage shrinks the shared arena.  Only with
    ``memory_arena``."""

    arena_shrinkage: bool = True
    """Give the arena's free chunks back at the end of every large run (over SHRINK_ABOVE ids or
    frames; onnxruntime's
    ``memory.enable_memory_arena_shrinkage`` run option): within a run the arena still
    reuses its blocks, but what the longest sentence took does not stay with the process
    (issue 13).  Measured, corpus then three runs of 400 ids, joe, 2 threads: RSS after
    330 -> 141 MB (with :func:`return_free_heap`), peak 330 -> 356 MB, corpus time the
    same within noise (12.5 / 12.9 s); the arena off instead: peak 478 MB, 13.8 s."""

    memory_pattern: bool = False
    """onnxruntime's memory patterns: one planned block per input shape seen, kept.  Off: with a
    new shape at nearly every sentence the patterns only cost memory (whole-sentence peak RSS
    over three passes of the corpus 373 MB on, 252 MB off; streaming 210 -> 187 MB) and saved
    no time here (docs/streaming.md)."""

    cores: tuple[int, ...] | None = None
    """CPUs (0-based) the intra-op worker threads are pinned to (cpu.inference_cores);
    None = not pinned.  The calling thread pins itself (edgetts.runtime.cpu_plan)."""

    lock: bool = False
    """Map the weights read-only and shared, mlock them and hand them to onnxruntime
    without a copy (memory.lock; edgetts.runtime.memlock).  A refused lock is logged, not fatal."""

    def resolved_threads(self) -> int:
        """The thread count actually used."""
        if self.threads is not None:
            return self.threads
        return max(1, len(os.sched_getaffinity(0)))


def session_options(options: RuntimeOptions) -> ort.SessionOptions:
    """``SessionOptions`` for one model run by edgetts."""
    if options.optimization not in _OPT_LEVELS:
        raise ValueError(f"optimization must be one of {', '.join(_OPT_LEVELS)}, not {options.optimization!r}")
    threads = options.resolved_threads()
    if threads < 1:
        raise ValueError(f"threads must be at least 1, not {threads}")
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = _OPT_LEVELS[options.optimization]
    spin = "1" if options.spinning else "0"
    so.add_session_config_entry("session.intra_op.allow_spinning", spin)
    so.add_session_config_entry("session.inter_op.allow_spinning", spin)
    so.add_session_config_entry("session.force_spinning_stop", "1")
    so.enable_cpu_mem_arena = options.memory_arena
    if options.memory_arena and options.shared_arena and _register_shared_arena():
        so.add_session_config_entry("session.use_env_allocators", "1")
    so.enable_mem_pattern = options.memory_pattern
    if options.cores:
        apply_to_session_options(so, options.cores, threads)
    so.log_severity_level = 3  # errors only: warnings about unused initialisers are noise here
    return so


_ARENA_LOCK = threading.Lock()
_shared_arena: list[bool] = []


def _register_shared_arena() -> bool:
    """Register the process's shared CPU arena with onnxruntime (once); False if it refused.

    onnxruntime's default arena settings (blocks grow by powers of two): growing by what is asked,
    or a 16-32 MB first block, held more here (the voice's peak over the corpus 208-251 MB, not 204)."""
    with _ARENA_LOCK:
        if not _shared_arena:
            info = ort.OrtMemoryInfo("Cpu", ort.OrtAllocatorType.ORT_ARENA_ALLOCATOR, 0, ort.OrtMemType.DEFAULT)
            try:
                ort.create_and_register_allocator(info, ort.OrtArenaCfg({}))
                _shared_arena.append(True)
            except Exception as err:  # an onnxruntime without it: each session keeps its own arena
                _LOGGER.debug("no shared CPU arena: %s", err)
                _shared_arena.append(False)
        return _shared_arena[0]


SHRINK_ABOVE = 256
"""Runs over more ids or frames than this give the arena's free blocks back after them.  Issue 14:
shrinking after every run cost 7-8 % of the CPU here (whole sentences, 1 thread, corpus: 10.6 ->
9.9 s), the blocks being allocated again at the next run; a streamed voice's runs (windows of
<= 76 frames, flow spans of <= 240, most fronts) stay below, and what a long sentence took still
goes back (issue 13)."""


def run_options(options: RuntimeOptions, size: int | None = None) -> ort.RunOptions:
    """New options for one run of a session built from ``options``, over ``size`` ids or frames
    (None: unknown, treated as large)."""
    run = ort.RunOptions()
    if options.memory_arena and options.arena_shrinkage and (size is None or size > SHRINK_ABOVE):
        run.add_run_config_entry("memory.enable_memory_arena_shrinkage", "cpu:0")
    return run


class Runs:
    """The runs of one model's sessions: each with :func:`run_options`, and endable from another thread.

    Ending a run is onnxruntime's own ``RunOptions.terminate``, checked before each
    operator: a preempted announcement's synthesis stops within an operator or two,
    not at the end of its sentence (issue 13).  Each run has its own options, so an
    interrupt that comes after its run returned never ends a later one.
    """

    def __init__(self, options: RuntimeOptions) -> None:
        self._options = options
        self._lock = threading.Lock()
        self._running: set[ort.RunOptions] = set()

    def run(
        self, session: ort.InferenceSession, outputs: list[str] | None, feeds: dict[str, np.ndarray]
    ) -> list[np.ndarray]:
        size = max((v.shape[-1] for v in feeds.values() if getattr(v, "ndim", 0) >= 2), default=None)
        run = run_options(self._options, size)
        with self._lock:
            self._running.add(run)
        try:
            return list(session.run(outputs, feeds, run))
        finally:
            with self._lock:
                self._running.discard(run)

    def interrupt(self) -> bool:
        """End the runs under way (they raise); False if none was."""
        with self._lock:
            for run in self._running:
                run.terminate = True
            return bool(self._running)


def _new_session(source: str | bytes, so: ort.SessionOptions, lock: bool = False) -> ort.InferenceSession:
    fix_mmap_threshold()
    weights = lock_weights(source, so) if lock and isinstance(source, str) else None
    session = ort.InferenceSession(source, sess_options=so, providers=["CPUExecutionProvider"])
    if weights is not None:
        # The maps and OrtValues must live as long as the session (else onnxruntime
        # reads freed memory): they travel with it.
        session.edgetts_locked_weights = weights
    return_free_heap()
    return session


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's malloc_trim, or None (musl, macOS)."""
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    trim = getattr(ctypes.CDLL(name), "malloc_trim", None)
    return cast("Callable[[int], int] | None", trim)


#: glibc's mallopt parameter, and the threshold it is fixed at (glibc's own starting value).
_M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD_BYTES = 128 * 1024


@functools.cache
def fix_mmap_threshold() -> bool:
    """Keep glibc's mmap threshold at 128 KiB for the process; True if it was set here.

    glibc raises the threshold each time an mmapped block is freed (up to 32 MB), so
    after the first sentences a run's activations (the arena's chunks, onnxruntime's
    buffers) come from the heap, where freed memory stays fragmented and counted; fixed,
    every large block is its own mapping and goes back to the system when freed.
    Measured (issue 14), the joe voice alone, 2 threads, peak RSS over the corpus:
    fast start 220-222 -> 178 MB, whole sentences 284-290 -> 275 MB, RTF the same
    within noise.  An operator's ``MALLOC_MMAP_THRESHOLD_`` is left in force.
    """
    if "MALLOC_MMAP_THRESHOLD_" in os.environ:
        return False
    name = ctypes.util.find_library("c")
    mallopt = getattr(ctypes.CDLL(name), "mallopt", None) if name is not None else None
    if mallopt is None:  # musl, macOS
        return False
    return bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES))


def return_free_heap() -> None:
    """Give the heap freed after parsing a model, or after a text's runs, back to the OS.

    Parsing the protobuf leaves several MB of free heap that glibc keeps; every
    later allocation (a sentence's activations) then stacks on top of it.
    Measured on the joe voice: RSS after load 138.6 -> 132.1 MB, peak over the
    corpus 276.3 -> 274.9 MB.  After a text, what the shrunken arena freed is
    mostly heap below glibc's (grown) mmap threshold: 203 -> 141 MB (issue 13).
    """
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


@dataclass(frozen=True)
class GraphTransform:
    """A change made to a model's graph before it runs (edgetts.voice.piper.seeded_model)."""

    tag: str
    """Part of the optimised-model cache key: a changed transform makes its entries anew."""
    apply: Callable[[Path], bytes | None]
    """The changed graph, serialised; None = the file runs as it is."""


def _source(model: Path, transform: GraphTransform | None) -> str | bytes:
    changed = None if transform is None else transform.apply(model)
    return str(model) if changed is None else changed


def _load_cached(
    model: Path, options: RuntimeOptions, cache_dir: Path, transform: GraphTransform | None
) -> ort.InferenceSession:
    """Load the optimised form of ``model`` from ``cache_dir``, making it on first use (one process
    at a time per model file: another's clean-up of stale forms must not delete the one loading)."""
    variant = "" if transform is None else transform.tag
    cached = cache_dir / cache_key(model, ort.__version__, options.optimization, variant)
    with exclusive(cache_dir, family(model)):
        return _load_or_make(model, options, cached, transform)


def _load_or_make(
    model: Path, options: RuntimeOptions, cached: Path, transform: GraphTransform | None
) -> ort.InferenceSession:
    cache_dir = cached.parent
    if cached.is_file():
        so = session_options(replace(options, optimization="disable"))
        try:
            return _new_session(str(cached), so, lock=options.lock)
        except Exception as err:  # a torn or stale cache entry: rebuild it below
            _LOGGER.warning("dropping unusable optimised model %s: %s", cached, err)
            cached.unlink(missing_ok=True)
    partial = cached.with_name(f".{cached.name}.{os.getpid()}.part")
    so = session_options(options)
    so.optimized_model_filepath = str(partial)
    source = _source(model, transform)
    session = _new_session(source, so)
    try:
        partial.replace(cached)  # atomic: another process never sees half a file
    except OSError as err:
        _LOGGER.debug("could not store optimised model %s: %s", cached, err)
        partial.unlink(missing_ok=True)
    for stale in stale_entries(cache_dir, model, cached.name):
        stale.unlink(missing_ok=True)
    if (options.lock or isinstance(source, bytes)) and cached.is_file():
        # Locked weights must be the ones of the file onnxruntime loads (names and
        # layout of the optimised graph): load the entry just written, locked.  A session
        # made from bytes keeps them for good (onnxruntime's InferenceSession holds its
        # model bytes: 75 MB of RSS more after a cold load of the seeded joe voice).
        del session, source
        return _new_session(str(cached), session_options(replace(options, optimization="disable")), lock=options.lock)
    return session


def create_session(
    model: Path | bytes,
    options: RuntimeOptions,
    *,
    cache_dir: Path | None = None,
    transform: GraphTransform | None = None,
) -> ort.InferenceSession:
    """Load an ONNX model on the CPU; any failure becomes a one-line :class:`VoiceError`.

    With ``cache_dir`` (a writable directory), the graph-optimised model is
    kept there and later loads skip the optimisation (see :mod:`.model_cache`).
    ``transform`` (a model file only) changes the graph first; the cache keeps the changed form.
    """
    what = str(model) if isinstance(model, Path) else "model bytes"
    try:
        if isinstance(model, Path) and not model.is_file():
            raise FileNotFoundError(str(model))
        if isinstance(model, Path) and options.optimization != "disable":
            usable = prepare_dir(cache_dir)
            if usable is not None:
                return _load_cached(model, options, usable, transform)
        source = _source(model, transform) if isinstance(model, Path) else model
        if options.lock and isinstance(source, bytes) and isinstance(model, Path):
            _LOGGER.warning("%s: weights not locked: a changed graph is locked only from the model cache", model)
        return _new_session(source, session_options(options), lock=options.lock)
    except FileNotFoundError as err:
        raise VoiceError(f"voice model not found: {what}") from err
    except Exception as err:  # onnxruntime raises its own types for corrupt models
        first_line = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise VoiceError(f"cannot load voice model {what}: {first_line}") from err
