"""Voice weights locked in RAM, handed to onnxruntime without a copy.

A board that has been quiet for hours must speak as fast as one that spoke a
second ago: the weights must not have been paged out (file-backed pages are
dropped under memory pressure even without swap).  The pattern, verified on
onnxruntime 1.32 (``docs/edge-runtime.md``, measurements there):

1. map the model file ourselves, ``PROT_READ`` + ``MAP_SHARED``: the pages stay
   file-backed page cache (RssFile), no private copy;
2. ``mlock`` that map (not ``mlockall``: that also locks thread stacks, arena
   reservations and every library, and ``MCL_FUTURE`` makes every later
   allocation fail when ``RLIMIT_MEMLOCK`` is small);
3. wrap each initializer's bytes inside the map in an ``OrtValue``
   (``ortvalue_from_numpy`` wraps, it does not copy) and give it to the session
   with ``SessionOptions.add_initializer``, with ``session.disable_prepacking=1``
   (otherwise onnxruntime copies the weights into its prepack buffers).

4. an initializer already handed over for another live session, byte for byte the same (a split
   voice's front and the front folded at fast start's length share the encoder's weights), is
   given as the same ``OrtValue``: one copy in RAM, locked once (27 MB of the joe voice).

Piper voices embed their weights in the ``.onnx`` protobuf, so the offset of
each initializer's ``raw_data`` inside the file is found by walking the
protobuf wire format once (:func:`find_initializers`, ~10 ms, no ``onnx``
package needed).  The ``OrtValue`` objects and the map must stay referenced for
the session's lifetime (an unreferenced one segfaults inside
``InferenceSession``): :class:`LockedWeights` holds them.

Where locking is not permitted (an unprivileged user with the default
8 MiB ``RLIMIT_MEMLOCK``: ENOMEM; a limit of 0: EPERM) the weights are still
used zero-copy from the map, the daemon runs on and reports
:func:`degraded_reason` once.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import functools
import logging
import mmap
import os
import resource
import time
import weakref
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

_LOGGER = logging.getLogger(__name__)

#: The fix appended to every "cannot lock" reason (also in docs/edge-runtime.md).
LOCK_FIX = "fix: LimitMEMLOCK=infinity or AmbientCapabilities=CAP_IPC_LOCK"

# ONNX TensorProto.DataType -> numpy dtype (the types a voice may hold).
_DTYPES: dict[int, np.dtype[Any]] = {
    1: np.dtype("<f4"),
    2: np.dtype("u1"),
    3: np.dtype("i1"),
    4: np.dtype("<u2"),
    5: np.dtype("<i2"),
    6: np.dtype("<i4"),
    7: np.dtype("<i8"),
    9: np.dtype("?"),
    10: np.dtype("<f2"),
    11: np.dtype("<f8"),
    12: np.dtype("<u4"),
    13: np.dtype("<u8"),
}

#: Initializers smaller than this stay in the model (onnxruntime's own copy):
#: wrapping hundreds of scalars gains nothing and costs session-creation time.
MIN_BYTES = 4096


@dataclass(frozen=True)
class InitializerSpan:
    """Where one initializer's raw bytes sit inside an ``.onnx`` file."""

    name: str
    data_type: int
    """ONNX TensorProto data type (1 = float32)."""
    dims: tuple[int, ...]
    offset: int
    """Byte offset of ``raw_data`` in the file."""
    nbytes: int


class _Weight:
    """One initializer as handed to onnxruntime: the array in a model map and its ``OrtValue``."""

    def __init__(self, array: np.ndarray, value: Any) -> None:
        self.array, self.value = array, value


_LIVE: weakref.WeakValueDictionary[tuple[str, int, tuple[int, ...]], _Weight] = weakref.WeakValueDictionary()
"""The initializers of the live sessions' maps by (name, data type, dims): an entry goes with the last
LockedWeights holding it."""


