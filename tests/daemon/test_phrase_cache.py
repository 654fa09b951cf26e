"""The phrase cache (issue 6): hit, miss, LRU eviction, corruption, restarts, atomic
writes, the voice hash; then the daemon playing a cached phrase at once."""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from edgetts.daemon.playout.phrase_cache import SUFFIX, PhraseCache, cache_key, voice_hash
from edgetts.engine import AudioChunk, SynthesisConfig
from edgetts.text.prepare import Prepared

from support.fakes import FakeVoice
from support.pcm import assert_played

FADE = int(22050 * 5 / 1000)


def sentences(seed: int, n: int = 2, size: int = 5000) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.uniform(-0.9, 0.9, size + 100 * i).astype(np.float32) for i in range(n)]


def entry_bytes(cache: PhraseCache, key: str) -> int:
    return (cache.directory / f"{key}{SUFFIX}").stat().st_size


def test_key_covers_voice_hash_text_and_settings() -> None:
    base = cache_key("default", "h1", "mind the gap.", SynthesisConfig())
    assert base == cache_key("default", "h1", "mind the gap.", SynthesisConfig())
    others = {
        cache_key("other", "h1", "mind the gap.", SynthesisConfig()),
        cache_key("default", "h2", "mind the gap.", SynthesisConfig()),
        cache_key("default", "h1", "mind the gap!", SynthesisConfig()),
        cache_key("default", "h1", "mind the gap.", SynthesisConfig(length_scale=1.1)),
        cache_key("default", "h1", "mind the gap.", SynthesisConfig(noise_scale=0)),
        cache_key("default", "h1", "mind the gap.", SynthesisConfig(), extra="lexicon"),
    }
    assert base not in others and len(others) == 6


def test_phrase_key_tells_streamed_and_fast_start_phrases_apart() -> None:
    from dataclasses import replace

    from edgetts.config import Config
    from edgetts.daemon.playout.phrase_cache import phrase_key

    default = Config()
    whole = replace(default, voice=replace(default.voice, streaming=False))
    streamed = replace(whole, voice=replace(whole.voice, streaming=True, fast_start_ids=0))
    fast = replace(whole, voice=replace(whole.voice, streaming=True, fast_start_ids=64))
    assert default.voice == fast.voice  # issue 14: streaming with fast start is the default
    keys = {phrase_key(c, whole.voice.name, "h1", "Mind the gap.", SynthesisConfig()) for c in (whole, streamed, fast)}
    assert len(keys) == 3
    # a voice not in the config (none of these settings) keys as whole-sentence
    assert phrase_key(streamed, "elsewhere", "h1", "Mind the gap.", SynthesisConfig()) == phrase_key(
        whole, "elsewhere", "h1", "Mind the gap.", SynthesisConfig()
    )


def test_render_speaks_as_the_daemon_would(tmp_path: Path) -> None:
    from dataclasses import replace

    from edgetts.cli.render import render_voice
    from edgetts.config import Config

    config = Config()
    config = replace(config, voice=replace(config.voice, threads=1, streaming=True, fast_start_ids=64))
    voice = render_voice(config.voice.name, config)
    assert voice.streaming is not None and voice.streaming.fast_start_ids == 64  # type: ignore[attr-defined]


def test_hit_miss_and_restart(tmp_path: Path) -> None:
    cache = PhraseCache(tmp_path / "c", 10_000_000)
    key = cache_key("v", "h", "hello.", SynthesisConfig())
    assert cache.get(key) is None and cache.stats.misses == 1
    audio = sentences(1)
    assert cache.put(key, 22050, audio, "Hello.")
    got = cache.get(key)
    assert got is not None and cache.stats.hits == 1
    assert got.sample_rate == 22050 and len(got.sentences) == 2
    assert all(np.array_equal(a, b) for a, b in zip(got.sentences, audio, strict=True))  # bit-exact
    # a new process (a restart) finds it
    again = PhraseCache(tmp_path / "c", 10_000_000)
    assert key in again and len(again) == 1
    assert np.array_equal(again.get(key).sentences[1], audio[1])
    # no temporary files are left; one written by a crash mid-write is cleaned up at start
    assert [p.name for p in (tmp_path / "c").iterdir()] == [f"{key}{SUFFIX}"]
    (tmp_path / "c" / ".tmp-crashed").write_bytes(b"half")
    PhraseCache(tmp_path / "c", 10_000_000)
    assert not (tmp_path / "c" / ".tmp-crashed").exists()


