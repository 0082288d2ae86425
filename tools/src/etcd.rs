//! The same workloads against an etcd v3 endpoint, shaped as kube-apiserver uses etcd: keys
//! `<prefix>/<resource>/<namespace>/<name>`; create = txn(mod_revision == 0) put; update =
//! txn(mod_revision == last seen) put, re-reading on conflict (GuaranteedUpdate); delete = read
//! then txn(mod_revision) delete; get and list = range; watch = watch on the prefix.

use crate::driver::{self, Outcome, Plan};
use crate::kube::crud::CreateSpec;
use crate::limits;
use crate::objects::{self, Naming, SENT_ANNOTATION};
use crate::report::{OpSummary, Report};
use crate::watchrun::{self, WatcherCtx, WatcherOut};
use etcd_client::{Client, Compare, CompareOp, GetOptions, KvClient, Txn, TxnOp, WatchOptions};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Conflicts an update retries before giving up.
pub const UPDATE_ATTEMPTS_MAX: u32 = 5;

/// Connections to one etcd endpoint set; requests are spread over them.
#[derive(Clone)]
pub struct Etcd {
    clients: Arc<Vec<Client>>,
    /// Key prefix, kube-apiserver's `--etcd-prefix` (default `/registry`).
    pub prefix: Arc<str>,
}

impl Etcd {
    /// Opens `connections` clients (each one HTTP/2 connection) to `endpoints`.
    pub async fn connect(
        endpoints: &[String],
        connections: usize,
        prefix: &str,
    ) -> Result<Etcd, String> {
        let mut clients = Vec::with_capacity(connections.max(1));
        for _ in 0..connections.max(1) {
            let c = Client::connect(endpoints, None)
                .await
                .map_err(|e| format!("etcd {endpoints:?}: {e}"))?;
            clients.push(c);
        }
        Ok(Etcd {
            clients: Arc::new(clients),
            prefix: prefix.trim_end_matches('/').into(),
        })
    }

    fn kv(&self, i: u64) -> KvClient {
        self.clients[(i % self.clients.len() as u64) as usize]
            .kv_client()
            .max_decoding_message_size(limits::ETCD_MESSAGE_BYTES_MAX)
    }

    fn client(&self, i: u64) -> Client {
        self.clients[(i % self.clients.len() as u64) as usize].clone()
    }

    /// The store's current revision.
    pub async fn revision(&self) -> Result<i64, String> {
        let resp = self
            .kv(0)
            .get(
                format!("{}/", self.prefix),
                Some(
                    GetOptions::new()
                        .with_prefix()
                        .with_keys_only()
                        .with_limit(1),
                ),
            )
            .await
            .map_err(err)?;
        Ok(resp.header().map_or(0, |h| h.revision()))
    }

    /// Keys under `<prefix>/<resource>/` (for tests and checks).
    pub async fn count(&self, resource: &str) -> Result<i64, String> {
        let key = format!("{}/{resource}/", self.prefix);
        let resp = self
            .kv(0)
            .get(key, Some(GetOptions::new().with_prefix().with_count_only()))
            .await
            .map_err(err)?;
        Ok(resp.count())
    }
}

fn err(e: etcd_client::Error) -> String {
    format!("etcd: {e}")
}

fn value(spec: &CreateSpec, i: u64, generation: u64) -> Vec<u8> {
    let size = objects::spread_size(spec.size, spec.size_spread, i);
    serde_json::to_vec(&objects::object(&spec.naming, i, size, generation)).unwrap_or_default()
}

