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

    return AsyncServiceInfo(
        SERVICE_TYPE,
        f"{name}.{SERVICE_TYPE}",
        addresses=[socket.inet_aton(address)],
        port=port,
        properties={"edgetts": "1"},
    )


def reachable_address(host: str) -> str:
    """The address to advertise: ``host`` unless it is a wildcard, then the one that routes to the LAN.

    A wildcard is never advertised: a client told 0.0.0.0 connects to itself.  Where the
    multicast route names no source (a route over the loopback, no network yet), the first
    interface address is taken, a non-loopback one if there is any."""
    if host not in ("", "0.0.0.0", "::"):
        return socket.gethostbyname(host)
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        probe.connect(("224.0.0.251", 5353))  # a UDP connect sends nothing: it only picks the route
        routed = str(probe.getsockname()[0])
    except OSError:
        routed = "0.0.0.0"
    finally:
        probe.close()
    return routed if routed != "0.0.0.0" else interface_address()


def interface_address() -> str:
    """The first IPv4 address of this host's interfaces, preferring one that is not a loopback."""
    import ifaddr  # zeroconf's own dependency: here whenever zeroconf is

    ips = [ip.ip for adapter in ifaddr.get_adapters() for ip in adapter.ips if isinstance(ip.ip, str)]
    outside = [ip for ip in ips if not ip.startswith("127.")]
    return (outside or ips or ["127.0.0.1"])[0]


async def advertise(services: list[tuple[str, str, int]]) -> Any:
    """Register each (name, host, port); the AsyncZeroconf to close at shutdown."""
    from zeroconf.asyncio import AsyncZeroconf

    aiozc = AsyncZeroconf()
    for name, host, port in services:
        address = reachable_address(host)
        await aiozc.async_register_service(service_info(name, address, port))
        _LOGGER.info("wyoming advertised over zeroconf as %s at %s:%d", name, address, port)
    return aiozc


__all__ = ["SERVICE_TYPE", "advertise", "interface_address", "reachable_address", "service_info"]
