#!/usr/bin/env python3
"""Regenerate server/data/feature_gates.tsv: every feature gate kube-apiserver v1.36 knows.

Input: a Kubernetes v1.36 source tree (an upstream checkout, or the openshift/kubernetes tree
vendored by openshift/microshift that /work/upstream-kit builds the reference binary from).
Upstream publishes two generated lists under test/compatibility_lifecycle/reference/:

  * versioned_feature_list.yaml: every gate's versioned lifecycle, keyed by the *Go identifier*
    of the gate, which for a few gates is not the string a user types
    (`CPUCFSQuotaPeriod` is the gate "CustomCPUCFSQuotaPeriod"). The identifier is resolved to
    its string by finding its `= "..."` declaration in the Go source.
  * feature_list.md: the runtime gate set under the real strings, including the client-go gates
    (ClientsAllowCBOR, WatchListClient...) that kube-apiserver registers but the yaml misses.
    Its rows give stage ranges and "enabled"/"locked" from-versions; it is used only for gates
    the yaml lacks.

Gates declared in pkg/features/openshift_features.go are OpenShift's own and are left out.

For each gate the spec in force at VERSION is kept: the last versioned spec with version <=
VERSION. Output, sorted by name: `name<TAB>default<TAB>stage<TAB>locked<TAB>dependencies`,
stage one of ALPHA, BETA, GA, DEPRECATED, dependencies comma-separated or `-`. A rerun on the same tree is byte-identical.

Usage: python3 server/data/feature_gates_regen.py KUBERNETES_SOURCE_DIR
"""

import pathlib
import re
import sys

import yaml

VERSION = (1, 36)
OUT = pathlib.Path(__file__).resolve().parent / "feature_gates.tsv"
REFERENCE = "test/compatibility_lifecycle/reference"
OPENSHIFT_FEATURES = "pkg/features/openshift_features.go"
STAGES = {"Alpha": "ALPHA", "Beta": "BETA", "GA": "GA", "Deprecated": "DEPRECATED"}


def parse_version(text):
    major, minor = text.split(".")[:2]
    return int(major), int(minor)


def gate_strings(root):
    """Go identifier -> gate string, from every `Name Feature = "String"` declaration."""
    decl = re.compile(r'^\s*(\w+)\s+(?:\w+\.)?Feature\s*=\s*"([^"]+)"', re.M)
    found = {}
    for sub in ("pkg", "staging/src/k8s.io"):
        for path in (root / sub).rglob("*.go"):
            if path.name.endswith("_test.go") or "/vendor/" in str(path):
                continue
            text = path.read_text(errors="replace")
            if "Feature" not in text:
                continue
            for ident, string in decl.findall(text):
                found.setdefault(ident, set()).add(string)
    return found


def from_yaml(root, strings):
    gates = {}
    for entry in yaml.safe_load((root / REFERENCE / "versioned_feature_list.yaml").read_text()):
        ident = entry["name"]
        names = strings.get(ident, {ident})
        if len(names) != 1:
            sys.exit(f"{ident}: declared with several strings {sorted(names)}")
        specs = [s for s in entry["versionedSpecs"] if parse_version(s["version"]) <= VERSION]
        if not specs:
            continue  # not yet introduced at VERSION
        spec = max(specs, key=lambda s: parse_version(s["version"]))
        gates[next(iter(names))] = (spec["default"], STAGES[spec["preRelease"]], spec["lockToDefault"])
    return gates


def covers(cell):
    """Whether a stage range cell such as `1.16–1.32`, `1.31` or `1.33–` includes VERSION."""
    cell = cell.strip()
    if not cell:
        return False
    low, dash, high = cell.partition("–")
    if not dash:
        return parse_version(low) == VERSION
    return parse_version(low) <= VERSION and (not high.strip() or VERSION <= parse_version(high))


def since(cell):
    """`:ballot_box_with_check:&nbsp;1.16+` -> whether that from-version is <= VERSION."""
    m = re.search(r"(\d+\.\d+)\+", cell)
    return bool(m) and parse_version(m.group(1)) <= VERSION


def from_markdown(root):
    """(gates the md lists -> (default, stage, locked), gate -> its dependencies)"""
    gates = {}
    dependencies = {}
    header = None
    for line in (root / REFERENCE / "feature_list.md").read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if not line.startswith("| "):
            continue
        if cells[0] == "Feature":
            header = cells
            continue
        if header is None or len(cells) != len(header) or set(cells[0]) <= set("-"):
            continue
        row = dict(zip(header, cells))
        stages = [STAGES[s] for s in ("Alpha", "Beta", "GA", "Deprecated") if covers(row[s])]
        if len(stages) != 1:
            sys.exit(f"{row['Feature']}: no single stage at {VERSION}: {row}")
        gates[row["Feature"]] = (since(row["Enabled"]), stages[0], since(row["Locked"]))
        deps = [d.strip() for d in row["Dependencies"].split("<br>") if d.strip()]
        if deps:
            dependencies[row["Feature"]] = deps
    return gates, dependencies


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    root = pathlib.Path(sys.argv[1])
    openshift = root / OPENSHIFT_FEATURES
    downstream = set(re.findall(r'Feature\s*=\s*"([^"]+)"', openshift.read_text())) if openshift.exists() else set()
    gates = from_yaml(root, gate_strings(root))
    md_gates, dependencies = from_markdown(root)
    for name, spec in md_gates.items():
        if name not in gates and name not in downstream:
            gates[name] = spec
    for name, deps in dependencies.items():
        if name in downstream:
            continue
        unknown = [d for d in [name] + deps if d not in gates]
        if unknown:
            sys.exit(f"{name}: dependency names unknown gates {unknown}")
    lines = [
        f"{n}\t{str(d).lower()}\t{s}\t{str(l).lower()}\t{','.join(dependencies.get(n, [])) or '-'}\n"
        for n, (d, s, l) in sorted(gates.items())
    ]
    header = (
        f"# Feature gates of kube-apiserver v{VERSION[0]}.{VERSION[1]}: name, default, stage, locked, dependencies.\n"
        "# Generated by server/data/feature_gates_regen.py from upstream's published lists; do not edit.\n"
    )
    OUT.write_text(header + "".join(lines))
    print(f"{len(lines)} gates -> {OUT}")


if __name__ == "__main__":
    main()
