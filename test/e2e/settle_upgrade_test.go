package e2e

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/depctrl/terraform-provider-depctrl/runtime/settle"
	"github.com/depctrl/terraform-provider-depctrl/test/check"
	"github.com/depctrl/terraform-provider-depctrl/test/env"
	"github.com/depctrl/terraform-provider-depctrl/test/fixtures"
)

// TestSettlingUpgrade: an installation protecting with the reference index
// alone is switched to settling as an apply rolls it out (the webhook
// restarted with --settle-objects, then the controller), off again and on
// again, while on both shards a client keeps creating VPCs, referencing
// them by creates and updates of VMs, and trying to delete them and a VPC
// referenced from the start. No referenced VPC is ever deleted; unreferenced
// ones are settled once settling is on; and a settled label copied onto a
// referenced VPC while settling is off is refused, so it cannot count when
// settling comes back under the same stamp.
func TestSettlingUpgrade(t *testing.T) {
	ctx, e := integration(t, 15*time.Minute, env.TwoShards)
	top, rt := install(ctx, t, e)
	// An installation from before settling was the default.
	rt.SetSettling(ctx, t, false)
	top.protectVPCs(ctx, t)

	var clients []*upgradeClient
	for _, c := range top.Consumers {
		top.object(ctx, t, c, fixtures.VPCs, "kept", map[string]interface{}{}, nil)
		top.object(ctx, t, c, fixtures.VirtualMachines, "vm-of-kept", ref("kept"), nil)
		top.object(ctx, t, c, fixtures.VPCs, "free", map[string]interface{}{}, nil)
		top.object(ctx, t, c, fixtures.VirtualMachines, "vm-mover", ref("kept"), nil)
		d := top.dynamicFor(t, c.Path)
		clients = append(clients, &upgradeClient{shard: c.Shard,
			vpcs: d.Resource(fixtures.VPCs.GVR()).Namespace("apps"), vms: d.Resource(fixtures.VirtualMachines.GVR()).Namespace("apps")})
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for _, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.run(ctx, stop)
		}()
	}
	stopped := false
	stopClients := func() {
		if !stopped {
			stopped = true
			close(stop)
			wg.Wait()
		}
	}
	defer stopClients()
	settling := &settling{top: top, rt: rt, ws: top.Consumers[0], vpcs: clients[0].vpcs}
	// Let the clients run against the reference index alone first.
	time.Sleep(5 * time.Second)

	rt.SetSettling(ctx, t, true, "--settle-after", settleAfter.String())
	stamp := settling.waitSettled(ctx, t, "free")
	for _, c := range clients {
		c.settlingOn.Store(true)
	}
	// Let the clients run with settling on.
	time.Sleep(10 * time.Second)

	rt.SetSettling(ctx, t, false)
	check.Eventually(ctx, t, time.Minute, "the stamp withdrawn", func() error {
		if p := settling.published(ctx, t); p != "" {
			return fmt.Errorf("still %q", p)
		}
		return nil
	})
	t.Run("a label copied while settling is off is refused", func(t *testing.T) {
		refusedAsForged(t, settling.labelPatch(ctx, "kept", types.MergePatchType, map[string]any{settle.SettledLabel: stamp}))
	})

	rt.SetSettling(ctx, t, true, "--settle-after", settleAfter.String())
	check.Eventually(ctx, t, time.Minute, "the same stamp published again", func() error {
		if p := settling.published(ctx, t); p != stamp {
			return fmt.Errorf("published %q, want %q", p, stamp)
		}
		return nil
	})
	time.Sleep(5 * time.Second)
	stopClients()

	for _, c := range clients {
		t.Run("shard "+c.shard, func(t *testing.T) {
			t.Logf("%d rounds, %d with settling on; %d references made, %d deletions of referenced VPCs refused, %d unreferenced VPCs deleted",
				c.rounds.Load(), c.roundsSettling.Load(), c.referenced.Load(), c.refused.Load(), c.freed.Load())
			for _, v := range c.violations() {
				t.Error(v)
			}
			if c.roundsSettling.Load() == 0 || c.referenced.Load() == 0 || c.freed.Load() == 0 {
				t.Error("the client did not exercise settling: no round with it on, no reference made or no VPC freed")
			}
		})
	}
	top.expectDenied(ctx, t, top.Consumers[0], fixtures.VPCs, "kept", "still referenced by VirtualMachine/vm-of-kept")
	if l := settling.label(ctx, t, "kept"); l != "" {
		t.Errorf("the referenced VPC is settled (%q)", l)
	}
	settling.expectDeletedWithoutWebhook(ctx, t, "free")
}

// upgradeClient is one consumer's client in TestSettlingUpgrade. Each
// round creates a VPC and a VM that references it, moves vm-mover to
// another new VPC by an update, and tries to delete all three VPCs and
// "kept": only the VPC vm-mover left may go.
type upgradeClient struct {
	shard    string
	vpcs     dynamic.ResourceInterface
	vms      dynamic.ResourceInterface
	previous string

	settlingOn                                         atomic.Bool
	rounds, roundsSettling, referenced, refused, freed atomic.Int64
	mu                                                 sync.Mutex
	violated                                           []string
}

func (c *upgradeClient) run(ctx context.Context, stop <-chan struct{}) {
	for i := 0; ; i++ {
		select {
		case <-stop:
			return
		case <-ctx.Done():
			return
		default:
		}
		c.round(ctx, i)
		c.rounds.Add(1)
		if c.settlingOn.Load() {
			c.roundsSettling.Add(1)
		}
	}
}

func (c *upgradeClient) round(ctx context.Context, i int) {
	held, moved := fmt.Sprintf("held-%d", i), fmt.Sprintf("moved-%d", i)
	if createNamed(ctx, c.vpcs, fixtures.VPCs, held, nil) != nil || createNamed(ctx, c.vpcs, fixtures.VPCs, moved, nil) != nil {
		return
	}
	if createNamed(ctx, c.vms, fixtures.VirtualMachines, "vm-"+held, ref(held)) == nil {
		c.referenced.Add(1)
		c.mustStay(ctx, held, "VirtualMachine/vm-"+held)
	}
	patch := fmt.Sprintf(`{"spec":{"vpcRef":{"name":%q}}}`, moved)
	if _, err := c.vms.Patch(ctx, "vm-mover", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err == nil {
		c.referenced.Add(1)
		c.mustStay(ctx, moved, "VirtualMachine/vm-mover")
		// The VPC vm-mover referenced before is free now.
		if c.previous != "" && c.vpcs.Delete(ctx, c.previous, metav1.DeleteOptions{}) == nil {
			c.freed.Add(1)
		}
		c.previous = moved
	}
	c.mustStay(ctx, "kept", "VirtualMachine/vm-of-kept")
}

// mustStay tries to delete a VPC that by references, and records a
// violation if the deletion succeeds.
func (c *upgradeClient) mustStay(ctx context.Context, name, by string) {
	if err := c.vpcs.Delete(ctx, name, metav1.DeleteOptions{}); err == nil {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.violated = append(c.violated, fmt.Sprintf("VPC %s was deleted while %s referenced it (settling on: %v)", name, by, c.settlingOn.Load()))
		return
	}
	c.refused.Add(1)
}

func (c *upgradeClient) violations() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.violated
}
