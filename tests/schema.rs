//! The committed `schema.graphql` is the generated SDL: clients and reviewers read the file, so
//! it must never drift from the code.

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
    let sdl = gridgate::graphql::sdl();
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
