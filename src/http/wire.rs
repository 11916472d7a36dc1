//! The wire format of `/graphql` answers: content negotiation between
//! `application/graphql-response+json` and `application/json`, the status codes each calls
//! for, and writing responses and refusals (with the request id, within the size limit).

use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

use super::metrics::{Outcome, OK};
use super::{request_id_text, RequestId, APPLICATION_JSON, GRAPHQL_RESPONSE_JSON};
use crate::graphql::error::ErrorCode;
use crate::telemetry::OperationKind;

/// A refusal as GraphQL-over-HTTP clients expect it: `{"errors": [...]}` with a code and the
/// request id, in the media type the client accepts (see [`media_of`]); its [`Outcome`] is
/// the code.
pub(super) fn refuse(
    status: StatusCode,
    code: ErrorCode,
    message: &str,
    id: &RequestId,
    media: Media,
) -> Response {
    refuse_with(status, code, message, id, media, None)
}

/// [`refuse`], with the response's `extensions` (what a request that ran had applied).
pub(super) fn refuse_with(
    status: StatusCode,
    code: ErrorCode,
    message: &str,
    id: &RequestId,
    media: Media,
    extensions: Option<serde_json::Value>,
) -> Response {
    write_refusal(
        status,
        code,
        message,
        serde_json::Map::new(),
        id,
        media,
        extensions,
    )
}

/// A refusal's body: one error with its message, `details`, code and request id in its
/// `extensions`, and the response's `extensions` when given.
fn write_refusal(
    status: StatusCode,
    code: ErrorCode,
    message: &str,
    mut details: serde_json::Map<String, serde_json::Value>,
    id: &RequestId,
    media: Media,
    extensions: Option<serde_json::Value>,
) -> Response {
    details.insert("code".into(), code.as_str().into());
    details.insert("requestId".into(), request_id_text(id).into());
    let mut body = serde_json::json!({
        "errors": [{ "message": message, "extensions": details }]
    });
    if let Some(extensions) = extensions {
        body["extensions"] = extensions;
    }
    let mut response = (status, axum::Json(body)).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(media.content_type()),
    );
    response.extensions_mut().insert(Outcome {
        operation: OperationKind::None,
        code: code.as_str(),
    });
    response
}

/// [`refuse`], with more of the error's `extensions` beside its code and the request id (what
/// the gateway said of it: `retryable`, `retryAfter`, `progress`).
pub(super) fn refuse_extended(
    status: StatusCode,
    code: ErrorCode,
    message: &str,
    details: serde_json::Map<String, serde_json::Value>,
    id: &RequestId,
    media: Media,
) -> Response {
    write_refusal(status, code, message, details, id, media, None)
}

/// The media type of a refusal written before (or instead of) negotiation proper: the one
/// the client prefers, or `application/json` when it accepts neither (what a 406 is written
/// in, too).
pub(super) fn media_of(headers: &HeaderMap) -> Media {
    negotiate(headers).unwrap_or(Media::Json)
}

/// Which media type the response is written in, from the request's `Accept`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Media {
    /// `application/graphql-response+json`: request errors get 4xx.
    GraphqlResponse,
    /// `application/json`: well-formed GraphQL requests get 200 whatever their errors, as
    /// the spec asks for legacy clients.
    Json,
}

impl Media {
    fn content_type(self) -> &'static str {
        match self {
            Media::GraphqlResponse => "application/graphql-response+json; charset=utf-8",
            Media::Json => "application/json; charset=utf-8",
        }
    }
}

