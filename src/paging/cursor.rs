//! Cursors: a row's [`Position`] in a sorted list, signed with the server's [`CursorKeys`]
//! into an opaque string for one list ([`Scope`]), and read back only when the signature and
//! the list match and the position is one DynamoDB would accept.

use std::sync::Arc;

use base64::Engine;
use serde::{Deserialize, Serialize};

use super::PagingError;

/// A row's place in a sorted list.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Position {
    #[serde(rename = "s")]
    pub segment: usize,
    #[serde(rename = "k")]
    pub pk: String,
    #[serde(rename = "g")]
    pub gsi1sk: String,
}

/// What a cursor says: the list it belongs to and a position in it.
#[derive(Deserialize)]
struct CursorBody {
    #[serde(rename = "v")]
    version: u8,
    #[serde(rename = "l")]
    scope: String,
    #[serde(flatten)]
    position: Position,
}

/// Version 2: signed cursors (version 1 cursors were unsigned and are refused).
const CURSOR_VERSION: u8 = 2;
/// No list has more segments than this; a cursor naming a later one is forged.
const MAX_SEGMENTS: usize = 8;
/// DynamoDB's limit on a partition key value.
const MAX_PK_BYTES: usize = 2048;

/// The server's keys for authenticating cursors: cursors are signed with `current`, and
/// accepted when signed with `current` or `previous`, so keys rotate without breaking the
/// cursors clients hold (set the old key as previous, a new one as current, on every
/// instance; drop the previous key once cursors signed with it have aged out).
///
/// Each key is kept as HMAC's keyed state (the hashed inner and outer pads), cloned for every
/// tag: a page signs a cursor per row, and keying HMAC again each time doubled the hashing.
#[derive(Clone)]
pub struct CursorKeys {
    current: Option<HmacSha256>,
    previous: Option<HmacSha256>,
}

type HmacSha256 = hmac::Hmac<sha2::Sha256>;

/// HMAC's keyed state for `key`; HMAC takes keys of any length, so this is never `None`.
fn keyed(key: &[u8]) -> Option<HmacSha256> {
    use hmac::KeyInit;
    HmacSha256::new_from_slice(key).ok()
}

impl std::fmt::Debug for CursorKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CursorKeys(..)")
    }
}

impl CursorKeys {
    pub fn new(current: impl Into<Vec<u8>>, previous: Option<Vec<u8>>) -> Self {
        CursorKeys {
            current: keyed(&current.into()),
            previous: previous.as_deref().and_then(keyed),
        }
    }

    /// A random key for this process alone: cursors then only work on the instance that
    /// issued them, which is right for one local server and wrong behind a load balancer
    /// (configure `--cursor-key` there).
    pub fn random() -> Self {
        let key: [u8; 32] = rand::random();
        CursorKeys::new(key.to_vec(), None)
    }

    /// The tag of `body` under the current key, base64url-encoded onto `out`.
    fn sign_onto(&self, body: &[u8], out: &mut String) {
        use hmac::Mac;
        if let Some(mac) = &self.current {
            let mut mac = mac.clone();
            mac.update(body);
            base64::engine::general_purpose::URL_SAFE_NO_PAD
                .encode_string(mac.finalize().into_bytes(), out);
        }
    }

    fn verify(&self, body: &[u8], tag: &[u8]) -> bool {
        use hmac::Mac;
        let check = |mac: &HmacSha256| {
            let mut mac = mac.clone();
            mac.update(body);
            // Constant-time comparison: a timing side channel must not help forge tags.
            mac.verify_slice(tag).is_ok()
        };
        self.current.as_ref().is_some_and(check) || self.previous.as_ref().is_some_and(check)
    }
}

/// The longest cursor accepted, refused before decoding: the longest any position can make.
/// A position holds at most a 2048-byte `PK` and a 1024-byte `GSI1SK`; JSON writes a control
/// character as the 6 bytes `\u00XX`, and base64 adds a third: (2048 + 1024) × 6 × 4/3 is
/// about 24 KiB, plus the scope and the tag. (Real cursors are a few hundred bytes; an 8 KiB
/// cap once refused the cursor of an issue named with 500 control characters.)
const MAX_CURSOR_BYTES: usize = 32 * 1024;

/// Identifies one sorted list (connection, owner and its tenant, ordering), so a cursor of
/// one list is never read as a position in another, and signs its cursors so a client can
/// neither forge nor edit one.
#[derive(Clone, Debug)]
pub struct Scope {
    name: String,
    /// The start of every cursor body of this list, `{"v":2,"l":"<name>",`: written once
    /// here rather than serialized again for every row of every page.
    body_prefix: Vec<u8>,
    pub(super) keys: Arc<CursorKeys>,
}

