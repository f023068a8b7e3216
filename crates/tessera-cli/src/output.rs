//! Writing result batches as an aligned table, CSV, JSON, NDJSON, a Markdown table,
//! `column = value` lines or Parquet.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{IsTerminal, Write};
use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, bail};
use arrow::array::{ArrayRef, RecordBatch, StringArray};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use arrow::util::display::{ArrayFormatter, FormatOptions};
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
    /// A Markdown (GitHub) table; cells are not padded, so rows stream.
    Markdown,
    /// One `column = value` line per column, a blank line between rows.
    Line,
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

/// Rows the terminal table shows in full; a longer result shows its first and last
/// `PREVIEW_ROWS / 2` rows around an elision row, as DuckDB's shell does.
pub const PREVIEW_ROWS: usize = 40;

/// Bytes a Parquet row group may buffer before it is written out.
const PARQUET_BUFFER_BYTES_MAX: usize = 64 * 1024 * 1024;

/// Writes one result batch by batch as it arrives, so memory stays bounded whatever the
/// result's size: text formats and Parquet are written through, the terminal table
/// keeps only a bounded head and tail.
pub struct ResultWriter<'a> {
    kind: Kind<'a>,
}

type Sink<'a> = &'a mut (dyn Write + Send);

enum Kind<'a> {
    Table(Preview, Sink<'a>),
    Csv(arrow::csv::Writer<Sink<'a>>, SchemaRef, bool),
    Json(arrow::json::Writer<Sink<'a>, arrow::json::writer::JsonArray>),
    Ndjson(arrow::json::Writer<Sink<'a>, arrow::json::writer::LineDelimited>),
    Parquet(parquet::arrow::ArrowWriter<Sink<'a>>),
    Markdown(Sink<'a>),
    Line(Sink<'a>, SchemaRef, usize),
}

impl<'a> ResultWriter<'a> {
    /// A writer of rows with `schema` to `out` in `format`.
    pub fn new(format: Format, schema: &SchemaRef, out: Sink<'a>) -> anyhow::Result<Self> {
        let kind = match format {
            Format::Table => Kind::Table(Preview::new(schema.clone()), out),
            Format::Csv => {
                let writer = arrow::csv::WriterBuilder::new()
                    .with_header(true)
                    .build(out);
                Kind::Csv(writer, schema.clone(), false)
            }
            // NULLs are written as null, not dropped, so every row has every column.
            Format::Json => Kind::Json(
                arrow::json::WriterBuilder::new()
                    .with_explicit_nulls(true)
                    .build(out),
            ),
            Format::Ndjson => Kind::Ndjson(
                arrow::json::WriterBuilder::new()
                    .with_explicit_nulls(true)
                    .build(out),
            ),
            Format::Markdown => {
                markdown_header(out, schema)?;
                Kind::Markdown(out)
            }
            Format::Line => Kind::Line(out, schema.clone(), 0),
            Format::Parquet => {
                let props = parquet::file::properties::WriterProperties::builder()
                    .set_compression(parquet::basic::Compression::ZSTD(Default::default()))
                    .build();
                Kind::Parquet(parquet::arrow::ArrowWriter::try_new(
                    out,
                    schema.clone(),
                    Some(props),
                )?)
            }
        };
        Ok(Self { kind })
    }

    /// Writes (or, for the terminal table, notes) one batch.
    pub fn write(&mut self, batch: &RecordBatch) -> anyhow::Result<()> {
        match &mut self.kind {
            Kind::Table(preview, _) => preview.push(batch)?,
            Kind::Csv(writer, _, written) => {
                writer.write(batch)?;
                *written = true;
            }
            Kind::Json(writer) => writer.write(batch)?,
            Kind::Ndjson(writer) => writer.write(batch)?,
            Kind::Parquet(writer) => {
                writer.write(batch)?;
                if writer.in_progress_size() > PARQUET_BUFFER_BYTES_MAX {
                    writer.flush()?;
                }
            }
            Kind::Markdown(out) => {
                for_each_row(batch, |cells| {
                    let cells: Vec<String> = cells.iter().map(|c| markdown_cell(c)).collect();
                    writeln!(out, "| {} |", cells.join(" | "))
                })?;
            }
            Kind::Line(out, schema, rows) => {
                let width = schema.fields().iter().map(|f| f.name().chars().count());
                let width = width.max().unwrap_or(0);
                for_each_row(batch, |cells| {
                    if *rows > 0 {
                        writeln!(out)?;
                    }
                    *rows += 1;
                    for (field, cell) in schema.fields().iter().zip(cells) {
                        writeln!(out, "{:>width$} = {cell}", field.name())?;
                    }
                    Ok(())
                })?;
            }
        }
        Ok(())
    }

    /// Ends the result: the table is printed, arrays and files are closed.
    pub fn finish(self) -> anyhow::Result<()> {
        match self.kind {
            Kind::Table(preview, out) => {
                preview.render(out)?;
                out.flush()?;
            }
            Kind::Csv(mut writer, schema, written) => {
                if !written {
                    // The header alone, so an empty result still names its columns.
                    writer.write(&RecordBatch::new_empty(schema))?;
                }
                writer.into_inner().flush()?;
            }
            Kind::Json(mut writer) => {
                writer.finish()?;
                let out = writer.into_inner();
                writeln!(out)?;
                out.flush()?;
            }
            Kind::Ndjson(mut writer) => {
                writer.finish()?;
                writer.into_inner().flush()?;
            }
            Kind::Parquet(writer) => writer.into_inner()?.flush()?,
            Kind::Markdown(out) | Kind::Line(out, _, _) => out.flush()?,
        }
        Ok(())
    }
}

/// Writes `batches` (with `schema`, for empty results) to `out` in `format`.
pub fn write(
    format: Format,
    schema: &SchemaRef,
    batches: &[RecordBatch],
    out: &mut (dyn Write + Send),
) -> anyhow::Result<()> {
    let mut writer = ResultWriter::new(format, schema, out)?;
    for batch in batches {
        writer.write(batch)?;
    }
    writer.finish()
}

/// How cells show NULL: as NULL, as DuckDB's shell does, not as an empty cell.
fn cell_options() -> FormatOptions<'static> {
    FormatOptions::default().with_null("NULL")
}

/// The cells of every row of `batches` as text (NULL as `NULL`); for small results.
pub fn text_rows(batches: &[RecordBatch]) -> anyhow::Result<Vec<Vec<String>>> {
    let mut rows = Vec::new();
    for batch in batches {
        for_each_row(batch, |cells| {
            rows.push(cells.to_vec());
            Ok(())
        })?;
    }
    Ok(rows)
}

/// A formatter of each column of `batch`.
fn formatters<'a>(
    batch: &'a RecordBatch,
    options: &'a FormatOptions<'a>,
) -> Result<Vec<ArrayFormatter<'a>>, arrow::error::ArrowError> {
    let columns = batch.columns().iter();
    columns
        .map(|c| ArrayFormatter::try_new(c.as_ref(), options))
        .collect()
}

/// Calls `f` with the cells of each row of `batch`, formatted as text.
fn for_each_row(
    batch: &RecordBatch,
    mut f: impl FnMut(&[String]) -> std::io::Result<()>,
) -> anyhow::Result<()> {
    let options = cell_options();
    let formatters = formatters(batch, &options)?;
    let mut cells = Vec::with_capacity(formatters.len());
    for row in 0..batch.num_rows() {
        cells.clear();
        cells.extend(formatters.iter().map(|f| f.value(row).to_string()));
        f(&cells)?;
    }
    Ok(())
}

/// The header and alignment rows of a Markdown table; numbers are right-aligned.
fn markdown_header(out: &mut (dyn Write + Send), schema: &SchemaRef) -> anyhow::Result<()> {
    let names: Vec<String> = schema
        .fields()
        .iter()
        .map(|f| markdown_cell(f.name()))
        .collect();
    let rules: Vec<&str> = schema
        .fields()
        .iter()
        .map(|f| match f.data_type().is_numeric() {
            true => "---:",
            false => "---",
        })
        .collect();
    writeln!(out, "| {} |\n|{}|", names.join(" | "), rules.join("|"))?;
    Ok(())
}

/// A cell's text in a Markdown table: a `|` would end the cell and a line break the row.
fn markdown_cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', "<br>")
}

/// The rows a terminal table shows: the first `PREVIEW_ROWS` rows and the last
/// `PREVIEW_ROWS / 2`, formatted as they arrive, and the total count.
struct Preview {
    schema: SchemaRef,
    head: Vec<Vec<String>>,
    tail: VecDeque<Vec<String>>,
    rows: usize,
}

impl Preview {
    fn new(schema: SchemaRef) -> Self {
        Self {
            schema,
            head: Vec::new(),
            tail: VecDeque::new(),
            rows: 0,
        }
    }

    fn push(&mut self, batch: &RecordBatch) -> anyhow::Result<()> {
        let n = batch.num_rows();
        let head_rows = n.min(PREVIEW_ROWS - self.head.len());
        let tail_start = n.saturating_sub(PREVIEW_ROWS / 2);
        if head_rows > 0 || tail_start < n {
            let options = cell_options();
            let formatters = formatters(batch, &options)?;
            let row = |i: usize| formatters.iter().map(|f| f.value(i).to_string()).collect();
            self.head.extend((0..head_rows).map(row));
            for i in tail_start..n {
                if self.tail.len() == PREVIEW_ROWS / 2 {
                    self.tail.pop_front();
                }
                self.tail.push_back(row(i));
            }
        }
        self.rows += n;
        Ok(())
    }

    fn render(self, out: &mut (dyn Write + Send)) -> anyhow::Result<()> {
        if self.rows == 0 {
            let names: Vec<&str> = self
                .schema
                .fields()
                .iter()
                .map(|f| f.name().as_str())
                .collect();
            writeln!(out, "{}\n(0 rows)", names.join(" | "))?;
            return Ok(());
        }
        let elided = self.rows > PREVIEW_ROWS;
        let mut shown = self.head;
        if elided {
            shown.truncate(PREVIEW_ROWS / 2);
            shown.push(vec!["…".to_string(); self.schema.fields().len()]);
            shown.extend(self.tail);
        }
        // The cells are already text: a table of strings prints them as they are.
        let fields: Vec<Field> = self
            .schema
            .fields()
            .iter()
            .map(|f| Field::new(f.name(), DataType::Utf8, false))
            .collect();
        let columns: Vec<ArrayRef> = (0..fields.len())
            .map(|c| Arc::new(StringArray::from_iter_values(shown.iter().map(|r| &r[c]))) as _)
            .collect();
        let batch = RecordBatch::try_new(Arc::new(Schema::new(fields)), columns)?;
        let table = arrow::util::pretty::pretty_format_batches(&[batch])?;
        writeln!(out, "{table}")?;
        let rows = self.rows;
        match elided {
            true => writeln!(out, "({rows} rows, {PREVIEW_ROWS} shown)")?,
            false => writeln!(out, "({rows} row{})", if rows == 1 { "" } else { "s" })?,
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::Int64Array;

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
        assert_eq!(
            String::from_utf8(render(Format::Markdown)).unwrap(),
            "| event | count |\n|---|---:|\n| like | 3 |\n| NULL | 1 |\n"
        );
        assert_eq!(
            String::from_utf8(render(Format::Line)).unwrap(),
            "event = like\ncount = 3\n\nevent = NULL\ncount = 1\n"
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
        let mut out = Vec::new();
        write(Format::Markdown, &schema, &[], &mut out).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "| event | count |\n|---|---:|\n"
        );
    }

    #[test]
    fn markdown_cells_escape_bars_and_line_breaks() {
        assert_eq!(markdown_cell("a|b\nc"), "a\\|b<br>c");
    }

    #[test]
    fn line_mode_aligns_names_across_batches() {
        let schema = Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int64, false),
            Field::new("name", DataType::Utf8, false),
        ]));
        let batch = |id: i64, name: &str| {
            let columns: Vec<ArrayRef> = vec![
                Arc::new(Int64Array::from(vec![id])),
                Arc::new(StringArray::from(vec![name])),
            ];
            RecordBatch::try_new(schema.clone(), columns).unwrap()
        };
        let mut out = Vec::new();
        let batches = [batch(1, "a"), batch(2, "b")];
        write(Format::Line, &schema, &batches, &mut out).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "  id = 1\nname = a\n\n  id = 2\nname = b\n"
        );
    }
}
