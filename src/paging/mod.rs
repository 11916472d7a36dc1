//! Keyset paging over `GSI1`: Relay-style page requests and the engine that walks one or more
//! index partitions ("segments") to fill a page; `cursor` owns the opaque cursors.
//!
//! A sorted list is a sequence of segments read in order: one partition for most sorts, two
//! for a custom-field sort (the rows that have a value, then the issues without one, found by
//! a filtered query). A [`Position`] names a row by its segment and its `GSI1` key, so a cursor
//! is an `ExclusiveStartKey` in disguise and every page is a keyset query, never a scan.

mod cursor;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use self::cursor::checked;
pub use self::cursor::{CursorKeys, Position, Scope};

use crate::store::{
    Filter, Index, Key, Query, RawItem, SortCondition, StartKey, Store, StoreError,
};

/// Page size when neither `first` nor `last` is given.
pub const DEFAULT_PAGE_SIZE: usize = 20;
/// The largest page a client may ask for.
pub const MAX_PAGE_SIZE: usize = 100;

/// Why a page request cannot be served.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PagingError {
    #[error("`{arg}` must be between 1 and {MAX_PAGE_SIZE}, got {value}")]
    PageSize { arg: &'static str, value: i64 },
    #[error("pass either `first` or `last`, not both")]
    FirstAndLast,
    #[error("`{arg}` is not a valid cursor: pass a cursor exactly as this API returned it")]
    MalformedCursor { arg: &'static str },
    #[error("`{arg}` is a cursor of another list or ordering: cursors only work with the connection and `orderBy` that produced them")]
    ForeignCursor { arg: &'static str },
}

/// Which way a page is read: `first`/`after` reads forward, `last`/`before` backward.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    Forward,
    Backward,
}

/// Relay's connection arguments as a client wrote them, not yet validated: one type that every
/// connection field's arguments contain (see `graphql::args`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct PageArgs {
    pub first: Option<i32>,
    pub after: Option<String>,
    pub last: Option<i32>,
    pub before: Option<String>,
}

impl PageArgs {
    /// The arguments' names in the schema, for checking that the schema's connections and
    /// this type name the same ones.
    pub const NAMES: [&'static str; 4] = ["first", "after", "last", "before"];
}

/// A validated page request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PageRequest {
    pub direction: Direction,
    pub size: usize,
    /// Rows strictly after this position (`after`).
    pub after: Option<Position>,
    /// Rows strictly before this position (`before`).
    pub before: Option<Position>,
}

impl PageRequest {
    /// Validates Relay connection arguments against a list's scope.
    pub fn from_args(scope: &Scope, args: &PageArgs) -> Result<Self, PagingError> {
        UncheckedRequest::from_args(&scope.keys, args)?.check(scope)
    }
}

/// Relay connection arguments whose cursors are known to be this server's but not yet known
/// to belong to the list they are used with: what a read may start from while the list's
/// owner (whose tenant names the list) is still loading. Nothing read with it may reach a
/// response before [`UncheckedRequest::check`] passes.
#[derive(Clone, Debug)]
pub struct UncheckedRequest {
    request: PageRequest,
    /// The list each cursor argument belongs to (its scope's digest), by argument.
    scopes: Vec<(&'static str, cursor::ScopeDigest)>,
}

impl UncheckedRequest {
    /// Validates page sizes and cursor signatures.
    pub fn from_args(keys: &CursorKeys, args: &PageArgs) -> Result<Self, PagingError> {
        let PageArgs {
            first,
            after,
            last,
            before,
        } = args;
        let (first, last) = (*first, *last);
        let (after, before) = (after.as_deref(), before.as_deref());
        let size = |arg, v: i32| {
            if (1..=MAX_PAGE_SIZE as i64).contains(&(v as i64)) {
                Ok(v as usize)
            } else {
                Err(PagingError::PageSize {
                    arg,
                    value: v as i64,
                })
            }
        };
        let (direction, size) = match (first, last) {
            (Some(_), Some(_)) => return Err(PagingError::FirstAndLast),
            (Some(n), None) => (Direction::Forward, size("first", n)?),
            (None, Some(n)) => (Direction::Backward, size("last", n)?),
            // Without a size, `before` alone means "the rows just before", as Relay clients
            // paging backward expect.
            (None, None) if before.is_some() && after.is_none() => {
                (Direction::Backward, DEFAULT_PAGE_SIZE)
            }
            (None, None) => (Direction::Forward, DEFAULT_PAGE_SIZE),
        };
        let mut scopes = Vec::new();
        let mut open = |arg, cursor: Option<&str>| -> Result<Option<Position>, PagingError> {
            let Some(cursor) = cursor else {
                return Ok(None);
            };
            let (scope, position) = keys.open(arg, cursor)?;
            scopes.push((arg, scope));
            checked(arg, position).map(Some)
        };
        let after = open("after", after)?;
        let before = open("before", before)?;
        Ok(UncheckedRequest {
            request: PageRequest {
                direction,
                size,
                after,
                before,
            },
            scopes,
        })
    }

