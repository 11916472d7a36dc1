//! Sample data: the design's demo tenants, projects and issues, and a synthetic generator for
//! load and ordering tests.

use std::collections::BTreeMap;
use std::sync::Arc;

use bigdecimal::BigDecimal;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::Serialize;

use crate::ids::{FieldId, IssueId, ProjectId, TenantId};
use crate::items;
use crate::model::{
    CellText, CustomField, FieldType, FieldValue, Issue, IssueCounts, IssueState, Project, Tenant,
};
use crate::options::{self, OptionInput};
use crate::repo::RepoError;
use crate::store::{retry, DynStore, Item, Key, StoreError};
use compact_str::ToCompactString;

/// The grid page every benchmark measures (`benches/grid.rs`, `examples/grid_instructions.rs`,
/// `examples/loadgen.rs`; `benches/compare.sh` spells the same text for wrk and the Node
/// gateway): a project's custom fields and a page of its issues with every cell and a cursor
/// per row.
pub const GRID_PAGE_QUERY: &str = r#"query Grid($p: ID!, $first: Int, $order: IssueOrder) {
  project(id: $p) {
    customFields { id name type position }
    issues(first: $first, orderBy: $order) {
      edges { cursor node { id num name state fieldValues { field { id } value } } }
      pageInfo { hasNextPage endCursor }
    }
  }
}"#;

/// Why seeding failed.
#[derive(Debug, thiserror::Error)]
pub enum SeedError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Repo(#[from] RepoError),
    #[error("generated data is invalid: {0}")]
    Invalid(String),
}

fn id<T>(r: Result<T, crate::ids::IdError>) -> Result<T, SeedError> {
    r.map_err(|e| SeedError::Invalid(e.to_string()))
}

/// The demo data of the design this project comes from: two tenants, two projects, the four
/// custom fields of Forth Rail Bridge and five issues. (The design's definition row spells the
/// "Num Items" field `35e6` but every value row says `3fe6`; `3fe6` is used.)
pub fn demo_items() -> Result<Vec<Item>, SeedError> {
    let acme = Tenant {
        id: id(TenantId::parse("tenant-0807"))?,
        name: "ACME Engineering".into(),
    };
    let media = Tenant {
        id: id(TenantId::parse("tenant-3cc8"))?,
        name: "Big Media".into(),
    };
    let bridge = Project {
        id: id(ProjectId::parse("project-35e9"))?,
        tenant: acme.id.clone(),
        name: "Forth Rail Bridge".into(),
        next_issue_num: 4,
        version: 1,
        fields_version: 0,
        deleted: false,
        counts: None,
    };
    let news = Project {
        id: id(ProjectId::parse("project-7b7e"))?,
        tenant: media.id.clone(),
        name: "The Daily News".into(),
        next_issue_num: 3,
        version: 1,
        fields_version: 0,
        deleted: false,
        counts: None,
    };
    let field = |part: &str, name: &str, field_type, position| -> Result<CustomField, SeedError> {
        Ok(CustomField {
            id: id(FieldId::from_part(part))?,
            project: bridge.id.clone(),
            name: name.into(),
            field_type,
            position,
            version: 1,
            deleted: false,
            options: Vec::new(),
        })
    };
    let fields = vec![
        field("3fe6", "Num Items", FieldType::Int, 3)?,
        field("3812", "Start", FieldType::Date, 1)?,
        field("47e5", "Sign Off", FieldType::Text, 4)?,
        field("882a", "End", FieldType::Date, 2)?,
    ];
    let issue = |part: &str,
                 project: &Project,
                 num,
                 name: &str,
                 state,
                 values: &[(&str, &str)]|
     -> Result<Issue, SeedError> {
        Ok(Issue {
            id: id(IssueId::from_part(part))?,
            project: project.id.clone(),
            num,
            name: name.into(),
            state,
            values: values
                .iter()
                .map(|(f, v)| Ok((id(FieldId::from_part(f))?, CellText::from(*v))))
                .collect::<Result<_, SeedError>>()?,
            version: 1,
        })
    };
    use IssueState::{Closed, Open};
    let issues = [
        issue(
            "020e",
            &bridge,
            1,
            "Needs Painting",
            Open,
            &[("3812", "2023-05-01"), ("882a", "2023-06-01")],
        )?,
        issue("3544", &news, 1, "Launch new newspaper!", Closed, &[])?,
        issue(
            "67d1",
            &bridge,
            2,
            "Check for rust",
            Closed,
            &[("3812", "2023-05-02"), ("882a", "2023-06-02")],
        )?,
        issue(
            "83a4",
            &news,
            2,
            "Hire reporter for showbiz desk",
            Open,
            &[],
        )?,
        issue(
            "af34",
            &bridge,
            3,
            "Girder needs replacing",
            Open,
            &[("3fe6", "42"), ("47e5", "Approved")],
        )?,
    ];

    // The counters the writers would have kept, had they created these issues.
    let (mut bridge, mut news) = (bridge, news);
    bridge.counts = Some(IssueCounts::of(
        issues.iter().filter(|i| i.project == bridge.id),
    ));
    news.counts = Some(IssueCounts::of(
        issues.iter().filter(|i| i.project == news.id),
    ));
    let mut out = Vec::new();
    // Each tenant with its directory row, as `createTenant` writes them.
    out.extend(items::tenant_items(&acme));
    out.extend(items::tenant_items(&media));
    out.push(items::project_item(&bridge));
    out.push(items::project_item(&news));
    for f in &fields {
        out.extend(items::field_items(f));
    }
    for i in &issues {
        let project_fields: &[CustomField] = if i.project == bridge.id { &fields } else { &[] };
        out.extend(
            items::issue_items(i, project_fields).map_err(|e| SeedError::Invalid(e.to_string()))?,
        );
    }
    Ok(out)
}

