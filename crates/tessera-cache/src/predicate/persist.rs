//! The predicate cache on disk: one file, `<cache_dir>/predicates/predicates.json`,
//! written whole to a temporary file and renamed over the last one (a reader sees the old
//! file or the new one, never half of one), its body checked by a CRC-32 in its first
//! line, so a file torn by a crash or a full disk is dropped when loaded, never trusted.

use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};

use super::cache::{Entries, FileId, Fingerprint, PersistedEntry, PredicateLimits};
use super::ranges::RowRanges;
use crate::CacheError;
use crate::semantic::dnf::Dnf;
use crate::semantic::normalize::NormalizeLimits;
use crate::semantic::predicate::Predicate;

/// The name of the persisted file in the predicates directory.
pub(super) const FILE_NAME: &str = "predicates.json";

/// The first word of the file's header line; the format's version follows it.
const MAGIC: &str = "tessera-predicates 1";

/// The file's body: predicates and files once each, entries referring to them by index,
/// least recently used first (so a load restores the recency order).
#[derive(Debug, Default, Serialize, Deserialize)]
struct Body {
    predicates: Vec<Predicate>,
    files: Vec<FileId>,
    entries: Vec<StoredEntry>,
}

/// One entry in the file: (file, row group, predicate, runs), file and predicate as
/// indices into the body's lists.
type StoredEntry = (u32, u32, u32, Vec<(u32, u32)>);

/// The persisted form of `entries`.
pub(super) fn encode(entries: &Entries) -> Vec<u8> {
    let mut body = Body::default();
    let mut predicates: BTreeMap<&Dnf, u32> = BTreeMap::new();
    let mut files: HashMap<&FileId, u32> = HashMap::new();
    for PersistedEntry {
        file,
        group,
        dnf,
        ranges,
    } in entries.oldest_first()
    {
        let predicate = *predicates.entry(dnf).or_insert_with(|| {
            body.predicates.push(dnf.to_predicate());
            (body.predicates.len() - 1) as u32
        });
        let file = *files.entry(&**file).or_insert_with(|| {
            body.files.push(FileId::clone(file));
            (body.files.len() - 1) as u32
        });
        let runs = ranges.pairs().to_vec();
        body.entries.push((file, group, predicate, runs));
    }
    let json = serde_json::to_vec(&body).expect("the body serializes");
    let crc = crc32fast::hash(&json);
    let mut out = format!("{MAGIC} {crc:08x} {}\n", json.len()).into_bytes();
    out.extend_from_slice(&json);
    out
}

/// The entries of a persisted file, within `limits`; `None` when the file is torn or
/// not a predicate file at all.
pub(super) fn decode(bytes: &[u8], limits: &PredicateLimits) -> Option<Entries> {
    let newline = bytes.iter().position(|&b| b == b'\n')?;
    let header = std::str::from_utf8(&bytes[..newline]).ok()?;
    let rest = header.strip_prefix(MAGIC)?.trim_start();
    let (crc, length) = rest.split_once(' ')?;
    let crc = u32::from_str_radix(crc, 16).ok()?;
    let length: usize = length.parse().ok()?;
    let json = &bytes[newline + 1..];
    if json.len() != length || crc32fast::hash(json) != crc {
        return None;
    }
    let body: Body = serde_json::from_slice(json).ok()?;
    let normalize = NormalizeLimits::default();
    let predicates: Vec<Option<Arc<Fingerprint>>> = body
        .predicates
        .iter()
        .map(|p| Fingerprint::new(p, &normalize))
        .collect();
    let mut entries = Entries::default();
    for (file, group, predicate, runs) in body.entries {
        let file = body.files.get(file as usize)?;
        // A predicate the normalizer now refuses is dropped with its entries.
        let Some(predicate) = predicates.get(predicate as usize)? else {
            continue;
        };
        let ranges = RowRanges::from_runs(runs.into_iter().map(|(s, e)| s..e));
        entries.record(file, group, predicate, ranges, limits);
    }
    entries.dirty = false;
    Some(entries)
}

/// Writes `bytes` as `dir`'s persisted file: to a temporary file first (named after
/// this process and a counter, so two writers never share one), then renamed over it.
pub(super) fn write(dir: &Path, bytes: &[u8]) -> Result<(), CacheError> {
    static WRITES: AtomicU64 = AtomicU64::new(0);
    let io = |source| CacheError::Io {
        dir: dir.to_path_buf(),
        source,
    };
    let n = WRITES.fetch_add(1, Ordering::Relaxed);
    let temporary = dir.join(format!("{FILE_NAME}.{}.{n}.tmp", std::process::id()));
    let written = std::fs::File::create(&temporary).and_then(|mut f| f.write_all(bytes));
    if let Err(e) = written.and_then(|()| std::fs::rename(&temporary, dir.join(FILE_NAME))) {
        let _ = std::fs::remove_file(&temporary);
        return Err(io(e));
    }
    Ok(())
}

/// The entries persisted in `dir` (empty when there is no file); a torn file is deleted
/// and loads as empty.
pub(super) fn load(dir: &Path, limits: &PredicateLimits) -> Result<Entries, CacheError> {
    let path: PathBuf = dir.join(FILE_NAME);
    let bytes = match std::fs::read(&path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Entries::default()),
        Err(source) => {
            return Err(CacheError::Io {
                dir: dir.to_path_buf(),
                source,
            });
        }
    };
    match decode(&bytes, limits) {
        Some(entries) => Ok(entries),
        None => {
            let _ = std::fs::remove_file(&path);
            Ok(Entries::default())
        }
    }
}
