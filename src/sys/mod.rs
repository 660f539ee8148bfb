//! The platform layer: every call that differs between operating systems is made here,
//! and nowhere else in `src/` (`layers::only_sys_touches_the_os` checks that no other file
//! names `std::os::{unix,windows,fd}` or `libc`).
//!
//! The API below is the same on every platform. `unix.rs` (Linux and macOS) and
//! `windows.rs` implement it; `linux.rs` adds what only Linux has (the page cache advice
//! of `posix_fadvise`, `/proc`). Where a platform has no equivalent yet the answer says so
//! (`None`, an `Unsupported` error, `false`) instead of failing to compile or panicking;
//! the callers turn it into a skipped row or a doctor line.
//!
//! What each part can do:
//! - a child in its own process tree ([`Tree`]): Unix: a process group, killed with one
//!   signal, its pipes drained with `poll`, its end learnt by `waitid(WNOWAIT)` and reaped
//!   by `wait4` (rusage). Windows: a job object (killed with `TerminateJobObject`), pipes
//!   read by a thread each, the end learnt by `WaitForSingleObject`, times from the job's
//!   accounting and peak memory from the process' peak working set;
//! - page-cache priming and eviction: Linux only (`posix_fadvise`); elsewhere priming
//!   reads the file and eviction is `Unsupported`;
//! - interruption (`interrupt`): every child group registered while it lives, killed on
//!   Ctrl-C, SIGTERM or SIGHUP (then exit 128 + the signal), on an error exit, or as one
//!   set (`Cancel`: the builds run ahead);
//! - file modes and owners, symlinks, named pipes and the kind of a special file, files
//!   opened or created never through a link and never waiting on a pipe (`open_regular`,
//!   `create_new`), errno names, whether a pid is alive, whether we run as root, the CPU
//!   time of this process and its children, `/proc` facts.

pub(crate) mod confine;
pub(crate) mod interrupt;
#[cfg(target_os = "linux")]
mod linux;
#[cfg(unix)]
mod unix;
#[cfg(windows)]
mod windows;

#[cfg(unix)]
use unix as imp;
#[cfg(windows)]
use windows as imp;

use std::path::Path;
use std::time::Duration;

pub(crate) use imp::Tree;

/// What a reaped child used.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct ResourceUsage {
    /// User and system CPU time of the child and its waited-for descendants (Unix), or of
    /// every process of its job (Windows).
    pub user: Duration,
    pub sys: Duration,
    /// Peak resident set size (Unix `ru_maxrss`; Windows: the peak working set).
    pub max_rss_bytes: u64,
}

/// The signal that ended a process (`None` when it exited, and always on Windows).
pub(crate) fn exit_signal(status: &std::process::ExitStatus) -> Option<i32> {
    imp::exit_signal(status)
}

/// The name of a signal, for messages.
pub(crate) fn signal_name(signal: i32) -> Option<&'static str> {
    imp::signal_name(signal)
}

/// The symbolic name of an OS error (`"E2BIG"`, `"ETXTBSY"`, `"ENOENT"` …), for the few
/// places that tell errors apart by their errno. `None` when it is none of the names this
/// layer knows, and on Windows. (Off Linux only tests ask yet: perf is Linux-only.)
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
pub(crate) fn errno_name(error: &std::io::Error) -> Option<&'static str> {
    imp::errno_name(error.raw_os_error()?)
}

/// Whether spawning failed because the arguments and environment were too large.
pub(crate) fn arg_list_too_long(error: &std::io::Error) -> bool {
    imp::arg_list_too_long(error)
}

/// Whether a process with this id exists (a zombie counts; one we may not signal too).
pub(crate) fn pid_alive(pid: u32) -> bool {
    imp::pid_alive(pid)
}

/// Whether this process runs as root (never on Windows: elevation is not asked).
pub(crate) fn is_root() -> bool {
    imp::is_root()
}

/// User + system CPU seconds of this process and of every child it waited for so far
/// (Windows: this process only).
pub(crate) fn cpu_seconds() -> f64 {
    imp::cpu_seconds()
}

/// Whether a [`Tree`]'s `max_rss_bytes` covers the descendants it waited for (a build's
/// largest rustc): `wait4`'s rusage on Unix does; Windows' peak working set is the child's
/// own.
pub(crate) const PEAK_COVERS_CHILDREN: bool = cfg!(unix);

/// Start `cmd`'s process (and so everything it starts) at a low CPU priority, `nice` (19:
/// the lowest): a build started ahead of need then runs on cycles nothing else wants
/// (`nice` on Unix, below normal priority class on Windows whatever `nice`, which child
/// processes inherit).
pub(crate) fn lower_priority(cmd: &mut std::process::Command, nice: i32) {
    imp::lower_priority(cmd, nice)
}

