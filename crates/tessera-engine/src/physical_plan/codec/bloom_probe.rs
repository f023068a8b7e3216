//! [`BloomProbeExec`] on the wire: its key, and the Bloom filter its build side sealed
//! (the bits packed eight to a byte), never the keys themselves. Only a sealed probe
//! is sent ([`BloomProbeExec::seal_all`] waits for it), so the receiver's copy filters
//! from its first row.

use std::sync::Arc;

use datafusion::common::{Result, internal_err};
use datafusion::execution::TaskContext;
use datafusion::physical_plan::ExecutionPlan;
use datafusion_proto::physical_plan::{
    PhysicalExtensionCodec, PhysicalPlanDecodeContext, PhysicalProtoConverterExtension,
};
use datafusion_proto::protobuf::PhysicalExprNode;
use prost::Message;
use tessera_pushdown::bloom::BloomFilter;

use crate::physical_plan::bloom_probe::BloomProbeExec;
use crate::physical_plan::build_keys::{BuildKeys, Sealed};

/// A Bloom probe, sealed.
#[derive(Clone, PartialEq, Message)]
pub(super) struct BloomProbeNode {
    /// The probe key over the input's rows.
    #[prost(message, optional, tag = "1")]
    key: Option<PhysicalExprNode>,
    /// The filter; none when the build side sealed none (nothing is dropped).
    #[prost(message, optional, tag = "2")]
    filter: Option<BloomFilterNode>,
}

/// A [`BloomFilter`]'s parts.
#[derive(Clone, PartialEq, Message)]
struct BloomFilterNode {
    /// `(a, b)` of each hash function, flattened.
    #[prost(uint64, repeated, tag = "1")]
    hashes: Vec<u64>,
    #[prost(uint64, tag = "2")]
    slice_bits: u64,
    /// The bits, eight to a byte, lowest bit first.
    #[prost(bytes = "vec", tag = "3")]
    bits: Vec<u8>,
}

pub(super) fn encode_bloom_probe(
    probe: &BloomProbeExec,
    codec: &dyn PhysicalExtensionCodec,
    proto_converter: &dyn PhysicalProtoConverterExtension,
) -> Result<BloomProbeNode> {
    let Sealed::Done(filter) = probe.sealed() else {
        return internal_err!("a Bloom probe sent before its build side ended");
    };
    Ok(BloomProbeNode {
        key: Some(proto_converter.physical_expr_to_proto(probe.key(), codec)?),
        filter: filter.as_deref().map(BloomFilterNode::of),
    })
}

pub(super) fn decode_bloom_probe(
    node: &BloomProbeNode,
    inputs: &[Arc<dyn ExecutionPlan>],
    ctx: &TaskContext,
    codec: &dyn PhysicalExtensionCodec,
    proto_converter: &dyn PhysicalProtoConverterExtension,
) -> Result<Arc<dyn ExecutionPlan>> {
    let [input] = inputs else {
        return internal_err!("a Bloom probe has one input, got {}", inputs.len());
    };
    let Some(key) = &node.key else {
        return internal_err!("a Bloom probe without its key");
    };
    let decode = PhysicalPlanDecodeContext::new(ctx, codec);
    let key = proto_converter.proto_to_physical_expr(key, &input.schema(), &decode)?;
    let filter = node.filter.as_ref().map(filter_of).transpose()?;
    let keys = Arc::new(BuildKeys::sealed(filter.map(Arc::new)));
    Ok(Arc::new(BloomProbeExec::try_new(
        Arc::clone(input),
        key,
        keys,
    )?))
}

impl BloomFilterNode {
    fn of(filter: &BloomFilter) -> Self {
        let pack = |byte: &[bool]| (0..byte.len()).fold(0u8, |p, i| p | (u8::from(byte[i]) << i));
        Self {
            hashes: filter.hashes().iter().flat_map(|&(a, b)| [a, b]).collect(),
            slice_bits: filter.slice_bits(),
            bits: filter.bits().chunks(8).map(pack).collect(),
        }
    }
}

/// The filter `node` carries; an error when its parts do not fit together.
fn filter_of(node: &BloomFilterNode) -> Result<BloomFilter> {
    let hashes: Vec<(u64, u64)> = node.hashes.chunks_exact(2).map(|p| (p[0], p[1])).collect();
    let bits_len = node.slice_bits.saturating_mul(hashes.len() as u64);
    let odd = !node.hashes.len().is_multiple_of(2);
    if odd || node.bits.len() as u64 != bits_len.div_ceil(8) {
        return internal_err!("a Bloom filter whose parts do not fit together");
    }
    let bits = (0..bits_len as usize)
        .map(|i| node.bits[i / 8] & (1 << (i % 8)) != 0)
        .collect();
    match BloomFilter::from_parts(hashes, node.slice_bits, bits) {
        Some(filter) => Ok(filter),
        None => internal_err!("a Bloom filter whose parts do not fit together"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_filter_survives_its_packing() {
        let keys: Vec<i64> = (0..1_000).map(|k| k * 7 - 3_000).collect();
        let filter = BloomFilter::with_keys(&keys, 1 << 20).unwrap();
        let node = BloomFilterNode::of(&filter);
        assert_eq!(filter_of(&node).unwrap(), filter);
        let mut cut = node.clone();
        cut.bits.pop();
        assert!(filter_of(&cut).is_err());
        let mut odd = node;
        odd.hashes.pop();
        assert!(filter_of(&odd).is_err());
    }
}
