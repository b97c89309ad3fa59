#!/usr/bin/env bash
# Starts and stops a private RabbitMQ node for the conformance tests (ctest fixture `rabbitmq`).
#
#   broker.sh start STATE_FILE   start a node; write "port=N" (and what stop needs) to STATE_FILE
#   broker.sh stop STATE_FILE    stop that node and its epmd, keep its logs, remove its data
#
# The node is private, so it never meets a system broker or another test run: its own node
# name, AMQP port, distribution port and epmd port (free ports picked at start, all on
# 127.0.0.1), its own data and log folders under /tmp, no config file but its own
# advanced.config (a short consumer timeout, node_environment), and no plugins. Started
# as root, Debian's rabbitmq-server drops to the `rabbitmq` user, which must own that folder.
#
# Without rabbitmq-server, start writes "unavailable: ..." to STATE_FILE and exits 77 (skipped);
# the conformance tests read that line and skip too. Exit 1 when an installed server fails to
# start.
set -euo pipefail

readonly kSkipped=77
# Where Debian installs the server; a test points it elsewhere to see the skip.
readonly server=${INBOXSIM_RABBITMQ_SERVER:-/usr/lib/rabbitmq/bin/rabbitmq-server}
# Startup takes 5 to 25 s on a loaded 2-core machine; the fixture's TIMEOUT is larger.
readonly kStartSecondsMax=150
readonly kStopSecondsMax=60

die() {
  echo "broker.sh: $*" >&2
  exit 1
}

# Three free TCP ports on 127.0.0.1 (AMQP, Erlang distribution, epmd), picked by the kernel.
free_ports() {
  python3 - <<'EOF'
import socket
sockets = [socket.socket() for _ in range(3)]
for s in sockets:
    s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in sockets))
EOF
}

# The environment rabbitmq-server reads (rabbitmq-env): everything of the node in $dir.
node_environment() {
  local dir=$1 port=$2 dist_port=$3 epmd_port=$4
  export RABBITMQ_NODENAME="inboxsim-conformance-$port@localhost"
  export RABBITMQ_NODE_IP_ADDRESS=127.0.0.1
  export RABBITMQ_NODE_PORT=$port
  export RABBITMQ_DIST_PORT=$dist_port
  export ERL_EPMD_PORT=$epmd_port
  export ERL_EPMD_ADDRESS=127.0.0.1
  export RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS="-kernel inet_dist_use_interface {127,0,0,1}"
  export RABBITMQ_MNESIA_BASE="$dir/mnesia"
  export RABBITMQ_LOG_BASE="$dir/log"
  export RABBITMQ_PID_FILE="$dir/rabbitmq.pid"
  # No file of the system's: /etc/rabbitmq's env file, config and plugin list stay unread.
  export RABBITMQ_CONF_ENV_FILE="$dir/no-env.conf"
  export RABBITMQ_CONFIG_FILE="$dir/no-config"
  # The node's own advanced.config: a consumer timeout short enough for script 24 (10 s, checked
  # every second instead of RabbitMQ's 30 min checked every minute); scripts that hold a
  # delivery unacked stay well under it.
  export RABBITMQ_ADVANCED_CONFIG_FILE="$dir/advanced.config"
  printf '[{rabbit, [{consumer_timeout, 10000}, {channel_tick_interval, 1000}]}].\n' \
    >"$dir/advanced.config"
  export RABBITMQ_ENABLED_PLUGINS_FILE="$dir/enabled_plugins"
}

launch() {
  local dir=$1
  if [ "$(id -u)" = 0 ] && id rabbitmq >/dev/null 2>&1 && [ -x /usr/sbin/rabbitmq-server ]; then
    chown -R rabbitmq:rabbitmq "$dir"
    # Debian's wrapper runs the server as the rabbitmq user (su keeps the environment).
    setsid /usr/sbin/rabbitmq-server >"$dir/server.out" 2>&1 </dev/null &
  else
    HOME=$dir setsid "$server" >"$dir/server.out" 2>&1 </dev/null &
  fi
  echo $!
}

