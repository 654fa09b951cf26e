"""The NPU behind a streamed voice (issue 41) with a stand-in runtime: windows padded to the converted
sizes and trimmed, through the product's own streaming path; every refusal with its reason while the
CPU speaks; a failing inference; the daemon's `degraded: npu`.  Rockchip's converter and simulator
behind the same adapter: tests/voice/test_npu_sim.py (scripts/test.sh --rknn)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from edgetts.config import load_config
from edgetts.config.errors import ConfigError
from edgetts.daemon.assets import npu_problem
from edgetts.daemon.health import Health
from edgetts.engine import SynthesisConfig
from edgetts.voice.accel.npu import NpuPart, attach_npu, runtime_reason
from edgetts.voice.catalog import default_voice_path
from edgetts.voice.model_cache import default_cache_dir
from edgetts.voice.onnx_session import RuntimeOptions, create_session
from edgetts.voice.piper.voice import PiperVoice
from edgetts.voice.piper.windows import StreamingOptions

from support.alsa import Capture
from support.broker import Broker
from support.daemon import DaemonProcess, config_yaml
from support.paths import ROOT
from support.probe import Probe
from tools.rknn_sim import write_export

WINDOWS = {"flow": (24, 112, 240, 336), "tail": (10, 44, 140)}
SENTENCE = "The next train to arrive at platform two is the service to York, calling at Doncaster."
CONFIG = SynthesisConfig(seed=7)


def _voice(**streaming: Any) -> PiperVoice:
    return PiperVoice.load(
        default_voice_path(),
        name="default",
        runtime=RuntimeOptions(threads=1),
        cache_dir=default_cache_dir(),
        streaming=StreamingOptions(**streaming),
    )


class OrtRuntime:
    """RKNNLite's calls over onnxruntime: a "converted" file names its part and window, and inference
    runs that part on the inputs as given (padded by the adapter to the window, as the NPU's fixed-size
    model takes them).  ``fail_at``: the inference (1-based, over all runtimes) that returns None."""

    def __init__(self, sessions: dict[str, Any], log: list[tuple[str, int, list[int]]], fail_at: int = 0) -> None:
        self.sessions, self.log, self.fail_at = sessions, log, fail_at
        self.part, self.frames, self.core_mask = "", 0, -1

    def load_rknn(self, path: str) -> int:
        spec = json.loads(Path(path).read_bytes())
        self.part, self.frames = spec["part"], int(spec["frames"])
        return 0

    def init_runtime(self, core_mask: int = 0) -> int:
        self.core_mask = core_mask
        return 0

    def inference(self, inputs: list[np.ndarray]) -> list[np.ndarray] | None:
        self.log.append((self.part, self.frames, [a.shape[-1] for a in inputs]))
        if len(self.log) == self.fail_at:
            return None
        session = self.sessions[self.part]
        names = [i.name for i in session.get_inputs()]
        return list(session.run(None, dict(zip(names, inputs))))

    def release(self) -> None:
        pass


@pytest.fixture(scope="module")
def parts() -> dict[str, Any]:
    """The split's flow and decoder on the CPU (what the stand-in runtime runs), and their inputs."""
    voice = _voice()
    assert voice.split is not None and voice.split.flow is not None
    sessions = {
        "flow": create_session(voice.split.flow, RuntimeOptions(threads=1)),
        "tail": create_session(voice.split.tail, RuntimeOptions(threads=1)),
    }
    return {"sessions": sessions, "inputs": {p: tuple(i.name for i in s.get_inputs()) for p, s in sessions.items()}}


def _export(directory: Path, parts: dict[str, Any], *, target: str = "rk3588", model: Path | None = None) -> Path:
    models = {
        part: (parts["inputs"][part], {n: json.dumps({"part": part, "frames": n}).encode() for n in sizes})
        for part, sizes in WINDOWS.items()
    }
    write_export(directory, model or default_voice_path(), "default", models, target=target)
    return directory


def _sdr_db(reference: np.ndarray, other: np.ndarray) -> float:
    error = float(np.sum((reference.astype(np.float64) - other) ** 2))
    return 10.0 * float(np.log10(float(np.sum(reference.astype(np.float64) ** 2)) / max(error, 1e-20)))


def _stream(voice: PiperVoice, text: str = SENTENCE) -> np.ndarray:
    ids = voice.frontend.sentence_ids(text)[0]
    return np.concatenate([piece for piece, _last in voice.stream(ids, CONFIG)])


