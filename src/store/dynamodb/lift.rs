//! Items read straight from DynamoDB's response bodies: for a call made through [`lifting`],
//! an interceptor takes the items (`Items` of a Query or Scan, `Item` of a GetItem,
//! `Responses` of a BatchGetItem) out of a successful response before the SDK deserializes it,
//! reads them with [`crate::store::ddbjson`], and hands the SDK only the rest of the envelope
//! (counts, `LastEvaluatedKey`, `UnprocessedKeys`, consumed capacity).
//!
//! Why: the SDK reads every attribute value into its own types through a generic token stream,
//! and the store then converts each item into serde_dynamo's types. On a grid page that was a
//! quarter of the gateway's CPU; `ddbjson` builds the store's items directly from the text.
//!
//! How the pieces meet: [`lifting`] scopes a task-local slot around one SDK call. The
//! interceptor ([`LiftItems`], registered on the client) runs inside that call's future (the
//! SDK's orchestrator is polled by the caller's task, which `attempts` relies on too), finds the
//! slot, and wraps the response body; the SDK collects the body, the wrapper splits it when it
//! ends and leaves the items in the slot. Whenever anything is unexpected (a status other than
//! 200, a body that is not the envelope expected, an item `ddbjson` refuses) the body passes
//! through unchanged and the slot holds the reason, so the caller reads the SDK's items as
//! before (and counts the fall-back, `gridgate_fast_path_fallbacks_total{path="dynamodb_items"}`):
//! this path can make a read faster, never different.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{ready, Context, Poll};

use aws_sdk_dynamodb::config::interceptors::BeforeDeserializationInterceptorContextMut;
use aws_sdk_dynamodb::config::{ConfigBag, Intercept, RuntimeComponents};
use aws_sdk_dynamodb::error::BoxError;
use aws_smithy_types::body::SdkBody;
use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};

use crate::store::ddbjson::{self, ItemsShape};
use crate::store::Item;
use crate::telemetry::LiftMiss;

/// Which member of the response holds the items.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Member {
    /// `Items`: a list of items (Query, Scan).
    Items,
    /// `Item`: one item, absent when the key names none (GetItem).
    Item,
    /// `Responses`: a map from table name to a list of items (BatchGetItem). Lifted only when
    /// it names at most one table, which is all a store call ever asks for.
    Responses,
}

impl Member {
    fn name(self) -> &'static str {
        match self {
            Member::Items => "Items",
            Member::Item => "Item",
            Member::Responses => "Responses",
        }
    }
}

/// Where a lifted body leaves its items, or why it could not: `None` until a response body
/// ended.
type Slot = Arc<Mutex<Option<Result<Vec<Item>, LiftMiss>>>>;

#[derive(Clone)]
struct Lift {
    member: Member,
    slot: Slot,
}

tokio::task_local! {
    /// The call in progress on this task that asked for its items to be lifted.
    static LIFT: Lift;
}

/// Runs one SDK call (`call`, the future of its `send()`) with the items of `member` lifted out
/// of its response. Returns the call's output and the lifted items, or why they were not
/// lifted (the call failed, or the body was not as expected), in which case the SDK's output
/// holds them instead.
pub(super) async fn lifting<F: Future>(
    member: Member,
    call: F,
) -> (F::Output, Result<Vec<Item>, LiftMiss>) {
    let slot = Slot::default();
    let lift = Lift {
        member,
        slot: Arc::clone(&slot),
    };
    let output = LIFT.scope(lift, call).await;
    let items = slot.lock().unwrap_or_else(PoisonError::into_inner).take();
    (output, items.unwrap_or(Err(LiftMiss::Unseen)))
}

/// DynamoDB's largest response body: a BatchGetItem returns at most 16 MB of items.
const MAX_RESPONSE_BYTES: usize = 16 * 1024 * 1024;

/// Registered on the client; acts only within [`lifting`], on responses with status 200.
#[derive(Debug)]
pub(super) struct LiftItems;

