//! Parquet page checksums: the CRC-32 of each page's bytes, kept in the page header's
//! `crc` field, so that a flipped bit on disk or on the wire is an error instead of a
//! wrong answer.
//!
//! parquet 59's writer leaves that field unset (its reader verifies it when present,
//! with the `crc` feature), so [`add_page_checksums`] finishes a written file: each
//! page header gets the field, and the footer and page index are rewritten for the
//! offsets the added bytes move. [`verify_pages`] checks the pages of a byte range as
//! it arrives, so a reader can fetch it again before failing.
//!
//! Headers are Thrift compact-protocol structs; only the framing is parsed here (field
//! ids, types and lengths), enough to find a header's end, its `compressed_page_size`
//! and `crc`, and where the `crc` field belongs.

use std::io::Write;

use bytes::Bytes;
use parquet::errors::ParquetError;
use parquet::file::metadata::{
    ColumnChunkMetaData, PageIndexPolicy, ParquetMetaData, ParquetMetaDataOptions,
    ParquetMetaDataReader, ParquetMetaDataWriter,
};
use parquet::file::page_index::offset_index::OffsetIndexMetaData;
use parquet::file::writer::TrackedWrite;

/// Field id of `crc` in Parquet's `PageHeader`.
const CRC_FIELD: i16 = 4;
/// Field id of `compressed_page_size` in Parquet's `PageHeader`.
const COMPRESSED_SIZE_FIELD: i16 = 3;
/// Compact-protocol type ids.
const BOOL_TRUE: u8 = 1;
const BOOL_FALSE: u8 = 2;
const BYTE: u8 = 3;
const I16: u8 = 4;
const I32: u8 = 5;
const I64: u8 = 6;
const DOUBLE: u8 = 7;
const BINARY: u8 = 8;
const LIST: u8 = 9;
const SET: u8 = 10;
const MAP: u8 = 11;
const STRUCT: u8 = 12;
/// Deepest struct nesting accepted in a header (real ones nest 3 deep): a corrupt
/// header cannot recurse without bound.
const MAX_DEPTH: usize = 16;
/// Bytes of the magic number at both ends of a Parquet file.
const MAGIC: &[u8; 4] = b"PAR1";

/// A page header as far as checksums need it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageHeader {
    /// Bytes of the header itself.
    pub len: usize,
    /// Bytes of the page after its header (`compressed_page_size`).
    pub body_len: usize,
    /// The stored checksum of the page's bytes after the header, if any.
    pub crc: Option<u32>,
    /// Where the `crc` field belongs: the offset of the first field after it (or of
    /// the struct's end), the id of the field before it, and the short-form delta
    /// byte of the field after it, which the inserted field changes.
    insert: (usize, i16, Option<(u8, i16)>),
}

/// Parses the page header at the start of `bytes`; an error says why they do not start
/// with one.
pub fn parse_header(bytes: &[u8]) -> Result<PageHeader, String> {
    let mut reader = Reader { bytes, at: 0 };
    let (mut last, mut body_len, mut crc, mut insert) = (0i16, None, None, None);
    loop {
        let at = reader.at;
        let byte = reader.byte()?;
        if byte == 0 {
            insert.get_or_insert((at, last, None));
            break;
        }
        let (id, ty) = reader.field(byte, last)?;
        if id > CRC_FIELD && insert.is_none() {
            let short = (byte >> 4 != 0).then_some((byte, id));
            insert = Some((at, last, short));
        }
        match (id, ty) {
            (COMPRESSED_SIZE_FIELD, I32) => body_len = Some(reader.varint_i32()?),
            (CRC_FIELD, I32) => crc = Some(reader.varint_i32()? as u32),
            _ => reader.skip(ty, 0)?,
        }
        last = id;
    }
    let body_len = body_len
        .and_then(|n| usize::try_from(n).ok())
        .ok_or("a page header without a valid compressed_page_size")?;
    Ok(PageHeader {
        len: reader.at,
        body_len,
        crc,
        insert: insert.expect("set at the struct's end at the latest"),
    })
}

/// `header` (the bytes [`parse_header`] parsed as `parsed`) with the `crc` field set to
/// `crc`, appended to `out`.
fn write_with_crc(header: &[u8], parsed: &PageHeader, crc: u32, out: &mut Vec<u8>) {
    let (at, before, next) = parsed.insert;
    out.extend_from_slice(&header[..at]);
    match CRC_FIELD - before {
        delta @ 1..=15 => out.push(((delta as u8) << 4) | I32),
        _ => {
            out.push(I32);
            put_varint(out, zigzag(i64::from(CRC_FIELD)));
        }
    }
    put_varint(out, zigzag(i64::from(crc as i32)));
    let rest = match next {
        // The next field's delta was from `before`; now it is from the crc field.
        Some((byte, id)) => {
            out.push((((id - CRC_FIELD) as u8) << 4) | (byte & 0x0f));
            &header[at + 1..]
        }
        None => &header[at..],
    };
    out.extend_from_slice(rest);
}

