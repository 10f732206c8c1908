package registry

import (
	"fmt"
	"slices"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
)

var (
	vpcs = schema.GroupVersionResource{Group: "network.test.io", Version: "v1", Resource: "vpcs"}
	fws  = schema.GroupVersionResource{Group: "network.test.io", Version: "v1", Resource: "firewallrules"}
)

func rule(name, kind, resource string, deps ...v1alpha1.Dependency) *v1alpha1.DependencyRule {
	return &v1alpha1.DependencyRule{
		ObjectMeta: metav1.ObjectMeta{Name: name, Generation: 1},
		Spec: v1alpha1.DependencyRuleSpec{
			Dependent:    v1alpha1.Dependent{APIExportName: "compute.test.io", Group: "compute.test.io", Version: "v1", Kind: kind, Resource: resource},
			Dependencies: deps,
		},
	}
}

func dep(gvr schema.GroupVersionResource, path string) v1alpha1.Dependency {
	return v1alpha1.Dependency{
		APIExportRef: v1alpha1.APIExportRef{Path: "root:network", Name: "network.test.io"},
		Group:        gvr.Group, Version: gvr.Version, Resource: gvr.Resource,
		FieldRef: v1alpha1.FieldRef{Path: path},
	}
}

func TestRegisterFindUnregister(t *testing.T) {
	r := New()
	if _, err := r.Register("c1/vm", rule("vm", "VirtualMachine", "virtualmachines",
		dep(vpcs, ".spec.vpcRef.name"), dep(vpcs, ".spec.extraVPCs[*].name"), dep(fws, ".spec.firewall"))); err != nil {
		t.Fatal(err)
	}
	db := rule("db", "ManagedDB", "manageddbs", dep(vpcs, ".spec.vpc"))
	db.Spec.DeferDeletion = true
	if _, err := r.Register("c0/db", db); err != nil {
		t.Fatal(err)
	}
	if got, want := r.Targets(), []schema.GroupVersionResource{fws, vpcs}; !slices.Equal(got, want) {
		t.Fatalf("targets = %v, want each protected resource once: %v", got, want)
	}
	if got, want := r.TargetExports(vpcs.GroupResource()), []v1alpha1.APIExportRef{{Path: "root:network", Name: "network.test.io"}}; !slices.Equal(got, want) {
		t.Fatalf("exports serving vpcs = %v, want the one both rules name, once: %v", got, want)
	}
	got := r.Protections(vpcs)
	if len(got) != 2 || got[0].Rule != "c0/db" || got[1].Rule != "c1/vm" {
		t.Fatalf("protections of vpcs = %+v", got)
	}
	if len(got[1].Paths) != 2 || got[1].DependentKind != "VirtualMachine" {
		t.Fatalf("the VM rule should carry both paths to vpcs: %+v", got[1])
	}
	if !got[0].DeferDeletion || got[1].DeferDeletion {
		t.Fatalf("only the DB rule defers deletions: %+v", got)
	}
	// The dependent's export is the one the rule names, in the rule's
	// own workspace.
	if want := []Export{{Cluster: "c1", Name: "compute.test.io"}}; !slices.Equal(got[1].DependentExports, want) {
		t.Fatalf("dependent exports of the VM rule = %v, want %v", got[1].DependentExports, want)
	}
	// Another version of the same resource finds the same protections.
	if len(r.Protections(schema.GroupVersionResource{Group: vpcs.Group, Version: "v2", Resource: vpcs.Resource})) != 2 {
		t.Fatal("lookups must not depend on the request's version")
	}

	// An in-place edit replaces the rule: the firewall protection goes away.
	old, err := r.Register("c1/vm", rule("vm", "VirtualMachine", "virtualmachines", dep(vpcs, ".spec.vpcRef.name")))
	if err != nil || old == nil {
		t.Fatalf("re-register: %v, old %v", err, old)
	}
	if len(r.Protections(fws)) != 0 {
		t.Fatal("an edited rule must stop protecting what it no longer names")
	}
	if got, want := r.Targets(), []schema.GroupVersionResource{vpcs}; !slices.Equal(got, want) {
		t.Fatalf("targets after edit = %v, want %v", got, want)
	}
	if p := r.Protections(vpcs); len(p) != 2 || len(p[1].Paths) != 1 {
		t.Fatalf("after edit: %+v", p)
	}

	r.Unregister("c1/vm")
	r.Unregister("c0/db")
	if r.Len() != 0 || len(r.Protections(vpcs)) != 0 {
		t.Fatal("unregistered rules must leave nothing behind")
	}
}

