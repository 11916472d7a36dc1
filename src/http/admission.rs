//! Admission: whether a GraphQL request may start now, decided once its caller is known.
//!
//! Under `--auth jwt` every caller has its own share of the server: a tenant (from its verified
//! token), or the unauthenticated traffic (requests whose credentials fail) as one more
//! caller. A share is two bounds:
//!
//! - **requests in flight** ([`Shares::caller_in_flight`]): past it the caller gets 429 at once,
//!   so one caller can never hold more than its share of the server's own in-flight limit; and
//!   the last eighth of the server's places is kept for callers with nothing in flight, so a few
//!   busy callers, each within its share, cannot fill the server and leave the others 503;
//! - **a token bucket of requests** ([`Shares::rate`]): a sustained rate with a burst, kept by
//!   `governor` (GCRA) per caller; past it the caller gets 429 with `Retry-After` saying when
//!   its next request would be admitted;
//! - **a token bucket of query cost** ([`Shares::cost_rate`]): GraphQL requests differ a
//!   thousandfold in what they make the server do, so counting requests alone would let a
//!   caller of the heaviest queries take the server. Each request is charged its estimated cost
//!   (`graphql::analysis`, the same figure the cost limit judges) once it is parsed and priced,
//!   before anything runs; past the bucket, 429 with `Retry-After`, as GitHub's and Shopify's
//!   GraphQL APIs do with their points.
//!
//! The server's in-flight limit still bounds everyone together (503, as before). It is checked
//! last, so a caller refused its share never holds a server permit, not even for a moment.
//! Under `--auth none` (local development, one operator who sees every tenant) there are no
//! callers to be fair between, so only the server's limit applies.
//!
//! **Exports** (`GET /export`, see `http::export`) hold their place for as long as they stream,
//! minutes where a request takes milliseconds, so they have places of their own
//! ([`ExportSlots`]) beside the in-flight ones they also take: a few per caller (429 past it)
//! and a few for the whole server (503), under `--auth none` only the latter.
//!
//! A caller's in-flight count lives only while it has requests in flight (the map holds no
//! idle caller), and the buckets of idle callers are dropped every [`RETAIN_EVERY`] checks,
//! so memory follows the callers active now. Only a verified token names a tenant, so no
//! client can mint callers to fill either map.

use std::collections::HashMap;
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::auth::Access;
use crate::ids::TenantId;

/// Whose share a request is counted in.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Caller {
    Tenant(TenantId),
    /// Requests whose credentials fail under `--auth jwt`: refused anyway, but their bucket
    /// decides whether with a 401 or, once a flood has emptied it, a cheap 429.
    Unauthenticated,
}

impl Caller {
    /// The caller whose share a request with `access` is counted in: its tenant, or none for
    /// unrestricted access (`--auth none`, the operator's own tools), which has the whole
    /// server.
    pub fn of(access: &Access) -> Option<Caller> {
        match access {
            Access::Tenant(principal) => Some(Caller::Tenant(principal.tenant.clone())),
            Access::Unrestricted => None,
        }
    }

    /// The metrics' `caller` label: a bounded set, never the tenant's id.
    pub fn kind(&self) -> &'static str {
        match self {
            Caller::Tenant(_) => "tenant",
            Caller::Unauthenticated => "unauthenticated",
        }
    }
}

/// What each caller may use of the server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shares {
    /// Requests one caller may have in flight at once.
    pub caller_in_flight: usize,
    /// One caller's bucket of requests; `None`: no rate limit.
    pub rate: Option<Rate>,
    /// One caller's bucket of query cost (one token per point of estimated cost); `None`: no
    /// limit.
    pub cost_rate: Option<Rate>,
}

/// A token bucket of `burst` requests, refilled by one every `refill`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rate {
    pub refill: Duration,
    pub burst: NonZeroU32,
}

/// Default of [`Shares::caller_in_flight`]: an eighth of the server's default in-flight limit
/// (256). A grid user's browser has at most 6 connections to one host, so 32 serve several
/// busy users of one tenant at once (32 pages in flight are about 2,000 pages a second at
/// DynamoDB's latency).
pub const DEFAULT_CALLER_IN_FLIGHT: usize = 32;
/// Default rate, in requests per second: about 2 grid pages a second for each of 250 people of one
/// tenant scrolling at once; far beyond what one person's grid sends.
pub const DEFAULT_RATE_PER_SECOND: u32 = 500;
/// Default of [`Rate::burst`]: two seconds of the rate, for a tab that opens many grids.
pub const DEFAULT_BURST: u32 = 1000;
/// Default query cost per second: a 50-row grid page with every cell costs about 2,100, so
/// about 240 such pages a second, sustained; the heaviest query the cost limit admits (10,000)
/// about 50 times a second.
pub const DEFAULT_COST_PER_SECOND: u32 = 500_000;
/// Default cost burst: two seconds of the cost rate.
pub const DEFAULT_COST_BURST: u32 = 1_000_000;

