//! Grid rows resolved from a plan of their selection instead of field by field: a
//! connection's `edges` and `nodes` lists ([`Edges`], [`Rows`]), an issue listed by one
//! ([`Row`]), its cells ([`Cells`]) and a project's field list ([`Fields`]).
//!
//! A grid page is mostly rows and cells: a 50-row page with 8 fields has about 900 objects.
//! async-graphql executes every field of every object on its own (a boxed future, a context,
//! a hashed insert, a match on the field's name), which cost more than the values themselves.
//! Here a selection set is compiled once per row into a plan (response key and what to put
//! there), and the row is written straight as JSON text: one buffer per row instead of a
//! map, a key and a string per field, which the response encoder would walk again.
//!
//! **Encoded rows.** A planned row or cell list is a `Value::Binary` holding its JSON (see
//! [`encoded`]); nothing else in the schema produces binary values. `http::wire` writes
//! them into the body as they are, and `Gateway::execute` decodes them for callers that
//! read the response's values (the library API). The response passes that run between
//! (nulling failed fields, field order) leave them alone: a planned row has no errors and
//! is in selection order already.
//!
//! The plan covers what grids ask for: plain fields, `__typename`, and fragments on the
//! object's own type (`@skip` and `@include` are already gone: async-graphql applies and
//! removes them before execution). Anything else (another directive, a fragment on an
//! interface, an argument, a field that loads something other than the row's project, two
//! selections under one response key) makes the compile return the reason, and the row goes to
//! the general executor, with the same result. The values come from the same data and conversions as the derived
//! resolvers in `types.rs`, so both paths answer alike, byte for byte (`tests/api/rows.rs`).
//!
//! **Layering.** This module names none of the schema's object types: the layer above
//! (`types`) gives them as the parameters of [`Objects`], with the type names a plan checks
//! fragments against and the objects the general executor resolves. So `types` uses `rows`
//! and never the other way round (`tests/tidy.rs`).

use std::borrow::Cow;
use std::collections::HashMap;
use std::marker::PhantomData;
use std::sync::Arc;

use async_graphql::parser::types::{Field, FragmentDefinition, Selection, SelectionSet};
use async_graphql::registry::Registry;
use async_graphql::{
    ContextSelectionSet, EnumType, Name, OutputType, Positioned, ServerResult, Value,
};

use super::request::{referenced_project, repo};
use super::values::{clamp_i32, clamp_version, CustomFieldStatus, CustomFieldType, IssueState};
use crate::model::{self, ProjectData};
use crate::telemetry::{count_fallback, Fallback, PlanMiss};

/// Counts a list or row that goes to the general executor
/// (`gridgate_fast_path_fallbacks_total{path="graphql_rows"}`) in the metrics of the request's
/// application, which the request's repo carries. Only the fall-back branches call this.
fn fell_back(ctx: &ContextSelectionSet<'_>, miss: PlanMiss) {
    let fallbacks = repo(ctx).ok().and_then(|repo| repo.fallbacks());
    count_fallback(fallbacks, Fallback::Plan(miss));
}

/// The schema's object types a planned list stands for, and falls back to when its selection
/// needs the general executor; given by the layer above, which defines them (see the module
/// docs).
pub trait Objects: Sized + Send + Sync + 'static {
    /// `CustomField`.
    type Field: OutputType;
    /// `CustomFieldValue`, a cell.
    type Cell: OutputType;
    /// `SelectOption`.
    type SelectOption: OutputType;
    /// `Issue`.
    type Issue: OutputType + Clone;
    /// `IssueEdge`.
    type Edge: OutputType;

    /// The `index`th field of a loaded project, as an object.
    fn field(project: &Arc<ProjectData>, index: usize) -> Self::Field;
    /// The cell of the `index`th field of a loaded project, holding `raw`, as an object.
    fn cell(project: &Arc<ProjectData>, index: usize, raw: &str) -> Self::Cell;
    /// The issue an `Issue` object shows.
    fn issue(issue: &Self::Issue) -> &model::Issue;
    /// An edge's cursor and the issue of its node.
    fn edge(edge: &Self::Edge) -> (&str, &model::Issue);
}

