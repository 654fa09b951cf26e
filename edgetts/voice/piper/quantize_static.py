"""Static int8 and fp16 variants of a Piper voice (``edgetts quantize --static`` / ``--fp16``).

Static int8 as the systems edgetts grew from do it (docs/voices.md): QDQ, int8 weights per
output channel and symmetric (QLinearConv's fast path wants zero points of 0), activations with
fixed scales calibrated on the voice's own activations, so onnxruntime fuses each
DequantizeLinear -> Conv -> QuantizeLinear into a QLinearConv.  Activations uint8 on x86 (it
fuses signed-activation QDQ only where ``QDQIsInt8Allowed()``, not on x86), int8 on aarch64.
Only Conv: there is no int8 ConvTranspose (in Q/DQ it would run dequantize -> fp32 -> quantize).

Float stays: everything the durations are computed from (ancestors of Ceil/Round: the text
encoder and duration predictor), so a variant speaks with fp32's exact timing and compares
sample-aligned; ``keep_float`` (names or globs); and what the sensitivity pass rejects: each
group of Convs (a decoder resblock, a flow step) is quantized alone and its log-mel distance to
fp32, same seed, measured; the least sensitive are taken while the whole stays within
``budget_db`` (measured).  On the joe voice the 128-channel decoder stage and the flow cost a
fraction of a dB each; the 32-channel stage and the last conv add a high-frequency noise floor
(3.5-9 dB each).  Every node left float reads float tensors.  Random nodes are untouched (seeded
at load, :mod:`.seeded_noise`) and Q/DQ are time-local, so the variant streams
(:mod:`.graph_split`).  The choice is kept in the model's metadata (``edgetts-quantize``).

fp16 (:func:`convert_fp16`): the same Convs get float16 weights and compute between Casts;
ConvTranspose, LeakyRelu and the rest stay float32 (onnxruntime's CPU provider has fp16 Conv on
aarch64 with fp16 arithmetic, e.g. Cortex-A76; elsewhere it casts back to fp32).
"""

from __future__ import annotations

import contextlib
import fnmatch
import functools
import io
import json
import logging
import math
import tempfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from edgetts.errors import VoiceError
from edgetts.text.prepare import TextOptions
from edgetts.voice.onnx_session import RuntimeOptions, create_session
from edgetts.voice.piper.check_feeds import model_feeds
from edgetts.voice.piper.frontend import PiperFrontend
from edgetts.voice.piper.int8_variant import REPORT_KEY, default_activations
from edgetts.voice.piper.logmel import logmel_distance_db
from edgetts.voice.piper.model_config import PiperVoiceConfig
from edgetts.voice.piper.seeded_noise import add_seeded_noise, seed_feed

_LOGGER = logging.getLogger(__name__)

CALIBRATION_SENTENCES = (
    "Good evening. The gallery shuts in twenty minutes; please make your way to the exit.",
    "Passengers for the 10:15 service to Glasgow Central, please go to platform 3.",
    "Would Mrs Okafor please come to the reception desk on level two?",
    "Due to high winds, the upper deck is closed until further notice!",
    "The lift on the north side is out of order. Please use the stairs or the ramp by the cafe.",
    "Flight KL 1092 to Amsterdam is delayed by about forty minutes.",
    "Customers are reminded that the car park barrier closes at midnight.",
    "This bus terminates at Riverside Shopping Centre. Thank you for travelling with us.",
    "A sprinkler test will take place at half past nine. No action is needed.",
    "Could the parent of Sophie, aged six, please come to the information point.",
)
"""Announcement-like sentences the activations are calibrated on (the project corpus is not
shipped with the package; these are not its lines, so the corpus can judge the variant)."""

METADATA_KEY = "edgetts-quantize"
DEFAULT_BUDGET_DB = 1.0
"""Largest log-mel distance to fp32 (same seed) the sensitivity pass accepts on its check
sentences, in dB: below tools/bench_quant.py's gate (1.5 dB over the corpus), itself about half
of what another noise seed changes (fp32, same durations: ~2.7 dB)."""

PERCENTILE = 99.999
"""Calibration keeps this percentile of each activation (sherpa-onnx's vocoder choice): a rare peak
would otherwise widen the step of every sample (measured here: 2 dB less noise than min-max)."""

CHECK_SENTENCES = 3
"""Sentences of the calibration set each choice is heard on (with other seeds)."""

_DURATION_OPS = ("Ceil", "Round")
_FP16_OPS = frozenset({"Conv"})
"""Ops given float16: no fp16 ConvTranspose on the CPU provider, LeakyRelu's not in every release."""


