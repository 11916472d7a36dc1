//! Issues read from items as a store read them (`store::RawItem`): the grid's rows, decoded
//! from a stored row in one pass with `row::Reader`, with no attribute map between.
//! Anything a writer would not leave goes through [`decode_issue`], so both ways agree.

use std::borrow::Cow;
use std::collections::BTreeMap;

use super::{
    decode_field_owned, decode_issue, decode_project_owned, item_pk, item_type, types,
    CustomFieldAttr, FieldValueAttr, IssueAttr, ItemError, ProjectAttr,
};
use crate::ids::{FieldId, IssueId, ProjectId, TenantId};
use crate::model::{CellText, CustomField, FieldType, Issue, IssueCounts, IssueState, Project};
use crate::store::row::{Row, RowError, Scalar};
use crate::store::{Item, RawItem};
use crate::telemetry::{count_fallback, Fallback, Fallbacks, TextMiss};

/// A row of a project's issue list as read from `GSI1`: the issue item itself (the list by
/// num reads the issue items) or an index row, which names its issue by `PK` (any other
/// order; the issue is loaded after).
#[derive(Debug, PartialEq)]
pub enum IssueListRow {
    Issue(Issue),
    /// The issue an index row names, or, when its `PK` is not an issue id, that `PK` (`None`
    /// when it has none), for the error.
    Index(Result<IssueId, Option<String>>),
}

impl IssueListRow {
    fn index(pk: Option<&str>) -> Self {
        IssueListRow::Index(match pk {
            Some(pk) => IssueId::parse(pk).map_err(|_| Some(pk.to_owned())),
            None => Err(None),
        })
    }
}

/// Reads a row of a project's issue list. An issue item is decoded as [`decode_issue`]
/// decodes it; a stored row is read typed, in one pass with `row::Reader`, with no
/// attribute map: every row of a grid page sorted by num comes this way. A row the one pass
/// cannot take as it is (a missing or mistyped attribute, a bad id, a cell that is neither a
/// string nor a number, an attribute given twice) is decoded again the general way, so the
/// result, warnings and errors included, is always exactly that of the attribute map; the
/// proptest `stored_rows_read_as_their_items` holds the two together. Every row that goes the
/// general way is counted, with its reason, in the fall-back counters `ids` carries.
pub fn decode_issue_list_row(raw: RawItem, ids: &mut SharedIds) -> Result<IssueListRow, ItemError> {
    let item = match raw {
        RawItem::Map(item) => item,
        RawItem::Row(row) => match issue_row_from_row(&row, ids) {
            Ok(read) => return Ok(read),
            Err(miss) => {
                ids.fell_back(Fallback::IssueText(miss));
                unreadable("issue list row", &row)?
            }
        },
    };
    Ok(match item_type(&item) {
        Some(types::ISSUE) => IssueListRow::Issue(decode_issue(item)?),
        _ => IssueListRow::index(item_pk(&item)),
    })
}

/// Reads an issue's source item as a store read it: [`decode_issue`], in one typed pass over
/// a stored row (see [`decode_issue_list_row`]).
pub fn decode_issue_raw(raw: RawItem, ids: &mut SharedIds) -> Result<Issue, ItemError> {
    let item = match raw {
        RawItem::Map(item) => item,
        RawItem::Row(row) => {
            let miss = match issue_row_from_row(&row, ids) {
                Ok(IssueListRow::Issue(issue)) => return Ok(issue),
                // An index row where an issue was asked for: the general way says what it is.
                Ok(IssueListRow::Index(_)) => TextMiss::BadKey,
                Err(miss) => miss,
            };
            ids.fell_back(Fallback::IssueText(miss));
            unreadable("issue", &row)?
        }
    };
    decode_issue(item)
}

/// The project and field ids already read from earlier rows of one batch (a page, a
/// BatchGetItem), which later rows share rather than parse and copy again: the 50 issues of a
/// grid page name one project and the same few fields in each of their cells, 450 ids of
/// which 9 differ. Only valid ids are kept, so a shared id is one that [`FieldId::parse`] or
/// [`ProjectId::parse`] accepted.
///
/// It also carries where the batch's fall-backs to the general way are counted (the
/// application's `gridgate_fast_path_fallbacks_total`; nowhere for tools and tests that
/// start from `SharedIds::default()`).
#[derive(Default)]
pub struct SharedIds {
    project: Option<ProjectId>,
    fields: Vec<FieldId>,
    fallbacks: Option<Fallbacks>,
}

/// At most this many field ids are kept per batch: it bounds the linear search, and a grid's
/// projects have fewer fields than this (a row naming more still reads, it just parses).
const MAX_SHARED_FIELDS: usize = 64;

impl SharedIds {
    /// No ids yet; the batch's fall-backs are counted in `fallbacks`.
    pub fn counting(fallbacks: Option<Fallbacks>) -> Self {
        SharedIds {
            fallbacks,
            ..SharedIds::default()
        }
    }

    /// Counts a row of the batch that went the general way.
    fn fell_back(&self, fallback: Fallback) {
        count_fallback(self.fallbacks.as_ref(), fallback);
    }

    fn project(&mut self, text: &str) -> Option<ProjectId> {
        match &self.project {
            Some(project) if project.as_str() == text => Some(project.clone()),
            _ => {
                let project = ProjectId::parse(text).ok()?;
                self.project = Some(project.clone());
                Some(project)
            }
        }
    }

