//! The three pattern dialects: how a string splits into segments, which wildcards exist, and what a
//! valid topic and a valid pattern are (docs/PATTERNS.md). Validation reports the first problem in a fixed
//! order (empty, length, characters left to right, then segments left to right) so that both engines
//! give the same answer.

use crate::error::{describe_char, utf16_position, ErrorCode, Reason, Violation};
use crate::limits::MAX_MQTT_TOPIC_BYTES;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Dialect {
    /// `__` separator, `*` one segment, `**` one or more trailing segments.
    Lite,
    /// `/` separator, `+` one level (possibly empty), `#` zero or more trailing levels; topics whose
    /// first level starts with `$` are not matched by a leading wildcard.
    Mqtt,
    /// `.` separator, `*` one token, `>` one or more trailing tokens; empty tokens are invalid.
    Nats,
}

impl Dialect {
    pub const ALL: [Dialect; 3] = [Dialect::Lite, Dialect::Mqtt, Dialect::Nats];

    /// The numeric id used across the Node-API boundary (mirrored in `ts/shared/dialect.ts`).
    pub fn id(self) -> u32 {
        match self {
            Dialect::Lite => 0,
            Dialect::Mqtt => 1,
            Dialect::Nats => 2,
        }
    }

    pub fn from_id(id: u32) -> Option<Dialect> {
        Dialect::ALL.get(id as usize).copied()
    }

    pub fn name(self) -> &'static str {
        match self {
            Dialect::Lite => "lite",
            Dialect::Mqtt => "mqtt",
            Dialect::Nats => "nats",
        }
    }

    pub fn separator(self) -> &'static str {
        match self {
            Dialect::Lite => "__",
            Dialect::Mqtt => "/",
            Dialect::Nats => ".",
        }
    }

    /// The wildcard that stands for exactly one segment.
    pub fn one_wildcard(self) -> &'static str {
        match self {
            Dialect::Lite | Dialect::Nats => "*",
            Dialect::Mqtt => "+",
        }
    }

    /// The trailing wildcard.
    pub fn rest_wildcard(self) -> &'static str {
        match self {
            Dialect::Lite => "**",
            Dialect::Mqtt => "#",
            Dialect::Nats => ">",
        }
    }

    /// How many segments the trailing wildcard needs at least.
    pub fn rest_min_segments(self) -> usize {
        match self {
            Dialect::Mqtt => 0,
            Dialect::Lite | Dialect::Nats => 1,
        }
    }

    /// Splits left to right, non-overlapping, keeping empty parts: lite `a___b` is `a`,`_b` and
    /// `pay__` is `pay`,``.
    pub fn split(self, input: &str) -> std::str::Split<'_, &'static str> {
        input.split(self.separator())
    }

    /// Whether `topic` is a topic this dialect can match at all. Invalid topics never match.
    /// Length limits of lite topic names are not checked here: they are configurable and enforced
    /// where names enter (`validate_lite_topic`, the broker's quotas).
    pub fn is_valid_topic(self, topic: &str) -> bool {
        if topic.is_empty() {
            return false;
        }
        match self {
            Dialect::Lite => topic.bytes().all(is_lite_name_byte),
            // Byte scans: every forbidden character but U+FFFD is ASCII, and UTF-8 never hides an
            // ASCII byte inside a multi-byte character.
            Dialect::Mqtt => {
                topic.len() <= MAX_MQTT_TOPIC_BYTES
                    && !topic.bytes().any(|b| b == 0 || b == b'+' || b == b'#')
                    && !topic.contains(char::REPLACEMENT_CHARACTER)
            }
            Dialect::Nats => {
                !topic
                    .bytes()
                    .any(|b| matches!(b, b' ' | b'\t' | b'\r' | b'\n' | 0))
                    && !topic.contains(char::REPLACEMENT_CHARACTER)
                    && topic.split('.').all(|t| !t.is_empty() && t != "*" && t != ">")
            }
        }
    }

    /// Validates a pattern, returning the first problem found.
    pub fn validate_pattern(self, pattern: &str) -> Result<(), Violation> {
        let what = "pattern";
        if pattern.is_empty() {
            return Err(empty(ErrorCode::InvalidPattern, what));
        }
        if self == Dialect::Mqtt && pattern.len() > MAX_MQTT_TOPIC_BYTES {
            return Err(too_long(
                ErrorCode::InvalidPattern,
                what,
                pattern,
                MAX_MQTT_TOPIC_BYTES,
            ));
        }
        let forbidden = match self {
            Dialect::Lite => |c: char| !(c.is_ascii() && (is_lite_name_byte(c as u8) || c == '*')),
            Dialect::Mqtt => is_mqtt_forbidden,
            Dialect::Nats => is_nats_forbidden,
        };
        if let Some((at, c)) = pattern.char_indices().find(|&(_, c)| forbidden(c)) {
            return Err(invalid_char(ErrorCode::InvalidPattern, what, pattern, at, c));
        }
        let separator_len = self.separator().len();
        let segments: Vec<&str> = self.split(pattern).collect();
        let last = segments.len() - 1;
        let mut start = 0;
        for (i, segment) in segments.iter().enumerate() {
            if let Some(problem) = self.check_pattern_segment(pattern, segment, start, i == last) {
                return Err(problem);
            }
            start += segment.len() + separator_len;
        }
        Ok(())
    }

    fn check_pattern_segment(
        self,
        pattern: &str,
        segment: &str,
        start: usize,
        is_last: bool,
    ) -> Option<Violation> {
        let rest = self.rest_wildcard();
        let one = self.one_wildcard();
        if segment.is_empty() && self != Dialect::Mqtt {
            let position = utf16_position(pattern, start);
            return Some(Violation {
                code: ErrorCode::InvalidPattern,
                reason: Reason::EmptySegment,
                position,
                limit: None,
                actual: None,
                message: format!("pattern has an empty segment at position {position}"),
            });
        }
        if segment == rest {
            if is_last {
                return None;
            }
            let position = utf16_position(pattern, start);
            return Some(Violation {
                code: ErrorCode::InvalidPattern,
                reason: Reason::MisplacedWildcard,
                position,
                limit: None,
                actual: None,
                message: format!(
                    "pattern has \"{rest}\" at position {position}, but it may only be the last segment"
                ),
            });
        }
        if segment == one || self == Dialect::Nats {
            // NATS treats `*` and `>` as wildcards only when they are a whole token; `a*` is literal.
            return None;
        }
        let wildcard_chars: &[char] = match self {
            Dialect::Lite => &['*'],
            Dialect::Mqtt => &['+', '#'],
            Dialect::Nats => &[],
        };
        let at = segment.find(wildcard_chars)?;
        let position = utf16_position(pattern, start + at);
        Some(Violation {
            code: ErrorCode::InvalidPattern,
            reason: Reason::PartialWildcard,
            position,
            limit: None,
            actual: None,
            message: format!(
                "pattern mixes a wildcard with other characters in segment \"{segment}\" at position {position}"
            ),
        })
    }
}