def test_windows_run_padded_on_the_npu_and_sound_like_the_cpu(parts: dict[str, Any], tmp_path: Path) -> None:
    log: list[tuple[str, int, list[int]]] = []
    made: list[OrtRuntime] = []

    def factory() -> OrtRuntime:
        made.append(OrtRuntime(parts["sessions"], log))
        return made[-1]

    npu_voice = _voice()
    export = _export(tmp_path / "voices" / "default.rknn", parts)
    npu = attach_npu(npu_voice, [export.parent], core_mask=3, factory=factory, soc="rk3588")
    assert npu.problem is None and npu.windows == {p: list(s) for p, s in WINDOWS.items()}
    assert npu_voice.accelerator is npu
    assert len(made) == 7 and {r.core_mask for r in made} == {3}
    cpu = _stream(_voice())
    pieces = list(npu_voice.stream(npu_voice.frontend.sentence_ids(SENTENCE)[0], CONFIG))
    heard = np.concatenate([piece for piece, _last in pieces])
    assert heard.size == cpu.size
    # The flow masks its padding (exact); the decoder sees zeros after a window where the CPU's run
    # ended: that changes only the context frames each window drops, and the sentence's last ones.
    assert _sdr_db(cpu, heard) > 35.0, _sdr_db(cpu, heard)
    runs = {part: [(size, given) for p, size, given in log if p == part] for part in WINDOWS}
    assert runs["flow"]
    for part, seen in runs.items():
        for size, given in seen:
            assert size in WINDOWS[part] and all(g == size for g in given), (part, size, given)
    assert len(runs["tail"]) == len(pieces)  # every window of the sentence ran on the NPU


def test_the_flow_is_exact_through_the_padding(parts: dict[str, Any], tmp_path: Path) -> None:
    voice = _voice()
    attach_npu(
        voice,
        [_export(tmp_path / "default.rknn", parts).parent],
        factory=lambda: OrtRuntime(parts["sessions"], []),
        soc=None,
    )
    ids = voice.frontend.sentence_ids(SENTENCE)[0]
    assert voice.split is not None
    front = voice.front(ids, CONFIG, list(voice.split.front_outputs))
    feeds = {name: np.ascontiguousarray(front[name][..., 5:35]) for name in voice.split.flow_inputs}  # 30 -> 112
    run = voice.flow_runner()
    assert run is not None
    on_npu = run(feeds)
    on_cpu = parts["sessions"]["flow"].run(None, feeds)[0]
    assert on_npu.shape == on_cpu.shape == (1, on_cpu.shape[1], 30)
    np.testing.assert_allclose(on_npu, on_cpu, atol=1e-4)


def test_the_speed_model_learns_npu_runs_not_the_cpu_runs_of_shapes_it_lacks(
    parts: dict[str, Any], tmp_path: Path
) -> None:
    log: list[tuple[str, int, list[int]]] = []
    voice = _voice()
    attach_npu(
        voice, [_export(tmp_path / "default.rknn", parts).parent], factory=lambda: OrtRuntime(parts["sessions"], log)
    )
    before = voice.speed.runs
    _stream(voice)
    assert voice.speed.runs - before == 1 + len(log)  # the front, and each NPU run
    ids = voice.frontend.sentence_ids(SENTENCE)[0]
    frames = voice.latent(ids, CONFIG).frames
    assert frames > 140
    before, npu_runs = voice.speed.runs, len(log)
    voice.infer(ids, CONFIG)  # whole sentence: the decoder's run is larger than every converted window
    assert len(log) - npu_runs == (1 if frames <= 336 else 0)  # the flow's, if it fits
    assert voice.speed.runs - before == 1 + (len(log) - npu_runs)  # its front (and flow on the NPU), not the CPU's


def _refused(voice: PiperVoice, problem: str | None, needle: str) -> None:
    assert problem is not None and needle in problem, problem
    assert voice.accelerator is not None and voice.accelerator.problem == problem
    assert npu_problem({"hall": voice}) == f"voice hall: {problem}"
    # the CPU speaks, exactly as a voice without the NPU
    assert np.array_equal(_stream(voice, "Mind the gap."), _stream(_voice(), "Mind the gap."))


