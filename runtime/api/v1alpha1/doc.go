// Package v1alpha1 is the DependencyRule API: which resources protect which
// others from deletion, across kcp workspaces.
//
// +kubebuilder:object:generate=true
// +groupName=dependencies.opendefense.cloud
package v1alpha1
