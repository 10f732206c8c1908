package registry

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
	"github.com/depctrl/terraform-provider-depctrl/runtime/settle"
)

// TestStamp: the stamp of a protected type covers every rule over it, once
// each however many paths it has, and no other; objects may be settled
// under it only while the reference index configuration of each of those
// rules is intact.
func TestStamp(t *testing.T) {
	r := New()
	vm := indexed(rule("vm-rule", "VirtualMachine", "virtualmachines", dep(vpcs, ".spec.vpc"), dep(vpcs, ".spec.backup")), "epoch-1")
	vm.UID = types.UID("uid-vm")
	db := indexed(rule("db-rule", "ManagedDB", "manageddbs", dep(vpcs, ".spec.vpc"), dep(fws, ".spec.fw")), "epoch-2")
	db.UID, db.Generation = types.UID("uid-db"), 4
	for key, rl := range map[string]*v1alpha1.DependencyRule{"c1/vm-rule": vm, "c2/db-rule": db} {
		if _, err := r.Register(key, rl); err != nil {
			t.Fatal(err)
		}
	}
	want := settle.Stamp([]settle.RuleRef{
		{Key: "c1/vm-rule", UID: "uid-vm", Generation: 1, IndexEpoch: "epoch-1"},
		{Key: "c2/db-rule", UID: "uid-db", Generation: 4, IndexEpoch: "epoch-2"},
	})
	if got, ok := r.Stamp(vpcs.GroupResource()); got != want || ok {
		t.Errorf("before the index configurations are seen: Stamp = %q, %v; want %q, not settleable", got, ok, want)
	}
	r.SetIndexConfiguration("c1", "epoch-1")
	if _, ok := r.Stamp(vpcs.GroupResource()); ok {
		t.Error("settleable while the configuration of c2 is not seen")
	}
	r.SetIndexConfiguration("c2", "epoch-2")
	if got, ok := r.Stamp(vpcs.GroupResource()); got != want || !ok {
		t.Errorf("Stamp = %q, %v; want %q, settleable", got, ok, want)
	}
	fwStamp, _ := r.Stamp(fws.GroupResource())
	if fwStamp != settle.Stamp([]settle.RuleRef{{Key: "c2/db-rule", UID: "uid-db", Generation: 4, IndexEpoch: "epoch-2"}}) {
		t.Errorf("firewallrules' stamp %q covers other rules", fwStamp)
	}
	r.SetIndexConfiguration("c2", "epoch-other")
	if got, ok := r.Stamp(vpcs.GroupResource()); got != want || ok {
		t.Errorf("after c2's configuration changed: Stamp = %q, %v; want the same stamp, not settleable", got, ok)
	}
	r.Unregister("c2/db-rule")
	if got, _ := r.Stamp(vpcs.GroupResource()); got == want {
		t.Error("the stamp did not change when a rule went")
	}
	if got, ok := r.Stamp(schema.GroupResource{Resource: "nothing"}); got != "" || ok {
		t.Errorf("an unprotected type has stamp %q, %v", got, ok)
	}
}

// TestStampNotSettleableThroughStatus: a type that some rule references at a
// path into .status is never settleable, whichever rule, dependency or
// version of the type carries that path; the type's other rules, and the
// other types of the same rule, are not affected. The stamp itself stays,
// so that a published one is withdrawn (settle.PublishedGuard).
func TestStampNotSettleableThroughStatus(t *testing.T) {
	vpcsV2 := schema.GroupVersionResource{Group: vpcs.Group, Version: "v2", Resource: vpcs.Resource}
	tests := []struct {
		name  string
		rules map[string]*v1alpha1.DependencyRule
		// settleable is what Stamp reports for vpcs and firewallrules.
		vpcs, fws bool
	}{
		{name: "paths into spec", vpcs: true, fws: true, rules: map[string]*v1alpha1.DependencyRule{
			"c1/vm": rule("vm", "VirtualMachine", "virtualmachines", dep(vpcs, ".spec.vpc"), dep(fws, ".spec.fw")),
		}},
		{name: "a field named like status", vpcs: true, fws: true, rules: map[string]*v1alpha1.DependencyRule{
			"c1/vm": rule("vm", "VirtualMachine", "virtualmachines", dep(vpcs, ".statusRef.vpc"), dep(fws, ".spec.status")),
		}},
		{name: "one dependency into status", vpcs: false, fws: true, rules: map[string]*v1alpha1.DependencyRule{
			"c1/vm": rule("vm", "VirtualMachine", "virtualmachines", dep(vpcs, ".status.vpc"), dep(fws, ".spec.fw")),
		}},
		{name: "a second path of the same dependency type into status", vpcs: false, fws: true, rules: map[string]*v1alpha1.DependencyRule{
			"c1/vm": rule("vm", "VirtualMachine", "virtualmachines", dep(vpcs, ".spec.vpc"), dep(vpcs, ".status.networks[*].vpc"), dep(fws, ".spec.fw")),
		}},
		{name: "another version of the type, into status", vpcs: false, fws: true, rules: map[string]*v1alpha1.DependencyRule{
			"c1/vm": rule("vm", "VirtualMachine", "virtualmachines", dep(vpcs, ".spec.vpc"), dep(vpcsV2, ".status.vpc"), dep(fws, ".spec.fw")),
		}},
		{name: "another rule into status", vpcs: false, fws: true, rules: map[string]*v1alpha1.DependencyRule{
			"c1/vm": rule("vm", "VirtualMachine", "virtualmachines", dep(vpcs, ".spec.vpc"), dep(fws, ".spec.fw")),
			"c2/db": rule("db", "ManagedDB", "manageddbs", dep(vpcs, ".status.vpc")),
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := New()
			for key, rl := range tt.rules {
				if _, err := r.Register(key, indexed(rl, "epoch-"+clusterOf(key))); err != nil {
					t.Fatal(err)
				}
				r.SetIndexConfiguration(clusterOf(key), "epoch-"+clusterOf(key))
			}
			for gr, want := range map[schema.GroupResource]bool{vpcs.GroupResource(): tt.vpcs, fws.GroupResource(): tt.fws} {
				stamp, settleable := r.Stamp(gr)
				if stamp == "" {
					t.Errorf("%s: no stamp", gr)
				}
				if settleable != want {
					t.Errorf("%s: settleable %v, want %v", gr, settleable, want)
				}
			}
		})
	}
}
