//! Tessera's `datafusion-proto` extension codec: the plan nodes DataFusion cannot encode
//! itself, so that a sub-plan runs unchanged in another process (the storage-side
//! worker, and Ballista executors).
//!
//! DataFusion's own nodes (filters, projections, partial aggregates, sorts) and its
//! expressions encode themselves; functions travel by name and resolve against the
//! receiving session's registry, which is a Tessera session with the same functions.
//! This codec adds the raw NDJSON scan ([`ndjson_scan`]), the Tessera table scan pinned
//! to its client's table version ([`tessera_scan`]), the aggregation on dictionary
//! codes ([`code_aggregate`]), the data files of a distributed write
//! ([`write_files`]), the size of a sample the worker takes for the pushdown choice
//! ([`SampleSizeExec`]) and a join's probe side filtered by its build keys
//! ([`bloom_probe`]). A plan never carries credentials: the receiver reads the
//! files with its own stores, and rejected lines go to its own reject log.

mod bloom_probe;
mod code_aggregate;
mod ndjson_scan;
mod tessera_scan;
mod write_files;

use std::sync::Arc;

use ballista_core::serde::BallistaPhysicalExtensionCodec;
use datafusion::common::{DataFusionError, Result, internal_err, not_impl_err};
use datafusion::datasource::physical_plan::FileScanConfig;
use datafusion::datasource::source::DataSourceExec;
use datafusion::execution::TaskContext;
use datafusion::physical_plan::ExecutionPlan;
use datafusion_proto::physical_plan::{PhysicalExtensionCodec, PhysicalProtoConverterExtension};
use prost::Message;

use self::bloom_probe::{BloomProbeNode, decode_bloom_probe, encode_bloom_probe};
use self::code_aggregate::{CodeAggregateNode, decode_code_aggregate, encode_code_aggregate};
use self::ndjson_scan::{NdjsonScanNode, decode_ndjson_scan, encode_ndjson_scan};
use self::tessera_scan::{TesseraScanNode, decode_tessera_scan, encode_tessera_scan};
use self::write_files::{WriteFilesNode, decode_write_files, encode_write_files};
use crate::datasource::ndjson::source::NdjsonSource;
use crate::datasource::tessera::scan::TesseraSource;
use crate::datasource::tessera::write::distributed::WriteFilesExec;
use crate::physical_plan::bloom_probe::BloomProbeExec;
use crate::physical_plan::code_aggregate::CodeAggregateExec;
use crate::physical_plan::sample_size::SampleSizeExec;

/// Encodes and decodes Tessera's plan nodes for `datafusion-proto`.
#[derive(Debug, Default, Clone, Copy)]
pub struct TesseraCodec;

/// One Tessera node.
#[derive(Clone, PartialEq, Message)]
struct TesseraNode {
    #[prost(oneof = "Node", tags = "1, 2, 3, 4, 5, 6")]
    node: Option<Node>,
}

#[derive(Clone, PartialEq, prost::Oneof)]
enum Node {
    #[prost(message, tag = "1")]
    NdjsonScan(NdjsonScanNode),
    #[prost(message, tag = "2")]
    TesseraScan(TesseraScanNode),
    #[prost(message, tag = "3")]
    CodeAggregate(Box<CodeAggregateNode>),
    #[prost(message, tag = "4")]
    WriteFiles(WriteFilesNode),
    /// A [`SampleSizeExec`]; its one input is the sample.
    #[prost(message, tag = "5")]
    SampleSize(SampleSizeNode),
    /// A [`BloomProbeExec`], sealed; its one input is the probe side.
    #[prost(message, tag = "6")]
    BloomProbe(BloomProbeNode),
}

/// A [`SampleSizeExec`] has nothing of its own to carry.
#[derive(Clone, PartialEq, Message)]
struct SampleSizeNode {}