def test_min_uses_writes_a_phrase_only_when_it_comes_again(tmp_path: Path) -> None:
    cache = PhraseCache(tmp_path / "c", 10_000_000, min_uses=2)
    once = cache_key("v", "h", "one-off.", SynthesisConfig())
    twice = cache_key("v", "h", "repeated.", SynthesisConfig())
    assert not cache.put(once, 22050, sentences(0), "One-off.")
    assert not cache.put(twice, 22050, sentences(0), "Repeated.")
    assert list((tmp_path / "c").iterdir()) == [] and cache.stats.writes == 0  # nothing on the card
    assert cache.put(twice, 22050, sentences(0), "Repeated.")
    assert [p.name for p in (tmp_path / "c").iterdir()] == [f"{twice}{SUFFIX}"]
    assert cache.get(twice) is not None and cache.get(once) is None


@pytest.mark.parametrize("damage", ["flip", "truncate", "header", "swap", "empty"])
def test_corrupt_entry_is_detected_and_dropped(tmp_path: Path, damage: str) -> None:
    cache = PhraseCache(tmp_path, 10_000_000)
    key, other = cache_key("v", "h", "a.", SynthesisConfig()), cache_key("v", "h", "b.", SynthesisConfig())
    cache.put(key, 22050, sentences(2))
    cache.put(other, 22050, sentences(3))
    path = tmp_path / f"{key}{SUFFIX}"
    blob = bytearray(path.read_bytes())
    if damage == "flip":
        blob[-1000] ^= 0x40  # one bit of one sample
    elif damage == "truncate":
        blob = blob[:-4]
    elif damage == "header":
        blob[10] ^= 0xFF
    elif damage == "swap":  # another entry's content under this key
        blob = bytearray((tmp_path / f"{other}{SUFFIX}").read_bytes())
    else:
        blob = bytearray()
    path.write_bytes(bytes(blob))
    assert cache.get(key) is None
    assert cache.stats.corrupt == 1 and not path.exists() and key not in cache
    assert cache.get(other) is not None  # the others are untouched
    # re-synthesized and stored again: a hit from then on
    cache.put(key, 22050, sentences(2))
    assert np.array_equal(cache.get(key).sentences[0], sentences(2)[0])


def _mtime_ns(cache: PhraseCache, key: str) -> int:
    return (cache.directory / f"{key}{SUFFIX}").stat().st_mtime_ns


def _set_mtime(cache: PhraseCache, key: str, seconds: int) -> None:
    """An explicit mtime (long ago): the kernel's file clock is coarser than the few ms between
    two writes of a test, so the order the files say is set, not raced."""
    os.utime(cache.directory / f"{key}{SUFFIX}", ns=(seconds * 10**9, seconds * 10**9))


