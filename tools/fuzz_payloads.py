"""Hostile announce payloads for tools/fuzz_mqtt.py, generated from a seed (issue 13).

Each :class:`Case` says what the daemon must do with it:

* ``reject``: a `rejected` event and nothing else (never queued, never spoken);
* ``speak``: queued and spoken, markup cleaned: ``expect`` is the text the voice must get;
* ``any``: either (random mutations), but whatever is spoken must be clean (:func:`clean_spoken`).

Every case carries a unique id where its payload has a readable one, so a
duplicate-id drop (silent by design) never hides an outcome.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable
from dataclasses import dataclass

PHRASES = (
    "Gate five is closed.",
    "The train is late.",
    "Please stand clear.",
    "Fire drill at noon.",
    "Doors are closing.",
    "Welcome aboard.",
)
"""Few texts, so the phrase cache makes most of the spoken cases instant after their first time."""

FIELDS = ("ttl", "expires_at", "volume", "repeat", "deadline_ms")


@dataclass(frozen=True)
class Case:
    category: str
    payload: bytes
    expect: str
    """``reject``, ``speak`` or ``any``."""
    text: str | None = None
    """For ``speak``: the text the voice should be asked to say (after cleaning)."""


def _obj(ident: str, **fields: object) -> str:
    return json.dumps({"id": ident, **fields})


def _digits(rng: random.Random) -> str:
    n = rng.choice((33, 40, 309, 310, 400, 4300, 4301, 5000, 12000))
    body = str(rng.randint(1, 9)) + "".join(rng.choice("0123456789") for _ in range(n - 1))
    return rng.choice(("", "-")) + body + rng.choice(("", ".5", "e5", "e-3", "E+400"))


def huge_number(rng: random.Random, ident: str) -> Case:
    key = rng.choice((*FIELDS, "id", "text", "priority"))
    return Case(
        "huge_number",
        f'{{"id":"{ident}","text":"hi","{key}":{_digits(rng)}}}'.encode()
        if key not in ("id", "text")
        else f'{{"{key}":{_digits(rng)}}}'.encode(),
        "reject",
    )


def deep(rng: random.Random, ident: str) -> Case:
    n = rng.choice((17, 50, 999, 1000, 2500, 5000))
    opener = rng.choice(("[", '{"a":', '[{"b":'))
    closer = {"[": "]", '{"a":': "}", '[{"b":': "}]"}[opener] if rng.random() < 0.5 else ""
    where = rng.choice(("value", "top"))
    inner = opener * n + "1" + closer * n
    body = f'{{"id":"{ident}","text":"hi","x":{inner}}}' if where == "value" else f'{{"a":{inner}}}'
    return Case("deep", body.encode(), "reject")


def surrogate(rng: random.Random, ident: str) -> Case:
    lone = "\\u%04x" % rng.randint(0xD800, 0xDFFF)
    where = rng.choice(("id", "text", "voice", "key", "chime"))
    if where == "id":
        return Case(
            "surrogate", f'{{"id":"a{lone}","text":{rng.choice(("5", chr(34) + "hi" + chr(34)))}}}'.encode(), "reject"
        )
    if where == "key":
        return Case("surrogate", f'{{"id":"{ident}","text":"hi","{lone}":1}}'.encode(), "reject")
    value = f"Gate {lone} five" if where == "text" else f"x{lone}"
    return Case(
        "surrogate",
        f'{{"id":"{ident}","text":"hi","{where}":"{value}"}}'.encode()
        if where != "text"
        else f'{{"id":"{ident}","text":"{value}"}}'.encode(),
        "reject",
    )


def nul(rng: random.Random, ident: str) -> Case:
    if rng.random() < 0.5:
        return Case("nul", rng.choice(PHRASES).replace(" ", "\x00", 1).encode(), "reject")
    field = rng.choice(("text", "id"))
    value = "Gate\\u0000five"
    body = f'{{"id":"{ident}","text":"{value}"}}' if field == "text" else f'{{"id":"{value}","text":"hi"}}'
    return Case("nul", body.encode(), "reject")


def control(rng: random.Random, ident: str) -> Case:
    ch = rng.choice([c for c in range(1, 32) if c not in (9, 10, 13, 27)] + [127, 0x85, 0x9B + 1])
    text = f"Gate {chr(ch)} five."
    if rng.random() < 0.5:
        return Case("control", text.encode("utf-8"), "reject")
    return Case("control", _obj(ident, text=text).encode(), "reject")


def ansi(rng: random.Random, ident: str) -> Case:
    phrase = rng.choice(PHRASES)
    codes = rng.choice(("\x1b[1;31m", "\x1b[0m", "\x1b[38;5;208m", "\x1b]0;title\x07", "\x1b[2J", "\x1bc"))
    words = phrase.split(" ")
    at = rng.randint(0, len(words))
    dirty = " ".join([*words[:at], codes + (words[at] if at < len(words) else ""), *words[at + 1 :]])
    expect = " ".join(phrase.split())
    payload = dirty.encode() if rng.random() < 0.5 else _obj(ident, text=dirty).encode()
    return Case("ansi", payload, "speak", expect)


def html(rng: random.Random, ident: str) -> Case:
    phrase = rng.choice(PHRASES)
    tag = rng.choice(("b", "i", "p", "span class='x'", "font color=red", 'a href="http://x/"'))
    name = tag.split()[0]
    words = phrase.split(" ")
    dirty = f"<{tag}>{words[0]}</{name}> " + " ".join(words[1:]) + rng.choice(("", "<br/>", "<!-- c -->"))
    payload = dirty.encode() if rng.random() < 0.5 else _obj(ident, text=dirty).encode()
    return Case("html", payload, "speak", phrase)


def bom(rng: random.Random, ident: str) -> Case:
    phrase = rng.choice(PHRASES)
    if rng.random() < 0.7:
        return Case("bom", b"\xef\xbb\xbf" + _obj(ident, text=phrase).encode(), "speak", phrase)
    return Case("bom", b"\xef\xbb\xbf" + f'{{"id":"{ident}","text":"hi","ttl":1{"0" * 400}}}'.encode(), "reject")


def bad_json(rng: random.Random, ident: str) -> Case:
    good = _obj(ident, text=rng.choice(PHRASES))
    variants: list[Callable[[], str]] = [
        lambda: good[: rng.randint(1, len(good) - 1)],
        lambda: good.replace(":", "", 1),
        lambda: good + "}",
        lambda: good.replace('"', "'"),
        lambda: "{" + "," * rng.randint(1, 50) + "}",
        lambda: '{"id":"' + ident + '","text":"a\\x41"}',
        lambda: '{"id":"' + ident + '","text":"hi","ttl":NaN}',
        lambda: '{"id":"' + ident + '","text":"hi","volume":-Infinity}',
        lambda: '{"id":"' + ident + '","text":"hi","volume":1e999}',
        lambda: '{"id":"' + ident + '","text":"a","text":"b"}',
    ]
    return Case("bad_json", rng.choice(variants)().encode(), "reject")


def bad_utf8(rng: random.Random, ident: str) -> Case:
    junk = bytes(rng.choice((0x80, 0xC0, 0xED, 0xF5, 0xFF, 0xFE)) for _ in range(rng.randint(1, 4)))
    base = rng.choice(PHRASES).encode()
    at = rng.randint(0, len(base))
    return Case("bad_utf8", base[:at] + junk + base[at:], "reject")


#: Per field, values that are always wrong for it (type or range).
WRONG: dict[str, tuple[object, ...]] = {
    "text": ([1, 2], {"a": 1}, True, 5, None, ""),
    "priority": ("urgent", "", 5, None, ["high"]),
    "voice": ("nope", "", 5, ["default"], {"n": 1}),
    "volume": (-0.1, 1.5, 10**20, "loud", True, [1]),
    "repeat": (0, -5, 10**20, 2.5, True, "2", None),
    "interrupt": ("yes", 1, 0, None, [True]),
    "chime": ("nope", "", 5, True, ["ding"]),
    "fallback": ("nope", "", 5, False, {"clip": "x"}),
    "deadline_ms": (0, -5, 10**20, 2.5, True, "100", 600001),
    "ttl": (-5, 0, -0.5, "60", True, [60]),
    "expires_at": ("soon", True, [1], {"t": 1}),
}


def wrong_type(rng: random.Random, ident: str) -> Case:
    key = rng.choice(tuple(WRONG))
    value = rng.choice(WRONG[key])
    fields: dict[str, object] = {"text": "hi"}
    fields[key] = value
    if key == "text" and value is None:
        del fields["text"]  # neither text nor clip
    if key == "repeat" and value is None:
        fields[key] = "none"
    return Case("wrong_type", _obj(ident, **fields).encode(), "reject")


def names(rng: random.Random, ident: str) -> Case:
    field = rng.choice(("clip", "chime", "fallback", "voice"))
    value = rng.choice(("../../etc/passwd", "/etc/passwd", "a/b", "x" * 65, "klingon", "a\\b", "..", "c:\\x"))
    fields: dict[str, object] = {field: value} if field == "clip" else {"text": "hi", field: value}
    fields_extra = rng.choice(({}, {"colour": "red"}))
    return Case("names", _obj(ident, **fields, **fields_extra).encode(), "reject")


def sizes(rng: random.Random, ident: str) -> Case:
    choice = rng.randint(0, 3)
    if choice == 0:
        return Case("sizes", _obj(ident, text="a" * rng.choice((2001, 2500, 5000))).encode(), "reject")
    if choice == 1:
        return Case("sizes", b"x" * rng.choice((20000, 50000, 100000)), "reject")
    if choice == 2:
        if rng.random() < 0.2:  # plain text that is not JSON: spoken or unspeakable, never a crash
            return Case("sizes", rng.choice((b"[]", b"null", b"[1, 2]", b"}{")), "any")
        return Case("sizes", rng.choice((b"", b"   ", b"\n\t", b"<b></b>", b"{}", b"<br/> <i></i>")), "reject")
    return Case("sizes", _obj(ident, text=" " * rng.randint(1, 100)).encode(), "reject")


def bad_ssml(rng: random.Random, ident: str) -> Case:
    doc = rng.choice(
        (
            "<speak>Gate <blink>5</blink></speak>",
            "<speak>Gate 5",
            "<speak><break time='soon'/></speak>",
            "<?xml version='1.0'?><!DOCTYPE x [<!ENTITY a 'b'>]><speak>&a;</speak>",
            "<speak>Gate<say-as interpret-as='telepathy'>5</say-as></speak>",
        )
    )
    payload = doc.encode() if rng.random() < 0.5 else _obj(ident, text=doc).encode()
    if rng.random() < 0.1:  # deep but well-formed: the SSML parser's to accept or refuse
        payload = ("<speak>" + "<p>" * 200 + "x" + "</p>" * 200 + "</speak>").encode()
        return Case("bad_ssml", payload, "any")
    return Case("bad_ssml", payload, "reject")


def valid(rng: random.Random, ident: str) -> Case:
    phrase = rng.choice(PHRASES)
    extra = rng.choice(({}, {"priority": "low"}, {"volume": 0.5}, {"ttl": 600}, {"repeat": 1}))
    if rng.random() < 0.3:
        return Case("valid", phrase.encode(), "speak", phrase)
    return Case("valid", _obj(ident, text=phrase, **extra).encode(), "speak", phrase)


def mutated(rng: random.Random, ident: str) -> Case:
    data = bytearray(_obj(ident, text=rng.choice(PHRASES), priority="normal").encode())
    for _ in range(rng.randint(1, 6)):
        at = rng.randrange(len(data))
        op = rng.randint(0, 2)
        if op == 0:
            data[at] = rng.randrange(256)
        elif op == 1:
            data.insert(at, rng.randrange(256))
        elif at < len(data):
            del data[at]
    return Case("mutated", bytes(data), "any")


GENERATORS: dict[str, tuple[Callable[[random.Random, str], Case], int]] = {
    "huge_number": (huge_number, 10),
    "deep": (deep, 8),
    "surrogate": (surrogate, 8),
    "nul": (nul, 6),
    "control": (control, 6),
    "ansi": (ansi, 3),
    "html": (html, 3),
    "bom": (bom, 3),
    "bad_json": (bad_json, 10),
    "bad_utf8": (bad_utf8, 5),
    "wrong_type": (wrong_type, 10),
    "names": (names, 6),
    "sizes": (sizes, 5),
    "bad_ssml": (bad_ssml, 4),
    "valid": (valid, 2),
    "mutated": (mutated, 11),
}
"""Category -> (generator, weight out of 100)."""


def cases(count: int, seed: int) -> list[Case]:
    """``count`` cases, the same for the same seed."""
    rng = random.Random(seed)
    gens = [g for g, _w in GENERATORS.values()]
    weights = [w for _g, w in GENERATORS.values()]
    return [rng.choices(gens, weights)[0](rng, f"fz{seed}-{i}") for i in range(count)]


_UNCLEAN = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff\ufeff]|</?[A-Za-z][^<>]*>|^\s*\{\"")


def clean_spoken(text: str) -> bool:
    """Whether ``text`` is fit to be read aloud: no control chars, escapes, tags, BOM, or JSON.

    SSML (what edgetts.text.ssml.looks_like_ssml takes for it) is the SSML parser's to read.
    """
    if text.lstrip()[:9].lower().startswith(("<speak", "<?xml", "<!doctype")):
        return "\x00" not in text and not re.search(r"[\ud800-\udfff]", text)
    return not _UNCLEAN.search(text)


__all__ = ["GENERATORS", "PHRASES", "Case", "cases", "clean_spoken"]
