// Package decision decides DELETE admission requests for protected objects:
// a deletion is refused while a dependent in the same consumer workspace
// still references the object under some DependencyRule.
//
// Validator, the validating admission endpoint, reads the current state for
// every decision and caches no dependents: the dependents the object's
// intents name, then those the reference index (package index) lists, then
// the intents of writes not stored yet. When it cannot tell, it refuses.
// It also guards what protection rests on: an update of a protected object
// may not drop a fresh intent, and only the webhook itself may set the
// settled label. FrontProxyFinder reads and writes through the kcp
// front-proxy for the validator, the index and the settler; Unreferenced
// proves objects unreferenced for the settler, and WorkspaceWalk finds the
// workspaces it sweeps; EventAuditor records each use of the
// skip-protection annotation. With deferred deletion on, a deletion refused
// for its dependents, of an object that opted in, is recorded on it, and
// Replayer deletes the object once nothing references it.
package decision

import (
	"context"
	"net/http"
	"time"

	"github.com/go-logr/logr"
	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/depctrl/terraform-provider-depctrl/runtime/admission"
	"github.com/depctrl/terraform-provider-depctrl/runtime/index"
	"github.com/depctrl/terraform-provider-depctrl/runtime/registry"
)

// DependentFinder looks up dependents in a consumer workspace.
type DependentFinder interface {
	// FindBlockers returns up to limit dependents of p in cluster that
	// reference the target object called name. namespace is the deleted
	// object's namespace ("" for a cluster-scoped object, meaning: look
	// everywhere).
	FindBlockers(ctx context.Context, cluster, namespace string, target schema.GroupResource, name string, p registry.Protection, limit int) ([]Blocker, int, error)
	// Terminating reports whether the logical cluster is being deleted.
	Terminating(ctx context.Context, cluster string) (bool, error)
	// Referencing reads the dependent of p called dependent in namespace:
	// whether it is stored, at which revision, and whether it references
	// the object called name (what index.Judge needs).
	Referencing(ctx context.Context, cluster string, p registry.Protection, namespace, dependent, name string) (index.Dependent, error)
	// ReferencedNames returns the names of the protected objects that the
	// dependents of p in cluster reference, read in one go. namespace is
	// as for FindBlockers.
	ReferencedNames(ctx context.Context, cluster, namespace string, p registry.Protection) (map[string]bool, error)
}

// ValidatorOptions tune the validator.
type ValidatorOptions struct {
	// RequestTimeout bounds the work for one request; keep it below the
	// webhook configuration's timeoutSeconds so a slow lookup ends in a
	// clear denial rather than an admission timeout.
	RequestTimeout time.Duration
	// MaxBlockersReported caps the dependents named in a denial's message.
	MaxBlockersReported int
	// MaxBlockersListed caps the dependents a dry run's denial lists as
	// its causes. A dry run asks what blocks a deletion (kubectl depctrl,
	// the depctrl_references data source), so it reads past the first
	// blocker the deletion needs; its message stays as a deletion's.
	MaxBlockersListed int
	// Auditor, when set, records every deletion the skip-protection
	// annotation let through.
	Auditor SkipAuditor
	// SkipProtectionGroups, when not empty, are the only groups whose
	// members may delete with the skip-protection annotation. For anyone
	// else the annotation is ignored and the delete is decided as usual.
	SkipProtectionGroups []string
	// IntentLifetime is how long an intent recorded on a protected object
	// counts as a write that may still be stored (index.DefaultLifetime).
	IntentLifetime time.Duration
	// Self tells the webhook's own user: only its updates of a protected
	// object may drop a fresh intent or settle it. Without it no update
	// may.
	Self func(ctx context.Context) (authenticationv1.UserInfo, error)
	// Candidates, when set, hears of every protected object created, and
	// of the places where protected objects are deleted, to settle them.
	Candidates Candidates
	// Deferral and Ledger, when both are set, turn deferred deletion on: a
	// deletion refused for its dependents, of an object that (or whose
	// namespace, or a rule over it) opted in, is recorded in Ledger and on
	// the object (deferDeletion), and Deferrals hears of it.
	Deferral  DeferralStore
	Ledger    DeferralLedger
	Deferrals Deferrals
}

// DefaultBlockersListed is how many dependents a dry run's denial lists
// at most: enough for a tool to draw what references an object, small
// enough that the response stays well below a megabyte.
const DefaultBlockersListed = 1000

// Validator decides admission requests.
type Validator struct {
	protections Protections
	finder      DependentFinder
	opts        ValidatorOptions
	log         logr.Logger
	rules       admission.Rules
	// hook reads and answers the AdmissionReviews.
	hook http.Handler
	// now is the clock; tests replace it.
	now func() time.Time
}

// NewValidator returns a validator that refuses a protected DELETE while
// rules says it does not know every rule that can matter to it.
func NewValidator(protections Protections, finder DependentFinder, rules admission.Rules, opts ValidatorOptions, log logr.Logger) *Validator {
	if opts.RequestTimeout == 0 {
		opts.RequestTimeout = 8 * time.Second
	}
	if opts.MaxBlockersReported == 0 {
		opts.MaxBlockersReported = 10
	}
	if opts.MaxBlockersListed == 0 {
		opts.MaxBlockersListed = DefaultBlockersListed
	}
	opts.MaxBlockersListed = max(opts.MaxBlockersListed, opts.MaxBlockersReported)
	if opts.IntentLifetime == 0 {
		opts.IntentLifetime = index.DefaultLifetime
	}
	v := &Validator{protections: protections, finder: finder, opts: opts, log: log, rules: rules, now: time.Now}
	v.hook = admission.NewHandler(log, v.Decide, observe)
	return v
}

// ServeHTTP implements the admission endpoint.
func (v *Validator) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	v.hook.ServeHTTP(w, r)
}

func observe(outcome string, start time.Time) {
	decisions.WithLabelValues(outcome).Inc()
	latency.WithLabelValues(outcome).Observe(time.Since(start).Seconds())
}

// Decide applies the protection policy to one request, dispatching by
// operation as controller-runtime's validators do: validateCreate and
// validateUpdate guard the writes of protected objects (write.go),
// validateDelete decides a DELETE (delete.go).
func (v *Validator) Decide(ctx context.Context, req *admissionv1.AdmissionRequest) (*admissionv1.AdmissionResponse, string) {
	switch req.Operation {
	case admissionv1.Create:
		return v.validateCreate(ctx, req)
	case admissionv1.Update:
		return v.validateUpdate(ctx, req)
	case admissionv1.Delete:
		return v.validateDelete(ctx, req)
	default:
		return admission.Allow("only CREATE, UPDATE and DELETE are checked"), outcomeAllowed
	}
}

// IsNotServed reports whether err means the consumer workspace does not
// serve the dependent's API: it has not bound it, so it has no dependents.
func IsNotServed(err error) bool {
	return apierrors.IsNotFound(err)
}
