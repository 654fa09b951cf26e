#!/usr/bin/env bash
# Build (once, then cached) a newer Home Assistant core for tests/daemon/test_homeassistant_core.py
# (issue 17): `scripts/test.sh --ha` runs it beside the 2024.3.3 venv of scripts/ha-venv.sh.
# Releases with MQTT notify and assist_satellite need Python 3.13, which Debian 12 does not have:
# so a Debian 13 (amd64) chroot, made with debootstrap, holds Python 3.13, ffmpeg (HA converts
# announcement media with it) and a venv with homeassistant 2026.2.3 (the newest release for
# Python 3.13) and the requirements of the integrations the test loads (their manifest.json
# pins: HA then runs with --skip-pip and never installs anything itself).
# Prints a python wrapper on stdout: it runs the chroot's python in a mount namespace of its
# own, with /tmp, /dev and /proc bound in (the test's HA config folder is under /tmp), so no
# mount outlives it.  The network is the host's: HA reaches mosquitto and edgetts on 127.0.0.1.
#
#   sudo scripts/ha-chroot.sh [ROOT]   (default /var/cache/edgetts/ha-trixie, or $EDGETTS_HA_ROOT)
set -euo pipefail
root=${1:-${EDGETTS_HA_ROOT:-/var/cache/edgetts/ha-trixie}}
release=2026.2.3
stamp="$root/.edgetts-ha-$release-1"
wrapper="$root.python"
# What HA 2026.2.3's mqtt, wyoming (assist_satellite, assist_pipeline, conversation, ffmpeg,
# tts, ...) and frontend integrations pin; the frontend too: HA starts in recovery mode without it.
requirements=(
  "homeassistant==$release" "aiohasupervisor==0.3.3" "ha-ffmpeg==3.2.2" "hassil==3.5.0"
  "home-assistant-frontend==20260128.6" "home-assistant-intents==2026.1.28" "mutagen==1.47.0"
  "paho-mqtt==2.1.0" "pymicro-vad==1.0.1" "pyspeex-noise==1.0.2" "wyoming==1.7.2"
)
log() { printf '[ha-chroot] %s\n' "$*" >&2; }
[[ $(id -u) -eq 0 ]] || { log "needs root (debootstrap, chroot, mounts)"; exit 1; }

# Runs "$@" in the chroot with /tmp, /dev and /proc bound in, in a mount namespace of its own.
in_root() {
  unshare --mount --propagation private sh -ec \
    'r=$1; shift; mount --bind /tmp "$r/tmp"; mount --bind /dev "$r/dev"; mount -t proc proc "$r/proc"
     exec chroot "$r" "$@"' sh "$root" "$@"
}

if [[ ! -f "$stamp" ]]; then
  command -v debootstrap >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -q debootstrap >&2
  if [[ ! -x "$root/usr/bin/python3.13" ]]; then
    log "debootstrap Debian 13 into $root (a few minutes, once)"
    rm -rf "$root"
    mkdir -p "$(dirname "$root")"
    debootstrap --variant=minbase \
      --include=python3,python3-venv,python3-dev,ca-certificates,gcc,g++,libc6-dev \
      trixie "$root" http://deb.debian.org/debian >&2
  fi
  # The host's CAs (a proxy's, where there is one) for pip inside; its resolver.
  if compgen -G "/usr/local/share/ca-certificates/*" >/dev/null; then
    cp -r /usr/local/share/ca-certificates/. "$root/usr/local/share/ca-certificates/"
  fi
  cp -L /etc/resolv.conf "$root/etc/resolv.conf"
  in_root update-ca-certificates >/dev/null
  log "ffmpeg and Home Assistant $release into the chroot (once)"
  in_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends ffmpeg >/dev/null
  in_root apt-get clean
  [[ -x "$root/ha/bin/python" ]] || in_root python3 -m venv /ha
  in_root env PIP_CERT=/etc/ssl/certs/ca-certificates.crt PIP_DISABLE_PIP_VERSION_CHECK=1 \
    /ha/bin/pip install -q "${requirements[@]}" >&2
  in_root /ha/bin/python -c "import homeassistant, paho.mqtt, wyoming, pymicro_vad" >&2
  touch "$stamp"
fi

cat > "$wrapper" <<EOF
#!/bin/sh
# Home Assistant $release's python, in the Debian 13 chroot $root (scripts/ha-chroot.sh).
exec unshare --mount --propagation private sh -ec 'r=\$1; shift; mount --bind /tmp "\$r/tmp"; mount --bind /dev "\$r/dev"; mount -t proc proc "\$r/proc"; exec chroot "\$r" /ha/bin/python "\$@"' sh "$root" "\$@"
EOF
chmod +x "$wrapper"
echo "$wrapper"
