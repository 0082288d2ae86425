//! In-process clients of the registry: first-start bootstrap, the namespace, flow-control and
//! authentication-trust controllers.
//! They read and write through `Registry` like any client (never raw storage); later
//! controllers (garbage collection, service accounts, ...) plug in here.

pub mod authtrust;
pub mod bootstrap;
pub mod flowcontrol;
pub mod namespace;

use crate::registry::Source;
use crate::repr::{Encoder, Format};
use crate::routes::Resource;
use crate::selection::{Filter, Selection};
use crate::state::State;
use keel_api::rv::WatchStart;

/// A watch of every object of `res` from now on, for a controller that uses only its wake-ups
/// (each pass reads what it needs again); `None` when the watch cannot be opened.
pub(crate) async fn watch_all(st: &State, res: &Resource) -> Option<(Source, Selection)> {
    let sel = Selection::new(
        Filter::everything(res.strategy),
        None,
        Encoder::new(Format::Json, res.info.clone()),
    );
    let from = st.registry.current_revision();
    let w = st
        .registry
        .watch(res, "", WatchStart::After(from), &sel)
        .await
        .ok()?;
    Some((w.source, sel))
}