/// The type-information functions of an `OutputType` that is, to GraphQL, the list `$list`.
macro_rules! list_type_info {
    ($list:ty) => {
        fn type_name() -> Cow<'static, str> {
            <$list as OutputType>::type_name()
        }

        fn qualified_type_name() -> String {
            <$list as OutputType>::qualified_type_name()
        }

        fn create_type_info(registry: &mut Registry) -> String {
            <$list as OutputType>::create_type_info(registry)
        }
    };
}

/// At most this many fields per selection set take the plan; more (never seen in a grid)
/// go to the general executor, which also bounds the duplicate-key check below.
const MAX_PLANNED_FIELDS: usize = 32;

/// Fragments nest at most this deep in a plan (validation already rejects cycles).
const MAX_FRAGMENT_DEPTH: usize = 4;

type Fragments = HashMap<Name, Positioned<FragmentDefinition>>;

/// A compiled selection set: each response key, in selection order, and what it asks for.
type Plan<P> = Vec<(Key, P)>;

/// A response key as the row's JSON spells it, `"key":`, encoded once when the plan is
/// compiled rather than escaped again for every row.
struct Key(Box<[u8]>);

impl Key {
    fn of(name: &Name) -> Self {
        let mut json = Json(Vec::with_capacity(name.len() + 3));
        json.string(name.as_str());
        json.0.push(b':');
        Key(json.0.into_boxed_slice())
    }
}

/// What compiling a selection set gives: its plan, or why it needs the general executor
/// (counted in `gridgate_fast_path_fallbacks_total`).
type Compiled<P> = Result<Plan<P>, PlanMiss>;

/// Compiles `set`, selected on objects of type `type_name`, with `part` deciding each field
/// (`Err` for a field the plan leaves to the executor); `Err` with the reason when the set
/// needs the general executor (see the module docs).
fn compile<'q, P>(
    fragments: &'q Fragments,
    set: &'q SelectionSet,
    type_name: &str,
    mut part: impl FnMut(&'q Field) -> Result<P, PlanMiss>,
) -> Compiled<P> {
    let mut fields = Vec::new();
    flatten(fragments, set, type_name, &mut fields, 0)?;
    if fields.len() > MAX_PLANNED_FIELDS {
        return Err(PlanMiss::Size);
    }
    for (i, field) in fields.iter().enumerate() {
        let key = &field.response_key().node;
        if fields[..i]
            .iter()
            .any(|seen| &seen.response_key().node == key)
        {
            // GraphQL merges selections with one response key; the executor does that.
            return Err(PlanMiss::MergedKey);
        }
    }
    fields
        .into_iter()
        .map(|field| {
            if !field.arguments.is_empty() {
                return Err(PlanMiss::Argument);
            }
            Ok((Key::of(&field.response_key().node), part(field)?))
        })
        .collect()
}

/// The fields of `set`, through fragments on `type_name` itself, in selection order.
fn flatten<'q>(
    fragments: &'q Fragments,
    set: &'q SelectionSet,
    type_name: &str,
    out: &mut Vec<&'q Field>,
    depth: usize,
) -> Result<(), PlanMiss> {
    if depth > MAX_FRAGMENT_DEPTH {
        return Err(PlanMiss::Fragment);
    }
    for selection in &set.items {
        match &selection.node {
            Selection::Field(field) => {
                if !field.node.directives.is_empty() {
                    return Err(PlanMiss::Directive);
                }
                out.push(&field.node);
            }
            Selection::InlineFragment(fragment) => {
                let fragment = &fragment.node;
                let on_type = fragment
                    .type_condition
                    .as_ref()
                    .is_none_or(|condition| condition.node.on.node == type_name);
                if !fragment.directives.is_empty() {
                    return Err(PlanMiss::Directive);
                }
                if !on_type {
                    return Err(PlanMiss::Fragment);
                }
                flatten(
                    fragments,
                    &fragment.selection_set.node,
                    type_name,
                    out,
                    depth + 1,
                )?;
            }
            Selection::FragmentSpread(spread) => {
                let definition = &fragments
                    .get(&spread.node.fragment_name.node)
                    .ok_or(PlanMiss::Fragment)?
                    .node;
                if !spread.node.directives.is_empty() || !definition.directives.is_empty() {
                    return Err(PlanMiss::Directive);
                }
                if definition.type_condition.node.on.node != type_name {
                    return Err(PlanMiss::Fragment);
                }
                flatten(
                    fragments,
                    &definition.selection_set.node,
                    type_name,
                    out,
                    depth + 1,
                )?;
            }
        }
    }
    Ok(())
}

