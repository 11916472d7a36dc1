//! Tidy checks on the source tree (after rust-analyzer's tidy test): the architecture's
//! invariants, written down in ARCHITECTURE.md, are enforced here so they cannot rot.

use std::fs;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in fs::read_dir(dir).expect("read dir") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            out.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    out.sort();
    out
}

fn relative(path: &Path) -> String {
    path.strip_prefix(root())
        .unwrap()
        .to_string_lossy()
        .replace('\\', "/")
}

/// The part of a source file before its `#[cfg(test)]` module; nothing of a file that is a
/// test module of its own (`#![cfg(test)]`, like `graphql/analysis/tests.rs`).
fn non_test_code(text: &str) -> &str {
    if text.lines().any(|line| line.trim() == "#![cfg(test)]") {
        return "";
    }
    text.find("#[cfg(test)]").map_or(text, |i| &text[..i])
}

fn src_files() -> Vec<(String, String)> {
    rust_files(&root().join("src"))
        .into_iter()
        .map(|p| (relative(&p), fs::read_to_string(&p).expect("read")))
        .collect()
}

#[test]
fn every_module_says_what_it_owns() {
    for (path, text) in src_files() {
        assert!(
            text.starts_with("//! "),
            "{path} must open with a `//!` line saying what it owns"
        );
    }
}

#[test]
fn only_the_store_modules_touch_their_backends() {
    for (path, text) in src_files() {
        let code = non_test_code(&text);
        if !path.starts_with("src/store/dynamodb/") {
            for needle in ["aws_sdk_dynamodb", "aws_config", "aws_smithy"] {
                assert!(
                    !code.contains(needle),
                    "{path} uses {needle}: only the files under src/store/dynamodb/ may"
                );
            }
        }
        if !path.starts_with("src/store/embedded/") {
            assert!(
                !code.contains("redb::"),
                "{path} uses redb: only the files under src/store/embedded/ may"
            );
        }
    }
}

#[test]
fn telemetry_depends_on_no_layer_above_it() {
    // The store and the transport report to telemetry; telemetry takes what it records as
    // parameters (an operation's type and name), so it never imports the layers that use it.
    for (path, text) in src_files() {
        if path.starts_with("src/telemetry/") {
            for upper in [
                "crate::graphql",
                "crate::http",
                "crate::repo",
                "crate::paging",
            ] {
                assert!(
                    !non_test_code(&text).contains(upper),
                    "{path} uses {upper}: telemetry must not depend on the layers above it"
                );
            }
        }
    }
}

#[test]
fn planned_rows_depend_on_no_object_type_above_them() {
    // `graphql/types` defines the object types and lists its rows through `graphql/rows`;
    // `rows` is given the object types as the parameters of its `Objects` trait and the plain
    // values it writes by `graphql/values`, so the two never import each other in a circle.
    for (path, text) in src_files() {
        let code = non_test_code(&text);
        if path == "src/graphql/rows.rs" || path == "src/graphql/values.rs" {
            for upper in [
                "super::types",
                "graphql::types",
                "super::mutation",
                "super::prefetch",
            ] {
                assert!(
                    !code.contains(upper),
                    "{path} uses {upper}: the planned rows and plain values sit below the object types"
                );
            }
        }
        if path == "src/graphql/values.rs" {
            assert!(
                !code.contains("super::rows"),
                "{path} uses super::rows: the plain values sit below the planned rows"
            );
        }
    }
}

#[test]
fn input_checks_and_admission_have_one_home_each() {
    for (path, text) in src_files() {
        let code = non_test_code(&text);
        if path != "src/graphql/analysis/inputs.rs" {
            assert!(
                !code.contains("async_graphql_value"),
                "{path} uses async_graphql_value: only graphql/analysis/inputs.rs checks literals"
            );
        }
        if path != "src/http/admission.rs" {
            assert!(
                !code.contains("governor"),
                "{path} uses governor: admission lives in http/admission.rs"
            );
        }
    }
}

