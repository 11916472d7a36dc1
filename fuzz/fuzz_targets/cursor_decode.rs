//! Fuzzes `gridgate::paging::Scope::position`, the decoder of the opaque Relay cursors clients
//! send back: any text is answered with a position or an error, never a panic; a cursor the
//! scope made reads back as the position it was made of; any one-byte edit of it is refused;
//! and a body signed with the server's key (which no client can do) is still checked: it is
//! accepted exactly when its version, scope and position are right (version 2 JSON bodies,
//! still read) or plausible (version 3 binary bodies, the form cursors take now).
#![no_main]

use std::sync::Arc;

use arbitrary::Arbitrary;
use base64::Engine;
use gridgate::paging::{CursorKeys, PagingError, Position, Scope};
use libfuzzer_sys::fuzz_target;

/// `paging`'s private bounds on a position, restated: segments per list, partition key bytes.
const MAX_SEGMENTS: usize = 8;
const MAX_PK_BYTES: usize = 2048;
const MAX_SORT_KEY_BYTES: usize = gridgate::sortkey::MAX_SORT_KEY_BYTES;

#[derive(Debug, Arbitrary)]
enum Input {
    /// Any text as a cursor.
    Raw {
        scope: String,
        key: Vec<u8>,
        cursor: String,
    },
    /// A position of a list, encoded, decoded and then edited at one byte.
    RoundTrip {
        scope: String,
        key: Vec<u8>,
        segment: u8,
        pk: String,
        gsi1sk: String,
        edit: Edit,
        other_scope: String,
    },
    /// A body in the cursor's JSON shape, signed with the key as the server would sign it.
    Signed {
        scope: String,
        key: Vec<u8>,
        version: u8,
        same_scope: bool,
        other_scope: String,
        segment: u64,
        pk: String,
        gsi1sk: String,
    },
    /// Any bytes as a signed body.
    SignedRaw {
        scope: String,
        key: Vec<u8>,
        json: Vec<u8>,
    },
    /// Any bytes as a signed version 3 (binary) body.
    SignedV3 {
        scope: String,
        key: Vec<u8>,
        body: Vec<u8>,
    },
}

#[derive(Debug, Arbitrary)]
enum Edit {
    Replace { at: u16, byte: u8 },
    Delete { at: u16 },
    Insert { at: u16, byte: u8 },
}

fn scope(name: &str, key: &[u8]) -> Scope {
    Scope::new(
        name.to_owned(),
        Arc::new(CursorKeys::new(key.to_vec(), None)),
    )
}

fn plausible(p: &Position) -> bool {
    p.segment < MAX_SEGMENTS
        && !p.pk.is_empty()
        && p.pk.len() <= MAX_PK_BYTES
        && !p.gsi1sk.is_empty()
        && p.gsi1sk.len() <= MAX_SORT_KEY_BYTES
}

/// A version 2 cursor (JSON body, dot, full tag) as servers signed them, for any body.
fn sign(key: &[u8], json: &[u8]) -> String {
    use hmac::{KeyInit, Mac};
    let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(key).expect("HMAC takes any key");
    mac.update(json);
    let tag = mac.finalize().into_bytes();
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    format!("{}.{}", b64.encode(json), b64.encode(tag))
}

