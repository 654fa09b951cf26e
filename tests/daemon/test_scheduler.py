"""Scheduler: priority order, FIFO per priority, expiry, bound, dedup."""

from __future__ import annotations

from edgetts.daemon.admission.messages import Announcement
from edgetts.daemon.admission.scheduler import Entry, Scheduler


def entry(ident: str, priority: str = "normal", expires_at: float | None = None) -> Entry:
    return Entry(Announcement(id=ident, text="x", priority=priority), 0.0, expires_at)


def drain(s: Scheduler) -> list[str]:
    out = []
    while (e := s.pop()) is not None:
        out.append(e.id)
    return out


def test_priority_then_fifo() -> None:
    s = Scheduler(10, 60)
    for ident, prio in [
        ("l1", "low"),
        ("n1", "normal"),
        ("e1", "emergency"),
        ("n2", "normal"),
        ("h1", "high"),
        ("e2", "emergency"),
        ("l2", "low"),
    ]:
        assert s.offer(entry(ident, prio), 0).accepted
    assert drain(s) == ["e1", "e2", "h1", "n1", "n2", "l1", "l2"]


def test_requeued_entry_keeps_its_place() -> None:
    s = Scheduler(10, 60)
    a, b = entry("a"), entry("b")
    s.offer(a, 0)
    s.offer(b, 0)
    assert s.pop() is a
    s.offer(entry("c"), 0)
    s.requeue(a)  # interrupted: it was first among the normals
    assert drain(s) == ["a", "b", "c"]


def test_expiry() -> None:
    s = Scheduler(10, 60)
    s.offer(entry("soon", expires_at=10.0), 0)
    s.offer(entry("late", expires_at=100.0), 0)
    s.offer(entry("never"), 0)
    assert s.next_expiry() == 10.0
    assert [e.id for e in s.expire(9.9)] == []
    assert [e.id for e in s.expire(10.0)] == ["soon"]
    assert drain(s) == ["late", "never"]
    assert s.is_duplicate("soon", 11.0)  # an expired id is not played later either


def test_bound_and_displacement() -> None:
    s = Scheduler(2, 60)
    assert s.offer(entry("n1"), 0).accepted
    assert s.offer(entry("l1", "low"), 0).accepted
    full = s.offer(entry("l2", "low"), 0)
    assert not full.accepted and "queue full" in (full.reason or "")
    up = s.offer(entry("e1", "emergency"), 0)
    assert up.accepted and up.displaced is not None and up.displaced.id == "l1"
    assert not s.offer(entry("n2"), 0).accepted  # lowest queued is normal: not displaced
    assert drain(s) == ["e1", "n1"]
    assert not s.is_duplicate("l1", 0)  # the displaced one was never played


def test_dedup_window() -> None:
    s = Scheduler(10, 60)
    assert s.offer(entry("a"), 0).accepted
    assert s.offer(entry("a"), 1).duplicate  # queued
    s.pop()
    assert s.offer(entry("a"), 2).duplicate  # playing
    s.ended("a", 10)
    assert s.offer(entry("a"), 69).duplicate  # ended, within the window
    assert s.offer(entry("a"), 71).accepted  # forgotten


def test_failed_ids_are_not_remembered() -> None:
    s = Scheduler(10, 60)
    s.offer(entry("f"), 0)
    s.pop()
    s.ended("f", 1, remember=False)
    assert s.offer(entry("f"), 2).accepted
