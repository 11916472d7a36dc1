//! The schema's plain output values: its enums and the conversions of counts to GraphQL's
//! `Int`, which both the object types (`types`) and the planned rows (`rows`) write.
//!
//! They sit below both so that the dependency between those two goes one way: `types` uses
//! `rows`, and `rows` uses only this module and the object types it is given as parameters.

use async_graphql::Enum;

use crate::model;

/// Whether a custom field's cells are all where its definition says.
#[derive(Enum, Clone, Copy, PartialEq, Eq)]
pub enum CustomFieldStatus {
    /// Every cell sorts and filters by the field's current definition.
    Ready,
    /// A SELECT field whose options were moved or removed: their cells are being given new
    /// sort strings or cleared in the background. Until then a sort by the field may place
    /// the moved options' cells where they were, and a removed option's cells still read
    /// with `option: null`.
    Reindexing,
}

impl CustomFieldStatus {
    pub fn of(field: &model::CustomField) -> Self {
        if field.reindexing() {
            CustomFieldStatus::Reindexing
        } else {
            CustomFieldStatus::Ready
        }
    }
}

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
    /// One of the field's `options`, by its id; sorts by the options' order.
    Select,
}

impl From<CustomFieldType> for model::FieldType {
    fn from(t: CustomFieldType) -> Self {
        match t {
            CustomFieldType::Text => model::FieldType::Text,
            CustomFieldType::Int => model::FieldType::Int,
            CustomFieldType::Number => model::FieldType::Number,
            CustomFieldType::Date => model::FieldType::Date,
            CustomFieldType::Checkbox => model::FieldType::Checkbox,
            CustomFieldType::Select => model::FieldType::Select,
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
            model::FieldType::Select => CustomFieldType::Select,
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
