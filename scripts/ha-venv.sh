#!/usr/bin/env bash
# Build (once, then cached) the virtualenv of a real Home Assistant core for the integration
# test tests/daemon/test_homeassistant_core.py (issue 17): `scripts/test.sh --ha` runs it.
# 2024.3.3 is the newest release that runs on Debian 12's Python 3.11; josepy<2 because
# josepy 2 dropped what its `acme` import needs.  The MQTT and Wyoming integrations' own
# requirements and those of what they depend on (their manifest.json pins; the frontend too: HA
# starts in recovery mode without it; zeroconf for the Wyoming flow's import) are installed here
# too: HA then runs with --skip-pip and never installs anything itself.
# Prints the venv's python on stdout.
#
#   scripts/ha-venv.sh [VENV]     (default .venv-ha, or $EDGETTS_HA_VENV)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
venv=${1:-${EDGETTS_HA_VENV:-$here/.venv-ha}}
py=${PYTHON:-python3}
stamp="$venv/.edgetts-ha-2024.3.3-4"
if [[ ! -f "$stamp" ]]; then
  [[ -x "$venv/bin/python" ]] || "$py" -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check \
    "homeassistant==2024.3.3" "josepy<2" \
    "paho-mqtt==1.6.1" "wyoming==1.5.3" \
    "Pillow==10.2.0" "SQLAlchemy==2.0.27" "aiohttp-fast-url-dispatcher==0.3.0" "aiohttp-zlib-ng==0.3.1" \
    "aiohttp_cors==0.7.0" "fnv-hash-fast==0.5.0" "ha-ffmpeg==3.1.0" "hassil==1.6.1" \
    "home-assistant-intents==2024.3.12" "janus==1.0.0" "mutagen==1.47.0" "psutil-home-assistant==0.0.1" \
    "webrtc-noise-gain==1.2.3" "home-assistant-frontend==20240307.0" \
    "zeroconf==0.131.0" 2>&1 \
    | grep -v "is ignored: it is neither a file nor a directory" >&2 || true
  "$venv/bin/python" -c "import homeassistant, paho.mqtt, wyoming" >&2
  touch "$stamp"
fi
echo "$venv/bin/python"
