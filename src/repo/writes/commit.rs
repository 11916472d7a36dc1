//! Committing a planned mutation: idempotency by `clientMutationId`, the one transaction,
//! and re-planning under contention with bounded, jittered backoff.

use std::future::Future;

use std::sync::atomic::Ordering;
use std::time::Duration;

use rand::Rng;

use super::{
    invalid, Applied, Plan, WriteError, Writes, Written, IDEMPOTENCY_WINDOW,
    MAX_CLIENT_MUTATION_ID_BYTES,
};
use crate::items::{self, attrs, MutationRecord};
use crate::keys;
use crate::repo::now_secs;
use crate::repo::RepoError;
use crate::store::{AttributeValue, Condition, CostReport, Key, StoreError, WriteOp};

/// What a mutation that ends in `NOT_FOUND` reports: one strongly consistent read of nothing.
const NOT_FOUND_PRICE: CostReport = CostReport {
    dynamodb_calls: 1,
    read_capacity_units: 1.0,
    write_capacity_units: 0.0,
};

/// How hard a mutation tries before contention becomes a retryable `CONFLICT`: exponential
/// backoff with full jitter, as AWS recommends for conditional-write contention.
#[derive(Clone, Copy, Debug)]
pub struct RetryPolicy {
    pub attempts: u32,
    pub base: Duration,
    pub cap: Duration,
}

impl Default for RetryPolicy {
    /// Enough for 64 writers racing on one project's issue counter (about 64 rounds, each of
    /// which one writer wins) while bounding a single request to a few seconds.
    fn default() -> Self {
        RetryPolicy {
            attempts: 100,
            base: Duration::from_millis(2),
            cap: Duration::from_millis(100),
        }
    }
}

impl RetryPolicy {
    pub(super) async fn pause(&self, attempt: u32) {
        let ceiling = self
            .base
            .saturating_mul(1u32.checked_shl(attempt.min(16)).unwrap_or(u32::MAX))
            .min(self.cap);
        let delay = rand::rng().random_range(Duration::ZERO..=ceiling);
        if !delay.is_zero() {
            tokio::time::sleep(delay).await;
        }
    }
}

impl Writes {
    /// Plans and commits a mutation, re-planning under contention, and honours the client's
    /// `clientMutationId`: a recorded result of the same mutation with the same input within
    /// the window is returned without writing, and a new result is recorded in the mutation's
    /// own transaction. `input` is the mutation's validated input, fingerprinted so that an id
    /// reused for different input is refused rather than answered with another call's result.
    pub(super) async fn execute<F, Fut>(
        &self,
        client_id: Option<&str>,
        mutation: &'static str,
        input: &impl std::fmt::Debug,
        plan: F,
    ) -> Result<Written, WriteError>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<Plan, WriteError>>,
    {
        let meter = self.repo().meter();
        let before = meter.report();
        let result = self
            .execute_unpriced(client_id, mutation, input, plan)
            .await;
        if let Err(WriteError::NotFound(_)) = &result {
            // Whatever it took to find out (one read for a missing row, two for another
            // tenant's), a `NOT_FOUND` is reported as one strongly consistent miss.
            meter.rewind(before, NOT_FOUND_PRICE);
        }
        result
    }

