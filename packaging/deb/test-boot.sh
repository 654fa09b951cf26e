# The amd64 package under a real systemd: a Debian 12 container booted by systemd-nspawn with
# systemd as its PID 1 (sourced by scripts/test-deb.sh, which defines log, fail, expect, fact, the
# chroot functions and debs/upgrades/results/work/cache/boot_mode).  Commands run in the container
# through nsenter into its namespaces (machinectl needs a systemd on the host, which this machine
# kind does not run).  The container has its own network namespace (loopback only): mosquitto and
# the daemon talk over its 127.0.0.1, apt takes the packages from the cache bound in.
# shellcheck shell=bash

BOOT_MACHINE=edgetts-boot
BOOT_ASOUND='pcm.!default {
    type file
    slave.pcm "null"
    file "/var/lib/edgetts/capture.raw"
    format "raw"
    truncate false
    perm 0600
}
pcm.null {
    type null
}'

leader=""
cexec() { nsenter --target "$leader" --all -r -w /usr/bin/env -i LANG=C.UTF-8 SYSTEMD_PAGER= SYSTEMD_COLORS=0 \
  DEBIAN_FRONTEND=noninteractive PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "$@"; }
cx() { cexec /bin/bash -c "$1"; }
prop() { cexec systemctl show -P "$1" edgetts; }
wait_for() {  # WHAT SECONDS SCRIPT: polls SCRIPT in the container until it succeeds; a failure names WHAT
  local what=$1 deadline=$((SECONDS + $2))
  until cx "$3" >/dev/null 2>&1; do
    ((SECONDS < deadline)) || { fail "$what (not within $2 s)"; return 1; }
    sleep 0.5
  done
  log "ok: $what"
}
journal_since() { cexec journalctl -u edgetts --no-pager -o cat --since "@$1"; }

prepare_boot_root() {  # a fresh Debian 12 with systemd, dbus and mosquitto; the packages' dependencies in apt's cache
  local deb=/root/debs/$(basename "${debs[amd64]}")
  broot=$work/boot-root
  fresh_root amd64 "$broot"
  mkdir -p "$work/boot" "$broot/root/debs"
  mount_chroot "$broot" "$work/boot"
  cp "${debs[amd64]}" "${upgrades[amd64]}" "$broot/root/debs/"
  # no service starts in the chroot (mosquitto's postinst would try its init script)
  printf '#!/bin/sh\nexit 101\n' > "$broot/usr/sbin/policy-rc.d" && chmod 0755 "$broot/usr/sbin/policy-rc.d"
  in_chroot "$broot" apt-get update -qq
  in_chroot "$broot" apt-get install -y -q --no-install-recommends systemd systemd-sysv dbus mosquitto mosquitto-clients >/dev/null
  in_chroot "$broot" apt-get install -y -q --download-only "$deb" >/dev/null
  unmount_chroot
  rm -f "$broot/usr/sbin/policy-rc.d"
  echo "$BOOT_MACHINE" > "$broot/etc/hostname"
  mkdir -p "$broot/etc/edgetts-test" "$broot/etc/systemd/system/edgetts.service.d"
  echo "$BOOT_ASOUND" > "$broot/etc/edgetts-test/asound.conf"
  # The test's only change to the unit: ALSA's file plugin instead of a sound card (the capture is
  # written by the service's user into its StateDirectory; no device is opened).
  printf '[Service]\nEnvironment=ALSA_CONFIG_PATH=/etc/edgetts-test/asound.conf\n' \
    > "$broot/etc/systemd/system/edgetts.service.d/capture.conf"
}

find_leader() {  # the container's PID 1: a child of systemd-nspawn, PID 1 in its own namespace
  local p
  for p in $(pgrep -P "$nspawn_pid" 2>/dev/null); do
    grep -qE '^NSpid:[[:space:]]+[0-9]+[[:space:]]+1$' "/proc/$p/status" 2>/dev/null && { echo "$p"; return 0; }
  done
  return 1
}

