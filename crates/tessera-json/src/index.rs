//! Stage one of the scanner: bitmaps over a document, 64 bytes per word, computed with
//! SIMD in one pass.
//!
//! With them, finding where a string ends, or checking every escape of a document, is a
//! few bit operations instead of a byte loop: the approach of simdjson (Langdale and
//! Lemire, "Parsing Gigabytes of JSON per Second", 2019). Escapes are resolved so that an
//! escaped quote does not end a string, and "inside a string" is the prefix XOR of the
//! real quotes.

/// The bitmaps of one 64-byte block; bit `i` describes byte `i` of the block.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct BlockMarks {
    /// Quotes that open or close strings (escaped quotes excluded).
    pub quotes: u64,
    /// Backslashes inside strings (escaped ones included).
    pub backslashes: u64,
    /// Characters escaped by a backslash (the byte after an odd run of backslashes).
    pub escaped: u64,
    /// Control characters (< 0x20) inside strings, which JSON forbids.
    pub controls: u64,
}

/// Bitmaps of one document, one [`BlockMarks`] per 64 bytes.
#[derive(Debug, Default, Clone)]
pub struct Marks {
    /// The blocks, in document order.
    pub blocks: Vec<BlockMarks>,
    /// True when the document ends inside a string (an unterminated string).
    pub ends_in_string: bool,
    /// The union of all blocks, to skip searches for what a document does not contain
    /// (most have no backslash and no control character at all).
    pub any: BlockMarks,
}

/// Raw per-block bitmaps before escapes and strings are resolved.
#[derive(Clone, Copy, Default)]
struct Block {
    quote: u64,
    backslash: u64,
    control: u64,
}

const EVEN_BITS: u64 = 0x5555_5555_5555_5555;

impl Marks {
    /// Computes the bitmaps of `doc`, reusing this value's buffers.
    pub fn index(&mut self, doc: &[u8]) {
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx2") {
                // SAFETY: AVX2 is available, as just checked.
                return unsafe { self.index_avx2(doc) };
            }
            // SAFETY: SSE2 is part of the x86_64 baseline.
            unsafe { self.index_sse2(doc) }
        }
        #[cfg(not(target_arch = "x86_64"))]
        self.index_with(doc, classify_scalar)
    }

    /// [`Self::index`] compiled for AVX2, with the AVX2 classifier inlined.
    ///
    /// # Safety
    ///
    /// The CPU must support AVX2 (checked with `is_x86_feature_detected!`).
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn index_avx2(&mut self, doc: &[u8]) {
        // SAFETY: this function's own contract is that the CPU has AVX2.
        self.index_with(doc, |chunk| unsafe { classify_avx2(chunk) })
    }

    /// [`Self::index`] compiled for SSE2, with the SSE2 classifier inlined.
    ///
    /// # Safety
    ///
    /// The CPU must support SSE2, which every x86_64 CPU does.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "sse2")]
    unsafe fn index_sse2(&mut self, doc: &[u8]) {
        // SAFETY: SSE2 is part of the x86_64 baseline.
        self.index_with(doc, |chunk| unsafe { classify_sse2(chunk) })
    }

    /// The indexing loop, generic over the block classifier so that each instruction
    /// set gets its own inlined copy.
    #[inline(always)]
    fn index_with(&mut self, doc: &[u8], classify: impl Fn(&[u8; 64]) -> Block) {
        let words = doc.len().div_ceil(64);
        self.blocks.clear();
        self.blocks.reserve(words);
        let mut any = BlockMarks::default();
        let mut prev_escaped = 0u64;
        let mut prev_in_string = 0u64;
        // The tail is padded with spaces, which mark nothing.
        let mut padded = [b' '; 64];
        for w in 0..words {
            let start = w * 64;
            let chunk: &[u8; 64] = match doc.get(start..start + 64) {
                Some(full) => full.try_into().expect("64 bytes"),
                None => {
                    padded[..doc.len() - start].copy_from_slice(&doc[start..]);
                    &padded
                }
            };
            let block = classify(chunk);
            let escaped = find_escaped(block.backslash, &mut prev_escaped);
            let quotes = block.quote & !escaped;
            let in_string = prefix_xor(quotes) ^ prev_in_string;
            prev_in_string = ((in_string as i64) >> 63) as u64;
            let marks = BlockMarks {
                quotes,
                backslashes: block.backslash & in_string,
                escaped: escaped & in_string,
                controls: block.control & in_string,
            };
            any.backslashes |= marks.backslashes;
            any.escaped |= marks.escaped;
            any.controls |= marks.controls;
            self.blocks.push(marks);
        }
        self.ends_in_string = prev_in_string != 0;
        // Nothing is marked past the end (an escape there would escape padding).
        if !doc.len().is_multiple_of(64)
            && let Some(last) = self.blocks.last_mut()
        {
            let keep = (1u64 << (doc.len() % 64)) - 1;
            last.escaped &= keep;
            last.controls &= keep;
            any.escaped = self.blocks.iter().fold(0, |a, b| a | b.escaped);
            any.controls = self.blocks.iter().fold(0, |a, b| a | b.controls);
        }
        self.any = any;
    }

    /// The first byte at or after `from` and before `to` whose bit `field` selects.
    #[inline]
    pub fn first(
        &self,
        field: impl Fn(&BlockMarks) -> u64,
        from: usize,
        to: usize,
    ) -> Option<usize> {
        let mut w = from / 64;
        let mut word = field(self.blocks.get(w)?) & (!0u64 << (from % 64));
        loop {
            if word != 0 {
                let at = w * 64 + word.trailing_zeros() as usize;
                return (at < to).then_some(at);
            }
            w += 1;
            if w * 64 >= to {
                return None;
            }
            word = field(self.blocks.get(w)?);
        }
    }
}

