#!/usr/bin/env python3
"""Build the espeak-ng data edgetts ships, from espeak-ng's sources at the commit piper-tts 1.8.0 builds.

piper-tts 1.8.0 links espeak-ng 724808c (OHF-Voice/piper1-gpl's ``CMakeLists.txt``
since cb59d2d, release 1.5.0; 212928b before that) and ships the data that
commit's own ``espeak-ng`` program compiles in its CMake build.  The released
espeak-ng 1.52.0 (espeakng-loader's library and data) reads "has been" as
``hˈæzbiːn``: its ``en_list`` entry ``(has-been) hazbi:n`` carries no ``$noun``
flag, which 724808c added.  edgetts keeps espeakng-loader's library (1.52) and
loads this data instead (issue 16).

The sources come from ``tools/espeak-ng/espeak-ng-<commit>.tar.xz`` (made by
``tools/espeak_source.py`` from a clone; its sha256 is pinned below and each
file's git blob id is checked against the listing inside, so anyone with a
clone of espeak-ng can check them).  The build is piper1-gpl's: CMake with its
options, the ``espeak-ng`` program only, then the commands of espeak-ng's
``cmake/data.cmake`` for the phoneme tables, intonations and every dictionary
it builds (:data:`LANGUAGES`, its ``_dict_compile_list``).  One source file
that commit names is in no clone we can reach (:data:`UNAVAILABLE`): Russian is
built without its extra word list, so ``ru_dict`` is the one file that is not
piper-tts's.

    python -m tools.build_espeak_data                  # writes edgetts/data/espeak/
    python -m tools.build_espeak_data --out DIR        # somewhere else (the rebuild test)
    python -m tools.build_espeak_data --check          # rebuild and compare with the shipped files

Needs cmake, make, gcc and g++ (``scripts/system-deps.sh --test``).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COMMIT = "724808c5a83f9ef95fdd0db886ba7ba537ff224a"
COMMIT_DATE = "2026-04-03"
REPOSITORY = "https://github.com/espeak-ng/espeak-ng"
SOURCE = ROOT / "tools" / "espeak-ng" / f"espeak-ng-{COMMIT[:7]}.tar.xz"
SOURCE_SHA256 = "e62bdf46f8b7df64f451d491f77d26c05ff025dbb9a79acc46b8d84053b77b8f"
LISTING = "SOURCES"
"""The file in the archive naming each other file's git blob id and path."""

LANGUAGES = (
    "ab", "af", "am", "an", "ar", "as", "az",
    "ba", "be", "bg", "bn", "bpy", "bs",
    "ca", "chr", "cmn", "crh", "cs", "cv", "cy",
    "da", "de",
    "el", "en", "eo", "es", "et", "eu",
    "fa", "fi", "fr",
    "ga", "gd", "gn", "grc", "gu",
    "hak", "haw", "he", "hi", "hr", "ht", "hu", "hy",
    "ia", "id", "io", "is", "it",
    "ja", "jbo",
    "ka", "kk", "kl", "kn", "kok", "ko", "ku", "ky",
    "la", "lb", "lfn", "lt", "lv",
    "mi", "mk", "ml", "mn", "mr", "ms", "mto", "mt", "my",
    "nci", "ne", "nl", "nog", "no",
    "om", "or",
    "pap", "pa", "piqd", "pl", "pt", "py",
    "qdb", "quc", "qu", "qya",
    "ro", "ru", "rup",
    "sd", "shn", "si", "sjn", "sk", "sl", "smj", "sq", "sr", "sv", "sw",
    "ta", "te", "ti", "th", "tk", "tn", "tr", "tt",
    "ug", "uk", "ur", "uz",
    "vi",
    "yue",
)  # fmt: skip
"""Dictionaries built: every one of the commit's ``cmake/data.cmake`` (checked against it)."""

UNAVAILABLE = {"dictsource/extra/ru_listx": "a7712f68d491c48757440705714b40a460ab2551"}
"""Files of the commit (path: git blob id) whose content no clone we could reach holds.

The GitHub mirror's snapshot lists ``extra/ru_listx`` in the tree but lacks its
blob, so the archive leaves it out and ``ru_dict`` is compiled from ``ru_rules``
and ``ru_list`` alone: what data.cmake does without the file.  It is not
piper-tts's ``ru_dict`` (the extra list's words read by the rules instead).
(``fo_list``'s blob is missing too, but data.cmake builds no ``fo`` dictionary.)"""

NOT_PIPERS = ("ru_dict",)
"""Shipped files that cannot be piper-tts 1.8.0's, because of :data:`UNAVAILABLE`."""

DEFAULT_OUT = ROOT / "edgetts" / "data" / "espeak"
DATA_FILES = ("intonations", "phondata", "phondata-manifest", "phonindex", "phontab")
DATA_DIRS = ("lang", "voices")
PROVENANCE = "PROVENANCE"
NOTICE = "COPYING"

