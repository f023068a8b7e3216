//! The block cache across processes, on MinIO: a second process on a cache in use reads
//! uncached with a warning; a process killed mid-write leaves a cache that the next one
//! opens clean; corrupted cache files are not served; `tessera cache stats|clear`. The
//! caches are on by default, in `$HOME/.cache/tessera/queries`, unless
//! `TESSERA_CACHE_DIR` names another directory or is empty.

mod common;

use std::path::Path;
use std::time::Duration;

use common::{run, tessera};
use tessera_testkit::MinioServer;

const QUERY: &str =
    "SELECT j->>'kind' AS kind, count(*) AS n FROM {from} GROUP BY kind ORDER BY kind";

/// The script one process runs: the cache settings, then `repeats` runs of the query
/// over `from` (the last result is what the process prints with `--format csv`).
fn script(cache_dir: &Path, from: &str, repeats: usize) -> String {
    let query = QUERY.replace("{from}", from);
    let mut text = format!(
        "SET tessera.cache_dir = '{}'; SET tessera.cache_size = '256MiB'; ",
        cache_dir.display()
    );
    for _ in 0..repeats {
        text.push_str(&query);
        text.push_str("; ");
    }
    text
}

/// XORs bytes of every foyer file in `dir` where entries are (past the first page).
fn corrupt_cache_files(dir: &Path) -> usize {
    let mut corrupted = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if !name.starts_with("foyer-storage-") {
            continue;
        }
        let mut bytes = std::fs::read(&path).unwrap();
        for b in bytes.iter_mut().skip(4096).step_by(97) {
            *b ^= 0x5a;
        }
        std::fs::write(&path, bytes).unwrap();
        corrupted += 1;
    }
    corrupted
}

#[test]
fn a_killed_process_leaves_a_cache_that_restarts_clean() {
    let minio = MinioServer::start();
    minio.create_bucket("lake");
    let env = minio.env();
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let generate = ["gen", "bluesky", "--docs", "20000", "--seed", "5", "--out"];
    let target = "s3://lake/raw/events.json";
    run(dir.path(), &env, &[&generate[..], &[target]].concat()).ok();
    let ingest = [
        "ingest",
        "s3://lake/raw/events.json",
        "--table",
        "s3://lake/t",
    ];
    run(dir.path(), &env, &ingest).ok();
    for from in ["'s3://lake/raw/events.json'", "'s3://lake/t'"] {
        let uncached = QUERY.replace("{from}", from);
        let expected = run(dir.path(), &env, &["sql", "--format", "csv", &uncached]);
        let expected = expected.ok().to_string();
        let answer = |repeats| {
            let sql = script(&cache, from, repeats);
            run(dir.path(), &env, &["sql", "--format", "csv", &sql])
        };

        // A long run holds the cache; a second process reads uncached with a warning.
        let mut long = tessera(dir.path(), &env)
            .args(["sql", "--format", "csv", &script(&cache, from, 400)])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(1500));
        let second = answer(1);
        assert!(
            second.ok().ends_with(&expected),
            "{from}: {}",
            second.stdout
        );
        assert!(
            second.stderr.contains("in use by another process"),
            "{}",
            second.stderr
        );
        // Killed mid-run: ranges on their way to disk are torn or missing.
        long.kill().unwrap();
        long.wait().unwrap();

        let restarted = answer(3);
        assert!(
            restarted.ok().ends_with(&expected),
            "{from}: {}",
            restarted.stdout
        );
        assert!(
            !restarted.stderr.contains("warning"),
            "{}",
            restarted.stderr
        );
        assert!(corrupt_cache_files(&cache) > 0, "the cache has files");
        let corrupted = answer(2);
        assert!(
            corrupted.ok().ends_with(&expected),
            "{from}: {}",
            corrupted.stdout
        );
    }
    let cache_dir = cache.display().to_string();
    let stats = run(dir.path(), &env, &["cache", "stats", "--dir", &cache_dir]);
    assert!(stats.ok().contains("in use: no"), "{}", stats.stdout);
    assert!(!stats.ok().contains("hits: 0\n"), "{}", stats.stdout);
    let cleared = run(dir.path(), &env, &["cache", "clear", "--dir", &cache_dir]);
    assert!(cleared.ok().starts_with("cleared"), "{}", cleared.stdout);
    let after = run(dir.path(), &env, &["cache", "stats", "--dir", &cache_dir]);
    assert!(after.ok().contains("disk blocks: 0"), "{}", after.stdout);
    assert!(
        after.ok().contains("predicate entries: 0"),
        "{}",
        after.stdout
    );
    assert!(
        !cache.join("predicates").exists(),
        "clear removes the predicates"
    );
}

