//! The rows of the eight tables, after the TPC-H specification's clause 4.2.3, written
//! straight into the output buffer as JSON objects keyed by column name.

use std::ops::Range;

use crate::json::{write_cents, write_date, write_str, write_u64};
use crate::rng::{Rng, hash2};
use crate::tpch::text::{Span, TextPool};
use crate::tpch::vocab::{
    COLORS, CONTAINER_KIND, CONTAINER_SIZE, INSTRUCTIONS, NATIONS, PRIORITIES, REGIONS, SEGMENTS,
    SHIP_MODES, TYPE_FINISH, TYPE_METAL, TYPE_SIZE,
};
use crate::tpch::{Counts, Table, TpchConfig, unit_seed};

/// 1992-01-01, the first order date, in days since the Unix epoch.
pub(crate) const START_DATE: u64 = 8035;
/// 1998-12-31, the last date of the data set.
pub(crate) const END_DATE: u64 = 10_591;
/// 1995-06-17, the specification's CURRENTDATE: it splits shipped from open lineitems
/// and returned from not-yet-received ones.
pub(crate) const CURRENT_DATE: u64 = 9298;
/// Orders are placed up to 151 days before the end, so every lineitem ships in time.
const LAST_ORDER_DATE: u64 = END_DATE - 151;
/// Most lineitems an order has.
pub(crate) const MAX_LINES: usize = 7;

const POOL_SALT: u64 = 0x7470_6368_706f_6f6c;
const ADDRESS_CHARS: &[u8] = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ,. ";

/// Everything one data set's rows are drawn from.
pub(crate) struct Generator {
    seed: u64,
    counts: Counts,
    pool: TextPool,
}

impl Generator {
    /// Builds the text pool of `cfg`'s seed; everything else is drawn per row.
    pub(crate) fn new(cfg: &TpchConfig) -> Self {
        Self {
            seed: cfg.seed,
            counts: cfg.counts,
            pool: TextPool::new(hash2(cfg.seed, POOL_SALT)),
        }
    }

    /// Appends the rows of `units` of `table`, one JSON object per line.
    pub(crate) fn write_units(&self, table: Table, units: Range<u64>, out: &mut Vec<u8>) {
        for unit in units {
            let mut rng = Rng::new(unit_seed(self.seed, table, unit));
            match table {
                Table::Region => self.region(unit, &mut rng, out),
                Table::Nation => self.nation(unit, &mut rng, out),
                Table::Supplier => self.supplier(unit + 1, &mut rng, out),
                Table::Customer => self.customer(unit + 1, &mut rng, out),
                Table::Part => self.part(unit + 1, &mut rng, out),
                Table::PartSupp => self.partsupp(unit + 1, &mut rng, out),
                Table::Orders => self.order_row(&self.order(unit), out),
                Table::LineItem => self.lineitem_rows(&self.order(unit), out),
            }
        }
    }

    fn region(&self, key: u64, rng: &mut Rng, out: &mut Vec<u8>) {
        Row::start(out)
            .int("r_regionkey", key)
            .str("r_name", REGIONS[key as usize])
            .str("r_comment", self.comment(rng, 31, 115))
            .end();
    }

    fn nation(&self, key: u64, rng: &mut Rng, out: &mut Vec<u8>) {
        let (name, region) = NATIONS[key as usize];
        Row::start(out)
            .int("n_nationkey", key)
            .str("n_name", name)
            .int("n_regionkey", region)
            .str("n_comment", self.comment(rng, 31, 114))
            .end();
    }

    fn supplier(&self, key: u64, rng: &mut Rng, out: &mut Vec<u8>) {
        let nation = rng.below(NATIONS.len() as u64);
        let mut row = Row::start(out);
        row.int("s_suppkey", key)
            .name("s_name", "Supplier#", key)
            .address("s_address", rng)
            .int("s_nationkey", nation)
            .phone("s_phone", nation, rng)
            .cents("s_acctbal", acctbal(rng));
        // About 5 per scale factor each, as the specification asks, for Q16.
        match rng.below(2_000) {
            0 => row.str("s_comment", &self.embed(rng, "Customer ", "Complaints")),
            1 => row.str("s_comment", &self.embed(rng, "Customer ", "Recommends")),
            _ => row.str("s_comment", self.comment(rng, 25, 100)),
        }
        .end();
    }

