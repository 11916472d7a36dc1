//! A saved view's items: its definition row in the project's partition (with its indexes'
//! keys and filters as JSON), its lookup row, and an issue's row in one of its indexes.

use serde::{Deserialize, Serialize};

use super::{check_type, from_owned_item, to_item, types, ItemError};
use crate::ids::{FieldId, IssueId, ProjectId, ViewId};
use crate::keys;
use crate::model::{BuildProgress, View, ViewColumn, ViewIndex, ViewKey};
use crate::store::Item;

entity! {
    struct ViewItem, enum ViewAttr {
        pk: String = Pk "PK",
        sk: String = Sk "SK",
        kind: String = Type "Type",
        name: String = Name "Name",
        position: u32 = Position "Position",
        version: u64 = Version "Version",
        /// The custom field ids the view shows, as a JSON array.
        columns: String = Columns "Columns",
        /// The index pages read, as JSON (see [`IndexJson`]); absent while the first builds.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        serving: Option<String> = Serving "Serving",
        /// An index being built beside it, as JSON.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        building: Option<String> = Building "Building",
        /// The num the build of `Building` has passed (it resumes after it).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        built_through: Option<u32> = BuiltThrough "BuiltThrough",
        /// How many issues the build of `Building` has read.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        scanned: Option<u64> = Scanned "Scanned",
        /// Generations whose rows a sweep has yet to remove, as a JSON array.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        retired: Option<String> = Retired "Retired",
        #[serde(default, skip_serializing_if = "Option::is_none")]
        deleted: Option<u64> = Deleted "Deleted",
    }
}

entity! {
    struct ViewLookupItem, enum ViewLookupAttr {
        pk: String = Pk "PK",
        sk: String = Sk "SK",
        kind: String = Type "Type",
        project: String = Project "Project",
    }
}

entity! {
    /// An issue's row in a view's index.
    struct ViewRowItem, enum ViewRowAttr {
        pk: String = Pk "PK",
        sk: String = Sk "SK",
        gsi1sk: String = Gsi1sk "GSI1SK",
        kind: String = Type "Type",
    }
}

/// A view index as its JSON: `{generation, keys: [{column, customFieldId?, descending,
/// emptyFirst}], filter?}`, the filter being `filter::Spec`'s JSON text.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct IndexJson {
    generation: u32,
    keys: Vec<KeyJson>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    filter: Option<String>,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct KeyJson {
    /// `NUM`, `NAME`, `STATE` or `CUSTOM_FIELD`.
    column: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    custom_field_id: Option<String>,
    descending: bool,
    empty_first: bool,
}

/// A view index's JSON, as the view row's `Serving` and `Building` hold it (and as the build
/// conditions its writes on).
pub fn index_json(index: &ViewIndex) -> String {
    let keys = index
        .keys
        .iter()
        .map(|k| {
            let (column, field) = match &k.column {
                ViewColumn::Num => ("NUM", None),
                ViewColumn::Name => ("NAME", None),
                ViewColumn::State => ("STATE", None),
                ViewColumn::Custom(f) => ("CUSTOM_FIELD", Some(f.to_string())),
            };
            KeyJson {
                column: column.into(),
                custom_field_id: field,
                descending: k.descending,
                empty_first: k.empty_first,
            }
        })
        .collect();
    let json = IndexJson {
        generation: index.generation,
        keys,
        filter: index.filter.clone(),
    };
    // Plain strings, numbers and booleans: serializing cannot fail.
    serde_json::to_string(&json).unwrap_or_default()
}

fn index_from_json(text: &str) -> Result<ViewIndex, String> {
    let json: IndexJson =
        serde_json::from_str(text).map_err(|e| format!("unreadable index: {e}"))?;
    let keys = json
        .keys
        .into_iter()
        .map(|k| {
            let column = match (k.column.as_str(), k.custom_field_id) {
                ("NUM", None) => ViewColumn::Num,
                ("NAME", None) => ViewColumn::Name,
                ("STATE", None) => ViewColumn::State,
                ("CUSTOM_FIELD", Some(id)) => {
                    ViewColumn::Custom(FieldId::parse(&id).map_err(|e| e.to_string())?)
                }
                (other, _) => return Err(format!("unknown key column {other}")),
            };
            Ok(ViewKey {
                column,
                descending: k.descending,
                empty_first: k.empty_first,
            })
        })
        .collect::<Result<Vec<_>, String>>()?;
    Ok(ViewIndex {
        generation: json.generation,
        keys,
        filter: json.filter,
    })
}

/// A view's definition item and its lookup item.
pub fn view_items(view: &View) -> [Item; 2] {
    let key = keys::view(&view.project, &view.id);
    let lookup = keys::view_lookup(&view.id);
    let columns: Vec<&str> = view.columns.iter().map(FieldId::as_str).collect();
    [
        to_item(&ViewItem {
            pk: key.pk,
            sk: key.sk,
            kind: types::VIEW.into(),
            name: view.name.clone(),
            position: view.position,
            version: view.version,
            columns: serde_json::to_string(&columns).unwrap_or_default(),
            serving: view.serving.as_ref().map(index_json),
            building: view.building.as_ref().map(index_json),
            built_through: view.built.map(|b| b.through),
            scanned: view.built.map(|b| b.scanned),
            retired: (!view.retired.is_empty()).then(|| retired_json(&view.retired)),
            deleted: view.deleted.then_some(1),
        }),
        to_item(&ViewLookupItem {
            pk: lookup.pk,
            sk: lookup.sk,
            kind: types::VIEW_LOOKUP.into(),
            project: view.project.to_string(),
        }),
    ]
}

