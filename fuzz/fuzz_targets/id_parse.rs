//! Fuzzes the id parsers of `gridgate::ids` (every GraphQL `ID` argument goes through them):
//! they never panic, at most one kind accepts a text, an accepted id is the text itself and
//! re-parses to the same id, and `NodeId::parse` routes exactly as the typed parsers accept.
#![no_main]

use arbitrary::Arbitrary;
use gridgate::ids::{FieldId, IdError, IssueId, NodeId, ProjectId, TenantId};
use libfuzzer_sys::fuzz_target;
use rand::SeedableRng;

#[derive(Debug, Arbitrary)]
enum Input {
    /// Any text.
    Raw(String),
    /// A known prefix and a dash before any text, so the random-part checks are reached.
    Prefixed { kind: u8, part: String },
    /// Ids the server makes itself, from a seeded generator.
    Generated { kind: u8, seed: u64 },
}

const PREFIXES: [&str; 4] = [
    TenantId::PREFIX,
    ProjectId::PREFIX,
    FieldId::PREFIX,
    IssueId::PREFIX,
];

macro_rules! check_kind {
    ($ty:ty, $text:expr) => {{
        let text: &str = $text;
        match <$ty>::parse(text) {
            Ok(id) => {
                assert_eq!(id.as_str(), text);
                assert_eq!(id.to_string(), text);
                assert_eq!(<$ty>::parse(&id.to_string()).as_ref(), Ok(&id));
                let part = id.part();
                assert!((1..=64).contains(&part.len()), "{text:?}");
                assert!(part.bytes().all(|b| b.is_ascii_alphanumeric()), "{text:?}");
                assert_eq!(text, format!("{}-{part}", <$ty>::PREFIX));
                assert_eq!(<$ty>::from_part(part).as_ref(), Ok(&id));
                Some(id)
            }
            Err(IdError::Malformed { id, prefix, .. }) => {
                assert_eq!(id, text);
                assert_eq!(prefix, <$ty>::PREFIX);
                None
            }
            Err(other) => panic!("a typed parser answered {other:?} for {text:?}"),
        }
    }};
}

fn check(text: &str) {
    let tenant = check_kind!(TenantId, text);
    let project = check_kind!(ProjectId, text);
    let field = check_kind!(FieldId, text);
    let issue = check_kind!(IssueId, text);
    let accepted = [
        tenant.is_some(),
        project.is_some(),
        field.is_some(),
        issue.is_some(),
    ];
    assert!(accepted.iter().filter(|a| **a).count() <= 1, "{text:?}");
    let expected = tenant
        .map(NodeId::Tenant)
        .or(project.map(NodeId::Project))
        .or(field.map(NodeId::Field))
        .or(issue.map(NodeId::Issue));
    match (NodeId::parse(text), expected) {
        (Ok(node), Some(expected)) => assert_eq!(node, expected),
        (Err(IdError::UnknownKind(id)), None) => {
            assert_eq!(id, text);
            let prefix = text.split('-').next().unwrap_or("");
            assert!(!PREFIXES.contains(&prefix), "{text:?}");
        }
        (Err(IdError::Malformed { id, prefix, .. }), None) => {
            assert_eq!(id, text);
            assert!(text.starts_with(prefix), "{text:?}");
        }
        (got, expected) => panic!("NodeId::parse({text:?}) = {got:?}, typed parsers: {expected:?}"),
    }
}

fuzz_target!(|input: Input| match input {
    Input::Raw(text) => check(&text),
    Input::Prefixed { kind, part } => {
        check(&format!("{}-{part}", PREFIXES[usize::from(kind) % 4]));
    }
    Input::Generated { kind, seed } => {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let ids = match kind % 4 {
            0 => [
                TenantId::seeded(&mut rng).to_string(),
                TenantId::generate_with(&mut rng).to_string(),
            ],
            1 => [
                ProjectId::seeded(&mut rng).to_string(),
                ProjectId::generate_with(&mut rng).to_string(),
            ],
            2 => [
                FieldId::seeded(&mut rng).to_string(),
                FieldId::generate_with(&mut rng).to_string(),
            ],
            _ => [
                IssueId::seeded(&mut rng).to_string(),
                IssueId::generate_with(&mut rng).to_string(),
            ],
        };
        for id in ids {
            assert!(NodeId::parse(&id).is_ok(), "{id}");
            check(&id);
        }
    }
});