/// The JSON text of a planned row or cell list, as it travels in a response (see the module
/// docs).
fn encoded(json: Json) -> Value {
    Value::Binary(json.0.into())
}

/// Every planned value that is a JSON object, decoded: for callers of the library API, who
/// read the response's values rather than its encoding.
pub(crate) fn decode_encoded(value: &mut Value) {
    match value {
        Value::Binary(json) => {
            *value = serde_json::from_slice(json).unwrap_or_else(|e| {
                tracing::error!(error = %e, "a planned row is not JSON");
                Value::Null
            });
        }
        Value::List(items) => items.iter_mut().for_each(decode_encoded),
        Value::Object(map) => map.values_mut().for_each(decode_encoded),
        _ => {}
    }
}

/// A JSON text being written. Writing into a `Vec` cannot fail, so the `io::Result`s of
/// the writes below are dropped.
struct Json(Vec<u8>);

impl Json {
    /// Opens an object (`{`) or list (`[`).
    fn open(&mut self, bracket: u8) {
        self.0.push(bracket);
    }

    /// Closes an object (`}`) or list (`]`).
    fn close(&mut self, bracket: u8) {
        self.0.push(bracket);
    }

    /// Writes the `index`th key of an object (a comma before all but the first).
    fn key(&mut self, index: usize, key: &Key) {
        self.comma(index);
        self.0.extend_from_slice(&key.0);
    }

    /// A comma before every element but the first.
    fn comma(&mut self, index: usize) {
        if index > 0 {
            self.0.push(b',');
        }
    }

    /// A JSON string. Most strings of a grid (ids, names, numbers, dates) need no escape:
    /// they are copied between quotes after one scan; the rest take serde_json's escaping,
    /// which escapes exactly the bytes the scan looks for.
    fn string(&mut self, text: &str) {
        if crate::jsonscan::special_at(text.as_bytes()).is_some() {
            let _ = serde_json::to_writer(&mut self.0, text);
            return;
        }
        self.0.reserve(text.len() + 2);
        self.0.push(b'"');
        self.0.extend_from_slice(text.as_bytes());
        self.0.push(b'"');
    }

    fn int(&mut self, n: i32) {
        // serde_json writes integers with `itoa`, without the formatting machinery.
        let _ = serde_json::to_writer(&mut self.0, &n);
    }

    /// An enum value, which GraphQL's JSON spells as its name.
    fn enumeration<T: EnumType>(&mut self, value: T) {
        let name = T::items()
            .iter()
            .find(|item| item.value == value)
            .map_or("", |item| item.name);
        self.string(name);
    }
}

/// What a selection of a `SelectOption` asks for.
enum OptionPart {
    Typename,
    Id,
    Label,
    Color,
    Position,
}

fn option_plan<O: Objects>(fragments: &Fragments, set: &SelectionSet) -> Compiled<OptionPart> {
    compile(
        fragments,
        set,
        &O::SelectOption::type_name(),
        |field| match field.name.node.as_str() {
            "__typename" => Ok(OptionPart::Typename),
            "id" => Ok(OptionPart::Id),
            "label" => Ok(OptionPart::Label),
            "color" => Ok(OptionPart::Color),
            "position" => Ok(OptionPart::Position),
            _ => Err(PlanMiss::Field),
        },
    )
}

/// The `position`th live option of its field, as `types::SelectOption` shows it.
fn write_option<O: Objects>(
    out: &mut Json,
    plan: &Plan<OptionPart>,
    option: &model::SelectOption,
    position: usize,
) {
    out.open(b'{');
    for (index, (key, part)) in plan.iter().enumerate() {
        out.key(index, key);
        match part {
            OptionPart::Typename => out.string(&O::SelectOption::type_name()),
            OptionPart::Id => out.string(&option.id),
            OptionPart::Label => out.string(&option.label),
            OptionPart::Color => match &option.color {
                Some(color) => out.string(color),
                None => out.0.extend_from_slice(b"null"),
            },
            OptionPart::Position => out.int(i32::try_from(position).unwrap_or(i32::MAX)),
        }
    }
    out.close(b'}');
}

