#!/usr/bin/env bash
# Builds the Python package `tessera` (crates/tessera-python) as one abi3 wheel for
# CPython 3.10+, installs it into a fresh venv with the pinned peers and runs its tests
# against the installed wheel. The wheel is built in the dev profile into the shared
# target directory, so it reuses what `cargo test --workspace` compiled.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh

crate=crates/tessera-python
wheels="$CARGO_TARGET_DIR/wheels"
rm -f "$wheels"/tessera-*.whl
started=$SECONDS
"$TESSERA_VENV/bin/maturin" build --quiet --profile dev --manifest-path "$crate/Cargo.toml" \
    --interpreter python3 --out "$wheels"
echo "built the wheel in $((SECONDS - started)) s"
wheel=$(ls "$wheels"/tessera-*-abi3-*.whl)

venv="$TESSERA_CACHE/wheel-venv"
python3 -m venv --clear "$venv"
# The peers and test tools at the versions the rest of the suite pins.
mapfile -t pins < <(grep -E '^(pytest|pytz|pyarrow|pandas|polars|duckdb)==' bench/requirements.txt)
"$venv/bin/pip" install --quiet "$wheel" "${pins[@]}"

# The tests make their data with the CLI that `cargo test --workspace` built.
export TESSERA_BIN="$CARGO_TARGET_DIR/debug/tessera"
test -x "$TESSERA_BIN" || { echo "no $TESSERA_BIN: run cargo test --workspace first" >&2; exit 1; }
cd "$crate/tests"
"$venv/bin/python" -m pytest -q -p no:cacheprovider .
