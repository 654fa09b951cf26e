"""Windows decoded at once (voice.parallel: windows): the same audio, in order, and planned as it runs."""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterator

import numpy as np
import pytest

from edgetts.engine import SynthesisConfig
from edgetts.voice.catalog import default_voice_path, load_voice, resolved_parallel
from edgetts.voice.model_cache import default_cache_dir
from edgetts.voice.onnx_session import RuntimeOptions
from edgetts.voice.piper.lead import Item, Shape, _ready_times, plan_text
from edgetts.voice.piper.speed import Cost, SpeedModel
from edgetts.voice.piper.streaming import WindowWorkers
from edgetts.voice.piper.voice import PiperVoice
from edgetts.voice.piper.windows import StreamingOptions

SENTENCE = (
    "The next train to arrive at platform two is the service to Edinburgh Waverley, "
    "calling at York, Darlington, Durham and Newcastle."
)


def _voice(workers: int) -> PiperVoice:
    return PiperVoice.load(
        default_voice_path(),
        runtime=RuntimeOptions(threads=1),
        cache_dir=default_cache_dir(),
        streaming=StreamingOptions(workers=workers, fast_start_ids=128),
    )


def _digest(pieces: Iterator[tuple[np.ndarray, bool]]) -> tuple[str, list[bool]]:
    got = list(pieces)
    return hashlib.sha256(b"".join(p.tobytes() for p, _ in got)).hexdigest(), [last for _, last in got]


@pytest.mark.parametrize("fast_start", [False, True], ids=["exact", "fast-start"])
def test_two_and_three_workers_give_one_worker_s_audio_sample_for_sample(fast_start: bool) -> None:
    one = _voice(1)
    ids = one.frontend.sentence_ids(SENTENCE)[0]
    config = SynthesisConfig(seed=3)
    told: dict[int, list[tuple[int, int]]] = {}
    heard = {}
    for workers in (1, 2, 3):
        voice = one if workers == 1 else _voice(workers)
        assert (voice.window_workers() is None) == (workers == 1)
        told[workers] = []
        heard[workers] = _digest(
            voice.stream(ids, config, fast_start=fast_start, on_frames=lambda f, i, w=workers: told[w].append((f, i)))
        )
    assert heard[1] == heard[2] == heard[3]
    assert told[1] == told[2] == told[3]
    # the fast-start path really ran: the prefix's frames were told before the whole sentence's
    assert len(told[1]) == (2 if fast_start else 1) and told[1][-1][1] == len(ids)
    assert heard[1][1].count(True) == 1 and heard[1][1][-1] is True


def test_load_voice_with_parallel_windows_runs_one_thread_per_window() -> None:
    voice = load_voice("default", threads=2, streaming=True, parallel="windows")
    assert isinstance(voice, PiperVoice) and voice.streaming is not None
    assert voice.streaming.workers == 2
    workers = voice.window_workers()
    assert workers is not None and workers.workers == 2
    threads = load_voice("default", threads=2, streaming=True, parallel="threads")
    assert isinstance(threads, PiperVoice) and threads.window_workers() is None


@pytest.mark.parametrize(("machine", "mode"), [("aarch64", "windows"), ("armv7l", "windows"), ("x86_64", "threads")])
def test_auto_is_windows_on_an_arm_board_and_threads_elsewhere(
    monkeypatch: pytest.MonkeyPatch, machine: str, mode: str
) -> None:
    monkeypatch.setattr("edgetts.voice.catalog.platform.machine", lambda: machine)
    assert resolved_parallel("auto") == mode
    assert resolved_parallel("threads") == "threads" and resolved_parallel("windows") == "windows"


def test_a_board_s_voice_loaded_with_the_default_decodes_windows_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("edgetts.voice.catalog.platform.machine", lambda: "aarch64")
    voice = load_voice("default", threads=2, streaming=True)  # parallel: auto, the default
    assert isinstance(voice, PiperVoice) and voice.window_workers() is not None