/// A version 3 cursor as `Scope::cursor` signs it: base64url of the body and the first 16
/// bytes of its HMAC-SHA256.
fn sign_v3(key: &[u8], body: &[u8]) -> String {
    use hmac::{KeyInit, Mac};
    let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(key).expect("HMAC takes any key");
    mac.update(body);
    let mut bytes = body.to_vec();
    bytes.extend_from_slice(&mac.finalize().into_bytes()[..16]);
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

fn edited(cursor: &str, edit: &Edit) -> Option<String> {
    let mut bytes = cursor.as_bytes().to_vec();
    let len = bytes.len();
    match *edit {
        Edit::Replace { at, byte } => {
            let at = usize::from(at) % len;
            if bytes[at] == byte {
                return None;
            }
            bytes[at] = byte;
        }
        Edit::Delete { at } => {
            bytes.remove(usize::from(at) % len);
        }
        Edit::Insert { at, byte } => bytes.insert(usize::from(at) % (len + 1), byte),
    }
    String::from_utf8(bytes).ok()
}

fuzz_target!(|input: Input| match input {
    Input::Raw {
        scope: name,
        key,
        cursor,
    } => {
        // Without the key nothing gets past the signature check.
        let _ = scope(&name, &key).position("after", &cursor);
    }
    Input::RoundTrip {
        scope: name,
        key,
        segment,
        pk,
        gsi1sk,
        edit,
        other_scope,
    } => {
        let s = scope(&name, &key);
        let p = Position {
            segment: usize::from(segment),
            pk,
            gsi1sk,
        };
        let cursor = s.cursor(&p);
        let decoded = s.position("after", &cursor);
        if plausible(&p) {
            // Once failed (with `-max_len=12000 -len_control=0`) while the cursor cap was
            // 8 KiB: JSON writes each control character of a key as a 6-byte `\u00XX`.
            assert_eq!(
                decoded.as_ref(),
                Ok(&p),
                "a cursor of a plausible position ({} bytes) does not read back",
                cursor.len()
            );
            // After a key rotation the old key still reads it.
            let rotated = Scope::new(
                name.clone(),
                Arc::new(CursorKeys::new(b"the next key".to_vec(), Some(key.clone()))),
            );
            assert_eq!(rotated.position("before", &cursor).as_ref(), Ok(&p));
            if other_scope != name {
                assert_eq!(
                    scope(&other_scope, &key).position("after", &cursor),
                    Err(PagingError::ForeignCursor { arg: "after" })
                );
            }
        } else {
            assert_eq!(decoded, Err(PagingError::MalformedCursor { arg: "after" }));
        }
        if let Some(forged) = edited(&cursor, &edit) {
            assert!(
                s.position("after", &forged).is_err(),
                "an edited cursor was accepted: {forged:?} (from {cursor:?})"
            );
        }
    }
    Input::Signed {
        scope: name,
        key,
        version,
        same_scope,
        other_scope,
        segment,
        pk,
        gsi1sk,
    } => {
        // Mostly the current version, so the checks behind it are reached.
        let version = if version < 200 { 2 } else { version };
        let list = if same_scope {
            name.clone()
        } else {
            other_scope
        };
        let json = serde_json::json!({
            "v": version, "l": list, "s": segment, "k": pk, "g": gsi1sk,
        });
        let json = serde_json::to_vec(&json).expect("JSON values serialize");
        let cursor = sign(&key, &json);
        let got = scope(&name, &key).position("after", &cursor);
        let position = usize::try_from(segment).ok().map(|segment| Position {
            segment,
            pk,
            gsi1sk,
        });
        // Version 2 cursors are still read, up to the decoder's 32 KiB cap.
        let expected = if version != 2 || cursor.len() > 32 * 1024 {
            Err(PagingError::MalformedCursor { arg: "after" })
        } else if list != name {
            Err(PagingError::ForeignCursor { arg: "after" })
        } else {
            match position {
                Some(p) if plausible(&p) => Ok(p),
                _ => Err(PagingError::MalformedCursor { arg: "after" }),
            }
        };
        assert_eq!(got, expected);
    }
    Input::SignedRaw {
        scope: name,
        key,
        json,
    } => {
        let s = scope(&name, &key);
        if let Ok(p) = s.position("after", &sign(&key, &json)) {
            // Whatever the body said, only a plausible position comes out, and it round-trips.
            assert!(plausible(&p), "{p:?}");
            assert_eq!(s.position("after", &s.cursor(&p)), Ok(p));
        }
    }
    Input::SignedV3 {
        scope: name,
        key,
        body,
    } => {
        let s = scope(&name, &key);
        if let Ok(p) = s.position("after", &sign_v3(&key, &body)) {
            assert!(plausible(&p), "{p:?}");
            assert_eq!(s.position("after", &s.cursor(&p)), Ok(p));
        }
    }
});
