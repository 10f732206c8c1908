package e2e

import (
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
	"github.com/depctrl/terraform-provider-depctrl/runtime/settle"
	"github.com/depctrl/terraform-provider-depctrl/test/check"
	"github.com/depctrl/terraform-provider-depctrl/test/env"
	"github.com/depctrl/terraform-provider-depctrl/test/fixtures"
)

// TestStatusSubresourcePaths: on the two-shard kcp, with settling on, a
// rule whose path lies in .status of a dependent type with a status
// subresource (Disks) is never Ready, and says why: a write of /status
// passes no index webhook, so the reference it makes records no intent. It
// is installed like any rule that fails its check, and the VPCs it protects
// are never settled, so a VPC that a disk's status write comes to reference
// after the VPC has stood unreferenced long enough to be settled is still
// refused deletion, rather than deleted past the webhook. The same path on
// a type without the subresource (VirtualMachines, whose .status is written
// with the object) is Ready, and a VPC it references cannot be deleted.
func TestStatusSubresourcePaths(t *testing.T) {
	ctx, e := integration(t, 15*time.Minute, env.TwoShards)
	top, rt := install(ctx, t, e)
	rt.EnableSettling(ctx, t, "--settle-after", settleAfter.String())
	apply(ctx, t, top.admin(t, top.Compute.Path), fixtures.ExportYAML(fixtures.Disks))
	for _, c := range top.Consumers {
		apply(ctx, t, top.admin(t, c.Path), fixtures.BindingYAML("block", top.Compute.Path, fixtures.Disks.Group))
		top.waitServed(ctx, t, c, fixtures.Disks.GVR())
	}

	top.createRule(ctx, t, top.Compute, ruleObject("disk-status-vpc", fixtures.Disks, fixtures.VPCs, top.Network.Path, ".status.vpcRef.name"))
	top.createRule(ctx, t, top.Compute, ruleObject("vm-status-vpc", fixtures.VirtualMachines, fixtures.VPCs, top.Network.Path, ".status.vpcRef.name"))
	// The control: firewall rules, referenced from spec, are settled.
	top.createRule(ctx, t, top.Compute, ruleObject("vm-needs-firewall", fixtures.VirtualMachines, fixtures.FirewallRules, top.Network.Path, ".spec.firewall"))

	t.Run("a status path of a type with a status subresource is never Ready", func(t *testing.T) {
		const want = "spec.dependencies[0].fieldRef.path: .status.vpcRef.name lies in .status, which disks v1 (export block.test.io) " +
			"writes through its status subresource: no reference index webhook sees such a write, so a reference made there records " +
			"no intent and a deletion decided meanwhile can miss it; reference the object from a field that writes of the object " +
			"itself set, such as one in .spec"
		if msg := top.waitCondition(ctx, t, top.Compute, "disk-status-vpc", v1alpha1.ConditionTypesServed, "False", v1alpha1.ReasonFieldPathInSubresource); msg != want {
			t.Errorf("TypesServed message %q, want %q", msg, want)
		}
		// Installed and enforced like any rule whose check fails: what
		// it protects is decided by reading every disk.
		top.waitCondition(ctx, t, top.Compute, "disk-status-vpc", v1alpha1.ConditionEnforced, "True", "Registered")
		top.waitCondition(ctx, t, top.Compute, "disk-status-vpc", v1alpha1.ConditionWebhookInstalled, "True", "Installed")
		if msg := top.waitCondition(ctx, t, top.Compute, "disk-status-vpc", v1alpha1.ConditionReady, "False", v1alpha1.ReasonFieldPathInSubresource); msg != want {
			t.Errorf("Ready message %q, want %q", msg, want)
		}
	})
	t.Run("a status path of a type without the subresource is Ready", func(t *testing.T) {
		top.waitReady(ctx, t, top.Compute, "vm-status-vpc")
		top.waitReady(ctx, t, top.Compute, "vm-needs-firewall")
	})

	t.Run("VPCs are never settled", func(t *testing.T) {
		// The settler sweeps a place (type, namespace, workspace) a
		// moment after an object is created there. The firewall rules,
		// created after the VPCs, are the control: once they are settled,
		// so would the VPCs be if their type had a stamp.
		for _, c := range top.Consumers {
			top.object(ctx, t, c, fixtures.VPCs, "vpc-of-disk", map[string]interface{}{}, nil)
			top.object(ctx, t, c, fixtures.VPCs, "vpc-of-vm", map[string]interface{}{}, nil)
			top.object(ctx, t, c, fixtures.Disks, "disk-1", map[string]interface{}{}, nil)
			top.object(ctx, t, c, fixtures.FirewallRules, "fw-1", map[string]interface{}{}, nil)
		}
		for _, c := range top.Consumers {
			fws := top.objects(t, c, fixtures.FirewallRules)
			check.Eventually(ctx, t, 2*time.Minute, "the firewall rule settled in "+c.Path+" (settling works here)", func() error {
				fw, err := fws.Get(ctx, "fw-1", metav1.GetOptions{})
				if err != nil {
					return err
				}
				stamp := top.publishedStamp(ctx, t, fixtures.FirewallRules)
				if l := fw.GetLabels()[settle.SettledLabel]; stamp == "" || l != stamp {
					return fmt.Errorf("label %q, published %q", l, stamp)
				}
				return nil
			})
		}
		// A margin for the VPCs' own sweep, which may come a moment
		// after the firewall rules'.
		time.Sleep(2 * time.Second)
		// The VPCs' rules are older than the firewall rule's: a stamp of
		// theirs would have been published by now.
		if s := top.publishedStamp(ctx, t, fixtures.VPCs); s != "" {
			t.Errorf("the deletion webhook for VPCs leaves out the settled stamp %q", s)
		}
		for _, ws := range top.Consumers {
			for _, name := range []string{"vpc-of-disk", "vpc-of-vm"} {
				u, err := top.objects(t, ws, fixtures.VPCs).Get(ctx, name, metav1.GetOptions{})
				check.Must(t, err)
				if l, ok := u.GetLabels()[settle.SettledLabel]; ok {
					t.Errorf("VPC %s in %s is settled (%q)", name, ws.Path, l)
				}
			}
		}
	})

	for _, c := range top.Consumers {
		t.Run("shard "+c.Shard, func(t *testing.T) {
			disks := top.objects(t, c, fixtures.Disks)
			t.Run("the fixture's status is written through its subresource alone", func(t *testing.T) {
				probe := &unstructured.Unstructured{Object: map[string]interface{}{
					"apiVersion": fixtures.Disks.Group + "/v1", "kind": fixtures.Disks.Kind,
					"metadata": map[string]interface{}{"name": "disk-probe"},
					// Nothing the rules look for: a reference here would pass
					// the index webhook, which sees the create as sent, and
					// unsettle what it names.
					"spec": map[string]interface{}{}, "status": map[string]interface{}{"phase": "Probe"},
				}}
				created, err := disks.Create(ctx, probe, metav1.CreateOptions{})
				check.Must(t, err)
				if _, ok := created.Object["status"]; ok {
					t.Fatalf("a create of a disk kept its status %v: the type has no status subresource", created.Object["status"])
				}
				check.Must(t, disks.Delete(ctx, "disk-probe", metav1.DeleteOptions{}))
			})
			t.Run("a reference made by a status write keeps the VPC", func(t *testing.T) {
				body := []byte(`{"status":{"vpcRef":{"name":"vpc-of-disk"}}}`)
				_, err := disks.Patch(ctx, "disk-1", types.MergePatchType, body, metav1.PatchOptions{}, "status")
				check.Must(t, err)
				check.Eventually(ctx, t, time.Minute, "the webhook to refuse deleting vpc-of-disk", func() error {
					return top.decidedDenial(ctx, t, c, fixtures.VPCs, "vpc-of-disk", "still referenced by Disk/disk-1")
				})
			})
			t.Run("a status path of a type without the subresource protects", func(t *testing.T) {
				vm := &unstructured.Unstructured{Object: map[string]interface{}{
					"apiVersion": fixtures.VirtualMachines.Group + "/v1", "kind": fixtures.VirtualMachines.Kind,
					"metadata": map[string]interface{}{"name": "vm-1"},
					"spec":     map[string]interface{}{}, "status": ref("vpc-of-vm"),
				}}
				vms := top.objects(t, c, fixtures.VirtualMachines)
				_, err := vms.Create(ctx, vm, metav1.CreateOptions{})
				check.Must(t, err)
				check.Eventually(ctx, t, time.Minute, "the webhook to refuse deleting vpc-of-vm", func() error {
					return top.decidedDenial(ctx, t, c, fixtures.VPCs, "vpc-of-vm", "still referenced by VirtualMachine/vm-1")
				})
				check.Must(t, vms.Delete(ctx, "vm-1", metav1.DeleteOptions{}))
				check.Eventually(ctx, t, 2*time.Minute, "deleting vpc-of-vm once vm-1 is gone", func() error {
					return top.remove(ctx, t, c, fixtures.VPCs, "vpc-of-vm")
				})
			})
		})
	}
}
