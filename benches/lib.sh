# Sourced by the benchmark scripts: `start_server BIN DIR [FLAGS...]` starts an API server on
# a free loopback port with the token file already in DIR/data, waits for /readyz and sets
# `pid` and `conn` (loadgen's connection flags, as the admin token `admintok`); the A/B
# scripts' `start_plain_server` and `cpu_ticks`, and the CALLGRIND=1 modes' helpers, are
# below it.
start_server() {
    local bin=$1 dir=$2
    shift 2
    # Below the kernel's ephemeral range (32768-60999 by default), which the load's own
    # connections take ports from: a port picked there was once already in use.
    local port=$((20000 + RANDOM % 12000))
    "$bin" --data-dir "$dir/data" --bind-address 127.0.0.1 --secure-port "$port" --sync none \
        "$@" >"$dir/server.log" 2>&1 &
    pid=$!
    # START_WAIT_S: how long it may take (20 s; a server under valgrind takes longer).
    for _ in $(seq $((${START_WAIT_S:-20} * 10))); do
        curl -sk "https://127.0.0.1:$port/readyz" >/dev/null 2>&1 && break
        sleep 0.1
    done
    conn=(--url "https://127.0.0.1:$port" --ca-file "$dir/data/pki/ca.crt" --token admintok)
}

# `cpu_ticks PID`: the process's utime + stime in clock ticks (`getconf CLK_TCK` a second):
# the fields after the ")" that ends its name in /proc/PID/stat.
cpu_ticks() {
    local s
    s=$(<"/proc/$1/stat")
    s=${s##*) }
    read -r -a f <<<"$s"
    echo $((f[11] + f[12]))
}

# `start_plain_server BIN DIR`: an API server as the A/B scripts run it (default durable
# sync, plain HTTP on a free loopback port, data in DIR/data, the garbage collector off
# where the binary has --controllers; EXTRA_FLAGS added); waits for /readyz (up to
# START_WAIT_S, 30 s) and sets `pid` and `lg` (loadgen,
# from the caller's `loadgen`, with the URL and the admin token, quiet).
start_plain_server() {
    local bin=$1 dir=$2 extra=()
    "$bin" --help 2>/dev/null | grep -q -- --controllers && extra=(--controllers=-garbage-collector-controller,'*')
    # Below the kernel's ephemeral range, as start_server's.
    local port=$((20000 + RANDOM % 12000))
    "$bin" --data-dir "$dir/data" --bind-address 127.0.0.1 --secure-port 0 --insecure-port "$port" \
        "${extra[@]}" ${EXTRA_FLAGS:-} >"$dir/server.log" 2>&1 &
    pid=$!
    for _ in $(seq $((${START_WAIT_S:-30} * 10))); do
        curl -sf "http://127.0.0.1:$port/readyz" >/dev/null 2>&1 && break
        kill -0 "$pid" 2>/dev/null || { cat "$dir/server.log" >&2 && exit 1; }
        sleep 0.1
    done
    local token
    token=$(awk '/token:/{print $2; exit}' "$dir/data/admin.kubeconfig")
    lg=("$loadgen" --url "http://127.0.0.1:$port" --token "$token" -q)
}

# `callgrind_wrapper DIR BIN`: writes DIR/under-callgrind, which runs BIN (with its
# arguments) under `valgrind --tool=callgrind --instr-atstart=no`, dumping to
# DIR/callgrind.out.<pid>.<n>; valgrind runs in the server's process (pid is the server's).
callgrind_wrapper() {
    command -v valgrind >/dev/null || { echo "$(basename "$0"): CALLGRIND=1 needs valgrind" >&2 && exit 2; }
    printf '#!/bin/sh\nexec valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file=%s/callgrind.out.%%p %s "$@"\n' \
        "$1" "$(realpath "$2")" >"$1/under-callgrind"
    chmod +x "$1/under-callgrind"
}

# `newest_dump DIR`: the name of the newest callgrind dump in DIR (callgrind.out.<pid>.<n>,
# the highest n: not by mtime, whose second granularity ties runs).
newest_dump() {
    find "$1" -maxdepth 1 -name 'callgrind.out.*' -printf '%f\n' | sort -V | tail -1
}

# `ensure_loadgen`: without a `loadgen` binary named, builds it in release mode and sets it.
ensure_loadgen() {
    if [ -z "$loadgen" ]; then
        export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"
        cargo build --release --locked -p keel-tools --bin loadgen
        loadgen=$CARGO_TARGET_DIR/release/loadgen
    fi
}

# `stop_server`: stops the server `pid` names and removes its directory `dir` (either may be
# empty), then clears both.
stop_server() {
    [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
    [ -n "$dir" ] && rm -rf "$dir"
    pid= dir=
}
