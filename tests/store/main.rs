//! The tests below the API, in one binary: the stores' conformance to the semantics the
//! single-table logic relies on, the write path's consistency under stress, and the DynamoDB
//! Local harness itself. Its tests share one DynamoDB Local (`support::dynamodb_local`),
//! each with its own table or embedded store. Run one area with
//! `cargo test --test store conformance::`.

#[path = "../support/mod.rs"]
mod support;

mod conformance;
mod harness;
mod write_consistency;