    /// The request, to read with before it is checked.
    pub fn request(&self) -> &PageRequest {
        &self.request
    }

    /// The request, once every cursor is known to belong to the list of `scope`.
    pub fn check(self, scope: &Scope) -> Result<PageRequest, PagingError> {
        match self
            .scopes
            .iter()
            .find(|(_, digest)| digest != scope.digest())
        {
            Some((arg, _)) => Err(PagingError::ForeignCursor { arg }),
            None => Ok(self.request),
        }
    }
}

/// One partition of `GSI1` read as part of a sorted list.
#[derive(Clone, Debug)]
pub struct Segment {
    pub partition: String,
    /// The key condition on `GSI1SK`: the part of the partition the list covers (a range a
    /// filter puts on the sorted column), `Any` for all of it.
    pub sort: SortCondition,
    /// What this partition's `GSI1SK` has before a list position's (empty for most): a list
    /// that one plan reads from another partition than another plan (one state's rows under a
    /// num order: `state ␁ num` instead of `num`) names its positions as the other plan does,
    /// so its cursors stay valid whichever plan reads the next page.
    pub key_prefix: String,
    /// The list's sort direction within this segment: `true` for ascending `GSI1SK`.
    pub ascending: bool,
    /// Set for a segment whose rows are picked out by a filter (the empty cells of a
    /// custom-field sort); its reads are paid from the request's [`ReadBudget`].
    pub filter: Option<Filter>,
}

/// Bounds on the work of one request.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// The most items one request may read in filtered segments, over all the lists it pages,
    /// before those lists return what they have.
    pub max_filtered_reads: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_filtered_reads: 1000,
        }
    }
}

/// The filtered reads a request may still make, shared by every list it pages (so aliases or
/// many projects in one query cannot multiply the cap).
#[derive(Clone, Debug)]
pub struct ReadBudget(Arc<AtomicUsize>);

impl ReadBudget {
    pub fn new(limits: Limits) -> Self {
        ReadBudget(Arc::new(AtomicUsize::new(limits.max_filtered_reads)))
    }

    /// Reserves up to `wanted` reads before a query, so lists paged concurrently in one
    /// request can never overspend together; returns how many were granted.
    fn take(&self, wanted: usize) -> usize {
        // The closure always returns `Some`, so both arms carry the previous value.
        let before = match self
            .0
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |left| {
                Some(left.saturating_sub(wanted))
            }) {
            Ok(left) | Err(left) => left,
        };
        before.min(wanted)
    }

    /// Returns reads a query was granted but did not make.
    fn refund(&self, unused: usize) {
        self.0.fetch_add(unused, Ordering::Relaxed);
    }
}

/// Picks the rows of a list out of the rows its segments hold, for a list whose filter no key
/// condition answers in full (see `repo::plan`). The rows given are one query's, in list order;
/// the rows returned are those in the list, in the same order, each with the item its owner
/// decodes (which may be another item than the one read: the issue an index row names).
#[async_trait::async_trait]
pub trait Sieve: Send + Sync {
    async fn sift(&self, rows: Vec<Row>) -> Result<Vec<Row>, StoreError>;
}

/// One row of a page: its position and the index item read (projection ALL), as text for
/// the list's owner to decode typed.
#[derive(Clone, Debug)]
pub struct Row {
    pub position: Position,
    pub item: RawItem,
}

/// A page of rows in list order, with Relay's page info.
#[derive(Clone, Debug, Default)]
pub struct Page {
    pub rows: Vec<Row>,
    pub has_next: bool,
    pub has_previous: bool,
    /// Where a page cut short by the [`ReadBudget`] stopped reading (`None` only when it had
    /// read nothing at all: the client asks for the same page again). Continuing
    /// from here (as `after`, or `before` when paging backward) skips the rows already read.
    pub resume: Option<Position>,
    /// How many items the page's queries read, before any filter: what a filtered page cost
    /// against what it returned.
    pub scanned: usize,
}

