"""What the daemon plays from, built from a Config in one place.

The voices, each voice's loudness and phrase-cache digest, the clip library,
the phrase cache and the compiled fallback rules: :func:`build_assets` makes
them at start-up (a voice that does not load is left out and the reason kept:
the announcer runs on clips, issue 6) and on reload (strict: a voice that
fails refuses the reload; what the new config did not change is reused).
`edgetts render` loads its voices with :func:`load_configured_voice` too, so
both speak, and key the phrase cache, alike.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from edgetts.audio.loudness import loudness_dbfs
from edgetts.config import Config, VoiceModelSettings
from edgetts.daemon.health import Problem
from edgetts.daemon.languages import LanguageChoice, MixedPrepared, build_choice
from edgetts.daemon.pacing.int8 import Int8Wanted, derived_measures, int8_variants
from edgetts.daemon.pacing.variants import LazyVoice, Variant, file_variants, find_variant
from edgetts.daemon.playout.clips import ClipLibrary
from edgetts.daemon.playout.fallback import CompiledRule, compile_rules
from edgetts.daemon.playout.phrase_cache import PhraseCache, phrase_key, voice_hash, voice_synthesis_config
from edgetts.engine import PreparesText, SynthesisConfig, Voice
from edgetts.errors import EdgeTTSError
from edgetts.runtime.memlock import MIN_BYTES, find_initializers, read_vmlck, shortfall_reason
from edgetts.text.prepare import Prepared, TextOptions, prepare_text

_LOGGER = logging.getLogger(__name__)

#: Spoken once per voice at load: its loudness (edgetts.audio.loudness) is what clips are matched to
#: when loudness/target_dbfs is null, and the run warms the voice up for the first announcement.
CALIBRATION_TEXT = "Attention please: the next train to the city centre will depart from platform two."

#: Sample rate of the device when neither audio/sample_rate nor a default voice gives one.
FALLBACK_RATE = 22050

#: Loudness clips get when the target is the default voice's level but no voice loaded.
FALLBACK_DBFS = -20.0


@dataclass(frozen=True)
class VoiceRuntime:
    """Where a voice's inference runs and whether its weights are locked."""

    cores: tuple[int, ...] | None = None
    lock: bool = False


VoiceLoader = Callable[[VoiceModelSettings, TextOptions, VoiceRuntime], Voice]


def load_configured_voice(
    settings: VoiceModelSettings, text: TextOptions, runtime: VoiceRuntime = VoiceRuntime()
) -> Voice:
    """The real voice loader (edgetts.voice.catalog), as the daemon and `edgetts render` use it."""
    from edgetts.voice.catalog import load_voice, search_dirs  # onnxruntime: only when a voice is loaded

    voice = load_voice(
        settings.model,
        threads=settings.threads,
        text=text,
        cores=runtime.cores,
        lock=runtime.lock,
        streaming=settings.streaming,
        parallel=settings.parallel,
        fast_start_ids=settings.fast_start_ids,
        max_sentence_ids=settings.max_sentence_ids,
    )
    if settings.accelerator == "npu":
        from edgetts.voice.accel.npu import attach_npu
        from edgetts.voice.piper.voice import PiperVoice

        if isinstance(voice, PiperVoice):
            attach_npu(voice, search_dirs(), core_mask=settings.npu_core_mask)
        else:  # an autoregressive voice: the NPU runs Piper windows only
            _LOGGER.warning("voice %s: accelerator npu applies to Piper voices only; it runs on the CPU", voice.name)
    return voice


def npu_problem(voices: dict[str, Voice]) -> str | None:
    """`degraded: npu`: why a voice configured for the NPU speaks on the CPU (asked again at each status:
    an inference may fail while the daemon runs, edgetts.voice.accel.npu)."""
    reasons = [
        f"voice {name}: {problem}"
        for name, voice in voices.items()
        if (problem := getattr(getattr(voice, "accelerator", None), "problem", None))
    ]
    return "; ".join(reasons) or None


@dataclass(frozen=True)
class Loading:
    """How the daemon loads voices: the loader, and where their inference runs."""

    loader: VoiceLoader
    runtime: VoiceRuntime
    threads: int
    """Threads of a voice whose `threads` is not set: the topology's choice, not one per core of the box."""


