//! Bluesky Jetstream-like events, shaped after the JSONBench Bluesky data set that
//! Tessera's benchmarks are measured on: the same fields, nesting, kind, operation and
//! collection mix, skewed user activity and a day of timestamps per million documents.

use std::io::{self, Write};
use std::ops::Range;

use crate::json::{Precision, write_str, write_timestamp, write_u64};
use crate::parallel;
use crate::rng::{PowerLaw, Rng, hash2, mix64};
use crate::words;

/// What to generate: `docs` events from `seed`, with a user population and a key order
/// that can be set away from the defaults, so that what is tuned on one data set is
/// measured on another (a benchmark on one generator setting overfits it).
///
/// Document `i` depends on the whole configuration and `i`: the user pool grows with
/// `docs`, so a larger data set is not a prefix-extension of a smaller one with the same
/// seed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlueskyConfig {
    /// Number of documents (events) in the data set.
    pub docs: u64,
    /// Seed; the same configuration always yields the same bytes.
    pub seed: u64,
    /// Users in the pool per million documents (at least 1,000 users in all). The
    /// default, 250,000, gives about 113,000 distinct active users per million events,
    /// as the JSONBench sample has; a larger pool gives more (1,000,000 with
    /// `popularity_offset` 40: about 194,000, the busiest user 0.4% of events).
    pub users_per_million: u64,
    /// Flattens the head of user activity: the power law's ranks are shifted by this
    /// much, so the busiest user's share falls as it grows (default 10: a couple of
    /// percent; 0 is a pure Zipf law whose top user has over a tenth of the events).
    pub popularity_offset: u64,
    /// The order of each event's top-level keys.
    pub key_order: KeyOrder,
}

impl BlueskyConfig {
    /// `docs` events from `seed` with the default population and key order.
    pub const fn new(docs: u64, seed: u64) -> Self {
        Self {
            docs,
            seed,
            users_per_million: USERS_PER_MILLION_DEFAULT,
            popularity_offset: POPULARITY_OFFSET_DEFAULT,
            key_order: KeyOrder::Jetstream,
        }
    }
}

/// The order of an event's top-level keys (`did`, `time_us`, `kind`, and the object the
/// kind names).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum KeyOrder {
    /// As Jetstream writes them, the same in every event.
    #[default]
    Jetstream,
    /// An order drawn per event, as documents merged from several producers have.
    Shuffled,
}

impl std::str::FromStr for KeyOrder {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "jetstream" => Ok(KeyOrder::Jetstream),
            "shuffled" => Ok(KeyOrder::Shuffled),
            other => Err(format!(
                "key order is 'jetstream' or 'shuffled', not '{other}'"
            )),
        }
    }
}

/// See [`BlueskyConfig::users_per_million`].
const USERS_PER_MILLION_DEFAULT: u64 = 250_000;
/// See [`BlueskyConfig::popularity_offset`].
const POPULARITY_OFFSET_DEFAULT: u64 = 10;
/// Fewest users in a pool, so small data sets still have many users.
const USERS_MIN: u64 = 1000;

/// Appends document number `index` of `cfg` to `out` as one JSON object, without a
/// trailing newline.
///
/// Every document comes from its own generator seeded by `(seed, index)`, so any one can
/// be produced alone, out of order, or on any thread, with identical bytes.
pub fn write_doc(cfg: &BlueskyConfig, index: u64, out: &mut Vec<u8>) {
    Generator::new(cfg).write_doc(index, out, &mut Scratch::default());
}

/// Writes all documents of `cfg` to `out` as NDJSON (one per line, in index order) using
/// `threads` worker threads; returns the number of bytes written.
///
/// The bytes are identical for every thread count, and memory stays bounded (a few
/// batches per worker) however slow `out` is.
pub fn write_ndjson(cfg: &BlueskyConfig, threads: usize, out: &mut impl Write) -> io::Result<u64> {
    let generator = Generator::new(cfg);
    let fill = |docs: Range<u64>, buf: &mut Vec<u8>| {
        let mut scratch = Scratch::default();
        buf.reserve((docs.end - docs.start) as usize * 560);
        for index in docs {
            generator.write_doc(index, buf, &mut scratch);
            buf.push(b'\n');
        }
    };
    parallel::write_ordered(cfg.docs, BATCH_DOCS, threads, fill, out)
}

/// Documents per batch: large enough to amortize channel hand-offs, small enough (about
/// 8 MB) that a few in flight per worker cost little memory.
const BATCH_DOCS: u64 = 16_384;
/// 2024-11-21T16:00:00Z, where the JSONBench data set starts.
const START_US: u64 = 1_732_204_800_000_000;
/// Mean spacing of events: a million documents span one day, so hour-of-day queries see
/// every hour.
const STEP_US: u64 = 86_400;
const SECOND_US: u64 = 1_000_000;
const MINUTE_US: u64 = 60 * SECOND_US;
const DAY_US: u64 = 86_400 * SECOND_US;
/// Firehose sequence numbers: Jetstream samples the firehose, so consecutive events are
/// many sequence numbers apart.
const SEQ_BASE: u64 = 3_600_000_000;
const SEQ_STEP: u64 = 40;
/// 2^61 - 1, a prime above any pool size, so multiplying by it modulo the pool size is a
/// bijection: it makes the most-followed accounts differ from the most active ones.
const MERSENNE_61: u64 = (1 << 61) - 1;

// Salts that keep the hashes of different things about one user or post independent.
const DID_SALT: u64 = 0x6469_645f_706c_6321;
const HANDLE_SALT: u64 = 0x6861_6e64_6c65_2121;
const POST_SALT: u64 = 0x706f_7374_7265_6621;
const LIST_SALT: u64 = 0x6c69_7374_7265_6621;

