#!/usr/bin/env bash
# The cost of an operation, measured (docs/CAPACITY.md): one process on the
# Redis at 127.0.0.1:6379 and the PostgreSQL at 127.0.0.1:5432 (a schema of
# its own, dropped at the end), cmd/loadgen driving it for DUR; CPU of
# matchgate, Redis and PostgreSQL from /proc and Redis's INFO, Redis commands
# from INFO commandstats, PostgreSQL commits from pg_stat_database, each
# divided by the operations, and the load generator's CPU beside them.
# Loopback only. MODE is one of
#   join       players on the pairs queue at RATE joins/s (SOCKETS sockets;
#              CONNECTS=0 counts from the first join, leaving the sockets'
#              connects and hellos out)
#   idle       SOCKETS sockets that only answer pings (PING, default 20s)
#   push       RATE frames/s published to SOCKETS sockets' channels
#   poll       SOCKETS REST players waiting in a queue that matches nobody, a GET
#              of their ticket every INTERVAL
#   heartbeat  the same, each GET followed by a heartbeat
#   ranking    EVENTS ranking events posted in batches of 500
# MG_BIN runs that binary instead of building one (to compare two).
set -euo pipefail
MODE=${MODE:-join}; RATE=${RATE:-2000}; DUR=${DUR:-20s}; SOCKETS=${SOCKETS:-4000}
INTERVAL=${INTERVAL:-100ms}; PING=${PING:-20s}; EVENTS=${EVENTS:-400000}
cd "$(dirname "$0")/.."
export PATH=$PATH:/usr/local/go/bin
mg_bin=${MG_BIN:-/tmp/mg}
[ -n "${MG_BIN:-}" ] || go build -o /tmp/mg ./cmd/matchgate
go build -o /tmp/loadgen ./cmd/loadgen
cat > /tmp/bench-costs.yaml <<'EOF'
queues:
  - name: pairs
    players: 2
    window:
      - {after: 0s, width: 100000}
  - name: hold
    players: 10
    window:
      - {after: 0s, width: 0.001}
    deadline: 1h
    heartbeatTimeout: 1h
rankings:
  - name: products
    source: events
    metrics: {views: {weight: 1}}
    top: 100
    refresh: 1s
EOF
schema=bench_costs_$$
admin=bench-admin-token-0123456789abcdef0123
psql -q -h 127.0.0.1 -U postgres test -c "create schema $schema"
pg="postgres://postgres@127.0.0.1:5432/test?sslmode=disable&search_path=$schema"
"$mg_bin" serve --addr 127.0.0.1:18821 --secret benchsecret-0123456789abcdef --redis-url redis://127.0.0.1:6379/0 \
  --redis-prefix $schema --postgres-url "$pg" --config /tmp/bench-costs.yaml --log-level warn --admin-token $admin \
  --limit-connects-ip off --limit-messages off --limit-joins-ip off --limit-joins-user off \
  --limit-cancels-user off --limit-accepts-user off --limit-reads-user off --limit-reads-ip off \
  --limit-heartbeats-user off --max-connections 0 2>/tmp/costs-mg.log &
mg=$!
for _ in $(seq 100); do curl -sf http://127.0.0.1:18821/readyz >/dev/null && break; sleep 0.1; done
tck=$(getconf CLK_TCK)
cpu() { awk -v t="$tck" '{print ($14+$15)/t}' "/proc/$1/stat"; }           # seconds
# PostgreSQL's processes, pid and CPU seconds: a backend may end in between,
# so the difference counts the processes alive at the end (from 0 if new).
pgcpu() { for p in $(pgrep -u postgres); do awk -v t="$tck" '{print $1, ($14+$15)/t}' "/proc/$p/stat" 2>/dev/null || true; done; }
pgdelta() { awk 'NR==FNR{a[$1]=$2; next} {s+=$2-a[$1]} END{print s+0}' <(echo "$1") <(echo "$2"); }
rcpu() { redis-cli info cpu | awk -F: '/^used_cpu_(user|sys):/{s+=$2} END{print s}'; }
rcalls() { redis-cli info commandstats | awk -F'calls=' '/^cmdstat_/{split($2,a,","); s+=a[1]} END{print s}'; }
commits() { psql -h 127.0.0.1 -U postgres test -Atc "select xact_commit from pg_stat_database where datname='test'"; }
lg=(/tmp/loadgen --url http://127.0.0.1:18821 --secret benchsecret-0123456789abcdef --duration "$DUR" --drain 3s)
case $MODE in
join) lg+=(--mode players --queues pairs=1 --sockets "$SOCKETS" --connect-rate 4000 --join-rate "$RATE") ;;
idle) lg+=(--mode idle --sockets "$SOCKETS" --connect-rate 4000 --ping-interval "$PING" --settle 1s) ;;
push) lg+=(--mode push --sockets "$SOCKETS" --connect-rate 4000 --push-rate "$RATE" --redis-prefix "$schema") ;;
poll | heartbeat)
  beat=1h; [ "$MODE" = heartbeat ] && beat=$INTERVAL
  lg+=(--mode players --queues hold=1 --sockets 0 --rest-players "$SOCKETS" --join-rate "$SOCKETS"
    --poll-interval "$INTERVAL" --heartbeat-interval "$beat" --drain 0s) ;;
