#!/usr/bin/env bash
# Builds Tessera (release) and runs `tessera demo`: generates a Bluesky event stream in a
# local directory that serves as the object store and queries it in place.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
cargo build --release --quiet -p tessera-cli
exec "$CARGO_TARGET_DIR/release/tessera" demo "$@"