/// RFC 4648 lower-case base32, the alphabet of `did:plc` identifiers and CIDs.
const BASE32: &[u8; 32] = b"abcdefghijklmnopqrstuvwxyz234567";
/// The sortable base32 of atproto TIDs (record keys and revisions).
const BASE32_SORTABLE: &[u8; 32] = b"234567abcdefghijklmnopqrstuvwxyz";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Collection {
    Like,
    Follow,
    Post,
    Repost,
    Block,
    Profile,
    ListItem,
    ListBlock,
    Threadgate,
    StarterPack,
    Postgate,
    List,
    FeedGenerator,
    ChatDeclaration,
    Labeler,
    FrontpagePost,
    StatusphereStatus,
    WhtwndEntry,
}

/// Share of commits per collection, in 1/100_000, from the JSONBench data set's counts
/// (the tail split is a plausible guess).
const COLLECTIONS: &[(u32, Collection)] = &[
    (45_000, Collection::Like),
    (36_000, Collection::Follow),
    (9_000, Collection::Post),
    (6_000, Collection::Repost),
    (1_400, Collection::Block),
    (1_100, Collection::Profile),
    (800, Collection::ListItem),
    (150, Collection::Threadgate),
    (110, Collection::ListBlock),
    (90, Collection::ChatDeclaration),
    (80, Collection::List),
    (70, Collection::StarterPack),
    (60, Collection::Postgate),
    (60, Collection::StatusphereStatus),
    (30, Collection::WhtwndEntry),
    (25, Collection::FeedGenerator),
    (20, Collection::FrontpagePost),
    (5, Collection::Labeler),
];

