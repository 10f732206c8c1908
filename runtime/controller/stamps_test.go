package controller

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
	"github.com/depctrl/terraform-provider-depctrl/runtime/registry"
)

// TestPlanStampsMatchTheRegistry: the stamp the controller publishes for a
// protected type is the one the webhook computes from the same rules, or
// no object would ever be settled; an invalid rule counts on neither side.
func TestPlanStampsMatchTheRegistry(t *testing.T) {
	vpcs := gvr("network.test.io", "vpcs")
	fws := gvr("network.test.io", "firewallrules")
	dep := func(gvr schema.GroupVersionResource, path string) v1alpha1.Dependency {
		return v1alpha1.Dependency{APIExportRef: v1alpha1.APIExportRef{Path: "root:network", Name: "network.test.io"},
			Group: gvr.Group, Version: gvr.Version, Resource: gvr.Resource, FieldRef: v1alpha1.FieldRef{Path: path}}
	}
	rule := func(name, uid string, gen int64, epoch string, deps ...v1alpha1.Dependency) *v1alpha1.DependencyRule {
		return &v1alpha1.DependencyRule{
			ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(uid), Generation: gen},
			Spec: v1alpha1.DependencyRuleSpec{
				Dependent:    v1alpha1.Dependent{APIExportName: "compute.test.io", Group: "compute.test.io", Version: "v1", Kind: "VirtualMachine", Resource: "virtualmachines"},
				Dependencies: deps,
			},
			Status: v1alpha1.DependencyRuleStatus{IndexEpoch: epoch},
		}
	}
	rules := map[string]*v1alpha1.DependencyRule{
		"c1/a": rule("a", "u1", 2, "e1", dep(vpcs, ".spec.vpc"), dep(vpcs, ".spec.backup")),
		"c2/b": rule("b", "u2", 1, "e2", dep(vpcs, ".spec.vpc"), dep(fws, ".spec.fw")),
	}
	reg := registry.New()
	var inputs []RuleInput
	for _, key := range []string{"c1/a", "c2/b"} {
		r := rules[key]
		if _, err := reg.Register(key, r); err != nil {
			t.Fatal(err)
		}
		in := SpecInput(key, r.Spec)
		in.UID, in.Generation, in.IndexEpoch = string(r.UID), r.Generation, r.Status.IndexEpoch
		inputs = append(inputs, in)
	}
	inputs = append(inputs, RuleInput{Key: "c3/broken", Invalid: "no", Dependencies: []DependencyInput{{GVR: vpcs}}})
	live := map[string]string{"c1": "e1", "c2": "e2"}
	for cluster, epoch := range live {
		reg.SetIndexConfiguration(cluster, epoch)
	}
	stamps := PlanStamps(inputs, live)
	for _, gvr := range []schema.GroupVersionResource{vpcs, fws} {
		want, settleable := reg.Stamp(gvr.GroupResource())
		if got := stamps[gvr.GroupResource()]; got == "" || got != want || !settleable {
			t.Errorf("%s: controller's stamp %q, webhook's %q (settleable: %v)", gvr.Resource, got, want, settleable)
		}
	}
	if stamps[vpcs.GroupResource()] == stamps[fws.GroupResource()] {
		t.Error("two types protected by different rules share a stamp")
	}

	// c2's index configuration replaced (a new UID) or tampered with: the
	// types c2's rule protects get no stamp, the others keep theirs.
	for name, epochs := range map[string]map[string]string{"replaced": {"c1": "e1", "c2": "e9"}, "gone": {"c1": "e1"}} {
		stamps := PlanStamps(inputs, epochs)
		if s, ok := stamps[vpcs.GroupResource()]; ok {
			t.Errorf("%s: vpcs keep the stamp %q although a rule over them lost its index", name, s)
		}
		if s, ok := stamps[fws.GroupResource()]; ok {
			t.Errorf("%s: firewallrules keep the stamp %q although their rule lost its index", name, s)
		}
	}
	only := PlanStamps(inputs[:1], map[string]string{"c1": "e1"})
	if len(only) != 1 || only[vpcs.GroupResource()] == "" {
		t.Errorf("stamps with c1's rule alone: %v", only)
	}
}
