"""Text -> LM text-token ids, as the manifest's ``tokenizer`` section declares.

Two kinds:

* ``{"type": "bytes", "offset": K}``: every UTF-8 byte b becomes id ``K + b`` (the tiny
  test voices use this);
* ``{"type": "vocab", "path": "vocab.json", "unk_id": U}``: a JSON map token -> id,
  applied by greedy longest match over the text; characters no token covers become
  ``unk_id`` or, without one, are skipped.

Real CosyVoice 2/3 voices need their Qwen2 BPE tokenizer (``vocab.json`` +
``merges.txt`` and CosyVoice's special tokens); greedy longest match over the BPE
vocabulary is *not* identical to BPE merges.  Pre-tokenize such voices' prompt text
offline (the manifest takes prompt ids), and treat ``vocab`` as an approximation
until a BPE tokenizer is added.
"""

from __future__ import annotations

import json
import re
import unicodedata
from pathlib import Path

from edgetts.errors import VoiceError

_SENTENCE_END = re.compile(r"(?<=[.!?;。！？])\s+")


def has_speakable(text: str) -> bool:
    """True when ``text`` holds at least one letter or digit."""
    return any(unicodedata.category(c)[0] in ("L", "N") for c in text)


def split_sentences(text: str) -> list[str]:
    """Sentences (at . ! ? ; and CJK stops followed by space), only those with something to say."""
    parts = [p.strip() for p in _SENTENCE_END.split(text.strip())]
    return [p for p in parts if p and has_speakable(p)]


def split_segment(words_text: str, max_tokens: int, tokenizer: Tokenizer) -> list[list[int]]:
    """Token ids of ``words_text`` cut into pieces of at most ``max_tokens``, at spaces where possible."""
    out: list[list[int]] = []
    cur: list[int] = []
    for word in re.findall(r"\S+\s*", words_text):
        ids = tokenizer.encode(word)
        while len(ids) > max_tokens:  # a single "word" longer than a segment
            if cur:
                out.append(cur)
                cur = []
            out.append(ids[:max_tokens])
            ids = ids[max_tokens:]
        if len(cur) + len(ids) > max_tokens:
            out.append(cur)
            cur = []
        cur = cur + ids
    if cur:
        out.append(cur)
    return [s for s in out if s]


class Tokenizer:
    """Text to text-token ids in the LM's vocabulary."""

    def __init__(
        self,
        kind: str,
        *,
        offset: int = 0,
        vocab: dict[str, int] | None = None,
        unk_id: int | None = None,
    ) -> None:
        self.kind = kind
        self.offset = offset
        self.vocab = vocab or {}
        self.unk_id = unk_id
        self._max_len = max((len(t) for t in self.vocab), default=1)

    @classmethod
    def from_manifest(cls, section: dict, base: Path, field: str = "tokenizer") -> Tokenizer:
        kind = section.get("type")
        if kind == "bytes":
            off = section.get("offset", 0)
            if not isinstance(off, int) or off < 0:
                raise VoiceError(f"{field}/offset: must be an integer >= 0")
            return cls("bytes", offset=off)
        if kind == "vocab":
            rel = section.get("path")
            if not isinstance(rel, str):
                raise VoiceError(f"{field}/path: missing (a vocab.json token -> id map)")
            path = base / rel
            try:
                vocab = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                raise VoiceError(f"{field}/path: cannot read {path}: {exc}") from exc
            if not isinstance(vocab, dict) or not all(
                isinstance(k, str) and k and isinstance(v, int) for k, v in vocab.items()
            ):
                raise VoiceError(f"{field}/path: {path} must map non-empty strings to integer ids")
            unk = section.get("unk_id")
            if unk is not None and not isinstance(unk, int):
                raise VoiceError(f"{field}/unk_id: must be an integer or null")
            return cls("vocab", vocab=vocab, unk_id=unk)
        raise VoiceError(f"{field}/type: must be 'bytes' or 'vocab', got {kind!r}")

    def encode(self, text: str) -> list[int]:
        if self.kind == "bytes":
            return [self.offset + b for b in text.encode("utf-8")]
        ids: list[int] = []
        i = 0
        while i < len(text):
            for n in range(min(self._max_len, len(text) - i), 0, -1):
                tid = self.vocab.get(text[i : i + n])
                if tid is not None:
                    ids.append(tid)
                    i += n
                    break
            else:
                if self.unk_id is not None:
                    ids.append(self.unk_id)
                i += 1
        return ids

    def max_id(self) -> int:
        return self.offset + 255 if self.kind == "bytes" else max(self.vocab.values(), default=0)