def test_lru_eviction_by_size_survives_restart(tmp_path: Path) -> None:
    keys = [cache_key("v", "h", f"phrase {i}.", SynthesisConfig()) for i in range(4)]
    probe = PhraseCache(tmp_path / "probe", 10_000_000)
    probe.put(keys[0], 22050, sentences(0))
    size = entry_bytes(probe, keys[0])
    cache = PhraseCache(tmp_path / "c", 2 * size + size // 2)  # room for two entries
    cache.put(keys[0], 22050, sentences(0))
    cache.put(keys[1], 22050, sentences(1))
    _set_mtime(cache, keys[0], 1000)  # as written: 0, then 1
    _set_mtime(cache, keys[1], 2000)
    assert cache.get(keys[0]) is not None  # 0 is now the most recently used
    # the hit touched the file (to now): the order survives a restart
    assert _mtime_ns(cache, keys[0]) > 2000 * 10**9
    cache.put(keys[2], 22050, sentences(2))
    assert keys[1] not in cache and keys[0] in cache and keys[2] in cache
    assert not (tmp_path / "c" / f"{keys[1]}{SUFFIX}").exists()
    assert cache.stats.evictions == 1 and cache.total_bytes <= cache.max_bytes
    # written after the hit: not older than the touch (the same coarse tick at most)
    assert _mtime_ns(cache, keys[2]) >= _mtime_ns(cache, keys[0])
    # after a restart the order comes from the files: 0 was used before 2 was written
    # (explicit mtimes: the two came within one tick of the file clock here)
    _set_mtime(cache, keys[0], 3000)
    _set_mtime(cache, keys[2], 4000)
    again = PhraseCache(tmp_path / "c", 2 * size + size // 2)
    again.put(keys[3], 22050, sentences(3))
    assert keys[0] not in again and keys[2] in again and keys[3] in again
    # ... the files' order, not the names': the other way round, the other one goes
    other = PhraseCache(tmp_path / "d", 2 * size + size // 2)
    other.put(keys[0], 22050, sentences(0))
    other.put(keys[2], 22050, sentences(2))
    _set_mtime(other, keys[0], 4000)
    _set_mtime(other, keys[2], 3000)
    other_again = PhraseCache(tmp_path / "d", 2 * size + size // 2)
    other_again.put(keys[3], 22050, sentences(3))
    assert keys[2] not in other_again and keys[0] in other_again and keys[3] in other_again
    # a cache made smaller evicts at start; an entry larger than the whole cache is not stored
    small = PhraseCache(tmp_path / "c", size + 10)
    assert len(small) == 1 and keys[3] in small
    assert not small.put(keys[1], 22050, sentences(1, n=4))


def test_voice_hash_follows_content_not_place(test_voices: dict[str, Path], tmp_path: Path) -> None:
    from edgetts.voice.catalog import load_voice

    ok = load_voice(test_voices["ok"], threads=1)
    copy_dir = tmp_path / "copied"
    copy_dir.mkdir()
    for suffix in ("", ".json"):
        shutil.copy(str(test_voices["ok"]) + suffix, copy_dir / f"test-ok.onnx{suffix}")  # new mtime
    os.utime(copy_dir / "test-ok.onnx", (1, 1))
    copied = load_voice(copy_dir / "test-ok.onnx", threads=1)
    assert voice_hash(ok) == voice_hash(copied)  # render elsewhere, copy to the board: still hits
    with open(copy_dir / "test-ok.onnx", "ab") as f:
        f.write(b"\0")  # other content: another voice as far as the cache knows
    assert voice_hash(copied) != voice_hash(ok)
    assert voice_hash(FakeVoice("a")) != voice_hash(FakeVoice("b"))


# ---------------------------------------------------------------- the daemon


def with_cache(cache_dir: Path) -> str:
    """The config section of a small phrase cache in ``cache_dir``."""
    return f"cache:\n  dir: {cache_dir}\n  max_mb: 5\n"


@pytest.mark.mqtt
def test_daemon_cache_hit_plays_without_the_voice_corrupt_resynthesized_restart_hits(
    daemon_rig, tmp_path: Path
) -> None:
    """Hit or miss as the daemon reports it (`cached: true` on `started`) and as the voice's calls
    count it. How fast a hit starts is a benchmark's business (tools/bench_daemon: cached_ms)."""
    cache_dir = tmp_path / "phrases"
    voice = FakeVoice()
    rig = daemon_rig(voice, device="cache-1", extra=with_cache(cache_dir))
    text = "The lift is out of order. Please use the stairs."
    miss = rig.say("c1", text)
    assert "cached" not in miss
    assert voice.calls.count(text) == 1 and len(list(cache_dir.glob(f"*{SUFFIX}"))) == 1
    # the same words (normalised: case and spacing aside) from the cache, without the voice
    hit = rig.say("c2", "The lift is out of order.  Please use the stairs.")
    assert hit["cached"] is True, hit
    assert voice.calls.count(text) == 1 and len(voice.calls) == 2  # calibration + the one synthesis
    assert rig.daemon.cache.stats.hits == 1
    pcm = rig.capture.pcm()
    ref = rig.expected(text)
    at = assert_played(pcm, ref, FADE)
    assert_played(pcm, ref, FADE, at + ref.size)  # the hit is bit-identical to the synthesis
    # a corrupt entry: detected, dropped, synthesized again (and stored again)
    entry = next(cache_dir.glob(f"*{SUFFIX}"))
    blob = bytearray(entry.read_bytes())
    blob[-100] ^= 0x01
    entry.write_bytes(bytes(blob))
    again = rig.say("c3", text)
    assert "cached" not in again and voice.calls.count(text) == 2
    assert rig.daemon.cache.stats.corrupt == 1
    rig.close()
    # a restart (new daemon, new voice object, same cache folder) hits, the voice not asked
    voice2 = FakeVoice()
    rig2 = daemon_rig(voice2, device="cache-2", extra=with_cache(cache_dir))
    hit2 = rig2.say("c4", text)
    assert hit2["cached"] is True and voice2.calls.count(text) == 0


class GatedVoice(FakeVoice):
    """Speaks texts with "hold" only once the test opens :attr:`gate` (a synthesis that never ends by itself)."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()
        self.holding = threading.Event()
        """Set while a synthesis waits at the gate."""

    def synthesize(self, text: str | Prepared, config: SynthesisConfig | None = None) -> Iterator[AudioChunk]:
        for chunk in super().synthesize(text, config):
            if "hold" in FakeVoice.source(text).lower():
                self.holding.set()
                assert self.gate.wait(60), "never released"
            yield chunk


@pytest.mark.mqtt
def test_daemon_cache_hit_plays_while_the_synthesis_thread_is_busy(daemon_rig, tmp_path: Path) -> None:
    """'At once' as an event, not a stopwatch: a hit is played from the loop without the synthesis
    thread, so it starts and finishes while that thread is stuck in another announcement's voice."""
    voice = GatedVoice()
    rig = daemon_rig(voice, extra=with_cache(tmp_path / "phrases"))
    text = "Mind the gap."
    assert "cached" not in rig.say("h1", text)
    try:
        rig.probe.publish({"id": "held", "text": "Please hold the line."})
        assert voice.holding.wait(20)  # the synthesis thread is inside the voice, until the gate opens
        # an emergency interrupts it (its voice cannot be interrupted: the thread stays stuck)
        rig.probe.publish({"id": "h2", "text": text, "priority": "emergency"})
        rig.probe.wait_event("h2", "finished", 20)
        assert rig.probe.wait_event("h2", "started")["cached"] is True
        assert not voice.gate.is_set() and voice.calls.count(text) == 1
    finally:
        voice.gate.set()
    rig.probe.wait_event("held", "finished", 20)


class WindowedVoice(FakeVoice):
    """A streaming voice: each sentence comes in three windows (edgetts.voice.piper.streaming)."""

    def synthesize(self, text: str | Prepared, config: SynthesisConfig | None = None) -> Iterator[AudioChunk]:
        for chunk in super().synthesize(text, config):
            thirds = np.array_split(chunk.audio, 3)
            for n, part in enumerate(thirds):
                yield AudioChunk(
                    part, chunk.sample_rate, chunk.sentence_index, is_last_in_sentence=n == len(thirds) - 1
                )


@pytest.mark.mqtt
def test_daemon_caches_a_streaming_voice_by_sentence(daemon_rig, tmp_path: Path) -> None:
    cache_dir = tmp_path / "phrases"
    voice = WindowedVoice(delay_s=0.1)
    rig = daemon_rig(voice, device="cache-3", extra=with_cache(cache_dir))
    text = "Platform two. Mind the gap."
    assert "cached" not in rig.say("w1", text)
    entry = rig.daemon.cache.get(next(cache_dir.glob(f"*{SUFFIX}")).stem)
    assert entry is not None and len(entry.sentences) == 2  # windows joined into their sentences
    hit = rig.say("w2", text)
    assert hit["cached"] is True and voice.calls.count(text) == 1, hit
    pcm = rig.capture.pcm()
    ref = rig.expected(text)
    at = assert_played(pcm, ref, FADE)
    assert_played(pcm, ref, FADE, at + ref.size)  # the hit is the same audio


def test_unwritable_folder_is_not_fatal(tmp_path: Path) -> None:
    cache = PhraseCache(tmp_path / "ro", 10_000_000)
    key = cache_key("v", "h", "x.", SynthesisConfig())
    (tmp_path / "ro").chmod(0o500)
    try:
        if os.access(tmp_path / "ro", os.W_OK):  # root ignores the mode: take the folder away instead
            shutil.rmtree(tmp_path / "ro")
            (tmp_path / "ro").write_text("not a folder")
        assert cache.put(key, 22050, sentences(1)) is False
        assert cache.get(key) is None and len(cache) == 0
    finally:
        (tmp_path / "ro").chmod(0o700)
