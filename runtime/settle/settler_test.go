package settle

import (
	"context"
	"errors"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

type fakeStamps struct {
	stamp      string
	settleable bool
	published  string
}

func (f *fakeStamps) Stamp(schema.GroupResource) (string, bool) { return f.stamp, f.settleable }
func (f *fakeStamps) Published(schema.GroupResource) string     { return f.published }

// fakeObjects holds objects by name and records what was settled.
type fakeObjects struct {
	mu       sync.Mutex
	objs     []metav1.ObjectMeta
	conflict map[string]bool
	settled  []string
}

func (f *fakeObjects) ListMeta(context.Context, string, schema.GroupVersionResource, string) ([]metav1.ObjectMeta, error) {
	return f.objs, nil
}

func (f *fakeObjects) Settle(_ context.Context, _ string, gvr schema.GroupVersionResource, _, name, rv, stamp string) error {
	if f.conflict[name] {
		return apierrors.NewConflict(gvr.GroupResource(), name, errors.New("changed"))
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.settled = append(f.settled, name+"@"+rv+"="+stamp)
	return nil
}

// freshUntil is where the fake intents keep until when an object's intents
// are fresh.
const freshUntil = "test/fresh-until"

type fakeIntents struct{}

func (fakeIntents) FreshUntil(annotations map[string]string, _ time.Time) time.Time {
	t, _ := time.Parse(time.RFC3339, annotations[freshUntil])
	return t
}

var vpcGVR = schema.GroupVersionResource{Group: "network.test.io", Version: "v1", Resource: "vpcs"}

// fakePending holds one mark for every type in every workspace.
type fakePending struct{ since time.Time }

func (f fakePending) PendingSince(context.Context, string, schema.GroupResource) (time.Time, error) {
	return f.since, nil
}

type fakeProver map[string]bool // name: referenced

func (f fakeProver) Unreferenced(_ context.Context, _, _ string, _ schema.GroupVersionResource, name string) (bool, error) {
	if name == "unreadable" {
		return false, errors.New("forbidden")
	}
	return !f[name], nil
}

// TestSettlerSweep: a sweep settles exactly the objects that carry no fresh
// intent, that no write referenced while they did not exist within an
// intent's lifetime, are not settled under the stamp already, are not being
// deleted and that nothing references, each under the resourceVersion the
// sweep read, however young; and only under a stamp that the registry and
// the controller agree on and that has stood for After.
func TestSettlerSweep(t *testing.T) {
	start := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	after := time.Minute
	old := metav1.NewTime(start.Add(-2 * after))
	intent := start.Add(time.Minute).Format(time.RFC3339)
	staleIntent := start.Add(-time.Hour).Format(time.RFC3339)
	objects := []metav1.ObjectMeta{
		{Name: "free", ResourceVersion: "1", CreationTimestamp: old},
		{Name: "free-with-old-intent", ResourceVersion: "2", CreationTimestamp: old, Annotations: map[string]string{freshUntil: staleIntent}},
		{Name: "young", ResourceVersion: "3", CreationTimestamp: metav1.NewTime(start.Add(-time.Second))},
		{Name: "referenced", ResourceVersion: "4", CreationTimestamp: old},
		{Name: "pending-write", ResourceVersion: "5", CreationTimestamp: old, Annotations: map[string]string{freshUntil: intent}},
		{Name: "already", ResourceVersion: "6", CreationTimestamp: old, Labels: map[string]string{SettledLabel: "s1"}},
		{Name: "under-old-rules", ResourceVersion: "7", CreationTimestamp: old, Labels: map[string]string{SettledLabel: "s0"}},
		{Name: "deleting", ResourceVersion: "8", CreationTimestamp: old, DeletionTimestamp: &old},
		{Name: "changed-meanwhile", ResourceVersion: "9", CreationTimestamp: old},
		{Name: "unreadable", ResourceVersion: "10", CreationTimestamp: old},
	}
	want := []string{"free-with-old-intent@2=s1", "free@1=s1", "under-old-rules@7=s1", "young@3=s1"}

	tests := []struct {
		name    string
		stamps  fakeStamps
		elapsed time.Duration
		pending time.Time
		want    []string
	}{
		{"stamp published and stable", fakeStamps{"s1", true, "s1"}, after, time.Time{}, want},
		{"a write referenced a missing object long ago", fakeStamps{"s1", true, "s1"}, after, start.Add(-time.Hour), want},
		{"a write referenced a missing object within an intent's lifetime", fakeStamps{"s1", true, "s1"}, after, start.Add(-time.Minute), nil},
		{"stamp not stable for long enough", fakeStamps{"s1", true, "s1"}, after / 2, time.Time{}, nil},
		{"controller published another stamp", fakeStamps{"s1", true, "s2"}, after, time.Time{}, nil},
		{"controller published none", fakeStamps{"s1", true, ""}, after, time.Time{}, nil},
		{"an index configuration is not intact", fakeStamps{"s1", false, "s1"}, after, time.Time{}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := start.Add(-tt.elapsed)
			objs := &fakeObjects{objs: objects, conflict: map[string]bool{"changed-meanwhile": true}}
			pending := fakePending{since: tt.pending}
			s := &Settler{IntentLifetime: 90 * time.Second, Stamps: &tt.stamps, Published: &tt.stamps, Objects: objs, Prover: fakeProver{"referenced": true}, Pending: pending, Intents: fakeIntents{},
				After: after, Log: logr.Discard(), now: func() time.Time { return clock }}
			s.init()
			defer s.queue.ShutDown()
			req := &admissionv1.AdmissionRequest{Operation: admissionv1.Delete, Resource: metav1.GroupVersionResource(vpcGVR), Namespace: "default"}
			s.Candidate("consumer-1", req)
			s.watchStamps()
			clock = start
			s.sweep(context.Background(), place{Cluster: "consumer-1", GVR: vpcGVR, Namespace: "default"})
			sort.Strings(objs.settled)
			if strings.Join(objs.settled, " ") != strings.Join(tt.want, " ") {
				t.Errorf("settled %v, want %v", objs.settled, tt.want)
			}
		})
	}
}
