package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"

	"github.com/depctrl/terraform-provider-depctrl/internal/rbac"
	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
	"github.com/depctrl/terraform-provider-depctrl/test/check"
	"github.com/depctrl/terraform-provider-depctrl/test/env"
	"github.com/depctrl/terraform-provider-depctrl/test/fixtures"
)

// TestDeferredDeletion: on the real two-shard kcp, with the webhook's
// --deferred-deletion and the grant depctrl_shard's deferred_deletion
// renders, in a consumer on either shard:
//   - a deletion refused for its dependents, of a VPC that opted in, is
//     recorded on it (who asked, an Event), and the VPC is deleted once the
//     last VM that referenced it is, and not before;
//   - nobody but the webhook may write the record or its label, by update
//     or create; removing the record cancels the deferred deletion;
//   - a VPC that did not opt in is only refused, as before;
//   - a tenant torn down in random order, one namespace object by object
//     and one by deleting the namespace, converges to empty with every
//     client asking once, and no VPC is ever deleted while a VM references
//     it (deferTeardown);
//   - a rule with spec.deferDeletion defers the objects it protects that
//     say nothing, and not one whose annotation says "false".
func TestDeferredDeletion(t *testing.T) {
	ctx, e := integration(t, 25*time.Minute, env.TwoShards)
	top, rt := install(ctx, t, e)
	top.protectVPCs(ctx, t)
	grantDeferral(ctx, t, e)
	// Another test sharing the environment installs its topology, which
	// applies the shard grant again, without deferral: the deferral's own
	// grant must not depend on it.
	for _, sh := range e.Shards {
		cfg, err := e.ShardAdminConfig(sh.Name, "system:admin")
		check.Must(t, err)
		apply(ctx, t, cfg, toYAML(t, rbac.ShardReader([]rbacv1.Subject{rbac.User(env.WebhookUser)}, rbac.ShardAccess{})))
	}
	rt.StopWebhook(t)
	rt.StartWebhook(ctx, t, "--deferred-deletion")

	optIn := map[string]string{v1alpha1.DeferDeletionAnnotation: "true"}
	for _, consumer := range top.Consumers {
		t.Run("shard "+consumer.Shard, func(t *testing.T) {
			vpcs := top.objects(t, consumer, fixtures.VPCs)

			t.Run("a refused deletion is carried out once the last dependent is gone", func(t *testing.T) {
				top.object(ctx, t, consumer, fixtures.VPCs, "vpc-later", map[string]interface{}{}, optIn)
				top.object(ctx, t, consumer, fixtures.VirtualMachines, "vm-later-1", ref("vpc-later"), nil)
				top.object(ctx, t, consumer, fixtures.VirtualMachines, "vm-later-2", ref("vpc-later"), nil)
				refused := top.remove(ctx, t, consumer, fixtures.VPCs, "vpc-later")
				if !apierrors.IsForbidden(refused) || !strings.Contains(refused.Error(), "its deletion is deferred (asked by ") {
					t.Fatalf("deleting a referenced VPC that opted in: %v, want a refusal saying the deletion is deferred", refused)
				}
				u, err := vpcs.Get(ctx, "vpc-later", metav1.GetOptions{})
				check.Must(t, err)
				rec, err := v1alpha1.ParseDeferredDeletion(u.GetAnnotations()[v1alpha1.DeletionDeferredAnnotation])
				if err != nil || rec.User == "" || rec.UID != u.GetUID() || u.GetLabels()[v1alpha1.DeletionDeferredLabel] != "true" || u.GetDeletionTimestamp() != nil {
					t.Fatalf("the VPC carries %v / labels %v, deletionTimestamp %v: want the record of who asked, its label, and no deletion begun", err, u.GetLabels(), u.GetDeletionTimestamp())
				}
				// kcp asks the webhook again on the stored VPC, which the
				// record made newer than its cached copy: the answer the
				// client gets names who asked, the client itself.
				if !strings.Contains(refused.Error(), "(asked by "+rec.User+" at ") {
					t.Errorf("the refusal %q does not name %s, whose deletion was deferred", refused, rec.User)
				}
				top.waitEvent(ctx, t, consumer, "apps", "vpc-later", v1alpha1.DeferredReason)
				again := top.remove(ctx, t, consumer, fixtures.VPCs, "vpc-later")
				if !apierrors.IsForbidden(again) || !strings.Contains(again.Error(), "its deletion is deferred (asked by "+rec.User+" at "+rec.At.UTC().Format(time.RFC3339)) {
					t.Errorf("asking again: %v, want a refusal saying it is deferred, by whom and since when", again)
				}

				check.Must(t, top.remove(ctx, t, consumer, fixtures.VirtualMachines, "vm-later-1"))
				time.Sleep(3 * time.Second)
				if !top.exists(ctx, t, consumer, fixtures.VPCs, "vpc-later") {
					t.Fatal("the VPC was deleted while vm-later-2 still references it")
				}
				check.Must(t, top.remove(ctx, t, consumer, fixtures.VirtualMachines, "vm-later-2"))
				check.Eventually(ctx, t, time.Minute, "the deferred VPC to be deleted", func() error {
					if top.exists(ctx, t, consumer, fixtures.VPCs, "vpc-later") {
						return fmt.Errorf("still there")
					}
					return nil
				})
				top.waitEvent(ctx, t, consumer, "apps", "vpc-later", v1alpha1.ReplayedReason)
			})

			t.Run("only the webhook writes the record", func(t *testing.T) {
				top.object(ctx, t, consumer, fixtures.VPCs, "vpc-forged", map[string]interface{}{}, optIn)
				forged := `{"user":"admin","at":"2026-01-01T00:00:00Z","uid":"x"}`
				patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, v1alpha1.DeletionDeferredAnnotation, forged)
				_, err := vpcs.Patch(ctx, "vpc-forged", types.MergePatchType, []byte(patch), metav1.PatchOptions{})
				if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "only the dependency webhook may write") {
					t.Errorf("a patch writing a deferred deletion: %v, want it refused", err)
				}
				label := fmt.Sprintf(`{"metadata":{"labels":{%q:"true"}}}`, v1alpha1.DeletionDeferredLabel)
				if _, err := vpcs.Patch(ctx, "vpc-forged", types.MergePatchType, []byte(label), metav1.PatchOptions{}); !apierrors.IsForbidden(err) {
					t.Errorf("a patch adding the label: %v, want it refused", err)
				}
				u := &unstructured.Unstructured{Object: map[string]interface{}{
					"apiVersion": fixtures.VPCs.Group + "/v1", "kind": fixtures.VPCs.Kind,
					"metadata": map[string]interface{}{"name": "vpc-forged-2", "annotations": map[string]interface{}{v1alpha1.DeletionDeferredAnnotation: forged}},
					"spec":     map[string]interface{}{},
				}}
				if _, err := vpcs.Create(ctx, u, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
					t.Errorf("a create carrying a deferred deletion: %v, want it refused", err)
				}
			})

			t.Run("removing the record cancels", func(t *testing.T) {
				top.object(ctx, t, consumer, fixtures.VPCs, "vpc-cancel", map[string]interface{}{}, optIn)
				top.object(ctx, t, consumer, fixtures.VirtualMachines, "vm-cancel", ref("vpc-cancel"), nil)
				if err := top.remove(ctx, t, consumer, fixtures.VPCs, "vpc-cancel"); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "deferred") {
					t.Fatalf("deleting: %v, want a deferral", err)
				}
				cancel := fmt.Sprintf(`{"metadata":{"annotations":{%q:null},"labels":{%q:null}}}`, v1alpha1.DeletionDeferredAnnotation, v1alpha1.DeletionDeferredLabel)
				_, err := vpcs.Patch(ctx, "vpc-cancel", types.MergePatchType, []byte(cancel), metav1.PatchOptions{})
				check.Must(t, err)
				check.Must(t, top.remove(ctx, t, consumer, fixtures.VirtualMachines, "vm-cancel"))
				time.Sleep(5 * time.Second)
				if !top.exists(ctx, t, consumer, fixtures.VPCs, "vpc-cancel") {
					t.Error("a cancelled deferred deletion was carried out")
				}
			})

			t.Run("an object that did not opt in is only refused", func(t *testing.T) {
				top.object(ctx, t, consumer, fixtures.VPCs, "vpc-plain", map[string]interface{}{}, nil)
				top.object(ctx, t, consumer, fixtures.VirtualMachines, "vm-plain", ref("vpc-plain"), nil)
				err := top.remove(ctx, t, consumer, fixtures.VPCs, "vpc-plain")
				if !apierrors.IsForbidden(err) || strings.Contains(err.Error(), "deferred") {
					t.Fatalf("deleting: %v, want a plain refusal", err)
				}
				u, err := vpcs.Get(ctx, "vpc-plain", metav1.GetOptions{})
				check.Must(t, err)
				if _, has := u.GetAnnotations()[v1alpha1.DeletionDeferredAnnotation]; has {
					t.Error("a VPC that did not opt in carries a deferred deletion")
				}
			})

			t.Run("a tenant torn down in random order converges", func(t *testing.T) {
				r := deferTeardown(ctx, t, top, consumer, tenantSize{vpcs: 50, vmsPerVPC: 10})
				t.Logf("deferred VPCs deleted after their last VM: %d deleted object by object, p50 %s, p99 %s; %d in the namespace deleted whole, p50 %s, p99 %s; %d deletions deferred",
					len(r.after), r.after.pct(.5), r.after.pct(.99), len(r.afterNamespace), r.afterNamespace.pct(.5), r.afterNamespace.pct(.99), r.deferred)
			})
		})
	}

	t.Run("a rule that defers defers the objects it protects", func(t *testing.T) {
		top.updateRule(ctx, t, top.Compute, "vm-needs-vpc", func(r *unstructured.Unstructured) {
			check.Must(t, unstructured.SetNestedField(r.Object, true, "spec", "deferDeletion"))
		})
		top.waitReady(ctx, t, top.Compute, "vm-needs-vpc")
		for _, consumer := range top.Consumers {
			top.object(ctx, t, consumer, fixtures.VPCs, "vpc-by-rule", map[string]interface{}{}, nil)
			top.object(ctx, t, consumer, fixtures.VPCs, "vpc-opted-out", map[string]interface{}{}, map[string]string{v1alpha1.DeferDeletionAnnotation: "false"})
			top.object(ctx, t, consumer, fixtures.VirtualMachines, "vm-by-rule", ref("vpc-by-rule"), nil)
			top.object(ctx, t, consumer, fixtures.VirtualMachines, "vm-opted-out", ref("vpc-opted-out"), nil)
			if err := top.remove(ctx, t, consumer, fixtures.VPCs, "vpc-by-rule"); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "its deletion is deferred") {
				t.Fatalf("%s: deleting a VPC the deferring rule protects: %v, want a deferral", consumer.Shard, err)
			}
			if err := top.remove(ctx, t, consumer, fixtures.VPCs, "vpc-opted-out"); !apierrors.IsForbidden(err) || strings.Contains(err.Error(), "deferred") {
				t.Fatalf("%s: deleting a VPC that opted out: %v, want a plain refusal", consumer.Shard, err)
			}
			check.Must(t, top.remove(ctx, t, consumer, fixtures.VirtualMachines, "vm-by-rule"))
			check.Must(t, top.remove(ctx, t, consumer, fixtures.VirtualMachines, "vm-opted-out"))
			check.Eventually(ctx, t, time.Minute, "the VPC the rule deferred to be deleted", func() error {
				if top.exists(ctx, t, consumer, fixtures.VPCs, "vpc-by-rule") {
					return fmt.Errorf("still there")
				}
				return nil
			})
			if !top.exists(ctx, t, consumer, fixtures.VPCs, "vpc-opted-out") {
				t.Errorf("%s: the VPC that opted out was deleted", consumer.Shard)
			}
		}
	})
}

