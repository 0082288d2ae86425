# Sourced by the benchmark scripts: `start_server BIN DIR [FLAGS...]` starts an API server on
# a free loopback port with the token file already in DIR/data, waits for /readyz and sets
# `pid` and `conn` (loadgen's connection flags, as the admin token `admintok`).
start_server() {
    local bin=$1 dir=$2
    shift 2
    # Below the kernel's ephemeral range (32768-60999 by default), which the load's own
    # connections take ports from: a port picked there was once already in use.
    local port=$((20000 + RANDOM % 12000))
    "$bin" --data-dir "$dir/data" --bind-address 127.0.0.1 --secure-port "$port" --sync none \
        "$@" >"$dir/server.log" 2>&1 &
    pid=$!
    for _ in $(seq 200); do
        curl -sk "https://127.0.0.1:$port/readyz" >/dev/null 2>&1 && break
        sleep 0.1
    done
    conn=(--url "https://127.0.0.1:$port" --ca-file "$dir/data/pki/ca.crt" --token admintok)
}
