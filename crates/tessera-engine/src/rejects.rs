//! The record of everything a scan rejected, so that nothing is dropped silently.
//!
//! Scans that skip malformed records (`on_error = skip`) add each one here; the session
//! reports the count and the first places after every statement.

use std::fmt;
use std::sync::Mutex;

/// At most this many rejected records are kept with details; all are counted.
pub const MAX_SAMPLES: usize = 100;

/// One rejected record.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Reject {
    /// The file (or object URL) it came from.
    pub file: String,
    /// 1-based line number in the (decompressed) file; 0 when the scan stopped before
    /// it could number the line (the byte offset is always exact).
    pub line: u64,
    /// Byte offset of the line's first byte in the (decompressed) file.
    pub offset: u64,
    /// What was wrong, with the offset inside the line.
    pub reason: String,
}

impl fmt::Display for Reject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            0 => write!(
                f,
                "{} (byte offset {}): {}",
                self.file, self.offset, self.reason
            ),
            line => write!(
                f,
                "{} line {line} (byte offset {}): {}",
                self.file, self.offset, self.reason
            ),
        }
    }
}

/// Rejected records since the last [`RejectLog::take`]: an exact count and the first
/// [`MAX_SAMPLES`] in file and line order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RejectSummary {
    /// How many records were rejected.
    pub count: u64,
    /// Details of up to [`MAX_SAMPLES`] of them.
    pub samples: Vec<Reject>,
}

impl fmt::Display for RejectSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let noun = if self.count == 1 { "line" } else { "lines" };
        write!(f, "skipped {} malformed {noun}", self.count)?;
        for r in &self.samples {
            write!(f, "\n  {r}")?;
        }
        let hidden = self.count - self.samples.len() as u64;
        if hidden > 0 {
            write!(f, "\n  ... and {hidden} more")?;
        }
        Ok(())
    }
}

/// A thread-safe, bounded log of rejected records, shared by all scans of a session.
#[derive(Debug, Default)]
pub struct RejectLog {
    inner: Mutex<RejectSummary>,
}

impl RejectLog {
    /// Records one rejected record.
    pub fn record(&self, reject: Reject) {
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        inner.count += 1;
        if inner.samples.len() < MAX_SAMPLES {
            inner.samples.push(reject);
        }
    }

    /// Returns and clears what was recorded.
    pub fn take(&self) -> RejectSummary {
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let mut summary = std::mem::take(&mut *inner);
        summary.samples.sort();
        summary
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reject(line: u64) -> Reject {
        Reject {
            file: "f.json".into(),
            line,
            offset: line * 10,
            reason: "expected ':'".into(),
        }
    }

    #[test]
    fn counts_everything_and_keeps_bounded_samples() {
        let log = RejectLog::default();
        for line in (1..=150).rev() {
            log.record(reject(line));
        }
        let summary = log.take();
        assert_eq!(summary.count, 150);
        assert_eq!(summary.samples.len(), MAX_SAMPLES);
        assert!(summary.samples.windows(2).all(|w| w[0] <= w[1]));
        assert!(summary.to_string().contains("... and 50 more"));
        assert_eq!(log.take().count, 0);
    }

    #[test]
    fn summary_names_file_line_and_offset() {
        let log = RejectLog::default();
        log.record(reject(3));
        let text = log.take().to_string();
        assert_eq!(
            text,
            "skipped 1 malformed line\n  f.json line 3 (byte offset 30): expected ':'"
        );
    }
}
