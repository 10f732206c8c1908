package provider

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/depctrl/terraform-provider-depctrl/internal/rbac"
	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
	"github.com/depctrl/terraform-provider-depctrl/test/check"
	"github.com/depctrl/terraform-provider-depctrl/test/env"
	"github.com/depctrl/terraform-provider-depctrl/test/fixtures"
	"github.com/depctrl/terraform-provider-depctrl/test/runtimetest"
)

// tenantObjectsHCL is a tenant's VPC and three VMs that reference it, as
// depctrl_objects in the namespace ns of the workspace ws, with nothing
// that orders them: Terraform creates and destroys them in any order.
func tenantObjectsHCL(e *env.Env, ws, ns, cidr string) string {
	return providerConfig(e) + fmt.Sprintf(`
locals {
  workspace = %[1]q
  namespace = %[2]q
}

resource "depctrl_object" "vpc" {
  workspace_path = local.workspace
  manifest = yamlencode({
    apiVersion = "network.test.io/v1"
    kind       = "VPC"
    metadata   = { name = "vpc-1", namespace = local.namespace, labels = { tier = "network" } }
    spec       = { cidr = %[3]q }
  })
}

resource "depctrl_object" "vm" {
  count          = 3
  workspace_path = local.workspace
  manifest = yamlencode({
    apiVersion = "compute.test.io/v1"
    kind       = "VirtualMachine"
    metadata   = { name = "vm-${count.index}", namespace = local.namespace }
    spec       = { vpcRef = { name = "vpc-1" }, cpus = 2 }
  })
}
`, ws, ns, cidr)
}

