//! The platform layer on Windows: a child's process tree is a job object; its pipes are
//! read by a thread each (Windows cannot `poll` anonymous pipes).
//!
//! Compiled and linted for `x86_64-pc-windows-msvc`, never run yet.

use std::io::Read as _;
use std::os::windows::io::{AsHandle as _, AsRawHandle as _, FromRawHandle as _, OwnedHandle};
use std::path::Path;
use std::process::{Child, Command, ExitStatus};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use windows_sys::Win32::Foundation::{FILETIME, HANDLE, STILL_ACTIVE};
use windows_sys::Win32::System::JobObjects::{
    AssignProcessToJobObject, CreateJobObjectW, JobObjectBasicAccountingInformation,
    QueryInformationJobObject, TerminateJobObject, JOBOBJECT_BASIC_ACCOUNTING_INFORMATION,
};
use windows_sys::Win32::System::ProcessStatus::{K32GetProcessMemoryInfo, PROCESS_MEMORY_COUNTERS};
use windows_sys::Win32::System::Threading::{
    GetCurrentProcess, GetExitCodeProcess, GetProcessTimes, OpenProcess, WaitForSingleObject,
    INFINITE, PROCESS_QUERY_LIMITED_INFORMATION,
};

use super::ResourceUsage;

enum Msg {
    Data(usize, Vec<u8>),
    Eof(usize),
    Exit(Instant, std::io::Result<()>),
}

/// A child in a job object of its own; its pipes read by threads into one channel.
pub(crate) struct Tree {
    child: Child,
    /// `None` when the job could not be made or joined: then only the child is killed, not
    /// what it started (a grandchild holding the pipes is then given up on after the grace).
    job: Option<OwnedHandle>,
    tx: mpsc::Sender<Msg>,
    rx: mpsc::Receiver<Msg>,
    open: [bool; 2],
    exit_seen: bool,
}

impl Tree {
    /// Spawn `cmd` (its stdout and stderr set to piped by the caller) and put it in a new
    /// job object, which the processes it starts join too. What the child starts before it
    /// is assigned (a few microseconds) escapes the job.
    pub(crate) fn spawn(cmd: &mut Command) -> std::io::Result<Tree> {
        // Registered as on Unix (nothing is refused after a signal there either); the kill
        // itself is the job object's.
        let mut child = super::interrupt::spawn_group(cmd)?;
        let job = new_job(&child);
        let (tx, rx) = mpsc::channel();
        let mut open = [false; 2];
        let out = child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn std::io::Read + Send>);
        let err = child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn std::io::Read + Send>);
        for (stream, pipe) in [out, err].into_iter().enumerate() {
            let Some(mut pipe) = pipe else { continue };
            open[stream] = true;
            let tx = tx.clone();
            // A holder that escaped the job keeps this thread in `read` until it exits;
            // the thread then ends (its sends fail once the Tree is gone).
            std::thread::spawn(move || {
                let mut chunk = vec![0u8; 64 * 1024];
                loop {
                    match pipe.read(&mut chunk) {
                        Ok(n) if n > 0 => {
                            if tx.send(Msg::Data(stream, chunk[..n].to_vec())).is_err() {
                                return;
                            }
                        }
                        Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                        _ => {
                            let _ = tx.send(Msg::Eof(stream));
                            return;
                        }
                    }
                }
            });
        }
        Ok(Tree {
            child,
            job,
            tx,
            rx,
            open,
            exit_seen: false,
        })
    }

    /// Start learning of the child's exit (a thread waits on a copy of its handle).
    pub(crate) fn watch(&mut self) -> std::io::Result<()> {
        let handle = self.child.as_handle().try_clone_to_owned()?;
        let tx = self.tx.clone();
        std::thread::spawn(move || {
            // SAFETY: a valid process handle this thread owns.
            let r = unsafe { WaitForSingleObject(handle.as_raw_handle() as HANDLE, INFINITE) };
            let at = Instant::now();
            let r = match r {
                0 => Ok(()),
                _ => Err(std::io::Error::last_os_error()),
            };
            let _ = tx.send(Msg::Exit(at, r));
        });
        Ok(())
    }

    /// The child's process id.
    pub(crate) fn id(&self) -> u32 {
        self.child.id()
    }

    pub(crate) fn pipes_open(&self) -> bool {
        self.open.iter().any(|o| *o)
    }

    /// Wait until output comes, the child exits, or `until`; hand what came to `sink`.
    /// Returns when the child exited, the first time it is seen.
    pub(crate) fn pump(
        &mut self,
        until: Option<Instant>,
        sink: &mut dyn FnMut(usize, &[u8]),
    ) -> std::io::Result<Option<Instant>> {
        let first = match until {
            Some(t) => self
                .rx
                .recv_timeout(t.saturating_duration_since(Instant::now()))
                .ok(),
            None => self.rx.recv().ok(),
        };
        let mut exited = None;
        for msg in first
            .into_iter()
            .chain(std::iter::from_fn(|| self.rx.try_recv().ok()))
        {
            match msg {
                Msg::Data(stream, bytes) => sink(stream, &bytes),
                Msg::Eof(stream) => self.open[stream] = false,
                Msg::Exit(at, r) => {
                    r?;
                    self.exit_seen = true;
                    exited = Some(at);
                }
            }
        }
        Ok(exited)
    }

    /// Kill every process of the job (without a job: the child alone).
    pub(crate) fn kill(&self) {
        match &self.job {
            // SAFETY: a valid job handle we own.
            Some(job) => unsafe {
                TerminateJobObject(job.as_raw_handle() as HANDLE, 1);
            },
            None => {
                // SAFETY: terminating our own child through its handle; failure (already
                // gone) is harmless.
                unsafe {
                    windows_sys::Win32::System::Threading::TerminateProcess(
                        self.child.as_raw_handle() as HANDLE,
                        1,
                    );
                }
            }
        }
    }

    /// After the child exited: its status and usage, and the last of its output.
    pub(crate) fn finish(
        mut self,
        sink: &mut dyn FnMut(usize, &[u8]),
    ) -> std::io::Result<(ExitStatus, ResourceUsage)> {
        let status = self.child.wait()?;
        super::interrupt::release(self.child.id());
        let usage = usage(&self.child, self.job.as_ref());
        while let Ok(msg) = self.rx.try_recv() {
            if let Msg::Data(stream, bytes) = msg {
                sink(stream, &bytes);
            }
        }
        Ok((status, usage))
    }

    /// After an error: kill the tree and reap the child.
    pub(crate) fn abort(mut self) {
        self.kill();
        let _ = self.child.wait();
        super::interrupt::release(self.child.id());
    }
}