/// The CPUs this process may run on, in order (Linux: its affinity mask, which `taskset`
/// or a cgroup's cpuset narrows); empty where the OS has no per-process affinity this code
/// sets (macOS has none; Windows is not implemented), and then nothing is pinned.
pub(crate) fn allowed_cpus() -> Vec<usize> {
    #[cfg(target_os = "linux")]
    return linux::allowed_cpus();
    #[cfg(not(target_os = "linux"))]
    Vec::new()
}

/// Run `cmd`'s process (and whatever it starts) on `cpu` alone: one of [`allowed_cpus`].
pub(crate) fn pin_to_cpu(cmd: &mut std::process::Command, cpu: usize) {
    #[cfg(target_os = "linux")]
    linux::pin_to_cpus(cmd, &[cpu]);
    #[cfg(not(target_os = "linux"))]
    let _ = (cmd, cpu);
}

/// What a file's metadata says besides its size and modification time that any change of
/// its content moves: its device, inode and status-change time (seconds, nanoseconds),
/// which every write sets to now and no user can set back (Unix); zeros elsewhere.
pub(crate) fn change_stamp(meta: &std::fs::Metadata) -> [i64; 4] {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        [
            meta.dev() as i64,
            meta.ino() as i64,
            meta.ctime(),
            meta.ctime_nsec(),
        ]
    }
    #[cfg(not(unix))]
    {
        let _ = meta;
        [0; 4]
    }
}

/// Ask the OS to read a file's pages ahead (best effort; nothing where it cannot).
pub(crate) fn read_ahead(file: &std::fs::File) {
    #[cfg(target_os = "linux")]
    linux::read_ahead(file);
    #[cfg(not(target_os = "linux"))]
    let _ = file;
}

/// Drop an open file's pages from the page cache (written back first). `Unsupported`
/// where the OS has no such advice (every OS but Linux, for now).
pub(crate) fn evict(file: &std::fs::File) -> std::io::Result<()> {
    #[cfg(target_os = "linux")]
    return linux::evict(file);
    #[cfg(not(target_os = "linux"))]
    {
        let _ = file;
        Err(std::io::Error::new(
            std::io::ErrorKind::Unsupported,
            "dropping a file from the page cache is implemented on Linux only",
        ))
    }
}

/// The text of `/proc/cpuinfo` (`None` where there is none: macOS, Windows).
pub(crate) fn cpuinfo() -> Option<String> {
    #[cfg(target_os = "linux")]
    return linux::cpuinfo();
    #[cfg(not(target_os = "linux"))]
    None
}

/// The CPU's marketing name where the OS gives it outside `/proc/cpuinfo` (macOS: `sysctl
/// machdep.cpu.brand_string`, "Apple M2 Pro"); `None` elsewhere.
pub(crate) fn cpu_brand() -> Option<String> {
    #[cfg(target_os = "macos")]
    return unix::sysctl_string("machdep.cpu.brand_string");
    #[cfg(not(target_os = "macos"))]
    None
}

/// Whether dropping a file from the page cache works here (a cold start: `evict`).
pub(crate) fn can_evict() -> bool {
    cfg!(target_os = "linux")
}

/// The kernel's release (`uname -r`; empty when unknown).
pub(crate) fn kernel_release() -> String {
    imp::kernel_release()
}

/// `/proc/sys/kernel/perf_event_paranoid` (`None` when the kernel has no perf events, and
/// off Linux).
pub(crate) fn perf_event_paranoid() -> Option<i32> {
    #[cfg(target_os = "linux")]
    return linux::perf_event_paranoid();
    #[cfg(not(target_os = "linux"))]
    None
}

/// Make `link` a symbolic link to `target` (relative targets are read from `link`'s folder).
/// Windows: a directory link when `target` is a folder, else a file link (both need the
/// privilege to create symlinks, or developer mode).
pub(crate) fn symlink(target: impl AsRef<Path>, link: impl AsRef<Path>) -> std::io::Result<()> {
    imp::symlink(target.as_ref(), link.as_ref())
}

/// Set a file's permission bits. Windows: only the write bits count (read-only or not).
pub(crate) fn set_mode(path: impl AsRef<Path>, mode: u32) -> std::io::Result<()> {
    imp::set_mode(path.as_ref(), mode)
}

/// A file's permission bits (`0o755` …). Windows: `0o444` for a read-only file, else
/// `0o644`.
pub(crate) fn mode(meta: &std::fs::Metadata) -> u32 {
    imp::mode(meta)
}

/// What identifies a file whatever it is called (device and inode): two paths with the
/// same identity are one file (another spelling, a symlink, a hard link). `None` where the
/// platform does not say (Windows).
pub(crate) fn file_id(meta: &std::fs::Metadata) -> Option<(u64, u64)> {
    imp::file_id(meta)
}

