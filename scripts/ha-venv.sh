#!/usr/bin/env bash
# Build (once, then cached) the virtualenv of a real Home Assistant core for the integration
# test tests/daemon/test_homeassistant_core.py (issue 17): `scripts/test.sh --ha` runs it.
# 2024.3.3 is the newest release that runs on Debian 12's Python 3.11; josepy<2 because
# josepy 2 dropped what its `acme` import needs.  The MQTT and Wyoming integrations' own
# requirements (their manifest.json pins) are installed here too: HA then runs with --skip-pip.
# Prints the venv's python on stdout.
#
#   scripts/ha-venv.sh [VENV]     (default .venv-ha, or $EDGETTS_HA_VENV)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
venv=${1:-${EDGETTS_HA_VENV:-$here/.venv-ha}}
py=${PYTHON:-python3}
stamp="$venv/.edgetts-ha-2024.3.3"
if [[ ! -f "$stamp" ]]; then
  [[ -x "$venv/bin/python" ]] || "$py" -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check \
    "homeassistant==2024.3.3" "josepy<2" \
    "paho-mqtt==1.6.1" "wyoming==1.5.3" 2>&1 \
    | grep -v "is ignored: it is neither a file nor a directory" >&2 || true
  "$venv/bin/python" -c "import homeassistant, paho.mqtt, wyoming" >&2
  touch "$stamp"
fi
echo "$venv/bin/python"
