//! The commit log handle: free functions over an `External` (see pattern_index.rs for why not a class).
//! Quick calls run on the JavaScript thread; opening, segment preparation, sync, checkpoints, file
//! removal and closing are `AsyncTask`s on the libuv thread pool.
//!
//! Failures cross as `Error`s whose message is `CODE<TAB>details as JSON<TAB>sentence`, so the
//! adapter (ts/engine/native/log.ts) can rebuild the typed error with its fields; a tab never occurs
//! inside JSON text.

mod tasks;

use crate::guard::{guard_js, panic_point};
use litetopic_core::limits::MAX_LMQ_NAME_BYTES;
use litetopic_core::log::{BodyBatch, Log, LogError, LogHandle, ReadSpan};
use napi::bindgen_prelude::{
    ArrayBuffer, BufferSlice, Either, External, Float64Array, Float64ArraySlice, FromNapiValue,
    Uint32ArraySlice, Uint8ArraySlice,
};
use napi::{check_status, sys, Env, Error, JsString, JsValue, Result, Status};
use napi_derive::napi;

/// The handle behind `ExternalObject<'Log'>`.
pub type Handle = External<LogHandle>;

/// A JSON string literal of `text`.
fn json_string(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The error as JavaScript receives it (see the module comment).
pub(crate) fn js_error(error: LogError) -> Error {
    let mut fields: Vec<String> = Vec::new();
    let mut field = |name: &str, value: String| fields.push(format!("\"{name}\":{value}"));
    match &error {
        LogError::Corrupt { file, position, .. } => {
            if let Some(file) = file {
                field("file", json_string(file));
            }
            if let Some(position) = position {
                field("position", position.to_string());
            }
        }
        LogError::Locked { dir, pid, .. } => {
            field("dir", json_string(dir));
            if let Some(pid) = pid {
                field("pid", pid.to_string());
            }
        }
        LogError::UnsupportedFormat { file, version } => {
            field("file", json_string(file));
            field("version", version.to_string());
        }
        LogError::Io {
            errno: Some(errno), ..
        } => field("errno", json_string(errno)),
        LogError::Io { errno: None, .. }
        | LogError::Closed
        | LogError::ReadOnly
        | LogError::InvalidArgument(_)
        | LogError::Internal(_) => {}
    }
    let reason = format!("{}\t{{{}}}\t{error}", error.code().as_str(), fields.join(","));
    Error::new(Status::GenericFailure, reason)
}

fn invalid(message: &str) -> Error {
    js_error(LogError::InvalidArgument(message.to_string()))
}

/// Writes records `from..count` of an encoded batch (see `EncodedBatch` in ts/engine/contract.ts)
/// in one crossing, sealing them in `bytes`; returns the index after the last record written. The
/// arrays come as slices: an owned typed-array argument creates and deletes a reference to its
/// array on every call, which for five arrays costs more than a small append itself.
#[napi(catch_unwind)]
#[allow(
    clippy::too_many_arguments,
    reason = "the flat batch: one crossing instead of an object to unpack"
)]
pub fn log_append(
    #[napi(ts_arg_type = "ExternalObject<'Log'>")] handle: &Handle,
    mut bytes: Uint8ArraySlice,
    starts: Uint32ArraySlice,
    lmq_starts: Uint32ArraySlice,
    from: u32,
    count: u32,
    store_timestamp_ms: f64,
    mut positions: Float64ArraySlice,
    mut offsets: Float64ArraySlice,
) -> Result<u32> {
    guard_js(handle, || {
        let (from, count) = (from as usize, count as usize);
        let (Some(&start), Some(&end), Some(&first_lmq)) =
            (starts.get(from), starts.get(count), lmq_starts.get(from))
        else {
            return Err(invalid("from or count outside the batch"));
        };
        // SAFETY: as in `crate::out_slice`: the engine seals each record (offsets, store time,
        // checksum) in the caller's encoded batch before writing it; nothing else uses the batch
        // during the call.
        let bytes = unsafe { bytes.as_mut() };
        let batch = bytes
            .get_mut(start as usize..end as usize)
            .ok_or_else(|| invalid("starts outside the bytes"))?;
        let (positions, offsets) = append_outputs(&mut positions, &mut offsets, from, first_lmq as usize)?;
        let written = handle
            .lock()
            .append(
                batch,
                count.saturating_sub(from),
                store_timestamp_ms as u64,
                positions,
                offsets,
            )
            .map_err(js_error)?;
        Ok((from + written) as u32)
    })
}

