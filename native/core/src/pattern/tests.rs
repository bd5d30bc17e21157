use super::*;
use crate::dialect::validate_lite_topic;
use crate::error::Reason;

fn lite(pattern: &str, topic: &str) -> bool {
    Pattern::compile(pattern, Dialect::Lite).unwrap().matches(topic)
}

fn reason(pattern: &str, dialect: Dialect) -> Option<(Reason, usize)> {
    dialect
        .validate_pattern(pattern)
        .err()
        .map(|v| (v.reason, v.position))
}

#[test]
fn design_reference_rows() {
    let rows: &[(&str, &[&str], &[&str])] = &[
        (
            "pay__refund",
            &["pay__refund"],
            &["pay__refund__notify", "notify__refund"],
        ),
        (
            "pay__*",
            &["pay__refund", "pay__success"],
            &["pay__refund__notify"],
        ),
        (
            "*__refund",
            &["pay__refund", "notify__refund"],
            &["pay__refund__notify"],
        ),
        (
            "pay__*__notify",
            &["pay__refund__notify", "pay__success__notify"],
            &["pay__refund"],
        ),
        ("**", &["a", "pay__refund__notify"], &[""]),
        (
            "pay__**",
            &["pay__refund", "pay__refund__notify"],
            &["notify__refund", "pay"],
        ),
    ];
    for (pattern, yes, no) in rows {
        for topic in *yes {
            assert!(lite(pattern, topic), "{pattern} should match {topic}");
        }
        for topic in *no {
            assert!(!lite(pattern, topic), "{pattern} should not match {topic}");
        }
    }
}

#[test]
fn lite_splits_left_to_right_keeping_empty_trailing_parts() {
    let parts: Vec<&str> = Dialect::Lite.split("a___b").collect();
    assert_eq!(parts, ["a", "_b"]);
    let parts: Vec<&str> = Dialect::Lite.split("pay__").collect();
    assert_eq!(parts, ["pay", ""]);
    assert!(lite("a___b", "a___b"));
    assert!(lite("a__*", "a___b"));
    assert!(lite("pay__*", "pay__"));
    assert!(!lite("*__b", "a___b"));
}

#[test]
fn lite_validation() {
    let d = Dialect::Lite;
    assert_eq!(reason("", d), Some((Reason::Empty, 0)));
    assert_eq!(reason("__", d), Some((Reason::EmptySegment, 0)));
    assert_eq!(reason("a__", d), Some((Reason::EmptySegment, 3)));
    assert_eq!(reason("a____b", d), Some((Reason::EmptySegment, 3)));
    assert_eq!(reason("**__a", d), Some((Reason::MisplacedWildcard, 0)));
    assert_eq!(reason("pa*", d), Some((Reason::PartialWildcard, 2)));
    assert_eq!(reason("pay__r*fund", d), Some((Reason::PartialWildcard, 6)));
    assert_eq!(reason("***", d), Some((Reason::PartialWildcard, 0)));
    assert_eq!(reason("a b", d), Some((Reason::InvalidCharacter, 1)));
    assert_eq!(reason("é__x", d), Some((Reason::InvalidCharacter, 0)));
    assert_eq!(reason("😀a__b c", d), Some((Reason::InvalidCharacter, 0)));
    assert_eq!(reason("a__*__**", d), None);
}

#[test]
fn mqtt_rules() {
    let m = |p: &str, t: &str| Pattern::compile(p, Dialect::Mqtt).unwrap().matches(t);
    assert!(m("a/#", "a"));
    assert!(m("a/#", "a/b/c"));
    assert!(m("a/+/c", "a//c"));
    assert!(m("#", "a"));
    assert!(!m("#", "$SYS/x"));
    assert!(!m("+/x", "$SYS/x"));
    assert!(m("$SYS/#", "$SYS/x"));
    assert!(m("$SYS/#", "$SYS"));
    assert!(!m("a/b", "a/+"));
    assert!(m("/+", "/x"));
    let d = Dialect::Mqtt;
    assert_eq!(reason("a/#/b", d), Some((Reason::MisplacedWildcard, 2)));
    assert_eq!(reason("a/b#", d), Some((Reason::PartialWildcard, 3)));
    assert_eq!(reason("a+/b", d), Some((Reason::PartialWildcard, 1)));
    assert_eq!(reason("a\0", d), Some((Reason::InvalidCharacter, 1)));
    assert_eq!(reason("//", d), None);
    let long = "a".repeat(65_536);
    assert_eq!(reason(&long, d), Some((Reason::TooLong, 65_535)));
}

#[test]
fn nats_rules() {
    let m = |p: &str, t: &str| Pattern::compile(p, Dialect::Nats).unwrap().matches(t);
    assert!(m("a.>", "a.b.c"));
    assert!(!m("a.>", "a"));
    assert!(m("a.*", "a.b"));
    assert!(m("a*.b", "a*.b"), "a partial wildcard is a literal in NATS");
    assert!(!m("a.*", "a.*"), "a topic may not contain a wildcard token");
    assert!(!m(">", "a..b"));
    let d = Dialect::Nats;
    assert_eq!(reason("a..b", d), Some((Reason::EmptySegment, 2)));
    assert_eq!(reason(".a", d), Some((Reason::EmptySegment, 0)));
    assert_eq!(reason("a.>.b", d), Some((Reason::MisplacedWildcard, 2)));
    assert_eq!(reason("a b", d), Some((Reason::InvalidCharacter, 1)));
}

#[test]
fn positions_are_utf16_indexes() {
    // U+1F600 takes two UTF-16 code units and four UTF-8 bytes.
    assert_eq!(reason("😀/a+", Dialect::Mqtt), Some((Reason::PartialWildcard, 4)));
}

#[test]
fn lite_topic_names() {
    assert!(validate_lite_topic("tenant7__session42__tool", 64).is_ok());
    let err = validate_lite_topic(&"a".repeat(65), 64).unwrap_err();
    assert_eq!(
        (err.reason, err.position, err.limit, err.actual),
        (Reason::TooLong, 64, Some(64), Some(65))
    );
    let err = validate_lite_topic("ab/c", 64).unwrap_err();
    assert_eq!((err.reason, err.position), (Reason::InvalidCharacter, 2));
    assert!(err.message.contains("\"/\" (U+002F)"), "{}", err.message);
    assert_eq!(validate_lite_topic("", 64).unwrap_err().reason, Reason::Empty);
}

#[test]
fn long_and_deep_topics() {
    let deep: Vec<String> = (0..1000).map(|i| format!("s{i}")).collect();
    let topic = deep.join("__");
    assert!(lite("s0__**", &topic));
    assert!(lite(&topic, &topic));
    let mut with_star = deep.clone();
    with_star[999] = "*".into();
    assert!(lite(&with_star.join("__"), &topic));
    let big = "x".repeat(64 * 1024);
    assert!(lite("**", &big));
    assert!(!lite("*__x", &big));
}
