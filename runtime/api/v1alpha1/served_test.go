package v1alpha1

import (
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/utils/ptr"
)

// structural is a VirtualMachine schema a real provider would write: every
// level typed, no unknown fields kept except under .spec.extra.
func structural() *apiextensionsv1.JSONSchemaProps {
	str := apiextensionsv1.JSONSchemaProps{Type: "string"}
	return &apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
		"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"vpcRef":    {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"name": str}},
			"networks":  {Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"vpc": str}}}},
			"firewalls": {Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &str}},
			"cpus":      {Type: "integer"},
			"labels":    {Type: "object", AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{Allows: true, Schema: &str}},
			"extra":     {Type: "object", XPreserveUnknownFields: ptr.To(true)},
		}},
	}}
}

// preserving is the schema of the e2e fixtures: anything goes.
func preserving() *apiextensionsv1.JSONSchemaProps {
	return &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptr.To(true)}
}

func computeExport(s *apiextensionsv1.JSONSchemaProps) *ExportTypes {
	return &ExportTypes{Name: "compute.test.io", Resources: []ServedResource{{
		Group: "compute.test.io", Resource: "virtualmachines", Singular: "virtualmachine", Kind: "VirtualMachine",
		Versions: []ServedVersion{{Name: "v1", Served: true, Schema: s}, {Name: "v1alpha1", Served: false, Schema: s}},
	}}}
}

var networkExport = &ExportTypes{Name: "network.test.io", Resources: []ServedResource{
	{Group: "network.test.io", Resource: "vpcs", Singular: "vpc", Kind: "VPC", Versions: []ServedVersion{{Name: "v1", Served: true}}},
	{Group: "network.test.io", Resource: "subnets", Singular: "subnet", Kind: "Subnet", Versions: []ServedVersion{{Name: "v1", Served: true}}},
}}

// vmRule is the spec of a rule that is right against computeExport and
// networkExport; edit changes it.
func vmRule(edit func(*DependencyRuleSpec)) DependencyRuleSpec {
	s := DependencyRuleSpec{
		Dependent: Dependent{APIExportName: "compute.test.io", Group: "compute.test.io", Version: "v1", Resource: "virtualmachines", Kind: "VirtualMachine"},
		Dependencies: []Dependency{{APIExportRef: APIExportRef{Path: "root:network", Name: "network.test.io"},
			Group: "network.test.io", Version: "v1", Resource: "vpcs", FieldRef: FieldRef{Path: ".spec.vpcRef.name"}}},
	}
	if edit != nil {
		edit(&s)
	}
	return s
}

