//! What a sub-plan spent on the storage-side worker, so that `EXPLAIN ANALYZE` shows the
//! bytes and dollars a pushed plan cost and not only what crossed the link: the worker
//! sends it after a partition's last batch, as the app metadata of a Flight message
//! without data, and the client's `WorkerExec` adds it to its metrics
//! (`worker_store_bytes`, `worker_footer_bytes`, `worker_store_requests`,
//! `worker_footer_requests`, `worker_cost_nanodollars`).
//!
//! The dollars follow PushdownDB's cost model ("PushdownDB: Accelerating a DBMS using S3
//! Computation", §III): the store's requests at their price, and compute time at an
//! instance's price, here the worker's for as long as the partition ran there.

use std::sync::Arc;
use std::time::Duration;

use arrow_flight::FlightData;
use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_plan::metrics::Count;
use prost::Message;

/// The worker's compute price per busy partition and second, in billionths of a
/// dollar: an m6i.large's $0.096 an hour over its two vCPUs, a partition keeping
/// about one of them busy.
pub const WORKER_VCPU_NANODOLLARS_PER_S: u64 = 13_333;

/// What one partition of a sub-plan spent on the worker.
#[derive(Clone, PartialEq, Message)]
pub struct WorkerSpend {
    /// Bytes the partition read from the store (its scans' `bytes_scanned`).
    #[prost(uint64, tag = "1")]
    pub store_bytes: u64,
    /// What the store bills for the partition's requests (its scans'
    /// `request_cost_nanodollars` and `select_cost_nanodollars`).
    #[prost(uint64, tag = "2")]
    pub store_cost_nanodollars: u64,
    /// How long the partition ran on the worker, back-pressure included.
    #[prost(uint64, tag = "3")]
    pub busy_ns: u64,
    /// The part of `store_bytes` that was table files' footers (their scans'
    /// `footer_bytes`).
    #[prost(uint64, tag = "4")]
    pub footer_bytes: u64,
    /// Requests the partition sent the store (its scans' `requests`).
    #[prost(uint64, tag = "5")]
    pub store_requests: u64,
    /// The part of `store_requests` that fetched table files' footers (their scans'
    /// `footer_requests`).
    #[prost(uint64, tag = "6")]
    pub footer_requests: u64,
}

impl WorkerSpend {
    /// What the partition of `plan` that ran (for `busy`) spent, from its metrics.
    pub fn of(plan: &Arc<dyn ExecutionPlan>, busy: Duration) -> Self {
        Self {
            store_bytes: summed(plan, &["bytes_scanned"]),
            store_cost_nanodollars: summed(
                plan,
                &["request_cost_nanodollars", "select_cost_nanodollars"],
            ),
            busy_ns: u64::try_from(busy.as_nanos()).unwrap_or(u64::MAX),
            footer_bytes: summed(plan, &["footer_bytes"]),
            store_requests: summed(plan, &["requests"]),
            footer_requests: summed(plan, &["footer_requests"]),
        }
    }

    /// The message that carries it: app metadata and no data.
    pub fn message(&self) -> FlightData {
        FlightData {
            app_metadata: self.encode_to_vec().into(),
            ..FlightData::default()
        }
    }

    /// The spend a message carries, if it is one: a message with data is a batch (or
    /// the schema), and metadata that does not decode counts nothing.
    pub fn carried_by(message: &FlightData) -> Option<Option<Self>> {
        if !message.data_header.is_empty() || message.app_metadata.is_empty() {
            return None;
        }
        Some(Self::decode(message.app_metadata.clone()).ok())
    }

    /// What it cost, in billionths of a dollar: the store's bill and the worker's time.
    pub fn cost_nanodollars(&self) -> u64 {
        let compute =
            u128::from(self.busy_ns) * u128::from(WORKER_VCPU_NANODOLLARS_PER_S) / 1_000_000_000;
        self.store_cost_nanodollars
            .saturating_add(u64::try_from(compute).unwrap_or(u64::MAX))
    }
}

/// The sum over `plan`'s operators of the metrics named `names`.
fn summed(plan: &Arc<dyn ExecutionPlan>, names: &[&str]) -> u64 {
    let mut total = 0u64;
    let walked = plan.apply(|node| {
        if let Some(metrics) = node.metrics() {
            for name in names {
                let value = metrics.sum_by_name(name).map_or(0, |v| v.as_usize());
                total = total.saturating_add(value as u64);
            }
        }
        Ok(TreeNodeRecursion::Continue)
    });
    debug_assert!(walked.is_ok(), "the walk itself never fails");
    total
}

/// The counters a [`WorkerSpend`] is added to, one per partition.
#[derive(Debug, Clone)]
pub(super) struct SpendCounters {
    /// `worker_store_bytes`.
    pub store_bytes: Count,
    /// `worker_footer_bytes`.
    pub footer_bytes: Count,
    /// `worker_store_requests`.
    pub store_requests: Count,
    /// `worker_footer_requests`.
    pub footer_requests: Count,
    /// `worker_cost_nanodollars`.
    pub cost_nanodollars: Count,
}

impl SpendCounters {
    /// Adds `spend`.
    pub fn add(&self, spend: &WorkerSpend) {
        self.store_bytes.add(spend.store_bytes as usize);
        self.footer_bytes.add(spend.footer_bytes as usize);
        self.store_requests.add(spend.store_requests as usize);
        self.footer_requests.add(spend.footer_requests as usize);
        self.cost_nanodollars.add(spend.cost_nanodollars() as usize);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spend_survives_its_message_and_batches_are_not_spends() {
        let spend = WorkerSpend {
            store_bytes: 1 << 30,
            store_cost_nanodollars: 800,
            busy_ns: 3_000_000_000,
            footer_bytes: 64 << 10,
            store_requests: 2,
            footer_requests: 1,
        };
        let message = spend.message();
        assert_eq!(WorkerSpend::carried_by(&message), Some(Some(spend.clone())));
        // Two GETs, and three seconds of a vCPU.
        assert_eq!(
            spend.cost_nanodollars(),
            800 + 3 * WORKER_VCPU_NANODOLLARS_PER_S
        );
        let batch = FlightData {
            data_header: vec![1, 2].into(),
            app_metadata: message.app_metadata.clone(),
            ..FlightData::default()
        };
        assert_eq!(WorkerSpend::carried_by(&batch), None);
        let garbled = FlightData {
            app_metadata: vec![0xff; 3].into(),
            ..FlightData::default()
        };
        assert_eq!(WorkerSpend::carried_by(&garbled), Some(None));
    }
}
