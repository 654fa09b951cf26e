#!/usr/bin/env bash
# Run the whole test suite on a fresh Debian 12 machine: installs the apt
# packages, builds a test virtualenv (.venv-test) with edgetts, the reference
# peer piper-tts (tests and benchmarks only) and pytest, then runs pytest.
# The tests start their own mosquitto on 127.0.0.1 and their own ALSA capture
# config; nothing outside the repo is left running.
#
#   scripts/test.sh [--ha] [pytest args...]
#
# --ha also runs tests/daemon/test_homeassistant_core.py against a real Home Assistant
# core, in its own venv (scripts/ha-venv.sh: built once, ~700 MB, then cached).
set -euo pipefail
ha=0
if [[ "${1:-}" == "--ha" ]]; then
  ha=1
  shift
fi
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
  export EDGETTS_HA_PYTHON
fi
set +e
"$venv/bin/python" -m pytest "$@"
rc=$?
set -e
exit $rc
