package e2e

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
	"github.com/depctrl/terraform-provider-depctrl/test/check"
	"github.com/depctrl/terraform-provider-depctrl/test/env"
	"github.com/depctrl/terraform-provider-depctrl/test/fixtures"
)

// TestProtection runs the specification's scenarios against a real kcp
// with the controller and webhook running as processes under their own
// identities, on two shards (consumers on both, the protected workspace on
// one) and on a single shard of its own.
func TestProtection(t *testing.T) {
	requireIntegration(t)
	t.Run("two shards", func(t *testing.T) {
		ctx := testContext(t, 15*time.Minute)
		protectionScenarios(ctx, t, env.ForTest(t, env.TwoShards))
	})
	t.Run("single shard", func(t *testing.T) {
		ctx := testContext(t, 15*time.Minute)
		protectionScenarios(ctx, t, ownSingleShard(ctx, t))
	})
}

func protectionScenarios(ctx context.Context, t *testing.T, e *env.Env) {
	top, _ := install(ctx, t, e)

	// The rule lives in the compute provider's workspace; the VPCs it
	// protects are exported from a nested workspace.
	created := time.Now()
	top.protectVPCs(ctx, t)
	t.Logf("rule creation to enforcement (Ready=True): %s", time.Since(created).Round(time.Millisecond))

	if got := top.protectedResources(ctx, t, top.Network); !slices.Equal(got, []string{"vpcs"}) {
		t.Fatalf("webhook configuration in %s covers %v, want [vpcs]", top.Network.Path, got)
	}
	assertConfiguration(ctx, t, top)

	for _, consumer := range top.Consumers {
		t.Run("blocked while referenced on shard "+consumer.Shard, func(t *testing.T) {
			top.vpcInUse(ctx, t, consumer)
			top.object(ctx, t, consumer, fixtures.VirtualMachines, "vm-2", ref("vpc-1"), nil)
			top.expectDenied(ctx, t, consumer, fixtures.VPCs, "vpc-1", "cannot delete vpcs/vpc-1: still referenced by VirtualMachine/vm-1, VirtualMachine/vm-2")
			top.expectCauses(ctx, t, consumer, fixtures.VPCs, "vpc-1", fixtures.VirtualMachines, "vm-1", "vm-2")
			top.expectDeleted(ctx, t, consumer, fixtures.VirtualMachines, "vm-1")
			top.expectDenied(ctx, t, consumer, fixtures.VPCs, "vpc-1", "still referenced by VirtualMachine/vm-2")
			top.expectDeleted(ctx, t, consumer, fixtures.VirtualMachines, "vm-2")
			top.expectDeleted(ctx, t, consumer, fixtures.VPCs, "vpc-1")
		})
	}

	consumer := top.Consumers[0]
	t.Run("unreferenced objects delete freely", func(t *testing.T) {
		top.object(ctx, t, consumer, fixtures.VPCs, "lonely", map[string]interface{}{}, nil)
		top.object(ctx, t, consumer, fixtures.VirtualMachines, "elsewhere", ref("another-vpc"), nil)
		top.expectDeleted(ctx, t, consumer, fixtures.VPCs, "lonely")
		top.expectDeleted(ctx, t, consumer, fixtures.VirtualMachines, "elsewhere")
	})

	t.Run("skip-protection allows", func(t *testing.T) {
		top.object(ctx, t, consumer, fixtures.VPCs, "vpc-skip", map[string]interface{}{}, map[string]string{v1alpha1.SkipProtectionAnnotation: "true"})
		top.object(ctx, t, consumer, fixtures.VirtualMachines, "vm-skip", ref("vpc-skip"), nil)
		top.expectDeleted(ctx, t, consumer, fixtures.VPCs, "vpc-skip")
		top.expectDeleted(ctx, t, consumer, fixtures.VirtualMachines, "vm-skip")
		// The use is recorded on the object, in its workspace.
		note := top.waitEvent(ctx, t, consumer, "apps", "vpc-skip", "DeletionProtectionSkipped")
		t.Logf("recorded: %s", note)
	})

	t.Run("in-place fieldRef edit takes effect", func(t *testing.T) {
		top.object(ctx, t, consumer, fixtures.VPCs, "vpc-edit", map[string]interface{}{}, nil)
		top.object(ctx, t, consumer, fixtures.VirtualMachines, "vm-old-path", ref("vpc-edit"), nil)
		top.expectDenied(ctx, t, consumer, fixtures.VPCs, "vpc-edit", "still referenced by VirtualMachine/vm-old-path")

		rule := top.getRule(ctx, t, top.Compute, "vm-needs-vpc")
		deps, _, _ := unstructured.NestedSlice(rule.Object, "spec", "dependencies")
		check.Must(t, unstructured.SetNestedField(deps[0].(map[string]interface{}), ".spec.networks[*].vpc", "fieldRef", "path"))
		check.Must(t, unstructured.SetNestedSlice(rule.Object, deps, "spec", "dependencies"))
		uid := rule.GetUID()
		_, err := top.dynamicFor(t, top.Compute.Path).Resource(rulesGVR).Update(ctx, rule, metav1.UpdateOptions{})
		check.Must(t, err)
		top.waitReady(ctx, t, top.Compute, "vm-needs-vpc")
		if top.getRule(ctx, t, top.Compute, "vm-needs-vpc").GetUID() != uid {
			t.Fatal("the rule was recreated; the edit must apply in place")
		}
		top.object(ctx, t, consumer, fixtures.VirtualMachines, "vm-new-path", map[string]interface{}{
			"networks": []interface{}{map[string]interface{}{"vpc": "other"}, map[string]interface{}{"vpc": "vpc-edit"}},
		}, nil)
		top.expectDenied(ctx, t, consumer, fixtures.VPCs, "vpc-edit", "still referenced by VirtualMachine/vm-new-path")
		if err := top.remove(ctx, t, consumer, fixtures.VPCs, "vpc-edit"); err == nil || strings.Contains(err.Error(), "vm-old-path") {
			t.Fatalf("after the edit the old path must not count: %v", err)
		}
		top.expectDeleted(ctx, t, consumer, fixtures.VirtualMachines, "vm-new-path")
		top.expectDeleted(ctx, t, consumer, fixtures.VPCs, "vpc-edit")
		top.expectDeleted(ctx, t, consumer, fixtures.VirtualMachines, "vm-old-path")
	})

	t.Run("rule deleted, then recreated", func(t *testing.T) {
		top.object(ctx, t, consumer, fixtures.VPCs, "vpc-r", map[string]interface{}{}, nil)
		top.object(ctx, t, consumer, fixtures.VirtualMachines, "vm-r", map[string]interface{}{"networks": []interface{}{map[string]interface{}{"vpc": "vpc-r"}}}, nil)
		top.expectDenied(ctx, t, consumer, fixtures.VPCs, "vpc-r", "still referenced by VirtualMachine/vm-r")

		top.deleteRule(ctx, t, top.Compute, "vm-needs-vpc")
		check.Eventually(ctx, t, time.Minute, "the webhook configuration to be removed", func() error {
			if top.webhookConfiguration(ctx, t, top.Network) != nil {
				return errStill("webhook configuration present")
			}
			return nil
		})
		top.expectDeleted(ctx, t, consumer, fixtures.VPCs, "vpc-r")

		top.object(ctx, t, consumer, fixtures.VPCs, "vpc-r", map[string]interface{}{}, nil)
		top.createRule(ctx, t, top.Compute, ruleObject("vm-needs-vpc", fixtures.VirtualMachines, fixtures.VPCs, top.Network.Path, ".spec.networks[*].vpc"))
		top.waitReady(ctx, t, top.Compute, "vm-needs-vpc")
		top.expectDenied(ctx, t, consumer, fixtures.VPCs, "vpc-r", "still referenced by VirtualMachine/vm-r")
		top.expectDeleted(ctx, t, consumer, fixtures.VirtualMachines, "vm-r")
		top.expectDeleted(ctx, t, consumer, fixtures.VPCs, "vpc-r")
	})

	t.Run("a dependent being deleted does not block", func(t *testing.T) {
		top.object(ctx, t, consumer, fixtures.VPCs, "vpc-fin", map[string]interface{}{}, nil)
		top.object(ctx, t, consumer, fixtures.VirtualMachines, "vm-fin", map[string]interface{}{"networks": []interface{}{map[string]interface{}{"vpc": "vpc-fin"}}}, nil)
		vms := top.objects(t, consumer, fixtures.VirtualMachines)
		vm, err := vms.Get(ctx, "vm-fin", metav1.GetOptions{})
		check.Must(t, err)
		vm.SetFinalizers([]string{"e2e.test.io/hold"})
		_, err = vms.Update(ctx, vm, metav1.UpdateOptions{})
		check.Must(t, err)
		top.expectDenied(ctx, t, consumer, fixtures.VPCs, "vpc-fin", "still referenced by VirtualMachine/vm-fin")
		top.expectDeleted(ctx, t, consumer, fixtures.VirtualMachines, "vm-fin") // now terminating, held by the finalizer
		top.expectDeleted(ctx, t, consumer, fixtures.VPCs, "vpc-fin")
		vm, err = vms.Get(ctx, "vm-fin", metav1.GetOptions{})
		check.Must(t, err)
		vm.SetFinalizers(nil)
		_, err = vms.Update(ctx, vm, metav1.UpdateOptions{})
		check.Must(t, err)
	})

	t.Run("a consumer workspace being deleted is not wedged", func(t *testing.T) {
		// kcp deletes a workspace's contents one by one, through admission.
		// Protection must not hold a workspace that is going away.
		doomed := top.newConsumer(ctx, t, "e2e-doomed")
		top.object(ctx, t, doomed, fixtures.VPCs, "vpc-d", map[string]interface{}{}, nil)
		top.object(ctx, t, doomed, fixtures.VirtualMachines, "vm-d", map[string]interface{}{"networks": []interface{}{map[string]interface{}{"vpc": "vpc-d"}}}, nil)
		top.expectDenied(ctx, t, doomed, fixtures.VPCs, "vpc-d", "still referenced by VirtualMachine/vm-d")
		if err := e.DeleteWorkspace(ctx, doomed.Path); err != nil {
			t.Fatalf("deleting a workspace that holds a referenced VPC: %v", err)
		}
	})

	t.Run("cycles are reported on every rule involved", func(t *testing.T) {
		// VPCs referencing VMs closes a cycle with the VM rule.
		top.createRule(ctx, t, top.Network, ruleObject("vpc-needs-vm", fixtures.VPCs, fixtures.VirtualMachines, top.Compute.Path, ".spec.gatewayVM"))
		msg := top.waitCondition(ctx, t, top.Network, "vpc-needs-vm", v1alpha1.ConditionAcyclic, "False", "CycleDetected")
		if !strings.Contains(msg, "skip-protection") {
			t.Fatalf("the cycle message should say the way out: %s", msg)
		}
		if !strings.Contains(msg, "/vpc-needs-vm)") || !strings.Contains(msg, "/vm-needs-vpc)") {
			t.Fatalf("the cycle message should name both rules on it: %s", msg)
		}
		top.waitCondition(ctx, t, top.Compute, "vm-needs-vpc", v1alpha1.ConditionAcyclic, "False", "CycleDetected")
		// Each rule's workspace hears of it as an Event on the rule too.
		top.waitEvent(ctx, t, top.Network, "default", "vpc-needs-vm", "CycleDetected")
		top.waitEvent(ctx, t, top.Compute, "default", "vm-needs-vpc", "CycleDetected")
		top.deleteRule(ctx, t, top.Network, "vpc-needs-vm")
		top.waitCondition(ctx, t, top.Compute, "vm-needs-vpc", v1alpha1.ConditionAcyclic, "True", "NoCycle")
		top.waitEvent(ctx, t, top.Compute, "default", "vm-needs-vpc", "CycleResolved")
	})

	t.Run("a missing workspace is reported", func(t *testing.T) {
		top.createRule(ctx, t, top.Compute, ruleObject("dangling", fixtures.ManagedDBs, fixtures.FirewallRules, top.Org.Path+":nowhere", ".spec.firewall"))
		msg := top.waitCondition(ctx, t, top.Compute, "dangling", v1alpha1.ConditionWorkspacesResolved, "False", "WorkspaceNotFound")
		if !strings.Contains(msg, top.Org.Path+":nowhere") {
			t.Fatalf("message should name the path: %s", msg)
		}
		if note := top.waitEvent(ctx, t, top.Compute, "default", "dangling", "WorkspaceNotFound"); note != msg {
			t.Errorf("the Event says %q, the condition %q", note, msg)
		}
		top.deleteRule(ctx, t, top.Compute, "dangling")
	})
}