/// What a selection of a `CustomField` asks for (its `project` is left to the executor).
enum FieldPart {
    Typename,
    Id,
    Name,
    Type,
    Position,
    Version,
    Status,
    Options(Plan<OptionPart>),
}

fn field_plan<O: Objects>(fragments: &Fragments, set: &SelectionSet) -> Compiled<FieldPart> {
    compile(
        fragments,
        set,
        &O::Field::type_name(),
        |field| match field.name.node.as_str() {
            "__typename" => Ok(FieldPart::Typename),
            "id" => Ok(FieldPart::Id),
            "name" => Ok(FieldPart::Name),
            "type" => Ok(FieldPart::Type),
            "position" => Ok(FieldPart::Position),
            "version" => Ok(FieldPart::Version),
            "status" => Ok(FieldPart::Status),
            "options" => {
                option_plan::<O>(fragments, &field.selection_set.node).map(FieldPart::Options)
            }
            _ => Err(PlanMiss::Field),
        },
    )
}

fn write_field<O: Objects>(out: &mut Json, plan: &Plan<FieldPart>, field: &model::CustomField) {
    out.open(b'{');
    for (index, (key, part)) in plan.iter().enumerate() {
        out.key(index, key);
        match part {
            FieldPart::Typename => out.string(&O::Field::type_name()),
            FieldPart::Id => out.string(field.id.as_str()),
            FieldPart::Name => out.string(&field.name),
            FieldPart::Type => out.enumeration(CustomFieldType::from(field.field_type)),
            FieldPart::Position => out.int(clamp_i32(field.position)),
            FieldPart::Version => out.int(clamp_version(field.version)),
            FieldPart::Status => out.enumeration(CustomFieldStatus::of(field)),
            FieldPart::Options(plan) => {
                out.open(b'[');
                for (position, option) in field.live_options().enumerate() {
                    out.comma(position);
                    write_option::<O>(out, plan, option, position);
                }
                out.close(b']');
            }
        }
    }
    out.close(b'}');
}

/// `Project.customFields`: the type is `[CustomField!]!`, the resolution by plan. A grid
/// asks for every field's id, name, type and position: objects the executor resolved one
/// field at a time.
pub struct Fields<O>(Arc<ProjectData>, PhantomData<fn() -> O>);

impl<O> Fields<O> {
    pub(super) fn new(project: Arc<ProjectData>) -> Self {
        Fields(project, PhantomData)
    }
}

impl<O: Objects> OutputType for Fields<O> {
    list_type_info!(Vec<O::Field>);

    async fn resolve(
        &self,
        ctx: &ContextSelectionSet<'_>,
        field: &Positioned<Field>,
    ) -> ServerResult<Value> {
        let fields = &self.0.fields;
        let plan = match field_plan::<O>(&ctx.query_env.fragments, &ctx.item.node) {
            Ok(plan) => plan,
            Err(miss) => {
                fell_back(ctx, miss);
                let objects: Vec<O::Field> = (0..fields.len())
                    .map(|index| O::field(&self.0, index))
                    .collect();
                return OutputType::resolve(&objects, ctx, field).await;
            }
        };
        let mut out = Json(Vec::with_capacity(96 * fields.len() + 2));
        out.open(b'[');
        for (index, field) in fields.iter().enumerate() {
            out.comma(index);
            write_field::<O>(&mut out, &plan, field);
        }
        out.close(b']');
        Ok(encoded(out))
    }
}

/// What a selection of a `CustomFieldValue` (a cell) asks for.
enum CellPart {
    Typename,
    Value,
    FieldId,
    Field(Plan<FieldPart>),
    Option(Plan<OptionPart>),
}

fn cell_plan<O: Objects>(fragments: &Fragments, set: &SelectionSet) -> Compiled<CellPart> {
    compile(fragments, set, &O::Cell::type_name(), |field| {
        match field.name.node.as_str() {
            "__typename" => Ok(CellPart::Typename),
            "value" => Ok(CellPart::Value),
            "fieldId" => Ok(CellPart::FieldId),
            "field" => field_plan::<O>(fragments, &field.selection_set.node).map(CellPart::Field),
            "option" => {
                option_plan::<O>(fragments, &field.selection_set.node).map(CellPart::Option)
            }
            _ => Err(PlanMiss::Field),
        }
    })
}

