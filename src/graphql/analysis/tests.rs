//! The analysis against the served schema: counts, costs, limits and refusals; and the input
//! checks against async-graphql's own coercion of the schema's input types.

#![cfg(test)]

use super::walk::{to_u64, Analyzer};
use super::*;

use async_graphql::parser::parse_query;
use async_graphql::parser::types::OperationType;

fn types() -> TypeMap {
    TypeMap::try_from_sdl(&crate::graphql::sdl()).expect("the served schema's SDL parses")
}

fn run(query: &str) -> Result<Analysis, Refusal> {
    run_with(query, &Variables::default(), &QueryLimits::default())
}

fn run_with(query: &str, variables: &Variables, limits: &QueryLimits) -> Result<Analysis, Refusal> {
    let doc = parse_query(query).expect("test query parses");
    analyze(&doc, None, variables, &types(), limits)
}

/// Limits that refuse nothing, to read a document's measurements whatever they are.
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

fn measure(query: &str) -> Analysis {
    run_with(query, &Variables::default(), &unlimited()).expect("measurable")
}

fn cost_with(query: &str, variables: serde_json::Value) -> u64 {
    run_with(query, &Variables::from_json(variables), &unlimited())
        .expect("measurable")
        .cost
}

/// The measurement and the analyzer's work counters, for the tests that prove each
/// fragment and selection is walked once.
fn measure_counting(doc: &ExecutableDocument) -> (Result<Analysis, Refusal>, usize, u64, u64) {
    let types = types();
    let variables = Variables::default();
    let operation = select_operation(doc, None).expect("one operation");
    let mut analyzer = Analyzer::new(doc, operation, &variables, &types);
    let result = analyzer.run();
    (
        result,
        analyzer.fragments_measured,
        analyzer.selections_found,
        analyzer.selections_measured,
    )
}

const GRID_PAGE: &str = r#"{ project(id: "p") { id name customFields { id name type position }
    issues(first: 100, orderBy: {field: NUM}) {
        edges { cursor node { id num name state version fieldValues { value field { id } } } }
        pageInfo { hasNextPage endCursor } } } }"#;

/// `F0` selects `leaf`; every later fragment spreads the previous one twice; the operation
/// spreads the last one inside `root` (or at the root when `root` is empty).
fn doubling_bomb(levels: usize, on: &str, root: &str, leaf: &str) -> String {
    let spread = format!("...F{levels}");
    let body = if root.is_empty() {
        spread
    } else {
        format!("{root} {{ {spread} }}")
    };
    let mut query = format!("{{ {body} }} fragment F0 on {on} {{ {leaf} }}");
    for i in 1..=levels {
        let j = i - 1;
        query.push_str(&format!(" fragment F{i} on {on} {{ ...F{j} ...F{j} }}"));
    }
    query
}

#[test]
fn the_type_map_reads_the_served_schema() {
    let types = types();
    let issues = types.field("Project", "issues").expect("Project.issues");
    assert_eq!(issues.type_name, "IssueConnection");
    assert!(!issues.is_list);
    assert!(issues.argument("first").is_some());
    let nodes = types.field("Query", "nodes").expect("Query.nodes");
    assert_eq!(nodes.type_name, "Node");
    assert!(nodes.is_list);
    let names: Vec<_> = nodes.arguments.iter().map(|a| a.name.as_str()).collect();
    assert_eq!(names, ["ids"]);
    let page = types.field("IssueConnection", "nodes").expect("page");
    assert_eq!(page.type_name, "Issue");
    assert!(page.is_list);
    assert_eq!(
        types.field("Node", "id").map(|f| f.type_name.as_str()),
        Some("ID")
    );
    assert_eq!(types.root_type(OperationType::Query), "Query");
    assert_eq!(types.root_type(OperationType::Mutation), "Mutation");
    assert_eq!(types.root_type(OperationType::Subscription), "Subscription");
    assert!(TypeMap::try_from_sdl("type {").is_err());
    let blind = TypeMap::from_sdl("type {");
    assert_eq!(blind, TypeMap::default());
    assert!(blind.field("Project", "issues").is_none());
    assert_eq!(blind.root_type(OperationType::Query), "Query");
}