// grantDeferral grants the webhook what deferred deletion needs on every
// shard, as depctrl_shard's deferred_deletion does, in a ClusterRole of its
// own beside the shard grant: tests sharing the environment apply the shard
// grant again, without deferral, whenever they install a topology. It is
// removed when the test ends.
func grantDeferral(ctx context.Context, t *testing.T, e *env.Env) {
	t.Helper()
	name := env.UniqueName("depctrl-e2e-deferral")
	g := rbac.ShardReader([]rbacv1.Subject{rbac.User(env.WebhookUser)}, rbac.ShardAccess{Protected: []rbac.ReadResource{{Group: fixtures.VPCs.Group, Resource: fixtures.VPCs.Resource}}, DeferredDeletion: true})
	g.Role.Name, g.Binding.Name, g.Binding.RoleRef.Name = name, name, name
	for _, s := range e.Shards {
		cfg, err := e.ShardAdminConfig(s.Name, "system:admin")
		check.Must(t, err)
		apply(ctx, t, cfg, toYAML(t, g))
		t.Cleanup(func() {
			d, err := dynamic.NewForConfig(cfg)
			if err != nil {
				return
			}
			ctx := context.Background()
			_ = d.Resource(rbacv1.SchemeGroupVersion.WithResource("clusterrolebindings")).Delete(ctx, name, metav1.DeleteOptions{})
			_ = d.Resource(rbacv1.SchemeGroupVersion.WithResource("clusterroles")).Delete(ctx, name, metav1.DeleteOptions{})
		})
	}
}

