#!/usr/bin/env bash
# Lints and natively tests the guest side under plugins/: rustfmt, clippy (on the host target
# with the tests, and on wasm32-wasip1 for the code only the wasm build compiles), the Rust
# SDK's and the examples' tests on the host target over the SDK's in-memory host, then gofmt,
# go vet (native and wasip1) and go test for the Go SDK and the Go examples. Run by
# scripts/test.sh after scripts/build-plugins.sh (which installs the wasm32-wasip1 target).
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/berth/target}"
export GOTOOLCHAIN=local
# The guest workspace builds into the same directory as scripts/build-plugins.sh, so its
# dependencies are compiled once per target.
target="$CARGO_TARGET_DIR/plugins"
manifest=plugins/Cargo.toml

echo "== plugins: cargo fmt"
cargo fmt --manifest-path "$manifest" --all -- --check
echo "== plugins: cargo clippy (host target with tests, then wasm32-wasip1)"
cargo clippy --manifest-path "$manifest" --workspace --all-targets --locked --target-dir "$target" \
  -- -D warnings
cargo clippy --manifest-path "$manifest" --workspace --locked --target wasm32-wasip1 \
  --target-dir "$target" -- -D warnings
echo "== plugins: cargo test (host target, the SDK's in-memory host)"
cargo test --manifest-path "$manifest" --workspace --locked --target-dir "$target"

echo "== plugins: Go SDK and examples (gofmt, go vet, go test)"
for dir in plugins/sdk-go plugins/maintenance-window; do
  unformatted=$(gofmt -l "$dir")
  if [ -n "$unformatted" ]; then
    echo "gofmt: not formatted: $unformatted" >&2
    exit 1
  fi
  (cd "$dir" && go vet ./... && GOOS=wasip1 GOARCH=wasm go vet ./... && go test ./...)
done
