package v1alpha1

import (
	"encoding/json"
	"fmt"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The causes of a refused deletion: the webhook's denial of a protected
// object's DELETE carries, in status.details.causes, one cause for each
// dependent it names, so that tools can act on them; its message stays the
// sentence people read. The cause's type tells a stored dependent from one
// whose write is admitted but not stored yet; its message is the
// dependent, a DependentRef in JSON.
const (
	// CauseStoredDependent: a stored dependent references the object.
	CauseStoredDependent metav1.CauseType = Group + "/StoredDependent"
	// CausePendingDependent: a dependent's write that references the
	// object was admitted and is not stored (yet).
	CausePendingDependent metav1.CauseType = Group + "/PendingDependent"
	// CauseMoreDependents: more dependents reference the object than the
	// causes name; its message is how many more, or "unknown".
	CauseMoreDependents metav1.CauseType = Group + "/MoreDependents"
)

// Phrases of a refused deletion's message that tools read (the provider's
// destroy tells a deferred deletion from a refusal by them): the webhook
// writes them, and nothing else says them.
const (
	// StillReferencedPhrase begins the list of dependents a denial names.
	StillReferencedPhrase = "still referenced by"
	// DeletionDeferredPhrase: the refused deletion is deferred; the
	// webhook deletes the object once nothing references it.
	DeletionDeferredPhrase = "its deletion is deferred"
	// DeletedMeanwhilePhrase: the object was gone when the webhook looked
	// whether to defer its deletion (carried out in between, say).
	DeletedMeanwhilePhrase = "it has been deleted meanwhile"
)

// MoreCause is the cause that says more dependents than named reference
// the object: more of them, or an unknown number when more < 0.
func MoreCause(more int) metav1.StatusCause {
	msg := "unknown"
	if more >= 0 {
		msg = strconv.Itoa(more)
	}
	return metav1.StatusCause{Type: CauseMoreDependents, Message: msg}
}

// MoreOf reads how many dependents a MoreDependents cause says were left
// out (-1: an unknown number); ok is false for a cause of another type.
func MoreOf(c metav1.StatusCause) (more int, ok bool) {
	if c.Type != CauseMoreDependents {
		return 0, false
	}
	n, err := strconv.Atoi(c.Message)
	if err != nil || n < 0 {
		return -1, true
	}
	return n, true
}

// DependentRef names a dependent that a denial names.
type DependentRef struct {
	// Workspace is the dependent's logical cluster: the deleted object's.
	Workspace string `json:"workspace"`
	// Group, Version and Resource are the dependent's type as the rule
	// names it; Kind is its kind.
	Group    string `json:"group"`
	Version  string `json:"version"`
	Resource string `json:"resource"`
	Kind     string `json:"kind"`
	// Namespace is "" for a cluster-scoped dependent.
	Namespace string `json:"namespace,omitempty"`
	// Name is "" for a dependent being created without a name: then
	// GenerateName is its prefix.
	Name         string `json:"name"`
	GenerateName string `json:"generateName,omitempty"`
}

// DependentCause is the cause that names ref; pending: its write is not
// stored yet.
func DependentCause(ref DependentRef, pending bool) metav1.StatusCause {
	t := CauseStoredDependent
	if pending {
		t = CausePendingDependent
	}
	// A struct of strings always encodes.
	msg, _ := json.Marshal(ref)
	return metav1.StatusCause{Type: t, Message: string(msg)}
}

// DependentOf reads the dependent a cause names, and whether its write is
// not stored yet; ok is false for a cause of another type.
func DependentOf(c metav1.StatusCause) (ref DependentRef, pending, ok bool, err error) {
	switch c.Type {
	case CauseStoredDependent:
	case CausePendingDependent:
		pending = true
	default:
		return DependentRef{}, false, false, nil
	}
	if err := json.Unmarshal([]byte(c.Message), &ref); err != nil {
		return DependentRef{}, false, true, fmt.Errorf("reading the dependent of a %s cause: %w", c.Type, err)
	}
	return ref, pending, true, nil
}
