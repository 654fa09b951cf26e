#!/usr/bin/env bash
# Install edgetts on a Debian 12 / Raspberry Pi OS machine: apt packages, a
# virtualenv with edgetts and the default voice (a PyPI package: nothing is
# downloaded at run time), `edgetts` on the PATH, the default config in
# /etc/edgetts/edgetts.yaml (kept if it exists), and -- where systemd runs --
# the edgetts.service unit and its system user (not started: see docs/daemon.md).
#
#   sudo scripts/install.sh            # then: edgetts say "Hello"
#
# Knobs (env): EDGETTS_VENV (default /opt/edgetts/venv), PYTHON (default python3),
# EDGETTS_BIN (default /usr/local/bin), EDGETTS_ETC (default /etc/edgetts),
# EDGETTS_NO_APT=1 to skip apt, EDGETTS_NO_SERVICE=1 to skip the unit.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
venv=${EDGETTS_VENV:-/opt/edgetts/venv}
bindir=${EDGETTS_BIN:-/usr/local/bin}
etc=${EDGETTS_ETC:-/etc/edgetts}
py=${PYTHON:-python3}

[[ "${EDGETTS_NO_APT:-0}" == 1 ]] || bash "$here/scripts/system-deps.sh"
if [[ ! -x "$venv/bin/python" ]]; then
  mkdir -p "$(dirname "$venv")"
  "$py" -m venv "$venv"
fi
"$venv/bin/pip" install -q --disable-pip-version-check --upgrade pip >/dev/null
"$venv/bin/pip" install -q --disable-pip-version-check "$here[daemon]"
mkdir -p "$bindir"
ln -sf "$venv/bin/edgetts" "$bindir/edgetts"
if [[ ! -e "$etc/edgetts.yaml" ]]; then
  install -D -m 0644 "$here/config/edgetts.yaml" "$etc/edgetts.yaml"
  echo "[edgetts] wrote $etc/edgetts.yaml (edit it, then: edgetts check-config)" >&2
fi
if [[ "${EDGETTS_NO_SERVICE:-0}" != 1 && -d /run/systemd/system ]]; then
  id edgetts >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin --groups audio edgetts
  install -m 0644 "$here/systemd/edgetts.service" /etc/systemd/system/edgetts.service
  systemctl daemon-reload
  echo "[edgetts] installed edgetts.service: systemctl enable --now edgetts" >&2
fi
echo "[edgetts] installed $("$venv/bin/edgetts" --version) into $venv; $bindir/edgetts" >&2
