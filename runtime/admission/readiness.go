package admission

import (
	"context"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Rules says whether the webhook knows every rule that can matter to a
// request. The webhook's RuleSync (package webhook) is one; tests use When.
type Rules interface {
	// Decidable returns nil when every rule of the workspaces sc names
	// (of every workspace, when it names none) is registered, at its
	// version as of a read no older than fresh allows, and otherwise why
	// not: the request is then refused, to be retried. It may wait, until
	// ctx ends, to find out.
	Decidable(ctx context.Context, sc Scope, fresh Freshness) error
}

// Freshness is how recent the read that confirms the rules current must
// be.
type Freshness int

const (
	// Recent: begun no longer than the registry's MaxAge before the
	// call. A write is decided on such rules: until objects are settled
	// under a changed rule, which takes --settle-after, a write decided
	// on the rules before the change costs no protection.
	Recent Freshness = iota
	// Now: begun after the call. A deletion is decided on such rules: no
	// rule change made before the request can be missed.
	Now
	// Registered: none; every rule that matters is registered, at any
	// version. What does not depend on the rules' content, such as the
	// withdrawal of the intents a deleted dependent recorded, which it
	// names itself, waits for nothing more.
	Registered
)

// When is the readiness of a registry that knows every rule once
// initialized is closed, and none before.
func When(initialized <-chan struct{}) Rules { return readyWhen(initialized) }

type readyWhen <-chan struct{}

func (c readyWhen) Decidable(context.Context, Scope, Freshness) error {
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
	return Deny(http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable, err.Error())
}
