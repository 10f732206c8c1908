#!/usr/bin/env bash
# Runs, on the shared kcp environment test/with-env.sh started, what make
# testacc and make testacc-matrix run one after the other, as two streams at
# once:
#
#   - the integration tests: every Go package but the provider's;
#   - the provider's acceptance tests: all of them with the default
#     terraform, then the subset MATRIX_TESTS with each CLI given.
#
# go test already runs two packages at a time, so the provider's tests
# always shared the kcp and the two cores with the integration tests; this
# keeps that overlap while the matrix runs too, so the step takes about as
# long as the longer stream rather than the sum. gotestsum names the package
# on every line it prints; each stream runs to its end whatever the other
# does, and the script fails when either failed.
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

integration() {
  local packages
  packages=$(go list ./... | grep -v -e /test/env -e '/provider$')
  # shellcheck disable=SC2086 # one package per word
  TF_ACC=1 TF_ACC_TERRAFORM_PATH=$(command -v terraform) \
    gotestsum --format testname -- -count=1 -timeout "$timeout" $packages
}

provider() {
  local status=0 start cli host
  start=$(date +%s)
  echo "==> $(terraform version | head -1): the provider's acceptance tests"
  TF_ACC=1 TF_ACC_TERRAFORM_PATH=$(command -v terraform) \
    gotestsum --format testname -- -count=1 -timeout "$timeout" ./provider/ || status=1
  echo "==> terraform: $(( $(date +%s) - start ))s"
  for cli in "${clis[@]}"; do
    start=$(date +%s)
    echo "==> $($cli version | head -1): the acceptance subset"
    host=
    case $cli in *tofu*) host=registry.opentofu.org ;; esac
    TF_ACC=1 TF_ACC_TERRAFORM_PATH=$cli TF_ACC_PROVIDER_HOST=$host \
      gotestsum --format testname -- -count=1 -timeout "$timeout" -run "$matrix" ./provider/ || status=1
    echo "==> $(basename "$cli"): $(( $(date +%s) - start ))s"
  done
  return $status
}

provider &
provider_pid=$!
status=0
integration || status=1
wait "$provider_pid" || status=1
exit $status
