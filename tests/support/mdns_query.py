"""Ask over mDNS for Wyoming services as Home Assistant's discovery would, from another process.

    python mdns_query.py NAME [NAME ...]

Browses ``_wyoming._tcp.local.`` with a zeroconf instance of its own and resolves each NAME, then
connects to the first address and port it was told and sends Wyoming's ``describe``; prints one
JSON line ``{"found": {NAME: {"port", "addresses", "properties", "answer"}}}`` (``answer``: the
type of the event the server sent back) once the browser has seen each added, or
``{"missing": [...]}`` after 20 s, then one line ``{"removed": NAME}`` for each service that says goodbye, and ends when
all have, or 30 s later.  Run inside the test's own network namespace (support.netns).
"""

from __future__ import annotations

import json
import queue
import socket
import sys
import time

from zeroconf import ServiceBrowser, ServiceInfo, ServiceStateChange, Zeroconf

SERVICE_TYPE = "_wyoming._tcp.local."


def describe(address: str, port: int) -> str:
    """The type of the first event a Wyoming server sends back for ``describe``."""
    with socket.create_connection((address, port), timeout=5) as conn:
        conn.sendall(b'{"type": "describe"}\n')
        header = conn.makefile("rb").readline()
    return str(json.loads(header)["type"]) if header else "(closed)"


def main(names: list[str]) -> int:
    changes: queue.Queue[tuple[str, ServiceStateChange]] = queue.Queue()

    def on_change(zeroconf: Zeroconf, service_type: str, name: str, state_change: ServiceStateChange) -> None:
        changes.put((name.removesuffix(f".{SERVICE_TYPE}"), state_change))

    zc = Zeroconf()
    try:
        ServiceBrowser(zc, SERVICE_TYPE, handlers=[on_change])
        found: dict[str, dict[str, object]] = {}
        deadline = time.monotonic() + 20
        while len(found) < len(names) and time.monotonic() < deadline:
            for name in names:
                info = ServiceInfo(SERVICE_TYPE, f"{name}.{SERVICE_TYPE}")
                if name not in found and info.request(zc, 2000):
                    found[name] = {
                        "port": info.port,
                        "addresses": info.parsed_addresses(),
                        "properties": {k.decode(): (v or b"").decode() for k, v in info.properties.items()},
                    }
        # The browser must have reported each service added before it can report it removed (a
        # goodbye that comes while "added" is still pending is dropped by zeroconf's browser).
        added: set[str] = set()
        while added < set(names) and time.monotonic() < deadline:
            try:
                name, change = changes.get(timeout=0.5)
            except queue.Empty:
                continue
            if change is ServiceStateChange.Added:
                added.add(name)
        if len(found) < len(names) or added < set(names):
            print(
                json.dumps({"missing": sorted(set(names) - set(found)), "found": found, "added": sorted(added)}),
                flush=True,
            )
            return 1
        for record in found.values():
            record["answer"] = describe(str(record["addresses"][0]), int(record["port"]))  # type: ignore[index, call-overload]
        print(json.dumps({"found": found}), flush=True)
        waiting, deadline = set(names), time.monotonic() + 30
        while waiting and time.monotonic() < deadline:
            try:
                name, change = changes.get(timeout=0.5)
            except queue.Empty:
                continue
            if change is ServiceStateChange.Removed and name in waiting:
                waiting.discard(name)
                print(json.dumps({"removed": name}), flush=True)
        return 0 if not waiting else 2
    finally:
        zc.close()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
