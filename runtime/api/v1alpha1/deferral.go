package v1alpha1

import (
	"encoding/json"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Deferred deletion: a deletion refused because dependents still reference
// the object is recorded on it, and the webhook deletes it, with the options
// of the refused request, once nothing references it.
//
// A client opts in with DeferDeletionAnnotation on the object or on its
// namespace, an API provider with spec.deferDeletion on a rule that
// protects it; the object's value wins, then its namespace's. Only the webhook writes the record
// (DeletionDeferredAnnotation and DeletionDeferredLabel): it would otherwise
// let anyone who may update an object have the webhook delete it. Removing
// the record cancels the deferred deletion; anyone who may update the object
// may do that.
const (
	// DeferDeletionAnnotation set to "true" on a protected object, or on
	// its namespace, asks that a deletion refused for its dependents be
	// deferred rather than only refused. "false" on the object opts it out
	// whatever its namespace says.
	DeferDeletionAnnotation = Group + "/defer-deletion"
	// DeletionDeferredAnnotation records a deferred deletion on the object
	// it is for, as a DeferredDeletion in JSON.
	DeletionDeferredAnnotation = Group + "/deletion-deferred"
	// DeletionDeferredLabel, "true", marks the objects that carry a
	// deferred deletion, so that the webhook finds them again after a
	// restart with a label selector.
	DeletionDeferredLabel = Group + "/deletion-deferred"
	// DeferredReason is the reason of the Events a deferred deletion
	// records: when it is deferred, and when it is carried out.
	DeferredReason = "DeletionDeferred"
	// ReplayedReason is the reason of the Event recorded when the webhook
	// deleted an object whose deletion was deferred.
	ReplayedReason = "DeferredDeletionReplayed"
)

// DeferredDeletion is the record of a refused deletion that the webhook
// carries out once nothing references the object: who asked, when, and
// with which options.
//
// +kubebuilder:object:generate=false
type DeferredDeletion struct {
	// User, Groups and Extra asked for the deletion: the user info of the
	// refused request, which the deletion is checked against again (a
	// SubjectAccessReview) when it is carried out.
	User   string              `json:"user"`
	Groups []string            `json:"groups,omitempty"`
	Extra  map[string][]string `json:"extra,omitempty"`
	// At is when the deletion was refused and deferred.
	At metav1.Time `json:"at"`
	// UID is the object's UID then: the deletion is carried out with it as
	// a precondition, so it never deletes another object of the same name.
	UID types.UID `json:"uid"`
	// PropagationPolicy is the refused request's, if it named one.
	PropagationPolicy *metav1.DeletionPropagation `json:"propagationPolicy,omitempty"`
	// Verb is "deletecollection" when the refused request deleted a
	// collection the object was in; empty for "delete". The access review
	// asks for it.
	Verb string `json:"verb,omitempty"`
}

// VerbOrDelete is the verb the user asked with.
func (d DeferredDeletion) VerbOrDelete() string {
	if d.Verb == "" {
		return "delete"
	}
	return d.Verb
}

// AuthorizingExtra keeps of a user's extra what kcp authorizes with (its
// own keys, authentication.kcp.io/…: the scopes of a service account from
// another workspace, say), and drops the rest (credential IDs, the pod a
// token was issued to): the record is readable by whoever may read the
// object.
func AuthorizingExtra(extra map[string][]string) map[string][]string {
	var out map[string][]string
	for k, v := range extra {
		if strings.HasPrefix(k, "authentication.kcp.io/") {
			if out == nil {
				out = map[string][]string{}
			}
			out[k] = append([]string(nil), v...)
		}
	}
	return out
}

// Encode renders the record as the DeletionDeferredAnnotation's value.
func (d DeferredDeletion) Encode() (string, error) {
	b, err := json.Marshal(d)
	if err != nil {
		return "", fmt.Errorf("encoding a deferred deletion: %w", err)
	}
	return string(b), nil
}

// ParseDeferredDeletion reads a DeletionDeferredAnnotation value. A record
// without a user, a time or a UID, or with a propagation policy the API
// server does not know, was not written by the webhook and is refused.
func ParseDeferredDeletion(value string) (DeferredDeletion, error) {
	var d DeferredDeletion
	if err := json.Unmarshal([]byte(value), &d); err != nil {
		return d, fmt.Errorf("the %s annotation is not a deferred deletion: %w", DeletionDeferredAnnotation, err)
	}
	if d.User == "" || d.At.IsZero() || d.UID == "" {
		return d, fmt.Errorf("the %s annotation lacks its user, time or UID", DeletionDeferredAnnotation)
	}
	if d.Verb != "" && d.Verb != "delete" && d.Verb != "deletecollection" {
		return d, fmt.Errorf("the %s annotation names the verb %q", DeletionDeferredAnnotation, d.Verb)
	}
	if p := d.PropagationPolicy; p != nil && !KnownPropagation(*p) {
		return d, fmt.Errorf("the %s annotation names the unknown propagation policy %q", DeletionDeferredAnnotation, *p)
	}
	return d, nil
}

// KnownPropagation reports whether p is a propagation policy the API server
// accepts.
func KnownPropagation(p metav1.DeletionPropagation) bool {
	switch p {
	case metav1.DeletePropagationOrphan, metav1.DeletePropagationBackground, metav1.DeletePropagationForeground:
		return true
	}
	return false
}

// DefersDeletion reports whether a refused deletion of an object with
// objectAnnotations, in a namespace with namespaceAnnotations, is deferred:
// the object's DeferDeletionAnnotation decides when it has one, else its
// namespace's, else ruleDefers (a rule that protects it sets
// spec.deferDeletion). Only "true" defers.
func DefersDeletion(objectAnnotations, namespaceAnnotations map[string]string, ruleDefers bool) bool {
	if v, ok := objectAnnotations[DeferDeletionAnnotation]; ok {
		return v == "true"
	}
	if v, ok := namespaceAnnotations[DeferDeletionAnnotation]; ok {
		return v == "true"
	}
	return ruleDefers
}

// DeferGuardCondition is the match condition of the entry that sends the
// webhook every create or update that writes a deferred deletion or its
// label, or changes either. Removing them is left alone: it cancels.
const DeferGuardCondition = "(has(object.metadata.annotations) && '" + DeletionDeferredAnnotation + "' in object.metadata.annotations && " +
	"(oldObject == null || !has(oldObject.metadata.annotations) || !('" + DeletionDeferredAnnotation + "' in oldObject.metadata.annotations) || " +
	"oldObject.metadata.annotations['" + DeletionDeferredAnnotation + "'] != object.metadata.annotations['" + DeletionDeferredAnnotation + "'])) || " +
	"(has(object.metadata.labels) && '" + DeletionDeferredLabel + "' in object.metadata.labels && " +
	"(oldObject == null || !has(oldObject.metadata.labels) || !('" + DeletionDeferredLabel + "' in oldObject.metadata.labels) || " +
	"oldObject.metadata.labels['" + DeletionDeferredLabel + "'] != object.metadata.labels['" + DeletionDeferredLabel + "']))"