/// Reads a view's definition item.
pub fn decode_view_owned(item: Item) -> Result<View, ItemError> {
    const E: &str = "view";
    check_type(&item, types::VIEW, E)?;
    let raw: ViewItem = from_owned_item(item, E)?;
    let bad = |reason: String| ItemError::keyed(&raw.pk, &raw.sk, E, reason);
    let columns: Vec<String> =
        serde_json::from_str(&raw.columns).map_err(|e| bad(format!("unreadable Columns: {e}")))?;
    let columns = columns
        .iter()
        .map(|c| FieldId::parse(c).map_err(|e| bad(e.to_string())))
        .collect::<Result<Vec<_>, _>>()?;
    let index = |text: &Option<String>| text.as_deref().map(index_from_json).transpose();
    Ok(View {
        id: ViewId::parse(&raw.sk).map_err(|e| bad(e.to_string()))?,
        project: ProjectId::parse(&raw.pk).map_err(|e| bad(e.to_string()))?,
        columns,
        position: raw.position,
        version: raw.version,
        serving: index(&raw.serving).map_err(bad)?,
        building: index(&raw.building).map_err(bad)?,
        built: match (raw.built_through, raw.scanned) {
            (None, None) => None,
            (through, scanned) => Some(BuildProgress {
                through: through.unwrap_or(0),
                scanned: scanned.unwrap_or(0),
            }),
        },
        retired: match &raw.retired {
            None => Vec::new(),
            Some(text) => {
                serde_json::from_str(text).map_err(|e| bad(format!("unreadable Retired: {e}")))?
            }
        },
        deleted: raw.deleted.is_some(),
        name: raw.name,
    })
}

/// Reads a view's lookup item: the view's project.
pub fn decode_view_lookup(item: &Item) -> Result<ProjectId, ItemError> {
    const E: &str = "view lookup";
    check_type(item, types::VIEW_LOOKUP, E)?;
    let raw: ViewLookupItem = super::from_item(item, E)?;
    ProjectId::parse(&raw.project).map_err(|e| ItemError::new(item, E, e.to_string()))
}

/// The view row's `Retired` list.
pub fn retired_json(generations: &[u32]) -> String {
    serde_json::to_string(generations).unwrap_or_default()
}

/// An issue's row in generation `generation` of `view`'s index, under sort string `sort`.
pub fn view_row_item(issue: &IssueId, view: &ViewId, generation: u32, sort: String) -> Item {
    let key = keys::view_row(issue, view, generation);
    to_item(&ViewRowItem {
        pk: key.pk,
        sk: key.sk,
        gsi1sk: sort,
        kind: types::VIEW_ROW.into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn views_round_trip_with_their_indexes() {
        let field = FieldId::parse("xattrib-3812").unwrap();
        let view = View {
            id: ViewId::parse("xview-01").unwrap(),
            project: ProjectId::parse("project-35e9").unwrap(),
            name: "Open by start".into(),
            columns: vec![field.clone()],
            position: 2,
            version: 3,
            serving: Some(ViewIndex {
                generation: 1,
                keys: vec![
                    ViewKey {
                        column: ViewColumn::Custom(field),
                        descending: true,
                        empty_first: true,
                    },
                    ViewKey {
                        column: ViewColumn::Name,
                        descending: false,
                        empty_first: false,
                    },
                ],
                filter: Some(r#"{"column":{"field":"STATE"},"eq":"OPEN"}"#.into()),
            }),
            building: Some(ViewIndex {
                generation: 2,
                keys: vec![ViewKey {
                    column: ViewColumn::Num,
                    descending: false,
                    empty_first: false,
                }],
                filter: None,
            }),
            built: Some(BuildProgress {
                through: 7,
                scanned: 5,
            }),
            retired: vec![1],
            deleted: false,
        };
        let [definition, lookup] = view_items(&view);
        assert_eq!(decode_view_owned(definition.clone()).unwrap(), view);
        let names = |item: &Item| {
            let mut names: Vec<String> = item.keys().cloned().collect();
            names.sort();
            names
        };
        let mut declared: Vec<String> = ViewAttr::ALL
            .iter()
            .filter(|a| **a != ViewAttr::Deleted)
            .map(|a| a.name().to_string())
            .collect();
        declared.sort();
        assert_eq!(names(&definition), declared);
        let mut lookup_declared: Vec<String> = ViewLookupAttr::ALL
            .iter()
            .map(|a| a.name().to_string())
            .collect();
        lookup_declared.sort();
        assert_eq!(names(&lookup), lookup_declared);
    }
}