#[test]
fn the_type_map_follows_schema_definitions_and_extensions() {
    let types = TypeMap::from_sdl(
        "schema { query: Root } type Root { a: Int } extend type Root { b: [Int] }",
    );
    assert_eq!(types.root_type(OperationType::Query), "Root");
    assert!(types.field("Root", "a").is_some());
    assert!(types.field("Root", "b").is_some_and(|b| b.is_list));
}

#[test]
fn the_grid_page_passes_the_defaults_at_its_exact_cost() {
    let analysis = run(GRID_PAGE).expect("the grid page is served");
    // project 1 + id 1 + name 1 + customFields (1 + 10 × 4 = 41)
    // + issues (1 + 100 × (edges (1 + cursor 1 + node (1 + 5 scalars
    //   + fieldValues (1 + 10 × (value 1 + field (1 + id 1))))) + pageInfo (1 + 2)))
    // = 4 + 41 + 1 + 100 × 42 = 4,245.
    assert_eq!(
        analysis,
        Analysis {
            cost: 4_245,
            depth: 7,
            fields: 24,
            aliases: 0,
            root_fields: 1,
            directives: 0,
        }
    );
    assert_eq!(count_tokens(GRID_PAGE, usize::MAX), Ok(59));
}

#[test]
fn nested_hundred_row_pages_are_too_costly() {
    let query = r#"{ project(id: "p") { issues(first: 100) { nodes { project {
        issues(first: 100) { nodes { project { issues(first: 100) { nodes { id } } } } } } } } } }"#;
    assert_eq!(
        run(query),
        Err(Refusal::TooCostly {
            cost: 2_030_302,
            max: 10_000
        })
    );
}

#[test]
fn doubling_bombs_are_refused_measuring_each_fragment_once() {
    for (levels, cost) in [(20, (1u64 << 20) + 1), (60, (1u64 << 60) + 1)] {
        let doc = parse_query(doubling_bomb(levels, "Project", "project(id: \"p\")", "id"))
            .expect("parses");
        let (result, fragments, found, measured) = measure_counting(&doc);
        let analysis = result.expect("measurable");
        assert_eq!(analysis.cost, cost);
        assert_eq!(analysis.depth, 2);
        assert_eq!(fragments, levels + 1, "each fragment measured once");
        // The operation's two selections, one in F0 and two in every other fragment.
        assert_eq!(found, to_u64(2 + 1 + 2 * levels));
        assert_eq!(measured, found, "no spread walked twice");
        assert_eq!(
            QueryLimits::default().check(&analysis),
            Err(Refusal::TooCostly { cost, max: 10_000 })
        );
    }
}

#[test]
fn doubling_bombs_saturate_instead_of_wrapping() {
    let analysis = measure(&doubling_bomb(
        70,
        "Project",
        "project(id: \"p\")",
        "a: id @include(if: true)",
    ));
    assert_eq!(analysis.cost, u64::MAX);
    assert_eq!(analysis.fields, usize::MAX);
    assert_eq!(analysis.aliases, usize::MAX);
    assert_eq!(analysis.directives, usize::MAX);
    let bomb = doubling_bomb(
        40,
        "Project",
        "project(id: \"p\")",
        "issues { nodes { id } }",
    );
    assert!(matches!(run(&bomb), Err(Refusal::TooCostly { .. })));
}

#[test]
fn typename_bombs_cost_at_least_their_field_count() {
    let fields = (1 << 30) + 1;
    assert_eq!(
        run(&doubling_bomb(
            30,
            "Project",
            "project(id: \"p\")",
            "__typename"
        )),
        Err(Refusal::TooCostly {
            cost: fields,
            max: 10_000
        }),
        "`__typename` touches no store, but the executor still walks every copy"
    );
    assert_eq!(measure("{ __typename }").cost, 1);
    assert_eq!(measure("{ nodes(ids: []) { id } }").cost, 2);
    let root_bomb = doubling_bomb(30, "Query", "", "__typename");
    assert!(matches!(
        run(&root_bomb),
        Err(Refusal::TooManyRootFields { count, .. }) if count == 1 << 30
    ));
}

