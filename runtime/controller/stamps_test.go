package controller

import (
	"slices"
	"strings"
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
		in := specInput(key, r.Spec)
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

// TestPlanStampsNoneThroughStatus: a protected type that a rule references
// at a path into .status gets no stamp, exactly where the webhook's registry
// calls it not settleable: a status write passes no index webhook and
// unsettles nothing. Were the controller to publish a stamp the webhook
// does not settle under, the webhook's guard would withdraw it at once,
// and the two would take turns rewriting the configuration.
func TestPlanStampsNoneThroughStatus(t *testing.T) {
	vpcs := gvr("network.test.io", "vpcs")
	fws := gvr("network.test.io", "firewallrules")
	vpcsV2 := schema.GroupVersionResource{Group: vpcs.Group, Version: "v2", Resource: vpcs.Resource}
	dep := func(gvr schema.GroupVersionResource, path string) v1alpha1.Dependency {
		return v1alpha1.Dependency{APIExportRef: v1alpha1.APIExportRef{Path: "root:network", Name: "network.test.io"},
			Group: gvr.Group, Version: gvr.Version, Resource: gvr.Resource, FieldRef: v1alpha1.FieldRef{Path: path}}
	}
	tests := []struct {
		name string
		// deps are the dependencies of rule c1/a, and of c2/b if any.
		a, b []v1alpha1.Dependency
		// stamped are the types that get a stamp.
		stamped []schema.GroupVersionResource
	}{
		{name: "paths into spec", a: []v1alpha1.Dependency{dep(vpcs, ".spec.vpc"), dep(fws, ".spec.fw")}, stamped: []schema.GroupVersionResource{vpcs, fws}},
		{name: "a field named like status", a: []v1alpha1.Dependency{dep(vpcs, ".statusRef.vpc"), dep(fws, ".spec.status")}, stamped: []schema.GroupVersionResource{vpcs, fws}},
		{name: "one dependency into status", a: []v1alpha1.Dependency{dep(vpcs, ".status.vpc"), dep(fws, ".spec.fw")}, stamped: []schema.GroupVersionResource{fws}},
		{name: "a second dependency on the type into status", a: []v1alpha1.Dependency{dep(vpcs, ".spec.vpc"), dep(vpcs, ".status[*].vpc"), dep(fws, ".spec.fw")}, stamped: []schema.GroupVersionResource{fws}},
		{name: "another version of the type into status", a: []v1alpha1.Dependency{dep(vpcs, ".spec.vpc"), dep(vpcsV2, ".status.vpc"), dep(fws, ".spec.fw")}, stamped: []schema.GroupVersionResource{fws}},
		{name: "another rule into status", a: []v1alpha1.Dependency{dep(vpcs, ".spec.vpc"), dep(fws, ".spec.fw")}, b: []v1alpha1.Dependency{dep(vpcs, ".status.vpc")}, stamped: []schema.GroupVersionResource{fws}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg := registry.New()
			live := map[string]string{}
			var inputs []RuleInput
			for key, deps := range map[string][]v1alpha1.Dependency{"c1/a": tt.a, "c2/b": tt.b} {
				if len(deps) == 0 {
					continue
				}
				cluster, name, _ := strings.Cut(key, "/")
				r := &v1alpha1.DependencyRule{
					ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name), Generation: 1},
					Spec: v1alpha1.DependencyRuleSpec{
						Dependent:    v1alpha1.Dependent{APIExportName: "compute.test.io", Group: "compute.test.io", Version: "v1", Kind: "VirtualMachine", Resource: "virtualmachines"},
						Dependencies: deps,
					},
					Status: v1alpha1.DependencyRuleStatus{IndexEpoch: "e-" + cluster},
				}
				if _, err := reg.Register(key, r); err != nil {
					t.Fatal(err)
				}
				live[cluster] = r.Status.IndexEpoch
				reg.SetIndexConfiguration(cluster, r.Status.IndexEpoch)
				in := specInput(key, r.Spec)
				in.UID, in.Generation, in.IndexEpoch = string(r.UID), r.Generation, r.Status.IndexEpoch
				inputs = append(inputs, in)
			}
			stamps := PlanStamps(inputs, live)
			for _, g := range []schema.GroupVersionResource{vpcs, fws} {
				want := slices.Contains(tt.stamped, g)
				got, ok := stamps[g.GroupResource()]
				if ok != want {
					t.Errorf("%s: stamp %q, want one: %v", g.Resource, got, want)
				}
				webhook, settleable := reg.Stamp(g.GroupResource())
				if settleable != ok || (ok && webhook != got) {
					t.Errorf("%s: the controller's stamp %q (%v) and the webhook's %q (settleable: %v) disagree", g.Resource, got, ok, webhook, settleable)
				}
			}
		})
	}
}
