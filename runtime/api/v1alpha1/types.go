package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Patterns shared by the schema and Validate.
const (
	// dns1123Label is a lowercase RFC 1123 label.
	dns1123Label = `[a-z0-9]([-a-z0-9]*[a-z0-9])?`
	// GroupPattern is an API group: lowercase DNS subdomain.
	GroupPattern = `^` + dns1123Label + `(\.` + dns1123Label + `)*$`
	// VersionPattern is an API version such as v1 or v1beta2.
	VersionPattern = `^v[0-9]+((alpha|beta)[0-9]+)?$`
	// ResourcePattern is a lowercase plural resource name.
	ResourcePattern = `^[a-z][a-z0-9]*$`
	// KindPattern is a CamelCase kind.
	KindPattern = `^[A-Z][A-Za-z0-9]*$`
	// ExportNamePattern is an APIExport name: lowercase DNS subdomain.
	ExportNamePattern = GroupPattern
	// workspaceName is a segment of a workspace path as kcp accepts it:
	// a label of at most 63 characters.
	workspaceName = `[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?`
	// WorkspacePathPattern is a kcp workspace path such as root:org:network,
	// or a logical cluster name.
	WorkspacePathPattern = `^` + workspaceName + `(:` + workspaceName + `)*$`
	// FieldPathPattern is a dot path into an object, where a segment may end
	// in [*] to look at every element of a list: .spec.vpcRef.name,
	// .spec.networks[*].vpcRef.name.
	FieldPathPattern = `^(\.[A-Za-z_][A-Za-z0-9_-]*(\[\*\])?)+$`
)

// DependencyRule says that objects of one type (the dependent) reference
// objects of other types (the dependencies) by name, so that a dependency
// may not be deleted while a dependent in the same consumer workspace still
// references it.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=deprule
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Dependent",type=string,JSONPath=`.spec.dependent.kind`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type DependencyRule struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   DependencyRuleSpec   `json:"spec"`
	Status DependencyRuleStatus `json:"status,omitempty"`
}

// DependencyRuleSpec names the dependent type and what it references.
type DependencyRuleSpec struct {
	// dependent is the type that holds references: the type listed when a
	// dependency is about to be deleted.
	// +required
	Dependent Dependent `json:"dependent"`

	// dependencies are the referenced (protected) types and where in the
	// dependent each reference lives.
	// +required
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	// +listType=atomic
	Dependencies []Dependency `json:"dependencies"`

	// deferDeletion, when true, defers a deletion of an object this rule
	// protects that is refused because dependents reference it: the
	// webhook records it on the object and deletes the object once nothing
	// references it (with --deferred-deletion). The object's, or its
	// namespace's, dependencies.opendefense.cloud/defer-deletion
	// annotation overrides it.
	// +optional
	DeferDeletion bool `json:"deferDeletion,omitempty"`
}

// Dependent is the type that references others.
type Dependent struct {
	// apiExportName is the APIExport, in the workspace of this rule, that
	// provides the dependent type.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	APIExportName string `json:"apiExportName"`

	// group is the dependent's API group.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Group string `json:"group"`

	// version is the dependent's API version.
	// +required
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^v[0-9]+((alpha|beta)[0-9]+)?$`
	Version string `json:"version"`

	// kind is the dependent's kind, as named in denials.
	// +required
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[A-Z][A-Za-z0-9]*$`
	Kind string `json:"kind"`

	// resource is the dependent's plural resource name, used to list it.
	// +required
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z][a-z0-9]*$`
	Resource string `json:"resource"`
}

// Dependency is one referenced type.
type Dependency struct {
	// apiExportRef names the APIExport that provides the protected type;
	// the webhook is installed in its workspace.
	// +required
	APIExportRef APIExportRef `json:"apiExportRef"`

	// group is the protected type's API group.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Group string `json:"group"`

	// version is the protected type's API version.
	// +required
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^v[0-9]+((alpha|beta)[0-9]+)?$`
	Version string `json:"version"`

	// resource is the protected type's plural resource name.
	// +required
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z][a-z0-9]*$`
	Resource string `json:"resource"`

	// fieldRef says where in a dependent the protected object's name is.
	// +required
	FieldRef FieldRef `json:"fieldRef"`
}

// APIExportRef names an APIExport by workspace path and name.
type APIExportRef struct {
	// path is the workspace of the APIExport, such as root:network or
	// root:org:team:network.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?(:[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)*$`
	Path string `json:"path"`

	// name is the APIExport's name.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Name string `json:"name"`
}

// FieldRef locates a reference inside a dependent.
type FieldRef struct {
	// path is a dot path to a string field, such as .spec.vpcRef.name. A
	// segment ending in [*] looks at every element of a list, as in
	// .spec.networks[*].vpcRef.name: any element naming the object counts.
	// +required
	// +kubebuilder:validation:MinLength=2
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:Pattern=`^(\.[A-Za-z_][A-Za-z0-9_-]*(\[\*\])?)+$`
	Path string `json:"path"`
}

// DependencyRuleStatus tells whether the rule is in force, and if not, why.
type DependencyRuleStatus struct {
	// observedGeneration is the generation the controller last acted on.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions: WorkspacesResolved, WebhookInstalled, Acyclic and Enforced,
	// summarized by Ready; and Indexed, which Ready does not wait for.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// indexEpoch identifies the MutatingWebhookConfiguration that labels
	// this rule's dependents with what they reference (the reference index):
	// its UID, set by the controller once it is installed, empty while there
	// is none. The webhook trusts index labels only when they were written
	// under the current epochs of every rule over the type, so labels left
	// from a configuration that was removed and recreated, during which
	// writes went unlabelled, are never taken for current ones.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	IndexEpoch string `json:"indexEpoch,omitempty"`
}

// DependencyRuleList is a list of DependencyRules.
//
// +kubebuilder:object:root=true
type DependencyRuleList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []DependencyRule `json:"items"`
}

// DependentGVR is the resource of the dependent type.
func (r *DependencyRule) DependentGVR() schema.GroupVersionResource {
	d := r.Spec.Dependent
	return schema.GroupVersionResource{Group: d.Group, Version: d.Version, Resource: d.Resource}
}

// GVR is the resource of the protected type.
func (d Dependency) GVR() schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: d.Group, Version: d.Version, Resource: d.Resource}
}
