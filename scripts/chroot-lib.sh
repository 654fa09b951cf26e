# Debian 12 chroots, shared by the scripts that put edgetts into one (sourced, not run):
#   scripts/test-aarch64.sh  tests in the cached arm64 chroot (aarch64_chroot below)
#   scripts/build-deb.sh     builds the Debian package in that chroot (arm64) or its amd64 twin
#   scripts/test-deb.sh      installs the package into fresh roots (debian_base below)
# The caller sets `here` (the checkout) and `cache` (the cache root, /var/cache/edgetts by default),
# defines log() and die(), and calls chroot_cleanup from its EXIT trap: every mount made here is
# undone there, failed or not.  Foreign (arm64) roots run under qemu-user-static.
# shellcheck shell=bash

CHROOT_SUITE=bookworm
export QEMU_CPU=${EDGETTS_QEMU_CPU:-${QEMU_CPU:-cortex-a76}}

# -- mounts, undone by chroot_cleanup -------------------------------------------------
declare -a mounted=()
active_root=""
track_mount() { mounted+=("$1"); }
kill_chroot_procs() {  # processes a chroot's commands left (a broker, a daemon): by pid, ours only
  local root=$1 pid link
  for pid in $(ls /proc | grep -E '^[0-9]+$'); do
    link=$(readlink "/proc/$pid/root" 2>/dev/null) || continue
    [[ "$link" == "$root" ]] && kill -9 "$pid" 2>/dev/null || true
  done
}
chroot_cleanup() {  # from the caller's EXIT trap: never fails
  local i
  [[ -n "${active_root:-}" ]] && kill_chroot_procs "$active_root"
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
    umount "${mounted[$i]}" 2>/dev/null || umount -l "${mounted[$i]}" 2>/dev/null || log "could not unmount ${mounted[$i]}"
  done
  mounted=()
  # binfmt_misc stays mounted (as a booted system has it): another script's arm64 chroot (the
  # package build, the aarch64 check) may be running under qemu and would lose it mid-command.
  return 0
}

