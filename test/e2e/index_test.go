package e2e

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/util/retry"

	"github.com/depctrl/terraform-provider-depctrl/internal/rbac"
	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
	"github.com/depctrl/terraform-provider-depctrl/runtime/index"
	"github.com/depctrl/terraform-provider-depctrl/runtime/registry"
	"github.com/depctrl/terraform-provider-depctrl/test/check"
	"github.com/depctrl/terraform-provider-depctrl/test/env"
	"github.com/depctrl/terraform-provider-depctrl/test/fixtures"
)

// TestReferenceIndex checks the reference index against a real kcp: the
// controller installs the mutating configuration next to the rule, kcp
// sends dependents' writes to the webhook, the labels follow the fields
// whatever users do to them, and deletions are decided from the labels for
// indexed dependents and from the fields for the others.
func TestReferenceIndex(t *testing.T) {
	ctx, e := integration(t, 10*time.Minute, env.TwoShards)
	top, rt := install(ctx, t, e)
	// The consumer on the other shard than the rule: the configuration
	// reaches it through the cache server.
	consumer := top.Consumers[len(top.Consumers)-1]
	vms := top.objects(t, consumer, fixtures.VirtualMachines)
	vpcGR := fixtures.VPCs.GVR().GroupResource()

	// Written before any rule existed: no index labels.
	top.object(ctx, t, consumer, fixtures.VPCs, "vpc-pre", map[string]interface{}{}, nil)
	top.object(ctx, t, consumer, fixtures.VirtualMachines, "vm-pre", ref("vpc-pre"), nil)

	top.protectVPCs(ctx, t)
	top.waitCondition(ctx, t, top.Compute, "vm-needs-vpc", v1alpha1.ConditionIndexed, "True", "Indexed")
	if epoch, _, _ := unstructured.NestedString(top.getRule(ctx, t, top.Compute, "vm-needs-vpc").Object, "status", "indexEpoch"); epoch == "" {
		t.Fatal("the rule is Indexed but has no status.indexEpoch")
	}

	// kcp applies a new webhook configuration within its propagation
	// delay; from then on every write is labelled.
	top.object(ctx, t, consumer, fixtures.VirtualMachines, "vm-probe", ref("nothing"), nil)
	stamp := waitStamp(ctx, t, vms, "vm-probe", "")
	indexLabels := func(name string) map[string]string {
		t.Helper()
		vm, err := vms.Get(ctx, name, metav1.GetOptions{})
		check.Must(t, err)
		out := map[string]string{}
		for k, v := range vm.GetLabels() {
			if registry.IsIndexLabel(k) {
				out[k] = v
			}
		}
		return out
	}
	want := func(refs ...string) map[string]string {
		out := map[string]string{registry.StampLabel: stamp}
		for _, r := range refs {
			out[registry.RefLabel(vpcGR, r)] = ""
		}
		return out
	}
	unindexed := func() float64 {
		t.Helper()
		v, err := strconv.ParseFloat(metricValue(ctx, t, rt.WebhookMetricsURL, "depctrl_webhook_unindexed_dependents_examined_total"), 64)
		check.Must(t, err)
		return v
	}

	t.Run("dependents written before the rule are read in full", func(t *testing.T) {
		if got := indexLabels("vm-pre"); len(got) != 0 {
			t.Fatalf("vm-pre carries index labels %v although it was written before the rule", got)
		}
		top.expectDenied(ctx, t, consumer, fixtures.VPCs, "vpc-pre", "still referenced by VirtualMachine/vm-pre")
	})

	t.Run("labelled on create, enforced from the labels", func(t *testing.T) {
		top.object(ctx, t, consumer, fixtures.VPCs, "vpc-a", map[string]interface{}{}, nil)
		top.object(ctx, t, consumer, fixtures.VirtualMachines, "vm-a", ref("vpc-a"), nil)
		if got := indexLabels("vm-a"); !maps.Equal(got, want("vpc-a")) {
			t.Fatalf("vm-a index labels = %v, want %v", got, want("vpc-a"))
		}
		top.expectDenied(ctx, t, consumer, fixtures.VPCs, "vpc-a", "still referenced by VirtualMachine/vm-a")
	})

	t.Run("a write re-indexes an old dependent, which is then no longer read", func(t *testing.T) {
		touch(ctx, t, vms, "vm-pre", nil)
		if got := indexLabels("vm-pre"); !maps.Equal(got, want("vpc-pre")) {
			t.Fatalf("vm-pre index labels after a write = %v, want %v", got, want("vpc-pre"))
		}
		before := unindexed()
		top.expectDenied(ctx, t, consumer, fixtures.VPCs, "vpc-pre", "still referenced by VirtualMachine/vm-pre")
		top.expectDenied(ctx, t, consumer, fixtures.VPCs, "vpc-a", "still referenced by VirtualMachine/vm-a")
		if after := unindexed(); after != before {
			t.Fatalf("%v unindexed dependents were read although every dependent is indexed", after-before)
		}
	})

	t.Run("index labels edited by hand are put back", func(t *testing.T) {
		// The intent record of vm-a's create is the webhook's too: while it
		// is fresh, a write that records no intent keeps it.
		before, err := vms.Get(ctx, "vm-a", metav1.GetOptions{})
		check.Must(t, err)
		touch(ctx, t, vms, "vm-a", func(vm *unstructured.Unstructured) {
			// Drop the real labels, forge one for another VPC.
			vm.SetLabels(map[string]string{"team": "a", registry.RefLabel(vpcGR, "vpc-z"): ""})
		})
		got, err := vms.Get(ctx, "vm-a", metav1.GetOptions{})
		check.Must(t, err)
		wantAll := want("vpc-a")
		wantAll["team"] = "a"
		record := before.GetLabels()[v1alpha1.IntentLabel]
		if _, at, ok := index.ParseLabel(record); ok && time.Since(at) < index.DefaultLifetime/2 {
			wantAll[v1alpha1.IntentLabel] = record
		} else if kept, ok := got.GetLabels()[v1alpha1.IntentLabel]; ok && kept == record {
			// Expired meanwhile or not: either is right near the end of
			// its lifetime.
			wantAll[v1alpha1.IntentLabel] = record
		}
		if !maps.Equal(got.GetLabels(), wantAll) {
			t.Fatalf("labels of vm-a after a hand edit = %v, want %v", got.GetLabels(), wantAll)
		}
		top.expectDenied(ctx, t, consumer, fixtures.VPCs, "vpc-a", "still referenced by VirtualMachine/vm-a")
	})

	t.Run("a stamp forged on create does not hide a reference", func(t *testing.T) {
		top.object(ctx, t, consumer, fixtures.VPCs, "vpc-f", map[string]interface{}{}, nil)
		u := &unstructured.Unstructured{Object: map[string]interface{}{
			"apiVersion": fixtures.VirtualMachines.Group + "/v1", "kind": fixtures.VirtualMachines.Kind,
			"metadata": map[string]interface{}{"name": "vm-f", "labels": map[string]interface{}{registry.StampLabel: stamp}},
			"spec":     ref("vpc-f"),
		}}
		_, err := vms.Create(ctx, u, metav1.CreateOptions{})
		check.Must(t, err)
		top.expectDenied(ctx, t, consumer, fixtures.VPCs, "vpc-f", "still referenced by VirtualMachine/vm-f")
	})

	t.Run("moving a reference moves its label", func(t *testing.T) {
		top.object(ctx, t, consumer, fixtures.VPCs, "vpc-b", map[string]interface{}{}, nil)
		touch(ctx, t, vms, "vm-a", func(vm *unstructured.Unstructured) {
			check.Must(t, unstructured.SetNestedField(vm.Object, "vpc-b", "spec", "vpcRef", "name"))
		})
		if got := indexLabels("vm-a"); !maps.Equal(got, want("vpc-b")) {
			t.Fatalf("vm-a index labels after the move = %v, want %v", got, want("vpc-b"))
		}
		top.expectDeleted(ctx, t, consumer, fixtures.VPCs, "vpc-a")
		top.expectDenied(ctx, t, consumer, fixtures.VPCs, "vpc-b", "still referenced by VirtualMachine/vm-a")
	})

	t.Run("an edited rule invalidates every stamp until the next write", func(t *testing.T) {
		addDependencyPath(ctx, t, top, "vm-needs-vpc", ".spec.extraVPCs[*].name")
		top.waitReady(ctx, t, top.Compute, "vm-needs-vpc")
		// Labels written under the old generation no longer count: the
		// dependents are read in full (an allowed delete reads them all;
		// a denial may come from vm-a's intent on vpc-b alone) and still
		// protect.
		top.expectDenied(ctx, t, consumer, fixtures.VPCs, "vpc-b", "still referenced by VirtualMachine/vm-a")
		before := unindexed()
		top.object(ctx, t, consumer, fixtures.VPCs, "vpc-unused", map[string]interface{}{}, nil)
		top.expectDeleted(ctx, t, consumer, fixtures.VPCs, "vpc-unused")
		if unindexed() == before {
			t.Fatal("no dependent was read in full after the rule changed: old labels were trusted")
		}
		touch(ctx, t, vms, "vm-a", nil)
		if got := indexLabels("vm-a")[registry.StampLabel]; got == stamp || got == "" {
			t.Fatalf("vm-a's stamp after a write under the edited rule is %q (was %q)", got, stamp)
		}
	})

	t.Run("a rule deleted and created again under its name does not trust the labels of the one before", func(t *testing.T) {
		// Another rule over VMs keeps the index configuration, and so the
		// epoch, while the rule is gone; the new rule starts over at
		// generation 1 as the old one did, with another path.
		top.createRule(ctx, t, top.Compute, ruleObject("vm-keeper", fixtures.VirtualMachines, fixtures.FirewallRules, top.Network.Path, ".spec.firewallRef.name"))
		top.waitReady(ctx, t, top.Compute, "vm-keeper")
		top.createRule(ctx, t, top.Compute, ruleObject("vm-again", fixtures.VirtualMachines, fixtures.VPCs, top.Network.Path, ".spec.backupVPC"))
		top.waitReady(ctx, t, top.Compute, "vm-again")
		top.waitCondition(ctx, t, top.Compute, "vm-again", v1alpha1.ConditionIndexed, "True", "Indexed")
		first := waitStamp(ctx, t, vms, "vm-probe", indexLabels("vm-probe")[registry.StampLabel])
		top.object(ctx, t, consumer, fixtures.VPCs, "vpc-again", map[string]interface{}{}, nil)
		// Labelled under the first rule, which does not read .spec.networks.
		top.object(ctx, t, consumer, fixtures.VirtualMachines, "vm-again", map[string]interface{}{"networks": []interface{}{map[string]interface{}{"vpc": "vpc-again"}}}, nil)

		top.deleteRule(ctx, t, top.Compute, "vm-again")
		check.Eventually(ctx, t, time.Minute, "the rule to be gone", func() error {
			_, err := top.dynamicFor(t, top.Compute.Path).Resource(rulesGVR).Get(ctx, "vm-again", metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return nil
			}
			return fmt.Errorf("still there (%v)", err)
		})
		without := waitStamp(ctx, t, vms, "vm-probe", first)
		top.createRule(ctx, t, top.Compute, ruleObject("vm-again", fixtures.VirtualMachines, fixtures.VPCs, top.Network.Path, ".spec.networks[*].vpc"))
		top.waitReady(ctx, t, top.Compute, "vm-again")
		top.waitCondition(ctx, t, top.Compute, "vm-again", v1alpha1.ConditionIndexed, "True", "Indexed")
		second := waitStamp(ctx, t, vms, "vm-probe", without)
		if second == first {
			t.Fatalf("the rule created again stamps %q, as the deleted one did", second)
		}
		top.expectDenied(ctx, t, consumer, fixtures.VPCs, "vpc-again", "still referenced by VirtualMachine/vm-again")
	})
}

