package admission

import (
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// TestDeletionOf: a DELETE names the object it carries, in the logical
// cluster that object was stored in, or it is refused as malformed.
func TestDeletionOf(t *testing.T) {
	stored := func(meta string) runtime.RawExtension {
		return runtime.RawExtension{Raw: []byte(`{"metadata":` + meta + `}`)}
	}
	vpc := `{"name":"vpc-1","namespace":"prod","uid":"u-1","annotations":{"kcp.io/cluster":"c1"}}`
	for _, tc := range []struct {
		name            string
		reqNS, reqName  string
		old             runtime.RawExtension
		object          runtime.RawExtension
		wantErr         string
		wantNS, wantObj string
	}{
		{name: "named", reqNS: "prod", reqName: "vpc-1", old: stored(vpc), wantNS: "prod", wantObj: "vpc-1"},
		{name: "an item of a collection names itself", old: stored(vpc), wantNS: "prod", wantObj: "vpc-1"},
		{name: "an item of a namespace's collection", reqNS: "prod", old: stored(vpc), wantNS: "prod", wantObj: "vpc-1"},
		{name: "no stored object", reqNS: "prod", reqName: "vpc-1", wantErr: "carries no object"},
		{name: "not JSON", reqNS: "prod", reqName: "vpc-1", old: runtime.RawExtension{Raw: []byte("{")}, wantErr: "decoding the object"},
		{name: "an object without a name", reqNS: "prod", reqName: "vpc-1", old: stored(`{"namespace":"prod","annotations":{"kcp.io/cluster":"c1"}}`), wantErr: "no metadata.name"},
		{name: "another name than its object", reqNS: "prod", reqName: "vpc-2", old: stored(vpc), wantErr: "names prod/vpc-2 but its object is prod/vpc-1"},
		{name: "another namespace than its object", reqNS: "dev", reqName: "vpc-1", old: stored(vpc), wantErr: "names dev/vpc-1 but its object is prod/vpc-1"},
		{name: "a name no object can have", old: stored(`{"name":"../../x","annotations":{"kcp.io/cluster":"c1"}}`), wantErr: "not an object name"},
		{name: "a namespace no namespace can have", old: stored(`{"name":"x","namespace":"a/b","annotations":{"kcp.io/cluster":"c1"}}`), wantErr: "is not a namespace name"},
		{name: "no logical cluster", reqNS: "prod", reqName: "vpc-1", old: stored(`{"name":"vpc-1","namespace":"prod"}`), wantErr: "no kcp.io/cluster annotation"},
		{name: "a logical cluster that is a path", reqNS: "prod", reqName: "vpc-1", old: stored(`{"name":"vpc-1","namespace":"prod","annotations":{"kcp.io/cluster":"../c2"}}`),
			wantErr: "not a logical cluster name"},
		{name: "the cluster of the new object is not read", reqNS: "prod", reqName: "vpc-1", old: stored(vpc),
			object: stored(`{"name":"vpc-1","namespace":"prod","annotations":{"kcp.io/cluster":"c2"}}`), wantNS: "prod", wantObj: "vpc-1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := &admissionv1.AdmissionRequest{Operation: admissionv1.Delete, Namespace: tc.reqNS, Name: tc.reqName, OldObject: tc.old, Object: tc.object,
				Resource: metav1.GroupVersionResource{Group: "network.example.io", Version: "v1", Resource: "vpcs"}}
			d, err := DeletionOf(req)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d.Namespace != tc.wantNS || d.Name != tc.wantObj || d.Cluster != "c1" || d.Meta.UID != "u-1" {
				t.Errorf("deletion of %s/%s in %q (uid %q), want %s/%s in c1 (uid u-1)", d.Namespace, d.Name, d.Cluster, d.Meta.UID, tc.wantNS, tc.wantObj)
			}
			if d.String() != "vpcs/vpc-1" {
				t.Errorf("String() = %q", d.String())
			}
		})
	}
}