apt_host_install() {  # PKG...: the host's apt packages that are missing
  local need=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || need+=("$p")
  done
  ((${#need[@]})) || return 0
  log "apt-get install ${need[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
}

chroot_host_setup() {  # ARCH [PKG...]: debootstrap, and qemu-user-static with binfmt for arm64
  local arch=$1; shift
  if [[ "$arch" == arm64 && "$(dpkg --print-architecture)" != arm64 ]]; then
    apt_host_install qemu-user-static binfmt-support debootstrap "$@"
    ensure_binfmt
  else
    apt_host_install debootstrap "$@"
  fi
}

ensure_binfmt() {
  # Containers often have binfmt_misc unmounted: without it the kernel cannot run arm64 binaries.
  if [[ ! -e /proc/sys/fs/binfmt_misc/register ]]; then
    mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc
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
# passes through: an arm64 chroot sees what the board's kernel would show instead.
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

root_arch() {  # ROOT: the Debian architecture of a debootstrapped root
  if [[ -e "$1/usr/bin/qemu-aarch64-static" ]]; then echo arm64; else echo amd64; fi
}

mount_chroot() {  # ROOT WORKDIR: proc (a fake arm64 cpuinfo), sys, dev, tmpfs /tmp, download caches
  local root=$1 work=$2 arch downloads
  arch=$(root_arch "$root")
  # apt's .debs and pip's wheels survive a rebuild of the chroot (a new key)
  downloads=$cache/aarch64-downloads
  [[ "$arch" == arm64 ]] || downloads=$cache/$arch-downloads
  mount -t proc proc "$root/proc"; track_mount "$root/proc"
  if [[ "$arch" == arm64 ]]; then
    fake_cpuinfo > "$work/cpuinfo"
    mount --bind "$work/cpuinfo" "$root/proc/cpuinfo"; track_mount "$root/proc/cpuinfo"
  fi
  mount --bind /sys "$root/sys"; track_mount "$root/sys"
  mount -o remount,bind,ro "$root/sys" 2>/dev/null || true
  mount --bind /dev "$root/dev"; track_mount "$root/dev"
  mount --bind /dev/pts "$root/dev/pts"; track_mount "$root/dev/pts"
  mount -t tmpfs -o mode=1777 tmpfs "$root/dev/shm"; track_mount "$root/dev/shm"
  mount -t tmpfs -o mode=1777 tmpfs "$root/tmp"; track_mount "$root/tmp"
  mkdir -p "$downloads/apt" "$downloads/pip" "$root/root/.cache/pip"
  mount --bind "$downloads/apt" "$root/var/cache/apt/archives"; track_mount "$root/var/cache/apt/archives"
  mount --bind "$downloads/pip" "$root/root/.cache/pip"; track_mount "$root/root/.cache/pip"
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

# debootstrap_root ARCH ROOT LOG [PKG,...]: a minbase Debian 12 (two stages under qemu for arm64),
# trusting what the host trusts (the network may pass a TLS-inspecting proxy).
debootstrap_root() {
  local arch=$1 root=$2 log=$3 include=${4:-ca-certificates,python3}
  rm -rf "$root"
  mkdir -p "$root"
  if [[ "$arch" == "$(dpkg --print-architecture)" ]]; then
    debootstrap --arch="$arch" --variant=minbase --include="$include" \
      "$CHROOT_SUITE" "$root" "$(mirror)" >"$log" 2>&1 || { tail -20 "$log" >&2; return 1; }
  else
    debootstrap --arch="$arch" --foreign --variant=minbase --include="$include" \
      "$CHROOT_SUITE" "$root" "$(mirror)" >"$log" 2>&1 || { tail -20 "$log" >&2; return 1; }
    cp /usr/bin/qemu-aarch64-static "$root/usr/bin/"
    chroot "$root" /usr/bin/env -i PATH=/usr/bin:/bin:/usr/sbin:/sbin QEMU_CPU="$QEMU_CPU" \
      /debootstrap/debootstrap --second-stage >>"$log" 2>&1 || { tail -20 "$log" >&2; return 1; }
  fi
  if compgen -G "/usr/local/share/ca-certificates/*" >/dev/null && [[ -d "$root/usr/local/share/ca-certificates" ]]; then
    cp -r /usr/local/share/ca-certificates/. "$root/usr/local/share/ca-certificates/"
  fi
}

# -- the arm64 chroot of the aarch64 check (and the arm64 package's build) ------------
test_pins() {  # the suite's pinned test packages the aarch64 tests need (not the x86-only peers)
  grep -E '^(pytest|hypothesis|piper-tts)([<>=!~ ]|$)' "$here/requirements-test.txt"
}

aarch64_build_root() {  # DIR: debootstrap an arm64 Debian 12 and install edgetts' dependencies in it
  local dir=$1 root=$1/root.partial
  debootstrap_root arm64 "$root" "$dir/debootstrap.log"
  mount_chroot "$root" "$dir"
  in_chroot "$root" update-ca-certificates >/dev/null
  copy_checkout "$root"
  # What a board runs: apt packages and the venv with edgetts[daemon] (no systemd in a chroot)
  in_chroot "$root" /usr/bin/env EDGETTS_NO_SERVICE=1 bash /src/edgetts/scripts/install.sh
  test_pins > "$root/tmp/test-pins.txt"
  in_chroot "$root" /opt/edgetts/venv/bin/pip install -q -r /tmp/test-pins.txt
  # dpkg-shlibdeps for scripts/build-deb.sh: the package's Depends from its ELF files
  in_chroot "$root" apt-get install -y -qq --no-install-recommends dpkg-dev >/dev/null
  unmount_chroot
}

# Its key covers what decides its contents: the functions that build it, the install
# scripts and the package lists.  (Not the tests or the emulated CPU: either reuses it.)
aarch64_cache_key() {
  {
    declare -f aarch64_build_root debootstrap_root in_chroot test_pins
    echo "$CHROOT_SUITE"
    cat "$here/scripts/install.sh" "$here/scripts/system-deps.sh" "$here/pyproject.toml"
    test_pins
  } | sha256sum | cut -c1-16
}

# aarch64_chroot: the cached arm64 chroot, built when missing; sets AARCH64_DIR and AARCH64_ROOT
# and holds its lock (fd 9) until the caller exits: one user of the chroot at a time.
aarch64_chroot() {
  local key old
  key=$(aarch64_cache_key)
  AARCH64_DIR=$cache/aarch64-$key
  AARCH64_ROOT=$AARCH64_DIR/root
  mkdir -p "$AARCH64_DIR"
  exec 9>"$cache/aarch64.lock"
  flock 9
  ensure_binfmt  # again: a script that held the lock may have unmounted it on its way out
  if [[ -f "$AARCH64_DIR/stamp" && -d "$AARCH64_ROOT" ]]; then
    log "reusing the chroot $AARCH64_ROOT (key $key)"
    return 0
  fi
  log "building the arm64 Debian 12 chroot (key $key): debootstrap, apt, pip"
  aarch64_build_root "$AARCH64_DIR"
  mv "$AARCH64_DIR/root.partial" "$AARCH64_ROOT"
  echo "$key" > "$AARCH64_DIR/stamp"
  # earlier chroots (another key) are dead weight now
  for old in "$cache"/aarch64-*/stamp; do
    [[ "$(dirname "$old")" == "$AARCH64_DIR" ]] || rm -rf "$(dirname "$old")"
  done
}

# -- pristine roots for installing the package ------------------------------------------
# debian_base ARCH: a tarball of a minbase Debian 12 as debootstrap leaves it (cached; made once),
# printed on stdout; fresh_root ARCH DIR unpacks a new copy of it.
debian_base() {
  local arch=$1 key tar
  key=$({ declare -f debootstrap_root debian_base; echo "$CHROOT_SUITE $arch"; } | sha256sum | cut -c1-12)
  tar=$cache/debian12-$arch-base-$key.tar
  if [[ ! -f "$tar" ]]; then
    log "debootstrap a pristine $arch Debian 12 (once, cached as $tar)"
    debootstrap_root "$arch" "$cache/debian12-$arch-base.partial" "$cache/debian12-$arch-base.log" ca-certificates
    rm -f "$cache/debian12-$arch-base.partial/etc/resolv.conf"
    tar -C "$cache/debian12-$arch-base.partial" --numeric-owner -cf "$tar.partial" .
    mv "$tar.partial" "$tar"
    rm -rf "$cache/debian12-$arch-base.partial"
  fi
  echo "$tar"
}

fresh_root() {  # ARCH DIR
  local tar
  tar=$(debian_base "$1")
  rm -rf "$2"
  mkdir -p "$2"
  tar -C "$2" --numeric-owner -xf "$tar"
}
