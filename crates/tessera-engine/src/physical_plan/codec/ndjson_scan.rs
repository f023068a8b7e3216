//! The raw NDJSON scan on the wire: DataFusion's file scan configuration (file groups,
//! byte ranges, projection), the document filters the scan decides while parsing, and
//! its scan settings. Rejected lines go to the receiver's own reject log.

use std::collections::BTreeSet;
use std::sync::Arc;

use datafusion::common::{Result, internal_err};
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

/// A raw NDJSON scan.
#[derive(Clone, PartialEq, Message)]
pub(super) struct NdjsonScanNode {
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

pub(super) fn encode_ndjson_scan(
    config: &FileScanConfig,
    source: &NdjsonSource,
    codec: &dyn PhysicalExtensionCodec,
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

pub(super) fn decode_ndjson_scan(
    scan: &NdjsonScanNode,
    ctx: &TaskContext,
    codec: &dyn PhysicalExtensionCodec,
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
