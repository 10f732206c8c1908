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

	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
	"github.com/depctrl/terraform-provider-depctrl/runtime/process"
)

// preserving is the schema of the e2e fixtures: anything goes.
func preserving() *apiextensionsv1.JSONSchemaProps {
	return &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptr.To(true)}
}

// servedV1 is the resource group/resource of kind, served in v1 with
// schema s.
func servedV1(group, resource, kind string, s *apiextensionsv1.JSONSchemaProps) v1alpha1.ServedResource {
	return v1alpha1.ServedResource{Group: group, Resource: resource, Singular: strings.TrimSuffix(resource, "s"), Kind: kind,
		Versions: []v1alpha1.ServedVersion{{Name: "v1", Served: true, Schema: s}}}
}

// computeExport and networkExport serve the types of vmRule; s is the
// schema of virtualmachines.
func computeExport(s *apiextensionsv1.JSONSchemaProps) *v1alpha1.ExportTypes {
	return &v1alpha1.ExportTypes{Name: "compute.test.io", Resources: []v1alpha1.ServedResource{servedV1("compute.test.io", "virtualmachines", "VirtualMachine", s)}}
}

var networkExport = &v1alpha1.ExportTypes{Name: "network.test.io", Resources: []v1alpha1.ServedResource{servedV1("network.test.io", "vpcs", "VPC", nil)}}

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

func gvrV(group, version, resource string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: group, Version: version, Resource: resource}
}

func TestPlanServed(t *testing.T) {
	exports := func(missing string, fail error) ExportFunc {
		return func(_ context.Context, cluster, name string) (*v1alpha1.ExportTypes, error) {
			switch {
			case fail != nil:
				return nil, fail
			case name == missing:
				return nil, fmt.Errorf("%w: %s", process.ErrExportNotFound, name)
			case cluster == "comp" && name == "compute.test.io":
				return computeExport(preserving()), nil
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
			want: Outcome{Reason: v1alpha1.ReasonVersionNotServed, Message: "spec.dependent.version: export compute.test.io serves virtualmachines in v1, not v1beta1"}},
		{name: "dependent export missing", rule: vmRule(nil), clusters: []string{"net"}, bindings: both, exports: exports("compute.test.io", nil),
			want: Outcome{Reason: v1alpha1.ReasonExportNotFound, Message: "spec.dependent.apiExportName: this workspace has no APIExport compute.test.io"}},
		{name: "dependency export missing", rule: vmRule(nil), clusters: []string{"net"}, bindings: both, exports: exports("network.test.io", nil),
			want: Outcome{Reason: v1alpha1.ReasonExportNotFound, Message: "spec.dependencies[0].apiExportRef.name: workspace root:network has no APIExport network.test.io"}},
		{name: "claim not accepted", rule: vmRule(nil), clusters: []string{"net"}, bindings: map[string]Binding{"comp": {TypesClaimAccepted: true}, "net": {}}, exports: exports("", nil),
			want: Outcome{Unknown: true, Reason: ReasonTypesClaimNotAccepted, Message: "did not accept its read-only permission claims on apiexports and apiresourceschemas"}},
		{name: "a definite problem wins over what cannot be read", rule: vmRule(func(r *RuleInput) { r.DependentKind = "VM" }), clusters: []string{"net"},
			bindings: map[string]Binding{"comp": {TypesClaimAccepted: true}}, exports: exports("", nil),
			want: Outcome{Reason: v1alpha1.ReasonKindMismatch, Message: "spec.dependent.kind"}},
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
