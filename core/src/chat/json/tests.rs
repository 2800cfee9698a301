//! Validation, walking and string handling.

extern crate std;

use super::*;

#[test]
fn accepts_valid_and_rejects_invalid() {
    for ok in [
        "{}",
        " [ ] ",
        r#"{"a":[1,-2.5e+3,true,false,null,"x\"\u00e9\n"],"b":{"c":{}}}"#,
        "0",
        "-0.0",
        "\"\"",
    ] {
        assert!(parse_value(ok).is_ok(), "{ok}");
    }
    for (bad, e) in [
        ("", JsonError::Eof { at: 0 }),
        ("{", JsonError::Eof { at: 1 }),
        ("{\"a\" 1}", JsonError::Unexpected { at: 5 }),
        ("[1,]", JsonError::Unexpected { at: 3 }),
        ("01", JsonError::Trailing { at: 1 }),
        ("1.", JsonError::Unexpected { at: 2 }),
        ("\"\\x\"", JsonError::BadString { at: 1 }),
        ("\"a\nb\"", JsonError::BadString { at: 2 }),
        ("tru", JsonError::Eof { at: 3 }),
        ("{} x", JsonError::Trailing { at: 3 }),
        ("{'a':1}", JsonError::Unexpected { at: 1 }),
    ] {
        assert_eq!(parse_value(bad), Err(e), "{bad:?}");
    }
    let deep = "[".repeat(MAX_DEPTH + 1) + &"]".repeat(MAX_DEPTH + 1);
    assert!(matches!(parse_value(&deep), Err(JsonError::TooDeep { .. })));
    assert_eq!(parse_object("[]"), Err(JsonError::WrongKind { at: 0 }));
}

#[test]
fn walks_members_and_elements() {
    let o = parse_object(r#" { "a" : 1 , "b\"c" : [ 1 , {"x":2} ] , "d":"" } "#).unwrap();
    let m: std::vec::Vec<_> = members(o).collect();
    assert_eq!(
        m,
        [("a", "1"), ("b\\\"c", "[ 1 , {\"x\":2} ]"), ("d", "\"\"")]
    );
    let e: std::vec::Vec<_> = elements(m[1].1).collect();
    assert_eq!(e, ["1", "{\"x\":2}"]);
    assert_eq!(get(o, "b\"c"), Some(m[1].1));
    assert_eq!(members("{}").count(), 0);
    assert_eq!(elements("[ ]").count(), 0);
}

#[test]
fn strings_unescape_escape_and_compact() {
    let raw = r#"a\"b\\c\n\u00e9\ud83d\ude00/"#;
    let s: std::string::String = unescape(raw).collect();
    assert_eq!(s, "a\"b\\c\né😀/");
    assert!(str_eq(raw, &s) && !str_eq(raw, "x"));
    let mut buf = [0u8; 64];
    let mut out = Out::new(&mut buf);
    write_string("q\"\\\n\u{1}é", &mut out).unwrap();
    assert_eq!(out.as_str(), r#""q\"\\\n\u0001é""#);
    out.clear();
    write_compact("{ \"a b\" : [ 1 , 2 ] }", &mut out).unwrap();
    assert_eq!(out.as_str(), "{\"a b\":[1,2]}");
    let mut tiny = [0u8; 3];
    let mut out = Out::new(&mut tiny);
    assert_eq!(
        write_string("abcd", &mut out),
        Err(ChatError::Overflow { needed: 2 })
    );
}
