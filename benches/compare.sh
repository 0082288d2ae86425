#!/usr/bin/env bash
# keel vs etcd, side by side, in one run: installs etcd (Debian's etcd-server) if missing,
# builds keel's apiserver and loadgen in release mode, then runs `loadgen compare`, which starts
# etcd and keel (durable) in a temporary directory, runs the same workloads against both and
# adds a dated section to the report (default benches/REPORT.md). Arguments go to
# `loadgen compare` (e.g. --smoke for CI, --out FILE, --third-kubeconfig K); see tools/README.md.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
command -v etcd >/dev/null 2>&1 || need+=(etcd-server)
command -v protoc >/dev/null 2>&1 || need+=(protobuf-compiler)
if ((${#need[@]})); then
    echo "compare.sh: installing ${need[*]}" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null && apt-get install -y -qq "${need[@]}" >/dev/null
fi

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"
cargo build --release --locked -p keel-server -p keel-tools
exec "$CARGO_TARGET_DIR/release/loadgen" compare --apiserver "$CARGO_TARGET_DIR/release/apiserver" "$@"
