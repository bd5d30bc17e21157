//! Any bytes as the rest of a segment: the record check must return a layout or a reason, never
//! panic, and a layout it accepts must fit the bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use litetopic_core::log::record::{check_stored, lmq_names};

fuzz_target!(|bytes: &[u8]| {
    if let Ok(layout) = check_stored(bytes) {
        let record = &bytes[..layout.size as usize];
        assert_eq!(lmq_names(record, &layout).count(), usize::from(layout.lmq_count));
    }
});
