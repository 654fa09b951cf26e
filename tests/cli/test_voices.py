"""`edgetts voices install/list/remove` as an operator runs them, against a catalog mirror on 127.0.0.1:
exit codes, what is printed, one-line errors, and a voices folder that is whole or untouched."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from support.voice_mirror import MirrorServer, VoiceMirror, catalog_key, served_mirror, tiny_voice

DE = "de_DE-tiny-medium"
FR = "fr_FR-tiny-low"


def edgetts(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "edgetts.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=dict(os.environ),
    )


def one_line_error(result: subprocess.CompletedProcess[str], needle: str) -> str:
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 1 and len(lines) == 1, result.stderr
    assert lines[0].startswith("edgetts: error: ") and needle in lines[0], result.stderr
    return lines[0]


def tree(directory: Path) -> dict[str, str]:
    if not directory.exists():
        return {}
    return {
        str(p.relative_to(directory)): "folder" if p.is_dir() else hashlib.md5(p.read_bytes()).hexdigest()
        for p in directory.rglob("*")
    }


@dataclass
class Site:
    mirror: VoiceMirror
    server: MirrorServer
    config: Path
    voices: Path

    def write(self, extra: str = "", base_url: bool = True) -> None:
        url = f"  base_url: {self.server.url}\n" if base_url else ""
        self.config.write_text(f"voices:\n{url}  dir: {self.voices}\n{extra}")


@pytest.fixture()
def site(tmp_path: Path) -> Iterator[Site]:
    with served_mirror(tmp_path / "mirror") as (mirror, server):
        mirror.add(DE, tiny_voice(tmp_path / "gen-de", "de"))
        mirror.add(FR, tiny_voice(tmp_path / "gen-fr", "fr"))
        site = Site(mirror, server, tmp_path / "edgetts.yaml", tmp_path / "voices")
        site.write()
        yield site


def test_install_list_and_remove_by_name(site: Site) -> None:
    cfg = str(site.config)
    done = edgetts("voices", "install", DE, "--config", cfg)
    assert done.returncode == 0 and done.stderr == "", done.stderr  # no progress: stderr is no terminal
    model = site.voices / DE / f"{DE}.onnx"
    assert done.stdout == f"{DE}\tinstalled\t{model}\n"
    assert model.read_bytes() == site.mirror.path(DE, ".onnx").read_bytes()
    again = edgetts("voices", "install", DE, "--config", cfg)
    assert again.returncode == 0 and again.stdout == f"{DE}\tinstalled already\t{model}\n"

    listed = edgetts("voices", "list", "--config", cfg)
    assert listed.returncode == 0
    assert [line.split()[:3] for line in listed.stdout.splitlines() if line.startswith(DE)] == [[DE, "de", "piper"]]
    only_de = edgetts("voices", "list", "--language", "de", "--config", cfg).stdout.splitlines()
    assert [line.split()[0] for line in only_de[1:]] == [DE]  # the header, then the one German voice
    one_line_error(edgetts("voices", "list", "--language", "fr", "--config", cfg), "no installed voice of fr")
    bare = edgetts("voices", "--json", "--config", cfg)
    assert any(v["name"] == DE and v["path"] == str(model) for v in json.loads(bare.stdout))

    available = edgetts("voices", "list", "--available", "--language", "de", "--config", cfg).stdout.splitlines()
    assert available[0].split() == ["name", "language", "language_name", "quality", "size_mb", "installed"]
    assert available[1].split() == [DE, "de_DE", "German", "medium", "0.0", "installed"] and len(available) == 2

    # check-config finds a voice by its name in the config's own voices/dir, as the daemon does
    site.write(f"voice:\n  model: {DE}\n")
    checked = edgetts("check-config", cfg)
    assert checked.returncode == 0, checked.stderr
    site.write()

    removed = edgetts("voices", "remove", DE, "--config", cfg)
    assert removed.returncode == 0 and removed.stdout == f"{DE}\tremoved\t{model}\n"
    assert not (site.voices / DE).exists()
    one_line_error(edgetts("voices", "remove", DE, "--config", cfg), f"no voice named '{DE}' in {site.voices}")


def test_from_overrides_the_configured_base_url(site: Site, tmp_path: Path) -> None:
    site.write(base_url=False)  # Piper's own repository: never asked here, --from names the mirror
    done = edgetts("voices", "install", FR, "--from", site.server.url, "--config", str(site.config))
    assert done.returncode == 0, done.stderr
    assert (site.voices / FR / f"{FR}.onnx.json").is_file()
    assert site.server.requests[:2] == ["/voices.json", "/" + catalog_key(FR, ".onnx")]
    # a mirror on a disk: file://
    local = edgetts("voices", "install", DE, "--from", site.mirror.root.as_uri(), "--config", str(site.config))
    assert local.returncode == 0 and (site.voices / DE / f"{DE}.onnx").is_file(), local.stderr


def _flip(site: Site) -> None:
    path = site.mirror.path(DE, ".onnx")
    data = bytearray(path.read_bytes())
    data[10] ^= 0x01
    path.write_bytes(bytes(data))


BAD = {
    "unknown name": ([DE[:-1]], None, f"no voice named '{DE[:-1]}' in the catalog at"),
    "nearest name": (["de_DE-tiny-medum"], None, "did you mean de_DE-tiny-medium?"),
    "a path for a name": (["../../etc/passwd"], None, "is a path, not a voice name"),
    "404": ([DE], lambda s: s.server.fault(catalog_key(DE, ".onnx"), "404"), "de_DE-tiny-medium.onnx: HTTP 404"),
    "truncated": ([DE], lambda s: s.server.fault(catalog_key(DE, ".onnx.json"), "truncate"), "is truncated:"),
    "not JSON": ([DE], lambda s: (s.mirror.root / "voices.json").write_text("<html>"), "voices.json is not JSON"),
    "digest": ([DE], _flip, "the catalog says"),
    "no names": ([], None, "name the voices to install"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_input_is_one_line_and_installs_nothing(site: Site, case: str) -> None:
    assert edgetts("voices", "install", FR, "--config", str(site.config)).returncode == 0
    before = tree(site.voices)
    names, change, needle = BAD[case]
    if change is not None:
        change(site)  # type: ignore[operator]
    one_line_error(edgetts("voices", "install", *names, "--config", str(site.config)), needle)
    assert tree(site.voices) == before


def test_options_that_do_not_fit(site: Site, tmp_path: Path) -> None:
    cfg = str(site.config)
    one_line_error(
        edgetts("voices", "install", "--offline", str(tmp_path / "x.onnx"), "--from", "http://h", "--config", cfg),
        "--offline installs from a file: do not also give --from",
    )
    one_line_error(edgetts("voices", "install", DE, "--timeout", "0", "--config", cfg), "--timeout must be > 0")
    one_line_error(edgetts("voices", "list", "--from", "http://h", "--config", cfg), "--from needs --available")
    missing = tmp_path / "none.yaml"
    one_line_error(edgetts("voices", "install", DE, "--config", str(missing)), f"{missing}:1 (file): cannot read")
    site.config.write_text("voices:\n  dir:\n    model: x\n")
    one_line_error(edgetts("voices", "list", "--config", cfg), f"{cfg}:2 voices/dir: 'dir' is reserved")


def test_offline_without_a_config_beside_the_model(site: Site, tmp_path: Path) -> None:
    loose = tmp_path / "stick" / f"{DE}.onnx"
    loose.parent.mkdir()
    shutil.copyfile(site.mirror.path(DE, ".onnx"), loose)
    one_line_error(
        edgetts("voices", "install", "--offline", str(loose), "--config", str(site.config)),
        f"{loose} has no config beside it ({DE}.onnx.json): not installed",
    )
    shutil.copyfile(site.mirror.path(DE, ".onnx.json"), f"{loose}.json")
    done = edgetts("voices", "install", "--offline", str(loose), "--config", str(site.config))
    assert done.returncode == 0 and done.stdout.startswith(f"{DE}\tinstalled\t"), done.stderr


def test_remove_refuses_a_voice_the_config_speaks_with(site: Site) -> None:
    cfg = str(site.config)
    for name in (DE, FR):
        assert edgetts("voices", "install", name, "--config", cfg).returncode == 0
    site.write(f"  announcements:\n    model: {FR}\nvoice:\n  model: {DE}\n")
    before = tree(site.voices)
    one_line_error(
        edgetts("voices", "remove", DE, "--config", cfg),
        f"{DE} is in use by voice/model in {cfg}: change the config (and reload) first",
    )
    one_line_error(edgetts("voices", "remove", FR, "--config", cfg), f"{FR} is in use by voices/announcements/model")
    # by its path, or as the faster variant of a voice
    site.write(f"voice:\n  degrade_to: {site.voices / FR / (FR + '.onnx')}\n")
    one_line_error(edgetts("voices", "remove", FR, "--config", cfg), "in use by voice/degrade_to")
    assert tree(site.voices) == before
    site.write()
    assert edgetts("voices", "remove", FR, "--config", cfg).returncode == 0


def _in_tmpfs(site: Site, size: int, *args: str) -> subprocess.CompletedProcess[str]:
    """`edgetts voices install ARGS` with the voices folder a tmpfs of ``size`` bytes in a mount
    namespace of its own (a full disk, for real); prints what is left in the folder after it."""
    if shutil.which("unshare") is None:
        pytest.skip("unshare (util-linux) is needed to mount a tmpfs of its own")
    site.voices.mkdir(exist_ok=True)
    script = (
        'mount -t tmpfs -o size="$1" tmpfs "$2" || exit 99; shift 2; "$@"; rc=$?; '
        'echo "left: $(ls -A "$0" | tr "\\n" " ")" >&2; exit $rc'
    )
    cmd = [sys.executable, "-m", "edgetts.cli", "voices", "install", *args, "--config", str(site.config)]
    result = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, str(site.voices), str(size)]
        + [str(site.voices), *cmd],
        capture_output=True,
        text=True,
        timeout=60,
    )
    if result.returncode == 99:
        pytest.skip(f"cannot mount a tmpfs here: {result.stderr.strip()}")
    return result


def test_a_full_disk_is_found_before_and_while_writing(site: Site, tmp_path: Path) -> None:
    """ENOSPC from a real file system: a tmpfs of one page (4 KiB) in a mount namespace (as root)."""
    big = tmp_path / "gen-big" / "de_DE-big-medium.onnx"
    big.parent.mkdir()
    big.write_bytes(os.urandom(64 * 1024))
    shutil.copyfile(Path(f"{tiny_voice(tmp_path / 'gen-x', 'de')}.json"), f"{big}.json")
    site.mirror.add("de_DE-big-medium", big)
    before = _in_tmpfs(site, 4096, "de_DE-big-medium")
    error, left = before.stderr.strip().splitlines()
    assert before.returncode == 1 and error.startswith("edgetts: error: no space for de_DE-big-medium in")
    assert "it needs 0.1 MB, 0.0 MB are free" in error and left == "left: .edgetts-voices.lock"
    # the tiny voice's three files (2.9 kB) pass that check but take three pages: the second write fails
    sizes = [site.mirror.path(DE, s).stat().st_size for s in (".onnx", ".onnx.json", "MODEL_CARD")]
    assert sum(sizes) <= 4096 < sum(-(-s // 4096) * 4096 for s in sizes)
    during = _in_tmpfs(site, 4096, DE)
    error, left = during.stderr.strip().splitlines()
    assert during.returncode == 1 and left == "left: .edgetts-voices.lock", during.stderr
    assert error == f"edgetts: error: no space left on the device of {site.voices} while writing {DE}.onnx.json"


def test_ctrl_c_during_a_download_leaves_nothing(site: Site) -> None:
    site.server.fault(catalog_key(DE, ".onnx"), "stall")
    # Ctrl-C as a terminal gives it: an asynchronous job of a shell without job control (as CI
    # runners and flake-check's own background runs start it) hands its children SIGINT ignored,
    # and Python then leaves it ignored: the install went on to its stalled read (two clean-clone
    # runs, "still running 20 s after SIGINT").
    interactive = (
        "import runpy, signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
        "sys.argv[0] = 'edgetts'; runpy.run_module('edgetts.cli', run_name='__main__')"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", interactive, "voices", "install", DE, "--config", str(site.config)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONFAULTHANDLER": "1"},  # (SIGABRT below prints every thread's stack)
    )
    try:
        deadline = time.monotonic() + 30
        while "/" + catalog_key(DE, ".onnx") not in site.server.requests:
            assert time.monotonic() < deadline and proc.poll() is None, "the download never started"
            time.sleep(0.02)
        assert any(p.name.startswith(f".partial-{DE}-") for p in site.voices.iterdir())  # under way
        proc.send_signal(signal.SIGINT)
        try:
            _, err = proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:  # (seen once in a loaded CI run: where did it stand?)
            proc.send_signal(signal.SIGABRT)
            _, err = proc.communicate(timeout=10)
            raise AssertionError(f"still running 20 s after SIGINT; its stacks:\n{err}") from None
    finally:
        proc.kill()
    assert proc.returncode == 130 and err.strip() == "edgetts: interrupted", err
    assert sorted(p.name for p in site.voices.iterdir()) == [".edgetts-voices.lock"]


def test_progress_only_on_a_terminal(site: Site) -> None:
    leader, follower = os.openpty()
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "edgetts.cli", "voices", "install", DE, "--config", str(site.config)],
            stdout=subprocess.PIPE,
            stderr=follower,
            timeout=60,
        )
        os.close(follower)
        shown = b""
        while True:
            try:
                block = os.read(leader, 4096)
            except OSError:  # EIO: the terminal's other end is closed
                break
            if not block:
                break
            shown += block
    finally:
        os.close(leader)
    assert proc.returncode == 0
    text = shown.decode()
    for name in (f"{DE}.onnx", f"{DE}.onnx.json", "MODEL_CARD"):
        assert f"\r  {name}  0.0 / 0.0 MB  100%" in text, text
