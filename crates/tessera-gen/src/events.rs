//! GitHub-events-like documents: nested and array-heavy, the shape real JSON has and
//! Tessera's Bluesky generator lacks. Payloads depend on the event type and carry
//! arrays of objects (commits, labels, assignees, release assets), a few events carry
//! one very long array, and a configurable share of events breaks the schema on purpose
//! (null or non-object elements, fields of another type, missing keys, other key
//! orders), so that what is shredded from the common case is tested against outliers.

use std::io::{self, Write};

use crate::json::{Precision, write_hex, write_key, write_str, write_timestamp, write_u64};
use crate::parallel;
use crate::rng::{PowerLaw, Rng, hash2};
use crate::words;

/// The largest `commits_max`: it bounds the size of one document.
pub const COMMITS_MAX_LIMIT: u64 = 100_000;

/// The largest actor pool, so that pool arithmetic cannot overflow.
const ACTORS_LIMIT: u64 = 1 << 40;

/// The unit of every share in [`EventsConfig`]: integer draws keep the bytes exact on
/// every platform.
pub const PER_MILLION: u64 = 1_000_000;

/// What to generate: `docs` events from `seed`. Every knob moves the distribution, so
/// a benchmark can run at two clearly different settings (see `tessera gen events`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventsConfig {
    /// Number of documents (events).
    pub docs: u64,
    /// Seed; the same configuration always yields the same bytes.
    pub seed: u64,
    /// Most commits in an ordinary push (1 to [`COMMITS_MAX_LIMIT`]); counts are skewed,
    /// most pushes have one.
    pub commits_max: u64,
    /// Events per million with one very long array (100-600 commits or 100-300 labels).
    pub long_per_million: u64,
    /// Events per million that break the schema: their top-level keys come in another
    /// order, and about a quarter of their array elements are outliers (null, not an
    /// object, a field of another type, a missing key, or keys in reverse order).
    pub outlier_per_million: u64,
    /// Actors in the pool (1 to 2^40); repositories are twice as many.
    pub actors: u64,
    /// Most hashtags in an event's `tags` (1 to [`TAGS_MAX_LIMIT`]). Up to
    /// [`SHORT_TAGS_MAX`] the counts are skewed toward none (0, 1, 2 or 4); above it
    /// they are uniform in `0..=tags_max`: long, high-cardinality arrays of strings.
    pub tags_max: u64,
}

/// The largest `tags_max`: it bounds the size of one document.
pub const TAGS_MAX_LIMIT: u64 = 10_000;

/// The default `tags_max`, whose skewed counts the default data sets keep.
pub const SHORT_TAGS_MAX: u64 = 4;

impl EventsConfig {
    /// `docs` events from `seed` with the default settings.
    pub const fn new(docs: u64, seed: u64) -> Self {
        Self {
            docs,
            seed,
            commits_max: 20,
            long_per_million: 2_000,
            outlier_per_million: 10_000,
            actors: 50_000,
            tags_max: SHORT_TAGS_MAX,
        }
    }
}

/// Writes all documents of `cfg` to `out` as NDJSON in index order using `threads`
/// workers; returns the number of bytes written. The bytes do not depend on `threads`.
pub fn write_events_ndjson(
    cfg: &EventsConfig,
    threads: usize,
    out: &mut impl Write,
) -> io::Result<u64> {
    let generator = Generator::new(cfg);
    let write_doc = |index, buf: &mut Vec<u8>| generator.write_doc(index, buf);
    parallel::write_docs(cfg.docs, BATCH_DOCS, threads, write_doc, out)
}

/// Documents per batch handed between threads (a few MB).
const BATCH_DOCS: u64 = 8_192;
/// 2024-11-21T16:00:00Z.
const START_US: u64 = 1_732_204_800_000_000;
/// Ten events a second, as a busy hour of the public timeline.
const STEP_US: u64 = 100_000;
/// GitHub event ids are decimal strings around this value.
const FIRST_ID: u64 = 44_000_000_000;
const REPO_SALT: u64 = 0x7265_706f;
const LOGIN_SALT: u64 = 0x6c6f_6769;