fn new_job(child: &Child) -> Option<OwnedHandle> {
    // SAFETY: no attributes, no name: a new anonymous job object.
    let job = unsafe { CreateJobObjectW(std::ptr::null(), std::ptr::null()) };
    if job.is_null() {
        return None;
    }
    // SAFETY: a fresh handle nothing else owns.
    let job = unsafe { OwnedHandle::from_raw_handle(job as _) };
    // SAFETY: valid job and process handles.
    let ok = unsafe {
        AssignProcessToJobObject(
            job.as_raw_handle() as HANDLE,
            child.as_raw_handle() as HANDLE,
        )
    };
    (ok != 0).then_some(job)
}

/// CPU times of the whole job (else of the child), and the child's peak working set.
fn usage(child: &Child, job: Option<&OwnedHandle>) -> ResourceUsage {
    let process = child.as_raw_handle() as HANDLE;
    let mut usage = ResourceUsage::default();
    // SAFETY: plain old data, filled by the calls below for valid handles.
    unsafe {
        let mut acct: JOBOBJECT_BASIC_ACCOUNTING_INFORMATION = std::mem::zeroed();
        let by_job = job.is_some_and(|job| {
            QueryInformationJobObject(
                job.as_raw_handle() as HANDLE,
                JobObjectBasicAccountingInformation,
                (&mut acct as *mut JOBOBJECT_BASIC_ACCOUNTING_INFORMATION).cast(),
                std::mem::size_of::<JOBOBJECT_BASIC_ACCOUNTING_INFORMATION>() as u32,
                std::ptr::null_mut(),
            ) != 0
        });
        if by_job {
            usage.user = hundred_ns(acct.TotalUserTime.max(0) as u64);
            usage.sys = hundred_ns(acct.TotalKernelTime.max(0) as u64);
        } else if let Some((user, sys)) = process_times(process) {
            (usage.user, usage.sys) = (user, sys);
        }
        let mut mem: PROCESS_MEMORY_COUNTERS = std::mem::zeroed();
        mem.cb = std::mem::size_of::<PROCESS_MEMORY_COUNTERS>() as u32;
        if K32GetProcessMemoryInfo(process, &mut mem, mem.cb) != 0 {
            usage.max_rss_bytes = mem.PeakWorkingSetSize as u64;
        }
    }
    usage
}

/// User and kernel time of one process.
fn process_times(process: HANDLE) -> Option<(Duration, Duration)> {
    let mut t = [FILETIME::default(); 4];
    let [created, exited, kernel, user] = &mut t;
    // SAFETY: a valid process handle and four writable FILETIMEs.
    let ok = unsafe { GetProcessTimes(process, created, exited, kernel, user) };
    let ft = |f: &FILETIME| hundred_ns(((f.dwHighDateTime as u64) << 32) | f.dwLowDateTime as u64);
    (ok != 0).then(|| (ft(&t[3]), ft(&t[2])))
}

fn hundred_ns(n: u64) -> Duration {
    Duration::from_nanos(n.saturating_mul(100))
}

pub(super) fn exit_signal(_status: &ExitStatus) -> Option<i32> {
    None
}

pub(super) fn signal_name(_signal: i32) -> Option<&'static str> {
    None
}

pub(super) fn errno_name(_code: i32) -> Option<&'static str> {
    None
}

pub(super) fn arg_list_too_long(error: &std::io::Error) -> bool {
    // CreateProcess refuses a command line over 32 767 characters with this code.
    error.raw_os_error() == Some(windows_sys::Win32::Foundation::ERROR_FILENAME_EXCED_RANGE as i32)
}

