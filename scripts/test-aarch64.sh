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
#   EDGETTS_AARCH64_QUANT=0 skips the static int8 check (its calibration takes many minutes emulated)
#   EDGETTS_HOST_PYTHON    the host Python with edgetts' deps for the reference synthesis
#                          (default: .venv-test, else a venv made in the cache)
# Emulation says nothing about speed (a short sentence takes ~15 s here): only correctness.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
renice -n 10 $$ >/dev/null  # emulated work shares the machine's cores: everything below inherits it
export QEMU_CPU=${EDGETTS_QEMU_CPU:-cortex-a76}
cache=${EDGETTS_AARCH64_CACHE:-/var/cache/edgetts}

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
  # voice.accelerator: npu with the board's runtime (rknn-toolkit-lite2) and no NPU: the daemon starts,
  # says `degraded: npu` in the runtime's own words, and speaks on the CPU (issue 41)
  tests/voice/test_npu.py::test_the_daemon_reports_degraded_npu_with_the_runtime_s_reason_and_speaks_on_the_cpu
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

# The chroot's mounts, debootstrap, qemu and the cached arm64 root: shared with scripts/build-deb.sh.
source "$here/scripts/chroot-lib.sh"
cleanup() {
  local rc=$?
  set +e
  chroot_cleanup
  report_timings
  ((rc == 0)) || log "FAILED (exit $rc)"
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

main() {
  local dir root
  stage "host: qemu-user-static, binfmt"
  chroot_host_setup arm64
  stage_done "host setup"
  stage "the arm64 Debian 12 chroot"
  aarch64_chroot
  dir=$AARCH64_DIR
  root=$AARCH64_ROOT
  stage_done "arm64 chroot (built only when its key changed)"
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
  if [[ "${EDGETTS_AARCH64_QUANT:-1}" != 0 ]]; then
    stage "the static int8 variant on aarch64: its int8 kernels and the quality gate"
    quant_check "$root"
    stage_done "int8 check"
  fi
  stage "rknn-toolkit-lite2 (the NPU's runtime) into the venv"
  npu_runtime "$root"
  stage_done "NPU runtime"
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

quant_check() {  # the static int8 variant (made here with ARM's int8 activations) profiled and spoken there
  local root=$1 py work=$dir/quant
  py=$(host_python)
  rm -rf "$work" && mkdir -p "$work" "$root/tmp/quant"
  (cd "$work" && PYTHONPATH=$here ORT_DISABLE_TELEMETRY=1 EDGETTS_CACHE_DIR= \
    "$py" -m edgetts.cli quantize --static --activations int8 -o joe-static.onnx 2>quantize.log >/dev/null) \
    || die "quantize --static: $(tail -1 "$work/quantize.log")"
  cp "$work/joe-static.onnx" "$work/joe-static.onnx.json" "$root/tmp/quant/"
  in_chroot "$root" /bin/sh -c 'cd /src/edgetts && python -m tools.quant_arm speak /tmp/quant/arm.npz \
    --variant /tmp/quant/joe-static.onnx' >&2
  cp "$root/tmp/quant/arm.npz" "$work/"
  PYTHONPATH=$here "$py" -m tools.quant_arm judge "$work/arm.npz" --json "$dir/quant-aarch64.json" >&2 \
    || die "the int8 variant on aarch64: int8 kernels not run or the gate failed ($dir/quant-aarch64.json)"
}

npu_runtime() {  # what a board adds for its NPU (docs/npu.md): the runtime's wheel, here without a driver
  local root=$1
  in_chroot "$root" /opt/edgetts/venv/bin/pip install -q "rknn-toolkit-lite2==2.5.0" >&2
  in_chroot "$root" /opt/edgetts/venv/bin/python -c "import rknnlite.api" >&2
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
