"""The phrase cache: synthesized audio on disk, so a repeated announcement is instant (issue 6).

Key: (voice name, voice hash, prepared text, synthesis settings) -> a
SHA-256 hex name.  The voice hash is the BLAKE2b of the voice's files (model
and config; memoised per file size and mtime), so the cache is portable: a
site may render on a bigger machine and copy the folder to the board.

An entry is one file ``<key>.etpc``::

    b"ETPC1\\n" | u32 header length | header (JSON) | float32 LE samples

The header holds the key, the sample rate, the samples of each sentence and
the BLAKE2b of the samples; a read checks all of them, and an entry that fails
(truncated, flipped bits, wrong key) is deleted and reported as a miss, so it
is synthesized again.  Writes go to a temporary file in the same folder, are
fsynced and renamed over the entry (atomic: a crash leaves the old entry or
none, never half of one).  The folder is bounded by ``max_bytes``: least
recently used entries go first (a hit touches the file's mtime, so the order
survives restarts).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import struct
import tempfile
import threading
from collections import OrderedDict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from edgetts.config import Config, VoiceModelSettings
from edgetts.engine import SynthesisConfig
from edgetts.text.prepare import Prepared, prepare_text
from edgetts.voice.piper.windows import FAST_START_LOOKAHEAD

_LOGGER = logging.getLogger(__name__)

MAGIC = b"ETPC1\n"
_SEEN_KEYS = 4096
"""How many not-yet-written phrases ``min_uses`` counts (least recent forgotten first)."""
SUFFIX = ".etpc"
FORMAT_VERSION = 1


# ------------------------------------------------------------------ keys


_FILE_DIGESTS: dict[tuple[str, int, int], str] = {}
_DIGEST_LOCK = threading.Lock()


def _file_digest(path: Path) -> str:
    st = path.stat()
    memo = (str(path.resolve()), st.st_size, st.st_mtime_ns)
    with _DIGEST_LOCK:
        if memo in _FILE_DIGESTS:
            return _FILE_DIGESTS[memo]
    h = hashlib.blake2b(digest_size=16)
    with open(path, "rb") as f:
        while block := f.read(1 << 20):
            h.update(block)
    digest = h.hexdigest()
    with _DIGEST_LOCK:
        _FILE_DIGESTS[memo] = digest
    return digest


def voice_files(voice: Any) -> list[Path]:
    """The files a voice's output depends on (model and its config, or an AR voice's manifest and models)."""
    model = getattr(voice, "model_path", None)
    if model is not None:
        model = Path(model)
        return [model, model.with_name(model.name + ".json")]
    manifest = getattr(voice, "manifest", None)
    path = getattr(manifest, "path", None)
    if path is not None:
        path = Path(path)
        return [path, *sorted(path.parent.glob("*.onnx"))]
    return []


def voice_hash(voice: Any) -> str:
    """A digest of the voice's files (content, memoised per size+mtime); class and name when it has none."""
    h = hashlib.blake2b(digest_size=16)
    h.update(f"{type(voice).__module__}.{type(voice).__qualname__}\0{voice.name}\0{voice.sample_rate}".encode())
    for path in voice_files(voice):
        if path.is_file():
            h.update(path.name.encode() + b"\0" + _file_digest(path).encode())
    return h.hexdigest()


def cache_key(
    voice_name: str, voice_digest: str, normalised_text: str, settings: SynthesisConfig, extra: str = ""
) -> str:
    """The entry name of one phrase; ``extra`` = anything else the audio depends on (the lexicon).

    A seeded phrase (``settings.seed``, issue 19) has the seed in its key, so a seeded lookup
    never finds unseeded audio (a random draw another board did not make) nor the other way
    round; an unseeded phrase's key leaves the field out, so entries written before seeds
    existed are still found."""
    fields = asdict(settings)
    if fields["seed"] is None:
        del fields["seed"]
    blob = json.dumps(
        {
            "v": FORMAT_VERSION,
            "voice": voice_name,
            "hash": voice_digest,
            "text": normalised_text,
            "settings": fields,
            "extra": extra,
        },
        sort_keys=True,
        ensure_ascii=False,
    )
    return hashlib.sha256(blob.encode()).hexdigest()


