//! The log's slow operations as `AsyncTask`s: they run on the libuv thread pool, never on the
//! JavaScript thread, and `LogHandle` holds its lock only around in-memory steps, so appends go on
//! while a task waits for the disk. Every `compute` runs inside `guard` (napi-rs catches no panic on
//! the thread pool), and each has a `panic_point` for the test that proves it.

use super::{js_error, Handle};
use crate::guard::{guard, panic_point};
use litetopic_core::limits::MAX_SEGMENT_BYTES;
use litetopic_core::log::{LogHandle, LogOptions, MemoryStorage, RealStorage, Retired, Storage};
use napi::bindgen_prelude::{AsyncTask, External, ToNapiValue, TypeName};
use napi::{sys, Env, Result, Task, ValueType};
use napi_derive::napi;
use std::path::PathBuf;
use std::sync::Arc;

/// An opened log as the promise of `log_open` resolves it: `External` itself cannot be the value of
/// a task (it has no `TypeName`), so this delegates to it.
pub struct OpenedLog(Handle);

impl TypeName for OpenedLog {
    fn type_name() -> &'static str {
        "External"
    }

    fn value_type() -> ValueType {
        ValueType::External
    }
}

impl ToNapiValue for OpenedLog {
    unsafe fn to_napi_value(env: sys::napi_env, val: Self) -> Result<sys::napi_value> {
        // SAFETY: the caller's contract (a valid env) is passed on unchanged.
        unsafe { External::to_napi_value(env, val.0) }
    }
}

pub struct LogOpenTask {
    dir: PathBuf,
    options: LogOptions,
    memory: bool,
}

impl Task for LogOpenTask {
    type Output = LogHandle;
    type JsValue = OpenedLog;

    fn compute(&mut self) -> Result<LogHandle> {
        guard(None, || {
            panic_point("open");
            let storage: Arc<dyn Storage> = if self.memory {
                Arc::new(MemoryStorage::new())
            } else {
                Arc::new(RealStorage)
            };
            LogHandle::open(&self.dir, self.options, storage)
        })
        .map_err(js_error)
    }

    fn resolve(&mut self, _env: Env, output: LogHandle) -> Result<OpenedLog> {
        Ok(OpenedLog(External::new(output)))
    }
}

/// Opens (creating if needed), locks and recovers the log in `dir`. `read_only` opens it without
/// writing anything; `repair` cuts corruption instead of refusing it (`LogOptions`).
#[napi(catch_unwind, ts_return_type = "Promise<ExternalObject<'Log'>>")]
pub fn log_open(
    dir: String,
    segment_bytes: f64,
    now_ms: f64,
    read_only: bool,
    repair: bool,
) -> AsyncTask<LogOpenTask> {
    open_task(
        PathBuf::from(dir),
        segment_bytes,
        now_ms,
        read_only,
        repair,
        false,
    )
}

/// Opens a new, empty log whose files live in anonymous memory (`MemoryStorage`): no directory, no
/// lock, nothing durable, everything freed when it closes or the process ends.
#[napi(catch_unwind, ts_return_type = "Promise<ExternalObject<'Log'>>")]
pub fn log_open_memory(segment_bytes: f64, now_ms: f64) -> AsyncTask<LogOpenTask> {
    // The path only names the files inside the storage.
    open_task(
        PathBuf::from("/memory"),
        segment_bytes,
        now_ms,
        false,
        false,
        true,
    )
}

fn open_task(
    dir: PathBuf,
    segment_bytes: f64,
    now_ms: f64,
    read_only: bool,
    repair: bool,
    memory: bool,
) -> AsyncTask<LogOpenTask> {
    let segment_bytes = segment_bytes.clamp(0.0, MAX_SEGMENT_BYTES as f64 * 2.0) as u64;
    AsyncTask::new(LogOpenTask {
        dir,
        options: LogOptions {
            segment_bytes,
            now_ms: now_ms as u64,
            read_only,
            repair,
        },
        memory,
    })
}

/// The slow operations that need only the handle and a time.
pub enum LogWork {
    PrepareSegment(u64),
    Checkpoint(u64),
    Close,
}

pub struct LogWorkTask {
    log: LogHandle,
    work: LogWork,
}

impl Task for LogWorkTask {
    type Output = ();
    type JsValue = ();

