//! The `LOCK` file (docs/FORMAT.md, "Lock"): one owner per directory.
//!
//! A native owner holds an OS lock (`flock`) on `LOCK` for the life of the open log, which the kernel
//! releases when the process dies whatever its PID or PID namespace. The js engine cannot `flock`, so
//! the file also carries a line that lets any opener judge its owner without one: boot id, PID
//! namespace, PID and process start time, and a heartbeat (the holder touches the file's mtime every
//! second) for an owner in another PID namespace, whose PID means nothing here.
//!
//! `LOCK` appears only complete (written under a temporary name, then hard-linked), and a stale one is
//! removed by renaming it aside and checking that the file moved is the one judged, so an opener
//! never removes a lock that another has just taken in its place.

use super::error::LogError;
use super::storage::Storage;
use std::fs::{self, File};
use std::io::{self, ErrorKind};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

pub const LOCK_FILE: &str = "LOCK";
/// How often a holder touches `LOCK`'s mtime.
pub const LOCK_HEARTBEAT_MS: u64 = 1_000;
/// An owner that can be judged only by its heartbeat is stale once `LOCK` has gone untouched this
/// long, and live as soon as its mtime moves.
pub const LOCK_STALE_MS: u64 = 10_000;
/// The most of a lock file that is read: a line is far shorter.
const MAX_LINE_BYTES: usize = 4096;
/// Attempts to take the lock; each retry follows a replacement of `LOCK` by another opener.
const ROUNDS: usize = 4;

/// The heartbeat period and staleness limit, shortened by tests.
#[derive(Clone, Copy, Debug)]
struct Timing {
    heartbeat: Duration,
    stale: Duration,
}

const TIMING: Timing = Timing {
    heartbeat: Duration::from_millis(LOCK_HEARTBEAT_MS),
    stale: Duration::from_millis(LOCK_STALE_MS),
};

/// A held lock: the `flock`ed descriptor of `LOCK` and the thread that touches it. `release` stops
/// the heartbeat, removes `LOCK` if it is still ours and closes the descriptor.
#[derive(Debug)]
pub struct DirLock {
    path: PathBuf,
    file: Option<Arc<File>>,
    heartbeat: Option<(mpsc::Sender<()>, JoinHandle<()>)>,
}

impl DirLock {
    /// Takes the lock of `dir` for this process.
    pub fn acquire(storage: &dyn Storage, dir: &Path, now_ms: u64) -> Result<DirLock, LogError> {
        acquire_with(storage, dir, now_ms, TIMING)
    }

    /// Stops the heartbeat, removes `LOCK` if it still names the locked file, and unlocks.
    pub fn release(mut self, storage: &dyn Storage) -> io::Result<()> {
        self.stop_heartbeat();
        let Some(file) = self.file.take() else {
            return Ok(());
        };
        // Removed while the flock is still held, so a native opener that opened this file before the
        // removal finds, once it gets the flock, that LOCK names another file (or none) and retries.
        if names(&self.path, &file).unwrap_or(false) {
            storage.remove(&self.path)?;
        }
        Ok(())
    }

    fn stop_heartbeat(&mut self) {
        if let Some((stop, thread)) = self.heartbeat.take() {
            drop(stop);
            let _ = thread.join();
        }
    }
}

impl Drop for DirLock {
    /// A log dropped without `close` unlocks but leaves `LOCK`, as a crash would: a native opener
    /// takes it at once, a js one once this process has no descriptor of it (the rule's own-PID case)
    /// or has exited.
    fn drop(&mut self) {
        self.stop_heartbeat();
    }
}

