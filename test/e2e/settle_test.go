package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
	"github.com/depctrl/terraform-provider-depctrl/runtime/settle"
	"github.com/depctrl/terraform-provider-depctrl/test/check"
	"github.com/depctrl/terraform-provider-depctrl/test/env"
	"github.com/depctrl/terraform-provider-depctrl/test/fixtures"
	"github.com/depctrl/terraform-provider-depctrl/test/runtimetest"
)

// settleAfter is the webhook's --settle-after in TestSettled: short, so the
// test need not wait out the default.
const settleAfter = 3 * time.Second

// TestSettled: on the real two-shard kcp, an unreferenced VPC is settled and
// its deletion then skips the webhook (it succeeds while the webhook is
// down, where an unsettled VPC's fails closed); and nobody gets around
// protection through the label: a client cannot set it or change it by any
// write, a reference made to a settled VPC unsettles it before the reference
// is admitted, and a rule added protects the VPCs settled before it once it
// is Ready.
func TestSettled(t *testing.T) {
	ctx, e := integration(t, 15*time.Minute, env.TwoShards)
	top, rt := install(ctx, t, e)
	rt.EnableSettling(ctx, t, "--settle-after", settleAfter.String())
	top.protectVPCs(ctx, t)

	for _, c := range top.Consumers {
		s := &settling{top: top, rt: rt, ws: c, vpcs: top.objects(t, c, fixtures.VPCs)}
		t.Run("shard "+c.Shard, func(t *testing.T) { s.run(ctx, t) })
	}

	// Rules added: objects settled under the rules before keep skipping
	// the webhook (settle.Bridges) until the webhook has had the time to
	// prove them under the new rule, and the rule is Ready only then:
	// from then on a reference made before the rule existed protects its
	// object, and the objects nothing references are settled under the
	// new stamp.
	t.Run("a rule added protects objects settled before it once it is Ready", func(t *testing.T) {
		c := top.Consumers[0]
		s := &settling{top: top, rt: rt, ws: c, vpcs: top.objects(t, c, fixtures.VPCs)}
		for _, name := range []string{"bridged-free", "bridged-later", "bridged-used"} {
			s.create(ctx, t, name)
		}
		old := s.waitSettled(ctx, t, "bridged-free")
		s.waitSettled(ctx, t, "bridged-later")
		s.waitSettled(ctx, t, "bridged-used")
		// No rule covers ManagedDBs yet: the reference records nothing,
		// and the VPC stays settled.
		s.top.object(ctx, t, s.ws, fixtures.ManagedDBs, "db-of-bridged-used", ref("bridged-used"), nil)
		if l := s.label(ctx, t, "bridged-used"); l != old {
			t.Fatalf("the VPC's label is %q, want %q", l, old)
		}
		top.createRule(ctx, t, top.Compute, ruleObject("db-needs-vpc", fixtures.ManagedDBs, fixtures.VPCs, top.Network.Path, ".spec.vpcRef.name"))
		top.waitCondition(ctx, t, top.Compute, "db-needs-vpc", v1alpha1.ConditionReady, "False", "Settling")
		pub, err := publicationIn(top.webhookConfiguration(ctx, t, top.Network), fixtures.VPCs)
		check.Must(t, err)
		if !pub.Accepts(old) {
			t.Fatalf("the stamp before the rule is no longer accepted while the rule is not Ready: published %v", pub.Stamps())
		}
		s.expectDeletedWithoutWebhook(ctx, t, "bridged-free")
		check.Eventually(ctx, t, 2*time.Minute, "rule db-needs-vpc Ready", func() error {
			status, reason, msg := condition(top.getRule(ctx, t, top.Compute, "db-needs-vpc"), v1alpha1.ConditionReady)
			if status != "True" {
				return fmt.Errorf("Ready=%q %s: %s", status, reason, msg)
			}
			return nil
		})
		pub, err = publicationIn(top.webhookConfiguration(ctx, t, top.Network), fixtures.VPCs)
		check.Must(t, err)
		if pub.Accepts(old) {
			t.Fatalf("the rule is Ready while the stamp before it is still accepted: published %v", pub.Stamps())
		}
		s.top.expectDenied(ctx, t, s.ws, fixtures.VPCs, "bridged-used", "still referenced by ManagedDB/db-of-bridged-used")
		if l := s.label(ctx, t, "bridged-used"); l == pub.Current {
			t.Fatalf("the referenced VPC is settled under the new stamp %q", l)
		}
		// Settled again under the new rules, and then deletable.
		s.waitSettled(ctx, t, "bridged-later")
		s.expectDeletedWithoutWebhook(ctx, t, "bridged-later")
	})

	t.Run("a reference index removed while the controller is down unsettles", func(t *testing.T) {
		c := top.Consumers[1]
		s := &settling{top: top, rt: rt, ws: c, vpcs: top.objects(t, c, fixtures.VPCs)}
		s.create(ctx, t, "index-gone")
		stamp := s.waitSettled(ctx, t, "index-gone")
		rt.StopController(t)
		check.Must(t, top.dynamicFor(t, top.Compute.Path).Resource(mutatingGVR).Delete(ctx, v1alpha1.WebhookConfigurationName, metav1.DeleteOptions{}))
		check.Eventually(ctx, t, time.Minute, "the webhook to withdraw the published stamp", func() error {
			if p := s.published(ctx, t); p != "" {
				return fmt.Errorf("still %q", p)
			}
			return nil
		})
		// Without the index the VM's create records no intent, so the
		// VPC keeps its label; only the withdrawn stamp sends its
		// deletion to the webhook.
		top.waitIndexWebhookGone(ctx, t, c)
		s.top.object(ctx, t, s.ws, fixtures.VirtualMachines, "vm-of-index-gone", ref("index-gone"), nil)
		if l := s.label(ctx, t, "index-gone"); l != stamp {
			t.Fatalf("the VPC's label is %q: the VM's create was indexed after all", l)
		}
		s.top.expectDenied(ctx, t, s.ws, fixtures.VPCs, "index-gone", "still referenced by VirtualMachine/vm-of-index-gone")
		rt.StartController(t)
		top.waitReady(ctx, t, top.Compute, "vm-needs-vpc")
	})

	// Rules only removed: a proof under more rules holds under fewer, so the
	// old stamp stays accepted beside the new one (settle.Keeps) and a
	// settled object's deletion keeps skipping the webhook right after the
	// removal, rather than waiting --settle-after and a sweep.
	t.Run("a rule removed keeps objects settled", func(t *testing.T) {
		c := top.Consumers[1]
		s := &settling{top: top, rt: rt, ws: c, vpcs: top.objects(t, c, fixtures.VPCs)}
		s.create(ctx, t, "before-rule-removal")
		old := s.waitSettled(ctx, t, "before-rule-removal")
		top.deleteRule(ctx, t, top.Compute, "db-needs-vpc")
		check.Eventually(ctx, t, time.Minute, "the new stamp published beside the old one", func() error {
			u := top.webhookConfiguration(ctx, t, top.Network)
			if u == nil {
				return fmt.Errorf("no protection configuration")
			}
			pub, err := publicationIn(u, fixtures.VPCs)
			check.Must(t, err)
			if pub.Current == "" || pub.Current == old || !pub.Accepts(old) {
				return fmt.Errorf("published %v, current %q", pub.Stamps(), pub.Current)
			}
			return nil
		})
		s.expectDeletedWithoutWebhook(ctx, t, "before-rule-removal")
		// New objects are settled under the new stamp.
		s.create(ctx, t, "after-rule-removal")
		if stamp := s.waitSettled(ctx, t, "after-rule-removal"); stamp == old {
			t.Fatalf("settled under the old stamp %q", stamp)
		}
	})
}