// assertConfiguration checks the installed configuration's fixed settings.
func assertConfiguration(ctx context.Context, t *testing.T, top *Topology) {
	t.Helper()
	u := top.webhookConfiguration(ctx, t, top.Network)
	hooks, _, _ := unstructured.NestedSlice(u.Object, "webhooks")
	if len(hooks) != 5 {
		t.Fatalf("want five webhooks (deletions, updates that would drop an intent, writes that would set the settled label, writes that "+
			"would write a deferred deletion, and creates, candidates for settling, which is on by default), got %d", len(hooks))
	}
	for i, want := range []struct {
		ops     []string
		failure string
	}{{[]string{"DELETE"}, "Fail"}, {[]string{"UPDATE"}, "Fail"}, {[]string{"CREATE", "UPDATE"}, "Fail"}, {[]string{"CREATE", "UPDATE"}, "Fail"}, {[]string{"CREATE"}, "Ignore"}} {
		h := hooks[i].(map[string]interface{})
		for field, value := range map[string]string{"failurePolicy": want.failure, "sideEffects": "None", "matchPolicy": "Equivalent"} {
			if got, _, _ := unstructured.NestedString(h, field); got != value {
				t.Errorf("webhook %d: %s = %q, want %q", i, field, got, value)
			}
		}
		rules, _, _ := unstructured.NestedSlice(h, "rules")
		if len(rules) == 0 {
			t.Errorf("webhook %d: no rules", i)
		}
		for _, r := range rules {
			if ops, _, _ := unstructured.NestedStringSlice(r.(map[string]interface{}), "operations"); !slices.Equal(ops, want.ops) {
				t.Errorf("webhook %d: operations %v, want %v", i, ops, want.ops)
			}
		}
	}
}

type errStill string

func (e errStill) Error() string { return string(e) }
