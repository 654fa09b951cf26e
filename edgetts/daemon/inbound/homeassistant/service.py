"""The Home Assistant discovery service (issue 17): configs, state, and clean removal.

It publishes every entity's discovery config (edgetts.daemon.inbound.homeassistant.discovery),
retained, whenever the daemon comes online on the broker (a broker without persistence
forgets them), and follows the daemon's feed to keep `<base>/homeassistant/state`: the
last announcement and the degraded reasons by `what`.  The topics it published are kept
in `homeassistant.json` in the state folder (queue/state_dir), so after the device is
renamed (device/id) the old entities are removed with empty retained configs.
"""

from __future__ import annotations

import json
import logging
import threading
from pathlib import Path
from typing import Any

from edgetts.config import Config
from edgetts.daemon.inbound.homeassistant.discovery import Topics, configs

_LOGGER = logging.getLogger(__name__)

STATE_FILE = "homeassistant.json"


class HomeAssistantService:
    """MQTT discovery of this device; its `degraded` key is `homeassistant`."""

    name = "homeassistant"

    def __init__(self, config: Config, state_dir: Path | None = None) -> None:
        self._config = config
        self._state_dir = state_dir if state_dir is not None else config.queue.resolved_state_dir()
        self._configs = configs(config)
        self._topics = Topics.of(config)
        self._ctx: Any = None
        self._sub: Any = None
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._state: dict[str, Any] = {"last_announcement": None, "last": {}, "degraded": {}}
        self._online = False

    def start(self, ctx: Any) -> None:
        self._ctx = ctx
        self._sub = ctx.feed.subscribe()
        self._remove_stale()
        self._thread = threading.Thread(target=self._follow, name="homeassistant", daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._stop.set()
        if self._sub is not None:
            self._sub.close()
        if self._thread is not None:
            self._thread.join(2.0)

    # ------------------------------------------------------------ discovery
    def publish_configs(self) -> None:
        for topic, payload in self._configs.items():
            self._ctx.publish(topic, json.dumps(payload).encode("utf-8"), True)
        self._publish_state()
        _LOGGER.info(
            "home assistant discovery: %d entities under %s", len(self._configs), self._config.homeassistant.prefix
        )

    def _remove_stale(self) -> None:
        """Empty retained configs for what an earlier run (another device id or name) published."""
        path = self._state_path()
        if path is None:
            _LOGGER.info(
                "home assistant: no state folder (queue/state_dir): a renamed device's old entities cannot be removed"
            )
            return
        try:
            before = json.loads(path.read_text(encoding="utf-8")).get("topics", [])
        except (OSError, ValueError, AttributeError):
            before = []
        stale = [t for t in before if isinstance(t, str) and t not in self._configs]
        for topic in stale:
            self._ctx.publish(topic, b"", True)
        if stale:
            _LOGGER.info("home assistant: removed %d entities of the device's old name", len(stale))
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(path.name + ".part")
            tmp.write_text(json.dumps({"topics": sorted(self._configs)}), encoding="utf-8")
            tmp.replace(path)
        except OSError as exc:
            _LOGGER.warning("home assistant: cannot keep %s: %s", path, exc)

    def _state_path(self) -> Path | None:
        return None if self._state_dir is None else Path(self._state_dir) / STATE_FILE

    # ------------------------------------------------------------ the feed
    def _follow(self) -> None:
        status = self._ctx.feed.status
        if status is not None:
            self._on_status(status)
        while not self._stop.is_set():
            item = self._sub.get(timeout=0.5)
            if item is None:
                continue
            try:
                if item.kind == "status":
                    self._on_status(item.payload)
                elif item.kind == "event":
                    self._on_event(item.payload)
            except Exception:  # a surprising payload must not end discovery
                _LOGGER.exception("home assistant: feed item %r", item)

    def _on_status(self, status: dict[str, Any]) -> None:
        degraded = {d.get("what"): d.get("reason") for d in status.get("degraded", []) if isinstance(d, dict)}
        online = status.get("state") == "online" and "mqtt" not in degraded
        if online and not self._online:
            self.publish_configs()  # (re)connected: the broker may have forgotten the retained configs
        self._online = online
        if degraded != self._state["degraded"]:
            self._state["degraded"] = degraded
            self._publish_state()

    def _on_event(self, event: dict[str, Any]) -> None:
        if event.get("event") != "started":
            return
        self._state["last_announcement"] = event.get("id")
        self._state["last"] = {k: event.get(k) for k in ("id", "event", "ts", "voice", "source") if k in event}
        self._publish_state()

    def _publish_state(self) -> None:
        self._ctx.publish(self._topics.state, json.dumps(self._state, ensure_ascii=False).encode("utf-8"), True)


__all__ = ["STATE_FILE", "HomeAssistantService"]
