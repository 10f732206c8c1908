package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Group is the API group of DependencyRules.
const Group = "dependencies.opendefense.cloud"

var (
	// GroupVersion is the group and version of this API.
	GroupVersion = schema.GroupVersion{Group: Group, Version: "v1alpha1"}
	// SchemeBuilder registers the types of this API. It is apimachinery's
	// builder rather than controller-runtime's so that importing the API
	// does not pull in controller-runtime.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme adds the types of this API to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(GroupVersion, &DependencyRule{}, &DependencyRuleList{})
	metav1.AddToGroupVersion(scheme, GroupVersion)
	return nil
}

// GroupVersionResource is the DependencyRule resource, as dynamic clients
// address it.
var GroupVersionResource = GroupVersion.WithResource(Resource)
