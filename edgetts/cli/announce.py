"""`edgetts announce`: publish an announcement to a device, a group or all, and show what each did."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from edgetts.config import DEFAULT_CONFIG_PATH
from edgetts.vocabulary import PRIORITIES


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = subparsers.add_parser(
        "announce", help="publish an announcement (to this device, group/<g>, device/<id> or all) and wait for it"
    )
    p.add_argument("text", nargs="?", help="what to say (or --clip)")
    p.add_argument("--clip", help="play this clip of the library instead of text")
    p.add_argument("--to", default="", help="device/<id>, group/<name> or all (default: the config's device)")
    p.add_argument("--priority", choices=PRIORITIES)
    p.add_argument("--voice", help="a configured voice name")
    p.add_argument("--id", help="the announcement's id (default: a new one)")
    p.add_argument(
        "--sync",
        action="store_true",
        help="every device plays it at one play_at = now + --lead (synchronized speakers)",
    )
    p.add_argument(
        "--lead",
        type=_seconds,
        metavar="TIME",
        help="with --sync: seconds to play_at, e.g. 1.5s or 800ms (default: what the slowest "
        "member needs, from the speed in its status)",
    )
    p.add_argument("--no-wait", action="store_true", help="publish and return")
    p.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for every device (default 60)")
    p.add_argument("--json", action="store_true", help="print the events as JSON lines")
    p.add_argument(
        "--config",
        default=str(DEFAULT_CONFIG_PATH),
        help=f"config file: its mqtt section and topic prefix (default {DEFAULT_CONFIG_PATH})",
    )
    p.set_defaults(func=cmd_announce)


def _seconds(value: str) -> float:
    """`1.5`, `1.5s` or `1500ms` as seconds (0 < t <= 3600)."""
    text = value.strip().lower()
    scale = 1.0
    if text.endswith("ms"):
        text, scale = text[:-2], 0.001
    elif text.endswith("s"):
        text = text[:-1]
    try:
        seconds = float(text) * scale
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a time: {value!r} (e.g. 1.5s or 800ms)") from None
    if not 0.0 < seconds <= 3600.0:
        raise argparse.ArgumentTypeError(f"must be more than 0 and at most 3600 s: {value!r}")
    return seconds


def _payload(args: argparse.Namespace) -> dict[str, Any] | None:
    if (args.text is None) == (args.clip is None):
        print("edgetts: error: give a text or --clip (one of them)", file=sys.stderr)
        return None
    payload: dict[str, Any] = {"text": args.text} if args.clip is None else {"clip": args.clip}
    for key in ("priority", "voice", "id"):
        if getattr(args, key) is not None:
            payload[key] = getattr(args, key)
    return payload


def cmd_announce(args: argparse.Namespace) -> int:
    """Exit 0 when every device that should play it finished it, 3 when one did not (or none answered)."""
    from edgetts.cli.daemon import _load
    from edgetts.client.announce import announce
    from edgetts.daemon.admission.intake import PayloadError
    from edgetts.daemon.inbound.mqtt import MqttSetupError

    payload = _payload(args)
    if payload is None:
        return 2
    if args.lead is not None and not args.sync:
        print("edgetts: error: --lead needs --sync", file=sys.stderr)
        return 2
    config = _load(args.config)
    if config is None:
        return 1
    try:
        outcome = announce(
            config, payload, args.to, wait=not args.no_wait, timeout=args.timeout, sync=args.sync, lead=args.lead
        )
    except (PayloadError, MqttSetupError) as exc:
        print(f"edgetts: error: {exc}", file=sys.stderr)
        return 1
    if args.no_wait:
        print(outcome.id)
        return 0
    for device, ev in outcome.events:
        if args.json:
            print(json.dumps({"device": device, **ev}, ensure_ascii=False))
        else:
            reason = f": {ev['reason']}" if ev.get("reason") else ""
            synced = "".join(f" {key} {ev[key]}" for key in ("sync_error_ms", "late_ms") if key in ev)
            print(f"{device}  {ev['event']}{reason}{synced}")
    missing = sorted(set(outcome.expected) - set(outcome.ended()))
    if missing:
        print(f"edgetts: no end from {', '.join(missing)} within {args.timeout:g} s", file=sys.stderr)
    return 0 if outcome.ok else 3
