// Package admissiontest helps tests read what an admission endpoint
// (admission.NewHandler) answered.
package admissiontest

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"

	admissionv1 "k8s.io/api/admission/v1"
)

// RefusedAsBad reports whether the webhook refused a request as malformed:
// an AdmissionReview that denies it with code 400 (kcp then refuses the
// operation with that message), before any decision.
func RefusedAsBad(w *httptest.ResponseRecorder) bool {
	var out admissionv1.AdmissionReview
	if w.Code != http.StatusOK || json.Unmarshal(w.Body.Bytes(), &out) != nil || out.Response == nil {
		return false
	}
	return !out.Response.Allowed && out.Response.Result != nil && out.Response.Result.Code == http.StatusBadRequest
}
