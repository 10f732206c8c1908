package decision

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/depctrl/terraform-provider-depctrl/runtime/admission"
	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
	"github.com/depctrl/terraform-provider-depctrl/runtime/fieldpath"
	"github.com/depctrl/terraform-provider-depctrl/runtime/index"
	"github.com/depctrl/terraform-provider-depctrl/runtime/registry"
)

// TestRecordedBlockers: a deletion of an object whose intents, fresh or
// expired, name a dependent that is stored and still references it is
// denied after reading that dependent alone, without listing the
// dependents; only the newest maxRecordedChecked intents are read, and an
// intent whose dependent is gone or moved on decides nothing.
func TestRecordedBlockers(t *testing.T) {
	now := time.Now()
	vms := vmGVR.GroupResource().String()
	intents := func(names ...string) map[string]string {
		out := map[string]string{v1alpha1.ClusterAnnotation: "consumer-1"}
		for i, n := range names {
			// The first is the newest.
			v, _ := index.Encode(v1alpha1.Intent{Resource: vms, Version: "v1", Namespace: "default", Name: n, At: metav1.NewTime(now.Add(-time.Duration(i) * time.Hour))})
			out[index.Key(fmt.Sprintf("t%d", i))] = v
		}
		return out
	}
	protections := fakeProtections{vpcGVR: {{Rule: "c1/vm-rule", Dependent: vmGVR, DependentKind: "VirtualMachine", Since: now.Add(-24 * time.Hour)}}}
	tests := []struct {
		name        string
		annotations map[string]string
		dependents  map[string]string
		wantListed  bool
		wantMessage string
	}{
		{"a named dependent still referencing it: denied without a list", intents("vm-a", "vm-b"),
			map[string]string{"default/vm-a": "v", "default/vm-b": "v"}, false, "still referenced by VirtualMachine/vm-a, VirtualMachine/vm-b"},
		{"an expired intent counts as well", intents("vm-moved", "vm-old"),
			map[string]string{"default/vm-moved": "other", "default/vm-old": "v"}, false, "still referenced by VirtualMachine/vm-old"},
		{"named dependents gone or moved on: the dependents are listed", intents("vm-gone", "vm-moved"),
			map[string]string{"default/vm-moved": "other"}, true, ""},
		{"only the newest intents are read", intents("n1", "n2", "n3", "n4", "vm-oldest"),
			map[string]string{"default/vm-oldest": "v"}, true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			finder := &fakeFinder{dependents: tt.dependents}
			v := NewValidator(protections, finder, admission.When(closed()), ValidatorOptions{}, logr.Discard())
			resp, _ := v.Decide(context.Background(), deleteRequest(vpcGVR, "v", tt.annotations))
			if listed := finder.calls.Load() > 0; listed != tt.wantListed {
				t.Errorf("listed the dependents: %v, want %v", listed, tt.wantListed)
			}
			if tt.wantMessage != "" && (resp.Allowed || !strings.Contains(resp.Result.Message, tt.wantMessage)) {
				t.Errorf("got %+v, want a denial containing %q", resp.Result, tt.wantMessage)
			}
		})
	}
}