/// Marks the characters escaped by backslashes: the character after each odd-length run.
/// `prev` carries an escape across the block boundary.
#[inline]
fn find_escaped(backslash: u64, prev: &mut u64) -> u64 {
    let backslash = backslash & !*prev;
    let follows_escape = (backslash << 1) | *prev;
    let odd_sequence_starts = backslash & !EVEN_BITS & !follows_escape;
    let (sequences_starting_on_even_bits, overflow) =
        odd_sequence_starts.overflowing_add(backslash);
    *prev = overflow as u64;
    let invert_mask = sequences_starting_on_even_bits << 1;
    (EVEN_BITS ^ invert_mask) & follows_escape
}

/// Bit `i` is set when an odd number of bits at or below `i` are set in `x`.
#[inline]
fn prefix_xor(mut x: u64) -> u64 {
    x ^= x << 1;
    x ^= x << 2;
    x ^= x << 4;
    x ^= x << 8;
    x ^= x << 16;
    x ^= x << 32;
    x
}

/// The raw bitmaps of one 64-byte block, 32 bytes per AVX2 instruction.
///
/// # Safety
///
/// The CPU must support AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn classify_avx2(chunk: &[u8; 64]) -> Block {
    use std::arch::x86_64::*;
    let quote = _mm256_set1_epi8(b'"' as i8);
    let backslash = _mm256_set1_epi8(b'\\' as i8);
    let control = _mm256_set1_epi8(0x1f);
    let mut out = Block::default();
    for half in 0..2 {
        // SAFETY: the chunk has 64 bytes; each half loads 32 of them.
        let v = unsafe { _mm256_loadu_si256(chunk.as_ptr().add(half * 32) as *const __m256i) };
        let mask = |m: __m256i| (_mm256_movemask_epi8(m) as u32 as u64) << (half * 32);
        out.quote |= mask(_mm256_cmpeq_epi8(v, quote));
        out.backslash |= mask(_mm256_cmpeq_epi8(v, backslash));
        out.control |= mask(_mm256_cmpeq_epi8(_mm256_min_epu8(v, control), v));
    }
    out
}

/// The raw bitmaps of one 64-byte block, 16 bytes per SSE2 instruction.
///
/// # Safety
///
/// The CPU must support SSE2, which every x86_64 CPU does.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse2")]
#[inline]
unsafe fn classify_sse2(chunk: &[u8; 64]) -> Block {
    use std::arch::x86_64::*;
    let quote = _mm_set1_epi8(b'"' as i8);
    let backslash = _mm_set1_epi8(b'\\' as i8);
    let control = _mm_set1_epi8(0x1f);
    let mut out = Block::default();
    for quarter in 0..4 {
        // SAFETY: the chunk has 64 bytes; each quarter loads 16 of them.
        let v = unsafe { _mm_loadu_si128(chunk.as_ptr().add(quarter * 16) as *const __m128i) };
        let mask = |m: __m128i| (_mm_movemask_epi8(m) as u32 as u64) << (quarter * 16);
        out.quote |= mask(_mm_cmpeq_epi8(v, quote));
        out.backslash |= mask(_mm_cmpeq_epi8(v, backslash));
        out.control |= mask(_mm_cmpeq_epi8(_mm_min_epu8(v, control), v));
    }
    out
}

