//! Splitting a topic into the byte ranges of its segments, for a lookup in the pattern index.

/// A topic segment whose id the lookup has not needed yet.
pub(super) const UNRESOLVED: u32 = u32::MAX - 1;

/// One segment of the topic being looked up: its byte range, and its segment id once a node needed
/// it.
#[derive(Clone, Copy, Debug)]
pub(super) struct TopicSegment {
    pub(super) start: u32,
    pub(super) end: u32,
    /// The interned id, `NONE` when no pattern has this segment, `UNRESOLVED` until looked up.
    pub(super) id: u32,
}

/// Whether `text` starts with `prefix`, compared byte by byte: a separator is one or two bytes,
/// shorter than what a call to `memcmp` is worth.
#[inline]
fn starts_with_bytes(text: &[u8], prefix: &[u8]) -> bool {
    text.len() >= prefix.len() && text.iter().zip(prefix).all(|(a, b)| a == b)
}

/// The position of the first `needle` in `haystack` at or after `from`, eight bytes at a time: a
/// word whose bytes all differ from the needle is skipped at once (the "has a zero byte" test on the
/// word xor the needle repeated; its lowest flagged byte is the first match).
fn find_byte(haystack: &[u8], from: usize, needle: u8) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    let repeated = ONES * u64::from(needle);
    let mut at = from;
    let mut chunks = haystack[from..].chunks_exact(8);
    for chunk in &mut chunks {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let differs = u64::from_le_bytes(word) ^ repeated;
        let zero_bytes = differs.wrapping_sub(ONES) & !differs & HIGHS;
        if zero_bytes != 0 {
            return Some(at + (zero_bytes.trailing_zeros() / 8) as usize);
        }
        at += 8;
    }
    let tail = chunks.remainder();
    tail.iter().position(|&byte| byte == needle).map(|i| at + i)
}

/// Pushes the byte range of every segment of `topic` (split left to right, non-overlapping, empty
/// parts kept, as `Dialect::split` does) with its id unresolved. Candidates are found with
/// `find_byte` and confirmed byte by byte, which costs less than a substring search for a separator
/// of one or two bytes; the separators are ASCII, so every cut falls on a character boundary.
pub(super) fn split_segments(topic: &[u8], separator: &[u8], out: &mut Vec<TopicSegment>) {
    let first = separator[0];
    let width = separator.len();
    let mut start = 0;
    let mut at = 0;
    while let Some(found) = find_byte(topic, at, first) {
        at = found;
        if starts_with_bytes(&topic[at..], separator) {
            out.push(TopicSegment {
                start: start as u32,
                end: at as u32,
                id: UNRESOLVED,
            });
            at += width;
            start = at;
        } else {
            at += 1;
        }
    }
    out.push(TopicSegment {
        start: start as u32,
        end: topic.len() as u32,
        id: UNRESOLVED,
    });
}
