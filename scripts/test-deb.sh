#!/usr/bin/env bash
# Build and test the Debian packages (docs/packaging.md): builds edgetts_<version>_amd64.deb and
# _arm64.deb (scripts/build-deb.sh), runs lintian on both, then for each installs it with apt into a
# FRESH minbase Debian 12 root (apt resolves the dependencies from Debian's packages; arm64 under
# qemu-user-static) and checks: the files, the user, `edgetts check-config`, `edgetts synth` as the
# service's user (tests/packaging/test_deb.py hears the words), an upgrade keeping an edited
# config, the state, voices and clips, `apt remove` (config kept) and `apt purge` (config, state
# and user gone).  Then it boots a Debian 12 container with systemd as PID 1 (systemd-nspawn) and
# checks the service under it (docs/testing.md, "The Debian package"): enabled and started by the
# install, active only after READY=1, an announcement spoken into ALSA's file plugin, reload with a
# good and a bad edit, the watchdog, a clean stop, `systemd-analyze security`, upgrade, remove, purge.
#
#   sudo bash scripts/test-deb.sh          # or: scripts/test.sh --deb
#
# Needs root and the network.  Knobs (env):
#   EDGETTS_DEB_ARCHES    "amd64 arm64" (default) or one of them
#   EDGETTS_DEB_PREBUILT  a folder with the .debs to test instead of building them
#   EDGETTS_DEB_BOOT      auto (default: skipped with the reason when the container cannot boot),
#                         1 (a container that does not boot fails the run), 0 (not tried)
#   EDGETTS_HOST_PYTHON   the Python that runs tests/packaging/test_deb.py (default .venv-test)
#   EDGETTS_AARCH64_CACHE cache root (default /var/cache/edgetts); the work is in its deb-test/
# Every mount is undone on exit, every process it started is ended; each failed check is named.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
renice -n 10 $$ >/dev/null  # emulated work shares the machine's cores: everything below inherits it
cache=${EDGETTS_AARCH64_CACHE:-/var/cache/edgetts}
work=$cache/deb-test
results=$work/results
read -r -a arches <<< "${EDGETTS_DEB_ARCHES:-amd64 arm64}"
boot_mode=${EDGETTS_DEB_BOOT:-auto}
SENTENCE="Mind the gap between the train and the platform."  # tests/packaging/test_deb.py hears it

log() { printf '[deb %4ds] %s\n' "$SECONDS" "$*" >&2; }
die() { log "FAILED: $*"; exit 1; }
declare -a failures=()
fail() { failures+=("$1"); log "FAIL: $1"; }
# expect "WHAT" CMD...: runs CMD; a failure is recorded under WHAT (with CMD's output), the run goes on
expect() {
  local what=$1 out; shift
  if out=$("$@" 2>&1); then log "ok: $what"; else fail "$what: $(tail -5 <<<"$out" | tr '\n' ' ')"; fi
}
fact() { printf '%s\n' "$*" >> "$results/facts.txt"; log "$*"; }
# figure KEY VALUE: a measured number for benchmarks/results/deb_package.json (tools/deb_figures.py)
figure() { printf '%s\t%s\n' "$1" "$2" >> "$results/figures.tsv"; }

