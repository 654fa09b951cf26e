"""The Debian package's own files, rendered without a chroot (`scripts/build-deb.sh --skeleton`).

The whole package (the venv built in a Debian 12 chroot of each architecture, installed into fresh
roots and a booted systemd) is the --deb tier's (scripts/test-deb.sh, tests/packaging/test_deb.py);
what is checkable here is what the build writes around the venv: the control file, the conffile, the
unit derived from systemd/edgetts.service, the maintainer scripts, and that dpkg-deb packs them.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from edgetts import __version__

ROOT = Path(__file__).resolve().parents[2]
BUILD = ROOT / "scripts" / "build-deb.sh"


def control_fields(text: str) -> dict[str, str]:
    """deb-control(5): `Field: value` lines, continuation lines start with a space."""
    fields: dict[str, str] = {}
    name = ""
    for line in text.splitlines():
        if line.startswith(" ") and name:
            fields[name] += "\n" + line
        else:
            name, _, value = line.partition(":")
            fields[name] = value.strip()
    return fields


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("deb") / "tree"
    result = subprocess.run(
        ["bash", str(BUILD), "--skeleton", str(out)], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    return out


def test_version_is_the_projects() -> None:
    result = subprocess.run(["bash", str(BUILD), "--print-version"], capture_output=True, text=True, timeout=30)
    assert result.stdout.strip() == __version__


def test_control_names_the_package_and_its_runtime_dependencies(tree: Path) -> None:
    control = control_fields((tree / "DEBIAN" / "control").read_text())
    assert control["Package"] == "edgetts"
    assert control["Version"] == re.sub(r"\.?(dev|a|b|rc)(\d*)", r"~\1\2", __version__)
    depends = [d.strip() for d in control["Depends"].split(",")]
    # procps: the unit's ExecReload=/bin/kill, which a minimal Debian lacks
    for wanted in (
        "python3 (>= 3.11~)",
        "python3 (<< 3.12)",
        "adduser",
        "procps",
        "libasound2",
        "libportaudio2",
        "libsystemd0",
    ):
        assert wanted in depends, control["Depends"]
    # nothing that compiles on the board: PyAudio and systemd-python come built
    assert not [d for d in depends if re.match(r"(gcc|g\+\+|cpp|build-essential|python3-dev|\S+-dev)\b", d)]
    assert int(control["Installed-Size"]) > 0
    assert "/opt/edgetts" in control["Description"]


def test_the_config_is_a_conffile_and_the_projects(tree: Path) -> None:
    assert (tree / "DEBIAN" / "conffiles").read_text().split() == ["/etc/edgetts/edgetts.yaml"]
    assert (tree / "etc" / "edgetts" / "edgetts.yaml").read_bytes() == (ROOT / "config" / "edgetts.yaml").read_bytes()


def test_the_unit_is_the_repositorys_with_execstart_in_usr_bin(tree: Path) -> None:
    repo = (ROOT / "systemd" / "edgetts.service").read_text().splitlines()
    packaged = (tree / "lib" / "systemd" / "system" / "edgetts.service").read_text().splitlines()
    head = packaged[: packaged.index("[Unit]")]
    assert head and all(line.startswith("#") for line in head)
    body_repo, body_packaged = repo[repo.index("[Unit]") :], packaged[packaged.index("[Unit]") :]
    assert len(body_repo) == len(body_packaged)
    changed = [(a, b) for a, b in zip(body_repo, body_packaged) if a != b]
    assert len(changed) == 1, changed
    ((was, now),) = changed
    assert was.startswith("ExecStart=/usr/local/bin/edgetts ")
    assert now == was.replace("/usr/local/bin/edgetts", "/usr/bin/edgetts", 1)


def test_maintainer_scripts_parse_and_manage_user_and_service(tree: Path) -> None:
    scripts = {name: tree / "DEBIAN" / name for name in ("postinst", "prerm", "postrm")}
    for path in scripts.values():
        assert path.stat().st_mode & 0o111, path
        assert path.read_text().startswith("#!/bin/sh\n")
        result = subprocess.run(["sh", "-n", str(path)], capture_output=True, text=True, timeout=30)
        assert result.returncode == 0, result.stderr
    postinst, prerm, postrm = (scripts[n].read_text() for n in ("postinst", "prerm", "postrm"))
    assert "adduser --system --group" in postinst and "adduser --quiet edgetts audio" in postinst
    assert "deb-systemd-helper enable 'edgetts.service'" in postinst
    assert "deb-systemd-invoke $_action 'edgetts.service'" in postinst
    assert "deb-systemd-invoke stop 'edgetts.service'" in prerm
    purge = postrm[postrm.index('if [ "$1" = "purge" ]') :]
    assert "rm -rf /etc/edgetts /var/lib/edgetts /var/cache/edgetts" in purge
    assert "deluser --quiet --system edgetts" in purge
    # remove keeps the configuration, the state and the user
    remove = postrm[postrm.index('if [ "$1" = "remove" ]') : postrm.index('if [ "$1" = "purge" ]')]
    assert "rm " not in remove and "deluser" not in remove


def test_md5sums_cover_every_file(tree: Path) -> None:
    listed = {line.split("  ", 1)[1] for line in (tree / "DEBIAN" / "md5sums").read_text().splitlines()}
    files = {
        str(p.relative_to(tree))
        for p in tree.rglob("*")
        if p.is_file() and not p.is_symlink() and p.relative_to(tree).parts[0] != "DEBIAN"
    }
    assert listed == files


@pytest.mark.skipif(shutil.which("dpkg-deb") is None, reason="dpkg-deb is not installed")
def test_dpkg_deb_packs_it(tree: Path, tmp_path: Path) -> None:
    deb = tmp_path / "skeleton.deb"
    subprocess.run(
        ["dpkg-deb", "--root-owner-group", "-Znone", "--build", str(tree), str(deb)],
        check=True,
        capture_output=True,
        timeout=60,
    )
    contents = subprocess.run(["dpkg-deb", "-c", str(deb)], capture_output=True, text=True, check=True).stdout
    assert "./etc/edgetts/edgetts.yaml" in contents
    assert "./lib/systemd/system/edgetts.service" in contents
    assert "./usr/bin/edgetts -> /opt/edgetts/bin/edgetts" in contents
    assert re.search(r"^-rw-r--r-- root/root .* \./usr/share/doc/edgetts/copyright$", contents, re.M)