/// An append's output arrays, the positions from record `from` on and the offsets from LMQ slot
/// `first_lmq` on, as the engine fills them.
fn append_outputs<'a>(
    positions: &'a mut Float64ArraySlice,
    offsets: &'a mut Float64ArraySlice,
    from: usize,
    first_lmq: usize,
) -> Result<(&'a mut [f64], &'a mut [f64])> {
    // SAFETY: as in `crate::out_slice`.
    let positions = unsafe { positions.as_mut() };
    // SAFETY: as in `crate::out_slice`.
    let offsets = unsafe { offsets.as_mut() };
    match (positions.get_mut(from..), offsets.get_mut(first_lmq..)) {
        (Some(positions), Some(offsets)) => Ok((positions, offsets)),
        _ => Err(invalid("the output arrays are shorter than the batch")),
    }
}

/// Registers LMQ names for `log_append_bodies`: `names` holds them separated by NUL (which no LMQ
/// name holds). Returns the handle of the first; the others follow in order.
#[napi(catch_unwind)]
pub fn log_register_lmqs(
    #[napi(ts_arg_type = "ExternalObject<'Log'>")] handle: &Handle,
    names: String,
) -> Result<u32> {
    guard_js(handle, || {
        let names: Vec<&[u8]> = names.as_bytes().split(|&b| b == 0).collect();
        handle.lock().register_lmqs(&names).map_err(js_error)
    })
}

/// Forgets every LMQ handle `log_register_lmqs` gave.
#[napi(catch_unwind)]
pub fn log_forget_lmqs(#[napi(ts_arg_type = "ExternalObject<'Log'>")] handle: &Handle) -> Result<()> {
    guard_js(handle, || {
        handle.lock().forget_lmqs();
        Ok(())
    })
}

/// Writes records `from..count` of a body-only batch in one crossing: record `i` has the body
/// ending at `body_ends[i]` in `bodies` (starting where the one before ends) and goes to the LMQ of
/// `lmq_handles[i]` (from `log_register_lmqs`). Fills `positions[i]` and `offsets[i]` for each record
/// written; returns the index after the last.
#[napi(catch_unwind)]
#[allow(
    clippy::too_many_arguments,
    reason = "the flat batch: one crossing instead of an object to unpack"
)]
pub fn log_append_bodies(
    #[napi(ts_arg_type = "ExternalObject<'Log'>")] handle: &Handle,
    lmq_handles: Uint32ArraySlice,
    bodies: Uint8ArraySlice,
    body_ends: Uint32ArraySlice,
    from: u32,
    count: u32,
    store_timestamp_ms: f64,
    mut positions: Float64ArraySlice,
    mut offsets: Float64ArraySlice,
) -> Result<u32> {
    guard_js(handle, || {
        let (positions, offsets) = append_outputs(&mut positions, &mut offsets, 0, 0)?;
        let written = handle
            .lock()
            .append_bodies(
                BodyBatch {
                    handles: &lmq_handles,
                    bodies: &bodies,
                    body_ends: &body_ends,
                },
                from as usize..count as usize,
                store_timestamp_ms as u64,
                positions,
                offsets,
            )
            .map_err(js_error)?;
        Ok(written as u32)
    })
}

