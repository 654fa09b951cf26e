"""The intake journal, the second line of defence (issue 13): a message whose intake was under
way when the daemon died twice is rejected as `poison`; one killed while *playing* is replayed.

How a death during intake is produced: no payload crashes the intake any more
(that is test_intake.py), and no validation is slow enough to SIGKILL the
daemon inside it reliably without a hook in the product.  So the subprocess
test writes the journal state two deaths leave behind, with the product's own
:class:`IntakeJournal` (the same files the daemon writes before each intake),
then starts the real daemon and delivers that message: exactly what the third
start sees after two crashes.  The SIGKILL test kills a real daemon while it
plays, and checks on disk that nothing was left in the journal to count.
"""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest

from edgetts.daemon.admission.journal import MAX_ENTRIES, POISON_AFTER, IntakeJournal, journal_folder, message_key

from support.alsa import Capture
from support.broker import Broker
from support.daemon import DaemonProcess, config_yaml
from support.probe import Probe

pytestmark = pytest.mark.mqtt


def test_journal_counts_deaths_and_forgets_finished_intakes(tmp_path: Path) -> None:
    folder = tmp_path / "journal"
    journal = IntakeJournal(folder)
    first = journal.begin("t/a/announce", b"x")
    assert (first.deaths, first.poison) == (0, False)
    assert journal.entries() == {first.key: 1}  # on disk before the intake runs
    journal.finish(first)
    assert journal.entries() == {} and list(folder.iterdir()) == []
    # two intakes begun and never finished = two deaths (a new journal = a restart)
    for deaths in range(POISON_AFTER):
        assert IntakeJournal(folder).begin("t/a/announce", b"boom").deaths == deaths
    third = IntakeJournal(folder).begin("t/a/announce", b"boom")
    assert third.poison and third.deaths == POISON_AFTER
    # the same payload on another topic is another message
    assert IntakeJournal(folder).begin("t/b/announce", b"boom").deaths == 0
    assert message_key("t/a/announce", b"boom") != message_key("t/a/announceb", b"oom")


def test_journal_is_bounded_and_survives_a_torn_file(tmp_path: Path) -> None:
    journal = IntakeJournal(tmp_path)
    for i in range(MAX_ENTRIES * 2):
        journal.begin("t", str(i).encode())
    assert len(journal.entries()) <= MAX_ENTRIES
    torn = journal.begin("t", b"torn")
    (tmp_path / f"{torn.key}.intake").write_bytes(b"\xff\x00")
    assert journal.begin("t", b"torn").deaths == 1  # counted as a death, never as none


def test_journal_folder_default_and_a_folder_that_cannot_be_used(tmp_path: Path) -> None:
    assert journal_folder(None, {}) is None
    assert journal_folder(None, {"CACHE_DIRECTORY": "/var/cache/edgetts"}) == Path("/var/cache/edgetts/intake")
    assert journal_folder("/srv/j", {"CACHE_DIRECTORY": "/x"}) == Path("/srv/j")
    blocker = tmp_path / "file"
    blocker.write_text("")
    broken = IntakeJournal(blocker / "sub")
    assert broken.folder is None and broken.problem is not None and "cannot use" in broken.problem
    assert broken.begin("t", b"x").deaths == 0  # runs without the journal


def _wait_state(probe: Probe, state: str, after: int, timeout: float) -> None:
    """A status with ``state`` among those received after the first ``after`` ones."""
    probe.wait(lambda p: any(s["state"] == state for s in p.statuses[after:]), timeout, state)


def _config(mosquitto: Broker, device: str, journal: Path, audio_extra: str = "") -> str:
    return config_yaml(mosquitto, device, mqtt_extra=f"journal_dir: {journal}", audio_extra=audio_extra)


