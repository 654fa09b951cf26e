"""The console page in a real headless Chromium (Debian's chromium + chromium-driver, driven by selenium):
log in, announce from the form and see it live and in the ALSA capture, stop and cancel, preview a clip
and a text, and screenshots at desktop and phone width kept as artefacts (issue 18)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from support.console import free_port, http_extra
from support.fakes import PiecedVoice
from support.paths import ROOT
from support.pcm import assert_played, tone

pytest.importorskip("starlette")
webdriver = pytest.importorskip("selenium.webdriver")
pytestmark = pytest.mark.mqtt

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
DRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
ARTEFACTS = Path(os.environ.get("EDGETTS_ARTEFACTS", ROOT / "test-artefacts")) / "console"
FADE = int(22050 * 5 / 1000)
PASSWORD = "desk-1234"


@pytest.fixture()
def browser(tmp_path: Path) -> Iterator[Any]:
    if not (os.path.exists(CHROMIUM) and os.path.exists(DRIVER)):
        pytest.skip("needs Debian's chromium and chromium-driver (scripts/system-deps.sh --test)")
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    options = Options()
    options.binary_location = CHROMIUM
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--window-size=1280,1100",
        "--autoplay-policy=no-user-gesture-required",
        "--mute-audio",
        "--no-first-run",
        "--disable-extensions",
        "--disable-background-networking",
    ):
        options.add_argument(arg)
    # The browser's own sound (the previews) goes to a null device: with the test's ALSA environment
    # it would write into the daemon's capture (a file of its own, read as if the daemon played it).
    (tmp_path / "browser-asound.conf").write_text("pcm.!default { type null }\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ALSA_")}
    env["ALSA_CONFIG_PATH"] = str(tmp_path / "browser-asound.conf")
    driver = webdriver.Chrome(service=Service(DRIVER, env=env), options=options)
    driver.set_page_load_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()


def _wait(driver: Any, condition: Any, timeout: float = 30.0) -> Any:
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, timeout, poll_frequency=0.05).until(condition)


def _logged(driver: Any, ident: str, event: str) -> bool:
    return bool(driver.find_elements("css selector", f'#log li[data-id="{ident}"][data-event="{event}"]'))


def _announce(driver: Any, text: str, priority: str = "normal") -> str:
    from selenium.webdriver.support.ui import Select

    box = driver.find_element("id", "text")
    box.clear()
    box.send_keys(text)
    Select(driver.find_element("id", "priority")).select_by_value(priority)
    before = driver.find_element("id", "announce-result").get_attribute("data-id")
    driver.find_element("id", "announce-button").click()
    _wait(driver, lambda d: d.find_element("id", "announce-result").get_attribute("data-id") not in (None, before))
    return str(driver.find_element("id", "announce-result").get_attribute("data-id"))


def test_the_console_in_a_real_browser(daemon_rig, browser: Any, tmp_path: Path) -> None:
    (tmp_path / "pw").write_text(PASSWORD + "\n")
    port = free_port()
    voice = PiecedVoice()
    rig = daemon_rig(
        voice,
        clips={"ding": tone(880, 0.4)},
        audio_extra="realtime_pacing: true",
        device_extra="groups: [platforms]",
        extra="voices:\n  lobby:\n    model: nosuch\n"  # a voice that does not load: degraded
        + http_extra(port, f"password_file: {tmp_path / 'pw'}"),
    )
    d = browser
    d.get(f"http://127.0.0.1:{port}/")
    # log in
    _wait(d, lambda d: d.find_element("id", "login").is_displayed())
    assert not d.find_element("id", "console").is_displayed()
    d.find_element("id", "password").send_keys("wrong")
    d.find_element("id", "login-button").click()
    _wait(d, lambda d: "wrong password" in d.find_element("id", "login-result").text)
    d.find_element("id", "password").clear()
    _wait(d, lambda d: d.execute_script("return 1"), 1)
    import time

    time.sleep(1.1)  # the failed login's back-off
    d.find_element("id", "password").send_keys(PASSWORD)
    d.find_element("id", "login-button").click()
    _wait(d, lambda d: d.find_element("id", "console").is_displayed())
    _wait(d, lambda d: d.find_element("id", "status-state").text == "online")
    assert d.execute_script("return document.cookie") == ""  # HttpOnly: no script sees the session
    assert [o.get_attribute("value") for o in d.find_elements("css selector", "#zone option")] == [
        "device",
        "all",
        "group:platforms",
    ]
    assert d.find_element("id", "cache").text.startswith("off")
    assert "default (default)" in d.find_element("id", "voices").text
    # every degraded reason, as the status says it (here: a voice that did not load)
    degraded = {x["what"]: x["reason"] for x in rig.probe.statuses[-1]["degraded"]}
    assert "voice" in degraded
    shown = d.find_element("css selector", '#degraded li[data-what="voice"]').text
    assert " ".join(shown.split()) == " ".join(f"voice: {degraded['voice']}".split())
    assert "lobby not loaded" in d.find_element("id", "voices").text.replace(" (default)", "").replace("\n", " ")
    assert "degraded" in d.find_element("id", "state").text
    # announce from the form; queued, started, finished appear live; it is in the capture
    text = "The next train to the airport leaves from platform two."
    ident = _announce(d, text)
    for event in ("queued", "started", "finished"):
        _wait(d, lambda d, e=event: _logged(d, ident, e), 60)
    assert_played(rig.capture.pcm(), rig.expected(text), FADE)
    # stop and cancel
    long_text = " ".join(f"Sentence number {i} of the long one." for i in range(10))
    # Its second piece waits until the stop below: it is still playing when the test gets there,
    # however slowly a loaded machine drives the browser (it once ended first, ~2 s of audio).
    voice.hold(long_text, 1)
    long_id = _announce(d, long_text)
    _wait(d, lambda d: _logged(d, long_id, "started"))
    _wait(d, lambda d: d.find_element("id", "now-playing").get_attribute("data-id") == long_id)
    assert d.find_element("id", "now-playing").text == f"{long_id}: {long_text[:120]}…"
    queued_id = _announce(d, "This one is cancelled.", "low")
    _wait(d, lambda d: d.find_elements("css selector", f'#queue li[data-id="{queued_id}"] button.cancel'))
    desktop = ARTEFACTS / "console-desktop.png"
    ARTEFACTS.mkdir(parents=True, exist_ok=True)
    d.save_screenshot(str(desktop))  # busy: something playing, something queued, the log filling
    d.find_element("css selector", f'#queue li[data-id="{queued_id}"] button.cancel').click()
    _wait(d, lambda d: _logged(d, queued_id, "cancelled"))
    d.find_element("id", "stop-button").click()
    _wait(d, lambda d: _logged(d, long_id, "cancelled"))
    voice.hold(None)
    _wait(d, lambda d: d.find_element("id", "now-playing").text == "nothing")
    assert "started" not in rig.probe.events_of(queued_id)
    assert rig.probe.wait_event(long_id, "cancelled")["reason"] == "stopped from http"
    # the clip library's preview: the <audio> element loads the WAV
    d.find_element("css selector", '#clips button.preview[data-name="ding"]').click()
    _wait(d, lambda d: d.execute_script("return document.getElementById('clip-audio').readyState") >= 1)
    duration = d.execute_script("return document.getElementById('clip-audio').duration")
    assert abs(duration - 0.4) < 0.01
    # the text preview: synthesized by /api/tts into the browser, not played by the device
    played = rig.capture.pcm().size
    d.find_element("id", "text").clear()
    d.find_element("id", "text").send_keys("Preview only.")
    d.find_element("id", "preview-button").click()
    _wait(d, lambda d: d.execute_script("return document.getElementById('preview-audio').readyState") >= 1)
    seconds = rig.expected("Preview only.").size / 22050
    assert abs(d.execute_script("return document.getElementById('preview-audio').duration") - seconds) < 0.01
    assert not rig.capture.pcm()[played:].any()  # the device stayed silent (an open stream writes zeros)
    assert desktop.stat().st_size > 20000
    # a clip to a zone from the form: published on the group's topic, this device is in it and plays it
    from selenium.webdriver.support.ui import Select

    d.find_element("id", "kind-clip").click()
    Select(d.find_element("id", "clip")).select_by_value("ding")
    Select(d.find_element("id", "zone")).select_by_value("group:platforms")
    before = rig.capture.pcm().size
    assert len(rig.capture.files()) == 2  # the daemon's only (the first ALSA open is the device probe)
    d.find_element("id", "announce-button").click()
    _wait(d, lambda d: "test/group/platforms/announce" in d.find_element("id", "announce-result").text)
    clip_id = d.find_element("id", "announce-result").get_attribute("data-id")
    _wait(d, lambda d: _logged(d, clip_id, "finished"))
    assert_played(rig.capture.pcm(), rig.clip("ding"), FADE, before)
    # a rejected one says why, in the words of its `rejected` event
    d.find_element("id", "kind-text").click()
    Select(d.find_element("id", "zone")).select_by_value("device")
    d.find_element("id", "text").clear()
    d.find_element("id", "announce-button").click()
    _wait(d, lambda d: d.find_element("id", "announce-result").text.startswith("rejected: "))
    reason = d.find_element("id", "announce-result").text.removeprefix("rejected: ")
    rig.probe.wait(lambda p: reason in {e.get("reason") for e in p.events if e["event"] == "rejected"})
    # phone width: one column, nothing wider than the screen
    d.set_window_size(390, 844)
    _wait(d, lambda d: d.execute_script("return window.innerWidth") <= 390)
    assert d.execute_script("return document.documentElement.scrollWidth <= window.innerWidth")
    card = d.execute_script("return document.getElementById('announce').getBoundingClientRect().width")
    assert card > 0.85 * d.execute_script("return window.innerWidth")
    phone = ARTEFACTS / "console-phone.png"
    d.save_screenshot(str(phone))
    assert phone.stat().st_size > 10000
    # log out: back to the form, and the API says 401 again
    d.find_element("id", "logout-button").click()
    _wait(d, lambda d: d.find_element("id", "login").is_displayed())
