//! The record of everything a scan rejected, so that nothing is dropped silently.
//!
//! Scans that skip malformed records (`on_error = skip`) add each one here; the session
//! reports the count and the first places after every statement.

use std::fmt;
use std::io::Write;
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

/// At most this many rejected records are kept with details; all are counted.
pub const MAX_SAMPLES: usize = 100;

/// One rejected record.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
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

/// Where every rejected record goes in full (an ingest's reject file): one JSON object
/// per line with `file`, `line`, `offset`, `reason` and the rejected `text`.
pub type RejectSpill = Box<dyn Write + Send>;

/// A thread-safe, bounded log of rejected records, shared by all scans of a session.
#[derive(Default)]
pub struct RejectLog {
    inner: Mutex<RejectSummary>,
    spill: Mutex<Option<SpillState>>,
}

struct SpillState {
    out: RejectSpill,
    /// The first write error; later records are not written, and `finish_spill` reports
    /// it, so a broken reject file fails the statement instead of losing lines.
    error: Option<std::io::Error>,
}

impl fmt::Debug for RejectLog {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RejectLog").finish_non_exhaustive()
    }
}

impl RejectLog {
    /// Records one rejected record; `text` is the rejected line, kept only by a spill.
    pub fn record(&self, reject: Reject, text: &[u8]) {
        if let Some(spill) = self
            .spill
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_mut()
            .filter(|s| s.error.is_none())
        {
            let line = serde_json::json!({
                "file": reject.file,
                "line": reject.line,
                "offset": reject.offset,
                "reason": reject.reason,
                "text": String::from_utf8_lossy(text),
            });
            if let Err(e) = writeln!(spill.out, "{line}") {
                spill.error = Some(e);
            }
        }
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        inner.count += 1;
        if inner.samples.len() < MAX_SAMPLES {
            inner.samples.push(reject);
        }
    }

    /// Sends every record from now on, in full, to `out` as well.
    pub fn start_spill(&self, out: RejectSpill) {
        *self.spill.lock().unwrap_or_else(|e| e.into_inner()) =
            Some(SpillState { out, error: None });
    }

    /// Whether records go to a spill too (see [`RejectLog::start_spill`]).
    pub fn is_spilling(&self) -> bool {
        self.spill
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_some()
    }

    /// Appends `lines`, records that another log spilled in full (a cluster task's), to
    /// the spill if there is one; that log counted them. Nothing else may record while
    /// they are appended, or its lines could land between two of theirs.
    pub fn spill_raw(&self, lines: &[u8]) -> std::io::Result<()> {
        let mut spill = self.spill.lock().unwrap_or_else(|e| e.into_inner());
        match spill.as_mut() {
            None => Ok(()),
            Some(SpillState { error: Some(e), .. }) => {
                Err(std::io::Error::new(e.kind(), e.to_string()))
            }
            Some(state) => state.out.write_all(lines),
        }
    }

    /// Stops spilling and flushes; the first write error, if any, is returned.
    pub fn finish_spill(&self) -> std::io::Result<()> {
        let state = self.spill.lock().unwrap_or_else(|e| e.into_inner()).take();
        match state {
            None => Ok(()),
            Some(SpillState { error: Some(e), .. }) => Err(e),
            Some(SpillState { mut out, .. }) => out.flush(),
        }
    }

    /// Adds what another log recorded (a cluster task's, on an executor): the counts add
    /// up, and of both sets of samples the first [`MAX_SAMPLES`] in file and line order
    /// are kept.
    pub fn absorb(&self, other: RejectSummary) {
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        inner.count += other.count;
        inner.samples.extend(other.samples);
        if inner.samples.len() > MAX_SAMPLES {
            inner.samples.sort();
            inner.samples.truncate(MAX_SAMPLES);
        }
        debug_assert!(inner.samples.len() as u64 <= inner.count);
    }

    /// Returns and clears what was recorded.
    pub fn take(&self) -> RejectSummary {
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let mut summary = std::mem::take(&mut *inner);
        summary.samples.sort();
        summary
    }

    /// What was recorded so far, left in place.
    pub fn summary(&self) -> RejectSummary {
        let mut summary = self.inner.lock().unwrap_or_else(|e| e.into_inner()).clone();
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
            log.record(reject(line), b"{");
        }
        let summary = log.take();
        assert_eq!(summary.count, 150);
        assert_eq!(summary.samples.len(), MAX_SAMPLES);
        assert!(summary.samples.windows(2).all(|w| w[0] <= w[1]));
        assert!(summary.to_string().contains("... and 50 more"));
        assert_eq!(log.take().count, 0);
    }

    #[derive(Clone, Default)]
    struct Shared(std::sync::Arc<Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn spill_keeps_every_line_in_full() {
        let log = RejectLog::default();
        let out = Shared::default();
        log.start_spill(Box::new(out.clone()));
        for line in 1..=150 {
            log.record(reject(line), format!("{{\"n\":{line}").as_bytes());
        }
        log.finish_spill().unwrap();
        log.record(reject(151), b"not spilled");
        let text = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 150);
        assert_eq!(lines[149]["text"], "{\"n\":150");
        assert_eq!(lines[0]["line"], 1);
        assert_eq!(lines[0]["reason"], "expected ':'");
    }

    #[test]
    fn absorbing_adds_counts_and_keeps_the_first_samples() {
        let (log, other) = (RejectLog::default(), RejectLog::default());
        for line in 1..=80 {
            log.record(reject(line * 2), b"{");
            other.record(reject(line * 2 - 1), b"{");
        }
        other.record(reject(1000), b"{");
        log.absorb(other.take());
        let summary = log.take();
        assert_eq!(summary.count, 161);
        let lines: Vec<u64> = summary.samples.iter().map(|r| r.line).collect();
        assert_eq!(lines, (1..=MAX_SAMPLES as u64).collect::<Vec<_>>());
    }

    #[test]
    fn summary_names_file_line_and_offset() {
        let log = RejectLog::default();
        log.record(reject(3), b"{");
        let text = log.take().to_string();
        assert_eq!(
            text,
            "skipped 1 malformed line\n  f.json line 3 (byte offset 30): expected ':'"
        );
    }
}