// settling holds one consumer's clients.
type settling struct {
	top  *Topology
	rt   *runtimetest.Runtime
	ws   env.Workspace
	vpcs dynamic.ResourceInterface
}

func (s *settling) run(ctx context.Context, t *testing.T) {
	for _, name := range []string{"free", "to-reference", "to-forge", "to-relabel", "to-unlabel"} {
		s.create(ctx, t, name)
	}
	stamp := s.waitSettled(ctx, t, "free")
	for _, name := range []string{"to-reference", "to-relabel", "to-unlabel"} {
		s.waitSettled(ctx, t, name)
	}

	t.Run("a settled object's deletion skips the webhook", func(t *testing.T) {
		s.expectDeletedWithoutWebhook(ctx, t, "free")
	})
	t.Run("a create cannot carry the label", func(t *testing.T) {
		u := vpcObject("forged")
		u.SetLabels(map[string]string{settle.SettledLabel: stamp})
		_, err := s.vpcs.Create(ctx, u, metav1.CreateOptions{})
		refusedAsForged(t, err)
	})
	t.Run("an update cannot add the label to a referenced object", func(t *testing.T) {
		s.top.object(ctx, t, s.ws, fixtures.VirtualMachines, "vm-of-to-forge", ref("to-forge"), nil)
		refusedAsForged(t, s.labelPatch(ctx, "to-forge", types.MergePatchType, map[string]any{settle.SettledLabel: stamp}))
		if l := s.label(ctx, t, "to-forge"); l != "" {
			t.Fatalf("the label was written: %q", l)
		}
		s.top.expectDenied(ctx, t, s.ws, fixtures.VPCs, "to-forge", "still referenced by VirtualMachine/vm-of-to-forge")
	})
	t.Run("an update cannot change the label", func(t *testing.T) {
		refusedAsForged(t, s.labelPatch(ctx, "to-relabel", types.MergePatchType, map[string]any{settle.SettledLabel: "0000"}))
		u, err := s.vpcs.Get(ctx, "to-relabel", metav1.GetOptions{})
		check.Must(t, err)
		u.SetLabels(map[string]string{settle.SettledLabel: "0000"})
		_, err = s.vpcs.Update(ctx, u, metav1.UpdateOptions{})
		refusedAsForged(t, err)
	})
	t.Run("anyone may remove the label, which unsettles", func(t *testing.T) {
		check.Must(t, s.labelPatch(ctx, "to-unlabel", types.MergePatchType, map[string]any{settle.SettledLabel: nil}))
		s.failsClosedWithoutWebhook(ctx, t, "to-unlabel")
	})
	t.Run("an object referenced before it existed is not settled while that write may be in flight", func(t *testing.T) {
		s.top.object(ctx, t, s.ws, fixtures.VirtualMachines, "vm-of-later", ref("later"), nil)
		if !s.marked(ctx, t) {
			t.Fatal("no pending mark for the reference to a VPC that does not exist yet")
		}
		s.create(ctx, t, "later")
		s.top.expectDeleted(ctx, t, s.ws, fixtures.VirtualMachines, "vm-of-later")
		// Nothing references it now, and nothing but the mark keeps it
		// from being settled: a write like vm-of-later's could still be
		// on its way.
		time.Sleep(3 * settleAfter)
		if l := s.label(ctx, t, "later"); l != "" {
			t.Fatalf("settled (%q) within an intent's lifetime of a write that referenced it before it existed", l)
		}
	})
	t.Run("a new reference unsettles before it is admitted", func(t *testing.T) {
		s.top.object(ctx, t, s.ws, fixtures.VirtualMachines, "vm-of-to-reference", ref("to-reference"), nil)
		if l := s.label(ctx, t, "to-reference"); l != "" {
			t.Fatalf("the referenced VPC is still settled (%q)", l)
		}
		s.top.expectDenied(ctx, t, s.ws, fixtures.VPCs, "to-reference", "still referenced by VirtualMachine/vm-of-to-reference")
	})
}

