"""Reload (SIGHUP, `systemctl reload`): the new config file, and its assets built off the loop.

The loop keeps the state: it asks :func:`read_config` for the new config and
:func:`load_beside` for its assets, keeps playing and pinging meanwhile, and
swaps them in when :class:`AssetsLoaded` arrives.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
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


RESTART_SECTIONS = ("mqtt", "device", "cpu", "memory")
"""Sections a running daemon keeps as it started with: the broker session (and the unacknowledged
messages in hand) belong to this connection, the threads were placed once (cpu), and the voices'
weights were locked or not as they were loaded (memory: a reload keeps voices whose settings did
not change, so a new `memory.lock` would only be checked, never applied, until a restart)."""


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
    changed = [name for name in RESTART_SECTIONS if getattr(new, name) != getattr(running, name)]
    if changed:
        kept = replace(new, **{name: getattr(running, name) for name in changed})
        return kept, f"{'/'.join(changed)} changes take effect after a restart"
    return new, None


def refused(exc: ConfigError) -> str:
    """`degraded: config` of a file that does not validate."""
    more = f" (+{len(exc.problems) - 1} more)" if len(exc.problems) > 1 else ""
    return f"reload refused, old config in force: {exc.problems[0]}{more}"


def load_beside(
    config: Config, note: str | None, loading: Loading, previous: Assets, post: Callable[[Any], None]
) -> None:
    """Build ``config``'s assets on a thread of their own and ``post`` an AssetsLoaded."""

    def load() -> None:
        try:
            assets = build_assets(config, loading, previous)
        except EdgeTTSError as exc:
            post(AssetsLoaded(None, str(exc)))
            return
        except Exception as exc:  # a bug: refused all the same, or the loop would wait for it forever
            _LOGGER.exception("reload failed")
            post(AssetsLoaded(None, f"reload failed: {type(exc).__name__}: {exc}"))
            return
        post(AssetsLoaded(assets, note))

    # Beside the running voices, off the loop: the loop keeps playing and pinging.
    threading.Thread(target=load, name="edgetts-reload", daemon=True).start()


def await_loaded(inbox: queue.SimpleQueue[Any], timeout: float) -> bool:
    """At a stop, with assets loading: wait for their AssetsLoaded (dropped, as everything else the
    inbox holds then) at most ``timeout`` seconds; whether it came."""
    _LOGGER.info("stopping: waiting for the reload in progress (at most %g s)", timeout)
    deadline = time.monotonic() + timeout
    while (left := deadline - time.monotonic()) > 0:
        try:
            if isinstance(inbox.get(timeout=left), AssetsLoaded):
                return True
        except queue.Empty:
            pass
    _LOGGER.warning("stopping with a reload still loading after %g s", timeout)
    return False


__all__ = ["RESTART_SECTIONS", "AssetsLoaded", "await_loaded", "load_beside", "read_config", "refused"]
