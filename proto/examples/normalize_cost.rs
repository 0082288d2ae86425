//! Cost of `drop_go_omitted` beside a JSON parse of the same object (a pod-like object of
//! about 2 KiB): `cargo run --release -p keel-proto --example normalize_cost`.
use std::time::Instant;

fn main() {
    let pod = serde_json::json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "web-1", "namespace": "default", "labels": {"app": "web", "tier": "front"}},
        "spec": {"containers": [{"name": "web", "image": "nginx:1.27", "ports": [{"containerPort": 80, "protocol": "TCP"}],
            "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
            "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"cpu": "1", "memory": "512Mi"}},
            "volumeMounts": [{"name": "data", "mountPath": "/data"}], "imagePullPolicy": "IfNotPresent",
            "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File"},
            {"name": "side", "image": "busybox", "args": ["sleep", "3600"], "resources": {}}],
            "volumes": [{"name": "data", "emptyDir": {}}], "restartPolicy": "Always", "dnsPolicy": "ClusterFirst",
            "terminationGracePeriodSeconds": 30, "schedulerName": "default-scheduler", "securityContext": {},
            "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}]}});
    let bytes = serde_json::to_vec(&pod).unwrap();
    keel_proto::warm_up();
    let warm = std::time::Instant::now();
    keel_proto::drop_go_omitted(&mut pod.clone());
    println!("first call (index build) {:?}", warm.elapsed());
    let n = 200_000;
    let t = Instant::now();
    for _ in 0..n {
        let v: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        std::hint::black_box(v);
    }
    let parse = t.elapsed();
    let t = Instant::now();
    for _ in 0..n {
        let mut v: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        keel_proto::drop_go_omitted(&mut v);
        std::hint::black_box(v);
    }
    let both = t.elapsed();
    let per = |d: std::time::Duration| d.as_nanos() as f64 / n as f64 / 1000.0;
    println!("{} bytes: parse {:.2} us, parse+normalize {:.2} us, normalize {:.2} us ({:.0}% of a parse)",
        bytes.len(), per(parse), per(both), per(both) - per(parse), (per(both) - per(parse)) / per(parse) * 100.0);
}
