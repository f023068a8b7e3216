//! A client's queries between GetFlightInfo (planned) and the end of DoGet (running),
//! found by the handle in their ticket.

use std::collections::VecDeque;
use std::sync::Arc;

use datafusion::execution::TaskContext;
use datafusion::physical_plan::ExecutionPlan;
use tokio::sync::watch;
use tonic::Status;

/// Queries a client may have planned or running at once; the oldest planned query is
/// forgotten when more are planned (a client may never fetch a FlightInfo's ticket).
pub(super) const QUERIES_MAX: usize = 16;

/// A query planned by GetFlightInfo, waiting for its DoGet.
pub(super) struct Planned {
    /// The physical plan (its schema is the one the FlightInfo announced).
    pub(super) plan: Arc<dyn ExecutionPlan>,
    /// The session state it runs with.
    pub(super) task: Arc<TaskContext>,
}

enum Query {
    Planned(Planned),
    /// Streaming; sending `true` cancels it.
    Running(watch::Sender<bool>),
}

/// A client's queries, oldest first.
#[derive(Default)]
pub(super) struct Queries {
    entries: VecDeque<(u64, Query)>,
    next_handle: u64,
}

impl Queries {
    /// Keeps `planned` for a DoGet; its handle.
    pub(super) fn add(&mut self, planned: Planned) -> Result<u64, Status> {
        if self.entries.len() >= QUERIES_MAX {
            let oldest_planned = self
                .entries
                .iter()
                .position(|(_, query)| matches!(query, Query::Planned(_)))
                .ok_or_else(|| {
                    Status::resource_exhausted(format!(
                        "too many queries running in this session: at most {QUERIES_MAX} at once"
                    ))
                })?;
            self.entries.remove(oldest_planned);
        }
        let handle = self.next_handle;
        self.next_handle += 1;
        self.entries.push_back((handle, Query::Planned(planned)));
        assert!(self.entries.len() <= QUERIES_MAX);
        Ok(handle)
    }

    /// Starts the planned query `handle`: its plan and the signal that cancels it.
    pub(super) fn start(
        &mut self,
        handle: u64,
    ) -> Result<(Planned, watch::Receiver<bool>), Status> {
        let entry = self
            .entries
            .iter_mut()
            .find(|(h, _)| *h == handle)
            .ok_or_else(unknown)?;
        let (cancel, cancelled) = watch::channel(false);
        match std::mem::replace(&mut entry.1, Query::Running(cancel)) {
            Query::Planned(planned) => Ok((planned, cancelled)),
            running @ Query::Running(_) => {
                entry.1 = running;
                Err(Status::failed_precondition(
                    "this ticket's query is already being fetched: a ticket is fetched once",
                ))
            }
        }
    }

    /// Forgets the query `handle` (its stream ended).
    pub(super) fn finish(&mut self, handle: u64) {
        self.entries.retain(|(h, _)| *h != handle);
    }

    /// Cancels the query `handle`: a planned one is forgotten, a running one stops.
    pub(super) fn cancel(&mut self, handle: u64) -> Result<(), Status> {
        let position = self
            .entries
            .iter()
            .position(|(h, _)| *h == handle)
            .ok_or_else(unknown)?;
        if let Query::Running(cancel) = &self.entries[position].1 {
            // The stream may have ended already; then there is nothing left to stop.
            let _ = cancel.send(true);
        } else {
            self.entries.remove(position);
        }
        Ok(())
    }

    /// How many queries are streaming.
    pub(super) fn running(&self) -> usize {
        self.entries
            .iter()
            .filter(|(_, query)| matches!(query, Query::Running(_)))
            .count()
    }
}

fn unknown() -> Status {
    Status::not_found(
        "no such query in this session: it finished, was cancelled, or its ticket expired",
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::datatypes::Schema;
    use datafusion::physical_plan::empty::EmptyExec;

    fn planned() -> Planned {
        Planned {
            plan: Arc::new(EmptyExec::new(Arc::new(Schema::empty()))),
            task: Arc::new(TaskContext::default()),
        }
    }

    #[test]
    fn planned_queries_are_bounded_and_running_ones_are_kept() {
        let mut queries = Queries::default();
        let first = queries.add(planned()).unwrap();
        let (_, cancelled) = queries.start(first).unwrap();
        assert!(queries.start(first).is_err(), "a ticket is fetched once");
        let second = queries.add(planned()).unwrap();
        for _ in 2..=QUERIES_MAX {
            queries.add(planned()).unwrap();
        }
        // The oldest planned query made room; the running one stays.
        assert!(queries.start(second).is_err());
        assert_eq!(queries.running(), 1);
        queries.cancel(first).unwrap();
        assert!(*cancelled.borrow());
        queries.finish(first);
        assert_eq!(queries.running(), 0);
        assert!(queries.cancel(first).is_err());
    }
}
