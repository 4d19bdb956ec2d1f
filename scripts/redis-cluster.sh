#!/bin/sh
# A local Redis Cluster for tests (internal/redistest Cluster): three masters
# and three replicas on 127.0.0.1:PORT to PORT+5 (PORT is REDIS_CLUSTER_PORT,
# default 7000), nothing persisted, data under DIR (default
# ${TMPDIR:-/tmp}/matchgate-redis-cluster-PORT).
#
#   scripts/redis-cluster.sh start|stop|status [DIR]
#
# start is a no-op when the cluster is already up, and restarts a node that
# is down (it rejoins from its nodes.conf); stop shuts the nodes down and
# removes DIR. REDIS_CLUSTER_NODE_TIMEOUT (ms, default 5000) is how long a
# master may be silent before its replica takes over. REDIS_SERVER and
# REDIS_CLI override the binaries.
set -eu
cmd=${1:?usage: redis-cluster.sh start|stop|status [DIR]}
base=${REDIS_CLUSTER_PORT:-7000}
dir=${2:-${TMPDIR:-/tmp}/matchgate-redis-cluster-$base}
server=${REDIS_SERVER:-/usr/bin/redis-server}
cli=${REDIS_CLI:-redis-cli}
ports="$base $((base + 1)) $((base + 2)) $((base + 3)) $((base + 4)) $((base + 5))"
span="127.0.0.1:$base-$((base + 5))"

up() { "$cli" -h 127.0.0.1 -p "$1" ping >/dev/null 2>&1; }
state_ok() { "$cli" -h 127.0.0.1 -p "$1" cluster info 2>/dev/null | grep -q '^cluster_state:ok'; }
all_ok() {
  for p in $ports; do state_ok "$p" || return 1; done
}
# wait_for TRIES WHAT CMD...: run CMD every 0.1 s until it succeeds, or give
# up after TRIES tries saying WHAT did not happen.
wait_for() {
  tries=$1 what=$2
  shift 2
  i=0
  until "$@"; do
    i=$((i + 1))
    [ "$i" -le "$tries" ] || { echo "$what" >&2; exit 1; }
    sleep 0.1
  done
}
down() { ! up "$1"; }

case "$cmd" in
start)
  if all_ok; then
    echo "redis cluster already up on $span"
    exit 0
  fi
  mkdir -p "$dir"
  for p in $ports; do
    up "$p" && continue
    mkdir -p "$dir/$p"
    "$server" --port "$p" --bind 127.0.0.1 --cluster-enabled yes \
      --cluster-config-file "$dir/$p/nodes.conf" --cluster-node-timeout "${REDIS_CLUSTER_NODE_TIMEOUT:-5000}" \
      --appendonly no --save "" --dir "$dir/$p" --daemonize yes \
      --logfile "$dir/$p/redis.log" --pidfile "$dir/$p/redis.pid"
  done
  for p in $ports; do wait_for 100 "redis on port $p did not start" up "$p"; done
  # Create the cluster only when no node knows of another yet; a partly
  # formed one is left alone to converge.
  if "$cli" -h 127.0.0.1 -p "$base" cluster info | grep -q '^cluster_known_nodes:1'; then
    nodes=""
    for p in $ports; do nodes="$nodes 127.0.0.1:$p"; done
    # shellcheck disable=SC2086
    "$cli" --cluster create $nodes --cluster-replicas 1 --cluster-yes >"$dir/create.log" 2>&1 ||
      { cat "$dir/create.log" >&2; exit 1; }
  fi
  wait_for 300 "redis cluster did not reach cluster_state:ok" all_ok
  echo "redis cluster up on $span"
  ;;
stop)
  for p in $ports; do
    up "$p" && "$cli" -h 127.0.0.1 -p "$p" shutdown nosave >/dev/null 2>&1 || true
  done
  for p in $ports; do wait_for 100 "redis on port $p did not stop" down "$p"; done
  rm -rf "$dir"
  echo "redis cluster stopped"
  ;;
status)
  rc=0
  for p in $ports; do
    if state_ok "$p"; then echo "127.0.0.1:$p ok"; elif up "$p"; then echo "127.0.0.1:$p up, cluster not ok"; rc=1; else echo "127.0.0.1:$p down"; rc=1; fi
  done
  exit $rc
  ;;
*)
  echo "usage: redis-cluster.sh start|stop|status [DIR]" >&2
  exit 2
  ;;
esac
