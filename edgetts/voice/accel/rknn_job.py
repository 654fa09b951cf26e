"""Rockchip's converter, run in a virtualenv of its own (scripts/rknn-venv.sh), never imported by edgetts.

rknn-toolkit2 pins old dependencies (torch <= 2.4, numpy <= 1.26, onnx <= 1.18), so `edgetts
export-rknn` runs this file by path with that venv's python; it imports only the standard library,
numpy and ``rknn`` (edgetts is not installed there).  Two modes:

    python rknn_job.py convert JOB.json REPORT.json
        each model of the job: ONNX at fixed input shapes -> ``.rknn`` (fp16, or int8 calibrated on the
        job's dataset); with ``check``, the simulator's outputs on those inputs are saved for the gate.
    python rknn_job.py serve
        the same builds on request, each kept in the toolkit's x86 simulator (``init_runtime()`` with no
        target runs only a model built in the same process), answering inferences: the runtime the
        --rknn tests and tools/bench_npu.py put behind the product's NPU adapter (tools/rknn_sim.py).

The serve protocol (stdin / the original stdout; the toolkit's own prints go to stderr): each message is
a JSON header and arrays, see :func:`send` and :func:`receive`.
"""

from __future__ import annotations

import io
import json
import os
import struct
import sys
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

SCRIPT = Path(__file__).resolve()
"""This file: run by path with the rknn venv's python."""


def send(stream: BinaryIO, header: dict[str, Any], arrays: list[np.ndarray] = ()) -> None:  # type: ignore[assignment]
    """One message: the header's JSON (length-prefixed), then each array as .npy bytes (length-prefixed):
    the .npy format reads the same across numpy versions, a pickle would not (numpy 2 here, 1.26 there)."""
    body = json.dumps({**header, "arrays": len(arrays)}).encode("utf-8")
    stream.write(struct.pack("<I", len(body)) + body)
    for array in arrays:
        buffer = io.BytesIO()
        np.save(buffer, np.ascontiguousarray(array), allow_pickle=False)
        data = buffer.getvalue()
        stream.write(struct.pack("<Q", len(data)) + data)
    stream.flush()


def receive(stream: BinaryIO) -> tuple[dict[str, Any], list[np.ndarray]] | None:
    """The next message, or None at the end of the stream."""
    head = stream.read(4)
    if len(head) < 4:
        return None
    header = json.loads(_exactly(stream, struct.unpack("<I", head)[0]))
    arrays = []
    for _ in range(int(header.pop("arrays", 0))):
        size = struct.unpack("<Q", _exactly(stream, 8))[0]
        arrays.append(np.load(io.BytesIO(_exactly(stream, size)), allow_pickle=False))
    return header, arrays


def _exactly(stream: BinaryIO, size: int) -> bytes:
    data = stream.read(size)
    if len(data) != size:
        raise EOFError(f"stream ended after {len(data)} of {size} bytes")
    return data


def toolkit_version() -> str:
    from importlib.metadata import version

    return f"rknn-toolkit2 {version('rknn-toolkit2')}"


def build(model: dict[str, Any], target: str, dtype: str) -> Any:
    """An RKNN object holding ``model`` (its ONNX at fixed shapes) built for ``target``; RuntimeError
    naming the step that failed (the toolkit prints why on stderr)."""
    from rknn.api import RKNN

    rknn = RKNN(verbose=False)
    rknn.config(target_platform=target)
    steps = (
        (
            "load_onnx",
            lambda: rknn.load_onnx(model=model["onnx"], inputs=model["inputs"], input_size_list=model["shapes"]),
        ),
        ("build", lambda: rknn.build(do_quantization=dtype == "int8", dataset=model.get("dataset"))),
    )
    for name, step in steps:
        ret = step()
        if ret != 0:
            rknn.release()
            raise RuntimeError(f"{name} of {Path(model['onnx']).name} at {model['shapes']} returned {ret}")
    return rknn


def infer(rknn: Any, inputs: list[np.ndarray]) -> list[np.ndarray]:
    outputs = rknn.inference(inputs=[np.ascontiguousarray(a, dtype=np.float32) for a in inputs])
    if outputs is None:
        raise RuntimeError("inference returned None")
    return [np.asarray(o, dtype=np.float32) for o in outputs]


def convert(job: dict[str, Any]) -> dict[str, Any]:
    """Each model of ``job`` written as ``.rknn``; the report names the toolkit."""
    done = []
    for model in job["models"]:
        rknn = build(model, job["target"], job["dtype"])
        try:
            if rknn.export_rknn(model["output"]) != 0:
                raise RuntimeError(f"export_rknn to {model['output']} failed")
            if model.get("check"):
                _check(rknn, model)
        finally:
            rknn.release()
        done.append(model["output"])
    return {"toolkit": toolkit_version(), "written": done}


def _check(rknn: Any, model: dict[str, Any]) -> None:
    """The simulator's outputs on the model's check inputs (``check``: an .npz of arrays named
    ``<input index>_<window>``), saved to ``check_out`` as ``<window>``."""
    if rknn.init_runtime() != 0:
        raise RuntimeError("the simulator did not start (init_runtime)")
    with np.load(model["check"]) as data:
        count = 1 + max(int(name.split("_")[1]) for name in data.files)
        outs = {str(w): infer(rknn, [data[f"{i}_{w}"] for i in range(len(model["inputs"]))])[0] for w in range(count)}
    np.savez(model["check_out"], **outs)  # type: ignore[arg-type]


def serve(requests: BinaryIO, replies: BinaryIO) -> None:
    """Answer ``convert`` (build, export if asked, keep in the simulator), ``infer``, ``release`` until
    ``quit`` or the end of ``requests``; a failed request is answered ``{"error": ...}``."""
    kept: dict[int, Any] = {}
    while (message := receive(requests)) is not None:
        header, arrays = message
        op = header.get("op")
        try:
            if op == "quit":
                break
            if op == "convert":
                rknn = build(header["model"], header["target"], header["dtype"])
                if header["model"].get("output") and rknn.export_rknn(header["model"]["output"]) != 0:
                    raise RuntimeError("export_rknn failed")
                if rknn.init_runtime() != 0:
                    raise RuntimeError("the simulator did not start (init_runtime)")
                kept[len(kept) + 1] = rknn
                send(replies, {"id": len(kept), "toolkit": toolkit_version()})
            elif op == "infer":
                send(replies, {}, infer(kept[int(header["id"])], arrays))
            elif op == "release":
                rknn = kept.pop(int(header["id"]), None)
                if rknn is not None:
                    rknn.release()
                send(replies, {})
            else:
                send(replies, {"error": f"unknown op {op!r}"})
        except Exception as err:  # the toolkit's own types: the caller gets the reason
            send(replies, {"error": f"{type(err).__name__}: {err}"})
    for rknn in kept.values():
        rknn.release()


def main(argv: list[str]) -> int:
    if argv[:1] == ["convert"] and len(argv) == 3:
        job = json.loads(Path(argv[1]).read_text(encoding="utf-8"))
        try:
            report = convert(job)
        except Exception as err:  # one line for edgetts to show; the toolkit printed the details
            report = {"error": f"{type(err).__name__}: {err}"}
        Path(argv[2]).write_text(json.dumps(report), encoding="utf-8")
        return 1 if "error" in report else 0
    if argv[:1] == ["serve"]:
        replies = os.fdopen(os.dup(1), "wb")
        os.dup2(2, 1)  # the toolkit prints on stdout: keep it out of the replies
        serve(sys.stdin.buffer, replies)
        return 0
    print("usage: rknn_job.py convert JOB.json REPORT.json | serve", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
