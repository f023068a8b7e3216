//! What a cluster process takes from its own [`TesseraSession`]: the functions plans name,
//! the settings plans are read under, and the runtime (stores, memory) they run in.

use std::sync::Arc;

use ballista_core::ConfigProducer;
use ballista_core::extension::SessionConfigExt;
use ballista_core::registry::BallistaFunctionRegistry;
use datafusion::execution::SessionState;
use tessera_engine::TesseraSession;
use tessera_engine::rejects::RejectLog;

/// The session's functions, by every name they answer to.
pub(crate) fn functions(state: &SessionState) -> BallistaFunctionRegistry {
    BallistaFunctionRegistry {
        scalar_functions: state.scalar_functions().clone(),
        aggregate_functions: state.aggregate_functions().clone(),
        window_functions: state.window_functions().clone(),
        higher_order_functions: state.higher_order_functions().clone(),
    }
}

/// The session's settings, Tessera's among them, so that a client's `tessera.*`
/// settings reach the tasks; each call gives a fresh copy for one job or task, with a
/// reject log of its own, so that a task reports exactly the lines it skipped.
pub(crate) fn settings(session: &TesseraSession) -> ConfigProducer {
    let config = session
        .context()
        .state()
        .config()
        .clone()
        .upgrade_for_ballista();
    Arc::new(move || {
        config
            .clone()
            .with_extension(Arc::new(RejectLog::default()))
    })
}
