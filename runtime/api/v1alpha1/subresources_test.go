package v1alpha1

import (
	"strings"
	"testing"

	apisv1alpha1 "github.com/kcp-dev/sdk/apis/apis/v1alpha1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
)

// TestCheckServedSubresources: a field path in what a subresource of the
// dependent type writes, in any version the export serves, is refused and
// named with the subresource; the same path on a type without that
// subresource, or one only an unserved version has, is fine. The export is
// read from APIResourceSchemas as kcp serves them, so that the check sees
// what the controller reads.
func TestCheckServedSubresources(t *testing.T) {
	status := apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}}
	scale := apiextensionsv1.CustomResourceSubresources{Scale: &apiextensionsv1.CustomResourceSubresourceScale{
		SpecReplicasPath: ".spec.replicas", StatusReplicasPath: ".status.replicas", LabelSelectorPath: ptr.To(".status.selector")}}
	both := apiextensionsv1.CustomResourceSubresources{Status: status.Status, Scale: scale.Scale}
	// v is a version of virtualmachines whose schema keeps any field, so
	// that only the subresources can refuse a path.
	v := func(name string, served bool, sub apiextensionsv1.CustomResourceSubresources) apisv1alpha1.APIResourceVersion {
		return apisv1alpha1.APIResourceVersion{Name: name, Served: served, Storage: name == "v1", Subresources: sub,
			Schema: runtime.RawExtension{Raw: []byte(`{"type":"object","x-kubernetes-preserve-unknown-fields":true}`)}}
	}
	const inStatus = "spec.dependencies[0].fieldRef.path: .status.vpcRef.name lies in .status, which virtualmachines v1 (export compute.test.io) writes through its status subresource: no reference index webhook sees such a write"
	tests := []struct {
		name     string
		path     string
		versions []apisv1alpha1.APIResourceVersion
		// message is a part of the problem's message, "" for no problem.
		message string
	}{
		{name: "status with a status subresource", path: ".status.vpcRef.name", versions: []apisv1alpha1.APIResourceVersion{v("v1", true, status)},
			message: inStatus},
		{name: "status without a status subresource", path: ".status.vpcRef.name", versions: []apisv1alpha1.APIResourceVersion{v("v1", true, apiextensionsv1.CustomResourceSubresources{})}},
		{name: "a list in status", path: ".status.networks[*].vpc", versions: []apisv1alpha1.APIResourceVersion{v("v1", true, status)},
			message: ".status.networks[*].vpc lies in .status, which virtualmachines v1 (export compute.test.io) writes through its status subresource"},
		{name: "spec beside a status subresource", path: ".spec.vpcRef.name", versions: []apisv1alpha1.APIResourceVersion{v("v1", true, both)}},
		{name: "a field named like status", path: ".statusRef.name", versions: []apisv1alpha1.APIResourceVersion{v("v1", true, status)}},
		{name: "metadata beside a status subresource", path: ".metadata.labels.vpc", versions: []apisv1alpha1.APIResourceVersion{v("v1", true, both)}},
		{name: "the subresource in another served version", path: ".status.vpcRef.name",
			versions: []apisv1alpha1.APIResourceVersion{v("v1", true, apiextensionsv1.CustomResourceSubresources{}), v("v2", true, status)},
			message:  "lies in .status, which virtualmachines v2 (export compute.test.io) writes through its status subresource"},
		{name: "the subresource only in a version not served", path: ".status.vpcRef.name",
			versions: []apisv1alpha1.APIResourceVersion{v("v1", true, apiextensionsv1.CustomResourceSubresources{}), v("v2", false, status)}},
		{name: "the scale subresource's specReplicasPath", path: ".spec.replicas", versions: []apisv1alpha1.APIResourceVersion{v("v1", true, scale)},
			message: "spec.dependencies[0].fieldRef.path: .spec.replicas lies in .spec.replicas, which virtualmachines v1 (export compute.test.io) writes through its scale subresource"},
		{name: "below the specReplicasPath", path: ".spec.replicas[*].name", versions: []apisv1alpha1.APIResourceVersion{v("v1", true, scale)},
			message: "lies in .spec.replicas, which virtualmachines v1 (export compute.test.io) writes through its scale subresource"},
		{name: "beside the specReplicasPath", path: ".spec.replicasFrom.name", versions: []apisv1alpha1.APIResourceVersion{v("v1", true, scale)}},
		// The scale subresource reads its status paths; only writes of
		// the object itself set them when there is no status subresource.
		{name: "the scale subresource's labelSelectorPath", path: ".status.selector", versions: []apisv1alpha1.APIResourceVersion{v("v1", true, scale)}},
		{name: "status with both subresources", path: ".status.selector", versions: []apisv1alpha1.APIResourceVersion{v("v1", true, both)},
			message: ".status.selector lies in .status, which virtualmachines v1 (export compute.test.io) writes through its status subresource"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := ServedResourceOf(&apisv1alpha1.APIResourceSchema{Spec: apisv1alpha1.APIResourceSchemaSpec{
				Group: "compute.test.io", Scope: apiextensionsv1.NamespaceScoped, Versions: tt.versions,
				Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "virtualmachines", Singular: "virtualmachine", Kind: "VirtualMachine"},
			}})
			if err != nil {
				t.Fatal(err)
			}
			rule := vmRule(func(r *DependencyRuleSpec) { r.Dependencies[0].FieldRef.Path = tt.path })
			problems := rule.CheckServed(&ExportTypes{Name: "compute.test.io", Resources: []ServedResource{res}}, []*ExportTypes{networkExport})
			if tt.message == "" {
				if len(problems) > 0 {
					t.Fatalf("problems %v, want none", problems)
				}
				return
			}
			if len(problems) != 1 || problems[0].Reason != ReasonFieldPathInSubresource || !strings.Contains(problems[0].String(), tt.message) {
				t.Fatalf("problems %v\nwant one, %s: ...%s...", problems, ReasonFieldPathInSubresource, tt.message)
			}
		})
	}
}
