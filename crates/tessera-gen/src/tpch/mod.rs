//! TPC-H as one stream of JSON documents: the "combined JSON TPC-H" workload of JSON
//! Tiles (SIGMOD 2021, §6.1), where every row of the eight tables becomes an object
//! keyed by its column names and all tables share one JSON column.
//!
//! Cardinalities, keys, foreign keys, value domains, vocabularies and the comment
//! grammar follow the TPC-H specification (clause 4.2), so the 22 queries select
//! comparable rows; the bytes are not dbgen's (our PRNG, a smaller text pool), so
//! answers differ from published TPC-H answer sets.

mod rows;
mod text;
mod vocab;

#[cfg(test)]
mod tests;

use std::io::{self, Write};
use std::ops::Range;

use crate::parallel;
use crate::rng::hash2;

/// Why a configuration was refused.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum TpchError {
    /// The scale factor must be a positive finite number, and small enough that the
    /// row counts fit comfortably in 64 bits.
    #[error("the TPC-H scale factor must be positive and at most 100000, not {0}")]
    Scale(f64),
}

/// What to generate: TPC-H at scale factor `scale` from `seed`.
///
/// Row `i` of a table depends on `(scale, seed, i)`: the key ranges that foreign keys
/// are drawn from grow with the scale, so a larger data set is not an extension of a
/// smaller one.
#[derive(Clone, Debug, PartialEq)]
pub struct TpchConfig {
    scale: f64,
    seed: u64,
    counts: Counts,
}

/// Rows per table (orders and their 1-7 lineitems are counted as orders).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Counts {
    suppliers: u64,
    parts: u64,
    customers: u64,
    orders: u64,
    clerks: u64,
}

impl TpchConfig {
    /// A configuration for scale factor `scale` (1 is about 8.7 million documents).
    /// Below about 0.001 the small tables are clamped to the minimum the key
    /// formulas need (four suppliers, one of everything else).
    pub fn new(scale: f64, seed: u64) -> Result<Self, TpchError> {
        if !(scale.is_finite() && scale > 0.0 && scale <= 100_000.0) {
            return Err(TpchError::Scale(scale));
        }
        let rows = |per_unit: f64, min: u64| ((per_unit * scale).round() as u64).max(min);
        Ok(Self {
            scale,
            seed,
            counts: Counts {
                suppliers: rows(10_000.0, 4),
                parts: rows(200_000.0, 1),
                customers: rows(150_000.0, 1),
                orders: rows(1_500_000.0, 1),
                clerks: rows(1_000.0, 1),
            },
        })
    }

    /// The scale factor.
    pub fn scale(&self) -> f64 {
        self.scale
    }

    /// The seed; the same configuration always yields the same bytes.
    pub fn seed(&self) -> u64 {
        self.seed
    }
}

/// The tables in stream order: dimension tables first, as a bulk load would insert
/// them, so the stream is the paper's combined (not shuffled) layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Table {
    Region,
    Nation,
    Supplier,
    Customer,
    Part,
    PartSupp,
    Orders,
    LineItem,
}

impl Table {
    const ALL: [Table; 8] = [
        Table::Region,
        Table::Nation,
        Table::Supplier,
        Table::Customer,
        Table::Part,
        Table::PartSupp,
        Table::Orders,
        Table::LineItem,
    ];

    /// Generation units of this table: a part's four partsupp rows and an order's
    /// lineitems are one unit each, because they are drawn together.
    fn units(self, counts: &Counts) -> u64 {
        match self {
            Table::Region => vocab::REGIONS.len() as u64,
            Table::Nation => vocab::NATIONS.len() as u64,
            Table::Supplier => counts.suppliers,
            Table::Customer => counts.customers,
            Table::Part | Table::PartSupp => counts.parts,
            Table::Orders | Table::LineItem => counts.orders,
        }
    }
}

/// Writes the whole data set to `out` as NDJSON, table after table, using `threads`
/// worker threads; returns the number of bytes written.
///
/// The bytes are identical for every thread count, and memory stays bounded (a few
/// batches per worker) however slow `out` is.
pub fn write_tpch_ndjson(
    cfg: &TpchConfig,
    threads: usize,
    out: &mut impl Write,
) -> io::Result<u64> {
    let generator = rows::Generator::new(cfg);
    let layout = Layout::new(&cfg.counts);
    let fill = |units: Range<u64>, buf: &mut Vec<u8>| {
        buf.reserve((units.end - units.start) as usize * 200);
        for (table, local) in layout.split(units) {
            generator.write_units(table, local, buf);
        }
    };
    parallel::write_ordered(layout.total(), BATCH_UNITS, threads, fill, out)
}

/// Units per batch: an order unit is about 1 KB of lineitems, so batches stay a few MB.
const BATCH_UNITS: u64 = 8_192;

/// Where each table's units start in the single unit numbering of the stream.
struct Layout {
    starts: [u64; Table::ALL.len() + 1],
}

impl Layout {
    fn new(counts: &Counts) -> Self {
        let mut starts = [0; Table::ALL.len() + 1];
        for (i, table) in Table::ALL.iter().enumerate() {
            starts[i + 1] = starts[i] + table.units(counts);
        }
        Self { starts }
    }

    fn total(&self) -> u64 {
        self.starts[Table::ALL.len()]
    }

    /// The pieces of a global unit range, as (table, table-local unit range).
    fn split(&self, units: Range<u64>) -> impl Iterator<Item = (Table, Range<u64>)> + '_ {
        Table::ALL
            .iter()
            .enumerate()
            .filter_map(move |(i, &table)| {
                let start = units.start.max(self.starts[i]);
                let end = units.end.min(self.starts[i + 1]);
                (start < end).then(|| (table, start - self.starts[i]..end - self.starts[i]))
            })
    }
}

/// A per-table, per-unit random stream, independent of every other unit.
fn unit_seed(seed: u64, table: Table, unit: u64) -> u64 {
    hash2(hash2(seed, table as u64), unit)
}
