use super::*;

#[test]
fn get_table() {
    let rows = [
        (None, Ok(ReadAt::MostRecent)),
        (Some(""), Ok(ReadAt::MostRecent)),
        (Some("0"), Ok(ReadAt::Any)),
        (Some("42"), Ok(ReadAt::NotOlderThan(Revision(42)))),
    ];
    for (rv, want) in rows {
        assert_eq!(plan_get(rv).map_err(|e| e.code), want, "rv {rv:?}");
    }
}

#[test]
fn watch_table() {
    // (resourceVersion, sendInitialEvents, start)
    let rows = [
        (None, None, WatchStart::StateAtMostRecent),
        (Some(""), None, WatchStart::StateAtMostRecent),
        (Some("0"), None, WatchStart::StateAtAny),
        (Some("42"), None, WatchStart::After(Revision(42))),
        // Streaming lists: the state first, whatever the version.
        (None, Some(true), WatchStart::StateAtMostRecent),
        (Some("0"), Some(true), WatchStart::StateAtAny),
        (
            Some("42"),
            Some(true),
            WatchStart::StateNotOlderThan(Revision(42)),
        ),
        // sendInitialEvents=false: never the state.
        (None, Some(false), WatchStart::Now),
        (Some("0"), Some(false), WatchStart::Now),
        (Some("42"), Some(false), WatchStart::After(Revision(42))),
    ];
    for (rv, sie, want) in rows {
        assert_eq!(
            plan_watch(rv, sie).expect("valid"),
            want,
            "rv {rv:?} {sie:?}"
        );
    }
    for sie in [None, Some(true), Some(false)] {
        let e = plan_watch(Some("abc"), sie).unwrap_err();
        assert_eq!(e.code, 400, "{sie:?}");
    }
}

/// Watch option rows as upstream's `validateWatchOptions` with the WatchList feature on:
/// every failure is listed, in upstream's order, in one 422.
#[test]
fn watch_options_table() {
    let invalid = "ListOptions.meta.k8s.io \"\" is invalid: ";
    let unless_sie = "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided";
    let unsupported_exact =
        "resourceVersionMatch: Unsupported value: \"Exact\": supported values: \"NotOlderThan\"";
    let with_continue = "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden when continue is provided";
    let sie_needs_match = "resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan";
    // (resourceVersionMatch, continue, sendInitialEvents, expected message after the prefix)
    type Row<'a> = (
        Option<&'a str>,
        Option<&'a str>,
        Option<&'a str>,
        Option<String>,
    );
    let rows: Vec<Row> = vec![
        (None, None, None, None),
        (Some(""), None, None, None),
        (None, Some("token"), None, None),
        (
            Some("NotOlderThan"),
            None,
            None,
            Some(unless_sie.to_string()),
        ),
        (
            Some("Exact"),
            None,
            None,
            Some(format!("[{unless_sie}, {unsupported_exact}]")),
        ),
        (
            Some("NotOlderThan"),
            Some("t"),
            None,
            Some(format!("[{unless_sie}, {with_continue}]")),
        ),
        (None, None, Some("true"), Some(sie_needs_match.to_string())),
        (None, None, Some("false"), Some(sie_needs_match.to_string())),
        (
            Some("Exact"),
            None,
            Some("true"),
            Some(format!("[{sie_needs_match}, {unsupported_exact}]")),
        ),
        (
            Some("NotOlderThan"),
            Some("t"),
            Some("true"),
            Some(with_continue.to_string()),
        ),
        (Some("NotOlderThan"), None, Some("true"), None),
        (Some("NotOlderThan"), None, Some("false"), None),
    ];
    for (matching, cont, sie, want) in rows {
        let req = WatchRequest {
            resource_version_match: matching,
            continue_token: cont,
            send_initial_events: sie,
        };
        let got = validate_watch_match(&req).map_err(|e| {
            assert_eq!((e.code, e.reason), (422, "Invalid"));
            e.message
        });
        let want = want.map(|m| format!("{invalid}{m}"));
        assert_eq!(got.err(), want, "{req:?}");
    }
}

