#!/usr/bin/env bash
# The one test command (README, CI): formatting, lints, and every test of the workspace.
# Build output is cached outside the clone so repeat runs on the same machine are fast.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/berth/target}"
export GOTOOLCHAIN=local

echo "== cargo fmt"
cargo fmt --all -- --check
echo "== cargo clippy"
cargo clippy --workspace --all-targets --locked -- -D warnings
echo "== shell scripts (bash -n; shellcheck where installed) and scripts/readme-figures.py"
for script in scripts/*.sh; do
  bash -n "$script"
done
if command -v shellcheck >/dev/null; then
  shellcheck scripts/*.sh
else
  echo "shellcheck is not installed: only bash -n checked the scripts"
fi
if command -v python3 >/dev/null; then
  python3 -c "import ast, sys; ast.parse(open(sys.argv[1]).read(), sys.argv[1])" scripts/readme-figures.py
fi
echo "== unused dependencies (cargo-machete)"
if [[ "$(cargo machete --version 2>/dev/null)" != *"0.9.2"* ]]; then
  cargo install cargo-machete --version 0.9.2 --locked --quiet
fi
cargo machete
echo "== control plane (etcd, kube-apiserver, kwok and the reference kube-scheduler v1.22.17 from Go modules; cached after the first build)"
BERTH_CONTROL_PLANE_BIN="$(bash scripts/control-plane.sh --with-reference-scheduler)"
export BERTH_CONTROL_PLANE_BIN
echo "== helm (from its Go module, for the chart tests; cached after the first build)"
if [[ -z "${BERTH_SKIP_HELM:-}" ]]; then
  BERTH_HELM="$(bash scripts/helm.sh)"
  export BERTH_HELM
else
  echo "BERTH_SKIP_HELM is set: not building helm; the chart tests skip"
fi
echo "== headless Chromium (Debian's package, for the --report browser tests; installed if missing)"
BERTH_CHROMIUM="$(bash scripts/chromium.sh)"
export BERTH_CHROMIUM
echo "== WASM plugins (Rust and Go guests for wasm32-wasip1, into plugins/dist)"
bash scripts/build-plugins.sh
echo "== plugins: fmt, clippy and native tests (Rust SDK and examples; Go SDK and examples)"
bash scripts/check-plugins.sh
echo "== container image (scripts/image.sh: a static release binary for the musl target, FROM scratch; cached after the first build)"
# crates/berth/tests/image.rs checks it and runs it, in a container where an OCI runtime can
# start one (runc: Debian's package, installed as root when neither runc nor crun is there).
if ! command -v runc >/dev/null && ! command -v crun >/dev/null && [[ "$(id -u)" == 0 ]] \
  && command -v apt-get >/dev/null; then
  echo "installing Debian's runc package for the image test" >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq runc >&2 \
    || { apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq runc >&2; }
fi
BERTH_IMAGE="$(bash scripts/image.sh)"
export BERTH_IMAGE
echo "== cargo test"
cargo test --workspace --locked
echo "== scripts/readme-figures.sh at tiny sizes, debug build (checks the script, measures nothing)"
if command -v python3 >/dev/null; then
  QUICK=1 ROUNDS=1 ONLY="basic scheduling-basic preemption extender-1000n" \
    BERTH_BIN="$CARGO_TARGET_DIR/debug/berth" LOG="$CARGO_TARGET_DIR/tmp/readme-figures-check.log" \
    bash scripts/readme-figures.sh
else
  echo "python3 is not installed: not checked (the script needs it)"
fi
