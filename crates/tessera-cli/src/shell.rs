//! The interactive shell: line editing and history (rustyline), multi-line statements
//! ended by `;`, and dot commands in the style of the DuckDB and SQLite shells.

use std::fs::File;
use std::io::{BufWriter, IsTerminal, Write};
use std::path::PathBuf;

use rustyline::DefaultEditor;
use rustyline::config::Configurer;
use rustyline::error::ReadlineError;
use tessera_engine::TesseraSession;

use crate::output::Format;
use crate::run::{self, ScriptOptions};

/// Lines kept in the history file.
const HISTORY_LIMIT: usize = 10_000;

/// Files `.read` may open inside one another (a file reading itself stops here).
const READ_DEPTH_MAX: usize = 16;

/// The output modes of `.mode`, by DuckDB's names.
const MODES: &[(&str, Format)] = &[
    ("table", Format::Table),
    ("csv", Format::Csv),
    ("json", Format::Json),
    ("markdown", Format::Markdown),
    ("line", Format::Line),
];

const HELP: &str = "\
Enter SQL statements ended by ';' (they may span lines). Commands:
  .tables            list tables
  .schema NAME       show the columns of a table (or a quoted location)
  .mode MODE         result format: table, csv, json, markdown or line
  .explain [on|off]  show the plans of queries instead of running them (no argument toggles)
  .read FILE         run the statements and commands of a file
  .output [FILE]     write results to FILE; with no FILE, to the screen again
  .timer on|off      print how long each statement takes
  .help              this text
  .quit              leave (Ctrl-D works too)
Queries running longer than a second show their progress on the terminal.";

fn history_path() -> Option<PathBuf> {
    std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".tessera_history"))
}

/// Runs the shell until `.quit` or end of input; whether every SQL statement succeeded
/// (a script piped in fails as a whole when one of its statements did, as in DuckDB's
/// and SQLite's shells).
pub async fn run(session: &TesseraSession) -> anyhow::Result<bool> {
    let mut editor = DefaultEditor::new()?;
    editor.set_max_history_size(HISTORY_LIMIT)?;
    let history = history_path();
    if let Some(path) = &history {
        // A missing history file is normal on first use.
        let _ = editor.load_history(path);
    }
    println!(
        "Tessera {} — SQL over JSON in object storage. Type .help for help.",
        env!("CARGO_PKG_VERSION")
    );
    let mut shell = Shell::new(session);
    let mut buffer = String::new();
    loop {
        let prompt = if buffer.is_empty() {
            "tessera> "
        } else {
            "    ...> "
        };
        let line = match editor.readline(prompt) {
            Ok(line) => line,
            Err(ReadlineError::Interrupted) => {
                buffer.clear();
                continue;
            }
            Err(ReadlineError::Eof) => break,
            Err(e) => return Err(e.into()),
        };
        match shell.feed(&line, &mut buffer).await {
            Fed::Pending => {}
            Fed::Ran(entry) => {
                editor.add_history_entry(entry.trim())?;
            }
            Fed::Dot(flow) => {
                editor.add_history_entry(line.trim())?;
                if let Flow::Quit = flow {
                    break;
                }
            }
        }
    }
    if let Some(path) = &history {
        editor.save_history(path)?;
    }
    shell.close_output();
    Ok(shell.all_ok)
}

/// Whether the shell goes on after a command.
enum Flow {
    Continue,
    Quit,
}

/// What one input line did.
enum Fed {
    /// It began or continued a statement, or was empty.
    Pending,
    /// It ended these statements, which ran.
    Ran(String),
    /// It was a dot command.
    Dot(Flow),
}

/// The shell's settings and where results go.
struct Shell<'s> {
    session: &'s TesseraSession,
    format: Format,
    timer: bool,
    explain: bool,
    /// The file of `.output FILE`; `None` is stdout.
    output: Option<(PathBuf, BufWriter<File>)>,
    /// Files `.read` is reading now, one inside the other.
    read_depth: usize,
    all_ok: bool,
}

impl<'s> Shell<'s> {
    fn new(session: &'s TesseraSession) -> Self {
        Self {
            session,
            format: Format::Table,
            timer: false,
            explain: false,
            output: None,
            read_depth: 0,
            all_ok: true,
        }
    }

    /// Takes one line of input: a dot command at the start of a statement runs at once,
    /// SQL is gathered in `buffer` until a line ends with `;`.
    async fn feed(&mut self, line: &str, buffer: &mut String) -> Fed {
        let trimmed = line.trim();
        if buffer.is_empty() && trimmed.starts_with('.') {
            return Fed::Dot(self.dot_command(trimmed).await);
        }
        if trimmed.is_empty() && buffer.is_empty() {
            return Fed::Pending;
        }
        buffer.push_str(line);
        buffer.push('\n');
        if !trimmed.ends_with(';') {
            return Fed::Pending;
        }
        let script = std::mem::take(buffer);
        self.all_ok &= self.run_sql(&script, self.explain).await;
        Fed::Ran(script)
    }

