//! Encryption at rest (`--encryption-provider-config`), end to end with the real binary and
//! kubectl: what lands on disk, key rotation, and a server without the keys.

mod common;

use common::{persistent_backend, Server};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const KEY1: &str = "MTIzNDU2Nzg5MDEyMzQ1Njc4OTAxMjM0NTY3ODkwMTI="; // 32 bytes
const KEY2: &str = "YWJjZGVmZ2hpamtsbW5vcHFyc3R1dnd4eXoxMjM0NTY="; // 32 other bytes
const KEY3: &str = "MTIzNDU2Nzg5MDEyMzQ1Ng=="; // 16 bytes

/// A Secret's value no stored byte may show, and its base64 (as `data` holds it).
const SECRET_TEXT: &str = "hunter2-very-secret-value";
const SECRET_B64: &str = "aHVudGVyMi12ZXJ5LXNlY3JldC12YWx1ZQ==";
/// A ConfigMap's value, stored as plaintext: proves the disk scan sees what it should.
const PLAIN_TEXT: &str = "plainly-visible-configmap-value";

fn config_file(dir: &Path, name: &str, yaml: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, yaml).unwrap();
    p.to_str().unwrap().to_string()
}

fn secrets_config(providers: &str) -> String {
    format!(
        "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n\
         - resources:\n  - secrets\n  providers:\n{providers}"
    )
}

fn keys(kind: &str, keys: &[(&str, &str)]) -> String {
    let mut s = format!("  - {kind}:\n      keys:\n");
    for (name, secret) in keys {
        s.push_str(&format!("      - name: {name}\n        secret: {secret}\n"));
    }
    s
}

/// Every byte of every file of the store.
fn store_bytes(dir: &Path) -> Vec<u8> {
    fn walk(p: &Path, out: &mut Vec<u8>) {
        for e in std::fs::read_dir(p).unwrap() {
            let path: PathBuf = e.unwrap().path();
            if path.is_dir() {
                walk(&path, out);
            } else {
                out.extend(std::fs::read(&path).unwrap());
            }
        }
    }
    let mut out = Vec::new();
    walk(&dir.join("store"), &mut out);
    out
}

fn contains(hay: &[u8], needle: &str) -> bool {
    hay.windows(needle.len()).any(|w| w == needle.as_bytes())
}

fn secret_value(s: &Server, ns: &str, name: &str) -> String {
    let v = s.json(&["get", "secret", "-n", ns, name, "-o", "json"]);
    v["data"]["password"].as_str().unwrap().to_string()
}

fn create_objects(s: &Server, ns: &str) {
    s.ok(&["create", "namespace", ns]);
    s.ok(&[
        "create",
        "secret",
        "generic",
        "s1",
        "-n",
        ns,
        &format!("--from-literal=password={SECRET_TEXT}"),
    ]);
    s.ok(&[
        "create",
        "configmap",
        "c1",
        "-n",
        ns,
        &format!("--from-literal=k={PLAIN_TEXT}"),
    ]);
}