/// The event types, most frequent first, with weights after the GH Archive mix.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Push,
    Create,
    PullRequest,
    Watch,
    IssueComment,
    Issues,
    Delete,
    Fork,
    Review,
    Release,
}

const KINDS: &[(u32, Kind)] = &[
    (500, Kind::Push),
    (120, Kind::Create),
    (100, Kind::PullRequest),
    (80, Kind::Watch),
    (60, Kind::IssueComment),
    (50, Kind::Issues),
    (30, Kind::Delete),
    (30, Kind::Fork),
    (20, Kind::Review),
    (10, Kind::Release),
];

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Push => "PushEvent",
            Kind::Create => "CreateEvent",
            Kind::PullRequest => "PullRequestEvent",
            Kind::Watch => "WatchEvent",
            Kind::IssueComment => "IssueCommentEvent",
            Kind::Issues => "IssuesEvent",
            Kind::Delete => "DeleteEvent",
            Kind::Fork => "ForkEvent",
            Kind::Review => "PullRequestReviewEvent",
            Kind::Release => "ReleaseEvent",
        }
    }
}

/// Issue and pull-request labels; a label's id and color follow from its position, so
/// a label name always has the same id.
const GH_LABELS: &[&str] = &[
    "bug",
    "enhancement",
    "documentation",
    "dependencies",
    "good first issue",
    "help wanted",
    "question",
    "duplicate",
    "wontfix",
    "invalid",
    "priority: high",
    "priority: low",
    "needs triage",
    "stale",
    "breaking change",
    "performance",
    "security",
    "area: ci",
    "área: docs",
    "バグ",
];
const LABEL_ID_BASE: u64 = 1_000_000;
const EMAIL_DOMAINS: &[&str] = &["users.noreply.github.com", "gmail.com", "example.com"];
const BRANCHES: &[&str] = &[
    "main",
    "master",
    "develop",
    "fix/ci",
    "feature/json",
    "gh-pages",
];

/// How an array element breaks the schema in an outlier event.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Anomaly {
    Null,
    NotObject,
    OtherType,
    Missing,
    Reversed,
}

const ANOMALIES: &[Anomaly] = &[
    Anomaly::Null,
    Anomaly::NotObject,
    Anomaly::OtherType,
    Anomaly::Missing,
    Anomaly::Reversed,
];

/// The fields of one kind of array element, in their usual order.
trait Element: Copy + PartialEq + 'static {
    /// All fields in the usual order.
    const ALL: &'static [Self];
    /// The field a `Missing` anomaly leaves out.
    const MISSABLE: Self;
    fn name(self) -> &'static str;
    /// Writes the field's value; `other_type` asks for the wrong JSON type.
    fn write(self, doc: &mut Doc<'_>, other_type: bool);
}

struct Generator {
    cfg: EventsConfig,
    /// The pool size in use (`cfg.actors` within its limits).
    actors_n: u64,
    actors: PowerLaw,
    repos: PowerLaw,
    commits: PowerLaw,
}

impl Generator {
    fn new(cfg: &EventsConfig) -> Self {
        let actors = cfg.actors.clamp(1, ACTORS_LIMIT);
        Self {
            cfg: cfg.clone(),
            actors_n: actors,
            actors: PowerLaw::new(actors, 10),
            repos: PowerLaw::new(actors.saturating_mul(2), 10),
            commits: PowerLaw::new(cfg.commits_max.clamp(1, COMMITS_MAX_LIMIT), 0),
        }
    }

    fn write_doc(&self, index: u64, out: &mut Vec<u8>) {
        let mut rng = Rng::new(hash2(self.cfg.seed, index));
        let long = rng.below(PER_MILLION) < self.cfg.long_per_million;
        let outlier = rng.below(PER_MILLION) < self.cfg.outlier_per_million;
        let kind = if long {
            rng.pick(&[Kind::Push, Kind::PullRequest, Kind::Issues])
        } else {
            rng.weighted(KINDS)
        };
        let actor = self.actors.sample(&mut rng);
        Doc {
            g: self,
            rng,
            out,
            index,
            kind,
            long,
            outlier,
            actor,
            element: 0,
        }
        .write();
    }

