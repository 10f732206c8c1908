package index

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/go-logr/logr"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/depctrl/terraform-provider-depctrl/runtime/admission"
	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
)

// written returns the labels or annotations (field) the object has once
// the response's patch is applied.
func written(t *testing.T, object string, resp *admissionv1.AdmissionResponse, field string) map[string]string {
	t.Helper()
	if m := patched(t, resp, "/metadata/"+field); m != nil {
		return m
	}
	var obj struct {
		Metadata map[string]map[string]string `json:"metadata"`
	}
	_ = json.Unmarshal([]byte(object), &obj)
	return obj.Metadata[field]
}

// TestIntentRecordIsTheWebhooks: a dependent's IntentLabel and
// IntentTargetsAnnotation are what the webhook recorded, whatever the
// client writes: a write that records intents gets theirs, any other keeps
// the stored copy's while it is fresh and none after. A label a client
// forged would name intents whose writes are not stored, and a later write
// would withdraw them.
func TestIntentRecordIsTheWebhooks(t *testing.T) {
	now := time.Now()
	fresh := LabelValue("t1", now.Add(-time.Second))
	stale := LabelValue("t1", now.Add(-2*DefaultLifetime))
	forged := LabelValue("other", now)
	targetsOf := func(vpc string) string {
		return `[{"group":"network.test.io","version":"v1","resource":"vpcs","name":"` + vpc + `"}]`
	}
	record := func(label, targets string) string {
		return fmt.Sprintf(`,"labels":{%q:%q},"annotations":{"kcp.io/cluster":"c1",%q:%q}`, v1alpha1.IntentLabel, label, v1alpha1.IntentTargetsAnnotation, targets)
	}
	vm := func(meta string, vpcs ...string) string {
		obj := vmReferencing("", vpcs...)
		if meta == "" {
			return obj
		}
		// The record replaces the fixture's annotations.
		var m map[string]interface{}
		_ = json.Unmarshal([]byte(obj), &m)
		var extra map[string]interface{}
		_ = json.Unmarshal([]byte(`{"x":0`+meta+`}`), &extra)
		md := m["metadata"].(map[string]interface{})
		for k, v := range extra {
			if k != "x" {
				md[k] = v
			}
		}
		b, _ := json.Marshal(m)
		return string(b)
	}
	tests := []struct {
		name        string
		op          admissionv1.Operation
		old, object string
		// wantLabel and wantTargets are the record the stored object
		// ends up with ("" for none).
		wantLabel, wantTargets string
	}{
		{
			name: "a create that records nothing cannot bring a label of its own", op: admissionv1.Create,
			object: vm(record(forged, targetsOf("vpc-a"))),
		},
		{
			name: "an update that records nothing keeps the stored record", op: admissionv1.Update,
			old: vm(record(fresh, targetsOf("vpc-a")), "vpc-a"), object: vm(record(forged, targetsOf("vpc-x")), "vpc-a"),
			wantLabel: fresh, wantTargets: targetsOf("vpc-a"),
		},
		{
			name: "an update that drops the record gets it back", op: admissionv1.Update,
			old: vm(record(fresh, targetsOf("vpc-a")), "vpc-a"), object: vm("", "vpc-a"),
			wantLabel: fresh, wantTargets: targetsOf("vpc-a"),
		},
		{
			name: "a stale record goes, whatever the client keeps", op: admissionv1.Update,
			old: vm(record(stale, targetsOf("vpc-a")), "vpc-a"), object: vm(record(stale, targetsOf("vpc-a")), "vpc-a"),
		},
		{
			name: "an update that records intents gets its own record", op: admissionv1.Update,
			old: vm(record(fresh, targetsOf("vpc-x")), "vpc-x"), object: vm(record(forged, targetsOf("vpc-x")), "vpc-x", "vpc-a"),
			wantLabel: "new", wantTargets: targetsOf("vpc-a"),
		},
	}
	ready := make(chan struct{})
	close(ready)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ix := NewIndexer(schemaSource(vmIndexSchema), admission.When(ready), logr.Discard())
			ix.Targets = targetsFixture()
			req := &admissionv1.AdmissionRequest{UID: "u", Operation: tt.op, Resource: metav1.GroupVersionResource(vmGVR), Namespace: "apps", Object: runtime.RawExtension{Raw: []byte(tt.object)}}
			if tt.old != "" {
				req.OldObject = runtime.RawExtension{Raw: []byte(tt.old)}
			}
			resp, _ := ix.Decide(context.Background(), req)
			if !resp.Allowed {
				t.Fatalf("refused: %+v", resp.Result)
			}
			label := written(t, tt.object, resp, "labels")[v1alpha1.IntentLabel]
			switch {
			case tt.wantLabel == "new":
				if label == "" || label == fresh || label == forged {
					t.Errorf("label %q, want the one this write recorded", label)
				}
			case label != tt.wantLabel:
				t.Errorf("label %q, want %q", label, tt.wantLabel)
			}
			if got := written(t, tt.object, resp, "annotations")[v1alpha1.IntentTargetsAnnotation]; got != tt.wantTargets {
				t.Errorf("targets %q, want %q", got, tt.wantTargets)
			}
		})
	}
}

