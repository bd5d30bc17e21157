//! The fault sweep: a scenario of appends to several LMQs (records of several LMQs, and body-only
//! batches) over several small segments (so segments roll and spares are prepared), syncs, an LMQ deletion, a checkpoint and retention is run once to
//! count its I/O calls, then once per call with that call failing (`CountingStorage`), going on as
//! a user would. After each run the directory is reopened with real storage and checked against a
//! model of what was acknowledged: an append is acknowledged once a later `sync` succeeded.
//! power.rs runs the same scenario under a power-loss model.

use super::*;
use crate::log::record::RecordBuilder;
use crate::log::storage::{CountingStorage, Fault};
use crate::log::BodyBatch;
use std::collections::{BTreeMap, HashSet};

/// Where sweep directories go: a memory file system where there is one, so that the thousands of
/// syncs of a sweep cost nothing.
pub fn sweep_dir() -> TempDir {
    let shm = Path::new("/dev/shm");
    let dir = TempDir::new();
    if shm.is_dir() {
        let name = dir.0.file_name().map(|n| n.to_owned()).unwrap_or_default();
        let path = shm.join(name);
        let _ = std::fs::remove_dir_all(&path);
        // The TempDir under the temporary directory was never created; this one replaces it.
        return TempDir(path);
    }
    dir
}

/// One LMQ as the scenario believes it to be.
#[derive(Clone, Debug, Default)]
pub struct LmqModel {
    /// Bumped by each deletion: records of an older generation were deleted with their LMQ.
    generation: u32,
    next: u64,
    /// Records of the batch being encoded that go before the next one: its offset is after theirs.
    planned: u64,
    /// Written in this generation, not yet acknowledged: (offset, body).
    unacked: Vec<(u64, Vec<u8>)>,
    /// Acknowledged in this generation: (offset, body).
    acked: Vec<(u64, Vec<u8>)>,
    /// Offsets below this may have gone to retention.
    floor: u64,
}

/// What the scenario appended and what of it was acknowledged.
#[derive(Default)]
pub struct Model {
    lmqs: BTreeMap<String, LmqModel>,
    /// The LMQ as it was before a deletion that is not acknowledged yet: after a failure either
    /// state may be the one on disk.
    before_deletion: BTreeMap<String, LmqModel>,
    /// Every (LMQ, body) an append was asked to store: whatever a read returns must be one of them.
    appended: HashSet<(String, Vec<u8>)>,
    n: u64,
    /// Records written by `append_bodies`.
    bodies_written: usize,
    /// What was wrong with what the log returned before it was closed, if anything.
    live_problem: Option<String>,
}

impl Model {
    /// A record to `lmqs` whose body names its number and, for each LMQ, the generation and the
    /// offset it should get; padded to a size that varies with the number.
    fn record(&mut self, lmqs: &[&str]) -> Vec<u8> {
        let body = self.body(lmqs);
        RecordBuilder {
            kind: crate::log::record::TYPE_MESSAGE,
            lmqs: lmqs.iter().map(|l| l.as_bytes()).collect(),
            body: &body,
            born_timestamp_ms: 5,
            ..RecordBuilder::default()
        }
        .encode()
    }

    /// The body of [`record`](Self::record), noted as appended to each of `lmqs`.
    fn body(&mut self, lmqs: &[&str]) -> Vec<u8> {
        self.n += 1;
        let mut body = format!("n{}|", self.n);
        for lmq in lmqs {
            let state = self.lmqs.entry((*lmq).to_owned()).or_default();
            body.push_str(&format!(
                "{lmq}:{}:{};",
                state.generation,
                state.next + state.planned
            ));
            state.planned += 1;
        }
        body.push('|');
        let size = 40 + (self.n * 97 % 360) as usize;
        while body.len() < size {
            body.push((b'a' + (body.len() % 26) as u8) as char);
        }
        for lmq in lmqs {
            self.appended
                .insert(((*lmq).to_owned(), body.clone().into_bytes()));
        }
        body.into_bytes()
    }

    /// The record was written: its LMQs move on.
    fn written(&mut self, lmqs: &[&str], record: &[u8]) {
        self.written_body(lmqs, record_body(record));
    }

