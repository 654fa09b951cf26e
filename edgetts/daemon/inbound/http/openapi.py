"""The API described as OpenAPI 3.1 (served at /api/openapi.json), written out by hand: the routes are few."""

from __future__ import annotations

from typing import Any

from edgetts import __version__

_ERR = {"description": "error", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
_OK = {"description": "ok", "content": {"application/json": {"schema": {"type": "object"}}}}


def _op(
    summary: str,
    ok: int = 200,
    body: str | None = None,
    errors: tuple[int, ...] = (401, 429),
    content: str = "application/json",
    safe: bool = True,
) -> dict[str, Any]:
    responses: dict[str, Any] = {
        str(ok): _OK if content == "application/json" else {"description": "ok", "content": {content: {}}}
    }
    for code in sorted(set(errors) | ({403} if not safe else set())):
        responses[str(code)] = _ERR
    op: dict[str, Any] = {"summary": summary, "responses": responses}
    if body is not None:
        op["requestBody"] = {
            "required": True,
            "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{body}"}}},
        }
    if not safe:
        op["parameters"] = [
            {
                "name": "X-CSRF-Token",
                "in": "header",
                "required": False,
                "schema": {"type": "string"},
                "description": "the session's CSRF token (not needed with a bearer token)",
            }
        ]
    return op


_ID = {"name": "id", "in": "path", "required": True, "schema": {"type": "string", "maxLength": 160}}
_NAME = {
    "name": "name",
    "in": "path",
    "required": True,
    "schema": {"type": "string", "pattern": "^[A-Za-z0-9_-]{1,64}$"},
}

_SCHEMAS: dict[str, Any] = {
    "Error": {"type": "object", "required": ["error"], "properties": {"error": {"type": "string"}}},
    "Announcement": {
        "type": "object",
        "description": "the MQTT announce payload (docs/daemon.md: Topics and payloads), plus zone",
        "properties": {
            "id": {"type": "string"},
            "text": {"type": "string"},
            "clip": {"type": "string"},
            "priority": {"enum": ["emergency", "high", "normal", "low"]},
            "voice": {"type": "string"},
            "volume": {"type": "number", "minimum": 0, "maximum": 1},
            "chime": {"type": "string"},
            "repeat": {"type": "integer", "minimum": 1},
            "interrupt": {"type": "boolean"},
            "ttl": {"type": "number"},
            "expires_at": {"type": "number"},
            "fallback": {"type": "string"},
            "deadline_ms": {"type": "integer"},
            "play_at": {"type": "number", "description": "Unix seconds: synchronized start"},
            "zone": {"type": "string", "description": "device (default) | all | group:<name>"},
        },
    },
    "Login": {"type": "object", "required": ["password"], "properties": {"password": {"type": "string"}}},
    "Tts": {
        "type": "object",
        "required": ["text"],
        "properties": {
            "text": {"type": "string"},
            "voice": {"type": "string"},
            "length_scale": {"type": "number"},
            "noise_scale": {"type": "number"},
            "noise_w": {"type": "number"},
            "speaker_id": {"type": "integer"},
        },
    },
    "TtsBatch": {
        "type": "object",
        "required": ["texts"],
        "properties": {
            "texts": {"type": "array", "items": {"type": "string"}},
            "voice": {"type": "string"},
            "length_scale": {"type": "number"},
            "noise_scale": {"type": "number"},
            "noise_w": {"type": "number"},
            "speaker_id": {"type": "integer"},
        },
    },
}


def document() -> dict[str, Any]:
    cancel = _op("cancel an announcement, queued or playing", 202, errors=(400, 401, 404, 429), safe=False)
    cancel["parameters"] = [_ID, *cancel["parameters"]]
    clip = _op("a clip as WAV, as the device plays it", content="audio/wav", errors=(400, 401, 404, 429))
    clip["parameters"] = [_NAME]
    return {
        "openapi": "3.1.0",
        "info": {"title": "edgetts console API", "version": __version__},
        "components": {
            "schemas": _SCHEMAS,
            "securitySchemes": {
                "bearer": {"type": "http", "scheme": "bearer"},
                "session": {"type": "apiKey", "in": "cookie", "name": "edgetts_session"},
            },
        },
        "security": [{"bearer": []}, {"session": []}],
        "paths": {
            "/api/session": {"get": _op("who you are, and the CSRF token", errors=(429,))},
            "/api/login": {
                "post": _op(
                    "log in with the password: sets the session cookie", body="Login", errors=(400, 401, 403, 413, 429)
                )
            },
            "/api/logout": {"post": _op("end the session", safe=False)},
            "/api/announce": {
                "post": _op(
                    "announce (as on the announce topic); 400 with the rejected reason",
                    202,
                    "Announcement",
                    (400, 401, 413, 429, 503),
                    safe=False,
                )
            },
            "/api/stop": {"post": _op("stop what is playing (the queue plays on)", 202, safe=False)},
            "/api/announcements/{id}": {"delete": cancel},
            "/api/status": {
                "get": _op("the retained status: state, degraded reasons, queue depth...", errors=(401, 429, 503))
            },
            "/api/queue": {"get": _op("what plays now and what is queued")},
            "/api/events": {
                "get": _op(
                    "Server-Sent Events: every event and status as published",
                    content="text/event-stream",
                    errors=(401, 429, 503),
                )
            },
            "/api/events/recent": {"get": _op("the last 100 events")},
            "/api/clips": {"get": _op("the clip library")},
            "/api/clips/{name}": {"get": clip},
            "/api/voices": {"get": _op("the configured voices, loaded or why not")},
            "/api/cache": {"get": _op("phrase-cache use")},
            "/api/config": {"get": _op("the effective config, secrets redacted")},
            "/api/tts": {
                "post": _op(
                    "synthesize: a WAV streamed as it is made (never delays an announcement)",
                    body="Tts",
                    content="audio/wav",
                    errors=(400, 401, 404, 413, 429, 503),
                    safe=False,
                )
            },
            "/api/tts/batch": {
                "post": _op(
                    "synthesize several texts: a zip of WAVs",
                    body="TtsBatch",
                    content="application/zip",
                    errors=(400, 401, 404, 413, 429, 503),
                    safe=False,
                )
            },
            "/api/openapi.json": {"get": _op("this document", errors=(429,))},
        },
    }


__all__ = ["document"]
