"""tools/build_espeak_data.py: the shipped espeak-ng data is what the pinned sources build, bit for bit."""

from __future__ import annotations

import hashlib
import importlib.util
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from tools import build_espeak_data as bed

SHIPPED = bed.DEFAULT_OUT


def _piper_data() -> Path:
    """piper-tts's espeak-ng-data, found without importing piper."""
    spec = importlib.util.find_spec("piper")
    if spec is None or not spec.submodule_search_locations:
        pytest.fail("piper-tts (the test oracle) is not installed")
    return Path(list(spec.submodule_search_locations)[0]) / "espeak-ng-data"


def _need_build_tools() -> None:
    missing = [tool for tool in ("cmake", "make", "cc", "c++") if shutil.which(tool) is None]
    if missing:
        pytest.fail(f"missing {missing}: run scripts/system-deps.sh --test")


def test_provenance_lists_every_shipped_file_with_its_sha256() -> None:
    text = (SHIPPED / bed.PROVENANCE).read_text(encoding="utf-8")
    assert f"commit {bed.COMMIT}" in text and bed.SOURCE_SHA256 in text
    listed = dict(reversed(line.split("  ", 1)) for line in text.split("sha256 of every file:\n")[1].splitlines())
    files = {p.relative_to(SHIPPED).as_posix(): p for p in bed.shipped_files(SHIPPED)}
    assert set(listed) == set(files)
    assert {name: hashlib.sha256(p.read_bytes()).hexdigest() for name, p in files.items()} == listed
    assert "GNU GENERAL PUBLIC LICENSE" in (SHIPPED / bed.NOTICE).read_text(encoding="utf-8")[:200]


def test_shipped_data_is_the_data_piper_tts_ships() -> None:
    """Every shipped file is byte for byte piper-tts 1.8.0's (the oracle; it is never copied), every
    dictionary data.cmake builds is shipped, and ru_dict is the one known, documented difference."""
    piper_data = _piper_data()
    data = SHIPPED / "espeak-ng-data"
    names = sorted(p.relative_to(data).as_posix() for p in data.rglob("*") if p.is_file())
    piper_names = sorted(p.relative_to(piper_data).as_posix() for p in piper_data.rglob("*") if p.is_file())
    assert {"en_dict", "phondata", "phontab", "phonindex", "intonations", "lang/gmw/en-US"} <= set(names)
    assert names == piper_names  # nothing left out, nothing more
    dicts = sorted(n.removesuffix("_dict") for n in names if n.endswith("_dict"))
    assert dicts == sorted(bed.LANGUAGES) and len(dicts) == 118 and {"it", "ru", "nl", "pl", "uk"} <= set(dicts)
    assert [n for n in names if (data / n).read_bytes() != (piper_data / n).read_bytes()] == list(bed.NOT_PIPERS)
    # Known difference: dictsource/extra/ru_listx is in no clone we have (build_espeak_data.UNAVAILABLE),
    # so ru_dict holds ru_list's words only; PROVENANCE says so.
    assert bed.NOT_PIPERS == ("ru_dict",) and set(bed.UNAVAILABLE) == {"dictsource/extra/ru_listx"}
    assert (data / "ru_dict").stat().st_size < (piper_data / "ru_dict").stat().st_size
    assert "dictsource/extra/ru_listx (git blob" in (SHIPPED / bed.PROVENANCE).read_text(encoding="utf-8")


def test_languages_are_those_of_the_commits_data_cmake(tmp_path: Path) -> None:
    tree = bed.extract_source(bed.SOURCE, tmp_path, bed.SOURCE_SHA256)
    assert bed.data_cmake_languages(tree) == list(bed.LANGUAGES)
    assert not (tree / "dictsource" / "extra" / "ru_listx").exists()  # left out, not faked
    assert (tree / "dictsource" / "extra" / "yue_listx").is_file() and (tree / "dictsource" / "ru_list").is_file()


def test_source_archive_is_the_pinned_one_and_each_file_is_the_commits(tmp_path: Path) -> None:
    assert bed.sha256(bed.SOURCE) == bed.SOURCE_SHA256
    tree = bed.extract_source(bed.SOURCE, tmp_path, bed.SOURCE_SHA256)  # checks every git blob id
    assert (tree / "dictsource" / "en_list").is_file() and (tree / "src" / "libespeak-ng").is_dir()
    assert "(has-been)       hazbi:n\t$noun" in (tree / "dictsource" / "en_list").read_text(encoding="utf-8")


def test_a_changed_source_file_is_refused(tmp_path: Path) -> None:
    tree = bed.extract_source(bed.SOURCE, tmp_path / "a", bed.SOURCE_SHA256)
    with (tree / "dictsource" / "en_list").open("a", encoding="utf-8") as f:
        f.write("has been hazbi:n\n")
    repacked = tmp_path / "changed.tar.xz"
    with tarfile.open(repacked, "w:xz", preset=0) as tar:  # (the fastest xz: the check reads any)
        tar.add(tree, arcname=tree.name)
    with pytest.raises(SystemExit, match="en_list is not git blob"):
        bed.extract_source(repacked, tmp_path / "b", None)
    with pytest.raises(SystemExit, match="sha256"):
        bed.extract_source(repacked, tmp_path / "c", bed.SOURCE_SHA256)


def test_differences_finds_a_changed_and_a_missing_file(tmp_path: Path) -> None:
    for side in ("a", "b"):
        (tmp_path / side / "d").mkdir(parents=True)
        (tmp_path / side / "d" / "same").write_bytes(b"x")
        (tmp_path / side / "changed").write_bytes(side.encode())
    (tmp_path / "a" / "extra").write_bytes(b"")
    assert bed.differences(tmp_path / "a", tmp_path / "b") == ["only in one: extra", "changed"]


@pytest.mark.slow
def test_the_tool_rebuilds_the_shipped_files_bit_for_bit() -> None:
    """A C build of espeak-ng 724808c and its data compile, all 118 dictionaries (about 20 s on 2 cores)."""
    _need_build_tools()
    proc = subprocess.run(
        [sys.executable, "-m", "tools.build_espeak_data", "--check"],
        cwd=bed.ROOT,
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "identical"