// addDependencyPath adds a second path to the rule's first protected type,
// retrying when the controller updated the rule's status in between.
func addDependencyPath(ctx context.Context, t *testing.T, top *Topology, name, path string) {
	t.Helper()
	check.Must(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		rule := top.getRule(ctx, t, top.Compute, name)
		deps, _, _ := unstructured.NestedSlice(rule.Object, "spec", "dependencies")
		extra := runtime.DeepCopyJSONValue(deps[0]).(map[string]interface{})
		if err := unstructured.SetNestedField(extra, path, "fieldRef", "path"); err != nil {
			return err
		}
		if err := unstructured.SetNestedSlice(rule.Object, append(deps, extra), "spec", "dependencies"); err != nil {
			return err
		}
		_, err := top.dynamicFor(t, top.Compute.Path).Resource(rulesGVR).Update(ctx, rule, metav1.UpdateOptions{})
		return err
	}))
}

// waitStamp writes the dependent called name until the webhook labels it
// with a stamp other than not, and returns the stamp: the index is then
// applied, under the rules the webhook holds by now, to every write.
func waitStamp(ctx context.Context, t *testing.T, res dynamic.ResourceInterface, name, not string) string {
	t.Helper()
	var stamp string
	check.Eventually(ctx, t, 2*time.Minute, "writes of "+name+" to be indexed under the current rules", func() error {
		touch(ctx, t, res, name, nil)
		vm, err := res.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if stamp = vm.GetLabels()[registry.StampLabel]; stamp == "" || stamp == not {
			return fmt.Errorf("%s is stamped %q", name, stamp)
		}
		return nil
	})
	return stamp
}

