"""Voices from a file carried to the board (`edgetts voices install --offline FILE`): a .onnx with its
.onnx.json, or a .tar/.tar.gz/.zip archive, checked against its voices.json where it has one; an
archive whose member names would leave the voices folder is refused whole."""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
import zipfile
from pathlib import Path

import pytest

from edgetts.voice.catalog import resolve_voice
from edgetts.voice.install.index import InstallError
from edgetts.voice.install.install import install_offline
from edgetts.voice.install.store import VoiceStore

from support.voice_mirror import VoiceMirror, catalog_key, tiny_voice

DE = "de_DE-tiny-medium"
FR = "fr_FR-tiny-low"


def tree(directory: Path) -> dict[str, str]:
    return {
        str(p.relative_to(directory)): hashlib.md5(p.read_bytes()).hexdigest()
        for p in sorted(directory.rglob("*"))
        if p.is_file()
    }


@pytest.fixture()
def mirror(tmp_path: Path) -> VoiceMirror:
    """Two voices in the catalog's layout, with voices.json: what a stick might carry."""
    mirror = VoiceMirror(tmp_path / "stick" / "piper-voices")
    mirror.add(DE, tiny_voice(tmp_path / "gen-de", "de"))
    mirror.add(FR, tiny_voice(tmp_path / "gen-fr", "fr"))
    return mirror


def _tar(mirror: VoiceMirror, out: Path, mode: str = "w:gz") -> Path:
    with tarfile.open(out, mode) as tar:
        tar.add(mirror.root, arcname="piper-voices")
    return out


def _store_with_one(tmp_path: Path) -> VoiceStore:
    """A voices folder holding one voice already (which every failure must leave alone)."""
    store = VoiceStore(tmp_path / "voices")
    model = tiny_voice(tmp_path / "gen-old", "en-gb")
    old = tmp_path / "old" / "en_GB-old-high.onnx"
    old.parent.mkdir()
    old.write_bytes(model.read_bytes())
    Path(f"{old}.json").write_bytes(Path(f"{model}.json").read_bytes())
    install_offline(old, [], store)
    return store


def _fails(store: VoiceStore, source: Path, names: list[str], match: str) -> None:
    before = tree(store.directory)
    with pytest.raises(InstallError, match=match) as caught:
        install_offline(source, names, store)
    assert "\n" not in str(caught.value)
    assert tree(store.directory) == before
    assert [v.name for v in store.installed()] == ["en_GB-old-high"]


def test_a_model_with_its_config_beside_it(tmp_path: Path, mirror: VoiceMirror) -> None:
    store = VoiceStore(tmp_path / "voices")
    [outcome] = install_offline(mirror.path(DE, ".onnx"), [], store)
    assert outcome.fresh and outcome.voice.model == tmp_path / "voices" / DE / f"{DE}.onnx"
    assert outcome.voice.model.read_bytes() == mirror.path(DE, ".onnx").read_bytes()
    assert (tmp_path / "voices" / DE / "MODEL_CARD").read_text().startswith(f"# Model card for {DE}")
    assert resolve_voice(DE, [store.directory]).path == outcome.voice.model


def test_a_model_whose_config_is_missing_is_refused(tmp_path: Path, mirror: VoiceMirror) -> None:
    store = _store_with_one(tmp_path)
    mirror.path(DE, ".onnx.json").unlink()
    _fails(store, mirror.path(DE, ".onnx"), [], r"has no config beside it \(de_DE-tiny-medium\.onnx\.json\)")


@pytest.mark.parametrize("kind", ["tar.gz", "tar", "zip"])
def test_an_archive_of_the_catalog_layout_installs_every_voice_checked(
    tmp_path: Path, mirror: VoiceMirror, kind: str
) -> None:
    if kind == "zip":
        archive = tmp_path / "voices.zip"
        with zipfile.ZipFile(archive, "w") as zf:
            for path in sorted(mirror.root.rglob("*")):
                zf.write(path, Path("piper-voices") / path.relative_to(mirror.root))
    else:
        archive = _tar(mirror, tmp_path / f"voices.{kind}", "w:gz" if kind == "tar.gz" else "w")
    store = VoiceStore(tmp_path / "voices")
    outcomes = install_offline(archive, [], store)
    assert [(o.voice.name, o.fresh) for o in outcomes] == [(DE, True), (FR, True)]
    for name in (DE, FR):
        assert (store.directory / name / f"{name}.onnx").read_bytes() == mirror.path(name, ".onnx").read_bytes()
    [again] = install_offline(archive, [FR], store)
    assert (again.voice.name, again.fresh) == (FR, False)


