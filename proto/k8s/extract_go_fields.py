#!/usr/bin/env python3
"""Derive the JSON facts that .proto files lack from upstream Go API types.

Reads the Go sources of k8s.io/api, k8s.io/apimachinery and k8s.io/apiextensions-apiserver
(the trees that also hold the vendored generated.proto files) and writes a TSV table:

  P <proto package> <API group or -> <version>      one per Go package with a generated.proto
  T <message> <K|W>                                 K: embeds TypeMeta (a kind); W: named slice
  F <message> <field number> <json name> <flags>    one per field, in Go declaration order

Flags: o omitempty, z omitzero, p pointer, s slice, m map, i inline (json:",inline"), - not in JSON.
Usage: extract_go_fields.py <src root containing k8s.io/> > gofields.tsv
"""
import os
import re
import sys

STRUCT_RE = re.compile(r"^type (\w+) struct \{\s*$")
NAMED_SLICE_RE = re.compile(r"^type (\w+) \[\]")
FIELD_RE = re.compile(r"^\s*(\w+)\s+([^\s`]+)\s+`([^`]*)`")
EMBED_RE = re.compile(r"^\s*([\w.*]+)\s+`([^`]*)`")
TAG_RE = re.compile(r'(\w+):"([^"]*)"')


def flags_for(go_type, json_opts, json_name):
    flags = ""
    if "omitempty" in json_opts:
        flags += "o"
    if "omitzero" in json_opts:
        flags += "z"
    if go_type.startswith("*"):
        flags += "p"
    elif go_type.startswith("[]"):
        flags += "s"
    elif go_type.startswith("map["):
        flags += "m"
    if "inline" in json_opts:
        flags += "i"
    if json_name == "-":
        flags += "-"
    return flags or "v"


def parse_field(line):
    m = FIELD_RE.match(line)
    if m:
        name, go_type, tag = m.groups()
    else:
        m = EMBED_RE.match(line)
        if not m:
            return None
        go_type, tag = m.groups()
        name = go_type.lstrip("*").split(".")[-1]
    tags = dict(TAG_RE.findall(tag))
    return name, go_type, tags


def parse_go_file(path, pkg, out_types, out_fields):
    lines = open(path, encoding="utf-8").read().split("\n")
    i = 0
    while i < len(lines):
        m = NAMED_SLICE_RE.match(lines[i])
        if m:
            out_types.append((f"{pkg}.{m.group(1)}", "W"))
        m = STRUCT_RE.match(lines[i])
        i += 1
        if not m:
            continue
        msg = f"{pkg}.{m.group(1)}"
        is_kind = False
        depth = 1
        while i < len(lines) and depth > 0:
            line = lines[i].split("//")[0] if not lines[i].lstrip().startswith("//") else ""
            i += 1
            depth += line.count("{") - line.count("}")
            if depth != 1:
                continue
            parsed = parse_field(line)
            if not parsed:
                continue
            name, go_type, tags = parsed
            json_tag = tags.get("json", "")
            json_parts = json_tag.split(",")
            json_name = json_parts[0] or (name if "inline" not in json_parts else "")
            if go_type.split(".")[-1] == "TypeMeta" and "inline" in json_parts:
                is_kind = True
            if "," not in tags.get("protobuf", ""):
                continue
            number = tags["protobuf"].split(",")[1]
            flags = flags_for(go_type, json_parts[1:], json_name)
            out_fields.append((msg, number, json_name or "-", flags))
        if is_kind:
            out_types.append((msg, "K"))


def main(root):
    for dirpath, _dirs, files in sorted(os.walk(root)):
        if "generated.proto" not in files or "testapigroup" in dirpath:
            continue
        proto = open(os.path.join(dirpath, "generated.proto"), encoding="utf-8").read()
        pkg = re.search(r"^package ([\w.]+);", proto, re.M).group(1)
        group = "-"
        register = os.path.join(dirpath, "register.go")
        if os.path.exists(register):
            g = re.search(r'^const GroupName = "([\w.-]*)"', open(register, encoding="utf-8").read(), re.M)
            if g:
                group = g.group(1) or "core"
        version = os.path.basename(dirpath)
        print(f"P\t{pkg}\t{group}\t{version}")
        types, fields = [], []
        for name in sorted(files):
            if name.endswith(".go") and not name.endswith("_test.go") and not name.startswith("zz_"):
                parse_go_file(os.path.join(dirpath, name), pkg, types, fields)
        for msg, flag in types:
            print(f"T\t{msg}\t{flag}")
        for row in fields:
            print("F\t" + "\t".join(row))


if __name__ == "__main__":
    main(sys.argv[1])
