"""`/api/tts` (a WAV streamed as it is synthesized) and `/api/tts/batch` (a zip of WAVs).

Both synthesize on the daemon's side lane (edgetts.daemon.playout.client_synthesis): the synthesis
thread runs them only between an announcement's pieces of work, so they never
delay one.  The text is prepared as an announcement's is (SSML, lexicon,
normaliser), in the voice's configured settings unless the request overrides one.
"""

from __future__ import annotations

import asyncio
import dataclasses
import io
import logging
import zipfile
from collections.abc import AsyncIterator
from typing import Any

import numpy as np
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from edgetts.audio.wav import wav_bytes, wav_header
from edgetts.daemon.admission.admit import prepared
from edgetts.daemon.admission.intake import PayloadError, clean_text
from edgetts.daemon.assets import Assets
from edgetts.daemon.inbound.http.common import Console, Problem, console, json_object
from edgetts.daemon.playout.client_synthesis import SideBusy, SideStream
from edgetts.daemon.playout.phrase_cache import voice_synthesis_config
from edgetts.engine import AudioChunk, SynthesisConfig, Voice
from edgetts.errors import EdgeTTSError, UnspeakableTextError
from edgetts.text.prepare import Prepared

_LOGGER = logging.getLogger(__name__)

WAIT_S = 1.0
"""Each wait for a chunk is this long at most, so a client gone is noticed (and its stream dropped)."""

_RANGES: dict[str, tuple[float, float]] = {
    "length_scale": (0.1, 10.0),
    "noise_scale": (0.0, 2.0),
    "noise_w": (0.0, 2.0),
}
_KEYS = {"text", "voice", "length_scale", "noise_scale", "noise_w", "speaker_id"}


@dataclasses.dataclass(frozen=True)
class SideRequest:
    voice_name: str
    voice: Voice
    config: SynthesisConfig


def side_request(obj: dict[str, Any], assets: Assets, keys: set[str]) -> SideRequest:
    """The voice and settings a request asks for; Problem 400/404 saying what is wrong."""
    unknown = sorted(set(obj) - keys)
    if unknown:
        raise Problem(400, f"unknown key {unknown[0][:40]!r}")
    name = obj.get("voice", assets.config.voice.name)
    if isinstance(name, str):
        name = assets.voice_named(name) or name  # a configured or an installed voice's name
    configured = assets.config.all_voices()
    if not isinstance(name, str) or name not in configured:
        raise Problem(404, f"unknown voice (known: {', '.join(configured)})")
    voice = assets.voices.get(name)
    if voice is None:
        raise Problem(503, f"voice {name!r} is not loaded: {assets.voice_errors.get(name, 'loading')}")
    config = voice_synthesis_config(configured[name])
    changes: dict[str, Any] = {}
    for key, (low, high) in _RANGES.items():
        value = obj.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
            raise Problem(400, f"{key} must be a number {low:g}-{high:g}")
        changes[key] = float(value)
    speaker = obj.get("speaker_id")
    if speaker is not None:
        if isinstance(speaker, bool) or not isinstance(speaker, int) or not 0 <= speaker < 10000:
            raise Problem(400, "speaker_id must be an integer 0-9999")
        changes["speaker_id"] = speaker
    return SideRequest(name, voice, dataclasses.replace(config, **changes))


def _text(value: Any, assets: Assets) -> Prepared:
    limit = assets.config.queue.max_text_chars
    if not isinstance(value, str) or not value.strip():
        raise Problem(400, "text must be a non-empty string")
    try:  # cleaned as an announcement's text is: escapes, tags, NUL, lone surrogates
        text = clean_text(value).strip()
    except PayloadError as exc:
        raise Problem(400, str(exc)) from None
    if not text:
        raise Problem(400, "text is empty without its markup")
    if len(text) > limit:
        raise Problem(400, f"text too long ({len(text)} characters; at most {limit})")
    try:
        return prepared(text, assets)
    except PayloadError as exc:
        raise Problem(400, str(exc)) from None