#[test]
fn graphql_never_builds_keys_or_calls_stores() {
    for (path, text) in src_files() {
        if path.starts_with("src/graphql/") {
            // The request context wraps the store in a per-request meter; it never calls it.
            let store_allowed = path == "src/graphql/context.rs";
            for needle in [
                "crate::keys",
                "keys::",
                "crate::store",
                "crate::items",
                "crate::sortkey",
                ".transact_write(",
                ".query(",
                ".batch_get(",
            ] {
                if store_allowed && needle == "crate::store" {
                    continue;
                }
                assert!(
                    !text.contains(needle),
                    "{path} mentions {needle}: the GraphQL layer goes through loaders and the repo"
                );
            }
        }
    }
}

#[test]
fn only_keys_spells_keys_and_only_sortkey_encodes() {
    for (path, text) in src_files() {
        let code = non_test_code(&text);
        if path != "src/keys.rs" {
            for needle in [
                "\"xvalue-",
                "\"#name\"",
                "\"#state\"",
                "\"mutation#",
                "\"sweep#",
                "\"xvrow-",
            ] {
                assert!(
                    !code.contains(needle),
                    "{path} spells a key ({needle}): only src/keys.rs may"
                );
            }
            // Sort strings are built by `keys` from `sortkey`; elsewhere only its limits are read.
            let encodes = code
                .match_indices("sortkey::")
                .any(|(i, _)| !code[i..].starts_with("sortkey::MAX_"));
            if path != "src/sortkey.rs" {
                assert!(
                    !encodes,
                    "{path} encodes sort strings: only src/keys.rs calls src/sortkey.rs"
                );
            }
        }
    }
}

#[test]
fn per_request_state_is_built_in_one_place() {
    // Metered stores and loaders are per request: only the request context builds them (the
    // repo wraps the store in the request's meter, and in probes' meters, itself).
    for (path, text) in src_files() {
        let code = non_test_code(&text);
        if path != "src/graphql/context.rs" {
            for needle in ["Repo::for_request(", "Loaders::for_request("] {
                assert!(
                    !code.contains(needle),
                    "{path} builds per-request state ({needle}): only graphql/context.rs may"
                );
            }
        }
        let wraps_meters = path == "src/repo/mod.rs" || path.starts_with("src/store/");
        if !wraps_meters {
            for needle in ["Metered::new(", "Metered::with_budget("] {
                assert!(
                    !code.contains(needle),
                    "{path} wraps a store in a meter ({needle}): only the repo and the store may"
                );
            }
        }
    }
}

#[test]
fn tenancy_is_decided_in_the_data_path() {
    // Visibility is decided where data is loaded (loaders, the repo and its write layer),
    // never by resolvers filtering what they got.
    for (path, text) in src_files() {
        let code = non_test_code(&text);
        let data_path = path == "src/loaders.rs" || path.starts_with("src/repo/");
        if !data_path && path != "src/auth.rs" {
            assert!(
                !code.contains(".sees("),
                "{path} decides tenant visibility (`.sees(`): only loaders and the repo may"
            );
        }
    }
}

#[test]
fn index_rows_are_derived_and_diffed_by_items_only() {
    // Writers, reindex, verify and the seeder derive rows with `items::issue_items` (or the
    // `items::write_issue` under it) and diff them with `items::diff_rows`; nobody builds
    // index rows by hand.
    for (path, text) in src_files() {
        let code = non_test_code(&text);
        if path.starts_with("src/items/") {
            continue;
        }
        for needle in ["types::FIELD_VALUE.into()", "types::ISSUE_SORT.into()"] {
            assert!(
                !code.contains(needle),
                "{path} builds index rows ({needle}): derive them with items::issue_items"
            );
        }
    }
}

