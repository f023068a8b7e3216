//! Tessera's `datafusion-proto` extension codec: the plan nodes DataFusion cannot encode
//! itself, so that a sub-plan runs unchanged in another process (the storage-side
//! worker, and Ballista executors).
//!
//! DataFusion's own nodes (filters, projections, partial aggregates, sorts) and its
//! expressions encode themselves; functions travel by name and resolve against the
//! receiving session's registry, which is a Tessera session with the same functions.
//! This codec adds the raw NDJSON scan: its file groups and projection (DataFusion's
//! `FileScanExecConf`), the document filters it decides while parsing, and its scan
//! settings. A plan never carries credentials: the receiver reads the files with its
//! own stores, and rejected lines go to its own reject log.

use std::collections::BTreeSet;
use std::sync::Arc;

use ballista_core::serde::BallistaPhysicalExtensionCodec;
use datafusion::common::{DataFusionError, Result, internal_err, not_impl_err};
use datafusion::datasource::physical_plan::FileScanConfig;
use datafusion::datasource::source::DataSourceExec;
use datafusion::execution::TaskContext;
use datafusion::physical_plan::ExecutionPlan;
use datafusion_proto::physical_plan::from_proto::{
    parse_protobuf_file_scan_config, parse_table_schema_from_proto,
};
use datafusion_proto::physical_plan::to_proto::serialize_file_scan_config;
use datafusion_proto::physical_plan::{
    PhysicalExtensionCodec, PhysicalPlanDecodeContext, PhysicalProtoConverterExtension,
};
use datafusion_proto::protobuf::FileScanExecConf;
use prost::Message;

use crate::access::document_filter::DocPredicate;
use crate::datasource::ndjson::open::ScanSettings;
use crate::datasource::ndjson::source::NdjsonSource;
use crate::json::Output;
use crate::json::path::PathElem;
use crate::options::{OnError, Validation};
use crate::rejects::RejectLog;

/// Encodes and decodes Tessera's plan nodes for `datafusion-proto`.
#[derive(Debug, Default, Clone, Copy)]
pub struct TesseraCodec;

/// One Tessera node.
#[derive(Clone, PartialEq, Message)]
struct TesseraNode {
    #[prost(oneof = "Node", tags = "1")]
    node: Option<Node>,
}

#[derive(Clone, PartialEq, prost::Oneof)]
enum Node {
    #[prost(message, tag = "1")]
    NdjsonScan(NdjsonScanNode),
}

/// A raw NDJSON scan.
#[derive(Clone, PartialEq, Message)]
struct NdjsonScanNode {
    /// Files, schema, projection, limit: what every file scan has.
    #[prost(message, optional, tag = "1")]
    config: Option<FileScanExecConf>,
    /// The document filters the scan decides while parsing.
    #[prost(message, repeated, tag = "2")]
    filters: Vec<DocPredicateNode>,
    /// Whether malformed lines are skipped (`tessera.on_error = 'skip'`).
    #[prost(bool, tag = "3")]
    skip_malformed: bool,
    /// Whether whole documents are validated (`tessera.validation = 'full'`).
    #[prost(bool, tag = "4")]
    validate_full: bool,
    #[prost(uint64, tag = "5")]
    block_size: u64,
    #[prost(uint64, tag = "6")]
    prefetch: u64,
    /// Whether lines a Tessera table cannot store exactly are malformed (ingest).
    #[prost(bool, tag = "7")]
    storable: bool,
}

/// `path's text ∈ accepted`.
#[derive(Clone, PartialEq, Message)]
struct DocPredicateNode {
    #[prost(message, repeated, tag = "1")]
    path: Vec<PathElemNode>,
    /// `json_get_str` semantics (strings only) instead of `->>`'s.
    #[prost(bool, tag = "2")]
    strings_only: bool,
    #[prost(bytes = "vec", repeated, tag = "3")]
    accepted: Vec<Vec<u8>>,
}

