//! What only Linux has: page-cache advice (`posix_fadvise`), `/proc`, and CPU affinity
//! (`sched_getaffinity`, `sched_setaffinity`).

use std::os::fd::AsRawFd as _;

pub(super) fn read_ahead(file: &std::fs::File) {
    // SAFETY: a valid open descriptor; POSIX_FADV_WILLNEED only advises the kernel.
    unsafe {
        libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_WILLNEED);
    }
}

pub(super) fn evict(file: &std::fs::File) -> std::io::Result<()> {
    let _ = file.sync_data();
    // SAFETY: a valid open descriptor; POSIX_FADV_DONTNEED only advises the kernel.
    let r = unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    match r {
        0 => Ok(()),
        e => Err(std::io::Error::from_raw_os_error(e)),
    }
}

/// The CPUs this process may run on (its affinity mask), in order; empty when it cannot
/// be read.
pub(super) fn allowed_cpus() -> Vec<usize> {
    // SAFETY: cpu_set_t is plain old data (zeroed is the empty set); sched_getaffinity
    // writes at most its size into it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return Vec::new();
        }
        (0..libc::CPU_SETSIZE as usize)
            .filter(|&c| libc::CPU_ISSET(c, &set))
            .collect()
    }
}

pub(super) fn pin_to_cpu(cmd: &mut std::process::Command, cpu: usize) {
    use std::os::unix::process::CommandExt as _;
    // SAFETY: sched_setaffinity is async-signal-safe and touches nothing of the parent's;
    // the set is built before the fork. A failure (a CPU taken away since) leaves the
    // child on the parent's CPUs, which is what it would have had unpinned.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        cmd.pre_exec(move || {
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
            Ok(())
        });
    }
}

pub(super) fn cpuinfo() -> Option<String> {
    std::fs::read_to_string("/proc/cpuinfo").ok()
}

pub(super) fn perf_event_paranoid() -> Option<i32> {
    std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// How many of `path`'s pages are in the page cache (`mmap` + `mincore`).
#[cfg(test)]
pub(super) fn resident_pages(path: &std::path::Path) -> usize {
    let f = std::fs::File::open(path).unwrap();
    let len = f.metadata().unwrap().len() as usize;
    let page = 4096;
    let mut vec = vec![0u8; len.div_ceil(page)];
    // SAFETY: a read-only shared mapping of an open file, unmapped below; mincore
    // writes one byte per page into `vec`, which has that many.
    unsafe {
        let addr = libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ,
            libc::MAP_SHARED,
            f.as_raw_fd(),
            0,
        );
        assert_ne!(addr, libc::MAP_FAILED);
        assert_eq!(libc::mincore(addr, len, vec.as_mut_ptr()), 0);
        libc::munmap(addr, len);
    }
    vec.iter().filter(|b| **b & 1 == 1).count()
}

#[cfg(test)]
pub(super) fn on_tmpfs(path: &std::path::Path) -> bool {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: statfs fills the struct for a valid C path.
    unsafe {
        let mut st: libc::statfs = std::mem::zeroed();
        libc::statfs(c.as_ptr(), &mut st) == 0 && st.f_type as i64 == 0x0102_1994
    }
}
