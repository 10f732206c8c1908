package v1alpha1

// The paths at which the webhook serves its admission endpoints, and which
// the controller writes into the webhook configurations: deletions are
// decided at ValidatePath, dependents are indexed at MutatePath. Below
// either, a URL may name the workspaces whose rules its requests depend on
// (package scope).
const (
	ValidatePath = "/validate"
	MutatePath   = "/mutate"
)