fn write_cells<O: Objects>(
    out: &mut Json,
    plan: &Plan<CellPart>,
    issue: &model::Issue,
    project: &ProjectData,
    fields: &mut FieldTexts,
) {
    out.open(b'[');
    for (cell, (at, field, raw)) in cells_of(issue, project).enumerate() {
        out.comma(cell);
        out.open(b'{');
        for (index, (key, part)) in plan.iter().enumerate() {
            out.key(index, key);
            match part {
                CellPart::Typename => out.string(&O::Cell::type_name()),
                CellPart::Value => out.string(&model::canonical_text(field.field_type, raw)),
                CellPart::FieldId => out.string(field.id.as_str()),
                CellPart::Field(plan) => {
                    let slot = index * project.fields.len() + at;
                    fields.write(out, slot, |out| write_field::<O>(out, plan, field));
                }
                CellPart::Option(plan) => {
                    // As the general path finds it: by the cell's canonical text.
                    let value = model::canonical_text(field.field_type, raw);
                    match field.live_option(&value) {
                        Some((position, option)) => write_option::<O>(out, plan, option, position),
                        None => out.0.extend_from_slice(b"null"),
                    }
                }
            }
        }
        out.close(b'}');
    }
    out.close(b']');
}

/// The JSON of each field a list's cells name, written once per list: every row of a page
/// names the same few fields, and a 50-row page with 8 fields wrote each of them 50 times.
/// A slot is a field's place in its project times the cell plan's part that selects it, so
/// two selections of `field` keep their own texts; a list's rows share one project (see
/// [`ListState`]), whose field count bounds the slots.
#[derive(Default)]
struct FieldTexts(Vec<Option<Box<[u8]>>>);

impl FieldTexts {
    fn write(&mut self, out: &mut Json, slot: usize, write: impl FnOnce(&mut Json)) {
        if let Some(Some(text)) = self.0.get(slot) {
            out.0.extend_from_slice(text);
            return;
        }
        let start = out.0.len();
        write(out);
        if self.0.len() <= slot {
            self.0.resize_with(slot + 1, || None);
        }
        self.0[slot] = Some(out.0[start..].into());
    }
}

/// What the rows of one list share as they are written: the project their cells come from
/// (every row of a page has the same one) and its fields' texts.
#[derive(Default)]
struct ListState {
    project: Option<Arc<ProjectData>>,
    fields: FieldTexts,
}

/// A first guess at a row's or cell list's size in bytes, so that most never grow.
fn capacity(issue: &model::Issue) -> usize {
    128 + 96 * issue.values.len()
}

/// An issue's cells: the project's live fields in position order, with the issue's raw value
/// of each (fields without one are left out).
fn cells_of<'a>(
    issue: &'a model::Issue,
    project: &'a ProjectData,
) -> impl Iterator<Item = (usize, &'a model::CustomField, &'a str)> + 'a {
    project
        .fields
        .iter()
        .enumerate()
        .filter_map(|(index, field)| Some((index, field, issue.values.get(&field.id)?.as_str())))
}

/// `Issue.fieldValues`: the type is `[CustomFieldValue!]!`, the resolution by plan.
pub struct Cells<O> {
    issue: Arc<model::Issue>,
    project: Arc<ProjectData>,
    objects: PhantomData<fn() -> O>,
}

impl<O: Objects> Cells<O> {
    pub(super) fn new(issue: Arc<model::Issue>, project: Arc<ProjectData>) -> Self {
        Cells {
            issue,
            project,
            objects: PhantomData,
        }
    }

    /// The cells as objects, for the general executor.
    fn objects(&self) -> Vec<O::Cell> {
        cells_of(&self.issue, &self.project)
            .map(|(index, _, raw)| O::cell(&self.project, index, raw))
            .collect()
    }
}

impl<O: Objects> OutputType for Cells<O> {
    list_type_info!(Vec<O::Cell>);

    async fn resolve(
        &self,
        ctx: &ContextSelectionSet<'_>,
        field: &Positioned<Field>,
    ) -> ServerResult<Value> {
        match cell_plan::<O>(&ctx.query_env.fragments, &ctx.item.node) {
            Ok(plan) => {
                let mut out = Json(Vec::with_capacity(capacity(&self.issue)));
                let fields = &mut FieldTexts::default();
                write_cells::<O>(&mut out, &plan, &self.issue, &self.project, fields);
                Ok(encoded(out))
            }
            Err(miss) => {
                fell_back(ctx, miss);
                OutputType::resolve(&self.objects(), ctx, field).await
            }
        }
    }
}