def load_voices(todo: dict[str, VoiceModelSettings], text: TextOptions, loading: Loading) -> dict[str, Voice]:
    """Every voice of ``todo``; the first that fails raises EdgeTTSError naming it."""
    out = {}
    for name, settings in todo.items():
        t0 = time.monotonic()
        if settings.threads is None:
            settings = replace(settings, threads=loading.threads)
        try:
            out[name] = loading.loader(settings, text, loading.runtime)
        except EdgeTTSError as exc:
            raise type(exc)(f"voice {name!r} ({settings.model}): {exc}") from None
        _LOGGER.info("voice %s loaded from %s in %.2f s", name, settings.model, time.monotonic() - t0)
    return out


def measure_voice(voice: Voice, config: SynthesisConfig) -> float | None:
    """The voice's loudness on CALIBRATION_TEXT (dBFS, edgetts.audio.loudness); None if it cannot speak it."""
    return calibrate(voice, config)[0]


def calibrate(voice: Voice, config: SynthesisConfig) -> tuple[float | None, float | None]:
    """The voice's loudness on CALIBRATION_TEXT and its real-time factor there (None, None if it cannot).

    The RTF is the voice's cost at load: how the daemon compares a voice with its faster
    variant while only one of them speaks (edgetts.daemon.pacing.speed).
    """
    t0 = time.perf_counter()
    try:
        chunks = list(voice.synthesize(CALIBRATION_TEXT, config))
    except Exception as exc:  # a voice that cannot speak shows at the first announcement (fallback)
        _LOGGER.warning("voice %s: loudness not measured: %s", voice.name, exc)
        return None, None
    elapsed = time.perf_counter() - t0
    audio_s = sum(c.duration_s for c in chunks)
    if not chunks or audio_s <= 0:
        return None, None
    return loudness_dbfs(np.concatenate([c.audio for c in chunks]), chunks[0].sample_rate), elapsed / audio_s


@dataclass(frozen=True)
class Assets:
    """Everything an announcement may be played from; swapped whole on reload."""

    config: Config
    text: TextOptions = field(default_factory=TextOptions)
    """``config.text_options()``, made once: every voice and every announcement's text is prepared with it."""
    voices: dict[str, Voice] = field(default_factory=dict)
    voice_errors: dict[str, str] = field(default_factory=dict)
    """Why each configured voice that is not in ``voices`` (or .onnx variant not in ``variants``) did not load."""
    variants: dict[str, Voice] = field(default_factory=dict)
    """The .onnx `degrade_to` variants, by edgetts.daemon.pacing.variants.variant_key."""
    level_dbfs: dict[str, float | None] = field(default_factory=dict)
    """Loudness of each voice (and .onnx variant) on CALIBRATION_TEXT."""
    speed_cost: dict[str, float] = field(default_factory=dict)
    """Real-time factor of each voice (and .onnx variant) on CALIBRATION_TEXT at load."""
    digest: dict[str, str] = field(default_factory=dict)
    """edgetts.daemon.playout.phrase_cache.voice_hash of each voice (only with a phrase cache)."""
    clips: ClipLibrary = field(default_factory=lambda: ClipLibrary(None, FALLBACK_RATE, None))
    cache: PhraseCache | None = None
    rules: tuple[CompiledRule, ...] = ()
    languages: LanguageChoice | None = None
    """With `voice.model: auto`: which voice speaks a text, by its language (edgetts.daemon.languages)."""
    int8_wanted: dict[str, Int8Wanted] = field(default_factory=dict)
    """Voices whose `degrade_to: int8` variant is not made yet (edgetts.daemon.pacing.int8)."""
    problems: dict[str, Problem] = field(default_factory=dict)
    """`degraded` entries these assets decide (voice, clips, cache, npu): the reason, or None when fine,
    or what tells it at each status (edgetts.daemon.health.Problem)."""

    @property
    def default_voice(self) -> Voice | None:
        return self.voices.get(self.config.voice.name)

    def voice_named(self, wanted: str) -> str | None:
        """The configured voice ``wanted`` means: a configured name, else the name of the installed voice
        (e.g. de_DE-thorsten-medium) a configured voice speaks with; None when neither."""
        configured = self.config.all_voices()
        if wanted in configured:
            return wanted
        for name, settings in configured.items():
            voice = self.voices.get(name)
            if (voice.name if voice is not None else settings.model) == wanted:
                return name
        return None

    @property
    def default_rate(self) -> int:
        """The device rate when audio/sample_rate is not set: the default voice's."""
        default = self.default_voice
        return default.sample_rate if default is not None else FALLBACK_RATE

    def text_for(self, voice_name: str) -> TextOptions:
        """What ``voice_name`` prepares text with: ``text`` in the voice's language (issue 16)."""
        voice = self.voices.get(voice_name)
        return voice.text_options if isinstance(voice, PreparesText) else self.text

    def prepare(self, voice_name: str, text: str) -> Prepared:
        """``text`` prepared as ``voice_name`` reads it (with ``text`` when that voice is not loaded);
        raises SSMLError for bad SSML, UnspeakableTextError for a script the voice cannot speak."""
        voice = self.voices.get(voice_name)
        return voice.prepare(text) if isinstance(voice, PreparesText) else prepare_text(text, self.text)

    def speech_gain(self, voice_name: str) -> float:
        """The constant gain that brings ``voice_name`` to loudness/target_dbfs (1.0 without a target)."""
        target = self.config.loudness.target_dbfs
        level = self.level_dbfs.get(voice_name)
        if target is None or level is None:
            return 1.0
        return float(10 ** ((target - level) / 20))

    def variant(self, name: str) -> Variant | None:
        """What speaks for voice ``name`` while it is too slow (its `degrade_to`), if that is loaded."""
        found = find_variant(self.config, name, self.voices, self.variants)
        if found is None:
            return None
        label, key, voice, settings = found
        return Variant(label, key, voice, voice_synthesis_config(settings), self.speech_gain(key))

    def cache_key(self, voice_name: str, text: Prepared, config: SynthesisConfig) -> str | None:
        """The phrase-cache key of ``text`` in ``voice_name``; None without a cache or the voice's digest."""
        digest = self.digest.get(voice_name)
        if self.cache is None or digest is None or isinstance(text, MixedPrepared):
            return None  # (a text of several voices: one voice's digest does not key it)
        return phrase_key(self.config, voice_name, digest, text, config)


