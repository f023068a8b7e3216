//! S3 Select (`SelectObjectContent`): the store filters and projects an object with a
//! SQL expression and sends back only the result, as PushdownDB ("PushdownDB: Accelerating
//! a DBMS using S3 Computation") used it for filters, projections and aggregates.
//!
//! The request is a signed `POST ?select&select-type=2` with an XML body; the answer is
//! an event stream ([`event_stream`]) of `Records` payloads, a `Stats` event and an `End`
//! event. An answer without its `End` event is incomplete and is an error: a cut
//! connection must never look like a short result.

pub mod event_stream;

use bytes::Bytes;
use serde::Deserialize;

use crate::s3::{S3Client, S3Error};
use event_stream::Message;

/// The format of the object S3 Select reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputFormat {
    /// One JSON document per line.
    JsonLines,
    /// CSV, its first line as `header` says.
    Csv {
        /// What the first line is.
        header: CsvHeader,
    },
    /// Parquet (MinIO serves it with `MINIO_API_SELECT_PARQUET=on`).
    Parquet,
}

/// What the first line of a CSV object is to S3 Select.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CsvHeader {
    /// A header naming the columns (`s."name"`).
    Use,
    /// A header, skipped: columns are named by position (`s._1`), as a reader that
    /// takes a table's schema from another file reads them.
    Ignore,
    /// A record like the others.
    None,
}

/// The compression of the object S3 Select reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum InputCompression {
    /// Stored as is.
    #[default]
    None,
    /// Gzip.
    Gzip,
    /// Bzip2.
    Bzip2,
}

/// The format of the records S3 Select returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputFormat {
    /// One JSON object per line.
    JsonLines,
    /// CSV without a header, `,`-separated, `\n`-terminated.
    Csv,
}

/// One `SelectObjectContent` call.
#[derive(Debug, Clone)]
pub struct SelectRequest<'a> {
    /// The S3 Select SQL, over `s3object s`.
    pub expression: &'a str,
    /// How to read the object.
    pub input: InputFormat,
    /// The object's compression.
    pub compression: InputCompression,
    /// How to write the records.
    pub output: OutputFormat,
}

/// What S3 Select reports it read and returned.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct SelectStats {
    /// Bytes of the object read (compressed).
    pub bytes_scanned: u64,
    /// Bytes the engine processed (uncompressed).
    pub bytes_processed: u64,
    /// Bytes of records returned.
    pub bytes_returned: u64,
}

/// A complete answer: the records' bytes, in order, and the server's statistics.
#[derive(Debug, Clone, Default)]
pub struct SelectAnswer {
    /// The `Records` payloads; records may span two payloads.
    pub records: Vec<Bytes>,
    /// The `Stats` event, when the server sent one.
    pub stats: Option<SelectStats>,
}

impl SelectRequest<'_> {
    /// The request's XML body.
    pub fn body(&self) -> String {
        let compression = match self.compression {
            InputCompression::None => "NONE",
            InputCompression::Gzip => "GZIP",
            InputCompression::Bzip2 => "BZIP2",
        };
        let input = match self.input {
            InputFormat::JsonLines => "<JSON><Type>LINES</Type></JSON>".to_string(),
            InputFormat::Csv { header } => format!(
                "<CSV><FileHeaderInfo>{}</FileHeaderInfo></CSV>",
                match header {
                    CsvHeader::Use => "USE",
                    CsvHeader::Ignore => "IGNORE",
                    CsvHeader::None => "NONE",
                }
            ),
            InputFormat::Parquet => "<Parquet></Parquet>".to_string(),
        };
        let output = match self.output {
            OutputFormat::JsonLines => "<JSON><RecordDelimiter>\n</RecordDelimiter></JSON>",
            OutputFormat::Csv => "<CSV><RecordDelimiter>\n</RecordDelimiter></CSV>",
        };
        format!(
            "<SelectObjectContentRequest><Expression>{}</Expression>\
             <ExpressionType>SQL</ExpressionType>\
             <InputSerialization><CompressionType>{compression}</CompressionType>{input}\
             </InputSerialization><OutputSerialization>{output}</OutputSerialization>\
             <RequestProgress><Enabled>false</Enabled></RequestProgress>\
             </SelectObjectContentRequest>",
            crate::s3::xml_escape(self.expression)
        )
    }
}

