pub mod app;
pub mod dynamodb_local;
