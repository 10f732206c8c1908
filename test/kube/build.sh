#!/usr/bin/env bash
# Builds kube-apiserver and etcd at the versions pinned in apiserver/go.mod and
# etcd/go.mod into $1 (default: ../../bin). Does nothing when the binaries there
# were already built from these files.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=$(mkdir -p "${1:-$here/../../bin}" && cd "${1:-$here/../../bin}" && pwd)
cd "$here"

export GOPROXY="${GOPROXY:-$(go env GOPROXY)}"; GOPROXY="${GOPROXY%%,direct}"
export GOFLAGS="${GOFLAGS:-} -mod=readonly"

stamp_want=$(cat apiserver/go.mod apiserver/go.sum etcd/go.mod etcd/go.sum build.sh | sha256sum | cut -d' ' -f1)
stamp_file="$out/.kube-build-stamp"
if [ -x "$out/kube-apiserver" ] && [ -x "$out/etcd" ] && [ "$(cat "$stamp_file" 2>/dev/null)" = "$stamp_want" ]; then
  echo "kube-apiserver and etcd: binaries in $out are current"
  exit 0
fi
. "$here/../../.ci/build-cache.sh"
if build_cache_restore kube "$stamp_want" "$out" kube-apiserver etcd; then
  echo "$stamp_want" > "$stamp_file"
  exit 0
fi

kube_version=$(awk '$1=="k8s.io/kubernetes" {print $2} $1=="require" && $2=="k8s.io/kubernetes" {print $3}' apiserver/go.mod)
minor=$(echo "$kube_version" | cut -d. -f2)
# Without version ldflags clients that parse the server version (kubectl) fail.
ldflags="-s -w"
for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags="$ldflags -X $p.gitVersion=$kube_version -X $p.gitMajor=1 -X $p.gitMinor=$minor -X $p.gitTreeState=clean -X $p.buildDate=1970-01-01T00:00:00Z"
done
start=$(date +%s); echo "building kube-apiserver $kube_version ..."
(cd apiserver && go build -ldflags "$ldflags" -o "$out/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver)
echo "built kube-apiserver in $(( $(date +%s) - start ))s"
start=$(date +%s); echo "building etcd ..."
(cd etcd && go build -ldflags "-s -w" -o "$out/etcd" go.etcd.io/etcd/server/v3)
echo "built etcd in $(( $(date +%s) - start ))s"
echo "$stamp_want" > "$stamp_file"
build_cache_save kube "$stamp_want" "$out" kube-apiserver etcd
