package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/depctrl/terraform-provider-depctrl/internal/rbac"
	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
	"github.com/depctrl/terraform-provider-depctrl/runtime/registry"
	"github.com/depctrl/terraform-provider-depctrl/test/check"
	"github.com/depctrl/terraform-provider-depctrl/test/env"
	"github.com/depctrl/terraform-provider-depctrl/test/fixtures"
	"github.com/depctrl/terraform-provider-depctrl/test/runtimetest"
)

// TestLeastPrivilege checks, with each runtime identity's own credentials
// against the real kcp, that it can do what its job needs and nothing
// beyond: the grants are those a platform team bootstraps (the same the
// provider's resources create).
func TestLeastPrivilege(t *testing.T) {
	ctx, e := integration(t, 10*time.Minute, env.TwoShards)
	top := setupTopology(ctx, t, e)
	consumer := top.Consumers[0]
	top.vpcInUse(ctx, t, consumer)

	as := func(user, path string) dynamic.Interface {
		t.Helper()
		id, err := e.Identity(user)
		check.Must(t, err)
		d, err := dynamic.NewForConfig(e.IdentityConfig(id, path))
		check.Must(t, err)
		return d
	}
	secrets := schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	workspaces := schema.GroupVersionResource{Group: "tenancy.kcp.io", Version: "v1alpha1", Resource: "workspaces"}
	vwc := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
		"metadata": map[string]interface{}{"name": "sneaky"},
	}}

	type check struct {
		what    string
		allowed bool
		do      func() error
	}
	checks := []check{
		// The webhook reads dependents in consumer workspaces, on any shard.
		{"webhook lists VirtualMachines in a consumer", true, func() error {
			_, err := as(env.WebhookUser, consumer.Path).Resource(fixtures.VirtualMachines.GVR()).Namespace("apps").List(ctx, metav1.ListOptions{})
			return err
		}},
		{"webhook deletes a VirtualMachine in a consumer", false, func() error {
			return as(env.WebhookUser, consumer.Path).Resource(fixtures.VirtualMachines.GVR()).Namespace("apps").Delete(ctx, "vm-1", metav1.DeleteOptions{})
		}},
		{"webhook creates a webhook configuration in a provider workspace", false, func() error {
			_, err := as(env.WebhookUser, top.Network.Path).Resource(webhookGVR).Create(ctx, vwc, metav1.CreateOptions{})
			return err
		}},
		// It may read anything on the shard by default (see read_resources),
		// but write nothing but Events.
		{"webhook deletes a rule in a provider workspace", false, func() error {
			return as(env.WebhookUser, top.Compute.Path).Resource(rulesGVR).Delete(ctx, "anything", metav1.DeleteOptions{})
		}},
		{"webhook creates a Secret in a consumer", false, func() error {
			s := &unstructured.Unstructured{Object: map[string]interface{}{
				"apiVersion": "v1", "kind": "Secret", "metadata": map[string]interface{}{"name": "sneaky", "namespace": "apps"},
			}}
			_, err := as(env.WebhookUser, consumer.Path).Resource(secrets).Namespace("apps").Create(ctx, s, metav1.CreateOptions{})
			return err
		}},
		// The controller resolves paths and reaches provider workspaces only
		// through the export's virtual workspace.
		{"controller reads Workspaces in root", true, func() error {
			_, err := as(env.ControllerUser, "root").Resource(workspaces).List(ctx, metav1.ListOptions{})
			return err
		}},
		{"controller reads Workspaces in the nested parent", true, func() error {
			_, err := as(env.ControllerUser, top.Org.Path).Resource(workspaces).List(ctx, metav1.ListOptions{})
			return err
		}},
		{"controller lists VirtualMachines in a consumer", false, func() error {
			_, err := as(env.ControllerUser, consumer.Path).Resource(fixtures.VirtualMachines.GVR()).Namespace("apps").List(ctx, metav1.ListOptions{})
			return err
		}},
		{"controller writes a webhook configuration in a provider workspace directly", false, func() error {
			_, err := as(env.ControllerUser, top.Network.Path).Resource(webhookGVR).Create(ctx, vwc, metav1.CreateOptions{})
			return err
		}},
		{"controller reads Secrets in the dep-ctrl workspace", false, func() error {
			_, err := as(env.ControllerUser, top.DepCtrl.Path).Resource(secrets).Namespace("default").List(ctx, metav1.ListOptions{})
			return err
		}},
		{"controller creates a Workspace in root", false, func() error {
			ws := &unstructured.Unstructured{Object: map[string]interface{}{
				"apiVersion": "tenancy.kcp.io/v1alpha1", "kind": "Workspace", "metadata": map[string]interface{}{"name": "sneaky"},
			}}
			_, err := as(env.ControllerUser, "root").Resource(workspaces).Create(ctx, ws, metav1.CreateOptions{})
			return err
		}},
		{"controller deletes a rule's export", false, func() error {
			return as(env.ControllerUser, top.DepCtrl.Path).Resource(schema.GroupVersionResource{Group: "apis.kcp.io", Version: "v1alpha2", Resource: "apiexports"}).
				Delete(ctx, v1alpha1.DefaultAPIExportName, metav1.DeleteOptions{})
		}},
	}
	for _, c := range checks {
		err := c.do()
		switch {
		case c.allowed && err != nil:
			t.Errorf("%s: want allowed, got %v", c.what, err)
		case !c.allowed && err == nil:
			t.Errorf("%s: allowed, but the identity must not be able to", c.what)
		case !c.allowed && !apierrors.IsForbidden(err):
			t.Errorf("%s: want 403 Forbidden, got %v", c.what, err)
		default:
			t.Logf("%s: %s", c.what, map[bool]string{true: "allowed", false: "forbidden"}[c.allowed])
		}
	}
	if !top.exists(ctx, t, consumer, fixtures.VirtualMachines, "vm-1") {
		t.Fatal(fmt.Errorf("vm-1 is gone"))
	}
}

