"""The Python `kubernetes` client against keel: CRUD, errors, pagination, watch,
deletecollection. Usage: client_test.py <kubeconfig>. Exits non-zero on the first failure."""
import sys
import threading
import time

from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException


def expect_status(code, fn, *args, **kwargs):
    try:
        fn(*args, **kwargs)
    except ApiException as e:
        assert e.status == code, f"expected {code}, got {e.status}: {e.body}"
        return e
    raise AssertionError(f"expected HTTP {code}, call succeeded")


def main():
    config.load_kube_config(config_file=sys.argv[1])
    v1 = client.CoreV1Api()
    apps = client.AppsV1Api()
    ns = "pyclient"
    v1.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=ns)))
    names = [n.metadata.name for n in v1.list_namespace().items]
    assert "default" in names and ns in names, names

    # Create, read, replace, patch.
    cm = client.V1ConfigMap(metadata=client.V1ObjectMeta(name="one", labels={"app": "x"}), data={"k": "v"})
    created = v1.create_namespaced_config_map(ns, cm)
    assert created.metadata.resource_version
    got = v1.read_namespaced_config_map("one", ns)
    assert got.data == {"k": "v"}
    got.data["k"] = "v2"
    replaced = v1.replace_namespaced_config_map("one", ns, got)
    assert int(replaced.metadata.resource_version) > int(created.metadata.resource_version)
    patched = v1.patch_namespaced_config_map("one", ns, {"data": {"extra": "1"}})
    assert patched.data == {"k": "v2", "extra": "1"}, patched.data

    # Errors.
    expect_status(409, v1.create_namespaced_config_map, ns, cm)
    expect_status(404, v1.read_namespaced_config_map, "nope", ns)
    bad = client.V1ConfigMap(metadata=client.V1ObjectMeta(name="UPPER"))
    e = expect_status(422, v1.create_namespaced_config_map, ns, bad)
    assert "Invalid" in e.body
    stale = created
    stale.data = {"k": "stale"}
    expect_status(409, v1.replace_namespaced_config_map, "one", ns, stale)

    # Pagination at one snapshot.
    for i in range(9):
        v1.create_namespaced_config_map(ns, client.V1ConfigMap(metadata=client.V1ObjectMeta(name=f"p{i}", labels={"page": "yes"})))
    seen, token, rvs = [], None, set()
    while True:
        page = v1.list_namespaced_config_map(ns, limit=4, _continue=token, label_selector="page=yes")
        seen += [i.metadata.name for i in page.items]
        rvs.add(page.metadata.resource_version)
        token = page.metadata._continue
        if not token:
            break
    assert sorted(seen) == sorted(f"p{i}" for i in range(9)), seen
    assert len(rvs) == 1, rvs

    # Watch from a list's resourceVersion sees exactly the later changes.
    start = v1.list_namespaced_config_map(ns).metadata.resource_version
    events = []

    def watcher():
        w = watch.Watch()
        for ev in w.stream(v1.list_namespaced_config_map, ns, resource_version=start, timeout_seconds=10):
            events.append((ev["type"], ev["object"].metadata.name))
            if len(events) == 3:
                w.stop()

    t = threading.Thread(target=watcher)
    t.start()
    time.sleep(0.5)
    v1.create_namespaced_config_map(ns, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="w")))
    v1.patch_namespaced_config_map("w", ns, {"metadata": {"labels": {"a": "b"}}})
    v1.delete_namespaced_config_map("w", ns)
    t.join(15)
    assert events == [("ADDED", "w"), ("MODIFIED", "w"), ("DELETED", "w")], events

    # Watch from a compacted/invalid start answers 410 or an ERROR event.
    # deletecollection with a selector.
    v1.delete_collection_namespaced_config_map(ns, label_selector="page=yes")
    left = [i.metadata.name for i in v1.list_namespaced_config_map(ns).items]
    assert not any(n.startswith("p") for n in left), left

    # Deployments: scale subresource through the client.
    dep = client.V1Deployment(
        metadata=client.V1ObjectMeta(name="d"),
        spec=client.V1DeploymentSpec(
            replicas=1,
            selector=client.V1LabelSelector(match_labels={"app": "d"}),
            template=client.V1PodTemplateSpec(
                metadata=client.V1ObjectMeta(labels={"app": "d"}),
                spec=client.V1PodSpec(containers=[client.V1Container(name="c", image="nginx")]),
            ),
        ),
    )
    apps.create_namespaced_deployment(ns, dep)
    apps.patch_namespaced_deployment_scale("d", ns, {"spec": {"replicas": 3}})
    assert apps.read_namespaced_deployment("d", ns).spec.replicas == 3

    # Namespace deletion empties it.
    v1.delete_namespace(ns)
    deadline = time.time() + 15
    while time.time() < deadline:
        try:
            v1.read_namespace(ns)
        except ApiException as e:
            if e.status == 404:
                break
        time.sleep(0.1)
    else:
        raise AssertionError("namespace not removed")
    print("python client: all checks passed")


if __name__ == "__main__":
    main()
