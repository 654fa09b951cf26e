"""Intake that cannot raise (issue 13 items 1 and 5): hostile payloads are rejected with a reason,
the message is acknowledged, the daemon stays up and plays the next announcement.

The rig tests run the daemon in-process against the real mosquitto and the ALSA
capture (fake voice: what it was asked to say is in ``rig.voice.calls``).
"""

from __future__ import annotations

import json
import logging
import re
import time
from typing import Any

import paho.mqtt.client as mqtt
import pytest
from paho.mqtt.enums import CallbackAPIVersion

from edgetts.config import Config
from edgetts.daemon.admission.admit import admit, guess_id
from edgetts.daemon.admission.intake import MAX_DEPTH, escape
from edgetts.daemon.admission.messages import Announcement, PayloadError
from edgetts.daemon.admission.scheduler import Scheduler
from edgetts.daemon.assets import Assets
from edgetts.daemon.events import Events
from edgetts.daemon.health import Health
from edgetts.daemon.inbound.message import AckHandle, Inbound

from support.broker import Broker
from support.pcm import assert_played

pytestmark = pytest.mark.mqtt

FADE = int(22050 * 5 / 1000)

#: Issue 13 item 1 (each crashed the daemon before) and item 5: payload -> words of the reason.
HOSTILE: list[tuple[str, bytes, str]] = [
    ("overflow", b'{"text":"hi","ttl":1' + b"0" * 309 + b"}", "number too long"),
    ("int-4301", b'{"text":"hi","repeat":' + b"7" * 4301 + b"}", "number too long"),
    ("int-id", b'{"id":' + b"1" * 5000 + b',"text":"hi"}', "number too long"),
    ("nested", b'{"text":"hi","x":' + b"[" * 1000 + b"]" * 1000 + b"}", "nested deeper"),
    ("nested-open", b"{" + b'"a":{' * 999, "nested deeper"),
    ("surrogate-id", b'{"id":"\\ud800","text":5}', "id must be"),
    ("surrogate-text", b'{"id":"s-text","text":"Gate \\udc00 five"}', "lone surrogate"),
    ("nul-escape", b'{"id":"nul-esc","text":"Gate\\u0000five"}', "NUL"),
    ("nul-raw", b"Gate\x00five", "NUL"),
    ("nan", b'{"id":"nan","text":"hi","ttl":NaN}', "not a JSON number"),
    ("inf-float", b'{"id":"inf","text":"hi","volume":1e999}', "out of range"),
    ("dup-key", b'{"id":"dup","text":"hi","text":"ho"}', "duplicate key"),
    ("newline-id", b'{"id":"a\\nb","text":"hi"}', "id must be"),
    ("control", b'{"id":"ctl","text":"bell \\u0007 here"}', "control character U+0007"),
    ("tags-only", b"<b></b><br/>", "without its markup"),
    ("retained-off", b"", "retained"),  # sent retained, below
]


def test_limits_are_checked_before_any_conversion() -> None:
    """Each of them once raised something other than PayloadError out of from_payload."""
    for _name, payload, reason in HOSTILE:
        if not payload:
            continue
        with pytest.raises(PayloadError, match=re.escape(reason)):
            Announcement.from_payload(payload, now=0.0)
    # at the limits themselves, still fine
    ok = Announcement.from_payload(b'{"text":"hi","ttl":' + b"1" * 32 + b"}", now=0.0)
    assert ok.expires_at == pytest.approx(float("1" * 32))
    nested = b'{"text":"hi","voice":' + b"[" * (MAX_DEPTH - 1) + b"]" * (MAX_DEPTH - 1) + b"}"
    with pytest.raises(PayloadError, match="voice must be"):  # deep enough to parse, then a type error
        Announcement.from_payload(nested, now=0.0)


def test_markup_is_cleaned_and_a_bom_is_not_text() -> None:
    bom = Announcement.from_payload(b'\xef\xbb\xbf{"id":"bom","text":"hi"}', now=0.0)
    assert (bom.id, bom.text) == ("bom", "hi")
    html = Announcement.from_payload(b"<p>Gate <b>5</b> is <i>closed</i> &amp; locked.</p>", now=0.0)
    assert html.text is not None and html.text.split() == ["Gate", "5", "is", "closed", "&", "locked."]
    ansi = Announcement.from_payload(b"\x1b[1;31mFire\x1b[0m in hall \x1b]0;title\x07two", now=0.0)
    assert ansi.text == "Fire in hall two"
    # not markup: a comparison stays, and SSML is left to the SSML parser
    assert Announcement.from_payload(b"Speed < 5 km/h and > 2", now=0.0).text == "Speed < 5 km/h and > 2"
    ssml = Announcement.from_payload(b"<speak>Gate <say-as interpret-as='characters'>B</say-as></speak>", now=0.0)
    assert ssml.text is not None and ssml.text.startswith("<speak>")