    /// A record of `body` was written to `lmqs`: they move on.
    fn written_body(&mut self, lmqs: &[&str], body: &[u8]) {
        let body = body.to_vec();
        for lmq in lmqs {
            let state = self.lmqs.entry((*lmq).to_owned()).or_default();
            state.unacked.push((state.next, body.clone()));
            state.next += 1;
        }
    }

    /// A deletion of `lmq` was written.
    fn deleted(&mut self, lmq: &str) {
        let state = self.lmqs.entry(lmq.to_owned()).or_default();
        self.before_deletion.insert(lmq.to_owned(), state.clone());
        *state = LmqModel {
            generation: state.generation + 1,
            ..LmqModel::default()
        };
    }

    /// A sync succeeded: everything written is acknowledged.
    fn synced(&mut self) {
        for state in self.lmqs.values_mut() {
            let unacked = std::mem::take(&mut state.unacked);
            state.acked.extend(unacked);
        }
        self.before_deletion.clear();
    }
}

/// The body of a record built by [`Model::record`].
fn record_body(record: &[u8]) -> &[u8] {
    let n = usize::from(u16::from_le_bytes([record[14], record[15]]));
    let mut at = 32 + 8 * n;
    for _ in 0..n {
        at += 2 + usize::from(u16::from_le_bytes([record[at], record[at + 1]]));
    }
    at += 2 + 2 + 2 + 4;
    &record[at..]
}

/// Appends `records` (each to its LMQs) as one batch, preparing a segment when the active one is
/// full, as ts/log.ts does; the records after a failed preparation are given up. Errors are the
/// user's to see; the scenario goes on.
fn append(log: &LogHandle, model: &mut Model, records: &[&[&str]]) {
    let encoded: Vec<Vec<u8>> = records.iter().map(|lmqs| model.record(lmqs)).collect();
    for state in model.lmqs.values_mut() {
        state.planned = 0;
    }
    let mut from = 0;
    while from < encoded.len() {
        let mut batch = encoded[from..].concat();
        let count = encoded.len() - from;
        let slots: usize = records[from..].iter().map(|l| l.len()).sum();
        let (mut positions, mut offsets) = (vec![0.0; count], vec![0.0; slots]);
        let Ok(done) = log
            .lock()
            .append(&mut batch, count, 1_000, &mut positions, &mut offsets)
        else {
            return;
        };
        for k in from..from + done {
            model.written(records[k], &encoded[k]);
        }
        from += done;
        if from < encoded.len() && log.prepare_segment(1).is_err() {
            return;
        }
    }
}

/// Appends one record of one LMQ for each of `lmqs`, body only (`append_bodies`, the form a
/// producer of many small messages uses), preparing a segment when the active one is full as
/// [`append`] does.
fn append_bodies(log: &LogHandle, model: &mut Model, lmqs: &[&str]) {
    let bodies: Vec<Vec<u8>> = lmqs.iter().map(|lmq| model.body(&[lmq])).collect();
    for state in model.lmqs.values_mut() {
        state.planned = 0;
    }
    let names: Vec<&[u8]> = lmqs.iter().map(|l| l.as_bytes()).collect();
    let Ok(first) = log.lock().register_lmqs(&names) else {
        return;
    };
    let handles: Vec<u32> = (first..first + lmqs.len() as u32).collect();
    let mut end = 0u32;
    let body_ends: Vec<u32> = bodies
        .iter()
        .map(|body| {
            end += body.len() as u32;
            end
        })
        .collect();
    let joined = bodies.concat();
    let (mut positions, mut offsets) = (vec![0.0; lmqs.len()], vec![0.0; lmqs.len()]);
    let mut from = 0;
    while from < lmqs.len() {
        let batch = BodyBatch {
            handles: &handles,
            bodies: &joined,
            body_ends: &body_ends,
        };
        let Ok(done) = log
            .lock()
            .append_bodies(batch, from..lmqs.len(), 1_000, &mut positions, &mut offsets)
        else {
            return;
        };
        for k in from..done {
            model.written_body(&[lmqs[k]], &bodies[k]);
        }
        model.bodies_written += done - from;
        from = done;
        if from < lmqs.len() && log.prepare_segment(1).is_err() {
            return;
        }
    }
}