// waitAllStamped waits until every dependent res lists carries stamp: until
// the webhook has re-indexed them all under the current rules.
func waitAllStamped(ctx context.Context, t *testing.T, res dynamic.ResourceInterface, stamp string) {
	t.Helper()
	check.Eventually(ctx, t, 30*time.Minute, "the webhook to re-index every dependent", func() error {
		l, err := res.List(ctx, metav1.ListOptions{LabelSelector: registry.StampLabel + "!=" + stamp, Limit: 1})
		if err == nil && len(l.Items) > 0 {
			err = fmt.Errorf("%s is not indexed under the current rules", l.Items[0].GetName())
		}
		return err
	})
}

// touch updates a dependent, after edit if given, retrying until it
// succeeds.
func touch(ctx context.Context, t *testing.T, res dynamic.ResourceInterface, name string, edit func(*unstructured.Unstructured)) {
	t.Helper()
	check.Eventually(ctx, t, 30*time.Second, "updating "+name, func() error { return rewrite(ctx, res, name, edit) })
}

// rewrite writes a dependent again, after edit if given, with a fresh
// annotation so that the write is never a no-op, retrying on conflicts. It
// does not fail the test itself, so it may run in any goroutine.
func rewrite(ctx context.Context, res dynamic.ResourceInterface, name string, edit func(*unstructured.Unstructured)) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		vm, err := res.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		ann := vm.GetAnnotations()
		if ann == nil {
			ann = map[string]string{}
		}
		ann["touched"] = strconv.FormatInt(time.Now().UnixNano(), 10)
		vm.SetAnnotations(ann)
		if edit != nil {
			edit(vm)
		}
		_, err = res.Update(ctx, vm, metav1.UpdateOptions{})
		return err
	})
}

