#!/usr/bin/env bash
# Build (once, then cached) the virtualenv of Rockchip's converter, rknn-toolkit2 2.5.0 from PyPI
# (issue 41): `edgetts export-rknn` runs edgetts/voice/accel/rknn_job.py with its python, and the
# --rknn tier (scripts/test.sh --rknn) and tools/bench_npu.py run the toolkit's x86 simulator there.
# Never edgetts' own venv: the toolkit pins torch <= 2.4, numpy <= 1.26, onnx <= 1.18 and
# protobuf <= 4.25.4.  opencv-python-headless stands in for its opencv-python (the same cv2 without
# the X11/OpenGL libraries a server lacks).  Prints the venv's python on stdout.
#
#   scripts/rknn-venv.sh [VENV]     (default /var/cache/edgetts/rknn-venv, or $EDGETTS_RKNN_VENV)
set -euo pipefail
venv=${1:-${EDGETTS_RKNN_VENV:-/var/cache/edgetts/rknn-venv}}
py=${PYTHON:-python3}
stamp="$venv/.edgetts-rknn-toolkit2-2.5.0-1"  # bump the suffix when the pins change: the venv is topped up
if [[ ! -f "$stamp" ]]; then
  mkdir -p "$(dirname "$venv")"
  [[ -x "$venv/bin/python" ]] || "$py" -m venv "$venv"
  pip=("$venv/bin/pip" install -q --disable-pip-version-check)
  # The toolkit's own requirements (its wheel's metadata), pinned, with the headless OpenCV.
  "${pip[@]}" "numpy==1.26.4" "onnx==1.18.0" "protobuf==4.25.4" "onnxruntime==1.19.2" "torch==2.4.0" \
    "scipy==1.13.1" "psutil" "ruamel.yaml" "tqdm" "fast-histogram==0.14" "opencv-python-headless==4.10.0.84" 2>&1 \
    | grep -v "is ignored: it is neither a file nor a directory" >&2 || true
  # --no-deps: its metadata asks for opencv-python, which the headless build above stands in for (pip
  # says so as a resolver "ERROR": that one line is expected, and dropped).
  "${pip[@]}" --no-deps "rknn-toolkit2==2.5.0" 2>&1 \
    | grep -v -e "is ignored: it is neither" -e "dependency resolver does not currently" -e "requires opencv-python" \
    >&2 || true
  "$venv/bin/python" -c "from rknn.api import RKNN" >&2
  touch "$stamp"
fi
echo "$venv/bin/python"