#[test]
fn only_the_write_layer_writes() {
    // Mutations, sweeps and repairs live in `repo`; seeding bulk-loads rows the same row
    // builders made. Nothing else may write to the table.
    for (path, text) in src_files() {
        let code = non_test_code(&text);
        let writer = path.starts_with("src/store/")
            || path.starts_with("src/repo/")
            || path == "src/seed.rs";
        if !writer {
            for needle in [
                ".transact_write(",
                ".batch_put(",
                ".bulk_put(",
                ".bulk_load(",
                "WriteOp::",
            ] {
                assert!(
                    !code.contains(needle),
                    "{path} writes ({needle}): only the write layer in src/repo/ may"
                );
            }
        }
    }
}

#[test]
fn only_the_row_module_encodes_rows() {
    // The embedded store's row bytes are made and split only by `store::row` (`store`,
    // `RowWriter`, `stored`), and only the embedded store asks it to: one encoding, whose
    // round trip the row proptests hold.
    for (path, text) in src_files() {
        let code = non_test_code(&text);
        if path == "src/store/row.rs" {
            continue;
        }
        for needle in ["row::store(", "row::stored(", "RowWriter"] {
            if code.contains(needle) {
                assert!(
                    path.starts_with("src/store/embedded/"),
                    "{path} encodes rows ({needle}): only the embedded store keeps them"
                );
            }
        }
        for needle in ["STORED_ROW", "fn put_len", "const NOT_NULL"] {
            assert!(
                !code.contains(needle),
                "{path} spells the row encoding ({needle}): only store/row.rs may"
            );
        }
    }
}

#[test]
fn only_items_spells_attribute_names() {
    // Attribute names are declared in `items` (and the key names in `store::table`); other
    // modules use those constants, so a rename cannot miss a place.
    for (path, text) in src_files() {
        let code = non_test_code(&text);
        if path.starts_with("src/items/") || path.starts_with("src/store/") {
            continue;
        }
        for needle in [
            "\"NextIssueNum\"",
            "\"FieldsVersion\"",
            "\"Version\"",
            "\"Deleted\"",
            "\"Values\"",
            "\"LeaseOwner\"",
            "\"LeaseExpires\"",
            "\"ExpiresAt\"",
        ] {
            assert!(
                !code.contains(needle),
                "{path} spells the attribute {needle}: use the constant in `items`"
            );
        }
    }
}

#[test]
fn no_panics_or_leftovers_outside_tests() {
    for (path, text) in src_files() {
        let code = non_test_code(&text);
        for needle in [
            ".unwrap()",
            ".expect(",
            "todo!(",
            "unimplemented!(",
            "dbg!(",
            "panic!(",
        ] {
            let allowed_at_start_up = path == "src/main.rs";
            if !allowed_at_start_up {
                assert!(
                    !code.contains(needle),
                    "{path} contains {needle} outside tests"
                );
            }
        }
    }
}

#[test]
fn no_ignored_tests_or_sleeps_in_tests() {
    for path in rust_files(&root().join("tests")) {
        let rel = relative(&path);
        let text = fs::read_to_string(&path).unwrap();
        if rel == "tests/tidy.rs" {
            continue;
        }
        assert!(
            !text.contains("#[ignore"),
            "{rel} hides a test with #[ignore]"
        );
        // The DynamoDB Local harness polls a starting JVM; nothing else may wait on time.
        if rel != "tests/support/dynamodb_local.rs" {
            assert!(
                !text.contains("thread::sleep") && !text.contains("time::sleep"),
                "{rel} sleeps"
            );
        }
    }
}

#[test]
fn tests_with_a_store_live_in_a_few_binaries() {
    // Every file directly under tests/ is a binary of its own, which links gridgate and starts
    // its own DynamoDB Local: tests that need the DynamoDB store are modules of `tests/api/`
    // (through HTTP, `Gateway` or the command) or `tests/store/` (below the API).
    for entry in fs::read_dir(root().join("tests")).expect("read tests/") {
        let path = entry.expect("entry").path();
        if path.is_dir() || path.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let rel = relative(&path);
        // The outage test starts only its own DynamoDB Local, and its timings need the
        // machine to itself (see its header).
        if rel == "tests/tidy.rs" || rel == "tests/outage.rs" {
            continue;
        }
        let text = fs::read_to_string(&path).unwrap();
        for needle in ["dynamodb_local::", "Backend::Dynamodb", "both_stores!"] {
            assert!(
                !text.contains(needle),
                "{rel} uses DynamoDB Local ({needle}): make it a module of tests/api/ or \
                 tests/store/"
            );
        }
    }
}