/// What a selection of an `Issue` asks for (`project` and `fieldValue(fieldId:)` are left to
/// the executor).
enum RowPart {
    Typename,
    Id,
    Num,
    Name,
    State,
    Version,
    Cells(Plan<CellPart>),
}

fn row_plan<O: Objects>(fragments: &Fragments, set: &SelectionSet) -> Compiled<RowPart> {
    compile(
        fragments,
        set,
        &O::Issue::type_name(),
        |field| match field.name.node.as_str() {
            "__typename" => Ok(RowPart::Typename),
            "id" => Ok(RowPart::Id),
            "num" => Ok(RowPart::Num),
            "name" => Ok(RowPart::Name),
            "state" => Ok(RowPart::State),
            "version" => Ok(RowPart::Version),
            "fieldValues" => {
                cell_plan::<O>(fragments, &field.selection_set.node).map(RowPart::Cells)
            }
            _ => Err(PlanMiss::Field),
        },
    )
}

/// An issue listed by a connection (an edge's `node`, or among `nodes`): of type `Issue`,
/// resolved by plan.
pub struct Row<O: Objects>(pub O::Issue);

impl<O: Objects> Clone for Row<O> {
    fn clone(&self) -> Self {
        Row(self.0.clone())
    }
}

impl<O: Objects> OutputType for Row<O> {
    fn type_name() -> Cow<'static, str> {
        O::Issue::type_name()
    }

    fn create_type_info(registry: &mut Registry) -> String {
        O::Issue::create_type_info(registry)
    }

    async fn resolve(
        &self,
        ctx: &ContextSelectionSet<'_>,
        field: &Positioned<Field>,
    ) -> ServerResult<Value> {
        let plan = match row_plan::<O>(&ctx.query_env.fragments, &ctx.item.node) {
            Ok(plan) => plan,
            Err(miss) => {
                fell_back(ctx, miss);
                return OutputType::resolve(&self.0, ctx, field).await;
            }
        };
        let issue = O::issue(&self.0);
        let mut out = Json(Vec::with_capacity(capacity(issue)));
        match write_row::<O>(ctx, &mut out, &plan, issue, &mut ListState::default()).await {
            Some(()) => Ok(encoded(out)),
            // The executor reports the failure where it belongs (at `fieldValues`).
            None => {
                fell_back(ctx, PlanMiss::Project);
                OutputType::resolve(&self.0, ctx, field).await
            }
        }
    }
}

/// Writes one issue by its plan; `None` when its project could not be loaded for its cells.
/// `list` carries the project the list's previous row loaded, and its fields' texts.
async fn write_row<O: Objects>(
    ctx: &ContextSelectionSet<'_>,
    out: &mut Json,
    plan: &Plan<RowPart>,
    issue: &model::Issue,
    list: &mut ListState,
) -> Option<()> {
    // The executor loads the project once per row (a cached DataLoader lookup, which builds
    // a key set and a result map each time); every row of a page has the same project, so a
    // list asks for it once and the rows after the first reuse it.
    let needs_project = plan
        .iter()
        .any(|(_, part)| matches!(part, RowPart::Cells(_)));
    if needs_project && !matches!(&list.project, Some(loaded) if loaded.project.id == issue.project)
    {
        let project = referenced_project(ctx, &issue.project).await.ok()?;
        *list = ListState {
            project: Some(project),
            fields: FieldTexts::default(),
        };
    }
    let project = list.project.as_deref().filter(|_| needs_project);
    out.open(b'{');
    for (index, (key, part)) in plan.iter().enumerate() {
        out.key(index, key);
        match part {
            RowPart::Typename => out.string(&O::Issue::type_name()),
            RowPart::Id => out.string(issue.id.as_str()),
            RowPart::Num => out.int(clamp_i32(issue.num)),
            RowPart::Name => out.string(&issue.name),
            RowPart::State => out.enumeration(IssueState::from(issue.state)),
            RowPart::Version => out.int(clamp_version(issue.version)),
            RowPart::Cells(plan) => match project {
                Some(project) => write_cells::<O>(out, plan, issue, project, &mut list.fields),
                None => out.0.extend_from_slice(b"null"),
            },
        }
    }
    out.close(b'}');
    Some(())
}