    /// A login for `actor`, stable so commits and assignees agree with the actor object.
    fn push_login(&self, actor: u64, out: &mut String) {
        let h = hash2(self.cfg.seed ^ LOGIN_SALT, actor);
        out.push_str(words::FIRST_NAMES[(h % words::FIRST_NAMES.len() as u64) as usize]);
        out.push('-');
        out.push_str(
            words::HANDLE_SUFFIXES[((h >> 16) % words::HANDLE_SUFFIXES.len() as u64) as usize],
        );
        out.push_str(&(actor % 1000).to_string());
    }
}

/// The top-level keys in their usual order; outlier events rotate it.
const TOP: &[&str] = &[
    "id",
    "type",
    "actor",
    "repo",
    "payload",
    "public",
    "created_at",
    "tags",
];

/// One event being written.
struct Doc<'a> {
    g: &'a Generator,
    rng: Rng,
    out: &'a mut Vec<u8>,
    index: u64,
    kind: Kind,
    long: bool,
    outlier: bool,
    actor: u64,
    /// Drawn once per array element, so that the fields of one element agree (a
    /// label's id, name and color) whatever order they are written in.
    element: u64,
}

impl Doc<'_> {
    fn write(&mut self) {
        let rotate = if self.outlier {
            1 + self.rng.below(TOP.len() as u64 - 1) as usize
        } else {
            0
        };
        self.out.push(b'{');
        let mut first = true;
        for i in 0..TOP.len() {
            let key = TOP[(i + rotate) % TOP.len()];
            write_key(self.out, &mut first, key);
            self.write_top(key);
        }
        self.out.push(b'}');
    }

    fn write_top(&mut self, key: &str) {
        match key {
            "id" => {
                self.out.push(b'"');
                write_u64(self.out, FIRST_ID + self.index);
                self.out.push(b'"');
            }
            "type" => write_str(self.out, self.kind.name()),
            "actor" => self.write_user(self.actor, false),
            "repo" => self.write_repo(),
            "payload" => self.write_payload(),
            "public" => {
                let public = !self.rng.chance(10);
                self.out
                    .extend_from_slice(if public { b"true" } else { b"false" });
            }
            "created_at" => {
                let us = START_US + self.index * STEP_US + self.rng.below(STEP_US);
                self.out.push(b'"');
                write_timestamp(self.out, us, Precision::Seconds);
                self.out.push(b'"');
            }
            _ => self.write_tags(),
        }
    }

    /// `{"id": .., "login": ..}`; `other_type` writes the id as a string.
    fn write_user(&mut self, actor: u64, other_type: bool) {
        let mut login = String::new();
        self.g.push_login(actor, &mut login);
        self.out.extend_from_slice(b"{\"id\":");
        self.write_id(100_000 + actor, other_type);
        self.out.extend_from_slice(b",\"login\":");
        write_str(self.out, &login);
        self.out.push(b'}');
    }

    fn write_id(&mut self, id: u64, as_string: bool) {
        if as_string {
            self.out.push(b'"');
        }
        write_u64(self.out, id);
        if as_string {
            self.out.push(b'"');
        }
    }

    fn write_repo(&mut self) {
        let repo = self.g.repos.sample(&mut self.rng);
        let h = hash2(self.g.cfg.seed ^ REPO_SALT, repo);
        let mut name = String::new();
        self.g.push_login(h % self.g.actors_n, &mut name);
        name.push('/');
        name.push_str(words::HASHTAGS[((h >> 20) % words::HASHTAGS.len() as u64) as usize]);
        name.push('-');
        name.push_str(&(repo % 97).to_string());
        self.out.extend_from_slice(b"{\"id\":");
        write_u64(self.out, 500_000 + repo);
        self.out.extend_from_slice(b",\"name\":");
        write_str(self.out, &name);
        self.out.push(b'}');
    }

    fn write_tags(&mut self) {
        let n = match self.g.cfg.tags_max {
            max if max <= SHORT_TAGS_MAX => self
                .rng
                .weighted(&[(40, 0), (30, 1), (20, 2), (10, 4)])
                .min(max),
            max => self.rng.below(max + 1),
        };
        self.out.push(b'[');
        for i in 0..n {
            if i > 0 {
                self.out.push(b',');
            }
            write_str(self.out, self.rng.pick(words::HASHTAGS));
        }
        self.out.push(b']');
    }

    fn write_payload(&mut self) {
        self.out.push(b'{');
        match self.kind {
            Kind::Push => self.write_push(),
            Kind::PullRequest | Kind::Review => {
                let action = self
                    .rng
                    .weighted(&[(50, "opened"), (40, "closed"), (10, "labeled")]);
                self.out.extend_from_slice(b"\"action\":");
                write_str(self.out, action);
                self.out.extend_from_slice(b",\"number\":");
                let number = self.rng.between(1, 5000);
                write_u64(self.out, number);
                self.out.extend_from_slice(b",\"pull_request\":");
                self.write_pull_request(number);
            }
            Kind::Issues | Kind::IssueComment => self.write_issue_payload(),
            Kind::Watch => self.out.extend_from_slice(b"\"action\":\"started\""),
            Kind::Create | Kind::Delete => {
                self.out.extend_from_slice(b"\"ref\":");
                write_str(self.out, self.rng.pick(BRANCHES));
                self.out.extend_from_slice(b",\"ref_type\":");
                write_str(self.out, self.rng.pick(&["branch", "tag", "repository"]));
            }
            Kind::Fork => {
                self.out.extend_from_slice(b"\"forkee\":");
                let forker = self.actor;
                self.write_user(forker, false);
            }
            Kind::Release => self.write_release(),
        }
        self.out.push(b'}');
    }

    fn write_push(&mut self) {
        let n = if self.long {
            self.rng.between(100, 600)
        } else if self.rng.chance(30) {
            0
        } else {
            1 + self.g.commits.sample(&mut self.rng)
        };
        self.out.extend_from_slice(b"\"push_id\":");
        write_u64(self.out, 9_000_000_000 + self.index);
        self.out.extend_from_slice(b",\"size\":");
        write_u64(self.out, n);
        self.out.extend_from_slice(b",\"ref\":\"refs/heads/");
        self.out
            .extend_from_slice(self.rng.pick(BRANCHES).as_bytes());
        self.out.extend_from_slice(b"\",\"head\":");
        self.write_sha();
        self.out.extend_from_slice(b",\"commits\":");
        self.write_array::<Commit>(n);
    }

    fn write_pull_request(&mut self, number: u64) {
        self.out.extend_from_slice(b"{\"number\":");
        write_u64(self.out, number);
        self.out.extend_from_slice(b",\"title\":");
        self.write_words(3, 9);
        self.out.extend_from_slice(b",\"state\":");
        write_str(self.out, self.rng.pick(&["open", "closed"]));
        self.out.extend_from_slice(b",\"labels\":");
        self.write_labels();
        self.out.extend_from_slice(b",\"assignees\":");
        let n = self.rng.weighted(&[(60, 0), (30, 1), (10, 2)]);
        self.write_array::<Assignee>(n);
        for side in ["head", "base"] {
            self.out.extend_from_slice(b",\"");
            self.out.extend_from_slice(side.as_bytes());
            self.out.extend_from_slice(b"\":{\"ref\":");
            write_str(self.out, self.rng.pick(BRANCHES));
            self.out.extend_from_slice(b",\"sha\":");
            self.write_sha();
            self.out.push(b'}');
        }
        self.out.extend_from_slice(b",\"comments\":");
        let comments = self.rng.below(30);
        write_u64(self.out, comments);
        self.out.push(b'}');
    }

    fn write_issue_payload(&mut self) {
        let action = self
            .rng
            .weighted(&[(60, "opened"), (30, "closed"), (10, "reopened")]);
        self.out.extend_from_slice(b"\"action\":");
        write_str(self.out, action);
        self.out.extend_from_slice(b",\"issue\":{\"number\":");
        let number = self.rng.between(1, 20_000);
        write_u64(self.out, number);
        self.out.extend_from_slice(b",\"title\":");
        self.write_words(3, 10);
        self.out.extend_from_slice(b",\"labels\":");
        self.write_labels();
        let plus_one = self.rng.weighted(&[(70, 0), (20, 1), (8, 5), (2, 40)]);
        let heart = self.rng.weighted(&[(85, 0), (12, 1), (3, 9)]);
        let other = self.rng.below(3);
        self.out
            .extend_from_slice(b",\"reactions\":{\"total_count\":");
        write_u64(self.out, plus_one + heart + other);
        self.out.extend_from_slice(b",\"+1\":");
        write_u64(self.out, plus_one);
        self.out.extend_from_slice(b",\"heart\":");
        write_u64(self.out, heart);
        self.out.extend_from_slice(b"}}");
        if self.kind == Kind::IssueComment {
            self.out.extend_from_slice(b",\"comment\":{\"id\":");
            write_u64(self.out, 7_000_000 + self.index);
            self.out.extend_from_slice(b",\"body\":");
            self.write_words(2, 20);
            self.out.push(b'}');
        }
    }

    fn write_release(&mut self) {
        self.out
            .extend_from_slice(b"\"action\":\"published\",\"release\":{\"tag_name\":\"v");
        let (major, minor) = (self.rng.below(5), self.rng.below(30));
        write_u64(self.out, major);
        self.out.push(b'.');
        write_u64(self.out, minor);
        self.out.extend_from_slice(b".0\",\"assets\":");
        let n = self.rng.weighted(&[(50, 0), (30, 2), (20, 6)]);
        self.write_array::<Asset>(n);
        self.out.push(b'}');
    }

    fn write_labels(&mut self) {
        let n = if self.long {
            self.rng.between(100, 300)
        } else {
            self.rng
                .weighted(&[(50, 0), (25, 1), (12, 2), (8, 3), (5, 4)])
        };
        self.write_array::<Label>(n);
    }

    /// A JSON array of `n` elements of kind `E`; in outlier events about a quarter of
    /// them are outliers.
    fn write_array<E: Element>(&mut self, n: u64) {
        self.out.push(b'[');
        for i in 0..n {
            if i > 0 {
                self.out.push(b',');
            }
            let anomaly = (self.outlier && self.rng.chance(250)).then(|| self.rng.pick(ANOMALIES));
            self.write_element::<E>(anomaly);
        }
        self.out.push(b']');
    }

    fn write_element<E: Element>(&mut self, anomaly: Option<Anomaly>) {
        match anomaly {
            Some(Anomaly::Null) => return self.out.extend_from_slice(b"null"),
            Some(Anomaly::NotObject) => return write_str(self.out, self.rng.pick(GH_LABELS)),
            _ => {}
        }
        self.element = self.rng.next_u64();
        let reversed = anomaly == Some(Anomaly::Reversed);
        let other_type = anomaly == Some(Anomaly::OtherType);
        self.out.push(b'{');
        let mut first = true;
        for i in 0..E::ALL.len() {
            let field = E::ALL[if reversed { E::ALL.len() - 1 - i } else { i }];
            if anomaly == Some(Anomaly::Missing) && field == E::MISSABLE {
                continue;
            }
            write_key(self.out, &mut first, field.name());
            field.write(self, other_type);
        }
        self.out.push(b'}');
    }

    /// A 40-digit hex SHA-1-like string.
    fn write_sha(&mut self) {
        self.out.push(b'"');
        let (a, b, c) = (
            self.rng.next_u64(),
            self.rng.next_u64(),
            self.rng.next_u64(),
        );
        write_hex(self.out, a, 16);
        write_hex(self.out, b, 16);
        write_hex(self.out, c, 8);
        self.out.push(b'"');
    }

    /// A string of `lo..=hi` words of everyday English (with the odd escape).
    fn write_words(&mut self, lo: u64, hi: u64) {
        let mut text = String::new();
        for i in 0..self.rng.between(lo, hi) {
            if i > 0 {
                text.push(' ');
            }
            text.push_str(self.rng.pick(words::EN));
        }
        write_str(self.out, &text);
    }
}