fn acquire_with(storage: &dyn Storage, dir: &Path, now_ms: u64, timing: Timing) -> Result<DirLock, LogError> {
    let path = dir.join(LOCK_FILE);
    let me = Identity::of_this_process();
    let line = me.line(now_ms);
    let locked = |pid, reason: String| LogError::Locked {
        dir: dir.display().to_string(),
        pid,
        reason,
    };
    for _ in 0..ROUNDS {
        if let Some(file) = publish(storage, dir, &path, &line)? {
            return DirLock::hold(storage, path, file, timing);
        }
        let file = match storage.open(&path) {
            Ok(file) => file,
            Err(e) if e.kind() == ErrorKind::NotFound => continue,
            Err(e) => return Err(LogError::io("opening the lock file", &e)),
        };
        // Where the file system has no flock, native owners are judged like js ones.
        let os_locked = match try_flock(&file) {
            Ok(()) => true,
            Err(e) if e.kind() == ErrorKind::WouldBlock => {
                let owner = Owner::read(&file);
                return Err(locked(owner.pid, "it holds the OS lock (flock) on LOCK".into()));
            }
            Err(_) => false,
        };
        // The file locked may have been removed as stale (or released) and replaced meanwhile.
        if !names(&path, &file).map_err(|e| LogError::io("checking the lock file", &e))? {
            continue;
        }
        let owner = Owner::read(&file);
        match judge(&owner, &me, os_locked, &file) {
            Verdict::Live(reason) => return Err(locked(owner.pid, reason)),
            Verdict::Stale => {}
            Verdict::Heartbeat => match watch(&path, &file, timing) {
                Ok(Watched::Live(reason)) => return Err(locked(owner.pid, reason)),
                Ok(Watched::Stale) => {}
                Ok(Watched::Replaced) => continue,
                Err(e) => return Err(LogError::io("watching the lock file", &e)),
            },
        }
        remove_stale(storage, dir, &path, &file)
            .map_err(|e| LogError::io("removing a stale lock file", &e))?;
    }
    Err(locked(
        None,
        "other processes kept replacing it while this one tried to take it".into(),
    ))
}

impl DirLock {
    /// Keeps the published lock and starts its heartbeat; gives the lock back if that fails.
    fn hold(storage: &dyn Storage, path: PathBuf, file: File, timing: Timing) -> Result<DirLock, LogError> {
        let file = Arc::new(file);
        let touched = Arc::clone(&file);
        let (stop, stopped) = mpsc::channel::<()>();
        let thread = thread::Builder::new()
            .name("litetopic-lock".into())
            .spawn(move || {
                // Ends when the sender is dropped. A failed touch is retried on the next beat; an
                // opener in another PID namespace would take a long silence for a dead owner.
                while let Err(mpsc::RecvTimeoutError::Timeout) = stopped.recv_timeout(timing.heartbeat) {
                    let _ = touched.set_modified(SystemTime::now());
                }
            });
        let mut lock = DirLock {
            path,
            file: Some(file),
            heartbeat: None,
        };
        match thread {
            Ok(thread) => {
                lock.heartbeat = Some((stop, thread));
                Ok(lock)
            }
            Err(e) => {
                let _ = lock.release(storage);
                Err(LogError::io("starting the lock heartbeat", &e))
            }
        }
    }
}

/// Writes `line` to a new file and links it as `LOCK`: the name appears with its content complete
/// and, for native owners, already `flock`ed. `None` when `LOCK` exists.
fn publish(storage: &dyn Storage, dir: &Path, path: &Path, line: &str) -> Result<Option<File>, LogError> {
    let temporary = dir.join(format!("{LOCK_FILE}.{}.tmp", unique_suffix()));
    let file = storage
        .create_new(&temporary)
        .map_err(|e| LogError::io("creating the lock file", &e))?;
    let _ = try_flock(&file); // a new file nobody else has opened: only a file system without flock fails
    let linked = storage
        .write_at(&file, line.as_bytes(), 0)
        .and_then(|()| fs::hard_link(&temporary, path));
    let _ = storage.remove(&temporary);
    match linked {
        Ok(()) => Ok(Some(file)),
        Err(e) if e.kind() == ErrorKind::AlreadyExists => Ok(None),
        Err(e) => Err(LogError::io("writing the lock file", &e)),
    }
}

/// Removes the stale `LOCK` that `judged` was opened from. It is renamed aside first: if what moved
/// is another file, an opener replaced the stale lock meanwhile, and its lock is linked back.
fn remove_stale(storage: &dyn Storage, dir: &Path, path: &Path, judged: &File) -> io::Result<()> {
    let aside = dir.join(format!("{LOCK_FILE}.{}.stale", unique_suffix()));
    match storage.rename(path, &aside) {
        Ok(()) => {}
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    }
    if !names(&aside, judged)? {
        match fs::hard_link(&aside, path) {
            // A third opener published a lock in the moment LOCK was missing; the next round judges it.
            Ok(()) => {}
            Err(e) if e.kind() == ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e),
        }
    }
    storage.remove(&aside)
}