/// Reads up to `max_count` records of `lmq` from `from_offset` into one new buffer: the position of
/// each record as a native-endian f64, then the records as stored, back to back, checked. The
/// buffer is allocated by the engine and filled in place: one allocation and one copy of each
/// record, and no finalizer for the garbage collector to run, as an external buffer over a Rust
/// `Vec` would have. Up to [`SMALL_READ_BYTES`] it is an ArrayBuffer (`napi_create_arraybuffer`),
/// larger a Buffer (`napi_create_buffer`): creating a Buffer from C++ also sets its prototype,
/// which cost more than the rest of a one-message read, while an ArrayBuffer comes zero-filled,
/// which costs more than that once the read is large. `meta` receives the record count and the
/// first record's offset.
#[napi(catch_unwind, ts_return_type = "ArrayBuffer | Buffer")]
pub fn log_read<'env>(
    env: &'env Env,
    #[napi(ts_arg_type = "ExternalObject<'Log'>")] handle: &Handle,
    #[napi(ts_arg_type = "string")] lmq: JsString,
    from_offset: f64,
    max_count: u32,
    mut meta: Float64ArraySlice,
) -> Result<Either<ArrayBuffer<'env>, BufferSlice<'env>>> {
    guard_js(handle, || {
        // SAFETY: as in `crate::out_slice`; a slice argument also spares the reference a
        // `Float64Array` argument creates and deletes on every call.
        let meta = unsafe { meta.as_mut() };
        if meta.len() < 2 {
            return Err(invalid("meta must have 2 slots"));
        }
        with_span(env, handle, &lmq, from_offset, max_count, |log, lmq, span| {
            let positions_bytes = span.count * POSITION_BYTES;
            let mut out = read_buffer(env, positions_bytes + span.bytes)?;
            let (positions, records) = bytes_of(&mut out).split_at_mut(positions_bytes);
            log.read_into(lmq, span, records, |i, position| {
                let at = i * POSITION_BYTES;
                positions[at..at + POSITION_BYTES].copy_from_slice(&(position as f64).to_ne_bytes());
            })
            .map_err(js_error)?;
            meta[0] = span.count as f64;
            meta[1] = span.first_offset as f64;
            Ok(out)
        })
    })
}

/// `log_read` for the bodies alone: up to `max_count` records of `lmq` from `from_offset`, each
/// checked whole, into one new buffer holding the position of each record (native-endian f64),
/// then where each body ends among the bodies (native-endian u32, padded to 8 bytes), then the
/// bodies back to back; the buffer may run past the last body. `meta` receives the record count,
/// the first record's offset and the bodies' bytes.
#[napi(catch_unwind, ts_return_type = "ArrayBuffer | Buffer")]
pub fn log_read_bodies<'env>(
    env: &'env Env,
    #[napi(ts_arg_type = "ExternalObject<'Log'>")] handle: &Handle,
    #[napi(ts_arg_type = "string")] lmq: JsString,
    from_offset: f64,
    max_count: u32,
    mut meta: Float64ArraySlice,
) -> Result<Either<ArrayBuffer<'env>, BufferSlice<'env>>> {
    guard_js(handle, || {
        // SAFETY: as in `log_read`.
        let meta = unsafe { meta.as_mut() };
        if meta.len() < 3 {
            return Err(invalid("meta must have 3 slots"));
        }
        with_span(env, handle, &lmq, from_offset, max_count, |log, lmq, span| {
            let mut out = read_buffer(env, bodies_read_bytes(span)?)?;
            let used = fill_bodies(log, lmq, span, bytes_of(&mut out))?;
            meta[0] = span.count as f64;
            meta[1] = span.first_offset as f64;
            meta[2] = used as f64;
            Ok(out)
        })
    })
}

