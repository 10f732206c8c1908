package webhook

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/go-logr/logr"
	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
)

// FuzzServeHTTP feeds arbitrary bodies to the admission endpoint. Whatever
// arrives, the webhook must not panic; a body that is not a well-formed
// AdmissionReview is rejected with 400 before any dependent is looked up;
// and a decided review always answers for the request it was asked about.
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

	index := fakeIndex{vpcGVR: {{Rule: "c1/vm-rule", Dependent: vmGVR, DependentKind: "VirtualMachine"}}}
	ready := make(chan struct{})
	close(ready)
	f.Fuzz(func(t *testing.T, body []byte) {
		finder := &fakeFinder{blockers: map[schema.GroupVersionResource][]Blocker{vmGVR: {{Kind: "VirtualMachine", Name: "vm-1"}}}}
		v := NewValidator(index, finder, ReadyWhen(ready), ValidatorOptions{}, logr.Discard())
		req := httptest.NewRequest(http.MethodPost, ValidatePath, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		v.ServeHTTP(rec, req)

		if _, err := decodeReview(httptest.NewRequest(http.MethodPost, ValidatePath, bytes.NewReader(body))); err != nil {
			if rec.Code != http.StatusBadRequest {
				t.Fatalf("malformed review (%v) answered %d, want 400", err, rec.Code)
			}
			if n := finder.calls.Load(); n != 0 {
				t.Fatalf("malformed review caused %d dependent lookups", n)
			}
			return
		}
		if rec.Code != http.StatusOK {
			t.Fatalf("well-formed review answered %d: %s", rec.Code, rec.Body)
		}
		var in, out admissionv1.AdmissionReview
		_ = json.Unmarshal(body, &in)
		if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
			t.Fatalf("response is not an AdmissionReview: %v", err)
		}
		if out.Response == nil || out.Response.UID != in.Request.UID {
			t.Fatalf("response does not answer request %q: %+v", in.Request.UID, out.Response)
		}
	})
}
