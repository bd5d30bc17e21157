//! The `LOCK` file (docs/FORMAT.md, "Lock"): one owner per directory. Created with exclusive-create
//! and holding `{"pid":…,"engine":"native","createdMs":…}`; a lock whose process is gone was left by
//! a crash and is replaced.

use super::error::LogError;
use super::storage::Storage;
use std::io::{self, ErrorKind};
use std::path::{Path, PathBuf};

pub const LOCK_FILE: &str = "LOCK";

/// A held lock; `release` removes the file.
#[derive(Debug)]
pub struct DirLock {
    path: PathBuf,
}

impl DirLock {
    /// Takes the lock of `dir` for this process.
    pub fn acquire(storage: &dyn Storage, dir: &Path, now_ms: u64) -> Result<DirLock, LogError> {
        let path = dir.join(LOCK_FILE);
        let line = format!(
            "{{\"pid\":{},\"engine\":\"native\",\"createdMs\":{}}}\n",
            std::process::id(),
            now_ms
        );
        let locked = |pid| LogError::Locked {
            dir: dir.display().to_string(),
            pid,
        };
        // Two rounds: the second follows the removal of a stale lock; losing that race to another
        // process is a plain "locked".
        for _ in 0..2 {
            match storage.create_new(&path) {
                Ok(file) => {
                    storage
                        .write_at(&file, line.as_bytes(), 0)
                        .map_err(|e| LogError::io("writing the lock file", &e))?;
                    return Ok(DirLock { path });
                }
                Err(e) if e.kind() == ErrorKind::AlreadyExists => {}
                Err(e) => return Err(LogError::io("creating the lock file", &e)),
            }
            let owner = match storage.read(&path) {
                Ok(bytes) => lock_pid(&bytes),
                Err(e) if e.kind() == ErrorKind::NotFound => continue,
                Err(e) => return Err(LogError::io("reading the lock file", &e)),
            };
            // An unreadable pid is treated as a stale lock: the owner crashed between creating the
            // file and writing its line (the window is one write; a live owner is past it).
            if let Some(pid) = owner.filter(|&pid| process_alive(pid)) {
                return Err(locked(Some(pid)));
            }
            match storage.remove(&path) {
                Ok(()) => {}
                Err(e) if e.kind() == ErrorKind::NotFound => {}
                Err(e) => return Err(LogError::io("removing a stale lock file", &e)),
            }
        }
        Err(locked(None))
    }

    /// Removes the lock file.
    pub fn release(self, storage: &dyn Storage) -> io::Result<()> {
        storage.remove(&self.path)
    }
}

/// The `pid` of a lock file's JSON line.
fn lock_pid(bytes: &[u8]) -> Option<u32> {
    let text = std::str::from_utf8(bytes).ok()?;
    let after = &text[text.find("\"pid\"")? + 5..];
    let digits = after.trim_start().strip_prefix(':')?.trim_start();
    let end = digits.find(|c: char| !c.is_ascii_digit()).unwrap_or(digits.len());
    digits[..end].parse().ok()
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
mod tests {
    use super::*;

    #[test]
    fn reads_the_pid_of_a_lock_line() {
        assert_eq!(
            lock_pid(b"{\"pid\":1234,\"engine\":\"js\",\"createdMs\":5}\n"),
            Some(1234)
        );
        assert_eq!(lock_pid(b"{\"engine\":\"js\", \"pid\" : 7}"), Some(7));
        assert_eq!(lock_pid(b""), None);
        assert_eq!(lock_pid(b"{\"pid\":\"x\"}"), None);
    }

    #[test]
    fn this_process_is_alive() {
        assert!(process_alive(std::process::id()));
        assert!(!process_alive(0));
    }
}