def test_escape_and_guess_id_never_raise() -> None:
    assert escape("a\nb\ud800\x1b") == "a\\nb\\ud800\\x1b"
    assert escape("x" * 300, 10) == "x" * 10 + "..."
    assert escape("Gate 17 – ok") == "Gate 17 – ok"
    assert guess_id(b'{"id":"a\\nb","text":5}') == "a\\nb"
    assert guess_id(b'{"id":"\\ud800"}') == "\\ud800"
    # JSON that does not decode: the id is still read when it is a plain string
    assert guess_id(b'{"id":"nan-1","text":"hi","ttl":NaN}') == "nan-1"
    assert guess_id(b'{"text":"hi","id" : "deep-1","x":' + b"[" * 500) == "deep-1"
    for _name, payload, _reason in HOSTILE:
        assert isinstance(guess_id(payload), str)
    json.dumps(guess_id(b'{"id":"\\udfff"}'), ensure_ascii=False).encode("utf-8")


class _Link:
    """What Events needs of the broker link; ``fail_publish`` stands for a broken publish path."""

    def __init__(self, fail_publish: bool = False) -> None:
        self.events: list[dict[str, Any]] = []
        self.acks: list[AckHandle] = []
        self.fail_publish = fail_publish

    def publish_event(self, event: Any) -> None:
        if self.fail_publish:
            raise OSError("socket closed under us")
        self.events.append(json.loads(event.to_payload()))

    def ack(self, handle: AckHandle) -> None:
        self.acks.append(handle)


def _inbound(payload: bytes, mid: int = 7, retain: bool = False) -> Inbound:
    return Inbound(
        "test/x/announce", payload, AckHandle(mid, 1, 1), False, time.time(), time.monotonic(), retain=retain
    )


def test_an_unexpected_exception_is_a_rejection_and_the_message_is_acked(monkeypatch: pytest.MonkeyPatch) -> None:
    """A bug in a check (here: the parser raising KeyError) must not become a crash loop."""
    import edgetts.daemon.admission.admit as admission

    link = _Link()
    events = Events(Health())
    events.attach(link)
    scheduler = Scheduler(8, 60.0)

    def broken(
        payload: bytes, received_at: float, assets: Assets, new_id: object = None, hops: object = None
    ) -> Announcement:
        raise KeyError("voices")

    monkeypatch.setattr(admission, "parse", broken)
    assert admit(_inbound(b'{"id":"k1","text":"hi"}'), Assets(Config()), scheduler, [], events) is None
    assert link.events[0]["event"] == "rejected" and link.events[0]["id"] == "k1"
    assert "cannot be read: KeyError" in link.events[0]["reason"]
    assert link.acks == [AckHandle(7, 1, 1)] and len(scheduler) == 0


def test_a_failing_rejected_event_still_acknowledges() -> None:
    link = _Link(fail_publish=True)
    events = Events(Health())
    events.attach(link)
    assert admit(_inbound(b'{"id":"x","text":42}', mid=9), Assets(Config()), Scheduler(8, 60.0), [], events) is None
    assert link.acks == [AckHandle(9, 1, 1)]


def test_a_service_message_has_nothing_to_acknowledge_and_an_id_of_its_own() -> None:
    """HTTP and Wyoming messages carry no broker packet id: none is acknowledged, and two of them
    with the same payload and no `id` are two announcements (ids from their serials)."""
    from edgetts.daemon.admission.admit import message_id
    from edgetts.daemon.inbound.services import service_inbound

    link = _Link()
    events = Events(Health())
    events.attach(link)
    scheduler = Scheduler(8, 60.0)
    verdicts: list[Any] = []
    first = service_inbound("test/x/announce", b"Mind the gap.", verdicts.append)
    second = service_inbound("test/x/announce", b"Mind the gap.", verdicts.append)
    assert first.ack is None and first.acks() == [] and first.serial != second.serial
    assert message_id(first, scheduler, time.time()) != message_id(second, scheduler, time.time())
    assert admit(first, Assets(Config()), scheduler, [], events) is not None
    assert (
        admit(
            service_inbound("test/x/announce", b'{"id":"x","text":42}', verdicts.append),
            Assets(Config()),
            scheduler,
            [],
            events,
        )
        is None
    )
    assert [v.accepted for v in verdicts] == [True, False] and link.acks == []
    # a broker's message keeps its packet id as what its redeliveries are known by
    assert _inbound(b"Mind the gap.", mid=9).delivery == "9" and first.delivery == f"local-{first.serial}"