#[test]
fn local_files_are_read_uncached_whatever_the_cache_dir() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("a.json"),
        "{\"kind\":\"x\"}\n{\"kind\":\"y\"}\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("file"), "not a directory").unwrap();
    let unusable = dir.path().join("file").join("cache");
    // Local files are never cached, so the directory is opened only for S3 scans:
    // setting it is accepted whatever it names.
    let sql = script(&unusable, "'a.json'", 1);
    let out = run(dir.path(), &[], &["sql", "--format", "csv", &sql]);
    assert!(out.ok().ends_with("kind,n\nx,1\ny,1\n"), "{}", out.stdout);
}

/// The sidecars of the regions under the cache directory `cache`.
fn region_sidecars(cache: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(cache.join("regions")) else {
        return 0;
    };
    let names = entries.map(|e| e.unwrap().file_name().to_string_lossy().into_owned());
    names.filter(|n| n.ends_with(".json")).count()
}

#[test]
fn the_caches_are_on_by_default_unless_tessera_cache_dir_is_empty() {
    let dir = tempfile::tempdir().unwrap();
    let lines: String = (0..200)
        .map(|i| format!("{{\"kind\":\"k{}\",\"n\":{i}}}\n", i % 3))
        .collect();
    std::fs::write(dir.path().join("a.json"), lines).unwrap();
    let off = [("TESSERA_CACHE_DIR", String::new())];
    run(dir.path(), &off, &["ingest", "a.json", "--table", "t"]).ok();
    let query = "SELECT count(*) AS n FROM 't' WHERE j->>'kind' = 'k1'";
    // The table is a local one, which the caches serve only when told to.
    let local = "SET tessera.cache_local_tables = 'on'";
    let twice = format!("{local}; {query}; {query}");
    let out = run(dir.path(), &off, &["sql", "--format", "csv", &twice]);
    assert!(out.ok().ends_with("n\n67\n"), "{}", out.stdout);
    let default = dir.path().join(".cache/tessera/queries");
    assert!(
        !default.exists(),
        "TESSERA_CACHE_DIR='' turns the caches off"
    );
    // The second request of a scan writes its region (LRU-2), into the default directory.
    let out = run(dir.path(), &[], &["sql", "--format", "csv", &twice]);
    assert!(out.ok().ends_with("n\n67\n"), "{}", out.stdout);
    assert_eq!(region_sidecars(&default), 1);
    let chosen = dir.path().join("chosen");
    let env = [("TESSERA_CACHE_DIR", chosen.display().to_string())];
    run(dir.path(), &env, &["sql", "--format", "csv", &twice]).ok();
    assert_eq!(region_sidecars(&chosen), 1);
}

#[test]
fn a_region_directory_that_becomes_unwritable_gives_answers_and_one_warning() {
    use std::io::{BufRead, BufReader, Write};
    use std::process::Stdio;
    let dir = tempfile::tempdir().unwrap();
    let lines: String = (0..90)
        .map(|i| format!("{{\"kind\":\"k{}\"}}\n", i % 3))
        .collect();
    std::fs::write(dir.path().join("a.json"), lines).unwrap();
    let off = [("TESSERA_CACHE_DIR", String::new())];
    run(dir.path(), &off, &["ingest", "a.json", "--table", "t"]).ok();
    let cache = dir.path().join("cache");
    let mut shell = tessera(dir.path(), &off)
        .args(["shell"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = shell.stdin.take().unwrap();
    let mut stdout = BufReader::new(shell.stdout.take().unwrap());
    let query = "SELECT count(*) AS n FROM 't' WHERE j->>'kind' = 'k1';";
    let cache_dir = format!("SET tessera.cache_dir = '{}';", cache.display());
    let local = "SET tessera.cache_local_tables = 'on';";
    writeln!(stdin, ".mode csv\n{local}\n{cache_dir}\n{query}").unwrap();
    let mut line = String::new();
    while line.trim() != "30" {
        line.clear();
        assert!(
            stdout.read_line(&mut line).unwrap() > 0,
            "the shell ended early"
        );
    }
    // The store is open; its directory turns into a file: no region can be written.
    let regions = cache.join("regions");
    std::fs::remove_dir_all(&regions).unwrap();
    std::fs::write(&regions, "not a directory").unwrap();
    writeln!(stdin, "{query}\n{query}\n{query}").unwrap();
    drop(stdin);
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stdout, &mut rest).unwrap();
    let out = shell.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(rest.matches("\n30\n").count(), 3, "{rest}");
    assert_eq!(
        stderr.matches("regions are not cached").count(),
        1,
        "{stderr}"
    );
}