// TestAccObjectResource_deferredDestroy: on the two-shard kcp, with the
// runtime deferring deletions (the webhook's --deferred-deletion and the
// shards' grant), a tenant's VPC and the VMs that reference it, managed as
// depctrl_objects with nothing ordering them, are created, their drift is
// shown and taken back, one is imported, and one destroy removes them all:
// the VPC's deletion, refused while a VM references it, is deferred, and
// destroy waits until the webhook has deleted it. In a namespace that does
// not opt in, the same deletion fails, naming the refusal.
func TestAccObjectResource_deferredDestroy(t *testing.T) {
	e := accEnv(t, env.TwoShards)
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	depctrl, compute, network := servedTopology(ctx, t, e)
	rt := runtimetest.Start(ctx, t, e, depctrl)

	// VMs protect the VPC they name at .spec.vpcRef.name.
	check.Must(t, fixtures.ApplyYAML(ctx, adminConfig(t, e, compute), fmt.Sprintf(`apiVersion: %s
kind: DependencyRule
metadata:
  name: vm-needs-vpc
spec:
  dependent: {apiExportName: compute.test.io, group: compute.test.io, version: v1, kind: VirtualMachine, resource: virtualmachines}
  dependencies:
  - apiExportRef: {path: %q, name: network.test.io}
    group: network.test.io
    version: v1
    resource: vpcs
    fieldRef: {path: .spec.vpcRef.name}
`, v1alpha1.GroupVersion.String(), network)))
	computeClient := adminDynamic(t, e, compute)
	check.Eventually(ctx, t, 3*time.Minute, "the rule to be enforced", func() error { return ruleEnforcedInKCP(ctx, computeClient, "vm-needs-vpc") })

	// Deferral: every shard grants the webhook what carrying deletions out
	// takes (what depctrl_shard's deferred_deletion renders), and the
	// webhook defers.
	grant := env.UniqueName("deferral")
	for _, s := range e.Shards {
		cfg, err := e.ShardAdminConfig(s.Name, systemAdminCluster)
		check.Must(t, err)
		check.Must(t, fixtures.ApplyYAML(ctx, cfg, grantYAML(t, renamed(rbac.ShardReader([]rbacv1.Subject{rbac.User(env.WebhookUser)}, rbac.ShardAccess{Protected: []rbac.ReadResource{{Group: fixtures.VPCs.Group, Resource: fixtures.VPCs.Resource}}, DeferredDeletion: true}), grant))))
		admin := shardAdmin(t, e, s.Name)
		t.Cleanup(func() {
			_ = admin.Resource(clusterRoleBindingsGVR).Delete(context.Background(), grant, metav1.DeleteOptions{})
			_ = admin.Resource(clusterRolesGVR).Delete(context.Background(), grant, metav1.DeleteOptions{})
		})
	}
	rt.StopWebhook(t)
	rt.StartWebhook(ctx, t, "--deferred-deletion")

	// The tenant's workspace, on the last shard, binds both APIs; its
	// namespace apps opts in to deferred deletion, strict does not.
	org := strings.TrimSuffix(compute, ":compute")
	tenant, err := e.CreateWorkspace(ctx, org, "tenant", env.OnShard(e.Shards[len(e.Shards)-1].Name))
	check.Must(t, err)
	check.Must(t, fixtures.ApplyYAML(ctx, adminConfig(t, e, tenant.Path),
		fixtures.BindingYAML("network", network, fixtures.VPCs.Group)+"---\n"+
			fixtures.BindingYAML("compute", compute, fixtures.VirtualMachines.Group)+"---\n"+
			fmt.Sprintf("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: apps\n  annotations:\n    %s: \"true\"\n", v1alpha1.DeferDeletionAnnotation)+"---\n"+
			"apiVersion: v1\nkind: Namespace\nmetadata:\n  name: strict\n"))
	d := adminDynamic(t, e, tenant.Path)
	for _, a := range []fixtures.APIType{fixtures.VPCs, fixtures.VirtualMachines} {
		check.Eventually(ctx, t, time.Minute, a.Resource+" served in "+tenant.Path, func() error {
			_, err := d.Resource(a.GVR()).List(ctx, metav1.ListOptions{})
			return err
		})
	}
	vpcs, vms := d.Resource(fixtures.VPCs.GVR()), d.Resource(fixtures.VirtualMachines.GVR())

	t.Run("deferred", func(t *testing.T) {
		vpc, vm0 := "depctrl_object.vpc", "depctrl_object.vm[0]"
		config := tenantObjectsHCL(e, tenant.Path, "apps", "10.0.0.0/16")
		// A VM outside Terraform references the VPC too, and is deleted
		// only once the VPC's deletion has been deferred: whatever order
		// Terraform deletes in, the destroy meets the deferral.
		var deferredSeen atomic.Value // the deferral's record, once seen
		outside := func() {
			createVM(ctx, t, vms.Namespace("apps"), "vm-outside", "vpc-1")
			go func() {
				for ctx.Err() == nil {
					if u, err := vpcs.Namespace("apps").Get(ctx, "vpc-1", metav1.GetOptions{}); err == nil && u.GetAnnotations()[v1alpha1.DeletionDeferredAnnotation] != "" {
						deferredSeen.Store(u.GetAnnotations()[v1alpha1.DeletionDeferredAnnotation])
						// Destroy must still be waiting when the VPC goes.
						time.Sleep(3 * time.Second)
						_ = vms.Namespace("apps").Delete(ctx, "vm-outside", metav1.DeleteOptions{})
						return
					}
					time.Sleep(200 * time.Millisecond)
				}
			}()
		}
		resource.Test(t, withRuntimeRunning(resource.TestCase{
			CheckDestroy: func(*terraform.State) error {
				record, _ := deferredSeen.Load().(string)
				if record == "" {
					return fmt.Errorf("the VPC's deletion was never deferred during destroy")
				}
				t.Logf("during destroy, the VPC's deletion was deferred: %s", record)
				return tenantEmpty(ctx, vpcs, vms, "apps")
			},
			Steps: emptyPlanAfterEachApply(slices.Concat([]resource.TestStep{
				{
					Config: config,
					ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
						plancheck.ExpectKnownValue(vpc, tfjsonpath.New("id"), knownvalue.StringExact(tenant.Path+"/network.test.io/v1/VPC/apps/vpc-1")),
						plancheck.ExpectKnownValue(vpc, tfjsonpath.New("live_fingerprint"), knownvalue.StringRegexp(regexp.MustCompile(`^sha256:[0-9a-f]{64}$`))),
					}},
					ConfigStateChecks: []statecheck.StateCheck{
						statecheck.ExpectKnownValue(vpc, tfjsonpath.New("id"), knownvalue.StringExact(tenant.Path+"/network.test.io/v1/VPC/apps/vpc-1")),
						statecheck.ExpectKnownValue(vm0, tfjsonpath.New("id"), knownvalue.StringExact(tenant.Path+"/compute.test.io/v1/VirtualMachine/apps/vm-0")),
						statecheck.ExpectKnownValue(vpc, tfjsonpath.New("uid"), knownvalue.StringRegexp(regexp.MustCompile(`^[0-9a-f-]{36}$`))),
						statecheck.ExpectKnownValue(vpc, tfjsonpath.New("wait_for_deletion"), knownvalue.Bool(true)),
					},
					// The VPC in kcp has its UID, and VM references it.
					Check: resource.ComposeAggregateTestCheckFunc(
						resource.TestCheckResourceAttrWith(vpc, "uid", func(uid string) error {
							u, err := vpcs.Namespace("apps").Get(ctx, "vpc-1", metav1.GetOptions{})
							if err == nil && string(u.GetUID()) != uid {
								err = fmt.Errorf("state has uid %s, kcp %s", uid, u.GetUID())
							}
							return err
						}),
						func(*terraform.State) error { return expectCIDR(ctx, vpcs, "10.0.0.0/16") },
					),
				},
				{
					// Drift: a field the manifest sets is changed by hand. The
					// plan shows an update of the VPC alone; apply takes it back.
					PreConfig: func() {
						_, err := vpcs.Namespace("apps").Patch(ctx, "vpc-1", k8stypes.MergePatchType, []byte(`{"spec":{"cidr":"10.9.0.0/16"}}`), metav1.PatchOptions{FieldManager: "by-hand"})
						check.Must(t, err)
					},
					Config: config,
					ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
						plancheck.ExpectNonEmptyPlan(),
						plancheck.ExpectResourceAction(vpc, plancheck.ResourceActionUpdate),
						plancheck.ExpectResourceAction(vm0, plancheck.ResourceActionNoop),
					}},
					Check: func(*terraform.State) error { return expectCIDR(ctx, vpcs, "10.0.0.0/16") },
				},
			}, identitySteps(t,
				// The identity names the object, and an import block may give
				// it instead of the ID.
				expectIdentity(config, vpc, map[string]knownvalue.Check{
					"workspace_path": knownvalue.StringExact(tenant.Path), "api_version": knownvalue.StringExact("network.test.io/v1"),
					"kind": knownvalue.StringExact("VPC"), "namespace": knownvalue.StringExact("apps"), "name": knownvalue.StringExact("vpc-1"),
				}),
			), []resource.TestStep{
				{
					// What the manifest does not set never counts: a label and
					// an annotation added by hand plan nothing.
					PreConfig: func() {
						_, err := vpcs.Namespace("apps").Patch(ctx, "vpc-1", k8stypes.MergePatchType,
							[]byte(`{"metadata":{"labels":{"team":"a"},"annotations":{"note":"by hand"}},"spec":{"extra":"x"}}`), metav1.PatchOptions{FieldManager: "by-hand"})
						check.Must(t, err)
					},
					Config:   config,
					PlanOnly: true,
				},
				{
					// A changed manifest updates the object in place.
					Config: tenantObjectsHCL(e, tenant.Path, "apps", "10.1.0.0/16"),
					ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction(vpc, plancheck.ResourceActionUpdate),
					}},
					Check: func(*terraform.State) error { return expectCIDR(ctx, vpcs, "10.1.0.0/16") },
				},
				{
					// Import by ID reads back the same object; its manifest is
					// the minimal one (and so is the fingerprint over it).
					ResourceName:            vm0,
					ImportState:             true,
					ImportStateId:           tenant.Path + "/compute.test.io/v1/VirtualMachine/apps/vm-0",
					ImportStateVerify:       true,
					ImportStateVerifyIgnore: []string{"manifest", "live_fingerprint", "timeouts"},
				},
				{
					// An import block imports it as a user would: the plan
					// updates the imported manifest, which holds only what
					// names the object, to the configured one.
					ResourceName:       vm0,
					ImportState:        true,
					ImportStateKind:    resource.ImportBlockWithID,
					ImportStateId:      tenant.Path + "/compute.test.io/v1/VirtualMachine/apps/vm-0",
					ExpectNonEmptyPlan: true,
					ImportPlanChecks: resource.ImportPlanChecks{PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction(vm0, plancheck.ResourceActionUpdate),
					}},
				},
				{
					// The VM outside Terraform is created before the destroy
					// that follows this last step.
					PreConfig: outside,
					Config:    tenantObjectsHCL(e, tenant.Path, "apps", "10.1.0.0/16"),
				},
			})),
		}))
	})

	t.Run("refused without deferral", func(t *testing.T) {
		// In strict, a VPC managed by Terraform is referenced by a VM that
		// is not: destroying the VPC fails, naming the refusal and the ways
		// out; once the VM is gone, destroy succeeds.
		config := func(withVPC bool) string {
			c := providerConfig(e)
			if withVPC {
				c += fmt.Sprintf(`
resource "depctrl_object" "vpc" {
  workspace_path = %q
  manifest = jsonencode({
    apiVersion = "network.test.io/v1"
    kind       = "VPC"
    metadata   = { name = "vpc-strict", namespace = "strict" }
    spec       = {}
  })
  timeouts {
    delete = "30s"
  }
}
`, tenant.Path)
			}
			return c
		}
		resource.Test(t, resource.TestCase{
			ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
			CheckDestroy:             func(*terraform.State) error { return tenantEmpty(ctx, vpcs, vms, "strict") },
			Steps: []resource.TestStep{
				{
					Config: config(true),
					Check: func(*terraform.State) error {
						createVM(ctx, t, vms.Namespace("strict"), "vm-strict", "vpc-strict")
						return nil
					},
				},
				{
					Config: config(false),
					ExpectError: regexp.MustCompile(`(?s)Deletion refused: object still referenced.*still referenced by\s+VirtualMachine/vm-strict.*depends_on.*` +
						wrapped(v1alpha1.DeferDeletionAnnotation) + `.*defer_deletion`),
				},
				{
					PreConfig: func() { check.Must(t, vms.Namespace("strict").Delete(ctx, "vm-strict", metav1.DeleteOptions{})) },
					Config:    config(false),
				},
			},
		})
	})
}

