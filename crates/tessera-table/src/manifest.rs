//! One table version: the list of data files with their summaries and deletion vectors.
//!
//! Stored as JSON at `_tessera/<version, 20 digits>.json`; zero padding makes listing
//! order version order. Manifests are immutable once written.

use serde::{Deserialize, Serialize};
use tessera_tiles::summary::FileSummary;

/// Version of the manifest layout; readers reject layouts they do not know.
pub const FORMAT: u32 = 1;

/// One table version.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Manifest {
    /// Layout version ([`FORMAT`]).
    pub format: u32,
    /// This version's number; version 0 is the empty table written by `create`.
    pub version: u64,
    /// Unique id of the commit that wrote this version, so a writer whose PUT failed in
    /// flight can tell whether it landed.
    pub commit_id: String,
    /// Name of the JSON document column.
    pub json_column: String,
    /// The table's columns in order, the JSON document column among them; empty for a
    /// table of the document column alone (the layout before relational columns).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub columns: Vec<TableColumn>,
    /// When the commit was made (RFC 3339, UTC).
    pub committed_at: String,
    /// The data files of this version.
    pub files: Vec<DataFile>,
}

/// The type name of the JSON document column in [`TableColumn::ty`].
pub const JSON_TYPE: &str = "json";

/// One column of a table's schema.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct TableColumn {
    /// The column's name.
    pub name: String,
    /// [`JSON_TYPE`] for the document column; otherwise the Arrow type of a relational
    /// column as Arrow prints it (`Int64`, `Utf8View`, ...), stored as an ordinary
    /// Parquet column of the data files.
    #[serde(rename = "type")]
    pub ty: String,
    /// Whether the column may hold nulls (never for the document column).
    pub nullable: bool,
}

impl TableColumn {
    /// The JSON document column `name`.
    pub fn json(name: &str) -> Self {
        Self {
            name: name.to_string(),
            ty: JSON_TYPE.to_string(),
            nullable: false,
        }
    }

    /// A relational column like `field`.
    pub fn relational(field: &arrow::datatypes::Field) -> Self {
        Self {
            name: field.name().clone(),
            ty: field.data_type().to_string(),
            nullable: field.is_nullable(),
        }
    }

    /// True for the JSON document column.
    pub fn is_json(&self) -> bool {
        self.ty == JSON_TYPE
    }

    /// The Arrow type of a relational column (`None` for the document column), or why
    /// the stored type name is not one.
    pub fn data_type(&self) -> Result<Option<arrow::datatypes::DataType>, String> {
        if self.is_json() {
            return Ok(None);
        }
        self.ty
            .parse()
            .map(Some)
            .map_err(|e| format!("column '{}' has type '{}': {e}", self.name, self.ty))
    }
}

/// A data file as one version sees it.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct DataFile {
    /// Key relative to the table prefix (`data/....parquet`).
    pub path: String,
    /// Size in bytes.
    pub size: u64,
    /// Schema, statistics and key-path filter of the file.
    pub summary: FileSummary,
    /// Rows deleted from the file as of this version.
    #[serde(default, skip_serializing_if = "DeletionVector::is_empty")]
    pub deleted: DeletionVector,
    /// The side relations of the file's high-cardinality arrays (Tiles-*), one file per
    /// array path; their rows name rows of this file, so they share its deletions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sides: Vec<SideFile>,
}

/// The elements of the arrays at one path of a data file, as a file of their own: rows
/// `{"value": element}` with the element's row in the data file and its position
/// (`tessera_tiles::side`).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct SideFile {
    /// The array path's keys from the document root.
    pub array: Vec<String>,
    /// Key relative to the table prefix (`data/....parquet`).
    pub path: String,
    /// Size in bytes.
    pub size: u64,
    /// Schema and statistics of the side file.
    pub summary: FileSummary,
}

impl SideFile {
    /// The side file as a data file of its own, to open and read like one.
    pub fn as_data_file(&self) -> DataFile {
        DataFile {
            path: self.path.clone(),
            size: self.size,
            summary: self.summary.clone(),
            deleted: DeletionVector::default(),
            sides: Vec::new(),
        }
    }
}

impl DataFile {
    /// The keys of the file and of its side files, which a version references together.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        std::iter::once(self.path.as_str()).chain(self.sides.iter().map(|s| s.path.as_str()))
    }

    /// The side file of the arrays at `array` (keys from the root), if the file has one.
    pub fn side(&self, array: &[String]) -> Option<&SideFile> {
        self.sides.iter().find(|s| s.array == array)
    }

    /// True when row `row` (0-based position in the file) is deleted.
    pub fn is_deleted(&self, row: u64) -> bool {
        self.deleted.contains(row)
    }

    /// Rows that are not deleted.
    pub fn live_rows(&self) -> u64 {
        self.summary.rows - self.deleted.len()
    }
}

/// Deleted row positions of one file: sorted, disjoint `[start, end)` runs, compact for
/// the common cases (a few scattered rows, or long ranges).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
#[serde(transparent)]
pub struct DeletionVector {
    runs: Vec<(u64, u64)>,
}

