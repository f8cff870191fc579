#!/usr/bin/env bash
# Builds the real control-plane programs the end-to-end tests run (etcd, kube-apiserver,
# kube-scheduler, kwok) from their Go modules, because no prebuilt Kubernetes binary can be
# downloaded here: only the Go module proxy is needed. The binaries are cached outside the
# clone, keyed by the pinned versions, so a second run only checks a stamp file.
#
# Usage: scripts/control-plane.sh [--with-reference-scheduler]
#   Prints progress on stderr and the directory holding the binaries on stdout.
#   --with-reference-scheduler also builds kube-scheduler v1.22, the last release that reads
#   a Policy file (a second, older dependency graph: ~2.5 more minutes), as
#   bin/kube-scheduler-v1.22. Run it with --policy-config-file and a --config file of
#   apiVersion kubescheduler.config.k8s.io/v1beta1: with v1.22's default v1beta2 config, a
#   Policy naming LeastRequestedPriority fails to load (kubernetes/kubernetes#105202).
# Environment:
#   BERTH_CONTROL_PLANE_CACHE  cache root (default $HOME/.cache/berth/control-plane)
set -euo pipefail

# One wrapper module holds them all so the dependencies they share (client-go, the etcd
# client, grpc, ...) are compiled once. kubernetes v1.36.3 (go 1.26.0)
# requires etcd v3.6.8 itself, and kwok v0.8.0 is built
# against the v0.36 staging modules.
K8S_VERSION=v1.36.3
ETCD_VERSION=v3.6.8
KWOK_VERSION=v0.8.0
# The last kube-scheduler that reads a Policy file.
REFERENCE_SCHEDULER_VERSION=v1.22.17

export GOTOOLCHAIN=local
export GOFLAGS="${GOFLAGS:-} -mod=mod"

with_reference=0
for arg in "$@"; do
    case "$arg" in
    --with-reference-scheduler) with_reference=1 ;;
    *)
        echo "usage: $0 [--with-reference-scheduler]" >&2
        exit 2
        ;;
    esac
done

cache_root="${BERTH_CONTROL_PLANE_CACHE:-$HOME/.cache/berth/control-plane}"
dir="$cache_root/k8s-$K8S_VERSION-etcd-$ETCD_VERSION-kwok-$KWOK_VERSION"
bin="$dir/bin"
stamp="$dir/stamp"
binaries=(etcd kube-apiserver kube-scheduler kwok)

log() { echo "control-plane: $*" >&2; }

built() {
    [[ -f "$stamp" ]] || return 1
    local b
    for b in "${binaries[@]}"; do [[ -x "$bin/$b" ]] || return 1; done
    [[ -f "$bin/kwok-stages.yaml" ]] || return 1
    if ((with_reference)); then [[ -x "$bin/kube-scheduler-v1.22" ]] || return 1; fi
    return 0
}

# Fast path without the lock: nothing to do once the stamp and binaries are there.
if built; then
    echo "$bin"
    exit 0
fi

command -v go >/dev/null || {
    log "go is not installed (Go >= 1.26 is needed to build the control plane)"
    exit 1
}
mkdir -p "$dir"
# Concurrent callers (parallel test processes, a developer and CI) wait for one build.
exec 9>"$dir/.lock"
if ! flock -n 9; then
    log "another build is running; waiting for it"
    flock 9
fi
if built; then
    echo "$bin"
    exit 0
fi