/// Where an item read from `segment` lies in its list: its `PK` and `GSI1SK`. `None` for an
/// item without them (not in the index, so never read).
fn position_in(
    segment: usize,
    prefix: &str,
    item: &RawItem,
) -> Result<Option<Position>, StoreError> {
    let key = item
        .owned_index_key()
        .map_err(|e| StoreError::Corrupt(format!("an item read from GSI1: {e}")))?;
    Ok(key.map(|(pk, gsi1sk)| Position {
        segment,
        pk,
        gsi1sk: unprefixed(prefix, gsi1sk),
    }))
}

/// A partition's `GSI1SK` as a list position names it (see [`Segment::key_prefix`]).
fn unprefixed(prefix: &str, gsi1sk: String) -> String {
    match gsi1sk.strip_prefix(prefix) {
        Some(rest) if !prefix.is_empty() => rest.to_string(),
        _ => gsi1sk,
    }
}

/// Whether `position` lies at or past `bound` in the reading direction.
fn reached(segments: &[Segment], forward: bool, position: &Position, bound: &Position) -> bool {
    if forward {
        !precedes(segments, position, bound)
    } else {
        !precedes(segments, bound, position)
    }
}

/// Whether `a` comes before `b` in list order.
fn precedes(segments: &[Segment], a: &Position, b: &Position) -> bool {
    if a.segment != b.segment {
        return a.segment < b.segment;
    }
    let ascending = segments.get(a.segment).is_none_or(|s| s.ascending);
    let key_a = (a.gsi1sk.as_str(), a.pk.as_str());
    let key_b = (b.gsi1sk.as_str(), b.pk.as_str());
    if ascending {
        key_a < key_b
    } else {
        key_a > key_b
    }
}

/// A filtered query first asks for this many times the rows the page still needs; each further
/// query of the same page asks for this many times more than the last, so a column whose empty
/// cells are rare is searched in a few growing reads rather than many small ones.
const FILTERED_GROWTH: usize = 4;

impl PageRequest {
    /// Checks the request's positions against the list's segments: a cursor naming a segment
    /// the list does not have was not made by this API.
    ///
    /// A position must also lie within its segment's key condition: every position a list
    /// hands out does, and DynamoDB refuses a start key outside the condition (a cursor of
    /// another list whose scope digest collided would otherwise fail as an internal error).
    pub fn check_segments(&self, segments: &[Segment]) -> Result<(), PagingError> {
        for (arg, position) in [("after", &self.after), ("before", &self.before)] {
            let Some(position) = position else {
                continue;
            };
            let inside = segments.get(position.segment).is_some_and(|segment| {
                segment
                    .sort
                    .matches(&format!("{}{}", segment.key_prefix, position.gsi1sk))
            });
            if !inside {
                return Err(PagingError::MalformedCursor { arg });
            }
        }
        Ok(())
    }
}

fn position_of(segment: usize, prefix: &str, start: &StartKey) -> Position {
    Position {
        segment,
        pk: start.key.pk.clone(),
        gsi1sk: unprefixed(prefix, start.gsi1sk.clone().unwrap_or_default()),
    }
}

/// Reads one page of a list made of `segments` (positions checked with
/// [`PageRequest::check_segments`]), paying filtered reads from `budget`.
pub async fn fetch(
    store: &dyn Store,
    segments: &[Segment],
    request: &PageRequest,
    budget: &ReadBudget,
    sieve: Option<&dyn Sieve>,
) -> Result<Page, StoreError> {
    fetch_from(store, segments, request, budget, sieve, Page::default(), 0).await
}

/// Goes on with a forward page of which the first `done` segments were read to their end
/// (by [`fetch`] over those segments alone), giving `read`: the page [`fetch`] over all of
/// `segments` would have read, without reading the first ones again.
pub async fn fetch_rest(
    store: &dyn Store,
    segments: &[Segment],
    request: &PageRequest,
    budget: &ReadBudget,
    sieve: Option<&dyn Sieve>,
    read: Page,
    done: usize,
) -> Result<Page, StoreError> {
    fetch_from(store, segments, request, budget, sieve, read, done).await
}

