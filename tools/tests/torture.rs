//! `keel-torture` against the real server: kills under write load, with and without damage to
//! the store. The short form of the campaign whose long runs are in benches/REPORT.md.

use std::process::Command;

fn torture(args: &[&str]) -> (i32, serde_json::Value, String) {
    let tmp = tempfile::tempdir().unwrap();
    let json = tmp.path().join("report.json");
    let out = Command::new(env!("CARGO_BIN_EXE_keel-torture"))
        .arg("--apiserver")
        .arg(env!("CARGO_BIN_EXE_keel-apiserver-under-test"))
        .arg("--dir")
        .arg(tmp.path().join("run"))
        .arg("--json")
        .arg(&json)
        .args(["--writers", "4", "--keys-per-writer", "20", "--seed", "7"])
        .args(["--load-min", "150ms", "--load-max", "400ms"])
        .args(args)
        .output()
        .expect("run keel-torture");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let report = std::fs::read(&json)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or(serde_json::Value::Null);
    (out.status.code().unwrap_or(-1), report, text)
}

#[test]
fn kills_alone_lose_no_acknowledged_write() {
    let (code, r, text) = torture(&["--iterations", "6", "--damage-probability", "0"]);
    assert_eq!(code, 0, "{text}");
    assert_eq!(r["iterations"], 6, "{text}");
    assert!(r["writes_acknowledged"].as_u64().unwrap() > 0, "{text}");
    assert_eq!(r["repairs"], 0, "{text}");
    assert_eq!(r["cells"]["none"]["opened_intact"], 6, "{text}");
}

#[test]
fn damaged_stores_refuse_naming_the_file_and_repairs_reuse_no_revision() {
    let (code, r, text) = torture(&[
        "--iterations",
        "8",
        "--damage-probability",
        "1",
        "--damage",
        "truncate,delete-segment,flip-bit",
    ]);
    assert_eq!(code, 0, "{text}");
    assert_eq!(r["iterations"], 8, "{text}");
    assert_eq!(r["lost_outside_refusals"], 0, "{text}");
    let cells = r["cells"].as_object().unwrap();
    let refused: u64 = cells.values().map(|c| c["refused"].as_u64().unwrap()).sum();
    let named: u64 = cells
        .values()
        .map(|c| c["refused_naming_file"].as_u64().unwrap())
        .sum();
    assert!(refused >= 4, "{text}");
    assert_eq!(
        named, refused,
        "every refusal names the damaged file\n{text}"
    );
    assert_eq!(r["repairs"].as_u64().unwrap(), refused, "{text}");
}
