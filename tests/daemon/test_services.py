"""Services inside the daemon (edgetts.daemon.inbound.services): what a service gets in its context, on
the in-process daemon (real mosquitto, ALSA capture, fake voices).  The Wyoming and HTTP servers
are tested in their own files; here a small probe service uses the context as they do."""

from __future__ import annotations

import json
import threading
from typing import Any

import numpy as np
import pytest

from edgetts.daemon.admission.admit import prepared
from edgetts.daemon.inbound.control import Control, Verdict
from edgetts.daemon.inbound.services import EventFeed, ServiceContext
from edgetts.daemon.playout.phrase_cache import voice_synthesis_config
from edgetts.errors import EdgeTTSError

from support.fakes import FakeVoice
from support.pcm import assert_played

pytestmark = pytest.mark.mqtt


class ProbeService:
    """Keeps its context; announces through it and waits for the verdict."""

    def __init__(self, name: str = "http", fail: Exception | None = None) -> None:
        self.name, self.fail = name, fail
        self.ctx: ServiceContext | None = None
        self.closed = threading.Event()

    def start(self, ctx: ServiceContext) -> None:
        if self.fail is not None:
            raise self.fail
        self.ctx = ctx

    def close(self) -> None:
        self.closed.set()

    def announce(self, payload: dict[str, Any] | bytes) -> Verdict:
        assert self.ctx is not None
        got: list[Verdict] = []
        done = threading.Event()
        raw = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        self.ctx.announce(raw, lambda v: (got.append(v), done.set()))
        assert done.wait(10), "no verdict"
        return got[0]


def test_a_service_announces_and_hears_the_same_verdict_as_the_events(daemon_rig) -> None:
    svc = ProbeService()
    rig = daemon_rig(services=lambda config: [svc])
    feed_sub = svc.ctx.feed.subscribe()
    assert svc.announce({"id": "h1", "text": "From the web page."}) == Verdict("h1", True)
    rig.probe.wait_event("h1", "finished")
    assert_played(rig.capture.pcm(), rig.expected("From the web page."), int(22050 * 5 / 1000))

    bad = svc.announce({"id": "h2", "text": "x", "priority": "urgent"})
    rejected = rig.probe.wait_event("h2", "rejected")
    assert not bad.accepted and bad.id == "h2" and bad.reason == rejected["reason"]
    unknown = svc.announce({"id": "h3", "text": "x", "voice": "nobody"})
    assert not unknown.accepted and "unknown voice 'nobody'" in (unknown.reason or "")
    again = svc.announce({"id": "h1", "text": "From the web page."})
    assert again.accepted and again.duplicate  # played within the dedup window: nothing new queued
    plain = svc.announce(b"Plain text gets an id of its own.")
    assert plain.accepted and len(plain.id) == 16
    assert rig.probe.wait_event(plain.id, "finished")

    # the feed saw exactly what went to the events topic, in order, and the status
    seen: list[dict[str, Any]] = []
    while (item := feed_sub.get(timeout=0.5)) is not None:
        if item.kind == "event" and item.payload["id"] == "h1":
            seen.append(item.payload)
    assert [e["event"] for e in seen] == ["queued", "started", "finished"]
    assert seen == [e for e in rig.probe.events if e["id"] == "h1"]
    assert svc.ctx.feed.status is not None and svc.ctx.feed.status["state"] == "online"
    feed_sub.close()
    rig.stop()
    assert svc.closed.is_set()


def test_a_service_stops_what_plays_through_the_loop(daemon_rig) -> None:
    svc = ProbeService()
    rig = daemon_rig(FakeVoice(delay_s=0.15), services=lambda config: [svc])
    svc.announce({"id": "s1", "text": " ".join(["One more sentence here."] * 10)})
    rig.probe.wait_event("s1", "started")
    svc.ctx.control(Control("stop", origin="http"))
    assert rig.probe.wait_event("s1", "cancelled")["reason"] == "stopped from http"


def test_side_synthesis_through_the_context_is_the_voice_s_audio(daemon_rig) -> None:
    svc = ProbeService()
    rig = daemon_rig(services=lambda config: [svc])
    assets = svc.ctx.assets()
    name = assets.config.voice.name
    text = prepared("Gate 5 is open. Please board now.", assets)
    stream = svc.ctx.side.open(assets.voices[name], text, voice_synthesis_config(assets.config.voice))
    got = [chunk.audio for chunk in stream]
    voice = rig.voice
    source = voice.received[-1].source
    assert "Gate five" in source or "Gate 5" in source  # (prepared: the fake speaks the source)
    expected = [voice.sentence_audio(i, s) for i, s in enumerate(voice.sentences(source))]
    assert len(got) == 2 and all(np.array_equal(g, e) for g, e in zip(got, expected))
    # and nothing of it was played
    assert not rig.capture.pcm().any()


def test_a_service_that_cannot_start_is_degraded_and_the_daemon_runs(daemon_rig) -> None:
    broken = ProbeService("wyoming", EdgeTTSError("port 10200 in use"))
    buggy = ProbeService("http", RuntimeError("oops"))
    rig = daemon_rig(services=lambda config: [broken, buggy])
    status = rig.probe.wait_status(lambda s: len(s.get("degraded", [])) >= 2)
    reasons = {d["what"]: d["reason"] for d in status["degraded"]}
    assert reasons["wyoming"] == "port 10200 in use"
    assert reasons["http"] == "did not start: RuntimeError: oops"
    rig.say("w1", "Announcements still play.")


def test_a_slow_feed_reader_loses_the_oldest_items_not_the_newest() -> None:
    feed = EventFeed()
    sub = feed.subscribe(maxlen=3)
    for i in range(5):
        feed.publish("event", json.dumps({"id": str(i), "event": "queued"}).encode())
    got = [item.payload["id"] for item in iter(lambda: sub.get(timeout=0), None)]
    assert got == ["2", "3", "4"] and sub.dropped == 2
    sub.close()
    feed.publish("event", b'{"id": "5"}')
    assert sub.get(timeout=0) is None  # closed: it gets nothing more