// tenantSize is how large a tenant deferTeardown tears down: in each of
// its two namespaces, vpcs VPCs, each referenced by vmsPerVPC VMs.
type tenantSize struct{ vpcs, vmsPerVPC int }

// deferredTeardown is what deferTeardown saw.
type deferredTeardown struct {
	// after is, for each VPC whose deletion was deferred in the namespace
	// deleted object by object, how long after the deletion of its last
	// VM it was deleted, as the test's watches saw both; afterNamespace
	// the same in the namespace deleted as a whole (deferred for the
	// namespace's own deletion, which retries too).
	after, afterNamespace latencies
	// deferred counts the deletions refused and deferred;
	// otherRefusals those refused otherwise (each a failure of the test).
	deferred, otherRefusals int
	// took is how long the teardown took, from the first delete to the
	// tenant gone.
	took time.Duration
}

// deferTeardown creates a tenant in two namespaces of consumer that opt in
// to deferred deletion, size.vpcs VPCs in each, each referenced by
// size.vmsPerVPC VMs; then deletes everything in the first in a random
// order, eight clients at once, each object asked once, and deletes the
// second namespace itself. It fails the test unless both converge to empty
// with no client asking twice, and unless every VPC's deletion is stored
// after those of every VM that referenced it (revisions of one shard's
// store, as the watches saw them).
func deferTeardown(ctx context.Context, t *testing.T, top *Topology, consumer env.Workspace, size tenantSize) deferredTeardown {
	t.Helper()
	d := top.dynamicFor(t, consumer.Path)
	namespaces := []string{env.UniqueName("td-random"), env.UniqueName("td-ns")}
	for _, ns := range namespaces {
		apply(ctx, t, top.admin(t, consumer.Path), fmt.Sprintf("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: %s\n  annotations:\n    %s: \"true\"\n", ns, v1alpha1.DeferDeletionAnnotation))
	}
	type object struct {
		vpc       bool
		namespace string
		name      string
	}
	var all []object
	refs := map[string]string{} // namespace/vm -> vpc
	for _, ns := range namespaces {
		for i := range size.vpcs {
			vpc := fmt.Sprintf("vpc-%03d", i)
			all = append(all, object{vpc: true, namespace: ns, name: vpc})
			for j := range size.vmsPerVPC {
				vm := fmt.Sprintf("vm-%03d-%02d", i, j)
				all = append(all, object{namespace: ns, name: vm})
				refs[ns+"/"+vm] = vpc
			}
		}
	}
	// VPCs first, then their VMs, eight at once.
	create := func(objs []object) {
		parallel(ctx, t, 8, len(objs), func(i int) error {
			o := objs[i]
			a, spec := fixtures.VirtualMachines, ref(refs[o.namespace+"/"+o.name])
			if o.vpc {
				a, spec = fixtures.VPCs, map[string]interface{}{}
			}
			u := &unstructured.Unstructured{Object: map[string]interface{}{
				"apiVersion": a.Group + "/v1", "kind": a.Kind, "metadata": map[string]interface{}{"name": o.name}, "spec": spec}}
			_, err := d.Resource(a.GVR()).Namespace(o.namespace).Create(ctx, u, metav1.CreateOptions{})
			return err
		})
	}
	var vpcObjs, vmObjs []object
	for _, o := range all {
		if o.vpc {
			vpcObjs = append(vpcObjs, o)
		} else {
			vmObjs = append(vmObjs, o)
		}
	}
	create(vpcObjs)
	create(vmObjs)

	// Watch both types across the workspace from here on: each deletion's
	// revision and when the test saw it.
	type seen struct {
		rv int64
		at time.Time
		// deferred: the object carried a deferred deletion when it went.
		deferred bool
	}
	var mu sync.Mutex
	deleted := map[string]seen{} // vpc|vm namespace/name
	watchCtx, stopWatching := context.WithCancel(ctx)
	defer stopWatching()
	var watching sync.WaitGroup
	for _, a := range []fixtures.APIType{fixtures.VPCs, fixtures.VirtualMachines} {
		w, err := d.Resource(a.GVR()).Watch(watchCtx, metav1.ListOptions{})
		check.Must(t, err)
		kind := a.Kind
		watching.Add(1)
		go func() {
			defer watching.Done()
			defer w.Stop()
			for ev := range w.ResultChan() {
				u, ok := ev.Object.(*unstructured.Unstructured)
				if ev.Type != watch.Deleted || !ok {
					continue
				}
				rv, _ := strconv.ParseInt(u.GetResourceVersion(), 10, 64)
				mu.Lock()
				_, deferred := u.GetAnnotations()[v1alpha1.DeletionDeferredAnnotation]
				deleted[kind+"|"+u.GetNamespace()+"/"+u.GetName()] = seen{rv: rv, at: time.Now(), deferred: deferred}
				mu.Unlock()
			}
		}()
	}

	var res deferredTeardown
	var resMu sync.Mutex
	start := time.Now()
	random := slices.Clone(all[:len(all)/2])
	rand.Shuffle(len(random), func(i, j int) { random[i], random[j] = random[j], random[i] })
	go func() {
		// The other namespace goes as a whole, meanwhile.
		if err := d.Resource(namespacesGVR).Delete(ctx, namespaces[1], metav1.DeleteOptions{}); err != nil {
			t.Errorf("deleting namespace %s: %v", namespaces[1], err)
		}
	}()
	parallel(ctx, t, 8, len(random), func(i int) error {
		o := random[i]
		a := fixtures.VirtualMachines
		if o.vpc {
			a = fixtures.VPCs
		}
		err := d.Resource(a.GVR()).Namespace(o.namespace).Delete(ctx, o.name, metav1.DeleteOptions{})
		resMu.Lock()
		defer resMu.Unlock()
		switch {
		case err == nil:
			return nil
		case apierrors.IsForbidden(err) && strings.Contains(err.Error(), "its deletion is deferred"):
			res.deferred++
			return nil
		case o.vpc && apierrors.IsForbidden(err) && strings.Contains(err.Error(), "it has been deleted meanwhile"):
			// kcp decided the DELETE again on the stored VPC after the
			// deferral's record made its cached copy stale, and the
			// deferred deletion was carried out in between: nobody else
			// deletes in this namespace.
			res.deferred++
			return nil
		case apierrors.IsForbidden(err):
			res.otherRefusals++
		}
		return fmt.Errorf("deleting %s %s/%s once: %w", a.Kind, o.namespace, o.name, err)
	})

	check.Eventually(ctx, t, 5*time.Minute, "the tenant to be gone", func() error {
		for _, a := range []fixtures.APIType{fixtures.VPCs, fixtures.VirtualMachines} {
			l, err := d.Resource(a.GVR()).Namespace(namespaces[0]).List(ctx, metav1.ListOptions{})
			if err != nil {
				return err
			}
			if n := len(l.Items); n > 0 {
				return fmt.Errorf("%d %s left in %s", n, a.GVR().Resource, namespaces[0])
			}
		}
		_, err := d.Resource(namespacesGVR).Get(ctx, namespaces[1], metav1.GetOptions{})
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("namespace %s still there (%v)", namespaces[1], err)
		}
		return nil
	})
	res.took = time.Since(start)
	// The watches have seen every deletion once both kinds are gone from
	// both namespaces.
	check.Eventually(ctx, t, time.Minute, "the watches to see every deletion", func() error {
		mu.Lock()
		defer mu.Unlock()
		if len(deleted) < len(all) {
			return fmt.Errorf("%d of %d deletions seen", len(deleted), len(all))
		}
		return nil
	})
	stopWatching()
	watching.Wait()

	lastVM := map[string]seen{} // VPC's namespace/name -> its last VM's deletion
	for key, vpc := range refs {
		s := deleted[fixtures.VirtualMachines.Kind+"|"+key]
		ns, _, _ := strings.Cut(key, "/")
		k := ns + "/" + vpc
		if s.rv > lastVM[k].rv {
			lastVM[k] = s
		}
	}
	for k, vm := range lastVM {
		vpc := deleted[fixtures.VPCs.Kind+"|"+k]
		if vpc.rv <= vm.rv {
			t.Errorf("VPC %s was deleted (revision %d) before its last VM (revision %d): a reference dangled", k, vpc.rv, vm.rv)
			continue
		}
		switch ns, _, _ := strings.Cut(k, "/"); {
		case !vpc.deferred:
		case ns == namespaces[0]:
			res.after = append(res.after, vpc.at.Sub(vm.at))
		default:
			res.afterNamespace = append(res.afterNamespace, vpc.at.Sub(vm.at))
		}
	}
	return res
}

var namespacesGVR = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}

// parallel runs do(i) for i < n, workers at once; every error fails the
// test.
func parallel(ctx context.Context, t *testing.T, workers, n int, do func(i int) error) {
	t.Helper()
	next := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := do(i); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	for i := range n {
		select {
		case next <- i:
		case <-ctx.Done():
		}
	}
	close(next)
	wg.Wait()
}