/// One page moved by [`add_page_checksums`]: its offset before and after, and the bytes
/// its header grew by.
#[derive(Debug, Clone, Copy)]
struct Moved {
    old: u64,
    new: u64,
    added: i64,
}

/// Adds a CRC to every page of `file`, a whole Parquet file as parquet's writer wrote
/// it (column chunks back to back after the magic, no bloom filters, no encryption);
/// returns the new file. Pages that carry a CRC keep it.
pub fn add_page_checksums(file: Bytes) -> Result<Bytes, ParquetError> {
    // Encoding stats whole, not as the default mask: the footer is written anew from
    // this metadata, and readers choose dictionary reads by these stats.
    let options = ParquetMetaDataOptions::new().with_encoding_stats_as_mask(false);
    let metadata = ParquetMetaDataReader::new()
        .with_page_index_policy(PageIndexPolicy::Optional)
        .with_metadata_options(Some(options))
        .parse_and_finish(&file)?;
    let mut data = Vec::with_capacity(file.len() + file.len() / 64);
    data.extend_from_slice(MAGIC);
    let mut offset_index = metadata.offset_index().cloned();
    let mut row_groups = Vec::with_capacity(metadata.num_row_groups());
    // Chunks follow one another from the magic on; what follows the last is the page
    // index and the footer, which are written anew.
    let mut expected = MAGIC.len() as u64;
    for (g, group) in metadata.row_groups().iter().enumerate() {
        let group_start = data.len() as i64;
        let mut columns = Vec::with_capacity(group.num_columns());
        let mut group_added = 0;
        for (c, column) in group.columns().iter().enumerate() {
            let (start, len) = column.byte_range();
            if start != expected || column.bloom_filter_offset().is_some() {
                return Err(ParquetError::General(format!(
                    "cannot add page checksums: column chunk at byte {start} where {expected} was expected, or with a bloom filter"
                )));
            }
            expected = start + len;
            let moved = checksum_chunk(&file, start..expected, &mut data)?;
            let added: i64 = moved.iter().map(|m| m.added).sum();
            group_added += added;
            columns.push(moved_column(column, &moved, added)?);
            if let Some(index) = offset_index.as_mut().and_then(|i| i.get_mut(g)?.get_mut(c)) {
                *index = moved_index(index, &moved)?;
            }
        }
        row_groups.push(
            group
                .clone()
                .into_builder()
                .set_column_metadata(columns)
                .set_file_offset(group_start)
                .set_total_byte_size(group.total_byte_size() + group_added)
                .build()?,
        );
    }
    let metadata = metadata
        .into_builder()
        .set_row_groups(row_groups)
        .set_offset_index(offset_index)
        .build();
    finish(data, &metadata)
}

/// Appends the pages of the column chunk at `range` of `file` to `out` with checksums;
/// returns where each page moved.
fn checksum_chunk(
    file: &Bytes,
    range: std::ops::Range<u64>,
    out: &mut Vec<u8>,
) -> Result<Vec<Moved>, ParquetError> {
    let corrupt = |at: u64, why: String| {
        ParquetError::General(format!(
            "cannot add page checksums: page at byte {at}: {why}"
        ))
    };
    let chunk = usize::try_from(range.start)
        .ok()
        .zip(usize::try_from(range.end).ok())
        .and_then(|(start, end)| file.get(start..end))
        .ok_or_else(|| corrupt(range.start, "the column chunk is outside the file".into()))?;
    let mut moved = Vec::new();
    let mut at = 0;
    while at < chunk.len() {
        let old = range.start + at as u64;
        let parsed = parse_header(&chunk[at..]).map_err(|why| corrupt(old, why))?;
        let body_start = at + parsed.len;
        let body = chunk
            .get(body_start..body_start + parsed.body_len)
            .ok_or_else(|| corrupt(old, "the page runs past its column chunk".into()))?;
        let new = out.len() as u64;
        match parsed.crc {
            Some(_) => out.extend_from_slice(&chunk[at..body_start]),
            None => write_with_crc(&chunk[at..body_start], &parsed, crc32fast::hash(body), out),
        }
        let added = (out.len() as u64 - new) as i64 - parsed.len as i64;
        out.extend_from_slice(body);
        moved.push(Moved { old, new, added });
        at = body_start + parsed.body_len;
    }
    Ok(moved)
}

