package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/depctrl/terraform-provider-depctrl/test/env"
)

// deferredSize is the tenant TestBenchmarkDeferred tears down: issue "What
// users of deletion protection ask for first" asks for 1 000 VMs and 100
// VPCs; deferTeardown makes half of them in each of its two namespaces.
var deferredSize = tenantSize{vpcs: 50, vmsPerVPC: 10}

// targetDeferredP99 is that target for how long after its last
// dependent a deferred deletion is carried out.
const targetDeferredP99 = 2 * time.Second

// deferredResult is what TestBenchmarkDeferred measured.
type deferredResult struct {
	deferredTeardown
}

// TestBenchmarkDeferred measures deferred deletion: a tenant of 100 VPCs
// and 1 000 VMs, in namespaces that opt in, torn down in random order (one
// namespace object by object, eight clients each asking once, the other by
// deleting the namespace), and how long after its last VM each deferred VPC
// went. It writes its section to the test log. Run it with make
// bench-deferred.
func TestBenchmarkDeferred(t *testing.T) {
	benchOnly(t, "DEPCTRL_BENCH_DEFERRED", "run it with make bench-deferred")
	ctx := testContext(t, 30*time.Minute)
	t.Log("\n" + measureDeferred(ctx, t, env.ForTest(t, env.TwoShards)).section())
}

// measureDeferred tears a tenant down on a topology and runtime of its own
// in e, in a consumer on the first shard.
func measureDeferred(ctx context.Context, t *testing.T, e *env.Env) deferredResult {
	t.Helper()
	top, rt := install(ctx, t, e)
	defer func() {
		rt.StopController(t)
		rt.StopWebhook(t)
	}()
	top.protectVPCs(ctx, t)
	grantDeferral(ctx, t, e)
	rt.StopWebhook(t)
	rt.StartWebhook(ctx, t, "--deferred-deletion")
	return deferredResult{deferredTeardown: deferTeardown(ctx, t, top, top.Consumers[0], deferredSize)}
}

// deferredView is the section's figures.
type deferredView struct {
	VPCs, VMs                   int
	Deferred, ByNamespace       int
	P50, P99, NsP50, NsP99, Max string
	Took                        string
	Verdict                     string
}

func (r deferredResult) view() deferredView {
	secs := func(d time.Duration) string { return fmt.Sprintf("%.2f", d.Seconds()) }
	v := deferredView{
		VPCs: 2 * deferredSize.vpcs, VMs: 2 * deferredSize.vpcs * deferredSize.vmsPerVPC,
		Deferred: len(r.after), ByNamespace: len(r.afterNamespace),
		P50: secs(r.after.pct(.5)), P99: secs(r.after.pct(.99)), Max: secs(r.after.pct(1)),
		NsP50: "–", NsP99: "–",
		Took:    r.took.Round(time.Second).String(),
		Verdict: met(r.after.pct(.99), targetDeferredP99),
	}
	if len(r.afterNamespace) > 0 {
		v.NsP50, v.NsP99 = secs(r.afterNamespace.pct(.5)), secs(r.afterNamespace.pct(.99))
	}
	return v
}

// section renders the result as the benchmarks guide's section.
func (r deferredResult) section() string {
	var b strings.Builder
	if err := benchmarkPageTemplate.ExecuteTemplate(&b, "deferred", r.view()); err != nil {
		return err.Error()
	}
	return b.String()
}
