"""Server-side apply through the Python `kubernetes` client's dynamic client
(`server_side_apply`): create, a second manager's conflict (409 with upstream's message),
force. Usage: server_side_apply.py <kubeconfig>."""
import sys

from kubernetes import client, config, dynamic
from kubernetes.client.rest import ApiException


def main():
    config.load_kube_config(config_file=sys.argv[1])
    api = client.ApiClient()
    client.CoreV1Api(api).create_namespace(
        client.V1Namespace(metadata=client.V1ObjectMeta(name="pyssa"))
    )
    dyn = dynamic.DynamicClient(api)
    cms = dyn.resources.get(api_version="v1", kind="ConfigMap")
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"k": "v"}}
    got = cms.server_side_apply(body=body, namespace="pyssa", field_manager="py")
    assert got.data.k == "v", got
    entry = got.metadata.managedFields[0]
    assert (entry.manager, entry.operation) == ("py", "Apply"), entry
    body["data"]["k"] = "w"
    try:
        cms.server_side_apply(body=body, namespace="pyssa", field_manager="other")
        raise AssertionError("second manager should conflict")
    except ApiException as e:
        assert e.status == 409, e
        text = e.body.decode() if isinstance(e.body, bytes) else e.body
        assert 'Apply failed with 1 conflict: conflict with \\"py\\": .data.k' in text, text
    got = cms.server_side_apply(body=body, namespace="pyssa", field_manager="other", force_conflicts=True)
    assert got.data.k == "w", got
    assert [m.manager for m in got.metadata.managedFields] == ["other"], got.metadata
    print("ok")


if __name__ == "__main__":
    main()