/// [`fetch`], starting with the rows of `read` already read from the segments before `skip`
/// (forward only; zero and an empty page otherwise).
async fn fetch_from(
    store: &dyn Store,
    segments: &[Segment],
    request: &PageRequest,
    budget: &ReadBudget,
    sieve: Option<&dyn Sieve>,
    read: Page,
    skip: usize,
) -> Result<Page, StoreError> {
    let forward = request.direction == Direction::Forward;
    let (from, bound) = if forward {
        (request.after.as_ref(), request.before.as_ref())
    } else {
        (request.before.as_ref(), request.after.as_ref())
    };
    // One row more than asked tells whether there is a next page without another call.
    let want = request.size + 1;
    let order: Vec<usize> = if forward {
        (0..segments.len()).collect()
    } else {
        (0..segments.len()).rev().collect()
    };
    let first_segment = from.map(|p| p.segment);
    let mut rows = read.rows;
    let mut scanned = read.scanned;
    rows.reserve(want.saturating_sub(rows.len()));
    // Set when the read budget ran out before the list did; `resume` is where to go on from.
    let mut cut_short = false;
    let mut resume = None;

    'segments: for &index in &order {
        if forward && index < skip {
            continue;
        }
        if let Some(start_at) = first_segment {
            let skipped = if forward {
                index < start_at
            } else {
                index > start_at
            };
            if skipped {
                continue;
            }
        }
        let Some(segment) = segments.get(index) else {
            continue;
        };
        let prefix = segment.key_prefix.as_str();
        let mut start = from.filter(|p| p.segment == index).map(|p| StartKey {
            key: Key::new(p.pk.clone(), segment.partition.clone()),
            gsi1sk: Some(format!("{prefix}{}", p.gsi1sk)),
        });
        let mut ask: usize = 0;
        loop {
            let needed = want - rows.len();
            // Reads that may not all be in the list are paid from the budget, in growing
            // steps: a segment picked out by a filter, or any segment of a sifted list.
            let budgeted = segment.filter.is_some() || sieve.is_some();
            let limit = match budgeted {
                false => needed,
                true => {
                    ask = ask
                        .saturating_mul(FILTERED_GROWTH)
                        .max(needed * FILTERED_GROWTH);
                    let granted = budget.take(ask);
                    if granted == 0 {
                        // Go on next time from the last place this page knows: where this
                        // segment was entered, else its last row, else where it started.
                        cut_short = true;
                        resume = start
                            .as_ref()
                            .map(|s| position_of(index, prefix, s))
                            .or_else(|| rows.last().map(|r| r.position.clone()))
                            .or_else(|| from.cloned());
                        break 'segments;
                    }
                    granted
                }
            };
            let query = Query {
                index: Index::Gsi1,
                partition: segment.partition.clone(),
                sort: segment.sort.clone(),
                forward: segment.ascending == forward,
                limit: Some(limit as u32),
                start: start.clone(),
                filter: segment.filter.clone(),
                consistent: false,
            };
            let out = store.query_raw(&query).await;
            if budgeted {
                let scanned = out.as_ref().map_or(0, |o| o.scanned);
                budget.refund(limit.saturating_sub(scanned));
            }
            let out = out?;
            scanned += out.scanned;
            // The rows of this query up to the bound go on the page; in a sifted list, only
            // those the sieve keeps (the page's vector is the only one an unfiltered page fills).
            let first_read = rows.len();
            let mut bounded = false;
            for item in out.items {
                let Some(position) = position_in(index, prefix, &item)? else {
                    continue;
                };
                if bound.is_some_and(|b| reached(segments, forward, &position, b)) {
                    bounded = true;
                    break;
                }
                rows.push(Row { position, item });
                if sieve.is_none() && rows.len() == want {
                    break;
                }
            }
            if let Some(sieve) = sieve {
                let read = rows.split_off(first_read);
                rows.extend(sieve.sift(read).await?);
                rows.truncate(want);
            }
            if bounded || rows.len() == want {
                break 'segments;
            }
            match out.last_evaluated {
                None => break,
                Some(last) => {
                    // Reading on past the bound could only find rows outside the page.
                    let at = position_of(index, prefix, &last);
                    if bound.is_some_and(|b| reached(segments, forward, &at, b)) {
                        break 'segments;
                    }
                    start = Some(last);
                }
            }
        }
    }

    let more = rows.len() > request.size;
    rows.truncate(request.size);
    // A page cut short by the read budget may have more rows beyond where it stopped reading.
    let (has_next, has_previous) = if forward {
        (more || cut_short, request.after.is_some())
    } else {
        (request.before.is_some(), more || cut_short)
    };
    if !forward {
        rows.reverse();
    }
    Ok(Page {
        rows,
        has_next,
        has_previous,
        resume,
        scanned,
    })
}

