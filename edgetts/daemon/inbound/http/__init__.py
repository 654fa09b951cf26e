"""The operator's console: a JSON API and a web page inside the daemon (issue 18).

Imported only when `http.enabled` is set (edgetts.daemon.inbound.services.build_services),
so a daemon without it never loads Starlette or uvicorn.
"""

from edgetts.daemon.inbound.http.service import HttpService

__all__ = ["HttpService"]