/// The Secret is stored as `k8s:enc:aesgcm:v1:key1:...`, never as plaintext, while reads
/// (get, list, watch) see the plaintext; then the key is rotated as upstream documents it,
/// and a server with only `identity` refuses to hand out the encrypted values.
#[test]
fn aesgcm_secrets_are_encrypted_on_disk_and_keys_rotate() {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = tmp.path().to_path_buf();
    let only_key1 = config_file(
        &cfg,
        "k1.yaml",
        &secrets_config(&keys("aesgcm", &[("key1", KEY1)])),
    );
    let dir = tmp.path().join("data");
    let s = Server::start_at(tmp, dir, &["--encryption-provider-config", &only_key1]);
    create_objects(&s, "enc");
    assert_eq!(secret_value(&s, "enc", "s1"), SECRET_B64);
    let list = s.json(&["get", "secrets", "-n", "enc", "-o", "json"]);
    assert_eq!(list["items"][0]["data"]["password"], SECRET_B64);
    // A watch from the start delivers the plaintext too (the per-core watch feed).
    let w = s.get("/api/v1/namespaces/enc/secrets?watch=1&resourceVersion=0&timeoutSeconds=1");
    assert!(w.text().contains(SECRET_B64), "{}", w.text());
    assert!(!w.text().contains("k8s:enc"), "{}", w.text());
    // An update re-encrypts, and the returned object is plaintext.
    s.ok(&["label", "secret", "-n", "enc", "s1", "rotated=no"]);
    assert_eq!(secret_value(&s, "enc", "s1"), SECRET_B64);
    let metrics = s.get("/metrics").text();
    for series in [
        r#"apiserver_storage_transformation_operations_total{resource="secrets",status="OK",transformation_type="to_storage",transformer_prefix="k8s:enc:aesgcm:v1:"} 2"#,
        r#"apiserver_storage_transformation_operations_total{resource="secrets",status="OK",transformation_type="from_storage",transformer_prefix="k8s:enc:aesgcm:v1:"}"#,
    ] {
        assert!(metrics.contains(series), "{series} not in:\n{metrics}");
    }
    if !persistent_backend() {
        return;
    }

    let (tmp, dir) = s.into_data();
    let disk = store_bytes(&dir);
    assert!(
        contains(&disk, "k8s:enc:aesgcm:v1:key1:"),
        "no encrypted value on disk"
    );
    assert!(
        !contains(&disk, SECRET_B64),
        "the Secret's data is on disk in the clear"
    );
    assert!(!contains(&disk, SECRET_TEXT));
    assert!(
        contains(&disk, PLAIN_TEXT),
        "the scan must see unencrypted ConfigMaps"
    );
    assert!(!contains(&disk, "k8s:enc:aesgcm:v1:key2:"));

    // Rotation, step 1: the new key first; old values still read; rewrite everything.
    let both = config_file(
        tmp.path(),
        "k21.yaml",
        &secrets_config(&keys("aesgcm", &[("key2", KEY2), ("key1", KEY1)])),
    );
    let s = Server::start_at(tmp, dir, &["--encryption-provider-config", &both]);
    assert_eq!(secret_value(&s, "enc", "s1"), SECRET_B64);
    let all = s.ok(&["get", "secrets", "-A", "-o", "json"]);
    let out = s.kubectl_stdin(&["replace", "-f", "-"], &all);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (tmp, dir) = s.into_data();
    assert!(contains(&store_bytes(&dir), "k8s:enc:aesgcm:v1:key2:"));

    // Step 2: only the new key; every Secret still reads.
    let only_key2 = config_file(
        tmp.path(),
        "k2.yaml",
        &secrets_config(&keys("aesgcm", &[("key2", KEY2)])),
    );
    let s = Server::start_at(tmp, dir, &["--encryption-provider-config", &only_key2]);
    assert_eq!(secret_value(&s, "enc", "s1"), SECRET_B64);
    let list = s.json(&["get", "secrets", "-A", "-o", "json"]);
    assert!(!list["items"].as_array().unwrap().is_empty());
    let (tmp, dir) = s.into_data();

    // A server with only identity: encrypted values are a 500 with upstream's message, on
    // get and on list; unencrypted resources are unaffected.
    let identity = config_file(tmp.path(), "id.yaml", &secrets_config("  - identity: {}\n"));
    let s = Server::start_at(tmp, dir, &["--encryption-provider-config", &identity]);
    let r = s.get("/api/v1/namespaces/enc/secrets/s1");
    assert_eq!(r.status, 500, "{}", r.text());
    assert_eq!(r.json()["reason"], "InternalError");
    assert_eq!(
        r.json()["message"],
        "Internal error occurred: identity transformer tried to read encrypted data"
    );
    let r = s.get("/api/v1/namespaces/enc/secrets");
    assert_eq!(r.status, 500, "{}", r.text());
    assert_eq!(
        r.json()["message"],
        "Internal error occurred: unable to transform key \"/core/secrets/enc/s1\": identity transformer tried to read encrypted data"
    );
    let err = s.fails(&["get", "secret", "-n", "enc", "s1"]);
    assert!(
        err.contains("identity transformer tried to read encrypted data"),
        "{err}"
    );
    let cm = s.json(&["get", "configmap", "-n", "enc", "c1", "-o", "json"]);
    assert_eq!(cm["data"]["k"], PLAIN_TEXT);
    // A key that is not listed: upstream's message for the provider.
    let (tmp, dir) = s.into_data();
    let other = config_file(
        tmp.path(),
        "k3.yaml",
        &secrets_config(&keys("aesgcm", &[("key3", KEY3)])),
    );
    let s = Server::start_at(tmp, dir, &["--encryption-provider-config", &other]);
    let r = s.get("/api/v1/namespaces/enc/secrets/s1");
    assert_eq!(
        r.json()["message"],
        "Internal error occurred: no matching key was found for the provided AES transformer"
    );
}