// create creates an unreferenced VPC.
func (s *settling) create(ctx context.Context, t *testing.T, name string) {
	t.Helper()
	s.top.object(ctx, t, s.ws, fixtures.VPCs, name, map[string]interface{}{}, nil)
}

// label is the settled label of the VPC called name, "" without one.
func (s *settling) label(ctx context.Context, t *testing.T, name string) string {
	t.Helper()
	u, err := s.vpcs.Get(ctx, name, metav1.GetOptions{})
	check.Must(t, err)
	return u.GetLabels()[settle.SettledLabel]
}

// published is the stamp the VPCs' deletion webhook leaves out.
func (s *settling) published(ctx context.Context, t *testing.T) string {
	t.Helper()
	return s.top.publishedStamp(ctx, t, fixtures.VPCs)
}

// marked reports whether the dep-ctrl workspace holds a pending mark for
// the VPCs in this consumer.
func (s *settling) marked(ctx context.Context, t *testing.T) bool {
	t.Helper()
	leases, err := s.top.dynamicFor(t, s.top.DepCtrl.Path).Resource(leasesGVR).Namespace("default").List(ctx, metav1.ListOptions{})
	check.Must(t, err)
	for _, l := range leases.Items {
		if l.GetAnnotations()[v1alpha1.Group+"/references"] == s.ws.Cluster+"/"+fixtures.VPCs.Resource+"."+fixtures.VPCs.Group {
			return true
		}
	}
	return false
}