/// The user id that owns a file (`None` on Windows).
pub(crate) fn owner(meta: &std::fs::Metadata) -> Option<u32> {
    imp::owner(meta)
}

/// This process's effective user id (`None` on Windows).
pub(crate) fn current_uid() -> Option<u32> {
    imp::current_uid()
}

/// Create the folder `dir` (its parent must exist) readable and writable by this user only
/// (Unix: mode 0700).
pub(crate) fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    imp::create_private_dir(dir)
}

/// Whether a file can be run (Unix: any execute bit; Windows: it is a file).
pub(crate) fn is_executable(meta: &std::fs::Metadata) -> bool {
    meta.is_file() && imp::is_executable(meta)
}

/// Give `file` the owner and group of `like` when this process may (root writing a user's
/// file); an owner it may not set is left as is. Nothing on Windows.
pub(crate) fn copy_owner(file: &std::fs::File, like: &std::fs::Metadata) {
    imp::copy_owner(file, like)
}

/// Open an existing device or named pipe for writing as a stream (never created or
/// truncated). `Ok(None)` for a named pipe no process is reading: the open does not wait
/// for a reader (Unix `O_NONBLOCK`, then blocking writes again).
pub(crate) fn open_stream(target: &Path) -> std::io::Result<Option<std::fs::File>> {
    imp::open_stream(target)
}

/// Open (or create) a lock file to write, never truncated, never through a symlink: a link
/// at `path` is an error (Unix `O_NOFOLLOW`: `ELOOP`; Windows: the link itself is opened, not
/// its target), so a lock cannot be made to write into another file.
pub(crate) fn open_lock(path: &Path) -> std::io::Result<std::fs::File> {
    imp::open_lock(path)
}

/// What an entry that is neither a regular file, a folder nor a symlink is, from its type
/// (`symlink_metadata`'s: never followed): a named pipe, a socket, a device; `None` for
/// the three ordinary kinds. A tree's copy never opens one (an open of a named pipe waits
/// for a writer; of a device, reads it).
pub(crate) fn special_kind(kind: &std::fs::FileType) -> Option<Special> {
    if imp::is_fifo(kind) {
        Some(Special::Fifo)
    } else if imp::is_socket(kind) {
        Some(Special::Socket)
    } else if imp::is_char_device(kind) || imp::is_block_device(kind) {
        Some(Special::Device)
    } else if kind.is_file() || kind.is_dir() || kind.is_symlink() {
        None
    } else {
        Some(Special::Device)
    }
}

/// A special file's kind ([`special_kind`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Special {
    Fifo,
    Socket,
    Device,
}

impl Special {
    /// Its name in messages.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Special::Fifo => "named pipe",
            Special::Socket => "socket",
            Special::Device => "device",
        }
    }
}

/// Open a *regular* file to read, race-free: opened without waiting (Unix `O_NONBLOCK`: a
/// named pipe swapped in since its type was looked at is not waited on), through no
/// symlink unless `follow` (Unix `O_NOFOLLOW`: a link at `path` is an error; Windows: one
/// is refused), then checked on the open descriptor (`fstat`) to be a regular file: a
/// named pipe, socket, device or folder is the error `InvalidInput`, never read.
pub(crate) fn open_regular(path: &Path, follow: bool) -> std::io::Result<std::fs::File> {
    let file = imp::open_to_read(path, follow)?;
    if !file.metadata()?.is_file() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "it is not a regular file (a named pipe, socket, device or folder)",
        ));
    }
    Ok(file)
}

/// Create the file `path` to write, new: an existing file or symlink there (even one
/// leading nowhere) is `AlreadyExists`, never opened or followed (Unix `O_CREAT|O_EXCL|
/// O_NOFOLLOW` with the permission bits `mode`, less the umask; Windows: `CREATE_NEW` on
/// the link itself, `mode` unused).
pub(crate) fn create_new(path: &Path, mode: u32) -> std::io::Result<std::fs::File> {
    imp::create_new(path, mode)
}

/// Make a named pipe at `path` with the permission bits `mode` (less the umask), without
/// opening it (Unix `mkfifo`); `Unsupported` on Windows.
pub(crate) fn mkfifo(path: &Path, mode: u32) -> std::io::Result<()> {
    imp::mkfifo(path, mode)
}

/// The variable through which the dynamic loader loads a shared library into a program
/// before its own (and so interposes `malloc` and `free`): glibc's and musl's `LD_PRELOAD`
/// on Linux. `None` elsewhere (macOS' `DYLD_INSERT_LIBRARIES` does not interpose a
/// two-level namespace's `malloc`; Windows has none).
pub(crate) const PRELOAD_VAR: Option<&str> = match cfg!(target_os = "linux") {
    true => Some("LD_PRELOAD"),
    false => None,
};