fn delete(log: &LogHandle, model: &mut Model, lmq: &str) {
    let mut batch = deletion(lmq);
    let (mut positions, mut offsets) = (vec![0.0], vec![0.0]);
    if log
        .lock()
        .append(&mut batch, 1, 1_000, &mut positions, &mut offsets)
        .is_ok_and(|done| done == 1)
    {
        model.deleted(lmq);
    }
}

fn sync(log: &LogHandle, model: &mut Model) {
    if log.sync().is_ok() {
        model.synced();
    }
}

/// Which scenario a sweep runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scenario {
    /// From an empty directory, all 20 rounds on the storage under test.
    Whole,
    /// The first 10 rounds on real storage, left as a killed process leaves them with a torn
    /// record at the end; then the storage under test reopens the log (recovery cuts the torn
    /// record and removes the spare after it) and runs the last 10 rounds.
    AfterCrash,
}

/// Rounds `rounds` of the scenario on `log`.
fn play(log: &LogHandle, model: &mut Model, rounds: std::ops::Range<usize>) {
    let shapes: [&[&[&str]]; 3] = [
        &[&["a"], &["b"], &["a", "c"], &["c"], &["b", "a"]],
        &[&["c"], &["a"], &["a"], &["b"]],
        &[&["b", "c"], &["a"], &["c"], &["c"], &["a"], &["b"]],
    ];
    for round in rounds {
        append(log, model, shapes[round % shapes.len()]);
        if round % 4 == 3 {
            append_bodies(log, model, &["a", "c", "a", "b", "c"]);
        }
        if !log.lock().spare_ready().unwrap_or(true) {
            let _ = log.prepare_segment(1);
        }
        match round {
            4 => delete(log, model, "b"),
            12 => delete(log, model, "c"),
            6 | 14 => {
                let _ = log.checkpoint(2_000);
            }
            8 | 16 => {
                let _ = log.retain(None, Some(3 * SMALL_SEGMENT_BYTES));
                for (name, state) in &mut model.lmqs {
                    if let Ok(min) = log.lock().min_offset(name.as_bytes()) {
                        state.floor = state.floor.max(min);
                    }
                }
            }
            _ => {}
        }
        if round % 3 != 1 {
            sync(log, model);
        }
    }
}

/// The first half of [`Scenario::AfterCrash`], on real storage: the log is dropped without a
/// close (the lock goes, as the next process would replace it) and a record is left torn after
/// the last one.
fn crashed_half(dir: &Path) -> Model {
    let mut model = Model::default();
    let log = open(dir);
    play(&log, &mut model, 0..10);
    sync(&log, &mut model);
    let position = log.lock().write_position().expect("position");
    drop(log);
    std::fs::remove_file(dir.join("LOCK")).expect("unlock");
    let base = position / SMALL_SEGMENT_BYTES * SMALL_SEGMENT_BYTES;
    let torn = model.record(&["a"]);
    for state in model.lmqs.values_mut() {
        state.planned = 0;
    }
    let length = torn.len().min((base + SMALL_SEGMENT_BYTES - position) as usize) / 2;
    let segment = dir
        .join("segments")
        .join(crate::log::segment::segment_file_name(base));
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(segment)
        .expect("segment");
    std::os::unix::fs::FileExt::write_all_at(&file, &torn[..length], position - base).expect("tear");
    model
}

/// The scenario on a log opened with `storage` in `dir`. Returns the model of what it did.
pub fn run_scenario_kind(scenario: Scenario, dir: &Path, storage: Arc<dyn Storage>) -> Model {
    let (mut model, rounds) = match scenario {
        Scenario::Whole => (Model::default(), 0..20),
        Scenario::AfterCrash => (crashed_half(dir), 10..20),
    };
    let Ok(log) = open_with(dir, storage) else {
        return model;
    };
    play(&log, &mut model, rounds);
    sync(&log, &mut model);
    // A log that still works must return what the reopened one must.
    if log.lock().lmq_count().is_ok() {
        model.live_problem = check_log(&log, &model).err();
    }
    let _ = log.close();
    model
}

