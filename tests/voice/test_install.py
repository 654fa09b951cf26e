"""Voices installed by name from a catalog mirror on 127.0.0.1 (edgetts.voice.install): whole or not at all.

Every bad case (unknown name, a path for a name, digest and size mismatch, truncated, stalled,
404, a catalog that is not JSON, a voice without config) ends in one InstallError line, and the
voices folder is byte for byte what it was: the voice installed before is untouched and no hidden
folder is left.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from edgetts.voice.catalog import list_voices, resolve_voice
from edgetts.voice.install.fetch import file_url, read_catalog
from edgetts.voice.install.index import InstallError
from edgetts.voice.install.install import install_from_catalog
from edgetts.voice.install.store import VoiceStore

from support.voice_mirror import MirrorServer, VoiceMirror, catalog_key, served_mirror, tiny_voice

DE = "de_DE-tiny-medium"
FR = "fr_FR-tiny-low"
OLD = "en_GB-tiny-high"
"""Installed before each bad case: it must come out of it untouched."""


@pytest.fixture()
def mirror(tmp_path: Path) -> Iterator[tuple[VoiceMirror, MirrorServer]]:
    with served_mirror(tmp_path / "mirror") as (mirror, server):
        mirror.add(DE, tiny_voice(tmp_path / "gen-de", "de"))
        mirror.add(FR, tiny_voice(tmp_path / "gen-fr", "fr"))
        mirror.add(OLD, tiny_voice(tmp_path / "gen-en", "en-gb"))
        yield mirror, server


def tree(directory: Path) -> dict[str, str]:
    """Every file under ``directory`` (hidden ones too) -> the MD5 of its bytes."""
    return {
        str(p.relative_to(directory)): hashlib.md5(p.read_bytes()).hexdigest()
        for p in sorted(directory.rglob("*"))
        if p.is_file()
    }


def test_install_puts_each_voice_whole_into_its_folder_and_finds_it_by_name(
    mirror: tuple[VoiceMirror, MirrorServer], tmp_path: Path
) -> None:
    source, server = mirror
    store = VoiceStore(tmp_path / "voices")
    outcomes = install_from_catalog([DE, FR], store, server.url, timeout_s=5)
    assert [(o.voice.name, o.fresh) for o in outcomes] == [(DE, True), (FR, True)]
    for name, language in ((DE, "de"), (FR, "fr")):
        folder = tmp_path / "voices" / name
        assert sorted(p.name for p in folder.iterdir()) == ["MODEL_CARD", f"{name}.onnx", f"{name}.onnx.json"]
        assert (folder / f"{name}.onnx").read_bytes() == source.path(name, ".onnx").read_bytes()
        assert (folder / f"{name}.onnx.json").read_bytes() == source.path(name, ".onnx.json").read_bytes()
        assert "License: CC0" in (folder / "MODEL_CARD").read_text()
        assert store.find(name) is not None and store.find(name).language == language  # type: ignore[union-attr]
        assert resolve_voice(name, [tmp_path / "voices"]).path == folder / f"{name}.onnx"
    assert not [p for p in (tmp_path / "voices").iterdir() if p.name.startswith(".partial")]
    # again: nothing fetched but the catalog, nothing changed
    before, asked = tree(tmp_path / "voices"), len(server.requests)
    again = install_from_catalog([DE], store, server.url, timeout_s=5)
    assert [(o.voice.name, o.fresh) for o in again] == [(DE, False)]
    assert server.requests[asked:] == ["/voices.json"] and tree(tmp_path / "voices") == before


def test_a_catalog_alias_installs_the_voice_under_its_own_name(
    mirror: tuple[VoiceMirror, MirrorServer], tmp_path: Path
) -> None:
    source, server = mirror
    source.catalog[DE]["aliases"] = ["de-tiny"]
    source.write_catalog()
    [outcome] = install_from_catalog(["de-tiny"], VoiceStore(tmp_path / "voices"), server.url, timeout_s=5)
    assert outcome.voice.name == DE and outcome.voice.model == tmp_path / "voices" / DE / f"{DE}.onnx"


def test_listing_the_catalog_by_language(mirror: tuple[VoiceMirror, MirrorServer]) -> None:
    _, server = mirror
    catalog = read_catalog(server.url, 5)
    assert [v.name for v in catalog.voices()] == [DE, OLD, FR]
    assert [v.name for v in catalog.voices("de")] == [DE]
    assert [v.name for v in catalog.voices("fr-FR")] == [FR]
    [de] = catalog.voices("de_DE")
    assert (de.language, de.family, de.language_name, de.quality) == ("de_DE", "de", "German", "medium")
    assert de.model.key == "de/de_DE/tiny/medium/de_DE-tiny-medium.onnx" and de.card is not None
    assert file_url("http://h/base/", de.model.key) == "http://h/base/de/de_DE/tiny/medium/de_DE-tiny-medium.onnx"


@pytest.fixture()
def installed(mirror: tuple[VoiceMirror, MirrorServer], tmp_path: Path) -> VoiceStore:
    """A voices folder holding OLD."""
    _, server = mirror
    store = VoiceStore(tmp_path / "voices")
    install_from_catalog([OLD], store, server.url, timeout_s=5)
    return store


def _fails(store: VoiceStore, names: list[str], url: str, match: str, timeout_s: float = 5) -> None:
    """Installing ``names`` fails with one line matching ``match``; the folder is as it was."""
    before = tree(store.directory)
    with pytest.raises(InstallError, match=match) as caught:
        install_from_catalog(names, store, url, timeout_s=timeout_s)
    assert "\n" not in str(caught.value)
    assert tree(store.directory) == before
    assert [p.name for p in store.directory.iterdir() if p.name.startswith(".") and p.is_dir()] == []
    assert [v.name for v in list_voices([store.directory]) if v.source == str(store.directory)] == [OLD]


def test_an_unknown_name_suggests_the_nearest(installed: VoiceStore, mirror: tuple[VoiceMirror, MirrorServer]) -> None:
    _, server = mirror
    _fails(installed, ["de_DE-tiny-medum"], server.url, r"no voice named 'de_DE-tiny-medum' .*did you mean de_DE-tiny")
    _fails(installed, ["xx_XX-nobody-low"], server.url, r"see `edgetts voices list --available`")


@pytest.mark.parametrize("name", ["../de_DE-tiny-medium", "de/de_DE/tiny/medium/de_DE-tiny-medium", "/etc/passwd"])
def test_a_name_with_a_path_is_refused_before_anything_is_asked(
    installed: VoiceStore, mirror: tuple[VoiceMirror, MirrorServer], name: str
) -> None:
    _, server = mirror
    asked = len(server.requests)
    _fails(installed, [name], server.url, r"is a path, not a voice name")
    assert server.requests[asked:] == []


def test_a_bad_second_name_installs_nothing(installed: VoiceStore, mirror: tuple[VoiceMirror, MirrorServer]) -> None:
    _, server = mirror
    _fails(installed, [DE, "fr_FR-tiny-lo"], server.url, r"did you mean fr_FR-tiny-low")


def _flip_model_byte(mirror: VoiceMirror, server: MirrorServer) -> None:
    path = mirror.path(DE, ".onnx")
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))


def _catalog_size(delta: int) -> object:
    def change(mirror: VoiceMirror, server: MirrorServer) -> None:
        mirror.catalog[DE]["files"][catalog_key(DE, ".onnx")]["size_bytes"] += delta
        mirror.write_catalog()

    return change


def _fault(suffix: str, what: str) -> object:
    def change(mirror: VoiceMirror, server: MirrorServer) -> None:
        server.fault(catalog_key(DE, suffix), what)

    return change


def _no_config(mirror: VoiceMirror, server: MirrorServer) -> None:
    del mirror.catalog[DE]["files"][catalog_key(DE, ".onnx.json")]
    mirror.write_catalog()


def _catalog_not_json(mirror: VoiceMirror, server: MirrorServer) -> None:
    (mirror.root / "voices.json").write_text('{"de_DE-tiny-medium": {"files": ')


def _catalog_gone(mirror: VoiceMirror, server: MirrorServer) -> None:
    server.fault("voices.json", "404")


BAD = {
    "digest mismatch": (_flip_model_byte, r"has MD5 [0-9a-f]{32}, the catalog says [0-9a-f]{32}: damaged"),
    "larger than the catalog says": (_catalog_size(-1), r"is larger than the catalog's \d+ bytes"),
    "smaller than the catalog says": (_catalog_size(+1), r"is truncated: (\d+) of \d+ bytes"),
    "truncated download": (
        _fault(".onnx", "truncate"),
        # http.client of Python 3.11 ends the body quietly; a later one raises IncompleteRead
        r"de_DE-tiny-medium\.onnx (is truncated: \d+ of \d+ bytes|interrupted after \d+ bytes)",
    ),
    "stalled download": (_fault(".onnx.json", "stall"), r"download of .*\.onnx\.json interrupted .*timed out"),
    "404 of the config": (_fault(".onnx.json", "404"), r"de_DE-tiny-medium\.onnx\.json: HTTP 404"),
    "404 of the catalog": (_catalog_gone, r"/voices\.json: HTTP 404"),
    "catalog not JSON": (_catalog_not_json, r"the catalog at .*/voices\.json is not JSON"),
    "model without config": (_no_config, r"lists no config for its model"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_each_bad_case_is_one_line_and_leaves_the_folder_as_it_was(
    installed: VoiceStore, mirror: tuple[VoiceMirror, MirrorServer], case: str
) -> None:
    source, server = mirror
    change, match = BAD[case]
    change(source, server)  # type: ignore[operator]
    _fails(installed, [DE], server.url, match, timeout_s=1)


def test_a_voice_that_fails_after_another_leaves_the_other_whole(
    installed: VoiceStore, mirror: tuple[VoiceMirror, MirrorServer]
) -> None:
    source, server = mirror
    _flip_model_byte(source, server)
    with pytest.raises(InstallError, match="has MD5"):
        install_from_catalog([FR, DE], installed, server.url, timeout_s=5)
    assert [v.name for v in installed.installed()] == [OLD, FR]
    assert [p.name for p in installed.directory.iterdir() if p.name.startswith(".") and p.is_dir()] == []


def test_the_voices_folder_lock_refuses_a_second_install(
    installed: VoiceStore, mirror: tuple[VoiceMirror, MirrorServer]
) -> None:
    _, server = mirror
    with installed.locked():
        _fails(installed, [DE], server.url, r"another `edgetts voices` is installing or removing in")


def test_what_a_crash_leaves_is_never_a_voice_and_the_next_install_clears_it(
    installed: VoiceStore, mirror: tuple[VoiceMirror, MirrorServer]
) -> None:
    _, server = mirror
    left = installed.directory / f".partial-{DE}-crashed"
    left.mkdir()
    (left / f"{DE}.onnx").write_bytes(b"half")
    (left / f"{DE}.onnx.json").write_text("{}")
    assert DE not in [v.name for v in list_voices([installed.directory])]
    assert installed.find(DE) is None
    install_from_catalog([DE], installed, server.url, timeout_s=5)
    assert not left.exists() and installed.find(DE) is not None


def test_remove_takes_the_folder_or_the_two_files(installed: VoiceStore, tmp_path: Path) -> None:
    loose = tiny_voice(tmp_path / "gen-loose", "fr")
    (installed.directory / "fr_FR-loose-low.onnx").write_bytes(loose.read_bytes())
    (installed.directory / "fr_FR-loose-low.onnx.json").write_bytes(Path(f"{loose}.json").read_bytes())
    assert [v.name for v in installed.installed()] == [OLD, "fr_FR-loose-low"]
    installed.remove("fr_FR-loose-low")
    installed.remove(OLD)
    assert installed.installed() == []
    assert [p.name for p in installed.directory.iterdir()] == [".edgetts-voices.lock"]
    with pytest.raises(InstallError, match=rf"no voice named '{OLD}' in .* \(installed there: none\)"):
        installed.remove(OLD)
    with pytest.raises(InstallError, match="is a path"):
        installed.remove("../voices")


def test_a_config_that_is_no_piper_config_is_refused(
    installed: VoiceStore, mirror: tuple[VoiceMirror, MirrorServer]
) -> None:
    source, server = mirror
    config = source.path(DE, ".onnx.json")
    config.write_text(json.dumps({"audio": {"sample_rate": 22050}}))
    source.catalog[DE]["files"][catalog_key(DE, ".onnx.json")] = {
        "size_bytes": config.stat().st_size,
        "md5_digest": hashlib.md5(config.read_bytes()).hexdigest(),
    }
    source.write_catalog()
    _fails(installed, [DE], server.url, r"is not a Piper voice config \(no phoneme_id_map\)")
