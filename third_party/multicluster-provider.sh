#!/usr/bin/env bash
# Recreates third_party/multicluster-provider: the packages of
# github.com/kcp-dev/multicluster-provider that depctrl builds, at the
# version below, from the Go module proxy, with multicluster-provider.patch
# applied. Run it after changing the version or the patch; with neither
# changed, git diff shows nothing afterwards.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
module=github.com/kcp-dev/multicluster-provider
version=v0.8.0

tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
# Outside this module, whose go.mod replaces the one downloaded here.
src=$(cd "$tmp" && GOFLAGS= go mod download -json "$module@$version" | sed -n 's/^\s*"Dir": "\(.*\)",$/\1/p')
[ -n "$src" ] || { echo "could not download $module@$version" >&2; exit 1; }

out="$here/multicluster-provider"
rm -rf "$out"
for p in LICENSE go.mod go.sum apiexport pkg/cache pkg/events pkg/handlers pkg/provider; do
  mkdir -p "$out/$(dirname "$p")"
  cp -r "$src/$p" "$out/$p"
done
chmod -R u+w "$out"
# The module requires its client submodule through a replace by ./client,
# which the module's zip does not hold and none of these packages imports.
(cd "$out" && go mod edit -dropreplace="$module/client" -droprequire="$module/client")
patch -s -p1 -d "$out" < "$here/multicluster-provider.patch"