pub(super) fn pid_alive(pid: u32) -> bool {
    // SAFETY: OpenProcess returns null or a handle we own and close below.
    unsafe {
        let h = OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION, 0, pid);
        if h.is_null() {
            // Access denied means it exists.
            return std::io::Error::last_os_error().kind() == std::io::ErrorKind::PermissionDenied;
        }
        let h = OwnedHandle::from_raw_handle(h as _);
        let mut code = 0u32;
        GetExitCodeProcess(h.as_raw_handle() as HANDLE, &mut code) != 0
            && code == STILL_ACTIVE as u32
    }
}

pub(super) fn is_root() -> bool {
    false
}

/// Windows has no process groups to signal: a child started by
/// `interrupt::spawn_group` is a plain child (a `Tree` is a job object instead).
pub(super) fn own_group(_cmd: &mut std::process::Command) {}

/// Nothing to signal on Windows (see [`own_group`]).
pub(super) fn kill_group(_pid: u32) {}

/// Nothing to signal on Windows: `interrupt::Cancel::pause` says it cannot pause.
pub(super) fn pause_group(_pid: u32, _run: bool) {}

pub(super) fn lower_priority(cmd: &mut std::process::Command, _nice: i32) {
    use std::os::windows::process::CommandExt as _;
    cmd.creation_flags(windows_sys::Win32::System::Threading::BELOW_NORMAL_PRIORITY_CLASS);
}

pub(super) fn cpu_seconds() -> f64 {
    // SAFETY: GetCurrentProcess returns a pseudo handle that needs no closing.
    let me = unsafe { GetCurrentProcess() };
    process_times(me).map_or(0.0, |(u, s)| (u + s).as_secs_f64())
}

pub(super) fn kernel_release() -> String {
    String::new()
}

pub(super) fn symlink(target: &Path, link: &Path) -> std::io::Result<()> {
    let dir = link.parent().unwrap_or(Path::new("."));
    if dir.join(target).is_dir() {
        std::os::windows::fs::symlink_dir(target, link)
    } else {
        std::os::windows::fs::symlink_file(target, link)
    }
}

pub(super) fn mode(meta: &std::fs::Metadata) -> u32 {
    if meta.permissions().readonly() {
        0o444
    } else {
        0o644
    }
}

// std's volume serial number and file index are unstable on Windows: no file identity.
pub(super) fn file_id(_meta: &std::fs::Metadata) -> Option<(u64, u64)> {
    None
}

pub(super) fn owner(_meta: &std::fs::Metadata) -> Option<u32> {
    None
}

pub(super) fn current_uid() -> Option<u32> {
    None
}

// A new folder is private to its creator by the default ACL of a user's profile folders.
pub(super) fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir(dir)
}

pub(super) fn set_mode(path: &Path, mode: u32) -> std::io::Result<()> {
    let mut p = std::fs::metadata(path)?.permissions();
    p.set_readonly(mode & 0o222 == 0);
    std::fs::set_permissions(path, p)
}

pub(super) fn is_executable(_meta: &std::fs::Metadata) -> bool {
    true
}

pub(super) fn copy_owner(_file: &std::fs::File, _like: &std::fs::Metadata) {}

pub(super) fn is_fifo(_kind: &std::fs::FileType) -> bool {
    false
}

pub(super) fn is_socket(_kind: &std::fs::FileType) -> bool {
    false
}

pub(super) fn is_char_device(_kind: &std::fs::FileType) -> bool {
    false
}

pub(super) fn is_block_device(_kind: &std::fs::FileType) -> bool {
    false
}

/// `FILE_FLAG_OPEN_REPARSE_POINT`: a symlink is opened itself, not followed.
const OPEN_REPARSE_POINT: u32 = 0x0020_0000;

pub(super) fn open_to_read(path: &Path, follow: bool) -> std::io::Result<std::fs::File> {
    use std::os::windows::fs::OpenOptionsExt as _;
    let mut open = std::fs::OpenOptions::new();
    open.read(true);
    if !follow {
        if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
            return Err(std::io::Error::other("it is a symlink"));
        }
        open.custom_flags(OPEN_REPARSE_POINT);
    }
    open.open(path)
}

pub(super) fn create_new(path: &Path, _mode: u32) -> std::io::Result<std::fs::File> {
    use std::os::windows::fs::OpenOptionsExt as _;
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(OPEN_REPARSE_POINT)
        .open(path)
}

pub(super) fn open_lock(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::windows::fs::OpenOptionsExt as _;
    if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(std::io::Error::other("it is a symlink"));
    }
    std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .custom_flags(OPEN_REPARSE_POINT)
        .open(path)
}

pub(super) fn open_stream(target: &Path) -> std::io::Result<Option<std::fs::File>> {
    std::fs::OpenOptions::new()
        .write(true)
        .open(target)
        .map(Some)
}

pub(super) fn mkfifo(_path: &Path, _mode: u32) -> std::io::Result<()> {
    Err(std::io::Error::new(
        std::io::ErrorKind::Unsupported,
        "named pipes in the file system are Unix only",
    ))
}
