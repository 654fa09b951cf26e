"""The shared names are an interface: publishers and dashboards match on them."""

from __future__ import annotations

import pytest

from edgetts.vocabulary import (
    CLIP_NAME_RE,
    DEGRADED,
    EVENTS,
    MAX_DEADLINE_MS,
    NAME_RE,
    PRIORITIES,
    priority_rank,
)


def test_names_on_the_wire() -> None:
    assert PRIORITIES == ("emergency", "high", "normal", "low")
    assert EVENTS == (
        "queued",
        "rejected",
        "started",
        "finished",
        "preempted",
        "expired",
        "failed",
        "fallback",
        "cancelled",
    )
    assert DEGRADED == (
        "audio",
        "audio_thread",
        "cache",
        "clips",
        "clock",
        "config",
        "cpu",
        "duck",
        "homeassistant",
        "http",
        "memory",
        "mqtt",
        "npu",
        "speed",
        "state",
        "voice",
        "wyoming",
    )
    assert MAX_DEADLINE_MS == 600000  # docs/daemon.md: deadline_ms 1-600000


def test_priority_rank_is_urgency_order() -> None:
    assert [priority_rank(p) for p in PRIORITIES] == [0, 1, 2, 3]
    with pytest.raises(ValueError):
        priority_rank("urgent")


@pytest.mark.parametrize("name", ["door-bell_2", "A", "x" * 64])
def test_clip_names_accepted(name: str) -> None:
    assert CLIP_NAME_RE.match(name)


@pytest.mark.parametrize("name", ["", "a/b", "..", "a.wav", "fire\n", "x" * 65])
def test_clip_names_refused(name: str) -> None:
    assert not CLIP_NAME_RE.match(name)


@pytest.mark.parametrize("name", ["hall-1", "en_US.joe", "fr", "x" * 64])
def test_names_accepted(name: str) -> None:
    assert NAME_RE.match(name)


@pytest.mark.parametrize("name", ["", "-x", ".x", "a/b", "a+b", "a#", "x" * 65, "hall-1\n", "fr\n"])
def test_names_refused(name: str) -> None:
    assert not NAME_RE.match(name)
