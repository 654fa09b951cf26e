"""`voice.degrade_to: int8`: the voice's own static int8 variant, made on this board on first need.

The variant (edgetts.voice.piper.int8_variant) is made by ``edgetts quantize --static --cache``,
by hand or by :class:`Int8Builder` here: the first time a voice is found too slow and its variant
is not in the model cache, a subprocess makes it at idle priority (it runs only while nothing
else wants the CPU: about a minute of a fast core, several minutes of a board's, and a few hundred
MB while it calibrates) and the loop builds its assets again when it is there.  Meanwhile the
voice goes on speaking, as it would with no variant.  A board that never struggles never spends
that time or memory.
"""

from __future__ import annotations

import logging
import os
import subprocess
import threading
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from edgetts.config import Config, VoiceModelSettings
from edgetts.daemon.pacing.variants import LazyVoice, variant_key
from edgetts.engine import Voice
from edgetts.vocabulary import DEGRADE_INT8

_LOGGER = logging.getLogger(__name__)

FASTER = 0.95
"""The most of its voice's time (as its maker measured it) an int8 variant may take to be spoken
with: one no faster would trade the voice's exact samples, and maybe its streaming, for nothing."""


@dataclass(frozen=True)
class Int8Wanted:
    """A voice whose int8 variant is not made yet: its model, and where the variant goes."""

    model: Path
    output: Path


@dataclass(frozen=True)
class Int8Built:
    """To the loop: a variant was made (``reason`` None) or could not be (why)."""

    output: Path
    reason: str | None


def int8_variants(
    config: Config, voices: dict[str, Voice], load: Callable[[str, VoiceModelSettings], Voice]
) -> tuple[dict[str, Voice], dict[str, Int8Wanted]]:
    """For each Piper voice with `degrade_to: int8`: its variant (by variant_key, loaded by ``load``
    when it first speaks) where the cache has it, else what making it needs."""
    from edgetts.voice.model_cache import default_cache_dir

    cache = default_cache_dir()
    found: dict[str, Voice] = {}
    wanted: dict[str, Int8Wanted] = {}
    if cache is None:
        return found, wanted
    from edgetts.voice.piper.int8_variant import int8_path, speed_ratio

    for name, settings in config.all_voices().items():
        model = getattr(voices.get(name), "model_path", None)
        if settings.degrade_to != DEGRADE_INT8 or not isinstance(model, Path) or not model.is_file():
            continue  # (not loaded, or not a Piper voice file: nothing to quantize)
        try:
            path = int8_path(model, cache)
        except OSError as exc:
            _LOGGER.warning("voice %s: no int8 variant (%s)", name, exc)
            continue
        if not path.is_file():
            wanted[name] = Int8Wanted(model, path)
            continue
        ratio = speed_ratio(path)
        if ratio is None or ratio > FASTER:
            said = "no measured speed" if ratio is None else f"{ratio:.2f}x the voice's time where it was made"
            _LOGGER.info("voice %s: its int8 variant is not faster here (%s): not used", name, said)
            continue
        key = variant_key(name)
        settings = replace(settings, model=str(path), degrade_to=None, accelerator="cpu")
        found[key] = LazyVoice(path, voices[name].sample_rate, _loader(load, key, settings), ratio)
    return found, wanted


def _loader(
    load: Callable[[str, VoiceModelSettings], Voice], key: str, settings: VoiceModelSettings
) -> Callable[[], Voice]:
    return lambda: load(key, settings)


def derived_measures(variants: dict[str, Voice], level: dict[str, float | None], cost: dict[str, float]) -> None:
    """Loudness and cost of each int8 variant not loaded yet, from its voice's: the variant keeps the
    voice's loudness (within a dB: the quality gate), and costs the ratio its maker measured."""
    for key, voice in variants.items():
        if not isinstance(voice, LazyVoice) or key in level:
            continue
        name = key.removesuffix("/degrade_to")
        level[key] = level.get(name)
        if name in cost:
            cost[key] = cost[name] * voice.cost_ratio


class Int8Builder:
    """Makes int8 variants, one subprocess at a time, each at most once per daemon run."""

    def __init__(self, post: Callable[[Any], None], command: Callable[[Path, Path], list[str]] | None = None) -> None:
        from edgetts.voice.piper.int8_variant import build_command

        self._post = post
        self._command = command or build_command
        self._asked: set[Path] = set()
        self._proc: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()
        self._one = threading.Lock()
        """Held while a variant is made: two at once would only share the idle CPU and double the memory."""
        self._stopping = False

    def request(self, wanted: Int8Wanted) -> bool:
        """Make ``wanted`` in the background unless it was asked for already; True if started now."""
        with self._lock:
            if wanted.output in self._asked or self._stopping:
                return False
            self._asked.add(wanted.output)
        _LOGGER.warning("making the int8 variant of %s at idle priority (%s)", wanted.model.name, wanted.output)
        threading.Thread(target=self._make, args=(wanted,), name="edgetts-int8", daemon=True).start()
        return True

    def _make(self, wanted: Int8Wanted) -> None:
        with self._one:
            with self._lock:  # (started under the lock: a stop meanwhile finds it, or prevents it)
                if self._stopping:
                    return
                try:
                    self._proc = proc = subprocess.Popen(
                        self._command(wanted.model, wanted.output),
                        stdin=subprocess.DEVNULL,
                        stdout=subprocess.DEVNULL,
                        stderr=subprocess.PIPE,
                        # (two system calls in the child before exec, no lock taken: safe beside threads)
                        preexec_fn=_idle,  # noqa: PLW1509
                    )
                except OSError as exc:
                    self._post(Int8Built(wanted.output, f"cannot start it: {exc}"))
                    return
            self._wait(wanted, proc)

    def _wait(self, wanted: Int8Wanted, proc: subprocess.Popen[bytes]) -> None:
        _, err = proc.communicate()
        with self._lock:
            self._proc = None
        said = err.decode("utf-8", "replace").strip().splitlines()
        if proc.returncode == 0 and wanted.output.is_file():
            self._post(Int8Built(wanted.output, None))
        else:
            self._post(Int8Built(wanted.output, said[-1] if said else f"exit status {proc.returncode}"))

    def stop(self) -> None:
        """End a variant being made (the daemon stops: it is made again on a later need)."""
        with self._lock:
            self._stopping = True
            proc = self._proc
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                proc.kill()


def _idle() -> None:
    """In the child: the lowest CPU priority there is (SCHED_IDLE), and nice 19 where that is refused."""
    try:
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    except (OSError, AttributeError):
        pass
    try:
        os.nice(19)
    except OSError:
        pass


__all__ = ["FASTER", "Int8Builder", "Int8Built", "Int8Wanted", "derived_measures", "int8_variants"]
