package trust

import (
	"encoding/json"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
	"github.com/depctrl/terraform-provider-depctrl/test/check"
)

func inCluster(cluster string) runtime.RawExtension {
	raw, _ := json.Marshal(map[string]any{"metadata": map[string]any{"name": "x", "annotations": map[string]string{v1alpha1.ClusterAnnotation: cluster}}})
	return runtime.RawExtension{Raw: raw}
}

// TestClusterOf: the logical cluster is read from the object kcp wrote, and
// a value the client wrote on an update never counts.
func TestClusterOf(t *testing.T) {
	tests := []struct {
		name    string
		req     admissionv1.AdmissionRequest
		want    string
		wantErr string
	}{
		{name: "a create: the created object, which kcp annotated",
			req: admissionv1.AdmissionRequest{Operation: admissionv1.Create, Object: inCluster("2x9k4abc")}, want: "2x9k4abc"},
		{name: "an update: the stored object, whatever the new one claims",
			req:  admissionv1.AdmissionRequest{Operation: admissionv1.Update, Object: inCluster("other-tenant"), OldObject: inCluster("2x9k4abc")},
			want: "2x9k4abc"},
		{name: "an update without the stored object is refused, not read from the new one",
			req:     admissionv1.AdmissionRequest{Operation: admissionv1.Update, Object: inCluster("2x9k4abc")},
			wantErr: "the UPDATE request carries no stored object"},
		{name: "a delete: the stored object",
			req: admissionv1.AdmissionRequest{Operation: admissionv1.Delete, OldObject: inCluster("root")}, want: "root"},
		{name: "a delete without an object",
			req: admissionv1.AdmissionRequest{Operation: admissionv1.Delete}, wantErr: "carries no"},
		{name: "no annotation",
			req:     admissionv1.AdmissionRequest{Operation: admissionv1.Delete, OldObject: runtime.RawExtension{Raw: []byte(`{"metadata":{"name":"x"}}`)}},
			wantErr: "has no kcp.io/cluster annotation"},
		{name: "an undecodable object",
			req: admissionv1.AdmissionRequest{Operation: admissionv1.Delete, OldObject: runtime.RawExtension{Raw: []byte(`{"metadata":[]}`)}}, wantErr: "decoding"},
		{name: "a path as the cluster",
			req: admissionv1.AdmissionRequest{Operation: admissionv1.Create, Object: inCluster("a/../b")}, wantErr: "not a logical cluster name"},
		{name: "a path behind the system: prefix",
			req: admissionv1.AdmissionRequest{Operation: admissionv1.Create, Object: inCluster("system:../../clusters/b")}, wantErr: "not a logical cluster name"},
		{name: "a system cluster",
			req: admissionv1.AdmissionRequest{Operation: admissionv1.Delete, OldObject: inCluster("system:admin")}, want: "system:admin"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ClusterOf(&tt.req)
			check.WantError(t, err, tt.wantErr)
			if got != tt.want {
				t.Fatalf("ClusterOf = %q, want %q", got, tt.want)
			}
		})
	}
}