// TestNarrowedReadAccess runs the real webhook with its read access on the
// shards narrowed to named types (depctrl_shard's read_resources). Where
// it may not read a rule's dependent type it cannot know whether an object
// is referenced, so it refuses the delete and says why; once the type is
// named, protection works; a new reference to a type it may not read is
// refused until that type is named too; everything else stays unreadable.
func TestNarrowedReadAccess(t *testing.T) {
	requireIntegration(t)
	ctx := testContext(t, 10*time.Minute)
	// A kcp of its own: RBAC is additive, and tests in other packages grant
	// the same webhook identity read on everything in the shared one (the
	// provider's topology test does, under its own grant name), which would
	// let reads through whatever this test narrows.
	e := ownSingleShard(ctx, t)
	top := setupTopology(ctx, t, e)
	readOnShards := func(ctx context.Context, access rbac.ShardAccess) {
		t.Helper()
		for _, s := range e.Shards {
			cfg, err := e.ShardAdminConfig(s.Name, "system:admin")
			check.Must(t, err)
			apply(ctx, t, cfg, toYAML(t, rbac.ShardReader([]rbacv1.Subject{rbac.User(env.WebhookUser)}, access)))
		}
	}

	rt := runtimetest.Start(ctx, t, e, top.DepCtrl.Path)
	top.protectVPCs(ctx, t)
	for _, c := range top.Consumers {
		top.vpcInUse(ctx, t, c)
	}
	// A consumer that will be deleted while the webhook cannot read its
	// dependents.
	doomed := top.newConsumer(ctx, t, "e2e-doomed-narrow")
	top.object(ctx, t, doomed, fixtures.VPCs, "vpc-d", map[string]interface{}{}, nil)
	top.object(ctx, t, doomed, fixtures.VirtualMachines, "vm-d", ref("vpc-d"), nil)

	// decided deletes a referenced and an unreferenced VPC in every
	// consumer until accept accepts what the webhook answered for the
	// unreferenced one. The referenced one is never deleted.
	decided := func(what string, accept func(err error) error) {
		t.Helper()
		for _, c := range top.Consumers {
			check.Eventually(ctx, t, time.Minute, what+" on shard "+c.Shard, func() error {
				if err := top.remove(ctx, t, c, fixtures.VPCs, "vpc-1"); err == nil {
					t.Fatalf("vpc-1 was deleted in %s while vm-1 references it", c.Path)
				}
				top.object(ctx, t, c, fixtures.VPCs, "vpc-free", map[string]interface{}{}, nil)
				return accept(top.remove(ctx, t, c, fixtures.VPCs, "vpc-free"))
			})
		}
	}

	// Narrowed to a type no rule uses: the dependents cannot be read.
	readOnShards(ctx, rbac.ShardAccess{Dependents: []rbac.ReadResource{{Group: fixtures.FirewallRules.Group, Resource: fixtures.FirewallRules.Resource}}})
	decided("protected deletes to fail closed", func(err error) error {
		if err == nil {
			return fmt.Errorf("vpc-free deleted: the narrowed grant is not in force yet")
		}
		if !strings.Contains(err.Error(), "checking for dependents failed") || !strings.Contains(err.Error(), "forbidden") {
			return fmt.Errorf("the refusal does not say that reading the dependents was forbidden: %v", err)
		}
		t.Logf("refused: %v", err)
		return nil
	})
	// A workspace being deleted is never wedged: that decision reads only
	// the workspace's LogicalCluster, which a narrowed grant covers.
	if err := e.DeleteWorkspace(ctx, doomed.Path); err != nil {
		t.Fatalf("deleting a workspace that holds a referenced VPC while the webhook cannot read its VMs: %v", err)
	}

	// Narrowed to the rule's dependent type: deletions are decided again,
	// but a new reference cannot be checked against its target, which the
	// webhook may not read, so it is refused and says why.
	readOnShards(ctx, rbac.ShardAccess{Dependents: []rbac.ReadResource{{Group: fixtures.VirtualMachines.Group, Resource: fixtures.VirtualMachines.Resource}}})
	decided("protection to work with the dependent type named", func(err error) error {
		return err
	})
	for _, c := range top.Consumers {
		vms := top.objects(t, c, fixtures.VirtualMachines)
		check.Eventually(ctx, t, time.Minute, "a new reference to an unreadable type to be refused on shard "+c.Shard, func() error {
			_, err := vms.Create(ctx, vmObject("vm-new", "vpc-1"), metav1.CreateOptions{})
			if err == nil {
				check.Must(t, vms.Delete(ctx, "vm-new", metav1.DeleteOptions{}))
				return fmt.Errorf("created: the narrowed grant is not in force yet")
			}
			if !strings.Contains(err.Error(), "cannot record on vpcs/vpc-1") || !strings.Contains(err.Error(), "forbidden") {
				return fmt.Errorf("the refusal does not say that recording on the VPC was forbidden: %v", err)
			}
			t.Logf("refused: %v", err)
			return nil
		})
	}
	// The protected type named too: writes go through.
	readOnShards(ctx, rbac.ShardAccess{
		Dependents: []rbac.ReadResource{{Group: fixtures.VirtualMachines.Group, Resource: fixtures.VirtualMachines.Resource}},
		Protected:  []rbac.ReadResource{{Group: fixtures.VPCs.Group, Resource: fixtures.VPCs.Resource}},
	})
	for _, c := range top.Consumers {
		vms := top.objects(t, c, fixtures.VirtualMachines)
		check.Eventually(ctx, t, time.Minute, "a new reference to be admitted on shard "+c.Shard, func() error {
			_, err := vms.Create(ctx, vmObject("vm-new", "vpc-1"), metav1.CreateOptions{})
			return err
		})
		check.Must(t, vms.Delete(ctx, "vm-new", metav1.DeleteOptions{}))
	}
	for _, c := range top.Consumers {
		top.expectDenied(ctx, t, c, fixtures.VPCs, "vpc-1", "still referenced by VirtualMachine/vm-1")
	}

	// Without reindex, dependents indexed under older rules stay as they
	// are and are read in full at every deletion. A second rule over VMs
	// makes every VM's index stamp out of date.
	counter := counter(ctx, t, rt.WebhookMetricsURL)
	const (
		unindexedMetric = "depctrl_webhook_unindexed_dependents_examined_total"
		forbiddenMetric = `depctrl_webhook_reindex_total{outcome="forbidden"}`
	)
	top.createRule(ctx, t, top.Compute, ruleObject("vm-needs-vpc-too", fixtures.VirtualMachines, fixtures.VPCs, top.Network.Path, ".spec.networks[*].vpc"))
	top.waitReady(ctx, t, top.Compute, "vm-needs-vpc-too")
	c := top.Consumers[0]
	vm1 := func() string {
		vm, err := top.objects(t, c, fixtures.VirtualMachines).Get(ctx, "vm-1", metav1.GetOptions{})
		check.Must(t, err)
		return vm.GetLabels()[registry.StampLabel]
	}
	before, forbidden := vm1(), counter(forbiddenMetric)
	check.Eventually(ctx, t, time.Minute, "the webhook to be refused re-indexing in "+c.Path, func() error {
		top.object(ctx, t, c, fixtures.VPCs, "vpc-free", map[string]interface{}{}, nil)
		if err := top.remove(ctx, t, c, fixtures.VPCs, "vpc-free"); err != nil {
			return err
		}
		if counter(forbiddenMetric) == forbidden {
			return fmt.Errorf("no refusal counted yet")
		}
		return nil
	})
	// A denial may come from vm-1's intent on vpc-1 alone; an allowed
	// delete reads every dependent, vm-1 in full.
	top.expectDenied(ctx, t, c, fixtures.VPCs, "vpc-1", "still referenced by VirtualMachine/vm-1")
	unindexed := counter(unindexedMetric)
	top.object(ctx, t, c, fixtures.VPCs, "vpc-free-too", map[string]interface{}{}, nil)
	top.expectDeleted(ctx, t, c, fixtures.VPCs, "vpc-free-too")
	if got := counter(unindexedMetric) - unindexed; got < 1 {
		t.Fatalf("%v unindexed dependents read: vm-1 must still be read in full", got)
	}
	if after := vm1(); after != before {
		t.Fatalf("vm-1 was re-indexed (stamp %q, was %q) though the webhook may not patch VMs", after, before)
	}

	id, err := e.Identity(env.WebhookUser)
	check.Must(t, err)
	as, err := dynamic.NewForConfig(e.IdentityConfig(id, top.Consumers[0].Path))
	check.Must(t, err)
	_, err = as.Resource(schema.GroupVersionResource{Version: "v1", Resource: "secrets"}).Namespace("apps").List(ctx, metav1.ListOptions{})
	if !apierrors.IsForbidden(err) {
		t.Fatalf("with read_resources narrowed the webhook must not read Secrets; got %v", err)
	}
}
