package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/depctrl/terraform-provider-depctrl/test/check"
	"github.com/depctrl/terraform-provider-depctrl/test/fixtures"
)

// restartBound is how long after a restarted kcp is ready again the
// runtime may take to enforce and follow rules again; measured and logged.
const restartBound = time.Minute

// TestKCPRestart restarts kcp under the running controller and webhook, on
// the same data, as an operator upgrading or recovering it would. Nothing
// referenced may be deleted meanwhile; afterwards protection is enforced
// again and rule changes made after the restart are followed, each within
// restartBound; both processes ride it out without a restart of their own.
// It starts a single-shard kcp of its own, so that restarting it disturbs
// no other test.
func TestKCPRestart(t *testing.T) {
	requireIntegration(t)
	ctx := testContext(t, 10*time.Minute)
	e := ownSingleShard(ctx, t)
	top, rt := install(ctx, t, e)
	top.protectVPCs(ctx, t)
	c := top.Consumers[0]
	top.vpcInUse(ctx, t, c)
	top.expectDenied(ctx, t, c, fixtures.VPCs, "vpc-1", "still referenced by VirtualMachine/vm-1")

	start := time.Now()
	check.Must(t, e.Restart(ctx))
	ready := time.Now()
	t.Logf("kcp stopped and ready again after %s", ready.Sub(start).Round(time.Millisecond))

	check.Eventually(ctx, t, restartBound, "protection after the restart", func() error {
		if err := top.decidedDenial(ctx, t, c, fixtures.VPCs, "vpc-1", "still referenced by VirtualMachine/vm-1"); err != nil {
			return err
		}
		top.object(ctx, t, c, fixtures.VPCs, "vpc-free", map[string]interface{}{}, nil)
		return top.remove(ctx, t, c, fixtures.VPCs, "vpc-free")
	})
	t.Logf("protection enforced %s after kcp was ready (bound %s)", time.Since(ready).Round(time.Millisecond), restartBound)

	// Rule changes after the restart: a new rule is installed and
	// enforced, a deleted one stops protecting.
	changed := time.Now()
	top.createRule(ctx, t, top.Compute, ruleObject("db-needs-fw", fixtures.ManagedDBs, fixtures.FirewallRules, top.Network.Path, ".spec.firewall"))
	top.deleteRule(ctx, t, top.Compute, "vm-needs-vpc")
	top.object(ctx, t, c, fixtures.FirewallRules, "fw-1", map[string]interface{}{}, nil)
	top.object(ctx, t, c, fixtures.ManagedDBs, "db-1", map[string]interface{}{"firewall": "fw-1"}, nil)
	check.Eventually(ctx, t, restartBound, "the rule changes after the restart to take effect", func() error {
		if err := top.remove(ctx, t, c, fixtures.FirewallRules, "fw-1"); err == nil {
			top.object(ctx, t, c, fixtures.FirewallRules, "fw-1", map[string]interface{}{}, nil)
			return fmt.Errorf("fw-1 deletable: the new rule is not enforced yet")
		} else if !strings.Contains(err.Error(), "still referenced by ManagedDB/db-1") {
			return err
		}
		if got := top.protectedResources(ctx, t, top.Network); slices.Contains(got, fixtures.VPCs.Resource) {
			return fmt.Errorf("the configuration still protects %v", got)
		}
		return nil
	})
	top.waitReady(ctx, t, top.Compute, "db-needs-fw")
	top.expectDeleted(ctx, t, c, fixtures.VPCs, "vpc-1")
	t.Logf("rule changes made after the restart converged in %s (bound %s)", time.Since(changed).Round(time.Millisecond), restartBound)

	if ctrl, hook := rt.Running(); !ctrl || !hook {
		t.Fatalf("a runtime process did not survive the kcp restart: controller running %v, webhook running %v", ctrl, hook)
	}
}
