//! Input values checked against their declared types before anything runs: the arguments a
//! document writes (fields' and directives' arguments, variables' defaults), the places it
//! uses its variables, and the values a request gives its variables.
//!
//! async-graphql checks most of this itself, but not all of it, and what it misses fails only
//! while resolving, as an error without a code, after earlier fields have run: in a document
//! with several mutations, after earlier mutations were applied. What it lets through:
//!
//! - a value that is not an object where an input object is expected (`orderBy: "NUM"`, or a
//!   variable of type `IssueOrder` given `"NUM"`), in literals, variables and defaults alike;
//! - a variable used where another type is expected (`$p: String!` for an `ID!` argument), which
//!   the specification's "All Variable Usages Are Allowed" refuses.
//!
//! The document's part ([`check_operation`]) depends on the document alone and is kept with the
//! cached document; the variables' part ([`check_variables`]) runs for every request. Both follow
//! the specification's input coercion rules (section 3.10 and CoerceVariableValues), with one
//! leniency that async-graphql shares and executes correctly: a string literal naming an enum
//! value is accepted where the enum is expected.
//!
//! Only what the [`TypeMap`] knows is checked: a field, argument or type it does not know is left
//! to async-graphql's validation, which refuses it with its own message. Values are checked only
//! as deep as their type nests (a list or object value where a scalar is expected is refused
//! without looking inside), and selection sets are walked with an explicit stack, so no document
//! can make these checks recurse deeply.

use std::collections::HashSet;

use async_graphql::parser::types::{
    BaseType, Directive, ExecutableDocument, OperationDefinition, Selection, SelectionSet, Type,
    VariableDefinition,
};
use async_graphql::{Name, Pos, Positioned, Variables};
use async_graphql_value::{ConstValue, Value};

use super::types::{InputInfo, InputKind, TypeMap};

/// Why an input does not fit its type; the message says where and what, for the client.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct InputRefusal {
    pub message: String,
    /// Where in the document, for the document's own mistakes.
    pub pos: Option<Pos>,
}

/// What the document's checks found that the request's variables must also satisfy.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Checked {
    /// Variables declared nullable that stand where a value is required, which their non-null
    /// default allows: they may be left out (the default applies) but not set to null, which
    /// execution would refuse only once it reached them.
    pub not_null: Vec<Name>,
}

/// Checks what the operation `operation` of `doc` writes itself: every argument literal of its
/// fields and directives (in the fragments it reaches too) and every variable default against
/// their types, and every use of a variable against the type expected where it is used.
pub fn check_operation(
    doc: &ExecutableDocument,
    operation: &OperationDefinition,
    types: &TypeMap,
) -> Result<Checked, InputRefusal> {
    let check = DocumentCheck {
        types,
        variables: &operation.variable_definitions,
        not_null: Default::default(),
    };
    for definition in &operation.variable_definitions {
        let definition = &definition.node;
        if let Some(default) = &definition.default_value {
            let subject = Subject::Default(&definition.name.node);
            Walk::new(types, None, subject)
                .value(&default.node, &definition.var_type.node)
                .map_err(|message| InputRefusal {
                    message,
                    pos: Some(default.pos),
                })?;
        }
    }
    check.directives(&operation.directives)?;
    let root = types.root_type(operation.ty);
    let mut stack: Vec<(&SelectionSet, Option<&str>)> =
        vec![(&operation.selection_set.node, Some(root))];
    let mut fragments_seen = HashSet::<&str>::new();
    while let Some((set, parent)) = stack.pop() {
        for item in &set.items {
            match &item.node {
                Selection::Field(field) => {
                    let field = &field.node;
                    check.directives(&field.directives)?;
                    let name = field.name.node.as_str();
                    let info = parent.and_then(|parent| types.field(parent, name));
                    if let (Some(info), Some(parent)) = (info, parent) {
                        for (argument, value) in &field.arguments {
                            // An unknown argument is refused by validation.
                            if let Some(declared) = info.argument(&argument.node) {
                                let subject = Subject::Argument {
                                    argument: &argument.node,
                                    parent,
                                    field: name,
                                };
                                check.argument(value, declared, subject)?;
                            }
                        }
                    }
                    let child = info.map(|info| info.type_name.as_str());
                    stack.push((&field.selection_set.node, child));
                }
                Selection::InlineFragment(inline) => {
                    let inline = &inline.node;
                    check.directives(&inline.directives)?;
                    let on = match &inline.type_condition {
                        Some(condition) => Some(condition.node.on.node.as_str()),
                        None => parent,
                    };
                    stack.push((&inline.selection_set.node, on));
                }
                Selection::FragmentSpread(spread) => {
                    let spread = &spread.node;
                    check.directives(&spread.directives)?;
                    let name = spread.fragment_name.node.as_str();
                    if !fragments_seen.insert(name) {
                        continue;
                    }
                    // An unknown fragment is refused by the analysis before this runs.
                    if let Some(fragment) = doc.fragments.get(name) {
                        let fragment = &fragment.node;
                        check.directives(&fragment.directives)?;
                        let on = fragment.type_condition.node.on.node.as_str();
                        stack.push((&fragment.selection_set.node, Some(on)));
                    }
                }
            }
        }
    }
    Ok(Checked {
        not_null: check.not_null.into_inner(),
    })
}

