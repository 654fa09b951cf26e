"""Where the time to first PCM goes (issue 14): the `started` event's ``timing_ms``."""

from __future__ import annotations

from pathlib import Path

import pytest

from edgetts.daemon.admission.messages import Event
from edgetts.daemon.playout.latency import HOPS, HopStamps


def _sums_to_latency(started: dict) -> None:
    timing = started["timing_ms"]
    assert all(value >= 0 for value in timing.values()), timing
    # Each hop is rounded to 0.01 ms and latency_ms to 0.1 ms.
    assert sum(timing.values()) == pytest.approx(started["latency_ms"], abs=0.05 + 0.005 * len(timing))


@pytest.mark.mqtt
def test_started_says_where_the_time_went_synthesized_and_cached(daemon_rig, tmp_path: Path) -> None:
    rig = daemon_rig(
        real_voices=True,
        streaming=True,
        voice_extra="fast_start_ids: 64",
        extra=f"cache:\n  dir: {tmp_path / 'phrases'}\n  max_mb: 5\n",
    )
    text = "The next train to arrive at platform two is the nine forty-two service to Edinburgh."
    started = rig.say("h1", text, timeout=60)
    timing = started["timing_ms"]
    # every hop, in order (`lead` only when the engine's plan held playback)
    assert tuple(timing) in (HOPS, tuple(h for h in HOPS if h != "lead")), timing
    _sums_to_latency(started)
    # The model's run is where a synthesized announcement's time goes: more than all the rest but
    # the planned hold (which buys the rest of the text time to be made, not the daemon's overhead).
    overhead = sum(v for k, v in timing.items() if k not in ("synth_first", "lead"))
    assert timing["synth_first"] > overhead, str(timing)

    hit = rig.say("h2", text, timeout=60)
    assert hit["cached"] is True
    # No synthesis thread on a phrase-cache hit: the loop feeds the job itself.
    assert tuple(hit["timing_ms"]) == ("inbox", "parse", "prepare", "queue", "device")
    _sums_to_latency(hit)


def test_a_stamp_after_the_first_pcm_ends_no_hop() -> None:
    # With a chime, the first PCM is the chime's: the voice's first chunk comes after it.
    stamps = HopStamps(10.0, inbox=10.001, parse=10.002, prepare=10.004, queue=10.005, handoff=10.006, synth_first=10.5)
    timing = stamps.timing_ms(10.010)
    assert timing == {"inbox": 1.0, "parse": 1.0, "prepare": 2.0, "queue": 1.0, "handoff": 1.0, "device": 4.0}
    # A resumed announcement: its queue stamp is newer than its handoff of the first play.
    resumed = HopStamps(10.0, inbox=10.001, parse=10.002, prepare=10.003, queue=20.0, handoff=15.0)
    assert resumed.timing_ms(20.5) == {"inbox": 1.0, "parse": 1.0, "prepare": 1.0, "queue": 9997.0, "device": 500.0}


def test_a_held_start_is_its_own_hop() -> None:
    stamps = HopStamps(
        10.0, inbox=10.001, parse=10.002, prepare=10.003, queue=10.004, handoff=10.005, synth_first=10.05, lead=10.15
    )
    assert stamps.timing_ms(10.152) == {
        "inbox": 1.0,
        "parse": 1.0,
        "prepare": 1.0,
        "queue": 1.0,
        "handoff": 1.0,
        "synth_first": 45.0,
        "lead": 100.0,
        "device": 2.0,
    }


def test_timing_ms_round_trips_on_the_wire() -> None:
    ev = Event(id="a", event="started", ts=1.5, latency_ms=3.0, timing_ms={"inbox": 0.5, "device": 2.5})
    assert Event.from_payload(ev.to_payload()) == ev
    assert "timing_ms" not in Event(id="a", event="queued", ts=1.5).to_payload().decode()
