#!/usr/bin/env bash
# Install and test edgetts on aarch64 (the boards' architecture) on an x86 machine:
# an arm64 Debian 12 chroot run by qemu-user-static, built once and cached in
# $EDGETTS_AARCH64_CACHE/aarch64-<key> (default /var/cache/edgetts).  Each run copies
# the checkout in, installs it with scripts/install.sh (what a board runs), then:
# the CLI verbs, a zero-noise synthesis compared with the host's (phoneme ids and
# audio), seeded synthesis compared with the host's (issue 19: measured, not judged),
# and the tests that exercise what differs on ARM (see AARCH64_TESTS).
#
#   sudo bash scripts/test-aarch64.sh          # or: scripts/test.sh --aarch64
#
# Needs root (debootstrap, chroot, mounts) and the network on the first run.  Every
# mount it makes is undone on exit, failed or not.  Knobs (env):
#   EDGETTS_QEMU_CPU   cortex-a76 (Pi 5, RK3588's big cores; default) or cortex-a72 (Pi 4)
#   EDGETTS_AARCH64_CACHE  cache root (default /var/cache/edgetts)
#   EDGETTS_AARCH64_TESTS  pytest node ids (space-separated) to run instead of AARCH64_TESTS
#   EDGETTS_AARCH64_FULL=1 also the slow tests (AARCH64_FULL_TESTS: streaming, graph split, real daemon)
#   EDGETTS_HOST_PYTHON    the host Python with edgetts' deps for the reference synthesis
#                          (default: .venv-test, else a venv made in the cache)
# Emulation says nothing about speed (a short sentence takes ~15 s here): only correctness.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
renice -n 10 $$ >/dev/null  # emulated work shares the machine's cores: everything below inherits it
export QEMU_CPU=${EDGETTS_QEMU_CPU:-cortex-a76}
cache=${EDGETTS_AARCH64_CACHE:-/var/cache/edgetts}
suite=bookworm

# The tests run inside, chosen for what differs on ARM and cheap enough that a run stays near
# 30 minutes cold (emulation is 60-120x slower than this machine).  Node ids from the checkout.
AARCH64_TESTS=(
  # espeak-ng from espeakng-loader's aarch64 wheel: ids equal piper-tts's (piper-tts on aarch64 too)
  tests/voice/test_phonemize.py
  # the Piper voice on aarch64 onnxruntime: audio equal to piper-tts's at zero noise; fault cases
  "tests/voice/test_piper_voice.py::test_audio_equals_piper_at_zero_noise[Good morning. The store will open in five minutes.]"
  tests/voice/test_piper_voice.py::test_tiny_voice_runs_through_onnxruntime
  tests/voice/test_piper_voice.py::test_corrupt_model_file
  tests/voice/test_piper_voice.py::test_nan_output_is_a_synthesis_error
  # both caches' keys on a real aarch64 (platform.machine(), the chroot's cpuinfo)
  tests/voice/test_cache_keys.py
  tests/voice/test_model_cache.py::test_key_changes_with_the_model
  tests/voice/test_model_cache.py::test_cache_dir_resolution
  # topology from the chroot's /sys and the board fixtures, pinning through aarch64 glibc, mlock's ctypes
  tests/runtime/test_topology.py
  tests/runtime/test_cpu_plan.py
  tests/runtime/test_affinity.py::test_pin_is_per_thread
  tests/runtime/test_affinity.py::test_apply_to_session_options
  tests/runtime/test_memlock.py::test_find_initializers_matches_onnx
  tests/runtime/test_memlock.py::test_read_vmlck
  # the daemon end to end: paho to a mosquitto in the chroot, PyAudio (built here) into ALSA capture
  "tests/daemon/test_daemon_mqtt.py::test_connects_and_announces[v311]"
  # seeded noise (issue 19): the generator's integer hash and Box-Muller on aarch64 onnxruntime
  tests/voice/test_seeded_noise.py::test_the_seeded_noise_is_standard_normal_and_independent
  tests/voice/test_seeded_noise.py::test_what_the_transform_cannot_seed_is_refused_clearly
  # streaming with fast start: the graph split made and checked on aarch64 kernels (~10 min emulated)
  tests/voice/test_streaming.py::test_fast_start_speaks_before_the_whole_sentence_is_encoded
)
# EDGETTS_AARCH64_FULL=1 adds these: each costs minutes to tens of minutes emulated (a graph
# split alone is ~10 s here, 10-20 min emulated), too slow for a routine run.
AARCH64_FULL_TESTS=(
  tests/voice/test_streaming.py::test_without_a_cache_the_split_is_made_in_memory
  tests/voice/test_streaming.py::test_fast_start_continues_exactly_and_joins_without_a_click
  tests/voice/test_streaming.py::test_split_cache_is_reused_and_rebuilt_when_corrupt
  tests/voice/test_model_cache.py::test_cached_model_speaks_exactly_like_the_original
  tests/voice/test_model_cache.py::test_corrupt_cache_entry_is_rebuilt
  tests/runtime/test_affinity.py::test_onnxruntime_workers_run_on_the_configured_cores
  tests/runtime/test_memlock.py::test_locked_weights_as_root_identical_output
  tests/daemon/test_daemon_process.py::test_announcement_pcm_sd_notify_and_clean_stop
)
SAY="Mind the gap."          # the zero-noise sentence compared with the host's
MAX_LSB=${EDGETTS_AARCH64_MAX_LSB:-8}  # "a few LSB": float kernels differ in the last bits

