"""``ArVoice``: an autoregressive speech-token voice behind the engine's ``Voice`` protocol.

Per announcement: split the text into sentences, and sentences into segments of
at most ``text/max_tokens_per_segment`` tokens that also fit the KV limit; per
segment, prefill its ids after the voice's shared prefix, sample speech tokens
one by one, and every ``decoder/chunk_tokens`` tokens decode audio while the LM
continues.  Several :class:`AudioChunk` per sentence; the last one has
``is_last_in_sentence=True``.

Streaming is exact: a chunk's window is fed with ``left_context_tokens`` before
it and its last ``lookahead_tokens`` are held back until their right context
exists, so with a decoder whose receptive field fits those margins the streamed
audio equals the decode of all tokens at once.  For decoders without such a
bound, ``decoder/crossfade_samples`` fades each chunk in over the previous
window's audio of the same samples (what that window's look-ahead produced).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from edgetts.engine import AudioChunk, SynthesisConfig
from edgetts.errors import SynthesisError, UnspeakableTextError, VoiceError
from edgetts.text.prepare import Prepared
from edgetts.voice.ar.kv_cache import BlockPool, KvSequence, SharedPrefix
from edgetts.voice.ar.lm import BlockLm, make_session
from edgetts.voice.ar.manifest import ArManifest, load_manifest
from edgetts.voice.ar.sampling import SpeechTokenSampler
from edgetts.voice.ar.tokenizer import Tokenizer, split_segment, split_sentences
from edgetts.voice.onnx_session import RuntimeOptions

_LOGGER = logging.getLogger(__name__)


class ArVoice:
    """A CosyVoice-style voice: LM with a block KV cache, then a token-to-waveform decoder."""

    def __init__(
        self,
        manifest: ArManifest,
        lm: BlockLm,
        decoder_session: Any,
        tokenizer: Tokenizer,
        pool: BlockPool,
        prefix: SharedPrefix,
        *,
        seed: int | None = None,
    ) -> None:
        self.manifest = manifest
        self.lm = lm
        self._decoder = decoder_session
        self.tokenizer = tokenizer
        self.pool = pool
        self.prefix = prefix
        self._seed = seed
        self.sampler = SpeechTokenSampler(
            manifest.sampling,
            speech_offset=manifest.speech_offset,
            speech_vocab_size=manifest.speech_vocab_size,
            stop_ids=manifest.stop_ids,
        )
        self.max_segment_tokens = _segment_budget(manifest)

    @classmethod
    def load(
        cls, manifest_path: str | Path, *, runtime: RuntimeOptions | None = None, seed: int | None = None
    ) -> ArVoice:
        """Load the voice a manifest describes; allocate its KV pool and fill the shared prefix.

        ``runtime``: how onnxruntime runs the LM and the decoder, as for a Piper
        voice (threads, pinned cores, locked weights; default: one thread per
        usable core, unpinned, unlocked).
        ``seed``: default sampling seed of every ``synthesize`` (None = fresh entropy).
        """
        m = load_manifest(manifest_path)
        budget = _segment_budget(m)
        if budget < 1:
            raise VoiceError(
                f"{m.path}: kv/max_sequence_tokens: {m.max_sequence_tokens} cannot hold "
                "one text token with its prompt and max_len_ratio"
            )
        try:
            tokenizer = Tokenizer.from_manifest(m.tokenizer, m.base_dir)
        except VoiceError as exc:
            raise VoiceError(f"{m.path}: {exc}") from None
        if tokenizer.max_id() >= m.lm_vocab_size:
            raise VoiceError(f"{m.path}: tokenizer: ids reach {tokenizer.max_id()}, lm/vocab_size is {m.lm_vocab_size}")
        runtime = runtime or RuntimeOptions()
        lm = BlockLm.load(m.lm_path, m.kv, m.lm_vocab_size, runtime)
        decoder = make_session(m.decoder.path, runtime)
        if [i.name for i in decoder.get_inputs()] != ["speech_tokens"]:
            raise VoiceError(
                f"{m.decoder.path}: decoder/path: the decoder must take exactly one input, speech_tokens [T] int64"
            )
        prefix_ids = m.prefix_ids()
        lo = m.kv
        pool = BlockPool(lo, lo.blocks_for(len(prefix_ids)) + lo.blocks_for(m.max_sequence_tokens))
        seq = pool.new_sequence()
        lm.prefill(seq, np.asarray(prefix_ids))
        prefix = seq.freeze()
        _LOGGER.info(
            "AR voice %s: KV pool %d blocks x %d tokens = %.1f MiB, prefix %d tokens",
            m.name,
            pool.num_blocks,
            lo.block_size,
            pool.nbytes / 2**20,
            prefix.length,
        )
        return cls(m, lm, decoder, tokenizer, pool, prefix, seed=seed)

    @property
    def name(self) -> str:
        return self.manifest.name

    @property
    def sample_rate(self) -> int:
        return self.manifest.sample_rate

    # -- text ------------------------------------------------------------------------
    def segments(self, text: str) -> list[list[list[int]]]:
        """Text-token ids per segment, per sentence; raises UnspeakableTextError when empty."""
        sentences = split_sentences(text)
        out = [split_segment(s, self.max_segment_tokens, self.tokenizer) for s in sentences]
        out = [segs for segs in out if segs]
        if not out:
            raise UnspeakableTextError(f"nothing to speak in {text[:40]!r}")
        return out

    # -- the LM --------------------------------------------------------------------------
    def speech_tokens(self, text_ids: list[int], rng: np.random.Generator) -> Iterator[int]:
        """Speech tokens (0-based) for one segment, as the LM produces them."""
        m = self.manifest
        min_len, max_len = m.sampling.length_limits(len(text_ids))
        seq: KvSequence = self.pool.new_sequence(prefix=self.prefix, max_tokens=m.max_sequence_tokens)
        with seq:
            logits = self.lm.prefill(seq, np.asarray(m.request_ids(text_ids)))[-1]
            history: list[int] = []
            for step in range(max_len):
                tok = self.sampler.pick(logits, history, step, min_len, rng)
                if self.sampler.is_stop(tok):
                    return
                history.append(tok)
                yield tok - m.speech_offset
                if step + 1 < max_len:
                    logits = self.lm.forward(seq, np.asarray([tok]))[-1]

    def tokens_for(self, text: str, *, seed: int | None = None) -> list[list[int]]:
        """All speech tokens of ``text``, per segment (what ``synthesize`` with ``seed`` speaks)."""
        rng = np.random.default_rng(seed if seed is not None else self._seed)
        return [list(self.speech_tokens(seg, rng)) for segs in self.segments(text) for seg in segs]

    # -- the decoder ---------------------------------------------------------------------
    def decode(self, tokens: list[int] | np.ndarray) -> np.ndarray:
        """Audio of ``tokens`` in one decoder run (float32, ``samples_per_token`` per token)."""
        toks = np.ascontiguousarray(tokens, dtype=np.int64).reshape(-1)
        spt = self.manifest.decoder.samples_per_token
        if toks.shape[0] == 0:
            return np.zeros(0, dtype=np.float32)
        try:
            (audio,) = self._decoder.run(None, {"speech_tokens": toks})
        except Exception as exc:
            raise SynthesisError(f"decoder failed: {exc}".splitlines()[0]) from exc
        audio = np.asarray(audio, dtype=np.float32).reshape(-1)
        if audio.shape[0] != toks.shape[0] * spt or not np.all(np.isfinite(audio)):
            raise SynthesisError(
                f"decoder returned {audio.shape[0]} samples for {toks.shape[0]} "
                f"tokens (want {spt} each) or non-finite values"
            )
        return audio

    def _decode_range(self, toks: list[int], start: int, end: int) -> tuple[np.ndarray, np.ndarray]:
        """Audio of tokens [start, end) decoded with their left context and look-ahead,
        and the audio after ``end`` that the look-ahead produced (cross-fade material)."""
        d = self.manifest.decoder
        spt = d.samples_per_token
        w0 = max(0, start - d.left_context_tokens)
        w1 = min(len(toks), end + d.lookahead_tokens)
        audio = self.decode(toks[w0:w1])
        return audio[(start - w0) * spt : (end - w0) * spt], audio[(end - w0) * spt :]

    # -- the Voice protocol ----------------------------------------------------------------
    def synthesize(
        self, text: str | Prepared, config: SynthesisConfig | None = None, *, seed: int | None = None
    ) -> Iterator[AudioChunk]:
        """Speak ``text``; raises UnspeakableTextError at once when there is nothing to say.

        A :class:`Prepared` text is read from its source: the model reads written text
        (its own tokenizer), not the Piper front end's segments.

        Of ``SynthesisConfig`` only ``volume`` applies: the VITS knobs have no meaning
        here, and ``normalize_audio`` would need the whole sentence before the first
        chunk, which streaming cannot wait for.
        """
        cfg = config or SynthesisConfig()
        if isinstance(text, Prepared):
            text = text.source
        sentences = self.segments(text)  # raises before anything is yielded
        if cfg.speaker_id not in (None, 0):
            _LOGGER.debug("AR voice %s has one speaker (its prompt); speaker_id ignored", self.name)
        rng = np.random.default_rng(seed if seed is not None else self._seed)
        return self._stream(sentences, cfg, rng)

    def _stream(
        self, sentences: list[list[list[int]]], cfg: SynthesisConfig, rng: np.random.Generator
    ) -> Iterator[AudioChunk]:
        d = self.manifest.decoder
        for s_idx, segs in enumerate(sentences):
            ids = tuple(t for seg in segs for t in seg)
            for g_idx, seg in enumerate(segs):
                last_seg = g_idx == len(segs) - 1
                toks: list[int] = []
                done = 0
                tail = np.zeros(0, dtype=np.float32)  # previous window's audio past its end
                for tok in self.speech_tokens(seg, rng):
                    toks.append(tok)
                    ready = len(toks) - d.lookahead_tokens
                    if ready - done >= d.chunk_tokens:
                        audio, after = self._decode_range(toks, done, ready)
                        audio = crossfade(tail, audio)
                        tail = after[: d.crossfade_samples]
                        yield self._chunk(audio, s_idx, False, ids, cfg)
                        done = ready
                if done < len(toks) or last_seg:
                    audio, _ = self._decode_range(toks, done, len(toks))
                    yield self._chunk(crossfade(tail, audio), s_idx, last_seg, ids, cfg)

    def _chunk(
        self, audio: np.ndarray, s_idx: int, last: bool, ids: tuple[int, ...], cfg: SynthesisConfig
    ) -> AudioChunk:
        if cfg.volume != 1.0:
            audio = audio * np.float32(cfg.volume)
        audio = np.clip(audio, -1.0, 1.0).astype(np.float32, copy=False)
        return AudioChunk(
            audio=audio,
            sample_rate=self.sample_rate,
            sentence_index=s_idx,
            is_last_in_sentence=last,
            phoneme_ids=ids,
        )

    def close(self) -> None:
        """Free the shared prefix's blocks (the pool itself goes with the object)."""
        self.prefix.release()


def crossfade(tail: np.ndarray, audio: np.ndarray) -> np.ndarray:
    """``audio`` whose first samples fade in linearly over ``tail`` (the previous window's
    guess at them).  Where both agree (an exact decoder) the result is ``audio`` itself."""
    n = min(len(tail), len(audio))
    if n == 0:
        return audio
    w = np.arange(1, n + 1, dtype=np.float32) / np.float32(n + 1)
    out = audio.copy()
    out[:n] = tail[:n] * (1.0 - w) + audio[:n] * w
    return out


def _segment_budget(m: ArManifest) -> int:
    """Most text tokens one segment may hold so prefill + max_len stays within the KV limit."""
    fixed = 1 + (len(m.prompt_speech_tokens) if m.layout == "cosyvoice2" else 0)  # task_id (+ prompt speech)
    best = 0
    for n in range(1, m.max_text_tokens_per_segment + 1):
        _, max_len = m.sampling.length_limits(n)
        if fixed + n + max_len <= m.max_sequence_tokens:
            best = n
        else:
            break
    return best
