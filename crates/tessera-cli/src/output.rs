//! Writing result batches as an aligned table, CSV, JSON, NDJSON or Parquet.

use std::fs::File;
use std::io::{IsTerminal, Write};
use std::path::Path;

use anyhow::{Context, bail};
use arrow::array::RecordBatch;
use arrow::datatypes::SchemaRef;
use clap::ValueEnum;

/// An output format of `tessera sql`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Aligned text table.
    Table,
    /// Comma-separated values with a header line.
    Csv,
    /// One JSON array of row objects.
    Json,
    /// One JSON object per line.
    Ndjson,
    /// A Parquet file (needs --output or a redirected stdout).
    Parquet,
}

/// Where results go.
pub fn open_sink(path: Option<&Path>, format: Format) -> anyhow::Result<Box<dyn Write + Send>> {
    match path {
        Some(path) => {
            let file =
                File::create(path).with_context(|| format!("cannot create {}", path.display()))?;
            Ok(Box::new(std::io::BufWriter::new(file)))
        }
        None if format == Format::Parquet && std::io::stdout().is_terminal() => {
            bail!("Parquet output is binary: use --output FILE or redirect stdout")
        }
        None => Ok(Box::new(std::io::BufWriter::new(std::io::stdout()))),
    }
}

/// Writes `batches` (with `schema`, for empty results) to `out` in `format`.
pub fn write(
    format: Format,
    schema: &SchemaRef,
    batches: &[RecordBatch],
    out: &mut (dyn Write + Send),
) -> anyhow::Result<()> {
    match format {
        Format::Table => {
            if batches.iter().all(|b| b.num_rows() == 0) {
                let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
                writeln!(out, "{}\n(0 rows)", names.join(" | "))?;
            } else {
                let rows: usize = batches.iter().map(|b| b.num_rows()).sum();
                // NULL is shown as NULL, as DuckDB's shell does, not as an empty cell.
                let options = arrow::util::display::FormatOptions::default().with_null("NULL");
                let table =
                    arrow::util::pretty::pretty_format_batches_with_options(batches, &options)?;
                writeln!(out, "{table}")?;
                writeln!(out, "({rows} row{})", if rows == 1 { "" } else { "s" })?;
            }
        }
        Format::Csv => {
            let mut writer = arrow::csv::WriterBuilder::new()
                .with_header(true)
                .build(&mut *out);
            if batches.is_empty() {
                writer.write(&RecordBatch::new_empty(schema.clone()))?;
            }
            for batch in batches {
                writer.write(batch)?;
            }
        }
        Format::Json => {
            // NULLs are written as null, not dropped, so every row has every column.
            let mut writer = arrow::json::WriterBuilder::new()
                .with_explicit_nulls(true)
                .build::<_, arrow::json::writer::JsonArray>(&mut *out);
            for batch in batches {
                writer.write(batch)?;
            }
            writer.finish()?;
            writeln!(out)?;
        }
        Format::Ndjson => {
            let mut writer = arrow::json::WriterBuilder::new()
                .with_explicit_nulls(true)
                .build::<_, arrow::json::writer::LineDelimited>(&mut *out);
            for batch in batches {
                writer.write(batch)?;
            }
            writer.finish()?;
        }
        Format::Parquet => {
            let props = parquet::file::properties::WriterProperties::builder()
                .set_compression(parquet::basic::Compression::ZSTD(Default::default()))
                .build();
            let mut writer =
                parquet::arrow::ArrowWriter::try_new(&mut *out, schema.clone(), Some(props))?;
            for batch in batches {
                writer.write(batch)?;
            }
            writer.close()?;
        }
    }
    out.flush()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Int64Array, StringArray};
    use arrow::datatypes::{DataType, Field, Schema};
    use std::sync::Arc;

    fn batch() -> (SchemaRef, RecordBatch) {
        let schema = Arc::new(Schema::new(vec![
            Field::new("event", DataType::Utf8, true),
            Field::new("count", DataType::Int64, false),
        ]));
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![
                Arc::new(StringArray::from(vec![Some("like"), None])),
                Arc::new(Int64Array::from(vec![3, 1])),
            ],
        )
        .unwrap();
        (schema, batch)
    }

    fn render(format: Format) -> Vec<u8> {
        let (schema, batch) = batch();
        let mut out = Vec::new();
        write(format, &schema, &[batch], &mut out).unwrap();
        out
    }

    #[test]
    fn text_formats_render_rows() {
        assert_eq!(
            String::from_utf8(render(Format::Csv)).unwrap(),
            "event,count\nlike,3\n,1\n"
        );
        assert_eq!(
            String::from_utf8(render(Format::Ndjson)).unwrap(),
            "{\"event\":\"like\",\"count\":3}\n{\"event\":null,\"count\":1}\n"
        );
        assert_eq!(
            String::from_utf8(render(Format::Json)).unwrap(),
            "[{\"event\":\"like\",\"count\":3},{\"event\":null,\"count\":1}]\n"
        );
        let table = String::from_utf8(render(Format::Table)).unwrap();
        assert!(
            table.contains("| like  | 3     |")
                && table.contains("| NULL  | 1     |")
                && table.ends_with("(2 rows)\n"),
            "{table}"
        );
    }

    #[test]
    fn parquet_round_trips() {
        let bytes = bytes::Bytes::from(render(Format::Parquet));
        let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(bytes)
            .unwrap()
            .build()
            .unwrap();
        let batches: Vec<RecordBatch> = reader.map(|b| b.unwrap()).collect();
        assert_eq!(batches, vec![batch().1]);
    }

    #[test]
    fn empty_results_keep_their_header() {
        let (schema, _) = batch();
        let mut out = Vec::new();
        write(Format::Csv, &schema, &[], &mut out).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), "event,count\n");
        let mut out = Vec::new();
        write(Format::Json, &schema, &[], &mut out).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), "[]\n");
    }
}
