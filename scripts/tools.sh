#!/usr/bin/env bash
# Installs what the tests need, when missing: MinIO and toxiproxy (pinned `go install`)
# and a Python venv with the peer engines (bench/requirements.txt).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
mkdir -p "$GOBIN"

# go_install NAME MODULE: installs MODULE unless the binary NAME of that version exists.
go_install() {
    local name=$1 module=$2 stamp="$GOBIN/.$1.version"
    if [[ -x "$GOBIN/$name" && "$(cat "$stamp" 2>/dev/null)" == "$module" ]]; then
        return
    fi
    echo "installing $module (once; cached in $GOBIN)"
    go install "$module"
    echo "$module" > "$stamp"
}
go_install minio "$MINIO_MODULE"
go_install server "$TOXIPROXY_MODULE"

# cargo-hakari checks that the workspace-hack crate still unifies every build's features.
if [[ "$("$GOBIN/cargo-hakari" hakari --version 2>/dev/null)" != "cargo-hakari $HAKARI_VERSION" ]]; then
    echo "installing cargo-hakari $HAKARI_VERSION (once; cached in $GOBIN)"
    cargo install --quiet --locked --root "$TESSERA_CACHE" cargo-hakari --version "$HAKARI_VERSION"
fi

requirements_stamp="$TESSERA_VENV/.requirements"
if ! cmp -s bench/requirements.txt "$requirements_stamp"; then
    echo "creating the Python venv $TESSERA_VENV"
    python3 -m venv "$TESSERA_VENV"
    "$TESSERA_VENV/bin/pip" install --quiet --upgrade pip
    "$TESSERA_VENV/bin/pip" install --quiet -r bench/requirements.txt
    cp bench/requirements.txt "$requirements_stamp"
fi