    async fn dot_command(&mut self, command: &str) -> Flow {
        let mut parts = command.splitn(2, char::is_whitespace);
        let name = parts.next().unwrap_or("");
        let arg = parts.next().unwrap_or("").trim().trim_end_matches(';');
        match name {
            ".quit" | ".exit" => return Flow::Quit,
            ".help" => println!("{HELP}"),
            ".timer" => match arg {
                "on" => self.timer = true,
                "off" => self.timer = false,
                _ => eprintln!("usage: .timer on|off"),
            },
            ".explain" => match arg {
                "" => self.explain = !self.explain,
                "on" => self.explain = true,
                "off" => self.explain = false,
                _ => eprintln!("usage: .explain [on|off]"),
            },
            ".mode" => self.set_mode(arg),
            ".output" => self.set_output(arg),
            ".read" if !arg.is_empty() => return Box::pin(self.read(arg)).await,
            ".read" => eprintln!("usage: .read FILE"),
            ".tables" => {
                self.run_sql(
                    "SELECT table_name FROM information_schema.tables \
                     WHERE table_schema = 'public' ORDER BY table_name;",
                    false,
                )
                .await;
            }
            ".schema" if !arg.is_empty() => {
                self.run_sql(&format!("DESCRIBE {arg};"), false).await;
            }
            ".schema" => eprintln!("usage: .schema NAME"),
            other => eprintln!("unknown command {other}; .help lists the commands"),
        }
        Flow::Continue
    }

    fn set_mode(&mut self, arg: &str) {
        let names: Vec<&str> = MODES.iter().map(|(name, _)| *name).collect();
        match MODES.iter().find(|(name, _)| *name == arg) {
            Some((_, format)) => self.format = *format,
            None if arg.is_empty() => {
                let current = MODES.iter().find(|(_, f)| *f == self.format);
                let current = current.map_or("table", |(name, _)| name);
                println!("current mode: {current}; choices: {}", names.join(", "));
            }
            None => eprintln!(
                "Error: unknown mode {arg}; the modes are {}",
                names.join(", ")
            ),
        }
    }

    /// Sends results to the file `arg` (created or emptied), or back to stdout when
    /// `arg` is empty.
    fn set_output(&mut self, arg: &str) {
        self.close_output();
        if arg.is_empty() {
            return;
        }
        let path = PathBuf::from(arg);
        match File::create(&path) {
            Ok(file) => self.output = Some((path, BufWriter::new(file))),
            Err(e) => {
                eprintln!("Error: cannot write {arg}: {}", reason(&e));
                self.all_ok = false;
            }
        }
    }

    /// Flushes the `.output` file, if any, and sends results to stdout again.
    fn close_output(&mut self) {
        if let Some((path, mut file)) = self.output.take()
            && let Err(e) = file.flush()
        {
            eprintln!("Error: cannot write {}: {}", path.display(), reason(&e));
            self.all_ok = false;
        }
    }

    /// Runs the lines of the file `path` as if typed, a statement left unended at its
    /// end included.
    async fn read(&mut self, path: &str) -> Flow {
        if self.read_depth == READ_DEPTH_MAX {
            eprintln!(
                "Error: .read {path}: files read one another more than {READ_DEPTH_MAX} deep"
            );
            self.all_ok = false;
            return Flow::Continue;
        }
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) => {
                eprintln!("Error: cannot read {path}: {}", reason(&e));
                self.all_ok = false;
                return Flow::Continue;
            }
        };
        self.read_depth += 1;
        let mut buffer = String::new();
        let mut flow = Flow::Continue;
        for line in text.lines() {
            if let Fed::Dot(Flow::Quit) = self.feed(line, &mut buffer).await {
                flow = Flow::Quit;
                break;
            }
        }
        if matches!(flow, Flow::Continue) && !buffer.trim().is_empty() {
            self.all_ok &= self.run_sql(&buffer, self.explain).await;
        }
        self.read_depth -= 1;
        flow
    }

    /// Runs `script` with the shell's settings; whether every statement in it succeeded
    /// (failures are reported).
    async fn run_sql(&mut self, script: &str, explain: bool) -> bool {
        let options = ScriptOptions {
            format: self.format,
            timer: self.timer,
            explain,
            output_on_terminal: self.output.is_none() && std::io::stdout().is_terminal(),
        };
        let mut stdout = std::io::stdout();
        let sink: &mut (dyn Write + Send) = match &mut self.output {
            Some((_, file)) => file,
            None => &mut stdout,
        };
        match run::run_script_with(self.session, script, &options, sink).await {
            Ok(ok) => ok,
            Err(e) => {
                eprintln!("Error: {e:#}");
                false
            }
        }
    }
}

/// What went wrong with a file, as the end of a sentence: the system's message without
/// its error number ("No such file or directory (os error 2)" reads "no such file or
/// directory").
fn reason(error: &std::io::Error) -> String {
    let text = error.to_string();
    let text = text.split(" (os error").next().unwrap_or_default();
    let mut chars = text.chars();
    chars
        .next()
        .map(|first| first.to_lowercase().chain(chars).collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_errors_read_as_the_end_of_a_sentence() {
        let missing = std::fs::read("/nonexistent/tessera/file.sql").unwrap_err();
        assert_eq!(reason(&missing), "no such file or directory");
    }
}