// createVM creates, outside Terraform, a VirtualMachine that references
// the VPC vpc.
func createVM(ctx context.Context, t *testing.T, vms dynamic.ResourceInterface, name, vpc string) {
	t.Helper()
	u := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": fixtures.VirtualMachines.Group + "/v1", "kind": fixtures.VirtualMachines.Kind,
		"metadata": map[string]interface{}{"name": name},
		"spec":     map[string]interface{}{"vpcRef": map[string]interface{}{"name": vpc}},
	}}
	check.Eventually(ctx, t, time.Minute, "creating VirtualMachine "+name, func() error {
		_, err := vms.Create(ctx, u, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	})
}

// expectCIDR checks the VPC's spec.cidr in kcp.
func expectCIDR(ctx context.Context, vpcs dynamic.NamespaceableResourceInterface, want string) error {
	u, err := vpcs.Namespace("apps").Get(ctx, "vpc-1", metav1.GetOptions{})
	if err != nil {
		return err
	}
	if got, _, _ := unstructured.NestedString(u.Object, "spec", "cidr"); got != want {
		return fmt.Errorf("the VPC in kcp has spec.cidr %q, want %q", got, want)
	}
	return nil
}

// tenantEmpty fails unless no VPC and no VM is left in the namespace ns.
func tenantEmpty(ctx context.Context, vpcs, vms dynamic.NamespaceableResourceInterface, ns string) error {
	var left []string
	for _, r := range []dynamic.NamespaceableResourceInterface{vpcs, vms} {
		list, err := r.Namespace(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		for _, o := range list.Items {
			left = append(left, o.GetKind()+"/"+o.GetName())
		}
	}
	if len(left) > 0 {
		return fmt.Errorf("left in namespace %s after destroy: %v", ns, left)
	}
	return nil
}
