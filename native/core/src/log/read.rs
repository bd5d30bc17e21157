//! Reads by LMQ: the index gives positions, the records are copied out of the mappings and checked
//! again (the reader's side of "assert on both sides of the disk"); a record that fails is never
//! returned.

use super::error::LogError;
use super::record::check_stored;
use super::segment::Segment;
use super::Log;

/// Records read from one LMQ.
#[derive(Debug, Default)]
pub struct ReadResult {
    /// The records as stored, back to back.
    pub bytes: Vec<u8>,
    /// The position of each record.
    pub positions: Vec<f64>,
    /// Offset of the first record (the LMQ's minimum when asked below it).
    pub first_offset: u64,
}

impl Log {
    /// Up to `max` records of `lmq` from offset `from`. An unknown LMQ or `from` at or past the end
    /// gives no records.
    pub fn read(&self, lmq: &[u8], from: u64, max: usize) -> Result<ReadResult, LogError> {
        self.usable()?;
        let Some(queue) = self.queues.get(lmq) else {
            return Ok(ReadResult {
                first_offset: from,
                ..ReadResult::default()
            });
        };
        let (first_offset, entries) = queue.range(from, max);
        let mut result = ReadResult {
            first_offset,
            ..ReadResult::default()
        };
        let mut segment: Option<&Segment> = None;
        for entry in entries {
            let inside = |s: &&Segment| s.base() <= entry.position && entry.position < s.end();
            if !segment.as_ref().is_some_and(inside) {
                segment = self.segment_at(entry.position);
            }
            let Some(found) = segment else {
                return Err(LogError::corrupt(
                    None,
                    Some(entry.position),
                    "an index entry points outside the log",
                ));
            };
            let start = (entry.position - found.base()) as usize;
            let rest = &found.bytes()[start..];
            let corrupt = |why: &str| {
                LogError::corrupt(Some(found.path.display().to_string()), Some(entry.position), why)
            };
            let layout = check_stored(rest).map_err(corrupt)?;
            if layout.size != entry.size {
                return Err(corrupt("record size differs from its index entry"));
            }
            result.bytes.extend_from_slice(&rest[..entry.size as usize]);
            result.positions.push(entry.position as f64);
        }
        Ok(result)
    }

    /// The segment holding `position`.
    fn segment_at(&self, position: u64) -> Option<&Segment> {
        let after = self.segments.partition_point(|s| s.base() <= position);
        let segment = self.segments.get(after.checked_sub(1)?)?;
        (position < segment.end()).then_some(segment)
    }
}
