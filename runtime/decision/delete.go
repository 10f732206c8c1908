package decision

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/depctrl/terraform-provider-depctrl/runtime/admission"
	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
	"github.com/depctrl/terraform-provider-depctrl/runtime/registry"
)

// validateDelete decides the DELETE of a protected object. Its steps run in
// the order they stand here, each written beside its concept:
//
//   - whether the webhook knows every rule that can matter (admission.Rules);
//   - the deletion, decoded and checked at the trust boundary
//     (admission.DeletionOf);
//   - the skip-protection annotation and its audit (skipProtection);
//   - the dependents the object's intents name that are stored and still
//     reference it (recordedBlockers);
//   - the stored dependents of each protecting type (findBlockers);
//   - the writes admitted but not stored yet (pendingBlockers);
//   - whether the workspace is being deleted (Terminating), then the
//     denial, which names the blockers (denialMessage), and the deferral
//     of the deletion when the object asks for it (deferDeletion).
//
// A blocker found, or a lookup that failed, refuses the deletion, unless
// the workspace is being deleted.
func (v *Validator) validateDelete(ctx context.Context, req *admissionv1.AdmissionRequest) (*admissionv1.AdmissionResponse, string) {
	if err := v.rules.Decidable(ctx, admission.ScopeOf(ctx), admission.Now); err != nil {
		return admission.NotDecidable(err), admission.OutcomeNotInitialized
	}

	d, err := admission.DeletionOf(req)
	if err != nil {
		v.log.Info("cannot decide", "resource", d.Resource.String(), "error", err.Error())
		return admission.Deny(http.StatusBadRequest, metav1.StatusReasonBadRequest, err.Error()), admission.OutcomeBadRequest
	}
	log := v.log.WithValues("resource", d.Resource.String(), "cluster", d.Cluster, "namespace", d.Namespace, "name", d.Name, "user", d.User, "dryRun", d.DryRun)

	allowed, skipIgnored := v.skipProtection(ctx, d, log)
	if allowed != nil {
		return allowed, outcomeSkipped
	}

	protections := v.protections.Protections(d.Resource)
	if len(protections) == 0 {
		return admission.Allow(""), outcomeAllowed
	}
	if v.opts.Candidates != nil && !d.DryRun {
		// The rest of the namespace may be settled before it follows.
		v.opts.Candidates.Deleted(d.Cluster, d.Resource, d.Namespace)
	}

	ctx, cancel := context.WithTimeout(ctx, v.opts.RequestTimeout)
	defer cancel()
	if d.DryRun {
		ctx = admission.WithoutSideEffects(ctx)
	}
	// The dependents the object's intents name come first: one of them
	// still referencing it decides a denial without reading the others.
	var more int
	blockers := v.recordedBlockers(ctx, d.Cluster, d.Name, protections, d.Meta.Annotations)
	switch {
	case d.DryRun:
		blockers, more, err = v.listBlockers(ctx, d, protections, blockers)
		if err == nil && len(blockers) == 0 {
			return admission.Allow(""), outcomeAllowed
		}
	case len(blockers) == 0:
		blockers, more, err = v.findBlockers(ctx, d.Cluster, d.Namespace, d.Resource.GroupResource(), d.Name, protections, v.opts.MaxBlockersReported)
	}
	if err == nil && len(blockers) == 0 {
		// None stored: a write admitted but not stored yet shows only as
		// the intent it recorded on this very revision of the object.
		blockers, err = v.pendingBlockers(ctx, d.Cluster, d.Name, protections, d.Meta.Annotations, v.opts.MaxBlockersReported)
		if err == nil && len(blockers) == 0 {
			return admission.Allow(""), outcomeAllowed
		}
	}
	// A workspace that is being deleted must be able to finish: its
	// contents go away together, whatever references what. This holds
	// also when the dependents could not be read (a narrowed read grant, a
	// type whose binding is going away): only the workspace's own state
	// decides, so its teardown never waits on reads that fail.
	if terminating, terr := v.finder.Terminating(ctx, d.Cluster); terr == nil && terminating {
		log.Info("deletion allowed: the workspace is being deleted")
		return admission.Allow("the workspace is being deleted"), outcomeAllowed
	}
	if err != nil {
		log.Error(err, "looking up dependents failed")
		return admission.Deny(http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable,
			fmt.Sprintf("cannot delete %s: checking for dependents failed, so protection refuses the deletion: %v", d, err)), admission.OutcomeError
	}
	log.Info("deletion denied", "blockers", len(blockers)+more)
	// A cluster-scoped object may be referenced from several namespaces:
	// then the denial says which namespace each dependent is in.
	named, unnamed := blockers, more
	if n := v.opts.MaxBlockersReported; len(named) > n {
		named = named[:n]
		if unnamed >= 0 {
			unnamed += len(blockers) - n
		}
	}
	msg := denialMessage(d.String(), named, unnamed, d.Namespace == "")
	if skipIgnored {
		msg += fmt.Sprintf(" (the %s annotation is ignored: only members of %s may use it)", v1alpha1.SkipProtectionAnnotation, strings.Join(v.opts.SkipProtectionGroups, ", "))
	}
	msg += v.deferDeletion(ctx, d, protections, log)
	denial := admission.Deny(http.StatusForbidden, metav1.StatusReasonForbidden, msg)
	denial.Result.Details = denialDetails(d, blockers, more)
	return denial, outcomeDenied
}

// listBlockers is what a dry run reads instead of stopping at the first
// blocker: it asks what blocks, not whether. It adds to recorded (what the
// object's intents name) every stored dependent and every write on its way,
// up to MaxBlockersListed, with more counting those beyond (< 0: unknown).
// A lookup that fails leaves the list incomplete (more < 0) when something
// was found, and fails the dry run as it would the deletion otherwise.
func (v *Validator) listBlockers(ctx context.Context, d admission.Deletion, protections []registry.Protection, recorded []Blocker) ([]Blocker, int, error) {
	limit := v.opts.MaxBlockersListed
	found, more, err := v.findBlockers(ctx, d.Cluster, d.Namespace, d.Resource.GroupResource(), d.Name, protections, limit)
	// What the intents name is stored: among what the lookup counted.
	blockers, more := union(found, more, recorded, true, limit)
	pending, perr := v.pendingBlockers(ctx, d.Cluster, d.Name, protections, d.Meta.Annotations, limit)
	blockers, more = union(blockers, more, pending, false, limit)
	if err = errors.Join(err, perr); err != nil && len(blockers) > 0 {
		return blockers, -1, nil
	}
	return blockers, more, err
}