/// A name no other opener uses at the same time: this process's id, the time and a counter.
fn unique_suffix() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    format!("{}-{nanos}-{n}", std::process::id())
}

/// `flock(LOCK_EX | LOCK_NB)`; `WouldBlock` when another open file holds it.
fn try_flock(file: &File) -> io::Result<()> {
    // SAFETY: flock takes no pointer, and `file` keeps the descriptor open for the call.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Whether `path` names the file open as `file`.
fn names(path: &Path, file: &File) -> io::Result<bool> {
    let named = match fs::metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(e),
    };
    let open = file.metadata()?;
    Ok(named.dev() == open.dev() && named.ino() == open.ino())
}

/// What identifies a process across PID reuse, PID namespaces and reboots, as far as `/proc` tells.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Identity {
    pid: u32,
    boot_id: Option<String>,
    pid_namespace: Option<String>,
    start_time: Option<u64>,
}

impl Identity {
    fn of_this_process() -> Identity {
        Identity {
            pid: std::process::id(),
            boot_id: fs::read_to_string("/proc/sys/kernel/random/boot_id")
                .ok()
                .map(|id| id.trim().to_string())
                .filter(|id| plain(id)),
            pid_namespace: fs::read_link("/proc/self/ns/pid")
                .ok()
                .map(|link| link.to_string_lossy().into_owned())
                .filter(|ns| plain(ns)),
            start_time: start_time("self"),
        }
    }

    /// The lock line of docs/FORMAT.md; fields that `/proc` could not give are left out.
    fn line(&self, now_ms: u64) -> String {
        let mut line = format!(
            "{{\"pid\":{},\"engine\":\"native\",\"createdMs\":{now_ms}",
            self.pid
        );
        if let Some(id) = &self.boot_id {
            line.push_str(&format!(",\"bootId\":\"{id}\""));
        }
        if let Some(ns) = &self.pid_namespace {
            line.push_str(&format!(",\"pidNamespace\":\"{ns}\""));
        }
        if let Some(start) = self.start_time {
            line.push_str(&format!(",\"startTime\":{start}"));
        }
        line.push_str("}\n");
        line
    }
}

/// A value that needs no escaping in a JSON string, so the line is written and read without a parser.
fn plain(value: &str) -> bool {
    !value.is_empty()
        && value
            .chars()
            .all(|c| c.is_ascii_graphic() && c != '"' && c != '\\')
}

/// Field 22 of `/proc/<pid>/stat`: when the process started, in clock ticks after boot. The fields
/// are counted after the last `)`, since the command name before it may hold spaces and parentheses.
fn start_time(pid: &str) -> Option<u64> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after_name = &stat[stat.rfind(')')? + 1..];
    after_name.split_whitespace().nth(19)?.parse().ok()
}

/// What a lock line says; every field is optional, since a damaged line must still be judged.
#[derive(Debug, Default, PartialEq, Eq)]
struct Owner {
    pid: Option<u32>,
    native: bool,
    identity: Identity,
}

impl Owner {
    fn read(file: &File) -> Owner {
        let mut bytes = vec![0; MAX_LINE_BYTES];
        let read = file.read_at(&mut bytes, 0).unwrap_or(0);
        bytes.truncate(read);
        Owner::parse(&bytes)
    }

    fn parse(bytes: &[u8]) -> Owner {
        let text = std::str::from_utf8(bytes).unwrap_or("");
        let pid = number_field(text, "pid")
            .and_then(|pid| u32::try_from(pid).ok())
            .filter(|&pid| pid > 0);
        Owner {
            pid,
            native: string_field(text, "engine") == Some("native"),
            identity: Identity {
                pid: pid.unwrap_or(0),
                boot_id: string_field(text, "bootId").map(str::to_string),
                pid_namespace: string_field(text, "pidNamespace").map(str::to_string),
                start_time: number_field(text, "startTime"),
            },
        }
    }
}

/// The text after `"name":` in a JSON object line.
fn field_value<'a>(text: &'a str, name: &str) -> Option<&'a str> {
    let key = format!("\"{name}\"");
    let after = &text[text.find(&key)? + key.len()..];
    Some(after.trim_start().strip_prefix(':')?.trim_start())
}