impl Default for Shares {
    fn default() -> Self {
        Shares {
            caller_in_flight: DEFAULT_CALLER_IN_FLIGHT,
            rate: Rate::per_second(DEFAULT_RATE_PER_SECOND, DEFAULT_BURST),
            cost_rate: Rate::per_second(DEFAULT_COST_PER_SECOND, DEFAULT_COST_BURST),
        }
    }
}

impl Rate {
    /// `per_second` tokens a second after a burst of `burst`, or `None` (no limit) when
    /// `per_second` is 0; a burst of 0 counts as 1.
    pub fn per_second(per_second: u32, burst: u32) -> Option<Rate> {
        let per_second = NonZeroU32::new(per_second)?;
        Some(Rate {
            refill: Duration::from_secs(1) / per_second.get(),
            burst: NonZeroU32::new(burst).unwrap_or(NonZeroU32::MIN),
        })
    }

    fn quota(self) -> Quota {
        // A zero period (over a billion a second) is no limit worth keeping: one a nanosecond.
        let refill = self.refill.max(Duration::from_nanos(1));
        Quota::with_period(refill)
            .unwrap_or_else(|| Quota::per_second(NonZeroU32::MAX))
            .allow_burst(self.burst)
    }
}

/// Why a request was not admitted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// The caller's bucket is empty: its next request is admitted after `retry_after`.
    Rate { retry_after: Duration },
    /// The caller's bucket of query cost holds less than the query costs; it will after
    /// `retry_after` (never, when `retry_after` is `None`: the query costs more than the
    /// bucket holds when full).
    Cost { retry_after: Option<Duration> },
    /// The caller has its share of requests in flight.
    CallerInFlight,
    /// The server has its limit of requests in flight.
    ServerInFlight,
    /// The caller has its share of exports running.
    CallerExports,
    /// The server has its limit of exports running.
    ServerExports,
}

impl Refusal {
    /// The metrics' `reason` label.
    pub fn reason(self) -> &'static str {
        match self {
            Refusal::Rate { .. } => "rate",
            Refusal::Cost { .. } => "cost",
            Refusal::CallerInFlight => "caller_in_flight",
            Refusal::ServerInFlight => "server_in_flight",
            Refusal::CallerExports => "caller_exports",
            Refusal::ServerExports => "server_exports",
        }
    }

    /// Whole seconds for `Retry-After`: at least 1, since a client retrying at once would
    /// only be refused again.
    pub fn retry_after_secs(self) -> u64 {
        match self {
            Refusal::Rate { retry_after }
            | Refusal::Cost {
                retry_after: Some(retry_after),
            } => retry_after.as_secs_f64().ceil().max(1.0) as u64,
            Refusal::Cost { retry_after: None } | Refusal::CallerInFlight => 1,
            Refusal::ServerInFlight | Refusal::CallerExports | Refusal::ServerExports => 1,
        }
    }
}

/// One place in this many of the server's is kept for callers with nothing in flight.
const RESERVED_FRACTION: usize = 8;

/// How often the buckets of idle callers are dropped, in checks.
const RETAIN_EVERY: u64 = 4096;

/// The admission state of one server.
pub struct Admission {
    shares: Shares,
    server: Arc<Semaphore>,
    /// Server places only callers with nothing in flight may take.
    reserve: usize,
    in_flight: Arc<Mutex<HashMap<Caller, usize>>>,
    buckets: Option<DefaultKeyedRateLimiter<Caller>>,
    costs: Option<DefaultKeyedRateLimiter<Caller>>,
    clock: DefaultClock,
    checks: AtomicU64,
}

/// A request's place in flight: given back when dropped (also when the request is cancelled).
#[must_use]
pub struct Permit {
    _server: OwnedSemaphorePermit,
    _caller: Option<CallerPermit>,
}

struct CallerPermit {
    caller: Caller,
    in_flight: Arc<Mutex<HashMap<Caller, usize>>>,
}