    /// A 25-100 character comment with `first` and later `second` in it.
    fn embed(&self, rng: &mut Rng, first: &str, second: &str) -> String {
        let filler = rng.between(25, 100) as usize - first.len() - second.len();
        let before = rng.below(filler as u64 + 1) as usize;
        let between = rng.below((filler - before) as u64 + 1) as usize;
        let after = filler - before - between;
        [
            self.comment(rng, before, before),
            first,
            self.comment(rng, between, between),
            second,
            self.comment(rng, after, after),
        ]
        .concat()
    }

    fn customer(&self, key: u64, rng: &mut Rng, out: &mut Vec<u8>) {
        let nation = rng.below(NATIONS.len() as u64);
        Row::start(out)
            .int("c_custkey", key)
            .name("c_name", "Customer#", key)
            .address("c_address", rng)
            .int("c_nationkey", nation)
            .phone("c_phone", nation, rng)
            .cents("c_acctbal", acctbal(rng))
            .str("c_mktsegment", rng.pick(&SEGMENTS))
            .str("c_comment", self.comment(rng, 29, 116))
            .end();
    }

    fn part(&self, key: u64, rng: &mut Rng, out: &mut Vec<u8>) {
        let mut colors = [0usize; 5];
        for i in 0..colors.len() {
            colors[i] = loop {
                let c = rng.below(COLORS.len() as u64) as usize;
                if !colors[..i].contains(&c) {
                    break c;
                }
            };
        }
        let name = colors.map(|c| COLORS[c]).join(" ");
        let mfgr = rng.between(1, 5);
        let brand = mfgr * 10 + rng.between(1, 5);
        let kind = [
            rng.pick(&TYPE_SIZE),
            rng.pick(&TYPE_FINISH),
            rng.pick(&TYPE_METAL),
        ]
        .join(" ");
        let size = rng.between(1, 50);
        let container = [rng.pick(&CONTAINER_SIZE), rng.pick(&CONTAINER_KIND)].join(" ");
        Row::start(out)
            .int("p_partkey", key)
            .str("p_name", &name)
            .str("p_mfgr", &format!("Manufacturer#{mfgr}"))
            .str("p_brand", &format!("Brand#{brand}"))
            .str("p_type", &kind)
            .int("p_size", size)
            .str("p_container", &container)
            .cents("p_retailprice", retail_price(key))
            .str("p_comment", self.comment(rng, 5, 22))
            .end();
    }

    fn partsupp(&self, part: u64, rng: &mut Rng, out: &mut Vec<u8>) {
        for i in 0..4 {
            Row::start(out)
                .int("ps_partkey", part)
                .int("ps_suppkey", supplier_of(part, i, self.counts.suppliers))
                .int("ps_availqty", rng.between(1, 9_999))
                .cents("ps_supplycost", rng.between(100, 100_000) as i64)
                .str("ps_comment", self.comment(rng, 49, 198))
                .end();
        }
    }

