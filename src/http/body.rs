//! A GraphQL request read out of an HTTP request: the POST body within its size and time limits,
//! parsed as strict JSON, and the GET parameters. Strict means unambiguous: a JSON object that
//! repeats a key (at any depth) or a URL that repeats a parameter is refused, because a filter
//! in front of the server that reads the first occurrence would see a different request than
//! the server, which (like most JSON parsers) would read the last.

use axum::body::{Body, Bytes};
use axum::http::{header, HeaderMap, StatusCode};
use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use super::HttpLimits;

/// Why a body or URL is not a GraphQL request, for the client (as `BAD_REQUEST`).
pub(super) type Refusal = (StatusCode, String);

pub(super) const NOT_A_REQUEST: &str = "the body is not a GraphQL request: send a JSON object \
     with `query` (a string) and optionally `variables` (an object) and `operationName` (a \
     string)";

/// Reads the body within the size limit and the body-read timeout.
// Why not tower-http's `RequestBodyLimitLayer` and `RequestBodyTimeoutLayer`: the first answers
// a declared oversize body with a plain-text 413 before the caller is authenticated, not a coded
// GraphQL error; the second bounds the wait for each frame, not for the whole body, so a client
// trickling a byte at a time would never run out of time.
pub(super) async fn read_body(
    limits: &HttpLimits,
    headers: &HeaderMap,
    body: Body,
) -> Result<Bytes, Refusal> {
    let too_large = || {
        (
            StatusCode::PAYLOAD_TOO_LARGE,
            format!(
                "the request body is larger than {} bytes",
                limits.max_body_bytes
            ),
        )
    };
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    if declared.is_some_and(|n| n > limits.max_body_bytes) {
        return Err(too_large());
    }
    match tokio::time::timeout(
        limits.body_read_timeout,
        axum::body::to_bytes(body, limits.max_body_bytes),
    )
    .await
    {
        Ok(Ok(bytes)) => Ok(bytes),
        Ok(Err(e)) => {
            let is_too_large = std::error::Error::source(&e)
                .is_some_and(|s| s.is::<http_body_util::LengthLimitError>());
            Err(if is_too_large {
                too_large()
            } else {
                (
                    StatusCode::BAD_REQUEST,
                    "the request body could not be read".into(),
                )
            })
        }
        Err(_) => Err((
            StatusCode::REQUEST_TIMEOUT,
            "the request body took too long to arrive".into(),
        )),
    }
}

/// Parses a POST body: one JSON object (a batch, a JSON array, is refused) with `query`
/// (string), optional `operationName` (string or null), `variables` and `extensions` (objects
/// or null), and no key twice at any depth.
pub(super) fn parse_post(bytes: &[u8]) -> Result<async_graphql::Request, Refusal> {
    let bad = |message: String| (StatusCode::BAD_REQUEST, message);
    let value = strict_json(bytes).map_err(bad)?;
    if value.is_array() {
        return Err(bad(
            "batched requests are not supported: send one operation per request".into(),
        ));
    }
    let Value::Object(mut map) = value else {
        return Err(bad(NOT_A_REQUEST.into()));
    };
    let query = match map.remove("query") {
        Some(Value::String(q)) => q,
        Some(_) => return Err(bad(format!("`query` must be a string: {NOT_A_REQUEST}"))),
        None => return Err(bad(format!("the body has no `query`: {NOT_A_REQUEST}"))),
    };
    let mut request = async_graphql::Request::new(query);
    match map.remove("operationName") {
        None | Some(Value::Null) => {}
        Some(Value::String(name)) => request = request.operation_name(name),
        Some(_) => return Err(bad("`operationName` must be a string".into())),
    }
    match map.remove("variables") {
        None | Some(Value::Null) => {}
        Some(v @ Value::Object(_)) => {
            request = request.variables(async_graphql::Variables::from_json(v));
        }
        Some(_) => return Err(bad("`variables` must be an object".into())),
    }
    match map.remove("extensions") {
        None | Some(Value::Null) | Some(Value::Object(_)) => {}
        Some(_) => return Err(bad("`extensions` must be an object".into())),
    }
    Ok(request)
}

/// The parameters of a GET request's URL, each at most once.
pub(super) struct GetParams(Vec<(String, String)>);

impl GetParams {
    /// Parses the query string; a parameter given twice is refused, like a repeated JSON key.
    pub(super) fn parse(raw: Option<&str>) -> Result<GetParams, Refusal> {
        let params: Vec<(String, String)> =
            serde_urlencoded::from_str(raw.unwrap_or("")).unwrap_or_default();
        // A set, not pairwise comparisons: a 16 KiB URL holds thousands of parameters, and this
        // runs before the caller is known.
        let mut seen = std::collections::HashSet::with_capacity(params.len());
        if let Some((name, _)) = params.iter().find(|(name, _)| !seen.insert(name.as_str())) {
            return Err((
                StatusCode::BAD_REQUEST,
                format!("the URL repeats the parameter `{name}`: give each parameter once"),
            ));
        }
        Ok(GetParams(params))
    }

    /// The parameters' names, in the URL's order.
    pub(super) fn names(&self) -> impl Iterator<Item = &str> {
        self.0.iter().map(|(name, _)| name.as_str())
    }