# piper1-gpl's ExternalProject_Add(espeak_ng_external ...) options, then ours.
PIPER_OPTIONS = (
    "-DBUILD_SHARED_LIBS:BOOL=OFF",
    "-DCMAKE_POSITION_INDEPENDENT_CODE:BOOL=ON",
    "-DUSE_ASYNC:BOOL=OFF",
    "-DUSE_MBROLA:BOOL=OFF",
    "-DUSE_LIBSONIC:BOOL=OFF",
    "-DUSE_LIBPCAUDIO:BOOL=OFF",
    "-DUSE_KLATT:BOOL=OFF",
    "-DUSE_SPEECHPLAYER:BOOL=OFF",
    "-DEXTRA_cmn:BOOL=ON",
    "-DEXTRA_ru:BOOL=ON",
)
# Offline: espeak-ng's deps.cmake fetches sonic from GitHub when it finds no
# libsonic, even with USE_LIBSONIC off; naming one (never linked) skips that.
# Its tests are not built (they are not in the archive and make no data).
OUR_OPTIONS = ("-DSONIC_LIB=unused", "-DSONIC_INC=unused", "-DENABLE_TESTS=OFF")


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def git_blob_id(data: bytes) -> str:
    """The id git gives a file with this content (what ``git ls-tree`` lists)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def extract_source(archive: Path, into: Path, expect_sha256: str | None) -> Path:
    """Unpack the source archive after checking it; returns the source tree."""
    if expect_sha256 is not None and sha256(archive) != expect_sha256:
        raise SystemExit(f"{archive}: sha256 {sha256(archive)} is not the pinned {expect_sha256}")
    with tarfile.open(archive, "r:xz") as tar:
        # The archive's sha256 was checked; the "data" filter also where Python has it (3.11.4+).
        tar.extractall(into, **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
    (tree,) = [p for p in into.iterdir() if p.is_dir()]
    listed = {}
    for line in (tree / LISTING).read_text(encoding="utf-8").splitlines():
        blob, path = line.split(" ", 1)
        listed[path] = blob
    found = {str(p.relative_to(tree)) for p in tree.rglob("*") if p.is_file()} - {LISTING}
    if found != set(listed):
        raise SystemExit(f"{archive}: files differ from its listing: {sorted(found ^ set(listed))[:5]}")
    for path, blob in listed.items():
        if git_blob_id((tree / path).read_bytes()) != blob:
            raise SystemExit(f"{archive}: {path} is not git blob {blob} of {COMMIT}")
    return tree


def _run(cmd: Sequence[str], cwd: Path, env: dict[str, str] | None = None) -> None:
    # Below the other work on the machine (a 2-core CI box runs tests at the same time).
    proc = subprocess.run(["nice", "-n", "10", *cmd], cwd=cwd, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stdout[-3000:]}{proc.stderr[-3000:]}")


def cmake_options(source: Path) -> list[str]:
    include = f"-D_FILE_OFFSET_BITS=64 -I{source}/src/ucd-tools/src/include"
    return [*PIPER_OPTIONS, f"-DCMAKE_C_FLAGS={include}", f"-DCMAKE_CXX_FLAGS={include}", *OUR_OPTIONS]


def dictionary_sources(source: Path, lang: str) -> list[Path]:
    """What espeak-ng's data.cmake copies before ``--compile=<lang>`` (EXTRA_<lang> on)."""
    dicts = source / "dictsource"
    files = [dicts / f"{lang}_rules", dicts / f"{lang}_list"]
    if (dicts / "extra" / f"{lang}_listx").exists():
        files.append(dicts / "extra" / f"{lang}_listx")
    elif (dicts / f"{lang}_listx").exists():
        files.append(dicts / f"{lang}_listx")
    if (dicts / f"{lang}_emoji").exists():
        files.append(dicts / f"{lang}_emoji")
    return files


def data_cmake_languages(source: Path) -> list[str]:
    """The dictionaries ``cmake/data.cmake`` compiles (its ``_dict_compile_list``)."""
    text = (source / "cmake" / "data.cmake").read_text(encoding="utf-8")
    block = text.split("list(APPEND _dict_compile_list", 1)[1].split(")", 1)[0]
    return block.split()


def compile_data(source: Path, build: Path, languages: Sequence[str]) -> Path:
    """Build the ``espeak-ng`` program and compile the data with it; returns its espeak-ng-data."""
    unknown = set(languages) - set(data_cmake_languages(source))
    if unknown or (set(languages) == set(LANGUAGES) and list(LANGUAGES) != data_cmake_languages(source)):
        raise SystemExit(f"LANGUAGES is not cmake/data.cmake's list (unknown: {sorted(unknown)})")
    build.mkdir(parents=True, exist_ok=True)
    _run(["cmake", str(source), *cmake_options(source)], build)
    _run(["make", f"-j{min(2, os.cpu_count() or 1)}", "espeak-ng-bin"], build)
    program = str(build / "src" / "espeak-ng")
    env = {**os.environ, "ESPEAK_DATA_PATH": str(build)}
    # cmake/data.cmake: intonations, then phonemes, from phsource; dictionaries in a scratch dictsource.
    _run([program, "--compile-intonations"], source / "phsource", env)
    _run([program, "--compile-phonemes"], source / "phsource", env)
    scratch = build / "dictsource"
    scratch.mkdir(exist_ok=True)
    for lang in languages:
        for path in dictionary_sources(source, lang):
            shutil.copyfile(path, scratch / path.name)
        _run([program, f"--compile={lang}"], scratch, env)
    return build / "espeak-ng-data"