    fn field(&mut self, text: &str) -> Option<FieldId> {
        // Field ids share their prefix and length, so each candidate is told apart by its
        // last (random) bytes first, and only a likely match is compared in full.
        let tail = |id: &str| id.as_bytes().last_chunk::<8>().copied();
        let wanted = tail(text);
        let likely = |f: &&FieldId| tail(f.as_str()) == wanted && f.as_str() == text;
        if let Some(field) = self.fields.iter().find(likely) {
            return Some(field.clone());
        }
        let field = FieldId::parse(text).ok()?;
        if self.fields.len() < MAX_SHARED_FIELDS {
            self.fields.push(field.clone());
        }
        Some(field)
    }
}

/// The issue or index row a stored row holds when every attribute is as a writer leaves it; otherwise why
/// it needs the attribute map's judgement.
fn issue_row_from_row(row: &Row, ids: &mut SharedIds) -> Result<IssueListRow, TextMiss> {
    #[derive(Default)]
    struct Parts<'a> {
        pk: Option<Cow<'a, str>>,
        sk: Option<Cow<'a, str>>,
        kind: Option<bool>,
        num: Option<u32>,
        name: Option<String>,
        state: Option<IssueState>,
        values: Option<BTreeMap<FieldId, CellText>>,
        version: Option<u64>,
        /// Whether an attribute only issues declare was read (which an index row would
        /// not hold), and one only index rows declare (which an issue would not).
        issue_only: bool,
        index_only: bool,
        /// Set on the first thing the one pass leaves to the attribute map.
        miss: Option<TextMiss>,
    }
    impl Parts<'_> {
        /// Notes why the row goes the general way (the first reason is kept).
        fn miss(&mut self, miss: TextMiss) {
            self.miss.get_or_insert(miss);
        }
    }
    let mut parts = Parts::default();
    let pass = row.as_ref().reader().item(|r, name| {
        let p = &mut parts;
        // Attributes are told apart through the entities' declarations (`items::entity!`),
        // and the match below has an arm for every attribute an issue declares: an attribute
        // added to the declaration does not compile until this pass reads it.
        let Some(attr) = IssueAttr::of(&name) else {
            match FieldValueAttr::of(&name) {
                Some(_) => p.index_only = true,
                // Never dropped: the general path decides what the row is.
                None => p.miss(TextMiss::UnknownAttribute),
            }
            r.scalar()?;
            return Ok(());
        };
        p.issue_only |= !declared_by_index_rows(attr);
        let value = match attr {
            IssueAttr::Values => {
                if p.values.is_some() {
                    p.miss(TextMiss::RepeatedAttribute);
                }
                let mut values = BTreeMap::new();
                let mut odd = false;
                let is_map = r.map(|r, field| {
                    match (ids.field(&field), r.scalar()?) {
                        (Some(field), Scalar::S(text) | Scalar::N(text)) => {
                            values.insert(field, CellText::from(&*text));
                        }
                        _ => odd = true,
                    }
                    Ok(())
                })?;
                if odd || !is_map {
                    p.miss(TextMiss::OddValue);
                }
                p.values = Some(values);
                return Ok(());
            }
            // Read by neither decoder: any value, as the attribute map ignores it.
            IssueAttr::Gsi1sk => {
                r.scalar()?;
                return Ok(());
            }
            IssueAttr::Pk
            | IssueAttr::Sk
            | IssueAttr::Type
            | IssueAttr::Num
            | IssueAttr::Name
            | IssueAttr::State
            | IssueAttr::Version => r.scalar()?,
        };
        // Each attribute read must appear once: a repeated one keeps its last value in an
        // attribute map, which is for the general path to settle.
        let (seen, ok) = match (attr, value) {
            (IssueAttr::Pk, Scalar::S(pk)) => (p.pk.replace(pk).is_some(), true),
            (IssueAttr::Sk, Scalar::S(sk)) => (p.sk.replace(sk).is_some(), true),
            (IssueAttr::Type, Scalar::S(t)) => (p.kind.replace(t == types::ISSUE).is_some(), true),
            (IssueAttr::Num, Scalar::N(n)) => {
                let num = n.parse::<u64>().ok().and_then(|n| u32::try_from(n).ok());
                (p.num.is_some(), num.map(|n| p.num = Some(n)).is_some())
            }
            (IssueAttr::Version, Scalar::N(n)) => {
                let version = n.parse().ok();
                (
                    p.version.is_some(),
                    version.map(|v| p.version = Some(v)).is_some(),
                )
            }
            (IssueAttr::Name, Scalar::S(text)) => {
                (p.name.replace(text.into_owned()).is_some(), true)
            }
            (IssueAttr::State, Scalar::S(s)) => {
                let state = IssueState::parse(&s);
                (
                    p.state.is_some(),
                    state.map(|s| p.state = Some(s)).is_some(),
                )
            }
            // A key, type or issue attribute of another type.
            _ => (false, false),
        };
        if seen {
            p.miss(TextMiss::RepeatedAttribute);
        }
        if !ok {
            p.miss(TextMiss::OddValue);
        }
        Ok(())
    });
    pass.map_err(|_: RowError| TextMiss::Unreadable)?;
    if let Some(miss) = parts.miss {
        return Err(miss);
    }
    match parts.kind {
        // An attribute its entity does not declare (an issue's on an index row, an index
        // row's on an issue) goes the general way too, rather than being ignored here.
        Some(false) if parts.issue_only => return Err(TextMiss::UnknownAttribute),
        Some(true) if parts.index_only => return Err(TextMiss::UnknownAttribute),
        // Not an issue item: an index row, named by its `PK`.
        Some(false) => return Ok(IssueListRow::index(parts.pk.as_deref())),
        Some(true) => {}
        None => return Err(TextMiss::MissingAttribute),
    }
    let Parts {
        pk: Some(pk),
        sk: Some(sk),
        num: Some(num),
        name: Some(name),
        state: Some(state),
        values,
        version: Some(version),
        ..
    } = parts
    else {
        return Err(TextMiss::MissingAttribute);
    };
    let (Ok(id), Some(project)) = (IssueId::parse(&pk), ids.project(&sk)) else {
        return Err(TextMiss::BadKey);
    };
    Ok(IssueListRow::Issue(Issue {
        project,
        id,
        num,
        name,
        state,
        values: values.unwrap_or_default(),
        version,
    }))
}

