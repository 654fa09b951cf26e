"""The shape of a normalisation rule, and helpers several rule modules share."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from edgetts.text.normalize.options import NormalizeOptions

Handler = Callable[["re.Match[str]", NormalizeOptions], str]


@dataclass(frozen=True)
class Rule:
    """One regex pass: every match is replaced by what ``handler`` returns."""

    name: str
    pattern: re.Pattern[str]
    handler: Handler

    def apply(self, text: str, options: NormalizeOptions) -> str:
        handler = self.handler
        return self.pattern.sub(lambda m: handler(m, options), text)


_NEW_SENTENCE = re.compile(r"\s+[\"'(]?[A-Z]")


def sentence_dot(m: re.Match[str]) -> str:
    """ "." when a dot the match swallowed also ended the sentence, else "".

    "Meet at Baker St." keeps its full stop; "at 2 p.m. on" does not. A capitalised
    word after the dot is taken as a new sentence, the end of the text as well.
    """
    if not m.group(0).endswith("."):
        return ""
    rest = m.string[m.end() :]
    if not rest.strip() or _NEW_SENTENCE.match(rest):
        return "."
    return ""


def spell(text: str, options: NormalizeOptions) -> str:
    """Letters and digits one by one: "KX19" -> "K X one nine"; the letter A per ``letter_a``."""
    from edgetts.text.normalize.numbers import digits

    out: list[str] = []
    for ch in text:
        if "0" <= ch <= "9":
            out.append(digits(ch, options.say_zero_as))
        elif ch.isascii() and ch.isalpha():
            up = ch.upper()
            out.append(options.letter_a if up == "A" else up)
    return " ".join(out)
