# Shared settings of Tessera's scripts (sourced, not run).
# Build output and installed tools live outside the clone, so repeated runs on one
# machine (and CI on a fresh clone) reuse them.
TESSERA_CACHE="${TESSERA_CACHE:-$HOME/.cache/tessera}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$TESSERA_CACHE/target}"
export GOBIN="$TESSERA_CACHE/bin"
export TESSERA_VENV="$TESSERA_CACHE/venv"
export PATH="$GOBIN:$HOME/.cargo/bin:/usr/local/go/bin:$PATH"

# Pinned versions of the test servers.
MINIO_MODULE="github.com/minio/minio@v0.0.0-20260212201848-7aac2a2c5b7c"
TOXIPROXY_MODULE="github.com/Shopify/toxiproxy/v2/cmd/server@v2.5.0"
# cargo-hakari, which keeps crates/tessera-workspace-hack's features up to date.
HAKARI_VERSION="0.9.39"