impl Collection {
    fn nsid(self) -> &'static str {
        match self {
            Self::Like => "app.bsky.feed.like",
            Self::Follow => "app.bsky.graph.follow",
            Self::Post => "app.bsky.feed.post",
            Self::Repost => "app.bsky.feed.repost",
            Self::Block => "app.bsky.graph.block",
            Self::Profile => "app.bsky.actor.profile",
            Self::ListItem => "app.bsky.graph.listitem",
            Self::ListBlock => "app.bsky.graph.listblock",
            Self::Threadgate => "app.bsky.feed.threadgate",
            Self::StarterPack => "app.bsky.graph.starterpack",
            Self::Postgate => "app.bsky.feed.postgate",
            Self::List => "app.bsky.graph.list",
            Self::FeedGenerator => "app.bsky.feed.generator",
            Self::ChatDeclaration => "chat.bsky.actor.declaration",
            Self::Labeler => "app.bsky.labeler.service",
            Self::FrontpagePost => "fyi.unravel.frontpage.post",
            Self::StatusphereStatus => "xyz.statusphere.status",
            Self::WhtwndEntry => "com.whtwnd.blog.entry",
        }
    }

    /// Singleton records live under the record key `self`, as in the real network.
    fn self_keyed(self) -> bool {
        matches!(self, Self::Profile | Self::ChatDeclaration | Self::Labeler)
    }

    /// Operation mix per collection, in per mille. Likes, follows and the like are
    /// only ever created or deleted; updates go to records people edit, mostly
    /// profiles.
    fn operations(self) -> &'static [(u32, Operation)] {
        use Operation::{Create, Delete, Update};
        match self {
            Self::Like => &[(920, Create), (80, Delete)],
            Self::Follow | Self::Repost => &[(930, Create), (70, Delete)],
            Self::Post => &[(940, Create), (60, Delete)],
            Self::Block | Self::ListBlock => &[(900, Create), (100, Delete)],
            Self::ListItem => &[(880, Create), (120, Delete)],
            Self::Profile | Self::ChatDeclaration | Self::Labeler => {
                &[(850, Update), (150, Create)]
            }
            Self::Threadgate
            | Self::StarterPack
            | Self::Postgate
            | Self::List
            | Self::WhtwndEntry => &[(600, Create), (330, Update), (70, Delete)],
            Self::FeedGenerator => &[(500, Create), (450, Update), (50, Delete)],
            Self::FrontpagePost | Self::StatusphereStatus => &[(950, Create), (50, Delete)],
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Operation {
    Create,
    Update,
    Delete,
}

impl Operation {
    fn name(self) -> &'static str {
        match self {
            Self::Create => "create",
            Self::Update => "update",
            Self::Delete => "delete",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Lang {
    En,
    Ja,
    Pt,
    De,
    Es,
    Ko,
    Fr,
}

impl Lang {
    fn code(self) -> &'static str {
        match self {
            Self::En => "en",
            Self::Ja => "ja",
            Self::Pt => "pt",
            Self::De => "de",
            Self::Es => "es",
            Self::Ko => "ko",
            Self::Fr => "fr",
        }
    }

    fn words(self) -> &'static [&'static str] {
        match self {
            Self::En => words::EN,
            Self::Ja => words::JA,
            Self::Pt => words::PT,
            Self::De => words::DE,
            Self::Es => words::ES,
            Self::Ko => words::KO,
            Self::Fr => words::FR,
        }
    }
}

/// The `langs` of a post, in per mille; an empty set means the field is absent.
const LANG_SETS: &[(u32, &[Lang])] = &[
    (580, &[Lang::En]),
    (120, &[Lang::Ja]),
    (100, &[Lang::Pt]),
    (60, &[]),
    (30, &[Lang::De]),
    (30, &[Lang::Es]),
    (20, &[Lang::Ko]),
    (20, &[Lang::Fr]),
    (15, &[Lang::En, Lang::Ja]),
    (10, &[Lang::Pt, Lang::En]),
    (8, &[Lang::En, Lang::Es]),
    (7, &[Lang::De, Lang::En]),
];

/// Appends generated text of at most `max_chars` characters in `lang` to `text`: words
/// with emoji, line breaks, quotes and the odd backslash or control character mixed in,
/// the way real posts need JSON escaping now and then.
fn push_text(rng: &mut Rng, lang: Lang, max_chars: usize, text: &mut String) {
    // Japanese runs phrases together; every other language separates words.
    let spaced = lang != Lang::Ja;
    let start = text.len();
    let mut chars = 0;
    let mut after_word = false;
    loop {
        let r = rng.below(1000);
        let (piece, is_word, quoted) = match r {
            0..40 => (rng.pick(words::EMOJI), true, false),
            40..110 if after_word => (rng.pick(words::BREAKS), false, false),
            110..115 => (rng.pick(words::AWKWARD), false, false),
            115..122 => (rng.pick(lang.words()), true, true),
            122..180 if lang != Lang::En => (rng.pick(words::EN), true, false),
            _ => (rng.pick(lang.words()), true, false),
        };
        let sep = usize::from(spaced && is_word && after_word);
        let len = piece.chars().count() + sep + 2 * usize::from(quoted);
        if chars + len > max_chars {
            // People rarely end a post with a space or a line break.
            let kept = start + text[start..].trim_end().len();
            text.truncate(kept);
            return;
        }
        chars += len;
        if sep == 1 {
            text.push(' ');
        }
        if quoted {
            text.push('"');
            text.push_str(piece);
            text.push('"');
        } else {
            text.push_str(piece);
        }
        after_word = is_word;
    }
}

/// A post's length in characters: many short ones, a few near the 300-character limit.
fn text_len(rng: &mut Rng) -> usize {
    let len = match rng.below(100) {
        0..5 => 0,
        5..30 => rng.between(5, 60),
        30..70 => rng.between(60, 200),
        _ => rng.between(200, 300),
    };
    len as usize
}

/// A rich-text feature pointing at a byte range of the post text.
enum Feature {
    Mention(u64),
    /// The link's full URL, as a byte range of [`Scratch::urls`].
    Link(Range<usize>),
    Tag(&'static str),
}

struct Facet {
    bytes: Range<usize>,
    feature: Feature,
}

/// Buffers reused across documents, so generating text allocates only while they grow.
#[derive(Default)]
struct Scratch {
    /// Where each top-level member of the document starts, for [`KeyOrder::Shuffled`].
    members: Vec<usize>,
    /// The shuffled members, assembled before they replace the written ones.
    shuffled: Vec<u8>,
    text: String,
    urls: String,
    facets: Vec<Facet>,
    /// Any other text (alt text, names, descriptions), escaped into the output as
    /// soon as it is made.
    other: String,
}

/// Per-data-set state: everything that depends on the configuration but not on the
/// document, prepared once.
struct Generator {
    seed: u64,
    users: u64,
    key_order: KeyOrder,
    popularity: PowerLaw,
    /// `MERSENNE_61 % users`: multiplying a rank by it permutes the pool.
    subject_stride: u64,
}

impl Generator {
    fn new(cfg: &BlueskyConfig) -> Self {
        let users = u128::from(cfg.docs) * u128::from(cfg.users_per_million) / 1_000_000;
        let users = u64::try_from(users).unwrap_or(u64::MAX).max(USERS_MIN);
        Self {
            seed: cfg.seed,
            users,
            key_order: cfg.key_order,
            popularity: PowerLaw::new(users, cfg.popularity_offset),
            subject_stride: MERSENNE_61 % users,
        }
    }

    fn write_doc(&self, index: u64, out: &mut Vec<u8>, scratch: &mut Scratch) {
        let mut rng = Rng::new(hash2(self.seed, index));
        // Jitter below one step keeps time strictly increasing while every document
        // stays computable from its index alone.
        let time_us = START_US + index * STEP_US + rng.below(STEP_US);
        let actor = self.popularity.sample(&mut rng);
        Doc {
            g: self,
            rng,
            out,
            scratch,
            index,
            time_us,
            actor,
        }
        .write();
    }

    /// A user drawn by how often they are the subject of likes, follows and mentions:
    /// as skewed as activity, but a different set of users is on top.
    fn subject(&self, rng: &mut Rng) -> u64 {
        let rank = self.popularity.sample(rng);
        ((u128::from(rank) * u128::from(self.subject_stride) + u128::from(self.users / 2))
            % u128::from(self.users)) as u64
    }

    /// A post that gets liked, reposted, quoted or replied to: a popular author's
    /// recent posts, mostly the latest.
    fn subject_post(&self, rng: &mut Rng) -> PostRef {
        let author = self.subject(rng);
        let bound = 1 + rng.below(32);
        PostRef {
            author,
            n: rng.below(bound),
        }
    }

    /// A handle for `user`, stable for the user so mentions and identity events agree.
    fn push_handle(&self, user: u64, s: &mut String) {
        let h = hash2(self.seed ^ HANDLE_SALT, user);
        s.push_str(words::FIRST_NAMES[(h % words::FIRST_NAMES.len() as u64) as usize]);
        let suffix =
            words::HANDLE_SUFFIXES[((h >> 16) % words::HANDLE_SUFFIXES.len() as u64) as usize];
        match (h >> 32) % 4 {
            0 => {}
            1 => s.push_str(suffix),
            2 => {
                s.push('-');
                s.push_str(suffix);
            }
            _ => s.push_str(&((h >> 40) % 10_000).to_string()),
        }
        s.push_str(".bsky.social");
    }
}

/// Post number `n` of user `author`: the same pair always has the same URI and CID, so
/// popular posts collect many likes.
#[derive(Clone, Copy)]
struct PostRef {
    author: u64,
    n: u64,
}

/// Writing state of one document.
struct Doc<'a> {
    g: &'a Generator,
    rng: Rng,
    out: &'a mut Vec<u8>,
    scratch: &'a mut Scratch,
    index: u64,
    time_us: u64,
    actor: u64,
}

impl Doc<'_> {
    fn raw(&mut self, bytes: &[u8]) {
        self.out.extend_from_slice(bytes);
    }

    fn int(&mut self, v: u64) {
        write_u64(self.out, v);
    }

    fn write(mut self) {
        let start = self.out.len();
        self.scratch.members.clear();
        self.raw(b"{");
        self.member();
        self.raw(b"\"did\":\"");
        self.did(self.actor);
        self.raw(b"\"");
        self.member();
        self.raw(b",\"time_us\":");
        self.int(self.time_us);
        let kind: &[u8] = match self.rng.below(1000) {
            0..6 => b"identity",
            6..10 => b"account",
            _ => b"commit",
        };
        self.member();
        self.raw(b",\"kind\":\"");
        self.raw(kind);
        self.raw(b"\"");
        self.member();
        match kind {
            b"identity" => self.identity(),
            b"account" => self.account(),
            _ => self.commit(),
        }
        self.member();
        self.out.push(b'}');
        if self.g.key_order == KeyOrder::Shuffled {
            self.shuffle_members(start);
        }
    }

    /// Marks where the next top-level member starts (and the last one ends).
    fn member(&mut self) {
        self.scratch.members.push(self.out.len());
    }

    /// Rewrites the document that starts at `start` with its top-level members in an
    /// order drawn from the document's generator (Fisher-Yates), after everything else
    /// was drawn, so the values are those of the Jetstream order.
    fn shuffle_members(&mut self, start: usize) {
        let marks = &self.scratch.members;
        assert!(
            marks.len() >= 2 && marks[0] == start + 1,
            "members were marked"
        );
        let mut order: Vec<usize> = (0..marks.len() - 1).collect();
        for i in (1..order.len()).rev() {
            order.swap(i, self.rng.below(i as u64 + 1) as usize);
        }
        let shuffled = &mut self.scratch.shuffled;
        shuffled.clear();
        for (n, &member) in order.iter().enumerate() {
            let text = &self.out[marks[member]..marks[member + 1]];
            // Every member after the first was written with its leading comma.
            let text = text.strip_prefix(b",").unwrap_or(text);
            if n > 0 {
                shuffled.push(b',');
            }
            shuffled.extend_from_slice(text);
        }
        let end = marks[marks.len() - 1];
        self.out.splice(marks[0]..end, shuffled.iter().copied());
    }

    fn identity(&mut self) {
        self.raw(b",\"identity\":{\"did\":\"");
        self.did(self.actor);
        self.raw(b"\",\"handle\":");
        self.scratch.other.clear();
        self.g.push_handle(self.actor, &mut self.scratch.other);
        write_str(self.out, &self.scratch.other);
        self.seq();
        self.event_time();
    }

    /// Keys are in Jetstream's (alphabetical) order, so `status` sits between `seq`
    /// and `time`, and only inactive accounts have one.
    fn account(&mut self) {
        let active = self.rng.chance(400);
        self.raw(b",\"account\":{\"active\":");
        self.raw(if active { b"true" } else { b"false" });
        self.raw(b",\"did\":\"");
        self.did(self.actor);
        self.raw(b"\"");
        self.seq();
        if !active {
            let status: &[u8] = if self.rng.chance(800) {
                b"deactivated"
            } else {
                b"takendown"
            };
            self.raw(b",\"status\":\"");
            self.raw(status);
            self.raw(b"\"");
        }
        self.event_time();
    }

    /// The firehose sequence number; it grows with the index like the real one.
    fn seq(&mut self) {
        self.raw(b",\"seq\":");
        let seq = SEQ_BASE + self.index * SEQ_STEP + self.rng.below(SEQ_STEP);
        self.int(seq);
    }

    /// The PDS's event time, a moment before the relay stamped `time_us`, and the
    /// closing brace of the identity or account object.
    fn event_time(&mut self) {
        self.raw(b",\"time\":\"");
        let at = self.time_us - self.rng.below(3 * SECOND_US);
        write_timestamp(self.out, at, Precision::Millis);
        self.raw(b"\"}");
    }

    fn commit(&mut self) {
        let collection = self.rng.weighted(COLLECTIONS);
        let operation = self.rng.weighted(collection.operations());
        self.raw(b",\"commit\":{\"rev\":\"");
        let clock = self.rng.below(1024);
        push_tid(self.out, self.time_us, clock);
        self.raw(b"\",\"operation\":\"");
        self.raw(operation.name().as_bytes());
        self.raw(b"\",\"collection\":\"");
        self.raw(collection.nsid().as_bytes());
        self.raw(b"\",\"rkey\":\"");
        let created = match operation {
            Operation::Delete => None,
            Operation::Create | Operation::Update => Some(self.created_at(operation)),
        };
        if collection.self_keyed() {
            self.raw(b"self");
        } else {
            // New records are keyed by their creation time; updated and deleted ones
            // were created earlier.
            let keyed_at = match (operation, created) {
                (Operation::Create, Some((created_us, _))) => created_us,
                _ => self.time_us - self.rng.below(180 * DAY_US),
            };
            let clock = self.rng.below(1024);
            push_tid(self.out, keyed_at, clock);
        }
        self.raw(b"\"");
        if let Some((created_us, precision)) = created {
            self.raw(b",\"record\":{\"$type\":\"");
            self.raw(collection.nsid().as_bytes());
            self.raw(b"\",\"createdAt\":\"");
            write_timestamp(self.out, created_us, precision);
            self.raw(b"\"");
            self.record(collection);
            self.raw(b"},\"cid\":\"");
            self.cid(b"bafyrei");
            self.raw(b"\"");
        }
        self.raw(b"}");
    }

    /// When the client says the record was made: usually a moment before the event,
    /// sometimes minutes off (skewed clocks) or days back (imports, edited records).
    fn created_at(&mut self, operation: Operation) -> (u64, Precision) {
        let mut at = self.time_us - self.rng.below(2 * SECOND_US);
        if operation == Operation::Update {
            at -= self.rng.between(1, 365) * DAY_US;
        }
        match self.rng.below(1000) {
            0..10 => at += self.rng.below(30 * MINUTE_US),
            10..20 => at -= self.rng.below(30 * MINUTE_US),
            20..25 => at -= self.rng.between(1, 400) * DAY_US,
            _ => {}
        }
        let precision = match self.rng.below(1000) {
            0..5 => Precision::Seconds,
            5..8 => Precision::Micros,
            _ => Precision::Millis,
        };
        (at, precision)
    }

    fn record(&mut self, collection: Collection) {
        match collection {
            Collection::Like => self.like(),
            Collection::Follow | Collection::Block => {
                self.raw(b",\"subject\":\"");
                let user = self.g.subject(&mut self.rng);
                self.did(user);
                self.raw(b"\"");
            }
            Collection::Post => self.post(),
            Collection::Repost => self.repost(),
            Collection::Profile => self.profile(),
            Collection::ListItem => self.list_item(),
            Collection::ListBlock => {
                self.raw(b",\"subject\":\"");
                let owner = self.g.subject(&mut self.rng);
                self.list_uri(owner);
                self.raw(b"\"");
            }
            Collection::Threadgate => self.threadgate(),
            Collection::StarterPack => self.starter_pack(),
            Collection::Postgate => {
                self.raw(b",\"detachedEmbeddingUris\":[],\"embeddingRules\":[{\"$type\":\"app.bsky.feed.postgate#disableRule\"}],\"post\":\"");
                self.own_post_uri();
                self.raw(b"\"");
            }
            Collection::List => self.list(),
            Collection::FeedGenerator => self.feed_generator(),
            Collection::ChatDeclaration => {
                let allow: &[u8] = match self.rng.below(10) {
                    0..7 => b"following",
                    7..9 => b"all",
                    _ => b"none",
                };
                self.raw(b",\"allowIncoming\":\"");
                self.raw(allow);
                self.raw(b"\"");
            }
            Collection::Labeler => self.labeler(),
            Collection::FrontpagePost => {
                self.raw(b",\"title\":");
                self.other_text(Lang::En, 10, 100);
                self.raw(b",\"url\":");
                self.url();
            }
            Collection::StatusphereStatus => {
                self.raw(b",\"status\":");
                let emoji = self.rng.pick(words::EMOJI);
                write_str(self.out, emoji);
            }
            Collection::WhtwndEntry => {
                self.raw(b",\"content\":");
                self.other_text(Lang::En, 200, 1500);
                self.raw(b",\"title\":");
                self.other_text(Lang::En, 10, 60);
                self.raw(b",\"visibility\":\"public\"");
            }
        }
    }

    fn like(&mut self) {
        self.raw(b",\"subject\":");
        let post = self.g.subject_post(&mut self.rng);
        self.post_ref(post);
    }

    fn repost(&mut self) {
        self.raw(b",\"subject\":");
        let post = self.g.subject_post(&mut self.rng);
        self.post_ref(post);
        // Reposting a repost credits the reposter with a `via` reference.
        if self.rng.chance(80) {
            self.raw(b",\"via\":{\"cid\":\"");
            self.cid(b"bafyrei");
            self.raw(b"\",\"uri\":\"");
            let by = self.g.subject(&mut self.rng);
            self.record_uri(by, "app.bsky.feed.repost", 3 * DAY_US);
            self.raw(b"\"}");
        }
    }

    fn post(&mut self) {
        let langs = self.rng.weighted(LANG_SETS);
        let lang = langs.first().copied().unwrap_or(Lang::En);
        let facet_count = match self.rng.below(100) {
            0..10 => 1,
            10..13 => 2,
            13..15 => 3,
            _ => 0,
        };
        let max_chars = text_len(&mut self.rng).saturating_sub(30 * facet_count);
        self.scratch.text.clear();
        push_text(&mut self.rng, lang, max_chars, &mut self.scratch.text);
        self.facet_text(facet_count);

        if self.rng.chance(250) {
            self.raw(b",\"embed\":");
            self.embed();
        }
        if !self.scratch.facets.is_empty() {
            self.facets();
        }
        if !langs.is_empty() {
            self.raw(b",\"langs\":[");
            for (i, lang) in langs.iter().enumerate() {
                if i > 0 {
                    self.raw(b",");
                }
                self.raw(b"\"");
                self.raw(lang.code().as_bytes());
                self.raw(b"\"");
            }
            self.raw(b"]");
        }
        if self.rng.chance(300) {
            let root = self.g.subject_post(&mut self.rng);
            // Half the replies answer the thread's root post directly.
            let parent = if self.rng.chance(500) {
                root
            } else {
                self.g.subject_post(&mut self.rng)
            };
            self.raw(b",\"reply\":{\"parent\":");
            self.post_ref(parent);
            self.raw(b",\"root\":");
            self.post_ref(root);
            self.raw(b"}");
        }
        if self.rng.chance(20) {
            self.raw(b",\"tags\":[");
            for i in 0..self.rng.between(1, 3) {
                if i > 0 {
                    self.raw(b",");
                }
                let tag = self.rng.pick(words::HASHTAGS);
                write_str(self.out, tag);
            }
            self.raw(b"]");
        }
        self.raw(b",\"text\":");
        write_str(self.out, &self.scratch.text);
    }

    /// Appends `count` mentions, links and hashtags to the post text, remembering the
    /// byte range of each for its facet, as clients do.
    fn facet_text(&mut self, count: usize) {
        let Scratch {
            text, urls, facets, ..
        } = &mut *self.scratch;
        facets.clear();
        urls.clear();
        for _ in 0..count {
            if !text.is_empty() && !text.ends_with(char::is_whitespace) {
                text.push(' ');
            }
            let start = text.len();
            let feature = match self.rng.below(100) {
                0..45 => {
                    let user = self.g.subject(&mut self.rng);
                    text.push('@');
                    self.g.push_handle(user, text);
                    Feature::Mention(user)
                }
                45..80 => {
                    let url_start = urls.len();
                    push_url(&mut self.rng, urls);
                    // Clients show links shortened and without the scheme.
                    let shown = &urls[url_start + "https://".len()..];
                    match shown.char_indices().nth(25) {
                        Some((cut, _)) => {
                            text.push_str(&shown[..cut]);
                            text.push_str("...");
                        }
                        None => text.push_str(shown),
                    }
                    Feature::Link(url_start..urls.len())
                }
                _ => {
                    let tag = self.rng.pick(words::HASHTAGS);
                    text.push('#');
                    text.push_str(tag);
                    Feature::Tag(tag)
                }
            };
            facets.push(Facet {
                bytes: start..text.len(),
                feature,
            });
        }
    }

    fn facets(&mut self) {
        self.raw(b",\"facets\":[");
        for i in 0..self.scratch.facets.len() {
            if i > 0 {
                self.raw(b",");
            }
            self.raw(b"{\"features\":[{\"$type\":\"app.bsky.richtext.facet#");
            let facet = &self.scratch.facets[i];
            let bytes = facet.bytes.clone();
            match &facet.feature {
                Feature::Mention(user) => {
                    let user = *user;
                    self.raw(b"mention\",\"did\":\"");
                    self.did(user);
                    self.raw(b"\"");
                }
                Feature::Link(url) => {
                    self.out.extend_from_slice(b"link\",\"uri\":");
                    write_str(self.out, &self.scratch.urls[url.clone()]);
                }
                Feature::Tag(tag) => {
                    self.out.extend_from_slice(b"tag\",\"tag\":");
                    write_str(self.out, tag);
                }
            }
            self.raw(b"}],\"index\":{\"byteEnd\":");
            self.int(bytes.end as u64);
            self.raw(b",\"byteStart\":");
            self.int(bytes.start as u64);
            self.raw(b"}}");
        }
        self.raw(b"]");
    }

    fn embed(&mut self) {
        match self.rng.below(100) {
            0..55 => self.images_embed(),
            55..80 => {
                self.raw(b"{\"$type\":\"app.bsky.embed.external\",\"external\":{\"description\":");
                self.other_text(Lang::En, 0, 200);
                if self.rng.chance(600) {
                    self.raw(b",\"thumb\":");
                    let size = self.rng.between(20_000, 900_000);
                    self.blob("image/jpeg", size);
                }
                self.raw(b",\"title\":");
                self.other_text(Lang::En, 5, 100);
                self.raw(b",\"uri\":");
                self.url();
                self.raw(b"}}");
            }
            80..92 => {
                self.raw(b"{\"$type\":\"app.bsky.embed.record\",\"record\":");
                let quoted = self.g.subject_post(&mut self.rng);
                self.post_ref(quoted);
                self.raw(b"}");
            }
            92..97 => {
                self.raw(b"{\"$type\":\"app.bsky.embed.recordWithMedia\",\"media\":");
                self.images_embed();
                self.raw(b",\"record\":{\"$type\":\"app.bsky.embed.record\",\"record\":");
                let quoted = self.g.subject_post(&mut self.rng);
                self.post_ref(quoted);
                self.raw(b"}}");
            }
            _ => {
                self.raw(b"{\"$type\":\"app.bsky.embed.video\",\"aspectRatio\":");
                self.aspect_ratio();
                self.raw(b",\"video\":");
                let size = self.rng.between(500_000, 50_000_000);
                self.blob("video/mp4", size);
                self.raw(b"}");
            }
        }
    }

    fn images_embed(&mut self) {
        self.raw(b"{\"$type\":\"app.bsky.embed.images\",\"images\":[");
        let count = match self.rng.below(100) {
            0..70 => 1,
            70..85 => 2,
            85..92 => 3,
            _ => 4,
        };
        for i in 0..count {
            if i > 0 {
                self.raw(b",");
            }
            self.raw(b"{\"alt\":");
            // Most images have no alt text.
            if self.rng.chance(650) {
                self.raw(b"\"\"");
            } else {
                self.other_text(Lang::En, 5, 120);
            }
            self.raw(b",\"aspectRatio\":");
            self.aspect_ratio();
            self.raw(b",\"image\":");
            let mime = match self.rng.below(100) {
                0..85 => "image/jpeg",
                85..97 => "image/png",
                _ => "image/webp",
            };
            let size = self.rng.between(30_000, 1_000_000);
            self.blob(mime, size);
            self.raw(b"}");
        }
        self.raw(b"]}");
    }

    fn aspect_ratio(&mut self) {
        const COMMON: &[(u64, u64)] = &[
            (1000, 1000),
            (2000, 1500),
            (1500, 2000),
            (1920, 1080),
            (1080, 1920),
            (2048, 1536),
            (828, 1792),
            (1200, 630),
        ];
        let (width, height) = if self.rng.chance(750) {
            self.rng.pick(COMMON)
        } else {
            (self.rng.between(200, 4000), self.rng.between(200, 4000))
        };
        self.raw(b"{\"height\":");
        self.int(height);
        self.raw(b",\"width\":");
        self.int(width);
        self.raw(b"}");
    }

    fn blob(&mut self, mime: &str, size: u64) {
        self.raw(b"{\"$type\":\"blob\",\"ref\":{\"$link\":\"");
        self.cid(b"bafkrei");
        self.raw(b"\"},\"mimeType\":\"");
        self.raw(mime.as_bytes());
        self.raw(b"\",\"size\":");
        self.int(size);
        self.raw(b"}");
    }

    fn profile(&mut self) {
        if self.rng.chance(850) {
            self.raw(b",\"avatar\":");
            let size = self.rng.between(10_000, 1_000_000);
            self.blob("image/jpeg", size);
        }
        if self.rng.chance(450) {
            self.raw(b",\"banner\":");
            let size = self.rng.between(50_000, 1_000_000);
            self.blob("image/jpeg", size);
        }
        self.raw(b",\"description\":");
        let lang = self
            .rng
            .weighted(LANG_SETS)
            .first()
            .copied()
            .unwrap_or(Lang::En);
        self.other_text(lang, 0, 200);
        self.raw(b",\"displayName\":");
        let name = self.rng.pick(words::DISPLAY_NAMES);
        write_str(self.out, name);
        if self.rng.chance(120) {
            self.raw(b",\"pinnedPost\":");
            let n = self.rng.below(8);
            self.post_ref(PostRef {
                author: self.actor,
                n,
            });
        }
    }

    fn list_item(&mut self) {
        self.raw(b",\"list\":\"");
        self.list_uri(self.actor);
        self.raw(b"\",\"subject\":\"");
        let user = self.g.subject(&mut self.rng);
        self.did(user);
        self.raw(b"\"");
    }

    fn threadgate(&mut self) {
        const RULES: &[&[u8]] = &[
            b"[]",
            b"[{\"$type\":\"app.bsky.feed.threadgate#mentionRule\"}]",
            b"[{\"$type\":\"app.bsky.feed.threadgate#followingRule\"}]",
            b"[{\"$type\":\"app.bsky.feed.threadgate#mentionRule\"},{\"$type\":\"app.bsky.feed.threadgate#followingRule\"}]",
        ];
        self.raw(b",\"allow\":");
        let rules = self.rng.pick(RULES);
        self.raw(rules);
        self.raw(b",\"post\":\"");
        self.own_post_uri();
        self.raw(b"\"");
    }

    fn starter_pack(&mut self) {
        if self.rng.chance(700) {
            self.raw(b",\"description\":");
            self.other_text(Lang::En, 10, 150);
        }
        if self.rng.chance(300) {
            self.raw(b",\"feeds\":[{\"uri\":\"");
            let owner = self.g.subject(&mut self.rng);
            self.record_uri(owner, "app.bsky.feed.generator", 200 * DAY_US);
            self.raw(b"\"}]");
        }
        self.raw(b",\"list\":\"");
        self.list_uri(self.actor);
        self.raw(b"\",\"name\":");
        self.other_text(Lang::En, 5, 40);
    }

    fn list(&mut self) {
        if self.rng.chance(700) {
            self.raw(b",\"description\":");
            self.other_text(Lang::En, 10, 150);
        }
        self.raw(b",\"name\":");
        self.other_text(Lang::En, 3, 40);
        let purpose: &[u8] = match self.rng.below(100) {
            0..60 => b"curatelist",
            60..95 => b"modlist",
            _ => b"referencelist",
        };
        self.raw(b",\"purpose\":\"app.bsky.graph.defs#");
        self.raw(purpose);
        self.raw(b"\"");
    }

    fn feed_generator(&mut self) {
        if self.rng.chance(700) {
            self.raw(b",\"avatar\":");
            let size = self.rng.between(10_000, 500_000);
            self.blob("image/png", size);
        }
        self.raw(b",\"description\":");
        self.other_text(Lang::En, 10, 200);
        const HOSTS: &[&[u8]] = &[b"skyfeed.me", b"api.graze.social", b"feeds.example.net"];
        self.raw(b",\"did\":\"did:web:");
        let host = self.rng.pick(HOSTS);
        self.raw(host);
        self.raw(b"\",\"displayName\":");
        self.other_text(Lang::En, 3, 24);
    }

    fn labeler(&mut self) {
        self.raw(b",\"policies\":{\"labelValues\":[");
        for i in 0..self.rng.between(1, 4) {
            if i > 0 {
                self.raw(b",");
            }
            let label = self.rng.pick(words::LABELS);
            write_str(self.out, label);
        }
        self.raw(b"]}");
    }

    /// Writes a quoted string of `min..=max` characters of generated text.
    fn other_text(&mut self, lang: Lang, min: u64, max: u64) {
        let len = self.rng.between(min, max) as usize;
        self.scratch.other.clear();
        push_text(&mut self.rng, lang, len, &mut self.scratch.other);
        write_str(self.out, &self.scratch.other);
    }

    /// Writes a quoted `https://` URL.
    fn url(&mut self) {
        self.scratch.other.clear();
        push_url(&mut self.rng, &mut self.scratch.other);
        write_str(self.out, &self.scratch.other);
    }

    fn did(&mut self, user: u64) {
        let h1 = hash2(self.g.seed ^ DID_SALT, user);
        let h2 = mix64(h1 ^ DID_SALT);
        self.raw(b"did:plc:");
        push_base32(self.out, h1, 12);
        push_base32(self.out, h2, 12);
    }

    /// Writes a CID string: the multibase prefix, then 52 base32 characters of digest.
    fn cid(&mut self, prefix: &[u8]) {
        self.raw(prefix);
        push_digest(self.out, &mut self.rng);
    }

    /// Writes a strong reference `{"cid":..,"uri":..}` to a post.
    fn post_ref(&mut self, post: PostRef) {
        // Derived from the post alone, so every reference to it agrees.
        let mut post_rng = Rng::new(hash2(
            self.g.seed ^ POST_SALT,
            post.author.wrapping_mul(64) + post.n,
        ));
        let posted_at = START_US - post_rng.below(14 * DAY_US);
        let clock = post_rng.below(1024);
        self.raw(b"{\"cid\":\"bafyrei");
        push_digest(self.out, &mut post_rng);
        self.raw(b"\",\"uri\":\"at://");
        self.did(post.author);
        self.raw(b"/app.bsky.feed.post/");
        push_tid(self.out, posted_at, clock);
        self.raw(b"\"}");
    }

    /// Writes (unquoted) the URI of a record of `user` created up to `max_age` ago.
    fn record_uri(&mut self, user: u64, nsid: &str, max_age: u64) {
        self.raw(b"at://");
        self.did(user);
        self.raw(b"/");
        self.raw(nsid.as_bytes());
        self.raw(b"/");
        let at = self.time_us - self.rng.below(max_age);
        let clock = self.rng.below(1024);
        push_tid(self.out, at, clock);
    }

    /// Writes (unquoted) the URI of a post the actor just made, for post-scoped records.
    fn own_post_uri(&mut self) {
        self.record_uri(self.actor, "app.bsky.feed.post", 10 * SECOND_US);
    }

    /// Writes (unquoted) the URI of one of the few lists `owner` keeps, so list items
    /// accumulate in the same lists.
    fn list_uri(&mut self, owner: u64) {
        let n = self.rng.below(3);
        let h = hash2(self.g.seed ^ LIST_SALT, owner.wrapping_mul(4) + n);
        self.raw(b"at://");
        self.did(owner);
        self.raw(b"/app.bsky.graph.list/");
        push_tid(self.out, START_US - h % (300 * DAY_US), h >> 54);
    }
}