impl PhysicalExtensionCodec for TesseraCodec {
    fn try_decode(
        &self,
        buf: &[u8],
        inputs: &[Arc<dyn ExecutionPlan>],
        ctx: &TaskContext,
        proto_converter: &dyn PhysicalProtoConverterExtension,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let node = TesseraNode::decode(buf).map_err(wire_error)?;
        let scan_inputs = |scan| match inputs.is_empty() {
            true => Ok(()),
            false => internal_err!("a {scan} scan has no inputs, got {}", inputs.len()),
        };
        match node.node {
            Some(Node::NdjsonScan(scan)) => {
                scan_inputs("NDJSON")?;
                decode_ndjson_scan(&scan, ctx, self, proto_converter)
            }
            Some(Node::TesseraScan(scan)) => {
                scan_inputs("Tessera table")?;
                decode_tessera_scan(&scan, ctx, self, proto_converter)
            }
            Some(Node::CodeAggregate(code)) => {
                decode_code_aggregate(&code, inputs, ctx, self, proto_converter)
            }
            Some(Node::WriteFiles(write)) => decode_write_files(&write, inputs),
            Some(Node::SampleSize(_)) => match inputs {
                [sample] => Ok(Arc::new(SampleSizeExec::new(Arc::clone(sample)))),
                _ => internal_err!("a sample's size has one input, got {}", inputs.len()),
            },
            Some(Node::BloomProbe(probe)) => {
                decode_bloom_probe(&probe, inputs, ctx, self, proto_converter)
            }
            None => internal_err!("an empty Tessera plan node"),
        }
    }

    fn try_encode(
        &self,
        node: Arc<dyn ExecutionPlan>,
        buf: &mut Vec<u8>,
        proto_converter: &dyn PhysicalProtoConverterExtension,
    ) -> Result<()> {
        let encoded = if let Some(code) = node.downcast_ref::<CodeAggregateExec>() {
            let code = encode_code_aggregate(code, self, proto_converter)?;
            Node::CodeAggregate(Box::new(code))
        } else if let Some(write) = node.downcast_ref::<WriteFilesExec>() {
            Node::WriteFiles(encode_write_files(write)?)
        } else if node.is::<SampleSizeExec>() {
            Node::SampleSize(SampleSizeNode {})
        } else if let Some(probe) = node.downcast_ref::<BloomProbeExec>() {
            Node::BloomProbe(encode_bloom_probe(probe, self, proto_converter)?)
        } else {
            encode_scan(&node, self, proto_converter)?
        };
        TesseraNode {
            node: Some(encoded),
        }
        .encode(buf)
        .map_err(|e| DataFusionError::Internal(format!("encoding a Tessera plan node: {e}")))
    }
}

/// The scan `node` as a Tessera node; an error naming it when it is not one of
/// Tessera's scans.
fn encode_scan(
    node: &Arc<dyn ExecutionPlan>,
    codec: &TesseraCodec,
    proto_converter: &dyn PhysicalProtoConverterExtension,
) -> Result<Node> {
    let Some(config) = node
        .downcast_ref::<DataSourceExec>()
        .and_then(|exec| exec.data_source().downcast_ref::<FileScanConfig>())
    else {
        return not_impl_err!("Tessera cannot send {} to another process", node.name());
    };
    let source = config.file_source();
    if let Some(ndjson) = NdjsonSource::from_dyn(source) {
        return encode_ndjson_scan(config, ndjson, codec, proto_converter).map(Node::NdjsonScan);
    }
    if let Some(tessera) = source.downcast_ref::<TesseraSource>() {
        return encode_tessera_scan(config, tessera, codec, proto_converter).map(Node::TesseraScan);
    }
    not_impl_err!(
        "Tessera cannot send a {} scan to another process",
        source.file_type()
    )
}

