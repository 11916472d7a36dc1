//! Input validation of the write layer, before anything is sent: names, cell values and
//! their canonical forms, field ownership, expected versions, and DynamoDB's limits on what
//! one atomic write may hold.

use std::collections::HashSet;

use super::{invalid, CellInput, WriteError, MAX_NAME_CHARS, MAX_TEXT_CHARS};
use crate::ids::FieldId;
use crate::model::{FieldType, Issue, ProjectData};
use crate::store::capacity::item_size;
use crate::store::{WriteOp, MAX_ITEM_BYTES, MAX_TRANSACT_BYTES, MAX_TRANSACT_WRITE};
use compact_str::ToCompactString;

pub(super) fn valid_name(field: &str, name: &str) -> Result<String, WriteError> {
    let trimmed = name.trim();
    let chars = trimmed.chars().count();
    if chars == 0 || chars > MAX_NAME_CHARS {
        return Err(invalid(
            field,
            format!("must be 1 to {MAX_NAME_CHARS} characters after trimming spaces, got {chars}"),
        ));
    }
    Ok(trimmed.to_string())
}

pub(super) fn valid_position(position: i64) -> Result<u32, WriteError> {
    u32::try_from(position)
        .ok()
        .filter(|p| i32::try_from(*p).is_ok())
        .ok_or_else(|| invalid("position", "must be between 0 and 2147483647"))
}

pub(super) fn check_expected(
    expected: Option<i64>,
    actual: u64,
    id: &impl std::fmt::Display,
) -> Result<(), WriteError> {
    match expected {
        Some(v) if i64::try_from(actual).ok() != Some(v) => Err(WriteError::Conflict {
            message: format!(
                "{id} is at version {actual}, not the expected {v}: read it again and retry"
            ),
            retryable: false,
        }),
        _ => Ok(()),
    }
}

/// Parses the field ids of cell inputs, refusing duplicates.
pub(super) fn parse_cell_ids(
    input: &str,
    values: &[CellInput],
) -> Result<Vec<(FieldId, Option<String>)>, WriteError> {
    let mut seen = HashSet::new();
    values
        .iter()
        .enumerate()
        .map(|(i, (id, value))| {
            let field = format!("{input}[{i}].fieldId");
            let id = FieldId::parse(id).map_err(|e| invalid(&field, e.to_string()))?;
            if !seen.insert(id.clone()) {
                return Err(invalid(field, format!("{id} appears more than once")));
            }
            Ok((id, value.clone()))
        })
        .collect()
}

/// Sets or clears cells of `issue` after checking each field is one of the project's and each
/// value is valid for its type; values are stored in canonical form.
pub(super) fn apply_cells(
    input: &str,
    issue: &mut Issue,
    cells: &[(FieldId, Option<String>)],
    data: &ProjectData,
) -> Result<(), WriteError> {
    for (i, (id, value)) in cells.iter().enumerate() {
        let field = data.field(id).ok_or_else(|| {
            invalid(
                format!("{input}[{i}].fieldId"),
                format!("{id} is not a custom field of {}", data.project.id),
            )
        })?;
        match value {
            None => {
                issue.values.remove(id);
            }
            Some(text) => {
                let name = format!("{input}[{i}].value");
                if field.field_type == FieldType::Text && text.chars().count() > MAX_TEXT_CHARS {
                    return Err(invalid(
                        name,
                        format!("TEXT values are at most {MAX_TEXT_CHARS} characters"),
                    ));
                }
                let value = field
                    .input_value(text)
                    .map_err(|e| invalid(&name, e.to_string()))?;
                issue.values.insert(id.clone(), value.to_compact_string());
            }
        }
    }
    Ok(())
}

/// Refuses up front a write that DynamoDB would refuse: more operations than a transaction
/// takes, an item over 400 KB, or more than 4 MB in all.
pub(super) fn check_fits(
    input: &str,
    ops: &[WriteOp],
    with_record: bool,
) -> Result<(), WriteError> {
    let count = ops.len() + usize::from(with_record);
    if count > MAX_TRANSACT_WRITE {
        return Err(invalid(
            input,
            format!(
                "this change touches {count} rows (the project, the issue's own 3, one per cell \
                 with a value and one per saved view index it is in), more than the \
                 {MAX_TRANSACT_WRITE} one atomic write may: set fewer values per call"
            ),
        ));
    }
    let mut total = 0;
    for op in ops {
        if let WriteOp::Put { item, .. } = op {
            let size = item_size(item);
            if size > MAX_ITEM_BYTES {
                return Err(invalid(
                    input,
                    format!(
                        "the issue would be {size} bytes, over DynamoDB's {MAX_ITEM_BYTES}-byte \
                         item limit: shorten its values"
                    ),
                ));
            }
            total += size;
        }
    }
    if total > MAX_TRANSACT_BYTES {
        return Err(invalid(
            input,
            format!("this change writes {total} bytes, over the {MAX_TRANSACT_BYTES}-byte limit"),
        ));
    }
    Ok(())
}
