//! [`CodeAggregateExec`] on the wire. Its keys, aggregate functions and filters are
//! exactly a partial `AggregateExec`'s, so they travel as one, which DataFusion encodes
//! itself (functions by name, states, `DISTINCT`, `FILTER`), over an empty placeholder
//! of the input's schema; the receiver takes the parts back out and puts the real input,
//! decoded on its own, underneath.

use std::sync::Arc;

use arrow::datatypes::Schema;
use datafusion::common::{Result, internal_err};
use datafusion::execution::TaskContext;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_plan::aggregates::{AggregateExec, AggregateMode, PhysicalGroupBy};
use datafusion::physical_plan::empty::EmptyExec;
use datafusion_proto::physical_plan::{
    PhysicalExtensionCodec, PhysicalPlanDecodeContext, PhysicalProtoConverterExtension,
};
use datafusion_proto::protobuf::PhysicalPlanNode;
use prost::Message;

use crate::physical_plan::code_aggregate::{CodeAggregateExec, MAX_KEYS};

/// A partial aggregation on dictionary codes.
#[derive(Clone, PartialEq, Message)]
pub(super) struct CodeAggregateNode {
    /// The same grouping as a partial `AggregateExec` over an empty input.
    #[prost(message, optional, tag = "1")]
    aggregate: Option<PhysicalPlanNode>,
    /// The output schema (keys as strings, then the aggregates' states).
    #[prost(message, optional, tag = "2")]
    schema: Option<datafusion_proto::protobuf::Schema>,
    #[prost(uint64, tag = "3")]
    max_groups: u64,
}

pub(super) fn encode_code_aggregate(
    code: &CodeAggregateExec,
    codec: &dyn PhysicalExtensionCodec,
    proto_converter: &dyn PhysicalProtoConverterExtension,
) -> Result<CodeAggregateNode> {
    let [input] = code.children()[..] else {
        return internal_err!("CodeAggregateExec has one input");
    };
    let input_schema = input.schema();
    let placeholder = Arc::new(EmptyExec::new(Arc::clone(&input_schema)));
    let aggregate: Arc<dyn ExecutionPlan> = Arc::new(AggregateExec::try_new(
        AggregateMode::Partial,
        PhysicalGroupBy::new_single(code.keys().to_vec()),
        code.aggregates().to_vec(),
        code.filters().to_vec(),
        placeholder,
        input_schema,
    )?);
    Ok(CodeAggregateNode {
        aggregate: Some(proto_converter.execution_plan_to_proto(&aggregate, codec)?),
        schema: Some(code.schema().as_ref().try_into()?),
        max_groups: code.max_groups() as u64,
    })
}

pub(super) fn decode_code_aggregate(
    node: &CodeAggregateNode,
    inputs: &[Arc<dyn ExecutionPlan>],
    ctx: &TaskContext,
    codec: &dyn PhysicalExtensionCodec,
    proto_converter: &dyn PhysicalProtoConverterExtension,
) -> Result<Arc<dyn ExecutionPlan>> {
    let ([input], Some(aggregate), Some(schema)) = (inputs, &node.aggregate, &node.schema) else {
        return internal_err!("a CodeAggregateExec needs one input, its grouping and schema");
    };
    let decode = PhysicalPlanDecodeContext::new(ctx, codec);
    let aggregate = proto_converter.proto_to_execution_plan(aggregate, &decode)?;
    let Some(aggregate) = aggregate.downcast_ref::<AggregateExec>() else {
        return internal_err!("a CodeAggregateExec's grouping is {}", aggregate.name());
    };
    let keys = aggregate.group_expr().expr();
    let max_groups = usize::try_from(node.max_groups).unwrap_or(usize::MAX);
    if !(1..=MAX_KEYS).contains(&keys.len()) || max_groups == 0 {
        return internal_err!(
            "a CodeAggregateExec of {} keys holding {max_groups} groups",
            keys.len()
        );
    }
    let schema = Schema::try_from(schema)?;
    Ok(Arc::new(CodeAggregateExec::try_new(
        Arc::clone(input),
        keys.to_vec(),
        aggregate.aggr_expr().to_vec(),
        aggregate.filter_expr().to_vec(),
        Arc::new(schema),
        max_groups,
    )?))
}