def test_an_archive_whose_voices_json_disagrees_is_refused(tmp_path: Path, mirror: VoiceMirror) -> None:
    mirror.catalog[DE]["files"][catalog_key(DE, ".onnx")]["md5_digest"] = "0" * 32
    mirror.write_catalog()
    store = _store_with_one(tmp_path)
    _fails(
        store, _tar(mirror, tmp_path / "v.tar.gz"), [DE], r"de_DE-tiny-medium\.onnx has MD5 [0-9a-f]{32}, the catalog"
    )
    mirror.catalog[DE]["files"][catalog_key(DE, ".onnx")]["size_bytes"] += 7
    mirror.write_catalog()
    _fails(store, _tar(mirror, tmp_path / "v2.tar.gz"), [DE], r"has \d+ bytes, the catalog says \d+")


def _evil_tar(path: Path, members: dict[str, bytes], symlink: str | None = None) -> Path:
    with tarfile.open(path, "w") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        if symlink is not None:
            info = tarfile.TarInfo(symlink)
            info.type = tarfile.SYMTYPE
            info.linkname = "/etc/passwd"
            tar.addfile(info)
    return path


@pytest.mark.parametrize("member", ["../../escaped.onnx", "/tmp/edgetts-escaped.onnx", "ok/../../../escaped.onnx.json"])
def test_an_archive_with_a_member_outside_is_refused_whole(tmp_path: Path, mirror: VoiceMirror, member: str) -> None:
    store = _store_with_one(tmp_path)
    model = mirror.path(DE, ".onnx").read_bytes()
    config = mirror.path(DE, ".onnx.json").read_bytes()
    archive = _evil_tar(tmp_path / "evil.tar", {f"{DE}.onnx": model, f"{DE}.onnx.json": config, member: b"x"})
    _fails(store, archive, [], r"is refused: its member .* would land outside the voices folder")
    assert not list(tmp_path.rglob("escaped*")) and not Path("/tmp/edgetts-escaped.onnx").exists()


def test_links_in_an_archive_are_never_read(tmp_path: Path, mirror: VoiceMirror) -> None:
    store = _store_with_one(tmp_path)
    config = mirror.path(DE, ".onnx.json").read_bytes()
    archive = _evil_tar(tmp_path / "links.tar", {f"{DE}.onnx.json": config}, symlink=f"{DE}.onnx")
    _fails(store, archive, [], r"holds no voice \(\.onnx\)")


def test_names_pick_from_an_archive_and_a_wrong_one_says_what_it_holds(tmp_path: Path, mirror: VoiceMirror) -> None:
    store = _store_with_one(tmp_path)
    archive = _tar(mirror, tmp_path / "v.tar.gz")
    _fails(store, archive, ["de_DE-tiny-mediun"], r"holds no voice named 'de_DE-tiny-mediun'; did you mean de_DE-tiny")
    _fails(store, archive, ["es_ES-x-low"], r"holds no voice named 'es_ES-x-low' \(it holds de_DE-tiny-medium, fr_FR")
    [outcome] = install_offline(archive, [FR], store)
    assert outcome.voice.name == FR and store.find(DE) is None


def test_neither_a_model_nor_an_archive(tmp_path: Path) -> None:
    store = _store_with_one(tmp_path)
    notes = tmp_path / "notes.txt"
    notes.write_text(json.dumps({"not": "an archive"}))
    _fails(store, notes, [], r"notes\.txt is neither a \.onnx voice nor a \.tar, \.tar\.gz or \.zip archive")
    _fails(store, tmp_path / "gone.tar.gz", [], r"gone\.tar\.gz: no such file")


def test_a_damaged_archive_is_one_line_and_installs_nothing(tmp_path: Path, mirror: VoiceMirror) -> None:
    store = _store_with_one(tmp_path)
    whole = _tar(mirror, tmp_path / "v.tar.gz").read_bytes()
    cut = tmp_path / "cut.tar.gz"
    cut.write_bytes(whole[: len(whole) * 2 // 3])  # the stick was pulled while copying
    _fails(store, cut, [], r"cannot read")
    # a zip whose model member's bytes were damaged on the stick: its CRC-32 says so
    damaged = tmp_path / "damaged.zip"
    model = mirror.path(DE, ".onnx").read_bytes()
    with zipfile.ZipFile(damaged, "w") as zf:  # stored: the member's bytes lie in the file as they are
        zf.writestr(f"{DE}.onnx", model)
        zf.writestr(f"{DE}.onnx.json", mirror.path(DE, ".onnx.json").read_bytes())
    data = bytearray(damaged.read_bytes())
    at = data.find(model[64:96])
    data[at] ^= 0xFF
    damaged.write_bytes(bytes(data))
    _fails(store, damaged, [], r"cannot read .*damaged\.zip:de_DE-tiny-medium\.onnx: Bad CRC-32")