/// Content negotiation per GraphQL over HTTP: the preferred of the two media types the
/// client accepts. Each type takes the quality of the most specific range that matches it
/// (RFC 9110: `application/json;q=0, */*` accepts only `graphql-response+json`); the higher
/// quality wins, then the more specific match, then `graphql-response+json` when both are
/// named. No `Accept`, or only wildcards, means `application/json`. `None` when the client
/// accepts neither (406).
pub(super) fn negotiate(headers: &HeaderMap) -> Option<Media> {
    let Some(accept) = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok()) else {
        return Some(Media::Json);
    };
    // (quality, specificity) of each media type: 2 named, 1 `application/*`, 0 `*/*`.
    let mut graphql: Option<(f32, u8)> = None;
    let mut json: Option<(f32, u8)> = None;
    for range in accept.split(',') {
        let mut parts = range.split(';');
        let media = parts.next().unwrap_or("").trim().to_ascii_lowercase();
        let q = parts
            .filter_map(|p| p.trim().strip_prefix("q="))
            .find_map(|q| q.trim().parse::<f32>().ok())
            .unwrap_or(1.0);
        let (graphql_match, json_match) = match media.as_str() {
            GRAPHQL_RESPONSE_JSON => (Some(2), None),
            APPLICATION_JSON => (None, Some(2)),
            "application/*" => (Some(1), Some(1)),
            "*/*" => (Some(0), Some(0)),
            _ => (None, None),
        };
        for (slot, specificity) in [(&mut graphql, graphql_match), (&mut json, json_match)] {
            if let Some(specificity) = specificity {
                if slot.is_none_or(|(_, s)| specificity > s) {
                    *slot = Some((q, specificity));
                }
            }
        }
    }
    let graphql = graphql.filter(|(q, _)| *q > 0.0);
    let json = json.filter(|(q, _)| *q > 0.0);
    match (graphql, json) {
        (None, None) => None,
        (Some(_), None) => Some(Media::GraphqlResponse),
        (None, Some(_)) => Some(Media::Json),
        (Some((gq, gs)), Some((jq, js))) => {
            let graphql_wins = gq > jq || (gq == jq && (gs > js || (gs == js && gs == 2)));
            Some(if graphql_wins {
                Media::GraphqlResponse
            } else {
                Media::Json
            })
        }
    }
}

/// Whether a response is a request error: nothing ran (parse, validation, variables, limits,
/// scope), so it has no `data` and only errors without a path. A response that reports
/// applied mutations (`extensions.applied`) ran, whatever its errors: it keeps `data`.
fn is_request_error(response: &async_graphql::Response) -> bool {
    !response.errors.is_empty()
        && response.data == async_graphql::Value::Null
        && response.errors.iter().all(|e| e.path.is_empty())
        && !response.extensions.contains_key("applied")
}

fn error_code(error: &async_graphql::ServerError) -> Option<String> {
    let extensions = error.extensions.as_ref()?;
    match extensions.get("code")? {
        async_graphql::Value::String(code) => Some(code.clone()),
        _ => None,
    }
}

/// A buffer that refuses to grow past `max` bytes (serialization stops at the first write
/// past it).
struct LimitedWriter {
    bytes: Vec<u8>,
    max: usize,
}

impl std::io::Write for LimitedWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.bytes.len() + buf.len() > self.max {
            return Err(std::io::Error::other("response too large"));
        }
        self.bytes.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The initial capacity of a response body's buffer.
const RESPONSE_BUFFER_BYTES: usize = 16 * 1024;