# Writes a wrapper module requiring k8s.io/kubernetes at $2 in directory $1, with every
# staging module kubernetes replaces by a local path replaced by its v0.Y.Z release instead.
write_kubernetes_wrapper() {
    local wrapper="$1" version="$2" gomod staging
    rm -rf "$wrapper"
    mkdir -p "$wrapper"
    log "resolving k8s.io/kubernetes@$version"
    gomod=$(cd "$wrapper" && go mod download -json "k8s.io/kubernetes@$version" |
        sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p')
    [[ -f "$gomod" ]] || {
        log "could not download k8s.io/kubernetes@$version"
        exit 1
    }
    staging="v0.${version#v1.}"
    {
        echo "module berth.local/control-plane"
        echo
        sed -n 's/^go \(.*\)$/go \1/p' "$gomod"
        echo
        echo "replace ("
        sed -n 's#^[[:space:]]*\(k8s\.io/[^ ]*\) => \./staging/.*#\t\1 => \1 '"$staging"'#p' "$gomod"
        echo ")"
    } >"$wrapper/go.mod"
}

build_main() {
    local wrapper="$dir/src"
    write_kubernetes_wrapper "$wrapper" "$K8S_VERSION"
    cd "$wrapper"
    log "resolving modules (first run downloads ~1 GiB of sources)"
    go get "k8s.io/kubernetes@$K8S_VERSION" "go.etcd.io/etcd/server/v3@$ETCD_VERSION" \
        "sigs.k8s.io/kwok@$KWOK_VERSION"
    local minor="${K8S_VERSION#v1.}"
    minor="${minor%%.*}"
    local version_pkg=k8s.io/component-base/version
    local ldflags="-s -w -X $version_pkg.gitVersion=$K8S_VERSION -X $version_pkg.gitMajor=1"
    ldflags+=" -X $version_pkg.gitMinor=$minor -X $version_pkg.gitTreeState=clean"
    log "compiling etcd, kube-apiserver, kube-scheduler, kwok (cold: many minutes on 2 cores)"
    mkdir -p "$bin.tmp"
    go build -ldflags "$ldflags" -o "$bin.tmp/" \
        go.etcd.io/etcd/server/v3 \
        k8s.io/kubernetes/cmd/kube-apiserver \
        k8s.io/kubernetes/cmd/kube-scheduler \
        sigs.k8s.io/kwok/cmd/kwok
    # go build names a binary after its package's path without the major-version suffix.
    mv "$bin.tmp/server" "$bin.tmp/etcd"
    # kwok does nothing without Stages. These are the ones kwokctl uses, from the same kwok
    # release, minus node heartbeats and leases: no controller-manager watches them here, and
    # with thousands of nodes they would load the apiserver during throughput runs.
    local stages
    stages="$(go list -m -f '{{.Dir}}' sigs.k8s.io/kwok)/kustomize/stage"
    local stage
    for stage in node/fast/node-initialize pod/fast/pod-ready pod/fast/pod-complete \
        pod/fast/pod-delete; do
        echo "---"
        cat "$stages/$stage.yaml"
    done >"$bin.tmp/kwok-stages.yaml"
    mkdir -p "$bin"
    for b in "${binaries[@]}" kwok-stages.yaml; do mv -f "$bin.tmp/$b" "$bin/$b"; done
    rmdir "$bin.tmp"
}

build_reference_scheduler() {
    local wrapper="$dir/src-reference"
    write_kubernetes_wrapper "$wrapper" "$REFERENCE_SCHEDULER_VERSION"
    cd "$wrapper"
    log "resolving k8s.io/kubernetes@$REFERENCE_SCHEDULER_VERSION for the reference scheduler"
    go get "k8s.io/kubernetes@$REFERENCE_SCHEDULER_VERSION"
    local version_pkg=k8s.io/component-base/version
    log "compiling kube-scheduler $REFERENCE_SCHEDULER_VERSION"
    go build -ldflags "-s -w -X $version_pkg.gitVersion=$REFERENCE_SCHEDULER_VERSION" \
        -o "$bin/kube-scheduler-v1.22" k8s.io/kubernetes/cmd/kube-scheduler
}

start=$SECONDS
log "building into $bin ($(go version))"
missing=0
for b in "${binaries[@]}"; do [[ -x "$bin/$b" ]] || missing=1; done
[[ -f "$bin/kwok-stages.yaml" ]] || missing=1
if ((missing)); then build_main; fi
if ((with_reference)) && [[ ! -x "$bin/kube-scheduler-v1.22" ]]; then build_reference_scheduler; fi
{
    echo "kubernetes $K8S_VERSION"
    echo "etcd $ETCD_VERSION"
    echo "kwok $KWOK_VERSION"
    go version
} >"$stamp"
log "done in $((SECONDS - start))s"
echo "$bin"
