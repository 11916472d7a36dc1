//! The schema's plain output values: its enums and the conversions of counts to GraphQL's
//! `Int`, which both the object types (`types`) and the planned rows (`rows`) write.
//!
//! They sit below both so that the dependency between those two goes one way: `types` uses
//! `rows`, and `rows` uses only this module and the object types it is given as parameters.

use async_graphql::Enum;

use crate::model;

/// The type of a custom field's values.
#[derive(Enum, Clone, Copy, PartialEq, Eq)]
pub enum CustomFieldType {
    /// Free text; sorts case-insensitively.
    Text,
    /// A whole number; sorts numerically.
    Int,
    /// A decimal number; sorts numerically.
    Number,
    /// A calendar date `YYYY-MM-DD`; sorts chronologically.
    Date,
    /// A checkbox: `true` or `false` (an unset cell is empty); `false` sorts first.
    Checkbox,
}

impl From<CustomFieldType> for model::FieldType {
    fn from(t: CustomFieldType) -> Self {
        match t {
            CustomFieldType::Text => model::FieldType::Text,
            CustomFieldType::Int => model::FieldType::Int,
            CustomFieldType::Number => model::FieldType::Number,
            CustomFieldType::Date => model::FieldType::Date,
            CustomFieldType::Checkbox => model::FieldType::Checkbox,
        }
    }
}

impl From<model::FieldType> for CustomFieldType {
    fn from(t: model::FieldType) -> Self {
        match t {
            model::FieldType::Text => CustomFieldType::Text,
            model::FieldType::Int => CustomFieldType::Int,
            model::FieldType::Number => CustomFieldType::Number,
            model::FieldType::Date => CustomFieldType::Date,
            model::FieldType::Checkbox => CustomFieldType::Checkbox,
        }
    }
}

/// Whether an issue is still being worked on.
#[derive(Enum, Clone, Copy, PartialEq, Eq)]
pub enum IssueState {
    /// Still being worked on; a new issue's state unless `createIssue` says otherwise.
    Open,
    /// No longer being worked on; after `OPEN` when sorting by `STATE` in ascending order.
    Closed,
}

impl From<IssueState> for model::IssueState {
    fn from(s: IssueState) -> Self {
        match s {
            IssueState::Open => model::IssueState::Open,
            IssueState::Closed => model::IssueState::Closed,
        }
    }
}

impl From<model::IssueState> for IssueState {
    fn from(s: model::IssueState) -> Self {
        match s {
            model::IssueState::Open => IssueState::Open,
            model::IssueState::Closed => IssueState::Closed,
        }
    }
}

/// A count as GraphQL's `Int` (32-bit), saturating rather than wrapping.
pub(super) fn clamp_i32(n: u32) -> i32 {
    i32::try_from(n).unwrap_or(i32::MAX)
}

/// A counter as GraphQL's `Int`: one that drifted below zero reads as 0, one past 2^31 as the
/// largest `Int`.
pub(super) fn clamp_count(n: i64) -> i32 {
    i32::try_from(n.max(0)).unwrap_or(i32::MAX)
}

/// A version as GraphQL's `Int`, saturating: a row edited more than 2^31 times reads as the
/// largest `Int`.
pub(super) fn clamp_version(n: u64) -> i32 {
    i32::try_from(n).unwrap_or(i32::MAX)
}
