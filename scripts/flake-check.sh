#!/usr/bin/env bash
# N clean-clone CI runs in a row: does the suite pass every time, in time, even beside a CPU hog?
#
#   scripts/flake-check.sh [N]          (default N=5)
#
# Each run clones this checkout's committed HEAD (git clone, then that commit detached: what is
# not committed is not tested) into a temp dir and runs `CI=true bash .ci/run` there (the CI's
# own command: scripts/test.sh, apt check, pip install, pytest --durations=25).  The last run
# (of N >= 2) runs beside a CPU hog pinned to core 0 (`taskset -c 0 python3 -c 'while True:
# pass'`, ended by its pid afterwards), as a busy board or CI neighbour would be.
#
# The test venv: the clones share one, FLAKE_CHECK_VENV (default /var/tmp/edgetts-flake-venv),
# through scripts/test.sh's EDGETTS_TEST_VENV, so only the first run pays for the pip installs
# (minutes; the later ones take seconds).  It is the flake check's own: scripts/test.sh
# `pip install -e`s the checkout it runs from into that venv, so pointing it at the developer's
# .venv-test would leave that venv's edgetts importing from a deleted clone.
#
# Prints each run's wall time, pytest's own time (its summary line's "in N s") and its FAILED/ERROR
# lines, then a table.  Logs stay in FLAKE_CHECK_LOGS (default: a new /var/tmp/edgetts-flake-*/).
# A test that keeps what it saw when it fails (test_sync_zones: its recording, events and the
# daemons' logs) keeps it in $logs/run-N-artifacts (EDGETTS_TEST_ARTIFACTS).
# Exit status 1 if any run failed or any pytest took more than FLAKE_CHECK_MAX_S (default 600 s).
#
# A dry run of the script itself: FLAKE_CHECK_PYTEST_ARGS="tests/test_lint.py" scripts/flake-check.sh 2
# (.ci/run takes no arguments, so they reach pytest through PYTEST_ADDOPTS; any pytest args work.)
set -euo pipefail
n=${1:-5}
[[ "$n" =~ ^[1-9][0-9]*$ ]] || { echo "usage: $0 [N]" >&2; exit 2; }
here=$(cd "$(dirname "$0")/.." && pwd)
head=$(git -C "$here" rev-parse HEAD)
venv=${FLAKE_CHECK_VENV:-/var/tmp/edgetts-flake-venv}
[[ "$(realpath -m "$venv")" != "$(realpath -m "$here/.venv-test")" ]] || {
  echo "$0: FLAKE_CHECK_VENV must not be the developer's .venv-test" >&2
  exit 2
}
max_s=${FLAKE_CHECK_MAX_S:-600}
logs=${FLAKE_CHECK_LOGS:-$(mktemp -d /var/tmp/edgetts-flake-XXXXXX)}
mkdir -p "$logs"
work=$(mktemp -d /var/tmp/edgetts-flake-clone-XXXXXX)
hog=""
cleanup() {
  [[ -z "$hog" ]] || kill "$hog" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

echo "[flake-check] $n runs of $head; venv $venv; logs $logs" >&2
declare -a walls pytests statuses hogs fails
bad=0
for ((i = 1; i <= n; i++)); do
  clone="$work/run-$i"
  git clone -q --no-hardlinks "$here" "$clone"
  git -C "$clone" checkout -q --detach "$head"
  log="$logs/run-$i.log"
  with_hog=no
  if ((i == n && n >= 2)); then
    taskset -c 0 python3 -c 'while True: pass' &
    hog=$!
    with_hog=yes
  fi
  echo "[flake-check] run $i/$n (CPU hog: $with_hog) ..." >&2
  start=$(date +%s.%N)
  set +e
  (cd "$clone" && CI=true EDGETTS_TEST_ARTIFACTS="$logs/run-$i-artifacts" EDGETTS_TEST_VENV="$venv" PYTEST_ADDOPTS="${FLAKE_CHECK_PYTEST_ARGS:-}" bash .ci/run) >"$log" 2>&1
  rc=$?
  set -e
  wall=$(echo "$(date +%s.%N) - $start" | bc)
  if [[ -n "$hog" ]]; then
    kill "$hog" 2>/dev/null || true
    wait "$hog" 2>/dev/null || true
    hog=""
  fi
  # pytest's summary lines, one per pass (the default tier, then the realtime tier):
  # "==== 2070 passed, 3 skipped in 598.12s (0:09:58) ====": their sum is the run's pytest time.
  pytest_s=$(grep -E '^=+ .* in [0-9.]+s' "$log" | sed -nE 's/.* in ([0-9.]+)s.*/\1/p' \
    | awk '{ s += $1; n++ } END { if (n) printf "%.2f", s }' || true)
  failed=$(grep -cE '^(FAILED|ERROR) ' "$log" || true)
  walls[i]=$(printf '%.0f' "$wall")
  pytests[i]=${pytest_s:-?}
  statuses[i]=$rc
  hogs[i]=$with_hog
  fails[i]=$failed
  echo "[flake-check] run $i: exit $rc, wall ${walls[i]} s, pytest ${pytests[i]} s, ${failed} FAILED/ERROR" >&2
  grep -E '^(FAILED|ERROR) ' "$log" >&2 || true
  if ((rc != 0)) || [[ -z "$pytest_s" ]] || (($(echo "$pytest_s > $max_s" | bc))); then
    bad=1
  fi
  rm -rf "$clone"
done

echo
echo "flake-check of $head: $n runs (pytest limit ${max_s} s; logs in $logs)"
printf '%-4s %-8s %-6s %-8s %-10s %s\n' run hog exit wall_s pytest_s failed
for ((i = 1; i <= n; i++)); do
  printf '%-4s %-8s %-6s %-8s %-10s %s\n' "$i" "${hogs[i]}" "${statuses[i]}" "${walls[i]}" "${pytests[i]}" "${fails[i]}"
done
if ((bad)); then
  echo "FLAKY OR SLOW: a run failed or took over ${max_s} s of pytest"
  exit 1
fi
echo "all $n runs passed within ${max_s} s of pytest"