ranking) lg+=(--mode rankings --admin-token $admin --ranking-items 100 --events "$EVENTS" --read-rate 0
  --verify-wait 30s) ;;
*) echo "MODE must be join, idle, push, poll, heartbeat or ranking" >&2; exit 2 ;;
esac
joins() { curl -s http://127.0.0.1:18821/metrics | awk '/^matchgate_joins_total/{s+=$2} END{print s+0}'; }
TIMEFORMAT='%U %S'
snap0() { m0=$(cpu $mg); p0=$(pgcpu); r0=$(rcpu); c0=$(rcalls); x0=$(commits); t0=$(date +%s.%N); }
if [ "$MODE" = join ] && [ "${CONNECTS:-1}" = 0 ]; then
  # From the first join on: the loadgen's players join once every socket has
  # connected and heard its hello, so the connects are left out.
  { time "${lg[@]}" > /tmp/costs-loadgen.txt 2>&1; } 2> /tmp/costs-loadgen-cpu.txt &
  run=$!
  for _ in $(seq 1200); do [ "$(joins)" -gt 0 ] && break; sleep 0.05; done
  lgpid=$(pgrep -n -f "^/tmp/loadgen --url http://127.0.0.1:18821" || true)
  lg0=$( [ -n "$lgpid" ] && cpu "$lgpid" || echo 0)
  j0=$(joins); snap0
  wait $run
  j1=$(joins)
else
  lg0=0; snap0
  { time "${lg[@]}" > /tmp/costs-loadgen.txt 2>&1; } 2> /tmp/costs-loadgen-cpu.txt
fi
l=$(awk -v z="$lg0" '{print $1 + $2 - z}' /tmp/costs-loadgen-cpu.txt)
m1=$(cpu $mg); p1=$(pgcpu); r1=$(rcpu); c1=$(rcalls); x1=$(commits); t1=$(date +%s.%N)
case $MODE in
join) what=join; ops=$(awk '/^  joins sent/{print $5}' /tmp/costs-loadgen.txt)
  [ "${CONNECTS:-1}" = 0 ] && ops=$((j1 - j0)) && what="join, connects left out"
  grep -E "joins sent|join→joined|join→match.found|tickets:" /tmp/costs-loadgen.txt ;;
idle) what=socket-second; ops=$(echo "$SOCKETS * ($t1 - $t0)" | bc)
  grep -E "sockets:|pings:" /tmp/costs-loadgen.txt ;;
push) what=push; ops=$(awk '/^  pushes:/{print $2}' /tmp/costs-loadgen.txt)
  grep -E "pushes:|push delivery" /tmp/costs-loadgen.txt ;;
poll | heartbeat) what="REST request"; ops=$(awk '/^  rest players:/{print $3 + $5}' /tmp/costs-loadgen.txt)
  grep -E "rest players:|tickets:" /tmp/costs-loadgen.txt ;;
ranking) what=event; ops=$(awk '/^  ingest:/{print $2}' /tmp/costs-loadgen.txt)
  grep -E "ingest:|verified" /tmp/costs-loadgen.txt ;;
esac
awk -v j="$ops" -v w="$what" -v m="$(echo "$m1 - $m0" | bc)" -v p="$(pgdelta "$p0" "$p1")" -v r="$(echo "$r1 - $r0" | bc)" \
    -v c="$((c1 - c0))" -v x="$((x1 - x0))" -v s="$SOCKETS" -v l="$l" 'BEGIN{
  printf "per %s (%d of them, %d sockets): CPU matchgate %.3f ms, Redis %.3f ms, PostgreSQL %.3f ms, all %.3f ms (load generator %.3f ms); Redis commands %.2f; PostgreSQL commits %.2f\n",
    w, j, s, 1000*m/j, 1000*r/j, 1000*p/j, 1000*(m+r+p)/j, 1000*l/j, c/j, x/j }'
kill -INT $mg; wait $mg 2>/dev/null || true
psql -q -h 127.0.0.1 -U postgres test -c "drop schema $schema cascade" 2>/dev/null
redis-cli --scan --pattern "$schema*" | xargs -r -n 500 redis-cli unlink >/dev/null
