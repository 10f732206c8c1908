package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/depctrl/terraform-provider-depctrl/test/check"
	"github.com/depctrl/terraform-provider-depctrl/test/env"
)

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