impl Admission {
    pub fn new(server_in_flight: usize, shares: Shares) -> Admission {
        let buckets = shares.rate.map(|rate| RateLimiter::keyed(rate.quota()));
        let costs = shares
            .cost_rate
            .map(|rate| RateLimiter::keyed(rate.quota()));
        Admission {
            shares,
            server: Arc::new(Semaphore::new(server_in_flight)),
            reserve: server_in_flight / RESERVED_FRACTION,
            in_flight: Arc::default(),
            buckets,
            costs,
            clock: DefaultClock::default(),
            checks: AtomicU64::new(0),
        }
    }

    /// Admits a request of `caller` (none: unrestricted access, bound by the server's limit
    /// alone), or says why not. The caller's share is checked before its bucket (a request
    /// refused for its share spends no token), and both before the server's limit.
    pub fn admit(&self, caller: Option<&Caller>) -> Result<Permit, Refusal> {
        let caller_permit = match caller {
            Some(caller) => {
                let (permit, already) = self.take_share(caller)?;
                // Approximate (another request may take or give back a place meanwhile), which
                // is all a reserve needs.
                let free = self.server.available_permits();
                if already > 0 && free > 0 && free <= self.reserve {
                    return Err(Refusal::CallerInFlight);
                }
                self.spend_token(caller)?;
                Some(permit)
            }
            None => None,
        };
        let server = self
            .server
            .clone()
            .try_acquire_owned()
            .map_err(|_| Refusal::ServerInFlight)?;
        Ok(Permit {
            _server: server,
            _caller: caller_permit,
        })
    }

    /// Spends one of the caller's tokens without admitting anything: for requests refused
    /// anyway (failed credentials), so that flooding the server with them is answered with
    /// cheap 429s once the unauthenticated bucket is empty.
    pub fn spend_token(&self, caller: &Caller) -> Result<(), Refusal> {
        self.forget_idle_callers();
        let Some(buckets) = &self.buckets else {
            return Ok(());
        };
        buckets
            .check_key(caller)
            .map_err(|not_until| Refusal::Rate {
                retry_after: not_until.wait_time_from(self.clock.now()),
            })
    }

    /// Charges `cost` (a query's estimated cost, at least 1) to the caller's bucket of query
    /// cost, or says when the caller could afford it.
    pub fn charge_cost(&self, caller: &Caller, cost: u64) -> Result<(), Refusal> {
        self.forget_idle_callers();
        let Some(costs) = &self.costs else {
            return Ok(());
        };
        let points = NonZeroU32::new(u32::try_from(cost).unwrap_or(u32::MAX).max(1))
            .unwrap_or(NonZeroU32::MIN);
        match costs.check_key_n(caller, points) {
            Ok(Ok(())) => Ok(()),
            Ok(Err(not_until)) => Err(Refusal::Cost {
                retry_after: Some(not_until.wait_time_from(self.clock.now())),
            }),
            Err(_) => Err(Refusal::Cost { retry_after: None }),
        }
    }

    /// Every [`RETAIN_EVERY`] checks, drops the buckets that are full again (an idle caller's
    /// is the same as a new one's), so memory follows the callers active now.
    fn forget_idle_callers(&self) {
        if self.checks.fetch_add(1, Ordering::Relaxed) % RETAIN_EVERY == RETAIN_EVERY - 1 {
            for limiter in [&self.buckets, &self.costs].into_iter().flatten() {
                limiter.retain_recent();
                limiter.shrink_to_fit();
            }
        }
    }

    /// Takes a place in the caller's share; also says how many it held before.
    fn take_share(&self, caller: &Caller) -> Result<(CallerPermit, usize), Refusal> {
        take_place(&self.in_flight, caller, self.shares.caller_in_flight)
            .ok_or(Refusal::CallerInFlight)
    }

    /// The callers with requests in flight now (for tests and the metrics).
    pub fn callers_in_flight(&self) -> usize {
        lock(&self.in_flight).len()
    }
}

impl Drop for CallerPermit {
    fn drop(&mut self) {
        let mut in_flight = lock(&self.in_flight);
        if let Some(count) = in_flight.get_mut(&self.caller) {
            *count -= 1;
            if *count == 0 {
                in_flight.remove(&self.caller);
            }
        }
    }
}

/// Takes one of `caller`'s places in `map` when it holds fewer than `limit`; also says how many
/// it held before.
fn take_place(
    map: &Arc<Mutex<HashMap<Caller, usize>>>,
    caller: &Caller,
    limit: usize,
) -> Option<(CallerPermit, usize)> {
    let mut held = lock(map);
    let count = held.entry(caller.clone()).or_insert(0);
    if *count >= limit {
        if *count == 0 {
            held.remove(caller);
        }
        return None;
    }
    let already = *count;
    *count += 1;
    let permit = CallerPermit {
        caller: caller.clone(),
        in_flight: map.clone(),
    };
    Some((permit, already))
}

