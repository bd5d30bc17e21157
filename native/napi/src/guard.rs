//! Panics stop here. Every export is marked `catch_unwind`, but that covers only the call on the
//! JavaScript thread and turns a panic into an untyped error; an `AsyncTask`'s `compute` runs on
//! the libuv thread pool, where napi-rs catches nothing, and a panic there would abort Node. The
//! log's exports and every task body therefore run inside [`guard`]: a panic becomes
//! `LogError::Internal` (code `INTERNAL_ERROR`) and the log is left failed, because the call may
//! have stopped half-way through changing it. Reopening the directory recovers from disk.
//!
//! The other handles (topic trie, pattern index) and the pattern calls run inside [`guard_handle`]:
//! the same code, and a trie or index that panicked stays failed.
//!
//! [`panic_point`] is the test hook that proves it: with `LITETOPIC_TEST_PANIC_AT` set to a point's
//! name, that point panics. Points sit only in calls off the append and read paths, so looking the
//! variable up costs nothing where it matters.

use crate::log::js_error;
use litetopic_core::log::{LogError, LogHandle};
use std::cell::OnceCell;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// The environment variable naming the [`panic_point`] that panics (tests only).
const PANIC_AT_VARIABLE: &str = "LITETOPIC_TEST_PANIC_AT";

/// Runs `call`; a panic in it becomes `LogError::Internal` and, when the call works on `log`,
/// fails that log (through its lock, which a panic while it was held has poisoned: `lock` turns
/// that into the same failed state).
pub(crate) fn guard<T>(
    log: Option<&LogHandle>,
    call: impl FnOnce() -> Result<T, LogError>,
) -> Result<T, LogError> {
    caught(log, call, |error| error)
}

/// [`guard`] for an export that returns the binding's errors: a panic becomes the typed error's
/// JavaScript form (`crate::log::js_error`).
pub(crate) fn guard_js<T>(log: &LogHandle, call: impl FnOnce() -> napi::Result<T>) -> napi::Result<T> {
    caught(Some(log), call, js_error)
}

fn caught<T, E>(
    log: Option<&LogHandle>,
    call: impl FnOnce() -> Result<T, E>,
    convert: impl FnOnce(LogError) -> E,
) -> Result<T, E> {
    // Unwind safety: whatever the call was changing is behind the log's mutex (poisoned by a panic
    // while held) or is failed below, and nothing else the closure borrows outlives the call.
    match catch_unwind(AssertUnwindSafe(call)) {
        Ok(result) => result,
        Err(payload) => {
            let error = LogError::Internal(panic_message(payload));
            Err(convert(match log {
                Some(log) => log.fail(error),
                None => error,
            }))
        }
    }
}

/// Set on a handle other than the log's (a topic trie, a pattern index) by the panic that left it
/// failed: every later call on it fails with the same `INTERNAL_ERROR`, since the panic may have
/// stopped half-way through changing it. Creating a new one starts afresh.
#[derive(Default)]
pub(crate) struct Failed(OnceCell<String>);

/// Runs a call on a handle that is not the log (`failed` is its flag, `None` for a call without
/// one); a panic becomes `INTERNAL_ERROR` and fails the handle. `what` names the call's subject in
/// messages.
pub(crate) fn guard_handle<T>(
    failed: Option<&Failed>,
    what: &str,
    call: impl FnOnce() -> T,
) -> napi::Result<T> {
    if let Some(message) = failed.and_then(|failed| failed.0.get()) {
        return Err(internal_error(what, message, true));
    }
    // Unwind safety: a panic fails the handle below, so nothing reads what it left half-changed.
    catch_unwind(AssertUnwindSafe(call)).map_err(|payload| {
        let message = panic_message(payload);
        let error = internal_error(what, &message, failed.is_some());
        if let Some(failed) = failed {
            let _ = failed.0.set(message);
        }
        error
    })
}

/// `INTERNAL_ERROR` in the form the adapters rebuild typed errors from (see `crate::log`), saying
/// whether the handle is now failed.
fn internal_error(what: &str, message: &str, failed: bool) -> napi::Error {
    let after = if failed {
        format!("; the {what} is failed, make a new one")
    } else {
        String::new()
    };
    napi::Error::new(
        napi::Status::GenericFailure,
        format!(
            "INTERNAL_ERROR\t{{}}\tinternal error (a bug in litetopic) in a {what} call: {message}{after}"
        ),
    )
}

/// The text a panic was raised with. The payload is leaked, not dropped: a payload whose `drop`
/// panicked again would escape the guard (as napi-rs does with the payloads it catches).
fn panic_message(payload: Box<dyn std::any::Any + Send>) -> String {
    let message = if let Some(text) = payload.downcast_ref::<&str>() {
        format!("panic: {text}")
    } else if let Some(text) = payload.downcast_ref::<String>() {
        format!("panic: {text}")
    } else {
        "panic with a payload that is not text".to_string()
    };
    std::mem::forget(payload);
    message
}

/// Panics when `LITETOPIC_TEST_PANIC_AT` names `point`: the test hook for [`guard`]. The variable
/// is read on every call (not cached), so a test process can arm and disarm it.
#[allow(
    clippy::panic,
    reason = "the panic is the point: it is how tests reach the guard's handling of one"
)]
pub(crate) fn panic_point(point: &str) {
    if std::env::var_os(PANIC_AT_VARIABLE).is_some_and(|wanted| wanted == point) {
        panic!("{PANIC_AT_VARIABLE} reached {point}");
    }
}