#[derive(Clone, PartialEq, Message)]
struct PathElemNode {
    #[prost(oneof = "Elem", tags = "1, 2")]
    elem: Option<Elem>,
}

#[derive(Clone, PartialEq, prost::Oneof)]
enum Elem {
    #[prost(string, tag = "1")]
    Key(String),
    #[prost(sint64, tag = "2")]
    Index(i64),
}

impl PhysicalExtensionCodec for TesseraCodec {
    fn try_decode(
        &self,
        buf: &[u8],
        inputs: &[Arc<dyn ExecutionPlan>],
        ctx: &TaskContext,
        proto_converter: &dyn PhysicalProtoConverterExtension,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        if !inputs.is_empty() {
            return internal_err!("a Tessera scan has no inputs, got {}", inputs.len());
        }
        let node = TesseraNode::decode(buf)
            .map_err(|e| DataFusionError::Plan(format!("a Tessera plan node: {e}")))?;
        match node.node {
            Some(Node::NdjsonScan(scan)) => decode_ndjson_scan(&scan, ctx, self, proto_converter),
            None => internal_err!("an empty Tessera plan node"),
        }
    }

    fn try_encode(
        &self,
        node: Arc<dyn ExecutionPlan>,
        buf: &mut Vec<u8>,
        proto_converter: &dyn PhysicalProtoConverterExtension,
    ) -> Result<()> {
        let Some(config) = node
            .downcast_ref::<DataSourceExec>()
            .and_then(|exec| exec.data_source().downcast_ref::<FileScanConfig>())
        else {
            return not_impl_err!("Tessera cannot send {} to another process", node.name());
        };
        let Some(source) = NdjsonSource::from_dyn(config.file_source()) else {
            return not_impl_err!(
                "Tessera cannot send a {} scan to another process",
                config.file_source().file_type()
            );
        };
        let scan = encode_ndjson_scan(config, source, self, proto_converter)?;
        TesseraNode {
            node: Some(Node::NdjsonScan(scan)),
        }
        .encode(buf)
        .map_err(|e| DataFusionError::Internal(format!("encoding a Tessera plan node: {e}")))
    }
}

/// The codec of plans a Ballista cluster runs: Tessera's nodes, and Ballista's own
/// shuffle nodes (which the scheduler adds when it cuts a plan into stages), each
/// message tagged with whose it is.
///
/// Ballista's codec cannot hand a node it does not know to another codec, so this one
/// sits above both. The client, the scheduler and every executor use it.
#[derive(Debug, Default)]
pub struct ClusterCodec {
    ballista: BallistaPhysicalExtensionCodec,
}

/// The first byte of a [`ClusterCodec`] message: whose node follows.
const TESSERA_NODE: u8 = 0;
const BALLISTA_NODE: u8 = 1;

impl PhysicalExtensionCodec for ClusterCodec {
    fn try_decode(
        &self,
        buf: &[u8],
        inputs: &[Arc<dyn ExecutionPlan>],
        ctx: &TaskContext,
        proto_converter: &dyn PhysicalProtoConverterExtension,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        match buf.split_first() {
            Some((&TESSERA_NODE, node)) => {
                TesseraCodec.try_decode(node, inputs, ctx, proto_converter)
            }
            Some((&BALLISTA_NODE, node)) => {
                self.ballista.try_decode(node, inputs, ctx, proto_converter)
            }
            Some((tag, _)) => internal_err!("a cluster plan node tagged {tag}"),
            None => internal_err!("an empty cluster plan node"),
        }
    }

    fn try_encode(
        &self,
        node: Arc<dyn ExecutionPlan>,
        buf: &mut Vec<u8>,
        proto_converter: &dyn PhysicalProtoConverterExtension,
    ) -> Result<()> {
        let mut body = Vec::new();
        let tessera = TesseraCodec.try_encode(Arc::clone(&node), &mut body, proto_converter);
        let tag = match tessera {
            Ok(()) => TESSERA_NODE,
            Err(unknown) => {
                body.clear();
                // Tessera's sentence names the node, Ballista's would not.
                self.ballista
                    .try_encode(node, &mut body, proto_converter)
                    .map_err(|_| unknown)?;
                BALLISTA_NODE
            }
        };
        buf.push(tag);
        buf.extend_from_slice(&body);
        Ok(())
    }
}