@dataclass
class LockedWeights:
    """The model map and the ``OrtValue`` views a session computes from.

    Keep this object referenced as long as the session lives
    (:func:`edgetts.voice.onnx_session.create_session` stores it on the
    session); :meth:`close` only after the session is gone.
    """

    path: Path
    weight_bytes: int = 0
    """Bytes of initializers handed to onnxruntime from our map."""
    locked_bytes: int = 0
    """Bytes this object holds locked with mlock (0 when locking failed or was off)."""
    error: str | None = None
    """Why locking failed (with the fix), or None."""
    load_s: float = 0.0
    """Seconds spent parsing, mapping, locking and wrapping."""
    initializers: int = 0
    shared_bytes: int = 0
    """Bytes of initializers that are another live session's, handed over again (not mapped here)."""
    _map: mmap.mmap | None = field(default=None, repr=False)
    _weights: list[_Weight] = field(default_factory=list, repr=False)

    @property
    def degraded(self) -> dict[str, str] | None:
        """``{"what": "memory", "reason": ...}`` for the status topic, or None."""
        if self.error is None:
            return None
        return {"what": "memory", "reason": self.error}

    def close(self) -> None:
        """Unlock and unmap; only after the session using the weights is deleted."""
        self._weights.clear()
        if self._map is not None:
            try:
                self._map.close()  # munmap also drops the lock
            except BufferError:  # a view is still alive somewhere: leave it to the GC
                _LOGGER.debug("weights map of %s still referenced", self.path)
            self._map = None
        self.locked_bytes = 0


# ------------------------------------------------------------ protobuf walk


