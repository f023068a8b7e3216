//! The codec of a typed string leaf, chosen per file by what reading the leaf costs: the
//! bytes a scan fetches from object storage plus the CPU time to decompress them.
//!
//! Which codec is cheaper depends on the values, not on their path: random identifiers
//! (content hashes, record keys) are base32 text that LZ4 barely shrinks (0.89 of their
//! size for 1M Bluesky events' `cid`) while zstd's entropy coder halves it (0.53); free
//! text shrinks well with both. A sample of each leaf's values is compressed with every
//! candidate, and the codec with the least estimated read time wins:
//! `compressed / SCAN_BYTES_PER_SECOND + raw / decode speed`. The sizes are measured on
//! the sample, so the choice is deterministic for the same documents; the speeds are
//! constants, measured once, so a file does not depend on the machine that wrote it.

use std::collections::HashSet;

use arrow::array::{Array, StringArray};
use parquet::basic::{Compression, ZstdLevel};

/// Bytes per second one decoding core receives from object storage. "Exploiting Cloud
/// Object Storage for High-Performance Analytics" (Durner, Leis, Neumann, VLDB 2023)
/// measured 75-80 Gbit/s on a 72-vCPU instance: about 130 MB/s per core.
const SCAN_BYTES_PER_SECOND: f64 = 130e6;

/// Decompressed bytes per second, per codec, of a core decoding Parquet pages of
/// Bluesky's string leaves (`cid`, `did`, `rkey`, `text`, `uri`; lz4_flex block and
/// the zstd crate's streaming decoder, as the parquet crate uses them): LZ4 2.9-7.2
/// GB/s, zstd level 1 0.8-2.2 GB/s. The lower ends, so bytes are not undervalued on a
/// slower core. Copying uncompressed pages runs at memory speed.
const LZ4_DECODE_BYTES_PER_SECOND: f64 = 3e9;
const ZSTD_DECODE_BYTES_PER_SECOND: f64 = 0.8e9;
const COPY_BYTES_PER_SECOND: f64 = 10e9;

/// zstd level of the leaves it is chosen for: on the identifiers above level 1 packs
/// smaller than level 3 (0.53 against 0.58 of `cid`) and compresses faster.
const ZSTD_LEVEL: i32 = 1;

/// How many windows of a leaf's values are sampled, spread evenly over its rows, and
/// the most bytes of each: 256 KiB in all keeps the choice to about a millisecond of
/// compression per leaf and file.
const SAMPLE_WINDOWS: usize = 4;
const SAMPLE_WINDOW_BYTES: usize = 64 << 10;

/// The codec whose pages of `values` are cheapest to read. `distinct`: the leaf is
/// dictionary-encoded, so its pages hold each value once (the dictionary) and the
/// sample skips repeats, which would make the values look more compressible than the
/// dictionary is.
pub(crate) fn string_leaf_codec(values: &StringArray, distinct: bool) -> Compression {
    let sample = plain_sample(values, distinct);
    if sample.is_empty() {
        return Compression::UNCOMPRESSED;
    }
    let lz4 = lz4_flex::block::compress(&sample).len();
    // zstd fails only on an invalid level or a too small output buffer, neither of
    // which `compress` has; a failure leaves zstd out of the choice.
    let zstd = zstd::bulk::compress(&sample, ZSTD_LEVEL).map_or(usize::MAX, |c| c.len());
    cheapest(sample.len(), lz4, zstd)
}

/// The candidate with the least read time for `raw` bytes that LZ4 packs to `lz4` and
/// zstd to `zstd` bytes.
fn cheapest(raw: usize, lz4: usize, zstd: usize) -> Compression {
    let seconds = |stored: usize, decode_bytes_per_second: f64| {
        stored as f64 / SCAN_BYTES_PER_SECOND + raw as f64 / decode_bytes_per_second
    };
    let level = ZstdLevel::try_new(ZSTD_LEVEL).expect("a valid zstd level");
    let candidates = [
        (
            Compression::UNCOMPRESSED,
            seconds(raw, COPY_BYTES_PER_SECOND),
        ),
        (
            Compression::LZ4_RAW,
            seconds(lz4, LZ4_DECODE_BYTES_PER_SECOND),
        ),
        (
            Compression::ZSTD(level),
            seconds(zstd, ZSTD_DECODE_BYTES_PER_SECOND),
        ),
    ];
    candidates
        .into_iter()
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(codec, _)| codec)
        .expect("candidates are not empty")
}

