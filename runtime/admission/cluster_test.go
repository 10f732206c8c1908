package admission

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

// decodedAs returns the annotations of req's objects as a caller decodes
// them; an object that does not decode has none.
func decodedAs(req *admissionv1.AdmissionRequest) Annotations {
	of := func(raw []byte) map[string]string {
		var o struct {
			Metadata struct {
				Annotations map[string]string `json:"annotations"`
			} `json:"metadata"`
		}
		if json.Unmarshal(raw, &o) != nil {
			return nil
		}
		return o.Metadata.Annotations
	}
	return Annotations{Object: of(req.Object.Raw), OldObject: of(req.OldObject.Raw)}
}

// TestClusterOf: the logical cluster is read from the object kcp wrote, and
// a value the client wrote on an update never counts, whatever the caller
// decoded.
func TestClusterOf(t *testing.T) {
	tests := []struct {
		name string
		req  admissionv1.AdmissionRequest
		// decoded is what the caller hands ClusterOf; what decodedAs
		// decodes of req when nil.
		decoded *Annotations
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
		{name: "an undecodable object: the caller has no annotations to hand",
			req:     admissionv1.AdmissionRequest{Operation: admissionv1.Delete, OldObject: runtime.RawExtension{Raw: []byte(`{"metadata":[]}`)}},
			wantErr: "has no kcp.io/cluster annotation"},
		{name: "an update whose caller decoded only the new object: it is not read",
			req:     admissionv1.AdmissionRequest{Operation: admissionv1.Update, Object: inCluster("other-tenant"), OldObject: inCluster("2x9k4abc")},
			decoded: &Annotations{Object: map[string]string{v1alpha1.ClusterAnnotation: "other-tenant"}},
			wantErr: "the stored object (oldObject) has no kcp.io/cluster annotation"},
		{name: "a delete: the stored object's, whatever the request's object claims",
			req: admissionv1.AdmissionRequest{Operation: admissionv1.Delete, OldObject: inCluster("root")},
			decoded: &Annotations{Object: map[string]string{v1alpha1.ClusterAnnotation: "other-tenant"},
				OldObject: map[string]string{v1alpha1.ClusterAnnotation: "root"}},
			want: "root"},
		{name: "a create: the created object's, whatever a stored object claims",
			req: admissionv1.AdmissionRequest{Operation: admissionv1.Create, Object: inCluster("2x9k4abc"), OldObject: inCluster("other-tenant")},
			decoded: &Annotations{Object: map[string]string{v1alpha1.ClusterAnnotation: "2x9k4abc"},
				OldObject: map[string]string{v1alpha1.ClusterAnnotation: "other-tenant"}},
			want: "2x9k4abc"},
		{name: "a path as the cluster",
			req: admissionv1.AdmissionRequest{Operation: admissionv1.Create, Object: inCluster("a/../b")}, wantErr: "not a logical cluster name"},
		{name: "a path behind the system: prefix",
			req: admissionv1.AdmissionRequest{Operation: admissionv1.Create, Object: inCluster("system:../../clusters/b")}, wantErr: "not a logical cluster name"},
		{name: "a system cluster",
			req: admissionv1.AdmissionRequest{Operation: admissionv1.Delete, OldObject: inCluster("system:admin")}, want: "system:admin"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			decoded := decodedAs(&tt.req)
			if tt.decoded != nil {
				decoded = *tt.decoded
			}
			got, err := ClusterOf(&tt.req, decoded)
			check.WantError(t, err, tt.wantErr)
			if got != tt.want {
				t.Fatalf("ClusterOf = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestResolvedCluster: the logical cluster a LogicalCluster read from kcp
// names is taken only when it is one.
func TestResolvedCluster(t *testing.T) {
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		want, err   string
	}{
		{name: "a logical cluster", annotations: map[string]string{"kcp.io/cluster": "2x9k3l"}, want: "2x9k3l"},
		{name: "none", annotations: nil, err: "not a logical cluster name"},
		{name: "a path", annotations: map[string]string{"kcp.io/cluster": "root:network"}, err: "not a logical cluster name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ResolvedCluster(tc.annotations)
			if check.WantError(t, err, tc.err) {
				return
			}
			if got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}
