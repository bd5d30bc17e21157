//! The failures of a commit log, each with the stable code of `crate::error::ErrorCode` and the
//! details the typed TypeScript errors carry (`LogCorruptError.file`, `LogLockedError.pid`, ...).

use crate::error::ErrorCode;
use std::fmt;
use std::io;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LogError {
    /// Stored data failed a check where valid data must be.
    Corrupt {
        file: Option<String>,
        position: Option<u64>,
        message: String,
    },
    /// The directory is owned by a live process; `reason` says why it is judged alive.
    Locked {
        dir: String,
        pid: Option<u32>,
        reason: String,
    },
    /// A file in a format version this release does not know.
    UnsupportedFormat {
        file: String,
        version: u32,
    },
    /// The operating system refused an operation (`errno` is its symbolic name, e.g. `EIO`).
    Io {
        errno: Option<String>,
        message: String,
    },
    Closed,
    /// A write to a log opened read-only; nothing was done.
    ReadOnly,
    /// A malformed argument: a programming error in the caller, nothing was done.
    InvalidArgument(String),
    /// A bug: a call panicked. The log is failed until reopened, since the call may have stopped
    /// half-way through changing it.
    Internal(String),
}

/// A checkpoint block that failed its check when its LMQ was first used.
impl From<crate::queue::BadBlock> for LogError {
    fn from(bad: crate::queue::BadBlock) -> LogError {
        LogError::corrupt(Some(bad.file), Some(bad.at), bad.why)
    }
}

impl LogError {
    pub fn code(&self) -> ErrorCode {
        match self {
            LogError::Corrupt { .. } => ErrorCode::LogCorrupt,
            LogError::Locked { .. } => ErrorCode::LogLocked,
            LogError::UnsupportedFormat { .. } => ErrorCode::UnsupportedFormat,
            LogError::Io { .. } => ErrorCode::IoError,
            LogError::Closed => ErrorCode::Closed,
            LogError::ReadOnly => ErrorCode::ReadOnly,
            LogError::InvalidArgument(_) => ErrorCode::InvalidArgument,
            LogError::Internal(_) => ErrorCode::Internal,
        }
    }

    /// An I/O failure, saying what was being done.
    pub fn io(doing: &str, error: &io::Error) -> LogError {
        LogError::Io {
            errno: error.raw_os_error().and_then(errno_name).map(str::to_string),
            message: format!("{doing}: {error}"),
        }
    }

    pub fn corrupt(file: Option<String>, position: Option<u64>, message: impl Into<String>) -> LogError {
        LogError::Corrupt {
            file,
            position,
            message: message.into(),
        }
    }
}

impl fmt::Display for LogError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LogError::Corrupt {
                file,
                position,
                message,
            } => {
                write!(f, "commit log corrupt: {message}")?;
                if let Some(file) = file {
                    write!(f, " in {file}")?;
                }
                if let Some(position) = position {
                    write!(f, " at position {position}")?;
                }
                Ok(())
            }
            LogError::Locked {
                dir,
                pid: Some(pid),
                reason,
            } => write!(
                f,
                "commit log directory {dir} is locked by process {pid}: {reason}"
            ),
            LogError::Locked {
                dir,
                pid: None,
                reason,
            } => write!(f, "commit log directory {dir} is locked: {reason}"),
            LogError::UnsupportedFormat { file, version } => {
                write!(
                    f,
                    "{file} has format version {version}, which this release does not know"
                )
            }
            LogError::Io { message, .. } => write!(f, "{message}"),
            LogError::Closed => write!(f, "the commit log is closed"),
            LogError::ReadOnly => write!(f, "the commit log was opened read-only"),
            LogError::InvalidArgument(message) => write!(f, "{message}"),
            LogError::Internal(message) => write!(
                f,
                "internal error (a bug in litetopic): {message}; the commit log is failed until reopened"
            ),
        }
    }
}

impl std::error::Error for LogError {}

/// The symbolic name Node uses for an errno value (`err.code` of its fs errors), for the common ones.
fn errno_name(errno: i32) -> Option<&'static str> {
    Some(match errno {
        libc::EIO => "EIO",
        libc::ENOSPC => "ENOSPC",
        libc::EDQUOT => "EDQUOT",
        libc::EACCES => "EACCES",
        libc::EPERM => "EPERM",
        libc::ENOENT => "ENOENT",
        libc::EEXIST => "EEXIST",
        libc::EROFS => "EROFS",
        libc::EMFILE => "EMFILE",
        libc::ENFILE => "ENFILE",
        libc::ENOMEM => "ENOMEM",
        libc::EBADF => "EBADF",
        libc::EINVAL => "EINVAL",
        libc::EBUSY => "EBUSY",
        libc::ENOTDIR => "ENOTDIR",
        libc::EISDIR => "EISDIR",
        _ => return None,
    })
}
