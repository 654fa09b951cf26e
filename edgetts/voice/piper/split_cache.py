"""Splits of Piper voices kept between loads, and the sessions of a split voice.

A split is made once per voice file (seconds on a Pi: the graph is probed,
cut and checked, :mod:`.graph_split`) and kept in the model cache directory
beside the optimised models: three ``.onnx`` parts and a JSON of what is needed
to run them, written last so its presence means the parts are complete.  The
front folded at fast start's prefix length (:mod:`.front_fold`) is kept beside
it the same way: its ``.onnx`` and a JSON of its check (or why it failed).
"""

from __future__ import annotations

import json
import logging
import os
import platform
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort

from edgetts.errors import VoiceError
from edgetts.voice.model_cache import checksum, exclusive, prepare_dir
from edgetts.voice.onnx_session import RuntimeOptions, create_session
from edgetts.voice.piper import front_check, front_fold
from edgetts.voice.piper.graph_split import SPLIT_VERSION, MakeSession, SplitError, SplitModels, split_model
from edgetts.voice.piper.seeded_noise import SeededNoiseError

_LOGGER = logging.getLogger(__name__)

_PARTS = ("front", "flow", "tail")
# Voices whose split failed, so the fallback to whole sentences is logged once per process.
_FALLBACK_LOGGED: set[str] = set()
# Fronts (voice:length) that could not be folded, so that is logged once per process.
_FOLD_LOGGED: set[str] = set()


def _split_family(model_path: Path) -> str:
    """Shared by every split of one model file; unlike model_cache's names it has no ``-`` after the stem,
    so the optimised-model cache never mistakes a split for a stale entry of the voice."""
    return f"{model_path.name.removesuffix('.onnx')}.split-{checksum(str(model_path.resolve()))[:8]}-"


def _split_key(model_path: Path, margin: int, flow_margin: int) -> str:
    stat = model_path.stat()
    # A split is checked (and its gain measured) by running it on this machine's onnxruntime: one
    # made on an x86 build host and carried to an aarch64 board in a cache or an image was never
    # checked on the board's kernels, so the architecture and the runtime are part of the key.
    identity = "\n".join(
        [
            str(stat.st_size),
            str(stat.st_mtime_ns),
            SPLIT_VERSION,
            str(margin),
            str(flow_margin),
            platform.machine(),
            ort.__version__,
        ]
    )
    return f"{_split_family(model_path)}{checksum(identity)}"


@dataclass(frozen=True)
class _CacheEntry:
    """The files of one split in the cache: a JSON of its metadata and one model per part."""

    key: str
    meta: Path
    parts: dict[str, Path]

    @staticmethod
    def of(model_path: Path, cache_dir: Path, margin: int, flow_margin: int) -> _CacheEntry:
        key = _split_key(model_path, margin, flow_margin)
        return _CacheEntry(key, cache_dir / f"{key}.json", {p: cache_dir / f"{key}.{p}.onnx" for p in _PARTS})

    def read(self, model_path: Path) -> SplitModels | None:
        """The cached split, or None (not there, or unusable: then it is rebuilt)."""
        try:
            meta = json.loads(self.meta.read_text(encoding="utf-8"))
            has_flow = bool(meta["flow_inputs"])
            if all(p.is_file() for part, p in self.parts.items() if part != "flow" or has_flow):
                return SplitModels(
                    self.parts["front"],
                    self.parts["tail"],
                    tuple(meta["frame_inputs"]),
                    int(meta["hop"]),
                    int(meta["margin"]),
                    float(meta["gain"]),
                    self.parts["flow"] if has_flow else None,
                    tuple(meta["flow_inputs"]),
                    int(meta["flow_margin"]),
                    str(meta["durations"]),
                )
        except FileNotFoundError:
            pass
        except (OSError, ValueError, KeyError, TypeError) as err:
            _LOGGER.warning("rebuilding the unusable split of %s: %s", model_path, err)
        return None

    def write(self, model_path: Path, split: SplitModels, margin: int) -> None:
        """Store ``split`` (models as bytes); each file appears whole or not at all."""
        for part, data in (("front", split.front), ("flow", split.flow), ("tail", split.tail)):
            if isinstance(data, bytes):
                tmp = self.parts[part].with_name(f".{self.parts[part].name}.{os.getpid()}.part")
                tmp.write_bytes(data)
                tmp.replace(self.parts[part])
        meta = {
            "frame_inputs": list(split.frame_inputs),
            "hop": split.hop,
            "margin": margin,
            "gain": split.gain,
            "flow_inputs": list(split.flow_inputs),
            "flow_margin": split.flow_margin,
            "durations": split.durations,
            "source": str(model_path),
            "version": SPLIT_VERSION,
        }
        tmp = self.meta.with_name(f".{self.meta.name}.{os.getpid()}.part")
        tmp.write_text(json.dumps(meta), encoding="utf-8")
        tmp.replace(self.meta)  # written last: its presence means the models are complete