/// Creates `first..first+ops`: txn(mod_revision == 0) put, else AlreadyExists.
pub async fn create(e: &Etcd, spec: &CreateSpec, plan: &Plan) -> Result<Report, String> {
    let (e2, s2) = (e.clone(), Arc::new(spec.clone()));
    let sum = driver::run("create", plan, move |i| {
        let (e, spec) = (e2.clone(), s2.clone());
        async move {
            let i = spec.first + i;
            let key = spec.naming.etcd_key(&e.prefix, i);
            let v = value(&spec, i, 0);
            let bytes = v.len() as u64;
            let txn = Txn::new()
                .when([Compare::mod_revision(key.clone(), CompareOp::Equal, 0)])
                .and_then([TxnOp::put(key.clone(), v, None)]);
            let resp = e.kv(i).txn(txn).await.map_err(err)?;
            if !resp.succeeded() {
                return Err(format!("{key}: AlreadyExists"));
            }
            Ok(Outcome { bytes, objects: 1 })
        }
    })
    .await?;
    Ok(single("create", sum))
}

/// Range-reads key `first + i mod count`.
pub async fn get(
    e: &Etcd,
    naming: &Naming,
    first: u64,
    count: u64,
    plan: &Plan,
) -> Result<Report, String> {
    let (e2, n) = (e.clone(), Arc::new(naming.clone()));
    let count = count.max(1);
    let sum = driver::run("get", plan, move |i| {
        let (e, n) = (e2.clone(), n.clone());
        async move {
            let key = n.etcd_key(&e.prefix, first + i % count);
            let resp = e.kv(i).get(key.clone(), None).await.map_err(err)?;
            let kv = resp
                .kvs()
                .first()
                .ok_or_else(|| format!("{key}: NotFound"))?;
            Ok(Outcome {
                bytes: kv.value().len() as u64,
                objects: 1,
            })
        }
    })
    .await?;
    Ok(single("get", sum))
}

/// Writes a new version of key `i mod count`: txn(mod_revision == cached) put; on a conflict
/// or a cache miss the key is read first, as kube-apiserver's GuaranteedUpdate does.
pub async fn update(
    e: &Etcd,
    spec: &CreateSpec,
    count: u64,
    plan: &Plan,
) -> Result<Report, String> {
    let cache: Arc<Mutex<HashMap<u64, i64>>> = Arc::default();
    let (e2, s2) = (e.clone(), Arc::new(spec.clone()));
    let count = count.max(1);
    let sum = driver::run("update", plan, move |i| {
        let (e, spec, cache) = (e2.clone(), s2.clone(), cache.clone());
        async move {
            let idx = spec.first + i % count;
            let key = spec.naming.etcd_key(&e.prefix, idx);
            let v = value(&spec, idx, i / count + 1);
            let bytes = v.len() as u64;
            let mut kv = e.kv(i);
            let mut rev = cache.lock().map_err(|_| "poisoned")?.get(&idx).copied();
            for _ in 0..UPDATE_ATTEMPTS_MAX {
                let current = match rev {
                    Some(r) => r,
                    None => {
                        let got = kv.get(key.clone(), None).await.map_err(err)?;
                        got.kvs()
                            .first()
                            .ok_or_else(|| format!("{key}: NotFound"))?
                            .mod_revision()
                    }
                };
                let txn = Txn::new()
                    .when([Compare::mod_revision(
                        key.clone(),
                        CompareOp::Equal,
                        current,
                    )])
                    .and_then([TxnOp::put(key.clone(), v.clone(), None)]);
                let resp = kv.txn(txn).await.map_err(err)?;
                if resp.succeeded() {
                    let new_rev = resp.header().map_or(0, |h| h.revision());
                    cache.lock().map_err(|_| "poisoned")?.insert(idx, new_rev);
                    return Ok(Outcome { bytes, objects: 1 });
                }
                rev = None;
            }
            Err(format!("{key}: Conflict {UPDATE_ATTEMPTS_MAX} times"))
        }
    })
    .await?;
    Ok(single("update", sum))
}

