#!/usr/bin/env bash
# Sharded against unsharded on local Redis Clusters of 2 and 3 masters
# (issue 21):
#
#     scripts/bench.sh --sharded [--items N] [--shards "1 6"] [--batch 1000]
#                                [--masters "2 3"] [--in-flight 6]
#
# For each master count M, starts M cluster-enabled redis-servers on free
# loopback ports (never 6379), gives each an equal share of the slots and
# makes them a cluster, then for S = 1 and S = 6 on the same cluster:
#   * `rotabloom filter` on N lines (default 1,000,000), --in-flight 6,
#     --batch 1000 (a sharded filter's batch is 1000 lines per shard);
#   * library batches of 1,000 (examples/sharded_batches.rs), a plain
#     connection to each master, each batch split by shard, each master's
#     shards side by side in one pipeline, the masters at once;
# and prints one row per run: seconds, lines (items) per second, the
# client's CPU and each master's (used_cpu_user + used_cpu_sys deltas from
# INFO cpu), in seconds and in microseconds per item, and the load average
# when the row ended (the machine is shared: compare rows of one run). The
# servers are stopped by PID after each cluster. Rows go to
# docs/BENCHMARKS.md by hand.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
items=1000000
shard_counts="1 6"
batch=1000
master_counts="2 3"
in_flight=6
while [ $# -gt 0 ]; do
    case "$1" in
        --items) items="$2"; shift 2 ;;
        --shards) shard_counts="$2"; shift 2 ;;
        --batch) batch="$2"; shift 2 ;;
        --masters) master_counts="$2"; shift 2 ;;
        --in-flight) in_flight="$2"; shift 2 ;;
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
stop_nodes() {
    for p in "${pids[@]+"${pids[@]}"}"; do
        kill -TERM "$p" 2>/dev/null || true
    done
    for p in "${pids[@]+"${pids[@]}"}"; do
        for _ in $(seq 100); do
            kill -0 "$p" 2>/dev/null || break
            sleep 0.1
        done
    done
    pids=()
    ports=()
}
trap stop_nodes EXIT INT TERM

# M masters, no replicas, slots split evenly: made by hand (CLUSTER
# ADDSLOTSRANGE and MEET) because `redis-cli --cluster create` wants 3.
start_cluster() {
    local m="$1"
    for i in $(seq 0 $((m - 1))); do
        port="$(free_port)"
        dir="$work/m$m-node$i"
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
    for i in $(seq 0 $((m - 1))); do
        lo=$((16384 * i / m))
        hi=$((16384 * (i + 1) / m - 1))
        redis-cli -p "${ports[$i]}" cluster addslotsrange "$lo" "$hi" >/dev/null
        [ "$i" -gt 0 ] && redis-cli -p "${ports[0]}" cluster meet 127.0.0.1 "${ports[$i]}" >/dev/null
    done
    for _ in $(seq 300); do
        ok=0
        for port in "${ports[@]}"; do
            redis-cli -p "$port" cluster info | grep -q 'cluster_state:ok' && ok=$((ok + 1))
            known="$(redis-cli -p "$port" cluster info | tr -d '\r' | sed -n 's/^cluster_known_nodes://p')"
            [ "$known" = "$m" ] || ok=0
        done
        [ "$ok" -eq "$m" ] && break
        sleep 0.1
    done
}

# Server CPU seconds of each node, space-separated.
server_cpu() {
    for port in "${ports[@]}"; do
        redis-cli -p "$port" info cpu | tr -d '\r' |
            awk -F: '/^used_cpu_(user|sys):/ { s += $2 } END { printf "%.2f ", s }'
    done
}

# One table row: run, M, S, seconds, client CPU seconds, the two
# server_cpu outputs.
row() {
    python3 - "$@" "$items" "$(cut -d' ' -f1-3 /proc/loadavg)" <<'PY'
import sys
run, m, s, secs, ccpu, a, b, n, load = sys.argv[1:]
secs, ccpu, n = float(secs), float(ccpu), int(n)
d = [y - x for x, y in zip(map(float, a.split()), map(float, b.split()))]
per = lambda x: f"{x / n * 1e6:.1f}"
print(f"| {run} | {m} | {s} | {secs:.2f} | {n / secs:,.0f} | {ccpu:.2f} ({per(ccpu)}) | "
      f"{' + '.join(f'{x:.2f}' for x in d)} ({per(sum(d))}) | {max(d) / secs * 100:.0f}% | {load} |")
PY
}

seq -f 'https://example.com/page/%.0f' 1 "$items" >"$work/lines"
printf '| run | masters | S | seconds | per second | client CPU s (µs/item) | each master CPU s (µs/item, sum) | busiest master | load average |\n'
printf '|-----|---------|---|---------|------------|------------------------|----------------------------------|----------------|--------------|\n'
for m in $master_counts; do
    start_cluster "$m"
    url="redis+cluster://127.0.0.1:${ports[0]}"
    for s in $shard_counts; do
        name="bench-filter-$s"
        "$cli" --redis "$url" create "$name" --kind bloom --capacity "$items" --shards "$s" >/dev/null
        before="$(server_cpu)"
        /usr/bin/time -f '%e %U %S' -o "$work/time" \
            "$cli" --redis "$url" --in-flight "$in_flight" filter "$name" --batch "$batch" \
            <"$work/lines" >"$work/out-$m-$s"
        after="$(server_cpu)"
        read -r secs user sys <"$work/time"
        # New lines printed: all but the filter's false positives (about
        # 0.5% of a filter filled to its capacity at 1%).
        kept="$(wc -l <"$work/out-$m-$s")"
        echo "sharded bench: M=$m S=$s: $kept of $items lines new" >&2
        row "rotabloom filter, --in-flight $in_flight, --batch $batch" "$m" "$s" "$secs" \
            "$(python3 -c "print($user + $sys)")" "$before" "$after"
        "$cli" --redis "$url" drop "$name" --yes >/dev/null

        before="$(server_cpu)"
        json="$("$lib" "redis://127.0.0.1:${ports[0]}/" "$s" "$items" "$batch" 0)"
        after="$(server_cpu)"
        read -r secs ccpu <<<"$(python3 -c "import json,sys; r=json.loads(sys.argv[1]); print(r['seconds'], r['client_cpu_seconds'])" "$json")"
        row "library batches of $batch, a connection per master" "$m" "$s" "$secs" "$ccpu" "$before" "$after"
    done
    stop_nodes
done
