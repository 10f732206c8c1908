package provider

import (
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
)

// TestAddServedDiagnostics: each problem of a TypesServed message lands on
// the attribute it names, a detail with "; " in it included.
func TestAddServedDiagnostics(t *testing.T) {
	tests := []struct {
		name    string
		message string
		want    map[string]string // attribute path to the detail reported
	}{
		{
			name:    "one field",
			message: "spec.dependent.version: export compute.test.io serves virtualmachines in v1, not v1beta1",
			want:    map[string]string{"dependent.version": "TypesServed VersionNotServed: dependent.version: export compute.test.io serves virtualmachines in v1, not v1beta1"},
		},
		{
			name:    "two fields, one detail with a semicolon",
			message: "spec.dependent.resource: export c serves no resource disks in c.io; it serves vms; spec.dependencies[1].fieldRef.path: .spec.x does not fit",
			want: map[string]string{
				"dependent.resource":           "TypesServed VersionNotServed: dependent.resource: export c serves no resource disks in c.io; it serves vms",
				"dependency[1].field_ref.path": "TypesServed VersionNotServed: dependency[1].field_ref.path: .spec.x does not fit",
			},
		},
		{
			name:    "no field named",
			message: "something else",
			want:    map[string]string{"": "TypesServed=False VersionNotServed: something else"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var diags diag.Diagnostics
			addServedDiagnostics(&metav1.Condition{Type: v1alpha1.ConditionTypesServed, Status: metav1.ConditionFalse, Reason: "VersionNotServed", Message: tt.message}, &diags)
			got := map[string]string{}
			for _, d := range diags {
				p := ""
				if wp, ok := d.(diag.DiagnosticWithPath); ok {
					p = wp.Path().String()
				}
				got[p] = d.Detail()
			}
			if len(got) != len(tt.want) {
				t.Fatalf("diagnostics %v, want %v", got, tt.want)
			}
			for p, detail := range tt.want {
				if got[p] != detail {
					t.Errorf("%q: %q, want %q", p, got[p], detail)
				}
			}
		})
	}
}

// TestServedSummary: a plan-time problem is headed by what is wrong: a type
// not served, or a path that a subresource writes, which names a type that
// is served.
func TestServedSummary(t *testing.T) {
	tests := []struct{ reason, want string }{
		{v1alpha1.ReasonVersionNotServed, notServedSummary},
		{v1alpha1.ReasonFieldPathNotInSchema, notServedSummary},
		{v1alpha1.ReasonFieldPathInSubresource, "DependencyRule references a field that a subresource writes"},
	}
	for _, tt := range tests {
		if got := servedSummary(tt.reason); got != tt.want {
			t.Errorf("servedSummary(%s) = %q, want %q", tt.reason, got, tt.want)
		}
	}
}