def build_assets(config: Config, loading: Loading, previous: Assets | None = None) -> Assets:
    """The assets of ``config``: at start-up (``previous`` None) or on reload (``previous`` = those in use).

    On reload a voice that fails raises EdgeTTSError (the reload is refused);
    voices, loudness, digests and the phrase cache the new config did not
    change are taken from ``previous``.
    """
    text = config.text_options()
    if previous is None:
        voices, errors = _load_tolerant(config, text, loading)
        files, file_errors = _load_files(config, text, loading, None)
        errors.update(file_errors)
        int8, wanted = _int8(config, text, loading, voices)
        files.update(int8)
        level, digest, cost = _measure(config, voices, files, ({}, {}, {}))
        cache, cache_problem = _open_cache(config)
    else:
        voices, keep = _reload_voices(config, text, loading, previous)
        files, errors = _load_files(config, text, loading, previous)
        int8, wanted = _int8(config, text, loading, voices)
        # (a variant already loaded is kept, as long as it is the same file for the same voice)
        files.update({k: _same(previous.variants.get(k), v) for k, v in int8.items()})
        keep |= set(files) & set(previous.variants)
        same_cache = config.cache == previous.config.cache
        kept = (
            {n: v for n, v in previous.level_dbfs.items() if n in keep},
            {n: v for n, v in previous.digest.items() if n in keep and same_cache},
            {n: v for n, v in previous.speed_cost.items() if n in keep},
        )
        level, digest, cost = _measure(config, voices, files, kept)
        if same_cache:
            old = previous.problems.get("cache")
            cache, cache_problem = previous.cache, old if isinstance(old, str) else None
        else:
            cache, cache_problem = _open_cache(config)
    derived_measures(files, level, cost)
    assets = Assets(
        config,
        text,
        voices,
        errors,
        files,
        level,
        cost,
        digest,
        cache=cache,
        rules=compile_rules((r.match, r.clip) for r in config.fallback.rules),
        int8_wanted=wanted,
    )
    clips = _clip_library(config, config.audio.sample_rate or assets.default_rate, level)  # the device rate
    choice, choice_problem = _language_choice(config, previous)
    problems: dict[str, Problem] = {
        "voice": "; ".join([*errors.values(), *([choice_problem] if choice_problem else [])]) or None,
        "clips": _clip_problem(config, clips),
        "cache": cache_problem,
        "npu": lambda: npu_problem(voices),
    }
    return replace(assets, clips=clips, languages=choice, problems=problems)