impl DeletionVector {
    /// A vector of the given rows (any order, duplicates allowed).
    pub fn from_rows(rows: impl IntoIterator<Item = u64>) -> Self {
        let mut sorted: Vec<u64> = rows.into_iter().collect();
        sorted.sort_unstable();
        sorted.dedup();
        let mut runs: Vec<(u64, u64)> = Vec::new();
        for row in sorted {
            match runs.last_mut() {
                Some((_, end)) if *end == row => *end += 1,
                _ => runs.push((row, row + 1)),
            }
        }
        Self { runs }
    }

    /// True when no row is deleted.
    pub fn is_empty(&self) -> bool {
        self.runs.is_empty()
    }

    /// Number of deleted rows.
    pub fn len(&self) -> u64 {
        self.runs.iter().map(|(s, e)| e - s).sum()
    }

    /// True when `row` is deleted.
    pub fn contains(&self, row: u64) -> bool {
        let at = self.runs.partition_point(|&(_, end)| end <= row);
        self.runs.get(at).is_some_and(|&(start, _)| start <= row)
    }

    /// The union of `self` and `other`.
    pub fn union(&self, other: &DeletionVector) -> DeletionVector {
        let mut runs: Vec<(u64, u64)> = self.runs.iter().chain(&other.runs).copied().collect();
        runs.sort_unstable();
        let mut merged: Vec<(u64, u64)> = Vec::with_capacity(runs.len());
        for (start, end) in runs {
            match merged.last_mut() {
                Some((_, last_end)) if start <= *last_end => *last_end = (*last_end).max(end),
                _ => merged.push((start, end)),
            }
        }
        Self { runs: merged }
    }

    /// The runs of kept and deleted rows over a file of `rows` rows, in order, as
    /// `(deleted, length)`; what a Parquet row selection needs.
    pub fn selection(&self, rows: u64) -> Vec<(bool, u64)> {
        assert!(self.end() <= rows, "deletion vector beyond the file's rows");
        self.selection_in(0, rows)
    }

    /// Like [`Self::selection`], but over the `rows` rows starting at `start` only (one
    /// row group of a file).
    pub fn selection_in(&self, start: u64, rows: u64) -> Vec<(bool, u64)> {
        let end = start + rows;
        let mut out = Vec::with_capacity(4);
        let mut at = start;
        let first = self.runs.partition_point(|&(_, e)| e <= start);
        for &(s, e) in self.runs[first..].iter().take_while(|&&(s, _)| s < end) {
            let (s, e) = (s.max(start), e.min(end));
            if s > at {
                out.push((false, s - at));
            }
            out.push((true, e - s));
            at = e;
        }
        if end > at {
            out.push((false, end - at));
        }
        debug_assert_eq!(out.iter().map(|(_, n)| n).sum::<u64>(), rows);
        out
    }

    /// The largest deleted row plus one (0 when empty).
    pub fn end(&self) -> u64 {
        self.runs.last().map_or(0, |&(_, end)| end)
    }

    /// Why these runs are not a deletion vector of a file of `rows` rows, if they are
    /// not: runs must be non-empty, ascending, disjoint and within the file. A stored
    /// manifest is input; the methods above assume these rules.
    fn check(&self, rows: u64) -> Result<(), String> {
        let mut previous_end = 0;
        for (k, &(start, end)) in self.runs.iter().enumerate() {
            if start >= end || (k > 0 && start <= previous_end) || end > rows {
                return Err(format!(
                    "deleted rows {start}..{end} are not a run after row {previous_end} within {rows} rows"
                ));
            }
            previous_end = end;
        }
        Ok(())
    }
}

/// Encodes `manifest` as the JSON stored at its key.
pub fn encode(manifest: &Manifest) -> Result<Vec<u8>, String> {
    serde_json::to_vec(manifest).map_err(|e| e.to_string())
}

/// Decodes the manifest stored for `version`, or says why `bytes` are not one: not
/// JSON of a manifest, another format or version, or a deletion vector that is not one
/// of its file.
pub fn decode(bytes: &[u8], version: u64) -> Result<Manifest, String> {
    let manifest: Manifest = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
    if manifest.format != FORMAT || manifest.version != version {
        return Err(format!(
            "format {} version {} (expected format {FORMAT} version {version})",
            manifest.format, manifest.version
        ));
    }
    for file in &manifest.files {
        file.deleted
            .check(file.summary.rows)
            .map_err(|reason| format!("{}: {reason}", file.path))?;
    }
    Ok(manifest)
}

/// The key of version `version`'s manifest below the table prefix.
pub fn manifest_key(version: u64) -> String {
    format!("_tessera/{version:020}.json")
}