// TestReindex checks that the webhook re-indexes, by itself, dependents
// written before their rule, where it may patch their type (the default
// grant lets it patch everything; a narrowed one needs depctrl_shard's
// reindex): a deletion that had to read them in full hands them to the
// webhook's re-indexer, which writes each again with an empty patch, and
// later deletions find them by their labels, in both consumers. Where it
// may not, the dependents stay as they are and are still read in full
// (TestNarrowedReadAccess).
func TestReindex(t *testing.T) {
	ctx, e := integration(t, 10*time.Minute, env.TwoShards)
	top, rt := install(ctx, t, e)
	granted := top.Consumers[len(top.Consumers)-1]
	counter := counter(ctx, t, rt.WebhookMetricsURL)
	const (
		unindexedMetric = "depctrl_webhook_unindexed_dependents_examined_total"
		writtenMetric   = `depctrl_webhook_reindex_total{outcome="written"}`
	)

	// Dependents written before the rule, in both consumers.
	const n = 12
	for _, ws := range []env.Workspace{granted} {
		top.object(ctx, t, ws, fixtures.VPCs, "vpc-used", map[string]interface{}{}, nil)
		top.object(ctx, t, ws, fixtures.VPCs, "vpc-free-1", map[string]interface{}{}, nil)
		top.object(ctx, t, ws, fixtures.VPCs, "vpc-free-2", map[string]interface{}{}, nil)
		top.object(ctx, t, ws, fixtures.VirtualMachines, "vm-user", ref("vpc-used"), nil)
		for i := range n - 1 {
			top.object(ctx, t, ws, fixtures.VirtualMachines, fmt.Sprintf("vm-%02d", i), ref("elsewhere"), nil)
		}
	}

	top.protectVPCs(ctx, t)
	top.waitCondition(ctx, t, top.Compute, "vm-needs-vpc", v1alpha1.ConditionIndexed, "True", "Indexed")
	top.object(ctx, t, granted, fixtures.VirtualMachines, "vm-probe", ref("nothing"), nil)
	stamp := waitStamp(ctx, t, top.objects(t, granted, fixtures.VirtualMachines), "vm-probe", "")

	stamps := func(ws env.Workspace) map[string]string {
		t.Helper()
		list, err := top.objects(t, ws, fixtures.VirtualMachines).List(ctx, metav1.ListOptions{})
		check.Must(t, err)
		out := map[string]string{}
		for _, vm := range list.Items {
			if vm.GetName() != "vm-probe" {
				out[vm.GetName()] = vm.GetLabels()[registry.StampLabel]
			}
		}
		return out
	}

	t.Run("re-indexed after the first deletion that read them", func(t *testing.T) {
		written, unindexed := counter(writtenMetric), counter(unindexedMetric)
		top.expectDenied(ctx, t, granted, fixtures.VPCs, "vpc-used", "still referenced by VirtualMachine/vm-user")
		if got := counter(unindexedMetric) - unindexed; got < n {
			t.Fatalf("the deletion read %v unindexed dependents, want at least the %d written before the rule", got, n)
		}
		check.Eventually(ctx, t, time.Minute, "the webhook to re-index the VMs written before the rule", func() error {
			for name, s := range stamps(granted) {
				if s != stamp {
					return fmt.Errorf("%s is stamped %q, want %q", name, s, stamp)
				}
			}
			return nil
		})
		if got := counter(writtenMetric) - written; got < n {
			t.Errorf("depctrl_webhook_reindex_total{outcome=written} rose by %v, want at least %d", got, n)
		}
		vm, err := top.objects(t, granted, fixtures.VirtualMachines).Get(ctx, "vm-user", metav1.GetOptions{})
		check.Must(t, err)
		if _, ok := vm.GetLabels()[registry.RefLabel(fixtures.VPCs.GVR().GroupResource(), "vpc-used")]; !ok {
			t.Fatalf("re-indexed vm-user has no reference label for vpc-used: %v", vm.GetLabels())
		}
		// From now on the labels decide, and protection holds.
		unindexed = counter(unindexedMetric)
		top.expectDenied(ctx, t, granted, fixtures.VPCs, "vpc-used", "still referenced by VirtualMachine/vm-user")
		top.expectDeleted(ctx, t, granted, fixtures.VPCs, "vpc-free-1")
		if got := counter(unindexedMetric) - unindexed; got != 0 {
			t.Fatalf("%v dependents were read in full after they were re-indexed", got)
		}
	})
}