#[test]
fn fragment_cycles_are_refused() {
    let pair = r#"{ project(id: "p") { ...F0 } }
        fragment F0 on Project { id ...F1 } fragment F1 on Project { name ...F0 }"#;
    assert!(matches!(run(pair), Err(Refusal::FragmentCycle { .. })));
    let own = r#"{ project(id: "p") { ...F } } fragment F on Project { tenant { projects { nodes { ...F } } } }"#;
    assert_eq!(
        run(own),
        Err(Refusal::FragmentCycle {
            name: "F".to_owned()
        })
    );
    let through_inline = r#"{ node(id: "n") { ...A } }
        fragment A on Node { ... on Project { ...B } } fragment B on Project { issues { nodes { ...A } } }"#;
    assert!(matches!(
        run(through_inline),
        Err(Refusal::FragmentCycle { .. })
    ));
}

#[test]
fn unknown_fragments_are_refused() {
    let query = r#"{ project(id: "p") { ...Known } } fragment Known on Project { id ...Missing }"#;
    assert_eq!(
        run(query),
        Err(Refusal::UnknownFragment {
            name: "Missing".to_owned()
        })
    );
}

#[test]
fn a_thousand_aliased_projects_are_refused() {
    let mut query = String::from("{");
    for i in 0..1_000 {
        query.push_str(&format!(
            r#" p{i}: project(id: "p") {{ issues {{ nodes {{ id }} }} }}"#
        ));
    }
    query.push('}');
    assert_eq!(
        run(&query),
        Err(Refusal::TooManyAliases {
            count: 1_000,
            max: 30
        })
    );
    assert_eq!(measure(&query).cost, 42_000);
}

#[test]
fn node_lookup_fan_out_is_refused() {
    let ids = (0..100)
        .map(|i| format!("\"issue-{i}\""))
        .collect::<Vec<_>>()
        .join(", ");
    let mut query = String::from("{");
    for i in 0..175 {
        query.push_str(&format!(" n{i}: nodes(ids: [{ids}]) {{ id }}"));
    }
    query.push('}');
    assert_eq!(
        run(&query),
        Err(Refusal::TooManyAliases {
            count: 175,
            max: 30
        })
    );
    let lenient = QueryLimits {
        max_aliases: 1_000,
        max_root_fields: 1_000,
        ..QueryLimits::default()
    };
    assert_eq!(
        run_with(&query, &Variables::default(), &lenient),
        Err(Refusal::TooCostly {
            cost: 175 * 101,
            max: 10_000
        })
    );
}