def load_split(
    model_path: Path,
    cache_dir: Path | None,
    check_feeds: Callable[[], Sequence[dict[str, np.ndarray]]],
    make_session: MakeSession,
    *,
    margin: int,
    flow_margin: int,
) -> SplitModels:
    """The split of ``model_path``: from ``cache_dir`` when there, else made (and stored there).

    Raises :class:`SplitError` when the graph cannot be split (not cached:
    a later edgetts may split it).
    """
    if cache_dir is None:
        return _made(model_path, check_feeds, make_session, margin, flow_margin)
    entry = _CacheEntry.of(model_path, cache_dir, margin, flow_margin)
    with exclusive(cache_dir, entry.key):  # one process makes it; the others then read it
        cached = entry.read(model_path)
        if cached is not None:
            return cached
        split = _made(model_path, check_feeds, make_session, margin, flow_margin)
        try:
            entry.write(model_path, split, margin)
        except OSError as err:
            _LOGGER.debug("could not store the split of %s: %s", model_path, err)
            return split
        for stale in cache_dir.glob(f"{_split_family(model_path)}*"):
            if not stale.name.startswith(entry.key):
                stale.unlink(missing_ok=True)
    return SplitModels(
        entry.parts["front"],
        entry.parts["tail"],
        split.frame_inputs,
        split.hop,
        margin,
        split.gain,
        entry.parts["flow"] if split.flow is not None else None,
        split.flow_inputs,
        split.flow_margin,
        split.durations,
    )


def _made(
    model_path: Path,
    check_feeds: Callable[[], Sequence[dict[str, np.ndarray]]],
    make_session: MakeSession,
    margin: int,
    flow_margin: int,
) -> SplitModels:
    try:
        split = split_model(model_path, check_feeds(), make_session, margin=margin, flow_margin=flow_margin)
    except SplitError:
        raise
    except SeededNoiseError as err:
        raise VoiceError(f"{model_path}: cannot seed the voice's noise: {err}") from err
    except Exception as err:  # onnx / onnxruntime on a graph the split did not foresee: speak whole sentences
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise SplitError(f"cannot split the graph: {first}") from err
    _LOGGER.info("split %s for streaming", model_path.name)
    return split


def discard_split(model_path: Path, cache_dir: Path | None, margin: int, flow_margin: int) -> None:
    """Delete the cached split of ``model_path`` (it failed to load: it is rebuilt next)."""
    if cache_dir is None:
        return
    key = _split_key(model_path, margin, flow_margin)
    with exclusive(cache_dir, key):
        for path in cache_dir.glob(f"{key}*"):
            path.unlink(missing_ok=True)


# -- the sessions --------------------------------------------------------------------
def open_split(
    model_path: Path,
    runtime: RuntimeOptions,
    cache_dir: Path | None,
    check_feeds: Callable[[], Sequence[dict[str, np.ndarray]]],
    *,
    margin: int,
    flow_margin: int,
    fold_lengths: Sequence[int] = (),
) -> tuple[SplitModels, Any, Any, Any] | None:
    """The split of a voice and its sessions (front, flow or None, tail), or None: the
    graph cannot be split and the voice speaks whole sentences (logged once).  ``fold_lengths``:
    runs of the front on so many ids run a front folded at that length (:mod:`.front_fold`)."""
    usable = prepare_dir(cache_dir)

    def make_session(source: bytes | Path) -> Any:
        return create_session(source, runtime)

    for attempt in (1, 2):
        try:
            models = load_split(model_path, usable, check_feeds, make_session, margin=margin, flow_margin=flow_margin)
            front = create_session(models.front, runtime, cache_dir=usable)
            flow = None if models.flow is None else create_session(models.flow, runtime, cache_dir=usable)
            tail = create_session(models.tail, runtime, cache_dir=usable)
            cached = None if usable is None else (usable, _split_key(model_path, margin, flow_margin))
            folded = _folded_fronts(model_path, models, runtime, cached, check_feeds, fold_lengths)
            return models, front_fold.FrontSessions(front, folded) if folded else front, flow, tail
        except SplitError as err:
            key = str(model_path.resolve())
            if key not in _FALLBACK_LOGGED:
                _FALLBACK_LOGGED.add(key)
                _LOGGER.warning("%s: streaming off, whole sentences only: %s", model_path, err)
            return None
        except VoiceError as err:
            if attempt == 2 or usable is None:
                raise
            _LOGGER.warning("rebuilding the unusable split of %s: %s", model_path, err)
            discard_split(model_path, usable, margin, flow_margin)
    return None


