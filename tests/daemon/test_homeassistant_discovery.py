"""Home Assistant MQTT discovery (issue 17): the configs on the real mosquitto, and their removal."""

from __future__ import annotations

import json
import os
import queue
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from edgetts.config import parse_config
from edgetts.daemon.inbound.homeassistant.discovery import COMPONENTS, configs
from edgetts.daemon.inbound.homeassistant.service import HomeAssistantService

from support.broker import Broker

pytestmark = pytest.mark.mqtt


def _client(broker: Broker) -> Any:
    import paho.mqtt.client as mqtt
    from paho.mqtt.enums import CallbackAPIVersion

    client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=f"ha-test-{os.getpid()}-{time.monotonic_ns()}")
    connected: queue.Queue[bool] = queue.Queue()
    client.on_connect = lambda c, u, f, rc, p: connected.put(not rc.is_failure)
    client.connect(broker.host, broker.port)
    client.loop_start()
    assert connected.get(timeout=5)
    return client


def retained(broker: Broker, pattern: str, settle_s: float = 0.7) -> dict[str, bytes]:
    """Every retained message under ``pattern`` now (read by a fresh subscriber)."""
    got: dict[str, bytes] = {}
    lock = threading.Lock()

    def on_message(c: Any, u: Any, msg: Any) -> None:
        with lock:
            got[msg.topic] = bytes(msg.payload)

    client = _client(broker)
    client.on_message = on_message
    client.subscribe(pattern, qos=1)
    time.sleep(settle_s)  # retained messages come at once after the subscription
    client.disconnect()
    client.loop_stop()
    return {t: p for t, p in got.items() if p}


class _Feed:
    """The daemon's feed as the service reads it: the last status, no further items."""

    def __init__(self, status: dict[str, Any]) -> None:
        self.status = status

    def subscribe(self, maxlen: int = 256) -> Any:
        class _Sub:
            dropped = 0

            def get(self, timeout: float | None = None) -> None:
                time.sleep(timeout or 0)

            def close(self) -> None:
                pass

        return _Sub()


class _Ctx:
    def __init__(self, broker: Broker, status: dict[str, Any]) -> None:
        self._client = _client(broker)
        self.feed = _Feed(status)

    def publish(self, topic: str, payload: bytes, retain: bool) -> None:
        self._client.publish(topic, payload, qos=1, retain=retain).wait_for_publish(5)

    def close(self) -> None:
        self._client.disconnect()
        self._client.loop_stop()


def _config(broker: Broker, device: str, prefix: str) -> Any:
    return parse_config(f"""
device: {{id: {device}}}
mqtt: {{host: 127.0.0.1, port: {broker.port}, topic_prefix: {prefix}}}
voices: {{slow: {{model: default}}}}
homeassistant: {{discovery: true, prefix: {prefix}-ha, name: Platform speaker}}
""")


ONLINE = {"state": "online", "degraded": [{"what": "voice", "reason": "voice 'x' did not load"}]}


def test_configs_name_one_device_with_every_entity() -> None:
    config = parse_config("device: {id: Hall-1}\nvoices: {slow: {model: default}}\n")
    out = configs(config)
    assert len(out) == len(COMPONENTS) == 9
    components = sorted(topic.split("/")[1] for topic in out)
    assert components == ["binary_sensor", "button", "button", "notify", "select", "sensor", "sensor", "sensor", "text"]
    for topic, payload in out.items():
        assert topic.startswith("homeassistant/") and topic.endswith("/config")
        assert topic.split("/")[2] == "edgetts_hall_1"
        assert payload["device"]["identifiers"] == ["edgetts_hall_1"]
        assert payload["availability"][0]["topic"] == "edgetts/Hall-1/status"
        assert payload["availability"][0]["payload_not_available"] == "offline"  # the Last Will
    assert len({p["unique_id"] for p in out.values()}) == 9
    by_object = {topic.split("/")[3]: p for topic, p in out.items()}
    assert by_object["message"]["command_topic"] == "edgetts/Hall-1/announce"
    assert by_object["stop"]["command_topic"] == "edgetts/Hall-1/control"
    assert json.loads(by_object["stop"]["payload_press"]) == {"cmd": "stop"}
    assert by_object["voice"]["options"] == ["default", "slow"]
    assert "select.edgetts_hall_1_voice" in by_object["message"]["command_template"]


def test_discovery_is_retained_and_a_renamed_device_leaves_nothing_behind(mosquitto: Broker, tmp_path: Path) -> None:
    prefix = f"ha{os.getpid()}"
    first = _config(mosquitto, "kitchen", prefix)
    ctx = _Ctx(mosquitto, ONLINE)
    service = HomeAssistantService(first, state_dir=tmp_path)
    service.start(ctx)
    try:
        deadline = time.monotonic() + 10
        while len(got := retained(mosquitto, f"{prefix}-ha/#")) < 9 and time.monotonic() < deadline:
            pass
    finally:
        service.close()
    assert set(got) == set(configs(first))
    text = json.loads(got[f"{prefix}-ha/text/edgetts_kitchen/message/config"])
    assert text["device"]["name"] == "Platform speaker"
    state = retained(mosquitto, f"{prefix}/kitchen/homeassistant/state")
    assert json.loads(state[f"{prefix}/kitchen/homeassistant/state"])["degraded"] == {"voice": "voice 'x' did not load"}

    renamed = _config(mosquitto, "hall", prefix)
    service = HomeAssistantService(renamed, state_dir=tmp_path)
    service.start(ctx)
    try:
        deadline = time.monotonic() + 10
        while (
            set(got := retained(mosquitto, f"{prefix}-ha/#")) != set(configs(renamed)) and time.monotonic() < deadline
        ):
            pass
    finally:
        service.close()
        ctx.close()
    assert set(got) == set(configs(renamed))  # kitchen's nine configs are gone, hall's are there
    assert all("/edgetts_hall/" in topic for topic in got)
