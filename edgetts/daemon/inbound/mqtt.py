"""The MQTT adapter: paho-mqtt 2.x in, events and status out.

It only translates.  paho's callbacks hand raw messages to the daemon
(``on_message`` must only enqueue) and never block the network thread;
nothing here synthesizes or plays.  Messages are acknowledged by the daemon
(:meth:`MqttLink.ack`) only after their announcement has ended, on a
persistent session, so an announcement in progress when the process dies is
delivered again after a restart.
"""

from __future__ import annotations

import json
import logging
import os
import queue
import socket
import ssl
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

import paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion, MQTTProtocolVersion
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

from edgetts.config import Config, MqttSettings
from edgetts.daemon.admission.messages import Event
from edgetts.daemon.inbound.credentials import CredentialError, secret_path
from edgetts.daemon.inbound.message import AckHandle, Inbound
from edgetts.daemon.inbound.takeover import TakeoverWatch
from edgetts.daemon.status import Status

_LOGGER = logging.getLogger(__name__)


class MqttSetupError(Exception):
    """The MQTT settings cannot be used (e.g. the password credential is missing); one line."""


def resolve_password(settings: MqttSettings, environ: dict[str, str] | None = None) -> str | None:
    """The broker password from the YAML, a file, or a systemd credential."""
    env = os.environ if environ is None else environ
    if settings.password is not None:
        return settings.password
    try:
        path = secret_path(settings.password_file, settings.password_credential, "mqtt", env)
    except CredentialError as exc:
        raise MqttSetupError(str(exc)) from None
    if path is None:
        return None
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise MqttSetupError(f"cannot read the MQTT password from {path}: {exc}") from None
    return lines[0] if lines else ""


