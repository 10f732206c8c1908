package webhook

import (
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/depctrl/terraform-provider-depctrl/runtime/admission"
	"github.com/depctrl/terraform-provider-depctrl/runtime/scope"
)

// RuleReadiness says whether the webhook knows every rule that can matter
// to a request. RuleSync is the webhook's; tests use ReadyWhen.
type RuleReadiness interface {
	// Decidable returns nil when every rule of the workspaces sc names
	// (of every workspace, when it names none) is registered, and
	// otherwise why not: the request is then refused, to be retried.
	Decidable(sc scope.Scope) error
}

// ReadyWhen is the readiness of a registry that knows every rule once
// initialized is closed, and none before.
func ReadyWhen(initialized <-chan struct{}) RuleReadiness { return readyWhen(initialized) }

type readyWhen <-chan struct{}

func (c readyWhen) Decidable(scope.Scope) error {
	select {
	case <-c:
		return nil
	default:
		return errNotInitialized
	}
}

// errNotInitialized: no shard's rules have been read yet.
var errNotInitialized = notInitializedError{}

type notInitializedError struct{}

func (notInitializedError) Error() string {
	return "dependency protection is not yet initialized, retry later"
}

// notDecidable is the refusal of a request the webhook cannot decide yet.
func notDecidable(err error) *admissionv1.AdmissionResponse {
	return admission.Deny(http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable, err.Error())
}
