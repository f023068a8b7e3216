//! Request sizing (after AnyBlob (Durner, Leis, Neumann: Exploiting Cloud Object Storage for High-Performance Analytics, VLDB 2023)): ranges above the request size are split into parts of
//! half to all of it, and small neighbouring ranges are fetched by one request, since
//! object stores bill per request and per-request latency dominates small reads.

use std::ops::Range;

use bytes::{Bytes, BytesMut};

use crate::options::Sizing;

/// The requests that fetch `ranges`: sorted, disjoint, none empty, each at most
/// `sizing.max_request` bytes, together covering every range.
pub fn plan(ranges: &[Range<u64>], sizing: &Sizing) -> Vec<Range<u64>> {
    assert!(sizing.max_request > 0, "max_request must be positive");
    let mut sorted: Vec<Range<u64>> = ranges.iter().filter(|r| r.start < r.end).cloned().collect();
    sorted.sort_by_key(|r| (r.start, r.end));
    let mut merged: Vec<Range<u64>> = Vec::with_capacity(sorted.len());
    for range in sorted {
        match merged.last_mut() {
            Some(last) if range.end <= last.end => {}
            Some(last)
                if range.start <= last.end.saturating_add(sizing.coalesce_gap)
                    && range.end - last.start <= sizing.max_request =>
            {
                last.end = range.end;
            }
            Some(last) => {
                // Overlap with the previous request is fetched once, by that request.
                let start = range.start.max(last.end);
                merged.push(start..range.end);
            }
            None => merged.push(range),
        }
    }
    let mut requests = Vec::with_capacity(merged.len());
    for range in merged {
        let len = range.end - range.start;
        let parts = len.div_ceil(sizing.max_request);
        let part = len.div_ceil(parts);
        requests.extend(
            (0..parts)
                .map(|i| range.start + i * part..(range.start + (i + 1) * part).min(range.end)),
        );
    }
    debug_assert!(requests.windows(2).all(|w| w[0].end <= w[1].start));
    debug_assert!(
        requests
            .iter()
            .all(|r| r.end - r.start <= sizing.max_request)
    );
    requests
}

/// Cuts `ranges` out of the fetched `requests` (as returned by [`plan`], with their
/// bodies): a range inside one request is a zero-copy slice; one spanning several
/// requests is copied together once.
pub(crate) fn assemble(ranges: &[Range<u64>], requests: &[(Range<u64>, Bytes)]) -> Vec<Bytes> {
    ranges
        .iter()
        .map(|range| {
            let first = requests.partition_point(|(r, _)| r.end <= range.start);
            let mut pieces = requests[first..]
                .iter()
                .take_while(|(r, _)| r.start < range.end)
                .map(|(r, body)| {
                    let from = (range.start.max(r.start) - r.start) as usize;
                    let to = (range.end.min(r.end) - r.start) as usize;
                    body.slice(from.min(body.len())..to.min(body.len()))
                });
            match (pieces.next(), pieces.next()) {
                (None, _) => Bytes::new(),
                (Some(only), None) => only,
                (Some(a), Some(b)) => {
                    let mut out = BytesMut::with_capacity((range.end - range.start) as usize);
                    out.extend_from_slice(&a);
                    out.extend_from_slice(&b);
                    pieces.for_each(|p| out.extend_from_slice(&p));
                    out.freeze()
                }
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1024 * 1024;

    fn sizing() -> Sizing {
        Sizing {
            max_request: 16 * MIB,
            coalesce_gap: MIB,
        }
    }

    #[test]
    fn large_ranges_split_into_8_to_16_mib_parts() {
        let one = |range: Range<u64>| plan(std::slice::from_ref(&range), &sizing());
        let requests = one(0..100 * MIB);
        assert_eq!(requests.len(), 7);
        assert!(requests.iter().all(|r| r.end - r.start > 8 * MIB));
        assert!(requests.iter().all(|r| r.end - r.start <= 16 * MIB));
        assert_eq!(requests.first().unwrap().start, 0);
        assert_eq!(requests.last().unwrap().end, 100 * MIB);
        assert_eq!(one(0..17 * MIB).len(), 2);
        assert_eq!(one(0..16 * MIB), vec![0..16 * MIB]);
    }

    #[test]
    fn close_neighbours_coalesce_and_far_ones_do_not() {
        let ranges = [0..100, 200..300, 10 * MIB..10 * MIB + 5, 50..150];
        assert_eq!(
            plan(&ranges, &sizing()),
            vec![0..300, 10 * MIB..10 * MIB + 5]
        );
        // Coalescing stops at the request size.
        let ranges = [0..10 * MIB, 10 * MIB + 1..20 * MIB];
        assert_eq!(
            plan(&ranges, &sizing()),
            vec![0..10 * MIB, 10 * MIB + 1..20 * MIB]
        );
    }

    #[test]
    fn assembly_returns_each_range_in_order() {
        let data: Vec<u8> = (0..40 * MIB).map(|i| (i % 251) as u8).collect();
        let ranges = [
            30 * MIB..40 * MIB,
            5..10,
            0..20 * MIB,
            7..7,
            10 * MIB..10 * MIB + 3,
        ];
        let requests: Vec<(Range<u64>, Bytes)> = plan(&ranges, &sizing())
            .into_iter()
            .map(|r| {
                let body = Bytes::copy_from_slice(&data[r.start as usize..r.end as usize]);
                (r, body)
            })
            .collect();
        let got = assemble(&ranges, &requests);
        for (range, bytes) in ranges.iter().zip(&got) {
            assert_eq!(&bytes[..], &data[range.start as usize..range.end as usize]);
        }
    }
}
