package index

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/go-logr/logr"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/depctrl/terraform-provider-depctrl/runtime/admission"
	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
	"github.com/depctrl/terraform-provider-depctrl/runtime/fieldpath"
	"github.com/depctrl/terraform-provider-depctrl/runtime/registry"
	"github.com/depctrl/terraform-provider-depctrl/test/admissiontest"
)

var (
	vpcGVR = schema.GroupVersionResource{Group: "network.test.io", Version: "v1", Resource: "vpcs"}
	vmGVR  = schema.GroupVersionResource{Group: "compute.test.io", Version: "v1", Resource: "virtualmachines"}
)

type schemaSource registry.Schema

func (s schemaSource) IndexSchema(schema.GroupResource) registry.Schema { return registry.Schema(s) }

func TestIndexerDecide(t *testing.T) {
	vpcs := vpcGVR.GroupResource()
	index := registry.Schema{Stamp: "s1", References: []registry.Reference{{Target: vpcs, Paths: []fieldpath.Path{fieldpath.MustParse(".spec.vpcRef.name")}}}}
	ready := make(chan struct{})
	close(ready)
	tests := []struct {
		name        string
		op          admissionv1.Operation
		subresource string
		object      string
		notReady    bool
		wantPatched bool
		wantLabels  map[string]string
		wantDenied  bool
		wantOutcome string
	}{
		{
			name: "create: labelled", op: admissionv1.Create,
			object:      `{"metadata":{"name":"vm"},"spec":{"vpcRef":{"name":"vpc-a"}}}`,
			wantPatched: true, wantLabels: map[string]string{registry.StampLabel: "s1", registry.RefLabel(vpcs, "vpc-a"): ""}, wantOutcome: indexLabelled,
		},
		{
			name: "update that moves the reference: relabelled, user labels kept", op: admissionv1.Update,
			object:      `{"metadata":{"name":"vm","labels":{"team":"a","` + registry.StampLabel + `":"s1","` + registry.RefLabel(vpcs, "vpc-a") + `":""}},"spec":{"vpcRef":{"name":"vpc-b"}}}`,
			wantPatched: true, wantLabels: map[string]string{"team": "a", registry.StampLabel: "s1", registry.RefLabel(vpcs, "vpc-b"): ""}, wantOutcome: indexLabelled,
		},
		{
			name: "update with labels already right: no patch", op: admissionv1.Update,
			object:      `{"metadata":{"name":"vm","labels":{"` + registry.StampLabel + `":"s1","` + registry.RefLabel(vpcs, "vpc-a") + `":""}},"spec":{"vpcRef":{"name":"vpc-a"}}}`,
			wantOutcome: indexUnchanged,
		},
		{
			name: "a user removing the index labels gets them back", op: admissionv1.Update,
			object:      `{"metadata":{"name":"vm","labels":{}},"spec":{"vpcRef":{"name":"vpc-a"}}}`,
			wantPatched: true, wantLabels: map[string]string{registry.StampLabel: "s1", registry.RefLabel(vpcs, "vpc-a"): ""}, wantOutcome: indexLabelled,
		},
		{
			name: "not initialized: refused, to be retried", op: admissionv1.Update, notReady: true,
			object:     `{"metadata":{"name":"vm","labels":{"team":"a","` + registry.StampLabel + `":"s1"}},"spec":{"vpcRef":{"name":"vpc-a"}}}`,
			wantDenied: true, wantOutcome: admission.OutcomeNotInitialized,
		},
		{
			name: "delete: nothing to do", op: admissionv1.Delete, object: `{}`, wantOutcome: indexUnchanged,
		},
		{
			name: "status subresource: nothing to do", op: admissionv1.Update, subresource: "status",
			object: `{"metadata":{"name":"vm"}}`, wantOutcome: indexUnchanged,
		},
		{
			name: "undecodable object: refused", op: admissionv1.Create, object: `{"metadata":`, wantDenied: true, wantOutcome: admission.OutcomeBadRequest,
		},
		{
			name: "labels that are not strings: refused", op: admissionv1.Create, object: `{"metadata":{"name":"vm","labels":{"a":1}}}`, wantDenied: true, wantOutcome: admission.OutcomeBadRequest,
		},
		{
			name: "no metadata: refused", op: admissionv1.Create, object: `{"spec":{}}`, wantDenied: true, wantOutcome: admission.OutcomeBadRequest,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			initialized := ready
			if tt.notReady {
				initialized = make(chan struct{})
			}
			ix := NewIndexer(schemaSource(index), admission.When(initialized), logr.Discard())
			req := &admissionv1.AdmissionRequest{UID: "u", Operation: tt.op, SubResource: tt.subresource, Name: "vm",
				Resource: metav1.GroupVersionResource(vmGVR), Object: runtime.RawExtension{Raw: []byte(tt.object)}}
			resp, outcome := ix.Decide(context.Background(), req)
			if outcome != tt.wantOutcome {
				t.Errorf("outcome = %q, want %q", outcome, tt.wantOutcome)
			}
			if resp.Allowed == tt.wantDenied {
				t.Fatalf("allowed = %v, want %v (%v)", resp.Allowed, !tt.wantDenied, resp.Result)
			}
			if (resp.Patch != nil) != tt.wantPatched {
				t.Fatalf("patch = %s, want patched %v", resp.Patch, tt.wantPatched)
			}
			if !tt.wantPatched {
				return
			}
			patch, err := jsonpatch.DecodePatch(resp.Patch)
			if err != nil {
				t.Fatal(err)
			}
			out, err := patch.Apply([]byte(tt.object))
			if err != nil {
				t.Fatalf("applying %s: %v", resp.Patch, err)
			}
			var got struct {
				Metadata struct {
					Labels map[string]string `json:"labels"`
				} `json:"metadata"`
			}
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(got.Metadata.Labels, tt.wantLabels) {
				t.Fatalf("labels after the patch = %v, want %v", got.Metadata.Labels, tt.wantLabels)
			}
		})
	}
}

func TestIndexerServeHTTP(t *testing.T) {
	ready := make(chan struct{})
	close(ready)
	ix := NewIndexer(schemaSource(registry.Schema{}), admission.When(ready), logr.Discard())
	for _, body := range []string{"", "{", `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}`} {
		w := httptest.NewRecorder()
		r := httptest.NewRequest(http.MethodPost, v1alpha1.MutatePath, bytes.NewBufferString(body))
		r.Header.Set("Content-Type", "application/json")
		ix.ServeHTTP(w, r)
		if !admissiontest.RefusedAsBad(w) {
			t.Errorf("body %q: HTTP %d %s, want a refusal as a bad request", body, w.Code, w.Body)
		}
	}
	review := `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u1","operation":"CREATE",
		"resource":{"group":"compute.test.io","version":"v1","resource":"virtualmachines"},"object":{"metadata":{"name":"vm"}}}}`
	w := httptest.NewRecorder()
	r := httptest.NewRequest(http.MethodPost, v1alpha1.MutatePath, bytes.NewBufferString(review))
	r.Header.Set("Content-Type", "application/json")
	ix.ServeHTTP(w, r)
	var out admissionv1.AdmissionReview
	if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil || out.Response == nil || out.Response.UID != "u1" || !out.Response.Allowed {
		t.Fatalf("response %s (%v)", w.Body.String(), err)
	}
}