    pub(super) fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// A parameter holding JSON text (`variables`, `extensions`): an object, or absent when
    /// missing, empty or `null`.
    pub(super) fn json_object(&self, name: &str) -> Result<Option<Value>, Refusal> {
        let bad = |message: String| (StatusCode::BAD_REQUEST, message);
        let Some(text) = self.get(name).filter(|v| !v.is_empty()) else {
            return Ok(None);
        };
        match strict_json(text.as_bytes()) {
            Ok(Value::Null) => Ok(None),
            Ok(value @ Value::Object(_)) => Ok(Some(value)),
            Ok(_) => Err(bad(format!("`{name}` must be a JSON object"))),
            Err(message) => Err(bad(format!("`{name}`: {message}"))),
        }
    }
}

/// Parses JSON text like `serde_json::from_slice::<Value>`, refusing an object that repeats a
/// key. The message says what is wrong, for the client.
pub(super) fn strict_json(bytes: &[u8]) -> Result<Value, String> {
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    let parsed = Strict::deserialize(&mut deserializer).and_then(|Strict(value)| {
        deserializer.end()?;
        Ok(value)
    });
    parsed.map_err(|e| {
        if e.is_data() {
            // Only a repeated key is a data error here: everything else is syntax or EOF.
            format!("the JSON {e}; send each key once")
        } else {
            NOT_A_REQUEST.to_string()
        }
    })
}

/// A JSON value deserialized through [`StrictVisitor`].
struct Strict(Value);

impl<'de> Deserialize<'de> for Strict {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(StrictVisitor).map(Strict)
    }
}

/// Builds the same [`Value`] serde_json would, but fails on the second occurrence of a key in
/// an object. Nesting is bounded by serde_json's recursion limit, as for its own `Value`.
struct StrictVisitor;

impl<'de> Visitor<'de> for StrictVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        // JSON has no NaN or infinity, so serde_json never hands either over.
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(64));
        while let Some(Strict(item)) = seq.next_element()? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Value, A::Error> {
        let mut map = Map::new();
        while let Some(key) = access.next_key::<String>()? {
            if map.contains_key(&key) {
                return Err(de::Error::custom(format_args!(
                    "object repeats the key `{key}`"
                )));
            }
            let Strict(value) = access.next_value()?;
            map.insert(key, value);
        }
        Ok(Value::Object(map))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_repeated_key_is_refused_at_any_depth() {
        for text in [
            r#"{"query": "{__typename}", "query": "mutation { x }"}"#,
            r#"{"query": "q", "variables": {"a": 1, "a": 2}}"#,
            r#"{"query": "q", "variables": {"in": [{"x": {"y": 1, "y": 1}}]}}"#,
        ] {
            let message = strict_json(text.as_bytes()).unwrap_err();
            assert!(message.contains("repeats the key"), "{text}: {message}");
        }
        // The same key in sibling objects is no repetition.
        let fine = r#"{"query": "q", "variables": {"a": {"k": 1}, "b": {"k": 2}}}"#;
        assert!(strict_json(fine.as_bytes()).is_ok());
    }

    #[test]
    fn a_repeated_key_refuses_the_whole_request() {
        let body = br#"{"query": "{__typename}", "query": "mutation { x }"}"#;
        let (status, message) = parse_post(body).unwrap_err();
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert!(message.contains("`query`"), "{message}");
    }

    #[test]
    fn a_repeated_url_parameter_is_refused() {
        assert!(GetParams::parse(Some("query=%7Ba%7D&query=%7Bb%7D")).is_err());
        let params = GetParams::parse(Some("query=%7Ba%7D&variables=%7B%7D")).unwrap();
        assert_eq!(params.get("query"), Some("{a}"));
        let repeated = GetParams::parse(Some("query=q&variables=%7B%22a%22%3A1%2C%22a%22%3A2%7D"))
            .unwrap()
            .json_object("variables");
        assert!(repeated.is_err());
    }

    /// Arbitrary JSON without repeated keys (serde_json's own `Value` cannot hold any).
    fn json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            (-1e300f64..1e300).prop_map(Value::from),
            "[a-z\"\\\\\u{1}é]{0,6}".prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 32, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                prop::collection::btree_map("[a-d]{1,2}", inner, 0..6)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        /// Without repeated keys, strict parsing is serde_json's parsing.
        #[test]
        fn strict_parsing_agrees_with_serde_json(value in json()) {
            let text = serde_json::to_vec(&value).unwrap();
            prop_assert_eq!(strict_json(&text).unwrap(), serde_json::from_slice::<Value>(&text).unwrap());
        }

        /// Whatever the text, strict parsing fails whenever serde_json does, and succeeds
        /// with serde_json's value unless an object repeats a key.
        #[test]
        fn strict_parsing_never_accepts_what_serde_json_refuses(text in "[\\[\\]{}\",:a0-9 ]{0,24}") {
            let ours = strict_json(text.as_bytes());
            match serde_json::from_slice::<Value>(text.as_bytes()) {
                Err(_) => prop_assert!(ours.is_err()),
                Ok(value) => {
                    if let Ok(strict) = ours {
                        prop_assert_eq!(strict, value);
                    }
                }
            }
        }
    }
}