/// Whether index rows declare `attr` too (see `FieldValueAttr`, `SortRowAttr`): told by the
/// variant, not by the name again, since every attribute of every row of a page comes here.
/// `attributes_shared_with_index_rows_are_declared_by_them` holds this to the declarations.
fn declared_by_index_rows(attr: IssueAttr) -> bool {
    match attr {
        IssueAttr::Pk | IssueAttr::Sk | IssueAttr::Gsi1sk | IssueAttr::Type => true,
        IssueAttr::Num
        | IssueAttr::Name
        | IssueAttr::State
        | IssueAttr::Version
        | IssueAttr::Values => false,
    }
}

/// A row of a project's partition: the project, one of its custom fields, or another item
/// (an issue's rows do not live there, but nothing stops other items from doing so).
#[derive(Debug, PartialEq)]
pub enum PartitionRow {
    Project(Project),
    Field(CustomField),
    /// A saved view's definition: read by serde, not by the one pass (a project has at most
    /// 20, and their keys and filters are JSON inside an attribute).
    View(crate::model::View),
    Other,
}

/// Reads a row of a project's partition as a store read it: [`decode_project_owned`] or
/// [`decode_field_owned`] by its `Type`, in one typed pass over a stored row. As for
/// issues, a row the pass cannot take as it is goes the general way, so the result (errors
/// included) is always that of the attribute map; the proptest
/// `partition_rows_read_as_their_items` holds the two together. Every grid page reads its
/// project's partition, and through attribute maps and serde its 9 rows cost about a twentieth
/// of a page. A row that goes the general way is counted, with its reason, in `fallbacks`.
pub fn decode_partition_row(
    raw: RawItem,
    fallbacks: Option<&Fallbacks>,
) -> Result<PartitionRow, ItemError> {
    let item = match raw {
        RawItem::Map(item) => item,
        RawItem::Row(row) => match partition_row_from_row(&row) {
            Ok(TextRow::Read(read)) => return Ok(read),
            // The one pass leaves views to serde by design: not a fall-back.
            Ok(TextRow::View) => unreadable("project partition row", &row)?,
            Err(miss) => {
                count_fallback(fallbacks, Fallback::PartitionText(miss));
                unreadable("project partition row", &row)?
            }
        },
    };
    Ok(match item_type(&item) {
        Some(types::PROJECT) => PartitionRow::Project(decode_project_owned(item)?),
        Some(types::CUSTOM_FIELD) => PartitionRow::Field(decode_field_owned(item)?),
        Some(types::VIEW) => PartitionRow::View(super::decode_view_owned(item)?),
        _ => PartitionRow::Other,
    })
}

/// What the one pass over a partition row gives: the row, or word that it is a view's
/// definition, which serde reads.
// Returned by value once per row and taken apart at once, never stored: boxing the row would
// cost an allocation per row of every grid page.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, PartialEq)]
enum TextRow {
    Read(PartitionRow),
    View,
}

/// A whole number as serde reads one from an `N`, when it is written plainly (digits, no
/// leading zero); anything else is left to serde.
/// [`plain_number`], or its negation written with a leading `-` (a counter that drifted below
/// zero).
fn signed_number(n: &str) -> Option<i64> {
    match n.strip_prefix('-') {
        Some(magnitude) if magnitude != "0" => plain_number::<i64>(magnitude).map(|m| -m),
        Some(_) => None,
        None => plain_number(n),
    }
}

fn plain_number<T: std::str::FromStr>(n: &str) -> Option<T> {
    let digits = !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit());
    if digits && (n == "0" || !n.starts_with('0')) {
        n.parse().ok()
    } else {
        None
    }
}

/// The attributes of a project or custom field item, as [`partition_row_from_row`] reads
/// them.
#[derive(Default)]
struct PartitionParts<'a> {
    pk: Option<Cow<'a, str>>,
    sk: Option<Cow<'a, str>>,
    kind: Option<Cow<'a, str>>,
    name: Option<Cow<'a, str>>,
    field_type: Option<Cow<'a, str>>,
    options: Option<Cow<'a, str>>,
    next_issue_num: Option<u32>,
    position: Option<u32>,
    version: Option<u64>,
    fields_version: Option<u64>,
    deleted: Option<u64>,
    issue_count: Option<i64>,
    open_count: Option<i64>,
    counted: Option<u64>,
    filled: BTreeMap<FieldId, i64>,
    matched: BTreeMap<String, i64>,
    /// Whether an attribute only projects declare was read, one only custom fields do, and
    /// one neither declares.
    project_only: bool,
    field_only: bool,
    unknown: bool,
    /// Set on the first thing the one pass leaves to the attribute map.
    miss: Option<TextMiss>,
}