def test_refusals_say_why_and_the_cpu_speaks(parts: dict[str, Any], tmp_path: Path, capfd: Any) -> None:
    def factory() -> OrtRuntime:
        return OrtRuntime(parts["sessions"], [])

    voice = _voice()
    _refused(voice, attach_npu(voice, [tmp_path / "none"], factory=factory).problem, "no NPU models for voice default")

    other = _export(tmp_path / "a" / "default.rknn", parts, target="rk3566").parent
    voice = _voice()
    problem = attach_npu(voice, [other], factory=factory, soc="rk3588").problem
    _refused(voice, problem, "converted for rk3566, this board is rk3588 (edgetts export-rknn --target rk3588)")

    another = tmp_path / "another.onnx"
    another.write_bytes(b"not the voice")
    mine = _export(tmp_path / "b" / "default.rknn", parts, model=another).parent
    voice = _voice()
    _refused(voice, attach_npu(voice, [mine], factory=factory).problem, "converted from another voice file")

    cut = _export(tmp_path / "c" / "default.rknn", parts)
    (cut / "tail-44.rknn").write_bytes((cut / "tail-44.rknn").read_bytes()[:5])
    voice = _voice()
    _refused(voice, attach_npu(voice, [cut.parent], factory=factory).problem, "tail-44.rknn has 5 bytes")

    whole = _export(tmp_path / "d" / "default.rknn", parts).parent
    voice = _voice()  # the default runtime, RKNNLite: not installed in the test venv
    _refused(voice, attach_npu(voice, [whole]).problem, "rknn-toolkit-lite2 is not installed")

    class NoDriver(OrtRuntime):
        def init_runtime(self, core_mask: int = 0) -> int:
            print("E RKNN: [08:01:02.003] failed to open rknpu module, need to insmod rknpu dirver!", file=sys.stderr)
            print("E RKNN: [08:01:02.004] failed to open rknn device!", file=sys.stderr)
            print("E Catch exception when init runtime!")
            print("Exception: RKNN init failed. error code: RKNN_ERR_FAIL")
            return -1

    voice = _voice()
    problem = attach_npu(voice, [whole], factory=lambda: NoDriver(parts["sessions"], [])).problem
    _refused(voice, problem, "the NPU runtime failed: ")
    assert "need to insmod rknpu dirver!" in str(problem) and "RKNN_ERR_FAIL" in str(problem)
    assert "failed to open rknpu module" in capfd.readouterr().err  # what the runtime said is still logged


def test_a_voice_that_is_not_streamed_keeps_the_cpu_with_the_reason(parts: dict[str, Any], tmp_path: Path) -> None:
    voice = PiperVoice.load(default_voice_path(), runtime=RuntimeOptions(threads=1), cache_dir=default_cache_dir())
    npu = attach_npu(
        voice, [_export(tmp_path / "en_US-joe-medium.rknn", parts).parent], factory=lambda: OrtRuntime({}, [])
    )
    assert npu.problem is not None and "not streamed (voice.streaming)" in npu.problem


def test_a_failing_inference_moves_to_the_cpu_and_says_why(parts: dict[str, Any], tmp_path: Path) -> None:
    log: list[tuple[str, int, list[int]]] = []
    voice = _voice()
    npu = attach_npu(
        voice,
        [_export(tmp_path / "default.rknn", parts).parent],
        factory=lambda: OrtRuntime(parts["sessions"], log, fail_at=3),
    )
    heard = _stream(voice)
    assert heard.size == _stream(_voice()).size  # nothing lost: the failed window ran on the CPU
    assert npu.problem is not None and npu.problem.startswith("NPU inference failed, speaking on the CPU: ")
    assert "inference returned None" in npu.problem
    assert len(log) == 3  # nothing more was sent to the NPU
    assert npu_problem({"default": voice}) == f"voice default: {npu.problem}"


def test_an_interrupt_ends_the_synthesis_after_an_npu_run(parts: dict[str, Any], tmp_path: Path) -> None:
    voice = _voice()
    npu = attach_npu(
        voice, [_export(tmp_path / "default.rknn", parts).parent], factory=lambda: OrtRuntime(parts["sessions"], [])
    )
    part = npu.wrap("tail", parts["sessions"]["tail"])
    assert isinstance(part, NpuPart)
    z = np.zeros((1, 192, 20), dtype=np.float32)
    name = parts["inputs"]["tail"][0]
    assert part.run(None, {name: z})[0].shape[-1] == 20 * 256
    with pytest.raises(RuntimeError, match="terminate"):
        part.run(None, {name: z}, SimpleNamespace(terminate=True))


