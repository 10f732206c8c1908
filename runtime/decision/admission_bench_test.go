package decision

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/depctrl/terraform-provider-depctrl/runtime/admission"
	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
	"github.com/depctrl/terraform-provider-depctrl/runtime/fieldpath"
	"github.com/depctrl/terraform-provider-depctrl/runtime/index"
)

// benchObject renders a protected VPC the size an API server sends: the
// kubectl last-applied annotation, managed fields and a spec of a few
// dozen fields, with the logical cluster annotation and extra annotations.
func benchObject(cluster string, extra map[string]string) runtime.RawExtension {
	spec := map[string]interface{}{}
	for i := range 40 {
		spec[fmt.Sprintf("field%02d", i)] = strings.Repeat("v", 16)
	}
	applied, _ := json.Marshal(map[string]interface{}{"apiVersion": "network.test.io/v1", "kind": "VPC", "spec": spec})
	annotations := map[string]string{v1alpha1.ClusterAnnotation: cluster, "kubectl.kubernetes.io/last-applied-configuration": string(applied)}
	for k, v := range extra {
		annotations[k] = v
	}
	managed := make([]interface{}, 3)
	for i := range managed {
		managed[i] = map[string]interface{}{"manager": "kubectl", "operation": "Update", "apiVersion": "network.test.io/v1", "time": "2026-01-01T00:00:00Z",
			"fieldsType": "FieldsV1", "fieldsV1": map[string]interface{}{"f:spec": spec}}
	}
	raw, _ := json.Marshal(map[string]interface{}{
		"apiVersion": "network.test.io/v1", "kind": "VPC",
		"metadata": map[string]interface{}{"name": "vpc-1", "namespace": "prod", "uid": "4b8f2c1e-0000-4000-8000-000000000001", "resourceVersion": "12345",
			"labels": map[string]string{"app": "net", "tier": "core"}, "annotations": annotations, "managedFields": managed},
		"spec": spec,
	})
	return runtime.RawExtension{Raw: raw}
}

// noCandidates hears of created objects and forgets them.
type noCandidates struct{}

func (noCandidates) Created(string, schema.GroupVersionResource, string) {}
func (noCandidates) Deleted(string, schema.GroupVersionResource, string) {}

// BenchmarkValidatorRequest is the validator's work for one admission
// request of a protected object, with its reads answered in memory: a
// create, an update that drops an intent (its dependent is stored), and a
// delete with no dependent.
func BenchmarkValidatorRequest(b *testing.B) {
	ready := make(chan struct{})
	close(ready)
	protections := fakeProtections{vpcGVR: {{Rule: "c1/vm-rule", Dependent: vmGVR, DependentKind: "VirtualMachine",
		Paths: []fieldpath.Path{fieldpath.MustParse(".spec.vpcRef.name")}}}}
	finder := &fakeFinder{dependents: map[string]string{"prod/vm-1": "vpc-1"}}
	v := NewValidator(protections, finder, admission.When(ready), ValidatorOptions{Candidates: noCandidates{}}, logr.Discard())
	held, _ := index.Encode(v1alpha1.Intent{Resource: "virtualmachines.compute.test.io", Version: "v1", Namespace: "prod", Name: "vm-1", At: metav1.NewTime(time.Now())})
	user := authenticationv1.UserInfo{Username: "alice"}
	requests := []struct {
		name string
		req  admissionv1.AdmissionRequest
	}{
		{"create", admissionv1.AdmissionRequest{Operation: admissionv1.Create, Object: benchObject("c1", nil)}},
		{"update", admissionv1.AdmissionRequest{Operation: admissionv1.Update, Object: benchObject("c1", nil),
			OldObject: benchObject("c1", map[string]string{index.Key("0123456789abcdef"): held})}},
		{"delete", admissionv1.AdmissionRequest{Operation: admissionv1.Delete, OldObject: benchObject("c1", nil)}},
	}
	for _, r := range requests {
		req := r.req
		req.UID, req.Resource, req.Namespace, req.Name, req.UserInfo = "u", metav1.GroupVersionResource(vpcGVR), "prod", "vpc-1", user
		b.Run(r.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if resp, outcome := v.Decide(context.Background(), &req); !resp.Allowed {
					b.Fatalf("%s: %v", outcome, resp.Result)
				}
			}
		})
	}
}