/// Sets an attribute read once with the type its decoder wants; otherwise why not: a value
/// of another type, or a repeated attribute (a map keeps its last value), which the general
/// path settles.
fn set_once<T>(slot: &mut Option<T>, value: Option<T>) -> Result<(), TextMiss> {
    let value = value.ok_or(TextMiss::OddValue)?;
    match slot.replace(value) {
        None => Ok(()),
        Some(_) => Err(TextMiss::RepeatedAttribute),
    }
}

/// The row a stored partition item holds when every attribute is as a writer leaves it;
/// otherwise why it needs the attribute map's judgement.
fn partition_row_from_row(row: &Row) -> Result<TextRow, TextMiss> {
    let mut p = PartitionParts::default();
    let pass = row.as_ref().reader().item(|r, name| {
        let (s, n) = match r.scalar()? {
            Scalar::S(s) => (Some(s), None),
            Scalar::N(n) => (None, Some(n)),
            Scalar::Other => (None, None),
        };
        // Both entities' declarations (`items::entity!`) name what a partition row may hold,
        // and each match below has an arm for every attribute of its entity: an attribute
        // added to a declaration does not compile until this pass reads it.
        let filled = name
            .strip_prefix(ProjectAttr::Filled.name())
            .filter(|field| !field.is_empty());
        let matched = name
            .strip_prefix(ProjectAttr::Matched.name())
            .filter(|partition| !partition.is_empty());
        let read = match (ProjectAttr::of(&name), CustomFieldAttr::of(&name)) {
            // The family of per-field counters (see `ProjectAttr::Filled`).
            _ if filled.is_some() => {
                p.project_only = true;
                let field = filled.and_then(|f| FieldId::parse(f).ok());
                match (field, n.as_deref().and_then(signed_number)) {
                    (Some(field), Some(count)) => match p.filled.insert(field, count) {
                        None => Ok(()),
                        Some(_) => Err(TextMiss::RepeatedAttribute),
                    },
                    _ => Err(TextMiss::OddValue),
                }
            }
            // The family of view index counters (see `ProjectAttr::Matched`).
            _ if matched.is_some() => {
                p.project_only = true;
                match (matched, n.as_deref().and_then(signed_number)) {
                    (Some(partition), Some(count)) => {
                        match p.matched.insert(partition.to_string(), count) {
                            None => Ok(()),
                            Some(_) => Err(TextMiss::RepeatedAttribute),
                        }
                    }
                    _ => Err(TextMiss::OddValue),
                }
            }
            (Some(attr), field) => {
                p.project_only |= field.is_none();
                match attr {
                    ProjectAttr::Pk => set_once(&mut p.pk, s),
                    ProjectAttr::Sk => set_once(&mut p.sk, s),
                    ProjectAttr::Type => set_once(&mut p.kind, s),
                    ProjectAttr::Name => set_once(&mut p.name, s),
                    // Read by neither decoder, but a string in every row that has it.
                    ProjectAttr::Gsi1sk => s.map(|_| ()).ok_or(TextMiss::OddValue),
                    ProjectAttr::NextIssueNum => {
                        set_once(&mut p.next_issue_num, n.as_deref().and_then(plain_number))
                    }
                    ProjectAttr::Version => {
                        set_once(&mut p.version, n.as_deref().and_then(plain_number))
                    }
                    ProjectAttr::FieldsVersion => {
                        set_once(&mut p.fields_version, n.as_deref().and_then(plain_number))
                    }
                    ProjectAttr::Deleted => {
                        set_once(&mut p.deleted, n.as_deref().and_then(plain_number))
                    }
                    ProjectAttr::IssueCount => {
                        set_once(&mut p.issue_count, n.as_deref().and_then(signed_number))
                    }
                    ProjectAttr::OpenCount => {
                        set_once(&mut p.open_count, n.as_deref().and_then(signed_number))
                    }
                    ProjectAttr::Counted => {
                        set_once(&mut p.counted, n.as_deref().and_then(plain_number))
                    }
                    // The bare prefixes, without a field id or partition: the general way
                    // decides.
                    ProjectAttr::Filled | ProjectAttr::Matched => Err(TextMiss::OddValue),
                }
            }
            (None, Some(attr)) => {
                p.field_only = true;
                match attr {
                    CustomFieldAttr::FieldType => set_once(&mut p.field_type, s),
                    CustomFieldAttr::Options => set_once(&mut p.options, s),
                    CustomFieldAttr::Position => {
                        set_once(&mut p.position, n.as_deref().and_then(plain_number))
                    }
                    // Projects declare these too: read in the arm above.
                    CustomFieldAttr::Pk
                    | CustomFieldAttr::Sk
                    | CustomFieldAttr::Type
                    | CustomFieldAttr::Name
                    | CustomFieldAttr::Version
                    | CustomFieldAttr::Deleted => Ok(()),
                }
            }
            // Never dropped: a project or field holding it goes the general way (below).
            (None, None) => {
                p.unknown = true;
                Ok(())
            }
        };
        if let Err(miss) = read {
            p.miss.get_or_insert(miss);
        }
        Ok(())
    });
    pass.map_err(|_: RowError| TextMiss::Unreadable)?;
    if let Some(miss) = p.miss {
        return Err(miss);
    }
    match p.kind.as_deref() {
        // Read by the caller the general way (see `decode_partition_row`).
        Some(types::VIEW) => Ok(TextRow::View),
        // An attribute its entity does not declare goes the general way, not ignored here.
        Some(types::PROJECT) if p.field_only || p.unknown => Err(TextMiss::UnknownAttribute),
        Some(types::CUSTOM_FIELD) if p.project_only || p.unknown => Err(TextMiss::UnknownAttribute),
        // A row of another type is no entity this pass reads, whatever it holds.
        Some(types::PROJECT) => {
            project_from_parts(p).map(|r| TextRow::Read(PartitionRow::Project(r)))
        }
        Some(types::CUSTOM_FIELD) => {
            field_from_parts(p).map(|r| TextRow::Read(PartitionRow::Field(r)))
        }
        Some(_) => Ok(TextRow::Read(PartitionRow::Other)),
        None => Err(TextMiss::MissingAttribute),
    }
}

