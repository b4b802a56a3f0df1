//! Gives back to the system the pages glibc's allocator holds free.
//!
//! glibc keeps what a program frees on its arenas' free lists (one arena
//! per thread that allocates, up to eight per core) and returns pages to
//! the system only from the top of each heap. After a burst — a thousand
//! turns set up at once, then parked waiting for approvals — the process
//! stays as large as the burst made it, though most of that is free:
//! measured on the server, 25 KiB of RSS per parked approval, of which
//! ~10 KiB came back with one `malloc_trim(0)` (`docs/operations.md`,
//! "Where the memory goes"). `malloc_trim(0)` walks every arena and
//! returns each free page inside it (`madvise(MADV_DONTNEED)`); what is
//! in use is untouched.
//!
//! This crate is the workspace's one `unsafe` call. It lives here so the
//! crates that forbid unsafe code go on forbidding it, and it takes no
//! pointer: nothing the caller passes can make it unsound.

/// Asks glibc to return the free pages of every arena to the system;
/// `true` when it returned any. It locks each arena while it walks it, so
/// an allocating thread may wait a moment: call it off the hot path, once a
/// burst is over. Does nothing (and says `false`) where the C library is
/// not glibc: musl's and other allocators have no such call.
#[must_use = "says whether anything was returned"]
pub fn trim() -> bool {
    imp::trim()
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
mod imp {
    #[expect(unsafe_code, reason = "malloc_trim is a C function")]
    pub fn trim() -> bool {
        // SAFETY: `malloc_trim` takes a size, no pointer, and glibc
        // serialises it with every other call into the allocator (it holds
        // each arena's lock while it walks it).
        unsafe { libc::malloc_trim(0) == 1 }
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
mod imp {
    pub fn trim() -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    /// What a burst freed comes back: many small blocks, most of them
    /// freed while every 16th stays, leave free pages inside the heap that
    /// only a trim returns. glibc says whether it returned any.
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[test]
    fn a_burst_of_small_frees_is_returned() {
        let mut blocks: Vec<Vec<u8>> = (0..64 * 1024).map(|i| vec![i as u8; 512]).collect();
        let kept: Vec<Vec<u8>> = blocks.iter().step_by(16).cloned().collect();
        blocks.clear();
        blocks.shrink_to_fit();
        assert!(
            super::trim(),
            "glibc returned nothing after 30 MiB were freed"
        );
        // The kept blocks are intact.
        assert!(
            kept.iter()
                .enumerate()
                .all(|(i, b)| b.iter().all(|&x| x == (i * 16) as u8))
        );
    }
}
