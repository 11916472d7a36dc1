//! gridgate: a GraphQL gateway serving sorted, paged database grid views out of one DynamoDB
//! table. See ARCHITECTURE.md for the map.

pub mod app;
pub mod auth;
pub mod cli;
pub mod config;
pub mod export;
pub mod filter;
pub mod graphql;
pub mod http;
pub mod ids;
pub mod items;
pub mod jsonscan;
pub mod keys;
pub mod loaders;
pub mod model;
pub mod options;
pub mod paging;
pub mod repo;
pub mod seed;
pub mod sortkey;
pub mod store;
pub mod telemetry;
pub mod view;
