"""Custom resources through the Python `kubernetes` client: a CRD made with
ApiextensionsV1Api, waited for until Established, then CustomObjectsApi's create, get, list,
patch (merge), the status and scale subresources, a watch and delete.
Usage: custom_objects.py <kubeconfig>."""
import sys
import time

from kubernetes import client, config, watch

GROUP = "py.example.com"
PLURAL = "crontabs"
NS = "pycustom"
ESTABLISHED_WAIT_SECONDS = 20


def definition():
    schema = {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "properties": {
                    "cronSpec": {"type": "string"},
                    "replicas": {"type": "integer"},
                },
            },
            "status": {
                "type": "object",
                "properties": {"replicas": {"type": "integer"}, "selector": {"type": "string"}},
            },
        },
    }
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{PLURAL}.{GROUP}"},
        "spec": {
            "group": GROUP,
            "scope": "Namespaced",
            "names": {"plural": PLURAL, "singular": "crontab", "kind": "CronTab", "shortNames": ["ct"]},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": schema},
                    "subresources": {
                        "status": {},
                        "scale": {
                            "specReplicasPath": ".spec.replicas",
                            "statusReplicasPath": ".status.replicas",
                            "labelSelectorPath": ".status.selector",
                        },
                    },
                }
            ],
        },
    }


def wait_established(ext):
    deadline = time.monotonic() + ESTABLISHED_WAIT_SECONDS
    while time.monotonic() < deadline:
        crd = ext.read_custom_resource_definition(f"{PLURAL}.{GROUP}")
        for c in crd.status.conditions or []:
            if c.type == "Established" and c.status == "True":
                return crd
        time.sleep(0.05)
    raise AssertionError("CRD not established in time")


def main():
    config.load_kube_config(config_file=sys.argv[1])
    api = client.ApiClient()
    ext = client.ApiextensionsV1Api(api)
    core = client.CoreV1Api(api)
    co = client.CustomObjectsApi(api)
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=NS)))
    ext.create_custom_resource_definition(definition())
    crd = wait_established(ext)
    assert crd.status.accepted_names.kind == "CronTab", crd.status

    body = {"apiVersion": f"{GROUP}/v1", "kind": "CronTab",
            "metadata": {"name": "c1"}, "spec": {"cronSpec": "* * * * */5", "replicas": 1}}
    created = co.create_namespaced_custom_object(GROUP, "v1", NS, PLURAL, body)
    assert created["metadata"]["generation"] == 1, created
    assert created["spec"]["cronSpec"] == "* * * * */5", created

    got = co.get_namespaced_custom_object(GROUP, "v1", NS, PLURAL, "c1")
    assert got["metadata"]["uid"] == created["metadata"]["uid"], got
    listed = co.list_namespaced_custom_object(GROUP, "v1", NS, PLURAL)
    assert [i["metadata"]["name"] for i in listed["items"]] == ["c1"], listed
    everywhere = co.list_cluster_custom_object(GROUP, "v1", PLURAL)
    assert len(everywhere["items"]) == 1, everywhere

    patched = co.patch_namespaced_custom_object(GROUP, "v1", NS, PLURAL, "c1",
                                                {"spec": {"cronSpec": "0 * * * *"}})
    assert patched["spec"]["cronSpec"] == "0 * * * *", patched
    assert patched["metadata"]["generation"] == 2, patched

    status = co.patch_namespaced_custom_object_status(GROUP, "v1", NS, PLURAL, "c1",
                                                      {"status": {"replicas": 1, "selector": "app=c1"}})
    assert status["status"] == {"replicas": 1, "selector": "app=c1"}, status
    assert status["metadata"]["generation"] == 2, status

    scale = co.get_namespaced_custom_object_scale(GROUP, "v1", NS, PLURAL, "c1")
    assert scale["kind"] == "Scale" and scale["spec"]["replicas"] == 1, scale
    assert scale["status"] == {"replicas": 1, "selector": "app=c1"}, scale
    scaled = co.patch_namespaced_custom_object_scale(GROUP, "v1", NS, PLURAL, "c1",
                                                     {"spec": {"replicas": 3}})
    assert scaled["spec"]["replicas"] == 3, scaled
    assert co.get_namespaced_custom_object(GROUP, "v1", NS, PLURAL, "c1")["spec"]["replicas"] == 3

    # A watch from the list's resourceVersion sees the next change.
    rv = co.list_namespaced_custom_object(GROUP, "v1", NS, PLURAL)["metadata"]["resourceVersion"]
    co.create_namespaced_custom_object(GROUP, "v1", NS, PLURAL,
                                       {"apiVersion": f"{GROUP}/v1", "kind": "CronTab", "metadata": {"name": "c2"}})
    w = watch.Watch()
    seen = []
    for ev in w.stream(co.list_namespaced_custom_object, GROUP, "v1", NS, PLURAL,
                       resource_version=rv, timeout_seconds=10):
        seen.append((ev["type"], ev["object"]["metadata"]["name"]))
        if ev["object"]["metadata"]["name"] == "c2":
            w.stop()
    assert seen == [("ADDED", "c2")], seen

    deleted = co.delete_namespaced_custom_object(GROUP, "v1", NS, PLURAL, "c1")
    assert deleted["status"] == "Success", deleted
    names = [i["metadata"]["name"] for i in co.list_namespaced_custom_object(GROUP, "v1", NS, PLURAL)["items"]]
    assert names == ["c2"], names
    print("ok")


if __name__ == "__main__":
    main()
