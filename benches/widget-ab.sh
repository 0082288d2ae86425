#!/usr/bin/env bash
# Custom-resource creates next to ConfigMap creates, per binary (A/B): issue 15's create
# target (Widgets within 80 % of ConfigMaps' rate) read on one binary or compared between
# two. Each run starts a fresh server (temporary data dir, default durable sync, plain HTTP
# on loopback with the admin token, garbage collector off where the binary has
# --controllers), makes 500 warm-up creates of each kind in other namespaces, then N 1 KiB
# ConfigMap creates and N Widget creates of the same JSON length (`loadgen create --kind
# widgets`: the 20-property schema with one CEL rule), C in flight; around each the
# server's CPU time (utime+stime from /proc/PID/stat) is read. Binaries alternate, RUNS
# rounds; each run prints
#
#   <label> cm <ops/s>/s:<CPU µs per op>us widgets <ops/s>/s:<CPU µs per op>us ratio <w/cm rate>
#
# and the median ratio per binary comes last.
#
#   benches/widget-ab.sh BIN [BIN...] [--loadgen BIN] [-n N] [-c C] [--runs R] [--smoke]
#
# Defaults: N=10000, C=32, RUNS=5; --smoke: N=300, C=8, RUNS=1. Without --loadgen it is
# built in release mode.
#
# CALLGRIND=1 counts the server's instructions instead (rates and CPU times swing by ±15 %
# on a shared 2-core host; instruction counts do not): each binary runs under
# `valgrind --tool=callgrind --instr-atstart=no` on one core with `--sync none`, and after
# the warm-up N (default 2000) creates of each kind, 8 in flight, are counted on their own:
#
#   <label> cm <Ir>/create (path <Ir>) widgets <Ir>/create (path <Ir>) ratio <w/cm>
#
# the whole process's instructions per create (what a CPU-bound rate follows: the ratio is
# ConfigMaps' over Widgets'), and the request path's (`handlers::serve`, inclusive: from the
# parsed request to the response, without HTTP, the store's commit or in-process watchers).
# The dumps stay in a temporary directory with KEEP=1.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=benches/lib.sh
. benches/lib.sh

callgrind=${CALLGRIND:-}
bins=() loadgen= n=${N:-10000} conc=${C:-32} runs=${RUNS:-5}
[ -n "$callgrind" ] && n=${N:-2000} conc=${C:-8} runs=${RUNS:-1}
while (($#)); do
    case $1 in
    --loadgen) loadgen=$2 && shift ;;
    -n) n=$2 && shift ;;
    -c) conc=$2 && shift ;;
    --runs) runs=$2 && shift ;;
    --smoke) n=300 conc=8 runs=1 ;;
    -h | --help) sed -n '2,/^set /{/^set /d;s/^# \{0,1\}//;p}' "$0" && exit 0 ;;
    -*) echo "widget-ab.sh: unknown argument $1 (see --help)" >&2 && exit 2 ;;
    *) bins+=("$1") ;;
    esac
    shift
done
((${#bins[@]})) || { echo "widget-ab.sh: name at least one server binary" >&2 && exit 2; }
ensure_loadgen

tck=$(getconf CLK_TCK)
results=$(mktemp)
dir= pid=
trap 'stop_server; rm -f "$results"' EXIT

run() { # label binary
    dir=$(mktemp -d)
    start_plain_server "$2" "$dir"
    "${lg[@]}" create --kind configmaps -n 500 --prefix warm --namespace warm -c 4 >/dev/null
    "${lg[@]}" create --kind widgets -n 500 --prefix warm --namespace warm -c 4 >/dev/null
    local line="$1" kind rates=()
    for kind in configmaps widgets; do
        local c0 t0 t1 c1 rate
        c0=$(cpu_ticks "$pid")
        t0=$(date +%s%N)
        "${lg[@]}" create --kind "$kind" -n "$n" --prefix b -c "$conc" >/dev/null
        t1=$(date +%s%N)
        c1=$(cpu_ticks "$pid")
        rate=$((n * 1000000000 / (t1 - t0)))
        rates+=("$rate")
        line+=" ${kind/configmaps/cm} $rate/s:$(((c1 - c0) * 1000000 / tck / n))us"
    done
    line+=" ratio $(awk -v w="${rates[1]}" -v c="${rates[0]}" 'BEGIN {printf "%.2f", w / c}')"
    stop_server
    echo "$line" | tee -a "$results"
}

# CALLGRIND=1: one binary's instructions per create of each kind (see above).
count() { # label binary
    dir=$(mktemp -d)
    callgrind_wrapper "$dir" "$2"
    START_WAIT_S=300 EXTRA_FLAGS="--cores 1 --sync none" start_plain_server "$dir/under-callgrind" "$dir"
    "${lg[@]}" create --kind configmaps -n 300 --prefix warm --namespace warm -c 4 >/dev/null
    "${lg[@]}" create --kind widgets -n 300 --prefix warm --namespace warm -c 4 >/dev/null
    local line="$1" kind whole=()
    for kind in configmaps widgets; do
        callgrind_control -z "$pid" >/dev/null 2>&1
        callgrind_control -i on "$pid" >/dev/null 2>&1
        "${lg[@]}" create --kind "$kind" -n "$n" --prefix b -c "$conc" >/dev/null
        callgrind_control -i off "$pid" >/dev/null 2>&1
        callgrind_control -d "$pid" >/dev/null 2>&1
        local last t p
        last=$(newest_dump "$dir")
        # (From the run's directory, as rbac-get.sh reads its dumps.)
        read -r t p < <((cd "$dir" && callgrind_annotate --inclusive=yes "$last" 2>/dev/null) |
            awk -v n="$n" '/PROGRAM TOTALS/{gsub(",","",$1); t=$1}
                /handlers\/mod\.rs:keel_server::handlers::serve::[{][{]closure[}][}] \[/ {gsub(",","",$1); p+=$1}
                END{printf "%d %d\n", t/n, p/n}')
        whole+=("$t")
        line+=" ${kind/configmaps/cm} $t/create (path $p)"
    done
    line+=" ratio $(awk -v w="${whole[1]}" -v c="${whole[0]}" 'BEGIN {printf "%.2f", c / w}')"
    if [ -n "${KEEP:-}" ]; then
        kill "$pid" && wait "$pid" 2>/dev/null
        echo "dumps kept in $dir" >&2
        pid= dir=
    else
        stop_server
    fi
    echo "$line"
}
if [ -n "$callgrind" ]; then
    for b in "${bins[@]}"; do
        count "$(basename "$b")" "$b"
    done
    exit 0
fi

for _ in $(seq "$runs"); do
    for b in "${bins[@]}"; do
        run "$(basename "$b")" "$b"
    done
done
echo "median Widget/ConfigMap create-rate ratio:"
for b in "${bins[@]}"; do
    awk -v l="$(basename "$b")" '$1 == l { v[++m] = $NF }
        END { for (k = 1; k <= m; k++) for (t = k + 1; t <= m; t++) if (v[t] < v[k]) { x = v[k]; v[k] = v[t]; v[t] = x }
              printf "%s %.2f\n", l, m % 2 ? v[(m + 1) / 2] : (v[m / 2] + v[m / 2 + 1]) / 2 }' "$results"
done