/// `IssueConnection.nodes`: the type is `[Issue!]!`, the resolution by plan, the whole list
/// in one text.
pub struct Rows<O: Objects>(Vec<Row<O>>);

impl<O: Objects> FromIterator<Row<O>> for Rows<O> {
    fn from_iter<I: IntoIterator<Item = Row<O>>>(rows: I) -> Self {
        Rows(rows.into_iter().collect())
    }
}

impl<O: Objects> OutputType for Rows<O> {
    list_type_info!(Vec<Row<O>>);

    async fn resolve(
        &self,
        ctx: &ContextSelectionSet<'_>,
        field: &Positioned<Field>,
    ) -> ServerResult<Value> {
        // The list is not counted when it falls back: the executor resolves each of its rows
        // with `Row`, which tries the plan again and counts every row that misses it.
        if let Ok(plan) = row_plan::<O>(&ctx.query_env.fragments, &ctx.item.node) {
            let issues = self.0.iter().map(|row| O::issue(&row.0));
            let mut out = Json(Vec::with_capacity(list_capacity(issues)));
            if write_rows(ctx, &mut out, &plan, &self.0).await.is_some() {
                return Ok(encoded(out));
            }
        }
        OutputType::resolve(&self.0, ctx, field).await
    }
}

async fn write_rows<O: Objects>(
    ctx: &ContextSelectionSet<'_>,
    out: &mut Json,
    plan: &Plan<RowPart>,
    rows: &[Row<O>],
) -> Option<()> {
    out.open(b'[');
    let mut list = ListState::default();
    for (index, row) in rows.iter().enumerate() {
        out.comma(index);
        write_row::<O>(ctx, out, plan, O::issue(&row.0), &mut list).await?;
    }
    out.close(b']');
    Some(())
}

/// A first guess at a list of rows' size in bytes.
fn list_capacity<'a>(rows: impl Iterator<Item = &'a model::Issue>) -> usize {
    rows.map(|row| capacity(row) + 64).sum::<usize>() + 2
}

/// What a selection of an `IssueEdge` asks for.
enum EdgePart {
    Typename,
    Cursor,
    Node(Plan<RowPart>),
}

fn edge_plan<O: Objects>(fragments: &Fragments, set: &SelectionSet) -> Compiled<EdgePart> {
    compile(fragments, set, &O::Edge::type_name(), |field| {
        match field.name.node.as_str() {
            "__typename" => Ok(EdgePart::Typename),
            "cursor" => Ok(EdgePart::Cursor),
            "node" => row_plan::<O>(fragments, &field.selection_set.node).map(EdgePart::Node),
            _ => Err(PlanMiss::Field),
        }
    })
}

/// `IssueConnection.edges`: the type is `[IssueEdge!]!`, the resolution by plan, the whole
/// list in one text.
pub struct Edges<O: Objects>(Vec<O::Edge>);

impl<O: Objects> FromIterator<O::Edge> for Edges<O> {
    fn from_iter<I: IntoIterator<Item = O::Edge>>(edges: I) -> Self {
        Edges(edges.into_iter().collect())
    }
}

impl<O: Objects> OutputType for Edges<O> {
    list_type_info!(Vec<O::Edge>);

    async fn resolve(
        &self,
        ctx: &ContextSelectionSet<'_>,
        field: &Positioned<Field>,
    ) -> ServerResult<Value> {
        // The edges are counted once, as a list, when they fall back; their nodes are counted
        // by `Row` when their own selection misses the plan.
        match edge_plan::<O>(&ctx.query_env.fragments, &ctx.item.node) {
            Ok(plan) => {
                let issues = self.0.iter().map(|edge| O::edge(edge).1);
                let mut out = Json(Vec::with_capacity(list_capacity(issues)));
                if write_edges::<O>(ctx, &mut out, &plan, &self.0)
                    .await
                    .is_some()
                {
                    return Ok(encoded(out));
                }
                fell_back(ctx, PlanMiss::Project);
            }
            Err(miss) => fell_back(ctx, miss),
        }
        OutputType::resolve(&self.0, ctx, field).await
    }
}

