//! A Tessera table scan on the wire: DataFusion's file scan configuration (its file
//! groups carry each file's share of rows as a byte range), the filters pushed into the
//! scan, and the table version it reads, by key prefix and number. The receiver attaches
//! a [`PinnedSnapshot`] to every file instead of the client's snapshot, so its tasks
//! read that version's manifest with their own store and credentials. Caches stay with
//! the client: a decoded scan reads its files directly.

use std::sync::Arc;

use datafusion::common::{Result, internal_err};
use datafusion::datasource::physical_plan::{FileGroup, FileScanConfig, FileScanConfigBuilder};
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
use datafusion_proto::protobuf::{FileScanExecConf, PhysicalExprNode};
use object_store::path::Path;
use prost::Message;

use crate::datasource::tessera::scan::{PinnedSnapshot, TesseraSource};

/// A scan of one Tessera table version.
#[derive(Clone, PartialEq, Message)]
pub(super) struct TesseraScanNode {
    /// Files (with their row shares), schema, projection, limit.
    #[prost(message, optional, tag = "1")]
    config: Option<FileScanExecConf>,
    /// Filters over the table schema, applied inside the scan.
    #[prost(message, repeated, tag = "2")]
    filters: Vec<PhysicalExprNode>,
    /// Whether shredded paths are read from typed columns (`tessera.typed_reads`).
    #[prost(bool, tag = "3")]
    typed_reads: bool,
    /// The table's key prefix in its store (the store is the scan's object store URL).
    #[prost(string, tag = "4")]
    prefix: String,
    /// The table version the client planned on.
    #[prost(uint64, tag = "5")]
    version: u64,
}

pub(super) fn encode_tessera_scan(
    config: &FileScanConfig,
    source: &TesseraSource,
    codec: &dyn PhysicalExtensionCodec,
    proto_converter: &dyn PhysicalProtoConverterExtension,
) -> Result<TesseraScanNode> {
    let mut named = config
        .file_groups
        .iter()
        .flat_map(|group| group.iter())
        .map(PinnedSnapshot::named_by);
    // A scan with no files (every one skipped by statistics) names no version.
    let (prefix, version) = match named.next() {
        None => (String::new(), 0),
        Some(None) => return internal_err!("a Tessera scan of a file outside its snapshot"),
        Some(Some(first)) => first,
    };
    if named.any(|other| other.as_ref() != Some(&(prefix.clone(), version))) {
        return internal_err!("a Tessera scan over files of several snapshots");
    }
    let filters = source
        .filters()
        .iter()
        .map(|filter| proto_converter.physical_expr_to_proto(filter, codec))
        .collect::<Result<_>>()?;
    Ok(TesseraScanNode {
        config: Some(serialize_file_scan_config(config, codec, proto_converter)?),
        filters,
        typed_reads: source.typed_reads(),
        prefix,
        version,
    })
}

pub(super) fn decode_tessera_scan(
    scan: &TesseraScanNode,
    ctx: &TaskContext,
    codec: &dyn PhysicalExtensionCodec,
    proto_converter: &dyn PhysicalProtoConverterExtension,
) -> Result<Arc<dyn ExecutionPlan>> {
    let Some(config) = &scan.config else {
        return internal_err!("a Tessera scan without its file scan configuration");
    };
    let table_schema = parse_table_schema_from_proto(config)?;
    let decode = PhysicalPlanDecodeContext::new(ctx, codec);
    let schema = Arc::clone(table_schema.table_schema());
    let filters = scan
        .filters
        .iter()
        .map(|filter| proto_converter.proto_to_physical_expr(filter, &schema, &decode))
        .collect::<Result<_>>()?;
    let source = TesseraSource::new(table_schema, scan.typed_reads).with_filters(filters);
    let config =
        parse_protobuf_file_scan_config(config, &decode, proto_converter, Arc::new(source))?;
    let pinned = Arc::new(PinnedSnapshot::new(
        Path::parse(&scan.prefix).map_err(super::wire_error)?,
        scan.version,
    ));
    let groups: Vec<FileGroup> = config
        .file_groups
        .iter()
        .map(|group| {
            let files = group.iter().cloned().map(|mut file| {
                file.extensions.insert_arc(Arc::clone(&pinned));
                file
            });
            FileGroup::new(files.collect())
        })
        .collect();
    let config = FileScanConfigBuilder::from(config)
        .with_file_groups(groups)
        .build();
    Ok(DataSourceExec::from_data_source(config))
}