def _claim(c: Console) -> None:
    if c.tts_open >= c.settings.max_tts_jobs:
        raise Problem(503, f"{c.tts_open} syntheses running (http/max_tts_jobs); try again shortly", retry_after=1)


def _open(c: Console, req: SideRequest, text: Prepared) -> SideStream:
    try:
        return c.ctx.side.open(req.voice, text, req.config)
    except SideBusy as exc:
        raise Problem(503, f"synthesis busy: {exc}", retry_after=1) from None


async def _next(stream: SideStream) -> AudioChunk | None:
    loop = asyncio.get_running_loop()
    while True:
        try:
            return await loop.run_in_executor(None, stream.get, WAIT_S)
        except TimeoutError:
            continue


def _failed(exc: EdgeTTSError) -> Problem:
    """The text's fault (400: nothing a voice can say in it) or the voice's (500)."""
    if isinstance(exc, UnspeakableTextError):
        return Problem(400, str(exc))
    return Problem(500, f"synthesis failed: {exc}")


async def tts(request: Request) -> Response:
    c = console(request)
    obj = await json_object(request)
    assets = c.ctx.assets()
    req = side_request(obj, assets, _KEYS)
    text = _text(obj.get("text"), assets)
    _claim(c)
    stream = _open(c, req, text)
    c.tts_open += 1
    try:
        first = await _next(stream)
    except EdgeTTSError as exc:
        stream.close()
        c.tts_open -= 1
        raise _failed(exc) from None
    except BaseException:
        stream.close()
        c.tts_open -= 1
        raise
    if first is None:
        stream.close()
        c.tts_open -= 1
        raise Problem(400, "the text has nothing to say")

    async def body() -> AsyncIterator[bytes]:
        try:
            yield wav_header(first.sample_rate) + first.to_int16().astype("<i2").tobytes()
            while (chunk := await _next(stream)) is not None:
                yield chunk.to_int16().astype("<i2").tobytes()
        except EdgeTTSError as exc:  # after the header: the stream just ends early
            _LOGGER.warning("/api/tts synthesis failed mid-stream: %s", exc)
        finally:
            stream.close()
            c.tts_open -= 1

    return StreamingResponse(
        body(),
        media_type="audio/wav",
        headers={
            "cache-control": "no-store",
            "x-edgetts-voice": req.voice_name,
            "x-edgetts-sample-rate": str(first.sample_rate),
        },
    )


async def batch(request: Request) -> Response:
    c = console(request)
    obj = await json_object(request)
    assets = c.ctx.assets()
    texts = obj.get("texts")
    if not isinstance(texts, list) or not texts or len(texts) > c.settings.max_batch_texts:
        raise Problem(400, f"texts must be a list of 1-{c.settings.max_batch_texts} strings")
    req = side_request({k: v for k, v in obj.items() if k != "texts"}, assets, _KEYS - {"text"})
    prepared_texts = [_text(t, assets) for t in texts]
    _claim(c)
    out = io.BytesIO()
    c.tts_open += 1  # one slot for the whole batch: its texts are synthesized one after the other
    try:
        with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as archive:
            for number, text in enumerate(prepared_texts, start=1):
                archive.writestr(f"{number:04d}.wav", await _synthesize(c, req, text))
    finally:
        c.tts_open -= 1
    return Response(
        out.getvalue(),
        media_type="application/zip",
        headers={"cache-control": "no-store", "content-disposition": 'attachment; filename="tts.zip"'},
    )


async def _synthesize(c: Console, req: SideRequest, text: Prepared) -> bytes:
    stream = _open(c, req, text)
    parts: list[np.ndarray] = []
    rate = req.voice.sample_rate
    try:
        while (chunk := await _next(stream)) is not None:
            parts.append(chunk.to_int16())
            rate = chunk.sample_rate
    except EdgeTTSError as exc:
        raise _failed(exc) from None
    finally:
        stream.close()
    return wav_bytes(np.concatenate(parts) if parts else np.zeros(0, np.int16), rate)


__all__ = ["SideRequest", "batch", "side_request", "tts"]
