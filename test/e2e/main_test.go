package e2e

import (
	"os"
	"testing"

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