const TOKEN_RV: Revision = Revision(7);
const FORBIDDEN_UNSET: &str = "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided";
const FORBIDDEN_EXACT_ZERO: &str = "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"";
const CONTINUE_WITH_RV: &str = "specifying resource version is not allowed when using continue";

/// Expected outcome of one list row.
#[derive(Debug, PartialEq)]
enum Want {
    Read(ReadAt),
    Continue(ReadAt),
    Error(u16, &'static str, &'static str),
}

fn run(matching: Option<&str>, limit: Option<i64>, token: Option<&str>, rv: Option<&str>) -> Want {
    let req = ListRequest {
        resource_version: rv,
        resource_version_match: matching,
        limit,
        continue_token: token,
        send_initial_events: None,
    };
    match plan_list(&req) {
        Ok(plan) if plan.start_after.is_some() => {
            assert_eq!(plan.start_after.as_deref(), Some("default/web"));
            Want::Continue(plan.read)
        }
        Ok(plan) => Want::Read(plan.read),
        Err(e) => Want::Error(e.code, e.reason, Box::leak(e.message.into_boxed_str())),
    }
}

/// Every row of the spec's list table: (resourceVersionMatch, paging, [rv unset, rv 0, rv other]).
#[test]
fn list_table() {
    let token = encode_continue(TOKEN_RV, "default/web");
    let paging: [(&str, Option<i64>, Option<&str>); 3] = [
        ("limit unset", None, None),
        ("limit=n, continue unset", Some(2), None),
        ("limit=n, continue=token", Some(2), Some(&token)),
    ];
    use ReadAt::*;
    let invalid_unset = Want::Error(422, "Invalid", FORBIDDEN_UNSET);
    let invalid_zero = Want::Error(422, "Invalid", FORBIDDEN_EXACT_ZERO);
    let table: Vec<(Option<&str>, usize, [Want; 3])> = vec![
        (
            None,
            0,
            [
                Want::Read(MostRecent),
                Want::Read(Any),
                Want::Read(NotOlderThan(Revision(5))),
            ],
        ),
        (
            None,
            1,
            [
                Want::Read(MostRecent),
                Want::Read(Any),
                Want::Read(Exact(Revision(5))),
            ],
        ),
        (
            None,
            2,
            [
                Want::Continue(Exact(TOKEN_RV)),
                Want::Continue(Exact(TOKEN_RV)),
                Want::Error(400, "BadRequest", CONTINUE_WITH_RV),
            ],
        ),
        (
            Some("Exact"),
            0,
            [
                Want::Error(422, "Invalid", FORBIDDEN_UNSET),
                Want::Error(422, "Invalid", FORBIDDEN_EXACT_ZERO),
                Want::Read(Exact(Revision(5))),
            ],
        ),
        (
            Some("Exact"),
            1,
            [invalid_unset, invalid_zero, Want::Read(Exact(Revision(5)))],
        ),
        (
            Some("NotOlderThan"),
            0,
            [
                Want::Error(422, "Invalid", FORBIDDEN_UNSET),
                Want::Read(Any),
                Want::Read(NotOlderThan(Revision(5))),
            ],
        ),
        (
            Some("NotOlderThan"),
            1,
            [
                Want::Error(422, "Invalid", FORBIDDEN_UNSET),
                Want::Read(Any),
                Want::Read(NotOlderThan(Revision(5))),
            ],
        ),
    ];
    for (matching, paging_row, wants) in table {
        let (label, limit, tok) = paging[paging_row];
        for (rv, want) in [None, Some("0"), Some("5")].into_iter().zip(wants) {
            assert_eq!(
                run(matching, limit, tok, rv),
                want,
                "match {matching:?}, {label}, rv {rv:?}"
            );
        }
    }
}