def _publish_retained(broker: Broker, topic: str, payload: bytes) -> None:
    client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=f"retainer-{time.monotonic_ns()}")
    client.connect(broker.host, broker.port)
    client.loop_start()
    try:
        client.publish(topic, payload, qos=1, retain=True).wait_for_publish(5)
    finally:
        client.disconnect()
        client.loop_stop()


def test_hostile_payloads_each_rejected_once_and_the_next_one_plays(
    daemon_rig, mosquitto: Broker, caplog: pytest.LogCaptureFixture
) -> None:
    device = "intake-hostile"
    topic = f"test/{device}/announce"
    _publish_retained(mosquitto, topic, b'{"id":"stale","text":"Old news."}')
    try:
        with caplog.at_level(logging.INFO, logger="edgetts"):
            rig = daemon_rig(device=device)
            probe = rig.probe
            # the retained one came with the subscription
            retained = probe.wait_event("stale", "rejected", 10)
            assert "retained" in retained["reason"]
            calls = len(rig.voice.calls)  # the loudness calibration at start-up came before
            for name, payload, reason in HOSTILE:
                if not payload:
                    continue
                before = len(probe.events)
                probe.publish(payload)
                probe.wait(lambda p, n=before: len(p.events) > n, 10, name)
                time.sleep(0.05)  # a second event, if any, would be here by now
                new = probe.events[before:]
                assert [e["event"] for e in new] == ["rejected"], (name, new)
                assert reason in new[0]["reason"], (name, new)
            probe.publish({"id": "after", "text": "All good."})
            probe.wait_event("after", "finished")
            assert rig.daemon.link.connected and rig.thread.is_alive()
            assert probe.events_of("after") == ["queued", "started", "finished"]
            assert rig.voice.calls[calls:] == ["All good."]  # nothing hostile was read aloud
            pcm = rig.capture.pcm()
            expected = rig.expected("All good.")
            assert assert_played(pcm, expected, FADE) == 0 and pcm.size == expected.size
            ids = {e["id"] for e in probe.events if e["event"] == "rejected"}
            assert "a\\nb" in ids  # escaped, not a line break
        for record in caplog.records:
            assert "\n" not in record.getMessage() or record.exc_info, record.getMessage()
            assert "a\nb" not in record.getMessage()
    finally:
        _publish_retained(mosquitto, topic, b"")  # clears the retained message


def test_markup_is_spoken_clean(daemon_rig) -> None:
    rig = daemon_rig()
    calls = len(rig.voice.calls)
    rig.probe.publish(b'\xef\xbb\xbf{"id":"bom","text":"Hello."}')
    rig.probe.wait_event("bom", "finished")
    rig.probe.publish(b"<p>Gate <b>five</b> is closed.</p>")
    rig.probe.publish(b"\x1b[31mFire drill.\x1b[0m")
    rig.probe.publish({"id": "last", "text": "Done."})
    rig.probe.wait_event("last", "finished")
    assert [" ".join(c.split()) for c in rig.voice.calls[calls:]] == [
        "Hello.",
        "Gate five is closed.",
        "Fire drill.",
        "Done.",
    ]


def test_retained_announcements_play_when_accepted(daemon_rig, mosquitto: Broker) -> None:
    device = "intake-retained-on"
    topic = f"test/{device}/announce"
    _publish_retained(mosquitto, topic, b'{"id":"kept","text":"Kept."}')
    try:
        rig = daemon_rig(device=device, mqtt_extra="accept_retained: true")
        rig.probe.wait_event("kept", "finished", 15)
        assert rig.voice.calls[-1] == "Kept."
    finally:
        _publish_retained(mosquitto, topic, b"")