source "$here/scripts/chroot-lib.sh"
nspawn_pid=""
cleanup() {
  local rc=$?
  set +e
  stop_container
  chroot_cleanup
  ((rc == 0)) || log "FAILED (exit $rc)"
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM
source "$here/packaging/deb/test-boot.sh"

# -- building ---------------------------------------------------------------------------
build_debs() {
  local arch deb
  mkdir -p "$work/debs"
  for arch in "${arches[@]}"; do
    if [[ -n "${EDGETTS_DEB_PREBUILT:-}" ]]; then
      deb=$(ls "$EDGETTS_DEB_PREBUILT"/edgetts_*_"$arch".deb | tail -1) || die "no $arch .deb in $EDGETTS_DEB_PREBUILT"
    else
      log "building the $arch package"
      local t0=$SECONDS
      deb=$(bash "$here/scripts/build-deb.sh" --arch "$arch" -o "$work/debs" | tail -1)
      fact "$arch build: $((SECONDS - t0)) s"
      figure "$arch.build_s" "$((SECONDS - t0))"
    fi
    [[ -f "$deb" ]] || die "build-deb.sh --arch $arch made no package"
    debs[$arch]=$deb
    upgrades[$arch]=$(repack_higher "$deb")
    fact "$arch package: $(basename "$deb"), $(stat -c %s "$deb") bytes ($(du -h "$deb" | cut -f1)), Installed-Size $(dpkg-deb -f "$deb" Installed-Size) KiB"
    figure "$arch.deb_mb" "$(awk -v b="$(stat -c %s "$deb")" 'BEGIN { printf "%.1f", b / 1048576 }')"
    figure "$arch.installed_mb" "$(awk -v k="$(dpkg-deb -f "$deb" Installed-Size)" 'BEGIN { printf "%.1f", k / 1024 }')"
  done
}

repack_higher() {  # DEB: the same package as version <v>+upgradetest1 (an upgrade of itself), printed
  local deb=$1 tmp out version
  tmp=$work/repack
  rm -rf "$tmp" && mkdir -p "$tmp" "$work/debs/upgrade"
  dpkg-deb -R "$deb" "$tmp/tree"
  version=$(dpkg-deb -f "$deb" Version)+upgradetest1
  sed -i "s/^Version: .*/Version: $version/" "$tmp/tree/DEBIAN/control"
  out=$work/debs/upgrade/edgetts_${version}_$(dpkg-deb -f "$deb" Architecture).deb
  dpkg-deb --root-owner-group -Znone --build "$tmp/tree" "$out" >/dev/null
  rm -rf "$tmp"
  echo "$out"
}

run_lintian() {
  local arch out
  for arch in "${arches[@]}"; do
    out=$results/lintian-$arch.txt
    # (with --show-overrides, lintian 2.116 exits 2 on overridden errors: the verdict is the E:/W: lines)
    lintian -I --show-overrides --fail-on none "${debs[$arch]}" > "$out" 2>&1 || fail "lintian $arch could not run: $(tail -3 "$out")"
    if ! grep -qE '^(E|W): ' "$out"; then
      log "ok: lintian $arch: no error or warning ($(grep -c '^O: ' "$out" || true) overridden, $(grep -c '^I: ' "$out" || true) info; $out)"
    else
      fail "lintian $arch: $(grep -E '^(E|W): ' "$out" | cut -d' ' -f2- | sort | uniq -c | head -20 | tr '\n' ';')"
    fi
  done
}

# -- a fresh Debian 12: install, synth, upgrade, remove, purge --------------------------
# in_root CMD...: in the fresh root being tested; root_sh 'SCRIPT': a bash script there
in_root() { in_chroot "$troot" "$@"; }
root_sh() { in_chroot "$troot" /bin/bash -c "$1"; }
file_md5() { md5sum < "$troot$1" | cut -d' ' -f1; }
seconds_since() { awk -v t0="$1" -v t1="$EPOCHREALTIME" 'BEGIN { printf "%.1f", t1 - t0 }'; }

install_and_check() {  # ARCH
  local arch=$1 deb t0 cached status
  deb=/root/debs/$(basename "${debs[$arch]}")
  cached=$(find "$(downloads_dir "$arch")/apt" -name '*.deb' 2>/dev/null | wc -l)
  in_root apt-get update -qq
  t0=$EPOCHREALTIME
  expect "$arch: apt install ./$(basename "$deb") resolves its dependencies from Debian" in_root apt-get install -y -q "$deb"
  fact "$arch apt install: $(seconds_since "$t0") s (with $cached .debs already in apt's cache)"
  figure "$arch.apt_install_s" "$(seconds_since "$t0")"
  figure "$arch.apt_cache_debs" "$cached"
  status=$(in_root dpkg-query -W -f='${Status} ${Version}' edgetts 2>&1 || true)
  [[ "$status" == "install ok installed "* ]] || { fail "$arch: edgetts is not installed ($status)"; return 1; }
  expect "$arch: /usr/bin/edgetts -> /opt/edgetts/bin/edgetts" test "$(readlink "$troot/usr/bin/edgetts")" = /opt/edgetts/bin/edgetts
  expect "$arch: edgetts --version says $pep440" root_sh "edgetts --version | grep -qF '$pep440'"
  expect "$arch: the system user edgetts, in group audio" root_sh 'id -nG edgetts | grep -qw audio'
  expect "$arch: the edgetts user has no login shell" root_sh 'getent passwd edgetts | grep -q ":/usr/sbin/nologin$"'
  expect "$arch: /etc/edgetts/edgetts.yaml is a conffile" \
    root_sh "dpkg-query -W -f='\${Conffiles}' edgetts | grep -q '/etc/edgetts/edgetts.yaml'"
  expect "$arch: /etc/edgetts/edgetts.yaml is config/edgetts.yaml" cmp "$here/config/edgetts.yaml" "$troot/etc/edgetts/edgetts.yaml"
  expect "$arch: the unit starts /usr/bin/edgetts" grep -qx 'ExecStart=/usr/bin/edgetts run --config /etc/edgetts/edgetts.yaml' \
    "$troot/lib/systemd/system/edgetts.service"
  expect "$arch: the unit is enabled (for the next boot: no systemd runs in a chroot)" \
    test -L "$troot/etc/systemd/system/multi-user.target.wants/edgetts.service"
  expect "$arch: postinst compiled the venv's bytecode" root_sh 'find /opt/edgetts/lib -name "*.pyc" | grep -q .'
  expect "$arch: no compiler and no -dev package came with it" \
    root_sh "! dpkg-query -W -f='\${Package} \${Status}\n' | grep -E '^(gcc|cpp|[^ ]*-dev) .*install ok installed'"
}

refuses_bad_config() {  # a bad config: exit 1 and FILE:LINE key
  local out rc=0
  printf 'queue:\n  max_lenght: 3\n' > "$troot/tmp/bad.yaml"
  out=$(in_root edgetts check-config /tmp/bad.yaml 2>&1) || rc=$?
  ((rc == 1)) && grep -q '/tmp/bad.yaml:2.*max_lenght' <<<"$out" || { echo "exit $rc: $out"; return 1; }
}

cli_checks() {  # ARCH: the verbs, as root and as the service's user
  local arch=$1 out=$results/$1
  mkdir -p "$out"
  expect "$arch: edgetts check-config on the packaged config" in_root edgetts check-config /etc/edgetts/edgetts.yaml
  expect "$arch: edgetts check-config names file, line and key of a bad config" refuses_bad_config
  # as the service's user: the venv must be readable and runnable by it
  expect "$arch: edgetts synth as user edgetts" in_root runuser -u edgetts -- /usr/bin/env EDGETTS_CACHE_DIR=/tmp/cache \
    edgetts synth "$SENTENCE" -o /tmp/synth.wav
  cp "$troot/tmp/synth.wav" "$out/synth.wav" 2>/dev/null || fail "$arch: edgetts synth wrote no WAV"
}

upgrade_remove_purge() {  # ARCH
  local arch=$1 up edited state
  up=/root/debs/$(basename "${upgrades[$arch]}")
  # an edited config, installed voices and clips, the state and the cache: all must survive
  sed -i 's/^  max_length: 32 /  max_length: 31 /' "$troot/etc/edgetts/edgetts.yaml"
  echo "# edited on this site" >> "$troot/etc/edgetts/edgetts.yaml"
  mkdir -p "$troot"/var/lib/edgetts/{voices,clips} "$troot/var/cache/edgetts/models"
  echo voice > "$troot/var/lib/edgetts/voices/site-voice.onnx"
  echo clip > "$troot/var/lib/edgetts/clips/chime.wav"
  echo dedup > "$troot/var/lib/edgetts/dedup.jsonl"
  echo model > "$troot/var/cache/edgetts/models/m.onnx"
  edited=$(file_md5 /etc/edgetts/edgetts.yaml)
  state=$(cd "$troot" && md5sum var/lib/edgetts/voices/* var/lib/edgetts/clips/* var/lib/edgetts/dedup.jsonl var/cache/edgetts/models/*)
  expect "$arch: upgrade to $(basename "$up")" in_root apt-get install -y -q "$up"
  expect "$arch: upgraded" root_sh "dpkg-query -W -f='\${Version}' edgetts | grep -q upgradetest1"
  expect "$arch: the upgrade kept the edited config" test "$(file_md5 /etc/edgetts/edgetts.yaml)" = "$edited"
  expect "$arch: the upgrade left no .dpkg-new/.dpkg-dist" bash -c "! ls '$troot/etc/edgetts/' | grep dpkg"
  expect "$arch: the upgrade kept voices, clips, state and cache" bash -c "cd '$troot' && md5sum -c --quiet - <<<'$state'"
  expect "$arch: edgetts check-config on the edited config after the upgrade" in_root edgetts check-config /etc/edgetts/edgetts.yaml
  expect "$arch: apt remove" in_root apt-get remove -y -q edgetts
  expect "$arch: remove leaves only the config (dpkg: config-files)" \
    root_sh "dpkg-query -W -f='\${Status}' edgetts | grep -q config-files"
  expect "$arch: remove took /opt/edgetts and /usr/bin/edgetts" bash -c "! test -e '$troot/opt/edgetts' && ! test -L '$troot/usr/bin/edgetts'"
  expect "$arch: remove kept the edited config" test "$(file_md5 /etc/edgetts/edgetts.yaml)" = "$edited"
  expect "$arch: remove kept the user and the state" bash -c "chroot '$troot' getent passwd edgetts && test -s '$troot/var/lib/edgetts/dedup.jsonl'"
  expect "$arch: apt purge" in_root apt-get purge -y -q edgetts
  expect "$arch: purge removed the package" root_sh "! dpkg-query -W -f='\${Status}' edgetts 2>/dev/null | grep -q installed"
  expect "$arch: purge removed /etc/edgetts, /var/lib/edgetts, /var/cache/edgetts" \
    bash -c "! test -e '$troot/etc/edgetts' && ! test -e '$troot/var/lib/edgetts' && ! test -e '$troot/var/cache/edgetts'"
  expect "$arch: purge removed the user and the group" root_sh '! getent passwd edgetts && ! getent group edgetts'
  expect "$arch: purge removed the unit's enable link" test ! -e "$troot/etc/systemd/system/multi-user.target.wants/edgetts.service"
}

downloads_dir() { if [[ "$1" == arm64 ]]; then echo "$cache/aarch64-downloads"; else echo "$cache/$1-downloads"; fi; }

test_in_fresh_root() {  # ARCH
  local arch=$1 n_before=${#failures[@]}
  troot=$work/root-$arch
  log "$arch: a fresh Debian 12 root"
  fresh_root "$arch" "$troot"
  mkdir -p "$work/$arch"
  mount_chroot "$troot" "$work/$arch"
  mkdir -p "$troot/root/debs"
  cp "${debs[$arch]}" "${upgrades[$arch]}" "$troot/root/debs/"
  if install_and_check "$arch"; then
    cli_checks "$arch"
    upgrade_remove_purge "$arch"
  fi
  unmount_chroot
  if ((${#failures[@]} == n_before)); then rm -rf "$troot"; else log "$arch: the root is kept for a look: $troot"; fi
}

hear() {  # the words in what was synthesized and played: tests/packaging/test_deb.py
  local py=${EDGETTS_HOST_PYTHON:-$here/.venv-test/bin/python}
  [[ -x "$py" ]] || { fail "no host Python with pytest and pocketsphinx ($py): set EDGETTS_HOST_PYTHON"; return; }
  echo "$SENTENCE" > "$results/sentence.txt"
  printf '%s\n' "${arches[@]}" > "$results/arches.txt"
  (cd "$here" && EDGETTS_DEB_RESULTS=$results "$py" -m pytest -q -p no:cacheprovider tests/packaging/test_deb.py >&2) \
    || fail "tests/packaging/test_deb.py: the words in a synth or in the announcement played (its output above)"
}

main() {
  local arch
  declare -gA debs=() upgrades=()
  [[ $(id -u) -eq 0 ]] || die "needs root (debootstrap, chroot, mounts, systemd-nspawn): sudo bash $0"
  pep440=$(bash "$here/scripts/build-deb.sh" --print-version)
  rm -rf "$results" && mkdir -p "$results"
  local host_arch=amd64
  [[ " ${arches[*]} " == *" arm64 "* ]] && host_arch=arm64
  chroot_host_setup "$host_arch" lintian systemd-container
  build_debs
  run_lintian
  for arch in "${arches[@]}"; do test_in_fresh_root "$arch"; done
  if [[ "$boot_mode" != 0 && -n "${debs[amd64]:-}" ]]; then test_booted; fi
  hear
  if [[ -s "$results/figures.tsv" ]]; then
    (cd "$here" && "${EDGETTS_HOST_PYTHON:-$here/.venv-test/bin/python}" -m tools.deb_figures "$results/figures.tsv") \
      && log "figures: benchmarks/results/deb_package.json (python -m tools.report renders them)" \
      || fail "tools/deb_figures.py could not write benchmarks/results/deb_package.json"
  fi
  log "facts ($results/facts.txt):"
  sed 's/^/  /' "$results/facts.txt" >&2
  if ((${#failures[@]})); then
    log "${#failures[@]} check(s) failed:"
    printf '  - %s\n' "${failures[@]}" >&2
    exit 1
  fi
  log "all checks passed"
}

main "$@"; exit
