"""The pieces of exactly-once (issue 13), driven directly: the dedup memory on disk, the id of an
announcement that names none, the takeover watch.  (With a broker: test_outage.py.)"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from edgetts.config import QueueSettings
from edgetts.daemon.admission.admit import message_id
from edgetts.daemon.admission.dedup import FILE_NAME, DedupMemory, open_dedup_memory
from edgetts.daemon.admission.scheduler import Scheduler
from edgetts.daemon.health import Health
from edgetts.daemon.inbound.message import AckHandle, Inbound
from edgetts.daemon.inbound.takeover import SESSION_TAKEN_OVER, TakeoverWatch

T0 = 1_764_000_000.0


def test_memory_survives_reopening_and_forgets_outside_the_window(tmp_path: Path) -> None:
    path = tmp_path / FILE_NAME
    memory = DedupMemory(600, path, now=T0)
    memory.remember("old", T0)
    memory.remember("a\nb \ud800", T0 + 500)  # odd ids stay one line, and come back the same
    memory.remember("new", T0 + 590)
    memory.close()
    assert len(path.read_text().splitlines()) == 3
    again = DedupMemory(600, path, now=T0 + 700)
    assert again.ids() == ["a\nb \ud800", "new"]
    assert again.problem is None
    # Opening rewrote the file with the live ids only.
    assert [json.loads(line)[0] for line in path.read_text().splitlines()] == ["a\nb \ud800", "new"]


def test_a_torn_last_line_is_skipped(tmp_path: Path) -> None:
    path = tmp_path / FILE_NAME
    path.write_text(f'["kept", {T0}]\n["nan", NaN]\n[1, 2]\nnot json\n["torn", {T0}')
    memory = DedupMemory(600, path, now=T0 + 1)
    assert memory.ids() == ["kept"]


def test_memory_is_bounded_in_ram_and_on_disk(tmp_path: Path) -> None:
    path = tmp_path / FILE_NAME
    memory = DedupMemory(10_000, path, now=T0, max_entries=50)
    for i in range(1000):
        memory.remember(f"id-{i}", T0 + i)
        memory.forget_old(T0 + i)
    assert len(memory) == 50 and "id-999" in memory and "id-949" not in memory
    assert len(path.read_text().splitlines()) <= 2 * 50 + 256 + 1  # compacted as it went
    memory.close()
    assert DedupMemory(10_000, path, now=T0 + 1000, max_entries=50).ids() == [f"id-{i}" for i in range(950, 1000)]


def test_window_zero_remembers_nothing(tmp_path: Path) -> None:
    memory = DedupMemory(0, tmp_path / FILE_NAME, now=T0)
    memory.remember("x", T0)
    assert "x" not in memory


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes a read-only folder anyway")
def test_an_unwritable_state_dir_is_degraded_not_fatal(tmp_path: Path) -> None:
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o500)
    health = Health()
    memory = open_dedup_memory(QueueSettings(state_dir=str(folder)), health)
    memory.remember("x", T0)
    assert "x" in memory
    assert "RAM only" in (health.get("state") or "")


def test_an_unusable_state_dir_is_degraded_not_fatal(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    health = Health()
    memory = open_dedup_memory(QueueSettings(state_dir=str(blocker / "state")), health)
    memory.remember("x", T0)
    assert "x" in memory
    reason = health.get("state") or ""
    assert str(blocker / "state" / FILE_NAME) in reason and "RAM only" in reason


def test_state_dir_defaults_to_systemds(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("STATE_DIRECTORY", raising=False)
    assert QueueSettings().resolved_state_dir() is None
    monkeypatch.setenv("STATE_DIRECTORY", f"{tmp_path}:/other")
    assert QueueSettings().resolved_state_dir() == tmp_path
    assert QueueSettings(state_dir="/x").resolved_state_dir() == Path("/x")


def _inbound(payload: bytes, mid: int, dup: bool, at: float = T0, topic: str = "p/d/announce") -> Inbound:
    return Inbound(topic=topic, payload=payload, ack=AckHandle(mid, 1, 1), dup=dup, received_at=at, received_mono=0.0)


def test_message_id_is_stable_per_message_and_keeps_its_format() -> None:
    scheduler = Scheduler(32, 600)
    first = message_id(_inbound(b"Gate nine.", 7, False), scheduler, T0)
    assert len(first) == 16 and int(first, 16) >= 0  # 16 hex digits, as the random ids were
    assert message_id(_inbound(b"Gate nine.", 7, True, T0 + 60), scheduler, T0 + 60) == first
    others = {
        message_id(m, scheduler, T0)
        for m in (
            _inbound(b"Gate nine.", 8, False),
            _inbound(b"Gate ten.", 7, False),
            _inbound(b"Gate nine.", 7, False, topic="p/all/announce"),
        )
    }
    assert first not in others and len(others) == 3


def test_a_new_message_reusing_a_packet_id_is_not_a_duplicate() -> None:
    scheduler = Scheduler(32, 600)
    old = message_id(_inbound(b"Gate nine.", 1, False), scheduler, T0)
    scheduler.ended(old, T0)
    # The broker lost the session and counts from 1 again: same words, same packet id, no DUP.
    fresh = message_id(_inbound(b"Gate nine.", 1, False, T0 + 30), scheduler, T0 + 30)
    assert fresh != old and not scheduler.is_duplicate(fresh, T0 + 30)
    # A redelivery (DUP) of the played one is still recognised.
    assert scheduler.is_duplicate(message_id(_inbound(b"Gate nine.", 1, True), scheduler, T0 + 31), T0 + 31)


def test_takeover_reason_code_starts_an_episode_at_once() -> None:
    watch = TakeoverWatch("edgetts-hall-1", "hall-1", 60)
    watch.connected(0.0)
    got = watch.disconnected(500.0, SESSION_TAKEN_OVER)
    assert got is not None and got.first
    assert "'edgetts-hall-1'" in got.reason and "device.id 'hall-1'" in got.reason
    watch.connected(560.0)
    again = watch.disconnected(561.0, 0x80)
    assert again is not None and not again.first and again.reason == got.reason
    watch.connected(600.0)
    assert not watch.stable(650.0)
    assert watch.stable(721.0) and not watch.in_episode


def test_short_connections_look_like_a_takeover_a_broker_restart_does_not() -> None:
    watch = TakeoverWatch("c", "d", 60)
    watch.connected(0.0)
    assert watch.disconnected(3600.0, 0x80) is None  # a long connection lost: an outage
    for start in (3700.0, 3705.0):
        watch.connected(start)
        assert watch.disconnected(start + 1.5, 0x80) is None
    watch.connected(3710.0)
    got = watch.disconnected(3711.5, 0x80)
    assert got is not None and got.first and "3 connections in 60 s" in got.reason
