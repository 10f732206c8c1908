package decision

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/depctrl/terraform-provider-depctrl/runtime/admission"
	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
	"github.com/depctrl/terraform-provider-depctrl/runtime/index"
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
			annotations := inConsumer(tt.intents)
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

// inConsumer is the annotations of an object in logical cluster consumer-1
// that carries intents.
func inConsumer(intents map[string]string) map[string]string {
	annotations := map[string]string{v1alpha1.ClusterAnnotation: "consumer-1"}
	maps.Copy(annotations, intents)
	return annotations
}
