package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"github.com/depctrl/terraform-provider-depctrl/runtime/fieldpath"
	"github.com/depctrl/terraform-provider-depctrl/runtime/refindex"
)

// fakeTargets answers Deleting from a set of "namespace/name" being
// deleted, and records what it was asked.
type fakeTargets struct {
	deleting map[string]bool
	err      error
	asked    []string
}

func (f *fakeTargets) Deleting(_ context.Context, _, namespace string, _ schema.GroupVersionResource, name string) (bool, error) {
	f.asked = append(f.asked, namespace+"/"+name)
	return f.deleting[namespace+"/"+name], f.err
}

func TestRefuseDeletingTargets(t *testing.T) {
	index := refindex.Schema{Stamp: "s1", References: []refindex.Reference{{
		Target: vpcGVR.GroupResource(), Version: "v1",
		Paths: []fieldpath.Path{fieldpath.MustParse(".spec.vpcRef.name"), fieldpath.MustParse(".spec.networks[*].vpc")},
	}}}
	vm := func(extraMeta string, vpcs ...string) string {
		nets := make([]string, len(vpcs))
		for i, v := range vpcs {
			nets[i] = `{"vpc":"` + v + `"}`
		}
		return `{"metadata":{"name":"vm","namespace":"apps","annotations":{"kcp.io/cluster":"c1"}` + extraMeta + `},"spec":{"networks":[` + strings.Join(nets, ",") + `]}}`
	}
	tests := []struct {
		name        string
		op          admissionv1.Operation
		old, object string
		targets     *fakeTargets
		wantAsked   []string
		wantCode    int32
		wantMessage string
		wantOutcome string
	}{
		{
			name: "create referencing an object being deleted: refused", op: admissionv1.Create,
			object: vm("", "vpc-a", "vpc-b"), targets: &fakeTargets{deleting: map[string]bool{"apps/vpc-b": true}},
			wantAsked: []string{"apps/vpc-a", "apps/vpc-b"}, wantCode: 403,
			wantMessage: "virtualmachines/vm cannot reference vpcs/vpc-b: vpcs/vpc-b is being deleted", wantOutcome: indexRefused,
		},
		{
			name: "create referencing live or absent objects: allowed", op: admissionv1.Create,
			object: vm("", "vpc-a", "vpc-a"), targets: &fakeTargets{},
			wantAsked: []string{"apps/vpc-a"}, wantOutcome: indexLabelled,
		},
		{
			name: "update keeping a reference to an object being deleted: allowed, not even asked", op: admissionv1.Update,
			old: vm("", "vpc-a"), object: vm(`,"labels":{"team":"x"}`, "vpc-a"), targets: &fakeTargets{deleting: map[string]bool{"apps/vpc-a": true}},
			wantOutcome: indexLabelled,
		},
		{
			name: "update adding a reference to an object being deleted: refused", op: admissionv1.Update,
			old: vm("", "vpc-a"), object: vm("", "vpc-a", "vpc-b"), targets: &fakeTargets{deleting: map[string]bool{"apps/vpc-b": true}},
			wantAsked: []string{"apps/vpc-b"}, wantCode: 403, wantMessage: "cannot reference vpcs/vpc-b", wantOutcome: indexRefused,
		},
		{
			name: "a dependent being deleted may say anything", op: admissionv1.Update,
			old: vm(""), object: vm(`,"deletionTimestamp":"2026-01-01T00:00:00Z"`, "vpc-b"), targets: &fakeTargets{deleting: map[string]bool{"apps/vpc-b": true}},
			wantOutcome: indexLabelled,
		},
		{
			name: "a failed check refuses and says why", op: admissionv1.Create,
			object: vm("", "vpc-a"), targets: &fakeTargets{err: errors.New("forbidden: boom")},
			wantAsked: []string{"apps/vpc-a"}, wantCode: 503,
			wantMessage: "cannot check whether vpcs/vpc-a, which virtualmachines/vm references, is being deleted, so protection refuses the write: forbidden: boom", wantOutcome: outcomeError,
		},
		{
			name: "no references: nothing to ask", op: admissionv1.Create,
			object: vm(""), targets: &fakeTargets{err: errors.New("must not be asked")},
			wantOutcome: indexLabelled,
		},
		{
			name: "no cluster annotation with a reference to check: bad request", op: admissionv1.Create,
			object:   `{"metadata":{"name":"vm","namespace":"apps"},"spec":{"vpcRef":{"name":"vpc-a"}}}`,
			targets:  &fakeTargets{},
			wantCode: 400, wantMessage: "has no kcp.io/cluster annotation", wantOutcome: outcomeBadRequest,
		},
	}
	ready := make(chan struct{})
	close(ready)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ix := NewIndexer(schemaSource(index), ready, logr.Discard())
			ix.Targets = tt.targets
			req := &admissionv1.AdmissionRequest{UID: "u", Operation: tt.op, Resource: metav1.GroupVersionResource(vmGVR), Object: runtime.RawExtension{Raw: []byte(tt.object)}}
			if tt.old != "" {
				req.OldObject = runtime.RawExtension{Raw: []byte(tt.old)}
			}
			resp, outcome := ix.Decide(context.Background(), req)
			if outcome != tt.wantOutcome {
				t.Fatalf("outcome %s, want %s (%+v)", outcome, tt.wantOutcome, resp.Result)
			}
			if !slices.Equal(tt.targets.asked, tt.wantAsked) {
				t.Errorf("asked about %v, want %v", tt.targets.asked, tt.wantAsked)
			}
			if tt.wantCode == 0 {
				if !resp.Allowed {
					t.Fatalf("refused: %+v", resp.Result)
				}
				return
			}
			if resp.Allowed || resp.Result.Code != tt.wantCode || !strings.Contains(resp.Result.Message, tt.wantMessage) {
				t.Fatalf("got allowed=%v %+v, want %d containing %q", resp.Allowed, resp.Result, tt.wantCode, tt.wantMessage)
			}
		})
	}
}

