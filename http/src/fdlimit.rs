//! The process's open-file limit, and the connection caps that fit under it.
//!
//! Every connection is a file descriptor. If the caps allowed more connections than the
//! process may open, `accept` would fail with `EMFILE` before any cap refused a connection:
//! the pending connections would wait in the kernel's queue instead of being closed, and the
//! store could fail to open a file. So [`crate::serve`] raises the soft limit to the hard
//! one (Go's runtime does the same at start since Go 1.19, so kube-apiserver runs with its
//! hard limit) and lowers the per-core caps to fit under it, less
//! [`OPEN_FILES_RESERVED`] for everything that is not a connection.

use crate::limits::OPEN_FILES_RESERVED;
use std::io;

/// Raises the soft open-file limit (`RLIMIT_NOFILE`) to the hard limit; returns the soft
/// limit now in force.
pub fn raise_open_files_limit() -> io::Result<u64> {
    let mut l = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes only into the struct it is given, which outlives the call.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut l) } != 0 {
        return Err(io::Error::last_os_error());
    }
    if l.rlim_cur < l.rlim_max {
        let raised = libc::rlimit {
            rlim_cur: l.rlim_max,
            rlim_max: l.rlim_max,
        };
        // SAFETY: setrlimit only reads the struct it is given, which outlives the call.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
            l = raised;
        }
        // Refused (a hard limit above the kernel's `nr_open`): the old soft limit stands.
    }
    Ok(l.rlim_cur)
}

/// Connections per core that fit under `open_files` descriptors shared by `cores` cores, with
/// [`OPEN_FILES_RESERVED`] kept back: `configured`, or less if the limit binds (at least one).
pub(crate) fn connections_per_core_cap(configured: usize, open_files: u64, cores: usize) -> usize {
    let usable = usize::try_from(open_files)
        .unwrap_or(usize::MAX)
        .saturating_sub(OPEN_FILES_RESERVED);
    configured.min(usable / cores.max(1)).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caps_fit_under_the_open_file_limit() {
        // (configured, open files, cores, cap)
        let cases: &[(usize, u64, usize, usize)] = &[
            (10_000, 1 << 20, 2, 10_000),
            (10_000, 20_000, 2, (20_000 - OPEN_FILES_RESERVED) / 2),
            (10_000, 20_000, 1, 10_000),
            (10_000, 1024, 2, 1),
            (10_000, u64::MAX, 4, 10_000),
            (5, 20_000, 0, 5),
        ];
        for &(configured, open_files, cores, cap) in cases {
            assert_eq!(
                connections_per_core_cap(configured, open_files, cores),
                cap,
                "{configured} configured, {open_files} files, {cores} cores"
            );
        }
        // Every core at its cap, plus the reserve, stays under the limit.
        let cap = connections_per_core_cap(10_000, 20_000, 2);
        assert!(2 * cap + OPEN_FILES_RESERVED <= 20_000);
    }

    #[test]
    fn raising_leaves_the_soft_limit_at_the_hard_one() {
        let soft = raise_open_files_limit().unwrap();
        let mut l = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: as in `raise_open_files_limit`.
        assert_eq!(unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut l) }, 0);
        assert_eq!(soft, l.rlim_cur);
        let nr_open: u64 = std::fs::read_to_string("/proc/sys/fs/nr_open")
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(u64::MAX);
        if l.rlim_max <= nr_open {
            assert_eq!(l.rlim_cur, l.rlim_max);
        }
    }
}
