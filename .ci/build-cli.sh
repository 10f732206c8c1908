#!/usr/bin/env bash
# Builds a Terraform or OpenTofu CLI at an exact version from its source on
# the Go module proxy into OUTDIR as terraform-VERSION or tofu-VERSION, e.g.
#
#   .ci/build-cli.sh terraform 1.16.4 bin/   # -> bin/terraform-1.16.4
#   .ci/build-cli.sh tofu 1.12.6 bin/        # -> bin/tofu-1.12.6
#
# Does nothing when the binary there was already built by this script for
# this version (a stamp beside it records the script's hash). Neither CLI can
# be installed with `go install` (their go.mod files have replace directives),
# so each is built as the main module from a copy of its module source:
#
# - OpenTofu needs no change: its one replace (hcl/v2 -> opentofu/hcl/v2) is
#   served by the proxy.
# - Terraform's go.mod requires and replaces nested modules (the remote-state
#   backends azure, consul, cos, gcs, kubernetes, oci, oss, pg, s3, and
#   internal/legacy) that are neither in its module zip nor on the proxy; this
#   drops them and their registrations in internal/backend/init/init.go, their
#   only non-test importer. local, remote, cloud, http and inmem stay. Older
#   versions (1.11) also carry `godebug tlskyber=0`, which Go >= 1.24 rejects.
#
# A cold build takes about ten minutes on two cores; a warm Go build cache
# turns it into a relink of seconds.
set -euo pipefail
usage="usage: build-cli.sh terraform|tofu VERSION OUTDIR"
cli=${1:?$usage}; version=${2:?$usage}; version=${version#v}
out=$(mkdir -p "${3:?$usage}" && cd "$3" && pwd)
case $cli in
  terraform) module=github.com/hashicorp/terraform; pkg=. ;;
  tofu) module=github.com/opentofu/opentofu; pkg=./cmd/tofu ;;
  *) echo "$usage" >&2; exit 2 ;;
esac
bin="$out/$cli-$version"
stamp_file="$out/.$cli-$version-build-stamp"
stamp_want=$(cat "$0" | sha256sum | cut -d' ' -f1)
if [ -x "$bin" ] && [ "$(cat "$stamp_file" 2>/dev/null)" = "$stamp_want" ]; then
  echo "$cli $version: $bin is current"
  exit 0
fi
. "$(dirname "$0")/build-cache.sh"
if build_cache_restore "$cli-$version" "$stamp_want" "$out" "$cli-$version"; then
  echo "$stamp_want" > "$stamp_file"
  exit 0
fi

# A missing module should fail at once rather than fall back to GitHub.
export GOPROXY="${GOPROXY:-$(go env GOPROXY)}"; GOPROXY="${GOPROXY%%,direct}"
start=$(date +%s)
echo "building $cli $version from $module@v$version (about ten minutes on a cold Go build cache)"
tmp=$(mktemp -d); trap 'chmod -R u+w "$tmp"; rm -rf "$tmp"' EXIT
info=$(cd "$tmp" && GOFLAGS= go mod download -json "$module@v$version")
if grep -q '"Error"' <<<"$info"; then echo "$info" >&2; exit 1; fi
src=$(sed -n 's/^\s*"Dir": "\(.*\)",$/\1/p' <<<"$info")
cp -r "$src" "$tmp/src"; chmod -R u+w "$tmp/src"
cd "$tmp/src"

if [ "$cli" = terraform ]; then
  sed -i '/^godebug tlskyber=0/d' go.mod
  sed -i -E '/internal\/(backend\/remote-state\/[a-z0-9]+|legacy)[ \t]/d' go.mod
  init=internal/backend/init/init.go
  for b in azure consul cos gcs kubernetes oci oss pg s3; do
    sed -i -E "/internal\/backend\/remote-state\/$b\"\$/d" $init
  done
  for key in azurerm consul cos gcs kubernetes oci oss pg s3; do
    sed -i -E "/^\s*\"$key\": +func\(\)/d" $init
  done
  if grep -nE 'remote-state/(azure|consul|cos|gcs|kubernetes|oci|oss|pg|s3)"' $init go.mod; then
    echo "build-cli.sh: a dropped backend is still referenced (above); adapt this script to $cli $version" >&2
    exit 1
  fi
fi

# version.dev=no: without it the binary reports a -dev pre-release, which
# terraform-plugin-testing's version checks treat as below the release.
GOFLAGS=-mod=mod CGO_ENABLED=0 go build -trimpath \
  -ldflags "-s -w -X $module/version.dev=no" -o "$bin.tmp" "$pkg"
# An empty CLI configuration: a missing one makes both warn before the version.
reported=$(TF_CLI_CONFIG_FILE=/dev/null "$bin.tmp" version | grep -m1 -E '^(Terraform|OpenTofu) v' || true)
[ "${reported#* }" = "v$version" ] || { echo "build-cli.sh: $bin.tmp reports '$reported', not v$version" >&2; exit 1; }
mv "$bin.tmp" "$bin"
echo "$stamp_want" > "$stamp_file"
echo "built $reported into $bin in $(( $(date +%s) - start ))s"
build_cache_save "$cli-$version" "$stamp_want" "$out" "$cli-$version"
