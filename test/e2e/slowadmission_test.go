package e2e

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/depctrl/terraform-provider-depctrl/test/check"
	"github.com/depctrl/terraform-provider-depctrl/test/env"
	"github.com/depctrl/terraform-provider-depctrl/test/fixtures"
)

// slowAdmission installs a validating webhook of the compute provider's own
// that holds for hold every create and update of a VirtualMachine that
// holds says to hold (given the new object's and, on an update, the old
// one's metadata), and waits until kcp calls it: depctrl's index webhook
// has let such a write through by then, and it is not stored until the
// hold is over. kcp applies the webhook configurations of the workspace
// that exports a type to writes of it in every consumer. probe is a VM in
// ws that holds says to hold; the webhook is removed when t ends.
func slowAdmission(ctx context.Context, t *testing.T, top *Topology, ws env.Workspace, hold time.Duration, holds func(obj, old metav1.ObjectMeta) bool, probe *unstructured.Unstructured) {
	t.Helper()
	slow := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var review admissionv1.AdmissionReview
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
			http.Error(w, "bad review", http.StatusBadRequest)
			return
		}
		var obj, old struct {
			Metadata metav1.ObjectMeta `json:"metadata"`
		}
		_ = json.Unmarshal(review.Request.Object.Raw, &obj)
		_ = json.Unmarshal(review.Request.OldObject.Raw, &old)
		if holds(obj.Metadata, old.Metadata) {
			time.Sleep(hold)
		}
		review.Response = &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: true}
		review.Request = nil
		_ = json.NewEncoder(w).Encode(review)
	}))
	t.Cleanup(slow.Close)
	ca := base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: slow.Certificate().Raw}))
	apply(ctx, t, top.admin(t, top.Compute.Path), fmt.Sprintf(`apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: e2e-slow
webhooks:
- name: slow.e2e.test.io
  clientConfig:
    url: %s/validate
    caBundle: %s
  rules:
  - apiGroups: [%q]
    apiVersions: ["*"]
    operations: ["CREATE", "UPDATE"]
    resources: [%q]
  failurePolicy: Fail
  sideEffects: None
  timeoutSeconds: 10
  admissionReviewVersions: ["v1"]
`, slow.URL, ca, fixtures.VirtualMachines.Group, fixtures.VirtualMachines.Resource))
	t.Cleanup(func() {
		_ = top.dynamicFor(t, top.Compute.Path).Resource(webhookGVR).Delete(context.Background(), "e2e-slow", metav1.DeleteOptions{})
	})

	vms := top.objects(t, ws, fixtures.VirtualMachines)
	check.Eventually(ctx, t, time.Minute, "kcp to call the slow webhook", func() error {
		start := time.Now()
		_ = vms.Delete(ctx, probe.GetName(), metav1.DeleteOptions{})
		if _, err := vms.Create(ctx, probe, metav1.CreateOptions{}); err != nil {
			return err
		}
		if took := time.Since(start); took < hold/2 {
			return fmt.Errorf("the create took %s", took)
		}
		return nil
	})
	_ = vms.Delete(ctx, probe.GetName(), metav1.DeleteOptions{})
}