def test_the_runtime_s_own_words_are_the_reason() -> None:
    said = (
        "W init: warning\nE RKNN: [08:01:02.004] failed to open rknn device!\n"
        "E Catch exception when init runtime!\nTraceback\n"
    )
    assert runtime_reason(said + "OSError: librknnrt.so: cannot open", "x", -1) == (
        "x failed: RKNN: failed to open rknn device! / OSError: librknnrt.so: cannot open"
    )
    assert runtime_reason("", "the NPU runtime", -1) == "the NPU runtime returned -1"


def test_health_asks_a_watched_problem_again() -> None:
    state: list[str | None] = ["voice hall: no NPU models"]
    health = Health()
    health.apply_problems({"npu": lambda: state[0], "voice": None})
    assert health.snapshot() == {"npu": "voice hall: no NPU models"}
    health.take_changed()
    state[0] = "voice hall: NPU inference failed"
    assert health.take_changed() and health.get("npu") == "voice hall: NPU inference failed"
    state[0] = None
    assert [d.what for d in health.status("online", voice="v", queue_depth=0, voices=(), current=None,
                                          keepalive=None).degraded] == []  # fmt: skip
    health.apply_problems({"npu": "fixed"})  # a plain reason replaces the watch
    state[0] = "again"
    assert health.snapshot() == {"npu": "fixed"}


