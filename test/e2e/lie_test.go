package e2e

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
	"github.com/depctrl/terraform-provider-depctrl/test/check"
	"github.com/depctrl/terraform-provider-depctrl/test/env"
	"github.com/depctrl/terraform-provider-depctrl/test/fixtures"
)

// TestRequestsThatLie: on the real two-shard kcp, with settling on, a
// request whose contents lie (a reference that is a URL path, a forged
// kcp.io/cluster on an update, a tenant's own type named like a bound one)
// neither reaches another tenant's workspace nor gets a referenced object
// deleted, and a tenant's own type holds nothing as a dependent; and a cluster-scoped dependent protects a settled namespaced
// object. Each subtest is a row of the security guide's "Requests that lie".
func TestRequestsThatLie(t *testing.T) {
	ctx, e := integration(t, 20*time.Minute, env.TwoShards)
	top, rt := install(ctx, t, e)
	rt.EnableSettling(ctx, t, "--settle-after", settleAfter.String())
	top.protectVPCs(ctx, t)
	top.createRule(ctx, t, top.Network, ruleObject("region-needs-vpc", fixtures.Regions, fixtures.VPCs, top.Network.Path, ".spec.vpc"))
	top.waitReady(ctx, t, top.Network, "region-needs-vpc")
	attacker, victim := top.Consumers[0], top.Consumers[1]

	t.Run("a reference that is a path reaches no other workspace", func(t *testing.T) {
		v := &settling{top: top, rt: rt, ws: victim, vpcs: top.objects(t, victim, fixtures.VPCs)}
		v.create(ctx, t, "core")
		stamp := v.waitSettled(ctx, t, "core")
		escape := strings.Repeat("../", 8) + "clusters/" + victim.Cluster + "/apis/network.test.io/v1/namespaces/apps/vpcs/core"
		top.object(ctx, t, attacker, fixtures.VirtualMachines, "evil-1", ref(escape), nil)
		u, err := v.vpcs.Get(ctx, "core", metav1.GetOptions{})
		check.Must(t, err)
		for k := range u.GetAnnotations() {
			if strings.HasPrefix(k, v1alpha1.IntentAnnotationPrefix) {
				t.Fatalf("the other tenant's VPC carries an intent written for the attacker's VM: %s=%s", k, u.GetAnnotations()[k])
			}
		}
		if l := v.label(ctx, t, "core"); l != stamp {
			t.Fatalf("the other tenant's VPC lost its settled label (%q, was %q)", l, stamp)
		}
		top.expectDeleted(ctx, t, victim, fixtures.VPCs, "core")
	})

	t.Run("an update that forges kcp.io/cluster is checked in its own workspace", func(t *testing.T) {
		s := &settling{top: top, rt: rt, ws: attacker, vpcs: top.objects(t, attacker, fixtures.VPCs)}
		for _, name := range []string{"vpc-1", "vpc-2"} {
			s.create(ctx, t, name)
		}
		top.object(ctx, t, attacker, fixtures.VirtualMachines, "vm-2", ref("vpc-1"), nil)
		s.waitSettled(ctx, t, "vpc-2")
		patch, _ := json.Marshal(map[string]any{
			"metadata": map[string]any{"annotations": map[string]string{v1alpha1.ClusterAnnotation: victim.Cluster}},
			"spec":     ref("vpc-2"),
		})
		_, err := top.objects(t, attacker, fixtures.VirtualMachines).Patch(ctx, "vm-2", types.MergePatchType, patch, metav1.PatchOptions{})
		check.Must(t, err)
		top.expectDenied(ctx, t, attacker, fixtures.VPCs, "vpc-2", "still referenced by VirtualMachine/vm-2")
	})

	t.Run("a cluster-scoped dependent protects a settled namespaced object", func(t *testing.T) {
		s := &settling{top: top, rt: rt, ws: attacker, vpcs: top.objects(t, attacker, fixtures.VPCs)}
		s.create(ctx, t, "vpc-ns")
		s.waitSettled(ctx, t, "vpc-ns")
		top.object(ctx, t, attacker, fixtures.Regions, "region-1", map[string]interface{}{"vpc": "vpc-ns"}, nil)
		top.expectDenied(ctx, t, attacker, fixtures.VPCs, "vpc-ns", "still referenced by Region/region-1")
		check.Must(t, top.remove(ctx, t, attacker, fixtures.Regions, "region-1"))
		top.expectDeleted(ctx, t, attacker, fixtures.VPCs, "vpc-ns")
	})

	t.Run("a tenant's own type named like a bound one is no dependent and changes nothing for others", func(t *testing.T) {
		shadow, err := e.CreateWorkspace(ctx, "root", env.UniqueName("e2e-shadow"), env.OnShard(attacker.Shard))
		check.Must(t, err)
		apply(ctx, t, top.admin(t, shadow.Path),
			fixtures.BindingYAML("network", top.Network.Path, fixtures.VPCs.Group),
			"apiVersion: v1\nkind: Namespace\nmetadata:\n  name: apps\n", shadowCRD)
		top.waitServed(ctx, t, shadow, fixtures.VPCs.GVR())
		top.waitServed(ctx, t, shadow, fixtures.VirtualMachines.GVR())
		// A VPC deleted there makes the webhook read the tenant's own,
		// cluster-scoped VirtualMachines.
		top.object(ctx, t, shadow, fixtures.VPCs, "vpc-x", map[string]interface{}{}, nil)
		top.expectDeleted(ctx, t, shadow, fixtures.VPCs, "vpc-x")

		// The tenant's own VirtualMachines are not the rule's dependents:
		// one that references a VPC does not hold it.
		top.object(ctx, t, shadow, fixtures.VPCs, "vpc-y", map[string]interface{}{}, nil)
		_, err = top.dynamicFor(t, shadow.Path).Resource(fixtures.VirtualMachines.GVR()).Create(ctx, vmObject("own-vm", "vpc-y"), metav1.CreateOptions{})
		check.Must(t, err)
		top.expectDeleted(ctx, t, shadow, fixtures.VPCs, "vpc-y")

		// In the attacker's own consumer, a VM in namespace b references
		// b/vpc-x; a/vpc-x is referenced by nothing.
		dyn := top.dynamicFor(t, attacker.Path)
		for _, ns := range []string{"a", "b"} {
			apply(ctx, t, top.admin(t, attacker.Path), "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: "+ns+"\n")
			check.Eventually(ctx, t, time.Minute, "creating VPC "+ns+"/vpc-x", func() error {
				_, err := dyn.Resource(fixtures.VPCs.GVR()).Namespace(ns).Create(ctx, vpcObject("vpc-x"), metav1.CreateOptions{})
				if apierrors.IsAlreadyExists(err) {
					return nil
				}
				return err
			})
		}
		vm := vmObject("vm-b", "vpc-x")
		_, err = dyn.Resource(fixtures.VirtualMachines.GVR()).Namespace("b").Create(ctx, vm, metav1.CreateOptions{})
		check.Must(t, err)
		if err := dyn.Resource(fixtures.VPCs.GVR()).Namespace("a").Delete(ctx, "vpc-x", metav1.DeleteOptions{}); err != nil {
			t.Fatalf("deleting a/vpc-x, which nothing references: %v", err)
		}
		err = dyn.Resource(fixtures.VPCs.GVR()).Namespace("b").Delete(ctx, "vpc-x", metav1.DeleteOptions{})
		if err == nil || !strings.Contains(err.Error(), "still referenced by VirtualMachine/vm-b") {
			t.Fatalf("deleting b/vpc-x, which vm-b references: want it refused, got %v", err)
		}
	})
}

// shadowCRD is a tenant's own, cluster-scoped VirtualMachine type, of the
// same group and resource as the bound one.
var shadowCRD = ownTypeCRD(fixtures.VirtualMachines, "Cluster")
