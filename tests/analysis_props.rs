//! Property tests for `gridgate::graphql::analysis`: the token counter never panics and counts
//! like a lexer, and the memoized analysis never panics and measures exactly what a naive
//! expansion of every fragment spread measures.

use std::sync::OnceLock;

use async_graphql::parser::parse_query;
use async_graphql::Variables;
use gridgate::graphql::analysis::{
    analyze, check_nesting, count_tokens, Analysis, QueryLimits, Refusal, TypeMap,
};
use proptest::prelude::*;

fn types() -> &'static TypeMap {
    static TYPES: OnceLock<TypeMap> = OnceLock::new();
    TYPES.get_or_init(|| {
        TypeMap::try_from_sdl(&gridgate::graphql::sdl()).expect("the served schema's SDL parses")
    })
}

/// Limits that refuse nothing, so the measurements can be compared whatever they are.
fn unlimited() -> QueryLimits {
    QueryLimits {
        max_cost: u64::MAX,
        max_depth: usize::MAX,
        max_aliases: usize::MAX,
        max_root_fields: usize::MAX,
        max_directives: usize::MAX,
        max_tokens: usize::MAX,
    }
}

// ---------------------------------------------------------------------------------------------
// Tokens

const PUNCTUATORS: &[&str] = &[
    "!", "$", "&", "(", ")", "...", ":", "=", "@", "[", "]", "{", "|", "}",
];

fn regex(pattern: &str) -> BoxedStrategy<String> {
    proptest::string::string_regex(pattern)
        .expect("valid regex")
        .boxed()
}

/// One well-formed GraphQL token.
fn token() -> impl Strategy<Value = String> {
    prop_oneof![
        proptest::sample::select(PUNCTUATORS).prop_map(str::to_owned),
        regex("[_A-Za-z][_0-9A-Za-z]{0,8}"),
        regex("-?(0|[1-9][0-9]{0,6})"),
        regex("-?(0|[1-9][0-9]{0,3})(\\.[0-9]{1,3}([eE][+-]?[0-9]{1,2})?|[eE][+-]?[0-9]{1,2})"),
        // Strings with escapes, and characters that would be tokens or comments outside one.
        regex("\"([a-z #,{}\\u{e9}]|\\\\[\\\\\"/bfnrt]|\\\\u[0-9a-f]{4}){0,8}\""),
        // Block strings with newlines, lone quotes, literal backslashes and escaped `"""`.
        regex("\"\"\"([a-z #\\n{}]|\\\\\"\"\"|\"[a-z]|\\\\[a-z]){0,6}\"\"\""),
    ]
}

/// What may separate two tokens: whitespace, commas, comments, the byte order mark.
const SEPARATORS: &[&str] = &[
    " ",
    "\t",
    "\n",
    "\r\n",
    ",",
    "# a { comment } \"\n",
    "\u{feff}",
];

fn separator() -> impl Strategy<Value = String> {
    proptest::collection::vec(proptest::sample::select(SEPARATORS), 1..3)
        .prop_map(|parts| parts.concat())
}

fn token_stream() -> impl Strategy<Value = (String, usize)> {
    proptest::collection::vec((token(), separator()), 0..60).prop_map(|pairs| {
        let n = pairs.len();
        let text = pairs
            .into_iter()
            .map(|(token, separator)| format!("{token}{separator}"))
            .collect::<String>();
        (text, n)
    })
}

/// Text heavy in the characters the counter treats specially.
fn tricky_text() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        regex("[\"\\\\.#\\-0-9a-z \\n\\r,{}\\u{feff}\\u{e9}\\u{1F600}]{0,120}"),
    ]
}