def _language_choice(config: Config, previous: Assets | None) -> tuple[LanguageChoice | None, str | None]:
    """`voice.model: auto`'s choice of voice; without its identifier (not installed), the default
    voice speaks everything and `degraded: voice` says why."""
    try:
        return build_choice(config, previous.languages if previous is not None else None), None
    except ImportError as exc:
        _LOGGER.error("voice.model auto: no language identifier: %s", exc)
        return None, f"no language identifier ({exc}): every text is spoken by voice {config.voice.name}"


def _load_tolerant(config: Config, text: TextOptions, loading: Loading) -> tuple[dict[str, Voice], dict[str, str]]:
    """Every voice that loads, and why each other one did not."""
    voices: dict[str, Voice] = {}
    errors: dict[str, str] = {}
    for name, settings in config.all_voices().items():
        try:
            voices.update(load_voices({name: installed_model(config, settings)}, text, loading))
        except EdgeTTSError as exc:
            _LOGGER.error("%s", exc)
            errors[name] = str(exc)
    return voices, errors


def _reload_voices(
    config: Config, text: TextOptions, loading: Loading, previous: Assets
) -> tuple[dict[str, Voice], set[str]]:
    """Voices (loaded or kept) for a reload to ``config``, and the names of those kept."""
    old = previous.config
    old_voices, new_voices = old.all_voices(), config.all_voices()
    same_text = _same_text(old, config)
    keep = {n: v for n, v in previous.voices.items() if same_text and old_voices.get(n) == new_voices.get(n)}
    todo = {n: installed_model(config, s) for n, s in new_voices.items() if n not in keep}
    return {**keep, **load_voices(todo, text, loading)}, set(keep)


def installed_model(config: Config, settings: VoiceModelSettings) -> VoiceModelSettings:
    """``settings`` with a voice name installed in voices/dir (`edgetts voices install`) given as its
    model file: the loader's own search folders do not know the config's (a voice elsewhere is left
    to the loader, which finds it or says why not)."""
    from edgetts.voice.install.store import VoiceStore  # the folder only: no onnxruntime, no urllib

    voice = VoiceStore(config.voices_dir()).find(settings.model)
    return settings if voice is None else replace(settings, model=str(voice.model))


def _same_text(old: Config, new: Config) -> bool:
    # Text settings live in each voice's front end: a change reloads them all.
    return (old.normalize, old.lexicon) == (new.normalize, new.lexicon)


def _load_files(
    config: Config, text: TextOptions, loading: Loading, previous: Assets | None
) -> tuple[dict[str, Voice], dict[str, str]]:
    """The .onnx degrade_to variants, and why each that did not load failed (on reload: raises)."""
    # A .onnx variant runs on the CPU: NPU models are converted from one voice file, the voice's own.
    todo = {key: replace(settings, accelerator="cpu") for key, settings in file_variants(config).items()}
    files: dict[str, Voice] = {}
    if previous is not None and _same_text(previous.config, config):
        old = {k: replace(v, accelerator="cpu") for k, v in file_variants(previous.config).items()}
        files = {k: v for k, v in previous.variants.items() if k in todo and old.get(k) == todo[k]}
    errors: dict[str, str] = {}
    for key, settings in todo.items():
        if key in files:
            continue
        try:
            files.update(load_voices({key: settings}, text, loading))
        except EdgeTTSError as exc:
            if previous is not None:
                raise  # a reload is strict, as for voices
            _LOGGER.error("%s", exc)
            errors[key] = str(exc)
    return files, errors


def _int8(
    config: Config, text: TextOptions, loading: Loading, voices: dict[str, Voice]
) -> tuple[dict[str, Voice], dict[str, Int8Wanted]]:
    """The `degrade_to: int8` variants in the cache (each loaded when it first speaks), and those not made."""

    def load(key: str, settings: VoiceModelSettings) -> Voice:
        return load_voices({key: settings}, text, loading)[key]

    return int8_variants(config, voices, load)


