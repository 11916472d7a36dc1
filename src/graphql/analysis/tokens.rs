//! The token count of a query's raw text, taken before it is parsed and stopped at the limit.

use super::Refusal;

/// Counts the GraphQL lexical tokens of `query`, refusing it as soon as there are more than
/// `max`: the scan stops at the first token past the limit, however many follow it.
///
/// Tokens are the punctuators (`! $ & ( ) ... : = @ [ ] { | }`), names, numbers and strings
/// (block strings included); whitespace, commas, comments and the byte order mark are skipped.
/// The text has not been parsed yet, so anything goes: a character no token starts with counts
/// as a token of its own (the parser refuses it later), and an unterminated string counts as one
/// token that ends the scan.
pub fn count_tokens(query: &str, max: usize) -> Result<usize, Refusal> {
    let bytes = query.as_bytes();
    let mut pos = 0;
    let mut count = 0usize;
    while let Some(&byte) = bytes.get(pos) {
        match byte {
            b' ' | b'\t' | b'\n' | b'\r' | b',' => {
                pos += 1;
                continue;
            }
            b'#' => {
                pos = scan_while(bytes, pos + 1, |b| b != b'\n' && b != b'\r');
                continue;
            }
            0xEF if bytes.get(pos + 1..pos + 3) == Some(&[0xBB, 0xBF][..]) => {
                pos += 3;
                continue;
            }
            _ => {}
        }
        count += 1;
        if count > max {
            return Err(Refusal::TooManyTokens { max });
        }
        match token_end(bytes, pos) {
            Some(end) => pos = end,
            None => break,
        }
    }
    Ok(count)
}

/// The deepest nesting of brackets (`{`, `[`, `(`) in a query's text that is parsed at all:
/// the parser, the validation rules and the input checks each recurse once per level, so a
/// value nested a few hundred levels deep (`[[[[…]]]]`, `{not: {not: …}}`) overflowed a
/// worker's stack and aborted the process. No honest document comes near it: the grid page
/// nests 7 selection levels, GraphiQL's introspection query 15, and a filter at most 4
/// levels of two brackets each.
pub const MAX_NESTING: usize = 64;

/// Refuses `query` when its brackets nest deeper than `max`, scanning tokens as
/// [`count_tokens`] does (brackets inside strings and comments do not count); unbalanced
/// brackets are the parser's to refuse.
pub fn check_nesting(query: &str, max: usize) -> Result<(), Refusal> {
    let bytes = query.as_bytes();
    let mut pos = 0;
    let mut depth = 0usize;
    while let Some(&byte) = bytes.get(pos) {
        match byte {
            b'#' => {
                pos = scan_while(bytes, pos + 1, |b| b != b'\n' && b != b'\r');
                continue;
            }
            b'{' | b'[' | b'(' => {
                depth += 1;
                if depth > max {
                    return Err(Refusal::TooDeeplyNested { max });
                }
            }
            b'}' | b']' | b')' => depth = depth.saturating_sub(1),
            b' ' | b'\t' | b'\n' | b'\r' | b',' => {
                pos += 1;
                continue;
            }
            _ => {}
        }
        match token_end(bytes, pos) {
            Some(end) => pos = end.max(pos + 1),
            None => break,
        }
    }
    Ok(())
}

/// Where the token starting at `start` ends, or `None` when it is a string that never does.
fn token_end(bytes: &[u8], start: usize) -> Option<usize> {
    let at = |i: usize| bytes.get(i).copied();
    let end = match at(start)? {
        b'"' => return string_end(bytes, start),
        b'.' if at(start + 1) == Some(b'.') && at(start + 2) == Some(b'.') => start + 3,
        b'_' | b'A'..=b'Z' | b'a'..=b'z' => scan_while(bytes, start + 1, is_name_byte),
        b'-' | b'0'..=b'9' => number_end(bytes, start),
        // A character outside ASCII is one token, however many bytes UTF-8 spends on it.
        byte if byte >= 0x80 => scan_while(bytes, start + 1, |b| (0x80..0xC0).contains(&b)),
        // The punctuators, and any other ASCII character as a token of its own.
        _ => start + 1,
    };
    Some(end)
}

fn is_name_byte(byte: u8) -> bool {
    byte == b'_' || byte.is_ascii_alphanumeric()
}

/// The first index from `start` whose byte does not satisfy `keep`, or the text's end.
fn scan_while(bytes: &[u8], start: usize, keep: impl Fn(u8) -> bool) -> usize {
    let mut i = start;
    while bytes.get(i).is_some_and(|&b| keep(b)) {
        i += 1;
    }
    i
}

/// The end of an int or float value: `-?digits(.digits)?([eE][+-]?digits)?`. A lone `-` is a
/// token of one byte, as the parser will refuse it anyway.
fn number_end(bytes: &[u8], start: usize) -> usize {
    let at = |i: usize| bytes.get(i).copied();
    let digit = |i: usize| at(i).is_some_and(|b| b.is_ascii_digit());
    let mut i = start;
    if at(i) == Some(b'-') {
        i += 1;
    }
    i = scan_while(bytes, i, |b| b.is_ascii_digit());
    if at(i) == Some(b'.') && digit(i + 1) {
        i = scan_while(bytes, i + 1, |b| b.is_ascii_digit());
    }
    if matches!(at(i), Some(b'e' | b'E')) {
        let mut j = i + 1;
        if matches!(at(j), Some(b'+' | b'-')) {
            j += 1;
        }
        if digit(j) {
            i = scan_while(bytes, j, |b| b.is_ascii_digit());
        }
    }
    i.max(start + 1)
}

/// The end of the string starting at `start` (a `"` or `"""`), or `None` if it is unterminated.
fn string_end(bytes: &[u8], start: usize) -> Option<usize> {
    const TRIPLE: &[u8] = b"\"\"\"";
    if bytes.get(start..start + 3) == Some(TRIPLE) {
        // In a block string only `\"""` is an escape; every other backslash is literal.
        let mut i = start + 3;
        loop {
            match bytes.get(i)? {
                b'\\' if bytes.get(i + 1..i + 4) == Some(TRIPLE) => i += 4,
                b'"' if bytes.get(i..i + 3) == Some(TRIPLE) => return Some(i + 3),
                _ => i += 1,
            }
        }
    }
    let mut i = start + 1;
    loop {
        match bytes.get(i)? {
            b'\\' => i += 2,
            b'"' => return Some(i + 1),
            _ => i += 1,
        }
    }
}