def install(data: Path, source: Path, out: Path, languages: Sequence[str]) -> None:
    """Write the shipped tree: espeak-ng-data (only what edgetts uses), the GPL notice, PROVENANCE."""
    target = out / "espeak-ng-data"
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    for name in (*DATA_FILES, *(f"{lang}_dict" for lang in languages)):
        shutil.copyfile(data / name, target / name)
    for name in DATA_DIRS:
        shutil.copytree(data / name, target / name)
    shutil.copyfile(source / "COPYING", out / NOTICE)
    (out / PROVENANCE).write_text(provenance(out, languages), encoding="utf-8")


def shipped_files(out: Path) -> list[Path]:
    """Every file of the shipped tree but PROVENANCE, in a stable order."""
    return sorted((p for p in out.rglob("*") if p.is_file() and p.name != PROVENANCE), key=lambda p: p.as_posix())


def provenance(out: Path, languages: Sequence[str]) -> str:
    lines = [
        "espeak-ng data shipped with edgetts (GPL-3.0-or-later, see COPYING).",
        f"source: {REPOSITORY} commit {COMMIT} ({COMMIT_DATE}),",
        "  the commit piper-tts 1.8.0 builds (OHF-Voice/piper1-gpl CMakeLists.txt, since cb59d2d).",
        f"source archive: tools/espeak-ng/{SOURCE.name} sha256 {SOURCE_SHA256}",
        "tool: tools/build_espeak_data.py (rebuild: python tools/build_espeak_data.py)",
        f"cmake options: {' '.join(PIPER_OPTIONS)}",
        "  -DCMAKE_C_FLAGS/-DCMAKE_CXX_FLAGS=-D_FILE_OFFSET_BITS=64 -I<src>/src/ucd-tools/src/include",
        f"  {' '.join(OUR_OPTIONS)}",
        "build: make espeak-ng-bin; espeak-ng --compile-intonations; espeak-ng --compile-phonemes;",
        f"  espeak-ng --compile=<lang> for {' '.join(languages)} (the commands of cmake/data.cmake)",
        *unavailable_lines(),
        "sha256 of every file:",
    ]
    lines += [f"{sha256(p)}  {p.relative_to(out).as_posix()}" for p in shipped_files(out)]
    return "\n".join(lines) + "\n"


def unavailable_lines() -> list[str]:
    if not UNAVAILABLE:
        return []
    lines = ["not in the source archive (the commit names them; no reachable clone holds their content):"]
    lines += [f"  {path} (git blob {blob})" for path, blob in UNAVAILABLE.items()]
    lines += [
        "  so ru_dict is compiled from ru_rules and ru_list alone and is not piper-tts 1.8.0's ru_dict;",
        "  (dictsource/fo_list is missing too, but cmake/data.cmake builds no fo dictionary)",
    ]
    return lines


def build(
    out: Path, archive: Path = SOURCE, expect_sha256: str | None = SOURCE_SHA256, languages: Sequence[str] = LANGUAGES
) -> None:
    """The whole build in a temporary directory, written to ``out``."""
    with tempfile.TemporaryDirectory(prefix="edgetts-espeak-") as tmp:
        source = extract_source(archive, Path(tmp) / "src", expect_sha256)
        data = compile_data(source, Path(tmp) / "build", languages)
        install(data, source, out, languages)


def differences(a: Path, b: Path) -> list[str]:
    """Files that are not byte for byte the same in two shipped trees."""
    names_a = {p.relative_to(a).as_posix() for p in a.rglob("*") if p.is_file()}
    names_b = {p.relative_to(b).as_posix() for p in b.rglob("*") if p.is_file()}
    out = [f"only in one: {n}" for n in sorted(names_a ^ names_b)]
    out += [n for n in sorted(names_a & names_b) if (a / n).read_bytes() != (b / n).read_bytes()]
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="where to write (default: the package)")
    parser.add_argument("--check", action="store_true", help="rebuild in a temp dir and compare with --out")
    args = parser.parse_args(argv)
    if not args.check:
        build(args.out)
        print(f"wrote {args.out}")
        return 0
    with tempfile.TemporaryDirectory(prefix="edgetts-espeak-check-") as tmp:
        build(Path(tmp))
        diff = differences(Path(tmp), args.out)
    for line in diff:
        print(f"differs: {line}")
    print("identical" if not diff else f"{len(diff)} files differ")
    return 1 if diff else 0


if __name__ == "__main__":
    sys.exit(main())
