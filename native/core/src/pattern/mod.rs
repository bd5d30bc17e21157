//! One compiled pattern and its matcher. Matching never fails: an invalid topic simply does not
//! match (docs/PATTERNS.md).

pub mod pattern_index;
#[cfg(test)]
mod tests;

use crate::dialect::Dialect;
use crate::error::Violation;

/// One segment of a compiled pattern.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Token {
    /// Matches exactly this segment, case-sensitively.
    Literal(Box<str>),
    /// Matches exactly one segment (`*`, `+`).
    One,
    /// Matches the remaining segments, at least [`Dialect::rest_min_segments`] of them
    /// (`**`, `#`, `>`). Only ever the last token.
    Rest,
}

/// A validated, compiled pattern.
#[derive(Clone, Debug)]
pub struct Pattern {
    dialect: Dialect,
    source: Box<str>,
    tokens: Vec<Token>,
}

impl Pattern {
    /// Validates and compiles `source` for `dialect`.
    pub fn compile(source: &str, dialect: Dialect) -> Result<Pattern, Violation> {
        dialect.validate_pattern(source)?;
        Ok(Pattern {
            dialect,
            source: source.into(),
            tokens: tokenize(source, dialect),
        })
    }

    pub fn dialect(&self) -> Dialect {
        self.dialect
    }

    pub fn source(&self) -> &str {
        &self.source
    }

    pub fn tokens(&self) -> &[Token] {
        &self.tokens
    }

    /// Whether the pattern has no wildcard, so it matches exactly one topic: itself.
    pub fn is_literal(&self) -> bool {
        self.tokens.iter().all(|t| matches!(t, Token::Literal(_)))
    }

    /// Whether `topic` matches. Invalid topics never match.
    pub fn matches(&self, topic: &str) -> bool {
        if !self.dialect.is_valid_topic(topic) {
            return false;
        }
        self.matches_valid(topic)
    }

    /// Matching for a topic already known to be valid for the dialect.
    pub(crate) fn matches_valid(&self, topic: &str) -> bool {
        if self.dialect == Dialect::Mqtt
            && topic.starts_with('$')
            && matches!(self.tokens.first(), Some(Token::One | Token::Rest))
        {
            return false;
        }
        let mut segments = self.dialect.split(topic);
        for token in self.tokens.iter() {
            match token {
                Token::Rest => {
                    let remaining = segments.count();
                    return remaining >= self.dialect.rest_min_segments();
                }
                Token::One => {
                    if segments.next().is_none() {
                        return false;
                    }
                }
                Token::Literal(literal) => {
                    if segments.next() != Some(&**literal) {
                        return false;
                    }
                }
            }
        }
        segments.next().is_none()
    }
}

/// Splits a valid pattern into tokens.
pub fn tokenize(source: &str, dialect: Dialect) -> Vec<Token> {
    let one = dialect.one_wildcard();
    let rest = dialect.rest_wildcard();
    dialect
        .split(source)
        .map(|segment| {
            if segment == one {
                Token::One
            } else if segment == rest {
                Token::Rest
            } else {
                Token::Literal(segment.into())
            }
        })
        .collect()
}