# -- the front at fixed lengths --------------------------------------------------------
def _folded_fronts(
    model_path: Path,
    models: SplitModels,
    runtime: RuntimeOptions,
    cached: tuple[Path, str] | None,
    check_feeds: Callable[[], Sequence[dict[str, np.ndarray]]],
    lengths: Sequence[int],
) -> dict[int, Any]:
    """Sessions of the split's front folded at ``lengths`` (``cached``: the cache and the split's key);
    a length that cannot be folded is left to the dynamic front (logged once), never failing the load."""
    source = models.front

    @cache
    def front() -> bytes:
        return source if isinstance(source, bytes) else Path(source).read_bytes()

    sessions = {}
    for length in sorted(set(lengths)):
        try:
            sessions[length] = _folded_front(front, length, runtime, cached, check_feeds)
        except Exception as err:  # the dynamic front runs it, as before
            label = f"{model_path.resolve()}:{length}"
            if label not in _FOLD_LOGGED:
                _FOLD_LOGGED.add(label)
                reason = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
                _LOGGER.warning("%s: the front at %d ids runs unfolded: %s", model_path.name, length, reason)
    return sessions


def _folded_front(
    front: Callable[[], bytes],
    length: int,
    runtime: RuntimeOptions,
    cached: tuple[Path, str] | None,
    check_feeds: Callable[[], Sequence[dict[str, np.ndarray]]],
) -> Any:
    """The session of the front folded at ``length``: from the cache, else made, checked and stored
    (its JSON last; a fold that failed its check is stored as failed, not made again at every load)."""
    if cached is None:
        return create_session(_fold_checked(front(), length, runtime, check_feeds)[0], runtime)
    cache_dir, key = cached
    stem = f"{key}.front{length}.fold{front_fold.FOLD_VERSION}"
    model, meta = cache_dir / f"{stem}.onnx", cache_dir / f"{stem}.json"
    with exclusive(cache_dir, stem):
        for attempt in (1, 2):
            try:
                done = json.loads(meta.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                done = None
            made = not isinstance(done, dict) or bool(done.get("ok") and not model.is_file())
            if made:
                done = _store_fold(front, length, runtime, check_feeds, model, meta)
            assert isinstance(done, dict)
            if not done.get("ok"):
                raise front_fold.FoldError(str(done.get("reason")))
            try:
                return create_session(model, runtime, cache_dir=cache_dir)
            except VoiceError:
                if made or attempt == 2:
                    raise
                _LOGGER.warning("rebuilding the unusable folded front %s", model)
                meta.unlink(missing_ok=True)
    raise AssertionError("unreachable")


def _store_fold(
    front: Callable[[], bytes],
    length: int,
    runtime: RuntimeOptions,
    check_feeds: Callable[[], Sequence[dict[str, np.ndarray]]],
    model: Path,
    meta: Path,
) -> dict[str, Any]:
    """Fold, check and store the front at ``length``; what the JSON (written last) says of it."""
    done: dict[str, Any] = {"length": length, "version": front_fold.FOLD_VERSION, "tolerance": front_fold.TOLERANCE}
    try:
        folded, diff = _fold_checked(front(), length, runtime, check_feeds)
    except front_fold.FoldError as err:
        done.update(ok=False, reason=str(err))
    else:
        tmp = model.with_name(f".{model.name}.{os.getpid()}.part")
        tmp.write_bytes(folded)
        tmp.replace(model)
        done.update(ok=True, max_abs_diff=diff)
    tmp = meta.with_name(f".{meta.name}.{os.getpid()}.part")
    tmp.write_text(json.dumps(done), encoding="utf-8")
    tmp.replace(meta)  # written last: its presence means the fold was made (or failed) for good
    stem = meta.name.removesuffix(".json")
    for stale in meta.parent.glob(f"{stem.rsplit('.fold', 1)[0]}.fold*"):
        if not stale.name.startswith((f"{stem}.", f"{stem}-")):  # an older FOLD_VERSION's
            stale.unlink(missing_ok=True)
    return done


def _fold_checked(
    front: bytes, length: int, runtime: RuntimeOptions, check_feeds: Callable[[], Sequence[dict[str, np.ndarray]]]
) -> tuple[bytes, float]:
    """The front folded at ``length`` and its largest difference from the dynamic front; FoldError if
    it cannot be made or differs (a lack of memory or disk passes up: it may work at the next load)."""
    try:
        folded = front_fold.fold_front(front, length)
        feeds = front_check.fold_feeds(check_feeds(), length)
        diff = front_check.check_folded(front, folded, feeds, lambda source: create_session(source, runtime))
    except (front_fold.FoldError, MemoryError, OSError):
        raise
    except Exception as err:  # onnx / onnxruntime on a graph the fold did not foresee
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise front_fold.FoldError(first) from err
    _LOGGER.info("folded the front at %d ids (largest difference %.3g)", length, diff)
    return folded, diff