/// An id the one pass reads from a key attribute: missing, or not an id, it is the general
/// path's to report.
fn key_id<T, E>(
    text: Option<&str>,
    parse: impl FnOnce(&str) -> Result<T, E>,
) -> Result<T, TextMiss> {
    parse(text.ok_or(TextMiss::MissingAttribute)?).map_err(|_| TextMiss::BadKey)
}

/// [`decode_project_owned`] of the parts, when they make a project without its judgement.
fn project_from_parts(p: PartitionParts<'_>) -> Result<Project, TextMiss> {
    const MISSING: TextMiss = TextMiss::MissingAttribute;
    Ok(Project {
        id: key_id(p.pk.as_deref(), ProjectId::parse)?,
        tenant: key_id(p.sk.as_deref(), TenantId::parse)?,
        name: p.name.ok_or(MISSING)?.into_owned(),
        next_issue_num: p.next_issue_num.ok_or(MISSING)?,
        version: p.version.ok_or(MISSING)?,
        // The defaults of `ProjectItem`.
        fields_version: p.fields_version.unwrap_or(0),
        deleted: p.deleted.is_some(),
        counts: p.counted.map(|_| IssueCounts {
            issues: p.issue_count.unwrap_or(0),
            open: p.open_count.unwrap_or(0),
            filled: p.filled,
            matched: p.matched,
        }),
    })
}

/// [`decode_field_owned`] of the parts, when they make a field without its judgement.
fn field_from_parts(p: PartitionParts<'_>) -> Result<CustomField, TextMiss> {
    const MISSING: TextMiss = TextMiss::MissingAttribute;
    let field_type = p.field_type.as_deref().ok_or(MISSING)?;
    Ok(CustomField {
        id: key_id(p.sk.as_deref(), FieldId::parse)?,
        project: key_id(p.pk.as_deref(), ProjectId::parse)?,
        name: p.name.ok_or(MISSING)?.into_owned(),
        field_type: FieldType::parse(field_type).ok_or(TextMiss::OddValue)?,
        position: p.position.ok_or(MISSING)?,
        // The default of `CustomFieldItem`.
        version: p.version.unwrap_or(1),
        deleted: p.deleted.is_some(),
        // The same reader as `decode_field_owned`'s.
        options: super::decode_options(p.options.as_deref()).map_err(|_| TextMiss::OddValue)?,
    })
}

/// An item a store read, as an attribute map, for the decoders that read maps; `expected`
/// names the entity in the error.
pub fn raw_item(raw: RawItem, expected: &'static str) -> Result<Item, ItemError> {
    raw.item().map_err(|e| not_a_row(expected, &e))
}

/// A row as an attribute map, for the general way; `expected` names the entity in the error.
fn unreadable(expected: &'static str, row: &Row) -> Result<Item, ItemError> {
    row.as_ref().item().map_err(|e| not_a_row(expected, &e))
}

fn not_a_row(expected: &'static str, e: &RowError) -> ItemError {
    ItemError {
        pk: String::new(),
        sk: String::new(),
        expected,
        reason: format!("not a stored row: {e}"),
    }
}

