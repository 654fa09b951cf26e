#!/usr/bin/env python3
"""Make the espeak-ng source archive ``tools/build_espeak_data.py`` builds from, out of a git clone.

CI cannot reach GitHub, so the sources the data is compiled from are kept in
the repository: only what the build reads, taken blob by blob from the pinned
commit (every file's git blob id is listed in the archive's ``SOURCES``, so a
clone of espeak-ng checks it).  What the build reads:

* the CMake build of the ``espeak-ng`` program (``CMakeLists.txt``, ``cmake/``,
  ``src/`` without the Windows and Android parts) and the licences;
* ``espeak-ng-data/`` (the voice and language files data.cmake copies);
* of ``phsource/``: the phoneme and intonation tables, and the sound files the
  compiled ``phondata-manifest`` names (found by a first build with the whole
  ``phsource/``; the archive is accepted only if its build gives the same data);
* of ``dictsource/``: the files of the dictionaries built (all of data.cmake's),
  but for those of ``build_espeak_data.UNAVAILABLE``, whose blobs the clone lacks.

The archive is deterministic (sorted, the commit's time on every file, no owners).

    python -m tools.espeak_source --git PATH/TO/espeak-ng.git   # writes tools/espeak-ng/espeak-ng-<commit>.tar.xz
"""

from __future__ import annotations

import argparse
import io
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path

from tools import build_espeak_data as bed

TOP_FILES = ("CMakeLists.txt", "espeak-ng.pc.in", "COPYING", "COPYING.APACHE", "COPYING.BSD2", "COPYING.UCD")
TREES = ("cmake/", "espeak-ng-data/", "src/include/", "src/libespeak-ng/", "src/speechPlayer/", "src/ucd-tools/")
SRC_FILES = ("src/CMakeLists.txt", "src/espeak-ng.c")
PHONEME_TABLES = ("phsource/phonemes", "phsource/intonation")


class Git:
    """Read blobs of one commit of a (bare) clone."""

    def __init__(self, git_dir: Path, commit: str) -> None:
        self.git_dir = git_dir
        self.commit = commit
        out = self._git("ls-tree", "-r", "-z", commit).decode()
        self.blobs: dict[str, tuple[str, str]] = {}
        for entry in filter(None, out.split("\0")):
            meta, path = entry.split("\t", 1)
            mode, kind, blob = meta.split()
            if kind == "blob":
                self.blobs[path] = (mode, blob)
        self.time = int(self._git("show", "-s", "--format=%ct", commit).decode().strip())

    def _git(self, *args: str) -> bytes:
        return subprocess.run(["git", "-C", str(self.git_dir), *args], check=True, capture_output=True).stdout

    def has_content(self, path: str) -> bool:
        """Whether the clone holds the blob (a partial snapshot may list a path without it)."""
        check = ["git", "-C", str(self.git_dir), "cat-file", "-e", self.blobs[path][1]]
        return subprocess.run(check, capture_output=True).returncode == 0

    def read(self, path: str) -> bytes:
        data = self._git("cat-file", "blob", self.blobs[path][1])
        if bed.git_blob_id(data) != self.blobs[path][1]:
            raise SystemExit(f"{path}: the clone's blob does not match its id")
        return data


def base_paths(git: Git, languages: Sequence[str]) -> list[str]:
    """Everything but the phoneme sound files."""
    paths = [p for p in TOP_FILES + SRC_FILES + PHONEME_TABLES if p in git.blobs]
    paths += [p for p in git.blobs if p.startswith(TREES)]
    paths += [p for p in git.blobs if p.startswith("phsource/ph_")]
    for lang in languages:
        for name in (f"{lang}_rules", f"{lang}_list", f"extra/{lang}_listx", f"{lang}_listx", f"{lang}_emoji"):
            if f"dictsource/{name}" in git.blobs:
                paths.append(f"dictsource/{name}")
        if f"dictsource/extra/{lang}_listx" in git.blobs and f"dictsource/{lang}_listx" in paths:
            paths.remove(f"dictsource/{lang}_listx")  # EXTRA_<lang> on: data.cmake takes extra/'s
    for path, blob in bed.UNAVAILABLE.items():
        if git.blobs.get(path, ("", ""))[1] != blob:
            raise SystemExit(f"{path}: the commit's blob is not the {blob} UNAVAILABLE names")
        if git.has_content(path):
            raise SystemExit(f"{path}: this clone has it; take it out of build_espeak_data.UNAVAILABLE")
    return sorted(set(paths) - set(bed.UNAVAILABLE))


def write_archive(git: Git, paths: Iterable[str], out: Path) -> None:
    top = f"espeak-ng-{git.commit[:7]}"
    paths = sorted(paths)
    listing = "".join(f"{git.blobs[p][1]} {p}\n" for p in paths).encode()
    members = [(bed.LISTING, listing, "100644")] + [(p, git.read(p), git.blobs[p][0]) for p in paths]
    with tarfile.open(out, "w:xz", format=tarfile.PAX_FORMAT, preset=9) as tar:
        for path, data, mode in members:
            info = tarfile.TarInfo(f"{top}/{path}")
            info.size = len(data)
            info.mtime = git.time
            info.mode = 0o755 if mode == "100755" else 0o644
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            tar.addfile(info, io.BytesIO(data))


def manifest_files(data: Path) -> set[str]:
    """The phsource files a phondata was compiled from (its manifest's last column)."""
    lines = (data / "phondata-manifest").read_text(encoding="utf-8").splitlines()
    return {f"phsource/{line.split()[-1]}" for line in lines if line and not line.startswith("#")}


def make(git_dir: Path, out: Path, languages: Sequence[str] = bed.LANGUAGES) -> None:
    git = Git(git_dir, bed.COMMIT)
    base = base_paths(git, languages)
    whole = [p for p in git.blobs if p.startswith("phsource/") and not p.startswith("phsource/mbrola/")]
    with tempfile.TemporaryDirectory(prefix="edgetts-espeak-src-") as tmp:
        first = Path(tmp) / "whole.tar.xz"
        write_archive(git, set(base) | set(whole), first)
        src = bed.extract_source(first, Path(tmp) / "whole", None)
        data = bed.compile_data(src, Path(tmp) / "whole-build", languages)
        # espeak-ng's compiler opens NAME, and NAME.wav when there is no NAME.
        sounds = {p if p in git.blobs else f"{p}.wav" for p in manifest_files(data)}
        missing = sounds - set(git.blobs)
        if missing:
            raise SystemExit(f"the manifest names files the commit does not have: {sorted(missing)[:5]}")
        write_archive(git, set(base) | sounds, out)
        bed.install(data, src, Path(tmp) / "whole-out", languages)
        small = bed.extract_source(out, Path(tmp) / "small", None)
        bed.install(
            bed.compile_data(small, Path(tmp) / "small-build", languages), small, Path(tmp) / "small-out", languages
        )
        diff = bed.differences(Path(tmp) / "whole-out", Path(tmp) / "small-out")
        if diff:
            out.unlink()
            raise SystemExit(f"the trimmed sources build different data: {diff[:5]}")
    print(f"wrote {out} ({out.stat().st_size} bytes, {len(base) + len(sounds)} files); sha256 {bed.sha256(out)}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--git", type=Path, required=True, help="a clone of espeak-ng (bare is fine)")
    parser.add_argument("--out", type=Path, default=bed.SOURCE)
    args = parser.parse_args(argv)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    make(args.git, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
