package e2e

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/depctrl/terraform-provider-depctrl/test/check"
	"github.com/depctrl/terraform-provider-depctrl/test/env"
	"github.com/depctrl/terraform-provider-depctrl/test/fixtures"
)

// TestComponentsStoppedAtTheWrongMoment: on the real two-shard kcp, with
// settling on, a component stopped while what protection rests on changes
// never lets a referenced object go. Each subtest is a row of the security
// guide's "Components stopped at the wrong moment".
func TestComponentsStoppedAtTheWrongMoment(t *testing.T) {
	ctx, e := integration(t, 15*time.Minute, env.TwoShards)
	top, rt := install(ctx, t, e)
	rt.EnableSettling(ctx, t, "--settle-after", settleAfter.String())
	top.protectVPCs(ctx, t)

	t.Run("a rule edited while the controller is stopped", func(t *testing.T) {
		c := top.Consumers[0]
		s := &settling{top: top, rt: rt, ws: c, vpcs: top.objects(t, c, fixtures.VPCs)}
		for _, name := range []string{"primary", "edited"} {
			s.create(ctx, t, name)
		}
		// vm-backup names "edited" at a path no rule reads yet: the VPC
		// is unreferenced, and settled.
		top.object(ctx, t, c, fixtures.VirtualMachines, "vm-backup", map[string]interface{}{
			"vpcRef": map[string]interface{}{"name": "primary"}, "backupVpc": "edited"}, nil)
		s.waitSettled(ctx, t, "edited")

		rt.StopController(t)
		defer func() {
			rt.StartController(t)
			top.waitReady(ctx, t, top.Compute, "vm-needs-vpc")
		}()
		top.updateRule(ctx, t, top.Compute, "vm-needs-vpc", func(r *unstructured.Unstructured) {
			deps, _, _ := unstructured.NestedSlice(r.Object, "spec", "dependencies")
			check.Must(t, unstructured.SetNestedField(deps[0].(map[string]interface{}), ".spec.backupVpc", "fieldRef", "path"))
			check.Must(t, unstructured.SetNestedSlice(r.Object, deps, "spec", "dependencies"))
		})
		// The webhook enforces the edited rule at once; the stamp the
		// controller published for the old one must not outlive it.
		check.Eventually(ctx, t, time.Minute, "the webhook to withdraw the stamp of the old rule", func() error {
			if p := s.published(ctx, t); p != "" {
				return fmt.Errorf("still %q", p)
			}
			return nil
		})
		// kcp applies the changed configuration a moment after it is
		// stored: until then a dry run still skips the webhook.
		check.Eventually(ctx, t, time.Minute, "the settled VPC's deletion to be decided by the webhook", func() error {
			return top.decidedDenial(ctx, t, c, fixtures.VPCs, "edited", "still referenced by VirtualMachine/vm-backup")
		})
	})

	t.Run("a rule created while the controller is stopped", func(t *testing.T) {
		c := top.Consumers[1]
		s := &settling{top: top, rt: rt, ws: c, vpcs: top.objects(t, c, fixtures.VPCs)}
		s.create(ctx, t, "db-net")
		// The ManagedDB names the VPC before any rule reads ManagedDBs.
		top.object(ctx, t, c, fixtures.ManagedDBs, "db-1", ref("db-net"), nil)
		s.waitSettled(ctx, t, "db-net")

		rt.StopController(t)
		defer func() {
			rt.StartController(t)
			top.waitReady(ctx, t, top.Compute, "db-needs-vpc")
			top.deleteRule(ctx, t, top.Compute, "db-needs-vpc")
		}()
		top.createRule(ctx, t, top.Compute, ruleObject("db-needs-vpc", fixtures.ManagedDBs, fixtures.VPCs, top.Network.Path, ".spec.vpcRef.name"))
		// Only the controller keeps a stamp as a bridge to added rules
		// (settle.Bridges): the stamp it published as current for the
		// rules before is not one, and the webhook withdraws it.
		check.Eventually(ctx, t, time.Minute, "the webhook to withdraw the stamp of the rules before", func() error {
			if p := s.published(ctx, t); p != "" {
				return fmt.Errorf("still %q", p)
			}
			return nil
		})
		check.Eventually(ctx, t, time.Minute, "the settled VPC's deletion to be decided by the webhook", func() error {
			return top.decidedDenial(ctx, t, c, fixtures.VPCs, "db-net", "still referenced by ManagedDB/db-1")
		})
	})
}