fn number_field(text: &str, name: &str) -> Option<u64> {
    let value = field_value(text, name)?;
    let end = value.find(|c: char| !c.is_ascii_digit()).unwrap_or(value.len());
    value[..end].parse().ok()
}

/// A string field written by `Identity::line` (no escapes).
fn string_field<'a>(text: &'a str, name: &str) -> Option<&'a str> {
    let value = field_value(text, name)?.strip_prefix('"')?;
    let value = &value[..value.find('"')?];
    plain(value).then_some(value)
}

#[derive(Debug, PartialEq, Eq)]
enum Verdict {
    Live(String),
    Stale,
    /// The owner is in another PID namespace: only its heartbeat can tell.
    Heartbeat,
}

/// The rule of docs/FORMAT.md, "Lock", as far as the file's content and `/proc` decide it.
/// `os_locked`: this opener holds the flock of the file, so no native process holds it.
fn judge(owner: &Owner, me: &Identity, os_locked: bool, file: &File) -> Verdict {
    if owner.native && os_locked {
        return Verdict::Stale;
    }
    // LOCK appears only complete, so a line without a pid is damage from a crash of the machine.
    let Some(pid) = owner.pid else {
        return Verdict::Stale;
    };
    let theirs = &owner.identity;
    if let (Some(a), Some(b)) = (&theirs.boot_id, &me.boot_id) {
        if a != b {
            return Verdict::Stale;
        }
    }
    if let (Some(a), Some(b)) = (&theirs.pid_namespace, &me.pid_namespace) {
        if a != b {
            return Verdict::Heartbeat;
        }
    }
    if pid == me.pid {
        // A lock of this process is held through an open descriptor of LOCK; without one, the line
        // was left by an earlier program that had this PID (a restarted PID 1, or one this process
        // replaced with exec, which closes descriptors).
        return match this_process_has_open(file) {
            Some(true) => Verdict::Live("this process holds it".into()),
            Some(false) => Verdict::Stale,
            None => Verdict::Live("it names this process".into()),
        };
    }
    if !process_alive(pid) {
        return Verdict::Stale;
    }
    match (theirs.start_time, start_time(&pid.to_string())) {
        (Some(recorded), Some(actual)) if recorded != actual => Verdict::Stale,
        (Some(_), Some(_)) => Verdict::Live(format!("process {pid} is alive and started when the lock says")),
        _ => Verdict::Live(format!("process {pid} is alive")),
    }
}

/// Whether this process has the file of `file` open through another descriptor; `None` when
/// `/proc/self/fd` cannot be read.
fn this_process_has_open(file: &File) -> Option<bool> {
    let target = file.metadata().ok()?;
    let own = file.as_raw_fd().to_string();
    let entries = fs::read_dir("/proc/self/fd").ok()?;
    Some(entries.flatten().any(|entry| {
        entry.file_name() != own.as_str()
            && fs::metadata(entry.path()).is_ok_and(|m| m.dev() == target.dev() && m.ino() == target.ino())
    }))
}

enum Watched {
    Live(String),
    Stale,
    /// `LOCK` was removed or replaced while watched.
    Replaced,
}

/// Judges an owner by its heartbeat: live as soon as the mtime moves, stale once it is older than
/// `timing.stale` or has not moved for that long while watched.
fn watch(path: &Path, file: &File, timing: Timing) -> io::Result<Watched> {
    let first = file.metadata()?.modified()?;
    let started = Instant::now();
    loop {
        if !names(path, file)? {
            return Ok(Watched::Replaced);
        }
        let modified = file.metadata()?.modified()?;
        if modified != first {
            return Ok(Watched::Live(format!(
                "its owner is in another PID namespace and touched LOCK within the last {} ms",
                timing.stale.as_millis()
            )));
        }
        let age = SystemTime::now()
            .duration_since(modified)
            .unwrap_or(Duration::ZERO);
        if age >= timing.stale || started.elapsed() >= timing.stale {
            return Ok(Watched::Stale);
        }
        thread::sleep(timing.heartbeat / 4);
    }
}

/// Whether a process exists: signal 0 succeeds, or fails only for want of permission.
fn process_alive(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    if pid <= 0 {
        return false;
    }
    // SAFETY: kill with signal 0 sends nothing; it only checks that the process exists.
    let result = unsafe { libc::kill(pid, 0) };
    result == 0 || io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

#[cfg(test)]
mod tests;