#[cfg_attr(all(target_arch = "x86_64", not(test)), allow(dead_code))]
fn classify_scalar(chunk: &[u8; 64]) -> Block {
    let mut out = Block::default();
    for (i, &b) in chunk.iter().enumerate() {
        let bit = 1u64 << i;
        match b {
            b'"' => out.quote |= bit,
            b'\\' => out.backslash |= bit,
            _ => {}
        }
        if b < 0x20 {
            out.control |= bit;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bitmaps by a byte-at-a-time state machine, as the reference.
    fn reference(doc: &[u8]) -> Marks {
        let mut blocks = vec![BlockMarks::default(); doc.len().div_ceil(64)];
        let (mut in_string, mut escape_next) = (false, false);
        for (i, &b) in doc.iter().enumerate() {
            let (m, bit) = (&mut blocks[i / 64], 1u64 << (i % 64));
            if escape_next {
                escape_next = false;
                if in_string {
                    m.escaped |= bit;
                    if b == b'\\' {
                        m.backslashes |= bit;
                    }
                    if b < 0x20 {
                        m.controls |= bit;
                    }
                }
                continue;
            }
            match b {
                b'\\' => {
                    escape_next = true;
                    if in_string {
                        m.backslashes |= bit;
                    }
                }
                b'"' => {
                    m.quotes |= bit;
                    in_string = !in_string;
                }
                b if b < 0x20 && in_string => m.controls |= bit,
                _ => {}
            }
        }
        let any = blocks
            .iter()
            .fold(BlockMarks::default(), |a, b| BlockMarks {
                backslashes: a.backslashes | b.backslashes,
                escaped: a.escaped | b.escaped,
                controls: a.controls | b.controls,
                ..a
            });
        Marks {
            blocks,
            ends_in_string: in_string,
            any,
        }
    }

    fn assert_same(doc: &[u8]) {
        let mut got = Marks::default();
        got.index(doc);
        let want = reference(doc);
        let text = String::from_utf8_lossy(doc);
        assert_eq!(got.blocks, want.blocks, "marks of {text:?}");
        assert_eq!(got.ends_in_string, want.ends_in_string, "end of {text:?}");
        assert_eq!(got.any, want.any, "union of {text:?}");
    }

    #[test]
    fn matches_the_reference_on_crafted_documents() {
        let cases: &[&[u8]] = &[
            b"",
            br#"{"a":"b"}"#,
            br#"{"a\"b":"[{\\\\"}"#,
            br#"["\\","\\\"]","x\\\\\"y"]"#,
            b"{\"t\":\"tab\there\"}",
            br#"{"open": "never closed"#,
        ];
        for doc in cases {
            assert_same(doc);
        }
    }

    #[test]
    fn matches_the_reference_across_block_boundaries() {
        // Runs of backslashes and quotes placed at every offset around the 64-byte seams.
        for len in [1usize, 2, 3, 4, 5, 8] {
            for at in 55..75 {
                let mut doc = vec![b'x'; 140];
                doc[0] = b'"';
                for k in 0..len {
                    doc[at + k] = b'\\';
                }
                doc[at + len] = b'"';
                doc[at + len + 1] = b'{';
                doc[130] = b'"';
                doc[131] = b']';
                assert_same(&doc);
            }
        }
    }

    #[test]
    fn matches_the_reference_on_pseudo_random_documents() {
        let alphabet = b"\"\\{}[]ab \x01:,";
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..2000 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let len = (state % 300) as usize;
            let doc: Vec<u8> = (0..len)
                .map(|i| {
                    let r = state.rotate_left(i as u32 % 64)
                        ^ (i as u64).wrapping_mul(0x2545_f491_4f6c_dd1d);
                    alphabet[(r % alphabet.len() as u64) as usize]
                })
                .collect();
            assert_same(&doc);
        }
    }

    #[test]
    fn first_finds_bits_in_ranges() {
        let marks = Marks {
            blocks: [0b1000u64, 0, 1 << 5]
                .iter()
                .map(|&quotes| BlockMarks {
                    quotes,
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        };
        let quotes = |b: &BlockMarks| b.quotes;
        assert_eq!(marks.first(quotes, 0, 200), Some(3));
        assert_eq!(marks.first(quotes, 4, 200), Some(133));
        assert_eq!(marks.first(quotes, 4, 133), None);
        assert_eq!(marks.first(quotes, 134, 200), None);
        assert_eq!(marks.first(quotes, 500, 600), None);
    }

    #[test]
    fn simd_and_scalar_classification_agree() {
        let mut chunk = [0u8; 64];
        for (i, b) in chunk.iter_mut().enumerate() {
            *b = b"\"\\{}[]x\x05 \xc3\xa9"[i % 11];
        }
        let scalar = classify_scalar(&chunk);
        let bits = |b: Block| (b.quote, b.backslash, b.control);
        #[cfg(target_arch = "x86_64")]
        {
            // SAFETY: SSE2 is part of the x86_64 baseline.
            assert_eq!(bits(unsafe { classify_sse2(&chunk) }), bits(scalar));
            if std::arch::is_x86_feature_detected!("avx2") {
                // SAFETY: AVX2 is available, as just checked.
                assert_eq!(bits(unsafe { classify_avx2(&chunk) }), bits(scalar));
            }
        }
    }
}