/// Checks the request's variable values against the operation's declarations, as the
/// specification's CoerceVariableValues does: a required variable must be given, and every
/// value given must fit its declared type; and a variable of `checked.not_null` must not be
/// null. Defaults were checked with the document.
pub fn check_variables(
    operation: &OperationDefinition,
    variables: &Variables,
    types: &TypeMap,
    checked: &Checked,
) -> Result<(), InputRefusal> {
    for definition in &operation.variable_definitions {
        let definition = &definition.node;
        let ty = &definition.var_type.node;
        let name = &definition.name.node;
        let refuse = |message| Err(InputRefusal { message, pos: None });
        match variables.get(name.as_str()) {
            None if !ty.nullable && definition.default_value.is_none() => {
                return refuse(format!(
                    "variable `${name}` of type `{ty}` is required but was not provided"
                ))
            }
            None => {}
            Some(ConstValue::Null) if checked.not_null.contains(name) => {
                return refuse(format!(
                    "variable `${name}` stands where a value is required: leave it out to use \
                     its default, but do not set it to null"
                ))
            }
            Some(value) => check_value(types, value, ty, Subject::Variable(name))?,
        }
    }
    Ok(())
}

/// Checks one value of a request (a variable's) against `ty`; `subject` names it in the
/// message.
pub fn check_value(
    types: &TypeMap,
    value: &ConstValue,
    ty: &Type,
    subject: Subject<'_>,
) -> Result<(), InputRefusal> {
    Walk::new(types, None, subject)
        .value(value, ty)
        .map_err(|message| InputRefusal { message, pos: None })
}

/// What a checked value is, for messages; written out only when a check fails.
#[derive(Clone, Copy, Debug)]
pub enum Subject<'a> {
    Variable(&'a Name),
    Default(&'a Name),
    Argument {
        argument: &'a Name,
        parent: &'a str,
        field: &'a str,
    },
    Directive {
        argument: &'a Name,
        directive: &'a str,
    },
}

impl std::fmt::Display for Subject<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Subject::Variable(name) => write!(f, "variable `${name}`"),
            Subject::Default(name) => write!(f, "the default value of `${name}`"),
            Subject::Argument {
                argument,
                parent,
                field,
            } => write!(f, "argument `{argument}` of `{parent}.{field}`"),
            Subject::Directive {
                argument,
                directive,
            } => write!(f, "argument `{argument}` of `@{directive}`"),
        }
    }
}

