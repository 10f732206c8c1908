package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"

	"github.com/depctrl/terraform-provider-depctrl/test/check"
	"github.com/depctrl/terraform-provider-depctrl/test/env"
	"github.com/depctrl/terraform-provider-depctrl/test/fixtures"
)

// TestAttacks tries, on the real two-shard kcp, every way kcp lets a client
// remove a referenced VPC or make a reference that would dangle, in the
// consumer on each shard. Each subtest is one row of the attack catalogue in
// the security guide; a referenced object must survive every one of them.
func TestAttacks(t *testing.T) {
	ctx, e := integration(t, 20*time.Minute, env.TwoShards)
	top, _ := install(ctx, t, e)
	top.protectVPCs(ctx, t)

	for _, c := range top.Consumers {
		a := &attack{top: top, ws: c, vpcs: top.dynamicFor(t, c.Path).Resource(fixtures.VPCs.GVR()), vms: top.dynamicFor(t, c.Path).Resource(fixtures.VirtualMachines.GVR())}
		t.Run("shard "+c.Shard, func(t *testing.T) { a.run(ctx, t) })
	}

	t.Run("namespace deletion waits for a dependent outside the namespace", func(t *testing.T) {
		namespaceDeletionWaits(ctx, t, top)
	})
	t.Run("APIBinding deletion waits for the dependents", func(t *testing.T) {
		bindingDeletionWaits(ctx, t, top)
	})
}

// attack holds one consumer's clients.
type attack struct {
	top       *Topology
	ws        env.Workspace
	vpcs, vms dynamic.NamespaceableResourceInterface
}