// TestFrontProxyDeleting reads the referenced object in the dependent's
// namespace, then cluster-wide, and treats an absent object as not being
// deleted.
func TestFrontProxyDeleting(t *testing.T) {
	objects := map[string]string{
		"/clusters/c1/apis/network.test.io/v1/namespaces/apps/vpcs/live":      `{"metadata":{"name":"live"}}`,
		"/clusters/c1/apis/network.test.io/v1/namespaces/apps/vpcs/doomed":    `{"metadata":{"name":"doomed","deletionTimestamp":"2026-01-01T00:00:00Z"}}`,
		"/clusters/c1/apis/network.test.io/v1/vpcs/cluster-wide":              `{"metadata":{"name":"cluster-wide","deletionTimestamp":"2026-01-01T00:00:00Z"}}`,
		"/clusters/c1/apis/network.test.io/v1/namespaces/apps/vpcs/forbidden": "",
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, ok := objects[r.URL.Path]
		switch {
		case !ok:
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			_ = json.NewEncoder(w).Encode(metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure, Code: 404, Reason: metav1.StatusReasonNotFound})
		case body == "":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusForbidden)
			_ = json.NewEncoder(w).Encode(metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure, Code: 403, Reason: metav1.StatusReasonForbidden, Message: "no"})
		default:
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(body))
		}
	}))
	defer srv.Close()
	f, err := NewFrontProxyFinder(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name    string
		want    bool
		wantErr bool
	}{{"live", false, false}, {"doomed", true, false}, {"cluster-wide", true, false}, {"absent", false, false}, {"forbidden", false, true}} {
		got, err := f.Deleting(context.Background(), "c1", "apps", vpcGVR, tt.name)
		if got != tt.want || (err != nil) != tt.wantErr {
			t.Errorf("%s: deleting=%v err=%v, want %v (error %v)", tt.name, got, err, tt.want, tt.wantErr)
		}
		// A refusal says what was refused, as the server put it.
		if tt.wantErr && !apierrors.IsForbidden(err) {
			t.Errorf("%s: the error does not carry the server's refusal: %v", tt.name, err)
		}
	}
}