fn encode_ndjson_scan(
    config: &FileScanConfig,
    source: &NdjsonSource,
    codec: &TesseraCodec,
    proto_converter: &dyn PhysicalProtoConverterExtension,
) -> Result<NdjsonScanNode> {
    let settings = source.settings();
    Ok(NdjsonScanNode {
        config: Some(serialize_file_scan_config(config, codec, proto_converter)?),
        filters: source
            .filters()
            .iter()
            .map(encode_predicate)
            .collect::<Result<_>>()?,
        skip_malformed: settings.on_error == OnError::Skip,
        validate_full: settings.validation == Validation::Full,
        block_size: settings.block_size,
        prefetch: settings.prefetch as u64,
        storable: settings.storable,
    })
}

fn decode_ndjson_scan(
    scan: &NdjsonScanNode,
    ctx: &TaskContext,
    codec: &TesseraCodec,
    proto_converter: &dyn PhysicalProtoConverterExtension,
) -> Result<Arc<dyn ExecutionPlan>> {
    let Some(config) = &scan.config else {
        return internal_err!("an NDJSON scan without its file scan configuration");
    };
    let rejects = ctx
        .session_config()
        .get_extension::<RejectLog>()
        .unwrap_or_default();
    let settings = ScanSettings {
        on_error: if scan.skip_malformed {
            OnError::Skip
        } else {
            OnError::Fail
        },
        validation: if scan.validate_full {
            Validation::Full
        } else {
            Validation::Structure
        },
        block_size: scan.block_size,
        prefetch: usize::try_from(scan.prefetch).unwrap_or(usize::MAX),
        rejects,
        storable: scan.storable,
    };
    let filters = scan
        .filters
        .iter()
        .map(decode_predicate)
        .collect::<Result<Vec<_>>>()?;
    let source =
        NdjsonSource::new(parse_table_schema_from_proto(config)?, settings).with_filters(filters);
    let decode = PhysicalPlanDecodeContext::new(ctx, codec);
    let config =
        parse_protobuf_file_scan_config(config, &decode, proto_converter, Arc::new(source))?;
    Ok(DataSourceExec::from_data_source(config))
}

fn encode_predicate(predicate: &DocPredicate) -> Result<DocPredicateNode> {
    let strings_only = match predicate.output {
        Output::Text => false,
        Output::Str => true,
        other => return internal_err!("a document filter on {other:?} output"),
    };
    let path = predicate
        .path
        .iter()
        .map(|elem| PathElemNode {
            elem: Some(match elem {
                PathElem::Key(key) => Elem::Key(key.clone()),
                PathElem::Index(index) => Elem::Index(*index),
            }),
        })
        .collect();
    Ok(DocPredicateNode {
        path,
        strings_only,
        accepted: predicate.accepted.iter().cloned().collect(),
    })
}

