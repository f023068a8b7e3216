//! What the values a store returns still mean.
//!
//! A store parses each document and writes the fields it returns anew: `1.50` comes
//! back as `1.5`, `1e3` as `1000`, an integer past 2^53 rounded to a double's digits,
//! escapes decoded. Strings, booleans and nulls keep their meaning; numbers keep it only
//! for reads that take them as numbers. Before a scan decodes an answer, [`check`]
//! confirms that every field holds only values whose reading the rendering cannot
//! change; otherwise the scan reads the object itself.

use std::sync::Arc;

use tessera_json::path::{PathElem, PathTrie};
use tessera_json::scanner::{Kind, Scanner};

/// Integers a double holds exactly: a store's rendering of a larger one may have lost
/// digits.
const EXACT_INTEGER_MAX: f64 = 9_007_199_254_740_992.0;

/// Which returned values a field's reads take as the document's own, ordered from the
/// weakest requirement to the strictest (a field read several ways takes the `max`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Accept {
    /// Anything: reads whose result the rendering keeps (doubles, strings only,
    /// booleans, array lengths).
    Any,
    /// Anything but integers beyond 2^53: a read of integers (`json_get_int`, a cast to
    /// BIGINT). The request guards such a field too (`Condition::IntegerGuard`), so that
    /// an integral double the store wrote as an integer never comes back.
    Integers,
    /// Strings, booleans and nulls: a read of the value's text (`->>`), which a number
    /// or a container written anew would change.
    Text,
}

/// Why an answer cannot be read as the documents would be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unreadable {
    /// Record `record` (from 0) returned field `field` as a value the rendering may
    /// have changed.
    Rendered {
        /// The record.
        record: usize,
        /// The field (`c{field}`).
        field: usize,
    },
    /// Record `record` is not one JSON object: the answer is not what was asked for.
    Malformed {
        /// The record.
        record: usize,
    },
}

/// Checks every record of `records` (JSON lines whose fields are `c0`, `c1`, ...,
/// field `i` read as `accepts[i]` says).
pub fn check(records: &[u8], accepts: &[Accept]) -> Result<(), Unreadable> {
    let checked: Vec<(usize, Accept)> = accepts
        .iter()
        .copied()
        .enumerate()
        .filter(|(_, a)| *a != Accept::Any)
        .collect();
    if checked.is_empty() {
        return Ok(());
    }
    let mut trie = PathTrie::new();
    for (field, _) in &checked {
        trie.add(&[PathElem::Key(format!("c{field}"))]);
    }
    let mut scanner = Scanner::new(Arc::new(trie));
    let lines = records.split(|b| *b == b'\n').filter(|l| !l.is_empty());
    for (record, line) in lines.enumerate() {
        scanner
            .scan(line)
            .map_err(|_| Unreadable::Malformed { record })?;
        for (slot, (field, accept)) in checked.iter().enumerate() {
            let Some(span) = scanner.get(slot) else {
                continue;
            };
            if !keeps_meaning(*accept, span.kind, span.raw(line)) {
                return Err(Unreadable::Rendered {
                    record,
                    field: *field,
                });
            }
        }
    }
    Ok(())
}

fn keeps_meaning(accept: Accept, kind: Kind, raw: &[u8]) -> bool {
    match (accept, kind) {
        (Accept::Any, _) => true,
        (Accept::Text, Kind::Null | Kind::Bool(_) | Kind::String { .. }) => true,
        (Accept::Text, _) => false,
        (Accept::Integers, Kind::Number { integer: true }) => std::str::from_utf8(raw)
            .ok()
            .and_then(|t| t.parse::<f64>().ok())
            .is_some_and(|v| v.abs() < EXACT_INTEGER_MAX),
        (Accept::Integers, _) => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_reads_take_strings_booleans_and_nulls_only() {
        let ok = b"{\"c0\":\"a\",\"c1\":1.5}\n{\"c0\":true}\n{\"c0\":null}\n{}\n";
        assert_eq!(check(ok, &[Accept::Text, Accept::Any]), Ok(()));
        for rendered in [
            &b"{\"c0\":\"a\"}\n{\"c0\":1.5}\n"[..],
            b"{\"c0\":\"a\"}\n{\"c0\":{\"x\":1}}\n",
        ] {
            assert_eq!(
                check(rendered, &[Accept::Text]),
                Err(Unreadable::Rendered {
                    record: 1,
                    field: 0
                })
            );
        }
    }

    #[test]
    fn integer_reads_refuse_integers_a_double_may_have_rounded() {
        let fine = b"{\"c1\":9007199254740991}\n{\"c1\":2.5}\n{\"c1\":\"7\"}\n";
        assert_eq!(check(fine, &[Accept::Any, Accept::Integers]), Ok(()));
        let rounded = b"{\"c1\":12345678901234567000}\n";
        assert_eq!(
            check(rounded, &[Accept::Any, Accept::Integers]),
            Err(Unreadable::Rendered {
                record: 0,
                field: 1
            })
        );
    }

    #[test]
    fn a_record_that_is_not_json_is_malformed() {
        assert_eq!(
            check(b"{\"c0\":1}\n{\"c0\":\n", &[Accept::Integers]),
            Err(Unreadable::Malformed { record: 1 })
        );
    }
}