#[test]
fn list_validation_aggregates_and_match_with_continue() {
    let token = encode_continue(TOKEN_RV, "default/web");
    let req = ListRequest {
        resource_version: None,
        resource_version_match: Some("Foo"),
        limit: None,
        continue_token: Some(&token),
        send_initial_events: None,
    };
    let err = plan_list(&req).expect_err("invalid");
    assert_eq!(err.code, 422);
    assert_eq!(
        err.message,
        "ListOptions.meta.k8s.io \"\" is invalid: [resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided, resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden when continue is provided, resourceVersionMatch: Unsupported value: \"Foo\": supported values: \"Exact\", \"NotOlderThan\", \"\"]"
    );
    assert_eq!(err.group.as_deref(), Some("meta.k8s.io"));
    assert_eq!(err.kind.as_deref(), Some("ListOptions"));
    assert_eq!(err.causes.len(), 3);
    let req = ListRequest {
        resource_version: Some("5"),
        resource_version_match: Some("Exact"),
        limit: Some(2),
        continue_token: Some(&token),
        send_initial_events: None,
    };
    let err = plan_list(&req).expect_err("continue with match");
    assert_eq!(err.message, "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden when continue is provided");
}

#[test]
fn list_limit_zero_or_negative_is_unlimited() {
    for (limit, want) in [
        (None, None),
        (Some(0), None),
        (Some(-3), None),
        (Some(10), Some(10)),
    ] {
        let req = ListRequest {
            limit,
            ..Default::default()
        };
        assert_eq!(
            plan_list(&req).expect("valid").limit,
            want,
            "limit {limit:?}"
        );
    }
    let req = ListRequest {
        resource_version: Some("5"),
        limit: Some(0),
        ..Default::default()
    };
    assert_eq!(
        plan_list(&req).expect("valid").read,
        ReadAt::NotOlderThan(Revision(5)),
        "limit=0 is not paging"
    );
}

#[test]
fn malformed_resource_version() {
    let rows = [
        ("abc", "resourceVersion: Invalid value: \"abc\": strconv.ParseUint: parsing \"abc\": invalid syntax"),
        ("-1", "resourceVersion: Invalid value: \"-1\": strconv.ParseUint: parsing \"-1\": invalid syntax"),
        ("99999999999999999999", "resourceVersion: Invalid value: \"99999999999999999999\": strconv.ParseUint: parsing \"99999999999999999999\": value out of range"),
    ];
    for (rv, msg) in rows {
        let requests = [
            ("get", plan_get(Some(rv)).map(|_| ())),
            ("watch", plan_watch(Some(rv), None).map(|_| ())),
            (
                "list",
                plan_list(&ListRequest {
                    resource_version: Some(rv),
                    ..Default::default()
                })
                .map(|_| ()),
            ),
            (
                "paged list",
                plan_list(&ListRequest {
                    resource_version: Some(rv),
                    limit: Some(1),
                    ..Default::default()
                })
                .map(|_| ()),
            ),
            (
                "exact list",
                plan_list(&ListRequest {
                    resource_version: Some(rv),
                    resource_version_match: Some("Exact"),
                    ..Default::default()
                })
                .map(|_| ()),
            ),
        ];
        for (verb, result) in requests {
            let err = result.expect_err(verb);
            assert_eq!(
                (err.code, err.reason, err.message.as_str()),
                (
                    400,
                    "BadRequest",
                    format!("invalid resource version: {msg}").as_str()
                ),
                "{verb} {rv}"
            );
        }
    }
    assert_eq!(parse_resource_version(""), Ok(Revision::ZERO));
    assert_eq!(parse_resource_version("0"), Ok(Revision::ZERO));
    assert_eq!(
        parse_resource_version("18446744073709551615"),
        Ok(Revision::MAX)
    );
}

