#!/usr/bin/env python3
"""Record upstream's Table column definitions into table-columns.json (next to this script).

For every resource with the `list` verb in the server's aggregated discovery (`/api`, `/apis`),
GET its collection with `Accept: application/json;as=Table;v=v1;g=meta.k8s.io` and keep the
answer's `columnDefinitions` (returned even for an empty list). Cluster-scoped and namespaced
resources alike are listed across all namespaces, so no objects are needed.

Output: {"<group>/<version>/<resource>": [columnDefinition, ...]} (the core group is written
with an empty group: "/v1/pods"), sorted keys, one-space indent, as served (no field changed).

Usage, against the upstream kit (`../shared/tools/upstream-kit`, or any kubeconfig whose
user is a bearer token):

    python3 catalog/tests/upstream-v1.36.2/record-table-columns.py [KUBECONFIG]

KUBECONFIG defaults to /work/upstream-kit/kubeconfig. Recorded from the kit started as
`EXTRA_APISERVER_ARGS="--runtime-config=api/all=true --feature-gates=AllAlpha=true,AllBeta=true" start-k8s.sh`
(the feature gates add the alpha and beta kinds `--runtime-config` alone does not serve:
ClusterTrustBundle, PodCertificateRequest, PodGroup, Workload, StorageVersionMigration).
"""

import json
import pathlib
import ssl
import sys
import urllib.request

KUBECONFIG = sys.argv[1] if len(sys.argv) > 1 else "/work/upstream-kit/kubeconfig"
OUT = pathlib.Path(__file__).resolve().parent / "table-columns.json"
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"
DISCOVERY = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"


def kubeconfig_field(lines, key):
    return next(l.split()[1] for l in lines if l.strip().startswith(key + ":"))


def main():
    lines = pathlib.Path(KUBECONFIG).read_text().splitlines()
    server = kubeconfig_field(lines, "server")
    token = kubeconfig_field(lines, "token")
    ctx = ssl._create_unverified_context()

    def get(path, accept):
        req = urllib.request.Request(
            server + path, headers={"Accept": accept, "Authorization": "Bearer " + token}
        )
        with urllib.request.urlopen(req, context=ctx) as resp:
            return json.load(resp)

    out = {}
    for root in ("/api", "/apis"):
        for group in get(root, DISCOVERY)["items"]:
            name = group["metadata"].get("name", "")
            for version in group["versions"]:
                v = version["version"]
                prefix = f"/apis/{name}/{v}" if name else f"/api/{v}"
                for r in version["resources"]:
                    if "list" not in r["verbs"]:
                        continue
                    table = get(f"{prefix}/{r['resource']}?limit=1", TABLE)
                    out[f"{name}/{v}/{r['resource']}"] = table["columnDefinitions"]
    with open(OUT, "w") as f:
        json.dump(out, f, indent=1, sort_keys=True)
        f.write("\n")
    print(f"{len(out)} resources -> {OUT}")


if __name__ == "__main__":
    main()
