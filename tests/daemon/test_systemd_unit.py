"""systemd/edgetts.service: verifies clean, scores well, carries what issue 3 needs.

`systemd-analyze verify` exits 0 on parse errors, so any output fails the test;
it also needs the ExecStart binary to exist, so when /usr/local/bin/edgetts is
absent (not installed here) the test verifies a temporary copy of the unit whose
ExecStart is this test's Python running the same CLI.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

UNIT = Path(__file__).resolve().parents[2] / "systemd" / "edgetts.service"
EXEC = "ExecStart=/usr/local/bin/edgetts run --config /etc/edgetts/edgetts.yaml"

pytestmark = pytest.mark.skipif(
    shutil.which("systemd-analyze") is None, reason="systemd-analyze is not installed (scripts/system-deps.sh --test)"
)


def verifiable_copy(tmp_path: Path, text: str | None = None) -> Path:
    text = UNIT.read_text() if text is None else text
    if not Path("/usr/local/bin/edgetts").exists():
        text = text.replace(
            EXEC, f"ExecStart={sys.executable} -m edgetts.cli.main run --config /etc/edgetts/edgetts.yaml"
        )
    out = tmp_path / "edgetts.service"
    out.write_text(text)
    return out


def analyze(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["systemd-analyze", *args], capture_output=True, text=True, timeout=60)


def test_unit_has_what_the_daemon_needs() -> None:
    lines = {line.strip() for line in UNIT.read_text().splitlines()}
    for wanted in (
        EXEC,
        "Type=notify",
        "ExecReload=/bin/kill -HUP $MAINPID",
        "Restart=on-failure",
        "User=edgetts",
        "SupplementaryGroups=audio",
        "LimitMEMLOCK=infinity",
        "ProtectSystem=strict",
        "ProtectHome=yes",
        "PrivateTmp=yes",
        "NoNewPrivileges=yes",
    ):
        assert wanted in lines, wanted
    assert any(re.fullmatch(r"WatchdogSec=\d+", line) for line in lines)
    assert any(line.startswith("RestrictAddressFamilies=") for line in lines)


def test_verify_prints_nothing(tmp_path: Path) -> None:
    result = analyze("verify", str(verifiable_copy(tmp_path)))
    assert result.returncode == 0
    assert result.stdout + result.stderr == ""


def test_verify_would_catch_a_broken_unit(tmp_path: Path) -> None:
    broken = verifiable_copy(tmp_path, UNIT.read_text().replace("Type=notify", "Type=notifyy"))
    result = analyze("verify", str(broken))
    assert "notifyy" in result.stdout + result.stderr


def test_security_exposure_below_3(tmp_path: Path) -> None:
    result = analyze("security", "--offline=true", str(verifiable_copy(tmp_path)))
    match = re.search(r"Overall exposure level for edgetts.service: (\d+\.\d)", result.stdout)
    assert match, result.stdout[-500:] + result.stderr
    assert float(match.group(1)) < 3.0
