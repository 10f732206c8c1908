// Package blockers asks deletion protection what blocks the deletion of an
// object now: a DELETE with dryRun=All, which the deletion webhook decides
// as it would the deletion, without side effects, and whose denial lists
// every dependent in the way (up to a thousand) as its causes
// (v1alpha1.DependentOf). kubectl-depctrl and the depctrl_references data
// source read references through it alone.
package blockers

import (
	"context"
	"errors"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
)

// Verdict is what deletion protection decides of one deletion now.
type Verdict struct {
	Deletable bool `json:"deletable"`
	// Message is the denial's, for people.
	Message  string    `json:"message,omitempty"`
	Blockers []Blocker `json:"blockers,omitempty"`
	// More is how many more dependents block the deletion than Blockers
	// lists (-1: an unknown number); 0 when it lists them all.
	More int `json:"more,omitempty"`
}

// Blocker is a dependent that blocks the deletion.
type Blocker struct {
	v1alpha1.DependentRef
	// Pending: its write is admitted and not stored yet.
	Pending bool `json:"pending"`
}

// Ask deletes the object called name as a dry run and reads the answer:
// deletable, refused for the dependents its causes name, or an error when
// the answer is something else (the object is missing, the user may not
// delete it, protection cannot decide now).
func Ask(ctx context.Context, api dynamic.ResourceInterface, name string) (Verdict, error) {
	err := api.Delete(ctx, name, metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}})
	if err == nil {
		return Verdict{Deletable: true}, nil
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Details == nil {
		return Verdict{}, err
	}
	v := Verdict{Message: status.Status().Message}
	for _, c := range status.Status().Details.Causes {
		ref, pending, ok, cerr := v1alpha1.DependentOf(c)
		if cerr != nil {
			return Verdict{}, cerr
		}
		if ok {
			v.Blockers = append(v.Blockers, Blocker{DependentRef: ref, Pending: pending})
		}
		if more, ok := v1alpha1.MoreOf(c); ok {
			v.More = more
		}
	}
	if len(v.Blockers) == 0 {
		return Verdict{}, err
	}
	return v, nil
}
