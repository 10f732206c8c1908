package decision

import (
	"context"
	"fmt"

	admissionv1 "k8s.io/api/admission/v1"

	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
)

// guardDeferral refuses a create or update that writes a deferred deletion
// (v1alpha1.DeletionDeferredAnnotation) or its label, or changes either,
// unless the webhook itself makes it: the webhook deletes an object that
// carries the record once nothing references it, so a record anyone who may
// update the object could write would let them have it deleted without the
// right to delete it. Removing the record is allowed: it cancels the
// deferred deletion. v1alpha1.DeferGuardCondition selects the same writes for the
// guard entry; this check stands on its own should a configuration lack
// it.
func (v *Validator) guardDeferral(ctx context.Context, req *admissionv1.AdmissionRequest, w written) (*admissionv1.AdmissionResponse, string, bool) {
	if !writes(w.obj.Annotations, w.old.Annotations, v1alpha1.DeletionDeferredAnnotation) &&
		!writes(w.obj.Labels, w.old.Labels, v1alpha1.DeletionDeferredLabel) {
		return nil, "", false
	}
	return v.refuseUnlessSelf(ctx, req, w, "it writes a deferred deletion", fmt.Sprintf(
		"only the dependency webhook may write the annotation %s and the label %s, which have the object deleted once nothing references it; delete the object to ask for that, or remove both to cancel it",
		v1alpha1.DeletionDeferredAnnotation, v1alpha1.DeletionDeferredLabel))
}

// writes reports whether a write leaves key in now with another value than
// in before (or where before has none).
func writes(now, before map[string]string, key string) bool {
	value, set := now[key]
	was, had := before[key]
	return set && (!had || was != value)
}