/// [`Scenario::Whole`].
pub fn run_scenario(dir: &Path, storage: Arc<dyn Storage>) -> Model {
    run_scenario_kind(Scenario::Whole, dir, storage)
}

/// Every record of `lmq` from its minimum: (offset, record body).
fn read_records(log: &LogHandle, lmq: &str) -> Result<Vec<(u64, Vec<u8>)>, LogError> {
    let result = log.lock().read(lmq.as_bytes(), 0, usize::MAX)?;
    let mut out = Vec::new();
    let mut at = 0;
    for i in 0..result.positions.len() {
        let size = u32::from_le_bytes(result.bytes[at + 4..at + 8].try_into().expect("size")) as usize;
        out.push((
            result.first_offset + i as u64,
            record_body(&result.bytes[at..at + size]).to_vec(),
        ));
        at += size;
    }
    Ok(out)
}

/// The generation and offset a body says it has in `lmq`.
fn claimed(body: &[u8], lmq: &str) -> Option<(u32, u64)> {
    let text = std::str::from_utf8(body).ok()?;
    let names = text.split('|').nth(1)?;
    names.split(';').find_map(|part| {
        let mut fields = part.split(':');
        (fields.next()? == lmq).then_some(())?;
        Some((fields.next()?.parse().ok()?, fields.next()?.parse().ok()?))
    })
}

/// Whether `records` (as read) hold every acknowledged record of `state` at or above its floor,
/// byte for byte, and the LMQ has not gone back behind them.
fn holds(state: &LmqModel, records: &[(u64, Vec<u8>)], next: u64) -> Result<(), String> {
    for (offset, body) in state.acked.iter().filter(|(o, _)| *o >= state.floor) {
        match records.iter().find(|(o, _)| o == offset) {
            Some((_, read)) if read == body => {}
            Some(_) => return Err(format!("acknowledged offset {offset} reads back different bytes")),
            None => return Err(format!("acknowledged offset {offset} is missing")),
        }
    }
    let acked_next = state.acked.last().map_or(0, |(o, _)| o + 1);
    if next < acked_next {
        return Err(format!(
            "next offset {next} went back behind acknowledged {acked_next}"
        ));
    }
    Ok(())
}

/// Reopens `dir` with real storage and checks it against `model`: every acknowledged record is
/// there and byte-identical, every record read is one that was appended, at the offset it was
/// given, and the log takes a new append.
pub fn verify(dir: &Path, model: &Model) -> Result<(), String> {
    if let Some(problem) = &model.live_problem {
        return Err(format!("before the reopen: {problem}"));
    }
    let _ = std::fs::remove_file(dir.join("LOCK"));
    let log = open_with(dir, Arc::new(RealStorage)).map_err(|e| format!("reopen failed: {e:?}"))?;
    check_log(&log, model)?;
    let mut after = message(&["after"], b"after a reopen");
    let (mut positions, mut offsets) = (vec![0.0], vec![0.0]);
    log.lock()
        .append(&mut after, 1, 3_000, &mut positions, &mut offsets)
        .map_err(|e| format!("append after reopen failed: {e:?}"))?;
    log.sync()
        .map_err(|e| format!("sync after reopen failed: {e:?}"))?;
    log.close()
        .map_err(|e| format!("close after reopen failed: {e:?}"))?;
    Ok(())
}