func TestRegisterRefusesInvalidRules(t *testing.T) {
	r := New()
	if _, err := r.Register("c/bad", rule("bad", "VirtualMachine", "virtualmachines", dep(vpcs, "spec.no-dot"))); err == nil {
		t.Fatal("want an error for an unparseable field path")
	}
	if r.Len() != 0 {
		t.Fatal("an invalid rule must not be registered")
	}
}

func TestConcurrentUse(t *testing.T) {
	r := New()
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				key := fmt.Sprintf("c%d/r%d", w, i%10)
				if _, err := r.Register(key, rule("r", "VirtualMachine", "virtualmachines", dep(vpcs, ".spec.vpc"))); err != nil {
					t.Error(err)
					return
				}
				if i%3 == 0 {
					r.Unregister(key)
				}
			}
		}()
	}
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 2000 {
				for _, p := range r.Protections(vpcs) {
					if p.Dependent.Resource != "virtualmachines" || len(p.Paths) != 1 {
						t.Errorf("torn read: %+v", p)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	if got := len(r.Protections(vpcs)); got != r.Len() {
		t.Fatalf("index has %d entries for %d rules", got, r.Len())
	}
}

func BenchmarkProtections(b *testing.B) {
	r := New()
	for i := range 1000 {
		target := schema.GroupVersionResource{Group: fmt.Sprintf("g%d.test.io", i%50), Version: "v1", Resource: "things"}
		if _, err := r.Register(fmt.Sprintf("c/r%d", i), rule("r", "VirtualMachine", "virtualmachines", dep(target, ".spec.ref"))); err != nil {
			b.Fatal(err)
		}
	}
	target := schema.GroupVersionResource{Group: "g7.test.io", Version: "v1", Resource: "things"}
	b.ResetTimer()
	for b.Loop() {
		if len(r.Protections(target)) != 20 {
			b.Fatal("wrong count")
		}
	}
}

func indexed(rule *v1alpha1.DependencyRule, epoch string) *v1alpha1.DependencyRule {
	rule.Status.IndexEpoch = epoch
	return rule
}

func TestIndexSchema(t *testing.T) {
	vms := schema.GroupResource{Group: "compute.test.io", Resource: "virtualmachines"}
	r := New()
	r.SetIndexConfiguration("c1", "e1")
	if s := r.IndexSchema(vms); s.Indexed() {
		t.Fatalf("no rules, yet indexed: %+v", s)
	}
	if _, err := r.Register("c1/a", indexed(rule("a", "VirtualMachine", "virtualmachines", dep(vpcs, ".spec.vpcRef.name")), "e1")); err != nil {
		t.Fatal(err)
	}
	first := r.IndexSchema(vms)
	if !first.Indexed() || len(first.References) != 1 || first.References[0].Target != vpcs.GroupResource() {
		t.Fatalf("schema after one rule = %+v", first)
	}
	if _, err := r.Register("c1/b", indexed(rule("b", "VirtualMachine", "virtualmachines", dep(vpcs, ".spec.extra"), dep(fws, ".spec.firewall")), "e1")); err != nil {
		t.Fatal(err)
	}
	second := r.IndexSchema(vms)
	if second.Stamp == first.Stamp {
		t.Fatal("a second rule over the type kept the stamp")
	}
	if len(second.References) != 2 {
		t.Fatalf("references = %+v, want vpcs and firewallrules", second.References)
	}
	for _, ref := range second.References {
		if ref.Target == vpcs.GroupResource() && len(ref.Paths) != 2 {
			t.Fatalf("vpcs should be reached by both rules' paths: %+v", ref)
		}
	}
	// The index configuration was recreated: until the controller has
	// written the new epoch to every rule there, nothing is trusted ...
	r.SetIndexConfiguration("c1", "e2")
	if s := r.IndexSchema(vms); s.Indexed() {
		t.Fatalf("rules naming a configuration that is gone left the type indexed: %+v", s)
	}
	if _, err := r.Register("c1/b", indexed(rule("b", "VirtualMachine", "virtualmachines", dep(vpcs, ".spec.extra"), dep(fws, ".spec.firewall")), "e2")); err != nil {
		t.Fatal(err)
	}
	if s := r.IndexSchema(vms); s.Indexed() {
		t.Fatalf("one rule still naming the old configuration left the type indexed: %+v", s)
	}
	// ... then a new stamp.
	if _, err := r.Register("c1/a", indexed(rule("a", "VirtualMachine", "virtualmachines", dep(vpcs, ".spec.vpcRef.name")), "e2")); err != nil {
		t.Fatal(err)
	}
	if s := r.IndexSchema(vms); s.Stamp == second.Stamp || !s.Indexed() {
		t.Fatalf("a new epoch kept the stamp or unindexed the type: %+v", s)
	}
	// The configuration deleted (or changed by hand) while the rules still
	// name it: nothing over the type is trusted, whatever their status says.
	r.SetIndexConfiguration("c1", "")
	if s := r.IndexSchema(vms); s.Indexed() {
		t.Fatalf("a deleted configuration left the type indexed: %+v", s)
	}
	r.SetIndexConfiguration("c1", "e2")
	if s := r.IndexSchema(vms); !s.Indexed() {
		t.Fatal("the configuration back under the same UID, yet not indexed")
	}
	r.SetIndexConfiguration("c1", "e1")
	for _, k := range []string{"a", "b"} {
		deps := []v1alpha1.Dependency{dep(vpcs, ".spec.vpcRef.name")}
		if k == "b" {
			deps = []v1alpha1.Dependency{dep(vpcs, ".spec.extra"), dep(fws, ".spec.firewall")}
		}
		if _, err := r.Register("c1/"+k, indexed(rule(k, "VirtualMachine", "virtualmachines", deps...), "e1")); err != nil {
			t.Fatal(err)
		}
	}
	// Its index webhook is gone: nothing over the type is trusted.
	if _, err := r.Register("c1/b", rule("b", "VirtualMachine", "virtualmachines", dep(vpcs, ".spec.extra"), dep(fws, ".spec.firewall"))); err != nil {
		t.Fatal(err)
	}
	if s := r.IndexSchema(vms); s.Indexed() {
		t.Fatalf("a rule without an epoch left the type indexed: %+v", s)
	}
	if _, err := r.Register("c1/b", indexed(rule("b", "VirtualMachine", "virtualmachines", dep(vpcs, ".spec.extra"), dep(fws, ".spec.firewall")), "e1")); err != nil {
		t.Fatal(err)
	}
	// A rule over another type does not touch this one.
	if _, err := r.Register("c1/db", rule("db", "ManagedDB", "manageddbs", dep(vpcs, ".spec.vpc"))); err != nil {
		t.Fatal(err)
	}
	if r.IndexSchema(vms).Stamp != second.Stamp {
		t.Fatal("a rule over another dependent type changed the stamp")
	}
	r.Unregister("c1/b")
	if got := r.IndexSchema(vms); got.Stamp != first.Stamp {
		t.Fatalf("after removing the second rule the stamp is %q, want the first %q again", got.Stamp, first.Stamp)
	}
	r.Unregister("c1/a")
	if r.IndexSchema(vms).Indexed() {
		t.Fatal("no rules left, still indexed")
	}
}

// BenchmarkRegisterMany registers 1 000 rules over one dependent type, each
// with its own path, then asks for the protections and the index schema
// once, as the webhook does when it starts with that many rules.
func BenchmarkRegisterMany(b *testing.B) {
	rules := make([]*v1alpha1.DependencyRule, 1000)
	for i := range rules {
		rules[i] = indexed(rule(fmt.Sprintf("r%04d", i), "VirtualMachine", "virtualmachines", dep(vpcs, fmt.Sprintf(".spec.field%d", i))), "epoch")
	}
	vms := schema.GroupResource{Group: "compute.test.io", Resource: "virtualmachines"}
	for b.Loop() {
		r := New()
		r.SetIndexConfiguration("c", "epoch")
		for i, rule := range rules {
			if _, err := r.Register(fmt.Sprintf("c/r%04d", i), rule); err != nil {
				b.Fatal(err)
			}
		}
		if len(r.Protections(vpcs)) != len(rules) || !r.IndexSchema(vms).Indexed() {
			b.Fatal("not every rule registered")
		}
	}
}
