"""Reload (SIGHUP, `systemctl reload`): the new config file, and its assets built off the loop.

The loop keeps the state: it asks :func:`read_config` for the new config and
:func:`load_beside` for its assets, keeps playing and pinging meanwhile, and
swaps them in when :class:`AssetsLoaded` arrives.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from edgetts.config import Config, ConfigError, load_config
from edgetts.daemon.assets import Assets, Loading, build_assets
from edgetts.errors import EdgeTTSError

_LOGGER = logging.getLogger(__name__)


@dataclass(frozen=True)
class AssetsLoaded:
    """From the reload thread: the new config's assets, or why the reload is refused."""

    assets: Assets | None
    note: str | None
    """With assets: a change that needs a restart; without: why the reload is refused."""


def read_config(path: Path, running: Config) -> tuple[Config, str | None]:
    """The config in ``path`` as it can be applied now, and a note on what needs a restart.

    Raises ConfigError (each problem logged).
    """
    try:
        new = load_config(path)
    except ConfigError as exc:
        for line in exc.problems:
            _LOGGER.error("reload refused: %s", line)
        raise
    if new.mqtt != running.mqtt or new.device != running.device:
        # The broker session (and the unacked messages in hand) belong to this
        # connection; moving them live would replay or lose announcements.
        return replace(new, mqtt=running.mqtt, device=running.device), "mqtt/device changes take effect after a restart"
    return new, None


def refused(exc: ConfigError) -> str:
    """`degraded: config` of a file that does not validate."""
    more = f" (+{len(exc.problems) - 1} more)" if len(exc.problems) > 1 else ""
    return f"reload refused, old config in force: {exc.problems[0]}{more}"


def load_beside(config: Config, note: str | None, loading: Loading, previous: Assets,
                post: Callable[[Any], None]) -> None:
    """Build ``config``'s assets on a thread of their own and ``post`` an AssetsLoaded."""

    def load() -> None:
        try:
            assets = build_assets(config, loading, previous)
        except EdgeTTSError as exc:
            post(AssetsLoaded(None, str(exc)))
            return
        post(AssetsLoaded(assets, note))

    # Beside the running voices, off the loop: the loop keeps playing and pinging.
    threading.Thread(target=load, name="edgetts-reload", daemon=True).start()


__all__ = ["AssetsLoaded", "load_beside", "read_config", "refused"]