@dataclass(frozen=True)
class VariantReport:
    """What was made: ``converted`` (int8 or fp16) and ``kept_float`` (candidate Convs left
    float32, by request or by the sensitivity pass), by node name."""

    output: Path
    mode: str
    """``static`` or ``fp16``."""
    converted: tuple[str, ...]
    kept_float: tuple[str, ...]
    distance_db: float
    """Mean log-mel distance to fp32 on the check sentences, same seed (:func:`logmel_distance_db`)."""
    activations: str = ""
    """``uint8`` or ``int8`` (static only)."""
    sensitivity: dict[str, float] = field(default_factory=dict)
    """dB per group of Convs quantized alone (empty when the pass was skipped)."""
    speed_ratio: float | None = None
    """The variant's synthesis time over fp32's on the check sentences, where it was made (static
    only): what the daemon scales the voice's measured speed by before the variant has spoken."""

    def metadata(self) -> str:
        return json.dumps({k: v for k, v in asdict(self).items() if k != "output"})


# -- which nodes ------------------------------------------------------------------------------
def duration_nodes(model: Any) -> set[str]:
    """Names of the nodes the durations are computed from (ancestors of Ceil/Round, themselves
    included): the text encoder and the duration predictor of a VITS graph."""
    producer = {out: node for node in model.graph.node for out in node.output}
    todo = [out for node in model.graph.node if node.op_type in _DURATION_OPS for out in node.output]
    seen: set[str] = set()
    names: set[str] = set()
    while todo:
        tensor = todo.pop()
        if tensor in seen or tensor not in producer:
            continue
        seen.add(tensor)
        node = producer[tensor]
        names.add(node.name)
        todo.extend(x for x in node.input if x)
    return names


def matching_nodes(model: Any, patterns: Iterable[str]) -> set[str]:
    """Node names matching any of ``patterns`` (a name or a glob: ``/dec/resblocks.[6-8]/*``);
    :class:`VoiceError` for a pattern that matches no node of the graph."""
    names = [node.name for node in model.graph.node]
    matched: set[str] = set()
    for pattern in patterns:
        found = {name for name in names if name == pattern or fnmatch.fnmatchcase(name, pattern)}
        if not found:
            raise VoiceError(f"{pattern!r} (to keep float) names no node of the graph")
        matched |= found
    return matched


def candidate_convs(model: Any, keep_float: Iterable[str] = ()) -> tuple[list[str], list[str]]:
    """(Convs a variant may convert, Convs kept float by ``keep_float``), in graph order: every
    named Conv outside :func:`duration_nodes`."""
    front = duration_nodes(model)
    kept = matching_nodes(model, keep_float)
    convs = [n.name for n in model.graph.node if n.op_type == "Conv" and n.name and n.name not in front]
    return [c for c in convs if c not in kept], [c for c in convs if c in kept]


def layer_groups(names: Iterable[str]) -> dict[str, list[str]]:
    """Nodes by the exporter's module path, two levels deep (``/dec/resblocks.3``, ``/flow/flows.2``):
    the unit the sensitivity pass measures; a name without a path is a group of its own."""
    groups: dict[str, list[str]] = {}
    for name in names:
        parts = name.split("/")
        key = "/".join(parts[:3]) if name.startswith("/") and len(parts) > 3 else name
        groups.setdefault(key, []).append(name)
    return groups


