//! An optional trace of the oracle's runs, for tuning it on a workload: with
//! `TESSERA_REGION_ORACLE_TRACE` naming a file, every run appends what it saw, chose and
//! wrote, one line each. Nothing is traced without it, and a trace that cannot be
//! written is skipped.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::time::Instant;

/// The environment variable naming the trace file.
const TRACE_ENV: &str = "TESSERA_REGION_ORACLE_TRACE";

/// One run's trace.
pub(super) struct Trace {
    file: Option<File>,
    started: Instant,
}

impl Trace {
    /// The trace of a run starting now; inert without the environment variable.
    pub(super) fn start() -> Self {
        let file = std::env::var_os(TRACE_ENV)
            .and_then(|path| OpenOptions::new().create(true).append(true).open(path).ok());
        Trace {
            file,
            started: Instant::now(),
        }
    }

    /// Appends `line`, prefixed by the milliseconds since the run started; `line` is
    /// only built when tracing.
    pub(super) fn line(&mut self, line: impl FnOnce() -> String) {
        if let Some(file) = &mut self.file {
            let elapsed_ms = self.started.elapsed().as_millis();
            let _ = writeln!(file, "{elapsed_ms:>6} ms {}", line());
        }
    }
}
