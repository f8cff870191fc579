#!/usr/bin/env bash
# Try Berth on a real, throwaway cluster in one command, with no Docker and no kubelet:
# etcd, kube-apiserver and kwok's fake nodes on 127.0.0.1 (the control plane the end-to-end
# tests use, built from Go modules by scripts/control-plane.sh and cached under
# ~/.cache/berth), `berth run` with the bundled policy, a few Deployments with
# `schedulerName: berth`; prints where each pod went and why, the metrics endpoint and a
# kubeconfig for kubectl, then stops everything.
#
# Usage: scripts/demo.sh [--stay]
#   --stay   keep the cluster and Berth up until Ctrl-C
#
# Environment:
#   BERTH_BIN, BERTH_DEMO_BIN   run these binaries instead of building both (release)
#   BERTH_CONTROL_PLANE_BIN     the control plane's binaries (default: built once, cached)
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ -z "${BERTH_BIN:-}" || -z "${BERTH_DEMO_BIN:-}" ]]; then
  echo "building berth and berth-demo (release; the first build takes several minutes)" >&2
  cargo build --release --locked -p berth --bins >&2
  target="${CARGO_TARGET_DIR:-target}/release"
  BERTH_BIN="${BERTH_BIN:-$target/berth}"
  BERTH_DEMO_BIN="${BERTH_DEMO_BIN:-$target/berth-demo}"
fi
exec "$BERTH_DEMO_BIN" --berth "$BERTH_BIN" "$@"
