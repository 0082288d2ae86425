//! The Python `kubernetes` client (pip) against the real apiserver binary.

mod common;

fn run_script(name: &str) {
    let s = common::server();
    let script = format!("{}/tests/python/{name}", env!("CARGO_MANIFEST_DIR"));
    let out = std::process::Command::new("python3")
        .arg(&script)
        .arg(&s.kubeconfig)
        .output()
        .expect("python3");
    assert!(
        out.status.success(),
        "python checks in {name} failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn python_kubernetes_client() {
    run_script("client_test.py");
}

#[test]
fn python_pod_status_subresource() {
    run_script("pod_status.py");
}

#[test]
fn python_streaming_list() {
    run_script("streaming_list.py");
}

#[test]
fn python_server_side_apply() {
    run_script("server_side_apply.py");
}

#[test]
fn python_custom_objects() {
    run_script("custom_objects.py");
}
