"""The Wyoming server advertised over mDNS as `_wyoming._tcp.local.` (Home Assistant's discovery)."""

from __future__ import annotations

import logging
import socket
from typing import Any

_LOGGER = logging.getLogger(__name__)

SERVICE_TYPE = "_wyoming._tcp.local."


def service_info(name: str, address: str, port: int) -> Any:
    """The zeroconf record of ``name`` at ``address``:``port``."""
    from zeroconf.asyncio import AsyncServiceInfo

    return AsyncServiceInfo(SERVICE_TYPE, f"{name}.{SERVICE_TYPE}", addresses=[socket.inet_aton(address)],
                            port=port, properties={"edgetts": "1"})


def reachable_address(host: str) -> str:
    """The address to advertise: ``host`` unless it is a wildcard, then the one that routes to the LAN."""
    if host not in ("", "0.0.0.0", "::"):
        return socket.gethostbyname(host)
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        probe.connect(("224.0.0.251", 5353))  # a UDP connect sends nothing: it only picks the route
        return str(probe.getsockname()[0])
    except OSError:
        return "127.0.0.1"
    finally:
        probe.close()


async def advertise(services: list[tuple[str, str, int]]) -> Any:
    """Register each (name, host, port); the AsyncZeroconf to close at shutdown."""
    from zeroconf.asyncio import AsyncZeroconf

    aiozc = AsyncZeroconf()
    for name, host, port in services:
        address = reachable_address(host)
        await aiozc.async_register_service(service_info(name, address, port))
        _LOGGER.info("wyoming advertised over zeroconf as %s at %s:%d", name, address, port)
    return aiozc


__all__ = ["SERVICE_TYPE", "advertise", "reachable_address", "service_info"]
