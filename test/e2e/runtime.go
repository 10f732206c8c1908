package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/depctrl/terraform-provider-depctrl/test/env"
	"github.com/depctrl/terraform-provider-depctrl/test/runtimetest"
)

// startRuntime starts the webhook and the controller against the dep-ctrl
// workspace at depCtrlPath and waits until the webhook is ready.
func startRuntime(ctx context.Context, t *testing.T, e *env.Env, depCtrlPath string) *runtimetest.Runtime {
	t.Helper()
	return runtimetest.Start(ctx, t, e, depCtrlPath)
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// eventually polls check until it returns nil or timeout passes.
func eventually(ctx context.Context, t *testing.T, timeout time.Duration, what string, check func() error) {
	t.Helper()
	runtimetest.Eventually(ctx, t, timeout, what, check)
}
