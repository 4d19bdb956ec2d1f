#!/usr/bin/env bash
# The cost of a durable join, measured (docs/CAPACITY.md): one process on
# the Redis at 127.0.0.1:6379 and the PostgreSQL at 127.0.0.1:5432 (a schema
# of its own, dropped at the end), cmd/loadgen's players mode on the pairs
# queue at RATE joins/s for DUR; CPU of matchgate, Redis and PostgreSQL from
# /proc and Redis's INFO, Redis commands from INFO commandstats, PostgreSQL
# commits from pg_stat_database, each divided by the joins. Loopback only.
set -euo pipefail
RATE=${RATE:-2000}; DUR=${DUR:-20s}; SOCKETS=${SOCKETS:-4000}
cd "$(dirname "$0")/.."
export PATH=$PATH:/usr/local/go/bin
go build -o /tmp/mg ./cmd/matchgate
go build -o /tmp/loadgen ./cmd/loadgen
printf 'queues:\n  - name: pairs\n    players: 2\n    window:\n      - {after: 0s, width: 100000}\n' > /tmp/pairs.yaml
schema=bench_costs_$$
psql -q -h 127.0.0.1 -U postgres test -c "create schema $schema"
pg="postgres://postgres@127.0.0.1:5432/test?sslmode=disable&search_path=$schema"
/tmp/mg serve --addr 127.0.0.1:18821 --secret benchsecret-0123456789abcdef --redis-url redis://127.0.0.1:6379/0 \
  --redis-prefix $schema --postgres-url "$pg" --config /tmp/pairs.yaml --log-level warn \
  --limit-connects-ip off --limit-messages off --limit-joins-ip off --limit-joins-user off \
  --limit-cancels-user off --limit-accepts-user off --limit-reads-user off --limit-reads-ip off \
  --limit-heartbeats-user off --max-connections 0 2>/tmp/costs-mg.log &
mg=$!
for _ in $(seq 100); do curl -sf http://127.0.0.1:18821/readyz >/dev/null && break; sleep 0.1; done
tck=$(getconf CLK_TCK)
cpu() { awk -v t="$tck" '{print ($14+$15)/t}' "/proc/$1/stat"; }           # seconds
pgcpu() { local s=0; for p in $(pgrep -u postgres); do s=$(awk -v s="$s" -v t="$tck" '{print s+($14+$15)/t}' "/proc/$p/stat" 2>/dev/null || echo "$s"); done; echo "$s"; }
rcpu() { redis-cli info cpu | awk -F: '/^used_cpu_(user|sys):/{s+=$2} END{print s}'; }
rcalls() { redis-cli info commandstats | awk -F'calls=' '/^cmdstat_/{split($2,a,","); s+=a[1]} END{print s}'; }
commits() { psql -h 127.0.0.1 -U postgres test -Atc "select xact_commit from pg_stat_database where datname='test'"; }
m0=$(cpu $mg); p0=$(pgcpu); r0=$(rcpu); c0=$(rcalls); x0=$(commits)
/tmp/loadgen --mode players --url http://127.0.0.1:18821 --secret benchsecret-0123456789abcdef \
  --queues pairs=1 --sockets "$SOCKETS" --connect-rate 4000 --join-rate "$RATE" --duration "$DUR" --drain 3s > /tmp/costs-loadgen.txt 2>&1
m1=$(cpu $mg); p1=$(pgcpu); r1=$(rcpu); c1=$(rcalls); x1=$(commits)
joins=$(awk '/^  joins sent/{print $5}' /tmp/costs-loadgen.txt)
grep -E "joins sent|join→joined|join→match.found|tickets:" /tmp/costs-loadgen.txt
awk -v j="$joins" -v m="$(echo "$m1 - $m0" | bc)" -v p="$(echo "$p1 - $p0" | bc)" -v r="$(echo "$r1 - $r0" | bc)" \
    -v c="$((c1 - c0))" -v x="$((x1 - x0))" -v s="$SOCKETS" 'BEGIN{
  printf "per join (%d joins, %d sockets): CPU matchgate %.3f ms, Redis %.3f ms, PostgreSQL %.3f ms, all %.3f ms; Redis commands %.1f; PostgreSQL commits %.2f\n",
    j, s, 1000*m/j, 1000*r/j, 1000*p/j, 1000*(m+r+p)/j, c/j, x/j }'
kill -INT $mg; wait $mg 2>/dev/null || true
psql -q -h 127.0.0.1 -U postgres test -c "drop schema $schema cascade" 2>/dev/null
redis-cli --scan --pattern "$schema*" | xargs -r -n 500 redis-cli unlink >/dev/null
