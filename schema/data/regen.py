#!/usr/bin/env python3
"""Regenerate schema/data/definitions.json.gz from the PyPI package kubernetes-validate.

The package ships the upstream Kubernetes OpenAPI v2 definitions (api/openapi-spec/swagger.json)
converted to JSON Schema. This script downloads the wheel with pip, undoes that conversion and
writes the definitions back in upstream's OpenAPI v2 form:

  * `$defs` / `#/$defs/X`          -> `definitions` / `#/definitions/X`
  * `"type": [T, "null"]`          -> `"type": T`            (upstream has no nullable types)
  * `enum` on apiVersion/kind      -> removed                (added by the converter)
  * IntOrString `oneOf`            -> `type: string, format: int-or-string`
  * Quantity `oneOf`               -> `type: string`
  * `$schema`, `$id`               -> removed

Anything else the converter might add in a later release makes the script fail loudly instead of
being copied silently. Output: sorted keys, gzip with mtime 0, so a rerun is byte-identical.

Usage: python3 schema/data/regen.py [--wheel PATH]   (run from anywhere)
"""

import argparse
import gzip
import hashlib
import io
import json
import pathlib
import subprocess
import sys
import tempfile
import zipfile

PACKAGE = "kubernetes-validate"
PACKAGE_VERSION = "1.36.0"
KUBERNETES_VERSION = "v1.36.0"
MEMBER = f"kubernetes_validate/kubernetes-json-schema/{KUBERNETES_VERSION}-local/_definitions.json"
OUT = pathlib.Path(__file__).resolve().parent / "definitions.json.gz"

INT_OR_STRING = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"
SCHEMA_KEYS = {
    "description", "type", "format", "properties", "required", "items", "additionalProperties",
    "$ref", "x-kubernetes-list-type", "x-kubernetes-list-map-keys", "x-kubernetes-patch-strategy",
    "x-kubernetes-patch-merge-key", "x-kubernetes-map-type", "x-kubernetes-group-version-kind",
    "x-kubernetes-unions",
}
PRIMITIVE_TYPES = {"string", "integer", "number", "boolean", "object", "array"}


def fetch_wheel() -> bytes:
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "-d", tmp,
             f"{PACKAGE}=={PACKAGE_VERSION}"],
            check=True,
        )
        wheels = list(pathlib.Path(tmp).glob("*.whl"))
        if len(wheels) != 1:
            sys.exit(f"expected one wheel, found {wheels}")
        return wheels[0].read_bytes()


def fail(path: str, msg: str):
    sys.exit(f"unexpected converter output at {path}: {msg}")


def untype(t, path):
    if isinstance(t, list):
        rest = [x for x in t if x != "null"]
        if len(rest) != 1 or len(t) != 2:
            fail(path, f"type {t}")
        t = rest[0]
    if t not in PRIMITIVE_TYPES:
        fail(path, f"type {t}")
    return t


def reverse_schema(node: dict, path: str, prop_name: str = "") -> dict:
    """Convert one JSON Schema node back into an OpenAPI v2 schema."""
    if "oneOf" in node:
        fail(path, "oneOf outside IntOrString/Quantity")
    out = {}
    for key, value in node.items():
        if key == "enum":
            if prop_name not in ("apiVersion", "kind"):
                fail(path, "enum on a field other than apiVersion/kind")
            continue
        if key not in SCHEMA_KEYS:
            fail(path, f"key {key}")
        if key == "type":
            out[key] = untype(value, path)
        elif key == "$ref":
            if not value.startswith("#/$defs/"):
                fail(path, f"ref {value}")
            out[key] = "#/definitions/" + value[len("#/$defs/"):]
        elif key == "properties":
            out[key] = {k: reverse_schema(v, f"{path}.{k}", k) for k, v in value.items()}
        elif key in ("items", "additionalProperties"):
            if not isinstance(value, dict):
                fail(path, f"{key} is {value!r}")
            out[key] = reverse_schema(value, f"{path}[]")
        else:
            out[key] = value
    return out


def reverse_definition(name: str, node: dict) -> dict:
    if name in (INT_OR_STRING, QUANTITY):
        kinds = sorted(untype(alt["type"], name) for alt in node.get("oneOf", []))
        expected = ["integer", "string"] if name == INT_OR_STRING else ["number", "string"]
        if kinds != expected or set(node) - {"oneOf", "description"}:
            fail(name, f"unexpected shape {node}")
        out = {k: v for k, v in node.items() if k == "description"}
        out["type"] = "string"
        if name == INT_OR_STRING:
            out["format"] = "int-or-string"
        return out
    return reverse_schema(node, name)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wheel", help="use this wheel instead of downloading it")
    args = parser.parse_args()
    wheel = pathlib.Path(args.wheel).read_bytes() if args.wheel else fetch_wheel()
    print(f"wheel sha256 {hashlib.sha256(wheel).hexdigest()}")
    with zipfile.ZipFile(io.BytesIO(wheel)) as zf:
        converted = json.loads(zf.read(MEMBER))
    if set(converted) != {"$defs", "$schema", "$id"}:
        sys.exit(f"unexpected top-level keys {sorted(converted)}")
    definitions = {name: reverse_definition(name, node) for name, node in converted["$defs"].items()}
    doc = {
        "definitions": definitions,
        "info": {"title": "Kubernetes", "version": KUBERNETES_VERSION},
        "swagger": "2.0",
    }
    text = json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0, compresslevel=9) as gz:
        gz.write(text)
    OUT.write_bytes(buf.getvalue())
    print(f"{len(definitions)} definitions")
    print(f"json sha256 {hashlib.sha256(text).hexdigest()}")
    print(f"gz   sha256 {hashlib.sha256(buf.getvalue()).hexdigest()} -> {OUT}")


if __name__ == "__main__":
    main()
