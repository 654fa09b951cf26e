"""`edgetts wyoming`: the Wyoming TTS server on its own, without MQTT or a sound card (issue 17).

It loads the voices of the config file as the daemon does (`voice:`, `voices:`, the text
options), listens where `--uri` (or `wyoming/uri`) says and synthesizes on one worker
thread of its own.  Announcement audio is refused: there is no speaker queue here.
"""

from __future__ import annotations

import argparse
import logging
import queue
import signal
from pathlib import Path

from edgetts.config import DEFAULT_CONFIG_PATH, Config, ConfigError, load_config
from edgetts.errors import EdgeTTSError

_LOGGER = logging.getLogger(__name__)


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add `edgetts wyoming` to the `edgetts` parser."""
    p = subparsers.add_parser("wyoming", help="serve the configured voices to Wyoming clients (Home Assistant)")
    p.add_argument(
        "--uri", default=None, help="tcp://HOST:PORT or unix:///path (default: wyoming/uri, tcp://0.0.0.0:10200)"
    )
    p.add_argument(
        "--config",
        default=None,
        help=f"config file whose voices are served (default {DEFAULT_CONFIG_PATH} if it exists)",
    )
    p.add_argument("--zeroconf", action="store_true", help="advertise over mDNS (_wyoming._tcp.local.)")
    p.add_argument("--max-jobs", type=int, default=None, help="syntheses at once (default wyoming/max_jobs)")
    p.set_defaults(func=cmd_wyoming)


def _config(path: str | None) -> Config:
    if path is None and not DEFAULT_CONFIG_PATH.is_file():
        return Config()
    try:
        return load_config(Path(path or DEFAULT_CONFIG_PATH))
    except ConfigError as exc:
        raise EdgeTTSError("; ".join(exc.problems)) from None


def cmd_wyoming(args: argparse.Namespace) -> int:
    from edgetts.daemon.assets import Loading, VoiceRuntime, build_assets, load_configured_voice
    from edgetts.daemon.inbound.wyoming.server import WyomingServer
    from edgetts.daemon.inbound.wyoming.wire import Limits
    from edgetts.daemon.playout.client_synthesis import ClientSynthesis
    from edgetts.runtime.cpu_plan import plan_cpu

    config = _config(args.config)
    settings = config.wyoming
    plan = plan_cpu(config.cpu)
    assets = build_assets(config, Loading(load_configured_voice, VoiceRuntime(plan.cores), plan.threads))
    if not assets.voices:
        raise EdgeTTSError("no voice loaded: " + "; ".join(assets.voice_errors.values()))
    for name, why in assets.voice_errors.items():
        _LOGGER.warning("voice %s not served: %s", name, why)
    jobs = args.max_jobs or settings.max_jobs
    side = ClientSynthesis(limit=jobs, backlog=settings.backlog)
    side.start_worker()
    zeroconf = args.zeroconf or settings.zeroconf
    server = WyomingServer(
        args.uri or settings.uri,
        lambda: assets,
        side,
        limits=Limits(settings.max_header_bytes, settings.max_payload_bytes),
        zeroconf_name=(settings.zeroconf_name or f"edgetts-{config.device.id}") if zeroconf else None,
        max_jobs=jobs,
        backlog=settings.backlog,
    )
    # A SimpleQueue, not an Event: the handler runs inside the main thread's wait, and only a
    # reentrant put cannot deadlock on a lock that wait holds.
    stop: queue.SimpleQueue[int] = queue.SimpleQueue()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda s, _f: stop.put(s))
    try:
        server.start()
        address = server.address
        where = f"tcp://{address[0]}:{address[1]}" if isinstance(address, tuple) else f"unix://{address}"
        print(f"edgetts wyoming: serving {', '.join(assets.voices)} on {where}", flush=True)
        stop.get()
    finally:
        server.close()
        side.close()
    return 0
