"""`edgetts render` (issue 6): progress and summary, idempotence, clips, errors, and
the daemon playing what was rendered straight from the cache."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from edgetts.daemon.playout.clips import read_wav
from edgetts.daemon.playout.phrase_cache import SUFFIX, PhraseCache

from support.broker import Broker
from support.daemon import config_yaml
from support.paths import ROOT
from support.pcm import assert_played


def run_render(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ORT_DISABLE_TELEMETRY": "1"}
    res = subprocess.run(
        [sys.executable, "-m", "edgetts.cli", "render", *args],
        cwd=cwd or ROOT,
        env=env,
        capture_output=True,
        timeout=120,
    )  # bytes: keep the \r of the bar
    return subprocess.CompletedProcess(res.args, res.returncode, res.stdout.decode(), res.stderr.decode())


@pytest.fixture()
def setup(tmp_path: Path, test_voices: dict[str, Path]) -> tuple[Path, Path, Path]:
    cache, clips = tmp_path / "cache", tmp_path / "clips"
    config = tmp_path / "edgetts.yaml"
    config.write_text(
        f"voice:\n  model: {test_voices['ok']}\n  threads: 1\n  noise_scale: 0\n  noise_w: 0\n"
        f"voices:\n  other:\n    model: {test_voices['multi']}\n    speaker_id: 1\n"
        f"clips:\n  dir: {clips}\ncache:\n  dir: {cache}\n  max_mb: 50\n"
    )
    return config, cache, clips


def test_render_progress_summary_and_idempotence(setup, tmp_path: Path) -> None:
    config, cache, clips = setup
    phrases = tmp_path / "site.yaml"
    phrases.write_text(
        "phrases:\n"
        "  - Mind the gap.\n"
        "  - The next train departs at 9:42 from platform 2.\n"
        "  - {text: Welcome aboard., voice: other}\n"
        "clips:\n"
        "  fire_alarm: Fire alarm. Please leave the building.\n"
        "  closing: {text: The shop is closing., voice: other}\n"
    )
    first = run_render(str(phrases), "--config", str(config), "--progress")
    assert first.returncode == 0, first.stderr
    assert first.stdout.strip() == (
        f"5 phrases: 3 rendered, 0 already cached, 2 clips written, 0 clips unchanged, 0 failed "
        f"({first.stdout.split('(')[1].split(')')[0]}) into cache {cache}, clips {clips}"
    )
    # the progress bar: redrawn in place on stderr, from 0/5 to 5/5, then a newline
    frames = [f for f in first.stderr.split("\r") if f.startswith("render [")]
    counts = [f.split("] ")[1].split()[0] for f in frames]
    assert counts == ["0/5", "1/5", "2/5", "3/5", "4/5", "5/5"], first.stderr
    assert frames[0].startswith("render [" + "." * 30 + "]") and frames[-1].startswith("render [" + "#" * 30 + "]")
    assert first.stderr.endswith("\n")
    entries = sorted(cache.glob(f"*{SUFFIX}"))
    assert len(entries) == 5  # the clips' audio is cached too (so the second run is free)
    audio, rate = read_wav(clips / "fire_alarm.wav")
    assert rate == 22050 and audio.size > 1000 and np.abs(audio).max() > 0.1

    # (a cache hit touches the entry's mtime: the LRU order; a rewrite would make a new inode)
    def stamp(p: Path) -> tuple[int, int | None, bytes]:
        st = p.stat()
        return st.st_ino, None if p.suffix == SUFFIX else st.st_mtime_ns, p.read_bytes()

    stamps = {p: stamp(p) for p in [*entries, clips / "fire_alarm.wav", clips / "closing.wav"]}

    # again: nothing to do, nothing rewritten; no tty and no --progress: no bar
    second = run_render(str(phrases), "--config", str(config))
    assert second.returncode == 0, second.stderr
    assert second.stdout.startswith(
        "5 phrases: 0 rendered, 3 already cached, 0 clips written, 2 clips unchanged, 0 failed"
    ), second.stdout
    assert "render [" not in second.stderr
    assert {p: stamp(p) for p in stamps} == stamps
    # --force renders everything again (same bytes: deterministic settings)
    forced = run_render(str(phrases), "--config", str(config), "--force")
    assert "3 rendered, 0 already cached, 2 clips written" in forced.stdout
    assert read_wav(clips / "fire_alarm.wav")[0].tobytes() == audio.tobytes()


def test_txt_file_failures_and_errors(setup, tmp_path: Path) -> None:
    config, cache, clips = setup
    txt = tmp_path / "p.txt"
    txt.write_text("# a comment\n\nGate 17 is now open.\n... !!!\nThank you.\n")
    out = run_render(str(txt), "--config", str(config))
    assert out.returncode == 1  # one phrase could not be rendered: said, counted, the rest done
    assert "2 rendered, 0 already cached, 0 clips written, 0 clips unchanged, 1 failed" in out.stdout
    assert f"edgetts: warning: {txt}:4:" in out.stderr
    assert len(list(cache.glob(f"*{SUFFIX}"))) == 2
    # one-line errors, no traceback
    cases = [
        ((str(tmp_path / "missing.txt"), "--config", str(config)), "cannot read"),
        ((str(txt), "--config", str(tmp_path / "nope.yaml")), "cannot read"),
        ((str(txt), "--config", str(config), "--voice", "french"), "unknown voice 'french'"),
    ]
    for content, why in (
        ("clips:\n  ../evil: hi\n", "is a path"),
        ("phrases: [1]\n", "expected a text"),
        ("phrases:\n  - {text: hi, voice: nope}\n", "unknown voice 'nope'"),
        ("phrases: [\n", "bad YAML"),
        ("what: 1\n", "expected a list"),
    ):
        path = tmp_path / f"bad{len(cases)}.yaml"
        path.write_text(content)
        cases.append(((str(path), "--config", str(config)), why))
    for args, why in cases:
        res = run_render(*args)
        assert res.returncode == 1 and res.stdout == "", (args, res.stdout)
        lines = res.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("edgetts: error: ") and why in lines[0], (args, res.stderr)
    assert not (clips / "evil.wav").exists() and not (tmp_path / "evil.wav").exists()
    nocache = tmp_path / "nocache.yaml"
    nocache.write_text(config.read_text().replace(f"cache:\n  dir: {cache}\n", "cache:\n"))
    res = run_render(str(txt), "--config", str(nocache))
    assert "edgetts: error: no phrase cache to render into" in res.stderr
    res = run_render(str(txt), "--config", str(nocache), "--cache-dir", str(tmp_path / "elsewhere"))
    assert res.returncode == 1 and len(list((tmp_path / "elsewhere").glob(f"*{SUFFIX}"))) == 2


@pytest.mark.mqtt
def test_daemon_plays_rendered_phrases_from_the_cache(
    setup, tmp_path: Path, mosquitto: Broker, daemon_rig, test_voices
) -> None:
    _config, cache, clips = setup
    # one file for both: `edgetts render` reads what it needs of the daemon's own config
    daemon_config = tmp_path / "daemon.yaml"
    daemon_config.write_text(
        config_yaml(
            mosquitto,
            "render-1",
            voice_extra=f"model: {test_voices['ok']}",
            extra=f"clips:\n  dir: {clips}\ncache:\n  dir: {cache}\n  max_mb: 50\n",
        )
    )
    txt = tmp_path / "p.txt"
    txt.write_text("Platform 3 for the 10:15 to Leeds.\n")
    assert run_render(str(txt), "--config", str(daemon_config)).returncode == 0
    # the real loader: the same test voice files
    rig = daemon_rig(real_voices=True, config=daemon_config, online_timeout=30)
    assert rig.say("r1", "Platform 3 for the 10:15 to Leeds.").get("cached") is True
    assert "cached" not in rig.say("r2", "Not rendered before.")


@pytest.mark.mqtt
def test_render_of_a_streaming_voice_stores_sentences_the_daemon_plays(
    tmp_path: Path, mosquitto: Broker, daemon_rig
) -> None:
    """Issue 12: render stored a streaming voice's windows as if they were sentences."""
    cache = tmp_path / "cache"
    config = tmp_path / "daemon.yaml"
    config.write_text(
        config_yaml(mosquitto, "render-stream", streaming=True, extra=f"cache:\n  dir: {cache}\n  max_mb: 50\n")
    )
    text = "Platform 3 for the 10:15 to Leeds. Mind the gap."  # each sentence in several windows
    phrases = tmp_path / "p.txt"
    phrases.write_text(f"{text}\n")
    out = run_render(str(phrases), "--config", str(config))
    assert out.returncode == 0, out.stderr
    [entry] = cache.glob(f"*{SUFFIX}")
    stored = PhraseCache(cache, 50_000_000).get(entry.stem)
    assert stored is not None and len(stored.sentences) == 2  # whole sentences, as the daemon stores them
    # the daemon, the real default voice with the same config: played from the cache, the voice not run
    rig = daemon_rig(real_voices=True, config=config, online_timeout=60)
    started = rig.say("s1", text, timeout=60)
    assert started.get("cached") is True, started
    assert text not in rig.said
    expected = np.clip(np.concatenate(stored.sentences) * 32767.0, -32767, 32767).astype(np.int16)
    assert assert_played(rig.capture.pcm(), expected, int(22050 * 5 / 1000)) == 0