    async fn execute_unpriced<F, Fut>(
        &self,
        client_id: Option<&str>,
        mutation: &'static str,
        input: &impl std::fmt::Debug,
        mut plan: F,
    ) -> Result<Written, WriteError>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<Plan, WriteError>>,
    {
        let idempotency = match client_id {
            None => None,
            Some(id) if id.is_empty() || id.len() > MAX_CLIENT_MUTATION_ID_BYTES => {
                return Err(invalid(
                    "clientMutationId",
                    format!("must be 1 to {MAX_CLIENT_MUTATION_ID_BYTES} bytes long"),
                ));
            }
            Some(id) => Some(Idempotency {
                key: keys::mutation_record(&self.repo().access().partition(), id),
                mutation,
                fingerprint: fingerprint(mutation, input),
            }),
        };
        for attempt in 0..self.retry.attempts {
            let mut record_condition = None;
            if let Some(idem) = &idempotency {
                match self.recorded(idem).await? {
                    Recorded::Result(result) => return Ok(Written::replayed(result)),
                    Recorded::Expired(expires_at) => {
                        record_condition = Some(Condition::equals(
                            attrs::EXPIRES_AT,
                            AttributeValue::N(expires_at.to_string()),
                        ))
                    }
                    Recorded::None => record_condition = Some(Condition::NotExists),
                }
            }
            let planned = match plan().await {
                Ok(planned) => planned,
                Err(e) => return self.unless_recorded(idempotency.as_ref(), e).await,
            };
            let Plan {
                mut ops,
                result,
                guarded,
                sweep,
                project,
            } = planned;
            let record_index = idempotency.as_ref().map(|idem| {
                let record = MutationRecord {
                    mutation: mutation.to_string(),
                    fingerprint: idem.fingerprint.clone(),
                    result: result.clone(),
                    expires_at: now_secs() + IDEMPOTENCY_WINDOW.as_secs() as i64,
                };
                ops.push(WriteOp::Put {
                    item: items::mutation_record_item(&idem.key, &record),
                    condition: record_condition.take(),
                });
                ops.len() - 1
            });
            // Nothing to write (an edit that changes nothing, without a clientMutationId).
            let wrote = !ops.is_empty();
            let written = if wrote {
                self.store().transact_write(ops).await
            } else {
                Ok(Default::default())
            };
            match written {
                Ok(_) => {
                    if wrote {
                        self.applied.push(Applied {
                            mutation,
                            id: result.clone(),
                        });
                    }
                    if let Some(sweeps) = &self.sweeps {
                        sweep.into_iter().for_each(|target| sweeps.start(target));
                    }
                    return Ok(Written {
                        id: result,
                        replayed: false,
                        project,
                    });
                }
                // Another call with the same clientMutationId committed first: the next round
                // reads its record and returns it.
                Err(StoreError::ConditionFailed { index }) if Some(index) == record_index => {}
                // The client's expectedVersion no longer holds (or the row is gone): planning
                // again from a fresh read reports which, as CONFLICT or NOT_FOUND.
                Err(StoreError::ConditionFailed { index }) if Some(index) == guarded => {}
                Err(StoreError::ConditionFailed { .. } | StoreError::TransactionConflict(_)) => {
                    tracing::debug!(mutation, attempt, "write contention, planning again");
                    self.stats.retries.fetch_add(1, Ordering::Relaxed);
                    self.retry.pause(attempt).await;
                }
                Err(e) => return Err(e.into()),
            }
        }
        tracing::warn!(mutation, "write contention outlasted the retries");
        let exhausted = WriteError::Conflict {
            message: "too many concurrent changes to the same data: retry the mutation".into(),
            retryable: true,
        };
        self.unless_recorded(idempotency.as_ref(), exhausted).await
    }

    /// An error of a mutation with a `clientMutationId`, unless a concurrent call with the same
    /// id committed meanwhile (then its result is the answer: the planning error, a conflict
    /// or a "not found", only saw that call's own write).
    async fn unless_recorded(
        &self,
        idempotency: Option<&Idempotency>,
        error: WriteError,
    ) -> Result<Written, WriteError> {
        if let Some(idem) = idempotency {
            if matches!(error, WriteError::Conflict { .. } | WriteError::NotFound(_)) {
                if let Ok(Recorded::Result(result)) = self.recorded(idem).await {
                    return Ok(Written::replayed(result));
                }
            }
        }
        if matches!(error, WriteError::Conflict { .. }) {
            self.stats.conflicts.fetch_add(1, Ordering::Relaxed);
        }
        Err(error)
    }

    async fn recorded(&self, idem: &Idempotency) -> Result<Recorded, WriteError> {
        let out = self.store().get_consistent(&idem.key).await?;
        let Some(item) = out.item else {
            return Ok(Recorded::None);
        };
        let record = items::decode_mutation_record(&item).map_err(RepoError::from)?;
        if record.expires_at <= now_secs() {
            return Ok(Recorded::Expired(record.expires_at));
        }
        if record.mutation != idem.mutation || record.fingerprint != idem.fingerprint {
            return Err(invalid(
                "clientMutationId",
                format!(
                    "already used for another mutation or other input in the last {} minutes: \
                     use a new id for each distinct mutation, and the same id only to retry it",
                    IDEMPOTENCY_WINDOW.as_secs() / 60
                ),
            ));
        }
        Ok(Recorded::Result(record.result))
    }
}

/// What identifies one logical mutation for idempotent retries.
struct Idempotency {
    key: Key,
    mutation: &'static str,
    fingerprint: String,
}

/// A stable digest of a mutation's validated input (SHA-256 of its debug form), so retries
/// match whatever the request's bytes (formatting, variables or literals, field order).
fn fingerprint(mutation: &str, input: &impl std::fmt::Debug) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(format!("{mutation}\n{input:?}").as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

enum Recorded {
    None,
    Expired(i64),
    Result(String),
}
