#!/usr/bin/env bash
# Runs, on the shared kcp environment test/with-env.sh started, what make
# testacc and make testacc-matrix run one after the other, as jobs at once:
#
#   - the integration tests: every Go package but the provider's, with the
#     end-to-end tests split over two processes (slowest, below);
#   - the provider's acceptance tests: all of them with the default
#     terraform, and beside it the subset MATRIX_TESTS with each CLI given.
#
# Most of these tests' time is spent waiting (for a controller to notice a
# change, a timeout to pass, kcp to apply a configuration), not computing:
# with the jobs side by side, the step takes about as long as the longest
# job rather than the sum. Each job writes its own log, printed whole when
# every job has ended (gotestsum names the package on every line); each
# runs to its end whatever the others do, and the script fails when any
# failed.
#
#   test/acceptance.sh -timeout 60m -matrix '<regexp>' -- <cli>...
set -uo pipefail
timeout=60m
matrix=
while [ $# -gt 0 ]; do
  case $1 in
    -timeout) timeout=$2; shift 2 ;;
    -matrix) matrix=$2; shift 2 ;;
    --) shift; break ;;
    *) echo "acceptance.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
clis=("$@")
: "${DEPCTRL_TEST_ENV:?run under test/with-env.sh}"
cd "$(dirname "$0")/.."

# slowest names the end-to-end tests that take longest, by measured time
# (the README's figures): they run in one process and every other test in
# another, so that both take about as long. A test not named here, a new
# one too, runs in the other.
slowest='^(TestControllerPartitionedFromAShard|TestInvariantUnderLoad|TestWebhookReplicaCutOffFromTheRules|TestControllerStalledFromAShard|TestResolveGrantRemoved|TestSettled|TestDeferredDeletion)$'

logs=$(mktemp -d "${TMPDIR:-/tmp}/depctrl-acceptance-XXXXXX")
trap 'rm -rf "$logs"' EXIT
names=()
pids=()

# job NAME CLI [GO TEST ARGS...] starts go test under gotestsum with CLI as
# the acceptance tests' terraform, logging to its own file.
job() {
  local name=$1 cli=$2 host=
  shift 2
  case $cli in *tofu*) host=registry.opentofu.org ;; esac
  (
    start=$(date +%s)
    echo "==> $name: $($cli version | head -1)"
    TF_ACC=1 TF_ACC_TERRAFORM_PATH=$cli TF_ACC_PROVIDER_HOST=$host \
      gotestsum --format testname -- -count=1 -timeout "$timeout" "$@"
    rc=$?
    echo "==> $name: $(( $(date +%s) - start ))s, exit $rc"
    exit $rc
  ) >"$logs/${#names[@]}.log" 2>&1 &
  names+=("$name")
  pids+=($!)
}

terraform=$(command -v terraform)
# shellcheck disable=SC2046 # one package per word
job "integration tests but the slowest end-to-end tests" "$terraform" -skip "$slowest" \
  $(go list ./... | grep -v -e /test/env -e '/provider$')
job "the slowest end-to-end tests" "$terraform" -run "$slowest" ./test/e2e/
job "the provider's acceptance tests" "$terraform" ./provider/
for cli in "${clis[@]}"; do
  job "the acceptance subset with $(basename "$cli")" "$cli" -run "$matrix" ./provider/
done

status=0
for i in "${!pids[@]}"; do
  wait "${pids[$i]}" || status=1
done
for i in "${!names[@]}"; do
  echo
  cat "$logs/$i.log"
done
echo
for i in "${!names[@]}"; do
  tail -1 "$logs/$i.log"
done
exit $status
