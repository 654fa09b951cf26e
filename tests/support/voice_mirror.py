"""A mirror of Piper's voice repository on 127.0.0.1: voices in the catalog's layout, faults on demand.

``VoiceMirror`` lays voices out as Piper's repository does (``de/de_DE/tiny/medium/de_DE-tiny-medium.onnx``,
its ``.onnx.json`` and ``MODEL_CARD``) and writes ``voices.json`` with their sizes and MD5s;
``MirrorServer`` serves the folder over HTTP on loopback from a thread of the test process, and can
answer a path with a fault: ``404``, ``truncate`` (the whole Content-Length announced, half the body
sent, the connection closed) or ``stall`` (half the body, then nothing until the client gives up or
the server closes).  Stalls end when the server closes, so no test waits on them for long.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

STALL_MAX_S = 20.0
"""Longest a stalled answer holds its connection when nobody closes the server."""


def catalog_key(name: str, suffix: str) -> str:
    """Where Piper's repository keeps ``name``'s file ending in ``suffix`` (``.onnx``, ``.onnx.json``,
    or ``MODEL_CARD``): ``<family>/<code>/<speaker>/<quality>/...``."""
    code, speaker, quality = name.split("-", 2)
    folder = f"{code.split('_')[0]}/{code}/{speaker}/{quality}"
    return f"{folder}/MODEL_CARD" if suffix == "MODEL_CARD" else f"{folder}/{name}{suffix}"


def _digest(path: Path) -> dict[str, Any]:
    return {"size_bytes": path.stat().st_size, "md5_digest": hashlib.md5(path.read_bytes()).hexdigest()}


class VoiceMirror:
    """A folder in the layout of Piper's voice repository, with its ``voices.json``."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.catalog: dict[str, Any] = {}
        root.mkdir(parents=True, exist_ok=True)

    def add(self, name: str, model: Path, *, card: bool = True) -> None:
        """Publish the Piper voice ``model`` (its ``.onnx.json`` beside it) under the catalog name ``name``."""
        code = name.split("-")[0]
        files: dict[str, Any] = {}
        sources = [(".onnx", model), (".onnx.json", model.with_name(model.name + ".json"))]
        for suffix, source in sources:
            dest = self.path(name, suffix)
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, dest)
            files[catalog_key(name, suffix)] = _digest(dest)
        if card:
            dest = self.path(name, "MODEL_CARD")
            dest.write_text(f"# Model card for {name}\n\nGenerated for the edgetts tests. License: CC0.\n")
            files[catalog_key(name, "MODEL_CARD")] = _digest(dest)
        self.catalog[name] = {
            "key": name,
            "name": name.split("-")[1],
            "language": {
                "code": code,
                "family": code.split("_")[0],
                "region": code.split("_")[-1],
                "name_native": code,
                "name_english": {"de": "German", "en": "English", "fr": "French"}.get(code.split("_")[0], code),
                "country_english": code.split("_")[-1],
            },
            "quality": name.split("-")[2],
            "num_speakers": 1,
            "speaker_id_map": {},
            "files": files,
            "aliases": [],
        }
        self.write_catalog()

    def path(self, name: str, suffix: str) -> Path:
        """The mirror's file of ``name`` ending in ``suffix``."""
        return self.root / catalog_key(name, suffix)

    def write_catalog(self) -> None:
        (self.root / "voices.json").write_text(json.dumps(self.catalog, indent=2))


class _Handler(SimpleHTTPRequestHandler):
    server: MirrorServer

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        path = self.path.split("?")[0]
        self.server.requests.append(path)
        fault = self.server.faults.get(path)
        if fault == "404":
            self.send_error(404, "Not Found")
            return
        if fault in ("truncate", "stall"):
            body = (self.server.root / path.lstrip("/")).read_bytes()
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body[: len(body) // 2])
            self.wfile.flush()
            if fault == "stall":
                self.server.closing.wait(STALL_MAX_S)
            self.close_connection = True
            return
        super().do_GET()


class MirrorServer(ThreadingHTTPServer):
    """Serves ``root`` on 127.0.0.1 (a free port) from a thread; ``faults``: URL path -> fault."""

    daemon_threads = True

    def __init__(self, root: Path) -> None:
        super().__init__(("127.0.0.1", 0), partial(_Handler, directory=str(root)))
        self.root = root
        self.faults: dict[str, str] = {}
        self.requests: list[str] = []
        self.closing = threading.Event()
        self._thread = threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def fault(self, key: str, what: str) -> None:
        """Answer the catalog path ``key`` with ``what`` (``404``, ``truncate``, ``stall``)."""
        self.faults["/" + key] = what

    def close(self) -> None:
        self.closing.set()
        self.shutdown()
        self.server_close()
        self._thread.join(5)


@contextmanager
def served_mirror(root: Path) -> Iterator[tuple[VoiceMirror, MirrorServer]]:
    """An empty mirror in ``root`` (add voices to it) and its server, closed on the way out."""
    mirror = VoiceMirror(root)
    server = MirrorServer(mirror.root)
    try:
        yield mirror, server
    finally:
        server.close()


def tiny_voice(out: Path, language: str = "de") -> Path:
    """A generated Piper voice reading ``language`` (tools.make_test_voice, milliseconds per run)."""
    from tools.make_test_voice import make_voice

    return make_voice(out, "ok", language=language)
