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

/// What a version 2 cursor says: the name of the list it belongs to and a position in it.
#[derive(Deserialize)]
struct CursorBodyV2 {
    #[serde(rename = "v")]
    version: u8,
    #[serde(rename = "l")]
    scope: String,
    #[serde(flatten)]
    position: Position,
}

/// Version 3: a binary body and a 128-bit tag, in one base64url string (see
/// [`Scope::cursor`]). Version 2 cursors (a JSON body naming the list, a dot, a full tag) are
/// still read, so cursors that clients hold survive an upgrade; version 1 cursors were
/// unsigned and are refused.
const CURSOR_VERSION: u8 = 3;
const CURSOR_VERSION_2: u8 = 2;
/// No list has more segments than this; a cursor naming a later one is forged.
const MAX_SEGMENTS: usize = 8;
/// DynamoDB's limit on a partition key value.
const MAX_PK_BYTES: usize = 2048;
/// The bytes of a list's digest in a cursor (see [`ScopeDigest`]).
const DIGEST_BYTES: usize = 8;
/// The bytes of HMAC-SHA256 a version 3 cursor keeps: the leftmost 128 bits, as RFC 2104
/// allows (truncation to at least half the hash), which is past any forging by guesswork.
const TAG_BYTES: usize = 16;
/// A version 3 body before its keys: version, list digest, segment and the length of `PK`.
const HEADER_BYTES: usize = 1 + DIGEST_BYTES + 1 + 4;

/// Which list a cursor belongs to: the first 8 bytes of the SHA-256 of the list's name.
///
/// A cursor carries this rather than the name (a tenant, a project, a field and an order,
/// about 130 bytes that every one of a page's cursors repeated), so it can tell a cursor of
/// another list (`ForeignCursor`) from a forged one. The tag covers it, so only this server
/// makes cursors with a given digest, and the names of two lists would have to collide in
/// 64 bits for a cursor of one to page the other; even then it would only be a start key
/// inside the list it is used with, since the query names that list's partition.
pub(super) type ScopeDigest = [u8; DIGEST_BYTES];

fn digest(name: &str) -> ScopeDigest {
    use sha2::Digest;
    let hash = sha2::Sha256::digest(name.as_bytes());
    let mut digest = [0; DIGEST_BYTES];
    digest.copy_from_slice(&hash[..DIGEST_BYTES]);
    digest
}

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

    /// Appends the kept part of the tag of `body` (all it holds) under the current key.
    fn sign_onto(&self, body: &mut Vec<u8>) {
        use hmac::Mac;
        if let Some(mac) = &self.current {
            let mut mac = mac.clone();
            mac.update(body);
            body.extend_from_slice(&mac.finalize().into_bytes()[..TAG_BYTES]);
        }
    }

    /// Whether `tag` is `body`'s tag under either key: the whole tag (version 2), or its
    /// leftmost [`TAG_BYTES`] (version 3, whose layout fixes the length).
    fn verify(&self, body: &[u8], tag: &[u8]) -> bool {
        use hmac::Mac;
        let check = |mac: &HmacSha256| {
            let mut mac = mac.clone();
            mac.update(body);
            // Constant-time comparison: a timing side channel must not help forge tags.
            if tag.len() == TAG_BYTES {
                mac.verify_truncated_left(tag).is_ok()
            } else {
                mac.verify_slice(tag).is_ok()
            }
        };
        self.current.as_ref().is_some_and(check) || self.previous.as_ref().is_some_and(check)
    }
}

/// The longest cursor accepted, refused before decoding: the longest any position can make.
/// A position holds at most a 2048-byte `PK` and a 1024-byte `GSI1SK`; a version 2 cursor's
/// JSON writes a control character as the 6 bytes `\u00XX`, and base64 adds a third:
/// (2048 + 1024) × 6 × 4/3 is about 24 KiB, plus the scope and the tag. (Real cursors are a
/// hundred-odd bytes; an 8 KiB cap once refused the cursor of an issue named with 500 control
/// characters.)
const MAX_CURSOR_BYTES: usize = 32 * 1024;