# boot_once MODE: systemd-nspawn -b with SYSTEMD_NSPAWN_UNIFIED_HIERARCHY=MODE ("" = its own choice);
# succeeds once the container's systemd says running or degraded.
boot_once() {
  local mode=$1 log=$results/boot/nspawn-${1:-auto}.log deadline state
  log "boot: systemd-nspawn -b (SYSTEMD_NSPAWN_UNIFIED_HIERARCHY=${mode:-unset})"
  env ${mode:+SYSTEMD_NSPAWN_UNIFIED_HIERARCHY=$mode} systemd-nspawn --boot --directory="$broot" \
    --machine="$BOOT_MACHINE" --register=no --keep-unit --private-network --console=passive \
    --bind="$cache/amd64-downloads/apt:/var/cache/apt/archives" </dev/null >"$log" 2>&1 &
  nspawn_pid=$!
  deadline=$((SECONDS + 90))
  while ((SECONDS < deadline)); do
    kill -0 "$nspawn_pid" 2>/dev/null || { log "boot: systemd-nspawn ended: $(tail -3 "$log" | tr '\n' ' ')"; nspawn_pid=""; return 1; }
    if leader=$(find_leader); then
      state=$(timeout 60 nsenter --target "$leader" --all -r -w /usr/bin/env -i \
        PATH=/usr/bin:/bin systemctl is-system-running --wait 2>/dev/null || true)
      [[ "$state" == running || "$state" == degraded ]] && { log "boot: the container's systemd is $state"; return 0; }
      [[ -n "$state" ]] && log "boot: the container's systemd is $state"
    fi
    sleep 1
  done
  log "boot: no running systemd within 90 s: $(tail -3 "$log" | tr '\n' ' ')"
  stop_container
  return 1
}

stop_container() {  # poweroff (nspawn turns SIGTERM into it), then SIGKILL to what is left
  local i
  [[ -n "${nspawn_pid:-}" ]] || return 0
  # (each may find its process gone already, which is the good case: none may end the run under set -e)
  kill -TERM "$nspawn_pid" 2>/dev/null || true
  for ((i = 0; i < 60; i++)); do kill -0 "$nspawn_pid" 2>/dev/null || break; sleep 0.5; done
  if [[ -n "${leader:-}" ]]; then kill -KILL "$leader" 2>/dev/null || true; fi
  kill -KILL "$nspawn_pid" 2>/dev/null || true
  wait "$nspawn_pid" 2>/dev/null || true
  nspawn_pid="" leader=""
  return 0
}

boot_install() {  # apt install under systemd: the postinst enables and starts the service
  local t0=$EPOCHREALTIME
  expect "boot: apt install ./$(basename "${debs[amd64]}") with systemd running" \
    cexec apt-get install -y -q "/root/debs/$(basename "${debs[amd64]}")"
  fact "boot: apt install with systemd running (dependencies in apt's cache; the service started): $(seconds_since "$t0") s"
  figure boot.apt_install_and_start_s "$(seconds_since "$t0")"
  expect "boot: the install enabled edgetts.service" cx '[ "$(systemctl is-enabled edgetts)" = enabled ]'
  expect "boot: the install started edgetts.service" cx '[ "$(systemctl is-active edgetts)" = active ]'
  cx 'systemctl --failed --no-legend' > "$results/boot/failed-units.txt" 2>&1 || true
}

boot_ready() {  # active only after READY=1: activating while the voice loads
  local state started active
  cexec systemctl stop edgetts
  cexec systemctl start --no-block edgetts
  state=$(prop ActiveState)/$(prop SubState)
  if [[ "$state" == activating/start ]]; then log "ok: boot: activating while the voice loads (no READY=1 yet)"
  else fail "boot: right after start the unit is $state, not activating/start (no READY=1 yet)"; fi
  wait_for "boot: active after READY=1" 120 '[ "$(systemctl is-active edgetts)" = active ]' || return 1
  expect "boot: the STATUS= sent with READY=1 is the daemon's ('ready: ...')" cx '[[ "$(systemctl show -P StatusText edgetts)" == ready* ]]'
  started=$(prop ExecMainStartTimestampMonotonic) active=$(prop ActiveEnterTimestampMonotonic)
  fact "boot: activating -> active (process start to READY=1): $(awk -v a="$active" -v s="$started" 'BEGIN { printf "%.2f", (a - s) / 1e6 }') s"
  figure boot.start_to_ready_s "$(awk -v a="$active" -v s="$started" 'BEGIN { printf "%.2f", (a - s) / 1e6 }')"
}

