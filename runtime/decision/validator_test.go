package decision

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
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
	"github.com/depctrl/terraform-provider-depctrl/runtime/index"
	"github.com/depctrl/terraform-provider-depctrl/runtime/registry"
	"github.com/depctrl/terraform-provider-depctrl/test/admissiontest"
)

var (
	vpcGVR = schema.GroupVersionResource{Group: "network.test.io", Version: "v1", Resource: "vpcs"}
	vmGVR  = schema.GroupVersionResource{Group: "compute.test.io", Version: "v1", Resource: "virtualmachines"}
	dbGVR  = schema.GroupVersionResource{Group: "compute.test.io", Version: "v1", Resource: "manageddbs"}
)

type fakeProtections map[schema.GroupVersionResource][]registry.Protection

func (f fakeProtections) Protections(gvr schema.GroupVersionResource) []registry.Protection {
	return f[gvr]
}

type fakeFinder struct {
	blockers    map[schema.GroupVersionResource][]Blocker
	err         map[schema.GroupVersionResource]error
	terminating bool
	// calls is atomic: the validator queries protections concurrently.
	calls atomic.Int64
	// asked is the namespace/name of the last lookup.
	asked atomic.Value
	// dependents are the stored dependents by namespace/name, with what
	// each references; read by Referencing.
	dependents map[string]string
	// tokens are the tokens of the stored dependents' IntentLabel, by
	// namespace/name: the intents whose write is stored.
	tokens map[string]string
	// referencingErr fails Referencing.
	referencingErr error
	// placeReads counts ReferencedNames.
	placeReads atomic.Int64
}

func (f *fakeFinder) FindBlockers(_ context.Context, _, namespace string, _ schema.GroupResource, name string, p registry.Protection, limit int) ([]Blocker, int, error) {
	f.calls.Add(1)
	f.asked.Store(namespace + "/" + name)
	if err := f.err[p.Dependent]; err != nil {
		return nil, 0, err
	}
	b := f.blockers[p.Dependent]
	if len(b) > limit {
		return b[:limit], -1, nil
	}
	return b, 0, nil
}

func (f *fakeFinder) Terminating(context.Context, string) (bool, error) { return f.terminating, nil }

func (f *fakeFinder) Referencing(_ context.Context, _ string, _ registry.Protection, namespace, dependent, name string) (index.Dependent, error) {
	if f.referencingErr != nil {
		return index.Dependent{}, f.referencingErr
	}
	ref, ok := f.dependents[namespace+"/"+dependent]
	return index.Dependent{Found: ok, Token: f.tokens[namespace+"/"+dependent], References: ok && ref == name}, nil
}

func (f *fakeFinder) ReferencedNames(_ context.Context, _, namespace string, p registry.Protection) (map[string]bool, error) {
	f.placeReads.Add(1)
	if err := f.err[p.Dependent]; err != nil {
		return nil, err
	}
	names := map[string]bool{}
	for key, target := range f.dependents {
		if namespace == "" || strings.HasPrefix(key, namespace+"/") {
			names[target] = true
		}
	}
	return names, nil
}

func deleteRequest(gvr schema.GroupVersionResource, name string, annotations map[string]string) *admissionv1.AdmissionRequest {
	obj := map[string]interface{}{"metadata": map[string]interface{}{"name": name, "namespace": "default", "annotations": annotations}}
	raw, _ := json.Marshal(obj)
	return &admissionv1.AdmissionRequest{
		UID:       "uid-1",
		Operation: admissionv1.Delete,
		Resource:  metav1.GroupVersionResource(gvr),
		Namespace: "default",
		Name:      name,
		OldObject: runtime.RawExtension{Raw: raw},
		UserInfo:  authenticationv1.UserInfo{Username: "alice"},
	}
}

