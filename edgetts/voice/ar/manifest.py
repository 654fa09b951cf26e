"""The ``edgetts-ar-1`` voice manifest: a JSON file beside the models it names.

Every field is checked at load; a problem raises :class:`VoiceError` whose
message starts with the field path (``kv/block_size: ...``).  Paths are relative
to the manifest's directory.  Full reference: docs/ar-voices.md.

    {
      "format": "edgetts-ar-1",
      "name": "tiny-ar",
      "sample_rate": 24000,
      "layout": "cosyvoice2",                  # or "prompt_prefix"
      "lm": {"path": "lm.onnx", "vocab_size": 291},
      "decoder": {"path": "decoder.onnx", "samples_per_token": 960,
                  "left_context_tokens": 1, "lookahead_tokens": 1, "chunk_tokens": 8},
      "tokenizer": {"type": "bytes", "offset": 0},
      "tokens": {"sos": 256, "task_id": 257, "speech_offset": 258,
                 "speech_vocab_size": 32, "stop": [290]},
      "prompt": {"text_ids": [...], "speech_tokens": [...]},
      "sampling": {"top_k": 25, "top_p": 0.8, "win_size": 10, "tau_r": 0.1,
                   "min_len_ratio": 2.0, "max_len_ratio": 20.0},
      "kv": {"num_layers": 2, "num_kv_heads": 2, "head_dim": 16, "block_size": 128,
             "max_sequence_tokens": 2560},
      "text": {"max_tokens_per_segment": 80}
    }
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from edgetts.errors import VoiceError
from edgetts.voice.ar.kv_cache import KvLayout
from edgetts.voice.ar.sampling import SamplingParams

AR_FORMAT = "edgetts-ar-1"
LAYOUTS = ("cosyvoice2", "prompt_prefix")


@dataclass(frozen=True)
class DecoderSpec:
    """The token-to-waveform model and how the host streams it."""

    path: Path
    samples_per_token: int
    """Audio samples the decoder makes per speech token (sample_rate / token rate)."""
    left_context_tokens: int = 0
    """Tokens before a chunk fed again so its first samples see their past (receptive field)."""
    lookahead_tokens: int = 0
    """Tokens held back until their right context exists (the decoder's look-ahead)."""
    chunk_tokens: int = 25
    """New tokens per streamed chunk (25 = 1 s at 25 Hz)."""
    crossfade_samples: int = 0
    """Samples at the start of each chunk faded in over the previous window's look-ahead audio
    (at most lookahead_tokens * samples_per_token; 0 = cut without a fade)."""


@dataclass(frozen=True)
class ArManifest:
    path: Path
    name: str
    sample_rate: int
    """Hertz."""
    layout: str
    lm_path: Path
    lm_vocab_size: int
    decoder: DecoderSpec
    tokenizer: dict
    sos: int
    task_id: int
    speech_offset: int
    """LM id of speech token 0."""
    speech_vocab_size: int
    stop_ids: tuple[int, ...]
    prompt_text_ids: tuple[int, ...]
    prompt_speech_tokens: tuple[int, ...]
    """Speech-vocabulary ids (0-based, without speech_offset)."""
    sampling: SamplingParams
    kv: KvLayout
    max_sequence_tokens: int
    """Hard limit of one sequence's own KV tokens (the shared prefix not counted)."""
    max_text_tokens_per_segment: int

    @property
    def base_dir(self) -> Path:
        return self.path.parent

    def prefix_ids(self) -> list[int]:
        """LM ids every announcement starts with: its KV is computed once and shared."""
        ids = [self.sos, *self.prompt_text_ids]
        if self.layout == "prompt_prefix":
            ids += [self.speech_offset + t for t in self.prompt_speech_tokens]
        return ids

    def request_ids(self, text_ids: list[int]) -> list[int]:
        """LM ids after the prefix for one segment of text (prefilled per announcement)."""
        if self.layout == "prompt_prefix":
            return [*text_ids, self.task_id]
        # CosyVoice 2/3 order: [sos, prompt_text, text, task_id, prompt_speech]
        return [
            *text_ids,
            self.task_id,
            *(self.speech_offset + t for t in self.prompt_speech_tokens),
        ]


def is_ar_manifest(path: str | Path) -> bool:
    """True when ``path`` is a JSON file whose ``format`` is ``edgetts-ar-1`` (for CLI dispatch)."""
    p = Path(path)
    if p.suffix != ".json" or not p.is_file():
        return False
    try:
        return json.loads(p.read_text(encoding="utf-8")).get("format") == AR_FORMAT
    except (OSError, ValueError, AttributeError):
        return False


def _get(
    d: dict,
    key: str,
    where: str,
    kind: type | tuple,
    *,
    default: Any = ...,
    minimum: float | None = None,
    maximum: float | None = None,
) -> Any:
    field = f"{where}/{key}" if where else key
    if key not in d:
        if default is ...:
            raise VoiceError(f"{field}: missing")
        return default
    v = d[key]
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if isinstance(v, bool) and bool not in kinds or not isinstance(v, kinds):
        names = "/".join(k.__name__ for k in kinds)
        raise VoiceError(f"{field}: must be {names}, got {v!r}"[:200])
    if minimum is not None and v < minimum:
        raise VoiceError(f"{field}: must be >= {minimum}, got {v}")
    if maximum is not None and v > maximum:
        raise VoiceError(f"{field}: must be <= {maximum}, got {v}")
    return v


def _section(d: dict, key: str) -> dict:
    v = _get(d, key, "", dict)
    return v


def _model_path(base: Path, sec: dict, where: str) -> Path:
    rel = _get(sec, "path", where, str)
    p = (base / rel).resolve()
    if not p.is_file():
        raise VoiceError(f"{where}/path: file not found: {p}")
    return p


def _int_list(sec: dict, key: str, where: str, lo: int, hi: int) -> tuple[int, ...]:
    v = _get(sec, key, where, list)
    for i, x in enumerate(v):
        if isinstance(x, bool) or not isinstance(x, int) or not lo <= x < hi:
            raise VoiceError(f"{where}/{key}[{i}]: must be an integer in [{lo}, {hi}), got {x!r}")
    return tuple(v)


def load_manifest(path: str | Path) -> ArManifest:
    """Read and validate an ``edgetts-ar-1`` manifest; raises VoiceError naming the bad field."""
    p = Path(path)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except OSError as exc:
        raise VoiceError(f"{p}: cannot read voice manifest: {exc.strerror or exc}") from exc
    except ValueError as exc:
        raise VoiceError(f"{p}: not valid JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise VoiceError(f"{p}: a voice manifest must be a JSON object")
    try:
        return _parse(p.resolve(), data)
    except VoiceError as exc:
        raise VoiceError(f"{p}: {exc}") from None


def _parse(p: Path, data: dict) -> ArManifest:
    fmt = data.get("format")
    if fmt != AR_FORMAT:
        raise VoiceError(f"format: must be {AR_FORMAT!r}, got {fmt!r}")
    base = p.parent
    name = _get(data, "name", "", str, default=p.stem)
    sample_rate = _get(data, "sample_rate", "", int, minimum=8000, maximum=192000)
    layout = _get(data, "layout", "", str, default="cosyvoice2")
    if layout not in LAYOUTS:
        raise VoiceError(f"layout: must be one of {', '.join(LAYOUTS)}, got {layout!r}")

    lm = _section(data, "lm")
    lm_path = _model_path(base, lm, "lm")
    vocab = _get(lm, "vocab_size", "lm", int, minimum=2)
    decoder = _decoder(base, _section(data, "decoder"))
    tok_sec = _section(data, "tokenizer")
    _get(tok_sec, "type", "tokenizer", str)
    tokens = _tokens(_section(data, "tokens"), vocab)
    pr = _section(data, "prompt")
    prompt_text = _int_list(pr, "text_ids", "prompt", 0, vocab)
    prompt_speech = _int_list(pr, "speech_tokens", "prompt", 0, tokens.speech_vocab_size)
    sampling = _sampling(_optional_section(data, "sampling"))
    kv = _section(data, "kv")
    layout_kv = _kv_layout(kv)
    max_seq = _get(kv, "max_sequence_tokens", "kv", int, default=2560, minimum=1)
    txt = _optional_section(data, "text")
    max_seg = _get(txt, "max_tokens_per_segment", "text", int, default=80, minimum=1)

    return ArManifest(
        path=p,
        name=name,
        sample_rate=sample_rate,
        layout=layout,
        lm_path=lm_path,
        lm_vocab_size=vocab,
        decoder=decoder,
        tokenizer=tok_sec,
        sos=tokens.sos,
        task_id=tokens.task_id,
        speech_offset=tokens.speech_offset,
        speech_vocab_size=tokens.speech_vocab_size,
        stop_ids=tokens.stop,
        prompt_text_ids=prompt_text,
        prompt_speech_tokens=prompt_speech,
        sampling=sampling,
        kv=layout_kv,
        max_sequence_tokens=max_seq,
        max_text_tokens_per_segment=max_seg,
    )


def _optional_section(d: dict, key: str) -> dict:
    """A section that may be left out (then every field has its default)."""
    v = d.get(key, {})
    if not isinstance(v, dict):
        raise VoiceError(f"{key}: must be an object")
    return v


def _decoder(base: Path, dec: dict) -> DecoderSpec:
    decoder = DecoderSpec(
        path=_model_path(base, dec, "decoder"),
        samples_per_token=_get(dec, "samples_per_token", "decoder", int, minimum=1),
        left_context_tokens=_get(dec, "left_context_tokens", "decoder", int, default=0, minimum=0),
        lookahead_tokens=_get(dec, "lookahead_tokens", "decoder", int, default=0, minimum=0),
        chunk_tokens=_get(dec, "chunk_tokens", "decoder", int, default=25, minimum=1),
        crossfade_samples=_get(dec, "crossfade_samples", "decoder", int, default=0, minimum=0),
    )
    if decoder.crossfade_samples > decoder.lookahead_tokens * decoder.samples_per_token:
        raise VoiceError(
            "decoder/crossfade_samples: larger than lookahead_tokens x "
            "samples_per_token (the look-ahead audio it fades from)"
        )
    return decoder


@dataclass(frozen=True)
class _Tokens:
    """The ``tokens`` section: special LM ids and where the speech tokens lie."""

    sos: int
    task_id: int
    speech_offset: int
    speech_vocab_size: int
    stop: tuple[int, ...]


def _tokens(t: dict, vocab: int) -> _Tokens:
    sos = _get(t, "sos", "tokens", int, minimum=0, maximum=vocab - 1)
    task_id = _get(t, "task_id", "tokens", int, minimum=0, maximum=vocab - 1)
    speech_offset = _get(t, "speech_offset", "tokens", int, minimum=0, maximum=vocab - 1)
    speech_vocab = _get(t, "speech_vocab_size", "tokens", int, minimum=1)
    if speech_offset + speech_vocab > vocab:
        raise VoiceError(
            f"tokens/speech_vocab_size: speech_offset + speech_vocab_size = "
            f"{speech_offset + speech_vocab} exceeds lm/vocab_size {vocab}"
        )
    stop = _int_list(t, "stop", "tokens", 0, vocab)
    if not stop:
        raise VoiceError("tokens/stop: at least one stop token id is needed")
    if any(speech_offset <= s < speech_offset + speech_vocab for s in stop):
        raise VoiceError("tokens/stop: a stop token lies inside the speech token range")
    return _Tokens(sos, task_id, speech_offset, speech_vocab, stop)


def _sampling(s: dict) -> SamplingParams:
    d = SamplingParams()
    sampling = SamplingParams(
        top_k=_get(s, "top_k", "sampling", int, default=d.top_k, minimum=1),
        top_p=float(_get(s, "top_p", "sampling", (int, float), default=d.top_p, minimum=0.0, maximum=1.0)),
        win_size=_get(s, "win_size", "sampling", int, default=d.win_size, minimum=0),
        tau_r=float(_get(s, "tau_r", "sampling", (int, float), default=d.tau_r, minimum=0.0)),
        min_len_ratio=float(_get(s, "min_len_ratio", "sampling", (int, float), default=d.min_len_ratio, minimum=0.0)),
        max_len_ratio=float(_get(s, "max_len_ratio", "sampling", (int, float), default=d.max_len_ratio, minimum=0.01)),
    )
    if sampling.min_len_ratio > sampling.max_len_ratio:
        raise VoiceError("sampling/min_len_ratio: larger than sampling/max_len_ratio")
    return sampling


def _kv_layout(kv: dict) -> KvLayout:
    return KvLayout(
        num_layers=_get(kv, "num_layers", "kv", int, minimum=1),
        num_kv_heads=_get(kv, "num_kv_heads", "kv", int, minimum=1),
        head_dim=_get(kv, "head_dim", "kv", int, minimum=1),
        block_size=_get(kv, "block_size", "kv", int, default=128, minimum=1, maximum=65536),
    )
