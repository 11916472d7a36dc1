pub mod app;
pub mod browser;
pub mod dynamodb_local;
pub mod npm;
pub mod waves;
