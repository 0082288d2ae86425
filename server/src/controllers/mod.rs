//! In-process clients of the registry: first-start bootstrap and the namespace controller.
//! They read and write through `Registry` like any client (never raw storage); later
//! controllers (garbage collection, service accounts, ...) plug in here.

pub mod bootstrap;
pub mod flowcontrol;
pub mod namespace;