func TestDecide(t *testing.T) {
	inCluster := map[string]string{v1alpha1.ClusterAnnotation: "consumer-1"}
	protections := fakeProtections{vpcGVR: {
		{Rule: "c1/vm-rule", Dependent: vmGVR, DependentKind: "VirtualMachine"},
		{Rule: "c1/db-rule", Dependent: dbGVR, DependentKind: "ManagedDB"},
	}}
	tests := []struct {
		name        string
		req         *admissionv1.AdmissionRequest
		edit        func(*admissionv1.AdmissionRequest) // when set, turns req into the request the case is about
		finder      *fakeFinder
		opts        ValidatorOptions
		notReady    bool
		wantAllowed bool
		wantCode    int32
		wantMessage string
		wantOutcome string
		// wantAsked, when set, is the namespace/name the finder must be
		// asked about.
		wantAsked string
	}{
		{
			name:     "a create without an object is a bad request",
			req:      deleteRequest(vpcGVR, "v", inCluster),
			edit:     func(r *admissionv1.AdmissionRequest) { r.Operation = admissionv1.Create },
			wantCode: 400, wantMessage: "cannot decode the object", wantOutcome: admission.OutcomeBadRequest,
		},
		{
			name:     "not initialized denies",
			req:      deleteRequest(vpcGVR, "v", inCluster),
			notReady: true, wantCode: 503, wantMessage: "not yet initialized, retry later", wantOutcome: admission.OutcomeNotInitialized,
		},
		{
			name:        "unprotected resource is allowed without lookups",
			req:         deleteRequest(vmGVR, "vm", inCluster),
			finder:      &fakeFinder{blockers: map[schema.GroupVersionResource][]Blocker{vmGVR: {{Kind: "X", Name: "y"}}}},
			wantAllowed: true, wantOutcome: outcomeAllowed,
		},
		{
			name:        "skip-protection allows",
			req:         deleteRequest(vpcGVR, "v", map[string]string{v1alpha1.ClusterAnnotation: "c1", v1alpha1.SkipProtectionAnnotation: "true"}),
			finder:      &fakeFinder{blockers: map[schema.GroupVersionResource][]Blocker{vmGVR: {{Kind: "VirtualMachine", Name: "vm"}}}},
			wantAllowed: true, wantOutcome: outcomeSkipped,
		},
		{
			name:        "skip-protection allows members of the allowed groups",
			req:         deleteRequest(vpcGVR, "v", map[string]string{v1alpha1.ClusterAnnotation: "c1", v1alpha1.SkipProtectionAnnotation: "true"}),
			edit:        func(r *admissionv1.AdmissionRequest) { r.UserInfo.Groups = []string{"developers", "platform-admins"} },
			opts:        ValidatorOptions{SkipProtectionGroups: []string{"platform-admins"}},
			finder:      &fakeFinder{blockers: map[schema.GroupVersionResource][]Blocker{vmGVR: {{Kind: "VirtualMachine", Name: "vm"}}}},
			wantAllowed: true, wantOutcome: outcomeSkipped,
		},
		{
			name:     "skip-protection is ignored for everyone else",
			req:      deleteRequest(vpcGVR, "v", map[string]string{v1alpha1.ClusterAnnotation: "c1", v1alpha1.SkipProtectionAnnotation: "true"}),
			edit:     func(r *admissionv1.AdmissionRequest) { r.UserInfo.Groups = []string{"developers"} },
			opts:     ValidatorOptions{SkipProtectionGroups: []string{"platform-admins"}},
			finder:   &fakeFinder{blockers: map[schema.GroupVersionResource][]Blocker{vmGVR: {{Kind: "VirtualMachine", Name: "vm"}}}},
			wantCode: 403, wantMessage: "still referenced by VirtualMachine/vm (the dependencies.opendefense.cloud/skip-protection annotation is ignored: only members of platform-admins may use it)",
			wantOutcome: outcomeDenied,
		},
		{
			name:        "an ignored skip-protection still lets unreferenced objects go",
			req:         deleteRequest(vpcGVR, "v", map[string]string{v1alpha1.ClusterAnnotation: "c1", v1alpha1.SkipProtectionAnnotation: "true"}),
			edit:        func(r *admissionv1.AdmissionRequest) { r.UserInfo.Groups = []string{"developers"} },
			opts:        ValidatorOptions{SkipProtectionGroups: []string{"platform-admins"}},
			wantAllowed: true, wantOutcome: outcomeAllowed,
		},
		{
			name:     "skip-protection must be exactly true",
			req:      deleteRequest(vpcGVR, "v", map[string]string{v1alpha1.ClusterAnnotation: "c1", v1alpha1.SkipProtectionAnnotation: "yes"}),
			finder:   &fakeFinder{blockers: map[schema.GroupVersionResource][]Blocker{vmGVR: {{Kind: "VirtualMachine", Name: "vm"}}}},
			wantCode: 403, wantMessage: "still referenced by VirtualMachine/vm", wantOutcome: outcomeDenied,
		},
		{
			name:     "missing cluster annotation is a bad request",
			req:      deleteRequest(vpcGVR, "v", nil),
			wantCode: 400, wantMessage: "has no kcp.io/cluster annotation", wantOutcome: admission.OutcomeBadRequest,
		},
		{
			name:     "no object in a DELETE is a bad request",
			req:      deleteRequest(vpcGVR, "v", inCluster),
			edit:     func(r *admissionv1.AdmissionRequest) { r.OldObject.Raw = nil },
			wantCode: 400, wantMessage: "carries no object", wantOutcome: admission.OutcomeBadRequest,
		},
		{
			name:        "no dependents allows",
			req:         deleteRequest(vpcGVR, "v", inCluster),
			finder:      &fakeFinder{},
			wantAllowed: true, wantOutcome: outcomeAllowed,
		},
		{
			name: "dependents deny, in a stable order",
			req:  deleteRequest(vpcGVR, "my-vpc", inCluster),
			finder: &fakeFinder{blockers: map[schema.GroupVersionResource][]Blocker{
				vmGVR: {{Kind: "VirtualMachine", Name: "vm-b"}, {Kind: "VirtualMachine", Name: "vm-a"}},
				dbGVR: {{Kind: "ManagedDB", Name: "db"}},
			}},
			wantCode:    403,
			wantMessage: "cannot delete vpcs/my-vpc: still referenced by ManagedDB/db, VirtualMachine/vm-a, VirtualMachine/vm-b",
			wantOutcome: outcomeDenied,
		},
		{
			name: "a cluster-scoped object's dependents are named with their namespaces",
			req:  deleteRequest(vpcGVR, "my-vpc", inCluster),
			edit: func(r *admissionv1.AdmissionRequest) {
				r.Namespace = ""
				r.OldObject.Raw = []byte(`{"metadata":{"name":"my-vpc","annotations":{"kcp.io/cluster":"consumer-1"}}}`)
			},
			finder: &fakeFinder{blockers: map[schema.GroupVersionResource][]Blocker{
				vmGVR: {{Kind: "VirtualMachine", Namespace: "team-a", Name: "vm"}, {Kind: "VirtualMachine", Namespace: "team-b", Name: "vm"}},
			}},
			wantCode:    403,
			wantMessage: "cannot delete vpcs/my-vpc: still referenced by VirtualMachine/vm in namespace team-a, VirtualMachine/vm in namespace team-b",
			wantOutcome: outcomeDenied,
		},
		{
			name: "long lists are capped",
			req:  deleteRequest(vpcGVR, "v", inCluster),
			finder: &fakeFinder{blockers: map[schema.GroupVersionResource][]Blocker{vmGVR: func() []Blocker {
				var b []Blocker
				for _, n := range []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l"} {
					b = append(b, Blocker{Kind: "VirtualMachine", Name: n})
				}
				return b
			}()}},
			wantCode: 403, wantMessage: "VirtualMachine/j and more", wantOutcome: outcomeDenied,
		},
		{
			name:     "a failed lookup denies and says what failed",
			req:      deleteRequest(vpcGVR, "v", inCluster),
			finder:   &fakeFinder{err: map[schema.GroupVersionResource]error{vmGVR: errors.New("forbidden: boom")}},
			wantCode: 503, wantMessage: "checking for dependents failed, so protection refuses the deletion: listing virtualmachines.compute.test.io for rule c1/vm-rule: forbidden: boom",
			wantOutcome: admission.OutcomeError,
		},
		{
			name: "a blocker wins over a failed lookup",
			req:  deleteRequest(vpcGVR, "v", inCluster),
			finder: &fakeFinder{
				err:      map[schema.GroupVersionResource]error{vmGVR: errors.New("timeout")},
				blockers: map[schema.GroupVersionResource][]Blocker{dbGVR: {{Kind: "ManagedDB", Name: "db"}}},
			},
			wantCode: 403, wantMessage: "still referenced by ManagedDB/db", wantOutcome: outcomeDenied,
		},
		{
			// DELETECOLLECTION sends each item with an empty name (and
			// an empty namespace when it spans namespaces).
			name:        "a collection delete is decided by the item it deletes",
			req:         deleteRequest(vpcGVR, "my-vpc", inCluster),
			edit:        func(r *admissionv1.AdmissionRequest) { r.Name, r.Namespace = "", "" },
			finder:      &fakeFinder{blockers: map[schema.GroupVersionResource][]Blocker{vmGVR: {{Kind: "VirtualMachine", Name: "vm"}}}},
			wantCode:    403,
			wantMessage: "cannot delete vpcs/my-vpc: still referenced by VirtualMachine/vm",
			wantOutcome: outcomeDenied,
			wantAsked:   "default/my-vpc",
		},
		{
			name:     "a request whose name disagrees with its object is a bad request",
			req:      deleteRequest(vpcGVR, "my-vpc", inCluster),
			edit:     func(r *admissionv1.AdmissionRequest) { r.Name = "other" },
			finder:   &fakeFinder{},
			wantCode: 400, wantMessage: "the request names default/other but its object is default/my-vpc", wantOutcome: admission.OutcomeBadRequest,
		},
		{
			name:     "a request whose namespace disagrees with its object is a bad request",
			req:      deleteRequest(vpcGVR, "my-vpc", inCluster),
			edit:     func(r *admissionv1.AdmissionRequest) { r.Namespace = "kube-system" },
			finder:   &fakeFinder{},
			wantCode: 400, wantMessage: "but its object is default/my-vpc", wantOutcome: admission.OutcomeBadRequest,
		},
		{
			name:     "an object without a name is a bad request",
			req:      deleteRequest(vpcGVR, "", inCluster),
			finder:   &fakeFinder{},
			wantCode: 400, wantMessage: "has no metadata.name", wantOutcome: admission.OutcomeBadRequest,
		},
		{
			name:     "a dry run is decided like the real delete",
			req:      deleteRequest(vpcGVR, "v", inCluster),
			edit:     func(r *admissionv1.AdmissionRequest) { r.DryRun = ptr.To(true) },
			finder:   &fakeFinder{blockers: map[schema.GroupVersionResource][]Blocker{vmGVR: {{Kind: "VirtualMachine", Name: "vm"}}}},
			wantCode: 403, wantMessage: "still referenced by VirtualMachine/vm", wantOutcome: outcomeDenied,
		},
		{
			name: "a terminating workspace may delete even when the dependents cannot be read",
			req:  deleteRequest(vpcGVR, "v", inCluster),
			finder: &fakeFinder{terminating: true,
				err: map[schema.GroupVersionResource]error{vmGVR: errors.New("forbidden"), dbGVR: errors.New("forbidden")}},
			wantAllowed: true, wantOutcome: outcomeAllowed,
		},
		{
			name:        "a terminating workspace may delete anything",
			req:         deleteRequest(vpcGVR, "v", inCluster),
			finder:      &fakeFinder{terminating: true, blockers: map[schema.GroupVersionResource][]Blocker{vmGVR: {{Kind: "VirtualMachine", Name: "vm"}}}},
			wantAllowed: true, wantOutcome: outcomeAllowed,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ready := make(chan struct{})
			if !tt.notReady {
				close(ready)
			}
			finder := tt.finder
			if finder == nil {
				finder = &fakeFinder{}
			}
			if tt.edit != nil {
				tt.edit(tt.req)
			}
			v := NewValidator(protections, finder, admission.When(ready), tt.opts, logr.Discard())
			resp, outcome := v.Decide(context.Background(), tt.req)
			if resp.Allowed != tt.wantAllowed || outcome != tt.wantOutcome {
				t.Fatalf("allowed=%v outcome=%s, want allowed=%v outcome=%s (result %+v)", resp.Allowed, outcome, tt.wantAllowed, tt.wantOutcome, resp.Result)
			}
			if !tt.wantAllowed {
				if resp.Result.Code != tt.wantCode || !strings.Contains(resp.Result.Message, tt.wantMessage) {
					t.Fatalf("result = %d %q, want %d containing %q", resp.Result.Code, resp.Result.Message, tt.wantCode, tt.wantMessage)
				}
			}
			if asked, _ := finder.asked.Load().(string); tt.wantAsked != "" && asked != tt.wantAsked {
				t.Fatalf("the finder was asked about %q, want %q", asked, tt.wantAsked)
			}
		})
	}
}

