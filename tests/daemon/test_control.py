"""Stop and cancel (edgetts.daemon.inbound.control): the message, and the daemon carrying it out on
`<prefix>/<device>/control` (real mosquitto, ALSA capture, a slow fake voice)."""

from __future__ import annotations

import pytest

from edgetts.daemon.admission.intake import PayloadError
from edgetts.daemon.inbound.control import Control, parse_control

from support.fakes import FakeVoice

LONG = " ".join(f"Sentence number {i} of a long notice." for i in range(12))


@pytest.mark.parametrize(
    ("payload", "control"),
    [
        (b'{"cmd": "stop"}', Control("stop")),
        (b'{"cmd": "cancel", "id": "a1"}', Control("cancel", "a1")),
        (b'{"cmd": "cancel"}', Control("cancel")),
    ],
)
def test_control_messages(payload: bytes, control: Control) -> None:
    assert parse_control(payload) == control
    assert parse_control(payload, "http").reason == f"{'stopped' if control.cmd == 'stop' else 'cancelled'} from http"


@pytest.mark.parametrize(
    ("payload", "reason"),
    [
        (b"stop", "bad JSON"),
        (b"[1]", "must be a JSON object"),
        (b'{"cmd": "pause"}', "cmd must be one of stop, cancel"),
        (b'{"cmd": "cancel", "id": 5}', "id must be a string"),
        (b'{"cmd": "stop", "id": "a1"}', '"stop" takes no id'),
        (b'{"cmd": "stop", "when": 1}', "unknown field 'when'"),
        (b'{"cmd": "stop", "cmd": "cancel"}', "duplicate key"),
        (b"\xff", "not UTF-8"),
        (b'{"cmd": "stop", "x": "' + b"a" * 5000 + b'"}', "too large"),
    ],
)
def test_bad_control_messages_say_why(payload: bytes, reason: str) -> None:
    with pytest.raises(PayloadError, match=reason):
        parse_control(payload)


@pytest.mark.mqtt
def test_stop_cancel_and_cancel_all_through_the_control_topic(daemon_rig) -> None:
    rig = daemon_rig(FakeVoice(delay_s=0.15))
    probe = rig.probe
    control = f"{probe.prefix}/{probe.device}/control"
    for ident in ("a1", "a2", "a3"):
        probe.publish({"id": ident, "text": LONG if ident == "a1" else "Short one."})
    probe.wait_event("a1", "started")
    probe.publish({"cmd": "stop"}, topic=control)
    cancelled = probe.wait_event("a1", "cancelled")
    assert cancelled["reason"] == "stopped from mqtt"
    probe.wait_event("a2", "finished")  # stop ends what plays; the queue plays on
    probe.wait_event("a3", "finished")
    assert probe.events_of("a1") == ["queued", "started", "cancelled"]

    # cancel by id: one queued, while another plays
    for ident in ("b1", "b2", "b3"):
        probe.publish({"id": ident, "text": LONG if ident == "b1" else "Short one."})
    probe.wait_event("b3", "queued")
    probe.publish({"cmd": "cancel", "id": "b2"}, topic=control)
    assert probe.wait_event("b2", "cancelled")["reason"] == "cancelled from mqtt"
    probe.wait_event("b3", "finished")
    assert "b2" not in rig.voice.calls and probe.events_of("b2") == ["queued", "cancelled"]
    assert probe.events_of("b1")[-1] == "finished"

    # cancel everything: what plays and what waits
    for ident in ("c1", "c2", "c3"):
        probe.publish({"id": ident, "text": LONG})
    probe.wait_event("c1", "started")
    probe.wait_event("c3", "queued")
    probe.publish({"cmd": "cancel"}, topic=control)
    for ident in ("c1", "c2", "c3"):
        probe.wait_event(ident, "cancelled")
    assert probe.events_of("c2") == ["queued", "cancelled"]

    # a cancelled id is remembered: its redelivery does not play
    probe.publish({"id": "c2", "text": LONG})
    probe.publish({"id": "d1", "text": "After."})
    probe.wait_event("d1", "finished")
    assert probe.events_of("c2") == ["queued", "cancelled"]


@pytest.mark.mqtt
def test_a_malformed_control_is_rejected_and_the_daemon_plays_on(daemon_rig) -> None:
    rig = daemon_rig()
    probe = rig.probe
    probe.publish(b'{"cmd": "pause"}', topic=f"{probe.prefix}/{probe.device}/control")
    rejected = probe.wait_event("control", "rejected")
    assert rejected["reason"].startswith("control: cmd must be one of")
    rig.say("e1", "Still here.")
    assert probe.events_of("e1") == ["queued", "started", "finished"]
