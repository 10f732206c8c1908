package index

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/depctrl/terraform-provider-depctrl/runtime/admission"
	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
)

// foundTargets finds every referenced object, alive, and writes nothing.
type foundTargets struct{ annotations map[string]string }

func (f foundTargets) Target(context.Context, string, string, schema.GroupVersionResource, string) (TargetState, error) {
	return TargetState{Found: true, Annotations: f.annotations}, nil
}

func (f foundTargets) Annotate(context.Context, string, string, schema.GroupVersionResource, string, map[string]*string) (TargetState, error) {
	return TargetState{Found: true, Annotations: f.annotations}, nil
}

func (foundTargets) Withdraw(context.Context, string, string, schema.GroupVersionResource, string, string, string) error {
	return nil
}

// benchVM renders a VM that references vpc the size an API server sends:
// the kubectl last-applied annotation, managed fields and a spec of a few
// dozen fields, with the logical cluster annotation and extra metadata.
func benchVM(cluster, vpc string, labels, annotations map[string]string) runtime.RawExtension {
	spec := map[string]interface{}{"vpcRef": map[string]interface{}{"name": vpc}}
	for i := range 40 {
		spec[fmt.Sprintf("field%02d", i)] = strings.Repeat("v", 16)
	}
	applied, _ := json.Marshal(map[string]interface{}{"apiVersion": "compute.test.io/v1", "kind": "VirtualMachine", "spec": spec})
	a := map[string]string{v1alpha1.ClusterAnnotation: cluster, "kubectl.kubernetes.io/last-applied-configuration": string(applied)}
	for k, v := range annotations {
		a[k] = v
	}
	managed := make([]interface{}, 3)
	for i := range managed {
		managed[i] = map[string]interface{}{"manager": "kubectl", "operation": "Update", "apiVersion": "compute.test.io/v1", "time": "2026-01-01T00:00:00Z",
			"fieldsType": "FieldsV1", "fieldsV1": map[string]interface{}{"f:spec": spec}}
	}
	raw, _ := json.Marshal(map[string]interface{}{
		"apiVersion": "compute.test.io/v1", "kind": "VirtualMachine",
		"metadata": map[string]interface{}{"name": "vm", "namespace": "apps", "uid": "4b8f2c1e-0000-4000-8000-000000000002", "resourceVersion": "12345",
			"labels": labels, "annotations": a, "managedFields": managed},
		"spec": spec,
	})
	return runtime.RawExtension{Raw: raw}
}

// BenchmarkIndexRequest is the reference index's work for one admission
// request of a dependent, with the referenced objects answered in memory:
// a create that references an object, an update that moves the reference,
// and a delete that withdraws the intent its last write recorded.
func BenchmarkIndexRequest(b *testing.B) {
	ready := make(chan struct{})
	close(ready)
	now := time.Now()
	mine, _ := Encode(v1alpha1.Intent{Resource: "virtualmachines.compute.test.io", Version: "v1", Namespace: "apps", Name: "vm", At: metav1.NewTime(now)})
	ix := NewIndexer(schemaSource(vmIndexSchema), admission.When(ready), logr.Discard())
	ix.Targets = foundTargets{annotations: map[string]string{Key("t1"): mine}}
	recorded := map[string]string{v1alpha1.IntentTargetsAnnotation: `[{"group":"network.test.io","version":"v1","resource":"vpcs","name":"vpc-a"}]`}
	requests := []struct {
		name string
		req  admissionv1.AdmissionRequest
	}{
		{"create", admissionv1.AdmissionRequest{Operation: admissionv1.Create, Object: benchVM("c1", "vpc-a", nil, nil)}},
		{"update", admissionv1.AdmissionRequest{Operation: admissionv1.Update, Object: benchVM("c1", "vpc-b", nil, nil),
			OldObject: benchVM("c1", "vpc-a", nil, nil)}},
		{"delete", admissionv1.AdmissionRequest{Operation: admissionv1.Delete,
			OldObject: benchVM("c1", "vpc-a", map[string]string{v1alpha1.IntentLabel: LabelValue("t1", now)}, recorded)}},
	}
	for _, r := range requests {
		req := r.req
		req.UID, req.Resource, req.Namespace, req.Name = "u", metav1.GroupVersionResource(vmGVR), "apps", "vm"
		b.Run(r.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if resp, outcome := ix.Decide(context.Background(), &req); !resp.Allowed {
					b.Fatalf("%s: %v", outcome, resp.Result)
				}
			}
		})
	}
}