/// Runs `read` with the log locked, on the span of up to `max_count` records of `lmq` from
/// `from_offset`: how every read of one LMQ starts (the name copied onto the stack, not allocated).
fn with_span<T>(
    env: &Env,
    handle: &Handle,
    lmq: &JsString,
    from_offset: f64,
    max_count: u32,
    read: impl FnOnce(&Log, &[u8], &ReadSpan) -> Result<T>,
) -> Result<T> {
    let mut name = [0u8; NAME_BUFFER_BYTES];
    let lmq = name_bytes(env, lmq, &mut name)?;
    let mut log = handle.lock();
    let span = log
        .read_span(lmq, from_offset as u64, max_count as usize)
        .map_err(js_error)?;
    read(&log, lmq, &span)
}

/// Bytes of one body end in `log_read_bodies`'s buffer.
const BODY_END_BYTES: usize = 4;

/// Bytes `fill_bodies` may use for `span`: the positions, the body ends padded to 8 bytes, and the
/// records' bytes, which bound their bodies'.
fn bodies_read_bytes(span: &ReadSpan) -> Result<usize> {
    if u32::try_from(span.bytes).is_err() {
        return Err(invalid("a read of bodies returns at most 4 GiB"));
    }
    Ok(span.count * POSITION_BYTES
        + (span.count * BODY_END_BYTES).next_multiple_of(POSITION_BYTES)
        + span.bytes)
}

/// Reads the bodies of `span` into `out` (at least [`bodies_read_bytes`] long) as
/// `log_read_bodies` lays them out; returns the bodies' bytes.
fn fill_bodies(log: &Log, lmq: &[u8], span: &ReadSpan, out: &mut [u8]) -> Result<usize> {
    let positions_bytes = span.count * POSITION_BYTES;
    let ends_bytes = (span.count * BODY_END_BYTES).next_multiple_of(POSITION_BYTES);
    let (positions, rest) = out.split_at_mut(positions_bytes);
    let (ends, bodies) = rest.split_at_mut(ends_bytes);
    log.read_bodies_into(lmq, span, bodies, |i, position, end| {
        let at = i * POSITION_BYTES;
        positions[at..at + POSITION_BYTES].copy_from_slice(&(position as f64).to_ne_bytes());
        let at = i * BODY_END_BYTES;
        ends[at..at + BODY_END_BYTES].copy_from_slice(&(end as u32).to_ne_bytes());
    })
    .map_err(js_error)
}

/// `log_read_bodies` into `into`, a buffer the caller keeps for its reads, laid out as
/// `log_read_bodies` lays out its new one, from `into`'s start (which the caller aligns to 8
/// bytes): a reader that reuses one buffer allocates nothing per read. False, and nothing read,
/// when the read may not fit; `meta[3]` then holds the bytes it may need.
#[napi(catch_unwind)]
pub fn log_read_bodies_into(
    env: &Env,
    #[napi(ts_arg_type = "ExternalObject<'Log'>")] handle: &Handle,
    #[napi(ts_arg_type = "string")] lmq: JsString,
    from_offset: f64,
    max_count: u32,
    mut into: Uint8ArraySlice,
    mut meta: Float64ArraySlice,
) -> Result<bool> {
    guard_js(handle, || {
        // SAFETY: as in `log_read`.
        let meta = unsafe { meta.as_mut() };
        // SAFETY: as in `crate::out_slice`: the caller's buffer, written only during this call.
        let into = unsafe { into.as_mut() };
        if meta.len() < 4 {
            return Err(invalid("meta must have 4 slots"));
        }
        with_span(env, handle, &lmq, from_offset, max_count, |log, lmq, span| {
            let needed = bodies_read_bytes(span)?;
            meta[3] = needed as f64;
            let Some(out) = into.get_mut(..needed) else {
                return Ok(false);
            };
            let used = fill_bodies(log, lmq, span, out)?;
            meta[0] = span.count as f64;
            meta[1] = span.first_offset as f64;
            meta[2] = used as f64;
            Ok(true)
        })
    })
}

