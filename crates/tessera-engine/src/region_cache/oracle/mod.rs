//! The oracle-region cache's background side, after "Crystal: A Unified Cache Storage
//! System for Analytical Databases" (Section 4): the requests of the scans the rule sees
//! go into a ring; every [`PLAN_PERIOD`] requests a background run estimates their sizes
//! from a sample of the table ([`sample`]), lets `tessera_cache`'s oracle choose the
//! regions for the oracle cache's budget (overlap-aware greedy knapsack over the history
//! and merged regions) and writes the new ones ([`materialize`]), deleting regions it no
//! longer wants only as it needs their room.
//!
//! A run has a thread of its own at a low CPU priority (nice 10: at 19 a steady stream of
//! queries starved it), with its own runtime, and
//! only one runs at a time, so a query never waits for it. It reads the table with the
//! runtime (object stores, memory pool) of the latest query that ran a scan the rule
//! saw: the rule only sees configuration, a running plan sees the session.

mod materialize;
mod sample;
mod trace;

use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, LazyLock};

use arrow::datatypes::SchemaRef;
use datafusion::common::Result;
use datafusion::datasource::physical_plan::{FileScanConfig, FileSource};
use datafusion::execution::TaskContext;
use parking_lot::Mutex;
use tessera_cache::semantic::oracle::history::{HISTORY_LEN_DEFAULT, HistoryEntry};
use tessera_cache::semantic::oracle::{Oracle, OracleConfig};
use tessera_cache::semantic::region::Request;
use tessera_table::Snapshot;

use super::predicates::Columns;
use super::store::RegionStore;
use crate::datasource::tessera::scan::TesseraSource;
use sample::{Estimator, Sample};

/// Requests between two runs of the oracle (the paper runs it periodically; a short
/// period lets the cache follow a shift of the workload within a few dozen queries).
pub(crate) const PLAN_PERIOD: u64 = 8;
/// Tables whose scans the oracle remembers; the least recently scanned is forgotten.
const TABLES_MAX: usize = 16;
/// Regions one run writes at most (the next run continues).
const CREATE_PER_RUN_MAX: usize = 4;

/// The recent requests and what the background runs need to serve them.
#[derive(Debug, Default)]
pub(crate) struct RegionOracle {
    state: Mutex<OracleState>,
    running: Arc<AtomicBool>,
}

#[derive(Debug, Default)]
struct OracleState {
    /// The last [`HISTORY_LEN_DEFAULT`] requests, oldest first.
    requests: VecDeque<Request>,
    /// Per table, the latest scan of it and when it was seen.
    tables: HashMap<String, (u64, Arc<Template>)>,
    /// Per table, the sample of its latest run.
    samples: HashMap<String, Arc<Sample>>,
    observed: u64,
    planned_at: u64,
    context: Option<Arc<TaskContext>>,
}

/// How to scan a table: a scan of every file of its latest version seen, and every
/// column (expression) the requests on it read.
#[derive(Debug)]
pub(crate) struct Template {
    pub(crate) table: String,
    pub(crate) config: FileScanConfig,
    pub(crate) columns: Columns,
    pub(crate) snapshot: Arc<Snapshot>,
}

impl Template {
    /// The Tessera source of the scan.
    pub(crate) fn source(&self) -> &TesseraSource {
        self.config
            .file_source()
            .downcast_ref::<TesseraSource>()
            .expect("a template is made from a Tessera scan")
    }

    /// The schema of the table the columns' expressions read.
    pub(crate) fn schema(&self) -> SchemaRef {
        Arc::clone(self.source().table_schema().table_schema())
    }

    /// `request` at this template's version (its table's latest seen), if it is of this
    /// table and not of a later version.
    fn current(&self, request: &Request) -> Option<Request> {
        let version = self.snapshot.version();
        (request.table == self.table && request.version <= version).then(|| Request {
            version,
            ..request.clone()
        })
    }
}

impl RegionOracle {
    /// Records a running scan's request, and the scan as its table's template (the
    /// columns of the scans of a table add up).
    pub(crate) fn observe(&self, request: &Request, template: &Arc<Template>) {
        let mut state = self.state.lock();
        state.observed += 1;
        if state.requests.len() == HISTORY_LEN_DEFAULT {
            state.requests.pop_front();
        }
        state.requests.push_back(request.clone());
        let seen = state.observed;
        let mut template = Arc::clone(template);
        if let Some((_, known)) = state.tables.get(&template.table) {
            if template.snapshot.version() < known.snapshot.version() {
                return;
            }
            let missing = known
                .columns
                .keys()
                .any(|id| !template.columns.contains_key(id));
            if missing {
                let mut columns = known.columns.clone();
                columns.extend(template.columns.clone());
                template = Arc::new(Template {
                    table: template.table.clone(),
                    config: template.config.clone(),
                    columns,
                    snapshot: Arc::clone(&template.snapshot),
                });
            }
        }
        state
            .tables
            .insert(template.table.clone(), (seen, template));
        if state.tables.len() > TABLES_MAX {
            let oldest = state.tables.iter().min_by_key(|(_, (at, _))| *at);
            let oldest = oldest.map(|(table, _)| table.clone()).expect("non-empty");
            state.tables.remove(&oldest);
            state.samples.remove(&oldest);
        }
    }