#[test]
fn architecture_code_map_names_every_module() {
    let map = fs::read_to_string(root().join("ARCHITECTURE.md")).expect("ARCHITECTURE.md");
    for (path, _) in src_files() {
        let module = path.trim_start_matches("src/");
        assert!(
            map.contains(&format!("`{module}`")),
            "ARCHITECTURE.md's code map lacks `{module}`"
        );
    }
}

#[test]
fn metrics_are_defined_in_one_place() {
    // Every metric is defined in telemetry/metrics.rs, in a registry per application; only
    // the instrumented store records DynamoDB calls.
    for (path, text) in src_files() {
        let code = non_test_code(&text);
        if !path.starts_with("src/telemetry/") {
            assert!(
                !code.contains("prometheus::"),
                "{path} uses the prometheus crate: define metrics in src/telemetry/metrics.rs"
            );
        }
        if path != "src/telemetry/metrics.rs" {
            assert!(
                !code.contains("\"gridgate_"),
                "{path} names a metric: only src/telemetry/metrics.rs may"
            );
        }
        if path != "src/store/instrumented.rs" && !path.starts_with("src/telemetry/") {
            assert!(
                !code.contains("StoreMetrics"),
                "{path} records store metrics: only src/store/instrumented.rs may"
            );
        }
    }
}

#[test]
fn exports_read_only_through_the_gateway() {
    // An export is a client of the API: every page is a request the gateway runs as the
    // caller, so its rows, tenancy, scopes, budgets and prices are the API's. It never reads
    // the table another way.
    for (path, text) in src_files() {
        if path.starts_with("src/export/") {
            let code = non_test_code(&text);
            for needle in [
                "crate::repo",
                "crate::loaders",
                "crate::store",
                "crate::keys",
                "crate::items",
                "crate::filter",
                "Repo::",
            ] {
                assert!(
                    !code.contains(needle),
                    "{path} mentions {needle}: an export reads only through `Gateway::execute`"
                );
            }
        }
    }
}

/// The web grid is a client of the API: every GraphQL document it sends is in
/// `web/src/queries.ts`, so the README's "use it from your own frontend" quotes them all and
/// a change of the schema has one place to look in the page. Every web source opens with a
/// comment saying what it owns, like the Rust modules.
#[test]
fn the_web_grid_keeps_its_documents_in_one_file() {
    let dir = root().join("web/src");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).expect("web/src") {
        let path = entry.expect("entry").path();
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_string();
        if !(name.ends_with(".ts") || name.ends_with(".tsx") || name.ends_with(".css")) {
            continue;
        }
        seen += 1;
        let text = std::fs::read_to_string(&path).expect("a web source");
        assert!(
            text.starts_with("//") || text.starts_with("/*"),
            "web/src/{name} does not open with a comment saying what it owns"
        );
        if name != "queries.ts" {
            assert!(
                !text.contains("gql`"),
                "web/src/{name} writes a GraphQL document: they live in web/src/queries.ts"
            );
        }
        if name.ends_with(".ts") || name.ends_with(".tsx") {
            let stem = name.trim_end_matches(".tsx").trim_end_matches(".ts");
            assert!(
                std::fs::read_to_string(root().join("ARCHITECTURE.md"))
                    .expect("ARCHITECTURE.md")
                    .contains(&format!("`{stem}.ts")),
                "ARCHITECTURE.md's code map lacks web/src/{name}"
            );
        }
    }
    assert!(seen > 5, "web/src/ holds the grid's sources");
}