// TestSupersededIntentsWithdrawn: a write that records intents withdraws
// those the stored copy's label names, which its write, stored, no longer
// needs: left behind they would outlive the dependent, whose deletion
// withdraws only its last write's intents. Only intents of that token that
// name the dependent go; a write that records nothing withdraws nothing.
func TestSupersededIntentsWithdrawn(t *testing.T) {
	now := time.Now()
	encoded := func(name string) string {
		v, _ := Encode(v1alpha1.Intent{Resource: "virtualmachines.compute.test.io", Version: "v1", Namespace: "apps", Name: name, At: metav1.NewTime(now)})
		return v
	}
	stored := func(vpcs ...string) string {
		return vmReferencing(fmt.Sprintf(`,"resourceVersion":"7","labels":{%q:%q}`, v1alpha1.IntentLabel, LabelValue("t1", now)), vpcs...)
	}
	withTargets := func(obj string) string {
		var m map[string]interface{}
		_ = json.Unmarshal([]byte(obj), &m)
		md := m["metadata"].(map[string]interface{})
		md["annotations"].(map[string]interface{})[v1alpha1.IntentTargetsAnnotation] = `[{"group":"network.test.io","version":"v1","resource":"vpcs","name":"vpc-a"}]`
		b, _ := json.Marshal(m)
		return string(b)
	}
	tests := []struct {
		name        string
		onA         map[string]string
		object      string
		wantLeftOnA []string
	}{
		{
			name:        "moving the reference elsewhere withdraws the stored write's intent",
			onA:         map[string]string{Key("t1"): encoded("vm"), Key("t9"): encoded("vm-other")},
			object:      vmReferencing("", "vpc-c"),
			wantLeftOnA: []string{Key("t9")},
		},
		{
			name:        "adding a reference withdraws it too: the stored copy references vpc-a itself",
			onA:         map[string]string{Key("t1"): encoded("vm")},
			object:      vmReferencing("", "vpc-a", "vpc-c"),
			wantLeftOnA: nil,
		},
		{
			name:        "a token whose intent names another dependent withdraws nothing",
			onA:         map[string]string{Key("t1"): encoded("vm-other")},
			object:      vmReferencing("", "vpc-c"),
			wantLeftOnA: []string{Key("t1")},
		},
		{
			name:        "a write that records nothing withdraws nothing",
			onA:         map[string]string{Key("t1"): encoded("vm")},
			object:      vmReferencing(`,"labels":{"team":"x"}`, "vpc-a"),
			wantLeftOnA: []string{Key("t1")},
		},
	}
	ready := make(chan struct{})
	close(ready)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			targets := targetsFixture()
			targets.objects["apps/vpc-a"].Annotations = tt.onA
			targets.objects["apps/vpc-c"] = &TargetState{Found: true}
			ix := NewIndexer(schemaSource(vmIndexSchema), admission.When(ready), logr.Discard())
			ix.Targets = targets
			resp, _ := ix.Decide(context.Background(), &admissionv1.AdmissionRequest{UID: "u", Operation: admissionv1.Update,
				Resource: metav1.GroupVersionResource(vmGVR), Namespace: "apps",
				OldObject: runtime.RawExtension{Raw: []byte(withTargets(stored("vpc-a")))}, Object: runtime.RawExtension{Raw: []byte(tt.object)}})
			if !resp.Allowed {
				t.Fatalf("refused: %+v", resp.Result)
			}
			var left []string
			for k := range targets.objects["apps/vpc-a"].Annotations {
				left = append(left, k)
			}
			slices.Sort(left)
			if !slices.Equal(left, tt.wantLeftOnA) {
				t.Errorf("left on vpc-a %v, want %v", left, tt.wantLeftOnA)
			}
		})
	}
}
