package decision

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	"github.com/depctrl/terraform-provider-depctrl/runtime/admission"
	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
	"github.com/depctrl/terraform-provider-depctrl/runtime/settle"
)

type candidateLog []string

func (c *candidateLog) Created(cluster string, gvr schema.GroupVersionResource, namespace string) {
	*c = append(*c, cluster+" "+gvr.Resource+" "+namespace)
}

func (c *candidateLog) Deleted(cluster string, gvr schema.GroupVersionResource, namespace string) {
	*c = append(*c, cluster+" "+gvr.Resource+" "+namespace+" deleted")
}

// writeRequest is a create (old == nil) or update of a VPC whose objects
// carry labels.
func writeRequest(op admissionv1.Operation, user string, old, labels map[string]string) *admissionv1.AdmissionRequest {
	object := func(l map[string]string) runtime.RawExtension {
		raw, _ := json.Marshal(map[string]any{"metadata": map[string]any{"name": "v", "namespace": "default", "labels": l,
			"annotations": map[string]string{v1alpha1.ClusterAnnotation: "consumer-1"}}})
		return runtime.RawExtension{Raw: raw}
	}
	r := &admissionv1.AdmissionRequest{UID: "uid-1", Operation: op, Resource: metav1.GroupVersionResource(vpcGVR), Namespace: "default", Name: "v",
		Object: object(labels), UserInfo: authenticationv1.UserInfo{Username: user}}
	if op == admissionv1.Update {
		r.OldObject = object(old)
	}
	return r
}

// TestGuardSettled: nobody but the webhook may set the settled label or
// change its value, by create or update; anyone may remove it or leave it
// as it is. Creates are handed on as candidates for settling, except dry
// runs and refused ones.
func TestGuardSettled(t *testing.T) {
	settled := map[string]string{settle.SettledLabel: "s1"}
	other := map[string]string{settle.SettledLabel: "s2"}
	tests := []struct {
		name      string
		req       *admissionv1.AdmissionRequest
		allowed   bool
		candidate bool
	}{
		{"create without the label", writeRequest(admissionv1.Create, "alice", nil, nil), true, true},
		{"create with the label", writeRequest(admissionv1.Create, "alice", nil, settled), false, false},
		{"create with an empty label", writeRequest(admissionv1.Create, "alice", nil, map[string]string{settle.SettledLabel: ""}), false, false},
		{"the webhook's own create with the label", writeRequest(admissionv1.Create, "webhook", nil, settled), true, true},
		{"update that adds the label", writeRequest(admissionv1.Update, "alice", nil, settled), false, false},
		{"update that changes the label", writeRequest(admissionv1.Update, "alice", other, settled), false, false},
		{"update that keeps the label", writeRequest(admissionv1.Update, "alice", settled, settled), true, false},
		{"update that removes the label", writeRequest(admissionv1.Update, "alice", settled, nil), true, false},
		{"the webhook settling an object", writeRequest(admissionv1.Update, "webhook", nil, settled), true, false},
		{"a dry-run create", func() *admissionv1.AdmissionRequest {
			r := writeRequest(admissionv1.Create, "alice", nil, nil)
			r.DryRun = ptr.To(true)
			return r
		}(), true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var heard candidateLog
			v := NewValidator(fakeProtections{}, &fakeFinder{}, admission.When(closed()), ValidatorOptions{
				Self:       func(context.Context) (string, error) { return "webhook", nil },
				Candidates: &heard,
			}, logr.Discard())
			resp, _ := v.Decide(context.Background(), tt.req)
			if resp.Allowed != tt.allowed {
				t.Fatalf("allowed = %v, want %v (%+v)", resp.Allowed, tt.allowed, resp.Result)
			}
			if !tt.allowed && (resp.Result.Code != 403 || !strings.Contains(resp.Result.Message, "only the dependency webhook may set the label "+settle.SettledLabel)) {
				t.Errorf("refusal %d %q does not say why", resp.Result.Code, resp.Result.Message)
			}
			if got := len(heard) == 1 && heard[0] == "consumer-1 vpcs default"; got != tt.candidate {
				t.Errorf("candidates heard %v, want a candidate: %v", heard, tt.candidate)
			}
		})
	}
}

func closed() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}