fn decode_predicate(node: &DocPredicateNode) -> Result<DocPredicate> {
    let path = node
        .path
        .iter()
        .map(|elem| match &elem.elem {
            Some(Elem::Key(key)) => Ok(PathElem::Key(key.clone())),
            Some(Elem::Index(index)) => Ok(PathElem::Index(*index)),
            None => internal_err!("a document filter's path has an empty element"),
        })
        .collect::<Result<_>>()?;
    Ok(DocPredicate {
        path,
        output: if node.strings_only {
            Output::Str
        } else {
            Output::Text
        },
        accepted: node.accepted.iter().cloned().collect::<BTreeSet<_>>(),
    })
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
    use datafusion::physical_plan::{ExecutionPlan, displayable};

    use super::*;

    use crate::physical_plan::worker_exec::{decode_ticket, encode_ticket, partitions_kept};
    use crate::test_support::{session_with, text_rows};

    /// Plans over a local NDJSON file, each sent through a ticket and decoded: the
    /// decoded plan shows and answers the same as the sent one.
    #[tokio::test]
    async fn ndjson_plans_survive_a_ticket() {
        let mut file = tempfile::NamedTempFile::with_suffix(".json").unwrap();
        for i in 0..500 {
            let kind = ["commit", "identity", "account"][i % 3];
            writeln!(
                file,
                r#"{{"kind":"{kind}","n":{i},"s":{{"t":"x{}"}}}}"#,
                i % 7
            )
            .unwrap();
        }
        let path = file.path().display();
        let session = session_with(crate::SessionOptions {
            target_partitions: Some(2),
            ..Default::default()
        });
        // Files cut into byte ranges, as large files are.
        let cut = "SET datafusion.optimizer.repartition_file_min_size = 1";
        session.sql(cut).await.unwrap().collect().await.unwrap();
        let queries = [
            format!("SELECT j->>'n', j->'s'->>'t' FROM '{path}' WHERE j->>'kind' = 'commit'"),
            format!(
                "SELECT j->'s'->>'t' AS t, count(*), sum(CAST(j->>'n' AS BIGINT)) FROM '{path}' \
                 WHERE j->>'kind' IN ('commit', 'account') AND CAST(j->>'n' AS BIGINT) > 10 GROUP BY 1"
            ),
            format!(
                "SELECT json_get_str(j, 'kind'), j->>'n' FROM '{path}' \
                 ORDER BY CAST(j->>'n' AS BIGINT) DESC LIMIT 5"
            ),
        ];
        for sql in queries {
            let whole = session
                .sql(&sql)
                .await
                .unwrap()
                .create_physical_plan()
                .await
                .unwrap();
            let plan = per_partition(&whole).expect("a per-partition sub-plan");
            let ctx = partitions_kept(&session.context().task_ctx());
            let shown = displayable(plan.as_ref()).indent(true).to_string();
            // Every ticket before any partition runs: a top-K's filter changes as it does.
            let partitions = plan.properties().partitioning.partition_count();
            let tickets: Vec<Vec<u8>> = (0..partitions)
                .map(|p| encode_ticket(&plan, p).unwrap())
                .collect();
            let (mut sent, mut decoded) = (Vec::new(), Vec::new());
            for (partition, ticket) in tickets.iter().enumerate() {
                let (received, at) = decode_ticket(ticket, &ctx).unwrap();
                assert_eq!(at, partition);
                let again = displayable(received.as_ref()).indent(true).to_string();
                assert_eq!(again, shown, "{sql}");
                let run = |p: &Arc<dyn ExecutionPlan>| {
                    let stream = p.execute(partition, Arc::clone(&ctx)).unwrap();
                    datafusion::physical_plan::common::collect(stream)
                };
                sent.extend(text_rows(&run(&plan).await.unwrap()));
                decoded.extend(text_rows(&run(&received).await.unwrap()));
            }
            sent.sort();
            decoded.sort();
            assert!(!sent.is_empty(), "{sql}");
            assert_eq!(decoded, sent, "{sql}\n{shown}");
        }
    }

    /// The first sub-plan of `plan` whose partitions are computed each on its own.
    fn per_partition(plan: &Arc<dyn ExecutionPlan>) -> Option<Arc<dyn ExecutionPlan>> {
        let exchanges = [
            "RepartitionExec",
            "CoalescePartitionsExec",
            "SortPreservingMergeExec",
        ];
        let mut crosses = false;
        plan.apply(|node| {
            crosses |= exchanges.contains(&node.name());
            Ok(TreeNodeRecursion::Continue)
        })
        .unwrap();
        if !crosses {
            return Some(Arc::clone(plan));
        }
        plan.children().into_iter().find_map(per_partition)
    }
}
