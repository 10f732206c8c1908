package decision

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
	"github.com/depctrl/terraform-provider-depctrl/runtime/fieldpath"
	"github.com/depctrl/terraform-provider-depctrl/runtime/intent"
	"github.com/depctrl/terraform-provider-depctrl/runtime/readiness"
	"github.com/depctrl/terraform-provider-depctrl/runtime/registry"
)

// TestPendingBlockers: an intent on the object being deleted blocks while
// its dependent is not stored, or is stored and references the object.
func TestPendingBlockers(t *testing.T) {
	now := time.Now()
	encoded := func(resource, name, generateName string, at time.Time) string {
		v, err := intent.Encode(v1alpha1.Intent{Resource: resource, Version: "v1", Namespace: "default", Name: name, GenerateName: generateName, At: metav1.NewTime(at)})
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	vms := vmGVR.GroupResource().String()
	tests := []struct {
		name        string
		intents     map[string]string
		since       time.Time
		finder      *fakeFinder
		wantCode    int32
		wantMessage string
	}{
		{
			name:    "a dependent not stored yet blocks",
			intents: map[string]string{intent.Key("t1"): encoded(vms, "vm-slow", "", now)},
			finder:  &fakeFinder{}, wantCode: 403, wantMessage: "still referenced by VirtualMachine/vm-slow (being written)",
		},
		{
			name:    "a stored dependent that references the object blocks",
			intents: map[string]string{intent.Key("t1"): encoded(vms, "vm-a", "", now)},
			finder:  &fakeFinder{dependents: map[string]string{"default/vm-a": "vpc"}}, wantCode: 403, wantMessage: "still referenced by VirtualMachine/vm-a",
		},
		{
			name:    "a stored dependent that no longer references it does not",
			intents: map[string]string{intent.Key("t1"): encoded(vms, "vm-a", "", now)},
			finder:  &fakeFinder{dependents: map[string]string{"default/vm-a": "other-vpc"}},
		},
		{
			name:    "an expired intent is not read",
			intents: map[string]string{intent.Key("t1"): encoded(vms, "vm-slow", "", now.Add(-2*intent.DefaultLifetime))},
			finder:  &fakeFinder{referencingErr: errors.New("must not be read")},
		},
		{
			name:    "an intent of a type no rule protects the object from is not read",
			intents: map[string]string{intent.Key("t1"): encoded("managedvolumes.storage.test.io", "v", "", now)},
			finder:  &fakeFinder{referencingErr: errors.New("must not be read")},
		},
		{
			name:    "a create with a generated name blocks until withdrawn or expired",
			intents: map[string]string{intent.Key("t1"): encoded(vms, "", "vm-", now)},
			finder:  &fakeFinder{}, wantCode: 403, wantMessage: "VirtualMachine/vm-* (being written)",
		},
		{
			name:    "an intent recorded before the rule was created belongs to a rule since deleted",
			intents: map[string]string{intent.Key("t1"): encoded(vms, "vm-slow", "", now.Add(-time.Minute))},
			since:   now.Add(-10 * time.Second),
			finder:  &fakeFinder{referencingErr: errors.New("must not be read")},
		},
		{
			name:    "within the clock skew of the rule's creation it counts",
			intents: map[string]string{intent.Key("t1"): encoded(vms, "vm-slow", "", now.Add(-12*time.Second))},
			since:   now.Add(-10 * time.Second),
			finder:  &fakeFinder{}, wantCode: 403, wantMessage: "VirtualMachine/vm-slow (being written)",
		},
		{
			name:    "a failed read refuses",
			intents: map[string]string{intent.Key("t1"): encoded(vms, "vm-a", "", now)},
			finder:  &fakeFinder{referencingErr: errors.New("boom")}, wantCode: 503, wantMessage: "boom",
		},
		{
			name:    "a dependent the index finds answers first: the intents are not read",
			intents: map[string]string{intent.Key("t1"): encoded(vms, "vm-a", "", now)},
			finder: &fakeFinder{blockers: map[schema.GroupVersionResource][]Blocker{vmGVR: {{Kind: "VirtualMachine", Name: "vm-stored"}}},
				referencingErr: errors.New("must not be read")},
			wantCode: 403, wantMessage: "still referenced by VirtualMachine/vm-stored",
		},
	}
	ready := make(chan struct{})
	close(ready)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			annotations := map[string]string{v1alpha1.ClusterAnnotation: "consumer-1"}
			for k, v := range tt.intents {
				annotations[k] = v
			}
			since := tt.since
			if since.IsZero() {
				since = now.Add(-time.Hour)
			}
			protections := fakeProtections{vpcGVR: {{Rule: "c1/vm-rule", Dependent: vmGVR, DependentKind: "VirtualMachine", Since: since}}}
			v := NewValidator(protections, tt.finder, readiness.When(ready), ValidatorOptions{}, logr.Discard())
			resp, _ := v.Decide(context.Background(), deleteRequest(vpcGVR, "vpc", annotations))
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

// TestFrontProxyReferencing reads one dependent with a GET and checks its
// fields against the rules' paths.
func TestFrontProxyReferencing(t *testing.T) {
	objects := map[string]string{
		"/clusters/c1/apis/compute.test.io/v1/namespaces/apps/virtualmachines/vm-ref":    `{"metadata":{"name":"vm-ref"},"spec":{"vpcRef":{"name":"vpc"}}}`,
		"/clusters/c1/apis/compute.test.io/v1/namespaces/apps/virtualmachines/vm-other":  `{"metadata":{"name":"vm-other"},"spec":{"vpcRef":{"name":"other"}}}`,
		"/clusters/c1/apis/compute.test.io/v1/namespaces/apps/virtualmachines/vm-going":  `{"metadata":{"name":"vm-going","deletionTimestamp":"2026-01-01T00:00:00Z"},"spec":{"vpcRef":{"name":"vpc"}}}`,
		"/clusters/c1/apis/compute.test.io/v1/namespaces/apps/virtualmachines/vm-secret": "",
	}
	f := objectFinder(t, objects, func(r *http.Request, _ []byte) {
		if r.Method != http.MethodGet {
			t.Errorf("a dependent is only read, got %s %s", r.Method, r.URL.Path)
		}
	})
	p := registry.Protection{Dependent: vmGVR, DependentKind: "VirtualMachine", Paths: []fieldpath.Path{fieldpath.MustParse(".spec.vpcRef.name")}}
	for _, tt := range []struct {
		name                     string
		found, referencing, fail bool
	}{
		{name: "vm-ref", found: true, referencing: true},
		{name: "vm-other", found: true},
		{name: "vm-going", found: true},
		{name: "vm-absent"},
		{name: "vm-secret", fail: true},
	} {
		found, referencing, err := f.Referencing(context.Background(), "c1", p, "apps", tt.name, "vpc")
		if found != tt.found || referencing != tt.referencing || (err != nil) != tt.fail {
			t.Errorf("%s: found=%v referencing=%v err=%v, want %v %v (error %v)", tt.name, found, referencing, err, tt.found, tt.referencing, tt.fail)
		}
	}
}

// TestKeepIntents: an update of a protected object may drop a fresh intent
// only when the webhook itself makes it.
func TestKeepIntents(t *testing.T) {
	now := time.Now()
	fresh, _ := intent.Encode(v1alpha1.Intent{Resource: vmGVR.GroupResource().String(), Version: "v1", Namespace: "default", Name: "vm-1", At: metav1.NewTime(now)})
	expired, _ := intent.Encode(v1alpha1.Intent{Resource: vmGVR.GroupResource().String(), Version: "v1", Namespace: "default", Name: "vm-0", At: metav1.NewTime(now.Add(-2 * intent.DefaultLifetime))})
	object := func(annotations map[string]string) []byte {
		b, _ := json.Marshal(map[string]interface{}{"metadata": map[string]interface{}{"name": "vpc", "namespace": "default", "annotations": annotations}})
		return b
	}
	withIntents := map[string]string{intent.Key("t1"): fresh, intent.Key("t0"): expired, "team": "a", v1alpha1.ClusterAnnotation: "c1"}
	tests := []struct {
		name     string
		after    map[string]string
		user     string
		selfErr  error
		stored   map[string]string
		wantCode int32
	}{
		{name: "dropping the intent of a dependent stored and referencing the object is harmless", after: map[string]string{"team": "a"}, user: "alice",
			stored: map[string]string{"default/vm-1": "vpc"}},
		{name: "one stored without the reference may be the old copy of the write in flight", after: map[string]string{"team": "a"}, user: "alice",
			stored: map[string]string{"default/vm-1": "other"}, wantCode: 409},
		{name: "an update that keeps the intents", after: map[string]string{intent.Key("t1"): fresh, intent.Key("t0"): expired, "team": "b"}, user: "alice"},
		{name: "dropping a fresh intent is refused", after: map[string]string{"team": "a"}, user: "alice", wantCode: 409},
		{name: "changing a fresh intent is refused", after: map[string]string{intent.Key("t1"): "{}", "team": "a"}, user: "alice", wantCode: 409},
		{name: "dropping an expired one is not", after: map[string]string{intent.Key("t1"): fresh, "team": "a"}, user: "alice"},
		{name: "the webhook itself may drop a fresh one", after: map[string]string{"team": "a"}, user: "depctrl-webhook"},
		{name: "not knowing itself, it refuses", after: map[string]string{"team": "a"}, user: "depctrl-webhook", selfErr: errors.New("no review"), wantCode: 409},
	}
	ready := make(chan struct{})
	close(ready)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			self := func(context.Context) (string, error) { return "depctrl-webhook", tt.selfErr }
			protections := fakeProtections{vpcGVR: {{Rule: "c1/vm-rule", Dependent: vmGVR, DependentKind: "VirtualMachine"}}}
			v := NewValidator(protections, &fakeFinder{dependents: tt.stored}, readiness.When(ready), ValidatorOptions{Self: self}, logr.Discard())
			req := deleteRequest(vpcGVR, "vpc", nil)
			req.Operation = admissionv1.Update
			req.UserInfo.Username = tt.user
			req.OldObject.Raw, req.Object.Raw = object(withIntents), object(tt.after)
			resp, _ := v.Decide(context.Background(), req)
			if tt.wantCode == 0 {
				if !resp.Allowed {
					t.Fatalf("refused: %+v", resp.Result)
				}
				return
			}
			if resp.Allowed || resp.Result.Code != tt.wantCode || !strings.Contains(resp.Result.Message, "the intent of virtualmachines/vm-1") {
				t.Fatalf("got allowed=%v %+v, want %d naming the intent", resp.Allowed, resp.Result, tt.wantCode)
			}
		})
	}
}