/// Writes a GraphQL response: the request id on every error, `data` left out of request
/// errors, and the status the media type calls for; its [`Outcome`] is `ok` or the first
/// error's code.
pub(super) fn graphql_response(
    mut response: async_graphql::Response,
    media: Media,
    id: &RequestId,
    max_bytes: usize,
) -> Response {
    for error in &mut response.errors {
        let mut extensions = error.extensions.take().unwrap_or_default();
        extensions.set("requestId", request_id_text(id));
        error.extensions = Some(extensions);
    }
    let request_error = is_request_error(&response);
    let status = if request_error {
        let code = response.errors.first().and_then(error_code);
        match code.as_deref() {
            Some("FORBIDDEN") => StatusCode::FORBIDDEN,
            Some("RATE_LIMITED") => StatusCode::TOO_MANY_REQUESTS,
            Some("UNAUTHENTICATED") => StatusCode::UNAUTHORIZED,
            Some("TIMEOUT") => StatusCode::GATEWAY_TIMEOUT,
            _ if media == Media::Json => StatusCode::OK,
            _ => StatusCode::BAD_REQUEST,
        }
    } else {
        StatusCode::OK
    };
    let body = WireBody {
        data: (!request_error).then_some(&response.data),
        errors: &response.errors,
        extensions: &response.extensions,
    };
    let encoded = body.data.map_or(0, encoded_len);
    let mut writer = LimitedWriter {
        // A grid page is tens of kilobytes, most of it rows encoded already: start big enough
        // that the encoder does not copy the body through every smaller doubling (each a
        // transient allocation that raised the server's peak memory).
        bytes: Vec::with_capacity(max_bytes.min(RESPONSE_BUFFER_BYTES.max(encoded + encoded / 8))),
        max: max_bytes,
    };
    if body.write(&mut writer).is_err() {
        tracing::warn!(max_bytes, "response over the size limit");
        let extensions = response
            .extensions
            .get("applied")
            .map(|applied| serde_json::json!({ "applied": applied }));
        // A request that committed mutations ran, so it is not a request error.
        let status = match media {
            Media::GraphqlResponse if extensions.is_none() => StatusCode::BAD_REQUEST,
            _ => StatusCode::OK,
        };
        return refuse_with(
            status,
            ErrorCode::LimitExceeded,
            &format!(
                "the response would be larger than {max_bytes} bytes; ask for fewer rows or \
                 fields"
            ),
            id,
            media,
            extensions,
        );
    }
    let mut out = (status, writer.bytes).into_response();
    out.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(media.content_type()),
    );
    if status == StatusCode::TOO_MANY_REQUESTS {
        // A refusal of the caller's query cost says when to come back, like every 429.
        let secs = response
            .errors
            .first()
            .and_then(|e| e.extensions.as_ref()?.get("retryAfter").cloned())
            .and_then(|v| match v {
                async_graphql::Value::Number(n) => n.as_u64(),
                _ => None,
            })
            .unwrap_or(1);
        out.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(secs));
    }
    let code = match response.errors.first() {
        None => OK,
        // Every error leaves the gateway with one of the codes; anything else would be a bug,
        // counted as such rather than as a new label value.
        Some(error) => error_code(error)
            .and_then(|code| ErrorCode::parse(&code))
            .unwrap_or(ErrorCode::InternalServerError)
            .as_str(),
    };
    out.extensions_mut().insert(Outcome {
        operation: OperationKind::None,
        code,
    });
    out
}

/// A response body: `data`, `errors`, `extensions`, each only when present.
struct WireBody<'a> {
    data: Option<&'a async_graphql::Value>,
    errors: &'a [async_graphql::ServerError],
    extensions: &'a std::collections::BTreeMap<String, async_graphql::Value>,
}

