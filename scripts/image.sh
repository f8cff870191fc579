#!/usr/bin/env bash
# Builds Berth's container image: an OCI image FROM scratch holding one file, a static,
# stripped /berth. No base image is pulled and no container tool is needed: the layer tar,
# the config, the manifest and index.json are written here with tar, gzip and sha256sum.
#
# Usage: scripts/image.sh [--binary ARCH=PATH]...
#   Prints progress on stderr and the path of the OCI archive on stdout; beside it are the
#   same image as an OCI layout directory (`oci/`) and each binary (`amd64/berth`,
#   `arm64/berth`). Push the archive or the layout with skopeo:
#     skopeo copy oci-archive:PATH docker://REGISTRY/berth:TAG
#   Without --binary: builds the binary for this machine (x86_64 or aarch64) for the musl
#   target, statically linked (musl-gcc from Debian's musl-tools compiles mimalloc's and
#   ring's C), with Cargo.toml's `image` profile (release, no debug info, stripped).
#   With --binary (the CI workflow's multi-arch assembly): uses those prebuilt static
#   binaries (ARCH is amd64 or arm64), one manifest each under one image index.
#
# The archive is cached under $BERTH_IMAGE_CACHE (default $HOME/.cache/berth/image), keyed by
# the inputs (Cargo.toml, Cargo.lock, crates/, policies/, this script, rustc's version, the
# architecture, the revision label), so a second run only checks a stamp file. The build has
# its own target directory, $HOME/.cache/berth/image-target (the musl artefacts share nothing
# with the debug build's).
#
# What the image holds, and why nothing else:
# - /berth, owned by root, mode 0755; the process runs as 65532:65532 (numeric: there is no
#   /etc/passwd), entrypoint /berth, default arguments those of deploy/'s Deployment.
# - `berth run` writes no file (wasmtime compiles plugins in memory and keeps no cache; only
#   `simulate --report` and `bench` write, where told), so the root filesystem can be
#   read-only and needs no /tmp.
# - No CA bundle: in a cluster the API client trusts the service account's CA
#   (/var/run/secrets/kubernetes.io/serviceaccount/ca.crt), and a kubeconfig carries its own.
#   The only use of system roots is an HTTPS extender whose tlsConfig gives no caFile/caData:
#   give it one, or mount a bundle and set SSL_CERT_FILE (rustls-native-certs reads it).
# - No OpenSSL: the API client and the extender client use rustls with ring.
#
# Environment:
#   BERTH_IMAGE_CACHE   cache root for the archives (default $HOME/.cache/berth/image)
#   BERTH_IMAGE_SOURCE  the org.opencontainers.image.source label (default: the GitHub
#                       repository in CI, else git's origin URL, else "unknown")
#   SOURCE_DATE_EPOCH   the image's creation time (default: the commit's time, else 0)
set -euo pipefail
cd "$(dirname "$0")/.."

cache_root="${BERTH_IMAGE_CACHE:-$HOME/.cache/berth/image}"
target_dir="$HOME/.cache/berth/image-target"
log() { echo "image.sh: $*" >&2; }

binaries=()
while (($#)); do
  case "$1" in
    --binary) binaries+=("${2:?--binary needs ARCH=PATH}"); shift 2 ;;
    --binary=*) binaries+=("${1#--binary=}"); shift ;;
    *) echo "usage: scripts/image.sh [--binary ARCH=PATH]..." >&2; exit 2 ;;
  esac
done

version="$(sed -n '/^\[workspace.package\]/,/^\[/s/^version = "\(.*\)"/\1/p' Cargo.toml)"
[[ -n "$version" ]] || { log "no version in Cargo.toml's [workspace.package]"; exit 1; }
revision=unknown
if git rev-parse --verify -q HEAD >/dev/null 2>&1; then
  revision="$(git rev-parse HEAD)"
  # Uncommitted changes to the inputs: the image is not that commit's.
  if [[ -n "$(git status --porcelain -- Cargo.toml Cargo.lock crates policies 2>/dev/null)" ]]; then
    revision="$revision-dirty"
  fi
fi
source_url="${BERTH_IMAGE_SOURCE:-}"
if [[ -z "$source_url" && -n "${GITHUB_REPOSITORY:-}" ]]; then
  source_url="${GITHUB_SERVER_URL:-https://github.com}/$GITHUB_REPOSITORY"
fi
if [[ -z "$source_url" ]]; then
  # Without any user:password@ an origin URL may hold.
  source_url="$(git remote get-url origin 2>/dev/null | sed -E 's#^([a-z+]+://)[^@/]*@#\1#' || true)"
