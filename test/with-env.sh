#!/usr/bin/env bash
# Starts one shared kcp environment (two shards by default), runs the given
# command with DEPCTRL_TEST_ENV pointing at it, and stops the environment
# again, whatever the command's outcome. Tests attach to the shared
# environment instead of each starting kcp.
#
#   test/with-env.sh [-topology single-shard|two-shards] -- go test ./...
set -euo pipefail
topology=two-shards
if [ "${1:-}" = "-topology" ]; then topology=$2; shift 2; fi
[ "${1:-}" = "--" ] && shift

root=$(cd "$(dirname "$0")/.." && pwd)
dir=$(mktemp -d "${TMPDIR:-/tmp}/depctrl-env-XXXXXX")
log="$dir.log"
go build -o "$dir.bin" "$root/test/env/cmd/depctrl-testenv"
"$dir.bin" -topology "$topology" -dir "$dir" >"$log" 2>&1 &
pid=$!
cleanup() {
  kill -INT "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  rm -rf "$dir" "$dir.bin"
}
trap cleanup EXIT

start=$(date +%s)
until [ -f "$dir/env.json" ]; do
  if ! kill -0 "$pid" 2>/dev/null; then
    echo "the kcp environment failed to start:" >&2; cat "$log" >&2; exit 1
  fi
  sleep 1
done
echo "kcp $topology environment ready in $(( $(date +%s) - start ))s ($dir)"
export DEPCTRL_TEST_ENV="$dir/env.json"
"$@"
