"""Pods' status subresource through the Python `kubernetes` client: replace and patch of
pods/status change the status only. Usage: pod_status.py <kubeconfig>."""
import sys

from kubernetes import client, config


def main():
    config.load_kube_config(config_file=sys.argv[1])
    v1 = client.CoreV1Api()
    ns = "pystatus"
    v1.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=ns)))
    pod = client.V1Pod(
        metadata=client.V1ObjectMeta(name="p"),
        spec=client.V1PodSpec(containers=[client.V1Container(name="c", image="nginx:1.25")]),
    )
    created = v1.create_namespaced_pod(ns, pod)
    assert created.status.phase == "Pending", created.status

    got = v1.read_namespaced_pod_status("p", ns)
    got.status.phase = "Running"
    got.status.pod_ip = "10.9.8.7"
    got.spec.containers[0].image = "ignored:2"
    got.spec.node_name = "ignored-node"
    replaced = v1.replace_namespaced_pod_status("p", ns, got)
    assert replaced.status.phase == "Running", replaced.status
    assert replaced.status.pod_ip == "10.9.8.7", replaced.status
    assert replaced.spec.containers[0].image == "nginx:1.25", replaced.spec
    assert replaced.spec.node_name is None, replaced.spec
    assert int(replaced.metadata.resource_version) > int(created.metadata.resource_version)

    patched = v1.patch_namespaced_pod_status(
        "p", ns, {"status": {"phase": "Succeeded"}, "spec": {"activeDeadlineSeconds": 5}}
    )
    assert patched.status.phase == "Succeeded", patched.status
    assert patched.spec.active_deadline_seconds is None, patched.spec

    # The main resource ignores status changes.
    again = v1.patch_namespaced_pod("p", ns, {"status": {"phase": "Failed"}, "metadata": {"labels": {"x": "y"}}})
    assert again.status.phase == "Succeeded", again.status
    assert again.metadata.labels == {"x": "y"}, again.metadata.labels

    # The field selector on status.phase sees the status write.
    done = v1.list_namespaced_pod(ns, field_selector="status.phase=Succeeded")
    assert [p.metadata.name for p in done.items] == ["p"], done.items
    print("ok")


if __name__ == "__main__":
    main()