/// Appends `n <= 12` base32 characters taken from the high bits of `bits`.
fn push_base32(out: &mut Vec<u8>, bits: u64, n: usize) {
    let mut buf = [0u8; 12];
    for (i, c) in buf[..n].iter_mut().enumerate() {
        *c = BASE32[((bits >> (59 - 5 * i)) & 31) as usize];
    }
    out.extend_from_slice(&buf[..n]);
}

/// Appends the 52 base32 characters of a SHA-256 CID body (after its multibase
/// prefix), drawn from `rng`.
fn push_digest(out: &mut Vec<u8>, rng: &mut Rng) {
    for _ in 0..4 {
        push_base32(out, rng.next_u64(), 12);
    }
    push_base32(out, rng.next_u64(), 4);
}

/// Appends an atproto TID: microseconds and a 10-bit clock id in sortable base32, so
/// record keys made later sort later.
fn push_tid(out: &mut Vec<u8>, micros: u64, clock: u64) {
    let v = (micros << 10) | (clock & 1023);
    let mut buf = [0u8; 13];
    for (i, c) in buf.iter_mut().enumerate() {
        *c = BASE32_SORTABLE[((v >> (60 - 5 * i)) & 31) as usize];
    }
    out.extend_from_slice(&buf);
}

/// Appends a plausible article or video URL.
fn push_url(rng: &mut Rng, s: &mut String) {
    const SECTIONS: &[&str] = &[
        "news",
        "watch",
        "article",
        "2024/11/21",
        "p",
        "wiki",
        "status",
        "en",
        "abs",
    ];
    s.push_str("https://");
    s.push_str(rng.pick(words::DOMAINS));
    s.push('/');
    s.push_str(rng.pick(SECTIONS));
    s.push('/');
    let id = rng.next_u64();
    for i in 0..rng.between(6, 12) as usize {
        s.push(char::from(BASE32[((id >> (59 - 5 * i)) & 31) as usize]));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_text_escapes_and_round_trips() {
        let mut rng = Rng::new(99);
        let (mut quotes, mut newlines, mut backslashes, mut controls, mut multibyte) =
            (0, 0, 0, 0, 0);
        let mut text = String::new();
        let mut out = Vec::new();
        for i in 0..5_000 {
            let lang = [Lang::En, Lang::Ja, Lang::Pt, Lang::Ko, Lang::Fr][i % 5];
            text.clear();
            push_text(&mut rng, lang, 300, &mut text);
            assert!(text.chars().count() <= 300);
            out.clear();
            write_str(&mut out, &text);
            let back: String =
                serde_json::from_slice(&out).unwrap_or_else(|e| panic!("{text:?}: {e}"));
            assert_eq!(back, text);
            quotes += usize::from(text.contains('"'));
            newlines += usize::from(text.contains('\n'));
            backslashes += usize::from(text.contains('\\'));
            controls += usize::from(text.contains(['\t', '\r']));
            multibyte += usize::from(!text.is_ascii());
        }
        // Each kind of awkward content shows up, so escaping is actually exercised.
        for (what, n) in [
            ("quotes", quotes),
            ("newlines", newlines),
            ("backslashes", backslashes),
            ("tabs or CRs", controls),
            ("non-ASCII", multibyte),
        ] {
            assert!(n > 50, "only {n} texts with {what}");
        }
    }

    #[test]
    fn tids_sort_by_time_and_look_like_atproto() {
        let mut a = Vec::new();
        let mut b = Vec::new();
        push_tid(&mut a, START_US, 1023);
        push_tid(&mut b, START_US + 1, 0);
        assert!(a < b);
        assert_eq!(a.len(), 13);
        // Late-2024 TIDs start with '3', like real ones (e.g. 3lbhtytnn2k2f).
        assert_eq!(a[0], b'3');
    }

    #[test]
    fn facet_ranges_cover_their_text() {
        let g = Generator::new(&BlueskyConfig::new(1000, 3));
        let mut out = Vec::new();
        let mut scratch = Scratch::default();
        let mut checked = 0;
        for index in 0..20_000 {
            out.clear();
            g.write_doc(index, &mut out, &mut scratch);
            for facet in &scratch.facets {
                let covered = &scratch.text[facet.bytes.clone()];
                match &facet.feature {
                    Feature::Mention(_) => {
                        assert!(covered.starts_with('@') && covered.ends_with(".bsky.social"))
                    }
                    Feature::Link(url) => {
                        let shown = covered.trim_end_matches("...");
                        assert!(
                            scratch.urls[url.clone()].contains(shown),
                            "{covered} vs {}",
                            &scratch.urls[url.clone()]
                        );
                    }
                    Feature::Tag(tag) => assert_eq!(covered, format!("#{tag}")),
                }
                checked += 1;
            }
            // Facets are only meaningful for the post that made them.
            scratch.facets.clear();
        }
        assert!(checked > 50);
    }
}