def test_the_config_keys(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("voice:\n  accelerator: npu\n  npu_core_mask: 7\n")
    voice = load_config(path).voice
    assert (voice.accelerator, voice.npu_core_mask) == ("npu", 7)
    for text, key in (("accelerator: gpu", "voice/accelerator"), ("npu_core_mask: 8", "voice/npu_core_mask")):
        path.write_text(f"voice:\n  {text}\n")
        with pytest.raises(ConfigError) as info:
            load_config(path)
        assert any(f"{path}:2 {key}" in p for p in info.value.problems), info.value.problems


def test_export_without_the_converter_venv_is_one_line(tmp_path: Path) -> None:
    env = {"EDGETTS_RKNN_PYTHON": str(tmp_path / "nope" / "python"), "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        [sys.executable, "-m", "edgetts.cli", "export-rknn", "--target", "rk3588", "-o", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1
    assert done.stderr.strip().count("\n") == 0 and "scripts/rknn-venv.sh" in done.stderr, done.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.mqtt
def test_the_daemon_reports_degraded_npu_with_the_runtime_s_reason_and_speaks_on_the_cpu(
    mosquitto: Broker, alsa_capture: Capture, tmp_path: Path, daemon_processes: list[DaemonProcess]
) -> None:
    """`voice.accelerator: npu` where the NPU cannot run (here: no rknn-toolkit-lite2; in the arm64
    chroot of scripts/test-aarch64.sh: the runtime installed, no driver or librknnrt): the daemon starts,
    says why in `degraded: npu`, and speaks on the CPU.  The export is whole as far as the manifest
    can tell (the voice's hash, each file's), so what refuses it is the runtime."""
    voices = tmp_path / "voices"
    models = {part: (("x",), {n: b"not a converted model" for n in sizes}) for part, sizes in WINDOWS.items()}
    write_export(voices / "en_US-joe-medium.rknn", default_voice_path(), "en_US-joe-medium", models)
    config = tmp_path / "edgetts.yaml"
    config.write_text(config_yaml(mosquitto, "npu-cpu", voice_extra="accelerator: npu\nnpu_core_mask: 1"))
    probe = Probe(mosquitto, "test", "npu-cpu")
    env = {**alsa_capture.env, "EDGETTS_VOICE_PATH": str(voices)}
    daemon = DaemonProcess(config, env, tmp_path / "daemon.log").start()
    daemon_processes.append(daemon)
    slow = 900  # emulated on arm64: a cold model cache, the calibration, a sentence ~15 s
    try:
        status = probe.wait_status(
            lambda s: s["state"] == "online" and any(d["what"] == "npu" for d in s["degraded"]), slow
        )
    except AssertionError as err:
        raise AssertionError(f"{err}\nthe daemon's log ends:\n{daemon.log_end(60)}") from None
    reason = next(d["reason"] for d in status["degraded"] if d["what"] == "npu")
    assert reason.startswith("voice default: "), reason
    try:
        import rknnlite.api  # noqa: F401 - the board's runtime, installed in the arm64 chroot
    except ImportError:
        assert "rknn-toolkit-lite2 is not installed (No module named 'rknnlite')" in reason, reason
    else:  # its own words: what it printed when init_runtime failed
        assert "the NPU runtime failed: " in reason or "loading " in reason, reason
    assert [d["what"] for d in status["degraded"]] == ["npu"], status["degraded"]
    probe.publish({"id": "npu-1", "text": "Mind the gap."})
    probe.wait_event("npu-1", "finished", slow)
    assert probe.events_of("npu-1") == ["queued", "started", "finished"]
    assert int(np.abs(alsa_capture.pcm()).max()) > 1000  # speech, on the CPU
    daemon.signal(signal.SIGTERM)
    daemon.assert_clean_exit(60)


class JsonConverter:
    """The converter's side of `edgetts export-rknn` without the toolkit: each "model" names its part
    and window (what OrtRuntime reads)."""

    def __init__(self) -> None:
        self.jobs: list[dict[str, Any]] = []

    def convert(self, job: dict[str, Any]) -> dict[str, Any]:
        self.jobs.append(job)
        for model in job["models"]:
            Path(model["output"]).write_text(json.dumps({"part": model["part"], "frames": model["frames"]}))
        return {"toolkit": "rknn-toolkit2 (stand-in)"}


def test_the_export_writes_what_the_adapter_loads(parts: dict[str, Any], tmp_path: Path) -> None:
    from edgetts.voice.accel.manifest import read_manifest, sha256_of
    from edgetts.voice.accel.rknn_export import ExportPlan, export_voice

    converter, out = JsonConverter(), tmp_path / "voices" / "default.rknn"
    said: list[str] = []
    manifest = export_voice(_voice(), ExportPlan("rk3576", windows=(16, 140)), out, converter, progress=said.append)
    assert said == ["converting 6 models for rk3576 (fp16): minutes"]
    job = converter.jobs[0]
    shapes = {(m["part"], m["frames"]): m["shapes"] for m in job["models"]}
    assert shapes[("tail", 16)] == [[1, 192, 16]]
    assert sorted(map(tuple, shapes[("flow", 240)])) == [(1, 1, 240), (1, 192, 240), (1, 192, 240)]
    assert job["inputs"] == {p: list(parts["inputs"][p]) for p in ("flow", "tail")}
    assert read_manifest(out) == manifest
    assert (manifest.target, manifest.dtype, manifest.toolkit) == ("rk3576", "fp16", "rknn-toolkit2 (stand-in)")
    assert manifest.voice_sha256 == sha256_of(default_voice_path())
    assert {p: sorted(m.models) for p, m in manifest.parts.items()} == {"flow": [24, 112, 240, 336], "tail": [16, 140]}
    assert sorted(p.name for p in out.iterdir()) == sorted([*manifest.files, "manifest.json"])
    voice = _voice()
    npu = attach_npu(voice, [out.parent], factory=lambda: OrtRuntime(parts["sessions"], []), soc="rk3576")
    assert npu.problem is None and npu.windows == {"flow": [24, 112, 240, 336], "tail": [16, 140]}
    assert _stream(voice, "Mind the gap.").size > 0 and npu.problem is None


def test_a_reload_switches_accelerators(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from edgetts.config import parse_config
    from edgetts.daemon.assets import Loading, VoiceRuntime, build_assets, load_configured_voice

    monkeypatch.setenv("EDGETTS_VOICE_PATH", str(tmp_path / "no-exports"))
    loading = Loading(load_configured_voice, VoiceRuntime(), threads=1)
    health = Health()
    on_cpu = build_assets(parse_config("voice:\n  threads: 1\n"), loading)
    health.apply_problems(on_cpu.problems)
    assert "npu" not in health.snapshot() and on_cpu.voices["default"].accelerator is None
    on_npu = build_assets(parse_config("voice:\n  threads: 1\n  accelerator: npu\n"), loading, previous=on_cpu)
    health.apply_problems(on_npu.problems)
    assert on_npu.voices["default"] is not on_cpu.voices["default"]  # loaded again, the NPU in front
    assert health.snapshot()["npu"].startswith("voice default: no NPU models for voice en_US-joe-medium")
    back = build_assets(parse_config("voice:\n  threads: 1\n"), loading, previous=on_npu)
    health.apply_problems(back.problems)
    assert "npu" not in health.snapshot() and back.voices["default"].accelerator is None