boot_announce() {  # an announcement published to the container's mosquitto is spoken into the capture
  local events=$results/boot/events.txt f
  # A persistent session first (QoS 1): the events are queued for it from then on, none is missed.
  cexec mosquitto_sub -h 127.0.0.1 -c -i edgetts-deb-test -q 1 -t 'edgetts/+/events' -W 1 >/dev/null 2>&1 || true
  expect "boot: mosquitto_pub an announcement" cexec mosquitto_pub -h 127.0.0.1 -q 1 -t edgetts/all/announce \
    -m "{\"id\": \"deb-boot-1\", \"text\": \"$SENTENCE\"}"
  cexec mosquitto_sub -h 127.0.0.1 -c -i edgetts-deb-test -q 1 -v -t 'edgetts/+/events' -C 3 -W 120 > "$events" 2>&1 || true
  expect "boot: the announcement's events are queued, started, finished" \
    bash -c "grep -q '\"queued\"' '$events' && grep -q '\"started\"' '$events' && grep -q '\"finished\"' '$events'"
  for f in $(ls -v "$broot"/var/lib/edgetts/capture.raw* 2>/dev/null); do cat "$f"; done > "$results/boot/capture.raw"
  [[ -s "$results/boot/capture.raw" ]] || fail "boot: nothing was played into the ALSA capture"
}

boot_reload() {  # a good edit applied; a bad edit refused with the reason, the old config kept
  local pid t line
  pid=$(prop MainPID) t=$(date +%s)
  cx "sed -i 's/^  max_length: 32 /  max_length: 30 /' /etc/edgetts/edgetts.yaml"
  expect "boot: systemctl reload (a good edit)" cexec systemctl reload edgetts
  wait_for "boot: the journal says the good edit was applied" 60 \
    "journalctl -u edgetts --since @$t -o cat | grep -q 'configuration reloaded from /etc/edgetts/edgetts.yaml'"
  echo "bogus_key: 1" >> "$broot/etc/edgetts/edgetts.yaml"
  line=$(wc -l < "$broot/etc/edgetts/edgetts.yaml") t=$(date +%s)
  expect "boot: systemctl reload (a bad edit)" cexec systemctl reload edgetts
  wait_for "boot: the journal gives the reason (reload refused: edgetts.yaml:$line bogus_key)" 60 \
    "journalctl -u edgetts --since @$t -o cat | grep -q 'reload refused: /etc/edgetts/edgetts.yaml:$line.*bogus_key'"
  expect "boot: the daemon kept running (same main PID) with the old config" \
    cx "[ \"\$(systemctl show -P MainPID edgetts)\" = $pid ] && [ \"\$(systemctl is-active edgetts)\" = active ]"
  expect "boot: its status text says the reload was refused" cx '[[ "$(systemctl show -P StatusText edgetts)" == *"reload refused"* ]]'
  journal_since "$t" > "$results/boot/journal-bad-reload.txt" 2>&1
  sed -i '/^bogus_key: 1$/d' "$broot/etc/edgetts/edgetts.yaml"
  t=$(date +%s)
  cexec systemctl reload edgetts
  wait_for "boot: the fixed file reloads" 60 "journalctl -u edgetts --since @$t -o cat | grep -q 'configuration reloaded'"
}

boot_watchdog() {  # a hung loop (SIGSTOP) is restarted by the watchdog (WatchdogSec=3 in a drop-in)
  local pid restarts t
  printf '[Service]\nWatchdogSec=3\n' > "$broot/etc/systemd/system/edgetts.service.d/watchdog.conf"
  cexec systemctl daemon-reload
  cexec systemctl restart edgetts
  expect "boot: the drop-in's WatchdogSec=3 is in force" cx '[ "$(systemctl show -P WatchdogUSec edgetts)" = 3s ]'
  pid=$(prop MainPID) restarts=$(prop NRestarts) t=$(date +%s)
  cexec kill -STOP "$pid"
  wait_for "boot: the watchdog restarted the stopped daemon" 90 \
    "p=\$(systemctl show -P MainPID edgetts); [ \"\$p\" != 0 ] && [ \"\$p\" != $pid ] && [ \"\$(systemctl is-active edgetts)\" = active ]"
  expect "boot: the journal says 'Watchdog timeout'" cx "journalctl -u edgetts --since @$t -o cat | grep -q 'Watchdog timeout'"
  expect "boot: NRestarts went up" cx "[ \"\$(systemctl show -P NRestarts edgetts)\" -gt $restarts ]"
  journal_since "$t" > "$results/boot/journal-watchdog.txt" 2>&1
  rm -f "$broot/etc/systemd/system/edgetts.service.d/watchdog.conf"
  cexec systemctl daemon-reload
  cexec systemctl restart edgetts
}