/// Deletes `first..first+ops`: read, then txn(mod_revision == read) delete.
pub async fn delete(e: &Etcd, naming: &Naming, first: u64, plan: &Plan) -> Result<Report, String> {
    let (e2, n) = (e.clone(), Arc::new(naming.clone()));
    let sum = driver::run("delete", plan, move |i| {
        let (e, n) = (e2.clone(), n.clone());
        async move {
            let key = n.etcd_key(&e.prefix, first + i);
            let mut kv = e.kv(i);
            let got = kv.get(key.clone(), None).await.map_err(err)?;
            let rev = got
                .kvs()
                .first()
                .ok_or_else(|| format!("{key}: NotFound"))?
                .mod_revision();
            let txn = Txn::new()
                .when([Compare::mod_revision(key.clone(), CompareOp::Equal, rev)])
                .and_then([TxnOp::delete(key.clone(), None)]);
            if !kv.txn(txn).await.map_err(err)?.succeeded() {
                return Err(format!("{key}: Conflict"));
            }
            Ok(Outcome {
                bytes: 0,
                objects: 1,
            })
        }
    })
    .await?;
    Ok(single("delete", sum))
}

/// Ranges over every key of the collection (all namespaces, or namespace `ns`), whole or in
/// pages of `page_size` (each page starts after the previous page's last key).
pub async fn list(
    e: &Etcd,
    naming: &Naming,
    ns: Option<&str>,
    page_size: Option<u64>,
    plan: &Plan,
) -> Result<Report, String> {
    let (e2, n) = (e.clone(), Arc::new(naming.clone()));
    let ns: Option<Arc<str>> = ns.map(Arc::from);
    let name = if page_size.is_some() {
        "list-paged"
    } else {
        "list"
    };
    let pages = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let pages2 = pages.clone();
    let sum = driver::run(name, plan, move |i| {
        let (e, n, ns, pages) = (e2.clone(), n.clone(), ns.clone(), pages2.clone());
        async move {
            let mut prefix = n.etcd_collection_prefix(&e.prefix);
            if let Some(ns) = ns {
                prefix = format!("{prefix}{ns}/");
            }
            let end = prefix_end(prefix.as_bytes());
            let mut kv = e.kv(i);
            let mut out = Outcome::default();
            let mut from = prefix.into_bytes();
            // Later pages read at the first page's revision, as kube-apiserver's continue
            // tokens do.
            let mut at_rev = 0;
            loop {
                let mut opts = GetOptions::new()
                    .with_range(end.clone())
                    .with_revision(at_rev);
                if let Some(l) = page_size {
                    opts = opts.with_limit(l as i64);
                }
                let resp = kv.get(from.clone(), Some(opts)).await.map_err(err)?;
                pages.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if at_rev == 0 {
                    at_rev = resp.header().map_or(0, |h| h.revision());
                }
                for item in resp.kvs() {
                    out.bytes += (item.key().len() + item.value().len()) as u64;
                    out.objects += 1;
                }
                match resp.kvs().last() {
                    Some(last) if resp.more() && page_size.is_some() => {
                        from = last.key().to_vec();
                        from.push(0);
                    }
                    _ => return Ok(out),
                }
            }
        }
    })
    .await?;
    let mut r = single(name, sum);
    let per = r.ops[0].objects.checked_div(r.ops[0].ops).unwrap_or(0);
    r.details.insert("objects_per_list".into(), per.into());
    r.details.insert(
        "pages".into(),
        pages.load(std::sync::atomic::Ordering::Relaxed).into(),
    );
    Ok(r)
}

/// The first key after every key starting with `prefix`.
pub fn prefix_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return end;
        }
    }
    vec![0]
}

/// `watchers` watches on the collection prefix of `naming.namespace(0)` while the plan's
/// writes create keys `first..`.
pub async fn watch(
    e: &Etcd,
    naming: &Naming,
    size: usize,
    first: u64,
    watchers: usize,
    plan: &Plan,
) -> Result<Report, String> {
    let ns = naming.namespace(0);
    let one_ns = Naming {
        namespaces: 1,
        ns_prefix: ns.clone(),
        ..naming.clone()
    };
    let prefix = format!("{}{ns}/", one_ns.etcd_collection_prefix(&e.prefix));
    let start = e.revision().await? + 1;
    let open = |w: usize, ctx: WatcherCtx| {
        let (client, prefix) = (e.client(w as u64), prefix.clone());
        tokio::spawn(watcher(client, prefix, start, ctx))
    };
    let spec = CreateSpec {
        naming: one_ns,
        size,
        size_spread: 0.0,
        first,
    };
    watchrun::run("etcd", watchers, 1, open, writer(e, spec, plan)).await
}