def voice_synthesis_config(settings: VoiceModelSettings) -> SynthesisConfig:
    """The synthesis settings of a configured voice (the daemon's and `edgetts render`'s)."""
    return SynthesisConfig(
        length_scale=settings.length_scale,
        noise_scale=settings.noise_scale,
        noise_w=settings.noise_w,
        speaker_id=settings.speaker_id,
    )


def phrase_key(
    config: Config, voice_name: str, voice_digest: str, text: str | Prepared, settings: SynthesisConfig
) -> str:
    """The cache key of ``text`` as the daemon (and `edgetts render`) would speak it.

    ``text``: prepared with ``config.text_options()`` (edgetts.text.prepare.Prepared.key); a str
    is prepared here (raises SSMLError for bad SSML), so a caller that has the Prepared passes it.
    """
    if isinstance(text, str):
        text = prepare_text(text, config.text_options())
    context: dict[str, object] = {"normalize": repr(config.normalize), "lexicon": config.lexicon}
    voice = config.all_voices().get(voice_name)
    if voice is not None and voice.streaming:
        # Streamed audio has a fixed gain per voice (whole sentences: each to full scale) and
        # fast start changes a long first sentence's first words: not the same phrase.
        context.update(streaming=True, fast_start_ids=voice.fast_start_ids)
        if voice.fast_start_ids:  # which of its prefix's ids fast start keeps: another rule, another phrase
            context.update(fast_start_lookahead=FAST_START_LOOKAHEAD)
    if voice is not None and voice.max_sentence_ids != VoiceModelSettings.max_sentence_ids:
        context.update(max_sentence_ids=voice.max_sentence_ids)  # (only then: the default's keys stay)
    extra = json.dumps(context, sort_keys=True, ensure_ascii=False)
    return cache_key(voice_name, voice_digest, text.key, settings, extra)


# ------------------------------------------------------------------ entries


@dataclass(frozen=True)
class CachedPhrase:
    """What a hit returns: the voice's raw output, sentence by sentence."""

    sample_rate: int
    sentences: tuple[np.ndarray, ...]

    @property
    def nbytes(self) -> int:
        return sum(s.nbytes for s in self.sentences)


@dataclass
class CacheStats:
    hits: int = 0
    misses: int = 0
    corrupt: int = 0
    evictions: int = 0
    writes: int = 0
    extra: dict[str, int] = field(default_factory=dict)


def encode(key: str, sample_rate: int, sentences: list[np.ndarray], text: str = "") -> bytes:
    data = b"".join(np.asarray(s, dtype="<f4").tobytes() for s in sentences)
    header = json.dumps(
        {
            "key": key,
            "sample_rate": int(sample_rate),
            "sentences": [int(np.size(s)) for s in sentences],
            "blake2b": hashlib.blake2b(data, digest_size=16).hexdigest(),
            "text": text[:200],
        },
        ensure_ascii=False,
    ).encode()
    return MAGIC + struct.pack("<I", len(header)) + header + data


def decode(key: str, blob: bytes) -> CachedPhrase:
    """The phrase in ``blob``; raises ValueError when anything does not check out."""
    if not blob.startswith(MAGIC) or len(blob) < len(MAGIC) + 4:
        raise ValueError("bad magic")
    (n,) = struct.unpack_from("<I", blob, len(MAGIC))
    start = len(MAGIC) + 4
    try:
        header = json.loads(blob[start : start + n])
    except (ValueError, UnicodeDecodeError) as exc:
        raise ValueError(f"bad header: {exc}") from None
    if not isinstance(header, dict) or header.get("key") != key:
        raise ValueError("header does not match the key")
    data = blob[start + n :]
    counts = header.get("sentences")
    if not isinstance(counts, list) or sum(counts) * 4 != len(data):
        raise ValueError("length does not match the header")
    if hashlib.blake2b(data, digest_size=16).hexdigest() != header.get("blake2b"):
        raise ValueError("checksum mismatch")
    samples = np.frombuffer(data, dtype="<f4").astype(np.float32)
    out, at = [], 0
    for c in counts:
        out.append(samples[at : at + c])
        at += c
    return CachedPhrase(int(header["sample_rate"]), tuple(out))


# ------------------------------------------------------------------ the cache


