package decision

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/go-logr/logr"
	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/depctrl/terraform-provider-depctrl/runtime/admission"
	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
	"github.com/depctrl/terraform-provider-depctrl/test/admissiontest"
)

// FuzzServeHTTP feeds arbitrary bodies to the admission endpoint. Whatever
// arrives, the webhook must not panic and always answers with an
// AdmissionReview; one it refuses as a bad request (400) caused no dependent
// lookup; and a review that was decided answers for the request it was
// asked about, which has a UID.
func FuzzServeHTTP(f *testing.F) {
	valid := func(annotations map[string]string) []byte {
		review := admissionv1.AdmissionReview{Request: deleteRequest(vpcGVR, "vpc-1", annotations)}
		review.APIVersion, review.Kind = admissionv1.SchemeGroupVersion.String(), "AdmissionReview"
		b, _ := json.Marshal(review)
		return b
	}
	f.Add(valid(map[string]string{v1alpha1.ClusterAnnotation: "c1"}))
	f.Add(valid(map[string]string{v1alpha1.ClusterAnnotation: "c1", v1alpha1.SkipProtectionAnnotation: "true"}))
	f.Add(valid(nil))
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":null}`))
	f.Add([]byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","operation":"DELETE","oldObject":"x"}}`))
	f.Add([]byte(`[`))

	index := fakeProtections{vpcGVR: {{Rule: "c1/vm-rule", Dependent: vmGVR, DependentKind: "VirtualMachine"}}}
	ready := make(chan struct{})
	close(ready)
	f.Fuzz(func(t *testing.T, body []byte) {
		finder := &fakeFinder{blockers: map[schema.GroupVersionResource][]Blocker{vmGVR: {{Kind: "VirtualMachine", Name: "vm-1"}}}}
		v := NewValidator(index, finder, admission.When(ready), ValidatorOptions{}, logr.Discard())
		req := httptest.NewRequest(http.MethodPost, v1alpha1.ValidatePath, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		v.ServeHTTP(rec, req)

		if rec.Code != http.StatusOK {
			t.Fatalf("answered HTTP %d, want every answer in an AdmissionReview: %s", rec.Code, rec.Body)
		}
		var out admissionv1.AdmissionReview
		if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil || out.Response == nil {
			t.Fatalf("response is not an AdmissionReview (%v): %s", err, rec.Body)
		}
		if r := out.Response.Result; r != nil && r.Code == http.StatusInternalServerError {
			t.Fatalf("the webhook failed (a panic is answered with 500): %s", r.Message)
		}
		if admissiontest.RefusedAsBad(rec) {
			if n := finder.calls.Load(); n != 0 {
				t.Fatalf("a review refused as malformed caused %d dependent lookups", n)
			}
			return
		}
		if out.Response.UID == "" {
			t.Fatalf("a decided review answers no request UID: %+v", out.Response)
		}
	})
}