/// secretbox for Secrets and aescbc for ConfigMaps in one file, JSON this time.
#[test]
fn secretbox_and_aescbc_providers() {
    let tmp = tempfile::tempdir().unwrap();
    let json = format!(
        r#"{{"apiVersion":"apiserver.config.k8s.io/v1","kind":"EncryptionConfiguration","resources":[
            {{"resources":["secrets"],"providers":[{{"secretbox":{{"keys":[{{"name":"sb1","secret":"{KEY1}"}}]}}}}]}},
            {{"resources":["configmaps"],"providers":[{{"aescbc":{{"keys":[{{"name":"cbc1","secret":"{KEY3}"}}]}}}},{{"identity":{{}}}}]}}]}}"#
    );
    let cfg = config_file(tmp.path(), "enc.json", &json);
    let dir = tmp.path().join("data");
    let s = Server::start_at(tmp, dir, &["--encryption-provider-config", &cfg]);
    create_objects(&s, "boxes");
    assert_eq!(secret_value(&s, "boxes", "s1"), SECRET_B64);
    let cm = s.json(&["get", "configmap", "-n", "boxes", "c1", "-o", "json"]);
    assert_eq!(cm["data"]["k"], PLAIN_TEXT);
    let list = s.json(&["get", "configmaps", "-A", "-o", "json"]);
    assert!(list["items"]
        .as_array()
        .unwrap()
        .iter()
        .any(|i| i["data"]["k"] == PLAIN_TEXT));
    if !persistent_backend() {
        return;
    }
    let (_tmp, dir) = s.into_data();
    let disk = store_bytes(&dir);
    assert!(contains(&disk, "k8s:enc:secretbox:v1:sb1:"));
    assert!(contains(&disk, "k8s:enc:aescbc:v1:cbc1:"));
    assert!(!contains(&disk, SECRET_B64));
    assert!(
        !contains(&disk, PLAIN_TEXT),
        "ConfigMaps are encrypted too here"
    );
}

/// A bad file stops the start with upstream's validation message, before the data
/// directory is created.
#[test]
fn a_bad_configuration_stops_the_start() {
    let tmp = tempfile::tempdir().unwrap();
    for (yaml, want) in [
        (
            secrets_config(&keys("aesgcm", &[("key1", "MTIzNDU2Nzg=")])),
            "error while parsing file: resources[0].providers[0].aesgcm.keys[0].secret: Invalid value: \"REDACTED\": secret is not of the expected length, got 8, expected one of [16 24 32]",
        ),
        (
            secrets_config("  - kms:\n      apiVersion: v2\n      name: k\n      endpoint: unix:///k.sock\n"),
            "the kms provider is not supported by keel",
        ),
        (String::new(), "is empty"),
    ] {
        let cfg = config_file(tmp.path(), "bad.yaml", &yaml);
        let data = tmp.path().join("data");
        let out = Command::new(env!("CARGO_BIN_EXE_apiserver"))
            .args(["--data-dir", data.to_str().unwrap(), "--secure-port", "0"])
            .args(["--encryption-provider-config", &cfg])
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "started with {yaml}");
        assert!(err.contains(want), "{err}");
        assert!(!data.exists(), "the data directory was touched");
    }
    let missing = Command::new(env!("CARGO_BIN_EXE_apiserver"))
        .args(["--encryption-provider-config", "/nonexistent/enc.yaml"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&missing.stderr).contains(
        "error opening encryption provider configuration file \"/nonexistent/enc.yaml\""
    ));
}
