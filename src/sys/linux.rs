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

pub(super) fn pin_to_cpus(cmd: &mut std::process::Command, cpus: &[usize]) {
    use std::os::unix::process::CommandExt as _;
    let set = cpu_set(cpus);
    // SAFETY: sched_setaffinity is async-signal-safe and touches nothing of the parent's;
    // the set is built before the fork. A failure (a CPU taken away since) leaves the
    // child on the parent's CPUs, which is what it would have had unpinned.
    unsafe {
        cmd.pre_exec(move || {
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
            Ok(())
        });
    }
}

fn cpu_set(cpus: &[usize]) -> libc::cpu_set_t {
    // SAFETY: cpu_set_t is plain old data (zeroed is the empty set); CPU_SET only writes
    // within it (a CPU past CPU_SETSIZE is ignored: `allowed_cpus` gives none).
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for &cpu in cpus.iter().filter(|&&c| c < libc::CPU_SETSIZE as usize) {
            libc::CPU_SET(cpu, &mut set);
        }
        set
    }
}

/// Move every thread of every process in the group `pgid` leads onto `cpus` (their
/// children inherit it). Twice over: a process forked by one not yet moved while `/proc`
/// was read is found the second time. A process gone meanwhile is skipped.
pub(super) fn move_group(pgid: u32, cpus: &[usize]) {
    let set = cpu_set(cpus);
    for _ in 0..2 {
        for pid in group_members(pgid) {
            let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
                continue;
            };
            for tid in tasks
                .flatten()
                .filter_map(|t| t.file_name().to_str()?.parse().ok())
            {
                // SAFETY: the set is valid for reads; a thread that is gone fails harmlessly.
                unsafe {
                    libc::sched_setaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &set);
                }
            }
        }
    }
}

/// The processes of the group `pgid`, from `/proc/<pid>/stat` (its fifth field, after the
/// command name in parentheses, which may itself hold spaces and parentheses).
pub(super) fn group_members(pgid: u32) -> Vec<libc::pid_t> {
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    procs
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<libc::pid_t>().ok())
        .filter(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
            after.split_whitespace().nth(2) == Some(&pgid.to_string())
        })
        .collect()
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
