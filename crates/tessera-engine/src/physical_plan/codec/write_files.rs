//! [`WriteFilesExec`] on the wire: the table it writes, by store URL and key prefix,
//! and the table's SQL schema. The executor opens the table with its own store.

use std::sync::Arc;

use arrow::datatypes::Schema;
use datafusion::common::{Result, internal_err};
use datafusion::execution::object_store::ObjectStoreUrl;
use datafusion::physical_plan::ExecutionPlan;
use object_store::path::Path;
use prost::Message;

use crate::datasource::tessera::write::distributed::WriteFilesExec;

/// Data files written into one table.
#[derive(Clone, PartialEq, Message)]
pub(super) struct WriteFilesNode {
    #[prost(string, tag = "1")]
    url: String,
    #[prost(string, tag = "2")]
    prefix: String,
    #[prost(message, optional, tag = "3")]
    table_schema: Option<datafusion_proto::protobuf::Schema>,
}

pub(super) fn encode_write_files(exec: &WriteFilesExec) -> Result<WriteFilesNode> {
    let (url, prefix, schema) = exec.target();
    Ok(WriteFilesNode {
        url: url.to_string(),
        prefix: prefix.to_string(),
        table_schema: Some(schema.as_ref().try_into()?),
    })
}

pub(super) fn decode_write_files(
    node: &WriteFilesNode,
    inputs: &[Arc<dyn ExecutionPlan>],
) -> Result<Arc<dyn ExecutionPlan>> {
    let ([input], Some(schema)) = (inputs, &node.table_schema) else {
        return internal_err!("a WriteFilesExec needs one input and its table's schema");
    };
    let url = ObjectStoreUrl::parse(&node.url)?;
    let prefix = Path::parse(&node.prefix).map_err(super::wire_error)?;
    let schema = Arc::new(Schema::try_from(schema)?);
    Ok(Arc::new(WriteFilesExec::new(
        Arc::clone(input),
        url,
        prefix,
        schema,
    )))
}