/// A page of a list whose rows are all known without a read (one ascending segment, rows in
/// list order, each with its position): the page [`fetch`] would read from a partition that
/// held exactly these rows, with the same bounds and page info. For a list of the one row
/// a caller may see (a tenant's caller's list of tenants), which is read by key.
pub fn known_page<T>(rows: Vec<(Position, T)>, request: &PageRequest) -> KnownPage<T> {
    let forward = request.direction == Direction::Forward;
    let mut rows: Vec<(Position, T)> = rows
        .into_iter()
        .filter(|(p, _)| {
            request.after.as_ref().is_none_or(|a| precedes(&[], a, p))
                && request.before.as_ref().is_none_or(|b| precedes(&[], p, b))
        })
        .collect();
    // Reading backward takes the rows nearest `before`: the last ones.
    if !forward {
        rows.reverse();
    }
    let more = rows.len() > request.size;
    rows.truncate(request.size);
    if !forward {
        rows.reverse();
    }
    let (has_next, has_previous) = if forward {
        (more, request.after.is_some())
    } else {
        (request.before.is_some(), more)
    };
    KnownPage {
        rows,
        has_next,
        has_previous,
    }
}

/// A page made by [`known_page`]: its rows in list order, with Relay's page info.
#[derive(Clone, Debug)]
pub struct KnownPage<T> {
    pub rows: Vec<(Position, T)>,
    pub has_next: bool,
    pub has_previous: bool,
}

#[cfg(test)]
mod tests {
    use super::cursor::tests::scope;
    use super::*;

    /// A known page keeps `fetch`'s rules: bounds are exclusive, `last` takes the rows
    /// nearest `before`, and the page info is the same as a read page's.
    #[test]
    fn known_pages_follow_the_paging_rules() {
        let at = |k: &str| Position {
            segment: 0,
            pk: format!("pk-{k}"),
            gsi1sk: k.to_string(),
        };
        let rows = || vec![(at("a"), 1), (at("b"), 2), (at("c"), 3), (at("d"), 4)];
        let request = |direction, size, after: Option<&str>, before: Option<&str>| PageRequest {
            direction,
            size,
            after: after.map(at),
            before: before.map(at),
        };
        let values =
            |page: &KnownPage<i32>| -> Vec<i32> { page.rows.iter().map(|(_, v)| *v).collect() };
        let page = known_page(rows(), &request(Direction::Forward, 2, None, None));
        assert_eq!(
            (values(&page), page.has_next, page.has_previous),
            (vec![1, 2], true, false)
        );
        let page = known_page(rows(), &request(Direction::Forward, 2, Some("b"), None));
        assert_eq!(
            (values(&page), page.has_next, page.has_previous),
            (vec![3, 4], false, true)
        );
        let page = known_page(
            rows(),
            &request(Direction::Forward, 5, Some("a"), Some("d")),
        );
        assert_eq!(
            (values(&page), page.has_next, page.has_previous),
            (vec![2, 3], false, true)
        );
        let page = known_page(rows(), &request(Direction::Backward, 2, None, None));
        assert_eq!(
            (values(&page), page.has_next, page.has_previous),
            (vec![3, 4], false, true)
        );
        let page = known_page(rows(), &request(Direction::Backward, 2, None, Some("c")));
        assert_eq!(
            (values(&page), page.has_next, page.has_previous),
            (vec![1, 2], true, false)
        );
        let page = known_page(rows(), &request(Direction::Backward, 2, None, Some("a")));
        assert_eq!(
            (values(&page), page.has_next, page.has_previous),
            (vec![], true, false)
        );
    }
    #[test]
    fn page_sizes_are_validated() {
        let s = scope();
        let args = |first, last| PageArgs {
            first,
            last,
            ..PageArgs::default()
        };
        let ok = PageRequest::from_args(&s, &args(None, None)).unwrap();
        assert_eq!(
            (ok.direction, ok.size),
            (Direction::Forward, DEFAULT_PAGE_SIZE)
        );
        let back = PageRequest::from_args(&s, &args(None, Some(5))).unwrap();
        assert_eq!((back.direction, back.size), (Direction::Backward, 5));
        for bad in [0, -1, 101] {
            assert!(matches!(
                PageRequest::from_args(&s, &args(Some(bad), None)),
                Err(PagingError::PageSize { arg: "first", .. })
            ));
        }
        assert_eq!(
            PageRequest::from_args(&s, &args(Some(1), Some(1))),
            Err(PagingError::FirstAndLast)
        );
    }
}
