package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
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

// vmRule is a rule that is right against computeExport and networkExport;
// edit changes it.
func vmRule(edit func(*RuleInput)) RuleInput {
	r := RuleInput{Key: "comp/vm", Dependent: gvrV("compute.test.io", "v1", "virtualmachines"), DependentKind: "VirtualMachine", DependentExport: "compute.test.io",
		Dependencies: []DependencyInput{{ExportPath: "root:network", ExportName: "network.test.io", GVR: gvrV("network.test.io", "v1", "vpcs"), FieldPath: ".spec.vpcRef.name"}}}
	if edit != nil {
		edit(&r)
	}
	return r
}

func TestCheckServed(t *testing.T) {
	tests := []struct {
		name   string
		rule   RuleInput
		schema *apiextensionsv1.JSONSchemaProps
		// want is "" for no problem, else the reason and the message.
		reason, message string
	}{
		{name: "everything right", rule: vmRule(nil), schema: structural()},
		{name: "dependent version not served", rule: vmRule(func(r *RuleInput) { r.Dependent.Version = "v1beta1" }), schema: structural(),
			reason: ReasonVersionNotServed, message: "spec.dependent.version: export compute.test.io serves virtualmachines in v1, not v1beta1"},
		{name: "a version in the schema but not served", rule: vmRule(func(r *RuleInput) { r.Dependent.Version = "v1alpha1" }), schema: structural(),
			reason: ReasonVersionNotServed, message: "spec.dependent.version: export compute.test.io serves virtualmachines in v1, not v1alpha1"},
		{name: "singular resource", rule: vmRule(func(r *RuleInput) { r.Dependent.Resource = "virtualmachine" }), schema: structural(),
			reason: ReasonResourceNotServed, message: "spec.dependent.resource: export compute.test.io serves no resource virtualmachine in compute.test.io: name the plural, virtualmachines"},
		{name: "resource unknown in the group", rule: vmRule(func(r *RuleInput) { r.Dependent.Resource = "disks" }), schema: structural(),
			reason: ReasonResourceNotServed, message: "spec.dependent.resource: export compute.test.io serves no resource disks in compute.test.io; it serves virtualmachines"},
		{name: "wrong group", rule: vmRule(func(r *RuleInput) { r.Dependent.Group = "compute.example.io" }), schema: structural(),
			reason: ReasonGroupNotServed, message: "spec.dependent.group: export compute.test.io serves virtualmachines in group compute.test.io, not compute.example.io"},
		{name: "wrong kind", rule: vmRule(func(r *RuleInput) { r.DependentKind = "VM" }), schema: structural(),
			reason: ReasonKindMismatch, message: "spec.dependent.kind: export compute.test.io serves virtualmachines as kind VirtualMachine, not VM"},
		{name: "dependency version not served", rule: vmRule(func(r *RuleInput) { r.Dependencies[0].GVR.Version = "v2" }), schema: structural(),
			reason: ReasonVersionNotServed, message: "spec.dependencies[0].version: export network.test.io serves vpcs in v1, not v2"},
		{name: "dependency singular resource", rule: vmRule(func(r *RuleInput) { r.Dependencies[0].GVR.Resource = "vpc" }), schema: structural(),
			reason: ReasonResourceNotServed, message: "spec.dependencies[0].resource: export network.test.io serves no resource vpc in network.test.io: name the plural, vpcs"},
		{name: "path absent from a structural schema", rule: vmRule(func(r *RuleInput) { r.Dependencies[0].FieldPath = ".spec.vpcRef.nme" }), schema: structural(),
			reason: ReasonFieldPathNotInSchema, message: "spec.dependencies[0].fieldRef.path: .spec.vpcRef.nme does not fit the schema of virtualmachines v1 served by export compute.test.io: .spec.vpcRef has no field nme"},
		{name: "path absent at the top", rule: vmRule(func(r *RuleInput) { r.Dependencies[0].FieldPath = ".vpc" }), schema: structural(),
			reason: ReasonFieldPathNotInSchema, message: "the object has no field vpc"},
		{name: "path into a scalar", rule: vmRule(func(r *RuleInput) { r.Dependencies[0].FieldPath = ".spec.cpus.name" }), schema: structural(),
			reason: ReasonFieldPathNotInSchema, message: ".spec.cpus is an integer, which has no field name"},
		{name: "[*] on an object", rule: vmRule(func(r *RuleInput) { r.Dependencies[0].FieldPath = ".spec.vpcRef[*].name" }), schema: structural(),
			reason: ReasonFieldPathNotInSchema, message: ".spec.vpcRef is an object, not a list"},
		{name: "path ends at an object", rule: vmRule(func(r *RuleInput) { r.Dependencies[0].FieldPath = ".spec.vpcRef" }), schema: structural(),
			reason: ReasonFieldPathNotString, message: ".spec.vpcRef is an object, not a string"},
		{name: "path ends at an integer", rule: vmRule(func(r *RuleInput) { r.Dependencies[0].FieldPath = ".spec.cpus" }), schema: structural(),
			reason: ReasonFieldPathNotString, message: ".spec.cpus is an integer, not a string"},
		{name: "list of objects", rule: vmRule(func(r *RuleInput) { r.Dependencies[0].FieldPath = ".spec.networks[*].vpc" }), schema: structural()},
		{name: "list of strings", rule: vmRule(func(r *RuleInput) { r.Dependencies[0].FieldPath = ".spec.firewalls[*]" }), schema: structural()},
		{name: "map values", rule: vmRule(func(r *RuleInput) { r.Dependencies[0].FieldPath = ".spec.labels.vpc" }), schema: structural()},
		{name: "under preserve-unknown-fields deeper down", rule: vmRule(func(r *RuleInput) { r.Dependencies[0].FieldPath = ".spec.extra.vpc.name" }), schema: structural()},
		{name: "metadata is the server's", rule: vmRule(func(r *RuleInput) { r.Dependencies[0].FieldPath = ".metadata.labels.vpc" }), schema: structural()},
		{name: "preserve-unknown-fields at the top", rule: vmRule(func(r *RuleInput) { r.Dependencies[0].FieldPath = ".spec.anything[*].at.all" }), schema: preserving()},
		{name: "no schema", rule: vmRule(func(r *RuleInput) { r.Dependencies[0].FieldPath = ".spec.anything" })},
		{name: "several problems, each named", rule: vmRule(func(r *RuleInput) { r.DependentKind = "VM"; r.Dependencies[0].GVR.Version = "v2" }), schema: structural(),
			reason: ReasonKindMismatch, message: "spec.dependent.kind: export compute.test.io serves virtualmachines as kind VirtualMachine, not VM; spec.dependencies[0].version: export network.test.io serves vpcs in v1, not v2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			problems := CheckServed(tt.rule, computeExport(tt.schema), []*ExportTypes{networkExport})
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
	r := vmRule(func(r *RuleInput) { r.Dependencies[0].GVR.Version = "v2"; r.Dependencies[0].FieldPath = ".nowhere" })
	if p := CheckServed(r, nil, []*ExportTypes{nil}); len(p) != 0 {
		t.Fatalf("problems %v, want none", p)
	}
}

func gvrV(group, version, resource string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: group, Version: version, Resource: resource}
}

func TestPlanServed(t *testing.T) {
	exports := func(missing string, fail error) ExportFunc {
		return func(_ context.Context, cluster, name string) (*ExportTypes, error) {
			switch {
			case fail != nil:
				return nil, fail
			case name == missing:
				return nil, fmt.Errorf("%w: %s", ErrExportNotFound, name)
			case cluster == "comp" && name == "compute.test.io":
				return computeExport(structural()), nil
			case cluster == "net" && name == "network.test.io":
				return networkExport, nil
			}
			return nil, fmt.Errorf("unexpected read of %s in %s", name, cluster)
		}
	}
	both := map[string]Binding{"comp": {TypesClaimAccepted: true}, "net": {TypesClaimAccepted: true}}
	tests := []struct {
		name     string
		rule     RuleInput
		clusters []string
		bindings map[string]Binding
		exports  ExportFunc
		want     Outcome // Message: a part of it
	}{
		{name: "served", rule: vmRule(nil), clusters: []string{"net"}, bindings: both, exports: exports("", nil),
			want: Outcome{OK: true, Reason: ReasonTypesServed, Message: "fits the schema of virtualmachines.compute.test.io v1"}},
		{name: "wrong version", rule: vmRule(func(r *RuleInput) { r.Dependent.Version = "v1beta1" }), clusters: []string{"net"}, bindings: both, exports: exports("", nil),
			want: Outcome{Reason: ReasonVersionNotServed, Message: "spec.dependent.version: export compute.test.io serves virtualmachines in v1, not v1beta1"}},
		{name: "dependent export missing", rule: vmRule(nil), clusters: []string{"net"}, bindings: both, exports: exports("compute.test.io", nil),
			want: Outcome{Reason: ReasonExportNotFound, Message: "spec.dependent.apiExportName: this workspace has no APIExport compute.test.io"}},
		{name: "dependency export missing", rule: vmRule(nil), clusters: []string{"net"}, bindings: both, exports: exports("network.test.io", nil),
			want: Outcome{Reason: ReasonExportNotFound, Message: "spec.dependencies[0].apiExportRef.name: workspace root:network has no APIExport network.test.io"}},
		{name: "claim not accepted", rule: vmRule(nil), clusters: []string{"net"}, bindings: map[string]Binding{"comp": {TypesClaimAccepted: true}, "net": {}}, exports: exports("", nil),
			want: Outcome{Unknown: true, Reason: ReasonTypesClaimNotAccepted, Message: "did not accept its read-only permission claims on apiexports and apiresourceschemas"}},
		{name: "a definite problem wins over what cannot be read", rule: vmRule(func(r *RuleInput) { r.DependentKind = "VM" }), clusters: []string{"net"},
			bindings: map[string]Binding{"comp": {TypesClaimAccepted: true}}, exports: exports("", nil),
			want: Outcome{Reason: ReasonKindMismatch, Message: "spec.dependent.kind"}},
		{name: "dependency workspace unresolved", rule: vmRule(nil), clusters: []string{""}, bindings: both, exports: exports("", nil),
			want: Outcome{Unknown: true, Reason: "WorkspacesNotResolved", Message: "waiting until every dependency workspace resolves"}},
		{name: "read failure keeps the verdict", rule: vmRule(nil), clusters: []string{"net"}, bindings: both, exports: exports("", errors.New("connection refused")),
			want: Outcome{Unknown: true, Keep: true, Reason: ReasonExportReadFailed, Message: "connection refused; retrying"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := planServed(context.Background(), tt.rule, tt.clusters, tt.bindings, tt.exports)
			if got.OK != tt.want.OK || got.Unknown != tt.want.Unknown || got.Keep != tt.want.Keep || got.Reason != tt.want.Reason || !strings.Contains(got.Message, tt.want.Message) {
				t.Fatalf("got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}
