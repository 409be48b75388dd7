#!/usr/bin/env bash
# Server time per line of `rotabloom filter`, from INFO commandstats:
#
#     scripts/server-usec.sh ROTABLOOM_BINARY LABEL
#
# Starts a private redis-server on a free loopback port (with the RedisBloom
# module when $MODULE names redisbloom.so), makes a bloom filter of 10M
# items at p = 0.001 ($BACKEND: bitmap or redisbloom), pipes $LINES_N
# (default 200,000) URL-like lines through `filter`, once exactly once (the
# data script) and once at least once (the transaction; skipped by a binary
# without --delivery), and prints the µs per line of the top-level commands
# (marked *) and of each command above 0.02 µs per line (those inside a
# script or a transaction included). A figure the machine's load moves:
# compare binaries alternately, in one sitting (docs/BENCHMARKS.md).
set -euo pipefail
bin="$1"; label="$2"; lines="${LINES_N:-200000}"; backend="${BACKEND:-bitmap}"; module="${MODULE:-}"
dir="$(mktemp -d /tmp/rotabloom-usec.XXXXXX)"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$dir" --daemonize yes --pidfile "$dir/pid" ${module:+--loadmodule "$module"} >/dev/null
cleanup() {
    redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true
    rm -rf "$dir"
}
trap cleanup EXIT
for _ in $(seq 50); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
url="redis://127.0.0.1:$port"
seq 1 "$lines" | sed 's#^#https://example.com/path/#' >"$dir/in.txt"
for d in exactly-once at-least-once; do
    redis-cli -p "$port" flushall >/dev/null
    "$bin" --redis "$url" create probe --kind bloom --capacity 10000000 --error-rate 0.001 --backend "$backend" >/dev/null
    redis-cli -p "$port" config resetstat >/dev/null
    flag=()
    [ "$d" = at-least-once ] && flag=(--delivery "$d")
    if ! "$bin" --redis "$url" ${flag[@]+"${flag[@]}"} filter probe <"$dir/in.txt" >/dev/null 2>"$dir/err.txt"; then
        echo "$label $d: failed ($(head -c 200 "$dir/err.txt"))"
        continue
    fi
    redis-cli -p "$port" info commandstats | tr -d '\r' | awk -F'[:=,]' -v n="$lines" -v l="$label" -v d="$d" '
        /^cmdstat_/ {
            name = substr($1, 9)
            top = (name == "evalsha" || name == "eval" || name == "exec" || name == "watch" ||
                   name == "multi" || name == "unwatch" || name == "hgetall" || name == "hget")
            if (top) t += $5
            if ($5 / n > 0.02) s = s sprintf(" %s%s %.2f", name, top ? "*" : "", $5 / n)
        }
        END { printf "%s %s: %.2f us/line at top level (*);%s\n", l, d, t / n, s }'
done