func TestServeHTTPRejectsMalformedRequests(t *testing.T) {
	ready := make(chan struct{})
	close(ready)
	finder := &fakeFinder{}
	v := NewValidator(fakeProtections{vpcGVR: {{Dependent: vmGVR}}}, finder, admission.When(ready), ValidatorOptions{}, logr.Discard())
	valid, _ := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request:  deleteRequest(vpcGVR, "v", map[string]string{v1alpha1.ClusterAnnotation: "c1"}),
	})
	tests := []struct {
		name, method, contentType, body string
		wantStatus                      int
		path                            string
	}{
		{"valid", http.MethodPost, "application/json", string(valid), 200, ""},
		{"valid, scoped", http.MethodPost, "application/json", string(valid), 200, "/validate/clusters/a,b"},
		{"malformed scope", http.MethodPost, "application/json", string(valid), 400, "/validate/clusters/A;b"},
		{"empty scope", http.MethodPost, "application/json", string(valid), 400, "/validate/clusters/"},
		{"GET", http.MethodGet, "", "", 400, ""},
		{"not JSON", http.MethodPost, "application/json", "{nope", 400, ""},
		{"wrong content type", http.MethodPost, "text/plain", string(valid), 400, ""},
		{"empty", http.MethodPost, "application/json", "", 400, ""},
		{"wrong kind", http.MethodPost, "application/json", `{"apiVersion":"admission.k8s.io/v1","kind":"Pod","request":{"uid":"x"}}`, 400, ""},
		{"no request", http.MethodPost, "application/json", `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}`, 400, ""},
		{"no uid", http.MethodPost, "application/json", `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"operation":"DELETE"}}`, 400, ""},
		{"oversized", http.MethodPost, "application/json", `{"x":"` + strings.Repeat("a", admission.MaxReviewBytes) + `"}`, 400, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls := finder.calls.Load()
			path := tt.path
			if path == "" {
				path = "/validate"
			}
			r := httptest.NewRequest(tt.method, path, bytes.NewBufferString(tt.body))
			if tt.contentType != "" {
				r.Header.Set("Content-Type", tt.contentType)
			}
			w := httptest.NewRecorder()
			v.ServeHTTP(w, r)
			if tt.wantStatus == http.StatusBadRequest && !admissiontest.RefusedAsBad(w) {
				t.Fatalf("want a refusal as a bad request, got HTTP %d: %s", w.Code, w.Body.String())
			}
			if tt.wantStatus == http.StatusOK && (w.Code != http.StatusOK || admissiontest.RefusedAsBad(w)) {
				t.Fatalf("want a decision, got HTTP %d: %s", w.Code, w.Body.String())
			}
			if tt.wantStatus != 200 && finder.calls.Load() != calls {
				t.Fatal("a malformed request must not cause lookups")
			}
			if tt.wantStatus == 200 {
				var out admissionv1.AdmissionReview
				if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil || out.Response == nil || out.Response.UID != "uid-1" {
					t.Fatalf("bad response %s (%v)", w.Body.String(), err)
				}
			}
		})
	}
}

