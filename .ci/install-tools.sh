#!/usr/bin/env bash
# Installs the tools the tests need into $1 (default .bin/): gotestsum and
# golangci-lint at pinned versions, and terraform when none is on PATH.
# Each is skipped when already present at the right version. With a second
# argument "terraform", only terraform (what the quickstart needs).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=$(mkdir -p "${1:-$root/.bin}" && cd "${1:-$root/.bin}" && pwd)
export PATH="$out:$PATH"
# A missing module should fail at once rather than fall back to GitHub.
export GOPROXY="${GOPROXY:-$(go env GOPROXY)}"; GOPROXY="${GOPROXY%%,direct}"

GOTESTSUM_VERSION=v1.13.0
GOLANGCI_LINT_VERSION=v2.15.0
TERRAFORM_VERSION=v1.11.4

only=${2:-}

if [ "$only" != terraform ] && ! "$out/gotestsum" --version 2>/dev/null | grep -q "${GOTESTSUM_VERSION#v}"; then
  echo "installing gotestsum $GOTESTSUM_VERSION"
  GOBIN="$out" go install "gotest.tools/gotestsum@$GOTESTSUM_VERSION"
fi

if [ "$only" != terraform ] && ! "$out/golangci-lint" version 2>/dev/null | grep -q "${GOLANGCI_LINT_VERSION#v}"; then
  echo "installing golangci-lint $GOLANGCI_LINT_VERSION (takes a few minutes on a cold cache)"
  GOBIN="$out" go install "github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$GOLANGCI_LINT_VERSION"
fi

if command -v terraform >/dev/null 2>&1; then
  echo "terraform: $(terraform version | head -1) at $(command -v terraform)"
  exit 0
fi

# No terraform on this machine, and neither `go install` nor a package
# manager can provide one offline: build terraform from its module source
# with the few edits that make it buildable outside its own repository.
echo "terraform not found: building terraform $TERRAFORM_VERSION from source (about 10 minutes)"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
src=$(cd "$tmp" && GOFLAGS= go mod download -json "github.com/hashicorp/terraform@$TERRAFORM_VERSION" \
      | sed -n 's/^\s*"Dir": "\(.*\)",$/\1/p')
cp -r "$src" "$tmp/terraform"; chmod -R u+w "$tmp/terraform"
cd "$tmp/terraform"
# Go >= 1.24 rejects this godebug setting.
sed -i '/^godebug tlskyber=0/d' go.mod
# The nested remote-state backend modules are neither in the module zip nor
# on the proxy; local state is all the tests use.
sed -i -E '/internal\/(backend\/remote-state\/[a-z]+|legacy)/d' go.mod
for b in azure consul cos gcs kubernetes oss pg s3; do
  sed -i -E "/backend\/remote-state\/$b\"\$/d" internal/backend/init/init.go
done
for key in azurerm consul cos gcs kubernetes oss pg s3; do
  sed -i -E "/^\s*\"$key\": +func\(\)/d" internal/backend/init/init.go
done
GOFLAGS=-mod=mod CGO_ENABLED=0 go build -trimpath \
  -ldflags "-s -w -X github.com/hashicorp/terraform/version.dev=no" -o "$out/terraform" .
echo "built $("$out/terraform" version | head -1)"