log() { printf '[aarch64 %4ds] %s\n' "$SECONDS" "$*" >&2; }
die() { log "FAILED: $*"; exit 1; }
[[ $(id -u) -eq 0 ]] || die "needs root (debootstrap, chroot, mounts): sudo bash $0"

# -- timings --------------------------------------------------------------------------
declare -a timings=()
stage_start=0
stage() { stage_start=$SECONDS; log "$*"; }
stage_done() { timings+=("$(printf '%5ds  %s' $((SECONDS - stage_start)) "$1")"); }
report_timings() {
  ((${#timings[@]})) || return 0
  echo "[aarch64] timings (QEMU_CPU=$QEMU_CPU):" >&2
  printf '  %s\n' "${timings[@]}" >&2
  printf '  %5ds  total\n' "$SECONDS" >&2
}

# -- mounts, undone by the trap -------------------------------------------------------
declare -a mounted=()
binfmt_mounted=0
track_mount() { mounted+=("$1"); }
kill_chroot_procs() {  # processes the chroot's tests left (a broker, a daemon): by pid, ours only
  local root=$1 pid link
  for pid in $(ls /proc | grep -E '^[0-9]+$'); do
    link=$(readlink "/proc/$pid/root" 2>/dev/null) || continue
    [[ "$link" == "$root" ]] && kill -9 "$pid" 2>/dev/null || true
  done
}
cleanup() {
  local rc=$? i
  set +e
  [[ -n "${active_root:-}" ]] && kill_chroot_procs "$active_root"
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
    umount "${mounted[$i]}" 2>/dev/null || umount -l "${mounted[$i]}" 2>/dev/null || log "could not unmount ${mounted[$i]}"
  done
  mounted=()
  if ((binfmt_mounted)); then umount /proc/sys/fs/binfmt_misc 2>/dev/null; fi
  report_timings
  ((rc == 0)) || log "FAILED (exit $rc)"
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

host_setup() {
  local need=() p
  for p in qemu-user-static binfmt-support debootstrap; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || need+=("$p")
  done
  if ((${#need[@]})); then
    log "apt-get install ${need[*]}"
    DEBIAN_FRONTEND=noninteractive apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
  fi
  # Containers often have binfmt_misc unmounted: without it the kernel cannot run arm64 binaries.
  if [[ ! -e /proc/sys/fs/binfmt_misc/register ]]; then
    mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc
    binfmt_mounted=1
  fi
  [[ -e /proc/sys/fs/binfmt_misc/qemu-aarch64 ]] || update-binfmts --enable qemu-aarch64
  grep -q enabled /proc/sys/fs/binfmt_misc/qemu-aarch64 || die "binfmt qemu-aarch64 not enabled"
}

mirror() {  # the host's Debian mirror (deb822 or one-line sources), else deb.debian.org
  local uri
  uri=$(grep -hsE '^URIs:' /etc/apt/sources.list.d/*.sources | awk '{print $2}' | grep -v security | head -1)
  [[ -n "$uri" ]] || uri=$(grep -hsE '^deb ' /etc/apt/sources.list | awk '{print $2}' | grep -v security | head -1)
  echo "${uri:-http://deb.debian.org/debian}"
}

# onnxruntime's cpuinfo library crashes on the host's x86 /proc/cpuinfo, which qemu-user
# passes through: the chroot sees what the board's kernel would show instead.
fake_cpuinfo() {
  local n i features part variant revision
  n=$(nproc)
  case "$QEMU_CPU" in
    cortex-a72) part=0xd08 variant=0x0 revision=3
      features="fp asimd evtstrm crc32 cpuid" ;;
    cortex-a76) part=0xd0b variant=0x4 revision=1
      features="fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm lrcpc dcpop asimddp" ;;
    *) die "EDGETTS_QEMU_CPU: cortex-a72 or cortex-a76, not $QEMU_CPU" ;;
  esac
  for ((i = 0; i < n; i++)); do
    printf 'processor\t: %d\nBogoMIPS\t: 108.00\nFeatures\t: %s\nCPU implementer\t: 0x41\n' "$i" "$features"
    printf 'CPU architecture: 8\nCPU variant\t: %s\nCPU part\t: %s\nCPU revision\t: %s\n\n' "$variant" "$part" "$revision"
  done
}

mount_chroot() {  # root workdir
  local root=$1 work=$2
  mount -t proc proc "$root/proc"; track_mount "$root/proc"
  fake_cpuinfo > "$work/cpuinfo"
  mount --bind "$work/cpuinfo" "$root/proc/cpuinfo"; track_mount "$root/proc/cpuinfo"
  mount --bind /sys "$root/sys"; track_mount "$root/sys"
  mount -o remount,bind,ro "$root/sys" 2>/dev/null || true
  mount --bind /dev "$root/dev"; track_mount "$root/dev"
  mount --bind /dev/pts "$root/dev/pts"; track_mount "$root/dev/pts"
  mount -t tmpfs -o mode=1777 tmpfs "$root/dev/shm"; track_mount "$root/dev/shm"
  mount -t tmpfs -o mode=1777 tmpfs "$root/tmp"; track_mount "$root/tmp"
  mkdir -p "$cache/aarch64-downloads/apt" "$cache/aarch64-downloads/pip" "$root/root/.cache/pip"
  # downloads survive a rebuild of the chroot (a new key): apt's .debs and pip's wheels
  mount --bind "$cache/aarch64-downloads/apt" "$root/var/cache/apt/archives"; track_mount "$root/var/cache/apt/archives"
  mount --bind "$cache/aarch64-downloads/pip" "$root/root/.cache/pip"; track_mount "$root/root/.cache/pip"
  cp -L /etc/resolv.conf "$root/etc/resolv.conf"
  active_root=$root
}

unmount_chroot() {
  local i
  kill_chroot_procs "$active_root"
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do umount "${mounted[$i]}" || umount -l "${mounted[$i]}"; done
  mounted=()
  active_root=""
}

# in_chroot ROOT CMD...: a clean environment (no host pip/python variables leak in)
in_chroot() {
  local root=$1; shift
  chroot "$root" /usr/bin/env -i PATH=/opt/edgetts/venv/bin:/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin \
    HOME=/root LANG=C.UTF-8 QEMU_CPU="$QEMU_CPU" ORT_DISABLE_TELEMETRY=1 \
    PIP_CERT=/etc/ssl/certs/ca-certificates.crt PIP_DISABLE_PIP_VERSION_CHECK=1 \
    DEBIAN_FRONTEND=noninteractive "$@"
}

copy_checkout() {  # the checkout's files (tracked and new, not ignored ones) into ROOT/src/edgetts
  local root=$1
  rm -rf "$root/src/edgetts"
  mkdir -p "$root/src/edgetts"
  if git -C "$here" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    (cd "$here" && git ls-files -z -co --exclude-standard \
      | tar --null -T - --ignore-failed-read -cf - 2>/dev/null) | tar -C "$root/src/edgetts" -xf -
  else
    tar -C "$here" --exclude='./.venv*' --exclude='./.git' -cf - . | tar -C "$root/src/edgetts" -xf -
  fi
}

test_pins() {  # the suite's pinned test packages the chosen tests need (not the x86-only peers)
  grep -E '^(pytest|hypothesis|piper-tts)([<>=!~ ]|$)' "$here/requirements-test.txt"
}

# -- the cached chroot ----------------------------------------------------------------
# Its key covers what decides its contents: the functions that build it, the install
# scripts and the package lists.  (Not the tests or the emulated CPU: either reuses it.)
cache_key() {
  {
    declare -f build_root in_chroot test_pins
    echo "$suite"
    cat "$here/scripts/install.sh" "$here/scripts/system-deps.sh" "$here/pyproject.toml"
    test_pins
  } | sha256sum | cut -c1-16
}

build_root() {  # DIR: debootstrap an arm64 Debian 12 and install edgetts' dependencies in it
  local dir=$1 root=$1/root.partial
  rm -rf "$root"
  mkdir -p "$root"
  debootstrap --arch=arm64 --foreign --variant=minbase --include=ca-certificates,python3 \
    "$suite" "$root" "$(mirror)" >"$dir/debootstrap.log" 2>&1 || { tail -20 "$dir/debootstrap.log" >&2; return 1; }
  cp /usr/bin/qemu-aarch64-static "$root/usr/bin/"
  chroot "$root" /usr/bin/env -i PATH=/usr/bin:/bin:/usr/sbin:/sbin QEMU_CPU="$QEMU_CPU" \
    /debootstrap/debootstrap --second-stage >>"$dir/debootstrap.log" 2>&1 || { tail -20 "$dir/debootstrap.log" >&2; return 1; }
  # The host may reach the network through a TLS-inspecting proxy: trust what the host trusts.
  if compgen -G "/usr/local/share/ca-certificates/*" >/dev/null; then
    cp -r /usr/local/share/ca-certificates/. "$root/usr/local/share/ca-certificates/"
  fi
  mount_chroot "$root" "$dir"
  in_chroot "$root" update-ca-certificates >/dev/null
  copy_checkout "$root"
  # What a board runs: apt packages and the venv with edgetts[daemon] (no systemd in a chroot)
  in_chroot "$root" /usr/bin/env EDGETTS_NO_SERVICE=1 bash /src/edgetts/scripts/install.sh
  test_pins > "$root/tmp/test-pins.txt"
  in_chroot "$root" /opt/edgetts/venv/bin/pip install -q -r /tmp/test-pins.txt
  unmount_chroot
}

main() {
  local key dir root started
  stage "host: qemu-user-static, binfmt"
  host_setup
  stage_done "host setup"
  key=$(cache_key)
  dir=$cache/aarch64-$key
  root=$dir/root
  mkdir -p "$dir"
  exec 9>"$cache/aarch64.lock"
  flock 9
  if [[ -f "$dir/stamp" && -d "$root" ]]; then
    log "reusing the chroot $root (key $key)"
  else
    stage "building the arm64 Debian 12 chroot (key $key): debootstrap, apt, pip"
    build_root "$dir"
    mv "$dir/root.partial" "$root"
    echo "$key" > "$dir/stamp"
    # earlier chroots (another key) are dead weight now
    for old in "$cache"/aarch64-*/stamp; do
      [[ "$(dirname "$old")" == "$dir" ]] || rm -rf "$(dirname "$old")"
    done
      stage_done "chroot build (cold)"
  fi
  mount_chroot "$root" "$dir"
  stage "install.sh from the checkout"
  copy_checkout "$root"
  in_chroot "$root" /usr/bin/env EDGETTS_NO_SERVICE=1 bash /src/edgetts/scripts/install.sh
  check_installed "$root"
  stage_done "install.sh (the board's install, deps cached)"
  stage "onnxruntime and the CPU as the chroot sees them"
  in_chroot "$root" /opt/edgetts/venv/bin/python -c "$ORT_REPORT" | tee "$dir/onnxruntime.txt" >&2
  stage_done "onnxruntime report"
  stage "CLI verbs"
  cli_verbs "$root"
  stage_done "CLI verbs (synth twice: model cache; quantize, int8 synth, say)"
  stage "zero-noise synthesis: aarch64 against this host"
  compare_with_host "$root"
  stage_done "host comparison"
  stage "seeded synthesis: aarch64 against this host"
  compare_seeded "$root"
  stage_done "seeded comparison"
  run_tests "$root"
}

ORT_REPORT='
import platform, onnxruntime as ort, numpy
feats = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("Features")), "?")
print(f"machine {platform.machine()}, python {platform.python_version()}, numpy {numpy.__version__}")
print(f"onnxruntime {ort.__version__}, providers {ort.get_available_providers()}, device {ort.get_device()}")
print(f"/proc/cpuinfo Features: {feats}")
'

check_installed() {  # the venv holds this checkout's edgetts, not the one the chroot was built with
  local root=$1
  in_chroot "$root" /bin/sh -c 'cd /tmp && python -c "import edgetts, os; print(os.path.dirname(edgetts.__file__))"' \
    > "$root/tmp/pkgdir"
  diff -r -q -x __pycache__ "$root/src/edgetts/edgetts" "$root$(cat "$root/tmp/pkgdir")" >&2 \
    || die "the installed edgetts is not the checkout's"
}

cli_verbs() {
  local root=$1 out=/tmp/cli
  mkdir -p "$root$out"
  # `edgetts say` through PyAudio (built from source here) into ALSA's file plugin: no sound card
  printf 'pcm.!default { type file slave.pcm null file "%s/say.raw" format raw }\npcm.null { type null }\n' \
    "$out" > "$root$out/asound.conf"
  in_chroot "$root" /bin/bash -euo pipefail -c "
    cd $out
    edgetts --version
    edgetts --help >/dev/null
    edgetts voices
    edgetts normalize 'The 9:42 to Edinburgh leaves from platform 2.'
    edgetts phonemes --ids '$SAY' > ids.json
    edgetts check-config /etc/edgetts/edgetts.yaml
    edgetts print-config > /dev/null
    export EDGETTS_CACHE_DIR=$out/cache  # a cold cache every run (/tmp is a tmpfs)
    edgetts synth '$SAY' --noise-scale 0 --noise-w 0 --threads 2 -o arm.wav
    ls cache/models/*.onnx  # the optimised graph for this CPU, written by the first load
    edgetts synth '$SAY' --noise-scale 0 --noise-w 0 --threads 2 -o arm-cached.wav
    cmp arm.wav arm-cached.wav  # loaded from the model cache: the same samples
    edgetts quantize -o joe-int8.onnx --force
    edgetts synth '$SAY' --voice joe-int8.onnx --noise-scale 0 --noise-w 0 --threads 2 -o arm-int8.wav
    ALSA_CONFIG_PATH=$out/asound.conf edgetts say '$SAY'
    test -s say.raw
  " >&2
}

host_python() {  # a host Python that imports this checkout's edgetts with its dependencies
  local venv
  if [[ -n "${EDGETTS_HOST_PYTHON:-}" ]]; then echo "$EDGETTS_HOST_PYTHON"; return; fi
  for venv in "$here/.venv-test" "$cache/aarch64-host-venv"; do
    if [[ -x "$venv/bin/python" ]] && PYTHONPATH=$here "$venv/bin/python" -c "import edgetts.cli.main, onnxruntime" 2>/dev/null
    then echo "$venv/bin/python"; return; fi
  done
  venv=$cache/aarch64-host-venv
  python3 -m venv "$venv" >&2
  "$venv/bin/pip" install -q --disable-pip-version-check "$here" 2>&1 | grep -v "is ignored: it is neither" >&2 || true
  echo "$venv/bin/python"
}

compare_with_host() {
  local root=$1 py work=$dir/compare
  py=$(host_python)
  rm -rf "$work" && mkdir -p "$work"
  (cd "$work" && export PYTHONPATH=$here ORT_DISABLE_TELEMETRY=1 EDGETTS_CACHE_DIR= &&
    "$py" -m edgetts.cli phonemes --ids "$SAY" > x86-ids.json &&
    "$py" -m edgetts.cli synth "$SAY" --noise-scale 0 --noise-w 0 --threads 2 -o x86.wav 2>/dev/null &&
    "$py" -m edgetts.cli quantize -o joe-int8.onnx --force >/dev/null 2>&1 &&
    "$py" -m edgetts.cli synth "$SAY" --voice joe-int8.onnx --noise-scale 0 --noise-w 0 --threads 2 \
      -o x86-int8.wav 2>/dev/null)
  cp "$root/tmp/cli/ids.json" "$work/arm-ids.json"
  cp "$root/tmp/cli/arm.wav" "$root/tmp/cli/arm-int8.wav" "$work/"
  cp "$root/tmp/cli/joe-int8.onnx" "$work/arm-joe-int8.onnx"
  "$py" - "$work" "$MAX_LSB" <<'PY' | tee "$dir/comparison.txt" >&2
import json, sys, wave
from pathlib import Path
import numpy as np
work, max_lsb = Path(sys.argv[1]), int(sys.argv[2])
def pcm(name):
    with wave.open(str(work / name)) as w:
        return np.frombuffer(w.readframes(w.getnframes()), "<i2").astype(np.int32)
ids_x86, ids_arm = (work / "x86-ids.json").read_text(), (work / "arm-ids.json").read_text()
n_ids = sum(len(json.loads(line)) for line in ids_x86.splitlines() if line.strip())
print(f"phoneme ids: {'identical' if ids_x86 == ids_arm else 'DIFFERENT'} ({n_ids} ids)")
ok = ids_x86 == ids_arm
same_model = (work / "joe-int8.onnx").read_bytes() == (work / "arm-joe-int8.onnx").read_bytes()
print(f"int8 model from `edgetts quantize`: {'byte-identical' if same_model else 'DIFFERENT'} on both")
for kind, x86, arm in (("fp32", "x86.wav", "arm.wav"), ("int8", "x86-int8.wav", "arm-int8.wav")):
    a, b = pcm(x86), pcm(arm)
    if a.size != b.size:
        print(f"{kind} audio: lengths differ: x86 {a.size}, aarch64 {b.size} samples")
        ok = ok and kind == "int8"  # int8 is reported, not judged: its kernels differ by design
        continue
    d = np.abs(a - b)
    print(f"{kind} audio: {a.size} samples, max |x86 - aarch64| = {d.max()} LSB, {int((d > 0).sum())} samples differ,"
          f" peak {np.abs(b).max()}")
    if kind == "fp32":
        ok = ok and d.max() <= max_lsb
    ok = ok and np.abs(b).max() > 1000  # speech, not silence
print("comparison:", "PASS" if ok else "FAIL", f"(fp32 within {max_lsb} LSB and ids identical)")
sys.exit(0 if ok else 1)
PY
}

compare_seeded() {  # the same seeded sentences on both: sample counts, max and RMS difference (LSB)
  local root=$1 py work=$dir/compare
  py=$(host_python)
  mkdir -p "$work"
  # the checkout on PYTHONPATH: `-m tools.seeded_pcm` and the checkout's edgetts, whatever the cwd
  PYTHONPATH=$here ORT_DISABLE_TELEMETRY=1 "$py" -m tools.seeded_pcm make "$work/seeded-x86.npz" --threads 2
  in_chroot "$root" /bin/sh -c 'cd /tmp && PYTHONPATH=/src/edgetts python -m tools.seeded_pcm make /tmp/seeded-arm.npz --threads 2'
  cp "$root/tmp/seeded-arm.npz" "$work/"
  PYTHONPATH=$here "$py" -m tools.seeded_pcm compare "$work/seeded-x86.npz" "$work/seeded-arm.npz" \
    --json "$dir/seeded-comparison.json" >&2
}

run_tests() {
  local root=$1 tests=("${AARCH64_TESTS[@]}")
  [[ "${EDGETTS_AARCH64_FULL:-0}" == 1 ]] && tests+=("${AARCH64_FULL_TESTS[@]}")
  [[ -n "${EDGETTS_AARCH64_TESTS:-}" ]] && read -r -a tests <<< "$EDGETTS_AARCH64_TESTS"
  stage "pytest inside the chroot: ${#tests[@]} node ids"
  in_chroot "$root" /bin/sh -c 'cd /src/edgetts && exec python -m pytest -q -p no:cacheprovider --durations=15 "$@"' \
    pytest "${tests[@]}" >&2
  stage_done "pytest (${#tests[@]} node ids)"
}

main "$@"; exit  # on one line: bash never reads past it, even if this file is edited meanwhile
