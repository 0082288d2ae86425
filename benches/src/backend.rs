//! What the harness needs from a store beyond the `Store` trait. Implemented for the real
//! `Engine` and, for self-testing the harness while the engine is unfinished, for the
//! in-memory `MemStore` (figures from it mean nothing: no disk, no syncs).

use keel_engine::{Engine, Error, MemStore, Options, Stats, Store};

pub trait Backend: Store + Sized + 'static {
    const NAME: &'static str;
    fn open(opts: Options) -> Result<Self, Error>;
    fn close(self) -> Result<(), Error>;
    /// Counters for the report (the model keeps none but its revision).
    fn counters(&self) -> Stats;
}

impl Backend for Engine {
    const NAME: &'static str = "engine";
    fn open(opts: Options) -> Result<Self, Error> {
        Engine::open(opts)
    }
    fn close(self) -> Result<(), Error> {
        Engine::close(self)
    }
    fn counters(&self) -> Stats {
        Engine::stats(self)
    }
}

impl Backend for MemStore {
    const NAME: &'static str = "model";
    fn open(opts: Options) -> Result<Self, Error> {
        Ok(MemStore::new(opts.limits))
    }
    fn close(self) -> Result<(), Error> {
        Ok(())
    }
    fn counters(&self) -> Stats {
        Stats {
            revision: self.current_revision(),
            ..Stats::default()
        }
    }
}
