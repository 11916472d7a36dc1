//! The outermost layer of an argument value (absent, null, a number, a list's length, a
//! variable's name), read through `Serialize` without copying the value.

use serde::ser::{Impossible, Serialize, SerializeMap, SerializeSeq, Serializer};

/// The outermost layer of an argument value, all the cost model reads of it.
///
/// The parser's value type (with variables) is not exported by async-graphql, so it cannot be
/// matched on; it does implement `Serialize`, and [`ShapeProbe`] reads a value through that
/// without copying it or descending into its elements, so even a huge or deeply nested literal
/// costs one step per element of its outer list and no stack.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Shape {
    /// The argument is not given (or is a variable neither given nor defaulted).
    Absent,
    Null,
    Int(i64),
    List(usize),
    Text(String),
    /// A variable, by name; `Analyzer::argument` replaces it by its value.
    Variable(String),
    /// Anything else: a float, a boolean, an object, an enum value's serialization, ...
    Other,
}

impl Shape {
    pub(super) fn of(value: &impl Serialize) -> Shape {
        value.serialize(ShapeProbe).unwrap_or(Shape::Other)
    }
}

/// Why a value has no [`Shape`]: only for serde's plumbing, never shown to anyone.
#[derive(Debug)]
struct NoShape;

impl std::fmt::Display for NoShape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the value has no shape the cost model reads")
    }
}

impl std::error::Error for NoShape {}

impl serde::ser::Error for NoShape {
    fn custom<T: std::fmt::Display>(_: T) -> Self {
        NoShape
    }
}

/// The serializer behind [`Shape::of`]. The parser's values serialize a variable as the map
/// `{"$var": name}`, which no object literal can spell (`$` starts no GraphQL name); numbers
/// serialize as `i64`, `u64` or `f64`.
struct ShapeProbe;

/// Counts a list's elements without serializing them.
struct ListProbe {
    len: usize,
}

/// Looks for the `$var` key of a serialized variable, ignoring every other entry.
struct MapProbe {
    variable_key: bool,
    variable: Option<String>,
}

const VARIABLE_KEY: &str = "$var";

impl Serializer for ShapeProbe {
    type Ok = Shape;
    type Error = NoShape;
    type SerializeSeq = ListProbe;
    type SerializeTuple = Impossible<Shape, NoShape>;
    type SerializeTupleStruct = Impossible<Shape, NoShape>;
    type SerializeTupleVariant = Impossible<Shape, NoShape>;
    type SerializeMap = MapProbe;
    type SerializeStruct = Impossible<Shape, NoShape>;
    type SerializeStructVariant = Impossible<Shape, NoShape>;

    fn serialize_bool(self, _: bool) -> Result<Shape, NoShape> {
        Ok(Shape::Other)
    }
    fn serialize_i8(self, v: i8) -> Result<Shape, NoShape> {
        Ok(Shape::Int(v.into()))
    }
    fn serialize_i16(self, v: i16) -> Result<Shape, NoShape> {
        Ok(Shape::Int(v.into()))
    }
    fn serialize_i32(self, v: i32) -> Result<Shape, NoShape> {
        Ok(Shape::Int(v.into()))
    }
    fn serialize_i64(self, v: i64) -> Result<Shape, NoShape> {
        Ok(Shape::Int(v))
    }
    fn serialize_u8(self, v: u8) -> Result<Shape, NoShape> {
        Ok(Shape::Int(v.into()))
    }
    fn serialize_u16(self, v: u16) -> Result<Shape, NoShape> {
        Ok(Shape::Int(v.into()))
    }
    fn serialize_u32(self, v: u32) -> Result<Shape, NoShape> {
        Ok(Shape::Int(v.into()))
    }
    fn serialize_u64(self, v: u64) -> Result<Shape, NoShape> {
        Ok(i64::try_from(v).map_or(Shape::Other, Shape::Int))
    }
    fn serialize_f32(self, _: f32) -> Result<Shape, NoShape> {
        Ok(Shape::Other)
    }
    fn serialize_f64(self, _: f64) -> Result<Shape, NoShape> {
        Ok(Shape::Other)
    }
    fn serialize_char(self, v: char) -> Result<Shape, NoShape> {
        Ok(Shape::Text(v.to_string()))
    }
    fn serialize_str(self, v: &str) -> Result<Shape, NoShape> {
        Ok(Shape::Text(v.to_owned()))
    }
    fn serialize_bytes(self, _: &[u8]) -> Result<Shape, NoShape> {
        Ok(Shape::Other)
    }
    fn serialize_none(self) -> Result<Shape, NoShape> {
        Ok(Shape::Null)
    }
    fn serialize_some<T: ?Sized + Serialize>(self, value: &T) -> Result<Shape, NoShape> {
        value.serialize(self)
    }
    fn serialize_unit(self) -> Result<Shape, NoShape> {
        Ok(Shape::Null)
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<Shape, NoShape> {
        Ok(Shape::Null)
    }
    fn serialize_unit_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
    ) -> Result<Shape, NoShape> {
        Ok(Shape::Other)
    }
    fn serialize_newtype_struct<T: ?Sized + Serialize>(
        self,
        _: &'static str,
        value: &T,
    ) -> Result<Shape, NoShape> {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: ?Sized + Serialize>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<Shape, NoShape> {
        Ok(Shape::Other)
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<ListProbe, NoShape> {
        Ok(ListProbe { len: 0 })
    }
    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, NoShape> {
        Err(NoShape)
    }
    fn serialize_tuple_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleStruct, NoShape> {
        Err(NoShape)
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, NoShape> {
        Err(NoShape)
    }
    fn serialize_map(self, _: Option<usize>) -> Result<MapProbe, NoShape> {
        Ok(MapProbe {
            variable_key: false,
            variable: None,
        })
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Self::SerializeStruct, NoShape> {
        Err(NoShape)
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, NoShape> {
        Err(NoShape)
    }
}

impl SerializeSeq for ListProbe {
    type Ok = Shape;
    type Error = NoShape;

    fn serialize_element<T: ?Sized + Serialize>(&mut self, _: &T) -> Result<(), NoShape> {
        self.len = self.len.saturating_add(1);
        Ok(())
    }

    fn end(self) -> Result<Shape, NoShape> {
        Ok(Shape::List(self.len))
    }
}

impl SerializeMap for MapProbe {
    type Ok = Shape;
    type Error = NoShape;

    fn serialize_key<T: ?Sized + Serialize>(&mut self, key: &T) -> Result<(), NoShape> {
        self.variable_key =
            matches!(key.serialize(ShapeProbe)?, Shape::Text(key) if key == VARIABLE_KEY);
        Ok(())
    }

    fn serialize_value<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<(), NoShape> {
        if self.variable_key {
            if let Shape::Text(name) = value.serialize(ShapeProbe)? {
                self.variable = Some(name);
            }
        }
        Ok(())
    }

    fn end(self) -> Result<Shape, NoShape> {
        Ok(self.variable.map_or(Shape::Other, Shape::Variable))
    }
}