def _same(old: Voice | None, new: Voice) -> Voice:
    """``old`` if it is the same lazily loaded file as ``new`` (its loaded voice is kept)."""
    if isinstance(old, LazyVoice) and isinstance(new, LazyVoice) and old.path == new.path:
        return old
    return new


Measured = tuple[dict[str, float | None], dict[str, str], dict[str, float]]


def _measure(config: Config, voices: dict[str, Voice], files: dict[str, Voice], kept: Measured) -> Measured:
    """Loudness and cost (CALIBRATION_TEXT, also a warm-up run) and, with a cache, the hash of
    each voice not in ``kept`` (loudness, digests, costs); .onnx variants get no hash (never cached)."""
    level, digest, cost = dict(kept[0]), dict(kept[1]), dict(kept[2])
    cache_on = config.cache.resolved_dir() is not None
    settings = {**config.all_voices(), **file_variants(config)}
    for name, voice in {**voices, **files}.items():
        if isinstance(voice, LazyVoice):
            continue  # (not loaded until it speaks: derived from its voice's, derived_measures)
        if name not in level:
            level[name], rtf = calibrate(voice, voice_synthesis_config(settings[name]))
            if rtf is not None:
                cost[name] = rtf
        if cache_on and name in voices and name not in digest:
            try:
                digest[name] = voice_hash(voice)
            except OSError as exc:
                _LOGGER.warning("voice %s: no phrase cache (cannot hash its files: %s)", name, exc)
    return level, digest, cost


def _clip_library(config: Config, rate: int, level: dict[str, float | None]) -> ClipLibrary:
    target = config.loudness.target_dbfs
    if target is None:
        target = level.get(config.voice.name) or FALLBACK_DBFS
    return ClipLibrary(config.clips.dir, rate, target).load()


def _clip_problem(config: Config, clips: ClipLibrary) -> str | None:
    """`degraded: clips`: configured fallback clips that are missing, and unreadable files."""
    fb = config.fallback
    wanted = [fb.default_clip, *(r.clip for r in fb.rules)]
    missing = sorted({n for n in wanted if n is not None and n not in clips})
    parts = []
    if missing:
        parts.append(f"fallback clips not in clips/dir: {', '.join(missing)}")
    if clips.problems:
        parts.append("; ".join(f"{name}: {why}" for name, why in sorted(clips.problems.items())))
    if not parts:
        return None
    problem = "; ".join(parts)
    _LOGGER.warning("clips: %s", problem)
    return problem


def _open_cache(config: Config) -> tuple[PhraseCache | None, str | None]:
    """The phrase cache of ``config`` (None when off or unusable), and why it is unusable."""
    directory = config.cache.resolved_dir()
    if directory is None:
        return None, None
    try:
        cache = PhraseCache(directory, int(config.cache.max_mb * 1_000_000), config.cache.min_uses)
    except OSError as exc:
        _LOGGER.error("phrase cache %s: %s", directory, exc)
        return None, f"phrase cache off: {directory}: {exc.strerror or exc}"
    _LOGGER.info("phrase cache %s: %d phrases, %.1f MB", directory, len(cache), cache.total_bytes / 1e6)
    return cache, None


def memory_problem(config: Config, voices: dict[str, Voice]) -> str | None:
    """With memory.lock, why the voices' weights are not in VmLck; None when they are (or no lock is asked)."""
    if not config.memory.lock:
        return None
    needed = sum(
        span.nbytes
        for voice in voices.values()
        if isinstance(path := getattr(voice, "model_path", None), Path) and path.is_file()
        for span in find_initializers(path)
        if span.nbytes >= MIN_BYTES  # what lock_weights maps and locks
    )
    locked = read_vmlck()
    # 90 %: the optimised graph's weights differ a little from the source file's.
    if needed and locked < 0.9 * needed:
        return shortfall_reason(locked, needed)
    return None


__all__ = [
    "CALIBRATION_TEXT",
    "FALLBACK_RATE",
    "Assets",
    "Loading",
    "VoiceLoader",
    "VoiceRuntime",
    "build_assets",
    "calibrate",
    "installed_model",
    "load_configured_voice",
    "load_voices",
    "measure_voice",
    "memory_problem",
    "npu_problem",
]
