//! Tessera on Apache DataFusion Ballista: a cluster whose scheduler and executors know
//! Tessera's plan nodes, functions and stores.
//!
//! A client plans a query with its own [`TesseraSession`] and, with `tessera.cluster`
//! set, sends the finished physical plan to the scheduler (`ClusterExec` in
//! `tessera-engine`). The scheduler decodes it with Tessera's functions, cuts it into
//! stages at its exchanges, and hands the stages' tasks (one per file group, that is
//! per file or byte range of one) to the executors. Each process builds its Tessera
//! parts from its own session, so each reads the files with its own credentials,
//! endpoint and encryption key: nothing secret travels in a plan.
//!
//! - [`scheduler`]: `tessera cluster scheduler`.
//! - [`executor`]: `tessera cluster executor`.
//! - `wake`: how an idle executor learns at once that there is work.
//!
//! [`TesseraSession`]: tessera_engine::TesseraSession

pub mod error;
pub mod executor;
mod parts;
pub mod scheduler;
mod task_count;
mod wake;

pub use error::ClusterError;

use ballista_core::config::TaskSchedulingPolicy;

/// How tasks reach executors: each asks for one when a slot is free. With Ballista 55's
/// push policy a job whose executor was lost kept waiting for a slot the scheduler no
/// longer counted (the fault test saw it), and pulling keeps no such account.
const SCHEDULING: TaskSchedulingPolicy = TaskSchedulingPolicy::PullStaged;
pub use executor::{ExecutorSettings, run_executor};
pub use scheduler::{SchedulerSettings, run_scheduler};
