"""Installing voices into a voices folder: from the catalog at a base URL, or from a file on a stick.

Every name is checked (and, from a catalog, looked up) before anything is written, so a typo in
the third name installs nothing.  Each voice is then fetched into a hidden folder of its own, checked
(size and MD5 where the catalog gives them, a config beside the model) and renamed into place
whole; a voice that fails leaves nothing, and the voices installed before it stay as they were.
Nothing here runs in the daemon: it only ever loads what is on disk.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from edgetts.voice.install.fetch import DEFAULT_TIMEOUT_S, Progress, copy_checked, download, file_url, read_catalog
from edgetts.voice.install.index import CatalogFile, CatalogVoice, InstallError, check_name
from edgetts.voice.install.offline import READ_ERRORS, LocalVoice, open_offline, pick
from edgetts.voice.install.store import InstalledVoice, Stage, VoiceStore

_LOGGER = logging.getLogger(__name__)


@dataclass(frozen=True)
class Outcome:
    """What became of one voice asked for."""

    voice: InstalledVoice
    fresh: bool
    """False: it was installed already (left as it was)."""


def install_from_catalog(
    names: list[str],
    store: VoiceStore,
    base_url: str,
    *,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    progress: Progress | None = None,
) -> list[Outcome]:
    """Install ``names`` from the catalog at ``base_url`` into ``store``; InstallError (one line) on failure."""
    for name in names:
        check_name(name)  # a path is refused before the network is asked anything
    catalog = read_catalog(base_url, timeout_s)
    wanted = [catalog.find(name) for name in names]
    out = []
    with store.locked():
        for voice in wanted:
            have = store.find(voice.name)
            if have is not None:
                out.append(Outcome(have, False))
                continue
            store.check_space(voice.size_bytes, voice.name)
            with store.staging(voice.name) as stage:
                for file, dest in _targets(voice, stage):
                    download(file_url(base_url, file.key), dest, file, timeout_s, progress)
                out.append(Outcome(store.commit(stage), True))
            _LOGGER.info("installed %s from %s", voice.name, base_url)
    return out


def _targets(voice: CatalogVoice, stage: Stage) -> list[tuple[CatalogFile, Path]]:
    pairs: list[tuple[CatalogFile, Path]] = [(voice.model, stage.model), (voice.config, stage.config)]
    if voice.card is not None:
        pairs.append((voice.card, stage.card))
    return pairs


def install_offline(
    path: Path, names: list[str], store: VoiceStore, *, progress: Progress | None = None
) -> list[Outcome]:
    """Install ``names`` (every voice in it when empty) from the file ``path`` into ``store``."""
    out = []
    with open_offline(path) as found:
        chosen = pick(found, names, path)
        with store.locked():
            for voice in chosen:
                have = store.find(voice.name)
                if have is not None:
                    out.append(Outcome(have, False))
                    continue
                out.append(Outcome(_copy_voice(voice, store, progress), True))
                _LOGGER.info("installed %s from %s", voice.name, path)
    return out


def _copy_voice(voice: LocalVoice, store: VoiceStore, progress: Progress | None) -> InstalledVoice:
    parts = {"model": voice.model, "config": voice.config, "card": voice.card}
    store.check_space(sum(m.size for m in parts.values() if m is not None), voice.name)
    with store.staging(voice.name) as stage:
        dests = {"model": stage.model, "config": stage.config, "card": stage.card}
        for key, member in parts.items():
            if member is None:
                continue
            try:
                with member.open() as source:
                    copy_checked(source, dests[key], voice.expected.get(key), member.what, member.size, progress)
            except READ_ERRORS as exc:  # a damaged stick or archive (the writes report their own errors)
                raise InstallError(f"cannot read {member.what}: {exc}") from None
        return store.commit(stage)
