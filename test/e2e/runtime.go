package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/depctrl/terraform-provider-depctrl/test/check"
	"github.com/depctrl/terraform-provider-depctrl/test/env"
	"github.com/depctrl/terraform-provider-depctrl/test/runtimetest"
)

// testContext bounds a test's work by timeout. It ends, at the latest, when
// the test's body returns (before its cleanups run), as a deferred cancel
// would.
func testContext(t *testing.T, timeout time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	t.Cleanup(cancel)
	return ctx
}

// install sets up a fresh topology on e (see setupTopology for options) and
// starts the runtime for its dep-ctrl workspace: the installation most
// tests start from. The topology's Env is e.
func install(ctx context.Context, t *testing.T, e *env.Env, options ...topologyOption) (*Topology, *runtimetest.Runtime) {
	t.Helper()
	top := setupTopology(ctx, t, e, options...)
	return top, runtimetest.Start(ctx, t, e, top.DepCtrl.Path)
}

// ownSingleShard starts a single-shard kcp for this test alone, whatever
// environment the package's other tests share (usually two shards), and
// stops it when the test ends.
func ownSingleShard(ctx context.Context, t *testing.T) *env.Env {
	t.Helper()
	start := time.Now()
	e, err := env.StartSingleShard(ctx, env.Options{})
	check.Must(t, err)
	t.Logf("own single-shard kcp ready in %s", time.Since(start).Round(time.Millisecond))
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(e.TailLogs(40))
		}
		if err := e.Stop(); err != nil {
			t.Errorf("stopping kcp: %v", err)
		}
	})
	return e
}