/// Values from [`SAMPLE_WINDOWS`] places of `values`, laid out as Parquet's PLAIN
/// encoding lays them out (a 4-byte length before each value).
fn plain_sample(values: &StringArray, distinct: bool) -> Vec<u8> {
    let mut sample = Vec::with_capacity(SAMPLE_WINDOWS * SAMPLE_WINDOW_BYTES);
    let mut seen: HashSet<&str> = HashSet::new();
    let rows = values.len();
    for window in 0..SAMPLE_WINDOWS {
        let end = sample.len() + SAMPLE_WINDOW_BYTES;
        let rows_of_window = window * rows / SAMPLE_WINDOWS..(window + 1) * rows / SAMPLE_WINDOWS;
        for row in rows_of_window {
            if sample.len() >= end {
                break;
            }
            if values.is_null(row) {
                continue;
            }
            let value = values.value(row);
            if distinct && !seen.insert(value) {
                continue;
            }
            let length = u32::try_from(value.len()).expect("string values fit 32-bit offsets");
            sample.extend_from_slice(&length.to_le_bytes());
            sample.extend_from_slice(value.as_bytes());
        }
    }
    sample
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_saved_are_weighed_against_decoding_time() {
        // Nothing saved: no codec is worth decoding.
        assert_eq!(cheapest(1000, 990, 985), Compression::UNCOMPRESSED);
        // zstd saves a little more than LZ4, not enough to pay its slower decoding.
        assert_eq!(cheapest(1000, 500, 480), Compression::LZ4_RAW);
        // zstd halves what LZ4 barely shrinks (random identifiers).
        assert!(matches!(cheapest(1000, 890, 530), Compression::ZSTD(_)));
    }

    #[test]
    fn codecs_follow_the_values() {
        // Text that repeats itself: both codecs pack it to a fraction, so decoding
        // speed decides.
        let text: StringArray = (0..20_000)
            .map(|i| Some(format!("the same words again and again {}", i % 7)))
            .collect();
        assert_eq!(string_leaf_codec(&text, false), Compression::LZ4_RAW);
        // Hex digests: 4 bits of entropy per byte, which only zstd's entropy coder uses.
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let digests: StringArray = (0..20_000)
            .map(|_| {
                let words: Vec<String> = (0..4)
                    .map(|_| {
                        state = state
                            .wrapping_mul(6_364_136_223_846_793_005)
                            .wrapping_add(1);
                        format!("{:016x}", state)
                    })
                    .collect();
                Some(words.concat())
            })
            .collect();
        assert!(matches!(
            string_leaf_codec(&digests, false),
            Compression::ZSTD(_)
        ));
        let empty: StringArray = vec![None::<&str>; 10].into_iter().collect();
        assert_eq!(string_leaf_codec(&empty, false), Compression::UNCOMPRESSED);
    }

    #[test]
    fn a_dictionary_sample_holds_each_value_once() {
        let values: StringArray = (0..1000).map(|i| Some(format!("v{}", i % 3))).collect();
        let sample = plain_sample(&values, true);
        assert_eq!(sample, b"\x02\0\0\0v0\x02\0\0\0v1\x02\0\0\0v2");
        assert_eq!(plain_sample(&values, false).len(), 1000 * 6);
    }

    #[test]
    fn the_sample_is_bounded_and_spread_over_the_rows() {
        let values: StringArray = (0..100_000).map(|i| Some(format!("{i:0>100}"))).collect();
        let sample = plain_sample(&values, false);
        assert!(sample.len() <= SAMPLE_WINDOWS * (SAMPLE_WINDOW_BYTES + 104));
        // The last window starts three quarters in.
        let last = format!("{:0>100}", 3 * 100_000 / 4);
        assert!(sample.windows(100).any(|w| w == last.as_bytes()));
    }
}
