package webhook

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
)

// TestPendingBlockers: an intent on the object being deleted blocks while
// its dependent is not stored, or is stored and references the object.
func TestPendingBlockers(t *testing.T) {
	now := time.Now()
	intent := func(resource, name, generateName string, at time.Time) string {
		v, err := encodeIntent(v1alpha1.Intent{Resource: resource, Version: "v1", Namespace: "default", Name: name, GenerateName: generateName, At: metav1.NewTime(at)})
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	vms := vmGVR.GroupResource().String()
	protections := fakeIndex{vpcGVR: {{Rule: "c1/vm-rule", Dependent: vmGVR, DependentKind: "VirtualMachine"}}}
	tests := []struct {
		name        string
		intents     map[string]string
		finder      *fakeFinder
		wantCode    int32
		wantMessage string
	}{
		{
			name:    "a dependent not stored yet blocks",
			intents: map[string]string{intentKey("t1"): intent(vms, "vm-slow", "", now)},
			finder:  &fakeFinder{}, wantCode: 403, wantMessage: "still referenced by VirtualMachine/vm-slow (being written)",
		},
		{
			name:    "a stored dependent that references the object blocks",
			intents: map[string]string{intentKey("t1"): intent(vms, "vm-a", "", now)},
			finder:  &fakeFinder{dependents: map[string]string{"default/vm-a": "vpc"}}, wantCode: 403, wantMessage: "still referenced by VirtualMachine/vm-a",
		},
		{
			name:    "a stored dependent that no longer references it does not",
			intents: map[string]string{intentKey("t1"): intent(vms, "vm-a", "", now)},
			finder:  &fakeFinder{dependents: map[string]string{"default/vm-a": "other-vpc"}},
		},
		{
			name:    "an expired intent is not read",
			intents: map[string]string{intentKey("t1"): intent(vms, "vm-slow", "", now.Add(-2*DefaultIntentLifetime))},
			finder:  &fakeFinder{referencingErr: errors.New("must not be read")},
		},
		{
			name:    "an intent of a type no rule protects the object from is not read",
			intents: map[string]string{intentKey("t1"): intent("managedvolumes.storage.test.io", "v", "", now)},
			finder:  &fakeFinder{referencingErr: errors.New("must not be read")},
		},
		{
			name:    "a create with a generated name blocks until withdrawn or expired",
			intents: map[string]string{intentKey("t1"): intent(vms, "", "vm-", now)},
			finder:  &fakeFinder{}, wantCode: 403, wantMessage: "VirtualMachine/vm-* (being written)",
		},
		{
			name:    "a failed read refuses",
			intents: map[string]string{intentKey("t1"): intent(vms, "vm-a", "", now)},
			finder:  &fakeFinder{referencingErr: errors.New("boom")}, wantCode: 503, wantMessage: "boom",
		},
		{
			name:    "a dependent the index finds answers first: the intents are not read",
			intents: map[string]string{intentKey("t1"): intent(vms, "vm-a", "", now)},
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
			v := NewValidator(protections, tt.finder, ready, ValidatorOptions{}, logr.Discard())
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
