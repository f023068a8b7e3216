//! Runs the SQL specification in `test/sql/*.slt` (sqllogictest format, as in DuckDB and
//! DataFusion) against a Tessera session, from `test/data` so that files name their
//! fixtures by relative path.

#[path = "common/slt.rs"]
mod slt;

use arrow::record_batch::RecordBatch;
use arrow::util::display::{ArrayFormatter, FormatOptions};
use slt::{Db, Failure};
use sqllogictest::Runner;

/// Cells in Arrow's display form, trailing blanks trimmed and the repository path `root`
/// shown as `WORKSPACE`, so that plans compare on any machine.
fn arrow_cells(batch: &RecordBatch, root: &str) -> Result<Vec<Vec<String>>, Failure> {
    let options = FormatOptions::default().with_null("NULL");
    let formatters = batch
        .columns()
        .iter()
        .map(|c| ArrayFormatter::try_new(c.as_ref(), &options))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| Failure(e.to_string()))?;
    Ok((0..batch.num_rows())
        .map(|row| {
            formatters
                .iter()
                .map(|f| {
                    f.value(row)
                        .to_string()
                        .trim_end()
                        .replace(root, "WORKSPACE")
                })
                .collect()
        })
        .collect())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sql_specification() {
    let root = slt::repo_root();
    let files = slt::slt_files(&root.join("test/sql"));
    assert!(!files.is_empty(), "no .slt files found");
    std::env::set_current_dir(root.join("test/data")).unwrap();
    let mut failures = Vec::new();
    for file in &files {
        let root_text = root
            .display()
            .to_string()
            .trim_start_matches('/')
            .to_string();
        let mut runner = Runner::new(move || {
            let root = root_text.clone();
            async move { Db::new(Box::new(move |batch| arrow_cells(batch, &root))) }
        });
        runner.with_column_validator(|_, _| true);
        if let Err(e) = runner.run_file_async(file).await {
            failures.push(format!("{}:\n{e}", file.display()));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} files failed:\n{}",
        failures.len(),
        files.len(),
        failures.join("\n\n")
    );
}