impl Scope {
    pub fn new(name: String, keys: Arc<CursorKeys>) -> Self {
        let mut body_prefix = format!("{{\"v\":{CURSOR_VERSION},\"l\":").into_bytes();
        // Writing a string into a `Vec` cannot fail.
        let _ = serde_json::to_writer(&mut body_prefix, &name);
        body_prefix.push(b',');
        Scope {
            name,
            body_prefix,
            keys,
        }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// Encodes a position of this list as an opaque cursor: the body's base64url, a dot, and
    /// the base64url of its HMAC-SHA256.
    ///
    /// The body is the JSON of `CursorBody` with its members in declaration order, written
    /// by hand (serde's `flatten` goes through a map serializer for every row); strings take
    /// serde_json's escaping, so the text is what `serde_json` would write.
    pub fn cursor(&self, position: &Position) -> String {
        let mut json = Vec::with_capacity(
            self.body_prefix.len() + position.pk.len() + position.gsi1sk.len() + 24,
        );
        json.extend_from_slice(&self.body_prefix);
        json.extend_from_slice(b"\"s\":");
        // Writing numbers and strings into a `Vec` cannot fail.
        let _ = serde_json::to_writer(&mut json, &position.segment);
        json.extend_from_slice(b",\"k\":");
        let _ = serde_json::to_writer(&mut json, &position.pk);
        json.extend_from_slice(b",\"g\":");
        let _ = serde_json::to_writer(&mut json, &position.gsi1sk);
        json.push(b'}');
        let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
        // base64 of the body, the dot, and 43 characters of tag.
        let mut cursor = String::with_capacity(json.len() * 4 / 3 + 48);
        b64.encode_string(&json, &mut cursor);
        cursor.push('.');
        self.keys.sign_onto(&json, &mut cursor);
        cursor
    }

    /// Decodes a cursor, checking its signature and that it belongs to this list.
    pub fn position(&self, arg: &'static str, cursor: &str) -> Result<Position, PagingError> {
        let (scope, position) = self.keys.open(arg, cursor)?;
        if scope != self.name {
            return Err(PagingError::ForeignCursor { arg });
        }
        checked(arg, position)
    }
}

impl CursorKeys {
    /// Decodes a cursor this server signed, without yet asking which list it belongs to:
    /// returns the name of its list's scope and the position (not yet checked, see
    /// [`checked`]).
    pub(super) fn open(
        &self,
        arg: &'static str,
        cursor: &str,
    ) -> Result<(String, Position), PagingError> {
        let malformed = PagingError::MalformedCursor { arg };
        if cursor.len() > MAX_CURSOR_BYTES {
            return Err(malformed);
        }
        let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
        let (body, tag) = cursor.split_once('.').ok_or_else(|| malformed.clone())?;
        let json = b64.decode(body).map_err(|_| malformed.clone())?;
        let tag = b64.decode(tag).map_err(|_| malformed.clone())?;
        if !self.verify(&json, &tag) {
            return Err(malformed);
        }
        let body: CursorBody = serde_json::from_slice(&json).map_err(|_| malformed.clone())?;
        if body.version != CURSOR_VERSION {
            return Err(malformed);
        }
        Ok((body.scope, body.position))
    }
}

/// Even a signed cursor's position is checked: a key DynamoDB would reject must never reach it.
pub(super) fn checked(arg: &'static str, position: Position) -> Result<Position, PagingError> {
    let p = &position;
    let plausible = p.segment < MAX_SEGMENTS
        && !p.pk.is_empty()
        && p.pk.len() <= MAX_PK_BYTES
        && !p.gsi1sk.is_empty()
        && p.gsi1sk.len() <= crate::sortkey::MAX_SORT_KEY_BYTES;
    if plausible {
        Ok(position)
    } else {
        Err(PagingError::MalformedCursor { arg })
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn keys() -> Arc<CursorKeys> {
        Arc::new(CursorKeys::new(b"current key".to_vec(), None))
    }

    pub(crate) fn scope() -> Scope {
        Scope::new("issues|project-1|NUM|ASC".into(), keys())
    }

    #[test]
    fn the_longest_positions_make_cursors_that_read_back() {
        // Control characters are escaped by JSON six times their size: the worst case.
        let p = Position {
            segment: 1,
            pk: "\u{1}".repeat(MAX_PK_BYTES),
            gsi1sk: "\u{1}".repeat(crate::sortkey::MAX_SORT_KEY_BYTES),
        };
        let c = scope().cursor(&p);
        assert!(c.len() > 8 * 1024, "{}", c.len());
        assert_eq!(scope().position("after", &c).unwrap(), p);
    }

    /// A cursor is exactly base64url(JSON body) . base64url(HMAC-SHA256(key, JSON body)), so
    /// cursors issued before a rolling upgrade still open after it, and the other way round.
    #[test]
    fn cursors_keep_their_wire_form() {
        use hmac::{KeyInit, Mac};
        let p = Position {
            segment: 1,
            pk: "issue-1".into(),
            gsi1sk: "v\u{1}0000000001".into(),
        };
        let c = scope().cursor(&p);
        let json = br#"{"v":2,"l":"issues|project-1|NUM|ASC","s":1,"k":"issue-1","g":"v\u00010000000001"}"#;
        let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(b"current key").unwrap();
        mac.update(json);
        let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
        let expected = format!(
            "{}.{}",
            b64.encode(json),
            b64.encode(mac.finalize().into_bytes())
        );
        assert_eq!(c, expected);
        assert_eq!(scope().position("after", &c), Ok(p));
    }

    #[test]
    fn cursors_are_signed_and_keys_rotate() {
        let p = Position {
            segment: 0,
            pk: "issue-1".into(),
            gsi1sk: "0000000001".into(),
        };
        let c = scope().cursor(&p);
        // Any change to the body or the tag is refused.
        let (body, tag) = c.split_once('.').unwrap();
        let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
        let mut json = b64.decode(body).unwrap();
        let at = json.iter().position(|b| *b == b'1').unwrap();
        json[at] = b'2';
        let edited = format!("{}.{tag}", b64.encode(&json));
        assert_eq!(
            scope().position("after", &edited),
            Err(PagingError::MalformedCursor { arg: "after" })
        );
        assert!(scope().position("after", body).is_err());
        // Another server key does not accept it; a rotated one (as previous) still does.
        let other = Scope::new(
            scope().name().into(),
            Arc::new(CursorKeys::new(b"new".to_vec(), None)),
        );
        assert!(other.position("after", &c).is_err());
        let rotated = Scope::new(
            scope().name().into(),
            Arc::new(CursorKeys::new(
                b"new".to_vec(),
                Some(b"current key".to_vec()),
            )),
        );
        assert_eq!(rotated.position("after", &c).unwrap(), p);
    }

    #[test]
    fn cursors_round_trip_and_are_scoped() {
        let p = Position {
            segment: 1,
            pk: "issue-1".into(),
            gsi1sk: "0000000001".into(),
        };
        let c = scope().cursor(&p);
        assert_eq!(scope().position("after", &c).unwrap(), p);
        let other = Scope::new("issues|project-1|NUM|DESC".into(), keys());
        assert_eq!(
            other.position("after", &c),
            Err(PagingError::ForeignCursor { arg: "after" })
        );
        assert_eq!(
            scope().position("before", "not a cursor"),
            Err(PagingError::MalformedCursor { arg: "before" })
        );
        // Well-formed JSON with a position no store could take.
        for forged in [
            Position {
                segment: 0,
                pk: String::new(),
                gsi1sk: "1".into(),
            },
            Position {
                segment: 0,
                pk: "issue-1".into(),
                gsi1sk: String::new(),
            },
            Position {
                segment: 99,
                pk: "issue-1".into(),
                gsi1sk: "1".into(),
            },
            Position {
                segment: 0,
                pk: "issue-1".into(),
                gsi1sk: "x".repeat(1025),
            },
        ] {
            assert_eq!(
                scope().position("after", &scope().cursor(&forged)),
                Err(PagingError::MalformedCursor { arg: "after" })
            );
        }
    }

    /// The body as serde wrote it before cursors were written by hand: the wire form that
    /// cursors in clients' hands have.
    #[derive(Serialize)]
    struct SerdeBody<'a> {
        #[serde(rename = "v")]
        version: u8,
        #[serde(rename = "l")]
        scope: &'a str,
        #[serde(flatten)]
        position: &'a Position,
    }

    proptest::proptest! {
        /// A hand-written cursor body is serde's, byte for byte, for any list name and
        /// position (quotes, backslashes, control characters, any Unicode), and reads back.
        #[test]
        fn cursor_bodies_are_what_serde_writes(
            name in "(\\PC|[\"\\\\\\x00-\\x1f])*",
            segment in 0usize..MAX_SEGMENTS,
            pk in "(\\PC|[\"\\\\\\x00-\\x1f]){1,40}",
            gsi1sk in "(\\PC|[\"\\\\\\x00-\\x1f]){1,40}",
        ) {
            let scope = Scope::new(name.clone(), keys());
            let position = Position { segment, pk, gsi1sk };
            let cursor = scope.cursor(&position);
            let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
            let body = b64.decode(cursor.split_once('.').unwrap().0).unwrap();
            let expected = serde_json::to_vec(&SerdeBody {
                version: CURSOR_VERSION,
                scope: &name,
                position: &position,
            })
            .unwrap();
            proptest::prop_assert_eq!(body, expected);
            proptest::prop_assert_eq!(scope.position("after", &cursor), Ok(position));
        }
    }
}