/// The places of exports running: each caller's few and the server's. An export takes one
/// before its first page and gives it back when it ends, however it ends.
pub struct ExportSlots {
    per_caller: usize,
    server: Arc<Semaphore>,
    running: Arc<Mutex<HashMap<Caller, usize>>>,
}

/// An export's place: given back when dropped.
#[must_use]
pub struct ExportPermit {
    _server: OwnedSemaphorePermit,
    _caller: Option<CallerPermit>,
}

impl ExportSlots {
    /// `per_caller` exports of one caller at once, `total` of everyone.
    pub fn new(per_caller: usize, total: usize) -> ExportSlots {
        ExportSlots {
            per_caller,
            server: Arc::new(Semaphore::new(total)),
            running: Arc::default(),
        }
    }

    /// A place for an export of `caller` (none: unrestricted access, bound by the server's
    /// limit alone), or why not: the caller's share is checked first, so a caller refused its
    /// share never holds a server place.
    pub fn take(&self, caller: Option<&Caller>) -> Result<ExportPermit, Refusal> {
        let caller_permit = match caller {
            Some(caller) => Some(
                take_place(&self.running, caller, self.per_caller)
                    .map(|(permit, _)| permit)
                    .ok_or(Refusal::CallerExports)?,
            ),
            None => None,
        };
        let server = self
            .server
            .clone()
            .try_acquire_owned()
            .map_err(|_| Refusal::ServerExports)?;
        Ok(ExportPermit {
            _server: server,
            _caller: caller_permit,
        })
    }

    /// The callers with exports running now (for tests).
    pub fn callers_running(&self) -> usize {
        lock(&self.running).len()
    }
}

