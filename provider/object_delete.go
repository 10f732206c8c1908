package provider

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-log/tflog"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/depctrl/terraform-provider-depctrl/internal/blockers"
	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
)

// The destroy of a depctrl_object, and what the dependency webhook's
// answer to its DELETE means.

// deleteOutcome is what the answer to a DELETE means for destroy.
type deleteOutcome int

const (
	// deleteDone: deleted, being deleted, or gone already.
	deleteDone deleteOutcome = iota
	// deleteDeferred: refused because dependents still reference the
	// object, and deferred: the webhook deletes it once nothing does.
	deleteDeferred
	// deleteRefused: refused because dependents still reference the
	// object, and not deferred.
	deleteRefused
	// deleteFailed: anything else (RBAC, kcp unreachable, ...).
	deleteFailed
)

func (o deleteOutcome) String() string {
	return [...]string{"done", "deferred", "refused", "failed"}[o]
}

// classifyDelete says what the answer err to a DELETE means. A failed UID
// precondition (409) means the object of that name is another one: ours
// is gone.
func classifyDelete(err error) deleteOutcome {
	switch {
	case err == nil, apierrors.IsNotFound(err):
		return deleteDone
	case apierrors.IsConflict(err) && strings.Contains(statusMessage(err), "Precondition failed: UID"):
		return deleteDone
	case !apierrors.IsForbidden(err):
		return deleteFailed
	}
	// The dependency webhook's denials say what still references the
	// object, and whether its deletion is deferred; one deferred and
	// carried out while the webhook decided says the object is gone.
	msg := statusMessage(err)
	switch {
	case strings.Contains(msg, v1alpha1.DeletedMeanwhilePhrase):
		return deleteDone
	case strings.Contains(msg, v1alpha1.DeletionDeferredPhrase):
		return deleteDeferred
	case strings.Contains(msg, v1alpha1.StillReferencedPhrase):
		return deleteRefused
	}
	return deleteFailed
}

// deferralPollInterval is how often destroy looks whether the webhook has
// deleted an object whose deletion it deferred.
const deferralPollInterval = time.Second

func (r *objectResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	state, timeout, ok := getTimed[objectModel](ctx, req.State, timeouts.Value.Delete, defaultObjectDeleteTimeout, &resp.Diagnostics)
	if !ok {
		return
	}
	deadline := time.Now().Add(timeout)
	_, ref, err := parseManifest(state.Manifest.ValueString())
	if err != nil {
		resp.Diagnostics.AddError("Invalid manifest in state", fmt.Sprintf("the state's manifest does not name an object: %v", err))
		return
	}
	ws := state.WorkspacePath.ValueString()
	if firstMissing(ctx, r.conn, ws) != "" {
		return // and everything in it with it
	}
	res, ok := r.resourceFor(ctx, ws, ref, 0, &resp.Diagnostics)
	if !ok {
		return
	}
	uid := state.UID.ValueString()
	wait := state.WaitForDeletion.IsNull() || state.WaitForDeletion.ValueBool()

	tflog.Info(ctx, "deleting object", map[string]interface{}{"workspace": ws, "object": ref.String()})
	err = res.Delete(ctx, ref.Name, objectDeleteOptions(uid))
	if err != nil && workspaceGone(ctx, r.conn, ws, err) {
		return
	}
	outcome := classifyDelete(err)
	tflog.Debug(ctx, "deletion answered", map[string]interface{}{"object": ref.String(), "outcome": outcome.String()})
	switch outcome {
	case deleteDone:
		if !wait {
			return
		}
		err := waitUntil(ctx, time.Until(deadline), fmt.Sprintf("%s in %s to be deleted", ref, ws), func(ctx context.Context) (bool, string, error) {
			return objectGone(ctx, res, ref.Name, uid)
		})
		if err != nil {
			resp.Diagnostics.AddError("Object not deleted", err.Error())
		}
	case deleteDeferred:
		msg := statusMessage(err)
		if !wait {
			resp.Diagnostics.AddWarning("Deletion deferred",
				fmt.Sprintf("%s in %s is still referenced, so its deletion is deferred: the dependency webhook deletes it once nothing references it. "+
					"wait_for_deletion is false, so destroy does not wait for that. The webhook said: %s", ref, ws, msg))
			return
		}
		if err := waitDeferred(ctx, res, ref, uid, deadline, msg); err != nil {
			resp.Diagnostics.AddError("Deferred deletion not carried out", fmt.Sprintf("%s in %s: %v", ref, ws, err))
		}
	case deleteRefused:
		resp.Diagnostics.AddError("Deletion refused: object still referenced", refusedDetail(ref, ws, statusMessage(err)))
	default:
		resp.Diagnostics.Append(explainObject(ctx, r.conn, ws, "deleting "+ref.String(), err))
	}
}

// objectDeleteOptions deletes in the background, as kubectl does, and only
// the object of uid, when known: one of the same name created meanwhile is
// someone else's.
func objectDeleteOptions(uid string) metav1.DeleteOptions {
	policy := metav1.DeletePropagationBackground
	opts := metav1.DeleteOptions{PropagationPolicy: &policy}
	if uid != "" {
		u := k8stypes.UID(uid)
		opts.Preconditions = &metav1.Preconditions{UID: &u}
	}
	return opts
}

