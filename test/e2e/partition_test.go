package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/depctrl/terraform-provider-depctrl/test/check"
	"github.com/depctrl/terraform-provider-depctrl/test/env"
	"github.com/depctrl/terraform-provider-depctrl/test/runtimetest"
)

// TestControllerPartitionedFromAShard: on the real two-shard kcp, with
// settling on, the controller is cut off from the shard that holds the
// rules (shard-1: the compute workspace, its reference index
// configuration, and a consumer) while it still reaches the front-proxy
// and the root shard, where the network workspace's deletion webhook
// publishes the stamp of VPCs. Its connections to shard-1's virtual
// workspace go through a proxy (runtimetest.ProxyController) that resets
// them and refuses new ones. While the partition lasts, a rule over VPCs
// is created, then edited, then deleted (ruleChanges), each once the one
// before has converged: the webhook withdraws the stamp of the rules
// before a creation or an edit (a deletion may keep it: settle.Keeps), and
// the controller, which still holds the rules as they were before the
// partition, never publishes it again; a VPC settled
// under the rules before, which the change makes referenced, is refused in
// the consumer on shard-1 and in the one on root, by the webhook's
// decision, for as long as the partition is watched. Once it heals,
// everything converges: the rule is Ready, the new rules' stamp is
// published, objects are settled under it, and the controller is ready.
func TestControllerPartitionedFromAShard(t *testing.T) {
	ctx, top, rt, away := installRulesAway(t)
	proxy := startConnectProxy(t)
	awayPort := portOf(t, away.URL)
	rt.ProxyController(t, proxy.URL)
	rt.EnableSettling(ctx, t, "--settle-after", settleAfter.String())
	top.protectVPCs(ctx, t)
	// The controller reads the rules through shard-1's virtual workspace,
	// and reaches it through the proxy.
	proxy.waitReached(ctx, t, "the controller", away.Name, awayPort)
	rc := newRuleChanges(ctx, t, top, rt)

	for _, step := range rc.steps() {
		ok := t.Run(step.name+" while the controller is cut off from the shard of the rules", func(t *testing.T) {
			_, refusedBefore := proxy.Counts(awayPort)
			proxy.Cut(awayPort)
			healed := false
			heal := func() {
				if !healed {
					proxy.Heal(awayPort)
					healed = true
				}
			}
			defer heal()
			// The cut reset the controller's connections to shard-1: it
			// has tried again, and was refused.
			check.Eventually(ctx, t, time.Minute, "the controller to find shard "+away.Name+" unreachable", func() error {
				if _, refused := proxy.Counts(awayPort); refused == refusedBefore {
					return fmt.Errorf("%s", proxy.describe(awayPort))
				}
				return nil
			})
			old, mark := rc.enforced(ctx, t, step)
			rc.held(ctx, t, step, old, mark, "partitioned")
			heal()
			t.Logf("partition healed: %s", proxy.describe(awayPort))
			rc.converged(ctx, t, step, old)
			rc.neverBack(t, old, mark, "after the partition")
		})
		if !ok {
			t.FailNow() // the later steps start from this one's outcome
		}
	}
	check.Eventually(ctx, t, time.Minute, "the controller to report ready", func() error {
		if code := httpStatus(ctx, rt.ControllerReadyzURL); code != 200 {
			return fmt.Errorf("readyz: %d", code)
		}
		return nil
	})
}

// TestControllerStalledFromAShard is TestControllerPartitionedFromAShard
// with a network that silently drops what the controller and the shard of
// the rules send each other (the proxy holds it, and closes nothing), so
// that the controller's watch of that shard runs on, delivering nothing,
// until a timeout of its own ends it. Meanwhile a rule over VPCs is
// created, then edited, then deleted there: the webhook withdraws the
// stamp of the rules before the change, and the controller, whose view
// still holds them, never publishes it again, as the read that would
// confirm its view gets no answer; the VPC the change made referenced is
// refused in both consumers. Once the network delivers again, everything
// converges.
func TestControllerStalledFromAShard(t *testing.T) {
	ctx, top, rt, away := installRulesAway(t)
	proxy := startConnectProxy(t)
	awayPort := portOf(t, away.URL)
	rt.ProxyController(t, proxy.URL)
	rt.EnableSettling(ctx, t, "--settle-after", settleAfter.String())
	top.protectVPCs(ctx, t)
	proxy.waitReached(ctx, t, "the controller", away.Name, awayPort)
	rc := newRuleChanges(ctx, t, top, rt)

	for _, step := range rc.steps() {
		ok := t.Run(step.name+" while the network to the shard of the rules drops everything", func(t *testing.T) {
			proxy.Stall(awayPort)
			flowing := false
			unstall := func() {
				if !flowing {
					proxy.Unstall(awayPort)
					flowing = true
				}
			}
			defer unstall()
			old, mark := rc.enforced(ctx, t, step)
			rc.held(ctx, t, step, old, mark, "stalled")
			unstall()
			rc.converged(ctx, t, step, old)
			rc.neverBack(t, old, mark, "after the stall")
		})
		if !ok {
			t.FailNow() // the later steps start from this one's outcome
		}
	}
}

// installRulesAway installs the topology on the real two-shard kcp with the
// network workspace (the protected VPCs) on the first shard and the compute
// workspace (the rules, their index configuration, a consumer) on the
// second, and returns the second shard: the one a test cuts a component
// off from.
func installRulesAway(t *testing.T) (context.Context, *Topology, *runtimetest.Runtime, env.Shard) {
	t.Helper()
	ctx, e := integration(t, 25*time.Minute, env.TwoShards)
	if len(e.Shards) < 2 {
		t.Skip("needs two shards")
	}
	home, away := e.Shards[0], e.Shards[1]
	top, rt := install(ctx, t, e, placedOn(env.OnShard(home.Name)), computeOn(env.OnShard(away.Name)))
	if top.Network.Shard != home.Name || top.Compute.Shard != away.Name {
		t.Fatalf("network on %s, compute on %s: want them on %s and %s", top.Network.Shard, top.Compute.Shard, home.Name, away.Name)
	}
	return ctx, top, rt, away
}