fn lock(map: &Mutex<HashMap<Caller, usize>>) -> std::sync::MutexGuard<'_, HashMap<Caller, usize>> {
    // Counts change by one under the lock, so a panicking holder leaves them consistent.
    map.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tenant(id: &str) -> Caller {
        Caller::Tenant(TenantId::parse(id).unwrap())
    }

    #[test]
    fn a_caller_past_its_share_does_not_take_the_others_room() {
        let admission = Admission::new(
            4,
            Shares {
                caller_in_flight: 2,
                rate: None,
                cost_rate: None,
            },
        );
        let (a, b) = (tenant("tenant-a"), tenant("tenant-b"));
        let held = [
            admission.admit(Some(&a)).unwrap(),
            admission.admit(Some(&a)).unwrap(),
        ];
        assert_eq!(
            admission.admit(Some(&a)).err(),
            Some(Refusal::CallerInFlight)
        );
        let others = [
            admission.admit(Some(&b)).unwrap(),
            admission.admit(Some(&Caller::Unauthenticated)).unwrap(),
        ];
        // The server's limit (4) still bounds everyone together.
        assert_eq!(
            admission.admit(Some(&Caller::Unauthenticated)).err(),
            Some(Refusal::ServerInFlight)
        );
        drop(held);
        assert!(admission.admit(Some(&a)).is_ok());
        drop(others);
        assert_eq!(
            admission.callers_in_flight(),
            0,
            "idle callers leave the map"
        );
    }

    #[test]
    fn the_last_places_are_kept_for_callers_with_nothing_in_flight() {
        // 16 places, 2 of them kept back; shares of 8.
        let admission = Admission::new(
            16,
            Shares {
                caller_in_flight: 8,
                rate: None,
                cost_rate: None,
            },
        );
        let (a, b, c) = (tenant("tenant-a"), tenant("tenant-b"), tenant("tenant-c"));
        let mut held: Vec<_> = (0..8).map(|_| admission.admit(Some(&a)).unwrap()).collect();
        held.extend((0..6).map(|_| admission.admit(Some(&b)).unwrap()));
        // Within its share, but into the reserve: refused.
        assert_eq!(
            admission.admit(Some(&b)).err(),
            Some(Refusal::CallerInFlight)
        );
        // A caller with nothing in flight still gets in.
        held.push(admission.admit(Some(&c)).unwrap());
        drop(held);
    }

    #[test]
    fn unrestricted_access_has_the_whole_server() {
        let admission = Admission::new(
            3,
            Shares {
                caller_in_flight: 1,
                rate: Rate::per_second(1, 1),
                cost_rate: Rate::per_second(1, 1),
            },
        );
        let held: Vec<_> = (0..3).map(|_| admission.admit(None).unwrap()).collect();
        assert_eq!(admission.admit(None).err(), Some(Refusal::ServerInFlight));
        drop(held);
    }

    #[test]
    fn a_refused_share_holds_no_server_permit() {
        let admission = Admission::new(
            2,
            Shares {
                caller_in_flight: 1,
                rate: None,
                cost_rate: None,
            },
        );
        let a = tenant("tenant-a");
        let _held = admission.admit(Some(&a)).unwrap();
        for _ in 0..10 {
            assert_eq!(
                admission.admit(Some(&a)).err(),
                Some(Refusal::CallerInFlight)
            );
        }
        assert!(admission.admit(Some(&tenant("tenant-b"))).is_ok());
    }

    #[test]
    fn each_caller_has_its_own_bucket() {
        // One request an hour after a burst of 3: nothing refills while the test runs.
        let admission = Admission::new(
            100,
            Shares {
                caller_in_flight: 100,
                rate: Some(Rate {
                    refill: Duration::from_secs(3600),
                    burst: NonZeroU32::new(3).unwrap(),
                }),
                cost_rate: None,
            },
        );
        let (a, b) = (tenant("tenant-a"), tenant("tenant-b"));
        for _ in 0..3 {
            drop(admission.admit(Some(&a)).unwrap());
        }
        let refusal = admission.admit(Some(&a)).err().unwrap();
        assert!(matches!(refusal, Refusal::Rate { .. }), "{refusal:?}");
        assert!(refusal.retry_after_secs() > 3000, "{refusal:?}");
        // Another tenant, and the unauthenticated traffic, have full buckets.
        for _ in 0..3 {
            drop(admission.admit(Some(&b)).unwrap());
            drop(admission.admit(Some(&Caller::Unauthenticated)).unwrap());
        }
    }

    #[test]
    fn queries_are_charged_their_cost() {
        // A bucket of 10,000 points that refills by one an hour.
        let admission = Admission::new(
            100,
            Shares {
                caller_in_flight: 100,
                rate: None,
                cost_rate: Some(Rate {
                    refill: Duration::from_secs(3600),
                    burst: NonZeroU32::new(10_000).unwrap(),
                }),
            },
        );
        let (a, b) = (tenant("tenant-a"), tenant("tenant-b"));
        assert!(admission.charge_cost(&a, 6_000).is_ok());
        let refusal = admission.charge_cost(&a, 6_000).err().unwrap();
        assert!(
            matches!(refusal, Refusal::Cost { retry_after: Some(wait) } if wait > Duration::from_secs(3600)),
            "{refusal:?}"
        );
        // What is left still pays for cheaper queries, and the other tenant's bucket is full.
        assert!(admission.charge_cost(&a, 4_000).is_ok());
        assert!(admission.charge_cost(&b, 10_000).is_ok());
        // More than a full bucket can never be paid.
        assert_eq!(
            admission.charge_cost(&b, 20_000).err(),
            Some(Refusal::Cost { retry_after: None })
        );
    }

    #[test]
    fn exports_have_places_of_their_own() {
        let exports = ExportSlots::new(2, 3);
        let (a, b) = (tenant("tenant-a"), tenant("tenant-b"));
        let held = [
            exports.take(Some(&a)).unwrap(),
            exports.take(Some(&a)).unwrap(),
        ];
        assert_eq!(exports.take(Some(&a)).err(), Some(Refusal::CallerExports));
        let other = exports.take(Some(&b)).unwrap();
        // The server's limit (3) bounds everyone, unrestricted access included.
        assert_eq!(exports.take(Some(&b)).err(), Some(Refusal::ServerExports));
        assert_eq!(exports.take(None).err(), Some(Refusal::ServerExports));
        drop(held);
        assert_eq!(exports.callers_running(), 1);
        let unrestricted = [exports.take(None).unwrap(), exports.take(None).unwrap()];
        drop((other, unrestricted));
        assert_eq!(exports.callers_running(), 0, "idle callers leave the map");
        // No places at all: every export is refused, and no caller is left behind.
        let none = ExportSlots::new(0, 1);
        assert_eq!(none.take(Some(&a)).err(), Some(Refusal::CallerExports));
        assert_eq!(none.callers_running(), 0);
    }

    #[test]
    fn zero_turns_the_rate_limit_off() {
        assert_eq!(Rate::per_second(0, 10), None);
        let rate = Rate::per_second(5, 0).unwrap();
        assert_eq!(
            (rate.refill, rate.burst.get()),
            (Duration::from_millis(200), 1)
        );
    }
}
