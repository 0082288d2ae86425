//! Go's `%q` (`strconv.Quote`) and `utilerrors.NewAggregate(...).Error()`.

use crate::gofmt::{aggregate, quote, quote_list};

#[test]
fn quote_like_go() {
    let cases = [
        ("", r#""""#),
        ("plain:name-1.x", r#""plain:name-1.x""#),
        ("a\"b\\c", r#""a\"b\\c""#),
        ("\u{7}\u{8}\u{c}\n\r\t\u{b}", r#""\a\b\f\n\r\t\v""#),
        ("\u{0}\u{1b}\u{7f}", r#""\x00\x1b\x7f""#),
        ("héllo 世界 ✓", "\"héllo 世界 ✓\""),
        (
            "\u{a0}\u{2028}\u{200b}\u{feff}",
            r#""\u00a0\u2028\u200b\ufeff""#,
        ),
        ("\u{85}", r#""\u0085""#),
        ("\u{e000}\u{10fffd}", r#""\ue000\U0010fffd""#),
        ("😀", "\"😀\""),
    ];
    for (input, want) in cases {
        assert_eq!(quote(input), want, "{input:?}");
    }
}

#[test]
fn quote_list_like_go() {
    assert_eq!(quote_list::<&str>(&[]), "[]");
    assert_eq!(quote_list(&["a"]), r#"["a"]"#);
    assert_eq!(quote_list(&["", "b c", "d\"e"]), r#"["" "b c" "d\"e"]"#);
}

#[test]
fn aggregate_like_utilerrors() {
    assert_eq!(aggregate::<&str>(&[]), None);
    assert_eq!(aggregate(&["a"]).as_deref(), Some("a"));
    assert_eq!(aggregate(&["a", "a"]).as_deref(), Some("a"));
    assert_eq!(aggregate(&["a", "b"]).as_deref(), Some("[a, b]"));
    assert_eq!(
        aggregate(&["b", "a", "b", "c"]).as_deref(),
        Some("[b, a, c]")
    );
}