// grantReindex lets the webhook patch VMs in ws only, as depctrl_shard's
// reindex lets it on a whole shard, and waits until kcp authorizes such a
// patch: a refusal would make the webhook leave the workspace alone for
// minutes.
func grantReindex(ctx context.Context, t *testing.T, top *Topology, ws env.Workspace) {
	t.Helper()
	g := rbac.ShardReader([]rbacv1.Subject{rbac.User(env.WebhookUser)}, rbac.ShardAccess{
		Dependents: []rbac.ReadResource{{Group: fixtures.VirtualMachines.Group, Resource: fixtures.VirtualMachines.GVR().Resource}}, Reindex: true})
	g.Role.Name, g.Binding.Name, g.Binding.RoleRef.Name = "depctrl-reindex", "depctrl-reindex", "depctrl-reindex"
	apply(ctx, t, top.admin(t, ws.Path), toYAML(t, g))
	id, err := top.Env.Identity(env.WebhookUser)
	check.Must(t, err)
	asWebhook, err := dynamic.NewForConfig(top.Env.IdentityConfig(id, ws.Path))
	check.Must(t, err)
	check.Eventually(ctx, t, time.Minute, "the webhook to be allowed to patch VMs in "+ws.Path, func() error {
		// Authorization comes before the lookup: NotFound means allowed.
		_, err := asWebhook.Resource(fixtures.VirtualMachines.GVR()).Namespace("apps").Patch(ctx, "depctrl-no-such-vm", types.MergePatchType, []byte("{}"), metav1.PatchOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err == nil {
			return fmt.Errorf("a VM that should not exist was patched")
		}
		return err
	})
}
