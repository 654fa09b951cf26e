"""tools/deb_figures.py: scripts/test-deb.sh's KEY<TAB>VALUE figures become a result file report.py reads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tools import deb_figures


def test_figures_nest_by_their_dotted_keys_with_numbers_as_numbers(tmp_path: Path) -> None:
    figures = tmp_path / "figures.tsv"
    figures.write_text(
        "amd64.deb_bytes\t109478996\namd64.apt_install_s\t16.6\n\nboot.booted\tyes\namd64.deb_bytes\t7\n"
    )
    out = tmp_path / "deb_package.json"
    assert deb_figures.main([str(figures), "--json", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["tool"] == "deb_package" and data["command"] == "sudo bash scripts/test-deb.sh"
    assert data["amd64"] == {"deb_bytes": 7, "apt_install_s": 16.6} and data["boot"] == {"booted": "yes"}
    assert "machine" in data and "commit" in data


def test_a_line_without_a_tab_is_refused_with_its_number(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    figures = tmp_path / "figures.tsv"
    figures.write_text("amd64.deb_bytes\t1\namd64.apt_install_s 16.6\n")
    assert deb_figures.main([str(figures), "--json", str(tmp_path / "out.json")]) == 2
    assert "line 2: not KEY<TAB>VALUE" in capsys.readouterr().err
    assert not (tmp_path / "out.json").exists()