fi
source_url="${source_url:-unknown}"
created_epoch="${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || echo 0)}"
created="$(date -u -d "@$created_epoch" +%Y-%m-%dT%H:%M:%SZ)"

goarch() {
  case "$1" in
    x86_64 | amd64) echo amd64 ;;
    aarch64 | arm64) echo arm64 ;;
    *) log "unsupported architecture $1"; exit 1 ;;
  esac
}
rust_target() {
  case "$1" in
    amd64) echo x86_64-unknown-linux-musl ;;
    arm64) echo aarch64-unknown-linux-musl ;;
  esac
}
sha() { sha256sum "$1" | cut -d' ' -f1; }
size() { stat -c %s "$1"; }

# The cache key: everything the image is made from.
key_input() {
  echo "script $(sha scripts/image.sh)"
  echo "version $version revision $revision source $source_url created $created"
  if ((${#binaries[@]})); then
    for pair in "${binaries[@]}"; do
      echo "binary ${pair%%=*} $(sha "${pair#*=}")"
    done
  else
    echo "arch $(goarch "$(uname -m)")"
    rustc -vV
    # Tracked and untracked (not ignored) files, so uncommitted edits count.
    if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
      git ls-files -z -co --exclude-standard -- Cargo.toml Cargo.lock crates policies
    else
      find Cargo.toml Cargo.lock crates policies -type f -not -path '*/target/*' -print0
    fi | sort -z | xargs -0 sha256sum
  fi
}
key="$(key_input | sha256sum | cut -c1-16)"
out="$cache_root/$key"
if [[ -f "$out/stamp" ]]; then
  log "cached: $out (inputs unchanged)"
  echo "$out/berth-oci.tar"
  exit 0
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/berth-image.XXXXXX")"
trap 'rm -rf "$work"' EXIT

# arch=path pairs of the binaries that go in.
if ((${#binaries[@]} == 0)); then
  arch="$(goarch "$(uname -m)")"
  target="$(rust_target "$arch")"
  if ! rustup target list --installed 2>/dev/null | grep -qx "$target"; then
    log "adding the Rust target $target"
    rustup target add "$target" >&2
  fi
  if ! command -v musl-gcc >/dev/null; then
    log "musl-gcc is missing: installing Debian's musl-tools"
    if [[ $EUID -eq 0 ]]; then
      apt-get install -y -qq musl-tools >&2 || { apt-get update -qq >&2 && apt-get install -y -qq musl-tools >&2; }
    else
      sudo apt-get install -y -qq musl-tools >&2
    fi
  fi
  log "building berth for $target (profile image: release, stripped; the first build takes a while)"
  start=$SECONDS
  target_env="$(echo "$target" | tr - _)"
  env "CC_$target_env=musl-gcc" CARGO_TARGET_DIR="$target_dir" \
    cargo build --locked --profile image --target "$target" -p berth >&2
  log "cargo build took $((SECONDS - start)) s"
  binaries=("$arch=$target_dir/$target/image/berth")
fi

layout="$work/oci"
mkdir -p "$layout/blobs/sha256"
# Writes stdin as a blob and prints its descriptor's digest and size.
put_blob() {
  local tmp="$work/blob"
  cat >"$tmp"
  local digest
  digest="$(sha "$tmp")"
  mv "$tmp" "$layout/blobs/sha256/$digest"
  echo "sha256:$digest $(size "$layout/blobs/sha256/$digest")"
}

labels="\"org.opencontainers.image.title\":\"berth\",\"org.opencontainers.image.version\":\"$version\",\"org.opencontainers.image.source\":\"$source_url\",\"org.opencontainers.image.revision\":\"$revision\",\"org.opencontainers.image.licenses\":\"Apache-2.0\",\"org.opencontainers.image.created\":\"$created\""
manifests=()
for pair in "${binaries[@]}"; do
  arch="${pair%%=*}"
  binary="${pair#*=}"
  [[ "$arch" == amd64 || "$arch" == arm64 ]] || { log "--binary $pair: ARCH is amd64 or arm64"; exit 1; }
  [[ -f "$binary" ]] || { log "no binary at $binary"; exit 1; }
  # Static: no program interpreter (ld.so) in the ELF's program headers. (The image test
  # checks this too, without readelf.)
  if command -v readelf >/dev/null \
    && LC_ALL=C readelf -lW "$binary" | grep -q 'Requesting program interpreter'; then
    log "$binary is dynamically linked; the image has no libc for it"
    exit 1
  fi
  log "$arch: $binary, $(size "$binary") bytes"

  # The layer: /berth only, root-owned, same bytes for the same binary.
  rootfs="$work/rootfs-$arch"
  mkdir -p "$rootfs"
  install -m 0755 "$binary" "$rootfs/berth"
  tar --create --file="$work/layer.tar" --directory="$rootfs" --sort=name --format=posix \
    --pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime \
    --owner=0 --group=0 --numeric-owner --mtime="@$created_epoch" berth
  diff_id="sha256:$(sha "$work/layer.tar")"
  read -r layer_digest layer_size < <(gzip -9 -n -c "$work/layer.tar" | put_blob)

  read -r config_digest config_size < <(printf '%s' \
    "{\"created\":\"$created\",\"architecture\":\"$arch\",\"os\":\"linux\",\"config\":{\"User\":\"65532:65532\",\"Entrypoint\":[\"/berth\"],\"Cmd\":[\"run\",\"--policy=/etc/berth/policy.json\"],\"Labels\":{$labels}},\"rootfs\":{\"type\":\"layers\",\"diff_ids\":[\"$diff_id\"]},\"history\":[{\"created\":\"$created\",\"created_by\":\"scripts/image.sh: /berth, a static binary\"}]}" \
    | put_blob)
  read -r manifest_digest manifest_size < <(printf '%s' \
    "{\"schemaVersion\":2,\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\",\"config\":{\"mediaType\":\"application/vnd.oci.image.config.v1+json\",\"digest\":\"$config_digest\",\"size\":$config_size},\"layers\":[{\"mediaType\":\"application/vnd.oci.image.layer.v1.tar+gzip\",\"digest\":\"$layer_digest\",\"size\":$layer_size}],\"annotations\":{$labels}}" \
    | put_blob)
  manifests+=("{\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\",\"digest\":\"$manifest_digest\",\"size\":$manifest_size,\"platform\":{\"architecture\":\"$arch\",\"os\":\"linux\"}}")
  rm "$work/layer.tar"
done

ref="\"annotations\":{\"org.opencontainers.image.ref.name\":\"$version\"}"
if ((${#manifests[@]} == 1)); then
  top="${manifests[0]%\}},$ref}"
else
  # Several architectures: index.json points at one image index listing them, which
  # `skopeo copy --all` pushes as a multi-arch image.
  list="$(IFS=,; echo "${manifests[*]}")"
  read -r list_digest list_size < <(printf '%s' \
    "{\"schemaVersion\":2,\"mediaType\":\"application/vnd.oci.image.index.v1+json\",\"manifests\":[$list],\"annotations\":{$labels}}" \
    | put_blob)
  top="{\"mediaType\":\"application/vnd.oci.image.index.v1+json\",\"digest\":\"$list_digest\",\"size\":$list_size,$ref}"
fi
printf '%s' '{"imageLayoutVersion":"1.0.0"}' >"$layout/oci-layout"
printf '%s' "{\"schemaVersion\":2,\"mediaType\":\"application/vnd.oci.image.index.v1+json\",\"manifests\":[$top]}" >"$layout/index.json"

tar --create --file="$work/berth-oci.tar" --directory="$layout" --sort=name --format=posix \
  --pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime \
  --owner=0 --group=0 --numeric-owner --mtime="@$created_epoch" oci-layout index.json blobs

mkdir -p "$cache_root"
rm -rf "$out"
mkdir "$out.tmp.$$"
mv "$layout" "$work/berth-oci.tar" "$out.tmp.$$/"
# The binaries too (ARCH/berth): deploy/Dockerfile can take them (--build-context binary=DIR),
# and the CI workflow hands them from the per-architecture jobs to the assembly.
for pair in "${binaries[@]}"; do
  mkdir "$out.tmp.$$/${pair%%=*}"
  cp "${pair#*=}" "$out.tmp.$$/${pair%%=*}/berth"
done
{
  echo "created by scripts/image.sh $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  for pair in "${binaries[@]}"; do echo "binary ${pair%%=*} $(size "${pair#*=}") bytes"; done
  echo "archive $(size "$out.tmp.$$/berth-oci.tar") bytes"
} >"$out.tmp.$$/stamp"
mv "$out.tmp.$$" "$out"
log "image: $out (archive $(size "$out/berth-oci.tar") bytes; layout in $out/oci)"
# Keep the five newest images.
find "$cache_root" -mindepth 1 -maxdepth 1 -type d -printf '%T@ %p\n' | sort -rn | tail -n +6 \
  | cut -d' ' -f2- | xargs -r rm -rf
echo "$out/berth-oci.tar"
