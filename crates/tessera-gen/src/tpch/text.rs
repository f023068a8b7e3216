//! Comment text as TPC-H makes it (clause 4.2.2.14): a pool of sentences from a small
//! grammar, and every comment a random substring of the pool. Substrings matter: Q13's
//! `%special%requests%` and the comment lengths only come out right when a comment may
//! start and end mid-word and span sentence boundaries, as in dbgen.

use crate::rng::Rng;
use crate::tpch::vocab::{
    ADJECTIVES, ADVERBS, AUXILIARIES, NOUNS, PREPOSITIONS, TERMINATORS, VERBS,
};

/// Pool size: dbgen uses 300 MB; 4 MiB keeps start-up in milliseconds while still
/// giving millions of distinct substrings, so comments do not visibly repeat.
const POOL_BYTES: usize = 4 << 20;

/// The longest comment any column asks for (`ps_comment`, 198 characters).
pub(crate) const MAX_COMMENT: usize = 198;

/// A comment: a range of the pool, drawn as numbers so that generating a row's plan
/// costs no text copying.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Span {
    start: u32,
    len: u32,
}

/// The sentence pool of one data set.
pub(crate) struct TextPool {
    text: String,
}

impl TextPool {
    /// Builds the pool from `seed`; the same seed gives the same pool.
    pub(crate) fn new(seed: u64) -> Self {
        let mut rng = Rng::new(seed);
        let mut text = String::with_capacity(POOL_BYTES + 256);
        while text.len() < POOL_BYTES {
            sentence(&mut rng, &mut text);
        }
        Self { text }
    }

    /// Draws a comment of `min..=max` characters at a random place.
    pub(crate) fn span(&self, rng: &mut Rng, min: usize, max: usize) -> Span {
        debug_assert!(max <= MAX_COMMENT);
        let len = rng.between(min as u64, max as u64);
        let start = rng.below((self.text.len() - MAX_COMMENT) as u64);
        Span {
            start: start as u32,
            len: len as u32,
        }
    }

    /// The text of `span`; the pool is ASCII, so every byte offset is a char boundary.
    pub(crate) fn get(&self, span: Span) -> &str {
        let start = span.start as usize;
        &self.text[start..start + span.len as usize]
    }
}

/// Appends one sentence and a space, after the specification's five templates.
fn sentence(rng: &mut Rng, out: &mut String) {
    match rng.weighted(&[(3, 0u8), (3, 1), (3, 2), (1, 3), (1, 4)]) {
        0 => {
            noun_phrase(rng, out);
            verb_phrase(rng, out);
        }
        1 => {
            noun_phrase(rng, out);
            verb_phrase(rng, out);
            prepositional_phrase(rng, out);
        }
        2 => {
            noun_phrase(rng, out);
            verb_phrase(rng, out);
            noun_phrase(rng, out);
        }
        3 => {
            noun_phrase(rng, out);
            prepositional_phrase(rng, out);
            verb_phrase(rng, out);
            noun_phrase(rng, out);
        }
        _ => {
            noun_phrase(rng, out);
            prepositional_phrase(rng, out);
            verb_phrase(rng, out);
            prepositional_phrase(rng, out);
        }
    }
    // Terminators attach to the last word.
    out.pop();
    out.push_str(rng.weighted(TERMINATORS));
    out.push(' ');
}

fn word(rng: &mut Rng, class: &[(u32, &'static str)], out: &mut String) {
    out.push_str(rng.weighted(class));
    out.push(' ');
}

fn noun_phrase(rng: &mut Rng, out: &mut String) {
    match rng.weighted(&[(10, 0u8), (20, 1), (10, 2), (50, 3)]) {
        0 => {}
        1 => word(rng, ADJECTIVES, out),
        2 => {
            out.push_str(rng.weighted(ADJECTIVES));
            out.push_str(", ");
            word(rng, ADJECTIVES, out);
        }
        _ => {
            word(rng, ADVERBS, out);
            word(rng, ADJECTIVES, out);
        }
    }
    word(rng, NOUNS, out);
}

fn verb_phrase(rng: &mut Rng, out: &mut String) {
    let (auxiliary, adverb) = rng.weighted(&[
        (30, (false, false)),
        (1, (true, false)),
        (40, (false, true)),
        (1, (true, true)),
    ]);
    if auxiliary {
        word(rng, AUXILIARIES, out);
    }
    word(rng, VERBS, out);
    if adverb {
        word(rng, ADVERBS, out);
    }
}

fn prepositional_phrase(rng: &mut Rng, out: &mut String) {
    word(rng, PREPOSITIONS, out);
    out.push_str("the ");
    noun_phrase(rng, out);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_have_the_requested_lengths_and_contain_grammar_words() {
        let pool = TextPool::new(3);
        assert!(pool.text.is_ascii());
        let mut rng = Rng::new(9);
        let mut special_requests = 0;
        for _ in 0..10_000 {
            let text = pool.get(pool.span(&mut rng, 19, 78));
            assert!((19..=78).contains(&text.len()), "{text:?}");
            if let Some(at) = text.find("special") {
                special_requests += usize::from(text[at..].contains("requests"));
            }
        }
        // Q13 excludes these orders: present, but a small minority.
        assert!(
            (10..2_000).contains(&special_requests),
            "{special_requests} of 10000"
        );
    }

    #[test]
    fn the_pool_is_deterministic() {
        assert_eq!(TextPool::new(5).text, TextPool::new(5).text);
        assert_ne!(TextPool::new(5).text, TextPool::new(6).text);
    }
}