// scopeRecorder is a readiness that records the scope it was asked about
// and answers with err.
type scopeRecorder struct {
	asked []admission.Scope
	err   error
}

func (r *scopeRecorder) Decidable(_ context.Context, sc admission.Scope, _ admission.Freshness) error {
	r.asked = append(r.asked, sc)
	return r.err
}

// TestServeHTTPDecidesInTheURLsScope: the clusters the URL names are what
// readiness is asked about; when it cannot decide, the delete is refused as
// unavailable, naming why, and no dependent is looked up.
func TestServeHTTPDecidesInTheURLsScope(t *testing.T) {
	review, _ := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request:  deleteRequest(vpcGVR, "v", map[string]string{v1alpha1.ClusterAnnotation: "c1"}),
	})
	tests := []struct {
		name, path  string
		err         error
		wantScope   admission.Scope
		wantAllowed bool
	}{
		{"scoped, decidable", "/validate/clusters/b,a", nil, admission.Of("a", "b"), true},
		{"unscoped, decidable", "/validate", nil, admission.Unnamed, true},
		{"scoped, not decidable", "/validate/clusters/a", errors.New("the rules in logical cluster(s) a are not read"), admission.Of("a"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			finder := &fakeFinder{}
			rules := &scopeRecorder{err: tt.err}
			v := NewValidator(fakeProtections{vpcGVR: {{Dependent: vmGVR}}}, finder, rules, ValidatorOptions{}, logr.Discard())
			w := httptest.NewRecorder()
			r := httptest.NewRequest(http.MethodPost, tt.path, bytes.NewReader(review))
			r.Header.Set("Content-Type", "application/json")
			v.ServeHTTP(w, r)
			var out admissionv1.AdmissionReview
			if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil || out.Response == nil {
				t.Fatalf("bad response %s (%v)", w.Body.String(), err)
			}
			if len(rules.asked) != 1 || rules.asked[0].Named != tt.wantScope.Named || strings.Join(rules.asked[0].Clusters, ",") != strings.Join(tt.wantScope.Clusters, ",") {
				t.Errorf("readiness asked about %+v, want %+v", rules.asked, tt.wantScope)
			}
			if out.Response.Allowed != tt.wantAllowed {
				t.Fatalf("allowed = %v, want %v: %+v", out.Response.Allowed, tt.wantAllowed, out.Response.Result)
			}
			if !tt.wantAllowed {
				if out.Response.Result.Code != http.StatusServiceUnavailable || !strings.Contains(out.Response.Result.Message, tt.err.Error()) {
					t.Errorf("refusal %+v, want 503 naming %q", out.Response.Result, tt.err)
				}
				if finder.calls.Load() != 0 {
					t.Error("dependents were looked up for a request that cannot be decided")
				}
			}
		})
	}
}