impl WireBody<'_> {
    /// Writes the body. `data` is written by [`write_value`] (grid rows arrive encoded
    /// already); errors and extensions, which never hold rows, by serde.
    fn write(&self, out: &mut impl std::io::Write) -> std::io::Result<()> {
        let mut separator: &[u8] = b"{";
        if let Some(data) = self.data {
            out.write_all(separator)?;
            out.write_all(br#""data":"#)?;
            write_value(out, data)?;
            separator = b",";
        }
        if !self.errors.is_empty() {
            out.write_all(separator)?;
            out.write_all(br#""errors":"#)?;
            serde_json::to_writer(&mut *out, self.errors)?;
            separator = b",";
        }
        if !self.extensions.is_empty() {
            out.write_all(separator)?;
            out.write_all(br#""extensions":"#)?;
            serde_json::to_writer(&mut *out, self.extensions)?;
            separator = b",";
        }
        if separator == b"{" {
            out.write_all(separator)?;
        }
        out.write_all(b"}")
    }
}

/// The bytes of the grid rows under `value` that arrive encoded already.
fn encoded_len(value: &async_graphql::Value) -> usize {
    use async_graphql::Value;
    match value {
        Value::Binary(json) => json.len(),
        Value::List(items) => items.iter().map(encoded_len).sum(),
        Value::Object(map) => map.values().map(encoded_len).sum(),
        _ => 0,
    }
}

/// Writes a response value as JSON, objects in their order. A `Binary` value is a grid row
/// (or cell list) that `graphql/rows.rs` wrote as JSON already: it goes in as it is.
fn write_value(out: &mut impl std::io::Write, value: &async_graphql::Value) -> std::io::Result<()> {
    use async_graphql::Value;
    match value {
        Value::Null => out.write_all(b"null"),
        Value::Boolean(b) => out.write_all(if *b { b"true" } else { b"false" }),
        Value::Number(n) => Ok(serde_json::to_writer(out, n)?),
        Value::String(s) => Ok(serde_json::to_writer(out, s)?),
        Value::Enum(name) => Ok(serde_json::to_writer(out, name.as_str())?),
        Value::Binary(json) => out.write_all(json),
        Value::List(items) => {
            out.write_all(b"[")?;
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.write_all(b",")?;
                }
                write_value(out, item)?;
            }
            out.write_all(b"]")
        }
        Value::Object(map) => {
            out.write_all(b"{")?;
            for (i, (key, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.write_all(b",")?;
                }
                serde_json::to_writer(&mut *out, key.as_str())?;
                out.write_all(b":")?;
                write_value(out, item)?;
            }
            out.write_all(b"}")
        }
    }
}

#[cfg(test)]
mod tests {
    use async_graphql::indexmap::IndexMap;
    use async_graphql::{Name, Number, Value};
    use proptest::prelude::*;

    use super::*;

    fn value() -> impl Strategy<Value = Value> {
        let text = "[a-zA-Z0-9 \"\\\\\u{1}\n\té\u{1F600}]{0,8}";
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Boolean),
            any::<i64>().prop_map(|n| Value::Number(n.into())),
            (-1e9f64..1e9).prop_map(|f| Value::Number(Number::from_f64(f).unwrap_or(0.into()))),
            text.prop_map(Value::String),
            "[A-Z_]{1,6}".prop_map(|n| Value::Enum(Name::new(n))),
        ];
        leaf.prop_recursive(3, 32, 4, move |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::List),
                proptest::collection::vec((text, inner), 0..4).prop_map(|fields| {
                    Value::Object(
                        fields
                            .into_iter()
                            .map(|(k, v)| (Name::new(k), v))
                            .collect::<IndexMap<_, _>>(),
                    )
                }),
            ]
        })
    }

    fn written(value: &Value) -> String {
        let mut out = Vec::new();
        write_value(&mut out, value).unwrap();
        String::from_utf8(out).unwrap()
    }

    proptest! {
        /// The hand-written encoder writes what serde_json writes for async-graphql's values.
        #[test]
        fn values_are_written_as_serde_json_writes_them(value in value()) {
            prop_assert_eq!(written(&value), serde_json::to_string(&value).unwrap());
        }
    }

    #[test]
    fn encoded_rows_go_in_as_they_are_and_absent_parts_are_left_out() {
        let row = Value::Binary(br#"{"num":1,"name":"a\"b"}"#.to_vec().into());
        let data = Value::List(vec![row, Value::Null]);
        let extensions = std::collections::BTreeMap::new();
        let mut out = Vec::new();
        WireBody {
            data: Some(&data),
            errors: &[],
            extensions: &extensions,
        }
        .write(&mut out)
        .unwrap();
        assert_eq!(out, br#"{"data":[{"num":1,"name":"a\"b"},null]}"#);
        let mut out = Vec::new();
        WireBody {
            data: None,
            errors: &[],
            extensions: &extensions,
        }
        .write(&mut out)
        .unwrap();
        assert_eq!(out, b"{}");
    }
}
