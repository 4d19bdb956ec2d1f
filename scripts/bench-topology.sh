#!/usr/bin/env bash
# Side by side on this machine, one sitting (docs/BENCHMARKS.md §9): the
# pairs queue at RATE joins/s for DUR through cmd/loadgen, first against one
# process on the Redis at 127.0.0.1:6379, then against 3 gateways, 3
# matchers and 2 relays on the Redis Cluster of scripts/redis-cluster.sh
# (127.0.0.1:7000-7005), both on the PostgreSQL at 127.0.0.1:5432 (a schema
# of their own, dropped at the end, as their keys are). Loopback only.
set -euo pipefail
RATE=${RATE:-2000}; DUR=${DUR:-20s}
cd "$(dirname "$0")/.."
export PATH=$PATH:/usr/local/go/bin
scripts/redis-cluster.sh start >/dev/null
go build -o /tmp/mg ./cmd/matchgate
go build -o /tmp/loadgen ./cmd/loadgen
cat > /tmp/pairs.yaml <<'Y'
queues:
  - name: pairs
    players: 2
    window:
      - {after: 0s, width: 100000}
Y
LIMITS="--log-level warn --limit-connects-ip off --limit-messages off --limit-joins-ip off --limit-joins-user off --limit-cancels-user off --limit-accepts-user off --limit-reads-user off --limit-reads-ip off --limit-heartbeats-user off --max-connections 0 --config /tmp/pairs.yaml --secret benchsecret-0123456789abcdef"
run() { # name redisurl
  local name=$1 url=$2 schema=bench_$1_$$
  psql -q -h 127.0.0.1 -U postgres test -c "create schema $schema" >/dev/null
  local pg="postgres://postgres@127.0.0.1:5432/test?sslmode=disable&search_path=$schema"
  local pids=() urls=""
  if [ "$name" = single ]; then
    /tmp/mg serve --addr 127.0.0.1:18801 --redis-url "$url" --redis-prefix $schema --postgres-url "$pg" $LIMITS 2>/tmp/topo-$name-0.log & pids+=($!)
    urls=http://127.0.0.1:18801
  else
    /tmp/mg migrate --postgres-url "$pg" >/dev/null 2>&1
    for i in 0 1 2; do /tmp/mg serve --roles matcher --node m$i --redis-url "$url" --redis-prefix $schema --postgres-url "$pg" $LIMITS 2>/tmp/topo-$name-m$i.log & pids+=($!); done
    for i in 0 1; do /tmp/mg serve --roles relay --node r$i --redis-url "$url" --redis-prefix $schema --postgres-url "$pg" $LIMITS 2>/tmp/topo-$name-r$i.log & pids+=($!); done
    for i in 0 1 2; do /tmp/mg serve --roles gateway --node g$i --addr 127.0.0.1:1881$i --redis-url "$url" --redis-prefix $schema --postgres-url "$pg" $LIMITS 2>/tmp/topo-$name-g$i.log & pids+=($!); done
    urls=http://127.0.0.1:18810,http://127.0.0.1:18811,http://127.0.0.1:18812
  fi
  for u in ${urls//,/ }; do for _ in $(seq 100); do curl -sf $u/readyz >/dev/null && break; sleep 0.1; done; done
  sleep 2
  echo "== $name: $RATE joins/s for $DUR"
  /tmp/loadgen --mode players --url "$urls" --secret benchsecret-0123456789abcdef \
    --queues pairs=1 --sockets 6000 --connect-rate 4000 --join-rate $RATE --duration $DUR --drain 3s 2>&1 | grep -E "joins|match.found|joined|invariant|error" | head -12
  kill -INT "${pids[@]}"; wait "${pids[@]}" 2>/dev/null || true
  psql -q -h 127.0.0.1 -U postgres test -c "drop schema $schema cascade" >/dev/null 2>&1
  for p in 6379 7000 7001 7002 7003 7004 7005; do
    redis-cli -p $p --scan --pattern "$schema*" 2>/dev/null | xargs -r -n 1 redis-cli -p $p unlink >/dev/null 2>&1 || true
  done
}
run single redis://127.0.0.1:6379/0
run cluster redis+cluster://127.0.0.1:7000,127.0.0.1:7001,127.0.0.1:7002
