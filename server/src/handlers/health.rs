//! `/healthz`, `/livez`, `/readyz`: named checks, `verbose`, `exclude` and per-check paths.

use super::respond;
use crate::state::State;
use keel_http::{Request, Response};

const ENDPOINTS: &[&str] = &["healthz", "livez", "readyz"];

/// Whether `path` is a health endpoint or one of its per-check paths.
pub fn is_health_path(path: &str) -> bool {
    let p = path.trim_start_matches('/');
    let first = p.split('/').next().unwrap_or("");
    ENDPOINTS.contains(&first)
}

/// The checks of one endpoint and their results (`Err` carries the reason, withheld from the
/// non-verbose body as upstream does).
fn checks(app: &State, endpoint: &str) -> Vec<(&'static str, Result<(), String>)> {
    // The store answers a read, and can still write (a failed sync stops its writes).
    let storage = app.registry.storage();
    let store = storage
        .get_latest(b"/healthz-probe")
        .map(|_| ())
        .map_err(|e| e.message)
        .and_then(|()| storage.health());
    // Start-up hooks: `/livez` assumes they will finish during `--livez-grace-period`.
    let bootstrap = if app.is_ready() || (endpoint == "livez" && app.lifecycle.in_livez_grace()) {
        Ok(())
    } else {
        Err("bootstrap not finished".into())
    };
    let mut v = vec![
        ("ping", Ok(())),
        ("log", Ok(())),
        ("store", store),
        ("poststarthook/bootstrap-controller", bootstrap),
    ];
    if endpoint == "readyz" {
        let shutdown = if app.lifecycle.shutdown_initiated() {
            Err("process is shutting down".into())
        } else {
            Ok(())
        };
        v.push(("shutdown", shutdown));
    }
    v
}

pub fn serve(app: &State, req: &Request) -> Response {
    let path = req.path.trim_matches('/');
    let mut parts = path.splitn(2, '/');
    let endpoint = parts.next().unwrap_or("");
    let single = parts.next().filter(|s| !s.is_empty());
    let all = checks(app, endpoint);
    let text = |code: u16, body: String| {
        respond::response(code, "text/plain; charset=utf-8", body.into_bytes())
    };
    if let Some(name) = single {
        return match all.iter().find(|(n, _)| *n == name) {
            Some((_, Ok(()))) => text(200, "ok".into()),
            Some((n, Err(_))) => text(500, format!("internal server error: {n} check failed\n")),
            None => text(404, "404 page not found\n".into()),
        };
    }
    let pairs = req.query_pairs();
    let verbose = pairs.iter().any(|(k, v)| k == "verbose" && v != "false");
    let excluded: Vec<&str> = pairs
        .iter()
        .filter(|(k, _)| k == "exclude")
        .flat_map(|(_, v)| v.split(','))
        .collect();
    let mut body = String::new();
    let mut failed = false;
    for (name, result) in &all {
        if excluded.contains(name) {
            body.push_str(&format!("[+]{name} excluded: ok\n"));
            continue;
        }
        match result {
            Ok(()) => body.push_str(&format!("[+]{name} ok\n")),
            Err(_) => {
                failed = true;
                body.push_str(&format!("[-]{name} failed: reason withheld\n"));
            }
        }
    }
    for name in &excluded {
        if !all.iter().any(|(n, _)| n == name) {
            body.push_str(&format!(
                "warn: some health checks cannot be excluded: no matches for \"{name}\"\n"
            ));
        }
    }
    if failed {
        body.push_str(&format!("{endpoint} check failed\n"));
        return text(500, body);
    }
    if verbose {
        body.push_str(&format!("{endpoint} check passed\n"));
        text(200, body)
    } else {
        text(200, "ok".into())
    }
}