    fn compute(&mut self) -> Result<()> {
        let log = &self.log;
        guard(Some(log), || match self.work {
            LogWork::PrepareSegment(now_ms) => {
                panic_point("prepare_segment");
                log.prepare_segment(now_ms)
            }
            LogWork::Checkpoint(now_ms) => {
                panic_point("checkpoint");
                log.checkpoint(now_ms)
            }
            LogWork::Close => {
                panic_point("close");
                log.close()
            }
        })
        .map_err(js_error)
    }

    fn resolve(&mut self, _env: Env, _output: ()) -> Result<()> {
        Ok(())
    }
}

fn work(handle: &Handle, work: LogWork) -> AsyncTask<LogWorkTask> {
    AsyncTask::new(LogWorkTask {
        log: LogHandle::clone(handle),
        work,
    })
}

/// Creates, sizes, heads and syncs the next segment unless one is ready or being made.
#[napi(catch_unwind, ts_return_type = "Promise<void>")]
pub fn log_prepare_segment(
    #[napi(ts_arg_type = "ExternalObject<'Log'>")] handle: &Handle,
    now_ms: f64,
) -> AsyncTask<LogWorkTask> {
    work(handle, LogWork::PrepareSegment(now_ms as u64))
}

/// Writes a checkpoint as of the current write position, syncing the log to it first.
#[napi(catch_unwind, ts_return_type = "Promise<void>")]
pub fn log_checkpoint(
    #[napi(ts_arg_type = "ExternalObject<'Log'>")] handle: &Handle,
    now_ms: f64,
) -> AsyncTask<LogWorkTask> {
    work(handle, LogWork::Checkpoint(now_ms as u64))
}

/// Syncs, releases files and mappings, removes the lock.
#[napi(catch_unwind, ts_return_type = "Promise<void>")]
pub fn log_close(#[napi(ts_arg_type = "ExternalObject<'Log'>")] handle: &Handle) -> AsyncTask<LogWorkTask> {
    work(handle, LogWork::Close)
}

pub struct LogSyncTask(LogHandle);

impl Task for LogSyncTask {
    type Output = u64;
    type JsValue = f64;

    fn compute(&mut self) -> Result<u64> {
        let log = &self.0;
        guard(Some(log), || {
            panic_point("sync");
            log.sync()
        })
        .map_err(js_error)
    }

    fn resolve(&mut self, _env: Env, output: u64) -> Result<f64> {
        Ok(output as f64)
    }
}

/// Makes everything written so far durable; resolves to the durable position.
#[napi(catch_unwind, ts_return_type = "Promise<number>")]
pub fn log_sync(#[napi(ts_arg_type = "ExternalObject<'Log'>")] handle: &Handle) -> AsyncTask<LogSyncTask> {
    AsyncTask::new(LogSyncTask(LogHandle::clone(handle)))
}

/// What retention removed.
#[napi(object)]
pub struct NativeRetained {
    pub segments: u32,
    pub bytes: f64,
}

pub struct LogRetainTask {
    log: LogHandle,
    retired: Option<Retired>,
    counts: (usize, u64),
}

impl Task for LogRetainTask {
    type Output = ();
    type JsValue = NativeRetained;

    fn compute(&mut self) -> Result<()> {
        let (log, retired) = (&self.log, self.retired.take());
        guard(Some(log), || {
            panic_point("retain");
            match retired {
                Some(retired) => log.remove_retired(retired),
                None => Ok(()),
            }
        })
        .map_err(js_error)
    }

    fn resolve(&mut self, _env: Env, _output: ()) -> Result<NativeRetained> {
        Ok(NativeRetained {
            segments: self.counts.0 as u32,
            bytes: self.counts.1 as f64,
        })
    }
}

/// Detaches old segments now (never the active one) and removes their files in the task.
/// `cutoff_ms` and `max_bytes` are -1 for "no such rule".
#[napi(catch_unwind, ts_return_type = "Promise<NativeRetained>")]
pub fn log_retain(
    #[napi(ts_arg_type = "ExternalObject<'Log'>")] handle: &Handle,
    cutoff_ms: f64,
    max_bytes: f64,
) -> Result<AsyncTask<LogRetainTask>> {
    let rule = |value: f64| (value >= 0.0).then_some(value as u64);
    let retired = guard(Some(handle), || {
        handle.lock().detach_retired(rule(cutoff_ms), rule(max_bytes))
    })
    .map_err(js_error)?;
    let counts = (retired.segment_count(), retired.bytes());
    Ok(AsyncTask::new(LogRetainTask {
        log: LogHandle::clone(handle),
        retired: Some(retired),
        counts,
    }))
}
