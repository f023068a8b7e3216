//! One clear sentence for a failed statement, at the edge where users see it.

use datafusion::common::DataFusionError;
use tessera_blob::StoreFactory;

use crate::options::format_bytes;

/// Describes `error` for a person: object-store failures become sentences naming the
/// endpoint, bucket or credential at fault (never a secret); DataFusion's own errors
/// keep their text, without internal wrapping; running out of the memory pool's
/// `memory_limit_bytes` names the limit and how to raise it.
pub fn describe(
    error: &DataFusionError,
    stores: &StoreFactory,
    memory_limit_bytes: Option<u64>,
) -> String {
    if let Some(store_error) = find_store_error(error) {
        return stores.explain(store_error);
    }
    let root = error.find_root();
    if let (DataFusionError::ResourcesExhausted(_), Some(limit)) = (root, memory_limit_bytes) {
        return format!(
            "the query needs more memory than the memory limit of {} allows, even spilling \
             to disk where it can: raise the limit with --memory-limit SIZE or \
             SET tessera.memory_limit = 'SIZE'",
            format_bytes(limit)
        );
    }
    let text = match root {
        DataFusionError::Execution(msg)
        | DataFusionError::Plan(msg)
        | DataFusionError::Configuration(msg) => msg.clone(),
        DataFusionError::External(e) => e.to_string(),
        other => other.to_string(),
    };
    text.trim().to_string()
}

fn find_store_error(error: &DataFusionError) -> Option<&object_store::Error> {
    match error {
        DataFusionError::ObjectStore(e) => Some(e),
        DataFusionError::Context(_, inner) => find_store_error(inner),
        DataFusionError::Diagnostic(_, inner) => find_store_error(inner),
        DataFusionError::Shared(inner) => find_store_error(inner),
        DataFusionError::External(e) => {
            if let Some(os) = e.downcast_ref::<object_store::Error>() {
                return Some(os);
            }
            if let Some(df) = e.downcast_ref::<DataFusionError>() {
                return find_store_error(df);
            }
            None
        }
        DataFusionError::ArrowError(arrow_error, _) => match arrow_error.as_ref() {
            arrow::error::ArrowError::ExternalError(e) => {
                if let Some(os) = e.downcast_ref::<object_store::Error>() {
                    return Some(os);
                }
                e.downcast_ref::<DataFusionError>()
                    .and_then(find_store_error)
            }
            _ => None,
        },
        _ => None,
    }
}
