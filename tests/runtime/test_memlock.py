"""Locked voice weights: VmLck as root, identical output, and the unprivileged degrade path."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import textwrap
import uuid
import weakref
from pathlib import Path

import numpy as np
import pytest

from edgetts.runtime import memlock
from edgetts.runtime.memlock import LOCK_FIX, MIN_BYTES, find_initializers, lock_weights, read_vmlck

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _nothing_live_yet(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test starts as a process where no weights are live: a voice another test of the same
    worker still holds (a session fixture) would otherwise be shared, and nothing locked here."""
    monkeypatch.setattr(memlock, "_LIVE", weakref.WeakValueDictionary())


def _feeds() -> dict[str, np.ndarray]:
    ids = np.array([[1, 0] + [20, 0, 25, 0, 35, 0, 50, 0, 3, 0, 61, 0] * 6 + [2]], dtype=np.int64)
    return {
        "input": ids,
        "input_lengths": np.array([ids.shape[1]], np.int64),
        "scales": np.array([0, 1, 0], np.float32),
    }


def _options():  # type: ignore[no-untyped-def]
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.log_severity_level = 3
    return so


def test_find_initializers_matches_onnx() -> None:
    onnx = pytest.importorskip("onnx")
    from edgetts.voice.catalog import default_voice_path

    path = default_voice_path()
    spans = {s.name: s for s in find_initializers(path)}
    model = onnx.load(str(path), load_external_data=False)
    raw = path.read_bytes()
    assert len(spans) == len(model.graph.initializer)
    for init in model.graph.initializer:
        span = spans[init.name]
        assert span.dims == tuple(init.dims) and span.data_type == init.data_type
        assert raw[span.offset : span.offset + span.nbytes] == init.raw_data


def test_read_vmlck(tmp_path: Path) -> None:
    status = tmp_path / "status"
    status.write_text("Name:\tx\nVmLck:\t   61152 kB\nVmRSS:\t 1 kB\n")
    assert read_vmlck(status) == 61152 * 1024
    assert read_vmlck(tmp_path / "missing") == 0
    assert read_vmlck() >= 0


def test_degraded_reason_text() -> None:
    reason = memlock.degraded_reason(12, 62_618_778)
    assert reason.startswith("cannot lock voice weights in RAM (mlock: ENOMEM, 59.7 MiB needed, RLIMIT_MEMLOCK ")
    assert reason.endswith("; fix: LimitMEMLOCK=infinity or AmbientCapabilities=CAP_IPC_LOCK")


@pytest.mark.skipif(os.geteuid() != 0, reason="locking 60 MB needs root/CAP_IPC_LOCK here")
def test_locked_weights_as_root_identical_output() -> None:
    import onnxruntime as ort

    from edgetts.voice.catalog import default_voice_path

    path = default_voice_path()
    plain = ort.InferenceSession(str(path), _options(), providers=["CPUExecutionProvider"])
    expected = plain.run(None, _feeds())[0]
    del plain

    before = read_vmlck()
    so = _options()
    weights = lock_weights(path, so)
    session = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
    try:
        assert weights.error is None and weights.degraded is None
        assert weights.weight_bytes > 60_000_000  # the joe voice: 62.4 MB of weights
        assert weights.locked_bytes >= weights.weight_bytes
        assert read_vmlck() - before >= weights.weight_bytes
        got = session.run(None, _feeds())[0]
        assert np.array_equal(got, expected)
    finally:
        del session
        weights.close()
    assert read_vmlck() <= before + 4096


@pytest.mark.skipif(os.geteuid() != 0, reason="locking needs root/CAP_IPC_LOCK here")
def test_ar_voice_weights_locked_as_root_identical_output(tmp_path: Path) -> None:
    """memory.lock reaches an AR voice's LM and decoder as it does a Piper voice (issue 12):
    the voice is loaded by load_voice, as the daemon's voice loader does."""
    from edgetts.voice.ar.manifest import load_manifest
    from edgetts.voice.catalog import load_voice

    from tools.make_ar_test_voice import make_voice

    manifest = make_voice(tmp_path)
    m = load_manifest(manifest)
    needed = sum(
        s.nbytes for model in (m.lm_path, m.decoder.path) for s in find_initializers(model) if s.nbytes >= MIN_BYTES
    )  # what lock_weights maps and locks
    assert needed > 400_000  # the tiny LM's 434 KiB and the decoder's 30 KiB
    plain = load_voice(manifest, threads=1)
    expected = np.concatenate([c.audio for c in plain.synthesize("Mind the gap.", seed=4)])
    del plain

    before = read_vmlck()
    voice = load_voice(manifest, threads=1, lock=True)
    assert read_vmlck() - before >= needed
    got = np.concatenate([c.audio for c in voice.synthesize("Mind the gap.", seed=4)])
    np.testing.assert_array_equal(got, expected)