    /// Whether a run is due (and none running): the run is then the caller's, until
    /// the returned guard drops.
    fn claim(&self, context: &Arc<TaskContext>) -> Option<RunGuard> {
        let mut state = self.state.lock();
        state.context = Some(Arc::clone(context));
        if state.observed < state.planned_at + PLAN_PERIOD
            || self.running.swap(true, Ordering::AcqRel)
        {
            return None;
        }
        state.planned_at = state.observed;
        Some(RunGuard(Arc::clone(&self.running)))
    }
}

/// Clears the running flag when a run ends, however it ends.
struct RunGuard(Arc<AtomicBool>);

impl Drop for RunGuard {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}

/// One oracle per region store (per directory) for the whole process, like the stores.
static ORACLES: LazyLock<Mutex<HashMap<PathBuf, Arc<RegionOracle>>>> =
    LazyLock::new(Mutex::default);

/// The oracle of `store`; `None` when its oracle cache has no budget
/// (`tessera.region_oracle` off).
pub(crate) fn of(store: &RegionStore) -> Option<Arc<RegionOracle>> {
    if store.oracle_bytes_max == 0 {
        return None;
    }
    let mut oracles = ORACLES.lock();
    Some(Arc::clone(
        oracles.entry(store.dir().to_path_buf()).or_default(),
    ))
}

/// Called by a running scan of the rule's with its query's `context`: starts a
/// background run of `oracle` over `store` when one is due.
pub(crate) fn poke(
    store: &Arc<RegionStore>,
    oracle: &Arc<RegionOracle>,
    context: &Arc<TaskContext>,
) {
    let Some(guard) = oracle.claim(context) else {
        return;
    };
    let store = Arc::clone(store);
    let oracle = Arc::clone(oracle);
    let started = std::thread::Builder::new()
        .name("tessera-region-oracle".into())
        .spawn(move || {
            let _guard = guard;
            low_priority();
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build();
            if let Ok(runtime) = runtime
                && let Err(e) = runtime.block_on(run(&store, &oracle))
            {
                eprintln!("warning: the region oracle stopped: {e}");
            }
        });
    if let Err(e) = started {
        eprintln!("warning: the region oracle did not start: {e}");
    }
}

/// Gives the calling thread a low CPU priority (on Linux `nice` is per thread);
/// a failure only leaves it at normal priority.
fn low_priority() {
    // SAFETY: setpriority only reads its integer arguments; `0` names this thread.
    let _ = unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, 10) };
}

/// One run: plan the oracle cache's content from the recent requests, drop what it no
/// longer wants, write what it wants new.
async fn run(store: &Arc<RegionStore>, oracle: &RegionOracle) -> Result<()> {
    let mut trace = trace::Trace::start();
    let (requests, tables, context) = {
        let state = oracle.state.lock();
        let tables: HashMap<String, Arc<Template>> = state
            .tables
            .iter()
            .map(|(table, (_, t))| (table.clone(), Arc::clone(t)))
            .collect();
        let context = state.context.clone().expect("claim set the context");
        (state.requests.clone(), tables, context)
    };
    let samples = sample::refresh(oracle, &tables, &context).await?;
    let estimator = Estimator::new(store, &tables, &samples);
    let mut planner = Oracle::new(OracleConfig::default());
    for request in &requests {
        let Some(at) = tables.get(&request.table).and_then(|t| t.current(request)) else {
            continue;
        };
        if let Some(size) = estimator.estimate_request(&at) {
            planner.record(HistoryEntry {
                request: at,
                rows: size.rows,
                bytes: size.bytes,
            });
        }
    }
    let existing = store.oracle_regions();
    let plan = planner.plan(&existing, store.oracle_bytes_max, &estimator);
    trace.line(|| {
        let history = planner.history().entries();
        let bytes: u64 = history.iter().map(|h| h.bytes).sum();
        format!(
            "run: {} requests, {} sized ({bytes} bytes); {} regions held; budget {}; \
             keep {}, drop {}, create {}",
            requests.len(),
            history.len(),
            existing.len(),
            store.oracle_bytes_max,
            plan.keep.len(),
            plan.drop.len(),
            plan.create.len()
        )
    });
    let mut unwanted = plan.drop.clone();
    for planned in plan.create.iter().take(CREATE_PER_RUN_MAX) {
        let Some(template) = tables.get(&planned.shape.table) else {
            continue;
        };
        store.make_oracle_room(planned.bytes, &mut unwanted);
        materialize::region(store, template, &planned.shape, &context).await?;
        trace.line(|| {
            format!(
                "wrote: {} rows, {} bytes estimated: {:?}",
                planned.rows, planned.bytes, planned.shape.predicate
            )
        });
    }
    trace.line(|| {
        let held = store.oracle_regions();
        let bytes: u64 = held.iter().map(|r| r.bytes).sum();
        format!("held: {} regions, {bytes} bytes", held.len())
    });
    Ok(())
}
