package decision

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	"github.com/depctrl/terraform-provider-depctrl/runtime/admission"
	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
)

type recordingAuditor struct {
	clusters []string
	names    []string
}

func (a *recordingAuditor) RecordSkip(d admission.Deletion) {
	a.clusters = append(a.clusters, d.Cluster)
	a.names = append(a.names, d.Name)
}

// TestSkipProtectionIsAudited: every deletion the annotation lets through
// is handed to the auditor, and nothing else is.
func TestSkipProtectionIsAudited(t *testing.T) {
	ready := make(chan struct{})
	close(ready)
	blocked := &fakeFinder{blockers: map[schema.GroupVersionResource][]Blocker{vmGVR: {{Kind: "VirtualMachine", Name: "vm"}}}}
	audit := &recordingAuditor{}
	v := NewValidator(fakeProtections{vpcGVR: {{Dependent: vmGVR}}}, blocked, admission.When(ready),
		ValidatorOptions{Auditor: audit, SkipProtectionGroups: []string{"admins"}}, logr.Discard())

	skipped := deleteRequest(vpcGVR, "skipped", map[string]string{v1alpha1.ClusterAnnotation: "c1", v1alpha1.SkipProtectionAnnotation: "true"})
	skipped.UserInfo.Groups = []string{"admins"}
	ignored := deleteRequest(vpcGVR, "ignored", map[string]string{v1alpha1.ClusterAnnotation: "c1", v1alpha1.SkipProtectionAnnotation: "true"})
	plain := deleteRequest(vpcGVR, "plain", map[string]string{v1alpha1.ClusterAnnotation: "c1"})
	// A dry run has no side effects: it is allowed, but records nothing.
	dry := deleteRequest(vpcGVR, "dry", map[string]string{v1alpha1.ClusterAnnotation: "c1", v1alpha1.SkipProtectionAnnotation: "true"})
	dry.UserInfo.Groups = []string{"admins"}
	dry.DryRun = ptr.To(true)
	// A collection delete is audited under the item's name.
	collected := deleteRequest(vpcGVR, "collected", map[string]string{v1alpha1.ClusterAnnotation: "c1", v1alpha1.SkipProtectionAnnotation: "true"})
	collected.UserInfo.Groups = []string{"admins"}
	collected.Name = ""
	for _, req := range []*admissionv1.AdmissionRequest{skipped, ignored, plain, dry, collected} {
		v.Decide(context.Background(), req)
	}
	if !reflect.DeepEqual(audit.names, []string{"skipped", "collected"}) || !reflect.DeepEqual(audit.clusters, []string{"c1", "c1"}) {
		t.Fatalf("audited %v in %v, want the skipped and the collected deletes in c1", audit.names, audit.clusters)
	}
}

func TestSkipEvent(t *testing.T) {
	req := deleteRequest(vpcGVR, "vpc-1", nil)
	req.Namespace = "apps"
	req.Kind = metav1.GroupVersionKind{Group: "network.example.io", Version: "v1", Kind: "VPC"}
	req.UserInfo.Groups = []string{"admins"}
	req.OldObject.Raw = []byte(`{"metadata":{"name":"vpc-1","namespace":"apps","uid":"u-1","annotations":{"kcp.io/cluster":"c1"}}}`)
	d, err := admission.DeletionOf(req)
	if err != nil {
		t.Fatal(err)
	}
	ev := skipEvent(d, "pod-1", time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC))
	for _, f := range [][]string{{"reason"}, {"type"}, {"action"}, {"reportingController"}, {"reportingInstance"}, {"eventTime"}, {"note"}} {
		if v, _, _ := unstructured.NestedString(ev.Object, f...); v == "" {
			t.Errorf("the Event has no %s", f[0])
		}
	}
	regarding, _, _ := unstructured.NestedStringMap(ev.Object, "regarding")
	want := map[string]string{"apiVersion": "network.example.io/v1", "kind": "VPC", "name": "vpc-1", "namespace": "apps", "uid": "u-1"}
	if !reflect.DeepEqual(regarding, want) {
		t.Errorf("regarding = %v, want %v", regarding, want)
	}
	if note, _, _ := unstructured.NestedString(ev.Object, "note"); !strings.Contains(note, "alice") || !strings.Contains(note, "admins") {
		t.Errorf("the note does not name the user and groups: %q", note)
	}
	if ev.GetNamespace() != "apps" {
		t.Errorf("namespace %q", ev.GetNamespace())
	}
}

// TestDeletionShows: the skip-protection Event waits for the deletion to
// show, and is not written when it never does.
func TestDeletionShows(t *testing.T) {
	states := func(seq ...deletionState) func(context.Context) (deletionState, error) {
		i := 0
		return func(context.Context) (deletionState, error) {
			st := seq[min(i, len(seq)-1)]
			i++
			return st, nil
		}
	}
	// A deletion that shows returns at once whatever the deadline, so
	// those cases have a deadline no busy machine reaches; the others wait
	// for theirs.
	tests := []struct {
		name  string
		state func(context.Context) (deletionState, error)
		want  bool
	}{
		{"gone at once", states(deletionShown), true},
		{"gone after a while", states(stillThere, stillThere, deletionShown), true},
		{"never deleted (a forged review, or refused elsewhere)", states(stillThere), false},
		{"unreadable", func(context.Context) (deletionState, error) { return stillThere, errors.New("forbidden") }, false},
		// The review was of a copy the API server then found stale: it
		// decides again on the stored object, and audits that anew.
		{"moved on to another revision, then deleted by another try", states(movedOn, deletionShown), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wait := 50 * time.Millisecond
			if tt.want {
				wait = time.Minute
			}
			if got := deletionShows(context.Background(), time.Now().Add(wait), 5*time.Millisecond, 5*time.Millisecond, tt.state); got != tt.want {
				t.Fatalf("deletionShows = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestStateOf: what a read of the object says of the deletion a review
// allowed.
func TestStateOf(t *testing.T) {
	reviewed := metav1.ObjectMeta{UID: "uid-1", ResourceVersion: "5"}
	deleting := metav1.Now()
	for _, tt := range []struct {
		name   string
		stored metav1.ObjectMeta
		found  bool
		want   deletionState
	}{
		{"gone", metav1.ObjectMeta{}, false, deletionShown},
		{"another object of the name", metav1.ObjectMeta{UID: "uid-2", ResourceVersion: "9"}, true, deletionShown},
		{"being deleted (finalizers)", metav1.ObjectMeta{UID: "uid-1", ResourceVersion: "6", DeletionTimestamp: &deleting}, true, deletionShown},
		{"still there, as reviewed", metav1.ObjectMeta{UID: "uid-1", ResourceVersion: "5"}, true, stillThere},
		{"still there, written since", metav1.ObjectMeta{UID: "uid-1", ResourceVersion: "6"}, true, movedOn},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := stateOf(tt.stored, tt.found, reviewed); got != tt.want {
				t.Errorf("stateOf = %v, want %v", got, tt.want)
			}
		})
	}
}
