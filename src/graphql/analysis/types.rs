//! The schema's object and interface fields and root types, read once from its SDL: what the
//! cost model needs to resolve a field's type and list multiplier.

use std::collections::HashMap;

use async_graphql::parser::types::{
    BaseType, FieldDefinition, OperationType, Type, TypeKind, TypeSystemDefinition,
};

/// What the analysis needs to know of one field of an object or interface type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldInfo {
    /// The named type the field returns, list and non-null wrappers removed.
    pub type_name: String,
    /// Whether the field returns a list (at its outermost level).
    pub is_list: bool,
    /// The names of the field's arguments.
    pub arguments: Vec<String>,
}

/// The fields of every object and interface type of a schema, and its root types: what the
/// cost model needs to resolve a field's type and multiplier. Built once at start-up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TypeMap {
    types: HashMap<String, HashMap<String, FieldInfo>>,
    query: String,
    mutation: String,
    subscription: String,
}

impl TypeMap {
    /// Reads a schema's SDL: for this service [`crate::graphql::sdl`], which async-graphql
    /// generates and which therefore always parses (a unit test pins that it does).
    ///
    /// SDL that does not parse gives [`TypeMap::default`], a map without types, like
    /// [`crate::graphql::ResponseOrder`] does: every field then costs 1 and no list multiplies, so the
    /// depth, alias, root-field and directive limits still hold but the cost no longer sees
    /// pages. That is logged as an error; [`TypeMap::try_from_sdl`] returns it instead.
    pub fn from_sdl(sdl: &str) -> TypeMap {
        TypeMap::try_from_sdl(sdl).unwrap_or_else(|error| {
            tracing::error!(%error, "the schema SDL does not parse; queries are priced without types");
            TypeMap::default()
        })
    }

    /// Reads a schema's SDL, or says why it does not parse. Type extensions add their fields to
    /// the type; root types default to `Query`, `Mutation` and `Subscription` unless a `schema`
    /// definition names others.
    pub fn try_from_sdl(sdl: &str) -> Result<TypeMap, async_graphql::parser::Error> {
        let document = async_graphql::parser::parse_schema(sdl)?;
        let mut map = TypeMap::default();
        for definition in &document.definitions {
            match definition {
                TypeSystemDefinition::Schema(schema) => {
                    let schema = &schema.node;
                    if let Some(name) = &schema.query {
                        map.query = name.node.to_string();
                    }
                    if let Some(name) = &schema.mutation {
                        map.mutation = name.node.to_string();
                    }
                    if let Some(name) = &schema.subscription {
                        map.subscription = name.node.to_string();
                    }
                }
                TypeSystemDefinition::Type(definition) => {
                    let definition = &definition.node;
                    let fields = match &definition.kind {
                        TypeKind::Object(object) => &object.fields,
                        TypeKind::Interface(interface) => &interface.fields,
                        _ => continue,
                    };
                    let entry = map
                        .types
                        .entry(definition.name.node.to_string())
                        .or_default();
                    for field in fields {
                        entry.insert(field.node.name.node.to_string(), FieldInfo::of(&field.node));
                    }
                }
                TypeSystemDefinition::Directive(_) => {}
            }
        }
        Ok(map)
    }

    /// The field `field` of the object or interface type `type_name`, if the schema has it.
    pub fn field(&self, type_name: &str, field: &str) -> Option<&FieldInfo> {
        self.types.get(type_name)?.get(field)
    }

    /// The name of the root type of an operation type.
    pub fn root_type(&self, operation: OperationType) -> &str {
        match operation {
            OperationType::Query => &self.query,
            OperationType::Mutation => &self.mutation,
            OperationType::Subscription => &self.subscription,
        }
    }
}

impl Default for TypeMap {
    /// A map without types, with the default root type names.
    fn default() -> Self {
        TypeMap {
            types: HashMap::new(),
            query: "Query".to_owned(),
            mutation: "Mutation".to_owned(),
            subscription: "Subscription".to_owned(),
        }
    }
}

impl FieldInfo {
    fn of(field: &FieldDefinition) -> FieldInfo {
        let ty = &field.ty.node;
        FieldInfo {
            type_name: named_type(ty).to_owned(),
            is_list: matches!(ty.base, BaseType::List(_)),
            arguments: field
                .arguments
                .iter()
                .map(|argument| argument.node.name.node.to_string())
                .collect(),
        }
    }
}

/// The named type inside any list wrappers. A loop rather than recursion, though SDL nesting is
/// shallow, so no input shape can grow the stack.
fn named_type(mut ty: &Type) -> &str {
    loop {
        match &ty.base {
            BaseType::Named(name) => return name.as_str(),
            BaseType::List(inner) => ty = inner,
        }
    }
}
