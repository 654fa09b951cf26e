"""`edgetts render PHRASES.yaml|txt`: pre-render fixed announcements (issue 6).

Into the phrase cache (so the daemon plays them at once) or into named clips
(``<clips.dir>/<name>.wav``, usable as ``{"clip": name}``, chimes and
fallbacks).  Voices are loaded, keyed and stored with the daemon's own code
(edgetts.daemon.assets, .phrase_cache, .synth: same voice hash, normalised
text, synthesis settings, a streaming voice's windows joined into sentences),
so a folder rendered on a bigger machine with the same voice files and config
can be copied to the board.

A second run does nothing that is not needed: phrases already in the cache
are skipped, clips whose WAV would not change are left alone (``--force``
renders everything again).

Phrase files:

* ``.txt``: one phrase a line into the cache; blank lines and ``#`` lines skipped.
* ``.yaml``: ``phrases:`` (a list: text, or ``{text, voice}``) into the cache and
  ``clips:`` (a mapping name -> text, or name -> ``{text, voice}``) into clips;
  a bare list is ``phrases:``.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import numpy as np
import yaml

from edgetts.audio.wav import wav_bytes
from edgetts.config import DEFAULT_CONFIG_PATH, Config, ConfigError, load_config
from edgetts.daemon.assets import load_configured_voice
from edgetts.daemon.playout.clips import ClipError, check_clip_name
from edgetts.daemon.playout.phrase_cache import PhraseCache, phrase_key, voice_hash, voice_synthesis_config
from edgetts.daemon.playout.synthesis import store_play
from edgetts.engine import PreparesText, Voice
from edgetts.errors import EdgeTTSError
from edgetts.text.prepare import TextOptions, prepare_text


@dataclass(frozen=True)
class Item:
    """One thing to render."""

    text: str
    voice: str
    """Configured voice name."""
    clip: str | None = None
    """Clip name (into clips.dir) or None (into the cache)."""
    where: str = ""
    """`FILE:LINE` for messages."""


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add `edgetts render` to the `edgetts` parser."""
    p = subparsers.add_parser(
        "render",
        help="pre-render phrases into the phrase cache or into named clips",
        description="Pre-render fixed announcements into the daemon's phrase cache (txt: one a "
        "line; yaml: phrases: [...]) or into named clips (yaml: clips: {name: text}).",
    )
    p.add_argument("phrases", help="PHRASES.yaml or PHRASES.txt")
    p.add_argument(
        "--config",
        default=None,
        help=f"daemon config: voices, normalize, lexicon, cache.dir, clips.dir "
        f"(default {DEFAULT_CONFIG_PATH} when it exists, else the defaults)",
    )
    p.add_argument("--voice", default=None, help="configured voice name for items that name none")
    p.add_argument("--cache-dir", default=None, help="phrase cache folder (default: cache.dir)")
    p.add_argument("--clips-dir", default=None, help="clip folder (default: clips.dir)")
    p.add_argument("--force", action="store_true", help="render again what is cached or written already")
    p.add_argument("--progress", action="store_true", help="progress bar on stderr even when it is no terminal")
    p.set_defaults(func=cmd_render)


# ------------------------------------------------------------------ input


def _config(path: str | None) -> Config:
    if path is None and not DEFAULT_CONFIG_PATH.exists():
        return Config()
    try:
        return load_config(path or DEFAULT_CONFIG_PATH)
    except ConfigError as exc:
        more = f" (+{len(exc.problems) - 1} more)" if len(exc.problems) > 1 else ""
        raise EdgeTTSError(f"{exc.problems[0]}{more}") from None