impl Intercept for LiftItems {
    fn name(&self) -> &'static str {
        "gridgate::LiftItems"
    }

    fn modify_before_deserialization(
        &self,
        context: &mut BeforeDeserializationInterceptorContextMut<'_>,
        _runtime_components: &RuntimeComponents,
        _cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let Ok(lift) = LIFT.try_with(Lift::clone) else {
            return Ok(());
        };
        let response = context.response_mut();
        if response.status().as_u16() != 200 {
            return Ok(());
        }
        // Sized once from the declared length, so a body that arrives in many pieces is not
        // copied again each time the buffer grows. The cap is DynamoDB's largest response
        // (a BatchGetItem's 16 MB); a longer declaration only grows the buffer as it goes.
        let declared = response
            .headers()
            .get("content-length")
            .and_then(|length| length.parse::<usize>().ok())
            .unwrap_or(0);
        let body = response.take_body();
        *response.body_mut() = SdkBody::from_body_1_x(LiftBody {
            inner: body,
            buffer: Vec::with_capacity(declared.min(MAX_RESPONSE_BYTES)),
            lift: Some(lift),
        });
        Ok(())
    }
}

/// A response body that collects its inner body and, at its end, yields the envelope without
/// the lifted member as a single frame.
struct LiftBody {
    inner: SdkBody,
    buffer: Vec<u8>,
    /// `None` once the split frame has been yielded.
    lift: Option<Lift>,
}

