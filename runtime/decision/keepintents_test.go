package decision

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/depctrl/terraform-provider-depctrl/runtime/admission"
	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
	"github.com/depctrl/terraform-provider-depctrl/runtime/index"
)

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
			self := selfNamed("depctrl-webhook", tt.selfErr)
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
