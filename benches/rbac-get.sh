#!/usr/bin/env bash
# GETs over HTTPS as the admin (system:masters, allowed before RBAC is asked), as a user
# allowed by one RoleBinding among 10,000, and with a service account token (TokenRequest)
# bound through another (issue 16's target: each within 5 % of the admin's rate), on one
# server with `--authorization-mode RBAC`, in alternating rounds.
#
# The policy: 1,000 Roles (10 in each of 100 namespaces) and 10,000 RoleBindings (100 per
# namespace, each binding another user), plus the user's one binding in the namespace of
# the objects, among that namespace's 100. Then ROUNDS rounds of N GETs of 1,000 ConfigMaps
# (C in flight) as the admin, the user and the service account, each round starting with
# the next of them; each round prints
#
#   admin <ops/s>/s:<CPU µs per op>us user <ops/s>/s:<CPU µs per op>us ratio <user/admin rate>
#     sa <ops/s>/s:<CPU µs per op>us sa-ratio <sa/admin rate>
#
# and the median ratios come last.
#
#   benches/rbac-get.sh [BIN] [--loadgen BIN] [-n N] [-c C] [--rounds R] [--smoke]
#
# Defaults: BIN target/release/apiserver, N=40000, C=32, ROUNDS=5; --smoke: 1,000 GETs,
# 20 namespaces, one round.
#
# CALLGRIND=1 counts instructions instead of timing (the rates swing by ±15 % between rounds
# on a shared 2-core host; instruction counts do not): the server runs under
# `valgrind --tool=callgrind --instr-atstart=no` on one core, each identity's GETs are
# counted after 200 uncounted ones, and a round prints instructions per GET twice:
#
#   round <r> whole: admin <Ir>Ir user <Ir>Ir (<extra %>) sa <Ir>Ir (<extra %>)
#   round <r> path: admin <Ir>Ir user <Ir>Ir (+<extra Ir>) sa <Ir>Ir (+<extra Ir>)
#
# "whole" is the server process's (a run of 2N less a run of N, so that the TLS handshakes
# of the load's connections cancel out), which picks up whatever background work (the
# controllers digesting the policy) ran meanwhile: it swings by thousands between runs.
# "path" is the request path's own, from authentication to the handler's response
# (`handlers::admit` and `handlers::serve`, inclusive; the same in every run to a few
# instructions): what authentication, authorization and priority and fairness add per
# identity. With N=2000 by default. The dumps (`callgrind.out.*` in the run's directory, kept with
# KEEP=1) name where the instructions go (`callgrind_annotate`).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=benches/lib.sh
. benches/lib.sh

bin=target/release/apiserver loadgen= n=${N:-40000} conc=${C:-32} rounds=${ROUNDS:-5}
callgrind=${CALLGRIND:-}
[ -n "$callgrind" ] && n=${N:-2000} rounds=${ROUNDS:-1}
namespaces=100
while (($#)); do
    case $1 in
    --loadgen) loadgen=$2 && shift ;;
    -n) n=$2 && shift ;;
    -c) conc=$2 && shift ;;
    --rounds) rounds=$2 && shift ;;
    --smoke) n=1000 rounds=1 namespaces=20 ;;
    -h | --help) sed -n '2,/^set /{/^set /d;s/^# \{0,1\}//;p}' "$0" && exit 0 ;;
    -*) echo "rbac-get.sh: unknown argument $1 (see --help)" >&2 && exit 2 ;;
    *) bin=$1 ;;
    esac
    shift
done
ensure_loadgen

dir=$(mktemp -d) pid=
trap 'stop_server' EXIT
mkdir -p "$dir/data"
printf 'admintok,admin,1,system:masters\nusertok,bench-user,2\n' >"$dir/data/tokens.csv"
server_flags=(--authorization-mode "${MODE:-RBAC}")
if [ -n "$callgrind" ]; then
    # On one serving core.
    callgrind_wrapper "$dir" "$bin"
    bin=$dir/under-callgrind server_flags+=(--cores 1)
    export START_WAIT_S=${START_WAIT_S:-300}
fi
start_server "$bin" "$dir" "${server_flags[@]}"
url=${conn[1]}