impl Body for LiftBody {
    type Data = Bytes;
    type Error = aws_smithy_types::body::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = self.get_mut();
        loop {
            if this.lift.is_none() {
                return Poll::Ready(None);
            }
            match ready!(Pin::new(&mut this.inner).poll_frame(cx)) {
                Some(Ok(frame)) => {
                    // DynamoDB sends no trailers, and the SDK reads none for it.
                    if let Ok(data) = frame.into_data() {
                        this.buffer.extend_from_slice(&data);
                    }
                }
                Some(Err(e)) => return Poll::Ready(Some(Err(e))),
                None => {
                    let body = std::mem::take(&mut this.buffer);
                    let Some(lift) = this.lift.take() else {
                        return Poll::Ready(None);
                    };
                    let mut slot = lift.slot.lock().unwrap_or_else(PoisonError::into_inner);
                    let out = match split(&body, lift.member) {
                        Ok((envelope, items)) => {
                            *slot = Some(Ok(items));
                            envelope
                        }
                        Err((miss, reason)) => {
                            *slot = Some(Err(miss));
                            tracing::debug!(
                                member = lift.member.name(),
                                reason,
                                "response items left to the SDK"
                            );
                            body
                        }
                    };
                    return Poll::Ready(Some(Ok(Frame::data(Bytes::from(out)))));
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.lift.is_none()
    }

    fn size_hint(&self) -> SizeHint {
        // The split body is shorter than the inner one, so only the lower bound is known.
        SizeHint::default()
    }
}

/// Why a body was left to the SDK: the fall-back's reason, and its words for the log.
type Refusal = (LiftMiss, &'static str);

/// Splits a response body into the envelope without `member` (JSON text) and the items that
/// member held, in one pass (`ddbjson::split_response`). Refuses (with the reason, and its
/// words for the log) anything but a JSON object whose member has the expected shape; an
/// absent member lifts no items.
fn split(body: &[u8], member: Member) -> Result<(Vec<u8>, Vec<Item>), Refusal> {
    let text = std::str::from_utf8(body).map_err(|_| (LiftMiss::NotUtf8, "body is not UTF-8"))?;
    let shape = match member {
        Member::Items => ItemsShape::List,
        Member::Item => ItemsShape::One,
        Member::Responses => ItemsShape::Tables,
    };
    let (rest, items) = ddbjson::split_response(text, member.name(), shape)
        .map_err(|e| (LiftMiss::Unexpected, e.reason))?;
    Ok((rest.into_bytes(), items))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::AttributeValue;
    use http_body_util::BodyExt;
    use proptest::prelude::*;
    use serde_json::{json, Value};

    fn parse(text: &[u8]) -> Value {
        serde_json::from_slice(text).unwrap()
    }

    fn issue(n: u32) -> Value {
        json!({
            "PK": {"S": format!("issue-{n}")},
            "SK": {"S": "project-1"},
            "Num": {"N": n.to_string()},
            "Values": {"M": {"xattrib-1": {"S": "a \"quoted\" ✓ value"}, "xattrib-2": {"N": "-1.5"}}},
            "Flags": {"L": [{"BOOL": true}, {"NULL": true}, {"B": "AAEC"}, {"SS": ["x", "y"]}]}
        })
    }

    fn sdk_items(value: &Value) -> Vec<Item> {
        value
            .as_array()
            .unwrap()
            .iter()
            .map(|item| serde_json::from_value(item.clone()).unwrap())
            .collect()
    }

    #[test]
    fn a_query_body_loses_items_and_keeps_the_rest() {
        let items = json!([issue(1), issue(2)]);
        let rest = json!({
            "Count": 2,
            "ScannedCount": 2,
            "LastEvaluatedKey": {"PK": {"S": "issue-2"}, "SK": {"S": "project-1"}},
            "ConsumedCapacity": {"TableName": "t", "CapacityUnits": 0.5}
        });
        let mut body = rest.clone();
        body["Items"] = items.clone();
        let (envelope, lifted) = split(body.to_string().as_bytes(), Member::Items).unwrap();
        assert_eq!(parse(&envelope), rest);
        assert_eq!(lifted, sdk_items(&items));
    }

    #[test]
    fn a_batch_get_body_loses_its_one_table_and_keeps_unprocessed_keys() {
        let items = json!([issue(3)]);
        let rest = json!({
            "UnprocessedKeys": {"t": {"Keys": [{"PK": {"S": "issue-4"}, "SK": {"S": "project-1"}}]}},
            "ConsumedCapacity": [{"TableName": "t", "CapacityUnits": 1.0}]
        });
        let mut body = rest.clone();
        body["Responses"] = json!({ "t": items.clone() });
        let (envelope, lifted) = split(body.to_string().as_bytes(), Member::Responses).unwrap();
        assert_eq!(parse(&envelope), rest);
        assert_eq!(lifted, sdk_items(&items));

        let (envelope, lifted) = split(
            br#"{"Responses":{},"UnprocessedKeys":{}}"#,
            Member::Responses,
        )
        .unwrap();
        assert_eq!(parse(&envelope), json!({"UnprocessedKeys": {}}));
        assert!(lifted.is_empty());
    }

    #[test]
    fn a_get_item_body_lifts_its_item_or_nothing() {
        let body = json!({"Item": issue(5), "ConsumedCapacity": {"CapacityUnits": 0.5}});
        let (envelope, lifted) = split(body.to_string().as_bytes(), Member::Item).unwrap();
        assert_eq!(
            parse(&envelope),
            json!({"ConsumedCapacity": {"CapacityUnits": 0.5}})
        );
        assert_eq!(lifted, sdk_items(&json!([issue(5)])));

        let (envelope, lifted) = split(br#"{}"#, Member::Item).unwrap();
        assert_eq!(parse(&envelope), json!({}));
        assert!(lifted.is_empty());
    }

    #[test]
    fn anything_unexpected_is_left_to_the_sdk() {
        let refusals: [(&[u8], Member); 10] = [
            (b"\xff{}", Member::Items),
            (b"[]", Member::Items),
            (br#"{"Items": [{"A": {"S": "x"}}]"#, Member::Items),
            (br#"{"Items": null}"#, Member::Items),
            (br#"{"Items": [{"A": {"Q": "x"}}]}"#, Member::Items),
            (br#"{"It\u0065ms": []}"#, Member::Items),
            (br#"{"Count": 1} x"#, Member::Items),
            (br#"{"Count": "unterminated}"#, Member::Items),
            (
                br#"{"Responses": {"a": [], "b": []}, "Count": 1}"#,
                Member::Responses,
            ),
            (br#"{"Responses": {"a": [], "b": []}}"#, Member::Responses),
        ];
        for (body, member) in refusals {
            assert!(
                split(body, member).is_err(),
                "{}",
                String::from_utf8_lossy(body)
            );
        }
    }

    /// Drives the wrapper as the SDK does: collects the body, which arrives in pieces.
    async fn collect(
        pieces: Vec<&'static [u8]>,
        member: Member,
    ) -> (Vec<u8>, Option<Result<Vec<Item>, LiftMiss>>) {
        let slot = Slot::default();
        let (tx, rx) = futures::channel::mpsc::unbounded::<Result<Frame<Bytes>, BoxError>>();
        for piece in pieces {
            tx.unbounded_send(Ok(Frame::data(Bytes::from_static(piece))))
                .unwrap();
        }
        drop(tx);
        let inner = SdkBody::from_body_1_x(http_body_util::StreamBody::new(rx));
        let body = LiftBody {
            inner,
            buffer: Vec::new(),
            lift: Some(Lift {
                member,
                slot: Arc::clone(&slot),
            }),
        };
        let bytes = body.collect().await.unwrap().to_bytes().to_vec();
        let items = slot.lock().unwrap().take();
        (bytes, items)
    }

    #[tokio::test]
    async fn the_body_splits_when_it_ends_and_passes_through_when_it_cannot() {
        let (bytes, items) = collect(
            vec![br#"{"Count":1,"Ite"#, br#"ms":[{"A":{"S":"x"}}]}"#],
            Member::Items,
        )
        .await;
        assert_eq!(parse(&bytes), json!({"Count": 1}));
        let item = items.unwrap().unwrap().pop().unwrap();
        assert_eq!(item.get("A"), Some(&AttributeValue::S("x".into())));

        let odd: &'static [u8] = br#"{"Count":1,"Items":[{"A":{"X":"x"}}]}"#;
        let (bytes, items) = collect(vec![odd], Member::Items).await;
        assert_eq!(bytes, odd);
        assert_eq!(items, Some(Err(LiftMiss::Unexpected)));

        let not_utf8: &'static [u8] = b"{\"Items\":[{\"A\":{\"S\":\"\xff\"}}]}";
        let (bytes, items) = collect(vec![not_utf8], Member::Items).await;
        assert_eq!(bytes, not_utf8);
        assert_eq!(items, Some(Err(LiftMiss::NotUtf8)));
    }

    /// Any JSON value, with strings that need escapes (quotes, braces, backslashes).
    fn json_value() -> impl Strategy<Value = Value> {
        let text = "[a-z{}\\[\\]\":,\\\\/\n\u{1}é\u{1F600}]{0,8}";
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            (-1e9f64..1e9).prop_map(Value::from),
            text.prop_map(Value::String),
        ];
        leaf.prop_recursive(3, 24, 4, move |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                proptest::collection::btree_map(text, inner, 0..4)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn the_rest_of_any_envelope_is_kept_as_it_was(
            others in proptest::collection::btree_map("[A-Za-z]{1,12}", json_value(), 0..5),
            nums in proptest::collection::vec(0u32..1000, 0..3),
            pretty in any::<bool>(),
        ) {
            let rest: serde_json::Map<String, Value> = others
                .into_iter()
                .filter(|(name, _)| name != "Items")
                .collect();
            let items = Value::Array(nums.iter().map(|n| issue(*n)).collect());
            let mut body = Value::Object(rest);
            body["Items"] = items.clone();
            let text = if pretty {
                serde_json::to_vec_pretty(&body).unwrap()
            } else {
                serde_json::to_vec(&body).unwrap()
            };
            let (envelope, lifted) = split(&text, Member::Items).unwrap();
            // Compared with serde_json's own reading of the same text, which rounds some
            // floats differently from the values it wrote.
            let mut expected = parse(&text);
            expected.as_object_mut().unwrap().remove("Items");
            prop_assert_eq!(parse(&envelope), expected);
            prop_assert_eq!(&lifted, &sdk_items(&items));
        }

        #[test]
        fn lifted_items_are_the_items_serde_dynamo_reads(
            nums in proptest::collection::vec(0u32..1000, 0..6),
            count in 0u32..10,
        ) {
            let items = Value::Array(nums.iter().map(|n| issue(*n)).collect());
            let body = json!({"Count": count, "Items": items.clone()});
            let pretty = serde_json::to_vec_pretty(&body).unwrap();
            for text in [body.to_string().into_bytes(), pretty] {
                let (envelope, lifted) = split(&text, Member::Items).unwrap();
                prop_assert_eq!(parse(&envelope), json!({"Count": count}));
                prop_assert_eq!(&lifted, &sdk_items(&items));
            }
        }
    }
}