/// Identifies one sorted list (connection, owner and its tenant, ordering), so a cursor of
/// one list is never read as a position in another, and signs its cursors so a client can
/// neither forge nor edit one.
#[derive(Clone, Debug)]
pub struct Scope {
    name: String,
    digest: ScopeDigest,
    pub(super) keys: Arc<CursorKeys>,
}

impl Scope {
    pub fn new(name: String, keys: Arc<CursorKeys>) -> Self {
        Scope {
            digest: digest(&name),
            name,
            keys,
        }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub(super) fn digest(&self) -> &ScopeDigest {
        &self.digest
    }

    /// Encodes a position of this list as an opaque cursor: the base64url of a binary body
    /// and its tag,
    ///
    /// ```text
    /// 3 | digest of the list (8) | segment (1) | length of PK (4, big-endian) | PK | GSI1SK | tag (16)
    /// ```
    ///
    /// where the keys are their UTF-8 bytes and the tag is the leftmost 16 bytes of the
    /// body's HMAC-SHA256. A 50-row page once spent 17 KB of its 50 KB on cursors of about
    /// 350 characters (a JSON body naming the whole list, and a full tag); these are about
    /// 120, and take a third of the hashing and encoding.
    pub fn cursor(&self, position: &Position) -> String {
        let (pk, gsi1sk) = (position.pk.as_bytes(), position.gsi1sk.as_bytes());
        let mut bytes = Vec::with_capacity(HEADER_BYTES + pk.len() + gsi1sk.len() + TAG_BYTES);
        bytes.push(CURSOR_VERSION);
        bytes.extend_from_slice(&self.digest);
        // A segment or key too large for its field is written as one that `checked`
        // refuses, so every position still makes a cursor, as the contract of `cursor` is.
        bytes.push(u8::try_from(position.segment).unwrap_or(u8::MAX));
        let pk_len = u32::try_from(pk.len()).unwrap_or(u32::MAX);
        bytes.extend_from_slice(&pk_len.to_be_bytes());
        bytes.extend_from_slice(pk);
        bytes.extend_from_slice(gsi1sk);
        self.keys.sign_onto(&mut bytes);
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(&bytes)
    }

    /// Decodes a cursor, checking its signature and that it belongs to this list.
    pub fn position(&self, arg: &'static str, cursor: &str) -> Result<Position, PagingError> {
        let (digest, position) = self.keys.open(arg, cursor)?;
        if digest != self.digest {
            return Err(PagingError::ForeignCursor { arg });
        }
        checked(arg, position)
    }
}

impl CursorKeys {
    /// Decodes a cursor this server signed, without yet asking which list it belongs to:
    /// returns the digest of its list and the position (not yet checked, see [`checked`]).
    pub(super) fn open(
        &self,
        arg: &'static str,
        cursor: &str,
    ) -> Result<(ScopeDigest, Position), PagingError> {
        let malformed = PagingError::MalformedCursor { arg };
        if cursor.len() > MAX_CURSOR_BYTES {
            return Err(malformed);
        }
        let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
        if let Some((body, tag)) = cursor.split_once('.') {
            return self.open_v2(body, tag).ok_or(malformed);
        }
        let bytes = b64.decode(cursor).map_err(|_| malformed.clone())?;
        let Some(split) = bytes
            .len()
            .checked_sub(TAG_BYTES)
            .filter(|&n| n >= HEADER_BYTES)
        else {
            return Err(malformed);
        };
        let (body, tag) = bytes.split_at(split);
        if !self.verify(body, tag) {
            return Err(malformed);
        }
        read_body(body).ok_or(malformed)
    }