def _varint(buf: memoryview, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7


def _fields(buf: memoryview, start: int, end: int) -> Iterator[tuple[int, int, Any]]:
    """(field number, wire type, value or (offset, length)) of one message."""
    pos = start
    while pos < end:
        key, pos = _varint(buf, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(buf, pos)
            yield number, wire, value
        elif wire == 2:
            length, pos = _varint(buf, pos)
            yield number, wire, (pos, length)
            pos += length
        elif wire == 1:
            pos += 8
        elif wire == 5:
            pos += 4
        else:
            raise ValueError(f"unsupported protobuf wire type {wire} at byte {pos}")


def _tensor(buf: memoryview, start: int, end: int) -> InitializerSpan | None:
    name = ""
    data_type = 0
    dims: list[int] = []
    raw: tuple[int, int] | None = None
    external = False
    for number, wire, value in _fields(buf, start, end):
        if number == 1:  # dims: packed or not
            if wire == 0:
                dims.append(value)
            else:
                p, n = value
                while p < value[0] + n:
                    d, p = _varint(buf, p)
                    dims.append(d)
        elif number == 2 and wire == 0:
            data_type = value
        elif number == 8 and wire == 2:
            p, n = value
            name = bytes(buf[p : p + n]).decode("utf-8")
        elif number == 9 and wire == 2:
            raw = value
        elif number == 14 and wire == 0:
            external = value == 1
    if raw is None or external:
        return None  # typed fields (float_data, ...) or external data: left to onnxruntime
    return InitializerSpan(name, data_type, tuple(dims), raw[0], raw[1])


def find_initializers(model: Path) -> list[InitializerSpan]:
    """Every initializer of ``model`` whose bytes are embedded as ``raw_data``.

    ModelProto.graph is field 7, GraphProto.initializer field 5,
    TensorProto.{dims 1, data_type 2, name 8, raw_data 9, data_location 14}.
    """
    with open(model, "rb") as fh, mmap.mmap(fh.fileno(), 0, prot=mmap.PROT_READ) as mm:
        buf = memoryview(mm)
        try:
            spans: list[InitializerSpan] = []
            for number, wire, value in _fields(buf, 0, len(buf)):
                if number != 7 or wire != 2:
                    continue
                g_start, g_len = value
                for gnum, gwire, gvalue in _fields(buf, g_start, g_start + g_len):
                    if gnum == 5 and gwire == 2:
                        span = _tensor(buf, gvalue[0], gvalue[0] + gvalue[1])
                        if span is not None:
                            spans.append(span)
            return spans
        finally:
            buf.release()


# ------------------------------------------------------------------ locking


@functools.cache
def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)


def _mlock(addr: int, length: int) -> int:
    """0, or the errno of mlock(2)."""
    libc = _libc()
    libc.mlock.argtypes = (ctypes.c_void_p, ctypes.c_size_t)
    if libc.mlock(ctypes.c_void_p(addr), ctypes.c_size_t(length)) == 0:
        return 0
    return ctypes.get_errno()


def read_vmlck(status: str | os.PathLike[str] = "/proc/self/status") -> int:
    """Bytes this process has locked in RAM (``VmLck``); 0 where unknown."""
    try:
        with open(status, encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmLck:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def _limit_text() -> str:
    soft, _hard = resource.getrlimit(resource.RLIMIT_MEMLOCK)
    return "unlimited" if soft == resource.RLIM_INFINITY else f"{soft // 1024} KiB"


def degraded_reason(err: int, needed: int) -> str:
    """The one-line reason (with the fix) reported when locking ``needed`` bytes failed.

    Example: ``cannot lock voice weights in RAM (mlock: ENOMEM, 59.7 MiB needed,
    RLIMIT_MEMLOCK 8192 KiB); fix: LimitMEMLOCK=infinity or AmbientCapabilities=CAP_IPC_LOCK``
    """
    name = errno.errorcode.get(err, str(err))
    return (
        f"cannot lock voice weights in RAM (mlock: {name}, {needed / 2**20:.1f} MiB needed, "
        f"RLIMIT_MEMLOCK {_limit_text()}); {LOCK_FIX}"
    )


def shortfall_reason(locked: int, needed: int) -> str:
    """The degraded reason when less than ``needed`` bytes ended up locked (VmLck ``locked``)."""
    return (
        f"voice weights not locked in RAM (VmLck {locked / 2**20:.1f} MiB of {needed / 2**20:.1f} MiB, "
        f"RLIMIT_MEMLOCK {_limit_text()}); {LOCK_FIX}"
    )


def _already_live(fd: int, spans: list[InitializerSpan]) -> dict[str, _Weight]:
    """The spans whose bytes (read from ``fd``, not through a map: nothing of this file becomes
    resident) equal those of a live initializer of the same name, type and shape."""
    found = {}
    for span in spans:
        weight = _LIVE.get((span.name, span.data_type, span.dims))
        if weight is not None and weight.array.nbytes == span.nbytes:
            data = np.frombuffer(os.pread(fd, span.nbytes, span.offset), dtype=np.uint8)
            if np.array_equal(weight.array.reshape(-1).view(np.uint8), data):
                found[span.name] = weight
    return found


def _own_ranges(spans: list[InitializerSpan], shared: dict[str, _Weight]) -> list[tuple[int, int]]:
    """Page-aligned (start, end) byte ranges covering the spans not in ``shared``; with none shared,
    the one range from the first initializer's page to the last one's end."""
    ranges: list[tuple[int, int]] = []
    run: tuple[int, int] | None = None
    for span in sorted(spans, key=lambda s: s.offset):
        if span.name in shared:
            if run is not None:
                ranges.append(run)
            run = None
            continue
        lo = span.offset & ~(mmap.PAGESIZE - 1)
        run = (lo, span.offset + span.nbytes) if run is None else (run[0], span.offset + span.nbytes)
    if run is not None:
        ranges.append(run)
    return ranges


def lock_weights(
    model: str | os.PathLike[str],
    so: Any,
    *,
    lock: bool = True,
    min_bytes: int = MIN_BYTES,
) -> LockedWeights:
    """Map ``model``'s initializers, mlock them and register them on ``so``.

    ``so`` is the ``onnxruntime.SessionOptions`` the session for ``model`` (the
    very file: names must match, so pass the file onnxruntime will load, e.g.
    the cached optimised model) is built with; ``session.disable_prepacking``
    is set on it.  ``lock=False`` keeps the zero-copy map without locking.
    Never raises for a refused lock: the result's ``error`` says why; a
    malformed file raises ``ValueError``/``OSError`` before ``so`` is touched.
    """
    import onnxruntime as ort

    started = time.perf_counter()
    path = Path(model)
    spans = [s for s in find_initializers(path) if s.nbytes >= min_bytes and s.data_type in _DTYPES]
    result = LockedWeights(path=path)
    if not spans:
        result.load_s = time.perf_counter() - started
        return result
    with open(path, "rb") as fh:
        # MAP_SHARED + PROT_READ: locked pages stay the page cache's, no private copy.
        mm = mmap.mmap(fh.fileno(), 0, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ)
        shared = _already_live(fh.fileno(), spans)
    result._map = mm
    base = np.frombuffer(mm, dtype=np.uint8)
    if lock:
        for lo, hi in _own_ranges(spans, shared):
            err = _mlock(base.ctypes.data + lo, hi - lo)
            if err != 0:
                result.error = degraded_reason(err, hi - lo)
                break
            result.locked_bytes += hi - lo
    so.add_session_config_entry("session.disable_prepacking", "1")
    for span in spans:
        weight = shared.get(span.name)
        if weight is None:
            array = base[span.offset : span.offset + span.nbytes].view(_DTYPES[span.data_type]).reshape(span.dims)
            weight = _Weight(array, ort.OrtValue.ortvalue_from_numpy(array))
            _LIVE.setdefault((span.name, span.data_type, span.dims), weight)  # the first holder stays
        else:
            result.shared_bytes += span.nbytes
        result._weights.append(weight)  # referenced, or InferenceSession segfaults
        so.add_initializer(span.name, weight.value)
        result.weight_bytes += span.nbytes
    result.initializers = len(spans)
    result.load_s = time.perf_counter() - started
    if result.error is not None:
        _LOGGER.warning("%s", result.error)
    return result