/// Where the page that started at `old` starts now.
fn moved_offset(moved: &[Moved], old: i64) -> Result<i64, ParquetError> {
    let at = moved.partition_point(|m| (m.old as i64) < old);
    match moved.get(at) {
        Some(m) if m.old as i64 == old => Ok(m.new as i64),
        _ => Err(ParquetError::General(format!(
            "cannot add page checksums: no page starts at byte {old}"
        ))),
    }
}

/// `column`'s metadata after its pages moved (`added` bytes in all). The page index
/// offsets are left to the footer writer, which writes the index anew.
fn moved_column(
    column: &ColumnChunkMetaData,
    moved: &[Moved],
    added: i64,
) -> Result<ColumnChunkMetaData, ParquetError> {
    let dictionary = column
        .dictionary_page_offset()
        .map(|old| moved_offset(moved, old))
        .transpose()?;
    column
        .clone()
        .into_builder()
        .set_data_page_offset(moved_offset(moved, column.data_page_offset())?)
        .set_dictionary_page_offset(dictionary)
        .set_total_compressed_size(column.compressed_size() + added)
        .set_total_uncompressed_size(column.uncompressed_size() + added)
        .set_offset_index_offset(None)
        .set_offset_index_length(None)
        .set_column_index_offset(None)
        .set_column_index_length(None)
        .build()
}

/// `index` (a column chunk's page locations) after its pages moved.
fn moved_index(
    index: &OffsetIndexMetaData,
    moved: &[Moved],
) -> Result<OffsetIndexMetaData, ParquetError> {
    let mut index = index.clone();
    for page in &mut index.page_locations {
        let at = moved.partition_point(|m| (m.old as i64) < page.offset);
        let added = moved.get(at).map_or(0, |m| m.added);
        page.offset = moved_offset(moved, page.offset)?;
        page.compressed_page_size += added as i32;
    }
    Ok(index)
}

/// `data` (magic and pages) followed by the page index and footer of `metadata`.
fn finish(data: Vec<u8>, metadata: &ParquetMetaData) -> Result<Bytes, ParquetError> {
    let mut out = Vec::with_capacity(data.len() + (64 << 10));
    {
        let mut tracked = TrackedWrite::new(&mut out);
        tracked.write_all(&data)?;
        ParquetMetaDataWriter::new_with_tracked(tracked, metadata).finish()?;
    }
    Ok(Bytes::from(out))
}

/// A page whose bytes do not match its checksum: where it starts in the bytes given
/// to [`verify_pages`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChecksumMismatch {
    /// Offset of the page's header in the bytes checked.
    pub page_at: usize,
}

/// Checks the checksums of the pages `bytes` holds, from its first byte (a page
/// header, as in a read of a column chunk or of pages the page index located) to the
/// last whole page. Bytes that do not parse as a page header end the check: the
/// Parquet decoder reports those (and verifies each page again as it decodes it).
pub fn verify_pages(bytes: &[u8]) -> Result<(), ChecksumMismatch> {
    let mut at = 0;
    while at < bytes.len() {
        let Ok(parsed) = parse_header(&bytes[at..]) else {
            return Ok(());
        };
        let body_start = at + parsed.len;
        let Some(body) = bytes.get(body_start..body_start.saturating_add(parsed.body_len)) else {
            return Ok(());
        };
        if parsed.crc.is_some_and(|crc| crc != crc32fast::hash(body)) {
            return Err(ChecksumMismatch { page_at: at });
        }
        at = body_start + parsed.body_len;
    }
    Ok(())
}

/// Zigzag encoding of the compact protocol's signed integers.
fn zigzag(n: i64) -> u64 {
    ((n << 1) ^ (n >> 63)) as u64
}

