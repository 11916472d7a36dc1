//! Fuzzes the query admission of `gridgate::graphql::analysis`, which runs on every request
//! before async-graphql validates it: `count_tokens` on any text, and `analyze` on any document
//! async-graphql's parser accepts (after the token limit, as the server orders them), with any
//! operation name and variables, never panic; with no limits the analysis only refuses what is
//! structurally wrong, its counts are consistent, and the default limits refuse exactly what
//! `QueryLimits::check` refuses of that analysis.
//!
//! The input is one flag byte (operation name, variables, type map) and the query text, so a
//! GraphQL document prefixed with any byte is a useful seed (see `fuzz/seeds/query_analysis`).
#![no_main]

use std::sync::OnceLock;

use async_graphql::parser::parse_query;
use async_graphql::Variables;
use gridgate::graphql::analysis::{analyze, count_tokens, QueryLimits, Refusal, TypeMap};
use libfuzzer_sys::fuzz_target;

fn types() -> &'static TypeMap {
    static TYPES: OnceLock<TypeMap> = OnceLock::new();
    TYPES.get_or_init(|| TypeMap::from_sdl(&gridgate::graphql::sdl()))
}

fn untyped() -> &'static TypeMap {
    static TYPES: OnceLock<TypeMap> = OnceLock::new();
    TYPES.get_or_init(TypeMap::default)
}

/// Limits that refuse nothing, so every analysis is measured to the end.
const UNLIMITED: QueryLimits = QueryLimits {
    max_cost: u64::MAX,
    max_depth: usize::MAX,
    max_aliases: usize::MAX,
    max_root_fields: usize::MAX,
    max_directives: usize::MAX,
    max_tokens: usize::MAX,
};

fn variables(pick: u8) -> Variables {
    let n = match pick {
        0 => return Variables::default(),
        1 => serde_json::json!(5),
        2 => serde_json::json!(100),
        3 => serde_json::json!(-1),
        4 => serde_json::json!(i64::MAX),
        5 => serde_json::json!(["issue-1", "project-2", 3]),
        6 => serde_json::json!(1.5e300),
        _ => serde_json::json!(null),
    };
    Variables::from_json(serde_json::json!({ "n": n, "ids": n }))
}

fn check_tokens(query: &str) -> usize {
    let n = count_tokens(query, usize::MAX).expect("no text has more than usize::MAX tokens");
    assert!(n <= query.len(), "{n} tokens in {} bytes", query.len());
    assert_eq!(count_tokens(query, n), Ok(n));
    if n > 0 {
        assert_eq!(
            count_tokens(query, n - 1),
            Err(Refusal::TooManyTokens { max: n - 1 })
        );
    }
    n
}

fuzz_target!(|data: &[u8]| {
    let Some((&flags, rest)) = data.split_first() else {
        return;
    };
    let Ok(query) = std::str::from_utf8(rest) else {
        return;
    };
    let tokens = check_tokens(query);
    // The server refuses longer documents before parsing them.
    if tokens > QueryLimits::default().max_tokens {
        return;
    }
    let Ok(doc) = parse_query(query) else {
        return;
    };
    let operation = match flags & 3 {
        0 | 1 => None,
        2 => Some("Q"),
        _ => Some("Other"),
    };
    let variables = variables((flags >> 2) & 7);
    let types = if flags & 0x20 == 0 {
        types()
    } else {
        untyped()
    };

    let measured = analyze(&doc, operation, &variables, types, &UNLIMITED);
    match &measured {
        Ok(a) => {
            assert!(a.cost >= a.fields as u64, "{a:?}");
            assert!(a.root_fields <= a.fields, "{a:?}");
            assert!(a.aliases <= a.fields, "{a:?}");
            assert!(a.depth <= a.fields, "{a:?}");
            assert!(
                a.fields >= 1,
                "an operation selects at least one field: {a:?}"
            );
        }
        Err(refusal) => assert!(
            matches!(
                refusal,
                Refusal::FragmentCycle { .. }
                    | Refusal::UnknownFragment { .. }
                    | Refusal::UnknownOperation { .. }
                    | Refusal::AmbiguousOperation
                    | Refusal::NoOperation
            ),
            "refused {refusal:?} without limits"
        ),
    }
    let limits = QueryLimits::default();
    let limited = analyze(&doc, operation, &variables, types, &limits);
    let expected = measured.and_then(|a| limits.check(&a).map(|()| a));
    assert_eq!(limited, expected);
});