# The policy, written over one keep-alive connection.
python3 - "$url" "$dir/data/pki/ca.crt" "$namespaces" <<'EOF'
import http.client, json, ssl, sys, urllib.parse
url, ca, namespaces = sys.argv[1], sys.argv[2], int(sys.argv[3])
u = urllib.parse.urlparse(url)
conn = http.client.HTTPSConnection(u.hostname, u.port, context=ssl.create_default_context(cafile=ca))
def post(path, obj):
    conn.request("POST", path, json.dumps(obj),
                 {"Authorization": "Bearer admintok", "Content-Type": "application/json"})
    r = conn.getresponse(); body = r.read()
    if r.status not in (200, 201, 409):
        sys.exit(f"POST {path}: {r.status} {body[:300]!r}")
rbac = "/apis/rbac.authorization.k8s.io/v1/namespaces"
names = ["loadgen"] + [f"rbac-{i}" for i in range(1, namespaces)]
for ns in names:
    post("/api/v1/namespaces", {"metadata": {"name": ns}})
    for r in range(10):
        post(f"{rbac}/{ns}/roles", {"metadata": {"name": f"role-{r}"}, "rules": [
            {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"],
             "resourceNames": [f"cm-{r}"]}]})
    for b in range(100):
        post(f"{rbac}/{ns}/rolebindings", {"metadata": {"name": f"binding-{b}"},
             "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": f"role-{b % 10}"},
             "subjects": [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": f"user-{ns}-{b}"}]})
post(f"{rbac}/loadgen/roles", {"metadata": {"name": "reader"}, "rules": [
    {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]}]})
post(f"{rbac}/loadgen/rolebindings", {"metadata": {"name": "bench-user"},
     "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "reader"},
     "subjects": [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "bench-user"}]})
post("/api/v1/namespaces/loadgen/serviceaccounts", {"metadata": {"name": "bench-sa"}})
post(f"{rbac}/loadgen/rolebindings", {"metadata": {"name": "bench-sa"},
     "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "reader"},
     "subjects": [{"kind": "ServiceAccount", "name": "bench-sa", "namespace": "loadgen"}]})
EOF
sa_token=$(curl -s --cacert "$dir/data/pki/ca.crt" -H "Authorization: Bearer admintok" \
    -H "Content-Type: application/json" -d '{"spec":{}}' \
    "$url/api/v1/namespaces/loadgen/serviceaccounts/bench-sa/token" |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["status"]["token"])')
bindings=$(curl -s --cacert "$dir/data/pki/ca.crt" -H "Authorization: Bearer admintok" \
    "$url/apis/rbac.authorization.k8s.io/v1/rolebindings" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["items"]))')
echo "policy: $bindings RoleBindings in $namespaces namespaces" >&2
objects=1000
((n < objects)) && objects=$n
"$loadgen" "${conn[@]}" -q create -n "$objects" --size 1024 -c 8 >/dev/null
user_conn=("${conn[@]}")
user_conn[5]=usertok
sa_conn=("${conn[@]}")
sa_conn[5]=$sa_token
# The bindings are in effect once the user's and the service account's GETs succeed.
for c in user sa; do
    declare -n cc="${c}_conn"
    for _ in $(seq 100); do
        "$loadgen" "${cc[@]}" -q get --ops 1 -n 1 >/dev/null 2>&1 && break
        sleep 0.1
    done
    unset -n cc
done