# -- the voice's own activations --------------------------------------------------------------
class _Voice:
    """The source voice seeded (:mod:`.seeded_noise`), its sentences' inputs and fp32 audio."""

    def __init__(self, source: Path, sentences: Sequence[str], checks: int) -> None:
        import onnx

        self.source = source
        config = PiperVoiceConfig.from_file(source.with_name(source.name + ".json"))
        self.rate = config.sample_rate
        frontend = PiperFrontend(config, TextOptions())
        scales = np.array([config.noise_scale, config.length_scale, config.noise_w], dtype=np.float32)
        speaker = config.default_speaker_id if config.num_speakers > 1 else None
        ids = [i for text in sentences for i in frontend.sentence_ids(text)]
        if not ids:
            raise VoiceError("no calibration sentence could be spoken")
        self.model = onnx.load(str(source))
        seeded = self._seeded(self.model)
        # Fixed seeds: the same variant from the same voice on every run (noise as the voice speaks).
        self.calibration = [model_feeds(x, scales, speaker, seed_feed(n)) for n, x in enumerate(ids)]
        self.checks = [model_feeds(x, scales, speaker, seed_feed(1000 + n)) for n, x in enumerate(ids[:checks])]
        self.seeded_bytes = seeded.SerializeToString()

    @functools.cached_property
    def reference(self) -> list[np.ndarray]:  # fp32's audio of the check sentences
        return self.audio(self.seeded_bytes)

    @staticmethod
    def _seeded(model: Any) -> Any:
        import onnx

        copy = onnx.ModelProto()
        copy.CopyFrom(model)
        if not add_seeded_noise(copy):
            raise VoiceError("the voice draws no noise: not a Piper VITS voice")
        return copy

    def audio(self, model_bytes: bytes) -> list[np.ndarray]:
        session = create_session(model_bytes, RuntimeOptions())
        return [np.asarray(session.run(None, feeds)[0], dtype=np.float32).reshape(-1) for feeds in self.checks]

    def speed_ratio(self, model: Any) -> float:
        """``model``'s synthesis time over fp32's on the check sentences (each session's best of
        two passes, after a warm-up run), on this machine's default threads."""
        import time

        def best(model_bytes: bytes) -> float:
            session = create_session(model_bytes, RuntimeOptions())
            session.run(None, self.checks[0])
            passes = []
            for _ in range(2):
                start = time.perf_counter()
                for feeds in self.checks:
                    session.run(None, feeds)
                passes.append(time.perf_counter() - start)
            return min(passes)

        return best(self._seeded(model).SerializeToString()) / best(self.seeded_bytes)

    def distance(self, model: Any) -> float:
        """Mean log-mel distance of ``model`` (unseeded, as written) to fp32 on the check sentences."""
        heard = self.audio(self._seeded(model).SerializeToString())
        if any(a.size != b.size for a, b in zip(self.reference, heard)):
            raise VoiceError("the variant's durations differ from the voice's: its front is not float")
        return float(np.mean([logmel_distance_db(a, b, self.rate) for a, b in zip(self.reference, heard)]))


def _calibrate(voice: _Voice, work: Path) -> Path:
    """Activation ranges of every Conv, as onnxruntime's calibration cache (a JSON file)."""
    from onnxruntime.quantization import CalibrationDataReader, CalibrationMethod
    from onnxruntime.quantization.calibrate import create_calibrator, save_tensors_data

    class _One(CalibrationDataReader):  # type: ignore[misc]
        def __init__(self, feeds: dict[str, np.ndarray]) -> None:
            self._feeds: dict[str, np.ndarray] | None = feeds

        def get_next(self) -> dict[str, np.ndarray] | None:
            feeds, self._feeds = self._feeds, None
            return feeds

    seeded = work / "seeded.onnx"
    seeded.write_bytes(voice.seeded_bytes)  # the calibrator reads a file
    calibrator = create_calibrator(
        seeded,
        ["Conv"],
        augmented_model_path=str(work / "augmented.onnx"),
        calibrate_method=CalibrationMethod.Percentile,
        extra_options={"percentile": PERCENTILE},
    )
    # One sentence per call: the histograms merge across calls, and only one sentence's
    # activations are held at a time (all of them at once: gigabytes).
    with _quiet():
        for feeds in voice.calibration:
            calibrator.collect_data(_One(feeds))
        ranges = calibrator.compute_data()
    cache = work / "calibration.json"
    save_tensors_data(ranges, cache)
    seeded.unlink()
    return cache


def _quantized(voice: _Voice, nodes: Sequence[str], cache: Path, activations: str, work: Path) -> Any:
    """The source with ``nodes`` (Convs) in static int8, every other node reading float."""
    import onnx
    from onnxruntime.quantization import CalibrationMethod, QuantFormat, QuantType, quantize_static

    target = work / "variant.onnx"
    with _quiet():
        quantize_static(
            str(voice.source),
            str(target),
            None,
            quant_format=QuantFormat.QDQ,
            op_types_to_quantize=["Conv"],
            per_channel=True,
            activation_type=QuantType.QInt8 if activations == "int8" else QuantType.QUInt8,
            weight_type=QuantType.QInt8,
            nodes_to_quantize=list(nodes),
            calibrate_method=CalibrationMethod.Percentile,
            calibration_cache_path=str(cache),
            extra_options={"WeightSymmetric": True},
        )
    model = onnx.load(str(target))
    target.unlink()
    _float_readers(model, set(nodes))
    return model


