package registry

import (
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
)

// pathsOf lists the field paths of protections, in order.
func pathsOf(ps []Protection) []string {
	var out []string
	for _, p := range ps {
		for _, path := range p.Paths {
			out = append(out, path.String())
		}
	}
	return out
}

// refLabels is the reference labels of obj under s, without the stamp.
func refLabels(s Schema, obj map[string]interface{}) map[string]string {
	labels := s.Labels(obj)
	delete(labels, StampLabel)
	return labels
}

// TestOneRuleNamesATargetTwice: one rule may name the same protected
// resource in several dependencies, with different paths (and even in
// different versions). Validation accepts it; the registry keeps one way of
// being referenced per dependent type, whose paths are all of them, so a
// dependent that names the object under both paths is one dependent (one
// lookup, and one name in a denial), and it carries one reference label.
func TestOneRuleNamesATargetTwice(t *testing.T) {
	vms := schema.GroupResource{Group: "compute.test.io", Resource: "virtualmachines"}
	twice := indexed(rule("vm", "VirtualMachine", "virtualmachines",
		dep(vpcs, ".spec.vpcRef.name"), dep(vpcs, ".spec.extraVPCs[*].name")), "e1")
	if errs := twice.Validate(); len(errs) > 0 {
		t.Fatalf("validation refuses a rule naming one resource twice: %v", errs)
	}
	r := New()
	r.SetIndexConfiguration("c1", "e1")
	if _, err := r.Register("c1/vm", twice); err != nil {
		t.Fatal(err)
	}
	got := r.Protections(vpcs)
	if len(got) != 1 || got[0].Rule != "c1/vm" || got[0].DependentKind != "VirtualMachine" {
		t.Fatalf("protections of vpcs = %+v, want one, of rule c1/vm", got)
	}
	if want := []string{".spec.vpcRef.name", ".spec.extraVPCs[*].name"}; !reflect.DeepEqual(pathsOf(got), want) {
		t.Fatalf("paths = %v, want %v", pathsOf(got), want)
	}

	// A dependent naming vpc-1 under both paths references it once: one
	// label, which the lookup of vpc-1 selects it by.
	s := r.IndexSchema(vms)
	if !s.Indexed() || len(s.References) != 1 || len(s.References[0].Paths) != 2 {
		t.Fatalf("index schema = %+v, want one reference to vpcs with both paths", s)
	}
	both := map[string]interface{}{"spec": map[string]interface{}{
		"vpcRef":    map[string]interface{}{"name": "vpc-1"},
		"extraVPCs": []interface{}{map[string]interface{}{"name": "vpc-1"}},
	}}
	if want := map[string]string{RefLabel(vpcs.GroupResource(), "vpc-1"): ""}; !reflect.DeepEqual(refLabels(s, both), want) {
		t.Fatalf("labels of a VM naming vpc-1 twice = %v, want %v", refLabels(s, both), want)
	}
	for _, p := range got[0].Paths {
		if !p.Matches(both, "vpc-1") {
			t.Fatalf("path %s does not find vpc-1", p)
		}
	}
	// Each path on its own references its object.
	apart := map[string]interface{}{"spec": map[string]interface{}{
		"vpcRef":    map[string]interface{}{"name": "vpc-1"},
		"extraVPCs": []interface{}{map[string]interface{}{"name": "vpc-2"}},
	}}
	if n := len(refLabels(s, apart)); n != 2 {
		t.Fatalf("a VM naming vpc-1 and vpc-2 carries %d reference labels, want 2", n)
	}
	if stamp, _ := r.Stamp(vpcs.GroupResource()); stamp == "" {
		t.Fatal("no stamp for vpcs")
	}

	// The same resource in two versions: deletions are matched by group
	// and resource, so both paths still protect every VPC, under one rule.
	v1beta1 := schema.GroupVersionResource{Group: vpcs.Group, Version: "v1beta1", Resource: vpcs.Resource}
	if _, err := r.Register("c1/vm", indexed(rule("vm", "VirtualMachine", "virtualmachines",
		dep(vpcs, ".spec.vpcRef.name"), dep(v1beta1, ".spec.extraVPCs[*].name")), "e1")); err != nil {
		t.Fatal(err)
	}
	got = r.Protections(v1beta1)
	for _, p := range got {
		if p.Rule != "c1/vm" || p.Dependent.Resource != "virtualmachines" {
			t.Fatalf("protection %+v of another rule or dependent", p)
		}
	}
	if paths := pathsOf(got); len(paths) != 2 {
		t.Fatalf("paths across versions = %v, want both", paths)
	}
	if s := r.IndexSchema(vms); len(s.References) != 1 || len(s.References[0].Paths) != 2 || s.References[0].Version != "v1" {
		t.Fatalf("index schema across versions = %+v, want one reference to vpcs (read in v1) with both paths", s)
	}
}

