// Package readiness tells whether the webhook knows every rule that can
// matter to an admission request. Both admission endpoints (package decision
// and package index) refuse a request, to be retried, while it does not: a
// decision or an index label computed without a rule would be wrong.
package readiness

import (
	"context"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/depctrl/terraform-provider-depctrl/runtime/admission"
	"github.com/depctrl/terraform-provider-depctrl/runtime/scope"
)

// Rules says whether the webhook knows every rule that can matter to a
// request. The webhook's RuleSync (package webhook) is one; tests use When.
type Rules interface {
	// Decidable returns nil when every rule of the workspaces sc names
	// (of every workspace, when it names none) is registered, at its
	// current version, and otherwise why not: the request is then
	// refused, to be retried. It may wait, until ctx ends, to find out.
	Decidable(ctx context.Context, sc scope.Scope) error
}

// When is the readiness of a registry that knows every rule once
// initialized is closed, and none before.
func When(initialized <-chan struct{}) Rules { return readyWhen(initialized) }

type readyWhen <-chan struct{}

func (c readyWhen) Decidable(context.Context, scope.Scope) error {
	select {
	case <-c:
		return nil
	default:
		return ErrNotInitialized
	}
}

// ErrNotInitialized: no shard's rules have been read yet.
var ErrNotInitialized = notInitializedError{}

type notInitializedError struct{}

func (notInitializedError) Error() string {
	return "dependency protection is not yet initialized, retry later"
}

// NotDecidable is the refusal of a request the webhook cannot decide yet.
func NotDecidable(err error) *admissionv1.AdmissionResponse {
	return admission.Deny(http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable, err.Error())
}