def _float_readers(model: Any, converted: set[str]) -> None:
    """Give every node not ``converted`` the float tensor where the quantizer gave it the Q/DQ copy
    of a quantized Conv's input (it rewires every reader: the duration predictor reads the encoder's
    output, and the exporter shares one LeakyRelu among a decoder stage's resblocks).  A converted
    Conv's own output stays Q/DQ for all its readers: that is what fuses it into a QLinearConv."""
    producer = {out: node for node in model.graph.node for out in node.output}
    source: dict[str, str] = {}
    for node in model.graph.node:
        q = producer.get(node.input[0]) if node.op_type == "DequantizeLinear" else None
        if q is not None and q.op_type == "QuantizeLinear":
            origin = producer.get(q.input[0])
            if origin is None or origin.name not in converted:
                source[node.output[0]] = q.input[0]
    for node in model.graph.node:
        if node.name not in converted and node.op_type not in ("QuantizeLinear", "DequantizeLinear"):
            for i, name in enumerate(node.input):
                node.input[i] = source.get(name, name)


# -- choosing ---------------------------------------------------------------------------------
Progress = Callable[[str], None]
"""Told one line per step of a long run (the sensitivity pass takes minutes)."""


def choose_groups(
    groups: dict[str, list[str]], distance: Callable[[list[str]], float], budget_db: float, progress: Progress
) -> tuple[list[str], dict[str, float]]:
    """(groups to quantize, each group's distance alone).  Least sensitive first while the
    root-sum-square of their distances stays within ``budget_db`` (it predicted a set's measured
    distance within ~0.2 dB here); the set is then measured and its most sensitive group dropped
    until the measurement is within the budget."""
    alone: dict[str, float] = {}
    for group, nodes in groups.items():
        alone[group] = distance(nodes)
        progress(f"{group}: {alone[group]:.2f} dB alone")
    chosen: list[str] = []
    total = 0.0
    for group in sorted(alone, key=lambda g: alone[g]):
        if math.hypot(total, alone[group]) <= budget_db:
            chosen.append(group)
            total = math.hypot(total, alone[group])
    while chosen:
        measured = distance([n for g in chosen for n in groups[g]])
        progress(f"{len(chosen)} groups together: {measured:.2f} dB")
        if measured <= budget_db:
            break
        chosen.pop()
    return chosen, alone


def quantize_static_voice(
    source: Path,
    output: Path,
    *,
    keep_float: Sequence[str] = (),
    sentences: Sequence[str] = CALIBRATION_SENTENCES,
    choose: bool = True,
    budget_db: float = DEFAULT_BUDGET_DB,
    activations: str | None = None,
    progress: Progress | None = None,
) -> VariantReport:
    """Write the static int8 variant of ``source`` to ``output`` (and its ``.onnx.json`` beside it).

    ``choose``: run the sensitivity pass (else every candidate Conv not in ``keep_float`` is
    quantized); ``activations``: ``uint8`` | ``int8`` (None: :func:`default_activations`).
    Raises :class:`VoiceError` (one line) for anything that stops it."""
    activations = activations or default_activations()
    if activations not in ("uint8", "int8"):
        raise VoiceError(f"activations must be uint8 or int8, not {activations!r}")
    tell = progress or (lambda line: _LOGGER.debug("%s", line))
    with _errors(source):
        voice = _Voice(source, sentences, CHECK_SENTENCES)
        candidates, kept = candidate_convs(voice.model, keep_float)
        if not candidates:
            raise VoiceError(f"{source}: no Conv left to quantize")
        with tempfile.TemporaryDirectory(prefix="edgetts-quantize-") as tmp:
            tell(f"calibrating on {len(voice.calibration)} sentences")
            cache = _calibrate(voice, Path(tmp))

            def quantized(nodes: Sequence[str]) -> Any:
                return _quantized(voice, nodes, cache, activations, Path(tmp))

            converted, sensitivity = list(candidates), dict[str, float]()
            if choose:
                groups = layer_groups(candidates)
                chosen, sensitivity = choose_groups(groups, lambda ns: voice.distance(quantized(ns)), budget_db, tell)
                if not chosen:
                    raise VoiceError(f"no layer of {source} can be int8 within {budget_db} dB of fp32")
                converted = [n for g in chosen for n in groups[g]]
            model = quantized(converted)
        left = (*kept, *(n for n in candidates if n not in converted))
        distance = voice.distance(model)
        tell("timing the variant against the voice")
        ratio = voice.speed_ratio(model)
        report = VariantReport(output, "static", tuple(converted), left, distance, activations, sensitivity, ratio)
        _write(model, report, source)
    return report