/// Checks what `log` returns against `model`.
fn check_log(log: &LogHandle, model: &Model) -> Result<(), String> {
    let mut names: Vec<String> = model.lmqs.keys().cloned().collect();
    let listed = log
        .lock()
        .list_lmqs(b"", None, usize::MAX)
        .map_err(|e| format!("listing failed: {e:?}"))?;
    for name in listed.names {
        let name = String::from_utf8_lossy(&name).into_owned();
        // `after` is what an earlier check appended.
        if !model.lmqs.contains_key(&name) && name != "after" {
            return Err(format!("LMQ {name:?} was never appended to"));
        }
    }
    names.sort();
    for lmq in &names {
        let records = read_records(log, lmq).map_err(|e| format!("{lmq}: read failed: {e:?}"))?;
        let next = log
            .lock()
            .max_offset(lmq.as_bytes())
            .map_err(|e| format!("{e:?}"))?;
        let mut generations = HashSet::new();
        for (offset, body) in &records {
            if !model.appended.contains(&(lmq.clone(), body.clone())) {
                return Err(format!("{lmq}: offset {offset} holds a record never appended"));
            }
            match claimed(body, lmq) {
                Some((generation, at)) if at == *offset => {
                    generations.insert(generation);
                }
                _ => return Err(format!("{lmq}: offset {offset} holds a record of another offset")),
            }
        }
        if generations.len() > 1 {
            return Err(format!("{lmq}: records of generations {generations:?} mixed"));
        }
        let current = &model.lmqs[lmq];
        let checked = holds(current, &records, next);
        // A deletion not acknowledged may or may not have reached the disk.
        let checked = match (checked, model.before_deletion.get(lmq)) {
            (Err(why), Some(before)) => holds(before, &records, next).map_err(|_| why),
            (result, _) => result,
        };
        checked.map_err(|why| format!("{lmq}: {why}"))?;
    }
    Ok(())
}

/// Runs `scenario` failing call `n` as `fault` says; the problem found, if any.
fn sweep_case(scenario: Scenario, n: usize, fault: Fault, persistent: bool) -> Option<String> {
    let dir = sweep_dir();
    let storage = Arc::new(CountingStorage::new(n, fault, persistent));
    let model = run_scenario_kind(scenario, &dir.0, storage.clone());
    let kind = storage.kind(n).unwrap_or("none");
    verify(&dir.0, &model)
        .err()
        .map(|why| format!("{scenario:?}, call {n} ({kind}, {fault:?}, persistent {persistent}): {why}"))
}

/// The calls of an unfaulted run of `scenario` and their kinds.
pub fn count_calls(scenario: Scenario) -> CountingStorage {
    let dir = sweep_dir();
    let storage = Arc::new(CountingStorage::new(0, Fault::Fail, false));
    let model = run_scenario_kind(scenario, &dir.0, storage.clone());
    verify(&dir.0, &model).expect("the unfaulted scenario");
    Arc::try_unwrap(storage).expect("the log is gone")
}

#[test]
fn the_unfaulted_scenario_rolls_segments_and_acknowledges_records() {
    let dir = sweep_dir();
    let model = run_scenario(&dir.0, Arc::new(RealStorage));
    let acked: usize = model.lmqs.values().map(|s| s.acked.len()).sum();
    assert!(acked > 40, "{acked}");
    assert!(model.bodies_written >= 20, "{}", model.bodies_written);
    assert_eq!(model.lmqs["b"].generation, 1, "b was deleted");
    assert_eq!(model.lmqs["c"].generation, 1, "c was deleted");
    assert!(
        model.lmqs.values().any(|s| s.floor > 0),
        "retention removed records"
    );
    verify(&dir.0, &model).expect("verify");
    let storage = count_calls(Scenario::Whole);
    let kinds: HashSet<&str> = (1..=storage.calls()).filter_map(|n| storage.kind(n)).collect();
    for kind in [
        "create_new",
        "create",
        "set_len",
        "write_at",
        "sync",
        "sync_map",
        "rename",
        "remove",
        "sync_dir",
    ] {
        assert!(kinds.contains(kind), "the scenario makes no {kind} call");
    }
}

#[test]
fn the_scenario_after_a_crash_starts_with_a_cut() {
    let dir = sweep_dir();
    let model = run_scenario_kind(Scenario::AfterCrash, &dir.0, Arc::new(RealStorage));
    assert!(model.lmqs.values().map(|s| s.acked.len()).sum::<usize>() > 40);
    verify(&dir.0, &model).expect("verify");
    let dir = sweep_dir();
    crashed_half(&dir.0);
    let log = open(&dir.0);
    let recovery = log.lock().stats().expect("stats").recovery;
    assert!(recovery.cut_position.is_some(), "{recovery:?}");
    assert_eq!(recovery.removed_segments, 1, "the spare after the cut");
}