    /// A version 2 cursor: base64url(JSON body) . base64url(HMAC-SHA256 of the body).
    fn open_v2(&self, body: &str, tag: &str) -> Option<(ScopeDigest, Position)> {
        let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
        let json = b64.decode(body).ok()?;
        let tag = b64.decode(tag).ok()?;
        // The full tag only: a version 2 cursor cut to 16 bytes of tag is not one.
        if tag.len() == TAG_BYTES || !self.verify(&json, &tag) {
            return None;
        }
        let body: CursorBodyV2 = serde_json::from_slice(&json).ok()?;
        (body.version == CURSOR_VERSION_2).then(|| (digest(&body.scope), body.position))
    }
}

/// The list's digest and the position of a signed version 3 body (see [`Scope::cursor`]).
fn read_body(body: &[u8]) -> Option<(ScopeDigest, Position)> {
    let (&version, rest) = body.split_first()?;
    if version != CURSOR_VERSION {
        return None;
    }
    let (digest, rest) = rest.split_first_chunk::<DIGEST_BYTES>()?;
    let (&segment, rest) = rest.split_first()?;
    let (pk_len, rest) = rest.split_first_chunk::<4>()?;
    let pk_len = usize::try_from(u32::from_be_bytes(*pk_len)).ok()?;
    if pk_len > rest.len() {
        return None;
    }
    let (pk, gsi1sk) = rest.split_at(pk_len);
    let text = |bytes: &[u8]| std::str::from_utf8(bytes).ok().map(str::to_owned);
    Some((
        *digest,
        Position {
            segment: usize::from(segment),
            pk: text(pk)?,
            gsi1sk: text(gsi1sk)?,
        },
    ))
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

    const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::URL_SAFE_NO_PAD;

    /// A version 2 cursor, as servers before version 3 wrote them: base64url of the JSON body
    /// serde wrote, a dot, and base64url of its full HMAC-SHA256.
    fn v2_cursor(name: &str, key: &[u8], p: &Position) -> String {
        use hmac::{KeyInit, Mac};
        let json = serde_json::to_vec(&SerdeBody {
            version: 2,
            scope: name,
            position: p,
        })
        .unwrap();
        let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(key).unwrap();
        mac.update(&json);
        format!(
            "{}.{}",
            B64.encode(&json),
            B64.encode(mac.finalize().into_bytes())
        )
    }

    /// The body as serde wrote it before cursors were written by hand: the wire form of the
    /// version 2 cursors in clients' hands.
    #[derive(Serialize)]
    struct SerdeBody<'a> {
        #[serde(rename = "v")]
        version: u8,
        #[serde(rename = "l")]
        scope: &'a str,
        #[serde(flatten)]
        position: &'a Position,
    }

    #[test]
    fn the_longest_positions_make_cursors_that_read_back() {
        let p = Position {
            segment: 1,
            pk: "\u{1}".repeat(MAX_PK_BYTES),
            gsi1sk: "\u{1}".repeat(crate::sortkey::MAX_SORT_KEY_BYTES),
        };
        let c = scope().cursor(&p);
        assert_eq!(scope().position("after", &c).unwrap(), p);
        // Version 2 escaped control characters six times their size in JSON: its worst case
        // still fits the cap, so such a cursor in a client's hands still reads.
        let v2 = v2_cursor(scope().name(), b"current key", &p);
        assert!(
            v2.len() > 8 * 1024 && v2.len() <= MAX_CURSOR_BYTES,
            "{}",
            v2.len()
        );
        assert_eq!(scope().position("after", &v2).unwrap(), p);
    }