# -- fp16 -------------------------------------------------------------------------------------
def _to_fp16(model: Any, names: set[str]) -> None:
    """Give the nodes ``names`` float16 weights and compute, with Casts at their edges, in place."""
    from onnx import TensorProto, helper, numpy_helper

    graph = model.graph
    weights = {i.name: i for i in graph.initializer}
    half: dict[str, str] = {}  # a float32 tensor -> its float16 form
    nodes: list[Any] = []
    for node in graph.node:
        if node.name not in names or node.op_type not in _FP16_OPS:
            nodes.append(node)
            continue
        for i, name in enumerate(node.input):
            if name and name not in half:
                half[name] = f"{name}/fp16"
                if name in weights:
                    value = numpy_helper.to_array(weights[name]).astype(np.float16)
                    graph.initializer.append(numpy_helper.from_array(value, half[name]))
                else:
                    nodes.append(
                        helper.make_node("Cast", [name], [half[name]], f"{name}/to_fp16", to=TensorProto.FLOAT16)
                    )
            if name:
                node.input[i] = half[name]
        out = node.output[0]
        node.output[0] = f"{out}/fp16"
        nodes += [node, helper.make_node("Cast", [node.output[0]], [out], f"{out}/to_fp32", to=TensorProto.FLOAT)]
    del graph.node[:]
    graph.node.extend(nodes)
    used = {x for node in graph.node for x in node.input}
    for unused in [i for i in graph.initializer if i.name not in used]:  # the converted Convs' fp32 weights
        graph.initializer.remove(unused)


def convert_fp16(source: Path, output: Path, *, keep_float: Sequence[str] = ()) -> VariantReport:
    """Write the fp16 variant of ``source``: every Conv after the durations not in ``keep_float``
    in float16 (onnx's converter would also round the duration predictor's tensors through fp16,
    and wraps every float32 node in Casts: thousands of them here)."""
    import onnx

    with _errors(source):
        voice = _Voice(source, CALIBRATION_SENTENCES[:CHECK_SENTENCES], CHECK_SENTENCES)
        candidates, kept = candidate_convs(voice.model, keep_float)
        if not candidates:
            raise VoiceError(f"{source}: no Conv left to convert")
        model = onnx.ModelProto()
        model.CopyFrom(voice.model)
        _to_fp16(model, set(candidates))
        report = VariantReport(output, "fp16", tuple(candidates), tuple(kept), voice.distance(model))
        _write(model, report, source)
    return report


# -- writing ----------------------------------------------------------------------------------
@contextlib.contextmanager
def _errors(source: Path) -> Any:
    """onnx and onnxruntime raise many types for a graph they cannot handle: one VoiceError line."""
    try:
        yield
    except VoiceError:
        raise
    except Exception as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise VoiceError(f"cannot make a variant of {source}: {first}") from err


@contextlib.contextmanager
def _quiet() -> Any:
    """onnxruntime's quantizer warns per tensor on the root logger and prints its progress."""
    logging.disable(logging.WARNING)
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            yield
    finally:
        logging.disable(logging.NOTSET)


def _write(model: Any, report: VariantReport, source: Path) -> None:
    """``report.output`` and its config, each renamed into place whole."""
    import onnx

    onnx.helper.set_model_props(model, {METADATA_KEY: report.metadata()})
    output = report.output
    output.parent.mkdir(parents=True, exist_ok=True)
    # Written beside the target and renamed: a half-written voice is never found by `edgetts voices`.
    with tempfile.TemporaryDirectory(dir=output.parent, prefix=".edgetts-quantize-") as tmp:
        staged = Path(tmp) / output.name
        onnx.save(model, str(staged))
        config = Path(tmp) / (output.name + ".json")
        # The voice's config, and what was measured (edgetts.voice.piper.int8_variant reads it
        # there: cheaper than the model's metadata, which means parsing the whole model).
        voice_config = json.loads(source.with_name(source.name + ".json").read_text(encoding="utf-8"))
        voice_config[REPORT_KEY] = json.loads(report.metadata())
        config.write_text(json.dumps(voice_config, ensure_ascii=False, indent=2), encoding="utf-8")
        config.replace(output.with_name(output.name + ".json"))
        staged.replace(output)


def variant_metadata(path: Path) -> dict[str, Any] | None:
    """What :func:`quantize_static_voice` or :func:`convert_fp16` recorded in ``path`` (None: nothing)."""
    import onnx

    recorded = {e.key: e.value for e in onnx.load(str(path), load_external_data=False).metadata_props}
    return dict(json.loads(recorded[METADATA_KEY])) if METADATA_KEY in recorded else None
