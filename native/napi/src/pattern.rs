//! Single patterns: validation, compiled matchers and batched expansion.

use crate::dialect;
use crate::guard::guard_handle;
use litetopic_core::dialect::validate_lite_topic as core_validate_lite_topic;
use litetopic_core::{Pattern, Violation};
use napi::bindgen_prelude::{External, Uint32Array};
use napi::Result;
use napi_derive::napi;
use rustc_hash::FxHashSet;

/// A failed validation, as the js engine reports it.
#[napi(object)]
pub struct NativeViolation {
    pub code: String,
    pub reason: String,
    pub position: u32,
    pub message: String,
    pub limit: Option<u32>,
    pub actual: Option<u32>,
}

fn convert(violation: Violation) -> NativeViolation {
    NativeViolation {
        code: violation.code.as_str().to_string(),
        reason: violation.reason.as_str().to_string(),
        position: violation.position as u32,
        message: violation.message,
        limit: violation.limit.map(|n| n as u32),
        actual: violation.actual.map(|n| n as u32),
    }
}

/// Validates a pattern; `null` when valid.
#[napi(catch_unwind)]
pub fn validate_pattern(pattern: String, dialect_id: u32) -> Result<Option<NativeViolation>> {
    guard_handle(None, "pattern", || {
        Ok(dialect(dialect_id)?.validate_pattern(&pattern).err().map(convert))
    })
    .and_then(|result| result)
}

/// Validates a lite topic name against a byte limit; `null` when valid.
#[napi(catch_unwind)]
pub fn validate_lite_topic(name: String, max_bytes: u32) -> Result<Option<NativeViolation>> {
    guard_handle(None, "pattern", || {
        core_validate_lite_topic(&name, max_bytes as usize)
            .err()
            .map(convert)
    })
}

/// Whether `topic` matches `pattern`; invalid input never matches.
#[napi(catch_unwind)]
pub fn matches(pattern: String, topic: String, dialect_id: u32) -> Result<bool> {
    guard_handle(None, "pattern", || {
        Ok(Pattern::compile(&pattern, dialect(dialect_id)?).is_ok_and(|p| p.matches(&topic)))
    })
    .and_then(|result| result)
}

/// `expand` over NUL-joined patterns and candidates: the indexes of the candidates matched by any
/// valid pattern, in candidate order, each distinct candidate once. Returns `null` when the joined
/// candidates do not split into `candidate_count` parts (a candidate contained NUL), so the caller
/// can take its slower path.
#[napi(catch_unwind)]
pub fn expand_joined(
    patterns_joined: String,
    candidates_joined: String,
    candidate_count: u32,
    dialect_id: u32,
) -> Result<Option<Uint32Array>> {
    guard_handle(None, "pattern", || {
        let dialect = dialect(dialect_id)?;
        let candidates: Vec<&str> = candidates_joined.split('\0').collect();
        let expected = candidate_count as usize;
        if candidates.len() != expected && !(expected == 0 && candidates_joined.is_empty()) {
            return Ok(None);
        }
        let compiled: Vec<Pattern> = if patterns_joined.is_empty() {
            Vec::new()
        } else {
            patterns_joined
                .split('\0')
                .filter_map(|p| Pattern::compile(p, dialect).ok())
                .collect()
        };
        let mut seen = FxHashSet::default();
        let mut found = Vec::new();
        if expected > 0 && !compiled.is_empty() {
            for (i, candidate) in candidates.iter().enumerate() {
                if dialect.is_valid_topic(candidate)
                    && compiled.iter().any(|p| p.matches(candidate))
                    && seen.insert(*candidate)
                {
                    found.push(i as u32);
                }
            }
        }
        Ok(Some(Uint32Array::new(found)))
    })
    .and_then(|result| result)
}

/// Compiles `pattern` into a handle kept alive on the native side (an `External`, for the reason
/// given in `pattern_index.rs`); throws if it is invalid (the caller validates first for a typed error).
#[napi(catch_unwind, ts_return_type = "ExternalObject<'Matcher'>")]
pub fn matcher_new(pattern: String, dialect_id: u32) -> Result<External<Pattern>> {
    guard_handle(None, "matcher", || {
        let pattern = Pattern::compile(&pattern, dialect(dialect_id)?)
            .map_err(|v| napi::Error::new(napi::Status::InvalidArg, v.message))?;
        Ok(External::new(pattern))
    })
    .and_then(|result| result)
}

#[napi(catch_unwind)]
pub fn matcher_matches(
    #[napi(ts_arg_type = "ExternalObject<'Matcher'>")] handle: &External<Pattern>,
    topic: String,
) -> Result<bool> {
    guard_handle(None, "matcher", || handle.matches(&topic))
}