/// The document's side: arguments of fields and directives, with the operation's variable
/// declarations for judging where variables are used.
struct DocumentCheck<'a> {
    types: &'a TypeMap,
    variables: &'a [Positioned<VariableDefinition>],
    /// See [`Checked::not_null`].
    not_null: std::cell::RefCell<Vec<Name>>,
}

impl DocumentCheck<'_> {
    fn argument(
        &self,
        value: &Positioned<Value>,
        declared: &InputInfo,
        subject: Subject<'_>,
    ) -> Result<(), InputRefusal> {
        let mut walk = Walk::new(self.types, Some(self.variables), subject);
        let checked = walk.value(&value.node, &declared.ty);
        let mut not_null = self.not_null.borrow_mut();
        for name in walk.not_null {
            if !not_null.contains(&name) {
                not_null.push(name);
            }
        }
        checked.map_err(|message| InputRefusal {
            message,
            pos: Some(value.pos),
        })
    }

    fn directives(&self, directives: &[Positioned<Directive>]) -> Result<(), InputRefusal> {
        for directive in directives {
            let name = directive.node.name.node.as_str();
            // An unknown directive or argument is refused by validation.
            let Some(declared) = self.types.directive(name) else {
                continue;
            };
            for (argument, value) in &directive.node.arguments {
                if let Some(info) = declared.iter().find(|a| a.name == argument.node.as_str()) {
                    let subject = Subject::Directive {
                        argument: &argument.node,
                        directive: name,
                    };
                    self.argument(value, info, subject)?;
                }
            }
        }
        Ok(())
    }
}

/// An input value as the checks see it: a literal of the document ([`Value`], which may hold
/// variables) or a value of the request's variables or a default ([`ConstValue`]). One walk
/// serves both, so literals and variables are judged by the same rules.
trait Input: Sized {
    fn shape(&self) -> Shape<'_>;
    fn items(&self) -> Option<&[Self]>;
    fn get(&self, field: &str) -> Option<&Self>;
    fn keys(&self) -> Vec<&str>;
}

/// The outermost layer of an input value.
enum Shape<'a> {
    Variable(&'a Name),
    Null,
    Number(&'a async_graphql::Number),
    String(&'a str),
    Boolean(bool),
    Enum(&'a str),
    List,
    Object,
    Binary,
}

impl Input for Value {
    fn shape(&self) -> Shape<'_> {
        match self {
            Value::Variable(name) => Shape::Variable(name),
            Value::Null => Shape::Null,
            Value::Number(n) => Shape::Number(n),
            Value::String(s) => Shape::String(s),
            Value::Boolean(b) => Shape::Boolean(*b),
            Value::Enum(name) => Shape::Enum(name),
            Value::List(_) => Shape::List,
            Value::Object(_) => Shape::Object,
            Value::Binary(_) => Shape::Binary,
        }
    }
    fn items(&self) -> Option<&[Self]> {
        match self {
            Value::List(items) => Some(items),
            _ => None,
        }
    }
    fn get(&self, field: &str) -> Option<&Self> {
        match self {
            Value::Object(fields) => fields.get(field),
            _ => None,
        }
    }
    fn keys(&self) -> Vec<&str> {
        match self {
            Value::Object(fields) => fields.keys().map(|k| k.as_str()).collect(),
            _ => Vec::new(),
        }
    }
}

impl Input for ConstValue {
    fn shape(&self) -> Shape<'_> {
        match self {
            ConstValue::Null => Shape::Null,
            ConstValue::Number(n) => Shape::Number(n),
            ConstValue::String(s) => Shape::String(s),
            ConstValue::Boolean(b) => Shape::Boolean(*b),
            ConstValue::Enum(name) => Shape::Enum(name),
            ConstValue::List(_) => Shape::List,
            ConstValue::Object(_) => Shape::Object,
            ConstValue::Binary(_) => Shape::Binary,
        }
    }
    fn items(&self) -> Option<&[Self]> {
        match self {
            ConstValue::List(items) => Some(items),
            _ => None,
        }
    }
    fn get(&self, field: &str) -> Option<&Self> {
        match self {
            ConstValue::Object(fields) => fields.get(field),
            _ => None,
        }
    }
    fn keys(&self) -> Vec<&str> {
        match self {
            ConstValue::Object(fields) => fields.keys().map(|k| k.as_str()).collect(),
            _ => Vec::new(),
        }
    }
}

impl Shape<'_> {
    fn describe(&self) -> String {
        match self {
            Shape::Variable(name) => format!("the variable `${name}`"),
            Shape::Null => "null".into(),
            Shape::Number(n) => format!("the number {n}"),
            Shape::String(_) => "a string".into(),
            Shape::Boolean(b) => format!("the boolean {b}"),
            Shape::Enum(name) => format!("the enum value {name}"),
            Shape::List => "a list".into(),
            Shape::Object => "an object".into(),
            Shape::Binary => "binary data".into(),
        }
    }

    /// Whether this (not null, not a variable) is a value of the scalar `name`.
    fn fits_scalar(&self, name: &str) -> bool {
        match (name, self) {
            ("Int", Shape::Number(n)) => n.as_i64().is_some_and(|n| i32::try_from(n).is_ok()),
            ("Float", Shape::Number(_)) => true,
            ("String", Shape::String(_)) => true,
            ("Boolean", Shape::Boolean(_)) => true,
            ("ID", Shape::String(_)) => true,
            // async-graphql takes an integer for an `ID` only as an `i64`.
            ("ID", Shape::Number(n)) => n.is_i64(),
            ("Int" | "Float" | "String" | "Boolean" | "ID", _) => false,
            // The schema declares no scalar of its own; one added later is its own judge.
            _ => true,
        }
    }
}

