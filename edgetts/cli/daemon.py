"""Daemon verbs: `edgetts run`, `check-config`, `print-config`, `status`, `fleet`."""

from __future__ import annotations

import argparse
import logging
import os
import sys

from edgetts.config import (
    DEFAULT_CONFIG_PATH,
    Config,
    ConfigError,
    dump_config,
    key_line,
    load_config,
    problem_line,
)

_LOGGER = logging.getLogger(__name__)


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add the daemon verbs to the `edgetts` parser."""
    run = subparsers.add_parser("run", help="run the announcer daemon (MQTT in, speakers out)")
    run.add_argument("--config", default=str(DEFAULT_CONFIG_PATH), help=f"config file (default {DEFAULT_CONFIG_PATH})")
    run.set_defaults(func=cmd_run)

    check = subparsers.add_parser("check-config", help="validate a daemon config file (exit 0/1)")
    check.add_argument("file", nargs="?", default=str(DEFAULT_CONFIG_PATH))
    check.set_defaults(func=cmd_check_config)

    show = subparsers.add_parser("print-config", help="print the effective daemon config, defaults included")
    show.add_argument("file", nargs="?", default=str(DEFAULT_CONFIG_PATH))
    show.set_defaults(func=cmd_print_config)

    status = subparsers.add_parser(
        "status", help="print the running daemon's status (from the broker, as the config reaches it)"
    )
    status.add_argument(
        "--config", default=str(DEFAULT_CONFIG_PATH), help=f"config file (default {DEFAULT_CONFIG_PATH})"
    )
    status.add_argument("--timeout", type=float, default=5.0, help="seconds to wait for the status")
    status.set_defaults(func=cmd_status)

    fleet = subparsers.add_parser(
        "fleet", help="list every device on the broker (from their retained statuses): state, clock, degraded"
    )
    fleet.add_argument(
        "--config",
        default=str(DEFAULT_CONFIG_PATH),
        help=f"config file: its mqtt section and topic prefix (default {DEFAULT_CONFIG_PATH})",
    )
    fleet.add_argument("--json", action="store_true", help="one JSON object: device id -> its status")
    fleet.add_argument("--timeout", type=float, default=5.0, help="seconds to wait for the broker at most")
    fleet.set_defaults(func=cmd_fleet)


def _load(path: str) -> Config | None:
    try:
        return load_config(path)
    except ConfigError as exc:
        for line in exc.problems:
            # A file that cannot be read has no problem *in* it: it is this command's error.
            print(f"edgetts: error: {line}" if " (file): " in line else line, file=sys.stderr)
        return None


def _voice_model_problems(config: Config, path: str) -> list[str]:
    """voice/model and voices/*/model that name no file or no voice the catalog knows, as problem lines.

    Only here: the daemon itself starts without its voice (degraded, on clips; issue 6).
    """
    from edgetts.errors import VoiceError
    from edgetts.voice.catalog import resolve_voice

    # `auto` is no model: the voices its languages name were found when the config was validated.
    auto = config.voice.model == "auto"
    models: list[tuple[tuple[str, ...], str]] = [] if auto else [(("voice", "model"), config.voice.model)]
    models += [(("voices", name, "model"), v.model) for name, v in config.voices.items()]
    problems = []
    dirs = [config.voices_dir()]  # where `edgetts voices install` put them: the daemon looks there first
    for key, model in models:
        try:
            info = resolve_voice(model, dirs)
            if not info.path.is_file():
                raise VoiceError(f"voice model not found: {info.path}")
        except VoiceError as exc:
            problems.append(problem_line(path, key_line(path, key), "/".join(key), str(exc)))
    return problems


def cmd_check_config(args: argparse.Namespace) -> int:
    config = _load(args.file)
    if config is None:
        return 1
    problems = _voice_model_problems(config, args.file)
    for line in problems:
        print(line, file=sys.stderr)
    if problems:
        return 1
    print(f"{args.file}: ok")
    return 0


def cmd_print_config(args: argparse.Namespace) -> int:
    config = _load(args.file)
    if config is None:
        return 1
    sys.stdout.write(dump_config(config))
    return 0


def configure_logging(level: str) -> None:
    """journald under systemd (JOURNAL_STREAM is set), stderr otherwise."""
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    handler: logging.Handler | None = None
    if os.environ.get("JOURNAL_STREAM"):
        try:
            from systemd.journal import JournalHandler

            handler = JournalHandler(SYSLOG_IDENTIFIER="edgetts")
        except ImportError:
            handler = None
    if handler is None:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root.addHandler(handler)
    root.setLevel(level.upper())


def cmd_status(args: argparse.Namespace) -> int:
    """The retained status: state, voice, queue, locked_bytes (VmLck), degraded, keepalive."""
    import json

    from edgetts.daemon.inbound.mqtt import MqttSetupError, read_status

    config = _load(args.config)
    if config is None:
        return 1
    try:
        status = read_status(config, args.timeout)
    except MqttSetupError as exc:
        print(f"edgetts: error: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(status, indent=2, ensure_ascii=False))
    return 0 if status.get("state") == "online" else 3


def cmd_fleet(args: argparse.Namespace) -> int:
    """Every device's retained status; exit 0 when all are online, 3 when one is not (or none is there)."""
    import json

    from edgetts.client.fleet import read_fleet, table
    from edgetts.daemon.inbound.mqtt import MqttSetupError

    config = _load(args.config)
    if config is None:
        return 1
    try:
        members = read_fleet(config, timeout=args.timeout)
    except MqttSetupError as exc:
        print(f"edgetts: error: {exc}", file=sys.stderr)
        return 1
    if args.json:
        print(
            json.dumps(
                {m.device: m.status if m.problem is None else {"problem": m.problem} for m in members},
                indent=2,
                ensure_ascii=False,
            )
        )
    else:
        print("\n".join(table(members)))
    online = [m for m in members if m.status.get("state") == "online"]
    return 0 if members and len(online) == len(members) else 3


def cmd_run(args: argparse.Namespace) -> int:
    config = _load(args.config)
    if config is None:
        return 1
    configure_logging(config.logging.level)
    from edgetts.daemon.inbound.mqtt import MqttSetupError
    from edgetts.daemon.loop import Daemon  # imports paho/pyaudio: only for `run`

    try:
        return Daemon(config, args.config).run()
    except MqttSetupError as exc:
        print(f"edgetts: error: {exc}", file=sys.stderr)
        return 1
