"""The Wyoming server as a daemon service (edgetts.daemon.inbound.services): `wyoming:` in the config."""

from __future__ import annotations

import logging
from typing import Any

from wyoming.info import Satellite

from edgetts.config import Config
from edgetts.daemon.inbound.wyoming import voices
from edgetts.daemon.inbound.wyoming.server import WyomingServer
from edgetts.daemon.inbound.wyoming.wire import Limits

_LOGGER = logging.getLogger(__name__)


class WyomingService:
    """Serves the daemon's voices to Wyoming clients; its `degraded` key is `wyoming`."""

    name = "wyoming"

    def __init__(self, config: Config) -> None:
        self._config = config
        self._server: WyomingServer | None = None

    def start(self, ctx: Any) -> None:
        s = self._config.wyoming
        zeroconf = (s.zeroconf_name or f"edgetts-{self._config.device.id}") if s.zeroconf else None
        self._server = WyomingServer(
            s.uri,
            ctx.assets,
            ctx.side,
            limits=Limits(s.max_header_bytes, s.max_payload_bytes),
            announcer=self._announcer(ctx),
            zeroconf_name=zeroconf,
            max_jobs=s.max_jobs,
            backlog=s.backlog,
            satellite=self._satellite(),
        )
        self._server.start()  # EdgeTTSError (address in use): the loop shows it in `degraded`

    def _satellite(self) -> tuple[str, Satellite] | None:
        s = self._config.wyoming
        if s.satellite_uri is None:
            return None
        name = self._config.homeassistant.name or f"edgetts {self._config.device.id}"
        return s.satellite_uri, voices.satellite(name, s.satellite_area)

    def _announcer(self, ctx: Any) -> Any:
        if not self._config.wyoming.announce:
            return None
        from edgetts.daemon.inbound.wyoming.announce import announcer_for

        return announcer_for(ctx, lambda: self._server.loop if self._server is not None else None)

    def close(self) -> None:
        if self._server is not None:
            self._server.close()


__all__ = ["WyomingService"]
