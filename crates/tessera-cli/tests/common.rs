//! Running the `tessera` binary in tests.

#![allow(dead_code)] // Each test binary uses a different part of this module.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// The outcome of one `tessera` run.
pub struct Run {
    /// The exit code (-1 when a signal ended it).
    pub code: i32,
    /// Everything printed on standard output.
    pub stdout: String,
    /// Everything printed on standard error.
    pub stderr: String,
}

impl Run {
    /// Asserts success and returns stdout.
    pub fn ok(&self) -> &str {
        assert_eq!(
            self.code, 0,
            "tessera failed:\nstdout: {}\nstderr: {}",
            self.stdout, self.stderr
        );
        &self.stdout
    }

    /// Asserts a clean failure (exit 1, one `Error:` sentence, no panic) and returns it.
    pub fn error(&self) -> &str {
        assert_eq!(
            self.code, 1,
            "expected a failure:\nstdout: {}\nstderr: {}",
            self.stdout, self.stderr
        );
        assert!(!self.stderr.contains("panicked"), "{}", self.stderr);
        assert!(self.stderr.starts_with("Error: "), "{}", self.stderr);
        self.stderr.trim_end()
    }
}

fn finish(output: Output) -> Run {
    Run {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// A `tessera` command with a clean AWS environment (no settings leak in from the host).
pub fn tessera(dir: &Path, env: &[(&str, String)]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_tessera"));
    cmd.current_dir(dir);
    for (k, _) in std::env::vars() {
        if k.starts_with("AWS_") {
            cmd.env_remove(k);
        }
    }
    cmd.env("HOME", dir);
    // The caches are on by default, under `$HOME/.cache`: the test's own directory.
    cmd.env_remove("XDG_CACHE_HOME");
    cmd.env_remove("TESSERA_CACHE_DIR");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd
}

/// Runs `tessera args...` in `dir`.
pub fn run(dir: &Path, env: &[(&str, String)], args: &[&str]) -> Run {
    finish(tessera(dir, env).args(args).output().expect("tessera runs"))
}

/// Runs `tessera args...` with `input` on stdin.
pub fn run_with_input(dir: &Path, args: &[&str], input: &str) -> Run {
    run_with_input_and_env(dir, &[], args, input)
}

/// Runs `tessera args...` with `input` on stdin and `env` set.
pub fn run_with_input_and_env(
    dir: &Path,
    env: &[(&str, String)],
    args: &[&str],
    input: &str,
) -> Run {
    let mut child = tessera(dir, env)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("tessera runs");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    finish(child.wait_with_output().unwrap())
}

/// The repository's `test/data` directory.
pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../test/data")
        .canonicalize()
        .unwrap()
}