start() {
  local state=$1
  rm -f "$state"
  if [ ! -x "$server" ]; then
    echo "unavailable: rabbitmq-server is not installed (apt-get install rabbitmq-server)" >"$state"
    echo "SKIPPED: rabbitmq-server is not installed"
    exit "$kSkipped"
  fi
  local dir ports port dist_port epmd_port launcher
  dir=$(mktemp -d /tmp/inboxsim-rabbitmq.XXXXXX)
  chmod 755 "$dir"
  read -r port dist_port epmd_port < <(free_ports)
  node_environment "$dir" "$port" "$dist_port" "$epmd_port"
  launcher=$(launch "$dir")
  # What stop needs, written before waiting: a start that times out must still be stopped.
  printf 'starting\ndir=%s\nepmd_port=%s\nlauncher=%s\n' "$dir" "$epmd_port" "$launcher" >"$state"
  local started=$SECONDS
  until (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do
    if ! kill -0 "$launcher" 2>/dev/null; then
      tail -n 40 "$dir/server.out" >&2 || true
      die "rabbitmq-server exited during startup (log: $dir)"
    fi
    [ $((SECONDS - started)) -lt "$kStartSecondsMax" ] || die "no AMQP listener after $kStartSecondsMax s (log: $dir)"
    sleep 0.5
  done
  printf 'port=%s\ndir=%s\nepmd_port=%s\nlauncher=%s\n' "$port" "$dir" "$epmd_port" "$launcher" >"$state"
  echo "RabbitMQ $RABBITMQ_NODENAME listens on 127.0.0.1:$port (started in $((SECONDS - started)) s, data in $dir)"
}

# Waits until process $1 has exited, up to $2 seconds; returns 1 if it is still there.
wait_for_exit() {
  local pid=$1 seconds=$2 waited=0
  while kill -0 "$pid" 2>/dev/null; do
    [ "$waited" -lt $((seconds * 10)) ] || return 1
    sleep 0.1
    waited=$((waited + 1))
  done
}

stop() {
  local state=$1
  [ -f "$state" ] || { echo "no broker was started"; exit 0; }
  local dir epmd_port launcher pid=""
  dir=$(sed -n 's/^dir=//p' "$state")
  epmd_port=$(sed -n 's/^epmd_port=//p' "$state")
  launcher=$(sed -n 's/^launcher=//p' "$state")
  if [ -z "$dir" ]; then
    echo "no broker was started: $(head -n 1 "$state")"
    rm -f "$state"
    exit 0
  fi
  [ -f "$dir/rabbitmq.pid" ] && pid=$(cat "$dir/rabbitmq.pid")
  # The Erlang VM stops the node cleanly on SIGTERM; the launcher (su and the script) follows.
  for process in $pid $launcher; do
    kill -TERM "$process" 2>/dev/null || true
  done
  for process in $pid $launcher; do
    wait_for_exit "$process" "$kStopSecondsMax" || kill -KILL "$process" 2>/dev/null || true
  done
  # The node started its own epmd on its private port; ask that one (and only it) to exit.
  if [ -n "$epmd_port" ] && command -v epmd >/dev/null; then
    epmd -port "$epmd_port" -kill >/dev/null 2>&1 || true
  fi
  local logs
  logs="$(dirname "$state")/rabbitmq-logs"
  rm -rf "$logs" && mkdir -p "$logs"
  cp -r "$dir/log/." "$dir/server.out" "$logs/" 2>/dev/null || true
  rm -rf "$dir" "$state"
  echo "RabbitMQ stopped; its logs are in $logs"
}

case "${1:-}" in
  start) [ $# -eq 2 ] || die "usage: broker.sh start STATE_FILE"; start "$2" ;;
  stop) [ $# -eq 2 ] || die "usage: broker.sh stop STATE_FILE"; stop "$2" ;;
  *) die "usage: broker.sh start|stop STATE_FILE" ;;
esac