var leasesGVR = schema.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}

// waitSettled waits until the VPC is settled under the published stamp,
// and returns it.
func (s *settling) waitSettled(ctx context.Context, t *testing.T, name string) string {
	t.Helper()
	stamp := ""
	check.Eventually(ctx, t, 2*time.Minute, "VPC "+name+" settled", func() error {
		stamp = s.published(ctx, t)
		if l := s.label(ctx, t, name); stamp == "" || l != stamp {
			return fmt.Errorf("label %q, published %q", l, stamp)
		}
		return nil
	})
	return stamp
}

// labelPatch patches the VPC's labels.
func (s *settling) labelPatch(ctx context.Context, name string, pt types.PatchType, labels map[string]any) error {
	body, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": labels}})
	_, err := s.vpcs.Patch(ctx, name, pt, body, metav1.PatchOptions{})
	return err
}

// expectDeletedWithoutWebhook deletes the VPC while the webhook is down: a
// deletion that reached the webhook would fail closed.
func (s *settling) expectDeletedWithoutWebhook(ctx context.Context, t *testing.T, name string) {
	t.Helper()
	s.rt.StopWebhook(t)
	defer s.rt.StartWebhook(ctx, t)
	if err := s.vpcs.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting the settled VPC %s with the webhook down: %v", name, err)
	}
}

// failsClosedWithoutWebhook asserts that the VPC's deletion reaches the
// webhook: with the webhook down it fails, and the VPC stays.
func (s *settling) failsClosedWithoutWebhook(ctx context.Context, t *testing.T, name string) {
	t.Helper()
	s.rt.StopWebhook(t)
	defer s.rt.StartWebhook(ctx, t)
	err := s.vpcs.Delete(ctx, name, metav1.DeleteOptions{})
	if err == nil || !strings.Contains(err.Error(), "failed calling webhook") {
		t.Fatalf("deleting the unsettled VPC %s with the webhook down: want the webhook's call to fail, got %v", name, err)
	}
	if _, err := s.vpcs.Get(ctx, name, metav1.GetOptions{}); apierrors.IsNotFound(err) {
		t.Fatalf("VPC %s is gone", name)
	}
}

// refusedAsForged asserts err is the guard's refusal.
func refusedAsForged(t *testing.T, err error) {
	t.Helper()
	if err == nil || !strings.Contains(err.Error(), "only the dependency webhook may set the label "+settle.SettledLabel) {
		t.Fatalf("want the write refused for setting the settled label, got %v", err)
	}
}

func vpcObject(name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": fixtures.VPCs.Group + "/v1", "kind": fixtures.VPCs.Kind,
		"metadata": map[string]interface{}{"name": name}, "spec": map[string]interface{}{},
	}}
}