impl S3Client {
    /// Runs `request` over the object `key`; the whole answer, or an error when the
    /// server refuses the expression, reports an error event, or the stream is cut or
    /// corrupt.
    pub async fn select(
        &self,
        key: &str,
        request: &SelectRequest<'_>,
    ) -> Result<SelectAnswer, S3Error> {
        let body = self
            .select_response(key, Bytes::from(request.body()))
            .await?;
        let messages = event_stream::decode(&body).map_err(|e| S3Error::Response(e.to_string()))?;
        answer(messages)
    }
}

/// The answer the messages of a stream make, checking that it ends with `End`.
fn answer(messages: Vec<Message>) -> Result<SelectAnswer, S3Error> {
    let mut answer = SelectAnswer::default();
    let mut ended = false;
    for message in messages {
        if ended {
            return Err(S3Error::Response("S3 Select sent events after End".into()));
        }
        if message.header(":message-type") == Some("error") {
            return Err(S3Error::Select {
                code: message.header(":error-code").unwrap_or("unknown").into(),
                message: message.header(":error-message").unwrap_or("").into(),
            });
        }
        match message.header(":event-type") {
            Some("Records") => answer.records.push(message.payload),
            Some("Stats") => answer.stats = Some(stats(&message.payload)?),
            Some("End") => ended = true,
            // Progress and Cont (keep-alive) carry nothing the answer needs.
            _ => {}
        }
    }
    if !ended {
        return Err(S3Error::Response(
            "S3 Select answer ended without its End event (incomplete)".into(),
        ));
    }
    Ok(answer)
}

/// The `<Stats>` document of a `Stats` event.
fn stats(payload: &[u8]) -> Result<SelectStats, S3Error> {
    crate::s3::parse_xml(payload)
}

#[cfg(test)]
mod tests {
    use super::event_stream::encode;
    use super::*;

    fn event(kind: &str, payload: &[u8]) -> Vec<u8> {
        encode(
            &[(":message-type", "event"), (":event-type", kind)],
            payload,
        )
    }

    fn decoded(parts: &[Vec<u8>]) -> Result<SelectAnswer, S3Error> {
        let body = Bytes::from(parts.concat());
        answer(event_stream::decode(&body).unwrap())
    }

    #[test]
    fn an_answer_needs_its_end_event() {
        let stats = b"<Stats><BytesScanned>10</BytesScanned><BytesProcessed>10</BytesProcessed>\
                      <BytesReturned>4</BytesReturned></Stats>";
        let parts = [
            event("Records", b"{}\n"),
            event("Stats", stats),
            event("End", b""),
        ];
        let whole = decoded(&parts).unwrap();
        assert_eq!(whole.records.concat(), b"{}\n");
        assert_eq!(whole.stats.unwrap().bytes_returned, 4);
        let cut = decoded(&parts[..2]).unwrap_err();
        assert!(cut.to_string().contains("without its End event"), "{cut}");
    }

    #[test]
    fn an_error_event_is_an_error() {
        let error = encode(
            &[
                (":message-type", "error"),
                (":error-code", "InternalError"),
                (":error-message", "boom"),
            ],
            b"",
        );
        let err = decoded(&[event("Records", b"{}\n"), error]).unwrap_err();
        assert!(matches!(err, S3Error::Select { ref code, .. } if code == "InternalError"));
    }

    #[test]
    fn the_expression_is_escaped() {
        let request = SelectRequest {
            expression: "SELECT * FROM s3object s WHERE s.a < 3 AND s.b = '<x>'",
            input: InputFormat::Csv {
                header: CsvHeader::Use,
            },
            compression: InputCompression::Gzip,
            output: OutputFormat::Csv,
        };
        let body = request.body();
        assert!(body.contains("s.a &lt; 3 AND s.b = '&lt;x&gt;'"), "{body}");
        assert!(body.contains("<CompressionType>GZIP</CompressionType>"));
        assert!(body.contains("<FileHeaderInfo>USE</FileHeaderInfo>"));
    }
}