class PhraseCache:
    """A folder of entries, bounded in bytes (LRU); safe to share between threads."""

    def __init__(self, directory: str | Path, max_bytes: int, min_uses: int = 1) -> None:
        """``min_uses``: :meth:`put` writes a phrase at its n-th put for that key in this
        process (counts of the last ``_SEEN_KEYS`` keys are kept, in memory only)."""
        self.directory = Path(directory)
        self.max_bytes = max_bytes
        self.min_uses = max(1, min_uses)
        self._seen: OrderedDict[str, int] = OrderedDict()
        self.stats = CacheStats()
        self._lock = threading.Lock()
        self._index: OrderedDict[str, int] = OrderedDict()  # key -> bytes, least recent first
        self.directory.mkdir(parents=True, exist_ok=True)
        self._scan()

    def _path(self, key: str) -> Path:
        return self.directory / f"{key}{SUFFIX}"

    def _scan(self) -> None:
        entries = []
        for path in self.directory.iterdir():
            if path.suffix == SUFFIX:
                with contextlib.suppress(OSError):
                    st = path.stat()
                    entries.append((st.st_mtime_ns, path.stem, st.st_size))
            elif path.name.startswith(".tmp-"):  # left by a crash mid-write
                with contextlib.suppress(OSError):
                    path.unlink()
        for _mtime, key, size in sorted(entries):
            self._index[key] = size
        self._evict()

    @property
    def total_bytes(self) -> int:
        with self._lock:
            return sum(self._index.values())

    def __len__(self) -> int:
        with self._lock:
            return len(self._index)

    def __contains__(self, key: object) -> bool:
        with self._lock:
            return key in self._index

    def get(self, key: str) -> CachedPhrase | None:
        """The entry, checked; None on a miss (a corrupt entry is deleted and counted)."""
        path = self._path(key)
        try:
            blob = path.read_bytes()
        except OSError:
            with self._lock:
                self._index.pop(key, None)
                self.stats.misses += 1
            return None
        try:
            phrase = decode(key, blob)
        except ValueError as exc:
            _LOGGER.warning("phrase cache entry %s is corrupt (%s): dropped", path.name, exc)
            with contextlib.suppress(OSError):
                path.unlink()
            with self._lock:
                self._index.pop(key, None)
                self.stats.corrupt += 1
                self.stats.misses += 1
            return None
        with contextlib.suppress(OSError):
            os.utime(path)  # the LRU order, kept across restarts
        with self._lock:
            self._index[key] = len(blob)
            self._index.move_to_end(key)
            self.stats.hits += 1
        return phrase

    def put(self, key: str, sample_rate: int, sentences: list[np.ndarray], text: str = "") -> bool:
        """Store an entry atomically; False when it alone is larger than the cache, or when
        it has been put fewer than ``min_uses`` times (not written yet)."""
        if self.min_uses > 1:
            with self._lock:
                uses = self._seen.pop(key, 0) + 1
                if uses < self.min_uses:
                    self._seen[key] = uses
                    while len(self._seen) > _SEEN_KEYS:
                        self._seen.popitem(last=False)
                    return False
        blob = encode(key, sample_rate, sentences, text)
        if len(blob) > self.max_bytes:
            return False
        try:
            fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=self.directory)
        except OSError as exc:  # read-only or full: the daemon goes on without storing
            _LOGGER.warning("cannot write phrase cache entry: %s", exc)
            return False
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(blob)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self._path(key))
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            _LOGGER.warning("cannot write phrase cache entry: %s", exc)
            return False
        with self._lock:
            self._index[key] = len(blob)
            self._index.move_to_end(key)
            self.stats.writes += 1
        self._evict()
        return True

    def _evict(self) -> None:
        while True:
            with self._lock:
                total = sum(self._index.values())
                if total <= self.max_bytes or not self._index:
                    return
                key, _size = self._index.popitem(last=False)
                self.stats.evictions += 1
            with contextlib.suppress(OSError):
                self._path(key).unlink()
            _LOGGER.debug("phrase cache: evicted %s", key)


__all__ = [
    "CachedPhrase",
    "PhraseCache",
    "cache_key",
    "phrase_key",
    "voice_hash",
    "voice_files",
    "voice_synthesis_config",
    "encode",
    "decode",
]
