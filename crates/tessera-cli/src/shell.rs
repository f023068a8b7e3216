//! The interactive shell: line editing and history (rustyline), multi-line statements
//! ended by `;`, and dot commands in the style of the DuckDB and SQLite shells.

use std::path::PathBuf;

use rustyline::DefaultEditor;
use rustyline::config::Configurer;
use rustyline::error::ReadlineError;
use tessera_engine::TesseraSession;

use crate::output::Format;
use crate::run;

/// Lines kept in the history file.
const HISTORY_LIMIT: usize = 10_000;

const HELP: &str = "\
Enter SQL statements ended by ';' (they may span lines). Commands:
  .tables            list tables
  .schema NAME       show the columns of a table (or a quoted location)
  .timer on|off      print how long each statement takes
  .help              this text
  .quit              leave (Ctrl-D works too)";

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
    let mut timer = false;
    let mut all_ok = true;
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
        let trimmed = line.trim();
        if buffer.is_empty() && trimmed.starts_with('.') {
            editor.add_history_entry(trimmed)?;
            match dot_command(session, trimmed, &mut timer).await {
                Flow::Continue => continue,
                Flow::Quit => break,
            }
        }
        if trimmed.is_empty() && buffer.is_empty() {
            continue;
        }
        buffer.push_str(&line);
        buffer.push('\n');
        if !trimmed.ends_with(';') {
            continue;
        }
        let script = std::mem::take(&mut buffer);
        editor.add_history_entry(script.trim())?;
        all_ok &= run_statements(session, &script, timer).await;
    }
    if let Some(path) = &history {
        editor.save_history(path)?;
    }
    Ok(all_ok)
}

enum Flow {
    Continue,
    Quit,
}

async fn dot_command(session: &TesseraSession, command: &str, timer: &mut bool) -> Flow {
    let mut parts = command.splitn(2, char::is_whitespace);
    let name = parts.next().unwrap_or("");
    let arg = parts.next().unwrap_or("").trim().trim_end_matches(';');
    match name {
        ".quit" | ".exit" => return Flow::Quit,
        ".help" => println!("{HELP}"),
        ".timer" => match arg {
            "on" => *timer = true,
            "off" => *timer = false,
            _ => eprintln!("usage: .timer on|off"),
        },
        ".tables" => {
            run_statements(
                session,
                "SELECT table_name FROM information_schema.tables \
                 WHERE table_schema = 'public' ORDER BY table_name;",
                false,
            )
            .await;
        }
        ".schema" if !arg.is_empty() => {
            run_statements(session, &format!("DESCRIBE {arg};"), false).await;
        }
        ".schema" => eprintln!("usage: .schema NAME"),
        other => eprintln!("unknown command {other}; .help lists the commands"),
    }
    Flow::Continue
}

/// Runs `script`; whether every statement in it succeeded (failures are reported).
async fn run_statements(session: &TesseraSession, script: &str, timer: bool) -> bool {
    let mut stdout = std::io::stdout();
    match run::run_script(session, script, Format::Table, &mut stdout, timer).await {
        Ok(ok) => ok,
        Err(e) => {
            eprintln!("Error: {e:#}");
            false
        }
    }
}