/// `payload.commits[*]`: `{sha, author {name, email}, message, distinct}`.
#[derive(Clone, Copy, PartialEq)]
enum Commit {
    Sha,
    Author,
    Message,
    Distinct,
}

impl Element for Commit {
    const ALL: &'static [Self] = &[Self::Sha, Self::Author, Self::Message, Self::Distinct];
    const MISSABLE: Self = Self::Author;

    fn name(self) -> &'static str {
        match self {
            Self::Sha => "sha",
            Self::Author => "author",
            Self::Message => "message",
            Self::Distinct => "distinct",
        }
    }

    fn write(self, doc: &mut Doc<'_>, other_type: bool) {
        match self {
            Self::Sha => doc.write_sha(),
            Self::Author => {
                let name = doc.rng.pick(words::FIRST_NAMES);
                doc.out.extend_from_slice(b"{\"name\":");
                write_str(doc.out, name);
                doc.out.extend_from_slice(b",\"email\":\"");
                doc.out.extend_from_slice(name.as_bytes());
                doc.out.push(b'@');
                doc.out
                    .extend_from_slice(doc.rng.pick(EMAIL_DOMAINS).as_bytes());
                doc.out.extend_from_slice(b"\"}");
            }
            Self::Message => doc.write_words(2, 12),
            Self::Distinct if other_type => doc.out.extend_from_slice(b"null"),
            Self::Distinct => {
                let distinct = !doc.rng.chance(100);
                doc.out
                    .extend_from_slice(if distinct { b"true" } else { b"false" });
            }
        }
    }
}

