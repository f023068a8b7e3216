//! Prints a few generated Bluesky events, or measures generation speed.
//!
//! ```text
//! cargo run -p tessera-gen --example bluesky                 # 5 documents
//! cargo run -p tessera-gen --example bluesky -- 20           # 20 documents
//! cargo run -p tessera-gen --release --example bluesky -- --time 1000000
//! ```

use std::io::{self, Write};
use std::time::Instant;

use tessera_gen::{BlueskyConfig, write_doc, write_ndjson};

fn main() -> io::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.as_slice() {
        [flag, docs] if flag == "--time" => time(parse(docs)),
        [count] => print(parse(count)),
        [] => print(5),
        _ => {
            eprintln!("usage: bluesky [COUNT] | --time DOCS");
            std::process::exit(2);
        }
    }
}

fn parse(arg: &str) -> u64 {
    arg.parse().unwrap_or_else(|_| {
        eprintln!("not a number: {arg}");
        std::process::exit(2);
    })
}

/// Prints a `count`-document data set document by document: each can be generated on
/// its own.
fn print(count: u64) -> io::Result<()> {
    let cfg = BlueskyConfig::new(count, 1);
    let mut stdout = io::stdout().lock();
    let mut doc = Vec::new();
    for index in 0..count {
        doc.clear();
        write_doc(&cfg, index, &mut doc);
        doc.push(b'\n');
        stdout.write_all(&doc)?;
    }
    Ok(())
}

/// Generates `docs` documents into a sink with one worker, then with every core.
fn time(docs: u64) -> io::Result<()> {
    let cfg = BlueskyConfig::new(docs, 1);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    for threads in [1, cores] {
        let started = Instant::now();
        let bytes = write_ndjson(&cfg, threads, &mut io::sink())?;
        let secs = started.elapsed().as_secs_f64();
        println!(
            "{threads} thread(s): {docs} docs, {:.1} MB ({:.1} B/doc) in {secs:.2} s = {:.0} MB/s",
            bytes as f64 / 1e6,
            bytes as f64 / docs as f64,
            bytes as f64 / 1e6 / secs,
        );
    }
    Ok(())
}
