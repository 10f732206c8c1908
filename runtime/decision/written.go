package decision

import (
	"encoding/json"
	"fmt"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/depctrl/terraform-provider-depctrl/runtime/admission"
)

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
