//! The committed `schema.graphql` is the generated SDL: clients and reviewers read the file, so
//! it must never drift from the code. The schema also documents itself: `graphql-schema-linter`
//! checks that every type, field, argument, input value and enum value has a description
//! (what GraphiQL's docs pane shows), and that the connections follow Relay's spec.
//!
//! The linter needs Node.js 18+ and npm, as the `graphql-http` audit does: the package is
//! installed once, at the pinned version, into a cache directory
//! (`$GRIDGATE_GRAPHQL_SCHEMA_LINTER_HOME`, else `<target dir>/graphql-schema-linter`); without
//! them the test fails, it never skips.

mod support;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use serde_json::Value;
use support::npm::Packages;

#[test]
fn committed_schema_matches_the_code() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/schema.graphql");
    let generated = gridgate::graphql::sdl();
    if std::env::var_os("UPDATE_SCHEMA").is_some() {
        std::fs::write(path, &generated).expect("write schema.graphql");
    }
    let committed = std::fs::read_to_string(path).unwrap_or_default();
    assert!(
        committed == generated,
        "schema.graphql is out of date: run `cargo run -- schema > schema.graphql` \
         (or `UPDATE_SCHEMA=1 cargo test --test schema`) and commit it"
    );
}

#[test]
fn schema_keeps_the_contract_names() {
    let sdl = without_descriptions(&gridgate::graphql::sdl());
    for needle in [
        "interface Node",
        "node(id: ID!): Node",
        "nodes(ids: [ID!]!): [Node]!",
        "tenant(id: ID!): Tenant",
        "project(id: ID!): Project",
        "issue(id: ID!): Issue",
        "type Tenant implements Node",
        "type Project implements Node",
        "type CustomField implements Node",
        "type Issue implements Node",
        "fieldValues: [CustomFieldValue!]!",
        "fieldValue(fieldId: ID!): CustomFieldValue",
        "customFields: [CustomField!]!",
        "direction: OrderDirection! = ASC",
        "customFieldId: ID",
        "type IssueConnection",
        "type IssueEdge",
        "type ProjectConnection",
        "type ProjectEdge",
        "type PageInfo",
        "hasNextPage: Boolean!",
        "hasPreviousPage: Boolean!",
        "startCursor: String",
        "endCursor: String",
        "edges: [IssueEdge!]!",
        "nodes: [Issue!]!",
        "pageInfo: PageInfo!",
        "cursor: String!",
        "node: Issue!",
        "type: CustomFieldType!",
        "position: Int!",
        "state: IssueState!",
        "num: Int!",
        "value: String!",
        "field: CustomField!",
    ] {
        assert!(sdl.contains(needle), "schema lacks `{needle}`");
    }
    for (enum_name, values) in [
        ("CustomFieldType", &["TEXT", "INT", "NUMBER", "DATE"][..]),
        ("IssueState", &["OPEN", "CLOSED"][..]),
        (
            "IssueOrderField",
            &["NUM", "NAME", "STATE", "CUSTOM_FIELD"][..],
        ),
        ("OrderDirection", &["ASC", "DESC"][..]),
    ] {
        let start = sdl.find(&format!("enum {enum_name} {{")).expect(enum_name);
        let body = &sdl[start..start + sdl[start..].find('}').unwrap()];
        for v in values {
            assert!(body.contains(v), "{enum_name} lacks {v}");
        }
    }
    let issues = sdl.find("\tissues(").expect("Project.issues");
    let args = &sdl[issues..issues + sdl[issues..].find("): IssueConnection!").unwrap()];
    for arg in [
        "first: Int",
        "after: String",
        "last: Int",
        "before: String",
        "orderBy: IssueOrder",
    ] {
        assert!(args.contains(arg), "Project.issues lacks {arg}");
    }
}