/// The typed decoders against the attribute-map ones they must agree with.
#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use proptest::prelude::*;

    use super::*;
    use crate::items::tests::{sample_issue, sample_project};
    use crate::items::{field_items, issue_item, issue_items, project_item, SortRowAttr, VALUES};
    use crate::store::AttributeValue;
    use crate::telemetry::Metrics;

    /// One way an issue's source item can differ from what writers leave, for the proptest
    /// below; `Clean` leaves it as written.
    #[derive(Clone, Debug)]
    enum Twist {
        Clean,
        Remove(&'static str),
        Retype(&'static str, AttributeValue),
        Extra(String, AttributeValue),
        Cell(String, AttributeValue),
    }

    fn twist() -> impl Strategy<Value = Twist> {
        // Every attribute an issue declares, and the one only index rows declare.
        let mut declared: Vec<&'static str> = IssueAttr::ALL.iter().map(|a| a.name()).collect();
        declared.push(FieldValueAttr::Value.name());
        let names = prop::sample::select(declared);
        let values = prop_oneof![
            "[a-z0-9\\-\"]{0,12}".prop_map(AttributeValue::S),
            "-?[0-9]{1,11}(\\.[0-9])?".prop_map(AttributeValue::N),
            any::<bool>().prop_map(AttributeValue::Bool),
            Just(AttributeValue::M(HashMap::new())),
            Just(AttributeValue::S("issue-020e".into())),
            Just(AttributeValue::S("project-35e9".into())),
            Just(AttributeValue::S("Issue".into())),
            Just(AttributeValue::S("FieldValue".into())),
            Just(AttributeValue::S("closed".into())),
        ];
        prop_oneof![
            3 => Just(Twist::Clean),
            1 => names.clone().prop_map(Twist::Remove),
            2 => (names, values.clone()).prop_map(|(n, v)| Twist::Retype(n, v)),
            // An attribute no entity declares (or, rarely, one it does).
            2 => ("[A-Z][A-Za-z0-9]{0,7}", values.clone()).prop_map(|(n, v)| Twist::Extra(n, v)),
            2 => ("(xattrib-[0-9a-f]{4}|[a-z\\-]{0,9})", values).prop_map(|(f, v)| Twist::Cell(f, v)),
        ]
    }

    proptest! {
        /// An issue, or a row of an issue list, read from its stored row gives exactly what its
        /// attribute map gives: the same issue or index row, or an error with the same
        /// message, whatever the item holds.
        #[test]
        fn stored_rows_read_as_their_items(
            name in "[a-zA-Z0-9 \"\\\\\u{1}é\u{1F600}]{0,16}",
            num in any::<u32>(),
            version in any::<u64>(),
            closed in any::<bool>(),
            twist in twist(),
        ) {
            let (mut issue, fields) = sample_issue();
            issue.name = name;
            issue.num = num;
            issue.version = version;
            issue.state = if closed { IssueState::Closed } else { IssueState::Open };
            let mut item = issue_items(&issue, &fields).unwrap().remove(0);
            match twist {
                Twist::Clean => {}
                Twist::Remove(name) => {
                    item.remove(name);
                }
                Twist::Retype(name, value) => {
                    item.insert(name.to_string(), value);
                }
                Twist::Extra(name, value) => {
                    item.insert(name, value);
                }
                Twist::Cell(field, value) => {
                    if let Some(AttributeValue::M(cells)) = item.get_mut(VALUES) {
                        cells.insert(field, value);
                    }
                }
            }
            // Only a row the store can hold: string keys.
            prop_assume!(storable(&item));
            let text = RawItem::Row(Row::of_item(&item));
            // The typed reads share ids with a clean row read before, as a page's rows do,
            // so both the shared ids and the ones a twisted row adds are exercised.
            let mut shared = SharedIds::default();
            let clean = issue_items(&sample_issue().0, &fields).unwrap().remove(0);
            let clean = RawItem::Row(Row::of_item(&clean));
            decode_issue_raw(clean, &mut shared).unwrap();
            let typed = decode_issue_raw(text.clone(), &mut shared).map_err(|e| e.to_string());
            let general = decode_issue_raw(RawItem::Map(item.clone()), &mut SharedIds::default())
                .map_err(|e| e.to_string());
            prop_assert_eq!(typed, general);
            let typed = decode_issue_list_row(text, &mut shared).map_err(|e| e.to_string());
            let general = decode_issue_list_row(RawItem::Map(item), &mut SharedIds::default())
                .map_err(|e| e.to_string());
            prop_assert_eq!(typed, general);
        }
    }

    /// A value for a partition row's attribute: of each type, and numbers written every way
    /// serde might read differently from the one pass (signs, leading zeros, fractions,
    /// overflow).
    fn partition_value() -> impl Strategy<Value = AttributeValue> {
        prop_oneof![
            "[a-z0-9\\-\"]{0,12}".prop_map(AttributeValue::S),
            "[-+]?[0-9]{1,21}(\\.[0-9])?".prop_map(AttributeValue::N),
            any::<u64>().prop_map(|n| AttributeValue::N(n.to_string())),
            any::<bool>().prop_map(AttributeValue::Bool),
            Just(AttributeValue::Null(true)),
            Just(AttributeValue::M(HashMap::new())),
            Just(AttributeValue::S("project-35e9".into())),
            Just(AttributeValue::S("tenant-0807".into())),
            Just(AttributeValue::S("xattrib-3812".into())),
            Just(AttributeValue::S(types::PROJECT.into())),
            Just(AttributeValue::S(types::CUSTOM_FIELD.into())),
            Just(AttributeValue::S("int".into())),
            Just(AttributeValue::S("bogus".into())),
            Just(AttributeValue::S(types::VIEW.into())),
            // A type of another partition (a tenant's directory row): a row both paths pass over.
            Just(AttributeValue::S(types::TENANT_DIRECTORY.into())),
            Just(AttributeValue::S("[\"xattrib-3812\"]".into())),
            Just(AttributeValue::S(r#"{"generation":2,"keys":[{"column":"NUM","descending":true,"emptyFirst":false}]}"#.into())),
        ]
    }

    /// A project row with its counters kept: issues, open, filled cells and view counters.
    fn counted_project() -> Project {
        Project {
            counts: Some(IssueCounts {
                issues: 7,
                open: 3,
                filled: [(FieldId::parse("xattrib-3812").unwrap(), 5)].into(),
                matched: [("xvrow-01.1".to_string(), 2), ("xvrow-01.2".to_string(), 0)].into(),
            }),
            ..sample_project()
        }
    }

    /// A saved view's row, with a serving and a building index, progress and retired ones.
    fn sample_view_item() -> Item {
        use crate::ids::ViewId;
        use crate::model::{BuildProgress, View, ViewColumn, ViewIndex, ViewKey};
        let field = FieldId::parse("xattrib-3812").unwrap();
        let index = |generation, filter: Option<&str>| ViewIndex {
            generation,
            keys: vec![ViewKey {
                column: ViewColumn::Custom(field.clone()),
                descending: true,
                empty_first: true,
            }],
            filter: filter.map(str::to_string),
        };
        let view = View {
            id: ViewId::parse("xview-01").unwrap(),
            project: ProjectId::parse("project-35e9").unwrap(),
            name: "Open by estimate".into(),
            columns: vec![field.clone()],
            position: 2,
            version: 3,
            serving: Some(index(2, None)),
            building: Some(index(
                3,
                Some(r#"{"column":{"field":"STATE"},"eq":"OPEN"}"#),
            )),
            built: Some(BuildProgress {
                through: 9,
                scanned: 4,
            }),
            retired: vec![1],
            deleted: false,
        };
        let [definition, _] = crate::items::view_items(&view);
        definition
    }

    /// The name of an attribute of a partition row: one a project or a custom field declares,
    /// or one neither declares.
    fn partition_attribute() -> impl Strategy<Value = String> {
        let declared: Vec<String> = ProjectAttr::ALL
            .iter()
            .map(|a| a.name())
            .chain(CustomFieldAttr::ALL.iter().map(|a| a.name()))
            .chain(crate::items::view::ViewAttr::ALL.iter().map(|a| a.name()))
            .map(str::to_owned)
            .collect();
        // The counter families, by a name they hold and by one they do not.
        let counters = prop::sample::select(vec![
            "Filled:xattrib-3812".to_string(),
            "Filled:xattrib-0000".to_string(),
            "Matched:xvrow-01.1".to_string(),
            "Matched:xvrow-02.7".to_string(),
            "Matched:".to_string(),
        ]);
        prop_oneof![
            4 => prop::sample::select(declared),
            1 => counters,
            1 => "[A-Z][A-Za-z0-9]{0,7}",
        ]
    }

    proptest! {
        /// A project (with its counters), custom field or saved view row read from its stored row
        /// gives exactly what its attribute map gives (the same row, or an error with the same
        /// message), whatever it holds.
        #[test]
        fn partition_rows_read_as_their_items(
            kind in 0..4u8,
            twists in prop::collection::vec(
                (
                    partition_attribute(),
                    prop::option::of(partition_value()),
                ),
                0..3,
            ),
        ) {
            let mut item = match kind {
                0 => {
                    let [definition, _] = field_items(&sample_issue().1[0]);
                    definition
                }
                1 => project_item(&sample_project()),
                2 => project_item(&counted_project()),
                _ => sample_view_item(),
            };
            let faults = twists.len();
            for (name, value) in twists {
                match value {
                    Some(value) => item.insert(name, value),
                    None => item.remove(&name),
                };
            }
            prop_assume!(storable(&item));
            let text = RawItem::Row(Row::of_item(&item));
            let typed = decode_partition_row(text, None).map_err(|e| e.to_string());
            let general = decode_partition_row(RawItem::Map(item), None).map_err(|e| e.to_string());
            if faults <= 1 {
                prop_assert_eq!(typed, general);
            } else {
                // With two faults, serde reports whichever it meets first in the map, whose
                // order is a hash map's: the general path alone gives either message.
                prop_assert_eq!(typed.is_ok(), general.is_ok());
                if typed.is_ok() {
                    prop_assert_eq!(typed, general);
                }
            }
        }
    }

    /// Whether the store could hold `item`: its keys are non-empty strings (a row keeps them
    /// in its key, see `Row`).
    fn storable(item: &Item) -> bool {
        [crate::store::table::PK, crate::store::table::SK]
            .iter()
            .all(|k| matches!(item.get(*k), Some(AttributeValue::S(s)) if !s.is_empty()))
    }

    /// The one pass reads the rows writers leave (and so the general path is the exception).
    #[test]
    fn partition_rows_as_written_read_in_one_pass() {
        let read = |item: &Item| partition_row_from_row(&Row::of_item(item)).unwrap();
        let project = sample_project();
        assert_eq!(
            read(&project_item(&project)),
            TextRow::Read(PartitionRow::Project(project))
        );
        let field = sample_issue().1[0].clone();
        let [definition, lookup] = field_items(&field);
        assert_eq!(read(&definition), TextRow::Read(PartitionRow::Field(field)));
        assert_eq!(read(&lookup), TextRow::Read(PartitionRow::Other));
        let counted = counted_project();
        assert_eq!(
            read(&project_item(&counted)),
            TextRow::Read(PartitionRow::Project(counted))
        );
        // A view row is read by serde (see `TextRow::View`), not counted as a fall-back.
        assert_eq!(read(&sample_view_item()), TextRow::View);
    }

    /// Rows of a batch that name other projects and fields than the rows before them keep
    /// their own ids: sharing only ever hands out an id equal to the row's own.
    #[test]
    fn shared_ids_follow_each_row() {
        let (first, _) = sample_issue();
        let mut second = first.clone();
        second.project = ProjectId::parse("project-0other").unwrap();
        second.id = IssueId::parse("issue-0other").unwrap();
        let other_field = FieldId::parse("xattrib-0other").unwrap();
        second.values = [(other_field, "7".into())].into();
        let text = |issue: &Issue| {
            let mut item = issue_item(issue);
            let cells = issue.values.iter();
            let cells = cells.map(|(f, v)| (f.to_string(), AttributeValue::S(v.to_string())));
            item.insert(VALUES.into(), AttributeValue::M(cells.collect()));
            RawItem::Row(Row::of_item(&item))
        };
        let mut shared = SharedIds::default();
        for issue in [&first, &second, &first, &second] {
            assert_eq!(&decode_issue_raw(text(issue), &mut shared).unwrap(), issue);
        }
    }

    /// A row holding an attribute its entity does not declare is read the general way, and
    /// counted: the one pass never drops what it does not know.
    #[test]
    fn unknown_attributes_take_the_general_path_and_are_counted() {
        let metrics = Metrics::new().unwrap();
        let counted = |path: &str| {
            let text = metrics.render().unwrap();
            let line = format!(
                "gridgate_fast_path_fallbacks_total{{path=\"{path}\",reason=\"unknown_attribute\"}} "
            );
            text.lines()
                .find_map(|l| l.strip_prefix(line.as_str()))
                .and_then(|n| n.parse::<u64>().ok())
        };
        let (issue, fields) = sample_issue();
        let mut rows = issue_items(&issue, &fields).unwrap();
        let as_text = |item: &Item| RawItem::Row(Row::of_item(item));
        // As written, every row of an issue list reads in one pass.
        for row in &rows {
            assert!(issue_row_from_row(&Row::of_item(row), &mut SharedIds::default()).is_ok());
        }
        // An attribute nobody declares, an index row's `Value` on an issue, and an issue's
        // `Num` on an index row.
        rows[0].insert("Priority".into(), AttributeValue::S("high".into()));
        let mut with_value = issue_items(&issue, &fields).unwrap().remove(0);
        with_value.insert(
            FieldValueAttr::Value.name().into(),
            AttributeValue::N("1".into()),
        );
        let mut sort_row = rows[1].clone();
        sort_row.insert(IssueAttr::Num.name().into(), AttributeValue::N("1".into()));
        let mut ids = SharedIds::counting(Some(metrics.fallbacks()));
        for item in [&rows[0], &with_value, &sort_row] {
            assert_eq!(
                issue_row_from_row(&Row::of_item(item), &mut SharedIds::default()).err(),
                Some(TextMiss::UnknownAttribute),
                "{item:?}"
            );
            let typed = decode_issue_list_row(as_text(item), &mut ids).map_err(|e| e.to_string());
            let general = decode_issue_list_row(RawItem::Map(item.clone()), &mut ids)
                .map_err(|e| e.to_string());
            assert_eq!(typed, general);
        }
        assert_eq!(counted("issue_text"), Some(3));

        let mut project = project_item(&sample_project());
        project.insert("Colour".into(), AttributeValue::S("red".into()));
        let [mut field, _] = field_items(&sample_issue().1[0]);
        field.insert(
            ProjectAttr::NextIssueNum.name().into(),
            AttributeValue::N("2".into()),
        );
        for item in [project, field] {
            assert_eq!(
                partition_row_from_row(&Row::of_item(&item)).err(),
                Some(TextMiss::UnknownAttribute),
                "{item:?}"
            );
            let fallbacks = metrics.fallbacks();
            let typed = decode_partition_row(as_text(&item), Some(&fallbacks));
            let general = decode_partition_row(RawItem::Map(item), None);
            assert_eq!(
                typed.map_err(|e| e.to_string()),
                general.map_err(|e| e.to_string())
            );
        }
        assert_eq!(counted("partition_text"), Some(2));
    }

    #[test]
    fn attributes_shared_with_index_rows_are_declared_by_them() {
        for attr in IssueAttr::ALL {
            assert_eq!(
                declared_by_index_rows(*attr),
                FieldValueAttr::of(attr.name()).is_some(),
                "{attr:?}"
            );
        }
        for attr in SortRowAttr::ALL {
            assert!(IssueAttr::of(attr.name()).is_some_and(declared_by_index_rows));
        }
    }

    /// Each way a stored row leaves the one pass is told apart, for the fall-back's reason.
    #[test]
    fn the_reasons_of_a_fall_back_are_told_apart() {
        let (issue, fields) = sample_issue();
        let clean = issue_items(&issue, &fields).unwrap().remove(0);
        let reason = |row: &Row| issue_row_from_row(row, &mut SharedIds::default()).err();
        assert_eq!(reason(&Row::of_item(&clean)), None);
        let num = IssueAttr::Num.name();
        let twisted = |twist: &dyn Fn(&mut Item)| {
            let mut item = clean.clone();
            twist(&mut item);
            Row::of_item(&item)
        };
        let renamed = |from: &'static str, to: &'static str| {
            twisted(&move |item: &mut Item| {
                let value = item.remove(from).unwrap();
                item.insert(to.into(), value);
            })
        };
        // A row no writer leaves: `Num` twice.
        let mut repeated = Row::of_item(&clean);
        repeated
            .attributes
            .extend(crate::store::row::encode_attributes([(num, &clean[num])]));
        let mut truncated = Row::of_item(&clean);
        truncated.attributes.pop();
        let cases = [
            (renamed(num, "Priority"), TextMiss::UnknownAttribute),
            (
                twisted(&|item: &mut Item| {
                    item.insert(num.into(), AttributeValue::S("1".into()));
                }),
                TextMiss::OddValue,
            ),
            (
                twisted(&|item: &mut Item| {
                    item.insert("PK".into(), AttributeValue::S("issue-!".into()));
                }),
                TextMiss::BadKey,
            ),
            (repeated, TextMiss::RepeatedAttribute),
            (
                renamed(IssueAttr::Name.name(), "GSI1SK"),
                TextMiss::MissingAttribute,
            ),
            (truncated, TextMiss::Unreadable),
        ];
        for (row, expected) in cases {
            assert_eq!(reason(&row), Some(expected), "{row:?}");
        }
    }
}