/// `labels[*]`: `{id, name, color}`; the id as a string when of another type.
#[derive(Clone, Copy, PartialEq)]
enum Label {
    Id,
    Name,
    Color,
}

impl Element for Label {
    const ALL: &'static [Self] = &[Self::Id, Self::Name, Self::Color];
    const MISSABLE: Self = Self::Color;

    fn name(self) -> &'static str {
        match self {
            Self::Id => "id",
            Self::Name => "name",
            Self::Color => "color",
        }
    }

    fn write(self, doc: &mut Doc<'_>, other_type: bool) {
        let label = label_rank(doc.element);
        match self {
            Self::Id => doc.write_id(LABEL_ID_BASE + label, other_type),
            Self::Name => write_str(doc.out, GH_LABELS[label as usize]),
            Self::Color => {
                doc.out.push(b'"');
                write_hex(doc.out, hash2(label, 0xc0), 6);
                doc.out.push(b'"');
            }
        }
    }
}

/// The label number of an element drawn as `draw`, skewed so that `bug` and
/// `enhancement` dominate.
fn label_rank(draw: u64) -> u64 {
    let n = GH_LABELS.len() as u64;
    (draw >> 32) % ((draw & 0xffff_ffff) % n + 1)
}

/// `assignees[*]`: `{login, id}`.
#[derive(Clone, Copy, PartialEq)]
enum Assignee {
    Login,
    Id,
}

