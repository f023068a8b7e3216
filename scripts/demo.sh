#!/usr/bin/env bash
# Builds Tessera (release) and runs `tessera demo`: generates a Bluesky event stream in a
# local directory that serves as the object store, queries it in place, ingests it into a
# Tessera table there and queries the table, timings side by side.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
cargo build --release --quiet -p tessera-cli
exec "$CARGO_TARGET_DIR/release/tessera" demo "$@"