/// Writes the demo data (idempotent: the same items are put again).
pub async fn demo(store: &DynStore) -> Result<(), SeedError> {
    store.bulk_put(demo_items()?).await?;
    Ok(())
}

/// Loads the demo data only when the store holds no demo tenant yet, so a restart keeps
/// whatever the user changed. Returns whether it loaded.
pub async fn demo_if_missing(store: &DynStore) -> Result<bool, SeedError> {
    let probe = [
        Key::new("tenant-0807", "tenant-0807"),
        Key::new("tenant-3cc8", "tenant-3cc8"),
    ];
    if !retry::batch_get_all(store.as_ref(), &probe)
        .await?
        .is_empty()
    {
        return Ok(false);
    }
    demo(store).await?;
    Ok(true)
}

/// Parameters of a synthetic data set.
#[derive(Clone, Copy, Debug)]
pub struct Synthetic {
    pub projects: u32,
    pub issues: u32,
    pub fields: u32,
    pub seed: u64,
}

/// What one synthetic project holds (printed as a JSON line by `gridgate seed --synthetic`).
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct SyntheticProject {
    pub tenant: String,
    pub project: String,
    pub issues: u32,
    pub fields: u32,
}

/// Words for names and text values: upper and lower case, accents, other scripts, and
/// characters that stress the sort-string encoding.
const WORDS: &[&str] = &[
    "alpha",
    "Bravo",
    "charlie",
    "Delta",
    "échelle",
    "Émile",
    "zebra",
    "Zürich",
    "über",
    "Ärger",
    "naïve",
    "日本語",
    "Ωmega",
    "apple",
    "Apple",
    "a#b",
    "tab\there",
    "Ölfass",
    "straße",
    "ß",
    "10",
    "9",
    "-",
    "~tilde",
];

/// Issues generated and handed to the bulk load at a time, bounding the items held in memory
/// (about 10 per issue). The embedded store keeps a load's rows as sorted runs and writes
/// them once at its end, so the batch size no longer shapes how it writes (see
/// `store::embedded::bulk`); DynamoDB writes each batch as it comes.
const ISSUES_PER_CHUNK: u32 = 10_000;
/// Share of cells left empty, in percent.
const EMPTY_PERCENT: u32 = 15;

