#!/usr/bin/env bash
# Debian/Raspberry Pi OS packages edgetts needs: headers to build PyAudio and
# systemd-python (they have no Linux wheels), ALSA tools, and mosquitto (the
# broker the README's run command and the tests start on 127.0.0.1).
# Idempotent: installs only what is missing.  Usage: scripts/system-deps.sh [--test]
set -euo pipefail
pkgs=(python3-venv python3-dev gcc pkg-config
      portaudio19-dev libasound2-dev alsa-utils
      libsystemd-dev
      mosquitto mosquitto-clients)
if [[ "${1:-}" == "--test" ]]; then
  pkgs+=(openssl numactl systemd)   # TLS certs for the broker tests; systemd-analyze for the unit
  pkgs+=(cmake make g++)   # tools/build_espeak_data.py: espeak-ng's CMake build (the data rebuild test)
  # the paced sink (tools/paced_sink.py): a sound card with a real clock, and parec to record it
  pkgs+=(pulseaudio pulseaudio-utils libasound2-plugins)
  # the ducking tests (docs/ducking.md): a real MPD and a real Snapcast server with a client, on loopback
  pkgs+=(mpd snapserver snapclient)
  # the console's browser tests (issue 18): headless Chromium and its WebDriver, driven by selenium
  pkgs+=(chromium chromium-driver)
fi
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  SUDO=""
  [[ $(id -u) -ne 0 ]] && SUDO="sudo"
  echo "[edgetts] apt-get install ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