class MqttLink:
    """One broker connection: subscribe, receive, acknowledge, publish."""

    def __init__(
        self,
        config: Config,
        *,
        on_message: Callable[[Inbound], None],
        on_connection: Callable[[bool, str], None],
        offline_status: Status,
    ) -> None:
        self._config = config
        self._on_message = on_message
        self._on_connection = on_connection
        self._offline = offline_status
        self._password = resolve_password(config.mqtt)
        self._lock = threading.Lock()
        self._generation = 0
        self._client: mqtt.Client | None = None
        self._use_v5 = config.mqtt.protocol in ("auto", "5")
        self.connected = False
        self._takeover = TakeoverWatch(config.client_id, config.device.id, config.mqtt.takeover_backoff_s)
        self._stable_timer: threading.Timer | None = None

    # ------------------------------------------------------------ lifecycle
    def start(self) -> None:
        """Connect in the background (retrying with capped back-off until stop())."""
        with self._lock:
            self._generation += 1
            self._client = self._make_client(self._generation)
            client = self._client
        m = self._config.mqtt
        props = None
        # paho's default, the only value MQTT 3.1.1 takes; a v5 session resumes (clean_start False).
        clean_start: mqtt.CleanStartOption = mqtt.MQTT_CLEAN_START_FIRST_ONLY
        if self._use_v5:
            props = Properties(PacketTypes.CONNECT)
            props.SessionExpiryInterval = m.session_expiry_s
            clean_start = False
        _LOGGER.info(
            "MQTT connecting to %s:%d as %s (MQTT %s)",
            m.host,
            m.port,
            self._config.client_id,
            "5" if self._use_v5 else "3.1.1",
        )
        client.connect_async(m.host, m.port, keepalive=m.keepalive_s, clean_start=clean_start, properties=props)
        client.loop_start()

    def stop(self, timeout: float = 2.0) -> None:
        """Publish `offline` (retained), then disconnect cleanly."""
        client = self._client
        if client is None:
            return
        if self.connected:
            info = client.publish(self._config.status_topic, self._offline.to_payload(), qos=1, retain=True)
            try:
                info.wait_for_publish(timeout)
            except (RuntimeError, ValueError) as exc:
                _LOGGER.warning("offline status not confirmed: %s", exc)
        client.disconnect()
        client.loop_stop()
        self._client = None
        if self._stable_timer is not None:
            self._stable_timer.cancel()

    def _make_client(self, generation: int) -> mqtt.Client:
        cfg, m = self._config, self._config.mqtt
        if self._use_v5:
            client = mqtt.Client(
                CallbackAPIVersion.VERSION2,
                client_id=cfg.client_id,
                protocol=MQTTProtocolVersion.MQTTv5,
                manual_ack=True,
            )
        else:
            client = mqtt.Client(
                CallbackAPIVersion.VERSION2,
                client_id=cfg.client_id,
                clean_session=False,
                protocol=MQTTProtocolVersion.MQTTv311,
                manual_ack=True,
            )
        client.enable_logger(logging.getLogger(__name__ + ".paho"))
        client.reconnect_delay_set(max(1, int(m.reconnect_min_s)), max(1, int(round(m.reconnect_max_s))))
        client.max_queued_messages_set(1000)
        apply_security(client, m, self._password)
        client.will_set(cfg.status_topic, self._offline.to_payload(), qos=1, retain=True)
        # Set before connecting: a persistent session's queued messages arrive right
        # after CONNACK, before any subscribe() (system recipe §1).
        client.on_message = lambda c, u, msg: self._handle_message(generation, msg)
        client.on_connect = lambda c, u, flags, rc, props: self._handle_connect(generation, c, flags, rc)
        client.on_disconnect = lambda c, u, flags, rc, props: self._handle_disconnect(generation, c, rc)
        client.on_socket_open = lambda c, u, sock: _send_small_packets_now(sock)
        return client

    # ------------------------------------------------------- paho's thread
    def _handle_message(self, generation: int, msg: mqtt.MQTTMessage) -> None:
        now, mono = time.time(), time.monotonic()
        try:
            self._on_message(
                Inbound(
                    topic=msg.topic,
                    payload=bytes(msg.payload),
                    ack=AckHandle(msg.mid, msg.qos, generation),
                    dup=bool(msg.dup),
                    received_at=now,
                    received_mono=mono,
                    retain=bool(msg.retain),
                )
            )
        except Exception:  # never let an exception kill paho's network thread
            _LOGGER.exception("dropping a message on %s", msg.topic)

    def _handle_connect(self, generation: int, client: mqtt.Client, flags: object, rc: object) -> None:
        if getattr(rc, "is_failure", False):
            reason = str(rc)
            if self._config.mqtt.protocol == "auto" and self._use_v5 and _is_unsupported_protocol(rc):
                _LOGGER.warning("broker refused MQTT 5 (%s); falling back to 3.1.1", reason)
                threading.Thread(target=self._fallback, name="edgetts-mqtt-fallback", daemon=True).start()
                return
            _LOGGER.error("MQTT connection refused: %s", reason)
            self._on_connection(False, f"connection refused: {reason}")
            return
        self.connected = True
        topics = [(t, 1) for t in (*self._config.announce_topics, self._config.control_topic)]
        client.subscribe(topics)
        session = getattr(flags, "session_present", False)
        with self._lock:
            self._takeover.connected(time.monotonic())
            twin = self._takeover.reason
        # In a takeover episode every reconnect is expected: logged once, when it began.
        (_LOGGER.debug if twin else _LOGGER.info)(
            "MQTT connected (session present: %s); subscribed to %s", session, ", ".join(t for t, _ in topics)
        )
        if twin is None:
            self._on_connection(True, "connected")
            return
        self._on_connection(False, twin)  # still degraded until the connection holds
        self._watch_stability(generation)

    def _handle_disconnect(self, generation: int, client: mqtt.Client, rc: object) -> None:
        if generation != self._generation:
            return
        was = self.connected
        self.connected = False
        if not getattr(rc, "is_failure", True):
            return  # our own disconnect(): stop() or the protocol fallback
        with self._lock:
            twin = self._takeover.disconnected(time.monotonic(), getattr(rc, "value", None))
        if twin is not None:
            backoff = max(1, round(self._config.mqtt.takeover_backoff_s))
            client.reconnect_delay_set(backoff, backoff)
            if twin.first:
                _LOGGER.error("MQTT: %s", twin.reason)
            else:
                _LOGGER.debug("MQTT disconnected again (session taken over): %s", rc)
            self._on_connection(False, twin.reason)
        elif was:
            _LOGGER.warning("MQTT disconnected: %s", rc)
            self._on_connection(False, f"disconnected: {rc}")

    def _watch_stability(self, generation: int) -> None:
        """End the takeover episode once this connection has held for twice the back-off."""
        if self._stable_timer is not None:
            self._stable_timer.cancel()
        delay = 2 * self._config.mqtt.takeover_backoff_s + 0.1
        self._stable_timer = threading.Timer(delay, self._check_stable, (generation,))
        self._stable_timer.daemon = True
        self._stable_timer.start()

    def _check_stable(self, generation: int) -> None:
        client = self._client
        if client is None or generation != self._generation or not self.connected:
            return
        with self._lock:
            ended = self._takeover.stable(time.monotonic())
        if ended:
            m = self._config.mqtt
            client.reconnect_delay_set(max(1, int(m.reconnect_min_s)), max(1, int(round(m.reconnect_max_s))))
            _LOGGER.info("MQTT connection stable again: no other client took the session over")
            self._on_connection(True, "connected")

    def _fallback(self) -> None:
        client = self._client
        if client is not None:
            client.disconnect()
            client.loop_stop()
        self._use_v5 = False
        self.start()

    # ------------------------------------------------------- any thread
    def socket(self) -> Any:
        """The connection's socket (None when not connected): its options are checked by the tests."""
        client = self._client
        return client.socket() if client is not None else None

    def ack(self, handle: AckHandle) -> None:
        """Acknowledge a message whose announcement has ended (thread-safe in paho)."""
        client = self._client
        if client is None or handle.generation != self._generation or handle.qos == 0:
            return
        if not self.connected:
            # paho accepts it and then drops it with the connection: the broker delivers the
            # message again (DUP set, same packet id), and admission knows it played (issue 13).
            _LOGGER.debug("ack of mid %d lost (not connected): a redelivery will be dropped", handle.mid)
        rc = client.ack(handle.mid, handle.qos)
        if rc != mqtt.MQTT_ERR_SUCCESS:
            _LOGGER.debug("ack of mid %d not sent: %s", handle.mid, rc)

    def publish_event(self, event: Event) -> None:
        self._publish(self._config.events_topic, event.to_payload(), retain=False)

    def publish_status(self, status: Status) -> None:
        """The retained status; dropped while disconnected, since paho would queue every one and send
        the stale burst after the reconnect (issue 13): the loop publishes the current one then."""
        if not self.connected:
            return
        self._publish(self._config.status_topic, status.to_payload(), retain=True)

    def publish(self, topic: str, payload: bytes, *, retain: bool = False) -> None:
        """Publish anything (a service's: HA discovery, a zone announcement); QoS 1, queued by paho while offline."""
        self._publish(topic, payload, retain=retain)

    def _publish(self, topic: str, payload: bytes, *, retain: bool) -> None:
        client = self._client
        if client is None:
            return
        info = client.publish(topic, payload, qos=1, retain=retain)
        if info.rc not in (mqtt.MQTT_ERR_SUCCESS, mqtt.MQTT_ERR_NO_CONN):
            _LOGGER.warning("publish to %s failed: %s", topic, mqtt.error_string(info.rc))