/// One value checked against one type, descending only as deep as the type nests.
struct Walk<'a> {
    types: &'a TypeMap,
    /// The operation's variable declarations, for literals (variables cannot hold variables).
    variables: Option<&'a [Positioned<VariableDefinition>]>,
    /// What the value is, for messages (`argument `input` of `Mutation.createIssue``).
    subject: Subject<'a>,
    /// Where inside it the walk is (`.fieldValues[0].value`).
    path: String,
    /// Nullable variables found standing where a value is required (see [`Checked`]).
    not_null: Vec<Name>,
}

impl<'a> Walk<'a> {
    fn new(
        types: &'a TypeMap,
        variables: Option<&'a [Positioned<VariableDefinition>]>,
        subject: Subject<'a>,
    ) -> Self {
        Walk {
            types,
            variables,
            subject,
            path: String::new(),
            not_null: Vec::new(),
        }
    }

    /// What is being checked: the subject, and the place inside it once the walk descended.
    fn at(&self) -> String {
        if self.path.is_empty() {
            self.subject.to_string()
        } else {
            format!(
                "{} at `{}`",
                self.subject,
                self.path.trim_start_matches('.')
            )
        }
    }

    fn refuse(&self, expected: impl std::fmt::Display, found: &Shape<'_>) -> String {
        format!(
            "{}: expected {expected}, found {}",
            self.at(),
            found.describe()
        )
    }