/// Generates and writes a synthetic data set: one tenant, `projects` projects, each with
/// `fields` custom fields cycling through every type and `issues` issues. Deterministic for a
/// given seed (ids included), so a rerun rewrites the same items.
pub async fn synthetic(
    store: &DynStore,
    params: Synthetic,
    mut on_project: impl FnMut(&SyntheticProject),
) -> Result<Vec<SyntheticProject>, SeedError> {
    let mut rng = StdRng::seed_from_u64(params.seed);
    let tenant = Tenant {
        id: TenantId::seeded(&mut rng),
        name: format!("Synthetic {}", params.seed),
    };
    let mut load = Arc::clone(store).bulk_load().await?;
    load.put(items::tenant_items(&tenant).into()).await?;
    let mut created = Vec::new();
    for p in 0..params.projects {
        let project = Project {
            id: ProjectId::seeded(&mut rng),
            tenant: tenant.id.clone(),
            name: format!(
                "Synthetic project {} {}",
                p + 1,
                WORDS[rng.random_range(0..WORDS.len())]
            ),
            next_issue_num: params.issues + 1,
            version: 1,
            fields_version: 0,
            deleted: false,
            counts: None,
        };
        let types = [
            FieldType::Text,
            FieldType::Int,
            FieldType::Number,
            FieldType::Date,
            FieldType::Checkbox,
            FieldType::Select,
        ];
        let fields: Vec<CustomField> = (0..params.fields)
            .map(|i| {
                let field_type = types[i as usize % types.len()];
                let options = if field_type == FieldType::Select {
                    let inputs: Vec<OptionInput> = STATUSES
                        .iter()
                        .map(|label| OptionInput {
                            id: None,
                            label: (*label).to_string(),
                            color: None,
                        })
                        .collect();
                    options::edit(&[], &inputs, &mut rng).unwrap_or_default()
                } else {
                    Vec::new()
                };
                CustomField {
                    id: FieldId::seeded(&mut rng),
                    project: project.id.clone(),
                    name: format!("{} {}", field_type.as_str(), i + 1),
                    field_type,
                    position: i + 1,
                    version: 1,
                    deleted: false,
                    options,
                }
            })
            .collect();
        let mut head = vec![items::project_item(&project)];
        for f in &fields {
            head.extend(items::field_items(f));
        }
        load.put(head).await?;

        let mut num = 1;
        let mut counts = IssueCounts::default();
        let fields: Arc<[CustomField]> = fields.into();
        while num <= params.issues {
            let end = (num + ISSUES_PER_CHUNK).min(params.issues + 1);
            let mut chunk = Vec::with_capacity((end - num) as usize);
            for n in num..end {
                let issue = random_issue(&mut rng, &project, &fields, n);
                counts.add(&issue, 1);
                chunk.push(issue);
            }
            // The store makes the chunk's items where it wants them: the embedded store on
            // its blocking pool, straight into its rows.
            let fields = Arc::clone(&fields);
            load.put_written(Box::new(move |out| {
                for issue in &chunk {
                    items::write_issue(issue, &fields, out).map_err(|e| {
                        StoreError::Invalid(format!(
                            "the generated issue {} is invalid: {e}",
                            issue.id
                        ))
                    })?;
                }
                Ok(())
            }))
            .await?;
            num = end;
        }
        // The project's counters, once its issues are written (as the writers keep them).
        let project = Project {
            counts: Some(counts),
            ..project
        };
        load.put(vec![items::project_item(&project)]).await?;
        let summary = SyntheticProject {
            tenant: tenant.id.to_string(),
            project: project.id.to_string(),
            issues: params.issues,
            fields: params.fields,
        };
        created.push(summary);
    }
    // Nothing is known to be written until the load finishes.
    load.finish().await?;
    for summary in &created {
        on_project(summary);
    }
    Ok(created)
}

fn random_issue(rng: &mut StdRng, project: &Project, fields: &[CustomField], num: u32) -> Issue {
    let mut values = BTreeMap::new();
    for field in fields {
        if rng.random_range(0..100) < EMPTY_PERCENT {
            continue;
        }
        if let Some(value) = random_value(rng, field) {
            values.insert(field.id.clone(), value.to_compact_string());
        }
    }
    Issue {
        id: IssueId::seeded(rng),
        project: project.id.clone(),
        num,
        name: format!(
            "{} {}",
            WORDS[rng.random_range(0..WORDS.len())],
            WORDS[rng.random_range(0..WORDS.len())]
        ),
        state: if rng.random_bool(0.6) {
            IssueState::Open
        } else {
            IssueState::Closed
        },
        values,
        version: 1,
    }
}

/// The options of the synthetic SELECT fields.
const STATUSES: &[&str] = &[
    "Backlog",
    "Todo",
    "In progress",
    "In review",
    "Done",
    "Won't do",
];

/// A random value of `field` (`None` for a SELECT field without options).
fn random_value(rng: &mut StdRng, field: &CustomField) -> Option<FieldValue> {
    Some(match field.field_type {
        FieldType::Text => {
            let words = rng.random_range(1..=3);
            let text: Vec<&str> = (0..words)
                .map(|_| WORDS[rng.random_range(0..WORDS.len())])
                .collect();
            FieldValue::Text(text.join(" "))
        }
        FieldType::Int => FieldValue::Int(match rng.random_range(0..10) {
            0 => rng.random_range(-1_000_000_000_000i64..1_000_000_000_000),
            _ => rng.random_range(-1000..1000),
        }),
        FieldType::Number => {
            let mantissa: i64 = rng.random_range(-1_000_000..1_000_000);
            let scale: i64 = match rng.random_range(0..10) {
                0 => rng.random_range(-20..-5),
                1 => rng.random_range(8..20),
                _ => rng.random_range(0..4),
            };
            FieldValue::Number(BigDecimal::new(mantissa.into(), scale).normalized())
        }
        FieldType::Date => {
            let base = chrono::NaiveDate::from_ymd_opt(1990, 1, 1).unwrap_or_default();
            FieldValue::Date(base + chrono::Days::new(rng.random_range(0..15_000)))
        }
        FieldType::Checkbox => FieldValue::Checkbox(rng.random_bool(0.5)),
        FieldType::Select => {
            let n = field.options.len();
            if n == 0 {
                return None;
            }
            FieldValue::Select(field.options[rng.random_range(0..n)].id.clone())
        }
    })
}
