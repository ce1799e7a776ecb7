# shellcheck shell=bash
# Sourced by tests/apiserver/start.sh and tests/realkube/start.sh: the one way they stop a server
# they started in the background and whose pid they wrote to a file.
#
# stop_pidfile FILE [SIGNAL] [TENTHS]: SIGCONT (a SIGSTOPped process must see the signal), then
# SIGNAL (default TERM) to the pid in FILE, up to TENTHS tenths of a second (default 25) for it to
# exit, then SIGKILL; FILE is removed. Without FILE there is nothing to stop.
stop_pidfile() {
  local file=$1 sig=${2:-TERM} tenths=${3:-25}
  [ -f "$file" ] || return 0
  local pid
  pid=$(cat "$file")
  kill -CONT "$pid" 2>/dev/null || true
  kill -"$sig" "$pid" 2>/dev/null || true
  for _ in $(seq 1 "$tenths"); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  kill -9 "$pid" 2>/dev/null || true
  rm -f "$file"
}