class _HeldRuns:
    """A decoder run per job that ends only when the test releases it; counts what is in flight."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.running = 0
        self.most = 0
        self.release: dict[int, threading.Event] = {}
        self.started: dict[int, threading.Event] = {}

    def event(self, table: dict[int, threading.Event], key: int) -> threading.Event:
        with self.lock:
            return table.setdefault(key, threading.Event())

    def __call__(self, feeds: dict[str, np.ndarray]) -> np.ndarray:
        key = int(feeds["k"][0])
        with self.lock:
            self.running += 1
            self.most = max(self.most, self.running)
        self.event(self.started, key).set()
        assert self.event(self.release, key).wait(10), key
        with self.lock:
            self.running -= 1
        return np.full(2, key, dtype=np.float32)


def test_windows_come_in_order_with_at_most_n_in_flight_and_the_first_waited_for() -> None:
    runs = _HeldRuns()
    workers = WindowWorkers(runs, 2)
    prepared: list[int] = []

    def jobs() -> Iterator[tuple[int, dict[str, np.ndarray]]]:
        for k in range(6):
            prepared.append(k)
            yield k, {"k": np.array([k])}

    out = workers.ordered(jobs())
    got: list[int] = []
    consumer = threading.Thread(target=lambda: got.extend(meta for meta, audio in out if audio[0] == meta))
    consumer.start()
    # The first window: nothing else is prepared while it decodes.
    assert runs.event(runs.started, 0).wait(10)
    assert prepared == [0]
    runs.event(runs.release, 0).set()
    # Then two in flight, and the third not prepared until the older one is handed on.
    assert runs.event(runs.started, 1).wait(10) and runs.event(runs.started, 2).wait(10)
    assert runs.running == 2 and prepared == [0, 1, 2]
    runs.event(runs.release, 2).set()  # the later one ends first: still handed on after the earlier
    assert got == [0]
    for k in (1, 3, 4, 5):
        runs.event(runs.release, k).set()
    consumer.join(10)
    workers.close()
    assert got == [0, 1, 2, 3, 4, 5]
    assert runs.most == 2


def test_an_abandoned_sentence_leaves_no_run_behind_and_errors_pass_up() -> None:
    runs = _HeldRuns()
    workers = WindowWorkers(runs, 2)
    out = workers.ordered((k, {"k": np.array([k])}) for k in range(4))
    runs.event(runs.release, 0).set()
    assert next(out)[0] == 0
    threading.Timer(0.05, lambda: runs.event(runs.release, 2).set()).start()
    runs.event(runs.release, 1).set()
    assert next(out)[0] == 1  # job 2 is in flight now
    assert runs.event(runs.started, 2).wait(10)
    out.close()  # waits for the run under way, drops those not begun
    assert runs.running == 0

    def failing(feeds: dict[str, np.ndarray]) -> np.ndarray:
        raise RuntimeError(f"run {int(feeds['k'][0])} failed")

    broken = WindowWorkers(failing, 2)
    with pytest.raises(RuntimeError, match="run 0 failed"):
        list(broken.ordered((k, {"k": np.array([k])}) for k in range(3)))
    with pytest.raises(ValueError):
        WindowWorkers(failing, 1)


def test_ready_times_follow_the_workers() -> None:
    # (caller's runs, decoder run, audio) per chunk; safety 1.
    chunks = [(0.1, 0.2, 1.0), (0.05, 0.4, 1.0), (0.05, 0.4, 1.0), (0.05, 0.4, 1.0)]
    # One worker: each chunk's runs one after the other.
    assert _ready_times(0.0, chunks, 1.0, 1) == pytest.approx([0.3, 0.75, 1.2, 1.65])
    # Two: the first waited for (0.3); chunk 1 prepared by 0.35 and decoded by 0.75; chunk 2 prepared
    # once chunk 0 is ready (by 0.4, decoded by 0.8); chunk 3 once chunk 1 is (0.75 + 0.05 -> 1.2).
    assert _ready_times(0.0, chunks, 1.0, 2) == pytest.approx([0.3, 0.75, 0.8, 1.2])
    # Handed on in order: a quick chunk after a slow one is ready when the slow one is.
    assert _ready_times(1.0, [(0.0, 0.1, 1), (0.0, 0.5, 1), (0.0, 0.1, 1)], 1.0, 3) == pytest.approx([1.1, 1.6, 1.6])


SLOW = {"front": Cost(0.08, 0.0024), "flow": Cost(0.02, 0.0012), "tail": Cost(0.01, 0.009)}
"""A slow core: the decoder's ~1.3 s per 128-frame window (1.5 s of audio) and the flow's ~0.25 s
make one core slower than real time; two decoding at once are not."""


def test_the_plan_with_two_workers_needs_a_shorter_lead_where_one_runs_dry() -> None:
    voice = _voice(1)
    assert voice.split is not None and voice.streaming is not None
    text = [Item(ids=180, first_in_text=True), Item(ids=220), Item(ids=240)]
    lead = {}
    for workers in (1, 2):
        options = StreamingOptions(workers=workers, fast_start_ids=64)
        shape = Shape(voice.split, options, voice.sample_rate)
        lead[workers] = plan_text(text, shape, SpeedModel(assumed=SLOW, frames_per_id=2.2)).lead_s
    assert lead[1] > 2.0  # one worker of this speed runs dry without a long lead
    assert lead[2] < lead[1] / 2  # two decoding at once keep up from much sooner
