//! Items: how each entity is written as a DynamoDB item and read back, including the derived
//! index rows of an issue.
//!
//! Mapping goes through serde_dynamo with one serde struct per item type, declared with the
//! item's attributes by `entity!`, so each attribute name is spelled once (next to the layout
//! table in ARCHITECTURE.md) for the serde mapping, the typed text decoders (`raw`) and their
//! parity tests alike. An issue's items, most of what a load writes, are written by hand
//! ([`write_issue`], to any `ItemWriter`) through the same declarations, and held to their
//! serde forms by tests. Decoding is strict: an item
//! that does not match its `Type` is reported as [`ItemError`], never half-read.

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};

use crate::ids::{FieldId, IssueId, ProjectId, TenantId};
use crate::keys;
use crate::model::{
    CellText, CustomField, FieldType, FieldValue, Issue, IssueCounts, IssueState, Project,
    SelectOption, Tenant, ValueError,
};
use crate::store::{AttributeValue, Item, ItemWriter, Key};

mod raw;
pub use raw::{
    decode_issue_list_row, decode_issue_raw, decode_partition_row, raw_item, IssueListRow,
    PartitionRow, SharedIds,
};

/// `Type` attribute values.
pub mod types {
    pub const TENANT: &str = "Tenant";
    pub const TENANT_DIRECTORY: &str = "TenantDirectory";
    pub const PROJECT: &str = "Project";
    pub const CUSTOM_FIELD: &str = "CustomField";
    pub const FIELD_LOOKUP: &str = "CustomFieldLookup";
    pub const ISSUE: &str = "Issue";
    pub const FIELD_VALUE: &str = "FieldValue";
    pub const ISSUE_SORT: &str = "IssueSort";
    pub const MUTATION: &str = "MutationRecord";
    pub const SWEEP: &str = "Sweep";
    pub const VIEW: &str = "View";
    pub const VIEW_LOOKUP: &str = "ViewLookup";
    pub const VIEW_ROW: &str = "ViewRow";
}

/// An item that could not be read as the entity it claims to be.
#[derive(Debug, Clone, thiserror::Error)]
#[error("item ({pk}, {sk}) is not a valid {expected}: {reason}")]
pub struct ItemError {
    pub pk: String,
    pub sk: String,
    pub expected: &'static str,
    pub reason: String,
}

impl ItemError {
    fn new(item: &Item, expected: &'static str, reason: impl Into<String>) -> Self {
        ItemError {
            pk: key_text(item, "PK"),
            sk: key_text(item, "SK"),
            expected,
            reason: reason.into(),
        }
    }

    /// An error about a decoded row with key `pk`, `sk`.
    fn keyed(pk: &str, sk: &str, expected: &'static str, reason: impl Into<String>) -> Self {
        ItemError {
            pk: pk.to_owned(),
            sk: sk.to_owned(),
            expected,
            reason: reason.into(),
        }
    }
}

