#!/usr/bin/env bash
# One run of the priority-and-fairness list flood (benches/REPORT.md, "list flood that
# saturates the seats"): a fresh server on loopback with three static tokens (an exempt
# `system:masters` admin, a flooder and a victim), N ConfigMaps, then `loadgen apf-flood`.
#
#   benches/apf-flood.sh APISERVER LOADGEN on|off FLOODERS [SERVER FLAGS...]
#
# Environment: OBJECTS (20000), FLOOD_PATH (a label-selector list that matches nothing: the
# server scans every object, the client receives almost nothing), DURATION (20s), JSON (a
# file for the report). Example, 20 seats:
#   benches/apf-flood.sh target/release/apiserver target/release/loadgen on 200 \
#     --max-requests-inflight 10 --max-mutating-requests-inflight 10
set -euo pipefail
bin=$1 loadgen=$2 apf=$3 flooders=$4
shift 4
dir=$(mktemp -d)
pid=
trap 'kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; rm -rf "$dir"' EXIT
mkdir -p "$dir/data"
printf 'admintok,admin,admin,"system:masters"\nfloodtok,flooder,flooder\nvictimtok,victim,victim\n' \
    >"$dir/data/tokens.csv"
enabled=false
[ "$apf" = on ] && enabled=true
# shellcheck source=benches/lib.sh
. "$(dirname "$0")/lib.sh"
start_server "$bin" "$dir" --enable-priority-and-fairness="$enabled" "$@"
"$loadgen" "${conn[@]}" -q create --namespace default --count "${OBJECTS:-20000}" --size 256 -c 32
json=()
[ -n "${JSON:-}" ] && json=(--json "$JSON")
"$loadgen" "${conn[@]}" "${json[@]}" apf-flood --flood-token floodtok --victim-token victimtok \
    --flood-concurrency "$flooders" \
    --flood-path "${FLOOD_PATH:-/api/v1/namespaces/default/configmaps?labelSelector=app%3Dnone}" \
    --duration "${DURATION:-20s}"