def read_items(path: Path, config: Config, default_voice: str) -> list[Item]:
    """The items of a phrase file; raises EdgeTTSError (one line) on any problem."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise EdgeTTSError(f"{path}: cannot read: {reason}") from None
    voices = config.all_voices()

    def item(value: Any, where: str, clip: str | None) -> Item:
        voice = default_voice
        if isinstance(value, dict):
            unknown = sorted(set(value) - {"text", "voice"})
            if unknown:
                raise EdgeTTSError(f"{where}: unknown key {unknown[0]!r} (text, voice)")
            voice = value.get("voice", default_voice)
            value = value.get("text")
        if not isinstance(value, str) or not value.strip():
            raise EdgeTTSError(f"{where}: expected a text")
        if voice not in voices:
            raise EdgeTTSError(f"{where}: unknown voice {voice!r} (configured: {', '.join(voices)})")
        if clip is not None:
            try:
                check_clip_name(clip)
            except ClipError as exc:
                raise EdgeTTSError(f"{where}: {exc}") from None
        return Item(value.strip(), voice, clip, where)

    if path.suffix.lower() not in (".yaml", ".yml"):
        return [
            item(line, f"{path}:{i}", None)
            for i, line in enumerate(text.splitlines(), 1)
            if line.strip() and not line.lstrip().startswith("#")
        ]
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else 1
        raise EdgeTTSError(f"{path}:{line}: bad YAML: {getattr(exc, 'problem', None) or exc}") from None
    if data is None:
        return []
    if isinstance(data, list):
        data = {"phrases": data}
    if not isinstance(data, dict) or set(data) - {"phrases", "clips"}:
        raise EdgeTTSError(f"{path}: expected a list, or a mapping with phrases: and/or clips:")
    phrases, clips = data.get("phrases") or [], data.get("clips") or {}
    if not isinstance(phrases, list):
        raise EdgeTTSError(f"{path}: phrases: expected a list")
    if not isinstance(clips, dict):
        raise EdgeTTSError(f"{path}: clips: expected a mapping name -> text")
    out = [item(v, f"{path} phrases/{i}", None) for i, v in enumerate(phrases)]
    out += [item(v, f"{path} clips/{k}", str(k)) for k, v in clips.items()]
    return out


# ------------------------------------------------------------------ output


class Progress:
    """`render [#####.....] 12/40 text` on one line of stderr, redrawn in place."""

    def __init__(self, total: int, stream: IO[str], enabled: bool, width: int = 30) -> None:
        self.total, self.stream, self.enabled, self.width = total, stream, enabled, width

    def show(self, done: int, label: str) -> None:
        if not self.enabled:
            return
        filled = self.width * done // max(1, self.total)
        label = label.replace("\n", " ")
        label = label if len(label) <= 40 else label[:39] + "…"
        self.stream.write(f"\rrender [{'#' * filled}{'.' * (self.width - filled)}] {done}/{self.total} {label:<40}")
        self.stream.flush()

    def close(self) -> None:
        if self.enabled:
            self.stream.write("\n")
            self.stream.flush()


@dataclass
class Summary:
    rendered: int = 0
    cached: int = 0
    clips_written: int = 0
    clips_unchanged: int = 0
    failed: int = 0

    def line(self, n: int, seconds: float) -> str:
        return (
            f"{n} phrases: {self.rendered} rendered, {self.cached} already cached, "
            f"{self.clips_written} clips written, {self.clips_unchanged} clips unchanged, "
            f"{self.failed} failed ({seconds:.1f} s)"
        )


VoiceFactory = Callable[[str, Config], Voice]


def render_voice(name: str, config: Config) -> Voice:
    """The configured voice ``name`` as the daemon speaks it (phrase_key tells streamed phrases apart)."""
    return load_configured_voice(config.all_voices()[name], config.text_options())


def render(
    items: list[Item],
    config: Config,
    cache: PhraseCache | None,
    clips_dir: Path | None,
    *,
    force: bool = False,
    progress: Progress | None = None,
    err: IO[str] = sys.stderr,
    voice_factory: VoiceFactory = render_voice,
) -> Summary:
    """Render ``items``; per-item failures are reported on ``err`` and counted."""
    summary = Summary()
    voices: dict[str, tuple[Voice, str]] = {}
    text = config.text_options()  # what the daemon prepares each announcement with
    for done, it in enumerate(items):
        if progress is not None:
            progress.show(done, it.clip or it.text)
        try:
            if it.voice not in voices:
                voice = voice_factory(it.voice, config)
                voices[it.voice] = (voice, voice_hash(voice))
            _render_item(it, config, text, *voices[it.voice], cache, clips_dir, force, summary)
        except EdgeTTSError as exc:
            summary.failed += 1
            if progress is not None and progress.enabled:
                err.write("\n")
            err.write(f"edgetts: warning: {it.where}: {exc}\n")
    if progress is not None:
        progress.show(len(items), "done")
        progress.close()
    return summary


def _render_item(
    it: Item,
    config: Config,
    text: TextOptions,
    voice: Voice,
    digest: str,
    cache: PhraseCache | None,
    clips_dir: Path | None,
    force: bool,
    summary: Summary,
) -> None:
    settings = voice_synthesis_config(config.all_voices()[it.voice])
    # once, as the daemon's admission does: by the voice, in its language (bad SSML: SSMLError;
    # a script it cannot speak: UnspeakableTextError)
    prepared = voice.prepare(it.text) if isinstance(voice, PreparesText) else prepare_text(it.text, text)
    key = phrase_key(config, it.voice, digest, prepared, settings)
    hit = None if force or cache is None else cache.get(key)
    if hit is not None:
        sentences, rate = list(hit.sentences), hit.sample_rate
        if it.clip is None:
            summary.cached += 1
    else:
        chunks = list(voice.synthesize(prepared, settings))
        if not chunks:
            raise EdgeTTSError("no audio was produced")
        sentences, rate = [c.audio for c in chunks], chunks[0].sample_rate
        if cache is not None:
            store_play(cache, key, it.text, chunks)
        if it.clip is None:
            summary.rendered += 1
    if it.clip is not None:
        assert clips_dir is not None
        if _write_clip(clips_dir / f"{it.clip}.wav", np.concatenate(sentences), rate, force):
            summary.clips_written += 1
        else:
            summary.clips_unchanged += 1


def _write_clip(path: Path, audio: np.ndarray, rate: int, force: bool) -> bool:
    """Write the WAV atomically unless the same bytes are there already; True if written."""
    blob = wav_bytes(audio, rate)
    try:
        if not force and path.read_bytes() == blob:
            return False
    except OSError:
        pass
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
        with os.fdopen(fd, "wb") as f:
            f.write(blob)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except OSError as exc:
        raise EdgeTTSError(f"cannot write {path}: {exc.strerror or exc}") from None
    return True


def cmd_render(args: argparse.Namespace) -> int:
    started = time.monotonic()
    config = _config(args.config)
    voice = args.voice or config.voice.name
    if voice not in config.all_voices():
        raise EdgeTTSError(f"unknown voice {voice!r} (configured: {', '.join(config.all_voices())})")
    items = read_items(Path(args.phrases), config, voice)
    cache_dir = Path(args.cache_dir) if args.cache_dir else config.cache.resolved_dir()
    clips_dir = Path(args.clips_dir) if args.clips_dir else (Path(config.clips.dir) if config.clips.dir else None)
    if cache_dir is None and any(it.clip is None for it in items):
        raise EdgeTTSError("no phrase cache to render into: set cache.dir in the config or --cache-dir")
    if clips_dir is None and any(it.clip is not None for it in items):
        raise EdgeTTSError("no clip folder to render into: set clips.dir in the config or --clips-dir")
    cache = None
    if cache_dir is not None:
        try:
            cache = PhraseCache(cache_dir, int((config.cache.max_mb or 200.0) * 1_000_000))
        except OSError as exc:
            raise EdgeTTSError(f"phrase cache {cache_dir}: {exc.strerror or exc}") from None
    progress = Progress(len(items), sys.stderr, args.progress or sys.stderr.isatty())
    summary = render(items, config, cache, clips_dir, force=args.force, progress=progress)
    where = ", ".join(f"{what} {d}" for what, d in (("cache", cache_dir), ("clips", clips_dir)) if d)
    print(f"{summary.line(len(items), time.monotonic() - started)} into {where or 'nothing'}")
    return 1 if summary.failed else 0
