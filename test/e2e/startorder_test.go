package e2e

import (
	"testing"
	"time"

	"github.com/depctrl/terraform-provider-depctrl/test/check"
	"github.com/depctrl/terraform-provider-depctrl/test/env"
	"github.com/depctrl/terraform-provider-depctrl/test/fixtures"
	"github.com/depctrl/terraform-provider-depctrl/test/runtimetest"
)

// TestRuntimeBeforeBindings: the runtime deployed in the documented order,
// right after the dep-ctrl export and before any workspace binds it. The
// webhook becomes ready then; rules created once the providers bound the
// export are enforced for consumers on every shard, and a rule deleted
// later stops protecting, while a rule of the same name in another
// workspace goes on protecting. The webhook follows each shard's virtual
// workspace from its own watches, which retry until the shard serves the
// export: a watch set up once at start, while the export's virtual
// workspaces did not serve yet, would never deliver a rule.
func TestRuntimeBeforeBindings(t *testing.T) {
	ctx, e := integration(t, 10*time.Minute, env.TwoShards)
	top := setupTopology(ctx, t, e, beforeBindings(func(top *Topology) {
		start := time.Now()
		runtimetest.Start(ctx, t, e, top.DepCtrl.Path)
		t.Logf("webhook ready %s after it started, with no workspace bound to the export", time.Since(start).Round(time.Millisecond))
	}))

	// Two rules of one name in two workspaces are two rules.
	top.createRule(ctx, t, top.Compute, ruleObject("needs-vpc", fixtures.VirtualMachines, fixtures.VPCs, top.Network.Path, ".spec.vpcRef.name"))
	top.createRule(ctx, t, top.Network, ruleObject("needs-vpc", fixtures.Regions, fixtures.VPCs, top.Network.Path, ".spec.vpc"))
	t.Logf("rules Ready after %s and %s", top.waitReady(ctx, t, top.Compute, "needs-vpc").Round(time.Millisecond),
		top.waitReady(ctx, t, top.Network, "needs-vpc").Round(time.Millisecond))
	for _, c := range top.Consumers {
		top.vpcInUse(ctx, t, c)
		top.object(ctx, t, c, fixtures.VPCs, "vpc-2", map[string]interface{}{}, nil)
		top.object(ctx, t, c, fixtures.Regions, "region-2", map[string]interface{}{"vpc": "vpc-2"}, nil)
		top.expectDenied(ctx, t, c, fixtures.VPCs, "vpc-1", "still referenced by VirtualMachine/vm-1")
		top.expectDenied(ctx, t, c, fixtures.VPCs, "vpc-2", "still referenced by Region/region-2")
	}

	// The compute workspace's rule goes; the network workspace's, of the
	// same name, still protects.
	top.deleteRule(ctx, t, top.Compute, "needs-vpc")
	for _, c := range top.Consumers {
		check.Eventually(ctx, t, convergenceBound, "vpc-1 in "+c.Path+" to be deletable once its rule is gone", func() error {
			return top.remove(ctx, t, c, fixtures.VPCs, "vpc-1")
		})
		top.expectDenied(ctx, t, c, fixtures.VPCs, "vpc-2", "still referenced by Region/region-2")
	}
}