// TestPendingBlockers: an intent on the object being deleted blocks until
// its write is stored (its dependent carries the write's IntentLabel),
// whatever the stored dependent references meanwhile, and after that while
// the stored dependent references the object.
func TestPendingBlockers(t *testing.T) {
	now := time.Now()
	encoded := func(resource, name, generateName string, at time.Time) string {
		v, err := index.Encode(v1alpha1.Intent{Resource: resource, Version: "v1", Namespace: "default", Name: name, GenerateName: generateName, At: metav1.NewTime(at)})
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	vms := vmGVR.GroupResource().String()
	// of is the intent of a create of the VM called name recorded under
	// the rules with these UIDs.
	of := func(name string, rules ...string) string {
		v, err := index.Encode(v1alpha1.Intent{Resource: vms, Version: "v1", Namespace: "default", Name: name, At: metav1.NewTime(now), Rules: rules})
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
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
			intents: map[string]string{index.Key("t1"): encoded(vms, "vm-slow", "", now)},
			finder:  &fakeFinder{}, wantCode: 403, wantMessage: "still referenced by VirtualMachine/vm-slow (being written)",
		},
		{
			name:    "a stored dependent that references the object blocks",
			intents: map[string]string{index.Key("t1"): encoded(vms, "vm-a", "", now)},
			finder:  &fakeFinder{dependents: map[string]string{"default/vm-a": "vpc"}}, wantCode: 403, wantMessage: "still referenced by VirtualMachine/vm-a",
		},
		{
			name:    "the write stored, and the reference dropped since: it does not block",
			intents: map[string]string{index.Key("t1"): encoded(vms, "vm-a", "", now)},
			finder:  &fakeFinder{dependents: map[string]string{"default/vm-a": "other-vpc"}, tokens: map[string]string{"default/vm-a": "t1"}},
		},
		{
			name:     "the write stored with the reference blocks as a stored dependent",
			intents:  map[string]string{index.Key("t1"): encoded(vms, "vm-e", "", now)},
			finder:   &fakeFinder{dependents: map[string]string{"default/vm-e": "vpc"}, tokens: map[string]string{"default/vm-e": "t1"}},
			wantCode: 403, wantMessage: "still referenced by VirtualMachine/vm-e",
		},
		{
			name:     "an update moving the reference here, not stored: the copy it replaces blocks as being written",
			intents:  map[string]string{index.Key("t1"): encoded(vms, "vm-e", "", now)},
			finder:   &fakeFinder{dependents: map[string]string{"default/vm-e": "vpc-old"}, tokens: map[string]string{"default/vm-e": "t0"}},
			wantCode: 403, wantMessage: "still referenced by VirtualMachine/vm-e (being written)",
		},
		{
			// The API server admits the write again against the later
			// revision: it is still on its way.
			name:     "another write of the dependent stored meanwhile, without the reference: it blocks as being written",
			intents:  map[string]string{index.Key("t1"): encoded(vms, "vm-e", "", now)},
			finder:   &fakeFinder{dependents: map[string]string{"default/vm-e": ""}},
			wantCode: 403, wantMessage: "VirtualMachine/vm-e (being written)",
		},
		{
			// A server-side apply admitted again finds it gone and
			// creates it.
			name:     "the dependent deleted meanwhile: its write may still create it, and it blocks as being written",
			intents:  map[string]string{index.Key("t1"): encoded(vms, "vm-e", "", now)},
			finder:   &fakeFinder{},
			wantCode: 403, wantMessage: "VirtualMachine/vm-e (being written)",
		},
		{
			name:    "an expired intent is not read",
			intents: map[string]string{index.Key("t1"): encoded(vms, "vm-slow", "", now.Add(-2*index.DefaultLifetime))},
			finder:  &fakeFinder{referencingErr: errors.New("must not be read")},
		},
		{
			name:    "an intent of a type no rule protects the object from is not read",
			intents: map[string]string{index.Key("t1"): encoded("managedvolumes.storage.test.io", "v", "", now)},
			finder:  &fakeFinder{referencingErr: errors.New("must not be read")},
		},
		{
			name:    "a create with a generated name blocks until withdrawn or expired",
			intents: map[string]string{index.Key("t1"): encoded(vms, "", "vm-", now)},
			finder:  &fakeFinder{}, wantCode: 403, wantMessage: "VirtualMachine/vm-* (being written)",
		},
		{
			name:    "an intent recorded before the rule was created belongs to a rule since deleted",
			intents: map[string]string{index.Key("t1"): encoded(vms, "vm-slow", "", now.Add(-time.Minute))},
			since:   now.Add(-10 * time.Second),
			finder:  &fakeFinder{referencingErr: errors.New("must not be read")},
		},
		{
			name:    "within the clock skew of the rule's creation it counts",
			intents: map[string]string{index.Key("t1"): encoded(vms, "vm-slow", "", now.Add(-12*time.Second))},
			since:   now.Add(-10 * time.Second),
			finder:  &fakeFinder{}, wantCode: 403, wantMessage: "VirtualMachine/vm-slow (being written)",
		},
		{
			// The rule was deleted and created again moments after the
			// write was admitted; the VM deleted meanwhile, while no
			// index webhook was there to withdraw the intent.
			name:    "an intent recorded under a rule since deleted does not count, however recent",
			intents: map[string]string{index.Key("t1"): of("vm-gone", "uid-old")},
			finder:  &fakeFinder{referencingErr: errors.New("must not be read")},
		},
		{
			name:    "an intent recorded under the standing rule counts",
			intents: map[string]string{index.Key("t1"): of("vm-slow", "uid-other", "uid-rule")},
			finder:  &fakeFinder{}, wantCode: 403, wantMessage: "VirtualMachine/vm-slow (being written)",
		},
		{
			name:    "a failed read refuses",
			intents: map[string]string{index.Key("t1"): encoded(vms, "vm-a", "", now)},
			finder:  &fakeFinder{referencingErr: errors.New("boom")}, wantCode: 503, wantMessage: "boom",
		},
		{
			name:    "a dependent the index finds answers first: the intents are not read",
			intents: map[string]string{index.Key("t1"): encoded(vms, "vm-a", "", now)},
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
			protections := fakeProtections{vpcGVR: {{Rule: "c1/vm-rule", Dependent: vmGVR, DependentKind: "VirtualMachine", Since: since, RuleUIDs: []string{"uid-rule"}}}}
			v := NewValidator(protections, tt.finder, admission.When(ready), ValidatorOptions{}, logr.Discard())
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

// TestFrontProxyReferencing reads one dependent with a GET: the token of
// its IntentLabel, and its fields checked against the rules' paths.
func TestFrontProxyReferencing(t *testing.T) {
	objects := map[string]string{
		"/clusters/c1/apis/compute.test.io/v1/namespaces/apps/virtualmachines/vm-ref":    `{"metadata":{"name":"vm-ref","labels":{"` + v1alpha1.IntentLabel + `":"t41.1700000000"}},"spec":{"vpcRef":{"name":"vpc"}}}`,
		"/clusters/c1/apis/compute.test.io/v1/namespaces/apps/virtualmachines/vm-other":  `{"metadata":{"name":"vm-other","labels":{"` + v1alpha1.IntentLabel + `":"not-a-label"}},"spec":{"vpcRef":{"name":"other"}}}`,
		"/clusters/c1/apis/compute.test.io/v1/namespaces/apps/virtualmachines/vm-going":  `{"metadata":{"name":"vm-going","labels":{"` + v1alpha1.IntentLabel + `":"t43.1700000000"},"deletionTimestamp":"2026-01-01T00:00:00Z"},"spec":{"vpcRef":{"name":"vpc"}}}`,
		"/clusters/c1/apis/compute.test.io/v1/namespaces/apps/virtualmachines/vm-secret": "",
	}
	f := objectFinder(t, objects, func(r *http.Request, _ []byte) {
		if r.Method != http.MethodGet {
			t.Errorf("a dependent is only read, got %s %s", r.Method, r.URL.Path)
		}
	})
	p := registry.Protection{Dependent: vmGVR, DependentKind: "VirtualMachine", Paths: []fieldpath.Path{fieldpath.MustParse(".spec.vpcRef.name")}}
	for _, tt := range []struct {
		name string
		want index.Dependent
		fail bool
	}{
		{name: "vm-ref", want: index.Dependent{Found: true, Token: "t41", References: true}},
		{name: "vm-other", want: index.Dependent{Found: true}},
		{name: "vm-going", want: index.Dependent{Found: true, Token: "t43"}},
		{name: "vm-absent"},
		{name: "vm-secret", fail: true},
	} {
		got, err := f.Referencing(context.Background(), "c1", p, "apps", tt.name, "vpc")
		if got != tt.want || (err != nil) != tt.fail {
			t.Errorf("%s: %+v, err=%v; want %+v (error %v)", tt.name, got, err, tt.want, tt.fail)
		}
	}
}

// TestKeepIntents: an update of a protected object may drop a fresh intent
// only when the webhook itself makes it, or when the intent's write is
// stored and left its dependent referencing the object (index.Held).
func TestKeepIntents(t *testing.T) {
	now := time.Now()
	fresh, _ := index.Encode(v1alpha1.Intent{Resource: vmGVR.GroupResource().String(), Version: "v1", Namespace: "default", Name: "vm-1", At: metav1.NewTime(now)})
	expired, _ := index.Encode(v1alpha1.Intent{Resource: vmGVR.GroupResource().String(), Version: "v1", Namespace: "default", Name: "vm-0", At: metav1.NewTime(now.Add(-2 * index.DefaultLifetime))})
	object := func(annotations map[string]string) []byte {
		b, _ := json.Marshal(map[string]interface{}{"metadata": map[string]interface{}{"name": "vpc", "namespace": "default", "annotations": annotations}})
		return b
	}
	withIntents := map[string]string{index.Key("t1"): fresh, index.Key("t0"): expired, "team": "a", v1alpha1.ClusterAnnotation: "c1"}
	tests := []struct {
		name    string
		after   map[string]string
		user    string
		selfErr error
		stored  map[string]string
		// token is the token of vm-1's IntentLabel: t1 when the write
		// of the intent the update drops is stored.
		token    string
		wantCode int32
	}{
		{name: "the write stored, referencing the object: its intent may go", after: map[string]string{"team": "a"}, user: "alice",
			stored: map[string]string{"default/vm-1": "vpc"}, token: "t1"},
		{name: "another write's copy references the object: the intent is kept", after: map[string]string{"team": "a"}, user: "alice",
			stored: map[string]string{"default/vm-1": "vpc"}, token: "t9", wantCode: 409},
		{name: "a copy without the write's label, referencing the object: kept", after: map[string]string{"team": "a"}, user: "alice",
			stored: map[string]string{"default/vm-1": "vpc"}, wantCode: 409},
		{name: "the write stored without the reference: kept until it expires", after: map[string]string{"team": "a"}, user: "alice",
			stored: map[string]string{"default/vm-1": "other"}, token: "t1", wantCode: 409},
		{name: "one stored without the reference may be the old copy of the write in flight", after: map[string]string{"team": "a"}, user: "alice",
			stored: map[string]string{"default/vm-1": "other"}, wantCode: 409},
		{name: "an update that keeps the intents", after: map[string]string{index.Key("t1"): fresh, index.Key("t0"): expired, "team": "b"}, user: "alice"},
		{name: "dropping a fresh intent is refused", after: map[string]string{"team": "a"}, user: "alice", wantCode: 409},
		{name: "changing a fresh intent is refused", after: map[string]string{index.Key("t1"): "{}", "team": "a"}, user: "alice", wantCode: 409},
		{name: "dropping an expired one is not", after: map[string]string{index.Key("t1"): fresh, "team": "a"}, user: "alice"},
		{name: "the webhook itself may drop a fresh one", after: map[string]string{"team": "a"}, user: "depctrl-webhook"},
		{name: "not knowing itself, it refuses", after: map[string]string{"team": "a"}, user: "depctrl-webhook", selfErr: errors.New("no review"), wantCode: 409},
	}
	ready := make(chan struct{})
	close(ready)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			self := func(context.Context) (string, error) { return "depctrl-webhook", tt.selfErr }
			protections := fakeProtections{vpcGVR: {{Rule: "c1/vm-rule", Dependent: vmGVR, DependentKind: "VirtualMachine"}}}
			finder := &fakeFinder{dependents: tt.stored}
			if tt.token != "" {
				finder.tokens = map[string]string{"default/vm-1": tt.token}
			}
			before := withIntents
			v := NewValidator(protections, finder, admission.When(ready), ValidatorOptions{Self: self}, logr.Discard())
			req := deleteRequest(vpcGVR, "vpc", nil)
			req.Operation = admissionv1.Update
			req.UserInfo.Username = tt.user
			req.OldObject.Raw, req.Object.Raw = object(before), object(tt.after)
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
