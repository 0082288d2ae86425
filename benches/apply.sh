#!/usr/bin/env bash
# Server-side apply vs plain update, server CPU per operation: a fresh keel on loopback (HTTPS,
# a temporary data dir, --sync none, garbage collector off), C ~10 KiB Deployments created by
# apply, then ROUNDS rounds of N applies (`loadgen apply`) followed by N plain PUTs of the same
# Deployments with the same value changes (`loadgen apply --update`). Around each phase the
# server's CPU time (utime+stime from /proc/PID/stat) is read; per phase it prints ops, ops/s
# and server CPU µs per op, per round the ratio apply/update, and at the end the median ratio
# (the issue's target: at most 2).
#
#   benches/apply.sh [--smoke] [-n N] [--count C] [-c CONCURRENCY] [--rounds R]
#                    [--apiserver BIN] [--loadgen BIN] [-- SERVER FLAGS...]
#
# Defaults (or environment): N=20000, COUNT=100, CONCURRENCY=16, ROUNDS=3. Without
# --apiserver/--loadgen both are built in release mode first; --apiserver measures another
# binary (A/B). --smoke: N=200, COUNT=10, CONCURRENCY=4, ROUNDS=2.
set -euo pipefail
cd "$(dirname "$0")/.."

n=${N:-20000} count=${COUNT:-100} conc=${CONCURRENCY:-16} rounds=${ROUNDS:-3}
apiserver= loadgen= server_flags=()
while (($#)); do
    case $1 in
    --smoke) n=200 count=10 conc=4 rounds=2 ;;
    -n) n=$2 && shift ;;
    --count) count=$2 && shift ;;
    -c | --concurrency) conc=$2 && shift ;;
    --rounds) rounds=$2 && shift ;;
    --apiserver) apiserver=$2 && shift ;;
    --loadgen) loadgen=$2 && shift ;;
    --) shift && server_flags=("$@") && break ;;
    -h | --help) sed -n '2,/^set /{/^set /d;s/^# \{0,1\}//;p}' "$0" && exit 0 ;;
    *) echo "apply.sh: unknown argument $1 (see --help)" >&2 && exit 2 ;;
    esac
    shift
done

if [ -z "$apiserver" ] || [ -z "$loadgen" ]; then
    export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"
    cargo build --release --locked -p keel-server --bin apiserver -p keel-tools --bin loadgen
    apiserver=${apiserver:-$CARGO_TARGET_DIR/release/apiserver}
    loadgen=${loadgen:-$CARGO_TARGET_DIR/release/loadgen}
fi

dir=$(mktemp -d)
pid=
trap 'kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; rm -rf "$dir"' EXIT
"$apiserver" --data-dir "$dir/data" --bind-address 127.0.0.1 --secure-port 0 --sync none \
    --controllers=-garbage-collector-controller,'*' "${server_flags[@]}" >"$dir/server.log" 2>&1 &
pid=$!
for _ in $(seq 300); do
    [ -s "$dir/data/port" ] && [ -s "$dir/data/admin.kubeconfig" ] && break
    kill -0 "$pid" 2>/dev/null || { cat "$dir/server.log" >&2 && exit 1; }
    sleep 0.1
done
[ -s "$dir/data/port" ] || { echo "apply.sh: server did not start" >&2 && exit 1; }
lg=("$loadgen" --kubeconfig "$dir/data/admin.kubeconfig" -q)

tck=$(getconf CLK_TCK)
cpu_ticks() { # utime + stime of the server; the fields after the ")" that ends its name
    local s
    s=$(<"/proc/$pid/stat")
    s=${s##*) }
    awk '{print $12 + $13}' <<<"$s"
}
per_round=$(((n + count - 1) / count))
next_round=1
# phase NAME [FLAGS...]: N operations from the next round on; prints its line, sets `us`.
phase() {
    local name=$1 before after
    shift
    before=$(cpu_ticks)
    "${lg[@]}" --json "$dir/out.json" apply --count "$count" --ops "$n" -c "$conc" \
        --first-round "$next_round" "$@" >/dev/null
    after=$(cpu_ticks)
    next_round=$((next_round + per_round))
    local ops_s
    ops_s=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["ops"][0]["ops_per_s"])' \
        "$dir/out.json")
    us=$(awk -v t="$((after - before))" -v k="$tck" -v n="$n" 'BEGIN {printf "%.0f", t * 1e6 / k / n}')
    printf '  %-16s ops=%-7s ops/s=%-9.1f server CPU/op=%7s µs\n' "$name" "$n" "$ops_s" "$us"
}

echo "apply.sh: $apiserver," \
    "N=$n ops per phase over $count Deployments, concurrency $conc, $rounds rounds"
# Round 0 creates the Deployments by apply (not measured).
"${lg[@]}" apply --count "$count" --ops "$count" -c "$conc" --first-round 0 >/dev/null
ratios=()
for r in $(seq "$rounds"); do
    echo "round $r"
    phase apply
    a=$us
    phase apply-as-update --update --assume-exist
    u=$us
    ratio=$(awk -v a="$a" -v u="$u" 'BEGIN {printf "%.2f", (u > 0) ? a / u : 0}')
    ratios+=("$ratio")
    echo "  apply/update server CPU ratio: $ratio"
done
median=$(printf '%s\n' "${ratios[@]}" | sort -g | awk '{v[NR] = $1}
    END {printf "%.2f", NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}')
echo "median apply/update server CPU ratio over $rounds rounds: $median (target: at most 2)"