/// A new read result of `total` bytes (see `log_read`): an ArrayBuffer up to [`SMALL_READ_BYTES`],
/// a Buffer above.
fn read_buffer(env: &Env, total: usize) -> Result<Either<ArrayBuffer<'_>, BufferSlice<'_>>> {
    let mut data = std::ptr::null_mut();
    let mut value = std::ptr::null_mut();
    if total <= SMALL_READ_BYTES {
        check_status!(
            // SAFETY: a valid env on the JavaScript thread; both out-pointers are written by the call.
            unsafe { sys::napi_create_arraybuffer(env.raw(), total, &mut data, &mut value) },
            "allocating the read's ArrayBuffer"
        )?;
        // SAFETY: `value` is the ArrayBuffer just created.
        Ok(Either::A(unsafe {
            ArrayBuffer::from_napi_value(env.raw(), value)?
        }))
    } else {
        check_status!(
            // SAFETY: as above, for a Buffer.
            unsafe { sys::napi_create_buffer(env.raw(), total, &mut data, &mut value) },
            "allocating the read's Buffer"
        )?;
        // SAFETY: `value` is the Buffer just created.
        Ok(Either::B(unsafe {
            BufferSlice::from_napi_value(env.raw(), value)?
        }))
    }
}

/// The bytes of a buffer from [`read_buffer`].
fn bytes_of<'a>(out: &'a mut Either<ArrayBuffer<'_>, BufferSlice<'_>>) -> &'a mut [u8] {
    match out {
        // SAFETY: nothing else references the new buffer yet, and no JavaScript runs while the
        // synchronous call that made it fills it.
        Either::A(buffer) => unsafe { buffer.as_mut() },
        Either::B(buffer) => buffer,
    }
}

/// `log_read` for `count` LMQs at once, under one lock into one new buffer: `lmqs` holds their
/// names separated by NUL, `from_offsets` and `max_counts` one entry each. The buffer holds the
/// positions of every record (f64, in request order), then the records of every request back to
/// back; `meta` receives each request's record count, first offset and record bytes (three slots
/// per request). One Node-API crossing and one allocation where a POP over many lite topics made
/// one of each per lite topic. Null, with nothing read, when `lmqs` does not split into `count`
/// names (one of them holds NUL): the caller reads each on its own, and need not scan every name.
#[napi(catch_unwind, ts_return_type = "ArrayBuffer | Buffer | null")]
pub fn log_read_many<'env>(
    env: &'env Env,
    #[napi(ts_arg_type = "ExternalObject<'Log'>")] handle: &Handle,
    lmqs: String,
    count: u32,
    from_offsets: Float64ArraySlice,
    max_counts: Uint32ArraySlice,
    meta: Float64ArraySlice,
) -> Result<Option<Either<ArrayBuffer<'env>, BufferSlice<'env>>>> {
    guard_js(handle, || {
        let names: Vec<&[u8]> = lmqs.as_bytes().split(|&b| b == 0).collect();
        if names.len() != count as usize {
            return Ok(None);
        }
        read_many(env, handle, Lmqs::Names(&names), from_offsets, max_counts, meta).map(Some)
    })
}

/// `log_read_many` of the LMQs registered as `lmq_handles[..count]` (`log_register_lmqs`): no name
/// crosses, and each queue is found by its number instead of by hashing and comparing its name.
#[napi(catch_unwind, ts_return_type = "ArrayBuffer | Buffer")]
pub fn log_read_many_of<'env>(
    env: &'env Env,
    #[napi(ts_arg_type = "ExternalObject<'Log'>")] handle: &Handle,
    lmq_handles: Uint32ArraySlice,
    count: u32,
    from_offsets: Float64ArraySlice,
    max_counts: Uint32ArraySlice,
    meta: Float64ArraySlice,
) -> Result<Either<ArrayBuffer<'env>, BufferSlice<'env>>> {
    guard_js(handle, || {
        let handles = lmq_handles
            .get(..count as usize)
            .ok_or_else(|| invalid("lmq_handles must have room for every LMQ"))?;
        read_many(
            env,
            handle,
            Lmqs::Handles(handles),
            from_offsets,
            max_counts,
            meta,
        )
    })
}