proptest! {
    #[test]
    fn check_nesting_never_panics(text in tricky_text(), max in 0usize..8) {
        let _ = check_nesting(&text, max);
    }

    #[test]
    fn count_tokens_never_panics(text in tricky_text(), max in 0usize..200) {
        match count_tokens(&text, max) {
            Ok(n) => prop_assert!(n <= max),
            Err(refusal) => prop_assert_eq!(refusal, Refusal::TooManyTokens { max }),
        }
        // The count is the same whatever the limit, as long as the limit is not passed.
        if let Ok(n) = count_tokens(&text, usize::MAX) {
            prop_assert_eq!(count_tokens(&text, n), Ok(n));
            prop_assert!(n <= text.len());
        }
    }

    #[test]
    fn count_tokens_counts_well_formed_streams((text, n) in token_stream()) {
        prop_assert_eq!(count_tokens(&text, usize::MAX), Ok(n));
        prop_assert_eq!(count_tokens(&text, n), Ok(n));
        if n > 0 {
            prop_assert_eq!(
                count_tokens(&text, n - 1),
                Err(Refusal::TooManyTokens { max: n - 1 })
            );
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Documents
//
// A generated selection is resolved against this test's own table of the schema (not the
// analyzer's `TypeMap`) into a concrete tree, which is both rendered to GraphQL text for the
// analyzer and measured by a naive expander that walks every spread each time it appears.

/// How a field multiplies its selection set, spelled out independently of the analyzer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mult {
    One,
    /// A connection: `first`, 20 by default, 100 when out of range.
    Page,
    /// `Query.nodes(ids:)`: the number of ids.
    Ids,
    /// `customFields`, `fieldValues`.
    Nominal,
}

type FieldRow = (&'static str, Option<&'static str>, Mult);

/// The fields of the schema's types that the generator uses; `bogus` is a field the schema
/// lacks, and `?` stands for a type it lacks.
fn fields_of(ty: &str) -> &'static [FieldRow] {
    use Mult::*;
    match ty {
        "Query" => &[
            ("__typename", None, One),
            ("project", Some("Project"), One),
            ("nodes", Some("Node"), Ids),
            ("node", Some("Node"), One),
            ("tenant", Some("Tenant"), One),
            ("tenants", Some("TenantConnection"), Page),
            ("issue", Some("Issue"), One),
            ("bogus", Some("?"), One),
        ],
        "Project" => &[
            ("__typename", None, One),
            ("id", None, One),
            ("name", None, One),
            ("customFields", Some("CustomField"), Nominal),
            ("issues", Some("IssueConnection"), Page),
            ("tenant", Some("Tenant"), One),
            ("bogus", Some("?"), One),
        ],
        "IssueConnection" => &[
            ("edges", Some("IssueEdge"), One),
            ("nodes", Some("Issue"), One),
            ("pageInfo", Some("PageInfo"), One),
        ],
        "IssueEdge" => &[("cursor", None, One), ("node", Some("Issue"), One)],
        "Issue" => &[
            ("id", None, One),
            ("num", None, One),
            ("project", Some("Project"), One),
            ("fieldValues", Some("CustomFieldValue"), Nominal),
        ],
        "CustomFieldValue" => &[("value", None, One), ("field", Some("CustomField"), One)],
        "CustomField" => &[
            ("id", None, One),
            ("name", None, One),
            ("project", Some("Project"), One),
        ],
        "Tenant" => &[
            ("id", None, One),
            ("projects", Some("ProjectConnection"), Page),
        ],
        "ProjectConnection" => &[
            ("edges", Some("ProjectEdge"), One),
            ("nodes", Some("Project"), One),
            ("pageInfo", Some("PageInfo"), One),
        ],
        "ProjectEdge" => &[("cursor", None, One), ("node", Some("Project"), One)],
        "TenantConnection" => &[
            ("edges", Some("TenantEdge"), One),
            ("nodes", Some("Tenant"), One),
            ("pageInfo", Some("PageInfo"), One),
        ],
        "TenantEdge" => &[("cursor", None, One), ("node", Some("Tenant"), One)],
        "PageInfo" => &[("hasNextPage", None, One), ("endCursor", None, One)],
        "Node" => &[("id", None, One), ("__typename", None, One)],
        _ => &[("bogus", Some("?"), One), ("__typename", None, One)],
    }
}

/// Type conditions of inline fragments and fragment definitions; `Bogus` is unknown.
const CONDITIONS: &[&str] = &["Project", "Issue", "Node", "Query", "Tenant", "Bogus"];

/// A generated selection, before it is given a meaning by its enclosing type.
#[derive(Debug, Clone)]
struct Gen {
    pick: u8,
    alias: bool,
    directive: bool,
    first: Option<i64>,
    ids: usize,
    children: Vec<Gen>,
}

fn gen_selection() -> impl Strategy<Value = Gen> {
    let node = || {
        (
            any::<u8>(),
            any::<bool>(),
            prop::bool::weighted(0.2),
            proptest::option::of(-3i64..130),
            0usize..4,
        )
    };
    let leaf = node().prop_map(|(pick, alias, directive, first, ids)| Gen {
        pick,
        alias,
        directive,
        first,
        ids,
        children: Vec::new(),
    });
    leaf.prop_recursive(4, 48, 4, move |inner| {
        (node(), proptest::collection::vec(inner, 0..4)).prop_map(
            |((pick, alias, directive, first, ids), children)| Gen {
                pick,
                alias,
                directive,
                first,
                ids,
                children,
            },
        )
    })
}

#[derive(Debug, Clone)]
struct GenDoc {
    subscription: bool,
    root: Vec<Gen>,
    fragments: Vec<(usize, Vec<Gen>)>,
}

fn gen_doc() -> impl Strategy<Value = GenDoc> {
    (
        prop::bool::weighted(0.1),
        proptest::collection::vec(gen_selection(), 1..4),
        proptest::collection::vec(
            (
                0..CONDITIONS.len(),
                proptest::collection::vec(gen_selection(), 1..4),
            ),
            0..6,
        ),
    )
        .prop_map(|(subscription, root, fragments)| GenDoc {
            subscription,
            root,
            fragments,
        })
}

/// A selection with its meaning fixed.
#[derive(Debug, Clone)]
enum Sel {
    Field {
        name: &'static str,
        alias: bool,
        directive: bool,
        argument: Argument,
        multiplier: u64,
        children: Vec<Sel>,
    },
    /// A spread of a fragment by index, or of one the document does not define.
    Spread {
        fragment: Option<usize>,
        directive: bool,
    },
    Inline {
        condition: Option<&'static str>,
        directive: bool,
        children: Vec<Sel>,
    },
}

#[derive(Debug, Clone, Copy)]
enum Argument {
    None,
    First(i64),
    Ids(usize),
}

#[derive(Debug, Clone)]
struct Doc {
    subscription: bool,
    root: Vec<Sel>,
    fragments: Vec<(&'static str, Vec<Sel>)>,
}

/// Which fragments a spread may name: only earlier ones (no cycles), or any, or none at all.
#[derive(Debug, Clone, Copy)]
enum Spreads {
    Acyclic,
    Any,
}

struct Resolver {
    fragments: usize,
    spreads: Spreads,
}

impl Resolver {
    fn doc(gen: &GenDoc, spreads: Spreads) -> Doc {
        let resolver = Resolver {
            fragments: gen.fragments.len(),
            spreads,
        };
        let root_type = if gen.subscription {
            "Subscription"
        } else {
            "Query"
        };
        Doc {
            subscription: gen.subscription,
            root: resolver.set(&gen.root, root_type, None),
            fragments: gen
                .fragments
                .iter()
                .enumerate()
                .map(|(i, (condition, sels))| {
                    let condition = CONDITIONS[*condition];
                    (condition, resolver.set(sels, condition, Some(i)))
                })
                .collect(),
        }
    }

    /// The fragment a spread in fragment `inside` (or the operation) names, if it may spread.
    fn spread_target(&self, pick: u8, inside: Option<usize>) -> Option<Option<usize>> {
        let choice = usize::from(pick / 10);
        match (self.spreads, inside) {
            // One in eleven root spreads names an undefined fragment.
            (_, None) if choice % 11 == 10 => Some(None),
            (_, None) | (Spreads::Any, Some(_)) => {
                (self.fragments > 0).then(|| Some(choice % self.fragments))
            }
            (Spreads::Acyclic, Some(i)) => (i > 0).then(|| Some(choice % i)),
        }
    }

    fn set(&self, gens: &[Gen], ty: &'static str, inside: Option<usize>) -> Vec<Sel> {
        let mut sels: Vec<Sel> = gens.iter().map(|g| self.selection(g, ty, inside)).collect();
        if sels.is_empty() {
            sels.push(typename());
        }
        sels
    }

    fn selection(&self, gen: &Gen, ty: &'static str, inside: Option<usize>) -> Sel {
        match gen.pick % 10 {
            0 => {
                if let Some(fragment) = self.spread_target(gen.pick, inside) {
                    return Sel::Spread {
                        fragment,
                        directive: gen.directive,
                    };
                }
            }
            1 => {
                let condition = (gen.pick % 20 < 10)
                    .then(|| CONDITIONS[usize::from(gen.pick / 20) % CONDITIONS.len()]);
                return Sel::Inline {
                    condition,
                    directive: gen.directive,
                    children: self.set(&gen.children, condition.unwrap_or(ty), inside),
                };
            }
            _ => {}
        }
        let fields = fields_of(ty);
        let (name, child, mult) = fields[usize::from(gen.pick / 10) % fields.len()];
        let (argument, multiplier) = match mult {
            Mult::One => (Argument::None, 1),
            Mult::Nominal => (Argument::None, 10),
            Mult::Ids => (Argument::Ids(gen.ids), gen.ids as u64),
            Mult::Page => match gen.first {
                None => (Argument::None, 20),
                Some(n) if (1..=100).contains(&n) => (Argument::First(n), n as u64),
                Some(n) => (Argument::First(n), 100),
            },
        };
        Sel::Field {
            name,
            alias: gen.alias,
            directive: gen.directive,
            argument,
            multiplier,
            children: match child {
                Some(child) => self.set(&gen.children, child, inside),
                None => Vec::new(),
            },
        }
    }
}

fn typename() -> Sel {
    Sel::Field {
        name: "__typename",
        alias: false,
        directive: false,
        argument: Argument::None,
        multiplier: 1,
        children: Vec::new(),
    }
}

/// Renders the document; with `first_variable`, every `first` reads the variable `$n`.
fn render(doc: &Doc, first_variable: bool) -> String {
    let kind = if doc.subscription {
        "subscription"
    } else {
        "query"
    };
    let mut out = format!("{kind} Q($n: Int) {{");
    render_set(&mut out, &doc.root, first_variable);
    out.push('}');
    for (i, (condition, sels)) in doc.fragments.iter().enumerate() {
        out.push_str(&format!("\nfragment F{i} on {condition} {{"));
        render_set(&mut out, sels, first_variable);
        out.push('}');
    }
    out
}

fn render_set(out: &mut String, sels: &[Sel], first_variable: bool) {
    for sel in sels {
        out.push(' ');
        match sel {
            Sel::Field {
                name,
                alias,
                directive,
                argument,
                children,
                ..
            } => {
                if *alias {
                    out.push_str("al: ");
                }
                out.push_str(name);
                match argument {
                    Argument::None => {}
                    Argument::First(_) if first_variable => out.push_str("(first: $n)"),
                    Argument::First(n) => out.push_str(&format!("(first: {n})")),
                    Argument::Ids(len) => {
                        let ids = vec!["\"x\""; *len].join(", ");
                        out.push_str(&format!("(ids: [{ids}])"));
                    }
                }
                if *directive {
                    out.push_str(" @include(if: true)");
                }
                if !children.is_empty() {
                    out.push_str(" {");
                    render_set(out, children, first_variable);
                    out.push_str(" }");
                }
            }
            Sel::Spread {
                fragment,
                directive,
            } => {
                match fragment {
                    Some(i) => out.push_str(&format!("...F{i}")),
                    None => out.push_str("...Missing"),
                }
                if *directive {
                    out.push_str(" @skip(if: false)");
                }
            }
            Sel::Inline {
                condition,
                directive,
                children,
            } => {
                out.push_str("...");
                if let Some(condition) = condition {
                    out.push_str(&format!(" on {condition}"));
                }
                if *directive {
                    out.push_str(" @include(if: true)");
                }
                out.push_str(" {");
                render_set(out, children, first_variable);
                out.push_str(" }");
            }
        }
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Naive {
    cost: u64,
    depth: u64,
    fields: u64,
    top: u64,
    aliases: u64,
    directives: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum NaiveError {
    Cycle,
    Unknown,
    /// The expansion passed the test's budget: the document is too big to expand naively.
    TooBig,
}

/// Measures `sels` by expanding every spread where it appears, exactly as the executor would
/// walk the document. Saturating arithmetic equals the exact value capped at `u64::MAX` (every
/// term is non-negative), so it matches the analyzer's whatever the order of operations.
fn naive(
    doc: &Doc,
    sels: &[Sel],
    open: &mut Vec<usize>,
    budget: &mut u32,
) -> Result<Naive, NaiveError> {
    let mut totals = Naive::default();
    for sel in sels {
        *budget = budget.checked_sub(1).ok_or(NaiveError::TooBig)?;
        match sel {
            Sel::Field {
                alias,
                directive,
                multiplier,
                children,
                ..
            } => {
                totals.aliases += u64::from(*alias);
                totals.directives += u64::from(*directive);
                // Every field costs 1, `__typename` included (it is paid per object).
                let base = 1u64;
                let child = if children.is_empty() {
                    Naive::default()
                } else {
                    naive(doc, children, open, budget)?
                };
                totals.cost = totals
                    .cost
                    .saturating_add(base.saturating_add(multiplier.saturating_mul(child.cost)));
                totals.depth = totals.depth.max(child.depth + 1);
                totals.fields = totals.fields.saturating_add(child.fields + 1);
                totals.top += 1;
                totals.aliases = totals.aliases.saturating_add(child.aliases);
                totals.directives = totals.directives.saturating_add(child.directives);
            }
            Sel::Spread {
                fragment,
                directive,
            } => {
                totals.directives += u64::from(*directive);
                let i = fragment.ok_or(NaiveError::Unknown)?;
                if open.contains(&i) {
                    return Err(NaiveError::Cycle);
                }
                open.push(i);
                let inner = naive(doc, &doc.fragments[i].1, open, budget)?;
                open.pop();
                merge(&mut totals, &inner);
            }
            Sel::Inline {
                directive,
                children,
                ..
            } => {
                totals.directives += u64::from(*directive);
                let inner = naive(doc, children, open, budget)?;
                merge(&mut totals, &inner);
            }
        }
    }
    Ok(totals)
}

fn merge(totals: &mut Naive, other: &Naive) {
    totals.cost = totals.cost.saturating_add(other.cost);
    totals.depth = totals.depth.max(other.depth);
    totals.fields = totals.fields.saturating_add(other.fields);
    totals.top = totals.top.saturating_add(other.top);
    totals.aliases = totals.aliases.saturating_add(other.aliases);
    totals.directives = totals.directives.saturating_add(other.directives);
}

fn naive_analysis(doc: &Doc) -> Result<Analysis, NaiveError> {
    let mut budget = 50_000;
    let totals = naive(doc, &doc.root, &mut Vec::new(), &mut budget)?;
    let size = |n: u64| usize::try_from(n).unwrap_or(usize::MAX);
    Ok(Analysis {
        cost: totals.cost.max(totals.fields),
        depth: size(totals.depth),
        fields: size(totals.fields),
        aliases: size(totals.aliases),
        root_fields: size(totals.top),
        directives: size(totals.directives),
    })
}

fn analyze_text(text: &str, variables: &Variables) -> Result<Analysis, Refusal> {
    let doc = parse_query(text)
        .unwrap_or_else(|e| panic!("the generator wrote an unparsable document ({e}): {text}"));
    analyze(&doc, None, variables, types(), &unlimited())
}

/// Variables of every shape, for `$n`.
fn any_variables() -> impl Strategy<Value = Variables> {
    let value = prop_oneof![
        Just(serde_json::Value::Null),
        any::<i64>().prop_map(serde_json::Value::from),
        (-5i64..150).prop_map(serde_json::Value::from),
        any::<f64>().prop_map(serde_json::Value::from),
        "[a-z$]{0,6}".prop_map(serde_json::Value::from),
        proptest::collection::vec(0i64..3, 0..4).prop_map(serde_json::Value::from),
        Just(serde_json::json!({ "$var": "n" })),
    ];
    proptest::option::of(value).prop_map(|value| {
        let mut map = serde_json::Map::new();
        if let Some(value) = value {
            map.insert("n".to_owned(), value);
        }
        Variables::from_json(serde_json::Value::Object(map))
    })
}

/// Self-contained selections, spliced at random into an operation and two fragments that may
/// spread each other (and themselves), or fragments that do not exist.
const PIECES: &[&str] = &[
    "a",
    "b: c",
    "__typename",
    "...F0",
    "...F1",
    "...F2",
    "...F0 @skip(if: false)",
    "... on Project { id ...F0 }",
    "... { ...F1 }",
    "project(id: 1) { id ...F0 }",
    "issues(first: 5) { nodes { id ...F0 } }",
    "issues(last: $n) { edges { node { num } } }",
    "nodes(ids: [1, 2]) { ...F1 }",
    "nodes(ids: $n) { id }",
    "x: tenant(id: 2) @include(if: true) { projects(first: 100) { nodes { ...F0 } } }",
];

fn pieces() -> impl Strategy<Value = String> {
    proptest::collection::vec(proptest::sample::select(PIECES), 1..6).prop_map(|p| p.join(" "))
}

fn spliced() -> impl Strategy<Value = String> {
    (pieces(), pieces(), pieces()).prop_map(|(root, f0, f1)| {
        format!("query Q($n: Int) {{ {root} }} fragment F0 on Project {{ {f0} }} fragment F1 on Query {{ {f1} }}")
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn analyze_never_panics_on_generated_documents(
        gen in gen_doc(),
        acyclic in any::<bool>(),
        variables in any_variables(),
        first_variable in any::<bool>(),
    ) {
        let spreads = if acyclic { Spreads::Acyclic } else { Spreads::Any };
        let doc = Resolver::doc(&gen, spreads);
        let text = render(&doc, first_variable);
        match analyze_text(&text, &variables) {
            Ok(analysis) => {
                prop_assert!(analysis.cost >= analysis.fields as u64);
                prop_assert!(analysis.root_fields <= analysis.fields);
                prop_assert!(analysis.aliases <= analysis.fields);
                prop_assert!(analysis.depth <= analysis.fields);
            }
            Err(refusal) => prop_assert!(
                matches!(refusal, Refusal::FragmentCycle { .. } | Refusal::UnknownFragment { .. }),
                "unexpected refusal {refusal:?} with unlimited limits"
            ),
        }
        // The defaults refuse or accept, never panic.
        let parsed = parse_query(&text);
        prop_assert!(parsed.is_ok());
        if let Ok(parsed) = parsed {
            let _ = analyze(&parsed, Some("Q"), &variables, types(), &QueryLimits::default());
            let _ = analyze(&parsed, Some("Other"), &variables, types(), &QueryLimits::default());
        }
    }

    #[test]
    fn analyze_never_panics_on_spliced_documents(text in spliced(), variables in any_variables()) {
        let doc = parse_query(&text);
        prop_assert!(doc.is_ok(), "unparsable: {}", text);
        if let Ok(doc) = doc {
            let _ = analyze(&doc, None, &variables, types(), &QueryLimits::default());
            let _ = analyze(&doc, None, &variables, types(), &unlimited());
        }
    }

    #[test]
    fn memoized_analysis_equals_naive_expansion(gen in gen_doc(), acyclic in any::<bool>()) {
        let spreads = if acyclic { Spreads::Acyclic } else { Spreads::Any };
        let doc = Resolver::doc(&gen, spreads);
        let text = render(&doc, false);
        let expected = naive_analysis(&doc);
        let actual = analyze_text(&text, &Variables::default());
        match expected {
            Ok(expected) => prop_assert_eq!(&actual, &Ok(expected), "document: {}", text),
            Err(NaiveError::TooBig) => {}
            Err(NaiveError::Cycle | NaiveError::Unknown) => prop_assert!(
                matches!(
                    actual,
                    Err(Refusal::FragmentCycle { .. } | Refusal::UnknownFragment { .. })
                ),
                "document: {}, analysis: {:?}", text, actual
            ),
        }
        if acyclic && expected != Err(NaiveError::TooBig) {
            // Acyclic documents fail only on spreads of undefined fragments.
            prop_assert!(
                !matches!(actual, Err(Refusal::FragmentCycle { .. })),
                "a cycle in an acyclic document: {}",
                text
            );
        }
    }

    #[test]
    fn cost_is_monotone_in_first(gen in gen_doc(), a in 1i64..=100, b in 1i64..=100) {
        let doc = Resolver::doc(&gen, Spreads::Acyclic);
        let text = render(&doc, true);
        let (small, large) = (a.min(b), a.max(b));
        let cost = |n: i64| {
            analyze_text(&text, &Variables::from_json(serde_json::json!({ "n": n })))
                .map(|analysis| analysis.cost)
        };
        match (cost(small), cost(large)) {
            (Ok(small_cost), Ok(large_cost)) => prop_assert!(
                small_cost <= large_cost,
                "first {} costs {}, first {} costs {}: {}", small, small_cost, large, large_cost, text
            ),
            (small_result, large_result) => prop_assert_eq!(small_result, large_result),
        }
    }
}
