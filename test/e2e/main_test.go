package e2e

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/depctrl/terraform-provider-depctrl/test/env"
)

func TestMain(m *testing.M) {
	os.Exit(env.RunTests(m))
}

func requireIntegration(t *testing.T) {
	t.Helper()
	if os.Getenv("TF_ACC") == "" && os.Getenv("DEPCTRL_INTEGRATION") == "" {
		t.Skip("runs kcp and the runtime: set TF_ACC=1 or DEPCTRL_INTEGRATION=1")
	}
}

// integration begins an integration test: it skips t unless integration
// tests were asked for (requireIntegration), bounds the test's work by
// timeout (testContext) and returns the environment of at least topology
// that the package's tests share (env.ForTest).
func integration(t *testing.T, timeout time.Duration, topology env.Topology) (context.Context, *env.Env) {
	t.Helper()
	requireIntegration(t)
	return testContext(t, timeout), env.ForTest(t, topology)
}
