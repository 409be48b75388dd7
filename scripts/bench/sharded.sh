#!/usr/bin/env bash
# Sharded against unsharded on one local 3-master Redis Cluster (issue 21):
#
#     scripts/bench.sh --sharded [--items N] [--shards "1 6"] [--batch 1000]
#
# Starts 3 cluster-enabled redis-servers on free loopback ports (never
# 6379), makes them a cluster, then for S = 1 and S = 6 on the same cluster:
#   * `rotabloom filter` on N lines (default 1,000,000), --in-flight 6;
#   * library batches of 1,000 (examples/sharded_batches.rs), 3 cluster
#     connections, each batch split by shard and sent at once;
# and prints one row per run: seconds, lines (items) per second, the
# client's CPU seconds and the servers' (sum of the 3 nodes' used_cpu_user
# + used_cpu_sys deltas), and the largest share one node took. The servers
# are stopped by PID at the end. Rows go to docs/BENCHMARKS.md by hand.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
items=1000000
shard_counts="1 6"
batch=1000
while [ $# -gt 0 ]; do
    case "$1" in
        --items) items="$2"; shift 2 ;;
        --shards) shard_counts="$2"; shift 2 ;;
        --batch) batch="$2"; shift 2 ;;
        *) echo "sharded bench: unknown option $1" >&2; exit 2 ;;
    esac
done

target="${CARGO_TARGET_DIR:-$root/target}"
work="$root/target/bench/sharded"
rm -rf "$work"
mkdir -p "$work"

echo "sharded bench: building (release)" >&2
cargo build --release -q -p rotabloom-cli
cargo build --release -q --example sharded_batches
cli="$target/release/rotabloom"
lib="$target/release/examples/sharded_batches"

# A free port at most 55535: a cluster node also listens on port + 10000.
free_port() {
    python3 - <<'PY'
import random, socket
while True:
    port = random.randint(20000, 55535)
    try:
        for p in (port, port + 10000):
            s = socket.socket()
            s.bind(("127.0.0.1", p))
            s.close()
        print(port)
        break
    except OSError:
        continue
PY
}

pids=()
ports=()
cleanup() {
    for p in "${pids[@]+"${pids[@]}"}"; do
        kill -TERM "$p" 2>/dev/null || true
    done
}
trap cleanup EXIT INT TERM

for i in 0 1 2; do
    port="$(free_port)"
    dir="$work/node$i"
    mkdir -p "$dir"
    redis-server --port "$port" --bind 127.0.0.1 --dir "$dir" --cluster-enabled yes \
        --cluster-config-file nodes.conf --save '' --appendonly no --daemonize no \
        --logfile "$dir/log" &
    pids+=("$!")
    ports+=("$port")
done
for port in "${ports[@]}"; do
    for _ in $(seq 100); do
        redis-cli -p "$port" ping >/dev/null 2>&1 && break
        sleep 0.1
    done
done
redis-cli --cluster create $(printf '127.0.0.1:%s ' "${ports[@]}") --cluster-replicas 0 --cluster-yes >/dev/null
for _ in $(seq 200); do
    ok=0
    for port in "${ports[@]}"; do
        redis-cli -p "$port" cluster info | grep -q 'cluster_state:ok' && ok=$((ok + 1))
    done
    [ "$ok" -eq 3 ] && break
    sleep 0.1
done
url="redis+cluster://127.0.0.1:${ports[0]}"

# Server CPU seconds of each node, space-separated.
server_cpu() {
    for port in "${ports[@]}"; do
        redis-cli -p "$port" info cpu | tr -d '\r' |
            awk -F: '/^used_cpu_(user|sys):/ { s += $2 } END { printf "%.2f ", s }'
    done
}
# Sum and largest share of the deltas between two server_cpu outputs.
cpu_delta() {
    python3 - "$1" "$2" <<'PY'
import sys
a = [float(x) for x in sys.argv[1].split()]
b = [float(x) for x in sys.argv[2].split()]
d = [y - x for x, y in zip(a, b)]
t = sum(d)
print(f"{t:.2f} {max(d) / t * 100 if t else 0:.0f}")
PY
}

seq -f 'https://example.com/page/%.0f' 1 "$items" >"$work/lines"
printf '| run | S | seconds | per second | client CPU s | servers CPU s | busiest node |\n'
printf '|-----|---|---------|------------|--------------|---------------|--------------|\n'
for s in $shard_counts; do
    name="bench-filter-$s"
    "$cli" --redis "$url" create "$name" --kind bloom --capacity "$items" --shards "$s" >/dev/null
    before="$(server_cpu)"
    /usr/bin/time -f '%e %U %S' -o "$work/time" \
        "$cli" --redis "$url" --in-flight 6 filter "$name" --batch "$batch" <"$work/lines" >"$work/out-$s"
    after="$(server_cpu)"
    read -r secs user sys <"$work/time"
    read -r scpu share <<<"$(cpu_delta "$before" "$after")"
    # New lines printed: all but the filter's false positives (about 0.5%
    # of a filter filled to its capacity at 1%).
    kept="$(wc -l <"$work/out-$s")"
    echo "sharded bench: S=$s: $kept of $items lines new" >&2
    rate="$(python3 -c "print(f'{$items / $secs:,.0f}')")"
    ccpu="$(python3 -c "print(f'{$user + $sys:.2f}')")"
    printf '| rotabloom filter, %s lines, batches of %s | %s | %s | %s | %s | %s | %s%% |\n' \
        "$items" "$batch" "$s" "$secs" "$rate" "$ccpu" "$scpu" "$share"
    "$cli" --redis "$url" drop "$name" --yes >/dev/null

    before="$(server_cpu)"
    json="$("$lib" "redis://127.0.0.1:${ports[0]}/" "$s" "$items" "$batch" 3)"
    after="$(server_cpu)"
    read -r scpu share <<<"$(cpu_delta "$before" "$after")"
    python3 - "$json" "$scpu" "$share" <<'PY'
import json, sys
r = json.loads(sys.argv[1])
print(f"| library batches of {r['batch']:,}, {r['conns']} connections | {r['shards']} | {r['seconds']:.2f} | "
      f"{r['items_per_sec']:,.0f} | {r['client_cpu_seconds']:.2f} | {sys.argv[2]} | {sys.argv[3]}% |")
PY
done