// TestDependentAndProtectedFromOneExport: a rule whose dependent type and
// protected type come from the same export (Regions naming VPCs, both
// exported by network.test.io) lives in that export's workspace, which
// then holds both the rule's reference index configuration and the
// deletion webhook. Only the protected type is protected: the dependent
// type gains nothing by sharing the export.
func TestDependentAndProtectedFromOneExport(t *testing.T) {
	regions := schema.GroupResource{Group: "network.test.io", Resource: "regions"}
	rl := &v1alpha1.DependencyRule{
		ObjectMeta: metav1.ObjectMeta{Name: "region-needs-vpc", Generation: 1},
		Spec: v1alpha1.DependencyRuleSpec{
			Dependent: v1alpha1.Dependent{APIExportName: "network.test.io", Group: regions.Group, Version: "v1", Kind: "Region", Resource: regions.Resource},
			Dependencies: []v1alpha1.Dependency{{
				APIExportRef: v1alpha1.APIExportRef{Path: "root:org:network", Name: "network.test.io"},
				Group:        vpcs.Group, Version: vpcs.Version, Resource: vpcs.Resource,
				FieldRef: v1alpha1.FieldRef{Path: ".spec.vpc"},
			}},
		},
	}
	if errs := rl.Validate(); len(errs) > 0 {
		t.Fatalf("validation refuses a rule within one export: %v", errs)
	}
	r := New()
	// The rule's workspace is the export's, "net".
	if _, err := r.Register("net/region-needs-vpc", indexed(rl, "e1")); err != nil {
		t.Fatal(err)
	}
	got := r.Protections(vpcs)
	if len(got) != 1 || got[0].Dependent.GroupResource() != regions || got[0].DependentKind != "Region" ||
		!reflect.DeepEqual(pathsOf(got), []string{".spec.vpc"}) {
		t.Fatalf("protections of vpcs = %+v, want Regions at .spec.vpc", got)
	}
	if p := r.Protections(regions.WithVersion("v1")); len(p) != 0 {
		t.Fatalf("regions are protected by a rule that only names them as dependents: %+v", p)
	}
	if s := r.IndexSchema(regions); s.Indexed() {
		t.Fatal("indexed before the workspace's index configuration is seen")
	}
	r.SetIndexConfiguration("net", "e1")
	s := r.IndexSchema(regions)
	if !s.Indexed() || len(s.References) != 1 || s.References[0].Target != vpcs.GroupResource() {
		t.Fatalf("index schema of regions = %+v, want indexed, referencing vpcs", s)
	}
	region := map[string]interface{}{"spec": map[string]interface{}{"vpc": "vpc-1"}}
	if want := map[string]string{RefLabel(vpcs.GroupResource(), "vpc-1"): ""}; !reflect.DeepEqual(refLabels(s, region), want) {
		t.Fatalf("labels of a Region = %v, want %v", refLabels(s, region), want)
	}
	// The deletion webhook of VPCs and the index configuration of Regions
	// are in the same workspace; settling VPCs needs the latter intact.
	if _, ok := r.Stamp(vpcs.GroupResource()); !ok {
		t.Fatal("VPCs not settleable with the export workspace's index configuration in place")
	}
	r.SetIndexConfiguration("net", "")
	if _, ok := r.Stamp(vpcs.GroupResource()); ok {
		t.Fatal("VPCs settleable without the index configuration of the rule over them")
	}
}