func TestCheckServed(t *testing.T) {
	tests := []struct {
		name   string
		rule   DependencyRuleSpec
		schema *apiextensionsv1.JSONSchemaProps
		// want is "" for no problem, else the reason and the message.
		reason, message string
	}{
		{name: "everything right", rule: vmRule(nil), schema: structural()},
		{name: "dependent version not served", rule: vmRule(func(r *DependencyRuleSpec) { r.Dependent.Version = "v1beta1" }), schema: structural(),
			reason: ReasonVersionNotServed, message: "spec.dependent.version: export compute.test.io serves virtualmachines in v1, not v1beta1"},
		{name: "a version in the schema but not served", rule: vmRule(func(r *DependencyRuleSpec) { r.Dependent.Version = "v1alpha1" }), schema: structural(),
			reason: ReasonVersionNotServed, message: "spec.dependent.version: export compute.test.io serves virtualmachines in v1, not v1alpha1"},
		{name: "singular resource", rule: vmRule(func(r *DependencyRuleSpec) { r.Dependent.Resource = "virtualmachine" }), schema: structural(),
			reason: ReasonResourceNotServed, message: "spec.dependent.resource: export compute.test.io serves no resource virtualmachine in compute.test.io: name the plural, virtualmachines"},
		{name: "resource unknown in the group", rule: vmRule(func(r *DependencyRuleSpec) { r.Dependent.Resource = "disks" }), schema: structural(),
			reason: ReasonResourceNotServed, message: "spec.dependent.resource: export compute.test.io serves no resource disks in compute.test.io; it serves virtualmachines"},
		{name: "wrong group", rule: vmRule(func(r *DependencyRuleSpec) { r.Dependent.Group = "compute.example.io" }), schema: structural(),
			reason: ReasonGroupNotServed, message: "spec.dependent.group: export compute.test.io serves virtualmachines in group compute.test.io, not compute.example.io"},
		{name: "wrong kind", rule: vmRule(func(r *DependencyRuleSpec) { r.Dependent.Kind = "VM" }), schema: structural(),
			reason: ReasonKindMismatch, message: "spec.dependent.kind: export compute.test.io serves virtualmachines as kind VirtualMachine, not VM"},
		{name: "dependency version not served", rule: vmRule(func(r *DependencyRuleSpec) { r.Dependencies[0].Version = "v2" }), schema: structural(),
			reason: ReasonVersionNotServed, message: "spec.dependencies[0].version: export network.test.io serves vpcs in v1, not v2"},
		{name: "dependency singular resource", rule: vmRule(func(r *DependencyRuleSpec) { r.Dependencies[0].Resource = "vpc" }), schema: structural(),
			reason: ReasonResourceNotServed, message: "spec.dependencies[0].resource: export network.test.io serves no resource vpc in network.test.io: name the plural, vpcs"},
		{name: "path absent from a structural schema", rule: vmRule(func(r *DependencyRuleSpec) { r.Dependencies[0].FieldRef.Path = ".spec.vpcRef.nme" }), schema: structural(),
			reason: ReasonFieldPathNotInSchema, message: "spec.dependencies[0].fieldRef.path: .spec.vpcRef.nme does not fit the schema of virtualmachines v1 served by export compute.test.io: .spec.vpcRef has no field nme"},
		{name: "path absent at the top", rule: vmRule(func(r *DependencyRuleSpec) { r.Dependencies[0].FieldRef.Path = ".vpc" }), schema: structural(),
			reason: ReasonFieldPathNotInSchema, message: "the object has no field vpc"},
		{name: "path into a scalar", rule: vmRule(func(r *DependencyRuleSpec) { r.Dependencies[0].FieldRef.Path = ".spec.cpus.name" }), schema: structural(),
			reason: ReasonFieldPathNotInSchema, message: ".spec.cpus is an integer, which has no field name"},
		{name: "[*] on an object", rule: vmRule(func(r *DependencyRuleSpec) { r.Dependencies[0].FieldRef.Path = ".spec.vpcRef[*].name" }), schema: structural(),
			reason: ReasonFieldPathNotInSchema, message: ".spec.vpcRef is an object, not a list"},
		{name: "path ends at an object", rule: vmRule(func(r *DependencyRuleSpec) { r.Dependencies[0].FieldRef.Path = ".spec.vpcRef" }), schema: structural(),
			reason: ReasonFieldPathNotString, message: ".spec.vpcRef is an object, not a string"},
		{name: "path ends at an integer", rule: vmRule(func(r *DependencyRuleSpec) { r.Dependencies[0].FieldRef.Path = ".spec.cpus" }), schema: structural(),
			reason: ReasonFieldPathNotString, message: ".spec.cpus is an integer, not a string"},
		{name: "list of objects", rule: vmRule(func(r *DependencyRuleSpec) { r.Dependencies[0].FieldRef.Path = ".spec.networks[*].vpc" }), schema: structural()},
		{name: "list of strings", rule: vmRule(func(r *DependencyRuleSpec) { r.Dependencies[0].FieldRef.Path = ".spec.firewalls[*]" }), schema: structural()},
		{name: "map values", rule: vmRule(func(r *DependencyRuleSpec) { r.Dependencies[0].FieldRef.Path = ".spec.labels.vpc" }), schema: structural()},
		{name: "under preserve-unknown-fields deeper down", rule: vmRule(func(r *DependencyRuleSpec) { r.Dependencies[0].FieldRef.Path = ".spec.extra.vpc.name" }), schema: structural()},
		{name: "metadata is the server's", rule: vmRule(func(r *DependencyRuleSpec) { r.Dependencies[0].FieldRef.Path = ".metadata.labels.vpc" }), schema: structural()},
		{name: "preserve-unknown-fields at the top", rule: vmRule(func(r *DependencyRuleSpec) { r.Dependencies[0].FieldRef.Path = ".spec.anything[*].at.all" }), schema: preserving()},
		{name: "no schema", rule: vmRule(func(r *DependencyRuleSpec) { r.Dependencies[0].FieldRef.Path = ".spec.anything" })},
		{name: "several problems, each named", rule: vmRule(func(r *DependencyRuleSpec) { r.Dependent.Kind = "VM"; r.Dependencies[0].Version = "v2" }), schema: structural(),
			reason: ReasonKindMismatch, message: "spec.dependent.kind: export compute.test.io serves virtualmachines as kind VirtualMachine, not VM; spec.dependencies[0].version: export network.test.io serves vpcs in v1, not v2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			problems := tt.rule.CheckServed(computeExport(tt.schema), []*ExportTypes{networkExport})
			if tt.reason == "" {
				if len(problems) > 0 {
					t.Fatalf("problems %v, want none", problems)
				}
				return
			}
			if len(problems) == 0 {
				t.Fatalf("no problem, want %s: %s", tt.reason, tt.message)
			}
			var msgs []string
			for _, p := range problems {
				msgs = append(msgs, p.String())
			}
			if got := strings.Join(msgs, "; "); problems[0].Reason != tt.reason || !strings.Contains(got, tt.message) {
				t.Fatalf("got %s: %s\nwant %s: ...%s...", problems[0].Reason, got, tt.reason, tt.message)
			}
		})
	}
}

// TestCheckServedSkipsUnreadExports: an export not read is not checked,
// and without the dependent's schema no path is.
func TestCheckServedSkipsUnreadExports(t *testing.T) {
	r := vmRule(func(r *DependencyRuleSpec) {
		r.Dependencies[0].Version = "v2"
		r.Dependencies[0].FieldRef.Path = ".nowhere"
	})
	if p := r.CheckServed(nil, []*ExportTypes{nil}); len(p) != 0 {
		t.Fatalf("problems %v, want none", p)
	}
}