async fn write_edges<O: Objects>(
    ctx: &ContextSelectionSet<'_>,
    out: &mut Json,
    plan: &Plan<EdgePart>,
    edges: &[O::Edge],
) -> Option<()> {
    out.open(b'[');
    let mut list = ListState::default();
    for (index, edge) in edges.iter().enumerate() {
        let (cursor, issue) = O::edge(edge);
        out.comma(index);
        out.open(b'{');
        for (index, (key, part)) in plan.iter().enumerate() {
            out.key(index, key);
            match part {
                EdgePart::Typename => out.string(&O::Edge::type_name()),
                EdgePart::Cursor => out.string(cursor),
                EdgePart::Node(plan) => write_row::<O>(ctx, out, plan, issue, &mut list).await?,
            }
        }
        out.close(b'}');
    }
    out.close(b']');
    Some(())
}

#[cfg(test)]
mod tests {
    use async_graphql::parser::parse_query;
    use async_graphql::parser::types::{DocumentOperations, ExecutableDocument};

    use super::*;
    use crate::graphql::types::GridObjects;

    /// The selection set of `issues { nodes { … } }` in the document's only operation.
    fn nodes_set(document: &ExecutableDocument) -> &SelectionSet {
        let DocumentOperations::Single(operation) = &document.operations else {
            panic!("one operation");
        };
        let mut set = &operation.node.selection_set.node;
        for name in ["issues", "nodes"] {
            set = set
                .items
                .iter()
                .find_map(|item| match &item.node {
                    Selection::Field(f) if f.node.name.node == name => {
                        Some(&f.node.selection_set.node)
                    }
                    _ => None,
                })
                .expect("the field");
        }
        set
    }

    fn plans(query: &str) -> Option<usize> {
        let document = parse_query(query).expect("a valid document");
        let fragments = document
            .fragments
            .iter()
            .map(|(name, definition)| (name.clone(), definition.clone()))
            .collect();
        row_plan::<GridObjects>(&fragments, nodes_set(&document))
            .map(|plan| plan.len())
            .ok()
    }

    #[test]
    fn grid_selections_take_a_plan() {
        assert_eq!(
            plans("{ issues { nodes { id num name state version __typename fieldValues { value field { id name type position version __typename } } } } }"),
            Some(7)
        );
        assert_eq!(
            plans("{ issues { nodes { n: num ...R ... on Issue { id } ... { state } } } } fragment R on Issue { name fieldValues { ... on CustomFieldValue { value } } }"),
            Some(5)
        );
    }

    #[test]
    fn other_selections_go_to_the_executor() {
        for query in [
            "{ issues { nodes { id @include(if: true) } } }",
            "{ issues { nodes { id ... @skip(if: false) { num } } } }",
            "{ issues { nodes { ... on Node { id } } } }",
            "{ issues { nodes { num num } } }",
            "{ issues { nodes { a: num a: name } } }",
            "{ issues { nodes { project { id } } } }",
            "{ issues { nodes { fieldValue(fieldId: \"xattrib-1\") { value } } } }",
            "{ issues { nodes { fieldValues { field { project { id } } } } } }",
            "{ issues { nodes { fieldValues { value @skip(if: true) } } } }",
            "{ issues { nodes { ...R } } } fragment R on Node { id }",
            "{ issues { nodes { ...Missing } } }",
        ] {
            assert_eq!(plans(query), None, "{query}");
        }
    }

    proptest::proptest! {
        /// The row writer's strings and keys are serde_json's, byte for byte, whatever they
        /// hold (quotes, backslashes, control characters, any Unicode).
        #[test]
        fn strings_and_keys_are_written_as_serde_json_writes_them(
            text in "(\\PC|[\"\\\\\\x00-\\x1f\\x7f])*",
            n in proptest::prelude::any::<i32>(),
        ) {
            let mut out = Json(Vec::new());
            out.string(&text);
            let expected = serde_json::to_string(&text).unwrap();
            proptest::prop_assert_eq!(&out.0, expected.as_bytes());

            let key = Key::of(&Name::new(&text));
            let expected_key = format!("{expected}:");
            proptest::prop_assert_eq!(&*key.0, expected_key.as_bytes());

            let mut out = Json(Vec::new());
            out.int(n);
            proptest::prop_assert_eq!(out.0, n.to_string().into_bytes());
        }
    }
}
