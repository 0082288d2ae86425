"""A streaming list through the Python `kubernetes` client: a watch with
send_initial_events=True gets the namespace's ConfigMaps as ADDED events, then the BOOKMARK
annotated k8s.io/initial-events-end at a resourceVersion no older than the last write, then
later changes. Usage: streaming_list.py <kubeconfig>. Exits non-zero on the first failure."""
import sys
import threading
import time

from kubernetes import client, config, watch


def main():
    config.load_kube_config(config_file=sys.argv[1])
    v1 = client.CoreV1Api()
    ns = "pystreaming"
    v1.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=ns)))
    last = None
    for name in ["a", "b", "c"]:
        last = v1.create_namespaced_config_map(
            ns, client.V1ConfigMap(metadata=client.V1ObjectMeta(name=name), data={"k": name}))

    seen = []
    w = watch.Watch()

    def later():
        time.sleep(1)
        v1.create_namespaced_config_map(ns, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="d")))

    threading.Thread(target=later).start()
    end_rv = None
    for ev in w.stream(v1.list_namespaced_config_map, ns, send_initial_events=True,
                       resource_version_match="NotOlderThan", allow_watch_bookmarks=True,
                       timeout_seconds=10):
        if ev["type"] == "BOOKMARK":
            meta = ev["object"]["metadata"]
            if (meta.get("annotations") or {}).get("k8s.io/initial-events-end") == "true":
                end_rv = int(meta["resourceVersion"])
                seen.append(("END", ""))
            continue
        seen.append((ev["type"], ev["object"].metadata.name))
        if ev["object"].metadata.name == "d":
            w.stop()
    want = [("ADDED", "a"), ("ADDED", "b"), ("ADDED", "c"), ("END", ""), ("ADDED", "d")]
    assert seen == want, seen
    assert end_rv >= int(last.metadata.resource_version), (end_rv, last.metadata.resource_version)
    print("ok")


if __name__ == "__main__":
    main()