func (a *attack) run(ctx context.Context, t *testing.T) {
	// referenced creates vpc and a VM that references it, and returns a
	// check that vpc survived what the subtest did.
	referenced := func(t *testing.T, vpc string) func() {
		t.Helper()
		a.top.object(ctx, t, a.ws, fixtures.VPCs, vpc, map[string]interface{}{}, nil)
		a.top.object(ctx, t, a.ws, fixtures.VirtualMachines, "vm-of-"+vpc, ref(vpc), nil)
		return func() {
			t.Helper()
			if !a.top.exists(ctx, t, a.ws, fixtures.VPCs, vpc) {
				t.Fatalf("%s was deleted while VirtualMachine/vm-of-%s references it", vpc, vpc)
			}
		}
	}
	// refused asserts err is protection's refusal naming the dependent.
	refused := func(t *testing.T, err error, vpc string) {
		t.Helper()
		if err == nil || !strings.Contains(err.Error(), "still referenced by VirtualMachine/vm-of-"+vpc) {
			t.Fatalf("want the deletion of %s refused as still referenced, got %v", vpc, err)
		}
	}
	apps := a.vpcs.Namespace("apps")

	t.Run("DELETECOLLECTION by field selector", func(t *testing.T) {
		survived := referenced(t, "vpc-field")
		refused(t, apps.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{FieldSelector: "metadata.name=vpc-field"}), "vpc-field")
		survived()
	})
	t.Run("DELETECOLLECTION by label selector", func(t *testing.T) {
		survived := referenced(t, "vpc-label")
		label(ctx, t, apps, "vpc-label", "attack", "label")
		refused(t, apps.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "attack=label"}), "vpc-label")
		survived()
	})
	t.Run("DELETECOLLECTION of the whole collection", func(t *testing.T) {
		// The API server stops a collection delete at the first refused
		// item, so which unreferenced items went first is its business;
		// the referenced one stays.
		survived := referenced(t, "vpc-all")
		refused(t, apps.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}), "vpc-all")
		survived()
	})
	t.Run("DELETECOLLECTION of unreferenced objects goes through", func(t *testing.T) {
		for _, n := range []string{"vpc-free-1", "vpc-free-2"} {
			a.top.object(ctx, t, a.ws, fixtures.VPCs, n, map[string]interface{}{}, nil)
			label(ctx, t, apps, n, "attack", "free")
		}
		check.Must(t, apps.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "attack=free"}))
		for _, n := range []string{"vpc-free-1", "vpc-free-2"} {
			if a.top.exists(ctx, t, a.ws, fixtures.VPCs, n) {
				t.Fatalf("%s was not deleted by a collection delete although nothing references it", n)
			}
		}
	})
	t.Run("DELETECOLLECTION across all namespaces is not served", func(t *testing.T) {
		// Kubernetes serves collection deletes of namespaced resources
		// per namespace only; the cluster-wide URL is not a route.
		survived := referenced(t, "vpc-cross")
		err := a.vpcs.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{FieldSelector: "metadata.name=vpc-cross"})
		if !apierrors.IsNotFound(err) && !apierrors.IsMethodNotSupported(err) {
			refused(t, err, "vpc-cross")
		}
		survived()
	})
	t.Run("named DELETE with every propagation policy and grace period 0", func(t *testing.T) {
		survived := referenced(t, "vpc-opts")
		for _, opts := range []metav1.DeleteOptions{
			{PropagationPolicy: ptr.To(metav1.DeletePropagationForeground)},
			{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)},
			{PropagationPolicy: ptr.To(metav1.DeletePropagationOrphan)},
			{GracePeriodSeconds: ptr.To[int64](0)}, // kubectl delete --force --grace-period=0
		} {
			refused(t, apps.Delete(ctx, "vpc-opts", opts), "vpc-opts")
		}
		survived()
	})
	t.Run("dry-run DELETE is decided like the real one and changes nothing", func(t *testing.T) {
		survived := referenced(t, "vpc-dry")
		refused(t, apps.Delete(ctx, "vpc-dry", metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}), "vpc-dry")
		survived()
		a.top.object(ctx, t, a.ws, fixtures.VPCs, "vpc-dry-free", map[string]interface{}{}, nil)
		check.Must(t, apps.Delete(ctx, "vpc-dry-free", metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}))
		if !a.top.exists(ctx, t, a.ws, fixtures.VPCs, "vpc-dry-free") {
			t.Fatal("a dry-run delete removed the object")
		}
	})
	t.Run("straight to the shard, past the front-proxy", func(t *testing.T) {
		survived := referenced(t, "vpc-direct")
		cfg, err := a.top.Env.ShardAdminConfig(a.ws.Shard, a.ws.Cluster)
		check.Must(t, err)
		direct, err := dynamic.NewForConfig(cfg)
		check.Must(t, err)
		onShard := direct.Resource(fixtures.VPCs.GVR()).Namespace("apps")
		refused(t, onShard.Delete(ctx, "vpc-direct", metav1.DeleteOptions{}), "vpc-direct")
		refused(t, onShard.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{FieldSelector: "metadata.name=vpc-direct"}), "vpc-direct")
		survived()
	})
	t.Run("an UPDATE that adds a reference protects at once", func(t *testing.T) {
		a.top.object(ctx, t, a.ws, fixtures.VPCs, "vpc-later", map[string]interface{}{}, nil)
		a.top.object(ctx, t, a.ws, fixtures.VirtualMachines, "vm-of-vpc-later", ref("elsewhere"), nil)
		setRef(ctx, t, a.vms.Namespace("apps"), "vm-of-vpc-later", "vpc-later")
		refused(t, apps.Delete(ctx, "vpc-later", metav1.DeleteOptions{}), "vpc-later")
	})
	t.Run("a new reference to an object being deleted is refused", func(t *testing.T) {
		// Nothing references vpc-doomed, so its deletion is allowed; a
		// finalizer holds it while it is being deleted.
		a.top.object(ctx, t, a.ws, fixtures.VPCs, "vpc-doomed", map[string]interface{}{}, nil)
		setFinalizers(ctx, t, apps, "vpc-doomed", "e2e.test.io/hold")
		check.Must(t, apps.Delete(ctx, "vpc-doomed", metav1.DeleteOptions{}))
		want := "virtualmachines/%s cannot reference vpcs/vpc-doomed: vpcs/vpc-doomed is being deleted"

		// A create naming it is refused ...
		vm := vmObject("vm-late", "vpc-doomed")
		_, err := a.vms.Namespace("apps").Create(ctx, vm, metav1.CreateOptions{})
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf(want, "vm-late")) {
			t.Fatalf("creating a VM that references a VPC being deleted: want %q, got %v", fmt.Sprintf(want, "vm-late"), err)
		}
		// ... as a dry run too ...
		_, err = a.vms.Namespace("apps").Create(ctx, vm, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err == nil || !strings.Contains(err.Error(), "is being deleted") {
			t.Fatalf("a dry-run create must be decided alike, got %v", err)
		}
		// ... and so is an update that adds the reference.
		a.top.object(ctx, t, a.ws, fixtures.VirtualMachines, "vm-moving", ref("elsewhere"), nil)
		vms := a.vms.Namespace("apps")
		obj, err := vms.Get(ctx, "vm-moving", metav1.GetOptions{})
		check.Must(t, err)
		check.Must(t, unstructured.SetNestedField(obj.Object, "vpc-doomed", "spec", "vpcRef", "name"))
		_, err = vms.Update(ctx, obj, metav1.UpdateOptions{})
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf(want, "vm-moving")) {
			t.Fatalf("updating a VM to reference a VPC being deleted: want %q, got %v", fmt.Sprintf(want, "vm-moving"), err)
		}
		// Once its finalizer is done the VPC is gone, and nothing
		// references it.
		setFinalizers(ctx, t, apps, "vpc-doomed")
		check.Eventually(ctx, t, time.Minute, "vpc-doomed to be gone", func() error {
			if a.top.exists(ctx, t, a.ws, fixtures.VPCs, "vpc-doomed") {
				return fmt.Errorf("still there")
			}
			return nil
		})
		if _, err := vms.Get(ctx, "vm-late", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Fatalf("vm-late exists although its create was refused: %v", err)
		}
	})
}

