#!/usr/bin/env bash
# Run the whole test suite on a fresh Debian 12 machine: installs the apt
# packages, builds a test virtualenv (.venv-test) with edgetts, the reference
# peer piper-tts (tests and benchmarks only) and pytest, then runs pytest.
# The tests start their own mosquitto on 127.0.0.1 and their own ALSA capture
# config; nothing outside the repo is left running.
#
#   scripts/test.sh [--ha] [--aarch64] [--deb] [--rknn] [pytest args...]
#
# Without pytest args it runs the default tier on every core (EDGETTS_TEST_WORKERS workers, default
# one more than the cores), then the realtime tier alone; with them, one plain pytest run of what
# they select.
# --ha also runs tests/daemon/test_homeassistant_core.py against two real Home Assistant
# cores: 2024.3.3 in its own venv (scripts/ha-venv.sh: built once, ~700 MB, then cached) and
# 2026.2.3 in a Debian 13 chroot (scripts/ha-chroot.sh: Python 3.13; built once, ~4 min and
# ~2.5 GB, then cached in /var/cache/edgetts; needs root).
# --aarch64: afterwards, install and test on aarch64 under emulation as well
# (scripts/test-aarch64.sh: an arm64 chroot, ~25 min the first time, then cached).
# --deb: afterwards, build the Debian packages for amd64 and arm64 and test them installed into
# fresh Debian 12 roots and a booted systemd container (scripts/test-deb.sh; needs root).
# --rknn also runs tests/voice/test_npu_sim.py: the voice converted by Rockchip's rknn-toolkit2 and
# run in its x86 simulator behind the NPU adapter (scripts/rknn-venv.sh: the converter's own venv,
# built once, ~5.5 GB with torch's CUDA libraries from PyPI, then cached in /var/cache/edgetts;
# the conversions take a few minutes).
set -euo pipefail
ha=0
aarch64=0
deb=0
rknn=0
while [[ "${1:-}" == "--ha" || "${1:-}" == "--aarch64" || "${1:-}" == "--deb" || "${1:-}" == "--rknn" ]]; do
  [[ "$1" == "--ha" ]] && ha=1
  [[ "$1" == "--aarch64" ]] && aarch64=1
  [[ "$1" == "--deb" ]] && deb=1
  [[ "$1" == "--rknn" ]] && rknn=1
  shift
done
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
venv=${EDGETTS_TEST_VENV:-$here/.venv-test}
py=${PYTHON:-python3}

bash scripts/system-deps.sh --test
[[ -x "$venv/bin/python" ]] || "$py" -m venv "$venv"
"$venv/bin/pip" install -q --disable-pip-version-check -e ".[daemon]" -r requirements-test.txt -r requirements-ar-test.txt 2>&1 \
  | grep -v "is ignored: it is neither a file nor a directory" >&2 || true
"$venv/bin/python" -c "import edgetts, piper, pytest, sherpa_onnx, wyoming, wyoming_piper" # fail here, clearly, if the install failed

export ORT_DISABLE_TELEMETRY=1
if [[ $ha == 1 ]]; then
  EDGETTS_HA_PYTHON=$(bash scripts/ha-venv.sh "${EDGETTS_HA_VENV:-$here/.venv-ha}")
  EDGETTS_HA_NEW_PYTHON=$(bash scripts/ha-chroot.sh)
  export EDGETTS_HA_PYTHON EDGETTS_HA_NEW_PYTHON
fi
if [[ $rknn == 1 ]]; then
  EDGETTS_RKNN_PYTHON=$(bash scripts/rknn-venv.sh)
  export EDGETTS_RKNN_PYTHON
fi
# One optimised-model cache for the whole run (tests/conftest.py): the realtime tier reuses what the
# default tier built.
EDGETTS_TEST_CACHE_DIR=$(mktemp -d /tmp/edgetts-test-cache-XXXXXX)
export EDGETTS_TEST_CACHE_DIR
trap 'rm -rf "$EDGETTS_TEST_CACHE_DIR"' EXIT
# Bytecode is kept (in the checkout's __pycache__ folders, which git ignores): with
# PYTHONDONTWRITEBYTECODE, as some images set it, every daemon and CLI the tests start compiles
# edgetts anew, and every collection rewrites each test module's asserts again.
unset PYTHONDONTWRITEBYTECODE
set +e
if (($# == 0)); then
  # The whole suite in two tiers: the default tier's verdicts do not depend on how busy the machine
  # is, so it runs on every core at once, and on one worker more (pytest-xdist): many of its tests
  # wait on daemons they started or on audio played in real time, and the extra worker's tests use
  # the core they leave idle (worksteal keeps every worker busy to the end when a few files hold
  # the long tests). The realtime tier measures real time, so it runs alone, on the files the
  # default pass found holding its tests (EDGETTS_REALTIME_FILES, tests/conftest.py).
  workers=${EDGETTS_TEST_WORKERS:-$(($(nproc) + 1))}
  EDGETTS_REALTIME_FILES="$EDGETTS_TEST_CACHE_DIR/realtime-files" \
    "$venv/bin/python" -m pytest -n "$workers" --dist worksteal -m "not realtime" --durations=25
  rc=$?
  realtime_files=()
  [[ -s "$EDGETTS_TEST_CACHE_DIR/realtime-files" ]] && mapfile -t realtime_files <"$EDGETTS_TEST_CACHE_DIR/realtime-files"
  "$venv/bin/python" -m pytest -m realtime --durations=25 "${realtime_files[@]}"
  rt_rc=$?
  ((rc != 0)) || rc=$rt_rc
else
  "$venv/bin/python" -m pytest --durations=25 "$@"
  rc=$?
fi
if ((aarch64)); then
  EDGETTS_HOST_PYTHON=${EDGETTS_HOST_PYTHON:-$venv/bin/python} bash scripts/test-aarch64.sh
  arm_rc=$?
  ((rc != 0)) || rc=$arm_rc
fi
if ((deb)); then
  EDGETTS_HOST_PYTHON=${EDGETTS_HOST_PYTHON:-$venv/bin/python} bash scripts/test-deb.sh
  deb_rc=$?
  ((rc != 0)) || rc=$deb_rc
fi
set -e
exit $rc