/// A message that does not decode: bytes from a peer of another version, or damaged.
fn wire_error(e: impl std::fmt::Display) -> DataFusionError {
    DataFusionError::Plan(format!("a Tessera plan node: {e}"))
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

#[cfg(test)]
mod tests {
    use std::io::Write;

    use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
    use datafusion::physical_plan::{ExecutionPlan, displayable};

    use super::*;

    use crate::TesseraSession;
    use crate::physical_plan::worker_exec::{decode_ticket, encode_ticket, partitions_kept};
    use crate::test_support::{session_with, text_rows};

    /// Documents of three kinds, with a number and a nested string.
    fn ndjson_file() -> tempfile::NamedTempFile {
        let mut file = tempfile::NamedTempFile::with_suffix(".json").unwrap();
        for i in 0..20_000 {
            let kind = ["commit", "identity", "account"][i % 3];
            writeln!(
                file,
                r#"{{"kind":"{kind}","n":{i},"s":{{"t":"x{}"}}}}"#,
                i % 7
            )
            .unwrap();
        }
        file
    }

    fn two_partitions() -> TesseraSession {
        session_with(crate::SessionOptions {
            target_partitions: Some(2),
            ..Default::default()
        })
    }

    async fn run(session: &TesseraSession, sql: &str) {
        session.sql(sql).await.unwrap().collect().await.unwrap();
    }

    /// The queries of both tests over `from`: filters decided in the scan, a grouping
    /// on a low-cardinality string, and a top-K.
    fn queries(from: &str) -> Vec<String> {
        vec![
            format!("SELECT j->>'n', j->'s'->>'t' FROM {from} WHERE j->>'kind' = 'commit'"),
            format!(
                "SELECT j->'s'->>'t' AS t, count(*), sum(CAST(j->>'n' AS BIGINT)) FROM {from} \
                 WHERE j->>'kind' IN ('commit', 'account') AND CAST(j->>'n' AS BIGINT) > 10 GROUP BY 1"
            ),
            format!(
                "SELECT j->>'kind', min(j->'s'->>'t'), max(CAST(j->>'n' AS BIGINT)) \
                 FROM {from} GROUP BY 1"
            ),
            format!(
                "SELECT json_get_str(j, 'kind'), j->>'n' FROM {from} \
                 ORDER BY CAST(j->>'n' AS BIGINT) DESC LIMIT 5"
            ),
        ]
    }

    /// Plans over a local NDJSON file, each sent through a ticket and decoded: the
    /// decoded plan shows and answers the same as the sent one.
    #[tokio::test]
    async fn ndjson_plans_survive_a_ticket() {
        let file = ndjson_file();
        let session = two_partitions();
        // Files cut into byte ranges, as large files are.
        run(
            &session,
            "SET datafusion.optimizer.repartition_file_min_size = 1",
        )
        .await;
        let from = format!("'{}'", file.path().display());
        for sql in queries(&from) {
            assert_survives_tickets(&session, &sql, &[], None).await;
        }
    }

    /// The same over a Tessera table of one file shared by two partitions: the decoded
    /// scan names the table version instead of holding the snapshot, and the grouping on
    /// dictionary codes travels as itself.
    #[tokio::test]
    async fn tessera_table_plans_survive_a_ticket() {
        let file = ndjson_file();
        let dir = tempfile::tempdir().unwrap();
        let session = two_partitions();
        let table = dir.path().join("events").display().to_string();
        run(
            &session,
            &format!("CREATE EXTERNAL TABLE events STORED AS TESSERA LOCATION '{table}'"),
        )
        .await;
        let ingest = format!(
            "INSERT INTO events SELECT j FROM '{}'",
            file.path().display()
        );
        run(&session, &ingest).await;
        let mut coded = 0;
        for sql in queries("events") {
            coded += assert_survives_tickets(&session, &sql, &["CodeAggregateExec"], None).await;
        }
        assert!(
            coded > 0,
            "no plan grouped on codes, so none sent CodeAggregateExec"
        );
        // Rows deleted after the tickets were cut are still read by the decoded scans:
        // they read the version planned on, whose files have no deletions yet.
        let count = "SELECT count(*) FROM events";
        let before = text_rows(&session.sql(count).await.unwrap().collect().await.unwrap());
        let scan = "SELECT j->>'n' FROM events";
        let delete = "DELETE FROM events WHERE j->>'kind' = 'commit'";
        assert_survives_tickets(&session, scan, &[], Some(delete)).await;
        let after = text_rows(&session.sql(count).await.unwrap().collect().await.unwrap());
        assert_ne!(
            before, after,
            "the delete between the tickets deleted nothing"
        );
    }

    /// Sends the per-partition sub-plan of `sql` through a ticket per partition and
    /// checks the decoded plans show and answer the same, with the statement `between`
    /// run after encoding; returns how many of `nodes` the sub-plan holds.
    async fn assert_survives_tickets(
        session: &TesseraSession,
        sql: &str,
        nodes: &[&str],
        between: Option<&str>,
    ) -> usize {
        let whole = session
            .sql(sql)
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
        if let Some(statement) = between {
            run(session, statement).await;
        }
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
        nodes.iter().filter(|n| shown.contains(*n)).count()
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
