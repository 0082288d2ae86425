#!/usr/bin/env bash
# An informer's first sync of N Pods, by streaming list (watch with sendInitialEvents, read
# to the end bookmark) and by paginated list (limit 500 and continue, client-go's default),
# alternated in one run against one server on loopback: time per sync (loadgen's p50) and
# the server's resident memory above its idle figure (sampled every 20 ms).
#
#   benches/streaming-list.sh APISERVER LOADGEN [PODS=100000] [ROUNDS=3]
set -euo pipefail
bin=$1 loadgen=$2 pods=${3:-100000} rounds=${4:-3}
dir=$(mktemp -d)
pid=
trap 'kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; rm -rf "$dir"' EXIT
mkdir -p "$dir/data"
printf 'admintok,admin,admin,"system:masters"\n' >"$dir/data/tokens.csv"
# shellcheck source=benches/lib.sh
. "$(dirname "$0")/lib.sh"
# loadgen's pods name a ReplicaSet that does not exist: keep the collector off them.
start_server "$bin" "$dir" --controllers=-garbage-collector-controller,'*'
start=$(date +%s.%N)
"$loadgen" "${conn[@]}" -q create --kind pods --namespace sync --count "$pods" -c 32 >/dev/null
echo "created $pods pods in $(echo "$(date +%s.%N) - $start" | bc) s"
rss() { awk '/VmRSS/ {print $2}' "/proc/$pid/status"; }
sleep 2
idle=$(rss)
echo "server RSS idle: $((idle / 1024)) MiB"
run() { # mode, flags...
    local mode=$1
    shift
    : >"$dir/rss"
    (while true; do rss >>"$dir/rss"; sleep 0.02; done) &
    local sampler=$!
    "$loadgen" "${conn[@]}" -q --json "$dir/out.json" list --kind pods --ops 3 -c 1 "$@" >/dev/null
    kill "$sampler"
    wait "$sampler" 2>/dev/null || true
    local peak
    peak=$(sort -n "$dir/rss" | tail -1)
    python3 - "$dir/out.json" "$mode" "$(((peak - idle) / 1024))" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
op = r["ops"][0]
lat = op["latency_us"]
print(f"{sys.argv[2]:<10} syncs={op['ops']} objects/sync={op['objects'] // max(op['ops'], 1)} "
      f"p50={lat['p50'] / 1000:.0f} ms max={lat['max'] / 1000:.0f} ms "
      f"MiB/s={op['bytes_per_s'] / 2**20:.0f} server RSS growth={sys.argv[3]} MiB")
PY
}
for _ in $(seq "$rounds"); do
    run paged --page-size 500
    run streaming --streaming
done
