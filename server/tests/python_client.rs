//! The Python `kubernetes` client (pip) against the real apiserver binary.

mod common;

#[test]
fn python_kubernetes_client() {
    let s = common::Server::start(&[]);
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/python/client_test.py");
    let out = std::process::Command::new("python3")
        .arg(script)
        .arg(&s.kubeconfig)
        .output()
        .expect("python3");
    assert!(
        out.status.success(),
        "python client checks failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
