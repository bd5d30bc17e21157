//! Random sequences of appends, deletions, retention and reopenings against a plain model: a map of
//! LMQ name to its list of bodies and its offsets.

use super::*;
use crate::test_rng::Rng;
use std::collections::BTreeMap;

#[derive(Default, Debug)]
struct ModelQueue {
    min: u64,
    /// (position, body) of each offset from `min`.
    records: Vec<(u64, Vec<u8>)>,
}

#[test]
fn random_operations_match_the_model() {
    for seed in 1..=12u64 {
        run(seed);
    }
}

fn run(seed: u64) {
    let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15));
    let dir = TempDir::new();
    let mut log = open(&dir.0);
    let mut model: BTreeMap<String, ModelQueue> = BTreeMap::new();
    let names = ["a", "b", "c", "d/1", "d/2"];
    for step in 0..120 {
        match rng.below(10) {
            0..=5 => {
                let records: Vec<(Vec<&str>, Vec<u8>)> = (0..1 + rng.below(8))
                    .map(|_| {
                        let lmqs = (0..1 + rng.below(3))
                            .map(|_| names[rng.below(names.len())])
                            .collect();
                        (lmqs, vec![step as u8; rng.below(700)])
                    })
                    .collect();
                let encoded: Vec<Vec<u8>> = records.iter().map(|(l, b)| message(l, b)).collect();
                let written = append_all(&log, &encoded, 1_000 + step);
                for ((lmqs, body), (position, offsets)) in records.iter().zip(written) {
                    for (lmq, offset) in lmqs.iter().zip(offsets) {
                        let queue = model.entry(lmq.to_string()).or_default();
                        assert_eq!(
                            offset,
                            queue.min + queue.records.len() as u64,
                            "seed {seed} step {step}"
                        );
                        queue.records.push((position, body.clone()));
                    }
                }
            }
            6 => {
                let name = names[rng.below(names.len())];
                append_all(&log, &[deletion(name)], 1_000 + step);
                model.remove(name);
            }
            7 => {
                let keep = 4096 * (1 + rng.below(6) as u64);
                log.retain(None, Some(keep)).expect("retain");
                let first = log.lock().segments.front().map(|s| s.base()).expect("segment");
                for queue in model.values_mut() {
                    let gone = queue.records.iter().take_while(|r| r.0 < first).count();
                    queue.records.drain(..gone);
                    queue.min += gone as u64;
                }
            }
            8 => {
                if rng.below(2) == 0 {
                    log.checkpoint(1).expect("checkpoint");
                }
                log.close().expect("close");
                log = open(&dir.0);
            }
            _ => {
                log.sync().expect("sync");
            }
        }
        check(&log, &model, seed, step);
    }
}

fn check(log: &LogHandle, model: &BTreeMap<String, ModelQueue>, seed: u64, step: u64) {
    let context = format!("seed {seed} step {step}");
    assert_eq!(log.lock().lmq_count(), Ok(model.len()), "{context}");
    for (name, queue) in model {
        let guard = log.lock();
        assert_eq!(
            guard.min_offset(name.as_bytes()),
            Ok(queue.min),
            "{context} {name}"
        );
        assert_eq!(
            guard.max_offset(name.as_bytes()),
            Ok(queue.min + queue.records.len() as u64),
            "{context} {name}"
        );
        drop(guard);
        let read: Vec<(u64, Vec<u8>)> = read_all(log, name).into_iter().map(|(_, p, b)| (p, b)).collect();
        assert_eq!(read, queue.records, "{context} {name}");
    }
}
