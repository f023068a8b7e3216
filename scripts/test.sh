#!/usr/bin/env bash
# The whole test suite, on a fresh machine too: installs MinIO, toxiproxy and the Python
# venv when missing, checks formatting and lints, runs the Rust tests (unit, sqllogictest,
# CLI, MinIO integration), the differential suite against DuckDB, the servers with real
# clients, a Ballista cluster of real processes, and the Python package from its wheel.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
scripts/tools.sh

echo "== format and lints"
cargo fmt --all -- --check
# Every build (cargo test --workspace, the CLI alone, maturin's wheel) resolves the same
# dependency features through the workspace-hack crate, so none compiles DataFusion again.
cargo hakari verify
cargo clippy --workspace --all-targets --quiet -- -D warnings

echo "== Rust tests"
cargo test --workspace --quiet

# The caches are on by default (in ~/.cache/tessera/queries); the suite gives them a
# directory of its own, so that runs neither share nor grow one.
if [ -z "${TESSERA_CACHE_DIR+set}" ]; then
    TESSERA_CACHE_DIR="$(mktemp -d)"
    export TESSERA_CACHE_DIR
    trap 'rm -rf "$TESSERA_CACHE_DIR"' EXIT
fi

echo "== differential tests against DuckDB"
# `cargo test` built the binary for the CLI tests; building it on its own would resolve
# dependency features differently and compile DataFusion a second time.
test -x "$CARGO_TARGET_DIR/debug/tessera"
TESSERA_BIN="$CARGO_TARGET_DIR/debug/tessera" "$TESSERA_VENV/bin/python" -m pytest -q tests/differential

echo "== front ends: PostgreSQL wire (psql, psycopg) and Flight SQL (ADBC)"
TESSERA_BIN="$CARGO_TARGET_DIR/debug/tessera" "$TESSERA_VENV/bin/python" -m pytest -q tests/frontends

echo "== a Ballista cluster: scheduler and executors as processes on loopback, against DuckDB"
TESSERA_BIN="$CARGO_TARGET_DIR/debug/tessera" "$TESSERA_VENV/bin/python" -m pytest -q tests/cluster

echo "== the Python package, built as a wheel and installed into a fresh venv"
scripts/python_package.sh