boot_stop() {  # a clean stop: within TimeoutStopSec (systemd's Result would say timeout), exit 0
  local t t0=$EPOCHREALTIME
  t=$(date +%s)
  expect "boot: systemctl stop" cexec systemctl stop edgetts
  fact "boot: systemctl stop took $(seconds_since "$t0") s (TimeoutStopSec=$(prop TimeoutStopUSec))"
  figure boot.stop_s "$(seconds_since "$t0")"
  expect "boot: the stop's result is success (not timeout or signal)" cx '[ "$(systemctl show -P Result edgetts)" = success ]'
  expect "boot: the daemon exited 0" cx '[ "$(systemctl show -P ExecMainStatus edgetts)" = 0 ]'
  expect "boot: nothing was killed at the stop" cx "! journalctl -u edgetts --since @$t -o cat | grep -Ei 'timed out|killing'"
}

boot_security() {  # systemd-analyze security on the running system: as docs/daemon.md states, or better
  local out exposure today
  out=$(cexec systemd-analyze security edgetts 2>&1 || true)
  echo "$out" > "$results/boot/security.txt"
  exposure=$(grep -oE 'Overall exposure level for edgetts.service: [0-9.]+' <<<"$out" | grep -oE '[0-9.]+$' || true)
  today=$(tr '\n' ' ' < "$here/docs/daemon.md" | grep -oE 'rates the unit +\*\*[0-9.]+' | grep -oE '[0-9.]+$' || true)
  fact "boot: systemd-analyze security edgetts: ${exposure:-none} (docs/daemon.md: ${today:-none})"
  [[ -z "$exposure" ]] || figure boot.security_exposure "$exposure"
  expect "boot: exposure ${exposure:-?} at most docs/daemon.md's ${today:-?}" \
    awk -v f="${exposure:-99}" -v t="${today:-0}" 'BEGIN { exit !(f + 0 <= t + 0) }'
}

boot_lifecycle() {  # upgrade restarts the service and keeps the edited config; remove stops; purge clears
  local pid edited
  cexec systemctl start edgetts
  pid=$(prop MainPID) edited=$(md5sum < "$broot/etc/edgetts/edgetts.yaml")
  expect "boot: upgrade to $(basename "${upgrades[amd64]}")" cexec apt-get install -y -q "/root/debs/$(basename "${upgrades[amd64]}")"
  expect "boot: the upgrade restarted the service" \
    cx "p=\$(systemctl show -P MainPID edgetts); [ \"\$p\" != 0 ] && [ \"\$p\" != $pid ] && [ \"\$(systemctl is-active edgetts)\" = active ]"
  expect "boot: the upgrade kept the edited config" test "$(md5sum < "$broot/etc/edgetts/edgetts.yaml")" = "$edited"
  expect "boot: apt remove" cexec apt-get remove -y -q edgetts
  expect "boot: remove stopped the service" cx '[ "$(systemctl is-active edgetts)" != active ] && [ "$(systemctl show -P MainPID edgetts)" = 0 ]'
  expect "boot: remove kept the config" test "$(md5sum < "$broot/etc/edgetts/edgetts.yaml")" = "$edited"
  expect "boot: apt purge" cexec apt-get purge -y -q edgetts
  expect "boot: purge removed config, state, cache and user" \
    cx '! test -e /etc/edgetts && ! test -e /var/lib/edgetts && ! test -e /var/cache/edgetts && ! getent passwd edgetts'
}

test_booted() {
  local mode step booted=0
  mkdir -p "$results/boot"
  prepare_boot_root
  for mode in "" 0 1; do
    if boot_once "$mode"; then booted=1; break; fi
  done
  if ((!booted)); then
    grep -hiE 'fail|error|cannot|not supported|denied' "$results"/boot/nspawn-*.log | sort -u | head -20 > "$results/boot/why-not.txt"
    fact "boot: the container did not boot: $(tr '\n' ' ' < "$results/boot/why-not.txt")"
    [[ "$boot_mode" == 1 ]] && fail "boot: systemd-nspawn -b did not boot (EDGETTS_DEB_BOOT=1): see $results/boot/"
    log "boot: SKIPPED the booted-systemd checks (EDGETTS_DEB_BOOT=1 makes this a failure)"
    return 0
  fi
  touch "$results/boot/booted"
  # each step records its failed checks and goes on; one that cannot go on says so
  for step in boot_install boot_ready boot_announce boot_reload boot_watchdog boot_stop boot_security boot_lifecycle; do
    "$step" || fail "boot: $step could not go on"
  done
  cexec journalctl --no-pager -b > "$results/boot/journal.txt" 2>&1
  stop_container
  if ((${#failures[@]} == 0)); then rm -rf "$broot"; fi
}