/// The version a manifest key names, if it is one.
pub fn version_of(key: &str) -> Option<u64> {
    let name = key.rsplit('/').next()?;
    let digits = name.strip_suffix(".json")?;
    (digits.len() == 20 && digits.bytes().all(|b| b.is_ascii_digit()))
        .then(|| digits.parse().ok())
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Version 3 of a table of one file of `rows` rows whose deletion vector is `runs`,
    /// as stored JSON.
    fn stored(rows: u64, runs: &[(u64, u64)]) -> Vec<u8> {
        let summary = FileSummary {
            rows,
            schema: Default::default(),
            stats: Vec::new(),
            unshredded_paths: tessera_tiles::summary::PathBloom::with_capacity(0),
            columns: Vec::new(),
        };
        let manifest = Manifest {
            format: FORMAT,
            version: 3,
            commit_id: "c".into(),
            json_column: "j".into(),
            columns: Vec::new(),
            committed_at: "2026-11-23T00:00:00+00:00".into(),
            files: vec![DataFile {
                path: "data/a.parquet".into(),
                size: 100,
                summary,
                deleted: DeletionVector {
                    runs: runs.to_vec(),
                },
                sides: Vec::new(),
            }],
        };
        encode(&manifest).unwrap()
    }

    #[test]
    fn decoding_refuses_deletion_vectors_that_are_not_runs_of_the_file() {
        // Every pair of runs over a few rows: accepted exactly when the runs are
        // non-empty, ascending, disjoint and within the file, and then they survive a
        // round trip.
        let bounds: Vec<(u64, u64)> = (0..6).flat_map(|s| (0..6).map(move |e| (s, e))).collect();
        for &first in &bounds {
            for &second in &bounds {
                let runs = [first, second];
                let valid =
                    first.0 < first.1 && first.1 < second.0 && second.0 < second.1 && second.1 <= 4;
                let decoded = decode(&stored(4, &runs), 3);
                assert_eq!(decoded.is_ok(), valid, "{runs:?}: {decoded:?}");
                if let Ok(manifest) = decoded {
                    assert_eq!(manifest.files[0].deleted.runs, runs);
                    assert_eq!(decode(&encode(&manifest).unwrap(), 3).unwrap(), manifest);
                }
            }
        }
        assert!(decode(&stored(4, &[]), 2).is_err(), "another version");
        assert!(decode(b"{", 3).is_err());
    }

    #[test]
    fn deletion_vectors_are_runs() {
        let dv = DeletionVector::from_rows([7, 3, 4, 5, 9, 4]);
        assert_eq!(dv.len(), 5);
        assert!((0..12).filter(|&r| dv.contains(r)).eq([3, 4, 5, 7, 9]));
        assert_eq!(serde_json::to_string(&dv).unwrap(), "[[3,6],[7,8],[9,10]]");
        let merged = dv.union(&DeletionVector::from_rows([6, 8, 11]));
        assert_eq!(merged.len(), 8);
        assert_eq!(serde_json::to_string(&merged).unwrap(), "[[3,10],[11,12]]");
        assert_eq!(
            merged.selection(13),
            vec![(false, 3), (true, 7), (false, 1), (true, 1), (false, 1)]
        );
    }

    /// Each row's fate read from the windows of any split of a file equals its fate in
    /// the deletion vector.
    #[test]
    fn selections_of_row_groups_agree_with_the_vector() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = |bound: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % bound
        };
        for _ in 0..200 {
            let rows = 1 + next(300);
            let dv = DeletionVector::from_rows((0..next(rows)).map(|_| next(rows)));
            let mut start = 0;
            while start < rows {
                let len = 1 + next(rows - start);
                let expanded: Vec<bool> = dv
                    .selection_in(start, len)
                    .into_iter()
                    .flat_map(|(deleted, n)| std::iter::repeat_n(deleted, n as usize))
                    .collect();
                let expected: Vec<bool> = (start..start + len).map(|r| dv.contains(r)).collect();
                assert_eq!(expanded, expected, "{dv:?} rows {start}+{len}");
                start += len;
            }
        }
    }

    #[test]
    fn column_types_round_trip_through_their_names() {
        use arrow::datatypes::{DataType, Field, TimeUnit};
        for ty in [
            DataType::Int64,
            DataType::Utf8View,
            DataType::Float64,
            DataType::Boolean,
            DataType::Date32,
            DataType::Decimal128(12, 2),
            DataType::Timestamp(TimeUnit::Microsecond, Some("+00:00".into())),
        ] {
            let column = TableColumn::relational(&Field::new("c", ty.clone(), true));
            assert_eq!(column.data_type(), Ok(Some(ty)));
        }
        assert_eq!(TableColumn::json("j").data_type(), Ok(None));
        let broken = TableColumn {
            ty: "Int65".into(),
            ..TableColumn::json("x")
        };
        assert!(
            broken
                .data_type()
                .unwrap_err()
                .contains("column 'x' has type 'Int65'")
        );
    }

    #[test]
    fn manifest_keys_sort_as_versions() {
        assert_eq!(manifest_key(12), "_tessera/00000000000000000012.json");
        assert_eq!(version_of("t/_tessera/00000000000000000012.json"), Some(12));
        assert_eq!(version_of("t/_tessera/12.json"), None);
        assert_eq!(version_of("t/_tessera/0000000000000000001x.json"), None);
        assert!(manifest_key(9) < manifest_key(10));
    }
}