async fn writer(e: &Etcd, spec: CreateSpec, plan: &Plan) -> Result<watchrun::WriterOut, String> {
    let written = Arc::new(Mutex::new(Vec::new()));
    let (e2, s2, w2) = (e.clone(), Arc::new(spec), written.clone());
    let sum: OpSummary = driver::run("write", plan, move |i| {
        let (e, spec, written) = (e2.clone(), s2.clone(), w2.clone());
        async move {
            let i = spec.first + i;
            let key = spec.naming.etcd_key(&e.prefix, i);
            let v = value(&spec, i, 0);
            let bytes = v.len() as u64;
            let txn = Txn::new()
                .when([Compare::mod_revision(key.clone(), CompareOp::Equal, 0)])
                .and_then([TxnOp::put(key.clone(), v, None)]);
            let resp = e.kv(i).txn(txn).await.map_err(err)?;
            if !resp.succeeded() {
                return Err(format!("{key}: AlreadyExists"));
            }
            let rev = resp.header().map_or(0, |h| h.revision());
            written
                .lock()
                .map_err(|_| "poisoned")?
                .push((rev as u64, 0));
            Ok(Outcome { bytes, objects: 1 })
        }
    })
    .await?;
    let written = std::mem::take(&mut *written.lock().map_err(|_| "poisoned")?);
    Ok((sum, written))
}

/// The writer's send time from a stored object's annotations.
fn sent_time(value: &[u8]) -> Option<u128> {
    #[derive(serde::Deserialize)]
    struct Meta {
        #[serde(default)]
        annotations: HashMap<String, String>,
    }
    #[derive(serde::Deserialize)]
    struct Obj {
        metadata: Meta,
    }
    let o: Obj = serde_json::from_slice(value).ok()?;
    o.metadata.annotations.get(SENT_ANNOTATION)?.parse().ok()
}

async fn watcher(mut client: Client, prefix: String, start: i64, ctx: WatcherCtx) -> WatcherOut {
    let mut out = WatcherOut::default();
    let mut stop = ctx.stop.clone();
    let opts = WatchOptions::new().with_prefix().with_start_revision(start);
    let mut stream = match client.watch(prefix, Some(opts)).await {
        Ok(s) => s,
        Err(e) => {
            out.error = Some(err(e));
            return out;
        }
    };
    loop {
        let msg = tokio::select! {
            _ = stop.changed() => break,
            m = stream.message() => m,
        };
        match msg {
            Ok(Some(resp)) => {
                if resp.created() {
                    ctx.connected
                        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
                if resp.canceled() {
                    out.error = Some(format!("watch canceled: {}", resp.cancel_reason()));
                    break;
                }
                for ev in resp.events() {
                    if let Some(kv) = ev.kv() {
                        out.record(&ctx, kv.mod_revision() as u64, sent_time(kv.value()));
                    }
                }
            }
            Ok(None) => {
                out.error = Some("watch ended by the server".into());
                break;
            }
            Err(e) => {
                out.error = Some(err(e));
                break;
            }
        }
    }
    out
}

fn single(name: &str, sum: OpSummary) -> Report {
    let mut r = Report::new(name, "etcd");
    r.ops.push(sum);
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_ends() {
        let cases: &[(&[u8], &[u8])] = &[
            (b"/a/", b"/a0"),
            (b"a\xff", b"b"),
            (b"\xff\xff", b"\x00"),
            (b"", b"\x00"),
        ];
        for (p, want) in cases {
            assert_eq!(prefix_end(p), want.to_vec(), "{p:?}");
        }
    }

    #[test]
    fn sent_times_read_from_values() {
        let v = serde_json::to_vec(&objects::configmap("ns", "a", 3, 0)).unwrap();
        assert!(sent_time(&v).is_some());
        assert_eq!(sent_time(b"{}"), None);
    }
}
