#!/usr/bin/env bash
# Builds the guest plugins under plugins/ (Rust SDK examples and the Go example) for
# wasm32-wasip1 into plugins/dist/, installing the Rust target if it is missing.
# Run by scripts/test.sh before the tests; the plugin tests also call it when dist/ is stale.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/berth/target}"
export GOTOOLCHAIN=local
out=plugins/dist
mkdir -p "$out"

if ! rustup target list --installed | grep -qx wasm32-wasip1; then
  echo "== rustup target add wasm32-wasip1"
  rustup target add wasm32-wasip1
fi

echo "== plugins: Rust (wasm32-wasip1)"
target="$CARGO_TARGET_DIR/plugins"
cargo build --manifest-path plugins/Cargo.toml --release --target wasm32-wasip1 --locked \
  --target-dir "$target"
for wasm in "$target"/wasm32-wasip1/release/*.wasm; do
  name=$(basename "$wasm" .wasm)
  cp "$wasm" "$out/${name//_/-}.wasm"
done

echo "== plugins: Go (GOOS=wasip1 GOARCH=wasm)"
go_plugins=(plugins/maintenance-window)
for dir in "${go_plugins[@]}"; do
  (cd "$dir" && GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -trimpath \
    -o "../dist/$(basename "$dir").wasm" .)
done
ls -l "$out"
