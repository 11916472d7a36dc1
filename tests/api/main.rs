//! The API tests, in one binary (after zero2prod's `tests/api/`): each module drives gridgate
//! as its clients do — over HTTP on port 0, through `Gateway` for library callers, or as the
//! `gridgate` command — against both stores. One binary links once, and its tests share one
//! DynamoDB Local (`support::dynamodb_local`, started by the first test that needs it); each
//! test still has its own table or embedded store and its own server. Run one area with
//! `cargo test --test api sorting::`.

#[path = "../support/mod.rs"]
mod support;

mod abuse;
mod auth;
mod cli;
mod demo;
mod export;
mod faults;
mod grid;
mod http;
mod metrics;
mod mutations;
mod pages;
mod rows;
mod select;
mod sorting;
mod tenants;
mod traces;
mod views;
