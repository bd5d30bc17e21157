//! The power-loss sweep: the scenario of faults.rs runs on a storage that records what each call
//! made durable (power_model.rs), and is cut by a power loss at each of its I/O calls in turn. From
//! there on every call fails; the directory is then replaced by what a power loss could leave on
//! disk, in several ways, and reopened with real storage against the model of acknowledged records.

use super::faults::{assert_no_failing_cases, run_scenario, run_scenario_kind, sweep_dir, verify, Scenario};
use super::power_model::{materialize, Loss, PowerStorage, LOSSES};
use super::*;

/// Runs `scenario` with the power lost at call `n`; the problems found, one per kind of loss
/// of `losses`.
fn power_case(scenario: Scenario, n: usize, losses: &[Loss]) -> Vec<String> {
    let dir = sweep_dir();
    let storage = Arc::new(PowerStorage::new(n, &dir.0));
    let model = run_scenario_kind(scenario, &dir.0, storage.clone());
    let Some(disk) = storage.crashed() else {
        return Vec::new();
    };
    losses
        .iter()
        .filter_map(|&loss| {
            let image = materialize(&dir.0, &disk.after(loss));
            verify(&image.0, &model)
                .err()
                .map(|why| format!("{scenario:?}, power lost at call {n}, {loss:?}: {why}"))
        })
        .collect()
}

fn sweep(scenario: Scenario, losses: &[Loss]) {
    let calls = {
        let dir = sweep_dir();
        let storage = Arc::new(PowerStorage::new(0, &dir.0));
        let model = run_scenario_kind(scenario, &dir.0, storage.clone());
        verify(&dir.0, &model).expect("the scenario without a power loss");
        storage.calls()
    };
    let problems: Vec<String> = (1..=calls)
        .flat_map(|n| power_case(scenario, n, losses))
        .collect();
    assert_no_failing_cases(&problems);
}

#[test]
fn the_power_model_without_a_crash_matches_the_disk() {
    let dir = sweep_dir();
    let storage = Arc::new(PowerStorage::new(0, &dir.0));
    let model = run_scenario(&dir.0, storage.clone());
    assert!(storage.calls() > 50);
    verify(&dir.0, &model).expect("verify");
}

#[test]
fn no_power_loss_loses_an_acknowledged_record_or_returns_a_bad_one() {
    sweep(Scenario::Whole, &LOSSES);
}

/// The losses that keep every directory change: they leave out what the test below finds.
#[test]
fn no_power_loss_keeping_directory_changes_after_a_crash_loses_an_acknowledged_record() {
    let losses: Vec<Loss> = LOSSES
        .iter()
        .copied()
        .filter(|l| l.entries == usize::MAX)
        .collect();
    sweep(Scenario::AfterCrash, &losses);
}

/// Recovery cuts the torn record at the end of the log: it removes the spare segment after it,
/// truncates the cut segment to the cut and extends it back (recovery.rs `cut`), with no directory
/// sync between. A power loss that keeps the truncation but not the removal (call 15, the
/// extension, never made; no order between the two is promised without a sync) leaves a short
/// segment followed by another, and the next open fails with "segment header disagrees with its
/// file". So recovery makes the removal of the later segments durable (`sync_dir`) before it
/// truncates the cut segment.
#[test]
fn no_power_loss_after_a_crash_loses_an_acknowledged_record_or_returns_a_bad_one() {
    sweep(Scenario::AfterCrash, &LOSSES);
}

/// A repair cuts the log at a corrupt record and removes the segment files after it; records
/// appended after the cut fill its segment, are synced (acknowledged) and complete it with an end
/// marker; the power goes before the next segment is
/// created (whose directory sync would have made the removal durable). The removed segment comes
/// back, and the next open replays its old records after the complete segment: their offsets are
/// ahead of the LMQ's, which restarts there, and the acknowledged records are lost from it.
/// So recovery syncs the segment directory after removing the later segments (docs/FORMAT.md,
/// "Recovery", step 4).
#[test]
fn a_segment_removed_by_a_cut_does_not_come_back_after_a_power_loss() {
    let dir = sweep_dir();
    let log = open(&dir.0);
    let written = append_all(
        &log,
        &(0..40)
            .map(|i| message(&["q"], &[i as u8; 300]))
            .collect::<Vec<_>>(),
        1,
    );
    log.close().expect("close");
    // A corrupt record in the middle of the second segment; the third holds records after it.
    let (corrupt_at, _) = written
        .iter()
        .filter(|(position, _)| position / SMALL_SEGMENT_BYTES == 1)
        .nth(3)
        .expect("a record in the second segment");
    assert!(written
        .iter()
        .any(|(position, _)| position / SMALL_SEGMENT_BYTES == 2));
    let segment = dir
        .0
        .join("segments")
        .join(crate::log::segment::segment_file_name(SMALL_SEGMENT_BYTES));
    let mut bytes = std::fs::read(&segment).expect("read");
    bytes[(corrupt_at % SMALL_SEGMENT_BYTES) as usize + 40] ^= 0x10;
    std::fs::write(&segment, bytes).expect("write");

    // Damage with valid records after it: a plain open refuses it, a repair cuts it.
    let storage = Arc::new(PowerStorage::new(0, &dir.0));
    let log = LogHandle::open(
        &dir.0,
        LogOptions {
            repair: true,
            ..LogOptions::new(SMALL_SEGMENT_BYTES, 1)
        },
        storage.clone(),
    )
    .expect("open with repair");
    let cut = log.lock().stats().expect("stats").recovery;
    assert!(cut.removed_segments >= 1);
    // Fill the cut segment without a spare: the append stops at its end, writing the end marker.
    // Larger records than before, so that fewer fit and the old records after the cut do not
    // happen to continue them.
    let more: Vec<Vec<u8>> = (0..20).map(|i| message(&["q"], &[100 + i as u8; 600])).collect();
    let mut batch = more.concat();
    let (mut positions, mut offsets) = (vec![0.0; more.len()], vec![0.0; more.len()]);
    let done = log
        .lock()
        .append(&mut batch, more.len(), 2, &mut positions, &mut offsets)
        .expect("append");
    assert!(done < more.len());
    log.sync().expect("sync");
    let acked: Vec<u64> = offsets[..done].iter().map(|&o| o as u64).collect();
    storage.cut_power();
    drop(log);

    let disk = storage.crashed().expect("crashed");
    let image = materialize(&dir.0, &disk.after(LOSSES[0]));
    let log = open(&image.0);
    let offsets: Vec<u64> = read_all(&log, "q").iter().map(|r| r.0).collect();
    for offset in acked {
        assert!(
            offsets.contains(&offset),
            "acknowledged offset {offset} lost: {offsets:?}"
        );
    }
}
