#!/usr/bin/env bash
# Builds kcp, kcp-front-proxy, cache-server and sharded-test-server at the
# version pinned in go.mod into $1 (default: ../../bin). Does nothing when the
# binaries there were already built from this go.mod, go.sum and script.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=$(mkdir -p "${1:-$here/../../bin}" && cd "${1:-$here/../../bin}" && pwd)
cd "$here"

kcp_version=$(awk '$1=="require" && $2=="github.com/kcp-dev/kcp" {print $3}' go.mod)
stamp_want=$(cat go.mod go.sum build.sh patches/* | sha256sum | cut -d' ' -f1)
stamp_file="$out/.kcp-build-stamp"
cmds=(kcp kcp-front-proxy cache-server sharded-test-server)
up_to_date=true
for c in "${cmds[@]}"; do [ -x "$out/$c" ] || up_to_date=false; done
if $up_to_date && [ "$(cat "$stamp_file" 2>/dev/null)" = "$stamp_want" ]; then
  echo "kcp $kcp_version: binaries in $out are current"
  exit 0
fi
. "$here/../../.ci/build-cache.sh"
if build_cache_restore kcp "$stamp_want" "$out" "${cmds[@]}"; then
  echo "$stamp_want" > "$stamp_file"
  exit 0
fi

# A missing module should fail at once rather than fall back to GitHub.
export GOPROXY="${GOPROXY:-$(go env GOPROXY)}"; GOPROXY="${GOPROXY%%,direct}"
export GOFLAGS="${GOFLAGS:-} -mod=readonly"
# The checksum database does not know kcp's fork of Kubernetes; go.sum pins it.
export GONOSUMDB="github.com/kcp-dev/kubernetes,github.com/kcp-dev/embeddedetcd"

# kcp v0.32.3 needs virtual-workspace-framework v0.32, which the proxy does not
# serve: vendor v0.31.2 and backport the one function kcp uses from v0.32.
vwf=third_party/virtual-workspace-framework
if [ ! -f "$vwf/pkg/forwardingregistry/zz_validation_backport.go" ]; then
  tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
  dir=$(cd "$tmp" && GOFLAGS= go mod download -json github.com/kcp-dev/virtual-workspace-framework@v0.31.2 \
        | sed -n 's/^\s*"Dir": "\(.*\)",$/\1/p')
  rm -rf "$vwf"; mkdir -p third_party; cp -r "$dir" "$vwf"; chmod -R u+w "$vwf"
  cp patches/vwf_validation.go.txt "$vwf/pkg/forwardingregistry/zz_validation_backport.go"
fi

# kcp-front-proxy answers 502 to a write that races a shard closing an idle
# connection (both sides wait 90 s); patches/kcp_front_proxy_idle_conn.patch,
# kept ready for upstream, closes idle connections first. It is applied to a
# copy of kcp's module, which a copy of go.mod replaces kcp with.
go mod download github.com/kcp-dev/kcp
kcp_dir=$(go list -m -f '{{.Dir}}' github.com/kcp-dev/kcp)
work=$(mktemp -d); trap 'rm -rf "$work" ${tmp:+"$tmp"}' EXIT
cp -r "$kcp_dir" "$work/kcp"; chmod -R u+w "$work/kcp"
if command -v patch >/dev/null; then
  patch -s -p1 -d "$work/kcp" < "$here/patches/kcp_front_proxy_idle_conn.patch"
else
  (cd "$work/kcp" && GIT_CEILING_DIRECTORIES="$work" git apply -p1 "$here/patches/kcp_front_proxy_idle_conn.patch")
fi
cp go.mod go.sum "$work/"
go mod edit -replace "github.com/kcp-dev/kcp=$work/kcp" "$work/go.mod"

ldflags="-s -w"
for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags="$ldflags -X $p.gitVersion=v1.36.0+kcp-$kcp_version -X $p.gitMajor=1 -X $p.gitMinor=36 -X $p.gitTreeState=clean"
done
for c in "${cmds[@]}"; do
  start=$(date +%s)
  echo "building $c ($kcp_version) ..."
  go build -modfile "$work/go.mod" -ldflags "$ldflags" -o "$out/$c" "github.com/kcp-dev/kcp/cmd/$c"
  echo "built $c in $(( $(date +%s) - start ))s"
done
echo "$stamp_want" > "$stamp_file"
build_cache_save kcp "$stamp_want" "$out" "${cmds[@]}"
