package decision

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