#[test]
fn continue_token_shape_round_trip() {
    let token = encode_continue(Revision(12), "default/web");
    let json = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(&token)
        .expect("base64");
    assert_eq!(
        String::from_utf8(json).expect("utf8"),
        r#"{"v":"meta.k8s.io/v1","rv":12,"start":"default/web\u0000"}"#
    );
    assert_eq!(
        decode_continue(&token),
        Ok((Revision(12), "default/web".to_string()))
    );
    assert!(!token.contains('='), "unpadded");
    let plan = plan_list(&ListRequest {
        continue_token: Some(&token),
        limit: Some(3),
        ..Default::default()
    })
    .expect("valid");
    assert_eq!(
        plan,
        ListPlan {
            read: ReadAt::Exact(Revision(12)),
            start_after: Some("default/web".into()),
            limit: Some(3)
        }
    );
}

fn b64(s: &str) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(s)
}

#[test]
fn malformed_continue_tokens() {
    let prefix = "invalid continue token: continue key is not valid: ";
    let rows: Vec<(String, String)> = vec![
        ("!!!".into(), "illegal base64 data at input byte 0".into()),
        (
            b64(r#"{"v":"meta.k8s.io/v2","rv":1,"start":"a\u0000"}"#),
            "server does not recognize this encoded version \"meta.k8s.io/v2\"".into(),
        ),
        (
            b64(r#"{"v":"meta.k8s.io/v1","rv":0,"start":"a\u0000"}"#),
            "incorrect encoded start resourceVersion (version meta.k8s.io/v1)".into(),
        ),
        (
            b64(r#"{"v":"meta.k8s.io/v1","rv":-4,"start":"a\u0000"}"#),
            "incorrect encoded start resourceVersion (version meta.k8s.io/v1)".into(),
        ),
        (
            b64(r#"{"v":"meta.k8s.io/v1","rv":3,"start":""}"#),
            "encoded start key empty (version meta.k8s.io/v1)".into(),
        ),
        (
            b64(r#"{"v":"meta.k8s.io/v1","rv":3,"start":"../secrets/x\u0000"}"#),
            "../secrets/x\u{0}".into(),
        ),
        (
            b64(r#"{"v":"meta.k8s.io/v1","rv":3,"start":"a//b\u0000"}"#),
            "a//b\u{0}".into(),
        ),
    ];
    for (token, detail) in rows {
        let err = decode_continue(&token).expect_err(&token);
        assert_eq!((err.code, err.reason), (400, "BadRequest"));
        assert_eq!(err.message, format!("{prefix}{detail}"), "token {token}");
    }
    let not_json = decode_continue(&b64("nope")).expect_err("not json");
    assert!(not_json.message.starts_with(prefix));
    assert!(decode_continue(&"a".repeat(CONTINUE_TOKEN_LEN_MAX + 1)).is_err());
    let leading_slash = b64(r#"{"v":"meta.k8s.io/v1","rv":3,"start":"/ns/a\u0000"}"#);
    assert_eq!(
        decode_continue(&leading_slash),
        Ok((Revision(3), "ns/a".to_string()))
    );
    let bad_token = plan_list(&ListRequest {
        continue_token: Some("!!!"),
        resource_version: Some("5"),
        ..Default::default()
    });
    assert!(
        bad_token.expect_err("bad").message.starts_with(prefix),
        "token is decoded before the rv check"
    );
}

/// A list refuses `sendInitialEvents` (any value), after the `resourceVersionMatch` rules.
#[test]
fn list_refuses_send_initial_events() {
    for sie in ["true", "false"] {
        let err = plan_list(&ListRequest {
            send_initial_events: Some(sie),
            ..Default::default()
        })
        .expect_err("refused");
        assert_eq!((err.code, err.reason), (422, "Invalid"));
        assert_eq!(err.message, "ListOptions.meta.k8s.io \"\" is invalid: sendInitialEvents: Forbidden: sendInitialEvents is forbidden for list");
    }
    let err = plan_list(&ListRequest {
        resource_version_match: Some("Exact"),
        send_initial_events: Some("true"),
        ..Default::default()
    })
    .expect_err("refused");
    assert_eq!(err.message, "ListOptions.meta.k8s.io \"\" is invalid: [resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided, sendInitialEvents: Forbidden: sendInitialEvents is forbidden for list]");
}
