//! Tessera's table format on object storage.
//!
//! A table is a prefix holding `data/` (immutable Parquet files of JSON tiles) and
//! `_tessera/` (numbered manifest versions). A commit writes its data files, then the
//! next manifest version with a conditional PUT; losers of a race re-read and retry.
//! Readers see one version (snapshot isolation); a crash at any point leaves the last
//! committed version intact; deletes are per-file deletion vectors; `vacuum` removes
//! data files no version references, and a commit claims its data files first so that
//! vacuum never removes one it is about to reference ([`vacuum`] has the rules).
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), tessera_table::TableError> {
//! use std::sync::Arc;
//! use object_store::memory::InMemory;
//! use tessera_table::{Table, TableOptions};
//!
//! let store = Arc::new(InMemory::new());
//! let table = Table::create(store.clone(), "tables/events".into(), TableOptions::default()).await?;
//! let before = table.snapshot().await?;
//! assert_eq!(before.version(), 0);
//! assert!(before.files().is_empty());
//! // A second table at the same place is refused.
//! assert!(Table::create(store, "tables/events".into(), TableOptions::default()).await.is_err());
//! # Ok(())
//! # }
//! ```

mod cache;
mod claims;
pub mod error;
mod layout;
pub mod manifest;
pub mod readahead;
pub mod snapshot;
pub mod table;
mod traffic;
pub mod vacuum;

pub use error::TableError;
pub use layout::{REJECT_PARTS, REJECTS};
pub use manifest::{DataFile, DeletionVector, JSON_TYPE, Manifest, SideFile, TableColumn};
pub use readahead::Pacer;
pub use snapshot::{FilePredicate, FileRead, OpenFile, ROW_NUMBER, Snapshot, dictionary_type};
pub use table::{FileDeletes, MAX_COMMIT_ATTEMPTS, NewFile, Table, TableOptions};
pub use traffic::Traffic;
pub use vacuum::VacuumReport;