/// The LMQs of a `read_many`: by name, or by registered handle.
enum Lmqs<'a> {
    Names(&'a [&'a [u8]]),
    Handles(&'a [u32]),
}

impl Lmqs<'_> {
    fn len(&self) -> usize {
        match self {
            Lmqs::Names(names) => names.len(),
            Lmqs::Handles(handles) => handles.len(),
        }
    }
}

/// The reads of `log_read_many` and `log_read_many_of`, under one lock into one new buffer.
fn read_many<'env>(
    env: &'env Env,
    handle: &Handle,
    lmqs: Lmqs<'_>,
    from_offsets: Float64ArraySlice,
    max_counts: Uint32ArraySlice,
    mut meta: Float64ArraySlice,
) -> Result<Either<ArrayBuffer<'env>, BufferSlice<'env>>> {
    // SAFETY: as in `log_read`.
    let meta = unsafe { meta.as_mut() };
    let requests = lmqs.len();
    if from_offsets.len() < requests || max_counts.len() < requests || meta.len() < 3 * requests {
        return Err(invalid(
            "from_offsets, max_counts and meta must have room for every LMQ",
        ));
    }
    let mut log = handle.lock();
    let mut spans = Vec::with_capacity(requests);
    let (mut count, mut bytes) = (0, 0);
    for i in 0..requests {
        let (from, max) = (from_offsets[i] as u64, max_counts[i] as usize);
        let span = match lmqs {
            Lmqs::Names(names) => log.read_span(names[i], from, max),
            Lmqs::Handles(handles) => log.read_span_of(handles[i], from, max),
        }
        .map_err(js_error)?;
        count += span.count;
        bytes += span.bytes;
        spans.push(span);
    }
    let positions_bytes = count * POSITION_BYTES;
    let mut out = read_buffer(env, positions_bytes + bytes)?;
    let (positions, records) = bytes_of(&mut out).split_at_mut(positions_bytes);
    let (mut record_at, mut position_at) = (0, 0);
    for (i, span) in spans.iter().enumerate() {
        let name = match lmqs {
            Lmqs::Names(names) => names[i],
            // Its span was found above, so the handle is registered.
            Lmqs::Handles(handles) => log.handle_lmq(handles[i]).unwrap_or_default(),
        };
        let target = &mut records[record_at..record_at + span.bytes];
        log.read_into(name, span, target, |k, position| {
            let at = (position_at + k) * POSITION_BYTES;
            positions[at..at + POSITION_BYTES].copy_from_slice(&(position as f64).to_ne_bytes());
        })
        .map_err(js_error)?;
        record_at += span.bytes;
        position_at += span.count;
        meta[3 * i] = span.count as f64;
        meta[3 * i + 1] = span.first_offset as f64;
        meta[3 * i + 2] = span.bytes as f64;
    }
    Ok(out)
}

/// The largest read `log_read` returns as an ArrayBuffer (see there).
const SMALL_READ_BYTES: usize = 8 * 1024;

/// Bytes of one record position at the start of `log_read`'s buffer.
const POSITION_BYTES: usize = 8;

/// Room for an LMQ name read onto the stack: more than the longest valid name.
const NAME_BUFFER_BYTES: usize = MAX_LMQ_NAME_BYTES + 16;