    /// Draws order `index` (0-based) and its lineitems; both the orders and the
    /// lineitem part of the stream call this, so the two always agree.
    pub(crate) fn order(&self, index: u64) -> Order {
        let mut rng = Rng::new(unit_seed(self.seed, Table::Orders, index));
        let counts = &self.counts;
        // A third of the customers never order (Q13, Q22): keys divisible by 3 are
        // skipped by mapping the r-th draw to the r-th key that is not.
        let r = rng.below(counts.customers - counts.customers / 3);
        let date = rng.between(START_DATE, LAST_ORDER_DATE);
        let mut order = Order {
            // Keys are sparse as in dbgen: the first 8 of every 32.
            key: index / 8 * 32 + index % 8 + 1,
            customer: r + r / 2 + 1,
            date,
            priority: rng.pick(&PRIORITIES),
            clerk: rng.between(1, counts.clerks),
            comment: self.pool.span(&mut rng, 19, 78),
            lines: Vec::with_capacity(MAX_LINES),
        };
        for _ in 0..rng.between(1, MAX_LINES as u64) {
            let part = rng.between(1, counts.parts);
            let ship = date + rng.between(1, 121);
            let receipt = ship + rng.between(1, 30);
            order.lines.push(Line {
                part,
                supplier: supplier_of(part, rng.below(4), counts.suppliers),
                quantity: rng.between(1, 50),
                discount: rng.between(0, 10),
                tax: rng.between(0, 8),
                ship,
                commit: date + rng.between(30, 90),
                receipt,
                return_flag: if receipt > CURRENT_DATE {
                    "N"
                } else if rng.chance(500) {
                    "R"
                } else {
                    "A"
                },
                instruction: rng.pick(&INSTRUCTIONS),
                mode: rng.pick(&SHIP_MODES),
                comment: self.pool.span(&mut rng, 10, 43),
            });
        }
        order
    }

    fn order_row(&self, order: &Order, out: &mut Vec<u8>) {
        Row::start(out)
            .int("o_orderkey", order.key)
            .int("o_custkey", order.customer)
            .str("o_orderstatus", order.status())
            .cents("o_totalprice", order.total_cents())
            .date("o_orderdate", order.date)
            .str("o_orderpriority", order.priority)
            .name("o_clerk", "Clerk#", order.clerk)
            .int("o_shippriority", 0)
            .str("o_comment", self.pool.get(order.comment))
            .end();
    }

    fn lineitem_rows(&self, order: &Order, out: &mut Vec<u8>) {
        for (number, line) in (1..).zip(&order.lines) {
            Row::start(out)
                .int("l_orderkey", order.key)
                .int("l_partkey", line.part)
                .int("l_suppkey", line.supplier)
                .int("l_linenumber", number)
                .cents("l_quantity", line.quantity as i64 * 100)
                .cents("l_extendedprice", line.extended_cents())
                .cents("l_discount", line.discount as i64)
                .cents("l_tax", line.tax as i64)
                .str("l_returnflag", line.return_flag)
                .str("l_linestatus", line.status())
                .date("l_shipdate", line.ship)
                .date("l_commitdate", line.commit)
                .date("l_receiptdate", line.receipt)
                .str("l_shipinstruct", line.instruction)
                .str("l_shipmode", line.mode)
                .str("l_comment", self.pool.get(line.comment))
                .end();
        }
    }

    fn comment(&self, rng: &mut Rng, min: usize, max: usize) -> &str {
        self.pool.get(self.pool.span(rng, min, max))
    }
}

/// An order and its lineitems before they are written.
pub(crate) struct Order {
    /// `o_orderkey`.
    pub(crate) key: u64,
    /// `o_custkey`.
    pub(crate) customer: u64,
    /// `o_orderdate`, in days since the Unix epoch.
    pub(crate) date: u64,
    priority: &'static str,
    clerk: u64,
    comment: Span,
    /// The lineitems, numbered from 1 in this order.
    pub(crate) lines: Vec<Line>,
}

impl Order {
    /// F when every lineitem has shipped, O when none has, P otherwise.
    pub(crate) fn status(&self) -> &'static str {
        let shipped = self.lines.iter().filter(|l| l.status() == "F").count();
        match shipped {
            0 => "O",
            n if n == self.lines.len() => "F",
            _ => "P",
        }
    }

    /// The sum of the lineitems' charges, extendedprice * (1 + tax) * (1 - discount),
    /// each rounded to cents.
    pub(crate) fn total_cents(&self) -> i64 {
        self.lines
            .iter()
            .map(|l| {
                let scaled = l.extended_cents() * (100 + l.tax as i64) * (100 - l.discount as i64);
                (scaled + 5_000) / 10_000
            })
            .sum()
    }
}