// refusedDetail explains a deletion refused for dependents and not
// deferred: the webhook's words, and the two ways to have destroy succeed.
func refusedDetail(ref objectRef, ws, msg string) string {
	return fmt.Sprintf("Deleting %s in %s was refused because other objects still reference it. The webhook said: %s\n\n"+
		"Either have Terraform delete those first (depends_on, or a reference to this resource, in the resources that manage them), "+
		"or have the deletion deferred, so that the dependency webhook deletes the object once nothing references it and destroy waits for that: "+
		"annotate the object, or its namespace, with %s: \"true\", or set defer_deletion = true on the depctrl_dependency_rule that protects it "+
		"(deferral also needs webhook.deferred_deletion on depctrl_runtime and deferred_deletion on every depctrl_shard).",
		ref, ws, msg, v1alpha1.DeferDeletionAnnotation)
}

// objectGone is a wait condition: done once the object called name is
// gone, or replaced by another of the same name (not uid).
func objectGone(ctx context.Context, res dynamic.ResourceInterface, name, uid string) (bool, string, error) {
	live, err := res.Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return true, "", nil
	case err != nil:
		return false, "", err
	case uid != "" && string(live.GetUID()) != uid:
		return true, "", nil
	case live.GetDeletionTimestamp() != nil:
		return false, fmt.Sprintf("being deleted, finalizers %v", live.GetFinalizers()), nil
	}
	return false, "still present", nil
}

// waitDeferred waits, polling every deferralPollInterval until deadline,
// until the webhook has deleted the object whose deletion it deferred
// (refusal is what it said). It fails early when the deferral is cancelled
// (its record removed from the object, which nothing deletes then), and at
// the deadline naming the dependents that still hold the object, as a
// dry-run deletion names them now.
func waitDeferred(ctx context.Context, res dynamic.ResourceInterface, ref objectRef, uid string, deadline time.Time, refusal string) error {
	ticker := time.NewTicker(deferralPollInterval)
	defer ticker.Stop()
	var lastErr error
	// The webhook records the deferral on the object before it answers,
	// and keeps the record until the object is gone: a record missing
	// from two reads running was removed, and nothing deletes the object.
	unrecorded := 0
	for {
		live, err := res.Get(ctx, ref.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return nil
		case err == nil && uid != "" && string(live.GetUID()) != uid:
			return nil // ours is gone; this one is someone else's
		case apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err):
			return fmt.Errorf("its deletion is deferred, but reading it while waiting failed: %w", err)
		case err != nil:
			lastErr = err // may be transient
		case live.GetDeletionTimestamp() == nil && live.GetAnnotations()[v1alpha1.DeletionDeferredAnnotation] == "":
			if unrecorded++; unrecorded >= 2 {
				return fmt.Errorf("its deletion was deferred (%s), but the deferral was cancelled before it was carried out: the annotation %s is gone "+
					"from the object, removed by hand, or by the webhook because the object (or its namespace, or its rules) no longer asks for "+
					"deferral or the user who asked may no longer delete it. Run destroy again to ask again", refusal, v1alpha1.DeletionDeferredAnnotation)
			}
		default:
			unrecorded, lastErr = 0, nil
		}
		if !time.Now().Before(deadline) {
			return deferredTimeout(ctx, res, ref, refusal, lastErr)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("its deletion is deferred, and destroy stopped waiting for it: %w", ctx.Err())
		case <-ticker.C:
		}
	}
}

// deferredTimeout says, at the delete timeout, what the deferred deletion
// still waits for: the dependents a dry-run deletion names now.
func deferredTimeout(ctx context.Context, res dynamic.ResourceInterface, ref objectRef, refusal string, lastErr error) error {
	askCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	msg := "its deletion is deferred: the dependency webhook deletes it once nothing references it, but it was not deleted within the delete timeout"
	v, err := blockers.Ask(askCtx, res, ref.Name)
	switch {
	case err != nil:
		msg += fmt.Sprintf("; it still waits for the dependents its refusal named (%s); asking what blocks it now failed: %v", refusal, err)
	case v.Deletable:
		msg += "; nothing references it any more, so the webhook deletes it shortly (if not, is it running with --deferred-deletion?)"
	default:
		msg += "; it still waits for " + describeBlockers(v)
	}
	if lastErr != nil {
		msg += fmt.Sprintf(" (the last read failed: %v)", lastErr)
	}
	return errors.New(msg + ". The deletion stays deferred: the object goes once those are gone, without Terraform. " +
		"Delete them, or raise timeouts.delete, and run destroy again")
}

// describeBlockers names the dependents of a verdict: VirtualMachine
// apps/vm-1 (in workspace 2x8ab), ...
func describeBlockers(v blockers.Verdict) string {
	names := make([]string, 0, len(v.Blockers))
	for _, b := range v.Blockers {
		n := b.Name
		if n == "" {
			n = b.GenerateName + "*"
		}
		if b.Namespace != "" {
			n = b.Namespace + "/" + n
		}
		s := b.Kind + " " + n
		if b.Workspace != "" {
			s += " (in workspace " + b.Workspace + ")"
		}
		if b.Pending {
			s += " (being written)"
		}
		names = append(names, s)
	}
	out := strings.Join(names, ", ")
	switch {
	case v.More > 0:
		out += fmt.Sprintf(" and %d more", v.More)
	case v.More < 0:
		out += " and more"
	}
	return out
}