# ----------------------------------------------------------- unprivileged


_SCRIPT = textwrap.dedent(
    """
    import importlib.util, logging, sys
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(message)s")
    spec = importlib.util.spec_from_file_location("memlock", sys.argv[1])
    memlock = importlib.util.module_from_spec(spec); sys.modules["memlock"] = memlock; spec.loader.exec_module(memlock)
    import numpy as np, onnxruntime as ort
    so = ort.SessionOptions(); so.intra_op_num_threads = 1; so.log_severity_level = 3
    weights = memlock.lock_weights(sys.argv[2], so)
    print("DEGRADED", weights.degraded)
    session = ort.InferenceSession(sys.argv[2], so, providers=["CPUExecutionProvider"])
    ids = np.array([[1, 0, 20, 0, 25, 0, 35, 0, 2]], dtype=np.int64)
    out = session.run(None, {"input": ids, "input_lengths": np.array([9], np.int64),
                             "scales": np.array([0, 1, 0], np.float32)})[0]
    print("INFERENCE ok samples", out.size, "VmLck", memlock.read_vmlck())
    """
)


@pytest.fixture(scope="module")
def unprivileged_env():  # type: ignore[no-untyped-def]
    """A throw-away user and a venv from Debian's python (the pyenv one is in /root, 0700).

    The venv is kept between runs in $TMPDIR/edgetts-test-unpriv-venv (first
    build about 10 s with a warm pip cache, then reused).
    """
    if os.geteuid() != 0:
        pytest.skip("needs root to create a user")
    for tool in ("/usr/bin/python3", shutil.which("runuser"), shutil.which("useradd")):
        if not tool or not os.path.exists(tool):
            pytest.skip(f"needs /usr/bin/python3, runuser and useradd (missing: {tool})")
    import onnxruntime

    base = Path(tempfile.gettempdir()) / "edgetts-test-unpriv-venv"
    venv = base / "venv"
    marker = venv / f".ok-ort-{onnxruntime.__version__}"
    if not marker.exists():
        shutil.rmtree(venv, ignore_errors=True)
        base.mkdir(parents=True, exist_ok=True)
        base.chmod(0o755)
        r = subprocess.run(["/usr/bin/python3", "-m", "venv", str(venv)], capture_output=True, text=True)
        if r.returncode != 0:
            pytest.skip(f"/usr/bin/python3 -m venv failed: {r.stderr.strip()[-200:]}")
        r = subprocess.run(
            [
                str(venv / "bin" / "pip"),
                "install",
                "-q",
                "--disable-pip-version-check",
                f"onnxruntime=={onnxruntime.__version__}",
                "numpy",
            ],
            capture_output=True,
            text=True,
            timeout=600,
        )
        if r.returncode != 0:
            pytest.skip(f"pip install into the unprivileged venv failed: {r.stderr.strip()[-300:]}")
        marker.touch()
    work = Path(tempfile.mkdtemp(prefix="edgetts-unpriv-"))
    work.chmod(0o755)
    shutil.copy(ROOT / "edgetts" / "runtime" / "memlock.py", work / "memlock.py")
    (work / "try_lock.py").write_text(_SCRIPT)
    from edgetts.voice.catalog import default_voice_path

    model = default_voice_path()  # world-readable here; a copy otherwise
    probe = subprocess.run(["runuser", "-u", "nobody", "--", "test", "-r", str(model)])
    if probe.returncode != 0:
        shutil.copy(model, work / "voice.onnx")
        model = work / "voice.onnx"
    for p in work.iterdir():
        p.chmod(0o644)
    user = f"edgetts-t{uuid.uuid4().hex[:8]}"
    subprocess.run(["useradd", "-M", "-s", "/usr/sbin/nologin", user], check=True)
    try:
        yield {"user": user, "python": venv / "bin" / "python", "work": work, "model": model}
    finally:
        subprocess.run(["userdel", user], check=False)
        shutil.rmtree(work, ignore_errors=True)