/// `name`'s UTF-8 bytes, copied into `buffer` in one call and without allocating (a `String`
/// argument costs two calls and an allocation, a good part of a small read). A name too long for
/// the buffer comes back cut short but still longer than any LMQ name, so it finds no LMQ, as the
/// whole name would not.
fn name_bytes<'b>(env: &Env, name: &JsString, buffer: &'b mut [u8; NAME_BUFFER_BYTES]) -> Result<&'b [u8]> {
    let mut written = 0;
    check_status!(
        // SAFETY: a valid env on the JavaScript thread; the call writes at most `buffer.len()` bytes
        // (a terminating NUL included) into `buffer` and the count before the NUL into `written`.
        unsafe {
            sys::napi_get_value_string_utf8(
                env.raw(),
                name.value().value,
                buffer.as_mut_ptr().cast(),
                buffer.len(),
                &mut written,
            )
        },
        "reading the LMQ name"
    )?;
    Ok(&buffer[..written.min(buffer.len())])
}

#[napi(catch_unwind)]
pub fn log_max_offset(
    #[napi(ts_arg_type = "ExternalObject<'Log'>")] handle: &Handle,
    lmq: String,
) -> Result<f64> {
    guard_js(handle, || {
        handle
            .lock()
            .max_offset(lmq.as_bytes())
            .map(|o| o as f64)
            .map_err(js_error)
    })
}

#[napi(catch_unwind)]
pub fn log_min_offset(
    #[napi(ts_arg_type = "ExternalObject<'Log'>")] handle: &Handle,
    lmq: String,
) -> Result<f64> {
    guard_js(handle, || {
        handle
            .lock()
            .min_offset(lmq.as_bytes())
            .map(|o| o as f64)
            .map_err(js_error)
    })
}

/// -1 for an unknown LMQ.
#[napi(catch_unwind)]
pub fn log_last_write_timestamp(
    #[napi(ts_arg_type = "ExternalObject<'Log'>")] handle: &Handle,
    lmq: String,
) -> Result<f64> {
    guard_js(handle, || {
        let timestamp = handle
            .lock()
            .last_write_timestamp(lmq.as_bytes())
            .map_err(js_error)?;
        Ok(timestamp.map_or(-1.0, |t| t as f64))
    })
}

#[napi(catch_unwind)]
pub fn log_lmq_count(#[napi(ts_arg_type = "ExternalObject<'Log'>")] handle: &Handle) -> Result<f64> {
    guard_js(handle, || {
        handle.lock().lmq_count().map(|n| n as f64).map_err(js_error)
    })
}

#[napi(catch_unwind)]
pub fn log_write_position(#[napi(ts_arg_type = "ExternalObject<'Log'>")] handle: &Handle) -> Result<f64> {
    guard_js(handle, || {
        handle.lock().write_position().map(|p| p as f64).map_err(js_error)
    })
}

/// Whether a spare segment is ready for the next roll.
#[napi(catch_unwind)]
pub fn log_spare_ready(#[napi(ts_arg_type = "ExternalObject<'Log'>")] handle: &Handle) -> Result<bool> {
    guard_js(handle, || handle.lock().spare_ready().map_err(js_error))
}

/// One page of LMQ names.
#[napi(object)]
pub struct NativeLmqPage {
    pub names: Vec<String>,
    pub more: bool,
}

#[napi(catch_unwind)]
pub fn log_list_lmqs(
    #[napi(ts_arg_type = "ExternalObject<'Log'>")] handle: &Handle,
    prefix: String,
    limit: u32,
    after: Option<String>,
) -> Result<NativeLmqPage> {
    guard_js(handle, || {
        let page = {
            let mut log = handle.lock();
            // Held across the panic point, so the test also covers a panic that poisons the lock.
            panic_point("list_lmqs");
            log.list_lmqs(
                prefix.as_bytes(),
                after.as_deref().map(str::as_bytes),
                limit as usize,
            )
            .map_err(js_error)?
        };
        Ok(NativeLmqPage {
            names: page
                .names
                .iter()
                .map(|name| String::from_utf8_lossy(name).into_owned())
                .collect(),
            more: page.more,
        })
    })
}

