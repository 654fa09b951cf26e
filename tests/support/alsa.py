"""The ALSA file plugin: captures every frame PyAudio writes, exactly, to a file per device open."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from support.pcm import find

ASOUND_CONF = """\
# Captures every frame PyAudio writes (raw, the stream's format) into
# $ALSA_CAPTURE_FILE, then drops it ('null' is not paced).  truncate false: each
# open of the device writes the next file (capture.raw, capture.raw.0001, ...).
pcm.!default {
    type file
    slave.pcm "null"
    file {
        @func getenv
        vars [ ALSA_CAPTURE_FILE ]
        default "/tmp/edgetts-capture.raw"
    }
    format "raw"
    truncate false
    perm 0644
}
pcm.null {
    type null
}
"""


@dataclass(frozen=True)
class Capture:
    """Where ALSA writes what the daemon played."""

    conf: Path
    file: Path

    @property
    def env(self) -> dict[str, str]:
        return {"ALSA_CONFIG_PATH": str(self.conf), "ALSA_CAPTURE_FILE": str(self.file)}

    def files(self) -> list[Path]:
        def order(p: Path) -> int:
            m = re.search(r"\.(\d{4})$", p.name)
            return int(m.group(1)) if m else 0

        return sorted(self.file.parent.glob(self.file.name + "*"), key=order)

    def pcm(self) -> np.ndarray:
        """Every int16 sample played so far, in order (one file per device open)."""
        parts = [np.fromfile(p, dtype="<i2") for p in self.files()]
        return np.concatenate(parts) if parts else np.zeros(0, np.int16)

    def wait_for(self, needle: np.ndarray, timeout: float, start: int = 0) -> float:
        """Poll the capture until ``needle`` (int16) is in it; the time.monotonic() it was seen."""
        deadline = time.monotonic() + timeout
        while True:
            now = time.monotonic()
            if find(self.pcm(), needle, start) >= 0:
                return now
            if now > deadline:
                raise AssertionError(f"not played within {timeout} s")
            time.sleep(0.005)


@pytest.fixture()
def alsa_capture(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Capture:
    """The ALSA file plugin config, also set in this process's environment."""
    d = tmp_path / "alsa"
    d.mkdir()
    conf = d / "asound.conf"
    conf.write_text(ASOUND_CONF)
    cap = Capture(conf, d / "capture.raw")
    for key, value in cap.env.items():
        monkeypatch.setenv(key, value)
    return cap
