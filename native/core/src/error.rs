//! Stable error codes and validation reasons. The strings are part of the public contract: messages
//! may change, codes and reasons may not. `ts/errors.ts` holds the same registry and a test compares
//! them through the binding.

use std::fmt;

/// Codes of the typed errors a caller can cause (`LitetopicError.code` in TypeScript).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorCode {
    InvalidPattern,
    InvalidLiteTopic,
    InvalidArgument,
    EngineUnavailable,
    /// A topic name that is not valid in its MQTT or NATS dialect (lite names have their own code).
    InvalidTopic,
    /// Stored data failed a check (checksum, magic, layout, segment sequence).
    LogCorrupt,
    /// The data directory is locked by a live process.
    LogLocked,
    /// A file in a format version this release does not know.
    UnsupportedFormat,
    /// The operating system refused an I/O operation; the log is failed until reopened.
    IoError,
    /// The object was closed.
    Closed,
    /// A broker quota would be exceeded.
    QuotaExceeded,
    /// The parent topic does not exist.
    TopicNotFound,
    /// The consumer group does not exist.
    GroupNotFound,
    /// An unknown or stale receipt handle.
    InvalidReceipt,
    /// A write to a commit log opened read-only.
    ReadOnly,
    /// A bug in litetopic: an internal check failed (a panic, caught at the Node-API boundary). The
    /// object it happened in is failed until reopened; nothing it was doing is half-applied.
    Internal,
    /// An optional package a feature needs is not installed (TypeScript side only).
    DependencyMissing,
    /// The broker behind the object cannot do what was asked (TypeScript side only).
    Unsupported,
    /// A remote broker refused a call or could not be reached (TypeScript side only).
    Remote,
}

impl ErrorCode {
    /// Every code, in registry order.
    pub const ALL: [ErrorCode; 19] = [
        ErrorCode::InvalidPattern,
        ErrorCode::InvalidLiteTopic,
        ErrorCode::InvalidArgument,
        ErrorCode::EngineUnavailable,
        ErrorCode::InvalidTopic,
        ErrorCode::LogCorrupt,
        ErrorCode::LogLocked,
        ErrorCode::UnsupportedFormat,
        ErrorCode::IoError,
        ErrorCode::Closed,
        ErrorCode::QuotaExceeded,
        ErrorCode::TopicNotFound,
        ErrorCode::GroupNotFound,
        ErrorCode::InvalidReceipt,
        ErrorCode::ReadOnly,
        ErrorCode::Internal,
        ErrorCode::DependencyMissing,
        ErrorCode::Unsupported,
        ErrorCode::Remote,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::InvalidPattern => "INVALID_PATTERN",
            ErrorCode::InvalidLiteTopic => "INVALID_LITE_TOPIC",
            ErrorCode::InvalidArgument => "INVALID_ARGUMENT",
            ErrorCode::EngineUnavailable => "ENGINE_UNAVAILABLE",
            ErrorCode::InvalidTopic => "INVALID_TOPIC",
            ErrorCode::LogCorrupt => "LOG_CORRUPT",
            ErrorCode::LogLocked => "LOG_LOCKED",
            ErrorCode::UnsupportedFormat => "UNSUPPORTED_FORMAT",
            ErrorCode::IoError => "IO_ERROR",
            ErrorCode::Closed => "CLOSED",
            ErrorCode::QuotaExceeded => "QUOTA_EXCEEDED",
            ErrorCode::TopicNotFound => "TOPIC_NOT_FOUND",
            ErrorCode::GroupNotFound => "GROUP_NOT_FOUND",
            ErrorCode::InvalidReceipt => "INVALID_RECEIPT",
            ErrorCode::ReadOnly => "READ_ONLY",
            ErrorCode::Internal => "INTERNAL_ERROR",
            ErrorCode::DependencyMissing => "DEPENDENCY_MISSING",
            ErrorCode::Unsupported => "UNSUPPORTED",
            ErrorCode::Remote => "REMOTE_ERROR",
        }
    }
}

/// Why a pattern or a name failed validation: a finer, equally stable sub-code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reason {
    /// The input is the empty string.
    Empty,
    /// The input is longer than its limit.
    TooLong,
    /// A character the dialect does not allow (or an unpaired surrogate, which arrives as U+FFFD).
    InvalidCharacter,
    /// An empty segment where the dialect forbids one (leading, trailing or doubled separator).
    EmptySegment,
    /// A wildcard mixed with other characters inside one segment (`pa*`, `a+`, `#x`).
    PartialWildcard,
    /// A trailing wildcard (`**`, `#`, `>`) that is not the last segment.
    MisplacedWildcard,
}

impl Reason {
    pub const ALL: [Reason; 6] = [
        Reason::Empty,
        Reason::TooLong,
        Reason::InvalidCharacter,
        Reason::EmptySegment,
        Reason::PartialWildcard,
        Reason::MisplacedWildcard,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Reason::Empty => "EMPTY",
            Reason::TooLong => "TOO_LONG",
            Reason::InvalidCharacter => "INVALID_CHARACTER",
            Reason::EmptySegment => "EMPTY_SEGMENT",
            Reason::PartialWildcard => "PARTIAL_WILDCARD",
            Reason::MisplacedWildcard => "MISPLACED_WILDCARD",
        }
    }
}

/// A failed validation: the reason, where it happened and a sentence for people.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    pub code: ErrorCode,
    pub reason: Reason,
    /// Where it happened, as a JavaScript string index (UTF-16 code units): what both engines report.
    pub position: usize,
    /// For [`Reason::TooLong`]: the limit and the actual size, in UTF-8 bytes.
    pub limit: Option<usize>,
    pub actual: Option<usize>,
    pub message: String,
}

/// Converts a byte offset into `input` to a JavaScript string index (UTF-16 code units).
pub fn utf16_position(input: &str, byte_position: usize) -> usize {
    let end = byte_position.min(input.len());
    input[..end].chars().map(char::len_utf16).sum()
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code.as_str(), self.message)
    }
}

impl std::error::Error for Violation {}

/// Describes a character for an error message the same way the js engine does:
/// `"x" (U+0078)`, or a note for the replacement character an unpaired surrogate becomes.
pub fn describe_char(c: char) -> String {
    if c == char::REPLACEMENT_CHARACTER {
        return "(unpaired surrogate or U+FFFD)".to_string();
    }
    let code = c as u32;
    if c.is_control() || c == ' ' {
        format!("U+{code:04X}")
    } else {
        format!("\"{c}\" (U+{code:04X})")
    }
}
