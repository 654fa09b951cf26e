"""The MQTT discovery configs that make Home Assistant show this device (issue 17).

One device (`edgetts <device.id>`) with: a `notify` entity and a `text` entity (HA releases
without MQTT notify) whose message becomes an announcement, `sensor`s for the state, the
queue depth and the last announcement, a `binary_sensor` for degraded (the reasons as
attributes), `button`s for a test chime and for stopping what plays, and a `select` for the
voice those announcements use.

No command needs a subscription of the daemon's: the message entities and the test button
publish to the daemon's own announce topic, the stop button to its control topic, each with
a payload template; the select keeps its choice retained on a topic of its own, and the
message entities' template reads the select's state.  Availability is the retained status
topic, whose Last Will is `offline`.  Every config is retained under
`<prefix>/<component>/<node>/<object>/config`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from edgetts import __version__
from edgetts.config import Config

#: Object id of each entity and its component.
COMPONENTS: dict[str, str] = {
    "announce": "notify",
    "message": "text",
    "state": "sensor",
    "queue_depth": "sensor",
    "last_announcement": "sensor",
    "degraded": "binary_sensor",
    "test": "button",
    "stop": "button",
    "voice": "select",
}

TEST_TEXT = "This is a test of the announcer."


def slug(text: str) -> str:
    """Home Assistant's entity-id form of ``text``."""
    return re.sub(r"_+", "_", re.sub(r"[^a-z0-9]", "_", text.lower())).strip("_")


@dataclass(frozen=True)
class Topics:
    """The daemon's own topics the entities use, and the select's and the state's."""

    status: str
    events: str
    announce: str
    control: str
    voice: str
    """The select's retained choice."""
    state: str
    """The service's retained state: the last announcement, the degraded reasons by `what`."""

    @staticmethod
    def of(config: Config) -> Topics:
        base = config.base_topic
        return Topics(
            status=config.status_topic,
            events=config.events_topic,
            announce=f"{base}/announce",
            control=f"{base}/control",
            voice=f"{base}/homeassistant/voice",
            state=f"{base}/homeassistant/state",
        )


def node_id(config: Config) -> str:
    return slug(f"edgetts_{config.device.id}")


def config_topic(config: Config, object_id: str) -> str:
    return f"{config.homeassistant.prefix}/{COMPONENTS[object_id]}/{node_id(config)}/{object_id}/config"


def configs(config: Config) -> dict[str, dict[str, Any]]:
    """Every entity's discovery config by its config topic."""
    t = Topics.of(config)
    node = node_id(config)
    out = {}
    for object_id, entity in _entities(config, t, node).items():
        # The entity id: `default_entity_id` for newer HA releases (`object_id` stops working in 2026.4),
        # `object_id` for older releases (which ignore the newer key).
        out[config_topic(config, object_id)] = {
            **entity,
            "unique_id": f"{node}_{object_id}",
            "object_id": f"{node}_{object_id}",
            "default_entity_id": f"{COMPONENTS[object_id]}.{node}_{object_id}",
            **_common(config, t, node),
        }
    return out


def _common(config: Config, t: Topics, node: str) -> dict[str, Any]:
    """What every entity's config carries: the device it belongs to and its availability."""
    device = {
        "identifiers": [node],
        "name": config.homeassistant.name or f"edgetts {config.device.id}",
        "manufacturer": "edgetts",
        "model": "offline announcer",
        "sw_version": __version__,
    }
    common = {
        "device": device,
        "availability": [
            {
                "topic": t.status,
                "value_template": "{{ value_json.state }}",
                "payload_available": "online",
                "payload_not_available": "offline",
            }
        ],
    }
    return common


def _entities(config: Config, t: Topics, node: str) -> dict[str, dict[str, Any]]:
    """Each entity's own part of its config, by object id."""
    voices = list(config.all_voices())
    message = _message_template(f"select.{node}_voice", voices)
    chime = config.homeassistant.test_chime
    test = {"text": TEST_TEXT, **({"chime": chime} if chime else {})}
    entities: dict[str, dict[str, Any]] = {
        "announce": {"name": "Announce", "command_topic": t.announce, "command_template": message},
        "message": {
            "name": "Message",
            "command_topic": t.announce,
            "command_template": message,
            "mode": "text",
            "max": 255,
            "icon": "mdi:bullhorn",
        },
        "state": {
            "name": "State",
            "state_topic": t.status,
            "value_template": _status_state(),
            "icon": "mdi:account-voice",
        },
        "queue_depth": {
            "name": "Queue depth",
            "state_topic": t.status,
            "value_template": "{{ value_json.queue_depth }}",
            "state_class": "measurement",
            "icon": "mdi:tray-full",
        },
        "last_announcement": {
            "name": "Last announcement",
            "state_topic": t.state,
            "value_template": "{{ value_json.last_announcement }}",
            "json_attributes_topic": t.state,
            "json_attributes_template": "{{ value_json.last | tojson }}",
            "icon": "mdi:message-text-clock",
        },
        "degraded": {
            "name": "Degraded",
            "state_topic": t.status,
            "device_class": "problem",
            "value_template": "{{ 'ON' if value_json.degraded else 'OFF' }}",
            "json_attributes_topic": t.state,
            "json_attributes_template": "{{ value_json.degraded | tojson }}",
        },
        "test": {
            "name": "Test chime",
            "command_topic": t.announce,
            "payload_press": json.dumps(test),
            "icon": "mdi:bell-ring",
        },
        "stop": {
            "name": "Stop",
            "command_topic": t.control,
            "payload_press": json.dumps({"cmd": "stop"}),
            "icon": "mdi:stop",
        },
        "voice": {
            "name": "Voice",
            "command_topic": t.voice,
            "state_topic": t.voice,
            "retain": True,
            "options": voices,
            "icon": "mdi:account-voice",
        },
    }
    return entities


def _message_template(select_entity: str, voices: list[str]) -> str:
    # The select's state names the voice; before a choice (unknown) the daemon's default speaks.
    return (
        "{% set v = states('" + select_entity + "') %}"
        "{{ ({'text': value, 'voice': v} if v in " + json.dumps(voices) + " else {'text': value}) | tojson }}"
    )


def _status_state() -> str:
    return (
        "{% if value_json.state != 'online' %}offline{% elif value_json.current %}speaking"
        "{% elif value_json.degraded %}degraded{% else %}idle{% endif %}"
    )


__all__ = ["COMPONENTS", "TEST_TEXT", "Topics", "config_topic", "configs", "node_id", "slug"]