/// Fails with every failing case of a sweep listed, so one run shows them all.
pub fn assert_no_failing_cases(problems: &[String]) {
    assert!(
        problems.is_empty(),
        "{} failing cases:\n{}",
        problems.len(),
        problems.join("\n")
    );
}

fn sweep_single(scenario: Scenario) {
    let calls = count_calls(scenario);
    let mut problems = Vec::new();
    for n in 1..=calls.calls() + 1 {
        problems.extend(sweep_case(scenario, n, Fault::Fail, false));
        if calls.kind(n) == Some("write_at") {
            problems.extend(sweep_case(scenario, n, Fault::Tear, false));
        }
    }
    assert_no_failing_cases(&problems);
}

fn sweep_persistent(scenario: Scenario) {
    let calls = count_calls(scenario);
    let mut problems = Vec::new();
    for n in 1..=calls.calls() + 1 {
        let fault = if calls.kind(n) == Some("write_at") {
            Fault::Tear
        } else {
            Fault::Fail
        };
        problems.extend(sweep_case(scenario, n, fault, true));
    }
    assert_no_failing_cases(&problems);
}

#[test]
fn no_single_failed_call_loses_an_acknowledged_record_or_returns_a_bad_one() {
    sweep_single(Scenario::Whole);
}

#[test]
fn no_disk_that_fails_for_good_loses_an_acknowledged_record_or_returns_a_bad_one() {
    sweep_persistent(Scenario::Whole);
}

#[test]
fn no_single_failed_call_after_a_crash_loses_an_acknowledged_record_or_returns_a_bad_one() {
    sweep_single(Scenario::AfterCrash);
}

#[test]
fn no_disk_that_fails_for_good_after_a_crash_loses_an_acknowledged_record_or_returns_a_bad_one() {
    sweep_persistent(Scenario::AfterCrash);
}

/// Two retentions, the first one's removal of its oldest segment failing (call `fail_at`; 0 fails
/// none); returns the calls made before the first retention and the directory.
fn retire_twice(fail_at: usize) -> (usize, TempDir) {
    let dir = sweep_dir();
    let storage = Arc::new(CountingStorage::new(fail_at, Fault::Fail, false));
    let log = open_with(&dir.0, storage.clone()).expect("open");
    let records = |from: usize| {
        (from..from + 40)
            .map(|i| message(&["q"], &[i as u8; 300]))
            .collect::<Vec<_>>()
    };
    append_all(&log, &records(0), 1);
    let before = storage.calls();
    let first = log.retain(None, Some(2 * SMALL_SEGMENT_BYTES));
    assert_eq!(first.is_err(), fail_at != 0);
    append_all(&log, &records(40), 1);
    log.retain(None, Some(2 * SMALL_SEGMENT_BYTES)).expect("retain");
    log.close().expect("close");
    (before, dir)
}

#[test]
fn a_retention_whose_removal_failed_leaves_no_gap_for_the_next_one_to_make() {
    let (before, _) = retire_twice(0);
    // The first counted call of the first retention is its first removal.
    let (_, dir) = retire_twice(before + 1);
    let log = open(&dir.0);
    let records = read_all(&log, "q");
    assert_eq!(records.last().map(|r| r.0), Some(79));
    assert_eq!(log.lock().max_offset(b"q"), Ok(80));
}

#[test]
fn a_file_left_where_the_next_segment_goes_is_replaced() {
    let dir = sweep_dir();
    let log = open(&dir.0);
    // What a preparation whose removal of its half-made file failed leaves behind.
    let next = dir
        .0
        .join("segments")
        .join(crate::log::segment::segment_file_name(SMALL_SEGMENT_BYTES));
    std::fs::write(&next, b"").expect("leftover");
    log.prepare_segment(1).expect("prepare");
    let records: Vec<Vec<u8>> = (0..30).map(|i| message(&["q"], &[i as u8; 300])).collect();
    append_all(&log, &records, 1);
    assert_eq!(read_all(&log, "q").len(), 30);
}