    /// A cursor is exactly base64url(3, digest of the list, segment, length of PK, PK,
    /// GSI1SK, the first 16 bytes of their HMAC-SHA256), so every instance of one version
    /// reads every other's; and the version 2 cursors clients hold still read.
    #[test]
    fn cursors_keep_their_wire_form() {
        use hmac::{KeyInit, Mac};
        use sha2::Digest;
        let p = Position {
            segment: 1,
            pk: "issue-1".into(),
            gsi1sk: "v\u{1}0000000001".into(),
        };
        let mut body = vec![3];
        body.extend_from_slice(&sha2::Sha256::digest(b"issues|project-1|NUM|ASC")[..8]);
        body.extend_from_slice(&[1, 0, 0, 0, 7]);
        body.extend_from_slice(b"issue-1v\x010000000001");
        let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(b"current key").unwrap();
        mac.update(&body);
        body.extend_from_slice(&mac.finalize().into_bytes()[..16]);
        let c = scope().cursor(&p);
        assert_eq!(c, B64.encode(&body));
        assert_eq!(c.len(), 66);
        assert_eq!(scope().position("after", &c), Ok(p.clone()));
        let v2 = v2_cursor(scope().name(), b"current key", &p);
        assert_eq!(
            v2,
            "eyJ2IjoyLCJsIjoiaXNzdWVzfHByb2plY3QtMXxOVU18QVNDIiwicyI6MSwiayI6Imlzc3VlLTEiLCJnIjoidlx1MDAwMTAwMDAwMDAwMDEifQ.\
             nqHO3glP61zG5RT-gfTPtOTV6mmEk6QjC2MYyZhdmJA"
        );
        assert_eq!(scope().position("after", &v2), Ok(p));
    }

    #[test]
    fn cursors_are_signed_and_keys_rotate() {
        let p = Position {
            segment: 0,
            pk: "issue-1".into(),
            gsi1sk: "0000000001".into(),
        };
        let c = scope().cursor(&p);
        let refused = Err(PagingError::MalformedCursor { arg: "after" });
        // Any change to the body or the tag is refused, and so is a shortened tag.
        let bytes = B64.decode(&c).unwrap();
        for at in 0..bytes.len() {
            let mut edited = bytes.clone();
            edited[at] ^= 0x20;
            assert_eq!(scope().position("after", &B64.encode(&edited)), refused);
        }
        for cut in 1..=TAG_BYTES {
            let short = &bytes[..bytes.len() - cut];
            assert_eq!(scope().position("after", &B64.encode(short)), refused);
        }
        // A version 2 cursor needs its whole tag: cut to a version 3 tag's length, it is not
        // one.
        let v2 = v2_cursor(scope().name(), b"current key", &p);
        let (json, tag) = v2.split_once('.').unwrap();
        let tag = B64.decode(tag).unwrap();
        let cut = format!("{json}.{}", B64.encode(&tag[..TAG_BYTES]));
        assert_eq!(scope().position("after", &cut), refused);
        // Another server key does not accept it; a rotated one (as previous) still does.
        let other = Scope::new(
            scope().name().into(),
            Arc::new(CursorKeys::new(b"new".to_vec(), None)),
        );
        assert!(other.position("after", &c).is_err());
        assert!(other.position("after", &v2).is_err());
        let rotated = Scope::new(
            scope().name().into(),
            Arc::new(CursorKeys::new(
                b"new".to_vec(),
                Some(b"current key".to_vec()),
            )),
        );
        assert_eq!(rotated.position("after", &c).unwrap(), p);
        assert_eq!(rotated.position("after", &v2).unwrap(), p);
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

    proptest::proptest! {
        /// For any list name and position (quotes, backslashes, control characters, any
        /// Unicode), a cursor reads back in its list and only there, and the version 2
        /// cursor of the same position reads back alike.
        #[test]
        fn cursors_of_both_versions_read_back(
            name in "(\\PC|[\"\\\\\\x00-\\x1f])*",
            other in "(\\PC|[\"\\\\\\x00-\\x1f])*",
            segment in 0usize..MAX_SEGMENTS,
            pk in "(\\PC|[\"\\\\\\x00-\\x1f]){1,40}",
            gsi1sk in "(\\PC|[\"\\\\\\x00-\\x1f]){1,40}",
        ) {
            let scope = Scope::new(name.clone(), keys());
            let position = Position { segment, pk, gsi1sk };
            let v2 = v2_cursor(&name, b"current key", &position);
            for cursor in [scope.cursor(&position), v2] {
                proptest::prop_assert_eq!(scope.position("after", &cursor), Ok(position.clone()));
                if other != name {
                    proptest::prop_assert_eq!(
                        Scope::new(other.clone(), keys()).position("after", &cursor),
                        Err(PagingError::ForeignCursor { arg: "after" })
                    );
                }
            }
        }
    }
}
