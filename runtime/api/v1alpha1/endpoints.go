package v1alpha1

import "time"

// The paths at which the webhook serves its admission endpoints, and which
// the controller writes into the webhook configurations: deletions are
// decided at ValidatePath, dependents are indexed at MutatePath. Below
// either, a URL may name the workspaces whose rules its requests depend on
// (admission.Scope).
const (
	ValidatePath = "/validate"
	MutatePath   = "/mutate"
)

// RuleReadMaxAge is how old the read that confirms a webhook replica's
// rules current may be when the replica decides a write of a dependent on
// them (a deletion waits for a read begun after it arrived). So a write a
// replica decides on a rule's previous generation is decided at most this
// long after the change; the controller reports a generation Ready only
// this long after it first saw it, so that every write admitted while a
// rule says Ready was decided on that generation.
const RuleReadMaxAge = 2 * time.Second