/// `sdl` without its descriptions and with every argument list on one line, as in
/// `fieldValue(fieldId: ID!): CustomFieldValue`: the contract is the names and types, however
/// they are documented (an argument with a description is printed on lines of its own).
fn without_descriptions(sdl: &str) -> String {
    let mut out = String::with_capacity(sdl.len());
    let mut in_description = false;
    let mut in_arguments = false;
    for line in sdl.lines() {
        let trimmed = line.trim();
        if trimmed == "\"\"\"" {
            in_description = !in_description;
            continue;
        }
        if in_description || (trimmed.starts_with("\"\"\"") && trimmed.ends_with("\"\"\"")) {
            continue;
        }
        if in_arguments {
            if trimmed.starts_with(')') {
                if out.ends_with(", ") {
                    out.truncate(out.len() - 2);
                }
                out.push_str(trimmed);
                out.push('\n');
                in_arguments = false;
            } else {
                out.push_str(trimmed.trim_end_matches(','));
                out.push_str(", ");
            }
            continue;
        }
        out.push_str(line);
        if trimmed.ends_with('(') {
            in_arguments = true;
        } else {
            out.push('\n');
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// graphql-schema-linter.

/// The pinned `graphql-schema-linter`, and its peer dependency `graphql` (the version the
/// `graphql-http` audit uses).
const LINTER_VERSION: &str = "3.0.1";
const GRAPHQL_VERSION: &str = "16.15.0";
/// Use this directory as the npm prefix the linter is installed under.
const LINTER_HOME_ENV: &str = "GRIDGATE_GRAPHQL_SCHEMA_LINTER_HOME";

/// The linter's rules the schema must pass.
const ENFORCED_RULES: &[&str] = &[
    // A description on everything GraphiQL's docs pane lists.
    "types-have-descriptions",
    "fields-have-descriptions",
    "arguments-have-descriptions",
    "input-object-values-have-descriptions",
    "enum-values-have-descriptions",
    "descriptions-are-capitalized",
    "deprecations-have-a-reason",
    // Relay: connection types, their arguments and `PageInfo`.
    "relay-connection-types-spec",
    "relay-connection-arguments-spec",
    "relay-page-info-spec",
    // Naming and hygiene (all hold already; names are a contract and never change to satisfy a
    // rule).
    "defined-types-are-used",
    "types-are-capitalized",
    "fields-are-camel-cased",
    "input-object-values-are-camel-cased",
    "enum-values-all-caps",
];

/// The linter's other rules, left out on purpose. They ask for fields, input fields and enum
/// values in alphabetical order, which only reordering the declarations could give: the order
/// is part of the published schema (introspection and `schema.graphql` list members in it, and
/// so does GraphiQL), and it is by meaning on purpose: `id` first, Relay's `edges`, `nodes` and
/// `pageInfo` together, `clientMutationId` last in every input and payload, and enum values in
/// the order they sort (`OPEN` before `CLOSED`, `ASC` before `DESC`). Documentation does not
/// depend on it. (`interface-fields-sorted-alphabetically` passes today, `Node` having one
/// field, and is left out with the rest of its family.)
const LEFT_OUT_RULES: &[&str] = &[
    "type-fields-sorted-alphabetically",
    "input-object-fields-sorted-alphabetically",
    "enum-values-sorted-alphabetically",
    "interface-fields-sorted-alphabetically",
];

/// The npm prefix holding `node_modules/graphql-schema-linter` at the pinned version.
fn linter() -> &'static Path {
    static INSTALLED: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let packages = Packages {
        home_env: LINTER_HOME_ENV,
        default_dir: "graphql-schema-linter",
        packages: &[
            ("graphql-schema-linter", LINTER_VERSION),
            ("graphql", GRAPHQL_VERSION),
        ],
    };
    match INSTALLED.get_or_init(|| packages.install()) {
        Ok(prefix) => prefix,
        Err(message) => panic!("{message}"),
    }
}

/// Every rule the pinned linter has, by the name `--rules` takes (`lib/rules/foo_bar.js` is
/// `foo-bar`).
fn linter_rules(package: &Path) -> BTreeSet<String> {
    let dir = package.join("lib/rules");
    std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .map(|entry| entry.expect("rule file").path())
        .filter(|path| path.extension().is_some_and(|e| e == "js"))
        .map(|path| {
            path.file_stem()
                .expect("rule file name")
                .to_string_lossy()
                .replace('_', "-")
        })
        .collect()
}

#[test]
fn schema_passes_graphql_schema_linter() {
    let package = linter().join("node_modules/graphql-schema-linter");

    // Every rule of the pinned version is decided one way or the other (a misspelt rule would
    // only be a warning to the linter, and a newer version's new rules must be looked at).
    let known = linter_rules(&package);
    let decided: BTreeSet<String> = ENFORCED_RULES
        .iter()
        .chain(LEFT_OUT_RULES)
        .map(|rule| rule.to_string())
        .collect();
    assert_eq!(
        decided, known,
        "ENFORCED_RULES and LEFT_OUT_RULES must name each rule of graphql-schema-linter \
         {LINTER_VERSION} once"
    );

    let manifest: Value = serde_json::from_str(
        &std::fs::read_to_string(package.join("package.json")).expect("the linter's package.json"),
    )
    .expect("the linter's package.json is JSON");
    let cli = package.join(
        manifest["bin"]["graphql-schema-linter"]
            .as_str()
            .expect("the linter's `bin`"),
    );

    // The schema the server serves, in a directory of its own: the linter also reads any
    // configuration file it finds there (and above), and there is none.
    let dir = tempfile::tempdir().expect("temporary directory");
    let schema = dir.path().join("schema.graphql");
    std::fs::write(&schema, gridgate::graphql::sdl()).expect("write the schema");
    let output = Command::new("node")
        .arg(&cli)
        .arg("--rules")
        .arg(ENFORCED_RULES.join(","))
        .arg("--config-directory")
        .arg(dir.path())
        .arg(&schema)
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .output()
        .expect("could not run `node`: the linter needs Node.js 18+");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success() && stderr.trim().is_empty(),
        "graphql-schema-linter {LINTER_VERSION} reports the schema ({}); its lines are those of \
         `cargo run -- schema`:\n{stdout}{stderr}",
        output.status
    );
}