def test_a_message_that_killed_the_daemon_twice_is_rejected_as_poison(
    mosquitto: Broker,
    alsa_capture: Capture,
    tmp_path: Path,
    daemon_processes: list[DaemonProcess],
) -> None:
    device = "proc-poison"
    topic = f"test/{device}/announce"
    journal_dir = tmp_path / "journal"
    config = tmp_path / "edgetts.yaml"
    config.write_text(_config(mosquitto, device, journal_dir))
    poison = b'{"id": "poison-1", "text": "This one crashed it twice."}'
    once = b'{"id": "once-1", "text": "This one crashed it once."}'
    # The state two deaths while reading `poison`, and one while reading `once`, leave behind.
    for _ in range(POISON_AFTER):
        IntakeJournal(journal_dir).begin(topic, poison)
    IntakeJournal(journal_dir).begin(topic, once)
    assert sorted(IntakeJournal(journal_dir).entries().values()) == [1, POISON_AFTER]
    probe = Probe(mosquitto, "test", device)
    try:
        daemon = DaemonProcess(config, alsa_capture.env, tmp_path / "daemon.log").start()
        daemon_processes.append(daemon)
        probe.wait_status(lambda s: s["state"] == "online", 60)
        probe.publish(poison)
        rejected = probe.wait_event("poison-1", "rejected", 20)
        assert rejected["reason"].startswith("poison:") and f"died {POISON_AFTER} times" in rejected["reason"]
        probe.publish(once)  # one death is not enough: read, and played
        probe.wait_event("once-1", "finished", 60)
        probe.publish({"id": "next", "text": "Next."})
        probe.wait_event("next", "finished", 60)
        assert probe.events_of("poison-1") == ["rejected"]
        assert probe.events_of("once-1") == ["queued", "started", "finished"]
        assert IntakeJournal(journal_dir).entries() == {}  # both finished: nothing left to count
        assert daemon.proc is not None and daemon.proc.poll() is None
        daemon.signal(signal.SIGTERM)
        daemon.assert_clean_exit(15)
        out = daemon.output()
        assert "rejected as poison" in out and "Traceback" not in out
    finally:
        probe.close()


def test_killed_while_playing_leaves_nothing_in_the_journal_and_replays(
    mosquitto: Broker,
    alsa_capture: Capture,
    tmp_path: Path,
    daemon_processes: list[DaemonProcess],
) -> None:
    device = "proc-poison-play"
    journal_dir = tmp_path / "journal"
    config = tmp_path / "edgetts.yaml"
    config.write_text(_config(mosquitto, device, journal_dir, audio_extra="realtime_pacing: true"))
    probe = Probe(mosquitto, "test", device)
    text = (
        "Attention all staff: a fire drill will take place today at 2 pm. When you hear the "
        "alarm, leave the building by the nearest exit."
    )
    try:
        for run in range(POISON_AFTER):  # killed while playing as often as a poison message kills
            capture = {**alsa_capture.env, "ALSA_CAPTURE_FILE": str(tmp_path / f"killed-{run}.raw")}
            seen = len(probe.statuses)
            killed = DaemonProcess(config, capture, tmp_path / f"killed-{run}.log").start()
            daemon_processes.append(killed)
            _wait_state(probe, "online", seen, 60)
            if run == 0:
                probe.publish({"id": "drill", "text": text})
            probe.wait(lambda p, n=run + 1: p.events_of("drill").count("started") >= n, 60, "started")
            time.sleep(0.5)
            killed.kill()  # SIGKILL mid-announcement
            assert IntakeJournal(journal_dir).entries() == {}, f"run {run}: a death while playing was counted"
            _wait_state(probe, "offline", seen, 10)  # the Last Will
        last = DaemonProcess(config, alsa_capture.env, tmp_path / "last.log").start()
        daemon_processes.append(last)
        probe.wait_event("drill", "finished", 90)
        assert "rejected" not in probe.events_of("drill")
        assert probe.events_of("drill")[-3:] == ["queued", "started", "finished"]
        last.signal(signal.SIGTERM)
        last.assert_clean_exit(15)
    finally:
        probe.close()
