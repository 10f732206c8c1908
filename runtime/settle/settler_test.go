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
func (f *fakeStamps) Accepts(_ schema.GroupResource, stamp string) bool {
	return stamp != "" && stamp == f.published
}

// fakeObjects holds objects by name and records what was settled.
type fakeObjects struct {
	mu       sync.Mutex
	objs     []metav1.ObjectMeta
	conflict map[string]bool
	// gone namespaces answer NotFound.
	gone    map[string]bool
	settled []string
}

func (f *fakeObjects) ListMeta(_ context.Context, _ string, gvr schema.GroupVersionResource, namespace string, visit func(*metav1.ObjectMeta)) error {
	if f.gone[namespace] {
		return apierrors.NewNotFound(gvr.GroupResource(), "")
	}
	for _, o := range f.objs {
		// An object without a namespace shows in every one.
		if o.Namespace == namespace || o.Namespace == "" {
			visit(&o)
		}
	}
	return nil
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

// fakeProver knows which objects are referenced, or fails; asked counts
// the proofs by name, when set.
type fakeProver struct {
	referenced map[string]bool
	err        error
	asked      map[string]int
}

func (f fakeProver) Unreferenced(_ context.Context, _, _ string, _ schema.GroupVersionResource, names []string) (map[string]bool, error) {
	for _, n := range names {
		if f.asked != nil {
			f.asked[n]++
		}
	}
	if f.err != nil {
		return nil, f.err
	}
	out := map[string]bool{}
	for _, n := range names {
		if !f.referenced[n] {
			out[n] = true
		}
	}
	return out, nil
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
	}
	want := []string{"free-with-old-intent@2=s1", "free@1=s1", "under-old-rules@7=s1", "young@3=s1"}

	tests := []struct {
		name    string
		stamps  fakeStamps
		elapsed time.Duration
		pending time.Time
		// proofFails makes the proof of the place fail.
		proofFails bool
		want       []string
	}{
		{"stamp published and stable", fakeStamps{"s1", true, "s1"}, after, time.Time{}, false, want},
		{"a write referenced a missing object long ago", fakeStamps{"s1", true, "s1"}, after, start.Add(-time.Hour), false, want},
		{"a write referenced a missing object within an intent's lifetime", fakeStamps{"s1", true, "s1"}, after, start.Add(-time.Minute), false, nil},
		{"stamp not stable for long enough", fakeStamps{"s1", true, "s1"}, after / 2, time.Time{}, false, nil},
		{"controller published another stamp", fakeStamps{"s1", true, "s2"}, after, time.Time{}, false, nil},
		{"controller published none", fakeStamps{"s1", true, ""}, after, time.Time{}, false, nil},
		{"an index configuration is not intact", fakeStamps{"s1", false, "s1"}, after, time.Time{}, false, nil},
		{"the proof fails", fakeStamps{"s1", true, "s1"}, after, time.Time{}, true, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := start.Add(-tt.elapsed)
			objs := &fakeObjects{objs: objects, conflict: map[string]bool{"changed-meanwhile": true}}
			pending := fakePending{since: tt.pending}
			prover := fakeProver{referenced: map[string]bool{"referenced": true}}
			if tt.proofFails {
				prover.err = errors.New("forbidden")
			}
			s := &Settler{IntentLifetime: 90 * time.Second, Stamps: &tt.stamps, Published: &tt.stamps, Objects: objs, Prover: prover, Pending: pending, Intents: fakeIntents{},
				After: after, Log: logr.Discard(), now: func() time.Time { return clock }}
			s.init()
			defer s.queue.ShutDown()
			s.Deleted("consumer-1", vpcGVR, "default")
			s.watchStamps()
			clock = start
			s.sweep(context.Background(), place{Cluster: "consumer-1", GVR: vpcGVR, Namespace: "default"})
			sort.Strings(objs.settled)
			if strings.Join(objs.settled, " ") != strings.Join(tt.want, " ") {
				t.Errorf("settled %v, want %v", objs.settled, tt.want)
			}
			if n := s.SettledUnder(vpcGVR.GroupResource(), "s1"); n != len(tt.want) {
				t.Errorf("SettledUnder = %d, want %d", n, len(tt.want))
			}
		})
	}
}

// TestSettlerForgetsEmptyPlaces: a place whose list comes back empty or
// NotFound (its namespace or workspace is gone) is no longer known, so a
// rule change does not sweep it again; one with objects stays known.
func TestSettlerForgetsEmptyPlaces(t *testing.T) {
	stamps := &fakeStamps{"s1", true, "s1"}
	objs := &fakeObjects{objs: []metav1.ObjectMeta{{Name: "vpc", Namespace: "kept", ResourceVersion: "1"}}, gone: map[string]bool{"deleted": true}}
	clock := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	s := &Settler{Stamps: stamps, Published: stamps, Objects: objs, Prover: fakeProver{referenced: map[string]bool{"vpc": true}}, Pending: fakePending{},
		Intents: fakeIntents{}, After: time.Minute, Log: logr.Discard(), now: func() time.Time { return clock }}
	s.init()
	defer s.queue.ShutDown()
	for _, ns := range []string{"kept", "emptied", "deleted"} {
		s.Deleted("consumer-1", vpcGVR, ns)
	}
	s.watchStamps()
	clock = clock.Add(time.Minute)
	for _, ns := range []string{"kept", "emptied", "deleted"} {
		s.sweep(context.Background(), place{Cluster: "consumer-1", GVR: vpcGVR, Namespace: ns})
	}
	var known []string
	for p := range s.known[vpcGVR.GroupResource()] {
		known = append(known, p.Namespace)
	}
	if strings.Join(known, ",") != "kept" {
		t.Errorf("known places %v, want only kept", known)
	}
}

// TestSettlerBacksOffReferenced: an object found referenced is not proven
// again for provenReferencedFor, however often its place is swept (a client
// retrying a refused deletion), and is proven again after it; an object
// that is gone is forgotten.
func TestSettlerBacksOffReferenced(t *testing.T) {
	stamps := &fakeStamps{"s1", true, "s1"}
	objs := &fakeObjects{objs: []metav1.ObjectMeta{{Name: "used", ResourceVersion: "1"}, {Name: "gone", ResourceVersion: "2"}}}
	prover := fakeProver{referenced: map[string]bool{"used": true, "gone": true}, asked: map[string]int{}}
	clock := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	s := &Settler{Stamps: stamps, Published: stamps, Objects: objs, Prover: prover, Pending: fakePending{},
		Intents: fakeIntents{}, After: time.Minute, Log: logr.Discard(), now: func() time.Time { return clock }}
	s.init()
	defer s.queue.ShutDown()
	p := place{Cluster: "consumer-1", GVR: vpcGVR, Namespace: "default"}
	s.Deleted(p.Cluster, vpcGVR, p.Namespace)
	s.watchStamps()
	clock = clock.Add(time.Minute)
	for range 3 {
		s.sweep(context.Background(), p)
		clock = clock.Add(time.Second)
	}
	if prover.asked["used"] != 1 {
		t.Errorf("proven %d times within %s, want once", prover.asked["used"], provenReferencedFor)
	}
	objs.objs = objs.objs[:1]
	clock = clock.Add(provenReferencedFor)
	s.sweep(context.Background(), p)
	if prover.asked["used"] != 2 {
		t.Errorf("proven %d times in all, want twice: once more after %s", prover.asked["used"], provenReferencedFor)
	}
	if _, ok := s.referenced[p][objectName{name: "gone"}]; ok {
		t.Error("an object that is gone is still remembered")
	}
}
