"""``edgetts normalize``: show the words (and SSML segments) that will be spoken.

The lead wires :func:`register` into ``edgetts/cli.py``.
"""

from __future__ import annotations

import argparse
import sys

from edgetts.errors import EdgeTTSError
from edgetts.text.normalize import NormalizeOptions, normalize
from edgetts.text.prepare import Break, Phonemes, Segment, Speak, prepare
from edgetts.text.ssml import looks_like_ssml


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add the ``normalize`` verb."""
    parser = subparsers.add_parser(
        "normalize",
        help="print the words that will be spoken for TEXT",
        description="Print the words that will be spoken for TEXT (plain text or SSML).",
    )
    parser.add_argument("text", metavar="TEXT", help='the text; "-" reads standard input')
    parser.add_argument(
        "--ssml",
        action="store_true",
        help="read TEXT as SSML (default: SSML when it starts with <speak)",
    )
    parser.add_argument(
        "--time-24h",
        choices=("hundred", "oh", "12h"),
        default=None,
        help="how 14:05 / 09:42 are read (normalize.time_24h)",
    )
    parser.add_argument(
        "--date-order",
        choices=("dmy", "mdy"),
        default=None,
        help="order of numeric dates like 12/03/2025 (normalize.date_order)",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Print the spoken form of ``args.text``; 2 with one error line for bad SSML."""
    text = sys.stdin.read() if args.text == "-" else args.text
    overrides = {k: v for k, v in (("time_24h", args.time_24h), ("date_order", args.date_order)) if v}
    options = NormalizeOptions.from_mapping(overrides)
    as_ssml = True if args.ssml else None
    try:
        if not args.ssml and not looks_like_ssml(text):
            print(normalize(text, options))
            return 0
        segments = prepare(text, options=options, ssml=as_ssml)
    except EdgeTTSError as err:
        print(f"edgetts: error: {err}", file=sys.stderr)
        return 2
    for segment in segments:
        print(format_segment(segment))
    return 0


def format_segment(segment: Segment) -> str:
    """One line per segment: ``speak(rate=1.0, volume=1.0): ...``, ``break 0.5 s``,
    ``phonemes: ...``."""
    if isinstance(segment, Speak):
        return f"speak(rate={float(segment.rate)}, volume={float(segment.volume)}): {segment.text}"
    if isinstance(segment, Phonemes):
        return f"phonemes: {segment.ipa}"
    assert isinstance(segment, Break)
    return f"break {float(segment.seconds)} s"
