package e2e

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/depctrl/terraform-provider-depctrl/test/check"
	"github.com/depctrl/terraform-provider-depctrl/test/env"
	"github.com/depctrl/terraform-provider-depctrl/test/fixtures"
	"github.com/depctrl/terraform-provider-depctrl/test/runtimetest"
)

// TestShardOutage: a webhook that starts while one shard answers nothing
// (SIGSTOP) still decides, on the other shard, every request whose rules
// live on shards it could read, and refuses, naming the shard, only those
// whose rules live on the stopped one. It reports ready after
// --partial-ready-after, and decides everything once the shard is back.
//
// Layout: the dep-ctrl, network and compute workspaces and a consumer on
// the root shard; a storage provider on shard-1 with a rule over its
// Volumes that protects FirewallRules. So VPCs (protected by a rule on
// root) must stay deletable-or-refused as usual, while FirewallRules
// (protected by a rule on shard-1) wait for shard-1.
func TestShardOutage(t *testing.T) {
	requireIntegration(t)
	if os.Getenv(env.AttachVariable) != "" {
		t.Skip("pauses a shard, which would disturb the other packages' tests sharing this kcp: make testacc runs it afterwards on a kcp of its own (make test-outage)")
	}
	ctx := testContext(t, 10*time.Minute)
	e := env.ForTest(t, env.TwoShards)
	if len(e.Shards) < 2 {
		t.Skip("needs two shards")
	}
	home, away := e.Shards[0].Name, e.Shards[1].Name
	top := setupTopology(ctx, t, e, placedOn(env.OnShard(home)))
	var consumer env.Workspace
	for _, c := range top.Consumers {
		if c.Shard == home {
			consumer = c
		}
	}
	if consumer.Path == "" {
		t.Fatalf("no consumer on shard %s", home)
	}
	storage, err := e.CreateWorkspace(ctx, "root", env.UniqueName("e2e-storage"), env.OnShard(away))
	check.Must(t, err)
	if storage.Shard != away {
		t.Fatalf("the storage workspace is on shard %q, want %q", storage.Shard, away)
	}
	apply(ctx, t, top.admin(t, storage.Path), fixtures.ExportYAML(fixtures.Volumes), depCtrlBindingYAML(top.DepCtrl.Path))
	apply(ctx, t, top.admin(t, consumer.Path), fixtures.BindingYAML("storage", storage.Path, fixtures.Volumes.Group))

	rt := runtimetest.Start(ctx, t, e, top.DepCtrl.Path)
	top.createRule(ctx, t, top.Compute, ruleObject("vm-needs-vpc", fixtures.VirtualMachines, fixtures.VPCs, top.Network.Path, ".spec.vpcRef.name"))
	top.createRule(ctx, t, storage, ruleObject("volume-needs-fw", fixtures.Volumes, fixtures.FirewallRules, top.Network.Path, ".spec.firewallRef.name"))
	top.waitReady(ctx, t, top.Compute, "vm-needs-vpc")
	top.waitReady(ctx, t, storage, "volume-needs-fw")

	top.object(ctx, t, consumer, fixtures.VPCs, "vpc-1", map[string]interface{}{}, nil)
	top.object(ctx, t, consumer, fixtures.VPCs, "vpc-free", map[string]interface{}{}, nil)
	top.object(ctx, t, consumer, fixtures.VirtualMachines, "vm-1", ref("vpc-1"), nil)
	top.object(ctx, t, consumer, fixtures.FirewallRules, "fw-1", map[string]interface{}{}, nil)
	top.object(ctx, t, consumer, fixtures.Volumes, "vol-1", map[string]interface{}{"firewallRef": map[string]interface{}{"name": "fw-1"}}, nil)
	top.expectDenied(ctx, t, consumer, fixtures.FirewallRules, "fw-1", "still referenced by Volume/vol-1")

	// The webhook restarts while shard-1 answers nothing.
	rt.StopWebhook(t)
	resume, err := e.PauseShard(away)
	check.Must(t, err)
	resumed := false
	defer func() {
		if !resumed {
			_ = resume()
		}
	}()
	const partialReadyAfter = 5 * time.Second
	start := time.Now()
	rt.StartWebhookNoWait(t, fmt.Sprintf("--partial-ready-after=%s", partialReadyAfter))
	check.Eventually(ctx, t, time.Minute, "the webhook to report ready with one shard stopped", rt.WebhookReady)
	tookReady := time.Since(start)
	t.Logf("ready %s after start with shard %s stopped (--partial-ready-after %s)", tookReady.Round(time.Millisecond), away, partialReadyAfter)
	if tookReady < partialReadyAfter {
		t.Errorf("ready after %s, before --partial-ready-after (%s)", tookReady, partialReadyAfter)
	}

	t.Run("rules on the shard read: decided", func(t *testing.T) {
		check.Eventually(ctx, t, 30*time.Second, "a referenced VPC to be refused by the webhook's decision", func() error {
			return top.decidedDenial(ctx, t, consumer, fixtures.VPCs, "vpc-1", "still referenced by VirtualMachine/vm-1")
		})
		top.expectDeleted(ctx, t, consumer, fixtures.VPCs, "vpc-free")
		// The reference index takes a new VM (its rules are on root).
		top.object(ctx, t, consumer, fixtures.VirtualMachines, "vm-2", ref("vpc-1"), nil)
		top.expectDenied(ctx, t, consumer, fixtures.VPCs, "vpc-1", "still referenced by VirtualMachine/")
	})

	t.Run("rules on the stopped shard: refused, naming it", func(t *testing.T) {
		err := top.remove(ctx, t, consumer, fixtures.FirewallRules, "fw-1")
		if err == nil {
			t.Fatal("fw-1 was deleted while vol-1 references it and its rule could not be read")
		}
		if !strings.Contains(err.Error(), "retry later") || !strings.Contains(err.Error(), storage.Cluster) {
			t.Errorf("deleting fw-1: %v; want a refusal to retry later naming logical cluster %s", err, storage.Cluster)
		}
		t.Logf("refused: %v", err)
		if !top.exists(ctx, t, consumer, fixtures.FirewallRules, "fw-1") {
			t.Fatal("fw-1 is gone")
		}
		// An unreferenced FirewallRule is refused too: the webhook cannot
		// know what the stopped shard's rules say about it.
		top.object(ctx, t, consumer, fixtures.FirewallRules, "fw-free", map[string]interface{}{}, nil)
		if err := top.remove(ctx, t, consumer, fixtures.FirewallRules, "fw-free"); err == nil || !strings.Contains(err.Error(), "retry later") {
			t.Errorf("deleting an unreferenced FirewallRule with its rule unread: %v, want a refusal to retry later", err)
		}
	})

	check.Must(t, resume())
	resumed = true
	resumeAt := time.Now()
	t.Run("the shard back: everything decided", func(t *testing.T) {
		check.Eventually(ctx, t, time.Minute, "the FirewallRule's deletion to be decided again", func() error {
			return top.decidedDenial(ctx, t, consumer, fixtures.FirewallRules, "fw-1", "still referenced by Volume/vol-1")
		})
		t.Logf("FirewallRule deletions decided %s after shard %s resumed", time.Since(resumeAt).Round(time.Millisecond), away)
		top.expectDeleted(ctx, t, consumer, fixtures.FirewallRules, "fw-free")
	})
}