    /// Checks `value` against `ty`, the type expected where it stands.
    fn value<V: Input>(&mut self, value: &V, ty: &Type) -> Result<(), String> {
        let shape = value.shape();
        match shape {
            Shape::Variable(name) => return self.variable(name, ty),
            Shape::Null if ty.nullable => return Ok(()),
            Shape::Null => return Err(self.refuse(format_args!("`{ty}`"), &shape)),
            _ => {}
        }
        let name = match &ty.base {
            BaseType::List(item) => {
                let Some(items) = value.items() else {
                    // A single value stands for a list of one.
                    return self.value(value, item);
                };
                let len = self.path.len();
                for (i, v) in items.iter().enumerate() {
                    use std::fmt::Write;
                    let _ = write!(self.path, "[{i}]");
                    self.value(v, item)?;
                    self.path.truncate(len);
                }
                return Ok(());
            }
            BaseType::Named(name) => name,
        };
        match self.types.input_kind(name) {
            // A type the map does not know is left to validation.
            None => Ok(()),
            Some(InputKind::Scalar) if shape.fits_scalar(name) => Ok(()),
            Some(InputKind::Scalar) => Err(self.refuse(format_args!("`{name}`"), &shape)),
            Some(InputKind::Enum(values)) => match shape {
                Shape::Enum(v) | Shape::String(v) if values.contains(v) => Ok(()),
                _ => Err(self.refuse(format_args!("a value of the enum `{name}`"), &shape)),
            },
            Some(InputKind::Object(fields)) => {
                if !matches!(shape, Shape::Object) {
                    return Err(self.refuse(format_args!("an input object `{name}`"), &shape));
                }
                if let Some(unknown) = value
                    .keys()
                    .into_iter()
                    .find(|key| !fields.iter().any(|f| f.name == *key))
                {
                    return Err(format!(
                        "{}: the input object `{name}` has no field `{unknown}`",
                        self.at()
                    ));
                }
                let len = self.path.len();
                for field in fields {
                    match value.get(&field.name) {
                        Some(v) => {
                            self.path.push('.');
                            self.path.push_str(&field.name);
                            self.value(v, &field.ty)?;
                            self.path.truncate(len);
                        }
                        None if field.ty.nullable || field.has_default => {}
                        None => {
                            return Err(format!(
                                "{}: the field `{}` of the input object `{name}` (of type `{}`) \
                                 is required",
                                self.at(),
                                field.name,
                                field.ty
                            ))
                        }
                    }
                }
                Ok(())
            }
        }
    }

    /// A variable used in a literal: allowed where its declared type may stand.
    fn variable(&mut self, name: &Name, ty: &Type) -> Result<(), String> {
        let definition = self
            .variables
            .and_then(|defs| defs.iter().find(|d| d.node.name.node == *name));
        // An undefined variable is refused by validation.
        let Some(definition) = definition else {
            return Ok(());
        };
        let definition = &definition.node;
        if usage_allowed(definition, ty) {
            if !ty.nullable && definition.var_type.node.nullable {
                self.not_null.push(name.clone());
            }
            Ok(())
        } else {
            Err(format!(
                "{}: the variable `${name}` of type `{}` cannot stand where `{ty}` is expected",
                self.at(),
                definition.var_type.node
            ))
        }
    }
}

/// The specification's IsVariableUsageAllowed: whether a variable declared as `definition`
/// may stand where `location` is expected. A nullable variable may stand where a value is
/// required only with a non-null default of its own: the specification also lets the place's
/// default stand in, but async-graphql gives an omitted nullable variable the value null,
/// which that place then refuses while resolving, so that leniency is not kept.
fn usage_allowed(definition: &VariableDefinition, location: &Type) -> bool {
    let variable = &definition.var_type.node;
    if !location.nullable && variable.nullable {
        let non_null_default = definition
            .default_value
            .as_ref()
            .is_some_and(|d| d.node != ConstValue::Null);
        if !non_null_default {
            return false;
        }
        let nullable_location = Type {
            base: location.base.clone(),
            nullable: true,
        };
        return types_compatible(variable, &nullable_location);
    }
    types_compatible(variable, location)
}

/// The specification's AreTypesCompatible: named types must be the same type (a `String`
/// variable is not an `ID`), lists must be lists, and a non-null location needs a non-null
/// variable (a non-null variable may stand where a nullable value is expected).
fn types_compatible(variable: &Type, location: &Type) -> bool {
    if !location.nullable && variable.nullable {
        return false;
    }
    match (&variable.base, &location.base) {
        (BaseType::List(v), BaseType::List(l)) => types_compatible(v, l),
        (BaseType::Named(v), BaseType::Named(l)) => v == l,
        _ => false,
    }
}
