"""A pod's view of the cluster through the Python `kubernetes` client's in-cluster loader:
the service account token file and `ca.crt` (from the namespace's `kube-root-ca.crt`
ConfigMap) a kubelet would mount, and the `KUBERNETES_SERVICE_*` variables pointing at the
server. Usage: service_account.py <dir with token and ca.crt> <port> <namespace>.
Prints the identity the server reports and what the pod may list."""
import json
import os
import sys

from kubernetes import client
from kubernetes.client.rest import ApiException
from kubernetes.config.incluster_config import InClusterConfigLoader


def main():
    mount, port, ns = sys.argv[1], sys.argv[2], sys.argv[3]
    InClusterConfigLoader(
        token_filename=os.path.join(mount, "token"),
        cert_filename=os.path.join(mount, "ca.crt"),
        environ={"KUBERNETES_SERVICE_HOST": "127.0.0.1", "KUBERNETES_SERVICE_PORT": port},
    ).load_and_set()
    api = client.ApiClient()
    review = client.AuthenticationV1Api(api).create_self_subject_review(
        client.V1SelfSubjectReview()
    )
    user = review.status.user_info
    pods = client.CoreV1Api(api).list_namespaced_pod(ns)
    try:
        client.CoreV1Api(api).list_namespaced_secret(ns)
        secrets = "allowed"
    except ApiException as e:
        secrets = e.status
    print(json.dumps({
        "username": user.username,
        "groups": user.groups,
        "extra": user.extra,
        "pods": [p.metadata.name for p in pods.items],
        "secrets": secrets,
    }))


if __name__ == "__main__":
    main()