def _is_unsupported_protocol(rc: object) -> bool:
    value = getattr(rc, "value", rc)
    # MQTT 5 reason code 0x84; a 3.1.1-only broker answers CONNACK return code 1.
    return value in (0x84, 1)


def _send_small_packets_now(sock: Any) -> None:
    """TCP_NODELAY: without it Nagle's algorithm holds an event or an ack ~40 ms
    (measured with tools/bench_daemon.py); MQTT packets are small and urgent."""
    try:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    except (OSError, AttributeError) as exc:  # a websocket wrapper or a closed socket
        _LOGGER.debug("cannot set TCP_NODELAY: %s", exc)


def apply_security(client: mqtt.Client, m: MqttSettings, password: str | None) -> None:
    """User name/password and TLS (mutual TLS with a client certificate) from the config."""
    if m.username is not None:
        client.username_pw_set(m.username, password)
    if m.tls.enabled:
        client.tls_set(
            ca_certs=m.tls.ca_file,
            certfile=m.tls.cert_file,
            keyfile=m.tls.key_file,
            cert_reqs=ssl.CERT_REQUIRED,
            tls_version=ssl.PROTOCOL_TLS_CLIENT,
        )
        client.tls_insecure_set(m.tls.insecure)


def reader(
    config: Config,
    what: str,
    topic: str,
    on_message: Callable[..., None],
    on_subscribe: Callable[..., None] | None = None,
) -> mqtt.Client:
    """A short-lived client of the config's broker subscribed to ``topic``, its loop started
    (`edgetts status`, `edgetts fleet`); MqttSetupError when the broker cannot be reached."""
    m = config.mqtt
    # (unique per call: two clients of one id would throw each other off the broker, and a
    # program may well announce to two zones from two threads)
    client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=f"edgetts-{what}-{os.getpid()}-{uuid.uuid4().hex[:8]}")
    apply_security(client, m, resolve_password(m))
    client.on_connect = lambda c, u, flags, rc, props: c.subscribe(topic, qos=1)
    client.on_message = on_message
    if on_subscribe is not None:
        client.on_subscribe = on_subscribe
    try:
        client.connect(m.host, m.port, keepalive=10)
    except (OSError, ssl.SSLError) as exc:
        raise MqttSetupError(f"cannot reach the broker at {m.host}:{m.port}: {exc}") from None
    client.loop_start()
    return client


def read_status(config: Config, timeout: float = 5.0) -> dict[str, Any]:
    """The daemon's retained status, read from the broker as `edgetts status` shows it.

    Raises :class:`MqttSetupError` when the broker cannot be reached or no status
    arrives within ``timeout`` seconds.
    """
    got: queue.Queue[bytes] = queue.Queue()
    client = reader(config, "status", config.status_topic, lambda c, u, msg: got.put(bytes(msg.payload)))
    try:
        payload = got.get(timeout=timeout)
    except queue.Empty:
        raise MqttSetupError(f"no status on {config.status_topic} within {timeout:g} s (is edgetts running?)") from None
    finally:
        client.disconnect()
        client.loop_stop()
    try:
        data = json.loads(payload)
    except json.JSONDecodeError as exc:
        raise MqttSetupError(f"the status on {config.status_topic} is not JSON: {exc}") from None
    return dict(data)
