"""The `edgetts` command line.

Every verb turns its arguments into plain values before it calls the
library; errors end with one line on stderr and a non-zero exit, never a
traceback (run with ``-v`` to see the cause in the log).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from edgetts import __version__
from edgetts.engine import SynthesisConfig, Voice
from edgetts.errors import EdgeTTSError, VoiceError

_LOGGER = logging.getLogger(__name__)

EXIT_ERROR = 1
EXIT_USAGE = 2


def _positive(value: str) -> float:
    number = float(value)
    if not number > 0:
        raise argparse.ArgumentTypeError(f"must be > 0, not {value}")
    return number


def _non_negative(value: str) -> float:
    number = float(value)
    if not number >= 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, not {value}")
    return number


def _threads(value: str) -> int:
    number = int(value)
    if number < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, not {value}")
    return number


def _add_voice_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--voice",
        default="default",
        help="voice: 'default' (en_US-joe-medium), a name from `edgetts voices`, "
        "a Piper .onnx path, or an autoregressive voice manifest (.json)",
    )
    parser.add_argument(
        "--threads", type=_threads, default=None, help="inference threads (default: one per available core)"
    )


def _add_synthesis_args(parser: argparse.ArgumentParser) -> None:
    _add_voice_args(parser)
    parser.add_argument(
        "--length-scale",
        type=_positive,
        default=None,
        help="speech duration multiplier: >1 slower, <1 faster (default: the voice's)",
    )
    parser.add_argument(
        "--noise-scale", type=_non_negative, default=None, help="VITS noise (default: the voice's; 0 = deterministic)"
    )
    parser.add_argument(
        "--noise-w",
        type=_non_negative,
        default=None,
        help="VITS duration noise (default: the voice's; 0 = deterministic)",
    )
    parser.add_argument("--speaker", type=int, default=None, help="speaker id (multi-speaker voices)")
    parser.add_argument("--volume", type=_non_negative, default=1.0, help="linear gain (default 1.0)")
    parser.add_argument("--no-normalize", action="store_true", help="skip the text normaliser in front of espeak-ng")


def _synthesis_config(args: argparse.Namespace) -> SynthesisConfig:
    return SynthesisConfig(
        length_scale=args.length_scale,
        noise_scale=args.noise_scale,
        noise_w=args.noise_w,
        speaker_id=args.speaker,
        volume=args.volume,
    )


def _load(args: argparse.Namespace) -> Voice:
    from edgetts.voice.catalog import load_voice

    return load_voice(args.voice, threads=args.threads, normalize=not getattr(args, "no_normalize", False))


def _text_arg(args: argparse.Namespace) -> str:
    if args.text is None:
        raise EdgeTTSError("give the text to speak")
    return str(args.text)


# -- verbs -----------------------------------------------------------------------
def cmd_synth(args: argparse.Namespace) -> int:
    from edgetts.audio.wav import write_chunks

    if args.text_file is not None:
        if args.text is not None or args.output is not None:
            raise EdgeTTSError("--text-file writes into --out-dir; do not also give TEXT or -o")
        if args.out_dir is None:
            raise EdgeTTSError("--text-file needs --out-dir")
        try:
            lines = Path(args.text_file).read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as err:
            raise EdgeTTSError(f"cannot read {args.text_file}: {err}") from err
        out_dir = Path(args.out_dir)
        try:
            out_dir.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise EdgeTTSError(f"cannot create {out_dir}: {err.strerror or err}") from err
        voice = _load(args)
        config = _synthesis_config(args)
        written = 0
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue  # files are named after line numbers, so blank lines leave a gap
            path = out_dir / f"{number:04d}.wav"
            try:
                seconds = write_chunks(path, voice.synthesize(line, config))
            except EdgeTTSError as err:
                raise EdgeTTSError(f"{args.text_file}:{number}: {err}") from err
            written += 1
            print(f"{path}\t{seconds:.2f} s")
        if not written:
            raise EdgeTTSError(f"{args.text_file} has no text lines")
        return 0
    if args.output is None:
        raise EdgeTTSError("give -o OUT.wav (or --text-file F --out-dir D)")
    text = _text_arg(args)
    voice = _load(args)
    started = time.perf_counter()
    seconds = write_chunks(Path(args.output), voice.synthesize(text, _synthesis_config(args)))
    elapsed = time.perf_counter() - started
    print(f"{args.output}\t{seconds:.2f} s of audio in {elapsed:.2f} s (RTF {elapsed / seconds:.3f})")
    return 0


def cmd_phonemes(args: argparse.Namespace) -> int:
    from edgetts.text.prepare import TextOptions
    from edgetts.voice.catalog import resolve_voice
    from edgetts.voice.piper.frontend import PiperFrontend
    from edgetts.voice.piper.model_config import PiperVoiceConfig

    info = resolve_voice(args.voice)
    if info.family != "piper":
        raise VoiceError(f"{info.name} is not a phoneme-based (Piper) voice")
    config = PiperVoiceConfig.from_file(info.path.with_name(info.path.name + ".json"))
    frontend = PiperFrontend(config, TextOptions(normalize=not args.no_normalize))
    sentences = frontend.phonemize(args.text)
    if not sentences:
        raise EdgeTTSError(f"nothing speakable in {args.text!r}")
    for phonemes in sentences:
        if args.ids:
            print(json.dumps(frontend.phoneme_ids(phonemes)))
        else:
            print("".join(phonemes))
    return 0


def cmd_say(args: argparse.Namespace) -> int:
    from edgetts.audio.say import play_chunks
    from edgetts.daemon.playout.sound_card import OutputStream

    text = _text_arg(args)
    voice = _load(args)
    play_chunks(voice.synthesize(text, _synthesis_config(args)), OutputStream, device=args.device)
    return 0


# -- parser --------------------------------------------------------------------
Handler = Callable[[argparse.Namespace], int]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="edgetts", description="Offline announcer: neural speech on the CPU, MQTT in, speakers out."
    )
    parser.add_argument("--version", action="version", version=f"edgetts {__version__}")
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more log output (-vv: debug)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    synth = sub.add_parser("synth", help="synthesize text into a 16-bit mono WAV file")
    synth.add_argument("text", nargs="?", help="text to speak")
    synth.add_argument("-o", "--output", help="WAV file to write")
    synth.add_argument("--text-file", help="synthesize each line of this file ...")
    synth.add_argument("--out-dir", help="... into this directory as 0001.wav, 0002.wav, ... (by line number)")
    _add_synthesis_args(synth)
    synth.set_defaults(func=cmd_synth)

    phon = sub.add_parser("phonemes", help="print the phonemes (or model ids) of each sentence")
    phon.add_argument("text")
    phon.add_argument("--ids", action="store_true", help="print model input ids as one JSON array per sentence")
    phon.add_argument("--voice", default="default", help="a Piper voice (its config decides the ids)")
    phon.add_argument("--no-normalize", action="store_true", help="skip the text normaliser")
    phon.set_defaults(func=cmd_phonemes)

    say = sub.add_parser("say", help="speak text on the default (or given) ALSA device")
    say.add_argument("text", nargs="?")
    say.add_argument("--device", default=None, help="PortAudio/ALSA output device name or index")
    _add_synthesis_args(say)
    say.set_defaults(func=cmd_say)

    for register in _plugin_registrars():
        register(sub)
    return parser


def _plugin_registrars() -> list[Callable[[argparse._SubParsersAction], None]]:
    """Verbs defined next to the code they drive (text tools, the daemon)."""
    from edgetts.cli import announce, daemon, export_rknn, quantize, render, schedule, text, voices, wyoming

    return [
        voices.register,
        text.register,
        daemon.register,
        announce.register,
        render.register,
        quantize.register,
        export_rknn.register,
        wyoming.register,
        schedule.register,
    ]


def _configure_logging(verbosity: int) -> None:
    level = logging.WARNING if verbosity == 0 else logging.INFO if verbosity == 1 else logging.DEBUG
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    func: Handler | None = getattr(args, "func", None)
    if func is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    if not logging.getLogger().handlers:
        _configure_logging(args.verbose)
    try:
        return func(args)
    except EdgeTTSError as err:
        _LOGGER.debug("failed", exc_info=True)
        print(f"edgetts: error: {err}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("edgetts: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return EXIT_ERROR