/// Every LMQ under a prefix in one crossing: the names after the prefix, NUL-joined (NUL is in no
/// valid name), and per name its minimum offset, next offset and last store timestamp.
#[napi(object)]
pub struct NativeLmqSummaries {
    pub names: String,
    pub values: Float64Array,
}

#[napi(catch_unwind)]
pub fn log_lmq_summaries(
    #[napi(ts_arg_type = "ExternalObject<'Log'>")] handle: &Handle,
    prefix: String,
) -> Result<NativeLmqSummaries> {
    guard_js(handle, || {
        let summaries = handle.lock().lmq_summaries(prefix.as_bytes()).map_err(js_error)?;
        let mut names = Vec::with_capacity(summaries.iter().map(|s| s.name.len() + 1).sum());
        let mut values = Vec::with_capacity(3 * summaries.len());
        for (i, summary) in summaries.iter().enumerate() {
            if i > 0 {
                names.push(0);
            }
            names.extend_from_slice(&summary.name[prefix.len()..]);
            values.push(summary.min_offset as f64);
            values.push(summary.next_offset as f64);
            values.push(summary.last_write_ms as f64);
        }
        Ok(NativeLmqSummaries {
            names: String::from_utf8_lossy(&names).into_owned(),
            values: Float64Array::new(values),
        })
    })
}

/// `LogCorruption` of ts/engine/contract.ts.
#[napi(object)]
pub struct NativeLogCorruption {
    pub file: String,
    pub position: f64,
    pub message: String,
}

/// `LogRecoveryStats` of ts/engine/contract.ts.
#[napi(object)]
pub struct NativeLogRecovery {
    pub checkpoint: String,
    pub replayed_from: f64,
    pub replayed_records: f64,
    pub cut_position: f64,
    pub cut_bytes: f64,
    pub removed_segments: u32,
    pub removed_files: Vec<String>,
    pub corruption: Option<NativeLogCorruption>,
    pub read_only: bool,
    pub duration_ms: f64,
}

/// `LogCoreStats` of ts/engine/contract.ts.
#[napi(object)]
pub struct NativeLogStats {
    pub segments: u32,
    pub segment_bytes_on_disk: f64,
    pub write_position: f64,
    pub durable_position: f64,
    pub lmqs: f64,
    pub index_entries: f64,
    pub index_bytes: f64,
    pub files_open: u32,
    pub spare_ready: bool,
    pub recovery: NativeLogRecovery,
}

#[napi(catch_unwind)]
pub fn log_stats(#[napi(ts_arg_type = "ExternalObject<'Log'>")] handle: &Handle) -> Result<NativeLogStats> {
    guard_js(handle, || {
        let stats = handle.lock().stats().map_err(js_error)?;
        let recovery = stats.recovery;
        Ok(NativeLogStats {
            segments: stats.segments as u32,
            segment_bytes_on_disk: stats.segment_bytes_on_disk as f64,
            write_position: stats.write_position as f64,
            durable_position: stats.durable_position as f64,
            lmqs: stats.lmqs as f64,
            index_entries: stats.index_entries as f64,
            index_bytes: stats.index_bytes as f64,
            files_open: stats.files_open as u32,
            spare_ready: stats.spare_ready,
            recovery: NativeLogRecovery {
                checkpoint: recovery.checkpoint.as_str().to_string(),
                replayed_from: recovery.replayed_from as f64,
                replayed_records: recovery.replayed_records as f64,
                cut_position: recovery.cut_position.map_or(-1.0, |p| p as f64),
                cut_bytes: recovery.cut_bytes as f64,
                removed_segments: recovery.removed_segments,
                removed_files: recovery.removed_files,
                corruption: recovery.corruption.map(|c| NativeLogCorruption {
                    file: c.file,
                    position: c.position as f64,
                    message: c.message,
                }),
                read_only: recovery.read_only,
                duration_ms: recovery.duration_ms as f64,
            },
        })
    })
}