/// One lineitem of an [`Order`]; discount and tax are in hundredths, dates in days since
/// the Unix epoch, and the fields are the `l_` columns of the same names.
pub(crate) struct Line {
    pub(crate) part: u64,
    pub(crate) supplier: u64,
    pub(crate) quantity: u64,
    pub(crate) discount: u64,
    pub(crate) tax: u64,
    pub(crate) ship: u64,
    pub(crate) commit: u64,
    pub(crate) receipt: u64,
    pub(crate) return_flag: &'static str,
    instruction: &'static str,
    mode: &'static str,
    comment: Span,
}

impl Line {
    /// O (open) when it ships after CURRENTDATE, F (fulfilled) otherwise.
    pub(crate) fn status(&self) -> &'static str {
        if self.ship > CURRENT_DATE { "O" } else { "F" }
    }

    /// `l_extendedprice` in cents: quantity times the part's retail price.
    pub(crate) fn extended_cents(&self) -> i64 {
        self.quantity as i64 * retail_price(self.part)
    }
}

/// `p_retailprice` in cents, the specification's formula of the part key.
pub(crate) fn retail_price(part: u64) -> i64 {
    (90_000 + (part / 10) % 20_001 + 100 * (part % 1_000)) as i64
}

/// The `i`-th (0..4) supplier of `part`: four distinct suppliers a quarter of the key
/// space apart, so the partsupp pairs are unique at every scale.
pub(crate) fn supplier_of(part: u64, i: u64, suppliers: u64) -> u64 {
    (part - 1 + i * (suppliers / 4)) % suppliers + 1
}

/// An account balance in cents, -999.99 to 9999.99.
fn acctbal(rng: &mut Rng) -> i64 {
    rng.between(0, 1_099_998) as i64 - 99_999
}

/// Writes one JSON object; every column is one call, in the specification's order.
struct Row<'a> {
    out: &'a mut Vec<u8>,
    first: bool,
}

impl<'a> Row<'a> {
    fn start(out: &'a mut Vec<u8>) -> Self {
        Self { out, first: true }
    }

    /// Column names are plain ASCII identifiers, so they need no escaping.
    fn key(&mut self, name: &str) -> &mut Vec<u8> {
        self.out.push(if self.first { b'{' } else { b',' });
        self.first = false;
        self.out.push(b'"');
        self.out.extend_from_slice(name.as_bytes());
        self.out.extend_from_slice(b"\":");
        self.out
    }

    fn int(&mut self, name: &str, v: u64) -> &mut Self {
        write_u64(self.key(name), v);
        self
    }

    fn cents(&mut self, name: &str, cents: i64) -> &mut Self {
        write_cents(self.key(name), cents);
        self
    }

    fn str(&mut self, name: &str, v: &str) -> &mut Self {
        write_str(self.key(name), v);
        self
    }

    fn date(&mut self, name: &str, days: u64) -> &mut Self {
        let out = self.key(name);
        out.push(b'"');
        write_date(out, days);
        out.push(b'"');
        self
    }

    /// `Supplier#000000042`: a prefix and the key zero-padded to nine digits.
    fn name(&mut self, column: &str, prefix: &str, key: u64) -> &mut Self {
        let out = self.key(column);
        out.push(b'"');
        out.extend_from_slice(prefix.as_bytes());
        out.extend_from_slice(format!("{key:09}").as_bytes());
        out.push(b'"');
        self
    }

    /// 10 to 40 random characters.
    fn address(&mut self, column: &str, rng: &mut Rng) -> &mut Self {
        let out = self.key(column);
        out.push(b'"');
        for _ in 0..rng.between(10, 40) {
            out.push(rng.pick(ADDRESS_CHARS));
        }
        out.push(b'"');
        self
    }

    /// `CC-LLL-LLL-LLLL` with the country code nation key + 10 (Q22 groups on it).
    fn phone(&mut self, column: &str, nation: u64, rng: &mut Rng) -> &mut Self {
        let text = format!(
            "{}-{}-{}-{}",
            nation + 10,
            rng.between(100, 999),
            rng.between(100, 999),
            rng.between(1_000, 9_999)
        );
        self.str(column, &text)
    }

    fn end(&mut self) {
        self.out.extend_from_slice(b"}\n");
    }
}