impl Element for Assignee {
    const ALL: &'static [Self] = &[Self::Login, Self::Id];
    const MISSABLE: Self = Self::Id;

    fn name(self) -> &'static str {
        match self {
            Self::Login => "login",
            Self::Id => "id",
        }
    }

    fn write(self, doc: &mut Doc<'_>, other_type: bool) {
        let actor = doc.element % doc.g.actors_n;
        match self {
            Self::Login => {
                let mut login = String::new();
                doc.g.push_login(actor, &mut login);
                write_str(doc.out, &login);
            }
            Self::Id => doc.write_id(100_000 + actor, other_type),
        }
    }
}

/// `release.assets[*]`: `{name, size}`.
#[derive(Clone, Copy, PartialEq)]
enum Asset {
    Name,
    Size,
}

impl Element for Asset {
    const ALL: &'static [Self] = &[Self::Name, Self::Size];
    const MISSABLE: Self = Self::Size;

    fn name(self) -> &'static str {
        match self {
            Self::Name => "name",
            Self::Size => "size",
        }
    }

    fn write(self, doc: &mut Doc<'_>, other_type: bool) {
        match self {
            Self::Name => write_str(
                doc.out,
                doc.rng
                    .pick(&["linux-x86_64.tar.gz", "macos-arm64.zip", "windows.msi"]),
            ),
            Self::Size if other_type => doc.out.extend_from_slice(b"\"12 MB\""),
            Self::Size => {
                let size = doc.rng.between(1_000, 50_000_000);
                write_u64(doc.out, size);
            }
        }
    }
}