#[test]
fn fragment_counts_are_the_expanded_counts() {
    let aliases = (0..10)
        .map(|i| format!("a{i}: id"))
        .collect::<Vec<_>>()
        .join(" ");
    let mut query = String::from(r#"{ project(id: "p") {"#);
    for _ in 0..100 {
        query.push_str(" ...Ten @include(if: true)");
    }
    query.push_str(&format!(" }} }} fragment Ten on Project {{ {aliases} }}"));
    let analysis = measure(&query);
    assert_eq!(analysis.aliases, 1_000);
    assert_eq!(analysis.directives, 100);
    assert_eq!(analysis.fields, 1_001);
    assert_eq!(analysis.cost, 1_001);
    assert_eq!(analysis.depth, 2);

    let root = "{ ...Roots ...Roots ... on Query { ...Roots } } \
                fragment Roots on Query { a: tenant(id: \"t\") { id } b: issue(id: \"i\") { id } }";
    let analysis = measure(root);
    assert_eq!(analysis.root_fields, 6);
    assert_eq!(analysis.aliases, 6);
    assert_eq!(analysis.depth, 2);
}

#[test]
fn page_sizes_come_from_first_last_and_variables() {
    let page = |args: &str| {
        let query = format!(
            "query($n: Int, $m: Int = 7) {{ project(id: \"p\") {{ issues{args} {{ nodes {{ id }} }} }} }}"
        );
        // project 1 + issues (1 + size × (nodes 1 + id 1))
        (cost_with(&query, serde_json::json!({ "n": 5, "s": "x", "z": null })) - 2) / 2
    };
    assert_eq!(page(""), 20);
    assert_eq!(page("(first: 3)"), 3);
    assert_eq!(page("(last: 30)"), 30);
    assert_eq!(page("(first: 3, last: 40)"), 40);
    assert_eq!(page("(first: $n)"), 5);
    assert_eq!(page("(first: $m)"), 7, "the variable's default");
    assert_eq!(page("(first: $unset)"), 20);
    assert_eq!(page("(first: null)"), 20);
    assert_eq!(page("(first: $z)"), 20);
    assert_eq!(page("(first: 0)"), 100);
    assert_eq!(page("(first: -3)"), 100);
    assert_eq!(page("(first: 1000)"), 100);
    assert_eq!(page("(first: 2.5)"), 100);
    assert_eq!(page("(first: \"x\")"), 100);
    assert_eq!(page("(first: $s)"), 100);
    let tenant = "{ tenant(id: \"t\") { projects(first: 50) { edges { node { id } } } } }";
    // tenant 1 + projects (1 + 50 × (edges 1 + node (1 + id 1)))
    assert_eq!(measure(tenant).cost, 152);
    // The tenant list is a connection like a tenant's projects, and multiplies what it holds:
    // tenants (1 + 20 × (nodes 1 + id 1 + name 1 + projects (1 + 20 × (nodes 1 + id 1 + name 1)))).
    let tenants =
        "{ tenants(first: 20) { nodes { id name projects(first: 20) { nodes { id name } } } } }";
    assert_eq!(measure(tenants).cost, 1 + 20 * (3 + (1 + 20 * 3)));
    assert_eq!(measure("{ tenants { nodes { id } } }").cost, 1 + 20 * 2);
}

#[test]
fn id_lookups_cost_their_list_length() {
    let lookup = |ids: &str, variables: serde_json::Value| {
        let query = format!("query($ids: [ID!]! = [\"d\"]) {{ nodes(ids: {ids}) {{ id }} }}");
        cost_with(&query, variables) - 1
    };
    assert_eq!(lookup("[\"a\", \"b\", \"c\"]", serde_json::json!({})), 3);
    assert_eq!(lookup("\"a\"", serde_json::json!({})), 1);
    assert_eq!(
        lookup("$ids", serde_json::json!({ "ids": ["a", "b", "c", "d"] })),
        4
    );
    assert_eq!(lookup("$ids", serde_json::json!({ "ids": "a" })), 1);
    assert_eq!(lookup("$ids", serde_json::json!({})), 1, "the default");
    assert_eq!(lookup("$ids", serde_json::json!({ "ids": null })), 100);
    assert_eq!(lookup("$other", serde_json::json!({})), 100);
}

#[test]
fn type_conditions_pick_the_fields_and_lists_are_told_apart_by_parent() {
    // node 1 + (fieldValues 1 + 10 × value 1)
    let issue = r#"{ node(id: "n") { ... on Issue { fieldValues { value } } } }"#;
    assert_eq!(measure(issue).cost, 12);
    // nodes (1 + 2 × (issues (1 + 5 × (nodes 1 + id 1)))): the connection's `nodes` adds
    // no multiplier, the root `nodes` multiplies by its ids.
    let project = r#"{ nodes(ids: ["a", "b"]) { ...P } } fragment P on Project { issues(first: 5) { nodes { id } } }"#;
    assert_eq!(measure(project).cost, 23);
    // Without a type condition the interface's fields apply.
    let plain = r#"{ node(id: "n") { ... { id } ... @include(if: true) { __typename } } }"#;
    let analysis = measure(plain);
    // node 1 + id 1 + __typename 1.
    assert_eq!((analysis.cost, analysis.directives), (3, 1));
}

#[test]
fn typename_costs_one_per_object_and_unknown_fields_cost_one() {
    // project 1 + __typename 1 + issues (1 + 20 × (nodes 1 + __typename 1)), as an Apollo
    // client that adds `__typename` everywhere would send it.
    let apollo = r#"{ project(id: "p") { __typename issues { nodes { __typename } } } }"#;
    assert_eq!(measure(apollo).cost, 43);
    // A spread bomb of `__typename` inside a page is paid per object (the review's
    // 9,000 objects × 8,192 copies, at a smaller scale).
    let mut bomb = String::from("fragment F0 on Issue { __typename }\n");
    for i in 1..=8 {
        bomb.push_str(&format!(
            "fragment F{i} on Issue {{ ...F{} ...F{} }}\n",
            i - 1,
            i - 1
        ));
    }
    bomb.push_str(r#"{ project(id: "p") { issues(first: 90) { nodes { ...F8 } } } }"#);
    assert!(measure(&bomb).cost > 90 * 256, "{}", measure(&bomb).cost);
    let unknown = r#"{ project(id: "p") { nope(first: 100) { deeper { id } } } }"#;
    assert_eq!(measure(unknown).cost, 4);
    assert_eq!(measure(unknown).depth, 4);
}

#[test]
fn skip_and_include_count_as_included() {
    let query = r#"query($no: Boolean = false) @cached {
        project(id: "p") @skip(if: true) { issues @include(if: $no) { nodes { id } } } }"#;
    let analysis = measure(query);
    assert_eq!(analysis.cost, 42);
    assert_eq!(analysis.directives, 3);
}

#[test]
fn the_operation_is_chosen_like_the_executor_chooses_it() {
    let types = types();
    let limits = QueryLimits::default();
    let vars = Variables::default();
    let two =
        parse_query("query A { __typename } query B { tenant(id: \"t\") { id } }").expect("parses");
    assert_eq!(
        analyze(&two, Some("B"), &vars, &types, &limits).map(|a| a.cost),
        Ok(2)
    );
    assert_eq!(
        analyze(&two, None, &vars, &types, &limits),
        Err(Refusal::AmbiguousOperation)
    );
    assert_eq!(
        analyze(&two, Some("C"), &vars, &types, &limits),
        Err(Refusal::UnknownOperation {
            name: "C".to_owned()
        })
    );
    let named = parse_query("query A { __typename }").expect("parses");
    assert!(analyze(&named, None, &vars, &types, &limits).is_ok());
    let anonymous = parse_query("{ __typename }").expect("parses");
    assert!(matches!(
        analyze(&anonymous, Some("A"), &vars, &types, &limits),
        Err(Refusal::UnknownOperation { .. })
    ));
}

#[test]
fn mutations_and_subscriptions_use_their_roots() {
    let mutation = r#"mutation { createTenant(input: {name: "t"}) { tenant { id } } }"#;
    assert_eq!(measure(mutation).cost, 3);
    // The schema has no subscriptions: unknown fields cost 1 and multiply by 1.
    let subscription = "subscription { events { items { id } } }";
    assert_eq!(measure(subscription).cost, 3);
}

#[test]
fn depth_counts_fields_not_fragments() {
    let query = r#"{ project(id: "p") { ... on Project { ...F } } }
        fragment F on Project { ... { tenant { id } } }"#;
    assert_eq!(measure(query).depth, 3);
    assert_eq!(measure("{ __typename }").depth, 1);
}

#[test]
fn long_fragment_chains_fit_a_two_mebibyte_stack() {
    let links = 2_000;
    let mut chain =
        String::from("{ project(id: \"p\") { ...F2000 } } fragment F0 on Project { id }");
    let mut nested =
        String::from("{ project(id: \"p\") { ...F2000 } } fragment F0 on Project { id }");
    for i in 1..=links {
        let j = i - 1;
        chain.push_str(&format!(" fragment F{i} on Project {{ ...F{j} }}"));
        nested.push_str(&format!(
            " fragment F{i} on Project {{ tenant {{ projects {{ nodes {{ ...F{j} }} }} }} }}"
        ));
    }
    let chain = parse_query(chain).expect("parses");
    let nested = parse_query(nested).expect("parses");
    let types = types();
    let handle = std::thread::Builder::new()
        .stack_size(2 * 1024 * 1024)
        .spawn(move || {
            let vars = Variables::default();
            let limits = unlimited();
            (
                analyze(&chain, None, &vars, &types, &limits),
                analyze(&nested, None, &vars, &types, &limits),
            )
        })
        .expect("spawn");
    let (chain, nested) = handle.join().expect("no stack overflow");
    let chain = chain.expect("measurable");
    assert_eq!((chain.cost, chain.depth), (2, 2));
    let nested = nested.expect("measurable");
    assert_eq!(nested.depth, 2 + 3 * links);
    assert_eq!(nested.cost, u64::MAX, "20 projects per page, 2,000 times");
    assert!(matches!(
        QueryLimits::default().check(&nested),
        Err(Refusal::TooDeep { .. })
    ));
}

#[test]
fn tokens_are_counted_like_the_lexer_counts_them() {
    assert_eq!(count_tokens("", 10), Ok(0));
    assert_eq!(count_tokens("\u{feff} \t,,\r\n# just a comment", 10), Ok(0));
    assert_eq!(count_tokens("{ a { ...F } }", 10), Ok(7));
    assert_eq!(count_tokens("! $ & ( ) ... : = @ [ ] { | }", 100), Ok(14));
    assert_eq!(count_tokens("a(x: -1.5e+3, y: 0, z: 12)", 100), Ok(12));
    assert_eq!(count_tokens(r#"f(s: "a \" # b", t: "")"#, 100), Ok(9));
    assert_eq!(
        count_tokens("f(s: \"\"\" a \\\"\"\" \" \"\" b \"\"\")", 100),
        Ok(6),
        "an escaped triple quote stays inside the block string"
    );
    assert_eq!(count_tokens("a # b c d\n e", 10), Ok(2));
    assert_eq!(count_tokens("a \"unterminated { b c", 10), Ok(2));
    assert_eq!(count_tokens("a \"\"\"unterminated \"\" { b c", 10), Ok(2));
    assert_eq!(count_tokens("a \"\\", 10), Ok(2));
    assert_eq!(
        count_tokens("é ü %", 10),
        Ok(3),
        "one token per stray character"
    );
    assert_eq!(count_tokens(". .. - 1.", 10), Ok(6));
    assert_eq!(count_tokens("a b c", 3), Ok(3));
    assert_eq!(
        count_tokens("a b c d", 3),
        Err(Refusal::TooManyTokens { max: 3 })
    );
}

#[test]
fn nesting_is_counted_outside_strings_and_comments() {
    use super::check_nesting;
    assert_eq!(check_nesting("{ a { b(c: [[1]]) } }", 5), Ok(()));
    assert_eq!(
        check_nesting("{ a { b(c: [[1]]) } }", 4),
        Err(Refusal::TooDeeplyNested { max: 4 })
    );
    assert_eq!(check_nesting("{ a(s: \"[[[[[[\") # {{{{{{\n }", 2), Ok(()));
    assert_eq!(check_nesting("{ a(s: \"\"\"[[[[\"\"\") }", 2), Ok(()));
    // Closing more than was opened does not make room for more.
    assert_eq!(
        check_nesting("}}}} {{{", 2),
        Err(Refusal::TooDeeplyNested { max: 2 })
    );
}

#[test]
fn refusals_read_well() {
    assert_eq!(
        Refusal::TooCostly {
            cost: 20_000,
            max: 10_000
        }
        .to_string(),
        "the query's estimated cost is 20000, over the limit of 10000; ask for smaller \
         pages (`first`/`last`), fewer `ids`, or fewer nested lists"
    );
    assert_eq!(
        Refusal::FragmentCycle {
            name: "F".to_owned()
        }
        .to_string(),
        "fragment `F` spreads itself, directly or through other fragments"
    );
}

mod inputs {
    //! The input checks against async-graphql's own coercion of the schema's input types (the
    //! `InputObject`s the resolvers take): whatever the checks accept, async-graphql parses, so
    //! no resolver can fail on its input's shape; and whatever async-graphql parses, the checks
    //! accept, so they refuse nothing that would have run, but for a field the type does not
    //! have, which the specification refuses and async-graphql ignores, and for integers beyond
    //! 32 bits, which the specification's `Int` does not hold and async-graphql's `i64` does.

    use async_graphql::indexmap::IndexMap;
    use async_graphql::{InputType, Number};
    use proptest::prelude::*;

    use super::super::inputs::{check_value, Subject};
    use super::super::TypeMap;
    use crate::graphql::args::{IssueColumn, IssueFilter, IssueOrder};
    use crate::graphql::mutation::*;
    use crate::graphql::views::{CreateViewInput, DeleteViewInput, UpdateViewInput};
    use async_graphql::parser::types::Type;
    use async_graphql::Name;
    use async_graphql_value::ConstValue;

    fn types() -> TypeMap {
        TypeMap::from_sdl(&crate::graphql::sdl())
    }

    /// Field names of the schema's input types, one that none has, and the values they take.
    const NAMES: &[&str] = &[
        "id",
        "name",
        "projectId",
        "tenantId",
        "issueId",
        "fieldId",
        "value",
        "values",
        "fieldValues",
        "state",
        "type",
        "position",
        "expectedVersion",
        "clientMutationId",
        "field",
        "customFieldId",
        "direction",
        "empty",
        "and",
        "or",
        "not",
        "column",
        "eq",
        "in",
        "isEmpty",
        "options",
        "label",
        "color",
        "orderBy",
        "filter",
        "columns",
        "bogus",
    ];
    const TEXTS: &[&str] = &[
        "project-35e9",
        "x",
        "",
        "NUM",
        "CUSTOM_FIELD",
        "ASC",
        "DESC",
        "OPEN",
        "CLOSED",
        "TEXT",
        "INT",
        "DATE",
        "SELECT",
        "FIRST",
    ];

    fn leaf() -> impl Strategy<Value = ConstValue> {
        prop_oneof![
            Just(ConstValue::Null),
            any::<bool>().prop_map(ConstValue::Boolean),
            prop_oneof![Just(0i64), Just(7), Just(-3), Just(1 << 40)]
                .prop_map(|n| ConstValue::Number(n.into())),
            Just(ConstValue::Number(u64::MAX.into())),
            Just(ConstValue::Number(Number::from_f64(1.5).unwrap())),
            prop::sample::select(TEXTS).prop_map(|t| ConstValue::String(t.to_owned())),
        ]
    }

    fn value() -> impl Strategy<Value = ConstValue> {
        leaf().prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..3).prop_map(ConstValue::List),
                prop::collection::vec((prop::sample::select(NAMES), inner), 0..5).prop_map(
                    |fields| {
                        let map: IndexMap<Name, ConstValue> =
                            fields.into_iter().map(|(k, v)| (Name::new(k), v)).collect();
                        ConstValue::Object(map)
                    }
                ),
            ]
        })
    }

    /// A valid value of each input type, to mutate from.
    fn valid(ty: &str) -> ConstValue {
        let json = match ty {
            "IssueOrder" => serde_json::json!({"field": "CUSTOM_FIELD", "customFieldId": "x"}),
            "IssueColumn" => serde_json::json!({"field": "NUM"}),
            "IssueFilter" => serde_json::json!({
                "or": [{"column": {"field": "NAME"}, "in": ["a"]}, {"not": {"and": []}}]
            }),
            "FieldValueInput" => serde_json::json!({"fieldId": "x", "value": "1"}),
            "CreateIssueInput" => {
                serde_json::json!({"projectId": "p", "name": "n", "fieldValues": [{"fieldId": "x"}]})
            }
            "SetIssueFieldValuesInput" => {
                serde_json::json!({"issueId": "i", "values": [{"fieldId": "x", "value": null}]})
            }
            "UpdateIssueInput" => {
                serde_json::json!({"id": "i", "state": "OPEN", "expectedVersion": 2})
            }
            "CreateCustomFieldInput" => serde_json::json!({
                "projectId": "p", "name": "n", "type": "SELECT", "position": 1,
                "options": [{"label": "a"}, {"id": "opt-1", "label": "b", "color": null}]
            }),
            "SelectOptionInput" => serde_json::json!({"id": "opt-1", "label": "l", "color": "red"}),
            "CreateTenantInput" => serde_json::json!({"name": "n"}),
            "CreateProjectInput" => serde_json::json!({"tenantId": "t", "name": "n"}),
            "CreateViewInput" => serde_json::json!({
                "projectId": "p", "name": "n", "orderBy": [{"field": "NUM"}],
                "filter": {"column": {"field": "STATE"}, "eq": "OPEN"}, "columns": ["x"]
            }),
            "UpdateViewInput" => serde_json::json!({"id": "i", "filter": null, "columns": []}),
            "DeleteIssueInput"
            | "DeleteProjectInput"
            | "DeleteCustomFieldInput"
            | "DeleteViewInput" => {
                serde_json::json!({"id": "i", "clientMutationId": "c"})
            }
            _ => serde_json::json!({"id": "i", "name": "n"}),
        };
        ConstValue::from_json(json).unwrap()
    }

    /// A valid value with one field replaced by (or added as) an arbitrary value.
    fn near(ty: &'static str) -> impl Strategy<Value = ConstValue> {
        (prop::sample::select(NAMES), value()).prop_map(move |(field, v)| {
            let mut base = valid(ty);
            if let ConstValue::Object(map) = &mut base {
                map.insert(Name::new(field), v);
            }
            base
        })
    }

    /// Whether async-graphql's coercion of `T` takes `value`.
    fn parses<T: InputType>(value: &ConstValue) -> bool {
        T::parse(Some(value.clone())).is_ok()
    }

    fn agree(
        types: &TypeMap,
        ty: &str,
        value: &ConstValue,
        parsed: bool,
    ) -> Result<(), TestCaseError> {
        let ty_ = Type::new(&format!("{ty}!")).unwrap();
        match check_value(types, value, &ty_, Subject::Variable(&Name::new("v"))) {
            Ok(()) => prop_assert!(parsed, "{ty}: the checks accept {value}, async-graphql not"),
            // A field the type lacks: the specification refuses it, async-graphql ignores it.
            Err(refusal) if refusal.message.contains("has no field") => {}
            // An integer beyond 32 bits: the specification's `Int` is 32-bit, while
            // async-graphql's `i64` fields (positions, versions) take more.
            Err(refusal) if refusal.message.contains("expected `Int`, found the number") => {}
            Err(refusal) => prop_assert!(!parsed, "{ty}: async-graphql takes {value}: {refusal}"),
        }
        Ok(())
    }

    macro_rules! agreement {
        ($($test:ident: $ty:ident),* $(,)?) => {
            proptest! {
                #![proptest_config(ProptestConfig::with_cases(256))]
                $(
                    #[test]
                    fn $test(arbitrary in value(), mutated in near(stringify!($ty))) {
                        let types = types();
                        let valid = valid(stringify!($ty));
                        let ty = Type::new(concat!(stringify!($ty), "!")).unwrap();
                        prop_assert!(check_value(&types, &valid, &ty, Subject::Variable(&Name::new("v"))).is_ok());
                        prop_assert!(parses::<$ty>(&valid));
                        for v in [&arbitrary, &mutated] {
                            agree(&types, stringify!($ty), v, parses::<$ty>(v))?;
                        }
                    }
                )*
            }
        };
    }

    agreement!(
        issue_order: IssueOrder,
        issue_column: IssueColumn,
        issue_filter: IssueFilter,
        field_value: FieldValueInput,
        create_issue: CreateIssueInput,
        update_issue: UpdateIssueInput,
        set_values: SetIssueFieldValuesInput,
        delete_issue: DeleteIssueInput,
        create_field: CreateCustomFieldInput,
        update_field: UpdateCustomFieldInput,
        select_option: SelectOptionInput,
        delete_field: DeleteCustomFieldInput,
        create_project: CreateProjectInput,
        update_project: UpdateProjectInput,
        delete_project: DeleteProjectInput,
        create_tenant: CreateTenantInput,
        update_tenant: UpdateTenantInput,
        create_view: CreateViewInput,
        update_view: UpdateViewInput,
        delete_view: DeleteViewInput,
    );

    #[test]
    fn every_input_type_of_the_schema_is_compared() {
        let sdl = crate::graphql::sdl();
        let declared = sdl.matches("\ninput ").count() + usize::from(sdl.starts_with("input "));
        assert_eq!(
            declared, 20,
            "a new input type needs its line in `agreement!`"
        );
    }
}

#[test]
fn the_operation_is_chosen_as_execution_chooses_it() {
    let chosen = |query: &str, name: Option<&str>| {
        let doc = parse_query(query).unwrap();
        let ty = select_operation(&doc, name).ok().map(|op| op.ty);
        let name = operation_name(&doc, name).map(str::to_owned);
        (ty, name)
    };
    assert_eq!(chosen("{ a }", None), (Some(OperationType::Query), None));
    assert_eq!(
        chosen("mutation M { a }", None),
        (Some(OperationType::Mutation), Some("M".into()))
    );
    assert_eq!(
        chosen("query A { a } mutation B { b }", Some("B")).0,
        Some(OperationType::Mutation)
    );
    assert_eq!(chosen("query A { a } mutation B { b }", None).0, None);
    assert_eq!(chosen("query A { a }", Some("Z")).0, None);
    assert_eq!(chosen("{ a }", Some("A")).0, None);
}