// namespaceDeletionWaits: a cluster-scoped Region that references a VPC
// protects it in every namespace, so deleting the VPC's namespace must leave
// the VPC, and the namespace Terminating with the blocker named, until the
// Region is gone; then the namespace finishes.
func namespaceDeletionWaits(ctx context.Context, t *testing.T, top *Topology) {
	c := top.Consumers[len(top.Consumers)-1]
	top.createRule(ctx, t, top.Network, ruleObject("region-needs-vpc", fixtures.Regions, fixtures.VPCs, top.Network.Path, ".spec.vpc"))
	defer top.deleteRule(ctx, t, top.Network, "region-needs-vpc")
	top.waitReady(ctx, t, top.Network, "region-needs-vpc")

	dyn := top.dynamicFor(t, c.Path)
	namespaces := dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"})
	apply(ctx, t, top.admin(t, c.Path), "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: doomed\n")
	inDoomed := dyn.Resource(fixtures.VPCs.GVR()).Namespace("doomed")
	check.Eventually(ctx, t, time.Minute, "creating VPC doomed/vpc-ns", func() error {
		_, err := inDoomed.Create(ctx, &unstructured.Unstructured{Object: map[string]interface{}{
			"apiVersion": fixtures.VPCs.Group + "/v1", "kind": fixtures.VPCs.Kind, "metadata": map[string]interface{}{"name": "vpc-ns"}, "spec": map[string]interface{}{},
		}}, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	})
	top.object(ctx, t, c, fixtures.Regions, "region-ns", map[string]interface{}{"vpc": "vpc-ns"}, nil)

	check.Must(t, namespaces.Delete(ctx, "doomed", metav1.DeleteOptions{}))
	waitBlockerReported(ctx, t, namespaces, "doomed", "still referenced by Region/region-ns")
	if _, err := inDoomed.Get(ctx, "vpc-ns", metav1.GetOptions{}); err != nil {
		t.Fatalf("the namespace deleter removed a referenced VPC: %v", err)
	}
	check.Must(t, dyn.Resource(fixtures.Regions.GVR()).Delete(ctx, "region-ns", metav1.DeleteOptions{}))
	check.Eventually(ctx, t, 3*time.Minute, "the namespace to finish deleting once nothing references its VPC", func() error {
		if _, err := namespaces.Get(ctx, "doomed", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("namespace still there (%v)", err)
		}
		return nil
	})
}

// bindingDeletionWaits: deleting the APIBinding that serves VPCs makes kcp
// delete every VPC in the workspace, by collection. A referenced VPC must
// stay, and the binding with it, its condition naming the blocker, until
// the VM is gone; then the binding finishes.
func bindingDeletionWaits(ctx context.Context, t *testing.T, top *Topology) {
	ws := top.newConsumer(ctx, t, "e2e-unbind", env.OnShard(top.Consumers[0].Shard))
	defer func() { _ = top.Env.DeleteWorkspace(context.Background(), ws.Path) }()
	top.object(ctx, t, ws, fixtures.VPCs, "vpc-b", map[string]interface{}{}, nil)
	top.object(ctx, t, ws, fixtures.VirtualMachines, "vm-b", ref("vpc-b"), nil)
	top.object(ctx, t, ws, fixtures.VPCs, "vpc-b-free", map[string]interface{}{}, nil)

	bindings := top.dynamicFor(t, ws.Path).Resource(schema.GroupVersionResource{Group: "apis.kcp.io", Version: "v1alpha2", Resource: "apibindings"})
	check.Must(t, bindings.Delete(ctx, "network", metav1.DeleteOptions{}))
	waitBlockerReported(ctx, t, bindings, "network", "still referenced by VirtualMachine/vm-b")
	if !top.exists(ctx, t, ws, fixtures.VPCs, "vpc-b") {
		t.Fatal("deleting the APIBinding removed a referenced VPC")
	}
	top.expectDeleted(ctx, t, ws, fixtures.VirtualMachines, "vm-b")
	check.Eventually(ctx, t, 3*time.Minute, "the binding to finish deleting once nothing references its VPCs", func() error {
		if _, err := bindings.Get(ctx, "network", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("binding still there (%v)", err)
		}
		return nil
	})
}

// waitBlockerReported waits until a condition of the object called name
// (a namespace, an APIBinding) whose deletion protection holds up says
// want.
func waitBlockerReported(ctx context.Context, t *testing.T, res dynamic.ResourceInterface, name, want string) {
	t.Helper()
	check.Eventually(ctx, t, 2*time.Minute, name+" to report what blocks its deletion", func() error {
		o, err := res.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		conds, _, _ := unstructured.NestedSlice(o.Object, "status", "conditions")
		for _, x := range conds {
			m, _ := x.(map[string]interface{})
			if msg, _ := m["message"].(string); strings.Contains(msg, want) {
				t.Logf("%s %s condition %s: %s", o.GetKind(), name, m["type"], msg)
				return nil
			}
		}
		return fmt.Errorf("no condition names the blocker yet: %v", conds)
	})
}

func vmObject(name, vpc string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": fixtures.VirtualMachines.Group + "/v1", "kind": fixtures.VirtualMachines.Kind,
		"metadata": map[string]interface{}{"name": name}, "spec": ref(vpc),
	}}
}

// label sets one label on an object.
func label(ctx context.Context, t *testing.T, r dynamic.ResourceInterface, name, key, value string) {
	t.Helper()
	_, err := r.Patch(ctx, name, "application/merge-patch+json", fmt.Appendf(nil, `{"metadata":{"labels":{%q:%q}}}`, key, value), metav1.PatchOptions{})
	check.Must(t, err)
}

// setRef points a VM's vpcRef at vpc.
func setRef(ctx context.Context, t *testing.T, r dynamic.ResourceInterface, name, vpc string) {
	t.Helper()
	_, err := r.Patch(ctx, name, "application/merge-patch+json", fmt.Appendf(nil, `{"spec":{"vpcRef":{"name":%q}}}`, vpc), metav1.PatchOptions{})
	check.Must(t, err)
}

// setFinalizers replaces an object's finalizers.
func setFinalizers(ctx context.Context, t *testing.T, r dynamic.ResourceInterface, name string, finalizers ...string) {
	t.Helper()
	obj, err := r.Get(ctx, name, metav1.GetOptions{})
	check.Must(t, err)
	obj.SetFinalizers(finalizers)
	_, err = r.Update(ctx, obj, metav1.UpdateOptions{})
	check.Must(t, err)
}
