//! The schema's types, read once from its SDL: the object and interface fields and root types
//! the cost model needs to resolve a field's type and list multiplier, and the input side (every
//! argument's type, input objects, enums, scalars, directives) the input checks need.

use std::collections::{HashMap, HashSet};

use async_graphql::parser::types::{
    BaseType, FieldDefinition, InputValueDefinition, OperationType, Type, TypeKind,
    TypeSystemDefinition,
};

/// What the analysis needs to know of one field of an object or interface type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldInfo {
    /// The named type the field returns, list and non-null wrappers removed.
    pub type_name: String,
    /// Whether the field returns a list (at its outermost level).
    pub is_list: bool,
    /// The field's arguments, in the schema's order.
    pub arguments: Vec<InputInfo>,
}

/// An argument, an input object's field or a directive's argument: its name, its declared
/// type and whether the schema gives it a default.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputInfo {
    pub name: String,
    pub ty: Type,
    pub has_default: bool,
}

/// What kind of type a named input type is, for checking a value against it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputKind<'a> {
    /// A scalar, built in (`Int`, `Float`, `String`, `Boolean`, `ID`) or the schema's own.
    Scalar,
    /// An enum and its values.
    Enum(&'a HashSet<String>),
    /// An input object and its fields.
    Object(&'a [InputInfo]),
}

/// The built-in scalars, which the SDL does not declare.
const BUILT_IN_SCALARS: [&str; 5] = ["Int", "Float", "String", "Boolean", "ID"];

/// The fields of every object and interface type of a schema, its root types, and its input
/// types and directives. Built once at start-up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TypeMap {
    types: HashMap<String, HashMap<String, FieldInfo>>,
    query: String,
    mutation: String,
    subscription: String,
    scalars: HashSet<String>,
    enums: HashMap<String, HashSet<String>>,
    input_objects: HashMap<String, Vec<InputInfo>>,
    directives: HashMap<String, Vec<InputInfo>>,
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
                    let name = definition.name.node.to_string();
                    let fields = match &definition.kind {
                        TypeKind::Object(object) => &object.fields,
                        TypeKind::Interface(interface) => &interface.fields,
                        TypeKind::Scalar => {
                            map.scalars.insert(name);
                            continue;
                        }
                        TypeKind::Enum(values) => {
                            let values = values.values.iter();
                            let entry = map.enums.entry(name).or_default();
                            entry.extend(values.map(|v| v.node.value.node.to_string()));
                            continue;
                        }
                        TypeKind::InputObject(object) => {
                            let entry = map.input_objects.entry(name).or_default();
                            entry.extend(object.fields.iter().map(|f| InputInfo::of(&f.node)));
                            continue;
                        }
                        TypeKind::Union(_) => continue,
                    };
                    let entry = map
                        .types
                        .entry(definition.name.node.to_string())
                        .or_default();
                    for field in fields {
                        entry.insert(field.node.name.node.to_string(), FieldInfo::of(&field.node));
                    }
                }
                TypeSystemDefinition::Directive(directive) => {
                    let directive = &directive.node;
                    map.directives.insert(
                        directive.name.node.to_string(),
                        directive
                            .arguments
                            .iter()
                            .map(|a| InputInfo::of(&a.node))
                            .collect(),
                    );
                }
            }
        }
        Ok(map)
    }

    /// The field `field` of the object or interface type `type_name`, if the schema has it.
    pub fn field(&self, type_name: &str, field: &str) -> Option<&FieldInfo> {
        self.types.get(type_name)?.get(field)
    }

    /// What kind of input type `name` is, if the schema has it as one.
    pub fn input_kind(&self, name: &str) -> Option<InputKind<'_>> {
        if let Some(fields) = self.input_objects.get(name) {
            return Some(InputKind::Object(fields));
        }
        if let Some(values) = self.enums.get(name) {
            return Some(InputKind::Enum(values));
        }
        (self.scalars.contains(name) || BUILT_IN_SCALARS.contains(&name))
            .then_some(InputKind::Scalar)
    }

    /// The arguments of the directive `name` (`skip`, `include`), if the schema declares it.
    pub fn directive(&self, name: &str) -> Option<&[InputInfo]> {
        self.directives.get(name).map(Vec::as_slice)
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
            scalars: HashSet::new(),
            enums: HashMap::new(),
            input_objects: HashMap::new(),
            directives: HashMap::new(),
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
                .map(|argument| InputInfo::of(&argument.node))
                .collect(),
        }
    }

    /// The argument `name`, if the field has it.
    pub fn argument(&self, name: &str) -> Option<&InputInfo> {
        self.arguments.iter().find(|a| a.name == name)
    }
}

impl InputInfo {
    fn of(definition: &InputValueDefinition) -> InputInfo {
        InputInfo {
            name: definition.name.node.to_string(),
            ty: definition.ty.node.clone(),
            has_default: definition.default_value.is_some(),
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