if [ -n "$callgrind" ]; then
    # The instructions of one loadgen run of `ops` GETs (its connections' TLS handshakes
    # included), from a dump of only that run.
    counted() { # ops connection flags...
        local ops=$1 last
        shift
        callgrind_control -z "$pid" >/dev/null 2>&1
        callgrind_control -i on "$pid" >/dev/null 2>&1
        "$loadgen" "$@" -q get --ops "$ops" -n "$objects" -c "$conc" >/dev/null
        callgrind_control -i off "$pid" >/dev/null 2>&1
        callgrind_control -d "$pid" >/dev/null 2>&1
        last=$(newest_dump "$dir")
        # The whole process's instructions, and those of the request path from
        # authentication to the handler's response (`handlers::admit` and
        # `handlers::serve`, inclusive: no TLS, HTTP parsing or writes, and none of the
        # background work that the whole process's figure picks up) per GET.
        # (From the run's directory: under the checkout callgrind_annotate names sources
        # relative to it and splits a function's inlined parts off its total.)
        (cd "$dir" && callgrind_annotate --inclusive=yes "$last" 2>/dev/null) |
            awk -v ops="$ops" '/PROGRAM TOTALS/{gsub(",","",$1); t=$1}
                /handlers\/mod\.rs:keel_server::handlers::(serve::[{][{]closure[}][}]|admit) \[/ {gsub(",","",$1); p+=$1}
                END{printf "%d %d\n", t, p/ops}'
    }
    # Instructions per GET: a run of 2N GETs less a run of N, over N (each run opens the
    # same connections, whose handshakes cancel out), after 200 uncounted GETs.
    # Prints "<whole> <path>": the whole process's per GET, and the request path's.
    count() { # connection flags...
        local one two path
        "$loadgen" "$@" -q get --ops 200 -n "$objects" -c "$conc" >/dev/null
        read -r one _ < <(counted "$n" "$@")
        read -r two path < <(counted $((2 * n)) "$@")
        echo "$(((two - one) / n)) $path"
    }
    for r in $(seq "$rounds"); do
        read -r a ap < <(count "${conn[@]}")
        read -r u up < <(count "${user_conn[@]}")
        read -r s sp < <(count "${sa_conn[@]}")
        extra() { awk -v x="$1" -v a="$2" 'BEGIN{printf "%+.1f", (x - a) * 100 / a}'; }
        echo "round $r whole: admin ${a}Ir user ${u}Ir ($(extra "$u" "$a") %) sa ${s}Ir ($(extra "$s" "$a") %)"
        echo "round $r path: admin ${ap}Ir user ${up}Ir (+$((up - ap))Ir) sa ${sp}Ir (+$((sp - ap))Ir)"
    done
    [ -n "${KEEP:-}" ] && echo "dumps kept in $dir" >&2 && trap - EXIT && kill "$pid"
    exit 0
fi

tck=$(getconf CLK_TCK)
ratios=() sa_ratios=()
measure() { # connection flags...
    local c0 t0 t1 c1
    c0=$(cpu_ticks "$pid")
    t0=$(date +%s%N)
    "$loadgen" "$@" -q get --ops "$n" -n "$objects" -c "$conc" >/dev/null
    t1=$(date +%s%N)
    c1=$(cpu_ticks "$pid")
    rate=$((n * 1000000000 / (t1 - t0)))
    cpu=$(((c1 - c0) * 1000000 / tck / n))
}
for r in $(seq "$rounds"); do
    # The three in turn, starting with another each round (whoever runs first or last in a
    # round would otherwise carry any drift of the host within it).
    for k in 0 1 2; do
        case $(((r + k) % 3)) in
        1) measure "${conn[@]}" && a_rate=$rate a_cpu=$cpu ;;
        2) measure "${user_conn[@]}" && u_rate=$rate u_cpu=$cpu ;;
        0) measure "${sa_conn[@]}" && s_rate=$rate s_cpu=$cpu ;;
        esac
    done
    ratio=$(awk -v u="$u_rate" -v a="$a_rate" 'BEGIN{printf "%.3f", u / a}')
    sa_ratio=$(awk -v u="$s_rate" -v a="$a_rate" 'BEGIN{printf "%.3f", u / a}')
    ratios+=("$ratio")
    sa_ratios+=("$sa_ratio")
    echo "round $r admin ${a_rate}/s:${a_cpu}us user ${u_rate}/s:${u_cpu}us ratio $ratio sa ${s_rate}/s:${s_cpu}us sa-ratio $sa_ratio"
done
printf '%s\n' "${ratios[@]}" | sort -n | awk '{a[NR]=$1} END{print "median ratio " a[int((NR+1)/2)]}'
printf '%s\n' "${sa_ratios[@]}" | sort -n | awk '{a[NR]=$1} END{print "median sa-ratio " a[int((NR+1)/2)]}'
