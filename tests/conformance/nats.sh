#!/usr/bin/env bash
# Starts and stops a private nats-server with JetStream for the conformance tests (ctest fixture
# `nats`, as broker.sh is RabbitMQ's).
#
#   nats.sh start STATE_FILE   start a server; write "port=N" (and what stop needs) to STATE_FILE
#   nats.sh stop STATE_FILE    stop that server, keep its log, remove its data
#
# The server is private: JetStream on (-js), its client port picked free on 127.0.0.1 (-a, -p),
# no HTTP monitoring, no cluster, no config file, and its JetStream store in a folder of its own
# under /tmp (-sd), removed at stop. Debian's nats-server runs as whoever starts it.
#
# Without nats-server, start writes "unavailable: ..." to STATE_FILE and exits 77 (skipped); the
# live conformance tests read that line and skip too. Exit 1 when an installed server fails.
set -euo pipefail

readonly kSkipped=77
# Where Debian installs it; a test points it elsewhere to see the skip.
readonly server=${INBOXSIM_NATS_SERVER:-$(command -v nats-server || echo /usr/sbin/nats-server)}
# It starts in well under a second; a loaded 2-core machine gets a large margin.
readonly kStartSecondsMax=30
readonly kStopSecondsMax=20

die() {
  echo "nats.sh: $*" >&2
  exit 1
}

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

start() {
  local state=$1
  rm -f "$state"
  if [ ! -x "$server" ]; then
    echo "unavailable: nats-server is not installed (apt-get install nats-server)" >"$state"
    echo "SKIPPED: nats-server is not installed"
    exit "$kSkipped"
  fi
  local dir port pid
  dir=$(mktemp -d /tmp/inboxsim-nats.XXXXXX)
  port=$(free_port)
  setsid "$server" -js -a 127.0.0.1 -p "$port" -sd "$dir/store" -n "inboxsim-conformance-$port" \
    -l "$dir/server.log" >"$dir/server.out" 2>&1 </dev/null &
  pid=$!
  # What stop needs, written before waiting: a start that times out must still be stopped.
  printf 'starting\ndir=%s\npid=%s\n' "$dir" "$pid" >"$state"
  local started=$SECONDS
  # JetStream is ready once the log says so; the port alone opens a little earlier.
  until grep -q "Server is ready" "$dir/server.log" 2>/dev/null &&
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do
    if ! kill -0 "$pid" 2>/dev/null; then
      tail -n 40 "$dir/server.log" "$dir/server.out" >&2 || true
      die "nats-server exited during startup (log: $dir)"
    fi
    [ $((SECONDS - started)) -lt "$kStartSecondsMax" ] || die "not ready after $kStartSecondsMax s (log: $dir)"
    sleep 0.1
  done
  printf 'port=%s\ndir=%s\npid=%s\n' "$port" "$dir" "$pid" >"$state"
  echo "$("$server" --version) with JetStream listens on 127.0.0.1:$port (data in $dir)"
}

stop() {
  local state=$1
  [ -f "$state" ] || { echo "no nats-server was started"; exit 0; }
  local dir pid
  dir=$(sed -n 's/^dir=//p' "$state")
  pid=$(sed -n 's/^pid=//p' "$state")
  if [ -z "$dir" ]; then
    echo "no nats-server was started: $(head -n 1 "$state")"
    rm -f "$state"
    exit 0
  fi
  if [ -n "$pid" ]; then
    kill -TERM "$pid" 2>/dev/null || true
    local waited=0
    while kill -0 "$pid" 2>/dev/null && [ "$waited" -lt $((kStopSecondsMax * 10)) ]; do
      sleep 0.1
      waited=$((waited + 1))
    done
    kill -KILL "$pid" 2>/dev/null || true
  fi
  local logs
  logs="$(dirname "$state")/nats-logs"
  rm -rf "$logs" && mkdir -p "$logs"
  cp "$dir/server.log" "$dir/server.out" "$logs/" 2>/dev/null || true
  rm -rf "$dir" "$state"
  echo "nats-server stopped; its log is in $logs"
}

case "${1:-}" in
  start) [ $# -eq 2 ] || die "usage: nats.sh start STATE_FILE"; start "$2" ;;
  stop) [ $# -eq 2 ] || die "usage: nats.sh stop STATE_FILE"; stop "$2" ;;
  *) die "usage: nats.sh start|stop STATE_FILE" ;;
esac
