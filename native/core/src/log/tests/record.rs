//! The record layout and every validity rule of docs/FORMAT.md.

use super::message;
use crate::log::record::*;

fn sealed(mut record: Vec<u8>) -> Vec<u8> {
    seal(&mut record, 42);
    record
}

/// Re-seals after a change so that only the rule under test can fail.
fn changed(record: &[u8], change: impl Fn(&mut Vec<u8>)) -> Vec<u8> {
    let mut copy = record.to_vec();
    change(&mut copy);
    let size = copy.len() as u32;
    copy[4..8].copy_from_slice(&size.to_le_bytes());
    sealed(copy)
}

#[test]
fn round_trip() {
    let builder = RecordBuilder {
        kind: TYPE_MESSAGE,
        lmqs: vec![b"a", b"queue-two"],
        key: Some(b"key-0"),
        tag: Some(b"hello"),
        properties: vec![(b"p", b"v"), (b"", b"")],
        body: b"body bytes",
        born_timestamp_ms: 7,
    };
    let mut record = builder.encode();
    set_offset(&mut record, 0, 3);
    set_offset(&mut record, 1, 9);
    seal(&mut record, 42);
    let mut stored = record.clone();
    stored.extend_from_slice(&[0; 16]);
    let layout = check_stored(&stored).expect("valid");
    assert_eq!(layout.size as usize, record.len());
    assert_eq!((layout.kind, layout.lmq_count), (TYPE_MESSAGE, 2));
    assert_eq!((layout.key_hash, layout.tag_hash), (0xe337_f8bf, 0x248b_fa47));
    let names: Vec<&[u8]> = lmq_names(&record, &layout).collect();
    assert_eq!(names, vec![&b"a"[..], b"queue-two"]);
    assert_eq!(
        (offset(&record, 0), offset(&record, 1), store_timestamp(&record)),
        (3, 9, 42)
    );
    assert_eq!(check_layout(&record), Ok(layout));
}

#[test]
fn one_kilobyte_body_with_a_twenty_byte_name_is_1096_bytes() {
    let record = message(&["%LMQ%$parent$lite-01"], &[7; 1024]);
    assert_eq!(record.len(), 1096);
}

#[test]
fn every_validity_rule_is_checked() {
    let good = sealed(message(&["q"], b"body"));
    check_stored(&good).expect("the unchanged record is valid");
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("magic", changed(&good, |r| r[0] = b'X')),
        ("type", changed(&good, |r| r[12] = 3)),
        ("flags", changed(&good, |r| r[13] = 4)),
        (
            "no LMQ",
            changed(&good, |r| r[14..16].copy_from_slice(&0u16.to_le_bytes())),
        ),
        (
            "65 LMQs",
            changed(&good, |r| r[14..16].copy_from_slice(&65u16.to_le_bytes())),
        ),
        ("trailing byte", changed(&good, |r| r.push(0))),
        (
            "missing byte",
            changed(&good, |r| {
                r.pop();
            }),
        ),
        (
            "born timestamp",
            changed(&good, |r| r[24..32].copy_from_slice(&(1u64 << 53).to_le_bytes())),
        ),
        ("store timestamp", {
            let mut r = good.clone();
            seal(&mut r, 1 << 53);
            r
        }),
        ("offset", changed(&good, |r| set_offset(r, 0, 1 << 53))),
        ("empty name", sealed(message(&[""], b"body"))),
        ("name not UTF-8", changed(&good, |r| r[42] = 0xff)),
        ("name too long", sealed(message(&[&"n".repeat(1025)], b""))),
        ("deletion with a body", changed(&good, |r| r[12] = TYPE_DELETE)),
        (
            "deletion of two LMQs",
            changed(&sealed(message(&["a", "b"], b"")), |r| r[12] = TYPE_DELETE),
        ),
    ];
    // A key or tag present with its flag clear.
    let mut with_key = RecordBuilder {
        kind: TYPE_MESSAGE,
        lmqs: vec![b"q"],
        key: Some(b"k"),
        ..RecordBuilder::default()
    }
    .encode();
    with_key[13] = 0;
    let mut with_tag = RecordBuilder {
        kind: TYPE_MESSAGE,
        lmqs: vec![b"q"],
        tag: Some(b"t"),
        ..RecordBuilder::default()
    }
    .encode();
    with_tag[13] = 0;
    let mut failures = vec![];
    for (name, record) in cases.into_iter().chain([
        ("key without flag", sealed(with_key)),
        ("tag without flag", sealed(with_tag)),
    ]) {
        if check_stored(&record).is_ok() {
            failures.push(name);
        }
    }
    assert!(failures.is_empty(), "accepted: {failures:?}");
    let mut flipped = good.clone();
    let last = flipped.len() - 1;
    flipped[last] ^= 1;
    assert_eq!(check_stored(&flipped), Err("checksum mismatch"));
    assert_eq!(
        check_stored(&good[..good.len() - 1]),
        Err("record size does not fit")
    );
    assert!(
        check_stored(&deletion_record(b"q", 4, 1)).is_err(),
        "an unsealed record fails its checksum"
    );
    check_stored(&sealed(deletion_record(b"q", 4, 1))).expect("a deletion record is valid");
}
