package decision

// The writes of protected objects: what a create or update writes is
// decoded once, then each guard that stands for its operation runs on it.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/depctrl/terraform-provider-depctrl/runtime/admission"
)

// validateCreate guards the create of a protected object: one that claims a
// settled label it may not is refused (guardWrite); another may be settled
// later (candidate).
func (v *Validator) validateCreate(ctx context.Context, req *admissionv1.AdmissionRequest) (*admissionv1.AdmissionResponse, string) {
	w, refused, outcome := v.guardWrite(ctx, req)
	if refused != nil {
		return refused, outcome
	}
	v.candidate(req, w)
	return admission.Allow(""), outcomeAllowed
}

// validateUpdate guards the update of a protected object: one that claims a
// settled label it may not (guardWrite), or drops a fresh intent
// (keepIntents), is refused.
func (v *Validator) validateUpdate(ctx context.Context, req *admissionv1.AdmissionRequest) (*admissionv1.AdmissionResponse, string) {
	w, refused, outcome := v.guardWrite(ctx, req)
	if refused != nil {
		return refused, outcome
	}
	return v.keepIntents(ctx, req, w)
}

// guardWrite decodes what a create or update writes, once for every guard
// (decodeWritten), and runs the guards that every write passes: only the
// webhook may set the settled label (guardSettled) or write a deferred
// deletion (guardDeferral). A response, when not
// nil, refuses the request, with its outcome.
func (v *Validator) guardWrite(ctx context.Context, req *admissionv1.AdmissionRequest) (written, *admissionv1.AdmissionResponse, string) {
	w, bad := decodeWritten(req)
	if bad != nil {
		return w, bad, admission.OutcomeBadRequest
	}
	if resp, outcome, refused := v.guardSettled(ctx, req, w); refused {
		return w, resp, outcome
	}
	if resp, outcome, refused := v.guardDeferral(ctx, req, w); refused {
		return w, resp, outcome
	}
	return w, nil, ""
}

// written is the metadata of the object a create or update writes, and of
// the one an update replaces (empty on a create), decoded once for every
// check of the request.
type written struct {
	obj, old metav1.ObjectMeta
}

// annotations are the annotations of both objects, for admission.ClusterOf.
func (w written) annotations() admission.Annotations {
	return admission.Annotations{Object: w.obj.Annotations, OldObject: w.old.Annotations}
}

// decodeWritten decodes the metadata of a create or update; a request it
// cannot decode is refused as bad.
func decodeWritten(req *admissionv1.AdmissionRequest) (written, *admissionv1.AdmissionResponse) {
	var w written
	var obj, old struct {
		Metadata metav1.ObjectMeta `json:"metadata"`
	}
	if err := json.Unmarshal(req.Object.Raw, &obj); err != nil {
		return w, admission.Deny(http.StatusBadRequest, metav1.StatusReasonBadRequest, fmt.Sprintf("cannot decode the object: %v", err))
	}
	if len(req.OldObject.Raw) > 0 {
		if err := json.Unmarshal(req.OldObject.Raw, &old); err != nil {
			return w, admission.Deny(http.StatusBadRequest, metav1.StatusReasonBadRequest, fmt.Sprintf("cannot decode the object being updated: %v", err))
		}
	}
	w.obj, w.old = obj.Metadata, old.Metadata
	return w, nil
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
