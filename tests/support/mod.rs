pub mod app;
pub mod dynamodb_local;
pub mod waves;
