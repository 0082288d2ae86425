//! In-process clients of the registry: first-start bootstrap, the namespace, flow-control,
//! authentication-trust, cluster-IP allocator (`ipallocator`), volume protection, namespace
//! defaults (the `default` ServiceAccount, `kube-root-ca.crt`), garbage collection and node
//! graph (the `Node` authorization mode's) controllers; `enabled` parses `--controllers`,
//! which turns off the ones upstream runs in kube-controller-manager.
//! They read and write through `Registry` like any client (never raw storage); later
//! controllers plug in here.

pub mod apiservices;
pub mod authtrust;
pub mod bootstrap;
pub mod crd;
pub mod enabled;
pub mod flowcontrol;
pub mod garbagecollector;
pub mod ipallocator;
pub mod namespace;
pub mod namespacedefaults;
pub mod nodegraph;
pub mod rbac;
pub mod servicecidrs;
pub mod volumeprotection;

use crate::registry::{Source, Step};
use crate::repr::{Encoder, Format};
use crate::routes::Resource;
use crate::selection::{Filter, Selection};
use crate::state::State;
use keel_api::rv::WatchStart;

/// A watch of every object of `res` from now on, for a controller that uses only its wake-ups
/// (each pass reads what it needs again); `None` when the watch cannot be opened.
pub(crate) async fn watch_all(st: &State, res: &Resource) -> Option<(Source, Selection)> {
    watch_all_after(st, res, st.registry.current_revision()).await
}

/// A watch of every object of `res` changed after revision `from`.
pub(crate) async fn watch_all_after(
    st: &State,
    res: &Resource,
    from: keel_engine::Revision,
) -> Option<(Source, Selection)> {
    let sel = Selection::new(
        Filter::everything(res.strategy),
        None,
        Encoder::new(Format::Json, res.info.clone()),
    );
    let w = st
        .registry
        .watch(res, "", WatchStart::After(from), &sel)
        .await
        .ok()?;
    Some((w.source, sel))
}

/// Runs a controller on a thread of its own (named `name`) with a single-threaded runtime;
/// the watch feeds' tasks run on its local set.
pub(crate) fn spawn_thread<F>(
    name: &str,
    run: impl FnOnce() -> F + Send + 'static,
) -> std::thread::JoinHandle<()>
where
    F: std::future::Future<Output = ()> + 'static,
{
    std::thread::Builder::new()
        .name(name.into())
        .spawn(move || {
            // IO too: a controller's registry calls may reach a conversion webhook.
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("controller runtime");
            let local = tokio::task::LocalSet::new();
            local.block_on(&rt, run());
        })
        .unwrap_or_else(|e| panic!("spawn {name}: {e}"))
}

/// Waits until one of `watches` sees a change, or `resync` has passed; true when a watch
/// ended or could not be opened (the caller opens them again).
pub(crate) async fn wait_for_change(
    watches: &mut [Option<(Source, Selection)>],
    resync: std::time::Duration,
) -> bool {
    let wait = std::future::poll_fn(|cx| {
        for (source, sel) in watches.iter_mut().flatten() {
            match source.poll(cx, sel, 1) {
                Step::Pending(_) => {}
                step => return std::task::Poll::Ready(step),
            }
        }
        std::task::Poll::Pending
    });
    match tokio::time::timeout(resync, wait).await {
        Ok(Step::Ended(_)) => true,
        Ok(_) => false,
        Err(_) => watches.iter().any(Option::is_none),
    }
}

/// A controller's update answered: gone (404) or changed meanwhile (409) are fine, the next
/// pass looks again.
pub(crate) fn gone_ok(
    r: Result<crate::registry::Updated, keel_api::status::ApiError>,
) -> Result<(), keel_api::status::ApiError> {
    match r {
        Ok(_) => Ok(()),
        Err(e) if e.code == 404 || e.code == 409 => Ok(()),
        Err(e) => Err(e),
    }
}

/// Puts `finalizer` on the object (`on`) or takes it off, through the registry's
/// read-modify-write loop (the type's strategy applies).
pub(crate) async fn set_finalizer(
    st: &State,
    res: &Resource,
    ns: &str,
    name: &str,
    finalizer: &str,
    on: bool,
) -> Result<(), keel_api::status::ApiError> {
    let opts = crate::registry::UpdateOptions {
        strategy: true,
        ..Default::default()
    };
    let r = st
        .registry
        .guaranteed_update(res, ns, name, &opts, &mut |cur| {
            let mut new = cur.cloned().ok_or_else(|| res.not_found(name))?;
            crate::objects::meta_mut(&mut new).shift_remove("resourceVersion");
            let mut list = crate::objects::finalizers(&new);
            list.retain(|f| f != finalizer);
            if on {
                list.push(finalizer.to_string());
            }
            let m = crate::objects::meta_mut(&mut new);
            if list.is_empty() {
                m.shift_remove("finalizers");
            } else {
                m.insert("finalizers".into(), serde_json::json!(list));
            }
            Ok(new)
        })
        .await;
    gone_ok(r)
}
