#!/usr/bin/env bash
# Builds helm (the chart tests render deploy/helm/berth with `helm template`) from its Go
# module, because no prebuilt binary can be downloaded here: only the Go module proxy is
# needed. The binary is cached outside the clone, keyed by the pinned version, so a second
# run only checks that it is there.
#
# Usage: scripts/helm.sh
#   Prints progress on stderr and the path of the helm binary on stdout.
# Environment:
#   BERTH_HELM_CACHE  cache root (default $HOME/.cache/berth/helm)
set -euo pipefail

# The newest helm v3 release; it needs Go >= 1.26.0 (its go.mod).
HELM_VERSION=v3.22.0

export GOTOOLCHAIN=local
export GOFLAGS="${GOFLAGS:-} -mod=mod"

cache_root="${BERTH_HELM_CACHE:-$HOME/.cache/berth/helm}"
bin="$cache_root/$HELM_VERSION/bin"
helm="$bin/helm"

log() { echo "helm: $*" >&2; }

if [[ -x "$helm" ]]; then
    echo "$helm"
    exit 0
fi
command -v go >/dev/null || {
    log "go is not installed (Go >= 1.26 is needed to build helm $HELM_VERSION)"
    exit 1
}
mkdir -p "$bin"
# Concurrent callers (parallel test processes, a developer and CI) wait for one build.
exec 9>"$cache_root/.lock"
if ! flock -n 9; then
    log "another build is running; waiting for it"
    flock 9
fi
if [[ ! -x "$helm" ]]; then
    start=$SECONDS
    log "building helm $HELM_VERSION into $bin ($(go version))"
    # Into a temporary directory first: an interrupted build leaves no half-written binary
    # where the fast path above would take it.
    GOBIN="$bin.tmp" go install -ldflags "-s -w -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION" \
        "helm.sh/helm/v3/cmd/helm@$HELM_VERSION"
    mv -f "$bin.tmp/helm" "$helm"
    rmdir "$bin.tmp"
    log "done in $((SECONDS - start))s"
fi
echo "$helm"
