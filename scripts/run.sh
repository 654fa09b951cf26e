#!/usr/bin/env bash
# Run the announcer daemon in the foreground with the installed config, against
# a mosquitto on 127.0.0.1:1883 -- started here (loopback only, anonymous) when
# nothing listens there yet.  Ctrl-C stops the daemon; the broker keeps running.
#
#   sudo scripts/run.sh [edgetts run options...]
#   mosquitto_pub -h 127.0.0.1 -t "edgetts/$(hostname)/announce" -m "Mind the gap."
#
# Knobs (env): EDGETTS_CONFIG (default /etc/edgetts/edgetts.yaml),
# EDGETTS_BROKER_DIR (default /var/lib/edgetts/mosquitto).
set -euo pipefail
config=${EDGETTS_CONFIG:-/etc/edgetts/edgetts.yaml}
broker_dir=${EDGETTS_BROKER_DIR:-/var/lib/edgetts/mosquitto}
edgetts_bin=$(command -v edgetts || echo /usr/local/bin/edgetts)

broker_up() { mosquitto_pub -h 127.0.0.1 -p 1883 -t edgetts/run/probe -m up -q 0 2>/dev/null; }

if ! broker_up; then
  command -v mosquitto >/dev/null || { echo "[edgetts] mosquitto is not installed: run scripts/install.sh" >&2; exit 1; }
  mkdir -p "$broker_dir/data"
  cat > "$broker_dir/mosquitto.conf" <<CONF
# Written by edgetts scripts/run.sh: a loopback-only broker for trying edgetts.
listener 1883 127.0.0.1
allow_anonymous true
persistence true
persistence_location $broker_dir/data/
pid_file $broker_dir/mosquitto.pid
log_dest file $broker_dir/mosquitto.log
# Announcements stay unacknowledged until they have been spoken; allow more in
# flight than edgetts' queue.max_length (32) so an emergency never waits behind them.
max_inflight_messages 100
max_queued_messages 1000
# Send small packets at once: Nagle's algorithm adds ~40 ms between publish and receipt.
set_tcp_nodelay true
$( [[ $(id -u) -eq 0 ]] && echo "user root" )
CONF
  mosquitto -c "$broker_dir/mosquitto.conf" -d
  for _ in $(seq 50); do broker_up && break; sleep 0.1; done
  broker_up || { echo "[edgetts] mosquitto did not start; see $broker_dir/mosquitto.log" >&2; exit 1; }
  echo "[edgetts] started mosquitto on 127.0.0.1:1883 (pid $(cat "$broker_dir/mosquitto.pid"))" >&2
fi
exec "$edgetts_bin" run --config "$config" "$@"