def _run_as(env: dict, prefix: list[str] = ()) -> subprocess.CompletedProcess[str]:  # type: ignore[assignment]
    cmd = [
        *prefix,
        shutil.which("runuser") or "/usr/sbin/runuser",
        "-u",
        env["user"],
        "--",
        str(env["python"]),
        str(env["work"] / "try_lock.py"),
        str(env["work"] / "memlock.py"),
        str(env["model"]),
    ]
    clean = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "HOME": "/nonexistent", "ORT_DISABLE_TELEMETRY": "1"}
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=clean, cwd="/")


def test_unprivileged_user_degrades_and_still_speaks(unprivileged_env) -> None:  # type: ignore[no-untyped-def]
    r = _run_as(unprivileged_env)  # (its timeout bounds a hang; how long it takes is not the point)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "cannot lock voice weights in RAM (mlock: ENOMEM" in r.stdout, r.stdout
    assert "'what': 'memory'" in r.stdout and LOCK_FIX in r.stdout
    assert "RLIMIT_MEMLOCK 8192 KiB" in r.stdout or "RLIMIT_MEMLOCK" in r.stdout
    assert r.stderr.count("cannot lock voice weights") == 1  # said once (the log line)
    assert "INFERENCE ok" in r.stdout and "VmLck 0" in r.stdout


def test_unprivileged_zero_limit_is_eperm(unprivileged_env) -> None:  # type: ignore[no-untyped-def]
    if not shutil.which("prlimit"):
        pytest.skip("prlimit missing")
    r = _run_as(unprivileged_env, ["prlimit", "--memlock=0:0"])
    assert r.returncode == 0, r.stderr[-2000:]
    assert "(mlock: EPERM" in r.stdout and "RLIMIT_MEMLOCK 0 KiB" in r.stdout and LOCK_FIX in r.stdout
    assert "INFERENCE ok" in r.stdout


@pytest.mark.skipif(os.geteuid() != 0, reason="locking 60 MB needs root/CAP_IPC_LOCK here")
def test_a_second_file_of_the_same_weights_shares_them(tmp_path: Path) -> None:
    """A split voice's front and its folded form hold the same encoder weights: the second session
    is given the first one's OrtValues (nothing of its own file locked), and keeps them after the
    first is gone."""
    import onnxruntime as ort

    from edgetts.voice.catalog import default_voice_path

    path = default_voice_path()
    twin, other = tmp_path / "twin.onnx", tmp_path / "other.onnx"
    shutil.copyfile(path, twin)
    # Another voice of the same architecture: same names and shapes, other numbers.
    raw = bytearray(path.read_bytes())
    changed = max(find_initializers(path), key=lambda s: s.nbytes)
    raw[changed.offset : changed.offset + 4] = b"\x00\x00\x80\x3f"
    other.write_bytes(bytes(raw))
    before = read_vmlck()
    so_a, so_b = _options(), _options()
    first = lock_weights(path, so_a)
    a = ort.InferenceSession(str(path), so_a, providers=["CPUExecutionProvider"])
    second = lock_weights(twin, so_b)
    b = ort.InferenceSession(str(twin), so_b, providers=["CPUExecutionProvider"])
    expected = a.run(None, _feeds())[0]
    assert first.shared_bytes == 0 and first.locked_bytes >= first.weight_bytes
    assert second.shared_bytes == second.weight_bytes == first.weight_bytes
    assert second.locked_bytes == 0 and second.error is None
    assert read_vmlck() - before < first.weight_bytes + 2**20  # locked once
    third = lock_weights(other, _options())
    assert third.shared_bytes == first.weight_bytes - changed.nbytes and third.locked_bytes >= changed.nbytes
    third.close()
    del a
    first.close()
    try:
        assert np.array_equal(b.run(None, _feeds())[0], expected)
    finally:
        del b
        second.close()