/// Appends `n` as an unsigned LEB128 varint.
fn put_varint(out: &mut Vec<u8>, mut n: u64) {
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

/// A cursor over compact-protocol bytes that fails, never panics, at their end.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn byte(&mut self) -> Result<u8, String> {
        let byte = *self.bytes.get(self.at).ok_or("the header ends early")?;
        self.at += 1;
        Ok(byte)
    }

    fn varint(&mut self) -> Result<u64, String> {
        let mut n = 0u64;
        for shift in (0..70).step_by(7) {
            let byte = self.byte()?;
            n |= u64::from(byte & 0x7f) << shift.min(63);
            if byte & 0x80 == 0 {
                return Ok(n);
            }
        }
        Err("a varint longer than 10 bytes".into())
    }

    fn varint_i32(&mut self) -> Result<i32, String> {
        let n = self.varint()?;
        let value = ((n >> 1) as i64) ^ -((n & 1) as i64);
        i32::try_from(value).map_err(|_| format!("{value} does not fit an i32"))
    }

    /// The id and type of the field whose header starts with `byte`.
    fn field(&mut self, byte: u8, last: i16) -> Result<(i16, u8), String> {
        let ty = byte & 0x0f;
        let id = match byte >> 4 {
            0 => {
                let n = self.varint()?;
                i16::try_from(((n >> 1) as i64) ^ -((n & 1) as i64))
                    .map_err(|_| "a field id beyond i16".to_string())?
            }
            delta => last
                .checked_add(i16::from(delta))
                .ok_or("a field id beyond i16")?,
        };
        Ok((id, ty))
    }

    fn advance(&mut self, n: u64) -> Result<(), String> {
        let end = usize::try_from(n)
            .ok()
            .and_then(|n| self.at.checked_add(n))
            .filter(|&end| end <= self.bytes.len())
            .ok_or("a value runs past the header's bytes")?;
        self.at = end;
        Ok(())
    }

    /// Skips one value of type `ty`, `depth` structs deep.
    fn skip(&mut self, ty: u8, depth: usize) -> Result<(), String> {
        match ty {
            BOOL_TRUE | BOOL_FALSE => Ok(()),
            BYTE => self.advance(1),
            I16 | I32 | I64 => self.varint().map(|_| ()),
            DOUBLE => self.advance(8),
            BINARY => {
                let n = self.varint()?;
                self.advance(n)
            }
            LIST | SET => {
                let header = self.byte()?;
                let (short, element) = (header >> 4, header & 0x0f);
                let n = match short {
                    15 => self.varint()?,
                    n => u64::from(n),
                };
                self.skip_many(n, &[element], depth)
            }
            MAP => {
                let n = self.varint()?;
                if n == 0 {
                    return Ok(());
                }
                let types = self.byte()?;
                self.skip_many(n, &[types >> 4, types & 0x0f], depth)
            }
            STRUCT => self.skip_struct(depth + 1),
            other => Err(format!("unknown compact type {other}")),
        }
    }

    /// Skips `n` elements, each a value of every type in `types`; every element takes
    /// at least a byte, so `n` beyond the bytes left is an error before any work.
    fn skip_many(&mut self, n: u64, types: &[u8], depth: usize) -> Result<(), String> {
        if n > (self.bytes.len() - self.at) as u64 {
            return Err(format!("{n} elements in fewer bytes"));
        }
        for _ in 0..n {
            for &ty in types {
                match ty {
                    // Booleans in collections take a byte each.
                    BOOL_TRUE | BOOL_FALSE => self.advance(1)?,
                    _ => self.skip(ty, depth)?,
                }
            }
        }
        Ok(())
    }

    fn skip_struct(&mut self, depth: usize) -> Result<(), String> {
        if depth > MAX_DEPTH {
            return Err("structs nested too deep".into());
        }
        let mut last = 0;
        loop {
            let byte = self.byte()?;
            if byte == 0 {
                return Ok(());
            }
            let (id, ty) = self.field(byte, last)?;
            self.skip(ty, depth)?;
            last = id;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{ArrayRef, Int64Array, RecordBatch, StringArray};
    use arrow::datatypes::{DataType, Field, Schema};
    use parquet::arrow::ArrowWriter;
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    use parquet::basic::Compression;
    use parquet::file::properties::{EnabledStatistics, WriterProperties, WriterVersion};

    use super::*;

    /// A file of `rows` generated rows (integers, repeating strings, nulls) in small
    /// pages and row groups, with dictionary pages and the page index.
    fn written(rows: usize, version: WriterVersion) -> (RecordBatch, Bytes) {
        let ids: ArrayRef = Arc::new(Int64Array::from_iter(
            (0..rows as i64).map(|i| (i % 7 != 3).then_some(i * 7919 % 100_003)),
        ));
        let names: ArrayRef = Arc::new(StringArray::from_iter(
            (0..rows).map(|i| (i % 5 != 0).then(|| format!("name{}", i % 37))),
        ));
        let schema = Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int64, true),
            Field::new("name", DataType::Utf8, true),
        ]));
        let batch = RecordBatch::try_new(Arc::clone(&schema), vec![ids, names]).unwrap();
        let properties = WriterProperties::builder()
            .set_writer_version(version)
            .set_compression(Compression::LZ4_RAW)
            .set_statistics_enabled(EnabledStatistics::Page)
            .set_data_page_row_count_limit(100)
            .set_write_batch_size(50)
            .set_max_row_group_row_count(Some(700))
            .build();
        let mut out = Vec::new();
        let mut writer = ArrowWriter::try_new(&mut out, schema, Some(properties)).unwrap();
        writer.write(&batch).unwrap();
        writer.close().unwrap();
        (batch, Bytes::from(out))
    }

    fn read(file: &Bytes) -> Result<Vec<RecordBatch>, String> {
        let reader = ParquetRecordBatchReaderBuilder::try_new(file.clone())
            .map_err(|e| e.to_string())?
            .build()
            .map_err(|e| e.to_string())?;
        reader
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| e.to_string())
    }

    /// Every page of every column chunk of `file`: (header offset, parsed header).
    fn pages(file: &Bytes) -> Vec<(usize, PageHeader)> {
        let metadata = ParquetMetaDataReader::new().parse_and_finish(file).unwrap();
        let mut out = Vec::new();
        for column in metadata.row_groups().iter().flat_map(|g| g.columns()) {
            let (start, len) = column.byte_range();
            let mut at = start as usize;
            while at < (start + len) as usize {
                let header = parse_header(&file[at..]).unwrap();
                let next = at + header.len + header.body_len;
                out.push((at, header));
                at = next;
            }
        }
        out
    }

    #[test]
    fn every_page_gets_a_checksum_and_reads_back_the_same() {
        for version in [WriterVersion::PARQUET_1_0, WriterVersion::PARQUET_2_0] {
            let (batch, plain) = written(3000, version);
            assert!(pages(&plain).iter().all(|(_, h)| h.crc.is_none()));
            let checked = add_page_checksums(plain.clone()).unwrap();
            let pages = pages(&checked);
            assert!(pages.len() > 10, "small pages: {}", pages.len());
            for (at, header) in &pages {
                let body = &checked[at + header.len..at + header.len + header.body_len];
                assert_eq!(header.crc, Some(crc32fast::hash(body)), "page at {at}");
            }
            let back = arrow::compute::concat_batches(&batch.schema(), &read(&checked).unwrap());
            assert_eq!(back.unwrap(), batch);
            // The page index moved with the pages: a reader that uses it agrees.
            let metadata = ParquetMetaDataReader::new()
                .with_page_index_policy(PageIndexPolicy::Required)
                .parse_and_finish(&checked)
                .unwrap();
            let starts: Vec<usize> = pages.iter().map(|(at, _)| *at).collect();
            for location in metadata.offset_index().unwrap().iter().flatten() {
                for page in location.page_locations() {
                    assert!(starts.contains(&(page.offset as usize)), "{page:?}");
                }
            }
            // Everything but offsets and sizes is as written: statistics, encodings.
            let before = ParquetMetaDataReader::new()
                .parse_and_finish(&plain)
                .unwrap();
            let columns = |m: &ParquetMetaData| -> Vec<_> {
                m.row_groups()
                    .iter()
                    .flat_map(|g| g.columns())
                    .map(|c| {
                        (
                            c.statistics().cloned(),
                            c.page_encoding_stats_mask().copied(),
                            c.num_values(),
                        )
                    })
                    .collect()
            };
            assert_eq!(columns(&metadata), columns(&before));
            // Adding checksums again changes nothing.
            assert_eq!(add_page_checksums(checked.clone()).unwrap(), checked);
        }
    }

    #[test]
    fn a_flipped_bit_in_any_page_is_an_error_not_a_wrong_answer() {
        let (_, plain) = written(2000, WriterVersion::PARQUET_1_0);
        let checked = add_page_checksums(plain).unwrap();
        for (at, header) in pages(&checked) {
            let mut corrupt = checked.to_vec();
            corrupt[at + header.len + header.body_len / 2] ^= 0x10;
            let corrupt = Bytes::from(corrupt);
            let err = read(&corrupt).expect_err("a corrupt page fails the read");
            assert!(err.contains("CRC"), "page at {at}: {err}");
            let chunk = &corrupt[at..at + header.len + header.body_len];
            assert_eq!(verify_pages(chunk), Err(ChecksumMismatch { page_at: 0 }));
        }
    }

    #[test]
    fn headers_that_are_not_headers_are_errors() {
        let (_, plain) = written(500, WriterVersion::PARQUET_1_0);
        let (at, header) = pages(&plain)[0].clone();
        let bytes = &plain[at..at + header.len];
        for cut in 0..bytes.len() {
            assert!(parse_header(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        assert!(
            parse_header(&[0x1c; 64]).is_err(),
            "structs nested without end"
        );
        assert!(parse_header(&[0x19, 0xf8, 0xff, 0xff, 0xff, 0x0f]).is_err());
    }
}