/// Declares an entity's item once: the serde struct its rows are written and read with, and
/// an enum of every attribute its rows may hold (with `ALL`, `name` and `of`), each name spelled
/// once for both. The typed text decoders (`items::raw`) match attribute names through the
/// enum exhaustively, so an attribute added here does not compile until they read it, and an
/// attribute the enum does not know sends a row the general way. `also` names the attributes
/// serde does not map (typed values set on the item directly, or written by hand).
macro_rules! entity {
    (
        $(#[$meta:meta])*
        struct $item:ident, enum $attr:ident {
            $( $(#[$fmeta:meta])* $field:ident : $ty:ty = $variant:ident $name:literal, )*
        }
        $( also { $( $(#[$ameta:meta])* $avariant:ident $aname:literal, )* } )?
    ) => {
        $(#[$meta])*
        #[derive(Serialize, Deserialize)]
        struct $item {
            $( $(#[$fmeta])* #[serde(rename = $name)] $field: $ty, )*
        }

        #[doc = concat!("Every attribute of a `", stringify!($item), "` row, declared once.")]
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub(crate) enum $attr {
            $( #[doc = concat!("`", $name, "`")] $variant, )*
            $($( $(#[$ameta])* $avariant, )*)?
        }

        // Not every entity's rows are read typed, so not every entity uses every function.
        #[allow(dead_code)]
        impl $attr {
            /// Every attribute, in declaration order.
            pub(crate) const ALL: &'static [$attr] = &[$($attr::$variant,)* $($($attr::$avariant,)*)?];

            /// The attribute's name in the table.
            pub(crate) const fn name(self) -> &'static str {
                match self {
                    $( $attr::$variant => $name, )*
                    $($( $attr::$avariant => $aname, )*)?
                }
            }

            /// The attribute named `name`, if the entity declares it.
            pub(crate) fn of(name: &str) -> Option<$attr> {
                match name {
                    $( $name => Some($attr::$variant), )*
                    $($( $aname => Some($attr::$avariant), )*)?
                    _ => None,
                }
            }
        }
    };
}

mod mutation;
mod sweep;
mod view;
pub(crate) use mutation::MutationRecordAttr;
pub use mutation::{decode_mutation_record, mutation_record_item, MutationRecord};
pub(crate) use sweep::SweepAttr;
pub use sweep::{decode_sweep, sweep_item, SweepJob, SweepTarget};
pub use view::{
    decode_view_lookup, decode_view_owned, index_json, retired_json, view_items, view_row_item,
};

entity! {
    struct TenantItem, enum TenantAttr {
        pk: String = Pk "PK",
        sk: String = Sk "SK",
        kind: String = Type "Type",
        name: String = Name "Name",
    }
}

entity! {
    /// A tenant's row in the tenant directory (`GSI1` partition `tenants`): a copy of the
    /// tenant's name, written in the same transaction as the tenant item, so a page of tenants
    /// is one Query that needs no second read.
    struct TenantDirectoryItem, enum TenantDirectoryAttr {
        pk: String = Pk "PK",
        sk: String = Sk "SK",
        gsi1sk: String = Gsi1sk "GSI1SK",
        kind: String = Type "Type",
        name: String = Name "Name",
    }
}

entity! {
    struct ProjectItem, enum ProjectAttr {
        pk: String = Pk "PK",
        sk: String = Sk "SK",
        /// Absent on a deleted project, so it leaves its tenant's list.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        gsi1sk: Option<String> = Gsi1sk "GSI1SK",
        kind: String = Type "Type",
        name: String = Name "Name",
        next_issue_num: u32 = NextIssueNum "NextIssueNum",
        version: u64 = Version "Version",
        #[serde(default, skip_serializing_if = "is_zero")]
        fields_version: u64 = FieldsVersion "FieldsVersion",
        #[serde(default, skip_serializing_if = "Option::is_none")]
        deleted: Option<u64> = Deleted "Deleted",
        /// The issue counters (see `model::IssueCounts`), with the family `Filled` below.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        issue_count: Option<i64> = IssueCount "IssueCount",
        #[serde(default, skip_serializing_if = "Option::is_none")]
        open_count: Option<i64> = OpenCount "OpenCount",
        /// Set (to 1) once the counters are kept: by the project's creation, or by `reindex`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        counted: Option<u64> = Counted "Counted",
    }
    also {
        /// A family of attributes: this prefix, then a field id (`Filled:xattrib-…`), counts
        /// the issues with a value in that field. Readers test the prefix; `of` names only the
        /// bare prefix, which no writer writes.
        Filled "Filled:",
        /// A family like `Filled`: this prefix, then a view index's `GSI1` partition
        /// (`Matched:xvrow-…`), counts the issues in that index.
        Matched "Matched:",
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Rows written before versions existed (or by other tools) read as version 1.
fn first_version() -> u64 {
    1
}

entity! {
    struct CustomFieldItem, enum CustomFieldAttr {
        pk: String = Pk "PK",
        sk: String = Sk "SK",
        kind: String = Type "Type",
        name: String = Name "Name",
        field_type: String = FieldType "FieldType",
        position: u32 = Position "Position",
        #[serde(default = "first_version")]
        version: u64 = Version "Version",
        #[serde(default, skip_serializing_if = "Option::is_none")]
        deleted: Option<u64> = Deleted "Deleted",
        /// A SELECT field's options as JSON (see [`encode_options`]); absent when it has none.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        options: Option<String> = Options "Options",
    }
}

/// The `Options` attribute of a field: its options, removed ones and old keys included, as a
/// JSON array of `{id, label, color?, key, stale_keys?, removed?}` (one string, so a field row
/// keeps one shape whatever its options hold).
pub fn encode_options(options: &[SelectOption]) -> Option<String> {
    if options.is_empty() {
        return None;
    }
    serde_json::to_string(options).ok()
}

/// Reads the `Options` attribute written by [`encode_options`].
pub fn decode_options(text: Option<&str>) -> Result<Vec<SelectOption>, String> {
    match text {
        None => Ok(Vec::new()),
        Some(text) => serde_json::from_str(text).map_err(|e| format!("unreadable Options: {e}")),
    }
}

entity! {
    struct FieldLookupItem, enum FieldLookupAttr {
        pk: String = Pk "PK",
        sk: String = Sk "SK",
        kind: String = Type "Type",
        project: String = Project "Project",
    }
}

entity! {
    /// An issue's source row. Read by hand (`decode_issue`) and typed (`items::raw`), and
    /// written by hand (`write_issue`), all through [`IssueAttr`]; the struct is its serde
    /// form, which the tests hold the written row to.
    #[cfg_attr(not(test), allow(dead_code))]
    struct IssueItem, enum IssueAttr {
        pk: String = Pk "PK",
        sk: String = Sk "SK",
        /// Always written; read as optional because source rows written by other tools may
        /// lack it until `reindex` derives it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        gsi1sk: Option<String> = Gsi1sk "GSI1SK",
        kind: String = Type "Type",
        num: u32 = Num "Num",
        name: String = Name "Name",
        state: String = State "State",
        version: u64 = Version "Version",
    }
    also {
        /// The issue's cells: field id → `S` or `N`, typed by its field.
        Values "Values",
    }
}

entity! {
    /// A custom field value's index row, with its typed `Value` (built by `write_issue`; the
    /// struct is its serde form, without `Value`).
    #[cfg_attr(not(test), allow(dead_code))]
    struct FieldValueItem, enum FieldValueAttr {
        pk: String = Pk "PK",
        sk: String = Sk "SK",
        gsi1sk: String = Gsi1sk "GSI1SK",
        kind: String = Type "Type",
    }
    also {
        /// The cell's typed value.
        Value "Value",
    }
}

entity! {
    /// An issue's name or state index row (built by `write_issue`; the struct is its serde form).
    #[cfg_attr(not(test), allow(dead_code))]
    struct SortRowItem, enum SortRowAttr {
        pk: String = Pk "PK",
        sk: String = Sk "SK",
        gsi1sk: String = Gsi1sk "GSI1SK",
        kind: String = Type "Type",
    }
}

fn to_item<T: Serialize>(value: &T) -> Item {
    // Serializing plain structs of strings, numbers and maps into an item cannot fail; the
    // fallback keeps this total without a panic path.
    serde_dynamo::to_item(value).unwrap_or_default()
}

fn from_item<'a, T: Deserialize<'a>>(item: &Item, expected: &'static str) -> Result<T, ItemError> {
    from_owned_item(item.clone(), expected)
}

/// [`from_item`] of an item the caller gives up: serde_dynamo takes the item by value, so
/// this saves a copy of every attribute (the read path decodes each project and field row
/// this way, once per request). Only the key's text is kept, for the error.
fn from_owned_item<'a, T: Deserialize<'a>>(
    item: Item,
    expected: &'static str,
) -> Result<T, ItemError> {
    let (pk, sk) = (key_text(&item, "PK"), key_text(&item, "SK"));
    serde_dynamo::from_item(item).map_err(|e| ItemError {
        pk,
        sk,
        expected,
        reason: e.to_string(),
    })
}

/// The text of a key attribute for an error, empty when it is not a string.
fn key_text(item: &Item, name: &str) -> String {
    match item.get(name) {
        Some(AttributeValue::S(s)) => s.clone(),
        _ => String::new(),
    }
}

fn check_type(item: &Item, kind: &str, expected: &'static str) -> Result<(), ItemError> {
    match item.get("Type") {
        Some(AttributeValue::S(t)) if t == kind => Ok(()),
        _ => Err(ItemError::new(
            item,
            expected,
            format!("Type is not {kind}"),
        )),
    }
}

/// The `Type` of an item, if it has one.
pub fn item_type(item: &Item) -> Option<&str> {
    match item.get("Type") {
        Some(AttributeValue::S(t)) => Some(t.as_str()),
        _ => None,
    }
}

/// The `PK` of an item.
pub fn item_pk(item: &Item) -> Option<&str> {
    match item.get("PK") {
        Some(AttributeValue::S(t)) => Some(t.as_str()),
        _ => None,
    }
}

/// Every item of a tenant: its own item, then its row in the tenant directory (derived from
/// it). Writers put both in one transaction and the seeder in one load; `verify` compares the
/// directory row with what this derives, and `reindex` writes it.
pub fn tenant_items(tenant: &Tenant) -> [Item; 2] {
    let key = keys::tenant(&tenant.id);
    let directory = keys::tenant_directory(&tenant.id);
    [
        to_item(&TenantItem {
            pk: key.pk,
            sk: key.sk,
            kind: types::TENANT.into(),
            name: tenant.name.clone(),
        }),
        to_item(&TenantDirectoryItem {
            pk: directory.pk,
            sk: directory.sk,
            gsi1sk: keys::tenant_sort(&tenant.name, &tenant.id),
            kind: types::TENANT_DIRECTORY.into(),
            name: tenant.name.clone(),
        }),
    ]
}

pub fn decode_tenant(item: &Item) -> Result<Tenant, ItemError> {
    const E: &str = "tenant";
    check_type(item, types::TENANT, E)?;
    let raw: TenantItem = from_item(item, E)?;
    Ok(Tenant {
        id: TenantId::parse(&raw.pk).map_err(|e| ItemError::new(item, E, e.to_string()))?,
        name: raw.name,
    })
}

/// The tenant a directory row lists (its id and the copy of its name).
pub fn decode_tenant_directory(item: &Item) -> Result<Tenant, ItemError> {
    const E: &str = "tenant directory row";
    check_type(item, types::TENANT_DIRECTORY, E)?;
    let raw: TenantDirectoryItem = from_item(item, E)?;
    Ok(Tenant {
        id: TenantId::parse(&raw.pk).map_err(|e| ItemError::new(item, E, e.to_string()))?,
        name: raw.name,
    })
}

pub fn project_item(project: &Project) -> Item {
    let key = keys::project(&project.id, &project.tenant);
    let mut item = to_item(&ProjectItem {
        pk: key.pk,
        sk: key.sk,
        gsi1sk: (!project.deleted).then(|| keys::project_sort(&project.name, &project.id)),
        kind: types::PROJECT.into(),
        name: project.name.clone(),
        next_issue_num: project.next_issue_num,
        version: project.version,
        fields_version: project.fields_version,
        deleted: project.deleted.then_some(1),
        issue_count: project.counts.as_ref().map(|c| c.issues),
        open_count: project.counts.as_ref().map(|c| c.open),
        counted: project.counts.as_ref().map(|_| 1),
    });
    if let Some(counts) = &project.counts {
        for (field, n) in &counts.filled {
            item.insert(filled_attr(field), number_i64(*n));
        }
        for (partition, n) in &counts.matched {
            item.insert(matched_attr(partition), number_i64(*n));
        }
    }
    item
}

/// The attribute of a project item that counts the issues with a value in `field`.
pub fn filled_attr(field: &FieldId) -> String {
    format!("{}{field}", attrs::FILLED_PREFIX)
}

/// The attribute of a project item that counts the issues in the view index whose `GSI1`
/// partition is `partition`.
pub fn matched_attr(partition: &str) -> String {
    format!("{}{partition}", attrs::MATCHED_PREFIX)
}

fn number_i64(n: i64) -> AttributeValue {
    AttributeValue::N(n.to_string())
}

/// Takes a family of a project item's counters (attributes named `prefix` and a name) out of
/// it: they are not serde's to read.
fn take_family(item: &mut Item, prefix: &str) -> Result<BTreeMap<String, i64>, String> {
    let names: Vec<String> = item
        .keys()
        .filter(|name| name.starts_with(prefix))
        .cloned()
        .collect();
    let mut family = BTreeMap::new();
    for name in names {
        let Some(value) = item.remove(&name) else {
            continue;
        };
        let n = match value {
            AttributeValue::N(n) => n
                .parse::<i64>()
                .map_err(|_| format!("{name}: {n} is not a count"))?,
            _ => return Err(format!("{name} is not a number")),
        };
        family.insert(name[prefix.len()..].to_string(), n);
    }
    Ok(family)
}

/// Takes a project item's per-field counters out of it.
fn take_filled(item: &mut Item) -> Result<BTreeMap<FieldId, i64>, String> {
    take_family(item, attrs::FILLED_PREFIX)?
        .into_iter()
        .map(|(field, n)| {
            FieldId::parse(&field)
                .map(|f| (f, n))
                .map_err(|e| format!("{}{field}: {e}", attrs::FILLED_PREFIX))
        })
        .collect()
}

pub fn decode_project(item: &Item) -> Result<Project, ItemError> {
    decode_project_owned(item.clone())
}

/// [`decode_project`] of an item the caller gives up, without copying it.
pub fn decode_project_owned(item: Item) -> Result<Project, ItemError> {
    const E: &str = "project";
    check_type(&item, types::PROJECT, E)?;
    let mut item = item;
    let filled = take_filled(&mut item).map_err(|reason| ItemError::new(&item, E, reason))?;
    let matched = take_family(&mut item, attrs::MATCHED_PREFIX)
        .map_err(|reason| ItemError::new(&item, E, reason))?;
    let raw: ProjectItem = from_owned_item(item, E)?;
    let bad = |e: crate::ids::IdError| ItemError::keyed(&raw.pk, &raw.sk, E, e.to_string());
    Ok(Project {
        id: ProjectId::parse(&raw.pk).map_err(bad)?,
        tenant: TenantId::parse(&raw.sk).map_err(bad)?,
        name: raw.name,
        next_issue_num: raw.next_issue_num,
        version: raw.version,
        fields_version: raw.fields_version,
        deleted: raw.deleted.is_some(),
        counts: raw.counted.map(|_| IssueCounts {
            issues: raw.issue_count.unwrap_or(0),
            open: raw.open_count.unwrap_or(0),
            filled,
            matched,
        }),
    })
}

/// A custom field's definition item and its lookup item.
pub fn field_items(field: &CustomField) -> [Item; 2] {
    let key = keys::field(&field.project, &field.id);
    let lookup = keys::field_lookup(&field.id);
    [
        to_item(&CustomFieldItem {
            pk: key.pk,
            sk: key.sk,
            kind: types::CUSTOM_FIELD.into(),
            name: field.name.clone(),
            field_type: field.field_type.as_str().into(),
            position: field.position,
            version: field.version,
            deleted: field.deleted.then_some(1),
            options: encode_options(&field.options),
        }),
        to_item(&FieldLookupItem {
            pk: lookup.pk,
            sk: lookup.sk,
            kind: types::FIELD_LOOKUP.into(),
            project: field.project.to_string(),
        }),
    ]
}

pub fn decode_field(item: &Item) -> Result<CustomField, ItemError> {
    decode_field_owned(item.clone())
}

/// [`decode_field`] of an item the caller gives up, without copying it.
pub fn decode_field_owned(item: Item) -> Result<CustomField, ItemError> {
    const E: &str = "custom field";
    check_type(&item, types::CUSTOM_FIELD, E)?;
    let raw: CustomFieldItem = from_owned_item(item, E)?;
    let bad = |e: crate::ids::IdError| ItemError::keyed(&raw.pk, &raw.sk, E, e.to_string());
    let field_type = FieldType::parse(&raw.field_type).ok_or_else(|| {
        ItemError::keyed(
            &raw.pk,
            &raw.sk,
            E,
            format!("unknown FieldType {}", raw.field_type),
        )
    })?;
    Ok(CustomField {
        id: FieldId::parse(&raw.sk).map_err(bad)?,
        project: ProjectId::parse(&raw.pk).map_err(bad)?,
        name: raw.name,
        field_type,
        position: raw.position,
        version: raw.version,
        deleted: raw.deleted.is_some(),
        options: decode_options(raw.options.as_deref())
            .map_err(|e| ItemError::keyed(&raw.pk, &raw.sk, E, e))?,
    })
}

/// The project a field lookup item points to.
pub fn decode_field_lookup(item: &Item) -> Result<ProjectId, ItemError> {
    const E: &str = "custom field lookup";
    check_type(item, types::FIELD_LOOKUP, E)?;
    let raw: FieldLookupItem = from_item(item, E)?;
    ProjectId::parse(&raw.project).map_err(|e| ItemError::new(item, E, e.to_string()))
}

fn value_attribute(value: &FieldValue) -> AttributeValue {
    if value.field_type().is_numeric() {
        AttributeValue::N(value.to_string())
    } else {
        AttributeValue::S(value.to_string())
    }
}

/// Attribute holding an issue's field values. Typed values (`S` for text and dates, `N` for
/// numbers) are set on the item directly rather than through serde, which would wrap them.
pub const VALUES: &str = IssueAttr::Values.name();
/// Attribute holding a field value row's value.
pub const VALUE: &str = FieldValueAttr::Value.name();

/// An issue's source item without its `Values` (as [`write_issue`] writes it, with them):
/// its serde form, which `the_source_item_is_its_entity` holds the written one to.
#[cfg(test)]
fn issue_item(issue: &Issue) -> Item {
    let key = keys::issue(&issue.id, &issue.project);
    to_item(&IssueItem {
        pk: key.pk,
        sk: key.sk,
        gsi1sk: Some(keys::issue_sort(issue.num)),
        kind: types::ISSUE.into(),
        num: issue.num,
        name: issue.name.clone(),
        state: issue.state.as_str().into(),
        version: issue.version,
    })
}

/// Why an issue cannot be written.
#[derive(Debug, Clone, thiserror::Error)]
pub enum EncodeError {
    #[error("custom field {0} does not belong to the issue's project")]
    UnknownField(FieldId),
    #[error(transparent)]
    BadValue(#[from] ValueError),
}

/// The typed values of an issue, each with its field, checked against its project's fields.
fn typed_values<'a>(
    issue: &Issue,
    fields: &'a [CustomField],
) -> Result<Vec<(&'a CustomField, FieldValue)>, EncodeError> {
    issue
        .values
        .iter()
        .map(|(id, text)| {
            let field = fields
                .iter()
                .find(|f| &f.id == id)
                .ok_or_else(|| EncodeError::UnknownField(id.clone()))?;
            Ok((field, field.stored_value(text)?))
        })
        .collect()
}

/// Every item of an issue: the source item, then the derived index rows (name, state, one per
/// set field value). Writers put all of them in one transaction; a reindex rebuilds the index
/// rows from the source item with this same function. `fields` are the project's custom
/// fields: they give each value its type, hence its attribute type and sort string.
pub fn issue_items(issue: &Issue, fields: &[CustomField]) -> Result<Vec<Item>, EncodeError> {
    let mut items = Vec::with_capacity(3 + issue.values.len());
    write_issue(issue, fields, &mut items)?;
    Ok(items)
}

/// Writes every item of an issue ([`issue_items`]) to `out`, in the same order: the one
/// declaration of an issue's items, whether they become attribute maps (`issue_items`) or,
/// in a bulk load of the embedded store, its rows directly (`BulkLoad::put_written`).
///
/// Built by hand rather than through serde_dynamo, which builds each item twice (its own
/// map, then the SDK's), and they are most of the items a bulk load writes: the source item
/// matches `IssueAttr` exhaustively, so an attribute added to the entity does not compile
/// until it is written here, and `the_source_item_is_its_entity` and
/// `index_rows_are_their_entities` hold every item to its entity's serde form.
pub fn write_issue(
    issue: &Issue,
    fields: &[CustomField],
    out: &mut (impl ItemWriter + ?Sized),
) -> Result<(), EncodeError> {
    let typed = typed_values(issue, fields)?;
    let key = keys::issue(&issue.id, &issue.project);
    let mut values = Some(
        typed
            .iter()
            .map(|(f, v)| (f.id.to_string(), value_attribute(v)))
            .collect::<HashMap<_, _>>(),
    );
    let mut source = IssueAttr::ALL.iter().filter_map(|&attr| {
        let value = match attr {
            IssueAttr::Pk | IssueAttr::Sk | IssueAttr::Gsi1sk => return None,
            IssueAttr::Type => AttributeValue::S(types::ISSUE.into()),
            IssueAttr::Num => AttributeValue::N(issue.num.to_string()),
            IssueAttr::Name => AttributeValue::S(issue.name.clone()),
            IssueAttr::State => AttributeValue::S(issue.state.as_str().into()),
            IssueAttr::Version => AttributeValue::N(issue.version.to_string()),
            // Met once: the map moves into the item.
            IssueAttr::Values => AttributeValue::M(values.take().unwrap_or_default()),
        };
        Some((attr.name(), value))
    });
    out.put(key, Some(keys::issue_sort(issue.num)), &mut source);
    let sort_row = |out: &mut _, key, gsi1sk| {
        let mut row = SortRowAttr::ALL.iter().filter_map(|&attr| {
            let value = match attr {
                SortRowAttr::Pk | SortRowAttr::Sk | SortRowAttr::Gsi1sk => return None,
                SortRowAttr::Type => AttributeValue::S(types::ISSUE_SORT.into()),
            };
            Some((attr.name(), value))
        });
        ItemWriter::put(out, key, Some(gsi1sk), &mut row);
    };
    sort_row(
        out,
        keys::name_row(&issue.id, &issue.project),
        keys::name_sort(&issue.name, issue.num),
    );
    sort_row(
        out,
        keys::state_row(&issue.id, &issue.project),
        keys::state_sort(issue.state, issue.num),
    );
    for (field, value) in &typed {
        // `typed_values` took only values of the field, so every one has a sort string.
        let Some(gsi1sk) = keys::value_sort(field, value, issue.num) else {
            continue;
        };
        let mut row = FieldValueAttr::ALL.iter().filter_map(|&attr| {
            let value = match attr {
                FieldValueAttr::Pk | FieldValueAttr::Sk | FieldValueAttr::Gsi1sk => return None,
                FieldValueAttr::Type => AttributeValue::S(types::FIELD_VALUE.into()),
                FieldValueAttr::Value => value_attribute(value),
            };
            Some((attr.name(), value))
        });
        out.put(
            keys::field_value(&issue.id, &field.id),
            Some(gsi1sk),
            &mut row,
        );
    }
    Ok(())
}

/// The rows an issue as stored implies, leaving out values that no given field or type
/// accepts (cells another tool wrote): what `verify` compares the table against, since such
/// cells cannot be indexed.
pub fn issue_items_lenient(issue: &Issue, fields: &[CustomField]) -> Vec<Item> {
    let mut clean = issue.clone();
    clean.values.retain(|id, text| {
        fields
            .iter()
            .find(|f| &f.id == id)
            .is_some_and(|f| f.stored_value(text).is_ok())
    });
    issue_items(&clean, fields).unwrap_or_default()
}

/// Reads an issue's source item. Values are kept as their stored text (see
/// [`Issue::values`]); entries that are neither strings nor numbers, or whose key is not a
/// field id, are left out with a warning, because one bad cell must not hide the whole row.
///
/// This runs for every row of every grid page, so unlike the other entities it is read by
/// hand from the owned item, moving its strings instead of copying the whole item into
/// serde_dynamo (attribute names as in `IssueItem`; `issue_round_trips_and_derives_its_index_rows`
/// and the proptest `issues_round_trip` keep the two in step). Nothing is taken out of the
/// item until every check has passed, so errors still name its key.
pub fn decode_issue(mut item: Item) -> Result<Issue, ItemError> {
    const E: &str = "issue";
    check_type(&item, types::ISSUE, E)?;
    let number = |item: &Item, name: &str| -> Result<u64, ItemError> {
        match item.get(name) {
            Some(AttributeValue::N(n)) => n
                .parse()
                .map_err(|_| ItemError::new(item, E, format!("{name} is not a whole number"))),
            _ => Err(ItemError::new(item, E, format!("{name} is not a number"))),
        }
    };
    let text = |item: &Item, name: &str| -> Result<(), ItemError> {
        match item.get(name) {
            Some(AttributeValue::S(_)) => Ok(()),
            _ => Err(ItemError::new(item, E, format!("{name} is not a string"))),
        }
    };
    let num = u32::try_from(number(&item, IssueAttr::Num.name())?)
        .map_err(|_| ItemError::new(&item, E, "Num is out of range"))?;
    let version = number(&item, IssueAttr::Version.name())?;
    let state = match item.get(IssueAttr::State.name()) {
        Some(AttributeValue::S(s)) => IssueState::parse(s)
            .ok_or_else(|| ItemError::new(&item, E, format!("unknown State {s}")))?,
        _ => return Err(ItemError::new(&item, E, "State is not a string")),
    };
    text(&item, IssueAttr::Name.name())?;
    if !matches!(item.get(VALUES), None | Some(AttributeValue::M(_))) {
        return Err(ItemError::new(&item, E, "Values is not a map"));
    }
    match (item.get(PK_ATTR), item.get(SK_ATTR)) {
        (Some(AttributeValue::S(pk)), Some(AttributeValue::S(sk))) => {
            if !(IssueId::is_valid(pk) && ProjectId::is_valid(sk)) {
                // The error path parses again, for the message.
                let reason = IssueId::parse(pk)
                    .err()
                    .or_else(|| ProjectId::parse(sk).err())
                    .map_or_else(|| "bad key".to_string(), |e| e.to_string());
                return Err(ItemError::new(&item, E, reason));
            }
        }
        _ => return Err(ItemError::new(&item, E, "PK or SK is not a string")),
    }
    // Every check has passed: from here on the item is taken apart.
    let internal = |e: crate::ids::IdError| ItemError {
        pk: String::new(),
        sk: String::new(),
        expected: E,
        reason: e.to_string(),
    };
    let id = IssueId::parse(&take_text(&mut item, PK_ATTR)).map_err(internal)?;
    let project = ProjectId::parse(&take_text(&mut item, SK_ATTR)).map_err(internal)?;
    let raw_values = match item.remove(VALUES) {
        Some(AttributeValue::M(m)) => m,
        _ => HashMap::new(),
    };
    let mut values = BTreeMap::new();
    for (field_id, attr) in raw_values {
        match (FieldId::parse(&field_id), attr) {
            (Ok(field), AttributeValue::S(text) | AttributeValue::N(text)) => {
                values.insert(field, CellText::from(text));
            }
            (field, _) => {
                let field = field.map_or_else(|e| e.to_string(), |f| f.to_string());
                tracing::warn!(issue = %id, field = %field, "unreadable field value left out");
            }
        }
    }
    Ok(Issue {
        project,
        id,
        num,
        name: take_text(&mut item, IssueAttr::Name.name()),
        state,
        values,
        version,
    })
}

/// Takes a string attribute out of an item (empty when it is not one; callers check first).
fn take_text(item: &mut Item, name: &str) -> String {
    match item.remove(name) {
        Some(AttributeValue::S(s)) => s,
        _ => String::new(),
    }
}

/// The table key of an item, when it has one.
pub fn item_key(item: &Item) -> Option<Key> {
    let text = |name: &str| match item.get(name) {
        Some(AttributeValue::S(s)) => Some(s.clone()),
        _ => None,
    };
    Some(Key::new(text(PK_ATTR)?, text(SK_ATTR)?))
}

const PK_ATTR: &str = IssueAttr::Pk.name();
const SK_ATTR: &str = IssueAttr::Sk.name();
/// Attributes of the rows this module writes that other modules name in conditions and
/// updates; spelled here only.
pub mod attrs {
    use super::view::ViewAttr;
    use super::{CustomFieldAttr, MutationRecordAttr, ProjectAttr, SweepAttr};

    pub const NAME: &str = ProjectAttr::Name.name();
    pub const VERSION: &str = ProjectAttr::Version.name();
    pub const NEXT_ISSUE_NUM: &str = ProjectAttr::NextIssueNum.name();
    pub const FIELDS_VERSION: &str = ProjectAttr::FieldsVersion.name();
    pub const DELETED: &str = ProjectAttr::Deleted.name();
    pub const GSI1SK: &str = ProjectAttr::Gsi1sk.name();
    pub const POSITION: &str = CustomFieldAttr::Position.name();
    pub const EXPIRES_AT: &str = MutationRecordAttr::ExpiresAt.name();
    pub const LEASE_OWNER: &str = SweepAttr::LeaseOwner.name();
    pub const LEASE_EXPIRES: &str = SweepAttr::LeaseExpires.name();
    pub const ISSUE_COUNT: &str = ProjectAttr::IssueCount.name();
    pub const OPEN_COUNT: &str = ProjectAttr::OpenCount.name();
    pub const COUNTED: &str = ProjectAttr::Counted.name();
    /// With a field id after it: a project's count of the issues with a value in that field.
    pub const FILLED_PREFIX: &str = ProjectAttr::Filled.name();
    pub const MATCHED_PREFIX: &str = ProjectAttr::Matched.name();
    pub const SERVING: &str = ViewAttr::Serving.name();
    pub const BUILDING: &str = ViewAttr::Building.name();
    pub const BUILT_THROUGH: &str = ViewAttr::BuiltThrough.name();
    pub const SCANNED: &str = ViewAttr::Scanned.name();
    pub const RETIRED: &str = ViewAttr::Retired.name();
    pub const COLUMNS: &str = ViewAttr::Columns.name();
}

/// The puts and deletes that turn one set of derived rows into another.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RowChanges {
    /// Rows that are new or differ from their old version.
    pub puts: Vec<Item>,
    /// Keys of old rows that the new set no longer has.
    pub deletes: Vec<Key>,
}

impl RowChanges {
    pub fn len(&self) -> usize {
        self.puts.len() + self.deletes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.puts.is_empty() && self.deletes.is_empty()
    }
}

/// Compares an entity's old and new rows (as [`issue_items`] derives them) by key: rows that
/// are unchanged are left alone, so a cell edit touches only its own value row and the issue.
pub fn diff_rows(old: &[Item], new: &[Item]) -> RowChanges {
    let old_by_key: HashMap<Key, &Item> = old
        .iter()
        .filter_map(|item| Some((item_key(item)?, item)))
        .collect();
    let new_keys: std::collections::HashSet<Key> = new.iter().filter_map(item_key).collect();
    let puts = new
        .iter()
        .filter(|item| {
            item_key(item).is_none_or(|key| old_by_key.get(&key).is_none_or(|o| *o != *item))
        })
        .cloned()
        .collect();
    let mut deletes: Vec<Key> = old_by_key
        .into_keys()
        .filter(|key| !new_keys.contains(key))
        .collect();
    deletes.sort();
    RowChanges { puts, deletes }
}

/// The attribute value of a field value as stored (`N` for numbers, `S` otherwise).
pub fn stored_value(value: &FieldValue) -> AttributeValue {
    value_attribute(value)
}

/// The attribute value of a count or version.
pub fn number(n: u64) -> AttributeValue {
    AttributeValue::N(n.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(super) fn sample_issue() -> (Issue, Vec<CustomField>) {
        let project = ProjectId::parse("project-35e9").unwrap();
        let start = CustomField {
            id: FieldId::parse("xattrib-3812").unwrap(),
            project: project.clone(),
            name: "Start".into(),
            field_type: FieldType::Date,
            position: 1,
            version: 1,
            deleted: false,
            options: Vec::new(),
        };
        let items = CustomField {
            id: FieldId::parse("xattrib-3fe6").unwrap(),
            project: project.clone(),
            name: "Num Items".into(),
            field_type: FieldType::Int,
            position: 3,
            version: 1,
            deleted: false,
            options: Vec::new(),
        };
        let mut values = BTreeMap::new();
        values.insert(start.id.clone(), "2023-05-01".into());
        values.insert(items.id.clone(), "42".into());
        let issue = Issue {
            id: IssueId::parse("issue-020e").unwrap(),
            project,
            num: 1,
            name: "Needs Painting".into(),
            state: IssueState::Open,
            values,
            version: 1,
        };
        (issue, vec![start, items])
    }

    #[test]
    fn issue_round_trips_and_derives_its_index_rows() {
        let (issue, fields) = sample_issue();
        let items = issue_items(&issue, &fields).unwrap();
        assert_eq!(decode_issue(items[0].clone()).unwrap(), issue);
        let sks: Vec<_> = items
            .iter()
            .map(|i| match i.get("SK") {
                Some(AttributeValue::S(s)) => s.clone(),
                _ => panic!("no SK"),
            })
            .collect();
        assert_eq!(
            sks,
            [
                "project-35e9",
                "project-35e9#name",
                "project-35e9#state",
                "xvalue-3812",
                "xvalue-3fe6"
            ]
        );
        assert_eq!(items[4].get("Value"), Some(&AttributeValue::N("42".into())));
        assert_eq!(
            items[3].get("Value"),
            Some(&AttributeValue::S("2023-05-01".into()))
        );
        assert_eq!(item_type(&items[1]), Some(types::ISSUE_SORT));
    }

    /// The source item written by hand is its entity's serde form, with the issue's typed
    /// cells as `Values` (an empty map when it has none).
    #[test]
    fn the_source_item_is_its_entity() {
        let (issue, fields) = sample_issue();
        for issue in [
            issue.clone(),
            Issue {
                values: BTreeMap::new(),
                ..issue
            },
        ] {
            let mut expected = issue_item(&issue);
            let cells = issue.values.iter().map(|(id, text)| {
                let field = fields.iter().find(|f| &f.id == id).unwrap();
                (
                    id.to_string(),
                    value_attribute(&field.stored_value(text).unwrap()),
                )
            });
            expected.insert(VALUES.into(), AttributeValue::M(cells.collect()));
            assert_eq!(issue_items(&issue, &fields).unwrap()[0], expected);
        }
    }

    /// The index rows built by hand are the serde forms of their entities, made from the
    /// keys the layout gives them, attribute for attribute.
    #[test]
    fn index_rows_are_their_entities() {
        let (issue, fields) = sample_issue();
        let items = issue_items(&issue, &fields).unwrap();
        let sort_rows = [
            (
                keys::name_row(&issue.id, &issue.project),
                keys::name_sort(&issue.name, issue.num),
            ),
            (
                keys::state_row(&issue.id, &issue.project),
                keys::state_sort(issue.state, issue.num),
            ),
        ];
        let mut expected: Vec<Item> = sort_rows
            .into_iter()
            .map(|(key, gsi1sk)| {
                to_item(&SortRowItem {
                    pk: key.pk,
                    sk: key.sk,
                    gsi1sk,
                    kind: types::ISSUE_SORT.into(),
                })
            })
            .collect();
        for field in &fields {
            let value = field.stored_value(&issue.values[&field.id]).unwrap();
            let key = keys::field_value(&issue.id, &field.id);
            let mut row = to_item(&FieldValueItem {
                pk: key.pk,
                sk: key.sk,
                gsi1sk: keys::value_sort(field, &value, issue.num).unwrap(),
                kind: types::FIELD_VALUE.into(),
            });
            row.insert(VALUE.into(), value_attribute(&value));
            expected.push(row);
        }
        assert_eq!(&items[1..], &expected[..]);
    }

    /// A tenant's item and its directory row read back as the tenant; each decoder refuses
    /// the other's row, and the directory row sits in partition `tenants` under the tenant's
    /// name sort string.
    #[test]
    fn tenant_and_directory_row_round_trip() {
        let tenant = Tenant {
            id: TenantId::parse("tenant-0807").unwrap(),
            name: "Acme Engineering".into(),
        };
        let [item, directory] = tenant_items(&tenant);
        assert_eq!(decode_tenant(&item).unwrap(), tenant);
        assert_eq!(decode_tenant_directory(&directory).unwrap(), tenant);
        assert!(decode_tenant(&directory).is_err());
        assert!(decode_tenant_directory(&item).is_err());
        assert_eq!(item_key(&item), Some(keys::tenant(&tenant.id)));
        assert_eq!(
            item_key(&directory),
            Some(keys::tenant_directory(&tenant.id))
        );
        assert_eq!(
            directory.get("GSI1SK"),
            Some(&AttributeValue::S(keys::tenant_sort(
                "Acme Engineering",
                &tenant.id
            )))
        );
        assert_eq!(item.get("GSI1SK"), None, "the tenant item is in no index");
    }

    #[test]
    fn decoding_checks_the_type() {
        let (issue, fields) = sample_issue();
        let items = issue_items(&issue, &fields).unwrap();
        assert!(decode_issue(items[1].clone()).is_err());
        assert!(decode_tenant(&items[0]).is_err());
    }

    #[test]
    fn writing_checks_values_against_field_types() {
        let (mut issue, fields) = sample_issue();
        issue.values.insert(fields[1].id.clone(), "4.5".into());
        assert!(matches!(
            issue_items(&issue, &fields),
            Err(EncodeError::BadValue(_))
        ));
        issue.values.clear();
        issue
            .values
            .insert(FieldId::parse("xattrib-none").unwrap(), "x".into());
        assert!(matches!(
            issue_items(&issue, &fields),
            Err(EncodeError::UnknownField(_))
        ));
    }

    pub(super) fn sample_project() -> Project {
        Project {
            id: ProjectId::parse("project-35e9").unwrap(),
            tenant: TenantId::parse("tenant-0807").unwrap(),
            name: "Forth Rail Bridge".into(),
            next_issue_num: 4,
            version: 1,
            fields_version: 0,
            deleted: false,
            counts: None,
        }
    }

    #[test]
    fn project_and_field_round_trip() {
        let p = Project {
            fields_version: 2,
            deleted: true,
            counts: None,
            ..sample_project()
        };
        assert_eq!(decode_project(&project_item(&p)).unwrap(), p);
        let (_, fields) = sample_issue();
        let [def, lookup] = field_items(&fields[0]);
        assert_eq!(decode_field(&def).unwrap(), fields[0]);
        assert_eq!(decode_field_lookup(&lookup).unwrap(), p.id);
    }

    /// A project or field row that does not decode names its key in the error, whichever
    /// step refused it: the attributes (serde_dynamo), an id, or the field type.
    #[test]
    fn bad_project_and_field_rows_name_their_key() {
        let key = |e: ItemError| (e.pk, e.sk, e.expected);
        let p = sample_project();
        let mut no_num = project_item(&p);
        no_num.remove("NextIssueNum");
        let mut bad_id = project_item(&p);
        bad_id.insert("PK".into(), AttributeValue::S("project-!".into()));
        for (item, pk) in [(no_num, "project-35e9"), (bad_id, "project-!")] {
            let e = decode_project(&item).unwrap_err();
            assert_eq!(key(e), (pk.into(), "tenant-0807".into(), "project"));
        }
        let (_, fields) = sample_issue();
        let [def, _] = field_items(&fields[0]);
        let (pk, sk) = (key_text(&def, "PK"), key_text(&def, "SK"));
        let mut unknown = def.clone();
        unknown.insert("FieldType".into(), AttributeValue::S("colour".into()));
        let e = decode_field(&unknown).unwrap_err();
        assert!(e.reason.contains("unknown FieldType colour"), "{e}");
        assert_eq!(key(e), (pk.clone(), sk.clone(), "custom field"));
        let mut no_name = def;
        no_name.remove("Name");
        assert_eq!(
            key(decode_field(&no_name).unwrap_err()),
            (pk, sk, "custom field")
        );
    }

    /// The attributes each entity's rows are written with are exactly those its declaration
    /// names (the serde fields and the ones set beside serde), so the typed decoders, which
    /// match through the declaration, know every attribute a writer leaves.
    #[test]
    fn rows_are_written_with_their_declared_attributes() {
        let names = |item: &Item| {
            let mut names: Vec<String> = item.keys().cloned().collect();
            names.sort();
            names
        };
        let declared = |all: &[&str]| {
            let mut names: Vec<String> = all.iter().map(|n| n.to_string()).collect();
            names.sort();
            names
        };
        let tenant = Tenant {
            id: TenantId::parse("tenant-0807").unwrap(),
            name: "Acme".into(),
        };
        let [tenant_row, directory] = tenant_items(&tenant);
        let tenant_attrs: Vec<&str> = TenantAttr::ALL.iter().map(|a| a.name()).collect();
        assert_eq!(names(&tenant_row), declared(&tenant_attrs));
        let directory_attrs: Vec<&str> =
            TenantDirectoryAttr::ALL.iter().map(|a| a.name()).collect();
        assert_eq!(names(&directory), declared(&directory_attrs));
        let (issue, fields) = sample_issue();
        let rows = issue_items(&issue, &fields).unwrap();
        let issue_attrs: Vec<&str> = IssueAttr::ALL.iter().map(|a| a.name()).collect();
        assert_eq!(names(&rows[0]), declared(&issue_attrs));
        let sort_attrs: Vec<&str> = SortRowAttr::ALL.iter().map(|a| a.name()).collect();
        assert_eq!(names(&rows[1]), declared(&sort_attrs));
        let value_attrs: Vec<&str> = FieldValueAttr::ALL.iter().map(|a| a.name()).collect();
        assert_eq!(names(&rows[3]), declared(&value_attrs));
        let counted = fields[0].id.clone();
        let project = Project {
            fields_version: 2,
            counts: Some(IssueCounts {
                issues: 3,
                open: 1,
                filled: [(counted.clone(), 2)].into(),
                matched: [("xvrow-01.1".to_string(), 1)].into(),
            }),
            ..sample_project()
        };
        // The families `Filled` and `Matched` are written once per counted field or view
        // index, as their prefix and the field id or the index's partition.
        let filled = filled_attr(&counted);
        let matched = matched_attr("xvrow-01.1");
        let project_attrs: Vec<&str> = ProjectAttr::ALL
            .iter()
            .filter(|a| **a != ProjectAttr::Deleted)
            .map(|a| match a {
                ProjectAttr::Filled => filled.as_str(),
                ProjectAttr::Matched => matched.as_str(),
                a => a.name(),
            })
            .collect();
        assert_eq!(names(&project_item(&project)), declared(&project_attrs));
        assert_eq!(decode_project(&project_item(&project)).unwrap(), project);
        let mut field = fields[0].clone();
        field.deleted = true;
        // A SELECT field writes its options too, and reads them back as they were.
        field.field_type = FieldType::Select;
        field.options = vec![SelectOption {
            id: "opt-1a2b3c4d".into(),
            label: "Bug".into(),
            color: Some("red".into()),
            key: "80".into(),
            stale_keys: vec!["7f80".into()],
            removed: false,
        }];
        let [definition, lookup] = field_items(&field);
        assert_eq!(decode_field(&definition).unwrap(), field);
        let field_attrs: Vec<&str> = CustomFieldAttr::ALL.iter().map(|a| a.name()).collect();
        assert_eq!(names(&definition), declared(&field_attrs));
        let lookup_attrs: Vec<&str> = FieldLookupAttr::ALL.iter().map(|a| a.name()).collect();
        assert_eq!(names(&lookup), declared(&lookup_attrs));
        // The TTL attribute the table is created with is the mutation record's.
        assert_eq!(attrs::EXPIRES_AT, crate::store::table::TTL);
    }
}