/// `[A-Za-z0-9_-]`: the characters of a lite topic name.
#[inline]
pub fn is_lite_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'-'
}

/// MQTT forbids U+0000 and surrogates; an unpaired surrogate from JavaScript arrives as U+FFFD, so
/// U+FFFD is refused too, in both engines, to keep them in agreement.
#[inline]
fn is_mqtt_forbidden(c: char) -> bool {
    c == '\0' || c == char::REPLACEMENT_CHARACTER
}

/// NATS subjects may not contain whitespace; U+0000 and U+FFFD are refused as in MQTT.
#[inline]
fn is_nats_forbidden(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\r' | '\n' | '\0') || c == char::REPLACEMENT_CHARACTER
}

/// Validates a lite topic name: 1..=`max_bytes` UTF-8 bytes of `[A-Za-z0-9_-]`.
pub fn validate_lite_topic(name: &str, max_bytes: usize) -> Result<(), Violation> {
    let what = "lite topic name";
    if name.is_empty() {
        return Err(empty(ErrorCode::InvalidLiteTopic, what));
    }
    if let Some((at, c)) = name
        .char_indices()
        .find(|&(_, c)| !(c.is_ascii() && is_lite_name_byte(c as u8)))
    {
        return Err(invalid_char(ErrorCode::InvalidLiteTopic, what, name, at, c));
    }
    if name.len() > max_bytes {
        return Err(too_long(ErrorCode::InvalidLiteTopic, what, name, max_bytes));
    }
    Ok(())
}

fn empty(code: ErrorCode, what: &str) -> Violation {
    Violation {
        code,
        reason: Reason::Empty,
        position: 0,
        limit: None,
        actual: None,
        message: format!("{what} is empty"),
    }
}

fn too_long(code: ErrorCode, what: &str, input: &str, limit: usize) -> Violation {
    // The position is that of the first character that does not fit within the limit.
    let first_over = input
        .char_indices()
        .find(|&(at, c)| at + c.len_utf8() > limit)
        .map_or(input.len(), |(at, _)| at);
    let actual = input.len();
    Violation {
        code,
        reason: Reason::TooLong,
        position: utf16_position(input, first_over),
        limit: Some(limit),
        actual: Some(actual),
        message: format!("{what} is {actual} bytes, longer than the limit of {limit} bytes"),
    }
}

fn invalid_char(code: ErrorCode, what: &str, input: &str, at: usize, c: char) -> Violation {
    let position = utf16_position(input, at);
    Violation {
        code,
        reason: Reason::InvalidCharacter,
        position,
        limit: None,
        actual: None,
        message: format!(
            "{what} has invalid character {} at position {position}",
            describe_char(c)
        ),
    }
}
