package decision

import (
	"context"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/depctrl/terraform-provider-depctrl/runtime/admission"
)

// validateWrite guards a create or update of a protected object: one that
// claims a settled label it may not, or drops an intent, is refused; a
// created one may be settled later (candidate).
func (v *Validator) validateWrite(ctx context.Context, req *admissionv1.AdmissionRequest) (*admissionv1.AdmissionResponse, string) {
	w, bad := decodeWritten(req)
	if bad != nil {
		return bad, admission.OutcomeBadRequest
	}
	if resp, outcome, refused := v.guardSettled(ctx, req, w); refused {
		return resp, outcome
	}
	if req.Operation == admissionv1.Update {
		return v.keepIntents(ctx, req, w)
	}
	v.candidate(req, w)
	return admission.Allow(""), outcomeAllowed
}

// candidate hands a created protected object's place to Candidates.
func (v *Validator) candidate(req *admissionv1.AdmissionRequest, w written) {
	if v.opts.Candidates == nil || admission.DryRun(req) {
		return
	}
	if cluster, err := admission.ClusterOf(req, w.annotations()); err == nil {
		v.opts.Candidates.Created(cluster, schema.GroupVersionResource(req.Resource), req.Namespace)
	}
}
