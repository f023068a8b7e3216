#!/usr/bin/env bash
# Runs every fuzz target for SECONDS each (default 60) on its checked-in seed corpus,
# with nightly Rust and cargo-fuzz (installed when missing). New inputs that reach new
# code go to a scratch corpus, not the checked-in one; a crash leaves its input under
# fuzz/artifacts/TARGET/ and fails the script.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
seconds="${1:-60}"
export CARGO_TARGET_DIR="$TESSERA_CACHE/fuzz-target"

rustup toolchain list | grep -q '^nightly' || rustup toolchain install nightly --profile minimal
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked --version 0.13.2

targets=$(cargo +nightly fuzz list)
for target in $targets; do
    scratch="$TESSERA_CACHE/fuzz-corpus/$target"
    mkdir -p "$scratch" "fuzz/corpus/$target"
    echo "== fuzz $target for ${seconds} s"
    cargo +nightly fuzz run "$target" "$scratch" "fuzz/corpus/$target" -- \
        -max_total_time="$seconds" -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1
done
