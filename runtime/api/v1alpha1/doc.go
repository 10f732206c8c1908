// Package v1alpha1 is the DependencyRule API: which resources protect which
// others from deletion, across kcp workspaces. Besides the types it holds
// what every party to a rule shares: the manifests that serve it (the CRD,
// the kcp APIResourceSchema and the APIExport, manifests.go and
// generate.go), the cycles rules can form (cycles.go), whether a rule
// names types its APIExports serve, at field paths their schemas have and
// their subresources do not write (CheckServed and the reasons of the
// TypesServed condition, served.go, schemapath.go, subresources.go), and
// the contract between the controller and the webhook (endpoints.go,
// indexconfig.go, intent.go), and the causes a denial names its blockers
// by (causes.go).
//
// +kubebuilder:object:generate=true
// +groupName=dependencies.opendefense.cloud
package v1alpha1
