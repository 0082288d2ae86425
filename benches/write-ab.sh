#!/usr/bin/env bash
# Creates and updates, two API server binaries side by side (A/B): server CPU per operation
# and throughput. Each run starts a fresh server (temporary data dir, default durable sync,
# plain HTTP on loopback with the admin token, garbage collector off where the binary has
# --controllers) and runs N Pod creates, N 1 KiB ConfigMap creates, then N PUTs over 1,000 of
# those ConfigMaps, C in flight; around each workload the server's CPU time (utime+stime from
# /proc/PID/stat) is read. Runs alternate A, B, A, B... RUNS times; each prints one line:
#
#   <label> <ops/s>/s:<CPU µs per op>us  (Pod creates, ConfigMap creates, ConfigMap PUTs)
#
# and the medians per binary come last. The managedFields target of issue 14 is read from
# this (A = the last commit without tracking, B = now).
#
#   benches/write-ab.sh --a BIN --b BIN [--loadgen BIN] [-n N] [-c C] [--runs R] [--smoke]
#
# Defaults: N=30000, C=64, RUNS=5; --smoke: N=300, C=8, RUNS=1. Without --loadgen it is
# built in release mode.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=benches/lib.sh
. benches/lib.sh

a= b= loadgen= n=${N:-30000} conc=${C:-64} runs=${RUNS:-5}
while (($#)); do
    case $1 in
    --a) a=$2 && shift ;;
    --b) b=$2 && shift ;;
    --loadgen) loadgen=$2 && shift ;;
    -n) n=$2 && shift ;;
    -c) conc=$2 && shift ;;
    --runs) runs=$2 && shift ;;
    --smoke) n=300 conc=8 runs=1 ;;
    -h | --help) sed -n '2,/^set /{/^set /d;s/^# \{0,1\}//;p}' "$0" && exit 0 ;;
    *) echo "write-ab.sh: unknown argument $1 (see --help)" >&2 && exit 2 ;;
    esac
    shift
done
[ -n "$a" ] && [ -n "$b" ] || { echo "write-ab.sh: --a and --b are required" >&2 && exit 2; }
ensure_loadgen

tck=$(getconf CLK_TCK)
results=$(mktemp)
dir= pid=
trap 'stop_server; rm -f "$results"' EXIT

run() { # label binary
    dir=$(mktemp -d)
    start_plain_server "$2" "$dir"
    "${lg[@]}" create --kind configmaps -n 10 --prefix warm -c 4 >/dev/null
    local line=$1 w
    for w in "create --kind pods -n $n --prefix p" "create --kind configmaps -n $n --prefix c" \
        "update --kind configmaps -n $((n < 1000 ? n : 1000)) --ops $n --prefix c"; do
        local c0 t0 t1 c1
        c0=$(cpu_ticks "$pid")
        t0=$(date +%s%N)
        # shellcheck disable=SC2086 # the workload's words
        "${lg[@]}" $w -c "$conc" >/dev/null
        t1=$(date +%s%N)
        c1=$(cpu_ticks "$pid")
        line+=" $((n * 1000000000 / (t1 - t0)))/s:$(((c1 - c0) * 1000000 / tck / n))us"
    done
    stop_server
    echo "$line" | tee -a "$results"
}

for _ in $(seq "$runs"); do
    run A "$a"
    run B "$b"
done
echo "medians (Pod creates, ConfigMap creates, ConfigMap PUTs):"
for label in A B; do
    awk -v l="$label" '$1 == l { for (i = 2; i <= 4; i++) { split($i, p, "[/:u]"); ops[i, NR] = p[1]; us[i, NR] = p[3] } n++; rows[n] = NR }
        function med(arr, i,   v, k, m, t) { m = 0; for (k = 1; k <= n; k++) v[++m] = arr[i, rows[k]] + 0
            for (k = 1; k <= m; k++) for (t = k + 1; t <= m; t++) if (v[t] < v[k]) { x = v[k]; v[k] = v[t]; v[t] = x }
            return m % 2 ? v[(m + 1) / 2] : (v[m / 2] + v[m / 2 + 1]) / 2 }
        END { printf "%s", l; for (i = 2; i <= 4; i++) printf " %d/s:%dus", med(ops, i), med(us, i); print "" }' "$results"
done
