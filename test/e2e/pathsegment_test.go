package e2e

import (
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/depctrl/terraform-provider-depctrl/runtime/settle"
	"github.com/depctrl/terraform-provider-depctrl/test/check"
	"github.com/depctrl/terraform-provider-depctrl/test/env"
	"github.com/depctrl/terraform-provider-depctrl/test/fixtures"
)

// TestPathSegmentNames protects a type whose schema says nameValidation:
// PathSegmentName, so that kcp serves its objects under names that are no
// DNS-1123 subdomains (SUBNET_1). Such a name is a name: a new reference to
// a settled SUBNET_1 unsettles it before the write is admitted, and its
// deletion is refused while the reference stands; an unreferenced one is
// deleted. Before, the webhook took every such value for no reference: the
// subnet stayed settled under a VM that referenced it, and its deletion
// skipped the webhook.
func TestPathSegmentNames(t *testing.T) {
	ctx, e := integration(t, 10*time.Minute, env.TwoShards)
	top, rt := install(ctx, t, e)
	rt.EnableSettling(ctx, t, "--settle-after", settleAfter.String())
	apply(ctx, t, top.admin(t, top.Compute.Path), fixtures.ExportYAML(fixtures.Subnets))
	for _, c := range top.Consumers {
		apply(ctx, t, top.admin(t, c.Path), fixtures.BindingYAML("subnets", top.Compute.Path, fixtures.Subnets.Group))
		top.waitServed(ctx, t, c, fixtures.Subnets.GVR())
	}
	top.createRule(ctx, t, top.Compute, ruleObject("vm-needs-subnet", fixtures.VirtualMachines, fixtures.Subnets, top.Compute.Path, ".spec.subnet"))
	top.waitReady(ctx, t, top.Compute, "vm-needs-subnet")

	for _, c := range top.Consumers {
		t.Run("shard "+c.Shard, func(t *testing.T) {
			subnets := top.objects(t, c, fixtures.Subnets)
			settledLabel := func(name string) string {
				t.Helper()
				u, err := subnets.Get(ctx, name, metav1.GetOptions{})
				check.Must(t, err)
				return u.GetLabels()[settle.SettledLabel]
			}

			top.object(ctx, t, c, fixtures.Subnets, "SUBNET_1", map[string]interface{}{}, nil)
			check.Eventually(ctx, t, 2*time.Minute, "Subnet SUBNET_1 settled", func() error {
				stamp := top.publishedStamp(ctx, t, fixtures.Subnets)
				if l := settledLabel("SUBNET_1"); stamp == "" || l != stamp {
					return fmt.Errorf("label %q, published %q", l, stamp)
				}
				return nil
			})
			top.object(ctx, t, c, fixtures.VirtualMachines, "vm-on-subnet-1", map[string]interface{}{"subnet": "SUBNET_1"}, nil)
			if l := settledLabel("SUBNET_1"); l != "" {
				t.Fatalf("SUBNET_1 is still settled (%q) after a VM referencing it was admitted", l)
			}
			top.expectDenied(ctx, t, c, fixtures.Subnets, "SUBNET_1", "still referenced by VirtualMachine/vm-on-subnet-1")

			// Unreferenced and young (the webhook decides): deleted.
			top.object(ctx, t, c, fixtures.Subnets, "SUBNET_FREE", map[string]interface{}{}, nil)
			if err := top.remove(ctx, t, c, fixtures.Subnets, "SUBNET_FREE"); err != nil {
				t.Fatalf("deleting the unreferenced SUBNET_FREE: %v", err)
			}

			// Once the VM is gone, so is the protection.
			if err := top.remove(ctx, t, c, fixtures.VirtualMachines, "vm-on-subnet-1"); err != nil {
				t.Fatalf("deleting vm-on-subnet-1: %v", err)
			}
			check.Eventually(ctx, t, time.Minute, "SUBNET_1 deleted once nothing references it", func() error {
				return top.remove(ctx, t, c, fixtures.Subnets, "SUBNET_1")
			})
		})
	}
}
