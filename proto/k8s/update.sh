#!/usr/bin/env bash
# Refreshes the vendored upstream schemas in this folder from Debian's packages of the
# Kubernetes Go API modules (which ship upstream's generated.proto files and Go types):
#   golang-k8s-api-dev 0.36.4-1, golang-k8s-apimachinery-dev 0.36.4-3 (Debian sid),
#   golang-k8s-apiextensions-apiserver-dev 0.36.4-1 (Debian sid; trixie has none),
# and gnostic's OpenAPI v2 message (what /openapi/v2 is served as in protobuf) from
#   golang-github-google-gnostic-models-dev 0.7.1-1 (Debian sid): google/gnostic-models v0.7.1,
#   commit 289d7b4936d1c53094daaadca34f8fcf7a916454, openapiv2/OpenAPIv2.proto (Apache-2.0,
#   header in the file; identical to that commit's file).
# Nothing here is edited by hand: k8s.io/**/generated.proto and github.com/**/*.proto are
# upstream's files, and gofields.tsv is produced by extract_go_fields.py from upstream's Go types.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
work="$(mktemp -d)"
mkdir -p "$work/lists/partial" "$work/cache/archives/partial" "$work/deb"
cat > "$work/sources.list" <<SRC
deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian trixie main
deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian sid main
SRC
apt_opts=(-o "Dir::Etc::SourceList=$work/sources.list" -o Dir::Etc::SourceParts=/dev/null
  -o "Dir::State::Lists=$work/lists" -o "Dir::Cache=$work/cache")
apt-get "${apt_opts[@]}" update >/dev/null
(cd "$work/deb" && apt-get "${apt_opts[@]}" download golang-k8s-api-dev=0.36.4-1 \
  golang-k8s-apimachinery-dev=0.36.4-3 golang-k8s-apiextensions-apiserver-dev=0.36.4-1 \
  golang-github-google-gnostic-models-dev=0.7.1-1)
for deb in "$work"/deb/*.deb; do dpkg-deb -x "$deb" "$work/x"; done
src="$work/x/usr/share/gocode/src"
# APIService (apiregistration.k8s.io): Debian packages no kube-aggregator, so its published
# generated.proto and Go types come from a git copy of k8s.io/kube-aggregator, tag
# KUBE_AGGREGATOR_TAG (v0.36.2 = commit af2b349648d5bbb78b2d42ec95a6b19ae4231401), given as
# KUBE_AGGREGATOR_GIT (a git directory, e.g. a clone of github.com/kubernetes/kube-aggregator).
: "${KUBE_AGGREGATOR_GIT:?set KUBE_AGGREGATOR_GIT to a git directory of k8s.io/kube-aggregator}"
mkdir -p "$src/k8s.io/kube-aggregator"
git --git-dir "$KUBE_AGGREGATOR_GIT" archive "${KUBE_AGGREGATOR_TAG:-v0.36.2}" pkg/apis/apiregistration \
  | tar -x -C "$src/k8s.io/kube-aggregator"
rm -rf "$here/k8s.io"
(cd "$src" && find k8s.io -name generated.proto -not -path '*testapigroup*') | while read -r f; do
  mkdir -p "$here/$(dirname "$f")"
  cp "$src/$f" "$here/$f"
done
gnostic=github.com/google/gnostic-models/openapiv2/OpenAPIv2.proto
rm -rf "$here/github.com"
mkdir -p "$here/$(dirname "$gnostic")"
cp "$src/$gnostic" "$here/$gnostic"
python3 "$here/extract_go_fields.py" "$src" > "$here/gofields.tsv"
rm -rf "$work"