/// Helpers for unit tests that need the OS: named pipes, the page cache.
#[cfg(test)]
pub(crate) mod testing {
    /// The signal number of SIGKILL (the same on every Unix; Windows has no signals).
    pub(crate) const SIGKILL: i32 = 9;

    pub(crate) use super::mode;

    /// Whether a file type is a named pipe (FIFO).
    pub(crate) fn is_fifo(kind: &std::fs::FileType) -> bool {
        super::imp::is_fifo(kind)
    }

    /// Whether a file type is a character device (`/dev/null`).
    pub(crate) fn is_char_device(kind: &std::fs::FileType) -> bool {
        super::imp::is_char_device(kind)
    }

    /// A Unix socket bound at `path` (the file stays while the guard lives); Windows: none.
    #[cfg(unix)]
    pub(crate) fn socket(path: &std::path::Path) -> std::io::Result<impl Drop> {
        std::os::unix::net::UnixListener::bind(path).map(|l| Guard(Some(l)))
    }

    /// Something kept until it drops.
    #[cfg(unix)]
    pub(crate) struct Guard<T>(Option<T>);

    #[cfg(unix)]
    impl<T> Drop for Guard<T> {
        fn drop(&mut self) {
            self.0.take();
        }
    }

    /// Make a named pipe (Unix); `Unsupported` on Windows.
    pub(crate) fn mkfifo(path: &std::path::Path) -> std::io::Result<()> {
        super::imp::mkfifo(path, 0o600)
    }

    /// How many of a file's pages are in the page cache.
    #[cfg(target_os = "linux")]
    pub(crate) fn resident_pages(path: &std::path::Path) -> usize {
        super::linux::resident_pages(path)
    }

    /// Whether a path is on tmpfs (whose pages are the file itself).
    #[cfg(target_os = "linux")]
    pub(crate) fn on_tmpfs(path: &std::path::Path) -> bool {
        super::linux::on_tmpfs(path)
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    /// `pid_alive` replaced a `/proc/<pid>` test (package) and `kill(pid, 0)` (check): our
    /// own pid is alive, a reaped child's is not, and one we may not signal (pid 1, when not
    /// root) still counts as alive.
    #[test]
    fn pids_are_alive_until_reaped() {
        assert!(pid_alive(std::process::id()));
        assert!(pid_alive(1), "init exists, signalable or not");
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        assert!(!pid_alive(pid), "a reaped child's pid is free");
        assert!(!pid_alive(u32::MAX), "no such pid");
    }

    /// A process started with `lower_priority` (and what it starts) runs at its nice.
    #[cfg(unix)]
    #[test]
    fn a_background_process_runs_at_the_lowest_priority() {
        let mut cmd = std::process::Command::new("sh");
        cmd.args(["-c", "nice"]);
        lower_priority(&mut cmd, 19);
        let out = cmd.output().unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "19");
        let plain = std::process::Command::new("nice").output().unwrap();
        assert_ne!(String::from_utf8_lossy(&plain.stdout).trim(), "19");
    }

    #[test]
    fn errno_names_and_the_argument_limit() {
        let e = std::io::Error::from_raw_os_error(libc::ETXTBSY);
        assert_eq!(errno_name(&e), Some("ETXTBSY"));
        assert_eq!(errno_name(&std::io::Error::other("x")), None);
        assert!(arg_list_too_long(&std::io::Error::from_raw_os_error(
            libc::E2BIG
        )));
        assert!(!arg_list_too_long(&e));
    }

    /// `kernel_release` (uname) is what the machine fingerprint read from /proc before.
    #[cfg(target_os = "linux")]
    #[test]
    fn the_kernel_release_is_procs() {
        let proc = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
        assert_eq!(kernel_release(), proc.trim());
    }

    #[test]
    fn a_named_pipe_without_a_reader_is_answered_at_once_and_modes_are_set() {
        let d = tempfile::tempdir().unwrap();
        let fifo = d.path().join("p");
        testing::mkfifo(&fifo).unwrap();
        assert!(open_stream(&fifo).unwrap().is_none());
        let f = d.path().join("f");
        std::fs::write(&f, "x").unwrap();
        set_mode(&f, 0o640).unwrap();
        let meta = std::fs::metadata(&f).unwrap();
        assert_eq!(testing::mode(&meta) & 0o777, 0o640);
        assert!(!is_executable(&meta));
        set_mode(&f, 0o750).unwrap();
        assert!(is_executable(&std::fs::metadata(&f).unwrap()));
        symlink("f", d.path().join("l")).unwrap();
        assert_eq!(std::fs::read_to_string(d.path().join("l")).unwrap(), "x");
    }
}
